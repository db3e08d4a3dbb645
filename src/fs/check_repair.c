/*
 * check_repair.c -- the checker's repairs, applied after pass 4: allocation,
 * moving blocks claimed twice, rebuilding extent and directory trees,
 * fixing inodes.
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

/* ---- repairs: allocation, moving shared blocks, rebuilding trees ----------- */

/* ck_alloc -- up to `want` free blocks in a run (next fit). */
static int ck_alloc(struct ck *ck, uint32_t want, uint64_t *start, uint32_t *got)
{
    uint64_t lo = ck->sb.data_start, hi = ck->nb, span = hi - lo;
    uint64_t b = ck->cursor >= lo && ck->cursor < hi ? ck->cursor : lo;
    for (uint64_t seen = 0; seen < span;) {
        if ((b & 63) == 0 && b + 64 <= hi && ck->used[b >> 6] == ~0ULL) {
            b += 64;
            seen += 64;
        } else if (ck_bget(ck->used, b)) {
            b++;
            seen++;
        } else {
            uint32_t n = 1;
            while (n < want && b + n < hi && !ck_bget(ck->used, b + n))
                n++;
            ck_bset_range(ck->used, b, n);
            *start = b;
            *got = n;
            ck->cursor = b + n;
            return 0;
        }
        if (b >= hi)
            b = lo;
    }
    return -ENOSPC;
}

/* ck_move -- copy a shared extent to free blocks (split if it must be). */
static void ck_move(struct ck *ck, size_t ci)
{
    struct ck_claim c = ck->claims[ci];
    uint32_t done = 0;
    while (done < c.len && !ck->fatal) {
        uint64_t start;
        uint32_t got;
        if (ck_alloc(ck, c.len - done, &start, &got) < 0) {
            ck_failed(ck, "no free block to move inode %llu's shared blocks to",
                      CK_LL(ck->recs[c.rec].ino));
            return;
        }
        for (uint32_t k = 0; k < got && !c.unwritten; k++)
            if (ck_read(ck, c.pblk + done + k, ck->tmp) < 0 ||
                ck_write(ck, start + k, ck->tmp) < 0)
                return;
        if (done == 0) {
            ck->claims[ci].pblk = start;
            ck->claims[ci].len = got;
            ck->claims[ci].move = 0;
        } else if (!ck_claim_add(ck, c.rec, CK_DATA, start, c.lblk + done, got,
                                 c.unwritten)) {
            return;
        }
        done += got;
    }
    ck->recs[c.rec].flags |= CK_REXT;
}

/* ck_claims_of -- indices of rec's live claims of `kind` (pass 1 range and
 * later additions) into a malloc'd array; *n the count. */
static size_t *ck_claims_of(struct ck *ck, size_t ri, enum ck_kind kind, size_t *n)
{
    const struct ck_ino *r = &ck->recs[ri];
    size_t *v = malloc((r->nclaim + (ck->nclaims - ck->claims_p1) + 1) * sizeof *v);
    *n = 0;
    if (!v) {
        ck_fatal(ck, "out of memory");
        return NULL;
    }
    for (uint64_t i = r->claim0; i < r->claim0 + r->nclaim; i++)
        if (!ck->claims[i].dead && ck->claims[i].kind == kind)
            v[(*n)++] = (size_t)i;
    for (size_t i = ck->claims_p1; i < ck->nclaims; i++)
        if (ck->claims[i].rec == ri && !ck->claims[i].dead && ck->claims[i].kind == kind)
            v[(*n)++] = i;
    return v;
}

/* Blocks a rebuilt tree may reuse: the old tree's nodes. */
struct ck_pool { size_t *idx, n, pos; };

/* ck_node_take -- a block for a rebuilt node of record ri: an old node
 * block if one is left, else a new one.  0 when the device is full. */
static uint64_t ck_node_take(struct ck *ck, size_t ri, enum ck_kind kind,
                             struct ck_pool *pool)
{
    if (pool->pos < pool->n) {
        size_t c = pool->idx[pool->pos++];
        ck->claims[c].dead = 0;
        return ck->claims[c].pblk;
    }
    uint64_t b;
    uint32_t got;
    if (ck_alloc(ck, 1, &b, &got) < 0) {
        ck_failed(ck, "no free block for a tree node of inode %llu",
                  CK_LL(ck->recs[ri].ino));
        return 0;
    }
    return ck_claim_add(ck, ri, kind, b, 0, 1, false) ? b : 0;
}

/* ck_pool_get -- collect rec's old nodes of `kind` and release them. */
static bool ck_pool_get(struct ck *ck, size_t ri, enum ck_kind kind, struct ck_pool *p)
{
    p->pos = 0;
    p->idx = ck_claims_of(ck, ri, kind, &p->n);
    for (size_t i = 0; p->idx && i < p->n; i++)
        ck->claims[p->idx[i]].dead = 1;
    return p->idx != NULL;
}

