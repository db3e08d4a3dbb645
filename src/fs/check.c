/*
 * check.c -- ubj_check: the file-system checker (fsck), after e2fsck's
 * passes, over the raw device: blocks are read with ubj_bdev_read (no
 * mount, no cache), so it works on images ubj_mount refuses.  With
 * UBJ_CHECK_REPAIR it writes the repaired blocks back, sealed, and
 * flushes.  It shares nothing mutable with the rest of the library.
 *
 * Passes (one report line per problem; "note: " lines are not problems):
 *   0  superblock: magic, checksum, own block number, version, features,
 *      geometry (the layout super.c computes), image size against the
 *      device, mode.  A superblock that cannot be trusted is an
 *      operational error: v1 keeps no backup superblock to fall back on.
 *      A mode-ubj image left MOUNTED is not repaired: its NVM region may
 *      hold newer committed blocks (mount recovers them first).
 *   1  every inode slot of the inode table (an all-zero table block is
 *      15 free inodes): type, flags, xattr block, extent trees and
 *      directory B+trees walked node by node (header, checksum, own block
 *      number, owner, level/depth, entry counts, key order and bounds,
 *      name hashes, names).  Every block an inode holds is recorded as a
 *      "claim" (owner, kind, run); sizes, block counts, directory counters.
 *   1b blocks claimed twice: a sweep of the claims sorted by block.
 *   2  directory entries: target in use, file type, links to the root or
 *      to the directory itself, a directory named more than once; '..'
 *      (the parent field) against the one name kept; reachability from
 *      the root.
 *   3  the orphan list (cycles, range, nlink 0, directories empty);
 *      unreachable inodes.
 *   4  link counts: files = names, directories = 2 + subdirectories.
 *   5  block and inode bitmaps (metadata blocks, inode 0 and the bits past
 *      the end must be set) and the superblock's free counts against the
 *      maps built from the claims as found; a repair writes the maps as
 *      they are after it (its own changes need no further line).
 *
 * Repairs (decided while checking, applied after pass 4 so that every
 * allocation sees the complete map of used blocks):
 *  - an inode block with a bad magic or block number is garbage: its 15
 *    inodes are cleared; with only a bad checksum, its inodes are checked
 *    one by one and the block resealed;
 *  - a damaged xattr block is dropped (its attributes are lost);
 *  - an invalid inode (mode, symlink) is cleared; entries pointing at a
 *    free inode are dropped; unreachable inodes are freed (v1 has no
 *    lost+found); orphans are freed, as the next mount would (a valid
 *    orphan list is a note, not a problem);
 *  - a damaged extent tree or directory tree is rebuilt from what is
 *    valid in it (dropped nodes lose what they held); a missing root
 *    directory is recreated empty;
 *  - a block claimed twice keeps its first owner; the other's extent is
 *    copied to free blocks (a tree node always wins against data);
 *  - counts, sizes, '..', link counts, bitmaps and free counts are set to
 *    what was found.
 * The superblock state MOUNTED is left alone (recovery belongs to mount);
 * ERRORS is cleared once everything is fixed.
 *
 * Invariants: every number read from the device is range-checked before
 * it indexes memory or the device; each tree node is visited at most once
 * (the node map), so a corrupt image can neither loop nor explode the
 * walk; memory is two bits per block plus O(in-use inodes + extents +
 * names).
 * Without UBJ_CHECK_REPAIR nothing is ever written.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"
#include "ubjfs/nvm.h"        /* is the device an NVM view (image + region) */

#define CK_EXT_MAX_DEPTH 5u         /* extent.c's EXT_MAX_DEPTH */
#define CK_DIR_MAX_DEPTH 8u         /* dir.c's DIR_MAX_DEPTH */
#define CK_LEVELS 10u               /* node buffers: one per tree level */
#define CK_MAP_LINES 20u            /* bitmap runs reported per kind */
#define CK_IREC 16u                 /* internal directory record */
#define CK_EXT_OFF 16u              /* ext header in an extent node */
#define CK_EXT_ENTS 24u             /* first entry in an extent node */
#define CK_NO_BOUND UINT64_MAX
#define CK_LBLK_END (1ULL << 32)
#define CK_NONE UINT64_MAX
#define CK_LL(x) ((unsigned long long)(x))

enum ck_kind { CK_DATA = 0, CK_EXTNODE = 1, CK_DIRNODE = 2, CK_XATTRNODE = 3 };

/* Inode record flags. */
#define CK_DEAD    0x0001u  /* free, or freed by the repair */
#define CK_GONE    0x0002u  /* already zeroed on disk by pass 1 */
#define CK_REACHED 0x0004u
#define CK_ORPHAN  0x0008u  /* a valid member of the orphan list */
#define CK_REXT    0x0010u  /* rebuild the extent tree */
#define CK_RDIR    0x0020u  /* rebuild the directory tree */
#define CK_NEWROOT 0x0040u  /* the root directory, to be created */
#define CK_NOTREE  0x0080u  /* directory whose tree was destroyed (root 0) */
#define CK_XNLINK  0x0100u  /* set nlink = counted */
#define CK_XSIZE   0x0200u  /* set size = want_size */
#define CK_XBLOCKS 0x0400u  /* set blocks = blocks counted */
#define CK_XPARENT 0x0800u  /* set parent = pdir */
#define CK_XONEXT  0x1000u  /* set orphan_next = 0 */
#define CK_XDIRCNT 0x2000u  /* set the directory counters */
#define CK_LATE    0x4000u  /* freed by passes 3-4 (in use as found) */
#define CK_XFIX (CK_XNLINK | CK_XSIZE | CK_XBLOCKS | CK_XPARENT | CK_XONEXT | \
                 CK_XDIRCNT)

/* One in-use inode (records are kept sorted by inode number). */
struct ck_ino {
    uint64_t ino;
    uint64_t parent;        /* on disk (directories) */
    uint64_t onext;         /* orphan_next on disk */
    uint64_t want_size;     /* with CK_XSIZE */
    uint64_t blocks;        /* counted: data + tree nodes + xattr block */
    uint64_t xblocks;       /* 1 if the inode keeps an xattr block */
    uint64_t entries;       /* directories: names kept */
    uint64_t nodes;         /* directories: tree nodes counted */
    uint64_t pdir;          /* directories: the one holding its name */
    uint64_t pedge;         /* index of that name's entry, CK_NONE if none */
    uint64_t edge0, nedge;  /* this directory's entries in ck->edges */
    uint64_t claim0, nclaim;/* this inode's claims from pass 1 */
    uint32_t mode, nlink;
    uint32_t counted;       /* names (files), subdirectories (directories) */
    uint32_t flags;         /* CK_* */
    uint32_t dist;          /* directories: names from the root, CK_FAR if none */
};
#define CK_FAR UINT32_MAX

/* A run of blocks some inode's tree holds. */
struct ck_claim {
    uint64_t pblk;
    uint64_t rec;           /* index of the owner in ck->recs */
    uint32_t lblk, len;     /* data: logical start; blocks */
    uint8_t kind;           /* enum ck_kind */
    uint8_t unwritten;
    uint8_t dead;           /* no longer held (dropped, moved, owner freed) */
    uint8_t move;           /* shared with another claim: copy elsewhere */
};

/* A directory entry found in pass 1. */
struct ck_edge {
    uint64_t dir, ino, key;
    uint64_t name;          /* offset in ck->names */
    uint8_t namelen, type;  /* type as found (DT_*), fixed in pass 2 */
    uint8_t drop;
};

