/*
 * fs.h -- the file system layer's internal interface: the mount structure
 * and the functions each src/fs/ module offers the others.
 *
 * Modules (one job each):
 *   super.c   format, mount, unmount, sync, statfs, superblock I/O,
 *             the background timer, the image's description for the
 *             mode verbs (fs_mode_image)
 *   meta.c    metadata seal/verify, verified metadata buffers, the entry
 *             and exit of every public operation (fs_start/fs_stop)
 *   alloc.c   block and inode bitmaps: allocate, free, counts
 *   inode.c   inode references (fs_iref), attributes, timestamps, the
 *             open table, the orphan list, freeing an inode
 *   extent.c  the per-file extent tree: map, allocate, truncate, walk
 *   file.c    pread, pwrite, setattr, fsync, open/release
 *   ofile.c   open file descriptions (struct ubj_file), fadvise
 *   readahead.c  the read-ahead window engine: which pages a read brings
 *             in, per policy (readahead.h; no I/O, no lock of its own)
 *   rapath.c  read-ahead in the read path: the engine's callbacks over a
 *             call, the streams (per open file, per inode), invalidation
 *   dir.c     the per-directory B+tree of names: lookup, add, remove,
 *             iterate, walk
 *   namei.c   namespace operations (mknod, mkdir, unlink, rmdir, rename,
 *             link, symlink, readlink, readdir, lookup) and path helpers
 *   check.c   fsck: reads the raw device, shares nothing mutable; one
 *             file per pass (check_*.c, their shared state check_int.h)
 *   view.c    fsck --nvm: the recovered read-only view of an image and
 *             its NVM region (the mode's view verb)
 *   scrub.c   -o scrub: check.c's passes over a mounted image
 *
 * Locking: every public entry point takes fs->lock (a mutex) for its
 * whole duration, so the functions below run one at a time per mount and
 * may assume it is held ("_locked" is implied for everything here) --
 * with one exception: a handle-less read operation (pread, getattr,
 * lookup, readlink, path lookups: struct fs_rd below) whose block misses
 * in the cache releases the lock while the device reads (fs_get_read,
 * ubj_cache_get_unlocking) and revalidates against fs->gen after
 * retaking it, restarting if it moved (docs/DESIGN.md, "Device reads
 * outside the mount lock").  Whoever changes anything a reader looked up
 * calls fs_gen_bump() first: every ubj_txn_write_access and
 * ubj_txn_forget in src/fs is preceded by one.
 *
 * Buffers: metadata is read with fs_meta_read (verifies magic, block
 * number and crc32c the first time the block comes from the device) and
 * changed with fs_meta_write_begin / fs_meta_dirty; the checksum is filled
 * in lazily by the cache's seal callback on the snapshot of each write,
 * right before it goes to the device (or on the live buffer when a mode
 * freezes or journals it: ubj_cache_seal) -- the live buffer's crc field
 * is stale while the buffer is marked UBJ_BUF_SEAL.
 *
 * Events: every change to a metadata block is also described to the mode
 * by a semantic event (src/txn/mode.h, "Semantic events") between the
 * write access and the dirty, with the exact byte range (fs_event,
 * fs_ievent); test builds check it (UBJ_CHECK_EVENTS=1).
 */
#ifndef UBJ_FS_FS_H
#define UBJ_FS_FS_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>
#include "ubjfs/ubjfs.h"
#include "fs/format.h"
#include "fs/readahead.h"
#include "cache/cache.h"
#include "txn/mode.h"
#include "util/util.h"

/* One open inode: [fs->lock] */
struct fs_open {
    ubj_ino_t ino;
    uint32_t count;
    struct fs_open *next;
};
#define FS_OPEN_BUCKETS 256u

struct fs_alloc;

#define FS_RA_WINDOWS 8u
/* One read-ahead stream (rapath.c): the engine's window and what it
 * belongs to.  [the mount lock] */
