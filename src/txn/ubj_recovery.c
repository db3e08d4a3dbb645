/*
 * ubj_recovery.c -- what mode `ubj` shares between mount and fsck: the
 * recovery scan (which descriptors of a region hold the newest committed
 * version of a block), pairing a region with an image (ubj_nvm_attach:
 * the refusals and --format-nvm), the mode's prepare/release, and the
 * read-only overlay device that lets ubj_check run on a pair.
 *
 * Recovery rules (docs/UBJ.md, "Recovery"):
 *  1. A descriptor counts only through its tag (ptag): FROZEN with
 *     0 < txid <= the region's commit record.  Its state, links and every
 *     other word may hold anything a crash left.
 *  2. Per block, the committed version with the highest txid wins; the
 *     others are superseded.  A FROZEN tag beyond the record + 1 is a damaged
 *     region (only the transaction after the record can have been frozen
 *     when the power went).
 *  3. Every other non-zero tag (uncommitted, superseded) is cleared by
 *     mount before anything reuses the buffer.
 *  4. Nothing is replayed: the winners stay where they are, as FROZEN
 *     cached blocks, until a checkpoint writes them home.
 * The scan only reads; mount (ubj.c) applies rule 3 and adopts rule 4;
 * the overlay serves rule 2's winners without changing anything.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "fs/format.h"        /* the superblock's uuid, for the overlay */
#include "txn/ubj.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define UBJ_DEFAULT_BUFS 16384u

/* ---- the scan ------------------------------------------------------------- */

struct scan_table {
    uint64_t *keys;      /* blkno + 1; 0 = empty slot */
    uint32_t *vals;      /* descriptor index */
    uint64_t mask;
};

/* scan_slot -- the slot of blkno (found or empty), linear probing. */
static uint64_t scan_slot(const struct scan_table *t, uint64_t blkno)
{
    uint64_t i = (blkno * 0x9E3779B97F4A7C15ull) >> 20 & t->mask;
    while (t->keys[i] != 0 && t->keys[i] != blkno + 1)
        i = (i + 1) & t->mask;
    return i;
}

/* scan_table_new -- a table for up to n keys.  0 or -ENOMEM. */
static int scan_table_new(struct scan_table *t, uint32_t n)
{
    uint64_t size = 16;
    while (size < 2ull * n)
        size <<= 1;
    t->keys = calloc(size, sizeof *t->keys);
    t->vals = malloc(size * sizeof *t->vals);
    t->mask = size - 1;
    if (t->keys == NULL || t->vals == NULL) {
        free(t->keys);
        free(t->vals);
        return ubj_set_error(-ENOMEM, "ubj: out of memory for recovery");
    }
    return 0;
}

/* ubj_scan_free -- free a scan's lists. */
void ubj_scan_free(struct ubj_scan *s)
{
    free(s->keep);
    free(s->drop);
    memset(s, 0, sizeof *s);
}

/* scan_one -- rules 1-2 for descriptor i; updates the table and drop. */
static int scan_one(const struct ubj_bufdesc *desc, uint32_t i, uint64_t committed,
                    uint64_t dev_nblocks, struct scan_table *t, struct ubj_scan *s)
{
    uint64_t tag = __atomic_load_n(&desc[i].ptag, __ATOMIC_RELAXED);
    if (tag == 0)
        return 0;
    uint64_t txid = ubj_ptag_txid(tag);
    /* only the transaction after the record can have been frozen when the
     * power went (commits are one at a time, and recovery clears its tags
     * before the next one): a later tag means a damaged commit record
     * (issue 22: zeroed, every commit was silently dropped) */
    if ((tag & UBJ_PTAG_FROZEN) && txid > committed + 1)
        return ubj_set_error(-EUCLEAN, "ubj: corrupt NVM region: buffer %u holds a tag of "
                             "transaction %llu, beyond the commit record's %llu + 1", i,
                             (unsigned long long)txid, (unsigned long long)committed);
    if (!(tag & UBJ_PTAG_FROZEN) || txid == 0 || txid > committed) {
        s->drop[s->ndrop++] = i;     /* never committed: a crashed commit */
        return 0;
    }
    uint64_t blkno = desc[i].blkno;
    if ((tag & 0xffu & ~(uint64_t)UBJ_PTAG_KNOWN) || blkno >= dev_nblocks)
        return ubj_set_error(-EUCLEAN, "ubj: corrupt NVM region: buffer %u "
                             "(tag 0x%llx) holds block %llu", i,
                             (unsigned long long)tag, (unsigned long long)blkno);
    uint64_t k = scan_slot(t, blkno);
    if (t->keys[k] == 0) {
        t->keys[k] = blkno + 1;
        t->vals[k] = i;
        return 0;
    }
    uint32_t j = t->vals[k];
    uint64_t jt = ubj_ptag_txid(desc[j].ptag);
    if (jt == txid)
        return ubj_set_error(-EUCLEAN, "ubj: corrupt NVM region: buffers %u "
                             "and %u both hold block %llu of transaction %llu",
                             j, i, (unsigned long long)blkno,
                             (unsigned long long)txid);
    if (jt < txid) {
        t->vals[k] = i;
        s->drop[s->ndrop++] = j;     /* superseded */
    } else {
        s->drop[s->ndrop++] = i;
    }
    return 0;
}

