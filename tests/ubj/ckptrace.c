/*
 * tests/ubj/ckptrace.c -- the timer's checkpoint releases the mount lock
 * while it writes its listed buffers home (src/txn/ubj.c,
 * ubjm_checkpoint_unlocked).  Meanwhile a writer may checkpoint those
 * buffers itself, change them in place (CLEAN -> DIRTY) and freeze them
 * again in a commit whose record is not yet stored.  That version must
 * not go home: a crash would leave an uncommitted transaction on the
 * device (this is the rare kill-loop failure of issue 3: "inode N is not
 * reachable from the root").
 *
 * The race is made deterministic with the mode's test points: thread A
 * runs ubj_tick() and stops right after releasing the lock; the main
 * thread (B) checkpoints with ubj_sync, makes a directory and fsyncs; at
 * UBJM_TP_COMMIT_FROZEN (phase 1 durable, no commit record yet) B lets A
 * write and waits until A's write and flush are done, then takes a
 * crash snapshot of the image and the region.  Recovery of the snapshot
 * must show the state before B's transaction (no /d), fsck clean.  The
 * broken variant UBJM_BREAK_CKPT_ANY_FROZEN (the old behaviour: write
 * whatever is FROZEN at write time) must be caught.
 */
#include "ubjtest.h"
#include <pthread.h>
#include <time.h>
#include "txn/ubj.h"

#if UBJ_TEST_HOOKS   /* every test: ubjm_test_on_point, a broken variant */
struct cr {
    struct ubj_fs *fs;
    struct ubj_bdev *dev;
    char region[256], snap_region[256];
    pthread_mutex_t m;
    pthread_cond_t cv;
    int phase;                 /* 0, 1 A stopped, 2 B frozen, 3 A written */
    struct ubj_bdev *snap;     /* the crash snapshot of the image */
    int tick_rc;
    bool armed;                /* B's fsync of /d is the commit to stop */
};

/* cr_wait -- wait (at most 10 s) until c->phase >= want; false on timeout. */
static bool cr_wait(struct cr *c, int want)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    while (c->phase < want)
        if (pthread_cond_timedwait(&c->cv, &c->m, &ts) != 0)
            return false;
    return true;
}

/* cr_set -- move to phase p and wake the other thread. */
static void cr_set(struct cr *c, int p)
{
    c->phase = p;
    pthread_cond_broadcast(&c->cv);
}

/* cr_snapshot -- copy the image and the region as a crash leaves them. */
static void cr_snapshot(struct cr *c)
{
    c->snap = ut_ram_copy(c->dev);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_ok(ut_file_get(c->region, &buf, &len));
    assert_ok(ut_file_put(c->snap_region, buf, len));
    free(buf);
}

/* cr_point -- the test points: A stops after unlocking until B froze;
 * B, once frozen, waits for A's write, then snapshots. */
static void cr_point(void *ctx, enum ubjm_test_point p)
{
    struct cr *c = ctx;
    pthread_mutex_lock(&c->m);
    if (p == UBJM_TP_CKPT_UNLOCKED && c->phase == 0) {
        cr_set(c, 1);
        (void)cr_wait(c, 2);
    } else if (p == UBJM_TP_CKPT_WRITTEN && c->phase == 2) {
        cr_set(c, 3);
    } else if (p == UBJM_TP_COMMIT_FROZEN && c->phase == 1 && c->armed) {
        cr_set(c, 2);
        assert_true(cr_wait(c, 3));
        cr_snapshot(c);
    }
    pthread_mutex_unlock(&c->m);
}

/* cr_ticker -- thread A: one timer tick (commit, unlocked checkpoint). */
static void *cr_ticker(void *arg)
{
    struct cr *c = arg;
    c->tick_rc = ubj_tick(c->fs);
    return NULL;
}

/* cr_run -- the race once; returns whether recovery of the snapshot
 * showed an uncommitted transaction (or fsck complained). */
static bool cr_run(enum ubjm_break variant)
{
    struct cr c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.m, NULL);
    pthread_cond_init(&c.cv, NULL);
    ut_region_path(c.region, sizeof c.region, "ckptrace");
    ut_region_path(c.snap_region, sizeof c.snap_region, "ckptrace-snap");
    ubjm_test_break(variant);
    ubjm_test_limits(0, 1);          /* the tick checkpoints at once */
    ut_new_fs(4096, c.region, 256, &c.dev, &c.fs);
    /* committed, FROZEN: the root directory, inode table, bitmaps, sb */
    assert_ok(tpath_put(c.fs, "/a", "alpha", 5));
    assert_ok(ubj_fsync(c.fs, tpath_ino(c.fs, "/a"), 0));

    ubjm_test_on_point(cr_point, &c);
    pthread_t a;
    assert_int_equal(pthread_create(&a, NULL, cr_ticker, &c), 0);
    pthread_mutex_lock(&c.m);
    assert_true(cr_wait(&c, 1));        /* A listed the buffers, unlocked */
    pthread_mutex_unlock(&c.m);
    assert_ok(ubj_sync(c.fs));          /* B: checkpoint them: CLEAN */
    struct ubj_stat st;
    assert_ok(tpath_mkdir(c.fs, "/d", 0755, &st));   /* in place + new blocks */
    pthread_mutex_lock(&c.m);
    c.armed = true;             /* (sync's own commits above are not it) */
    pthread_mutex_unlock(&c.m);
    assert_ok(ubj_fsync(c.fs, st.ino, 0));           /* stops at phase 1 */
    pthread_join(a, NULL);
    ubjm_test_on_point(NULL, NULL);
    assert_int_equal(c.phase, 3);
    assert_ok(c.tick_rc);
    assert_non_null(c.snap);
    assert_ok(ubj_unmount(c.fs));
    ubj_bdev_destroy(c.dev);
    ubjm_test_break(UBJM_BREAK_NONE);

    /* the crash: fsck of the pair, then recovery */
    int lines;
    bool bad = ut_check_pair(c.snap, c.snap_region, &lines) != UBJ_CHECK_CLEAN;
    struct ubj_fs *fs;
    assert_ok(ut_mount(c.snap, c.snap_region, 256, 0, 0, &fs));
    uint8_t buf[8];
    assert_int_equal(tpath_read(fs, "/a", buf, sizeof buf, 0), 5);
    assert_memory_equal(buf, "alpha", 5);
    bad = bad || tpath_ino(fs, "/d") != 0;   /* /d's commit record was never stored */
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(c.snap);
    unlink(c.region);
    unlink(c.snap_region);
    ubjm_test_limits(0, 0);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.m);
    return bad;
}

/* the fixed checkpoint writes only the versions it listed */
static void test_checkpoint_skips_refrozen(void **state)
{
    (void)state;
    assert_false(cr_run(UBJM_BREAK_NONE));
}

/* the old behaviour puts the uncommitted transaction on the device */
static void test_broken_variant_caught(void **state)
{
    (void)state;
    assert_true(cr_run(UBJM_BREAK_CKPT_ANY_FROZEN));
}

#else
#define test_checkpoint_skips_refrozen t_no_hooks
#define test_broken_variant_caught t_no_hooks
#endif /* UBJ_TEST_HOOKS */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_skips_refrozen),
        cmocka_unit_test(test_broken_variant_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
