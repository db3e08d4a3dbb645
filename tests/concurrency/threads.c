/*
 * concurrency/threads.c -- several threads on one mount (with the
 * background commit timer running and a small cache, so write-back and
 * eviction race with the callers):
 *  - 4 threads each in their own directory and 4 in one shared directory
 *    at the same time: create / write / read back / rename / unlink /
 *    mkdir / rmdir / readdir; afterwards every directory holds exactly the
 *    names and bytes each thread's own bookkeeping says;
 *  - races on the same names: exclusive create, unlink, rename with
 *    NOREPLACE -- exactly one thread wins each;
 *  - one shared file, threads writing disjoint ranges (and extending it)
 *    at once: every byte is verified (no lost update), size is the max;
 *  - readdir of a directory other threads modify lists no name twice and
 *    every name that stays;
 *  - fsck clean after unmount.
 * Threads never call cmocka asserts: they record the first failure and
 * the main thread fails the test after joining.
 */
#include "testutil.h"

#include <pthread.h>
#include <unistd.h>

#define NSEP 4
#define NSHARED 4
#define ROUNDS 1000
#define FILE_MAX 9000

struct shared_state {
    struct ubj_fs *fs;
    pthread_mutex_t lock;
    char failure[512];         /* [lock] first failure */
    int failed;                /* [lock] */
    pthread_barrier_t start;
};

/* fail_t -- record a failure from a thread. */
__attribute__((format(printf, 2, 3)))
static void fail_t(struct shared_state *s, const char *fmt, ...)
{
    pthread_mutex_lock(&s->lock);
    if (!s->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->failure, sizeof s->failure, fmt, ap);
        va_end(ap);
        s->failed = 1;
    }
    pthread_mutex_unlock(&s->lock);
}

#define TCHECK(s, c, ...) do { if (!(c)) { fail_t((s), __VA_ARGS__); return NULL; } } while (0)

/* what each worker expects to find at the end: name -> (seed, len) */
struct expect {
    char name[64];
    uint64_t seed;
    size_t len;
    int present;
};

struct worker {
    struct shared_state *s;
    int id;
    ubj_ino_t dir;
    const char *prefix;         /* name prefix inside dir */
    struct expect files[ROUNDS];
    long ops;
};

/* put_file -- create name in dir with pattern (seed, len); verify. */
static int put_file(struct worker *w, const char *name, uint64_t seed, size_t len,
                    uint8_t *buf)
{
    struct ubj_fs *fs = w->s->fs;
    struct ubj_stat st;
    int rc = ubj_create(fs, w->dir, name, 0644, NULL, &st);
    if (rc != 0)
        return rc;
    tpattern_fill(buf, len, seed, 0);
    ssize_t n = ubj_pwrite(fs, st.ino, buf, len, 0);
    if (n != (ssize_t)len)
        return n < 0 ? (int)n : -EIO;
    memset(buf, 0, len);
    n = ubj_pread(fs, st.ino, buf, len + 10, 0);
    if (n != (ssize_t)len || tpattern_check(buf, len, seed, 0) != len)
        return -EBADMSG;
    return 0;
}

