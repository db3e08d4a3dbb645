/*
 * check_bitmap.c -- checker pass 5: block and inode bitmaps and the
 * superblock's free counts against the maps built from the claims.
 * Leaks (ck_leak): bits set for what nothing in use holds, wrong free
 * counts; the reverse (in use but marked free) and clear bits past the
 * end are corruption.
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

/* ---- pass 5: bitmaps and free counts --------------------------------------- */

/* Runs of differing bits, reported as lines (at most CK_MAP_LINES a kind). */
struct ck_runs {
    const char *what;       /* "block" / "inode" */
    uint64_t total;         /* bits that name something */
    uint64_t start, end;    /* current run [start, end) */
    int kind;               /* 1: in use but marked free; 0: the reverse */
    bool open;
    bool inode;             /* the inode bitmap (leaks count inodes) */
    unsigned lines[2];
    uint64_t more[2];
};

/* ck_run_flush -- report the current run. */
static void ck_run_flush(struct ck *ck, struct ck_runs *rs)
{
    if (!rs->open)
        return;
    rs->open = false;
    /* marked in use, held by nothing: a leak (of blocks or inodes) */
    bool leak = rs->kind == 0 && rs->start < rs->total;
    uint64_t n = rs->end - rs->start;
    uint64_t lb = leak && !rs->inode ? n : 0, li = leak && rs->inode ? n : 0;
    if (rs->lines[rs->kind] >= CK_MAP_LINES) {
        rs->more[rs->kind]++;
        ck->problems++;
        if (!ck->repair)
            ck->unfixed++;
        if (leak) {
            ck->leaks++;
            ck->leaked_blocks += lb;
            ck->leaked_inodes += li;
        }
        return;
    }
    rs->lines[rs->kind]++;
    if (rs->start >= rs->total)
        ck_problem(ck, true, "%s bitmap: bits %llu..%llu past the end are clear",
                   rs->what, CK_LL(rs->start), CK_LL(rs->end - 1));
    else if (leak)
        ck_leak(ck, lb, li, "%s bitmap: %ss %llu..%llu are free but marked in use",
                rs->what, rs->what, CK_LL(rs->start), CK_LL(rs->end - 1));
    else
        ck_problem(ck, true, "%s bitmap: %ss %llu..%llu are in use but marked free",
                   rs->what, rs->what, CK_LL(rs->start), CK_LL(rs->end - 1));
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
    struct ck_runs rs = { .what = what, .total = total,
                          .inode = magic == UBJ_MAGIC_IBITMAP };
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
void ck_found_maps(struct ck *ck)
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
void ck_pass5(struct ck *ck)
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
        ck_leak(ck, 0, 0, "superblock: free counts %llu blocks, %llu inodes; "
                "counted %llu, %llu", CK_LL(ck->sb.free_blocks),
                CK_LL(ck->sb.free_inodes), CK_LL(fb), CK_LL(fi));
    if (ck->sb.free_blocks != ab || ck->sb.free_inodes != ai) {
        ck->sb.free_blocks = ab;
        ck->sb.free_inodes = ai;
        ck->sb_dirty = true;
    }
}
