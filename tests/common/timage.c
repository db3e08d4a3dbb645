/*
 * timage.c -- raw image helpers for corruption tests (see testutil.h):
 * copy a device, recompute a metadata block's crc32c the way
 * src/fs/format.h defines it, edit a block in place.  Uses ISA-L's
 * crc32_iscsi directly (the library's own checksum is internal).
 */
#include "testutil.h"

#include <isa-l/crc.h>
#include "fs/format.h"

/* timg_copy -- block by block, 64 at a time. */
int timg_copy(struct ubj_bdev *src, struct ubj_bdev *dst)
{
    static _Thread_local uint8_t buf[64 * UBJ_BS];
    if (dst->nblocks < src->nblocks)
        return -EINVAL;
    for (uint64_t b = 0; b < src->nblocks; b += 64) {
        uint32_t n = (uint32_t)(src->nblocks - b < 64 ? src->nblocks - b : 64);
        int rc = ubj_bdev_read(src, b, n, buf);
        if (rc == 0)
            rc = ubj_bdev_write(dst, b, n, buf);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* timg_reseal -- crc over the block with the crc field zeroed. */
void timg_reseal(void *block, const uint8_t uuid[16])
{
    struct ubj_blkhdr *h = block;
    uint32_t seed = crc32_iscsi((unsigned char *)(uintptr_t)uuid, 16, 0xffffffffu);
    h->crc = 0;
    h->crc = crc32_iscsi(block, (int)UBJ_BS, seed);
}

/* timg_uuid -- uuid from block 0. */
int timg_uuid(struct ubj_bdev *dev, uint8_t uuid[16])
{
    static _Thread_local struct ubj_super sb;
    int rc = ubj_bdev_read(dev, 0, 1, &sb);
    if (rc == 0)
        memcpy(uuid, sb.uuid, 16);
    return rc;
}

/* timg_edit -- read, edit, reseal, write. */
int timg_edit(struct ubj_bdev *dev, uint64_t blkno, int reseal,
              void (*edit)(void *block, void *ctx), void *ctx)
{
    static _Thread_local uint8_t blk[UBJ_BS];
    uint8_t uuid[16];
    int rc = timg_uuid(dev, uuid);
    if (rc == 0)
        rc = ubj_bdev_read(dev, blkno, 1, blk);
    if (rc < 0)
        return rc;
    edit(blk, ctx);
    if (reseal)
        timg_reseal(blk, uuid);
    return ubj_bdev_write(dev, blkno, 1, blk);
}
