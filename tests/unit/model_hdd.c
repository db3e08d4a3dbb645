/*
 * tests/unit/model_hdd.c -- the HDD model (src/dev/model_hdd.c) against
 * figures computed by hand from the HP C2249A parameters (DiskSim):
 * seeks of d cylinders in each part of the seek curve, a full-rotation
 * wait, a head switch with track skew, zoned transfer rates, the write
 * cache and its flush, read-ahead hits, and determinism.
 *
 * T_rot = 60e9 / 5400 = 11111111.1 ns; zone 1 has 96 sectors per track
 * and 17 surfaces, so cylinder c starts at LBN c * 1632 = block c * 204.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"
#include "ubjfs/ubjfs.h"

#define TROT (60e9 / 5400.0)
#define BLOCKS_PER_CYL 204u     /* zone 1: 17 * 96 / 8 */
/* the bare mechanism: no controller overhead, bus or read-ahead */
#define BARE "hp_c2249a,overhead_read_ms=0,overhead_write_ms=0,overhead_hit_ms=0," \
             "overhead_flush_ms=0,bus_mb_s=0,readahead_sectors=0"

static unsigned char buf[64 * UBJ_BLOCK_SIZE];

/* new_hdd -- an HDD model over a RAM device of nblocks. */
static struct ubj_bdev *new_hdd(const char *profile, uint64_t nblocks)
{
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(nblocks, &ram), 0);
    int rc = ubj_model_create("hdd", profile, NULL, ram, &d);
    if (rc != 0)
        fail_msg("ubj_model_create(hdd, %s) = %d: %s", profile, rc, ubj_errormsg());
    return d;
}

/* stats -- the model's statistics. */
static struct ubj_model_stats stats(struct ubj_bdev *d)
{
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    return st;
}

/* assert_near -- |got - want| <= tol (ns or any unit). */
static void assert_near(double got, double want, double tol, const char *what)
{
    if (fabs(got - want) > tol)
        fail_msg("%s = %.3f, want %.3f (+-%.3f)", what, got, want, tol);
}

/* test_seek_curve -- seeks of 5, 100 and 500 cylinders from cylinder 0. */
static void test_seek_curve(void **state)
{
    (void)state;
    static const struct { uint64_t d; double ms; } cases[] = {
        { 5, 4.27 },                      /* first-ten table, 5th entry */
        { 100, 3.81 + 0.33 * 10.0 },      /* short: a + b*sqrt(100) = 7.11 */
        { 500, 7.75 + 0.0059 * 500.0 },   /* long: c + e*500 = 10.7 */
        { 299, 3.81 + 0.33 * 17.291616 }, /* last short-seek distance */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ubj_bdev *d = new_hdd(BARE, 2051u * BLOCKS_PER_CYL);
        assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
        assert_int_equal(ubj_model_stats_reset(d), 0);
        assert_int_equal(ubj_bdev_read(d, cases[i].d * BLOCKS_PER_CYL, 1, buf), 0);
        struct ubj_model_stats st = stats(d);
        assert_int_equal(st.seeks, 1);
        assert_near((double)st.seek_ns, cases[i].ms * 1e6, 1.0, "seek_ns");
        ubj_bdev_destroy(d);
    }
}

/* test_seek_service -- a 500-cylinder seek's whole service time, by hand:
 * first read ends at 8/96 T = 925926 ns (head at angle 1/12); seek 10.7 ms;
 * cylinder 500 starts 500 * (16*14 + 32) mod 96 = 32 sectors round (angle
 * 1/3); the wait is 3188888.8 ns; transfer 925925.9 ns. */
static void test_seek_service(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd(BARE, 2051u * BLOCKS_PER_CYL);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.service_ns, 925926);
    assert_int_equal(st.rotation_ns, 0);
    assert_int_equal(ubj_clock_now(ubj_model_clock(d)), 925926);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 500u * BLOCKS_PER_CYL, 1, buf), 0);
    st = stats(d);
    assert_near((double)st.rotation_ns, 3188888.8, 2.0, "rotation_ns");
    assert_near((double)st.service_ns, 14814815.0, 2.0, "service_ns");
    assert_int_equal(st.queue_ns, 0);
    ubj_bdev_destroy(d);
}

/* test_full_rotation -- re-reading the sector just read costs exactly one
 * revolution whatever the controller overhead (the full profile). */