struct ck {
    struct ubj_bdev *dev;
    bool repair;
    bool discard_nvm;           /* UBJ_CHECK_DISCARD_NVM */
    void (*report)(void *ctx, const char *line);
    void *rctx;
    struct ubj_super sb;
    uint32_t seed;              /* crc32c(~0, uuid) */
    uint64_t nb, ni;            /* blocks, inodes */
    uint64_t *used;             /* nb bits: claimed or allocated; pass 5:
                                   the blocks in use after the repairs */
    uint64_t *nodes;            /* nb bits: tree nodes; from pass 4 on: the
                                   blocks in use as found */
    uint64_t *ifound;           /* ni bits: inodes in use as found */
    struct ck_ino *recs;
    size_t nrecs, caprecs;
    struct ck_claim *claims;
    size_t nclaims, capclaims, claims_p1;
    struct ck_edge *edges;
    size_t nedges, capedges;
    char *names;
    size_t nnames, capnames;
    uint8_t *lv[CK_LEVELS];     /* node buffers, one per tree level */
    uint8_t *iblk;              /* pass 1: the inode block being checked */
    uint8_t *tmp;               /* everything else */
    uint64_t cursor;            /* allocation cursor */
    uint64_t orphans;
    unsigned long problems, unfixed;
    bool fatal, wrote, dups, sb_dirty;
};

/* ---- reporting ------------------------------------------------------------ */

/* ck_emit -- hand one line to the caller (stderr without a callback). */
static void ck_emit(struct ck *ck, const char *line)
{
    if (ck->report)
        ck->report(ck->rctx, line);
    else
        fprintf(stderr, "%s\n", line);
}

/* ck_vline -- format prefix + message + suffix and emit it. */
static void ck_vline(struct ck *ck, const char *prefix, const char *suffix,
                     const char *fmt, va_list ap)
{
    char line[512];
    size_t n = (size_t)snprintf(line, sizeof line, "%s", prefix);
    vsnprintf(line + n, sizeof line - n, fmt, ap);
    n = strlen(line);
    snprintf(line + n, sizeof line - n, "%s", suffix);
    ck_emit(ck, line);
}

/* ck_problem -- report a problem; `fixable`: a repair run fixes it. */
static void __attribute__((format(printf, 3, 4)))
ck_problem(struct ck *ck, bool fixable, const char *fmt, ...)
{
    va_list ap;
    const char *sfx = "";
    ck->problems++;
    if (ck->repair && fixable) {
        sfx = " [fixed]";
    } else {
        ck->unfixed++;
        if (ck->repair)
            sfx = " [NOT fixed]";
    }
    va_start(ap, fmt);
    ck_vline(ck, "", sfx, fmt, ap);
    va_end(ap);
}

/* ck_note -- report something worth knowing that is not a problem. */
static void __attribute__((format(printf, 2, 3)))
ck_note(struct ck *ck, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ck_vline(ck, "note: ", "", fmt, ap);
    va_end(ap);
}

/* ck_fatal -- an operational error: the check cannot go on. */
static void __attribute__((format(printf, 2, 3)))
ck_fatal(struct ck *ck, const char *fmt, ...)
{
    va_list ap;
    ck->fatal = true;
    va_start(ap, fmt);
    ck_vline(ck, "", "", fmt, ap);
    va_end(ap);
}

/* ck_failed -- a repair promised as fixed could not be made. */
static void __attribute__((format(printf, 2, 3)))
ck_failed(struct ck *ck, const char *fmt, ...)
{
    va_list ap;
    ck->unfixed++;
    va_start(ap, fmt);
    ck_vline(ck, "repair failed: ", "", fmt, ap);
    va_end(ap);
}

/* ck_show -- a printable copy of a name for messages. */
static const char *ck_show(char *out, size_t cap, const char *name, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)name[i];
        out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (len > 0 && o + 4 >= cap && o < len) {
        out[o++] = '.';
        out[o++] = '.';
        out[o++] = '.';
    }
    out[o] = '\0';
    return out;
}

/* ck_type_name -- a mode's file type for messages. */
static const char *ck_type_name(uint32_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "file";
    case S_IFDIR: return "directory";
    case S_IFLNK: return "symlink";
    case S_IFCHR: return "char device";
    case S_IFBLK: return "block device";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    default: return "inode";
    }
}

/* ---- memory ------------------------------------------------------------------ */

/* ck_grow -- make room for `need` elements of `size` in *arr; false (and
 * an operational error) when out of memory. */
static bool ck_grow(struct ck *ck, void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 64;
    while (n < need && n < SIZE_MAX / 2 / size)
        n *= 2;
    void *p = n >= need ? realloc(*arr, n * size) : NULL;
    if (!p) {
        ck_fatal(ck, "out of memory");
        return false;
    }
    *arr = p;
    *cap = n;
    return true;
}

/* ---- bitmaps in memory (bit i of word i / 64) ------------------------------- */

/* ck_bget -- bit i. */
static inline bool ck_bget(const uint64_t *m, uint64_t i)
{
    return (m[i >> 6] >> (i & 63)) & 1u;
}

/* ck_bset -- set bit i. */
static inline void ck_bset(uint64_t *m, uint64_t i)
{
    m[i >> 6] |= 1ULL << (i & 63);
}

/* ck_bany -- whether any bit of [from, from + n) is set. */
static bool ck_bany(const uint64_t *m, uint64_t from, uint64_t n)
{
    for (uint64_t i = from; i < from + n;) {
        if ((i & 63) == 0 && from + n - i >= 64) {
            if (m[i >> 6])
                return true;
            i += 64;
        } else {
            if (ck_bget(m, i))
                return true;
            i++;
        }
    }
    return false;
}

/* ck_bset_range -- set [from, from + n). */
static void ck_bset_range(uint64_t *m, uint64_t from, uint64_t n)
{
    for (uint64_t i = from; i < from + n;) {
        if ((i & 63) == 0 && from + n - i >= 64) {
            m[i >> 6] = ~0ULL;
            i += 64;
        } else {
            ck_bset(m, i);
            i++;
        }
    }
}

/* ck_bcount -- set bits among the first n. */
static uint64_t ck_bcount(const uint64_t *m, uint64_t n)
{
    uint64_t c = 0;
    for (uint64_t w = 0; w < n / 64; w++)
        c += (uint64_t)__builtin_popcountll(m[w]);
    if (n % 64)
        c += (uint64_t)__builtin_popcountll(m[n / 64] & ((1ULL << (n % 64)) - 1));
    return c;
}

/* ck_bwords -- words for n bits. */
static size_t ck_bwords(uint64_t n)
{
    return (size_t)(n / 64 + 1);
}

/* ---- blocks and checksums ----------------------------------------------------- */

/* ck_read -- read block blk; an I/O error is operational. */
static int ck_read(struct ck *ck, uint64_t blk, void *buf)
{
    int rc = ubj_bdev_read(ck->dev, blk, 1, buf);
    if (rc < 0)
        ck_fatal(ck, "cannot read block %llu: %s", CK_LL(blk), strerror(-rc));
    return rc;
}

/* ck_write -- write block blk (repair runs only). */
static int ck_write(struct ck *ck, uint64_t blk, const void *buf)
{
    if (!ck->repair || ck->fatal)
        return -EROFS;
    int rc = ubj_bdev_write(ck->dev, blk, 1, buf);
    if (rc < 0)
        ck_fatal(ck, "cannot write block %llu: %s", CK_LL(blk), strerror(-rc));
    else
        ck->wrote = true;
    return rc;
}

