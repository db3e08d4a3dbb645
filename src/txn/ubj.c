/*
 * ubj.c -- consistency mode `ubj`: the buffer cache lives in an NVM region
 * and is the journal (Lee, Bahn, Noh: "Unioning of the Buffer Cache and
 * Journaling Layers with Non-volatile Memory", FAST'13 / ACM TOS 2014).
 * A transaction commits by freezing its dirty buffers in place; frozen
 * buffers serve reads until a checkpoint writes them home.  docs/UBJ.md
 * has the state machine, every persist with its reason, the recovery
 * rules and the crash-point argument; this comment is the summary.
 *
 * States (struct ubj_bufdesc.state, volatile meaning) and who moves them:
 *
 *   FREE/CLEAN --ubjm_dirty (mark_dirty)------------------------> DIRTY
 *   FROZEN ----ubjm_write_access (ubj_cache_cow: copy)--> new DIRTY version
 *   DIRTY -----ubjm_commit phase 1 (tag stored+flushed)---------> FROZEN
 *   FROZEN ----ubjm_commit phase 3 (a newer version committed)--> FROZEN_OLD
 *   FROZEN ----ubjm_forget (ubj_cache_revoke: block freed)------> FROZEN_OLD
 *   FROZEN_OLD-ubjm_free_olds (tag 0 persisted, after the commit
 *              that superseded or freed it is durable)---------> FREE
 *   FROZEN ----ubjm_ckpt_finish (written home, device flushed,
 *              tag 0 persisted)--------------------------------> CLEAN
 *   DIRTY/CLEAN -ubjm_forget (dropped: never committed/home)----> FREE
 *
 * Commit of transaction T (ubjm_commit_locked), at a handle boundary only:
 *   1. for each DIRTY buffer of T: seal (metadata crc), flush its 4 KiB,
 *      store its tag (T, FROZEN) and flush its descriptor; plus the tags
 *      of FROZEN_OLD buffers whose successor is already committed: 0;
 *      DRAIN -- persistence point P1: T's buffers are durable
 *   2. store the commit record := T; PERSIST -- point P2: T is committed
 *   3. the versions T superseded become FROZEN_OLD (freed at the next P1)
 * Checkpoint: write every FROZEN buffer home, flush the device, free the
 * out-of-date versions (DRAIN), store the written buffers' tags 0 (DRAIN),
 * then CLEAN.  ubjm_checkpoint_locked does it all under the mount lock;
 * the timer's ubjm_checkpoint_unlocked releases the lock around the
 * device I/O, so writers continue meanwhile.
 *
 * The mount (docs/UBJ.md, "Device errors"):
 *
 *   RUNNING --any checkpoint's device write or flush fails------> ERROR
 *            (ubjm_ckpt_failed: s->error sticky, the region's
 *             device-error record persisted)
 *   ERROR: every buffer keeps its state -- FROZEN ones stay, the only
 *   good copy; no handle starts (-EROFS: ubjm_start), no commit
 *   (ubjm_commit_locked: the running transaction may hold half an
 *   operation), no checkpoint, and unmount returns the error leaving the
 *   region as it is; the next mount recovers it like a crash.  A failed
 *   NVM drain enters ERROR too (ubjm_fail), without a record.
 *
 * Invariants (checked by asserts; docs/UBJ.md numbers them):
 *  U1 A descriptor's durable tag is non-zero only while its buffer is
 *     FROZEN or FROZEN_OLD (or in the middle of commit phase 1).
 *  U2 While a durable tag is committed, the buffer's blkno and bytes do
 *     not change (the fs writes DIRTY buffers only; FROZEN ones are copied
 *     on write; a tag is cleared, durably, before its buffer is reused).
 *  U3 A FROZEN_OLD buffer's tag is cleared only after the commit that
 *     superseded or freed it is durable (free_after <= committed).
 *  U4 DIRTY buffers are PINNED: the cache never writes them home (nothing
 *     uncommitted reaches the device); they belong to the running txn.
 *  U5 Commit runs only with no handle open and never in ERROR: a commit
 *     never cuts a file-system operation in half.  Every commit takes the
 *     handle layer's barrier (ubjm_commit_locked: ubj_txn_lock_updates
 *     waits for the open handles to stop) and checks it inside
 *     (ubj_txn_assert_quiet, which aborts in every build); reclaim, called
 *     from inside an operation, commits only at a safe point
 *     (ubj_txn_safe_point), never waiting.  The mount lock guards all of
 *     this and every access to the region; the timer's checkpoint releases
 *     it around writing home and flushing the device, the handle layer
 *     while it waits.
 *  U6 Open handles reserve credits against half of the region's buffers
 *     (ubj_handles_set_capacity at mount; a start waits for room), and a
 *     start commits first when the running transaction plus every open
 *     handle's credits would pass its limit: overlapping handles cannot
 *     pin the region full of uncommitted buffers.
 *
 * Policy: fsync/fdatasync/sync commit at once (no device flush: the NVM
 * is the durability point); the timer commits every commit interval; a
 * handle start commits first when the running transaction would exceed a
 * tenth of the cache (its buffers are pinned).  Checkpoint when frozen buffers exceed half the
 * cache at a handle start, or a quarter at a tick, after 6 ticks with
 * frozen buffers (30 s by default), when the cache needs room (reclaim),
 * on sync and on unmount -- and commit and checkpoint at a handle start
 * when CLOCK has met cold frozen or pinned buffers worth an eighth of the
 * cache since the last checkpoint (they crowd out hot clean blocks).
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "txn/ubj.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define UBJ_BS 4096u
#define UBJM_DIRTY_PERMILLE 100u      /* running txn limit: 1/10 of the cache */
#define UBJM_FROZEN_PERMILLE 500u     /* checkpoint beyond 1/2 of the cache */
#define UBJM_CKPT_AGE_TICKS 6u        /* checkpoint after 6 commit intervals */
#define UBJM_COLD_FRACTION 8u         /* ... or when CLOCK met cold frozen
                                        buffers worth 1/8 of the cache */

