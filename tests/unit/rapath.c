/*
 * unit/rapath.c -- read-ahead through the real read path (src/fs/rapath.c,
 * file.c, ubj_cache_readahead) on a RAM device, counting device requests
 * and blocks: the hand-computed windows of docs/READAHEAD.md for linux,
 * the linux-2013 difference on random reads, fadvise RANDOM and
 * SEQUENTIAL through a struct ubj_file, truncate invalidating the window,
 * the ra_* accounting of ubj_fs_stats, the oracle and adaptive policies,
 * ubj_drop_caches; and, at the cache, "read-ahead
 * never evicts a dirty, frozen or referenced buffer" and late hits.
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include "fs/fs.h"
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"

#define RA_FILE_PAGES 160u

/* ra_mount -- remount t's device with read path `pol` (cold cache). */
static void ra_mount(struct tfs *t, const char *pol)
{
    if (t->fs != NULL)
        assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .readahead = pol };
    assert_ok(ubj_mount(t->dev, &cfg, &t->fs));
}

/* ra_file -- a file of `pages` pages written in one call (one extent),
 * then a remount with `pol`; its inode number.  The inode is looked at
 * once so that its block is cached, and the device's counters reset. */
static ubj_ino_t ra_file(struct tfs *t, uint32_t pages, const char *pol)
{
    struct ubj_stat st;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "ra", 0644, NULL, &st));
    size_t size = (size_t)pages * UBJ_BS;
    uint8_t *b = malloc(size);
    tpattern_fill(b, size, 3, 0);
    assert_rc(ubj_pwrite(t->fs, st.ino, b, size, 0), (ssize_t)size);
    free(b);
    ra_mount(t, pol);
    assert_ok(ubj_getattr(t->fs, st.ino, &st));
    ubj_bdev_stats_reset(t->dev);
    return st.ino;
}

/* ra_reads -- device read requests since the last reset. */
static uint64_t ra_reads(struct tfs *t)
{
    struct ubj_bdev_stats st;
    ubj_bdev_stats_get(t->dev, &st);
    return st.reads;
}

/* ra_stats -- the mount's counters. */
static struct ubj_fs_stats ra_stats(struct tfs *t)
{
    struct ubj_fs_stats s;
    ubj_fs_stats_get(t->fs, &s);
    return s;
}

/* ra_read_pages -- 4 KiB reads of pages [from, to) by inode number,
 * checking the bytes. */
static void ra_read_pages(struct tfs *t, ubj_ino_t ino, uint64_t from, uint64_t to)
{
    uint8_t buf[UBJ_BS];
    for (uint64_t p = from; p < to; p++) {
        assert_rc(ubj_pread(t->fs, ino, buf, UBJ_BS, (off_t)(p * UBJ_BS)), UBJ_BS);
        assert_int_equal(tpattern_check(buf, UBJ_BS, 3, p * UBJ_BS), UBJ_BS);
    }
}

/* test_sequential -- 4 KiB sequential reads of 128 pages under linux:
 * the windows (0,4) (4,8) (12,16) (28,32) (60,32) (92,32) (124,32)
 * (156,4: clipped at 160) are 8 device requests of 164 - 4 = 160 blocks,
 * against 128 requests under off-page; 128 blocks used, none late.  The
 * same under linux-2013 (sequential reads never go backward). */
static void test_sequential(void **state)
{
    struct tfs *t = TFS(state);
    static const char *const pols[] = { "linux", "linux-2013", "off-page" };
    for (size_t i = 0; i < 3; i++) {
        if (i > 0)
            assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ra"));
        ubj_ino_t ino = ra_file(t, RA_FILE_PAGES, pols[i]);
        ra_read_pages(t, ino, 0, 128);
        struct ubj_fs_stats s = ra_stats(t);
        fprintf(stderr, "  %s: %llu reads, %llu read ahead, %llu used\n", pols[i],
                (unsigned long long)ra_reads(t), (unsigned long long)s.ra_blocks,
                (unsigned long long)s.ra_used);
        bool win = i < 2;
        assert_int_equal(ra_reads(t), win ? 8 : 128);
        assert_int_equal(s.ra_requests, win ? 8 : 0);
        assert_int_equal(s.ra_blocks, win ? 160 : 0);
        assert_int_equal(s.ra_used, win ? 128 : 0);
        assert_int_equal(s.ra_unused, 0);
        assert_int_equal(s.ra_late, 0);
        assert_int_equal(s.ra_unused_bytes, 0);
    }
}

/* test_big_calls -- 128 KiB calls from page 0: (0,64) then (64,32),
 * (96,32), (128,32): 4 requests for 4 calls, all 160 blocks. */
static void test_big_calls(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = ra_file(t, RA_FILE_PAGES, "linux");
    uint8_t *buf = malloc(32 * UBJ_BS);
    for (int c = 0; c < 4; c++)
        assert_rc(ubj_pread(t->fs, ino, buf, 32 * UBJ_BS, (off_t)c * 32 * UBJ_BS),
                  32 * UBJ_BS);
    assert_int_equal(tpattern_check(buf, 32 * UBJ_BS, 3, 96 * UBJ_BS), 32 * UBJ_BS);
    free(buf);
    struct ubj_fs_stats s = ra_stats(t);
    assert_int_equal(ra_reads(t), 4);
    assert_int_equal(s.ra_blocks, 160);
    assert_int_equal(s.ra_used, 128);
}

