/*
 * tests/unit/namei.c -- the namespace API (src/fs/namei.c): every error
 * case ubjfs.h lists for lookup, mknod/create, mkdir, unlink, rmdir,
 * rename, link, symlink, readlink, readdir and the path helpers; the
 * rename matrix (files, directories, replacing, into a descendant,
 * EXCHANGE, NOREPLACE, hard links of one inode); link counts and parent
 * fields after directory moves; short and long symlinks; path resolution
 * with relative/absolute links, trailing slashes and loops (-ELOOP).
 * Every fixture ends with fsck (ubj_check) required clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include "testutil.h"
#include "fs/fs.h"

/* ---- helpers ------------------------------------------------------------ */

/* mk -- create a node (S_IFREG / S_IFDIR) and return its inode. */
static ubj_ino_t mk(struct ubj_fs *fs, ubj_ino_t parent, const char *name, uint32_t type)
{
    struct ubj_stat st;
    if (type == S_IFDIR)
        assert_ok(ubj_mkdir(fs, parent, name, 0755, NULL, &st));
    else
        assert_ok(ubj_create(fs, parent, name, 0644, NULL, &st));
    return st.ino;
}

/* sta -- getattr that must succeed. */
static struct ubj_stat sta(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, ino, &st));
    return st;
}

/* look -- the inode `name` names in `dir`, or 0. */
static ubj_ino_t look(struct ubj_fs *fs, ubj_ino_t dir, const char *name)
{
    struct ubj_stat st;
    return ubj_lookup(fs, dir, name, &st) == 0 ? st.ino : 0;
}

/* set_nlink -- force a link count (to reach the 65000 limit quickly),
 * with the LINK_COUNT event the file system gives such a change. */
static void set_nlink(struct ubj_fs *fs, ubj_ino_t ino, uint32_t n)
{
    struct ubj_handle *h;
    struct fs_iref r;
    assert_ok(fs_start(fs, 4, &h));
    assert_ok(fs_iget(fs, ino, &r));
    assert_ok(fs_iwrite(fs, h, &r));
    r.ip->nlink = n;
    assert_ok(fs_ievent(h, &r, UBJ_EV_LINK_COUNT, &r.ip->nlink, sizeof r.ip->nlink, n));
    assert_ok(fs_idirty(fs, h, &r));
    fs_iput(fs, &r);
    assert_ok(fs_stop(fs, h, 0));
}

/* raw_inode -- a copy of the on-disk inode. */
static struct ubj_inode raw_inode(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct ubj_handle *h;
    struct fs_iref r;
    struct ubj_inode copy;
    fs_start(fs, 0, &h);
    assert_ok(fs_iget(fs, ino, &r));
    copy = *r.ip;
    fs_iput(fs, &r);
    fs_stop(fs, h, 0);
    return copy;
}

/* parent_of -- the ".." of a directory. */
static ubj_ino_t parent_of(struct ubj_fs *fs, ubj_ino_t dir)
{
    return look(fs, dir, "..");
}

/* mtime_after / ctime_after -- ino's time is later than in `before`. */
static bool mtime_after(struct ubj_fs *fs, ubj_ino_t ino, const struct ubj_stat *before)
{
    struct ubj_stat now = sta(fs, ino);
    return ts_cmp(&now.mtime, &before->mtime) > 0;
}

static bool ctime_after(struct ubj_fs *fs, ubj_ino_t ino, const struct ubj_stat *before)
{
    struct ubj_stat now = sta(fs, ino);
    return ts_cmp(&now.ctime, &before->ctime) > 0;
}

/* tick -- let the clock move so timestamps can be compared. */
static void tick(void)
{
    t_sleep_ns(2000000);
}

static char long_name[300];

/* ---- lookup / create ------------------------------------------------------ */

