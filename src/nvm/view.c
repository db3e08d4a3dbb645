/*
 * view.c -- the NVM view (ubj_nvm_view_create): an image with the blocks
 * a region holds for it overlaid, read-only, built on the map overlay of
 * src/dev/map.c.  Which buffer of the region holds a block's version to
 * serve is the caller's (the UBJ mode's recovery scan, src/txn/ubj_recovery.c,
 * the one mount runs); this file only pairs the list with the region's
 * memory.  fsck checks a pair through it, unchanged.
 *
 * Invariants: the view owns the region (read-only) and the image once
 * made; its map is fixed (sorted by block, searched without a lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "nvm/nvm_int.h"
#include "ubjfs/bdev.h"
#include "util/util.h"

struct nvm_view {
    struct ubj_nvm *r;
    const uint8_t *data;
    struct ubj_nvm_view_block *e;    /* sorted by blkno */
    uint32_t n;
    size_t bs;
};

static const char view_owner;   /* the owner tag of every NVM view */

/* view_cmp -- order entries by block. */
static int view_cmp(const void *a, const void *b)
{
    const struct ubj_nvm_view_block *x = a, *y = b;
    return x->blkno < y->blkno ? -1 : x->blkno > y->blkno;
}

/* view_find -- the region's copy of blkno, or NULL (map.find). */
static const uint8_t *view_find(void *ctx, uint64_t blkno)
{
    const struct nvm_view *v = ctx;
    uint32_t lo = 0, hi = v->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (v->e[mid].blkno < blkno)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < v->n && v->e[lo].blkno == blkno)
        return v->data + (size_t)v->e[lo].buf * v->bs;
    return NULL;
}

/* view_fini -- close the region (map.fini). */
static void view_fini(void *ctx)
{
    struct nvm_view *v = ctx;
    ubj_nvm_close(v->r);
    free(v->e);
    free(v);
}

/* ubj_nvm_view_create -- the image with the listed region buffers overlaid. */
int ubj_nvm_view_create(struct ubj_bdev *image, struct ubj_nvm *r,
                        const struct ubj_nvm_view_block *blocks, uint32_t nkeep,
                        struct ubj_bdev **out)
{
    if (image == NULL || r == NULL || (nkeep && blocks == NULL) || out == NULL)
        return ubj_set_error(-EINVAL, "nvm overlay: bad arguments");
    struct nvm_view *v = calloc(1, sizeof *v);
    if (v != NULL)
        v->e = malloc(((size_t)nkeep + 1) * sizeof *v->e);
    if (v == NULL || v->e == NULL) {
        free(v);
        return ubj_set_error(-ENOMEM, "nvm overlay: out of memory");
    }
    if (nkeep)
        memcpy(v->e, blocks, (size_t)nkeep * sizeof *v->e);
    qsort(v->e, nkeep, sizeof *v->e, view_cmp);
    v->n = nkeep;
    v->r = r;
    v->data = ubj_nvm_data(r);
    v->bs = image->block_size;
    const struct ubj_bdev_map map = {
        .name = "nvm-overlay",
        .owner = &view_owner,
        .erofs = "nvm overlay: read-only (mount the pair once to recover and "
                 "checkpoint, then repair the image)",
        .find = view_find,
        .fini = view_fini,
        .ctx = v,
    };
    int rc = ubj_bdev_map_create(image, &map, out);
    if (rc < 0) {
        free(v->e);
        free(v);
    }
    return rc;
}

/* ubj_nvm_is_view -- whether d is an NVM view. */
int ubj_nvm_is_view(const struct ubj_bdev *d)
{
    return ubj_bdev_map_owner(d) == &view_owner;
}
