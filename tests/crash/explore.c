/*
 * tests/crash/explore.c -- the crash-state explorer (src/crash/, issue 8):
 * the workload language, the oracle's data rules, and the cases that
 * must fail: mode `none`
 * and every test-only broken variant (src/txn/ubj.h, src/txn/journal.h)
 * must be reported -- under write-through, those that break an NVM
 * fence; those that only drop a device flush cannot be seen there (and
 * must not be).  The quick exploration of generated workloads in every
 * mode, with crashes during recovery and under both persistence models,
 * is tests/crash/quick.sh's (`ubjfs crashtest --quick`: the same engine,
 * more workloads; it ran here too until 2026-12-02, twice the CI time).
 *
 * Environment: UBJ_CRASH_SEED (default 1).
 */
#include "testutil.h"
#include <unistd.h>
#include "crash/crash.h"

static enum cx_oracle t_oracle;   /* the oracle cfg() asks for */

/* cfg -- the explorer's configuration for mode m. */
static struct cx_config cfg(const char *m)
{
    struct cx_config c;
    cx_config_default(&c);
    c.mode = m;
    c.oracle = t_oracle;
    c.seed = tprng_env_seed("UBJ_CRASH_SEED", 1);
    return c;
}

/* parse -- a workload from text (must parse). */
static void parse(const char *text, struct cx_workload *w)
{
    int rc = cx_workload_parse(text, "test", w);
    if (rc != 0)
        fail_msg("parse: %d %s", rc, ubj_errormsg());
}

/* explore -- run one exploration; returns its failures. */
static uint64_t explore(const struct cx_config *c, const struct cx_workload *w,
                        struct cx_result *r)
{
    memset(r, 0, sizeof *r);
    int rc = cx_explore(c, w, r);
    if (rc != 0)
        fail_msg("explore %s in %s: %d %s", w->name, c->mode, rc, ubj_errormsg());
    if (r->failures)
        fprintf(stderr, "  %s %s: %llu/%llu states failed; first: %s: %s\n", c->mode,
                w->name, (unsigned long long)r->failures, (unsigned long long)r->states,
                r->first.point, r->first.why);
    return r->failures;
}

/* the language: every op parses, formats back to the same line, and
 * bad lines are refused with the line number. */
static void test_language(void **state)
{
    (void)state;
    static const char text[] =
        "# setup\nmkdir /A\ncreat /A/f\nbegin\n"
        "write /A/f 4096 8192\nappend /A/f 48\ntruncate /A/f 5008\n"
        "fallocate /A/f 0 16384 keep\nfallocate /A/f 0 4K\nlink /A/f /g\n"
        "unlink /g\nrename /A/f /h  # trailing comment\nrmdir /A\nsymlink /h /s\n"
        "setxattr /h user.k 64\nremovexattr /h user.k\nfsync /h\nfdatasync /h\nsync\n"
        "open /h\nclose /h\ntick\n";
    struct cx_workload w, w2;
    parse(text, &w);
    assert_int_equal(w.nsetup, 2);
    assert_int_equal(w.nops, 18);
    assert_int_equal(w.ops[4].len, 4096);         /* 4K */
    assert_int_equal(w.ops[3].keep_size, 1);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cx_workload_write(f, &w, "a comment\non two lines");
    fclose(f);
    parse(buf, &w2);
    assert_int_equal(w2.nops, w.nops);
    assert_int_equal(w2.nsetup, w.nsetup);
    assert_memory_equal(w2.ops, w.ops, w.nops * sizeof w.ops[0]);
    assert_non_null(strstr(buf, "# on two lines\n"));
    free(buf);
    buf = NULL;
    struct cx_workload r;                      /* random workloads round-trip */
    assert_ok(cx_gen_random(&r, 42, 60));
    assert_int_equal(r.nops, 60);
    f = open_memstream(&buf, &len);
    cx_workload_write(f, &r, NULL);
    fclose(f);
    parse(buf, &w2);
    assert_memory_equal(w2.ops, r.ops, r.nops * sizeof r.ops[0]);
    free(buf);
    assert_int_equal(cx_gen_random(&r, 1, CX_MAX_OPS + 1), -E2BIG);
    static const char *const bad[] = {
        "frobnicate /a\n", "write /a 1 16\n", "write a 0 16\n", "creat\n",
        "sync /a\n", "write /a 0 512K\n", "begin\nbegin\n", "setxattr /a user.x 2048\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(cx_workload_parse(bad[i], "bad", &w), -EINVAL);
        assert_non_null(strstr(ubj_errormsg(), "bad:"));
    }
}

