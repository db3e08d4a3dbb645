/*
 * mode.h -- the consistency-mode operations table and the transaction API
 * the file system calls (after jbd2's handle API: jbd2_journal_start,
 * jbd2_journal_get_write_access, jbd2_journal_dirty_metadata,
 * jbd2_journal_stop, jbd2_journal_force_commit).
 *
 * Every file-system operation that changes the image runs as
 *
 *     ubj_txn_start(t, credits, &h);
 *     for each block it changes:
 *         ubj_cache_get(...);                 // or with UBJ_GET_NOREAD
 *         ubj_txn_write_access(h, &b);        // may replace b (UBJ COW)
 *         ...modify b->data...
 *         ubj_txn_dirty(h, b, kind);
 *     ubj_txn_stop(h);
 *
 * and fsync/sync call ubj_txn_commit(t, UBJ_COMMIT_WAIT).  A mode is one
 * `const struct ubj_mode_ops`; src/txn/txn.c dispatches to it and is the
 * one place for tracing.  Modes: none (src/txn/none.c); later ubj,
 * ordered, journal, writeback.
 *
 * Locking: the file system calls every function here with its mount lock
 * held, so a mode sees one operation at a time; a mode's own background
 * work (none: the write-back timer) takes the mount lock too.
 */
#ifndef UBJ_TXN_MODE_H
#define UBJ_TXN_MODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "cache/cache.h"
#include "ubjfs/ubjfs.h"

struct ubj_txn;      /* per-mount mode state */
struct ubj_handle;   /* one file-system operation */
struct ubj_mode_ops;

/*
 * The image as the file system describes it to a mode (from its
 * superblock; the superblock's bytes stay the file system's business):
 * what the verbs below read.  docs/DESIGN.md, "Mode verbs".
 */
struct ubj_mode_image {
    struct ubj_bdev *dev;          /* the image (or a view of it) */
    uint8_t uuid[16];
    uint64_t nblocks;              /* blocks of the file system */
    bool mounted;                  /* not unmounted cleanly (state MOUNTED) */
    bool errors;                   /* state ERRORS */
    const struct ubj_mode_ops *last; /* the mode of the last mount (its
                                      recorded code); NULL: unknown */
    const struct ubj_mode_ops *recorded; /* the image's recorded mode;
                                      NULL: unknown */
    uint64_t region_id;            /* the NVM region that mount used; 0: none */
    uint64_t gen;                  /* the region's mount generation then */
    uint64_t area_start;           /* the format area (the journal's), */
    uint64_t area_blocks;          /* 0 blocks: none */
    bool rdonly;                   /* this mount is read-only */
};

/* What a read-write mount records in the superblock (ubj_txn_record). */
struct ubj_mode_record {
    uint64_t region_id;  /* the region this mount uses; 0: none */
    uint64_t gen;        /* this mount's generation; 0: keep the image's */
    bool errors;         /* a device error the region recorded: ERRORS */
    bool write_home;     /* write the home superblock now (state MOUNTED,
                            this mode, region_id, gen, errors) and flush,
                            before anything commits: commits go elsewhere
                            (UBJ: to the region) */
};

#define UBJ_COMMIT_WAIT 0x1u   /* return only when durable (fsync, sync) */
#define UBJ_COMMIT_DATA 0x2u   /* fdatasync: attributes need not be durable */
#define UBJ_COMMIT_SYNC 0x4u   /* sync(2): also write committed blocks home
                                  (UBJ checkpoints; other modes ignore it) */

#define UBJ_MODE_OPS_VERSION 1u