struct fs_ra_stream {
    struct fs_ra_state ra;
    ubj_ino_t ino;        /* the inode it was set up for (0: none yet) */
    uint32_t epoch;       /* fs->ra_epoch of ino then (S2) */
    int advice;           /* the UBJ_FADV_* it was set up for */
    /* adaptive (rapath.c): the used fraction of its read-ahead, measured
     * over its last FS_RA_WINDOWS windows beyond the calls' pages (a ring:
     * interleaved streams on one state keep theirs) */
    double p_used;        /* moving average, 1 at start */
    uint64_t w_start[FS_RA_WINDOWS], w_next[FS_RA_WINDOWS];
    uint32_t w_len[FS_RA_WINDOWS], w_used[FS_RA_WINDOWS];
    uint32_t w_head;      /* the ring's oldest */
    uint32_t w_off;       /* windows refused since the last probe */
    uint32_t w_folds;     /* adaptive: windows whose use was measured */
    uint64_t gap_prev, gap_cur;   /* adaptive: the gaps before its previous
                                     call and this one (raadapt.c) */
    double a_miss;        /* adaptive: a miss's per-request time, measured
                             (a moving average over n_miss requests) */
    uint32_t n_miss;
    /* adaptive: its bets on a small random read's neighbours (raadapt.c,
     * apart from its windows' use): pages read, pages of them a later jump
     * got, and the next bet's pages (0: 1); the bets' exposure (page-calls:
     * each call adds the pages bet and not yet got) and the stream's calls */
    uint32_t nb_iss, nb_used, nb_k;
    double nb_expo;
    uint32_t n_calls;
};
/* The device's read cost as the adaptive policy measures it: a least-
 * squares fit of T = a + b k over read-ahead requests of k blocks. */
struct fs_ra_fit {
    double n, sk, st, skk, skt, stt;
};
#define FS_RA_SLOTS 64u   /* default streams of the inode-number calls */

struct ubj_fs {
    pthread_mutex_t lock;          /* the mount lock */
    _Atomic uint64_t privs_killed; /* set-id bits cleared (ubj_privs_killed) */
    struct ubj_bdev *dev;          /* not owned */
    struct ubj_cache *cache;
    struct ubj_txn txn;
    struct ubj_super sb;           /* in-memory copy; [lock] */
    uint32_t csum_seed;            /* crc32c of the uuid */
    struct ubj_mode_record mrec;   /* what this read-write mount records of
                                      the mode's resources (ubj_txn_record);
                                      zero: nothing */
    bool errors_home;              /* [lock] the device error the mode's
                                      resources recorded (ubj_txn_error) is
                                      in the home superblock */
    bool errors_set;               /* [lock] the sticky `error` is recorded
                                      as ERRORS (meta.c: home and next
                                      commit) */
    void (*now)(void *ctx, struct timespec *ts);   /* cfg.now, or NULL */
    void *now_ctx;
    unsigned flags;                /* UBJ_MOUNT_* */
    uint32_t commit_interval_ms;
    enum fs_ra_policy ra_policy;   /* cfg.readahead: the read path (never
                                      changes after mount) */
    uint32_t ra_pages;             /* its largest window, pages (linux*) */
    struct fs_ra_stream ra_slots[FS_RA_SLOTS];  /* [lock] rapath.c */
    uint32_t ra_epoch[FS_RA_SLOTS];             /* [lock] rapath.c S2 */
    double ra_energy_j;            /* [lock] model energy of read-ahead
                                      requests (rapath.c) */
    struct fs_ra_fit ra_fit;       /* [lock] adaptive's cost fit (rapath.c) */
    uint64_t ra_gated;             /* [lock] adaptive: windows refused */
    int (*ra_future)(void *, ubj_ino_t, uint64_t);   /* cfg's (oracle) */
    void *ra_future_ctx;
    uint64_t balloc_hint;          /* next-fit cursor for blocks */
    uint64_t ialloc_hint;          /* next-fit cursor for inodes */
    struct fs_open *open[FS_OPEN_BUCKETS];
    struct ubj_file *files;        /* ofile.c's open files of this mount
                                      [its ofile_lock, not this lock] */
    uint64_t generation;           /* next inode generation */
    int error;                     /* first I/O error (sticky), 0 if none */
    char mount_error[256];         /* why mount came up read-only, or "" */
    int reclaim_error;             /* fs_reclaim found corruption (-EUCLEAN):
                                      super_mount_fs makes it the sticky error */
    /* background timer (super.c) */
    pthread_t timer;
    bool timer_running;
    bool stopping;                 /* [lock] */
    pthread_cond_t timer_cv;
    /* added by super.c/alloc.c (private to them) */
    struct fs_alloc *alloc;        /* alloc.c: per-bitmap-block free counts */
    /* device reads outside the lock (meta.c, fs_get_read) */
    uint32_t rd_pins;              /* [lock] buffers pinned by writers'
                                      pre-reads (fs_rd_pin), at most
                                      FS_RD_PIN_SHARE-th of the cache */
    uint64_t gen;                  /* [lock] bumped before every change to a
                                      block (fs_gen_bump): a reader that
                                      released the lock and finds it moved
                                      revalidates */
    uint64_t dev_flushes_base;     /* device flushes at mount (stats) */
};

