/*
 * reclaim.c -- what a read-write mount does with an image that was not
 * unmounted cleanly (state MOUNTED) from a mode that promises metadata
 * integrity only (UBJ_MODE_META_INTEGRITY in the registry: seed 003's
 * conventional scheme, ordering-critical metadata written synchronously):
 * such a crash may leave leaked blocks and inodes, link counts above the
 * names and stale free counts, and nothing else (docs/GUARANTEES.md).
 * The mount reclaims them ONLY through a full reachability pass -- fsck's
 * (ubj_check, src/fs/check.c) block and inode maps built from every
 * inode's trees and every name -- never from the bitmaps or the orphan
 * list alone, which a crash left in any order.
 *
 * Policy (ubj_config.unclean, `mount -o unclean=`):
 *   UBJ_UNCLEAN_DEFAULT  integrity-only modes: reclaim; other modes:
 *                        nothing here (their own recovery);
 *   UBJ_UNCLEAN_RECLAIM  the same, and also for a mode that keeps nothing
 *                        beside the image and promises nothing (none);
 *   UBJ_UNCLEAN_REFUSE   integrity-only modes: no read-write mount
 *                        (-EUCLEAN) until fsck -y; read-only is allowed.
 * The pass: fsck without repair; clean: nothing to do; leaks only: fsck
 * with repair (it writes the repaired blocks home, sealed, and flushes;
 * the superblock keeps state MOUNTED); corruption: nothing written, the
 * mount comes up read-only with the reason (as -o scrub), ERRORS
 * recorded.  The mount then recounts its free counts from the repaired
 * bitmaps (fs_alloc_scan), so statfs is right at once.
 *
 * Runs in ubj_mount before the mode is mounted and the cache exists, on
 * the device alone: an integrity-only mode has no log or region, the
 * image is all a crash left.  Not for a read-only mount (which writes
 * nothing; its counts are recounted from the bitmaps as after any crash).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "fs/fs.h"
#include "txn/registry.h"

/* What the check reported: the first corruption line, else the first
 * problem line. */
struct reclaim_found {
    char first[200];
    bool corrupt;                /* first is a corruption line */
};

/* reclaim_report -- keep the first corruption line (neither a note nor a
 * leak), else the first leak line. */
static void reclaim_report(void *ctx, const char *line)
{
    struct reclaim_found *f = ctx;
    bool leak = strncmp(line, "leak: ", 6) == 0;
    if (strncmp(line, "note: ", 6) == 0 || f->corrupt ||
        (leak && f->first[0] != '\0'))
        return;
    snprintf(f->first, sizeof f->first, "%s", line);
    f->corrupt = !leak;
}

#if UBJ_TEST_HOOKS
static bool reclaim_break;   /* reclaim-trust-bitmaps: no pass at all */

/* fs_reclaim_test_break -- test builds: skip the reachability pass (the
 * mount then trusts the bitmaps as after any crash). */
void fs_reclaim_test_break(bool on)
{
    reclaim_break = on;
}
#endif

/* reclaim_last_mode -- the registry entry of the mode the image was last
 * mounted in (else the one mkfs recorded), or NULL. */
static const struct ubj_mode_entry *reclaim_last_mode(const struct ubj_super *sb)
{
    const struct ubj_mode_entry *e = ubj_registry_by_code(sb->mount_mode);
    return e != NULL ? e : ubj_registry_by_code(sb->mode);
}

/* reclaim_pass -- fsck; leaks only: fsck with repair.  1 after a repair
 * (the superblock changed on the device), 0 if nothing was written:
 * clean, or -EUCLEAN in fs->reclaim_error (with fs->mount_error)
 * for corruption, or a negative errno that fails the mount. */
static int reclaim_pass(struct ubj_fs *fs, const char *mode)
{
    struct reclaim_found f = { "", false };
    struct ubj_check_result res;
    int rc = ubj_check_ex(fs->dev, 0, reclaim_report, &f, &res);
    if (rc == UBJ_CHECK_CLEAN)
        return 0;
    if (rc == UBJ_CHECK_OPERROR)
        return ubj_set_error(-EUCLEAN, "mount: the leak reclaim's check could not "
                             "run: %s", f.first);
    if (res.corrupt != 0) {
        fs->reclaim_error = -EUCLEAN;
        snprintf(fs->mount_error, sizeof fs->mount_error, "unclean %s image: %.150s "
                 "(%lu problems, %lu of them leaks): read-only until fsck", mode,
                 f.first, res.problems, res.leaks);
        return 0;
    }
    f = (struct reclaim_found){ "", false };
    rc = ubj_check_ex(fs->dev, UBJ_CHECK_REPAIR, reclaim_report, &f, &res);
    if (rc != UBJ_CHECK_REPAIRED || res.unfixed != 0 || res.corrupt != 0)
        return ubj_set_error(-EIO, "mount: reclaiming leaks failed (%d): %s", rc,
                             f.first);
    return 1;
}

/* fs_reclaim -- before the mode mounts: the unclean-image policy above.
 * 0 (nothing to do, or done: *reread says the superblock changed), or a
 * negative errno that fails the mount (-EUCLEAN: refused). */
int fs_reclaim(struct ubj_fs *fs, const struct ubj_config *cfg, bool *reread)
{
    unsigned policy = cfg != NULL ? cfg->unclean : UBJ_UNCLEAN_DEFAULT;
    const struct ubj_mode_entry *e = reclaim_last_mode(&fs->sb);
    *reread = false;
    if (policy > UBJ_UNCLEAN_REFUSE)
        return ubj_set_error(-EINVAL, "mount: unknown unclean policy %u", policy);
    if ((fs->flags & UBJ_MOUNT_RDONLY) || !(fs->sb.state & UBJ_STATE_MOUNTED) ||
        e == NULL)
        return 0;
    bool integrity = e->info.promises.meta == UBJ_MODE_META_INTEGRITY;
    bool alone = e->info.needs == UBJ_MODE_NEEDS_NOTHING;
    if (integrity && policy == UBJ_UNCLEAN_REFUSE)
        return ubj_set_error(-EUCLEAN, "mount: last mounted in mode %s (metadata "
                             "integrity only) and not unmounted cleanly: it may "
                             "hold leaked blocks and inodes; run fsck -y first, "
                             "or mount read-only, or with unclean=reclaim",
                             e->info.name);
    if (!integrity && !(policy == UBJ_UNCLEAN_RECLAIM && alone))
        return 0;
#if UBJ_TEST_HOOKS
    if (reclaim_break)
        return 0;
#endif
    int rc = reclaim_pass(fs, e->info.name);
    *reread = rc == 1;
    return rc < 0 ? rc : 0;
}
