/*
 * posix/files.c -- regular files: create/mknod, open/release, pread,
 * pwrite, truncate (through setattr and O_TRUNC), sparse files, EFBIG,
 * ENOSPC, open-but-unlinked files, fsync/sync, persistence over remount.
 * Semantics are Linux's (pwrite(2), truncate(2), unlink(2)); every test
 * ends with a clean ubj_check in the teardown.
 */
#include "testutil.h"

#include <stdint.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* test_create_basic -- a new file's attributes and its lookup. */
static void test_create_basic(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st, lk;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0640, NULL, &st));
    assert_int_equal(st.mode, S_IFREG | 0640);
    assert_int_equal(st.nlink, 1);
    assert_int_equal(st.size, 0);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.uid, 0);
    assert_int_equal(st.gid, 0);
    assert_int_equal(st.blksize, 4096);
    assert_true(st.ino != UBJ_ROOT_INO && st.ino != 0);
    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, "f", &lk));
    assert_int_equal(lk.ino, st.ino);
    assert_int_equal(lk.mode, st.mode);
    assert_int_equal(ts_cmp(&lk.mtime, &st.mtime), 0);
    assert_int_equal(ts_cmp(&st.mtime, &st.ctime), 0);

    struct ubj_cred cr = { 1000, 100 };
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "g", 0600, &cr, &st));
    assert_int_equal(st.uid, 1000);
    assert_int_equal(st.gid, 100);
    /* NULL *st is allowed */
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "h", 0600, NULL, NULL));
    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, "h", &st));
    assert_int_equal(st.mode, S_IFREG | 0600);
}

/* test_create_exists -- EEXIST for every type already named. */
static void test_create_exists(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_create(fs, "/f", 0644, NULL));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_symlink(fs, "nowhere", "/s"));
    const char *names[] = { "f", "d", "s" };
    for (int i = 0; i < 3; i++) {
        assert_rc(ubj_create(fs, UBJ_ROOT_INO, names[i], 0644, NULL, NULL), -EEXIST);
        assert_rc(ubj_mknod(fs, UBJ_ROOT_INO, names[i], S_IFIFO | 0644, 0, NULL, NULL),
                  -EEXIST);
        assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, names[i], 0755, NULL, NULL), -EEXIST);
        assert_rc(ubj_symlink(fs, "x", UBJ_ROOT_INO, names[i], NULL, NULL), -EEXIST);
    }
    /* "." and ".." exist in every directory (Linux: mkdir(".") = EEXIST) */
    assert_rc(ubj_create(fs, UBJ_ROOT_INO, ".", 0644, NULL, NULL), -EEXIST);
    assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, "..", 0755, NULL, NULL), -EEXIST);
    /* the dangling symlink is not followed by create (O_EXCL semantics) */
    assert_rc(tpath_ino(fs, "/nowhere"), 0);
    assert_rc(tdir_count(fs, UBJ_ROOT_INO), 3);
}

/* test_mknod_types -- every node type, rdev, bad types. */
static void test_mknod_types(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct { const char *n; uint32_t m; uint64_t rdev; } t[] = {
        { "fifo", S_IFIFO | 0600, 0 }, { "chr", S_IFCHR | 0600, 0x0103 },
        { "blk", S_IFBLK | 0660, 0x0801 }, { "sock", S_IFSOCK | 0755, 0 },
        { "reg0", 0644, 0 }, { "reg", S_IFREG | 0644, 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct ubj_stat st, lk;
        assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, t[i].n, t[i].m, t[i].rdev, NULL, &st));
        uint32_t want = (t[i].m & S_IFMT) ? t[i].m : (S_IFREG | t[i].m);
        assert_int_equal(st.mode, want);
        assert_int_equal(st.nlink, 1);
        assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, t[i].n, &lk));
        assert_int_equal(lk.mode, want);
        if (S_ISCHR(want) || S_ISBLK(want))
            assert_int_equal(lk.rdev, t[i].rdev);
    }
    /* Linux may_mknod: S_IFDIR is EPERM, every other bad type EINVAL */
    assert_rc(ubj_mknod(fs, UBJ_ROOT_INO, "dir", S_IFDIR | 0755, 0, NULL, NULL), -EPERM);
    assert_rc(ubj_mknod(fs, UBJ_ROOT_INO, "lnk", S_IFLNK | 0777, 0, NULL, NULL), -EINVAL);
    assert_rc(ubj_mknod(fs, UBJ_ROOT_INO, "bad", 0030000 | 0644, 0, NULL, NULL), -EINVAL);
    assert_rc(tpath_ino(fs, "/dir"), 0);
    assert_rc(tpath_ino(fs, "/lnk"), 0);
    /* reading a fifo through the file API is not a regular file */
    struct ubj_stat st;
    char c;
    assert_ok(ubj_lookup(fs, UBJ_ROOT_INO, "fifo", &st));
    assert_rc(ubj_pread(fs, st.ino, &c, 1, 0), -EINVAL);
    assert_rc(ubj_pwrite(fs, st.ino, &c, 1, 0), -EINVAL);
}

/* test_setgid_inherit -- a parent with S_ISGID gives its gid (and, to a
 * subdirectory, the S_ISGID bit: Linux's inode_init_owner). */
