/*
 * tests/journal/modes.c -- the journal modes through the file-system API
 * (issue 4, items 1-5 and 7): format and mount, what survives a process
 * crash (a copy of the device taken without unmount), group commit,
 * counters, checkpoint and wrap-around of a small log, revoke, the tail
 * kept behind a block re-dirtied or freed in the running transaction,
 * escaped blocks, read-only recovery, fsck on an image that needs
 * recovery, other modes on a journaled image, async commit, the timer.
 */
#include "jtest.h"

#define MB_BLOCKS 4096u      /* 16 MiB images */
#define MB_BUFS 1024u

/* mb_each -- run fn once per journal mode. */
static void mb_each(void (*fn)(const char *mode))
{
    for (int i = 0; i < JT_NMODES; i++)
        fn(jt_modes[i]);
}

/* mb_case -- a test that runs fn[0] once per journal mode, then fn[1]
 * (if any) once per mode: the state cmocka hands to mb_test_each. */
struct mb_case {
    void (*fn[2])(const char *mode);
};

/* mb_test_each -- the body of every per-mode test (its mb_case is the
 * prestate MB_EACH_TEST gives it). */
static void mb_test_each(void **state)
{
    const struct mb_case *c = *state;
    for (int i = 0; i < 2 && c->fn[i]; i++)
        mb_each(c->fn[i]);
}

/* MB_EACH_TEST -- a cmocka test called `test` running the given
 * per-mode functions (one or two) through mb_test_each. */
#define MB_EACH_TEST(test, ...) \
    { .name = #test, .test_func = mb_test_each, \
      .initial_state = &(struct mb_case){ { __VA_ARGS__ } } }

/* mb_done -- unmount fs; ubj_check of its device dev must say clean;
 * destroy dev. */
static void mb_done(struct ubj_fs *fs, struct ubj_bdev *dev)
{
    assert_ok(ubj_unmount(fs));
    jt_check_clean(dev, 0);
    ubj_bdev_destroy(dev);
}

/* mb_crash_expect -- a crash copy of dev, mounted with nbufs buffers,
 * holds `path` as len pattern bytes of seed and checks clean after. */
static void mb_crash_expect(struct ubj_bdev *dev, uint32_t nbufs, const char *path,
                            size_t len, uint64_t seed)
{
    struct ubj_bdev *copy = jt_crash_copy(dev);
    struct ubj_fs *fs;
    assert_ok(jt_mount(copy, nbufs, 0, &fs));
    jt_expect_file(fs, path, len, seed);
    mb_done(fs, copy);
}

/* mb_jsuper -- dev's journal geometry and journal superblock. */
static void mb_jsuper(struct ubj_bdev *dev, struct ubj_jgeom *g, struct ubj_jsuper *js)
{
    struct ubj_super sb;
    struct ubj_mode_image img;
    assert_int_equal(ubj_bdev_read(dev, 0, 1, &sb), 0);
    fs_mode_image(&sb, dev, false, &img);
    assert_ok(ubj_journal_geom(&img, g));
    assert_ok(ubj_jsuper_read(g, js));
}

/* ---- basics ------------------------------------------------------------------ */

/* mb_basic_one -- files survive unmount and remount; fsck is clean; the
 * image records the mode and a journal of the default size. */
static void mb_basic_one(const char *mode)
{
    struct ubj_stat st;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, mode, 0, MB_BUFS, &dev, &fs);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    jt_put_file(fs, "/d/a", 10000, 1);
    jt_put_file(fs, "/b", 3 * JT_BS, 2);
    assert_ok(tpath_rename(fs, "/d/a", "/c", 0));
    assert_ok(tpath_unlink(fs, "/b"));
    assert_ok(ubj_unmount(fs));
    jt_check_clean(dev, 0);
    struct ubj_super sb;
    assert_int_equal(ubj_bdev_read(dev, 0, 1, &sb), 0);
    assert_int_equal(sb.journal_blocks, 1024);
    assert_int_equal(sb.journal_start, sb.it_start + sb.it_blocks);
    assert_int_equal(sb.data_start, sb.journal_start + sb.journal_blocks);
    assert_ok(jt_mount(dev, MB_BUFS, 0, &fs));
    jt_expect_file(fs, "/c", 10000, 1);
    assert_rc(tpath_stat(fs, "/b", &st), -ENOENT);
    mb_done(fs, dev);
}

