/*
 * scrub.c -- UBJ_MOUNT_SCRUB: before a mount goes read-write, run fsck
 * (ubj_check, src/fs/check.c: every pass, without UBJ_CHECK_REPAIR) over
 * the image as the mount sees it, and turn any problem into the sticky
 * -EUCLEAN that makes the mount read-only.  There is no second checker
 * here: only the device the check reads.
 *
 * That device (struct scrub_dev) answers each block from the cache when
 * the cache holds it -- the newest version: what the mode recovered (UBJ's
 * frozen blocks from NVM) and what the mount itself read -- and from the
 * mount's device otherwise.  A cached metadata buffer still waiting for
 * its checksum (UBJ_BUF_SEAL) is sealed in the copy, as it would be on its
 * way to the device.  Reads never enter the cache (ubj_cache_lookup does
 * no I/O), so a scrub leaves the cache as it found it apart from CLOCK
 * bits.  The device is read-only and lives on the stack of fs_scrub;
 * ubj_check may stack its journal overlay on it, whose destroy reaches
 * scrub_destroy, a no-op.
 *
 * Called with fs->lock held during mount, before anything is written.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "fs/fs.h"

struct scrub_dev {
    struct ubj_bdev dev;         /* first: the check's device */
    struct ubj_fs *fs;
};

/* What the check reported. */
struct scrub_found {
    unsigned long problems;      /* lines that are not notes */
    char first[200];             /* the first of them */
};

/* scrub_read -- blocks from the cache, else from the mount's device. */
static int scrub_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct ubj_fs *fs = ((struct scrub_dev *)d)->fs;
    uint8_t *out = buf;
    for (uint32_t k = 0; k < count; k++, out += UBJ_BS) {
        struct ubj_buf *b;
        if (ubj_cache_lookup(fs->cache, blkno + k, &b) < 0) {
            int rc = ubj_bdev_read(fs->dev, blkno + k, 1, out);
            if (rc < 0)
                return rc;
            continue;
        }
        memcpy(out, b->data, UBJ_BS);
        /* flags under the cache's lock */
        bool seal = (ubj_cache_peek(fs->cache, b).flags & UBJ_BUF_SEAL) != 0;
        ubj_cache_put(fs->cache, b);
        if (seal)
            fs_seal(fs, blkno + k, out);
    }
    return 0;
}

/* scrub_write -- never: the check runs without repair. */
static int scrub_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                       const void *buf)
{
    (void)d, (void)blkno, (void)count, (void)buf;
    return ubj_set_error(-EROFS, "scrub: the check tried to write");
}

/* scrub_flush -- nothing to flush. */
static int scrub_flush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* scrub_destroy -- the device is on fs_scrub's stack. */
static void scrub_destroy(struct ubj_bdev *d)
{
    (void)d;
}

static const struct ubj_bdev_ops scrub_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "scrub", .read = scrub_read,
    .write = scrub_write, .flush = scrub_flush, .destroy = scrub_destroy,
};

/* scrub_report -- count the problems, keep the first. */
static void scrub_report(void *ctx, const char *line)
{
    struct scrub_found *f = ctx;
    if (strncmp(line, "note: ", 6) == 0)
        return;
    if (f->problems++ == 0)
        snprintf(f->first, sizeof f->first, "%s", line);
}

/* fs_scrub -- fsck over the mounted image; a finding is -EUCLEAN. */
int fs_scrub(struct ubj_fs *fs)
{
    struct scrub_dev s = {
        .dev = { .ops = &scrub_ops, .block_size = UBJ_BS,
                 .nblocks = fs->dev->nblocks },
        .fs = fs,
    };
    struct scrub_found f = { 0 };
    int rc = ubj_check(&s.dev, 0, scrub_report, &f);
    if (rc == UBJ_CHECK_CLEAN)
        return 0;
    if (!fs->error)
        fs->error = -EUCLEAN;
    if (rc == UBJ_CHECK_OPERROR)
        return ubj_set_error(-EUCLEAN, "scrub: the check could not run: %s: "
                             "read-only until fsck", f.first);
    return ubj_set_error(-EUCLEAN, "scrub: %s (%lu problem%s): read-only until "
                         "fsck", f.first, f.problems, f.problems == 1 ? "" : "s");
}