/* ck_ext_cmp -- order extents by logical block. */
static int ck_ext_cmp(const void *a, const void *b)
{
    const struct ubj_extent *x = a, *y = b;
    return x->lblk < y->lblk ? -1 : x->lblk > y->lblk;
}

/* ck_ext_nodes -- write one level of extent nodes over cnt entries; the
 * index entries for the level above replace them in *ents. */
static int ck_ext_nodes(struct ck *ck, size_t ri, struct ck_pool *pool,
                        uint8_t **ents, size_t *cnt, unsigned depth, uint64_t *nodes)
{
    size_t nn = ck_div_up(*cnt, UBJ_EXT_NODE_MAX);
    uint8_t *up = calloc(nn, 16);
    if (!up) {
        ck_fatal(ck, "out of memory");
        return -1;
    }
    for (size_t j = 0; j < nn; j++) {
        size_t k = *cnt - j * UBJ_EXT_NODE_MAX;
        k = k < UBJ_EXT_NODE_MAX ? k : UBJ_EXT_NODE_MAX;
        uint64_t blk = ck_node_take(ck, ri, CK_EXTNODE, pool);
        if (blk == 0) {
            free(up);
            return -1;
        }
        uint8_t *b = ck->lv[0];
        struct ubj_ext_hdr h = { UBJ_EXT_MAGIC, (uint16_t)k, UBJ_EXT_NODE_MAX,
                                 (uint16_t)depth };
        memset(b, 0, UBJ_BS);
        memcpy(b + CK_EXT_OFF, &h, sizeof h);
        memcpy(b + CK_EXT_ENTS, *ents + j * UBJ_EXT_NODE_MAX * 16u, k * 16u);
        ck_seal(ck, b, UBJ_MAGIC_EXTENT, blk);
        if (ck_write(ck, blk, b) < 0) {
            free(up);
            return -1;
        }
        struct ubj_ext_idx x = { .child = blk };
        memcpy(&x.lblk, *ents + j * UBJ_EXT_NODE_MAX * 16u, 4);
        memcpy(up + j * 16u, &x, sizeof x);
        (*nodes)++;
    }
    free(*ents);
    *ents = up;
    *cnt = nn;
    return 0;
}

/* ck_ext_build -- rewrite record ri's extent tree from its live extents. */
static void ck_ext_build(struct ck *ck, size_t ri)
{
    struct ck_pool pool;
    size_t n, cnt;
    uint64_t nodes = 0, blocks = 0, blk;
    unsigned depth = 0;
    size_t *dv = ck_claims_of(ck, ri, CK_DATA, &n);
    if (!dv || !ck_pool_get(ck, ri, CK_EXTNODE, &pool)) {
        free(dv);
        return;
    }
    uint8_t *ents = calloc(n + 1, 16);
    for (size_t i = 0; ents && i < n; i++) {
        const struct ck_claim *c = &ck->claims[dv[i]];
        struct ubj_extent e = { c->lblk, c->len | (c->unwritten ? UBJ_EXT_UNWRITTEN : 0),
                                c->pblk };
        memcpy(ents + i * 16u, &e, sizeof e);
        blocks += c->len;
    }
    if (!ents)
        ck_fatal(ck, "out of memory");
    else
        qsort(ents, n, 16, ck_ext_cmp);
    for (cnt = n; ents && cnt > UBJ_EXT_ROOT_MAX && !ck->fatal; depth++)
        if (ck_ext_nodes(ck, ri, &pool, &ents, &cnt, depth, &nodes) < 0)
            break;
    struct ubj_inode *ip = ents && !ck->fatal && cnt <= UBJ_EXT_ROOT_MAX ?
                           ck_iget(ck, ck->recs[ri].ino, &blk) : NULL;
    if (ip) {
        memset(&ip->i_data, 0, sizeof ip->i_data);
        ip->i_data.ext.hdr = (struct ubj_ext_hdr){ UBJ_EXT_MAGIC, (uint16_t)cnt,
                                                   UBJ_EXT_ROOT_MAX, (uint16_t)depth };
        memcpy(ip->i_data.ext.e, ents, cnt * 16u);
        ip->flags |= UBJ_IFL_EXTTREE;
        ip->blocks = blocks + nodes + ck->recs[ri].xblocks;
        ck->recs[ri].blocks = ip->blocks;
        ck->recs[ri].flags &= ~CK_XBLOCKS;
        ck_iput(ck, blk);
    }
    free(ents);
    free(dv);
    free(pool.idx);
}

