/*
 * ubjfs/bdev.h -- block devices behind one operations table.
 *
 * A block device is a struct of callbacks with a written contract (after
 * littlefs's lfs_config and SQLite's sqlite3_io_methods) plus its geometry.
 * Every call from the layers above goes through the dispatch functions
 * (src/dev/bdev.c, src/dev/req.c): the one place that checks bounds,
 * counts statistics and can trace.  Wrappers (fault injection, timed
 * models, write recording, the request queue) hold the device they wrap in
 * `lower` and own it: destroying the top of a stack destroys the whole
 * stack.
 *
 * Two interfaces, one mechanism underneath:
 *  - v2 (requests): a struct ubj_req -- read, write or flush; FUA; an
 *    ordering tag; a criticality class; the issuing process -- handed to
 *    ubj_bdev_submit() and completed through a callback, possibly on
 *    another thread, or waited for (ubj_bdev_wait, ubj_bdev_submit_wait).
 *    Every device of src/dev implements it (ops->submit).
 *  - v1 (calls): ubj_bdev_read/write/flush, synchronous.  They build a
 *    request on the caller's stack and wait for it, so every v1 caller
 *    runs on v2.  A device whose table is v1 (read/write/flush, no
 *    submit: devices outside src/dev) is driven through an adapter in the
 *    dispatch layer, so either kind of caller works on either kind of
 *    device.
 *
 * Units: a block is `block_size` bytes (4096 for every device ubjfs makes);
 * block numbers and counts are in blocks; sizes in bytes; times in ns on
 * the clock of the timed model in the stack (include/ubjfs/model.h).
 * Errors: negative errno values (-EIO, -EINVAL, -ENOSPC, ...).
 * Thread-safety: every function here may be called from several threads at
 * once on the same device; implementations serialise what needs it.
 */
#ifndef UBJFS_BDEV_H
#define UBJFS_BDEV_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UBJ_BLOCK_SIZE 4096u          /* bytes; the only block size */
#define UBJ_BDEV_OPS_V1 1u            /* a table of read/write/flush only */
#define UBJ_BDEV_OPS_V2 2u            /* a table with submit (and wait, ...) */
/* what existing v1 tables name (kept: they stay v1) */
#define UBJ_BDEV_OPS_VERSION UBJ_BDEV_OPS_V1

struct ubj_bdev;
struct ubj_req;
struct ubj_clock;

/*
 * What a device promises about writes that a power cut interrupts
 * (SQLite's xDeviceCharacteristics).  Callers may rely only on what is set.
 */
#define UBJ_BDEV_ATOMIC_SECTOR  0x1u  /* a 512-byte sector is written whole */
#define UBJ_BDEV_ATOMIC_BLOCK   0x2u  /* a whole block is written whole */
#define UBJ_BDEV_VOLATILE_CACHE 0x4u  /* writes need flush() to be durable */

/*
 * struct ubj_bdev_ops -- the contract every device implements.
 *
 * v1 (version UBJ_BDEV_OPS_V1; may be NULL in a v2 table):
 * read:  fill `buf` with `count` blocks starting at `blkno`.  The dispatch
 *        layer has already checked blkno + count <= nblocks and count > 0.
 * write: store `count` blocks from `buf` at `blkno`; the data is durable
 *        only after a later flush() returns 0 (if UBJ_BDEV_VOLATILE_CACHE).
 * flush: make every write that returned before this call durable
 *        (fdatasync for files, blkdev cache flush).  May return -EIO.
 *        All three return 0 or a negative errno (-EIO for a device error).
 * destroy: release the device and, for a wrapper, its lower device.
 *        Never fails; pending writes are not flushed; no request may be in
 *        flight (ubj_bdev_drain first).
 *
 * v2 (version UBJ_BDEV_OPS_V2; fields after destroy):
 * submit: take request `r` (already checked by ubj_bdev_submit: op,
 *        range, buffer, flags, tag, class) and complete it exactly once
 *        with ubj_req_complete() -- before submit returns or later, from
 *        any thread.  FUA writes must be durable when completed.  Errors
 *        go through the completion (r->result), never a return value.
 * wait:  NULL for a device that always completes inside submit; else
 *        block until `r` (submitted here, done == NULL) has completed, by
 *        whatever the device needs (the queue runs its event simulation).
 *        Returns r->result.  Does not wait on a model's clock.
 * raise: NULL unless the device holds requests; else raise queued `r` to
 *        class `crit` (deadline for UBJ_CRIT_LIMITED).  0 or -EINVAL.
 * drain: NULL unless the device holds requests; else complete everything
 *        submitted to it before the call (callbacks included); 0 or a
 *        negative errno (ubj_bdev_drain walks the stack below).
 */
