/*
 * unit/alloc.c -- block and inode allocation (src/fs/alloc.c).
 *
 * Checks: runs are contiguous, start at the goal when it is free, never
 * cross a bitmap block and never cover metadata; -ENOSPC exactly when the
 * free count reaches zero (1 MiB and a 3-bitmap-block image), free counts
 * restored by bfree and kept across remount and on disk; fragmented free
 * space gives short runs; inode allocation until -ENOSPC; double frees and
 * frees of metadata, out-of-range blocks, inode 0/1 are refused with
 * -EUCLEAN and a message; allocation/free speed (printed).
 */
#include "testutil.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fs/fs.h"

static struct ubj_config t_cfg = { .flags = UBJ_MOUNT_NO_TIMER };

struct t_run { uint64_t start; uint32_t len; };

/* t_secs -- monotonic seconds. */
static double t_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* t_fs -- a formatted, mounted RAM device of nblocks. */
static struct ubj_fs *t_fs(uint64_t nblocks, struct ubj_bdev **d)
{
    struct ubj_fs *fs = NULL;
    assert_int_equal(ubj_bdev_ram_create(nblocks, d), 0);
    assert_int_equal(ubj_format(*d, NULL), 0);
    assert_int_equal(ubj_mount(*d, &t_cfg, &fs), 0);
    return fs;
}