static void test_lookup(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);

    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, "d", &st));
    assert_int_equal(st.ino, d);
    assert_true(S_ISDIR(st.mode));
    assert_int_equal(look(fs, d, "."), d);
    assert_int_equal(look(fs, d, ".."), UBJ_ROOT_INO);
    assert_int_equal(look(fs, UBJ_ROOT_INO, ".."), UBJ_ROOT_INO);
    assert_int_equal(look(fs, UBJ_ROOT_INO, "."), UBJ_ROOT_INO);
    assert_int_equal(look(fs, d, "f"), f);
    assert_rc(ubj_lookup(fs, d, "g", &st), -ENOENT);
    assert_true(strlen(ubj_errormsg()) > 0);
    assert_rc(ubj_lookup(fs, f, "x", &st), -ENOTDIR);
    assert_rc(ubj_lookup(fs, d, long_name, &st), -ENAMETOOLONG);
    assert_rc(ubj_lookup(fs, d, "", &st), -EINVAL);
    assert_rc(ubj_lookup(fs, d, "a/b", &st), -EINVAL);
    assert_rc(ubj_lookup(fs, 999, "x", &st), -ENOENT);
    assert_rc(ubj_lookup(fs, 0, "x", &st), -ENOENT);
    assert_rc(ubj_lookup(fs, d, NULL, &st), -EINVAL);
    /* a 255-byte name is fine */
    char n255[256];
    memset(n255, 'z', 255);
    n255[255] = '\0';
    ubj_ino_t z = mk(fs, d, n255, S_IFREG);
    assert_int_equal(look(fs, d, n255), z);
    assert_ok(ubj_unlink(fs, d, n255));
    assert_ok(ubj_unlink(fs, d, "f"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
}

static void test_mknod(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st, pst0, pst1;
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);
    static const struct { const char *name; uint32_t type; unsigned dt; } kinds[] = {
        { "reg", S_IFREG, DT_REG }, { "fifo", S_IFIFO, DT_FIFO },
        { "chr", S_IFCHR, DT_CHR }, { "blk", S_IFBLK, DT_BLK },
        { "sock", S_IFSOCK, DT_SOCK }, { "zero", 0, DT_REG },
    };
    struct ubj_cred cred = { 1000, 100 };

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        pst0 = sta(fs, d);
        tick();
        assert_ok(ubj_mknod(fs, d, kinds[i].name, kinds[i].type | 0640, 0x0801, &cred, &st));
        assert_int_equal(st.mode & S_IFMT, kinds[i].type ? kinds[i].type : S_IFREG);
        assert_int_equal(st.mode & 07777, 0640);
        assert_int_equal(st.nlink, 1);
        assert_int_equal(st.uid, 1000);
        assert_int_equal(st.gid, 100);
        if (kinds[i].type == S_IFCHR || kinds[i].type == S_IFBLK)
            assert_int_equal(st.rdev, 0x0801);
        pst1 = sta(fs, d);
        assert_true(ts_cmp(&pst1.mtime, &pst0.mtime) > 0);
        assert_true(ts_cmp(&pst1.ctime, &pst0.ctime) > 0);
        assert_int_equal(pst1.nlink, pst0.nlink);
        assert_int_equal(look(fs, d, kinds[i].name), st.ino);
    }
    struct tdirent *ents;
    size_t n;
    assert_ok(tdir_list(fs, d, &ents, &n));
    assert_int_equal(n, 2 + 1 + 6);
    for (size_t j = 2; j < n; j++)
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (strcmp(ents[j].name, kinds[i].name) == 0)
                assert_int_equal(ents[j].type, kinds[i].dt);
    free(ents);

    /* errors */
    assert_rc(ubj_mknod(fs, d, "reg", S_IFREG, 0, NULL, NULL), -EEXIST);
    assert_rc(ubj_mknod(fs, d, "fifo", S_IFREG, 0, NULL, NULL), -EEXIST);
    assert_rc(ubj_create(fs, d, ".", 0644, NULL, NULL), -EEXIST);
    assert_rc(ubj_create(fs, d, "..", 0644, NULL, NULL), -EEXIST);
    assert_rc(ubj_mknod(fs, d, "x", S_IFDIR | 0755, 0, NULL, NULL), -EPERM);
    assert_rc(ubj_mknod(fs, d, "x", S_IFLNK | 0777, 0, NULL, NULL), -EINVAL);
    assert_rc(ubj_mknod(fs, d, "x", 0170000, 0, NULL, NULL), -EINVAL);
    assert_rc(ubj_create(fs, f, "x", 0644, NULL, NULL), -ENOTDIR);
    assert_rc(ubj_create(fs, 777, "x", 0644, NULL, NULL), -ENOENT);
    assert_rc(ubj_create(fs, d, long_name, 0644, NULL, NULL), -ENAMETOOLONG);
    assert_rc(ubj_create(fs, d, "", 0644, NULL, NULL), -EINVAL);
    assert_rc(ubj_create(fs, d, "a/b", 0644, NULL, NULL), -EINVAL);
    assert_int_equal(look(fs, d, "x"), 0);

    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        assert_ok(ubj_unlink(fs, d, kinds[i].name));
    assert_ok(ubj_unlink(fs, d, "f"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
}

static void test_sgid_inherit(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    struct ubj_cred c1 = { 5, 77 }, c2 = { 6, 88 };
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "g", 02775, &c1, &st));
    ubj_ino_t g = st.ino;
    assert_int_equal(st.mode & 07777, 02775);
    assert_ok(ubj_create(fs, g, "f", 0644, &c2, &st));
    assert_int_equal(st.gid, 77);
    assert_int_equal(st.uid, 6);
    assert_ok(ubj_mkdir(fs, g, "sub", 0755, &c2, &st));
    assert_int_equal(st.gid, 77);
    assert_true(st.mode & S_ISGID);
    assert_ok(ubj_unlink(fs, g, "f"));
    assert_ok(ubj_rmdir(fs, g, "sub"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "g"));
}

static void test_mkdir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    uint64_t ffree = t_free_inodes(fs), bfree = t_free_blocks(fs);
    struct ubj_stat r0 = sta(fs, UBJ_ROOT_INO);
    tick();
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0700, NULL, &st));
    ubj_ino_t d = st.ino;
    assert_true(S_ISDIR(st.mode));
    assert_int_equal(st.mode & 07777, 0700);
    assert_int_equal(st.nlink, 2);
    assert_int_equal(st.size, UBJ_BS);
    assert_int_equal(st.blocks, UBJ_BS / 512);
    struct ubj_stat r1 = sta(fs, UBJ_ROOT_INO);
    assert_int_equal(r1.nlink, r0.nlink + 1);
    assert_true(ts_cmp(&r1.mtime, &r0.mtime) > 0);
    assert_int_equal(parent_of(fs, d), UBJ_ROOT_INO);
    assert_int_equal(raw_inode(fs, d).parent, UBJ_ROOT_INO);
    assert_int_equal(t_free_inodes(fs), ffree - 1);
    assert_int_equal(t_free_blocks(fs), bfree - 1);
    assert_int_equal(tdir_count(fs, d), 0);

    ubj_ino_t e = mk(fs, d, "e", S_IFDIR);
    assert_int_equal(sta(fs, d).nlink, 3);
    assert_int_equal(parent_of(fs, e), d);
    assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, NULL), -EEXIST);
    assert_rc(ubj_mkdir(fs, d, ".", 0755, NULL, NULL), -EEXIST);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);
    assert_rc(ubj_mkdir(fs, f, "x", 0755, NULL, NULL), -ENOTDIR);
    assert_rc(ubj_mkdir(fs, 4000, "x", 0755, NULL, NULL), -ENOENT);
    assert_rc(ubj_mkdir(fs, d, long_name, 0755, NULL, NULL), -ENAMETOOLONG);

    /* EMLINK at 65000 links of the parent */
    set_nlink(fs, d, 64999);
    assert_ok(ubj_mkdir(fs, d, "last", 0755, NULL, NULL));
    assert_int_equal(sta(fs, d).nlink, 65000);
    ffree = t_free_inodes(fs);
    assert_rc(ubj_mkdir(fs, d, "over", 0755, NULL, NULL), -EMLINK);
    assert_int_equal(t_free_inodes(fs), ffree);
    assert_ok(ubj_create(fs, d, "file-ok", 0644, NULL, NULL));   /* files don't count */
    assert_ok(ubj_rmdir(fs, d, "last"));
    set_nlink(fs, d, 3);

    assert_ok(ubj_unlink(fs, d, "file-ok"));
    assert_ok(ubj_unlink(fs, d, "f"));
    assert_ok(ubj_rmdir(fs, d, "e"));
    assert_int_equal(sta(fs, d).nlink, 2);
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
    assert_int_equal(sta(fs, UBJ_ROOT_INO).nlink, r0.nlink);
}

