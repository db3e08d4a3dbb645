/*
 * tests/unit/cache.c -- unit tests of the buffer cache (src/cache/cache.c):
 * hits and misses, I/O counts on the device, CLOCK replacement, write-back
 * of dirty victims, sorted and coalesced write-back with one flush, seal,
 * forget, NOREAD, read errors, -ENOBUFS, reclaim, state counts, supplied
 * memory, runs of blocks read in one request (ubj_cache_get_run), and a
 * multi-threaded get/get_run/put/dirty stress with verification.
 *
 * Every block of a test device starts with a known pattern (block number,
 * version 0); pattern_ok() checks a buffer or a device block against it.
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
#include <unistd.h>
#include <cmocka.h>
#include "ubjfs/bdev.h"
#include "cache/cache.h"

#define BS 4096u
#define NBUFS 16u

/* ---- patterns ------------------------------------------------------------ */

/* pattern_fill -- the content of block `blk` at version `ver`. */
static void pattern_fill(uint8_t *p, uint64_t blk, uint32_t ver)
{
    memcpy(p, &blk, 8);
    memcpy(p + 8, &ver, 4);
    memset(p + 12, 0, 4);
    for (uint32_t i = 16; i < BS; i++)
        p[i] = (uint8_t)(blk * 7 + ver * 13 + i);
}

/* pattern_ok -- true if p holds block blk at version ver. */
static int pattern_ok(const uint8_t *p, uint64_t blk, uint32_t ver)
{
    uint8_t want[BS];
    pattern_fill(want, blk, ver);
    return memcmp(p, want, BS) == 0;
}

/* dev_block_ok -- true if the device's block blk holds version ver. */
static int dev_block_ok(struct ubj_bdev *d, uint64_t blk, uint32_t ver)
{
    uint8_t buf[BS];
    assert_int_equal(ubj_bdev_read(d, blk, 1, buf), 0);
    return pattern_ok(buf, blk, ver);
}

/* dev_init -- fill blocks [0, n) of d with version 0; zero its stats. */
static void dev_init(struct ubj_bdev *d, uint64_t n)
{
    uint8_t buf[BS];
    for (uint64_t b = 0; b < n; b++) {
        pattern_fill(buf, b, 0);
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
    }
    ubj_bdev_stats_reset(d);
}

/* dev_stats -- d's counters. */
static struct ubj_bdev_stats dev_stats(struct ubj_bdev *d)
{
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(d, &s);
    return s;
}

/* cache_stats -- c's counters. */
static struct ubj_cache_stats cache_stats(struct ubj_cache *c)
{
    struct ubj_cache_stats s;
    ubj_cache_stats_get(c, &s);
    return s;
}

/* ---- a recording device: logs each write (blkno, count), forwards ------- */

struct rec_bdev {
    struct ubj_bdev base;
    unsigned read_delay_us;   /* each read sleeps this long first */
    uint32_t nlog;
    struct { uint64_t blkno; uint32_t count; } log[64];
};

/* rec_read -- forward, after the configured delay. */
static int rec_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct rec_bdev *r = (struct rec_bdev *)d;
    if (r->read_delay_us)
        usleep(r->read_delay_us);
    return ubj_bdev_read(d->lower, blkno, count, buf);
}

/* rec_write -- log, then forward. */
static int rec_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                     const void *buf)
{
    struct rec_bdev *r = (struct rec_bdev *)d;
    if (r->nlog < 64) {
        r->log[r->nlog].blkno = blkno;
        r->log[r->nlog].count = count;
        r->nlog++;
    }
    return ubj_bdev_write(d->lower, blkno, count, buf);
}

/* rec_flush -- forward. */
static int rec_flush(struct ubj_bdev *d)
{
    return ubj_bdev_flush(d->lower);
}

/* rec_destroy -- free the wrapper and the device below. */
static void rec_destroy(struct ubj_bdev *d)
{
    ubj_bdev_destroy(d->lower);
    free(d);
}

static const struct ubj_bdev_ops rec_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "rec",
    .read = rec_read, .write = rec_write, .flush = rec_flush,
    .destroy = rec_destroy,
};

/* rec_create -- a recording device over a fresh RAM device. */
static struct rec_bdev *rec_create(uint64_t nblocks)
{
    struct ubj_bdev *ram;
    assert_int_equal(ubj_bdev_ram_create(nblocks, &ram), 0);
    struct rec_bdev *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->base = (struct ubj_bdev){
        .ops = &rec_ops, .block_size = BS, .nblocks = nblocks, .lower = ram,
    };
    return r;
}

/* ---- fixtures ------------------------------------------------------------ */

struct fix {
    struct ubj_bdev *dev;
    struct ubj_cache *c;
    int seals;
    int reclaims;
    int reclaim_rc;
    int reclaim_unpin;   /* reclaim clears PINNED on every buffer */
};

#define SEAL_MARK 0x5EA1ED00u

/* cb_seal -- the seal callback: stamp the last 4 bytes. */
static void cb_seal(void *ctx, uint64_t blkno, void *data)
{
    struct fix *f = ctx;
    uint32_t mark = SEAL_MARK | (uint32_t)(blkno & 0xff);
    memcpy((uint8_t *)data + BS - 4, &mark, 4);
    f->seals++;
}

/* cb_reclaim -- the reclaim callback: count; maybe unpin everything. */
static int cb_reclaim(void *ctx)
{
    struct fix *f = ctx;
    f->reclaims++;
    if (f->reclaim_unpin)
        for (uint32_t i = 0; i < ubj_cache_nbufs(f->c); i++)
            ubj_cache_clear_flags(f->c, ubj_cache_buf_at(f->c, i), UBJ_BUF_PINNED);
    return f->reclaim_rc;
}

