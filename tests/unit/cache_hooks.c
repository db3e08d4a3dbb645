/*
 * tests/unit/cache_hooks.c -- the cache's write hooks and stable snapshots
 * (src/cache/cache.c, invariants 13-15; docs/DESIGN.md, "Cache write
 * hooks"):
 *  - every write goes from a snapshot: the live buffer is byte-identical
 *    before and after write-back, eviction and write_home, and the device
 *    gets the sealed snapshot;
 *  - a rolled-back snapshot is what is written, its checksum matches it,
 *    and the buffer stays DIRTY;
 *  - DEFER is honoured by write-back (runs still coalesce around it) and by
 *    CLOCK; UBJ_WRITE_MUST comes when the cache would otherwise fail;
 *    write_done is called once per write with its rc and rolled_back;
 *  - progress: a 16-buffer cache full of buffers whose writes depend on
 *    each other in a ring (none may go first unrolled) serves many misses
 *    without -ENOBUFS, and a checking device proves no block ever reached
 *    it before what it depends on;
 *  - two threads evicting and writing home on one cache: every block on
 *    the device is a whole, self-consistent version (no shared bounce).
 *
 * Device blocks are "records": [0,8) block number, [8,12) checksum (the
 * seal's), [12,16) zero, [16,24) version P, [24,32) the version D of the
 * block it depends on, then bytes that are a function of (block, P).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <cmocka.h>
#include "ubjfs/bdev.h"
#include "cache/cache.h"

#define BS 4096u
#define NBUFS 16u
#define DEVBLOCKS 1024u

/* ---- records ------------------------------------------------------------- */

/* rec_sum -- the checksum of a record: FNV-1a over all but [8,12). */
static uint32_t rec_sum(const uint8_t *p)
{
    uint32_t h = 2166136261u;
    for (uint32_t i = 0; i < BS; i++)
        if (i < 8 || i >= 12)
            h = (h ^ p[i]) * 16777619u;
    return h;
}

/* rec_fill -- block blk at version P, depending on version D of another. */
static void rec_fill(uint8_t *p, uint64_t blk, uint64_t P, uint64_t D)
{
    memset(p, 0, 32);
    memcpy(p, &blk, 8);
    memcpy(p + 16, &P, 8);
    memcpy(p + 24, &D, 8);
    for (uint32_t i = 32; i < BS; i++)
        p[i] = (uint8_t)(blk * 31 + P * 7 + i);
}

static uint64_t rec_get(const uint8_t *p, unsigned off)
{
    uint64_t v;
    memcpy(&v, p + off, 8);
    return v;
}
#define REC_BLK(p) rec_get((p), 0)
#define REC_P(p) rec_get((p), 16)
#define REC_D(p) rec_get((p), 24)

/* rec_whole -- p is record `blk` at its own P, whatever its D and sum. */
static bool rec_whole(const uint8_t *p, uint64_t blk)
{
    uint8_t want[BS];
    rec_fill(want, blk, REC_P(p), REC_D(p));
    return memcmp(p + 32, want + 32, BS - 32) == 0 && REC_BLK(p) == blk;
}

/* cb_seal -- the seal: the checksum of what is written, at [8,12). */
static void cb_seal(void *ctx, uint64_t blkno, void *data)
{
    (void)ctx, (void)blkno;
    uint32_t s = rec_sum(data);
    memcpy((uint8_t *)data + 8, &s, 4);
}

/* rec_sealed -- the record's checksum matches its bytes. */
static bool rec_sealed(const uint8_t *p)
{
    uint32_t s;
    memcpy(&s, p + 8, 4);
    return s == rec_sum(p);
}

/* ---- a checking device: logs writes, checks each against a rule ---------- */

struct chk_bdev {
    struct ubj_bdev base;
    pthread_mutex_t lock;
    /* called with lock held on each write block, before it is stored;
     * returns false for a violation */
    bool (*check)(struct chk_bdev *d, uint64_t blkno, const uint8_t *data);
    void *ctx;
    uint32_t nlog;
    struct chk_log { uint64_t blkno; uint32_t count; } log[256];
    unsigned violations;   /* [lock] */
    uint64_t blocks;       /* [lock] blocks written */
};

/* chk_read -- forward. */
static int chk_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    return ubj_bdev_read(d->lower, blkno, count, buf);
}

