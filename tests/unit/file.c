/*
 * unit/file.c -- src/fs/file.c: pread/pwrite round trips at unaligned
 * offsets against a model, holes, a sparse file at 1 TiB, truncate shrink
 * then extend (zeros in the gap), ENOSPC short writes, EFBIG, argument and
 * type errors, O_TRUNC, privilege clearing on write and chown, setattr,
 * relatime, noatime, read-only mounts, remount, the read path's device requests
 * (ubj_config.readahead off-page / off), open-but-unlinked files, fsync.
 * Every test ends with a clean ubj_check (tfs_teardown).
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"

/* t_file -- a new regular file in the root. */
static ubj_ino_t t_file(struct ubj_fs *fs, const char *name, uint32_t mode)
{
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, name, mode, NULL, &st));
    return st.ino;
}

/* t_size -- setattr size. */
static int t_size(struct ubj_fs *fs, ubj_ino_t ino, uint64_t size)
{
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = size };
    return ubj_setattr(fs, ino, &sa, NULL);
}

/* t_stat -- getattr that must succeed. */
static struct ubj_stat t_stat(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, ino, &st));
    return st;
}

/* test_roundtrip -- random unaligned writes and reads across block
 * boundaries match an in-memory model, before and after a remount. */
static void test_roundtrip(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_fs *fs = t->fs;
    struct tprng rng;
    tprng_seed(&rng, tprng_env_seed("UBJ_TEST_SEED", 7));
    ubj_ino_t ino = t_file(fs, "rt", 0644);
    const size_t max = 3u << 20;
    uint8_t *model = calloc(max, 1), *buf = malloc(max), *src = malloc(70000);
    assert_true(model && buf && src);
    uint64_t size = 0;
    for (int it = 0; it < 1500; it++) {
        uint64_t off = tprng_below(&rng, max);
        size_t len = (size_t)tprng_below(&rng, it % 10 == 0 ? 70000 : 9000) + 1;
        if (off + len > max)
            len = (size_t)(max - off);
        if (tprng_below(&rng, 2)) {
            tpattern_fill(src, len, (uint64_t)it, off);
            assert_rc(ubj_pwrite(fs, ino, src, len, (off_t)off), len);
            memcpy(model + off, src, len);
            if (off + len > size)
                size = off + len;
        } else {
            size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
            assert_rc(ubj_pread(fs, ino, buf, len, (off_t)off), want);
            if (memcmp(buf, model + off, want) != 0)
                fail_msg("iteration %d: read %zu at %llu differs", it, len,
                         (unsigned long long)off);
        }
    }
    assert_int_equal(t_stat(fs, ino).size, size);
    ubj_test_remount(t->dev, &t->fs);
    fs = t->fs;
    assert_rc(ubj_pread(fs, ino, buf, max, 0), size);
    assert_int_equal(memcmp(buf, model, size), 0);
    free(model);
    free(buf);
    free(src);
}

/* test_small_edges -- a byte on each side of a block boundary, reads
 * clamped at EOF, zero-length calls. */
static void test_small_edges(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "e", 0644);
    assert_rc(ubj_pwrite(fs, ino, "xy", 2, 4095), 2);
    assert_int_equal(t_stat(fs, ino).size, 4097);
    assert_int_equal(t_stat(fs, ino).blocks, 16);
    char buf[8192];
    memset(buf, 'q', sizeof buf);
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), 4097);
    assert_int_equal(tzero_check(buf, 4095), 4095);
    assert_int_equal(buf[4095], 'x');
    assert_int_equal(buf[4096], 'y');
    assert_int_equal(buf[4097], 'q');                /* nothing past EOF */
    assert_rc(ubj_pread(fs, ino, buf, 10, 4097), 0);
    assert_rc(ubj_pread(fs, ino, buf, 10, 1 << 30), 0);
    assert_rc(ubj_pread(fs, ino, buf, 0, 0), 0);
    assert_rc(ubj_pwrite(fs, ino, buf, 0, 1 << 20), 0);
    assert_int_equal(t_stat(fs, ino).size, 4097);    /* 0 bytes: no extension */
}

