/*
 * tests/ubj/concurrent.c -- mode ubj with several threads on one mount and
 * the timer firing every few milliseconds, so that the timer's checkpoint
 * (which writes home without the mount lock) runs while writers copy
 * frozen buffers on write, freeze new ones, fsync, free blocks and check-
 * point themselves under cache pressure.  Every write is verified at the
 * end, across a remount, and fsck of the image is clean.
 */
#include "ubjtest.h"
#include <pthread.h>

#define CC_THREADS 4
#define CC_ROUNDS 4000
#define CC_FILE (96 * 1024)

struct cc {
    struct ubj_fs *fs;
    int id;
    int err;
    char msg[256];
};

/* cc_writer -- rewrite slices of my file with a pattern that depends on
 * the round; fsync often; churn a scratch file. */
static void *cc_writer(void *arg)
{
    struct cc *c = arg;
    char name[32], scratch[32];
    snprintf(name, sizeof name, "/w%d", c->id);
    snprintf(scratch, sizeof scratch, "/s%d", c->id);
    uint8_t *buf = malloc(CC_FILE);
    tpattern_fill(buf, CC_FILE, (uint64_t)c->id, 0);
    if (tpath_put(c->fs, name, buf, CC_FILE) < 0) {
        c->err = -EIO;
        snprintf(c->msg, sizeof c->msg, "put %s: %s", name, ubj_errormsg());
    }
    ubj_ino_t ino = tpath_ino(c->fs, name);
    struct tprng r;
    tprng_seed(&r, (uint64_t)c->id * 77);
    for (int i = 0; i < CC_ROUNDS && c->err == 0; i++) {
        uint64_t off = tprng_below(&r, CC_FILE - 8192);
        uint64_t len = 1 + tprng_below(&r, 8192);
        /* same pattern: the file's bytes stay a function of the offset */
        ssize_t n = ubj_pwrite(c->fs, ino, buf + off, len, (off_t)off);
        if (n != (ssize_t)len) {
            c->err = -EIO;
            snprintf(c->msg, sizeof c->msg, "pwrite: %zd %s", n, ubj_errormsg());
        }
        if (i % 3 == 0 && ubj_fsync(c->fs, ino, 0) < 0) {
            c->err = -EIO;
            snprintf(c->msg, sizeof c->msg, "fsync: %s", ubj_errormsg());
        }
        if (i % 5 == 0) {
            (void)tpath_unlink(c->fs, scratch);
            if (tpath_put(c->fs, scratch, buf, 5000 + (size_t)i) < 0) {
                c->err = -EIO;
                snprintf(c->msg, sizeof c->msg, "scratch: %s", ubj_errormsg());
            }
        }
        uint8_t rd[4096];
        if (ubj_pread(c->fs, ino, rd, sizeof rd, (off_t)off) != (ssize_t)sizeof rd ||
            memcmp(rd, buf + off, sizeof rd) != 0) {
            c->err = -EIO;
            snprintf(c->msg, sizeof c->msg, "read back at %llu differs",
                     (unsigned long long)off);
        }
    }
    free(buf);
    return NULL;
}

/* cc_verify -- every file holds its pattern. */
static void cc_verify(struct ubj_fs *fs)
{
    uint8_t *want = malloc(CC_FILE), *got = malloc(CC_FILE);
    for (int id = 0; id < CC_THREADS; id++) {
        char name[32];
        snprintf(name, sizeof name, "/w%d", id);
        tpattern_fill(want, CC_FILE, (uint64_t)id, 0);
        assert_rc(tpath_read(fs, name, got, CC_FILE, 0), CC_FILE);
        assert_memory_equal(got, want, CC_FILE);
    }
    free(want);
    free(got);
}

/* cc_run -- CC_THREADS writers on a region of nbufs buffers with the
 * timer firing every 2 ms; verify, remount, verify, fsck. */
static void cc_run(uint32_t nbufs)
{
    char region[256];
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ut_region_path(region, sizeof region, "conc");
    assert_int_equal(ubj_bdev_ram_create(8192, &dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(dev, &fo));
    unlink(region);
    struct ubj_config cfg = { .mode = UBJ_MODE_UBJ, .cache_blocks = nbufs,
                              .commit_interval_ms = 2, .nvm_path = region,
                              .nvm_flags = UBJ_NVM_FORMAT };
    assert_ok(ubj_mount(dev, &cfg, &fs));
    pthread_t th[CC_THREADS];
    struct cc c[CC_THREADS];
    for (int i = 0; i < CC_THREADS; i++) {
        c[i] = (struct cc){ .fs = fs, .id = i };
        assert_int_equal(pthread_create(&th[i], NULL, cc_writer, &c[i]), 0);
    }
    for (int i = 0; i < CC_THREADS; i++) {
        pthread_join(th[i], NULL);
        if (c[i].err)
            fail_msg("thread %d: %s", i, c[i].msg);
    }
    struct ubj_fs_stats st;
    ubj_fs_stats_get(fs, &st);
    fprintf(stderr, "concurrent (%u buffers): %llu commits, %llu checkpoints, "
            "%llu copies\n", nbufs, (unsigned long long)st.commits,
            (unsigned long long)st.checkpoints,
            (unsigned long long)st.cow_copies);
    assert_true(st.checkpoints > 0 && st.cow_copies > 0);
    cc_verify(fs);
    assert_ok(ubj_unmount(fs));
    assert_int_equal(ubj_test_check(dev, 0, NULL), UBJ_CHECK_CLEAN);
    cfg.nvm_flags = 0;
    assert_ok(ubj_mount(dev, &cfg, &fs));
    cc_verify(fs);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
    unlink(region);
}

/* writers and the timer's lock-free checkpoint together. */
static void test_threads_and_timer(void **state)
{
    (void)state;
    cc_run(256);
}

/* the same on the smallest cache: writers short of buffers checkpoint
 * themselves while the timer's checkpoint is in flight; nobody fails. */
static void test_threads_small_cache(void **state)
{
    (void)state;
    cc_run(64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_and_timer),
        cmocka_unit_test(test_threads_small_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
