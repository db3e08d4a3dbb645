/*
 * ubjfs/model.h -- timed device models: clocks, model block devices (HDD,
 * SSD family, raw NAND behind a page-mapped FTL), the NVM cost model, and
 * opening a device stack from a spec string ("nand:slc@ram").
 *
 * A model device is a block-device wrapper (include/ubjfs/bdev.h): the data
 * of every request goes to the lower device unchanged; the model only
 * computes when the request would complete on the modeled device, the
 * energy it costs, and the device state it leaves (head position, flash
 * mapping, caches).  docs/DEVICES.md gives every equation and every
 * profile parameter with its source.
 *
 * Time.  Every model runs on a struct ubj_clock:
 *  - VIRTUAL: a simulated clock.  It starts at 0 and moves only when a
 *    caller waits for a modeled completion (or calls ubj_clock_advance).
 *    Nothing sleeps; a single-threaded run gives the same figures every
 *    time.
 *  - REAL: CLOCK_MONOTONIC since the clock was created.  A request blocks
 *    its caller until its modeled completion (clock_nanosleep for the bulk
 *    of the wait, a spin for the last ~50 us), so real programs (FUSE)
 *    see the modeled device's speed.
 * All times are in nanoseconds (ns) on that clock.
 *
 * Queueing.  Each request arrives at the clock's current time, waits
 * until the device (or, for SSDs, a channel and the host link) is free,
 * then is served: queueing delay = start - arrival, service time =
 * completion - start, response time = completion - arrival.  A model
 * serves requests in the order it is given them; a request queue above it
 * (include/ubjfs/queue.h) reorders them, and then the arrival counted is
 * the arrival at the queue.
 *
 * Completion (interface v2, include/ubjfs/bdev.h).  A model completes a
 * request inside submit, with its modeled completion time in t_complete
 * on the model's clock; whoever waits for the request waits on the clock
 * until then (ubj_bdev_wait, ubj_bdev_submit_wait, the v1 calls).  A
 * request submitted asynchronously (a callback, nobody waiting) occupies
 * the device like any other (later requests queue behind it) but moves
 * no time: on the virtual clock it does not advance time, on the real
 * clock nobody sleeps.
 *
 * Asynchronous callers.  A caller that does not wait -- a write-back or
 * checkpoint thread, the timer's tick, an early checkpoint -- says so in
 * its call: it submits v2 requests without UBJ_REQ_SYNC, with a
 * callback or waiting for the data alone (ubj_bdev_wait_data), or uses
 * ubj_bdev_write_crit / ubj_bdev_flush_crit at a class below
 * UBJ_CRIT_CRITICAL; such a request is counted in async_requests.  (This
 * replaced a per-thread "asynchronous bracket", ubj_model_async_begin/
 * end: one mechanism remains, issue 18.)  ubj_model_wait_idle() waits
 * until a device has finished everything queued, and a flush always
 * waits for everything queued before it (its own cost comes on top),
 * whether its caller waits for its completion or not.
 * FUA: a FUA write costs what the profile's device charges to write
 * through its volatile cache (docs/DEVICES.md).
 *
 * Thread-safety: every function here may be called from several threads.
 * On the virtual clock the figures are deterministic only if the order of
 * requests is (one thread, or threads ordered by the caller).
 * Errors are negative errno values with a message for ubj_errormsg().
 */
#ifndef UBJFS_MODEL_H
#define UBJFS_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "ubjfs/bdev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- clocks (src/dev/clock.c) ------------------------------------------ */

enum ubj_clock_kind {
    UBJ_CLOCK_VIRTUAL = 0,  /* simulated time, no sleeping, deterministic */
    UBJ_CLOCK_REAL = 1      /* CLOCK_MONOTONIC; requests sleep until done */
};

struct ubj_clock;

/*
 * ubj_clock_create -- a new clock of `kind` reading 0 ns now, with one
 * reference (released by ubj_clock_put).  Returns 0, -EINVAL (bad kind or
 * NULL out) or -ENOMEM.
 */
int ubj_clock_create(enum ubj_clock_kind kind, struct ubj_clock **out);

/* ubj_clock_get -- take one more reference to `c`; returns c. */
struct ubj_clock *ubj_clock_get(struct ubj_clock *c);

