/*
 * posix/mount.c -- ubj_format, ubj_mount, ubj_unmount, ubj_statfs_get,
 * ubj_fs_stats_get: size limits (1 MiB minimum, more than 2^40 blocks
 * refused), bad options and configs, inode counts, the uuid, statfs
 * counts following allocation, images of 1 MiB and of 1 TiB (a sparse
 * test device), remount cycles.
 */
#include "testutil.h"

/* test_format_limits -- EINVAL below 256 blocks, EFBIG above 2^40. */
static void test_format_limits(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    assert_ok(ubj_bdev_ram_create(255, &dev));
    assert_rc(ubj_format(dev, NULL), -EINVAL);
    assert_true(ubj_errormsg()[0] != '\0');
    ubj_bdev_destroy(dev);
    /* more than 2^40 blocks: refused before writing anything */
    assert_ok(tdev_sparse_create((1ull << 40) + 1, &dev));
    assert_rc(ubj_format(dev, NULL), -EFBIG);
    struct ubj_bdev_stats bs;
    ubj_bdev_stats_get(dev, &bs);
    assert_int_equal(bs.writes, 0);
    ubj_bdev_destroy(dev);
    /* exactly 1 MiB works and takes files */
    struct ubj_fs *fs;
    ubj_test_fs_new(256, &dev, &fs);
    uint8_t buf[8192];
    tpattern_fill(buf, sizeof buf, 1, 0);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_put(fs, "/d/f", buf, sizeof buf));
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    assert_true(sf.blocks <= 256 && sf.blocks > 128);
    ubj_test_remount(dev, &fs);
    uint8_t out[8192];
    assert_rc(tpath_read(fs, "/d/f", out, sizeof out, 0), sizeof out);
    assert_memory_equal(out, buf, sizeof out);
    ubj_test_fs_done(dev, fs);
}

/* test_format_options -- bad mode, long label, impossible inode counts;
 * the uuid and inode count given are used. */
static void test_format_options(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_ok(ubj_bdev_ram_create(1024, &dev));
    struct ubj_format_opts fo = { .mode = "no-such-mode" };
    assert_rc(ubj_format(dev, &fo), -EINVAL);
    fo = (struct ubj_format_opts){ .label = "0123456789012345678901234567890123456789" };
    assert_rc(ubj_format(dev, &fo), -EINVAL);
    fo = (struct ubj_format_opts){ .inodes = 1000000 };
    assert_rc(ubj_format(dev, &fo), -ENOSPC);
    /* a valid one with every option */
    fo = (struct ubj_format_opts){ .inodes = 500, .mode = UBJ_MODE_NONE,
                                   .label = "testlabel" };
    for (int i = 0; i < 16; i++)
        fo.uuid[i] = (uint8_t)(0xa0 + i);
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    assert_memory_equal(sf.uuid, fo.uuid, 16);
    assert_true(sf.files >= 500 && sf.files < 500 + 2 * 15);
    assert_true(sf.ffree == sf.files - 2 || sf.ffree == sf.files - 1);
    assert_int_equal(sf.bsize, 4096);
    assert_int_equal(sf.namemax, 255);
    assert_int_equal(sf.bavail, sf.bfree);
    assert_true(sf.blocks <= 1024);
    assert_true(sf.bfree < sf.blocks);
    assert_ok(ubj_unmount(fs));
    /* a random uuid differs between two formats */
    fo = (struct ubj_format_opts){ 0 };
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    struct ubj_statfs sf2;
    assert_ok(ubj_statfs_get(fs, &sf2));
    assert_ok(ubj_unmount(fs));
    assert_ok(ubj_format(dev, NULL));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    struct ubj_statfs sf3;
    assert_ok(ubj_statfs_get(fs, &sf3));
    assert_true(memcmp(sf2.uuid, sf3.uuid, 16) != 0);
    static const uint8_t zero[16];
    assert_true(memcmp(sf2.uuid, zero, 16) != 0);
    /* format erased the old tree */
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 0);
    ubj_test_fs_done(dev, fs);
}

/* test_format_not_zeroed -- without UBJ_FORMAT_ZEROED over a dirty
 * device, format still produces a clean empty file system. */