/* chk_write -- log, check each block, forward. */
static int chk_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                     const void *buf)
{
    struct chk_bdev *c = (struct chk_bdev *)d;
    pthread_mutex_lock(&c->lock);
    if (c->nlog < 256)
        c->log[c->nlog++] = (struct chk_log){ blkno, count };
    for (uint32_t k = 0; k < count; k++) {
        const uint8_t *p = (const uint8_t *)buf + (size_t)k * BS;
        if (c->check != NULL && !c->check(c, blkno + k, p))
            c->violations++;
        c->blocks++;
    }
    int rc = ubj_bdev_write(d->lower, blkno, count, buf);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* chk_flush -- forward. */
static int chk_flush(struct ubj_bdev *d)
{
    return ubj_bdev_flush(d->lower);
}

/* chk_destroy -- free the wrapper and what it wraps. */
static void chk_destroy(struct ubj_bdev *d)
{
    struct chk_bdev *c = (struct chk_bdev *)d;
    ubj_bdev_destroy(d->lower);
    pthread_mutex_destroy(&c->lock);
    free(d);
}

static const struct ubj_bdev_ops chk_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "chk",
    .read = chk_read, .write = chk_write, .flush = chk_flush,
    .destroy = chk_destroy,
};

/* chk_create -- a checking device over `lower` (RAM when NULL), whose
 * blocks [0, DEVBLOCKS) hold record version 0. */
