/*
 * check_inode.c -- checker pass 1, the inode table (every slot, by type), and
 * pass 1b, blocks claimed twice.
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

/* ---- pass 1: the inode table ------------------------------------------------ */

/* ck_xattr_cmp -- order of xattr names (ns, bytes, length) as xattr.c. */
static int ck_xattr_cmp(const uint8_t *a, const uint8_t *b)
{
    if (a[0] != b[0])
        return a[0] < b[0] ? -1 : 1;
    unsigned la = a[1], lb = b[1];
    int c = memcmp(a + UBJ_XATTR_REC_FIXED, b + UBJ_XATTR_REC_FIXED, la < lb ? la : lb);
    if (c != 0)
        return c;
    return la == lb ? 0 : la < lb ? -1 : 1;
}

/* ck_xattr_why -- what is wrong with the records of xattr node b of inode
 * ino, or NULL. */
static const char *ck_xattr_why(const uint8_t *b, uint64_t ino)
{
    struct ubj_xattr_node n;
    const uint8_t *area = b + UBJ_XATTR_REC_OFF, *prev = NULL;
    size_t off = 0;
    memcpy(&n, b, sizeof n);
    if (n.owner != ino)
        return "owned by another inode";
    if (n.count == 0 || n.used > UBJ_XATTR_SPACE)
        return "bad record count or size";
    for (unsigned i = 0; i < n.count; i++) {
        if (off + UBJ_XATTR_REC_FIXED > n.used)
            return "record past the end";
        const uint8_t *p = area + off;
        unsigned vlen = (unsigned)p[2] | (unsigned)p[3] << 8;
        if (p[0] < UBJ_XATTR_NS_USER || p[0] > UBJ_XATTR_NS_SECURITY || p[1] == 0)
            return "bad record name";
        off += (UBJ_XATTR_REC_FIXED + p[1] + vlen + 3u) & ~(size_t)3u;
        if (off > n.used)
            return "record past the end";
        if (memchr(p + UBJ_XATTR_REC_FIXED, 0, p[1]) != NULL)
            return "bad record name";   /* a NUL: no name the API can give */
        if (prev && ck_xattr_cmp(prev, p) >= 0)
            return "records out of order";
        prev = p;
    }
    return off == n.used ? NULL : "record sizes do not add up";
}

/* ck_xattr -- the inode's extended-attribute block; a damaged one is
 * dropped (xattr_blk cleared in ip: true), a bad checksum resealed. */
static bool ck_xattr(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip)
{
    uint64_t blk = ip->xattr_blk;
    const char *why = NULL;
    if (blk == 0)
        return false;
    if (blk < ck->sb.data_start || blk >= ck->nb)
        why = "block outside the data area";
    else if (ck_bget(ck->nodes, blk))
        why = "block already used by a tree node";
    else if (ck_read(ck, blk, ck->tmp) < 0)
        return false;
    if (!why)
        why = ck_hdr_why(ck->tmp, UBJ_MAGIC_XATTR, blk);
    if (!why)
        why = ck_xattr_why(ck->tmp, r->ino);
    if (why) {
        ck_problem(ck, true, "inode %llu: xattr block %llu: %s: drop the "
                   "attributes", CK_LL(r->ino), CK_LL(blk), why);
        ip->xattr_blk = 0;
        return true;
    }
    if (!ck_crc_ok(ck, ck->tmp)) {
        ck_problem(ck, true, "inode %llu: xattr block %llu: bad checksum (records "
                   "valid): reseal it", CK_LL(r->ino), CK_LL(blk));
        ck_seal(ck, ck->tmp, UBJ_MAGIC_XATTR, blk);
        if (ck->repair)
            ck_write(ck, blk, ck->tmp);
    }
    ck_bset(ck->nodes, blk);
    if (ck_claim_add(ck, (uint64_t)(r - ck->recs), CK_XATTRNODE, blk, 0, 1, false))
        r->xblocks = 1;
    return false;
}

