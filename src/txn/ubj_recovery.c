/*
 * ubj_recovery.c -- what mode `ubj` shares between mount and fsck: the
 * recovery scan (which descriptors of a region hold the newest committed
 * version of a block), pairing a region with an image (ubjm_attach:
 * the refusals and --format-nvm), the mode's verbs (check_last, prepare,
 * record, error, release) and its view verb: the recovered read-only
 * view of an image and its region that lets ubj_check run on a pair
 * (the device itself is src/nvm/view.c's, on src/dev/map.c).
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
 * the view serves rule 2's winners without changing anything.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "txn/ubj.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define UBJM_DEFAULT_BUFS 16384u

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

/* ubjm_scan_free -- free a scan's lists. */
void ubjm_scan_free(struct ubjm_scan *s)
{
    free(s->keep);
    free(s->drop);
    memset(s, 0, sizeof *s);
}

/* scan_one -- rules 1-2 for descriptor i; updates the table and drop. */
static int scan_one(const struct ubj_bufdesc *desc, uint32_t i, uint64_t committed,
                    uint64_t dev_nblocks, struct scan_table *t, struct ubjm_scan *s)
{
    uint64_t tag = __atomic_load_n(&desc[i].ptag, __ATOMIC_RELAXED);
    if (tag == 0)
        return 0;
    uint64_t txid = ubjm_ptag_txid(tag);
    /* only the transaction after the record can have been frozen when the
     * power went (commits are one at a time, and recovery clears its tags
     * before the next one): a later tag means a damaged commit record
     * (issue 22: zeroed, every commit was silently dropped) */
    if ((tag & UBJM_PTAG_FROZEN) && txid > committed + 1)
        return ubj_set_error(-EUCLEAN, "ubj: corrupt NVM region: buffer %u holds a tag of "
                             "transaction %llu, beyond the commit record's %llu + 1", i,
                             (unsigned long long)txid, (unsigned long long)committed);
    if (!(tag & UBJM_PTAG_FROZEN) || txid == 0 || txid > committed) {
        s->drop[s->ndrop++] = i;     /* never committed: a crashed commit */
        return 0;
    }
    uint64_t blkno = desc[i].blkno;
    if ((tag & 0xffu & ~(uint64_t)UBJM_PTAG_KNOWN) || blkno >= dev_nblocks)
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
    uint64_t jt = ubjm_ptag_txid(desc[j].ptag);
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

/* ubjm_recovery_scan -- the winners and the tags to clear. */
int ubjm_recovery_scan(const struct ubj_bufdesc *desc, uint32_t nbufs,
                      uint64_t committed, uint64_t dev_nblocks,
                      struct ubjm_scan *out)
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
        ubjm_scan_free(out);
    return rc;
}

/* ubjm_pending -- committed blocks not yet home (what recovery keeps). */
int64_t ubjm_pending(struct ubj_nvm *r, uint64_t dev_nblocks)
{
    struct ubjm_scan s;
    const struct ubj_nvm_layout *l = ubj_nvm_get_layout(r);
    int rc = ubjm_recovery_scan(ubj_nvm_desc(r), l->nbufs, ubj_nvm_committed(r),
                               dev_nblocks, &s);
    if (rc < 0)
        return rc;
    int64_t n = s.nkeep;
    ubjm_scan_free(&s);
    return n;
}

/* ---- pairing a region with an image -------------------------------------- */

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
    int64_t pending = ubjm_pending(old, UINT64_MAX);
    char u[37];
    ubj_nvm_uuid_text(ubj_nvm_uuid(old), u);
    ubj_nvm_close(old);
    if (pending > 0)
        return ubj_set_error(-EBUSY, "nvm: %s holds %lld committed blocks of "
                             "image %s not yet written home: mount once "
                             "without --format-nvm to checkpoint", path,
                             (long long)pending, u);
    return 0;
}

