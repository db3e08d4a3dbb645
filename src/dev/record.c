/*
 * record.c -- the write-recording wrapper (ubj_bdev_record_create): passes
 * every request to the device it wraps and remembers what a power cut
 * could have left on the medium, so crash tests (tests/journal, the crash
 * explorer) can build the image of a power loss at any point afterwards.
 *
 * What is recorded [lock]:
 *   w[0..nw)       every write that completed: first block, count, and the
 *                  offset of a copy of its data in `pool`
 *   flush_at[k-1]  for the k-th completed flush: how many writes had been
 *                  issued when it began (they are durable once it is done)
 *   orig           for each block written at least once: its contents
 *                  before the first recorded write (a hash table of block
 *                  number -> offset in `opool`), so the image at creation
 *                  is "lower now, with the original blocks put back"
 *
 * Invariants:
 *  - Writes and flushes are serialised by `lock` (held across the lower
 *    I/O), so the record's order is the order the lower device saw, and
 *    the order in which the writes completed.
 *  - A FUA write (fua) was durable when it completed: a crash image that
 *    keeps anything of a later write of its epoch keeps it whole.
 *  - A write that failed is not recorded (what a failing device leaves is
 *    the fault wrapper's business); a flush that failed does not count.
 *  - flush_at is non-decreasing and <= nw.
 *  - The data arrays only grow; pointers handed out by
 *    ubj_bdev_record_write_info stay valid until destroy (chunks are never
 *    moved: each chunk is allocated once).
 *  - The wrapper owns `lower` from a successful create on.
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

#define REC_BS UBJ_BLOCK_SIZE
#define REC_SECTOR 512u
#define REC_CHUNK_BLOCKS 256u          /* data chunks of 1 MiB */
#define REC_BATCH 64u                  /* blocks per copy when rebuilding */

struct rec_write {
    uint64_t blkno;
    uint32_t count;
    bool fua;           /* written with FUA: durable once it completed */
    uint32_t chunk;     /* first chunk of its data */
    uint32_t at;        /* block index inside that chunk */
};

/* A growable store of blocks in fixed chunks (never moved). */
struct rec_store {
    uint8_t **chunks;
    uint32_t nchunks, cap;
    uint32_t used;      /* blocks used in the last chunk */
};

struct rec_bdev {
    struct ubj_bdev base;          /* first: the handle callers hold */
    pthread_mutex_t lock;
    struct rec_write *w;           /* [lock] */
    uint64_t nw, capw;             /* [lock] */
    uint64_t *flush_at;            /* [lock] */
    uint64_t nf, capf;             /* [lock] */
    struct rec_store data;         /* [lock] copies of the writes */
    struct rec_store orig;         /* [lock] original blocks */
    uint64_t *okeys;               /* [lock] blkno + 1 (0 = empty) */
    uint64_t *ovals;               /* [lock] chunk << 32 | index */
    uint64_t omask, on;            /* [lock] */
    uint8_t *scratch;              /* [lock] one block for originals */
};

static const struct ubj_bdev_ops rec_ops;

/* rec_of -- the recorder embedding d, or NULL if d is not one. */
static inline struct rec_bdev *rec_of(const struct ubj_bdev *d)
{
    return d != NULL && d->ops == &rec_ops ? (struct rec_bdev *)d : NULL;
}

/* ---- storage --------------------------------------------------------------- */

/* rec_store_block -- the address of block `at` of chunk `chunk`. */
static inline uint8_t *rec_store_block(const struct rec_store *s, uint32_t chunk,
                                       uint32_t at)
{
    return s->chunks[chunk] + (size_t)at * REC_BS;
}

/* rec_store_put -- append n blocks (contiguous in one chunk when n fits in
 * a chunk, else in a chunk of their own).  0 or -ENOMEM. */
