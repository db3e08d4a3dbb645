/*
 * check_extent.c -- checker pass 1, tree nodes and extent trees: every node
 * of an inode's extent tree walked and its blocks recorded as claims.
 * The passes and repairs as a whole: check.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/check_int.h"

/* ---- pass 1: tree nodes (extent and directory trees alike) ------------------- */

static const struct ck_tree ck_ext_tree = {
    "inode", "extent node", "entries", "the blocks it maps", CK_EXTNODE };
/* ck_node_where -- why node blk cannot be a tree node where it is (outside
 * the data area, or already a node of a tree), or NULL. */
const char *ck_node_where(const struct ck *ck, uint64_t blk)
{
    if (blk < ck->sb.data_start || blk >= ck->nb)
        return "block outside the data area";
    if (ck_bget(ck->nodes, blk))
        return "block already used by another tree node";
    return NULL;
}

/* ck_node_drop -- report node blk of owner ino's tree as not used (why):
 * the tree is rebuilt without it (*bad). */
void ck_node_drop(struct ck *ck, const struct ck_tree *t, uint64_t ino,
                  uint64_t blk, const char *why, bool *bad)
{
    ck_problem(ck, true, "%s %llu: %s %llu: %s: drop it with %s", t->owner,
               CK_LL(ino), t->node, CK_LL(blk), why, t->below);
    *bad = true;
}

/* ck_node_accept -- node blk (read into b, its header valid) joins owner
 * ino's tree: a bad checksum is reported (the tree is rebuilt: *bad), the
 * block is marked a node and claimed for record rec.  False: the claim
 * failed (out of memory, fatal). */
bool ck_node_accept(struct ck *ck, const struct ck_tree *t, uint64_t rec,
                    uint64_t ino, uint64_t blk, const uint8_t *b, bool *bad)
{
    if (!ck_crc_ok(ck, b)) {
        ck_problem(ck, true, "%s %llu: %s %llu: bad checksum (%s checked one by "
                   "one): rewrite the tree", t->owner, CK_LL(ino), t->node,
                   CK_LL(blk), t->items);
        *bad = true;
    }
    ck_bset(ck->nodes, blk);
    return ck_claim_add(ck, rec, t->kind, blk, 0, 1, false);
}

/* ---- pass 1: extent trees -------------------------------------------------- */

/* State of one extent-tree walk. */
struct ck_xw {
    uint64_t rec, ino;
    uint64_t blocks;        /* data + nodes counted */
    uint64_t wend;          /* end of the last written extent (blocks) */
    uint64_t next;          /* extents accepted */
    bool bad;               /* the tree needs a rebuild */
};

static void ck_ext_level(struct ck *ck, struct ck_xw *w, const uint8_t *ents,
                         unsigned n, unsigned depth, uint64_t lo, uint64_t hi);

/* ck_ext_leaf -- check one extent; claim its blocks. */
static void ck_ext_leaf(struct ck *ck, struct ck_xw *w, const uint8_t *p,
                        uint64_t *next, uint64_t hi)
{
    struct ubj_extent e;
    memcpy(&e, p, sizeof e);
    uint32_t len = e.len & ~UBJ_EXT_UNWRITTEN;
    bool unw = (e.len & UBJ_EXT_UNWRITTEN) != 0;
    const char *why = NULL;
    if (len == 0 || len >= UBJ_EXT_MAX_LEN)
        why = "bad length";
    else if (e.lblk < *next)
        why = "out of order or overlapping";
    else if ((uint64_t)e.lblk + len > hi)
        why = "outside its index range";
    else if (e.pblk < ck->sb.data_start || e.pblk >= ck->nb || len > ck->nb - e.pblk)
        why = "blocks outside the data area";
    if (why) {
        ck_problem(ck, true, "inode %llu: extent (logical %u, %u blocks at %llu): "
                   "%s: drop it", CK_LL(w->ino), e.lblk, len, CK_LL(e.pblk), why);
        w->bad = true;
        return;
    }
    if (!ck_claim_add(ck, w->rec, CK_DATA, e.pblk, e.lblk, len, unw))
        return;
    *next = (uint64_t)e.lblk + len;
    w->blocks += len;
    w->next++;
    if (!unw && *next > w->wend)
        w->wend = *next;
}