/* t_remount -- unmount (0) and mount again. */
static struct ubj_fs *t_remount(struct ubj_fs *fs, struct ubj_bdev *d)
{
    assert_int_equal(ubj_unmount(fs), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    return fs;
}

/* t_bfree_count -- statfs free blocks. */
static uint64_t t_bfree_count(struct ubj_fs *fs)
{
    struct ubj_statfs sf;
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    return sf.bfree;
}

/* t_balloc -- one fs_balloc in its own handle. */
static int t_balloc(struct ubj_fs *fs, uint64_t goal, uint32_t want,
                    uint64_t *start, uint32_t *got)
{
    struct ubj_handle *h;
    assert_int_equal(fs_start(fs, 4, &h), 0);
    int rc = fs_balloc(fs, h, goal, want, start, got);
    return fs_stop(fs, h, rc);
}

/* t_bfree -- one fs_bfree in its own handle. */
static int t_bfree(struct ubj_fs *fs, uint64_t start, uint64_t count)
{
    struct ubj_handle *h;
    int rc = fs_start(fs, 4, &h);
    if (rc < 0)
        return rc;
    rc = fs_bfree(fs, h, start, count);
    return fs_stop(fs, h, rc);
}

/* t_fill -- allocate runs of `want` until -ENOSPC; checks each run.
 * Returns the runs (malloc'd) and their number in *n. */
static struct t_run *t_fill(struct ubj_fs *fs, uint32_t want, size_t *n,
                            uint64_t *total)
{
    size_t cap = 1024;
    struct t_run *runs = malloc(cap * sizeof *runs);
    uint64_t lo = fs->sb.data_start, hi = fs->sb.nblocks;
    uint64_t start;
    uint32_t got;
    int rc;
    *n = 0;
    *total = 0;
    while ((rc = t_balloc(fs, 0, want, &start, &got)) == 0) {
        assert_true(got >= 1 && got <= want);
        assert_true(start >= lo && start + got <= hi);
        assert_int_equal(start / UBJ_BITMAP_BITS,
                         (start + got - 1) / UBJ_BITMAP_BITS);
        if (*n == cap)
            runs = realloc(runs, (cap *= 2) * sizeof *runs);
        runs[(*n)++] = (struct t_run){ start, got };
        *total += got;
    }
    assert_int_equal(rc, -ENOSPC);
    assert_non_null(strstr(ubj_errormsg(), "no free blocks"));
    return runs;
}

/* t_run_cmp -- order runs by start. */
static int t_run_cmp(const void *a, const void *b)
{
    const struct t_run *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* t_no_overlap -- runs are pairwise disjoint. */
static void t_no_overlap(struct t_run *runs, size_t n)
{
    qsort(runs, n, sizeof *runs, t_run_cmp);
    for (size_t i = 1; i < n; i++)
        assert_true(runs[i - 1].start + runs[i - 1].len <= runs[i].start);
}

/* test_contiguous -- runs start at the first free block / the goal. */
static void test_contiguous(void **state)
{
    (void)state;
    struct ubj_bdev *d;
    struct ubj_fs *fs = t_fs(16384, &d);
    uint64_t ds = fs->sb.data_start, free0 = t_bfree_count(fs), s;
    uint32_t got;
    assert_int_equal(t_balloc(fs, 0, 100, &s, &got), 0);
    assert_int_equal(s, ds + 1);              /* after the root's block */
    assert_int_equal(got, 100);
    assert_int_equal(t_balloc(fs, 0, 50, &s, &got), 0);
    assert_int_equal(s, ds + 101);
    assert_int_equal(got, 50);
    assert_int_equal(t_balloc(fs, ds + 1000, 10, &s, &got), 0);
    assert_int_equal(s, ds + 1000);
    assert_int_equal(got, 10);
    /* a goal inside a used run: the next free block after it */
    assert_int_equal(t_balloc(fs, ds + 20, 5, &s, &got), 0);
    assert_int_equal(s, ds + 151);
    /* a goal in metadata or beyond the end: anywhere valid */
    assert_int_equal(t_balloc(fs, 1, 1, &s, &got), 0);
    assert_true(s >= ds);
    assert_int_equal(t_balloc(fs, 1ULL << 40, 1, &s, &got), 0);
    assert_true(s >= ds && s < fs->sb.nblocks);
    assert_int_equal(t_balloc(fs, 0, 0, &s, &got), -EINVAL);
    assert_int_equal(t_bfree_count(fs), free0 - 100 - 50 - 10 - 5 - 2);
    /* fragmented free space: short runs */
    uint64_t base = ds + 3000;
    assert_int_equal(t_balloc(fs, base, 20, &s, &got), 0);
    assert_int_equal(s, base);
    assert_int_equal(got, 20);
    for (uint64_t b = base; b < base + 20; b += 2)
        assert_int_equal(t_bfree(fs, b, 1), 0);
    assert_int_equal(t_balloc(fs, base, 4, &s, &got), 0);
    assert_int_equal(s, base);
    assert_int_equal(got, 1);
    assert_int_equal(t_balloc(fs, base + 1, 4, &s, &got), 0);
    assert_int_equal(s, base + 2);
    assert_int_equal(got, 1);
    /* the run stops at a used block: want more than is free there */
    assert_int_equal(t_bfree(fs, base + 10, 10), -EUCLEAN);  /* some free */
    ubj_unmount(fs);
    ubj_bdev_destroy(d);
}

/* t_full_cycle -- fill, ENOSPC, free everything, remount, compare. */
static void t_full_cycle(uint64_t nblocks, uint32_t want)
{
    struct ubj_bdev *d;
    struct ubj_fs *fs = t_fs(nblocks, &d);
    uint64_t free0 = t_bfree_count(fs), total;
    size_t n;
    struct t_run *runs = t_fill(fs, want, &n, &total);
    assert_int_equal(total, free0);
    assert_int_equal(t_bfree_count(fs), 0);
    t_no_overlap(runs, n);
    /* still full after a remount; the bitmaps agree with the count */
    fs = t_remount(fs, d);
    assert_int_equal(t_bfree_count(fs), 0);
    uint64_t s;
    uint32_t got;
    assert_int_equal(t_balloc(fs, 0, 1, &s, &got), -ENOSPC);
    struct ubj_super sb;
    assert_int_equal(ubj_sync(fs), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, &sb), 0);
    assert_int_equal(sb.free_blocks, 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(t_bfree(fs, runs[i].start, runs[i].len), 0);
    assert_int_equal(t_bfree_count(fs), free0);
    fs = t_remount(fs, d);
    assert_int_equal(t_bfree_count(fs), free0);
    /* everything allocatable again, as one pass */
    free(runs);
    runs = t_fill(fs, want, &n, &total);
    assert_int_equal(total, free0);
    free(runs);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* test_full_small -- a 1 MiB image to the last block. */
static void test_full_small(void **state)
{
    (void)state;
    t_full_cycle(256, 7);
    t_full_cycle(256, 1);
}

/* test_full_multi -- three bitmap blocks, the last partial. */
static void test_full_multi(void **state)
{
    (void)state;
    t_full_cycle(2 * UBJ_BITMAP_BITS + 1000, 4096);
}

/* test_ialloc -- until -ENOSPC; unique numbers; free restores counts. */
static void test_ialloc(void **state)
{
    (void)state;
    struct ubj_bdev *d;
    struct ubj_fs *fs = t_fs(2048, &d);
    struct ubj_statfs sf;
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    uint64_t ffree = sf.ffree, n = 0;
    uint8_t *seen = calloc(fs->sb.ninodes, 1);
    struct ubj_handle *h;
    ubj_ino_t ino;
    int rc;
    assert_int_equal(fs_start(fs, 4, &h), 0);
    while ((rc = fs_ialloc(fs, h, 1, &ino)) == 0) {
        assert_true(ino >= 2 && ino < fs->sb.ninodes);
        assert_int_equal(seen[ino], 0);
        seen[ino] = 1;
        n++;
    }
    assert_int_equal(rc, -ENOSPC);
    assert_non_null(strstr(ubj_errormsg(), "no free inodes"));
    assert_int_equal(n, ffree);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    fs = t_remount(fs, d);
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    assert_int_equal(sf.ffree, 0);
    assert_int_equal(fs_start(fs, 4, &h), 0);
    assert_int_equal(fs_ialloc(fs, h, 0, &ino), -ENOSPC);
    for (ubj_ino_t i = 2; i < fs->sb.ninodes; i += 3)
        assert_int_equal(fs_ifree(fs, h, i), 0);
    /* next-fit from a hint: the first free one at or after it */
    assert_int_equal(fs_ialloc(fs, h, 6, &ino), 0);
    assert_int_equal(ino, 8);
    assert_int_equal(fs_ialloc(fs, h, 1, &ino), 0);
    assert_int_equal(ino, 2);
    assert_int_equal(fs_ifree(fs, h, 2), 0);
    assert_int_equal(fs_ifree(fs, h, 8), 0);
    for (ubj_ino_t i = 2; i < fs->sb.ninodes; i++)
        if ((i - 2) % 3 != 0)
            assert_int_equal(fs_ifree(fs, h, i), 0);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    fs = t_remount(fs, d);
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    assert_int_equal(sf.ffree, ffree);
    free(seen);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* t_expect_corrupt -- rc is -EUCLEAN with `msg`, and the mount now
 * refuses changes. */
static void t_expect_corrupt(struct ubj_fs *fs, int rc, const char *msg)
{
    struct ubj_handle *h;
    assert_int_equal(rc, -EUCLEAN);
    if (!strstr(ubj_errormsg(), msg))
        fail_msg("message \"%s\" lacks \"%s\"", ubj_errormsg(), msg);
    assert_int_equal(fs->error, -EUCLEAN);
    assert_int_equal(fs_start(fs, 1, &h), -EROFS);
}

/* test_bad_frees -- double frees and frees outside the data area. */
static void test_bad_frees(void **state)
{
    (void)state;
    struct {
        uint64_t start, count;     /* 0 start = "data_start + start" */
        bool rel;
        const char *msg;
    } cases[] = {
        { 0, 1, false, "not in the data area" },      /* superblock */
        { 1, 1, false, "not in the data area" },      /* a bitmap */
        { (uint64_t)-1, 2, true, "not in the data area" }, /* last itable blk */
        { 1000, 1ULL << 62, true, "beyond the end" },
        { 2047, 1, false, "beyond the end" },  /* last block + 1 = 2048 */
        { 2048, 1, false, "beyond the end" },
        { 50, 1, true, "double free" },        /* never allocated */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ubj_bdev *d;
        struct ubj_fs *fs = t_fs(2048, &d);
        uint64_t start = cases[i].rel ? fs->sb.data_start + cases[i].start
                                      : cases[i].start;
        uint64_t count = cases[i].count;
        if (i == 4)
            start = 2048;   /* one past the last block */
        uint64_t free0 = t_bfree_count(fs);
        t_expect_corrupt(fs, t_bfree(fs, start, count), cases[i].msg);
        assert_int_equal(t_bfree_count(fs), free0);
        ubj_unmount(fs);
        ubj_bdev_destroy(d);
    }
    /* a real double free: allocate, free, free again */
    struct ubj_bdev *d;
    struct ubj_fs *fs = t_fs(2048, &d);
    uint64_t s, free0 = t_bfree_count(fs);
    uint32_t got;
    assert_int_equal(t_balloc(fs, 0, 8, &s, &got), 0);
    assert_int_equal(t_bfree(fs, s, 8), 0);
    assert_int_equal(t_bfree_count(fs), free0);
    t_expect_corrupt(fs, t_bfree(fs, s + 2, 1), "double free");
    assert_int_equal(t_bfree_count(fs), free0);
    ubj_unmount(fs);
    ubj_bdev_destroy(d);
    /* inodes: 0, the root, out of range, twice */
    ubj_ino_t bad[] = { 0, 1, 0 };
    for (int i = 0; i < 4; i++) {
        fs = t_fs(2048, &d);
        struct ubj_handle *h;
        ubj_ino_t ino = i < 2 ? bad[i] : fs->sb.ninodes;
        assert_int_equal(fs_start(fs, 4, &h), 0);
        if (i == 3) {
            assert_int_equal(fs_ialloc(fs, h, 0, &ino), 0);
            assert_int_equal(fs_ifree(fs, h, ino), 0);
        }
        int rc = fs_ifree(fs, h, ino);
        assert_int_equal(fs_stop(fs, h, 0), 0);
        t_expect_corrupt(fs, rc, i == 3 ? "double free" : "inode");
        ubj_unmount(fs);
        ubj_bdev_destroy(d);
    }
}

/* test_counts_on_disk -- the superblock counts follow every change. */
static void test_counts_on_disk(void **state)
{
    (void)state;
    struct ubj_bdev *d;
    struct ubj_fs *fs = t_fs(4096, &d);
    struct ubj_super sb;
    struct ubj_handle *h;
    uint64_t s;
    uint32_t got;
    ubj_ino_t ino;
    uint64_t fb = fs->sb.free_blocks, fi = fs->sb.free_inodes;
    assert_int_equal(t_balloc(fs, 0, 33, &s, &got), 0);
    assert_int_equal(fs_start(fs, 4, &h), 0);
    assert_int_equal(fs_ialloc(fs, h, 0, &ino), 0);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    assert_int_equal(ubj_sync(fs), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, &sb), 0);
    assert_int_equal(sb.free_blocks, fb - 33);
    assert_int_equal(sb.free_inodes, fi - 1);
    /* the bitmap blocks on disk hold the bits */
    uint8_t bm[4096];
    assert_int_equal(ubj_bdev_read(d, sb.bb_start, 1, bm), 0);
    assert_int_equal(fs_block_verify(fs->csum_seed, bm, UBJ_MAGIC_BBITMAP,
                                     sb.bb_start), 0);
    const uint8_t *map = bm + 16;
    for (uint64_t b = 0; b < 4096; b++) {
        bool used = (map[b / 8] >> (b % 8)) & 1;
        bool expect = b <= sb.data_start || (b >= s && b < s + 33);
        if (used != expect)
            fail_msg("block %llu: bit %d", (unsigned long long)b, used);
    }
    /* bits past the end of the image are set */
    for (uint64_t b = 4096; b < UBJ_BITMAP_BITS; b++)
        assert_true((map[b / 8] >> (b % 8)) & 1);
    assert_int_equal(ubj_bdev_read(d, sb.ib_start, 1, bm), 0);
    assert_int_equal(map[0] & 0x7, 0x7);           /* 0, root, new */
    assert_int_equal(ino, 2);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* test_speed -- inode and block alloc/free pairs per second (printed). */
static void test_speed(void **state)
{
    (void)state;
    struct ubj_bdev *d;
    struct ubj_fs *fs = t_fs(65536, &d);
    struct ubj_handle *h;
    const int n = 200000;
    ubj_ino_t ino;
    uint64_t s;
    uint32_t got;
    double t0 = t_secs();
    for (int i = 0; i < n; i++) {
        assert_int_equal(fs_start(fs, 4, &h), 0);
        assert_int_equal(fs_ialloc(fs, h, 1, &ino), 0);
        assert_int_equal(fs_ifree(fs, h, ino), 0);
        assert_int_equal(fs_stop(fs, h, 0), 0);
    }
    double t1 = t_secs();
    for (int i = 0; i < n; i++) {
        assert_int_equal(fs_start(fs, 4, &h), 0);
        assert_int_equal(fs_balloc(fs, h, 0, 1, &s, &got), 0);
        assert_int_equal(fs_bfree(fs, h, s, got), 0);
        assert_int_equal(fs_stop(fs, h, 0), 0);
    }
    double t2 = t_secs();
    printf("# ialloc+ifree: %.0f pairs/s; balloc+bfree: %.0f pairs/s\n",
           n / (t1 - t0), n / (t2 - t1));
    assert_true(t1 - t0 < 30.0 && t2 - t1 < 30.0);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* test_huge -- a sparse 1 TiB image: runs at the very end, a full bitmap
 * block is skipped, counts survive a remount. */
static void test_huge(void **state)
{
    (void)state;
    struct ubj_bdev *d;
    struct ubj_format_opts o = { .flags = UBJ_FORMAT_ZEROED };
    struct ubj_fs *fs = NULL;
    uint64_t n = 1ULL << 28, s;
    uint32_t got;
    assert_int_equal(ubj_bdev_ram_create(n, &d), 0);
    assert_int_equal(ubj_format(d, &o), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    uint64_t free0 = t_bfree_count(fs), ds = fs->sb.data_start;
    assert_int_equal(t_balloc(fs, 0, 5, &s, &got), 0);
    assert_int_equal(s, ds + 1);
    assert_int_equal(t_balloc(fs, n - 10, 100, &s, &got), 0);
    assert_int_equal(s, n - 10);
    assert_int_equal(got, 10);          /* stops at the end of the image */
    /* fill one whole bitmap block, then allocate across it */
    uint64_t blk0 = (n / 2 / UBJ_BITMAP_BITS) * UBJ_BITMAP_BITS;
    assert_int_equal(t_balloc(fs, blk0, UBJ_EXT_MAX_LEN, &s, &got), 0);
    assert_int_equal(s, blk0);
    assert_int_equal(got, UBJ_BITMAP_BITS);   /* never crosses a bitmap block */
    assert_int_equal(t_balloc(fs, blk0 + 5, 1, &s, &got), 0);
    assert_int_equal(s, blk0 + UBJ_BITMAP_BITS);
    assert_int_equal(t_bfree_count(fs), free0 - 5 - 10 - UBJ_BITMAP_BITS - 1);
    fs = t_remount(fs, d);
    assert_int_equal(t_bfree_count(fs), free0 - 5 - 10 - UBJ_BITMAP_BITS - 1);
    assert_int_equal(t_bfree(fs, blk0, UBJ_BITMAP_BITS + 1), 0);
    assert_int_equal(t_bfree(fs, n - 10, 10), 0);
    assert_int_equal(t_bfree_count(fs), free0 - 5);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contiguous),
        cmocka_unit_test(test_full_small),
        cmocka_unit_test(test_full_multi),
        cmocka_unit_test(test_ialloc),
        cmocka_unit_test(test_bad_frees),
        cmocka_unit_test(test_counts_on_disk),
        cmocka_unit_test(test_huge),
        cmocka_unit_test(test_speed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