/* the data cells: foreign, stale, garbage and zero cells are told apart,
 * and ORDERED accepts exactly the later versions of the same cell. */
static void test_oracle_cells(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new(1024, &dev, &fs);
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    uint8_t buf[4096];
    cx_fill(buf, sizeof buf, st.ino, 0, 300);
    assert_int_equal(ubj_pwrite(fs, st.ino, buf, sizeof buf, 0), 4096);
    struct cx_tree *ref, *t;
    assert_ok(cx_tree_take(fs, &ref));
    char why[300];
    struct { uint64_t id, off; uint32_t ver; int zero, exact_ok, ordered_ok; const char *word; }
    cases[] = {
        { 0, 0, 0, 0, 1, 1, NULL },                  /* unchanged */
        { st.ino, 64, 310, 0, 0, 1, NULL },          /* a later version: ordered only */
        { st.ino, 64, 320, 0, 0, 0, "not yet started" },   /* beyond hi */
        { st.ino, 64, 200, 0, 0, 0, "stale data" },  /* an older version */
        { st.ino + 1, 64, 310, 0, 0, 0, "foreign" }, /* another file's */
        { st.ino, 128, 310, 0, 0, 0, "foreign" },    /* another offset's */
        { 0, 0, 0, 1, 0, 0, "zeros" },               /* a stale zero block */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t cell[16] = { 0 };
        if (i > 0 && !cases[i].zero) {
            cx_fill(cell, 16, cases[i].id, cases[i].off, cases[i].ver);
            assert_int_equal(ubj_pwrite(fs, st.ino, cell, 16, 64), 16);
        } else if (cases[i].zero) {
            assert_int_equal(ubj_pwrite(fs, st.ino, cell, 16, 64), 16);
        }
        assert_ok(cx_tree_take(fs, &t));
        why[0] = '\0';
        assert_int_equal(cx_tree_match(t, ref, CX_DATA_EXACT, 315, 1, why, sizeof why),
                         cases[i].exact_ok);
        int o = cx_tree_match(t, ref, CX_DATA_ORDERED, 315, 1, why, sizeof why);
        assert_int_equal(o, cases[i].ordered_ok);
        if (cases[i].word && strstr(why, cases[i].word) == NULL)
            fail_msg("case %zu: '%s' does not say '%s'", i, why, cases[i].word);
        if (cases[i].zero)
            assert_int_equal(cx_tree_match(t, ref, CX_DATA_ORDERED | CX_DATA_ZERO_OK, 315,
                                           1, why, sizeof why), 1);
        assert_int_equal(cx_tree_match(t, ref, CX_DATA_ANY, 315, 1, why, sizeof why), 1);
        cx_tree_free(t);
        assert_int_equal(ubj_pwrite(fs, st.ino, buf + 64, 16, 64), 16);   /* restore */
    }
    /* metadata: a missing name and a size change are never accepted */
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "g", 0644, NULL, NULL));
    assert_ok(cx_tree_take(fs, &t));
    assert_int_equal(cx_tree_match(t, ref, CX_DATA_ANY, 315, 0, why, sizeof why), 0);
    assert_non_null(strstr(why, "/g exists"));
    assert_int_equal(cx_tree_match(ref, t, CX_DATA_ANY, 315, 0, why, sizeof why), 0);
    assert_non_null(strstr(why, "/g is missing"));
    cx_tree_free(t);
    /* counts: an open unlinked file (an orphan) keeps its space */
    struct cx_tree *before;
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "g"));
    assert_ok(cx_tree_take(fs, &before));
    struct ubj_stat h;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "h", 0644, NULL, &h));
    assert_int_equal(ubj_pwrite(fs, h.ino, buf, sizeof buf, 0), 4096);
    assert_ok(ubj_open(fs, h.ino, O_RDONLY));
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "h"));
    assert_ok(cx_tree_take(fs, &t));
    assert_int_equal(cx_tree_match(t, before, CX_DATA_EXACT, 315, 0, why, sizeof why), 1);
    assert_int_equal(cx_tree_match(t, before, CX_DATA_EXACT, 315, 1, why, sizeof why), 0);
    assert_non_null(strstr(why, "not reclaimed"));
    cx_tree_free(t);
    assert_ok(ubj_release(fs, h.ino));
    assert_ok(cx_tree_take(fs, &t));
    assert_int_equal(cx_tree_match(t, before, CX_DATA_EXACT, 315, 1, why, sizeof why), 1);
    cx_tree_free(t);
    cx_tree_free(before);
    cx_tree_free(ref);
    ubj_test_fs_done(dev, fs);
}

