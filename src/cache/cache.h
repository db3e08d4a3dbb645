/*
 * cache.h -- the unified buffer cache shared by every consistency mode.
 *
 * A fixed pool of 4 KiB buffers over one block device, found by block
 * number through a hash, replaced by CLOCK, written back when dirty.
 *
 * Built to move into a persistent (NVM) region later (issue 3):
 *  - The persistent part of a buffer is `struct ubj_bufdesc` in an array,
 *    and the data in a second array; both may be supplied by the caller
 *    (a mapped region) or are allocated in DRAM.  Descriptors refer to each
 *    other by index (UBJ_NOBUF = none), never by pointer.
 *  - The volatile part (`struct ubj_buf`: reference count, hash chain,
 *    CLOCK bit, flags) is rebuilt at creation and never persisted.
 *  - Every state change goes through ubj_cache_set_state() (and the thin
 *    helpers built on it), the one place a persistence layer and
 *    assertions watch.
 *
 * States (BRIEF.md section 3; the transitions each mode uses are listed
 * in docs/DESIGN.md):
 *   FREE        not caching anything
 *   CLEAN       same as the home block on the device
 *   DIRTY       modified since it was read or last written home
 *   FROZEN      committed, up to date (UBJ); written home by checkpoint
 *   FROZEN_OLD  committed, superseded by a newer committed version
 *
 * Locking: one mutex per cache, c->lock, protects the hash, the CLOCK
 * hand, every volatile field of struct ubj_buf but idx/d/data (constant)
 * and every descriptor field but ptag (the mode's).  The rule for the
 * descriptor and the flags, which threads that do not hold the mount lock
 * change (a write's completion, eviction, the timer's checkpoint):
 *   - state, txid, kind, older, newer and blkno are written only with
 *     c->lock held (state only through cache_set_state_locked); flags and
 *     io_busy likewise;
 *   - outside cache.c they are read only through ubj_cache_peek (one
 *     consistent view taken under c->lock) or ubj_cache_collect, never as
 *     b->d->state or b->flags -- holding the mount lock is not enough;
 *   - one exception: b->d->blkno of a buffer the caller references (or
 *     lists FROZEN in a mode that alone unfreezes it): blkno changes only
 *     when CLOCK reuses a FREE, unreferenced buffer, so it is stable for
 *     the holder, which may read it directly.
 * A view is a snapshot: a caller that acts on it later (a commit finding
 * its listed buffers) checks it is still the version it listed, as it
 * does today.  The bytes of a buffer are protected by the caller (the
 * file system's mount lock) and the stable-buffer rule below.  I/O is
 * done with c->lock released where possible.
 *
 * Writes (docs/DESIGN.md, "Cache write hooks"): every write of a buffer
 * that may change goes from a stable snapshot taken while the buffer is
 * io_busy; the mode that registered write hooks (ubj_cache_set_hooks) may
 * roll updates back in the snapshot or defer the write; cfg.seal is
 * applied to the snapshot, never to the live buffer.
 *
 * Errors: negative errno.  Thread-safe unless said otherwise.
 */
#ifndef UBJ_CACHE_H
#define UBJ_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <pthread.h>
#include "ubjfs/bdev.h"

#define UBJ_NOBUF UINT32_MAX

enum ubj_buf_state {
    UBJ_BUF_FREE = 0,
    UBJ_BUF_CLEAN = 1,
    UBJ_BUF_DIRTY = 2,
    UBJ_BUF_FROZEN = 3,
    UBJ_BUF_FROZEN_OLD = 4,
};

/* What a buffer holds, for the storage-bytes-by-category counters. */
enum ubj_buf_kind { UBJ_KIND_DATA = 0, UBJ_KIND_META = 1 };

/*
 * Persistent descriptor (48 bytes; 8-byte aligned fields so that each can
 * be persisted with one atomic store).
 */
struct ubj_bufdesc {
    uint64_t blkno;        /* home block on the device */
    uint64_t txid;         /* transaction that last dirtied/froze it */
    uint32_t state;        /* enum ubj_buf_state */
    uint32_t kind;         /* enum ubj_buf_kind */
    uint32_t older;        /* index of the older version of blkno, UBJ_NOBUF */
    uint32_t newer;        /* index of the newer version of blkno, UBJ_NOBUF */
    uint64_t ptag;         /* UBJ's persistent commit tag (src/txn/ubj.h):
                              0, or txid << 8 | flags, stored with one
                              atomic 8-byte store through the nvm layer;
                              the only word recovery trusts (docs/UBJ.md).
                              The cache itself never touches it. */
    uint64_t reserved;
};

/* Volatile buffer flags. */
#define UBJ_BUF_LOADED   0x1u  /* data valid (read from device or filled) */
#define UBJ_BUF_VERIFY   0x2u  /* just read from the device: caller checks it */
#define UBJ_BUF_PINNED   0x4u  /* the mode forbids writing it home for now */
#define UBJ_BUF_SEAL     0x8u  /* metadata whose live checksum field may be
                                  stale: every write seals its snapshot
                                  (cfg.seal); ubj_cache_seal seals the live
                                  buffer and clears the mark */

