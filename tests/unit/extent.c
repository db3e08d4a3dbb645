/*
 * unit/extent.c -- the extent tree (src/fs/extent.c) seen through files
 * made with ubj_create and written with ubj_pwrite, inspected through the
 * internal API (fs_iget, fs_ext_map, fs_meta_read):
 *  - appends merge into one extent;
 *  - a tree of > 7 * 254 unmergeable extents grows to depth 2, maps every
 *    block right, and truncating it frees every block and node and brings
 *    the depth back to 0;
 *  - random-order sparse writes and truncates against a model, with the
 *    whole tree walked and checked (order, ranges, ip->blocks) each time;
 *  - fs_ext_map's run lengths over holes, extents and the end;
 *  - unwritten extents read as zeros and are converted by a write;
 *  - corrupt roots and nodes give -EUCLEAN, never a crash.
 * Every test but the corruption ones ends with a clean ubj_check.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define T_NODE_ENTS(b) ((struct ubj_extent *)(void *)((b)->data + 24))
#define T_NODE_HDR(b) ((struct ubj_ext_hdr *)(void *)((b)->data + 16))

/* What t_walk found in a tree. */
struct t_tree {
    int depth;
    uint64_t extents, nodes, data_blocks, ip_blocks;
    char bad[160];        /* the first problem found, "" if none */
};

/* T_WALK_CHECK -- record the first broken condition and stop this node
 * (asserting is left until the mount lock is released). */
#define T_WALK_CHECK(t, cond, ...) do { if (!(cond)) { \
    if (!(t)->bad[0]) snprintf((t)->bad, sizeof (t)->bad, __VA_ARGS__); \
    return; } } while (0)

/* t_walk_node -- check and count one node's entries within [lo, hi). */
static void t_walk_node(struct ubj_fs *fs, const struct ubj_ext_hdr *h,
                        const void *ents, uint64_t lo, uint64_t hi, int depth,
                        struct t_tree *t)
{
    const struct ubj_extent *e = ents;
    const struct ubj_ext_idx *ix = ents;
    T_WALK_CHECK(t, h->magic == UBJ_EXT_MAGIC, "bad magic");
    T_WALK_CHECK(t, h->depth == depth, "depth %u, want %d", h->depth, depth);
    T_WALK_CHECK(t, h->entries <= h->max, "%u entries", h->entries);
    uint64_t prev = lo;
    for (unsigned i = 0; i < h->entries; i++) {
        if (depth == 0) {
            uint32_t len = e[i].len & 0x7fffffffu;
            T_WALK_CHECK(t, e[i].lblk >= prev, "extent %u at %u before %llu", i,
                         e[i].lblk, (unsigned long long)prev);
            T_WALK_CHECK(t, len >= 1 && len < UBJ_EXT_MAX_LEN, "length %u", len);
            prev = (uint64_t)e[i].lblk + len;
            T_WALK_CHECK(t, prev <= hi, "extent %u ends past %llu", i,
                         (unsigned long long)hi);
            t->extents++;
            t->data_blocks += len;
            continue;
        }
        T_WALK_CHECK(t, ix[i].lblk >= prev, "index %u key %u before %llu", i,
                     ix[i].lblk, (unsigned long long)prev);
        prev = (uint64_t)ix[i].lblk + 1;
        uint64_t nhi = i + 1u < h->entries ? ix[i + 1].lblk : hi;
        struct ubj_buf *b;
        T_WALK_CHECK(t, fs_meta_read(fs, ix[i].child, UBJ_MAGIC_EXTENT, &b) == 0,
                     "node %llu unreadable", (unsigned long long)ix[i].child);
        t->nodes++;
        bool ok = T_NODE_HDR(b)->max == UBJ_EXT_NODE_MAX && T_NODE_HDR(b)->entries > 0;
        if (ok)
            t_walk_node(fs, T_NODE_HDR(b), T_NODE_ENTS(b), ix[i].lblk, nhi,
                        depth - 1, t);
        ubj_cache_put(fs->cache, b);
        T_WALK_CHECK(t, ok, "node %llu: bad max or empty",
                     (unsigned long long)ix[i].child);
    }
}

