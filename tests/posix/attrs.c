/*
 * posix/attrs.c -- getattr and setattr: chmod (type kept, ctime only),
 * chown (S_ISUID/S_ISGID cleared on regular files), utimensat (explicit
 * with nanoseconds, NOW, ctime always now), truncate errors (EISDIR,
 * EINVAL, EFBIG), timestamps of reads/writes/truncates at ns resolution,
 * st_blocks, ubj_stat_to_posix, persistence of every field.
 */
#include "testutil.h"

#include <time.h>

/* now_ts -- CLOCK_REALTIME. */
static struct timespec now_ts(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts;
}

/* test_getattr_root -- the root directory's attributes. */
static void test_getattr_root(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &st));
    assert_int_equal(st.ino, UBJ_ROOT_INO);
    assert_true(S_ISDIR(st.mode));
    assert_int_equal(st.nlink, 2);
    assert_int_equal(st.blksize, 4096);
    assert_true(st.mtime.tv_sec > 1600000000);
    assert_rc(ubj_getattr(fs, 0, &st), -ENOENT);
    assert_rc(ubj_getattr(fs, 2, &st), -ENOENT);        /* free inode */
    assert_rc(ubj_getattr(fs, 1ull << 40, &st), -ENOENT);
    assert_rc(ubj_getattr(fs, UINT64_MAX, &st), -ENOENT);
}

