/*
 * tests/unit/bdev.c -- unit tests of the dispatch layer (src/dev/bdev.c),
 * the RAM device (ram.c) and the file device (file.c): round trips,
 * bounds, statistics, open flags (RDONLY, EXCL, DIRECT, CREATE, RESIZE),
 * reads past a shrunk file's end, concurrent writers.
 * Temporary files live under $TMPDIR or /tmp (t_tmpfile) and are removed
 * by each test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"   /* t_tmpfile_setup */
#include "ubjfs/bdev.h"
#include "ubjfs/ubjfs.h"

#define BS UBJ_BLOCK_SIZE

/* fill_block -- a pattern unique to (blkno, seed) in one block. */
static void fill_block(unsigned char *p, uint64_t blkno, unsigned seed)
{
    for (size_t i = 0; i < BS; i++)
        p[i] = (unsigned char)((blkno * 131u + i * 7u + seed * 29u) ^ (i >> 8));
}

/* check_block -- true if p holds fill_block(blkno, seed). */
static int check_block(const unsigned char *p, uint64_t blkno, unsigned seed)
{
    unsigned char want[BS];
    fill_block(want, blkno, seed);
    return memcmp(p, want, BS) == 0;
}

/* is_zero -- true if len bytes at p are all zero. */
static int is_zero(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != 0)
            return 0;
    return 1;
}


/* round_trip -- write distinct blocks singly and in runs, read back. */
static void round_trip(struct ubj_bdev *d)
{
    uint64_t n = d->nblocks;
    unsigned char *buf = malloc(8 * BS);
    assert_non_null(buf);
    /* untouched blocks read as zero on a fresh device */
    assert_int_equal(ubj_bdev_read(d, n - 1, 1, buf), 0);
    assert_true(is_zero(buf, BS));
    for (uint64_t b = 0; b < n; b += 3) {
        fill_block(buf, b, 1);
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
    }
    for (unsigned i = 0; i < 8; i++)
        fill_block(buf + i * BS, 4 + i, 2);
    assert_int_equal(ubj_bdev_write(d, 4, 8, buf), 0);
    memset(buf, 0, 8 * BS);
    assert_int_equal(ubj_bdev_read(d, 4, 8, buf), 0);
    for (unsigned i = 0; i < 8; i++)
        assert_true(check_block(buf + i * BS, 4 + i, 2));
    for (uint64_t b = 0; b < n; b += 3) {
        assert_int_equal(ubj_bdev_read(d, b, 1, buf), 0);
        if (b < 4 || b >= 12)
            assert_true(check_block(buf, b, 1));
    }
    assert_int_equal(ubj_bdev_flush(d), 0);
    free(buf);
}

/* test_ram_round_trip -- ram device stores what it is given. */
static void test_ram_round_trip(void **state)
{
    (void)state;
    struct ubj_bdev *d = NULL;
    assert_int_equal(ubj_bdev_ram_create(64, &d), 0);
    assert_non_null(d);
    assert_int_equal(d->nblocks, 64);
    assert_int_equal(d->block_size, BS);
    assert_int_equal(d->guarantees, UBJ_BDEV_ATOMIC_BLOCK);
    assert_null(d->lower);
    assert_string_equal(d->ops->name, "ram");
    round_trip(d);
    ubj_bdev_destroy(d);
    ubj_bdev_destroy(NULL);
    assert_int_equal(ubj_bdev_ram_create(0, &d), -EINVAL);
    assert_null(d);
    assert_int_equal(ubj_bdev_ram_create(1, NULL), -EINVAL);
    assert_int_equal(ubj_bdev_ram_create(UINT64_MAX / 2, &d), -ENOMEM);
    assert_true(strlen(ubj_errormsg()) > 0);
}

/* test_ram_sparse_huge -- a 1 TiB RAM device costs only what is written. */
static void test_ram_sparse_huge(void **state)
{
    (void)state;
    uint64_t nblocks = (1ull << 40) / BS;
    struct ubj_bdev *d = NULL;
    int rc = ubj_bdev_ram_create(nblocks, &d);
    if (rc == -ENOMEM)
        skip();   /* strict overcommit on this host */
    assert_int_equal(rc, 0);
    unsigned char a[BS], b[BS];
    fill_block(a, nblocks - 1, 3);
    assert_int_equal(ubj_bdev_write(d, nblocks - 1, 1, a), 0);
    assert_int_equal(ubj_bdev_read(d, nblocks - 1, 1, b), 0);
    assert_memory_equal(a, b, BS);
    assert_int_equal(ubj_bdev_read(d, nblocks / 2, 1, b), 0);
    assert_true(is_zero(b, BS));
    ubj_bdev_destroy(d);
}