struct ubj_bdev_ops {
    uint32_t version;   /* UBJ_BDEV_OPS_V1 or UBJ_BDEV_OPS_V2 */
    const char *name;   /* "file", "ram", "fault", ... */
    int (*read)(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf);
    int (*write)(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                 const void *buf);
    int (*flush)(struct ubj_bdev *d);
    void (*destroy)(struct ubj_bdev *d);
    /* v2 */
    void (*submit)(struct ubj_bdev *d, struct ubj_req *r);
    int (*wait)(struct ubj_bdev *d, struct ubj_req *r);
    int (*raise)(struct ubj_bdev *d, struct ubj_req *r, uint32_t crit,
                 uint64_t deadline_ns);
    int (*drain)(struct ubj_bdev *d);
};

/* Counters kept by the dispatch layer (src/dev/req.c); updated atomically. */
struct ubj_bdev_stats {
    uint64_t reads;          /* read requests */
    uint64_t writes;         /* write requests */
    uint64_t flushes;        /* flush requests */
    uint64_t bytes_read;     /* bytes */
    uint64_t bytes_written;  /* bytes */
    uint64_t errors;         /* requests that returned an error */
};

/*
 * struct ubj_bdev -- a device instance.  Implementations embed it as their
 * first member and cast back (container_of style).
 */
struct ubj_bdev {
    const struct ubj_bdev_ops *ops;
    uint32_t block_size;      /* bytes; UBJ_BLOCK_SIZE */
    uint32_t guarantees;      /* UBJ_BDEV_* flags */
    uint64_t nblocks;         /* device size in blocks */
    struct ubj_bdev *lower;   /* wrapped device, owned; NULL for a leaf */
    struct ubj_bdev_stats stats; /* [atomic] */
    uint32_t mounted;         /* [atomic] 1 while a ubj_mount holds it */
    uint32_t kind;            /* UBJ_BDEV_KIND_*: what it is (ubj_bdev_kind) */
};

/* What a device is (struct ubj_bdev.kind, set by its constructor). */
enum ubj_bdev_kind {
    UBJ_BDEV_KIND_DEVICE = 0, /* a device, or a wrapper that passes every
                                 block down (fault, record, model) */
    UBJ_BDEV_KIND_COW = 1,    /* copy-on-write memory overlay (ubj_bdev_cow_create) */
    UBJ_BDEV_KIND_MAP = 2,    /* read-only map overlay (ubj_bdev_map_create) */
};

/* ---- dispatch (src/dev/bdev.c) ---------------------------------------- */

/*
 * ubj_bdev_read -- read `count` blocks at `blkno` into `buf`
 * (count * block_size bytes).  Returns 0, -EINVAL for count == 0, a NULL
 * argument, or a range past the end of the device, or the device's error
 * (-EIO).  Counts the request in d->stats.  Thread-safe.
 * The v1 calls run on v2: each submits a time-critical request marked
 * UBJ_REQ_SYNC and waits for it -- and, on a timed model, for its
 * modeled completion time (include/ubjfs/model.h).  Background work that
 * nobody waits for says so in the call: ubj_bdev_write_crit,
 * ubj_bdev_flush_crit (interface v2, below).
 */
int ubj_bdev_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf);

/* ubj_bdev_write -- write `count` blocks at `blkno`; errors as ubj_bdev_read. */
int ubj_bdev_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                   const void *buf);

/*
 * ubj_bdev_flush -- make every completed write durable (POSIX fdatasync()
 * semantics).  Returns 0 or the device's error (-EIO).  Thread-safe.
 */
int ubj_bdev_flush(struct ubj_bdev *d);

/* ubj_bdev_destroy -- release `d` and every device below it; NULL is a no-op. */
void ubj_bdev_destroy(struct ubj_bdev *d);

/* ubj_bdev_stats_get -- a consistent-enough snapshot of d's counters. */
void ubj_bdev_stats_get(const struct ubj_bdev *d, struct ubj_bdev_stats *out);

