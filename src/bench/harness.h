/*
 * bench/harness.h -- the evaluation harness (issue 7): system-level
 * workloads on the library API, run as closed-loop processes with think
 * time (Ganger's dissertation, ch. 3) over a device stack of timed models,
 * and the metrics of each run.  The CLI (`ubjfs bench`, src/tools/) and the
 * tests (tests/bench/) use only this header.
 *
 * Time.  A run happens on the clock of its device models
 * (include/ubjfs/model.h).  On the VIRTUAL clock the harness is a
 * discrete-event simulation in ONE thread: each process has a ready time;
 * the process with the smallest ready time (ties: lowest id) runs its next
 * operation to completion (the clock moves as the models serve the
 * operation's requests), then becomes ready again after its think time.
 * The mount runs with UBJ_MOUNT_NO_TIMER and the harness calls
 * ubj_tick_flags(fs, UBJ_TICK_BACKGROUND) (as a background thread would) every
 * commit interval of virtual time.  Same config, same seed => the same
 * counters, bit for bit.  On the REAL clock each process is a thread and
 * the mount keeps its timer thread.
 *
 * Files: harness.c (setup, the event loop, metrics), trace.c (record and
 * open-loop replay), one file per workload (wl_*.c), sqlite_vfs.c.
 *
 * Errors are negative errno values; a failing bh_* function also leaves a
 * one-line message for ubj_errormsg().  Nothing here is thread-safe across
 * runs sharing a struct; separate runs are independent.
 */
#ifndef UBJ_BENCH_HARNESS_H
#define UBJ_BENCH_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ubjfs/ubjfs.h"
#include "ubjfs/model.h"

/* Operation kinds counted per run (the op-mix tests check these against
 * each workload's definition). */
enum bh_opkind {
    BH_OP_CREATE, BH_OP_UNLINK, BH_OP_MKDIR, BH_OP_RMDIR, BH_OP_OPEN,
    BH_OP_READ, BH_OP_WRITE, BH_OP_APPEND, BH_OP_FSYNC, BH_OP_STAT,
    BH_OP_RENAME, BH_OP_READDIR, BH_OP_OTHER,
    BH_OP_NR
};

/* struct bh_params -- the knobs every workload shares.  0 = the workload's
 * default for each numeric field. */
struct bh_params {
    unsigned procs;          /* closed-loop processes */
    uint64_t ops;            /* transactions to run (all processes together) */
    uint64_t think_ns;       /* mean think time between a process's
                                transactions, ns (exponential) */
    double scale;            /* file-set size multiplier (1.0 = the
                                original's defaults; 0 = 1.0) */
    uint64_t seed;           /* random seed (0 = 1) */
    const char *kv;          /* workload-specific "key=value,..." or NULL */
};

/* The defaults a 0 (or NULL) in struct bh_config stands for (added). */
#define BH_DEFAULT_CACHE_BLOCKS 4096u     /* 16 MiB */
#define BH_DEFAULT_IMAGE_BLOCKS 65536u    /* 256 MiB */
#define BH_DEFAULT_COMMIT_MS 5000u
#define BH_DEFAULT_NVM_PROFILE "dram"

/* struct bh_config -- one run. */
struct bh_config {
    const char *workload;        /* a bh_workloads[] name */
    const char *mode;            /* a mode of the registry (ubjfs/mode.h) */
    const char *device;          /* ubj_bdev_open_spec() spec for the image,
                                    e.g. "ssd:sata" or "hdd:modern7200"
                                    (leaf: RAM of image_blocks); NULL = "ram" */
    const char *nvm_profile;     /* mode ubj: "dram", "sttmram", "pcm";
                                    NULL = "dram" */
    const char *readahead;       /* ubj_config.readahead: the read path
                                    ("off-page", "off"); NULL = the
                                    library's (off-page) */
    uint32_t cache_blocks;       /* buffers (4 KiB); 0 = 4096 (16 MiB) */
    uint64_t image_blocks;       /* 0 = 65536 (256 MiB) */
    uint32_t commit_interval_ms; /* 0 = 5000 */
    enum ubj_clock_kind clock;   /* default VIRTUAL */
    struct bh_params params;
    const char *trace_out;       /* record the run's operations here, or NULL */
    const char *trace_in;        /* replay this trace open-loop instead of
                                    running the workload (arrival times
                                    from the trace), or NULL */
    void (*progress)(void *arg, uint64_t done, uint64_t total);
    void *progress_arg;          /* called now and then; may be NULL */
    unsigned flags;              /* BH_F_* (added) */
    uint64_t op_cpu_ns;          /* (added) CPU time charged to the clock per
                                    file-system call (system call + VFS
                                    overhead the models do not see); 0 = none */
};

/* The timed phase ends with a final ubj_sync() whose time is part of
 * elapsed_ns (and reported alone as sync_ns): task elapsed time counts
 * until everything is durable.  This flag leaves the final sync out of
 * the timed phase (it still runs, at unmount, unmeasured). */