/* test_bounds -- bad arguments are -EINVAL, counted, with a message. */
static void test_bounds(void **state)
{
    (void)state;
    struct ubj_bdev *d = NULL;
    unsigned char *buf = calloc(16, BS);
    assert_non_null(buf);
    assert_int_equal(ubj_bdev_ram_create(16, &d), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 0, buf), -EINVAL);
    assert_true(strlen(ubj_errormsg()) > 0);
    assert_int_equal(ubj_bdev_write(d, 0, 1, NULL), -EINVAL);
    assert_int_equal(ubj_bdev_read(d, 16, 1, buf), -EINVAL);
    assert_int_equal(ubj_bdev_read(d, 15, 2, buf), -EINVAL);
    assert_int_equal(ubj_bdev_write(d, 15, 2, buf), -EINVAL);
    assert_int_equal(ubj_bdev_write(d, UINT64_MAX, 2, buf), -EINVAL);
    assert_int_equal(ubj_bdev_read(d, UINT64_MAX - 1, 2, buf), -EINVAL);
    assert_int_equal(ubj_bdev_read(d, 0, UINT32_MAX, buf), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "past the end"));
    assert_int_equal(ubj_bdev_read(NULL, 0, 1, buf), -EINVAL);
    assert_int_equal(ubj_bdev_write(NULL, 0, 1, buf), -EINVAL);
    assert_int_equal(ubj_bdev_flush(NULL), -EINVAL);
    /* the edges themselves are fine */
    assert_int_equal(ubj_bdev_read(d, 15, 1, buf), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 16, buf), 0);
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.errors, 8);
    assert_int_equal(s.reads, 2);
    assert_int_equal(s.writes, 0);
    assert_int_equal(s.bytes_read, 17 * BS);
    ubj_bdev_destroy(d);
    free(buf);
}

/* test_stats -- counts and byte totals of each request kind; reset. */
static void test_stats(void **state)
{
    (void)state;
    struct ubj_bdev *d = NULL;
    unsigned char *buf = calloc(4, BS);
    assert_non_null(buf);
    assert_int_equal(ubj_bdev_ram_create(32, &d), 0);
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.reads + s.writes + s.flushes + s.errors, 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ubj_bdev_write(d, (uint64_t)i * 4, 3, buf), 0);
    for (int i = 0; i < 7; i++)
        assert_int_equal(ubj_bdev_read(d, (uint64_t)i, 2, buf), 0);
    assert_int_equal(ubj_bdev_read(d, 1, 4, buf), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    assert_int_equal(ubj_bdev_write(d, 31, 4, buf), -EINVAL);
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.writes, 5);
    assert_int_equal(s.bytes_written, 15 * BS);
    assert_int_equal(s.reads, 8);
    assert_int_equal(s.bytes_read, 18 * BS);
    assert_int_equal(s.flushes, 2);
    assert_int_equal(s.errors, 1);
    ubj_bdev_stats_reset(d);
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.reads, 0);
    assert_int_equal(s.writes, 0);
    assert_int_equal(s.flushes, 0);
    assert_int_equal(s.bytes_read, 0);
    assert_int_equal(s.bytes_written, 0);
    assert_int_equal(s.errors, 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.reads, 1);
    assert_int_equal(s.bytes_read, BS);
    ubj_bdev_destroy(d);
    free(buf);
}

/* test_file_round_trip -- data survives close/reopen, lands at the right
 * file offsets. */