/* test_holes -- unwritten ranges read as zeros and take no blocks. */
static void test_holes(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "h", 0644);
    uint8_t blk[UBJ_BS];
    memset(blk, 0xab, sizeof blk);
    assert_rc(ubj_pwrite(fs, ino, blk, 10, 100 * UBJ_BS + 5), 10);
    assert_rc(ubj_pwrite(fs, ino, blk, 10, 3 * UBJ_BS), 10);
    assert_int_equal(t_stat(fs, ino).blocks, 16);
    assert_int_equal(free0 - t_free_blocks(fs), 2);
    uint8_t *buf = malloc(101 * UBJ_BS);
    assert_non_null(buf);
    assert_rc(ubj_pread(fs, ino, buf, 101 * UBJ_BS, 0), 100 * UBJ_BS + 15);
    for (size_t i = 0; i < 100 * UBJ_BS + 15; i++) {
        bool data = (i >= 3 * UBJ_BS && i < 3 * UBJ_BS + 10) || i >= 100 * UBJ_BS + 5;
        if (buf[i] != (data ? 0xab : 0))
            fail_msg("byte %zu is %#x", i, buf[i]);
    }
    free(buf);
}

/* test_sparse_1tib -- one byte at 1 TiB - 1: exact size, one block. */
static void test_sparse_1tib(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_fs *fs = t->fs;
    ubj_ino_t ino = t_file(fs, "big", 0644);
    const off_t tib = (off_t)1 << 40;
    assert_rc(ubj_pwrite(fs, ino, "z", 1, tib - 1), 1);
    struct ubj_stat st = t_stat(fs, ino);
    assert_int_equal(st.size, (uint64_t)tib);
    assert_int_equal(st.blocks, 8);
    char buf[4096];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, tib - 4096), 4096);
    assert_int_equal(tzero_check(buf, 4095), 4095);
    assert_int_equal(buf[4095], 'z');
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, tib / 2), 4096);
    assert_int_equal(tzero_check(buf, 4096), 4096);
    ubj_test_remount(t->dev, &t->fs);
    fs = t->fs;
    assert_rc(ubj_pread(fs, ino, buf, 10, tib - 1), 1);
    assert_int_equal(buf[0], 'z');
    assert_ok(t_size(fs, ino, 0));
    assert_int_equal(t_stat(fs, ino).blocks, 0);
}

/* test_truncate_gap -- shrink into a block, then extend: the cut-off
 * bytes read as zeros (in the partial block and beyond); blocks freed. */
static void test_truncate_gap(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "g", 0644);
    uint8_t data[5 * UBJ_BS];
    tpattern_fill(data, sizeof data, 3, 0);
    assert_rc(ubj_pwrite(fs, ino, data, sizeof data, 0), sizeof data);
    assert_ok(t_size(fs, ino, UBJ_BS + 100));
    struct ubj_stat st = t_stat(fs, ino);
    assert_int_equal(st.size, UBJ_BS + 100);
    assert_int_equal(st.blocks, 16);
    assert_int_equal(free0 - t_free_blocks(fs), 2);
    assert_ok(t_size(fs, ino, sizeof data));
    assert_int_equal(t_stat(fs, ino).blocks, 16);     /* extension is sparse */
    uint8_t buf[5 * UBJ_BS];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), sizeof buf);
    assert_int_equal(tpattern_check(buf, UBJ_BS + 100, 3, 0), UBJ_BS + 100);
    assert_int_equal(tzero_check(buf + UBJ_BS + 100, sizeof buf - UBJ_BS - 100),
                     sizeof buf - UBJ_BS - 100);
    /* extending by a write past EOF inside the same block */
    assert_ok(t_size(fs, ino, 10));
    assert_rc(ubj_pwrite(fs, ino, "w", 1, 3000), 1);
    assert_rc(ubj_pread(fs, ino, buf, UBJ_BS, 0), 3001);
    assert_int_equal(tpattern_check(buf, 10, 3, 0), 10);
    assert_int_equal(tzero_check(buf + 10, 2990), 2990);
    assert_int_equal(buf[3000], 'w');
    assert_ok(t_size(fs, ino, 0));
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_enospc -- a write bigger than the free space: a short count, then
 * -ENOSPC; what was written reads back; freeing restores the count. */