static void test_setgid_inherit(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat d, st;
    struct ubj_cred cr = { 10, 20 };
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "g", 02775, &cr, &d));
    struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = 02775 };
    assert_ok(ubj_setattr(fs, d.ino, &sa, &d));
    assert_int_equal(d.mode, S_IFDIR | 02775);
    struct ubj_cred other = { 30, 40 };
    assert_ok(ubj_create(fs, d.ino, "f", 0644, &other, &st));
    assert_int_equal(st.uid, 30);
    assert_int_equal(st.gid, 20);
    assert_ok(ubj_mkdir(fs, d.ino, "sub", 0755, &other, &st));
    assert_int_equal(st.gid, 20);
    assert_true(st.mode & S_ISGID);
    assert_ok(ubj_symlink(fs, "t", d.ino, "l", &other, &st));
    assert_int_equal(st.gid, 20);
    /* without S_ISGID the creator's gid is used */
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "plain", 0644, &other, &st));
    assert_int_equal(st.gid, 40);
}

/* test_rw_basic -- write, read back, partial reads at EOF, size. */
static void test_rw_basic(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    char buf[64], out[64];
    memcpy(buf, "hello, world", 12);
    assert_rc(ubj_pwrite(fs, st.ino, buf, 12, 0), 12);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, 12);
    memset(out, 'x', sizeof out);
    assert_rc(ubj_pread(fs, st.ino, out, sizeof out, 0), 12);
    assert_memory_equal(out, "hello, world", 12);
    assert_int_equal(out[12], 'x');     /* nothing written past the count */
    assert_rc(ubj_pread(fs, st.ino, out, 5, 7), 5);
    assert_memory_equal(out, "world", 5);
    assert_rc(ubj_pread(fs, st.ino, out, 10, 10), 2);
    assert_rc(ubj_pread(fs, st.ino, out, 10, 12), 0);
    assert_rc(ubj_pread(fs, st.ino, out, 10, 1 << 20), 0);
    assert_rc(ubj_pread(fs, st.ino, out, 0, 0), 0);
    /* overwrite in the middle keeps the size */
    assert_rc(ubj_pwrite(fs, st.ino, "W", 1, 7), 1);
    assert_rc(ubj_pread(fs, st.ino, out, 12, 0), 12);
    assert_memory_equal(out, "hello, World", 12);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, 12);
    /* zero-length write changes nothing */
    assert_rc(ubj_pwrite(fs, st.ino, buf, 0, 100), 0);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, 12);
    /* negative offsets */
    assert_rc(ubj_pread(fs, st.ino, out, 1, -1), -EINVAL);
    assert_rc(ubj_pwrite(fs, st.ino, out, 1, -1), -EINVAL);
    /* offsets and sizes near the type limits: no overflow, no overrun
     * (the buffer is 64 bytes; the file has 12) */
    assert_rc(ubj_pread(fs, st.ino, out, 10, INT64_MAX - 5), 0);
    assert_rc(ubj_pread(fs, st.ino, out, 10, INT64_MAX), 0);
    assert_rc(ubj_pread(fs, st.ino, out, SIZE_MAX / 2, 0), 12);
    assert_rc(ubj_pread(fs, st.ino, out, SIZE_MAX, 4), 8);
    assert_rc(ubj_pwrite(fs, st.ino, out, 10, INT64_MAX - 5), -EFBIG);
    assert_rc(ubj_pwrite(fs, st.ino, out, 10, INT64_MIN), -EINVAL);
}

/* test_rw_large -- multi-block unaligned writes and reads, remount. */
static void test_rw_large(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat st;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "big", 0644, NULL, &st));
    size_t len = 3 * 1024 * 1024 + 123;
    uint8_t *buf = malloc(len), *out = malloc(len);
    assert_non_null(buf);
    assert_non_null(out);
    tpattern_fill(buf, len, 7, 0);
    /* write in odd-sized pieces */
    size_t off = 0, step = 1;
    while (off < len) {
        size_t n = step < len - off ? step : len - off;
        assert_rc(ubj_pwrite(t->fs, st.ino, buf + off, n, (off_t)off), (long long)n);
        off += n;
        step = step * 3 + 17;
        if (step > 300000)
            step = 4095;
    }
    assert_rc(ubj_pread(t->fs, st.ino, out, len, 0), (long long)len);
    assert_int_equal(tpattern_check(out, len, 7, 0), len);
    assert_ok(ubj_getattr(t->fs, st.ino, &st));
    assert_int_equal(st.size, len);
    assert_true(st.blocks >= (len + 4095) / 4096 * 8);
    ubj_test_remount(t->dev, &t->fs);
    memset(out, 0, len);
    assert_rc(ubj_pread(t->fs, st.ino, out, len, 0), (long long)len);
    assert_int_equal(tpattern_check(out, len, 7, 0), len);
    /* unaligned read across block boundaries */
    assert_rc(ubj_pread(t->fs, st.ino, out, 10000, 4090), 10000);
    assert_int_equal(tpattern_check(out, 10000, 7, 4090), 10000);
    free(buf);
    free(out);
}