/* ck_crc -- crc32c of a metadata block with its crc field taken as zero. */
static uint32_t ck_crc(uint32_t seed, const uint8_t *b)
{
    static const uint8_t zero[4];
    uint32_t c = ubj_crc32c(seed, b, offsetof(struct ubj_blkhdr, crc));
    c = ubj_crc32c(c, zero, sizeof zero);
    return ubj_crc32c(c, b + offsetof(struct ubj_blkhdr, blkno),
                      UBJ_BS - offsetof(struct ubj_blkhdr, blkno));
}

/* ck_crc_ok -- whether the block's crc matches its contents. */
static bool ck_crc_ok(const struct ck *ck, const uint8_t *b)
{
    struct ubj_blkhdr h;
    memcpy(&h, b, sizeof h);
    return h.crc == ck_crc(ck->seed, b);
}

/* ck_hdr_why -- what is wrong with a block's magic or number, or NULL. */
static const char *ck_hdr_why(const uint8_t *b, uint32_t magic, uint64_t blk)
{
    struct ubj_blkhdr h;
    memcpy(&h, b, sizeof h);
    if (h.magic != magic)
        return "bad magic";
    if (h.blkno != blk)
        return "wrong block number (misdirected write)";
    return NULL;
}

/* ck_seal -- set a metadata block's header and crc. */
static void ck_seal(const struct ck *ck, uint8_t *b, uint32_t magic, uint64_t blk)
{
    struct ubj_blkhdr h = { .magic = magic, .crc = 0, .blkno = blk };
    memcpy(b, &h, sizeof h);
    h.crc = ck_crc(ck->seed, b);
    memcpy(b, &h, sizeof h);
}

/* ck_zero -- whether a block is all zero. */
static bool ck_zero(const uint8_t *b)
{
    static const uint8_t z[UBJ_BS];
    return memcmp(b, z, UBJ_BS) == 0;
}

/* ck_div_up -- ceil(a / b). */
static uint64_t ck_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* ---- records, claims, entries ------------------------------------------------ */

/* ck_find -- the record of `ino`, or NULL (binary search). */
static struct ck_ino *ck_find(struct ck *ck, uint64_t ino)
{
    size_t lo = 0, hi = ck->nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ck->recs[mid].ino < ino)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ck->nrecs && ck->recs[lo].ino == ino ? &ck->recs[lo] : NULL;
}

/* ck_live -- the record of an in-use inode fsck keeps, or NULL. */
static struct ck_ino *ck_live(struct ck *ck, uint64_t ino)
{
    struct ck_ino *r = ck_find(ck, ino);
    return r && !(r->flags & CK_DEAD) ? r : NULL;
}

/* ck_claim_add -- record that rec holds [pblk, pblk + len); notes overlap. */
static bool ck_claim_add(struct ck *ck, uint64_t rec, enum ck_kind kind,
                         uint64_t pblk, uint32_t lblk, uint32_t len, bool unwritten)
{
    if (!ck_grow(ck, (void **)&ck->claims, &ck->capclaims, ck->nclaims + 1,
                 sizeof *ck->claims))
        return false;
    struct ck_claim *c = &ck->claims[ck->nclaims++];
    memset(c, 0, sizeof *c);
    c->pblk = pblk;
    c->rec = rec;
    c->lblk = lblk;
    c->len = len;
    c->kind = (uint8_t)kind;
    c->unwritten = unwritten;
    if (ck_bany(ck->used, pblk, len))
        ck->dups = true;
    ck_bset_range(ck->used, pblk, len);
    return true;
}

/* ck_kill_claims -- rec no longer holds any of its pass-1 claims. */
static void ck_kill_claims(struct ck *ck, const struct ck_ino *r)
{
    for (uint64_t i = r->claim0; i < r->claim0 + r->nclaim && i < ck->nclaims; i++)
        ck->claims[i].dead = 1;
}

/* ck_edge_add -- record a directory entry. */
static bool ck_edge_add(struct ck *ck, uint64_t dir, uint64_t ino, uint64_t key,
                        unsigned type, const char *name, unsigned len)
{
    if (!ck_grow(ck, (void **)&ck->edges, &ck->capedges, ck->nedges + 1,
                 sizeof *ck->edges) ||
        !ck_grow(ck, (void **)&ck->names, &ck->capnames, ck->nnames + len, 1))
        return false;
    struct ck_edge *e = &ck->edges[ck->nedges++];
    e->dir = dir;
    e->ino = ino;
    e->key = key;
    e->name = ck->nnames;
    e->namelen = (uint8_t)len;
    e->type = (uint8_t)type;
    e->drop = 0;
    memcpy(ck->names + ck->nnames, name, len);
    ck->nnames += len;
    return true;
}

/* ck_edge_name -- printable name of an entry. */
static const char *ck_edge_name(const struct ck *ck, const struct ck_edge *e,
                                char *out, size_t cap)
{
    return ck_show(out, cap, ck->names + e->name, e->namelen);
}

/* ---- inode I/O for repairs ------------------------------------------------ */

/* ck_iget -- read the inode block of ino into ck->tmp (a lazy all-zero
 * block gets its header); returns the slot, or NULL on an I/O error. */
static struct ubj_inode *ck_iget(struct ck *ck, uint64_t ino, uint64_t *blk)
{
    *blk = ck->sb.it_start + ino / UBJ_INODES_PER_BLOCK;
    if (ck_read(ck, *blk, ck->tmp) < 0)
        return NULL;
    if (ck_hdr_why(ck->tmp, UBJ_MAGIC_INODES, *blk))
        memset(ck->tmp, 0, UBJ_BS);    /* garbage: pass 1 cleared it */
    return (struct ubj_inode *)(void *)(ck->tmp + UBJ_INODE_SIZE *
                                        (1 + ino % UBJ_INODES_PER_BLOCK));
}

/* ck_iput -- seal and write back the block ck_iget read. */
static int ck_iput(struct ck *ck, uint64_t blk)
{
    ck_seal(ck, ck->tmp, UBJ_MAGIC_INODES, blk);
    return ck_write(ck, blk, ck->tmp);
}

/* ---- pass 0: the superblock ------------------------------------------------- */

/* ck_super_header -- magic, checksum, number, version, block size,
 * features.  0, or -1 after an operational error. */
static int ck_super_header(struct ck *ck)
{
    const struct ubj_super *sb = &ck->sb;
    const char *nobackup = "; v1 keeps no backup superblock";
    if (sb->hdr.magic != UBJ_MAGIC_SUPER) {
        ck_fatal(ck, "superblock: not a ubjfs image (bad magic 0x%08x)", sb->hdr.magic);
        return -1;
    }
    ck->seed = ubj_crc32c(~0u, sb->uuid, 16);
    if (!ck_crc_ok(ck, (const uint8_t *)sb))
        ck_fatal(ck, "superblock: bad checksum: it cannot be trusted%s", nobackup);
    else if (sb->hdr.blkno != 0)
        ck_fatal(ck, "superblock: block number %llu, expected 0 (misdirected write)%s",
                 CK_LL(sb->hdr.blkno), nobackup);
    else if (sb->version != UBJ_FORMAT_VERSION)
        ck_fatal(ck, "superblock: unsupported format version %u", sb->version);
    else if (sb->block_size != UBJ_BS)
        ck_fatal(ck, "superblock: block size %u, expected %u%s", sb->block_size,
                 UBJ_BS, nobackup);
    else if (sb->feat_incompat)
        ck_fatal(ck, "superblock: unsupported incompatible features 0x%llx",
                 CK_LL(sb->feat_incompat));
    else if (sb->feat_ro_compat)
        ck_fatal(ck, "superblock: unsupported read-only features 0x%llx",
                 CK_LL(sb->feat_ro_compat));
    return ck->fatal ? -1 : 0;
}

