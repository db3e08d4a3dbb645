/*
 * bdev.c -- the block-device dispatch layer: every read, write and flush
 * from the layers above passes through ubj_bdev_read/write/flush here.
 *
 * Owns: argument and bounds checks, the statistics in d->stats, the
 * one hook point for tracing, and the query of what a device is
 * (ubj_bdev_kind: no layer tests an ops table's identity).  Kept tiny: it is on the hot path.
 *
 * Invariants:
 *  - A device op is called only with d, d->ops and buf non-NULL, count > 0
 *    and blkno + count <= d->nblocks (no overflow).
 *  - Statistics are updated with relaxed __atomic adds on the plain
 *    uint64_t fields, so concurrent callers never lose a count; a snapshot
 *    (ubj_bdev_stats_get) reads each field atomically but not all at once.
 *  - reads/writes/flushes count requests handed to the device, whatever
 *    they return; bytes_read/bytes_written count only requests that
 *    succeeded; errors counts every request that returned an error,
 *    including those rejected here for bad arguments (when d is non-NULL).
 *  - On a device error the device op has set the ubj_errormsg() message;
 *    this layer sets it only for the arguments it rejects.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include "ubjfs/bdev.h"
#include "util/util.h"

/* from src/util/errormsg.c (declared in fs/fs.h, which dev/ must not use) */

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

/* ubj_bdev_read -- check, forward to the device, count. */
int ubj_bdev_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    if (!bdev_io_ok(d, blkno, count, buf))
        return bdev_bad_io(d, "read", blkno, count, buf);
    int rc = d->ops->read(d, blkno, count, buf);
    BDEV_ADD(d->stats.reads, 1);
    if (rc < 0)
        BDEV_ADD(d->stats.errors, 1);
    else
        BDEV_ADD(d->stats.bytes_read, (uint64_t)count * d->block_size);
    return rc;
}

/* ubj_bdev_write -- check, forward to the device, count. */
int ubj_bdev_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                   const void *buf)
{
    if (!bdev_io_ok(d, blkno, count, buf))
        return bdev_bad_io(d, "write", blkno, count, buf);
    int rc = d->ops->write(d, blkno, count, buf);
    BDEV_ADD(d->stats.writes, 1);
    if (rc < 0)
        BDEV_ADD(d->stats.errors, 1);
    else
        BDEV_ADD(d->stats.bytes_written, (uint64_t)count * d->block_size);
    return rc;
}

/* ubj_bdev_flush -- forward a cache flush to the device, count. */
int ubj_bdev_flush(struct ubj_bdev *d)
{
    if (d == NULL || d->ops == NULL)
        return ubj_set_error(-EINVAL, "bdev flush: no device");
    int rc = d->ops->flush(d);
    BDEV_ADD(d->stats.flushes, 1);
    if (rc < 0)
        BDEV_ADD(d->stats.errors, 1);
    return rc;
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