/* ck_mode_ok -- a known file type and no stray mode bits. */
static bool ck_mode_ok(uint32_t mode)
{
    if (mode & ~(uint32_t)(S_IFMT | 07777))
        return false;
    switch (mode & S_IFMT) {
    case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR: case S_IFBLK:
    case S_IFIFO: case S_IFSOCK:
        return true;
    default:
        return false;
    }
}

/* ck_rec_new -- append the record of an in-use inode. */
static struct ck_ino *ck_rec_new(struct ck *ck, uint64_t ino, const struct ubj_inode *ip)
{
    if (!ck_grow(ck, (void **)&ck->recs, &ck->caprecs, ck->nrecs + 1, sizeof *ck->recs))
        return NULL;
    struct ck_ino *r = &ck->recs[ck->nrecs++];
    memset(r, 0, sizeof *r);
    r->ino = ino;
    r->mode = ip->mode;
    r->nlink = ip->nlink;
    r->parent = ip->parent;
    r->onext = ip->orphan_next;
    r->pedge = CK_NONE;
    r->dist = CK_FAR;
    r->edge0 = ck->nedges;
    r->claim0 = ck->nclaims;
    return r;
}

/* ck_inode -- check one inode slot; true if the slot was changed. */
static bool ck_inode(struct ck *ck, uint64_t ino, struct ubj_inode *ip)
{
    if (ip->mode == 0)
        return false;
    if (ino == 0 || ino >= ck->ni || !ck_mode_ok(ip->mode)) {
        ck_problem(ck, true, "inode %llu: %s (mode 0%o): clear it", CK_LL(ino),
                   ino == 0 ? "inode 0 is reserved" : ino >= ck->ni ?
                   "beyond the inode count" : "invalid mode", ip->mode);
        memset(ip, 0, sizeof *ip);
        return true;
    }
    struct ck_ino *r = ck_rec_new(ck, ino, ip);
    if (!r)
        return false;
    bool changed = false;
    if (ip->flags & ~UBJ_IFL_EXTTREE) {
        ck_problem(ck, true, "inode %llu: unknown flags 0x%x: clear them", CK_LL(ino),
                   ip->flags & ~UBJ_IFL_EXTTREE);
        ip->flags &= UBJ_IFL_EXTTREE;
        changed = true;
    }
    if (ck_xattr(ck, r, ip))
        changed = true;
    switch (ip->mode & S_IFMT) {
    case S_IFREG: ck_file(ck, r, ip); break;
    case S_IFDIR: changed |= ck_dir(ck, r, ip); break;
    case S_IFLNK: ck_symlink(ck, r, ip); break;
    default: changed |= ck_special(ck, r, ip); break;
    }
    r->nclaim = ck->nclaims - r->claim0;
    r->nedge = ck->nedges - r->edge0;
    if (r->flags & CK_DEAD) {
        ck_kill_claims(ck, r);
        r->flags |= CK_GONE;
        memset(ip, 0, sizeof *ip);
        changed = true;
    }
    return changed;
}

/* ck_itable -- check inode-table block i. */
static void ck_itable(struct ck *ck, uint64_t i)
{
    uint64_t blk = ck->sb.it_start + i, first = i * UBJ_INODES_PER_BLOCK;
    uint8_t *b = ck->iblk;
    if (ck_read(ck, blk, b) < 0 || ck_zero(b))
        return;                                 /* lazy: 15 free inodes */
    const char *why = ck_hdr_why(b, UBJ_MAGIC_INODES, blk);
    if (why) {
        ck_problem(ck, true, "inode table block %llu: %s: clear its inodes "
                   "%llu..%llu", CK_LL(blk), why, CK_LL(first),
                   CK_LL(first + UBJ_INODES_PER_BLOCK - 1));
        memset(b, 0, UBJ_BS);
        if (ck->repair)
            ck_write(ck, blk, b);
        return;
    }
    bool bad = !ck_crc_ok(ck, b), changed = false;
    if (bad)
        ck_problem(ck, true, "inode table block %llu: bad checksum (inodes "
                   "%llu..%llu checked one by one)", CK_LL(blk), CK_LL(first),
                   CK_LL(first + UBJ_INODES_PER_BLOCK - 1));
    for (unsigned s = 0; s < UBJ_INODES_PER_BLOCK && !ck->fatal; s++) {
        struct ubj_inode *ip = (struct ubj_inode *)(void *)(b + UBJ_INODE_SIZE * (s + 1));
        if (ck_inode(ck, first + s, ip))
            changed = true;
    }
    if (ck->repair && !ck->fatal && (bad || changed)) {
        ck_seal(ck, b, UBJ_MAGIC_INODES, blk);
        ck_write(ck, blk, b);
    }
}

