/*
 * tests/unit/model_fua.c -- a FUA write costs each timed model what its
 * profile charges to write through the volatile cache (src/dev/
 * model_hdd.c, model_ssd.c, model_nand.c): the same request on a fresh
 * device, with and without FUA, against the same device with its write
 * cache off.
 *  - hdd:modern7200 (write cache on): a plain write is absorbed by the
 *    cache (overhead + bus); a FUA write costs exactly what it costs with
 *    write_cache=0 (media access).
 *  - ssd:sata (write cache on): FUA adds its bytes at media_write_mb_s:
 *    4096 B / 520 MB/s = 7876.9 ns, rounded 7877; with the cache off FUA
 *    adds nothing.
 *  - nand:mlc,page_bytes=8192,spare_bytes=448 (two 4 KiB units a page,
 *    gathered in a page buffer): a plain 4 KiB write programs nothing, a
 *    FUA one programs its page.
 */
#include "testutil.h"
#include "ubjfs/model.h"

#define BS UBJ_BLOCK_SIZE

static unsigned char buf[BS];

/* write_cost -- on a fresh `kind:profile` over RAM, one write of block
 * 1000 with `flags`: its service time (ns); *programs = flash programs. */
static uint64_t write_cost(const char *kind, const char *profile, uint32_t flags,
                           uint64_t *programs)
{
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(8192, &ram), 0);
    int rc = ubj_model_create(kind, profile, NULL, ram, &d);
    if (rc != 0)
        fail_msg("%s:%s: %d %s", kind, profile, rc, ubj_errormsg());
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_WRITE, 1000, 1, buf);
    r.flags = flags;
    assert_int_equal(ubj_bdev_submit_wait(d, &r), 0);
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    assert_int_equal(st.writes, 1);
    if (programs != NULL)
        *programs = st.flash_programs;
    ubj_bdev_destroy(d);
    return st.service_ns;
}

/* test_hdd_fua -- write-through on the disk. */
static void test_hdd_fua(void **state)
{
    (void)state;
    uint64_t cached = write_cost("hdd", "modern7200", 0, NULL);
    uint64_t fua = write_cost("hdd", "modern7200", UBJ_REQ_FUA, NULL);
    uint64_t through = write_cost("hdd", "modern7200,write_cache=0", 0, NULL);
    /* absorbed: 0.2 ms overhead + 4096 B at 600 MB/s */
    assert_int_equal(cached, 200000 + 6827);
    assert_int_equal(fua, through);
    assert_true(fua > cached + 1000000);     /* a head switch at least */
    assert_int_equal(write_cost("hdd", "modern7200,write_cache=0", UBJ_REQ_FUA,
                                NULL), through);
}

/* test_ssd_fua -- the bytes leave the cache before completion. */
static void test_ssd_fua(void **state)
{
    (void)state;
    uint64_t plain = write_cost("ssd", "sata", 0, NULL);
    uint64_t fua = write_cost("ssd", "sata", UBJ_REQ_FUA, NULL);
    assert_int_equal(fua - plain, 7877);
    assert_int_equal(write_cost("ssd", "sata,write_cache=0", UBJ_REQ_FUA, NULL),
                     write_cost("ssd", "sata,write_cache=0", 0, NULL));
}

/* test_nand_fua -- the page buffer is programmed. */
static void test_nand_fua(void **state)
{
    (void)state;
    const char *p = "mlc,page_bytes=8192,spare_bytes=448";
    uint64_t programs;
    uint64_t plain = write_cost("nand", p, 0, &programs);
    assert_int_equal(programs, 0);
    uint64_t fua = write_cost("nand", p, UBJ_REQ_FUA, &programs);
    assert_int_equal(programs, 1);
    assert_true(fua > plain + 1100000);      /* tPROG 1.1 ms on top */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hdd_fua),
        cmocka_unit_test(test_ssd_fua),
        cmocka_unit_test(test_nand_fua),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