static int rec_store_put(struct rec_store *s, const void *src, uint32_t n,
                         uint32_t *chunk, uint32_t *at)
{
    bool fresh = s->nchunks == 0 || s->used + n > REC_CHUNK_BLOCKS;
    if (fresh) {
        if (s->nchunks == s->cap) {
            uint32_t cap = s->cap ? s->cap * 2 : 16;
            uint8_t **c = realloc(s->chunks, cap * sizeof *c);
            if (c == NULL)
                return -ENOMEM;
            s->chunks = c;
            s->cap = cap;
        }
        uint32_t blocks = n > REC_CHUNK_BLOCKS ? n : REC_CHUNK_BLOCKS;
        uint8_t *mem = malloc((size_t)blocks * REC_BS);
        if (mem == NULL)
            return -ENOMEM;
        s->chunks[s->nchunks++] = mem;
        s->used = 0;
    }
    *chunk = s->nchunks - 1;
    *at = s->used;
    memcpy(rec_store_block(s, *chunk, *at), src, (size_t)n * REC_BS);
    s->used += n;
    if (n > REC_CHUNK_BLOCKS)
        s->used = REC_CHUNK_BLOCKS;   /* an oversized chunk takes nothing more */
    return 0;
}

/* rec_store_free -- release every chunk. */
static void rec_store_free(struct rec_store *s)
{
    for (uint32_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
}

/* ---- originals --------------------------------------------------------------- */

/* rec_orig_slot -- the slot of blkno in the originals table (found or empty). */
static uint64_t rec_orig_slot(const struct rec_bdev *r, uint64_t blkno)
{
    uint64_t i = (blkno * 0x9E3779B97F4A7C15ull >> 17) & r->omask;
    while (r->okeys[i] != 0 && r->okeys[i] != blkno + 1)
        i = (i + 1) & r->omask;
    return i;
}

/* rec_orig_grow -- double the originals table.  0 or -ENOMEM. */
static int rec_orig_grow(struct rec_bdev *r)
{
    uint64_t size = r->omask ? (r->omask + 1) * 2 : 1024;
    uint64_t *k = calloc(size, sizeof *k), *v = malloc(size * sizeof *v);
    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    uint64_t *ok = r->okeys, *ov = r->ovals, old = r->omask ? r->omask + 1 : 0;
    r->okeys = k;
    r->ovals = v;
    r->omask = size - 1;
    for (uint64_t i = 0; i < old; i++) {
        if (ok[i] == 0)
            continue;
        uint64_t s = rec_orig_slot(r, ok[i] - 1);
        k[s] = ok[i];
        v[s] = ov[i];
    }
    free(ok);
    free(ov);
    return 0;
}

/* rec_save_originals -- before the first write of each block of
 * [blkno, +count): read and keep what the lower device holds.  0 or error. */
static int rec_save_originals(struct rec_bdev *r, uint64_t blkno, uint32_t count)
{
    for (uint32_t k = 0; k < count; k++) {
        if ((r->on + 1) * 2 > r->omask + 1 && rec_orig_grow(r) < 0)
            return -ENOMEM;
        uint64_t s = rec_orig_slot(r, blkno + k);
        if (r->okeys[s] != 0)
            continue;
        int rc = ubj_bdev_read(r->base.lower, blkno + k, 1, r->scratch);
        if (rc < 0)
            return rc;
        uint32_t chunk, at;
        if (rec_store_put(&r->orig, r->scratch, 1, &chunk, &at) < 0)
            return -ENOMEM;
        r->okeys[s] = blkno + k + 1;
        r->ovals[s] = (uint64_t)chunk << 32 | at;
        r->on++;
    }
    return 0;
}

/* ---- the device ------------------------------------------------------------- */

/* rec_append -- record a completed write.  0 or -ENOMEM. */
static int rec_append(struct rec_bdev *r, uint64_t blkno, uint32_t count,
                      const void *buf, bool fua)
{
    if (r->nw == r->capw) {
        uint64_t cap = r->capw ? r->capw * 2 : 1024;
        struct rec_write *w = realloc(r->w, cap * sizeof *w);
        if (w == NULL)
            return -ENOMEM;
        r->w = w;
        r->capw = cap;
    }
    struct rec_write *w = &r->w[r->nw];
    if (rec_store_put(&r->data, buf, count, &w->chunk, &w->at) < 0)
        return -ENOMEM;
    w->blkno = blkno;
    w->count = count;
    w->fua = fua;
    r->nw++;
    return 0;
}

/* rec_write_locked -- keep the originals, write through, record. */
static int rec_write_locked(struct rec_bdev *r, struct ubj_req *q)
{
    int rc = rec_save_originals(r, q->blkno, q->count);
    if (rc == 0)
        rc = ubj_bdev_forward(r->base.lower, q);
    if (rc == 0 && rec_append(r, q->blkno, q->count, q->buf, dev_req_fua(q)) < 0)
        rc = ubj_set_error(-ENOMEM, "record bdev: out of memory");
    return rc;
}

/* rec_flush_locked -- flush through; a completed flush is recorded. */
static int rec_flush_locked(struct rec_bdev *r, struct ubj_req *q)
{
    uint64_t issued = r->nw;
    int rc = ubj_bdev_forward(r->base.lower, q);
    if (rc == 0 && r->nf == r->capf) {
        uint64_t cap = r->capf ? r->capf * 2 : 256;
        uint64_t *f = realloc(r->flush_at, cap * sizeof *f);
        if (f == NULL)
            rc = ubj_set_error(-ENOMEM, "record bdev: out of memory");
        else {
            r->flush_at = f;
            r->capf = cap;
        }
    }
    if (rc == 0)
        r->flush_at[r->nf++] = issued;
    return rc;
}

/* rec_submit -- reads pass through; writes and flushes are recorded, in
 * the order the lower device completes them (one at a time). */
static void rec_submit(struct ubj_bdev *d, struct ubj_req *q)
{
    struct rec_bdev *r = rec_of(d);
    int rc;
    if (q->op == UBJ_REQ_READ) {
        rc = ubj_bdev_forward(d->lower, q);
    } else {
        pthread_mutex_lock(&r->lock);
        rc = q->op == UBJ_REQ_WRITE ? rec_write_locked(r, q)
                                    : rec_flush_locked(r, q);
        pthread_mutex_unlock(&r->lock);
    }
    ubj_req_complete(q, rc);
}

/* rec_destroy -- free the record and the lower device. */
static void rec_destroy(struct ubj_bdev *d)
{
    struct rec_bdev *r = rec_of(d);
    ubj_bdev_destroy(d->lower);
    rec_store_free(&r->data);
    rec_store_free(&r->orig);
    free(r->w);
    free(r->flush_at);
    free(r->okeys);
    free(r->ovals);
    free(r->scratch);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static const struct ubj_bdev_ops rec_ops = {
    .version = UBJ_BDEV_OPS_V2,
    .name = "record",
    .destroy = rec_destroy,
    .submit = rec_submit,
};

/* ubj_bdev_record_create -- wrap lower in a recorder. */
int ubj_bdev_record_create(struct ubj_bdev *lower, struct ubj_bdev **out)
{
    if (lower == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "record bdev: NULL argument");
    if (lower->block_size != REC_BS)
        return ubj_set_error(-EINVAL, "record bdev: block size %u, need %u",
                             lower->block_size, REC_BS);
    struct rec_bdev *r = calloc(1, sizeof *r);
    if (r != NULL)
        r->scratch = malloc(REC_BS);
    if (r == NULL || r->scratch == NULL || rec_orig_grow(r) < 0) {
        if (r != NULL) {
            free(r->scratch);
            free(r);
        }
        return ubj_set_error(-ENOMEM, "record bdev: out of memory");
    }
    pthread_mutex_init(&r->lock, NULL);
    dev_wrap_init(&r->base, &rec_ops, lower);
    *out = &r->base;
    return 0;
}

/* ---- queries ------------------------------------------------------------------ */

/* ubj_bdev_record_writes -- writes recorded. */
uint64_t ubj_bdev_record_writes(const struct ubj_bdev *d)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL)
        return 0;
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->nw;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* ubj_bdev_record_flushes -- completed flushes recorded. */
uint64_t ubj_bdev_record_flushes(const struct ubj_bdev *d)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL)
        return 0;
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->nf;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* rec_epoch_locked -- writes of epoch k (k <= nf). */
static void rec_epoch_locked(const struct rec_bdev *r, uint64_t k, uint64_t *first,
                             uint64_t *end)
{
    *first = k == 0 ? 0 : r->flush_at[k - 1];
    *end = k < r->nf ? r->flush_at[k] : r->nw;
}

