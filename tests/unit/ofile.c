/*
 * unit/ofile.c -- src/fs/ofile.c: struct ubj_file and ubj_fadvise.
 * DONTNEED really drops clean blocks (the next read goes to the device:
 * cache misses and device reads counted) and only whole blocks, keeps
 * dirty ones; WILLNEED really loads (the next read makes no device read),
 * skips holes and stops at half the cache; NORMAL/RANDOM/SEQUENTIAL are
 * kept per open file description; access modes, bad arguments, FIFOs;
 * unlink while open (the inode lives until the last close), double close
 * and close after unmount (-EBADF, nothing freed twice: run under ASan by
 * scripts/test).  test_broken runs the same checks on ofile.c's
 * deliberately broken variants (a test build) and sees each one fail.
 * Every test ends with a clean ubj_check (tfs_teardown).
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define BS 4096u

/* t_file -- a new regular file in the root, `blocks` blocks and `tail`
 * bytes of pattern, written home (CLEAN in the cache). */
static ubj_ino_t t_file(struct ubj_fs *fs, const char *name, unsigned blocks,
                        unsigned tail)
{
    struct ubj_stat st;
    size_t n = (size_t)blocks * BS + tail;
    uint8_t *buf = malloc(n + 1);
    assert_non_null(buf);
    tpattern_fill(buf, n, 1, 0);
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, name, 0644, NULL, &st));
    assert_rc(ubj_pwrite(fs, st.ino, buf, n, 0), n);
    assert_ok(ubj_sync(fs));
    free(buf);
    return st.ino;
}

/* t_dev_reads -- device read requests so far. */
static uint64_t t_dev_reads(struct ubj_bdev *dev)
{
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(dev, &s);
    return s.reads;
}

/* t_read_cost -- device reads made by reading [off, off + len) of ino
 * (the read must return what was written). */
static uint64_t t_read_cost(struct tfs *t, ubj_ino_t ino, uint64_t off, size_t len)
{
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    uint64_t before = t_dev_reads(t->dev);
    ssize_t n = ubj_pread(t->fs, ino, buf, len, (off_t)off);
    assert_true(n > 0);
    assert_int_equal(tpattern_check(buf, (size_t)n, 1, off), (size_t)n);
    free(buf);
    return t_dev_reads(t->dev) - before;
}

/* t_block_costs -- which of blocks 0..n-1 of ino a read now fetches from
 * the device: bit i set for block i (each read once, in order). */
static uint64_t t_block_costs(struct tfs *t, ubj_ino_t ino, unsigned n)
{
    uint64_t bits = 0;
    for (unsigned i = 0; i < n; i++)
        bits |= (uint64_t)(t_read_cost(t, ino, (uint64_t)i * BS, 1) != 0) << i;
    return bits;
}

/* ---- the checks (also run on the broken variants) ------------------------ */

/* chk_dontneed -- device reads and cache misses of reading a 16-block
 * file again after DONTNEED of all of it (16 and 16 if it dropped). */
static uint64_t chk_dontneed(struct tfs *t, uint64_t *misses)
{
    ubj_ino_t ino = t_file(t->fs, "dn", 16, 0);
    struct ubj_file *f;
    struct ubj_fs_stats a, b;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_rc(t_read_cost(t, ino, 0, 16 * BS), 0);   /* cached by the write */
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_DONTNEED));
    ubj_fs_stats_get(t->fs, &a);
    uint64_t cost = t_read_cost(t, ino, 0, 16 * BS);
    ubj_fs_stats_get(t->fs, &b);
    *misses = b.cache_misses - a.cache_misses;
    assert_ok(ubj_file_close(f));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "dn"));
    return cost;
}

/* chk_dontneed_partial -- the blocks (bits) of a 17-block file (16 and
 * 100 bytes) a read fetches again after DONTNEED of [100, 3 blocks + 100),
 * which covers blocks 1 and 2 whole: 0x6 if partial blocks are kept. */
static uint64_t chk_dontneed_partial(struct tfs *t)
{
    ubj_ino_t ino = t_file(t->fs, "dp", 16, 100);
    struct ubj_file *f;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_ok(ubj_fadvise(f, 100, 3 * BS, UBJ_FADV_DONTNEED));
    uint64_t bits = t_block_costs(t, ino, 17);
    assert_ok(ubj_file_close(f));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "dp"));
    return bits;
}

/* chk_willneed -- device reads of reading a 16-block file after a
 * remount (cold) and WILLNEED of all of it: 0 if it loaded.  *during:
 * the reads WILLNEED made. */
