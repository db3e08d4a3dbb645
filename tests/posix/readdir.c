/*
 * posix/readdir.c -- ubj_readdir: "." and ".." first, d_type of every
 * node type, each name exactly once, resuming from any cookie, cookies
 * stable across remount and across creates/unlinks made between two
 * calls (an entry present for the whole listing is returned once),
 * stopping early, errors.
 */
#include "testutil.h"

/* A bounded collector: takes up to `limit` entries, then stops. */
struct coll {
    struct tdirent *v;
    size_t n, cap, limit;
};

/* coll_fill -- accept an entry unless the limit is reached. */
static int coll_fill(void *ctx, const char *name, size_t namelen, ubj_ino_t ino,
                     unsigned type, uint64_t next_cookie)
{
    struct coll *c = ctx;
    if (c->n >= c->limit)
        return 1;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        assert_non_null(c->v);
    }
    struct tdirent *e = &c->v[c->n++];
    assert_true(namelen >= 1 && namelen <= 255);
    memcpy(e->name, name, namelen);
    e->name[namelen] = '\0';
    e->ino = ino;
    e->type = type;
    e->cookie = next_cookie;
    return 0;
}

/* chunk -- read up to `limit` entries from `cookie`; returns how many
 * (appended at c->v[c->n...]). */
static size_t chunk(struct ubj_fs *fs, ubj_ino_t dir, uint64_t cookie,
                    struct coll *c, size_t limit)
{
    size_t before = c->n;
    c->limit = before + limit;
    assert_ok(ubj_readdir(fs, dir, cookie, coll_fill, c));
    return c->n - before;
}

/* find -- index of name in v[0..n) or -1. */
static long find(const struct tdirent *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, name) == 0)
            return (long)i;
    return -1;
}

/* test_empty -- "." then "..", both DT_DIR, correct inodes. */
static void test_empty(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat p, d;
    assert_ok(tpath_mkdir(fs, "/p", 0755, &p));
    assert_ok(tpath_mkdir(fs, "/p/d", 0755, &d));
    struct tdirent *v;
    size_t n;
    assert_ok(tdir_list(fs, d.ino, &v, &n));
    assert_int_equal(n, 2);
    assert_string_equal(v[0].name, ".");
    assert_int_equal(v[0].ino, d.ino);
    assert_int_equal(v[0].type, DT_DIR);
    assert_string_equal(v[1].name, "..");
    assert_int_equal(v[1].ino, p.ino);
    assert_int_equal(v[1].type, DT_DIR);
    assert_true(v[0].cookie != 0 && v[1].cookie != v[0].cookie);
    free(v);
    assert_ok(tdir_list(fs, UBJ_ROOT_INO, &v, &n));
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, ".");
    assert_string_equal(v[1].name, "..");
    assert_int_equal(v[1].ino, UBJ_ROOT_INO);
    assert_string_equal(v[2].name, "p");
    free(v);
}

/* test_types -- DT_* of every node type and the inode numbers. */
static void test_types(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_ok(tpath_create(fs, "/reg", 0644, NULL));
    assert_ok(tpath_mkdir(fs, "/dir", 0755, NULL));
    assert_ok(tpath_symlink(fs, "x", "/lnk"));
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0644, 0, NULL, NULL));
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "chr", S_IFCHR | 0644, 1, NULL, NULL));
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "blk", S_IFBLK | 0644, 2, NULL, NULL));
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "sock", S_IFSOCK | 0644, 0, NULL, NULL));
    struct { const char *n; unsigned t; } want[] = {
        { "reg", DT_REG }, { "dir", DT_DIR }, { "lnk", DT_LNK }, { "fifo", DT_FIFO },
        { "chr", DT_CHR }, { "blk", DT_BLK }, { "sock", DT_SOCK },
    };
    struct tdirent *v;
    size_t n;
    assert_ok(tdir_list(fs, UBJ_ROOT_INO, &v, &n));
    assert_int_equal(n, 2 + 7);
    for (size_t i = 0; i < 7; i++) {
        long k = find(v, n, want[i].n);
        assert_true(k >= 2);
        assert_int_equal(v[k].type, want[i].t);
        char p[16];
        snprintf(p, sizeof p, "/%s", want[i].n);
        assert_int_equal(v[k].ino, tpath_ino(fs, p));
    }
    free(v);
}