/* ubj_recovery_scan -- the winners and the tags to clear. */
int ubj_recovery_scan(const struct ubj_bufdesc *desc, uint32_t nbufs,
                      uint64_t committed, uint64_t dev_nblocks,
                      struct ubj_scan *out)
{
    struct scan_table t;
    memset(out, 0, sizeof *out);
    int rc = scan_table_new(&t, nbufs);
    if (rc < 0)
        return rc;
    out->drop = malloc((size_t)nbufs * sizeof *out->drop);
    out->keep = malloc((size_t)nbufs * sizeof *out->keep);
    if (out->drop == NULL || out->keep == NULL)
        rc = ubj_set_error(-ENOMEM, "ubj: out of memory for recovery");
    for (uint32_t i = 0; i < nbufs && rc == 0; i++)
        rc = scan_one(desc, i, committed, dev_nblocks, &t, out);
    for (uint64_t k = 0; k <= t.mask && rc == 0; k++)
        if (t.keys[k] != 0)
            out->keep[out->nkeep++] = t.vals[k];
    free(t.keys);
    free(t.vals);
    if (rc < 0)
        ubj_scan_free(out);
    return rc;
}

/* ubj_nvm_pending -- committed blocks not yet home (what recovery keeps). */
int64_t ubj_nvm_pending(struct ubj_nvm *r, uint64_t dev_nblocks)
{
    struct ubj_scan s;
    const struct ubj_nvm_layout *l = ubj_nvm_get_layout(r);
    int rc = ubj_recovery_scan(ubj_nvm_desc(r), l->nbufs, ubj_nvm_committed(r),
                               dev_nblocks, &s);
    if (rc < 0)
        return rc;
    int64_t n = s.nkeep;
    ubj_scan_free(&s);
    return n;
}

/* ---- pairing a region with an image -------------------------------------- */

