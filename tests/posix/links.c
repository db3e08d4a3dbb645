/*
 * posix/links.c -- hard links (link(2): nlink, shared data, EPERM on
 * directories, EEXIST, ENOENT for an unlinked inode, EMLINK at 65000),
 * symbolic links (symlink(2)/readlink(2): inline and block targets up to
 * 4095 bytes, ENAMETOOLONG, ENOENT for an empty target, truncation), and
 * path resolution (ubj_path_lookup: ".", "..", repeated '/', symlinks in
 * the middle and at the end, NOFOLLOW, ELOOP after 40, ENOTDIR).
 */
#include "testutil.h"

/* test_link_basic -- two names, one inode; unlink one at a time. */
static void test_link_basic(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat f0, f1, d, p0, p1;
    uint64_t i0 = t_free_inodes(fs), b0 = t_free_blocks(fs);
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    assert_ok(tpath_put(fs, "/f", "shared", 6));
    assert_ok(tpath_stat(fs, "/f", &f0));
    assert_ok(tpath_stat(fs, "/d", &p0));
    t_sleep_ns(2000000);
    assert_ok(ubj_link(fs, f0.ino, d.ino, "g", &f1));
    assert_int_equal(f1.ino, f0.ino);
    assert_int_equal(f1.nlink, 2);
    assert_true(ts_cmp(&f1.ctime, &f0.ctime) > 0);
    assert_int_equal(ts_cmp(&f1.mtime, &f0.mtime), 0);
    assert_ok(tpath_stat(fs, "/d", &p1));
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_int_equal(p1.nlink, 2);                /* files don't count */
    assert_ok(tpath_stat(fs, "/f", &f1));
    assert_int_equal(f1.nlink, 2);
    /* writes through one name are seen through the other */
    assert_rc(tpath_write(fs, "/d/g", "SH", 2, 0), 2);
    char out[6];
    assert_rc(tpath_read(fs, "/f", out, 6, 0), 6);
    assert_memory_equal(out, "SHared", 6);
    /* a third link in the same directory */
    assert_ok(tpath_link(fs, "/f", "/h"));
    assert_int_equal(f0.ino, tpath_ino(fs, "/h"));
    assert_ok(tpath_unlink(fs, "/f"));
    assert_ok(tpath_stat(fs, "/h", &f1));
    assert_int_equal(f1.nlink, 2);
    assert_ok(tpath_unlink(fs, "/h"));
    assert_ok(tpath_stat(fs, "/d/g", &f1));
    assert_int_equal(f1.nlink, 1);
    assert_rc(tpath_read(fs, "/d/g", out, 6, 0), 6);
    assert_memory_equal(out, "SHared", 6);
    assert_ok(tpath_unlink(fs, "/d/g"));
    assert_rc(ubj_getattr(fs, f0.ino, &f1), -ENOENT);
    assert_ok(tpath_rmdir(fs, "/d"));
    assert_int_equal(t_free_inodes(fs), i0);
    assert_int_equal(t_free_blocks(fs), b0);
}

/* test_link_errors -- EPERM, EEXIST, ENOENT, ENAMETOOLONG, EINVAL. */
static void test_link_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat f, d, st;
    assert_ok(tpath_put(fs, "/f", "x", 1));
    assert_ok(tpath_stat(fs, "/f", &f));
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    assert_rc(ubj_link(fs, d.ino, UBJ_ROOT_INO, "dl", NULL), -EPERM);
    assert_rc(ubj_link(fs, UBJ_ROOT_INO, d.ino, "root", NULL), -EPERM);
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, "d", NULL), -EEXIST);
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, "f", NULL), -EEXIST);
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, ".", NULL), -EEXIST);
    assert_rc(ubj_link(fs, 9999, UBJ_ROOT_INO, "n", NULL), -ENOENT);
    char longn[257];
    memset(longn, 'l', 256);
    longn[256] = '\0';
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, longn, NULL), -ENAMETOOLONG);
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, "", NULL), -EINVAL);
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, "a/b", NULL), -EINVAL);
    /* into a removed directory */
    assert_ok(tpath_rmdir(fs, "/d"));
    assert_rc(ubj_link(fs, f.ino, d.ino, "x", NULL), -ENOENT);
    /* an open, unlinked inode cannot get a name back (nlink 0) */
    assert_ok(ubj_open(fs, f.ino, O_RDONLY));
    assert_ok(tpath_unlink(fs, "/f"));
    assert_rc(ubj_link(fs, f.ino, UBJ_ROOT_INO, "again", NULL), -ENOENT);
    assert_ok(ubj_release(fs, f.ino));
    assert_rc(ubj_getattr(fs, f.ino, &st), -ENOENT);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 0);
}