/* test_format_sizes -- default journal sizes as mke2fs, bounds, refusals. */
static void test_format_sizes(void **state)
{
    (void)state;
    assert_int_equal(ubj_journal_default_blocks(256), 64);
    assert_int_equal(ubj_journal_default_blocks(2048), 512);
    assert_int_equal(ubj_journal_default_blocks(8192), 1024);
    assert_int_equal(ubj_journal_default_blocks(32768), 4096);
    assert_int_equal(ubj_journal_default_blocks(1u << 20), 16384);
    assert_int_equal(ubj_journal_default_blocks(1ull << 30), 262144);
    struct ubj_bdev *dev;
    assert_int_equal(ubj_bdev_ram_create(2048, &dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_NONE };
    assert_ok(ubj_format(dev, &fo));               /* none: no journal */
    struct ubj_super sb;
    assert_int_equal(ubj_bdev_read(dev, 0, 1, &sb), 0);
    assert_int_equal(sb.journal_blocks, 0);
    fo.journal_blocks = 100;                        /* none, asked for one */
    assert_ok(ubj_format(dev, &fo));
    assert_int_equal(ubj_bdev_read(dev, 0, 1, &sb), 0);
    assert_int_equal(sb.journal_blocks, 100);
    jt_check_clean(dev, 0);
    fo.journal_blocks = 10;
    assert_rc(ubj_format(dev, &fo), -EINVAL);
    fo.journal_blocks = 5000;
    assert_rc(ubj_format(dev, &fo), -ENOSPC);
    /* a journal mode on an image without a journal refuses to mount */
    fo.journal_blocks = 0;
    assert_ok(ubj_format(dev, &fo));
    struct ubj_config cfg = { .mode = UBJ_MODE_ORDERED, .flags = UBJ_MOUNT_NO_TIMER };
    struct ubj_fs *fs;
    assert_rc(ubj_mount(dev, &cfg, &fs), -EINVAL);
    ubj_bdev_destroy(dev);
}

/* ---- crash (process kill) and recovery ------------------------------------------ */

/* mb_crash_one -- fsync'd data and names survive a crash without unmount;
 * a change made after the last commit does not. */
static void mb_crash_one(const char *mode)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct ubj_stat st;
    jt_new_fs(MB_BLOCKS, mode, 0, MB_BUFS, &dev, &fs);
    jt_put_file(fs, "/a", 50000, 3);
    ubj_ino_t a = tpath_ino(fs, "/a");
    assert_ok(ubj_fsync(fs, a, 0));
    assert_ok(tpath_rename(fs, "/a", "/b", 0));
    assert_ok(ubj_fsync(fs, a, 0));
    assert_ok(tpath_mkdir(fs, "/uncommitted", 0755, NULL));
    struct ubj_bdev *copy = jt_crash_copy(dev);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
    /* fsck -n on the crash image replays in memory and finds it clean */
    jt_check_clean(copy, 0);
    assert_ok(jt_mount(copy, MB_BUFS, 0, &fs));
    struct ubj_fs_stats fst;
    ubj_fs_stats_get(fs, &fst);
    assert_true(fst.recovered_blocks > 0);
    jt_expect_file(fs, "/b", 50000, 3);
    assert_rc(tpath_stat(fs, "/a", &st), -ENOENT);
    assert_rc(tpath_stat(fs, "/uncommitted", &st), -ENOENT);
    mb_done(fs, copy);
}

/* mb_group_one -- a second fsync with nothing new costs no flush; a
 * commit costs two flushes (sync commit). */