/* test_random_2013 -- 4 KiB reads of pages 500, 100, 700: linux reads
 * exactly those 3 blocks; linux-2013 takes the backward read at 100 for a
 * sequential miss and reads (100,4): 6 blocks, 3 of them never used and
 * dropped unused at DONTNEED. */
static void test_random_2013(void **state)
{
    struct tfs *t = TFS(state);
    static const char *const pols[] = { "linux", "linux-2013" };
    for (size_t i = 0; i < 2; i++) {
        if (i > 0)
            assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ra"));
        ubj_ino_t ino = ra_file(t, 800, pols[i]);
        static const uint64_t pages[] = { 500, 100, 700 };
        for (int k = 0; k < 3; k++)
            ra_read_pages(t, ino, pages[k], pages[k] + 1);
        struct ubj_file *f;
        assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
        assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_DONTNEED));
        assert_ok(ubj_file_close(f));
        struct ubj_fs_stats s = ra_stats(t);
        fprintf(stderr, "  %s: %llu reads, %llu blocks, %llu unused\n", pols[i],
                (unsigned long long)ra_reads(t), (unsigned long long)s.ra_blocks,
                (unsigned long long)s.ra_unused);
        assert_int_equal(ra_reads(t), 3);
        assert_int_equal(s.ra_blocks, i == 0 ? 3 : 6);
        assert_int_equal(s.ra_used, 3);
        assert_int_equal(s.ra_unused, i == 0 ? 0 : 3);
        assert_int_equal(s.ra_unused_bytes, i == 0 ? 0 : 3 * UBJ_BS);
    }
}

/* test_fadvise -- through a struct ubj_file: 16 KiB calls at pages 0, 4,
 * 8 read (0,8) (init_size(4) = 8, marker at 4), (8,16), (24,32) with
 * NORMAL (each call hits the marker: ramp-up), but exactly (0,4), (4,4),
 * (8,4) with RANDOM; SEQUENTIAL doubles the
 * largest window (128 KiB calls: (0,64) merged, then 64-page windows). */
static void test_fadvise(void **state)
{
    struct tfs *t = TFS(state);
    static const struct { int adv; uint64_t reads, blocks; } cases[] = {
        { UBJ_FADV_NORMAL, 3, 56 }, { UBJ_FADV_RANDOM, 3, 12 },
    };
    uint8_t *buf = malloc(32 * UBJ_BS);
    for (size_t i = 0; i < 2; i++) {
        if (i > 0)
            assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ra"));
        ubj_ino_t ino = ra_file(t, RA_FILE_PAGES, "linux");
        struct ubj_file *f;
        assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
        assert_ok(ubj_fadvise(f, 0, 0, cases[i].adv));
        for (int c = 0; c < 3; c++)
            assert_rc(ubj_file_pread(f, buf, 4 * UBJ_BS, (off_t)c * 4 * UBJ_BS),
                      4 * UBJ_BS);
        assert_int_equal(tpattern_check(buf, 4 * UBJ_BS, 3, 8 * UBJ_BS), 4 * UBJ_BS);
        struct ubj_fs_stats s = ra_stats(t);
        fprintf(stderr, "  advice %d: %llu reads, %llu blocks\n", cases[i].adv,
                (unsigned long long)ra_reads(t), (unsigned long long)s.ra_blocks);
        assert_int_equal(ra_reads(t), cases[i].reads);
        assert_int_equal(s.ra_blocks, cases[i].blocks);
        assert_ok(ubj_file_close(f));
    }
    /* SEQUENTIAL: ra_pages 64; 128 KiB calls: init_size(32, 64) = 64 all
     * asked... (0,64) async 32 -> marker 32; call 2 hits it: (64,64) */
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ra"));
    ubj_ino_t ino = ra_file(t, RA_FILE_PAGES, "linux");
    struct ubj_file *f;
    assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
    assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_SEQUENTIAL));
    for (int c = 0; c < 2; c++)
        assert_rc(ubj_file_pread(f, buf, 32 * UBJ_BS, (off_t)c * 32 * UBJ_BS),
                  32 * UBJ_BS);
    assert_int_equal(ra_reads(t), 2);
    assert_int_equal(ra_stats(t).ra_blocks, 128);
    assert_ok(ubj_file_close(f));
    free(buf);
}

/* test_truncate -- truncate ends the window: after reads of pages 0 and 1
 * the stream expects page 12 next (window (4,8)), so with the cache
 * dropped a read of page 12 ramps up to (12,16), all ahead and starting
 * at the page, so merged with the next: (12,48); after a truncate (that
 * keeps page 12) the same read starts afresh and reads its page alone. */
