/*
 * dir.c -- the per-directory B+tree of names (format.h "directory B+tree
 * nodes"): lookup, add, remove, set, iterate, init and destroy.
 *
 * A directory's i_data.dir holds the root block, the depth (0: the root is
 * a leaf), the entry count and the node count.  Keys are
 *   key = max(((ubj_name_hash(seed, name) >> 1) & ~0xff), 0x100) | seq
 * where seq (0..255) is the first index free among the names sharing the
 * hash prefix, so every name of a "hash range" [base, base + 0xff] must be
 * compared on lookup.  Keys are the readdir cookies.
 *
 * Invariants kept by this file (and checked on every node read, so a
 * corrupt image gives -EUCLEAN, never an out-of-bounds access):
 *  - i_data.dir.root != 0; depth <= DIR_MAX_DEPTH; the node at level L of
 *    a descent has level L and owner == the directory's inode number.
 *  - Leaf records {u64 key, u64 ino, u8 type, u8 namelen, name} padded to
 *    8 bytes, packed from offset 32, `used` bytes, `nrec` of them, keys
 *    strictly increasing, namelen 1..255, keys within the bounds the
 *    parents give ([lo, hi)).
 *  - Internal records {u64 key, u64 child}: used = 16 * nrec, nrec >= 1,
 *    the first key 0 (the node's lower bound comes from its parent),
 *    keys strictly increasing and inside (lo, hi).
 *  - Only the root may be an empty leaf; a non-root node that becomes
 *    empty is freed and removed from its parent; a root index with one
 *    child collapses into that child.
 *  - nodes == blocks in the tree; ip->blocks == nodes (+ 1 with an
 *    xattr block); ip->size ==
 *    nodes * 4096; entries == names in the leaves.
 *
 * There are no sibling pointers: a range scan (lookup, iterate) descends
 * from the root again for the next leaf using the upper bound the parents
 * gave the previous one.  Every change allocates the blocks it needs up
 * front (a failed allocation changes nothing).
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include "fs/fs.h"

/* Deepest tree built or accepted.  A root split needs a full root
 * (254 children), so depth 8 is far beyond any real directory; namei.c's
 * credit estimates assume this bound. */
#define DIR_MAX_DEPTH 8u
#define DIR_IREC 16u                                  /* internal record */
#define DIR_REC_MAX 280u                              /* leaf, 255-byte name */
#define DIR_NO_BOUND UINT64_MAX
#define DIR_RANGE 0x100u                              /* keys per hash prefix */

/* One descent: per level (0 = leaf), the node and the byte offset taken. */
struct dir_path {
    unsigned depth;
    uint64_t blk[DIR_MAX_DEPTH + 1];
    uint16_t pos[DIR_MAX_DEPTH + 1];   /* internal: record of the child taken;
                                          leaf: first record with key >= target */
    uint16_t used[DIR_MAX_DEPTH + 1];
    uint16_t nrec[DIR_MAX_DEPTH + 1];
    uint64_t hi;                       /* leaf's exclusive upper bound */
};

/* A name found by dir_find, the sequence numbers seen in its range, and
 * the descent a change can reuse (no second descent). */
struct dir_hit {
    uint64_t key;
    uint64_t ino;
    unsigned type;
    uint64_t seen[DIR_RANGE / 64];
    struct dir_path path;     /* found: the name's leaf, pos[0] = its record;
                                 single: the leaf holding the whole range */
    bool single;
    uint16_t end;             /* single: offset just past the range */
    uint16_t offs[DIR_RANGE]; /* single: offset of each seq seen */
};

/* dir_get64 -- unaligned-safe little-endian load. */
static inline uint64_t dir_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* dir_put64 -- unaligned-safe store. */
static inline void dir_put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof v);
}

/* dir_reclen -- bytes of a leaf record with a name of `namelen`. */
static inline unsigned dir_reclen(unsigned namelen)
{
    return (UBJ_DIR_LEAF_FIXED + namelen + 7u) & ~7u;
}

/* dir_node -- the node header of a buffer. */
static inline struct ubj_dir_node *dir_node(struct ubj_buf *b)
{
    return (struct ubj_dir_node *)b->data;
}

/* dir_recs -- the record area of a buffer. */
static inline uint8_t *dir_recs(struct ubj_buf *b)
{
    return b->data + UBJ_DIR_REC_OFF;
}

/* dir_base -- the first key of the hash range of a name. */
static uint64_t dir_base(struct ubj_fs *fs, const char *name, size_t len)
{
    uint64_t k = (ubj_name_hash(fs->sb.hash_seed, name, len) >> 1) & ~(uint64_t)0xff;
    return k < UBJ_DIR_FIRST_KEY ? UBJ_DIR_FIRST_KEY : k;
}

/* dir_corrupt -- report a damaged directory node (sticky fs error, as
 * every detected corruption); returns -EUCLEAN. */
static int dir_corrupt(struct ubj_fs *fs, struct fs_iref *dir, uint64_t blk,
                       const char *what)
{
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "directory %llu: node %llu: %s",
                         (unsigned long long)dir->ino, (unsigned long long)blk, what);
}

/* dir_check_leaf -- validate a leaf's records against [lo, hi): keys from
 * lo, sorted; a suffix at or past hi is a split's stale copy (below). */