/* orphans: a file unlinked while open is reclaimed by every recovery, and
 * a rename over an open target too; free counts are compared. */
static void test_orphans(void **state)
{
    (void)state;
    static const char *const modes[] = { "ubj", "ordered", "journal" };
    struct cx_workload w;
    parse("creat /a\nwrite /a 0 20K\nsync\nbegin\nopen /a\nunlink /a\nfsync /\n"
          "creat /b\nwrite /b 0 8K\nopen /b\nrename /a2 /b\nsync\n", &w);
    /* rename /a2 fails (ENOENT) on both sides: a failing op is harmless */
    for (int m = 0; m < 3; m++) {
        struct cx_config c = cfg(modes[m]);
        c.dcrash = 7;
        struct cx_result r;
        assert_int_equal(explore(&c, &w, &r), 0);
        assert_true(r.states > 20);
    }
}

/* set_break -- select broken variant b (NULL: none); only a test build
 * (UBJ_TEST_HOOKS) has any. */
static void set_break(const char *b)
{
#if UBJ_TEST_HOOKS
    assert_ok(cx_set_break(b != NULL ? b : "none"));
#else
    assert_null(b);
#endif
}

/* expect_caught_in -- workload text in mode m with broken variant b
 * (NULL: none) under persistence model `persist` must produce failures. */
static void expect_caught_in(const char *m, const char *b, const char *text,
                             enum cx_persist persist)
{
    struct cx_workload w;
    parse(text, &w);
    struct cx_config c = cfg(m);
    c.stop_at_first = 1;
    c.persist = persist;
    set_break(b);
    struct cx_result r;
    uint64_t f = explore(&c, &w, &r);
    set_break(NULL);
    const char *pm = persist == CX_PERSIST_THROUGH ? " (write-through)" : "";
    fprintf(stderr, "  %s%s%s%s: caught after %llu states: %s\n", m, b ? " broken " : "",
            b ? b : "", pm, (unsigned long long)r.states, r.first.why);
    if (f == 0)
        fail_msg("mode %s, variant %s%s: not caught in %llu states", m, b ? b : "-", pm,
                 (unsigned long long)r.states);
    /* and the same workload passes unbroken (except in none) */
    if (b) {
        c.stop_at_first = 0;
        assert_int_equal(explore(&c, &w, &r), 0);
    }
}

/* expect_caught -- as expect_caught_in, under the volatile-cache model. */
static void expect_caught(const char *m, const char *b, const char *text)
{
    expect_caught_in(m, b, text, CX_PERSIST_VOLATILE);
}

