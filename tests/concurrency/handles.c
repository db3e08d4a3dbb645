/*
 * concurrency/handles.c -- the handle layer's commit barrier and credits
 * (src/txn/handle.c), in every mode (none, ubj, ordered, journal,
 * writeback, trial with its hooks):
 *  - test_fsync_waits_for_parked_handle: thread A's create is parked
 *    inside its handle, after its first ubj_txn_dirty, by the test hook
 *    (ubj_handle_test_hook; it releases the mount lock while parked, as a
 *    device read will once the mount lock is released around them, issue
 *    20 item 3), while thread B fsyncs.  B's commit must wait in the
 *    barrier until A's handle stops (it must not commit half of the
 *    create): B has not returned while A is parked, no commit was counted
 *    meanwhile, and B returns once A is released; afterwards the name is
 *    there and fsck is clean.  With the broken variant `handle-no-wait`
 *    (UBJ_TEST_BREAK=handle-no-wait in the environment; the barrier does
 *    not wait) this test fails: B returns while A is parked.
 *  - test_start_waits_for_credits: the same parking, thread A a write
 *    whose credits fill the mode's capacity (64-buffer cache), thread B a
 *    create: B's start must wait (for room; in ubj for the commit its
 *    start policy asks first) until A stops; both then succeed, the bytes
 *    read back.  Shown to fail with a start that ignores the room
 *    (hl_may_open without its capacity test, a temporary edit).
 *  - test_write_access_waits_for_write: the stable-buffer rule
 *    (docs/DESIGN.md, "Cache write hooks"): a write of a synced block,
 *    made by a thread without the mount lock, is parked inside its window
 *    (io_busy set, snapshot not taken) by the cache's test hook
 *    (ubj_cache_test_write_hook) while another thread's pwrite overwrites
 *    the block.  In every mode the pwrite must wait in write_access (still
 *    waiting 300 ms later) and the device must get the bytes the block held
 *    when the write began; in ubj, a FROZEN block written zero-copy (the
 *    timer checkpoint's way) must not hold the pwrite up (it works on a
 *    copy) and the device gets the committed bytes.  UBJ_TEST_BREAK=
 *    stable-no-wait (the wait returns at once) fails it in every mode.
 *  - test_stress_small_cache: 4 threads mixing create, write, rename,
 *    fsync and unlink on a 64-buffer cache (the timer firing every 2 ms),
 *    in every mode: all finish (a watchdog turns a hang into a failure),
 *    every name each thread kept is there with its bytes, fsck is clean.
 * Threads never call cmocka asserts: they record the first failure and
 * the main thread fails the test after joining.
 */
#include "testutil.h"

#if UBJ_TEST_HOOKS   /* the hook and the broken variant are test-build only */
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include "fs/fs.h"
#include "txn/handle.h"

#define WATCHDOG_S 60           /* this long with no progress fails the run: re-armed
                                   at each stress round and mode (a fixed budget for
                                   the whole run failed by slowness alone: ASan on a
                                   loaded machine, 61 s) */
#define WAIT_MS 5000            /* one wait for another thread */
#define NTHREADS 4
#define ROUNDS 150
#define MAXLEN (20 * 1024)

#define modes tm_modes
#define NMODES TM_NMODES

static volatile sig_atomic_t phase_mode = -1;   /* for the watchdog's message */

/* watchdog -- SIGALRM: a hang becomes a failure, naming the mode. */
static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "handles: watchdog: no progress for 60 s, a thread hung (deadlock?) in mode ";
    (void)!write(2, msg, sizeof msg - 1);
    if (phase_mode >= 0) {
        const char *m = modes[phase_mode];
        (void)!write(2, m, strlen(m));
    }
    (void)!write(2, "\n", 1);
    _exit(1);
}

/* ---- the parked handle ----------------------------------------------------------- */

/* The pairs: A parks inside its handle, B must wait for it. */
enum pair {
    PAIR_FSYNC,     /* A creates, B fsyncs: B waits in the commit barrier */
    PAIR_CREDITS,   /* A writes BIG_WRITE (credits: the whole capacity), B
                       creates: B's start waits for room (in ubj, for the
                       commit its start asks first) */
};
#define BIG_WRITE (24u * 4096u)   /* 2 * 24 + 22 credits > 64 buffers */