struct ubj_mode_ops {
    uint32_t version;     /* UBJ_MODE_OPS_VERSION */
    const char *name;     /* "none", ... */
    /* mount: set up state in t->priv; run recovery.  0 or -errno. */
    int (*mount)(struct ubj_txn *t);
    /* unmount: final commit, write everything home, flush.  0 or -EIO. */
    int (*unmount)(struct ubj_txn *t);
    /* start a handle that will dirty at most `credits` blocks. */
    int (*start)(struct ubj_txn *t, uint32_t credits, struct ubj_handle **h);
    /* the caller is about to modify *b; may substitute another buffer. */
    int (*write_access)(struct ubj_handle *h, struct ubj_buf **b);
    /* the caller modified b (kind: data or metadata). */
    int (*dirty)(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind);
    /* block `blkno` was freed within h (revoke). */
    int (*forget)(struct ubj_handle *h, uint64_t blkno);
    /* end the handle; returns 0 or an error the operation must report. */
    int (*stop)(struct ubj_handle *h);
    /* commit (UBJ_COMMIT_* flags). */
    int (*commit)(struct ubj_txn *t, unsigned flags);
    /* the periodic timer fired (every commit_interval_ms). */
    int (*tick)(struct ubj_txn *t);
    /* the cache has no reusable buffer: make room. */
    int (*reclaim)(struct ubj_txn *t);
    /*
     * The verbs of mount and fsck (all optional, NULL: nothing to do),
     * called through src/txn/txn.c only (ubj_txn_check_last,
     * ubj_txn_prepare, ubj_txn_record, ubj_txn_error, ubj_txn_release).
     *
     * check_last: called on the mode the image was last mounted in
     * (img->last) before anything is attached, for a mount in that same
     * mode (`same`) or another: refuse (-EUCLEAN, message set) a mount
     * that would silently drop what that mode's resources still hold.
     */
    int (*check_last)(const struct ubj_mode_image *img,
                      const struct ubj_config *cfg, bool same);
    /*
     * prepare: attach the mode's resources before the cache exists, with
     * the mount's config (may be NULL) and the image's description (its
     * uuid and device: the size; a timed model's clock, which UBJ's NVM
     * cost model shares): the mode may supply the cache's memory and size
     * in *cc (UBJ: its NVM region) and an argument that mount finds in
     * t->arg and release() gets after the cache is destroyed.  It checks
     * the resources against the image (UBJ: never an older copy of the
     * region) and releases them itself when it fails.  0 or -errno with
     * the message set.
     */
    int (*prepare)(const struct ubj_config *cfg, const struct ubj_mode_image *img,
                   struct ubj_cache_config *cc, void **arg);
    /*
     * record: a read-write mount, the mode mounted (recovery done), before
     * anything commits: number this mount in the mode's resources and say
     * in *rec what the superblock must record of it.  0 or -errno.
     */
    int (*record)(struct ubj_txn *t, const struct ubj_mode_image *img,
                  struct ubj_mode_record *rec);
    /*
     * error: 1 if the mode's resources record a device error the image
     * does not have yet (UBJ: a failed checkpoint), 0 if not, or -errno;
     * with `clear`: the image has it now, forget it (0 or -errno).
     */
    int (*error)(struct ubj_txn *t, bool clear);
    /* release: free what prepare() made (after the cache is gone). */
    void (*release)(void *arg);
    /*
     * view: fsck -- the image img describes (img->dev, which the view owns
     * once made) with what the mode's resource at `path` (UBJ: an NVM
     * region) holds for it recovered over it, read-only: the recovery
     * mount runs.  0 and *out, or -errno with the message set.
     */
    int (*view)(const struct ubj_mode_image *img, const char *path,
                struct ubj_bdev **out);
};

struct ubj_txn_stats {
    uint64_t commits, checkpoints;
    uint64_t bytes_journal, bytes_checkpoint;
    uint64_t dev_flushes;
    /* UBJ (zero in other modes) */
    uint64_t nvm_bytes;           /* bytes persisted to NVM (flushed lines) */
    uint64_t nvm_persists;        /* persistence points (drains) */
    uint64_t cow_copies;          /* frozen buffers copied on write */
    uint64_t recovered_blocks;    /* committed blocks kept at mount */
    uint64_t recovery_ns;         /* time of the mount's recovery scan */
    uint64_t nvm_model_ns;        /* NVM cost model: time charged */
    double nvm_model_energy_j;    /* NVM cost model: energy charged */
};

/* Per-mount state shared by the dispatcher and the mode. */
struct ubj_txn {
    const struct ubj_mode_ops *ops;
    struct ubj_cache *cache;
    struct ubj_bdev *dev;
    uint64_t txid;                /* id of the running transaction */
    struct ubj_txn_stats stats;
    void *priv;                   /* the mode's own state */
    void *arg;                    /* from the mode's prepare(); kept by
                                     ubj_txn_mount */
    struct ubj_mode_image img;    /* the image, from ubj_txn_prepare; kept
                                     by ubj_txn_mount */
    pthread_mutex_t *lock;        /* the mount lock, held around every call
                                     here; a mode's tick may release it
                                     around device I/O (UBJ's checkpoint).
                                     Set before ubj_txn_mount (kept by it);
                                     NULL: never released */
};

/* ubj_mode_find -- the mode named `name`, or NULL. */
const struct ubj_mode_ops *ubj_mode_find(const char *name);

/* ---- dispatch (src/txn/txn.c): the file system calls only these ---- */

/*
 * The verbs of mount, in this order (docs/DESIGN.md, "Mode verbs"):
 *
 * ubj_txn_format_reserve -- format: the blocks of the format area for an
 * image of `nblocks` whose data would start at `data_start`: `asked`, or
 * for a mode that keeps its log there the default scaled to the image.
 * 0 and *blocks (0: none); -EINVAL (too small), -ENOSPC (no data left).
 */
int ubj_txn_format_reserve(const struct ubj_mode_ops *ops, uint64_t nblocks,
                           uint64_t data_start, uint64_t asked, uint64_t *blocks);
