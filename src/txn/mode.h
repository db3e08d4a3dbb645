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
#include <stdint.h>
#include "cache/cache.h"
#include "ubjfs/ubjfs.h"

struct ubj_txn;      /* per-mount mode state */
struct ubj_handle;   /* one file-system operation */

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
     * Optional (NULL: nothing to prepare).  Called by mount before the
     * cache exists, with the mount's config (may be NULL), the image's
     * uuid and device (its size; a timed model's clock, which UBJ's NVM
     * cost model shares): the mode may supply the cache's memory and size in
     * *cc (UBJ: its NVM region) and an argument that mount finds in
     * t->arg and release() gets after the cache is destroyed.  0 or
     * -errno with the message set.
     */
    int (*prepare)(const struct ubj_config *cfg, const uint8_t uuid[16],
                   struct ubj_bdev *dev, struct ubj_cache_config *cc,
                   void **arg);
    /* Optional: free what prepare() made (after the cache is gone). */
    void (*release)(void *arg);
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
    pthread_mutex_t *lock;        /* the mount lock, held around every call
                                     here; a mode's tick may release it
                                     around device I/O (UBJ's checkpoint).
                                     Set before ubj_txn_mount (kept by it);
                                     NULL: never released */
};

/* ubj_mode_find -- the mode named `name`, or NULL. */
const struct ubj_mode_ops *ubj_mode_find(const char *name);

/* ---- dispatch (src/txn/txn.c): the file system calls only these ---- */

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