static void test_file_round_trip(void **state)
{
    const char *path = *state;
    struct ubj_bdev *d = NULL;
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 64 * BS, &d), 0);
    assert_int_equal(d->nblocks, 64);
    assert_int_equal(d->guarantees,
                     UBJ_BDEV_VOLATILE_CACHE | UBJ_BDEV_ATOMIC_SECTOR);
    assert_string_equal(d->ops->name, "file");
    round_trip(d);
    ubj_bdev_destroy(d);

    /* the bytes are where they belong in the file */
    unsigned char raw[BS];
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, raw, BS, 9 * BS), BS);
    assert_true(check_block(raw, 9, 2));
    assert_int_equal(pread(fd, raw, BS, 30 * BS), BS);
    assert_true(check_block(raw, 30, 1));
    close(fd);

    /* reopened without size: same geometry, same data */
    assert_int_equal(ubj_bdev_file_open(path, 0, 0, &d), 0);
    assert_int_equal(d->nblocks, 64);
    assert_int_equal(ubj_bdev_read(d, 63, 1, raw), 0);
    assert_true(check_block(raw, 63, 1));
    ubj_bdev_destroy(d);
}

/* test_file_rdonly -- reads work, writes fail with -EROFS and count. */
static void test_file_rdonly(void **state)
{
    const char *path = *state;
    unsigned char a[BS], b[BS];
    struct ubj_bdev *d = NULL;
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 8 * BS, &d), 0);
    fill_block(a, 5, 9);
    assert_int_equal(ubj_bdev_write(d, 5, 1, a), 0);
    ubj_bdev_destroy(d);

    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RDONLY, 0, &d), 0);
    assert_int_equal(ubj_bdev_read(d, 5, 1, b), 0);
    assert_memory_equal(a, b, BS);
    assert_int_equal(ubj_bdev_write(d, 5, 1, b), -EROFS);
    assert_true(strlen(ubj_errormsg()) > 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.writes, 1);
    assert_int_equal(s.bytes_written, 0);
    assert_int_equal(s.errors, 1);
    ubj_bdev_destroy(d);
    /* RDONLY cannot be combined with CREATE or RESIZE */
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RDONLY | UBJ_BDEV_RESIZE,
                                        8 * BS, &d), -EINVAL);
    assert_null(d);
}

/* test_file_excl -- a second exclusive open fails until the first closes. */
static void test_file_excl(void **state)
{
    const char *path = *state;
    struct ubj_bdev *d1 = NULL, *d2 = NULL;
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_EXCL | UBJ_BDEV_RESIZE,
                                        4 * BS, &d1), 0);
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_EXCL, 0, &d2), -EBUSY);
    assert_null(d2);
    assert_non_null(strstr(ubj_errormsg(), path));
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_EXCL | UBJ_BDEV_RDONLY,
                                        0, &d2), -EBUSY);
    /* a non-exclusive open is not refused */
    assert_int_equal(ubj_bdev_file_open(path, 0, 0, &d2), 0);
    ubj_bdev_destroy(d2);
    ubj_bdev_destroy(d1);
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_EXCL, 0, &d2), 0);
    assert_int_equal(d2->nblocks, 4);
    ubj_bdev_destroy(d2);
}

/* test_file_direct -- O_DIRECT with aligned and unaligned buffers,
 * including a request larger than one bounce buffer. */
static void test_file_direct(void **state)
{
    const char *path = *state;
    enum { N = 300 };    /* > the 256-block bounce buffer */
    struct ubj_bdev *d = NULL;
    int rc = ubj_bdev_file_open(path, UBJ_BDEV_DIRECT | UBJ_BDEV_RESIZE,
                                (N + 4) * (uint64_t)BS, &d);
    if (rc == -EINVAL && strstr(ubj_errormsg(), "O_DIRECT") != NULL)
        skip();   /* /tmp on a file system without O_DIRECT */
    assert_int_equal(rc, 0);
    unsigned char *raw = malloc((size_t)(N + 1) * BS);
    unsigned char *back = malloc((size_t)(N + 1) * BS + 3);
    assert_non_null(raw);
    assert_non_null(back);
    unsigned char *src = raw + 1, *dst = back + 3;   /* deliberately unaligned */
    for (unsigned i = 0; i < N; i++)
        fill_block(src + (size_t)i * BS, 2 + i, 4);
    assert_int_equal(ubj_bdev_write(d, 2, N, src), 0);
    assert_int_equal(ubj_bdev_flush(d), 0);
    memset(dst, 0, (size_t)N * BS);
    assert_int_equal(ubj_bdev_read(d, 2, N, dst), 0);
    for (unsigned i = 0; i < N; i++)
        assert_true(check_block(dst + (size_t)i * BS, 2 + i, 4));
    /* aligned buffer: no bounce */
    void *al = NULL;
    assert_int_equal(posix_memalign(&al, 4096, BS), 0);
    assert_int_equal(ubj_bdev_read(d, 7, 1, al), 0);
    assert_true(check_block(al, 7, 4));
    fill_block(al, 0, 5);
    assert_int_equal(ubj_bdev_write(d, 0, 1, al), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, dst), 0);
    assert_true(check_block(dst, 0, 5));
    ubj_bdev_destroy(d);

    /* through the page cache, the same bytes */
    assert_int_equal(ubj_bdev_file_open(path, 0, 0, &d), 0);
    assert_int_equal(ubj_bdev_read(d, 2 + N - 1, 1, dst), 0);
    assert_true(check_block(dst, 2 + N - 1, 4));
    ubj_bdev_destroy(d);
    free(al);
    free(raw);
    free(back);
}

