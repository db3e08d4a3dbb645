/*
 * tests/unit/bdev_fault.c -- unit tests of the fault-injecting wrapper
 * (src/dev/fault.c): transient and persistent EIO on the nth read, write
 * and flush, torn writes sector by sector, stacking over a file device
 * with statistics at both levels, argument checks, and exact firing under
 * two concurrent threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"   /* t_tmpfile_setup */
#include "ubjfs/bdev.h"
#include "ubjfs/ubjfs.h"

#define BS UBJ_BLOCK_SIZE
#define SECTOR 512u

/* fault_over_ram -- a fault device over a fresh ram device of n blocks. */
static struct ubj_bdev *fault_over_ram(uint64_t n)
{
    struct ubj_bdev *lower = NULL, *d = NULL;
    assert_int_equal(ubj_bdev_ram_create(n, &lower), 0);
    assert_int_equal(ubj_bdev_fault_create(lower, &d), 0);
    assert_ptr_equal(d->lower, lower);
    assert_int_equal(d->nblocks, n);
    assert_int_equal(d->block_size, BS);
    assert_int_equal(d->guarantees, lower->guarantees);
    assert_string_equal(d->ops->name, "fault");
    return d;
}

/* fill -- set every byte of `count` blocks of the device to v. */
static void fill(struct ubj_bdev *d, uint64_t blkno, uint32_t count, int v)
{
    unsigned char *buf = malloc((size_t)count * BS);
    assert_non_null(buf);
    memset(buf, v, (size_t)count * BS);
    assert_int_equal(ubj_bdev_write(d, blkno, count, buf), 0);
    free(buf);
}

/* bytes_are -- true if len bytes at p all equal v. */
static int bytes_are(const unsigned char *p, size_t len, int v)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)v)
            return 0;
    return 1;
}


/* test_transient_read -- the nth read fails once, the rest pass. */
static void test_transient_read(void **state)
{
    (void)state;
    struct ubj_bdev *d = fault_over_ram(8);
    unsigned char buf[BS];
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_READ, 3, 0, 0), 0);
    assert_int_equal(ubj_bdev_write(d, 0, 1, buf), 0);  /* writes don't count */
    assert_int_equal(ubj_bdev_flush(d), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_int_equal(ubj_bdev_read(d, 1, 1, buf), 0);
    assert_int_equal(ubj_bdev_fault_fired(d), 0);
    assert_int_equal(ubj_bdev_read(d, 2, 1, buf), -EIO);
    assert_non_null(strstr(ubj_errormsg(), "read"));
    assert_int_equal(ubj_bdev_fault_fired(d), 1);
    for (int i = 0; i < 10; i++)
        assert_int_equal(ubj_bdev_read(d, 3, 1, buf), 0);
    assert_int_equal(ubj_bdev_fault_fired(d), 1);
    /* the failed read never reached the lower device */
    struct ubj_bdev_stats top, low;
    ubj_bdev_stats_get(d, &top);
    ubj_bdev_stats_get(d->lower, &low);
    assert_int_equal(top.reads, 13);
    assert_int_equal(top.errors, 1);
    assert_int_equal(top.bytes_read, 12 * BS);
    assert_int_equal(low.reads, 12);
    assert_int_equal(low.errors, 0);
    ubj_bdev_destroy(d);
}

/* test_persistent_write -- from the nth write on, all fail until disarm;
 * failed writes change nothing. */