/* ---- unlink / rmdir ------------------------------------------------------- */

static void test_unlink(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t sub = mk(fs, d, "sub", S_IFDIR);
    uint64_t ffree = t_free_inodes(fs);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);
    assert_int_equal(tpath_write(fs, "/d/f", "hello", 5, 0), 5);

    assert_rc(ubj_unlink(fs, d, "sub"), -EISDIR);
    assert_rc(ubj_unlink(fs, d, "."), -EISDIR);
    assert_rc(ubj_unlink(fs, d, ".."), -EISDIR);
    assert_rc(ubj_unlink(fs, d, "nope"), -ENOENT);
    assert_rc(ubj_unlink(fs, f, "x"), -ENOTDIR);
    assert_rc(ubj_unlink(fs, 3333, "x"), -ENOENT);
    assert_rc(ubj_unlink(fs, d, long_name), -ENAMETOOLONG);
    assert_rc(ubj_unlink(fs, d, ""), -EINVAL);

    /* a second link keeps the inode */
    assert_ok(ubj_link(fs, f, UBJ_ROOT_INO, "f2", &st));
    assert_int_equal(st.nlink, 2);
    struct ubj_stat s0 = sta(fs, f), p0 = sta(fs, d);
    tick();
    assert_ok(ubj_unlink(fs, d, "f"));
    struct ubj_stat s1 = sta(fs, f), p1 = sta(fs, d);
    assert_int_equal(s1.nlink, 1);
    assert_true(ts_cmp(&s1.ctime, &s0.ctime) > 0);
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_int_equal(look(fs, d, "f"), 0);
    assert_int_equal(look(fs, UBJ_ROOT_INO, "f2"), f);

    /* open and unlinked: the data lives until release */
    assert_ok(ubj_open(fs, f, O_RDONLY));
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "f2"));
    assert_int_equal(sta(fs, f).nlink, 0);
    char buf[8];
    assert_int_equal(ubj_pread(fs, f, buf, sizeof buf, 0), 5);
    assert_memory_equal(buf, "hello", 5);
    assert_rc(ubj_link(fs, f, d, "back", NULL), -ENOENT);   /* nlink 0 */
    assert_int_equal(t_free_inodes(fs), ffree - 1);
    assert_ok(ubj_release(fs, f));
    assert_int_equal(t_free_inodes(fs), ffree);
    assert_rc(ubj_getattr(fs, f, &st), -ENOENT);
    (void)sub;
    assert_ok(ubj_rmdir(fs, d, "sub"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
}

/* add_raw -- add a name with the internal API (for states the public API
 * cannot make, like a name for the root). */
static void add_raw(struct ubj_fs *fs, ubj_ino_t dir, const char *name, ubj_ino_t ino,
                    bool remove)
{
    struct ubj_handle *h;
    struct fs_iref d;
    assert_ok(fs_start(fs, 64, &h));
    assert_ok(fs_iget(fs, dir, &d));
    if (remove)
        assert_ok(fs_dir_remove(fs, h, &d, name, strlen(name)));
    else
        assert_ok(fs_dir_add(fs, h, &d, name, strlen(name), ino, DT_DIR));
    fs_iput(fs, &d);
    assert_ok(fs_stop(fs, h, 0));
}

static void test_rmdir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    uint64_t ffree = t_free_inodes(fs), bfree = t_free_blocks(fs);
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t e = mk(fs, d, "e", S_IFDIR);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);

    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "d"), -ENOTEMPTY);
    assert_rc(ubj_rmdir(fs, d, "f"), -ENOTDIR);
    assert_rc(ubj_rmdir(fs, d, "."), -EINVAL);
    assert_rc(ubj_rmdir(fs, d, ".."), -ENOTEMPTY);
    assert_rc(ubj_rmdir(fs, d, "nope"), -ENOENT);
    assert_rc(ubj_rmdir(fs, f, "x"), -ENOTDIR);
    assert_rc(ubj_rmdir(fs, 3333, "x"), -ENOENT);
    assert_rc(ubj_rmdir(fs, d, long_name), -ENAMETOOLONG);
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "."), -EINVAL);
    /* the root under a name (only a damaged tree has one) is busy */
    add_raw(fs, e, "rootname", UBJ_ROOT_INO, false);
    assert_rc(ubj_rmdir(fs, e, "rootname"), -EBUSY);
    add_raw(fs, e, "rootname", 0, true);

    struct ubj_stat p0 = sta(fs, d);
    tick();
    assert_ok(ubj_rmdir(fs, d, "e"));
    struct ubj_stat p1 = sta(fs, d);
    assert_int_equal(p1.nlink, p0.nlink - 1);
    assert_true(ts_cmp(&p1.mtime, &p0.mtime) > 0);
    assert_rc(ubj_getattr(fs, e, &st), -ENOENT);

    /* an open directory outlives rmdir but is dead: no lookups or names */
    e = mk(fs, d, "e", S_IFDIR);
    assert_ok(ubj_open(fs, e, O_RDONLY));
    assert_ok(ubj_rmdir(fs, d, "e"));
    assert_ok(ubj_getattr(fs, e, &st));
    assert_int_equal(st.nlink, 0);
    assert_rc(tdir_count(fs, e), -ENOENT);
    assert_rc(ubj_lookup(fs, e, "x", &st), -ENOENT);
    assert_rc(ubj_create(fs, e, "x", 0644, NULL, NULL), -ENOENT);
    assert_rc(ubj_mkdir(fs, e, "x", 0755, NULL, NULL), -ENOENT);
    assert_ok(ubj_release(fs, e));
    assert_rc(ubj_getattr(fs, e, &st), -ENOENT);

    assert_ok(ubj_unlink(fs, d, "f"));
    (void)f;
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
    assert_int_equal(t_free_inodes(fs), ffree);
    assert_int_equal(t_free_blocks(fs), bfree);
}

/* ---- rename ---------------------------------------------------------------- */