/* fix_open -- a cache of NBUFS over dev (blocks [0, 256) initialised). */
static struct fix *fix_open(struct ubj_bdev *dev)
{
    struct fix *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->dev = dev;
    dev_init(dev, 256);
    struct ubj_cache_config cfg = { .nbufs = NBUFS, .seal = cb_seal, .ctx = f };
    assert_int_equal(ubj_cache_create(dev, &cfg, &f->c), 0);
    ubj_cache_set_hooks(f->c, &(struct ubj_cache_hooks){ .reclaim = cb_reclaim }, f);
    return f;
}

/* setup_ram -- fixture over a 1024-block RAM device. */
static int setup_ram(void **state)
{
    struct ubj_bdev *dev;
    assert_int_equal(ubj_bdev_ram_create(1024, &dev), 0);
    *state = fix_open(dev);
    return 0;
}

/* teardown -- destroy cache and device. */
static int teardown(void **state)
{
    struct fix *f = *state;
    ubj_cache_destroy(f->c);
    ubj_bdev_destroy(f->dev);
    free(f);
    return 0;
}

/* get_ok -- ubj_cache_get that must succeed. */
static struct ubj_buf *get_ok(struct ubj_cache *c, uint64_t blk, unsigned flags)
{
    struct ubj_buf *b = NULL;
    assert_int_equal(ubj_cache_get(c, blk, flags, &b), 0);
    assert_non_null(b);
    assert_int_equal(b->d->blkno, blk);
    return b;
}

/* dirty_block -- get blk, write version ver into it, mark dirty, put. */
static void dirty_block(struct ubj_cache *c, uint64_t blk, uint32_t ver,
                        enum ubj_buf_kind kind)
{
    struct ubj_buf *b = get_ok(c, blk, 0);
    pattern_fill(b->data, blk, ver);
    ubj_cache_mark_dirty(c, b, kind, 1);
    ubj_cache_put(c, b);
}

/* is_cached -- lookup without I/O. */
static int is_cached(struct ubj_cache *c, uint64_t blk)
{
    struct ubj_buf *b;
    int rc = ubj_cache_lookup(c, blk, &b);
    if (rc == 0)
        ubj_cache_put(c, b);
    else
        assert_int_equal(rc, -ENOENT);
    return rc == 0;
}

/* ---- tests --------------------------------------------------------------- */

/* create rejects bad configurations. */
static void test_create_args(void **state)
{
    struct fix *f = *state;
    struct ubj_cache *c = NULL;
    struct ubj_cache_config cfg = { .nbufs = 15 };
    assert_int_equal(ubj_cache_create(f->dev, &cfg, &c), -EINVAL);
    assert_null(c);
    cfg.nbufs = 16;
    cfg.data_mem = (uint8_t *)16;   /* misaligned, never dereferenced */
    assert_int_equal(ubj_cache_create(f->dev, &cfg, &c), -EINVAL);
    assert_int_equal(ubj_cache_nbufs(f->c), NBUFS);
    assert_ptr_equal(ubj_cache_dev(f->c), f->dev);
    assert_null(ubj_cache_buf_at(f->c, NBUFS));
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_get(f->c, 1024, 0, &b), -EINVAL);
}

/* hits and misses are counted; the data is the device's. */
static void test_hits_misses(void **state)
{
    struct fix *f = *state;
    for (int pass = 0; pass < 3; pass++)
        for (uint64_t blk = 0; blk < 4; blk++) {
            struct ubj_buf *b = get_ok(f->c, blk, 0);
            assert_true(pattern_ok(b->data, blk, 0));
            assert_true(b->flags & UBJ_BUF_LOADED);
            assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
            ubj_cache_put(f->c, b);
        }
    struct ubj_cache_stats s = cache_stats(f->c);
    assert_int_equal(s.misses, 4);
    assert_int_equal(s.hits, 8);
    assert_int_equal(s.evictions, 0);
    assert_int_equal(dev_stats(f->dev).reads, 4);
    assert_int_equal(dev_stats(f->dev).writes, 0);
}

/* a get after put returns the same buffer and bytes without I/O; a fresh
 * read carries VERIFY until the caller clears it. */
static void test_get_after_put(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *b = get_ok(f->c, 5, 0);
    assert_true(b->flags & UBJ_BUF_VERIFY);
    ubj_cache_clear_flags(f->c, b, UBJ_BUF_VERIFY);
    b->data[100] ^= 0xff;   /* cached bytes, not the device's, come back */
    ubj_cache_put(f->c, b);
    ubj_bdev_stats_reset(f->dev);
    struct ubj_buf *b2 = get_ok(f->c, 5, 0);
    assert_ptr_equal(b2, b);
    assert_false(b2->flags & UBJ_BUF_VERIFY);
    assert_false(pattern_ok(b2->data, 5, 0));
    b2->data[100] ^= 0xff;
    assert_true(pattern_ok(b2->data, 5, 0));
    struct ubj_buf *b3 = get_ok(f->c, 5, 0);   /* two references at once */
    assert_ptr_equal(b3, b);
    assert_int_equal(b->refcnt, 2);
    ubj_cache_put(f->c, b3);
    ubj_cache_put(f->c, b2);
    ubj_cache_put(f->c, NULL);
    assert_int_equal(dev_stats(f->dev).reads, 0);
}

/* CLOCK: a cyclic scan larger than the cache misses every time, one that
 * fits misses once per block, and a recently used block gets a second
 * chance while an unused one is replaced. */
