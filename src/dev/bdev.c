/*
 * bdev.c -- the block-device dispatch layer of interface v1: every
 * ubj_bdev_read/write/flush from the layers above passes through here,
 * and runs on interface v2 (src/dev/req.c): it builds a request on the
 * caller's stack, submits it and waits for it.
 *
 * Owns: the v1 argument and bounds checks (with their messages), the
 * calls that say in their arguments whether the caller waits on the
 * model's clock (ubj_bdev_write_crit / ubj_bdev_flush_crit), the
 * statistics snapshot and reset, and the query of what a device is
 * (ubj_bdev_kind: no layer tests an ops table's identity).  Kept tiny:
 * it is on the hot path.
 *
 * Whether a caller waits is explicit (issue 18: this replaced the
 * models' per-thread asynchronous bracket): the v1 calls, and the _crit
 * calls at UBJ_CRIT_CRITICAL, submit a time-critical request marked
 * UBJ_REQ_SYNC and wait for its data and for its modeled completion; the
 * _crit calls at a lower class (background work: the timer's tick, an
 * early checkpoint) submit it asynchronously -- no UBJ_REQ_SYNC, so a
 * model counts it asynchronous, it occupies the device but moves no time
 * -- and wait for its data only (ubj_bdev_wait_data, req.c): the buffer
 * is free again on return and the request has completed, so what the
 * caller submits next follows it even over a reordering queue.
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

/* bdev_crit_ok -- a class the _crit calls take: time-critical or
 * time-noncritical (a time-limited request needs a deadline: v2). */
static inline bool bdev_crit_ok(enum ubj_req_crit crit)
{
    return crit == UBJ_CRIT_CRITICAL || crit == UBJ_CRIT_NONCRITICAL;
}

/* bdev_call -- submit the request r and wait for it: with `crit`
 * UBJ_CRIT_CRITICAL marked SYNC and on the model's clock too, else
 * asynchronously, for its data only. */
static int bdev_call(struct ubj_bdev *d, struct ubj_req *r, uint32_t crit)
{
    bool wait_clock = crit == UBJ_CRIT_CRITICAL;
    r->crit = crit;
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
    return bdev_call(d, &r, UBJ_CRIT_CRITICAL);
}

/* ubj_bdev_write -- check, then a write request, waited for. */
int ubj_bdev_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                   const void *buf)
{
    return ubj_bdev_write_crit(d, blkno, count, buf, UBJ_CRIT_CRITICAL);
}

/* ubj_bdev_write_crit -- check, then a write request of class crit. */
int ubj_bdev_write_crit(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                        const void *buf, enum ubj_req_crit crit)
{
    if (!bdev_io_ok(d, blkno, count, buf))
        return bdev_bad_io(d, "write", blkno, count, buf);
    if (!bdev_crit_ok(crit))
        return ubj_set_error(-EINVAL, "bdev write: class %u is neither time-critical "
                             "nor time-noncritical", (unsigned)crit);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_WRITE, blkno, count, (void *)buf);  /* never written */
    return bdev_call(d, &r, crit);
}

/* ubj_bdev_flush -- a flush request, waited for. */
int ubj_bdev_flush(struct ubj_bdev *d)
{
    return ubj_bdev_flush_crit(d, UBJ_CRIT_CRITICAL);
}

/* ubj_bdev_flush_crit -- a flush request of class crit. */
int ubj_bdev_flush_crit(struct ubj_bdev *d, enum ubj_req_crit crit)
{
    if (d == NULL || d->ops == NULL)
        return ubj_set_error(-EINVAL, "bdev flush: no device");
    if (!bdev_crit_ok(crit))
        return ubj_set_error(-EINVAL, "bdev flush: class %u is neither time-critical "
                             "nor time-noncritical", (unsigned)crit);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_FLUSH, 0, 0, NULL);
    return bdev_call(d, &r, crit);
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