/* ubjm_attach -- open (checked) or format the region of image uuid. */
int ubjm_attach(const char *path, uint64_t size, uint32_t nbufs,
                   const uint8_t uuid[16], unsigned flags, struct ubj_nvm **out)
{
    if (path == NULL || uuid == NULL || out == NULL ||
        (flags & ~(UBJM_NVMA_FORMAT | UBJM_NVMA_RDONLY | UBJM_NVMA_PRIVATE)) ||
        ((flags & UBJM_NVMA_FORMAT) && (flags & (UBJM_NVMA_RDONLY | UBJM_NVMA_PRIVATE))))
        return ubj_set_error(-EINVAL, "nvm: bad attach arguments");
    struct ubj_nvm *r;
    int rc;
    if (!(flags & UBJM_NVMA_FORMAT)) {
        unsigned of = (flags & UBJM_NVMA_RDONLY) ? UBJ_NVM_OPEN_RDONLY :
                      (flags & UBJM_NVMA_PRIVATE) ? UBJ_NVM_OPEN_PRIVATE : 0u;
        rc = ubj_nvm_open(path, of, &r);
        if (rc < 0)
            return rc;
        rc = ubj_nvm_pair_check(r, size, nbufs, uuid);
        if (rc < 0) {
            ubj_nvm_close(r);
            return rc;
        }
        *out = r;
        return 0;
    }
    struct ubj_nvm_layout l;
    rc = ubj_nvm_layout_for(nbufs == 0 && size == 0 ? UBJM_DEFAULT_BUFS : nbufs,
                            size, &l);
    if (rc == 0)
        rc = attach_may_format(path);
    if (rc == 0)
        rc = ubj_nvm_format(path, &l, uuid, out);
    return rc;
}

/* ubjm_region_probe -- id and pending committed blocks of a region file. */
int ubjm_region_probe(const char *path, uint64_t *id, int64_t *pending)
{
    struct ubj_nvm *r;
    int rc = ubj_nvm_open(path, UBJ_NVM_OPEN_RDONLY, &r);
    if (rc < 0)
        return rc;
    *id = ubj_nvm_region_id(r);
    *pending = ubjm_pending(r, UINT64_MAX);
    ubj_nvm_close(r);
    return 0;
}

/* ---- the mode's verbs: check the last mount, prepare, record, error ------ */

/* ubjm_unclean -- the image says: mounted in mode ubj and not unmounted
 * cleanly, so its region may hold committed blocks the image lacks. */
static bool ubjm_unclean(const struct ubj_mode_image *img)
{
    return img->mounted && img->last == &ubj_mode_ubj && img->region_id != 0;
}

/*
 * ubjm_check_last -- the last mount was in mode ubj: refuse what would
 * silently drop the committed blocks of an unclean ubj mount -- another
 * mode, or formatting a region that is not the (empty) one it used.
 */
int ubjm_check_last(const struct ubj_mode_image *img, const struct ubj_config *cfg,
                    bool same)
{
    if (!ubjm_unclean(img))
        return 0;
    unsigned long long want = (unsigned long long)img->region_id;
    if (!same)
        return ubj_set_error(-EUCLEAN, "mount: the image was not unmounted "
                             "cleanly from mode ubj: its last committed changes "
                             "are in NVM region %016llx; mount it in mode ubj "
                             "with that region (--nvm), or, if the region is "
                             "lost, repair the image without it (fsck -y "
                             "--discard-nvm)", want);
    if (!cfg || !(cfg->nvm_flags & UBJ_NVM_FORMAT) || !cfg->nvm_path)
        return 0;
    uint64_t id = 0;
    int64_t pending = 0;
    int rc = ubjm_region_probe(cfg->nvm_path, &id, &pending);
    (void)pending;
    if (rc == 0 && id == img->region_id)
        return 0;   /* its own region: attach refuses it if it holds any */
    return ubj_set_error(-EUCLEAN, "mount: refusing --format-nvm: the image was "
                         "not unmounted cleanly and NVM region %016llx may hold "
                         "its last committed changes; mount with that region, "
                         "or, if it is lost, repair the image without it "
                         "(fsck -y --discard-nvm)", want);
}