/* ubj_clock_put -- drop a reference; the last one frees the clock.  NULL ok. */
void ubj_clock_put(struct ubj_clock *c);

/* ubj_clock_kind -- the kind `c` was created with. */
enum ubj_clock_kind ubj_clock_kind(const struct ubj_clock *c);

/* ubj_clock_now -- the clock's current time, ns since its creation. */
uint64_t ubj_clock_now(struct ubj_clock *c);

/*
 * ubj_clock_wait_until -- block the caller until the clock reads `t_ns`:
 * VIRTUAL sets the time to max(now, t_ns) without sleeping; REAL sleeps
 * (clock_nanosleep, TIMER_ABSTIME) until ~50 us before t_ns, then spins.
 */
void ubj_clock_wait_until(struct ubj_clock *c, uint64_t t_ns);

/*
 * ubj_clock_advance -- let `ns` pass for the caller (think time, CPU time
 * of the caller's own work): VIRTUAL adds ns to the time, REAL sleeps ns.
 */
void ubj_clock_advance(struct ubj_clock *c, uint64_t ns);

/* ---- model devices (src/dev/model.c and model_*.c) --------------------- */

/*
 * ubj_model_create -- wrap `lower` (taking ownership on success) in a timed
 * model.
 *   kind:    "hdd", "ssd" or "nand".
 *   profile: a profile name ("hp_c2249a", "sata", "slc", ...) or a path to
 *            a profile file (contains '/' or ends in ".txt"; no ','), optionally
 *            followed by ",key=value" overrides of profile parameters
 *            ("slc,op_pct=10,check=1").  Names resolve first to
 *            $UBJ_PROFILE_DIR/<kind>_<name>.txt if that file exists, then
 *            to the profiles compiled into the library (the same text as
 *            the source tree's profiles/ directory).
 *   clock:   the clock to run on (a reference is taken); NULL = a new
 *            virtual clock owned by the device.
 * The model has lower's geometry (nblocks, 4096-byte blocks) and
 * guarantees.  On failure `lower` is NOT destroyed.  Returns 0, -EINVAL
 * (unknown kind, bad profile or parameter; the message names the file,
 * line and key), -ENOENT (no such profile), -EFBIG (lower too large for
 * the model's tables) or -ENOMEM.
 */
int ubj_model_create(const char *kind, const char *profile,
                     struct ubj_clock *clock, struct ubj_bdev *lower,
                     struct ubj_bdev **out);

/* ubj_model_is_model -- 1 if `d` is a model device, else 0. */
int ubj_model_is_model(const struct ubj_bdev *d);

/*
 * ubj_model_find -- the topmost model device in the stack starting at `d`
 * (d itself, or following ->lower), or NULL if there is none.
 */
struct ubj_bdev *ubj_model_find(struct ubj_bdev *d);

/* ubj_model_clock -- the clock of model device `d` (no reference taken);
 * NULL if `d` is not a model device. */
struct ubj_clock *ubj_model_clock(const struct ubj_bdev *d);

/*
 * ubj_model_wait_idle -- wait (on d's clock) until model device `d` has
 * completed every request queued so far.  Returns 0 or -EINVAL (not a
 * model device).
 */
int ubj_model_wait_idle(struct ubj_bdev *d);

/*
 * ubj_model_position_ns -- the positioning time (seek or head switch, a
 * write's settle, and rotational wait; ns) model device `d` would spend
 * before the first sector of a request of `op` (flags: UBJ_REQ_FUA) on
 * blocks [blkno, blkno + count) started at `t_ns` -- or when the device
 * is next free, if later -- from where its arm will be then; 0 for a
 * flush and for a request its buffer or write cache would absorb.  For
 * shortest-positioning-time-first scheduling (src/dev/queue_sched.c).
 * Changes nothing.  Returns 0 and *out_ns; -EOPNOTSUPP (a model without
 * positioning: ssd, nand); -EINVAL (not a model device, NULL out_ns, bad
 * op or range).  Thread-safe (under the model's lock).
 */
int ubj_model_position_ns(struct ubj_bdev *d, enum ubj_req_op op, uint32_t flags,
                          uint64_t blkno, uint32_t count, uint64_t t_ns,
                          uint64_t *out_ns);