/* test_holes -- writes past EOF leave holes that read as zeros. */
static void test_holes(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "h", 0644, NULL, &st));
    uint64_t free0 = t_free_blocks(fs);
    assert_rc(ubj_pwrite(fs, st.ino, "A", 1, 100), 1);
    assert_rc(ubj_pwrite(fs, st.ino, "B", 1, 10 * 4096 + 5), 1);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, 10 * 4096 + 6);
    assert_true(st.blocks <= 4 * 8);           /* two data blocks, no fill */
    assert_true(free0 - t_free_blocks(fs) <= 4);
    uint8_t out[11 * 4096];
    memset(out, 0xee, sizeof out);
    assert_rc(ubj_pread(fs, st.ino, out, sizeof out, 0), 10 * 4096 + 6);
    assert_int_equal(tzero_check(out, 100), 100);
    assert_int_equal(out[100], 'A');
    assert_int_equal(tzero_check(out + 101, 10 * 4096 + 5 - 101), 10 * 4096 + 5 - 101);
    assert_int_equal(out[10 * 4096 + 5], 'B');
}

/* test_sparse_1tib -- one byte at 1 TiB - 1 on a 16 MiB image. */
static void test_sparse_1tib(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat st;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "sparse", 0644, NULL, &st));
    uint64_t free0 = t_free_blocks(t->fs);
    const off_t tib = (off_t)1 << 40;
    assert_rc(ubj_pwrite(t->fs, st.ino, "Z", 1, tib - 1), 1);
    assert_ok(ubj_getattr(t->fs, st.ino, &st));
    assert_int_equal(st.size, (uint64_t)tib);
    assert_true(st.blocks <= 8 * 8);
    assert_true(free0 - t_free_blocks(t->fs) <= 8);
    char c = 0;
    uint8_t z[4096];
    assert_rc(ubj_pread(t->fs, st.ino, &c, 1, tib - 1), 1);
    assert_int_equal(c, 'Z');
    assert_rc(ubj_pread(t->fs, st.ino, z, sizeof z, tib - 4096), 4096);
    assert_int_equal(tzero_check(z, 4095), 4095);
    assert_int_equal(z[4095], 'Z');
    assert_rc(ubj_pread(t->fs, st.ino, z, sizeof z, tib / 2), 4096);
    assert_int_equal(tzero_check(z, 4096), 4096);
    /* a second byte in the middle, then remount */
    assert_rc(ubj_pwrite(t->fs, st.ino, "M", 1, tib / 2), 1);
    ubj_test_remount(t->dev, &t->fs);
    assert_rc(ubj_pread(t->fs, st.ino, &c, 1, tib / 2), 1);
    assert_int_equal(c, 'M');
    assert_rc(ubj_pread(t->fs, st.ino, &c, 1, tib - 1), 1);
    assert_int_equal(c, 'Z');
    /* truncating it frees everything */
    assert_ok(tpath_truncate(t->fs, "/sparse", 0));
    assert_int_equal(t_free_blocks(t->fs), free0);
}

/* test_max_size -- EFBIG past UBJ_MAX_FILE_SIZE; the last byte works. */
static void test_max_size(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    const off_t max = (off_t)UBJ_MAX_FILE_SIZE;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "m", 0644, NULL, &st));
    /* a write that crosses the limit: Linux (generic_write_check_limits)
     * writes what fits and returns the short count; -EFBIG is also what
     * the header's wording allows.  Either way, nothing lands past it. */
    struct ubj_stat x;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "cross", 0644, NULL, &x));
    ssize_t n = ubj_pwrite(fs, x.ino, "ab", 2, max - 1);
    assert_true(n == 1 || n == -EFBIG);
    assert_ok(ubj_getattr(fs, x.ino, &x));
    assert_int_equal(x.size, n == 1 ? UBJ_MAX_FILE_SIZE : 0);
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "cross"));
    assert_rc(ubj_pwrite(fs, st.ino, "a", 1, max), -EFBIG);
    assert_rc(ubj_pwrite(fs, st.ino, "a", 1, max + 4096), -EFBIG);
    assert_rc(ubj_pwrite(fs, st.ino, "a", 1, INT64_MAX), -EFBIG);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, 0);
    assert_rc(ubj_pwrite(fs, st.ino, "a", 1, max - 1), 1);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, UBJ_MAX_FILE_SIZE);
    char c = 0;
    assert_rc(ubj_pread(fs, st.ino, &c, 1, max - 1), 1);
    assert_int_equal(c, 'a');
    assert_rc(ubj_pread(fs, st.ino, &c, 1, max), 0);
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = UBJ_MAX_FILE_SIZE + 1 };
    assert_rc(ubj_setattr(fs, st.ino, &sa, NULL), -EFBIG);
    sa.size = UBJ_MAX_FILE_SIZE;
    assert_ok(ubj_setattr(fs, st.ino, &sa, NULL));
    sa.size = 0;
    assert_ok(ubj_setattr(fs, st.ino, &sa, &st));
    assert_int_equal(st.size, 0);
    assert_int_equal(st.blocks, 0);
}