/* ck_region_ok -- region [start, +len) is exactly [expect, +want). */
static bool ck_region_ok(struct ck *ck, const char *what, uint64_t start,
                         uint64_t len, uint64_t expect, uint64_t want)
{
    if (start == expect && len == want)
        return true;
    ck_fatal(ck, "superblock: %s at %llu+%llu, expected %llu+%llu; v1 keeps no "
             "backup superblock", what, CK_LL(start), CK_LL(len), CK_LL(expect),
             CK_LL(want));
    return false;
}

/* ck_super_geometry -- the layout super.c computes, and the device size. */
static int ck_super_geometry(struct ck *ck)
{
    const struct ubj_super *sb = &ck->sb;
    if (sb->nblocks < 256 || sb->nblocks > (1ULL << 40)) {
        ck_fatal(ck, "superblock: block count %llu out of range; v1 keeps no "
                 "backup superblock", CK_LL(sb->nblocks));
        return -1;
    }
    if (sb->nblocks > ck->dev->nblocks) {
        ck_fatal(ck, "superblock: the image has %llu blocks but the device only "
                 "%llu: truncated", CK_LL(sb->nblocks), CK_LL(ck->dev->nblocks));
        return -1;
    }
    if (sb->ninodes < 64 || sb->ninodes % UBJ_INODES_PER_BLOCK ||
        sb->ninodes / UBJ_INODES_PER_BLOCK >= sb->nblocks) {
        ck_fatal(ck, "superblock: inode count %llu invalid; v1 keeps no backup "
                 "superblock", CK_LL(sb->ninodes));
        return -1;
    }
    if (!ck_region_ok(ck, "block bitmap", sb->bb_start, sb->bb_blocks, 1,
                      ck_div_up(sb->nblocks, UBJ_BITMAP_BITS)) ||
        !ck_region_ok(ck, "inode bitmap", sb->ib_start, sb->ib_blocks,
                      sb->bb_start + sb->bb_blocks,
                      ck_div_up(sb->ninodes, UBJ_BITMAP_BITS)) ||
        !ck_region_ok(ck, "inode table", sb->it_start, sb->it_blocks,
                      sb->ib_start + sb->ib_blocks,
                      sb->ninodes / UBJ_INODES_PER_BLOCK))
        return -1;
    uint64_t end = sb->it_start + sb->it_blocks;
    if (sb->journal_start || sb->journal_blocks) {
        if (sb->journal_start != end || sb->journal_blocks == 0 ||
            sb->journal_blocks >= sb->nblocks - end) {
            ck_fatal(ck, "superblock: journal at %llu+%llu out of place",
                     CK_LL(sb->journal_start), CK_LL(sb->journal_blocks));
            return -1;
        }
        end += sb->journal_blocks;
    }
    if (sb->data_start != end || sb->data_start >= sb->nblocks) {
        ck_fatal(ck, "superblock: data area starts at %llu, expected %llu; v1 "
                 "keeps no backup superblock", CK_LL(sb->data_start), CK_LL(end));
        return -1;
    }
    return 0;
}

/* ck_super_fields -- root, mode, state (counts: pass 5; orphans: pass 3). */
static void ck_super_fields(struct ck *ck)
{
    struct ubj_super *sb = &ck->sb;
    const uint32_t known = UBJ_STATE_CLEAN | UBJ_STATE_MOUNTED | UBJ_STATE_ERRORS;
    if (sb->root_ino != UBJ_ROOT_INO) {
        ck_problem(ck, true, "superblock: root inode %llu, expected %u",
                   CK_LL(sb->root_ino), UBJ_ROOT_INO);
        sb->root_ino = UBJ_ROOT_INO;
        ck->sb_dirty = true;
    }
    if (sb->mode > UBJ_FMT_MODE_WRITEBACK)   /* none, ubj, ordered, journal, writeback */
        ck_problem(ck, false, "superblock: unknown consistency mode %u", sb->mode);
    if (sb->state & ~known) {
        ck_problem(ck, true, "superblock: unknown state bits 0x%x",
                   sb->state & ~known);
        sb->state &= known;
        ck->sb_dirty = true;
    }
    if (sb->state & UBJ_STATE_MOUNTED)
        ck_note(ck, "the file system was not cleanly unmounted (state MOUNTED)");
    struct ubj_mode_image img;
    fs_mode_image(sb, ck->dev, !ck->repair, &img);
    const struct ubj_mode_ops *m = ubj_txn_unrecovered(&img);   /* UBJ */
    if (m != NULL) {
        if (ck->repair && !ck->discard_nvm)
            ck_fatal(ck, "mode %s: the newest committed blocks may be only in NVM "
                     "region %016llx; mount the image with its region (which "
                     "recovers them) before repairing it, or, if the region is "
                     "lost, repair without it (--discard-nvm)",
                     m->name, CK_LL(sb->nvm_region_id));
        else if (ck->repair) {
            ck_note(ck, "mode %s: repairing without NVM region %016llx: its "
                    "committed blocks not yet home are given up",
                    m->name, CK_LL(sb->nvm_region_id));
            sb->nvm_region_id = 0;   /* that region may never roll it back */
            sb->mount_mode = 0;
            ck->sb_dirty = true;
        }
        else if (!ubj_nvm_is_view(ck->dev))
            ck_note(ck, "mode %s: unless this is the image with its NVM region "
                    "overlaid, committed blocks may be only in the region", m->name);
    }
    if (sb->state & UBJ_STATE_ERRORS)
        ck_note(ck, "the file system has its ERRORS flag set");
}

/* ck_pass0 -- read and validate the superblock; allocate the maps. */
static int ck_pass0(struct ck *ck)
{
    if (ck->dev->block_size != UBJ_BS) {
        ck_fatal(ck, "device block size %u, ubjfs needs %u", ck->dev->block_size,
                 UBJ_BS);
        return -1;
    }
    if (ubj_bdev_read(ck->dev, 0, 1, ck->tmp) < 0) {
        ck_fatal(ck, "cannot read the superblock (block 0)");
        return -1;
    }
    memcpy(&ck->sb, ck->tmp, sizeof ck->sb);
    if (ck_super_header(ck) < 0 || ck_super_geometry(ck) < 0)
        return -1;
    ck->nb = ck->sb.nblocks;
    ck->ni = ck->sb.ninodes;
    ck->cursor = ck->sb.data_start;
    ck->used = calloc(ck_bwords(ck->nb), sizeof(uint64_t));
    ck->nodes = calloc(ck_bwords(ck->nb), sizeof(uint64_t));
    if (!ck->used || !ck->nodes) {
        ck_fatal(ck, "out of memory for the block maps of %llu blocks", CK_LL(ck->nb));
        return -1;
    }
    ck_bset_range(ck->used, 0, ck->sb.data_start);
    ck_super_fields(ck);
    return ck->fatal ? -1 : 0;
}