/* t_walk -- walk ino's whole tree; ip->blocks must equal data + nodes. */
static struct t_tree t_walk(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct t_tree t = { 0 };
    struct ubj_handle *h;
    struct fs_iref r;
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        if (!(r.ip->flags & UBJ_IFL_EXTTREE) ||
            r.ip->i_data.ext.hdr.max != UBJ_EXT_ROOT_MAX)
            snprintf(t.bad, sizeof t.bad, "bad root");
        t.depth = r.ip->i_data.ext.hdr.depth;
        t_walk_node(fs, &r.ip->i_data.ext.hdr, r.ip->i_data.ext.e, 0, 1ULL << 32,
                    t.depth, &t);
        t.ip_blocks = r.ip->blocks;
        fs_iput(fs, &r);
    }
    fs_stop(fs, h, 0);
    assert_ok(rc);
    if (t.bad[0])
        fail_msg("inode %llu: extent tree: %s", (unsigned long long)ino, t.bad);
    assert_int_equal(t.ip_blocks, t.data_blocks + t.nodes);
    return t;
}

/* t_map -- fs_ext_map of ino under the lock. */
static int t_map(struct ubj_fs *fs, ubj_ino_t ino, uint32_t lblk, uint32_t max,
                 uint64_t *pblk, uint32_t *len)
{
    struct ubj_handle *h;
    struct fs_iref r;
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        rc = fs_ext_map(fs, &r, lblk, max, pblk, len);
        fs_iput(fs, &r);
    }
    return fs_stop(fs, h, rc);
}

/* t_file -- a new empty regular file in the root. */
static ubj_ino_t t_file(struct ubj_fs *fs, const char *name)
{
    struct ubj_stat st;
    assert_ok(ubj_create(fs, UBJ_ROOT_INO, name, 0644, NULL, &st));
    return st.ino;
}

/* t_truncate -- setattr size. */
static void t_truncate(struct ubj_fs *fs, ubj_ino_t ino, uint64_t size)
{
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = size };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
}

/* t_put_block -- write block `b` of ino filled with byte v. */
static void t_put_block(struct ubj_fs *fs, ubj_ino_t ino, uint64_t b, uint8_t v)
{
    uint8_t buf[UBJ_BS];
    memset(buf, v, sizeof buf);
    assert_rc(ubj_pwrite(fs, ino, buf, sizeof buf, (off_t)(b * UBJ_BS)), UBJ_BS);
}

/* test_append_merges -- 1000 appends of 4 KiB are one extent. */
static void test_append_merges(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "a");
    for (unsigned i = 0; i < 1000; i++)
        t_put_block(fs, ino, i, (uint8_t)i);
    struct t_tree t = t_walk(fs, ino);
    assert_int_equal(t.depth, 0);
    assert_int_equal(t.extents, 1);
    assert_int_equal(t.data_blocks, 1000);
    struct ubj_handle *h;
    struct fs_iref r;
    struct ubj_ext_hdr root = { 0 };
    struct ubj_extent e0 = { 0 };
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        root = r.ip->i_data.ext.hdr;
        e0 = r.ip->i_data.ext.e[0];
        fs_iput(fs, &r);
    }
    fs_stop(fs, h, 0);
    assert_ok(rc);
    assert_int_equal(root.entries, 1);
    assert_int_equal(e0.lblk, 0);
    assert_int_equal(e0.len, 1000);
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, ino, &st));
    assert_int_equal(st.blocks, 8000);
    assert_int_equal(free0 - t_free_blocks(fs), 1000);
    uint8_t buf[UBJ_BS];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 999 * UBJ_BS), UBJ_BS);
    assert_int_equal(buf[0], (uint8_t)999);
    t_truncate(fs, ino, 0);
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_depth2 -- every other block of a big file: no merging, > 7 * 254
 * extents, depth 2; every block maps right; truncating frees it all. */
