/*
 * tests/unit/txn_none.c -- mode `none` through the transaction API
 * (src/txn/txn.c + src/txn/none.c) over a real cache and RAM device:
 * start/write_access/dirty/stop then commit puts the data on the device
 * with exactly one flush; forget discards; tick and reclaim write without
 * flushing; nested handles; unmount writes everything and flushes.
 * The event checker (UBJ_CHECK_EVENTS) is off here: the blocks are raw.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <cmocka.h>
#include "ubjfs/bdev.h"
#include "cache/cache.h"
#include "txn/mode.h"

#define BS 4096u

struct fix {
    struct ubj_bdev *dev;
    struct ubj_cache *c;
    struct ubj_txn t;
    int mounted;
};

/* setup -- RAM device of 256 zero blocks, 32-buffer cache, mode none. */
static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(ubj_bdev_ram_create(256, &f->dev), 0);
    struct ubj_cache_config cfg = { .nbufs = 32 };   /* none registers its reclaim */
    assert_int_equal(ubj_cache_create(f->dev, &cfg, &f->c), 0);
    const struct ubj_mode_ops *ops = ubj_mode_find("none");
    assert_ptr_equal(ops, &ubj_mode_none);
    assert_int_equal(ubj_txn_mount(&f->t, ops, f->c, f->dev), 0);
    assert_int_equal(f->t.txid, 1);
    assert_ptr_equal(f->t.cache, f->c);
    assert_ptr_equal(f->t.dev, f->dev);
    f->mounted = 1;
    *state = f;
    return 0;
}

/* teardown -- unmount (if still mounted), free everything. */
static int teardown(void **state)
{
    struct fix *f = *state;
    if (f->mounted)
        assert_int_equal(ubj_txn_unmount(&f->t), 0);
    ubj_cache_destroy(f->c);
    ubj_bdev_destroy(f->dev);
    free(f);
    return 0;
}

/* dev_byte -- byte `off` of device block blk. */
static uint8_t dev_byte(struct ubj_bdev *d, uint64_t blk, size_t off)
{
    uint8_t buf[BS];
    assert_int_equal(ubj_bdev_read(d, blk, 1, buf), 0);
    return buf[off];
}

/* change -- within handle h: get blk, fill it with `val`, dirty as kind. */
static void change(struct fix *f, struct ubj_handle *h, uint64_t blk,
                   uint8_t val, enum ubj_buf_kind kind)
{
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_get(f->c, blk, 0, &b), 0);
    struct ubj_buf *orig = b;
    assert_int_equal(ubj_txn_write_access(h, &b), 0);
    assert_ptr_equal(b, orig);   /* none modifies in place */
    memset(b->data, val, BS);
    assert_int_equal(ubj_txn_dirty(h, b, kind), 0);
    ubj_cache_put(f->c, b);
}

/* ubj_mode_find knows "none" and nothing else yet. */
static void test_find(void **state)
{
    (void)state;
    assert_ptr_equal(ubj_mode_find("none"), &ubj_mode_none);
    assert_null(ubj_mode_find("nosuchmode"));
    assert_null(ubj_mode_find(NULL));
    assert_string_equal(ubj_mode_none.name, "none");
    assert_int_equal(ubj_mode_none.version, UBJ_MODE_OPS_VERSION);
}

/* a changed block reaches the device at commit, with one flush. */
static void test_commit(void **state)
{
    struct fix *f = *state;
    struct ubj_handle *h;
    assert_int_equal(ubj_txn_start(&f->t, 4, &h), 0);
    assert_ptr_equal(h->t, &f->t);
    change(f, h, 10, 0xab, UBJ_KIND_META);
    change(f, h, 11, 0xcd, UBJ_KIND_DATA);
    assert_int_equal(h->used, 2);
    assert_int_equal(ubj_txn_stop(h), 0);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(f->c, &cs);
    assert_int_equal(cs.dirty, 2);
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(f->dev, &ds);
    assert_int_equal(ds.writes, 0);     /* write-back: nothing yet */
    assert_int_equal(dev_byte(f->dev, 10, 0), 0);

    ubj_bdev_stats_reset(f->dev);
    assert_int_equal(ubj_txn_commit(&f->t, UBJ_COMMIT_WAIT), 0);
    ubj_bdev_stats_get(f->dev, &ds);
    assert_int_equal(ds.flushes, 1);
    assert_int_equal(ds.writes, 1);     /* blocks 10, 11: one run */
    assert_int_equal(ds.bytes_written, 2 * BS);
    assert_int_equal(dev_byte(f->dev, 10, 100), 0xab);
    assert_int_equal(dev_byte(f->dev, 11, 4095), 0xcd);
    assert_int_equal(f->t.stats.commits, 1);
    assert_int_equal(f->t.stats.dev_flushes, 1);
    assert_int_equal(f->t.txid, 2);
    ubj_cache_stats_get(f->c, &cs);
    assert_int_equal(cs.dirty, 0);
    assert_int_equal(cs.writeback_meta_bytes, BS);
    assert_int_equal(cs.writeback_data_bytes, BS);
}