static void test_clock(void **state)
{
    struct fix *f = *state;
    for (uint64_t blk = 0; blk < NBUFS; blk++)
        ubj_cache_put(f->c, get_ok(f->c, blk, 0));
    assert_int_equal(dev_stats(f->dev).reads, NBUFS);
    /* all referenced: the sweep clears every bit and takes buffer 0 */
    ubj_cache_put(f->c, get_ok(f->c, 100, 0));
    assert_false(is_cached(f->c, 0));
    ubj_cache_put(f->c, get_ok(f->c, 1, 0));       /* hit: 1 referenced */
    ubj_cache_put(f->c, get_ok(f->c, 101, 0));     /* passes 1, takes 2 */
    assert_true(is_cached(f->c, 1));
    assert_false(is_cached(f->c, 2));
    assert_int_equal(cache_stats(f->c).evictions, 2);
    assert_int_equal(dev_stats(f->dev).reads, NBUFS + 2);

    /* working set of NBUFS: after warming, no more reads */
    ubj_cache_invalidate(f->c);
    ubj_bdev_stats_reset(f->dev);
    for (int pass = 0; pass < 4; pass++)
        for (uint64_t blk = 200; blk < 200 + NBUFS; blk++)
            ubj_cache_put(f->c, get_ok(f->c, blk, 0));
    assert_int_equal(dev_stats(f->dev).reads, NBUFS);

    /* cyclic scan of 2 * NBUFS: every access misses */
    ubj_cache_invalidate(f->c);
    ubj_bdev_stats_reset(f->dev);
    for (int pass = 0; pass < 4; pass++)
        for (uint64_t blk = 0; blk < 2 * NBUFS; blk++) {
            struct ubj_buf *b = get_ok(f->c, blk, 0);
            assert_true(pattern_ok(b->data, blk, 0));
            ubj_cache_put(f->c, b);
        }
    assert_int_equal(dev_stats(f->dev).reads, 4 * 2 * NBUFS);
}

/* dirty victims are written home (with correct bytes) before reuse. */
static void test_dirty_eviction(void **state)
{
    struct fix *f = *state;
    for (uint64_t blk = 0; blk < NBUFS; blk++)
        dirty_block(f->c, blk, 1, UBJ_KIND_DATA);
    assert_int_equal(cache_stats(f->c).dirty, NBUFS);
    assert_int_equal(dev_stats(f->dev).writes, 0);
    for (uint64_t blk = 100; blk < 100 + NBUFS; blk++) {
        struct ubj_buf *b = get_ok(f->c, blk, 0);
        assert_true(pattern_ok(b->data, blk, 0));
        ubj_cache_put(f->c, b);
    }
    struct ubj_cache_stats s = cache_stats(f->c);
    assert_int_equal(s.dirty, 0);
    assert_int_equal(s.writeback_blocks, NBUFS);
    assert_int_equal(s.writeback_data_bytes, NBUFS * BS);
    assert_int_equal(s.writeback_meta_bytes, 0);
    assert_int_equal(s.evictions, NBUFS);
    assert_int_equal(dev_stats(f->dev).writes, NBUFS);
    assert_int_equal(dev_stats(f->dev).flushes, 0);
    for (uint64_t blk = 0; blk < NBUFS; blk++)
        assert_true(dev_block_ok(f->dev, blk, 1));
}

/* writeback: block order, runs coalesced (directly or via the bounce
 * buffer), metadata sealed, one flush; pinned buffers only on request. */
static void test_writeback_order(void **state)
{
    (void)state;
    struct rec_bdev *r = rec_create(1024);
    struct fix *f = fix_open(&r->base);
    /* buffers 0..7 in this order: 3,4,5 adjacent; 7 before 6 */
    static const uint64_t blks[] = { 9, 3, 4, 5, 20, 1, 7, 6 };
    for (size_t i = 0; i < 8; i++)
        dirty_block(f->c, blks[i], 2, blks[i] == 9 ? UBJ_KIND_META : UBJ_KIND_DATA);
    r->nlog = 0;
    ubj_bdev_stats_reset(f->dev);
    assert_int_equal(ubj_cache_writeback(f->c, UBJ_WB_FLUSH), 0);
    assert_int_equal(r->nlog, 4);
    static const struct { uint64_t blkno; uint32_t count; } want[] = {
        { 1, 1 }, { 3, 5 }, { 9, 1 }, { 20, 1 },
    };
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r->log[i].blkno, want[i].blkno);
        assert_int_equal(r->log[i].count, want[i].count);
    }
    struct ubj_bdev_stats ds = dev_stats(f->dev);
    assert_int_equal(ds.writes, 4);
    assert_int_equal(ds.bytes_written, 8 * BS);
    assert_int_equal(ds.flushes, 1);
    assert_int_equal(f->seals, 1);
    uint8_t buf[BS];
    assert_int_equal(ubj_bdev_read(f->dev, 9, 1, buf), 0);
    uint32_t mark;
    memcpy(&mark, buf + BS - 4, 4);
    assert_int_equal(mark, SEAL_MARK | 9u);
    for (size_t i = 0; i < 8; i++)
        if (blks[i] != 9)
            assert_true(dev_block_ok(f->dev, blks[i], 2));
    struct ubj_cache_stats s = cache_stats(f->c);
    assert_int_equal(s.dirty, 0);
    assert_int_equal(s.writeback_meta_bytes, BS);
    assert_int_equal(s.writeback_data_bytes, 7 * BS);

    /* nothing dirty: no write, but the flush is still done */
    assert_int_equal(ubj_cache_writeback(f->c, UBJ_WB_FLUSH), 0);
    assert_int_equal(dev_stats(f->dev).writes, 4);
    assert_int_equal(dev_stats(f->dev).flushes, 2);

    /* a pinned dirty buffer stays unless UBJ_WB_PINNED */
    struct ubj_buf *b = get_ok(f->c, 30, 0);
    pattern_fill(b->data, 30, 3);
    ubj_cache_mark_dirty(f->c, b, UBJ_KIND_DATA, 2);
    ubj_cache_set_flags(f->c, b, UBJ_BUF_PINNED);
    ubj_cache_put(f->c, b);
    assert_int_equal(ubj_cache_writeback(f->c, 0), 0);
    assert_int_equal(dev_stats(f->dev).writes, 4);
    assert_int_equal(cache_stats(f->c).dirty, 1);
    assert_int_equal(ubj_cache_writeback(f->c, UBJ_WB_PINNED), 0);
    assert_int_equal(dev_stats(f->dev).writes, 5);
    assert_int_equal(dev_stats(f->dev).flushes, 2);
    assert_true(dev_block_ok(f->dev, 30, 3));
    assert_int_equal(cache_stats(f->c).dirty, 0);
    void *st = f;
    teardown(&st);
}