/* test_link_other_types -- symlinks and fifos can be hard-linked. */
static void test_link_other_types(void **state)
{
    struct tfs *t = TFS(state);
    assert_ok(tpath_symlink(t->fs, "target", "/s"));
    assert_ok(tpath_link(t->fs, "/s", "/s2"));
    assert_ok(ubj_mknod(t->fs, UBJ_ROOT_INO, "p", S_IFIFO | 0600, 0, NULL, NULL));
    assert_ok(tpath_link(t->fs, "/p", "/p2"));
    ubj_test_remount(t->dev, &t->fs);
    struct ubj_stat st;
    assert_ok(tpath_stat(t->fs, "/s2", &st));
    assert_int_equal(st.mode & S_IFMT, S_IFLNK);
    assert_int_equal(st.nlink, 2);
    char buf[16];
    assert_rc(ubj_readlink(t->fs, st.ino, buf, sizeof buf), 6);
    assert_memory_equal(buf, "target", 6);
    assert_ok(tpath_stat(t->fs, "/p2", &st));
    assert_int_equal(st.mode, S_IFIFO | 0600);
    assert_int_equal(st.nlink, 2);
}

/* test_link_max -- EMLINK at 65000 links (ext4's EXT4_LINK_MAX). */
static void test_link_max(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat f, d, st;
    assert_ok(tpath_put(fs, "/f", "x", 1));
    assert_ok(tpath_stat(fs, "/f", &f));
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    char n[32];
    int i;
    for (i = 1; i < 65000; i++) {
        snprintf(n, sizeof n, "%x", i);
        assert_ok(ubj_link(fs, f.ino, d.ino, n, NULL));
    }
    assert_ok(ubj_getattr(fs, f.ino, &st));
    assert_int_equal(st.nlink, 65000);
    assert_rc(ubj_link(fs, f.ino, d.ino, "one-more", NULL), -EMLINK);
    assert_rc(ubj_lookup(fs, d.ino, "one-more", &st), -ENOENT);
    assert_ok(ubj_unlink(fs, d.ino, "1"));
    assert_ok(ubj_link(fs, f.ino, d.ino, "one-more", NULL));
    assert_ok(ubj_getattr(fs, f.ino, &st));
    assert_int_equal(st.nlink, 65000);
    assert_rc(tdir_count(fs, d.ino), 64999);
}

/* test_symlink_sizes -- inline (<= 127), block (128..4095), too long,
 * empty; readlink length and truncation; blocks freed on unlink. */