static uint64_t chk_willneed(struct tfs *t, uint64_t *during)
{
    ubj_ino_t ino = t_file(t->fs, "wn", 16, 0);
    ubj_test_remount(t->dev, &t->fs);
    struct ubj_file *f;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_rc(t_read_cost(t, ino, 0, 1), 1);      /* cold: block 0 now cached */
    uint64_t before = t_dev_reads(t->dev);
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_WILLNEED));
    *during = t_dev_reads(t->dev) - before;
    uint64_t cost = t_read_cost(t, ino, 0, 16 * BS);
    assert_ok(ubj_file_close(f));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "wn"));
    return cost;
}

/* chk_advice -- two open file descriptions of one inode keep their own
 * hints: true if RANDOM, SEQUENTIAL and NORMAL are each kept. */
static bool chk_advice(struct tfs *t)
{
    ubj_ino_t ino = t_file(t->fs, "adv", 1, 0);
    struct ubj_file *f1, *f2;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f1));
    assert_ok(ubj_file_open(t->fs, ino, O_RDWR, &f2));
    assert_rc(ubj_file_advice(f1), UBJ_FADV_NORMAL);
    assert_ok(ubj_fadvise(f1, 0, 0, UBJ_FADV_RANDOM));
    assert_ok(ubj_fadvise(f2, 5, 7, UBJ_FADV_SEQUENTIAL));
    bool ok = ubj_file_advice(f1) == UBJ_FADV_RANDOM &&
              ubj_file_advice(f2) == UBJ_FADV_SEQUENTIAL;
    assert_ok(ubj_fadvise(f2, 0, 0, UBJ_FADV_WILLNEED));   /* not a hint */
    ok = ok && ubj_file_advice(f2) == UBJ_FADV_SEQUENTIAL;
    assert_ok(ubj_fadvise(f1, 0, 0, UBJ_FADV_NORMAL));
    ok = ok && ubj_file_advice(f1) == UBJ_FADV_NORMAL;
    assert_ok(ubj_file_close(f1));
    assert_ok(ubj_file_close(f2));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "adv"));
    return ok;
}

/* chk_unlink_open -- an unlinked file stays readable through its open
 * file and is freed at the close: true if the inode came back then. */
static bool chk_unlink_open(struct tfs *t)
{
    ubj_ino_t ino = t_file(t->fs, "ul", 4, 0);
    uint64_t inodes = t_free_inodes(t->fs), blocks = t_free_blocks(t->fs);
    struct ubj_file *f;
    uint8_t buf[BS];
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ul"));
    assert_rc(ubj_file_pread(f, buf, BS, 3 * BS), BS);
    assert_int_equal(tpattern_check(buf, BS, 1, 3 * BS), BS);
    assert_int_equal(t_free_inodes(t->fs), inodes);     /* still held */
    assert_ok(ubj_file_close(f));
    return t_free_inodes(t->fs) == inodes + 1 && t_free_blocks(t->fs) >= blocks + 4;
}

/* ---- tests ---------------------------------------------------------------- */

/* test_dontneed -- the dropped blocks are read again (device reads and
 * cache misses); only whole blocks of the range, and the partial last
 * block of the file when the range reaches the end. */
static void test_dontneed(void **state)
{
    struct tfs *t = TFS(state);
    uint64_t misses;
    assert_int_equal(chk_dontneed(t, &misses), 16);
    assert_int_equal(misses, 16);
    assert_int_equal(chk_dontneed_partial(t), 0x6);
    ubj_ino_t ino = t_file(t->fs, "end", 16, 100);
    struct ubj_file *f;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_ok(ubj_fadvise(f, 15 * BS, BS + 100, UBJ_FADV_DONTNEED));  /* to EOF */
    assert_int_equal(t_block_costs(t, ino, 17), 0x3u << 15);
    assert_ok(ubj_fadvise(f, 14 * BS + 1, 0, UBJ_FADV_DONTNEED));    /* len 0 */
    assert_int_equal(t_block_costs(t, ino, 17), 0x3u << 15);
    assert_ok(ubj_fadvise(f, 17 * BS, 0, UBJ_FADV_DONTNEED));        /* past EOF */
    assert_ok(ubj_fadvise(f, 0, BS - 1, UBJ_FADV_DONTNEED));         /* no whole block */
    assert_int_equal(t_block_costs(t, ino, 17), 0);
    assert_ok(ubj_file_close(f));
}

/* test_dontneed_dirty -- a dirty block is not dropped: its new bytes are
 * read back, not the ones on the device. */
static void test_dontneed_dirty(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "d", 2, 0);
    struct ubj_file *f;
    uint8_t w[BS], r[BS];
    memset(w, 0xa5, sizeof w);
    assert_ok(ubj_file_open(t->fs, ino, O_RDWR, &f));
    assert_rc(ubj_file_pwrite(f, w, BS, BS), BS);     /* block 1 DIRTY */
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_DONTNEED));
    uint64_t before = t_dev_reads(t->dev);
    assert_rc(ubj_file_pread(f, r, BS, BS), BS);
    assert_int_equal(t_dev_reads(t->dev) - before, 0);
    assert_memory_equal(r, w, BS);
    assert_int_equal(t_read_cost(t, ino, 0, 1), 1);   /* block 0 was dropped */
    assert_ok(ubj_file_close(f));
}

