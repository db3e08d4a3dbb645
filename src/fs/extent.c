/*
 * extent.c -- the per-file extent tree (ext4's layout, format.h): map a
 * logical block, allocate into holes, truncate.
 *
 * Shape: the root lives in the inode (i_data.ext: header + 7 entries);
 * deeper nodes are UBJ_MAGIC_EXTENT blocks (block header, ext header, up
 * to 254 entries).  Depth 0 nodes hold leaves (struct ubj_extent), others
 * index entries (struct ubj_ext_idx).  Lookups descend to the last entry
 * whose key is <= the target (entry 0 if none), as ext4_ext_find_extent.
 *
 * Invariants (checked on every node this file reads; a violation is
 * -EUCLEAN, never a crash or an access out of bounds):
 *  I1 header magic UBJ_EXT_MAGIC; max 7 in the root, 254 in a block;
 *     entries <= max; a node's depth is its parent's depth - 1; the root's
 *     depth is <= EXT_MAX_DEPTH; a non-root node has >= 1 entry.
 *  I2 keys strictly increase within a node; a node's keys lie in
 *     [parent key, next parent key); leaves do not overlap and end at or
 *     before the next parent key (so the whole tree is sorted).
 *  I3 extent lengths are 1..UBJ_EXT_MAX_LEN-1 (bit 31: unwritten);
 *     physical blocks and child nodes lie in [data_start, nblocks).
 *  I4 ip->blocks counts every data block of every extent (written or
 *     not) plus every tree node block.
 *
 * Changes: a tree node is changed only after fs_meta_write_begin (which
 * may substitute the buffer: paths re-derive pointers from the buffer
 * after it), the root and ip->blocks only between the caller's fs_iwrite
 * and fs_idirty (fs_iwrite may move r->ip: no inode pointer is kept).
 * An insertion that must split preallocates every node block it needs
 * first, so -ENOSPC never leaves a half-split tree.
 */
#include <errno.h>
#include <string.h>
#include "fs/fs.h"

#define EXT_MAX_DEPTH 5                 /* 7 * 254^5 leaves: far beyond 2^32 */
#define EXT_END (1ULL << 32)            /* one past the last logical block */
#define EXT_LEN_MASK 0x7fffffffu
#define EXT_NODE_OFF (sizeof(struct ubj_blkhdr))              /* ext header */
#define EXT_ENTS_OFF (sizeof(struct ubj_blkhdr) + sizeof(struct ubj_ext_hdr))

static_assert(EXT_ENTS_OFF + UBJ_EXT_NODE_MAX * 16u <= UBJ_BS, "node fits");

/* One entry of either kind: both are 16 bytes keyed by lblk at offset 0. */
union ext_ent {
    struct ubj_extent e;
    struct ubj_ext_idx i;
};

struct ext_level {
    struct ubj_buf *b;    /* the node's buffer; NULL for the root */
    uint64_t blk;         /* the node's block; 0 for the root */
    int idx;              /* chosen entry; -1: the target is before entry 0 */
};

struct ext_path {
    int depth;            /* the root's depth: lv[depth] is the leaf level */
    struct ext_level lv[EXT_MAX_DEPTH + 2];
};

/* ext_len -- blocks of an extent without the unwritten bit. */
static inline uint32_t ext_len(const struct ubj_extent *e)
{
    return e->len & EXT_LEN_MASK;
}

/* ext_end -- one past the extent's last logical block. */
static inline uint64_t ext_end(const struct ubj_extent *e)
{
    return (uint64_t)e->lblk + ext_len(e);
}

/* ext_unwritten -- true for a preallocated extent that reads as zeros. */
static inline bool ext_unwritten(const struct ubj_extent *e)
{
    return (e->len & UBJ_EXT_UNWRITTEN) != 0;
}

/* ext_hdr -- the header of the node at level l of path p. */
static inline struct ubj_ext_hdr *ext_hdr(struct fs_iref *r, struct ext_path *p,
                                          int l)
{
    if (l == 0)
        return &r->ip->i_data.ext.hdr;
    return (struct ubj_ext_hdr *)(p->lv[l].b->data + EXT_NODE_OFF);
}

/* ext_ents -- the entry array of the node at level l of path p. */
static inline union ext_ent *ext_ents(struct fs_iref *r, struct ext_path *p, int l)
{
    if (l == 0)
        return (union ext_ent *)(void *)r->ip->i_data.ext.e;
    return (union ext_ent *)(void *)(p->lv[l].b->data + EXT_ENTS_OFF);
}

/* ext_corrupt -- report a broken node of inode ino (the mount turns
 * read-only, as for every corruption found) and return -EUCLEAN. */
static int ext_corrupt(struct ubj_fs *fs, ubj_ino_t ino, uint64_t blk,
                       const char *what)
{
    if (!fs->error)
        fs->error = -EUCLEAN;
    if (blk == 0)
        return ubj_set_error(-EUCLEAN, "inode %llu: corrupt extent root: %s",
                             (unsigned long long)ino, what);
    return ubj_set_error(-EUCLEAN, "inode %llu: corrupt extent node %llu: %s",
                         (unsigned long long)ino, (unsigned long long)blk, what);
}