/* A FROZEN_OLD buffer waiting for the commit that allows freeing it. */
struct ubjm_old {
    uint32_t idx;
    uint64_t free_after;     /* free once committed >= this txid */
};

/* Per-mount state of mode ubj [the mount lock]. */
struct ubjm_state {
    struct ubj_nvm *r;
    uint32_t nbufs;
    uint64_t committed;      /* == the region's commit record */
    uint32_t *txn;           /* buffers dirtied in the running txn (may hold
                                stale entries: checked at commit) */
    uint32_t ntxn;
    uint64_t *listed;        /* listed[i] == txid: i is in txn[] */
    struct ubjm_old *olds;    /* FROZEN_OLD buffers, each once */
    uint32_t nolds;
    uint32_t *scratch;       /* nbufs indices: checkpoint list, revokes */
    uint32_t *ckpt;          /* nbufs indices: the timer's checkpoint list */
    uint64_t *ckpt_txid;     /* nbufs: txid of each ckpt[] buffer, listed */
    uint64_t *scratch_txid;  /* nbufs: the same for a scratch[] list */
    uint32_t max_dirty, max_frozen;
    uint32_t ticks_frozen;   /* ticks since the last checkpoint with frozen */
    uint64_t cold;           /* cold frozen buffers CLOCK met since then */
    bool rdonly;             /* read-only mount: never write home */
    bool revoked;            /* the running txn freed frozen blocks */
    int error;               /* sticky NVM or checkpoint error: read-only */
    uint32_t error_where;    /* UBJ_NVM_ERR_* of a checkpoint error, or 0 */
#ifndef NDEBUG
    uint32_t *crc;           /* crc32c of each frozen buffer's bytes (U2) */
#endif
};

/* ---- test hooks ----------------------------------------------------------- */

static unsigned ubjm_lim_dirty, ubjm_lim_frozen;

/* ubjm_test_limits -- override the commit/checkpoint thresholds. */
void ubjm_test_limits(unsigned dirty_permille, unsigned frozen_permille)
{
    ubjm_lim_dirty = dirty_permille;
    ubjm_lim_frozen = frozen_permille;
}

#if UBJ_TEST_HOOKS   /* broken variants and callbacks: a test build only */
static int ubjm_break_mode = -1;              /* -1: read UBJ_TEST_BREAK */
static void (*ubjm_commit_cb)(void *, uint64_t);
static void *ubjm_commit_ctx;
static void (*ubjm_point_cb)(void *, enum ubjm_test_point);
static void *ubjm_point_ctx;

/* ubjm_test_break -- select a deliberately broken variant. */
void ubjm_test_break(enum ubjm_break which)
{
    ubjm_break_mode = (int)which;
}

/* ubjm_test_on_commit -- a callback after each durable commit record. */
void ubjm_test_on_commit(void (*cb)(void *ctx, uint64_t txid), void *ctx)
{
    ubjm_commit_cb = cb;
    ubjm_commit_ctx = ctx;
}

/* ubjm_test_on_point -- a callback at each test point. */
void ubjm_test_on_point(void (*cb)(void *ctx, enum ubjm_test_point p), void *ctx)
{
    ubjm_point_cb = cb;
    ubjm_point_ctx = ctx;
}

/* ubjm_point -- run the test callback for point p, if any. */
static void ubjm_point(enum ubjm_test_point p)
{
    if (ubjm_point_cb)
        ubjm_point_cb(ubjm_point_ctx, p);
}

/* ubjm_committed -- run the test callback for durable commit T, if any. */
static void ubjm_committed(uint64_t T)
{
    if (ubjm_commit_cb != NULL)
        ubjm_commit_cb(ubjm_commit_ctx, T);
}

/* ubjm_broken -- whether broken variant `b` is selected. */
static bool ubjm_broken(enum ubjm_break b)
{
    if (ubjm_break_mode < 0) {
        const char *e = getenv("UBJ_TEST_BREAK");
        ubjm_break_mode = e ? atoi(e) : 0;
    }
    return ubjm_break_mode == (int)b;
}
#else   /* a plain build: constants, no code and no branch left behind */
#define ubjm_point(p) ((void)0)
#define ubjm_committed(T) ((void)0)
#define ubjm_broken(b) false
#endif /* UBJ_TEST_HOOKS */

/* ---- helpers -------------------------------------------------------------- */

/* ubjm_trace -- with UBJ_TRACE_UBJ set in the environment, log an event
 * (commit, checkpoint, free) to stderr: for debugging crash tests. */