/* forget drops a dirty block: the device keeps the old content. */
static void test_forget(void **state)
{
    struct fix *f = *state;
    dirty_block(f->c, 3, 5, UBJ_KIND_META);
    assert_int_equal(cache_stats(f->c).dirty, 1);
    ubj_cache_forget(f->c, 3);
    assert_false(is_cached(f->c, 3));
    assert_int_equal(cache_stats(f->c).dirty, 0);

    /* held while forgotten: becomes CLEAN, later dirtying is ignored, and
     * the buffer is freed on the last put */
    struct ubj_buf *b = get_ok(f->c, 4, 0);
    pattern_fill(b->data, 4, 5);
    ubj_cache_mark_dirty(f->c, b, UBJ_KIND_DATA, 1);
    ubj_cache_forget(f->c, 4);
    assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
    assert_false(is_cached(f->c, 4));
    ubj_cache_mark_dirty(f->c, b, UBJ_KIND_DATA, 1);
    assert_int_equal(cache_stats(f->c).dirty, 0);
    ubj_cache_put(f->c, b);
    assert_int_equal(b->d->state, UBJ_BUF_FREE);

    ubj_cache_forget(f->c, 77);   /* not cached: nothing happens */
    assert_int_equal(ubj_cache_writeback(f->c, UBJ_WB_FLUSH), 0);
    assert_int_equal(dev_stats(f->dev).writes, 0);
    assert_true(dev_block_ok(f->dev, 3, 0));
    assert_true(dev_block_ok(f->dev, 4, 0));
    ubj_bdev_stats_reset(f->dev);
    b = get_ok(f->c, 4, 0);     /* read again from the device */
    assert_true(pattern_ok(b->data, 4, 0));
    ubj_cache_put(f->c, b);
    assert_int_equal(dev_stats(f->dev).reads, 1);
}

/* NOREAD zero-fills a miss without I/O; undirtied, it is not kept. */
static void test_noread(void **state)
{
    struct fix *f = *state;
    static const uint8_t zero[BS];
    struct ubj_buf *b = get_ok(f->c, 8, UBJ_GET_NOREAD);
    assert_memory_equal(b->data, zero, BS);
    assert_true(b->flags & UBJ_BUF_LOADED);
    assert_false(b->flags & UBJ_BUF_VERIFY);
    ubj_cache_put(f->c, b);
    assert_int_equal(dev_stats(f->dev).reads, 0);
    assert_false(is_cached(f->c, 8));

    b = get_ok(f->c, 8, UBJ_GET_NOREAD);
    pattern_fill(b->data, 8, 4);
    ubj_cache_mark_dirty(f->c, b, UBJ_KIND_DATA, 1);
    ubj_cache_put(f->c, b);
    b = get_ok(f->c, 8, 0);
    assert_true(pattern_ok(b->data, 8, 4));
    ubj_cache_put(f->c, b);
    assert_int_equal(dev_stats(f->dev).reads, 0);
    assert_int_equal(ubj_cache_writeback(f->c, 0), 0);
    assert_true(dev_block_ok(f->dev, 8, 4));

    /* NOREAD on a hit keeps the cached bytes */
    b = get_ok(f->c, 8, UBJ_GET_NOREAD);
    assert_true(pattern_ok(b->data, 8, 4));
    ubj_cache_put(f->c, b);
}

/* setup_fault -- fixture over fault(ram). */
static int setup_fault(void **state)
{
    struct ubj_bdev *ram, *dev;
    assert_int_equal(ubj_bdev_ram_create(1024, &ram), 0);
    assert_int_equal(ubj_bdev_fault_create(ram, &dev), 0);
    *state = fix_open(dev);
    return 0;
}

/* a failed read returns -EIO and leaves nothing cached. */
static void test_read_eio(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *b = NULL;
    assert_int_equal(ubj_bdev_fault_arm(f->dev, UBJ_FAULT_READ, 1, 0, 0), 0);
    assert_int_equal(ubj_cache_get(f->c, 5, 0, &b), -EIO);
    assert_null(b);
    assert_int_equal(ubj_bdev_fault_fired(f->dev), 1);
    assert_false(is_cached(f->c, 5));
    ubj_bdev_stats_reset(f->dev);
    b = get_ok(f->c, 5, 0);   /* the fault was transient: read again */
    assert_true(pattern_ok(b->data, 5, 0));
    ubj_cache_put(f->c, b);
    assert_int_equal(dev_stats(f->dev).reads, 1);
    /* no buffer leaked: all NBUFS can be held at once */
    struct ubj_buf *held[NBUFS];
    for (uint32_t i = 0; i < NBUFS; i++)
        held[i] = get_ok(f->c, 300 + i, 0);
    for (uint32_t i = 0; i < NBUFS; i++)
        ubj_cache_put(f->c, held[i]);
}

/* a failed write of a dirty victim keeps it DIRTY; writeback reports the
 * error, keeps the failed buffer dirty and writes the others. */
static void test_write_eio(void **state)
{
    struct fix *f = *state;
    dirty_block(f->c, 1, 6, UBJ_KIND_DATA);
    dirty_block(f->c, 3, 6, UBJ_KIND_DATA);
    assert_int_equal(ubj_bdev_fault_arm(f->dev, UBJ_FAULT_WRITE, 1, 0, 0), 0);
    assert_int_equal(ubj_cache_writeback(f->c, UBJ_WB_FLUSH), -EIO);
    assert_int_equal(cache_stats(f->c).dirty, 1);
    assert_true(dev_block_ok(f->dev, 1, 0));   /* block 1 went first: failed */
    assert_true(dev_block_ok(f->dev, 3, 6));
    struct ubj_buf *b = get_ok(f->c, 1, 0);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    assert_int_equal(ubj_bdev_fault_arm(f->dev, UBJ_FAULT_WRITE, 1, 0, 0), 0);
    assert_int_equal(ubj_cache_write_home(f->c, b), -EIO);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    assert_int_equal(ubj_cache_write_home(f->c, b), 0);
    assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
    ubj_cache_put(f->c, b);
    assert_true(dev_block_ok(f->dev, 1, 6));
}

