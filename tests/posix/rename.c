/*
 * posix/rename.c -- the rename(2)/renameat2(2) matrix: every pair of
 * source and target types, across and within directories, replacing,
 * RENAME_NOREPLACE, RENAME_EXCHANGE, moving a directory into itself or a
 * descendant, hard links of the same inode, link counts of the parents,
 * ".." after a move, timestamps, and an open replaced target.
 */
#include "testutil.h"

/* nlink_of -- link count of path (fails the test if missing). */
static uint32_t nlink_of(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    assert_ok(tpath_stat(fs, path, &st));
    return st.nlink;
}

/* dotdot_of -- the inode ".." of path names. */
static ubj_ino_t dotdot_of(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    assert_ok(tpath_stat(fs, path, &st));
    assert_ok(ubj_lookup(fs, st.ino, "..", &st));
    return st.ino;
}

/* test_file_same_dir -- a plain rename keeps the inode and data. */
static void test_file_same_dir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_put(fs, "/a", "content", 7));
    ubj_ino_t ino = tpath_ino(fs, "/a");
    assert_ok(tpath_rename(fs, "/a", "/b", 0));
    assert_int_equal(tpath_ino(fs, "/a"), 0);
    assert_int_equal(tpath_ino(fs, "/b"), ino);
    char out[7];
    assert_rc(tpath_read(fs, "/b", out, 7, 0), 7);
    assert_memory_equal(out, "content", 7);
    assert_int_equal(nlink_of(fs, "/b"), 1);
    /* same name: nothing happens */
    assert_ok(tpath_rename(fs, "/b", "/b", 0));
    assert_int_equal(tpath_ino(fs, "/b"), ino);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 1);
    /* missing source */
    assert_rc(tpath_rename(fs, "/a", "/c", 0), -ENOENT);
    assert_rc(tpath_rename(fs, "/a", "/b", 0), -ENOENT);
}

/* test_file_across_dirs -- parents' nlink unchanged for files. */
static void test_file_across_dirs(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_mkdir(fs, "/x", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/y", 0755, NULL));
    assert_ok(tpath_put(fs, "/x/f", "1", 1));
    assert_ok(tpath_rename(fs, "/x/f", "/y/g", 0));
    assert_int_equal(tpath_ino(fs, "/x/f"), 0);
    assert_true(tpath_ino(fs, "/y/g") != 0);
    assert_int_equal(nlink_of(fs, "/x"), 2);
    assert_int_equal(nlink_of(fs, "/y"), 2);
    /* target parent missing component */
    assert_rc(tpath_rename(fs, "/y/g", "/nope/g", 0), -ENOENT);
    assert_true(tpath_ino(fs, "/y/g") != 0);
}

/* test_file_over_file -- the replaced inode is freed (blocks, inode). */
static void test_file_over_file(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t b0 = t_free_blocks(fs), i0 = t_free_inodes(fs);
    uint8_t buf[20000];
    tpattern_fill(buf, sizeof buf, 1, 0);
    assert_ok(tpath_put(fs, "/src", "new", 3));
    assert_ok(tpath_put(fs, "/dst", buf, sizeof buf));
    ubj_ino_t src = tpath_ino(fs, "/src"), dst = tpath_ino(fs, "/dst");
    assert_ok(tpath_rename(fs, "/src", "/dst", 0));
    assert_int_equal(tpath_ino(fs, "/dst"), src);
    assert_int_equal(tpath_ino(fs, "/src"), 0);
    struct ubj_stat st;
    assert_rc(ubj_getattr(fs, dst, &st), -ENOENT);
    assert_int_equal(t_free_inodes(fs), i0 - 1);
    assert_true(b0 - t_free_blocks(fs) <= 1);
    char out[3];
    assert_rc(tpath_read(fs, "/dst", out, 3, 0), 3);
    assert_memory_equal(out, "new", 3);
    /* over a symlink and a fifo: both replaced */
    assert_ok(tpath_symlink(fs, "t", "/sl"));
    assert_ok(tpath_rename(fs, "/dst", "/sl", 0));
    assert_int_equal(tpath_ino(fs, "/sl"), src);
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0644, 0, NULL, NULL));
    assert_ok(tpath_rename(fs, "/sl", "/fifo", 0));
    assert_int_equal(tpath_ino(fs, "/fifo"), src);
    assert_int_equal(t_free_inodes(fs), i0 - 1);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 1);
}