static void test_persistent_write(void **state)
{
    (void)state;
    struct ubj_bdev *d = fault_over_ram(8);
    unsigned char buf[BS];
    fill(d, 0, 8, 0x11);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_WRITE, 2, 1, 0), 0);
    memset(buf, 0x22, BS);
    assert_int_equal(ubj_bdev_write(d, 0, 1, buf), 0);
    for (uint64_t b = 1; b < 6; b++)
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), -EIO);
    assert_int_equal(ubj_bdev_fault_fired(d), 5);
    assert_int_equal(ubj_bdev_read(d, 1, 1, buf), 0);    /* reads pass */
    assert_true(bytes_are(buf, BS, 0x11));
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    assert_true(bytes_are(buf, BS, 0x22));
    assert_int_equal(ubj_bdev_fault_disarm(d), 0);
    memset(buf, 0x33, BS);
    assert_int_equal(ubj_bdev_write(d, 5, 1, buf), 0);
    assert_int_equal(ubj_bdev_write(d, 6, 1, buf), 0);
    assert_int_equal(ubj_bdev_fault_fired(d), 5);
    assert_int_equal(ubj_bdev_read(d->lower, 5, 1, buf), 0);
    assert_true(bytes_are(buf, BS, 0x33));
    assert_int_equal(ubj_bdev_read(d->lower, 4, 1, buf), 0);
    assert_true(bytes_are(buf, BS, 0x11));
    ubj_bdev_destroy(d);
}

/* test_flush_fault -- transient and persistent flush failures; re-arming
 * replaces the earlier arm. */
static void test_flush_fault(void **state)
{
    (void)state;
    struct ubj_bdev *d = fault_over_ram(4);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_FLUSH, 1, 0, 0), 0);
    assert_int_equal(ubj_bdev_flush(d), -EIO);
    assert_int_equal(ubj_bdev_flush(d), 0);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_FLUSH, 5, 1, 0), 0);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_FLUSH, 2, 1, 0), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    assert_int_equal(ubj_bdev_flush(d), -EIO);
    assert_int_equal(ubj_bdev_flush(d), -EIO);
    assert_int_equal(ubj_bdev_fault_fired(d), 3);
    assert_int_equal(ubj_bdev_fault_disarm(d), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    struct ubj_bdev_stats top, low;
    ubj_bdev_stats_get(d, &top);
    ubj_bdev_stats_get(d->lower, &low);
    assert_int_equal(top.flushes, 6);
    assert_int_equal(top.errors, 3);
    assert_int_equal(low.flushes, 3);
    ubj_bdev_destroy(d);
}

/* torn_case -- a 3-block write at block 1 over old 0xAA data, torn after
 * `torn` sectors; check exactly that prefix is new. */
static void torn_case(uint32_t torn)
{
    struct ubj_bdev *d = fault_over_ram(5);
    fill(d, 0, 5, 0xAA);
    unsigned char *nw = malloc(3 * BS), *back = malloc(5 * BS);
    assert_non_null(nw);
    assert_non_null(back);
    for (size_t i = 0; i < 3 * BS; i++)
        nw[i] = (unsigned char)(0x40 + i / SECTOR);   /* 0x40..0x57 by sector */
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_WRITE, 1, 0, torn), 0);
    assert_int_equal(ubj_bdev_write(d, 1, 3, nw), -EIO);
    assert_int_equal(ubj_bdev_fault_fired(d), 1);
    assert_int_equal(ubj_bdev_read(d, 0, 5, back), 0);
    size_t cut = (size_t)(torn < 24 ? torn : 24) * SECTOR;
    assert_true(bytes_are(back, BS, 0xAA));                   /* block 0 */
    assert_memory_equal(back + BS, nw, cut);                  /* new prefix */
    assert_true(bytes_are(back + BS + cut, 3 * BS - cut, 0xAA)); /* old rest */
    assert_true(bytes_are(back + 4 * BS, BS, 0xAA));          /* block 4 */
    /* transient: the next write goes through whole */
    assert_int_equal(ubj_bdev_write(d, 1, 3, nw), 0);
    assert_int_equal(ubj_bdev_read(d, 1, 3, back), 0);
    assert_memory_equal(back, nw, 3 * BS);
    free(nw);
    free(back);
    ubj_bdev_destroy(d);
}

/* test_torn_write -- torn after 0, a few sectors, whole blocks, a block
 * and a bit, and more sectors than the request has. */
static void test_torn_write(void **state)
{
    (void)state;
    static const uint32_t cases[] = { 0, 1, 3, 7, 8, 11, 16, 23, 24, 1000 };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        torn_case(cases[i]);
}