/* -ENOBUFS only when every buffer is referenced; reclaim not called. */
static void test_enobufs(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *held[NBUFS], *b = NULL;
    for (uint32_t i = 0; i < NBUFS; i++)
        held[i] = get_ok(f->c, i, 0);
    assert_int_equal(ubj_cache_get(f->c, 500, 0, &b), -ENOBUFS);
    assert_null(b);
    assert_int_equal(f->reclaims, 0);
    for (uint32_t i = 0; i < NBUFS; i++)   /* hits still work */
        ubj_cache_put(f->c, get_ok(f->c, i, 0));
    ubj_cache_put(f->c, held[7]);
    b = get_ok(f->c, 500, 0);
    assert_ptr_equal(b, held[7]);
    ubj_cache_put(f->c, b);
    for (uint32_t i = 0; i < NBUFS; i++)
        if (i != 7)
            ubj_cache_put(f->c, held[i]);
}

/* pin_all_dirty -- dirty and pin blocks [0, NBUFS). */
static void pin_all_dirty(struct ubj_cache *c)
{
    for (uint64_t blk = 0; blk < NBUFS; blk++) {
        struct ubj_buf *b = get_ok(c, blk, 0);
        pattern_fill(b->data, blk, 7);
        ubj_cache_mark_dirty(c, b, UBJ_KIND_DATA, 1);
        ubj_cache_set_flags(c, b, UBJ_BUF_PINNED);
        ubj_cache_put(c, b);
    }
}

/* all pinned: reclaim is called, and once it unpins, the get succeeds
 * by writing a dirty victim home; reclaim's error is returned. */
static void test_reclaim(void **state)
{
    struct fix *f = *state;
    pin_all_dirty(f->c);
    struct ubj_buf *b = NULL;
    f->reclaim_rc = -EIO;
    assert_int_equal(ubj_cache_get(f->c, 600, 0, &b), -EIO);
    assert_int_equal(f->reclaims, 1);
    f->reclaim_rc = 0;
    f->reclaims = 0;
    assert_int_equal(ubj_cache_get(f->c, 600, 0, &b), -ENOBUFS);  /* no help */
    assert_true(f->reclaims >= 1);
    assert_int_equal(dev_stats(f->dev).writes, 0);
    f->reclaims = 0;
    f->reclaim_unpin = 1;
    b = get_ok(f->c, 600, 0);
    assert_int_equal(f->reclaims, 1);
    ubj_cache_put(f->c, b);
    assert_int_equal(dev_stats(f->dev).writes, 1);
    assert_int_equal(cache_stats(f->c).dirty, NBUFS - 1);
    assert_true(cache_stats(f->c).reclaims >= 3);
}

/* state transitions keep the dirty/frozen counts; frozen buffers are
 * never evicted; write_home of FROZEN makes it CLEAN. */
static void test_states(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *b = get_ok(f->c, 40, 0);
    pattern_fill(b->data, 40, 9);
    ubj_cache_mark_dirty(f->c, b, UBJ_KIND_META, 5);
    assert_int_equal(b->d->txid, 5);
    assert_int_equal(b->d->kind, UBJ_KIND_META);
    assert_true(b->flags & UBJ_BUF_SEAL);
    assert_int_equal(cache_stats(f->c).dirty, 1);
    ubj_cache_set_state(f->c, b, UBJ_BUF_FROZEN, 5);
    assert_int_equal(cache_stats(f->c).dirty, 0);
    assert_int_equal(cache_stats(f->c).frozen, 1);
    assert_int_equal(ubj_cache_write_home(f->c, b), 0);
    assert_int_equal(b->d->state, UBJ_BUF_CLEAN);
    assert_int_equal(cache_stats(f->c).frozen, 0);
    assert_int_equal(f->seals, 1);
    ubj_cache_mark_dirty(f->c, b, UBJ_KIND_DATA, 6);
    assert_false(b->flags & UBJ_BUF_SEAL);
    ubj_cache_set_state(f->c, b, UBJ_BUF_FROZEN, 6);
    ubj_cache_set_state(f->c, b, UBJ_BUF_FROZEN_OLD, 6);
    assert_int_equal(cache_stats(f->c).frozen, 1);
    ubj_cache_set_state(f->c, b, UBJ_BUF_FREE, 7);   /* held: freed on put */
    assert_int_equal(cache_stats(f->c).frozen, 0);
    assert_false(is_cached(f->c, 40));
    ubj_cache_put(f->c, b);
    assert_int_equal(b->d->state, UBJ_BUF_FREE);

    /* freeze NBUFS - 1 buffers; a scan runs through the one left */
    for (uint64_t blk = 0; blk < NBUFS - 1; blk++) {
        b = get_ok(f->c, blk, 0);
        ubj_cache_mark_dirty(f->c, b, UBJ_KIND_DATA, 8);
        ubj_cache_set_state(f->c, b, UBJ_BUF_FROZEN, 8);
        ubj_cache_put(f->c, b);
    }
    assert_int_equal(cache_stats(f->c).frozen, NBUFS - 1);
    for (uint64_t blk = 100; blk < 140; blk++)
        ubj_cache_put(f->c, get_ok(f->c, blk, 0));
    for (uint64_t blk = 0; blk < NBUFS - 1; blk++)
        assert_true(is_cached(f->c, blk));
    assert_int_equal(f->reclaims, 0);
    assert_int_equal(dev_stats(f->dev).writes, 1);
    /* forget leaves a frozen block alone: the mode owns frozen buffers
     * (UBJ frees them with ubj_cache_revoke once a commit allows it) */
    ubj_cache_forget(f->c, 0);
    assert_int_equal(cache_stats(f->c).frozen, NBUFS - 1);
    assert_true(is_cached(f->c, 0));
}