/* ubj_txn_format_area -- format: an empty log in img's format area
 * (`async`: commit blocks without a flush before them; `zeroed`: the
 * device reads as zeros).  No flush. */
int ubj_txn_format_area(const struct ubj_mode_image *img, bool async, bool zeroed);
/*
 * ubj_txn_check_last -- mount, before anything is attached: a log left in
 * the format area by a mode that keeps one is replayed for a mode that
 * does not (-EROFS read-only); then the last mount's mode may refuse a
 * mount in `ops` that would drop what its resources hold.  0 or -errno.
 */
int ubj_txn_check_last(const struct ubj_mode_ops *ops,
                       const struct ubj_mode_image *img,
                       const struct ubj_config *cfg);
/* ubj_txn_prepare -- mount: attach the resources of mode ops (t->arg, the
 * cache's memory in *cc); t->img = *img.  -EINVAL for NVM options given
 * to a mode without resources.  Undo with ubj_txn_release. */
int ubj_txn_prepare(struct ubj_txn *t, const struct ubj_mode_ops *ops,
                    const struct ubj_config *cfg, const struct ubj_mode_image *img,
                    struct ubj_cache_config *cc);
/* ubj_txn_release -- free what ubj_txn_prepare attached (after the cache
 * is destroyed); t->arg = NULL.  Idempotent. */
void ubj_txn_release(struct ubj_txn *t);
/* ubj_txn_record -- a read-write mount, mode mounted: what the superblock
 * must record (*rec zeroed for a mode without resources).  0 or -errno. */
int ubj_txn_record(struct ubj_txn *t, struct ubj_mode_record *rec);
/* ubj_txn_error -- whether the mode's resources record a device error the
 * image lacks (1, 0, -errno); with `clear`, forget it (0 or -errno). */
int ubj_txn_error(struct ubj_txn *t, bool clear);

/* What ubj_txn_view did, for ubj_check to report. */
struct ubj_mode_view {
    struct ubj_bdev *view;  /* an overlay holding the replay (destroy it
                               after the check), or NULL: check the image */
    char note[200];         /* "" or a note line (recovery done) */
    char problem[240];      /* "" or a problem line */
    bool fixed;             /* the problem was repaired */
};
/*
 * ubj_txn_view -- fsck, before its passes: the recovered view of the image
 * img describes (img->dev NULL: no valid superblock, nothing to do): a
 * log a mode left in the format area replayed -- onto the image when
 * `repair`, else into an in-memory overlay (out->view), so that -n never
 * writes; the same recovery a mount runs (ubj_journal_recover).  Returns
 * 0 (nothing to do), 1 (see *out), or -ENOMEM / -EIO.
 */
int ubj_txn_view(const struct ubj_mode_image *img, bool repair,
                 struct ubj_mode_view *out);

/*
 * ubj_txn_view_region -- fsck: the recovered read-only view of the image
 * img describes with the NVM region at `path` (the view verb of the mode
 * that keeps a region).  Owns img->dev once it succeeds.  0 and *out, or
 * -errno with the message set.
 */
int ubj_txn_view_region(const struct ubj_mode_image *img, const char *path,
                        struct ubj_bdev **out);

/*
 * ubj_txn_unrecovered -- fsck: the mode whose region may hold the newest
 * committed blocks of the image img describes (not unmounted cleanly, and
 * its last mount's or its recorded mode keeps a region), or NULL.
 */
const struct ubj_mode_ops *ubj_txn_unrecovered(const struct ubj_mode_image *img);

int ubj_txn_mount(struct ubj_txn *t, const struct ubj_mode_ops *ops,
                  struct ubj_cache *c, struct ubj_bdev *dev);
int ubj_txn_unmount(struct ubj_txn *t);
int ubj_txn_start(struct ubj_txn *t, uint32_t credits, struct ubj_handle **h);
int ubj_txn_write_access(struct ubj_handle *h, struct ubj_buf **b);
int ubj_txn_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind);
int ubj_txn_forget(struct ubj_handle *h, uint64_t blkno);
int ubj_txn_stop(struct ubj_handle *h);
int ubj_txn_commit(struct ubj_txn *t, unsigned flags);
int ubj_txn_tick(struct ubj_txn *t);
int ubj_txn_reclaim(struct ubj_txn *t);

/* The handle every mode's handles start with. */
struct ubj_handle {
    struct ubj_txn *t;
    uint32_t credits;
    uint32_t used;
};

extern const struct ubj_mode_ops ubj_mode_none;
extern const struct ubj_mode_ops ubj_mode_ubj;
/* the journal modes (src/txn/journal.c, docs/JOURNAL.md) */
extern const struct ubj_mode_ops ubj_mode_ordered, ubj_mode_journal,
    ubj_mode_writeback;

#endif /* UBJ_TXN_MODE_H */