static void ubjm_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ubjm_trace(const char *fmt, ...)
{
    static int on = -1;
    if (on < 0)
        on = getenv("UBJ_TRACE_UBJ") != NULL;
    if (!on)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("ubj: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ubjm_of -- the per-mount state of t. */
static inline struct ubjm_state *ubjm_of(struct ubj_txn *t)
{
    return t->priv;
}

/* ubjm_now_ns -- monotonic nanoseconds. */
static uint64_t ubjm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ubjm_sync_stats -- copy the region's counters into t->stats. */
static void ubjm_sync_stats(struct ubj_txn *t)
{
    struct ubj_nvm_counters ns;
    ubj_nvm_counters_get(ubjm_of(t)->r, &ns);
    t->stats.nvm_bytes = ns.bytes_flushed;
    t->stats.nvm_persists = ns.drains;
    struct ubj_nvm_model *m = ubj_nvm_get_model(ubjm_of(t)->r);
    if (m != NULL) {
        struct ubj_nvm_stats ms;
        ubj_nvm_model_stats(m, &ms);
        t->stats.nvm_model_ns = ms.time_ns;
        t->stats.nvm_model_energy_j = ms.energy_j;
    }
}

/* ubjm_fail -- record a sticky error (the mount must not commit again). */
static int ubjm_fail(struct ubjm_state *s, int rc)
{
    if (s->error == 0)
        s->error = rc;
    return rc;
}

/* ubjm_refuse -- the error of a mount that failed earlier (one line). */
static int ubjm_refuse(struct ubjm_state *s, int rc)
{
    if (s->error_where != 0)
        return ubj_set_error(rc, "ubj: read-only since a checkpoint failed (%s): "
                             "the committed changes are kept in the NVM region; "
                             "unmount, repair the device and mount again",
                             strerror(-s->error));
    return ubj_set_error(rc, "ubj: read-only since the NVM region failed (%s)",
                         strerror(-s->error));
}

/* ubjm_counts -- DIRTY and FROZEN(+OLD) buffers now. */
static void ubjm_counts(struct ubj_txn *t, uint64_t *dirty, uint64_t *frozen)
{
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(t->cache, &cs);
    *dirty = cs.dirty;
    *frozen = cs.frozen;
}

#ifndef NDEBUG
/* ubjm_crc_set -- remember a frozen buffer's bytes (U2). */
static void ubjm_crc_set(struct ubjm_state *s, const struct ubj_buf *b)
{
    s->crc[b->idx] = ubj_crc32c(0, b->data, UBJ_BS);
}

/* ubjm_crc_ok -- U2: a frozen buffer's bytes are as they were frozen. */
static bool ubjm_crc_ok(const struct ubjm_state *s, const struct ubj_buf *b)
{
    return s->crc[b->idx] == ubj_crc32c(0, b->data, UBJ_BS);
}
#endif

/* ---- freeing out-of-date versions ----------------------------------------- */

/* ubjm_old_add -- b turned FROZEN_OLD: free it once free_after commits. */
static void ubjm_old_add(struct ubjm_state *s, uint32_t idx, uint64_t free_after)
{
    assert(s->nolds < s->nbufs);
    s->olds[s->nolds++] = (struct ubjm_old){ .idx = idx, .free_after = free_after };
}

/* ubjm_olds_store -- store tag 0 of each FROZEN_OLD buffer that may go
 * (U3: free_after <= limit) and flush it; returns how many.  They are
 * moved to the front of olds[]. */
static uint32_t ubjm_olds_store(struct ubj_txn *t, uint64_t limit)
{
    struct ubjm_state *s = ubjm_of(t);
    uint32_t n = 0;
    for (uint32_t k = 0; k < s->nolds; k++) {
        struct ubjm_old o = s->olds[k];
        if (o.free_after > limit)
            continue;
        struct ubj_buf *b = ubj_cache_buf_at(t->cache, o.idx);
        assert(ubj_cache_peek(t->cache, b).state == UBJ_BUF_FROZEN_OLD &&
               ubjm_crc_ok(s, b));
        ubj_nvm_store64(s->r, &b->d->ptag, 0);
        ubj_nvm_flush(s->r, &b->d->ptag, 8);
        s->olds[k] = s->olds[n];
        s->olds[n++] = o;
    }
    return n;
}

/* ubjm_olds_release -- after the drain: the first n olds become FREE. */
static void ubjm_olds_release(struct ubj_txn *t, uint32_t n)
{
    struct ubjm_state *s = ubjm_of(t);
    for (uint32_t k = 0; k < n; k++)
        ubj_cache_set_state(t->cache, ubj_cache_buf_at(t->cache, s->olds[k].idx),
                            UBJ_BUF_FREE, 0);
    memmove(s->olds, s->olds + n, (s->nolds - n) * sizeof *s->olds);
    s->nolds -= n;
}

/* ubjm_free_olds -- free every FROZEN_OLD buffer whose successor is
 * committed, with its own persistence point.  Returns the count or -EIO. */
static int ubjm_free_olds(struct ubj_txn *t)
{
    struct ubjm_state *s = ubjm_of(t);
    uint32_t n = ubjm_olds_store(t, s->committed);
    if (n == 0)
        return 0;
    ubjm_trace("free %u out-of-date buffers", n);
    int rc = ubj_nvm_drain(s->r);
    if (rc < 0)
        return ubjm_fail(s, rc);
    ubjm_olds_release(t, n);
    return (int)n;
}

/* ---- commit --------------------------------------------------------------- */

/* ubjm_freeze_one -- commit phase 1 for one DIRTY buffer of txid T. */
static void ubjm_freeze_one(struct ubj_txn *t, struct ubj_buf *b, uint64_t T)
{
    struct ubjm_state *s = ubjm_of(t);
    ubj_cache_seal(t->cache, b);
    if (!ubjm_broken(UBJM_BREAK_DATA_FLUSH))
        ubj_nvm_flush(s->r, b->data, UBJ_BS);
    ubj_nvm_store64(s->r, &b->d->ptag, ubjm_ptag(T, ubj_cache_peek(t->cache, b).kind));
    ubj_nvm_flush(s->r, b->d, sizeof *b->d);
    ubj_cache_set_state(t->cache, b, UBJ_BUF_FROZEN, T);
    ubj_cache_clear_flags(t->cache, b, UBJ_BUF_PINNED);
#ifndef NDEBUG
    ubjm_crc_set(s, b);
#endif
}

/* ubjm_supersede -- commit phase 3 for a newly frozen b: its older
 * versions are out of date (FROZEN -> FROZEN_OLD, freed at the next
 * persistence point; a CLEAN one -- already home -- is simply dropped). */
static void ubjm_supersede(struct ubj_txn *t, struct ubj_buf *b, uint64_t T)
{
    struct ubjm_state *s = ubjm_of(t);
    uint32_t o = ubj_cache_peek(t->cache, b).older;
    while (o != UBJ_NOBUF) {
        struct ubj_buf *ob = ubj_cache_buf_at(t->cache, o);
        struct ubj_buf_view v = ubj_cache_peek(t->cache, ob);
        uint32_t next = v.older;
        if (v.state == UBJ_BUF_FROZEN) {
            ubj_cache_set_state(t->cache, ob, UBJ_BUF_FROZEN_OLD, v.txid);
            ubjm_old_add(s, o, T);
        } else if (v.state == UBJ_BUF_CLEAN) {
            ubj_cache_set_state(t->cache, ob, UBJ_BUF_FREE, 0);
        }
        o = next;
    }
}

/* ubjm_commit_phase1 -- freeze T's buffers and piggyback the tags of
 * freeable FROZEN_OLD buffers; drain.  *nfrozen, *nolds for phase 3. */
static int ubjm_commit_phase1(struct ubj_txn *t, uint64_t T, uint32_t *nfrozen,
                             uint32_t *nolds)
{
    struct ubjm_state *s = ubjm_of(t);
    uint32_t n = 0;
    for (uint32_t k = 0; k < s->ntxn; k++) {
        struct ubj_buf *b = ubj_cache_buf_at(t->cache, s->txn[k]);
        struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
        if (v.state != UBJ_BUF_DIRTY || v.txid != T)
            continue;   /* dropped (block freed) or listed twice */
        ubjm_freeze_one(t, b, T);
        s->txn[n++] = s->txn[k];
    }
    s->ntxn = n;
    *nfrozen = n;
    /* U3: committed successors only -- unless deliberately broken */
    *nolds = ubjm_olds_store(t, ubjm_broken(UBJM_BREAK_EARLY_FREE) ? T : s->committed);
    if (ubjm_broken(UBJM_BREAK_EARLY_FREE)) {   /* also the versions T replaces */
        for (uint32_t k = 0; k < n; k++) {
            struct ubj_buf *b = ubj_cache_buf_at(t->cache, s->txn[k]);
            uint32_t older = ubj_cache_peek(t->cache, b).older;
            if (older != UBJ_NOBUF) {
                struct ubj_buf *ob = ubj_cache_buf_at(t->cache, older);
                ubj_nvm_store64(s->r, &ob->d->ptag, 0);
                ubj_nvm_flush(s->r, &ob->d->ptag, 8);
            }
        }
    }
    return ubj_nvm_drain(s->r);
}

/* ubjm_commit_record -- commit phase 2: the record := T, persisted. */
static int ubjm_commit_record(struct ubj_txn *t, uint64_t T)
{
    struct ubjm_state *s = ubjm_of(t);
    uint64_t *word = ubj_nvm_committed_word(s->r);
    ubj_nvm_store64(s->r, word, T);
    if (ubjm_broken(UBJM_BREAK_COMMIT_PERSIST))
        return 0;
    return ubj_nvm_persist(s->r, word, 8);
}

/* ubjm_commit_quiet -- commit the running transaction in place, inside
 * the barrier (U5). */
static int ubjm_commit_quiet(struct ubj_txn *t)
{
    struct ubjm_state *s = ubjm_of(t);
    ubj_txn_assert_quiet(t, "ubj commit");   /* U5: aborts in every build */
    if (s->error)
        return ubjm_refuse(s, s->error);
    if (s->ntxn == 0 && !s->revoked)
        return 0;   /* nothing changed since the last commit */
    uint64_t T = t->txid;
    uint32_t nfrozen, nolds;
    ubjm_trace("commit %llu: %u listed", (unsigned long long)T, s->ntxn);
    int rc = ubjm_commit_phase1(t, T, &nfrozen, &nolds);
    if (rc == 0) {
        ubjm_point(UBJM_TP_COMMIT_FROZEN);
        rc = ubjm_commit_record(t, T);
    }
    if (rc < 0)
        return ubjm_fail(s, rc);
    s->committed = T;
    t->txid = T + 1;
    ubjm_olds_release(t, nolds);
    for (uint32_t k = 0; k < nfrozen; k++)
        ubjm_supersede(t, ubj_cache_buf_at(t->cache, s->txn[k]), T);
    s->ntxn = 0;
    s->revoked = false;
    t->stats.commits++;
    ubjm_sync_stats(t);
    ubjm_committed(T);
    return 0;
}

/* ubjm_commit_locked -- take the barrier (wait for the open handles to
 * stop), commit, lift it. */
static int ubjm_commit_locked(struct ubj_txn *t)
{
    ubj_txn_lock_updates(t);
    int rc = ubjm_commit_quiet(t);
    ubj_txn_unlock_updates(t);
    return rc;
}

/* ---- checkpoint ----------------------------------------------------------- */

/* ubjm_ckpt_collect -- the FROZEN (up-to-date) buffers into list[], their
 * txids into txid[] (read under the cache's lock: a write the timer's
 * checkpoint started completes in its thread meanwhile). */
static uint32_t ubjm_ckpt_collect(struct ubj_txn *t, uint32_t *list, uint64_t *txid)
{
    struct ubjm_state *s = ubjm_of(t);
    uint32_t n = ubj_cache_collect(t->cache, UBJ_BUF_FROZEN, list, txid, s->nbufs);
    for (uint32_t k = 0; k < n; k++)   /* U2: nobody wrote a frozen buffer */
        assert(ubjm_crc_ok(s, ubj_cache_buf_at(t->cache, list[k])));
    return n;
}

/* ubjm_ckpt_same -- listed buffer k is still the version that was
 * listed (and so written home): FROZEN, same txid.  Without the mount
 * lock, a buffer may have been checkpointed by a writer, changed and
 * frozen again by a later commit: that version was not written. */
static bool ubjm_ckpt_same(struct ubj_txn *t, const struct ubj_buf *b, uint64_t txid)
{
    struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
    return v.state == UBJ_BUF_FROZEN && v.txid == txid;
}

/* ubjm_ckpt_write -- checkpoint steps C1-C2: write the listed buffers home
 * and flush the device, at class crit (below time-critical: nobody waits
 * on the clock; the flush is submitted once the writes completed, so it
 * covers them over a reordering queue too).  Touches neither the region
 * nor the mode's state, so the timer runs it without the mount lock.  0
 * or the device's error; *flush_failed says which step failed. */
static int ubjm_ckpt_write(struct ubj_txn *t, const uint32_t *list,
                           const uint64_t *txid, uint32_t n, enum ubj_req_crit crit,
                           bool *flush_failed)
{
    const uint64_t *check = ubjm_broken(UBJM_BREAK_CKPT_ANY_FROZEN) ? NULL : txid;
    int rc = ubj_cache_write_bufs(t->cache, list, check, n, ubj_crit_wb(crit));
    *flush_failed = false;
    if (rc == 0 && !ubjm_broken(UBJM_BREAK_CKPT_FLUSH)) {
        rc = ubj_bdev_flush_crit(t->dev, crit);
        *flush_failed = rc < 0;
    }
    return rc;
}

/*
 * ubjm_ckpt_failed -- a checkpoint (at `where`, UBJ_NVM_ERR_*) could not
 * put n committed blocks home: the mount turns read-only at once (sticky
 * s->error: no commit, no checkpoint, no handle from here on), the blocks
 * stay FROZEN -- in NVM, the only good copy -- and the error is recorded
 * in the region's header, persisted, for the next mount and fsck.  Returns
 * rc with the one-line message set.
 */
static int ubjm_ckpt_failed(struct ubj_txn *t, int rc, uint32_t where, uint32_t n,
                            bool flush_failed)
{
    struct ubjm_state *s = ubjm_of(t);
    if (flush_failed)
        where |= UBJ_NVM_ERR_FLUSH;
    if (s->error == 0) {
        uint64_t dirty, frozen;
        ubjm_counts(t, &dirty, &frozen);
        struct ubj_nvm_error e = { .err = -rc, .where = where,
                                   .time = (int64_t)time(NULL),
                                   .txid = s->committed, .blocks = frozen };
        s->error = rc;
        s->error_where = where;
        if (!s->rdonly)
            (void)ubj_nvm_error_record(s->r, &e);   /* a failing NVM: in memory only */
        ubjm_trace("checkpoint failed (%s): read-only", strerror(-rc));
    }
    return ubj_set_error(rc, "ubj: checkpoint: %s %u blocks home failed (%s): "
                         "read-only now; the committed changes stay in the NVM "
                         "region until a mount with a working device writes "
                         "them home", flush_failed ? "flushing the device after "
                         "writing" : "writing", n, strerror(-rc));
}


/*
 * ubjm_ckpt_finish -- checkpoint steps C3-C4 for the listed buffers that
 * are still FROZEN (a commit may have superseded some meanwhile: their
 * FROZEN_OLD entries free them): free older versions first, then persist
 * the listed tags 0, then make those buffers CLEAN.
 */
static int ubjm_ckpt_finish(struct ubj_txn *t, const uint32_t *list,
                            const uint64_t *txid, uint32_t n)
{
    struct ubjm_state *s = ubjm_of(t);
    /* C3a: older versions go first, with their own persistence point: if
     * a version's tag were cleared in the same batch as its successor's,
     * a crash could keep the old tag and lose the new one -- and recovery
     * would serve the old bytes over the newer home copy. */
    int rc = ubjm_free_olds(t);
    if (rc < 0)
        return rc;
    uint32_t done = 0;
    for (uint32_t k = 0; k < n; k++) {      /* C3b: then the written ones */
        struct ubj_buf *b = ubj_cache_buf_at(t->cache, list[k]);
        if (!ubjm_ckpt_same(t, b, txid[k]))
            continue;
        ubj_nvm_store64(s->r, &b->d->ptag, 0);
        ubj_nvm_flush(s->r, &b->d->ptag, 8);
        done++;
    }
    if (done > 0 && (rc = ubj_nvm_drain(s->r)) < 0)
        return ubjm_fail(s, rc);
    for (uint32_t k = 0; k < n; k++) {      /* C4 */
        struct ubj_buf *b = ubj_cache_buf_at(t->cache, list[k]);
        if (ubjm_ckpt_same(t, b, txid[k]))
            ubj_cache_set_state(t->cache, b, UBJ_BUF_CLEAN, txid[k]);
    }
    s->ticks_frozen = 0;
    s->cold = 0;
    t->stats.checkpoints++;
    t->stats.bytes_checkpoint += (uint64_t)n * UBJ_BS;
    t->stats.dev_flushes++;
    ubjm_sync_stats(t);
    return 0;
}

/*
 * ubjm_checkpoint_locked -- write every FROZEN buffer home, flush the
 * device, then persist their tags 0 (older versions first) and make them
 * CLEAN; all under the mount lock, the device I/O at class crit.  On a
 * device error nothing changes state (they stay FROZEN, safe in NVM) and
 * the error is returned.
 */
static int ubjm_checkpoint_locked(struct ubj_txn *t, uint32_t where,
                                  enum ubj_req_crit crit)
{
    struct ubjm_state *s = ubjm_of(t);
    if (s->error)
        return ubjm_refuse(s, s->error);
    uint32_t n = ubjm_ckpt_collect(t, s->scratch, s->scratch_txid);
    if (n == 0) {
        int rc = ubjm_free_olds(t);
        return rc < 0 ? rc : 0;
    }
    ubjm_trace("checkpoint %u buffers (open handles %u)", n, ubj_txn_open_handles(t));
    bool flush_failed;
    int rc = ubjm_ckpt_write(t, s->scratch, s->scratch_txid, n, crit, &flush_failed);
    if (rc < 0)
        return ubjm_ckpt_failed(t, rc, where, n, flush_failed);
    return ubjm_ckpt_finish(t, s->scratch, s->scratch_txid, n);
}

/*
 * ubjm_checkpoint_unlocked -- the timer's checkpoint: the same steps, but
 * the mount lock is released while the blocks go home and the device is
 * flushed, so writers continue (they copy the frozen buffers on write, or
 * freeze new ones; a checkpoint they run themselves meanwhile waits for
 * the buffers in flight and writes them again).  No reference is taken: a
 * listed buffer that stops being FROZEN before its write starts is
 * skipped (ubj_cache_write_bufs), one in flight is io_busy (never reused),
 * and only those still FROZEN with their listed txid are finished -- so a
 * writer short of buffers can reuse any of them as soon as it could
 * without this checkpoint.  Device I/O at class crit.
 */
static int ubjm_checkpoint_unlocked(struct ubj_txn *t, enum ubj_req_crit crit)
{
    struct ubjm_state *s = ubjm_of(t);
    if (t->lock == NULL || ubj_txn_open_handles(t) != 0)
        return ubjm_checkpoint_locked(t, UBJ_NVM_ERR_TIMER, crit);
    if (s->error)
        return ubjm_refuse(s, s->error);
    uint32_t n = ubjm_ckpt_collect(t, s->ckpt, s->ckpt_txid);
    if (n == 0) {
        int rc = ubjm_free_olds(t);
        return rc < 0 ? rc : 0;
    }
    ubjm_trace("checkpoint %u buffers without the mount lock", n);
    pthread_mutex_unlock(t->lock);
    ubjm_point(UBJM_TP_CKPT_UNLOCKED);
    bool flush_failed;
    int rc = ubjm_ckpt_write(t, s->ckpt, s->ckpt_txid, n, crit, &flush_failed);
    ubjm_point(UBJM_TP_CKPT_WRITTEN);
    pthread_mutex_lock(t->lock);
    if (rc < 0)   /* writers ran meanwhile; nothing of this one changed state */
        return ubjm_ckpt_failed(t, rc, UBJ_NVM_ERR_TIMER, n, flush_failed);
    if (s->error)   /* a writer's checkpoint failed meanwhile: stay frozen */
        return ubjm_refuse(s, s->error);
    return ubjm_ckpt_finish(t, s->ckpt, s->ckpt_txid, n);
}

/* ubjm_cold_pressure -- eviction keeps meeting cold frozen (or pinned
 * dirty) buffers: more than 1/UBJM_COLD_FRACTION of the cache since the
 * last checkpoint.  They cannot be evicted until committed and
 * checkpointed, so CLOCK evicts hot clean blocks instead (Filebench's
 * webserver, read-mostly with an append log, lost 11 points of hit ratio
 * and half its throughput to its frozen log blocks); a commit and a
 * checkpoint make them evictable. */
static bool ubjm_cold_pressure(struct ubj_txn *t)
{
    struct ubjm_state *s = ubjm_of(t);
    s->cold += ubj_cache_take_cold_frozen(t->cache);
    return s->cold > s->nbufs / UBJM_COLD_FRACTION;
}

/* ubjm_maybe_checkpoint -- checkpoint if frozen buffers exceed the limit
 * or (cold) crowd hot clean ones out; device I/O at class crit. */
static int ubjm_maybe_checkpoint(struct ubj_txn *t, bool cold, enum ubj_req_crit crit)
{
    uint64_t dirty, frozen;
    ubjm_counts(t, &dirty, &frozen);
    return frozen > ubjm_of(t)->max_frozen || (cold && frozen > 0)
           ? ubjm_checkpoint_locked(t, UBJ_NVM_ERR_START, crit) : 0;
}

/* ---- recovery (mount) ----------------------------------------------------- */

/* ubjm_recover -- rules 3-4 of ubj_recovery.c: clear every non-winning tag
 * (persisted), mark the winners FROZEN, adopt them into the cache. */
static int ubjm_recover(struct ubj_txn *t)
{
    struct ubjm_state *s = ubjm_of(t);
    struct ubj_bufdesc *desc = ubj_nvm_desc(s->r);
    struct ubjm_scan sc;
    uint64_t t0 = ubjm_now_ns();
    int rc = ubjm_recovery_scan(desc, s->nbufs, s->committed, t->dev->nblocks, &sc);
    if (rc < 0)
        return rc;
    for (uint32_t k = 0; k < sc.ndrop; k++) {
        ubj_nvm_store64(s->r, &desc[sc.drop[k]].ptag, 0);
        ubj_nvm_flush(s->r, &desc[sc.drop[k]].ptag, 8);
    }
    if (sc.ndrop > 0)
        rc = ubj_nvm_drain(s->r);
    for (uint32_t i = 0; i < s->nbufs && rc == 0; i++)
        desc[i].state = UBJ_BUF_FREE;        /* the cache's own field */
    for (uint32_t k = 0; k < sc.nkeep && rc == 0; k++) {
        struct ubj_bufdesc *d = &desc[sc.keep[k]];
        d->state = UBJ_BUF_FROZEN;
        d->txid = ubjm_ptag_txid(d->ptag);
        d->kind = (d->ptag & UBJM_PTAG_META) ? UBJ_KIND_META : UBJ_KIND_DATA;
    }
    if (rc == 0)
        rc = ubj_cache_adopt(t->cache);
#ifndef NDEBUG
    for (uint32_t k = 0; k < sc.nkeep && rc >= 0; k++)
        ubjm_crc_set(s, ubj_cache_buf_at(t->cache, sc.keep[k]));
#endif
    t->stats.recovered_blocks = sc.nkeep;
    ubjm_scan_free(&sc);
    t->stats.recovery_ns = ubjm_now_ns() - t0;
    return rc < 0 ? rc : 0;
}

/* ubjm_state_free -- free the per-mount state. */
static void ubjm_state_free(struct ubjm_state *s)
{
    if (s == NULL)
        return;
    free(s->txn);
    free(s->listed);
    free(s->olds);
    free(s->scratch);
    free(s->ckpt);
    free(s->ckpt_txid);
    free(s->scratch_txid);
#ifndef NDEBUG
    free(s->crc);
#endif
    free(s);
}

/* ubjm_state_new -- allocate the per-mount state for n buffers. */
static struct ubjm_state *ubjm_state_new(uint32_t n)
{
    struct ubjm_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->nbufs = n;
    s->txn = malloc((size_t)n * sizeof *s->txn);
    s->listed = calloc(n, sizeof *s->listed);
    s->olds = malloc((size_t)n * sizeof *s->olds);
    s->scratch = malloc((size_t)n * sizeof *s->scratch);
    s->ckpt = malloc((size_t)n * sizeof *s->ckpt);
    s->ckpt_txid = malloc((size_t)n * sizeof *s->ckpt_txid);
    s->scratch_txid = malloc((size_t)n * sizeof *s->scratch_txid);
    bool ok = s->txn && s->listed && s->olds && s->scratch && s->ckpt &&
              s->ckpt_txid && s->scratch_txid;
#ifndef NDEBUG
    s->crc = calloc(n, sizeof *s->crc);
    ok = ok && s->crc;
#endif
    if (!ok) {
        ubjm_state_free(s);
        return NULL;
    }
    unsigned dp = ubjm_lim_dirty ? ubjm_lim_dirty : UBJM_DIRTY_PERMILLE;
    unsigned fp = ubjm_lim_frozen ? ubjm_lim_frozen : UBJM_FROZEN_PERMILLE;
    s->max_dirty = (uint32_t)((uint64_t)n * dp / 1000u);
    s->max_frozen = (uint32_t)((uint64_t)n * fp / 1000u);
    if (s->max_dirty < 8)
        s->max_dirty = 8;
    return s;
}

static int ubjm_reclaim(void *ctx);
/* the cache hooks: reclaim only (UBJ writes home what it froze itself,
 * with ubj_cache_write_bufs; the cache never writes its DIRTY buffers: U4) */
static const struct ubj_cache_hooks ubjm_hooks = { .reclaim = ubjm_reclaim };

/* ubjm_mount -- the region (from prepare) must back the cache; register the
 * reclaim hook; recover. */
static int ubjm_mount(struct ubj_txn *t)
{
    const struct ubjm_prep *p = t->arg;
    if (p == NULL || p->r == NULL)
        return ubj_set_error(-EINVAL, "mode ubj: no NVM region (mount it "
                             "through ubj_mount with nvm_path)");
    struct ubj_nvm *r = p->r;
    uint32_t n = ubj_cache_nbufs(t->cache);
    assert(n == ubj_nvm_get_layout(r)->nbufs);
    struct ubjm_state *s = ubjm_state_new(n);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "mode ubj: out of memory");
    s->r = r;
    s->rdonly = p->rdonly != 0;
    s->committed = ubj_nvm_committed(r);
    t->priv = s;
    ubj_cache_set_hooks(t->cache, &ubjm_hooks, t);
    /* U6: open handles may reserve half of the region's buffers (the
     * cache is the region), the rest for frozen and clean ones */
    ubj_handles_set_capacity(t, n / 2);
    int rc = ubjm_recover(t);
    if (rc < 0) {
        ubjm_state_free(s);
        t->priv = NULL;
        return rc;
    }
    t->txid = s->committed + 1;
    ubjm_sync_stats(t);
    return 0;
}

/* ubjm_unmount -- a final commit and checkpoint: the image is complete and
 * the region holds nothing committed.  After a failed checkpoint neither:
 * the running transaction may hold half an operation, and the committed
 * blocks stay in the region for the next mount; the error is returned. */
static int ubjm_unmount(struct ubj_txn *t)
{
    struct ubjm_state *s = ubjm_of(t);
    if (s == NULL)
        return 0;
    int rc = 0;
    if (s->error) {
        uint64_t dirty, frozen;
        ubjm_counts(t, &dirty, &frozen);
        rc = ubj_set_error(s->error, "ubj: unmount after a failed checkpoint "
                           "(%s): %llu committed blocks are not home; they stay "
                           "in NVM region %s: mount with it again once the "
                           "device works", strerror(-s->error),
                           (unsigned long long)frozen, ubj_nvm_path(s->r));
    } else {
        rc = ubjm_commit_locked(t);
        int crc = s->rdonly ? 0 : ubjm_checkpoint_locked(t, UBJ_NVM_ERR_UNMOUNT,
                                                         UBJ_CRIT_CRITICAL);
        if (rc == 0)
            rc = crc;
    }
    ubjm_sync_stats(t);
    ubjm_state_free(s);
    t->priv = NULL;
    return rc;
}

/* ---- handles -------------------------------------------------------------- */

/* ubjm_start -- before h opens: commit first if the running transaction
 * would outgrow its limit with the credits of h and of the handles open
 * beside it (the commit waits for those: the barrier), and checkpoint if
 * frozen buffers fill half the cache. */
static int ubjm_start(struct ubj_handle *h)
{
    struct ubj_txn *t = h->t;
    struct ubjm_state *s = ubjm_of(t);
    if (s->error)
        return ubjm_refuse(s, -EROFS);
    uint64_t dirty, frozen;
    ubjm_counts(t, &dirty, &frozen);
    uint64_t want = (uint64_t)h->credits + ubj_txn_outstanding(t);
    if (want > s->nbufs)
        want = s->nbufs;
    /* (a test's frozen limit of the whole cache: no early checkpoint) */
    bool cold = s->max_frozen < s->nbufs && ubjm_cold_pressure(t);
    int rc = 0;
    if (dirty > 0 && (dirty + want > s->max_dirty || cold))
        rc = ubjm_commit_locked(t);
    if (rc < 0)
        return rc;
    /* an early checkpoint makes room ahead of need; the caller does
     * not wait for it, so its I/O is time-noncritical and, on a timed
     * device model, queued, not waited for on the clock (ubjfs/bdev.h,
     * ubj_bdev_write_crit).  Its device error turns the mount read-only
     * like any checkpoint's: this operation has not started, and fails
     * with it */
    rc = ubjm_maybe_checkpoint(t, cold, UBJ_CRIT_NONCRITICAL);
    return rc < 0 ? rc : 0;
}

/* ubjm_list -- put b in the running transaction's list (once). */
static void ubjm_list(struct ubjm_state *s, struct ubj_buf *b, uint64_t T)
{
    if (s->listed[b->idx] == T)
        return;
    s->listed[b->idx] = T;
    assert(s->ntxn < s->nbufs);
    s->txn[s->ntxn++] = b->idx;
}

/* ubjm_write_access -- copy a frozen buffer on write (*b may change). */
static int ubjm_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    struct ubj_txn *t = h->t;
    if (ubj_cache_peek(t->cache, *b).state == UBJ_BUF_DIRTY)
        return 0;   /* DIRTY is always the newest version: no copy */
    int rc = ubj_cache_cow(t->cache, b, t->txid);
    if (rc == 1) {
        t->stats.cow_copies++;
        ubjm_list(ubjm_of(t), *b, t->txid);
        return 0;
    }
    return rc;
}

