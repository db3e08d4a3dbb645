/*
 * posix/dirs.c -- directories: mkdir, rmdir, lookup of "." and "..",
 * link counts (2 + subdirectories), creating in a removed directory,
 * large directories, persistence.  Linux semantics (mkdir(2), rmdir(2)).
 */
#include "testutil.h"

/* test_mkdir_basic -- attributes, nlink of the new dir and its parent. */
static void test_mkdir_basic(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat root0, root1, d, lk;
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &root0));
    assert_int_equal(root0.mode & S_IFMT, S_IFDIR);
    assert_int_equal(root0.nlink, 2);
    assert_int_equal(root0.ino, UBJ_ROOT_INO);
    struct ubj_cred cr = { 5, 6 };
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0750, &cr, &d));
    assert_int_equal(d.mode, S_IFDIR | 0750);
    assert_int_equal(d.nlink, 2);
    assert_int_equal(d.uid, 5);
    assert_int_equal(d.gid, 6);
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &root1));
    assert_int_equal(root1.nlink, 3);
    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, "d", &lk));
    assert_int_equal(lk.ino, d.ino);
    assert_ok(ubj_lookup(fs, d.ino, ".", &lk));
    assert_int_equal(lk.ino, d.ino);
    assert_ok(ubj_lookup(fs, d.ino, "..", &lk));
    assert_int_equal(lk.ino, UBJ_ROOT_INO);
    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, "..", &lk));   /* root's parent */
    assert_int_equal(lk.ino, UBJ_ROOT_INO);
    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, ".", &lk));
    assert_int_equal(lk.ino, UBJ_ROOT_INO);
    /* files do not count in a directory's nlink */
    assert_ok(ubj_create(fs, d.ino, "f", 0644, NULL, NULL));
    assert_ok(ubj_mknod(fs, d.ino, "p", S_IFIFO | 0644, 0, NULL, NULL));
    assert_ok(ubj_symlink(fs, "x", d.ino, "l", NULL, NULL));
    assert_ok(ubj_getattr(fs, d.ino, &lk));
    assert_int_equal(lk.nlink, 2);
    /* subdirectories do */
    for (int i = 0; i < 10; i++) {
        char n[16];
        snprintf(n, sizeof n, "s%d", i);
        assert_ok(ubj_mkdir(fs, d.ino, n, 0755, NULL, NULL));
    }
    assert_ok(ubj_getattr(fs, d.ino, &lk));
    assert_int_equal(lk.nlink, 12);
    assert_ok(ubj_rmdir(fs, d.ino, "s3"));
    assert_ok(ubj_getattr(fs, d.ino, &lk));
    assert_int_equal(lk.nlink, 11);
    /* a directory's size is reported (non-zero, like ext4's block) */
    assert_true(lk.size > 0);
}

/*
 * Not tested here: mkdir's -EMLINK when the parent already has 65000
 * links (64998 subdirectories).  Every directory owns an inode and one
 * 4 KiB tree node, so reaching the limit takes ~260 MiB of image (RAM)
 * and 65000 mkdirs -- too slow and too big for a unit test under ASan.
 * The same limit on files is tested in posix/links.c (test_link_max).
 */

/* test_mkdir_times -- creating or removing a name updates the parent's
 * mtime and ctime; the new inode's times are all equal. */
static void test_mkdir_times(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat p0, p1, d;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "p", 0755, NULL, &p0));
    t_sleep_ns(2000000);
    assert_ok(ubj_mkdir(fs, p0.ino, "d", 0755, NULL, &d));
    assert_int_equal(ts_cmp(&d.mtime, &d.ctime), 0);
    assert_int_equal(ts_cmp(&d.atime, &d.ctime), 0);
    assert_ok(ubj_getattr(fs, p0.ino, &p1));
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_true(ts_cmp(&p1.ctime, &p0.ctime) > 0);
    assert_true(ts_cmp(&p1.mtime, &d.mtime) >= 0);
    p0 = p1;
    t_sleep_ns(2000000);
    assert_ok(ubj_rmdir(fs, p0.ino, "d"));
    assert_ok(ubj_getattr(fs, p0.ino, &p1));
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_true(ts_cmp(&p1.ctime, &p0.ctime) > 0);
    p0 = p1;
    t_sleep_ns(2000000);
    assert_ok(ubj_create(fs, p0.ino, "f", 0644, NULL, &d));
    assert_ok(ubj_getattr(fs, p0.ino, &p1));
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    p0 = p1;
    t_sleep_ns(2000000);
    assert_ok(ubj_unlink(fs, p0.ino, "f"));
    assert_ok(ubj_getattr(fs, p0.ino, &p1));
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_true(ts_cmp(&p1.ctime, &p0.ctime) > 0);
    /* a failed operation changes nothing */
    p0 = p1;
    t_sleep_ns(2000000);
    assert_rc(ubj_unlink(fs, p0.ino, "nope"), -ENOENT);
    assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, "p", 0755, NULL, NULL), -EEXIST);
    assert_ok(ubj_getattr(fs, p0.ino, &p1));
    assert_int_equal(ts_cmp(&p1.mtime, &p0.mtime), 0);
    assert_int_equal(ts_cmp(&p1.ctime, &p0.ctime), 0);
}

