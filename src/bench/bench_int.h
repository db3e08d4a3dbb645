/*
 * bench/bench_int.h -- what the harness's own files share (harness.c,
 * trace.c, wl_util.c, the wl_*.c workloads, sqlite_vfs.c); not for the CLI
 * or tests, which use harness.h only.
 *
 *  - counted file-system wrappers (wl_util.c): each calls one ubj_* function
 *    and bh_count()s it, so a workload cannot forget to count;
 *  - random variates on a process's stream (uniform, exponential, gamma);
 *  - file sets in the style of Filebench (entries in a directory tree of a
 *    given mean width, a share of them pre-allocated);
 *  - the trace recorder and loader (trace.c).
 */
#ifndef UBJ_BENCH_INT_H
#define UBJ_BENCH_INT_H

#include <stdbool.h>
#include <stdio.h>
#include "bench/harness.h"

#define BH_IO_MAX (1u << 20)    /* largest single read/write a workload issues */
#define BH_NAME_LEN 64u         /* buffer for a generated name */

/* ---- harness services (harness.c) ---------------------------------------- */

/* bh_setup_proc -- a random stream for init (seeded from the run's seed,
 * separate from every process's stream). */
struct bh_proc *bh_setup_proc(struct bh_run *r);

/* bh_wbuf / bh_rbuf -- the run's write source (a fixed pattern) and read
 * target, BH_IO_MAX bytes each. */
const void *bh_wbuf(struct bh_run *r);
void *bh_rbuf(struct bh_run *r);

/* bh_count_bytes -- application bytes written / read (bh_result). */
void bh_count_bytes(struct bh_run *r, uint64_t written, uint64_t nread);

/*
 * Overlap (issue 20 item 4).  A workload's op runs holding the run's
 * bookkeeping lock, which serialises what the processes share (file-set
 * tables, counters, a log's offset); on the real clock, unless the
 * workload is `serial` or the run has BH_F_SERIAL, each counted call
 * (wl_util.c) releases it for the ubj_* call itself, so other processes'
 * transactions run meanwhile.  So a workload keeps its shared state right
 * across a counted call: it marks what it works on busy (bh_fentry.busy)
 * and reserves offsets before the call, and never holds a pointer into a
 * table that another process may reallocate (the counted calls write
 * bh_create's and bh_mkdir's *ino after the lock is retaken).  Single-threaded (virtual
 * clock) runs are unchanged: nothing is busy when a pick is made.
 *
 * bh_call_begin -- before a counted call's ubj_* call: release the lock
 * when overlapping.  bh_call_end -- after it: retake it.
 */
void bh_call_begin(struct bh_run *r);
void bh_call_end(struct bh_run *r);

#if UBJ_TEST_HOOKS
/* bh_test_call_hook -- a test's callback in every bh_call_begin, after the
 * lock was released (or not), with the calling process's id (UINT_MAX in
 * the setup); NULL removes it.  tests/bench/overlap.c parks process 0
 * there.  Not thread-safe against a running bench: set it before. */
void bh_test_call_hook(void (*fn)(void *arg, unsigned proc), void *arg);
#endif

/* bh_now_ns -- the run's clock. */
uint64_t bh_now_ns(struct bh_run *r);
/* bh_sleep_ns -- let ns pass on the run's clock. */
void bh_sleep_ns(struct bh_run *r, uint64_t ns);

/* bh_workload_name -- the running workload's name. */
const char *bh_workload_name(struct bh_run *r);

/* bh_procs_of -- the run's process array (procs entries). */
struct bh_proc *bh_procs_of(struct bh_run *r);

/* bh_kv_str -- the value of `key` in the run's kv string copied into buf
 * (NUL-terminated), or dflt; -EINVAL if it does not fit. */
int bh_kv_str(struct bh_run *r, const char *key, const char *dflt, char *buf,
              size_t size);

/* bh_kv_check -- -EINVAL (and a message) if the kv string holds a key not
 * in the NULL-terminated list `known`. */
int bh_kv_check(struct bh_run *r, const char *const *known);

/* ---- random variates on a process's stream (wl_util.c) ------------------ */

/* bh_below -- uniform in [0, n) (0 when n == 0). */
uint64_t bh_below(struct bh_proc *p, uint64_t n);
/* bh_range -- uniform in [lo, hi] (lo when hi <= lo). */
uint64_t bh_range(struct bh_proc *p, uint64_t lo, uint64_t hi);
/* bh_unit -- uniform in (0, 1). */
double bh_unit(struct bh_proc *p);
/* bh_exp -- exponential with the given mean (0 -> 0). */
uint64_t bh_exp(struct bh_proc *p, double mean);
/* bh_gamma -- gamma distributed with mean `mean` and shape `shape`
 * (Filebench's cvar-gamma "gamma" parameter), at least 1. */