static void test_depth2(void **state)
{
    struct tfs *tf = TFS(state);
    struct ubj_fs *fs = tf->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "deep");
    const uint32_t n = 2 * (7 * 254 + 200);
    for (uint32_t b = 0; b < n; b += 2) {
        t_put_block(fs, ino, b, (uint8_t)(b / 2 + 1));
        if (b / 2 + 1 == UBJ_EXT_ROOT_MAX * UBJ_EXT_NODE_MAX)
            assert_int_equal(t_walk(fs, ino).depth, 1);  /* appends fill leaves */
    }
    struct t_tree t = t_walk(fs, ino);
    assert_int_equal(t.depth, 2);
    assert_int_equal(t.extents, n / 2);
    assert_int_equal(t.data_blocks, n / 2);
    assert_int_equal(free0 - t_free_blocks(fs), t.ip_blocks);

    uint8_t *seen = calloc(tf->dev->nblocks, 1);
    assert_non_null(seen);
    for (uint32_t b = 0; b < n + 10; b++) {
        uint64_t pblk;
        uint32_t len;
        assert_ok(t_map(fs, ino, b, 1000, &pblk, &len));
        if (b % 2 == 0 && b < n) {
            assert_true(pblk != 0 && pblk < tf->dev->nblocks);
            assert_int_equal(len, 1);
            assert_int_equal(seen[pblk], 0);          /* no block twice */
            seen[pblk] = 1;
        } else {
            assert_int_equal(pblk, 0);
            assert_int_equal(len, b + 1 < n ? 1 : 1000);  /* to the next, or max */
        }
    }
    free(seen);
    uint8_t buf[2 * UBJ_BS];
    for (uint32_t b = 0; b + 1 < n; b += 2 * 37) {
        assert_rc(ubj_pread(fs, ino, buf, sizeof buf, (off_t)b * UBJ_BS), sizeof buf);
        assert_int_equal(buf[0], (uint8_t)(b / 2 + 1));
        assert_int_equal(buf[UBJ_BS - 1], (uint8_t)(b / 2 + 1));
        assert_int_equal(tzero_check(buf + UBJ_BS, UBJ_BS), UBJ_BS);
    }
    /* survives a remount */
    ubj_test_remount(tf->dev, &tf->fs);
    fs = tf->fs;
    struct t_tree t2 = t_walk(fs, ino);
    assert_int_equal(t2.extents, t.extents);
    assert_int_equal(t2.nodes, t.nodes);
    /* shrink step by step to empty: depth back to 0, everything freed */
    for (uint64_t keep = n; keep > 0; keep = keep / 3) {
        t_truncate(fs, ino, keep * UBJ_BS);
        t = t_walk(fs, ino);
        assert_int_equal(t.extents, (keep + 1) / 2);
        assert_int_equal(free0 - t_free_blocks(fs), t.ip_blocks);
        if (t.extents <= UBJ_EXT_ROOT_MAX)
            assert_int_equal(t.depth, 0);     /* back in the inode */
        else if (t.extents <= UBJ_EXT_ROOT_MAX * UBJ_EXT_NODE_MAX / 2)
            assert_int_equal(t.depth, 1);
    }
    t_truncate(fs, ino, 0);
    t = t_walk(fs, ino);
    assert_int_equal(t.depth, 0);
    assert_int_equal(t.extents, 0);
    assert_int_equal(t.ip_blocks, 0);
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_random_model -- single blocks written in random order (mostly
 * unmergeable), random truncates; the tree and contents match a model. */
static void test_random_model(void **state)
{
    struct tfs *tf = TFS(state);
    struct ubj_fs *fs = tf->fs;
    uint64_t free0 = t_free_blocks(fs);
    struct tprng rng;
    tprng_seed(&rng, tprng_env_seed("UBJ_TEST_SEED", 42));
    ubj_ino_t ino = t_file(fs, "rnd");
    const uint32_t nb = 3000;
    uint8_t *val = calloc(nb, 1);
    assert_non_null(val);
    uint64_t size = 0;
    for (int it = 0; it < 5000; it++) {
        if (tprng_below(&rng, 800) == 0) {
            uint64_t keep = tprng_below(&rng, nb);
            t_truncate(fs, ino, keep * UBJ_BS);
            memset(val + keep, 0, nb - keep);
            size = keep * UBJ_BS;
            t_walk(fs, ino);
            continue;
        }
        uint32_t b = (uint32_t)tprng_below(&rng, nb / 2) * 2 +
                     (tprng_below(&rng, 6) == 0);
        uint8_t v = (uint8_t)(tprng_below(&rng, 255) + 1);
        t_put_block(fs, ino, b, v);
        val[b] = v;
        if ((uint64_t)(b + 1) * UBJ_BS > size)
            size = (uint64_t)(b + 1) * UBJ_BS;
    }
    struct t_tree t = t_walk(fs, ino);
    assert_int_equal(free0 - t_free_blocks(fs), t.ip_blocks);
    ubj_test_remount(tf->dev, &tf->fs);
    fs = tf->fs;
    uint8_t buf[UBJ_BS];
    for (uint32_t b = 0; (uint64_t)b * UBJ_BS < size; b++) {
        assert_rc(ubj_pread(fs, ino, buf, sizeof buf, (off_t)b * UBJ_BS), UBJ_BS);
        if (buf[0] != val[b] || buf[UBJ_BS - 1] != val[b])
            fail_msg("block %u: %u, want %u", b, buf[0], val[b]);
    }
    t_truncate(fs, ino, 0);
    t = t_walk(fs, ino);
    assert_int_equal(t.depth, 0);
    assert_int_equal(t_free_blocks(fs), free0);
    free(val);
}

