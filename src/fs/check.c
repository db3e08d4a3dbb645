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
 * Leaks and corruption.  A problem that loses only space is a *leak*
 * (ck_leak: its line starts "leak: ", counted apart in struct
 * ubj_check_result): a block or inode marked in use that nothing in use
 * holds (pass 5), an unreachable inode that names nothing, with its
 * blocks (pass 3), a link count above the names (pass 4), directory
 * counters at or above what the tree holds (pass 1), a wrong free count
 * (pass 5).  The integrity-only modes (seed 003's conventional
 * scheme, UBJ_MODE_META_INTEGRITY) may leave leaks after a crash and
 * nothing else; everything else is *corruption*: a name to a free inode,
 * a block claimed twice, an in-use block or inode marked free, a link
 * count or a directory counter below what is there, an unreachable directory that still holds
 * names, a damaged tree or checksum.  Both are repaired alike.
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
 *
 * Files (one pass or job each; their shared state and functions:
 * check_int.h): check.c pass 0 and the driver (ubj_check); check_util.c
 * reporting, bitmaps, block I/O, records; check_extent.c pass 1's tree
 * nodes and extent trees; check_dir.c pass 1's directory trees;
 * check_inode.c pass 1's inode table and pass 1b; check_names.c passes
 * 2-4; check_bitmap.c pass 5; check_repair.c the repairs.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"
#include "txn/registry.h"    /* the modes an image may record */
#include "ubjfs/nvm.h"        /* is the device an NVM view (image + region) */
#include "fs/check_int.h"

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
    if (ubj_registry_by_code(sb->mode) == NULL)   /* src/txn/registry.c */
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

/* ck_result -- the counts of a finished check into *out. */
static void ck_result(const struct ck *ck, struct ubj_check_result *out)
{
    *out = (struct ubj_check_result){
        .problems = ck->problems,
        .leaks = ck->leaks,
        .corrupt = ck->problems - ck->leaks,
        .unfixed = ck->unfixed,
        .notes = ck->notes,
        .leaked_blocks = ck->leaked_blocks,
        .leaked_inodes = ck->leaked_inodes,
        .fatal = ck->fatal ? 1 : 0,
    };
}

/* ubj_check -- check (and with UBJ_CHECK_REPAIR repair) the image on dev. */
int ubj_check(struct ubj_bdev *dev, unsigned flags,
              void (*report)(void *ctx, const char *line), void *ctx)
{
    return ubj_check_ex(dev, flags, report, ctx, NULL);
}

/* ubj_check_ex -- ubj_check, and the counts of what it found in *res. */
int ubj_check_ex(struct ubj_bdev *dev, unsigned flags,
                 void (*report)(void *ctx, const char *line), void *ctx,
                 struct ubj_check_result *res)
{
    if (res != NULL)
        *res = (struct ubj_check_result){ .fatal = 1 };
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
    if (res != NULL)
        ck_result(ck, res);
    ubj_bdev_destroy(view);
    ck_free(ck);
    return rc;
}
