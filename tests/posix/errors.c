/*
 * posix/errors.c -- error cases shared by many calls: name validation
 * (empty, '/', 256 bytes) for every call that takes a name, EROFS for
 * every change on a UBJ_MOUNT_RDONLY mount (and no device write at all),
 * a read-write mount of a read-only device, and ubj_errormsg() being set
 * (one line) by failing calls.
 */
#include "testutil.h"

#include <unistd.h>

static char name256[257];

/* check_msg -- the thread's message is non-empty and one line. */
static void check_msg(void)
{
    const char *m = ubj_errormsg();
    assert_non_null(m);
    assert_true(m[0] != '\0');
    assert_null(strchr(m, '\n'));
}

/* bad_names -- every naming call refuses `n` with `want`. */
static void bad_names(struct ubj_fs *fs, const char *n, int want)
{
    struct ubj_stat st;
    ubj_ino_t f = tpath_ino(fs, "/f");
    assert_true(f != 0);
    assert_rc(ubj_lookup(fs, UBJ_ROOT_INO, n, &st), want);
    check_msg();
    assert_rc(ubj_create(fs, UBJ_ROOT_INO, n, 0644, NULL, NULL), want);
    check_msg();
    assert_rc(ubj_mknod(fs, UBJ_ROOT_INO, n, S_IFIFO | 0644, 0, NULL, NULL), want);
    assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, n, 0755, NULL, NULL), want);
    assert_rc(ubj_symlink(fs, "t", UBJ_ROOT_INO, n, NULL, NULL), want);
    assert_rc(ubj_link(fs, f, UBJ_ROOT_INO, n, NULL), want);
    assert_rc(ubj_unlink(fs, UBJ_ROOT_INO, n), want);
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, n), want);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, n, UBJ_ROOT_INO, "x", 0), want);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "f", UBJ_ROOT_INO, n, 0), want);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "f", UBJ_ROOT_INO, n,
                         UBJ_RENAME_NOREPLACE), want);
    check_msg();
}

/* test_names -- EINVAL for "" and "a/b", ENAMETOOLONG for 256 bytes. */
static void test_names(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_create(fs, "/f", 0644, NULL));
    memset(name256, 'q', 256);
    name256[256] = '\0';
    bad_names(fs, "", -EINVAL);
    bad_names(fs, "a/b", -EINVAL);
    bad_names(fs, "/", -EINVAL);
    bad_names(fs, name256, -ENAMETOOLONG);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 1);
    struct ubj_stat st;
    assert_ok(tpath_stat(fs, "/f", &st));
    assert_int_equal(st.nlink, 1);
}

/* test_errormsg -- a failing call sets a message; the message is per
 * thread (another call's success does not matter here). */
static void test_errormsg(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_rc(ubj_lookup(fs, UBJ_ROOT_INO, "missing", &st), -ENOENT);
    check_msg();
    assert_rc(ubj_getattr(fs, 999, &st), -ENOENT);
    check_msg();
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "."), -EINVAL);
    check_msg();
    assert_rc(ubj_path_lookup(fs, "relative", 0, &st), -EINVAL);
    check_msg();
}