/* ubj_bdev_record_epoch -- the writes of epoch k. */
int ubj_bdev_record_epoch(const struct ubj_bdev *d, uint64_t k, uint64_t *first,
                          uint64_t *count)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL || first == NULL || count == NULL)
        return ubj_set_error(-EINVAL, "record bdev: not a recording device");
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    if (k > r->nf) {
        rc = ubj_set_error(-EINVAL, "record bdev: epoch %llu of %llu flushes",
                           (unsigned long long)k, (unsigned long long)r->nf);
    } else {
        uint64_t end;
        rec_epoch_locked(r, k, first, &end);
        *count = end - *first;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ubj_bdev_record_write_info -- write i's block, count and data. */
int ubj_bdev_record_write_info(const struct ubj_bdev *d, uint64_t i,
                               uint64_t *blkno, uint32_t *count,
                               const void **data)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL)
        return ubj_set_error(-EINVAL, "record bdev: not a recording device");
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    if (i >= r->nw) {
        rc = ubj_set_error(-EINVAL, "record bdev: write %llu of %llu",
                           (unsigned long long)i, (unsigned long long)r->nw);
    } else {
        const struct rec_write *w = &r->w[i];
        if (blkno)
            *blkno = w->blkno;
        if (count)
            *count = w->count;
        if (data)
            *data = rec_store_block(&r->data, w->chunk, w->at);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ubj_bdev_record_write_fua -- 1 if write i had FUA. */
int ubj_bdev_record_write_fua(const struct ubj_bdev *d, uint64_t i)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL)
        return ubj_set_error(-EINVAL, "record bdev: not a recording device");
    pthread_mutex_lock(&r->lock);
    int rc = i < r->nw ? (int)r->w[i].fua
                       : ubj_set_error(-EINVAL, "record bdev: write %llu of %llu",
                                       (unsigned long long)i,
                                       (unsigned long long)r->nw);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ---- crash images --------------------------------------------------------------- */