static void test_truncate(void **state)
{
    struct tfs *t = TFS(state);
    for (int trunc = 0; trunc < 2; trunc++) {
        if (trunc)
            assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ra"));
        ubj_ino_t ino = ra_file(t, RA_FILE_PAGES, "linux");
        ra_read_pages(t, ino, 0, 2);
        if (trunc) {
            struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = 100 * UBJ_BS };
            assert_ok(ubj_setattr(t->fs, ino, &sa, NULL));
        }
        struct ubj_file *f;
        assert_ok(ubj_file_open(t->fs, ino, O_RDONLY, &f));
        assert_ok(ubj_fadvise(f, 0, 0, UBJ_FADV_DONTNEED));
        assert_ok(ubj_file_close(f));
        uint64_t before = ra_stats(t).ra_blocks;
        ra_read_pages(t, ino, 12, 13);
        uint64_t got = ra_stats(t).ra_blocks - before;
        fprintf(stderr, "  %s: page 12 read %llu blocks\n",
                trunc ? "after truncate" : "no truncate", (unsigned long long)got);
        assert_int_equal(got, trunc ? 1 : 48);
    }
}

/* test_policy_names -- linux[:KIB] and linux-2013 mount; bad windows and
 * names do not. */
static void test_policy_names(void **state)
{
    struct tfs *t = TFS(state);
    ra_mount(t, "linux:256");
    assert_int_equal(t->fs->ra_pages, 64);
    ra_mount(t, "linux-2013");
    assert_int_equal(t->fs->ra_pages, FS_RA_DEFAULT_PAGES);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    static const char *const bad[] = { "linux:7", "oracle:64", "adaptive:3", "linuxx" };
    for (size_t i = 0; i < 4; i++) {
        struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .readahead = bad[i] };
        assert_rc(ubj_mount(t->dev, &cfg, &t->fs), -EINVAL);
    }
    ra_mount(t, NULL);
}

/* ra_future_bits -- the oracle's future for the tests: a page bitmap. */
static int ra_future_bits(void *ctx, ubj_ino_t ino, uint64_t page)
{
    (void)ino;
    const uint8_t *bits = ctx;
    return page < 1024 && (bits[page / 8] >> (page % 8)) & 1;
}

/* test_oracle -- the oracle reads, at a miss, every later page the future
 * reads, in one request: pages 0..63 of a sequential trace in 1 request
 * of 64 blocks (none wasted); the random trace 500, 100, 700 its 3 pages;
 * without ra_future the mount is refused. */
static void test_oracle(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = ra_file(t, 800, NULL);
    uint8_t bits[128] = { 0 };
    for (int p = 0; p < 64; p++)
        bits[p / 8] |= (uint8_t)(1u << (p % 8));
    for (int round = 0; round < 2; round++) {
        assert_ok(ubj_unmount(t->fs));
        t->fs = NULL;
        struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .readahead = "oracle",
                                  .ra_future = ra_future_bits, .ra_future_ctx = bits };
        assert_ok(ubj_mount(t->dev, &cfg, &t->fs));
        struct ubj_stat st;
        assert_ok(ubj_getattr(t->fs, ino, &st));
        ubj_bdev_stats_reset(t->dev);
        static const uint64_t rnd[] = { 500, 100, 700 };
        for (int k = 0; k < (round ? 3 : 64); k++)
            ra_read_pages(t, ino, round ? rnd[k] : (uint64_t)k, (round ? rnd[k] : (uint64_t)k) + 1);
        struct ubj_fs_stats s = ra_stats(t);
        assert_int_equal(ra_reads(t), round ? 3 : 1);
        assert_int_equal(s.ra_blocks, round ? 3 : 64);
        assert_int_equal(s.ra_used, s.ra_blocks);
        memset(bits, 0, sizeof bits);
        for (int k = 0; k < 3; k++)
            bits[rnd[k] / 8] |= (uint8_t)(1u << (rnd[k] % 8));
    }
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .readahead = "oracle" };
    assert_rc(ubj_mount(t->dev, &cfg, &t->fs), -EINVAL);
    ra_mount(t, NULL);
}

/* ra_on_model -- the file of ra_file (written on the RAM device), then the
 * device under model kind:profile, mounted with pol. */
static ubj_ino_t ra_on_model(struct tfs *t, const char *kind, const char *prof,
                               const char *pol, uint32_t pages)
{
    ubj_ino_t ino = ra_file(t, pages, NULL);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    struct ubj_bdev *m;
    assert_ok(ubj_model_create(kind, prof, NULL, t->dev, &m));
    t->dev = m;
    ra_mount(t, pol);
    struct ubj_stat st;
    assert_ok(ubj_getattr(t->fs, ino, &st));
    ubj_bdev_stats_reset(t->dev);
    return ino;
}

/* ra_drop_model -- unmount, destroy t's model device and keep the RAM
 * device under it; remount with the default policy and remove "ra". */
static void ra_drop_model(struct tfs *t)
{
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    if (ubj_model_is_model(t->dev)) {
        struct ubj_bdev *ram = t->dev->lower;   /* the model goes, RAM stays */
        t->dev->lower = NULL;
        ubj_bdev_destroy(t->dev);
        t->dev = ram;
    }
    ra_mount(t, NULL);
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "ra"));
}

/* One adaptive case: 4 KiB reads of pages 0, step, 2 step ... below 128
 * on a device (kind NULL: the plain RAM device), and what the device
 * then did. */
struct ra_adcase {
    const char *kind, *prof;
    unsigned step;
    uint64_t blocks, reads;
    bool gated;
    uint32_t pages, upto;   /* the file's pages and the reads' end (0: 160, 128) */
    uint32_t call;          /* pages per call (0: 1) */
};

/* ra_adaptive_case -- run one case; returns whether it came out as
 * expected (printing what it did). */