/* test_type_mismatch -- EISDIR, ENOTDIR, ENOTEMPTY. */
static void test_type_mismatch(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_put(fs, "/f", "f", 1));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/full", 0755, NULL));
    assert_ok(tpath_put(fs, "/full/x", "x", 1));
    assert_ok(tpath_symlink(fs, "d", "/ld"));
    assert_rc(tpath_rename(fs, "/f", "/d", 0), -EISDIR);
    assert_rc(tpath_rename(fs, "/d", "/f", 0), -ENOTDIR);
    assert_rc(tpath_rename(fs, "/d", "/ld", 0), -ENOTDIR);   /* not followed */
    assert_rc(tpath_rename(fs, "/d", "/full", 0), -ENOTEMPTY);
    assert_rc(tpath_rename(fs, "/f", "/full", 0), -EISDIR);
    /* nothing moved */
    assert_true(tpath_ino(fs, "/f") && tpath_ino(fs, "/d") && tpath_ino(fs, "/full/x"));
    assert_int_equal(nlink_of(fs, "/"), 4);
}

/* test_dir_moves -- nlink of both parents, "..", empty dir replaced. */
static void test_dir_moves(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_mkdir(fs, "/p", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/q", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/p/d", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/p/d/inner", 0755, NULL));
    ubj_ino_t d = tpath_ino(fs, "/p/d");
    assert_int_equal(nlink_of(fs, "/p"), 3);
    /* within one parent: nlink unchanged */
    assert_ok(tpath_rename(fs, "/p/d", "/p/e", 0));
    assert_int_equal(nlink_of(fs, "/p"), 3);
    assert_int_equal(dotdot_of(fs, "/p/e"), tpath_ino(fs, "/p"));
    /* across parents */
    assert_ok(tpath_rename(fs, "/p/e", "/q/d", 0));
    assert_int_equal(nlink_of(fs, "/p"), 2);
    assert_int_equal(nlink_of(fs, "/q"), 3);
    assert_int_equal(nlink_of(fs, "/q/d"), 3);
    assert_int_equal(tpath_ino(fs, "/q/d"), d);
    assert_int_equal(dotdot_of(fs, "/q/d"), tpath_ino(fs, "/q"));
    assert_int_equal(dotdot_of(fs, "/q/d/inner"), d);
    assert_ok(tpath_put(fs, "/q/d/inner/f", "z", 1));
    char c;
    assert_rc(tpath_read(fs, "/q/d/inner/f", &c, 1, 0), 1);
    /* over an empty directory in another parent */
    assert_ok(tpath_mkdir(fs, "/p/empty", 0755, NULL));
    ubj_ino_t empty = tpath_ino(fs, "/p/empty");
    uint64_t i0 = t_free_inodes(fs);
    assert_ok(tpath_rename(fs, "/q/d", "/p/empty", 0));
    assert_int_equal(tpath_ino(fs, "/p/empty"), d);
    struct ubj_stat st;
    assert_rc(ubj_getattr(fs, empty, &st), -ENOENT);
    assert_int_equal(t_free_inodes(fs), i0 + 1);
    assert_int_equal(nlink_of(fs, "/p"), 3);
    assert_int_equal(nlink_of(fs, "/q"), 2);
    assert_int_equal(dotdot_of(fs, "/p/empty"), tpath_ino(fs, "/p"));
    /* over an empty directory in the same parent */
    assert_ok(tpath_mkdir(fs, "/p/e2", 0755, NULL));
    assert_int_equal(nlink_of(fs, "/p"), 4);
    assert_ok(tpath_rename(fs, "/p/empty", "/p/e2", 0));
    assert_int_equal(nlink_of(fs, "/p"), 3);
    assert_int_equal(nlink_of(fs, "/"), 4);
    /* a directory onto itself */
    assert_ok(tpath_rename(fs, "/p/e2", "/p/e2", 0));
    assert_int_equal(nlink_of(fs, "/p"), 3);
}

/* test_into_descendant -- EINVAL for a directory into itself or below. */
static void test_into_descendant(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_mkdir(fs, "/a", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/a/b", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/a/b/c", 0755, NULL));
    assert_rc(tpath_rename(fs, "/a", "/a/x", 0), -EINVAL);
    assert_rc(tpath_rename(fs, "/a", "/a/b/x", 0), -EINVAL);
    assert_rc(tpath_rename(fs, "/a", "/a/b/c/x", 0), -EINVAL);
    assert_rc(tpath_rename(fs, "/a", "/a/b", 0), -EINVAL);     /* target inside */
    assert_rc(tpath_rename(fs, "/a/b", "/a/b/c/x", 0), -EINVAL);
    /* the target an ancestor of the source: ENOTEMPTY (Linux) */
    assert_rc(tpath_rename(fs, "/a/b/c", "/a", 0), -ENOTEMPTY);
    /* exchange with a descendant, either way round */
    assert_rc(tpath_rename(fs, "/a", "/a/b/c", UBJ_RENAME_EXCHANGE), -EINVAL);
    assert_rc(tpath_rename(fs, "/a/b/c", "/a", UBJ_RENAME_EXCHANGE), -EINVAL);
    /* moving a subtree sideways is fine */
    assert_ok(tpath_rename(fs, "/a/b/c", "/c", 0));
    assert_ok(tpath_rename(fs, "/a", "/c/a", 0));
    assert_true(tpath_ino(fs, "/c/a/b") != 0);
    assert_int_equal(nlink_of(fs, "/"), 3);
    assert_int_equal(nlink_of(fs, "/c"), 3);
}