/* attach_uuid_text -- the usual text form of a uuid. */
static void attach_uuid_text(const uint8_t u[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = '\0';
}

/* attach_check -- refuse a region of another image or layout. */
static int attach_check(struct ubj_nvm *r, uint64_t size, uint32_t nbufs,
                        const uint8_t uuid[16])
{
    const struct ubj_nvm_layout *l = ubj_nvm_get_layout(r);
    if (memcmp(ubj_nvm_uuid(r), uuid, 16) != 0) {
        char a[37], b[37];
        attach_uuid_text(ubj_nvm_uuid(r), a);
        attach_uuid_text(uuid, b);
        return ubj_set_error(-EINVAL, "nvm: %s belongs to another image "
                             "(uuid %s; this image is %s)", ubj_nvm_path(r), a, b);
    }
    if (nbufs != 0 && nbufs != l->nbufs)
        return ubj_set_error(-EINVAL, "nvm: %s has another layout: %u buffers, "
                             "not %u", ubj_nvm_path(r), l->nbufs, nbufs);
    if (size != 0 && size != l->size)
        return ubj_set_error(-EINVAL, "nvm: %s has another layout: %llu bytes, "
                             "not %llu", ubj_nvm_path(r),
                             (unsigned long long)l->size, (unsigned long long)size);
    return 0;
}

/* attach_may_format -- with --format-nvm: 0 if the file may be
 * (re)initialised (missing, not a region, corrupt, or holding nothing
 * committed), else -EBUSY (or the open's error) with the message set. */
static int attach_may_format(const char *path)
{
    struct ubj_nvm *old;
    int rc = ubj_nvm_open(path, 0, &old);
    if (rc == -ENOENT || rc == -EUCLEAN)
        return 0;
    if (rc < 0)
        return rc;
    int64_t pending = ubj_nvm_pending(old, UINT64_MAX);
    char u[37];
    attach_uuid_text(ubj_nvm_uuid(old), u);
    ubj_nvm_close(old);
    if (pending > 0)
        return ubj_set_error(-EBUSY, "nvm: %s holds %lld committed blocks of "
                             "image %s not yet written home: mount once "
                             "without --format-nvm to checkpoint", path,
                             (long long)pending, u);
    return 0;
}

/* ubj_nvm_attach -- open (checked) or format the region of image uuid. */
int ubj_nvm_attach(const char *path, uint64_t size, uint32_t nbufs,
                   const uint8_t uuid[16], unsigned flags, struct ubj_nvm **out)
{
    if (path == NULL || uuid == NULL || out == NULL ||
        (flags & ~(UBJ_NVMA_FORMAT | UBJ_NVMA_RDONLY | UBJ_NVMA_PRIVATE)) ||
        ((flags & UBJ_NVMA_FORMAT) && (flags & (UBJ_NVMA_RDONLY | UBJ_NVMA_PRIVATE))))
        return ubj_set_error(-EINVAL, "nvm: bad attach arguments");
    struct ubj_nvm *r;
    int rc;
    if (!(flags & UBJ_NVMA_FORMAT)) {
        unsigned of = (flags & UBJ_NVMA_RDONLY) ? UBJ_NVM_OPEN_RDONLY :
                      (flags & UBJ_NVMA_PRIVATE) ? UBJ_NVM_OPEN_PRIVATE : 0u;
        rc = ubj_nvm_open(path, of, &r);
        if (rc < 0)
            return rc;
        rc = attach_check(r, size, nbufs, uuid);
        if (rc < 0) {
            ubj_nvm_close(r);
            return rc;
        }
        *out = r;
        return 0;
    }
    struct ubj_nvm_layout l;
    rc = ubj_nvm_layout_for(nbufs == 0 && size == 0 ? UBJ_DEFAULT_BUFS : nbufs,
                            size, &l);
    if (rc == 0)
        rc = attach_may_format(path);
    if (rc == 0)
        rc = ubj_nvm_format(path, &l, uuid, out);
    return rc;
}

/* ubj_region_probe -- id and pending committed blocks of a region file. */
int ubj_region_probe(const char *path, uint64_t *id, int64_t *pending)
{
    struct ubj_nvm *r;
    int rc = ubj_nvm_open(path, UBJ_NVM_OPEN_RDONLY, &r);
    if (rc < 0)
        return rc;
    *id = ubj_nvm_region_id(r);
    *pending = ubj_nvm_pending(r, UINT64_MAX);
    ubj_nvm_close(r);
    return 0;
}

/* ---- the mode's prepare / release ---------------------------------------- */

/* ubj_mode_prepare -- attach the mount's region; the cache lives in it.
 * Its NVM cost model (nvm_profile) runs on the clock of the device's
 * timed model, if there is one: NVM time then passes on the same clock as
 * the device's (slept on a real clock, added on a virtual one). */
int ubj_mode_prepare(const struct ubj_config *cfg, const uint8_t uuid[16],
                     struct ubj_bdev *dev, struct ubj_cache_config *cc,
                     void **arg)
{
    if (cfg == NULL || cfg->nvm_path == NULL || cfg->nvm_path[0] == '\0')
        return ubj_set_error(-EINVAL, "mount: mode ubj needs an NVM region "
                             "(nvm_path; --nvm PATH)");
    if (cfg->nvm_flags & ~UBJ_NVM_FORMAT)
        return ubj_set_error(-EINVAL, "mount: unknown nvm_flags 0x%x",
                             cfg->nvm_flags);
    struct ubj_nvm *r;
    unsigned f = (cfg->nvm_flags & UBJ_NVM_FORMAT) ? UBJ_NVMA_FORMAT : 0u;
    if (cfg->flags & UBJ_MOUNT_RDONLY)    /* the region is the cache's memory, */
        f |= UBJ_NVMA_PRIVATE;            /* but the file stays as it was */
    int rc = ubj_nvm_attach(cfg->nvm_path, cfg->nvm_size, cfg->cache_blocks,
                            uuid, f, &r);
    if (rc < 0)
        return rc;
    if (cfg->nvm_profile != NULL) {
        struct ubj_nvm_model *m;
        struct ubj_bdev *md = dev ? ubj_model_find(dev) : NULL;
        rc = ubj_nvm_model_create(cfg->nvm_profile,
                                  md ? ubj_model_clock(md) : NULL, &m);
        if (rc < 0) {
            ubj_nvm_close(r);
            return rc;   /* the model's message names the profile */
        }
        ubj_nvm_set_model(r, m);
    }
    cc->nbufs = ubj_nvm_get_layout(r)->nbufs;
    cc->desc_mem = ubj_nvm_desc(r);
    cc->data_mem = ubj_nvm_data(r);
    cc->flags |= UBJ_CACHE_ADOPT;
    struct ubj_prep *p = calloc(1, sizeof *p);
    if (p == NULL) {
        ubj_nvm_close(r);
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    }
    p->r = r;
    p->rdonly = (cfg->flags & UBJ_MOUNT_RDONLY) != 0;
    *arg = p;
    return 0;
}

/* ubj_mode_release -- close the region (the cache is gone). */
void ubj_mode_release(void *arg)
{
    struct ubj_prep *p = arg;
    if (p == NULL)
        return;
    ubj_nvm_close(p->r);
    free(p);
}

/* ---- the overlay device --------------------------------------------------- */

struct overlay_bdev {
    struct ubj_bdev base;     /* first: the handle callers hold */
    struct ubj_nvm *r;        /* read-only */
    struct scan_table map;    /* blkno -> descriptor index of the winner */
    const uint8_t *data;
};

/* overlay_of -- the wrapper of d. */
static inline struct overlay_bdev *overlay_of(struct ubj_bdev *d)
{
    return (struct overlay_bdev *)d;
}

/* overlay_find -- the region buffer holding blkno, or NULL. */
static const uint8_t *overlay_find(const struct overlay_bdev *o, uint64_t blkno)
{
    uint64_t k = scan_slot(&o->map, blkno);
    if (o->map.keys[k] == 0)
        return NULL;
    return o->data + (size_t)o->map.vals[k] * UBJ_BS;
}

/* overlay_read -- region blocks from the region, runs of others below. */
static int overlay_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct overlay_bdev *o = overlay_of(d);
    uint8_t *out = buf;
    uint32_t k = 0;
    while (k < count) {
        const uint8_t *src = overlay_find(o, blkno + k);
        if (src != NULL) {
            memcpy(out + (size_t)k * UBJ_BS, src, UBJ_BS);
            k++;
            continue;
        }
        uint32_t run = 1;
        while (k + run < count && overlay_find(o, blkno + k + run) == NULL)
            run++;
        int rc = ubj_bdev_read(d->lower, blkno + k, run, out + (size_t)k * UBJ_BS);
        if (rc < 0)
            return rc;
        k += run;
    }
    return 0;
}