struct ubj_buf {
    uint32_t idx;          /* index into the descriptor and data arrays */
    uint32_t refcnt;       /* [c->lock] */
    uint32_t flags;        /* [c->lock] UBJ_BUF_* */
    uint32_t hash_next;    /* [c->lock] chain of the block hash, UBJ_NOBUF */
    uint32_t dnext, dprev; /* [c->lock] the list of DIRTY buffers, UBJ_NOBUF */
    uint8_t  referenced;   /* [c->lock] CLOCK bit */
    uint8_t  io_busy;      /* [c->lock] being read, written or sealed: its
                              bytes are stable (no write of it starts) */
    uint32_t defer_sweep;  /* [c->lock] the CLOCK sweep that last deferred
                              (or rolled back) its write; 0: none */
    uint64_t ra_ready;     /* [c->lock] asynchronous read-ahead: its
                              request's modeled completion, ns on the
                              stack's clock, until a get finds the clock
                              past it; 0: ready */
    void *ra_io;           /* [c->lock] the asynchronous read-ahead request
                              reading it, while one is in flight; NULL */
    struct ubj_bufdesc *d; /* == &c->desc[idx] */
    uint8_t *data;         /* == c->data + idx * 4096 */
};

struct ubj_cache_stats {
    uint64_t hits, misses;
    uint64_t run_reads;          /* device reads of ubj_cache_get_run */
    /* read-ahead (ubj_cache_readahead): blocks read ahead and the device
     * requests that read them; of those blocks, the ones got before they
     * were dropped (used), dropped (evicted, forgotten, invalidated)
     * without a get (unused), and gets that found one still being read, or
     * read asynchronously but not ready on the clock, and waited for it
     * (late; a late block is counted used too) */
    uint64_t ra_blocks, ra_reads, ra_used, ra_unused, ra_late;
    /* of ra_reads, those submitted asynchronously
     * (ubj_cache_readahead_async); the clock time gets waited for an
     * asynchronous read-ahead's ready time (late hits), ns */
    uint64_t ra_async, ra_late_ns;
    uint64_t evictions;          /* buffers reused for another block */
    uint64_t writeback_blocks;   /* blocks written home by the cache */
    uint64_t writeback_data_bytes, writeback_meta_bytes;
    uint64_t reclaims;           /* calls of the reclaim hook */
    uint64_t write_deferred;     /* write_begin said UBJ_WRITE_DEFER */
    uint64_t write_rolled_back;  /* writes of a rolled-back snapshot */
    uint64_t must_sweeps;        /* CLOCK sweeps asking with UBJ_WRITE_MUST */
    uint64_t stable_waits;       /* ubj_cache_wait_stable calls that waited
                                    for a write's snapshot */
    uint64_t dirty, frozen;      /* current counts */
    uint64_t cold_frozen;        /* FROZEN or PINNED dirty buffers CLOCK
                                    passed cold (not referenced since its
                                    last pass): ones it would have evicted
                                    were they CLEAN */
    /* Device waits on the configured clock (clock_ns; 0 without one):
     * reads of a miss, run or read-ahead (the caller waits for it: the
     * read-ahead is synchronous) with the caller's lock held
     * (ubj_cache_get, _get_run, _readahead without `outer`) or released
     * (the _unlocking gets and _readahead that did release it),
     * and CLOCK's writes of a dirty victim home before a buffer could be
     * claimed (the caller's lock held, whichever get it was): the whole
     * write over a request queue (the miss waits for it), only the
     * submission otherwise (the victim is not waited for). */
    uint64_t read_wait_locked_ns, read_wait_unlocked_ns;
    uint64_t victim_wait_ns;
    uint64_t io_writes;          /* write requests submitted (each one run
                                    of blocks, asynchronous: interface v2) */
    uint64_t io_inflight_max;    /* most write requests in flight at once */
    uint64_t io_raised;          /* requests raised to time-critical because
                                    a caller waits for them (over a queue) */
};

struct ubj_cache;

struct ubj_cache_config {
    uint32_t nbufs;                 /* buffers; >= 16 */
    struct ubj_bufdesc *desc_mem;   /* nbufs descriptors, or NULL = DRAM */
    uint8_t *data_mem;              /* nbufs * 4096 bytes, or NULL = DRAM */
    /* Called (without c->lock) on the snapshot of a UBJ_BUF_SEAL buffer
     * (or of a metadata buffer a hook rolled back) just before it goes to
     * the device, and by ubj_cache_seal on a live buffer: fill in
     * checksums of `data`, which is what is written.  May be NULL. */
    void (*seal)(void *ctx, uint64_t blkno, void *data);
    void *ctx;                      /* seal's */
    unsigned flags;                 /* UBJ_CACHE_* */
    /* The clock device waits are timed on (stats' *_wait_ns), ns; called
     * without c->lock from the waiting thread.  NULL: not timed. */
    uint64_t (*clock_ns)(void *clock_ctx);
    void *clock_ctx;
    /* Called (without c->lock, by whichever thread ends the read) after
     * the device wrote len bytes of buffer data at `data` (a miss, a run,
     * read-ahead, synchronous or not): a mode whose data_mem is an NVM
     * region charges those writes (mode ubj: ubj_nvm_filled).  NULL:
     * nothing to charge (DRAM). */
    void (*fill)(void *fill_ctx, const void *data, size_t len);
    void *fill_ctx;
};

