/*
 * xattr.c -- extended attributes through the library (src/fs/xattr.c):
 * Linux's semantics and errors for get/set/list/remove, the one-block
 * capacity limit, persistence across remounts, freeing with the inode,
 * block accounting, killing security.capability and the set-id bits on
 * write, truncate and chown, and a randomized run against a model.  Every test ends
 * with an fsck that must be clean (tfs_teardown).
 */
#include "testutil.h"
#include <sys/xattr.h>
#include "fs/format.h"

/* t_file -- create a regular file at path; its inode. */
static ubj_ino_t t_file(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    assert_ok(tpath_create(fs, path, 0644, &st));
    return st.ino;
}

/* test_basic -- set, get (size 0, exact, too small), list, remove. */
static void test_basic(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    char buf[64];
    assert_rc(ubj_getxattr(fs, ino, "user.a", buf, sizeof buf), -ENODATA);
    assert_rc(ubj_listxattr(fs, ino, buf, sizeof buf), 0);
    assert_ok(ubj_setxattr(fs, ino, "user.a", "hello", 5, 0));
    assert_ok(ubj_setxattr(fs, ino, "security.s", "", 0, 0));
    assert_ok(ubj_setxattr(fs, ino, "trusted.t", "xyz", 3, 0));
    assert_rc(ubj_getxattr(fs, ino, "user.a", NULL, 0), 5);
    assert_rc(ubj_getxattr(fs, ino, "user.a", buf, 4), -ERANGE);
    memset(buf, 0, sizeof buf);
    assert_rc(ubj_getxattr(fs, ino, "user.a", buf, sizeof buf), 5);
    assert_memory_equal(buf, "hello", 5);
    assert_rc(ubj_getxattr(fs, ino, "security.s", buf, sizeof buf), 0);
    assert_rc(ubj_getxattr(fs, ino, "user.ab", buf, sizeof buf), -ENODATA);
    assert_rc(ubj_getxattr(fs, ino, "user.", buf, sizeof buf), -EINVAL);
    /* list: sorted by namespace (user, trusted, security), NUL-separated */
    static const char want[] = "user.a\0trusted.t\0security.s";
    assert_rc(ubj_listxattr(fs, ino, NULL, 0), sizeof want);
    assert_rc(ubj_listxattr(fs, ino, buf, sizeof want - 1), -ERANGE);
    assert_rc(ubj_listxattr(fs, ino, buf, sizeof buf), sizeof want);
    assert_memory_equal(buf, want, sizeof want);
    /* replace with a longer value, then remove */
    assert_ok(ubj_setxattr(fs, ino, "user.a", "hello, world", 12, 0));
    assert_rc(ubj_getxattr(fs, ino, "user.a", buf, sizeof buf), 12);
    assert_memory_equal(buf, "hello, world", 12);
    assert_ok(ubj_removexattr(fs, ino, "user.a"));
    assert_rc(ubj_removexattr(fs, ino, "user.a"), -ENODATA);
    assert_rc(ubj_getxattr(fs, ino, "user.a", buf, sizeof buf), -ENODATA);
    assert_rc(ubj_getxattr(fs, ino, "trusted.t", buf, sizeof buf), 3);
}

/* test_flags -- XATTR_CREATE / XATTR_REPLACE and bad flags. */
static void test_flags(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    char buf[8];
    assert_int_equal(UBJ_XATTR_CREATE, XATTR_CREATE);
    assert_int_equal(UBJ_XATTR_REPLACE, XATTR_REPLACE);
    assert_rc(ubj_setxattr(fs, ino, "user.x", "1", 1, UBJ_XATTR_REPLACE), -ENODATA);
    assert_ok(ubj_setxattr(fs, ino, "user.x", "1", 1, UBJ_XATTR_CREATE));
    assert_rc(ubj_setxattr(fs, ino, "user.x", "2", 1, UBJ_XATTR_CREATE), -EEXIST);
    assert_ok(ubj_setxattr(fs, ino, "user.x", "3", 1, UBJ_XATTR_REPLACE));
    assert_rc(ubj_setxattr(fs, ino, "user.x", "4", 1, 0x4), -EINVAL);
    assert_rc(ubj_getxattr(fs, ino, "user.x", buf, sizeof buf), 1);
    assert_int_equal(buf[0], '3');
}