/* fs_gen_bump -- a block is about to change (a write access, a forget):
 * readers that released the lock around a device read must revalidate. */
static inline void fs_gen_bump(struct ubj_fs *fs)
{
    fs->gen++;
}

/* ---- meta.c: reads outside the mount lock ---- */
/* One handle-less read operation whose cache misses may release the mount
 * lock (docs/DESIGN.md, "Device reads outside the mount lock"):
 * fs_rd_begin at its start (lock held), then its body in a loop
 * `do { ... } while (fs_rd_again(&rd, rc));` -- a miss that released the
 * lock while something changed (fs->gen moved) fails with FS_RESTART after
 * putting its buffer, the body unwinds as from -EIO, and fs_rd_again
 * starts it over; after FS_RD_TRIES tries the body runs with the lock held
 * throughout, so it finishes.  fs_rd_end before anything that writes
 * (an atime update).  The state is per thread (fs_rd_cur). */
struct fs_rd {
    struct ubj_fs *fs;
    uint64_t gen0;      /* fs->gen when this try began */
    unsigned tries;
    bool pinning;       /* a writer's pre-read: keep what it gets */
    unsigned npin;
    struct ubj_buf *pin[8];
};
#define FS_RESTART (-ERESTART)   /* internal: never returned to a caller */
#define FS_RD_TRIES 4u
#define FS_RD_PIN_SHARE 16u      /* pins of all pre-reads <= nbufs / 16 */
void fs_rd_begin(struct ubj_fs *fs, struct fs_rd *rd);
bool fs_rd_again(struct fs_rd *rd, int rc);
void fs_rd_end(struct fs_rd *rd);
/*
 * A writer's pre-read (issue 20 item 3: after its first write access an
 * operation must not wait for the device under the lock, so it reads
 * what it will change before its handle starts).  fs_rd_begin_pinned
 * instead of fs_rd_begin (lock held, no handle yet): each block its
 * body gets through fs_get_read is also pinned -- a second reference
 * kept in rd->pin[] (at most 8, and the mount's pins at most
 * nbufs / FS_RD_PIN_SHARE, so pins can never fill the cache that the
 * handles' credits account for) -- until fs_rd_unpin, which the
 * operation calls before fs_stop, its change done.  The pre-read is
 * only a prefetch: the change looks everything up again under the lock
 * (hits now), so a pin of a block that changed meaning meanwhile costs
 * a buffer, never correctness.  docs/DESIGN.md, "Writers read first".
 */
void fs_rd_begin_pinned(struct ubj_fs *fs, struct fs_rd *rd);
void fs_rd_unpin(struct fs_rd *rd);
/* fs_get_read -- ubj_cache_get of blkno (no flags) for the running
 * fs_rd operation, if any: releases the mount lock around a miss's read;
 * 0 and *out, FS_RESTART (nothing held), or the cache's error. */
int fs_get_read(struct ubj_fs *fs, uint64_t blkno, struct ubj_buf **out);
/* fs_get_read_run -- ubj_cache_get_run of [blkno, blkno + n) for the
 * running fs_rd operation, as fs_get_read: k >= 1 buffers in out[0..k),
 * FS_RESTART (nothing held), or the cache's error. */
int fs_get_read_run(struct ubj_fs *fs, uint64_t blkno, uint32_t n, struct ubj_buf **out);