/* test_torn_persistent -- every failing write of a persistent arm tears. */
static void test_torn_persistent(void **state)
{
    (void)state;
    struct ubj_bdev *d = fault_over_ram(4);
    fill(d, 0, 4, 0x00);
    unsigned char buf[BS], back[BS];
    memset(buf, 0x5A, BS);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_WRITE, 1, 1, 2), 0);
    for (uint64_t b = 0; b < 4; b++) {
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), -EIO);
        assert_int_equal(ubj_bdev_read(d, b, 1, back), 0);
        assert_true(bytes_are(back, 2 * SECTOR, 0x5A));
        assert_true(bytes_are(back + 2 * SECTOR, BS - 2 * SECTOR, 0x00));
    }
    assert_int_equal(ubj_bdev_fault_fired(d), 4);
    ubj_bdev_destroy(d);
}

/* test_stack_over_file -- fault over file: data reaches the file, stats
 * count at both levels, a torn write shows as lower I/O. */
static void test_stack_over_file(void **state)
{
    const char *path = *state;
    struct ubj_bdev *file = NULL, *d = NULL;
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 16 * BS, &file), 0);
    assert_int_equal(ubj_bdev_fault_create(file, &d), 0);
    assert_int_equal(d->guarantees, file->guarantees);
    unsigned char *buf = malloc(2 * BS);
    assert_non_null(buf);
    memset(buf, 0x77, 2 * BS);
    assert_int_equal(ubj_bdev_write(d, 0, 2, buf), 0);        /* 1 */
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);         /* 2 */
    assert_int_equal(ubj_bdev_flush(d), 0);                   /* 3 */
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_WRITE, 1, 0, 12), 0);
    memset(buf, 0x99, 2 * BS);
    assert_int_equal(ubj_bdev_write(d, 4, 2, buf), -EIO);     /* torn */
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_READ, 1, 0, 0), 0);
    assert_int_equal(ubj_bdev_read(d, 4, 2, buf), -EIO);

    struct ubj_bdev_stats top, low;
    ubj_bdev_stats_get(d, &top);
    ubj_bdev_stats_get(file, &low);
    assert_int_equal(top.writes, 2);
    assert_int_equal(top.bytes_written, 2 * BS);
    assert_int_equal(top.reads, 2);
    assert_int_equal(top.bytes_read, BS);
    assert_int_equal(top.flushes, 1);
    assert_int_equal(top.errors, 2);
    /* lower: the good write, the torn block 4 whole, block 5's RMW */
    assert_int_equal(low.writes, 3);
    assert_int_equal(low.bytes_written, 4 * BS);
    assert_int_equal(low.reads, 2);
    assert_int_equal(low.bytes_read, 2 * BS);
    assert_int_equal(low.flushes, 1);
    assert_int_equal(low.errors, 0);
    /* reset is per level */
    ubj_bdev_stats_reset(d);
    ubj_bdev_stats_get(d, &top);
    ubj_bdev_stats_get(file, &low);
    assert_int_equal(top.writes, 0);
    assert_int_equal(low.writes, 3);
    /* what the file holds: 8 new sectors of block 4, 4 of block 5 */
    assert_int_equal(ubj_bdev_read(file, 4, 2, buf), 0);
    assert_true(bytes_are(buf, BS + 4 * SECTOR, 0x99));
    assert_true(bytes_are(buf + BS + 4 * SECTOR, BS - 4 * SECTOR, 0x00));
    ubj_bdev_destroy(d);     /* destroys file too (ASan/LSan would see a leak) */
    free(buf);
}

/* test_args -- arming a non-fault device, nth 0, bad ops, NULLs; a failed
 * create leaves the lower device alone. */
