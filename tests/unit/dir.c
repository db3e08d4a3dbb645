/*
 * tests/unit/dir.c -- the directory B+tree (src/fs/dir.c): 100 000 names
 * inserted and removed in random order with full invariant walks, readdir
 * cookie stability across inserts and removals, per-operation cost at 1k
 * and 100k entries, and damaged nodes giving -EUCLEAN (never a crash).
 *
 * The invariant walker reads the tree through fs_meta_read under the mount
 * lock and checks: node level/owner, keys increasing within a node and
 * within the bounds the parents give, first index key 0, no empty
 * non-root node, no root index with one child, every key's hash prefix
 * matches its name, keys increasing across leaves, and the node/entry
 * counts, ip->blocks and ip->size against what it found.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <sys/stat.h>
#include "testutil.h"
#include "fs/fs.h"

#define NNAMES 100000u
#define NAMELEN 40u

/* ---- helpers ---------------------------------------------------------- */

/* A file system big enough for 100k names (and inodes for namei tests). */
static void big_fs(uint64_t nblocks, uint64_t inodes, struct ubj_bdev **dev,
                   struct ubj_fs **fs)
{
    struct ubj_format_opts o;
    memset(&o, 0, sizeof o);
    o.inodes = inodes;
    o.flags = UBJ_FORMAT_ZEROED;
    assert_ok(ubj_bdev_ram_create(nblocks, dev));
    assert_ok(ubj_format(*dev, &o));
    assert_ok(ubj_test_mount(*dev, 0, fs));
}

/* name_of -- the i-th test name (varied lengths, 1..39 bytes). */
static void name_of(unsigned i, char *buf)
{
    static const char *pfx[] = { "", "f", "file-", "a-much-longer-name-",
                                 "Mixed.Case_" };
    snprintf(buf, NAMELEN, "%s%u", pfx[i % 5], i);
}