/* fs_read_ahead -- ubj_cache_readahead of [blkno, blkno + n) with the
 * marker on `mark`, releasing the mount lock around the device reads for
 * the running fs_rd operation, as fs_get_read_run: blocks read, FS_RESTART
 * (the lock was released and fs->gen moved), or the cache's error. */
int fs_read_ahead(struct ubj_fs *fs, uint64_t blkno, uint32_t n, uint64_t mark);

/* ---- rapath.c: read-ahead in the read path ---- */
/* One read call's view for the engine's callbacks (the fields after s are
 * rapath.c's). */
struct fs_ra_call {
    struct ubj_fs *fs;
    struct fs_iref *r;
    struct fs_ra_stream *s;
    uint64_t first, last, npages;       /* the call's pages, the file's */
    uint64_t cur;                       /* the page being stepped */
    uint64_t m_lblk, m_len, m_pblk;     /* the last extent mapped */
    struct ubj_bdev *md;                /* the model, for energy; or NULL */
    int err;
    double ad_u, ad_a;                  /* adaptive: the use and the per-
                                           request term its gate priced */
    bool miss;                          /* reading the call's pages alone */
    bool jump;                          /* adaptive: a small random read of
                                           a stream with a past ... */
    bool bet;                           /* ... whose miss the engine reads
                                           as it is: the window offered
                                           beyond it bets on its neighbours */
};
void fs_ra_invalidate(struct ubj_fs *fs, ubj_ino_t ino);
void fs_ra_stream_advise(const struct ubj_fs *fs, struct fs_ra_stream *s, int advice);
struct fs_ra_stream *fs_ra_stream(struct ubj_fs *fs, ubj_ino_t ino,
                                  struct fs_ra_stream *own, int advice);
void fs_ra_call_begin(struct fs_ra_call *c, struct ubj_fs *fs, struct fs_iref *r,
                      struct fs_ra_stream *s, uint64_t off, uint64_t end);
int fs_ra_step(struct fs_ra_call *c, uint64_t page);
/* ---- raadapt.c: the adaptive policy's decisions ---- */
uint64_t fs_ra_now(struct ubj_bdev *md);
void fs_ra_fit_add(struct fs_ra_fit *f, double k, double t);
uint32_t fs_ra_adaptive_len(struct fs_ra_call *c, uint32_t x, bool ahead);
uint32_t fs_ra_adaptive_tail(struct fs_ra_call *c, uint64_t xs, uint32_t keep);
void fs_ra_window_note(struct fs_ra_call *c, uint64_t start, uint32_t n);
unsigned fs_ra_probe(struct fs_ra_call *c, uint64_t page);
uint64_t fs_ra_pblk(struct fs_ra_call *c, uint64_t page);
void fs_ra_adaptive_miss(struct fs_ra_call *c, uint32_t k, double t);
uint32_t fs_ra_adaptive_layout(struct fs_ra_call *c, uint64_t xs, uint32_t keep, bool cont);
void fs_ra_adaptive_step(struct fs_ra_call *c, uint64_t page);
uint32_t fs_ra_adaptive_neighbours(struct fs_ra_call *c);
uint32_t fs_ra_adaptive_nb_cut(struct fs_ra_call *c, uint64_t xs, uint32_t keep);
#if UBJ_TEST_HOOKS
/* fs_ra_test_break_nbu -- test builds: the broken variant `ra-nb-u`:
 * adaptive bets on a small random read's neighbours with the stream's
 * window use u, as sequential windows, instead of the neighbours' own
 * measured use. */
void fs_ra_test_break_nbu(bool nb_u);
/* fs_ra_test_break_nblag -- test builds: the broken variant `ra-nb-lag`:
 * a neighbour bet's use estimated as before the censoring-aware one,
 * (used + 1) / (pages bet + 4): a page bet and not yet got counts as
 * unused. */
void fs_ra_test_break_nblag(bool nb_lag);
/* fs_ra_test_break_nocost -- test builds: the broken variant `ra-no-cost`:
 * adaptive never asks the device for its declared cost and measures it
 * instead, exploring (as before the cost query existed). */
void fs_ra_test_break_nocost(bool no_cost);
/* fs_ra_test_break_nolayout -- test builds: the broken variant
 * `ra-no-layout`: adaptive prices a window as one request whatever the
 * file's layout (fs_ra_adaptive_layout keeps all). */