static int dir_check_leaf(struct ubj_fs *fs, struct fs_iref *dir, uint64_t blk,
                          struct ubj_buf *b, uint64_t lo, uint64_t hi)
{
    const struct ubj_dir_node *n = dir_node(b);
    const uint8_t *r = dir_recs(b);
    unsigned off = 0, cnt = 0;
    uint64_t prev = 0;

    while (off < n->used) {
        if (off + UBJ_DIR_LEAF_FIXED > n->used)
            return dir_corrupt(fs, dir, blk, "record past the end");
        unsigned nl = r[off + 17];
        uint64_t k = dir_get64(r + off);
        if (nl == 0)
            return dir_corrupt(fs, dir, blk, "empty name");
        if (off + dir_reclen(nl) > n->used)
            return dir_corrupt(fs, dir, blk, "name past the end");
        /* a sorted suffix of keys >= hi is a split's stale copy: the
         * moved half, which the new node to the right holds (mode sync's
         * write order, src/txn/sync.c); lookups route past it and
         * readdir stops at hi; fsck drops it */
        if (k < UBJ_DIR_FIRST_KEY || k < lo || (cnt > 0 && k <= prev))
            return dir_corrupt(fs, dir, blk, "key out of order");
        (void)hi;
        prev = k;
        off += dir_reclen(nl);
        cnt++;
    }
    if (cnt != n->nrec)
        return dir_corrupt(fs, dir, blk, "record count");
    return 0;
}

/* dir_check_index -- validate an internal node's records. */
static int dir_check_index(struct ubj_fs *fs, struct fs_iref *dir, uint64_t blk,
                           struct ubj_buf *b, uint64_t lo, uint64_t hi)
{
    const struct ubj_dir_node *n = dir_node(b);
    const uint8_t *r = dir_recs(b);
    (void)hi;

    if (n->nrec == 0 || n->used != n->nrec * DIR_IREC)
        return dir_corrupt(fs, dir, blk, "index size");
    if (dir_get64(r) != 0)
        return dir_corrupt(fs, dir, blk, "first index key not 0");
    for (unsigned i = 0; i < n->nrec; i++) {
        uint64_t k = dir_get64(r + i * DIR_IREC);
        uint64_t c = dir_get64(r + i * DIR_IREC + 8);
        /* keys >= hi: a split's stale copy, as in dir_check_leaf */
        if (i > 0 && (k <= lo || k <= dir_get64(r + (i - 1) * DIR_IREC)))
            return dir_corrupt(fs, dir, blk, "index key out of order");
        if (c < fs->sb.data_start || c >= fs->sb.nblocks)
            return dir_corrupt(fs, dir, blk, "child out of range");
    }
    return 0;
}

/* dir_read -- read and validate node `blk` expected at `level` with keys
 * in [lo, hi) (the record scan only when the block was just read from
 * the device: cached nodes change only through this file).  The caller
 * puts *out. */
static int dir_read(struct ubj_fs *fs, struct fs_iref *dir, uint64_t blk,
                    unsigned level, uint64_t lo, uint64_t hi, struct ubj_buf **out)
{
    struct ubj_buf *b = NULL;
    int rc;

    if (blk < fs->sb.data_start || blk >= fs->sb.nblocks)
        return dir_corrupt(fs, dir, blk, "block out of range");
    bool fresh;
    rc = fs_meta_read_fresh(fs, blk, UBJ_MAGIC_DIR, &b, &fresh);
    if (rc < 0)
        return rc;
    const struct ubj_dir_node *n = dir_node(b);
    if (n->owner != dir->ino)
        rc = dir_corrupt(fs, dir, blk, "owner");
    else if (n->level != level)
        rc = dir_corrupt(fs, dir, blk, "level");
    else if (n->used > UBJ_DIR_SPACE)
        rc = dir_corrupt(fs, dir, blk, "used bytes");
    else if (!fresh)
        rc = 0;   /* records checked when it came from the device */
    else if (level == 0)
        rc = dir_check_leaf(fs, dir, blk, b, lo, hi);
    else
        rc = dir_check_index(fs, dir, blk, b, lo, hi);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        if (fresh)   /* checked only when fresh: read it again next time */
            ubj_cache_forget(fs->cache, blk);
        return rc;
    }
    *out = b;
    return 0;
}

