/*
 * bench/trace.c -- record a run's trace and replay it open-loop: the
 * replay issues the same operations (same op counts and bytes) at the
 * recorded arrival times; replayed on the configuration it was recorded
 * on, with one process and no think time, every arrival is the previous
 * completion, so the counters match the closed-loop run; replayed on a
 * slower device, the open loop keeps the arrivals and the response times
 * grow by the queueing the closed loop never sees (Ganger's point), while
 * a closed-loop run there stretches its elapsed time instead.
 */
#include "testutil.h"
#include "bench/harness.h"
#include <unistd.h>

static char tpath[] = "/tmp/ubjfs-bench-traceXXXXXX";

/* setup -- a temporary trace path. */
static int setup(void **st)
{
    (void)st;
    int fd = mkstemp(tpath);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* teardown -- remove it. */
static int teardown(void **st)
{
    (void)st;
    unlink(tpath);
    return 0;
}

/* run_ok -- bh_run must succeed. */
static void run_ok(const struct bh_config *c, struct bh_result *r)
{
    int rc = bh_run(c, r);
    if (rc != 0)
        fail_msg("%d %s", rc, ubj_errormsg());
}

/* count_lines -- lines of the trace starting with `prefix`. */
static uint64_t count_lines(const char *prefix)
{
    FILE *f = fopen(tpath, "r");
    assert_non_null(f);
    char line[256];
    uint64_t n = 0;
    while (fgets(line, sizeof line, f))
        n += strncmp(line, prefix, strlen(prefix)) == 0;
    fclose(f);
    return n;
}

/* test_record_replay -- same config: the same counters. */
static void test_record_replay(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "postmark", .mode = "ordered",
                           .device = "ssd:sata", .image_blocks = 8192,
                           .trace_out = tpath };
    c.params = (struct bh_params){ .ops = 200, .scale = 0.2, .seed = 9 };
    struct bh_result rec, rep;
    run_ok(&c, &rec);
    assert_int_equal(count_lines("T "), 200);
    uint64_t calls = 0;
    for (unsigned k = 0; k < BH_OP_NR; k++)
        calls += rec.opcount[k];
    assert_int_equal(count_lines("O "), calls);
    struct bh_config p = { .mode = "ordered", .device = "ssd:sata",
                           .image_blocks = 8192, .trace_in = tpath };
    run_ok(&p, &rep);
    assert_string_equal(rep.workload, "postmark");
    assert_int_equal(rep.ops, 200);
    assert_memory_equal(rep.opcount, rec.opcount, sizeof rec.opcount);
    assert_int_equal(rep.app_bytes_written, rec.app_bytes_written);
    assert_int_equal(rep.bytes_device, rec.bytes_device);
    assert_int_equal(rep.elapsed_ns, rec.elapsed_ns);
    assert_int_equal(rep.lat_mean_ns, rec.lat_mean_ns);
}

/* test_diverged -- a trace whose seed was edited replays other
 * operations: the replay notices and fails. */
static void test_diverged(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "postmark", .mode = "none",
                           .image_blocks = 8192, .trace_out = tpath };
    c.params = (struct bh_params){ .ops = 50, .scale = 0.2, .seed = 9 };
    struct bh_result r;
    run_ok(&c, &r);
    FILE *f = fopen(tpath, "r+");
    assert_non_null(f);
    char line[256];
    long pos = 0;
    while (fgets(line, sizeof line, f) && strncmp(line, "params ", 7) != 0)
        pos = ftell(f);
    char *sp = strrchr(line, ' ');
    assert_non_null(sp);
    assert_int_equal(sp[1], '9');                /* the seed: 9 -> 8 */
    fseek(f, pos + (sp + 1 - line), SEEK_SET);
    fputc('8', f);
    fclose(f);
    struct bh_config p = { .mode = "none", .image_blocks = 8192,
                           .trace_in = tpath };
    assert_int_equal(bh_run(&p, &r), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "diverged"));
}

/* test_open_vs_closed -- a varmail trace from a fast device replayed on
 * an HDD: the open loop queues (latency up), the closed loop stretches. */
static void test_open_vs_closed(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "varmail", .mode = "ordered",
                           .device = "ssd:nvme", .image_blocks = 16384,
                           .trace_out = tpath };
    c.params = (struct bh_params){ .procs = 4, .ops = 80, .scale = 0.05,
                                   .think_ns = 2000000, .seed = 4 };
    struct bh_result fast, closed, open;
    run_ok(&c, &fast);
    c.trace_out = NULL;
    c.device = "hdd:hp_c2249a";
    run_ok(&c, &closed);
    struct bh_config p = { .mode = "ordered", .device = "hdd:hp_c2249a",
                           .image_blocks = 16384, .trace_in = tpath };
    run_ok(&p, &open);
    assert_memory_equal(open.opcount, fast.opcount, sizeof fast.opcount);
    assert_true(closed.elapsed_ns > fast.elapsed_ns);
    /* open loop: arrivals do not wait for completions, so requests queue */
    assert_true(open.lat_mean_ns > closed.lat_mean_ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_replay),
        cmocka_unit_test(test_diverged),
        cmocka_unit_test(test_open_vs_closed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