/* test_noreplace -- EEXIST for any existing target, else a rename. */
static void test_noreplace(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_put(fs, "/a", "a", 1));
    assert_ok(tpath_put(fs, "/b", "b", 1));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_rc(tpath_rename(fs, "/a", "/b", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_rc(tpath_rename(fs, "/a", "/d", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_rc(tpath_rename(fs, "/d", "/a", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_rc(tpath_rename(fs, "/missing", "/x", UBJ_RENAME_NOREPLACE), -ENOENT);
    char c;
    assert_rc(tpath_read(fs, "/b", &c, 1, 0), 1);
    assert_int_equal(c, 'b');
    assert_ok(tpath_rename(fs, "/a", "/c", UBJ_RENAME_NOREPLACE));
    assert_int_equal(tpath_ino(fs, "/a"), 0);
    assert_ok(tpath_rename(fs, "/d", "/e", UBJ_RENAME_NOREPLACE));
    assert_int_equal(nlink_of(fs, "/"), 3);
}

/* test_exchange -- swap two names of any types, across parents. */
static void test_exchange(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_mkdir(fs, "/p", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/q", 0755, NULL));
    assert_ok(tpath_put(fs, "/p/f", "F", 1));
    assert_ok(tpath_put(fs, "/q/g", "G", 1));
    ubj_ino_t f = tpath_ino(fs, "/p/f"), g = tpath_ino(fs, "/q/g");
    assert_ok(tpath_rename(fs, "/p/f", "/q/g", UBJ_RENAME_EXCHANGE));
    assert_int_equal(tpath_ino(fs, "/p/f"), g);
    assert_int_equal(tpath_ino(fs, "/q/g"), f);
    char c;
    assert_rc(tpath_read(fs, "/p/f", &c, 1, 0), 1);
    assert_int_equal(c, 'G');
    /* a directory and a file across parents: nlinks move with the dir */
    assert_ok(tpath_mkdir(fs, "/p/d", 0755, NULL));
    ubj_ino_t d = tpath_ino(fs, "/p/d");
    assert_int_equal(nlink_of(fs, "/p"), 3);
    assert_int_equal(nlink_of(fs, "/q"), 2);
    assert_ok(tpath_rename(fs, "/p/d", "/q/g", UBJ_RENAME_EXCHANGE));
    assert_int_equal(tpath_ino(fs, "/q/g"), d);
    assert_int_equal(tpath_ino(fs, "/p/d"), f);
    assert_int_equal(nlink_of(fs, "/p"), 2);
    assert_int_equal(nlink_of(fs, "/q"), 3);
    assert_int_equal(dotdot_of(fs, "/q/g"), tpath_ino(fs, "/q"));
    struct tdirent *v;
    size_t n;
    assert_ok(tdir_list(fs, tpath_ino(fs, "/q"), &v, &n));
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, "g") == 0)
            assert_int_equal(v[i].type, DT_DIR);
    free(v);
    /* two non-empty directories */
    assert_ok(tpath_put(fs, "/q/g/in", "i", 1));
    assert_ok(tpath_mkdir(fs, "/p/e", 0755, NULL));
    assert_ok(tpath_put(fs, "/p/e/in2", "j", 1));
    assert_ok(tpath_rename(fs, "/q/g", "/p/e", UBJ_RENAME_EXCHANGE));
    assert_true(tpath_ino(fs, "/p/e/in") != 0);
    assert_true(tpath_ino(fs, "/q/g/in2") != 0);
    assert_int_equal(dotdot_of(fs, "/p/e"), tpath_ino(fs, "/p"));
    assert_int_equal(dotdot_of(fs, "/q/g"), tpath_ino(fs, "/q"));
    /* missing target, missing source */
    assert_rc(tpath_rename(fs, "/p/f", "/p/none", UBJ_RENAME_EXCHANGE), -ENOENT);
    assert_rc(tpath_rename(fs, "/p/none", "/p/f", UBJ_RENAME_EXCHANGE), -ENOENT);
    /* with itself */
    assert_ok(tpath_rename(fs, "/p/f", "/p/f", UBJ_RENAME_EXCHANGE));
    assert_int_equal(tpath_ino(fs, "/p/f"), g);
}

/* test_bad_flags -- both flags, unknown bits, "." and "..". */
static void test_bad_flags(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_put(fs, "/a", "a", 1));
    assert_ok(tpath_put(fs, "/b", "b", 1));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_rc(tpath_rename(fs, "/a", "/b",
                           UBJ_RENAME_EXCHANGE | UBJ_RENAME_NOREPLACE), -EINVAL);
    assert_rc(tpath_rename(fs, "/a", "/c", 0x4), -EINVAL);
    assert_rc(tpath_rename(fs, "/a", "/c", 0x80000000u), -EINVAL);
    ubj_ino_t d = tpath_ino(fs, "/d");
    /* "." / ".." as either name: Linux's do_renameat2 says EBUSY */
    assert_rc(ubj_rename(fs, d, ".", UBJ_ROOT_INO, "x", 0), -EBUSY);
    assert_rc(ubj_rename(fs, d, "..", UBJ_ROOT_INO, "x", 0), -EBUSY);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", d, ".", 0), -EBUSY);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", d, "..", 0), -EBUSY);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "", UBJ_ROOT_INO, "x", 0), -EINVAL);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", UBJ_ROOT_INO, "", 0), -EINVAL);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", UBJ_ROOT_INO, "x/y", 0), -EINVAL);
    char longn[300];
    memset(longn, 'n', 256);
    longn[256] = '\0';
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", UBJ_ROOT_INO, longn, 0), -ENAMETOOLONG);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, longn, UBJ_ROOT_INO, "a", 0), -ENAMETOOLONG);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 3);
}