/* ck_pass1 -- every inode of the table. */
void ck_pass1(struct ck *ck)
{
    for (uint64_t i = 0; i < ck->sb.it_blocks && !ck->fatal; i++)
        ck_itable(ck, i);
    ck->claims_p1 = ck->nclaims;
}

/* ---- pass 1b: blocks claimed twice ------------------------------------------ */

struct ck_sorted { uint64_t pblk, idx; };

/* ck_sorted_cmp -- order by block, then by claim. */
static int ck_sorted_cmp(const void *a, const void *b)
{
    const struct ck_sorted *x = a, *y = b;
    if (x->pblk != y->pblk)
        return x->pblk < y->pblk ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* ck_claim_live -- a claim still held by an inode fsck keeps. */
bool ck_claim_live(const struct ck *ck, const struct ck_claim *c)
{
    return !c->dead && !(ck->recs[c->rec].flags & CK_DEAD);
}

/* ck_dup_report -- one overlap between claims a and b (b is moved). */
static void ck_dup_report(struct ck *ck, const struct ck_claim *a,
                          const struct ck_claim *b, const struct ck_claim *victim)
{
    static const char *kinds[] = { "data", "extent node", "directory node",
                                   "xattr block" };
    uint64_t from = b->pblk > a->pblk ? b->pblk : a->pblk;
    uint64_t ea = a->pblk + a->len, eb = b->pblk + b->len;
    uint64_t to = (ea < eb ? ea : eb) - 1;
    const struct ck_ino *v = &ck->recs[victim->rec];
    ck_problem(ck, true, "blocks %llu..%llu are used twice: by inode %llu (%s) and "
               "inode %llu (%s): copy inode %llu's blocks elsewhere",
               CK_LL(from), CK_LL(to),
               CK_LL(ck->recs[a->rec].ino), kinds[a->kind],
               CK_LL(ck->recs[b->rec].ino), kinds[b->kind], CK_LL(v->ino));
}

/* ck_dup_sweep -- mark claims overlapping an earlier one to be moved (a
 * tree node is never moved: data is).  Returns the overlaps found. */
uint64_t ck_dup_sweep(struct ck *ck, bool report)
{
    struct ck_sorted *s = malloc((ck->nclaims + 1) * sizeof *s);
    size_t n = 0;
    uint64_t found = 0;
    if (!s) {
        ck_fatal(ck, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < ck->nclaims; i++)
        if (ck_claim_live(ck, &ck->claims[i]) && !ck->claims[i].move)
            s[n++] = (struct ck_sorted){ ck->claims[i].pblk, i };
    qsort(s, n, sizeof *s, ck_sorted_cmp);
    size_t cur = SIZE_MAX;
    uint64_t end = 0;
    for (size_t k = 0; k < n; k++) {
        struct ck_claim *c = &ck->claims[s[k].idx];
        if (cur != SIZE_MAX && c->pblk < end) {
            struct ck_claim *a = &ck->claims[cur];
            struct ck_claim *victim = c->kind == CK_DATA ? c : a;
            found++;
            if (report)
                ck_dup_report(ck, a, c, victim);
            victim->move = 1;
            if (victim == c)
                continue;
        }
        if (cur == SIZE_MAX || c->pblk + c->len > end || ck->claims[cur].move) {
            cur = s[k].idx;
            end = c->pblk + c->len;
        }
    }
    free(s);
    return found;
}

/* ck_pass1b -- report blocks claimed twice. */
void ck_pass1b(struct ck *ck)
{
    if (ck->dups)
        ck_dup_sweep(ck, true);
    for (size_t i = 0; i < ck->nclaims; i++)
        ck->claims[i].move = 0;      /* decided again, for live owners, later */
}
