/*
 * cache.c -- the unified buffer cache (src/cache/cache.h): the buffer pool,
 * the block hash, CLOCK replacement, reads on a miss, read-ahead (into
 * free or clean unreferenced buffers only, with its accounting), writing
 * buffers home
 * (one at a time or sorted and coalesced) from stable snapshots through
 * the mode's write hooks, forget/invalidate/drop_clean, statistics.
 *
 * Writes are asynchronous requests of interface v2 (include/ubjfs/bdev.h;
 * issue 18 item 3): each write -- one buffer, or a coalesced run -- is a
 * struct cache_io submitted time-noncritical with a completion callback
 * (cache_io_done) that tells write_done, ends the buffers' writes and
 * frees it, in whichever thread completes it.  At most CACHE_IO_MAX are
 * in flight per cache.  CLOCK's write of a dirty victim is not waited for
 * (the hand moves on; the buffer is io_busy until it completes) -- except
 * on a stack with a request queue (c->drives), where the getter waits for
 * it as write_home does.  Why: a bare model completes a write inside its
 * submission, so the hand's second look finds the victim CLEAN and takes
 * it -- one victim write per miss; a queue holds the write until someone
 * drives it, so the hand moves on and writes the next dirty buffer too,
 * up to CACHE_IO_MAX single-block writes per miss, and sweeps the whole
 * dirty cache out a block per request ahead of the coalesced runs of
 * write-back (iozone, mode none, queue:fcfs@hdd:modern7200,write_cache=0:
 * 73 666 victim writes against 48 bare, each a rotation: 648 s of
 * virtual time against 47 s; docs/PERFORMANCE.md).  Waiting for the
 * victim, as the getter that needs that buffer must, restores one write
 * per miss.
 * Write-back, write_home and write_bufs wait for their own requests (a
 * struct cache_batch), on the model's clock too unless the caller says
 * nobody waits (UBJ_WB_BACKGROUND), and raise them to time-critical when
 * they wait; a process that waits for a write another caller has in
 * flight -- write_home, seal, a stable-page wait, a foreground write-back
 * or checkpoint meeting an io_busy buffer -- raises that request too
 * (cache_buf_raise_locked).  A waiter
 * drives a request queue below (ubj_bdev_drain: on the virtual clock
 * nothing completes by itself) instead of sleeping
 * (cache_io_wait_locked).  Reads of a miss or a run stay synchronous
 * (ubj_bdev_read: time-critical, waited for); an asynchronous read-ahead
 * window (ubj_cache_readahead_async) is a struct cache_ra_io submitted
 * time-limited, completed by cache_ra_done in whichever thread completes
 * it, its buffers then carrying their ready time (ra_ready: a get before
 * it waits on the clock -- a late hit).
 *
 * Data structures [all protected by c->lock unless said otherwise]:
 *   desc[nbufs]    persistent descriptors (maybe caller memory, later NVM)
 *   data[nbufs]    4 KiB buffers, 4096-aligned (maybe caller memory)
 *   bufs[nbufs]    volatile part: refcnt, flags, hash chain, CLOCK bit
 *   buckets[]      block number -> index of its NEWEST version; chains run
 *                  through bufs[i].hash_next; a power of two >= 2 * nbufs
 *   hand           the CLOCK hand, an index into bufs
 *   sweep          the number of the running CLOCK sweep; bufs[i].defer_sweep
 *                  == sweep: passed for the rest of it (deferred)
 *   hooks          the mode's write and reclaim hooks (ubj_cache_set_hooks)
 *   snap_free[2]   free snapshot segments (1 block / CACHE_WB_MAX_RUN
 *                  blocks); snap_out[] counts those a write holds
 *   outside        readers of ubj_cache_get_unlocking outside the caller's
 *                  lock (changed with that lock held too; outside_cv)
 * Besides the UBJ_BUF_* flags of cache.h, three private flags:
 *   CACHE_BUF_HASHED   the buffer is on its hash chain
 *   CACHE_BUF_GONE     dropped (forget / set_state FREE) while still held:
 *                      unhashed and unlinked, becomes FREE on release
 *   CACHE_BUF_REDIRTY  marked dirty while its bytes were being written, so
 *                      the write that completes must not make it CLEAN
 *   CACHE_BUF_COPYING  the stable-buffer window of a write: set with io_busy,
 *                      cleared once its snapshot is copied and write_begin
 *                      returned (a zero-copy write of FROZEN buffers: when
 *                      the device write ends); ubj_cache_wait_stable waits
 *                      for it
 *
 * Invariants (checked by assert_cache_invariants() in debug builds, the
 * per-buffer part by assert_buf_invariants() on every state change):
 *  1. bufs[i].idx == i, bufs[i].d == &desc[i], bufs[i].data == data + 4096 i.
 *  2. HASHED <=> the buffer is on the chain of bucket(d->blkno); every chain
 *     entry hashes to its bucket; at most one hashed buffer per block.
 *  3. A hashed buffer is the newest version of its block
 *     (d->newer == UBJ_NOBUF) and is not GONE.
 *  4. Version links are symmetric (desc[d->older].newer == i and back),
 *     join buffers of the same block number, and only non-FREE buffers are
 *     linked; following `newer` from any linked buffer ends at a hashed one.
 *  5. A FREE buffer is unlinked; it is hashed only while a miss fills it
 *     (io_busy) or while the getter of a UBJ_GET_NOREAD miss holds it
 *     (refcnt > 0): such a buffer turns DIRTY when the holder dirties it
 *     and is dropped when the last reference goes without that.
 *  6. A non-FREE buffer that is not GONE is reachable from the hash (hashed
 *     or through `newer` links) and LOADED -- except a FROZEN_OLD one that
 *     ubj_cache_revoke() detached: unhashed, unlinked, still allocated
 *     (its committed bytes are needed until the mode frees it).
 *  7. A GONE buffer is unhashed, unlinked, never DIRTY, and held (refcnt > 0
 *     or io_busy); cache_release_locked() frees it when the last hold goes.
 *  8. stats.dirty == number of DIRTY buffers; stats.frozen == number of
 *     FROZEN + FROZEN_OLD buffers.
 *  9. CLOCK reuses only FREE unhashed buffers and CLEAN ones that are not
 *     referenced, io_busy, PINNED, and have no older version; it writes an
 *     unpinned DIRTY buffer home first.  FROZEN/FROZEN_OLD are never reused.
 * 10. DIRTY -> CLEAN happens only after the bytes reached the device, no
 *     ubj_cache_mark_dirty() came while they were in flight (REDIRTY) and
 *     write_begin did not roll any back (a rolled-back write is REDIRTY's
 *     twin: the live bytes are not on the device).
 * 11. No device I/O and no callback (seal, the hooks) runs with c->lock
 *     held.  Lock order: c->wb_lock (serialises writeback, owns wb_ents)
 *     before c->lock; a caller's lock (the mount lock) before both.
 *     ubj_cache_get_unlocking releases the caller's lock only around a
 *     miss's device read, and ends the read (io_busy, state) under c->lock
 *     before it retakes the caller's lock: a thread that waits on io_cv
 *     for that buffer while holding the caller's lock is never waited for.
 * 12. An io_busy buffer is never reused nor freed; io_busy is cleared, and
 *     c->io_cv broadcast, by the thread that set it -- for a write or an
 *     asynchronous read-ahead, by whichever thread completes its request
 *     (cache_io_done, cache_ra_done), or by the
 *     writer when write_begin deferred it.  So a buffer whose write is in
 *     flight stays cached: a read of its block is a hit on the newest
 *     bytes, never a re-read of the device's older ones (and below, a
 *     queue serves a read behind a queued write from that write).
 * 18. io_inflight == the cache_io requests on io_head == those submitted
 *     and not completed <= CACHE_IO_MAX; a batch's `pending` counts its
 *     own; destroy and set_hooks wait until io_inflight is 0 (a write
 *     keeps the hooks it started with: their ctx must outlive it).
 *     ra_inflight == the cache_ra_io requests on ra_head; destroy waits
 *     for it to be 0 too.  A buffer with ra_io set is RA_IO and io_busy.
 * 13. Stable snapshots: every write of a buffer that is not FROZEN goes
 *     from a snapshot segment copied after io_busy was set (the stable-
 *     buffer rule of cache.h: no writer changes the bytes meanwhile);
 *     write_begin's rollback and cfg.seal change the snapshot only.  The
 *     cache changes a live buffer's bytes only to fill a miss (no holder
 *     yet) and in ubj_cache_seal (io_busy held, at the mode's commit).
 *     FROZEN buffers written by ubj_cache_write_bufs go straight from the
 *     pool when adjacent (zero copy: the mode copies on write, their bytes
 *     never change).  A segment is held by one write from before its copy
 *     until after its write_done, never shared: writers in several threads
 *     each take their own (more are allocated on demand).
 * 14. Hooks: write_begin is asked once per write of a DIRTY buffer, with
 *     UBJ_WRITE_MUST from ubj_cache_write_home, UBJ_WB_MUST write-backs
 *     and CLOCK's MUST sweeps; write_done is called exactly once per
 *     device write write_begin let through, before io_busy clears.  A
 *     DEFER leaves the buffer DIRTY, writes nothing, calls no write_done;
 *     the buffer waits for the next write-back, and CLOCK passes it for
 *     the rest of the sweep (defer_sweep) -- as it does a rolled-back one.
 * 15. Progress: a CLOCK sweep that finds nothing reusable but deferred or
 *     rolled back a DIRTY candidate is followed by a sweep asking with
 *     UBJ_WRITE_MUST (at most CACHE_MUST_TRIES in a row), before the
 *     reclaim hook (at most CACHE_RECLAIM_TRIES calls) and -ENOBUFS.  A
 *     hook never defers under MUST, so every unreferenced unpinned DIRTY
 *     buffer reaches the device each MUST sweep, rolled back at worst:
 *     a cache full of deferred buffers makes progress as long as the
 *     mode's rolled-back writes satisfy dependencies (they carry every
 *     update that has none).
 * 16. Descriptor fields (but ptag) and flags change only under c->lock,
 *     in whichever thread completes a write or reuses a buffer; code
 *     outside this file reads them through ubj_cache_peek/collect only
 *     (cache.h, "Locking"), the block number of a held buffer excepted.
 * 17. COPYING implies io_busy; a writer that called ubj_cache_wait_stable
 *     (every ubj_txn_write_access does) changes no byte while it is set.
 *
 * State diagram (enum ubj_buf_state).  Every move goes through
 * cache_set_state_locked(), whose table cache_transition_ok() is this
 * diagram; the function that performs each move is named below.
 *
 *     FREE ------------ fill (read) -----------> CLEAN <--------------+
 *       |                                      |    ^                 |
 *       | mark_dirty (NOREAD)       mark_dirty |    | written home    |
 *       |                                      v    |                 |
 *       +-----------------------------------> DIRTY-+                 |
 *                                              |                      |
 *                           set_state (commit) |                      |
 *                                              v                      |
 *                                            FROZEN ---write_home-----+
 *                                              |     (checkpoint)
 *               set_state (newer one committed) |
 *                                              v
 *                                          FROZEN_OLD
 *
 *     Every state -> FREE: eviction, invalidate, forget, set_state, the
 *     release of a GONE buffer (see the table).
 *     DIRTY -> DIRTY: a write whose write_begin deferred it (no write) or
 *     rolled it back (written, live bytes not on the device), or that was
 *     redirtied in flight.
 *
 *   from        to          performed by
 *   FREE        CLEAN       cache_fill: a miss was read      (ubj_cache_get)
 *                           cache_ra_end_locked: read ahead  (ubj_cache_readahead;
 *                           from cache_ra_done for ubj_cache_readahead_async)
 *   FREE        DIRTY       ubj_cache_mark_dirty of a NOREAD miss
 *   CLEAN       DIRTY       ubj_cache_mark_dirty
 *   DIRTY       CLEAN       cache_io_finish_locked (through
 *                           cache_io_end_locked, from the completion
 *                           callback cache_io_done), after ubj_cache_write_home,
 *                           ubj_cache_writeback or an eviction write
 *                           (cache_clock_locked) that was not rolled back
 *                           nor redirtied; ubj_cache_forget (held)
 *   DIRTY       DIRTY       cache_io_finish_locked after a rolled-back or
 *                           redirtied write; cache_io_end_locked after a
 *                           DEFER (no write: io_busy just cleared)
 *   DIRTY       FROZEN      ubj_cache_set_state (a mode commits in place)
 *   FROZEN      FROZEN_OLD  ubj_cache_set_state (a newer version committed)
 *   FROZEN      CLEAN       cache_io_finish_locked after ubj_cache_write_home;
 *                           ubj_cache_set_state (UBJ: after its checkpoint
 *                           wrote it with ubj_cache_write_bufs, which
 *                           leaves states alone)
 *   CLEAN       FREE        cache_clock_locked (victim), ubj_cache_invalidate,
 *                           ubj_cache_drop_clean (fadvise DONTNEED),
 *                           ubj_cache_forget, cache_release_locked (GONE)
 *   DIRTY       FREE        ubj_cache_forget / ubj_cache_revoke (block
 *                           freed), ubj_cache_set_state
 *   FROZEN      FREE        ubj_cache_set_state
 *   FROZEN_OLD  FREE        ubj_cache_set_state, cache_release_locked (GONE)
 *   FREE        FREE        cache_release_locked: a failed read or an
 *                           undirtied NOREAD buffer leaves the hash
 *   X           X           ubj_cache_mark_dirty(_flags) (DIRTY, new txid),
 *                           ubj_cache_set_state
 *
 *   FREE        DIRTY       ubj_cache_cow: the copy of a FROZEN buffer
 *   FROZEN      FROZEN_OLD  ubj_cache_revoke (block freed: also detached)
 *   FREE        FROZEN      ubj_cache_adopt (a restart over NVM: the
 *                           recovered committed versions)
 *
 *   Mode `none` uses FREE/CLEAN/DIRTY only; FROZEN and FROZEN_OLD are UBJ's
 *   (src/txn/ubj.c, docs/UBJ.md).  ubj_cache_cow creates a second version
 *   of a block (the copy-on-write of a FROZEN one); cache_detach_locked()
 *   keeps the links right when a version goes.  Only the mode takes a
 *   FROZEN or FROZEN_OLD buffer out of those states: ubj_cache_forget,
 *   CLOCK and invalidate leave them alone.
 *
 * Bytes: the cache never changes a live buffer's bytes except to fill it
 * on a miss (no holder yet) and in ubj_cache_seal (invariant 13).  A
 * holder may change them once a write's snapshot is taken (a get hit does
 * not wait for a write); REDIRTY keeps the buffer DIRTY so the newer bytes
 * are written again.  Until the snapshot is taken the stable-buffer rule
 * holds: a writer waits in ubj_cache_wait_stable while COPYING is set
 * (every ubj_txn_write_access calls it), and windows open only where no
 * writer is between its write_access and its dirty (cache.h).
 * UBJ_BUF_SEAL thus means "the live checksum may be stale": the cache
 * never clears it on a write.
 *
 * Errors: negative errno; public functions that fail set ubj_errormsg().
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache/cache.h"
#include "ubjfs/model.h"
#include "ubjfs/queue.h"

/* from src/util/errormsg.c (declared in fs/fs.h, which cache/ must not use) */
int ubj_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define CACHE_BUF_HASHED   0x100u
#define CACHE_BUF_GONE     0x200u
#define CACHE_BUF_REDIRTY  0x400u
#define CACHE_BUF_COPYING  0x800u
/* read-ahead (ubj_cache_readahead): RA_IO while its read is in flight (a
 * get that waits for it is a late hit), RA once loaded and until its first
 * get (used) or its FREE (unused); MARK: the window's marker, until
 * ubj_cache_ra_probe takes it */
#define CACHE_BUF_RA_IO    0x1000u
#define CACHE_BUF_RA       0x2000u
#define CACHE_BUF_MARK     0x4000u
#define CACHE_BUF_PRIVATE  (CACHE_BUF_HASHED | CACHE_BUF_GONE | CACHE_BUF_REDIRTY | \
                            CACHE_BUF_COPYING | CACHE_BUF_RA_IO | CACHE_BUF_RA | \
                            CACHE_BUF_MARK)
#define CACHE_CLOCK_NOWRITE 0x100u   /* cache_clock_locked: pass DIRTY buffers
                                        (read-ahead writes nothing home) */