uint64_t bh_gamma(struct bh_proc *p, double mean, double shape);

/* ---- counted file-system calls (wl_util.c) ------------------------------ */

int bh_create(struct bh_run *r, ubj_ino_t dir, const char *name, ubj_ino_t *ino);
int bh_mkdir(struct bh_run *r, ubj_ino_t dir, const char *name, ubj_ino_t *ino);
int bh_unlink(struct bh_run *r, ubj_ino_t dir, const char *name);
int bh_rmdir(struct bh_run *r, ubj_ino_t dir, const char *name);
int bh_open(struct bh_run *r, ubj_ino_t ino, int flags);
int bh_close(struct bh_run *r, ubj_ino_t ino);          /* counted as OTHER */
int bh_fsync(struct bh_run *r, ubj_ino_t ino, int datasync);
int bh_stat(struct bh_run *r, ubj_ino_t ino, struct ubj_stat *st);
int bh_lookup(struct bh_run *r, ubj_ino_t dir, const char *name,
              struct ubj_stat *st);                      /* counted as STAT */
int bh_truncate(struct bh_run *r, ubj_ino_t ino, uint64_t size); /* OTHER */
/* bh_write -- write `len` bytes at `off` from the pattern buffer in calls
 * of at most `io` bytes, each counted as `kind` (BH_OP_WRITE or
 * BH_OP_APPEND).  0 or a negative errno (-ENOSPC on a short write). */
int bh_write(struct bh_run *r, ubj_ino_t ino, uint64_t off, uint64_t len,
             uint64_t io, enum bh_opkind kind);
/* bh_read -- read [off, off + len) in calls of at most `io` bytes (each a
 * READ); stops at EOF.  Returns the bytes read or a negative errno. */
int64_t bh_read(struct bh_run *r, ubj_ino_t ino, uint64_t off, uint64_t len,
                uint64_t io);
/* bh_listdir -- read a whole directory (one READDIR); returns the number
 * of entries or a negative errno. */
int64_t bh_listdir(struct bh_run *r, ubj_ino_t dir);

/* bh_enospc -- turn -ENOSPC into the run's "does not fit" message. */
int bh_fs_error(struct bh_run *r, int rc, const char *what);

/* ---- Filebench-style file sets (wl_util.c) ------------------------------ */

struct bh_fentry {
    ubj_ino_t dir;           /* parent directory */
    ubj_ino_t ino;           /* 0 while it does not exist */
    uint64_t size;           /* bytes it is created with (the fileset's size) */
    uint64_t cur;            /* bytes it holds now */
    bool busy;               /* a process works on it ("Overlap" above):
                                bh_fileset_pick skips it */
};

struct bh_fileset {
    char name[16];
    uint64_t n;              /* entries */
    struct bh_fentry *e;
    uint64_t nexist;         /* entries that exist */
};

/*
 * bh_fileset_make -- `n` entries of sizes gamma(mean, shape) (shape 0: all
 * exactly mean) in directories of mean width `width` under a new directory
 * `name` of the root; `prealloc_pct` percent of them created and written
 * (in `io`-byte writes).  A Filebench "define fileset".
 */
int bh_fileset_make(struct bh_run *r, struct bh_fileset *fs, const char *name,
                    uint64_t n, uint64_t width, double mean, double shape,
                    unsigned prealloc_pct, uint64_t io);
/* bh_fileset_free -- release the table. */
void bh_fileset_free(struct bh_fileset *fs);
/* bh_fileset_pick -- a random entry that exists (want true) or not and is
 * not busy, marked busy; -1 if there is none. */
int64_t bh_fileset_pick(struct bh_proc *p, struct bh_fileset *fs, bool want);
/* bh_fentry_done -- the entry is no longer busy (idx < 0: nothing). */
void bh_fentry_done(struct bh_fileset *fs, int64_t idx);
/* bh_fentry_name -- the entry's file name. */
void bh_fentry_name(uint64_t idx, char *buf, size_t size);

/* ---- Filebench flowops (filebench.c) ------------------------------------ */

/* Each returns the entry index it worked on (>= 0), -1 when the file set
 * has no suitable entry (the flowop is skipped, as Filebench retries
 * later), or a negative errno below -1. */
int64_t fb_createfile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p);
int64_t fb_deletefile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p);
int64_t fb_openfile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p);
int64_t fb_statfile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p);
/* These take the entry a previous flowop opened (idx < 0: skipped). */
int64_t fb_closefile(struct bh_run *r, struct bh_fileset *fs, int64_t idx);
int64_t fb_fsync(struct bh_run *r, struct bh_fileset *fs, int64_t idx);
int64_t fb_readwholefile(struct bh_run *r, struct bh_fileset *fs, int64_t idx,
                         uint64_t iosize);