static void test_full_rotation(void **state)
{
    (void)state;
    const char *profiles[] = { BARE, "hp_c2249a,readahead_sectors=0" };
    for (size_t i = 0; i < 2; i++) {
        struct ubj_bdev *d = new_hdd(profiles[i], 4096);
        assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
        assert_int_equal(ubj_model_stats_reset(d), 0);
        assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
        struct ubj_model_stats st = stats(d);
        assert_near((double)st.service_ns, TROT, 2.0, "service_ns");
        assert_int_equal(st.seeks, 0);
        ubj_bdev_destroy(d);
    }
}

/* test_head_switch -- blocks 11-12 = sectors 88..103: 8 on head 0, a head
 * switch (0.89 ms), then 8 on head 1 whose track starts 14 sectors later:
 * wait 88/96 T, then 14/96 T - 0.89 ms. */
static void test_head_switch(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd(BARE, 4096);
    assert_int_equal(ubj_bdev_read(d, 11, 2, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.seeks, 1);
    assert_int_equal(st.seek_ns, 890000);
    assert_near((double)st.rotation_ns, 88.0 / 96 * TROT + 14.0 / 96 * TROT - 890000,
                2.0, "rotation_ns");
    assert_near((double)st.transfer_ns, 16.0 / 96 * TROT, 2.0, "transfer_ns");
    assert_near((double)st.service_ns, 13657407.4, 2.0, "service_ns");
    ubj_bdev_destroy(d);
}

/* test_zones -- one full track takes one revolution in every zone, but an
 * outer track holds 96 sectors and an inner one 56 (zoned recording).
 * Zone 8 starts at LBN 149624 * 17 = 2543608 = block 317951. */
static void test_zones(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd(BARE, 317951u + 64);
    assert_int_equal(ubj_bdev_read(d, 0, 12, buf), 0);       /* 96 sectors */
    struct ubj_model_stats st = stats(d);
    assert_near((double)st.transfer_ns, TROT, 2.0, "outer track");
    assert_int_equal(st.bytes_read, 96 * 512);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 317951, 7, buf), 0);   /* 56 sectors */
    st = stats(d);
    assert_near((double)st.transfer_ns, TROT, 2.0, "inner track");
    assert_int_equal(st.bytes_read, 56 * 512);
    assert_int_equal(st.seeks, 1);
    assert_near((double)st.seek_ns, (7.75 + 0.0059 * 1794) * 1e6, 1.0, "seek to zone 8");
    ubj_bdev_destroy(d);
}

/* test_write_cache -- with the write cache a write completes after the
 * command overhead and the bus (0.87436 ms + 4096 B / 10 MB/s); the flush
 * destages it: overhead, wait for sector 0 (T - 2.15832 ms), transfer. */
