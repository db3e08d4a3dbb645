/*
 * concurrency/unlocked.c -- device reads outside the mount lock
 * (docs/DESIGN.md, "Device reads outside the mount lock"; src/fs/file.c
 * invariant F4; ubj_cache_get_unlocking), in every mode (none, ubj,
 * ordered, journal, writeback, trial with its hooks).  A file "cold" is
 * written through a 64-buffer cache until its first blocks are evicted;
 * thread R's pread of it then misses, and the cache's test hook
 * (ubj_cache_test_read_hook) parks R's device read after the mount lock
 * was released, before the device is asked:
 *  - test_stat_while_read_parked: while R is parked, another thread's
 *    getattr of a cached file and statfs return (within WAIT_MS); once R
 *    is released its pread returns the file's bytes, fsck is clean.
 *    UBJ_TEST_BREAK=unlock-none (the cache keeps the caller's lock
 *    through the read, as before the rule) fails it in every mode: the
 *    getattr waits behind the parked read.  Run for both read paths:
 *    off-page (one block a read) and off (R's 2 blocks in one request,
 *    ubj_cache_get_run_unlocking), as is test_read_revalidates.
 *  - test_stat_while_getattr_parked: the same with R a getattr of a file
 *    whose inode block is out of the cache (one of NFILES files made
 *    before cold was written): the inode block's read parks; the other
 *    getattr and statfs return; R's getattr then gives the file's size.
 *    unlock-none fails it in every mode.  (lookup, readlink and path
 *    lookups go the same way: fs_rd in src/fs/meta.c.)
 *  - test_read_revalidates: while R is parked in its read of cold's first
 *    two blocks, the main thread truncates cold to 0 bytes (its blocks
 *    freed, the parked one forgotten) and fills another file, which may
 *    take them.  R must not return what it read meanwhile: it restarts,
 *    finds the file empty and returns 0.  UBJ_TEST_BREAK=no-revalidate
 *    (file.c keeps the buffer whatever changed) fails it in every mode.
 *  - test_write_reads_first, test_write_after_preread_change: R is a
 *    writer (a pwrite keeping bytes of cold's first block; an unlink in
 *    the cold directory /d), parked in its pre-read (file.c F5); see
 *    their comments.  UBJ_TEST_BREAK=no-preread fails the first.
 * Threads never call cmocka asserts: they record results and the main
 * thread checks them after joining.
 */
#include "testutil.h"

#if UBJ_TEST_HOOKS   /* the hook and the broken variants are test-build only */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include "fs/fs.h"

#define WATCHDOG_S 60          /* a hang becomes a failure */
#define WAIT_MS 5000           /* one wait for another thread */
#define NBUFS 64u              /* cache buffers */
#define COLD_BYTES (1024u * 1024u)
#define CHUNK (64u * 1024u)
#define NFILES 48              /* files made first: several inode blocks */
#define WR_OFF 100u            /* the parked writer's pwrite */
#define WR_LEN 100u

/* watchdog -- SIGALRM: a hang becomes a failure. */
static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "unlocked: watchdog: no progress for 60 s (deadlock?)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* The parked read (thread R) and the operations that must not wait for
 * it. */
struct parked {
    pthread_mutex_t m;
    pthread_cond_t cv;
    struct ubj_fs *fs;
    ubj_ino_t cold, warm;
    ubj_ino_t first;     /* the first of the NFILES files (3 bytes long) */
    int r_getattr;       /* R getattrs `first` instead of reading cold */
    int r_write;         /* R is a writer instead: 1 pwrite, 2 unlink */
    struct ubj_stat r_st;
    int armed;           /* [m] the next unlocked miss parks */
    int parked;          /* [m] R is parked in its device read */
    int release;         /* [m] R may go on */
    int r_done;          /* [m] R's pread returned */
    ssize_t r_n;         /* R's result */
    size_t r_len;        /* R's request */
    uint8_t *r_buf;
    int s_done;          /* [m] S's getattr + statfs returned */
    int s_rc;
};

static struct parked P = { .m = PTHREAD_MUTEX_INITIALIZER,
                           .cv = PTHREAD_COND_INITIALIZER };