static void mb_group_one(const char *mode)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, mode, 0, MB_BUFS, &dev, &fs);
    jt_put_file(fs, "/a", 4096, 4);
    ubj_ino_t a = tpath_ino(fs, "/a");
    assert_ok(ubj_fsync(fs, a, 0));
    uint8_t blk[JT_BS];
    jt_fill(blk, sizeof blk, 5, 4096);
    assert_int_equal(ubj_pwrite(fs, a, blk, sizeof blk, 4096), (ssize_t)sizeof blk);
    uint64_t f0 = jt_flushes(dev);
    struct ubj_fs_stats s0, s1;
    ubj_fs_stats_get(fs, &s0);
    assert_ok(ubj_fsync(fs, a, 0));
    uint64_t f1 = jt_flushes(dev);
    assert_int_equal(f1 - f0, 2);
    assert_ok(ubj_fsync(fs, a, 0));     /* the group-commit case */
    assert_ok(ubj_fsync(fs, a, 1));
    assert_int_equal(jt_flushes(dev), f1);
    ubj_fs_stats_get(fs, &s1);
    assert_int_equal(s1.commits - s0.commits, 1);
    assert_true(s1.bytes_journal > s0.bytes_journal);
    if (strcmp(mode, UBJ_MODE_JOURNAL) == 0)   /* the data block was logged */
        assert_true(s1.bytes_journal - s0.bytes_journal >= 4 * JT_BS);
    else                                      /* it went home */
        assert_true(s1.bytes_data - s0.bytes_data >= JT_BS);
    assert_ok(ubj_sync(fs));                  /* sync checkpoints */
    ubj_fs_stats_get(fs, &s1);
    assert_true(s1.checkpoints > s0.checkpoints);
    assert_true(s1.bytes_checkpoint > s0.bytes_checkpoint);
    mb_done(fs, dev);
}

/* mb_wrap_one -- a 64-block journal wraps around and checkpoints many
 * times; crash copies taken along the way recover every fsync'd file. */
static void mb_wrap_one(const char *mode)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, mode, 64, 128, &dev, &fs);
    char path[32];
    for (int i = 0; i < 120; i++) {
        snprintf(path, sizeof path, "/f%d", i % 17);
        jt_put_file(fs, path, (size_t)(i % 5) * 3000 + 1, (uint64_t)i);
        assert_ok(ubj_fsync(fs, tpath_ino(fs, path), 0));
        if (i % 13 == 0)
            mb_crash_expect(dev, 128, path, (size_t)(i % 5) * 3000 + 1, (uint64_t)i);
    }
    struct ubj_fs_stats st;
    ubj_fs_stats_get(fs, &st);
    assert_true(st.checkpoints > 5);
    assert_true(st.bytes_journal > 64 * JT_BS * 3);   /* wrapped several times */
    mb_done(fs, dev);
}

/* ---- revoke and the tail (J3, J6) ------------------------------------------------ */

/* mb_revoke_one -- directory nodes (metadata) logged, then freed: the
 * commit that frees them carries revoke records, so the replay skips the
 * old copies; blocks reused for file data keep the data. */