/* shuffle -- Fisher-Yates with the test PRNG. */
static void shuffle(unsigned *v, unsigned n, struct tprng *r)
{
    for (unsigned i = n; i > 1; i--) {
        unsigned j = (unsigned)tprng_below(r, i);
        unsigned t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

/* dir_op -- run one fs_dir_* change in its own handle. */
enum dop { DOP_ADD, DOP_REMOVE, DOP_SET };
static int dir_op(struct ubj_fs *fs, ubj_ino_t dino, enum dop op, const char *name,
                  ubj_ino_t ino)
{
    struct ubj_handle *h;
    struct fs_iref d;
    int rc = fs_start(fs, 64, &h);
    if (rc < 0)
        return rc;
    rc = fs_iget(fs, dino, &d);
    if (rc == 0) {
        size_t len = strlen(name);
        if (op == DOP_ADD)
            rc = fs_dir_add(fs, h, &d, name, len, ino, DT_REG);
        else if (op == DOP_REMOVE)
            rc = fs_dir_remove(fs, h, &d, name, len);
        else
            rc = fs_dir_set(fs, h, &d, name, len, ino, DT_FIFO);
        fs_iput(fs, &d);
    }
    return fs_stop(fs, h, rc);
}

/* dir_find -- fs_dir_lookup under the lock. */
static int dir_find(struct ubj_fs *fs, ubj_ino_t dino, const char *name,
                    ubj_ino_t *ino, unsigned *type)
{
    struct ubj_handle *h;
    struct fs_iref d;
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, dino, &d);
    if (rc == 0) {
        rc = fs_dir_lookup(fs, &d, name, strlen(name), ino, type);
        fs_iput(fs, &d);
    }
    return fs_stop(fs, h, rc);
}

/* Forged trees hold names whose keys do not come from their hash. */
static bool walk_hash_check = true;

/* What a walk found. */
struct walk {
    uint64_t nodes, entries, last_key;
    unsigned depth;
    int bad;                  /* 0 or the line of the first failed check */
};

#define WCHECK(w, cond) do { if (!(cond) && !(w)->bad) (w)->bad = __LINE__; } while (0)

/* walk_node -- check one node and its subtree. */
static void walk_node(struct ubj_fs *fs, ubj_ino_t dino, uint64_t blk, unsigned level,
                      bool root, uint64_t lo, uint64_t hi, struct walk *w)
{
    struct ubj_buf *b;
    if (fs_meta_read(fs, blk, UBJ_MAGIC_DIR, &b) < 0) {
        WCHECK(w, 0);
        return;
    }
    const struct ubj_dir_node *n = (const struct ubj_dir_node *)b->data;
    const uint8_t *r = b->data + UBJ_DIR_REC_OFF;
    w->nodes++;
    WCHECK(w, n->level == level && n->owner == dino && n->used <= UBJ_DIR_SPACE);
    if (level == 0) {
        unsigned off = 0;
        WCHECK(w, root || n->nrec > 0);
        for (unsigned i = 0; i < n->nrec && off + 18 <= n->used; i++) {
            uint64_t k;
            memcpy(&k, r + off, 8);
            unsigned nl = r[off + 17];
            uint64_t base = (ubj_name_hash(fs->sb.hash_seed, (const char *)r + off + 18, nl)
                             >> 1) & ~(uint64_t)0xff;
            if (base < UBJ_DIR_FIRST_KEY)
                base = UBJ_DIR_FIRST_KEY;
            WCHECK(w, k >= lo && k < hi && k >= UBJ_DIR_FIRST_KEY);
            WCHECK(w, !walk_hash_check || (k & ~(uint64_t)0xff) == base);
            WCHECK(w, w->entries == 0 ? 1 : k > w->last_key);
            w->last_key = k;
            w->entries++;
            off += (18u + nl + 7u) & ~7u;
        }
        WCHECK(w, off == n->used);
        ubj_cache_put(fs->cache, b);
        return;
    }
    unsigned nrec = n->nrec;
    uint64_t keys[UBJ_DIR_SPACE / 16], kids[UBJ_DIR_SPACE / 16];
    WCHECK(w, nrec >= (root ? 2u : 1u) && n->used == nrec * 16u);
    for (unsigned i = 0; i < nrec && i < UBJ_DIR_SPACE / 16; i++) {
        memcpy(&keys[i], r + 16 * i, 8);
        memcpy(&kids[i], r + 16 * i + 8, 8);
    }
    ubj_cache_put(fs->cache, b);
    if (w->bad)
        return;
    WCHECK(w, keys[0] == 0);
    for (unsigned i = 1; i < nrec; i++)
        WCHECK(w, keys[i] > keys[i - 1] && keys[i] > lo && keys[i] < hi);
    for (unsigned i = 0; i < nrec && !w->bad; i++)
        walk_node(fs, dino, kids[i], level - 1, false, i ? keys[i] : lo,
                  i + 1 < nrec ? keys[i + 1] : hi, w);
}

/* walk_tree -- check the whole tree of directory dino; fails the test on
 * any violation.  Returns what it found. */
static struct walk walk_tree(struct ubj_fs *fs, ubj_ino_t dino)
{
    struct ubj_handle *h;
    struct fs_iref d;
    struct walk w;
    memset(&w, 0, sizeof w);
    fs_start(fs, 0, &h);
    assert_ok(fs_iget(fs, dino, &d));
    struct ubj_dir_root dr = d.ip->i_data.dir;
    walk_node(fs, dino, dr.root, dr.depth, true, 0, UINT64_MAX, &w);
    w.depth = dr.depth;
    if (!w.bad) {
        WCHECK(&w, w.nodes == dr.nodes && w.entries == dr.entries);
        WCHECK(&w, d.ip->blocks == dr.nodes && d.ip->size == dr.nodes * UBJ_BS);
    }
    fs_iput(fs, &d);
    fs_stop(fs, h, 0);
    if (w.bad)
        fail_msg("tree invariant broken (check at line %d): nodes %llu/%llu entries "
                 "%llu/%llu", w.bad, (unsigned long long)w.nodes,
                 (unsigned long long)dr.nodes, (unsigned long long)w.entries,
                 (unsigned long long)dr.entries);
    return w;
}

/* now_s -- monotonic seconds. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* cache_ops -- buffer lookups so far. */
static uint64_t cache_ops(struct ubj_fs *fs)
{
    struct ubj_fs_stats s;
    ubj_fs_stats_get(fs, &s);
    return s.cache_hits + s.cache_misses;
}

/* ---- readdir collection --------------------------------------------- */

struct seen {
    unsigned *count;          /* per name index */
    unsigned n;
    uint64_t last_cookie;
    uint64_t next_cookie;
    unsigned stop_after;      /* 0 = never */
    unsigned got;
    int bad;
};

/* seen_fill -- count each name (by index parsed from the ino). */
static int seen_fill(void *ctx, const char *name, size_t len, ubj_ino_t ino,
                     unsigned type, uint64_t cookie)
{
    struct seen *s = ctx;
    (void)type;
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
        s->next_cookie = cookie;
        return 0;
    }
    if (cookie <= s->last_cookie)
        s->bad = 1;
    s->last_cookie = cookie;
    s->next_cookie = cookie;
    if (ino < 1000000 || ino - 1000000 >= s->n)
        s->bad = 2;
    else
        s->count[ino - 1000000]++;
    s->got++;
    return s->stop_after && s->got >= s->stop_after;
}

/* ---- tests ---------------------------------------------------------------- */