/* test_chmod -- permission bits change, type stays, ctime only. */
static void test_chmod(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st0, st1;
    assert_ok(tpath_create(fs, "/f", 0644, &st0));
    t_sleep_ns(2000000);
    struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = 04711 };
    assert_ok(ubj_setattr(fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.mode, S_IFREG | 04711);
    assert_true(ts_cmp(&st1.ctime, &st0.ctime) > 0);
    assert_int_equal(ts_cmp(&st1.mtime, &st0.mtime), 0);
    /* type bits in sa.mode are ignored: the type is kept */
    sa.mode = S_IFDIR | 0600;
    assert_ok(ubj_setattr(fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.mode, S_IFREG | 0600);
    /* directories and symlinks too; *st may be NULL */
    struct ubj_stat d;
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    sa.mode = 01777;
    assert_ok(ubj_setattr(fs, d.ino, &sa, NULL));
    assert_ok(ubj_getattr(fs, d.ino, &d));
    assert_int_equal(d.mode, S_IFDIR | 01777);
    assert_rc(ubj_setattr(fs, 4444, &sa, NULL), -ENOENT);
}

/* test_chown -- uid/gid; S_ISUID and S_ISGID cleared on regular files,
 * kept on directories; ctime set. */
static void test_chown(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st0, st1;
    assert_ok(tpath_create(fs, "/f", 06755, &st0));
    t_sleep_ns(2000000);
    struct ubj_setattr sa = { .valid = UBJ_SET_UID | UBJ_SET_GID, .uid = 1000,
                              .gid = 2000 };
    assert_ok(ubj_setattr(fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.uid, 1000);
    assert_int_equal(st1.gid, 2000);
    assert_int_equal(st1.mode, S_IFREG | 0755);
    assert_true(ts_cmp(&st1.ctime, &st0.ctime) > 0);
    /* uid only */
    sa.valid = UBJ_SET_UID;
    sa.uid = 7;
    sa.gid = 9999;
    assert_ok(ubj_setattr(fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.uid, 7);
    assert_int_equal(st1.gid, 2000);
    sa.valid = UBJ_SET_GID;
    sa.uid = 9999;
    sa.gid = 8;
    assert_ok(ubj_setattr(fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.uid, 7);
    assert_int_equal(st1.gid, 8);
    /* a directory keeps its set-id bits */
    struct ubj_stat d;
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    struct ubj_setattr m = { .valid = UBJ_SET_MODE, .mode = 02775 };
    assert_ok(ubj_setattr(fs, d.ino, &m, NULL));
    sa.valid = UBJ_SET_UID | UBJ_SET_GID;
    assert_ok(ubj_setattr(fs, d.ino, &sa, &d));
    assert_int_equal(d.mode, S_IFDIR | 02775);
    /* a symlink can be chowned */
    struct ubj_stat l;
    assert_ok(tpath_symlink(fs, "t", "/l"));
    assert_ok(ubj_setattr(fs, tpath_ino(fs, "/l"), &sa, &l));
    assert_int_equal(l.uid, 9999);
}

/* test_utimens -- explicit times with ns, NOW, explicit ctime. */
static void test_utimens(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat st0, st1;
    assert_ok(tpath_create(t->fs, "/f", 0644, &st0));
    struct ubj_setattr sa = { .valid = UBJ_SET_ATIME | UBJ_SET_MTIME };
    sa.atime.tv_sec = 1000000000;
    sa.atime.tv_nsec = 123456789;
    sa.mtime.tv_sec = 1234567890;
    sa.mtime.tv_nsec = 987654321;
    struct timespec before = now_ts();
    assert_ok(ubj_setattr(t->fs, st0.ino, &sa, &st1));
    struct timespec after = now_ts();
    assert_int_equal(st1.atime.tv_sec, 1000000000);
    assert_int_equal(st1.atime.tv_nsec, 123456789);
    assert_int_equal(st1.mtime.tv_sec, 1234567890);
    assert_int_equal(st1.mtime.tv_nsec, 987654321);
    assert_true(ts_cmp(&st1.ctime, &before) >= 0);
    assert_true(ts_cmp(&st1.ctime, &after) <= 0);
    /* only mtime: atime kept */
    sa.valid = UBJ_SET_MTIME;
    sa.mtime.tv_sec = 5;
    sa.mtime.tv_nsec = 1;
    assert_ok(ubj_setattr(t->fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.atime.tv_sec, 1000000000);
    assert_int_equal(st1.mtime.tv_sec, 5);
    assert_int_equal(st1.mtime.tv_nsec, 1);
    /* times before the epoch */
    sa.valid = UBJ_SET_ATIME;
    sa.atime.tv_sec = -1000;
    sa.atime.tv_nsec = 5;
    assert_ok(ubj_setattr(t->fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.atime.tv_sec, -1000);
    assert_int_equal(st1.atime.tv_nsec, 5);
    /* NOW */
    sa.valid = UBJ_SET_ATIME_NOW | UBJ_SET_MTIME_NOW;
    before = now_ts();
    assert_ok(ubj_setattr(t->fs, st0.ino, &sa, &st1));
    after = now_ts();
    assert_true(ts_cmp(&st1.atime, &before) >= 0 && ts_cmp(&st1.atime, &after) <= 0);
    assert_true(ts_cmp(&st1.mtime, &before) >= 0 && ts_cmp(&st1.mtime, &after) <= 0);
    assert_true(ts_cmp(&st1.ctime, &before) >= 0 && ts_cmp(&st1.ctime, &after) <= 0);
    /* explicit ctime (FUSE may pass it) */
    sa.valid = UBJ_SET_CTIME | UBJ_SET_MTIME;
    sa.ctime.tv_sec = 1500000000;
    sa.ctime.tv_nsec = 42;
    sa.mtime.tv_sec = 1400000000;
    sa.mtime.tv_nsec = 43;
    assert_ok(ubj_setattr(t->fs, st0.ino, &sa, &st1));
    assert_int_equal(st1.ctime.tv_sec, 1500000000);
    assert_int_equal(st1.ctime.tv_nsec, 42);
    /* nanoseconds survive a remount */
    ubj_test_remount(t->dev, &t->fs);
    assert_ok(ubj_getattr(t->fs, st0.ino, &st0));
    assert_int_equal(ts_cmp(&st0.atime, &st1.atime), 0);
    assert_int_equal(st0.mtime.tv_sec, 1400000000);
    assert_int_equal(st0.mtime.tv_nsec, 43);
    assert_int_equal(st0.ctime.tv_sec, 1500000000);
    assert_int_equal(st0.ctime.tv_nsec, 42);
    /* a directory's times too */
    sa.valid = UBJ_SET_MTIME;
    sa.mtime.tv_sec = 777;
    sa.mtime.tv_nsec = 999999999;
    assert_ok(ubj_setattr(t->fs, UBJ_ROOT_INO, &sa, &st1));
    assert_int_equal(st1.mtime.tv_sec, 777);
    assert_int_equal(st1.mtime.tv_nsec, 999999999);
}

/* test_write_times -- write sets mtime and ctime, read changes neither;
 * the clock has ns resolution (not whole seconds). */
static void test_write_times(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st0, st1;
    assert_ok(tpath_create(fs, "/f", 0644, &st0));
    int subsec = 0;
    for (int i = 0; i < 5; i++) {
        t_sleep_ns(1500000);
        assert_rc(ubj_pwrite(fs, st0.ino, "abc", 3, i), 3);
        assert_ok(ubj_getattr(fs, st0.ino, &st1));
        assert_true(ts_cmp(&st1.mtime, &st0.mtime) > 0);
        assert_true(ts_cmp(&st1.ctime, &st0.ctime) > 0);
        assert_int_equal(ts_cmp(&st1.mtime, &st1.ctime), 0);
        subsec |= st1.mtime.tv_nsec % 1000000 != 0;
        st0 = st1;
    }
    assert_true(subsec);
    t_sleep_ns(1500000);
    char buf[8];
    assert_rc(ubj_pread(fs, st0.ino, buf, 8, 0), 7);
    assert_ok(ubj_getattr(fs, st0.ino, &st1));
    assert_int_equal(ts_cmp(&st1.mtime, &st0.mtime), 0);
    assert_int_equal(ts_cmp(&st1.ctime, &st0.ctime), 0);
    /* truncate (shrink and grow) sets both */
    t_sleep_ns(1500000);
    assert_ok(tpath_truncate(fs, "/f", 1));
    assert_ok(ubj_getattr(fs, st0.ino, &st1));
    assert_true(ts_cmp(&st1.mtime, &st0.mtime) > 0);
    assert_true(ts_cmp(&st1.ctime, &st0.ctime) > 0);
    st0 = st1;
    t_sleep_ns(1500000);
    assert_ok(tpath_truncate(fs, "/f", 100000));
    assert_ok(ubj_getattr(fs, st0.ino, &st1));
    assert_true(ts_cmp(&st1.mtime, &st0.mtime) > 0);
    /* the parent is not touched by a write */
    struct ubj_stat r0, r1;
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &r0));
    t_sleep_ns(1500000);
    assert_rc(ubj_pwrite(fs, st0.ino, "z", 1, 0), 1);
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &r1));
    assert_int_equal(ts_cmp(&r0.mtime, &r1.mtime), 0);
    /* unlink of a name with other links sets the inode's ctime */
    assert_ok(tpath_link(fs, "/f", "/g"));
    assert_ok(ubj_getattr(fs, st0.ino, &st0));
    t_sleep_ns(1500000);
    assert_ok(tpath_unlink(fs, "/g"));
    assert_ok(ubj_getattr(fs, st0.ino, &st1));
    assert_true(ts_cmp(&st1.ctime, &st0.ctime) > 0);
    assert_int_equal(st1.nlink, 1);
}

/* test_truncate_errors -- EISDIR, EINVAL, EFBIG, ENOENT. */
static void test_truncate_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = 10 };
    assert_rc(ubj_setattr(fs, UBJ_ROOT_INO, &sa, NULL), -EISDIR);
    assert_ok(tpath_symlink(fs, "target", "/l"));
    assert_rc(ubj_setattr(fs, tpath_ino(fs, "/l"), &sa, NULL), -EINVAL);
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "p", S_IFIFO | 0644, 0, NULL, NULL));
    assert_rc(ubj_setattr(fs, tpath_ino(fs, "/p"), &sa, NULL), -EINVAL);
    assert_ok(tpath_create(fs, "/f", 0644, NULL));
    sa.size = UBJ_MAX_FILE_SIZE + 1;
    assert_rc(ubj_setattr(fs, tpath_ino(fs, "/f"), &sa, NULL), -EFBIG);
    sa.size = UINT64_MAX;
    assert_rc(ubj_setattr(fs, tpath_ino(fs, "/f"), &sa, NULL), -EFBIG);
    struct ubj_stat st;
    assert_ok(tpath_stat(fs, "/f", &st));
    assert_int_equal(st.size, 0);
    /* a failed setattr changes nothing else either */
    sa.valid = UBJ_SET_SIZE | UBJ_SET_MODE;
    sa.mode = 0600;
    assert_rc(ubj_setattr(fs, UBJ_ROOT_INO, &sa, NULL), -EISDIR);
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &st));
    assert_int_equal(st.mode & 07777, 0755);
    sa.valid = UBJ_SET_SIZE;
    sa.size = 1;
    assert_rc(ubj_setattr(fs, 3333, &sa, NULL), -ENOENT);
}

