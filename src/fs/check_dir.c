/*
 * check_dir.c -- checker pass 1, directory trees: every node of a
 * directory's B+tree walked, its names checked and recorded as entries.
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

/* ---- pass 1: directory trees ------------------------------------------------- */

static const struct ck_tree ck_dir_tree = {
    "directory", "node", "records", "the names below it", CK_DIRNODE };

/* State of one directory-tree walk. */
struct ck_dw {
    uint64_t rec, ino;
    uint64_t edge0;         /* first entry of this directory */
    uint64_t nodes;
    bool bad;
};

static void ck_dir_node(struct ck *ck, struct ck_dw *w, uint64_t blk,
                        unsigned level, uint64_t lo, uint64_t hi, bool root);

/* ck_name_ok -- 1..255 bytes, no '/' or NUL, not "." or "..". */
static bool ck_name_ok(const char *name, unsigned len)
{
    if (len == 0 || memchr(name, '/', len) || memchr(name, 0, len))
        return false;
    return !(name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')));
}

/* ck_dt_ok -- a file type an entry may record. */
static bool ck_dt_ok(unsigned t)
{
    return t == DT_REG || t == DT_DIR || t == DT_LNK || t == DT_CHR ||
           t == DT_BLK || t == DT_FIFO || t == DT_SOCK;
}

/* ck_key_base -- the first key of a name's hash range (dir.c). */
static uint64_t ck_key_base(const struct ck *ck, const char *name, unsigned len)
{
    uint64_t k = (ubj_name_hash(ck->sb.hash_seed, name, len) >> 1) & ~(uint64_t)0xff;
    return k < UBJ_DIR_FIRST_KEY ? UBJ_DIR_FIRST_KEY : k;
}

/* ck_dup_name -- whether this directory already has `name` (names of one
 * hash range are adjacent in key order). */
static bool ck_dup_name(const struct ck *ck, const struct ck_dw *w, uint64_t key,
                        const char *name, unsigned len)
{
    for (size_t i = ck->nedges; i > w->edge0; i--) {
        const struct ck_edge *e = &ck->edges[i - 1];
        if ((e->key & ~(uint64_t)0xff) != (key & ~(uint64_t)0xff))
            return false;
        if (e->namelen == len && memcmp(ck->names + e->name, name, len) == 0)
            return true;
    }
    return false;
}

/* ck_dir_rec -- check one leaf record; keep it as an entry if valid. */
static void ck_dir_rec(struct ck *ck, struct ck_dw *w, uint64_t blk, const uint8_t *p,
                       uint64_t lo, uint64_t hi, uint64_t *prev, bool *any)
{
    uint64_t key, ino;
    memcpy(&key, p, 8);
    memcpy(&ino, p + 8, 8);
    unsigned type = p[16], len = p[17];
    const char *name = (const char *)p + UBJ_DIR_LEAF_FIXED;
    const char *why = NULL;
    if (!ck_name_ok(name, len))
        why = "invalid name";
    else if (key < lo)
        why = "key outside the node's range";
    else if (key >= hi)
        why = "";   /* a split's stale copy (below) */
    else if (*any && key <= *prev)
        why = "key out of order";
    else if ((key & ~(uint64_t)0xff) != ck_key_base(ck, name, len))
        why = "key does not match the name's hash";
    else if (!ck_dt_ok(type))
        why = "bad file type";
    else if (ino == 0 || ino >= ck->ni)
        why = "inode number out of range";
    else if (ck_dup_name(ck, w, key, name, len))
        why = "duplicate name";
    if (why && why[0] == '\0') {
        /* past the parent's bound: the moved half of a split whose old
         * node was not written again yet (the new node holds it: mode
         * sync's write order, docs/SYNC.md) -- nothing is lost */
        char shown[80];
        ck_leak(ck, 0, 0, "directory %llu: entry '%s' (node %llu, inode %llu): key "
                "past the node's range (a split's stale copy): remove it", CK_LL(w->ino),
                ck_show(shown, sizeof shown, name, len), CK_LL(blk), CK_LL(ino));
        w->bad = true;
        return;
    }
    if (why) {
        char shown[80];
        ck_problem(ck, true, "directory %llu: entry '%s' (node %llu, inode %llu): "
                   "%s: remove it", CK_LL(w->ino),
                   ck_show(shown, sizeof shown, name, len),
                   CK_LL(blk), CK_LL(ino), why);
        w->bad = true;
        return;
    }
    *prev = key;
    *any = true;
    ck_edge_add(ck, w->ino, ino, key, type, name, len);
}

/* ck_dir_leaf -- the records of a leaf with keys in [lo, hi). */
static void ck_dir_leaf(struct ck *ck, struct ck_dw *w, uint64_t blk, const uint8_t *b,
                        const struct ubj_dir_node *n, uint64_t lo, uint64_t hi,
                        bool root)
{
    const uint8_t *r = b + UBJ_DIR_REC_OFF;
    unsigned off = 0, cnt = 0;
    uint64_t prev = 0;
    bool any = false;
    while (off < n->used && !ck->fatal) {
        unsigned len = off + UBJ_DIR_LEAF_FIXED <= n->used ? r[off + 17] : 0;
        unsigned rl = (UBJ_DIR_LEAF_FIXED + len + 7u) & ~7u;
        if (len == 0 || off + rl > n->used) {
            ck_problem(ck, true, "directory %llu: node %llu: record at byte %u runs "
                       "past the end: drop the rest of the node", CK_LL(w->ino),
                       CK_LL(blk), off);
            w->bad = true;
            break;
        }
        ck_dir_rec(ck, w, blk, r + off, lo, hi, &prev, &any);
        off += rl;
        cnt++;
    }
    if (cnt != n->nrec) {
        ck_problem(ck, true, "directory %llu: node %llu: %u records recorded, %u "
                   "found", CK_LL(w->ino), CK_LL(blk), n->nrec, cnt);
        w->bad = true;
    }
    if (!root && cnt == 0) {
        /* a leak of the node: a split's old node never written since it
         * was made (mode sync's stale copy, docs/SYNC.md) */
        ck_leak(ck, 1, 0, "directory %llu: node %llu: empty leaf below the root",
                   CK_LL(w->ino), CK_LL(blk));
        w->bad = true;
    }
}

/* ck_dir_index -- the records of an index node with keys in [lo, hi). */
static void ck_dir_index(struct ck *ck, struct ck_dw *w, uint64_t blk, const uint8_t *b,
                         const struct ubj_dir_node *n, unsigned level, uint64_t lo,
                         uint64_t hi)
{
    const uint8_t *r = b + UBJ_DIR_REC_OFF;
    unsigned cnt = n->nrec;
    if (cnt == 0 || n->used != cnt * CK_IREC) {
        ck_problem(ck, true, "directory %llu: node %llu: index of %u records in %u "
                   "bytes", CK_LL(w->ino), CK_LL(blk), n->nrec, n->used);
        w->bad = true;
        cnt = cnt < n->used / CK_IREC ? cnt : n->used / CK_IREC;
    }
    uint64_t keys[UBJ_DIR_SPACE / CK_IREC], kids[UBJ_DIR_SPACE / CK_IREC];
    unsigned m = 0;
    for (unsigned i = 0; i < cnt; i++) {
        uint64_t k, c;
        memcpy(&k, r + i * CK_IREC, 8);
        memcpy(&c, r + i * CK_IREC + 8, 8);
        if (i == 0 && k != 0) {
            ck_problem(ck, true, "directory %llu: node %llu: first index key not 0",
                       CK_LL(w->ino), CK_LL(blk));
            w->bad = true;
        }
        if (i > 0 && (k <= keys[m - 1] || k >= hi)) {
            ck_problem(ck, true, "directory %llu: node %llu: index key %llu out of "
                       "order: drop its child %llu", CK_LL(w->ino), CK_LL(blk),
                       CK_LL(k), CK_LL(c));
            w->bad = true;
            continue;
        }
        keys[m] = i == 0 ? lo : k;
        kids[m++] = c;
    }
    for (unsigned j = 0; j < m && !ck->fatal; j++)
        ck_dir_node(ck, w, kids[j], level - 1, keys[j], j + 1 < m ? keys[j + 1] : hi,
                    false);
}

/* ck_dir_node -- read, check and descend into a directory node. */
static void ck_dir_node(struct ck *ck, struct ck_dw *w, uint64_t blk,
                        unsigned level, uint64_t lo, uint64_t hi, bool root)
{
    const char *why = ck_node_where(ck, blk);
    if (why) {
        ck_node_drop(ck, &ck_dir_tree, w->ino, blk, why, &w->bad);
        return;
    }
    uint8_t *b = ck->lv[level];
    if (ck_read(ck, blk, b) < 0)
        return;
    struct ubj_dir_node n;
    memcpy(&n, b, sizeof n);
    why = ck_hdr_why(b, UBJ_MAGIC_DIR, blk);
    if (!why && n.owner != w->ino)
        why = "belongs to another directory";
    if (!why && n.level != level)
        why = "wrong level";
    if (!why && n.used > UBJ_DIR_SPACE)
        why = "bad byte count";
    if (why) {
        ck_node_drop(ck, &ck_dir_tree, w->ino, blk, why, &w->bad);
        return;
    }
    if (!ck_node_accept(ck, &ck_dir_tree, w->rec, w->ino, blk, b, &w->bad))
        return;
    w->nodes++;
    if (level == 0)
        ck_dir_leaf(ck, w, blk, b, &n, lo, hi, root);
    else
        ck_dir_index(ck, w, blk, b, &n, level, lo, hi);
}

/* ck_dir_counts -- entries, nodes, blocks, size against the walk. */
static void ck_dir_counts(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
{
    const struct ubj_dir_root *dr = &ip->i_data.dir;
    uint64_t size = (r->flags & CK_NOTREE) ? 0 : r->nodes * UBJ_BS;
    if (r->flags & CK_RDIR)
        return;
    if (dr->entries == r->entries && dr->nodes == r->nodes &&
        ip->blocks == r->blocks && ip->size == size)
        return;
    /* every counter at or above what the tree holds: as a link count above
     * the names, a leak (rmdir refuses an empty directory until fsck); any
     * below (an rmdir could drop names) is corruption */
    bool above = dr->entries >= r->entries && dr->nodes >= r->nodes &&
                 ip->blocks >= r->blocks && ip->size >= size;
#define CK_DIRCNT_FMT "directory %llu: records %llu names, %llu nodes, %llu " \
                      "blocks, size %llu; found %llu, %llu, %llu, %llu"
    if (above)
        ck_leak(ck, 0, 0, CK_DIRCNT_FMT, CK_LL(r->ino), CK_LL(dr->entries), CK_LL(dr->nodes),
                CK_LL(ip->blocks), CK_LL(ip->size), CK_LL(r->entries),
                CK_LL(r->nodes), CK_LL(r->blocks), CK_LL(size));
    else
        ck_problem(ck, true, CK_DIRCNT_FMT, CK_LL(r->ino), CK_LL(dr->entries), CK_LL(dr->nodes),
                   CK_LL(ip->blocks), CK_LL(ip->size), CK_LL(r->entries),
                   CK_LL(r->nodes), CK_LL(r->blocks), CK_LL(size));
    r->flags |= CK_XDIRCNT;
#undef CK_DIRCNT_FMT
}

/* ck_dir -- a directory: its B+tree of names. */
bool ck_dir(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip)
{
    bool changed = false;
    const struct ubj_dir_root *dr = &ip->i_data.dir;
    struct ck_dw w = { .rec = (uint64_t)(r - ck->recs), .ino = r->ino,
                       .edge0 = ck->nedges };
    if (ip->flags & UBJ_IFL_EXTTREE) {
        ck_problem(ck, true, "directory %llu: has an extent tree flag: clear it",
                   CK_LL(r->ino));
        ip->flags &= ~UBJ_IFL_EXTTREE;
        changed = true;
    }
    if (dr->root == 0 && ip->nlink == 0 && dr->entries == 0 && dr->nodes == 0) {
        r->flags |= CK_NOTREE;      /* removed, its tree already freed */
    } else if (dr->root == 0 || dr->depth > CK_DIR_MAX_DEPTH) {
        ck_problem(ck, true, "directory %llu: bad tree root (block %llu, depth %u): "
                   "empty it", CK_LL(r->ino), CK_LL(dr->root), dr->depth);
        w.bad = true;
    } else {
        ck_dir_node(ck, &w, dr->root, dr->depth, 0, CK_NO_BOUND, true);
    }
    if (w.bad)
        r->flags |= CK_RDIR;
    r->nodes = w.nodes;
    r->blocks = w.nodes + r->xblocks;
    r->entries = ck->nedges - w.edge0;
    ck_dir_counts(ck, r, ip);
    return changed;
}