/* ubj_bdev_stats_reset -- zero d's counters (not those of lower devices). */
void ubj_bdev_stats_reset(struct ubj_bdev *d);

/* ubj_bdev_kind -- what d is: UBJ_BDEV_KIND_* (DEVICE for NULL). */
uint32_t ubj_bdev_kind(const struct ubj_bdev *d);

/* ---- interface v2: requests (src/dev/req.c) ----------------------------- */

/*
 * A request's life (the functions performing each transition; drawn in
 * src/dev/req.c):
 *
 *   IDLE --ubj_bdev_submit--> INFLIGHT --ubj_req_complete--> DONE
 *    ^                                                        |
 *    +------- the submitter owns it again: reuse or free -----+
 *
 * While INFLIGHT the request belongs to the device stack: the submitter
 * must neither change nor free it, nor touch `buf` (a write's data is read
 * up to the completion).  Once DONE (the callback runs, or the wait
 * returns) it is the submitter's again.
 *
 * Completion: if `done` is set, the device calls done(r) exactly once --
 * possibly in the submitting thread before ubj_bdev_submit returns, or on
 * another thread (the queue's dispatcher) -- and never touches r after
 * done is entered (done may free or resubmit it).  A callback must not
 * block for long and must not hold, when it returns, a lock it did not
 * hold on entry; the submitter must not hold a lock the callback takes.
 * If `done` is NULL the request is waited for: ubj_bdev_wait(d, r).
 *
 * Ordering tags (honoured by the request queue, include/ubjfs/queue.h;
 * a device without a queue completes each request inside submit, so a
 * submitter has completion order already, and the dispatch layer makes
 * a tagged write durable after what it follows, see ubj_bdev_submit):
 *  - UBJ_ORDER_NONE: no constraint but the queue's own (conflicting
 *    requests to the same blocks keep submission order).
 *  - UBJ_ORDER_BARRIER: dispatched after every request submitted to the
 *    device before it has completed, and before any submitted after it;
 *    on a device with a volatile write cache, what it follows is durable
 *    before it reaches the medium, and it before what follows it.
 *  - UBJ_ORDER_AFTER: dispatched after each of `after[0..nafter)` (earlier
 *    requests submitted to the same device) has completed -- and, for a
 *    write on a volatile cache, after their writes are durable.
 *
 * Criticality (Ganger & Patt: how a request's response time matters to
 * the process that waits for it): time-critical (a process waits),
 * time-limited (will be waited for by `deadline_ns`), time-noncritical
 * (write-back nobody waits for).  Set by the issuer, raised later with
 * ubj_bdev_raise(); a queue's schedulers serve the more critical first.
 */
enum ubj_req_op { UBJ_REQ_READ = 0, UBJ_REQ_WRITE = 1, UBJ_REQ_FLUSH = 2 };

#define UBJ_REQ_FUA  0x1u   /* write: durable when it completes (Force Unit
                               Access: RWF_DSYNC, the model's write-through) */
#define UBJ_REQ_SYNC 0x2u   /* its submitter waits for it (set by the
                               synchronous calls; models count the others as
                               asynchronous) */
#define UBJ_REQ_FLAGS_PUBLIC 0x3u   /* higher bits belong to the device layer */

enum ubj_req_order {
    UBJ_ORDER_NONE = 0,
    UBJ_ORDER_BARRIER = 1,
    UBJ_ORDER_AFTER = 2,
};

enum ubj_req_crit {
    UBJ_CRIT_NONCRITICAL = 0,   /* time-noncritical */
    UBJ_CRIT_LIMITED = 1,       /* time-limited: deadline_ns */
    UBJ_CRIT_CRITICAL = 2,      /* time-critical */
};
#define UBJ_CRIT_CLASSES 3u

enum ubj_req_state { UBJ_REQ_IDLE = 0, UBJ_REQ_INFLIGHT = 1, UBJ_REQ_DONE = 2 };

/*
 * struct ubj_req -- one request.  The submitter fills the first group
 * (ubj_req_init zeroes the rest); the device fills the second; the third
 * is the device layer's.
 */