/* test_many_once -- 3000 names, each listed exactly once; the listing
 * and its cookies are the same after a remount. */
static void test_many_once(void **state)
{
    struct tfs *t = TFS(state);
    struct ubj_stat d;
    const int n = 3000;
    assert_ok(tpath_mkdir(t->fs, "/d", 0755, &d));
    char name[64];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "n%05d", i);
        assert_ok(ubj_create(t->fs, d.ino, name, 0644, NULL, NULL));
    }
    struct tdirent *v, *w;
    size_t cnt, cnt2;
    assert_ok(tdir_list(t->fs, d.ino, &v, &cnt));
    assert_int_equal(cnt, (size_t)n + 2);
    char *seen = calloc((size_t)n, 1);
    assert_non_null(seen);
    for (size_t i = 2; i < cnt; i++) {
        int k = atoi(v[i].name + 1);
        assert_true(k >= 0 && k < n && v[i].name[0] == 'n');
        assert_int_equal(seen[k], 0);
        seen[k] = 1;
        assert_int_equal(v[i].type, DT_REG);
        for (size_t j = i + 1; j < cnt && j < i + 4; j++)
            assert_true(v[i].cookie != v[j].cookie);
    }
    free(seen);
    ubj_test_remount(t->dev, &t->fs);
    assert_ok(tdir_list(t->fs, d.ino, &w, &cnt2));
    assert_int_equal(cnt2, cnt);
    for (size_t i = 0; i < cnt; i++) {
        assert_string_equal(v[i].name, w[i].name);
        assert_int_equal(v[i].cookie, w[i].cookie);
        assert_int_equal(v[i].ino, w[i].ino);
    }
    free(v);
    free(w);
}

/* test_resume -- listing in chunks of k from the last accepted cookie
 * equals the whole listing, for several k; stopping at once is fine. */
static void test_resume(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat d;
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    char name[64];
    for (int i = 0; i < 700; i++) {
        snprintf(name, sizeof name, "file-with-longer-name-%d", i);
        assert_ok(ubj_create(fs, d.ino, name, 0644, NULL, NULL));
    }
    struct tdirent *all;
    size_t nall;
    assert_ok(tdir_list(fs, d.ino, &all, &nall));
    assert_int_equal(nall, 702);
    const size_t ks[] = { 1, 2, 3, 7, 100, 701, 702, 1000 };
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        struct coll c = { 0 };
        uint64_t cookie = 0;
        for (int guard = 0; guard < 2000; guard++) {
            size_t got = chunk(fs, d.ino, cookie, &c, ks[ki]);
            if (got == 0)
                break;
            cookie = c.v[c.n - 1].cookie;
        }
        assert_int_equal(c.n, nall);
        for (size_t i = 0; i < nall; i++) {
            assert_string_equal(c.v[i].name, all[i].name);
            assert_int_equal(c.v[i].cookie, all[i].cookie);
        }
        free(c.v);
    }
    /* from the last cookie: nothing; fill refusing at once: rc 0 */
    struct coll c = { 0 };
    assert_int_equal(chunk(fs, d.ino, all[nall - 1].cookie, &c, 10), 0);
    assert_int_equal(chunk(fs, d.ino, 0, &c, 0), 0);
    assert_int_equal(chunk(fs, d.ino, all[0].cookie, &c, 1), 1);
    assert_string_equal(c.v[0].name, "..");
    free(c.v);
    free(all);
}

/* test_stable_under_changes -- between chunks, names are created and
 * removed; every name present throughout is listed exactly once, no name
 * is listed twice, and every listed name existed at some point. */