/* read_hook -- the cache's unlocked-read hook: park the armed miss. */
static void read_hook(void *arg, struct ubj_cache *c, uint64_t blkno)
{
    (void)arg;
    (void)c;
    (void)blkno;
    pthread_mutex_lock(&P.m);
    if (P.armed) {
        P.armed = 0;
        tflag_park_locked(&P.m, &P.cv, &P.parked, &P.release);
    }
    pthread_mutex_unlock(&P.m);
}

/* thread_r -- the cold read. */
static void *thread_r(void *arg)
{
    (void)arg;
    ssize_t n;
    if (P.r_write == 1)        /* keeps bytes of cold's first block: reads it */
        n = ubj_pwrite(P.fs, P.cold, P.r_buf, WR_LEN, WR_OFF);
    else if (P.r_write == 2)   /* /d/f1: directory and inode blocks cold */
        n = ubj_unlink(P.fs, tpath_ino(P.fs, "/d"), "f1");
    else
        n = P.r_getattr ? ubj_getattr(P.fs, P.first, &P.r_st)
                        : ubj_pread(P.fs, P.cold, P.r_buf, P.r_len, 0);
    pthread_mutex_lock(&P.m);
    P.r_n = n;
    P.r_done = 1;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.m);
    return NULL;
}

/* thread_s -- what must not wait for R: getattr of a cached file, statfs. */
static void *thread_s(void *arg)
{
    (void)arg;
    struct ubj_stat st;
    struct ubj_statfs sf;
    int rc = ubj_getattr(P.fs, P.warm, &st);
    if (rc == 0)
        rc = ubj_statfs_get(P.fs, &sf);
    pthread_mutex_lock(&P.m);
    P.s_rc = rc;
    P.s_done = 1;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.m);
    return NULL;
}

/* setup -- mount mode m; "cold" (COLD_BYTES of pattern 1, written in
 * CHUNKs and synced: its first blocks are out of the cache) and "warm"
 * (one block, read: cached). */
static void setup(struct tmount *tm, const char *m)
{
    tm_mount(tm, m, NBUFS, 3600u * 1000u);   /* no timer meanwhile */
    P.fs = tm->fs;
    assert_ok(tpath_mkdir(tm->fs, "/d", 0755, NULL));
    for (int i = 0; i < NFILES; i++) {
        char name[32];
        snprintf(name, sizeof name, "/d/f%d", i);
        assert_ok(tpath_put(tm->fs, name, "abc", 3));
    }
    P.first = tpath_ino(tm->fs, "/d/f0");
    assert_ok(tpath_create(tm->fs, "/cold", 0644, NULL));
    assert_ok(tpath_create(tm->fs, "/warm", 0644, NULL));
    P.cold = tpath_ino(tm->fs, "/cold");
    P.warm = tpath_ino(tm->fs, "/warm");
    uint8_t *buf = malloc(CHUNK);
    assert_non_null(buf);
    for (uint32_t off = 0; off < COLD_BYTES; off += CHUNK) {
        tpattern_fill(buf, CHUNK, 1, off);
        assert_rc(ubj_pwrite(tm->fs, P.cold, buf, CHUNK, off), CHUNK);
        assert_ok(ubj_sync(tm->fs));
    }
    tpattern_fill(buf, 4096, 2, 0);
    assert_rc(ubj_pwrite(tm->fs, P.warm, buf, 4096, 0), 4096);
    assert_ok(ubj_sync(tm->fs));
    assert_rc(ubj_pread(tm->fs, P.warm, buf, 4096, 0), 4096);
    free(buf);
    P.armed = P.parked = P.release = P.r_done = P.s_done = P.r_getattr = P.r_write = 0;
    P.r_n = 0;
    P.s_rc = 0;
}

/* park_r -- start R reading len bytes of cold at 0 and wait until it is
 * parked in its device read; false (R released and joined, *why set) if it
 * never parks. */
