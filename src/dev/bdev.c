/*
 * bdev.c -- the block-device dispatch layer of interface v1: every
 * ubj_bdev_read/write/flush from the layers above passes through here,
 * and runs on interface v2 (src/dev/req.c): it builds a request on the
 * caller's stack, submits it and waits for it.
 *
 * Owns: the v1 argument and bounds checks (with their messages), the
 * statistics snapshot and reset, the query of what a device is
 * (ubj_bdev_kind: no layer tests an ops table's identity), and the
 * asynchronous-submission bracket of the timed models
 * (ubj_model_async_begin/end, declared in include/ubjfs/model.h).  Kept
 * tiny: it is on the hot path.
 *
 * The bracket on v2: inside it a v1 call is an asynchronous submission
 * whose modeled completion nobody waits for -- the request goes without
 * UBJ_REQ_SYNC (a model counts it as asynchronous) and the call waits for
 * the data (the caller's buffer is free again on return) but not on the
 * model's clock.  Outside it the call waits for both, like
 * ubj_bdev_submit_wait.  One mechanism remains underneath: a request and
 * its completion time; the bracket only decides whether the v1 caller
 * waits for that time.  Its callers (src/fs/super.c's timer thread,
 * src/txn/ubj.c's early checkpoint, src/bench/harness.c's ticks) move to
 * asynchronous submission when the cache submits through the queue (issue
 * 18, item 3); the bracket goes with them.
 *
 * Invariants:
 *  - A device sees only requests that passed ubj_bdev_submit's checks;
 *    the v1 calls check first themselves, with their own messages.
 *  - Statistics are updated with relaxed __atomic adds on the plain
 *    uint64_t fields (req.c), so concurrent callers never lose a count; a
 *    snapshot (ubj_bdev_stats_get) reads each field atomically but not
 *    all at once.
 *  - reads/writes/flushes count requests handed to the device, whatever
 *    they return; bytes_read/bytes_written count only requests that
 *    succeeded; errors counts every request that returned an error,
 *    including those rejected here for bad arguments (when d is non-NULL).
 *  - On a device error the device has set the ubj_errormsg() message;
 *    this layer sets it only for the arguments it rejects.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dev/dev_int.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define BDEV_ADD(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)

/* bdev_bad_io -- count and report a request rejected for bad arguments. */
static int bdev_bad_io(struct ubj_bdev *d, const char *what, uint64_t blkno,
                       uint32_t count, const void *buf)
{
    if (d == NULL || d->ops == NULL)
        return ubj_set_error(-EINVAL, "bdev %s: no device", what);
    BDEV_ADD(d->stats.errors, 1);
    if (buf == NULL)
        return ubj_set_error(-EINVAL, "bdev %s: NULL buffer", what);
    if (count == 0)
        return ubj_set_error(-EINVAL, "bdev %s: zero block count", what);
    return ubj_set_error(-EINVAL,
                         "bdev %s: blocks %llu+%u past the end of %s device "
                         "(%llu blocks)", what, (unsigned long long)blkno,
                         count, d->ops->name, (unsigned long long)d->nblocks);
}

/* bdev_io_ok -- true if the request may be passed to the device. */
static inline int bdev_io_ok(const struct ubj_bdev *d, uint64_t blkno,
                             uint32_t count, const void *buf)
{
    return d != NULL && d->ops != NULL && buf != NULL && count != 0 &&
           count <= d->nblocks && blkno <= d->nblocks - count;
}

static _Thread_local unsigned bdev_async_depth;   /* the bracket's nesting */

/* bdev_call -- submit the v1 call's request r and wait for it: for the
 * model's clock too unless the thread is inside the bracket. */
static int bdev_call(struct ubj_bdev *d, struct ubj_req *r)
{
    bool wait_clock = bdev_async_depth == 0;
    if (wait_clock)
        r->flags = UBJ_REQ_SYNC;
    int rc = ubj_bdev_submit(d, r);
    return rc < 0 ? rc : dev_req_wait(d, r, wait_clock);
}

/* ubj_bdev_read -- check, then a read request, waited for. */
int ubj_bdev_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    if (!bdev_io_ok(d, blkno, count, buf))
        return bdev_bad_io(d, "read", blkno, count, buf);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_READ, blkno, count, buf);
    r.crit = UBJ_CRIT_CRITICAL;
    return bdev_call(d, &r);
}

/* ubj_bdev_write -- check, then a write request, waited for. */
int ubj_bdev_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                   const void *buf)
{
    if (!bdev_io_ok(d, blkno, count, buf))
        return bdev_bad_io(d, "write", blkno, count, buf);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_WRITE, blkno, count, (void *)buf);  /* never written */
    r.crit = bdev_async_depth == 0 ? UBJ_CRIT_CRITICAL : UBJ_CRIT_NONCRITICAL;
    return bdev_call(d, &r);
}

/* ubj_bdev_flush -- a flush request, waited for. */
int ubj_bdev_flush(struct ubj_bdev *d)
{
    if (d == NULL || d->ops == NULL)
        return ubj_set_error(-EINVAL, "bdev flush: no device");
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_FLUSH, 0, 0, NULL);
    r.crit = bdev_async_depth == 0 ? UBJ_CRIT_CRITICAL : UBJ_CRIT_NONCRITICAL;
    return bdev_call(d, &r);
}

/* ubj_model_async_begin -- this thread's v1 calls stop waiting on the
 * model's clock. */
void ubj_model_async_begin(void)
{
    bdev_async_depth++;
}

/* ubj_model_async_active -- inside a bracket on this thread? */
int ubj_model_async_active(void)
{
    return bdev_async_depth > 0;
}

/* ubj_model_async_end -- close one bracket. */
void ubj_model_async_end(void)
{
    if (bdev_async_depth > 0)
        bdev_async_depth--;
}

/* ubj_bdev_destroy -- release d; a wrapper's destroy releases its lower. */
void ubj_bdev_destroy(struct ubj_bdev *d)
{
    if (d != NULL && d->ops != NULL)
        d->ops->destroy(d);
}

/* ubj_bdev_stats_get -- copy d's counters, each read atomically. */
void ubj_bdev_stats_get(const struct ubj_bdev *d, struct ubj_bdev_stats *out)
{
    if (out == NULL)
        return;
    if (d == NULL) {
        *out = (struct ubj_bdev_stats){0};
        return;
    }
    out->reads = __atomic_load_n(&d->stats.reads, __ATOMIC_RELAXED);
    out->writes = __atomic_load_n(&d->stats.writes, __ATOMIC_RELAXED);
    out->flushes = __atomic_load_n(&d->stats.flushes, __ATOMIC_RELAXED);
    out->bytes_read = __atomic_load_n(&d->stats.bytes_read, __ATOMIC_RELAXED);
    out->bytes_written = __atomic_load_n(&d->stats.bytes_written,
                                         __ATOMIC_RELAXED);
    out->errors = __atomic_load_n(&d->stats.errors, __ATOMIC_RELAXED);
}

/* ubj_bdev_stats_reset -- zero d's own counters (lower devices keep theirs). */
void ubj_bdev_stats_reset(struct ubj_bdev *d)
{
    if (d == NULL)
        return;
    __atomic_store_n(&d->stats.reads, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&d->stats.writes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&d->stats.flushes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&d->stats.bytes_read, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&d->stats.bytes_written, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&d->stats.errors, 0, __ATOMIC_RELAXED);
}

/* ubj_bdev_kind -- what d is. */
uint32_t ubj_bdev_kind(const struct ubj_bdev *d)
{
    return d != NULL ? d->kind : UBJ_BDEV_KIND_DEVICE;
}
