/*
 * tests/unit/model_core.c -- the clocks (src/dev/clock.c) and the model
 * framework (src/dev/model.c): virtual time, real-time waits, a model on
 * the real clock slowing its caller down by the modeled time,
 * asynchronous (v2) submission and queueing on a single-server device, percentiles, statistics
 * reset, requests failed below the model, a shared clock used by several
 * threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"
#include "ubjfs/ubjfs.h"
#include "testutil.h"

static unsigned char buf[16 * UBJ_BLOCK_SIZE];

/* mono_ns -- CLOCK_MONOTONIC in ns. */
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* new_model -- a model of kind/profile over RAM on clock c (may be NULL). */
static struct ubj_bdev *new_model(const char *kind, const char *profile,
                                  struct ubj_clock *c)
{
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(4096, &ram), 0);
    int rc = ubj_model_create(kind, profile, c, ram, &d);
    if (rc != 0)
        fail_msg("ubj_model_create(%s, %s) = %d: %s", kind, profile, rc,
                 ubj_errormsg());
    return d;
}

/* test_virtual_clock -- time moves only forward and only when told. */
static void test_virtual_clock(void **state)
{
    (void)state;
    struct ubj_clock *c;
    assert_int_equal(ubj_clock_create(UBJ_CLOCK_VIRTUAL, &c), 0);
    assert_int_equal(ubj_clock_kind(c), UBJ_CLOCK_VIRTUAL);
    assert_int_equal(ubj_clock_now(c), 0);
    ubj_clock_wait_until(c, 1000);
    assert_int_equal(ubj_clock_now(c), 1000);
    ubj_clock_wait_until(c, 500);            /* never backwards */
    assert_int_equal(ubj_clock_now(c), 1000);
    ubj_clock_advance(c, 234);
    assert_int_equal(ubj_clock_now(c), 1234);
    uint64_t t0 = mono_ns();
    ubj_clock_wait_until(c, 10ull * 1000000000ull);   /* 10 s, instantly */
    assert_true(mono_ns() - t0 < 100000000ull);
    ubj_clock_put(ubj_clock_get(c));          /* a second reference */
    assert_int_equal(ubj_clock_now(c), 10ull * 1000000000ull);
    ubj_clock_put(c);
    ubj_clock_put(NULL);
    assert_int_equal(ubj_clock_create((enum ubj_clock_kind)7, &c), -EINVAL);
}

/* test_real_clock -- a real wait lasts at least its time, not much more. */
static void test_real_clock(void **state)
{
    (void)state;
    struct ubj_clock *c;
    assert_int_equal(ubj_clock_create(UBJ_CLOCK_REAL, &c), 0);
    uint64_t t0 = mono_ns(), v0 = ubj_clock_now(c);
    ubj_clock_wait_until(c, v0 + 2000000);       /* sleep + spin */
    uint64_t dt = mono_ns() - t0;
    assert_true(ubj_clock_now(c) >= v0 + 2000000);
    assert_true(dt >= 1990000 && dt < 50000000);
    t0 = mono_ns();
    ubj_clock_advance(c, 30000);                 /* spin only */
    dt = mono_ns() - t0;
    assert_true(dt >= 30000 && dt < 20000000);
    ubj_clock_put(c);
}

/* test_real_model -- on the real clock, 5 SLC writes (780.96 us each)
 * take at least 3.9 ms of wall time. */
static void test_real_model(void **state)
{
    (void)state;
    struct ubj_clock *c;
    assert_int_equal(ubj_clock_create(UBJ_CLOCK_REAL, &c), 0);
    struct ubj_bdev *d = new_model("nand", "slc", c);
    ubj_clock_put(c);
    uint64_t t0 = mono_ns();
    for (int i = 0; i < 5; i++)
        assert_int_equal(ubj_bdev_write(d, (uint64_t)i, 1, buf), 0);
    uint64_t dt = mono_ns() - t0;
    if (dt < 5 * 780960ull)
        fail_msg("5 modeled writes took only %llu ns", (unsigned long long)dt);
    assert_true(dt < 5 * 780960ull + 200000000ull);
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.writes, 5);
    assert_true(st.queue_ns < 1000000);
    /* async on the real clock: returns at once, the device stays busy */
    t0 = mono_ns();
    struct ubj_req r[5];
    int done = 0;
    for (int i = 0; i < 5; i++)
        t_submit_async(d, &r[i], UBJ_REQ_WRITE, (uint64_t)i, 1, buf, &done);
    assert_true(mono_ns() - t0 < 5 * 780960ull);
    assert_int_equal(done, 5);   /* the data is done; the modeled time not */
    assert_int_equal(ubj_model_wait_idle(d), 0);
    assert_true(mono_ns() - t0 >= 5 * 780960ull);
    ubj_bdev_destroy(d);
}

/* test_async_queue -- async writes (v2 with a callback, or
 * ubj_bdev_write_crit below time-critical) queue on a single-server
 * device but move no time: the k-th waits k x 780.96 us; a synchronous
 * read issued then waits behind all of them; a flush waits for
 * everything. */