/* test_names -- namespaces and name lengths. */
static void test_names(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    char name[300];
    assert_rc(ubj_setxattr(fs, ino, "", "v", 1, 0), -ERANGE);
    assert_rc(ubj_setxattr(fs, ino, "user.", "v", 1, 0), -EINVAL);
    assert_rc(ubj_setxattr(fs, ino, "system.posix_acl_access", "v", 1, 0), -EOPNOTSUPP);
    assert_rc(ubj_setxattr(fs, ino, "foo.bar", "v", 1, 0), -EOPNOTSUPP);
    assert_rc(ubj_setxattr(fs, ino, "user", "v", 1, 0), -EOPNOTSUPP);
    assert_rc(ubj_getxattr(fs, ino, "system.posix_acl_access", NULL, 0), -EOPNOTSUPP);
    assert_rc(ubj_removexattr(fs, ino, "os2.x"), -EOPNOTSUPP);
    memcpy(name, "user.", 5);
    memset(name + 5, 'n', 250);          /* 255 bytes in all: the longest */
    name[255] = '\0';
    assert_ok(ubj_setxattr(fs, ino, name, "v", 1, 0));
    assert_rc(ubj_getxattr(fs, ino, name, NULL, 0), 1);
    name[255] = 'n';
    name[256] = '\0';
    assert_rc(ubj_setxattr(fs, ino, name, "v", 1, 0), -ERANGE);
    assert_rc(ubj_getxattr(fs, ino, name, NULL, 0), -ERANGE);
    assert_rc(ubj_getxattr(fs, 999999, "user.a", NULL, 0), -ENOENT);
    assert_rc(ubj_setxattr(fs, 999999, "user.a", "v", 1, 0), -ENOENT);
}

/* test_types -- user.* only on files and directories; others elsewhere. */
static void test_types(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(tpath_symlink(fs, "target", "/l"));
    ubj_ino_t l = tpath_ino(fs, "/l");
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0644, 0, NULL, &st));
    assert_rc(ubj_setxattr(fs, l, "user.a", "v", 1, 0), -EPERM);
    assert_rc(ubj_setxattr(fs, st.ino, "user.a", "v", 1, 0), -EPERM);
    assert_rc(ubj_getxattr(fs, l, "user.a", NULL, 0), -ENODATA);
    assert_ok(ubj_setxattr(fs, l, "security.selinux", "ctx", 3, 0));
    assert_rc(ubj_getxattr(fs, l, "security.selinux", NULL, 0), 3);
    assert_ok(tpath_mkdir(fs, "/d", 0755, &st));
    assert_ok(ubj_setxattr(fs, st.ino, "user.dir", "yes", 3, 0));
    assert_rc(ubj_getxattr(fs, st.ino, "user.dir", NULL, 0), 3);
}

/* test_capacity -- one block: the exact limit, -ENOSPC, -E2BIG; a refused
 * change leaves the set as it was. */
static void test_capacity(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    static char big[UBJ_XATTR_SIZE_MAX + 1];
    static char back[UBJ_XATTR_SIZE_MAX];
    memset(big, 'v', sizeof big);
    assert_rc(ubj_setxattr(fs, ino, "user.a", big, UBJ_XATTR_SIZE_MAX + 1, 0), -E2BIG);
    assert_rc(ubj_setxattr(fs, ino, "user.a", big, UBJ_XATTR_VALUE_MAX + 1, 0), -ENOSPC);
    assert_ok(ubj_setxattr(fs, ino, "user.a", big, UBJ_XATTR_VALUE_MAX, 0));
    assert_rc(ubj_getxattr(fs, ino, "user.a", back, sizeof back), UBJ_XATTR_VALUE_MAX);
    assert_memory_equal(back, big, UBJ_XATTR_VALUE_MAX);
    assert_rc(ubj_setxattr(fs, ino, "user.b", "", 0, 0), -ENOSPC);
    assert_ok(ubj_setxattr(fs, ino, "user.a", big, 1000, 0));
    /* fill with 100-byte values until the block is full */
    int n = 0;
    char name[32];
    for (;; n++) {
        snprintf(name, sizeof name, "user.k%03d", n);
        int rc = ubj_setxattr(fs, ino, name, big, 100, 0);
        if (rc == -ENOSPC)
            break;
        assert_ok(rc);
    }
    /* each record: 4 + 4 ("k000") + 100 = 108 bytes; 1008 for user.a */
    assert_int_equal(n, (UBJ_XATTR_SPACE - 1008) / 108);
    assert_rc(ubj_getxattr(fs, ino, name, NULL, 0), -ENODATA);
    snprintf(name, sizeof name, "user.k%03d", n - 1);
    assert_rc(ubj_getxattr(fs, ino, name, back, sizeof back), 100);
    /* growing one value past the limit fails and keeps the old value */
    assert_rc(ubj_setxattr(fs, ino, "user.a", big, 2000, 0), -ENOSPC);
    assert_rc(ubj_getxattr(fs, ino, "user.a", NULL, 0), 1000);
}