/* ck_ext_child -- read, check and descend into node blk of depth `depth`. */
static void ck_ext_child(struct ck *ck, struct ck_xw *w, uint64_t blk,
                         unsigned depth, uint64_t lo, uint64_t hi)
{
    const char *why = ck_node_where(ck, blk);
    if (why) {
        ck_node_drop(ck, &ck_ext_tree, w->ino, blk, why, &w->bad);
        return;
    }
    uint8_t *b = ck->lv[depth];
    if (ck_read(ck, blk, b) < 0)
        return;
    why = ck_hdr_why(b, UBJ_MAGIC_EXTENT, blk);
    struct ubj_ext_hdr h;
    memcpy(&h, b + CK_EXT_OFF, sizeof h);
    if (!why && h.magic != UBJ_EXT_MAGIC)
        why = "bad extent header magic";
    if (!why && (h.max != UBJ_EXT_NODE_MAX || h.entries > h.max))
        why = "bad entry count";
    if (!why && h.entries == 0)
        why = "no entries";   /* maps nothing (a truncate cut short) */
    if (!why && h.depth != depth)
        why = "wrong depth";
    if (why) {
        ck_node_drop(ck, &ck_ext_tree, w->ino, blk, why, &w->bad);
        return;
    }
    if (!ck_node_accept(ck, &ck_ext_tree, w->rec, w->ino, blk, b, &w->bad))
        return;
    w->blocks++;
    ck_ext_level(ck, w, b + CK_EXT_ENTS, h.entries, depth, lo, hi);
}

/* ck_ext_level -- the entries of one node with keys in [lo, hi). */
static void ck_ext_level(struct ck *ck, struct ck_xw *w, const uint8_t *ents,
                         unsigned n, unsigned depth, uint64_t lo, uint64_t hi)
{
    uint64_t next = lo;
    if (depth == 0) {
        for (unsigned i = 0; i < n && !ck->fatal; i++)
            ck_ext_leaf(ck, w, ents + (size_t)i * 16u, &next, hi);
        return;
    }
    uint64_t keys[UBJ_EXT_NODE_MAX], kids[UBJ_EXT_NODE_MAX];
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        struct ubj_ext_idx x;
        memcpy(&x, ents + (size_t)i * 16u, sizeof x);
        if (x.lblk < next || x.lblk >= hi) {
            ck_problem(ck, true, "inode %llu: extent index (logical %u, node %llu): "
                       "key out of order: drop it", CK_LL(w->ino), x.lblk,
                       CK_LL(x.child));
            w->bad = true;
            continue;
        }
        keys[m] = x.lblk;
        kids[m++] = x.child;
        next = (uint64_t)x.lblk + 1;
    }
    for (unsigned j = 0; j < m && !ck->fatal; j++)
        ck_ext_child(ck, w, kids[j], depth - 1, keys[j], j + 1 < m ? keys[j + 1] : hi);
}

/* ck_ext_root -- walk the extent tree rooted in an inode. */
static void ck_ext_root(struct ck *ck, struct ck_xw *w, const struct ubj_inode *ip)
{
    struct ubj_ext_hdr h = ip->i_data.ext.hdr;
    if (h.magic != UBJ_EXT_MAGIC || h.max != UBJ_EXT_ROOT_MAX ||
        h.entries > UBJ_EXT_ROOT_MAX || h.depth > CK_EXT_MAX_DEPTH ||
        (h.depth > 0 && h.entries == 0)) {
        ck_problem(ck, true, "inode %llu: bad extent tree root (magic 0x%x, %u/%u "
                   "entries, depth %u): empty the tree", CK_LL(w->ino), h.magic,
                   h.entries, h.max, h.depth);
        w->bad = true;
        return;
    }
    uint8_t ents[sizeof ip->i_data.ext.e];
    memcpy(ents, ip->i_data.ext.e, sizeof ents);
    ck_ext_level(ck, w, ents, h.entries, h.depth, 0, CK_LBLK_END);
}

/* ck_kill -- clear an invalid inode (reported here). */
void __attribute__((format(printf, 3, 4)))
ck_kill(struct ck *ck, struct ck_ino *r, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ck_problem(ck, true, "inode %llu (%s): %s: clear the inode", CK_LL(r->ino),
               ck_type_name(r->mode), msg);
    r->flags |= CK_DEAD;
    ck_kill_claims(ck, r);
}