/* test_backward -- blocks written from the end to the start: inserts at
 * the front of leaves and of the tree, merging to the right. */
static void test_backward(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t a = t_file(fs, "sparse");
    for (int b = 2 * 600; b >= 0; b -= 2)
        t_put_block(fs, a, (uint64_t)b, (uint8_t)(b / 2 + 3));
    struct t_tree t = t_walk(fs, a);
    assert_int_equal(t.extents, 601);
    assert_int_equal(t.depth, 1);
    uint8_t buf[UBJ_BS];
    for (int b = 0; b <= 2 * 600; b++) {
        assert_rc(ubj_pread(fs, a, buf, sizeof buf, (off_t)b * UBJ_BS), UBJ_BS);
        assert_int_equal(buf[7], b % 2 ? 0 : (uint8_t)(b / 2 + 3));
    }
    t_truncate(fs, a, 0);
    assert_int_equal(t_walk(fs, a).depth, 0);
}

/* test_grow_front -- a full root (7 extents) grown by an extent before
 * all of them: the new index key covers it at once. */
static void test_grow_front(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "front");
    for (uint32_t b = 100; b < 100 + 2 * UBJ_EXT_ROOT_MAX; b += 2)
        t_put_block(fs, ino, b, (uint8_t)b);
    assert_int_equal(t_walk(fs, ino).depth, 0);
    t_put_block(fs, ino, 3, 3);
    struct t_tree t = t_walk(fs, ino);
    assert_int_equal(t.depth, 1);
    assert_int_equal(t.extents, UBJ_EXT_ROOT_MAX + 1);
    uint8_t buf[UBJ_BS];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 3 * UBJ_BS), UBJ_BS);
    assert_int_equal(buf[0], 3);
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 112 * UBJ_BS), UBJ_BS);
    assert_int_equal(buf[0], 112);
}

/* test_map_runs -- fs_ext_map lengths: within an extent, over a hole up
 * to the next extent, past the last one up to max. */
static void test_map_runs(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "m");
    uint8_t buf[4 * UBJ_BS];
    memset(buf, 1, sizeof buf);
    assert_rc(ubj_pwrite(fs, ino, buf, sizeof buf, 10 * UBJ_BS), sizeof buf);
    uint64_t pblk, first;
    uint32_t len;
    assert_ok(t_map(fs, ino, 0, 100, &pblk, &len));
    assert_int_equal(pblk, 0);
    assert_int_equal(len, 10);
    assert_ok(t_map(fs, ino, 3, 5, &pblk, &len));
    assert_int_equal(len, 5);                    /* capped at max */
    assert_ok(t_map(fs, ino, 10, 100, &first, &len));
    assert_true(first != 0);
    assert_int_equal(len, 4);
    assert_ok(t_map(fs, ino, 12, 100, &pblk, &len));
    assert_int_equal(pblk, first + 2);
    assert_int_equal(len, 2);
    assert_ok(t_map(fs, ino, 14, 77, &pblk, &len));
    assert_int_equal(pblk, 0);
    assert_int_equal(len, 77);
    assert_ok(t_map(fs, ino, 0xffffffffu, 77, &pblk, &len));
    assert_int_equal(len, 1);                    /* the last logical block */
    assert_ok(t_map(fs, ino, 14, 0, &pblk, &len));
    assert_int_equal(len, 1);                    /* max 0 counts as 1 */
}