static void test_stable_under_changes(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat d;
    assert_ok(tpath_mkdir(fs, "/d", 0755, &d));
    struct tprng r;
    tprng_seed(&r, 42);
    const int base = 1200, maxnew = 3000;
    char name[64];
    for (int i = 0; i < base; i++) {
        snprintf(name, sizeof name, "keep-%d", i);
        assert_ok(ubj_create(fs, d.ino, name, 0644, NULL, NULL));
        snprintf(name, sizeof name, "vol-%d", i);
        assert_ok(ubj_create(fs, d.ino, name, 0644, NULL, NULL));
    }
    /* vol-* may be removed and come back; new-* are created during */
    int nnew = 0;
    char *vol_alive = malloc((size_t)base);
    assert_non_null(vol_alive);
    memset(vol_alive, 1, (size_t)base);
    struct coll c = { 0 };
    uint64_t cookie = 0;
    for (int guard = 0; guard < 100000; guard++) {
        size_t got = chunk(fs, d.ino, cookie, &c, 1 + tprng_below(&r, 13));
        if (got == 0)
            break;
        cookie = c.v[c.n - 1].cookie;
        for (int k = 0; k < 3 && nnew < maxnew; k++, nnew++) {
            snprintf(name, sizeof name, "new-%d", nnew);
            assert_ok(ubj_create(fs, d.ino, name, 0644, NULL, NULL));
        }
        for (int k = 0; k < 2; k++) {
            int v = (int)tprng_below(&r, (uint64_t)base);
            snprintf(name, sizeof name, "vol-%d", v);
            if (vol_alive[v])
                assert_ok(ubj_unlink(fs, d.ino, name));
            else
                assert_ok(ubj_create(fs, d.ino, name, 0644, NULL, NULL));
            vol_alive[v] ^= 1;
        }
    }
    /* no name twice */
    char *kseen = calloc((size_t)base, 1), *vseen = calloc((size_t)base, 1);
    char *nseen = calloc((size_t)maxnew, 1);
    assert_true(kseen && vseen && nseen);
    assert_string_equal(c.v[0].name, ".");
    assert_string_equal(c.v[1].name, "..");
    for (size_t i = 2; i < c.n; i++) {
        int k = -1;
        char *s = NULL;
        if (sscanf(c.v[i].name, "keep-%d", &k) == 1 && k >= 0 && k < base)
            s = &kseen[k];
        else if (sscanf(c.v[i].name, "vol-%d", &k) == 1 && k >= 0 && k < base)
            s = &vseen[k];
        else if (sscanf(c.v[i].name, "new-%d", &k) == 1 && k >= 0 && k < maxnew)
            s = &nseen[k];
        if (s == NULL)
            fail_msg("unexpected name %s", c.v[i].name);
        else if (*s)
            fail_msg("name %s listed twice", c.v[i].name);
        *s = 1;
    }
    for (int i = 0; i < base; i++)
        if (!kseen[i])
            fail_msg("keep-%d never listed", i);
    free(kseen);
    free(vseen);
    free(nseen);
    free(vol_alive);
    free(c.v);
}

/* test_errors -- ENOTDIR, ENOENT. */
static void test_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct coll c = { 0 };
    c.limit = 100;
    assert_ok(tpath_create(fs, "/f", 0644, NULL));
    assert_rc(ubj_readdir(fs, tpath_ino(fs, "/f"), 0, coll_fill, &c), -ENOTDIR);
    assert_ok(tpath_symlink(fs, "/", "/l"));
    assert_rc(ubj_readdir(fs, tpath_ino(fs, "/l"), 0, coll_fill, &c), -ENOTDIR);
    assert_rc(ubj_readdir(fs, 12345, 0, coll_fill, &c), -ENOENT);
    assert_rc(ubj_readdir(fs, 0, 0, coll_fill, &c), -ENOENT);
    assert_int_equal(c.n, 0);
    free(c.v);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, tfs_setup, tfs_teardown)
        T(test_empty), T(test_types), T(test_many_once), T(test_resume),
        T(test_stable_under_changes), T(test_errors),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
