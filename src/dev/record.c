/*
 * record.c -- the write-recording wrapper (ubj_bdev_record_create): passes
 * every request to the device it wraps and remembers what a power cut
 * could have left on the medium, so crash tests (tests/journal, the crash
 * explorer) can build the image of a power loss at any point afterwards.
 *
 * What is recorded [lock]:
 *   w[0..nw)       every write that completed, in the order of completion
 *                  at this wrapper: first block, count, FUA, the offset of
 *                  a copy of its data in `data`, and its two events --
 *                  submission and completion -- as keys (see below)
 *   flush_at[k-1]  for the k-th completed flush: how many writes had
 *                  completed when it was submitted (they are durable once
 *                  it is done)
 *   orig           for each block written at least once: its contents
 *                  before the first recorded write (a hash table of block
 *                  number -> offset in `orig`), so the image at creation
 *                  is "lower now, with the original blocks put back"
 *
 * Two persistence models read the same record (include/ubjfs/bdev.h):
 *   volatile cache  (ubj_bdev_record_crash): epochs between completed
 *                   flushes; any subset of an epoch's writes, a FUA write
 *                   durable on completion;
 *   write-through   (ubj_bdev_record_cut, _crash_cut): a write durable on
 *                   completion; at a cut, any subset of the writes in
 *                   flight.  The cuts come from the events' order.
 *
 * Event keys.  Each write has a submission key and a completion key, each
 * (time, seq): seq numbers every event as this wrapper saw it (submit
 * entered, lower device done); time is the modeled time when a timed
 * model below completed the request (t_dispatch, t_complete: a queue's
 * virtual clock dispatches several requests into one model at once, and
 * they are in flight together in modeled time although the model served
 * each inside submit); untimed events have no time.  Persistence order:
 * timed events by time, a completion before a submission at the same
 * time (the queue's own rule: what completes at t may release what is
 * dispatched at t); then, and untimed events always, by seq.
 *
 * Invariants:
 *  - The lock is held only around the record's own data (and the reads
 *    that save originals), never across the lower device's write or
 *    flush: writes may be in flight at the lower device together.  Two
 *    writes of one block in flight at once (no queue above to order
 *    them) are recorded in the order they completed here, which need not
 *    be the order the lower device applied them: a caller's race.
 *  - For every write: its submission key precedes its completion key.
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

/* An event's place in persistence order (the file's comment). */
struct rec_key {
    uint64_t t;         /* modeled time (timed) */
    uint64_t seq;       /* the wrapper's event number */
    bool timed;         /* a timed model below timed the request */
};

struct rec_write {
    uint64_t blkno;
    uint32_t count;
    bool fua;           /* written with FUA: durable once it completed */
    uint32_t chunk;     /* first chunk of its data */
    uint32_t at;        /* block index inside that chunk */
    struct rec_key sub, comp;   /* submitted, completed */
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
    uint64_t seq;                  /* [lock] events numbered so far */
    uint64_t *corder;              /* [lock] write indices by completion in
                                      persistence order (rec_corder_locked) */
    uint64_t ncorder;              /* [lock] writes corder sorts (nw when valid) */
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

/* rec_append -- record completed write q, submitted at key `sub`.
 * 0 or -ENOMEM. */
static int rec_append(struct rec_bdev *r, const struct ubj_req *q, struct rec_key sub)
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
    if (rec_store_put(&r->data, q->buf, q->count, &w->chunk, &w->at) < 0)
        return -ENOMEM;
    bool timed = (q->dev_flags_ & DEVF_TIMED) != 0;
    w->blkno = q->blkno;
    w->count = q->count;
    w->fua = dev_req_fua(q);
    w->sub = (struct rec_key){ timed ? q->t_dispatch : 0, sub.seq, timed };
    w->comp = (struct rec_key){ timed ? q->t_complete : 0, ++r->seq, timed };
    r->nw++;
    return 0;
}

/* rec_write -- keep the originals, note the submission, write through
 * (without the lock), record the completion. */
static int rec_write(struct rec_bdev *r, struct ubj_req *q)
{
    pthread_mutex_lock(&r->lock);
    int rc = rec_save_originals(r, q->blkno, q->count);
    struct rec_key sub = { 0, ++r->seq, false };
    pthread_mutex_unlock(&r->lock);
    if (rc == 0)
        rc = ubj_bdev_forward(r->base.lower, q);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&r->lock);
    if (rec_append(r, q, sub) < 0)
        rc = ubj_set_error(-ENOMEM, "record bdev: out of memory");
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* rec_flush -- flush through (without the lock); a completed flush is
 * recorded as covering the writes completed when it was submitted. */
