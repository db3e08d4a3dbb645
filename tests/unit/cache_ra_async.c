/*
 * tests/unit/cache_ra_async.c -- asynchronous read-ahead
 * (ubj_cache_readahead_async, src/cache/cache.c; issue 19 item 3), on the
 * virtual clock:
 *  - a window submitted asynchronously moves no time; a get before its
 *    request's modeled completion waits on the clock until then (a late
 *    hit), one after it does not; the data is the device's; broken
 *    variant ra-no-ready (the get does not wait) is caught;
 *  - over a request queue the window stays queued until someone waits:
 *    the get drives the queue and raises the request (time-limited ->
 *    time-critical); destroying the cache with a window queued drains it;
 *  - on raw NAND the submitter is charged the whole request (MTD's reads
 *    occupy the CPU: polled ready line, programmed I/O): nothing overlaps;
 *  - read-ahead takes only free or clean unreferenced buffers: a cache
 *    whose buffers are all dirty or referenced reads nothing ahead;
 *  - on the real clock a queue's dispatcher thread completes the windows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"
#include "ubjfs/queue.h"
#include "cache/cache.h"

#define BS 4096u
#define DEVBLOCKS 8192u

/* open_dev_clock -- spec over a RAM device with a new clock of `kind`. */
static struct ubj_bdev *open_dev_clock(const char *spec, enum ubj_clock_kind kind)
{
    struct ubj_spec_opts o = { .nblocks = DEVBLOCKS, .clock_kind = kind };
    struct ubj_bdev *d;
    assert_int_equal(ubj_bdev_open_spec(spec, NULL, &o, &d), 0);
    return d;
}

/* open_dev -- spec over a RAM device (virtual clock). */
static struct ubj_bdev *open_dev(const char *spec)
{
    struct ubj_spec_opts o = { .nblocks = DEVBLOCKS };
    struct ubj_bdev *d;
    assert_int_equal(ubj_bdev_open_spec(spec, NULL, &o, &d), 0);
    return d;
}

/* now_of -- the model's clock under d, ns. */
static uint64_t now_of(struct ubj_bdev *d)
{
    struct ubj_clock *clk = ubj_model_clock(ubj_model_find(d));
    assert_non_null(clk);
    return ubj_clock_now(clk);
}

/* fill -- blocks [b, b + n) of d hold byte (block & 0xff) each. */
static void fill(struct ubj_bdev *d, uint64_t b, uint32_t n)
{
    uint8_t buf[BS];
    for (uint32_t k = 0; k < n; k++) {
        memset(buf, (int)((b + k) & 0xff), BS);
        assert_int_equal(ubj_bdev_write(d, b + k, 1, buf), 0);
    }
    assert_int_equal(ubj_bdev_flush(d), 0);
}

/* get_check -- get blkno, check its bytes, put it. */
static void get_check(struct ubj_cache *c, uint64_t blkno)
{
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_get(c, blkno, 0, &b), 0);
    for (uint32_t i = 0; i < BS; i += 511)
        assert_int_equal(b->data[i], blkno & 0xff);
    ubj_cache_put(c, b);
}

/*
 * ready_respected -- on ssd:sata, 8 blocks read ahead asynchronously: the
 * submission moves no time and loads them; the first get is late and ends
 * at the request's completion (later than the submission by at least the
 * device's read latency); the second is not late and moves no time.
 * Returns whether the first get waited (false under ra-no-ready).
 */
static bool ready_respected(void)
{
    struct ubj_bdev *d = open_dev("ssd:sata");
    fill(d, 100, 8);
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 64 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    uint64_t t0 = now_of(d);
    assert_int_equal(ubj_cache_readahead_async(c, 100, 8, 103, t0), 8);
    assert_true(now_of(d) == t0);                       /* nobody waited */
    assert_int_equal(ubj_cache_ra_probe(c, 103, false),
                     UBJ_RA_CACHED | UBJ_RA_MARKED | UBJ_RA_UNUSED);   /* never got yet */
    get_check(c, 100);
    uint64_t t1 = now_of(d);
    get_check(c, 101);
    assert_true(now_of(d) == t1);                       /* ready by now */
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.ra_reads, 1);
    assert_int_equal(cs.ra_async, 1);
    assert_int_equal(cs.ra_blocks, 8);
    assert_true(cs.ra_late >= 1);   /* counted either way (2 if not waited) */
    assert_int_equal(cs.misses, 0);
    bool waited = t1 > t0 + 50000;                      /* read_lat 92 us */
    assert_int_equal(cs.ra_late_ns, t1 - t0);         /* the wait, counted */
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
    return waited;
}

static void test_ready_time(void **st)
{
    (void)st;
    assert_true(ready_respected());
}

/* unbreak -- teardown: the broken variant off, even after a failure
 * (a switch left on would break the later tests). */
static int unbreak(void **st)
{
    (void)st;
#if UBJ_TEST_HOOKS
    ubj_cache_test_break_ra_ready(false);
#endif
    return 0;
}

/* test_broken_ready -- ra-no-ready: the first get does not wait. */
static void test_broken_ready(void **st)
{
    (void)st;
#if UBJ_TEST_HOOKS
    ubj_cache_test_break_ra_ready(true);
    assert_false(ready_respected());
#else
    skip();   /* the broken variant is compiled into test builds only */
#endif
}