/* t_set_root -- replace ino's extent root (and blocks, size) directly,
 * with the EXT_MAP over the root that fs_ext_prealloc gives such records
 * (blocks, size: fs_idirty's INODE_ATTR). */
static void t_set_root(struct ubj_fs *fs, ubj_ino_t ino,
                       const struct ubj_extent *e, unsigned n, uint64_t blocks,
                       uint64_t size)
{
    struct ubj_handle *h;
    struct fs_iref r;
    assert_ok(fs_start(fs, 4, &h));
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        rc = fs_iwrite(fs, h, &r);
        if (rc == 0) {
            fs_ext_init(r.ip);
            memcpy(r.ip->i_data.ext.e, e, n * sizeof *e);
            r.ip->i_data.ext.hdr.entries = (uint16_t)n;
            r.ip->blocks = blocks;
            r.ip->size = size;
            rc = fs_ievent(h, &r, UBJ_EV_EXT_MAP, &r.ip->i_data.ext,
                           sizeof r.ip->i_data.ext, n ? e[0].lblk : 0);
            if (rc == 0)
                rc = fs_idirty(fs, h, &r);
        }
        fs_iput(fs, &r);
    }
    assert_ok(fs_stop(fs, h, rc));
}

/* test_unwritten -- a preallocated extent over junk reads as zeros; a
 * write into its middle splits it into unwritten / written / unwritten. */
static void test_unwritten(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    ubj_ino_t ino = t_file(fs, "u");
    /* 8 blocks full of junk, then handed to the file as unwritten */
    uint8_t junk[8 * UBJ_BS];
    memset(junk, 0xee, sizeof junk);
    assert_rc(ubj_pwrite(fs, ino, junk, sizeof junk, 0), sizeof junk);
    uint64_t p0;
    uint32_t len;
    assert_ok(t_map(fs, ino, 0, 8, &p0, &len));
    assert_int_equal(len, 8);
    struct ubj_extent e = { .lblk = 0, .len = 8 | UBJ_EXT_UNWRITTEN, .pblk = p0 };
    t_set_root(fs, ino, &e, 1, 8, sizeof junk);
    uint8_t buf[8 * UBJ_BS];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), sizeof buf);
    assert_int_equal(tzero_check(buf, sizeof buf), sizeof buf);
    uint64_t pblk;
    assert_ok(t_map(fs, ino, 2, 100, &pblk, &len));
    assert_int_equal(pblk, 0);
    assert_int_equal(len, 6);
    /* write 100 bytes in block 3 and all of block 4 */
    uint8_t data[UBJ_BS + 100];
    memset(data, 0x5a, sizeof data);
    assert_rc(ubj_pwrite(fs, ino, data, sizeof data, 4 * UBJ_BS - 100), sizeof data);
    struct t_tree t = t_walk(fs, ino);
    assert_int_equal(t.extents, 3);
    assert_int_equal(t.data_blocks, 8);
    assert_ok(t_map(fs, ino, 3, 100, &pblk, &len));
    assert_int_equal(pblk, p0 + 3);
    assert_int_equal(len, 2);
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), sizeof buf);
    for (size_t i = 0; i < sizeof buf; i++) {
        uint8_t want = i >= 4 * UBJ_BS - 100 && i < 5 * UBJ_BS ? 0x5a : 0;
        if (buf[i] != want)
            fail_msg("byte %zu: %#x, want %#x", i, buf[i], want);
    }
    t_truncate(fs, ino, 0);
    assert_int_equal(t_walk(fs, ino).ip_blocks, 0);
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_unwritten_fill -- writing preallocated space block by block, up
 * or down, keeps one written extent growing into the unwritten one. */