static void test_rename_files(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t a = mk(fs, UBJ_ROOT_INO, "a", S_IFDIR);
    ubj_ino_t b = mk(fs, UBJ_ROOT_INO, "b", S_IFDIR);
    ubj_ino_t f = mk(fs, a, "f", S_IFREG);
    ubj_ino_t g = mk(fs, a, "g", S_IFREG);

    /* same directory */
    struct ubj_stat f0 = sta(fs, f), a0 = sta(fs, a);
    tick();
    assert_ok(ubj_rename(fs, a, "f", a, "f1", 0));
    assert_int_equal(look(fs, a, "f"), 0);
    assert_int_equal(look(fs, a, "f1"), f);
    struct ubj_stat f1 = sta(fs, f), a1 = sta(fs, a);
    assert_true(ts_cmp(&f1.ctime, &f0.ctime) > 0);
    assert_true(ts_cmp(&a1.mtime, &a0.mtime) > 0);
    assert_int_equal(f1.nlink, 1);
    assert_int_equal(a1.nlink, a0.nlink);

    /* another directory: both parents' times change */
    struct ubj_stat b0 = sta(fs, b);
    a0 = sta(fs, a);
    tick();
    assert_ok(ubj_rename(fs, a, "f1", b, "f", 0));
    assert_int_equal(look(fs, b, "f"), f);
    assert_int_equal(look(fs, a, "f1"), 0);
    assert_true(mtime_after(fs, a, &a0));
    assert_true(mtime_after(fs, b, &b0));
    assert_true(ctime_after(fs, b, &b0));

    /* over a file: the replaced inode is freed */
    uint64_t ffree = t_free_inodes(fs);
    assert_ok(ubj_rename(fs, a, "g", b, "f", 0));
    assert_int_equal(look(fs, b, "f"), g);
    assert_int_equal(look(fs, a, "g"), 0);
    assert_rc(ubj_getattr(fs, f, &st), -ENOENT);
    assert_int_equal(t_free_inodes(fs), ffree + 1);

    /* over a hard-linked file: its other link stays */
    ubj_ino_t h = mk(fs, a, "h", S_IFREG);
    assert_ok(ubj_link(fs, h, a, "h2", NULL));
    ubj_ino_t k = mk(fs, a, "k", S_IFREG);
    assert_ok(ubj_rename(fs, a, "k", a, "h", 0));
    assert_int_equal(look(fs, a, "h"), k);
    assert_int_equal(sta(fs, h).nlink, 1);
    assert_int_equal(look(fs, a, "h2"), h);

    /* same inode at both names: nothing happens */
    assert_ok(ubj_link(fs, k, b, "k2", NULL));
    assert_ok(ubj_rename(fs, a, "h", b, "k2", 0));
    assert_int_equal(look(fs, a, "h"), k);
    assert_int_equal(look(fs, b, "k2"), k);
    assert_int_equal(sta(fs, k).nlink, 2);
    assert_ok(ubj_rename(fs, a, "h", a, "h", 0));
    assert_int_equal(look(fs, a, "h"), k);
    assert_ok(ubj_rename(fs, a, "h", b, "k2", UBJ_RENAME_EXCHANGE));
    assert_rc(ubj_rename(fs, a, "h", b, "k2", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_rc(ubj_rename(fs, a, "h", a, "h", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_int_equal(sta(fs, k).nlink, 2);

    /* NOREPLACE */
    assert_rc(ubj_rename(fs, a, "h", a, "h2", UBJ_RENAME_NOREPLACE), -EEXIST);
    assert_ok(ubj_rename(fs, a, "h2", a, "h3", UBJ_RENAME_NOREPLACE));
    assert_int_equal(look(fs, a, "h3"), h);

    /* errors */
    assert_rc(ubj_rename(fs, a, "missing", a, "x", 0), -ENOENT);
    assert_rc(ubj_rename(fs, a, ".", a, "x", 0), -EBUSY);
    assert_rc(ubj_rename(fs, a, "h3", a, "..", 0), -EBUSY);
    assert_rc(ubj_rename(fs, a, "h3", a, ".", 0), -EBUSY);
    assert_rc(ubj_rename(fs, a, "h3", a, "x",
                         UBJ_RENAME_NOREPLACE | UBJ_RENAME_EXCHANGE), -EINVAL);
    assert_rc(ubj_rename(fs, a, "h3", a, "x", 0x8), -EINVAL);
    assert_rc(ubj_rename(fs, a, "h3", a, long_name, 0), -ENAMETOOLONG);
    assert_rc(ubj_rename(fs, a, "h3", a, "x/y", 0), -EINVAL);
    assert_rc(ubj_rename(fs, h, "x", a, "y", 0), -ENOTDIR);
    assert_rc(ubj_rename(fs, a, "h3", h, "y", 0), -ENOTDIR);
    assert_rc(ubj_rename(fs, a, "h3", 4444, "y", 0), -ENOENT);
    assert_rc(ubj_rename(fs, a, "h3", a, "nothere", UBJ_RENAME_EXCHANGE), -ENOENT);
    ubj_ino_t sub = mk(fs, a, "sub", S_IFDIR);
    assert_rc(ubj_rename(fs, a, "h3", a, "sub", 0), -EISDIR);
    assert_rc(ubj_rename(fs, a, "sub", a, "h3", 0), -ENOTDIR);
    assert_int_equal(look(fs, a, "sub"), sub);
    assert_int_equal(look(fs, a, "h3"), h);

    /* EXCHANGE of two files in different directories */
    assert_ok(ubj_rename(fs, a, "h3", b, "f", UBJ_RENAME_EXCHANGE));
    assert_int_equal(look(fs, a, "h3"), g);
    assert_int_equal(look(fs, b, "f"), h);

    assert_ok(ubj_rmdir(fs, a, "sub"));
    assert_ok(ubj_unlink(fs, a, "h3"));
    assert_ok(ubj_unlink(fs, a, "h"));
    assert_ok(ubj_unlink(fs, b, "k2"));
    assert_ok(ubj_unlink(fs, b, "f"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "a"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "b"));
}

static void test_rename_dirs(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    /* /a/b/c, /x */
    ubj_ino_t a = mk(fs, UBJ_ROOT_INO, "a", S_IFDIR);
    ubj_ino_t b = mk(fs, a, "b", S_IFDIR);
    ubj_ino_t c = mk(fs, b, "c", S_IFDIR);
    ubj_ino_t x = mk(fs, UBJ_ROOT_INO, "x", S_IFDIR);
    uint32_t root_n = sta(fs, UBJ_ROOT_INO).nlink;

    /* into itself or a descendant */
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", a, "self", 0), -EINVAL);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", c, "deep", 0), -EINVAL);
    assert_rc(ubj_rename(fs, a, "b", c, "deep", 0), -EINVAL);
    assert_rc(ubj_rename(fs, a, "b", b, "deep", 0), -EINVAL);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "a", c, "deep", UBJ_RENAME_NOREPLACE), -EINVAL);
    /* over an ancestor of the source: not empty */
    assert_rc(ubj_rename(fs, b, "c", UBJ_ROOT_INO, "a", 0), -ENOTEMPTY);
    assert_rc(ubj_rename(fs, b, "c", UBJ_ROOT_INO, "a", UBJ_RENAME_EXCHANGE), -EINVAL);
    /* within the same parent: nothing moves in the tree */
    assert_ok(ubj_rename(fs, a, "b", a, "b2", 0));
    assert_int_equal(sta(fs, a).nlink, 3);
    assert_int_equal(parent_of(fs, b), a);

    /* move b (with c) from a to x: nlinks and parent field */
    struct ubj_stat b0 = sta(fs, b);
    tick();
    assert_ok(ubj_rename(fs, a, "b2", x, "b", 0));
    assert_int_equal(sta(fs, a).nlink, 2);
    assert_int_equal(sta(fs, x).nlink, 3);
    assert_int_equal(sta(fs, b).nlink, 3);
    assert_int_equal(parent_of(fs, b), x);
    assert_int_equal(raw_inode(fs, b).parent, x);
    assert_int_equal(parent_of(fs, c), b);
    assert_true(ctime_after(fs, b, &b0));
    assert_int_equal(sta(fs, UBJ_ROOT_INO).nlink, root_n);
    assert_ok(tpath_stat(fs, "/x/b/c", &st));
    assert_int_equal(st.ino, c);

    /* over an empty directory in another parent */
    ubj_ino_t e = mk(fs, a, "e", S_IFDIR);
    uint64_t ffree = t_free_inodes(fs);
    assert_ok(ubj_rename(fs, x, "b", a, "e", 0));
    assert_int_equal(look(fs, a, "e"), b);
    assert_rc(ubj_getattr(fs, e, &st), -ENOENT);
    assert_int_equal(t_free_inodes(fs), ffree + 1);
    assert_int_equal(sta(fs, a).nlink, 3);
    assert_int_equal(sta(fs, x).nlink, 2);
    assert_int_equal(parent_of(fs, b), a);

    /* over an empty directory in the same parent */
    e = mk(fs, a, "e2", S_IFDIR);
    assert_int_equal(sta(fs, a).nlink, 4);
    assert_ok(ubj_rename(fs, a, "e", a, "e2", 0));
    assert_int_equal(sta(fs, a).nlink, 3);
    assert_int_equal(look(fs, a, "e2"), b);
    assert_rc(ubj_getattr(fs, e, &st), -ENOENT);

    /* over a non-empty directory; file over dir; dir over file */
    ubj_ino_t full = mk(fs, x, "full", S_IFDIR);
    mk(fs, full, "inside", S_IFREG);
    assert_rc(ubj_rename(fs, a, "e2", x, "full", 0), -ENOTEMPTY);
    ubj_ino_t f = mk(fs, x, "file", S_IFREG);
    assert_rc(ubj_rename(fs, a, "e2", x, "file", 0), -ENOTDIR);
    assert_rc(ubj_rename(fs, x, "file", a, "e2", 0), -EISDIR);
    assert_rc(ubj_rename(fs, x, "file", x, "full", 0), -EISDIR);
    /* EXCHANGE allows any types: a directory with a file across parents */
    assert_ok(ubj_rename(fs, a, "e2", x, "file", UBJ_RENAME_EXCHANGE));
    assert_int_equal(look(fs, x, "file"), b);
    assert_int_equal(look(fs, a, "e2"), f);
    assert_int_equal(parent_of(fs, b), x);
    assert_int_equal(sta(fs, a).nlink, 2);
    assert_int_equal(sta(fs, x).nlink, 4);   /* full + b */
    /* EXCHANGE two directories across parents: parents swap, counts stay */
    ubj_ino_t y = mk(fs, a, "y", S_IFDIR);
    assert_ok(ubj_rename(fs, a, "y", x, "full", UBJ_RENAME_EXCHANGE));
    assert_int_equal(look(fs, a, "y"), full);
    assert_int_equal(look(fs, x, "full"), y);
    assert_int_equal(parent_of(fs, full), a);
    assert_int_equal(parent_of(fs, y), x);
    assert_int_equal(sta(fs, a).nlink, 3);
    assert_int_equal(sta(fs, x).nlink, 4);
    /* EXCHANGE into a descendant */
    assert_rc(ubj_rename(fs, x, "file", c, "zz", UBJ_RENAME_EXCHANGE), -ENOENT);
    ubj_ino_t zz = mk(fs, c, "zz", S_IFREG);
    assert_rc(ubj_rename(fs, x, "file", c, "zz", UBJ_RENAME_EXCHANGE), -EINVAL);
    assert_ok(ubj_unlink(fs, c, "zz"));
    (void)zz;

    /* EMLINK: a directory cannot move into a full parent */
    set_nlink(fs, a, 65000);
    assert_rc(ubj_rename(fs, x, "full", a, "moved", 0), -EMLINK);
    assert_rc(ubj_rename(fs, x, "full", a, "e2", UBJ_RENAME_EXCHANGE), -EMLINK);
    assert_ok(ubj_rename(fs, a, "e2", a, "e3", 0));    /* a file may */
    set_nlink(fs, a, 3);

    /* the tree still resolves; "." cannot be removed */
    assert_ok(tpath_stat(fs, "/x/file/c", &st));
    assert_int_equal(st.ino, c);
    assert_rc(ubj_rmdir(fs, c, "."), -EINVAL);
    assert_rc(ubj_rename(fs, UBJ_ROOT_INO, "x", c, "loop", 0), -EINVAL);
}

