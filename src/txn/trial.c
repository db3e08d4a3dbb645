/*
 * trial.c -- consistency mode `trial`, test-only (UBJ_TEST_HOOKS builds):
 * the proof that a mode is this one file plus one entry in
 * src/txn/registry.c (docs/DESIGN.md, "Adding a consistency mode").  With
 * only that, mkfs, fsck, inspect, bench and crashtest know it
 * (tests/tools/trialmode.sh).
 *
 * What it guarantees: what `none` does (src/txn/none.c) -- nothing after a
 * crash; fsync/sync write everything home and flush.  Every operation is
 * none's, reached through its table, so the mode has no state of its own.
 *
 * Owns: ubj_mode_trial.
 */
#if UBJ_TEST_HOOKS
#include "txn/mode.h"

/* trial_mount -- none's mount. */
static int trial_mount(struct ubj_txn *t) { return ubj_mode_none.mount(t); }
/* trial_unmount -- none's unmount. */
static int trial_unmount(struct ubj_txn *t) { return ubj_mode_none.unmount(t); }
/* trial_start -- none's start. */
static int trial_start(struct ubj_txn *t, uint32_t credits, struct ubj_handle **h)
{
    return ubj_mode_none.start(t, credits, h);
}
/* trial_write_access -- none's write_access. */
static int trial_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    return ubj_mode_none.write_access(h, b);
}
/* trial_dirty -- none's dirty. */
static int trial_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    return ubj_mode_none.dirty(h, b, kind);
}
/* trial_forget -- none's forget. */
static int trial_forget(struct ubj_handle *h, uint64_t blkno)
{
    return ubj_mode_none.forget(h, blkno);
}
/* trial_stop -- none's stop. */
static int trial_stop(struct ubj_handle *h) { return ubj_mode_none.stop(h); }
/* trial_commit -- none's commit. */
static int trial_commit(struct ubj_txn *t, unsigned flags)
{
    return ubj_mode_none.commit(t, flags);
}
/* trial_tick -- none's tick. */
static int trial_tick(struct ubj_txn *t) { return ubj_mode_none.tick(t); }

const struct ubj_mode_ops ubj_mode_trial = {
    .version = UBJ_MODE_OPS_VERSION,
    .name = "trial",
    .mount = trial_mount,
    .unmount = trial_unmount,
    .start = trial_start,
    .write_access = trial_write_access,
    .dirty = trial_dirty,
    .forget = trial_forget,
    .stop = trial_stop,
    .commit = trial_commit,
    .tick = trial_tick,
};
#else
typedef int trial_unused;   /* ISO C: a translation unit is not empty */
#endif