/* test_file_create_resize -- CREATE sizes a new file, RESIZE grows and
 * shrinks, bad sizes, paths and flags are refused. */
static void test_file_create_resize(void **state)
{
    const char *path = *state;
    unlink(path);
    struct ubj_bdev *d = NULL;
    struct stat st;
    assert_int_equal(ubj_bdev_file_open(path, 0, 0, &d), -ENOENT);
    assert_null(d);
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_CREATE,
                                        10 * BS + 100, &d), 0);
    assert_int_equal(d->nblocks, 10);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 10 * BS + 100);
    unsigned char a[BS], b[BS];
    fill_block(a, 9, 6);
    assert_int_equal(ubj_bdev_write(d, 9, 1, a), 0);
    ubj_bdev_destroy(d);

    /* CREATE of an existing file keeps its length */
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_CREATE, 50 * BS, &d), 0);
    assert_int_equal(d->nblocks, 10);
    ubj_bdev_destroy(d);
    /* RESIZE grows, keeping the data */
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 20 * BS, &d), 0);
    assert_int_equal(d->nblocks, 20);
    assert_int_equal(ubj_bdev_read(d, 9, 1, b), 0);
    assert_memory_equal(a, b, BS);
    assert_int_equal(ubj_bdev_read(d, 19, 1, b), 0);
    assert_true(is_zero(b, BS));
    ubj_bdev_destroy(d);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 20 * BS);
    /* and shrinks */
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 3 * BS, &d), 0);
    assert_int_equal(d->nblocks, 3);
    ubj_bdev_destroy(d);
    /* too small */
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 4095, &d), -EINVAL);
    assert_null(d);
    assert_non_null(strstr(ubj_errormsg(), "smaller"));
    /* the empty file CREATE made, opened without a size */
    unlink(path);
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_CREATE, 0, &d), -EINVAL);
    /* bad flags, NULL arguments, a directory, a missing directory */
    assert_int_equal(ubj_bdev_file_open(path, 0x100, 0, &d), -EINVAL);
    assert_int_equal(ubj_bdev_file_open(NULL, 0, 0, &d), -EINVAL);
    assert_int_equal(ubj_bdev_file_open(path, 0, 0, NULL), -EINVAL);
    assert_int_equal(ubj_bdev_file_open("/tmp", 0, 0, &d), -EISDIR);
    assert_int_equal(ubj_bdev_file_open("/tmp", UBJ_BDEV_RDONLY, 0, &d), -EISDIR);
    assert_int_equal(ubj_bdev_file_open("/nonexistent-ubj/x", UBJ_BDEV_CREATE,
                                        BS, &d), -ENOENT);
    assert_int_equal(ubj_bdev_file_open("/dev/null", 0, 0, &d), -EINVAL);
    assert_null(d);
}