/* ---- write hooks (docs/DESIGN.md, "Cache write hooks") ------------------- */

/* What write_begin decided about one write. */
enum ubj_write_verdict {
    UBJ_WRITE_AS_IS = 0,        /* write the snapshot as the cache copied it */
    UBJ_WRITE_ROLLED_BACK = 1,  /* write the snapshot the hook changed (some
                                   updates undone in it): the live bytes are
                                   not on the device, the buffer stays DIRTY */
    UBJ_WRITE_DEFER = 2,        /* do not write it now: it stays DIRTY */
};

#define UBJ_WRITE_MUST 0x1u   /* write_begin flags: the write must happen --
                                 deferring is not allowed; a hook whose
                                 updates are not all satisfied rolls them
                                 back in the snapshot instead */

/*
 * struct ubj_cache_hooks -- what a consistency mode hangs on the cache's
 * writes (after FreeBSD's softdep_disk_io_initiation and
 * softdep_disk_write_complete) and on its lack of room.  Every member may
 * be NULL.  ctx is the one given to ubj_cache_set_hooks.
 *
 * Common rules for every hook:
 *  - Called by the cache only, never with c->lock held, by whichever
 *    thread makes the write or needs the room: today a caller of
 *    ubj_cache_get/ubj_cache_cow (eviction, reclaim), of
 *    ubj_cache_write_home or of ubj_cache_writeback (the write-back lock
 *    held) -- through the file system, so with the mount lock held; the
 *    timer's write-back takes it too.  Since issue 18 write_done runs in the
 *    completion of the write's request: in the thread that submitted it
 *    (a device that completes inside submit), in a thread waiting for or
 *    draining a request queue, or on the queue's dispatcher thread --
 *    without the mount lock, perhaps two at once for different buffers.  A hook therefore never takes the
 *    mount lock and never assumes it is held: the mode's own state it
 *    touches is under the mode's own lock.
 *  - A hook must not call ubj_cache_get, ubj_cache_cow, ubj_cache_write_home,
 *    ubj_cache_writeback, ubj_cache_write_bufs or ubj_cache_set_state
 *    (reclaim excepted: it may call all of them), nor wait for another
 *    buffer's I/O.  It may call the flag functions and read the device.
 *
 * write_begin(ctx, b, blkno, live, snap, flags): a DIRTY buffer b of block
 *   blkno is about to be written (eviction, write_home, writeback; never
 *   ubj_cache_write_bufs).  b is io_busy: no other write of it is in
 *   flight and it cannot be reused; its bytes are stable (the stable-
 *   buffer rule, below).  `snap` holds a copy of `live` (b->data).  The
 *   hook returns a verdict: UBJ_WRITE_AS_IS; UBJ_WRITE_ROLLED_BACK after
 *   undoing in `snap` (never in `live`) the updates whose dependencies are
 *   not on the device yet; or UBJ_WRITE_DEFER -- not allowed with
 *   UBJ_WRITE_MUST in flags (reclaim, write_home and UBJ_WB_MUST
 *   write-backs need the write).  After it, cfg.seal checksums the
 *   snapshot, and the snapshot is written.
 * write_done(ctx, b, blkno, rc, rolled_back): called exactly once for
 *   every write write_begin let through (and every write of a DIRTY
 *   buffer when there is no write_begin), after the device write finished
 *   with rc (0 or negative errno), before b stops being io_busy and before
 *   its state changes (CLEAN after rc 0 unless rolled back or redirtied).
 *   rolled_back: write_begin said UBJ_WRITE_ROLLED_BACK.  The mode rolls
 *   forward its records and releases dependents.  Must be short.
 * reclaim(ctx): ubj_cache_get or ubj_cache_cow found no reusable buffer
 *   even after asking every deferred candidate with UBJ_WRITE_MUST: every
 *   buffer is referenced, pinned or frozen.  The mode commits/checkpoints/
 *   writes back so that some become reusable, and returns 0, or a
 *   negative errno to fail the call that needed room.
 *
 * The stable-buffer rule (this is the one place it is stated; the modes
 * implement it, docs/DESIGN.md says how each): from the moment a write of
 * b sets io_busy until its snapshot is copied and write_begin returned
 * (b's "window"; for a zero-copy write of FROZEN buffers, until the device
 * write ends), no writer changes b's bytes.  It holds by two halves:
 *  - a writer waits for the window to close before it changes a buffer:
 *    every ubj_txn_write_access calls ubj_cache_wait_stable on the buffer
 *    the mode returned (UBJ returns a copy for a FROZEN one: it works on
 *    the copy and never waits for a checkpoint's write);
 *  - a write of a buffer that is not FROZEN starts (its window opens) only
 *    in a thread that holds the mount lock, or of a buffer nobody
 *    references (CLOCK's victim): a writer holds both the mount lock and a
 *    reference from its write_access to its last ubj_txn_dirty, so no
 *    window opens under it.  The timer's lock-free writes are UBJ's
 *    checkpoint of FROZEN buffers, which nobody changes (copy on write).
 * After the window the live buffer may change freely: a change marked
 * dirty while the write is in flight keeps the buffer DIRTY (it is
 * written again).
 */