#define CACHE_BS           4096u
#define CACHE_MAX_NBUFS    (1u << 28)   /* 1 TiB of buffers */
#define CACHE_RECLAIM_TRIES 8           /* reclaim calls per get before -ENOBUFS */
#define CACHE_MUST_TRIES   4            /* MUST sweeps in a row before reclaim */
#ifndef CACHE_WB_MAX_RUN
#define CACHE_WB_MAX_RUN   64u          /* blocks per coalesced write (256 KiB) */
#endif
#ifndef CACHE_IO_MAX
#define CACHE_IO_MAX       32u          /* write requests in flight per cache */
#endif

/* One buffer being written: by ubj_cache_writeback / write_bufs [c->wb_lock,
 * in c->wb_ents], or by cache_write_one_locked [its caller's stack]. */
struct cache_wb_ent {
    uint64_t blkno;
    uint32_t idx;
    bool dirty;       /* DIRTY when picked: the write hooks apply */
    bool seal;        /* UBJ_BUF_SEAL was set when picked */
    bool meta;        /* UBJ_KIND_META: a rolled-back snapshot is sealed */
    int verdict;      /* enum ubj_write_verdict of write_begin */
    int rc;           /* result of its write */
};

/* the hooks a write started with: copied under c->lock, used without it */
struct cache_hk {
    struct ubj_cache_hooks h;
    void *ctx;
};

/*
 * A snapshot segment: memory a write goes from, taken before the copy and
 * given back after write_done (by whichever thread completes the write, so
 * an asynchronous completion can own it).  Kinds: CACHE_SNAP_ONE (1 block:
 * an eviction or write_home) and CACHE_SNAP_RUN (CACHE_WB_MAX_RUN blocks:
 * a coalesced run).  Free segments wait on c->snap_free[kind]; more are
 * allocated when every one is in use, so writers in several threads never
 * share one.
 */
enum { CACHE_SNAP_ONE = 0, CACHE_SNAP_RUN = 1 };
struct cache_snap {
    struct cache_snap *next;     /* [c->lock] the free list */
    uint8_t *data;               /* 4096-aligned blocks */
    unsigned kind;
};

/*
 * What a caller waiting for its writes shares with their completions (on
 * the caller's stack; the completions touch it under c->lock, the caller
 * reads it once `pending` is 0).
 */
struct cache_batch {
    uint32_t pending;            /* [c->lock] its requests not completed */
    int rc;                      /* [c->lock] the first error */
    struct ubj_clock *clock;     /* [c->lock] the clock of t_max; NULL: untimed */
    uint64_t t_max;              /* [c->lock] the latest modeled completion */
    bool wait_clock;             /* the caller waits on the clock too */
};

/*
 * One write request of the cache (interface v2, asynchronous): its device
 * request, the buffers it writes (io_busy, each picked into ent[]), the
 * snapshot segment it goes from (NULL: zero copy from the pool).  Made by
 * the writer, owned by the device from ubj_bdev_submit until its
 * completion callback (cache_io_done), which ends the buffers' writes and
 * frees it -- in the submitting thread or another (a queue's dispatcher,
 * a waiter driving the queue), perhaps two at once.
 */
struct cache_io {
    struct ubj_req req;
    struct ubj_cache *c;
    struct cache_hk hk;          /* the hooks the write started with */
    struct cache_snap *snap;     /* its segment, or NULL (zero copy) */
    struct cache_batch *batch;   /* the waiter's, or NULL: nobody waits */
    bool keep_state;             /* ubj_cache_write_bufs: states stay */
    struct cache_io *next, *prev;   /* [c->lock] c->io_head: in flight */
    uint32_t n;                  /* entries written */
    struct cache_wb_ent ent[];   /* what it writes, in block order */
};

/*
 * One asynchronous read-ahead request (ubj_cache_readahead_async): its
 * device request, the claimed buffers it fills (io_busy, RA_IO, one
 * reference each), a bounce buffer when they are not adjacent in the
 * pool.  Freed by the last of its submitter and its completion
 * (cache_ra_done), which may run inside ubj_bdev_submit.
 */
struct cache_ra_io {
    struct ubj_req req;
    struct ubj_cache *c;
    void *bounce;                /* the request's buffer, or NULL (the pool) */
    uint64_t mark;               /* the block carrying the marker, or UINT64_MAX */
    unsigned refs;               /* [c->lock] submitter + completion */
    struct cache_ra_io *next, *prev;   /* [c->lock] c->ra_head: in flight */
    uint32_t m;
    struct ubj_buf *v[];
};

struct ubj_cache {
    pthread_mutex_t lock;        /* everything below but the wb_* fields */
    pthread_cond_t io_cv;        /* broadcast when some io_busy clears or a
                                    snapshot segment is given back */
    uint64_t cold_frozen;        /* cold FROZEN buffers CLOCK met, not yet taken */
    uint32_t outside;            /* ubj_cache_get_unlocking callers that
                                    released their lock for a read: changed
                                    with that lock held as well */
    pthread_cond_t outside_cv;   /* broadcast (waited on with the caller's
                                    lock) when outside drops to 0 */
    pthread_mutex_t wb_lock;     /* serialises writeback; owns wb_* */
    struct ubj_bdev *dev;        /* not owned */
    struct ubj_cache_config cfg;
    struct ubj_cache_hooks hooks;   /* the mode's (ubj_cache_set_hooks) */
    void *hooks_ctx;
    struct cache_snap *snap_free[2];  /* free snapshot segments per kind */
    uint32_t snap_out[2];        /* segments taken and not given back */
    uint32_t sweep;              /* number of the running CLOCK sweep (never 0) */
    uint32_t nbufs;
    uint32_t hash_shift;         /* 64 - log2(number of buckets) */
    uint32_t nbuckets;
    uint32_t hand;               /* CLOCK hand */
    uint32_t dirty_head;         /* the DIRTY buffers (bufs[].dnext), UBJ_NOBUF */
    bool own_desc, own_data;
    bool adopt_pending;          /* UBJ_CACHE_ADOPT until ubj_cache_adopt */
    struct ubj_bufdesc *desc;
    uint8_t *data;
    struct ubj_buf *bufs;
    uint32_t *buckets;
    struct ubj_cache_stats stats;
    struct cache_wb_ent *wb_ents;   /* [wb_lock] nbufs entries */
    uint32_t io_inflight;        /* write requests submitted, not completed */
    struct cache_io *io_head;    /* those requests (a waiter raises its own) */
    uint64_t io_gen;             /* completions so far (a waiter's progress) */
    int victim_err;              /* the error of an eviction write nobody
                                    waited for, until CLOCK reports it */
    bool drives;                 /* the stack holds requests (a queue): a
                                    waiter for a write drives it (drain) */
    uint32_t ra_inflight;        /* asynchronous read-ahead requests
                                    submitted, not completed (ra_head) */
    struct cache_ra_io *ra_head;
    struct ubj_clock *ra_clock;  /* the clock of the buffers' ra_ready (the
                                    stack's; set by a completion) */
};

#if UBJ_TEST_HOOKS
/* test builds: the write-in-flight hook, the unlocked-read hook and the
 * broken variants stable-no-wait and unlock-none (cache.h); process-wide,
 * set by tests only */
static void (*cache_test_hook)(void *, struct ubj_cache *, struct ubj_buf *);
static void *cache_test_hook_arg;
static bool cache_no_stable_wait;
static void (*cache_read_hook)(void *, struct ubj_cache *, uint64_t);
static void *cache_read_hook_arg;
static bool cache_unlock_none;
static bool cache_write_live;
static bool cache_no_wait;
static bool cache_ra_no_ready;
#define CACHE_TEST_POINT(c, b) \
    do { if (cache_test_hook) cache_test_hook(cache_test_hook_arg, (c), (b)); } while (0)
#else
#define CACHE_TEST_POINT(c, b) ((void)0)
#endif


/* ---- hash ---------------------------------------------------------------- */

/* cache_bucket -- the bucket of block number `blkno` (Fibonacci hashing). */
static inline uint32_t cache_bucket(const struct ubj_cache *c, uint64_t blkno)
{
    return (uint32_t)((blkno * 0x9E3779B97F4A7C15ull) >> c->hash_shift);
}

/* cache_find_locked -- the hashed (newest) buffer of `blkno`, or NULL. */
static inline struct ubj_buf *cache_find_locked(struct ubj_cache *c,
                                                uint64_t blkno)
{
    uint32_t i = c->buckets[cache_bucket(c, blkno)];
    while (i != UBJ_NOBUF) {
        struct ubj_buf *b = &c->bufs[i];
        if (b->d->blkno == blkno)
            return b;
        i = b->hash_next;
    }
    return NULL;
}

/* cache_hash_insert_locked -- put b on the chain of its block number. */
static void cache_hash_insert_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    assert(!(b->flags & CACHE_BUF_HASHED));
    uint32_t *head = &c->buckets[cache_bucket(c, b->d->blkno)];
    b->hash_next = *head;
    *head = b->idx;
    b->flags |= CACHE_BUF_HASHED;
}

/* cache_hash_remove_locked -- take b off its hash chain. */
static void cache_hash_remove_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    assert(b->flags & CACHE_BUF_HASHED);
    uint32_t *p = &c->buckets[cache_bucket(c, b->d->blkno)];
    while (*p != b->idx) {
        assert(*p != UBJ_NOBUF);
        p = &c->bufs[*p].hash_next;
    }
    *p = b->hash_next;
    b->hash_next = UBJ_NOBUF;
    b->flags &= ~CACHE_BUF_HASHED;
}

/*
 * cache_detach_locked -- take b out of the hash and out of its version
 * chain.  If b was the hashed newest version, its older version (if any)
 * becomes the hashed one, so reads are served by the newest that remains.
 */
static void cache_detach_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    struct ubj_bufdesc *d = b->d;
    bool hashed = (b->flags & CACHE_BUF_HASHED) != 0;
    if (hashed)
        cache_hash_remove_locked(c, b);
    if (d->older != UBJ_NOBUF) {
        struct ubj_buf *o = &c->bufs[d->older];
        o->d->newer = d->newer;
        if (hashed)
            cache_hash_insert_locked(c, o);
    }
    if (d->newer != UBJ_NOBUF)
        c->desc[d->newer].older = d->older;
    d->older = UBJ_NOBUF;
    d->newer = UBJ_NOBUF;
}

/* ---- invariants ---------------------------------------------------------- */

#ifndef NDEBUG
/* assert_buf_invariants -- invariants 1, 3, 5, 7 for one buffer; true if ok. */
static bool assert_buf_invariants(const struct ubj_cache *c,
                                  const struct ubj_buf *b)
{
    const struct ubj_bufdesc *d = b->d;
    bool hashed = (b->flags & CACHE_BUF_HASHED) != 0;
    bool gone = (b->flags & CACHE_BUF_GONE) != 0;
    bool linked = d->older != UBJ_NOBUF || d->newer != UBJ_NOBUF;
    assert(b == &c->bufs[b->idx] && d == &c->desc[b->idx]);
    assert(b->data == c->data + (size_t)b->idx * CACHE_BS);
    assert(d->state <= UBJ_BUF_FROZEN_OLD);
    assert(!hashed || (d->newer == UBJ_NOBUF && !gone));
    assert(d->state != UBJ_BUF_FREE || !linked);
    assert(d->state != UBJ_BUF_FREE || !hashed || b->io_busy || b->refcnt > 0);
    assert(!gone || (!hashed && !linked && d->state != UBJ_BUF_DIRTY &&
                     (b->refcnt > 0 || b->io_busy)));
    assert(d->state == UBJ_BUF_FREE || gone || (b->flags & UBJ_BUF_LOADED));
    return true;
}

/* assert_cache_invariants -- every numbered invariant, O(nbufs + buckets). */
static bool assert_cache_invariants(struct ubj_cache *c)
{
    uint64_t ndirty = 0, nfrozen = 0, nhashed = 0, nchained = 0;
    assert(c->hand < c->nbufs);
    for (uint32_t i = 0; i < c->nbufs; i++) {
        const struct ubj_buf *b = &c->bufs[i];
        const struct ubj_bufdesc *d = b->d;
        assert(b->idx == i);
        assert(assert_buf_invariants(c, b));
        ndirty += d->state == UBJ_BUF_DIRTY;
        nfrozen += d->state == UBJ_BUF_FROZEN || d->state == UBJ_BUF_FROZEN_OLD;
        if (b->flags & CACHE_BUF_HASHED) {
            nhashed++;
            assert(cache_find_locked(c, d->blkno) == b);
        }
        if (d->older != UBJ_NOBUF) {
            assert(d->older < c->nbufs && c->desc[d->older].newer == i);
            assert(c->desc[d->older].blkno == d->blkno);
        }
        if (d->newer != UBJ_NOBUF) {
            assert(d->newer < c->nbufs && c->desc[d->newer].older == i);
            assert(c->desc[d->newer].blkno == d->blkno);
        }
        bool revoked = d->state == UBJ_BUF_FROZEN_OLD &&
                       !(b->flags & CACHE_BUF_HASHED) &&
                       d->older == UBJ_NOBUF && d->newer == UBJ_NOBUF;
        if (d->state != UBJ_BUF_FREE && !(b->flags & CACHE_BUF_GONE) && !revoked) {
            uint32_t j = i, steps = 0;
            while (c->desc[j].newer != UBJ_NOBUF && steps++ < c->nbufs)
                j = c->desc[j].newer;
            assert(c->bufs[j].flags & CACHE_BUF_HASHED);
        }
    }
    for (uint32_t k = 0; k < c->nbuckets; k++)
        for (uint32_t i = c->buckets[k]; i != UBJ_NOBUF; i = c->bufs[i].hash_next) {
            assert(cache_bucket(c, c->desc[i].blkno) == k);
            assert(c->bufs[i].flags & CACHE_BUF_HASHED);
            nchained++;
        }
    assert(nchained == nhashed);
    assert(ndirty == c->stats.dirty && nfrozen == c->stats.frozen);
    uint64_t nlisted = 0;
    for (uint32_t i = c->dirty_head; i != UBJ_NOBUF && nlisted <= c->nbufs;
         i = c->bufs[i].dnext, nlisted++)
        assert(c->desc[i].state == UBJ_BUF_DIRTY);
    assert(nlisted == ndirty);   /* the dirty list holds exactly the DIRTY */
    return true;
}
#endif

/* ---- states -------------------------------------------------------------- */

#ifndef NDEBUG
/* cache_transition_ok -- true if from -> to is an edge of the diagram. */
static bool cache_transition_ok(uint32_t from, uint32_t to)
{
    static const uint8_t ok[5] = {
        [UBJ_BUF_FREE] = 1u << UBJ_BUF_FREE | 1u << UBJ_BUF_CLEAN |
                         1u << UBJ_BUF_DIRTY,
        [UBJ_BUF_CLEAN] = 1u << UBJ_BUF_CLEAN | 1u << UBJ_BUF_DIRTY |
                          1u << UBJ_BUF_FREE,
        [UBJ_BUF_DIRTY] = 1u << UBJ_BUF_DIRTY | 1u << UBJ_BUF_CLEAN |
                          1u << UBJ_BUF_FROZEN | 1u << UBJ_BUF_FREE,
        [UBJ_BUF_FROZEN] = 1u << UBJ_BUF_FROZEN | 1u << UBJ_BUF_FROZEN_OLD |
                           1u << UBJ_BUF_CLEAN | 1u << UBJ_BUF_FREE,
        [UBJ_BUF_FROZEN_OLD] = 1u << UBJ_BUF_FROZEN_OLD | 1u << UBJ_BUF_FREE,
    };
    return from <= UBJ_BUF_FROZEN_OLD && to <= UBJ_BUF_FROZEN_OLD &&
           (ok[from] >> to & 1u);
}
#endif

/* cache_is_frozen -- FROZEN or FROZEN_OLD. */
static inline bool cache_is_frozen(uint32_t st)
{
    return st == UBJ_BUF_FROZEN || st == UBJ_BUF_FROZEN_OLD;
}

/* cache_dirty_link -- b became DIRTY: put it on the dirty list. */
static void cache_dirty_link(struct ubj_cache *c, struct ubj_buf *b)
{
    b->dprev = UBJ_NOBUF;
    b->dnext = c->dirty_head;
    if (c->dirty_head != UBJ_NOBUF)
        c->bufs[c->dirty_head].dprev = b->idx;
    c->dirty_head = b->idx;
}

