/*
 * tests/unit/overlay.c -- unit tests of the overlay family
 * (include/ubjfs/bdev.h): the copy-on-write memory overlay (src/dev/cow.c)
 * and the read-only map overlay (src/dev/map.c), and that every device
 * says what it is through ubj_bdev_kind / ubj_bdev_map_owner (no caller
 * compares ops tables).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include "ubjfs/bdev.h"
#include "ubjfs/nvm.h"
#include "ubjfs/ubjfs.h"

#define BS UBJ_BLOCK_SIZE

/* fill -- every byte of block b of dev = val. */
static void fill(struct ubj_bdev *dev, uint64_t b, int val)
{
    static uint8_t buf[BS];
    memset(buf, val, BS);
    assert_int_equal(ubj_bdev_write(dev, b, 1, buf), 0);
}

/* test_kinds_cow -- a cow overlay keeps writes and reports COW. */
static void test_kinds_cow(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *cow;
    static uint8_t buf[2 * BS];
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    assert_int_equal(ubj_bdev_kind(ram), UBJ_BDEV_KIND_DEVICE);
    assert_int_equal(ubj_bdev_kind(NULL), UBJ_BDEV_KIND_DEVICE);
    fill(ram, 1, 0x11);
    assert_int_equal(ubj_bdev_cow_create(ram, UBJ_COW_BORROW, &cow), 0);
    assert_int_equal(ubj_bdev_kind(cow), UBJ_BDEV_KIND_COW);
    assert_null(ubj_bdev_map_owner(cow));
    assert_int_equal(ubj_bdev_cow_blocks(ram), 0);
    fill(cow, 2, 0x22);
    assert_int_equal(ubj_bdev_cow_blocks(cow), 1);
    assert_int_equal(ubj_bdev_read(cow, 1, 2, buf), 0);
    assert_int_equal(buf[0], 0x11);
    assert_int_equal(buf[BS], 0x22);
    assert_int_equal(ubj_bdev_read(ram, 2, 1, buf), 0);
    assert_int_equal(buf[0], 0);              /* lower never written */
    ubj_bdev_destroy(cow);
    ubj_bdev_destroy(ram);
}

static uint8_t map_block[BS];
static int fini_calls;
static const char owner_tag;

/* map_find -- block 3 is the map's. */
static const uint8_t *map_find(void *ctx, uint64_t blkno)
{
    assert_ptr_equal(ctx, &owner_tag);
    return blkno == 3 ? map_block : NULL;
}

/* map_fini -- count the calls. */
static void map_fini(void *ctx)
{
    (void)ctx;
    fini_calls++;
}

/* test_kinds_map -- a map overlay serves its blocks, refuses writes,
 * reports MAP and its owner, and is not an NVM view. */
static void test_kinds_map(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *map;
    static uint8_t buf[4 * BS];
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    for (int b = 2; b < 6; b++)
        fill(ram, (uint64_t)b, 0x40 + b);
    memset(map_block, 0x99, BS);
    const struct ubj_bdev_map m = {
        .name = "test-map", .owner = &owner_tag, .erofs = "test map: read-only",
        .find = map_find, .fini = map_fini, .ctx = (void *)&owner_tag,
    };
    assert_int_equal(ubj_bdev_map_create(NULL, &m, &map), -EINVAL);
    assert_int_equal(ubj_bdev_map_create(ram, &m, &map), 0);
    assert_int_equal(ubj_bdev_kind(map), UBJ_BDEV_KIND_MAP);
    assert_ptr_equal(ubj_bdev_map_owner(map), &owner_tag);
    assert_ptr_equal(ubj_bdev_map_ctx(map), &owner_tag);
    assert_null(ubj_bdev_map_owner(ram));
    assert_int_equal(ubj_bdev_cow_blocks(map), 0);
    assert_int_equal(ubj_nvm_is_view(map), 0);
    assert_string_equal(map->ops->name, "test-map");
    assert_int_equal(map->nblocks, 16);
    assert_int_equal(ubj_bdev_read(map, 2, 4, buf), 0);
    assert_int_equal(buf[0], 0x42);
    assert_int_equal(buf[BS], 0x99);          /* the map's */
    assert_int_equal(buf[2 * BS], 0x44);
    assert_int_equal(buf[3 * BS], 0x45);
    assert_int_equal(ubj_bdev_write(map, 3, 1, buf), -EROFS);
    assert_string_equal(ubj_errormsg(), "test map: read-only");
    assert_int_equal(ubj_bdev_flush(map), 0);
    ubj_bdev_destroy(map);                    /* owns ram */
    assert_int_equal(fini_calls, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds_cow),
        cmocka_unit_test(test_kinds_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