struct ubj_cache_hooks {
    int (*write_begin)(void *ctx, struct ubj_buf *b, uint64_t blkno,
                       const void *live, void *snap, unsigned flags);
    void (*write_done)(void *ctx, struct ubj_buf *b, uint64_t blkno, int rc,
                       bool rolled_back);
    int (*reclaim)(void *ctx);
};

/*
 * ubj_cache_set_hooks -- from now on the cache calls *h (copied; NULL: no
 * hooks) with ctx.  A mode calls it in its mount once its state exists;
 * src/txn/txn.c clears it after the mode's unmount (and a failed mount).
 * Call it only while no other thread uses the cache and no write is in
 * flight (mount, unmount): a write keeps the hooks it started with.
 */
void ubj_cache_set_hooks(struct ubj_cache *c, const struct ubj_cache_hooks *h,
                         void *ctx);

/*
 * ubj_cache_reclaim -- call the reclaim hook now, as ubj_cache_get does when
 * it finds no room (counted in stats.reclaims): for tests, and a caller
 * that wants room made before it needs it.  The caller holds no c->lock
 * (never does).  Returns the hook's result, or -ENOBUFS without a hook.
 */
int ubj_cache_reclaim(struct ubj_cache *c);

/* desc_mem/data_mem hold the buffers of an earlier life (a persistent
 * region after a restart): create leaves them untouched, and nothing but
 * ubj_cache_adopt() and ubj_cache_destroy() may be called until adopt
 * succeeds. */
#define UBJ_CACHE_ADOPT 0x1u

/*
 * ubj_cache_create -- a cache of cfg->nbufs buffers over `dev` (not owned).
 * Supplied memory is taken as it is (all buffers start FREE: the caller
 * that wants to keep a persistent region's contents uses
 * ubj_cache_adopt() afterwards).  Returns 0, -EINVAL (nbufs < 16), -ENOMEM.
 */
int ubj_cache_create(struct ubj_bdev *dev, const struct ubj_cache_config *cfg,
                     struct ubj_cache **out);

/*
 * ubj_cache_adopt -- after a create with UBJ_CACHE_ADOPT: keep every
 * descriptor whose state is FROZEN (the caller's recovery decided which)
 * as a loaded, cached, newest version of its block (UBJ_BUF_VERIFY set,
 * version links cleared); every other descriptor becomes FREE.  Only the
 * state and link fields of descriptors are written.  Returns the number
 * kept, or -EUCLEAN (a kept block beyond the device, or two kept versions
 * of one block; the cache stays unusable: destroy it).
 */
int ubj_cache_adopt(struct ubj_cache *c);

/* ubj_cache_destroy -- free the cache without writing anything back. */
void ubj_cache_destroy(struct ubj_cache *c);

#define UBJ_GET_NOREAD 0x1u  /* the caller overwrites the whole block: zero-
                                fill on a miss instead of reading */

/*
 * ubj_cache_get -- a referenced buffer holding block `blkno` (its newest
 * version).  On a miss, reuses a CLEAN or FREE buffer (CLOCK), or writes a
 * DIRTY unpinned one home first -- an asynchronous request nobody waits
 * for (but over a request queue the get waits for it): the buffer is
 * reused once it completed (at once on a device that completes inside
 * submit), the hand moves on meanwhile (its write_begin
 * may defer it: then, if nothing else was reusable, CLOCK asks again with
 * UBJ_WRITE_MUST), or
 * calls the reclaim hook; reads the block unless UBJ_GET_NOREAD.  Returns
 * 0 and *out; -EINVAL (blkno beyond the device); -EIO (read failed:
 * nothing is cached); -ENOBUFS (every buffer referenced: the cache is too
 * small for the caller); reclaim's error.
 */
int ubj_cache_get(struct ubj_cache *c, uint64_t blkno, unsigned flags,
                  struct ubj_buf **out);

#define UBJ_CACHE_RUN_MAX 256u   /* blocks of one ubj_cache_get_run (1 MiB) */
#define UBJ_CACHE_RUN_SHARE 8u   /* ... and at most 1/8 of the buffers */

/*
 * ubj_cache_get_run -- referenced buffers holding the newest versions of
 * the first k blocks of [blkno, blkno + n), 1 <= k <= n, in out[0..k):
 * either the cached blocks from blkno on, or (blkno is missing) the
 * missing blocks from blkno on up to the first cached one, read in ONE
 * device request (the "off" read path of docs/READAHEAD.md: a caller's
 * contiguous range is one request, not one per block).  The caller loops
 * until it has the n it wants, and drops each with ubj_cache_put.  A run
 * is at most UBJ_CACHE_RUN_MAX blocks and 1/UBJ_CACHE_RUN_SHARE of the
 * buffers; its first buffer is found as ubj_cache_get finds one (it may
 * write a victim home, wait, or reclaim), the later ones only as CLOCK
 * finds them at once (the run ends early rather than wait for buffers it
 * holds itself).  While the read is in flight other getters of those
 * blocks wait for it.  Returns k; -EINVAL (n 0 or the run beyond the
 * device); -EIO (the read failed: none of the run's missing blocks is
 * cached, no reference is held); -ENOBUFS and reclaim's errors as
 * ubj_cache_get.  Thread-safe.
 */
int ubj_cache_get_run(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                      struct ubj_buf **out);