struct park {
    pthread_mutex_t m;
    pthread_cond_t cv;
    enum pair pair;
    int parked;          /* [m] A is parked in its handle */
    int release;         /* [m] A may go on */
    int b_done;          /* [m] B's operation returned */
    int b_rc;
    uint64_t commits_parked;   /* commits counted when A parked */
    struct ubj_fs *fs;
    ubj_ino_t big;       /* PAIR_CREDITS: A's file */
    uint8_t *buf;        /* BIG_WRITE bytes of a pattern */
};

static struct park P = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
static _Thread_local int park_me;   /* this thread's next dirty parks */

/* park_hook -- after a dirty of a thread marked park_me: release the
 * mount lock and wait until the test releases the thread. */
static void park_hook(void *arg, struct ubj_handle *h, uint64_t blkno)
{
    (void)arg;
    (void)blkno;
    if (!park_me)
        return;
    park_me = 0;
    pthread_mutex_t *ml = h->t->lock;
    pthread_mutex_lock(&P.m);
    P.parked = 1;
    P.commits_parked = h->t->stats.commits;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(ml);
    while (!P.release)
        pthread_cond_wait(&P.cv, &P.m);
    pthread_mutex_unlock(&P.m);
    pthread_mutex_lock(ml);
}

/* thread_a -- the operation that parks: a create, or the big write. */
static void *thread_a(void *arg)
{
    int *rc = arg;
    park_me = 1;
    if (P.pair == PAIR_FSYNC) {
        *rc = ubj_create(P.fs, UBJ_ROOT_INO, "parked", 0644, NULL, NULL);
    } else {
        ssize_t n = ubj_pwrite(P.fs, P.big, P.buf, BIG_WRITE, 0);
        *rc = n == (ssize_t)BIG_WRITE ? 0 : n < 0 ? (int)n : -EIO;
    }
    return NULL;
}

/* thread_b -- the operation that must wait: the fsync, or a create. */
static void *thread_b(void *arg)
{
    (void)arg;
    int rc = P.pair == PAIR_FSYNC
                 ? ubj_fsync(P.fs, UBJ_ROOT_INO, 0)
                 : ubj_create(P.fs, UBJ_ROOT_INO, "second", 0644, NULL, NULL);
    pthread_mutex_lock(&P.m);
    P.b_done = 1;
    P.b_rc = rc;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.m);
    return NULL;
}

/* b_waiting -- B is waiting in the handle layer (the timer is off, so
 * the waiter can only be B): in the barrier (fsync), or at its start
 * (credits: for room, or for its start's commit). */
static bool b_waiting(struct ubj_fs *fs, enum pair pair)
{
    pthread_mutex_lock(&fs->lock);
    const struct ubj_handles *hs = &fs->txn.hs;
    bool w = pair == PAIR_FSYNC ? hs->waiting_commit > 0
                                : hs->waiting_commit + hs->waiting_start > 0;
    pthread_mutex_unlock(&fs->lock);
    return w;
}

/* b_done -- B returned. */
static int b_done(void)
{
    pthread_mutex_lock(&P.m);
    int done = P.b_done;
    pthread_mutex_unlock(&P.m);
    return done;
}

/* park_one -- pair `pair` in mode m; a failure message in why ("" when
 * B waited for A). */