/* ubjm_dirty -- b joins the running transaction: DIRTY and pinned (U4). */
static int ubjm_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    struct ubj_txn *t = h->t;
    struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
    uint32_t st = v.state;
    if (st == UBJ_BUF_FROZEN || st == UBJ_BUF_FROZEN_OLD) {
        assert(!"ubj: a frozen buffer dirtied without write access");
        return ubj_set_error(-EUCLEAN, "ubj: block %llu dirtied without "
                             "write access", (unsigned long long)b->d->blkno);
    }
    h->used++;
    uint32_t need = UBJ_BUF_PINNED | (kind == UBJ_KIND_META ? UBJ_BUF_SEAL : 0u);
    if (st == UBJ_BUF_DIRTY && v.txid == t->txid && v.kind == (uint32_t)kind &&
        (v.flags & need) == need)
        return 0;   /* dirtied again in this transaction: nothing changes
                       (a fresh copy on write lacks SEAL: not this path) */
    ubj_cache_mark_dirty_flags(t->cache, b, kind, t->txid, UBJ_BUF_PINNED);
    if (ubj_cache_peek(t->cache, b).state == UBJ_BUF_DIRTY)   /* not dropped (GONE) */
        ubjm_list(ubjm_of(t), b, t->txid);
    return 0;
}