/* ---- link ------------------------------------------------------------------ */

static void test_link(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);
    struct ubj_stat f0 = sta(fs, f), d0 = sta(fs, d);
    tick();
    assert_ok(ubj_link(fs, f, d, "g", &st));
    assert_int_equal(st.ino, f);
    assert_int_equal(st.nlink, 2);
    assert_true(ts_cmp(&st.ctime, &f0.ctime) > 0);
    assert_true(mtime_after(fs, d, &d0));
    assert_int_equal(look(fs, d, "g"), f);
    assert_ok(ubj_link(fs, f, UBJ_ROOT_INO, "top", NULL));
    assert_int_equal(sta(fs, f).nlink, 3);

    assert_rc(ubj_link(fs, d, UBJ_ROOT_INO, "dirlink", NULL), -EPERM);
    assert_rc(ubj_link(fs, f, d, "g", NULL), -EEXIST);
    assert_rc(ubj_link(fs, f, d, "d", NULL), 0);
    assert_rc(ubj_link(fs, f, d, ".", NULL), -EEXIST);
    assert_rc(ubj_link(fs, f, f, "x", NULL), -ENOTDIR);
    assert_rc(ubj_link(fs, 5555, d, "x", NULL), -ENOENT);
    assert_rc(ubj_link(fs, f, 5555, "x", NULL), -ENOENT);
    assert_rc(ubj_link(fs, f, d, long_name, NULL), -ENAMETOOLONG);
    assert_rc(ubj_link(fs, f, d, "", NULL), -EINVAL);
    set_nlink(fs, f, 65000);
    assert_rc(ubj_link(fs, f, d, "over", NULL), -EMLINK);
    set_nlink(fs, f, 4);
    assert_int_equal(tdir_count(fs, d), 3);

    assert_ok(ubj_unlink(fs, d, "f"));
    assert_ok(ubj_unlink(fs, d, "g"));
    assert_ok(ubj_unlink(fs, d, "d"));
    assert_int_equal(sta(fs, f).nlink, 1);
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "top"));
    assert_rc(ubj_getattr(fs, f, &st), -ENOENT);
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
}