static const char wl_rename[] =
    "creat /f\nwrite /f 0 8K\nmkdir /d\nbegin\ncreat /d/n\nwrite /d/n 0 4K\n"
    "rename /d/n /f\nfsync /d\nsync\ncreat /g\nfsync /g\n";

/* mode none makes no promise: the explorer must say so. */
static void test_none_inconsistent(void **state)
{
    (void)state;
    expect_caught("none", NULL, wl_rename);
    expect_caught_in("none", NULL, wl_rename, CX_PERSIST_THROUGH);
}

static const char wl_names[] =
    "mkdir /d\ncreat /d/a\nwrite /d/a 0 8K\ncreat /b\nbegin\nlink /d/a /l\n"
    "rename /b /d/b\nunlink /d/a\nfsync /d\nmkdir /e\ncreat /e/x\nwrite /e/x 0 4K\n"
    "fsync /e/x\nrename /d/b /e/y\nrmdir /e\nsync\nunlink /l\n";

/* the integrity oracle's tree rules alone: the states before and after a
 * rename pass; losing both names, or a durable name, fails; a begun write
 * of a durable file still asks for its name. */
static void test_integrity_rules(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new(1024, &dev, &fs);
    struct cx_workload w;
    parse("mkdir /d\ncreat /f\nbegin\nrename /f /d/g\n", &w);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_create(fs, "/f", 0644, NULL));
    struct cx_tree *ref[2], *neither, *nodir;
    assert_ok(cx_tree_take(fs, &ref[0]));
    assert_ok(tpath_rename(fs, "/f", "/d/g", 0));
    assert_ok(cx_tree_take(fs, &ref[1]));
    assert_ok(tpath_unlink(fs, "/d/g"));
    assert_ok(cx_tree_take(fs, &neither));
    assert_ok(tpath_rmdir(fs, "/d"));
    assert_ok(tpath_create(fs, "/f", 0644, NULL));
    assert_ok(cx_tree_take(fs, &nodir));
    long long rc[1] = { 0 };
    struct cx_integrity q = { .w = &w, .ref = ref, .refrc = rc, .lo = 0, .hi = 1,
                              .fsync_all = 1 };
    char why[448];
    assert_int_equal(cx_integrity_match(&q, ref[0], why, sizeof why), 1);
    assert_int_equal(cx_integrity_match(&q, ref[1], why, sizeof why), 1);
    assert_int_equal(cx_integrity_match(&q, neither, why, sizeof why), 0);
    assert_non_null(strstr(why, "kept neither name"));
    q.hi = 0;                                       /* the rename not begun */
    assert_int_equal(cx_integrity_match(&q, ref[1], why, sizeof why), 0);
    assert_int_equal(cx_integrity_match(&q, nodir, why, sizeof why), 0);
    assert_non_null(strstr(why, "/d"));
    struct cx_workload w2;                          /* a write keeps the name */
    parse("mkdir /d\ncreat /f\nbegin\nwrite /f 0 16\n", &w2);
    struct cx_tree *ref2[2] = { ref[0], ref[0] };
    struct cx_integrity q2 = { .w = &w2, .ref = ref2, .refrc = rc, .lo = 0, .hi = 1,
                               .fsync_all = 1 };
    assert_int_equal(cx_integrity_match(&q2, ref[0], why, sizeof why), 1);
    assert_int_equal(cx_integrity_match(&q2, ref[1], why, sizeof why), 0);
    assert_non_null(strstr(why, "/f is missing"));
    cx_tree_free(ref[0]);
    cx_tree_free(ref[1]);
    cx_tree_free(neither);
    cx_tree_free(nodir);
    ubj_test_fs_done(dev, fs);
}

/* the integrity oracle can fail: mode none breaks it (fsck finds more than
 * leaks, durable names go), under both persistence models. */
