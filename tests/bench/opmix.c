/*
 * bench/opmix.c -- each workload's operation mix against its definition
 * (src/bench/wl_*.c): the counts of file-system calls by kind that one
 * transaction of the original issues, times the transactions run, and
 * the untimed setup's counts against the initial file set.  Small scales,
 * RAM device, virtual clock.
 */
#include "testutil.h"
#include "bench/harness.h"

/* run_wl -- one run of `wl` in mode ordered; fails the test on error. */
static void run_wl(const char *wl, double scale, uint64_t ops, unsigned procs,
                   const char *kv, struct bh_result *res)
{
    struct bh_config c = { .workload = wl, .mode = "ordered", .device = "ram",
                           .image_blocks = 32768, .cache_blocks = 2048 };
    c.params.scale = scale;
    c.params.ops = ops;
    c.params.procs = procs;
    c.params.kv = kv;
    int rc = bh_run(&c, res);
    if (rc != 0)
        fail_msg("%s: %d %s", wl, rc, ubj_errormsg());
    assert_int_equal(res->ops, ops ? ops : res->ops);
}

/* test_postmark -- setup creates `files`; each transaction is one
 * read-or-append (an open) and one create-or-delete, biased 5/10. */
static void test_postmark(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("postmark", 0.2, 400, 0, NULL, &r);
    assert_int_equal(r.init_opcount[BH_OP_CREATE], 100);      /* 500 x 0.2 */
    assert_int_equal(r.opcount[BH_OP_CREATE] + r.opcount[BH_OP_UNLINK], 400);
    assert_in_range(r.opcount[BH_OP_CREATE], 150, 250);       /* ~half */
    assert_int_equal(r.opcount[BH_OP_OPEN], 400);
    assert_int_equal(r.opcount[BH_OP_OTHER], 400);            /* closes */
    assert_true(r.opcount[BH_OP_READ] > 0 && r.opcount[BH_OP_APPEND] > 0);
    /* 512-byte calls: every read/write call moves at most 512 bytes */
    assert_true(r.app_bytes_read <= 512 * r.opcount[BH_OP_READ]);
    assert_true(r.app_bytes_written <= 512 * (r.opcount[BH_OP_WRITE] +
                                              r.opcount[BH_OP_APPEND]));
    /* the biases decide alone at 10 and 0 */
    run_wl("postmark", 0.2, 100, 0, "bias_create=10,bias_read=10", &r);
    assert_int_equal(r.opcount[BH_OP_CREATE], 100);
    assert_int_equal(r.opcount[BH_OP_UNLINK], 0);
    assert_int_equal(r.opcount[BH_OP_APPEND], 0);
    run_wl("postmark", 0.2, 100, 0, "bias_create=0,bias_read=0,subdirs=10", &r);
    assert_int_equal(r.opcount[BH_OP_CREATE], 0);
    assert_int_equal(r.opcount[BH_OP_UNLINK], 100);
    assert_int_equal(r.opcount[BH_OP_READ], 0);
    assert_int_equal(r.init_opcount[BH_OP_MKDIR], 10);
}

/* test_varmail -- delete, create+append+fsync+close, open+read+append+
 * fsync+close, open+read+close per transaction. */
static void test_varmail(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("varmail", 0.05, 120, 4, NULL, &r);
    assert_in_range(r.init_opcount[BH_OP_CREATE], 25, 50);   /* 80% of 50 */
    assert_int_equal(r.init_opcount[BH_OP_MKDIR], 1);        /* one directory */
    assert_int_equal(r.opcount[BH_OP_UNLINK], 120);
    assert_int_equal(r.opcount[BH_OP_CREATE], 120);
    assert_int_equal(r.opcount[BH_OP_APPEND], 240);          /* <= 16 KiB: one call */
    assert_int_equal(r.opcount[BH_OP_FSYNC], 240);
    assert_int_equal(r.opcount[BH_OP_OPEN], 360);
    assert_int_equal(r.opcount[BH_OP_OTHER], 360);
    assert_true(r.opcount[BH_OP_READ] >= 240);
    assert_int_equal(r.opcount[BH_OP_WRITE], 0);
}