/* ubjm_check_region -- region r attached: never an older copy of the
 * image's region (its commits would roll the image back); an unclean
 * image comes back with the region it was mounted with (a formatted one
 * is new); another region of a clean image holds nothing. */
static int ubjm_check_region(const struct ubj_config *cfg,
                             const struct ubj_mode_image *img, struct ubj_nvm *r)
{
    if (cfg->nvm_flags & UBJ_NVM_FORMAT)
        return 0;
    uint64_t rid = ubj_nvm_region_id(r);
    if (rid == img->region_id) {
        uint64_t gen = ubj_nvm_mount_gen(r);
        if (gen >= img->gen)
            return 0;
        return ubj_set_error(-EUCLEAN, "mount: %s is an older copy of the image's "
                             "NVM region (mount generation %llu; the image was "
                             "last mounted with %llu): its commits would roll "
                             "the image back; use the current region file",
                             cfg->nvm_path, (unsigned long long)gen,
                             (unsigned long long)img->gen);
    }
    if (!ubjm_unclean(img)) {
        int64_t pending = ubjm_pending(r, img->dev->nblocks);
        if (pending <= 0)
            return 0;
        return ubj_set_error(-EUCLEAN, "mount: %s holds %lld committed blocks of "
                             "an older mount of this image (region %016llx; the "
                             "image was last mounted with %016llx): they would "
                             "roll it back; use --format-nvm to start it afresh",
                             cfg->nvm_path, (long long)pending,
                             (unsigned long long)rid,
                             (unsigned long long)img->region_id);
    }
    return ubj_set_error(-EUCLEAN, "mount: the image was not unmounted cleanly "
                         "from NVM region %016llx, but %s is region %016llx: "
                         "mount with the region it used, or, if it is lost, "
                         "repair the image without it (fsck -y --discard-nvm)",
                         (unsigned long long)img->region_id, cfg->nvm_path,
                         (unsigned long long)rid);
}

/* ubjm_fill -- the cache's fill hook: the device wrote a buffer of the
 * region (a miss or read-ahead), which costs NVM writes. */
static void ubjm_fill(void *ctx, const void *data, size_t len)
{
    ubj_nvm_filled(ctx, data, len);
}

/* ubjm_prepare -- attach the mount's region; the cache lives in it.
 * Its NVM cost model (nvm_profile) runs on the clock of the device's
 * timed model, if there is one: NVM time then passes on the same clock as
 * the device's (slept on a real clock, added on a virtual one). */
