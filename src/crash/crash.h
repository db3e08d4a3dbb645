/*
 * crash.h -- the crash-state explorer (issue 8; docs/GUARANTEES.md).
 *
 * A workload (a list of file-system operations, cx_workload) runs on a
 * fresh image in one consistency mode with both persistence layers
 * recorded: the block device through the write recorder
 * (ubj_bdev_record_create) and, in mode ubj, the NVM region through the
 * shadow recorder (ubj_nvm_shadow_*).  Each operation is bracketed by
 * markers (nvm persistence points, device writes and flushes at its
 * begin and end).  The engine (engine.c) then builds the crash states a
 * power cut could leave at each persistence point -- device flush epochs
 * (prefix cuts, torn writes at 512-byte sectors, subsets of the writes
 * since the last flush) and NVM fences (durable stores plus subsets of
 * the unpersisted cache lines, lines partially persisted at 8 bytes) --
 * and a crash during the recovery of some of them, and checks each one
 * (oracle.c): recovery mounts it, fsck is clean before and after, the
 * tree equals the state after some prefix of the operations that is no
 * older than the last acknowledged fsync/fdatasync/sync, file data carry
 * no stale or foreign blocks, orphans are reclaimed, and the file system
 * is usable afterwards.
 *
 * Workloads come from the text language (workload.c, documented in
 * docs/GUARANTEES.md) or from the ACE-style generator (cx_gen_*).
 *
 * Prefix: cx_.  Errors: negative errno with ubj_set_error().  Not
 * thread-safe: the shadow recorder and the broken-variant switches are
 * process-wide, so one exploration runs at a time per process.
 */
#ifndef UBJ_CRASH_CRASH_H
#define UBJ_CRASH_CRASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- workloads (workload.c) ------------------------------------------- */

enum cx_opkind {
    CX_CREAT, CX_MKDIR, CX_WRITE, CX_APPEND, CX_TRUNCATE, CX_FALLOCATE,
    CX_LINK, CX_UNLINK, CX_RENAME, CX_RMDIR, CX_SYMLINK, CX_SETXATTR,
    CX_REMOVEXATTR, CX_FSYNC, CX_FDATASYNC, CX_SYNC, CX_OPEN, CX_CLOSE,
    CX_TICK, CX_OVERLAP, CX_NOPKINDS
};