/* worker_main -- the create/write/read/rename/unlink loop. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct shared_state *s = w->s;
    struct ubj_fs *fs = s->fs;
    struct tprng r;
    tprng_seed(&r, 1000 + (uint64_t)w->id);
    uint8_t *buf = malloc(FILE_MAX + 16);
    TCHECK(s, buf != NULL, "malloc");
    pthread_barrier_wait(&s->start);
    char a[64], b[64];
    for (int i = 0; i < ROUNDS; i++) {
        struct expect *e = &w->files[i];
        snprintf(e->name, sizeof e->name, "%s-f%d", w->prefix, i);
        e->seed = tprng_next(&r);
        e->len = 1 + tprng_below(&r, FILE_MAX);
        int rc = put_file(w, e->name, e->seed, e->len, buf);
        TCHECK(s, rc == 0, "thread %d: put %s: %d (%s)", w->id, e->name, rc,
               ubj_errormsg());
        e->present = 1;
        w->ops += 4;
        if (i % 3 == 0) {           /* rename to a new name */
            snprintf(a, sizeof a, "%s", e->name);
            snprintf(e->name, sizeof e->name, "%s-r%d", w->prefix, i);
            rc = ubj_rename(fs, w->dir, a, w->dir, e->name, UBJ_RENAME_NOREPLACE);
            TCHECK(s, rc == 0, "thread %d: rename %s: %d", w->id, a, rc);
            w->ops++;
        }
        if (i % 4 == 1 && i >= 4) { /* unlink an older one */
            struct expect *o = &w->files[i - 4];
            rc = ubj_unlink(fs, w->dir, o->name);
            TCHECK(s, rc == 0, "thread %d: unlink %s: %d", w->id, o->name, rc);
            o->present = 0;
            rc = ubj_unlink(fs, w->dir, o->name);
            TCHECK(s, rc == -ENOENT, "thread %d: second unlink %s: %d", w->id,
                   o->name, rc);
            w->ops += 2;
        }
        if (i % 8 == 2) {           /* a subdirectory with a file, removed */
            snprintf(b, sizeof b, "%s-d%d", w->prefix, i);
            struct ubj_stat d;
            rc = ubj_mkdir(fs, w->dir, b, 0755, NULL, &d);
            TCHECK(s, rc == 0, "thread %d: mkdir %s: %d", w->id, b, rc);
            rc = ubj_create(fs, d.ino, "x", 0644, NULL, NULL);
            TCHECK(s, rc == 0, "thread %d: create in %s: %d", w->id, b, rc);
            rc = ubj_rmdir(fs, w->dir, b);
            TCHECK(s, rc == -ENOTEMPTY, "thread %d: rmdir %s: %d", w->id, b, rc);
            rc = ubj_unlink(fs, d.ino, "x");
            TCHECK(s, rc == 0, "thread %d: unlink x: %d", w->id, rc);
            rc = ubj_rmdir(fs, w->dir, b);
            TCHECK(s, rc == 0, "thread %d: rmdir %s: %d", w->id, b, rc);
            w->ops += 5;
        }
        if (i % 16 == 5) {          /* re-verify an older file */
            struct expect *o = &w->files[i / 2];
            if (o->present) {
                struct ubj_stat st;
                rc = ubj_lookup(fs, w->dir, o->name, &st);
                TCHECK(s, rc == 0 && st.size == o->len, "thread %d: lookup %s: %d",
                       w->id, o->name, rc);
                ssize_t n = ubj_pread(fs, st.ino, buf, FILE_MAX, 0);
                TCHECK(s, n == (ssize_t)o->len &&
                       tpattern_check(buf, o->len, o->seed, 0) == o->len,
                       "thread %d: %s content differs", w->id, o->name);
            }
            w->ops += 2;
        }
    }
    free(buf);
    return NULL;
}

/* verify_worker -- the names of dir with `prefix` are exactly the present
 * ones of w, with their bytes. */
static void verify_worker(struct ubj_fs *fs, struct worker *w)
{
    struct tdirent *v;
    size_t n;
    assert_ok(tdir_list(fs, w->dir, &v, &n));
    size_t plen = strlen(w->prefix), listed = 0;
    for (size_t i = 2; i < n; i++) {
        if (strncmp(v[i].name, w->prefix, plen) != 0 || v[i].name[plen] != '-')
            continue;
        listed++;
        for (size_t j = 2; j < i; j++)
            if (strcmp(v[j].name, v[i].name) == 0)
                fail_msg("%s listed twice", v[i].name);
    }
    size_t present = 0;
    uint8_t *buf = malloc(FILE_MAX + 16);
    assert_non_null(buf);
    for (int i = 0; i < ROUNDS; i++) {
        struct expect *e = &w->files[i];
        struct ubj_stat st;
        int rc = ubj_lookup(fs, w->dir, e->name, &st);
        if (!e->present) {
            assert_rc(rc, -ENOENT);
            continue;
        }
        present++;
        assert_ok(rc);
        assert_int_equal(st.size, e->len);
        assert_rc(ubj_pread(fs, st.ino, buf, FILE_MAX + 16, 0), (long long)e->len);
        if (tpattern_check(buf, e->len, e->seed, 0) != e->len)
            fail_msg("thread %d: %s differs at the end", w->id, e->name);
    }
    free(buf);
    free(v);
    assert_int_equal(listed, present);
}

