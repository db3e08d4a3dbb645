/*
 * bench/determinism.c -- on the virtual clock the same configuration and
 * seed give the same bh_result bit for bit (counters, times, latencies,
 * energies), with several processes, think time, device and NVM models;
 * another seed gives another result (so the comparison can fail); a
 * real-clock run completes its transactions with one thread per process.
 */
#include "testutil.h"
#include "bench/harness.h"

/* run_one -- a run; fails the test on error. */
static void run_one(const struct bh_config *c, struct bh_result *r)
{
    int rc = bh_run(c, r);
    if (rc != 0)
        fail_msg("%s/%s: %d %s", c->workload, c->mode, rc, ubj_errormsg());
}

/* same_twice -- two runs of c must be identical, and differ with seed+1. */
static void same_twice(struct bh_config *c)
{
    struct bh_result a, b;
    run_one(c, &a);
    run_one(c, &b);
    assert_memory_equal(&a, &b, sizeof a);
    assert_true(a.elapsed_ns > 0);
    c->params.seed++;
    run_one(c, &b);
    assert_memory_not_equal(&a, &b, sizeof a);
}

/* test_varmail_ubj -- 4 processes with think time, SSD model, mode ubj
 * with the PCM cost model, commit ticks inside the run. */
static void test_varmail_ubj(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "varmail", .mode = "ubj",
                           .device = "ssd:sata", .nvm_profile = "pcm",
                           .image_blocks = 16384, .cache_blocks = 1024,
                           .commit_interval_ms = 5 };
    c.params = (struct bh_params){ .procs = 4, .ops = 150, .think_ns = 200000,
                                   .scale = 0.05, .seed = 7 };
    same_twice(&c);
}

/* test_postmark_hdd -- PostMark on the HDD model in mode ordered. */
static void test_postmark_hdd(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "postmark", .mode = "ordered",
                           .device = "hdd:hp_c2249a", .image_blocks = 16384,
                           .cache_blocks = 256, .commit_interval_ms = 20 };
    c.params = (struct bh_params){ .procs = 2, .ops = 300, .scale = 0.2,
                                   .seed = 3 };
    same_twice(&c);
}

/* test_postmark_ssd -- the fresh-user report's case: PostMark's reads
 * touch atimes, and relatime's choice depended on the host's clock until
 * the virtual-clock runs took their timestamps from the run's clock (and a
 * reproducible uuid and hash seed): counters then differed run to run. */
static void test_postmark_ssd(void **st)
{
    (void)st;
    const char *modes[] = { "ordered", "ubj" };
    for (int i = 0; i < 2; i++) {
        struct bh_config c = { .workload = "postmark", .mode = modes[i],
                               .device = "ssd:sata" };
        c.params = (struct bh_params){ .ops = 1000, .scale = 1, .seed = 1 };
        same_twice(&c);
    }
}

/* test_sqlite -- SQLite through the VFS. */
static void test_sqlite(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "sqlite", .mode = "journal",
                           .device = "ssd:sata", .image_blocks = 16384 };
    c.params = (struct bh_params){ .ops = 40, .seed = 5, .kv = "rows=200" };
    same_twice(&c);
}

/* test_real_clock -- threads, the mount's timer; only counts checked. */
static void test_real_clock(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "postmark", .mode = "ordered",
                           .device = "ssd:nvme", .image_blocks = 8192,
                           .clock = UBJ_CLOCK_REAL, .commit_interval_ms = 50 };
    c.params = (struct bh_params){ .procs = 3, .ops = 90, .scale = 0.1,
                                   .think_ns = 100000 };
    struct bh_result r;
    run_one(&c, &r);
    assert_int_equal(r.ops, 90);
    assert_int_equal(r.opcount[BH_OP_OPEN], 90);
    assert_true(r.elapsed_ns > 0 && r.lat_max_ns >= r.lat_p99_ns &&
                r.lat_p99_ns >= r.lat_p50_ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varmail_ubj),
        cmocka_unit_test(test_postmark_hdd),
        cmocka_unit_test(test_postmark_ssd),
        cmocka_unit_test(test_sqlite),
        cmocka_unit_test(test_real_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