/* ---- symlinks -------------------------------------------------------------- */

/* link_roundtrip -- create a symlink with a target of len bytes, read it
 * back (whole and truncated), check size/blocks/inline storage. */
static void link_roundtrip(struct ubj_fs *fs, ubj_ino_t d, const char *name, size_t len)
{
    char *target = malloc(len + 1), *back = malloc(len + 16);
    struct ubj_stat st;
    assert_non_null(target);
    assert_non_null(back);
    for (size_t i = 0; i < len; i++)
        target[i] = (char)('a' + (i * 7 + len) % 26);
    target[len] = '\0';
    uint64_t bfree = t_free_blocks(fs);
    assert_ok(ubj_symlink(fs, target, d, name, NULL, &st));
    assert_true(S_ISLNK(st.mode));
    assert_int_equal(st.mode & 0777, 0777);
    assert_int_equal(st.size, len);
    assert_int_equal(st.nlink, 1);
    struct ubj_inode ri = raw_inode(fs, st.ino);
    if (len <= UBJ_SYMLINK_INLINE_MAX) {
        assert_int_equal(ri.flags & UBJ_IFL_EXTTREE, 0);
        assert_memory_equal(ri.i_data.symlink, target, len);
        assert_int_equal(st.blocks, 0);
        assert_int_equal(t_free_blocks(fs), bfree);
    } else {
        assert_int_equal(ri.flags & UBJ_IFL_EXTTREE, UBJ_IFL_EXTTREE);
        assert_int_equal(st.blocks, UBJ_BS / 512);
        assert_int_equal(t_free_blocks(fs), bfree - 1);
    }
    memset(back, 0, len + 16);
    assert_int_equal(ubj_readlink(fs, st.ino, back, len + 16), len);
    assert_memory_equal(back, target, len);
    memset(back, 0, len + 16);
    assert_int_equal(ubj_readlink(fs, st.ino, back, len / 2), len / 2);
    assert_memory_equal(back, target, len / 2);
    assert_int_equal(back[len / 2], 0);
    free(target);
    free(back);
}

static void test_symlink(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct tfs *t = TFS(state);
    struct ubj_stat st;
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);
    static const size_t lens[] = { 1, 2, 100, 127, 128, 129, 1000, 4095 };
    char name[32];
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        snprintf(name, sizeof name, "l%zu", lens[i]);
        link_roundtrip(fs, d, name, lens[i]);
    }
    struct tdirent *ents;
    size_t n;
    assert_ok(tdir_list(fs, d, &ents, &n));
    for (size_t i = 2; i < n; i++)
        if (ents[i].name[0] == 'l')
            assert_int_equal(ents[i].type, DT_LNK);
    free(ents);

    /* errors */
    char big[4097];
    memset(big, 't', 4096);
    big[4096] = '\0';
    assert_rc(ubj_symlink(fs, big, d, "big", NULL, NULL), -ENAMETOOLONG);
    assert_rc(ubj_symlink(fs, "", d, "empty", NULL, NULL), -ENOENT);
    assert_rc(ubj_symlink(fs, "x", d, "l1", NULL, NULL), -EEXIST);
    assert_rc(ubj_symlink(fs, "x", f, "l", NULL, NULL), -ENOTDIR);
    assert_rc(ubj_symlink(fs, "x", 4321, "l", NULL, NULL), -ENOENT);
    assert_rc(ubj_symlink(fs, "x", d, long_name, NULL, NULL), -ENAMETOOLONG);
    assert_rc(ubj_symlink(fs, "x", d, "a/b", NULL, NULL), -EINVAL);
    char buf[8];
    assert_rc(ubj_readlink(fs, f, buf, sizeof buf), -EINVAL);
    assert_rc(ubj_readlink(fs, d, buf, sizeof buf), -EINVAL);
    assert_rc(ubj_readlink(fs, 4321, buf, sizeof buf), -ENOENT);

    /* they survive a remount; long ones free their block when unlinked */
    ubj_test_remount(t->dev, &t->fs);
    fs = t->fs;
    char back[4096];
    assert_ok(tpath_stat(fs, "/d/l4095", &st));
    assert_int_equal(ubj_readlink(fs, st.ino, back, sizeof back), 4095);
    assert_ok(tpath_stat(fs, "/d/l127", &st));
    assert_int_equal(ubj_readlink(fs, st.ino, back, sizeof back), 127);
    uint64_t bfree = t_free_blocks(fs);
    assert_ok(ubj_unlink(fs, d, "l4095"));
    assert_int_equal(t_free_blocks(fs), bfree + 1);
    assert_ok(ubj_unlink(fs, d, "l127"));
    assert_int_equal(t_free_blocks(fs), bfree + 1);
}

