/*
 * none.c -- consistency mode `none`: ext2-like write-back caching with no
 * crash guarantees.
 *
 * What it guarantees:
 *  - After a crash: nothing.  Dirty buffers reach the device in whatever
 *    order the cache's eviction, the periodic tick and commits write them,
 *    with no ordering between data and metadata or between blocks, so an
 *    image may need fsck repair and may show any mix of old and new blocks.
 *  - fsync/fdatasync/sync (ubj_txn_commit) write EVERY dirty buffer home
 *    and then flush the device: when it returns 0, everything changed
 *    before the call is durable (not only the file's blocks).
 *  - Unmount writes everything home and flushes.
 *
 * What each operation does:
 *   start         nothing (the handle layer, src/txn/handle.c, allocates
 *                 and counts handles; nested starts share one, as in jbd2)
 *   write_access  nothing: buffers are modified in place
 *   dirty         ubj_cache_mark_dirty(kind, t->txid)
 *   forget        ubj_cache_forget: a freed block's dirty copy is dropped
 *   stop          0
 *   commit        inside the commit barrier (ubj_txn_lock_updates: waits
 *                 for the open handles): ubj_cache_writeback(UBJ_WB_FLUSH);
 *                 counts a commit and a device flush; the next
 *                 transaction id
 *   tick          ubj_cache_writeback without a flush
 *   unmount       a commit, then frees the per-mount state
 * Cache hooks (registered at mount): reclaim only -- ubj_cache_writeback
 * without a flush; no write hooks, so every dirty buffer is written as it
 * is whenever the cache writes it.
 *
 * Invariants: t->priv is a struct none_state from mount to unmount.
 *  N1 A commit runs with no handle open, inside the barrier
 *     (ubj_txn_assert_quiet: aborts in every build): what fsync returns
 *     for is whole operations only (the cache's own write-back, reclaim
 *     and tick, may still write half of one: no crash guarantee).
 *  Credits: the handle layer's default capacity (the cache's buffers);
 *  mode none pins nothing, so reclaim can always write buffers home.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include "txn/mode.h"

/* from src/util/errormsg.c */
int ubj_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Per-mount state of mode none (nothing yet: handles are the layer's). */
struct none_state {
    int unused;
};

/* none_reclaim -- the cache's reclaim hook: make buffers reusable by
 * writing the dirty ones home. */
static int none_reclaim(void *ctx)
{
    struct ubj_txn *t = ctx;
    return ubj_cache_writeback(t->cache, 0);
}

static const struct ubj_cache_hooks none_hooks = { .reclaim = none_reclaim };

/* none_mount -- allocate the per-mount state, register the reclaim hook;
 * there is nothing to recover. */
static int none_mount(struct ubj_txn *t)
{
    struct none_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "mode none: out of memory");
    t->priv = s;
    ubj_cache_set_hooks(t->cache, &none_hooks, t);
    return 0;
}

/* none_commit -- write every dirty buffer home and flush the device,
 * inside the barrier (N1). */
static int none_commit(struct ubj_txn *t, unsigned flags)
{
    (void)flags;   /* durable either way: there is nothing cheaper to do */
    ubj_txn_lock_updates(t);
    ubj_txn_assert_quiet(t, "none commit");   /* N1 */
    int rc = ubj_cache_writeback(t->cache, UBJ_WB_FLUSH);
    t->stats.commits++;
    t->stats.dev_flushes++;
    t->txid++;
    ubj_txn_unlock_updates(t);
    return rc;
}

/* none_unmount -- a final commit, then free the state. */
static int none_unmount(struct ubj_txn *t)
{
    int rc = none_commit(t, UBJ_COMMIT_WAIT);
    free(t->priv);
    t->priv = NULL;
    return rc;
}

/* none_start -- nothing to prepare: the handle layer counts h. */
static int none_start(struct ubj_handle *h)
{
    (void)h;
    return 0;
}

/* none_write_access -- buffers are changed in place: nothing to do. */
static int none_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    (void)h;
    (void)b;
    return 0;
}

/* none_dirty -- mark the buffer DIRTY in the running transaction. */
static int none_dirty(struct ubj_handle *h, struct ubj_buf *b,
                      enum ubj_buf_kind kind)
{
    ubj_cache_mark_dirty(h->t->cache, b, kind, h->t->txid);
    h->used++;
    return 0;
}

/* none_forget -- drop every cached copy of the freed block. */
static int none_forget(struct ubj_handle *h, uint64_t blkno)
{
    ubj_cache_forget(h->t->cache, blkno);
    return 0;
}

/* none_stop -- nothing to finish. */
static int none_stop(struct ubj_handle *h)
{
    (void)h;
    return 0;
}

/* none_tick -- periodic write-back, without a flush (in the background
 * with UBJ_TICK_BACKGROUND). */
static int none_tick(struct ubj_txn *t, unsigned flags)
{
    return ubj_cache_writeback(t->cache, ubj_crit_wb(ubj_tick_crit(flags)));
}

const struct ubj_mode_ops ubj_mode_none = {
    .version = UBJ_MODE_OPS_VERSION,
    .name = "none",
    .mount = none_mount,
    .unmount = none_unmount,
    .start = none_start,
    .write_access = none_write_access,
    .dirty = none_dirty,
    .forget = none_forget,
    .stop = none_stop,
    .commit = none_commit,
    .tick = none_tick,
};
