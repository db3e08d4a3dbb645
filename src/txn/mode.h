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

#include <stdint.h>
#include "cache/cache.h"

struct ubj_txn;      /* per-mount mode state */
struct ubj_handle;   /* one file-system operation */

#define UBJ_COMMIT_WAIT 0x1u   /* return only when durable (fsync, sync) */
#define UBJ_COMMIT_DATA 0x2u   /* fdatasync: attributes need not be durable */

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
};

struct ubj_txn_stats {
    uint64_t commits, checkpoints;
    uint64_t bytes_journal, bytes_checkpoint;
    uint64_t dev_flushes;
};

/* Per-mount state shared by the dispatcher and the mode. */
struct ubj_txn {
    const struct ubj_mode_ops *ops;
    struct ubj_cache *cache;
    struct ubj_bdev *dev;
    uint64_t txid;                /* id of the running transaction */
    struct ubj_txn_stats stats;
    void *priv;                   /* the mode's own state */
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

#endif /* UBJ_TXN_MODE_H */
