/*
 * bench/metrics.c -- the metrics of a run make sense together: storage
 * bytes by category per mode (no journal bytes in none and ubj, journal
 * bytes in the journal modes, NVM bytes only in ubj, ubj writing fewer
 * device bytes than journal and ordered on varmail), the device's own
 * count covering the categories, percentiles ordered, throughput =
 * ops / elapsed, the final sync inside the elapsed time (and out of it
 * with BH_F_NO_FINAL_SYNC).
 */
#include "testutil.h"
#include "bench/harness.h"

/* varmail_in -- a small varmail run in `mode`. */
static void varmail_in(const char *mode, unsigned flags, struct bh_result *r)
{
    struct bh_config c = { .workload = "varmail", .mode = mode,
                           .device = "ssd:sata", .image_blocks = 16384,
                           .cache_blocks = 1024, .flags = flags };
    c.params = (struct bh_params){ .ops = 200, .scale = 0.05 };
    int rc = bh_run(&c, r);
    if (rc != 0)
        fail_msg("%s: %d %s", mode, rc, ubj_errormsg());
    assert_int_equal(r->ops, 200);
}

/* check_common -- what holds in every mode. */
static void check_common(const struct bh_result *r)
{
    assert_true(r->lat_p50_ns <= r->lat_p99_ns && r->lat_p99_ns <= r->lat_max_ns);
    assert_true(r->lat_mean_ns <= r->lat_max_ns);
    assert_true(r->elapsed_ns > 0 && r->sync_ns <= r->elapsed_ns);
    double tput = (double)r->ops * 1e9 / (double)r->elapsed_ns;
    assert_true(r->ops_per_s > tput * 0.999 && r->ops_per_s < tput * 1.001);
    /* the device saw at least what the file system says it wrote (the
     * superblock and bitmaps are in bytes_metadata; the journal is in the
     * device's count) */
    assert_true(r->bytes_device >= r->bytes_data + r->bytes_journal);
    assert_true(r->dev_flushes > 0);
    assert_true(r->energy_dev_j > 0);
    assert_true(r->hit_ratio > 0 && r->hit_ratio <= 1);
    assert_string_equal(r->workload, "varmail");
    assert_string_equal(r->device, "ssd:sata");
}

/* test_categories -- bytes by category in each mode. */
static void test_categories(void **st)
{
    (void)st;
    struct bh_result none, ubj, ord, jnl, wb;
    varmail_in("none", 0, &none);
    varmail_in("ubj", 0, &ubj);
    varmail_in("ordered", 0, &ord);
    varmail_in("journal", 0, &jnl);
    varmail_in("writeback", 0, &wb);
    const struct bh_result *all[] = { &none, &ubj, &ord, &jnl, &wb };
    for (unsigned i = 0; i < 5; i++)
        check_common(all[i]);
    assert_int_equal(none.bytes_journal, 0);
    assert_int_equal(ubj.bytes_journal, 0);
    assert_true(ord.bytes_journal > 0 && jnl.bytes_journal > 0 && wb.bytes_journal > 0);
    assert_true(jnl.bytes_journal > ord.bytes_journal);     /* data too */
    assert_true(ubj.nvm_bytes > 0 && ubj.energy_nvm_j > 0);
    assert_int_equal(ord.nvm_bytes + jnl.nvm_bytes + none.nvm_bytes, 0);
    assert_string_equal(ubj.nvm_profile, "dram");
    assert_string_equal(ord.nvm_profile, "-");
    /* the seed's point: ubj writes less to storage than journaling */
    assert_true(ubj.bytes_device < jnl.bytes_device);
    assert_true(ubj.bytes_device < ord.bytes_device);
    /* same work in every mode */
    assert_memory_equal(ubj.opcount, jnl.opcount, sizeof ubj.opcount);
}

/* test_final_sync -- the final sync is timed unless asked not to. */
static void test_final_sync(void **st)
{
    (void)st;
    struct bh_result with, without;
    varmail_in("ordered", 0, &with);
    varmail_in("ordered", BH_F_NO_FINAL_SYNC, &without);
    assert_true(with.sync_ns > 0);
    assert_int_equal(without.sync_ns, 0);
    assert_int_equal(with.elapsed_ns - with.sync_ns, without.elapsed_ns);
    assert_true(with.bytes_device > without.bytes_device);
}

/* test_cpu_cost -- op_cpu_ns adds that much per call to the clock. */
static void test_cpu_cost(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "postmark", .mode = "none",
                           .device = "ram", .image_blocks = 8192,
                           .flags = BH_F_NO_FINAL_SYNC };
    c.params = (struct bh_params){ .ops = 100, .scale = 0.1 };
    struct bh_result a, b;
    assert_int_equal(bh_run(&c, &a), 0);
    c.op_cpu_ns = 1000;
    assert_int_equal(bh_run(&c, &b), 0);
    uint64_t calls = 0;
    for (unsigned k = 0; k < BH_OP_NR; k++)
        calls += b.opcount[k];
    assert_int_equal(b.elapsed_ns - a.elapsed_ns, calls * 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_categories),
        cmocka_unit_test(test_final_sync),
        cmocka_unit_test(test_cpu_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