/* test_hardlink_same_inode -- renaming onto another link of the same
 * inode does nothing (POSIX): both names stay. */
static void test_hardlink_same_inode(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_put(fs, "/a", "a", 1));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_link(fs, "/a", "/d/b"));
    ubj_ino_t a = tpath_ino(fs, "/a");
    assert_ok(tpath_rename(fs, "/a", "/d/b", 0));
    assert_int_equal(tpath_ino(fs, "/a"), a);
    assert_int_equal(tpath_ino(fs, "/d/b"), a);
    assert_int_equal(nlink_of(fs, "/a"), 2);
    assert_rc(tpath_rename(fs, "/a", "/d/b", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_ok(tpath_rename(fs, "/a", "/d/b", UBJ_RENAME_EXCHANGE));
    assert_int_equal(nlink_of(fs, "/a"), 2);
}

/* test_rename_times -- ctime of the moved inode, mtime/ctime of both
 * parents; the data's mtime is unchanged. */
static void test_rename_times(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat p0, q0, f0, p1, q1, f1;
    assert_ok(tpath_mkdir(fs, "/p", 0755, &p0));
    assert_ok(tpath_mkdir(fs, "/q", 0755, &q0));
    assert_ok(tpath_create(fs, "/p/f", 0644, NULL));
    assert_ok(tpath_stat(fs, "/p", &p0));
    assert_ok(tpath_stat(fs, "/p/f", &f0));
    t_sleep_ns(2000000);
    assert_ok(tpath_rename(fs, "/p/f", "/q/f", 0));
    assert_ok(tpath_stat(fs, "/p", &p1));
    assert_ok(tpath_stat(fs, "/q", &q1));
    assert_ok(tpath_stat(fs, "/q/f", &f1));
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_true(ts_cmp(&p1.ctime, &p0.ctime) > 0);
    assert_true(ts_cmp(&q1.mtime, &q0.mtime) > 0);
    assert_true(ts_cmp(&q1.ctime, &q0.ctime) > 0);
    assert_true(ts_cmp(&f1.ctime, &f0.ctime) > 0);
    assert_int_equal(ts_cmp(&f1.mtime, &f0.mtime), 0);
}

/* test_replace_open_target -- a replaced target that is open keeps its
 * data until released; then its blocks are freed. */
static void test_replace_open_target(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t b0 = t_free_blocks(fs);
    uint8_t buf[50000], out[50000];
    tpattern_fill(buf, sizeof buf, 4, 0);
    assert_ok(tpath_put(fs, "/old", buf, sizeof buf));
    assert_ok(tpath_put(fs, "/new", "n", 1));
    ubj_ino_t old = tpath_ino(fs, "/old");
    assert_ok(ubj_open(fs, old, O_RDONLY));
    assert_ok(tpath_rename(fs, "/new", "/old", 0));
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, old, &st));
    assert_int_equal(st.nlink, 0);
    assert_rc(ubj_pread(fs, old, out, sizeof out, 0), sizeof out);
    assert_int_equal(tpattern_check(out, sizeof out, 4, 0), sizeof out);
    assert_ok(ubj_release(fs, old));
    assert_rc(ubj_getattr(fs, old, &st), -ENOENT);
    assert_true(b0 - t_free_blocks(fs) <= 1);
}