static bool park_r(pthread_t *r, size_t len, const char *m, char *why, size_t wn)
{
    P.r_len = len;
    P.r_buf = calloc(1, len);
    pthread_mutex_lock(&P.m);
    P.armed = 1;
    pthread_mutex_unlock(&P.m);
    ubj_cache_test_read_hook(read_hook, NULL);
    assert_int_equal(pthread_create(r, NULL, thread_r, NULL), 0);
    if (tflag_wait(&P.m, &P.cv, &P.parked, WAIT_MS))
        return true;
    snprintf(why, wn, "mode %s: the cold %s never parked in an unlocked device "
             "read (it hit the cache, or kept the lock)", m,
             P.r_write == 1 ? "pwrite" : P.r_write == 2 ? "unlink"
             : P.r_getattr ? "getattr" : "pread");
    tflag_set(&P.m, &P.cv, &P.release);
    pthread_join(*r, NULL);
    return false;
}

/* release_r -- let R go, join it, remove the hook. */
static void release_r(pthread_t r)
{
    tflag_set(&P.m, &P.cv, &P.release);
    pthread_join(r, NULL);
    ubj_cache_test_read_hook(NULL, NULL);
}

/* stat_both -- test_stat_while_read_parked (getattr false) or
 * test_stat_while_getattr_parked in mode m; why: "" or the failure. */
static void stat_both(const char *m, bool getattr, char *why, size_t wn)
{
    struct tmount tm;
    why[0] = '\0';
    setup(&tm, m);
    P.r_getattr = getattr;
    pthread_t r, s;
    if (park_r(&r, 8192, m, why, wn)) {
        assert_int_equal(pthread_create(&s, NULL, thread_s, NULL), 0);
        int returned = tflag_wait(&P.m, &P.cv, &P.s_done, WAIT_MS);
        release_r(r);
        pthread_join(s, NULL);
        if (!returned)
            snprintf(why, wn, "mode %s: getattr/statfs of cached data waited "
                     "behind a parked device read (the mount lock was held "
                     "through it)", m);
        else if (P.s_rc != 0)
            snprintf(why, wn, "mode %s: getattr/statfs: %d", m, P.s_rc);
        else if (getattr && (P.r_n != 0 || P.r_st.size != 3))
            snprintf(why, wn, "mode %s: the parked getattr returned %zd, size "
                     "%llu, want 0 and 3", m, P.r_n,
                     (unsigned long long)P.r_st.size);
        else if (getattr)
            ;
        else if (P.r_n != 8192)
            snprintf(why, wn, "mode %s: the parked pread returned %zd, want 8192",
                     m, P.r_n);
        else if (tpattern_check(P.r_buf, 8192, 1, 0) != 8192)
            snprintf(why, wn, "mode %s: the parked pread returned wrong bytes", m);
    }
    ubj_cache_test_read_hook(NULL, NULL);
    free(P.r_buf);
    P.r_buf = NULL;
    tm_done(&tm, m);
}

/* stat_one, stat_meta_one -- the two ways of stat_both. */
static void stat_one(const char *m, char *why, size_t wn)
{
    stat_both(m, false, why, wn);
}

static void stat_meta_one(const char *m, char *why, size_t wn)
{
    stat_both(m, true, why, wn);
}

/* reval_one -- test_read_revalidates in mode m. */
static void reval_one(const char *m, char *why, size_t wn)
{
    struct tmount tm;
    why[0] = '\0';
    setup(&tm, m);
    pthread_t r;
    if (park_r(&r, 8192, m, why, wn)) {
        /* R is outside the lock: these must not wait for it */
        int trc = tpath_truncate(tm.fs, "/cold", 0);
        int crc = tpath_create(tm.fs, "/taker", 0644, NULL);
        uint8_t *buf = malloc(CHUNK);
        assert_non_null(buf);
        memset(buf, 0xee, CHUNK);
        ssize_t wrc = crc == 0 ? tpath_write(tm.fs, "/taker", buf, CHUNK, 0) : -1;
        int src = ubj_sync(tm.fs);
        free(buf);
        release_r(r);
        if (trc != 0 || crc != 0 || wrc != (ssize_t)CHUNK || src != 0)
            snprintf(why, wn, "mode %s: truncate %d, create %d, write %zd, sync "
                     "%d while a read was parked", m, trc, crc, wrc, src);
        else if (P.r_n != 0)
            snprintf(why, wn, "mode %s: a pread parked while the file was "
                     "truncated to 0 returned %zd bytes, want 0 (it kept what it "
                     "read without revalidating)", m, P.r_n);
    }
    ubj_cache_test_read_hook(NULL, NULL);
    free(P.r_buf);
    P.r_buf = NULL;
    tm_done(&tm, m);
}