/* mount_racy -- small cache, background timer with a short interval. */
static void mount_racy(struct ubj_bdev **dev, struct ubj_fs **fs)
{
    ubj_test_fs_new_inodes(32768, 16384, dev, fs);
    assert_ok(ubj_unmount(*fs));
    struct ubj_config cfg = { .cache_blocks = 256, .commit_interval_ms = 5 };
    assert_ok(ubj_mount(*dev, &cfg, fs));
}

/* finish -- unmount, fsck clean, destroy. */
static void finish(struct ubj_bdev *dev, struct ubj_fs *fs)
{
    ubj_test_fs_done(dev, fs);
}

/* test_separate_and_shared -- 4 threads in private dirs + 4 in one. */
static void test_separate_and_shared(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct shared_state s = { 0 };
    mount_racy(&dev, &s.fs);
    pthread_mutex_init(&s.lock, NULL);
    pthread_barrier_init(&s.start, NULL, NSEP + NSHARED);
    struct ubj_stat shared;
    assert_ok(ubj_mkdir(s.fs, UBJ_ROOT_INO, "shared", 0755, NULL, &shared));
    static struct worker w[NSEP + NSHARED];
    static const char *prefixes[] = { "p0", "p1", "p2", "p3", "s0", "s1", "s2", "s3" };
    pthread_t th[NSEP + NSHARED];
    for (int k = 0; k < NSEP + NSHARED; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].s = &s;
        w[k].id = k;
        w[k].prefix = prefixes[k];
        if (k < NSEP) {
            char n[16];
            struct ubj_stat d;
            snprintf(n, sizeof n, "own%d", k);
            assert_ok(ubj_mkdir(s.fs, UBJ_ROOT_INO, n, 0755, NULL, &d));
            w[k].dir = d.ino;
        } else {
            w[k].dir = shared.ino;
        }
    }
    uint64_t ffree0 = t_free_inodes(s.fs);
    for (int k = 0; k < NSEP + NSHARED; k++)
        assert_int_equal(pthread_create(&th[k], NULL, worker_main, &w[k]), 0);
    for (int k = 0; k < NSEP + NSHARED; k++)
        pthread_join(th[k], NULL);
    if (s.failed)
        fail_msg("%s", s.failure);
    long ops = 0, present = 0;
    for (int k = 0; k < NSEP + NSHARED; k++) {
        verify_worker(s.fs, &w[k]);
        ops += w[k].ops;
        for (int i = 0; i < ROUNDS; i++)
            present += w[k].files[i].present;
    }
    /* counters after join: inodes in use = files still present */
    assert_int_equal(ffree0 - t_free_inodes(s.fs), (uint64_t)present);
    assert_rc(tdir_count(s.fs, shared.ino), present / 2);
    struct ubj_stat st;
    assert_ok(ubj_getattr(s.fs, shared.ino, &st));
    assert_int_equal(st.nlink, 2);
    fprintf(stderr, "8 threads: %ld operations, %ld files remain\n", ops, present);
    ubj_test_remount(dev, &s.fs);
    for (int k = 0; k < NSEP + NSHARED; k++)
        verify_worker(s.fs, &w[k]);
    finish(dev, s.fs);
    pthread_barrier_destroy(&s.start);
    pthread_mutex_destroy(&s.lock);
}

/* ---- races on the same names ----------------------------------------- */

#define RACE_NAMES 300

