/*
 * tests/unit/model_ssd.c -- the SSD-family model (src/dev/model_ssd.c)
 * against hand-computed figures from profiles/ssd_sata.txt: a QD1 read,
 * internal parallelism (10 channels overlap, the 11th request queues, the
 * host link serializes transfers), the write cache, its overflow and the
 * flush, energy; and that every SSD profile loads.
 *
 * sata: read 4 KiB = 92.4 us + 4096 B / 540 MB/s (7585 ns) = 99985 ns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"
#include "ubjfs/ubjfs.h"
#include "testutil.h"

static unsigned char buf[512 * UBJ_BLOCK_SIZE];

/* new_ssd -- an SSD model over a RAM device of 8192 blocks. */
static struct ubj_bdev *new_ssd(const char *profile)
{
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(8192, &ram), 0);
    int rc = ubj_model_create("ssd", profile, NULL, ram, &d);
    if (rc != 0)
        fail_msg("ubj_model_create(ssd, %s) = %d: %s", profile, rc, ubj_errormsg());
    return d;
}

/* stats -- the model's statistics. */
static struct ubj_model_stats stats(struct ubj_bdev *d)
{
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    return st;
}

/* test_qd1_read -- one 4 KiB read: latency + transfer; energy. */
static void test_qd1_read(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_ssd("sata");
    assert_int_equal(ubj_bdev_read(d, 7, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.service_ns, 99985);
    assert_int_equal(st.busy_ns, 99985);
    assert_int_equal(ubj_clock_now(ubj_model_clock(d)), 99985);
    double e = 2.55 * 99985e-9;
    if (fabs(st.energy_active_j - e) > 1e-12)
        fail_msg("energy %.12g J, want %.12g J", st.energy_active_j, e);
    /* 128 KiB: one latency, then 131072 B / 540 MB/s on the link */
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 64, 32, buf), 0);
    st = stats(d);
    assert_int_equal(st.service_ns, 92400 + 242726);
    ubj_bdev_destroy(d);
}

/* test_parallelism -- 11 reads issued at once (async): ten channels start
 * at 0, transfers follow one another on the link; the 11th waits for
 * channel 0 (92.4 us) and ends at 184800 + 7585. */
static void test_parallelism(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_ssd("sata");
    struct ubj_clock *c = ubj_model_clock(d);
    struct ubj_req r[11];
    int done = 0;
    for (int i = 0; i < 11; i++)
        t_submit_async(d, &r[i], UBJ_REQ_READ, (uint64_t)i * 10, 1, buf, &done);
    assert_int_equal(done, 11);
    assert_int_equal(ubj_clock_now(c), 0);           /* nobody waited */
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.async_requests, 11);
    assert_int_equal(st.queue_ns, 92400);             /* only the 11th */
    assert_int_equal(st.response_max_ns, 192385);
    assert_int_equal(ubj_model_wait_idle(d), 0);
    assert_int_equal(ubj_clock_now(c), 192385);
    /* busy: [0, 168250] by the first ten, then the 11th to 192385 */
    assert_int_equal(st.busy_ns, 192385);
    ubj_bdev_destroy(d);
}

/* test_write_cache_flush -- 1 MiB into the cache, then a flush that
 * drains it at media speed: 500 us + 1048576 B / 520 MB/s. */
static void test_write_cache_flush(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_ssd("sata");
    assert_int_equal(ubj_bdev_write(d, 0, 256, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.service_ns, 2016492 + 17100);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    st = stats(d);
    assert_int_equal(st.service_ns, 2516492);
    /* nothing dirty any more: a second flush costs flush_us only */
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    assert_int_equal(stats(d).service_ns, 500000);
    ubj_bdev_destroy(d);
}

/* test_cache_overflow -- a 1 MiB cache: writing 2 MiB makes the write
 * wait for 1 MiB to drain at 520 MB/s. */
static void test_cache_overflow(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_ssd("sata,write_cache_mib=1");
    assert_int_equal(ubj_bdev_write(d, 0, 512, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.service_ns, 4032985 + 17100 + 2016492);
    ubj_bdev_destroy(d);
    d = new_ssd("sata,write_cache=0");
    assert_int_equal(ubj_bdev_write(d, 0, 256, buf), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    st = stats(d);
    assert_int_equal(st.service_ns, 2016492 + 17100 + 500000);
    ubj_bdev_destroy(d);
}

/* test_profiles -- nvme and emmc: QD1 4 KiB latency from the data sheets. */
static void test_profiles(void **state)
{
    (void)state;
    static const struct { const char *p; double us; } cases[] = {
        { "nvme", 1e6 / 19000 }, { "emmc", 1e6 / 11000 }, { "sata", 1e6 / 10000 },
    };
    for (size_t i = 0; i < 3; i++) {
        struct ubj_bdev *d = new_ssd(cases[i].p);
        assert_int_equal(ubj_bdev_read(d, 1, 1, buf), 0);
        double got = (double)stats(d).service_ns / 1e3;
        if (fabs(got - cases[i].us) > 0.1)
            fail_msg("%s QD1 read %.3f us, want %.3f us", cases[i].p, got, cases[i].us);
        ubj_bdev_destroy(d);
    }
}

/* run_mix -- a fixed mix of sync and async requests; the stats. */
static struct ubj_model_stats run_mix(const char *profile)
{
    struct ubj_bdev *d = new_ssd(profile);
    uint64_t x = 42;
    for (int i = 0; i < 600; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t b = (x >> 33) % 8000;
        uint32_t n = 1 + (uint32_t)((x >> 22) % 64);
        bool wr = (x >> 12) % 2;
        if (i % 5 == 0) {   /* asynchronous: v2, nobody waits */
            struct ubj_req r;
            int done = 0;
            t_submit_async(d, &r, wr ? UBJ_REQ_WRITE : UBJ_REQ_READ, b, n, buf, &done);
            assert_int_equal(done, 1);
        } else if (wr) {
            assert_int_equal(ubj_bdev_write(d, b, n, buf), 0);
        } else {
            assert_int_equal(ubj_bdev_read(d, b, n, buf), 0);
        }
        if (i % 64 == 63)
            assert_int_equal(ubj_bdev_flush(d), 0);
    }
    struct ubj_model_stats st = stats(d);
    ubj_bdev_destroy(d);
    return st;
}

/* test_determinism -- identical runs, identical statistics. */
static void test_determinism(void **state)
{
    (void)state;
    const char *profiles[] = { "sata", "nvme", "emmc" };
    for (int i = 0; i < 3; i++) {
        struct ubj_model_stats a = run_mix(profiles[i]), b = run_mix(profiles[i]);
        assert_memory_equal(&a, &b, sizeof a);
        assert_int_equal(a.async_requests, 120);
        assert_true(a.busy_ns <= a.elapsed_ns + a.queue_ns);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qd1_read),
        cmocka_unit_test(test_parallelism),
        cmocka_unit_test(test_write_cache_flush),
        cmocka_unit_test(test_cache_overflow),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
