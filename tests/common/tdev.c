/*
 * tdev.c -- block devices for tests (see testutil.h): a sparse device
 * (hash table of written blocks, any size) and a size-changing view over
 * another device.  Both follow include/ubjfs/bdev.h's contract; the
 * dispatch layer has already bounds-checked every request against the
 * device's own nblocks.
 *
 * Sparse device invariants: `slots` is a power of two, open addressing
 * with linear probing, never more than half full; a slot with data ==
 * NULL is empty; blocks are never removed (a written block of zeros stays
 * stored).  [lock] protects the table.
 */
#include "testutil.h"

#include <pthread.h>

struct tdev_sparse {
    struct ubj_bdev dev;
    pthread_mutex_t lock;
    uint64_t *keys;        /* [lock] block numbers */
    uint8_t **data;        /* [lock] 4096-byte blocks, NULL = empty slot */
    uint64_t slots;        /* [lock] power of two */
    uint64_t used;         /* [lock] */
};

/* tdev_hash -- slot hash of a block number. */
static uint64_t tdev_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

/* tdev_find -- slot of blkno, or the empty slot where it would go. */
static uint64_t tdev_find(const struct tdev_sparse *s, uint64_t blkno)
{
    uint64_t i = tdev_hash(blkno) & (s->slots - 1);
    while (s->data[i] != NULL && s->keys[i] != blkno)
        i = (i + 1) & (s->slots - 1);
    return i;
}

/* tdev_grow -- double the table. */
static int tdev_grow(struct tdev_sparse *s)
{
    uint64_t oslots = s->slots;
    uint64_t *okeys = s->keys;
    uint8_t **odata = s->data;
    s->slots = oslots ? oslots * 2 : 1024;
    s->keys = calloc(s->slots, sizeof *s->keys);
    s->data = calloc(s->slots, sizeof *s->data);
    if (s->keys == NULL || s->data == NULL) {
        free(s->keys);
        free(s->data);
        s->keys = okeys;
        s->data = odata;
        s->slots = oslots;
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < oslots; i++) {
        if (odata[i] == NULL)
            continue;
        uint64_t j = tdev_find(s, okeys[i]);
        s->keys[j] = okeys[i];
        s->data[j] = odata[i];
    }
    free(okeys);
    free(odata);
    return 0;
}

/* tdev_sparse_read -- stored blocks, zeros elsewhere. */
static int tdev_sparse_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                            void *buf)
{
    struct tdev_sparse *s = (struct tdev_sparse *)d;
    pthread_mutex_lock(&s->lock);
    for (uint32_t c = 0; c < count; c++) {
        uint8_t *dst = (uint8_t *)buf + (size_t)c * UBJ_BLOCK_SIZE;
        uint64_t i = tdev_find(s, blkno + c);
        if (s->data[i] != NULL)
            memcpy(dst, s->data[i], UBJ_BLOCK_SIZE);
        else
            memset(dst, 0, UBJ_BLOCK_SIZE);
    }
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* tdev_sparse_write -- store each block, allocating on first write. */
static int tdev_sparse_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                             const void *buf)
{
    struct tdev_sparse *s = (struct tdev_sparse *)d;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    for (uint32_t c = 0; c < count && rc == 0; c++) {
        const uint8_t *src = (const uint8_t *)buf + (size_t)c * UBJ_BLOCK_SIZE;
        uint64_t i = tdev_find(s, blkno + c);
        if (s->data[i] == NULL) {
            if ((s->used + 1) * 2 > s->slots) {
                rc = tdev_grow(s);
                if (rc < 0)
                    break;
                i = tdev_find(s, blkno + c);
            }
            s->data[i] = malloc(UBJ_BLOCK_SIZE);
            if (s->data[i] == NULL) {
                rc = -ENOMEM;
                break;
            }
            s->keys[i] = blkno + c;
            s->used++;
        }
        memcpy(s->data[i], src, UBJ_BLOCK_SIZE);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* tdev_noflush -- nothing is volatile. */
static int tdev_noflush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* tdev_sparse_destroy -- free every block and the table. */
static void tdev_sparse_destroy(struct ubj_bdev *d)
{
    struct tdev_sparse *s = (struct tdev_sparse *)d;
    for (uint64_t i = 0; i < s->slots; i++)
        free(s->data[i]);
    free(s->keys);
    free(s->data);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const struct ubj_bdev_ops tdev_sparse_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "test-sparse",
    .read = tdev_sparse_read, .write = tdev_sparse_write,
    .flush = tdev_noflush, .destroy = tdev_sparse_destroy,
};

/* tdev_sparse_create -- an empty sparse device of nblocks. */
int tdev_sparse_create(uint64_t nblocks, struct ubj_bdev **out)
{
    struct tdev_sparse *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -ENOMEM;
    if (tdev_grow(s) < 0) {
        free(s);
        return -ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->dev.ops = &tdev_sparse_ops;
    s->dev.block_size = UBJ_BLOCK_SIZE;
    s->dev.guarantees = UBJ_BDEV_ATOMIC_BLOCK;
    s->dev.nblocks = nblocks;
    *out = &s->dev;
    return 0;
}

/* tdev_sparse_mapped -- blocks stored. */
uint64_t tdev_sparse_mapped(const struct ubj_bdev *d)
{
    struct tdev_sparse *s = (struct tdev_sparse *)d;
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->used;
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* ---- view --------------------------------------------------------------- */

/* tdev_view_ok -- the request lies inside the lower device. */
static int tdev_view_ok(struct ubj_bdev *d, uint64_t blkno, uint32_t count)
{
    return blkno + count <= d->lower->nblocks;
}

/* tdev_view_read -- forward or -EIO past the lower device. */
static int tdev_view_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                          void *buf)
{
    if (!tdev_view_ok(d, blkno, count))
        return -EIO;
    return ubj_bdev_read(d->lower, blkno, count, buf);
}

/* tdev_view_write -- forward or -EIO past the lower device. */
static int tdev_view_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                           const void *buf)
{
    if (!tdev_view_ok(d, blkno, count))
        return -EIO;
    return ubj_bdev_write(d->lower, blkno, count, buf);
}

/* tdev_view_flush -- forward. */
static int tdev_view_flush(struct ubj_bdev *d)
{
    return ubj_bdev_flush(d->lower);
}

/* tdev_view_destroy -- destroy lower, then the view. */
static void tdev_view_destroy(struct ubj_bdev *d)
{
    ubj_bdev_destroy(d->lower);
    free(d);
}

static const struct ubj_bdev_ops tdev_view_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "test-view",
    .read = tdev_view_read, .write = tdev_view_write,
    .flush = tdev_view_flush, .destroy = tdev_view_destroy,
};

/* tdev_view_create -- wrap lower with another size. */
int tdev_view_create(struct ubj_bdev *lower, uint64_t nblocks, struct ubj_bdev **out)
{
    struct ubj_bdev *d = calloc(1, sizeof *d);
    if (d == NULL)
        return -ENOMEM;
    d->ops = &tdev_view_ops;
    d->block_size = lower->block_size;
    d->guarantees = lower->guarantees;
    d->nblocks = nblocks;
    d->lower = lower;
    *out = d;
    return 0;
}