/* ext_check_leaves -- I2/I3 for the extents of a leaf within [lo, hi). */
static const char *ext_check_leaves(const struct ubj_fs *fs, const union ext_ent *v,
                                    unsigned n, uint64_t lo, uint64_t hi)
{
    uint64_t prev = lo;
    for (unsigned i = 0; i < n; i++) {
        const struct ubj_extent *e = &v[i].e;
        uint32_t len = ext_len(e);
        if (len == 0 || len >= UBJ_EXT_MAX_LEN)
            return "bad extent length";
        if (e->lblk < prev || ext_end(e) > hi)
            return "extents out of order";
        if (e->pblk < fs->sb.data_start || e->pblk >= fs->sb.nblocks ||
            len > fs->sb.nblocks - e->pblk)
            return "extent outside the data area";
        prev = ext_end(e);
    }
    return NULL;
}

/* ext_check_index -- I2/I3 for the index entries of a node within [lo, hi). */
static const char *ext_check_index(const struct ubj_fs *fs, const union ext_ent *v,
                                   unsigned n, uint64_t lo, uint64_t hi)
{
    uint64_t prev = lo;
    for (unsigned i = 0; i < n; i++) {
        if (v[i].i.lblk < prev || v[i].i.lblk >= hi)
            return "index keys out of order";
        if (v[i].i.child < fs->sb.data_start || v[i].i.child >= fs->sb.nblocks)
            return "index child outside the data area";
        prev = (uint64_t)v[i].i.lblk + 1;
    }
    return NULL;
}

/* ext_check -- I1..I3 for one node: depth -1 means "the root". */
static int ext_check(struct ubj_fs *fs, ubj_ino_t ino, uint64_t blk,
                     const struct ubj_ext_hdr *h, const union ext_ent *v,
                     int depth, uint64_t lo, uint64_t hi)
{
    bool root = depth < 0;
    if (h->magic != UBJ_EXT_MAGIC)
        return ext_corrupt(fs, ino, blk, "bad magic");
    if (h->max != (root ? UBJ_EXT_ROOT_MAX : UBJ_EXT_NODE_MAX) || h->entries > h->max)
        return ext_corrupt(fs, ino, blk, "bad entry count");
    if (root ? h->depth > EXT_MAX_DEPTH : h->depth != depth)
        return ext_corrupt(fs, ino, blk, "bad depth");
    if (h->entries == 0 && (!root || h->depth > 0))
        return ext_corrupt(fs, ino, blk, "empty node");
    const char *why = h->depth == 0 ? ext_check_leaves(fs, v, h->entries, lo, hi)
                                    : ext_check_index(fs, v, h->entries, lo, hi);
    return why ? ext_corrupt(fs, ino, blk, why) : 0;
}

/* ext_search -- index of the last entry with key <= lblk, or -1. */
static int ext_search(const union ext_ent *v, unsigned n, uint32_t lblk)
{
    unsigned lo = 0, hi = n;          /* answer + 1 lies in [lo, hi] */
    while (hi - lo > 4) {
        unsigned mid = lo + (hi - lo) / 2;
        if (v[mid].e.lblk <= lblk)
            lo = mid;
        else
            hi = mid;
    }
    int i = (int)lo - 1;
    while ((unsigned)(i + 1) < hi && v[i + 1].e.lblk <= lblk)
        i++;
    return i;
}

/* ext_path_put -- drop every node buffer the path references. */
static void ext_path_put(struct ubj_fs *fs, struct ext_path *p)
{
    for (int l = 1; l <= p->depth; l++) {
        ubj_cache_put(fs->cache, p->lv[l].b);
        p->lv[l].b = NULL;
    }
}

/* ext_read_node -- read and check the child of level l into level l + 1. */
static int ext_read_node(struct ubj_fs *fs, struct fs_iref *r, struct ext_path *p,
                         int l, uint64_t lo, uint64_t hi)
{
    union ext_ent *v = ext_ents(r, p, l);
    uint64_t child = v[p->lv[l].idx].i.child;
    struct ubj_buf *b;
    int rc = fs_meta_read(fs, child, UBJ_MAGIC_EXTENT, &b);
    if (rc < 0)
        return rc;
    p->lv[l + 1].b = b;
    p->lv[l + 1].blk = child;
    p->lv[l + 1].idx = -1;
    rc = ext_check(fs, r->ino, child, ext_hdr(r, p, l + 1), ext_ents(r, p, l + 1),
                   p->depth - l - 1, lo, hi);
    return rc;
}

/* ext_root_check -- the inode must carry a valid extent root. */
static int ext_root_check(struct ubj_fs *fs, struct fs_iref *r)
{
    if (!(r->ip->flags & UBJ_IFL_EXTTREE))
        return ext_corrupt(fs, r->ino, 0, "inode has no extent tree");
    return ext_check(fs, r->ino, 0, &r->ip->i_data.ext.hdr,
                     (const union ext_ent *)(const void *)r->ip->i_data.ext.e,
                     -1, 0, EXT_END);
}

/* ext_find -- the path from the root to the leaf where lblk belongs.  On
 * error the path holds no buffer. */
