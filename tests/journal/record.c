/*
 * tests/journal/record.c -- the write-recording device (src/dev/record.c):
 * pass-through, epochs between flushes, and the crash images it builds:
 * the image at creation, durable writes, the chosen writes of the crash
 * epoch whole, dropped, cut to a prefix of sectors or to a random subset.
 */
#include "jtest.h"

#define RB_N 64u

/* rb_blk -- the content of version v of block b. */
static void rb_blk(uint8_t *buf, uint64_t b, uint64_t v)
{
    jt_fill(buf, JT_BS, b * 100 + v, 0);
}

/* rb_is -- block b of dev holds version v (0: the original, zeros). */
static bool rb_is(struct ubj_bdev *dev, uint64_t b, uint64_t v)
{
    uint8_t got[JT_BS], want[JT_BS];
    assert_int_equal(ubj_bdev_read(dev, b, 1, got), 0);
    if (v == 0)
        memset(want, 0, JT_BS);
    else
        rb_blk(want, b, v);
    return memcmp(got, want, JT_BS) == 0;
}

/* rb_write -- write version v of block b through d. */
static void rb_write(struct ubj_bdev *d, uint64_t b, uint64_t v)
{
    uint8_t buf[JT_BS];
    rb_blk(buf, b, v);
    assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
}

/* test_epochs -- writes and flushes are recorded; epochs split them. */
static void test_epochs(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(RB_N, &ram), 0);
    rb_write(ram, 5, 9);                        /* before recording: original */
    assert_int_equal(ubj_bdev_record_create(ram, &d), 0);
    rb_write(d, 1, 1);
    rb_write(d, 2, 1);
    assert_int_equal(ubj_bdev_flush(d), 0);     /* flush 1 */
    rb_write(d, 1, 2);
    rb_write(d, 5, 1);
    assert_int_equal(ubj_bdev_flush(d), 0);     /* flush 2 */
    rb_write(d, 3, 1);
    assert_int_equal(ubj_bdev_record_writes(d), 5);
    assert_int_equal(ubj_bdev_record_flushes(d), 2);
    uint64_t first, count;
    assert_int_equal(ubj_bdev_record_epoch(d, 0, &first, &count), 0);
    assert_int_equal(first, 0);
    assert_int_equal(count, 2);
    assert_int_equal(ubj_bdev_record_epoch(d, 1, &first, &count), 0);
    assert_int_equal(first, 2);
    assert_int_equal(count, 2);
    assert_int_equal(ubj_bdev_record_epoch(d, 2, &first, &count), 0);
    assert_int_equal(first, 4);
    assert_int_equal(count, 1);
    assert_rc(ubj_bdev_record_epoch(d, 3, &first, &count), -EINVAL);
    uint64_t blk;
    uint32_t n;
    const void *data;
    assert_int_equal(ubj_bdev_record_write_info(d, 3, &blk, &n, &data), 0);
    assert_int_equal(blk, 5);
    assert_int_equal(n, 1);
    uint8_t want[JT_BS];
    rb_blk(want, 5, 1);
    assert_memory_equal(data, want, JT_BS);
    assert_true(rb_is(d, 1, 2));                /* reads pass through */
    assert_true(rb_is(ram, 3, 1));              /* writes too */

    struct ubj_bdev *img;
    assert_int_equal(ubj_bdev_ram_create(RB_N, &img), 0);
    /* crash in epoch 0 dropping everything: the image at creation */
    assert_int_equal(ubj_bdev_record_crash(d, 0, NULL, 0, img), 0);
    assert_true(rb_is(img, 1, 0) && rb_is(img, 2, 0) && rb_is(img, 5, 9));
    /* epoch 1, keeping only its second write */
    struct ubj_rec_choice ch[2] = { { .keep = UBJ_REC_DROP }, { .keep = UBJ_REC_WHOLE } };
    assert_int_equal(ubj_bdev_record_crash(d, 1, ch, 2, img), 0);
    assert_true(rb_is(img, 1, 1) && rb_is(img, 2, 1) && rb_is(img, 5, 1));
    assert_true(rb_is(img, 3, 0));
    /* epoch 2: everything before flush 2 */
    assert_int_equal(ubj_bdev_record_crash(d, 2, NULL, 0, img), 0);
    assert_true(rb_is(img, 1, 2) && rb_is(img, 5, 1) && rb_is(img, 3, 0));
    assert_rc(ubj_bdev_record_crash(d, 3, NULL, 0, img), -EINVAL);
    ubj_bdev_destroy(img);
    ubj_bdev_destroy(d);
}

