/*
 * bench/overlap.c -- on the real clock the harness's processes overlap
 * (issue 20 item 4; docs/HARNESS.md, "Real clock"): a process parked
 * inside a file-system call does not stop the others, and every
 * workload that may overlap completes with its counts and an image fsck
 * finds clean.
 *
 * The first check is an ordering, not a timing: the first process to make
 * a call in the timed phase parks in it (bh_test_call_hook) until the
 * other processes have begun OTHERS calls.  (Not process 0 by number: a
 * serialised run may never schedule a given thread -- the run's mutex is
 * not fair.)  With the overlap they do at once;
 * under BH_F_SERIAL (the serialised harness, as before issue 20: the
 * "broken variant") they cannot, and the park ends by its timeout --
 * which the test then expects.
 */
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include "testutil.h"
#include "bench/bench_int.h"
#include "bench/harness.h"

#define OTHERS 8u

#if UBJ_TEST_HOOKS   /* the call hook is test-build only */

struct park {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned who;            /* the parked process */
    bool parked_once;        /* it parked already */
    bool parked_now;         /* it is parked */
    unsigned others;         /* calls others began while it was parked */
    bool overlapped;         /* the others reached OTHERS */
    unsigned timeout_s;
};

/* park_hook -- bh_test_call_hook: park the first caller once. */
static void park_hook(void *arg, unsigned proc)
{
    struct park *pk = arg;
    if (proc == UINT_MAX)
        return;                          /* the setup */
    pthread_mutex_lock(&pk->mu);
    if (pk->parked_once && proc != pk->who) {
        if (pk->parked_now && ++pk->others >= OTHERS)
            pthread_cond_broadcast(&pk->cv);
    } else if (!pk->parked_once) {
        pk->parked_once = pk->parked_now = true;
        pk->who = proc;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += pk->timeout_s;
        int rc = 0;
        while (pk->others < OTHERS && rc == 0)
            rc = pthread_cond_timedwait(&pk->cv, &pk->mu, &ts);
        pk->overlapped = pk->others >= OTHERS;
        pk->parked_now = false;
    }
    pthread_mutex_unlock(&pk->mu);
}

/* run_parked -- varmail, 3 processes on the real clock, one parked. */
static void run_parked(unsigned flags, unsigned timeout_s, struct park *pk,
                       struct bh_result *res)
{
    *pk = (struct park){ .timeout_s = timeout_s };
    pthread_mutex_init(&pk->mu, NULL);
    pthread_cond_init(&pk->cv, NULL);
    struct bh_config c = { .workload = "varmail", .mode = "ordered",
                           .device = "ram", .image_blocks = 8192,
                           .clock = UBJ_CLOCK_REAL, .commit_interval_ms = 50,
                           .flags = flags };
    c.params = (struct bh_params){ .procs = 3, .ops = 30, .scale = 0.05,
                                   .seed = 2 };
    bh_test_call_hook(park_hook, pk);
    int rc = bh_run(&c, res);
    bh_test_call_hook(NULL, NULL);
    if (rc != 0)
        fail_msg("varmail: %d %s", rc, ubj_errormsg());
    pthread_cond_destroy(&pk->cv);
    pthread_mutex_destroy(&pk->mu);
    assert_int_equal(res->ops, 30);
    assert_true(pk->parked_once);
}

/* test_parked_overlaps -- the others run while one is parked. */
static void test_parked_overlaps(void **st)
{
    (void)st;
    struct park pk;
    struct bh_result res;
    run_parked(0, 60, &pk, &res);
    assert_true(pk.overlapped);
    assert_true(res.txn_overlap_max >= 2);
}

/* test_serial_does_not -- BH_F_SERIAL: nobody runs while it is parked
 * (the park ends by its timeout), one transaction at a time. */
static void test_serial_does_not(void **st)
{
    (void)st;
    struct park pk;
    struct bh_result res;
    run_parked(BH_F_SERIAL, 1, &pk, &res);
    assert_false(pk.overlapped);
    assert_int_equal(pk.others, 0);
    assert_int_equal(res.txn_overlap_max, 1);
}

#else
#define test_parked_overlaps t_no_hooks
#define test_serial_does_not t_no_hooks
#endif /* UBJ_TEST_HOOKS */

/* test_every_workload -- each workload on the real clock, 4 processes
 * without think time on a small cache, in modes ordered and ubj: the
 * run completes (a clash of two processes on one file would fail it
 * with EEXIST or ENOENT), and fsck finds the image clean. */
static void test_every_workload(void **st)
{
    (void)st;
    static const struct { const char *wl, *kv; uint64_t ops; double scale; } w[] = {
        { "postmark", NULL, 200, 0.2 },
        { "varmail", NULL, 120, 0.05 },
        { "fileserver", NULL, 60, 0.02 },
        { "webserver", NULL, 60, 0.02 },
        { "oltp", NULL, 200, 0.01 },
        { "ganger", "files=60,dirs=8", 0, 1 },
        { "iozone", "record=65536,size=262144", 0, 1 },
        { "sqlite", "rows=100", 20, 1 },
        { "andrew", "files=20,dirs=3,compile_us=10,link_ms=1", 0, 1 },
    };
    static const char *const modes[] = { "ordered", "ubj" };
    for (size_t m = 0; m < 2; m++)
        for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
            struct bh_config c = { .workload = w[i].wl, .mode = modes[m],
                                   .device = "ram", .image_blocks = 16384,
                                   .cache_blocks = 256,
                                   .clock = UBJ_CLOCK_REAL,
                                   .commit_interval_ms = 20,
                                   .flags = BH_F_CHECK };
            c.params = (struct bh_params){ .procs = 4, .ops = w[i].ops,
                                           .scale = w[i].scale, .seed = 9,
                                           .kv = w[i].kv };
            struct bh_result res;
            int rc = bh_run(&c, &res);
            if (rc != 0)
                fail_msg("%s/%s: %d %s", w[i].wl, modes[m], rc, ubj_errormsg());
            if (w[i].ops != 0)
                assert_int_equal(res.ops, w[i].ops);
            assert_true(res.ops > 0);
            const struct bh_workload *wl = bh_workload_find(w[i].wl);
            if (getenv("T_VERBOSE"))
                fprintf(stderr, "%s/%s: %llu txns, overlap max %u\n", w[i].wl,
                        modes[m], (unsigned long long)res.ops, res.txn_overlap_max);
            if (wl->serial != NULL)
                assert_int_equal(res.txn_overlap_max, 1);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parked_overlaps),
        cmocka_unit_test(test_serial_does_not),
        cmocka_unit_test(test_every_workload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