/* test_truncate -- shrink and grow zero-fill, including inside a block. */
static void test_truncate(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_fs *fs = t->fs;
    struct ubj_stat st;
    uint8_t buf[5 * 4096], out[5 * 4096];
    tpattern_fill(buf, sizeof buf, 3, 0);
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "t", 0644, NULL, &st));
    uint64_t free0 = t_free_blocks(fs);
    assert_rc(ubj_pwrite(fs, st.ino, buf, sizeof buf, 0), sizeof buf);
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = 4096 + 100 };
    assert_ok(ubj_setattr(fs, st.ino, &sa, &st));
    assert_int_equal(st.size, 4096 + 100);
    assert_true(st.blocks <= 2 * 8);
    assert_true(free0 - t_free_blocks(fs) <= 2);
    /* grow again: the tail of the partial block and beyond read as zeros */
    sa.size = sizeof buf;
    assert_ok(ubj_setattr(fs, st.ino, &sa, &st));
    assert_int_equal(st.size, sizeof buf);
    assert_rc(ubj_pread(fs, st.ino, out, sizeof out, 0), sizeof out);
    assert_int_equal(tpattern_check(out, 4196, 3, 0), 4196);
    assert_int_equal(tzero_check(out + 4196, sizeof out - 4196), sizeof out - 4196);
    /* the same after a remount (the zeroing reached the device) */
    ubj_test_remount(t->dev, &t->fs);
    fs = t->fs;
    memset(out, 0xcc, sizeof out);
    assert_rc(ubj_pread(fs, st.ino, out, sizeof out, 0), sizeof out);
    assert_int_equal(tpattern_check(out, 4196, 3, 0), 4196);
    assert_int_equal(tzero_check(out + 4196, sizeof out - 4196), sizeof out - 4196);
    /* shrink to an unaligned size, then extend by writing past EOF */
    assert_rc(ubj_pwrite(fs, st.ino, buf, sizeof buf, 0), sizeof buf);
    sa.size = 10;
    assert_ok(ubj_setattr(fs, st.ino, &sa, NULL));
    assert_rc(ubj_pwrite(fs, st.ino, "x", 1, 3 * 4096), 1);
    assert_rc(ubj_pread(fs, st.ino, out, sizeof out, 0), 3 * 4096 + 1);
    assert_int_equal(tpattern_check(out, 10, 3, 0), 10);
    assert_int_equal(tzero_check(out + 10, 3 * 4096 - 10), 3 * 4096 - 10);
    /* truncate to the same size is allowed; to 0 frees all */
    sa.size = 3 * 4096 + 1;
    assert_ok(ubj_setattr(fs, st.ino, &sa, NULL));
    sa.size = 0;
    assert_ok(ubj_setattr(fs, st.ino, &sa, &st));
    assert_int_equal(st.blocks, 0);
    assert_int_equal(t_free_blocks(fs), free0);
    assert_rc(ubj_pread(fs, st.ino, out, 10, 0), 0);
}

/* test_open_trunc -- O_TRUNC empties a regular file and updates times. */
static void test_open_trunc(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st, st2;
    uint8_t buf[9000];
    tpattern_fill(buf, sizeof buf, 1, 0);
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    uint64_t free0 = t_free_blocks(fs);
    assert_rc(ubj_pwrite(fs, st.ino, buf, sizeof buf, 0), sizeof buf);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    t_sleep_ns(2000000);
    assert_ok(ubj_open(fs, st.ino, O_RDONLY));   /* no truncation */
    assert_ok(ubj_release(fs, st.ino));
    assert_ok(ubj_getattr(fs, st.ino, &st2));
    assert_int_equal(st2.size, sizeof buf);
    assert_ok(ubj_open(fs, st.ino, O_WRONLY | O_TRUNC));
    assert_ok(ubj_getattr(fs, st.ino, &st2));
    assert_int_equal(st2.size, 0);
    assert_int_equal(st2.blocks, 0);
    assert_true(ts_cmp(&st2.mtime, &st.mtime) > 0);
    assert_true(ts_cmp(&st2.ctime, &st.ctime) > 0);
    assert_int_equal(t_free_blocks(fs), free0);
    assert_ok(ubj_release(fs, st.ino));
    /* O_TRUNC on a directory opened read-only is not a truncation */
    assert_ok(ubj_open(fs, UBJ_ROOT_INO, O_RDONLY));
    assert_ok(ubj_release(fs, UBJ_ROOT_INO));
}

/* test_open_release -- references, errors. */
static void test_open_release(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st, d;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, &d));
    assert_rc(ubj_release(fs, st.ino), -EINVAL);      /* none held */
    assert_ok(ubj_open(fs, st.ino, O_RDWR));
    assert_ok(ubj_open(fs, st.ino, O_RDONLY));
    assert_ok(ubj_release(fs, st.ino));
    assert_ok(ubj_release(fs, st.ino));
    assert_rc(ubj_release(fs, st.ino), -EINVAL);
    assert_rc(ubj_open(fs, 999999, O_RDONLY), -ENOENT);
    assert_rc(ubj_open(fs, 0, O_RDONLY), -ENOENT);
    assert_rc(ubj_open(fs, d.ino, O_WRONLY), -EISDIR);
    assert_rc(ubj_open(fs, d.ino, O_RDWR), -EISDIR);
    assert_ok(ubj_open(fs, d.ino, O_RDONLY));
    assert_ok(ubj_release(fs, d.ino));
    /* a free inode number */
    ubj_ino_t ino = st.ino;
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "f"));
    assert_rc(ubj_open(fs, ino, O_RDONLY), -ENOENT);
    assert_rc(ubj_getattr(fs, ino, &st), -ENOENT);
    char c;
    assert_rc(ubj_pread(fs, ino, &c, 1, 0), -ENOENT);
    assert_rc(ubj_pwrite(fs, ino, &c, 1, 0), -ENOENT);
    assert_rc(ubj_fsync(fs, ino, 0), -ENOENT);
}