/* test_willneed -- WILLNEED reads the range ahead now (16 blocks, one of
 * them already cached: the other 15 in one device request), the following
 * read makes none; holes cost
 * nothing; at most half the cache is read. */
static void test_willneed(void **state)
{
    struct tfs *t = TFS(state);
    uint64_t during;
    assert_int_equal(chk_willneed(t, &during), 0);
    assert_int_equal(during, 1);
    /* a hole in the middle: blocks 0 and 9 only */
    struct ubj_stat st;
    uint8_t b[BS];
    tpattern_fill(b, BS, 1, 0);
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "holes", 0644, NULL, &st));
    assert_rc(ubj_pwrite(t->fs, st.ino, b, BS, 0), BS);
    tpattern_fill(b, BS, 1, 9 * BS);
    assert_rc(ubj_pwrite(t->fs, st.ino, b, BS, 9 * BS), BS);
    assert_ok(ubj_sync(t->fs));
    ubj_test_remount(t->dev, &t->fs);
    struct ubj_file *f;
    assert_ok(ubj_file_open(t->fs, st.ino, O_RDONLY, &f));
    (void)t_read_cost(t, st.ino, 0, 1);               /* the inode's block */
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_DONTNEED));
    uint64_t before = t_dev_reads(t->dev);
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_WILLNEED));
    assert_int_equal(t_dev_reads(t->dev) - before, 2);
    assert_int_equal(t_read_cost(t, st.ino, 9 * BS, BS), 0);
    assert_ok(ubj_file_close(f));
}

/* test_willneed_cap -- with a 128-buffer cache WILLNEED of 200 blocks
 * reads 64 (half the cache), the first 64 (block 0 cached: 63 in 4
 * requests, a read-ahead call reading at most 1/8 of the buffers). */
static void test_willneed_cap(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "big", 200, 0);
    assert_ok(ubj_unmount(t->fs));
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .cache_blocks = 128 };
    assert_ok(ubj_mount(t->dev, &cfg, &t->fs));
    struct ubj_file *f;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    (void)t_read_cost(t, ino, 0, 1);                  /* the inode, block 0 */
    uint64_t before = t_dev_reads(t->dev);
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_WILLNEED));
    assert_int_equal(t_dev_reads(t->dev) - before, 4);
    assert_int_equal(t_read_cost(t, ino, 63 * BS, BS), 0);
    assert_int_equal(t_read_cost(t, ino, 64 * BS, BS), 1);
    assert_ok(ubj_file_close(f));
}

/* test_advice -- the hints are kept per open file description. */
static void test_advice(void **state)
{
    assert_true(chk_advice(TFS(state)));
}