static void test_integrity_none(void **state)
{
    (void)state;
    t_oracle = CX_ORACLE_INTEGRITY;
    expect_caught("none", NULL, wl_rename);
    expect_caught_in("none", NULL, wl_names, CX_PERSIST_THROUGH);
    t_oracle = CX_ORACLE_AUTO;
}

/* a prefix-consistent mode keeps the weaker integrity promise. */
static void test_integrity_ordered(void **state)
{
    (void)state;
    t_oracle = CX_ORACLE_INTEGRITY;
    const char *wl[] = { wl_rename, wl_names };
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof wl / sizeof wl[0]; i++) {
            struct cx_workload w;
            parse(wl[i], &w);
            struct cx_config c = cfg("ordered");
            c.persist = p ? CX_PERSIST_THROUGH : CX_PERSIST_VOLATILE;
            struct cx_result r;
            assert_int_equal(explore(&c, &w, &r), 0);
            assert_true(r.states > 20);
        }
    t_oracle = CX_ORACLE_AUTO;
}

/* atomic block writes (cx_config.atomic_block): the torn states inside a
 * block are not built -- fewer states on the same workload, the same
 * ones otherwise (ordered passes either way, under both models). */
static void test_atomic_block(void **state)
{
    (void)state;
    struct cx_workload w;
    parse(wl_names, &w);
    for (int p = 0; p < 2; p++) {
        uint64_t n[2];
        for (int a = 0; a < 2; a++) {
            struct cx_config c = cfg("ordered");
            c.persist = p ? CX_PERSIST_THROUGH : CX_PERSIST_VOLATILE;
            c.atomic_block = a;
            struct cx_result r;
            assert_int_equal(explore(&c, &w, &r), 0);
            n[a] = r.states;
        }
        fprintf(stderr, "  ordered %s: %llu states torn at sectors, %llu with atomic "
                "blocks\n", p ? "write-through" : "volatile", (unsigned long long)n[0],
                (unsigned long long)n[1]);
        assert_true(n[1] > 20 && n[1] < n[0]);
    }
}

#if UBJ_TEST_HOOKS   /* the broken variants: a test build only */
static const char wl_overwrite[] =
    "creat /f\nwrite /f 0 8K\nbegin\nwrite /f 0 4K\nfsync /f\nwrite /f 0 4K\nfsync /f\n";

static void test_broken_ubj_data_flush(void **state)
{
    (void)state;
    expect_caught("ubj", "ubj-data-flush", wl_overwrite);
}

static void test_broken_ubj_commit_persist(void **state)
{
    (void)state;
    expect_caught("ubj", "ubj-commit-persist", wl_overwrite);
}

static void test_broken_ubj_early_free(void **state)
{
    (void)state;
    expect_caught("ubj", "ubj-early-free", wl_overwrite);
}

static void test_broken_ubj_ckpt_flush(void **state)
{
    (void)state;
    expect_caught("ubj", "ubj-ckpt-flush", wl_rename);
}

static void test_broken_journal_commit_flush(void **state)
{
    (void)state;
    expect_caught("ordered", "journal-commit-flush", wl_overwrite);
    expect_caught("journal", "journal-commit-flush", wl_overwrite);
}

/* mode sync's broken variants (src/txn/sync.h): each breaks one of seed
 * 003's ordering rules and must be caught by the integrity oracle, under
 * both persistence models; unbroken, the same workload passes. */
static void test_broken_sync(void **state)
{
    (void)state;
    static const char *const b[] = { "sync-no-init", "sync-no-nullify", "sync-no-rename" };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        expect_caught("sync", b[i], wl_names);
        expect_caught_in("sync", b[i], wl_names, CX_PERSIST_THROUGH);
    }
}

static void test_broken_journal_ckpt_flush(void **state)
{
    (void)state;
    expect_caught("ordered", "journal-ckpt-flush", wl_rename);
    expect_caught("journal", "journal-ckpt-flush", wl_rename);
}