/* cache_dirty_unlink -- b stopped being DIRTY: take it off the list. */
static void cache_dirty_unlink(struct ubj_cache *c, struct ubj_buf *b)
{
    if (b->dprev != UBJ_NOBUF)
        c->bufs[b->dprev].dnext = b->dnext;
    else
        c->dirty_head = b->dnext;
    if (b->dnext != UBJ_NOBUF)
        c->bufs[b->dnext].dprev = b->dprev;
    b->dnext = b->dprev = UBJ_NOBUF;
}

/*
 * cache_set_state_locked -- the one place a descriptor's state changes:
 * check the edge, keep the counts, and on FREE detach the buffer (GONE if
 * someone still holds it, otherwise its volatile flags are reset).
 */
static void cache_set_state_locked(struct ubj_cache *c, struct ubj_buf *b,
                                   enum ubj_buf_state st, uint64_t txid)
{
    struct ubj_bufdesc *d = b->d;
    uint32_t old = d->state;
    assert(cache_transition_ok(old, (uint32_t)st));
    c->stats.dirty += (st == UBJ_BUF_DIRTY) - (old == UBJ_BUF_DIRTY);
    if (st == UBJ_BUF_DIRTY && old != UBJ_BUF_DIRTY)
        cache_dirty_link(c, b);
    else if (st != UBJ_BUF_DIRTY && old == UBJ_BUF_DIRTY)
        cache_dirty_unlink(c, b);
    c->stats.frozen += cache_is_frozen(st) - cache_is_frozen(old);
    d->txid = txid;
    d->state = (uint32_t)st;
    if (st == UBJ_BUF_DIRTY && b->io_busy)
        b->flags |= CACHE_BUF_REDIRTY;
    if (st == UBJ_BUF_FREE) {
        if (b->flags & CACHE_BUF_RA)   /* read ahead, never got: wasted */
            c->stats.ra_unused++;
        b->flags &= ~(CACHE_BUF_RA | CACHE_BUF_MARK);
        cache_detach_locked(c, b);
        if (b->refcnt > 0 || b->io_busy)
            b->flags |= CACHE_BUF_GONE;
        else
            b->flags = 0;
    }
    assert(assert_buf_invariants(c, b));
}

/*
 * cache_release_locked -- b lost a hold (reference or io_busy).  When none
 * is left: a GONE buffer becomes FREE; a hashed FREE one (a NOREAD miss
 * nobody dirtied, or a read that failed) is dropped from the hash.
 */
static void cache_release_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    if (b->refcnt > 0 || b->io_busy)
        return;
    if (b->flags & CACHE_BUF_GONE) {
        b->flags &= ~CACHE_BUF_GONE;
        cache_set_state_locked(c, b, UBJ_BUF_FREE, b->d->txid);
    } else if (b->d->state == UBJ_BUF_FREE && (b->flags & CACHE_BUF_HASHED)) {
        cache_set_state_locked(c, b, UBJ_BUF_FREE, b->d->txid);
    }
}

/* ---- waiting for I/O ------------------------------------------------------ */

/*
 * cache_io_wait_locked -- wait for some I/O of the cache to end (io_busy
 * cleared, a segment given back, a write completed); the caller looks at
 * what it waits for again.  When the cache's writes are in flight on a
 * stack that holds requests (a queue: on the virtual clock nothing
 * completes unless someone runs it), drive it: ubj_bdev_drain with
 * c->lock released (the completions take it), then return.  Otherwise
 * sleep on io_cv.
 */
static void cache_io_wait_locked(struct ubj_cache *c)
{
    if (c->io_inflight + c->ra_inflight > 0 && c->drives) {
        pthread_mutex_unlock(&c->lock);
        (void)ubj_bdev_drain(c->dev);   /* its errors go to the requests */
        pthread_mutex_lock(&c->lock);
        return;
    }
    pthread_cond_wait(&c->io_cv, &c->lock);
}

/* ---- snapshots ----------------------------------------------------------- */

/* cache_snap_new -- allocate a segment of `kind`, or NULL. */
static struct cache_snap *cache_snap_new(unsigned kind)
{
    struct cache_snap *s = calloc(1, sizeof *s);
    void *p = NULL;
    size_t blocks = kind == CACHE_SNAP_RUN ? CACHE_WB_MAX_RUN : 1u;
    if (s == NULL || posix_memalign(&p, CACHE_BS, blocks * CACHE_BS) != 0) {
        free(s);
        return NULL;
    }
    s->data = p;
    s->kind = kind;
    return s;
}

/*
 * cache_snap_take_locked -- a segment of `kind` for one write: a free one,
 * a new one, or (out of memory) the next one given back -- creation made
 * one of each kind, so some writer holds it and will return it (hooks
 * never wait for the cache's I/O).  May wait on io_cv.
 */
static struct cache_snap *cache_snap_take_locked(struct ubj_cache *c,
                                                 unsigned kind)
{
    for (;;) {
        struct cache_snap *s = c->snap_free[kind];
        if (s == NULL)
            s = cache_snap_new(kind);
        else
            c->snap_free[kind] = s->next;
        if (s != NULL) {
            c->snap_out[kind]++;
            return s;
        }
        assert(c->snap_out[kind] > 0);
        cache_io_wait_locked(c);
    }
}

/* cache_snap_put_locked -- give a segment back; wake a writer waiting. */
static void cache_snap_put_locked(struct ubj_cache *c, struct cache_snap *s)
{
    assert(c->snap_out[s->kind] > 0);
    c->snap_out[s->kind]--;
    s->next = c->snap_free[s->kind];
    c->snap_free[s->kind] = s;
    pthread_cond_broadcast(&c->io_cv);
}

/* ---- writing home -------------------------------------------------------- */

/* cache_filled -- tell the configured fill hook that the device wrote the
 * data of v[0..m) (mode ubj charges the NVM writes).  Without c->lock. */
static void cache_filled(const struct ubj_cache *c, struct ubj_buf *const *v, uint32_t m)
{
    if (c->cfg.fill == NULL)
        return;
    for (uint32_t j = 0; j < m; j++)
        c->cfg.fill(c->cfg.fill_ctx, v[j]->data, CACHE_BS);
}

/* cache_clock_ns -- the configured clock for device waits, or 0. */
static inline uint64_t cache_clock_ns(const struct ubj_cache *c)
{
    return c->cfg.clock_ns != NULL ? c->cfg.clock_ns(c->cfg.clock_ctx) : 0;
}

/* cache_count_wait_locked -- add the clock time since t0 to *ctr. */
static inline void cache_count_wait_locked(const struct ubj_cache *c, uint64_t *ctr,
                                           uint64_t t0)
{
    uint64_t t = cache_clock_ns(c);
    *ctr += t > t0 ? t - t0 : 0;
}

/* cache_count_write_locked -- account one block written home. */
static void cache_count_write_locked(struct ubj_cache *c, const struct ubj_buf *b)
{
    c->stats.writeback_blocks++;
    if (b->d->kind == UBJ_KIND_META)
        c->stats.writeback_meta_bytes += CACHE_BS;
    else
        c->stats.writeback_data_bytes += CACHE_BS;
}

/* cache_hk_locked -- the hooks a write starting now uses. */
static inline struct cache_hk cache_hk_locked(const struct ubj_cache *c)
{
    return (struct cache_hk){ .h = c->hooks, .ctx = c->hooks_ctx };
}

/*
 * cache_pick_locked -- b (not io_busy) is about to be written: set
 * io_busy, forget an earlier REDIRTY, and describe it in *e.
 */
static void cache_pick_locked(struct ubj_buf *b, struct cache_wb_ent *e)
{
    assert(!b->io_busy);
    b->io_busy = 1;
    b->flags = (b->flags & ~CACHE_BUF_REDIRTY) | CACHE_BUF_COPYING;
    *e = (struct cache_wb_ent){
        .blkno = b->d->blkno, .idx = b->idx,
        .dirty = b->d->state == UBJ_BUF_DIRTY,
        .seal = (b->flags & UBJ_BUF_SEAL) != 0,
        .meta = b->d->kind == UBJ_KIND_META,
    };
}

/* cache_copied -- b's snapshot is taken: end its stable-buffer window
 * (CACHE_BUF_COPYING) and wake the writers waiting in
 * ubj_cache_wait_stable.  Takes c->lock. */
static void cache_copied(struct ubj_cache *c, struct ubj_buf *b)
{
    pthread_mutex_lock(&c->lock);
    b->flags &= ~CACHE_BUF_COPYING;
    pthread_cond_broadcast(&c->io_cv);
    pthread_mutex_unlock(&c->lock);
}

/*
 * cache_snap_fill -- the stable snapshot of b (io_busy, picked into e) in
 * snap: copy the live bytes, let write_begin decide (DIRTY buffers only),
 * seal the copy.  Sets and returns e->verdict.  Runs without c->lock.
 */
static int cache_snap_fill(struct ubj_cache *c, const struct cache_hk *hk,
                           struct ubj_buf *b, struct cache_wb_ent *e,
                           uint8_t *snap, unsigned wflags)
{
    CACHE_TEST_POINT(c, b);   /* a test may park the write here */
    memcpy(snap, b->data, CACHE_BS);
    int v = UBJ_WRITE_AS_IS;
    if (e->dirty && hk->h.write_begin != NULL)
        v = hk->h.write_begin(hk->ctx, b, e->blkno, b->data, snap, wflags);
    cache_copied(c, b);       /* the window closes: writers may go on */
    assert(v == UBJ_WRITE_AS_IS || v == UBJ_WRITE_ROLLED_BACK ||
           (v == UBJ_WRITE_DEFER && !(wflags & UBJ_WRITE_MUST)));
    if (v != UBJ_WRITE_DEFER && c->cfg.seal != NULL &&
        (e->seal || (v == UBJ_WRITE_ROLLED_BACK && e->meta)))
        c->cfg.seal(c->cfg.ctx, e->blkno, snap);
    e->verdict = v == UBJ_WRITE_ROLLED_BACK || v == UBJ_WRITE_DEFER ? v
                                                                    : UBJ_WRITE_AS_IS;
    return e->verdict;
}

/* cache_write_done -- the write of e finished: tell write_done (a write of
 * a DIRTY buffer only).  Runs without c->lock, b still io_busy. */
static void cache_write_done(const struct cache_hk *hk, struct ubj_buf *b,
                             const struct cache_wb_ent *e)
{
    if (e->dirty && hk->h.write_done != NULL)
        hk->h.write_done(hk->ctx, b, e->blkno, e->rc,
                         e->verdict == UBJ_WRITE_ROLLED_BACK);
}

/*
 * cache_io_finish_locked -- a write of b (started with io_busy set)
 * finished with `rc`: count it, make b CLEAN if it was DIRTY (and not
 * re-dirtied in flight nor rolled back) or FROZEN unless keep_state, clear
 * io_busy, wake waiters, release the hold.
 */
static void cache_io_finish_locked(struct ubj_cache *c, struct ubj_buf *b,
                                   int rc, bool keep_state, bool rolled_back)
{
    assert(b->io_busy);
    b->io_busy = 0;
    if (rc == 0) {
        cache_count_write_locked(c, b);
        c->stats.write_rolled_back += rolled_back;
        uint32_t st = b->d->state;
        if (!keep_state &&
            ((st == UBJ_BUF_DIRTY && !(b->flags & CACHE_BUF_REDIRTY) &&
              !rolled_back) || st == UBJ_BUF_FROZEN))
            cache_set_state_locked(c, b, UBJ_BUF_CLEAN, b->d->txid);
    }
    b->flags &= ~(CACHE_BUF_REDIRTY | CACHE_BUF_COPYING);
    pthread_cond_broadcast(&c->io_cv);
    cache_release_locked(c, b);
}

/* cache_io_end_locked -- the end of e's write (or of its deferral: no
 * write happened, b stays DIRTY). */
static void cache_io_end_locked(struct ubj_cache *c, const struct cache_wb_ent *e)
{
    struct ubj_buf *b = &c->bufs[e->idx];
    if (e->verdict != UBJ_WRITE_DEFER) {
        cache_io_finish_locked(c, b, e->rc, false,
                               e->verdict == UBJ_WRITE_ROLLED_BACK);
        return;
    }
    c->stats.write_deferred++;
    assert(b->io_busy);
    b->io_busy = 0;
    b->flags &= ~(CACHE_BUF_REDIRTY | CACHE_BUF_COPYING);
    pthread_cond_broadcast(&c->io_cv);
    cache_release_locked(c, b);
}

/* ---- asynchronous writes ------------------------------------------------- */

/* cache_flush_crit -- the class of a flush the caller's flags ask for:
 * time-critical unless nobody waits (UBJ_WB_BACKGROUND). */
static inline enum ubj_req_crit cache_flush_crit(unsigned flags)
{
    return (flags & UBJ_WB_BACKGROUND) ? UBJ_CRIT_NONCRITICAL : UBJ_CRIT_CRITICAL;
}

/* cache_batch_init -- an empty batch; its waiter waits on the model's
 * clock too unless the caller's flags say UBJ_WB_BACKGROUND (nobody
 * waits: the timer's tick, an early checkpoint). */
static struct cache_batch cache_batch_init(unsigned flags)
{
    return (struct cache_batch){ .wait_clock = !(flags & UBJ_WB_BACKGROUND) };
}

/*
 * cache_io_new_locked -- a write request for at most n entries with hooks
 * hk, for `batch` (NULL: nobody waits), with a segment of `kind` unless
 * kind is -1 (zero copy: the caller may set snap itself).  NULL when out
 * of memory (nothing taken).  c->lock held; may wait for a segment
 * (cache_snap_take_locked: the lock is dropped meanwhile).
 */
static struct cache_io *cache_io_new_locked(struct ubj_cache *c, uint32_t n,
                                            const struct cache_hk *hk,
                                            struct cache_batch *batch, int kind)
{
    struct cache_io *io = malloc(sizeof *io + (size_t)n * sizeof io->ent[0]);
    if (io == NULL)
        return NULL;
    io->c = c;
    io->hk = hk != NULL ? *hk : (struct cache_hk){ 0 };
    io->batch = batch;
    io->keep_state = false;
    io->n = 0;
    io->snap = kind >= 0 ? cache_snap_take_locked(c, (unsigned)kind) : NULL;
    return io;
}

/* cache_io_new -- the same, taking c->lock. */
static struct cache_io *cache_io_new(struct ubj_cache *c, uint32_t n,
                                     const struct cache_hk *hk,
                                     struct cache_batch *batch, int kind)
{
    pthread_mutex_lock(&c->lock);
    struct cache_io *io = cache_io_new_locked(c, n, hk, batch, kind);
    pthread_mutex_unlock(&c->lock);
    return io;
}

/* cache_io_free_locked -- give back an io that was never submitted. */
static void cache_io_free_locked(struct ubj_cache *c, struct cache_io *io)
{
    if (io->snap != NULL)
        cache_snap_put_locked(c, io->snap);
    free(io);
}

/*
 * cache_io_done -- the completion callback of a cache write (any thread,
 * no lock held; maybe inside ubj_bdev_submit): tell write_done for each
 * entry, then under c->lock give the segment back, end each buffer's
 * write (CLEAN unless rolled back or redirtied; states kept for
 * write_bufs), count the completion in the batch and free the request.
 */
static void cache_io_done(struct ubj_req *r)
{
    struct cache_io *io = r->priv;
    struct ubj_cache *c = io->c;
    int rc = r->result;
    for (uint32_t k = 0; k < io->n; k++) {
        io->ent[k].rc = rc;
        cache_write_done(&io->hk, &c->bufs[io->ent[k].idx], &io->ent[k]);
    }
    pthread_mutex_lock(&c->lock);
    if (io->snap != NULL)
        cache_snap_put_locked(c, io->snap);
    for (uint32_t k = 0; k < io->n; k++) {
        if (io->keep_state)
            cache_io_finish_locked(c, &c->bufs[io->ent[k].idx], rc, true, false);
        else
            cache_io_end_locked(c, &io->ent[k]);
    }
    struct cache_batch *bt = io->batch;
    if (bt != NULL) {
        bt->pending--;
        if (rc < 0 && bt->rc == 0)
            bt->rc = rc;
        if (r->clock != NULL && (bt->clock == NULL || r->t_complete > bt->t_max)) {
            bt->clock = r->clock;
            bt->t_max = r->t_complete;
        }
    } else if (rc < 0 && c->victim_err == 0) {
        c->victim_err = rc;   /* an eviction write: CLOCK reports it */
    }
    if (io->prev != NULL)
        io->prev->next = io->next;
    else
        c->io_head = io->next;
    if (io->next != NULL)
        io->next->prev = io->prev;
    assert(c->io_inflight > 0);
    c->io_inflight--;
    c->io_gen++;
    pthread_cond_broadcast(&c->io_cv);
    pthread_mutex_unlock(&c->lock);
    free(io);
}