static void park_one(const char *m, enum pair pair, char *why, size_t whysz)
{
    struct tmount tm;
    why[0] = '\0';
    /* no timer commit meanwhile; 64 buffers: the big write's credits
     * fill every mode's capacity */
    tm_mount(&tm, m, pair == PAIR_FSYNC ? 256 : 64, 3600u * 1000u);
    P.fs = tm.fs;
    P.pair = pair;
    P.parked = P.release = P.b_done = 0;
    if (pair == PAIR_CREDITS) {
        struct ubj_stat st;
        assert_ok(ubj_create(tm.fs, UBJ_ROOT_INO, "big", 0644, NULL, &st));
        P.big = st.ino;
        P.buf = malloc(BIG_WRITE);
        assert_non_null(P.buf);
        tpattern_fill(P.buf, BIG_WRITE, 77, 0);
    }
    ubj_handle_test_hook(park_hook, NULL);
    pthread_t a, b;
    int arc = -1;
    assert_int_equal(pthread_create(&a, NULL, thread_a, &arc), 0);
    assert_true(tflag_wait(&P.m, &P.cv, &P.parked, WAIT_MS));
    assert_int_equal(pthread_create(&b, NULL, thread_b, NULL), 0);
    /* B either waits (right) or returns (wrong) */
    for (int i = 0; i < WAIT_MS && !b_waiting(tm.fs, pair) && !b_done(); i++)
        t_sleep_ns(1000000);
    bool waiting = b_waiting(tm.fs, pair);
    pthread_mutex_lock(&tm.fs->lock);
    uint64_t commits = tm.fs->txn.stats.commits;
    pthread_mutex_unlock(&tm.fs->lock);
    pthread_mutex_lock(&P.m);
    const char *bop = pair == PAIR_FSYNC ? "fsync" : "a second create";
    if (P.b_done && pair == PAIR_FSYNC)
        snprintf(why, whysz, "mode %s: fsync returned (%d) while a create was "
                 "parked inside its handle: it committed half of it", m, P.b_rc);
    else if (P.b_done)
        snprintf(why, whysz, "mode %s: a create (%d) ran while a write holding "
                 "the whole credit capacity was parked in its handle", m, P.b_rc);
    else if (!waiting)
        snprintf(why, whysz, "mode %s: %s neither returned nor waits in the "
                 "handle layer", m, bop);
    else if (commits != P.commits_parked)
        snprintf(why, whysz, "mode %s: a commit was counted while A was parked", m);
    P.release = 1;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.m);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ubj_handle_test_hook(NULL, NULL);
    if (why[0] == '\0' && (arc != 0 || P.b_rc != 0))
        snprintf(why, whysz, "mode %s: A %d, B %d", m, arc, P.b_rc);
    struct ubj_stat st;
    if (why[0] == '\0' && tpath_stat(tm.fs, pair == PAIR_FSYNC ? "/parked" : "/second",
                                      &st) != 0)
        snprintf(why, whysz, "mode %s: a created name is missing", m);
    if (pair == PAIR_CREDITS) {
        uint8_t *got = malloc(BIG_WRITE);
        assert_non_null(got);
        if (why[0] == '\0' && (tpath_read(tm.fs, "/big", got, BIG_WRITE, 0) != BIG_WRITE ||
                               memcmp(got, P.buf, BIG_WRITE) != 0))
            snprintf(why, whysz, "mode %s: the big write does not read back", m);
        free(got);
        free(P.buf);
        P.buf = NULL;
    }
    tm_done(&tm, m);
}

/* park_mode -- tm_all_modes' callback: pair *(enum pair *)arg in mode m. */
static void park_mode(const char *m, void *arg, char *why, size_t wn)
{
    park_one(m, *(enum pair *)arg, why, wn);
}

/* park_all -- pair `pair` in every mode; fails with the first message. */
static void park_all(enum pair pair)
{
    tm_all_modes(park_mode, &pair, &phase_mode);
}

/* test_fsync_waits_for_parked_handle -- every mode (see the top). */
static void test_fsync_waits_for_parked_handle(void **state)
{
    (void)state;
    const char *brk = getenv("UBJ_TEST_BREAK");
    ubj_handle_test_break(brk != NULL && strcmp(brk, "handle-no-wait") == 0);
    park_all(PAIR_FSYNC);
    ubj_handle_test_break(false);
}

/* test_start_waits_for_credits -- every mode (see the top). */
static void test_start_waits_for_credits(void **state)
{
    (void)state;
    park_all(PAIR_CREDITS);
}

/* ---- stable buffers under I/O ------------------------------------------------------ */

/* One parked write of block S.blkno (thread W, without the mount lock)
 * and the file-system write that wants to change the block meanwhile
 * (thread M, a pwrite). */
struct stab {
    pthread_mutex_t m;
    pthread_cond_t cv;
    struct ubj_fs *fs;
    struct ubj_buf *b;      /* the block's buffer (the main thread's ref) */
    bool zero_copy;         /* W writes FROZEN b with ubj_cache_write_bufs */
    ubj_ino_t ino;
    int parked, release, m_done;   /* [m] */
    int w_rc;
    ssize_t m_n;
    uint8_t at_park[UBJ_BS];       /* b's bytes when W's window opened */
    uint8_t want[UBJ_BS];          /* M's bytes */
};
static struct stab S = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* stab_hook -- the cache's write of S.b opened its window: keep the live
 * bytes, park until released (once). */