/* 100k names in random order: add, look up, iterate, remove, with walks. */
static void test_btree_100k(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct ubj_stat st;
    struct tprng rng;
    char name[NAMELEN];
    big_fs(16384, 0, &dev, &fs);
    tprng_seed(&rng, tprng_env_seed("UBJ_TEST_SEED", 42));
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "big", 0755, NULL, &st));
    ubj_ino_t dino = st.ino;
    uint64_t free0 = t_free_blocks(fs);

    unsigned *order = malloc(NNAMES * sizeof *order);
    assert_non_null(order);
    for (unsigned i = 0; i < NNAMES; i++)
        order[i] = i;
    shuffle(order, NNAMES, &rng);
    for (unsigned i = 0; i < NNAMES; i++) {
        name_of(order[i], name);
        assert_ok(dir_op(fs, dino, DOP_ADD, name, 1000000 + order[i]));
        if (i % 20000 == 0)
            walk_tree(fs, dino);
    }
    struct walk w = walk_tree(fs, dino);
    assert_int_equal(w.entries, NNAMES);
    assert_true(w.depth >= 1 && w.depth <= 3);
    print_message("100k names: depth %u, %llu nodes (%.0f names/leaf)\n", w.depth,
                  (unsigned long long)w.nodes, (double)NNAMES / (double)w.nodes);

    /* duplicates refused, every name found with its inode */
    name_of(777, name);
    assert_rc(dir_op(fs, dino, DOP_ADD, name, 5), -EEXIST);
    for (unsigned i = 0; i < NNAMES; i++) {
        ubj_ino_t ino;
        unsigned type;
        name_of(i, name);
        assert_ok(dir_find(fs, dino, name, &ino, &type));
        assert_int_equal(ino, 1000000 + i);
        assert_int_equal(type, DT_REG);
    }
    assert_rc(dir_find(fs, dino, "not-there", NULL, NULL), -ENOENT);

    /* fs_dir_set changes the target, nothing else */
    name_of(4242, name);
    assert_ok(dir_op(fs, dino, DOP_SET, name, 1000000 + 4242));
    unsigned type;
    assert_ok(dir_find(fs, dino, name, NULL, &type));
    assert_int_equal(type, DT_FIFO);
    assert_rc(dir_op(fs, dino, DOP_SET, "not-there", 1), -ENOENT);

    /* iterate: every name once, cookies increasing */
    struct seen s = { .count = calloc(NNAMES, sizeof(unsigned)), .n = NNAMES };
    assert_non_null(s.count);
    assert_ok(ubj_readdir(fs, dino, 0, seen_fill, &s));
    assert_int_equal(s.bad, 0);
    assert_int_equal(s.got, NNAMES);
    for (unsigned i = 0; i < NNAMES; i++)
        assert_int_equal(s.count[i], 1);
    free(s.count);

    /* remove in another random order, walking the tree after batches */
    shuffle(order, NNAMES, &rng);
    for (unsigned i = 0; i < NNAMES; i++) {
        name_of(order[i], name);
        assert_ok(dir_op(fs, dino, DOP_REMOVE, name, 0));
        if (i % 10000 == 0 || i >= NNAMES - 200)
            walk_tree(fs, dino);
        if (i % 7 == 0)
            assert_rc(dir_find(fs, dino, name, NULL, NULL), -ENOENT);
    }
    assert_rc(dir_op(fs, dino, DOP_REMOVE, "file-3", 0), -ENOENT);
    w = walk_tree(fs, dino);
    assert_int_equal(w.depth, 0);
    assert_int_equal(w.nodes, 1);
    assert_int_equal(w.entries, 0);
    assert_int_equal(t_free_blocks(fs), free0);
    assert_ok(ubj_getattr(fs, dino, &st));
    assert_int_equal(st.size, UBJ_BS);
    assert_int_equal(st.blocks, UBJ_BS / 512);
    free(order);
    ubj_test_fs_done(dev, fs);
}

/* Per-operation cost at 1k and 100k entries: create (ubj_create) and
 * lookup (ubj_lookup).  Times are reported; what is asserted is the
 * number of buffer lookups per operation (sub-linear by construction:
 * it depends on the depth only). */
static void test_scaling(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct ubj_stat st;
    char name[NAMELEN];
    enum { N = 100000, W = 1000 };
    big_fs(65536, 110000, &dev, &fs);
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, &st));
    ubj_ino_t dino = st.ino;
    double tc[2] = { 0, 0 }, tl[2] = { 0, 0 };
    uint64_t cc[2] = { 0, 0 }, cl[2] = { 0, 0 };

    for (unsigned i = 0; i < N; i++) {
        int at = i < W ? 0 : (i >= N - W ? 1 : -1);
        name_of(i, name);
        double t0 = at >= 0 ? now_s() : 0;
        uint64_t c0 = at >= 0 ? cache_ops(fs) : 0;
        assert_ok(ubj_create(fs, dino, name, 0644, NULL, NULL));
        if (at >= 0) {
            tc[at] += now_s() - t0;
            cc[at] += cache_ops(fs) - c0;
        }
        if (i == W - 1 || i == N - 1) {
            /* lookups of W names at this size */
            int k = i == W - 1 ? 0 : 1;
            uint64_t c1 = cache_ops(fs);
            double t1 = now_s();
            for (unsigned j = 0; j < W; j++) {
                name_of(j * (i + 1) / W, name);
                assert_ok(ubj_lookup(fs, dino, name, &st));
            }
            tl[k] = now_s() - t1;
            cl[k] = cache_ops(fs) - c1;
        }
    }
    print_message("create: %.2f us/op at 1k entries, %.2f us/op at 100k\n",
                  tc[0] / W * 1e6, tc[1] / W * 1e6);
    print_message("lookup: %.2f us/op at 1k entries, %.2f us/op at 100k\n",
                  tl[0] / W * 1e6, tl[1] / W * 1e6);
    print_message("buffer lookups per op: create %.1f -> %.1f, lookup %.1f -> %.1f\n",
                  (double)cc[0] / W, (double)cc[1] / W, (double)cl[0] / W,
                  (double)cl[1] / W);
    /* 100x the entries costs at most a few more node visits */
    assert_true(cl[1] <= cl[0] + 3u * W);
    assert_true(cc[1] <= cc[0] + 8u * W);
    struct walk w = walk_tree(fs, dino);
    assert_int_equal(w.entries, N);
    for (unsigned i = 0; i < N; i++) {
        name_of(i, name);
        assert_ok(ubj_unlink(fs, dino, name));
    }
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
    ubj_test_fs_done(dev, fs);
}