static void mb_revoke_one(const char *mode)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct ubj_stat st;
    assert_int_equal(ubj_bdev_ram_create(1024, &dev), 0);
    /* data=journal logs /big too: a log that holds all of it keeps the
     * revoking commit live (a checkpoint past it would rightly drop it) */
    bool jdata = strcmp(mode, UBJ_MODE_JOURNAL) == 0;
    struct ubj_format_opts fo = { .mode = mode, .inodes = 600,
                                  .journal_blocks = jdata ? 704 : 256 };
    assert_ok(ubj_format(dev, &fo));
    assert_ok(jt_mount(dev, jdata ? 1024 : 256, 0, &fs));   /* ... nor cache pressure */
    char path[64];
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    for (int i = 0; i < 300; i++) {
        snprintf(path, sizeof path, "/d/a-rather-long-name-%03d", i);
        assert_ok(tpath_create(fs, path, 0644, NULL));
    }
    assert_ok(ubj_sync(fs));      /* dir nodes logged and home */
    assert_ok(tpath_mkdir(fs, "/e", 0755, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/e"), 0));  /* the log is live */
    for (int i = 0; i < 300; i++) {
        snprintf(path, sizeof path, "/d/a-rather-long-name-%03d", i);
        assert_ok(tpath_unlink(fs, path));
    }
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/d"), 0));  /* emptied nodes logged */
    assert_ok(tpath_rmdir(fs, "/d"));                   /* ... and freed */
    /* fill the free space: the freed node blocks are reused for data */
    uint64_t free_blocks = t_free_blocks(fs);
    size_t len = (size_t)(free_blocks - 8) * JT_BS;
    jt_put_file(fs, "/big", len, 7);
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/big"), 0));
    struct ubj_bdev *copy = jt_crash_copy(dev);
    /* the log holds revoke records hiding the old directory nodes */
    struct ubj_jgeom g;
    struct ubj_jsuper js;
    struct ubj_jscan sc;
    mb_jsuper(copy, &g, &js);
    assert_true(js.start != 0);
    assert_ok(ubj_journal_scan(&g, &js, 0, &sc));
    assert_true(sc.revoked > 0);
    ubj_jscan_free(&sc);
    struct ubj_fs *fs2;
    assert_ok(jt_mount(copy, 256, 0, &fs2));
    jt_expect_file(fs2, "/big", len, 7);
    assert_rc(tpath_stat(fs2, "/d", &st), -ENOENT);
    mb_done(fs2, copy);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
}

/* mb_expect_log -- the crash image's log still holds at least n
 * committed transactions (the tail did not pass them). */
static void mb_expect_log(struct ubj_bdev *dev, uint64_t n)
{
    struct ubj_jgeom g;
    struct ubj_jsuper js;
    struct ubj_jscan sc;
    mb_jsuper(dev, &g, &js);
    assert_ok(ubj_journal_scan(&g, &js, 0, &sc));
    if (sc.transactions < n)
        fail_msg("the log holds %llu transactions, expected at least %llu",
                 (unsigned long long)sc.transactions, (unsigned long long)n);
    ubj_jscan_free(&sc);
}

/* mb_reclaim_in_op -- a checkpoint from inside an operation (a handle
 * open, as the cache's reclaim does), without a commit. */
static void mb_reclaim_in_op(struct ubj_fs *fs)
{
    pthread_mutex_lock(&fs->lock);
    struct ubj_handle *h;
    assert_ok(ubj_txn_start(&fs->txn, 1, &h));
    (void)ubj_txn_reclaim(&fs->txn);
    assert_ok(ubj_txn_stop(h));
    pthread_mutex_unlock(&fs->lock);
}

/* mb_tail_redirty -- T1 creates /a (fsync); the running transaction
 * re-dirties the same inode and directory blocks; a checkpoint inside a
 * handle (the cache's reclaim) cannot write them (they hold uncommitted
 * changes) and must not move the tail past T1: a crash then still
 * recovers /a. */
static void mb_tail_redirty(const char *mode)
{
    struct ubj_stat st;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(4 * MB_BLOCKS, mode, 4096, 4096, &dev, &fs);   /* no commit by size */
    assert_ok(tpath_create(fs, "/a", 0644, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/a"), 0));    /* T1 */
    assert_ok(tpath_create(fs, "/b", 0644, NULL));        /* running: same blocks */
    mb_reclaim_in_op(fs);
    struct ubj_bdev *copy = jt_crash_copy(dev);
    mb_expect_log(copy, 1);
    struct ubj_fs *fs2;
    assert_ok(jt_mount(copy, 256, 0, &fs2));
    assert_ok(tpath_stat(fs2, "/a", &st));
    assert_rc(tpath_stat(fs2, "/b", &st), -ENOENT);
    mb_done(fs2, copy);
    mb_done(fs, dev);
}

/* mb_tail_forget -- T1 makes /d with entries (fsync); the running
 * transaction removes them and /d, freeing its node blocks before they
 * went home; a checkpoint inside a handle must keep T1 in the log until
 * the freeing transaction commits: a crash recovers /d whole. */
static void mb_tail_forget(const char *mode)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(4 * MB_BLOCKS, mode, 4096, 4096, &dev, &fs);   /* no commit by size */
    char path[64];
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "/d/some-longer-entry-name-%02d", i);
        assert_ok(tpath_create(fs, path, 0644, NULL));
    }
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/d"), 0));    /* T1 */
    assert_ok(tpath_create(fs, "/x", 0644, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/x"), 0));    /* T2 */
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "/d/some-longer-entry-name-%02d", i);
        assert_ok(tpath_unlink(fs, path));
    }
    assert_ok(tpath_rmdir(fs, "/d"));
    mb_reclaim_in_op(fs);
    struct ubj_bdev *copy = jt_crash_copy(dev);
    mb_expect_log(copy, 2);
    jt_check_clean(copy, 0);
    struct ubj_fs *fs2;
    assert_ok(jt_mount(copy, 512, 0, &fs2));
    assert_int_equal(tdir_count(fs2, tpath_ino(fs2, "/d")), 40);
    mb_done(fs2, copy);
    mb_done(fs, dev);
}

/* ---- escaping, read-only, fsck, other modes ------------------------------------- */