int ubjm_prepare(const struct ubj_config *cfg, const struct ubj_mode_image *img,
                     struct ubj_cache_config *cc, void **arg)
{
    if (cfg == NULL || cfg->nvm_path == NULL || cfg->nvm_path[0] == '\0')
        return ubj_set_error(-EINVAL, "mount: mode ubj needs an NVM region "
                             "(nvm_path; --nvm PATH)");
    if (cfg->nvm_flags & ~UBJ_NVM_FORMAT)
        return ubj_set_error(-EINVAL, "mount: unknown nvm_flags 0x%x",
                             cfg->nvm_flags);
    struct ubj_nvm *r;
    unsigned f = (cfg->nvm_flags & UBJ_NVM_FORMAT) ? UBJM_NVMA_FORMAT : 0u;
    if (cfg->flags & UBJ_MOUNT_RDONLY)    /* the region is the cache's memory, */
        f |= UBJM_NVMA_PRIVATE;            /* but the file stays as it was */
    int rc = ubjm_attach(cfg->nvm_path, cfg->nvm_size, cfg->cache_blocks,
                            img->uuid, f, &r);
    if (rc < 0)
        return rc;
    if (cfg->nvm_profile != NULL) {
        struct ubj_nvm_model *m;
        struct ubj_bdev *md = img->dev ? ubj_model_find(img->dev) : NULL;
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
    cc->fill = ubjm_fill;            /* a device read into the region: */
    cc->fill_ctx = r;                /* NVM writes, charged */
    cc->flags |= UBJ_CACHE_ADOPT;
    struct ubjm_prep *p = calloc(1, sizeof *p);
    if (p == NULL) {
        ubj_nvm_close(r);
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    }
    p->r = r;
    p->rdonly = (cfg->flags & UBJ_MOUNT_RDONLY) != 0;
    rc = ubjm_check_region(cfg, img, r);
    if (rc < 0) {
        ubjm_release(p);
        return rc;
    }
    *arg = p;
    return 0;
}

/* ubjm_record -- a read-write mount: number it, in the region first (a
 * crash before the image records it leaves the region newer, which is
 * accepted; an older copy never is); the home superblock must say MOUNTED,
 * mode ubj and the region's id before anything commits (commits go to
 * the region only), with ERRORS if the region recorded a device error. */
int ubjm_record(struct ubj_txn *t, const struct ubj_mode_image *img,
                struct ubj_mode_record *rec)
{
    struct ubjm_prep *p = t->arg;
    rec->region_id = ubj_nvm_region_id(p->r);
    if (rec->region_id == 0)
        return 0;
    uint64_t g = ubj_nvm_mount_gen(p->r);
    if (img->gen > g)
        g = img->gen;
    rec->gen = g + 1;
    int rc = ubj_nvm_set_mount_gen(p->r, rec->gen);
    if (rc < 0)
        return ubj_set_error(rc, "mount: cannot record the mount in the NVM "
                             "region: %s", strerror(-rc));
    struct ubj_nvm_error e;
    rec->errors = ubj_nvm_error_get(p->r, &e) == 1;
    rec->write_home = true;
    return 0;
}

/* ubjm_error -- the region's record of a device error (a checkpoint
 * failed: docs/UBJ.md, "Device errors"); `clear`: forget it. */
int ubjm_error(struct ubj_txn *t, bool clear)
{
    struct ubjm_prep *p = t->arg;
    if (p == NULL)
        return 0;
    if (clear)
        return ubj_nvm_error_clear(p->r);
    struct ubj_nvm_error e;
    return ubj_nvm_error_get(p->r, &e);
}

/* ubjm_release -- close the region (the cache is gone). */
void ubjm_release(void *arg)
{
    struct ubjm_prep *p = arg;
    if (p == NULL)
        return;
    ubj_nvm_close(p->r);
    free(p);
}

/* ---- the recovered view (fsck) ----------------------------------------- */

/*
 * ubjm_view -- the mode's view verb: the image img describes with the
 * committed blocks of the region at `path` overlaid (rule 2's winners, the
 * scan mount's recovery runs), read-only: the region is attached
 * read-only and must belong to the image; the NVM view (src/nvm/view.c)
 * serves the winners.  Owns img->dev once this succeeds.
 */
int ubjm_view(const struct ubj_mode_image *img, const char *path,
              struct ubj_bdev **out)
{
    struct ubj_nvm *r = NULL;
    int rc = ubjm_attach(path, 0, 0, img->uuid, UBJM_NVMA_RDONLY, &r);
    if (rc < 0)
        return rc;
    struct ubjm_scan s;
    const struct ubj_nvm_layout *l = ubj_nvm_get_layout(r);
    rc = ubjm_recovery_scan(ubj_nvm_desc(r), l->nbufs, ubj_nvm_committed(r),
                           img->dev->nblocks, &s);
    struct ubj_nvm_view_block *b = NULL;
    if (rc == 0) {
        b = malloc(((size_t)s.nkeep + 1) * sizeof *b);
        if (b == NULL)
            rc = ubj_set_error(-ENOMEM, "ubj: out of memory for recovery");
        const struct ubj_bufdesc *desc = ubj_nvm_desc(r);
        for (uint32_t k = 0; b != NULL && k < s.nkeep; k++)
            b[k] = (struct ubj_nvm_view_block){ desc[s.keep[k]].blkno, s.keep[k] };
        if (rc == 0)
            rc = ubj_nvm_view_create(img->dev, r, b, s.nkeep, out);
        ubjm_scan_free(&s);
    }
    free(b);
    if (rc < 0)
        ubj_nvm_close(r);
    return rc;
}