/* write_both -- test_write_reads_first (change false) or
 * test_write_after_preread_change (change true) in mode m, R the writer
 * kind (1 pwrite, 2 unlink).  While R is parked in its pre-read: S's
 * getattr/statfs return; with `change`, cold is truncated to 0 meanwhile
 * -- R's pwrite must then write into the empty file (a pre-read is only
 * a prefetch: the write looks everything up again). */
static void write_both(const char *m, int kind, bool change, char *why, size_t wn)
{
    struct tmount tm;
    why[0] = '\0';
    setup(&tm, m);
    P.r_write = kind;
    pthread_t r, s;
    if (park_r(&r, WR_LEN, m, why, wn)) {
        tpattern_fill(P.r_buf, WR_LEN, 3, WR_OFF);
        assert_int_equal(pthread_create(&s, NULL, thread_s, NULL), 0);
        int returned = tflag_wait(&P.m, &P.cv, &P.s_done, WAIT_MS);
        int trc = change ? tpath_truncate(tm.fs, "/cold", 0) : 0;
        release_r(r);
        pthread_join(s, NULL);
        struct ubj_stat st = { 0 };
        uint8_t got[WR_OFF + WR_LEN];
        ssize_t back = kind == 1 ? ubj_pread(tm.fs, P.cold, got, sizeof got, 0) : 0;
        (void)ubj_getattr(tm.fs, P.cold, &st);
        if (!returned)
            snprintf(why, wn, "mode %s: getattr/statfs waited behind a writer "
                     "parked in its device read (the writer read under the mount "
                     "lock)", m);
        else if (P.s_rc != 0 || trc != 0)
            snprintf(why, wn, "mode %s: getattr/statfs %d, truncate %d", m, P.s_rc, trc);
        else if (kind == 2 && (P.r_n != 0 || tpath_ino(tm.fs, "/d/f1") != 0))
            snprintf(why, wn, "mode %s: the parked unlink returned %zd", m, P.r_n);
        else if (kind == 1 && P.r_n != (ssize_t)WR_LEN)
            snprintf(why, wn, "mode %s: the parked pwrite returned %zd", m, P.r_n);
        else if (kind == 1 && change && (st.size != WR_OFF + WR_LEN ||
                                         back != (ssize_t)(WR_OFF + WR_LEN) ||
                                         tpattern_check(got + WR_OFF, WR_LEN, 3,
                                                        WR_OFF) != WR_LEN ||
                                         got[0] != 0 || got[WR_OFF - 1] != 0))
            snprintf(why, wn, "mode %s: a pwrite whose pre-read saw the old file "
                     "wrote the truncated one wrong (size %llu, read %zd)", m,
                     (unsigned long long)st.size, back);
        else if (kind == 1 && !change && (back != (ssize_t)sizeof got ||
                                          tpattern_check(got, WR_OFF, 1, 0) != WR_OFF ||
                                          tpattern_check(got + WR_OFF, WR_LEN, 3,
                                                         WR_OFF) != WR_LEN))
            snprintf(why, wn, "mode %s: the parked pwrite's bytes are wrong", m);
    }
    ubj_cache_test_read_hook(NULL, NULL);
    free(P.r_buf);
    P.r_buf = NULL;
    tm_done(&tm, m);
}

/* write_one, unlink_one, write_change_one -- the ways of write_both. */
static void write_one(const char *m, char *why, size_t wn)
{
    write_both(m, 1, false, why, wn);
}

static void unlink_one(const char *m, char *why, size_t wn)
{
    write_both(m, 2, false, why, wn);
}

static void write_change_one(const char *m, char *why, size_t wn)
{
    write_both(m, 1, true, why, wn);
}