static bool ra_adaptive_case(struct tfs *t, const struct ra_adcase *k)
{
    ubj_ino_t ino;
    uint32_t pages = k->pages ? k->pages : RA_FILE_PAGES, upto = k->upto ? k->upto : 128;
    if (k->kind != NULL) {
        ino = ra_on_model(t, k->kind, k->prof, "adaptive", pages);
    } else {
        ino = ra_file(t, pages, "adaptive");
    }
    uint32_t call = k->call ? k->call : 1;
    uint8_t *buf = malloc((size_t)call * UBJ_BS);
    assert_non_null(buf);
    for (uint64_t p = 0; p < upto; p += k->step) {
        size_t len = (size_t)call * UBJ_BS;
        assert_rc(ubj_pread(t->fs, ino, buf, len, (off_t)(p * UBJ_BS)), (ssize_t)len);
        assert_int_equal(tpattern_check(buf, len, 3, p * UBJ_BS), len);
    }
    free(buf);
    struct ubj_fs_stats s = ra_stats(t);
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(t->dev, &ds);
    fprintf(stderr, "  %s:%s step %u: %llu reads, %llu blocks, %llu refused\n",
            k->kind ? k->kind : "ram", k->prof ? k->prof : "-", k->step,
            (unsigned long long)ds.reads, (unsigned long long)(ds.bytes_read / UBJ_BS),
            (unsigned long long)t->fs->ra_gated);
    return ds.bytes_read == k->blocks * UBJ_BS && ds.reads == k->reads &&
           (t->fs->ra_gated > 0) == k->gated && (k->step > 1 || s.ra_unused == 0);
}

/* The cases (docs/READAHEAD.md, "The adaptive policy"): with the cost the
 * model declares adaptive never explores.  ssd:emmc (a 74.5 us, b 16.4
 * us): sequential, linux's windows from the first call, the cap grown to
 * 64 pages (8 a / b = 36): 160 blocks in 6 requests; strided (every
 * other page, r = 1, gap 1: u = 1/2, gain 37 us > 2 x loss 16.4 us) it
 * reads the skipped pages too, in windows: 128 blocks in 7 requests.
 * nand:slc (a = 0): every window refused, the calls' pages alone: 128
 * and 64 requests of one block.  hdd:modern7200 with the drive's
 * read-ahead off (a sequential follow-on costs a turn, 8.3 ms, against
 * 29 us a block): a 160-page file read from its start is read whole in
 * one request (the small-file rule: 160 pages are within the 256-page
 * window that cost calls for); reading 512 pages of a 1024-page file,
 * once a window was used whole the cap grows to 256 pages, past
 * linux's 32, and the ramp doubles on past it: 1020 blocks in 9 requests
 * (linux's 32-page windows take 19).  A plain RAM device (no model, no
 * cost, no clock): linux's windows, 160 blocks in 8 requests.  128 KiB
 * calls every 256 KiB on ssd:emmc: the first call is taken for a stride
 * of its own size (u = 1/2: 1.2 us gained a page against 8.2 us lost)
 * but reads half its window, to see; the second call's gap of 32 pages
 * confirms the stride and nothing beyond the calls is read: 112 blocks
 * in 3 requests (linux: the skipped pages too). */
static const struct ra_adcase ra_adcases[] = {
    { "ssd", "emmc", 1, 160, 6, false, 0, 0, 0 },
    { "ssd", "emmc", 2, 160, 7, false, 0, 0, 0 },
    { "nand", "slc", 1, 128, 128, true, 0, 0, 0 },
    { "nand", "slc", 2, 64, 64, true, 0, 0, 0 },
    { "hdd", "modern7200,readahead_sectors=0", 1, 160, 1, false, 0, 0, 0 },
    { "hdd", "modern7200,readahead_sectors=0", 1, 1020, 9, false, 1024, 512, 0 },
    { NULL, NULL, 1, 160, 8, false, 0, 0, 0 },
    { "ssd", "emmc", 64, 112, 3, true, 0, 160, 32 },
};
#define RA_NADCASES (sizeof ra_adcases / sizeof ra_adcases[0])

/* test_adaptive -- every case of ra_adcases as expected. */
static void test_adaptive(void **state)
{
    struct tfs *t = TFS(state);
    for (size_t i = 0; i < RA_NADCASES; i++) {
        if (i > 0)
            ra_drop_model(t);
        assert_true(ra_adaptive_case(t, &ra_adcases[i]));
    }
}

/* test_adaptive_cache_share -- adaptive:KIB never reads ahead more than
 * an eighth of the cache at once (RA_CACHE_SHARE, raadapt.c): a 512-page
 * file read sequentially on ssd:emmc under adaptive:8192 with a 256-buffer
 * cache takes windows of at most 32 pages, so at most about one window is
 * evicted unread and read again (without the bound the windows reach the
 * whole cache and 2-5 times as much is; a break test found adaptive:8192
 * on an 8 MiB file 1.7x slower than linux, adaptive:16384 on a 64 MiB
 * one 3.3x). */