/* ---- pass 1: tree nodes (extent and directory trees alike) ------------------- */

/* How the reports name one kind of tree and what its nodes are claimed as. */
struct ck_tree {
    const char *owner;      /* "inode", "directory" */
    const char *node;       /* what a node is called */
    const char *items;      /* what a node holds */
    const char *below;      /* what a dropped node takes with it */
    enum ck_kind kind;      /* the claim of a node */
};

static const struct ck_tree ck_ext_tree = {
    "inode", "extent node", "entries", "the blocks it maps", CK_EXTNODE };
static const struct ck_tree ck_dir_tree = {
    "directory", "node", "records", "the names below it", CK_DIRNODE };

/* ck_node_where -- why node blk cannot be a tree node where it is (outside
 * the data area, or already a node of a tree), or NULL. */
static const char *ck_node_where(const struct ck *ck, uint64_t blk)
{
    if (blk < ck->sb.data_start || blk >= ck->nb)
        return "block outside the data area";
    if (ck_bget(ck->nodes, blk))
        return "block already used by another tree node";
    return NULL;
}

/* ck_node_drop -- report node blk of owner ino's tree as not used (why):
 * the tree is rebuilt without it (*bad). */
static void ck_node_drop(struct ck *ck, const struct ck_tree *t, uint64_t ino,
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
static bool ck_node_accept(struct ck *ck, const struct ck_tree *t, uint64_t rec,
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
    if (!why && (h.max != UBJ_EXT_NODE_MAX || h.entries > h.max || h.entries == 0))
        why = "bad entry count";
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
static void __attribute__((format(printf, 3, 4)))
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
static void ck_file(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
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
static void ck_symlink(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip)
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
static bool ck_special(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip)
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

/* ---- pass 1: directory trees ------------------------------------------------- */

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
    else if (key < lo || key >= hi)
        why = "key outside the node's range";
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
        ck_problem(ck, true, "directory %llu: node %llu: empty leaf below the root",
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
    if (dr->entries != r->entries || dr->nodes != r->nodes ||
        ip->blocks != r->blocks || ip->size != size) {
        ck_problem(ck, true, "directory %llu: records %llu names, %llu nodes, %llu "
                   "blocks, size %llu; found %llu, %llu, %llu, %llu", CK_LL(r->ino),
                   CK_LL(dr->entries), CK_LL(dr->nodes), CK_LL(ip->blocks),
                   CK_LL(ip->size), CK_LL(r->entries), CK_LL(r->nodes),
                   CK_LL(r->blocks), CK_LL(size));
        r->flags |= CK_XDIRCNT;
    }
}

/* ck_dir -- a directory: its B+tree of names. */
static bool ck_dir(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip)
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
static void ck_pass1(struct ck *ck)
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
static bool ck_claim_live(const struct ck *ck, const struct ck_claim *c)
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
static uint64_t ck_dup_sweep(struct ck *ck, bool report)
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
static void ck_pass1b(struct ck *ck)
{
    if (ck->dups)
        ck_dup_sweep(ck, true);
    for (size_t i = 0; i < ck->nclaims; i++)
        ck->claims[i].move = 0;      /* decided again, for live owners, later */
}

/* ---- pass 2: directory entries ---------------------------------------------- */

/* ck_root_make -- a record for a new, empty root directory. */
static void ck_root_make(struct ck *ck)
{
    struct ck_ino *r = ck_find(ck, UBJ_ROOT_INO);
    if (!r) {
        if (!ck_grow(ck, (void **)&ck->recs, &ck->caprecs, ck->nrecs + 1,
                     sizeof *ck->recs))
            return;
        memmove(ck->recs + 1, ck->recs, ck->nrecs * sizeof *ck->recs);
        ck->nrecs++;
        for (size_t i = 0; i < ck->nclaims; i++)
            ck->claims[i].rec++;
        r = &ck->recs[0];
    }
    memset(r, 0, sizeof *r);
    r->ino = UBJ_ROOT_INO;
    r->mode = S_IFDIR | 0755;
    r->nlink = 2;
    r->parent = UBJ_ROOT_INO;
    r->pedge = CK_NONE;
    r->dist = CK_FAR;
    r->claim0 = ck->nclaims;
    r->flags = CK_NEWROOT | CK_RDIR;
}

/* ck_root -- the root must be an in-use directory. */
static void ck_root(struct ck *ck)
{
    struct ck_ino *r = ck_find(ck, UBJ_ROOT_INO);
    if (r && !(r->flags & CK_DEAD) && S_ISDIR(r->mode))
        return;
    if (r && !(r->flags & CK_DEAD)) {
        ck_kill(ck, r, "the root is not a directory");
    }
    ck_problem(ck, true, "root directory missing: make a new empty root (the "
               "rest of the tree becomes unreachable)");
    ck_root_make(ck);
}

/* ck_entry_check -- target in use, not the root or the directory itself,
 * type matching the inode. */
static void ck_entry_check(struct ck *ck, struct ck_ino *d, struct ck_edge *e)
{
    char shown[80];
    struct ck_ino *t = ck_live(ck, e->ino);
    const char *why = !t ? "which is free" : e->ino == UBJ_ROOT_INO ?
                      "the root directory" : e->ino == d->ino ? "the directory itself"
                      : NULL;
    if (why) {
        ck_problem(ck, true, "directory %llu: entry '%s' -> inode %llu, %s: remove it",
                   CK_LL(d->ino), ck_edge_name(ck, e, shown, sizeof shown),
                   CK_LL(e->ino), why);
        e->drop = 1;
        d->flags |= CK_RDIR;
        return;
    }
    unsigned dt = (t->mode & S_IFMT) >> 12;
    if (e->type != dt) {
        ck_problem(ck, true, "directory %llu: entry '%s' has type %u but inode %llu "
                   "is a %s: set the type from the inode", CK_LL(d->ino),
                   ck_edge_name(ck, e, shown, sizeof shown), e->type, CK_LL(e->ino),
                   ck_type_name(t->mode));
        e->type = (uint8_t)dt;
        d->flags |= CK_RDIR;
    }
}

/* ck_live_dir -- record index i if it is a live directory, else NULL. */
static struct ck_ino *ck_live_dir(struct ck *ck, size_t i)
{
    struct ck_ino *d = &ck->recs[i];
    return !(d->flags & CK_DEAD) && S_ISDIR(d->mode) ? d : NULL;
}

/* ck_distances -- breadth-first from the root over every entry kept so
 * far: each reachable directory's distance (in names) from the root. */
static void ck_distances(struct ck *ck)
{
    size_t *queue = malloc((ck->nrecs + 1) * sizeof *queue), qh = 0, qt = 0;
    struct ck_ino *root = ck_live(ck, UBJ_ROOT_INO);
    if (!queue) {
        ck_fatal(ck, "out of memory");
        return;
    }
    root->dist = 0;
    queue[qt++] = (size_t)(root - ck->recs);
    while (qh < qt) {
        struct ck_ino *d = &ck->recs[queue[qh++]];
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (t && S_ISDIR(t->mode) && t->dist == CK_FAR && qt < ck->nrecs) {
                t->dist = d->dist + 1;
                queue[qt++] = (size_t)(t - ck->recs);
            }
        }
    }
    free(queue);
}

/* ck_choose -- give each reachable directory one name, in a directory one
 * step closer to the root (so the names kept form a tree): the one its
 * '..' names if possible (round 0), else the first found (round 1). */
static void ck_choose(struct ck *ck, int round)
{
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        if (!d || d->dist == CK_FAR)
            continue;
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (!t || !S_ISDIR(t->mode) || t->pedge != CK_NONE ||
                t->dist != d->dist + 1 || (round == 0 && t->parent != d->ino))
                continue;
            t->pedge = d->edge0 + k;
            t->pdir = d->ino;
        }
    }
}