/* test_rw_dir_errors -- EISDIR on directories. */
static void test_rw_dir_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    char c = 0;
    assert_rc(ubj_pread(fs, UBJ_ROOT_INO, &c, 1, 0), -EISDIR);
    assert_rc(ubj_pwrite(fs, UBJ_ROOT_INO, &c, 1, 0), -EISDIR);
    assert_ok(tpath_symlink(fs, "target", "/l"));
    ubj_ino_t l = tpath_ino(fs, "/l");
    assert_rc(ubj_pread(fs, l, &c, 1, 0), -EINVAL);
    assert_rc(ubj_pwrite(fs, l, &c, 1, 0), -EINVAL);
}

/* test_suid_cleared -- a write clears S_ISUID, and S_ISGID when group
 * executable (Linux file_remove_privs / should_remove_suid). */
static void test_suid_cleared(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "s", 06755, NULL, &st));
    assert_int_equal(st.mode, S_IFREG | 06755);
    assert_rc(ubj_pwrite(fs, st.ino, "x", 1, 0), 1);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.mode, S_IFREG | 0755);
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "g", 02644, NULL, &st));
    assert_rc(ubj_pwrite(fs, st.ino, "x", 1, 0), 1);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.mode, S_IFREG | 02644);      /* not group-exec: kept */
}

/* test_unlinked_open -- data lives until the last release, then blocks
 * and the inode are freed (statfs shows it). */
static void test_unlinked_open(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t bfree0 = t_free_blocks(fs), ffree0 = t_free_inodes(fs);
    struct ubj_stat st;
    size_t len = 100 * 4096;
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    tpattern_fill(buf, len, 11, 0);
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    assert_rc(ubj_pwrite(fs, st.ino, buf, len, 0), (long long)len);
    assert_ok(ubj_open(fs, st.ino, O_RDWR));
    assert_ok(ubj_open(fs, st.ino, O_RDONLY));
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "f"));
    assert_rc(ubj_lookup(fs, UBJ_ROOT_INO, "f", &st), -ENOENT);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.nlink, 0);
    assert_int_equal(st.size, len);
    assert_true(bfree0 - t_free_blocks(fs) >= 100);
    assert_int_equal(ffree0 - t_free_inodes(fs), 1);
    memset(buf, 0, len);
    assert_rc(ubj_pread(fs, st.ino, buf, len, 0), (long long)len);
    assert_int_equal(tpattern_check(buf, len, 11, 0), len);
    /* still writable and linkable-no (nlink 0 -> ENOENT) */
    assert_rc(ubj_pwrite(fs, st.ino, "q", 1, (off_t)len), 1);
    assert_rc(ubj_link(fs, st.ino, UBJ_ROOT_INO, "back", NULL), -ENOENT);
    /* the name can be reused by a new file meanwhile */
    struct ubj_stat st2;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "f", 0644, NULL, &st2));
    assert_true(st2.ino != st.ino);
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "f"));
    assert_ok(ubj_release(fs, st.ino));
    assert_ok(ubj_getattr(fs, st.ino, &st));      /* one reference left */
    assert_ok(ubj_release(fs, st.ino));
    assert_rc(ubj_getattr(fs, st.ino, &st), -ENOENT);
    assert_rc(ubj_release(fs, st.ino), -EINVAL);
    assert_int_equal(t_free_blocks(fs), bfree0);
    assert_int_equal(t_free_inodes(fs), ffree0);
    free(buf);
}

/* test_unlinked_open_unmount -- an orphan still open at unmount is freed
 * by the unmount; the image checks clean and statfs is back. */
static void test_unlinked_open_unmount(void **state)
{
    struct tfs *t = TFS(state);
    uint64_t bfree0 = t_free_blocks(t->fs), ffree0 = t_free_inodes(t->fs);
    uint8_t buf[40960];
    tpattern_fill(buf, sizeof buf, 2, 0);
    struct ubj_stat st;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "o", 0644, NULL, &st));
    assert_rc(ubj_pwrite(t->fs, st.ino, buf, sizeof buf, 0), sizeof buf);
    assert_ok(ubj_open(t->fs, st.ino, O_RDWR));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "o"));
    assert_ok(ubj_unmount(t->fs));
    int lines = -1;
    assert_int_equal(ubj_test_check(t->dev, 0, &lines), UBJ_CHECK_CLEAN);
    assert_int_equal(lines, 0);
    assert_ok(ubj_test_mount(t->dev, 0, &t->fs));
    assert_int_equal(t_free_blocks(t->fs), bfree0);
    assert_int_equal(t_free_inodes(t->fs), ffree0);
    assert_rc(ubj_getattr(t->fs, st.ino, &st), -ENOENT);
}