static void test_adaptive_cache_share(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = ra_on_model(t, "ssd", "emmc", "adaptive:8192", 512);
    assert_ok(ubj_unmount(t->fs));
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .readahead = "adaptive:8192",
                              .cache_blocks = 256 };
    assert_ok(ubj_mount(t->dev, &cfg, &t->fs));
    struct ubj_stat st;
    assert_ok(ubj_getattr(t->fs, ino, &st));
    ubj_bdev_stats_reset(t->dev);
    uint8_t buf[UBJ_BS];
    for (uint64_t p = 0; p < 512; p++)
        assert_rc(ubj_pread(t->fs, ino, buf, UBJ_BS, (off_t)(p * UBJ_BS)), UBJ_BS);
    struct ubj_fs_stats s = ra_stats(t);
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(t->dev, &ds);
    fprintf(stderr, "  adaptive:8192, 256 buffers: %llu reads, %llu blocks, %llu unused\n",
            (unsigned long long)ds.reads, (unsigned long long)(ds.bytes_read / UBJ_BS),
            (unsigned long long)s.ra_unused);
    /* at most one window's worth read again after its eviction (measured:
     * 33 blocks; 77 with windows up to the whole cache, 152 unbounded) */
    assert_true(ds.bytes_read / UBJ_BS <= 512 + 256 / 8 + 1);
    assert_true(s.ra_unused <= 256 / 8 + 1);
    ra_drop_model(t);
}

/* test_broken_nocost -- the broken variant ra-no-cost (adaptive ignores
 * the declared cost and explores): the cases on ssd:emmc and nand:slc
 * are caught. */
static void test_broken_nocost(void **state)
{
#if UBJ_TEST_HOOKS
    struct tfs *t = TFS(state);
    fs_ra_test_break_nocost(true);
    unsigned caught = 0;
    for (size_t i = 0; i < 4; i++) {
        if (i > 0)
            ra_drop_model(t);
        caught += !ra_adaptive_case(t, &ra_adcases[i]);
    }
    fs_ra_test_break_nocost(false);
    assert_int_equal(caught, 4);
#else
    (void)state;
    skip();   /* the broken variant is compiled into test builds only */
#endif
}

/* ra_layout_case -- a fragmented file: "ra" and "rb" written a page at a
 * time in turn (so ra's pages lie every other block), then the device
 * under hdd:modern7200 with its read-ahead off, adaptive; 4 KiB reads of
 * ra's pages 100, 50, 10 (random: the calls' pages alone, each timed:
 * the stream's measured miss cost) and then 0 (the start of the file: an
 * initial window of 4 pages).  Device read requests. */
static uint64_t ra_layout_case(struct tfs *t)
{
    struct ubj_stat sa, sb;
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "ra", 0644, NULL, &sa));
    assert_ok(ubj_create(t->fs, UBJ_ROOT_INO, "rb", 0644, NULL, &sb));
    uint8_t *b = malloc(128 * UBJ_BS);
    assert_non_null(b);
    tpattern_fill(b, 128 * UBJ_BS, 3, 0);
    for (size_t p = 0; p < 128; p++) {
        off_t off = (off_t)(p * UBJ_BS);
        assert_rc(ubj_pwrite(t->fs, sa.ino, b + p * UBJ_BS, UBJ_BS, off), UBJ_BS);
        assert_rc(ubj_pwrite(t->fs, sb.ino, b + p * UBJ_BS, UBJ_BS, off), UBJ_BS);
        assert_ok(ubj_sync(t->fs));
    }
    free(b);
    assert_ok(ubj_unmount(t->fs));
    t->fs = NULL;
    struct ubj_bdev *m;
    assert_ok(ubj_model_create("hdd", "modern7200,readahead_sectors=0", NULL, t->dev, &m));
    t->dev = m;
    ra_mount(t, "adaptive");
    assert_ok(ubj_getattr(t->fs, sa.ino, &sa));
    ubj_bdev_stats_reset(t->dev);
    static const uint64_t pages[] = { 100, 50, 10, 0 };
    for (size_t i = 0; i < 4; i++)
        ra_read_pages(t, sa.ino, pages[i], pages[i] + 1);
    uint64_t reads = ra_reads(t);
    fprintf(stderr, "  fragmented file: %llu reads\n", (unsigned long long)reads);
    ra_drop_model(t);
    assert_ok(ubj_unlink(t->fs, UBJ_ROOT_INO, "rb"));
    return reads;
}

/* test_adaptive_layout -- at page 0 of the fragmented file the gate keeps
 * the initial window and the small-file rule the rest of the file (128
 * pages are within the 256-page window the cost calls for), but its pages
 * lie every other block: one request each, a near follow-on costing a
 * turn (8.4 ms declared) against a measured miss of a few ms, so at most
 * the first stretch is read: 5 requests in all.  The broken variant
 * ra-no-layout (the window priced as one request) reads the whole file in
 * 126 requests of one block after the 3 random calls: 129. */
static void test_adaptive_layout(void **state)
{
    struct tfs *t = TFS(state);
    assert_int_equal(ra_layout_case(t), 5);
#if UBJ_TEST_HOOKS
    fs_ra_test_break_nolayout(true);
    uint64_t broken = ra_layout_case(t);
    fs_ra_test_break_nolayout(false);
    assert_int_equal(broken, 129);
#endif
}

/* ra_nb_case -- a 1024-page file on kind:prof under adaptive, 4 KiB reads
 * of the `n` pages in `pages` by inode number; blocks the device read
 * (*reads: its requests). */