static int ext_find(struct ubj_fs *fs, struct fs_iref *r, uint32_t lblk,
                    struct ext_path *p)
{
    p->depth = 0;
    int rc = ext_root_check(fs, r);
    if (rc < 0)
        return rc;
    p->depth = r->ip->i_data.ext.hdr.depth;
    for (int l = 0; l <= p->depth; l++) {
        p->lv[l].b = NULL;
        p->lv[l].blk = 0;
    }
    uint64_t hi = EXT_END;
    for (int l = 0; l < p->depth; l++) {
        const struct ubj_ext_hdr *h = ext_hdr(r, p, l);
        const union ext_ent *v = ext_ents(r, p, l);
        int i = ext_search(v, h->entries, lblk);
        p->lv[l].idx = i < 0 ? 0 : i;
        if ((unsigned)p->lv[l].idx + 1 < h->entries)
            hi = v[p->lv[l].idx + 1].i.lblk;
        rc = ext_read_node(fs, r, p, l, v[p->lv[l].idx].i.lblk, hi);
        if (rc < 0) {
            ext_path_put(fs, p);
            return rc;
        }
    }
    p->lv[p->depth].idx = ext_search(ext_ents(r, p, p->depth),
                                     ext_hdr(r, p, p->depth)->entries, lblk);
    return 0;
}

/* ext_next_key -- the first mapped logical block after the path's entry
 * (EXT_END if none): where a hole at the path's target ends. */
static uint64_t ext_next_key(struct fs_iref *r, struct ext_path *p)
{
    for (int l = p->depth; l >= 0; l--) {
        int i = p->lv[l].idx;
        if ((unsigned)(i + 1) < ext_hdr(r, p, l)->entries)
            return ext_ents(r, p, l)[i + 1].e.lblk;
    }
    return EXT_END;
}

/* fs_ext_init -- an empty extent root (the file has no blocks). */
void fs_ext_init(struct ubj_inode *ip)
{
    memset(&ip->i_data, 0, sizeof ip->i_data);
    ip->i_data.ext.hdr.magic = UBJ_EXT_MAGIC;
    ip->i_data.ext.hdr.max = UBJ_EXT_ROOT_MAX;
    ip->flags |= UBJ_IFL_EXTTREE;
}

/* fs_ext_map -- what lblk maps to and for how many blocks it stays so. */
int fs_ext_map(struct ubj_fs *fs, struct fs_iref *r, uint32_t lblk, uint32_t max,
               uint64_t *pblk, uint32_t *len)
{
    struct ext_path p;
    int rc = ext_find(fs, r, lblk, &p);
    if (rc < 0)
        return rc;
    uint64_t run;
    int i = p.lv[p.depth].idx;
    const struct ubj_extent *e = i >= 0 ? &ext_ents(r, &p, p.depth)[i].e : NULL;
    if (e != NULL && lblk < ext_end(e)) {
        *pblk = ext_unwritten(e) ? 0 : e->pblk + (lblk - e->lblk);
        run = ext_end(e) - lblk;
    } else {
        *pblk = 0;
        run = ext_next_key(r, &p) - lblk;
    }
    ext_path_put(fs, &p);
    if (max == 0)
        max = 1;
    *len = run < max ? (uint32_t)run : max;
    return 0;
}

/* ---- modification helpers ---------------------------------------------- */

/* ext_write -- make the node at level l writable (the root already is). */
static int ext_write(struct ubj_fs *fs, struct ubj_handle *h, struct ext_path *p,
                     int l)
{
    if (l == 0)
        return 0;
    struct ubj_buf *nb;
    int rc = fs_meta_write_begin(fs, h, p->lv[l].blk, UBJ_MAGIC_EXTENT, &nb);
    if (rc < 0)
        return rc;
    ubj_cache_put(fs->cache, p->lv[l].b);
    p->lv[l].b = nb;
    return 0;
}

/* ext_root_ev -- event `type` over the root in r's inode (i_data). */
static int ext_root_ev(struct ubj_handle *h, struct fs_iref *r,
                       enum ubj_event_type type, uint64_t a)
{
    return fs_ievent(h, r, type, &r->ip->i_data.ext, sizeof r->ip->i_data.ext, a);
}

/* ext_dirty_b -- the node at level l was changed, as event `type` says
 * (its header and entries); the root is dirtied by the caller's
 * fs_idirty; `child`: the event's b (EXT_SPLIT: the new node). */
static int ext_dirty_b(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                       struct ext_path *p, int l, enum ubj_event_type type,
                       uint64_t child)
{
    if (l == 0)
        return ext_root_ev(h, r, type, 0);
    struct ubj_buf *b = p->lv[l].b;
    int rc = fs_event(h, b, b->data + EXT_NODE_OFF, UBJ_BS - EXT_NODE_OFF,
                      (struct ubj_event){ .type = type, .ino = r->ino, .b = child });
    return rc < 0 ? rc : fs_meta_dirty(fs, h, b);
}

/* ext_dirty -- ext_dirty_b naming no node (every event but EXT_SPLIT's:
 * there b is the new node, which mode sync orders by). */
static int ext_dirty(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                     struct ext_path *p, int l, enum ubj_event_type type)
{
    return ext_dirty_b(fs, h, r, p, l, type, 0);
}

/* ext_sub_blocks -- ip->blocks -= n (never below 0 on a corrupt count). */
static void ext_sub_blocks(struct fs_iref *r, uint64_t n)
{
    r->ip->blocks = r->ip->blocks > n ? r->ip->blocks - n : 0;
}

/* ext_mergeable -- a followed by b can become one extent. */
static bool ext_mergeable(const struct ubj_extent *a, const struct ubj_extent *b)
{
    return ext_unwritten(a) == ext_unwritten(b) && ext_end(a) == b->lblk &&
           a->pblk + ext_len(a) == b->pblk &&
           ext_len(a) + ext_len(b) <= UBJ_EXT_MAX_LEN - 1;
}