/* readdir cookies survive inserts and removals (splits and merges). */
static void test_cookie_stability(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct ubj_stat st;
    char name[NAMELEN];
    struct tprng rng;
    enum { N0 = 3000, NEW = 6000, TOTAL = N0 + NEW };
    big_fs(8192, 0, &dev, &fs);
    tprng_seed(&rng, 7);
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "d", 0755, NULL, &st));
    ubj_ino_t dino = st.ino;
    for (unsigned i = 0; i < N0; i++) {
        name_of(i, name);
        assert_ok(dir_op(fs, dino, DOP_ADD, name, 1000000 + i));
    }
    for (int round = 0; round < 3; round++) {
        struct seen s = { .count = calloc(TOTAL, sizeof(unsigned)), .n = TOTAL,
                          .stop_after = N0 / 2 };
        unsigned *deleted = calloc(TOTAL, sizeof(unsigned));
        assert_non_null(s.count);
        assert_non_null(deleted);
        assert_ok(ubj_readdir(fs, dino, 0, seen_fill, &s));
        assert_int_equal(s.got, N0 / 2);
        /* in between: many new names (splits), and every 3rd old name
         * removed (leaves emptied and freed) */
        for (unsigned i = N0; i < TOTAL; i++) {
            name_of(i, name);
            if (round == 0)
                assert_ok(dir_op(fs, dino, DOP_ADD, name, 1000000 + i));
        }
        for (unsigned i = 0; i < N0; i += 3) {
            if (tprng_below(&rng, 2) && round == 0) {
                name_of(i, name);
                assert_ok(dir_op(fs, dino, DOP_REMOVE, name, 0));
                deleted[i] = 1;
            }
        }
        if (round == 1) {        /* remove all the new names again */
            for (unsigned i = N0; i < TOTAL; i++) {
                name_of(i, name);
                assert_ok(dir_op(fs, dino, DOP_REMOVE, name, 0));
                deleted[i] = 1;
            }
        }
        s.stop_after = 0;
        assert_ok(ubj_readdir(fs, dino, s.next_cookie, seen_fill, &s));
        assert_int_equal(s.bad, 0);
        for (unsigned i = 0; i < N0; i++) {
            name_of(i, name);
            bool present = dir_find(fs, dino, name, NULL, NULL) == 0;
            if (present && !deleted[i] && s.count[i] != 1)
                fail_msg("round %d: name %u listed %u times", round, i, s.count[i]);
            assert_true(s.count[i] <= 1);
        }
        free(deleted);
        free(s.count);
        walk_tree(fs, dino);
    }
    /* a cookie past every key lists nothing; 2..0xff restart at the first */
    struct seen s = { .count = calloc(TOTAL, sizeof(unsigned)), .n = TOTAL };
    assert_ok(ubj_readdir(fs, dino, UINT64_MAX, seen_fill, &s));
    assert_int_equal(s.got, 0);
    assert_ok(ubj_readdir(fs, dino, 0x80, seen_fill, &s));
    struct walk w = walk_tree(fs, dino);
    assert_int_equal(s.got, w.entries);
    free(s.count);
    /* empty it again */
    for (unsigned i = 0; i < TOTAL; i++) {
        name_of(i, name);
        int rc = dir_op(fs, dino, DOP_REMOVE, name, 0);
        assert_true(rc == 0 || rc == -ENOENT);
    }
    w = walk_tree(fs, dino);
    assert_int_equal(w.entries, 0);
    assert_int_equal(w.nodes, 1);
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "d"));
    ubj_test_fs_done(dev, fs);
}

/* A listing's size, first name and last cookie. */
struct count_ctx { unsigned n; char first[8]; uint64_t last_cookie; };

/* count_fill -- count entries. */
static int count_fill(void *ctx, const char *name, size_t len, ubj_ino_t ino,
                      unsigned type, uint64_t cookie)
{
    struct count_ctx *c = ctx;
    (void)ino;
    (void)type;
    if (c->n++ == 0)
        snprintf(c->first, sizeof c->first, "%.*s", (int)len, name);
    c->last_cookie = cookie;
    return 0;
}