static void test_enospc(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "full", 0644);
    size_t len = (size_t)(free0 + 10) * UBJ_BS;
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    tpattern_fill(buf, len, 11, 0);
    ssize_t n = ubj_pwrite(fs, ino, buf, len, 0);
    assert_true(n > 0 && (size_t)n < len);
    assert_int_equal(n % UBJ_BS, 0);
    assert_int_equal(t_free_blocks(fs), 0);
    assert_int_equal(t_stat(fs, ino).size, (uint64_t)n);
    assert_rc(ubj_pwrite(fs, ino, buf, 100, n), -ENOSPC);
    assert_rc(ubj_pwrite(fs, ino, buf, 100, n + 5 * UBJ_BS), -ENOSPC);
    assert_int_equal(t_stat(fs, ino).size, (uint64_t)n);
    /* overwriting allocated blocks still works on a full device */
    assert_rc(ubj_pwrite(fs, ino, buf, 10, 7), 10);
    uint8_t *rd = malloc(len);
    assert_non_null(rd);
    assert_rc(ubj_pread(fs, ino, rd, len, 0), n);
    assert_int_equal(memcmp(rd, buf, 7), 0);
    assert_int_equal(memcmp(rd + 7, buf, 10), 0);
    assert_int_equal(tpattern_check(rd + 17, (size_t)n - 17, 11, 17), (size_t)n - 17);
    assert_ok(t_size(fs, ino, 0));
    assert_int_equal(t_free_blocks(fs), free0);
    free(buf);
    free(rd);
}

/* test_efbig -- limits of UBJ_MAX_FILE_SIZE for pwrite and setattr. */
static void test_efbig(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "max", 0644);
    const off_t max = (off_t)UBJ_MAX_FILE_SIZE;
    assert_rc(ubj_pwrite(fs, ino, "ab", 2, max), -EFBIG);
    assert_rc(ubj_pwrite(fs, ino, "ab", 2, INT64_MAX), -EFBIG);
    assert_rc(ubj_pwrite(fs, ino, "ab", 2, max - 1), 1);   /* Linux: short */
    assert_int_equal(t_stat(fs, ino).size, UBJ_MAX_FILE_SIZE);
    assert_int_equal(t_stat(fs, ino).blocks, 8);
    char c = 0;
    assert_rc(ubj_pread(fs, ino, &c, 1, max - 1), 1);
    assert_int_equal(c, 'a');
    assert_rc(t_size(fs, ino, UBJ_MAX_FILE_SIZE + 1), -EFBIG);
    assert_ok(t_size(fs, ino, 0));
    assert_ok(t_size(fs, ino, UBJ_MAX_FILE_SIZE));
    assert_int_equal(t_stat(fs, ino).blocks, 0);
    assert_ok(t_size(fs, ino, 0));
}

/* test_errors -- bad offsets, types and inodes. */
static void test_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "f", 0644);
    char buf[16];
    assert_rc(ubj_pread(fs, ino, buf, 1, -1), -EINVAL);
    assert_rc(ubj_pwrite(fs, ino, buf, 1, -4096), -EINVAL);
    assert_rc(ubj_pread(fs, UBJ_ROOT_INO, buf, 1, 0), -EISDIR);
    assert_rc(ubj_pwrite(fs, UBJ_ROOT_INO, buf, 1, 0), -EISDIR);
    assert_rc(t_size(fs, UBJ_ROOT_INO, 0), -EISDIR);
    assert_rc(ubj_open(fs, UBJ_ROOT_INO, O_WRONLY), -EISDIR);
    assert_rc(ubj_open(fs, UBJ_ROOT_INO, O_RDONLY | O_TRUNC), -EISDIR);
    assert_ok(ubj_open(fs, UBJ_ROOT_INO, O_RDONLY));
    assert_ok(ubj_release(fs, UBJ_ROOT_INO));
    struct ubj_stat st;
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0644, 0, NULL, &st));
    assert_rc(ubj_pread(fs, st.ino, buf, 1, 0), -EINVAL);
    assert_rc(ubj_pwrite(fs, st.ino, buf, 1, 0), -EINVAL);
    assert_rc(t_size(fs, st.ino, 0), -EINVAL);
    assert_true(strlen(ubj_errormsg()) > 0);
    ubj_ino_t none = ino + 100;
    assert_rc(ubj_pread(fs, none, buf, 1, 0), -ENOENT);
    assert_rc(ubj_pwrite(fs, none, buf, 1, 0), -ENOENT);
    assert_rc(ubj_open(fs, none, O_RDONLY), -ENOENT);
    assert_rc(ubj_fsync(fs, none, 0), -ENOENT);
    assert_rc(t_size(fs, none, 0), -ENOENT);
    assert_rc(ubj_release(fs, ino), -EINVAL);          /* never opened */
    assert_ok(ubj_fsync(fs, ino, 0));
    assert_ok(ubj_fsync(fs, ino, 1));
}