/* ck_extra_names -- in reachable directories, drop every name of a
 * directory but the one chosen. */
static void ck_extra_names(struct ck *ck)
{
    char shown[80];
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        if (!d || d->dist == CK_FAR)
            continue;
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (!t || !S_ISDIR(t->mode) || t->pedge == d->edge0 + k)
                continue;
            ck_problem(ck, true, "directory %llu: entry '%s' is a second name of "
                       "directory %llu (named in %llu): remove it", CK_LL(d->ino),
                       ck_edge_name(ck, e, shown, sizeof shown), CK_LL(t->ino),
                       CK_LL(t->pdir));
            e->drop = 1;
            d->flags |= CK_RDIR;
        }
    }
}

/* ck_reach -- walk the names kept from the root: mark what is reachable,
 * count names (files) and subdirectories (directories). */
static void ck_reach(struct ck *ck)
{
    size_t *queue = malloc((ck->nrecs + 1) * sizeof *queue), qh = 0, qt = 0;
    struct ck_ino *root = ck_live(ck, UBJ_ROOT_INO);
    if (!queue) {
        ck_fatal(ck, "out of memory");
        return;
    }
    root->flags |= CK_REACHED;
    root->pdir = UBJ_ROOT_INO;
    queue[qt++] = (size_t)(root - ck->recs);
    while (qh < qt) {
        struct ck_ino *d = &ck->recs[queue[qh++]];
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (!t)
                continue;
            if (!S_ISDIR(t->mode)) {
                t->flags |= CK_REACHED;
                t->counted++;
            } else if (t->pedge == d->edge0 + k && !(t->flags & CK_REACHED) &&
                       qt < ck->nrecs) {
                t->flags |= CK_REACHED;
                d->counted++;
                queue[qt++] = (size_t)(t - ck->recs);
            }
        }
    }
    free(queue);
}

/* ck_parents -- '..' of every reachable directory. */
static void ck_parents(struct ck *ck)
{
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        if (!d || !(d->flags & CK_REACHED) || d->parent == d->pdir ||
            (d->flags & CK_NEWROOT))
            continue;
        ck_problem(ck, true, "directory %llu: '..' is inode %llu, but its name is in "
                   "directory %llu: set '..' to it", CK_LL(d->ino), CK_LL(d->parent),
                   CK_LL(d->pdir));
        d->flags |= CK_XPARENT;
    }
}

/* ck_pass2 -- directory entries, names of directories, reachability. */
static void ck_pass2(struct ck *ck)
{
    ck_root(ck);
    if (ck->fatal)
        return;
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        for (uint64_t k = 0; d && k < d->nedge; k++)
            ck_entry_check(ck, d, &ck->edges[d->edge0 + k]);
    }
    ck_distances(ck);
    if (ck->fatal)
        return;
    ck_choose(ck, 0);
    ck_choose(ck, 1);
    ck_extra_names(ck);
    ck_reach(ck);
    ck_parents(ck);
}

/* ---- pass 3: the orphan list, unreachable inodes ------------------------------ */

/* ck_orphan_walk -- follow the list from the superblock; mark members. */
static void ck_orphan_walk(struct ck *ck)
{
    uint64_t p = ck->sb.orphan_head;
    struct ck_ino *prev = NULL;
    while (p != 0) {
        struct ck_ino *r = p < ck->ni && p != UBJ_ROOT_INO ? ck_live(ck, p) : NULL;
        const char *why = !r ? "is not an in-use inode" : (r->flags & CK_ORPHAN) ?
                          "closes a loop" : r->nlink != 0 ? "has links" :
                          S_ISDIR(r->mode) && r->entries != 0 ?
                          "is a directory holding names" : NULL;
        if (why) {
            ck_problem(ck, true, "orphan list: inode %llu (after %s %llu) %s: cut the "
                       "list there", CK_LL(p), prev ? "inode" : "superblock",
                       CK_LL(prev ? prev->ino : 0), why);
            if (prev) {
                prev->flags |= CK_XONEXT;
            } else {
                ck->sb.orphan_head = 0;
                ck->sb_dirty = true;
            }
            return;
        }
        r->flags |= CK_ORPHAN;
        ck->orphans++;
        prev = r;
        p = r->onext;
    }
}

/* ck_pass3 -- the orphan list; stray orphan links; unreachable inodes. */
static void ck_pass3(struct ck *ck)
{
    ck_orphan_walk(ck);
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *r = &ck->recs[i];
        if (r->flags & CK_DEAD)
            continue;
        if (!(r->flags & CK_ORPHAN) && r->onext != 0) {
            ck_problem(ck, true, "inode %llu: orphan link to %llu but not on the "
                       "orphan list: clear the link", CK_LL(r->ino), CK_LL(r->onext));
            r->flags |= CK_XONEXT;
        }
        if ((r->flags & CK_ORPHAN) && (r->flags & CK_REACHED)) {
            ck_problem(ck, true, "inode %llu is on the orphan list but has names: "
                       "take it off the list", CK_LL(r->ino));
            r->flags = (r->flags & ~CK_ORPHAN) | CK_XONEXT;
            ck->orphans--;
        }
        if (!(r->flags & (CK_REACHED | CK_ORPHAN))) {
            ck_problem(ck, true, "inode %llu (%s, %u links) is not reachable from the "
                       "root: free it (v1 has no lost+found)", CK_LL(r->ino),
                       ck_type_name(r->mode), r->nlink);
            r->flags |= CK_DEAD | CK_LATE;
            continue;
        }
        if ((r->flags & CK_NOTREE) && (r->flags & CK_REACHED)) {
            ck_problem(ck, true, "directory %llu has a name but no tree: give it an "
                       "empty one", CK_LL(r->ino));
            r->flags |= CK_RDIR;
        }
    }
}

/* ---- pass 4: link counts ---------------------------------------------------- */

/* ck_pass4 -- nlink of every reachable inode; orphans. */
static void ck_pass4(struct ck *ck)
{
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *r = &ck->recs[i];
        if ((r->flags & CK_DEAD) || !(r->flags & CK_REACHED))
            continue;
        uint32_t want = S_ISDIR(r->mode) ? 2 + r->counted : r->counted;
        r->counted = want;
        if (r->nlink != want) {
            ck_problem(ck, true, "inode %llu (%s): link count %u, should be %u",
                       CK_LL(r->ino), ck_type_name(r->mode), r->nlink, want);
            r->flags |= CK_XNLINK;
        }
    }
    if (ck->repair && ck->sb.orphan_head != 0) {
        ck->sb.orphan_head = 0;   /* members are freed below or were taken off */
        ck->sb_dirty = true;
    }
    if (ck->orphans == 0)
        return;
    ck_note(ck, "%llu open-but-unlinked inode%s on the orphan list (the next mount "
            "frees them)%s", CK_LL(ck->orphans), ck->orphans == 1 ? "" : "s",
            ck->repair ? ": freeing them now" : "");
    if (!ck->repair)
        return;
    for (size_t i = 0; i < ck->nrecs; i++)
        if (ck->recs[i].flags & CK_ORPHAN)
            ck->recs[i].flags |= CK_DEAD | CK_LATE;
}

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
static void ck_repair(struct ck *ck)
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