/* test_escaped -- data=journal logs a block that starts with the journal's
 * magic: stored escaped, restored on replay. */
static void test_escaped(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, UBJ_MODE_JOURNAL, 0, MB_BUFS, &dev, &fs);
    uint8_t blk[2 * JT_BS];
    jt_fill(blk, sizeof blk, 9, 0);
    uint32_t magic = UBJ_JMAGIC;
    memcpy(blk, &magic, 4);
    memcpy(blk + JT_BS, &magic, 4);
    assert_ok(tpath_put(fs, "/m", blk, sizeof blk));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/m"), 0));
    struct ubj_bdev *copy = jt_crash_copy(dev);
    struct ubj_fs *fs2;
    assert_ok(jt_mount(copy, MB_BUFS, 0, &fs2));
    uint8_t got[2 * JT_BS];
    assert_int_equal(tpath_read(fs2, "/m", got, sizeof got, 0), (ssize_t)sizeof got);
    assert_memory_equal(got, blk, sizeof blk);
    assert_ok(ubj_unmount(fs2));
    ubj_bdev_destroy(copy);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
}

/* test_rdonly_recovery -- a read-only mount of an image that needs
 * recovery shows the recovered state and writes nothing; fsck -n replays
 * in memory only; fsck -y and a read-write mount replay for good. */
static void test_rdonly_recovery(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, UBJ_MODE_ORDERED, 0, MB_BUFS, &dev, &fs);
    jt_put_file(fs, "/r", 20000, 11);
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/r"), 0));
    struct ubj_bdev *copy = jt_crash_copy(dev);
    struct ubj_bdev *orig = jt_crash_copy(dev);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);

    assert_ok(jt_mount(copy, MB_BUFS, UBJ_MOUNT_RDONLY, &fs));
    jt_expect_file(fs, "/r", 20000, 11);
    assert_rc(tpath_create(fs, "/no", 0644, NULL), -EROFS);
    assert_ok(ubj_unmount(fs));
    assert_true(jt_same_image(copy, orig));       /* nothing written */

    jt_check_clean(copy, 0);                      /* -n: in memory */
    assert_true(jt_same_image(copy, orig));
    assert_int_equal(ubj_test_check(copy, UBJ_CHECK_REPAIR, NULL), UBJ_CHECK_CLEAN);
    assert_false(jt_same_image(copy, orig));      /* -y replayed it */
    struct ubj_jgeom g;
    struct ubj_jsuper js;
    mb_jsuper(copy, &g, &js);
    assert_int_equal(js.start, 0);                /* the log restarted */
    assert_ok(jt_mount(copy, MB_BUFS, 0, &fs));
    jt_expect_file(fs, "/r", 20000, 11);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(copy);
    ubj_bdev_destroy(orig);
}

/* test_other_modes -- mode none mounting a crashed journaled image
 * replays its log first (read-only: refused); a journal mode mounts an
 * image another journal mode made. */
static void test_other_modes(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, UBJ_MODE_WRITEBACK, 0, MB_BUFS, &dev, &fs);
    jt_put_file(fs, "/w", 9000, 12);
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/w"), 0));
    struct ubj_bdev *copy = jt_crash_copy(dev);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
    struct ubj_config cfg = { .mode = UBJ_MODE_NONE,
                              .flags = UBJ_MOUNT_NO_TIMER | UBJ_MOUNT_RDONLY };
    assert_rc(ubj_mount(copy, &cfg, &fs), -EROFS);
    cfg.flags = UBJ_MOUNT_NO_TIMER;
    assert_ok(ubj_mount(copy, &cfg, &fs));
    jt_expect_file(fs, "/w", 9000, 12);
    jt_put_file(fs, "/n", 100, 13);
    assert_ok(ubj_unmount(fs));
    jt_check_clean(copy, 0);
    cfg.mode = UBJ_MODE_JOURNAL;
    assert_ok(ubj_mount(copy, &cfg, &fs));
    jt_expect_file(fs, "/n", 100, 13);
    mb_done(fs, copy);
}