/* ubjm_forget -- a freed block: drop uncommitted versions; a committed one
 * turns FROZEN_OLD and stays durable until this transaction commits (a
 * crash before that must still find it: the block is in use there). */
static int ubjm_forget(struct ubj_handle *h, uint64_t blkno)
{
    struct ubj_txn *t = h->t;
    struct ubjm_state *s = ubjm_of(t);
    uint32_t n = ubj_cache_revoke(t->cache, blkno, s->scratch, s->nbufs);
    for (uint32_t k = 0; k < n; k++)
        ubjm_old_add(s, s->scratch[k], t->txid);
    if (n > 0)
        s->revoked = true;
    return 0;
}

/* ubjm_stop -- nothing to finish: the handle layer uncounts h. */
static int ubjm_stop(struct ubj_handle *h)
{
    (void)h;
    return 0;
}

/* ---- commit policy -------------------------------------------------------- */

/* ubjm_commit -- fsync/fdatasync/sync: commit at once, no device flush;
 * sync also checkpoints. */
static int ubjm_commit(struct ubj_txn *t, unsigned flags)
{
    int rc = ubjm_commit_locked(t);
    if (rc == 0 && (flags & UBJ_COMMIT_SYNC))
        rc = ubjm_checkpoint_locked(t, UBJ_NVM_ERR_SYNC, UBJ_CRIT_CRITICAL);
    return rc;
}