/* test_rename_persist -- a renamed tree is found after remount. */
static void test_rename_persist(void **state)
{
    struct tfs *t = TFS(state);
    assert_ok(tpath_mkdir(t->fs, "/a", 0755, NULL));
    assert_ok(tpath_mkdir(t->fs, "/a/b", 0755, NULL));
    assert_ok(tpath_put(t->fs, "/a/b/f", "persist", 7));
    assert_ok(tpath_mkdir(t->fs, "/z", 0755, NULL));
    assert_ok(tpath_rename(t->fs, "/a/b", "/z/bb", 0));
    assert_ok(tpath_rename(t->fs, "/a", "/z/bb/a", 0));
    ubj_test_remount(t->dev, &t->fs);
    char out[7];
    assert_rc(tpath_read(t->fs, "/z/bb/f", out, 7, 0), 7);
    assert_memory_equal(out, "persist", 7);
    assert_int_equal(dotdot_of(t->fs, "/z/bb/a"), tpath_ino(t->fs, "/z/bb"));
    assert_int_equal(nlink_of(t->fs, "/z/bb"), 3);
    assert_int_equal(nlink_of(t->fs, "/"), 3);
}

/* test_rename_in_big_dir -- renames inside a directory of many entries
 * (several tree nodes) keep every other name. */
static void test_rename_in_big_dir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    char a[64], b[64];
    struct ubj_stat d, st;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, &d));
    for (int i = 0; i < 1500; i++) {
        snprintf(a, sizeof a, "name-%d", i);
        assert_ok(ubj_create(fs, d.ino, a, 0644, NULL, NULL));
    }
    for (int i = 0; i < 1500; i += 3) {
        snprintf(a, sizeof a, "name-%d", i);
        snprintf(b, sizeof b, "renamed-%d", i);
        assert_ok(ubj_rename(fs, d.ino, a, d.ino, b, 0));
    }
    for (int i = 1; i < 1500; i += 3) {       /* over existing names */
        snprintf(a, sizeof a, "name-%d", i);
        snprintf(b, sizeof b, "name-%d", i + 1);
        assert_ok(ubj_rename(fs, d.ino, a, d.ino, b, 0));
    }
    assert_rc(tdir_count(fs, d.ino), 1000);
    for (int i = 0; i < 1500; i++) {
        snprintf(a, sizeof a, "name-%d", i);
        snprintf(b, sizeof b, "renamed-%d", i);
        assert_rc(ubj_lookup(fs, d.ino, a, &st), i % 3 == 2 ? 0 : -ENOENT);
        assert_rc(ubj_lookup(fs, d.ino, b, &st), i % 3 == 0 ? 0 : -ENOENT);
    }
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_file_same_dir), T(test_file_across_dirs), T(test_file_over_file),
        T(test_type_mismatch), T(test_dir_moves), T(test_into_descendant),
        T(test_noreplace), T(test_exchange), T(test_bad_flags),
        T(test_hardlink_same_inode), T(test_rename_times),
        T(test_replace_open_target), T(test_rename_persist),
        T(test_rename_in_big_dir),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