/* ext_lower_keys -- on the leftmost path, index keys above lblk are
 * lowered to it so the new first extent stays within its parent's range. */
static int ext_lower_keys(struct ubj_fs *fs, struct ubj_handle *h,
                          struct fs_iref *r, struct ext_path *p, uint32_t lblk)
{
    for (int l = 0; l < p->depth; l++) {
        if (ext_ents(r, p, l)[p->lv[l].idx].i.lblk <= lblk)
            continue;
        int rc = ext_write(fs, h, p, l);
        if (rc < 0)
            return rc;
        ext_ents(r, p, l)[p->lv[l].idx].i.lblk = lblk;
        rc = ext_dirty(fs, h, r, p, l, UBJ_EV_EXT_MAP);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ext_try_merge -- grow a neighbour of the leaf position over ne: 1 if
 * merged, 0 if not possible, or an error. */
static int ext_try_merge(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                         struct ext_path *p, const struct ubj_extent *ne)
{
    int d = p->depth, i = p->lv[d].idx;
    unsigned n = ext_hdr(r, p, d)->entries;
    union ext_ent *v = ext_ents(r, p, d);
    bool left = i >= 0 && ext_mergeable(&v[i].e, ne);
    bool right = !left && (unsigned)(i + 1) < n && ext_mergeable(ne, &v[i + 1].e);
    if (!left && !right)
        return 0;
    int rc = ext_write(fs, h, p, d);
    if (rc < 0)
        return rc;
    v = ext_ents(r, p, d);
    if (left) {
        v[i].e.len += ext_len(ne);
    } else {
        v[i + 1].e.lblk = ne->lblk;
        v[i + 1].e.pblk = ne->pblk;
        v[i + 1].e.len += ext_len(ne);
    }
    rc = ext_dirty(fs, h, r, p, d, UBJ_EV_EXT_MAP);
    return rc < 0 ? rc : 1;
}

/* ext_put_entry -- insert x at position pos of a node with room. */
static void ext_put_entry(struct ubj_ext_hdr *hd, union ext_ent *v, unsigned pos,
                          const union ext_ent *x)
{
    memmove(&v[pos + 1], &v[pos], (hd->entries - pos) * sizeof *v);
    v[pos] = *x;
    hd->entries++;
}

/* ext_node_init -- a fresh node block blk of r's tree at the given depth,
 * buffer in *out. */
static int ext_node_init(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                         uint64_t blk, uint16_t depth, struct ubj_buf **out)
{
    int rc = fs_meta_new(fs, h, blk, UBJ_MAGIC_EXTENT, r->ino, out);
    if (rc < 0)
        return rc;
    memset((*out)->data + EXT_NODE_OFF, 0, UBJ_BS - EXT_NODE_OFF);
    struct ubj_ext_hdr *nh = (struct ubj_ext_hdr *)((*out)->data + EXT_NODE_OFF);
    nh->magic = UBJ_EXT_MAGIC;
    nh->max = UBJ_EXT_NODE_MAX;
    nh->depth = depth;
    return 0;
}

/* ext_grow -- move the full root into new node blk; the root becomes an
 * index with one entry (ext4_ext_grow_indepth) keyed no higher than
 * newkey, the key about to be inserted; the path gains a level. */
static int ext_grow(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                    struct ext_path *p, uint64_t blk, uint32_t newkey)
{
    struct ubj_ext_hdr *rh = &r->ip->i_data.ext.hdr;
    union ext_ent *rv = (union ext_ent *)(void *)r->ip->i_data.ext.e;
    struct ubj_buf *b;
    int rc = ext_node_init(fs, h, r, blk, rh->depth, &b);
    if (rc < 0)
        return rc;
    struct ubj_ext_hdr *nh = (struct ubj_ext_hdr *)(b->data + EXT_NODE_OFF);
    nh->entries = rh->entries;
    memcpy(b->data + EXT_ENTS_OFF, rv, rh->entries * sizeof *rv);
    rc = fs_meta_dirty(fs, h, b);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    uint32_t key = rv[0].i.lblk < newkey ? rv[0].i.lblk : newkey;
    memset(rv, 0, UBJ_EXT_ROOT_MAX * sizeof *rv);
    rv[0].i.lblk = key;
    rv[0].i.child = blk;
    rh->entries = 1;
    rh->depth++;
    r->ip->blocks++;
    rc = ext_root_ev(h, r, UBJ_EV_EXT_ROOT_OUT, blk);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    memmove(&p->lv[1], &p->lv[0], (size_t)(p->depth + 1) * sizeof p->lv[0]);
    p->lv[1].b = b;
    p->lv[1].blk = blk;
    p->lv[0].idx = 0;
    p->depth++;
    return 0;
}

/* ext_split -- the full node at level l gets x at lv[l].idx + 1: half (or,
 * when x goes last, only x) moves to new node blk; *up = its index entry. */
static int ext_split(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                     struct ext_path *p, int l, const union ext_ent *x,
                     uint64_t blk, union ext_ent *up)
{
    int rc = ext_write(fs, h, p, l);
    if (rc < 0)
        return rc;
    struct ubj_ext_hdr *oh = ext_hdr(r, p, l);
    union ext_ent *ov = ext_ents(r, p, l);
    struct ubj_buf *b;
    rc = ext_node_init(fs, h, r, blk, oh->depth, &b);
    if (rc < 0)
        return rc;
    struct ubj_ext_hdr *nh = (struct ubj_ext_hdr *)(b->data + EXT_NODE_OFF);
    union ext_ent *nv = (union ext_ent *)(void *)(b->data + EXT_ENTS_OFF);
    unsigned n = oh->entries, pos = (unsigned)(p->lv[l].idx + 1);
    if (pos == n) {                      /* appending: leave the old node full */
        ext_put_entry(nh, nv, 0, x);
    } else {
        unsigned m = n / 2;
        memcpy(nv, &ov[m], (n - m) * sizeof *nv);
        nh->entries = (uint16_t)(n - m);
        oh->entries = (uint16_t)m;
        if (pos <= m)
            ext_put_entry(oh, ov, pos, x);
        else
            ext_put_entry(nh, nv, pos - m, x);
    }
    memset(up, 0, sizeof *up);
    up->i.lblk = nv[0].i.lblk;
    up->i.child = blk;
    r->ip->blocks++;
    rc = fs_meta_dirty(fs, h, b);
    ubj_cache_put(fs->cache, b);
    if (rc == 0)
        rc = ext_dirty_b(fs, h, r, p, l, UBJ_EV_EXT_SPLIT, blk);   /* lost half to blk */
    return rc;
}

/* ext_prealloc -- n node blocks near goal into blks; all or none. */
static int ext_prealloc(struct ubj_fs *fs, struct ubj_handle *h, uint64_t goal,
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
        for (uint32_t j = 0; j < got; j++)
            blks[have++] = start + j;
        goal = start + got;
    }
    return 0;
}

/* ext_insert -- put extent ne (in a hole) into the tree at path p, merging
 * with a neighbour when possible, splitting full nodes and growing the
 * root when needed.  The caller has done fs_iwrite. */
static int ext_insert(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                      struct ext_path *p, const struct ubj_extent *ne)
{
    int rc = ext_lower_keys(fs, h, r, p, ne->lblk);
    if (rc < 0)
        return rc;
    rc = ext_try_merge(fs, h, r, p, ne);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    int k = p->depth;                    /* deepest level with room */
    while (k >= 0 && ext_hdr(r, p, k)->entries >= ext_hdr(r, p, k)->max)
        k--;
    unsigned need = (unsigned)(p->depth - k);   /* splits, or the grow */
    uint64_t blks[EXT_MAX_DEPTH + 2];
    if (k < 0 && p->depth >= EXT_MAX_DEPTH)
        return ubj_set_error(-ENOSPC, "inode %llu: extent tree too deep",
                             (unsigned long long)r->ino);
    uint64_t goal = p->depth > 0 ? p->lv[p->depth].blk : r->b->d->blkno;
    rc = ext_prealloc(fs, h, goal, need, blks);
    if (rc < 0)
        return rc;
    unsigned used = 0;
    if (k < 0) {
        rc = ext_grow(fs, h, r, p, blks[used++], ne->lblk);
        if (rc < 0)
            goto fail;
        k = 1;
    }
    union ext_ent x = { .e = *ne };
    for (int l = p->depth; l > k; l--) {
        union ext_ent up;
        rc = ext_split(fs, h, r, p, l, &x, blks[used++], &up);
        if (rc < 0)
            goto fail;
        x = up;
    }
    rc = ext_write(fs, h, p, k);
    if (rc < 0)
        goto fail;
    ext_put_entry(ext_hdr(r, p, k), ext_ents(r, p, k), (unsigned)(p->lv[k].idx + 1), &x);
    return ext_dirty_b(fs, h, r, p, k, k == p->depth ? UBJ_EV_EXT_MAP : UBJ_EV_EXT_SPLIT,
                       k == p->depth ? 0 : x.i.child);
fail:
    for (unsigned i = used; i < need; i++)
        fs_bfree(fs, h, blks[i], 1);
    return rc;
}

/* ---- allocation --------------------------------------------------------- */

/* ext_convert_merge -- convert [lblk, lblk + n) of the unwritten extent
 * at leaf position i in place when it begins or ends the extent and the
 * written neighbour on that side continues it (sequential writes into
 * preallocated space stay one extent, as ext4_ext_try_to_merge): 1 if
 * done, 0 if not possible, or an error. */
static int ext_convert_merge(struct ubj_fs *fs, struct ubj_handle *h,
                             struct fs_iref *r, struct ext_path *p, uint32_t lblk,
                             uint32_t n)
{
    int d = p->depth, i = p->lv[d].idx;
    struct ubj_ext_hdr *hd = ext_hdr(r, p, d);
    union ext_ent *v = ext_ents(r, p, d);
    const struct ubj_extent e = v[i].e;
    struct ubj_extent w = { .lblk = lblk, .len = n, .pblk = e.pblk + (lblk - e.lblk) };
    bool left = lblk == e.lblk && i > 0 && ext_mergeable(&v[i - 1].e, &w);
    bool right = !left && lblk + (uint64_t)n == ext_end(&e) &&
                 (unsigned)i + 1 < hd->entries && ext_mergeable(&w, &v[i + 1].e);
    bool whole = n == ext_len(&e);
    if (!left && !right && !whole)
        return 0;
    int rc = ext_write(fs, h, p, d);
    if (rc < 0)
        return rc;
    hd = ext_hdr(r, p, d);
    v = ext_ents(r, p, d);
    if (left)
        v[i - 1].e.len += n;
    else if (right)
        v[i + 1].e = (struct ubj_extent){ .lblk = lblk, .pblk = w.pblk,
                                          .len = v[i + 1].e.len + n };
    if (whole && (left || right)) {            /* nothing of it is left */
        memmove(&v[i], &v[i + 1], (hd->entries - (unsigned)i - 1) * sizeof *v);
        hd->entries--;
    } else if (whole) {
        v[i].e.len = n;                         /* written now */
    } else if (left) {
        v[i].e = (struct ubj_extent){ .lblk = lblk + n, .pblk = w.pblk + n,
                                      .len = (ext_len(&e) - n) | UBJ_EXT_UNWRITTEN };
    } else {
        v[i].e.len = (ext_len(&e) - n) | UBJ_EXT_UNWRITTEN;
    }
    rc = ext_dirty(fs, h, r, p, d, UBJ_EV_EXT_MAP);
    return rc < 0 ? rc : 1;
}

/* ext_convert -- the unwritten extent at the leaf position becomes written
 * over [lblk, lblk + n): merged into a neighbour when possible, otherwise
 * the extent is cut to what lies before, and the written piece and the
 * unwritten rest are inserted anew.  An error after the cut leaves the
 * cut-off blocks allocated but unmapped (a leak fsck reports), never a
 * broken tree. */
static int ext_convert(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                       struct ext_path *p, uint32_t lblk, uint32_t n)
{
    int rc = ext_convert_merge(fs, h, r, p, lblk, n);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    int d = p->depth, i = p->lv[d].idx;
    struct ubj_extent e = ext_ents(r, p, d)[i].e;
    uint64_t pb = e.pblk + (lblk - e.lblk);
    struct ubj_extent w = { .lblk = lblk, .len = n, .pblk = pb };
    struct ubj_extent tail = { .lblk = lblk + n,
                               .len = (uint32_t)(ext_end(&e) - lblk - n) | UBJ_EXT_UNWRITTEN,
                               .pblk = pb + n };
    rc = ext_write(fs, h, p, d);
    if (rc < 0)
        return rc;
    struct ubj_extent *cur = &ext_ents(r, p, d)[i].e;
    if (lblk > e.lblk)
        cur->len = (lblk - e.lblk) | UBJ_EXT_UNWRITTEN;
    else
        *cur = w;
    rc = ext_dirty(fs, h, r, p, d, UBJ_EV_EXT_MAP);
    ext_path_put(fs, p);
    if (rc < 0)
        return rc;
    struct ubj_extent *todo[2] = { lblk > e.lblk ? &w : NULL,
                                   ext_len(&tail) ? &tail : NULL };
    for (int t = 0; t < 2; t++) {
        if (todo[t] == NULL)
            continue;
        rc = ext_find(fs, r, todo[t]->lblk, p);
        if (rc < 0)
            return rc;
        rc = ext_insert(fs, h, r, p, todo[t]);
        ext_path_put(fs, p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* ext_alloc_hole -- allocate up to n blocks for the hole at lblk (path p)
 * and insert them; the caller has done fs_iwrite. */
static int ext_alloc_hole(struct ubj_fs *fs, struct ubj_handle *h,
                          struct fs_iref *r, struct ext_path *p, uint32_t lblk,
                          uint32_t n, uint64_t *pblk, uint32_t *got)
{
    int i = p->lv[p->depth].idx;
    uint64_t goal = r->b->d->blkno;
    if (i >= 0) {
        const struct ubj_extent *e = &ext_ents(r, p, p->depth)[i].e;
        if (e->pblk + ext_len(e) < fs->sb.nblocks)
            goal = e->pblk + ext_len(e);
    }
    uint64_t start;
    uint32_t cnt;
    int rc = fs_balloc(fs, h, goal, n, &start, &cnt);
    if (rc < 0)
        return rc;
    struct ubj_extent ne = { .lblk = lblk, .len = cnt, .pblk = start };
    rc = ext_insert(fs, h, r, p, &ne);
    if (rc < 0) {
        fs_bfree(fs, h, start, cnt);
        return rc;
    }
    r->ip->blocks += cnt;
    *pblk = start;
    *got = cnt;
    return 0;
}

/* fs_ext_alloc -- map lblk, allocating a run of up to `want` blocks if it
 * lies in a hole (never past the next mapped block). */
int fs_ext_alloc(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                 uint32_t lblk, uint32_t want, uint64_t *pblk, uint32_t *got,
                 bool *fresh)
{
    struct ext_path p;
    int rc = ext_find(fs, r, lblk, &p);
    if (rc < 0)
        return rc;
    if (want == 0)
        want = 1;
    int d = p.depth, i = p.lv[d].idx;
    const struct ubj_extent *e = i >= 0 ? &ext_ents(r, &p, d)[i].e : NULL;
    if (e != NULL && lblk < ext_end(e)) {
        uint64_t run = ext_end(e) - lblk;
        *got = run < want ? (uint32_t)run : want;
        *pblk = e->pblk + (lblk - e->lblk);
        *fresh = ext_unwritten(e);
        if (!*fresh) {
            ext_path_put(fs, &p);
            return 0;
        }
        rc = fs_iwrite(fs, h, r);
        if (rc == 0)
            rc = ext_convert(fs, h, r, &p, lblk, *got);
    } else {
        uint64_t n = ext_next_key(r, &p) - lblk;
        if (n > want)
            n = want;
        if (n > UBJ_EXT_MAX_LEN - 1)
            n = UBJ_EXT_MAX_LEN - 1;
        *fresh = true;
        rc = fs_iwrite(fs, h, r);
        if (rc == 0)
            rc = ext_alloc_hole(fs, h, r, &p, lblk, (uint32_t)n, pblk, got);
    }
    ext_path_put(fs, &p);
    int rc2 = fs_idirty(fs, h, r);
    return rc < 0 ? rc : rc2;
}

/* ---- truncation --------------------------------------------------------- */

/* ext_maps_path -- the node of path p at levels 1..l whose block lies in
 * [start, start + n), or 0: a corrupt leaf mapping a block of its own
 * tree as data.  Freeing it would revoke the node's write access in the
 * handle while the node is still being changed (fuzz_libfuzzer_mount). */
static uint64_t ext_maps_path(const struct ext_path *p, int l, uint64_t start,
                              uint64_t n)
{
    for (int k = 1; k <= l; k++)
        if (p->lv[k].blk >= start && p->lv[k].blk - start < n)
            return p->lv[k].blk;
    return 0;
}

/* ext_trunc_leaf -- free the leaf's blocks at or after lblk. */
static int ext_trunc_leaf(struct ubj_fs *fs, struct ubj_handle *h,
                          struct fs_iref *r, struct ext_path *p, int l, uint32_t lblk)
{
    struct ubj_ext_hdr *hd = ext_hdr(r, p, l);
    if (hd->entries == 0 || ext_end(&ext_ents(r, p, l)[hd->entries - 1].e) <= lblk)
        return 0;
    int rc = ext_write(fs, h, p, l);
    if (rc < 0)
        return rc;
    hd = ext_hdr(r, p, l);
    union ext_ent *v = ext_ents(r, p, l);
    while (hd->entries > 0) {
        struct ubj_extent *e = &v[hd->entries - 1].e;
        if (ext_end(e) <= lblk)
            break;
        uint64_t from = e->lblk >= lblk ? e->lblk : lblk;
        uint64_t cnt = ext_end(e) - from;
        uint64_t start = e->pblk + (from - e->lblk);
        if (ext_maps_path(p, l, start, cnt) != 0) {
            rc = ext_corrupt(fs, r->ino, p->lv[l].blk,
                             "extent maps a block of its own tree");
            break;
        }
        rc = fs_bfree(fs, h, start, cnt);
        if (rc < 0)
            break;
        ext_sub_blocks(r, cnt);
        if (from == e->lblk)
            hd->entries--;
        else
            e->len -= (uint32_t)cnt;
    }
    int rc2 = ext_dirty(fs, h, r, p, l, UBJ_EV_EXT_UNMAP);
    return rc < 0 ? rc : rc2;
}

/* ext_trunc_node -- free everything at or after lblk below the node at
 * level l (whose keys lie below hi); empty children are freed. */
static int ext_trunc_node(struct ubj_fs *fs, struct ubj_handle *h,
                          struct fs_iref *r, struct ext_path *p, int l,
                          uint32_t lblk, uint64_t hi)
{
    if (ext_hdr(r, p, l)->depth == 0)
        return ext_trunc_leaf(fs, h, r, p, l, lblk);
    if (l >= EXT_MAX_DEPTH)                /* checked depths never get here */
        return ext_corrupt(fs, r->ino, p->lv[l].blk, "tree too deep");
    int rc = 0;
    bool writable = false;
    while (ext_hdr(r, p, l)->entries > 0) {
        unsigned n = ext_hdr(r, p, l)->entries;
        p->lv[l].idx = (int)n - 1;
        uint64_t key = ext_ents(r, p, l)[n - 1].i.lblk;
        uint64_t child = ext_ents(r, p, l)[n - 1].i.child;
        rc = ext_read_node(fs, r, p, l, key, hi);
        if (rc == 0)
            rc = ext_trunc_node(fs, h, r, p, l + 1, lblk, hi);
        bool empty = rc == 0 && ext_hdr(r, p, l + 1)->entries == 0;
        ubj_cache_put(fs->cache, p->lv[l + 1].b);
        p->lv[l + 1].b = NULL;
        if (rc < 0)
            break;
        if (empty) {
            if (!writable && (rc = ext_write(fs, h, p, l)) < 0)
                break;
            writable = true;
            ext_hdr(r, p, l)->entries--;
            rc = fs_bfree(fs, h, child, 1);
            if (rc < 0)
                break;
            ext_sub_blocks(r, 1);
        }
        if (key < lblk || !empty)
            break;
        hi = key;
    }
    if (writable) {
        int rc2 = ext_dirty(fs, h, r, p, l, UBJ_EV_EXT_UNMAP);
        if (rc == 0)
            rc = rc2;
    }
    return rc;
}

/* ext_collapse -- while the root's children fit in the root together,
 * pull their entries up and free them (the depth shrinks). */
static int ext_collapse(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    struct ubj_ext_hdr *rh = &r->ip->i_data.ext.hdr;
    while (rh->depth > 0) {
        union ext_ent *rv = (union ext_ent *)(void *)r->ip->i_data.ext.e;
        union ext_ent all[UBJ_EXT_ROOT_MAX];
        uint64_t kids[UBJ_EXT_ROOT_MAX];
        unsigned nk = rh->entries, total = 0;
        for (unsigned i = 0; i < nk; i++) {
            struct ubj_buf *b;
            kids[i] = rv[i].i.child;
            uint64_t hi = i + 1 < nk ? rv[i + 1].i.lblk : EXT_END;
            int rc = fs_meta_read(fs, kids[i], UBJ_MAGIC_EXTENT, &b);
            if (rc < 0)
                return rc;
            const struct ubj_ext_hdr *ch = (const struct ubj_ext_hdr *)(b->data + EXT_NODE_OFF);
            const union ext_ent *cv = (const union ext_ent *)(const void *)(b->data + EXT_ENTS_OFF);
            rc = ext_check(fs, r->ino, kids[i], ch, cv, rh->depth - 1, rv[i].i.lblk, hi);
            if (rc == 0 && total + ch->entries <= UBJ_EXT_ROOT_MAX)
                memcpy(&all[total], cv, ch->entries * sizeof *cv);
            total += ch->entries;
            ubj_cache_put(fs->cache, b);
            if (rc < 0)
                return rc;
            if (total > UBJ_EXT_ROOT_MAX)
                return 0;
        }
        memset(rv, 0, UBJ_EXT_ROOT_MAX * sizeof *rv);
        memcpy(rv, all, total * sizeof *rv);
        rh->entries = (uint16_t)total;
        rh->depth--;
        int rc = ext_root_ev(h, r, UBJ_EV_EXT_ROOT_IN, nk ? kids[0] : 0);   /* R3 */
        if (rc < 0)
            return rc;
        for (unsigned i = 0; i < nk; i++) {
            rc = fs_bfree(fs, h, kids[i], 1);
            if (rc < 0)
                return rc;
            ext_sub_blocks(r, 1);
        }
    }
    return 0;
}

/* fs_ext_truncate -- free every block at or after lblk, trimming the
 * extent that straddles it; the tree shrinks back into the root when it
 * fits there. */
int fs_ext_truncate(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                    uint32_t lblk)
{
    int rc = ext_root_check(fs, r);
    if (rc < 0)
        return rc;
    const struct ubj_ext_hdr *rh = &r->ip->i_data.ext.hdr;
    if (rh->depth == 0) {
        const struct ubj_extent *v = r->ip->i_data.ext.e;
        if (rh->entries == 0 || ext_end(&v[rh->entries - 1]) <= lblk)
            return 0;
    }
    rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    struct ext_path p = { .depth = r->ip->i_data.ext.hdr.depth };
    rc = ext_trunc_node(fs, h, r, &p, 0, lblk, EXT_END);
    if (r->ip->i_data.ext.hdr.entries == 0) {
        r->ip->i_data.ext.hdr.depth = 0;
        if (rc == 0)
            rc = ext_root_ev(h, r, UBJ_EV_EXT_UNMAP, lblk);
    }
    if (rc == 0)
        rc = ext_collapse(fs, h, r);
    int rc2 = fs_idirty(fs, h, r);
    return rc < 0 ? rc : rc2;
}

/* ---- preallocation (fallocate: src/fs/falloc.c) ------------------------ */

/* fs_ext_prealloc -- if lblk lies in a hole, allocate up to `want` blocks
 * there (never past the next mapped block) as one unwritten extent, which
 * reads as zeros until fs_ext_alloc converts it; a mapped lblk is left as
 * it is.  *got = blocks from lblk now mapped alike (1..want). */
int fs_ext_prealloc(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                    uint32_t lblk, uint32_t want, uint32_t *got)
{
    struct ext_path p;
    int rc = ext_find(fs, r, lblk, &p);
    if (rc < 0)
        return rc;
    if (want == 0)
        want = 1;
    int i = p.lv[p.depth].idx;
    const struct ubj_extent *e = i >= 0 ? &ext_ents(r, &p, p.depth)[i].e : NULL;
    if (e != NULL && lblk < ext_end(e)) {
        uint64_t run = ext_end(e) - lblk;
        *got = run < want ? (uint32_t)run : want;
        ext_path_put(fs, &p);
        return 0;
    }
    uint64_t n = ext_next_key(r, &p) - lblk;
    n = n < want ? n : want;
    n = n < UBJ_EXT_MAX_LEN - 1 ? n : UBJ_EXT_MAX_LEN - 1;
    uint64_t goal = r->b->d->blkno;
    if (e != NULL && e->pblk + ext_len(e) < fs->sb.nblocks)
        goal = e->pblk + ext_len(e);
    uint64_t start;
    uint32_t cnt;
    rc = fs_iwrite(fs, h, r);
    if (rc == 0)
        rc = fs_balloc(fs, h, goal, (uint32_t)n, &start, &cnt);
    if (rc == 0) {
        struct ubj_extent ne = { .lblk = lblk, .len = cnt | UBJ_EXT_UNWRITTEN,
                                 .pblk = start };
        rc = ext_insert(fs, h, r, &p, &ne);
        if (rc < 0) {
            fs_bfree(fs, h, start, cnt);
        } else {
            r->ip->blocks += cnt;
            *got = cnt;
        }
    }
    ext_path_put(fs, &p);
    int rc2 = fs_idirty(fs, h, r);
    return rc < 0 ? rc : rc2;
}