struct ubj_req {
    /* -- set by the submitter; read-only while in flight -- */
    uint32_t op;              /* enum ubj_req_op */
    uint32_t flags;           /* UBJ_REQ_FUA (writes only), UBJ_REQ_SYNC */
    uint64_t blkno;           /* first block (read, write) */
    uint32_t count;           /* blocks (read, write: > 0; flush: 0) */
    uint32_t order;           /* enum ubj_req_order */
    void *buf;                /* count * block_size bytes: filled by a read,
                                 stored by a write (never changed by it) */
    struct ubj_req *const *after; /* UBJ_ORDER_AFTER: requests it follows;
                                 read only during ubj_bdev_submit */
    uint32_t nafter;          /* entries in after[] (> 0 with AFTER) */
    uint32_t crit;            /* enum ubj_req_crit [raise: ubj_bdev_raise] */
    uint64_t deadline_ns;     /* UBJ_CRIT_LIMITED: wanted completion, ns on
                                 the stack's clock */
    uint32_t pid;             /* issuing process (0: the file system) */
    void (*done)(struct ubj_req *r);  /* completion callback, or NULL */
    void *priv;               /* the submitter's, for done */
    /* -- set by the device; valid once DONE -- */
    uint32_t state;           /* enum ubj_req_state [atomic] (always valid) */
    int result;               /* 0 or a negative errno */
    uint32_t dev_flags_;      /* the device layer's flags (src/dev/dev_int.h) */
    struct ubj_clock *clock;  /* the clock of the times below; NULL: the
                                 request met no timed model */
    uint64_t t_arrive;        /* reached the queue or the model, ns */
    uint64_t t_dispatch;      /* handed to the device below the queue, ns */
    uint64_t t_complete;      /* completed (modeled), ns */
    uint64_t t_cpu_ns;        /* of its service, the time the submitting
                                 CPU is busy (raw NAND: all of it, as MTD
                                 polls the chip and moves the bytes by
                                 programmed I/O; 0 elsewhere), ns; an
                                 asynchronous submitter is charged it */
    /* -- the device layer's: do not touch -- */
    struct ubj_bdev *dev_;    /* the device executing it */
    void *qent_;              /* the queue's entry while queued */
    uint64_t qseq_;           /* the queue's submission number */
    const void *qowner_;      /* the queue that numbered it */
    uint64_t qwseq_;          /* the queue's number of it as a completed
                                 write not yet durable (0: durable) */
    void *waiter_;            /* a sleeping waiter (src/dev/req.c) */
};

/*
 * ubj_req_init -- make `r` an IDLE request of `op` on blocks [blkno,
 * blkno + count) with buffer `buf` (NULL and 0 for a flush); every other
 * field zero: no flags, no tag, time-noncritical, pid 0, no callback.
 * Never fails; r must not be in flight.  Thread-safe (touches only r).
 */
void ubj_req_init(struct ubj_req *r, enum ubj_req_op op, uint64_t blkno,
                  uint32_t count, void *buf);

/*
 * ubj_bdev_submit -- hand request `r` to device `d` (r->state becomes
 * INFLIGHT).  Checks: d and r non-NULL; r not in flight (-EBUSY); op
 * known; a read or write has buf != NULL, count > 0 and blkno + count <=
 * d->nblocks; a flush has count 0; only public flags, FUA only on a write;
 * a known tag, AFTER with after != NULL and nafter > 0; a known class.
 * A rejected request gets -EINVAL (or -EBUSY) returned, is counted in
 * d->stats.errors, and is never completed (done is not called).
 * An accepted request returns 0 and completes exactly once, with its
 * result (-EIO, -ENOSPC, -EROFS, ... from the device) in r->result.
 * On a device without a queue: a tagged (BARRIER or AFTER) write on a
 * device with UBJ_BDEV_VOLATILE_CACHE is preceded by a flush and sent
 * with FUA, so what it follows is durable first and it is durable on
 * completion.  Counts the request in d->stats.  Thread-safe.
 */
int ubj_bdev_submit(struct ubj_bdev *d, struct ubj_req *r);

/*
 * ubj_bdev_wait -- wait until `r`, submitted to `d` with done == NULL,
 * has completed; then, if a timed model completed it, wait on that
 * model's clock until r->t_complete (virtual: the time moves there; real:
 * sleeps).  Returns r->result, or -EINVAL (NULL argument, r has a
 * callback, r was never submitted).  Thread-safe (any one thread may wait
 * for a request; it may not be waited for twice at once).
 */