/* test_persist -- values survive a remount; the block counts in blocks. */
static void test_persist(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "/f");
    struct ubj_stat st;
    char buf[256];
    uint64_t free0 = t_free_blocks(t->fs);
    assert_ok(ubj_setxattr(t->fs, ino, "user.one", "1", 1, 0));
    assert_ok(ubj_setxattr(t->fs, ino, "user.two", "22", 2, 0));
    assert_int_equal(t_free_blocks(t->fs), free0 - 1);
    assert_ok(ubj_getattr(t->fs, ino, &st));
    assert_int_equal(st.blocks, UBJ_BS / 512);
    ubj_test_remount(t->dev, &t->fs);
    assert_rc(ubj_getxattr(t->fs, ino, "user.two", buf, sizeof buf), 2);
    assert_memory_equal(buf, "22", 2);
    assert_rc(ubj_listxattr(t->fs, ino, buf, sizeof buf), 18);
    assert_memory_equal(buf, "user.one\0user.two", 18);
    assert_ok(ubj_removexattr(t->fs, ino, "user.one"));
    assert_ok(ubj_removexattr(t->fs, ino, "user.two"));
    assert_int_equal(t_free_blocks(t->fs), free0);
    assert_ok(ubj_getattr(t->fs, ino, &st));
    assert_int_equal(st.blocks, 0);
    assert_rc(ubj_listxattr(t->fs, ino, NULL, 0), 0);
}

/* test_free_with_inode -- unlink (also of an open file) frees the block. */
static void test_free_with_inode(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t a = t_file(fs, "/a");
    ubj_ino_t b = t_file(fs, "/b");
    assert_ok(ubj_setxattr(fs, a, "user.x", "1", 1, 0));
    assert_ok(ubj_setxattr(fs, b, "trusted.y", "2", 1, 0));
    assert_ok(ubj_open(fs, b, O_RDONLY));
    assert_ok(tpath_unlink(fs, "/a"));
    assert_ok(tpath_unlink(fs, "/b"));
    assert_rc(ubj_getxattr(fs, b, "trusted.y", NULL, 0), 1);   /* still open */
    assert_int_equal(t_free_blocks(fs), free0 - 1);
    assert_ok(ubj_release(fs, b));
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_ctime_rofs -- set and remove change ctime; a read-only mount
 * refuses changes but reads. */
static void test_ctime_rofs(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "/f");
    struct ubj_stat a, b;
    struct ubj_setattr sa = { .valid = UBJ_SET_CTIME, .ctime = { 1, 0 } };
    assert_ok(ubj_setattr(t->fs, ino, &sa, &a));
    assert_ok(ubj_setxattr(t->fs, ino, "user.x", "1", 1, 0));
    assert_ok(ubj_getattr(t->fs, ino, &b));
    assert_true(ts_cmp(&b.ctime, &a.ctime) > 0);
    assert_ok(ubj_unmount(t->fs));
    assert_ok(ubj_test_mount(t->dev, UBJ_MOUNT_RDONLY, &t->fs));
    assert_rc(ubj_setxattr(t->fs, ino, "user.y", "1", 1, 0), -EROFS);
    assert_rc(ubj_removexattr(t->fs, ino, "user.x"), -EROFS);
    assert_rc(ubj_getxattr(t->fs, ino, "user.x", NULL, 0), 1);
    ubj_test_remount(t->dev, &t->fs);
}

/* The model of test_random: up to 24 names, each absent or a value. */
#define TR_NAMES 24
struct tr_model {
    int len[TR_NAMES];   /* -1: absent */
    uint8_t val[TR_NAMES][600];
};

/* tr_used -- bytes the model's set takes in a block with name i set to
 * a value of len bytes ("attrNNN": 7 bytes of name after "user."). */
static size_t tr_used(const struct tr_model *m, int i, int len)
{
    size_t u = 0;
    for (int k = 0; k < TR_NAMES; k++) {
        int l = k == i ? len : m->len[k];
        if (l >= 0)
            u += (4u + 7u + (size_t)l + 3u) & ~(size_t)3u;
    }
    return u;
}

/* tr_verify -- every model name reads back as modelled. */
static void tr_verify(struct ubj_fs *fs, ubj_ino_t ino, const struct tr_model *m)
{
    uint8_t buf[600];
    char name[32];
    for (int i = 0; i < TR_NAMES; i++) {
        snprintf(name, sizeof name, "user.attr%03d", i);
        ssize_t n = ubj_getxattr(fs, ino, name, buf, sizeof buf);
        if (m->len[i] < 0) {
            assert_rc(n, -ENODATA);
            continue;
        }
        assert_rc(n, m->len[i]);
        assert_memory_equal(buf, m->val[i], (size_t)m->len[i]);
    }
}

/* t_cap_set -- give ino a file capability and the set-id bits */
static void t_cap_set(struct ubj_fs *fs, ubj_ino_t ino)
{
    static const uint8_t cap[20] = { 0x01, 0x00, 0x00, 0x02, 0x00, 0x20 };
    struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = 06755 };
    assert_ok(ubj_setxattr(fs, ino, "security.capability", cap, sizeof cap, 0));
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
}