#define BH_F_NO_FINAL_SYNC 0x1u
/* The timed phase starts with a cold cache: after the setup's sync the
 * clean cached blocks are dropped (ubj_drop_caches). */
#define BH_F_COLD 0x2u

/* On the real clock the processes' transactions overlap (each thread
 * releases the run's bookkeeping lock inside every file-system call:
 * docs/HARNESS.md, "Real clock"); this flag runs them one at a time
 * instead, as before issue 20 -- for comparison, and as the serialised
 * baseline of tests/bench/overlap.c.  No effect on the virtual clock. */
#define BH_F_SERIAL 0x8u

/* After the unmount, check the image (ubj_check, fsck's passes); a
 * problem fails the run with -EUCLEAN and fsck's first line.  For tests
 * of overlapping runs; untimed. */
#define BH_F_CHECK 0x4u
/* each flag its own bit (BH_F_SERIAL once shared BH_F_COLD's: --serial
 * runs started cold) */
_Static_assert(((BH_F_NO_FINAL_SYNC ^ BH_F_COLD ^ BH_F_SERIAL ^ BH_F_CHECK) ==
                (BH_F_NO_FINAL_SYNC | BH_F_COLD | BH_F_SERIAL | BH_F_CHECK)),
               "BH_F_* flags overlap");

#define BH_USERS_MAX 16u         /* processes whose task time bh_result keeps */
#define BH_PHASES_MAX 8u         /* phases a workload may name */

/* struct bh_result -- what one run measured (the timed phase only: the
 * file-set setup is not counted).  Field order = the metric order. */
struct bh_result {
    char workload[32], mode[16], device[96], nvm_profile[32];
    uint32_t cache_blocks;
    unsigned procs;
    uint64_t ops;                /* transactions completed */
    uint64_t elapsed_ns;         /* clock time of the timed phase */
    double ops_per_s;            /* throughput */
    uint64_t lat_mean_ns, lat_p50_ns, lat_p99_ns, lat_max_ns;
                                 /* response time of one transaction */
    uint64_t bytes_data, bytes_metadata, bytes_journal, bytes_checkpoint;
                                 /* storage bytes written, by category:
                                    data + metadata + journal = all; the
                                    checkpoint bytes are a part of data +
                                    metadata (home writes of committed
                                    blocks), not an addition */
    uint64_t bytes_device;       /* the device's own count (all categories) */
    uint64_t nvm_bytes;          /* bytes persisted to the NVM region */
    uint64_t dev_flushes;        /* flush requests to the device */
    double energy_dev_j;         /* the storage device model's energy */
    double energy_nvm_j;         /* the NVM model's energy */
    double hit_ratio;            /* buffer-cache hits / lookups */
    uint64_t opcount[BH_OP_NR];  /* file-system operations by kind */
    /* added after the first version: */
    uint64_t sync_ns;            /* of elapsed_ns: the final sync */
    uint64_t app_bytes_written;  /* bytes the workload wrote / read */
    uint64_t app_bytes_read;
    uint64_t commits, checkpoints; /* of the consistency mode */
    uint64_t init_opcount[BH_OP_NR]; /* operations of the untimed setup */
    unsigned txn_overlap_max;    /* most transactions in progress at once
                                    (1 on the virtual clock, or serialised) */
    uint64_t read_wait_locked_ns;   /* device reads waited for with the mount
                                       lock held (ubj_fs_stats) */
    uint64_t read_wait_unlocked_ns; /* ... with it released */
    uint64_t victim_wait_ns;        /* dirty victims written home to free a
                                       buffer (lock held) */
    /* added for the ordering study (issue 21): */
    uint64_t dev_reads, dev_writes, dev_flush_reqs;
                                 /* requests the top of the device stack
                                    served (its own counters: a model sees
                                    every request, a flush included) */
    uint64_t user_ns[BH_USERS_MAX];  /* per process (the first BH_USERS_MAX):
                                    task elapsed time, t0 to the end of its
                                    last transaction (the final sync not
                                    included: it is nobody's own) */
    uint64_t user_mean_ns;       /* the mean of that over every process */
    unsigned nphases;            /* the workload's phases (bh_workload.phases;
                                    1 when it names none) */
    char phase_name[BH_PHASES_MAX][16];
    uint64_t phase_ns[BH_PHASES_MAX]; /* per phase, the mean over processes of
                                    the time from the end of the process's
                                    previous phase (t0 for the first) to the
                                    end of its last transaction of this one:
                                    the phases of a process add up to its
                                    user_ns */
    /* added for the read-ahead study (issue 19), of the timed phase: */
    uint64_t ra_blocks;          /* blocks read ahead (ubj_fs_stats) */
    uint64_t ra_used;            /* ... read by a call before eviction */
    uint64_t ra_late;            /* reads that met a read-ahead not yet done */
};

struct bh_run;   /* one run in progress (harness.c) */