static void test_format_not_zeroed(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_ok(ubj_bdev_ram_create(2048, &dev));
    uint8_t blk[4096];
    for (uint64_t b = 0; b < 2048; b++) {
        tpattern_fill(blk, sizeof blk, b, 0);
        assert_ok(ubj_bdev_write(dev, b, 1, blk));
    }
    assert_ok(ubj_format(dev, NULL));
    int lines = -1;
    assert_int_equal(ubj_test_check(dev, 0, &lines), UBJ_CHECK_CLEAN);
    assert_int_equal(lines, 0);
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 0);
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    for (int i = 0; i < 50; i++) {
        char p[16];
        snprintf(p, sizeof p, "/f%d", i);
        assert_ok(tpath_create(fs, p, 0644, NULL));
    }
    assert_int_equal(t_free_inodes(fs), sf.ffree - 50);
    ubj_test_fs_done(dev, fs);
}

/* test_mount_config -- bad versions, modes and cache sizes; defaults. */
static void test_mount_config(void **state)
{
    struct tfs *t = TFS(state);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    struct ubj_config cfg = { .version = 1, .flags = UBJ_MOUNT_NO_TIMER };
    assert_rc(ubj_mount(t->dev, &cfg, &t->fs), -EINVAL);
    assert_true(ubj_errormsg()[0] != '\0');
    cfg = (struct ubj_config){ .mode = "bogus", .flags = UBJ_MOUNT_NO_TIMER };
    assert_rc(ubj_mount(t->dev, &cfg, &t->fs), -EINVAL);
    /* below the documented minimum of 64 buffers: refused or raised to it */
    cfg = (struct ubj_config){ .cache_blocks = 10, .flags = UBJ_MOUNT_NO_TIMER };
    int rc = ubj_mount(t->dev, &cfg, &t->fs);
    assert_true(rc == 0 || rc == -EINVAL);
    if (rc == 0) {
        assert_rc(tdir_count(t->fs, UBJ_ROOT_INO), 0);
        assert_ok(ubj_unmount(t->fs));
    }
    /* a minimum cache still works for a tree bigger than the cache */
    cfg = (struct ubj_config){ .cache_blocks = 64, .mode = UBJ_MODE_NONE,
                               .flags = UBJ_MOUNT_NO_TIMER };
    assert_ok(ubj_mount(t->dev, &cfg, &t->fs));
    uint8_t buf[4096 * 3];
    for (int i = 0; i < 100; i++) {
        char p[32];
        snprintf(p, sizeof p, "/f%d", i);
        tpattern_fill(buf, sizeof buf, (uint64_t)i, 0);
        assert_ok(tpath_put(t->fs, p, buf, sizeof buf));
    }
    uint8_t out[sizeof buf];
    for (int i = 0; i < 100; i++) {
        char p[32];
        snprintf(p, sizeof p, "/f%d", i);
        assert_rc(tpath_read(t->fs, p, out, sizeof out, 0), sizeof out);
        assert_int_equal(tpattern_check(out, sizeof out, (uint64_t)i, 0), sizeof out);
    }
    struct ubj_fs_stats fst;
    ubj_fs_stats_get(t->fs, &fst);
    assert_true(fst.cache_evictions > 0);
    assert_true(fst.writeback_blocks > 0);
    assert_ok(ubj_unmount(t->fs));
    /* NULL config: defaults, with the background timer */
    assert_ok(ubj_mount(t->dev, NULL, &t->fs));
    assert_rc(tdir_count(t->fs, UBJ_ROOT_INO), 100);
    /* with a timer and a short interval, still fine */
    assert_ok(ubj_unmount(t->fs));
    cfg = (struct ubj_config){ .commit_interval_ms = 1 };
    assert_ok(ubj_mount(t->dev, &cfg, &t->fs));
    assert_ok(tpath_put(t->fs, "/timer", "t", 1));
    t_sleep_ns(20000000);
    assert_ok(tpath_unlink(t->fs, "/timer"));
}