struct racer {
    struct shared_state *s;
    ubj_ino_t dir;
    int id;
    long created, unlinked, renamed, other;
};

/* racer_main -- everyone creates, renames, unlinks the same names. */
static void *racer_main(void *arg)
{
    struct racer *r = arg;
    struct shared_state *s = r->s;
    char n[32], m[32];
    pthread_barrier_wait(&s->start);
    for (int i = 0; i < RACE_NAMES; i++) {
        snprintf(n, sizeof n, "race-%d", i);
        int rc = ubj_create(s->fs, r->dir, n, 0644, NULL, NULL);
        TCHECK(s, rc == 0 || rc == -EEXIST, "create %s: %d", n, rc);
        r->created += rc == 0;
    }
    pthread_barrier_wait(&s->start);      /* phases must not overlap */
    for (int i = 0; i < RACE_NAMES; i++) {
        snprintf(n, sizeof n, "race-%d", i);
        snprintf(m, sizeof m, "moved-%d", i);
        int rc = ubj_rename(s->fs, r->dir, n, r->dir, m, UBJ_RENAME_NOREPLACE);
        TCHECK(s, rc == 0 || rc == -ENOENT || rc == -EEXIST, "rename %s: %d", n, rc);
        r->renamed += rc == 0;
    }
    pthread_barrier_wait(&s->start);
    for (int i = 0; i < RACE_NAMES; i++) {
        snprintf(m, sizeof m, "moved-%d", i);
        int rc = ubj_unlink(s->fs, r->dir, m);
        TCHECK(s, rc == 0 || rc == -ENOENT, "unlink %s: %d", m, rc);
        r->unlinked += rc == 0;
    }
    return NULL;
}

/* test_name_races -- exactly one winner per name and per step. */
static void test_name_races(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct shared_state s = { 0 };
    mount_racy(&dev, &s.fs);
    pthread_mutex_init(&s.lock, NULL);
    pthread_barrier_init(&s.start, NULL, 4);
    struct ubj_stat d;
    assert_ok(ubj_mkdir(s.fs, UBJ_ROOT_INO, "race", 0755, NULL, &d));
    uint64_t ffree0 = t_free_inodes(s.fs);
    struct racer r[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        r[k] = (struct racer){ .s = &s, .dir = d.ino, .id = k };
        assert_int_equal(pthread_create(&th[k], NULL, racer_main, &r[k]), 0);
    }
    for (int k = 0; k < 4; k++)
        pthread_join(th[k], NULL);
    if (s.failed)
        fail_msg("%s", s.failure);
    long created = 0, renamed = 0, unlinked = 0;
    for (int k = 0; k < 4; k++) {
        created += r[k].created;
        renamed += r[k].renamed;
        unlinked += r[k].unlinked;
    }
    assert_int_equal(created, RACE_NAMES);
    assert_int_equal(renamed, RACE_NAMES);
    assert_int_equal(unlinked, RACE_NAMES);
    assert_rc(tdir_count(s.fs, d.ino), 0);
    assert_int_equal(t_free_inodes(s.fs), ffree0);
    finish(dev, s.fs);
    pthread_barrier_destroy(&s.start);
    pthread_mutex_destroy(&s.lock);
}

/* ---- one file, disjoint ranges ------------------------------------------ */

#define STRIPE 3001u            /* odd: stripes straddle block boundaries */
#define STRIPES 600u            /* per thread */
#define NWRITERS 4

struct writer {
    struct shared_state *s;
    ubj_ino_t ino;
    int id;
};