void fs_ra_test_break_nolayout(bool no_layout);
#endif
/* fs_pread_stream -- ubj_pread through stream `own` (NULL: the inode's
 * default) with the open file's advice (file.c). */
ssize_t fs_pread_stream(struct ubj_fs *fs, ubj_ino_t ino, struct fs_ra_stream *own,
                        int advice, void *buf, size_t size, off_t off);

/* ---- meta.c ---- */
void fs_seal(void *fs, uint64_t blkno, void *data);   /* cache seal callback */
/* fs_block_crc -- crc32c of a metadata block as if its crc field were 0. */
uint32_t fs_block_crc(uint32_t seed, const void *data);
/* fs_block_verify -- check a metadata block's header and crc.  0 or -EUCLEAN. */
int fs_block_verify(uint32_t seed, const void *data, uint32_t magic, uint64_t blkno);
void fs_block_seal(uint32_t seed, void *data, uint32_t magic, uint64_t blkno);
int fs_meta_read(struct ubj_fs *fs, uint64_t blkno, uint32_t magic,
                 struct ubj_buf **out);
/* fs_meta_read_fresh -- fs_meta_read; *fresh = the block was verified by
 * this call (just read from the device or adopted from NVM), so callers
 * may run their own structural checks only then (the cache holds nothing
 * but verified blocks and the fs's own changes). */
int fs_meta_read_fresh(struct ubj_fs *fs, uint64_t blkno, uint32_t magic,
                       struct ubj_buf **out, bool *fresh);
/* get an existing metadata block (read and verified as fs_meta_read) for
 * modification in handle h: 0 and *out, or fs_meta_read's / write
 * access's negative errno. */
int fs_meta_write_begin(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blkno,
                        uint32_t magic, struct ubj_buf **out);
/* get a new tree node of inode `owner` at blkno for modification: not
 * read; it comes back zeroed with its header set to `magic`, and the
 * NODE_INIT event (ino `owner`, a = magic) covering it is sent.  0 and
 * *out, or a negative errno (-ENOMEM: no buffer). */
int fs_meta_new(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blkno,
                uint32_t magic, ubj_ino_t owner, struct ubj_buf **out);
int fs_meta_dirty(struct ubj_fs *fs, struct ubj_handle *h, struct ubj_buf *b);
/* fs_super_dirty -- copy fs->sb into block 0 and dirty it; `ev` (type,
 * ino, a: its range from `field`, `flen` bytes of struct ubj_super) is
 * the event describing what the caller changed; ev NULL: nothing but the
 * summary fields (SUPER_SUMMARY over free counts and mount state). */
int fs_super_dirty(struct ubj_fs *fs, struct ubj_handle *h);
int fs_super_dirty_ev(struct ubj_fs *fs, struct ubj_handle *h,
                      const struct ubj_event *ev, size_t field, size_t flen);
/* fs_event -- semantic event ev (src/txn/mode.h) for the `len` bytes at p
 * in b->data: fills ev.blkno, off, len and calls ubj_txn_event. */
int fs_event(struct ubj_handle *h, const struct ubj_buf *b, const void *p,
             size_t len, struct ubj_event ev);
/* fs_begin/fs_end: lock + error check / unlock for public entry points. */
int fs_start(struct ubj_fs *fs, uint32_t credits, struct ubj_handle **h);
int fs_stop(struct ubj_fs *fs, struct ubj_handle *h, int rc);
/* fs_handle_start -- with the lock held: refuse a read-only or failed
 * mount (-EROFS), else start a handle of `credits` (capped at UINT32_MAX).
 * On failure *h is NULL and the lock still held. */
int fs_handle_start(struct ubj_fs *fs, uint64_t credits, struct ubj_handle **h);
/*
 * fs_start_read_first -- fs_start for a writer that reads first (issue
 * 20 item 3; fs_rd_begin_pinned above): take the lock, run pre(fs, arg)
 * as a pinned pre-read (its misses outside the lock, FS_RESTART starting
 * it over), then start the handle (credits 0: none, the lock alone).  A
 * pre-read ending in -EIO, -EUCLEAN, -ENOMEM or -ENOBUFS fails the
 * operation with it (a device fault surfaces once, where the operation
 * would have met it); any other result (a name not there) is the
 * operation's to meet and ignored.  On failure nothing is held.  The operation ends with
 * fs_stop_read_first, which drops the pins.
 */