/* test_async_commit -- one flush per commit; crash copies recover. */
static void test_async_commit(void **state)
{
    (void)state;
    for (int m = 0; m < JT_NMODES; m++) {
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        assert_int_equal(ubj_bdev_ram_create(MB_BLOCKS, &dev), 0);
        jt_format(dev, jt_modes[m], 0, UBJ_FORMAT_JOURNAL_ASYNC);
        assert_ok(jt_mount(dev, MB_BUFS, 0, &fs));
        jt_put_file(fs, "/a", 5000, 14);
        assert_ok(ubj_fsync(fs, tpath_ino(fs, "/a"), 0));
        jt_put_file(fs, "/a", 6000, 15);
        uint64_t f0 = jt_flushes(dev);
        assert_ok(ubj_fsync(fs, tpath_ino(fs, "/a"), 0));
        uint64_t want = strcmp(jt_modes[m], UBJ_MODE_ORDERED) == 0 ? 2 : 1;
        assert_int_equal(jt_flushes(dev) - f0, want);
        mb_crash_expect(dev, MB_BUFS, "/a", 6000, 15);
        assert_ok(ubj_unmount(fs));
        ubj_bdev_destroy(dev);
    }
}

/* test_timer_commit -- the commit interval commits without an fsync. */
static void test_timer_commit(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_int_equal(ubj_bdev_ram_create(MB_BLOCKS, &dev), 0);
    jt_format(dev, UBJ_MODE_ORDERED, 0, 0);
    struct ubj_config cfg = { .cache_blocks = MB_BUFS, .commit_interval_ms = 20 };
    assert_ok(ubj_mount(dev, &cfg, &fs));
    struct ubj_fs_stats s0, s1;
    ubj_fs_stats_get(fs, &s0);
    jt_put_file(fs, "/t", 7000, 16);
    for (int i = 0; i < 200; i++) {
        ubj_fs_stats_get(fs, &s1);
        if (s1.commits > s0.commits)
            break;
        t_sleep_ns(5000000);
    }
    assert_true(s1.commits > s0.commits);
    struct ubj_bdev *copy = jt_crash_copy(dev);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
    assert_ok(jt_mount(copy, MB_BUFS, 0, &fs));
    jt_expect_file(fs, "/t", 7000, 16);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(copy);
}

/* test_big_write_journal_mode -- a write larger than the running
 * transaction's limit in data=journal mode: the excess is ordered. */
static void test_big_write_journal_mode(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, UBJ_MODE_JOURNAL, 64, 128, &dev, &fs);
    jt_put_file(fs, "/big", 2u << 20, 17);
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/big"), 0));
    mb_crash_expect(dev, 128, "/big", 2u << 20, 17);
    mb_done(fs, dev);
}

/* test_big_commit_batched -- one commit of far more log blocks than the
 * log writer stages per request (64) times its writes in flight (4):
 * its requests go in batches, the writer waiting for the oldest before
 * staging into its buffer again, and all before the flush and the commit
 * block; the crash copy recovers the whole file. */
static void test_big_commit_batched(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(MB_BLOCKS, UBJ_MODE_JOURNAL, 2048, MB_BUFS, &dev, &fs);
    struct ubj_bdev_stats b0, b1;
    ubj_bdev_stats_get(dev, &b0);
    jt_put_file(fs, "/big", 3u << 20, 23);
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/big"), 0));
    ubj_bdev_stats_get(dev, &b1);
    /* 768 data blocks logged: at least 12 requests of 64 blocks */
    assert_true(b1.bytes_written - b0.bytes_written >= (768ull + 12) * 4096);
    assert_true(b1.writes - b0.writes >= 12);
    mb_crash_expect(dev, MB_BUFS, "/big", 3u << 20, 23);
    mb_done(fs, dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        MB_EACH_TEST(test_basic, mb_basic_one),
        cmocka_unit_test(test_format_sizes),
        MB_EACH_TEST(test_crash_copy, mb_crash_one),
        MB_EACH_TEST(test_group_commit_and_counters, mb_group_one),
        MB_EACH_TEST(test_wrap_and_checkpoint, mb_wrap_one),
        MB_EACH_TEST(test_revoke, mb_revoke_one),
        MB_EACH_TEST(test_tail_kept, mb_tail_redirty, mb_tail_forget),
        cmocka_unit_test(test_escaped),
        cmocka_unit_test(test_rdonly_recovery),
        cmocka_unit_test(test_other_modes),
        cmocka_unit_test(test_async_commit),
        cmocka_unit_test(test_timer_commit),
        cmocka_unit_test(test_big_write_journal_mode),
        cmocka_unit_test(test_big_commit_batched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