static void test_symlink_sizes(void **state)
{
    struct tfs *t = TFS(state);
    const size_t lens[] = { 1, 2, 60, 126, 127, 128, 129, 1000, 4094, 4095 };
    const size_t nl = sizeof lens / sizeof lens[0];
    char target[4097], buf[5000];
    uint64_t b0 = t_free_blocks(t->fs);
    for (size_t i = 0; i < nl; i++) {
        for (size_t j = 0; j < lens[i]; j++)
            target[j] = (char)('!' + (j * 7 + i) % 90);
        target[lens[i]] = '\0';
        char name[32];
        snprintf(name, sizeof name, "l%zu", lens[i]);
        struct ubj_stat st;
        assert_ok(ubj_symlink(t->fs, target, UBJ_ROOT_INO, name, NULL, &st));
        assert_int_equal(st.mode, S_IFLNK | 0777);
        assert_int_equal(st.size, lens[i]);
        assert_int_equal(st.nlink, 1);
        assert_rc(ubj_readlink(t->fs, st.ino, buf, sizeof buf), (long long)lens[i]);
        assert_memory_equal(buf, target, lens[i]);
    }
    ubj_test_remount(t->dev, &t->fs);
    for (size_t i = 0; i < nl; i++) {
        for (size_t j = 0; j < lens[i]; j++)
            target[j] = (char)('!' + (j * 7 + i) % 90);
        char name[32];
        snprintf(name, sizeof name, "l%zu", lens[i]);
        struct ubj_stat st;
        assert_ok(ubj_lookup(t->fs, UBJ_ROOT_INO, name, &st));
        assert_int_equal(st.size, lens[i]);
        memset(buf, 0, sizeof buf);
        assert_rc(ubj_readlink(t->fs, st.ino, buf, sizeof buf), (long long)lens[i]);
        assert_memory_equal(buf, target, lens[i]);
        /* truncated to the buffer as readlink(2); nothing past it */
        memset(buf, '#', sizeof buf);
        size_t small = lens[i] / 2 + 1;
        if (small > lens[i])
            small = lens[i];
        assert_rc(ubj_readlink(t->fs, st.ino, buf, small), (long long)small);
        assert_memory_equal(buf, target, small);
        assert_int_equal(buf[small], '#');
    }
    /* too long, empty */
    memset(target, 'x', 4096);
    target[4096] = '\0';
    assert_rc(ubj_symlink(t->fs, target, UBJ_ROOT_INO, "toolong", NULL, NULL),
              -ENAMETOOLONG);
    assert_rc(ubj_symlink(t->fs, "", UBJ_ROOT_INO, "empty", NULL, NULL), -ENOENT);
    assert_int_equal(tpath_ino(t->fs, "/toolong"), 0);
    assert_int_equal(tpath_ino(t->fs, "/empty"), 0);
    /* unlink all: every block back */
    for (size_t i = 0; i < nl; i++) {
        char name[32];
        snprintf(name, sizeof name, "l%zu", lens[i]);
        assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, name));
    }
    assert_int_equal(t_free_blocks(t->fs), b0);
}

/* test_readlink_errors -- EINVAL on non-symlinks, ENOENT on free inodes. */
static void test_readlink_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    char buf[16];
    assert_ok(tpath_put(fs, "/f", "x", 1));
    assert_rc(ubj_readlink(fs, tpath_ino(fs, "/f"), buf, sizeof buf), -EINVAL);
    assert_rc(ubj_readlink(fs, UBJ_ROOT_INO, buf, sizeof buf), -EINVAL);
    assert_rc(ubj_readlink(fs, 5000, buf, sizeof buf), -ENOENT);
    assert_rc(ubj_readlink(fs, 0, buf, sizeof buf), -ENOENT);
}