/* supplied descriptor and data memory are the ones used. */
static void test_supplied_memory(void **state)
{
    struct fix *f = *state;
    struct ubj_bufdesc *desc = calloc(NBUFS, sizeof *desc);
    uint8_t *data = aligned_alloc(BS, (size_t)NBUFS * BS);
    assert_non_null(desc);
    assert_non_null(data);
    memset(desc, 0xa5, NBUFS * sizeof *desc);   /* garbage: reset to FREE */
    struct ubj_cache_config cfg = { .nbufs = NBUFS, .desc_mem = desc,
                                    .data_mem = data };
    struct ubj_cache *c;
    assert_int_equal(ubj_cache_create(f->dev, &cfg, &c), 0);
    for (uint32_t i = 0; i < NBUFS; i++) {
        assert_int_equal(desc[i].state, UBJ_BUF_FREE);
        assert_int_equal(desc[i].older, UBJ_NOBUF);
    }
    struct ubj_buf *b = get_ok(c, 12, 0);
    assert_ptr_equal(b->d, &desc[b->idx]);
    assert_ptr_equal(b->data, data + (size_t)b->idx * BS);
    assert_true(pattern_ok(data + (size_t)b->idx * BS, 12, 0));
    ubj_cache_mark_dirty(c, b, UBJ_KIND_DATA, 3);
    assert_int_equal(desc[b->idx].state, UBJ_BUF_DIRTY);
    assert_int_equal(desc[b->idx].blkno, 12);
    assert_int_equal(desc[b->idx].txid, 3);
    ubj_cache_put(c, b);
    ubj_cache_destroy(c);
    free(desc);
    free(data);
}

/* ---- multi-threaded stress ----------------------------------------------- */

#define MT_BLOCKS 48u
#define MT_THREADS 4
#define MT_OPS 20000

struct mt {
    struct ubj_cache *c;
    pthread_mutex_t blk_lock[MT_BLOCKS];   /* the "caller" protecting bytes */
    uint32_t ver[MT_BLOCKS];               /* [blk_lock] */
    int bad;                               /* [atomic] verification failures */
    uint64_t gets;                         /* [atomic] blocks got */
    uint64_t runs;                         /* [atomic] get_run calls */
};

struct mt_arg {
    struct mt *m;
    unsigned seed;
};