/* writer_main -- write stripes id, id+N, id+2N, ... in a shuffled order,
 * read back each right after. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct shared_state *s = w->s;
    uint8_t buf[STRIPE], out[STRIPE];
    struct tprng r;
    tprng_seed(&r, 77 + (uint64_t)w->id);
    uint32_t order[STRIPES];
    for (uint32_t j = 0; j < STRIPES; j++)
        order[j] = j;
    for (uint32_t j = STRIPES - 1; j > 0; j--) {
        uint32_t k = (uint32_t)tprng_below(&r, j + 1), t = order[j];
        order[j] = order[k];
        order[k] = t;
    }
    pthread_barrier_wait(&s->start);
    for (uint32_t j = 0; j < STRIPES; j++) {
        uint64_t off = ((uint64_t)order[j] * NWRITERS + (uint64_t)w->id) * STRIPE;
        tpattern_fill(buf, STRIPE, 5, off);
        ssize_t n = ubj_pwrite(s->fs, w->ino, buf, STRIPE, (off_t)off);
        TCHECK(s, n == STRIPE, "writer %d: pwrite at %llu: %zd", w->id,
               (unsigned long long)off, n);
        n = ubj_pread(s->fs, w->ino, out, STRIPE, (off_t)off);
        TCHECK(s, n == STRIPE && memcmp(out, buf, STRIPE) == 0,
               "writer %d: read back at %llu: %zd", w->id, (unsigned long long)off, n);
    }
    return NULL;
}

/* test_shared_file -- no lost update over a file written by 4 threads. */
static void test_shared_file(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct shared_state s = { 0 };
    mount_racy(&dev, &s.fs);
    pthread_mutex_init(&s.lock, NULL);
    pthread_barrier_init(&s.start, NULL, NWRITERS);
    struct ubj_stat st;
    assert_ok(ubj_create(s.fs, UBJ_ROOT_INO, "shared", 0644, NULL, &st));
    struct writer w[NWRITERS];
    pthread_t th[NWRITERS];
    for (int k = 0; k < NWRITERS; k++) {
        w[k] = (struct writer){ .s = &s, .ino = st.ino, .id = k };
        assert_int_equal(pthread_create(&th[k], NULL, writer_main, &w[k]), 0);
    }
    for (int k = 0; k < NWRITERS; k++)
        pthread_join(th[k], NULL);
    if (s.failed)
        fail_msg("%s", s.failure);
    size_t total = (size_t)STRIPE * STRIPES * NWRITERS;
    for (int pass = 0; pass < 2; pass++) {
        assert_ok(ubj_getattr(s.fs, st.ino, &st));
        assert_int_equal(st.size, total);
        uint8_t *all = malloc(total);
        assert_non_null(all);
        assert_rc(ubj_pread(s.fs, st.ino, all, total, 0), (long long)total);
        size_t bad = tpattern_check(all, total, 5, 0);
        free(all);
        if (bad != total)
            fail_msg("shared file: byte %zu (stripe %zu) lost (pass %d)", bad,
                     bad / STRIPE, pass);
        ubj_test_remount(dev, &s.fs);
    }
    finish(dev, s.fs);
    pthread_barrier_destroy(&s.start);
    pthread_mutex_destroy(&s.lock);
}

/* ---- readdir while others change the directory ------------------------ */

struct lister {
    struct shared_state *s;
    ubj_ino_t dir;
    int id;
    int *stop;                  /* [atomic] */
    long listings;
};

/* churn_main -- create and remove "tmp-<id>-<i>" names. */
static void *churn_main(void *arg)
{
    struct lister *l = arg;
    struct shared_state *s = l->s;
    char n[32];
    pthread_barrier_wait(&s->start);
    for (int i = 0; i < 1500; i++) {
        snprintf(n, sizeof n, "tmp-%d-%d", l->id, i);
        int rc = ubj_create(s->fs, l->dir, n, 0644, NULL, NULL);
        TCHECK(s, rc == 0, "churn create %s: %d", n, rc);
        if (i >= 10) {
            snprintf(n, sizeof n, "tmp-%d-%d", l->id, i - 10);
            rc = ubj_unlink(s->fs, l->dir, n);
            TCHECK(s, rc == 0, "churn unlink %s: %d", n, rc);
        }
    }
    return NULL;
}

/* list_fill -- collect names; chunks of 20 entries per call. */
struct lctx {
    char (*names)[32];
    size_t n, cap, limit;
    uint64_t last;
};