/* test_fileserver -- create+write, open+append, open+read, delete, stat. */
static void test_fileserver(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("fileserver", 0.01, 60, 0, NULL, &r);
    assert_int_equal(r.init_opcount[BH_OP_MKDIR], 1 + 5);    /* 100 files / 20 */
    assert_int_equal(r.opcount[BH_OP_CREATE], 60);
    assert_int_equal(r.opcount[BH_OP_UNLINK], 60);
    assert_int_equal(r.opcount[BH_OP_STAT], 60);
    assert_int_equal(r.opcount[BH_OP_OPEN], 180);
    assert_int_equal(r.opcount[BH_OP_APPEND], 60);
    assert_true(r.opcount[BH_OP_WRITE] >= 60);
    assert_int_equal(r.opcount[BH_OP_FSYNC], 0);
}

/* test_webserver -- ten whole-file reads and one log append. */
static void test_webserver(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("webserver", 0.05, 50, 0, NULL, &r);
    assert_int_equal(r.init_opcount[BH_OP_CREATE], 50 + 1);  /* 100%, + log */
    assert_int_equal(r.opcount[BH_OP_OPEN], 500);
    assert_true(r.opcount[BH_OP_READ] >= 500);
    assert_int_equal(r.opcount[BH_OP_APPEND], 50);
    assert_int_equal(r.opcount[BH_OP_CREATE] + r.opcount[BH_OP_UNLINK], 0);
}

/* test_oltp -- a 2 KiB read each; a dsync write every 10th, a log write
 * every 100th. */
static void test_oltp(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("oltp", 0.02, 1000, 8, NULL, &r);
    assert_int_equal(r.init_opcount[BH_OP_CREATE], 11);      /* 10 data + log */
    assert_int_equal(r.opcount[BH_OP_READ], 1000);
    assert_int_equal(r.app_bytes_read, 1000 * 2048);
    assert_int_equal(r.opcount[BH_OP_WRITE], 100 + 10);
    assert_int_equal(r.opcount[BH_OP_FSYNC], 100 + 10);
    assert_int_equal(r.app_bytes_written, 100 * 2048 + 10 * 8192);
}

/* test_iozone -- bytes written = size x write passes; records per test. */
static void test_iozone(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("iozone", 1, 0, 0, "record=64k,size=1m", &r);
    assert_int_equal(r.ops, 6 * 16);                  /* 6 tests x 16 records */
    assert_int_equal(r.app_bytes_written, 3 * 1048576);   /* write, rewrite, randwrite */
    assert_int_equal(r.app_bytes_read, 3 * 1048576);      /* read, reread, randread */
    assert_int_equal(r.opcount[BH_OP_CREATE], 1);
    assert_int_equal(r.opcount[BH_OP_UNLINK], 1);
    assert_int_equal(r.opcount[BH_OP_FSYNC], 3);
    assert_int_equal(r.opcount[BH_OP_OPEN], 6);
    run_wl("iozone", 1, 0, 0, "record=4k,size=64k,pattern=write+read,fsync=0", &r);
    assert_int_equal(r.ops, 2 * 16);
    assert_int_equal(r.app_bytes_written, 65536);
    assert_int_equal(r.opcount[BH_OP_FSYNC], 0);
    /* the default sweep: 4 KiB .. 1 MiB, 9 record sizes, one file each */
    run_wl("iozone", 1, 0, 0, "size=1m,pattern=write", &r);
    assert_int_equal(r.opcount[BH_OP_CREATE], 9);
    assert_int_equal(r.app_bytes_written, 9 * 1048576);
    assert_int_equal(r.ops, 256 + 128 + 64 + 32 + 16 + 8 + 4 + 2 + 1);
}

/* test_ganger -- each user: mkdir top + dirs, copy files, remove all. */
static void test_ganger(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("ganger", 1, 0, 3, "files=20,dirs=5", &r);
    assert_int_equal(r.init_opcount[BH_OP_CREATE], 20);
    assert_int_equal(r.init_opcount[BH_OP_MKDIR], 1 + 5);
    assert_int_equal(r.ops, 3 * (2 * 5 + 2 * 20 + 2));
    assert_int_equal(r.opcount[BH_OP_MKDIR], 3 * 6);
    assert_int_equal(r.opcount[BH_OP_RMDIR], 3 * 6);
    assert_int_equal(r.opcount[BH_OP_CREATE], 3 * 20);
    assert_int_equal(r.opcount[BH_OP_UNLINK], 3 * 20);
    assert_int_equal(r.app_bytes_written, r.app_bytes_read);  /* copies */
    run_wl("ganger", 1, 0, 2, "files=10,dirs=3,rounds=2", &r);
    assert_int_equal(r.ops, 2 * 2 * (2 * 3 + 2 * 10 + 2));
}