/* test_open_trunc -- O_TRUNC empties a regular file and sets m/ctime. */
static void test_open_trunc(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "t", 0644);
    uint8_t data[3 * UBJ_BS] = { 1 };
    assert_rc(ubj_pwrite(fs, ino, data, sizeof data, 0), sizeof data);
    struct ubj_setattr sa = { .valid = UBJ_SET_MTIME, .mtime = { 1000, 5 } };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    assert_ok(ubj_open(fs, ino, O_RDONLY));               /* no truncation */
    assert_int_equal(t_stat(fs, ino).size, sizeof data);
    assert_ok(ubj_open(fs, ino, O_WRONLY | O_TRUNC));
    struct ubj_stat st = t_stat(fs, ino);
    assert_int_equal(st.size, 0);
    assert_int_equal(st.blocks, 0);
    assert_true(st.mtime.tv_sec > 1000);
    assert_int_equal(t_free_blocks(fs), free0);
    assert_ok(ubj_release(fs, ino));
    assert_ok(ubj_release(fs, ino));
    assert_rc(ubj_release(fs, ino), -EINVAL);
}

/* test_privs -- a write clears S_ISUID and S_ISGID|S_IXGRP, not a lone
 * S_ISGID; chown does the same (Linux). */
static void test_privs(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t a = t_file(fs, "a", 06755);
    ubj_ino_t b = t_file(fs, "b", 06745);
    assert_rc(ubj_pwrite(fs, a, "x", 1, 0), 1);
    assert_rc(ubj_pwrite(fs, b, "x", 1, 0), 1);
    assert_int_equal(t_stat(fs, a).mode, S_IFREG | 0755);
    assert_int_equal(t_stat(fs, b).mode, S_IFREG | 02745);
    struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = 06755 };
    assert_ok(ubj_setattr(fs, a, &sa, NULL));
    sa.mode = 06745;
    assert_ok(ubj_setattr(fs, b, &sa, NULL));
    struct ubj_setattr ch = { .valid = UBJ_SET_UID | UBJ_SET_GID, .uid = 5, .gid = 6 };
    struct ubj_stat st;
    assert_ok(ubj_setattr(fs, a, &ch, &st));
    assert_int_equal(st.mode, S_IFREG | 0755);
    assert_int_equal(st.uid, 5);
    assert_int_equal(st.gid, 6);
    assert_ok(ubj_setattr(fs, b, &ch, &st));
    assert_int_equal(st.mode, S_IFREG | 02745);
    /* a directory keeps its bits on chown */
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0775, NULL, &st));
    sa.mode = 06775;
    assert_ok(ubj_setattr(fs, st.ino, &sa, &st));
    assert_ok(ubj_setattr(fs, st.ino, &ch, &st));
    assert_int_equal(st.mode, S_IFDIR | 06775);
}

/* test_setattr -- mode keeps the type, explicit and _NOW times, ctime on
 * every change, attributes returned. */