/*
 * cache_io_submit -- send io (its n entries picked, their snapshot in
 * `data`) as one time-noncritical write of blocks [blkno, blkno + n):
 * waits while CACHE_IO_MAX requests are in flight, then submits without
 * c->lock.  The completion may run before this returns.  A waiter's
 * request is marked UBJ_REQ_SYNC (a model counts the others as
 * asynchronous).
 */
static void cache_io_submit(struct ubj_cache *c, struct cache_io *io,
                            uint64_t blkno, void *data)
{
    pthread_mutex_lock(&c->lock);
    while (c->io_inflight >= CACHE_IO_MAX)
        cache_io_wait_locked(c);
    c->io_inflight++;
    if (c->io_inflight > c->stats.io_inflight_max)
        c->stats.io_inflight_max = c->io_inflight;
    c->stats.io_writes++;
    if (io->batch != NULL)
        io->batch->pending++;
    ubj_req_init(&io->req, UBJ_REQ_WRITE, blkno, io->n, data);
    io->prev = NULL;
    io->next = c->io_head;
    if (c->io_head != NULL)
        c->io_head->prev = io;
    c->io_head = io;
    pthread_mutex_unlock(&c->lock);
    io->req.crit = UBJ_CRIT_NONCRITICAL;
    io->req.flags = io->batch != NULL && io->batch->wait_clock ? UBJ_REQ_SYNC : 0;
    io->req.done = cache_io_done;
    io->req.priv = io;
    int rc = ubj_bdev_submit(c->dev, &io->req);
    if (rc < 0) {   /* rejected: never completed by the device */
        io->req.result = rc;
        io->req.clock = NULL;
        cache_io_done(&io->req);
    }
}

/*
 * cache_batch_raise_locked -- a process now waits for bt's requests (an
 * fsync, a commit's ordering point, an unmount): raise those still in
 * flight to time-critical, so a queue serves them before background
 * write-back.  c->lock held: a request on c->io_head is not freed until
 * its completion has taken c->lock (ubj_bdev_raise takes only the
 * queue's lock, which is never held across a completion).
 */
static void cache_batch_raise_locked(struct ubj_cache *c, struct cache_batch *bt)
{
    for (struct cache_io *io = c->io_head; io != NULL; io = io->next)
        if (io->batch == bt &&
            __atomic_load_n(&io->req.crit, __ATOMIC_RELAXED) < UBJ_CRIT_CRITICAL &&
            ubj_bdev_raise(c->dev, &io->req, UBJ_CRIT_CRITICAL, 0) == 0)
            c->stats.io_raised++;
}

/*
 * cache_buf_raise_locked -- a process now waits for the write of b in
 * flight, another caller's (its write_home, seal, stable-page wait, a
 * write-back or checkpoint of its own meeting b): raise the request that
 * writes b to time-critical, so a queue serves it before background work
 * (issue 18: "raised when a process waits on them").  Nothing to do
 * without a queue (c->drives), or when b's I/O is no write of the cache
 * (a read, a seal).  c->lock held, as for cache_batch_raise_locked.
 */
static void cache_buf_raise_locked(struct ubj_cache *c, const struct ubj_buf *b)
{
    if (!c->drives || !b->io_busy)
        return;
    for (struct cache_io *io = c->io_head; io != NULL; io = io->next)
        for (uint32_t k = 0; k < io->n; k++) {
            if (io->ent[k].idx != b->idx)
                continue;
            if (__atomic_load_n(&io->req.crit, __ATOMIC_RELAXED) < UBJ_CRIT_CRITICAL &&
                ubj_bdev_raise(c->dev, &io->req, UBJ_CRIT_CRITICAL, 0) == 0)
                c->stats.io_raised++;
            return;
        }
}

/*
 * cache_batch_wait -- wait until every request of bt has completed
 * (driving a queue below if need be), then, if bt->wait_clock, on the
 * model's clock until the latest of their modeled completions.  Returns
 * the first error or 0.  Called without c->lock.
 */
static int cache_batch_wait(struct ubj_cache *c, struct cache_batch *bt)
{
    pthread_mutex_lock(&c->lock);
#if UBJ_TEST_HOOKS
    if (cache_no_wait) {   /* broken variant cache-no-wait: nobody waits */
        for (struct cache_io *io = c->io_head; io != NULL; io = io->next)
            if (io->batch == bt)
                io->batch = NULL;   /* bt is gone when they complete */
        pthread_mutex_unlock(&c->lock);
        return 0;
    }
#endif
    if (bt->wait_clock && bt->pending > 0 && c->drives)
        cache_batch_raise_locked(c, bt);
    while (bt->pending > 0)
        cache_io_wait_locked(c);
    pthread_mutex_unlock(&c->lock);
    if (bt->wait_clock && bt->clock != NULL)
        ubj_clock_wait_until(bt->clock, bt->t_max);
    return bt->rc;
}

/*
 * cache_write_one_locked -- write b (not io_busy) home from a snapshot,
 * with c->lock dropped around the copy, the hooks, the seal and the
 * submission; wflags go to write_begin.  With `bt` the write is waited
 * for (cache_batch_wait); without, it is in flight on return (or already
 * done, on a device that completes inside submit) and nobody waits.
 * Returns 0 (written or in flight, *verdict AS_IS or ROLLED_BACK;
 * deferred, *verdict DEFER), the waited write's error, or -ENOMEM
 * (nothing done).
 */
static int cache_write_one_locked(struct ubj_cache *c, struct ubj_buf *b,
                                  unsigned wflags, struct cache_batch *bt,
                                  int *verdict)
{
    struct cache_hk hk = cache_hk_locked(c);
    struct cache_wb_ent e;
    cache_pick_locked(b, &e);
    struct cache_io *io = cache_io_new_locked(c, 1, &hk, bt, CACHE_SNAP_ONE);
    if (io == NULL) {
        e.verdict = UBJ_WRITE_AS_IS;
        cache_io_finish_locked(c, b, -ENOMEM, false, false);   /* not written */
        return ubj_set_error(-ENOMEM, "cache: out of memory for a write");
    }
    pthread_mutex_unlock(&c->lock);
    *verdict = cache_snap_fill(c, &hk, b, &e, io->snap->data, wflags);
    if (*verdict != UBJ_WRITE_DEFER) {
        io->ent[0] = e;
        io->n = 1;
        void *src = io->snap->data;
#if UBJ_TEST_HOOKS
        if (cache_write_live)
            src = b->data;   /* broken variant write-live */
#endif
        cache_io_submit(c, io, e.blkno, src);
    }
    int rc = bt != NULL && *verdict != UBJ_WRITE_DEFER ? cache_batch_wait(c, bt) : 0;
    pthread_mutex_lock(&c->lock);
    if (*verdict == UBJ_WRITE_DEFER) {
        cache_io_free_locked(c, io);
        cache_io_end_locked(c, &e);
    }
    return rc;
}

/* ---- replacement --------------------------------------------------------- */

/* cache_clock_skip -- true if CLOCK may not consider b at all. */
static inline bool cache_clock_skip(const struct ubj_buf *b)
{
    return b->refcnt > 0 || b->io_busy || (b->flags & UBJ_BUF_PINNED) ||
           cache_is_frozen(b->d->state) || b->d->older != UBJ_NOBUF;
}

/* cache_clock_frozen -- CLOCK passes a FROZEN (or PINNED dirty) buffer
 * it may not evict: second chance as for others; count it when cold. */
static inline void cache_clock_frozen(struct ubj_cache *c, struct ubj_buf *b)
{
    bool pinned = b->d->state == UBJ_BUF_DIRTY && (b->flags & UBJ_BUF_PINNED);
    if ((b->d->state != UBJ_BUF_FROZEN && !pinned) || b->refcnt > 0 || b->io_busy)
        return;
    if (b->referenced)
        b->referenced = 0;
    else
        c->cold_frozen++;
}

/*
 * cache_clock_dirty_locked -- CLOCK's DIRTY candidate b: write it home
 * (lock dropped) with wflags.  A deferred or rolled-back write marks b
 * passed for the rest of this sweep and sets *deferred; a failed one is
 * remembered in *io_err and b gets a second chance.  Returns whether the
 * hand moves on (otherwise b is looked at again: it may be CLEAN now).
 */
static bool cache_clock_dirty_locked(struct ubj_cache *c, struct ubj_buf *b,
                                     unsigned wflags, int *io_err, bool *deferred)
{
    int verdict;
    /* not waited for -- but over a request queue it is (see the header:
     * unwaited, the hand would write every dirty buffer it passes while
     * the first write sits in the queue, one block per request) */
    struct cache_batch bt = cache_batch_init(0);   /* the getter's */
    uint64_t t0 = cache_clock_ns(c);
    int rc = cache_write_one_locked(c, b, wflags, c->drives ? &bt : NULL, &verdict);
    cache_count_wait_locked(c, &c->stats.victim_wait_ns, t0);
    if (rc < 0) {
        *io_err = rc;
        b->referenced = 1;
        return true;
    }
    if (verdict == UBJ_WRITE_AS_IS)
        return false;   /* look again: CLEAN if done already, else in flight */
    b->defer_sweep = c->sweep;
    *deferred = true;
    return true;
}

/*
 * cache_clock_locked -- sweep at most two rounds for a reusable buffer;
 * returns it FREE and unhashed, or NULL.  A DIRTY candidate is written
 * home (lock dropped; write_begin asked with wflags) and looked at again
 * (that second look is not a step of the two rounds: a candidate written
 * at the last step is still taken);
 * one it deferred or rolled back is passed for the rest of the sweep
 * (*deferred set), a failed write is remembered in *io_err and the
 * candidate passed over.
 */
static struct ubj_buf *cache_clock_locked(struct ubj_cache *c, unsigned wflags,
                                          int *io_err, bool *deferred)
{
    if (++c->sweep == 0)
        c->sweep = 1;   /* 0 is "never deferred" */
    uint64_t relooks = 0;   /* a written candidate's second look is free */
    for (uint64_t steps = 0; steps < 2ull * c->nbufs; steps++) {
        struct ubj_buf *b = &c->bufs[c->hand];
        uint32_t next = c->hand + 1 == c->nbufs ? 0 : c->hand + 1;
        if (cache_clock_skip(b)) {
            cache_clock_frozen(c, b);
            c->hand = next;
            continue;
        }
        if (b->d->state == UBJ_BUF_FREE) {
            c->hand = next;
            return b;
        }
        if (b->referenced) {
            b->referenced = 0;
            c->hand = next;
            continue;
        }
        if (b->d->state == UBJ_BUF_DIRTY && (wflags & CACHE_CLOCK_NOWRITE)) {
            c->hand = next;   /* read-ahead: never a write-back */
            continue;
        }
        if (b->d->state == UBJ_BUF_DIRTY) {
            if (b->defer_sweep == c->sweep ||
                cache_clock_dirty_locked(c, b, wflags, io_err, deferred))
                c->hand = next;
            else if (relooks++ < c->nbufs)
                steps--;   /* written: look at b again, even at the end */
            continue;      /* (the lock was dropped meanwhile) */
        }
        assert(b->d->state == UBJ_BUF_CLEAN);
        c->hand = next;
        cache_set_state_locked(c, b, UBJ_BUF_FREE, b->d->txid);
        c->stats.evictions++;
        return b;
    }
    return NULL;
}

/* cache_count_held_locked -- buffers referenced by a caller right now. */
static uint32_t cache_count_held_locked(const struct ubj_cache *c, bool *busy)
{
    uint32_t n = 0;
    *busy = false;
    for (uint32_t i = 0; i < c->nbufs; i++) {
        n += c->bufs[i].refcnt > 0;
        *busy = *busy || c->bufs[i].io_busy;
    }
    return n;
}

/* cache_reclaim_locked -- call the reclaim hook (c->lock dropped around
 * it).  0, -ENOBUFS (no hook) or the hook's error. */
static int cache_reclaim_locked(struct ubj_cache *c)
{
    struct cache_hk hk = cache_hk_locked(c);
    if (hk.h.reclaim == NULL)
        return -ENOBUFS;
    c->stats.reclaims++;
    pthread_mutex_unlock(&c->lock);
    int rc = hk.h.reclaim(hk.ctx);
    pthread_mutex_lock(&c->lock);
    return rc;
}

/*
 * cache_alloc_locked -- a FREE unhashed buffer to reuse (c->lock may be
 * dropped and retaken).  When CLOCK finds nothing: -ENOBUFS if every
 * buffer is referenced; wait if some I/O is in flight; -EIO if writing a
 * dirty victim failed; sweep again with UBJ_WRITE_MUST if a dirty
 * candidate was deferred or rolled back (at most CACHE_MUST_TRIES sweeps
 * in a row); else call the reclaim hook and retry (its error is
 * returned), and give up with -ENOBUFS after CACHE_RECLAIM_TRIES calls or
 * when there is no reclaim hook.
 */
static int cache_alloc_locked(struct ubj_cache *c, struct ubj_buf **out)
{
    unsigned tries = 0, musts = 0;
    for (;;) {
        int io_err = 0;
        bool busy, deferred = false;
        struct ubj_buf *b = cache_clock_locked(c, musts ? UBJ_WRITE_MUST : 0,
                                               &io_err, &deferred);
        if (b != NULL) {
            *out = b;
            return 0;
        }
        if (cache_count_held_locked(c, &busy) == c->nbufs)
            return -ENOBUFS;
        if (busy) {
            cache_io_wait_locked(c);
            continue;
        }
        if (io_err == 0 && c->victim_err < 0) {
            io_err = c->victim_err;   /* an eviction write in flight failed */
            c->victim_err = 0;
        }
        if (io_err < 0)
            return io_err;
        if (deferred && musts < CACHE_MUST_TRIES) {
            musts++;
            c->stats.must_sweeps++;
            continue;
        }
        if (tries++ >= CACHE_RECLAIM_TRIES)
            return -ENOBUFS;
        int rc = cache_reclaim_locked(c);
        if (rc < 0)
            return rc;
        musts = 0;
    }
}

/* ---- creation ------------------------------------------------------------ */

/* cache_init_bufs -- every volatile part reset; with `descs`, every
 * descriptor FREE too (otherwise they are left for ubj_cache_adopt). */
static void cache_init_bufs(struct ubj_cache *c, bool descs)
{
    for (uint32_t i = 0; i < c->nbufs && descs; i++)
        c->desc[i] = (struct ubj_bufdesc){
            .state = UBJ_BUF_FREE, .kind = UBJ_KIND_DATA,
            .older = UBJ_NOBUF, .newer = UBJ_NOBUF,
        };
    for (uint32_t i = 0; i < c->nbufs; i++) {
        c->bufs[i] = (struct ubj_buf){
            .idx = i, .hash_next = UBJ_NOBUF,
            .dnext = UBJ_NOBUF, .dprev = UBJ_NOBUF,
            .d = &c->desc[i], .data = c->data + (size_t)i * CACHE_BS,
        };
    }
    for (uint32_t k = 0; k < c->nbuckets; k++)
        c->buckets[k] = UBJ_NOBUF;
    c->dirty_head = UBJ_NOBUF;
}

/* cache_alloc_arrays -- allocate what the caller did not supply. */
static int cache_alloc_arrays(struct ubj_cache *c)
{
    size_t n = c->nbufs;
    if (c->desc == NULL) {
        c->desc = calloc(n, sizeof *c->desc);
        c->own_desc = true;
    }
    if (c->data == NULL) {
        void *p = NULL;
        if (posix_memalign(&p, CACHE_BS, n * CACHE_BS) == 0)
            c->data = p;
        c->own_data = true;
    }
    c->bufs = calloc(n, sizeof *c->bufs);
    c->buckets = malloc((size_t)c->nbuckets * sizeof *c->buckets);
    c->wb_ents = malloc(n * sizeof *c->wb_ents);
    for (unsigned kind = CACHE_SNAP_ONE; kind <= CACHE_SNAP_RUN; kind++)
        c->snap_free[kind] = cache_snap_new(kind);   /* one of each, always */
    if (!c->desc || !c->data || !c->bufs || !c->buckets || !c->wb_ents ||
        !c->snap_free[CACHE_SNAP_ONE] || !c->snap_free[CACHE_SNAP_RUN])
        return -ENOMEM;
    return 0;
}

