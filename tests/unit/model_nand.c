/*
 * tests/unit/model_nand.c -- raw NAND behind the page-mapped FTL
 * (src/dev/model_nand.c): a page read with its bus transfer and a program,
 * by hand; a write that triggers garbage collection and an erase, by
 * hand; FTL correctness under random writes with verification across GC
 * on a full device (2 KiB SLC pages, 4 KiB and 8 KiB MLC pages), with the
 * mapping checked to be a bijection after every request; wear figures;
 * over-provisioning lowering write amplification; determinism.
 *
 * SLC figures (profiles/nand_slc.txt): a 4 KiB unit is 2 pages of
 * 2048+64 bytes; bus 40 ns/byte -> 84.48 us per page.
 *   unit read    = 2 x (52 + 25 + 84.48) us  = 322.96 us
 *   unit program = 2 x (106 + 84.48 + 200) us = 780.96 us
 *   block erase  = 32 + 1500 us               = 1532 us
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"
#include "ubjfs/ubjfs.h"

#define BS UBJ_BLOCK_SIZE

static unsigned char buf[8 * BS], want[8 * BS];

/* new_nand -- a NAND model over a RAM device of nblocks. */
static struct ubj_bdev *new_nand(const char *profile, uint64_t nblocks)
{
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(nblocks, &ram), 0);
    int rc = ubj_model_create("nand", profile, NULL, ram, &d);
    if (rc != 0)
        fail_msg("ubj_model_create(nand, %s) = %d: %s", profile, rc, ubj_errormsg());
    return d;
}

/* stats -- the model's statistics. */
static struct ubj_model_stats stats(struct ubj_bdev *d)
{
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    return st;
}

/* fill -- the content of block b at version v. */
static void fill(unsigned char *p, uint64_t b, uint32_t v)
{
    for (size_t i = 0; i < BS; i += 8) {
        uint64_t x = (b * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)v << 40) ^ i;
        memcpy(p + i, &x, 8);
    }
}

/* test_page_read -- program and read one unit: the hand figures. */
static void test_page_read(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_nand("slc", 256);
    fill(buf, 5, 1);
    assert_int_equal(ubj_bdev_write(d, 5, 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.service_ns, 780960);
    assert_int_equal(st.flash_programs, 2);
    assert_int_equal(st.driver_ns, 212000);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 5, 1, buf), 0);
    st = stats(d);
    assert_int_equal(st.service_ns, 322960);
    assert_int_equal(st.flash_reads, 2);
    assert_int_equal(st.driver_ns, 104000);
    /* energy: CPU 0.65 W x 104 us + chip 3.3 V x 20 mA x 2 x 109.48 us */
    double e = 0.65 * 104e-6 + 3.3 * 0.020 * 2 * 109.48e-6;
    if (fabs(st.energy_active_j - e) > 1e-12)
        fail_msg("read energy %.12g J, want %.12g J", st.energy_active_j, e);
    /* an unwritten unit is answered by the driver without a flash read */
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 6, 1, buf), 0);
    st = stats(d);
    assert_int_equal(st.flash_reads, 0);
    assert_int_equal(st.service_ns, 52000);
    ubj_bdev_destroy(d);
}

/* test_gc_erase -- 8 units, 8-page blocks (4 units each), no extra OP:
 * 2 data blocks + 3 spare = 5 blocks.  Writes place units so that blocks
 * 0..3 end up full with 1, 1, 1 and 4 valid units and one block free;
 * the next write finds the active block full and one free block, so GC
 * collects block 0 (fewest valid, fewest erases, lowest number): copies
 * unit 3 into the last free block, erases block 0; the host unit follows
 * the copy into that block.
 *   service = read 322.96 + program 780.96 (copy) + erase 1532
 *           + program 780.96 (host) = 3416.88 us */
static void test_gc_erase(void **state)
{
    (void)state;
    struct ubj_bdev *d = new_nand("slc,pages_per_block=8,op_pct=0,check=1", 8);
    assert_int_equal(ubj_bdev_write(d, 0, 8, buf), 0);     /* b0, b1 */
    const uint64_t seq[] = { 0, 1, 4, 5, 2, 6, 0, 4 };      /* b2, b3 */
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(ubj_bdev_write(d, seq[i], 1, buf), 0);
    struct ubj_model_stats st = stats(d);
    assert_int_equal(st.flash_erases, 0);
    assert_int_equal(st.gc_runs, 0);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_write(d, 1, 1, buf), 0);
    st = stats(d);
    assert_int_equal(st.gc_runs, 1);
    assert_int_equal(st.gc_copies, 1);
    assert_int_equal(st.flash_erases, 1);
    assert_int_equal(st.flash_reads, 2);
    assert_int_equal(st.flash_programs, 4);
    assert_int_equal(st.service_ns, 3416880);
    assert_int_equal(st.erase_max, 1);
    assert_int_equal(st.erase_min, 0);
    assert_int_equal(ubj_model_check(d), 0);
    ubj_bdev_destroy(d);
}