static uint64_t ra_nb_case(struct tfs *t, const char *kind, const char *prof,
                           const uint64_t *pages, size_t n, uint64_t *reads)
{
    ubj_ino_t ino = ra_on_model(t, kind, prof, "adaptive", 1024);
    for (size_t i = 0; i < n; i++)
        ra_read_pages(t, ino, pages[i], pages[i] + 1);
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(t->dev, &ds);
    *reads = ds.reads;
    fprintf(stderr, "  %s:%s, %zu jumps: %llu reads, %llu blocks\n", kind, prof, n,
            (unsigned long long)ds.reads, (unsigned long long)(ds.bytes_read / UBJ_BS));
    ra_drop_model(t);
    return ds.bytes_read / UBJ_BS;
}

/* test_adaptive_neighbours -- adaptive's bets on a small random read's
 * neighbours (raadapt.c, ra_nb_len, ra_nb_p).  On hdd:modern7200 (a far
 * request costs milliseconds, a block 29 us): reads of pages 900, 100,
 * 600, 300 and then 101, 601, 301 -- every call a jump -- bet on the page
 * after each jump from the second on (the first call has no past), at the
 * prior use of 1/4: 4 requests of 7 blocks, and the last three reads are
 * hits (linux, and adaptive before the bets: 7 requests).  On ssd:sata (b
 * / (a + b) = 0.076) 64 jumps over even pages and then their 64 odd
 * neighbours, in the same order: each bet is got 63 calls after it was
 * read; the censoring-aware estimate counts a bet not yet got as pending
 * and bets at every jump -- 64 requests, the odd reads all hits -- where
 * the broken variant ra-nb-lag (a bet not yet got counted unused, the
 * estimate before it) stops after 10 pages: 100 or more (65 against 118).
 * 256 jumps over even pages whose neighbours are never read: the exposure
 * of the unused bets brings the estimate below the break-even and the
 * stream stops betting -- at most 100 blocks beyond the 256 (74); the
 * broken variant ra-nb-u (the bets priced by the stream's window use u,
 * which stays 1 on a stream with no window: the throw-away variant of
 * docs/READAHEAD.md, which made SQLite point queries 1.19x slower) bets at
 * every jump: 200 or more. */
static void test_adaptive_neighbours(void **state)
{
    struct tfs *t = TFS(state);
    static const uint64_t later[] = { 900, 100, 600, 300, 101, 601, 301 };
    uint64_t reads, even[256], late[128];
    assert_int_equal(ra_nb_case(t, "hdd", "modern7200", later, 7, &reads), 7);
    assert_int_equal(reads, 4);
    for (size_t i = 0; i < 256; i++)
        even[i] = (i * 778) % 1024;   /* each 778 on or 246 back: a jump */
    even[0] = 2;   /* page 0 would start a window */
    for (size_t i = 0; i < 64; i++) {
        late[i] = even[i];
        late[64 + i] = even[i] + 1;   /* the neighbour, 63 calls later */
    }
    ra_nb_case(t, "ssd", "sata", late, 128, &reads);
    assert_true(reads <= 66);
    uint64_t blocks = ra_nb_case(t, "ssd", "sata", even, 256, &reads);
    assert_true(blocks >= 256 && blocks <= 256 + 100);
#if UBJ_TEST_HOOKS
    fs_ra_test_break_nblag(true);
    ra_nb_case(t, "ssd", "sata", late, 128, &reads);
    fs_ra_test_break_nblag(false);
    assert_true(reads >= 100);
    fs_ra_test_break_nbu(true);
    uint64_t broken = ra_nb_case(t, "ssd", "sata", even, 256, &reads);
    fs_ra_test_break_nbu(false);
    assert_true(broken >= 256 + 200);
#endif
}

/* test_read_cost -- ubj_model_read_cost: the profiles' figures (ssd:emmc
 * 74.5 us + 16.4 us a block; nand:slc no per-request term, 323 us a
 * block; hdd:modern7200 with its read-ahead off: a sequential follow-on
 * a turn, 8.33 ms, with it on a buffer hit, far more than either),
 * forwarded through a wrapper above the model, -EOPNOTSUPP on a plain
 * device, -EINVAL on NULL. */
static void test_read_cost(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_model_rcost k;
    assert_rc(ubj_model_read_cost(t->dev, 0, &k), -EOPNOTSUPP);
    assert_rc(ubj_model_read_cost(NULL, 0, &k), -EINVAL);
    static const struct { const char *kind, *prof; double a0_us, afar_us, b_us; } cases[] = {
        { "ssd", "emmc", 74.5, 74.5, 16.4 },
        { "nand", "slc", 0, 0, 323.0 },
        { "hdd", "modern7200,readahead_sectors=0", 8333.3, -1, 28.8 },
    };
    for (size_t i = 0; i < 3; i++) {
        struct ubj_bdev *ram, *m, *top;
        assert_ok(ubj_bdev_ram_create(1024, &ram));
        assert_ok(ubj_model_create(cases[i].kind, cases[i].prof, NULL, ram, &m));
        assert_ok(ubj_bdev_fault_create(m, &top));
        assert_ok(ubj_model_read_cost(top, 0, &k));
        fprintf(stderr, "  %s:%s a(0) %.1f us, b %.1f us\n", cases[i].kind, cases[i].prof,
                k.a_ns / 1e3, k.b_ns / 1e3);
        assert_true(fabs(k.a_ns / 1e3 - cases[i].a0_us) <= 0.02 * cases[i].a0_us + 0.1);
        assert_true(fabs(k.b_ns / 1e3 - cases[i].b_us) <= 0.05 * cases[i].b_us);
        double a0 = k.a_ns;
        assert_ok(ubj_model_read_cost(top, UBJ_MODEL_GAP_FAR, &k));
        if (cases[i].afar_us >= 0)
            assert_true(fabs(k.a_ns / 1e3 - cases[i].afar_us) <= 0.1);
        else
            assert_true(k.a_ns > a0 / 2 && k.a_ns > 100 * k.b_ns);   /* seek + half a turn */
        ubj_bdev_destroy(top);
    }
}