/* ---- pass 5: bitmaps and free counts --------------------------------------- */

/* Runs of differing bits, reported as lines (at most CK_MAP_LINES a kind). */
struct ck_runs {
    const char *what;       /* "block" / "inode" */
    uint64_t total;         /* bits that name something */
    uint64_t start, end;    /* current run [start, end) */
    int kind;               /* 1: in use but marked free; 0: the reverse */
    bool open;
    unsigned lines[2];
    uint64_t more[2];
};

/* ck_run_flush -- report the current run. */
static void ck_run_flush(struct ck *ck, struct ck_runs *rs)
{
    if (!rs->open)
        return;
    rs->open = false;
    if (rs->lines[rs->kind] >= CK_MAP_LINES) {
        rs->more[rs->kind]++;
        ck->problems++;
        if (!ck->repair)
            ck->unfixed++;
        return;
    }
    rs->lines[rs->kind]++;
    if (rs->start >= rs->total)
        ck_problem(ck, true, "%s bitmap: bits %llu..%llu past the end are clear",
                   rs->what, CK_LL(rs->start), CK_LL(rs->end - 1));
    else
        ck_problem(ck, true, "%s bitmap: %ss %llu..%llu %s", rs->what, rs->what,
                   CK_LL(rs->start), CK_LL(rs->end - 1),
                   rs->kind ? "are in use but marked free"
                            : "are free but marked in use");
}

/* ck_run_add -- bit `bit` differs (kind as in struct ck_runs). */
static void ck_run_add(struct ck *ck, struct ck_runs *rs, uint64_t bit, int kind)
{
    bool past = bit >= rs->total;
    if (rs->open && rs->end == bit && rs->kind == kind &&
        past == (rs->start >= rs->total)) {
        rs->end++;
        return;
    }
    ck_run_flush(ck, rs);
    rs->open = true;
    rs->start = bit;
    rs->end = bit + 1;
    rs->kind = kind;
}

/* ck_map_word -- the expected word of bits [bit0, bit0 + 64). */
static uint64_t ck_map_word(const uint64_t *want, uint64_t total, uint64_t bit0)
{
    if (bit0 >= total)
        return ~0ULL;
    uint64_t w = want[bit0 / 64];
    if (total - bit0 < 64)
        w |= ~0ULL << (total - bit0);
    return w;
}

/* ck_bitmap -- compare one on-disk bitmap with `found` (the state as found:
 * differences are problems); with a repair, write `after` (the state after
 * the repairs, whose changes were reported where they were decided). */
static void ck_bitmap(struct ck *ck, const char *what, uint64_t start, uint64_t count,
                      uint32_t magic, const uint64_t *found, const uint64_t *after,
                      uint64_t total)
{
    struct ck_runs rs = { .what = what, .total = total };
    uint8_t *b = ck->tmp;
    for (uint64_t k = 0; k < count && !ck->fatal; k++) {
        uint64_t blk = start + k, base = k * UBJ_BITMAP_BITS;
        if (ck_read(ck, blk, b) < 0)
            return;
        const char *why = ck_hdr_why(b, magic, blk);
        if (!why && !ck_crc_ok(ck, b))
            why = "bad checksum";
        bool differs = why != NULL;
        if (why)
            ck_problem(ck, true, "%s bitmap block %llu: %s: rewrite it", what,
                       CK_LL(blk), why);
        for (unsigned w = 0; w < UBJ_BITMAP_BITS / 64; w++) {
            uint64_t bit0 = base + (uint64_t)w * 64, disk;
            uint64_t exp = ck_map_word(found, total, bit0);
            uint64_t now = ck_map_word(after, total, bit0);
            uint8_t *p = b + sizeof(struct ubj_blkhdr) + w * 8u;
            memcpy(&disk, p, 8);
            for (uint64_t diff = exp ^ disk; diff && !why; diff &= diff - 1) {
                unsigned j = (unsigned)__builtin_ctzll(diff);
                ck_run_add(ck, &rs, bit0 + j, (int)((exp >> j) & 1));
            }
            differs |= now != disk;
            memcpy(p, &now, 8);
        }
        if (differs && ck->repair) {
            ck_seal(ck, b, magic, blk);
            ck_write(ck, blk, b);
        }
    }
    ck_run_flush(ck, &rs);
    for (int kind = 0; kind < 2; kind++)
        if (rs.more[kind])
            ck_note(ck, "%s bitmap: %llu more run%s %s", what, CK_LL(rs.more[kind]),
                    rs.more[kind] == 1 ? "" : "s",
                    kind ? "in use but marked free" : "free but marked in use");
}

/* ck_block_map -- metadata and the live claims into `map`; with `found`,
 * the claims as found (before any repair moved or freed them). */
static void ck_block_map(struct ck *ck, uint64_t *map, bool found)
{
    memset(map, 0, ck_bwords(ck->nb) * sizeof(uint64_t));
    ck_bset_range(map, 0, ck->sb.data_start);
    for (size_t i = 0; i < ck->nclaims; i++) {
        const struct ck_claim *c = &ck->claims[i];
        uint32_t f = ck->recs[c->rec].flags;
        if (!c->dead && (!(f & CK_DEAD) || (found && (f & CK_LATE))))
            ck_bset_range(map, c->pblk, c->len);
    }
}

/* ck_inode_map -- inode 0 and the live inodes into `map`. */
static void ck_inode_map(struct ck *ck, uint64_t *map, bool found)
{
    memset(map, 0, ck_bwords(ck->ni) * sizeof(uint64_t));
    ck_bset(map, 0);
    for (size_t i = 0; i < ck->nrecs; i++) {
        uint32_t f = ck->recs[i].flags;
        if ((!(f & CK_DEAD) || (found && (f & CK_LATE))) && !(f & CK_NEWROOT))
            ck_bset(map, ck->recs[i].ino);
    }
}

/* ck_found_maps -- after pass 4, before any repair: what is in use as
 * found (the node map is no longer needed). */
static void ck_found_maps(struct ck *ck)
{
    ck->ifound = calloc(ck_bwords(ck->ni), sizeof(uint64_t));
    if (!ck->ifound) {
        ck_fatal(ck, "out of memory");
        return;
    }
    ck_block_map(ck, ck->nodes, true);
    ck_inode_map(ck, ck->ifound, true);
}