/* random_verify -- fill the whole device, then `nops` random writes of
 * 1-4 blocks with reads verifying random blocks, an occasional flush, and
 * a full verification at the end.  The profile has check=1, so every
 * request also verifies the FTL bijection.  Returns the final stats. */
static struct ubj_model_stats random_verify(const char *profile, uint64_t nblocks,
                                            int nops, uint64_t seed)
{
    struct ubj_bdev *d = new_nand(profile, nblocks);
    uint32_t *ver = calloc(nblocks, sizeof *ver);
    assert_non_null(ver);
    for (uint64_t b = 0; b < nblocks; b++) {
        fill(buf, b, 0);
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
    }
    uint64_t x = seed;
    for (int i = 0; i < nops; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t n = 1 + (uint32_t)((x >> 20) % 4);
        uint64_t b = (x >> 33) % (nblocks - n + 1);
        for (uint32_t k = 0; k < n; k++)
            fill(buf + (size_t)k * BS, b + k, ++ver[b + k]);
        assert_int_equal(ubj_bdev_write(d, b, n, buf), 0);
        uint64_t r = (x >> 7) % nblocks;
        assert_int_equal(ubj_bdev_read(d, r, 1, buf), 0);
        fill(want, r, ver[r]);
        if (memcmp(buf, want, BS) != 0)
            fail_msg("block %llu differs after op %d", (unsigned long long)r, i);
        if (i % 97 == 0)
            assert_int_equal(ubj_bdev_flush(d), 0);
    }
    for (uint64_t b = 0; b < nblocks; b++) {
        assert_int_equal(ubj_bdev_read(d, b, 1, buf), 0);
        fill(want, b, ver[b]);
        if (memcmp(buf, want, BS) != 0)
            fail_msg("block %llu differs at the end", (unsigned long long)b);
    }
    assert_int_equal(ubj_model_check(d), 0);
    struct ubj_model_stats st = stats(d);
    free(ver);
    ubj_bdev_destroy(d);
    return st;
}

/* test_ftl_random_slc -- 2 KiB pages, full device, GC many times over. */
static void test_ftl_random_slc(void **state)
{
    (void)state;
    struct ubj_model_stats st = random_verify("slc,check=1", 1024, 6000, 7);
    assert_true(st.gc_runs > 100);
    assert_true(st.gc_copies > 0);
    assert_true(st.flash_erases == st.gc_runs);
    assert_true(st.erase_max >= st.erase_min && st.erase_max > 0);
    assert_true(st.erase_mean >= (double)st.erase_min &&
                st.erase_mean <= (double)st.erase_max);
}

/* test_ftl_random_mlc -- 4 KiB pages and 8 KiB pages (two units per page,
 * buffered; flushes program partial pages). */
static void test_ftl_random_mlc(void **state)
{
    (void)state;
    struct ubj_model_stats st = random_verify("mlc,check=1", 1024, 4000, 11);
    assert_true(st.gc_runs > 0);
    st = random_verify("mlc,page_bytes=8192,spare_bytes=448,check=1", 1024, 4000, 13);
    assert_true(st.gc_runs > 0);
    assert_true(st.gc_copies > 0);
}

/* test_ftl_tiny -- the smallest device: every write is near a GC. */
static void test_ftl_tiny(void **state)
{
    (void)state;
    struct ubj_model_stats st = random_verify("slc,pages_per_block=4,op_pct=0,check=1",
                                              16, 3000, 3);
    assert_true(st.gc_runs > 500);
}

/* write_amp -- (host + GC) units written / host units, random workload. */
static double write_amp(const char *profile)
{
    struct ubj_bdev *d = new_nand(profile, 2048);
    for (uint64_t b = 0; b < 2048; b += 8)
        assert_int_equal(ubj_bdev_write(d, b, 8, buf), 0);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    uint64_t x = 99;
    for (int i = 0; i < 8000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        assert_int_equal(ubj_bdev_write(d, (x >> 33) % 2048, 1, buf), 0);
    }
    struct ubj_model_stats st = stats(d);
    ubj_bdev_destroy(d);
    return (double)(8000 + st.gc_copies) / 8000.0;
}

/* test_overprovisioning -- more spare blocks, fewer GC copies. */
static void test_overprovisioning(void **state)
{
    (void)state;
    double wa7 = write_amp("slc,op_pct=7"), wa50 = write_amp("slc,op_pct=50");
    if (!(wa7 > wa50 && wa50 >= 1.0))
        fail_msg("write amplification op 7%%: %.3f, op 50%%: %.3f", wa7, wa50);
}

/* test_determinism -- identical runs, identical statistics. */
static void test_determinism(void **state)
{
    (void)state;
    struct ubj_model_stats a = random_verify("slc", 512, 1500, 5);
    struct ubj_model_stats b = random_verify("slc", 512, 1500, 5);
    assert_memory_equal(&a, &b, sizeof a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page_read),
        cmocka_unit_test(test_gc_erase),
        cmocka_unit_test(test_ftl_random_slc),
        cmocka_unit_test(test_ftl_random_mlc),
        cmocka_unit_test(test_ftl_tiny),
        cmocka_unit_test(test_overprovisioning),
        cmocka_unit_test(test_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