/* test_rmdir_errors -- ENOTEMPTY, ENOTDIR, ENOENT, EINVAL, "..". */
static void test_rmdir_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat d, st;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, &d));
    assert_ok(ubj_create(fs, d.ino, "f", 0644, NULL, NULL));
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "d"), -ENOTEMPTY);
    assert_rc(ubj_rmdir(fs, d.ino, "f"), -ENOTDIR);
    assert_rc(ubj_rmdir(fs, d.ino, "missing"), -ENOENT);
    assert_rc(ubj_rmdir(fs, d.ino, "."), -EINVAL);
    assert_rc(ubj_rmdir(fs, d.ino, ".."), -ENOTEMPTY);
    /* the root has no name; Linux gives ENOTEMPTY for "/.." (and EBUSY
     * for "/" itself, which this API cannot name) */
    int rc = ubj_rmdir(fs, UBJ_ROOT_INO, "..");
    assert_true(rc == -ENOTEMPTY || rc == -EBUSY);
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "."), -EINVAL);
    /* parent not a directory */
    struct ubj_stat f;
    assert_ok(ubj_lookup(fs, d.ino, "f", &f));
    assert_rc(ubj_rmdir(fs, f.ino, "x"), -ENOTDIR);
    /* a symlink to a directory is not a directory for rmdir */
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "e", 0755, NULL, NULL));
    assert_ok(ubj_symlink(fs, "e", UBJ_ROOT_INO, "le", NULL, NULL));
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "le"), -ENOTDIR);
    /* non-empty with a subdir only, a symlink only */
    assert_ok(ubj_mkdir(fs, d.ino, "sub", 0755, NULL, NULL));
    assert_ok(ubj_unlink(fs, d.ino, "f"));
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "d"), -ENOTEMPTY);
    assert_ok(ubj_rmdir(fs, d.ino, "sub"));
    assert_ok(ubj_symlink(fs, "t", d.ino, "s", NULL, NULL));
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "d"), -ENOTEMPTY);
    assert_ok(ubj_unlink(fs, d.ino, "s"));
    /* now empty */
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
    assert_rc(ubj_lookup(fs, UBJ_ROOT_INO, "d", &st), -ENOENT);
    assert_rc(ubj_getattr(fs, d.ino, &st), -ENOENT);
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &st));
    assert_int_equal(st.nlink, 3);          /* root + "e" */
    /* unlink refuses directories, "." and ".." with Linux's EISDIR */
    assert_rc(ubj_unlink(fs, UBJ_ROOT_INO, "e"), -EISDIR);
    assert_rc(ubj_unlink(fs, UBJ_ROOT_INO, "."), -EISDIR);
    assert_rc(ubj_unlink(fs, UBJ_ROOT_INO, ".."), -EISDIR);
}