/*
 * test_queue_raise -- over queue:fcfs on the virtual clock the window
 * waits in the queue (its blocks are being read: cached, not loaded, no
 * time moved); a get drives the queue, raises the request to
 * time-critical, is late and gets the device's bytes.  A second window
 * left queued is drained by ubj_cache_destroy (ASan: nothing leaked).
 */
static void test_queue_raise(void **st)
{
    (void)st;
    struct ubj_bdev *d = open_dev("queue:fcfs@ssd:sata");
    fill(d, 200, 16);
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 64 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    uint64_t t0 = now_of(d);
    assert_int_equal(ubj_cache_readahead_async(c, 200, 8, UINT64_MAX, t0), 8);
    assert_true(now_of(d) == t0);
    struct ubj_queue_stats qs;
    assert_int_equal(ubj_queue_stats_get(ubj_queue_find(d), &qs), 0);
    assert_int_equal(qs.cls[UBJ_CRIT_LIMITED].completed, 0);   /* held */
    get_check(c, 203);
    assert_true(now_of(d) > t0);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.ra_late, 1);
    assert_int_equal(cs.io_raised, 1);
    assert_int_equal(ubj_queue_stats_get(ubj_queue_find(d), &qs), 0);
    assert_int_equal(qs.cls[UBJ_CRIT_CRITICAL].raised, 1);
    for (uint64_t b = 200; b < 208; b++)
        get_check(c, b);
    assert_int_equal(ubj_cache_readahead_async(c, 208, 8, UINT64_MAX, t0), 8);
    ubj_cache_destroy(c);   /* drains the queued window first */
    ubj_bdev_destroy(d);
}

/*
 * test_nand_cpu_share -- nand:slc (2 KiB pages: 2 page reads per 4 KiB
 * block): an asynchronous window of 4 blocks charges its submitter the
 * whole request, at least the driver's 8 x 52 us; the get is not late.
 */
static void test_nand_cpu_share(void **st)
{
    (void)st;
    struct ubj_bdev *d = open_dev("nand:slc");
    fill(d, 40, 4);
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 64 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    uint64_t t0 = now_of(d);
    assert_int_equal(ubj_cache_readahead_async(c, 40, 4, UINT64_MAX, t0), 4);
    uint64_t t1 = now_of(d);
    assert_true(t1 - t0 > 8u * 52000u);   /* driver, tR and the bus */
    get_check(c, 40);
    assert_true(now_of(d) == t1);         /* ready: the submitter waited */
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.ra_late, 0);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
}

/*
 * test_no_dirty_victims -- a cache of 64 buffers, 32 dirty and 32
 * referenced: an asynchronous window finds no buffer it may take and
 * reads nothing (no write-back, nothing evicted); once the references go,
 * it takes clean buffers only (8: a call's share of the cache), and the
 * dirty ones stay.
 */
static void test_no_dirty_victims(void **st)
{
    (void)st;
    struct ubj_bdev *d = open_dev("ssd:sata");
    fill(d, 300, 16);
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 64 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    struct ubj_buf *held[32];
    for (unsigned k = 0; k < 32; k++) {
        struct ubj_buf *b;
        assert_int_equal(ubj_cache_get(c, 1000 + k, UBJ_GET_NOREAD, &b), 0);
        ubj_cache_wait_stable(c, b);
        memset(b->data, 7, BS);
        ubj_cache_mark_dirty(c, b, UBJ_KIND_DATA, 1);
        ubj_cache_put(c, b);
        assert_int_equal(ubj_cache_get(c, 2000 + k, 0, &held[k]), 0);
    }
    assert_int_equal(ubj_cache_readahead_async(c, 300, 8, UINT64_MAX, 0), 0);
    for (unsigned k = 0; k < 32; k++)
        ubj_cache_put(c, held[k]);
    assert_int_equal(ubj_cache_readahead_async(c, 300, 16, UINT64_MAX, 0), 8);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.dirty, 32);
    assert_int_equal(cs.writeback_blocks, 0);
    for (uint64_t b = 300; b < 308; b++)
        get_check(c, b);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
}

/*
 * test_real_clock_queue -- on the real clock behind queue:clook the
 * queue's dispatcher thread completes the windows (cache_ra_done in
 * another thread; scripts/tsan runs this file too): 64 windows of 8
 * blocks, each got back while or after it is read, every byte the
 * device's, and a last one left in flight at destroy.
 */
static void test_real_clock_queue(void **st)
{
    (void)st;
    struct ubj_bdev *d = open_dev_clock("queue:clook@ssd:sata", UBJ_CLOCK_REAL);
    fill(d, 0, 520);
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 128 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    for (uint64_t w = 0; w < 64; w++) {
        int k = ubj_cache_readahead_async(c, w * 8, 8, w * 8 + 4, now_of(d));
        assert_true(k == 8 || k == 0);   /* 0: its buffers all still busy */
        for (uint64_t b = w * 8; b < w * 8 + 8; b++)
            get_check(c, b);
    }
    assert_int_equal(ubj_cache_readahead_async(c, 512, 8, UINT64_MAX, now_of(d)), 8);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_time),
        cmocka_unit_test_teardown(test_broken_ready, unbreak),
        cmocka_unit_test(test_queue_raise),
        cmocka_unit_test(test_nand_cpu_share),
        cmocka_unit_test(test_no_dirty_victims),
        cmocka_unit_test(test_real_clock_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
