/*
 * tests/unit/model_nvm.c -- the NVM cost model (src/dev/nvm_model.c):
 * a persist of N lines (flush + fence) on PCM by hand, line counting of
 * unaligned ranges, stores, reads, the clock it charges, the three
 * profiles, overrides and bad profiles.
 *
 * PCM (profiles/nvm_pcm.txt): write 150 ns and 16.82 pJ/bit per 64-byte
 * line, read 48 ns and 2.47 pJ/bit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include "ubjfs/model.h"
#include "ubjfs/ubjfs.h"

/* new_nvm -- a model of `profile` on a new virtual clock. */
static struct ubj_nvm_model *new_nvm(const char *profile)
{
    struct ubj_nvm_model *m;
    int rc = ubj_nvm_model_create(profile, NULL, &m);
    if (rc != 0)
        fail_msg("ubj_nvm_model_create(%s) = %d: %s", profile, rc, ubj_errormsg());
    return m;
}

/* assert_j -- energies equal to 1e-15 J. */
static void assert_j(double got, double want)
{
    if (fabs(got - want) > 1e-15)
        fail_msg("energy %.15g J, want %.15g J", got, want);
}

/* test_persist_pcm -- persist 10 lines: 10 x 150 ns, 10 x 512 x 16.82 pJ. */
static void test_persist_pcm(void **state)
{
    (void)state;
    struct ubj_nvm_model *m = new_nvm("pcm");
    struct ubj_clock *c = ubj_nvm_model_clock(m);
    assert_int_equal(ubj_nvm_model_store(m, 0, 640), 0);
    assert_int_equal(ubj_nvm_model_flush(m, 0, 640), 1500);
    assert_int_equal(ubj_nvm_model_fence(m), 0);
    struct ubj_nvm_stats st;
    ubj_nvm_model_stats(m, &st);
    assert_int_equal(st.stores, 1);
    assert_int_equal(st.bytes_stored, 640);
    assert_int_equal(st.lines_stored, 10);
    assert_int_equal(st.flushes, 1);
    assert_int_equal(st.lines_flushed, 10);
    assert_int_equal(st.fences, 1);
    assert_int_equal(st.time_ns, 1500);
    assert_j(st.energy_j, 10 * 512 * 16.82e-12);
    assert_int_equal(ubj_clock_now(c), 1500);      /* the caller waited */
    ubj_nvm_model_destroy(m);
}

/* test_lines -- a range is charged by the lines it touches. */
static void test_lines(void **state)
{
    (void)state;
    struct ubj_nvm_model *m = new_nvm("pcm");
    assert_int_equal(ubj_nvm_model_flush(m, 60, 10), 2 * 150);    /* 2 lines */
    assert_int_equal(ubj_nvm_model_flush(m, 64, 64), 150);        /* 1 line */
    assert_int_equal(ubj_nvm_model_flush(m, 100, 0), 0);          /* none */
    assert_int_equal(ubj_nvm_model_flush_lines(m, 3), 450);
    assert_int_equal(ubj_nvm_model_read(m, 0, 128), 96);
    struct ubj_nvm_stats st;
    ubj_nvm_model_stats(m, &st);
    assert_int_equal(st.lines_flushed, 6);
    assert_int_equal(st.lines_read, 2);
    assert_int_equal(st.reads, 1);
    assert_j(st.energy_j, 6 * 512 * 16.82e-12 + 2 * 512 * 2.47e-12);
    ubj_nvm_model_stats_reset(m);
    ubj_nvm_model_stats(m, &st);
    assert_int_equal(st.lines_flushed, 0);
    assert_j(st.energy_j, 0);
    ubj_nvm_model_destroy(m);
}

/* test_overrides -- fence and store costs from overrides; persist =
 * N x write_ns + fence_ns. */
static void test_overrides(void **state)
{
    (void)state;
    struct ubj_nvm_model *m = new_nvm("pcm,fence_ns=100,store_ns_per_line=2");
    assert_int_equal(ubj_nvm_model_store(m, 32, 64), 4);          /* 2 lines */
    uint64_t t = ubj_nvm_model_flush(m, 0, 4 * 64) + ubj_nvm_model_fence(m);
    assert_int_equal(t, 4 * 150 + 100);
    assert_int_equal(ubj_clock_now(ubj_nvm_model_clock(m)), 4 + 700);
    ubj_nvm_model_destroy(m);
}

/* test_profiles -- the three media order as their sources say. */
static void test_profiles(void **state)
{
    (void)state;
    const char *names[] = { "dram", "sttmram", "pcm" };
    double e[3];
    uint64_t t[3];
    for (int i = 0; i < 3; i++) {
        struct ubj_nvm_model *m = new_nvm(names[i]);
        t[i] = ubj_nvm_model_flush_lines(m, 100);
        struct ubj_nvm_stats st;
        ubj_nvm_model_stats(m, &st);
        e[i] = st.energy_j;
        ubj_nvm_model_destroy(m);
    }
    assert_true(t[2] > t[1] && t[1] > t[0]);       /* PCM slowest */
    assert_true(e[2] > e[1] && e[2] > e[0]);       /* PCM writes cost most */
}

/* test_bad -- unknown profile, bad values, a profile of another kind. */
static void test_bad(void **state)
{
    (void)state;
    struct ubj_nvm_model *m;
    assert_int_equal(ubj_nvm_model_create("flash", NULL, &m), -ENOENT);
    assert_int_equal(ubj_nvm_model_create("pcm,write_ns=-1", NULL, &m), -EINVAL);
    assert_int_equal(ubj_nvm_model_create("pcm,rpm=5", NULL, &m), -EINVAL);
    assert_int_equal(ubj_nvm_model_create("pcm,", NULL, &m), -EINVAL);
    assert_int_equal(ubj_nvm_model_create(NULL, NULL, &m), -EINVAL);
    struct ubj_clock *c;
    assert_int_equal(ubj_clock_create(UBJ_CLOCK_VIRTUAL, &c), 0);
    assert_int_equal(ubj_nvm_model_create("dram", c, &m), 0);
    ubj_clock_put(c);                  /* the model keeps its reference */
    assert_int_equal(ubj_nvm_model_flush_lines(m, 1), 30);
    assert_int_equal(ubj_clock_now(ubj_nvm_model_clock(m)), 30);
    ubj_nvm_model_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_persist_pcm),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_profiles),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