/* test_rmdir_frees -- removing directories returns every block/inode. */
static void test_rmdir_frees(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t b0 = t_free_blocks(fs), i0 = t_free_inodes(fs);
    assert_ok(tpath_mkdir(fs, "/a", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/a/b", 0755, NULL));
    char p[64];
    for (int i = 0; i < 500; i++) {          /* enough for several nodes */
        snprintf(p, sizeof p, "/a/b/a-rather-long-file-name-number-%d", i);
        assert_ok(tpath_create(fs, p, 0644, NULL));
    }
    for (int i = 0; i < 500; i++) {
        snprintf(p, sizeof p, "/a/b/a-rather-long-file-name-number-%d", i);
        assert_ok(tpath_unlink(fs, p));
    }
    assert_ok(tpath_rmdir(fs, "/a/b"));
    assert_ok(tpath_rmdir(fs, "/a"));
    assert_int_equal(t_free_blocks(fs), b0);
    assert_int_equal(t_free_inodes(fs), i0);
}

/* test_create_in_removed_dir -- a removed directory (open or not) takes
 * no new names: ENOENT as Linux's IS_DEADDIR. */
static void test_create_in_removed_dir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat d, e, st;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, &d));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
    assert_rc(ubj_create(fs, d.ino, "x", 0644, NULL, NULL), -ENOENT);
    assert_rc(ubj_mkdir(fs, d.ino, "x", 0755, NULL, NULL), -ENOENT);
    assert_rc(ubj_lookup(fs, d.ino, "x", &st), -ENOENT);

    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "e", 0755, NULL, &e));
    assert_ok(ubj_open(fs, e.ino, O_RDONLY));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "e"));
    assert_ok(ubj_getattr(fs, e.ino, &st));
    assert_int_equal(st.nlink, 0);
    assert_rc(ubj_create(fs, e.ino, "x", 0644, NULL, NULL), -ENOENT);
    assert_rc(ubj_mkdir(fs, e.ino, "x", 0755, NULL, NULL), -ENOENT);
    assert_rc(ubj_symlink(fs, "t", e.ino, "x", NULL, NULL), -ENOENT);
    /* Linux's iterate_dir() refuses a dead directory with ENOENT */
    long cnt = tdir_count(fs, e.ino);
    assert_true(cnt == -ENOENT || cnt == 0);
    assert_ok(ubj_release(fs, e.ino));
    assert_rc(ubj_getattr(fs, e.ino, &st), -ENOENT);
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &st));
    assert_int_equal(st.nlink, 2);
}

/* test_parent_not_dir -- every creating call with a file as parent. */
static void test_parent_not_dir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat f, st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &f));
    assert_rc(ubj_lookup(fs, f.ino, "x", &st), -ENOTDIR);
    assert_rc(ubj_create(fs, f.ino, "x", 0644, NULL, NULL), -ENOTDIR);
    assert_rc(ubj_mkdir(fs, f.ino, "x", 0755, NULL, NULL), -ENOTDIR);
    assert_rc(ubj_mknod(fs, f.ino, "x", S_IFIFO, 0, NULL, NULL), -ENOTDIR);
    assert_rc(ubj_symlink(fs, "t", f.ino, "x", NULL, NULL), -ENOTDIR);
    assert_rc(ubj_link(fs, f.ino, f.ino, "x", NULL), -ENOTDIR);
    assert_rc(ubj_unlink(fs, f.ino, "x"), -ENOTDIR);
    assert_rc(ubj_rmdir(fs, f.ino, "x"), -ENOTDIR);
    assert_rc(ubj_rename(fs, f.ino, "x", UBJ_ROOT_INO, "y", 0), -ENOTDIR);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "f", f.ino, "y", 0), -ENOTDIR);
    assert_rc(tdir_count(fs, f.ino), -ENOTDIR);
}

/* test_parent_missing -- an inode number not in use as parent. */
static void test_parent_missing(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    const ubj_ino_t bad[] = { 0, 77, 1u << 30, UINT64_MAX };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ubj_ino_t p = bad[i];
        assert_rc(ubj_lookup(fs, p, "x", &st), -ENOENT);
        assert_rc(ubj_getattr(fs, p, &st), -ENOENT);
        assert_rc(ubj_create(fs, p, "x", 0644, NULL, NULL), -ENOENT);
        assert_rc(ubj_mkdir(fs, p, "x", 0755, NULL, NULL), -ENOENT);
        assert_rc(ubj_mknod(fs, p, "x", S_IFIFO, 0, NULL, NULL), -ENOENT);
        assert_rc(ubj_symlink(fs, "t", p, "x", NULL, NULL), -ENOENT);
        assert_rc(ubj_unlink(fs, p, "x"), -ENOENT);
        assert_rc(ubj_rmdir(fs, p, "x"), -ENOENT);
        assert_rc(tdir_count(fs, p), -ENOENT);
        assert_rc(ubj_link(fs, p, UBJ_ROOT_INO, "x", NULL), -ENOENT);
        assert_rc(ubj_rename(fs, p, "x", UBJ_ROOT_INO, "y", 0), -ENOENT);
    }
}

