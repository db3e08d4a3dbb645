/*
 * check_util.c -- what every pass of the checker (check.c) shares: reporting,
 * growable arrays, bitmaps in memory, block reads/writes and checksums,
 * the records of inodes, claims and directory entries, inode I/O for repairs.
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
void __attribute__((format(printf, 3, 4)))
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

/* ck_leak -- report a leak: a problem that loses only space (a block or
 * inode marked in use that nothing reachable holds, a link count above
 * the names, a stale free count), as seed 003's integrity-only modes may
 * leave after a crash.  Always fixable; the line starts "leak: ";
 * `blocks` and `inodes` are what it leaks (for the result's totals). */
void __attribute__((format(printf, 4, 5)))
ck_leak(struct ck *ck, uint64_t blocks, uint64_t inodes, const char *fmt, ...)
{
    va_list ap;
    ck->problems++;
    ck->leaks++;
    ck->leaked_blocks += blocks;
    ck->leaked_inodes += inodes;
    va_start(ap, fmt);
    ck_vline(ck, "leak: ", ck->repair ? " [fixed]" : "", fmt, ap);
    va_end(ap);
    if (!ck->repair)
        ck->unfixed++;
}

/* ck_note -- report something worth knowing that is not a problem. */
void __attribute__((format(printf, 2, 3)))
ck_note(struct ck *ck, const char *fmt, ...)
{
    va_list ap;
    ck->notes++;
    va_start(ap, fmt);
    ck_vline(ck, "note: ", "", fmt, ap);
    va_end(ap);
}

/* ck_fatal -- an operational error: the check cannot go on. */
void __attribute__((format(printf, 2, 3)))
ck_fatal(struct ck *ck, const char *fmt, ...)
{
    va_list ap;
    ck->fatal = true;
    va_start(ap, fmt);
    ck_vline(ck, "", "", fmt, ap);
    va_end(ap);
}

/* ck_failed -- a repair promised as fixed could not be made. */
void __attribute__((format(printf, 2, 3)))
ck_failed(struct ck *ck, const char *fmt, ...)
{
    va_list ap;
    ck->unfixed++;
    va_start(ap, fmt);
    ck_vline(ck, "repair failed: ", "", fmt, ap);
    va_end(ap);
}

/* ck_show -- a printable copy of a name for messages. */
const char *ck_show(char *out, size_t cap, const char *name, size_t len)
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
const char *ck_type_name(uint32_t mode)
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
bool ck_grow(struct ck *ck, void **arr, size_t *cap, size_t need, size_t size)
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
void ck_bset_range(uint64_t *m, uint64_t from, uint64_t n)
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
uint64_t ck_bcount(const uint64_t *m, uint64_t n)
{
    uint64_t c = 0;
    for (uint64_t w = 0; w < n / 64; w++)
        c += (uint64_t)__builtin_popcountll(m[w]);
    if (n % 64)
        c += (uint64_t)__builtin_popcountll(m[n / 64] & ((1ULL << (n % 64)) - 1));
    return c;
}

/* ck_bwords -- words for n bits. */
size_t ck_bwords(uint64_t n)
{
    return (size_t)(n / 64 + 1);
}

/* ---- blocks and checksums ----------------------------------------------------- */

/* ck_read -- read block blk; an I/O error is operational. */
int ck_read(struct ck *ck, uint64_t blk, void *buf)
{
    int rc = ubj_bdev_read(ck->dev, blk, 1, buf);
    if (rc < 0)
        ck_fatal(ck, "cannot read block %llu: %s", CK_LL(blk), strerror(-rc));
    return rc;
}

/* ck_write -- write block blk (repair runs only). */
int ck_write(struct ck *ck, uint64_t blk, const void *buf)
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
bool ck_crc_ok(const struct ck *ck, const uint8_t *b)
{
    struct ubj_blkhdr h;
    memcpy(&h, b, sizeof h);
    return h.crc == ck_crc(ck->seed, b);
}

/* ck_hdr_why -- what is wrong with a block's magic or number, or NULL. */
const char *ck_hdr_why(const uint8_t *b, uint32_t magic, uint64_t blk)
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
void ck_seal(const struct ck *ck, uint8_t *b, uint32_t magic, uint64_t blk)
{
    struct ubj_blkhdr h = { .magic = magic, .crc = 0, .blkno = blk };
    memcpy(b, &h, sizeof h);
    h.crc = ck_crc(ck->seed, b);
    memcpy(b, &h, sizeof h);
}

/* ck_zero -- whether a block is all zero. */
bool ck_zero(const uint8_t *b)
{
    static const uint8_t z[UBJ_BS];
    return memcmp(b, z, UBJ_BS) == 0;
}

/* ck_div_up -- ceil(a / b). */
uint64_t ck_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* ---- records, claims, entries ------------------------------------------------ */

/* ck_find -- the record of `ino`, or NULL (binary search). */
struct ck_ino *ck_find(struct ck *ck, uint64_t ino)
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
struct ck_ino *ck_live(struct ck *ck, uint64_t ino)
{
    struct ck_ino *r = ck_find(ck, ino);
    return r && !(r->flags & CK_DEAD) ? r : NULL;
}

/* ck_claim_add -- record that rec holds [pblk, pblk + len); notes overlap. */
bool ck_claim_add(struct ck *ck, uint64_t rec, enum ck_kind kind,
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
void ck_kill_claims(struct ck *ck, const struct ck_ino *r)
{
    for (uint64_t i = r->claim0; i < r->claim0 + r->nclaim && i < ck->nclaims; i++)
        ck->claims[i].dead = 1;
}

/* ck_edge_add -- record a directory entry. */
bool ck_edge_add(struct ck *ck, uint64_t dir, uint64_t ino, uint64_t key,
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
const char *ck_edge_name(const struct ck *ck, const struct ck_edge *e,
                         char *out, size_t cap)
{
    return ck_show(out, cap, ck->names + e->name, e->namelen);
}

/* ---- inode I/O for repairs ------------------------------------------------ */

/* ck_iget -- read the inode block of ino into ck->tmp (a lazy all-zero
 * block gets its header); returns the slot, or NULL on an I/O error. */
struct ubj_inode *ck_iget(struct ck *ck, uint64_t ino, uint64_t *blk)
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
int ck_iput(struct ck *ck, uint64_t blk)
{
    ck_seal(ck, ck->tmp, UBJ_MAGIC_INODES, blk);
    return ck_write(ck, blk, ck->tmp);
}