/* list_fill -- readdir callback: take up to `limit` names. */
static int list_fill(void *ctx, const char *name, size_t len, ubj_ino_t ino,
                     unsigned type, uint64_t cookie)
{
    struct lctx *c = ctx;
    (void)ino;
    (void)type;
    if (c->limit == 0)
        return 1;
    if (c->n < c->cap) {
        size_t l = len < 31 ? len : 31;
        memcpy(c->names[c->n], name, l);
        c->names[c->n][l] = '\0';
        c->n++;
    }
    c->limit--;
    c->last = cookie;
    return 0;
}

/* name_cmp -- qsort comparator of names. */
static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* lister_main -- list in chunks until told to stop; "keep-*" names must
 * each appear exactly once, nothing twice. */
static void *lister_main(void *arg)
{
    struct lister *l = arg;
    struct shared_state *s = l->s;
    struct lctx c = { .cap = 4000 };
    c.names = malloc(c.cap * sizeof *c.names);
    TCHECK(s, c.names != NULL, "malloc");
    pthread_barrier_wait(&s->start);
    while (!__atomic_load_n(l->stop, __ATOMIC_ACQUIRE)) {
        c.n = 0;
        c.last = 0;
        for (;;) {
            size_t before = c.n;
            c.limit = 20;
            int rc = ubj_readdir(s->fs, l->dir, c.last, list_fill, &c);
            TCHECK(s, rc == 0, "readdir: %d", rc);
            if (c.n == before)
                break;
        }
        int keep = 0;
        qsort(c.names, c.n, sizeof *c.names, name_cmp);
        for (size_t i = 0; i < c.n; i++) {
            keep += strncmp(c.names[i], "keep-", 5) == 0;
            TCHECK(s, i == 0 || strcmp(c.names[i - 1], c.names[i]) != 0,
                   "readdir listed %s twice", c.names[i]);
        }
        TCHECK(s, keep == 200, "readdir listed %d keep- names, want 200", keep);
        l->listings++;
    }
    free(c.names);
    return NULL;
}

/* test_readdir_while_changing -- 2 listers, 2 churners. */
static void test_readdir_while_changing(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct shared_state s = { 0 };
    mount_racy(&dev, &s.fs);
    pthread_mutex_init(&s.lock, NULL);
    pthread_barrier_init(&s.start, NULL, 4);
    struct ubj_stat d;
    assert_ok(ubj_mkdir(s.fs, UBJ_ROOT_INO, "dir", 0755, NULL, &d));
    char n[32];
    for (int i = 0; i < 200; i++) {
        snprintf(n, sizeof n, "keep-%d", i);
        assert_ok(ubj_create(s.fs, d.ino, n, 0644, NULL, NULL));
    }
    int stop = 0;
    struct lister l[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        l[k] = (struct lister){ .s = &s, .dir = d.ino, .id = k, .stop = &stop };
        assert_int_equal(pthread_create(&th[k], NULL, k < 2 ? churn_main : lister_main,
                                        &l[k]), 0);
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    pthread_join(th[2], NULL);
    pthread_join(th[3], NULL);
    if (s.failed)
        fail_msg("%s", s.failure);
    assert_true(l[2].listings > 0 && l[3].listings > 0);
    assert_rc(tdir_count(s.fs, d.ino), 200 + 2 * 10);
    fprintf(stderr, "readdir: %ld + %ld full listings during the churn\n",
            l[2].listings, l[3].listings);
    finish(dev, s.fs);
    pthread_barrier_destroy(&s.start);
    pthread_mutex_destroy(&s.lock);
}

/* main -- run this suite's tests. */
int main(void)
{
    alarm(300);   /* a deadlock fails the run instead of waiting for ctest */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_separate_and_shared), cmocka_unit_test(test_name_races),
        cmocka_unit_test(test_shared_file), cmocka_unit_test(test_readdir_while_changing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