/* "." and ".." come first with cookies 1 and 2; resuming at 1 and 2. */
static void test_iterate_dots(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    struct tdirent *ents;
    size_t n;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "p", 0755, NULL, &st));
    ubj_ino_t p = st.ino;
    assert_ok(ubj_create(fs, p, "x", 0644, NULL, &st));
    assert_ok(tdir_list(fs, p, &ents, &n));
    assert_int_equal(n, 3);
    assert_string_equal(ents[0].name, ".");
    assert_int_equal(ents[0].ino, p);
    assert_int_equal(ents[0].cookie, 1);
    assert_string_equal(ents[1].name, "..");
    assert_int_equal(ents[1].ino, UBJ_ROOT_INO);
    assert_int_equal(ents[1].cookie, 2);
    assert_string_equal(ents[2].name, "x");
    assert_int_equal(ents[2].ino, st.ino);
    assert_int_equal(ents[2].type, DT_REG);
    assert_true(ents[2].cookie > 0x100);
    free(ents);
    /* resuming at 1 gives ".." then "x"; at 2 only "x"; after x nothing */
    struct count_ctx c = { 0 };
    assert_ok(ubj_readdir(fs, p, 1, count_fill, &c));
    assert_int_equal(c.n, 2);
    assert_string_equal(c.first, "..");
    memset(&c, 0, sizeof c);
    assert_ok(ubj_readdir(fs, p, 2, count_fill, &c));
    assert_int_equal(c.n, 1);
    assert_string_equal(c.first, "x");
    uint64_t after = c.last_cookie;
    memset(&c, 0, sizeof c);
    assert_ok(ubj_readdir(fs, p, after, count_fill, &c));
    assert_int_equal(c.n, 0);
    assert_ok(ubj_unlink(fs, p, "x"));
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "p"));
}

/* Growing and emptying a directory repeatedly gives every block back and
 * ends as one empty leaf each time. */
static void test_reuse_after_remove(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    char name[NAMELEN];
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "r", 0755, NULL, &st));
    ubj_ino_t d = st.ino;
    uint64_t free0 = t_free_blocks(fs);
    for (int round = 0; round < 4; round++) {
        for (unsigned i = 0; i < 600; i++) {
            name_of(i, name);
            assert_ok(dir_op(fs, d, DOP_ADD, name, 1000000 + i));
        }
        walk_tree(fs, d);
        for (unsigned i = 0; i < 600; i++) {
            name_of(599 - i, name);
            assert_ok(dir_op(fs, d, DOP_REMOVE, name, 0));
        }
        struct walk w = walk_tree(fs, d);
        assert_int_equal(w.nodes, 1);
        assert_int_equal(t_free_blocks(fs), free0);
    }
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "r"));
}

/* corrupt_node -- rewrite (and re-seal) the root node of `dino` on the
 * unmounted device after `edit` changed it. */
static void corrupt_root(struct ubj_bdev *dev, ubj_ino_t dino,
                         void (*edit)(uint8_t *blk))
{
    struct ubj_fs *fs;
    struct ubj_handle *h;
    struct fs_iref d;
    assert_ok(ubj_test_mount(dev, 0, &fs));
    fs_start(fs, 0, &h);
    assert_ok(fs_iget(fs, dino, &d));
    uint64_t root = d.ip->i_data.dir.root;
    fs_iput(fs, &d);
    uint32_t seed = fs->csum_seed;
    fs_stop(fs, h, 0);
    assert_ok(ubj_unmount(fs));
    uint8_t *blk = malloc(UBJ_BS);
    assert_non_null(blk);
    assert_ok(ubj_bdev_read(dev, root, 1, blk));
    edit(blk);
    fs_block_seal(seed, blk, UBJ_MAGIC_DIR, root);
    assert_ok(ubj_bdev_write(dev, root, 1, blk));
    free(blk);
}

static void edit_namelen0(uint8_t *b) { b[UBJ_DIR_REC_OFF + 17] = 0; }
static void edit_namelen_big(uint8_t *b) { b[UBJ_DIR_REC_OFF + 17] = 255; }
static void edit_used(uint8_t *b) { ((struct ubj_dir_node *)b)->used = 4090; }
static void edit_nrec(uint8_t *b) { ((struct ubj_dir_node *)b)->nrec += 1; }
static void edit_level(uint8_t *b) { ((struct ubj_dir_node *)b)->level = 3; }
static void edit_owner(uint8_t *b) { ((struct ubj_dir_node *)b)->owner = 999; }
static void edit_key_order(uint8_t *b)
{
    uint64_t k = 0x100;     /* first key smaller than 0x100 is invalid too */
    memcpy(b + UBJ_DIR_REC_OFF, &k, 8);
    k = 0x80;
    memcpy(b + UBJ_DIR_REC_OFF, &k, 8);
}
static void edit_key_swap(uint8_t *b)
{
    /* the second record's key set below the first's */
    uint64_t k;
    memcpy(&k, b + UBJ_DIR_REC_OFF, 8);
    unsigned off = (18u + b[UBJ_DIR_REC_OFF + 17] + 7u) & ~7u;
    k = k > 0x100 ? k - 1 : k;
    memcpy(b + UBJ_DIR_REC_OFF + off, &k, 8);
}