/* test_deep_tree -- 100 levels deep, path lookup, remove bottom up. */
static void test_deep_tree(void **state)
{
    struct tfs *t = TFS(state);
    char path[2048] = "";
    size_t len = 0;
    for (int i = 0; i < 100; i++) {
        len += (size_t)snprintf(path + len, sizeof path - len, "/d%d", i);
        assert_ok(tpath_mkdir(t->fs, path, 0755, NULL));
    }
    assert_ok(tpath_put(t->fs, strcat(path, "/leaf"), "deep", 4));
    ubj_test_remount(t->dev, &t->fs);
    char out[4];
    assert_rc(tpath_read(t->fs, path, out, 4, 0), 4);
    assert_memory_equal(out, "deep", 4);
    assert_ok(tpath_unlink(t->fs, path));
    for (int i = 99; i >= 0; i--) {
        *strrchr(path, '/') = '\0';
        assert_ok(tpath_rmdir(t->fs, path));
    }
    assert_rc(tdir_count(t->fs, UBJ_ROOT_INO), 0);
}

/* test_big_dir -- 20000 names: lookup each, count, remove every other,
 * remount, check the rest. */
static void test_big_dir(void **state)
{
    struct tfs big, *t = &big;
    (void)state;
    ubj_test_fs_new_inodes(32768, 24000, &t->dev, &t->fs);
    struct ubj_stat d, st;
    const int n = 20000;
    assert_ok(ubj_mkdir(t->fs, UBJ_ROOT_INO, "big", 0755, NULL, &d));
    char name[64];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "entry-%d-%x", i, i * 2654435761u);
        assert_ok(ubj_create(t->fs, d.ino, name, 0644, NULL, NULL));
    }
    assert_rc(tdir_count(t->fs, d.ino), n);
    for (int i = 0; i < n; i += 2) {
        snprintf(name, sizeof name, "entry-%d-%x", i, i * 2654435761u);
        assert_ok(ubj_unlink(t->fs, d.ino, name));
    }
    ubj_test_remount(t->dev, &t->fs);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "entry-%d-%x", i, i * 2654435761u);
        assert_rc(ubj_lookup(t->fs, d.ino, name, &st), i % 2 ? 0 : -ENOENT);
    }
    assert_rc(tdir_count(t->fs, d.ino), n / 2);
    assert_rc(ubj_rmdir(t->fs, UBJ_ROOT_INO, "big"), -ENOTEMPTY);
    ubj_test_fs_done(t->dev, t->fs);
}

/* test_name_lengths -- 255 bytes is fine, 256 ENAMETOOLONG, any byte but
 * '/' and NUL allowed. */
static void test_name_lengths(void **state)
{
    struct tfs *t = TFS(state);
    char n255[256], n256[257];
    memset(n255, 'a', 255);
    n255[255] = '\0';
    memset(n256, 'b', 256);
    n256[256] = '\0';
    struct ubj_stat st;
    assert_ok(ubj_mkdir(t->fs, UBJ_ROOT_INO, n255, 0755, NULL, &st));
    assert_ok(ubj_create(t->fs, st.ino, n255, 0644, NULL, NULL));
    assert_rc(ubj_mkdir(t->fs, UBJ_ROOT_INO, n256, 0755, NULL, NULL), -ENAMETOOLONG);
    const char odd[] = "\x01\xff sp\tace \xc3\xa9";
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, odd, 0644, NULL, NULL));
    ubj_test_remount(t->dev, &t->fs);
    assert_ok(ubj_lookup(t->fs, UBJ_ROOT_INO, n255, &st));
    assert_ok(ubj_lookup(t->fs, st.ino, n255, &st));
    assert_ok(ubj_lookup(t->fs, UBJ_ROOT_INO, odd, &st));
    struct tdirent *v;
    size_t cnt;
    assert_ok(tdir_list(t->fs, UBJ_ROOT_INO, &v, &cnt));
    int seen255 = 0, seenodd = 0;
    for (size_t i = 0; i < cnt; i++) {
        seen255 += strcmp(v[i].name, n255) == 0;
        seenodd += strcmp(v[i].name, odd) == 0;
    }
    free(v);
    assert_int_equal(seen255, 1);
    assert_int_equal(seenodd, 1);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_mkdir_basic), T(test_mkdir_times), T(test_rmdir_errors),
        T(test_rmdir_frees), T(test_create_in_removed_dir),
        T(test_parent_not_dir), T(test_parent_missing), T(test_deep_tree),
        cmocka_unit_test(test_big_dir), T(test_name_lengths),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