/* test_path_basic -- "/", repeated '/', ".", "..", errors. */
static void test_path_basic(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(tpath_mkdir(fs, "/a", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/a/b", 0755, NULL));
    assert_ok(tpath_put(fs, "/a/b/f", "x", 1));
    ubj_ino_t a = tpath_ino(fs, "/a"), b = tpath_ino(fs, "/a/b"),
              f = tpath_ino(fs, "/a/b/f");
    assert_ok(ubj_path_lookup(fs, "/", 0, &st));
    assert_int_equal(st.ino, UBJ_ROOT_INO);
    assert_ok(ubj_path_lookup(fs, "///", 0, &st));
    assert_int_equal(st.ino, UBJ_ROOT_INO);
    assert_ok(ubj_path_lookup(fs, "//a///b//f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/a/./b/../b/./f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/../../a", 0, &st));
    assert_int_equal(st.ino, a);
    assert_ok(ubj_path_lookup(fs, "/a/b/..", 0, &st));
    assert_int_equal(st.ino, a);
    assert_ok(ubj_path_lookup(fs, "/a/b/", 0, &st));
    assert_int_equal(st.ino, b);
    assert_rc(ubj_path_lookup(fs, "a/b", 0, &st), -EINVAL);
    assert_rc(ubj_path_lookup(fs, "/a/x", 0, &st), -ENOENT);
    assert_rc(ubj_path_lookup(fs, "/x/b", 0, &st), -ENOENT);
    assert_rc(ubj_path_lookup(fs, "/a/b/f/x", 0, &st), -ENOTDIR);
    assert_rc(ubj_path_lookup(fs, "/a/b/f/..", 0, &st), -ENOTDIR);
    char longp[400] = "/a/";
    memset(longp + 3, 'z', 256);
    longp[259] = '\0';
    assert_rc(ubj_path_lookup(fs, longp, 0, &st), -ENAMETOOLONG);
    /* ubj_path_parent */
    ubj_ino_t p;
    const char *name;
    assert_ok(ubj_path_parent(fs, "/a/b/f", &p, &name));
    assert_int_equal(p, b);
    assert_string_equal(name, "f");
    assert_ok(ubj_path_parent(fs, "/a/b/", &p, &name));
    assert_int_equal(p, a);
    assert_memory_equal(name, "b", 1);
    assert_true(name[1] == '\0' || name[1] == '/');
    assert_ok(ubj_path_parent(fs, "/new", &p, &name));
    assert_int_equal(p, UBJ_ROOT_INO);
    assert_string_equal(name, "new");
    assert_rc(ubj_path_parent(fs, "/", &p, &name), -EINVAL);
    assert_rc(ubj_path_parent(fs, "rel/x", &p, &name), -EINVAL);
    assert_rc(ubj_path_parent(fs, "/nope/x", &p, &name), -ENOENT);
    assert_rc(ubj_path_parent(fs, "/a/b/f/x", &p, &name), -ENOTDIR);
}

/* test_path_symlinks -- absolute and relative targets, middle and last
 * components, NOFOLLOW, dangling links. */
static void test_path_symlinks(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(tpath_mkdir(fs, "/a", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/a/b", 0755, NULL));
    assert_ok(tpath_put(fs, "/a/b/f", "x", 1));
    ubj_ino_t b = tpath_ino(fs, "/a/b"), f = tpath_ino(fs, "/a/b/f");
    assert_ok(tpath_symlink(fs, "/a/b", "/abs"));
    assert_ok(tpath_symlink(fs, "a/b", "/rel"));
    assert_ok(tpath_symlink(fs, "../b/f", "/a/b/up"));
    assert_ok(tpath_symlink(fs, "f", "/a/b/same"));
    assert_ok(tpath_symlink(fs, "/nowhere", "/dangling"));
    assert_ok(tpath_symlink(fs, "/a/b/f", "/tofile"));
    assert_ok(ubj_path_lookup(fs, "/abs/f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/rel/f", UBJ_PATH_NOFOLLOW, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/abs", 0, &st));
    assert_int_equal(st.ino, b);
    assert_ok(ubj_path_lookup(fs, "/abs", UBJ_PATH_NOFOLLOW, &st));
    assert_int_equal(st.mode & S_IFMT, S_IFLNK);
    assert_ok(ubj_path_lookup(fs, "/a/b/up", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/abs/up", 0, &st));   /* relative to b */
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/rel/same", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/abs/..", 0, &st));   /* ".." of b */
    assert_int_equal(st.ino, tpath_ino(fs, "/a"));
    assert_rc(ubj_path_lookup(fs, "/dangling", 0, &st), -ENOENT);
    assert_ok(ubj_path_lookup(fs, "/dangling", UBJ_PATH_NOFOLLOW, &st));
    assert_int_equal(st.mode & S_IFMT, S_IFLNK);
    assert_rc(ubj_path_lookup(fs, "/dangling/x", UBJ_PATH_NOFOLLOW, &st), -ENOENT);
    assert_rc(ubj_path_lookup(fs, "/tofile/x", 0, &st), -ENOTDIR);
    assert_ok(ubj_path_lookup(fs, "/tofile", 0, &st));
    assert_int_equal(st.ino, f);
    ubj_ino_t p;
    const char *name;
    assert_ok(ubj_path_parent(fs, "/abs/new", &p, &name));
    assert_int_equal(p, b);
    assert_string_equal(name, "new");
}

/* test_path_loops -- ELOOP for loops and chains longer than 40. */
static void test_path_loops(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(tpath_symlink(fs, "/self", "/self"));
    assert_ok(tpath_symlink(fs, "/loop2", "/loop1"));
    assert_ok(tpath_symlink(fs, "loop1", "/loop2"));
    assert_ok(tpath_symlink(fs, "/dirloop/x", "/dirloop"));
    assert_rc(ubj_path_lookup(fs, "/self", 0, &st), -ELOOP);
    assert_ok(ubj_path_lookup(fs, "/self", UBJ_PATH_NOFOLLOW, &st));
    assert_rc(ubj_path_lookup(fs, "/loop1", 0, &st), -ELOOP);
    assert_rc(ubj_path_lookup(fs, "/loop2/x", UBJ_PATH_NOFOLLOW, &st), -ELOOP);
    assert_rc(ubj_path_lookup(fs, "/dirloop", 0, &st), -ELOOP);
    ubj_ino_t p;
    const char *name;
    assert_rc(ubj_path_parent(fs, "/self/x", &p, &name), -ELOOP);
    /* a chain: c0 -> target, c<i> -> c<i-1>.  Following c39 takes 40
     * links (allowed); c40 takes 41 (ELOOP). */
    assert_ok(tpath_put(fs, "/target", "t", 1));
    ubj_ino_t target = tpath_ino(fs, "/target");
    assert_ok(tpath_symlink(fs, "/target", "/c0"));
    char name1[16], tgt[16];
    for (int i = 1; i <= 40; i++) {
        snprintf(name1, sizeof name1, "/c%d", i);
        snprintf(tgt, sizeof tgt, "c%d", i - 1);
        assert_ok(tpath_symlink(fs, tgt, name1));
    }
    assert_ok(ubj_path_lookup(fs, "/c39", 0, &st));
    assert_int_equal(st.ino, target);
    assert_rc(ubj_path_lookup(fs, "/c40", 0, &st), -ELOOP);
    assert_ok(ubj_path_lookup(fs, "/c40", UBJ_PATH_NOFOLLOW, &st));
    assert_int_equal(st.mode & S_IFMT, S_IFLNK);
}

/* test_path_long_symlink -- a 4095-byte target that resolves ("/./././"
 * ... to a directory), followed through lookup, after a remount. */
static void test_path_long_symlink(void **state)
{
    struct tfs *t = TFS(state);
    char target[4096];
    assert_ok(tpath_mkdir(t->fs, "/dir", 0755, NULL));
    assert_ok(tpath_put(t->fs, "/dir/f", "L", 1));
    /* "/" then "./" x 2045 then "dir" = 1 + 4090 + 3 = 4094, + "/" = 4095 */
    size_t n = 0;
    target[n++] = '/';
    for (int i = 0; i < 2045; i++) {
        target[n++] = '.';
        target[n++] = '/';
    }
    memcpy(target + n, "dir/", 4);
    n += 4;
    target[n] = '\0';
    assert_int_equal(n, 4095);
    assert_ok(tpath_symlink(t->fs, target, "/long"));
    ubj_test_remount(t->dev, &t->fs);
    struct ubj_stat st;
    assert_ok(ubj_path_lookup(t->fs, "/long/f", 0, &st));
    assert_int_equal(st.ino, tpath_ino(t->fs, "/dir/f"));
    assert_ok(ubj_path_lookup(t->fs, "/long", UBJ_PATH_NOFOLLOW, &st));
    assert_int_equal(st.size, 4095);
    char back[4096];
    assert_rc(ubj_readlink(t->fs, st.ino, back, sizeof back), 4095);
    assert_memory_equal(back, target, 4095);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_link_basic), T(test_link_errors), T(test_link_other_types),
        T(test_link_max), T(test_symlink_sizes), T(test_readlink_errors),
        T(test_path_basic), T(test_path_symlinks), T(test_path_loops),
        T(test_path_long_symlink),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
