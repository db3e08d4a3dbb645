/*
 * bench/errors.c -- bad configurations fail cleanly with the right errno
 * and a message naming the problem: unknown workload or mode, bad kv,
 * bad device spec or NVM profile, an image too small for the file set
 * (-ENOSPC with the size it needs), a missing or corrupt trace; nothing
 * is left behind in /dev/shm.
 */
#include "testutil.h"
#include "bench/harness.h"
#include <glob.h>
#include <unistd.h>

/* expect -- bh_run(c) fails with rc and a message containing `needle`. */
static void expect(const struct bh_config *c, int rc, const char *needle)
{
    struct bh_result r;
    int got = bh_run(c, &r);
    if (got != rc || strstr(ubj_errormsg(), needle) == NULL)
        fail_msg("expected %d '%s', got %d '%s'", rc, needle, got, ubj_errormsg());
}

/* shm_regions -- count this process's temporary region directories (other
 * tests running at the same time make their own). */
static size_t shm_regions(void)
{
    glob_t g;
    size_t n = 0;
    char pat[64];
    snprintf(pat, sizeof pat, "/dev/shm/ubjfs-bench-%d-*", (int)getpid());
    if (glob(pat, 0, NULL, &g) == 0)
        n = g.gl_pathc;
    globfree(&g);
    return n;
}

/* test_names -- workload, mode, clock, NULL arguments. */
static void test_names(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "nosuch", .mode = "ubj" };
    expect(&c, -EINVAL, "unknown workload 'nosuch'");
    c.workload = NULL;
    expect(&c, -EINVAL, "unknown workload");
    c.workload = "postmark";
    c.mode = "softupdates";
    expect(&c, -EINVAL, "unknown mode 'softupdates'");
    c.mode = NULL;
    expect(&c, -EINVAL, "unknown mode");
    c.mode = "none";
    c.clock = (enum ubj_clock_kind)7;
    expect(&c, -EINVAL, "clock");
    struct bh_result r;
    assert_int_equal(bh_run(NULL, &r), -EINVAL);
    assert_int_equal(bh_run(&c, NULL), -EINVAL);
    assert_null(bh_workload_find("nosuch"));
    assert_non_null(bh_workload_find("sqlite"));
}

/* test_params -- kv keys and values, scale, processes. */
static void test_params(void **st)
{
    (void)st;
    struct bh_config c = { .workload = "postmark", .mode = "none",
                           .image_blocks = 4096 };
    c.params.kv = "files=abc";
    expect(&c, -EINVAL, "files=abc is not a number");
    c.params.kv = "files= 5";                 /* digits first, nothing else */
    expect(&c, -EINVAL, "files= 5 is not a number");
    c.params.kv = "files=010x";
    expect(&c, -EINVAL, "files=010x is not a number");
    c.params.kv = "files=5,";
    expect(&c, -EINVAL, "an empty parameter");
    c.params.kv = "files=1,min=1,files=2";
    expect(&c, -EINVAL, "parameter 'files' given twice");
    c.params.kv = "colour=blue";
    expect(&c, -EINVAL, "unknown parameter 'colour=blue'");
    c.params.kv = "min=900,max=100";
    expect(&c, -EINVAL, "min <= max");
    c.workload = "iozone";
    c.params.kv = "pattern=write+fly";
    expect(&c, -EINVAL, "unknown test 'fly'");
    c.params.kv = "pattern=write++read";
    expect(&c, -EINVAL, "empty test name");
    c.params.kv = NULL;
    c.params.scale = -1;
    expect(&c, -EINVAL, "scale");
    c.params.scale = 0;
    c.params.procs = 100000;
    expect(&c, -EINVAL, "processes");
}

/* test_devices -- spec and NVM profile errors come from the layers. */
static void test_devices(void **st)
{
    (void)st;
    size_t before = shm_regions();
    struct bh_config c = { .workload = "postmark", .mode = "ordered",
                           .device = "ssd:nosuchprofile", .image_blocks = 4096 };
    struct bh_result r;
    assert_true(bh_run(&c, &r) < 0);
    assert_true(strlen(ubj_errormsg()) > 0);
    c.device = "tape:lto";
    expect(&c, -EINVAL, "");
    c.device = "ram";
    c.mode = "ubj";
    c.nvm_profile = "nosuchnvm";
    assert_true(bh_run(&c, &r) < 0);
    assert_int_equal(shm_regions(), before);     /* region removed */
}

/* test_enospc -- a file set larger than the image. */
static void test_enospc(void **st)
{
    (void)st;
    size_t before = shm_regions();
    struct bh_config c = { .workload = "fileserver", .mode = "ubj",
                           .image_blocks = 2048 };
    expect(&c, -ENOSPC, "needs");                /* checked before writing */
    c.workload = "postmark";                     /* found while writing */
    c.params.kv = "files=4000,min=9000,max=10000";
    expect(&c, -ENOSPC, "raise image_blocks");
    c.workload = "iozone";                       /* during the timed phase */
    c.params.kv = "size=64m,record=1m";
    expect(&c, -ENOSPC, "image is full");
    assert_int_equal(shm_regions(), before);
}

/* test_traces -- missing and corrupt trace files. */
static void test_traces(void **st)
{
    (void)st;
    struct bh_config c = { .mode = "none", .trace_in = "/nonexistent/trace" };
    expect(&c, -ENOENT, "/nonexistent/trace");
    char path[] = "/tmp/ubjfs-bench-traceXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *bad = "ubjfs-bench-trace 1\nworkload postmark\nparams 1 2 0 1 1\n"
                      "kv -\nO create 5\nT 0 0 1 1 2\nX junk\n";
    assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    c.trace_in = path;
    expect(&c, -EINVAL, ":7: unrecognised line");
    fd = open(path, O_WRONLY | O_TRUNC);
    const char *cut = "ubjfs-bench-trace 1\nworkload postmark\nparams 1 2 0 1 1\n"
                      "kv -\nT 0 0 1 1 2\n";
    assert_int_equal(write(fd, cut, strlen(cut)), (ssize_t)strlen(cut));
    close(fd);
    expect(&c, -EINVAL, "truncated");
    c.clock = UBJ_CLOCK_REAL;
    expect(&c, -EINVAL, "virtual clock only");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_enospc),
        cmocka_unit_test(test_traces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