/* rec_copy_lower -- copy every block of the lower device onto target. */
static int rec_copy_lower(struct rec_bdev *r, struct ubj_bdev *target, uint8_t *buf)
{
    uint64_t n = r->base.nblocks;
    for (uint64_t b = 0; b < n; b += REC_BATCH) {
        uint32_t c = n - b < REC_BATCH ? (uint32_t)(n - b) : REC_BATCH;
        int rc = ubj_bdev_read(r->base.lower, b, c, buf);
        if (rc == 0)
            rc = ubj_bdev_write(target, b, c, buf);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* rec_put_originals -- write every saved original block onto target. */
static int rec_put_originals(struct rec_bdev *r, struct ubj_bdev *target)
{
    for (uint64_t i = 0; i <= r->omask; i++) {
        if (r->okeys[i] == 0)
            continue;
        const uint8_t *p = rec_store_block(&r->orig, (uint32_t)(r->ovals[i] >> 32),
                                           (uint32_t)r->ovals[i]);
        int rc = ubj_bdev_write(target, r->okeys[i] - 1, 1, p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* rec_sector_kept -- choice c keeps sector s of its write of n sectors. */
static bool rec_sector_kept(const struct ubj_rec_choice *c, uint64_t s, uint64_t n)
{
    if (c->keep == UBJ_REC_PREFIX)
        return s < c->sectors;
    if (c->keep == UBJ_REC_SUFFIX)
        return s + c->sectors >= n;
    uint64_t x = c->seed + (s + 1) * 0x9E3779B97F4A7C15ull;   /* splitmix64 */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return ((x ^ (x >> 31)) & 1u) != 0;
}

/* rec_apply -- put write i onto target as choice c says (NULL: whole). */
static int rec_apply(struct rec_bdev *r, uint64_t i, const struct ubj_rec_choice *c,
                     struct ubj_bdev *target, uint8_t *buf)
{
    const struct rec_write *w = &r->w[i];
    const uint8_t *src = rec_store_block(&r->data, w->chunk, w->at);
    if (c == NULL || c->keep == UBJ_REC_WHOLE)
        return ubj_bdev_write(target, w->blkno, w->count, src);
    if (c->keep != UBJ_REC_PREFIX && c->keep != UBJ_REC_SECTORS &&
        c->keep != UBJ_REC_SUFFIX)
        return 0;   /* dropped */
    const uint32_t per = REC_BS / REC_SECTOR;
    for (uint32_t k = 0; k < w->count; k++) {
        int rc = ubj_bdev_read(target, w->blkno + k, 1, buf);
        if (rc < 0)
            return rc;
        bool any = false;
        for (uint32_t s = 0; s < per; s++) {
            if (!rec_sector_kept(c, (uint64_t)k * per + s, (uint64_t)w->count * per))
                continue;
            memcpy(buf + s * REC_SECTOR, src + (size_t)k * REC_BS + s * REC_SECTOR,
                   REC_SECTOR);
            any = true;
        }
        if (any && (rc = ubj_bdev_write(target, w->blkno + k, 1, buf)) < 0)
            return rc;
    }
    return 0;
}

/* rec_last_kept -- one past the last write of [first, end) that `choice`
 * keeps any part of (first if none): a power cut after it completed, so
 * every FUA write before it is durable. */
static uint64_t rec_last_kept(uint64_t first, uint64_t end,
                              const struct ubj_rec_choice *choice, uint64_t nchoice)
{
    uint64_t kept = first;
    for (uint64_t i = first; choice != NULL && i < end && i - first < nchoice; i++)
        if (choice[i - first].keep != UBJ_REC_DROP &&
            !((choice[i - first].keep == UBJ_REC_PREFIX ||
               choice[i - first].keep == UBJ_REC_SUFFIX) &&
              choice[i - first].sectors == 0))
            kept = i + 1;
    return kept;
}

/* ubj_bdev_record_crash -- the image a power cut during epoch k leaves. */
int ubj_bdev_record_crash(struct ubj_bdev *d, uint64_t k,
                          const struct ubj_rec_choice *choice, uint64_t nchoice,
                          struct ubj_bdev *target)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL || target == NULL || target->nblocks < d->nblocks ||
        target->block_size != REC_BS)
        return ubj_set_error(-EINVAL, "record crash: bad device or target");
    uint8_t *buf = malloc((size_t)REC_BATCH * REC_BS);
    if (buf == NULL)
        return ubj_set_error(-ENOMEM, "record crash: out of memory");
    pthread_mutex_lock(&r->lock);
    int rc = 0;
    if (k > r->nf)
        rc = ubj_set_error(-EINVAL, "record crash: epoch %llu of %llu flushes",
                           (unsigned long long)k, (unsigned long long)r->nf);
    uint64_t first = 0, end = 0;
    if (rc == 0) {
        rec_epoch_locked(r, k, &first, &end);
        rc = rec_copy_lower(r, target, buf);
    }
    if (rc == 0)
        rc = rec_put_originals(r, target);
    for (uint64_t i = 0; rc == 0 && i < first; i++)
        rc = rec_apply(r, i, NULL, target, buf);
    uint64_t kept = rec_last_kept(first, end, choice, nchoice);
    for (uint64_t i = first; rc == 0 && i < end && i - first < nchoice && choice; i++)
        rc = rec_apply(r, i, r->w[i].fua && i < kept ? NULL : &choice[i - first],
                       target, buf);
    pthread_mutex_unlock(&r->lock);
    free(buf);
    return rc;
}