int ubj_bdev_wait(struct ubj_bdev *d, struct ubj_req *r);

/*
 * ubj_bdev_wait_data -- wait until `r`, submitted to `d` with done ==
 * NULL, has completed (its data is done: a read's buffer filled, a
 * write's buffer free again), without waiting on a model's clock: the
 * modeled completion may still be ahead, as for a request submitted
 * asynchronously (no UBJ_REQ_SYNC) that its submitter does not wait for
 * in time.  On the virtual clock a queue below runs its events until r
 * completes, moving no time.  Returns r->result, or -EINVAL as
 * ubj_bdev_wait.  Thread-safe (one waiter per request).
 */
int ubj_bdev_wait_data(struct ubj_bdev *d, struct ubj_req *r);

/*
 * ubj_bdev_submit_wait -- the synchronous wrapper: set UBJ_REQ_SYNC,
 * ubj_bdev_submit, ubj_bdev_wait.  r->done must be NULL.  Returns the
 * request's result or ubj_bdev_submit's error.  Thread-safe.
 */
int ubj_bdev_submit_wait(struct ubj_bdev *d, struct ubj_req *r);

/*
 * ubj_bdev_write_crit, ubj_bdev_flush_crit -- ubj_bdev_write and
 * ubj_bdev_flush with the caller's class `crit` (enum ubj_req_crit)
 * saying whether it waits:
 *  - UBJ_CRIT_CRITICAL: a process waits -- exactly the v1 call
 *    (UBJ_REQ_SYNC; waits on a timed model's clock until the modeled
 *    completion).
 *  - UBJ_CRIT_NONCRITICAL: background I/O nobody waits for (the timer's
 *    tick, an early checkpoint): submitted asynchronously (no
 *    UBJ_REQ_SYNC: a model counts it asynchronous; it occupies the
 *    device, later requests queue behind it, but the caller is charged
 *    no time), and the call returns once
 *    the request has completed (ubj_bdev_wait_data) -- `buf` is free
 *    again, and a request submitted after the return is ordered after
 *    it even over a reordering queue.  A flush still covers every write
 *    completed before it: its modeled completion waits for everything
 *    queued at the device before it.
 * Returns as the v1 calls, or -EINVAL for another class (a time-limited
 * request needs its deadline: submit it with ubj_bdev_submit).
 * Thread-safe.
 */
int ubj_bdev_write_crit(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                        const void *buf, enum ubj_req_crit crit);
int ubj_bdev_flush_crit(struct ubj_bdev *d, enum ubj_req_crit crit);

/*
 * ubj_bdev_raise -- raise in-flight `r` (submitted to the stack at `d`)
 * to class `crit`, with `deadline_ns` for UBJ_CRIT_LIMITED (kept if
 * earlier): the first device down the stack that holds requests (a
 * queue) re-files it while it still waits there; once dispatched, or on a
 * stack that holds nothing, there is nothing to raise.  Returns 0, or
 * -EINVAL (NULL, an unknown class, or a class below r's).  Thread-safe.
 */
int ubj_bdev_raise(struct ubj_bdev *d, struct ubj_req *r, enum ubj_req_crit crit,
                   uint64_t deadline_ns);

/*
 * ubj_bdev_drain -- complete every request submitted to the stack at `d`
 * before the call (callbacks run before it returns).  Does not wait on a
 * model's clock (ubj_model_wait_idle does).  Returns 0 or -EINVAL (NULL).
 * Thread-safe.
 */
int ubj_bdev_drain(struct ubj_bdev *d);

/*
 * ubj_req_complete -- for device implementations: complete `r` with
 * `result` (0 or a negative errno): count it in the statistics of the
 * device executing it, mark it DONE, call its callback (or wake its
 * waiter).  Called exactly once per submission, from any thread, with no
 * device lock held that the callback could need.
 */
void ubj_req_complete(struct ubj_req *r, int result);

/*
 * ubj_bdev_forward -- for wrapper implementations: pass `r` (in flight at
 * the wrapper) to the wrapper's `lower` device and wait for it there, as
 * the same object (no copy: its times and clock come back filled in),
 * without waiting on a model's clock.  r's callback is kept for the
 * wrapper's own ubj_req_complete.  Returns the lower device's result or
 * its rejection (-EINVAL).  Thread-safe.
 */
