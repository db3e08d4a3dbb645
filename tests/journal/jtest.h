/*
 * jtest.h -- helpers of the tests/journal suite (the journal modes,
 * issue 4), header only so that each tests/journal/<name>.c stays one
 * executable:
 *
 *  - jt_new_fs / jt_mount: a RAM image made in a journal mode and mounted
 *    without the timer (so commits happen only where the test says)
 *  - jt_crash_copy: the image as a process crash leaves it (every write
 *    that returned is there): a copy of the device's blocks
 *  - jt_check_clean: ubj_check must return CLEAN (notes allowed)
 *  - jt_flushes: flush requests the device has seen
 */
#ifndef UBJ_TESTS_JTEST_H
#define UBJ_TESTS_JTEST_H

#include "testutil.h"
#include <stdbool.h>
#include <unistd.h>
#include "fs/fs.h"
#include "txn/journal.h"
#include "util/util.h"

#define JT_FN static __attribute__((unused))
#define JT_BS 4096u

static const char *const jt_modes[] = { UBJ_MODE_ORDERED, UBJ_MODE_JOURNAL,
                                        UBJ_MODE_WRITEBACK };
#define JT_NMODES 3

/* jt_format -- format dev in `mode` with a journal of jblocks (0: default). */
JT_FN void jt_format(struct ubj_bdev *dev, const char *mode, uint64_t jblocks,
                     unsigned flags)
{
    struct ubj_format_opts fo = { .mode = mode, .flags = UBJ_FORMAT_ZEROED | flags,
                                  .journal_blocks = jblocks };
    assert_ok(ubj_format(dev, &fo));
}

/* jt_mount -- mount dev in its recorded mode, no timer, nbufs buffers. */
JT_FN int jt_mount(struct ubj_bdev *dev, uint32_t nbufs, unsigned flags,
                   struct ubj_fs **fs)
{
    struct ubj_config cfg = { .cache_blocks = nbufs,
                              .flags = UBJ_MOUNT_NO_TIMER | flags };
    return ubj_mount(dev, &cfg, fs);
}

/* jt_new_fs -- a RAM image of nblocks in `mode`, mounted. */
JT_FN void jt_new_fs(uint64_t nblocks, const char *mode, uint64_t jblocks,
                     uint32_t nbufs, struct ubj_bdev **dev, struct ubj_fs **fs)
{
    assert_int_equal(ubj_bdev_ram_create(nblocks, dev), 0);
    jt_format(*dev, mode, jblocks, 0);
    assert_ok(jt_mount(*dev, nbufs, 0, fs));
}

/* jt_crash_copy -- a new RAM device holding every block of dev. */
JT_FN struct ubj_bdev *jt_crash_copy(struct ubj_bdev *dev)
{
    struct ubj_bdev *c;
    assert_int_equal(ubj_bdev_ram_create(dev->nblocks, &c), 0);
    assert_int_equal(timg_copy(dev, c), 0);
    return c;
}

/* jt_report -- ubj_check's lines: problems to stderr, notes dropped. */
JT_FN void jt_report(void *ctx, const char *line)
{
    (void)ctx;
    if (strncmp(line, "note: ", 6) != 0)
        fprintf(stderr, "  fsck: %s\n", line);
}

/* jt_check_clean -- ubj_check (flags) must say CLEAN. */
JT_FN void jt_check_clean(struct ubj_bdev *dev, unsigned flags)
{
    int rc = ubj_check(dev, flags, jt_report, NULL);
    if (rc != UBJ_CHECK_CLEAN)
        fail_msg("ubj_check = %d, expected CLEAN", rc);
}

/* jt_flushes -- flush requests seen by dev. */
JT_FN uint64_t jt_flushes(const struct ubj_bdev *dev)
{
    struct ubj_bdev_stats st;
    ubj_bdev_stats_get(dev, &st);
    return st.flushes;
}

/* jt_same_image -- every block of a equals b's. */
JT_FN bool jt_same_image(struct ubj_bdev *a, struct ubj_bdev *b)
{
    uint8_t *x = malloc(JT_BS), *y = malloc(JT_BS);
    bool same = x && y && a->nblocks == b->nblocks;
    for (uint64_t i = 0; same && i < a->nblocks; i++) {
        assert_int_equal(ubj_bdev_read(a, i, 1, x), 0);
        assert_int_equal(ubj_bdev_read(b, i, 1, y), 0);
        same = memcmp(x, y, JT_BS) == 0;
    }
    free(x);
    free(y);
    return same;
}

/* jt_fill -- a block-sized buffer of byte pattern (seed, offset). */
JT_FN void jt_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
    tpattern_fill(buf, len, seed, off);
}

/* jt_put_file -- create or truncate `path` and write len pattern bytes. */
JT_FN void jt_put_file(struct ubj_fs *fs, const char *path, size_t len, uint64_t seed)
{
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    tpattern_fill(buf, len, seed, 0);
    assert_ok(tpath_put(fs, path, buf, len));
    free(buf);
}

/* jt_expect_file -- path holds exactly len pattern bytes of seed. */
JT_FN void jt_expect_file(struct ubj_fs *fs, const char *path, size_t len,
                          uint64_t seed)
{
    struct ubj_stat st;
    assert_ok(tpath_stat(fs, path, &st));
    assert_int_equal(st.size, len);
    uint8_t *buf = malloc(len + 1);
    assert_non_null(buf);
    assert_int_equal(tpath_read(fs, path, buf, len + 1, 0), (ssize_t)len);
    assert_int_equal(tpattern_check(buf, len, seed, 0), len);
    free(buf);
}

#endif /* UBJ_TESTS_JTEST_H */