/*
 * ubj_model_slots -- how many requests model device `d` serves at once,
 * as a queue above it should dispatch them: 1 for hdd and nand (one at a
 * time), 0 for ssd (any number: its channels and host link overlap what
 * it is given).  0 for a device that is not a model.  Thread-safe.
 */
uint32_t ubj_model_slots(const struct ubj_bdev *d);

/* Log-scale histogram resolution: 16 buckets per power of two (so a
 * percentile is within 6.25% above the true value, and exact when all
 * samples are equal). */
#define UBJ_MODEL_HIST_SUB 16u

/*
 * struct ubj_model_stats -- what a model device measured since it was
 * created or last reset.  Requests that failed in the lower device are not
 * modeled and not counted.  Fields that do not apply to a model are 0.
 */
struct ubj_model_stats {
    /* requests */
    uint64_t reads, writes, flushes;   /* requests served */
    uint64_t async_requests;           /* of which submitted without
                                          UBJ_REQ_SYNC: nobody waited */
    uint64_t bytes_read, bytes_written;/* bytes */
    /* time, ns on the device's clock */
    uint64_t elapsed_ns;      /* clock time since create/reset */
    uint64_t busy_ns;         /* time with at least one request in service */
    uint64_t queue_ns;        /* sum of queueing delays (start - arrival) */
    uint64_t service_ns;      /* sum of service times (done - start) */
    uint64_t service_mean_ns, service_p99_ns, service_max_ns;
    uint64_t response_mean_ns, response_p99_ns, response_max_ns;
    /* HDD: sums over requests, ns; seeks = head movements to another track */
    uint64_t seeks;
    uint64_t seek_ns, rotation_ns, transfer_ns, overhead_ns;
    uint64_t buffer_hits;     /* reads served from the on-board buffer */
    uint64_t destages;        /* write-cache entries written to the media */
    /* flash (NAND model; SSD models count nothing here) */
    uint64_t flash_reads;     /* page reads (tR + transfer) */
    uint64_t flash_programs;  /* page programs */
    uint64_t flash_erases;    /* block erases */
    uint64_t gc_runs;         /* victim blocks collected */
    uint64_t gc_copies;       /* valid 4 KiB units copied by GC */
    uint64_t driver_ns;       /* host driver time (in the service times) */
    uint64_t erase_min, erase_max;   /* erase counts over all flash blocks */
    double erase_mean;               /* (since creation; not reset) */
    /* energy, joules */
    double energy_active_j;   /* charged by requests (and background work) */
    double energy_idle_j;     /* idle power x (elapsed - busy) */
    double energy_j;          /* active + idle */
};

/*
 * ubj_model_stats_get -- a snapshot of d's statistics (d must be a model
 * device; use ubj_model_find to locate one in a stack).  Returns 0 or
 * -EINVAL.
 */
int ubj_model_stats_get(struct ubj_bdev *d, struct ubj_model_stats *out);

/* ubj_model_stats_reset -- zero d's statistics and restart elapsed time
 * (device state -- positions, caches, flash mapping, wear -- is kept). */
int ubj_model_stats_reset(struct ubj_bdev *d);

/*
 * ubj_model_check -- verify the model's internal invariants; for the NAND
 * FTL: the logical-to-physical map is a bijection onto the valid physical
 * slots, every block's valid count matches, free blocks are empty.
 * Returns 0, -EUCLEAN (an invariant is broken; the message says which) or
 * -EINVAL (not a model device).  Other models always return 0.
 */
int ubj_model_check(struct ubj_bdev *d);

/* ---- device stacks from a spec string (src/dev/spec.c) ----------------- */

/*
 * struct ubj_spec_opts -- what a spec string does not say.  A zeroed
 * struct means: a new virtual clock, 16384-block (64 MiB) RAM devices,
 * files opened read-write with UBJ_BDEV_CREATE.
 */
struct ubj_spec_opts {
    struct ubj_clock *clock;  /* shared by every model in the stack; NULL =
                                 a new one (kind: clock_kind) owned by it */
    enum ubj_clock_kind clock_kind; /* when clock == NULL */
    uint64_t nblocks;         /* blocks of a "ram" leaf; size of a created
                                 "file:" leaf; 0 = 16384 for ram, current
                                 length for files */
    unsigned file_flags;      /* UBJ_BDEV_* for "file:" leaves; 0 = CREATE */
};