/* Damaged nodes (with valid checksums) are -EUCLEAN, never a crash. */
static void test_corrupt_nodes(void **state)
{
    (void)state;
    void (*edits[])(uint8_t *) = { edit_namelen0, edit_namelen_big, edit_used,
                                   edit_nrec, edit_level, edit_owner,
                                   edit_key_order, edit_key_swap };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        struct ubj_stat st;
        ubj_test_fs_new(1024, &dev, &fs);
        assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "c", 0755, NULL, &st));
        ubj_ino_t d = st.ino;
        assert_ok(ubj_create(fs, d, "one", 0644, NULL, NULL));
        assert_ok(ubj_create(fs, d, "two", 0644, NULL, NULL));
        assert_ok(ubj_create(fs, d, "three", 0644, NULL, NULL));
        assert_ok(ubj_unmount(fs));
        corrupt_root(dev, d, edits[e]);
        assert_ok(ubj_test_mount(dev, 0, &fs));
        assert_rc(ubj_lookup(fs, d, "one", &st), -EUCLEAN);
        assert_rc(ubj_lookup(fs, d, "three", &st), -EUCLEAN);
        assert_true(strlen(ubj_errormsg()) > 0);
        struct tdirent *ents = NULL;
        size_t n;
        int rc = tdir_list(fs, d, &ents, &n);
        free(ents);
        assert_rc(rc, -EUCLEAN);
        /* no change is accepted any more on a damaged mount */
        rc = ubj_create(fs, d, "four", 0644, NULL, NULL);
        assert_true(rc == -EUCLEAN || rc == -EROFS);
        ubj_unmount(fs);
        ubj_bdev_destroy(dev);
    }
}

/* ---- forged hash collisions ----------------------------------------------- */
/*
 * Two names share a hash range only once in ~2^27 names, so the seq byte
 * and ranges spanning leaves are tested on trees written by hand: records
 * with chosen keys (their names need not hash there; lookups compare
 * names only within the range of the name looked up).
 */

struct frec { uint64_t key; char name[8]; };

/* forge_leaf -- write a leaf holding recs into a fresh node. */
static void forge_leaf(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blk,
                       ubj_ino_t owner, const struct frec *recs, unsigned n)
{
    struct ubj_buf *b;
    assert_ok(fs_meta_new(fs, h, blk, UBJ_MAGIC_DIR, owner, &b));
    struct ubj_dir_node *nd = (struct ubj_dir_node *)b->data;
    uint8_t *r = b->data + UBJ_DIR_REC_OFF;
    unsigned off = 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned nl = (unsigned)strlen(recs[i].name);
        uint64_t ino = 2000000 + i;
        memcpy(r + off, &recs[i].key, 8);
        memcpy(r + off + 8, &ino, 8);
        r[off + 16] = DT_REG;
        r[off + 17] = (uint8_t)nl;
        memcpy(r + off + 18, recs[i].name, nl);
        off += (18u + nl + 7u) & ~7u;
    }
    assert_true(off <= UBJ_DIR_SPACE);
    nd->nrec = (uint16_t)n;
    nd->level = 0;
    nd->used = (uint16_t)off;
    nd->owner = owner;
    assert_ok(fs_meta_dirty(fs, h, b));
    ubj_cache_put(fs->cache, b);
}

/* forge -- replace dino's tree by one leaf (nb == 0) or a root index over
 * leaves a and b (separator: b's first key). */
static void forge(struct ubj_fs *fs, ubj_ino_t dino, const struct frec *a, unsigned na,
                  const struct frec *bb, unsigned nb)
{
    struct ubj_handle *h;
    struct fs_iref d;
    uint64_t blk[3];
    uint32_t got;
    unsigned nodes = nb ? 3 : 1;
    assert_ok(fs_start(fs, 64, &h));
    assert_ok(fs_iget(fs, dino, &d));
    assert_ok(fs_dir_destroy(fs, h, &d));
    for (unsigned i = 0; i < nodes; i++)
        assert_ok(fs_balloc(fs, h, 0, 1, &blk[i], &got));
    forge_leaf(fs, h, blk[0], dino, a, na);
    if (nb) {
        struct ubj_buf *b;
        forge_leaf(fs, h, blk[1], dino, bb, nb);
        assert_ok(fs_meta_new(fs, h, blk[2], UBJ_MAGIC_DIR, dino, &b));
        struct ubj_dir_node *nd = (struct ubj_dir_node *)b->data;
        uint64_t v[4] = { 0, blk[0], bb[0].key, blk[1] };
        memcpy(b->data + UBJ_DIR_REC_OFF, v, sizeof v);
        nd->nrec = 2;
        nd->level = 1;
        nd->used = 32;
        nd->owner = dino;
        assert_ok(fs_meta_dirty(fs, h, b));
        ubj_cache_put(fs->cache, b);
    }
    assert_ok(fs_iwrite(fs, h, &d));
    d.ip->i_data.dir.root = blk[nodes - 1];
    d.ip->i_data.dir.depth = nb ? 1 : 0;
    d.ip->i_data.dir.entries = na + nb;
    d.ip->i_data.dir.nodes = nodes;
    d.ip->blocks = nodes;
    d.ip->size = (uint64_t)nodes * UBJ_BS;
    /* the new root's event, as fs_dir_init gives it (blocks, size: fs_idirty's) */
    assert_ok(fs_ievent(h, &d, UBJ_EV_DIR_ROOT, &d.ip->i_data.dir,
                        sizeof d.ip->i_data.dir, d.ip->i_data.dir.root));
    assert_ok(fs_idirty(fs, h, &d));
    fs_iput(fs, &d);
    assert_ok(fs_stop(fs, h, 0));
}