/* test_blocks -- st_blocks in 512-byte units follows allocation. */
static void test_blocks(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    uint8_t buf[4096 * 4];
    memset(buf, 1, sizeof buf);
    assert_ok(tpath_create(fs, "/f", 0644, &st));
    assert_int_equal(st.blocks, 0);
    assert_rc(ubj_pwrite(fs, st.ino, buf, 1, 0), 1);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.blocks, 8);
    assert_rc(ubj_pwrite(fs, st.ino, buf, sizeof buf, 4096), sizeof buf);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.blocks, 5 * 8);
    assert_ok(tpath_truncate(fs, "/f", 4097));
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.blocks, 2 * 8);
    /* a short symlink needs no block, a long one one block */
    assert_ok(tpath_symlink(fs, "short", "/s"));
    assert_ok(tpath_stat(fs, "/s", &st));
    assert_int_equal(st.blocks, 0);
    char tgt[300];
    memset(tgt, 'q', 299);
    tgt[299] = '\0';
    assert_ok(tpath_symlink(fs, tgt, "/l"));
    assert_ok(tpath_stat(fs, "/l", &st));
    assert_int_equal(st.blocks, 8);
}

/* test_stat_to_posix -- every field copied. */
static void test_stat_to_posix(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    struct ubj_cred cr = { 12, 34 };
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "c", S_IFCHR | 0620, 0x0504, &cr, NULL));
    assert_ok(tpath_stat(fs, "/c", &st));
    struct stat ps;
    memset(&ps, 0xff, sizeof ps);
    ubj_stat_to_posix(&st, &ps);
    assert_int_equal(ps.st_dev, 0);
    assert_int_equal(ps.st_ino, st.ino);
    assert_int_equal(ps.st_mode, S_IFCHR | 0620);
    assert_int_equal(ps.st_nlink, 1);
    assert_int_equal(ps.st_uid, 12);
    assert_int_equal(ps.st_gid, 34);
    assert_int_equal(ps.st_rdev, 0x0504);
    assert_int_equal(ps.st_size, 0);
    assert_int_equal(ps.st_blksize, 4096);
    assert_int_equal(ps.st_blocks, st.blocks);
    assert_int_equal(ps.st_mtim.tv_sec, st.mtime.tv_sec);
    assert_int_equal(ps.st_mtim.tv_nsec, st.mtime.tv_nsec);
    assert_int_equal(ps.st_ctim.tv_nsec, st.ctime.tv_nsec);
    assert_int_equal(ps.st_atim.tv_nsec, st.atime.tv_nsec);
}