int ubj_bdev_forward(struct ubj_bdev *lower, struct ubj_req *r);

/* ---- leaf devices ------------------------------------------------------ */

#define UBJ_BDEV_RDONLY 0x1u  /* open read-only; write() returns -EROFS */
#define UBJ_BDEV_CREATE 0x2u  /* create the file if missing (regular files) */
#define UBJ_BDEV_DIRECT 0x4u  /* O_DIRECT: bypass the host page cache */
#define UBJ_BDEV_RESIZE 0x8u  /* set a regular file's length to size_bytes */
#define UBJ_BDEV_EXCL   0x10u /* take an exclusive flock(); -EBUSY if held */

/*
 * ubj_bdev_file_open -- a regular file or a Linux block device, accessed
 * with pread/pwrite; flush is fdatasync(2).
 *   path:       file or /dev node.
 *   flags:      UBJ_BDEV_* above.
 *   size_bytes: with UBJ_BDEV_RESIZE (or CREATE of a new file), the file's
 *               new length; 0 = use the current length.  The device has
 *               floor(length / 4096) blocks.
 * Returns 0 and *out, or -ENOENT (missing, no CREATE), -EACCES, -EISDIR,
 * -EINVAL (size 0 / not a multiple-of-4096-capable length / bad flags),
 * -EBUSY (UBJ_BDEV_EXCL and another holder), -ENOSPC, or another open(2)
 * error.  A message for ubj_errormsg() is set on failure.
 */
int ubj_bdev_file_open(const char *path, unsigned flags, uint64_t size_bytes,
                       struct ubj_bdev **out);

/*
 * ubj_bdev_ram_create -- a device in DRAM of `nblocks` blocks, zero-filled.
 * flush is a no-op.  Returns 0, -EINVAL (nblocks == 0) or -ENOMEM.
 */
int ubj_bdev_ram_create(uint64_t nblocks, struct ubj_bdev **out);

/* ---- fault injection (src/dev/fault.c) -------------------------------- */

enum ubj_fault_op { UBJ_FAULT_READ = 0, UBJ_FAULT_WRITE = 1, UBJ_FAULT_FLUSH = 2 };

/*
 * ubj_bdev_fault_create -- wrap `lower` (taking ownership) in a device that
 * passes every request through until an armed fault fires.  On failure
 * `lower` is NOT destroyed.  Returns 0, -EINVAL or -ENOMEM.
 */
int ubj_bdev_fault_create(struct ubj_bdev *lower, struct ubj_bdev **out);

/*
 * ubj_bdev_fault_arm -- make the `nth` next request of kind `op` (1 = the
 * very next) fail with -EIO.  persistent != 0: that request and every later
 * one of that kind fail until ubj_bdev_fault_disarm(); otherwise only the
 * one fails (transient).  A write that fails with `torn_sectors` > 0 first
 * writes that many leading 512-byte sectors of the request to the lower
 * device (a torn write); 0 writes nothing.  Returns 0 or -EINVAL (not a
 * fault device, nth == 0).  Thread-safe.
 */
int ubj_bdev_fault_arm(struct ubj_bdev *d, enum ubj_fault_op op, uint64_t nth,
                       int persistent, uint32_t torn_sectors);

/* ubj_bdev_fault_disarm -- cancel every armed fault; requests pass again. */
int ubj_bdev_fault_disarm(struct ubj_bdev *d);

/* ubj_bdev_fault_fired -- how many requests the wrapper has failed so far. */
uint64_t ubj_bdev_fault_fired(const struct ubj_bdev *d);

/* ---- write recording for crash tests (src/dev/record.c) ---------------- */

/*
 * ubj_bdev_record_create -- wrap `lower` (taking ownership) in a device
 * that passes every request through and records each completed write
 * (block number, count, a copy of the data) and each completed flush; the
 * first time a block is written, its previous contents are saved, so the
 * image as it was at creation can be rebuilt.  Writes and flushes pass
 * down without a lock held, so several may be in flight below at once;
 * each write's submission and completion are recorded as events.
 * On failure `lower` is NOT destroyed.  Returns 0, -EINVAL or -ENOMEM.
 *
 * Volatile-cache model (ubj_bdev_record_crash; the write-through model
 * is below it): a write is durable once a later flush has completed, or
 * once it completed if it was written with FUA.  With
 * k flushes completed (k = 0 .. ubj_bdev_record_flushes), the writes
 * completed before flush k was submitted are durable; the writes of
 * "epoch k" -- completed after that and before flush k + 1 was submitted
 * (or the end of the record) -- may each have reached the medium whole, partly (512-byte sectors) or not
 * at all; later writes never happened.
 */
