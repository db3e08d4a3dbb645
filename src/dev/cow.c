/*
 * cow.c -- the copy-on-write memory overlay (ubj_bdev_cow_create), one of
 * the overlay family (include/ubjfs/bdev.h; src/dev/map.c): reads come
 * from the blocks written through the overlay if any, else from the lower
 * device; writes never reach the lower device.  fsck -n replays a journal
 * into one so that it checks the recovered image without changing the
 * real one (src/txn/jrecovery.c, src/fs/check.c).
 *
 * Data [lock]: a hash table (open addressing, linear probing) from block
 * number to a 4 KiB copy; it only grows, and copies are never freed
 * before destroy.
 *
 * Invariants: the lower device is only ever read; with UBJ_COW_BORROW
 * destroy leaves it alone, otherwise the overlay owns it.  Flush does
 * nothing (the overlay is memory; FUA likewise).  Geometry and guarantees
 * are lower's.  Interface v2: its submit is its own calls
 * (dev_submit_calls), completed in the caller's thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dev/dev_int.h"
#include "ubjfs/bdev.h"
#include "util/util.h"

#define OVL_BS UBJ_BLOCK_SIZE

struct ovl_bdev {
    struct ubj_bdev base;    /* first: the handle callers hold */
    pthread_mutex_t lock;
    unsigned flags;          /* UBJ_OVERLAY_* */
    uint64_t *keys;          /* [lock] blkno + 1; 0 = empty */
    uint8_t **vals;          /* [lock] the block's copy */
    uint64_t mask, n;        /* [lock] */
};

/* ovl_of -- the overlay embedding d, or NULL. */
static inline struct ovl_bdev *ovl_of(const struct ubj_bdev *d)
{
    return ubj_bdev_kind(d) == UBJ_BDEV_KIND_COW ? (struct ovl_bdev *)d : NULL;
}

/* ovl_slot -- the slot of blkno (found or empty). */
static uint64_t ovl_slot(const struct ovl_bdev *o, uint64_t blkno)
{
    uint64_t i = (blkno * 0x9E3779B97F4A7C15ull >> 17) & o->mask;
    while (o->keys[i] != 0 && o->keys[i] != blkno + 1)
        i = (i + 1) & o->mask;
    return i;
}

/* ovl_grow -- double the table.  0 or -ENOMEM. */
static int ovl_grow(struct ovl_bdev *o)
{
    uint64_t size = o->mask ? (o->mask + 1) * 2 : 256;
    uint64_t *k = calloc(size, sizeof *k);
    uint8_t **v = calloc(size, sizeof *v);
    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    uint64_t *ok = o->keys, old = o->mask ? o->mask + 1 : 0;
    uint8_t **ov = o->vals;
    o->keys = k;
    o->vals = v;
    o->mask = size - 1;
    for (uint64_t i = 0; i < old; i++) {
        if (ok[i] == 0)
            continue;
        uint64_t s = ovl_slot(o, ok[i] - 1);
        k[s] = ok[i];
        v[s] = ov[i];
    }
    free(ok);
    free(ov);
    return 0;
}

/* ovl_read -- overlay blocks from memory, runs of others from below. */
static int ovl_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct ovl_bdev *o = ovl_of(d);
    uint8_t *out = buf;
    pthread_mutex_lock(&o->lock);
    int rc = 0;
    for (uint32_t k = 0; k < count && rc == 0;) {
        uint64_t s = ovl_slot(o, blkno + k);
        if (o->keys[s] != 0) {
            memcpy(out + (size_t)k * OVL_BS, o->vals[s], OVL_BS);
            k++;
            continue;
        }
        uint32_t run = 1;
        while (k + run < count && o->keys[ovl_slot(o, blkno + k + run)] == 0)
            run++;
        rc = ubj_bdev_read(d->lower, blkno + k, run, out + (size_t)k * OVL_BS);
        k += run;
    }
    pthread_mutex_unlock(&o->lock);
    return rc;
}

/* ovl_write -- keep the blocks in memory. */
static int ovl_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                     const void *buf)
{
    struct ovl_bdev *o = ovl_of(d);
    const uint8_t *in = buf;
    pthread_mutex_lock(&o->lock);
    int rc = 0;
    for (uint32_t k = 0; k < count && rc == 0; k++) {
        if ((o->n + 1) * 2 > o->mask + 1 && ovl_grow(o) < 0) {
            rc = -ENOMEM;
            break;
        }
        uint64_t s = ovl_slot(o, blkno + k);
        if (o->keys[s] == 0) {
            o->vals[s] = malloc(OVL_BS);
            if (o->vals[s] == NULL) {
                rc = -ENOMEM;
                break;
            }
            o->keys[s] = blkno + k + 1;
            o->n++;
        }
        memcpy(o->vals[s], in + (size_t)k * OVL_BS, OVL_BS);
    }
    pthread_mutex_unlock(&o->lock);
    if (rc < 0)
        return ubj_set_error(rc, "overlay bdev: out of memory");
    return 0;
}

/* ovl_flush -- memory needs no flush. */
static int ovl_flush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* ovl_destroy -- free the copies; the lower device unless borrowed. */
static void ovl_destroy(struct ubj_bdev *d)
{
    struct ovl_bdev *o = ovl_of(d);
    for (uint64_t i = 0; o->mask && i <= o->mask; i++)
        if (o->keys[i] != 0)
            free(o->vals[i]);
    free(o->keys);
    free(o->vals);
    if (!(o->flags & UBJ_COW_BORROW))
        ubj_bdev_destroy(d->lower);
    pthread_mutex_destroy(&o->lock);
    free(o);
}

static const struct ubj_bdev_ops ovl_ops = {
    .version = UBJ_BDEV_OPS_V2,
    .name = "overlay",
    .read = ovl_read,
    .write = ovl_write,
    .flush = ovl_flush,
    .destroy = ovl_destroy,
    .submit = dev_submit_calls,     /* synchronous, in the caller's thread */
};

/* ubj_bdev_cow_create -- a memory overlay over lower. */
int ubj_bdev_cow_create(struct ubj_bdev *lower, unsigned flags,
                            struct ubj_bdev **out)
{
    if (lower == NULL || out == NULL || (flags & ~UBJ_COW_BORROW))
        return ubj_set_error(-EINVAL, "overlay bdev: bad argument");
    struct ovl_bdev *o = calloc(1, sizeof *o);
    if (o == NULL || ovl_grow(o) < 0) {
        free(o);
        return ubj_set_error(-ENOMEM, "overlay bdev: out of memory");
    }
    pthread_mutex_init(&o->lock, NULL);
    o->flags = flags;
    dev_wrap_init(&o->base, &ovl_ops, lower);
    o->base.kind = UBJ_BDEV_KIND_COW;
    *out = &o->base;
    return 0;
}

/* ubj_bdev_cow_blocks -- blocks held in memory. */
uint64_t ubj_bdev_cow_blocks(const struct ubj_bdev *d)
{
    struct ovl_bdev *o = ovl_of(d);
    if (o == NULL)
        return 0;
    pthread_mutex_lock(&o->lock);
    uint64_t n = o->n;
    pthread_mutex_unlock(&o->lock);
    return n;
}