/* test_file_past_eof -- a file shrunk behind the device reads as zeros. */
static void test_file_past_eof(void **state)
{
    const char *path = *state;
    struct ubj_bdev *d = NULL;
    unsigned char *buf = malloc(4 * BS);
    assert_non_null(buf);
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 4 * BS, &d), 0);
    for (unsigned i = 0; i < 4; i++)
        fill_block(buf + i * BS, i, 7);
    assert_int_equal(ubj_bdev_write(d, 0, 4, buf), 0);
    assert_int_equal(truncate(path, BS + 1000), 0);
    memset(buf, 0xEE, 4 * BS);
    assert_int_equal(ubj_bdev_read(d, 0, 4, buf), 0);
    assert_true(check_block(buf, 0, 7));
    unsigned char want[BS];
    fill_block(want, 1, 7);
    assert_memory_equal(buf + BS, want, 1000);
    assert_true(is_zero(buf + BS + 1000, 3 * BS - 1000));
    ubj_bdev_destroy(d);
    /* the same through O_DIRECT: a short read, then an unaligned offset */
    if (ubj_bdev_file_open(path, UBJ_BDEV_DIRECT | UBJ_BDEV_RESIZE, 4 * BS,
                           &d) == 0) {
        void *al = NULL;
        assert_int_equal(posix_memalign(&al, 4096, 4 * BS), 0);
        assert_int_equal(truncate(path, BS + 1000), 0);
        memset(al, 0xEE, 4 * BS);
        assert_int_equal(ubj_bdev_read(d, 0, 4, al), 0);
        assert_true(check_block(al, 0, 7));
        assert_memory_equal((unsigned char *)al + BS, want, 1000);
        assert_true(is_zero((unsigned char *)al + BS + 1000, 3 * BS - 1000));
        ubj_bdev_destroy(d);
        free(al);
    }
    free(buf);
}

struct writer {
    struct ubj_bdev *d;
    unsigned id;        /* 0 or 1: writes blocks b with b % 2 == id */
    unsigned rounds;
    int rc;
};

/* writer_main -- write this thread's blocks, `rounds` times over. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    unsigned char buf[BS];
    for (unsigned r = 0; r < w->rounds && w->rc == 0; r++)
        for (uint64_t b = w->id; b < w->d->nblocks && w->rc == 0; b += 2) {
            fill_block(buf, b, r);
            w->rc = ubj_bdev_write(w->d, b, 1, buf);
        }
    return NULL;
}

/* concurrent_writers -- two threads on disjoint blocks; all land, all
 * counted. */
static void concurrent_writers(struct ubj_bdev *d, unsigned rounds)
{
    pthread_t t[2];
    struct writer w[2];
    for (unsigned i = 0; i < 2; i++) {
        w[i] = (struct writer){ .d = d, .id = i, .rounds = rounds, .rc = 0 };
        assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
    }
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(w[i].rc, 0);
    }
    unsigned char buf[BS];
    for (uint64_t b = 0; b < d->nblocks; b++) {
        assert_int_equal(ubj_bdev_read(d, b, 1, buf), 0);
        assert_true(check_block(buf, b, rounds - 1));
    }
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(d, &s);
    assert_int_equal(s.writes, (uint64_t)rounds * d->nblocks);
    assert_int_equal(s.bytes_written, (uint64_t)rounds * d->nblocks * BS);
    assert_int_equal(s.reads, d->nblocks);
}

/* test_concurrent_ram -- two writers on a ram device. */
static void test_concurrent_ram(void **state)
{
    (void)state;
    struct ubj_bdev *d = NULL;
    assert_int_equal(ubj_bdev_ram_create(256, &d), 0);
    concurrent_writers(d, 50);
    ubj_bdev_destroy(d);
}

/* test_concurrent_file -- two writers on a file device. */
static void test_concurrent_file(void **state)
{
    const char *path = *state;
    struct ubj_bdev *d = NULL;
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 128 * BS, &d), 0);
    concurrent_writers(d, 5);
    ubj_bdev_destroy(d);
}

/* main -- run the suite. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ram_round_trip),
        cmocka_unit_test(test_ram_sparse_huge),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_stats),
        cmocka_unit_test_setup_teardown(test_file_round_trip, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test_setup_teardown(test_file_rdonly, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test_setup_teardown(test_file_excl, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test_setup_teardown(test_file_direct, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test_setup_teardown(test_file_create_resize, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test_setup_teardown(test_file_past_eof, t_tmpfile_setup,
                                        t_tmpfile_teardown),
        cmocka_unit_test(test_concurrent_ram),
        cmocka_unit_test_setup_teardown(test_concurrent_file, t_tmpfile_setup,
                                        t_tmpfile_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