/* test_drop_caches -- ubj_drop_caches: a cached file reads from the device
 * again afterwards, a dirty block stays cached (read without a device
 * read), NULL is -EINVAL. */
static void test_drop_caches(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = ra_file(t, 16, "off");
    ra_read_pages(t, ino, 0, 16);
    uint64_t cold = ra_reads(t);
    assert_true(cold > 0);
    uint8_t b[UBJ_BS];
    memset(b, 0x5a, sizeof b);
    assert_rc(ubj_pwrite(t->fs, ino, b, UBJ_BS, 20 * UBJ_BS), UBJ_BS);   /* dirty */
    ubj_bdev_stats_reset(t->dev);
    ra_read_pages(t, ino, 0, 16);
    assert_int_equal(ra_reads(t), 0);   /* all cached */
    assert_ok(ubj_drop_caches(t->fs));
    ra_read_pages(t, ino, 0, 16);
    assert_int_equal(ra_reads(t), cold);
    ubj_bdev_stats_reset(t->dev);
    assert_rc(ubj_pread(t->fs, ino, b, UBJ_BS, 20 * UBJ_BS), UBJ_BS);
    assert_int_equal(b[7], 0x5a);
    assert_int_equal(ra_reads(t), 0);   /* the dirty block stayed */
    assert_rc(ubj_drop_caches(NULL), -EINVAL);
}

/* ---- at the cache ---------------------------------------------------------- */


#define RC_NBUFS 128u   /* a read-ahead call reads at most 16 */

struct rc_env { struct ubj_bdev *dev; struct ubj_cache *c; };

static void rc_make(struct rc_env *e)
{
    assert_ok(ubj_bdev_ram_create(1024, &e->dev));
    uint8_t blk[4096];
    for (uint64_t b = 0; b < 1024; b++) {
        memset(blk, (int)(b & 0xff), sizeof blk);
        assert_ok(ubj_bdev_write(e->dev, b, 1, blk));
    }
    struct ubj_cache_config cfg = { .nbufs = RC_NBUFS };
    assert_ok(ubj_cache_create(e->dev, &cfg, &e->c));
}

static void rc_free(struct rc_env *e)
{
    ubj_cache_destroy(e->c);
    ubj_bdev_destroy(e->dev);
}

/* test_never_evicts -- a full cache of 128 buffers: 70 DIRTY, 30 FROZEN,
 * 20 referenced CLEAN, 8 CLEAN unreferenced: read-ahead of 100 blocks
 * reads only into the 8 clean unreferenced ones (one request), writes
 * nothing, and every other buffer keeps its block and state. */
static void test_never_evicts(void **state)
{
    (void)state;
    struct rc_env e;
    rc_make(&e);
    struct ubj_buf *held[20], *b;
    for (uint64_t k = 0; k < RC_NBUFS; k++) {
        assert_ok(ubj_cache_get(e.c, k, 0, &b));
        if (k < 70)
            ubj_cache_mark_dirty(e.c, b, UBJ_KIND_DATA, 1);
        else if (k < 100) {
            ubj_cache_mark_dirty(e.c, b, UBJ_KIND_DATA, 1);
            ubj_cache_set_state(e.c, b, UBJ_BUF_FROZEN, 1);
        }
        if (k >= 100 && k < 120)
            held[k - 100] = b;
        else
            ubj_cache_put(e.c, b);
    }
    ubj_bdev_stats_reset(e.dev);
    bool dropped;
    int n = ubj_cache_readahead(e.c, 500, 100, UINT64_MAX, NULL, &dropped);
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(e.dev, &ds);
    fprintf(stderr, "  read ahead %d blocks, %llu writes\n", n,
            (unsigned long long)ds.writes);
    assert_int_equal(n, 8);
    assert_int_equal(ds.writes, 0);
    assert_int_equal(ds.reads, 1);
    for (uint64_t k = 0; k < 120; k++) {
        assert_ok(ubj_cache_lookup(e.c, k, &b));
        struct ubj_buf_view v = ubj_cache_peek(e.c, b);
        assert_int_equal(v.state, k < 70 ? UBJ_BUF_DIRTY : k < 100 ? UBJ_BUF_FROZEN
                                                                : UBJ_BUF_CLEAN);
        ubj_cache_put(e.c, b);
    }
    for (int i = 0; i < 20; i++)
        ubj_cache_put(e.c, held[i]);
    for (uint64_t k = 500; k < 508; k++) {   /* the ones it read: right bytes */
        assert_ok(ubj_cache_lookup(e.c, k, &b));
        assert_int_equal(b->data[100], (uint8_t)(k & 0xff));
        ubj_cache_put(e.c, b);
    }
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(e.c, &cs);
    assert_int_equal(cs.ra_blocks, 8);
    assert_int_equal(cs.ra_used, 8);
    /* the frozen ones must go before destroy's checks: forget the dirty */
    for (uint64_t k = 70; k < 100; k++) {
        assert_ok(ubj_cache_lookup(e.c, k, &b));
        ubj_cache_set_state(e.c, b, UBJ_BUF_FREE, 0);
        ubj_cache_put(e.c, b);
    }
    rc_free(&e);
}