/* Records of one directory level being built: first key and block. */
struct ck_dlev { uint64_t *low, *blk; size_t n; };

/* ck_dir_flush -- write the node being filled in ck->lv[0]. */
static int ck_dir_flush(struct ck *ck, size_t ri, struct ck_pool *pool,
                        struct ck_dlev *out, unsigned level, unsigned nrec,
                        unsigned used, uint64_t low)
{
    uint64_t blk = ck_node_take(ck, ri, CK_DIRNODE, pool);
    if (blk == 0)
        return -1;
    struct ubj_dir_node n = { .nrec = (uint16_t)nrec, .level = (uint16_t)level,
                              .used = (uint16_t)used, .owner = ck->recs[ri].ino };
    memcpy(ck->lv[0], &n, sizeof n);
    ck_seal(ck, ck->lv[0], UBJ_MAGIC_DIR, blk);
    if (ck_write(ck, blk, ck->lv[0]) < 0)
        return -1;
    out->low[out->n] = low;
    out->blk[out->n++] = blk;
    return 0;
}

/* ck_dir_leaves -- pack the kept entries of record ri into leaves. */
static int ck_dir_leaves(struct ck *ck, size_t ri, struct ck_pool *pool,
                         struct ck_dlev *out)
{
    const struct ck_ino *d = &ck->recs[ri];
    uint8_t *b = ck->lv[0];
    unsigned used = 0, nrec = 0;
    uint64_t low = 0;
    memset(b, 0, UBJ_BS);
    for (uint64_t k = 0; k < d->nedge; k++) {
        const struct ck_edge *e = &ck->edges[d->edge0 + k];
        unsigned rl = (UBJ_DIR_LEAF_FIXED + e->namelen + 7u) & ~7u;
        if (e->drop)
            continue;
        if (used + rl > UBJ_DIR_SPACE) {
            if (ck_dir_flush(ck, ri, pool, out, 0, nrec, used, low) < 0)
                return -1;
            memset(b, 0, UBJ_BS);
            used = nrec = 0;
        }
        uint8_t *p = b + UBJ_DIR_REC_OFF + used;
        if (nrec == 0)
            low = e->key;
        memcpy(p, &e->key, 8);
        memcpy(p + 8, &e->ino, 8);
        p[16] = e->type;
        p[17] = e->namelen;
        memcpy(p + UBJ_DIR_LEAF_FIXED, ck->names + e->name, e->namelen);
        used += rl;
        nrec++;
    }
    return ck_dir_flush(ck, ri, pool, out, 0, nrec, used, low);
}

/* ck_dir_index_level -- one level of index nodes over `in`. */
static int ck_dir_index_level(struct ck *ck, size_t ri, struct ck_pool *pool,
                              const struct ck_dlev *in, struct ck_dlev *out,
                              unsigned level)
{
    const size_t per = UBJ_DIR_SPACE / CK_IREC;
    out->n = 0;
    for (size_t j = 0; j < in->n; j += per) {
        size_t k = in->n - j < per ? in->n - j : per;
        uint8_t *b = ck->lv[0];
        memset(b, 0, UBJ_BS);
        for (size_t i = 0; i < k; i++) {
            uint64_t key = i == 0 ? 0 : in->low[j + i];
            memcpy(b + UBJ_DIR_REC_OFF + i * CK_IREC, &key, 8);
            memcpy(b + UBJ_DIR_REC_OFF + i * CK_IREC + 8, &in->blk[j + i], 8);
        }
        if (ck_dir_flush(ck, ri, pool, out, level, (unsigned)k,
                         (unsigned)(k * CK_IREC), in->low[j]) < 0)
            return -1;
    }
    return 0;
}

/* ck_dir_build_tree -- write the tree; *root and *depth; the node count
 * in *nodes.  0 or -1. */
static int ck_dir_build_tree(struct ck *ck, size_t ri, struct ck_pool *pool,
                             uint64_t *root, unsigned *depth, uint64_t *nodes)
{
    const struct ck_ino *d = &ck->recs[ri];
    size_t cap = d->nedge + 2;
    struct ck_dlev a = { malloc(cap * 8), malloc(cap * 8), 0 };
    struct ck_dlev b = { malloc(cap * 8), malloc(cap * 8), 0 };
    int rc = -1;
    if (!a.low || !a.blk || !b.low || !b.blk) {
        ck_fatal(ck, "out of memory");
        goto out;
    }
    if (ck_dir_leaves(ck, ri, pool, &a) < 0)
        goto out;
    *nodes = a.n;
    for (*depth = 0; a.n > 1; ) {
        if (*depth >= CK_DIR_MAX_DEPTH) {
            ck_failed(ck, "directory %llu: too many names for a tree of depth %u",
                      CK_LL(d->ino), CK_DIR_MAX_DEPTH);
            goto out;
        }
        if (ck_dir_index_level(ck, ri, pool, &a, &b, ++*depth) < 0)
            goto out;
        *nodes += b.n;
        struct ck_dlev t = a;
        a = b;
        b = t;
    }
    *root = a.blk[0];
    rc = 0;
out:
    free(a.low);
    free(a.blk);
    free(b.low);
    free(b.blk);
    return rc;
}