static void stab_hook(void *arg, struct ubj_cache *c, struct ubj_buf *b)
{
    (void)arg;
    (void)c;
    pthread_mutex_lock(&S.m);
    if (b == S.b && !S.parked) {
        memcpy(S.at_park, b->data, UBJ_BS);
        tflag_park_locked(&S.m, &S.cv, &S.parked, &S.release);
    }
    pthread_mutex_unlock(&S.m);
}

/* stab_w -- the write, as a thread without the mount lock makes one. */
static void *stab_w(void *arg)
{
    (void)arg;
    if (S.zero_copy)   /* the timer's checkpoint: a FROZEN buffer, zero copy */
        S.w_rc = ubj_cache_write_bufs(S.fs->cache, &S.b->idx, NULL, 1, 0);
    else
        S.w_rc = ubj_cache_write_home(S.fs->cache, S.b);
    return NULL;
}

/* stab_m -- a file-system write of the whole block. */
static void *stab_m(void *arg)
{
    (void)arg;
    S.m_n = ubj_pwrite(S.fs, S.ino, S.want, UBJ_BS, 0);
    tflag_set(&S.m, &S.cv, &S.m_done);   /* publishes m_n too */
    return NULL;
}

/* stab_find -- the newest cached buffer holding bytes `a` (referenced),
 * and its state. */
static struct ubj_buf *stab_find(struct ubj_cache *c, const uint8_t *a, uint32_t *state)
{
    for (uint32_t i = 0; i < ubj_cache_nbufs(c); i++) {
        struct ubj_buf *b = ubj_cache_buf_at(c, i);
        struct ubj_buf_view v = ubj_cache_peek(c, b);
        if (v.state == UBJ_BUF_FREE || v.newer != UBJ_NOBUF ||
            memcmp(b->data, a, UBJ_BS) != 0)
            continue;
        struct ubj_buf *got;
        assert_ok(ubj_cache_lookup(c, v.blkno, &got));
        assert_ptr_equal(got, b);
        *state = v.state;
        return b;
    }
    fail_msg("the file's block is not in the cache");
    return NULL;
}

/*
 * stable_one -- in mode m: file /f's block holds bytes A, synced (CLEAN;
 * with `frozen`, mode ubj: fsynced, FROZEN).  W's write of it parks
 * inside its window; M overwrites the block with bytes B.  In place
 * (every mode's CLEAN buffer) M must wait in write_access until W's
 * snapshot is taken; on a FROZEN buffer (ubj) M works on a copy and must
 * not wait.  Either way the device must get A, the bytes of the window's
 * start, and the file must read B.  A failure message in why.
 */