/* cache_free_arrays -- free what cache_alloc_arrays allocated. */
static void cache_free_arrays(struct ubj_cache *c)
{
    if (c->own_desc)
        free(c->desc);
    if (c->own_data)
        free(c->data);
    free(c->bufs);
    free(c->buckets);
    free(c->wb_ents);
    for (unsigned kind = CACHE_SNAP_ONE; kind <= CACHE_SNAP_RUN; kind++)
        while (c->snap_free[kind] != NULL) {
            struct cache_snap *sn = c->snap_free[kind];
            c->snap_free[kind] = sn->next;
            free(sn->data);
            free(sn);
        }
}

/* ubj_cache_create -- build a cache of cfg->nbufs buffers over dev. */
int ubj_cache_create(struct ubj_bdev *dev, const struct ubj_cache_config *cfg,
                     struct ubj_cache **out)
{
    if (dev == NULL || cfg == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "cache: NULL argument");
    if (cfg->nbufs < 16 || cfg->nbufs > CACHE_MAX_NBUFS)
        return ubj_set_error(-EINVAL, "cache: %u buffers (need 16..%u)",
                             cfg->nbufs, CACHE_MAX_NBUFS);
    if (dev->block_size != CACHE_BS)
        return ubj_set_error(-EINVAL, "cache: device block size %u, need %u",
                             dev->block_size, CACHE_BS);
    if (((uintptr_t)cfg->data_mem & (CACHE_BS - 1)) != 0)
        return ubj_set_error(-EINVAL, "cache: data memory not 4096-aligned");
    struct ubj_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return ubj_set_error(-ENOMEM, "cache: out of memory");
    c->dev = dev;
    c->cfg = *cfg;
    c->nbufs = cfg->nbufs;
    uint32_t bits = 1;
    while ((1ull << bits) < 2ull * c->nbufs)
        bits++;
    c->nbuckets = 1u << bits;
    c->hash_shift = 64 - bits;
    c->desc = cfg->desc_mem;
    c->data = cfg->data_mem;
    if (cache_alloc_arrays(c) < 0) {
        cache_free_arrays(c);
        free(c);
        return ubj_set_error(-ENOMEM, "cache: out of memory for %u buffers",
                             cfg->nbufs);
    }
    c->adopt_pending = (cfg->flags & UBJ_CACHE_ADOPT) != 0;
    c->drives = ubj_queue_find(dev) != NULL;
    cache_init_bufs(c, !c->adopt_pending);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->wb_lock, NULL);
    pthread_cond_init(&c->io_cv, NULL);
    pthread_cond_init(&c->outside_cv, NULL);
    assert(c->adopt_pending || assert_cache_invariants(c));
    *out = c;
    return 0;
}

/* ubj_cache_destroy -- free the cache; nothing is written back. */
void ubj_cache_destroy(struct ubj_cache *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    while (c->io_inflight + c->ra_inflight > 0)   /* a write nobody waited for
                                                     (eviction), a read-ahead */
        cache_io_wait_locked(c);
    assert(c->adopt_pending || assert_cache_invariants(c));
    assert(c->snap_out[CACHE_SNAP_ONE] == 0 && c->snap_out[CACHE_SNAP_RUN] == 0);
    pthread_mutex_unlock(&c->lock);
    pthread_cond_destroy(&c->io_cv);
    pthread_cond_destroy(&c->outside_cv);
    pthread_mutex_destroy(&c->wb_lock);
    pthread_mutex_destroy(&c->lock);
    cache_free_arrays(c);
    free(c);
}

/* ---- get / lookup / put -------------------------------------------------- */

/* cache_hit_locked -- take a reference on a found, loaded buffer; the
 * first get of a read-ahead buffer counts it used. */
static inline void cache_hit_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    b->refcnt++;
    b->referenced = 1;
    if (b->flags & CACHE_BUF_RA) {
        b->flags &= ~CACHE_BUF_RA;
        c->stats.ra_used++;
    }
}

/* cache_outer_drop_locked -- a miss's device read is about to start
 * (c->lock and `outer`, if any, held): whether `outer` will be released
 * for it (not by the broken variant unlock-none); if so it is counted in
 * c->outside (ubj_cache_wait_unlocked), under both locks. */
static bool cache_outer_drop_locked(struct ubj_cache *c, pthread_mutex_t *outer)
{
    bool drop = outer != NULL;
#if UBJ_TEST_HOOKS
    drop = drop && !cache_unlock_none;   /* broken variant: keeps it */
#endif
    if (drop)
        c->outside++;
    return drop;
}

/* cache_outer_release -- c->lock released, the read of blkno next:
 * release `outer` if `drop` (*dropped set); test builds call the
 * unlocked-read hook for any `outer`. */
static void cache_outer_release(struct ubj_cache *c, uint64_t blkno,
                                pthread_mutex_t *outer, bool drop, bool *dropped)
{
    if (drop) {
        pthread_mutex_unlock(outer);
        *dropped = true;
    }
#if UBJ_TEST_HOOKS
    if (outer != NULL && cache_read_hook != NULL)
        cache_read_hook(cache_read_hook_arg, c, blkno);
#else
    (void)c;
    (void)blkno;
#endif
}

/* cache_outer_retake_locked -- the read ended (c->lock held): retake
 * `outer` if it was released, without c->lock (its order comes first),
 * and uncount it.  Returns with c->lock held. */
static void cache_outer_retake_locked(struct ubj_cache *c, pthread_mutex_t *outer,
                                      bool dropped)
{
    if (!dropped)
        return;
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(outer);
    pthread_mutex_lock(&c->lock);
    if (--c->outside == 0)
        pthread_cond_broadcast(&c->outside_cv);
}

/*
 * cache_fill -- load a freshly claimed buffer (refcnt 1, io_busy, hashed,
 * FREE) from the device, or zero it for NOREAD.  Called and returns with
 * c->lock held.  On a read error the buffer is released (nothing cached).
 * With `outer` (ubj_cache_get_unlocking; never for NOREAD) the caller's
 * lock is released around the device read and retaken after io_busy
 * cleared and the state is set, without c->lock (its order comes first):
 * a thread holding `outer` and waiting on io_cv for this buffer is woken
 * without needing `outer`.  *dropped tells whether it was released.
 */
static int cache_fill(struct ubj_cache *c, struct ubj_buf *b, unsigned flags,
                      pthread_mutex_t *outer, bool *dropped)
{
    int rc = 0;
    uint64_t t0 = 0;
    if (flags & UBJ_GET_NOREAD)
        outer = NULL;
    bool drop = cache_outer_drop_locked(c, outer);
    pthread_mutex_unlock(&c->lock);
    if (flags & UBJ_GET_NOREAD) {
        memset(b->data, 0, CACHE_BS);
    } else {
        cache_outer_release(c, b->d->blkno, outer, drop, dropped);
        t0 = cache_clock_ns(c);
        rc = ubj_bdev_read(c->dev, b->d->blkno, 1, b->data);
        if (rc == 0)
            cache_filled(c, &b, 1);
    }
    pthread_mutex_lock(&c->lock);
    if (!(flags & UBJ_GET_NOREAD))
        cache_count_wait_locked(c, *dropped ? &c->stats.read_wait_unlocked_ns
                                            : &c->stats.read_wait_locked_ns, t0);
    b->io_busy = 0;
    pthread_cond_broadcast(&c->io_cv);
    if (rc < 0) {
        assert(b->refcnt == 1);   /* waiters hold no reference */
        b->refcnt = 0;
        cache_release_locked(c, b);
    } else if (flags & UBJ_GET_NOREAD) {
        b->flags |= UBJ_BUF_LOADED;
    } else {
        b->flags |= UBJ_BUF_LOADED | UBJ_BUF_VERIFY;
        if (!(b->flags & CACHE_BUF_GONE))
            cache_set_state_locked(c, b, UBJ_BUF_CLEAN, 0);
    }
    cache_outer_retake_locked(c, outer, *dropped);
    return rc < 0 ? rc : 0;
}

/* cache_claim_locked -- make v the loading buffer of blkno: hashed,
 * io_busy, one reference (a miss's fill follows). */
static void cache_claim_locked(struct ubj_cache *c, struct ubj_buf *v, uint64_t blkno)
{
    v->d->blkno = blkno;
    v->d->kind = UBJ_KIND_DATA;
    v->flags = 0;
    v->refcnt = 1;
    v->referenced = 1;
    v->io_busy = 1;
    v->ra_ready = 0;
    v->ra_io = NULL;
    cache_hash_insert_locked(c, v);
}

/* cache_ra_raise_locked -- a getter waits for the asynchronous
 * read-ahead request io: raise it to time-critical where a queue holds
 * it (io is not freed before its completion has taken c->lock). */
static void cache_ra_raise_locked(struct ubj_cache *c, struct cache_ra_io *io)
{
    if (c->drives &&
        __atomic_load_n(&io->req.crit, __ATOMIC_RELAXED) < UBJ_CRIT_CRITICAL &&
        ubj_bdev_raise(c->dev, &io->req, UBJ_CRIT_CRITICAL, 0) == 0)
        c->stats.io_raised++;
}

/* cache_ra_ready_locked -- loaded b is being got: the ready time of its
 * asynchronous read-ahead if the clock has not reached it (the getter
 * waits until then outside c->lock, cache_ra_wait_ready: a late hit,
 * counted once per get through *late), else 0 (and b is ready for good). */
static uint64_t cache_ra_ready_locked(struct ubj_cache *c, struct ubj_buf *b, bool *late)
{
    if (b->ra_ready == 0)
        return 0;
    if (c->ra_clock == NULL || ubj_clock_now(c->ra_clock) >= b->ra_ready) {
        b->ra_ready = 0;
        return 0;
    }
    if (!*late) {
        *late = true;
        c->stats.ra_late++;
    }
#if UBJ_TEST_HOOKS
    if (cache_ra_no_ready) {
        b->ra_ready = 0;
        return 0;   /* broken variant ra-no-ready: the data is used early */
    }
#endif
    return b->ra_ready;
}

/* cache_ra_wait_ready -- wait on the read-ahead clock until `ready` (0:
 * nothing), counting the wait.  Called without c->lock. */
static void cache_ra_wait_ready(struct ubj_cache *c, uint64_t ready)
{
    if (ready == 0)
        return;
    pthread_mutex_lock(&c->lock);
    struct ubj_clock *clk = c->ra_clock;
    pthread_mutex_unlock(&c->lock);
    uint64_t t0 = ubj_clock_now(clk);
    ubj_clock_wait_until(clk, ready);
    uint64_t t1 = ubj_clock_now(clk);
    pthread_mutex_lock(&c->lock);
    c->stats.ra_late_ns += t1 > t0 ? t1 - t0 : 0;
    pthread_mutex_unlock(&c->lock);
}

/* cache_get -- a referenced buffer with the newest version of blkno;
 * `outer` (or NULL) is released around a miss's device read (cache_fill),
 * *dropped then set. */
static int cache_get(struct ubj_cache *c, uint64_t blkno, unsigned flags,
                     pthread_mutex_t *outer, bool *dropped, struct ubj_buf **out)
{
    if (blkno >= c->dev->nblocks)
        return ubj_set_error(-EINVAL, "cache: block %llu beyond the device "
                             "(%llu blocks)", (unsigned long long)blkno,
                             (unsigned long long)c->dev->nblocks);
    pthread_mutex_lock(&c->lock);
    struct ubj_buf *b;
    bool missed = false, late = false;
    for (;;) {
        b = cache_find_locked(c, blkno);
        if (b != NULL) {
            if (!(b->flags & UBJ_BUF_LOADED)) {   /* another thread reads it */
                if ((b->flags & CACHE_BUF_RA_IO) && !late) {
                    late = true;   /* read ahead, not ready yet: waits */
                    c->stats.ra_late++;
                }
                if (b->ra_io != NULL)
                    cache_ra_raise_locked(c, b->ra_io);
                cache_io_wait_locked(c);
                continue;
            }
            uint64_t ready = cache_ra_ready_locked(c, b, &late);
            cache_hit_locked(c, b);
            c->stats.hits += !missed;
            pthread_mutex_unlock(&c->lock);
            cache_ra_wait_ready(c, ready);
            *out = b;
            return 0;
        }
        if (!missed) {
            c->stats.misses++;
            missed = true;
        }
        struct ubj_buf *v;
        int rc = cache_alloc_locked(c, &v);
        if (rc < 0) {
            pthread_mutex_unlock(&c->lock);
            if (rc != -ENOBUFS)
                return rc;   /* a write's or reclaim's error, message set */
            return ubj_set_error(rc, "cache: no reusable buffer for block "
                                 "%llu (all %u referenced, pinned or frozen)",
                                 (unsigned long long)blkno, c->nbufs);
        }
        if (cache_find_locked(c, blkno) != NULL)
            continue;   /* loaded by another thread while the lock was off */
        b = v;
        break;
    }
    cache_claim_locked(c, b, blkno);
    int rc = cache_fill(c, b, flags, outer, dropped);
    pthread_mutex_unlock(&c->lock);
    if (rc < 0)
        return rc;   /* the device's error and message */
    *out = b;
    return 0;
}

/* ubj_cache_get -- a referenced buffer with the newest version of blkno. */
int ubj_cache_get(struct ubj_cache *c, uint64_t blkno, unsigned flags,
                  struct ubj_buf **out)
{
    bool dropped = false;
    return cache_get(c, blkno, flags, NULL, &dropped, out);
}

/* ubj_cache_get_unlocking -- ubj_cache_get, releasing `outer` (held by the
 * caller) around a miss's device read; 1 if it did, 0 if not. */
int ubj_cache_get_unlocking(struct ubj_cache *c, uint64_t blkno, unsigned flags,
                            pthread_mutex_t *outer, struct ubj_buf **out)
{
    bool dropped = false;
    if (flags & UBJ_GET_NOREAD)
        return ubj_set_error(-EINVAL, "cache: an unlocking get reads the block "
                             "(UBJ_GET_NOREAD given)");
    int rc = cache_get(c, blkno, flags, outer, &dropped, out);
    return rc < 0 ? rc : dropped;
}

/* ubj_cache_wait_unlocked -- wait (on outside_cv with `outer`) until no
 * ubj_cache_get_unlocking caller is outside `outer`. */