/* overlay_write -- the overlay is read-only. */
static int overlay_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                         const void *buf)
{
    (void)d; (void)blkno; (void)count; (void)buf;
    return ubj_set_error(-EROFS, "nvm overlay: read-only (mount the pair once "
                         "to recover and checkpoint, then repair the image)");
}

/* overlay_flush -- nothing to make durable. */
static int overlay_flush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* overlay_destroy -- close the region, destroy the image device. */
static void overlay_destroy(struct ubj_bdev *d)
{
    struct overlay_bdev *o = overlay_of(d);
    ubj_bdev_destroy(d->lower);
    ubj_nvm_close(o->r);
    free(o->map.keys);
    free(o->map.vals);
    free(o);
}

static const struct ubj_bdev_ops overlay_ops = {
    .version = UBJ_BDEV_OPS_VERSION,
    .name = "nvm-overlay",
    .read = overlay_read,
    .write = overlay_write,
    .flush = overlay_flush,
    .destroy = overlay_destroy,
};

/* overlay_image_uuid -- the uuid in the image's (home) superblock. */
static int overlay_image_uuid(struct ubj_bdev *image, uint8_t uuid[16])
{
    struct ubj_super *sb = aligned_alloc(UBJ_BS, UBJ_BS);
    if (sb == NULL)
        return ubj_set_error(-ENOMEM, "nvm overlay: out of memory");
    int rc = ubj_bdev_read(image, 0, 1, sb);
    if (rc == 0 && sb->hdr.magic != UBJ_MAGIC_SUPER)
        rc = ubj_set_error(-EUCLEAN, "nvm overlay: the image has no ubjfs "
                           "superblock (bad magic)");
    else if (rc < 0)
        rc = ubj_set_error(rc, "nvm overlay: cannot read the image's "
                           "superblock");
    if (rc == 0)
        memcpy(uuid, sb->uuid, 16);
    free(sb);
    return rc;
}