/* ck_blocks_check -- ip->blocks against what the walk counted. */
static void ck_blocks_check(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
{
    if (ip->blocks == r->blocks || (r->flags & (CK_REXT | CK_RDIR)))
        return;
    ck_problem(ck, true, "inode %llu (%s): %llu blocks recorded, %llu counted",
               CK_LL(r->ino), ck_type_name(r->mode), CK_LL(ip->blocks),
               CK_LL(r->blocks));
    r->flags |= CK_XBLOCKS;
}

/* ck_file -- a regular file: extent tree, blocks, size. */
void ck_file(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
{
    struct ck_xw w = { .rec = (uint64_t)(r - ck->recs), .ino = r->ino };
    if (!(ip->flags & UBJ_IFL_EXTTREE)) {
        ck_problem(ck, true, "inode %llu (file): no extent tree: give it an empty one",
                   CK_LL(r->ino));
        w.bad = true;
    } else {
        ck_ext_root(ck, &w, ip);
    }
    if (w.bad)
        r->flags |= CK_REXT;
    r->blocks = w.blocks + r->xblocks;
    ck_blocks_check(ck, r, ip);
    uint64_t min = w.wend * UBJ_BS;
    if (ip->size > UBJ_MAX_FILE_SIZE || ck_div_up(ip->size, UBJ_BS) < w.wend) {
        ck_problem(ck, true, "inode %llu (file): size %llu, but written blocks "
                   "reach byte %llu: set the size to %llu", CK_LL(r->ino),
                   CK_LL(ip->size), CK_LL(min), CK_LL(min));
        r->want_size = min;
        r->flags |= CK_XSIZE;
    }
}

/* ck_symlink_long -- a target in data block 0 of an extent tree. */
static void ck_symlink_long(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
{
    struct ck_xw w = { .rec = (uint64_t)(r - ck->recs), .ino = r->ino };
    if (!(ip->flags & UBJ_IFL_EXTTREE)) {
        ck_kill(ck, r, "target of %llu bytes is not inline but there is no "
                "extent tree", CK_LL(ip->size));
        return;
    }
    ck_ext_root(ck, &w, ip);
    if (ck->fatal)
        return;
    const struct ck_claim *c = w.next == 1 ? &ck->claims[ck->nclaims - 1] : NULL;
    if (w.bad || !c || c->kind != CK_DATA || c->lblk != 0 || c->len != 1 ||
        c->unwritten) {
        ck_kill(ck, r, "the target block is not mapped as one written block 0");
        return;
    }
    if (ck_read(ck, c->pblk, ck->tmp) < 0)
        return;
    if (memchr(ck->tmp, 0, (size_t)ip->size)) {
        ck_kill(ck, r, "target contains a NUL byte");
        return;
    }
    r->blocks = w.blocks + r->xblocks;
    ck_blocks_check(ck, r, ip);
}

/* ck_symlink -- inline (<= 127 bytes, no tree) or in one block. */
void ck_symlink(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
{
    if (ip->size == 0 || ip->size > UBJ_SYMLINK_MAX) {
        ck_kill(ck, r, "target length %llu", CK_LL(ip->size));
        return;
    }
    if (ip->size > UBJ_SYMLINK_INLINE_MAX) {
        ck_symlink_long(ck, r, ip);
        return;
    }
    if (ip->flags & UBJ_IFL_EXTTREE) {
        ck_kill(ck, r, "short target (%llu bytes) with an extent tree",
                CK_LL(ip->size));
        return;
    }
    if (memchr(ip->i_data.symlink, 0, (size_t)ip->size)) {
        ck_kill(ck, r, "target contains a NUL byte");
        return;
    }
    r->blocks = r->xblocks;
    ck_blocks_check(ck, r, ip);
}

/* ck_special -- device, fifo, socket: no blocks, no tree. */
bool ck_special(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip)
{
    bool changed = false;
    if (ip->flags & UBJ_IFL_EXTTREE) {
        ck_problem(ck, true, "inode %llu (%s): has an extent tree flag: clear it",
                   CK_LL(r->ino),
                   ck_type_name(r->mode));
        ip->flags &= ~UBJ_IFL_EXTTREE;
        changed = true;
    }
    r->blocks = r->xblocks;
    ck_blocks_check(ck, r, ip);
    return changed;
}