static void test_args(void **state)
{
    (void)state;
    struct ubj_bdev *ram = NULL, *d = NULL;
    assert_int_equal(ubj_bdev_ram_create(4, &ram), 0);
    assert_int_equal(ubj_bdev_fault_arm(ram, UBJ_FAULT_READ, 1, 0, 0), -EINVAL);
    assert_int_equal(ubj_bdev_fault_disarm(ram), -EINVAL);
    assert_int_equal(ubj_bdev_fault_disarm(NULL), -EINVAL);
    assert_int_equal(ubj_bdev_fault_fired(ram), 0);
    assert_int_equal(ubj_bdev_fault_fired(NULL), 0);
    assert_int_equal(ubj_bdev_fault_create(NULL, &d), -EINVAL);
    assert_null(d);
    assert_int_equal(ubj_bdev_fault_create(ram, NULL), -EINVAL);
    unsigned char buf[BS];
    assert_int_equal(ubj_bdev_read(ram, 0, 1, buf), 0);   /* still alive */
    assert_int_equal(ubj_bdev_fault_create(ram, &d), 0);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_READ, 0, 0, 0), -EINVAL);
    assert_int_equal(ubj_bdev_fault_arm(d, (enum ubj_fault_op)3, 1, 0, 0),
                     -EINVAL);
    assert_int_equal(ubj_bdev_fault_arm(NULL, UBJ_FAULT_READ, 1, 0, 0), -EINVAL);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_READ, 1, 0, 0), 0);
    /* bounds are checked before a fault can fire */
    assert_int_equal(ubj_bdev_read(d, 4, 1, buf), -EINVAL);
    assert_int_equal(ubj_bdev_read(d, 3, 1, buf), -EIO);
    /* a wrapper over a wrapper */
    struct ubj_bdev *top = NULL;
    assert_int_equal(ubj_bdev_fault_create(d, &top), 0);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_READ, 2, 0, 0), 0);
    assert_int_equal(ubj_bdev_read(top, 0, 1, buf), 0);
    assert_int_equal(ubj_bdev_read(top, 0, 1, buf), -EIO);
    assert_int_equal(ubj_bdev_fault_fired(top), 0);
    assert_int_equal(ubj_bdev_fault_fired(d), 2);
    ubj_bdev_destroy(top);
}

struct reader {
    struct ubj_bdev *d;
    unsigned n;
    unsigned eio;    /* reads that failed with -EIO */
    unsigned other;  /* reads that failed otherwise */
};

/* reader_main -- n reads of block 0, counting failures. */
static void *reader_main(void *arg)
{
    struct reader *r = arg;
    unsigned char buf[BS];
    for (unsigned i = 0; i < r->n; i++) {
        int rc = ubj_bdev_read(r->d, i % r->d->nblocks, 1, buf);
        if (rc == -EIO)
            r->eio++;
        else if (rc != 0)
            r->other++;
    }
    return NULL;
}

/* test_concurrent_exact -- with two threads reading, a transient arm
 * fires exactly once. */
static void test_concurrent_exact(void **state)
{
    (void)state;
    struct ubj_bdev *d = fault_over_ram(16);
    assert_int_equal(ubj_bdev_fault_arm(d, UBJ_FAULT_READ, 1500, 0, 0), 0);
    pthread_t t[2];
    struct reader r[2];
    for (int i = 0; i < 2; i++) {
        r[i] = (struct reader){ .d = d, .n = 20000 };
        assert_int_equal(pthread_create(&t[i], NULL, reader_main, &r[i]), 0);
    }
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(r[0].eio + r[1].eio, 1);
    assert_int_equal(r[0].other + r[1].other, 0);
    assert_int_equal(ubj_bdev_fault_fired(d), 1);
    struct ubj_bdev_stats top, low;
    ubj_bdev_stats_get(d, &top);
    ubj_bdev_stats_get(d->lower, &low);
    assert_int_equal(top.reads, 40000);
    assert_int_equal(top.errors, 1);
    assert_int_equal(low.reads, 39999);
    ubj_bdev_destroy(d);
}

/* main -- run the suite. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transient_read),
        cmocka_unit_test(test_persistent_write),
        cmocka_unit_test(test_flush_fault),
        cmocka_unit_test(test_torn_write),
        cmocka_unit_test(test_torn_persistent),
        cmocka_unit_test_setup_teardown(test_stack_over_file, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test(test_args),
        cmocka_unit_test(test_concurrent_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