static void test_write_cache(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd("hp_c2249a,write_cache=1", 4096);
    memset(buf, 0x5a, UBJ_BLOCK_SIZE);
    assert_int_equal(ubj_bdev_write(d, 0, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.service_ns, 1283960);
    assert_int_equal(st.destages, 0);
    assert_int_equal(st.seek_ns + st.rotation_ns + st.transfer_ns, 0);
    /* a read of cached data is a buffer hit */
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    st = stats(d);
    assert_int_equal(st.buffer_hits, 1);
    assert_int_equal(ubj_bdev_flush(d), 0);
    st = stats(d);
    assert_int_equal(st.destages, 1);
    assert_int_equal(st.flushes, 1);
    ubj_bdev_destroy(d);

    /* write then flush at once: the hand-computed figures above */

    d = new_hdd("hp_c2249a,write_cache=1", 4096);
    assert_int_equal(ubj_bdev_write(d, 0, 1, buf), 0);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    st = stats(d);
    assert_near((double)st.service_ns, 10753077.0, 2.0, "flush service");
    assert_int_equal(st.destages, 1);
    /* a second flush has nothing to destage */
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    st = stats(d);
    assert_int_equal(st.service_ns, 874360);
    assert_int_equal(st.destages, 0);
    /* the data itself went to the lower device unchanged */
    memset(buf, 0, UBJ_BLOCK_SIZE);
    assert_int_equal(ubj_bdev_read(d->lower, 0, 1, buf), 0);
    assert_int_equal(buf[0], 0x5a);
    ubj_bdev_destroy(d);
}

/* test_write_cache_full -- a cache of 8 KiB (16 sectors) holds two blocks;
 * the third write must destage the oldest first. */
static void test_write_cache_full(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd("hp_c2249a,write_cache=1,write_cache_kib=8", 4096);
    assert_int_equal(ubj_bdev_write(d, 100, 1, buf), 0);
    assert_int_equal(ubj_bdev_write(d, 300, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.destages, 0);
    assert_int_equal(ubj_bdev_write(d, 500, 1, buf), 0);
    st = stats(d);
    assert_int_equal(st.destages, 1);
    assert_true(st.transfer_ns > 0);
    ubj_bdev_destroy(d);
}

/* test_readahead -- after a miss the next sequential block streams in:
 * a buffer hit far cheaper than a revolution. */
static void test_readahead(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd("hp_c2249a", 4096);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    for (uint64_t b = 1; b < 8; b++)
        assert_int_equal(ubj_bdev_read(d, b, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.buffer_hits, 7);
    assert_int_equal(st.seeks, 0);
    assert_true(st.service_max_ns < TROT / 4);
    /* 128 KiB requests in sequence stream at the media rate: a track of
     * 96 sectors per turn plus the 14-sector track skew */
    assert_int_equal(ubj_model_stats_reset(d), 0);
    for (uint64_t b = 8; b < 8 + 10 * 32; b += 32)
        assert_int_equal(ubj_bdev_read(d, b, 32, buf), 0);
    st = stats(d);
    assert_int_equal(st.buffer_hits, 10);
    double per_req = 256 * TROT * (96 + 14) / (96.0 * 96.0);
    assert_near((double)st.elapsed_ns, 10 * per_req, per_req, "10 x 128 KiB");
    /* a random read far away is a miss again */
    assert_int_equal(ubj_bdev_read(d, 3000, 1, buf), 0);
    st = stats(d);
    assert_int_equal(st.buffer_hits, 10);
    assert_int_equal(st.seeks, 1);
    ubj_bdev_destroy(d);
}

/* run_workload -- a fixed pseudo-random mix on a fresh model; its stats. */
static void run_workload(const char *profile, struct ubj_model_stats *out)
{
    struct ubj_bdev *d = new_hdd(profile, 20000);
    uint64_t x = 12345;
    for (int i = 0; i < 400; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t b = (x >> 33) % 19990;
        uint32_t n = 1 + (uint32_t)((x >> 20) % 8);
        if ((x >> 10) % 3 == 0)
            assert_int_equal(ubj_bdev_write(d, b, n, buf), 0);
        else
            assert_int_equal(ubj_bdev_read(d, b, n, buf), 0);
        if (i % 50 == 49)
            assert_int_equal(ubj_bdev_flush(d), 0);
        if (i % 7 == 0)
            ubj_clock_advance(ubj_model_clock(d), 3000000);
    }
    assert_int_equal(ubj_model_stats_get(d, out), 0);
    ubj_bdev_destroy(d);
}

/* test_determinism -- identical runs give identical statistics. */
static void test_determinism(void **state)
{
    (void)state;
    const char *profiles[] = { "hp_c2249a", "hp_c2249a,write_cache=1",
                               "modern7200" };
    for (size_t i = 0; i < 3; i++) {
        struct ubj_model_stats a, b;
        run_workload(profiles[i], &a);
        run_workload(profiles[i], &b);
        assert_memory_equal(&a, &b, sizeof a);
        assert_true(a.energy_j > 0);
        assert_true(a.busy_ns > 0 && a.busy_ns <= a.elapsed_ns);
        if (i == 1)
            assert_true(a.destages > 0);
    }
}

/* test_modern_profile -- the modern drive: 7200 rpm, skews computed from
 * the switch times, idle power counted. */
static void test_modern_profile(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_hdd("modern7200,readahead_sectors=0,write_cache=0", 4096);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_near((double)st.service_ns, 60e9 / 7200, 2.0, "one turn at 7200 rpm");
    ubj_clock_advance(ubj_model_clock(d), 1000000000);
    st = stats(d);
    assert_near(st.energy_idle_j, 7.4, 0.1, "1 s idle at 7.4 W");
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seek_curve),
        cmocka_unit_test(test_seek_service),
        cmocka_unit_test(test_full_rotation),
        cmocka_unit_test(test_head_switch),
        cmocka_unit_test(test_zones),
        cmocka_unit_test(test_write_cache),
        cmocka_unit_test(test_write_cache_full),
        cmocka_unit_test(test_readahead),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_modern_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