int fs_start_read_first(struct ubj_fs *fs, uint32_t credits, struct ubj_handle **h,
                        struct fs_rd *rd, int (*pre)(struct ubj_fs *fs, void *arg),
                        void *arg);
int fs_stop_read_first(struct ubj_fs *fs, struct ubj_handle *h, int rc,
                       struct fs_rd *rd);
/* fs_errors_home -- the mode recorded a device error: ERRORS straight
 * into the home superblock (once; keeps the caller's message). */
void fs_errors_home(struct ubj_fs *fs);

/* ---- super.c ---- */
/* fs_mode_image -- the image whose superblock is sb on dev, as a mode's
 * verbs see it (src/txn/mode.h); rdonly: the mount is read-only. */
void fs_mode_image(const struct ubj_super *sb, struct ubj_bdev *dev, bool rdonly,
                   struct ubj_mode_image *img);

/* ---- scrub.c ---- */
/* fs_scrub -- UBJ_MOUNT_SCRUB: fsck's passes (check.c, read-only) over the
 * image as this mount sees it (cached blocks first).  0 if clean;
 * -EUCLEAN (fs->error set; the message gives fsck's first problem and the
 * count) on any finding, and when the check could not run. */
int fs_scrub(struct ubj_fs *fs);

/* ---- reclaim.c ---- */
/* fs_reclaim -- in ubj_mount, before the mode mounts: an unclean image of
 * an integrity-only mode (ubj_config.unclean) -- leaks reclaimed through
 * fsck's full reachability pass, or the read-write mount refused.  0
 * (*reread: the superblock on the device changed), -EUCLEAN (refused, or
 * the check could not run), -EIO (the repair failed), -EINVAL (unknown
 * policy).  Corruption found sets fs->reclaim_error and fs->mount_error. */
int fs_reclaim(struct ubj_fs *fs, const struct ubj_config *cfg, bool *reread);
#if UBJ_TEST_HOOKS
/* fs_reclaim_test_break -- test builds: skip the pass (trust the bitmaps). */
void fs_reclaim_test_break(bool on);
#endif

/* ---- alloc.c ---- */
/* allocate up to `want` contiguous blocks, preferably at/after `goal`.
 * 0 and *start,*got (1..want); -ENOSPC. */
int fs_balloc(struct ubj_fs *fs, struct ubj_handle *h, uint64_t goal,
              uint32_t want, uint64_t *start, uint32_t *got);
int fs_bfree(struct ubj_fs *fs, struct ubj_handle *h, uint64_t start, uint64_t count);
int fs_ialloc(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t hint, ubj_ino_t *out);
/* fs_ialloc_peek -- the inode fs_ialloc(hint) would take now, changing
 * nothing (reading the bitmap: a pre-read's guess; another operation
 * may take it first).  0 and *out, -ENOSPC, FS_RESTART, -errno. */
int fs_ialloc_peek(struct ubj_fs *fs, ubj_ino_t hint, ubj_ino_t *out);
int fs_ifree(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino);
/* fs_ialloc_test -- inode `ino` (< ninodes) in the inode bitmap: 1 marked
 * in use, 0 free, or -EIO/-EUCLEAN. */
int fs_ialloc_test(struct ubj_fs *fs, ubj_ino_t ino);
/* fs_alloc_init / fs_alloc_fini -- alloc.c's in-memory state (mount/unmount). */
/* fs_alloc_scan -- at mount: read every bitmap block, fill the per-block
 * counts and check the maps (every metadata bit, inode 0 and the bits past
 * the end set).  With `exact` (a cleanly unmounted image) the free bits
 * must equal sb.free_blocks/free_inodes; without (after a crash: counts
 * are written lazily) they replace them.  0, -EUCLEAN (a bad block, or a
 * map that lies: fs->error set, message), -EIO. */
int fs_alloc_scan(struct ubj_fs *fs, bool exact);
int fs_alloc_init(struct ubj_fs *fs);
void fs_alloc_fini(struct ubj_fs *fs);