/* t_cap_gone -- the capability is gone, user.keep and its block stay */
static void t_cap_gone(struct ubj_fs *fs, ubj_ino_t ino, uint32_t mode)
{
    char buf[32];
    struct ubj_stat st;
    assert_rc(ubj_getxattr(fs, ino, "security.capability", buf, sizeof buf), -ENODATA);
    assert_rc(ubj_getxattr(fs, ino, "user.keep", buf, sizeof buf), 1);
    assert_ok(ubj_getattr(fs, ino, &st));
    assert_int_equal(st.mode & 07777, mode);
}

/* test_killpriv -- a write, a truncate and a chown each remove
 * security.capability (Linux's cap_inode_killpriv(); FUSE's
 * HANDLE_KILLPRIV_V2 leaves it to us) and keep the other attributes;
 * UBJ_SET_KILL_SUIDGID clears S_ISUID and group-executable S_ISGID. */
static void test_killpriv(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    assert_ok(ubj_setxattr(fs, ino, "user.keep", "k", 1, 0));
    t_cap_set(fs, ino);
    assert_rc(ubj_pwrite(fs, ino, "data", 4, 0), 4);
    t_cap_gone(fs, ino, 0755);
    t_cap_set(fs, ino);
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = 1 };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    t_cap_gone(fs, ino, 06755);            /* a truncate keeps the bits... */
    t_cap_set(fs, ino);
    sa.valid = UBJ_SET_SIZE | UBJ_SET_KILL_SUIDGID;
    sa.size = 0;
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    t_cap_gone(fs, ino, 0755);             /* ...unless told to kill them */
    t_cap_set(fs, ino);
    sa.valid = UBJ_SET_UID;
    sa.uid = 1000;
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    t_cap_gone(fs, ino, 0755);
    t_cap_set(fs, ino);                    /* fallocate: as a write */
    assert_ok(ubj_fallocate(fs, ino, 0, 0, 8192));
    t_cap_gone(fs, ino, 0755);
    /* S_ISGID without group execute is mandatory locking: kept */
    sa.valid = UBJ_SET_MODE;
    sa.mode = 02644;
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    sa.valid = UBJ_SET_KILL_SUIDGID;
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    t_cap_gone(fs, ino, 02644);
    /* the last attribute removed by a write frees the block */
    ubj_ino_t g = t_file(fs, "/g");
    t_cap_set(fs, g);
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, g, &st));
    uint64_t blocks = st.blocks;
    assert_rc(ubj_pwrite(fs, g, "x", 1, 100000), 1);
    char buf[4];
    assert_rc(ubj_getxattr(fs, g, "security.capability", buf, sizeof buf), -ENODATA);
    assert_rc(ubj_listxattr(fs, g, NULL, 0), 0);
    assert_ok(ubj_getattr(fs, g, &st));
    assert_true(st.blocks == blocks);      /* -1 xattr block, +1 data block */
}

/* test_random -- random set/replace/remove against a model, with the
 * capacity rule modelled exactly, remounting now and then. */
static void test_random(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "/f");
    struct tprng r;
    tprng_seed(&r, tprng_env_seed("UBJ_SEED", 5));
    static struct tr_model m;
    for (int i = 0; i < TR_NAMES; i++)
        m.len[i] = -1;
    char name[32];
    for (int step = 0; step < 3000; step++) {
        int i = (int)tprng_below(&r, TR_NAMES);
        snprintf(name, sizeof name, "user.attr%03d", i);
        if (tprng_below(&r, 3) == 0) {
            int rc = ubj_removexattr(t->fs, ino, name);
            assert_rc(rc, m.len[i] < 0 ? -ENODATA : 0);
            m.len[i] = -1;
        } else {
            int len = (int)tprng_below(&r, 600);
            uint8_t v[600];
            for (int k = 0; k < len; k++)
                v[k] = (uint8_t)tprng_next(&r);
            int rc = ubj_setxattr(t->fs, ino, name, v, (size_t)len, 0);
            if (tr_used(&m, i, len) > UBJ_XATTR_SPACE) {
                assert_rc(rc, -ENOSPC);
            } else {
                assert_ok(rc);
                m.len[i] = len;
                memcpy(m.val[i], v, (size_t)len);
            }
        }
        if (step % 500 == 499)
            ubj_test_remount(t->dev, &t->fs);
        if (step % 100 == 99)
            tr_verify(t->fs, ino, &m);
    }
    tr_verify(t->fs, ino, &m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_basic, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_flags, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_names, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_types, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_capacity, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_persist, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_free_with_inode, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_ctime_rofs, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_killpriv, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_random, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