static void test_async_queue(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_model("nand", "slc", NULL);
    struct ubj_clock *c = ubj_model_clock(d);
    struct ubj_req r[4];
    int done = 0;
    for (int i = 0; i < 4; i++)
        t_submit_async(d, &r[i], UBJ_REQ_WRITE, (uint64_t)i, 1, buf, &done);
    assert_int_equal(done, 4);
    assert_int_equal(r[3].result, 0);
    assert_int_equal(ubj_clock_now(c), 0);
    assert_int_equal(ubj_bdev_write_crit(d, 4, 1, buf, UBJ_CRIT_NONCRITICAL), 0);
    assert_int_equal(ubj_clock_now(c), 0);   /* nobody waited: no time */
    assert_int_equal(ubj_bdev_write_crit(d, 4, 1, buf, UBJ_CRIT_CLASSES), -EINVAL);
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.queue_ns, (0 + 1 + 2 + 3 + 4) * 780960ull);
    assert_int_equal(st.async_requests, 5);
    /* the caller thinks for 1 ms, then reads synchronously */
    ubj_clock_advance(c, 1000000);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_int_equal(ubj_clock_now(c), 5 * 780960ull + 322960);
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.queue_ns, 10 * 780960ull + 5 * 780960ull - 1000000);
    assert_int_equal(st.response_max_ns, 5 * 780960ull);   /* the 5th write */
    /* elapsed = busy (no idle gap): no idle energy beyond standby's */
    assert_int_equal(st.busy_ns, st.elapsed_ns);
    ubj_bdev_destroy(d);
}

/* test_percentiles -- 99 equal requests and one large: p99 is the small
 * one (within the histogram's 1/16 octave), max the large. */
static void test_percentiles(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_model("ssd", "nvme", NULL);
    for (int i = 0; i < 99; i++)
        assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 16, buf), 0);
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    uint64_t small = 51460 + 1170, big = 51460 + 18725;
    assert_int_equal(st.reads, 100);
    assert_int_equal(st.service_max_ns, big);
    assert_true(st.service_p99_ns >= small && st.service_p99_ns <= small + small / 16);
    assert_int_equal(st.service_mean_ns, (99 * small + big) / 100);
    assert_int_equal(st.response_mean_ns, st.service_mean_ns);
    /* all equal: the percentile is exact */
    assert_int_equal(ubj_model_stats_reset(d), 0);
    for (int i = 0; i < 10; i++)
        assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.service_p99_ns, small);
    assert_int_equal(st.bytes_read, 10 * UBJ_BLOCK_SIZE);
    ubj_bdev_destroy(d);
}

/* test_failed_below -- a request the lower device fails is returned as is
 * and not modeled. */
static void test_failed_below(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *fault, *d;
    assert_int_equal(ubj_bdev_ram_create(256, &ram), 0);
    assert_int_equal(ubj_bdev_fault_create(ram, &fault), 0);
    assert_int_equal(ubj_model_create("ssd", "sata", NULL, fault, &d), 0);
    assert_int_equal(ubj_bdev_fault_arm(fault, UBJ_FAULT_WRITE, 1, 0, 0), 0);
    assert_int_equal(ubj_bdev_write(d, 0, 1, buf), -EIO);
    assert_int_equal(ubj_bdev_write(d, 0, 1, buf), 0);
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.writes, 1);
    assert_true(ubj_model_find(d) == d);
    assert_null(ubj_model_find(fault));
    assert_int_equal(ubj_model_stats_get(fault, &st), -EINVAL);
    assert_int_equal(ubj_model_check(d), 0);
    assert_int_equal(ubj_model_wait_idle(ram), -EINVAL);
    ubj_bdev_destroy(d);
}

/* test_bad_create -- argument and profile errors leave lower alone. */
static void test_bad_create(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(256, &ram), 0);
    assert_int_equal(ubj_model_create("tape", "x", NULL, ram, &d), -EINVAL);
    assert_int_equal(ubj_model_create("nand", "nope", NULL, ram, &d), -ENOENT);
    assert_int_equal(ubj_model_create("nand", "slc,t_r_us=-5", NULL, ram, &d), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "t_r_us"));
    assert_int_equal(ubj_model_create("nand", "slc,bogus=1", NULL, ram, &d), -EINVAL);
    assert_int_equal(ubj_model_create("nand", "slc,page_bytes=3000", NULL, ram, &d),
                     -EINVAL);
    assert_int_equal(ubj_model_create("hdd", "hp_c2249a,rpm=x", NULL, ram, &d), -EINVAL);
    assert_int_equal(ubj_model_create("ssd", "sata,channels=0", NULL, ram, &d), -EINVAL);
    assert_int_equal(ubj_bdev_write(ram, 0, 1, buf), 0);    /* still ours */
    ubj_bdev_destroy(ram);
}

struct thr_arg {
    struct ubj_bdev *d;
    int id;
};

/* thr_main -- 200 writes to a thread's own range. */
static void *thr_main(void *p)
{
    struct thr_arg *a = p;
    unsigned char b[UBJ_BLOCK_SIZE];
    memset(b, a->id, sizeof b);
    for (int i = 0; i < 200; i++)
        if (ubj_bdev_write(a->d, (uint64_t)a->id * 256 + (uint64_t)(i % 256), 1, b) != 0)
            return p;
    return NULL;
}

/* test_threads -- four threads share a virtual clock and a device: every
 * request is counted and the busy time is their sum (one server). */
static void test_threads(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_model("nand", "slc", NULL);
    pthread_t t[4];
    struct thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct thr_arg){ d, i };
        assert_int_equal(pthread_create(&t[i], NULL, thr_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.writes, 800);
    assert_int_equal(st.busy_ns, st.service_ns);
    assert_int_equal(ubj_model_check(d), 0);
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_virtual_clock),
        cmocka_unit_test(test_real_clock),
        cmocka_unit_test(test_real_model),
        cmocka_unit_test(test_async_queue),
        cmocka_unit_test(test_percentiles),
        cmocka_unit_test(test_failed_below),
        cmocka_unit_test(test_bad_create),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