/* dir_index_seek -- index of the last record with key <= `key`. */
static unsigned dir_index_seek(struct ubj_buf *b, uint64_t key)
{
    const uint8_t *r = dir_recs(b);
    unsigned lo = 0, hi = dir_node(b)->nrec;   /* answer in [lo, hi) */

    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (dir_get64(r + mid * DIR_IREC) <= key)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* dir_leaf_seek -- byte offset of the first record with key >= `key`. */
static unsigned dir_leaf_seek(struct ubj_buf *b, uint64_t key)
{
    const uint8_t *r = dir_recs(b);
    unsigned off = 0, used = dir_node(b)->used;

    while (off < used && dir_get64(r + off) < key)
        off += dir_reclen(r[off + 17]);
    return off;
}

/* dir_root_check -- sanity of the i_data.dir root fields. */
static int dir_root_check(struct ubj_fs *fs, struct fs_iref *dir)
{
    const struct ubj_dir_root *dr = &dir->ip->i_data.dir;

    if (dr->root == 0)
        return dir_corrupt(fs, dir, 0, "no root");
    if (dr->depth > DIR_MAX_DEPTH)
        return dir_corrupt(fs, dir, dr->root, "tree too deep");
    return 0;
}

/* dir_descend -- walk from the root to the leaf that covers `key`,
 * recording the path; *leaf is the referenced, validated leaf. */
static int dir_descend(struct ubj_fs *fs, struct fs_iref *dir, uint64_t key,
                       struct dir_path *p, struct ubj_buf **leaf)
{
    const struct ubj_dir_root *dr = &dir->ip->i_data.dir;
    uint64_t blk = dr->root, lo = 0, hi = DIR_NO_BOUND;
    int rc = dir_root_check(fs, dir);

    if (rc < 0)
        return rc;
    p->depth = dr->depth;
    for (unsigned lvl = dr->depth;; lvl--) {
        struct ubj_buf *b = NULL;
        rc = dir_read(fs, dir, blk, lvl, lo, hi, &b);
        if (rc < 0)
            return rc;
        p->blk[lvl] = blk;
        p->used[lvl] = dir_node(b)->used;
        p->nrec[lvl] = dir_node(b)->nrec;
        if (lvl == 0) {
            p->pos[0] = (uint16_t)dir_leaf_seek(b, key);
            p->hi = hi;
            *leaf = b;
            return 0;
        }
        unsigned i = dir_index_seek(b, key);
        const uint8_t *r = dir_recs(b) + i * DIR_IREC;
        if (i > 0)
            lo = dir_get64(r);
        if (i + 1u < dir_node(b)->nrec && dir_get64(r + DIR_IREC) < hi)
            hi = dir_get64(r + DIR_IREC);   /* never past a stale copy's */
        blk = dir_get64(r + 8);
        p->pos[lvl] = (uint16_t)(i * DIR_IREC);
        ubj_cache_put(fs->cache, b);
    }
}

/* dir_find -- look for `name` among the keys of its hash range.  Returns
 * 1 (found: hit filled), 0 (absent), or a negative errno.  With `all`,
 * scans the whole range to fill hit->seen (for choosing a free seq). */
static int dir_find(struct ubj_fs *fs, struct fs_iref *dir, const char *name,
                    size_t len, bool all, struct dir_hit *hit)
{
    uint64_t base = dir_base(fs, name, len), last = base + DIR_RANGE - 1, key = base;
    int found = 0;

    memset(hit->seen, 0, sizeof hit->seen);
    hit->single = false;
    for (bool first = true;; first = false) {
        struct dir_path p;
        struct ubj_buf *b = NULL;
        unsigned off;
        int rc = dir_descend(fs, dir, key, &p, &b);
        if (rc < 0)
            return rc;
        const uint8_t *r = dir_recs(b);
        for (off = p.pos[0]; off < p.used[0]; off += dir_reclen(r[off + 17])) {
            uint64_t k = dir_get64(r + off);
            if (k > last)
                break;
            hit->seen[(k - base) / 64] |= 1ULL << ((k - base) % 64);
            hit->offs[k - base] = (uint16_t)off;
            if (r[off + 17] == len && memcmp(r + off + UBJ_DIR_LEAF_FIXED, name, len) == 0) {
                hit->key = k;
                hit->ino = dir_get64(r + off + 8);
                hit->type = r[off + 16];
                hit->path = p;
                hit->path.pos[0] = (uint16_t)off;
                found = 1;
                if (!all)
                    break;
            }
        }
        ubj_cache_put(fs->cache, b);
        if ((found && !all) || p.hi > last) {
            if (first && !found) {
                hit->single = true;
                hit->path = p;
                hit->end = (uint16_t)off;
            }
            return found;
        }
        key = p.hi;
    }
}

/* dir_seen -- seq was taken in the range dir_find scanned. */
static bool dir_seen(const struct dir_hit *hit, unsigned seq)
{
    return (hit->seen[seq / 64] >> (seq % 64)) & 1;
}

/* dir_name_ok -- an internal caller passed a usable name. */
static int dir_name_ok(const char *name, size_t len)
{
    if (len == 0 || len > UBJ_NAME_MAX || name == NULL)
        return ubj_set_error(-EINVAL, "directory: bad name length %zu", len);
    return 0;
}

/* dir_touch -- mtime/ctime of the directory after a change. */
static int dir_touch(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir)
{
    int rc = fs_iwrite(fs, h, dir);
    if (rc < 0)
        return rc;
    fs_touch(fs, dir->ip, false, true, true);
    return fs_idirty(fs, h, dir);
}

/* dir_make_rec -- leaf record `key`: name -> ino (type DT_*) in rec
 * (dir_reclen(len) bytes, padding zeroed). */
static void dir_make_rec(uint8_t *rec, uint64_t key, uint64_t ino, unsigned type,
                         const char *name, size_t len)
{
    memset(rec, 0, dir_reclen((unsigned)len));
    dir_put64(rec, key);
    dir_put64(rec + 8, ino);
    rec[16] = (uint8_t)type;
    rec[17] = (uint8_t)len;
    memcpy(rec + UBJ_DIR_LEAF_FIXED, name, len);
}

/* dir_ev -- event ev (its type, a, b, name; ino is dir's) over node b's
 * counts and records up to byte `end` of the records (what an insert,
 * delete or split rewrote). */
static int dir_ev(struct ubj_handle *h, struct fs_iref *dir, struct ubj_buf *b,
                  struct ubj_event ev, unsigned end)
{
    ev.ino = dir->ino;
    uint8_t *from = b->data + offsetof(struct ubj_dir_node, nrec);
    return fs_event(h, b, from, (size_t)(dir_recs(b) + end - from), ev);
}

/* dir_leaf_ev -- DIRENT_ADD / DIRENT_REMOVE of leaf record rec in dir (a
 * copy for a removal: the name must outlive the event call): the name,
 * a = the inode named, b = its type. */
static struct ubj_event dir_leaf_ev(const struct fs_iref *dir, enum ubj_event_type type,
                                    const uint8_t *rec)
{
    return (struct ubj_event){ .type = type, .ino = dir->ino,
                               .a = dir_get64(rec + 8), .b = rec[16],
                               .name = (const char *)rec + UBJ_DIR_LEAF_FIXED,
                               .namelen = rec[17] };
}

/* dir_index_ev -- DIR_SPLIT / DIR_MERGE of internal record rec: a = its
 * key (the child's lowest key), b = the child node. */
static struct ubj_event dir_index_ev(enum ubj_event_type type, const uint8_t *rec)
{
    return (struct ubj_event){ .type = type, .a = dir_get64(rec), .b = dir_get64(rec + 8) };
}

/* dir_root_ev -- DIR_ROOT: the directory root in dir's inode changed. */
static int dir_root_ev(struct ubj_handle *h, struct fs_iref *dir)
{
    return fs_ievent(h, dir, UBJ_EV_DIR_ROOT, &dir->ip->i_data.dir,
                     offsetof(struct ubj_dir_root, nodes) + 8, dir->ip->i_data.dir.root);
}

/* dir_account -- apply node/entry deltas (and a new root) to the inode. */
static int dir_account(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                       int64_t dnodes, int64_t dentries, uint64_t root, unsigned depth)
{
    int rc = fs_iwrite(fs, h, dir);
    if (rc < 0)
        return rc;
    struct ubj_inode *ip = dir->ip;
    ip->i_data.dir.nodes += (uint64_t)dnodes;
    ip->i_data.dir.entries += (uint64_t)dentries;
    ip->i_data.dir.root = root;
    ip->i_data.dir.depth = depth;
    ip->blocks += (uint64_t)dnodes;
    ip->size = ip->i_data.dir.nodes * UBJ_BS;
    fs_touch(fs, ip, false, true, true);
    rc = dir_root_ev(h, dir);
    return rc < 0 ? rc : fs_idirty(fs, h, dir);
}

/* dir_fresh -- start a new, empty node at `blk` (not read). */
static int dir_fresh(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                     uint64_t blk, unsigned level, struct ubj_buf **out)
{
    struct ubj_buf *b = NULL;
    int rc = fs_meta_new(fs, h, blk, UBJ_MAGIC_DIR, dir->ino, &b);
    if (rc < 0)
        return rc;
    memset(b->data + sizeof(struct ubj_blkhdr), 0, UBJ_BS - sizeof(struct ubj_blkhdr));
    struct ubj_dir_node *n = dir_node(b);
    n->level = (uint16_t)level;
    n->owner = dir->ino;
    *out = b;
    return 0;
}

/* dir_modify -- write access to node `blk`, which must still hold `used`
 * bytes (as seen by the descent). */
static int dir_modify(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                      uint64_t blk, unsigned used, struct ubj_buf **out)
{
    struct ubj_buf *b = NULL;
    int rc = fs_meta_write_begin(fs, h, blk, UBJ_MAGIC_DIR, &b);
    if (rc < 0)
        return rc;
    if (dir_node(b)->used != used || dir_node(b)->owner != dir->ino) {
        ubj_cache_put(fs->cache, b);
        return dir_corrupt(fs, dir, blk, "changed under a descent");
    }
    *out = b;
    return 0;
}

/* dir_done -- mark a modified node dirty and drop it. */
static int dir_done(struct ubj_fs *fs, struct ubj_handle *h, struct ubj_buf *b)
{
    int rc = fs_meta_dirty(fs, h, b);
    ubj_cache_put(fs->cache, b);
    return rc;
}

/* dir_alloc -- allocate n node blocks near `goal`; all or nothing. */
static int dir_alloc(struct ubj_fs *fs, struct ubj_handle *h, uint64_t goal,
                     unsigned n, uint64_t *blks)
{
    unsigned have = 0;

    while (have < n) {
        uint64_t start;
        uint32_t got;
        int rc = fs_balloc(fs, h, goal, n - have, &start, &got);
        if (rc < 0) {
            for (unsigned i = 0; i < have; i++)
                fs_bfree(fs, h, blks[i], 1);
            return rc;
        }
        for (uint32_t i = 0; i < got && have < n; i++)
            blks[have++] = start + i;
        goal = start + got;
    }
    return 0;
}

/* dir_insert_at -- insert a record into a node with room for it. */
static int dir_insert_at(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                         uint64_t blk, unsigned used, unsigned pos,
                         const uint8_t *rec, unsigned len)
{
    struct ubj_buf *b = NULL;
    int rc = dir_modify(fs, h, dir, blk, used, &b);
    if (rc < 0)
        return rc;
    uint8_t *r = dir_recs(b);
    memmove(r + pos + len, r + pos, used - pos);
    memcpy(r + pos, rec, len);
    dir_node(b)->used = (uint16_t)(used + len);
    dir_node(b)->nrec++;
    /* a leaf gets a name; an index node the record of a split's new node */
    rc = dir_ev(h, dir, b, dir_node(b)->level == 0 ? dir_leaf_ev(dir, UBJ_EV_DIRENT_ADD, rec)
                                                   : dir_index_ev(UBJ_EV_DIR_SPLIT, rec),
                used + len);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    return dir_done(fs, h, b);
}

/* dir_split_point -- byte offset splitting `total` bytes of records in
 * tmp near the middle; *nleft gets the record count before it. */
static unsigned dir_split_point(const uint8_t *tmp, unsigned total, unsigned level,
                                unsigned *nleft)
{
    if (level > 0) {
        *nleft = total / DIR_IREC / 2;
        return *nleft * DIR_IREC;
    }
    unsigned off = 0, cnt = 0, half = total / 2;
    for (;;) {
        unsigned rl = dir_reclen(tmp[off + 17]);
        if (off + rl >= half) {
            /* the record crossing the middle goes where it unbalances less */
            if (off == 0 || (off + rl - half < half - off && off + rl < total)) {
                *nleft = cnt + 1;
                return off + rl;
            }
            *nleft = cnt;
            return off;
        }
        off += rl;
        cnt++;
    }
}

/* dir_split -- insert `rec` at `pos` into the full node `blk` by splitting
 * it: the lower half stays, the upper half moves to `nblk`.  *sep gets
 * the first key of the upper half. */
static int dir_split(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                     uint64_t blk, unsigned level, unsigned used, unsigned pos,
                     const uint8_t *rec, unsigned len, uint64_t nblk, uint64_t *sep)
{
    uint8_t tmp[UBJ_DIR_SPACE + DIR_REC_MAX];
    struct ubj_buf *b = NULL, *nb = NULL;
    int rc = dir_modify(fs, h, dir, blk, used, &b);
    if (rc < 0)
        return rc;
    uint8_t *r = dir_recs(b);
    unsigned total = used + len, nrec = dir_node(b)->nrec + 1u, nleft;
    memcpy(tmp, r, pos);
    memcpy(tmp + pos, rec, len);
    memcpy(tmp + pos + len, r + pos, used - pos);
    unsigned s = dir_split_point(tmp, total, level, &nleft);

    rc = dir_fresh(fs, h, dir, nblk, level, &nb);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    memcpy(dir_recs(nb), tmp + s, total - s);
    dir_node(nb)->used = (uint16_t)(total - s);
    dir_node(nb)->nrec = (uint16_t)(nrec - nleft);
    *sep = dir_get64(tmp + s);
    if (level > 0)
        dir_put64(dir_recs(nb), 0);
    /* the inserted name, in whichever half it went to: DIRENT_ADD over its
     * record (the new node's NODE_INIT covers it too, the old node's
     * DIR_SPLIT below too: the name's own event is what a mode orders) */
    if (level == 0 && pos >= s)
        rc = fs_event(h, nb, dir_recs(nb) + (pos - s), len,
                      dir_leaf_ev(dir, UBJ_EV_DIRENT_ADD, dir_recs(nb) + (pos - s)));
    if (rc == 0)
        rc = dir_done(fs, h, nb);
    else
        ubj_cache_put(fs->cache, nb);

    memcpy(r, tmp, s);
    memset(r + s, 0, UBJ_DIR_SPACE - s);
    dir_node(b)->used = (uint16_t)s;
    dir_node(b)->nrec = (uint16_t)nleft;
    /* the old node lost its upper half to new node nblk (key *sep) */
    int rc2 = dir_ev(h, dir, b, (struct ubj_event){ .type = UBJ_EV_DIR_SPLIT,
                                                    .a = *sep, .b = nblk },
                     UBJ_DIR_SPACE);
    if (rc2 == 0 && level == 0 && pos < s)
        rc2 = fs_event(h, b, r + pos, len,
                       dir_leaf_ev(dir, UBJ_EV_DIRENT_ADD, r + pos));
    if (rc2 < 0) {
        ubj_cache_put(fs->cache, b);
        return rc2;
    }
    rc2 = dir_done(fs, h, b);
    return rc < 0 ? rc : rc2;
}

/* dir_new_root -- a root index over `left` and `right` (split at sep). */
static int dir_new_root(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                        uint64_t blk, unsigned level, uint64_t left, uint64_t sep,
                        uint64_t right)
{
    struct ubj_buf *b = NULL;
    int rc = dir_fresh(fs, h, dir, blk, level, &b);
    if (rc < 0)
        return rc;
    uint8_t *r = dir_recs(b);
    dir_put64(r, 0);
    dir_put64(r + 8, left);
    dir_put64(r + 16, sep);
    dir_put64(r + 24, right);
    dir_node(b)->nrec = 2;
    dir_node(b)->used = 2 * DIR_IREC;
    return dir_done(fs, h, b);
}

/* dir_insert -- insert leaf record `rec` where the descent `p` ended,
 * splitting full nodes bottom-up and growing a new root if needed. */
static int dir_insert(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                      struct dir_path *p, const uint8_t *rec, unsigned len)
{
    unsigned nsplit = 0, need = len;
    uint64_t nb[DIR_MAX_DEPTH + 2];

    while (p->used[nsplit] + need > UBJ_DIR_SPACE) {
        nsplit++;
        need = DIR_IREC;
        if (nsplit > p->depth)
            break;
    }
    bool grow = nsplit > p->depth;
    if (grow && p->depth + 1 > DIR_MAX_DEPTH)
        return ubj_set_error(-ENOSPC, "directory %llu: tree at its maximum depth",
                             (unsigned long long)dir->ino);
    unsigned nalloc = nsplit + (grow ? 1u : 0u);
    int rc = dir_alloc(fs, h, p->blk[0], nalloc, nb);
    if (rc < 0)
        return rc;

    uint8_t carry[DIR_REC_MAX];
    unsigned clen = len;
    uint64_t root = dir->ip->i_data.dir.root;
    unsigned depth = p->depth;
    memcpy(carry, rec, len);
    for (unsigned lvl = 0; rc == 0; lvl++) {
        unsigned pos = lvl == 0 ? p->pos[0] : p->pos[lvl] + DIR_IREC;
        if (lvl >= nsplit) {
            rc = dir_insert_at(fs, h, dir, p->blk[lvl], p->used[lvl], pos, carry, clen);
            break;
        }
        uint64_t sep;
        rc = dir_split(fs, h, dir, p->blk[lvl], lvl, p->used[lvl], pos, carry, clen,
                       nb[lvl], &sep);
        if (rc < 0)
            break;
        dir_put64(carry, sep);
        dir_put64(carry + 8, nb[lvl]);
        clen = DIR_IREC;
        if (lvl == p->depth) {
            rc = dir_new_root(fs, h, dir, nb[nsplit], lvl + 1, p->blk[lvl], sep, nb[lvl]);
            root = nb[nsplit];
            depth = lvl + 1;
            break;
        }
    }
    if (rc < 0)
        return rc;
    return dir_account(fs, h, dir, nalloc, 1, root, depth);
}

/* fs_dir_init -- give a new directory inode an empty root leaf. */
int fs_dir_init(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir)
{
    uint64_t blk;
    struct ubj_buf *b = NULL;
    int rc = dir_alloc(fs, h, 0, 1, &blk);
    if (rc < 0)
        return rc;
    rc = dir_fresh(fs, h, dir, blk, 0, &b);
    if (rc == 0)
        rc = dir_done(fs, h, b);
    if (rc == 0)
        rc = fs_iwrite(fs, h, dir);
    if (rc < 0) {
        fs_bfree(fs, h, blk, 1);
        return rc;
    }
    struct ubj_inode *ip = dir->ip;
    memset(&ip->i_data, 0, sizeof ip->i_data);
    ip->flags &= ~UBJ_IFL_EXTTREE;
    ip->i_data.dir.root = blk;
    ip->i_data.dir.nodes = 1;
    ip->blocks = 1;
    ip->size = UBJ_BS;
    rc = dir_root_ev(h, dir);
    return rc < 0 ? rc : fs_idirty(fs, h, dir);
}

/* fs_dir_lookup -- find `name`: 0 and *ino, *type (DT_*); -ENOENT. */
int fs_dir_lookup(struct ubj_fs *fs, struct fs_iref *dir, const char *name,
                  size_t len, ubj_ino_t *ino, unsigned *type)
{
    struct dir_hit hit;
    int rc = dir_name_ok(name, len);
    if (rc < 0)
        return rc;
    rc = dir_find(fs, dir, name, len, false, &hit);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return -ENOENT;
    if (ino)
        *ino = hit.ino;
    if (type)
        *type = hit.type;
    return 0;
}

/* fs_dir_add -- add `name` -> ino (type DT_*).  -EEXIST if present;
 * -ENOSPC (no block, or 256 names with one hash prefix). */
int fs_dir_add(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
               const char *name, size_t len, ubj_ino_t ino, unsigned type)
{
    struct dir_hit hit;
    int rc = dir_name_ok(name, len);
    if (rc < 0)
        return rc;
    rc = dir_find(fs, dir, name, len, true, &hit);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return -EEXIST;

    unsigned seq = 0;
    while (seq < DIR_RANGE && dir_seen(&hit, seq))
        seq++;
    if (seq == DIR_RANGE)
        return ubj_set_error(-ENOSPC, "directory %llu: hash range full",
                             (unsigned long long)dir->ino);

    uint8_t rec[DIR_REC_MAX];
    unsigned rl = dir_reclen((unsigned)len);
    uint64_t key = dir_base(fs, name, len) + seq;
    dir_make_rec(rec, key, ino, type, name, len);

    if (hit.single) {          /* reuse the descent: insert before seq's successor */
        unsigned pos = hit.end;
        for (unsigned s = seq + 1; s < DIR_RANGE; s++) {
            if (dir_seen(&hit, s)) {
                pos = hit.offs[s];
                break;
            }
        }
        hit.path.pos[0] = (uint16_t)pos;
        return dir_insert(fs, h, dir, &hit.path, rec, rl);
    }
    struct dir_path p;
    struct ubj_buf *leaf = NULL;
    rc = dir_descend(fs, dir, key, &p, &leaf);
    if (rc < 0)
        return rc;
    ubj_cache_put(fs->cache, leaf);
    return dir_insert(fs, h, dir, &p, rec, rl);
}

/* dir_delete_at -- remove `len` bytes at `pos` from node `blk`; `last`
 * (or NULL): the leaf record of the name whose removal emptied the leaf
 * this index record led to -- removing the record removes the name, so
 * its DIRENT_REMOVE is on this block. */
static int dir_delete_at(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                         uint64_t blk, unsigned level, unsigned used, unsigned pos,
                         unsigned len, const uint8_t *last)
{
    struct ubj_buf *b = NULL;
    int rc = dir_modify(fs, h, dir, blk, used, &b);
    if (rc < 0)
        return rc;
    uint8_t *r = dir_recs(b);
    uint8_t gone[DIR_REC_MAX];      /* the record removed, for its event */
    memcpy(gone, r + pos, len);
    memmove(r + pos, r + pos + len, used - pos - len);
    memset(r + used - len, 0, len);
    dir_node(b)->used = (uint16_t)(used - len);
    dir_node(b)->nrec--;
    if (level > 0 && pos == 0 && dir_node(b)->nrec > 0)
        dir_put64(r, 0);      /* the next child now starts at the lower bound */
    rc = dir_ev(h, dir, b, level ? dir_index_ev(UBJ_EV_DIR_MERGE, gone)
                                 : dir_leaf_ev(dir, UBJ_EV_DIRENT_REMOVE, gone), used);
    if (rc == 0 && last != NULL)
        rc = dir_ev(h, dir, b, dir_leaf_ev(dir, UBJ_EV_DIRENT_REMOVE, last), used);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    return dir_done(fs, h, b);
}

/* dir_make_empty_root -- turn the root block into an empty leaf: the
 * last name (leaf record `last`) goes with it (its DIRENT_REMOVE). */
static int dir_make_empty_root(struct ubj_fs *fs, struct ubj_handle *h,
                               struct fs_iref *dir, uint64_t blk, const uint8_t *last)
{
    struct ubj_buf *b = NULL;
    int rc = dir_fresh(fs, h, dir, blk, 0, &b);
    if (rc < 0)
        return rc;
    rc = dir_ev(h, dir, b, dir_leaf_ev(dir, UBJ_EV_DIRENT_REMOVE, last), 0);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    return dir_done(fs, h, b);
}

/* dir_collapse -- while the root is an index with one child, make the
 * child the root.  Updates *root, *depth and *freed. */
static int dir_collapse(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                        uint64_t *root, unsigned *depth, int64_t *freed)
{
    while (*depth > 0) {
        struct ubj_buf *b = NULL;
        int rc = dir_read(fs, dir, *root, *depth, 0, DIR_NO_BOUND, &b);
        if (rc < 0)
            return rc;
        uint16_t nrec = dir_node(b)->nrec;
        uint64_t child = dir_get64(dir_recs(b) + 8);
        ubj_cache_put(fs->cache, b);
        if (nrec != 1)
            return 0;
        rc = fs_bfree(fs, h, *root, 1);
        if (rc < 0)
            return rc;
        (*freed)++;
        *root = child;
        (*depth)--;
    }
    return 0;
}

/* dir_unlink_leaf -- the leaf of path `p` lost its last record (`last`):
 * free it and drop it from its parents (freeing those that empty), or,
 * if the root would be left without children, make the root an empty
 * leaf.  The name's DIRENT_REMOVE is on the block whose change unlinks
 * the leaf (the freed leaf itself is never written again). */
static int dir_unlink_leaf(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                           const struct dir_path *p, const uint8_t *last, uint64_t *root,
                           unsigned *depth, int64_t *freed)
{
    int rc = fs_bfree(fs, h, p->blk[0], 1);
    if (rc < 0)
        return rc;
    (*freed)++;
    for (unsigned lvl = 1; lvl <= p->depth; lvl++) {
        if (p->nrec[lvl] > 1)
            return dir_delete_at(fs, h, dir, p->blk[lvl], lvl, p->used[lvl],
                                 p->pos[lvl], DIR_IREC, last);
        if (lvl == p->depth) {      /* root with one child: an empty tree */
            *depth = 0;
            return dir_make_empty_root(fs, h, dir, *root, last);
        }
        rc = fs_bfree(fs, h, p->blk[lvl], 1);
        if (rc < 0)
            return rc;
        (*freed)++;
    }
    return 0;
}

/* fs_dir_remove -- remove `name`.  -ENOENT if absent. */
int fs_dir_remove(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                  const char *name, size_t len)
{
    struct dir_hit hit;
    int rc = dir_name_ok(name, len);
    if (rc < 0)
        return rc;
    rc = dir_find(fs, dir, name, len, false, &hit);
    if (rc <= 0)
        return rc < 0 ? rc : -ENOENT;

    const struct dir_path p = hit.path;
    unsigned rl = dir_reclen((unsigned)len);
    uint64_t root = dir->ip->i_data.dir.root;
    unsigned depth = p.depth;
    int64_t freed = 0;
    if (p.nrec[0] > 1 || p.depth == 0) {
        rc = dir_delete_at(fs, h, dir, p.blk[0], 0, p.used[0], p.pos[0], rl, NULL);
    } else {
        uint8_t last[DIR_REC_MAX];
        dir_make_rec(last, hit.key, hit.ino, hit.type, name, len);
        rc = dir_unlink_leaf(fs, h, dir, &p, last, &root, &depth, &freed);
        if (rc == 0)
            rc = dir_collapse(fs, h, dir, &root, &depth, &freed);
    }
    if (rc < 0)
        return rc;
    return dir_account(fs, h, dir, -freed, -1, root, depth);
}

/* fs_dir_set -- point the existing `name` at ino (type DT_*).  -ENOENT. */
int fs_dir_set(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
               const char *name, size_t len, ubj_ino_t ino, unsigned type)
{
    struct dir_hit hit;
    struct ubj_buf *b = NULL;
    int rc = dir_name_ok(name, len);
    if (rc < 0)
        return rc;
    rc = dir_find(fs, dir, name, len, false, &hit);
    if (rc <= 0)
        return rc < 0 ? rc : -ENOENT;
    rc = dir_modify(fs, h, dir, hit.path.blk[0], hit.path.used[0], &b);
    if (rc < 0)
        return rc;
    uint8_t *r = dir_recs(b) + hit.path.pos[0];
    dir_put64(r + 8, ino);
    r[16] = (uint8_t)type;
    rc = fs_event(h, b, r, dir_reclen((unsigned)len),
                  (struct ubj_event){ .type = UBJ_EV_DIRENT_RENAME, .ino = dir->ino,
                                      .a = ino, .b = type, .name = name,
                                      .namelen = (uint32_t)len });
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    rc = dir_done(fs, h, b);
    if (rc < 0)
        return rc;
    return dir_touch(fs, h, dir);
}

/* dir_emit_leaf -- call fill for each record of a leaf from byte `off`;
 * returns 1 when fill asked to stop. */
static int dir_emit_leaf(struct ubj_buf *b, unsigned off, uint64_t hi,
                         ubj_filldir_t fill, void *ctx)
{
    const uint8_t *r = dir_recs(b);
    unsigned used = dir_node(b)->used;

    for (; off < used; off += dir_reclen(r[off + 17])) {
        uint64_t k = dir_get64(r + off);
        if (k >= hi)
            break;   /* a split's stale copy (dir_check_leaf) */
        if (fill(ctx, (const char *)r + off + UBJ_DIR_LEAF_FIXED, r[off + 17],
                 dir_get64(r + off + 8), r[off + 16], k + 1) != 0)
            return 1;
    }
    return 0;
}

/* fs_dir_iterate -- list from `cookie`: 0 ".", 1 "..", 2..0xff the first
 * name, else the first name with key >= cookie; each next cookie is
 * key + 1.  Stops when fill returns non-zero.  0 or a negative errno. */
int fs_dir_iterate(struct ubj_fs *fs, struct fs_iref *dir, uint64_t cookie,
                   ubj_filldir_t fill, void *ctx)
{
    if (cookie == 0) {
        if (fill(ctx, ".", 1, dir->ino, DT_DIR, 1) != 0)
            return 0;
        cookie = 1;
    }
    if (cookie == 1) {
        ubj_ino_t parent = dir->ino == UBJ_ROOT_INO ? UBJ_ROOT_INO : dir->ip->parent;
        if (fill(ctx, "..", 2, parent, DT_DIR, 2) != 0)
            return 0;
        cookie = 2;
    }
    for (uint64_t key = cookie;;) {
        struct dir_path p;
        struct ubj_buf *b = NULL;
        int rc = dir_descend(fs, dir, key, &p, &b);
        if (rc < 0)
            return rc;
        int stop = dir_emit_leaf(b, p.pos[0], p.hi, fill, ctx);
        ubj_cache_put(fs->cache, b);
        if (stop || p.hi == DIR_NO_BOUND)
            return 0;
        key = p.hi;
    }
}

/* dir_free_tree -- free node `blk` at `level` and everything below it. */
static int dir_free_tree(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                         uint64_t blk, unsigned level, int64_t *freed)
{
    uint64_t child[UBJ_DIR_SPACE / DIR_IREC];
    unsigned n = 0;
    struct ubj_buf *b = NULL;
    int rc = dir_read(fs, dir, blk, level, 0, DIR_NO_BOUND, &b);
    if (rc < 0)
        return rc;
    if (level > 0) {
        n = dir_node(b)->nrec;
        for (unsigned i = 0; i < n; i++)
            child[i] = dir_get64(dir_recs(b) + i * DIR_IREC + 8);
    }
    ubj_cache_put(fs->cache, b);
    for (unsigned i = 0; i < n; i++) {
        rc = dir_free_tree(fs, h, dir, child[i], level - 1, freed);
        if (rc < 0)
            return rc;
    }
    rc = fs_bfree(fs, h, blk, 1);
    if (rc == 0)
        (*freed)++;
    return rc;
}

/* fs_dir_destroy -- free every node of a directory's tree (an empty
 * directory being removed); afterwards root = 0 and nodes = 0.  A tree
 * already destroyed (root 0) is left alone. */
int fs_dir_destroy(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir)
{
    const struct ubj_dir_root *dr = &dir->ip->i_data.dir;
    int64_t freed = 0;
    int rc;

    if (dr->root == 0)
        return 0;
    rc = dir_root_check(fs, dir);
    if (rc == 0)
        rc = dir_free_tree(fs, h, dir, dr->root, dr->depth, &freed);
    int rc2 = fs_iwrite(fs, h, dir);
    if (rc2 < 0)
        return rc2;
    struct ubj_inode *ip = dir->ip;
    if (rc == 0) {
        memset(&ip->i_data.dir, 0, sizeof ip->i_data.dir);
        ip->size = 0;
    } else {
        ip->i_data.dir.nodes -= (uint64_t)freed;
    }
    ip->blocks -= (uint64_t)freed;
    rc2 = dir_root_ev(h, dir);
    if (rc2 == 0)
        rc2 = fs_idirty(fs, h, dir);
    return rc < 0 ? rc : rc2;
}