static void test_setattr(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "s", 0644);
    struct ubj_stat st, before = t_stat(fs, ino);
    struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = S_IFDIR | 0600 };
    t_sleep_ns(2000000);
    assert_ok(ubj_setattr(fs, ino, &sa, &st));
    assert_int_equal(st.mode, S_IFREG | 0600);
    assert_true(ts_cmp(&st.ctime, &before.ctime) > 0);
    assert_int_equal(ts_cmp(&st.mtime, &before.mtime), 0);
    sa = (struct ubj_setattr){ .valid = UBJ_SET_ATIME | UBJ_SET_MTIME,
                               .atime = { 12345, 678 }, .mtime = { 23456, 789 } };
    assert_ok(ubj_setattr(fs, ino, &sa, &st));
    assert_int_equal(st.atime.tv_sec, 12345);
    assert_int_equal(st.atime.tv_nsec, 678);
    assert_int_equal(st.mtime.tv_sec, 23456);
    assert_int_equal(st.mtime.tv_nsec, 789);
    sa.valid = UBJ_SET_ATIME_NOW | UBJ_SET_MTIME_NOW;
    assert_ok(ubj_setattr(fs, ino, &sa, &st));
    assert_true(st.atime.tv_sec > 12345 && st.mtime.tv_sec > 23456);
    sa = (struct ubj_setattr){ .valid = UBJ_SET_CTIME, .ctime = { 99, 1 } };
    assert_ok(ubj_setattr(fs, ino, &sa, &st));
    assert_int_equal(st.ctime.tv_sec, 99);
    sa = (struct ubj_setattr){ .valid = UBJ_SET_ATIME, .atime = { 1, 1000000000L } };
    assert_rc(ubj_setattr(fs, ino, &sa, NULL), -EINVAL);
    /* a size change sets mtime; the same size does not */
    sa = (struct ubj_setattr){ .valid = UBJ_SET_MTIME, .mtime = { 5, 0 } };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    assert_ok(t_size(fs, ino, 0));
    assert_int_equal(t_stat(fs, ino).mtime.tv_sec, 5);
    assert_ok(t_size(fs, ino, 77));
    assert_true(t_stat(fs, ino).mtime.tv_sec > 5);
    assert_int_equal(t_stat(fs, ino).size, 77);
    /* nothing to change: the attributes come back */
    sa.valid = 0;
    assert_ok(ubj_setattr(fs, ino, &sa, &st));
    assert_int_equal(st.size, 77);
}

/* test_relatime -- a read after a write updates atime; a read with atime
 * already after mtime and ctime (and less than a day old) does not. */
static void test_relatime(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "r", 0644);
    char c;
    assert_rc(ubj_pwrite(fs, ino, "x", 1, 0), 1);
    struct ubj_setattr sa = { .valid = UBJ_SET_ATIME, .atime = { 1000, 0 } };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    assert_rc(ubj_pread(fs, ino, &c, 1, 0), 1);
    struct ubj_stat st = t_stat(fs, ino);
    assert_true(ts_cmp(&st.atime, &st.mtime) > 0);
    assert_true(ts_cmp(&st.atime, &st.ctime) > 0);
    struct timespec first = st.atime;
    t_sleep_ns(2000000);
    assert_rc(ubj_pread(fs, ino, &c, 1, 0), 1);
    st = t_stat(fs, ino);
    assert_int_equal(ts_cmp(&st.atime, &first), 0);
    assert_rc(ubj_pread(fs, ino, &c, 1, 50), 0);             /* EOF read too */
    st = t_stat(fs, ino);
    assert_int_equal(ts_cmp(&st.atime, &first), 0);
    /* a day-old atime is refreshed even when after mtime and ctime */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    sa = (struct ubj_setattr){ .valid = UBJ_SET_MTIME | UBJ_SET_CTIME | UBJ_SET_ATIME,
                               .mtime = { now.tv_sec - 3 * 86400, 0 },
                               .ctime = { now.tv_sec - 3 * 86400, 0 },
                               .atime = { now.tv_sec - 2 * 86400, 0 } };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
    assert_rc(ubj_pread(fs, ino, &c, 1, 0), 1);
    assert_true(t_stat(fs, ino).atime.tv_sec >= now.tv_sec);
}

/* test_noatime -- UBJ_MOUNT_NOATIME: a read whose atime relatime would
 * update (after a write; a day old) leaves it; setattr still sets it. */
static void test_noatime(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "na", 0644);
    char c;
    assert_rc(ubj_pwrite(t->fs, ino, "x", 1, 0), 1);
    struct ubj_setattr sa = { .valid = UBJ_SET_ATIME, .atime = { 1000, 0 } };
    assert_ok(ubj_setattr(t->fs, ino, &sa, NULL));
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    assert_ok(ubj_test_mount(t->dev, UBJ_MOUNT_NOATIME, &t->fs));
    assert_rc(ubj_pread(t->fs, ino, &c, 1, 0), 1);
    struct ubj_stat st = t_stat(t->fs, ino);
    assert_int_equal(st.atime.tv_sec, 1000);          /* relatime would move it */
    sa.atime.tv_sec = 2000;
    assert_ok(ubj_setattr(t->fs, ino, &sa, NULL));
    assert_int_equal(t_stat(t->fs, ino).atime.tv_sec, 2000);
    assert_ok(ubj_unmount(t->fs));
    assert_ok(ubj_test_mount(t->dev, 0, &t->fs));     /* relatime again */
    assert_rc(ubj_pread(t->fs, ino, &c, 1, 0), 1);
    assert_true(t_stat(t->fs, ino).atime.tv_sec > 2000);
}