/* test_statfs_counts -- bfree/ffree follow every allocation and free. */
static void test_statfs_counts(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_statfs s0, s1;
    assert_ok(ubj_statfs_get(fs, &s0));
    assert_true(s0.files >= TFS_INODES && s0.files < TFS_INODES + 30);
    assert_true(s0.ffree == s0.files - 2 || s0.ffree == s0.files - 1);
    assert_true(s0.blocks > TFS_BLOCKS * 3 / 4 && s0.blocks <= TFS_BLOCKS);
    uint8_t buf[4096 * 10];
    tpattern_fill(buf, sizeof buf, 1, 0);
    assert_ok(tpath_put(fs, "/f", buf, sizeof buf));
    assert_ok(ubj_statfs_get(fs, &s1));
    assert_int_equal(s1.ffree, s0.ffree - 1);
    assert_int_equal(s0.bfree - s1.bfree, 10);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(ubj_statfs_get(fs, &s1));
    assert_int_equal(s1.ffree, s0.ffree - 2);
    assert_int_equal(s0.bfree - s1.bfree, 11);    /* a dir has one node */
    assert_ok(tpath_unlink(fs, "/f"));
    assert_ok(tpath_rmdir(fs, "/d"));
    assert_ok(ubj_statfs_get(fs, &s1));
    assert_int_equal(s1.ffree, s0.ffree);
    assert_int_equal(s1.bfree, s0.bfree);
    assert_int_equal(s1.blocks, s0.blocks);
}

/* test_stats -- counters move with the work done. */
static void test_stats(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_fs_stats a, b;
    ubj_fs_stats_get(fs, &a);
    uint8_t buf[4096];
    assert_ok(tpath_put(fs, "/f", buf, sizeof buf));
    for (int i = 0; i < 10; i++)
        assert_rc(tpath_read(fs, "/f", buf, sizeof buf, 0), sizeof buf);
    assert_ok(ubj_sync(fs));
    ubj_fs_stats_get(fs, &b);
    assert_true(b.cache_hits > a.cache_hits);
    assert_true(b.bytes_data > a.bytes_data);
    assert_true(b.bytes_metadata > a.bytes_metadata);
    assert_true(b.dev_flushes > a.dev_flushes);
}

/* test_remount_cycles -- 20 remounts with work in between. */
static void test_remount_cycles(void **state)
{
    struct tfs *t = TFS(state);
    uint8_t buf[5000], out[5000];
    for (int i = 0; i < 20; i++) {
        char p[32];
        snprintf(p, sizeof p, "/c%d", i);
        tpattern_fill(buf, sizeof buf, (uint64_t)i, 0);
        assert_ok(tpath_put(t->fs, p, buf, sizeof buf));
        if (i > 0) {
            snprintf(p, sizeof p, "/c%d", i - 1);
            assert_rc(tpath_write(t->fs, p, "Z", 1, 4999), 1);
        }
        ubj_test_remount(t->dev, &t->fs);
    }
    for (int i = 0; i < 20; i++) {
        char p[32];
        snprintf(p, sizeof p, "/c%d", i);
        assert_rc(tpath_read(t->fs, p, out, sizeof out, 0), sizeof out);
        assert_int_equal(tpattern_check(out, 4999, (uint64_t)i, 0), 4999);
        if (i < 19)
            assert_int_equal(out[4999], 'Z');
    }
}

/* test_huge_image -- a 1 TiB image on a sparse device: format, mount,
 * write far apart, remount, check. */
static void test_huge_image(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    const uint64_t nb = 1ull << 28;          /* 1 TiB */
    assert_ok(tdev_sparse_create(nb, &dev));
    struct ubj_format_opts fo = { .inodes = 4096, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    assert_true(sf.blocks > nb - nb / 16 && sf.blocks <= nb);
    assert_true(sf.bfree > nb - nb / 16);
    uint8_t buf[65536];
    tpattern_fill(buf, sizeof buf, 77, 0);
    assert_ok(tpath_put(fs, "/a", buf, sizeof buf));
    struct ubj_stat st;
    assert_ok(tpath_create(fs, "/sparse", 0644, &st));
    assert_rc(ubj_pwrite(fs, st.ino, buf, sizeof buf, (off_t)1 << 42), sizeof buf);
    ubj_test_remount(dev, &fs);
    uint8_t out[65536];
    assert_rc(tpath_read(fs, "/a", out, sizeof out, 0), sizeof out);
    assert_memory_equal(out, buf, sizeof out);
    assert_rc(ubj_pread(fs, st.ino, out, sizeof out, (off_t)1 << 42), sizeof out);
    assert_memory_equal(out, buf, sizeof out);
    assert_true(tdev_sparse_mapped(dev) < 20000);
    ubj_test_fs_done(dev, fs);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        cmocka_unit_test(test_format_limits), cmocka_unit_test(test_format_options),
        cmocka_unit_test(test_format_not_zeroed), T(test_mount_config),
        T(test_statfs_counts), T(test_stats), T(test_remount_cycles),
        cmocka_unit_test(test_huge_image),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