/* ---- inode.c ---- */
struct fs_iref {
    ubj_ino_t ino;
    struct ubj_buf *b;       /* referenced buffer of the inode block */
    struct ubj_inode *ip;    /* into b->data */
};
/* fs_iget -- reference an in-use inode.  -ENOENT if free or out of range. */
int fs_iget(struct ubj_fs *fs, ubj_ino_t ino, struct fs_iref *r);
/* fs_iget_raw -- reference an inode slot whether in use or not. */
int fs_iget_raw(struct ubj_fs *fs, ubj_ino_t ino, struct fs_iref *r);
/* fs_iwrite -- obtain write access (may move r->b/r->ip; call before
 * every batch of changes); fs_idirty -- after them. */
int fs_iwrite(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r);
int fs_idirty(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r);
void fs_iput(struct ubj_fs *fs, struct fs_iref *r);
/* fs_ievent -- semantic event `type` (a) for the `len` bytes at `field`
 * of r's inode, between fs_iwrite and fs_idirty. */
int fs_ievent(struct ubj_handle *h, struct fs_iref *r, enum ubj_event_type type,
              const void *field, size_t len, uint64_t a);
void fs_inode_to_stat(const struct ubj_inode *ip, ubj_ino_t ino, struct ubj_stat *st);
/* fs_istat -- fs_iget + fs_inode_to_stat + fs_iput: 0 and *st, or
 * fs_iget's error (FS_RESTART too). */
int fs_istat(struct ubj_fs *fs, ubj_ino_t ino, struct ubj_stat *st);
/* fs_inode_preread_new -- pre-read (fs_start_read_first) the inode bitmap
 * and table block fs_inode_new(parent_hint) would use now: 0, FS_RESTART,
 * -errno. */
int fs_inode_preread_new(struct ubj_fs *fs, ubj_ino_t parent_hint);
/* fs_inode_new -- allocate and initialise an inode (mode, cred, times now);
 * the caller links it somewhere.  Returns a write-accessed iref. */
int fs_inode_new(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t parent_hint,
                 uint32_t mode, const struct ubj_cred *cred, struct fs_iref *r);
/* fs_inode_drop_link -- nlink--, ctime; at 0: free now if not open,
 * otherwise put on the orphan list.  */
int fs_inode_drop_link(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r);

/* fs_inode_release_final -- free every block of the inode and the inode. */
int fs_inode_destroy(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino);
/* open table */
void fs_open_inc(struct ubj_fs *fs, ubj_ino_t ino);
int fs_open_dec(struct ubj_fs *fs, ubj_ino_t ino);   /* -> remaining count, or -EINVAL */
uint32_t fs_open_count(struct ubj_fs *fs, ubj_ino_t ino);
/* orphan list (superblock head, inode orphan_next) */
int fs_orphan_add(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r);
int fs_orphan_del(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino);
/* fs_orphan_cleanup -- at mount and unmount: verify the list, then free
 * every orphan.  0 (also at once after an error), -EUCLEAN (the list lies:
 * nothing freed, fs->error set, message), -EIO. */
int fs_orphan_cleanup(struct ubj_fs *fs);
/* timestamps */
void fs_touch(struct ubj_fs *fs, struct ubj_inode *ip, bool atime, bool mtime,
              bool ctime);
/* fs_now -- the mount's clock for timestamps (cfg.now, else CLOCK_REALTIME). */
void fs_now(const struct ubj_fs *fs, struct timespec *ts);

/* ---- extent.c ---- */
/* fs_ext_map -- map logical block lblk of the file: *pblk (0 = hole or
 * unwritten) and *len = blocks from lblk with the same status contiguous
 * (at least 1, at most max). */
int fs_ext_map(struct ubj_fs *fs, struct fs_iref *r, uint32_t lblk, uint32_t max,
               uint64_t *pblk, uint32_t *len);
/* fs_ext_alloc -- ensure [lblk, lblk+want) starts mapped; returns the first
 * run: *pblk and *got (1..want) blocks, *fresh = newly allocated. */
int fs_ext_alloc(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                 uint32_t lblk, uint32_t want, uint64_t *pblk, uint32_t *got,
                 bool *fresh);