/*
 * ubj_bdev_open_spec -- open a device stack described by `spec`:
 *   spec  := layer ( "@" layer )*      top first, leaf last
 *   layer := "ram"                     a RAM device (opts->nblocks)
 *          | "file:" PATH              a file or block device (PATH runs
 *                                      to the end of the string)
 *          | "fault"                   the fault-injection wrapper
 *          | "queue:" SCHED ( "," KEY "=" VALUE )*
 *                                      a request queue (include/ubjfs/
 *                                      queue.h: ubj_bdev_queue_parse)
 *          | KIND ":" PROFILE ( "," KEY "=" VALUE )*
 *                                      a model; KIND = hdd | ssd | nand
 *   A layer list that does not end in a leaf gets `lower` as its leaf, or
 *   a RAM device if `lower` is NULL.  Examples: "hdd:hp_c2249a",
 *   "nand:slc,op_pct=10@file:/tmp/img", "ssd:nvme@fault@ram", "ram",
 *   "queue:clook,depth=32@hdd:modern7200".
 *   The model key "clock=real" or "clock=virtual" selects the kind of the
 *   stack's clock when opts->clock is NULL.
 * lower: an already open device to put under the stack (ownership passes
 * to the stack on success), or NULL.  opts: may be NULL (all defaults).
 * Returns 0 and *out; -EINVAL (bad spec; the message points at it),
 * -ENOENT (no such profile or file), or the error of opening a layer.  On
 * failure nothing is left open and `lower` is not destroyed.
 */
int ubj_bdev_open_spec(const char *spec, struct ubj_bdev *lower,
                       const struct ubj_spec_opts *opts, struct ubj_bdev **out);

/* ---- NVM cost model (src/dev/nvm_model.c) ------------------------------ */

#define UBJ_NVM_LINE 64u   /* bytes: the unit of flush and of media writes */

struct ubj_nvm_model;

/*
 * struct ubj_nvm_stats -- what the persistence layer cost so far.
 */
struct ubj_nvm_stats {
    uint64_t stores;          /* ubj_nvm_model_store calls */
    uint64_t bytes_stored;    /* bytes */
    uint64_t lines_stored;    /* 64-byte lines touched by those stores */
    uint64_t flushes;         /* ubj_nvm_model_flush calls */
    uint64_t lines_flushed;   /* 64-byte lines written to the medium */
    uint64_t fences;          /* ubj_nvm_model_fence calls */
    uint64_t reads;           /* ubj_nvm_model_read calls */
    uint64_t lines_read;      /* 64-byte lines read from the medium */
    uint64_t time_ns;         /* modeled time charged, ns */
    double energy_j;          /* joules */
    uint64_t fills;           /* ubj_nvm_model_fill calls */
    uint64_t lines_filled;    /* 64-byte lines a device read wrote */
};

/*
 * ubj_nvm_model_create -- an NVM cost model for profile `profile` ("dram",
 * "sttmram", "pcm", a path, with ",key=value" overrides as for
 * ubj_model_create), charging its time to `clock` (a reference is taken;
 * NULL = a new virtual clock).  Returns 0, -EINVAL, -ENOENT or -ENOMEM.
 */
int ubj_nvm_model_create(const char *profile, struct ubj_clock *clock,
                         struct ubj_nvm_model **out);

/* ubj_nvm_model_destroy -- release the model (and its clock reference). */
void ubj_nvm_model_destroy(struct ubj_nvm_model *m);

/*
 * ubj_nvm_model_store -- charge CPU stores of `len` bytes at region offset
 * `off` (bytes).  Stores land in the CPU cache: they cost
 * store_ns_per_line (profile; 0 by default) per line touched and count
 * bytes and lines; the medium is written by the flush.  Returns the ns
 * charged.
 */
uint64_t ubj_nvm_model_store(struct ubj_nvm_model *m, uint64_t off, size_t len);

/*
 * ubj_nvm_model_flush -- charge writing back the lines covering
 * [off, off + len) to the medium (clwb/clflushopt, pmem_flush): per line
 * write_ns of time and write_pj_bit x 512 bits of energy.  len 0 charges
 * nothing.  Returns the ns charged.
 */
uint64_t ubj_nvm_model_flush(struct ubj_nvm_model *m, uint64_t off, size_t len);