/* ubjm_tick -- the timer: commit; checkpoint on the frozen limit or age
 * (device I/O at class ubj_tick_crit(flags)). */
static int ubjm_tick(struct ubj_txn *t, unsigned flags)
{
    struct ubjm_state *s = ubjm_of(t);
    int rc = ubjm_commit_locked(t);
    if (rc < 0)
        return rc;
    uint64_t dirty, frozen;
    ubjm_counts(t, &dirty, &frozen);
    if (frozen > 0)
        s->ticks_frozen++;
    if (frozen > s->max_frozen / 2 || s->ticks_frozen >= UBJM_CKPT_AGE_TICKS)
        rc = ubjm_checkpoint_unlocked(t, ubj_tick_crit(flags));
    return rc;
}

/* ubjm_reclaim -- the cache's reclaim hook (ctx: the mount): free
 * out-of-date versions; commit if no handle is open; checkpoint.
 * -ENOBUFS if none of it made room. */
static int ubjm_reclaim(void *ctx)
{
    struct ubj_txn *t = ctx;
    struct ubjm_state *s = ubjm_of(t);
    uint64_t dirty, frozen;
    int rc = ubjm_free_olds(t);
    if (rc < 0)
        return rc;
    if (s->error)   /* read-only: nothing can be committed or go home */
        return rc > 0 ? 0 : ubjm_refuse(s, s->error);
    bool progress = rc > 0;
    ubjm_counts(t, &dirty, &frozen);
    if (ubj_txn_safe_point(t) && dirty > 0) {   /* never waits here */
        rc = ubjm_commit_locked(t);
        if (rc < 0)
            return rc;
        ubjm_counts(t, &dirty, &frozen);
    }
    if (frozen > 0) {
        rc = ubjm_checkpoint_locked(t, UBJ_NVM_ERR_RECLAIM, UBJ_CRIT_CRITICAL);
        if (rc < 0)
            return rc;
        rc = ubjm_free_olds(t);
        if (rc < 0)
            return rc;
        progress = true;
    }
    if (!progress)
        return ubj_set_error(-ENOBUFS, "ubj: the cache (%u buffers) is full of "
                             "the running operation's changes", s->nbufs);
    return 0;
}

const struct ubj_mode_ops ubj_mode_ubj = {
    .version = UBJ_MODE_OPS_VERSION,
    .name = "ubj",
    .mount = ubjm_mount,
    .unmount = ubjm_unmount,
    .start = ubjm_start,
    .write_access = ubjm_write_access,
    .dirty = ubjm_dirty,
    .forget = ubjm_forget,
    .stop = ubjm_stop,
    .commit = ubjm_commit,
    .tick = ubjm_tick,
    .check_last = ubjm_check_last,
    .prepare = ubjm_prepare,
    .record = ubjm_record,
    .error = ubjm_error,
    .release = ubjm_release,
    .view = ubjm_view,
    .stats = ubjm_sync_stats,
};