/* One test of one mode. */
struct one_test {
    void (*one)(const char *m, char *why, size_t wn);
};

/* with_alarm -- tm_all_modes' callback: alarm re-armed, then the test
 * (a struct one_test) in mode m. */
static void with_alarm(const char *m, void *arg, char *why, size_t wn)
{
    alarm(WATCHDOG_S);
    ((const struct one_test *)arg)->one(m, why, wn);
}

/* run_all -- test one in every mode, with the broken variant `brk` on
 * (set(true)) if UBJ_TEST_BREAK names it. */
static void run_all(void (*one)(const char *, char *, size_t), const char *brk,
                    void (*set)(bool))
{
    const char *want = getenv("UBJ_TEST_BREAK");
    set(want != NULL && strcmp(want, brk) == 0);
    struct one_test t = { one };
    tm_all_modes(with_alarm, &t, NULL);
    set(false);
}

/* run_both_paths -- run_all for the read paths: off-page (one block per
 * read: ubj_cache_get_unlocking), off (R's two blocks in one read:
 * ubj_cache_get_run_unlocking) and linux (the window read ahead:
 * ubj_cache_readahead releasing the lock). */
static void run_both_paths(void (*one)(const char *, char *, size_t), const char *brk,
                           void (*set)(bool))
{
    static const char *const paths[] = { "off-page", "off", "linux" };
    for (int i = 0; i < 3; i++) {
        tm_readahead = paths[i];
        run_all(one, brk, set);
    }
    tm_readahead = NULL;
}

/* test_stat_while_read_parked -- every mode and read path (see the top). */
static void test_stat_while_read_parked(void **state)
{
    (void)state;
    run_both_paths(stat_one, "unlock-none", ubj_cache_test_unlock_break);
}

/* test_stat_while_getattr_parked -- every mode (see the top). */
static void test_stat_while_getattr_parked(void **state)
{
    (void)state;
    run_all(stat_meta_one, "unlock-none", ubj_cache_test_unlock_break);
}

/* test_read_revalidates -- every mode and read path (see the top). */
static void test_read_revalidates(void **state)
{
    (void)state;
    run_both_paths(reval_one, "no-revalidate", fs_file_test_break);
}

/* test_write_reads_first -- every mode: a pwrite keeping bytes of a cold
 * block, and an unlink whose directory and inode blocks are cold, read
 * them before their handles start, outside the mount lock (file.c F5,
 * fs_start_read_first): parked there, they do not stop a getattr and a
 * statfs.  UBJ_TEST_BREAK=no-preread (the writer reads under the lock,
 * after its write access, as before) fails both: the writer never parks
 * in an unlocked read. */
static void test_write_reads_first(void **state)
{
    (void)state;
    run_all(write_one, "no-preread", fs_preread_test_break);
    run_all(unlink_one, "no-preread", fs_preread_test_break);
}

/* no_break -- run_all's setter for a test without a broken variant. */
static void no_break(bool on)
{
    (void)on;
}

/* test_write_after_preread_change -- every mode: cold truncated to 0
 * while a pwrite is parked in its pre-read; the pwrite then writes the
 * empty file right (zeros, then its bytes): the pre-read is a prefetch. */
static void test_write_after_preread_change(void **state)
{
    (void)state;
    run_all(write_change_one, "-", no_break);
}

/* main -- run this suite's tests under the watchdog. */
int main(void)
{
    setvbuf(stderr, NULL, _IONBF, 0);
    signal(SIGALRM, watchdog);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_while_read_parked),
        cmocka_unit_test(test_stat_while_getattr_parked),
        cmocka_unit_test(test_read_revalidates),
        cmocka_unit_test(test_write_reads_first),
        cmocka_unit_test(test_write_after_preread_change),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
/* main -- a plain build has no test hooks: skip, saying why. */
int main(void)
{
    fprintf(stderr, "concurrency_unlocked: skipped: built without "
            "UBJ_TEST_HOOKS (no read hook to park a read with)\n");
    return 77;
}
#endif /* UBJ_TEST_HOOKS */