/* ---- readdir ------------------------------------------------------------------ */

static void test_readdir(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t d = mk(fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t f = mk(fs, d, "f", S_IFREG);
    ubj_ino_t s = mk(fs, d, "s", S_IFDIR);
    struct tdirent *ents;
    size_t n;
    assert_ok(tdir_list(fs, d, &ents, &n));
    assert_int_equal(n, 4);
    assert_string_equal(ents[0].name, ".");
    assert_string_equal(ents[1].name, "..");
    assert_int_equal(ents[1].ino, UBJ_ROOT_INO);
    for (size_t i = 2; i < 4; i++) {
        if (strcmp(ents[i].name, "f") == 0) {
            assert_int_equal(ents[i].ino, f);
            assert_int_equal(ents[i].type, DT_REG);
        } else {
            assert_string_equal(ents[i].name, "s");
            assert_int_equal(ents[i].ino, s);
            assert_int_equal(ents[i].type, DT_DIR);
        }
    }
    free(ents);
    assert_ok(tdir_list(fs, s, &ents, &n));
    assert_int_equal(n, 2);
    assert_int_equal(ents[1].ino, d);
    free(ents);
    assert_rc(tdir_count(fs, f), -ENOTDIR);
    assert_rc(tdir_count(fs, 6543), -ENOENT);
    assert_rc(tdir_count(fs, 0), -ENOENT);
    assert_int_equal(tdir_count(fs, UBJ_ROOT_INO), 1);
}

/* ---- paths --------------------------------------------------------------------- */

static void test_paths(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t par;
    const char *nm;
    /* /a/b/f, /a/c, links */
    ubj_ino_t a = mk(fs, UBJ_ROOT_INO, "a", S_IFDIR);
    ubj_ino_t b = mk(fs, a, "b", S_IFDIR);
    ubj_ino_t f = mk(fs, b, "f", S_IFREG);
    ubj_ino_t c = mk(fs, a, "c", S_IFDIR);
    assert_ok(tpath_symlink(fs, "b", "/a/rel"));          /* relative: /a/b */
    assert_ok(tpath_symlink(fs, "/a/b", "/abs"));         /* absolute */
    assert_ok(tpath_symlink(fs, "../c", "/a/b/up"));       /* -> /a/c */
    assert_ok(tpath_symlink(fs, "f", "/a/b/tof"));         /* -> file */
    assert_ok(tpath_symlink(fs, "nowhere", "/a/dangling"));
    assert_ok(tpath_symlink(fs, "l2", "/a/l1"));
    assert_ok(tpath_symlink(fs, "l1", "/a/l2"));
    assert_ok(tpath_symlink(fs, "self", "/a/self"));
    assert_ok(tpath_symlink(fs, "/a/b/f/", "/a/slashfile"));

    assert_ok(ubj_path_lookup(fs, "/", 0, &st));
    assert_int_equal(st.ino, UBJ_ROOT_INO);
    assert_ok(ubj_path_lookup(fs, "//a///b//f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/a/./b/../b/f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/../../a", 0, &st));
    assert_int_equal(st.ino, a);
    assert_ok(ubj_path_lookup(fs, "/a/rel/f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/abs/f", 0, &st));
    assert_int_equal(st.ino, f);
    assert_ok(ubj_path_lookup(fs, "/abs/up", 0, &st));
    assert_int_equal(st.ino, c);
    assert_ok(ubj_path_lookup(fs, "/abs/up/..", 0, &st));
    assert_int_equal(st.ino, a);
    /* the last component: followed unless NOFOLLOW; a trailing '/' follows */
    assert_ok(ubj_path_lookup(fs, "/a/rel", 0, &st));
    assert_int_equal(st.ino, b);
    assert_ok(ubj_path_lookup(fs, "/a/rel", UBJ_PATH_NOFOLLOW, &st));
    assert_true(S_ISLNK(st.mode));
    assert_ok(ubj_path_lookup(fs, "/a/rel/", UBJ_PATH_NOFOLLOW, &st));
    assert_int_equal(st.ino, b);
    assert_ok(ubj_path_lookup(fs, "/abs/tof", 0, &st));
    assert_int_equal(st.ino, f);
    /* trailing '/' requires a directory */
    assert_rc(ubj_path_lookup(fs, "/a/b/f/", 0, &st), -ENOTDIR);
    assert_rc(ubj_path_lookup(fs, "/a/b/tof/", 0, &st), -ENOTDIR);
    assert_rc(ubj_path_lookup(fs, "/a/slashfile", 0, &st), -ENOTDIR);
    assert_ok(ubj_path_lookup(fs, "/a/b/", 0, &st));
    assert_int_equal(st.ino, b);
    /* non-directories in the middle */
    assert_rc(ubj_path_lookup(fs, "/a/b/f/x", 0, &st), -ENOTDIR);
    assert_rc(ubj_path_lookup(fs, "/a/b/tof/x", 0, &st), -ENOTDIR);
    /* missing */
    assert_rc(ubj_path_lookup(fs, "/a/zz", 0, &st), -ENOENT);
    assert_rc(ubj_path_lookup(fs, "/a/zz/f", 0, &st), -ENOENT);
    assert_rc(ubj_path_lookup(fs, "/a/dangling", 0, &st), -ENOENT);
    assert_ok(ubj_path_lookup(fs, "/a/dangling", UBJ_PATH_NOFOLLOW, &st));
    /* loops */
    assert_rc(ubj_path_lookup(fs, "/a/l1", 0, &st), -ELOOP);
    assert_rc(ubj_path_lookup(fs, "/a/self", 0, &st), -ELOOP);
    assert_rc(ubj_path_lookup(fs, "/a/self/x", UBJ_PATH_NOFOLLOW, &st), -ELOOP);
    assert_ok(ubj_path_lookup(fs, "/a/l1", UBJ_PATH_NOFOLLOW, &st));
    assert_true(S_ISLNK(st.mode));
    /* bad paths */
    assert_rc(ubj_path_lookup(fs, "a/b", 0, &st), -EINVAL);
    assert_rc(ubj_path_lookup(fs, "", 0, &st), -ENOENT);
    assert_rc(ubj_path_lookup(fs, NULL, 0, &st), -EINVAL);
    assert_rc(ubj_path_lookup(fs, "/a", 0x10, &st), -EINVAL);
    char p[320];
    snprintf(p, sizeof p, "/a/%s", long_name);
    assert_rc(ubj_path_lookup(fs, p, 0, &st), -ENAMETOOLONG);
    char *huge = malloc(5000);
    assert_non_null(huge);
    for (int i = 0; i < 2500; i++)
        memcpy(huge + 2 * i, "/a", 2);
    huge[4999] = '\0';
    huge[4998] = 'a';
    assert_rc(ubj_path_lookup(fs, huge, 0, &st), -ENAMETOOLONG);
    free(huge);

    /* path_parent */
    assert_ok(ubj_path_parent(fs, "/a/b/f", &par, &nm));
    assert_int_equal(par, b);
    assert_string_equal(nm, "f");
    assert_ok(ubj_path_parent(fs, "/a/b/", &par, &nm));
    assert_int_equal(par, a);
    assert_string_equal(nm, "b/");
    assert_ok(ubj_path_parent(fs, "/x", &par, &nm));
    assert_int_equal(par, UBJ_ROOT_INO);
    assert_string_equal(nm, "x");
    assert_ok(ubj_path_parent(fs, "/abs/new", &par, &nm));
    assert_int_equal(par, b);
    assert_ok(ubj_path_parent(fs, "/a/rel", &par, &nm));    /* last not followed */
    assert_int_equal(par, a);
    assert_string_equal(nm, "rel");
    assert_rc(ubj_path_parent(fs, "/", &par, &nm), -EINVAL);
    assert_rc(ubj_path_parent(fs, "///", &par, &nm), -EINVAL);
    assert_rc(ubj_path_parent(fs, "rel/x", &par, &nm), -EINVAL);
    assert_rc(ubj_path_parent(fs, "/zz/x", &par, &nm), -ENOENT);
    assert_rc(ubj_path_parent(fs, "/a/b/f/x", &par, &nm), -ENOTDIR);
    assert_rc(ubj_path_parent(fs, "/a/l1/x", &par, &nm), -ELOOP);
    assert_rc(ubj_path_parent(fs, p, &par, &nm), -ENAMETOOLONG);
}

/* 40 symlinks in a chain resolve; 41 are -ELOOP (Linux MAXSYMLINKS). */
static void test_symlink_chain(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    char path[64], target[64];
    ubj_ino_t f = mk(fs, UBJ_ROOT_INO, "target", S_IFREG);
    /* /c1 -> target, /c2 -> c1, ... /c41 -> c40 */
    for (int i = 1; i <= 41; i++) {
        snprintf(path, sizeof path, "/c%d", i);
        if (i == 1)
            snprintf(target, sizeof target, "target");
        else
            snprintf(target, sizeof target, "c%d", i - 1);
        assert_ok(tpath_symlink(fs, target, path));
    }
    assert_ok(ubj_path_lookup(fs, "/c40", 0, &st));
    assert_int_equal(st.ino, f);
    assert_rc(ubj_path_lookup(fs, "/c41", 0, &st), -ELOOP);
    assert_ok(ubj_path_lookup(fs, "/c41", UBJ_PATH_NOFOLLOW, &st));
    assert_true(S_ISLNK(st.mode));
}

/* ---- persistence and read-only ----------------------------------------------- */

static void test_remount_tree(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat st;
    ubj_ino_t a = mk(t->fs, UBJ_ROOT_INO, "a", S_IFDIR);
    ubj_ino_t b = mk(t->fs, UBJ_ROOT_INO, "b", S_IFDIR);
    ubj_ino_t s = mk(t->fs, a, "s", S_IFDIR);
    char name[32];
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "file%03d", i);
        mk(t->fs, s, name, S_IFREG);
    }
    assert_ok(ubj_rename(t->fs, a, "s", b, "moved", 0));
    ubj_test_remount(t->dev, &t->fs);
    struct ubj_fs *fs = t->fs;
    assert_int_equal(sta(fs, a).nlink, 2);
    assert_int_equal(sta(fs, b).nlink, 3);
    assert_int_equal(parent_of(fs, s), b);
    assert_int_equal(tdir_count(fs, s), 500);
    assert_ok(tpath_stat(fs, "/b/moved/file123", &st));
    for (int i = 0; i < 500; i += 2) {
        snprintf(name, sizeof name, "file%03d", i);
        assert_ok(ubj_unlink(fs, s, name));
    }
    ubj_test_remount(t->dev, &t->fs);
    assert_int_equal(tdir_count(t->fs, s), 250);
    assert_rc(tpath_stat(t->fs, "/b/moved/file122", &st), -ENOENT);
    assert_ok(tpath_stat(t->fs, "/b/moved/file123", &st));
}