int ubj_bdev_record_create(struct ubj_bdev *lower, struct ubj_bdev **out);

/* ubj_bdev_record_writes / _flushes -- requests recorded so far (0 if d
 * is not a recording device). */
uint64_t ubj_bdev_record_writes(const struct ubj_bdev *d);
uint64_t ubj_bdev_record_flushes(const struct ubj_bdev *d);

/* ubj_bdev_record_epoch -- the writes of epoch k: indices [*first, *first
 * + *count).  0 or -EINVAL (k > flushes, not a recording device). */
int ubj_bdev_record_epoch(const struct ubj_bdev *d, uint64_t k, uint64_t *first,
                          uint64_t *count);

/* ubj_bdev_record_write_info -- write number i: its first block, block
 * count and data (valid until the device is destroyed).  0 or -EINVAL. */
int ubj_bdev_record_write_info(const struct ubj_bdev *d, uint64_t i,
                               uint64_t *blkno, uint32_t *count,
                               const void **data);

/* ubj_bdev_record_write_fua -- 1 if write number i was written with FUA,
 * 0 if not, -EINVAL (no such write, not a recording device). */
int ubj_bdev_record_write_fua(const struct ubj_bdev *d, uint64_t i);

/* What a crash image keeps of one write of the crash epoch. */
enum ubj_rec_keep {
    UBJ_REC_DROP = 0,     /* nothing of it reached the medium */
    UBJ_REC_WHOLE = 1,    /* all of it */
    UBJ_REC_PREFIX = 2,   /* its first `sectors` 512-byte sectors */
    UBJ_REC_SUFFIX = 4,   /* its last `sectors` sectors (a device that
                             wrote a multi-block request out of order) */
    UBJ_REC_SECTORS = 3,  /* each 512-byte sector kept or not, pseudo-randomly
                             from `seed` (a device reordering inside a write) */
};
struct ubj_rec_choice {
    uint32_t keep;        /* enum ubj_rec_keep */
    uint32_t sectors;     /* UBJ_REC_PREFIX, UBJ_REC_SUFFIX */
    uint64_t seed;        /* UBJ_REC_SECTORS */
};

/*
 * ubj_bdev_record_crash -- write onto `target` (at least as large; not
 * flushed) the image a power cut during epoch k leaves: the image at
 * creation, every write durable after flush k, then the writes of epoch
 * k as choice[j] says for its j-th write (j < nchoice; the rest, or all
 * with choice NULL, are dropped), in issue order -- except that a FUA
 * write followed by a write the choice keeps any part of is kept whole
 * (the cut came after it completed, and FUA made it durable then: the
 * choice does not describe a reachable state otherwise).  Returns 0, -EINVAL
 * (bad k, target too small) or the target's error.
 */
int ubj_bdev_record_crash(struct ubj_bdev *d, uint64_t k,
                          const struct ubj_rec_choice *choice, uint64_t nchoice,
                          struct ubj_bdev *target);

/*
 * The write-through model (a device without a volatile write cache, or
 * one whose every write is FUA): a write is durable once it completed;
 * a power cut at an instant leaves every write completed before it, any
 * subset of the writes in flight at it (submitted, not completed: each
 * whole, partly or not at all), and nothing of later ones.  Flushes
 * change nothing.  The instants that matter are the cuts: cut k (k = 0 ..
 * ubj_bdev_record_writes) is the instant just before the k-th completion
 * (k = writes: after the last), where the most writes are in flight for
 * the k durable ones -- any instant's states are some cut's.  Order of
 * events: each write's submission and completion as the recorder saw
 * them, or, when a timed model below timed it, at its modeled dispatch
 * and completion (so a queue's dispatches into one model on the virtual
 * clock overlap); a completion goes before a submission at the same
 * time.  Place the recorder below a queue to see the queue's order.
 * Writes still in flight when these are called are not in the record.
 */