/* test_unlink_frees -- unlink of a closed file frees blocks at once. */
static void test_unlink_frees(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t bfree0 = t_free_blocks(fs), ffree0 = t_free_inodes(fs);
    uint8_t buf[4096 * 8];
    tpattern_fill(buf, sizeof buf, 5, 0);
    for (int i = 0; i < 20; i++) {
        char p[32];
        snprintf(p, sizeof p, "/f%d", i);
        assert_ok(tpath_put(fs, p, buf, sizeof buf - (size_t)i * 1000));
    }
    assert_true(bfree0 - t_free_blocks(fs) >= 20 * 2);
    assert_int_equal(ffree0 - t_free_inodes(fs), 20);
    for (int i = 0; i < 20; i++) {
        char p[32];
        snprintf(p, sizeof p, "/f%d", i);
        assert_ok(tpath_unlink(fs, p));
    }
    assert_int_equal(t_free_blocks(fs), bfree0);
    assert_int_equal(t_free_inodes(fs), ffree0);
}

/* test_enospc_blocks -- filling the device: a short count or -ENOSPC,
 * never a crash; nothing leaks once the file is removed. */
static void test_enospc_blocks(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t bfree0 = t_free_blocks(fs);
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "fill", 0644, NULL, &st));
    size_t chunk = 256 * 1024;
    uint8_t *buf = malloc(chunk);
    assert_non_null(buf);
    tpattern_fill(buf, chunk, 9, 0);
    off_t off = 0;
    int got_enospc = 0;
    for (int i = 0; i < 1000; i++) {
        ssize_t n = ubj_pwrite(fs, st.ino, buf, chunk, off);
        if (n == -ENOSPC) {
            got_enospc = 1;
            break;
        }
        assert_true(n > 0);
        off += n;
        if ((size_t)n < chunk) {          /* short: the next one is ENOSPC */
            assert_rc(ubj_pwrite(fs, st.ino, buf, chunk, off), -ENOSPC);
            got_enospc = 1;
            break;
        }
    }
    assert_true(got_enospc);
    assert_true((uint64_t)off > (bfree0 - 64) * 4096 / 2);
    assert_true(t_free_blocks(fs) < 8);
    assert_ok(ubj_getattr(fs, st.ino, &st));
    assert_int_equal(st.size, (uint64_t)off);
    /* a file in a full device: creating an empty one may still work
     * (an inode needs no block) but writing to it fails */
    struct ubj_stat e;
    int rc = ubj_create(fs, UBJ_ROOT_INO, "empty", 0644, NULL, &e);
    assert_true(rc == 0 || rc == -ENOSPC);
    if (rc == 0) {
        rc = (int)ubj_pwrite(fs, e.ino, buf, chunk, 0);
        assert_true(rc == -ENOSPC || (rc > 0 && (size_t)rc < chunk));
        assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "empty"));
    }
    /* the data written so far is intact */
    uint8_t *out = malloc(chunk);
    assert_non_null(out);
    assert_rc(ubj_pread(fs, st.ino, out, chunk, 0), (long long)chunk);
    assert_int_equal(tpattern_check(out, chunk, 9, 0), chunk);
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "fill"));
    assert_int_equal(t_free_blocks(fs), bfree0);
    free(buf);
    free(out);
}

/* test_enospc_inodes -- creating past the inode count gives -ENOSPC. */
static void test_enospc_inodes(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_ok(ubj_bdev_ram_create(1024, &dev));
    struct ubj_format_opts fo = { .inodes = 64, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    assert_true(sf.files >= 64);
    uint64_t ffree0 = sf.ffree;
    int made = 0, rc = 0;
    for (int i = 0; i < 100000; i++) {
        char n[32];
        snprintf(n, sizeof n, "f%d", i);
        rc = i % 2 ? ubj_create(fs, UBJ_ROOT_INO, n, 0644, NULL, NULL)
                   : ubj_mknod(fs, UBJ_ROOT_INO, n, S_IFIFO | 0644, 0, NULL, NULL);
        if (rc != 0)
            break;
        made++;
    }
    assert_rc(rc, -ENOSPC);
    assert_int_equal((uint64_t)made, ffree0);
    assert_int_equal(t_free_inodes(fs), 0);
    assert_rc(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, NULL), -ENOSPC);
    assert_rc(ubj_symlink(fs, "x", UBJ_ROOT_INO, "s", NULL, NULL), -ENOSPC);
    struct ubj_stat st;
    assert_rc(ubj_lookup(fs, UBJ_ROOT_INO, "d", &st), -ENOENT);
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "f0"));
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, NULL));
    ubj_test_fs_done(dev, fs);
}

/* test_fsync_sync -- durable calls return 0 and data survives remount. */
static void test_fsync_sync(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat st;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    assert_rc(ubj_pwrite(t->fs, st.ino, "data", 4, 0), 4);
    assert_ok(ubj_fsync(t->fs, st.ino, 0));
    assert_rc(ubj_pwrite(t->fs, st.ino, "more", 4, 4), 4);
    assert_ok(ubj_fsync(t->fs, st.ino, 1));
    assert_ok(ubj_fsync(t->fs, UBJ_ROOT_INO, 0));
    assert_ok(ubj_sync(t->fs));
    assert_ok(ubj_sync(t->fs));
    ubj_test_remount(t->dev, &t->fs);
    char out[8];
    assert_rc(ubj_pread(t->fs, st.ino, out, 8, 0), 8);
    assert_memory_equal(out, "datamore", 8);
}