/* struct bh_proc -- one closed-loop process. */
struct bh_proc {
    unsigned id;                 /* 0 .. procs-1 */
    uint64_t rng;                /* this process's random state */
    uint64_t ready_ns;           /* virtual clock: when it runs next */
    uint64_t done;               /* transactions it completed */
    void *priv;                  /* the workload's per-process state */
    unsigned phase;              /* set by the workload's op: the phase
                                    (index into bh_workload.phases, below
                                    BH_PHASES_MAX) of the transaction it ran */
    uint64_t end_ns;             /* harness: the end of its last transaction */
    uint64_t phase_end_ns[BH_PHASES_MAX]; /* harness: ... of each phase (0: none) */
};

/*
 * struct bh_workload -- one workload.  init builds the initial file set
 * (untimed); op runs ONE transaction of process p (a Postmark transaction,
 * a Filebench flowop sequence, an IOzone record, ...) and returns 0, 1
 * when process p has nothing more to do, or a negative errno (the run
 * fails with it).  fini frees what init and op allocated.
 */
struct bh_workload {
    const char *name;            /* "postmark" */
    const char *summary;         /* one line naming the definition's source */
    unsigned default_procs;
    uint64_t default_ops;
    int (*init)(struct bh_run *r);
    int (*op)(struct bh_run *r, struct bh_proc *p);
    void (*fini)(struct bh_run *r);
    const char *serial;          /* NULL: op may overlap other processes' on
                                    the real clock (it keeps its shared state
                                    consistent across the counted calls,
                                    bench_int.h "Overlap"); else why its
                                    transactions run one at a time */
    const char *const *phases;   /* NULL-terminated names of the phases a
                                    process goes through in order (op sets
                                    bh_proc.phase), at most BH_PHASES_MAX,
                                    each < 16 bytes; NULL: one, "all" */
};

/* The workloads, NULL-terminated (postmark, varmail, fileserver,
 * webserver, oltp, iozone, ganger, sqlite, andrew). */
extern const struct bh_workload *const bh_workloads[];

/* bh_workload_find -- the workload named `name`, or NULL. */
const struct bh_workload *bh_workload_find(const char *name);

/*
 * bh_run -- format a fresh image on cfg->device, mount it in cfg->mode
 * (mode ubj: a fresh NVM region in a temporary file, removed afterwards),
 * build the workload's file set, run the timed phase, unmount, and fill
 * *out.  Returns 0; -EINVAL (unknown workload or mode, bad kv or spec: the
 * message names it); -ENOSPC (the file set does not fit: the message says
 * how much it needs); or the file system's error.
 */
int bh_run(const struct bh_config *cfg, struct bh_result *out);

/* ---- for workloads (harness.c) ------------------------------------------ */

/* bh_fs -- the run's mounted file system. */
struct ubj_fs *bh_fs(struct bh_run *r);

/* bh_params_of -- the run's parameters with defaults filled in. */
const struct bh_params *bh_params_of(struct bh_run *r);

/* bh_state / bh_set_state -- the workload's run-wide private pointer. */
void *bh_state(struct bh_run *r);
void bh_set_state(struct bh_run *r, void *st);

/* bh_count -- count one file-system operation of `kind` (workloads call
 * it for every ubj_* call they make, so the op mix can be checked). */
void bh_count(struct bh_run *r, enum bh_opkind kind);

/* bh_rand -- the next value of p's random stream (xorshift64*). */
uint64_t bh_rand(struct bh_proc *p);

/* bh_kv_u64 -- the value of `key` in the run's kv string, or dflt.
 * -EINVAL (and a message) if the value is not a number. */
int bh_kv_u64(struct bh_run *r, const char *key, uint64_t dflt, uint64_t *out);

/* ---- checks before a run (added) ---------------------------------------- */

/*
 * bh_workload_check_kv -- 0 if every key of the "key=value,..." string kv
 * (NULL or "" = none) is a parameter of workload `name` and every value is
 * one it accepts, else -EINVAL and a message naming the first bad key or
 * value (or the unknown workload).  It runs the workload's init on a run
 * without a file system, which stops at its bh_params_end(): every
 * workload's init reads and checks its parameters, then calls
 * bh_params_end() before it touches the file system.
 */
int bh_workload_check_kv(const char *name, const char *kv);

/* bh_params_end -- a workload's init has read and checked its parameters:
 * 0 to go on, or -ECANCELED in bh_workload_check_kv's probe (return it). */
int bh_params_end(struct bh_run *r);

/*
 * bh_trace_check -- read the trace at `path` as a replay (cfg->trace_in)
 * would, checking all of it, and report the workload it records into
 * workload[len] and its parameters into *params (params->kv set to NULL);
 * either may be NULL.  0, -EINVAL (not a trace, a bad line, or a workload
 * that does not exist: the message names the file and line) or the errno
 * of opening it.
 */
int bh_trace_check(const char *path, char *workload, size_t len,
                   struct bh_params *params);

#endif /* UBJ_BENCH_HARNESS_H */
