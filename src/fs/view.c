/*
 * view.c -- the recovered read-only view of an image and its NVM region
 * for fsck (ubj_nvm_overlay_create): the file system reads the image's
 * superblock (its uuid: the region must belong to the image) and hands
 * the image's description to the view verb of the mode that keeps a
 * region (ubj_txn_view_region), which recovers the region's committed
 * blocks over it as its mount would.  The file system names no mode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "fs/fs.h"

/* view_read_super -- block 0 of the image, if it has a ubjfs magic. */
static int view_read_super(struct ubj_bdev *image, struct ubj_super *sb)
{
    int rc = ubj_bdev_read(image, 0, 1, sb);
    if (rc == 0 && sb->hdr.magic != UBJ_MAGIC_SUPER)
        rc = ubj_set_error(-EUCLEAN, "nvm overlay: the image has no ubjfs "
                           "superblock (bad magic)");
    else if (rc < 0)
        rc = ubj_set_error(rc, "nvm overlay: cannot read the image's "
                           "superblock");
    return rc;
}

/* ubj_nvm_overlay_create -- image + region's committed blocks, read-only. */
int ubj_nvm_overlay_create(struct ubj_bdev *image, const char *region_path,
                           struct ubj_bdev **out)
{
    if (image == NULL || region_path == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "nvm overlay: bad arguments");
    if (image->block_size != UBJ_BS)
        return ubj_set_error(-EINVAL, "nvm overlay: block size %u, need %u",
                             image->block_size, UBJ_BS);
    struct ubj_super *sb = aligned_alloc(UBJ_BS, UBJ_BS);
    if (sb == NULL)
        return ubj_set_error(-ENOMEM, "nvm overlay: out of memory");
    int rc = view_read_super(image, sb);
    struct ubj_mode_image img;
    if (rc == 0)
        fs_mode_image(sb, image, true, &img);
    free(sb);
    if (rc == 0)
        rc = ubj_txn_view_region(&img, region_path, out);
    return rc;
}