/* fs_ext_truncate -- free every block at or after lblk. */
int fs_ext_truncate(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                    uint32_t lblk);
/* fs_ext_init -- empty extent root in r->ip (sets UBJ_IFL_EXTTREE). */
void fs_ext_init(struct ubj_inode *ip);

/* ---- file.c ---- */
int fs_truncate(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                uint64_t size);

/* ---- ofile.c ---- */
/* fs_files_close_all -- ubj_unmount: free every struct ubj_file still open
 * on fs (a later ubj_file_close of one is -EBADF); their open references
 * go with the open table. */
void fs_files_close_all(struct ubj_fs *fs);
#if UBJ_TEST_HOOKS
/* Deliberately broken variants of ofile.c, for tests/unit/ofile.c. */
enum fs_ofile_break {
    FS_OFILE_BREAK_NONE = 0,
    FS_OFILE_BREAK_DONTNEED_NOOP = 1,     /* DONTNEED drops nothing */
    FS_OFILE_BREAK_DONTNEED_PARTIAL = 2,  /* ... and partial blocks too */
    FS_OFILE_BREAK_WILLNEED_NOOP = 3,     /* WILLNEED reads nothing */
    FS_OFILE_BREAK_ADVICE_LOST = 4,       /* NORMAL/RANDOM/SEQUENTIAL not kept */
    FS_OFILE_BREAK_CLOSE_KEEPS_REF = 5,   /* close leaks the open reference */
};
void fs_ofile_test_break(enum fs_ofile_break which);
/* fs_file_test_break -- the broken variant `no-revalidate` of meta.c's
 * fs_get_read: a read operation that released the mount lock in a device
 * read keeps what it read even if something changed meanwhile (file.c F4
 * broken, and its rule for metadata). */
void fs_file_test_break(bool no_revalidate);
/* fs_preread_test_break -- the broken variant `no-preread`:
 * fs_start_read_first skips the pre-read, so a writer's misses wait for
 * the device under the lock (as before issue 20 item 3's rule). */
void fs_preread_test_break(bool no_preread);
#endif

/* ---- dir.c ---- */
int fs_dir_init(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir);
int fs_dir_lookup(struct ubj_fs *fs, struct fs_iref *dir, const char *name,
                  size_t len, ubj_ino_t *ino, unsigned *type);
int fs_dir_add(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
               const char *name, size_t len, ubj_ino_t ino, unsigned type);
int fs_dir_remove(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
                  const char *name, size_t len);
/* point an existing name at another inode (rename over a target). */
int fs_dir_set(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir,
               const char *name, size_t len, ubj_ino_t ino, unsigned type);
int fs_dir_iterate(struct ubj_fs *fs, struct fs_iref *dir, uint64_t cookie,
                   ubj_filldir_t fill, void *ctx);
/* free every node of an empty directory's tree */
int fs_dir_destroy(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *dir);

/* fs_remove_privs (file.c) -- clear S_ISUID, and S_ISGID when
 * group-executable (a write, fallocate or chown: should_remove_suid());
 * counts it in fs->privs_killed when a bit was set */
void fs_remove_privs(struct ubj_fs *fs, struct ubj_inode *ip);

/* ---- xattr.c ---- */
/* fs_xattr_free -- free the inode's xattr block, if any (inode destroy). */
int fs_xattr_free(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r);
/* fs_xattr_killpriv -- remove security.capability if the inode has it
 * (a write, truncate or chown: Linux's cap_inode_killpriv()); 0 when it
 * has none.  Dirties at most FS_XATTR_CREDITS blocks. */
int fs_xattr_killpriv(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r);
#define FS_XATTR_CREDITS 6u   /* the node, inode, bitmap block, superblock */

/* ---- extent.c: preallocation, for falloc.c ---- */
/* fs_ext_prealloc -- if lblk lies in a hole, allocate up to `want` blocks
 * there as one unwritten extent (reads as zeros); a mapped lblk is left
 * alone.  *got = blocks from lblk now mapped the same way (1..want). */
int fs_ext_prealloc(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                    uint32_t lblk, uint32_t want, uint32_t *got);

#endif /* UBJ_FS_FS_H */