/* test_many_files -- 2000 files with distinct contents survive remount. */
static void test_many_files(void **state)
{
    struct tfs *t = TFS(state);
    uint8_t buf[3000], out[3000];
    for (int i = 0; i < 2000; i++) {
        char p[32];
        snprintf(p, sizeof p, "/file-%04d", i);
        tpattern_fill(buf, (size_t)(i % 3000), (uint64_t)i, 0);
        assert_ok(tpath_put(t->fs, p, buf, (size_t)(i % 3000)));
    }
    ubj_test_remount(t->dev, &t->fs);
    for (int i = 0; i < 2000; i++) {
        char p[32];
        snprintf(p, sizeof p, "/file-%04d", i);
        assert_rc(tpath_read(t->fs, p, out, sizeof out, 0), i % 3000);
        assert_int_equal(tpattern_check(out, (size_t)(i % 3000), (uint64_t)i, 0),
                         (size_t)(i % 3000));
    }
    assert_rc(tdir_count(t->fs, UBJ_ROOT_INO), 2000);
}

/* test_fragmented -- two files written block by block in turn, so each
 * has thousands of one-block extents (an extent tree of several levels
 * of nodes); read, truncate inside the tree, extend, remount, free. */
static void test_fragmented(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new(16384, &dev, &fs);
    uint64_t b0 = t_free_blocks(fs);
    struct ubj_stat a, b;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "a", 0644, NULL, &a));
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, "b", 0644, NULL, &b));
    const int nblk = 3000;
    uint8_t blk[4096];
    for (int i = 0; i < nblk; i++) {
        tpattern_fill(blk, sizeof blk, 1, (uint64_t)i * 4096);
        assert_rc(ubj_pwrite(fs, a.ino, blk, sizeof blk, (off_t)i * 4096), 4096);
        tpattern_fill(blk, sizeof blk, 2, (uint64_t)i * 4096 * 2);
        assert_rc(ubj_pwrite(fs, b.ino, blk, sizeof blk, (off_t)i * 4096 * 2), 4096);
    }
    assert_ok(ubj_getattr(fs, a.ino, &a));
    assert_true(a.blocks > (uint64_t)nblk * 8);      /* data + extent nodes */
    ubj_test_remount(dev, &fs);
    for (int i = 0; i < nblk; i += 7) {
        assert_rc(ubj_pread(fs, a.ino, blk, sizeof blk, (off_t)i * 4096), 4096);
        assert_int_equal(tpattern_check(blk, sizeof blk, 1, (uint64_t)i * 4096), 4096);
        assert_rc(ubj_pread(fs, b.ino, blk, sizeof blk, (off_t)i * 8192), 4096);
        assert_int_equal(tpattern_check(blk, sizeof blk, 2, (uint64_t)i * 8192), 4096);
        assert_rc(ubj_pread(fs, b.ino, blk, sizeof blk, (off_t)i * 8192 + 4096), 4096);
        assert_int_equal(tzero_check(blk, sizeof blk), 4096);
    }
    /* cut both in the middle of the tree, grow again: zeros after the cut */
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = 1234567 };
    assert_ok(ubj_setattr(fs, a.ino, &sa, NULL));
    assert_ok(ubj_setattr(fs, b.ino, &sa, NULL));
    sa.size = (uint64_t)nblk * 4096;
    assert_ok(ubj_setattr(fs, a.ino, &sa, NULL));
    static uint8_t big[3000 * 4096];
    assert_rc(ubj_pread(fs, a.ino, big, sizeof big, 0), sizeof big);
    assert_int_equal(tpattern_check(big, 1234567, 1, 0), 1234567);
    assert_int_equal(tzero_check(big + 1234567, sizeof big - 1234567),
                     sizeof big - 1234567);
    /* rewrite a range in the middle of the fragmented region of b */
    tpattern_fill(big, 100000, 3, 500000);
    assert_rc(ubj_pwrite(fs, b.ino, big, 100000, 500000), 100000);
    ubj_test_remount(dev, &fs);
    assert_rc(ubj_pread(fs, b.ino, big, 100000, 500000), 100000);
    assert_int_equal(tpattern_check(big, 100000, 3, 500000), 100000);
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "a"));
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "b"));
    assert_int_equal(t_free_blocks(fs), b0);
    ubj_test_fs_done(dev, fs);
}

/* test_orphan_after_crash -- an open, unlinked file when the "power
 * fails" (the device is copied after ubj_sync, without an unmount): the
 * next mount frees it, and the image checks clean afterwards. */
static void test_orphan_after_crash(void **state)
{
    struct tfs *t = TFS(state);
    uint64_t b0 = t_free_blocks(t->fs), i0 = t_free_inodes(t->fs);
    uint8_t buf[50000];
    tpattern_fill(buf, sizeof buf, 8, 0);
    struct ubj_stat o, k;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "orphan", 0644, NULL, &o));
    assert_rc(ubj_pwrite(t->fs, o.ino, buf, sizeof buf, 0), sizeof buf);
    assert_ok(ubj_open(t->fs, o.ino, O_RDWR));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "orphan"));
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "kept", 0644, NULL, &k));
    assert_rc(ubj_pwrite(t->fs, k.ino, buf, sizeof buf, 0), sizeof buf);
    assert_ok(ubj_sync(t->fs));
    struct ubj_bdev *copy;
    assert_ok(ubj_bdev_ram_create(TFS_BLOCKS, &copy));
    assert_ok(timg_copy(t->dev, copy));
    /* fsck of the crashed image: orphans are legal (e2fsck clears them) */
    int lines = 0;
    int rc = ubj_test_check(copy, 0, &lines);
    assert_true(rc == UBJ_CHECK_CLEAN || rc == UBJ_CHECK_UNCORRECTED);
    struct ubj_fs *fs2;
    assert_ok(ubj_test_mount(copy, 0, &fs2));
    struct ubj_stat st;
    assert_rc(ubj_getattr(fs2, o.ino, &st), -ENOENT);
    assert_int_equal(t_free_inodes(fs2), i0 - 1);
    assert_true(b0 - t_free_blocks(fs2) <= 13 + 1);
    uint8_t out[50000];
    assert_rc(tpath_read(fs2, "/kept", out, sizeof out, 0), sizeof out);
    assert_memory_equal(out, buf, sizeof out);
    ubj_test_fs_done(copy, fs2);
    assert_ok(ubj_release(t->fs, o.ino));
}