static void test_unwritten_fill(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    uint64_t free0 = t_free_blocks(fs);
    const uint32_t n = 64;
    for (int down = 0; down < 2; down++) {
        ubj_ino_t ino = t_file(fs, down ? "down" : "up");
        uint8_t *junk = malloc((size_t)n * UBJ_BS);
        assert_non_null(junk);
        memset(junk, 0xee, (size_t)n * UBJ_BS);
        assert_rc(ubj_pwrite(fs, ino, junk, (size_t)n * UBJ_BS, 0), n * UBJ_BS);
        free(junk);
        uint64_t p0;
        uint32_t len;
        assert_ok(t_map(fs, ino, 0, n, &p0, &len));
        assert_int_equal(len, n);
        struct ubj_extent e = { .lblk = 0, .len = n | UBJ_EXT_UNWRITTEN, .pblk = p0 };
        t_set_root(fs, ino, &e, 1, n, (uint64_t)n * UBJ_BS);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t b = down ? n - 1 - k : k;
            t_put_block(fs, ino, b, (uint8_t)(b + 1));
            struct t_tree t = t_walk(fs, ino);
            assert_int_equal(t.extents, k + 1 < n ? 2 : 1);
            assert_int_equal(t.data_blocks, n);
        }
        uint64_t pblk;
        assert_ok(t_map(fs, ino, 0, 1000, &pblk, &len));
        assert_int_equal(pblk, p0);
        assert_int_equal(len, n);
        uint8_t buf[UBJ_BS];
        assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 17 * UBJ_BS), UBJ_BS);
        assert_int_equal(buf[100], 18);
        assert_ok(ubj_unlink(fs, UBJ_ROOT_INO, down ? "down" : "up"));
    }
    assert_int_equal(t_free_blocks(fs), free0);
}

/* t_corrupt_setup -- a file system whose corruption tests do not fsck,
 * mounted without the event checker: they damage roots and nodes by
 * design, which no event describes. */
static int t_corrupt_setup(void **state)
{
    t_unchecked_begin();
    int rc = tfs_setup(state);
    t_unchecked_end();
    return rc;
}

/* t_corrupt_teardown -- unmount and drop the image without a check. */
static int t_corrupt_teardown(void **state)
{
    struct tfs *t = *state;
    ubj_unmount(t->fs);
    ubj_bdev_destroy(t->dev);
    free(t);
    *state = NULL;
    return 0;
}

/* test_corrupt_root -- bad roots: -EUCLEAN from read, write, truncate. */
static void test_corrupt_root(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "c");
    uint8_t buf[UBJ_BS] = { 1 };
    assert_rc(ubj_pwrite(fs, ino, buf, sizeof buf, 0), UBJ_BS);
    uint64_t p0;
    uint32_t len;
    assert_ok(t_map(fs, ino, 0, 1, &p0, &len));
    struct ubj_extent bad[3][2] = {
        { { .lblk = 0, .len = 1, .pblk = 0 } },                /* superblock */
        { { .lblk = 0, .len = 0, .pblk = p0 } },               /* empty */
        { { .lblk = 5, .len = 1, .pblk = p0 },                 /* unsorted */
          { .lblk = 2, .len = 1, .pblk = p0 } },
    };
    unsigned nent[3] = { 1, 1, 2 };
    for (int i = 0; i < 3; i++) {
        fs->error = 0;      /* each case from a writable mount */
        t_set_root(fs, ino, bad[i], nent[i], 1, 8 * UBJ_BS);
        assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), -EUCLEAN);
        assert_true(strstr(ubj_errormsg(), "extent") != NULL);
        assert_int_equal(fs->error, -EUCLEAN);   /* the mount turned read-only */
        fs->error = 0;
        assert_rc(ubj_pwrite(fs, ino, buf, sizeof buf, 6 * UBJ_BS), -EUCLEAN);
    }
    /* a root claiming depth 9, or a wrong max */
    struct ubj_handle *h;
    struct fs_iref r;
    fs->error = 0;
    int rc[4] = { -1, 0, 0, 0 };
    uint64_t pblk;
    assert_ok(fs_start(fs, 2, &h));
    if (fs_iget(fs, ino, &r) == 0) {
        if (fs_iwrite(fs, h, &r) == 0) {
            fs_ext_init(r.ip);
            r.ip->i_data.ext.hdr.depth = 9;
            r.ip->i_data.ext.hdr.entries = 1;
            rc[1] = fs_ext_truncate(fs, h, &r, 0);
            r.ip->i_data.ext.hdr.depth = 0;
            r.ip->i_data.ext.hdr.max = 200;
            rc[2] = fs_ext_map(fs, &r, 0, 1, &pblk, &len);
            fs_ext_init(r.ip);
            r.ip->flags &= ~UBJ_IFL_EXTTREE;
            rc[3] = fs_ext_map(fs, &r, 0, 1, &pblk, &len);
            rc[0] = fs_idirty(fs, h, &r);
        }
        fs_iput(fs, &r);
    }
    fs_stop(fs, h, 0);
    assert_ok(rc[0]);
    assert_rc(rc[1], -EUCLEAN);     /* depth 9 */
    assert_rc(rc[2], -EUCLEAN);     /* max 200 */
    assert_rc(rc[3], -EUCLEAN);     /* no UBJ_IFL_EXTTREE */
}