/* test_andrew -- per user: mkdir dst + dirs, a copy per file, a readdir +
 * stats per directory, a read per file, a compile per non-header file (one
 * in five is a header) and the link; phases and task times on a RAM device,
 * where only the compiler's and the linker's CPU time passes. */
static void test_andrew(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("andrew", 1, 0, 2, "files=10,dirs=3,link_ms=5", &r);
    assert_int_equal(r.init_opcount[BH_OP_MKDIR], 2 * (2 + 3));
    assert_int_equal(r.init_opcount[BH_OP_CREATE], 2 * 10);
    assert_int_equal(r.ops, 2 * (2 * (3 + 10) + 1 + 8 + 1));
    assert_int_equal(r.opcount[BH_OP_MKDIR], 2 * 4);
    assert_int_equal(r.opcount[BH_OP_CREATE], 2 * (10 + 8 + 1));
    assert_int_equal(r.opcount[BH_OP_READDIR], 2 * 3);
    assert_true(r.elapsed_ns >= 2 * 5000000ull);   /* two links at least */
    uint64_t sum = 0, mx = 0;
    for (unsigned k = 0; k < r.nphases; k++)
        sum += r.phase_ns[k];
    for (unsigned u = 0; u < 2; u++)
        mx = r.user_ns[u] > mx ? r.user_ns[u] : mx;
    assert_int_equal(mx, r.elapsed_ns);            /* the final sync costs 0 */
    assert_true(sum <= r.user_mean_ns && sum + r.nphases >= r.user_mean_ns);
    assert_int_equal(r.user_mean_ns, (r.user_ns[0] + r.user_ns[1]) / 2);
    /* one user: the phases before compile take no time on RAM (with two,
     * the second user's wait for the first's compiler shows in them) */
    run_wl("andrew", 1, 0, 1, "files=10,dirs=3,link_ms=5", &r);
    assert_int_equal(r.nphases, 5);
    assert_string_equal(r.phase_name[0], "mkdir");
    assert_string_equal(r.phase_name[4], "compile");
    for (unsigned k = 0; k < 4; k++)
        assert_int_equal(r.phase_ns[k], 0);
    assert_int_equal(r.phase_ns[4], r.elapsed_ns);
    assert_int_equal(r.user_ns[0], r.elapsed_ns);
    run_wl("ganger", 1, 0, 1, "files=10,dirs=3", &r);   /* one phase per half */
    assert_int_equal(r.nphases, 2);
    assert_string_equal(r.phase_name[1], "remove");
}

/* test_sqlite -- every insert transaction creates and deletes the
 * rollback journal and syncs (journal, database, directory). */
static void test_sqlite(void **st)
{
    (void)st;
    struct bh_result r;
    run_wl("sqlite", 1, 30, 0, "rows=300,batch=5,insert_pct=100", &r);
    assert_int_equal(r.opcount[BH_OP_CREATE], 30);
    assert_int_equal(r.opcount[BH_OP_UNLINK], 30);
    assert_true(r.opcount[BH_OP_FSYNC] >= 3 * 30);
    assert_true(r.app_bytes_written >= 30 * 2 * 4096);   /* journal + db page */
    run_wl("sqlite", 1, 30, 0, "rows=300,insert_pct=0", &r);
    assert_int_equal(r.opcount[BH_OP_CREATE] + r.opcount[BH_OP_UNLINK] +
                     r.opcount[BH_OP_FSYNC] + r.opcount[BH_OP_WRITE], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_postmark),
        cmocka_unit_test(test_varmail),
        cmocka_unit_test(test_fileserver),
        cmocka_unit_test(test_webserver),
        cmocka_unit_test(test_oltp),
        cmocka_unit_test(test_iozone),
        cmocka_unit_test(test_ganger),
        cmocka_unit_test(test_sqlite),
        cmocka_unit_test(test_andrew),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