/* rdonly_all -- every change refused with EROFS; reads work. */
static void rdonly_all(struct ubj_fs *fs)
{
    struct ubj_stat st, f, d;
    assert_ok(tpath_stat(fs, "/f", &f));
    assert_ok(tpath_stat(fs, "/d", &d));
    assert_rc(ubj_create(fs, UBJ_ROOT_INO, "n", 0644, NULL, NULL), -EROFS);
    check_msg();
    assert_rc(ubj_mknod(fs, UBJ_ROOT_INO, "n", S_IFIFO, 0, NULL, NULL), -EROFS);
    assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, "n", 0755, NULL, NULL), -EROFS);
    assert_rc(ubj_symlink(fs, "t", UBJ_ROOT_INO, "n", NULL, NULL), -EROFS);
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, "n", NULL), -EROFS);
    assert_rc(ubj_unlink(fs, UBJ_ROOT_INO, "f"), -EROFS);
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "d"), -EROFS);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "f", UBJ_ROOT_INO, "g", 0), -EROFS);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "f", UBJ_ROOT_INO, "d",
                         UBJ_RENAME_EXCHANGE), -EROFS);
    assert_rc(ubj_pwrite(fs, f.ino, "x", 1, 0), -EROFS);
    struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = 0600 };
    assert_rc(ubj_setattr(fs, f.ino, &sa, NULL), -EROFS);
    sa.valid = UBJ_SET_SIZE;
    sa.size = 0;
    assert_rc(ubj_setattr(fs, f.ino, &sa, NULL), -EROFS);
    sa.valid = UBJ_SET_MTIME_NOW;
    assert_rc(ubj_setattr(fs, f.ino, &sa, NULL), -EROFS);
    assert_rc(ubj_open(fs, f.ino, O_WRONLY), -EROFS);
    assert_rc(ubj_open(fs, f.ino, O_RDWR), -EROFS);
    assert_rc(ubj_open(fs, f.ino, O_RDONLY | O_TRUNC), -EROFS);
    /* reads */
    assert_ok(ubj_open(fs, f.ino, O_RDONLY));
    char buf[8];
    assert_rc(ubj_pread(fs, f.ino, buf, sizeof buf, 0), 5);
    assert_memory_equal(buf, "hello", 5);
    assert_ok(ubj_release(fs, f.ino));
    assert_ok(ubj_getattr(fs, f.ino, &st));
    assert_int_equal(st.size, 5);
    assert_int_equal(st.mode, S_IFREG | 0644);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 3);
    assert_ok(tpath_stat(fs, "/l", &st));
    assert_rc(ubj_readlink(fs, st.ino, buf, sizeof buf), 6);
    assert_ok(ubj_sync(fs));
    assert_ok(ubj_fsync(fs, f.ino, 0));
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
}

/* populate -- /f ("hello"), /d, /l -> "target". */
static void populate(struct ubj_fs *fs)
{
    assert_ok(tpath_put(fs, "/f", "hello", 5));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_symlink(fs, "target", "/l"));
}

/* test_rdonly_mount -- EROFS for every change; nothing written. */
static void test_rdonly_mount(void **state)
{
    struct tfs *t = TFS(state);
    populate(t->fs);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    ubj_bdev_stats_reset(t->dev);
    assert_ok(ubj_test_mount(t->dev, UBJ_MOUNT_RDONLY, &t->fs));
    rdonly_all(t->fs);
    assert_ok(ubj_unmount(t->fs));
    struct ubj_bdev_stats bs;
    ubj_bdev_stats_get(t->dev, &bs);
    assert_int_equal(bs.writes, 0);
    assert_int_equal(bs.bytes_written, 0);
    /* and mounts read-write again afterwards */
    assert_ok(ubj_test_mount(t->dev, 0, &t->fs));
    assert_ok(tpath_unlink(t->fs, "/f"));
}

/* test_rdonly_device -- a read-only file device: a read-write mount is
 * refused with -EROFS (and a message), a UBJ_MOUNT_RDONLY one works. */
static void test_rdonly_device(void **state)
{
    (void)state;
    char path[] = "/tmp/ubjfs-errors-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_ok(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 1024 * 4096, &dev));
    struct ubj_format_opts fo = { .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    populate(fs);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
    assert_ok(ubj_bdev_file_open(path, UBJ_BDEV_RDONLY, 0, &dev));
    assert_rc(ubj_test_mount(dev, 0, &fs), -EROFS);
    check_msg();
    assert_ok(ubj_test_mount(dev, UBJ_MOUNT_RDONLY, &fs));
    rdonly_all(fs);
    assert_ok(ubj_unmount(fs));
    int lines = -1;
    assert_int_equal(ubj_test_check(dev, 0, &lines), UBJ_CHECK_CLEAN);
    assert_int_equal(lines, 0);
    ubj_bdev_destroy(dev);
    unlink(path);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_names), T(test_errormsg), T(test_rdonly_mount),
        cmocka_unit_test(test_rdonly_device),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
