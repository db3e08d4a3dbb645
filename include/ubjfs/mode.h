/*
 * mode.h -- the consistency modes this build knows, as data: the public,
 * read-only view of the one mode registry (src/txn/registry.c).  Tools,
 * the benchmark harness and the crash explorer list, validate and reason
 * about modes only through these functions; none of them names a mode.
 *
 * A mode is described by its name, a one-line help, the mount/format
 * options it takes, what it needs on the image or beside it, flags saying
 * which standard sets it belongs to, and the promises it makes about the
 * state after a crash.  The crash explorer maps each promise to its oracle
 * (src/crash/engine.c); the tools print the lists below.
 *
 * Order: ubj_mode_at(0 .. ubj_mode_count() - 1) is the registry's order
 * (the order `ubjfs mkfs --help` lists).  Test-only modes (flag
 * UBJ_MODE_F_TEST) exist only in a build with UBJ_TEST_HOOKS=1.
 *
 * Thread-safety: every function here reads constant data; all are safe to
 * call from any thread at any time, before or without a mount.  Returned
 * pointers stay valid for the life of the program; never free them.
 */
#ifndef UBJFS_MODE_H
#define UBJFS_MODE_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a mode needs besides the image's blocks. */
enum ubj_mode_need {
    UBJ_MODE_NEEDS_NOTHING = 0,   /* the image alone */
    UBJ_MODE_NEEDS_LOG = 1,       /* a log (journal) area on the image */
    UBJ_MODE_NEEDS_NVM = 2,       /* an NVM region beside the image (--nvm) */
};

/* File contents after a crash, compared with the last committed state. */
enum ubj_mode_data {
    UBJ_MODE_DATA_EXACT = 0,      /* exactly as committed (synced) */
    UBJ_MODE_DATA_ORDERED = 1,    /* as committed, or a later version of the
                                     same write (data goes home before the
                                     metadata that points at it commits) */
    UBJ_MODE_DATA_UNSPECIFIED = 2 /* not promised (any contents) */
};

/* Metadata after a crash. */
enum ubj_mode_meta {
    UBJ_MODE_META_NONE = 0,       /* nothing promised: fsck may repair */
    UBJ_MODE_META_PREFIX = 1,     /* a prefix of the committed transactions */
    UBJ_MODE_META_INTEGRITY = 2,  /* consistent (fsck-clean), not a prefix */
};

/* What fsync(2) makes durable. */
enum ubj_mode_fsync {
    UBJ_MODE_FSYNC_ALL = 0,       /* every change so far, of every file */
    UBJ_MODE_FSYNC_FILE = 1,      /* the file's own changes (and what they
                                     depend on) */
};

/* The promises of a mode, as data. */
struct ubj_mode_promises {
    bool crash_consistent;        /* a crash at any point leaves a state the
                                     promises below describe, without fsck */
    enum ubj_mode_data data;      /* file contents after a crash (for a mode
                                     that is not crash-consistent: of what
                                     fsync/sync made durable) */
    enum ubj_mode_meta meta;      /* metadata after a crash */
    enum ubj_mode_fsync fsync;    /* what fsync makes durable */
};

/* Flags: the standard sets a mode belongs to. */
#define UBJ_MODE_F_CRASH_DEFAULT 0x01u  /* `ubjfs crashtest` default modes */
#define UBJ_MODE_F_HEADLINE      0x02u  /* the headline bench experiment */
#define UBJ_MODE_F_BASELINE      0x04u  /* bench ratios: a denominator */
#define UBJ_MODE_F_SUBJECT       0x08u  /* bench ratios: the numerator */
#define UBJ_MODE_F_BENCH_ASYNC   0x10u  /* `bench modes` also runs it with
                                           UBJ_FORMAT_JOURNAL_ASYNC ("-async") */
#define UBJ_MODE_F_TEST          0x20u  /* test-only (UBJ_TEST_HOOKS builds) */

/* One mode, as tools see it. */
struct ubj_mode_info {
    const char *name;             /* "none", ...: ubj_config.mode,
                                     ubj_format_opts.mode, --mode */
    const char *help;             /* one line, no trailing newline */
    const char *options;          /* its own mount/format options, e.g.
                                     "--nvm REGION", or "" */
    enum ubj_mode_need needs;
    unsigned flags;               /* UBJ_MODE_F_* */
    struct ubj_mode_promises promises;
};

/* ubj_mode_count -- the number of modes of this build (>= 1). */
size_t ubj_mode_count(void);

/* ubj_mode_at -- mode number i in registry order, for 0 <= i <
 * ubj_mode_count(); NULL for any other i. */
const struct ubj_mode_info *ubj_mode_at(size_t i);

/* ubj_mode_lookup -- the mode called `name` (exact, case-sensitive match);
 * NULL if name is NULL or no mode of this build has that name.  Sets no
 * error message. */
const struct ubj_mode_info *ubj_mode_lookup(const char *name);

/* Orders of ubj_mode_list; within each group, registry order. */
enum ubj_mode_order {
    UBJ_MODE_ORDER_REGISTRY = 0,  /* registry order */
    UBJ_MODE_ORDER_CONSISTENT_FIRST = 1,  /* crash-consistent modes, then
                                             the others */
    UBJ_MODE_ORDER_NEEDS = 2,     /* needing nothing, a log area, NVM */
    UBJ_MODE_ORDER_BASELINES_FIRST = 3,  /* UBJ_MODE_F_BASELINE modes, then
                                            UBJ_MODE_F_SUBJECT, the rest */
};

/*
 * ubj_mode_list -- the modes that have every flag of `flags` (0: every
 * mode) in `order`: stores up to `max` of them in v[0..max) (v may be NULL
 * when max is 0) and returns how many there are in all (more than max:
 * the list was cut).  An unknown order is taken as registry order.
 */
size_t ubj_mode_list(unsigned flags, enum ubj_mode_order order,
                     const struct ubj_mode_info **v, size_t max);

#ifdef __cplusplus
}
#endif

#endif /* UBJFS_MODE_H */