/* ck_dir_build -- rewrite directory ri's tree from its kept entries. */
static void ck_dir_build(struct ck *ck, size_t ri)
{
    struct ck_pool pool;
    uint64_t root = 0, nodes = 0, blk, entries = 0;
    unsigned depth = 0;
    struct ck_ino *d = &ck->recs[ri];
    for (uint64_t k = 0; k < d->nedge; k++)
        entries += !ck->edges[d->edge0 + k].drop;
    if (!ck_pool_get(ck, ri, CK_DIRNODE, &pool))
        return;
    if (ck_dir_build_tree(ck, ri, &pool, &root, &depth, &nodes) == 0) {
        d = &ck->recs[ri];
        struct ubj_inode *ip = ck_iget(ck, d->ino, &blk);
        if (ip && (d->flags & CK_NEWROOT)) {
            struct timespec now;
            ubj_now(&now);
            memset(ip, 0, sizeof *ip);
            ip->mode = d->mode;
            ip->nlink = 2;
            ip->parent = UBJ_ROOT_INO;
            ip->atime = ip->mtime = ip->ctime = ip->crtime = now.tv_sec;
        }
        if (ip) {
            memset(&ip->i_data, 0, sizeof ip->i_data);
            ip->flags &= ~UBJ_IFL_EXTTREE;
            ip->i_data.dir.root = root;
            ip->i_data.dir.depth = depth;
            ip->i_data.dir.entries = entries;
            ip->i_data.dir.nodes = nodes;
            ip->blocks = nodes + d->xblocks;
            ip->size = nodes * UBJ_BS;
            d->flags &= ~(CK_XDIRCNT | CK_NOTREE);
            ck_iput(ck, blk);
        }
    }
    free(pool.idx);
}

/* ck_inode_fix -- apply the scalar fixes of record ri, or zero it. */
static void ck_inode_fix(struct ck *ck, size_t ri)
{
    struct ck_ino *r = &ck->recs[ri];
    uint64_t blk;
    bool zero = (r->flags & CK_DEAD) && !(r->flags & (CK_GONE | CK_NEWROOT));
    if (!zero && ((r->flags & CK_DEAD) || !(r->flags & CK_XFIX)))
        return;
    struct ubj_inode *ip = ck_iget(ck, r->ino, &blk);
    if (!ip)
        return;
    if (zero) {
        memset(ip, 0, sizeof *ip);
    } else {
        if (r->flags & CK_XNLINK)
            ip->nlink = r->counted;
        if (r->flags & CK_XSIZE)
            ip->size = r->want_size;
        if (r->flags & CK_XBLOCKS)
            ip->blocks = r->blocks;
        if (r->flags & CK_XPARENT)
            ip->parent = r->pdir;
        if (r->flags & CK_XONEXT)
            ip->orphan_next = 0;
        if (r->flags & CK_XDIRCNT) {
            ip->i_data.dir.entries = r->entries;
            ip->i_data.dir.nodes = r->nodes;
            ip->blocks = r->nodes + r->xblocks;
            ip->size = (r->flags & CK_NOTREE) ? 0 : r->nodes * UBJ_BS;
        }
    }
    ck_iput(ck, blk);
}

/* ck_repair -- apply every repair decided by passes 1-4. */
void ck_repair(struct ck *ck)
{
    for (int round = 0; round < 4 && !ck->fatal && ck_dup_sweep(ck, false) > 0; round++)
        for (size_t i = 0; i < ck->nclaims && !ck->fatal; i++)
            if (ck->claims[i].move && ck_claim_live(ck, &ck->claims[i]))
                ck_move(ck, i);
    if (!ck->fatal && ck_dup_sweep(ck, false) > 0)
        ck_failed(ck, "blocks are still used twice after moving the copies");
    for (size_t i = 0; i < ck->nrecs && !ck->fatal; i++) {
        uint32_t f = ck->recs[i].flags;
        if ((f & CK_DEAD) == 0 && (f & CK_REXT))
            ck_ext_build(ck, i);
        if ((f & CK_DEAD) == 0 && (f & CK_RDIR))
            ck_dir_build(ck, i);
    }
    for (size_t i = 0; i < ck->nrecs && !ck->fatal; i++)
        ck_inode_fix(ck, i);
}