/* test_errors -- argument, access-mode and type errors. */
static void test_errors(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_fs *fs = t->fs;
    ubj_ino_t ino = t_file(fs, "e", 1, 0);
    struct ubj_file *r, *w, *d;
    struct ubj_stat st;
    uint8_t buf[16] = { 0 };
    assert_rc(ubj_file_open(fs, ino, 3, &r), -EINVAL);
    assert_rc(ubj_file_open(NULL, ino, O_RDONLY, &r), -EINVAL);
    assert_rc(ubj_file_open(fs, ino, O_RDONLY, NULL), -EINVAL);
    assert_rc(ubj_file_open(fs, 999, O_RDONLY, &r), -ENOENT);
    assert_rc(ubj_file_open(fs, UBJ_ROOT_INO, O_RDWR, &d), -EISDIR);
    assert_ok(ubj_file_open(fs, ino, O_RDONLY, &r));
    assert_ok(ubj_file_open(fs, ino, O_WRONLY, &w));
    assert_rc(ubj_file_pwrite(r, buf, 1, 0), -EBADF);
    assert_rc(ubj_file_pread(w, buf, 1, 0), -EBADF);
    assert_rc(ubj_file_pwrite(w, buf, 16, 0), 16);
    assert_rc(ubj_file_pread(r, buf, 16, 0), 16);
    assert_rc(ubj_file_pread(NULL, buf, 1, 0), -EBADF);
    assert_rc(ubj_file_pwrite(NULL, buf, 1, 0), -EBADF);
    assert_rc(ubj_file_pread(r, buf, 1, -1), -EINVAL);
    assert_rc(ubj_fadvise(NULL, 0, 0, UBJ_FADV_NORMAL), -EBADF);
    assert_rc(ubj_file_advice(NULL), -EBADF);
    assert_rc(ubj_fadvise(r, 0, 0, 5), -EINVAL);      /* NOREUSE: not ours */
    assert_rc(ubj_fadvise(r, 0, 0, -1), -EINVAL);
    assert_rc(ubj_fadvise(r, -1, 0, UBJ_FADV_WILLNEED), -EINVAL);
    assert_rc(ubj_fadvise(r, 0, -1, UBJ_FADV_DONTNEED), -EINVAL);
    assert_rc(ubj_file_advice(r), UBJ_FADV_NORMAL);   /* unchanged by errors */
    assert_int_equal(ubj_file_ino(r), ino);
    assert_int_equal(ubj_file_ino(NULL), 0);
    assert_ok(ubj_file_open(fs, UBJ_ROOT_INO, O_RDONLY, &d));   /* a directory */
    assert_rc(ubj_file_pread(d, buf, 1, 0), -EISDIR);
    assert_ok(ubj_fadvise(d, 0, 0, UBJ_FADV_WILLNEED));
    assert_ok(ubj_fadvise(d, 0, 0, UBJ_FADV_RANDOM));
    assert_rc(ubj_file_advice(d), UBJ_FADV_RANDOM);
    assert_ok(ubj_file_close(d));
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0644, 0, NULL, &st));
    assert_ok(ubj_file_open(fs, st.ino, O_RDONLY, &d));
    assert_rc(ubj_fadvise(d, 0, 0, UBJ_FADV_WILLNEED), -ESPIPE);
    assert_rc(ubj_fadvise(d, 0, 0, UBJ_FADV_DONTNEED), -ESPIPE);
    assert_ok(ubj_file_close(d));
    assert_ok(ubj_file_close(r));
    assert_ok(ubj_file_close(w));
    assert_rc(ubj_file_close(w), -EBADF);             /* double close */
    assert_rc(ubj_file_close(NULL), -EBADF);
}

/* test_trunc -- O_TRUNC through ubj_file_open; writes and reads through
 * the file. */
static void test_trunc(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "tr", 8, 0);
    struct ubj_file *f;
    struct ubj_stat st;
    uint8_t buf[100];
    assert_ok(ubj_file_open(t->fs, ino, O_RDWR | O_TRUNC, &f));
    assert_ok(ubj_getattr(t->fs, ino, &st));
    assert_int_equal(st.size, 0);
    assert_rc(ubj_file_pwrite(f, "hello", 5, 10), 5);
    assert_rc(ubj_file_pread(f, buf, sizeof buf, 0), 15);
    assert_memory_equal(buf + 10, "hello", 5);
    assert_int_equal(tzero_check(buf, 10), 10);
    assert_ok(ubj_file_close(f));
}

/* test_unlink_open -- an unlinked inode lives until its last close. */
static void test_unlink_open(void **state)
{
    assert_true(chk_unlink_open(TFS(state)));
}

/* test_unmount_closes -- files still open at unmount are freed by it (an
 * unlinked one's inode too); closing them afterwards is -EBADF. */
static void test_unmount_closes(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "u", 2, 0);
    uint64_t inodes = t_free_inodes(t->fs);
    struct ubj_file *f, *g;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &g));
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "u"));
    ubj_test_remount(t->dev, &t->fs);
    assert_int_equal(t_free_inodes(t->fs), inodes + 1);
    assert_rc(ubj_file_close(f), -EBADF);
    assert_rc(ubj_file_close(g), -EBADF);
}

#if UBJ_TEST_HOOKS
/* test_broken -- each check above fails on its broken variant. */
static void test_broken(void **state)
{
    struct tfs *t = TFS(state);
    uint64_t n;
    fs_ofile_test_break(FS_OFILE_BREAK_DONTNEED_NOOP);
    assert_int_equal(chk_dontneed(t, &n), 0);
    fs_ofile_test_break(FS_OFILE_BREAK_DONTNEED_PARTIAL);
    assert_int_equal(chk_dontneed_partial(t), 0xf);
    fs_ofile_test_break(FS_OFILE_BREAK_WILLNEED_NOOP);
    assert_int_equal(chk_willneed(t, &n), 15);
    fs_ofile_test_break(FS_OFILE_BREAK_ADVICE_LOST);
    assert_false(chk_advice(t));
    fs_ofile_test_break(FS_OFILE_BREAK_CLOSE_KEEPS_REF);
    assert_false(chk_unlink_open(t));
    fs_ofile_test_break(FS_OFILE_BREAK_NONE);
    ubj_test_remount(t->dev, &t->fs);    /* frees the leaked orphan */
}
#else
#define test_broken t_no_hooks
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dontneed, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_dontneed_dirty, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_willneed, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_willneed_cap, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_advice, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_trunc, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_unlink_open, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_unmount_closes, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_broken, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