/* ck_pass5 -- bitmaps and the superblock's free counts. */
static void ck_pass5(struct ck *ck)
{
    uint64_t *imap = calloc(ck_bwords(ck->ni), sizeof(uint64_t));
    if (!imap) {
        ck_fatal(ck, "out of memory");
        return;
    }
    ck_block_map(ck, ck->used, false);
    ck_inode_map(ck, imap, false);
    if (ck->repair && ck_find(ck, UBJ_ROOT_INO) &&
        (ck_find(ck, UBJ_ROOT_INO)->flags & CK_NEWROOT))
        ck_bset(imap, UBJ_ROOT_INO);
    ck_bitmap(ck, "block", ck->sb.bb_start, ck->sb.bb_blocks, UBJ_MAGIC_BBITMAP,
              ck->nodes, ck->used, ck->nb);
    ck_bitmap(ck, "inode", ck->sb.ib_start, ck->sb.ib_blocks, UBJ_MAGIC_IBITMAP,
              ck->ifound, imap, ck->ni);
    uint64_t fb = ck->nb - ck_bcount(ck->nodes, ck->nb);
    uint64_t fi = ck->ni - ck_bcount(ck->ifound, ck->ni);
    uint64_t ab = ck->nb - ck_bcount(ck->used, ck->nb);
    uint64_t ai = ck->ni - ck_bcount(imap, ck->ni);
    free(imap);
    if (ck->fatal)
        return;
    bool counted = (ck->sb.state & UBJ_STATE_CLEAN) != 0;   /* lazily written */
    if (counted && (ck->sb.free_blocks != fb || ck->sb.free_inodes != fi))
        ck_problem(ck, true, "superblock: free counts %llu blocks, %llu inodes; "
                   "counted %llu, %llu", CK_LL(ck->sb.free_blocks),
                   CK_LL(ck->sb.free_inodes), CK_LL(fb), CK_LL(fi));
    if (ck->sb.free_blocks != ab || ck->sb.free_inodes != ai) {
        ck->sb.free_blocks = ab;
        ck->sb.free_inodes = ai;
        ck->sb_dirty = true;
    }
}

/* ---- the whole check ------------------------------------------------------------ */

/* ck_finish -- write the superblock if it changed; flush. */
static void ck_finish(struct ck *ck)
{
    if (!ck->repair || ck->fatal)
        return;
    if (ck->unfixed == 0 && (ck->sb.state & UBJ_STATE_ERRORS)) {
        ck->sb.state &= ~UBJ_STATE_ERRORS;
        ck->sb_dirty = true;
    }
    if (ck->sb_dirty) {
        memcpy(ck->tmp, &ck->sb, sizeof ck->sb);
        ck_seal(ck, ck->tmp, UBJ_MAGIC_SUPER, 0);
        ck_write(ck, 0, ck->tmp);
    }
    if (ck->wrote && !ck->fatal) {
        int rc = ubj_bdev_flush(ck->dev);
        if (rc < 0)
            ck_fatal(ck, "cannot flush the device: %s", strerror(-rc));
    }
}

/* ck_run -- every pass; the result code. */
static int ck_run(struct ck *ck)
{
    if (ck_pass0(ck) == 0) {
        ck_pass1(ck);
        if (!ck->fatal)
            ck_pass1b(ck);
        if (!ck->fatal)
            ck_pass2(ck);
        if (!ck->fatal)
            ck_pass3(ck);
        if (!ck->fatal)
            ck_pass4(ck);
        if (!ck->fatal)
            ck_found_maps(ck);
        if (!ck->fatal && ck->repair)
            ck_repair(ck);
        if (!ck->fatal)
            ck_pass5(ck);
        ck_finish(ck);
    }
    if (ck->fatal)
        return UBJ_CHECK_OPERROR;
    if (ck->problems == 0)
        return UBJ_CHECK_CLEAN;
    return ck->repair && ck->unfixed == 0 ? UBJ_CHECK_REPAIRED : UBJ_CHECK_UNCORRECTED;
}

/* ck_free -- release everything ck_run allocated. */
static void ck_free(struct ck *ck)
{
    free(ck->used);
    free(ck->nodes);
    free(ck->ifound);
    free(ck->recs);
    free(ck->claims);
    free(ck->edges);
    free(ck->names);
    for (unsigned i = 0; i < CK_LEVELS; i++)
        free(ck->lv[i]);
    free(ck->iblk);
    free(ck->tmp);
    free(ck);
}

/* ck_journal_image -- the image on ck->dev as the modes see it, if block 0
 * is a ubjfs superblock whose checksum is right (pass 0 judges the rest);
 * else img->dev stays NULL.  0 or -ENOMEM. */
static int ck_journal_image(struct ck *ck, struct ubj_mode_image *img)
{
    memset(img, 0, sizeof *img);
    struct ubj_bdev *dev = ck->dev;
    if (dev->block_size != UBJ_BS || dev->nblocks == 0)
        return 0;
    struct ubj_super *sb = aligned_alloc(UBJ_BS, UBJ_BS);
    if (sb == NULL)
        return -ENOMEM;
    if (ubj_bdev_read(dev, 0, 1, sb) == 0 && sb->hdr.magic == UBJ_MAGIC_SUPER) {
        uint32_t seed = ubj_crc32c(~0u, sb->uuid, 16);   /* else pass 0 reports it */
        struct ubj_blkhdr h = sb->hdr;
        sb->hdr.crc = 0;
        bool ok = ubj_crc32c(seed, sb, UBJ_BS) == h.crc;
        sb->hdr = h;
        if (ok)
            fs_mode_image(sb, dev, !ck->repair, img);
    }
    free(sb);
    return 0;
}

/* ck_journal -- before pass 0: the recovered read-only view the modes give
 * of the image (ubj_txn_view: a log left in the format area replayed) --
 * onto the image with repair, else into an in-memory overlay that the
 * passes then read (*view, destroyed by the caller).  Its note and problem
 * lines are reported here. */
static void ck_journal(struct ck *ck, struct ubj_bdev **view)
{
    struct ubj_mode_view j;
    struct ubj_mode_image img;
    int rc = ck_journal_image(ck, &img);
    if (rc == 0)
        rc = ubj_txn_view(&img, ck->repair, &j);
    if (rc < 0) {
        ck_fatal(ck, "journal: cannot replay: %s", strerror(-rc));
        return;
    }
    if (j.note[0])
        ck_note(ck, "%s", j.note);
    if (j.problem[0])
        ck_problem(ck, ck->repair ? j.fixed : true, "%s", j.problem);
    if (j.view != NULL) {
        *view = j.view;
        ck->dev = j.view;
    }
}

/* ubj_check -- check (and with UBJ_CHECK_REPAIR repair) the image on dev. */
int ubj_check(struct ubj_bdev *dev, unsigned flags,
              void (*report)(void *ctx, const char *line), void *ctx)
{
    struct ck *ck = calloc(1, sizeof *ck);
    bool ok = ck != NULL;
    for (unsigned i = 0; ok && i < CK_LEVELS; i++)
        ok = (ck->lv[i] = malloc(UBJ_BS)) != NULL;
    if (ok)
        ok = (ck->iblk = malloc(UBJ_BS)) && (ck->tmp = malloc(UBJ_BS));
    bool badflags = (flags & ~(UBJ_CHECK_REPAIR | UBJ_CHECK_DISCARD_NVM)) != 0;
    if (!ok || !dev || badflags) {
        char line[64];
        snprintf(line, sizeof line, "%s", !dev ? "no device" : badflags ?
                 "unknown check flags" : "out of memory");
        if (report)
            report(ctx, line);
        else
            fprintf(stderr, "%s\n", line);
        if (ck)
            ck_free(ck);
        return UBJ_CHECK_OPERROR;
    }
    ck->dev = dev;
    ck->repair = (flags & UBJ_CHECK_REPAIR) != 0;
    ck->discard_nvm = (flags & UBJ_CHECK_DISCARD_NVM) != 0;
    ck->report = report;
    ck->rctx = ctx;
    struct ubj_bdev *view = NULL;
    ck_journal(ck, &view);
    int rc = ck->fatal ? UBJ_CHECK_OPERROR : ck_run(ck);
    ubj_bdev_destroy(view);
    ck_free(ck);
    return rc;
}
