/*
 * bench_cli/precheck.c -- the harness's checks that `ubjfs bench` makes
 * before any run (bench/harness.h): bh_workload_check_kv accepts no kv and
 * every workload's own keys, and refuses an unknown key or a pair without
 * '=' for EVERY workload (a workload whose init touched the file system
 * before bh_kv_check would crash or pass here); bh_trace_check reads a
 * recorded trace's workload and parameters and refuses a missing file, a
 * file that is not a trace, a truncated trace and an unknown workload.
 */
#include "testutil.h"
#include "bench/harness.h"
#include <unistd.h>

/* t_kv_every_workload -- unknown keys refused everywhere, none accepted. */
static void t_kv_every_workload(void **state)
{
    (void)state;
    for (size_t i = 0; bh_workloads[i] != NULL; i++) {
        const char *w = bh_workloads[i]->name;
        assert_int_equal(bh_workload_check_kv(w, NULL), 0);
        assert_int_equal(bh_workload_check_kv(w, ""), 0);
        assert_int_equal(bh_workload_check_kv(w, "nosuchkey=1"), -EINVAL);
        assert_non_null(strstr(ubj_errormsg(), "nosuchkey"));
        assert_int_equal(bh_workload_check_kv(w, "noequals"), -EINVAL);
    }
}

/* t_kv_known -- each workload's own keys pass; another's do not. */
static void t_kv_known(void **state)
{
    (void)state;
    assert_int_equal(bh_workload_check_kv("postmark", "files=10,bias_read=3"), 0);
    assert_int_equal(bh_workload_check_kv("postmark", "files=10,nosuch=2"), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "nosuch=2"));
    assert_int_equal(bh_workload_check_kv("iozone", "pattern=write+read,record=4k"), 0);
    assert_int_equal(bh_workload_check_kv("iozone", "files=10"), -EINVAL);
    assert_int_equal(bh_workload_check_kv("varmail", "nfiles=10,appendsize=4k"), 0);
    assert_int_equal(bh_workload_check_kv("sqlite", "rows=100,batch=5"), 0);
    assert_int_equal(bh_workload_check_kv("nosuch", NULL), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "nosuch"));
}

/* t_write -- a file holding text. */
static void t_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* t_trace -- a recorded trace, then damaged copies of it. */
static void t_trace(void **state)
{
    (void)state;
    char dir[] = "/tmp/ubjfs-precheck.XXXXXX", tr[128], bad[128];
    assert_non_null(mkdtemp(dir));
    snprintf(tr, sizeof tr, "%s/vm.trace", dir);
    snprintf(bad, sizeof bad, "%s/bad.trace", dir);
    struct bh_config cfg = { .workload = "varmail", .mode = "none", .device = "ssd:sata",
                             .params = { .ops = 12, .scale = 0.02, .seed = 3 },
                             .trace_out = tr };
    struct bh_result res;
    assert_int_equal(bh_run(&cfg, &res), 0);
    char wl[32] = "";
    struct bh_params p;
    memset(&p, 0xff, sizeof p);
    assert_int_equal(bh_trace_check(tr, wl, sizeof wl, &p), 0);
    assert_string_equal(wl, "varmail");
    assert_int_equal(p.ops, 12);
    assert_int_equal(p.seed, 3);
    assert_true(p.scale == 0.02);
    assert_null(p.kv);
    assert_int_equal(bh_trace_check(tr, NULL, 0, NULL), 0);
    snprintf(bad, sizeof bad, "%s/missing.trace", dir);
    assert_int_equal(bh_trace_check(bad, wl, sizeof wl, NULL), -ENOENT);
    snprintf(bad, sizeof bad, "%s/bad.trace", dir);
    t_write(bad, "hello\n");
    assert_int_equal(bh_trace_check(bad, wl, sizeof wl, NULL), -EINVAL);
    t_write(bad, "ubjfs-bench-trace 1\nworkload varmail\nparams 1 2 0 1 1\nkv -\n"
                 "O create 5\nT 0 0 0 0 9\n");                   /* no end line */
    assert_int_equal(bh_trace_check(bad, wl, sizeof wl, NULL), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "truncated"));
    t_write(bad, "ubjfs-bench-trace 1\nworkload nosuch\nparams 1 1 0 1 1\nkv -\n"
                 "O create 5\nT 0 0 0 0 9\nend 1\n");
    assert_int_equal(bh_trace_check(bad, wl, sizeof wl, NULL), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "nosuch"));
    unlink(bad);
    unlink(tr);
    assert_int_equal(rmdir(dir), 0);
}

/* main -- the checks before a run. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_kv_every_workload),
        cmocka_unit_test(t_kv_known),
        cmocka_unit_test(t_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