/* unforge -- an empty tree again (for fsck). */
static void unforge(struct ubj_fs *fs, ubj_ino_t dino)
{
    struct ubj_handle *h;
    struct fs_iref d;
    assert_ok(fs_start(fs, 64, &h));
    assert_ok(fs_iget(fs, dino, &d));
    assert_ok(fs_dir_destroy(fs, h, &d));
    assert_ok(fs_dir_init(fs, h, &d));
    fs_iput(fs, &d);
    assert_ok(fs_stop(fs, h, 0));
}

/* key_base -- the first key of a name's hash range. */
static uint64_t key_base(struct ubj_fs *fs, const char *name)
{
    uint64_t k = (ubj_name_hash(fs->sb.hash_seed, name, strlen(name)) >> 1) &
                 ~(uint64_t)0xff;
    return k < UBJ_DIR_FIRST_KEY ? UBJ_DIR_FIRST_KEY : k;
}

/* A listing in key order: names and cookies. */
struct klist { unsigned n; char name[300][8]; uint64_t cookie[300]; };

/* klist_fill -- record each name and cookie (not "." / ".."). */
static int klist_fill(void *ctx, const char *name, size_t len, ubj_ino_t ino,
                      unsigned type, uint64_t cookie)
{
    struct klist *k = ctx;
    (void)ino;
    (void)type;
    if (cookie <= 2 || k->n >= 300)
        return 0;
    snprintf(k->name[k->n], sizeof k->name[0], "%.*s", (int)len, name);
    k->cookie[k->n++] = cookie;
    return 0;
}

/* cookie_of -- the cookie after `name` in a fresh listing, 0 if absent. */
static uint64_t cookie_of(struct ubj_fs *fs, ubj_ino_t dino, const char *name)
{
    static struct klist k;
    memset(&k, 0, sizeof k);
    assert_ok(ubj_readdir(fs, dino, 0, klist_fill, &k));
    for (unsigned i = 1; i < k.n; i++)
        assert_true(k.cookie[i] > k.cookie[i - 1]);
    for (unsigned i = 0; i < k.n; i++)
        if (strcmp(k.name[i], name) == 0)
            return k.cookie[i];
    return 0;
}

/* One leaf: seqs 0, 1, 3 taken in x's range -> x gets seq 2, placed
 * between them; the names around the range are untouched. */
static void test_seq_in_one_leaf(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t ino;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "c", 0755, NULL, &st));
    ubj_ino_t d = st.ino;
    uint64_t k = key_base(fs, "x");
    struct frec a[] = { { k - 0x100, "before" }, { k, "p" }, { k + 1, "q" },
                        { k + 3, "s" }, { k + 0x100, "after" } };
    forge(fs, d, a, 5, NULL, 0);
    walk_hash_check = false;
    assert_rc(dir_find(fs, d, "x", NULL, NULL), -ENOENT);
    assert_ok(dir_op(fs, d, DOP_ADD, "x", 42));
    assert_ok(dir_find(fs, d, "x", &ino, NULL));
    assert_int_equal(ino, 42);
    assert_int_equal(cookie_of(fs, d, "x"), k + 2 + 1);
    assert_int_equal(cookie_of(fs, d, "s"), k + 3 + 1);
    assert_rc(dir_op(fs, d, DOP_ADD, "x", 43), -EEXIST);
    assert_ok(dir_op(fs, d, DOP_SET, "x", 44));
    assert_ok(dir_find(fs, d, "x", &ino, NULL));
    assert_int_equal(ino, 44);
    struct walk w = walk_tree(fs, d);
    assert_int_equal(w.entries, 6);
    assert_ok(dir_op(fs, d, DOP_REMOVE, "x", 0));
    assert_rc(dir_find(fs, d, "x", NULL, NULL), -ENOENT);
    assert_int_equal(cookie_of(fs, d, "q"), k + 1 + 1);
    w = walk_tree(fs, d);
    assert_int_equal(w.entries, 5);
    walk_hash_check = true;
    unforge(fs, d);
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "c"));
}

/* x's range spans two leaves (seqs 0, 1 | 2, 5): lookups and the free
 * seq (3) come from both; x lands in the second leaf. */
static void test_seq_across_leaves(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t ino;
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "c", 0755, NULL, &st));
    ubj_ino_t d = st.ino;
    uint64_t k = key_base(fs, "x");
    struct frec a[] = { { k - 0x100, "before" }, { k, "p" }, { k + 1, "q" } };
    struct frec b[] = { { k + 2, "r" }, { k + 5, "s" }, { k + 0x100, "after" } };
    forge(fs, d, a, 3, b, 3);
    walk_hash_check = false;
    walk_tree(fs, d);
    assert_ok(dir_op(fs, d, DOP_ADD, "x", 42));
    assert_int_equal(cookie_of(fs, d, "x"), k + 3 + 1);
    assert_ok(dir_find(fs, d, "x", &ino, NULL));
    assert_int_equal(ino, 42);
    assert_int_equal(walk_tree(fs, d).entries, 7);
    /* resuming a listing inside the range */
    static struct klist kl;
    memset(&kl, 0, sizeof kl);
    assert_ok(ubj_readdir(fs, d, k + 2, klist_fill, &kl));
    assert_int_equal(kl.n, 4);
    assert_string_equal(kl.name[0], "r");
    assert_string_equal(kl.name[1], "x");
    assert_ok(dir_op(fs, d, DOP_REMOVE, "x", 0));
    assert_rc(dir_find(fs, d, "x", NULL, NULL), -ENOENT);
    assert_int_equal(walk_tree(fs, d).entries, 6);
    walk_hash_check = true;
    unforge(fs, d);
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "c"));
}