#if UBJ_TEST_HOOKS   /* the unlocked-read hook parks the read-ahead */
/* The late-hit test: the read-ahead's device read is parked (the cache's
 * unlocked-read hook) until another thread's get of one of its blocks is
 * waiting for it (ra_late counted), so the get is late by construction. */
struct rc_late {
    struct rc_env *e;
    pthread_t getter;
    uint8_t byte;
    int rc;
};

static void *rc_getter(void *arg)
{
    struct rc_late *l = arg;
    struct ubj_buf *b;
    l->rc = ubj_cache_get(l->e->c, 603, 0, &b);
    if (l->rc == 0) {
        l->byte = b->data[7];
        ubj_cache_put(l->e->c, b);
    }
    return NULL;
}

static void rc_late_hook(void *arg, struct ubj_cache *c, uint64_t blkno)
{
    struct rc_late *l = arg;
    assert_int_equal(blkno, 600);   /* one request: one call of the hook */
    assert_int_equal(pthread_create(&l->getter, NULL, rc_getter, l), 0);
    for (;;) {   /* until the getter waits for block 603's read */
        struct ubj_cache_stats cs;
        ubj_cache_stats_get(c, &cs);
        if (cs.ra_late > 0)
            break;
        sched_yield();
    }
}

/* test_late -- a get of a block whose read-ahead is in flight waits for
 * it and counts one late hit (and the block used); the others unused
 * once dropped. */
static void test_late(void **state)
{
    (void)state;
    struct rc_env e;
    rc_make(&e);
    struct rc_late l = { .e = &e };
    pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
    ubj_cache_test_read_hook(rc_late_hook, &l);
    pthread_mutex_lock(&outer);
    bool dropped;
    int n = ubj_cache_readahead(e.c, 600, 8, UINT64_MAX, &outer, &dropped);
    pthread_mutex_unlock(&outer);
    ubj_cache_test_read_hook(NULL, NULL);
    assert_int_equal(n, 8);
    assert_true(dropped);
    assert_int_equal(pthread_join(l.getter, NULL), 0);
    assert_int_equal(l.rc, 0);
    assert_int_equal(l.byte, 603 & 0xff);
    ubj_cache_invalidate(e.c);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(e.c, &cs);
    assert_int_equal(cs.ra_late, 1);
    assert_int_equal(cs.ra_used, 1);
    assert_int_equal(cs.ra_unused, 7);
    assert_int_equal(cs.ra_reads, 1);
    rc_free(&e);
}
#else
static void test_late(void **state)
{
    (void)state;
    fprintf(stderr, "  skipped: built without UBJ_TEST_HOOKS (no read hook to park "
            "a read-ahead with)\n");
    skip();
}
#endif

/* test_marker -- the marker goes on the block asked for, only if this
 * call reads it, and ubj_cache_ra_probe takes it once; a block read
 * ahead is UBJ_RA_UNUSED until a get takes it (adaptive's view of a
 * window's fate). */
static void test_marker(void **state)
{
    (void)state;
    struct rc_env e;
    rc_make(&e);
    bool dropped;
    const unsigned ra = UBJ_RA_CACHED | UBJ_RA_UNUSED;
    assert_int_equal(ubj_cache_readahead(e.c, 10, 4, 12, NULL, &dropped), 4);
    assert_int_equal(ubj_cache_ra_probe(e.c, 11, true), ra);
    assert_int_equal(ubj_cache_ra_probe(e.c, 12, false), ra | UBJ_RA_MARKED);
    assert_int_equal(ubj_cache_ra_probe(e.c, 12, true), ra | UBJ_RA_MARKED);
    assert_int_equal(ubj_cache_ra_probe(e.c, 12, true), ra);
    assert_int_equal(ubj_cache_ra_probe(e.c, 20, true), 0);
    /* already cached: neither read again nor marked */
    assert_int_equal(ubj_cache_readahead(e.c, 10, 4, 11, NULL, &dropped), 0);
    assert_int_equal(ubj_cache_ra_probe(e.c, 11, false), ra);
    struct ubj_buf *b;
    assert_ok(ubj_cache_get(e.c, 11, 0, &b));   /* used: no longer unused */
    ubj_cache_put(e.c, b);
    assert_int_equal(ubj_cache_ra_probe(e.c, 11, false), UBJ_RA_CACHED);
    rc_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sequential, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_big_calls, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_random_2013, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_fadvise, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_truncate, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_policy_names, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_oracle, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_adaptive, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_cache_share, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_broken_nocost, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_layout, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_adaptive_neighbours, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_read_cost, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_drop_caches, tfs_setup, tfs_teardown),
        cmocka_unit_test(test_never_evicts),
        cmocka_unit_test(test_late),
        cmocka_unit_test(test_marker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