/* test_corrupt_node -- a depth-1 tree whose leaf is damaged in turn:
 * magic, entry count, depth, key order, child out of range. */
static void test_corrupt_node(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "n");
    for (uint32_t b = 0; b < 2 * 20; b += 2)
        t_put_block(fs, ino, b, 9);
    assert_int_equal(t_walk(fs, ino).depth, 1);
    struct ubj_handle *h;
    struct fs_iref r;
    uint64_t leaf = 0;
    assert_ok(fs_start(fs, 0, &h));
    if (fs_iget(fs, ino, &r) == 0) {
        struct ubj_ext_idx ix;          /* the root is an index here */
        memcpy(&ix, &r.ip->i_data.ext.e[0], sizeof ix);
        leaf = ix.child;
        fs_iput(fs, &r);
    }
    fs_stop(fs, h, 0);
    assert_true(leaf != 0);
    for (int i = 0; i < 6; i++) {
        struct ubj_buf *b;
        assert_ok(fs_start(fs, 2, &h));
        int rc = fs_meta_write_begin(fs, h, leaf, UBJ_MAGIC_EXTENT, &b);
        fs_stop(fs, h, 0);
        assert_ok(rc);      /* b stays referenced: changed and restored below */
        struct ubj_ext_hdr save_h = *T_NODE_HDR(b);
        struct ubj_extent save_e[2] = { T_NODE_ENTS(b)[0], T_NODE_ENTS(b)[1] };
        switch (i) {
        case 0: T_NODE_HDR(b)->magic = 0x1234; break;
        case 1: T_NODE_HDR(b)->entries = 255; break;
        case 2: T_NODE_HDR(b)->depth = 1; break;
        case 3: T_NODE_ENTS(b)[1].lblk = 0; break;
        case 4: T_NODE_ENTS(b)[1].pblk = fs->sb.nblocks - 1; T_NODE_ENTS(b)[1].len = 5; break;
        case 5: T_NODE_HDR(b)->entries = 0; break;
        }
        uint8_t buf[UBJ_BS];
        fs->error = 0;
        assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 2 * UBJ_BS), -EUCLEAN);
        fs->error = 0;
        assert_rc(ubj_pwrite(fs, ino, buf, sizeof buf, 3 * UBJ_BS), -EUCLEAN);
        fs->error = 0;
        assert_rc(ubj_setattr(fs, ino, &(struct ubj_setattr){ .valid = UBJ_SET_SIZE,
                                                              .size = 0 }, NULL),
                  -EUCLEAN);
        *T_NODE_HDR(b) = save_h;
        T_NODE_ENTS(b)[0] = save_e[0];
        T_NODE_ENTS(b)[1] = save_e[1];
        ubj_cache_put(fs->cache, b);
        fs->error = 0;
        assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 2 * UBJ_BS), UBJ_BS);
        assert_int_equal(buf[0], 9);
    }
    /* an index entry pointing outside the data area */
    int rc = -1;
    assert_ok(fs_start(fs, 2, &h));
    if (fs_iget(fs, ino, &r) == 0) {
        if (fs_iwrite(fs, h, &r) == 0) {
            struct ubj_ext_idx ix;
            memcpy(&ix, &r.ip->i_data.ext.e[0], sizeof ix);
            ix.child = 0;
            memcpy(&r.ip->i_data.ext.e[0], &ix, sizeof ix);
            rc = fs_idirty(fs, h, &r);
        }
        fs_iput(fs, &r);
    }
    fs_stop(fs, h, 0);
    assert_ok(rc);
    uint8_t buf[UBJ_BS];
    assert_rc(ubj_pread(fs, ino, buf, sizeof buf, 0), -EUCLEAN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_append_merges, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_depth2, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_random_model, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_backward, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_grow_front, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_map_runs, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_unwritten, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_unwritten_fill, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_root, t_corrupt_setup,
                                        t_corrupt_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_node, t_corrupt_setup,
                                        t_corrupt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