/* expect_unseen -- broken variant b in mode m, caught under the volatile
 * model on this workload, leaves no failing state under write-through:
 * it only drops a device flush, and with every write durable on
 * completion a flush changes nothing (a write-through model that lost
 * completed writes, or kept the volatile one's epochs, fails here). */
static void expect_unseen(const char *m, const char *b, const char *text)
{
    struct cx_workload w;
    parse(text, &w);
    struct cx_config c = cfg(m);
    c.persist = CX_PERSIST_THROUGH;
    set_break(b);
    struct cx_result r;
    uint64_t f = explore(&c, &w, &r);
    set_break(NULL);
    assert_int_equal(f, 0);
    assert_true(r.states > 10);
}

/* under write-through, the variants that lose a persistence fence of the
 * NVM (ubj-data-flush, ubj-commit-persist, ubj-early-free's order) are
 * still caught; those that drop a device flush cannot be seen. */
static void test_broken_through(void **state)
{
    (void)state;
    expect_caught_in("ubj", "ubj-data-flush", wl_overwrite, CX_PERSIST_THROUGH);
    expect_caught_in("ubj", "ubj-commit-persist", wl_overwrite, CX_PERSIST_THROUGH);
    expect_caught_in("ubj", "ubj-early-free", wl_overwrite, CX_PERSIST_THROUGH);
    expect_unseen("ubj", "ubj-ckpt-flush", wl_rename);
    expect_unseen("ordered", "journal-commit-flush", wl_overwrite);
    expect_unseen("journal", "journal-commit-flush", wl_overwrite);
    expect_unseen("ordered", "journal-ckpt-flush", wl_rename);
    expect_unseen("journal", "journal-ckpt-flush", wl_rename);
}

/* minimization keeps a failing workload failing and drops what is not
 * needed. */
static void test_minimize(void **state)
{
    (void)state;
    struct cx_workload w;
    parse("creat /f\nwrite /f 0 8K\nbegin\nmkdir /x\nmkdir /y\nwrite /f 0 4K\n"
          "fsync /f\n", &w);
    struct cx_config c = cfg("ubj");
    assert_ok(cx_set_break("ubj-commit-persist"));
    struct cx_failure f = { .point = "" };
    assert_ok(cx_minimize(&c, &w, &f));
    struct cx_result r;
    c.stop_at_first = 1;
    uint64_t still = explore(&c, &w, &r);
    assert_ok(cx_set_break("none"));
    assert_true(still > 0);
    assert_true(w.nops < 4);
    assert_true(f.why[0] != '\0');
}

#else
#define test_broken_ubj_data_flush t_no_hooks
#define test_broken_ubj_commit_persist t_no_hooks
#define test_broken_ubj_early_free t_no_hooks
#define test_broken_ubj_ckpt_flush t_no_hooks
#define test_broken_journal_commit_flush t_no_hooks
#define test_broken_journal_ckpt_flush t_no_hooks
#define test_minimize t_no_hooks
#define test_broken_sync t_no_hooks
#define test_broken_through t_no_hooks
#endif /* UBJ_TEST_HOOKS */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_language),
        cmocka_unit_test(test_oracle_cells),
        cmocka_unit_test(test_orphans),
        cmocka_unit_test(test_none_inconsistent),
        cmocka_unit_test(test_integrity_rules),
        cmocka_unit_test(test_integrity_none),
        cmocka_unit_test(test_integrity_ordered),
        cmocka_unit_test(test_atomic_block),
        cmocka_unit_test(test_broken_ubj_data_flush),
        cmocka_unit_test(test_broken_ubj_commit_persist),
        cmocka_unit_test(test_broken_ubj_early_free),
        cmocka_unit_test(test_broken_ubj_ckpt_flush),
        cmocka_unit_test(test_broken_journal_commit_flush),
        cmocka_unit_test(test_broken_journal_ckpt_flush),
        cmocka_unit_test(test_broken_sync),
        cmocka_unit_test(test_broken_through),
        cmocka_unit_test(test_minimize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