/* a block freed in the handle is never written. */
static void test_forget(void **state)
{
    struct fix *f = *state;
    struct ubj_handle *h;
    assert_int_equal(ubj_txn_start(&f->t, 2, &h), 0);
    change(f, h, 20, 0x11, UBJ_KIND_DATA);
    change(f, h, 21, 0x22, UBJ_KIND_DATA);
    assert_int_equal(ubj_txn_forget(h, 20), 0);
    assert_int_equal(ubj_txn_stop(h), 0);
    assert_int_equal(ubj_txn_commit(&f->t, UBJ_COMMIT_WAIT), 0);
    assert_int_equal(dev_byte(f->dev, 20, 0), 0);
    assert_int_equal(dev_byte(f->dev, 21, 0), 0x22);
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_lookup(f->c, 20, &b), -ENOENT);
}

/* tick and reclaim write dirty buffers home without flushing. */
static void test_tick_reclaim(void **state)
{
    struct fix *f = *state;
    struct ubj_handle *h;
    assert_int_equal(ubj_txn_start(&f->t, 1, &h), 0);
    change(f, h, 30, 0x33, UBJ_KIND_DATA);
    assert_int_equal(ubj_txn_stop(h), 0);
    assert_int_equal(ubj_txn_tick(&f->t, 0), 0);
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(f->dev, &ds);
    assert_int_equal(ds.writes, 1);
    assert_int_equal(ds.flushes, 0);
    assert_int_equal(dev_byte(f->dev, 30, 7), 0x33);

    assert_int_equal(ubj_txn_start(&f->t, 1, &h), 0);
    change(f, h, 31, 0x44, UBJ_KIND_DATA);
    assert_int_equal(ubj_txn_stop(h), 0);
    assert_int_equal(ubj_txn_reclaim(&f->t), 0);
    ubj_bdev_stats_get(f->dev, &ds);
    assert_int_equal(ds.writes, 2);
    assert_int_equal(ds.flushes, 0);
    assert_int_equal(dev_byte(f->dev, 31, 7), 0x44);
    assert_int_equal(f->t.stats.commits, 0);
}

/* nested starts share one handle; credits add up. */
static void test_nested(void **state)
{
    struct fix *f = *state;
    struct ubj_handle *h1, *h2;
    assert_int_equal(ubj_txn_start(&f->t, 3, &h1), 0);
    assert_int_equal(ubj_txn_start(&f->t, 5, &h2), 0);
    assert_ptr_equal(h1, h2);
    assert_int_equal(h1->credits, 8);
    change(f, h2, 40, 0x55, UBJ_KIND_DATA);
    assert_int_equal(ubj_txn_stop(h2), 0);
    change(f, h1, 41, 0x66, UBJ_KIND_DATA);
    assert_int_equal(ubj_txn_stop(h1), 0);
    assert_int_equal(ubj_txn_start(&f->t, 1, &h1), 0);   /* fresh again */
    assert_int_equal(h1->credits, 1);
    assert_int_equal(h1->used, 0);
    assert_int_equal(ubj_txn_stop(h1), 0);
}

/* unmount writes everything home and flushes once; more dirty blocks than
 * buffers are written by eviction on the way. */
static void test_unmount(void **state)
{
    struct fix *f = *state;
    struct ubj_handle *h;
    assert_int_equal(ubj_txn_start(&f->t, 64, &h), 0);
    for (uint64_t blk = 100; blk < 164; blk++)
        change(f, h, blk, (uint8_t)blk, UBJ_KIND_DATA);
    assert_int_equal(ubj_txn_stop(h), 0);
    ubj_bdev_stats_reset(f->dev);
    assert_int_equal(ubj_txn_unmount(&f->t), 0);
    f->mounted = 0;
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(f->dev, &ds);
    assert_int_equal(ds.flushes, 1);
    assert_null(f->t.priv);
    for (uint64_t blk = 100; blk < 164; blk++)
        assert_int_equal(dev_byte(f->dev, blk, 9), (uint8_t)blk);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(f->c, &cs);
    assert_int_equal(cs.dirty, 0);
    assert_int_equal(cs.writeback_blocks, 64);
}

/* a bad ops version is refused. */
static void test_bad_version(void **state)
{
    struct fix *f = *state;
    struct ubj_mode_ops bad = ubj_mode_none;
    bad.version = 99;
    struct ubj_txn t2;
    assert_int_equal(ubj_txn_mount(&t2, &bad, f->c, f->dev), -EINVAL);
}

/* main -- run the suite. */
int main(void)
{
    /* raw blocks of no file system: no event could describe them */
    unsetenv("UBJ_CHECK_EVENTS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test_setup_teardown(test_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tick_reclaim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_version, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