/* mt_worker -- random get / verify / maybe modify+dirty / put. */
static void *mt_worker(void *p)
{
    struct mt_arg *a = p;
    struct mt *m = a->m;
    for (int op = 0; op < MT_OPS; op++) {
        uint32_t r = (uint32_t)rand_r(&a->seed);
        uint32_t blk = r % MT_BLOCKS;
        struct ubj_buf *b;
        if ((r >> 24) % 4 == 0 && blk + 1 < MT_BLOCKS) {   /* a run of two */
            struct ubj_buf *run[2];
            int k = ubj_cache_get_run(m->c, blk, 2, run);
            if (k < 1 || k > 2) {
                __atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
                continue;
            }
            __atomic_add_fetch(&m->gets, (uint64_t)k, __ATOMIC_RELAXED);
            __atomic_add_fetch(&m->runs, 1, __ATOMIC_RELAXED);
            for (int i = 0; i < k; i++) {
                pthread_mutex_lock(&m->blk_lock[blk + i]);
                if (run[i]->d->blkno != blk + (uint32_t)i ||
                    !pattern_ok(run[i]->data, blk + (uint32_t)i, m->ver[blk + i]))
                    __atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
                pthread_mutex_unlock(&m->blk_lock[blk + i]);
                ubj_cache_put(m->c, run[i]);
            }
            continue;
        }
        int rc = ubj_cache_get(m->c, blk, 0, &b);
        __atomic_add_fetch(&m->gets, 1, __ATOMIC_RELAXED);
        if (rc != 0 || b->d->blkno != blk) {
            __atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
            continue;
        }
        pthread_mutex_lock(&m->blk_lock[blk]);
        if (!pattern_ok(b->data, blk, m->ver[blk]))
            __atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
        if ((r >> 8) % 4 == 0) {
            m->ver[blk]++;
            pattern_fill(b->data, blk, m->ver[blk]);
            ubj_cache_mark_dirty(m->c, b, UBJ_KIND_DATA, 1);
        }
        pthread_mutex_unlock(&m->blk_lock[blk]);
        ubj_cache_put(m->c, b);
        if ((r >> 16) % 512 == 0 && ubj_cache_writeback(m->c, 0) != 0)
            __atomic_add_fetch(&m->bad, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* several threads on overlapping blocks: no lost update, no stale read. */
static void test_mt_stress(void **state)
{
    struct fix *f = *state;
    struct mt *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->c = f->c;
    for (uint32_t i = 0; i < MT_BLOCKS; i++)
        pthread_mutex_init(&m->blk_lock[i], NULL);
    pthread_t th[MT_THREADS];
    struct mt_arg args[MT_THREADS];
    for (int i = 0; i < MT_THREADS; i++) {
        args[i] = (struct mt_arg){ .m = m, .seed = 1234u + (unsigned)i };
        assert_int_equal(pthread_create(&th[i], NULL, mt_worker, &args[i]), 0);
    }
    for (int i = 0; i < MT_THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(m->bad, 0);
    assert_true(m->runs > 0);
    struct ubj_cache_stats s = cache_stats(f->c);
    assert_int_equal(s.hits + s.misses, m->gets);
    assert_true(s.evictions > 0);
    assert_true(s.writeback_blocks > 0);
    assert_int_equal(ubj_cache_writeback(f->c, UBJ_WB_FLUSH), 0);
    assert_int_equal(cache_stats(f->c).dirty, 0);
    for (uint32_t blk = 0; blk < MT_BLOCKS; blk++) {
        assert_true(dev_block_ok(f->dev, blk, m->ver[blk]));
        pthread_mutex_destroy(&m->blk_lock[blk]);
    }
    free(m);
}

/* ---- runs (ubj_cache_get_run) -------------------------------------------- */

/* get_run that must return k buffers, blocks blk.. with version 0. */
static void run_ok(struct ubj_cache *c, uint64_t blk, uint32_t n, int k,
                   struct ubj_buf **out)
{
    assert_int_equal(ubj_cache_get_run(c, blk, n, out), k);
    for (int i = 0; i < k; i++) {
        assert_int_equal(out[i]->d->blkno, blk + (uint64_t)i);
        assert_true(out[i]->flags & UBJ_BUF_LOADED);
        assert_int_equal(out[i]->d->state, UBJ_BUF_CLEAN);
    }
}

/* run_put -- drop k buffers. */
static void run_put(struct ubj_cache *c, struct ubj_buf **b, int k)
{
    for (int i = 0; i < k; i++)
        ubj_cache_put(c, b[i]);
}

/* a cold run is one device read of all its blocks, capped at 1/8 of the
 * buffers (NBUFS 16: 2); a cached block ends a run of misses, a missing
 * one a run of hits; the newest cached version wins over the device's. */
static void test_run(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *b[UBJ_CACHE_RUN_MAX];
    ubj_bdev_stats_reset(f->dev);
    run_ok(f->c, 10, 8, 2, b);                 /* capped: NBUFS / 8 */
    assert_true(pattern_ok(b[0]->data, 10, 0) && pattern_ok(b[1]->data, 11, 0));
    assert_int_equal(dev_stats(f->dev).reads, 1);
    assert_int_equal(dev_stats(f->dev).bytes_read, 2 * BS);
    assert_int_equal(cache_stats(f->c).run_reads, 1);
    assert_int_equal(cache_stats(f->c).misses, 2);
    run_put(f->c, b, 2);
    run_ok(f->c, 10, 2, 2, b);                 /* all cached: no I/O */
    assert_int_equal(dev_stats(f->dev).reads, 1);
    assert_int_equal(cache_stats(f->c).hits, 2);
    run_put(f->c, b, 2);
    dirty_block(f->c, 21, 7, UBJ_KIND_DATA);   /* 20 missing, 21 newer */
    ubj_bdev_stats_reset(f->dev);
    run_ok(f->c, 20, 2, 1, b);                 /* the misses end at 21 */
    assert_int_equal(dev_stats(f->dev).reads, 1);
    run_put(f->c, b, 1);
    assert_int_equal(ubj_cache_get_run(f->c, 21, 2, b), 1);   /* hits end at 22 */
    assert_true(pattern_ok(b[0]->data, 21, 7));
    assert_int_equal(b[0]->d->state, UBJ_BUF_DIRTY);
    assert_int_equal(dev_stats(f->dev).reads, 1);
    run_put(f->c, b, 1);
    run_ok(f->c, 1023, 1, 1, b);               /* the last block */
    run_put(f->c, b, 1);
    assert_int_equal(ubj_cache_get_run(f->c, 1023, 2, b), -EINVAL);
    assert_int_equal(ubj_cache_get_run(f->c, 5, 0, b), -EINVAL);
    assert_int_equal(ubj_cache_get_run(f->c, 1024, 1, b), -EINVAL);
}

/* a run over a big cache: the adjacent-buffer read and the bounce read
 * both bring the device's bytes, one request each. */
static void test_run_big(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_cache *c;
    struct ubj_buf *b[UBJ_CACHE_RUN_MAX];
    assert_int_equal(ubj_bdev_ram_create(4096, &dev), 0);
    dev_init(dev, 4096);
    struct ubj_cache_config cfg = { .nbufs = 4096 };
    assert_int_equal(ubj_cache_create(dev, &cfg, &c), 0);
    ubj_bdev_stats_reset(dev);
    run_ok(c, 100, 1000, (int)UBJ_CACHE_RUN_MAX, b);   /* the cap */
    for (uint32_t i = 0; i < UBJ_CACHE_RUN_MAX; i++)
        assert_true(pattern_ok(b[i]->data, 100 + i, 0));
    assert_int_equal(dev_stats(dev).reads, 1);
    run_put(c, b, (int)UBJ_CACHE_RUN_MAX);
    ubj_cache_destroy(c);
    /* 64 buffers full of blocks 0..63, the odd ones held: a run of 8
     * (the cap) gets every other buffer of the pool, read through the
     * bounce buffer */
    cfg.nbufs = 64;
    assert_int_equal(ubj_cache_create(dev, &cfg, &c), 0);
    struct ubj_buf *held[64];
    for (uint64_t blk = 0; blk < 64; blk++)
        held[blk] = get_ok(c, blk, 0);
    for (uint64_t blk = 0; blk < 64; blk += 2)
        ubj_cache_put(c, held[blk]);
    ubj_bdev_stats_reset(dev);
    run_ok(c, 3000, 64, 8, b);
    for (uint32_t i = 0; i < 8; i++) {
        assert_true(pattern_ok(b[i]->data, 3000 + i, 0));
        if (i > 0)
            assert_ptr_not_equal(b[i]->data, b[i - 1]->data + BS);
    }
    assert_int_equal(dev_stats(dev).reads, 1);
    run_put(c, b, 8);
    for (uint64_t blk = 1; blk < 64; blk += 2)
        ubj_cache_put(c, held[blk]);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(dev);
}

/* a run ends early rather than wait for, or fail on, buffers it holds
 * itself: with all but one buffer held, a run of 2 (the cap) is 1. */
static void test_run_short(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *held[NBUFS - 1], *b[2];
    for (uint32_t i = 0; i < NBUFS - 1; i++)
        held[i] = get_ok(f->c, 300 + i, 0);
    ubj_bdev_stats_reset(f->dev);
    run_ok(f->c, 50, 2, 1, b);
    assert_true(pattern_ok(b[0]->data, 50, 0));
    assert_int_equal(dev_stats(f->dev).reads, 1);
    run_put(f->c, b, 1);
    for (uint32_t i = 0; i < NBUFS - 1; i++)
        ubj_cache_put(f->c, held[i]);
}

/* a run whose read fails: -EIO, none of it cached, no buffer held. */
static void test_run_eio(void **state)
{
    struct fix *f = *state;
    struct ubj_buf *b[4];
    assert_int_equal(ubj_bdev_fault_arm(f->dev, UBJ_FAULT_READ, 1, 0, 0), 0);
    assert_int_equal(ubj_cache_get_run(f->c, 40, 2, b), -EIO);
    assert_false(is_cached(f->c, 40));
    assert_false(is_cached(f->c, 41));
    run_ok(f->c, 40, 2, 2, b);
    assert_true(pattern_ok(b[0]->data, 40, 0) && pattern_ok(b[1]->data, 41, 0));
    run_put(f->c, b, 2);
    struct ubj_buf *held[NBUFS];
    for (uint32_t i = 0; i < NBUFS; i++)
        held[i] = get_ok(f->c, 300 + i, 0);
    for (uint32_t i = 0; i < NBUFS; i++)
        ubj_cache_put(f->c, held[i]);
}

/* ---- concurrent miss on one block ---------------------------------------- */

struct same_arg {
    struct ubj_cache *c;
    pthread_barrier_t *bar;
    struct ubj_buf *b;
    int rc;
};

/* same_worker -- wait for the other thread, then get block 42. */
static void *same_worker(void *p)
{
    struct same_arg *a = p;
    pthread_barrier_wait(a->bar);
    a->rc = ubj_cache_get(a->c, 42, 0, &a->b);
    return NULL;
}

/* two threads missing on the same block: one reads, the other waits for
 * that read and gets the same buffer. */
static void test_concurrent_miss(void **state)
{
    (void)state;
    struct rec_bdev *r = rec_create(1024);
    struct fix *f = fix_open(&r->base);
    r->read_delay_us = 100000;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    struct same_arg a[2] = { { .c = f->c, .bar = &bar }, { .c = f->c, .bar = &bar } };
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, same_worker, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(a[0].rc, 0);
    assert_int_equal(a[1].rc, 0);
    assert_ptr_equal(a[0].b, a[1].b);
    assert_true(pattern_ok(a[0].b->data, 42, 0));
    assert_int_equal(dev_stats(f->dev).reads, 1);
    struct ubj_cache_stats s = cache_stats(f->c);
    assert_int_equal(s.misses, 1);
    assert_int_equal(s.hits, 1);
    ubj_cache_put(f->c, a[0].b);
    ubj_cache_put(f->c, a[1].b);
    void *st = f;
    teardown(&st);
}

/* ---- random single-thread model ------------------------------------------ */

#define RM_BUFS 256u
#define RM_BLOCKS 2048u

/* a bigger cache under random reads, writes, write-backs, invalidations
 * and forgets of clean blocks, checked against a model of every block's
 * version; the device matches the model after a final write-back. */
static void test_random_model(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    assert_int_equal(ubj_bdev_ram_create(RM_BLOCKS, &dev), 0);
    dev_init(dev, RM_BLOCKS);
    struct ubj_cache_config cfg = { .nbufs = RM_BUFS };
    struct ubj_cache *c;
    assert_int_equal(ubj_cache_create(dev, &cfg, &c), 0);
    uint32_t *ver = calloc(RM_BLOCKS, sizeof *ver);
    assert_non_null(ver);
    unsigned seed = 77;
    uint64_t gets = 0;
    for (int op = 0; op < 100000; op++) {
        uint32_t r = (uint32_t)rand_r(&seed);
        /* skewed: half the accesses go to 1/8 of the blocks */
        uint32_t blk = (r & 1) ? (r >> 1) % (RM_BLOCKS / 8) : (r >> 1) % RM_BLOCKS;
        uint32_t what = (r >> 20) % 1000;
        if (what < 2) {
            assert_int_equal(ubj_cache_writeback(c, what ? UBJ_WB_FLUSH : 0), 0);
            continue;
        }
        if (what < 3) {
            ubj_cache_invalidate(c);
            continue;
        }
        struct ubj_buf *b = get_ok(c, blk, 0);
        gets++;
        assert_true(pattern_ok(b->data, blk, ver[blk]));
        if (what < 300) {
            pattern_fill(b->data, blk, ++ver[blk]);
            ubj_cache_mark_dirty(c, b, (r >> 30) & 1 ? UBJ_KIND_META : UBJ_KIND_DATA, 1);
        }
        bool clean = b->d->state == UBJ_BUF_CLEAN;
        ubj_cache_put(c, b);
        if (what >= 990 && clean)
            ubj_cache_forget(c, blk);   /* the device has this version */
    }
    struct ubj_cache_stats s = cache_stats(c);
    assert_int_equal(s.hits + s.misses, gets);
    /* LRU-like replacement on this mix hits ~30% (Che's approximation:
     * the hot eighth is about half resident) */
    assert_true(s.hits > gets / 5);
    assert_true(s.evictions > 1000);
    assert_int_equal(ubj_cache_writeback(c, UBJ_WB_FLUSH), 0);
    for (uint32_t blk = 0; blk < RM_BLOCKS; blk++)
        assert_true(dev_block_ok(dev, blk, ver[blk]));
    free(ver);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(dev);
}

/* main -- run the suite. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_args, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_hits_misses, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_get_after_put, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_clock, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_dirty_eviction, setup_ram, teardown),
        cmocka_unit_test(test_writeback_order),
        cmocka_unit_test_setup_teardown(test_forget, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_noread, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_read_eio, setup_fault, teardown),
        cmocka_unit_test_setup_teardown(test_write_eio, setup_fault, teardown),
        cmocka_unit_test_setup_teardown(test_enobufs, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_states, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_supplied_memory, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_mt_stress, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_run, setup_ram, teardown),
        cmocka_unit_test(test_run_big),
        cmocka_unit_test_setup_teardown(test_run_short, setup_ram, teardown),
        cmocka_unit_test_setup_teardown(test_run_eio, setup_fault, teardown),
        cmocka_unit_test(test_concurrent_miss),
        cmocka_unit_test(test_random_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