/*
 * ubj_cache_get_unlocking -- ubj_cache_get for a caller holding `outer`
 * (the mount lock), which is released while a miss's device read is in
 * flight -- only then: never while a buffer is written home to make room,
 * nor while reclaim runs -- and held again when it returns.  The read ends
 * (the buffer LOADED, io_cv broadcast) before `outer` is retaken, so a
 * thread holding `outer` while waiting for that block is not waited for.
 * What the caller looked up under `outer` may have changed meanwhile: it
 * must revalidate (src/fs/meta.c, fs_get_read).  Returns 1 and *out if
 * `outer` was released, 0 and *out if not (a hit, or another thread's read
 * waited for under `outer`), or ubj_cache_get's errors (`outer` held
 * again); -EINVAL also for UBJ_GET_NOREAD (nothing to read).
 * Thread-safe as ubj_cache_get; `outer` must not be c's own lock.
 */
int ubj_cache_get_unlocking(struct ubj_cache *c, uint64_t blkno, unsigned flags,
                            pthread_mutex_t *outer, struct ubj_buf **out);

/*
 * ubj_cache_get_run_unlocking -- ubj_cache_get_run for a caller holding
 * `outer` (the mount lock), released while the run's device read is in
 * flight, as ubj_cache_get_unlocking releases it for one block: only then,
 * and the read ends (its buffers LOADED, io_cv broadcast) before `outer` is
 * retaken.  *dropped tells whether it was released (the caller must then
 * revalidate what it looked up).  Returns k as ubj_cache_get_run, or its
 * errors (`outer` held again).  Thread-safe; `outer` is not c's lock.
 */
int ubj_cache_get_run_unlocking(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                                pthread_mutex_t *outer, bool *dropped,
                                struct ubj_buf **out);

/*
 * ubj_cache_wait_unlocked -- the caller holds `outer`: wait until no
 * ubj_cache_get_unlocking or ubj_cache_get_run_unlocking call that
 * released `outer` is still outside it
 * (each has retaken it and returned, or waits to), releasing `outer`
 * meanwhile.  For a teardown (ubj_unmount) that must not free what such
 * a reader will touch.  Never fails; thread-safe.
 */
void ubj_cache_wait_unlocked(struct ubj_cache *c, pthread_mutex_t *outer);

/*
 * ubj_cache_readahead -- read ahead the blocks of [blkno, blkno + n) that
 * are not cached, each stretch of missing blocks in one device request --
 * at most UBJ_CACHE_RUN_MAX blocks and 1/UBJ_CACHE_RUN_SHARE of the
 * buffers in all per call (the rest is not read ahead: a call never
 * reuses a buffer it read itself) -- into buffers that hold no reference
 * afterwards: CLEAN, marked read-ahead
 * (counted used at their first get, unused if dropped before; a get while
 * the read is in flight waits for it and counts late), and the block
 * `mark` (UINT64_MAX: none) carries the window's marker if this call
 * reads it.  Read-ahead only takes what CLOCK finds at once without a
 * write -- a FREE buffer, or a CLEAN one that is unreferenced, idle,
 * unpinned and has no older version -- never a DIRTY, FROZEN, referenced
 * or busy one; it writes nothing home, calls no reclaim and never waits
 * for a buffer: when none is left it stops early.  With `outer` (the
 * mount lock, held by the caller) that lock is released around the device
 * reads (*dropped tells; the caller revalidates, as for
 * ubj_cache_get_run_unlocking).  Reads are synchronous today: a block's
 * ready time is the end of its request; an asynchronous submission keeps
 * the same late-hit rule (the buffer stays busy until it completes).
 * Returns the number of blocks read (0: all cached or no buffer);
 * -EINVAL (n 0 or beyond the device); the device's error (-EIO: the
 * failed request's blocks are not cached; earlier ones are).
 * Thread-safe; `outer` is not c's lock.
 */
int ubj_cache_readahead(struct ubj_cache *c, uint64_t blkno, uint32_t n, uint64_t mark,
                        pthread_mutex_t *outer, bool *dropped);

/*
 * ubj_cache_readahead_async -- as ubj_cache_readahead, but each stretch of
 * missing blocks is one asynchronous read request (interface v2,
 * time-limited: wanted by `deadline_ns` on the stack's clock) that nobody
 * waits for.  Its buffers stay busy until the request's completion loads
 * them (a get meanwhile waits for it -- a late hit -- and, over a request
 * queue, raises it to time-critical and drives the queue); each buffer
 * then carries its ready time, the request's modeled completion, and a get
 * before that time waits on the clock until it (a late hit too).  The
 * submitting thread is charged the request's CPU share (t_cpu_ns: a
 * raw-NAND driver's programmed I/O) on the clock when the device
 * completed it inside the submission (not through a queue).  Never
 * releases a caller's lock, never waits for the device.  A failed read
 * caches none of its blocks and reports nothing (read-ahead is advice: a
 * get reads them again and meets the error).  Returns the number of
 * blocks submitted (0: all cached or no buffer); -EINVAL (n 0 or beyond
 * the device); -ENOMEM (nothing submitted for the stretch that failed).
 * Thread-safe.
 */
int ubj_cache_readahead_async(struct ubj_cache *c, uint64_t blkno, uint32_t n,
                              uint64_t mark, uint64_t deadline_ns);