static void stable_one(const char *m, bool frozen, char *why, size_t whysz)
{
    struct tmount tm;
    struct ubj_stat st;
    uint8_t a[UBJ_BS], got[UBJ_BS];
    why[0] = '\0';
    tm_mount(&tm, m, 256, 3600u * 1000u);   /* no timer write meanwhile */
    tpattern_fill(a, sizeof a, 5, 0);
    assert_ok(ubj_create(tm.fs, UBJ_ROOT_INO, "f", 0644, NULL, &st));
    assert_int_equal(ubj_pwrite(tm.fs, st.ino, a, sizeof a, 0), (ssize_t)sizeof a);
    assert_ok(frozen ? ubj_fsync(tm.fs, st.ino, 0) : ubj_sync(tm.fs));
    uint32_t state;
    S = (struct stab){ .m = S.m, .cv = S.cv, .fs = tm.fs, .ino = st.ino,
                       .zero_copy = frozen, .b = stab_find(tm.fs->cache, a, &state) };
    tpattern_fill(S.want, sizeof S.want, 6, 0);
    assert_int_equal(state == UBJ_BUF_FROZEN, frozen);
    uint64_t blkno = ubj_cache_peek(tm.fs->cache, S.b).blkno;
    struct ubj_cache_stats c0, c1;
    ubj_cache_stats_get(tm.fs->cache, &c0);
    ubj_cache_test_write_hook(stab_hook, NULL);
    pthread_t w, mt;
    assert_int_equal(pthread_create(&w, NULL, stab_w, NULL), 0);
    assert_true(tflag_wait(&S.m, &S.cv, &S.parked, WAIT_MS));
    assert_int_equal(pthread_create(&mt, NULL, stab_m, NULL), 0);
    /* in place: M waits (300 ms tell); on a copy: M returns */
    int during = tflag_wait(&S.m, &S.cv, &S.m_done, frozen ? WAIT_MS : 300);
    tflag_set(&S.m, &S.cv, &S.release);
    pthread_join(w, NULL);
    pthread_join(mt, NULL);
    ubj_cache_test_write_hook(NULL, NULL);
    ubj_cache_stats_get(tm.fs->cache, &c1);
    assert_ok(ubj_bdev_read(tm.dev, blkno, 1, got));
    const char *how = frozen ? "a FROZEN buffer (zero copy)" : "in place";
    if (S.w_rc != 0 || S.m_n != (ssize_t)UBJ_BS)
        snprintf(why, whysz, "mode %s, %s: write %d, pwrite %zd", m, how, S.w_rc, S.m_n);
    else if (memcmp(S.at_park, a, UBJ_BS) != 0)
        snprintf(why, whysz, "mode %s, %s: block %llu changed before the write", m, how,
                 (unsigned long long)blkno);
    else if (!frozen && during)
        snprintf(why, whysz, "mode %s, %s: a pwrite changed block %llu inside a "
                 "write's stable-buffer window (it did not wait)", m, how,
                 (unsigned long long)blkno);
    else if (frozen && !during)
        snprintf(why, whysz, "mode %s, %s: the pwrite waited for a checkpoint's "
                 "write instead of working on a copy", m, how);
    else if (memcmp(got, S.at_park, UBJ_BS) != 0)
        snprintf(why, whysz, "mode %s, %s: block %llu was written with other bytes "
                 "than it held when its write began", m, how, (unsigned long long)blkno);
    else if (!frozen && c1.stable_waits == c0.stable_waits)
        snprintf(why, whysz, "mode %s, %s: no stable wait was counted", m, how);
    else if (tpath_read(tm.fs, "/f", got, UBJ_BS, 0) != UBJ_BS ||
             memcmp(got, S.want, UBJ_BS) != 0)
        snprintf(why, whysz, "mode %s, %s: the pwrite does not read back", m, how);
    ubj_cache_put(tm.fs->cache, S.b);
    S.b = NULL;
    tm_done(&tm, m);
}

/* test_write_access_waits_for_write -- the stable-buffer rule in every
 * mode (in place), and UBJ's copy of a FROZEN buffer; UBJ_TEST_BREAK=
 * stable-no-wait (write_access does not wait) must fail it. */
static void test_write_access_waits_for_write(void **state)
{
    (void)state;
    const char *brk = getenv("UBJ_TEST_BREAK");
    ubj_cache_test_break(brk != NULL && strcmp(brk, "stable-no-wait") == 0);
    char why[256], first[256] = "";
    for (size_t i = 0; i <= NMODES; i++) {
        phase_mode = (sig_atomic_t)(i < NMODES ? i : 1);
        bool frozen = i == NMODES;      /* the last round: ubj, FROZEN */
        stable_one(modes[phase_mode], frozen, why, sizeof why);
        if (why[0] != '\0') {
            fprintf(stderr, "%s\n", why);
            if (first[0] == '\0')
                snprintf(first, sizeof first, "%s", why);
        }
    }
    ubj_cache_test_break(false);
    if (first[0] != '\0')
        fail_msg("%s", first);
}

/* ---- the stress test ----------------------------------------------------------------- */

struct stress {
    struct ubj_fs *fs;
    int id;
    ubj_ino_t dir;
    char msg[256];
    uint64_t kept_seed[ROUNDS];
    size_t kept_len[ROUNDS];
    int kept[ROUNDS];
};

#define SCHECK(w, c, ...) do { if (!(c)) { snprintf((w)->msg, sizeof (w)->msg, __VA_ARGS__); return NULL; } } while (0)