static int rec_flush(struct rec_bdev *r, struct ubj_req *q)
{
    pthread_mutex_lock(&r->lock);
    uint64_t issued = r->nw;
    pthread_mutex_unlock(&r->lock);
    int rc = ubj_bdev_forward(r->base.lower, q);
    pthread_mutex_lock(&r->lock);
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
    if (rc == 0) {
        /* flushes may complete out of order: the record keeps flush_at
         * non-decreasing (a later-submitted flush covers no fewer) */
        if (r->nf > 0 && issued < r->flush_at[r->nf - 1])
            issued = r->flush_at[r->nf - 1];
        r->flush_at[r->nf++] = issued;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* rec_submit -- reads pass through; writes and flushes are recorded as
 * they complete, the lower device serving several at once if asked. */
static void rec_submit(struct ubj_bdev *d, struct ubj_req *q)
{
    struct rec_bdev *r = rec_of(d);
    int rc = q->op == UBJ_REQ_READ ? ubj_bdev_forward(d->lower, q)
           : q->op == UBJ_REQ_WRITE ? rec_write(r, q) : rec_flush(r, q);
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
    free(r->corder);
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

typedef int (*rec_image_fn)(struct rec_bdev *r, uint64_t k,
                            const struct ubj_rec_choice *choice, uint64_t nchoice,
                            struct ubj_bdev *target, uint8_t *buf);

/* rec_image -- check the arguments, then build with `fn` under the lock
 * (with a scratch buffer of REC_BATCH blocks). */
static int rec_image(struct ubj_bdev *d, uint64_t k, const struct ubj_rec_choice *choice,
                     uint64_t nchoice, struct ubj_bdev *target, rec_image_fn fn)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL || target == NULL || target->nblocks < d->nblocks ||
        target->block_size != REC_BS)
        return ubj_set_error(-EINVAL, "record crash: bad device or target");
    uint8_t *buf = malloc((size_t)REC_BATCH * REC_BS);
    if (buf == NULL)
        return ubj_set_error(-ENOMEM, "record crash: out of memory");
    pthread_mutex_lock(&r->lock);
    int rc = fn(r, k, choice, nchoice, target, buf);
    pthread_mutex_unlock(&r->lock);
    free(buf);
    return rc;
}

/* rec_image_base -- the image at creation onto target. */
static int rec_image_base(struct rec_bdev *r, struct ubj_bdev *target, uint8_t *buf)
{
    int rc = rec_copy_lower(r, target, buf);
    return rc == 0 ? rec_put_originals(r, target) : rc;
}

/* rec_crash_epoch_locked -- epoch k's image onto target (lock held). */
static int rec_crash_epoch_locked(struct rec_bdev *r, uint64_t k,
                                  const struct ubj_rec_choice *choice, uint64_t nchoice,
                                  struct ubj_bdev *target, uint8_t *buf)
{
    if (k > r->nf)
        return ubj_set_error(-EINVAL, "record crash: epoch %llu of %llu flushes",
                             (unsigned long long)k, (unsigned long long)r->nf);
    uint64_t first, end;
    rec_epoch_locked(r, k, &first, &end);
    int rc = rec_image_base(r, target, buf);
    for (uint64_t i = 0; rc == 0 && i < first; i++)
        rc = rec_apply(r, i, NULL, target, buf);
    uint64_t kept = rec_last_kept(first, end, choice, nchoice);
    for (uint64_t i = first; rc == 0 && i < end && i - first < nchoice && choice; i++)
        rc = rec_apply(r, i, r->w[i].fua && i < kept ? NULL : &choice[i - first],
                       target, buf);
    return rc;
}

/* ubj_bdev_record_crash -- the image a power cut during epoch k leaves. */
int ubj_bdev_record_crash(struct ubj_bdev *d, uint64_t k,
                          const struct ubj_rec_choice *choice, uint64_t nchoice,
                          struct ubj_bdev *target)
{
    return rec_image(d, k, choice, nchoice, target, rec_crash_epoch_locked);
}

/* ---- write-through cuts ---------------------------------------------------------- */

/* rec_before -- event a (a completion if ac) precedes b in persistence
 * order: timed events by time, completions first at one time; then (and
 * untimed ones) by seq. */
static bool rec_before(struct rec_key a, bool ac, struct rec_key b, bool bc)
{
    if (a.timed && b.timed && a.t != b.t)
        return a.t < b.t;
    if (a.timed && b.timed && ac != bc)
        return ac;
    return a.seq < b.seq;
}

/* rec_comp_before -- write i completed before write j. */
static bool rec_comp_before(const struct rec_bdev *r, uint64_t i, uint64_t j)
{
    return rec_before(r->w[i].comp, true, r->w[j].comp, true);
}

/* rec_corder_locked -- r->corder sorted for the current record (a stable
 * merge sort, kept until more writes are recorded).  0 or -ENOMEM. */
static int rec_corder_locked(struct rec_bdev *r)
{
    if (r->corder != NULL && r->ncorder == r->nw)
        return 0;
    uint64_t n = r->nw, *a = malloc((n ? n : 1) * sizeof *a),
             *t = malloc((n ? n : 1) * sizeof *t);
    if (a == NULL || t == NULL) {
        free(a);
        free(t);
        return ubj_set_error(-ENOMEM, "record cut: out of memory");
    }
    for (uint64_t i = 0; i < n; i++)
        a[i] = i;
    for (uint64_t w = 1; w < n; w *= 2) {
        for (uint64_t lo = 0; lo < n; lo += 2 * w) {
            uint64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            uint64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                t[o++] = rec_comp_before(r, a[j], a[i]) ? a[j++] : a[i++];
            while (i < mid)
                t[o++] = a[i++];
            while (j < hi)
                t[o++] = a[j++];
        }
        uint64_t *x = a;
        a = t;
        t = x;
    }
    free(t);
    free(r->corder);
    r->corder = a;
    r->ncorder = n;
    return 0;
}

/* rec_inflight_locked -- the writes in flight at cut k (k < nw: just
 * before the k-th completion; k == nw: none) into out[0..max), by
 * submission; *n = how many there are (may exceed max). */
static void rec_inflight_locked(const struct rec_bdev *r, uint64_t k, uint64_t *out,
                                uint64_t max, uint64_t *n)
{
    *n = 0;
    if (k >= r->nw)
        return;
    const struct rec_key at = r->w[r->corder[k]].comp;
    for (uint64_t j = k; j < r->nw; j++) {    /* not durable at the cut ... */
        uint64_t i = r->corder[j];
        if (!rec_before(r->w[i].sub, false, at, true))
            continue;                         /* ... and submitted before it */
        uint64_t p = *n < max ? *n : max;     /* insert by submission */
        while (p > 0 && rec_before(r->w[i].sub, false, r->w[out[p - 1]].sub, false)) {
            if (p < max)
                out[p] = out[p - 1];
            p--;
        }
        if (p < max)
            out[p] = i;
        (*n)++;
    }
}

/* ubj_bdev_record_cut -- the durable count and in-flight writes of cut k. */
int ubj_bdev_record_cut(struct ubj_bdev *d, uint64_t k, uint64_t *inflight,
                        uint64_t max, uint64_t *n)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL || n == NULL || (max > 0 && inflight == NULL))
        return ubj_set_error(-EINVAL, "record cut: not a recording device");
    pthread_mutex_lock(&r->lock);
    int rc = k > r->nw ? ubj_set_error(-EINVAL, "record cut: cut %llu of %llu writes",
                                       (unsigned long long)k, (unsigned long long)r->nw)
                       : rec_corder_locked(r);
    if (rc == 0)
        rec_inflight_locked(r, k, inflight, max, n);
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* ubj_bdev_record_durable -- the j-th write to complete (j < writes). */
int64_t ubj_bdev_record_durable(struct ubj_bdev *d, uint64_t j)
{
    struct rec_bdev *r = rec_of(d);
    if (r == NULL)
        return ubj_set_error(-EINVAL, "record cut: not a recording device");
    pthread_mutex_lock(&r->lock);
    int64_t rc = j >= r->nw ? ubj_set_error(-EINVAL, "record cut: completion %llu of %llu",
                                            (unsigned long long)j,
                                            (unsigned long long)r->nw)
                            : rec_corder_locked(r);
    if (rc == 0)
        rc = (int64_t)r->corder[j];
    pthread_mutex_unlock(&r->lock);
    return rc;
}