/* overlay_build -- the map of winners.  0 or -errno. */
static int overlay_build(struct overlay_bdev *o, uint64_t nblocks)
{
    struct ubj_scan s;
    const struct ubj_nvm_layout *l = ubj_nvm_get_layout(o->r);
    int rc = ubj_recovery_scan(ubj_nvm_desc(o->r), l->nbufs,
                               ubj_nvm_committed(o->r), nblocks, &s);
    if (rc < 0)
        return rc;
    rc = scan_table_new(&o->map, s.nkeep);
    const struct ubj_bufdesc *desc = ubj_nvm_desc(o->r);
    for (uint32_t k = 0; k < s.nkeep && rc == 0; k++) {
        uint64_t slot = scan_slot(&o->map, desc[s.keep[k]].blkno);
        o->map.keys[slot] = desc[s.keep[k]].blkno + 1;
        o->map.vals[slot] = s.keep[k];
    }
    ubj_scan_free(&s);
    return rc;
}

/* ubj_nvm_is_overlay -- whether d is an overlay of an image and a region. */
int ubj_nvm_is_overlay(const struct ubj_bdev *d)
{
    return d != NULL && d->ops == &overlay_ops;
}

/* ubj_nvm_overlay_create -- image + region's committed blocks, read-only. */
int ubj_nvm_overlay_create(struct ubj_bdev *image, const char *region_path,
                           struct ubj_bdev **out)
{
    uint8_t uuid[16];
    if (image == NULL || region_path == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "nvm overlay: bad arguments");
    if (image->block_size != UBJ_BS)
        return ubj_set_error(-EINVAL, "nvm overlay: block size %u, need %u",
                             image->block_size, UBJ_BS);
    int rc = overlay_image_uuid(image, uuid);
    if (rc < 0)
        return rc;
    struct overlay_bdev *o = calloc(1, sizeof *o);
    if (o == NULL)
        return ubj_set_error(-ENOMEM, "nvm overlay: out of memory");
    rc = ubj_nvm_attach(region_path, 0, 0, uuid, UBJ_NVMA_RDONLY, &o->r);
    if (rc == 0) {
        o->data = ubj_nvm_data(o->r);
        rc = overlay_build(o, image->nblocks);
    }
    if (rc < 0) {
        ubj_nvm_close(o->r);
        free(o);
        return rc;
    }
    o->base.ops = &overlay_ops;
    o->base.block_size = UBJ_BS;
    o->base.guarantees = image->guarantees;
    o->base.nblocks = image->nblocks;
    o->base.lower = image;
    *out = &o->base;
    return 0;
}
