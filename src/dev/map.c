/*
 * map.c -- the read-only map overlay (ubj_bdev_map_create), one of the
 * overlay family (include/ubjfs/bdev.h; src/dev/cow.c): the blocks its
 * map names are served from the map's memory, runs of the others from the
 * lower device; nothing is ever written.  The NVM view of an image and
 * its region (src/nvm/view.c) is one: fsck checks the pair through it.
 *
 * Invariants: the map is fixed at creation (find is called without a
 * lock, so it must not change); the overlay owns lower and destroys it
 * before calling map.fini.  Geometry and guarantees are lower's.
 * Interface v2: its submit is its own calls (dev_submit_calls), completed
 * in the caller's thread; every write (FUA or not) is -EROFS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dev/dev_int.h"
#include "ubjfs/bdev.h"
#include "util/util.h"

#define MAP_BS UBJ_BLOCK_SIZE

struct map_bdev {
    struct ubj_bdev base;       /* first: the handle callers hold */
    struct ubj_bdev_ops ops;    /* named after the map (map.name) */
    struct ubj_bdev_map map;
};

/* map_of -- the overlay embedding d, or NULL. */
static inline struct map_bdev *map_of(const struct ubj_bdev *d)
{
    return ubj_bdev_kind(d) == UBJ_BDEV_KIND_MAP ? (struct map_bdev *)d : NULL;
}

/* map_read -- mapped blocks from the map, runs of others from below. */
static int map_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct map_bdev *m = map_of(d);
    uint8_t *out = buf;
    uint32_t k = 0;
    while (k < count) {
        const uint8_t *src = m->map.find(m->map.ctx, blkno + k);
        if (src != NULL) {
            memcpy(out + (size_t)k * MAP_BS, src, MAP_BS);
            k++;
            continue;
        }
        uint32_t run = 1;
        while (k + run < count && m->map.find(m->map.ctx, blkno + k + run) == NULL)
            run++;
        int rc = ubj_bdev_read(d->lower, blkno + k, run, out + (size_t)k * MAP_BS);
        if (rc < 0)
            return rc;
        k += run;
    }
    return 0;
}

/* map_write -- the overlay is read-only. */
static int map_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                     const void *buf)
{
    (void)blkno; (void)count; (void)buf;
    return ubj_set_error(-EROFS, "%s", map_of(d)->map.erofs);
}

/* map_flush -- nothing is ever written. */
static int map_flush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* map_destroy -- destroy the lower device, then let the map go. */
static void map_destroy(struct ubj_bdev *d)
{
    struct map_bdev *m = map_of(d);
    ubj_bdev_destroy(d->lower);
    if (m->map.fini != NULL)
        m->map.fini(m->map.ctx);
    free(m);
}

/* ubj_bdev_map_create -- a read-only map overlay over lower. */
int ubj_bdev_map_create(struct ubj_bdev *lower, const struct ubj_bdev_map *map,
                        struct ubj_bdev **out)
{
    if (lower == NULL || map == NULL || map->find == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "map bdev: bad argument");
    struct map_bdev *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ubj_set_error(-ENOMEM, "map bdev: out of memory");
    m->map = *map;
    if (m->map.erofs == NULL)
        m->map.erofs = "map bdev: read-only";
    m->ops = (struct ubj_bdev_ops){
        .version = UBJ_BDEV_OPS_V2,
        .name = map->name ? map->name : "map",
        .read = map_read,
        .write = map_write,
        .flush = map_flush,
        .destroy = map_destroy,
        .submit = dev_submit_calls,     /* synchronous, in the caller's thread */
    };
    dev_wrap_init(&m->base, &m->ops, lower);
    m->base.kind = UBJ_BDEV_KIND_MAP;
    *out = &m->base;
    return 0;
}

/* ubj_bdev_map_owner -- the creator's tag of a map overlay. */
const void *ubj_bdev_map_owner(const struct ubj_bdev *d)
{
    const struct map_bdev *m = map_of(d);
    return m != NULL ? m->map.owner : NULL;
}

/* ubj_bdev_map_ctx -- the map's context. */
void *ubj_bdev_map_ctx(const struct ubj_bdev *d)
{
    const struct map_bdev *m = map_of(d);
    return m != NULL ? m->map.ctx : NULL;
}