/* test_rdonly -- a read-only mount reads but refuses every change and
 * leaves atime alone. */
static void test_rdonly(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "ro", 0644);
    assert_rc(ubj_pwrite(t->fs, ino, "data", 4, 0), 4);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    assert_ok(ubj_test_mount(t->dev, UBJ_MOUNT_RDONLY, &t->fs));
    struct ubj_fs *fs = t->fs;
    struct ubj_stat before = t_stat(fs, ino);
    char buf[8];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), 4);
    assert_int_equal(memcmp(buf, "data", 4), 0);
    struct ubj_stat after = t_stat(fs, ino);
    assert_int_equal(ts_cmp(&after.atime, &before.atime), 0);
    assert_rc(ubj_pwrite(fs, ino, "x", 1, 0), -EROFS);
    assert_rc(t_size(fs, ino, 0), -EROFS);
    assert_rc(ubj_open(fs, ino, O_RDWR), -EROFS);
    assert_rc(ubj_open(fs, ino, O_RDONLY | O_TRUNC), -EROFS);
    assert_ok(ubj_open(fs, ino, O_RDONLY));
    assert_ok(ubj_release(fs, ino));
    assert_ok(ubj_fsync(fs, ino, 0));
    assert_ok(ubj_unmount(fs));
    assert_ok(ubj_test_mount(t->dev, 0, &t->fs));
}

/* t_mount_ra -- remount t's device with read path `pol` (cold cache). */
static int t_mount_ra(struct tfs *t, const char *pol)
{
    if (t->fs != NULL)
        assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .readahead = pol };
    return ubj_mount(t->dev, &cfg, &t->fs);
}

/* test_read_path -- ubj_config.readahead: "off-page" (and the default)
 * read one block per device request, "off" each contiguous run of
 * missing blocks of a call as one request (docs/READAHEAD.md); the
 * bytes are the same; unknown names and unbuilt policies are refused
 * with a message. */
static void test_read_path(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "rp", 0644);
    size_t size = 65 * UBJ_BS + 100;   /* data: blocks [0, 40) and [48, 65] */
    uint8_t *want = calloc(1, size), *got = malloc(size);
    tpattern_fill(want, 40 * UBJ_BS, 9, 0);
    tpattern_fill(want + 48 * UBJ_BS, size - 48 * UBJ_BS, 9, 48 * UBJ_BS);
    assert_rc(ubj_pwrite(t->fs, ino, want, 40 * UBJ_BS, 0), 40 * UBJ_BS);
    assert_rc(ubj_pwrite(t->fs, ino, want + 48 * UBJ_BS, size - 48 * UBJ_BS,
                         48 * UBJ_BS), (ssize_t)(size - 48 * UBJ_BS));
    static const struct { const char *pol; uint64_t cold, warm; } cases[] = {
        { NULL, 58, 57 }, { "off-page", 58, 57 }, { "off", 2, 3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ubj_bdev_stats st;
        for (int warm = 0; warm < 2; warm++) {
            assert_ok(t_mount_ra(t, cases[i].pol));
            (void)t_stat(t->fs, ino);           /* the inode's block cached */
            if (warm)                           /* block 10 cached: a gap */
                assert_rc(ubj_pread(t->fs, ino, got, 1, 10 * UBJ_BS), 1);
            ubj_bdev_stats_reset(t->dev);
            memset(got, 0xee, size);
            assert_rc(ubj_pread(t->fs, ino, got, size, 0), (ssize_t)size);
            assert_int_equal(memcmp(got, want, size), 0);
            ubj_bdev_stats_get(t->dev, &st);
            fprintf(stderr, "  readahead=%s %s: %llu reads\n",
                    cases[i].pol ? cases[i].pol : "(default)", warm ? "warm" : "cold",
                    (unsigned long long)st.reads);
            assert_int_equal(st.reads, warm ? cases[i].warm : cases[i].cold);
        }
    }
    assert_ok(t_mount_ra(t, "linux"));   /* the windows: unit/rapath.c */
    assert_rc(t_mount_ra(t, "linux:7"), -EINVAL);
    assert_rc(t_mount_ra(t, "oracle"), -EINVAL);
    assert_rc(t_mount_ra(t, "offf"), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "unknown policy"));
    assert_ok(t_mount_ra(t, NULL));
    free(want);
    free(got);
}