/* All 256 seqs of x's range taken: adding x is -ENOSPC, nothing changes. */
static void test_seq_range_full(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    static struct frec a[128], b[128];
    assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "c", 0755, NULL, &st));
    ubj_ino_t d = st.ino;
    uint64_t k = key_base(fs, "x");
    for (unsigned i = 0; i < 128; i++) {
        a[i].key = k + i;
        snprintf(a[i].name, sizeof a[i].name, "a%u", i);
        b[i].key = k + 128 + i;
        snprintf(b[i].name, sizeof b[i].name, "b%u", i);
    }
    forge(fs, d, a, 128, b, 128);
    walk_hash_check = false;
    uint64_t bfree = t_free_blocks(fs);
    assert_rc(dir_op(fs, d, DOP_ADD, "x", 42), -ENOSPC);
    assert_non_null(strstr(ubj_errormsg(), "hash"));
    assert_rc(dir_find(fs, d, "x", NULL, NULL), -ENOENT);
    assert_int_equal(t_free_blocks(fs), bfree);
    assert_int_equal(walk_tree(fs, d).entries, 256);
    walk_hash_check = true;
    unforge(fs, d);
    assert_ok(ubj_rmdir(fs, UBJ_ROOT_INO, "c"));
}

/* corrupt_index -- damage the root index of a depth-1 directory. */
static void edit_idx_used(uint8_t *b) { ((struct ubj_dir_node *)b)->used += 8; }
static void edit_idx_first(uint8_t *b) { uint64_t k = 5; memcpy(b + UBJ_DIR_REC_OFF, &k, 8); }
static void edit_idx_child(uint8_t *b) { uint64_t c = 1; memcpy(b + UBJ_DIR_REC_OFF + 8, &c, 8); }
static void edit_idx_far(uint8_t *b) { uint64_t c = 1ULL << 40; memcpy(b + UBJ_DIR_REC_OFF + 24, &c, 8); }
static void edit_idx_order(uint8_t *b)
{
    uint64_t k = UINT64_MAX;       /* second separator beyond every key */
    memcpy(b + UBJ_DIR_REC_OFF + 16, &k, 8);
}
static void edit_idx_empty(uint8_t *b) { ((struct ubj_dir_node *)b)->nrec = 0; ((struct ubj_dir_node *)b)->used = 0; }

static void test_corrupt_index(void **state)
{
    (void)state;
    void (*edits[])(uint8_t *) = { edit_idx_used, edit_idx_first, edit_idx_child,
                                   edit_idx_far, edit_idx_order, edit_idx_empty,
                                   edit_level };
    char name[NAMELEN];
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        struct ubj_stat st;
        ubj_test_fs_new(2048, &dev, &fs);
        assert_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "c", 0755, NULL, &st));
        ubj_ino_t d = st.ino;
        for (unsigned i = 0; i < 300; i++) {
            name_of(i, name);
            assert_ok(dir_op(fs, d, DOP_ADD, name, 1000000 + i));
        }
        assert_true(walk_tree(fs, d).depth >= 1);
        for (unsigned i = 0; i < 300; i++) {    /* keep fsck out of it: */
            name_of(i, name);                  /* re-add as real files */
            assert_ok(dir_op(fs, d, DOP_REMOVE, name, 0));
            assert_ok(ubj_create(fs, d, name, 0644, NULL, NULL));
        }
        assert_ok(ubj_unmount(fs));
        corrupt_root(dev, d, edits[e]);
        assert_ok(ubj_test_mount(dev, 0, &fs));
        int bad = 0;
        for (unsigned i = 0; i < 300; i++) {
            name_of(i, name);
            int rc = ubj_lookup(fs, d, name, &st);
            assert_true(rc == 0 || rc == -EUCLEAN);
            bad += rc == -EUCLEAN;
        }
        assert_true(bad > 0);
        struct tdirent *ents = NULL;
        size_t n;
        assert_rc(tdir_list(fs, d, &ents, &n), -EUCLEAN);
        free(ents);
        ubj_unmount(fs);
        ubj_bdev_destroy(dev);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_btree_100k),
        cmocka_unit_test(test_scaling),
        cmocka_unit_test(test_cookie_stability),
        cmocka_unit_test_setup_teardown(test_iterate_dots, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_reuse_after_remove, tfs_setup, tfs_teardown),
        cmocka_unit_test(test_corrupt_nodes),
        cmocka_unit_test(test_corrupt_index),
        cmocka_unit_test_setup_teardown(test_seq_in_one_leaf, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_seq_across_leaves, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_seq_range_full, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