/* ubj_bdev_record_cut -- the writes in flight at cut k: their numbers
 * (as ubj_bdev_record_write_info's), in submission order, into
 * inflight[0..max) (the first max of them), and how many in *n.  Returns
 * 0, -EINVAL (k > writes, not a recording device) or -ENOMEM. */
int ubj_bdev_record_cut(struct ubj_bdev *d, uint64_t k, uint64_t *inflight,
                        uint64_t max, uint64_t *n);

/* ubj_bdev_record_durable -- the number of the j-th write to complete, in
 * the events' order (j < writes; cut k's durable writes are j < k; j on
 * a stack without a timed model).  Returns it, or -EINVAL / -ENOMEM. */
int64_t ubj_bdev_record_durable(struct ubj_bdev *d, uint64_t j);

/*
 * ubj_bdev_record_crash_cut -- write onto `target` (as
 * ubj_bdev_record_crash) the image a power cut at cut k leaves under the
 * write-through model: the image at creation, cut k's durable writes
 * whole in completion order, then its in-flight writes in submission
 * order as choice[j] says for the j-th (j < nchoice; the rest, or all
 * with choice NULL, dropped).  Returns 0, -EINVAL (bad k, target too
 * small), -ENOMEM or the target's error.
 */
int ubj_bdev_record_crash_cut(struct ubj_bdev *d, uint64_t k,
                              const struct ubj_rec_choice *choice, uint64_t nchoice,
                              struct ubj_bdev *target);

/*
 * ---- overlays: devices over `lower` that serve some blocks themselves ----
 *
 * cow (src/dev/cow.c): copy-on-write in memory -- every write kept there,
 * lower never written (fsck -n replays a journal into one).
 * map (src/dev/map.c): read-only -- the blocks a map names come from the
 * map's memory, the others from lower (the NVM view of an image and its
 * region, src/nvm/view.c, is one).
 */

#define UBJ_COW_BORROW 0x1u  /* do not destroy `lower` with the overlay */

/*
 * ubj_bdev_cow_create -- a device that reads `lower` but keeps every
 * write in memory (lower is never written; flush does nothing): lets fsck
 * -n replay a journal without changing the image.  Owns `lower` unless
 * UBJ_COW_BORROW.  On failure `lower` is NOT destroyed.  Returns 0,
 * -EINVAL or -ENOMEM.  Its kind is UBJ_BDEV_KIND_COW.
 */
int ubj_bdev_cow_create(struct ubj_bdev *lower, unsigned flags,
                        struct ubj_bdev **out);

/* ubj_bdev_cow_blocks -- blocks held in memory (0: not a cow overlay). */
uint64_t ubj_bdev_cow_blocks(const struct ubj_bdev *d);

/* What a map overlay serves itself. */
struct ubj_bdev_map {
    const char *name;        /* the device's name (in messages) */
    const void *owner;       /* its creator's tag (ubj_bdev_map_owner) */
    const char *erofs;       /* the message of a write (-EROFS) */
    /* the 4096-byte copy of blkno the map holds, or NULL: lower's */
    const uint8_t *(*find)(void *ctx, uint64_t blkno);
    void (*fini)(void *ctx); /* on destroy, after lower is destroyed */
    void *ctx;
};

/*
 * ubj_bdev_map_create -- a read-only device over `lower` (which it owns
 * once this succeeds): each block map->find names comes from the map,
 * runs of the others from lower; writes fail with -EROFS (map->erofs);
 * flush does nothing.  Geometry and guarantees are lower's; the kind is
 * UBJ_BDEV_KIND_MAP.  *map is copied.  Returns 0 and *out, -EINVAL or
 * -ENOMEM (then neither lower nor ctx is touched).
 */
int ubj_bdev_map_create(struct ubj_bdev *lower, const struct ubj_bdev_map *map,
                        struct ubj_bdev **out);

/* ubj_bdev_map_owner -- the owner tag d was created with if d is a map
 * overlay, else NULL; ubj_bdev_map_ctx -- its ctx (NULL likewise). */
const void *ubj_bdev_map_owner(const struct ubj_bdev *d);
void *ubj_bdev_map_ctx(const struct ubj_bdev *d);

#ifdef __cplusplus
}
#endif
#endif /* UBJFS_BDEV_H */