#define CX_PATH_MAX 64u
#define CX_MAX_OPS 64u
#define CX_MAX_FILE (256u * 1024u)   /* bytes a workload may make a file */
#define CX_MAX_WRITE (64u * 1024u)   /* bytes of one write or append: one
                                        transaction (ubj_pwrite commits a
                                        larger one in pieces of max(64 KiB,
                                        an eighth of the cache); a crash may
                                        keep a prefix, as ext4's) */

struct cx_op {
    enum cx_opkind kind;
    char a[CX_PATH_MAX];     /* path (symlink: the target) */
    char b[CX_PATH_MAX];     /* second path (link, rename, symlink), xattr name */
    uint64_t off, len;       /* write / fallocate / truncate size / xattr value */
    int keep_size;           /* fallocate keep */
};

struct cx_workload {
    struct cx_op setup[CX_MAX_OPS];   /* run and synced before recording */
    unsigned nsetup;
    struct cx_op ops[CX_MAX_OPS];     /* the recorded operations */
    unsigned nops;
    char name[96];                    /* for messages */
};

/* cx_workload_parse -- parse the text language (docs/GUARANTEES.md);
 * `what` names the source in messages.  0, or -EINVAL with the line. */
int cx_workload_parse(const char *text, const char *what, struct cx_workload *w);
/* cx_workload_load -- read and parse a file.  0, -errno, -EINVAL. */
int cx_workload_load(const char *path, struct cx_workload *w);
/* cx_op_format -- one op as a line of the language (no newline). */
void cx_op_format(const struct cx_op *op, char *buf, size_t len);
/* cx_workload_write -- the workload as text, `comment` lines first (each
 * prefixed "# "; may be NULL). */
void cx_workload_write(FILE *f, const struct cx_workload *w, const char *comment);
/* cx_workload_default_setup -- the fixed file set the generated
 * workloads start from (dirs /A /B, files /foo /A/foo with data, an
 * xattr; docs/GUARANTEES.md). */
void cx_workload_default_setup(struct cx_workload *w);
/* cx_workload_overlap -- the default setup, then two operations at once:
 * `overlap /A/ov` (a create parked inside its handle while an fsync of
 * its directory commits: test builds) and a write of the file.  0 or
 * -EINVAL. */
int cx_workload_overlap(struct cx_workload *w);

/* The generator: numbered items, each a core op (or two) followed by a
 * persistence suffix: item i is core i / CX_GEN_SUFFIXES with suffix
 * i % CX_GEN_SUFFIXES (none, fsync file, fdatasync file, fsync parent
 * directory, sync). */
#define CX_GEN_SUFFIXES 5u
/* cx_gen_variants -- how many single (op + persistence) items exist. */
unsigned cx_gen_variants(void);
/* cx_gen_item -- append item i (< cx_gen_variants()) to w.  0 or -E2BIG. */
int cx_gen_item(struct cx_workload *w, unsigned i);

/* cx_gen_random -- w := a random workload of nops ops (creates, writes,
 * appends, truncates, renames, links, unlinks, mkdir/rmdir, fsync,
 * fdatasync, sync, ticks, opens, xattrs) over 8 names in /, /d, /d/s,
 * after a small setup.  0, -E2BIG. */
int cx_gen_random(struct cx_workload *w, uint64_t seed, unsigned nops);

/* ---- the oracle (oracle.c) -------------------------------------------- */

struct ubj_fs;
struct cx_tree;        /* a snapshot of a whole tree */

/* cx_tree_take -- snapshot fs (names, types, sizes, links, contents,
 * symlink targets, xattrs, free blocks and inodes).  0 or -errno. */
int cx_tree_take(struct ubj_fs *fs, struct cx_tree **out);
/* cx_tree_free -- free a snapshot (NULL: no-op). */
void cx_tree_free(struct cx_tree *t);

#define CX_DATA_EXACT   0   /* ubj, journal: contents as of the prefix */
#define CX_DATA_ORDERED 1   /* plus later versions of the same cell */
#define CX_DATA_ANY     2   /* writeback: data not checked */
#define CX_DATA_ZERO_OK 4   /* with ORDERED: a later truncate may have zeroed
                               a cell in place (the tail of its block) */

/*
 * cx_tree_match -- does the recovered tree `got` equal the reference
 * `ref` (the state after op j)?  Metadata exactly; data per `data`
 * (ORDERED: a 16-byte cell may also carry a later version, written by an
 * op <= hi_ver, of the same file and offset -- never another file's, an
 * older one or garbage; zeros only with CX_DATA_ZERO_OK).  Returns 1 on a match, else 0 with the first
 * difference in why[len].  Free counts are compared when `counts`.
 */
int cx_tree_match(const struct cx_tree *got, const struct cx_tree *ref, int data,
                  uint32_t hi_ver, int counts, char *why, size_t len);

/* cx_tree_size -- the number of entries (names) of t. */
size_t cx_tree_size(const struct cx_tree *t);
/* cx_tree_entry -- entry i's path (valid while t lives), inode and type
 * (S_IFMT bits; either pointer may be NULL), for i < cx_tree_size(t);
 * entries are sorted by path. */
const char *cx_tree_entry(const struct cx_tree *t, size_t i, uint64_t *ino,
                          uint32_t *type);
/* cx_tree_lookup -- the index of `path` ("/A/foo") in t, or -1. */
long cx_tree_lookup(const struct cx_tree *t, const char *path);
/* cx_tree_ent_match -- does entry `path` of got equal ref's (type, link
 * count, size, xattrs, symlink target, contents exactly)?  1, else 0 with
 * the difference (or "missing") in why[len]. */
int cx_tree_ent_match(const struct cx_tree *got, const struct cx_tree *ref,
                      const char *path, char *why, size_t len);

/* What a crash state of a mode that promises metadata integrity only is
 * checked against (integrity.c): the workload, the reference states
 * after each prefix, the ops' results, and the bounds of the crash
 * instant: ops [0, lo) acknowledged durable (every one completed before
 * the last acknowledged fsync/fdatasync/sync ended), ops [lo, hi) begun,
 * maybe in part, in any combination. */
struct cx_integrity {
    const struct cx_workload *w;
    struct cx_tree *const *ref;       /* ref[j]: the state after op j */
    const long long *refrc;           /* op i's result in the reference */
    unsigned lo, hi;
    int fsync_all;                    /* an fsync/fdatasync makes every earlier
                                         op durable (UBJ_MODE_FSYNC_ALL); else
                                         only its file (and, of a directory,
                                         the names in it) */
};

/*
 * cx_integrity_match -- the integrity oracle's tree rules for the
 * recovered tree `got` (docs/GUARANTEES.md, I3-I4): every fact made
 * durable and not touched since is there -- the whole state after the
 * last durable checkpoint (a sync; with fsync_all, lo), each later
 * fsync'd file's data and name and an fsync'd directory's names -- where
 * "touched" is an op begun since that names the path, an ancestor or a
 * descendant of it, or the same inode; and every begun rename of a
 * durable, otherwise untouched name left the inode under its old or its
 * new name.  No prefix is asked for.  1 when they hold, else 0 with the
 * first violation in why[len].
 */
int cx_integrity_match(const struct cx_integrity *q, const struct cx_tree *got,
                       char *why, size_t len);

/* cx_fill -- the pattern written by op `ver` of the workload into file
 * `fileid` at byte `off` (off and len multiples of 16): 16-byte cells
 * naming (file, offset, version), so foreign or stale data is found. */
void cx_fill(void *buf, size_t len, uint64_t fileid, uint64_t off, uint32_t ver);

/* cx_usable -- create, write, fsync, read back, unlink and rmdir under a
 * scratch directory.  0, or negative errno with a message. */
int cx_usable(struct ubj_fs *fs);

/* Files a workload holds open (`open PATH` ... `close PATH`). */
#define CX_MAX_OPEN 16u
struct cx_opens {
    uint64_t ino[CX_MAX_OPEN];
    char path[CX_MAX_OPEN][CX_PATH_MAX];
    unsigned n;
};

/* Data versions: setup op i writes version i + 1, recorded op i version
 * CX_VER_BASE + i + 1, so every recorded write is newer than the setup. */
#define CX_VER_BASE 256u
/* cx_ver -- the version of recorded op i (0-based). */
static inline uint32_t cx_ver(unsigned i) { return CX_VER_BASE + i + 1; }

/* cx_apply -- run op `op` on fs writing data version `ver`; `open` and
 * `close` take and drop references tracked in *o.  Returns the library's
 * result (0, a count, or a negative errno). */
long long cx_apply(struct ubj_fs *fs, const struct cx_op *op, uint32_t ver,
                   struct cx_opens *o);
/* cx_close_all -- release every reference in *o. */
void cx_close_all(struct ubj_fs *fs, struct cx_opens *o);

/* ---- the engine (engine.c) -------------------------------------------- */

/* What the explorer assumes of the device (docs/GUARANTEES.md). */
enum cx_persist {
    CX_PERSIST_VOLATILE = 0, /* a volatile write cache: durable after a flush
                                (FUA: on completion); an epoch's writes in
                                any subset (ubj_bdev_record_crash) */
    CX_PERSIST_THROUGH = 1,  /* write-through: durable on completion; the
                                writes in flight in any subset
                                (ubj_bdev_record_crash_cut) */
};

/* Which oracle checks the recovered states (docs/GUARANTEES.md). */
enum cx_oracle {
    CX_ORACLE_AUTO = 0,      /* the mode's promise: integrity-only modes the
                                integrity oracle, every other the prefix one */
    CX_ORACLE_PREFIX = 1,    /* G1-G8: some state j in [lo, hi] */
    CX_ORACLE_INTEGRITY = 2, /* I1-I6: fsck finds only leaks, durable facts,
                                renames keep a name (weaker: no prefix) */
};

struct cx_config {
    const char *mode;        /* a mode of the registry (ubjfs/mode.h) */
    enum cx_oracle oracle;   /* CX_ORACLE_AUTO */
    enum cx_persist persist; /* the persistence model (volatile) */
    int atomic_block;        /* the device writes each 4 KiB block whole
                                (UBJ_BDEV_ATOMIC_BLOCK): writes are torn only
                                between blocks, never inside one (0: torn at
                                512-byte sectors) */
    unsigned k;              /* enumerate every subset up to k writes / lines (4) */
    unsigned samples;        /* random states per point beyond that (6) */
    uint64_t seed;           /* states and tearing (1) */
    unsigned dcrash;         /* a crash during recovery for every n-th state (0: none) */
    unsigned nblocks;        /* image blocks (512) */
    unsigned cache;          /* cache buffers (64) */
    unsigned timeout_s;      /* per state; a hang aborts with the state (60) */
    int stop_at_first;       /* stop exploring a workload at its first failure */
    int verbose;             /* print every failing state's full story */
    const char *tmpdir;      /* region files (/dev/shm or $TMPDIR) */
    const char *stack;       /* device layers between the file system and
                                the write recorder of the recorded runs, a
                                spec without its leaf (include/ubjfs/model.h:
                                "queue:clook@hdd:hp_c2249a"), so the recorder
                                sees the scheduler's order; NULL: none */
};

struct cx_failure {
    char point[256];         /* the crash point, as a line */
    char why[448];           /* what did not hold */
};

struct cx_result {
    uint64_t states;         /* crash states checked */
    uint64_t runs;           /* workload executions */
    uint64_t points;         /* persistence points seen */
    uint64_t failures;       /* states that failed */
    struct cx_failure first; /* the first failure */
};

/* cx_config_default -- fill the defaults above. */
void cx_config_default(struct cx_config *c);

/*
 * cx_explore -- explore every crash state of workload w in cfg->mode and
 * add the figures to *res.  Returns 0 when the exploration ran (failures
 * are in res), or a negative errno when it could not (setup failed, the
 * workload does something else on each run).
 */
int cx_explore(const struct cx_config *cfg, const struct cx_workload *w,
               struct cx_result *res);

/*
 * cx_minimize -- shrink a failing workload: drop ops one by one while the
 * exploration (stop at first) still fails.  *w is replaced by the
 * smallest failing one and *fail by its first failure.  0 or -errno.
 */
int cx_minimize(const struct cx_config *cfg, struct cx_workload *w,
                struct cx_failure *fail);

#if UBJ_TEST_HOOKS   /* a test build only (CMake option UBJ_TEST_HOOKS) */
/* cx_set_break -- select a test-only broken variant by name
 * ("ubj-data-flush", "ubj-commit-persist", "ubj-early-free",
 * "ubj-ckpt-flush", "journal-commit-flush", "journal-ckpt-flush",
 * "handle-no-wait", "cache-no-wait", "sync-no-init", "sync-no-nullify",
 * "sync-no-rename", "sync-no-split", "none" to clear).  0 or -EINVAL. */
int cx_set_break(const char *name);
/* cx_break_get -- the name of the selected variant ("none" if none). */
const char *cx_break_get(void);
/* cx_break_applies -- whether the selected variant changes what mode
 * `name` does (test builds; false for an unknown mode). */
bool cx_break_applies(const char *name);
/* cx_break_names -- the names, space-separated. */
const char *cx_break_names(void);
#endif /* UBJ_TEST_HOOKS */

#endif /* UBJ_CRASH_CRASH_H */