/* ubj_nvm_model_flush_lines -- the same for `nlines` whole lines. */
uint64_t ubj_nvm_model_flush_lines(struct ubj_nvm_model *m, uint64_t nlines);

/*
 * ubj_nvm_model_fill -- charge a device read that wrote the lines covering
 * [off, off + len) of the region (a cache miss or read-ahead filling a
 * buffer that lives in NVM: the block device's DMA, not CPU stores):
 * per line write_ns of time and write_pj_bit x 512 bits of energy, as a
 * write-back of those lines.  Counted in fills / lines_filled, not in
 * flushes.  len 0 charges nothing.  Returns the ns charged.
 */
uint64_t ubj_nvm_model_fill(struct ubj_nvm_model *m, uint64_t off, size_t len);

/* ubj_nvm_model_fence -- charge a store fence (sfence, pmem_drain):
 * fence_ns.  Returns the ns charged. */
uint64_t ubj_nvm_model_fence(struct ubj_nvm_model *m);

/*
 * ubj_nvm_model_read -- charge reading [off, off + len) from the medium:
 * per line read_ns and read_pj_bit x 512 bits.  Returns the ns charged.
 */
uint64_t ubj_nvm_model_read(struct ubj_nvm_model *m, uint64_t off, size_t len);

/* ubj_nvm_model_stats -- a snapshot of m's counters. */
void ubj_nvm_model_stats(struct ubj_nvm_model *m, struct ubj_nvm_stats *out);

/* ubj_nvm_model_stats_reset -- zero m's counters. */
void ubj_nvm_model_stats_reset(struct ubj_nvm_model *m);

/* ubj_nvm_model_clock -- m's clock (no reference taken). */
struct ubj_clock *ubj_nvm_model_clock(const struct ubj_nvm_model *m);

/*
 * struct ubj_model_rcost -- what a read of k 4096-byte blocks costs a
 * model device, as the device declares it from its profile (the cost
 * equations of docs/READAHEAD.md, "When read-ahead can pay"): such a
 * request on an otherwise idle device costs a_ns + k b_ns, and a_j + k
 * b_j of active energy.
 *   a_ns, a_j  per request.  It depends on where the request starts
 *              relative to the previous one (the `gap` asked for):
 *              SSD: read_lat, wherever; NAND: 0 (every flash page is an
 *              operation of its own, there is no per-request term); HDD:
 *              at an unrelated place (UBJ_MODEL_GAP_FAR) the controller
 *              overhead, a seek over a third of the cylinders and half a
 *              turn; `gap` blocks after the previous request's end, with
 *              the drive's read-ahead on, a buffer hit (overhead_hit, or
 *              the time its stream takes to pass the gap), with it off the
 *              time the gap takes to pass under the head -- plus a whole
 *              turn when that is shorter than the controller overhead (the
 *              sector is missed: a sequential follow-on, gap 0, costs a
 *              turn)
 *   b_ns, b_j  per block: SSD the transfer at read_mb_s; NAND the unit's
 *              flash operations (driver, tR, bus); HDD the larger of the
 *              middle zone's media time and the host bus's
 * Energy is the device's active power over those times (NAND: the CPU
 * during driver time and the chip's, as the model charges them).
 */
struct ubj_model_rcost {
    double a_ns, b_ns;
    double a_j, b_j;
};

/* The `gap` of a request at a place unrelated to the previous one. */
#define UBJ_MODEL_GAP_FAR UINT64_MAX

/*
 * ubj_model_read_cost -- the read cost that the topmost model device of
 * the stack at `d` declares for a request starting `gap` blocks after the
 * previous request's end (UBJ_MODEL_GAP_FAR: anywhere).  Wrappers (queue,
 * fault, record, cow) forward it by being above the model
 * (ubj_model_find).  Changes nothing; from the profile's figures, not
 * the device's state (its queue, arm or buffer now).  Returns 0 and
 * *out; -EOPNOTSUPP when the stack has no model (a plain file or RAM
 * device declares nothing: a caller measures); -EINVAL for a NULL
 * argument.  Thread-safe (a profile never changes).
 */
int ubj_model_read_cost(struct ubj_bdev *d, uint64_t gap, struct ubj_model_rcost *out);

#ifdef __cplusplus
}
#endif
#endif /* UBJFS_MODEL_H */