int64_t fb_writewholefile(struct bh_run *r, struct bh_fileset *fs, int64_t idx,
                          uint64_t iosize);
int64_t fb_appendfilerand(struct bh_run *r, struct bh_fileset *fs, int64_t idx,
                          struct bh_proc *p, uint64_t iosize);
/* bh_note_need -- a file set did not fit: an image of `blocks` would
 * hold it (bh_run may run again on one, when no size was given). */
void bh_note_need(struct bh_run *r, uint64_t blocks);

/* fb_scaled -- max(1, n x the run's scale). */
uint64_t fb_scaled(struct bh_run *r, uint64_t n);

/* The parameters of a personality with one big fileset (fileserver,
 * varmail, webserver): kv keys nfiles, dirwidth, filesize, iosize,
 * appendsize (bytes; sizes 1 .. 1 MiB). */
struct fb_params {
    uint64_t nfiles, width, fsize, iosize, append;
};

/* fb_params_read -- read the kv over the defaults in *p and check them,
 * then end the parameter reading (bh_params_end).  0, -EINVAL with a
 * message naming workload `wl`, or -ECANCELED on a probe. */
int fb_params_read(struct bh_run *r, const char *wl, struct fb_params *p);

/* The run state of such a personality: the big fileset, webserver's log
 * (left empty by the others), the I/O and append sizes. */
struct fb_state {
    struct bh_fileset set, log;
    uint64_t iosize, append;
};

/* fb_state_init -- a new fb_state as the run's state (bh_state): the kv
 * read over the defaults in *p (fb_params_read: *p holds the values
 * used), then the "bigfileset" of p->nfiles (scaled) files made,
 * prealloc_pct percent of them written.  0, or a negative errno with a
 * message naming workload `wl`. */
int fb_state_init(struct bh_run *r, const char *wl, struct fb_params *p,
                  unsigned prealloc_pct);

/* fb_state_fini -- free the run's fb_state (its file sets too). */
void fb_state_fini(struct bh_run *r);

/* ---- SQLite VFS onto the run's mount (sqlite_vfs.c) -------------------- */

struct bh_sqlvfs;

/* bh_sqlvfs_create -- register a VFS (a name of its own) whose files are
 * the run's; every call is counted.  0, -ENOMEM or -EIO. */
int bh_sqlvfs_create(struct bh_run *r, struct bh_sqlvfs **out);
/* bh_sqlvfs_name -- the name to pass to sqlite3_open_v2. */
const char *bh_sqlvfs_name(const struct bh_sqlvfs *v);
/* bh_sqlvfs_errno -- the last file-system error a VFS call met (0: none),
 * cleared by the call. */
int bh_sqlvfs_errno(struct bh_sqlvfs *v);
/* bh_sqlvfs_destroy -- unregister and free (after every connection is
 * closed).  NULL is a no-op. */
void bh_sqlvfs_destroy(struct bh_sqlvfs *v);

/* ---- traces (trace.c) --------------------------------------------------- */

struct bh_trace;             /* a trace being written */

/* One transaction of a loaded trace. */
struct bh_trace_txn {
    unsigned proc;
    uint64_t arrival_ns;     /* from the start of the timed phase */
    uint32_t nops;           /* file-system operations it issued */
};

struct bh_trace_in {
    char workload[32];
    struct bh_params params; /* as recorded (kv points into kvbuf) */
    char kvbuf[256];
    uint64_t n;              /* transactions */
    struct bh_trace_txn *t;
};

/* bh_trace_create -- start writing a trace of the run to `path`. */
int bh_trace_create(const char *path, const char *workload,
                    const struct bh_params *prm, struct bh_trace **out);
/* bh_trace_txn -- one transaction (times from the start of the phase). */
void bh_trace_txn(struct bh_trace *t, uint64_t seq, unsigned proc,
                  uint64_t arrival, uint64_t start, uint64_t end);
/* bh_trace_op -- one operation of the current transaction. */
void bh_trace_op(struct bh_trace *t, enum bh_opkind kind, uint64_t at);
/* bh_trace_close -- finish the file; 0 or -EIO. */
int bh_trace_close(struct bh_trace *t);
/* bh_trace_load -- read a trace; -EINVAL with "file:line" on bad input. */
int bh_trace_load(const char *path, struct bh_trace_in **out);
/* bh_trace_in_free -- release a loaded trace. */
void bh_trace_in_free(struct bh_trace_in *in);
/* bh_opkind_name -- "create", "unlink", ... */
const char *bh_opkind_name(enum bh_opkind k);

#endif /* UBJ_BENCH_INT_H */