/* test_torn -- a write cut to a sector prefix or a random sector subset. */
static void test_torn(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *d, *img;
    assert_int_equal(ubj_bdev_ram_create(RB_N, &ram), 0);
    assert_int_equal(ubj_bdev_record_create(ram, &d), 0);
    assert_int_equal(ubj_bdev_ram_create(RB_N, &img), 0);
    rb_write(d, 7, 1);
    assert_int_equal(ubj_bdev_flush(d), 0);
    uint8_t two[2 * JT_BS];
    rb_blk(two, 7, 2);
    rb_blk(two + JT_BS, 8, 2);
    assert_int_equal(ubj_bdev_write(d, 7, 2, two), 0);
    uint8_t v1[JT_BS], got[JT_BS];
    rb_blk(v1, 7, 1);
    struct ubj_rec_choice ch = { .keep = UBJ_REC_PREFIX, .sectors = 3 };
    assert_int_equal(ubj_bdev_record_crash(d, 1, &ch, 1, img), 0);
    assert_int_equal(ubj_bdev_read(img, 7, 1, got), 0);
    assert_memory_equal(got, two, 3 * 512);                 /* new sectors */
    assert_memory_equal(got + 1536, v1 + 1536, JT_BS - 1536); /* old ones */
    assert_true(rb_is(img, 8, 0));
    ch.sectors = 12;                                         /* into block 8 */
    assert_int_equal(ubj_bdev_record_crash(d, 1, &ch, 1, img), 0);
    assert_true(rb_is(img, 7, 2));
    assert_int_equal(ubj_bdev_read(img, 8, 1, got), 0);
    assert_memory_equal(got, two + JT_BS, 4 * 512);
    assert_int_equal(tzero_check(got + 2048, 2048), 2048);
    /* a random subset: each sector old or new, and not all the same */
    unsigned newer = 0, older = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        ch = (struct ubj_rec_choice){ .keep = UBJ_REC_SECTORS, .seed = seed };
        assert_int_equal(ubj_bdev_record_crash(d, 1, &ch, 1, img), 0);
        assert_int_equal(ubj_bdev_read(img, 7, 1, got), 0);
        for (unsigned s = 0; s < 8; s++) {
            bool isnew = memcmp(got + s * 512, two + s * 512, 512) == 0;
            bool isold = memcmp(got + s * 512, v1 + s * 512, 512) == 0;
            assert_true(isnew || isold);
            newer += isnew;
            older += isold;
        }
    }
    assert_true(newer > 8 && older > 8);
    ubj_bdev_destroy(img);
    ubj_bdev_destroy(d);
}

/* test_not_recorder -- the queries refuse other devices. */
static void test_not_recorder(void **state)
{
    (void)state;
    struct ubj_bdev *ram;
    assert_int_equal(ubj_bdev_ram_create(RB_N, &ram), 0);
    uint64_t a, b;
    assert_int_equal(ubj_bdev_record_writes(ram), 0);
    assert_rc(ubj_bdev_record_epoch(ram, 0, &a, &b), -EINVAL);
    assert_rc(ubj_bdev_record_crash(ram, 0, NULL, 0, ram), -EINVAL);
    ubj_bdev_destroy(ram);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epochs),
        cmocka_unit_test(test_torn),
        cmocka_unit_test(test_not_recorder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