static struct chk_bdev *chk_create(struct ubj_bdev *lower)
{
    if (lower == NULL)
        assert_int_equal(ubj_bdev_ram_create(DEVBLOCKS, &lower), 0);
    uint8_t buf[BS];
    for (uint64_t b = 0; b < DEVBLOCKS; b++) {
        rec_fill(buf, b, 0, 0);
        cb_seal(NULL, b, buf);
        assert_int_equal(ubj_bdev_write(lower, b, 1, buf), 0);
    }
    struct chk_bdev *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->base = (struct ubj_bdev){ .ops = &chk_ops, .block_size = BS,
                                 .nblocks = DEVBLOCKS, .lower = lower };
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

/* dev_rec -- device block blk, read below the checker. */
static void dev_rec(struct chk_bdev *d, uint64_t blk, uint8_t *out)
{
    assert_int_equal(ubj_bdev_read(d->base.lower, blk, 1, out), 0);
}

/* ---- hooks under test ---------------------------------------------------- */

#define MAXW 512

/* What the hooks saw and what they are told to do. */
struct hk {
    struct ubj_cache *c;
    struct chk_bdev *d;
    pthread_mutex_t lock;
    /* policy */
    uint64_t defer_lo, defer_hi;   /* blocks [lo, hi) deferred unless MUST */
    bool defer_all_meta;
    uint64_t roll_lo, roll_hi;     /* blocks [lo, hi) rolled back: bytes
                                      [100, 200) of the snapshot := 0xEE */
    bool must_as_is;               /* under MUST, write deferred ones as is */
    /* observations [lock] */
    unsigned begins, dones, musts, defers, rolls;
    struct hk_done { uint64_t blkno; int rc; bool rb; } done[MAXW];
    bool live_changed;             /* write_begin saw live != snap */
};

/* hk_in -- blkno in [lo, hi). */
static bool hk_in(uint64_t blkno, uint64_t lo, uint64_t hi)
{
    return blkno >= lo && blkno < hi;
}

/* hk_begin -- defer or roll back as the policy says. */
static int hk_begin(void *ctx, struct ubj_buf *b, uint64_t blkno,
                    const void *live, void *snap, unsigned flags)
{
    struct hk *h = ctx;
    pthread_mutex_lock(&h->lock);
    h->begins++;
    h->musts += (flags & UBJ_WRITE_MUST) != 0;
    h->live_changed |= memcmp(live, snap, BS) != 0 || live != b->data;
    int v = UBJ_WRITE_AS_IS;
    bool defer = hk_in(blkno, h->defer_lo, h->defer_hi) ||
                 (h->defer_all_meta && b->d->kind == UBJ_KIND_META);
    if (defer && !(flags & UBJ_WRITE_MUST)) {
        v = UBJ_WRITE_DEFER;
        h->defers++;
    } else if (hk_in(blkno, h->roll_lo, h->roll_hi) || (defer && !h->must_as_is)) {
        memset((uint8_t *)snap + 100, 0xEE, 100);
        v = UBJ_WRITE_ROLLED_BACK;
        h->rolls++;
    }
    pthread_mutex_unlock(&h->lock);
    return v;
}

/* hk_done -- log the completion. */
static void hk_done(void *ctx, struct ubj_buf *b, uint64_t blkno, int rc,
                    bool rolled_back)
{
    struct hk *h = ctx;
    (void)b;
    pthread_mutex_lock(&h->lock);
    if (h->dones < MAXW)
        h->done[h->dones] = (struct hk_done){ blkno, rc, rolled_back };
    h->dones++;
    pthread_mutex_unlock(&h->lock);
}

static const struct ubj_cache_hooks hk_hooks = {
    .write_begin = hk_begin, .write_done = hk_done,
};

/* hk_open -- a NBUFS cache over d with the test hooks. */
static struct hk *hk_open(struct chk_bdev *d)
{
    struct hk *h = calloc(1, sizeof *h);
    assert_non_null(h);
    h->d = d;
    pthread_mutex_init(&h->lock, NULL);
    struct ubj_cache_config cfg = { .nbufs = NBUFS, .seal = cb_seal };
    assert_int_equal(ubj_cache_create(&d->base, &cfg, &h->c), 0);
    ubj_cache_set_hooks(h->c, &hk_hooks, h);
    return h;
}

/* hk_close -- destroy cache, device and state. */
static void hk_close(struct hk *h)
{
    ubj_cache_destroy(h->c);
    ubj_bdev_destroy(&h->d->base);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* get_ok -- ubj_cache_get that must succeed. */
static struct ubj_buf *get_ok(struct ubj_cache *c, uint64_t blk)
{
    struct ubj_buf *b = NULL;
    int rc = ubj_cache_get(c, blk, 0, &b);
    if (rc != 0)
        fail_msg("get %llu: %d", (unsigned long long)blk, rc);
    return b;
}

/* dirty_rec -- get blk, make it record (P, D) of kind, dirty, put. */
static void dirty_rec(struct ubj_cache *c, uint64_t blk, uint64_t P, uint64_t D,
                      enum ubj_buf_kind kind)
{
    struct ubj_buf *b = get_ok(c, blk);
    rec_fill(b->data, blk, P, D);   /* checksum field left stale: zero */
    ubj_cache_mark_dirty(c, b, kind, 1);
    ubj_cache_put(c, b);
}

/* stats -- the cache's counters. */
static struct ubj_cache_stats stats(struct ubj_cache *c)
{
    struct ubj_cache_stats s;
    ubj_cache_stats_get(c, &s);
    return s;
}

/* ---- snapshots ----------------------------------------------------------- */

/* write-back, eviction and write_home all write a sealed snapshot and
 * leave the live buffer byte-identical (the old cache sealed the live
 * buffer in place: its checksum field changed). */
static void test_live_untouched(void **state)
{
    (void)state;
    struct hk *h = hk_open(chk_create(NULL));
    uint8_t before[BS], dev[BS];
    for (int path = 0; path < 3; path++) {
        uint64_t blk = 10 + (uint64_t)path;
        dirty_rec(h->c, blk, 5, 0, UBJ_KIND_META);
        struct ubj_buf *b = get_ok(h->c, blk);
        memcpy(before, b->data, BS);
        if (path == 0) {
            ubj_cache_put(h->c, b);
            assert_int_equal(ubj_cache_writeback(h->c, 0), 0);
        } else if (path == 1) {
            assert_int_equal(ubj_cache_write_home(h->c, b), 0);
            ubj_cache_put(h->c, b);
        } else {
            ubj_cache_put(h->c, b);
            for (uint64_t k = 0; k < 2 * NBUFS; k++)   /* evict it */
                ubj_cache_put(h->c, get_ok(h->c, 500 + k));
            assert_int_equal(stats(h->c).dirty, 0);
            b = get_ok(h->c, blk);   /* read back: the device's bytes */
            ubj_cache_clear_flags(h->c, b, UBJ_BUF_VERIFY);
            ubj_cache_put(h->c, b);
            continue;
        }
        assert_memory_equal(b->data, before, BS);       /* live untouched */
        assert_true(b->flags & UBJ_BUF_SEAL);           /* still stale */
        assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
        dev_rec(h->d, blk, dev);
        assert_true(rec_sealed(dev));                   /* sealed snapshot */
        assert_false(rec_sealed(b->data));
        assert_memory_equal(dev + 12, before + 12, BS - 12);
    }
    dev_rec(h->d, 12, dev);   /* the evicted one */
    assert_true(rec_sealed(dev) && rec_whole(dev, 12) && REC_P(dev) == 5);
    assert_false(h->live_changed);
    hk_close(h);
}

/* a rolled-back snapshot is what the device gets, sealed over the bytes
 * written; the live buffer keeps its update and stays DIRTY; the next
 * write (no rollback) makes it CLEAN.  A metadata buffer whose mark was
 * cleared (ubj_cache_seal) is still sealed when rolled back. */
static void test_rollback_sealed(void **state)
{
    (void)state;
    struct hk *h = hk_open(chk_create(NULL));
    h->roll_lo = 20, h->roll_hi = 22;
    dirty_rec(h->c, 20, 3, 0, UBJ_KIND_META);
    dirty_rec(h->c, 21, 3, 0, UBJ_KIND_META);
    struct ubj_buf *b21 = get_ok(h->c, 21);
    ubj_cache_seal(h->c, b21);                 /* live sealed, mark gone */
    assert_false(b21->flags & UBJ_BUF_SEAL);
    assert_true(rec_sealed(b21->data));
    ubj_cache_put(h->c, b21);

    assert_int_equal(ubj_cache_writeback(h->c, 0), 0);
    uint8_t dev[BS], want[BS];
    for (uint64_t blk = 20; blk < 22; blk++) {
        dev_rec(h->d, blk, dev);
        rec_fill(want, blk, 3, 0);
        memset(want + 100, 0xEE, 100);
        assert_memory_equal(dev + 12, want + 12, BS - 12);   /* rolled back */
        assert_true(rec_sealed(dev));          /* checksum of what is there */
        struct ubj_buf *b = get_ok(h->c, blk);
        assert_int_equal(b->d->state, UBJ_BUF_DIRTY);        /* not home */
        rec_fill(want, blk, 3, 0);
        assert_memory_equal(b->data + 100, want + 100, 100); /* live: update */
        ubj_cache_put(h->c, b);
    }
    assert_int_equal(h->dones, 2);
    assert_true(h->done[0].rb && h->done[1].rb);
    assert_int_equal(h->done[0].rc, 0);
    assert_int_equal(stats(h->c).write_rolled_back, 2);
    assert_int_equal(stats(h->c).dirty, 2);

    h->roll_hi = 0;   /* dependencies satisfied: written as they are */
    assert_int_equal(ubj_cache_writeback(h->c, 0), 0);
    assert_int_equal(stats(h->c).dirty, 0);
    for (uint64_t blk = 20; blk < 22; blk++) {
        dev_rec(h->d, blk, dev);
        assert_true(rec_sealed(dev) && rec_whole(dev, blk));
    }
    assert_int_equal(h->dones, 4);
    assert_false(h->done[2].rb || h->done[3].rb);
    hk_close(h);
}

/* ---- deferral ------------------------------------------------------------ */

/* write-back leaves a deferred buffer DIRTY and unwritten (no write_done)
 * and still coalesces the runs around it; UBJ_WB_MUST writes it. */
static void test_defer_writeback(void **state)
{
    (void)state;
    struct hk *h = hk_open(chk_create(NULL));
    for (uint64_t blk = 3; blk < 8; blk++)
        dirty_rec(h->c, blk, 1, 0, UBJ_KIND_DATA);
    h->defer_lo = 5, h->defer_hi = 6;
    h->must_as_is = true;
    h->d->nlog = 0;
    assert_int_equal(ubj_cache_writeback(h->c, 0), 0);
    assert_int_equal(h->d->nlog, 2);
    assert_int_equal(h->d->log[0].blkno, 3);
    assert_int_equal(h->d->log[0].count, 2);
    assert_int_equal(h->d->log[1].blkno, 6);
    assert_int_equal(h->d->log[1].count, 2);
    assert_int_equal(stats(h->c).dirty, 1);
    assert_int_equal(stats(h->c).write_deferred, 1);
    assert_int_equal(h->dones, 4);
    for (unsigned k = 0; k < h->dones; k++)
        assert_true(h->done[k].blkno != 5 && h->done[k].rc == 0);
    uint8_t dev[BS];
    dev_rec(h->d, 5, dev);
    assert_int_equal(REC_P(dev), 0);             /* never written */
    struct ubj_buf *b = get_ok(h->c, 5);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    ubj_cache_put(h->c, b);

    assert_int_equal(ubj_cache_writeback(h->c, 0), 0);   /* again deferred */
    assert_int_equal(stats(h->c).dirty, 1);
    unsigned musts = h->musts;
    assert_int_equal(ubj_cache_writeback(h->c, UBJ_WB_MUST), 0);
    assert_int_equal(h->musts, musts + 1);
    assert_int_equal(stats(h->c).dirty, 0);
    dev_rec(h->d, 5, dev);
    assert_int_equal(REC_P(dev), 1);
    assert_int_equal(h->done[h->dones - 1].blkno, 5);
    assert_int_equal(h->d->violations, 0);
    hk_close(h);
}

/* CLOCK passes deferred buffers and evicts others; when only deferred ones
 * are left it asks them with MUST instead of failing -- and write_home
 * always asks with MUST. */
static void test_defer_clock(void **state)
{
    (void)state;
    struct hk *h = hk_open(chk_create(NULL));
    for (uint64_t blk = 0; blk < NBUFS; blk++)
        dirty_rec(h->c, blk, 1, 0, UBJ_KIND_DATA);
    h->defer_lo = 0, h->defer_hi = NBUFS / 2;   /* the first half */
    h->must_as_is = true;
    for (uint64_t k = 0; k < NBUFS / 2; k++)    /* room for these: the rest */
        ubj_cache_put(h->c, get_ok(h->c, 300 + k));
    struct ubj_cache_stats s = stats(h->c);
    assert_int_equal(s.dirty, NBUFS / 2);
    assert_int_equal(s.must_sweeps, 0);
    assert_true(s.write_deferred >= NBUFS / 2);
    assert_int_equal(h->musts, 0);
    uint8_t dev[BS];
    for (uint64_t blk = 0; blk < NBUFS; blk++) {
        dev_rec(h->d, blk, dev);
        assert_int_equal(REC_P(dev), blk < NBUFS / 2 ? 0u : 1u);
    }
    /* the clean ones held: every candidate left defers -- MUST, not -ENOBUFS */
    struct ubj_buf *held[NBUFS];
    for (uint64_t k = 0; k < NBUFS; k++)
        held[k] = get_ok(h->c, 300 + k);   /* 8 hits, then 8 misses */
    s = stats(h->c);
    assert_int_equal(s.must_sweeps, NBUFS / 2);   /* one per miss */
    assert_int_equal(h->musts, NBUFS / 2);
    assert_int_equal(s.dirty, 0);
    for (uint64_t k = 0; k < NBUFS; k++)
        ubj_cache_put(h->c, held[k]);
    for (uint64_t blk = 0; blk < NBUFS / 2; blk++) {
        dev_rec(h->d, blk, dev);
        assert_int_equal(REC_P(dev), 1);
    }
    /* write_home: MUST, never deferred */
    dirty_rec(h->c, 2, 2, 0, UBJ_KIND_DATA);
    struct ubj_buf *b = get_ok(h->c, 2);
    unsigned musts = h->musts;
    assert_int_equal(ubj_cache_write_home(h->c, b), 0);
    assert_int_equal(h->musts, musts + 1);
    assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
    ubj_cache_put(h->c, b);
    hk_close(h);
}

/* a rolled-back buffer CLOCK cannot use either: without a reclaim hook the
 * get fails with -ENOBUFS after bounded MUST sweeps (no endless loop), and
 * each sweep wrote each candidate at most once. */
static void test_rolled_back_bounded(void **state)
{
    (void)state;
    struct hk *h = hk_open(chk_create(NULL));
    for (uint64_t blk = 0; blk < NBUFS; blk++)
        dirty_rec(h->c, blk, 1, 0, UBJ_KIND_DATA);
    h->defer_lo = 0, h->defer_hi = NBUFS;   /* under MUST: rolled back */
    struct ubj_buf *b = NULL;
    assert_int_equal(ubj_cache_get(h->c, 700, 0, &b), -ENOBUFS);
    struct ubj_cache_stats s = stats(h->c);
    assert_true(s.must_sweeps >= 1 && s.must_sweeps <= 8);
    assert_int_equal(s.dirty, NBUFS);
    assert_int_equal(h->rolls, s.must_sweeps * NBUFS);
    assert_int_equal(h->dones, h->rolls);
    for (unsigned k = 0; k < h->dones && k < MAXW; k++)
        assert_true(h->done[k].rb);
    hk_close(h);
}

/* write_done gets the device's error once per write; the buffer stays
 * DIRTY and is written on the next try. */
static void test_write_done_eio(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *fault;
    assert_int_equal(ubj_bdev_ram_create(DEVBLOCKS, &ram), 0);
    assert_int_equal(ubj_bdev_fault_create(ram, &fault), 0);
    struct hk *h = hk_open(chk_create(fault));
    dirty_rec(h->c, 7, 2, 0, UBJ_KIND_META);
    dirty_rec(h->c, 9, 2, 0, UBJ_KIND_META);
    assert_int_equal(ubj_bdev_fault_arm(fault, UBJ_FAULT_WRITE, 1, 0, 0), 0);
    assert_int_equal(ubj_cache_writeback(h->c, 0), -EIO);
    assert_int_equal(h->dones, 2);
    assert_int_equal(h->done[0].blkno, 7);
    assert_int_equal(h->done[0].rc, -EIO);
    assert_int_equal(h->done[1].blkno, 9);
    assert_int_equal(h->done[1].rc, 0);
    assert_false(h->done[0].rb || h->done[1].rb);
    assert_int_equal(stats(h->c).dirty, 1);
    struct ubj_buf *b = get_ok(h->c, 7);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    h->roll_lo = 7, h->roll_hi = 8;             /* write_home, rolled back */
    assert_int_equal(ubj_cache_write_home(h->c, b), 0);
    assert_int_equal(h->dones, 3);
    assert_true(h->done[2].rb && h->done[2].rc == 0);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    h->roll_hi = 0;
    assert_int_equal(ubj_bdev_fault_arm(fault, UBJ_FAULT_WRITE, 1, 0, 0), 0);
    assert_int_equal(ubj_cache_write_home(h->c, b), -EIO);
    assert_int_equal(h->done[3].rc, -EIO);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    assert_int_equal(ubj_cache_write_home(h->c, b), 0);
    assert_int_equal(h->dones, 5);
    assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
    ubj_cache_put(h->c, b);
    hk_close(h);
}

/* ---- progress: a ring of dependencies ------------------------------------ */

#define RING 16u   /* == NBUFS: the dirty buffers fill the cache */

/*
 * Soft-updates-like model: block i's record carries its own data (P, never
 * rolled back) and a pointer to version D of block dep(i) = i-1 mod RING
 * (ring) or i+1 with block RING-1 free (chain).  Block i may be written with
 * its D only once block dep(i) with P >= D reached the device; until then
 * write_begin defers, or under MUST writes D as the device has it (rolled
 * back).  The checking device refuses any block whose D exceeds the P of
 * its dependency on the device.
 */
struct ring {
    struct hk base;               /* base.c, base.d */
    bool chain;
    uint64_t ondisk_P[RING], ondisk_D[RING];   /* [base.lock] */
    uint64_t sent_P[RING], sent_D[RING];   /* what the write in flight has */
    unsigned writes, rolled, deferred;
};

/* ring_dep -- the block i depends on, or RING for none: i-1 around the
 * ring; i+1 along the chain, whose head RING-1 is the one CLOCK's hand
 * (which starts at 0) meets last. */
static uint64_t ring_dep(const struct ring *r, uint64_t i)
{
    if (r->chain)
        return i + 1 < RING ? i + 1 : RING;
    return (i + RING - 1) % RING;
}

/* ring_check -- the device rule: a block's D never runs ahead of the P
 * of its dependency on the device (dev lock held: read below it). */
static bool ring_check(struct chk_bdev *d, uint64_t blkno, const uint8_t *p)
{
    struct ring *r = d->ctx;
    if (blkno >= RING)
        return true;
    if (!rec_sealed(p) || !rec_whole(p, blkno))
        return false;
    uint64_t dep = ring_dep(r, blkno);
    if (dep == RING)
        return true;
    uint8_t dp[BS];
    assert_int_equal(ubj_bdev_read(d->base.lower, dep, 1, dp), 0);
    return REC_D(p) <= REC_P(dp);
}

/* ring_begin -- write D only when its dependency is on the device. */
static int ring_begin(void *ctx, struct ubj_buf *b, uint64_t blkno,
                      const void *live, void *snap, unsigned flags)
{
    struct ring *r = ctx;
    (void)b;
    if (blkno >= RING)
        return UBJ_WRITE_AS_IS;
    pthread_mutex_lock(&r->base.lock);
    uint64_t dep = ring_dep(r, blkno);
    int v = UBJ_WRITE_AS_IS;
    if (dep != RING && r->ondisk_P[dep] < REC_D(live)) {
        if (flags & UBJ_WRITE_MUST) {
            uint64_t D = r->ondisk_D[blkno];
            memcpy((uint8_t *)snap + 24, &D, 8);   /* the device's pointer */
            v = UBJ_WRITE_ROLLED_BACK;
            r->rolled++;
        } else {
            v = UBJ_WRITE_DEFER;
            r->deferred++;
        }
    }
    if (v != UBJ_WRITE_DEFER) {
        r->sent_P[blkno] = REC_P(snap);
        r->sent_D[blkno] = REC_D(snap);
    }
    pthread_mutex_unlock(&r->base.lock);
    return v;
}

/* ring_done -- what reached the device: P always, D unless rolled back. */
static void ring_done(void *ctx, struct ubj_buf *b, uint64_t blkno, int rc,
                      bool rolled_back)
{
    struct ring *r = ctx;
    (void)b;
    if (blkno >= RING || rc != 0)
        return;
    pthread_mutex_lock(&r->base.lock);
    r->writes++;
    r->ondisk_P[blkno] = r->sent_P[blkno];
    r->ondisk_D[blkno] = r->sent_D[blkno];   /* rolled back: the old one */
    (void)rolled_back;
    pthread_mutex_unlock(&r->base.lock);
}

static const struct ubj_cache_hooks ring_hooks = {
    .write_begin = ring_begin, .write_done = ring_done,
};

/* ring_run -- fill the cache with RING dirty records in versions 1..rounds
 * (each pointing at its dependency's same version), with many misses in
 * between and after: every get succeeds, the device never holds a block
 * ahead of its dependency, and after write-backs every block is home. */
static void ring_run(bool chain, unsigned rounds)
{
    struct chk_bdev *d = chk_create(NULL);
    struct ring *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->chain = chain;
    r->base.d = d;
    pthread_mutex_init(&r->base.lock, NULL);
    struct ubj_cache_config cfg = { .nbufs = NBUFS, .seal = cb_seal };
    assert_int_equal(ubj_cache_create(&d->base, &cfg, &r->base.c), 0);
    ubj_cache_set_hooks(r->base.c, &ring_hooks, r);
    pthread_mutex_lock(&d->lock);
    d->check = ring_check;
    d->ctx = r;
    pthread_mutex_unlock(&d->lock);
    struct ubj_cache *c = r->base.c;
    uint64_t miss = 100;
    for (uint64_t v = 1; v <= rounds; v++) {
        for (uint64_t i = 0; i < RING; i++)
            dirty_rec(c, i, v, v, UBJ_KIND_META);
        for (unsigned k = 0; k < 3 * NBUFS; k++, miss++) {
            struct ubj_buf *b = NULL;
            int rc = ubj_cache_get(c, miss % (DEVBLOCKS - RING) + RING, 0, &b);
            if (rc != 0)
                fail_msg("round %llu miss %u: %d (no progress)",
                         (unsigned long long)v, k, rc);
            ubj_cache_put(c, b);
        }
    }
    struct ubj_cache_stats s = stats(c);
    assert_int_equal(s.reclaims, 0);   /* no reclaim hook: CLOCK did it */
    if (!chain) {
        assert_true(s.must_sweeps >= rounds);   /* a ring needs MUST */
        assert_true(r->rolled >= rounds);
    }
    assert_true(r->deferred > 0);
    /* what is still deferred (the misses found room elsewhere) drains by
     * write-backs alone, as each one satisfies the next: a chain in order */
    for (unsigned pass = 0; pass < RING && stats(c).dirty > 0; pass++)
        assert_int_equal(ubj_cache_writeback(c, chain ? 0 : UBJ_WB_MUST), 0);
    assert_int_equal(stats(c).dirty, 0);
    assert_int_equal(d->violations, 0);
    uint8_t p[BS];
    for (uint64_t i = 0; i < RING; i++) {
        dev_rec(d, i, p);
        assert_int_equal(REC_P(p), rounds);
        assert_int_equal(REC_D(p), rounds);
        assert_true(rec_sealed(p));
    }
    ubj_cache_destroy(c);
    ubj_bdev_destroy(&d->base);
    pthread_mutex_destroy(&r->base.lock);
    free(r);
}

/* a ring: no buffer may go first unrolled; MUST breaks the cycle. */
static void test_progress_ring(void **state)
{
    (void)state;
    ring_run(false, 6);
}

/* a chain: its head is always writable; deferral alone makes progress. */
static void test_progress_chain(void **state)
{
    (void)state;
    ring_run(true, 6);
}

/* ---- two threads --------------------------------------------------------- */

#define TT_BLOCKS 64u     /* per thread */
#define TT_OPS 4000

struct tt {
    struct ubj_cache *c;
    struct chk_bdev *d;
    uint64_t base;        /* first block */
    uint64_t ver[TT_BLOCKS];
    unsigned seed;
    int bad;
};

/* tt_check -- a block on its way to the device is one whole record of
 * that block (metadata ones sealed: their D is odd, see tt_worker). */
static bool tt_check(struct chk_bdev *d, uint64_t blkno, const uint8_t *p)
{
    (void)d;
    return rec_whole(p, blkno) && REC_D(p) >> 1 == blkno &&
           (!(REC_D(p) & 1) || rec_sealed(p));
}

/* tt_worker -- own blocks only: get (a miss evicts someone's dirty buffer
 * from this thread), wait for a write in flight (the stable-buffer rule:
 * ubj_cache_seal waits for io_busy), verify, rewrite, dirty; now and then
 * write it home while held. */
static void *tt_worker(void *p)
{
    struct tt *t = p;
    for (int op = 0; op < TT_OPS; op++) {
        uint32_t rnd = (uint32_t)rand_r(&t->seed);
        uint64_t i = rnd % TT_BLOCKS, blk = t->base + i;
        struct ubj_buf *b;
        if (ubj_cache_get(t->c, blk, 0, &b) != 0) {
            t->bad++;
            continue;
        }
        ubj_cache_seal(t->c, b);   /* waits for a write of b in flight */
        if (REC_P(b->data) != t->ver[i] || !rec_whole(b->data, blk))
            t->bad++;
        bool meta = (rnd >> 8) & 1;
        rec_fill(b->data, blk, ++t->ver[i], blk << 1 | meta);
        ubj_cache_mark_dirty(t->c, b, meta ? UBJ_KIND_META : UBJ_KIND_DATA, 1);
        if ((rnd >> 12) % 8 == 0 && ubj_cache_write_home(t->c, b) != 0)
            t->bad++;
        ubj_cache_put(t->c, b);
    }
    return NULL;
}

/* two threads evict and write home concurrently on one 16-buffer cache:
 * every write is a whole record (snapshots are never shared between
 * writers), and the device ends with every block's last version. */
static void test_two_threads(void **state)
{
    (void)state;
    struct chk_bdev *d = chk_create(NULL);
    for (uint64_t b = 0; b < 2 * TT_BLOCKS; b++) {   /* D: own number, meta */
        uint8_t buf[BS];
        rec_fill(buf, b, 0, b << 1 | 1);
        cb_seal(NULL, b, buf);
        assert_int_equal(ubj_bdev_write(d->base.lower, b, 1, buf), 0);
    }
    d->check = tt_check;
    struct ubj_cache_config cfg = { .nbufs = NBUFS, .seal = cb_seal };
    struct ubj_cache *c;
    assert_int_equal(ubj_cache_create(&d->base, &cfg, &c), 0);
    struct tt t[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        t[k] = (struct tt){ .c = c, .d = d, .base = (uint64_t)k * TT_BLOCKS,
                            .seed = 99u + (unsigned)k };
        assert_int_equal(pthread_create(&th[k], NULL, tt_worker, &t[k]), 0);
    }
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    assert_int_equal(t[0].bad + t[1].bad, 0);
    assert_int_equal(ubj_cache_writeback(c, 0), 0);
    assert_true(stats(c).evictions > 1000);
    assert_int_equal(d->violations, 0);
    for (int k = 0; k < 2; k++)
        for (uint64_t i = 0; i < TT_BLOCKS; i++) {
            uint8_t p[BS];
            dev_rec(d, t[k].base + i, p);
            assert_int_equal(REC_P(p), t[k].ver[i]);
        }
    ubj_cache_destroy(c);
    ubj_bdev_destroy(&d->base);
}

/* main -- run the suite. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_live_untouched),
        cmocka_unit_test(test_rollback_sealed),
        cmocka_unit_test(test_defer_writeback),
        cmocka_unit_test(test_defer_clock),
        cmocka_unit_test(test_rolled_back_bounded),
        cmocka_unit_test(test_write_done_eio),
        cmocka_unit_test(test_progress_ring),
        cmocka_unit_test(test_progress_chain),
        cmocka_unit_test(test_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