/* test_attrs_persist -- every attribute is the same after a remount. */
static void test_attrs_persist(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_cred cr = { 100, 200 };
    struct ubj_stat a, b;
    assert_ok(ubj_mknod(t->fs, UBJ_ROOT_INO, "b", S_IFBLK | 0640, 0x0811, &cr, NULL));
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "f", 0604, &cr, NULL));
    assert_rc(tpath_write(t->fs, "/f", "12345", 5, 70000), 5);
    struct ubj_stat before[2];
    assert_ok(tpath_stat(t->fs, "/b", &before[0]));
    assert_ok(tpath_stat(t->fs, "/f", &before[1]));
    ubj_test_remount(t->dev, &t->fs);
    const char *paths[] = { "/b", "/f" };
    for (int i = 0; i < 2; i++) {
        a = before[i];
        assert_ok(tpath_stat(t->fs, paths[i], &b));
        assert_int_equal(a.ino, b.ino);
        assert_int_equal(a.mode, b.mode);
        assert_int_equal(a.nlink, b.nlink);
        assert_int_equal(a.uid, b.uid);
        assert_int_equal(a.gid, b.gid);
        assert_int_equal(a.rdev, b.rdev);
        assert_int_equal(a.size, b.size);
        assert_int_equal(a.blocks, b.blocks);
        assert_int_equal(a.generation, b.generation);
        assert_int_equal(ts_cmp(&a.mtime, &b.mtime), 0);
        assert_int_equal(ts_cmp(&a.ctime, &b.ctime), 0);
        assert_int_equal(ts_cmp(&a.crtime, &b.crtime), 0);
    }
}

/* test_generation -- an inode number reused after a free gets a new
 * generation (NFS file handles tell them apart); crtime is creation. */
static void test_generation(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new_inodes(1024, 64, &dev, &fs);   /* few inodes: reuse */
    uint64_t gen[128] = { 0 };
    char seen[128] = { 0 };
    int reused = 0;
    for (int i = 0; i < 300; i++) {
        struct ubj_stat a;
        assert_ok(tpath_create(fs, "/g", 0644, &a));
        assert_ok(tpath_unlink(fs, "/g"));
        assert_true(a.ino < 128);
        if (seen[a.ino]) {
            reused++;
            assert_true(a.generation != gen[a.ino]);
        }
        seen[a.ino] = 1;
        gen[a.ino] = a.generation;
    }
    assert_true(reused > 0);
    struct ubj_stat c;
    assert_ok(tpath_create(fs, "/c", 0644, &c));
    assert_int_equal(ts_cmp(&c.crtime, &c.ctime), 0);
    t_sleep_ns(2000000);
    assert_rc(tpath_write(fs, "/c", "x", 1, 0), 1);
    struct ubj_stat c2;
    assert_ok(tpath_stat(fs, "/c", &c2));
    assert_int_equal(ts_cmp(&c2.crtime, &c.crtime), 0);
    assert_true(ts_cmp(&c2.ctime, &c.ctime) > 0);
    ubj_test_fs_done(dev, fs);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_getattr_root), T(test_chmod), T(test_chown), T(test_utimens),
        T(test_write_times), T(test_truncate_errors), T(test_blocks),
        T(test_stat_to_posix), T(test_attrs_persist),
        cmocka_unit_test(test_generation),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