/* test_unlinked_open -- open + unlink: data readable and writable until
 * the last release, then inode and blocks are freed. */
static void test_unlinked_open(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs), ifree0 = t_free_inodes(fs);
    ubj_ino_t ino = t_file(fs, "gone", 0644);
    uint8_t data[10000];
    tpattern_fill(data, sizeof data, 5, 0);
    assert_rc(ubj_pwrite(fs, ino, data, sizeof data, 0), sizeof data);
    assert_ok(ubj_open(fs, ino, O_RDWR));
    assert_ok(ubj_open(fs, ino, O_RDONLY));
    assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, "gone"));
    struct ubj_stat lk;
    assert_rc(ubj_lookup(fs, UBJ_ROOT_INO, "gone", &lk), -ENOENT);
    assert_int_equal(t_stat(fs, ino).nlink, 0);
    uint8_t buf[sizeof data];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), sizeof data);
    assert_int_equal(tpattern_check(buf, sizeof buf, 5, 0), sizeof buf);
    assert_rc(ubj_pwrite(fs, ino, "more", 4, sizeof data), 4);
    assert_ok(ubj_release(fs, ino));
    assert_rc(ubj_pread(fs, ino, buf, 4, sizeof data), 4);   /* one left */
    assert_int_equal(memcmp(buf, "more", 4), 0);
    assert_true(t_free_blocks(fs) < free0);
    assert_ok(ubj_release(fs, ino));
    assert_rc(ubj_pread(fs, ino, buf, 4, 0), -ENOENT);
    assert_rc(ubj_getattr(fs, ino, &(struct ubj_stat){ 0 }), -ENOENT);
    assert_int_equal(t_free_blocks(fs), free0);
    assert_int_equal(t_free_inodes(fs), ifree0);
}

/* test_fsync_durable -- after fsync the data is on the device (a second
 * mount of a copy of the device, made without unmounting, sees it). */
static void test_fsync_durable(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_fs *fs = t->fs;
    ubj_ino_t ino = t_file(fs, "d", 0644);
    uint8_t data[3 * UBJ_BS];
    tpattern_fill(data, sizeof data, 9, 0);
    assert_rc(ubj_pwrite(fs, ino, data, sizeof data, 100), sizeof data);
    assert_ok(ubj_fsync(fs, ino, 1));
    /* copy the device as it is now, as if the machine stopped here */
    struct ubj_bdev *copy;
    uint64_t nb = t->dev->nblocks;
    assert_ok(ubj_bdev_ram_create(nb, &copy));
    uint8_t *blk = malloc(UBJ_BS);
    assert_non_null(blk);
    for (uint64_t b = 0; b < nb; b++) {
        assert_ok(ubj_bdev_read(t->dev, b, 1, blk));
        assert_ok(ubj_bdev_write(copy, b, 1, blk));
    }
    free(blk);
    struct ubj_fs *fs2;
    assert_ok(ubj_test_mount(copy, UBJ_MOUNT_RDONLY, &fs2));
    uint8_t buf[sizeof data];
    assert_rc(ubj_pread(fs2, ino, buf, sizeof buf, 100), sizeof buf);
    assert_int_equal(tpattern_check(buf, sizeof buf, 9, 0), sizeof buf);
    assert_ok(ubj_unmount(fs2));
    ubj_bdev_destroy(copy);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_small_edges, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_holes, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_sparse_1tib, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_truncate_gap, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_enospc, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_efbig, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_open_trunc, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_privs, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_setattr, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_relatime, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_noatime, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_rdonly, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_read_path, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_unlinked_open, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_fsync_durable, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