/* fill_device -- write a file until the device is full. */
static void fill_device(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    assert_ok(tpath_create(fs, path, 0644, &st));
    static uint8_t chunk[1 << 18];
    off_t off = 0;
    for (;;) {
        ssize_t n = ubj_pwrite(fs, st.ino, chunk, sizeof chunk, off);
        if (n == -ENOSPC)
            break;
        assert_true(n > 0);
        off += n;
    }
    for (;;) {                  /* and the last odd blocks */
        ssize_t n = ubj_pwrite(fs, st.ino, chunk, 4096, off);
        if (n == -ENOSPC)
            break;
        assert_true(n > 0);
        off += n;
    }
    assert_int_equal(t_free_blocks(fs), 0);
}

/* test_enospc_no_leak -- on a full device every call that needs a block
 * fails with -ENOSPC and leaves nothing behind: no inode, no name. */
static void test_enospc_no_leak(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    /* a directory whose leaf is almost full, a fragmented file */
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    char p[300];
    for (int i = 0; i < 60; i++) {
        snprintf(p, sizeof p, "/d/%s-%d", "name-of-some-length-to-fill-the-leaf", i);
        assert_ok(tpath_create(fs, p, 0644, NULL));
    }
    fill_device(fs, "/fill");
    uint64_t i0 = t_free_inodes(fs);
    assert_rc(tpath_mkdir(fs, "/newdir", 0755, NULL), -ENOSPC);
    char longt[1000];
    memset(longt, 't', 999);
    longt[999] = '\0';
    assert_rc(tpath_symlink(fs, longt, "/longlink"), -ENOSPC);
    struct ubj_stat st;
    assert_ok(tpath_stat(fs, "/fill", &st));
    assert_rc(ubj_pwrite(fs, st.ino, "x", 1, (off_t)st.size + 100 * 4096), -ENOSPC);
    assert_ok(tpath_stat(fs, "/fill", &st));
    /* names into a full directory leaf: some may fit, then ENOSPC */
    int made = 0, rc = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(p, sizeof p, "/d/%s-%d", "another-name-of-some-length-to-split", i);
        rc = tpath_create(fs, p, 0644, NULL);
        if (rc != 0)
            break;
        made++;
    }
    assert_rc(rc, -ENOSPC);
    assert_int_equal(t_free_inodes(fs), i0 - (uint64_t)made);
    assert_int_equal(tpath_ino(fs, p), 0);
    assert_int_equal(tpath_ino(fs, "/newdir"), 0);
    assert_int_equal(tpath_ino(fs, "/longlink"), 0);
    /* links into the full directory fail the same way (some may fit) */
    int nlinks = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(p, sizeof p, "/d/%s-%d", "yet-another-name-for-a-hard-link-here", i);
        rc = tpath_link(fs, "/fill", p);
        if (rc != 0)
            break;
        nlinks++;
    }
    assert_rc(rc, -ENOSPC);
    assert_int_equal(tpath_ino(fs, p), 0);
    assert_ok(tpath_stat(fs, "/fill", &st));
    assert_int_equal(st.nlink, 1 + nlinks);
    /* free space again: everything works */
    for (int i = 0; i < nlinks; i++) {
        snprintf(p, sizeof p, "/d/%s-%d", "yet-another-name-for-a-hard-link-here", i);
        assert_ok(tpath_unlink(fs, p));
    }
    assert_ok(tpath_unlink(fs, "/fill"));
    assert_ok(tpath_mkdir(fs, "/newdir", 0755, NULL));
    assert_ok(tpath_symlink(fs, longt, "/longlink"));
    assert_ok(tpath_create(fs, p, 0644, NULL));
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_create_basic), T(test_create_exists), T(test_mknod_types),
        T(test_setgid_inherit), T(test_rw_basic), T(test_rw_large),
        T(test_holes), T(test_sparse_1tib), T(test_max_size), T(test_truncate),
        T(test_open_trunc), T(test_open_release), T(test_rw_dir_errors),
        T(test_suid_cleared), T(test_unlinked_open),
        T(test_unlinked_open_unmount), T(test_unlink_frees),
        T(test_enospc_blocks), cmocka_unit_test(test_enospc_inodes),
        T(test_fsync_sync), T(test_many_files),
        cmocka_unit_test(test_fragmented), T(test_orphan_after_crash),
        T(test_enospc_no_leak),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