#define UBJ_RA_CACHED 0x1u   /* ubj_cache_ra_probe: blkno is cached (or being read) */
#define UBJ_RA_MARKED 0x2u   /* ... and carries a read-ahead marker */
#define UBJ_RA_UNUSED 0x4u   /* ... and was read ahead, never got since */
/*
 * ubj_cache_ra_probe -- whether blkno is cached and marked, without a
 * reference, I/O or a hit counted; with take_marker the marker is cleared
 * (Linux's TestClearPageReadahead).  UBJ_RA_* bits.  Thread-safe.
 */
unsigned ubj_cache_ra_probe(struct ubj_cache *c, uint64_t blkno, bool take_marker);

/* ubj_cache_lookup -- like get but never does I/O: -ENOENT on a miss. */
int ubj_cache_lookup(struct ubj_cache *c, uint64_t blkno, struct ubj_buf **out);

/* ubj_cache_put -- drop a reference taken by get/lookup.  NULL is a no-op. */
void ubj_cache_put(struct ubj_cache *c, struct ubj_buf *b);

/*
 * ubj_cache_set_state -- the single state transition function: set b's
 * state, txid and kind, keeping the dirty/frozen counts.  Asserts the
 * transition is one the state diagram allows.
 */
void ubj_cache_set_state(struct ubj_cache *c, struct ubj_buf *b,
                         enum ubj_buf_state st, uint64_t txid);

/* ubj_cache_mark_dirty -- CLEAN/DIRTY -> DIRTY with kind; sets SEAL for
 * metadata.  (Modes call it; see src/txn/mode.h.) */
void ubj_cache_mark_dirty(struct ubj_cache *c, struct ubj_buf *b,
                          enum ubj_buf_kind kind, uint64_t txid);

/* ubj_cache_mark_dirty_flags -- ubj_cache_mark_dirty that also sets the
 * public flags `f` (UBJ: PINNED) in the same step, unless b is GONE. */
void ubj_cache_mark_dirty_flags(struct ubj_cache *c, struct ubj_buf *b,
                                enum ubj_buf_kind kind, uint64_t txid, uint32_t f);

/*
 * ubj_cache_wait_stable -- the caller, holding a reference on b, is about
 * to change b's bytes: wait (on io_cv, c->lock released meanwhile) until
 * no write of b is inside its stable-buffer window (above); a write whose
 * snapshot is taken does not hold it up.  Counted in stats.stable_waits
 * when it waits.  Never waits for anything but a write already started
 * (whose thread finishes its window without the caller's locks).
 * Thread-safe.
 */
void ubj_cache_wait_stable(struct ubj_cache *c, struct ubj_buf *b);

#if UBJ_TEST_HOOKS
/*
 * ubj_cache_test_write_hook -- test builds: fn(arg, c, b) in the thread
 * making a write of b, inside b's window (io_busy set, before its snapshot
 * copy; for a zero-copy write, before the device write), without c->lock:
 * fn may park the write there (tests/concurrency/handles.c).  NULL: none.
 * Process-wide; set it while no write runs.
 */
void ubj_cache_test_write_hook(void (*fn)(void *arg, struct ubj_cache *c,
                                          struct ubj_buf *b), void *arg);
/*
 * ubj_cache_test_read_hook -- test builds: fn(arg, c, blkno) in the thread
 * of a ubj_cache_get_unlocking miss, after the caller's lock is released
 * (kept under the broken variant unlock-none) and before the device read, without c->lock: fn may park the read there
 * (tests/concurrency/unlocked.c).  NULL: none.  Process-wide.
 */
void ubj_cache_test_read_hook(void (*fn)(void *arg, struct ubj_cache *c,
                                         uint64_t blkno), void *arg);
/* ubj_cache_test_unlock_break -- test builds: the broken variant
 * `unlock-none`: ubj_cache_get_unlocking keeps the caller's lock through
 * the read (as before this rule), the read hook still called. */
void ubj_cache_test_unlock_break(bool unlock_none);
/* ubj_cache_test_break -- test builds: the broken variant `stable-no-wait`:
 * ubj_cache_wait_stable returns at once (a writer changes a buffer inside
 * a write's window). */
void ubj_cache_test_break(bool stable_no_wait);
/* ubj_cache_test_break_live -- test builds: the broken variant
 * `write-live`: a single-buffer write (eviction, write_home) is submitted
 * from the live buffer instead of its snapshot (what a device copies when
 * the write reaches it, perhaps after the buffer changed). */
void ubj_cache_test_break_live(bool write_live);
/* ubj_cache_test_break_nowait -- test builds: the broken variant
 * `cache-no-wait`: write-back, write_home and write_bufs return once
 * their requests are submitted, without waiting for them (so a flush the
 * caller issues next may overtake them in a queue). */
void ubj_cache_test_break_nowait(bool no_wait);
/* ubj_cache_test_break_ra_ready -- test builds: the broken variant
 * `ra-no-ready`: a get of a block an asynchronous read-ahead loaded does
 * not wait for its ready time (the data is used before the device has
 * delivered it on the clock; the late hit is still counted). */
void ubj_cache_test_break_ra_ready(bool no_ready);
#endif