/* stress_main -- create, write, rename, fsync every 4th, unlink every 3rd. */
static void *stress_main(void *arg)
{
    struct stress *w = arg;
    uint8_t *buf = malloc(MAXLEN);
    SCHECK(w, buf != NULL, "malloc");
    struct tprng r;
    tprng_seed(&r, 1000u + (uint64_t)w->id);
    for (int i = 0; i < ROUNDS; i++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "t%d-%d", w->id, i);
        snprintf(b, sizeof b, "r%d-%d", w->id, i);
        struct ubj_stat st;
        int rc = ubj_create(w->fs, w->dir, a, 0644, NULL, &st);
        SCHECK(w, rc == 0, "create %s: %d %s", a, rc, ubj_errormsg());
        size_t len = (size_t)tprng_below(&r, MAXLEN);
        uint64_t seed = tprng_next(&r);
        tpattern_fill(buf, len, seed, 0);
        ssize_t n = ubj_pwrite(w->fs, st.ino, buf, len, 0);
        SCHECK(w, n == (ssize_t)len, "write %s: %zd %s", a, n, ubj_errormsg());
        rc = ubj_rename(w->fs, w->dir, a, w->dir, b, 0);
        SCHECK(w, rc == 0, "rename %s: %d %s", a, rc, ubj_errormsg());
        if (i % 4 == 0) {
            rc = ubj_fsync(w->fs, st.ino, i % 8 == 0);
            SCHECK(w, rc == 0, "fsync %s: %d %s", b, rc, ubj_errormsg());
        }
        if (i % 3 == 0) {
            rc = ubj_unlink(w->fs, w->dir, b);
            SCHECK(w, rc == 0, "unlink %s: %d %s", b, rc, ubj_errormsg());
        } else {
            w->kept[i] = 1;
            w->kept_seed[i] = seed;
            w->kept_len[i] = len;
        }
        alarm(WATCHDOG_S);      /* progress: a round finished */
    }
    free(buf);
    return NULL;
}

/* stress_verify -- every kept name holds its bytes. */
static void stress_verify(struct ubj_fs *fs, const struct stress *w, const char *m)
{
    uint8_t *got = malloc(MAXLEN + 1);
    assert_non_null(got);
    for (int i = 0; i < ROUNDS; i++) {
        if (!w->kept[i])
            continue;
        char p[48];
        snprintf(p, sizeof p, "/d/r%d-%d", w->id, i);
        ssize_t n = tpath_read(fs, p, got, MAXLEN + 1, 0);
        if (n != (ssize_t)w->kept_len[i] ||
            tpattern_check(got, (size_t)n, w->kept_seed[i], 0) != (size_t)n)
            fail_msg("mode %s: %s: %zd bytes, want %zu of its pattern", m, p, n,
                     w->kept_len[i]);
    }
    free(got);
}

/* test_stress_small_cache -- every mode (see the top). */
static void test_stress_small_cache(void **state)
{
    (void)state;
    static struct stress w[NTHREADS];
    for (size_t k = 0; k < NMODES; k++) {
        const char *m = modes[k];
        phase_mode = (sig_atomic_t)k;
        alarm(WATCHDOG_S);
        struct tmount tm;
        tm_mount(&tm, m, 64, 2);
        struct ubj_stat d;
        assert_ok(ubj_mkdir(tm.fs, UBJ_ROOT_INO, "d", 0755, NULL, &d));
        pthread_t th[NTHREADS];
        for (int i = 0; i < NTHREADS; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i] = (struct stress){ .fs = tm.fs, .id = i, .dir = d.ino };
            assert_int_equal(pthread_create(&th[i], NULL, stress_main, &w[i]), 0);
        }
        for (int i = 0; i < NTHREADS; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < NTHREADS; i++)
            if (w[i].msg[0])
                fail_msg("mode %s, thread %d: %s", m, i, w[i].msg);
        for (int i = 0; i < NTHREADS; i++)
            stress_verify(tm.fs, &w[i], m);
        struct ubj_fs_stats st;
        ubj_fs_stats_get(tm.fs, &st);
        fprintf(stderr, "stress %-9s: %llu commits, %llu evictions, %llu handle "
                "waits\n", m, (unsigned long long)st.commits,
                (unsigned long long)st.cache_evictions,
                (unsigned long long)tm.fs->txn.hs.waits);
        tm_done(&tm, m);
    }
}

/* main -- run this suite's tests under the watchdog. */
int main(void)
{
    setvbuf(stderr, NULL, _IONBF, 0);
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
    const char *only = getenv("UBJ_TEST_FILTER");   /* e.g. "test_stress*" */
    if (only != NULL)
        cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsync_waits_for_parked_handle),
        cmocka_unit_test(test_start_waits_for_credits),
        cmocka_unit_test(test_write_access_waits_for_write),
        cmocka_unit_test(test_stress_small_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
/* main -- a plain build has no test hooks: skip. */
int main(void)
{
    return 77;
}
#endif /* UBJ_TEST_HOOKS */