void ubj_cache_wait_unlocked(struct ubj_cache *c, pthread_mutex_t *outer)
{
    pthread_mutex_lock(&c->lock);
    while (c->outside > 0) {
        pthread_mutex_unlock(&c->lock);
        /* outside changes only with outer held: it cannot drop to 0
         * between the test and this wait */
        pthread_cond_wait(&c->outside_cv, outer);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
}

/* cache_run_hits_locked -- references on the loaded buffers of blocks
 * blkno, blkno + 1, ... (at most n) that are cached: how many; *ready the
 * latest ready time among them the caller must wait for (0: none). */
static uint32_t cache_run_hits_locked(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                                      struct ubj_buf **out, uint64_t *ready)
{
    uint32_t k = 0;
    bool late = false;
    *ready = 0;
    while (k < n) {
        struct ubj_buf *b = cache_find_locked(c, blkno + k);
        if (b == NULL || !(b->flags & UBJ_BUF_LOADED))
            break;
        uint64_t t = cache_ra_ready_locked(c, b, &late);
        *ready = t > *ready ? t : *ready;
        late = false;   /* each block a late hit of its own */
        cache_hit_locked(c, b);
        c->stats.hits++;
        out[k++] = b;
    }
    return k;
}

/* cache_run_read_dev -- read the claimed buffers v[0..m) (blocks v[0]'s
 * onwards) in one device request: into the pool when their buffers are
 * adjacent there, else through a bounce buffer; one request per block
 * if that cannot be allocated.  Called without c->lock. */
static int cache_run_read_dev(struct ubj_cache *c, struct ubj_buf **v, uint32_t m)
{
    uint64_t blkno = v[0]->d->blkno;
    bool adjacent = true;
    for (uint32_t j = 1; j < m && adjacent; j++)
        adjacent = v[j]->data == v[0]->data + (size_t)j * CACHE_BS;
    if (adjacent)
        return ubj_bdev_read(c->dev, blkno, m, v[0]->data);
    void *bounce = NULL;
    if (posix_memalign(&bounce, CACHE_BS, (size_t)m * CACHE_BS) != 0) {
        for (uint32_t j = 0; j < m; j++) {
            int rc = ubj_bdev_read(c->dev, blkno + j, 1, v[j]->data);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    int rc = ubj_bdev_read(c->dev, blkno, m, bounce);
    for (uint32_t j = 0; rc == 0 && j < m; j++)
        memcpy(v[j]->data, (uint8_t *)bounce + (size_t)j * CACHE_BS, CACHE_BS);
    free(bounce);
    return rc;
}

/* cache_run_read -- cache_run_read_dev, then the fill hook. */
static int cache_run_read(struct ubj_cache *c, struct ubj_buf **v, uint32_t m)
{
    int rc = cache_run_read_dev(c, v, m);
    if (rc == 0)
        cache_filled(c, v, m);
    return rc;
}

/* cache_run_one -- cache_get of one block as a run: 1 or its error. */
static int cache_run_one(struct ubj_cache *c, uint64_t blkno, pthread_mutex_t *outer,
                         bool *dropped, struct ubj_buf **out)
{
    int rc = cache_get(c, blkno, 0, outer, dropped, out);
    return rc < 0 ? rc : 1;
}

/* cache_get_run -- referenced buffers for the first blocks of [blkno,
 * blkno + n); the missing ones in one device read, with `outer` (or
 * NULL) released around it (*dropped then set). */
static int cache_get_run(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                         pthread_mutex_t *outer, bool *dropped, struct ubj_buf **out)
{
    if (n == 0 || blkno >= c->dev->nblocks || n > c->dev->nblocks - blkno)
        return ubj_set_error(-EINVAL, "cache: blocks %llu+%u beyond the device "
                             "(%llu blocks)", (unsigned long long)blkno, n,
                             (unsigned long long)c->dev->nblocks);
    uint32_t cap = c->nbufs / UBJ_CACHE_RUN_SHARE;
    if (cap > UBJ_CACHE_RUN_MAX)
        cap = UBJ_CACHE_RUN_MAX;
    if (n > cap)
        n = cap > 0 ? cap : 1;
    if (n == 1)
        return cache_run_one(c, blkno, outer, dropped, out);
    pthread_mutex_lock(&c->lock);
    uint64_t ready;
    uint32_t k = cache_run_hits_locked(c, blkno, n, out, &ready);
    if (k > 0 || cache_find_locked(c, blkno) != NULL) {
        pthread_mutex_unlock(&c->lock);
        cache_ra_wait_ready(c, ready);
        return k > 0 ? (int)k : cache_run_one(c, blkno, outer, dropped, out);   /* loading: wait */
    }
    /* Claim buffers for the missing blocks from blkno on, in order, up to
     * the first one another thread brings in (the lock drops while CLOCK
     * writes a victim home).  The first claim may wait as a get's does;
     * later ones take only what CLOCK finds at once: the run must not
     * wait for buffers it holds itself. */
    uint32_t m = 0;
    while (m < n) {
        struct ubj_buf *v;
        if (m == 0) {
            int rc = cache_alloc_locked(c, &v);
            if (rc < 0) {
                pthread_mutex_unlock(&c->lock);
                if (rc != -ENOBUFS)
                    return rc;
                return ubj_set_error(rc, "cache: no reusable buffer for block "
                                     "%llu (all %u referenced, pinned or frozen)",
                                     (unsigned long long)blkno, c->nbufs);
            }
        } else {
            int io_err = 0;
            bool deferred = false;
            v = cache_clock_locked(c, 0, &io_err, &deferred);
            if (v == NULL)
                break;
        }
        if (cache_find_locked(c, blkno + m) != NULL)
            break;   /* brought in meanwhile: v stays FREE, unhashed */
        cache_claim_locked(c, v, blkno + m);
        out[m++] = v;
    }
    if (m == 0) {   /* the first block came in while CLOCK ran: a hit */
        pthread_mutex_unlock(&c->lock);
        return cache_run_one(c, blkno, outer, dropped, out);
    }
    c->stats.misses += m;
    c->stats.run_reads++;
    bool drop = cache_outer_drop_locked(c, outer);
    pthread_mutex_unlock(&c->lock);
    cache_outer_release(c, blkno, outer, drop, dropped);
    uint64_t t0 = cache_clock_ns(c);
    int rc = cache_run_read(c, out, m);
    pthread_mutex_lock(&c->lock);
    cache_count_wait_locked(c, *dropped ? &c->stats.read_wait_unlocked_ns
                                        : &c->stats.read_wait_locked_ns, t0);
    for (uint32_t j = 0; j < m; j++) {
        struct ubj_buf *b = out[j];
        b->io_busy = 0;
        if (rc < 0) {
            assert(b->refcnt == 1);   /* waiters hold no reference */
            b->refcnt = 0;
            cache_release_locked(c, b);
            continue;
        }
        b->flags |= UBJ_BUF_LOADED | UBJ_BUF_VERIFY;
        if (!(b->flags & CACHE_BUF_GONE))
            cache_set_state_locked(c, b, UBJ_BUF_CLEAN, 0);
    }
    pthread_cond_broadcast(&c->io_cv);
    cache_outer_retake_locked(c, outer, *dropped);   /* the read ended first */
    pthread_mutex_unlock(&c->lock);
    return rc < 0 ? rc : (int)m;   /* the device's error and message */
}

/* ubj_cache_get_run -- see cache.h. */
int ubj_cache_get_run(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                      struct ubj_buf **out)
{
    bool dropped = false;
    return cache_get_run(c, blkno, n, NULL, &dropped, out);
}

/* ubj_cache_get_run_unlocking -- see cache.h. */
int ubj_cache_get_run_unlocking(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                                pthread_mutex_t *outer, bool *dropped,
                                struct ubj_buf **out)
{
    *dropped = false;
    return cache_get_run(c, blkno, n, outer, dropped, out);
}

/* ---- read-ahead --------------------------------------------------------- */

/* cache_ra_claim_locked -- claim buffers for the missing blocks of [blkno,
 * blkno + n) from blkno on, up to the first cached one, taking only what
 * CLOCK finds at once without a write (FREE, or CLEAN unreferenced: never
 * DIRTY, FROZEN, PINNED, referenced or busy buffers; no reclaim, no
 * wait).  How many, in v[]. */
static uint32_t cache_ra_claim_locked(struct ubj_cache *c, uint64_t blkno,
                                      uint32_t n, struct ubj_buf **v)
{
    uint32_t m = 0;
    while (m < n && cache_find_locked(c, blkno + m) == NULL) {
        int io_err = 0;
        bool deferred = false;
        struct ubj_buf *b = cache_clock_locked(c, CACHE_CLOCK_NOWRITE, &io_err,
                                               &deferred);
        if (b == NULL)
            break;
        cache_claim_locked(c, b, blkno + m);
        b->flags |= CACHE_BUF_RA_IO;
        v[m++] = b;
    }
    return m;
}

/* cache_ra_end_locked -- the read of v[0..m) ended with rc: the buffers
 * CLEAN and read-ahead (the marker on block `mark`), still held by the
 * claim's reference so that the rest of the call cannot reuse them; or,
 * after a failed read, released (waiters hold no reference before the
 * buffer is LOADED). */
static void cache_ra_end_locked(struct ubj_cache *c, struct ubj_buf **v, uint32_t m,
                                int rc, uint64_t mark)
{
    for (uint32_t j = 0; j < m; j++) {
        struct ubj_buf *b = v[j];
        b->io_busy = 0;
        b->flags &= ~CACHE_BUF_RA_IO;
        if (rc < 0) {
            assert(b->refcnt == 1);
            b->refcnt = 0;
            cache_release_locked(c, b);
            continue;
        }
        b->flags |= UBJ_BUF_LOADED | UBJ_BUF_VERIFY;
        if (b->flags & CACHE_BUF_GONE)
            continue;
        b->flags |= CACHE_BUF_RA | (b->d->blkno == mark ? CACHE_BUF_MARK : 0);
        cache_set_state_locked(c, b, UBJ_BUF_CLEAN, 0);
    }
    pthread_cond_broadcast(&c->io_cv);
}

/* cache_ra_put_locked -- the call is over: drop the claims' references
 * on v[0..m); cold (CLOCK bit clear) unless got meanwhile. */
static void cache_ra_put_locked(struct ubj_cache *c, struct ubj_buf **v, uint32_t m)
{
    for (uint32_t j = 0; j < m; j++) {
        struct ubj_buf *b = v[j];
        assert(b->refcnt > 0);
        b->refcnt--;
        if (b->flags & CACHE_BUF_RA)
            b->referenced = 0;   /* not used yet: the first to go */
        cache_release_locked(c, b);
    }
}

/* ubj_cache_readahead -- see cache.h. */
int ubj_cache_readahead(struct ubj_cache *c, uint64_t blkno, uint32_t n, uint64_t mark,
                        pthread_mutex_t *outer, bool *dropped)
{
    *dropped = false;
    if (n == 0 || blkno >= c->dev->nblocks || n > c->dev->nblocks - blkno)
        return ubj_set_error(-EINVAL, "cache: read-ahead of blocks %llu+%u beyond "
                             "the device (%llu blocks)", (unsigned long long)blkno,
                             n, (unsigned long long)c->dev->nblocks);
    uint32_t cap = c->nbufs / UBJ_CACHE_RUN_SHARE;
    cap = cap > UBJ_CACHE_RUN_MAX ? UBJ_CACHE_RUN_MAX : cap > 0 ? cap : 1;
    struct ubj_buf *v[UBJ_CACHE_RUN_MAX];
    uint32_t done = 0, read = 0;
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    while (done < n && read < cap && rc == 0) {
        if (cache_find_locked(c, blkno + done) != NULL) {
            done++;   /* cached or being read: not ours */
            continue;
        }
        uint32_t want = n - done < cap - read ? n - done : cap - read;
        uint32_t m = cache_ra_claim_locked(c, blkno + done, want, v + read);
        if (m == 0)
            break;   /* no buffer without a write: read-ahead gives up */
        c->stats.ra_reads++;
        c->stats.ra_blocks += m;
        bool drop = !*dropped && cache_outer_drop_locked(c, outer);
        pthread_mutex_unlock(&c->lock);
        cache_outer_release(c, blkno + done, outer, drop, dropped);
        uint64_t t0 = cache_clock_ns(c);
        rc = cache_run_read(c, v + read, m);
        pthread_mutex_lock(&c->lock);
        cache_count_wait_locked(c, *dropped ? &c->stats.read_wait_unlocked_ns
                                            : &c->stats.read_wait_locked_ns, t0);
        cache_ra_end_locked(c, v + read, m, rc, mark);
        done += m;
        if (rc == 0)
            read += m;
    }
    cache_ra_put_locked(c, v, read);
    cache_outer_retake_locked(c, outer, *dropped);   /* every read ended first */
    pthread_mutex_unlock(&c->lock);
    return rc < 0 ? rc : (int)read;   /* the device's error and message */
}

/* cache_ra_done -- the completion of an asynchronous read-ahead request
 * (any thread, no lock held; maybe inside ubj_bdev_submit): copy a bounce
 * buffer in, end the buffers' read as the synchronous read-ahead does
 * (cache_ra_end_locked: CLEAN and read-ahead, or released after an
 * error), give each its ready time, drop the claims, free the request if
 * its submitter is done with it. */
static void cache_ra_done(struct ubj_req *r)
{
    struct cache_ra_io *io = r->priv;
    struct ubj_cache *c = io->c;
    int rc = r->result;
    if (rc == 0 && io->bounce != NULL)
        for (uint32_t j = 0; j < io->m; j++)
            memcpy(io->v[j]->data, (uint8_t *)io->bounce + (size_t)j * CACHE_BS,
                   CACHE_BS);
    if (rc == 0)
        cache_filled(c, io->v, io->m);
    pthread_mutex_lock(&c->lock);
    uint64_t ready = r->clock != NULL ? r->t_complete : 0;
    if (r->clock != NULL)
        c->ra_clock = r->clock;
    for (uint32_t j = 0; j < io->m; j++) {
        io->v[j]->ra_io = NULL;
        io->v[j]->ra_ready = rc == 0 ? ready : 0;
    }
    cache_ra_end_locked(c, io->v, io->m, rc, io->mark);
    if (rc == 0)
        cache_ra_put_locked(c, io->v, io->m);
    if (io->prev != NULL)
        io->prev->next = io->next;
    else
        c->ra_head = io->next;
    if (io->next != NULL)
        io->next->prev = io->prev;
    assert(c->ra_inflight > 0);
    c->ra_inflight--;
    pthread_cond_broadcast(&c->io_cv);
    bool last = --io->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last) {
        free(io->bounce);
        free(io);
    }
}

/* cache_ra_submit_locked -- send the claimed buffers v[0..m) (blocks
 * v[0]'s onwards) as one asynchronous read; c->lock held on entry and
 * return, dropped around the submission.  Returns 0 or -ENOMEM (the
 * buffers released: nothing read). */
static int cache_ra_submit_locked(struct ubj_cache *c, struct ubj_buf **v, uint32_t m,
                                  uint64_t mark, uint64_t deadline_ns)
{
    struct cache_ra_io *io = malloc(sizeof *io + (size_t)m * sizeof io->v[0]);
    bool adjacent = true;
    for (uint32_t j = 1; j < m && adjacent; j++)
        adjacent = v[j]->data == v[0]->data + (size_t)j * CACHE_BS;
    void *bounce = NULL;
    if (io == NULL ||
        (!adjacent && posix_memalign(&bounce, CACHE_BS, (size_t)m * CACHE_BS) != 0)) {
        free(io);
        cache_ra_end_locked(c, v, m, -ENOMEM, mark);
        return ubj_set_error(-ENOMEM, "cache: out of memory for a read-ahead");
    }
    io->c = c;
    io->bounce = bounce;
    io->mark = mark;
    io->refs = 2;
    io->m = m;
    memcpy(io->v, v, (size_t)m * sizeof v[0]);
    for (uint32_t j = 0; j < m; j++)
        v[j]->ra_io = io;
    io->prev = NULL;
    io->next = c->ra_head;
    if (c->ra_head != NULL)
        c->ra_head->prev = io;
    c->ra_head = io;
    c->ra_inflight++;
    c->stats.ra_reads++;
    c->stats.ra_async++;
    c->stats.ra_blocks += m;
    ubj_req_init(&io->req, UBJ_REQ_READ, v[0]->d->blkno, m,
                 bounce != NULL ? bounce : v[0]->data);
    io->req.crit = UBJ_CRIT_LIMITED;
    io->req.deadline_ns = deadline_ns;
    io->req.done = cache_ra_done;
    io->req.priv = io;
    pthread_mutex_unlock(&c->lock);
    int rc = ubj_bdev_submit(c->dev, &io->req);
    if (rc < 0) {   /* rejected: never completed by the device */
        io->req.result = rc;
        io->req.clock = NULL;
        cache_ra_done(&io->req);
    }
    /* the CPU share of a request the device completed in the submission
     * (a NAND driver's time, as MTD's synchronous reads take it) */
    pthread_mutex_lock(&c->lock);
    struct ubj_clock *clk = NULL;
    uint64_t until = 0;
    /* (state is atomic: a queue's dispatcher may be completing it now) */
    if (__atomic_load_n(&io->req.state, __ATOMIC_ACQUIRE) == UBJ_REQ_DONE &&
        io->req.clock != NULL && io->req.t_cpu_ns > 0) {
        clk = io->req.clock;
        until = io->req.t_dispatch + io->req.t_cpu_ns;
    }
    bool last = --io->refs == 0;
    pthread_mutex_unlock(&c->lock);
    if (last) {
        free(io->bounce);
        free(io);
    }
    if (clk != NULL)
        ubj_clock_wait_until(clk, until);
    pthread_mutex_lock(&c->lock);
    return 0;
}

/* ubj_cache_readahead_async -- see cache.h. */
int ubj_cache_readahead_async(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                              uint64_t mark, uint64_t deadline_ns)
{
    if (n == 0 || blkno >= c->dev->nblocks || n > c->dev->nblocks - blkno)
        return ubj_set_error(-EINVAL, "cache: read-ahead of blocks %llu+%u beyond "
                             "the device (%llu blocks)", (unsigned long long)blkno,
                             n, (unsigned long long)c->dev->nblocks);
    uint32_t cap = c->nbufs / UBJ_CACHE_RUN_SHARE;
    cap = cap > UBJ_CACHE_RUN_MAX ? UBJ_CACHE_RUN_MAX : cap > 0 ? cap : 1;
    struct ubj_buf *v[UBJ_CACHE_RUN_MAX];
    uint32_t done = 0, sent = 0;
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    while (done < n && sent < cap && rc == 0) {
        if (cache_find_locked(c, blkno + done) != NULL) {
            done++;   /* cached or being read: not ours */
            continue;
        }
        uint32_t want = n - done < cap - sent ? n - done : cap - sent;
        uint32_t m = cache_ra_claim_locked(c, blkno + done, want, v);
        if (m == 0)
            break;   /* no buffer without a write: read-ahead gives up */
        rc = cache_ra_submit_locked(c, v, m, mark, deadline_ns);
        done += m;
        sent += rc == 0 ? m : 0;
    }
    pthread_mutex_unlock(&c->lock);
    return rc < 0 ? rc : (int)sent;
}

/* ubj_cache_ra_probe -- see cache.h. */
unsigned ubj_cache_ra_probe(struct ubj_cache *c, uint64_t blkno, bool take_marker)
{
    pthread_mutex_lock(&c->lock);
    struct ubj_buf *b = cache_find_locked(c, blkno);
    unsigned r = 0;
    if (b != NULL) {
        r = UBJ_RA_CACHED | (b->flags & CACHE_BUF_RA ? UBJ_RA_UNUSED : 0);
        if (b->flags & CACHE_BUF_MARK) {
            r |= UBJ_RA_MARKED;
            if (take_marker)
                b->flags &= ~CACHE_BUF_MARK;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* ubj_cache_lookup -- get without I/O; -ENOENT if blkno is not cached. */
int ubj_cache_lookup(struct ubj_cache *c, uint64_t blkno, struct ubj_buf **out)
{
    pthread_mutex_lock(&c->lock);
    for (;;) {
        struct ubj_buf *b = cache_find_locked(c, blkno);
        if (b == NULL) {
            pthread_mutex_unlock(&c->lock);
            return -ENOENT;
        }
        if (b->flags & UBJ_BUF_LOADED) {
            bool late = false;
            uint64_t ready = cache_ra_ready_locked(c, b, &late);
            cache_hit_locked(c, b);
            pthread_mutex_unlock(&c->lock);
            cache_ra_wait_ready(c, ready);
            *out = b;
            return 0;
        }
        if (b->ra_io != NULL)
            cache_ra_raise_locked(c, b->ra_io);
        cache_io_wait_locked(c);
    }
}

/* ubj_cache_put -- drop a reference; the last one may free a GONE buffer. */
void ubj_cache_put(struct ubj_cache *c, struct ubj_buf *b)
{
    if (b == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    assert(b->refcnt > 0);
    if (--b->refcnt == 0)
        cache_release_locked(c, b);
    pthread_mutex_unlock(&c->lock);
}

/* ---- states and flags ---------------------------------------------------- */

/* ubj_cache_set_state -- the public transition function (takes c->lock). */
void ubj_cache_set_state(struct ubj_cache *c, struct ubj_buf *b,
                         enum ubj_buf_state st, uint64_t txid)
{
    pthread_mutex_lock(&c->lock);
    cache_set_state_locked(c, b, st, txid);
    pthread_mutex_unlock(&c->lock);
}

/*
 * ubj_cache_mark_dirty -- FREE (NOREAD)/CLEAN/DIRTY -> DIRTY of `kind`.
 * A GONE buffer (its block was freed while held) is left alone: changes
 * to a freed block are discarded, never written.
 */
void ubj_cache_mark_dirty(struct ubj_cache *c, struct ubj_buf *b,
                          enum ubj_buf_kind kind, uint64_t txid)
{
    ubj_cache_mark_dirty_flags(c, b, kind, txid, 0);
}

/* ubj_cache_mark_dirty_flags -- mark_dirty plus public flags f, at once. */
void ubj_cache_mark_dirty_flags(struct ubj_cache *c, struct ubj_buf *b,
                                enum ubj_buf_kind kind, uint64_t txid, uint32_t f)
{
    assert(!(f & CACHE_BUF_PRIVATE));
    pthread_mutex_lock(&c->lock);
    if (!(b->flags & CACHE_BUF_GONE)) {
        b->flags |= f & ~CACHE_BUF_PRIVATE;
        b->d->kind = (uint32_t)kind;
        if (kind == UBJ_KIND_META)
            b->flags |= UBJ_BUF_SEAL;
        else
            b->flags &= ~UBJ_BUF_SEAL;
        cache_set_state_locked(c, b, UBJ_BUF_DIRTY, txid);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_wait_stable -- wait for b's stable-buffer window to close. */
void ubj_cache_wait_stable(struct ubj_cache *c, struct ubj_buf *b)
{
    pthread_mutex_lock(&c->lock);
    assert(b->refcnt > 0);
#if UBJ_TEST_HOOKS
    if (cache_no_stable_wait) {   /* broken variant stable-no-wait */
        pthread_mutex_unlock(&c->lock);
        return;
    }
#endif
    if (b->flags & CACHE_BUF_COPYING)
        c->stats.stable_waits++;
    while (b->flags & CACHE_BUF_COPYING) {
        cache_buf_raise_locked(c, b);   /* a writer waits */
        cache_io_wait_locked(c);   /* a zero-copy write's lasts its I/O */
    }
    pthread_mutex_unlock(&c->lock);
}

#if UBJ_TEST_HOOKS
/* ubj_cache_test_write_hook -- test builds: the write-in-flight hook. */
void ubj_cache_test_write_hook(void (*fn)(void *, struct ubj_cache *, struct ubj_buf *),
                               void *arg)
{
    cache_test_hook = fn;
    cache_test_hook_arg = arg;
}

/* ubj_cache_test_read_hook -- test builds: the unlocked-read hook. */
void ubj_cache_test_read_hook(void (*fn)(void *, struct ubj_cache *, uint64_t),
                              void *arg)
{
    cache_read_hook = fn;
    cache_read_hook_arg = arg;
}

/* ubj_cache_test_unlock_break -- test builds: the broken variant unlock-none. */
void ubj_cache_test_unlock_break(bool unlock_none)
{
    cache_unlock_none = unlock_none;
}

/* ubj_cache_test_break_ra_ready -- see cache.h. */
void ubj_cache_test_break_ra_ready(bool no_ready)
{
    cache_ra_no_ready = no_ready;
}

/* ubj_cache_test_break_nowait -- test builds: the broken variant
 * cache-no-wait. */
void ubj_cache_test_break_nowait(bool no_wait)
{
    cache_no_wait = no_wait;
}

/* ubj_cache_test_break_live -- test builds: the broken variant write-live. */
void ubj_cache_test_break_live(bool write_live)
{
    cache_write_live = write_live;
}

/* ubj_cache_test_break -- test builds: the broken variant stable-no-wait. */
void ubj_cache_test_break(bool stable_no_wait)
{
    cache_no_stable_wait = stable_no_wait;
}
#endif

/* ubj_cache_peek -- b's descriptor and public flags, under the lock. */
struct ubj_buf_view ubj_cache_peek(struct ubj_cache *c, const struct ubj_buf *b)
{
    pthread_mutex_lock(&c->lock);
    const struct ubj_bufdesc *d = b->d;
    struct ubj_buf_view v = {
        .blkno = d->blkno, .txid = d->txid, .state = d->state, .kind = d->kind,
        .older = d->older, .newer = d->newer, .flags = b->flags & ~CACHE_BUF_PRIVATE,
    };
    pthread_mutex_unlock(&c->lock);
    return v;
}

/* ubj_cache_collect -- the buffers in `state` (and their txids). */
uint32_t ubj_cache_collect(struct ubj_cache *c, enum ubj_buf_state state,
                           uint32_t *idx, uint64_t *txid, uint32_t max)
{
    uint32_t n = 0;
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < c->nbufs && n < max; i++) {
        if (c->desc[i].state != (uint32_t)state)
            continue;
        if (txid != NULL)
            txid[n] = c->desc[i].txid;
        idx[n++] = i;
    }
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ubj_cache_set_flags -- set public flags f on b. */
void ubj_cache_set_flags(struct ubj_cache *c, struct ubj_buf *b, uint32_t f)
{
    assert(!(f & CACHE_BUF_PRIVATE));
    pthread_mutex_lock(&c->lock);
    b->flags |= f & ~CACHE_BUF_PRIVATE;
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_clear_flags -- clear public flags f on b. */
void ubj_cache_clear_flags(struct ubj_cache *c, struct ubj_buf *b, uint32_t f)
{
    assert(!(f & CACHE_BUF_PRIVATE));
    pthread_mutex_lock(&c->lock);
    b->flags &= ~(f & ~CACHE_BUF_PRIVATE);
    pthread_mutex_unlock(&c->lock);
}

/* ---- write-back ---------------------------------------------------------- */

/* ubj_cache_write_home -- write the referenced buffer b home now. */
int ubj_cache_write_home(struct ubj_cache *c, struct ubj_buf *b)
{
    return ubj_cache_write_home_flags(c, b, 0);
}

/* ubj_cache_write_home_flags -- the same; UBJ_WB_BACKGROUND: nobody waits. */
int ubj_cache_write_home_flags(struct ubj_cache *c, struct ubj_buf *b,
                               unsigned flags)
{
    struct cache_batch bt = cache_batch_init(flags);
    pthread_mutex_lock(&c->lock);
    assert(b->refcnt > 0);
    while (b->io_busy) {
        if (bt.wait_clock)
            cache_buf_raise_locked(c, b);
        cache_io_wait_locked(c);
    }
    int verdict;
    int rc = cache_write_one_locked(c, b, UBJ_WRITE_MUST, &bt, &verdict);
    pthread_mutex_unlock(&c->lock);
    return rc;   /* 0 or the device's error (its message is set) */
}

/* cache_wb_cmp -- qsort order of write-back entries: by block number. */
static int cache_wb_cmp(const void *a, const void *b)
{
    const struct cache_wb_ent *x = a, *y = b;
    return (x->blkno > y->blkno) - (x->blkno < y->blkno);
}

/* cache_bufs_cmp -- the order of ubj_cache_write_bufs: by block number,
 * block 0 (the superblock) last, so that a device failing from some
 * request on has failed the rest before it takes the superblock. */
static int cache_bufs_cmp(const void *a, const void *b)
{
    const struct cache_wb_ent *x = a, *y = b;
    uint64_t kx = x->blkno - 1, ky = y->blkno - 1;   /* 0 wraps to the end */
    return (kx > ky) - (kx < ky);
}

/*
 * cache_wb_collect_locked -- mark every DIRTY buffer to write (pinned ones
 * only with UBJ_WB_PINNED) io_busy and list it in c->wb_ents; first waits
 * for DIRTY buffers another thread is writing (raising their writes
 * unless UBJ_WB_BACKGROUND).  Returns the count.
 */
static uint32_t cache_wb_collect_locked(struct ubj_cache *c, unsigned flags)
{
    for (;;) {
        bool waited = false;
        for (uint32_t i = c->dirty_head; i != UBJ_NOBUF && !waited;
             i = c->bufs[i].dnext) {
            if (c->bufs[i].io_busy) {
                if (!(flags & UBJ_WB_BACKGROUND))
                    cache_buf_raise_locked(c, &c->bufs[i]);
                cache_io_wait_locked(c);
                waited = true;
            }
        }
        if (!waited)
            break;
    }
    uint32_t n = 0;
    for (uint32_t i = c->dirty_head; i != UBJ_NOBUF; i = c->bufs[i].dnext) {
        struct ubj_buf *b = &c->bufs[i];
        assert(b->d->state == UBJ_BUF_DIRTY);
        if ((b->flags & UBJ_BUF_PINNED) && !(flags & UBJ_WB_PINNED))
            continue;
        cache_pick_locked(b, &c->wb_ents[n++]);
    }
    return n;
}

/* cache_wb_direct -- write entries e[0..n) (consecutive block numbers,
 * FROZEN: their bytes cannot change) with one asynchronous request of
 * batch bt: straight from the pool when their buffers are adjacent in
 * the same order (zero copy), else gathered into a snapshot segment.
 * Their states stay (cache_io_done ends them).  Out of memory: their
 * writes end with -ENOMEM at once. */
static void cache_wb_direct(struct ubj_cache *c, struct cache_wb_ent *e, uint32_t n,
                            struct cache_batch *bt)
{
    bool adjacent = true;
    for (uint32_t k = 1; k < n && adjacent; k++)
        adjacent = e[k].idx == e[k - 1].idx + 1;
    struct cache_io *io = cache_io_new(c, n, NULL, bt, adjacent ? -1 : CACHE_SNAP_RUN);
    if (io == NULL) {
        pthread_mutex_lock(&c->lock);
        for (uint32_t k = 0; k < n; k++)
            cache_io_finish_locked(c, &c->bufs[e[k].idx], -ENOMEM, true, false);
        if (bt->rc == 0)
            bt->rc = ubj_set_error(-ENOMEM, "cache: out of memory for a write");
        pthread_mutex_unlock(&c->lock);
        return;
    }
    io->keep_state = true;
    uint8_t *src = c->data + (size_t)e[0].idx * CACHE_BS;
    if (io->snap != NULL) {
        for (uint32_t k = 0; k < n; k++)
            memcpy(io->snap->data + (size_t)k * CACHE_BS,
                   c->data + (size_t)e[k].idx * CACHE_BS, CACHE_BS);
        src = io->snap->data;
    }
    for (uint32_t k = 0; k < n; k++)
        CACHE_TEST_POINT(c, &c->bufs[e[k].idx]);   /* a test may park it */
    memcpy(io->ent, e, (size_t)n * sizeof *e);
    io->n = n;
    cache_io_submit(c, io, e[0].blkno, src);
}

/* cache_wb_end -- end entry x's write without a request (deferred, or
 * out of memory: rc), taking c->lock. */
static void cache_wb_end(struct ubj_cache *c, struct cache_wb_ent *x, int rc)
{
    pthread_mutex_lock(&c->lock);
    if (rc < 0)
        cache_io_finish_locked(c, &c->bufs[x->idx], rc, false, false);
    else
        cache_io_end_locked(c, x);
    pthread_mutex_unlock(&c->lock);
}

/*
 * cache_wb_snap_run -- from e[*k] on, snapshot entries of consecutive
 * block numbers into one segment (deferred ones left out and ended at
 * once: a deferral ends the run, since the next block is then not
 * consecutive) and submit the run as one asynchronous request of batch
 * bt; its completion tells write_done.  Advances *k past what it looked
 * at.  Runs without c->lock.
 */
static void cache_wb_snap_run(struct ubj_cache *c, const struct cache_hk *hk,
                              struct cache_wb_ent *e, uint32_t n, uint32_t *k,
                              unsigned wflags, struct cache_batch *bt)
{
    uint32_t room = n - *k < CACHE_WB_MAX_RUN ? n - *k : CACHE_WB_MAX_RUN;
    struct cache_io *io = cache_io_new(c, room, hk, bt, CACHE_SNAP_RUN);
    if (io == NULL) {   /* this entry is not written; the next may be */
        cache_wb_end(c, &e[(*k)++], -ENOMEM);
        pthread_mutex_lock(&c->lock);
        if (bt->rc == 0)
            bt->rc = ubj_set_error(-ENOMEM, "cache: out of memory for a write");
        pthread_mutex_unlock(&c->lock);
        return;
    }
    uint32_t r0 = *k, len = 0;
    while (*k < n && len < CACHE_WB_MAX_RUN &&
           (len == 0 || e[*k].blkno == e[r0].blkno + len)) {
        struct cache_wb_ent *x = &e[(*k)++];
        int v = cache_snap_fill(c, hk, &c->bufs[x->idx], x,
                                io->snap->data + (size_t)len * CACHE_BS, wflags);
        if (v != UBJ_WRITE_DEFER) {
            io->ent[len++] = *x;
            continue;
        }
        cache_wb_end(c, x, 0);
        if (len == 0)
            r0 = *k;   /* nothing taken yet: the run starts after it */
        else
            break;
    }
    if (len == 0) {
        pthread_mutex_lock(&c->lock);
        cache_io_free_locked(c, io);
        pthread_mutex_unlock(&c->lock);
        return;
    }
    io->n = len;
    cache_io_submit(c, io, e[r0].blkno, io->snap->data);
}

/* cache_wb_write -- write the sorted entries in runs of consecutive
 * blocks, several requests in flight, all of batch bt: from snapshots
 * through the hooks (snap), or FROZEN ones directly
 * (ubj_cache_write_bufs). */
static void cache_wb_write(struct ubj_cache *c, const struct cache_hk *hk,
                           uint32_t n, bool snap, unsigned wflags,
                           struct cache_batch *bt)
{
    struct cache_wb_ent *e = c->wb_ents;
    for (uint32_t k = 0; k < n;) {
        if (snap) {
            cache_wb_snap_run(c, hk, e, n, &k, wflags, bt);
            continue;
        }
        uint32_t len = 1;
        while (k + len < n && len < CACHE_WB_MAX_RUN &&
               e[k + len].blkno == e[k].blkno + len)
            len++;
        cache_wb_direct(c, e + k, len, bt);
        k += len;
    }
}

/* ubj_cache_writeback -- write every DIRTY buffer home in block order,
 * the runs in flight together; wait for them all. */
int ubj_cache_writeback(struct ubj_cache *c, unsigned flags)
{
    struct cache_batch bt = cache_batch_init(flags);
    pthread_mutex_lock(&c->wb_lock);
    pthread_mutex_lock(&c->lock);
    uint32_t n = cache_wb_collect_locked(c, flags);
    struct cache_hk hk = cache_hk_locked(c);
    pthread_mutex_unlock(&c->lock);

    qsort(c->wb_ents, n, sizeof *c->wb_ents, cache_wb_cmp);
    cache_wb_write(c, &hk, n, true, (flags & UBJ_WB_MUST) ? UBJ_WRITE_MUST : 0, &bt);
    int rc = cache_batch_wait(c, &bt);   /* every write ended (io_end) */
#ifndef NDEBUG
    pthread_mutex_lock(&c->lock);
    assert(assert_cache_invariants(c));
    pthread_mutex_unlock(&c->lock);
#endif

    if (flags & UBJ_WB_FLUSH) {
        int frc = ubj_bdev_flush_crit(c->dev, cache_flush_crit(flags));
        if (rc == 0)
            rc = frc;
    }
    pthread_mutex_unlock(&c->wb_lock);
    return rc;   /* 0 or the first device error (its message is set) */
}

/* ---- dropping buffers ---------------------------------------------------- */

/* cache_drop_locked -- forget one non-frozen version: FREE, or when held
 * (a DIRTY one made CLEAN first) detached and GONE, freed at release. */
static void cache_drop_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    assert(!cache_is_frozen(b->d->state));
    if (b->refcnt > 0 || b->io_busy) {
        if (b->d->state == UBJ_BUF_DIRTY)
            cache_set_state_locked(c, b, UBJ_BUF_CLEAN, b->d->txid);
        cache_detach_locked(c, b);
        b->flags |= CACHE_BUF_GONE;
    } else {
        cache_set_state_locked(c, b, UBJ_BUF_FREE, b->d->txid);
    }
}

/* ubj_cache_forget -- drop every cached version of a freed block. */
void ubj_cache_forget(struct ubj_cache *c, uint64_t blkno)
{
    pthread_mutex_lock(&c->lock);
    struct ubj_buf *b = cache_find_locked(c, blkno);
    while (b != NULL) {
        uint32_t older = b->d->older;
        if (!cache_is_frozen(b->d->state))
            cache_drop_locked(c, b);
        b = older == UBJ_NOBUF ? NULL : &c->bufs[older];
    }
    assert(cache_find_locked(c, blkno) == NULL ||
           cache_is_frozen(cache_find_locked(c, blkno)->d->state));
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_invalidate -- drop every unreferenced CLEAN buffer. */
void ubj_cache_invalidate(struct ubj_cache *c)
{
    pthread_mutex_lock(&c->lock);
    for (uint32_t i = 0; i < c->nbufs; i++) {
        struct ubj_buf *b = &c->bufs[i];
        if (b->d->state == UBJ_BUF_CLEAN && b->refcnt == 0 && !b->io_busy &&
            b->d->older == UBJ_NOBUF)
            cache_set_state_locked(c, b, UBJ_BUF_FREE, b->d->txid);
    }
    assert(assert_cache_invariants(c));
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_drop_clean -- drop blkno's cached version if it is CLEAN,
 * unreferenced, idle and the only version (fadvise DONTNEED). */
bool ubj_cache_drop_clean(struct ubj_cache *c, uint64_t blkno)
{
    pthread_mutex_lock(&c->lock);
    struct ubj_buf *b = cache_find_locked(c, blkno);
    bool drop = b != NULL && b->d->state == UBJ_BUF_CLEAN && b->refcnt == 0 &&
                !b->io_busy && b->d->older == UBJ_NOBUF;
    if (drop)
        cache_set_state_locked(c, b, UBJ_BUF_FREE, b->d->txid);
    pthread_mutex_unlock(&c->lock);
    return drop;
}

/* ---- UBJ: adopt, copy-on-write, seal, revoke, checkpoint writes ---------- */

/* cache_adopt_one_locked -- keep descriptor i (FROZEN) as a cached newest
 * version.  0 or -EUCLEAN. */
static int cache_adopt_one_locked(struct ubj_cache *c, uint32_t i)
{
    struct ubj_buf *b = &c->bufs[i];
    struct ubj_bufdesc *d = b->d;
    if (d->blkno >= c->dev->nblocks)
        return ubj_set_error(-EUCLEAN, "cache: adopted buffer %u holds block "
                             "%llu, beyond the device (%llu blocks)", i,
                             (unsigned long long)d->blkno,
                             (unsigned long long)c->dev->nblocks);
    if (cache_find_locked(c, d->blkno) != NULL)
        return ubj_set_error(-EUCLEAN, "cache: two adopted versions of block "
                             "%llu (buffers %u and %u)",
                             (unsigned long long)d->blkno,
                             cache_find_locked(c, d->blkno)->idx, i);
    if (d->kind != UBJ_KIND_META)
        d->kind = UBJ_KIND_DATA;
    b->flags = UBJ_BUF_LOADED | UBJ_BUF_VERIFY;
    cache_hash_insert_locked(c, b);
    c->stats.frozen++;
    return 0;
}

/* ubj_cache_adopt -- keep the FROZEN descriptors of an earlier life. */
int ubj_cache_adopt(struct ubj_cache *c)
{
    int rc = 0, kept = 0;
    pthread_mutex_lock(&c->lock);
    assert(c->adopt_pending);
    for (uint32_t i = 0; i < c->nbufs; i++) {
        struct ubj_bufdesc *d = &c->desc[i];
        d->older = UBJ_NOBUF;
        d->newer = UBJ_NOBUF;
        if (d->state == UBJ_BUF_FROZEN && rc == 0) {
            rc = cache_adopt_one_locked(c, i);
            kept++;
        } else if (d->state != UBJ_BUF_FROZEN) {
            d->state = UBJ_BUF_FREE;
        }
    }
    if (rc == 0) {
        c->adopt_pending = false;
        assert(assert_cache_invariants(c));
    }
    pthread_mutex_unlock(&c->lock);
    return rc < 0 ? rc : kept;
}

/* cache_newest_locked -- the newest version of b's block (b itself if it
 * is the newest), or NULL if b was detached (revoked or GONE). */
static struct ubj_buf *cache_newest_locked(struct ubj_cache *c, struct ubj_buf *b)
{
    if (b->flags & CACHE_BUF_HASHED)
        return b;
    if (b->d->newer == UBJ_NOBUF)
        return NULL;
    uint32_t i = b->idx;
    while (c->desc[i].newer != UBJ_NOBUF)
        i = c->desc[i].newer;
    return &c->bufs[i];
}

/* cache_move_ref_locked -- move the caller's reference from *b to n. */
static void cache_move_ref_locked(struct ubj_cache *c, struct ubj_buf **b,
                                  struct ubj_buf *n)
{
    if (*b == n)
        return;
    cache_hit_locked(c, n);
    struct ubj_buf *old = *b;
    assert(old->refcnt > 0);
    old->refcnt--;
    cache_release_locked(c, old);
    *b = n;
}

/* cache_cow_fill_locked -- make the FREE buffer v a DIRTY copy of the
 * frozen newest version f and put it in f's place as the newest. */
static void cache_cow_fill_locked(struct ubj_cache *c, struct ubj_buf *f,
                                  struct ubj_buf *v, uint64_t txid)
{
    v->d->blkno = f->d->blkno;
    v->d->kind = f->d->kind;
    memcpy(v->data, f->data, CACHE_BS);
    v->flags = UBJ_BUF_LOADED | UBJ_BUF_PINNED;
    v->refcnt = 0;
    v->referenced = 1;
    cache_set_state_locked(c, v, UBJ_BUF_DIRTY, txid);
    cache_hash_remove_locked(c, f);
    v->d->older = f->idx;
    v->d->newer = UBJ_NOBUF;
    f->d->newer = v->idx;
    cache_hash_insert_locked(c, v);
}

/* ubj_cache_cow -- the buffer to modify for *b's block (UBJ COW). */
int ubj_cache_cow(struct ubj_cache *c, struct ubj_buf **b, uint64_t txid)
{
    pthread_mutex_lock(&c->lock);
    for (;;) {
        struct ubj_buf *n = cache_newest_locked(c, *b);
        if (n == NULL) {
            uint64_t blkno = (*b)->d->blkno;
            pthread_mutex_unlock(&c->lock);
            return ubj_set_error(-ESTALE, "cache: write to a dropped version "
                                 "of block %llu", (unsigned long long)blkno);
        }
        cache_move_ref_locked(c, b, n);
        if (n->d->state != UBJ_BUF_FROZEN) {
            pthread_mutex_unlock(&c->lock);
            return 0;
        }
        struct ubj_buf *v;
        int rc = cache_alloc_locked(c, &v);   /* may drop the lock */
        if (rc < 0) {
            pthread_mutex_unlock(&c->lock);
            if (rc == -ENOBUFS)
                rc = ubj_set_error(rc, "cache: no buffer for a copy of block "
                                   "%llu (all %u referenced, pinned or frozen)",
                                   (unsigned long long)n->d->blkno, c->nbufs);
            return rc;
        }
        if (n->d->state != UBJ_BUF_FROZEN || !(n->flags & CACHE_BUF_HASHED))
            continue;   /* checkpointed (or superseded) meanwhile: look again */
        cache_cow_fill_locked(c, n, v, txid);
        cache_move_ref_locked(c, b, v);
        assert(assert_buf_invariants(c, n) && assert_buf_invariants(c, v));
        pthread_mutex_unlock(&c->lock);
        return 1;
    }
}

/* ubj_cache_seal -- run cfg.seal on a SEAL-marked live buffer now, holding
 * io_busy so that no write snapshots it half sealed. */
void ubj_cache_seal(struct ubj_cache *c, struct ubj_buf *b)
{
    pthread_mutex_lock(&c->lock);
    while (b->io_busy) {
        cache_buf_raise_locked(c, b);   /* a writer waits */
        cache_io_wait_locked(c);
    }
    bool seal = (b->flags & UBJ_BUF_SEAL) && c->cfg.seal != NULL;
    b->flags &= ~UBJ_BUF_SEAL;
    uint64_t blkno = b->d->blkno;
    if (seal) {
        b->io_busy = 1;
        pthread_mutex_unlock(&c->lock);
        c->cfg.seal(c->cfg.ctx, blkno, b->data);
        pthread_mutex_lock(&c->lock);
        b->io_busy = 0;
        pthread_cond_broadcast(&c->io_cv);
        cache_release_locked(c, b);
    }
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_revoke -- drop the block's versions; frozen ones turn
 * FROZEN_OLD, detached, listed in out[]. */
uint32_t ubj_cache_revoke(struct ubj_cache *c, uint64_t blkno, uint32_t *out,
                          uint32_t max)
{
    uint32_t n = 0;
    pthread_mutex_lock(&c->lock);
    struct ubj_buf *b = cache_find_locked(c, blkno);
    while (b != NULL) {
        uint32_t older = b->d->older;
        uint32_t st = b->d->state;
        if (!cache_is_frozen(st)) {
            cache_drop_locked(c, b);
        } else {
            if (st == UBJ_BUF_FROZEN) {
                cache_set_state_locked(c, b, UBJ_BUF_FROZEN_OLD, b->d->txid);
                assert(n < max);
                if (n < max)
                    out[n++] = b->idx;
            }
            cache_detach_locked(c, b);
        }
        b = older == UBJ_NOBUF ? NULL : &c->bufs[older];
    }
    assert(cache_find_locked(c, blkno) == NULL);
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* cache_wait_idle_locked -- wait until none of the listed buffers is
 * io_busy (c->lock held; may wait on io_cv), raising the writes it waits
 * for if `raise` (a process waits). */
static void cache_wait_idle_locked(struct ubj_cache *c, const uint32_t *idx,
                                   uint32_t n, bool raise)
{
    for (uint32_t k = 0; k < n;) {
        if (c->bufs[idx[k]].io_busy) {
            if (raise)
                cache_buf_raise_locked(c, &c->bufs[idx[k]]);
            cache_io_wait_locked(c);
            k = 0;
        } else {
            k++;
        }
    }
}

/* ubj_cache_take_cold_frozen -- cold FROZEN buffers CLOCK met; reset. */
uint64_t ubj_cache_take_cold_frozen(struct ubj_cache *c)
{
    pthread_mutex_lock(&c->lock);
    uint64_t n = c->cold_frozen;
    c->stats.cold_frozen += n;
    c->cold_frozen = 0;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* ubj_cache_write_bufs -- write listed buffers home, states unchanged. */
int ubj_cache_write_bufs(struct ubj_cache *c, const uint32_t *idx,
                         const uint64_t *txid, uint32_t n, unsigned flags)
{
    if (n == 0)
        return 0;
    pthread_mutex_lock(&c->wb_lock);
    pthread_mutex_lock(&c->lock);
    cache_wait_idle_locked(c, idx, n, !(flags & UBJ_WB_BACKGROUND));
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++) {
        struct ubj_buf *b = &c->bufs[idx[k]];
        assert(idx[k] < c->nbufs);
        if (b->d->state != UBJ_BUF_FROZEN || (txid && b->d->txid != txid[k]))
            continue;   /* moved meanwhile: not the listed version, skip it */
        b->io_busy = 1;   /* zero copy: the window lasts the write */
        b->flags |= CACHE_BUF_COPYING;
        c->wb_ents[m++] = (struct cache_wb_ent){ .blkno = b->d->blkno, .idx = idx[k] };
    }
    n = m;
    pthread_mutex_unlock(&c->lock);

    qsort(c->wb_ents, n, sizeof *c->wb_ents, cache_bufs_cmp);
    struct cache_batch bt = cache_batch_init(flags);
    cache_wb_write(c, NULL, n, false, 0, &bt);   /* FROZEN: no snapshot, no hooks */
    int rc = cache_batch_wait(c, &bt);   /* each ended, state kept */
    pthread_mutex_unlock(&c->wb_lock);
    return rc;   /* 0 or the first device error (its message is set) */
}

/* ---- hooks and accessors ------------------------------------------------ */

/* ubj_cache_reclaim -- the reclaim hook, called now. */
int ubj_cache_reclaim(struct ubj_cache *c)
{
    pthread_mutex_lock(&c->lock);
    int rc = cache_reclaim_locked(c);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* ubj_cache_set_hooks -- the mode's write and reclaim hooks (NULL: none). */
void ubj_cache_set_hooks(struct ubj_cache *c, const struct ubj_cache_hooks *h,
                         void *ctx)
{
    pthread_mutex_lock(&c->lock);
    while (c->io_inflight > 0)   /* its writes keep the old hooks' ctx */
        cache_io_wait_locked(c);
    c->hooks = h != NULL ? *h : (struct ubj_cache_hooks){ 0 };
    c->hooks_ctx = h != NULL ? ctx : NULL;
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_wait_writes -- wait for every write of the cache in flight. */
void ubj_cache_wait_writes(struct ubj_cache *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->io_inflight > 0)
        cache_io_wait_locked(c);
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_wait_readahead -- wait for every asynchronous read-ahead in
 * flight (driving a queue below). */
void ubj_cache_wait_readahead(struct ubj_cache *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->ra_inflight > 0)
        cache_io_wait_locked(c);
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_stats_get -- a snapshot of the counters. */
void ubj_cache_stats_get(struct ubj_cache *c, struct ubj_cache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->lock);
}

/* ubj_cache_nbufs -- number of buffers. */
uint32_t ubj_cache_nbufs(const struct ubj_cache *c)
{
    return c->nbufs;
}

/* ubj_cache_dev -- the device under the cache. */
struct ubj_bdev *ubj_cache_dev(const struct ubj_cache *c)
{
    return c->dev;
}

/* ubj_cache_buf_at -- buffer number idx, or NULL past the end. */
struct ubj_buf *ubj_cache_buf_at(struct ubj_cache *c, uint32_t idx)
{
    return idx < c->nbufs ? &c->bufs[idx] : NULL;
}