/* A buffer's descriptor and flags as ubj_cache_peek saw them under c->lock. */
struct ubj_buf_view {
    uint64_t blkno;
    uint64_t txid;
    uint32_t state;        /* enum ubj_buf_state */
    uint32_t kind;         /* enum ubj_buf_kind */
    uint32_t older, newer; /* version links, UBJ_NOBUF */
    uint32_t flags;        /* the public UBJ_BUF_* flags */
};

/*
 * ubj_cache_peek -- b's descriptor fields and public flags, read together
 * under c->lock (the only way code outside the cache reads them: see
 * "Locking" above).  Thread-safe; never waits for I/O.
 */
struct ubj_buf_view ubj_cache_peek(struct ubj_cache *c, const struct ubj_buf *b);

/*
 * ubj_cache_collect -- the indices of every buffer in `state` into
 * idx[0..max) and, if txid is not NULL, their txids into txid[], in index
 * order, all under one hold of c->lock.  Returns the count (at most max).
 * Thread-safe (UBJ's checkpoint lists its FROZEN buffers so).
 */
uint32_t ubj_cache_collect(struct ubj_cache *c, enum ubj_buf_state state,
                           uint32_t *idx, uint64_t *txid, uint32_t max);

/* ubj_cache_set_flags / clear_flags -- change volatile flags under the lock. */
void ubj_cache_set_flags(struct ubj_cache *c, struct ubj_buf *b, uint32_t f);
void ubj_cache_clear_flags(struct ubj_cache *c, struct ubj_buf *b, uint32_t f);

/*
 * ubj_cache_write_home -- write b (which the caller references) to its home
 * block now, from a sealed snapshot (a DIRTY one through the hooks, asked
 * with UBJ_WRITE_MUST), and mark it CLEAN if it was DIRTY (and not rolled
 * back or redirtied) or FROZEN.  Waits for a write of b in flight first,
 * then for its own (as ubj_cache_writeback waits).  No device flush.  Returns 0 or -EIO
 * (state unchanged).
 */
int ubj_cache_write_home(struct ubj_cache *c, struct ubj_buf *b);

#define UBJ_WB_FLUSH  0x1u   /* flush the device afterwards */
#define UBJ_WB_PINNED 0x2u   /* also write pinned buffers */
#define UBJ_WB_MUST   0x4u   /* no deferral: write_begin gets UBJ_WRITE_MUST */
#define UBJ_WB_BACKGROUND 0x8u  /* nobody waits (the timer's tick, an early
                               checkpoint): the writes stay time-noncritical,
                               the call waits for their completion but not
                               on a timed model's clock, and the flush is
                               time-noncritical too (ubj_bdev_flush_crit) */

/* ubj_cache_write_home_flags -- ubj_cache_write_home with `flags`:
 * UBJ_WB_BACKGROUND (nobody waits, as for ubj_cache_writeback) or 0.
 * Returns as ubj_cache_write_home. */
int ubj_cache_write_home_flags(struct ubj_cache *c, struct ubj_buf *b,
                               unsigned flags);

/*
 * ubj_cache_writeback -- write every DIRTY (and, with UBJ_WB_PINNED,
 * pinned) buffer home in block order, coalesced, each from a sealed
 * snapshot through the hooks, then optionally flush the device.  The runs
 * are asynchronous time-noncritical requests, up to 32 in flight (a queue
 * below may reorder them); the call waits for all of them before the
 * flush and before it returns (raised to time-critical while it waits;
 * on a timed model's clock too, unless UBJ_WB_BACKGROUND),
 * and first for writes of DIRTY buffers already in flight.  Buffers
 * become CLEAN, except those write_begin deferred (unless UBJ_WB_MUST) or
 * rolled back: they stay DIRTY (a mode that needs everything home calls
 * again; ubj_cache_stats_get's `dirty` says what is left).  Returns 0 or
 * the first -EIO (the failed buffers stay DIRTY; the rest are still
 * written).
 */
int ubj_cache_writeback(struct ubj_cache *c, unsigned flags);

/*
 * ubj_cache_forget -- block `blkno` was freed: drop any cached version
 * that is not referenced (a DIRTY one is discarded, never written), so a
 * later reuse of the block cannot be overwritten by stale data.  A
 * referenced buffer is instead marked CLEAN and left to its holder.
 * FROZEN and FROZEN_OLD versions belong to the mode and are left alone
 * (UBJ uses ubj_cache_revoke).
 */
void ubj_cache_forget(struct ubj_cache *c, uint64_t blkno);

/* ---- UBJ: versions, revoke, sealing, checkpoint writes (src/txn/ubj.c) ---- */

/*
 * ubj_cache_cow -- the caller (holding a reference on *b) is about to
 * change *b's block.  Moves to the newest version of the block; if that
 * is FROZEN, copies it into another buffer that becomes the newest
 * version, DIRTY in `txid`, PINNED, of the same kind, with the frozen one
 * as its older version (untouched).  *b is replaced by the buffer to
 * modify (the reference moves to it).  May call the reclaim hook for room.
 * Returns 1 (copied), 0 (no copy needed), -ESTALE (the block was revoked:
 * *b is a dropped version), -ENOBUFS or reclaim's error.
 */
int ubj_cache_cow(struct ubj_cache *c, struct ubj_buf **b, uint64_t txid);