static void test_readonly(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat st;
    ubj_ino_t d = mk(t->fs, UBJ_ROOT_INO, "d", S_IFDIR);
    ubj_ino_t f = mk(t->fs, d, "f", S_IFREG);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    assert_ok(ubj_test_mount(t->dev, UBJ_MOUNT_RDONLY, &t->fs));
    struct ubj_fs *fs = t->fs;
    assert_int_equal(look(fs, d, "f"), f);
    assert_rc(ubj_create(fs, d, "g", 0644, NULL, NULL), -EROFS);
    assert_rc(ubj_mkdir(fs, d, "g", 0755, NULL, NULL), -EROFS);
    assert_rc(ubj_unlink(fs, d, "f"), -EROFS);
    assert_rc(ubj_rmdir(fs, UBJ_ROOT_INO, "d"), -EROFS);
    assert_rc(ubj_rename(fs, d, "f", d, "g", 0), -EROFS);
    assert_rc(ubj_link(fs, f, d, "g", NULL), -EROFS);
    assert_rc(ubj_symlink(fs, "x", d, "g", NULL, NULL), -EROFS);
    assert_ok(ubj_path_lookup(fs, "/d/f", 0, &st));
    assert_int_equal(tdir_count(fs, d), 1);
}

int main(void)
{
    memset(long_name, 'n', 256);
    long_name[256] = '\0';
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lookup, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_mknod, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_sgid_inherit, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_mkdir, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_unlink, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_rmdir, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_rename_files, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_rename_dirs, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_link, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_symlink, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_readdir, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_paths, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_symlink_chain, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_remount_tree, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_readonly, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