/* rec_crash_cut_locked -- cut k's image onto target (lock held). */
static int rec_crash_cut_locked(struct rec_bdev *r, uint64_t k,
                                const struct ubj_rec_choice *choice, uint64_t nchoice,
                                struct ubj_bdev *target, uint8_t *buf)
{
    int rc = k > r->nw ? ubj_set_error(-EINVAL, "record cut: cut %llu of %llu writes",
                                       (unsigned long long)k, (unsigned long long)r->nw)
                       : rec_corder_locked(r);
    uint64_t nin = 0, *in = NULL;
    if (rc == 0)
        rec_inflight_locked(r, k, NULL, 0, &nin);
    if (rc == 0 && nin > 0 && (in = malloc(nin * sizeof *in)) == NULL)
        rc = ubj_set_error(-ENOMEM, "record cut: out of memory");
    if (rc == 0)
        rec_inflight_locked(r, k, in, nin, &nin);
    if (rc == 0)
        rc = rec_image_base(r, target, buf);
    for (uint64_t j = 0; rc == 0 && j < k; j++)
        rc = rec_apply(r, r->corder[j], NULL, target, buf);
    for (uint64_t j = 0; rc == 0 && choice != NULL && j < nin && j < nchoice; j++)
        rc = rec_apply(r, in[j], &choice[j], target, buf);
    free(in);
    return rc;
}

/* ubj_bdev_record_crash_cut -- the image a power cut at cut k leaves
 * under the write-through model. */
int ubj_bdev_record_crash_cut(struct ubj_bdev *d, uint64_t k,
                              const struct ubj_rec_choice *choice, uint64_t nchoice,
                              struct ubj_bdev *target)
{
    return rec_image(d, k, choice, nchoice, target, rec_crash_cut_locked);
}