/*
 * ubj_cache_seal -- if b is marked UBJ_BUF_SEAL, call cfg.seal on its live
 * bytes now and clear the mark: a mode that copies or persists the live
 * buffer itself (UBJ freezing b at commit, the journal copying it to the
 * log).  Precondition: no handle can change b meanwhile -- the mode calls
 * it only at commit, when no operation is open.  It waits for a write of
 * b in flight and holds io_busy while it seals, so no write copies a
 * half-written checksum.
 */
void ubj_cache_seal(struct ubj_cache *c, struct ubj_buf *b);

/*
 * ubj_cache_revoke -- block `blkno` was freed (UBJ): its DIRTY and CLEAN
 * versions are dropped as by ubj_cache_forget; a FROZEN version becomes
 * FROZEN_OLD and, like every FROZEN_OLD one, leaves the hash and the
 * version chain (a later get misses) but stays allocated until the mode
 * sets it FREE.  The indices of the versions turned FROZEN_OLD go to
 * out[] (at most max).  Returns their count.
 */
uint32_t ubj_cache_revoke(struct ubj_cache *c, uint64_t blkno, uint32_t *out,
                          uint32_t max);

/*
 * ubj_cache_write_bufs -- write the buffers with indices idx[0..n) home,
 * sorted by block number with block 0 (the superblock) last, coalesced,
 * without sealing them, without the write hooks and without changing their
 * state (UBJ checkpoint: the mode makes them CLEAN once the device was
 * flushed).  Zero copy: a run of buffers adjacent in the pool goes straight
 * from it -- FROZEN bytes never change (the mode copies on write), so they
 * need no snapshot; other runs are gathered into a snapshot.  Only buffers that are FROZEN when the call starts, and, if
 * txid is not NULL, still carry txid[k] (the committed transaction they
 * were listed with), are written: their bytes cannot change while in
 * flight (a checkpoint that would make one CLEAN waits for the write).
 * Others are skipped, since a caller without the mount lock may list
 * buffers that moved meanwhile -- and a buffer that was written home,
 * reused and frozen again may be in the middle of a commit that has not
 * reached its commit record: writing it home would put an uncommitted
 * transaction on the device.  Counts the writes in the write-back
 * statistics.  The runs are asynchronous requests in flight together and
 * waited for as ubj_cache_writeback's (flags: UBJ_WB_BACKGROUND or 0).
 * Returns 0 or the first device error (every buffer is still attempted).
 * Thread-safe (takes the write-back and cache locks).
 */
int ubj_cache_write_bufs(struct ubj_cache *c, const uint32_t *idx,
                         const uint64_t *txid, uint32_t n, unsigned flags);

/* ubj_cache_invalidate -- drop every unreferenced CLEAN buffer. */
void ubj_cache_invalidate(struct ubj_cache *c);

/* ubj_cache_drop_clean -- drop the cached version of blkno if it is CLEAN,
 * unreferenced, not in I/O and has no older version (ubj_cache_invalidate
 * for one block; fadvise DONTNEED).  Never writes, never touches a DIRTY,
 * FROZEN or referenced buffer.  Returns whether it dropped one. */
bool ubj_cache_drop_clean(struct ubj_cache *c, uint64_t blkno);

/*
 * ubj_cache_take_cold_frozen -- how many cold FROZEN or PINNED dirty
 * buffers CLOCK passed since the last call (and reset that count).  Such
 * a buffer cannot be evicted until a commit and a checkpoint make it
 * CLEAN, so CLOCK gives it the same second chance as others and counts it
 * when cold: UBJ commits and checkpoints when eviction keeps meeting them
 * (they squeeze the cache's hot clean blocks out).  Thread-safe.
 */
uint64_t ubj_cache_take_cold_frozen(struct ubj_cache *c);

/*
 * ubj_cache_wait_writes -- wait until no write of the cache is in flight
 * (an eviction's nobody waits for), driving a request queue below if the
 * stack has one.  No flush; no clock wait.  Thread-safe; the caller holds
 * no lock a write's completion takes (c->lock, the mode's).
 */
void ubj_cache_wait_writes(struct ubj_cache *c);

/*
 * ubj_cache_wait_readahead -- wait until no asynchronous read-ahead of the
 * cache is in flight (driving a request queue below); its blocks are then
 * loaded (their ready times may still lie ahead on the clock).  No clock
 * wait.  Thread-safe; the caller holds no lock the completion takes.
 */
void ubj_cache_wait_readahead(struct ubj_cache *c);

/* ubj_cache_stats_get -- counters since creation. */
void ubj_cache_stats_get(struct ubj_cache *c, struct ubj_cache_stats *out);

/* ubj_cache_nbufs / ubj_cache_dev -- geometry accessors. */
uint32_t ubj_cache_nbufs(const struct ubj_cache *c);
struct ubj_bdev *ubj_cache_dev(const struct ubj_cache *c);

/* ubj_cache_buf_at -- the buffer at index `idx` (for modes that walk the
 * descriptor array: recovery, checkpoint).  NULL if idx >= nbufs. */
struct ubj_buf *ubj_cache_buf_at(struct ubj_cache *c, uint32_t idx);

#endif /* UBJ_CACHE_H */
