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
 * and fsync/sync call ubj_txn_commit(t, UBJ_COMMIT_WAIT).  Between
 * write_access and dirty the file system also says what it changed, one
 * semantic event per change (ubj_txn_event; "Semantic events" below).  A mode is one
 * `const struct ubj_mode_ops`; src/txn/txn.c dispatches to it and is the
 * one place for tracing.  Modes: none (src/txn/none.c); later ubj,
 * ordered, journal, writeback.
 *
 * Locking: the file system calls every function here with its mount lock
 * held; a mode's own background work (none: the write-back timer) takes
 * the mount lock too.  Operations may overlap all the same: the handle
 * layer (src/txn/handle.h) waits on the mount lock (releasing it), and an
 * operation may release it inside its handle (a test's parked operation;
 * later, device reads); the handle layer's barrier makes every commit
 * wait for the open handles, so a mode still never commits half of one.  The cache
 * hooks a mode registers are different: the cache calls them from
 * whichever thread writes or needs room, maybe without the mount lock
 * (src/cache/cache.h): they never take it.
 */
#ifndef UBJ_TXN_MODE_H
#define UBJ_TXN_MODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "cache/cache.h"
#include "txn/handle.h"
#include "ubjfs/ubjfs.h"

struct ubj_txn;      /* per-mount mode state */
struct ubj_handle;   /* one file-system operation */
struct ubj_mode_ops;
struct ubj_evcheck;  /* the event checker (src/txn/evcheck.c) */

/*
 * ---- Semantic events (issue 16; docs/DESIGN.md, "Semantic events") ----
 *
 * The block-level verbs say *that* a block changed; an event says *what*
 * changed and where: one tagged struct per change, passed through one
 * dispatch function, ubj_txn_event.  One function with a tagged struct
 * rather than one function per event (FreeBSD's softdep_setup_*):
 * txn.c stays one forwarding line and one tracing point, the checker
 * (UBJ_TEST_HOOKS) sees every event through the same door, a mode that
 * handles a few types switches on ev->type and ignores the rest, and a
 * new event is one line of UBJ_EVENTS plus its contract here -- no ops
 * table version bump.
 *
 * Common contract, every event:
 *  - Who: src/fs/, at the site that makes the change, after
 *    ubj_txn_write_access on ev->blkno and before the ubj_txn_dirty that
 *    publishes it, within the same handle h.  Under the mount lock
 *    (fs->lock), like every call here: a mode sees events of one
 *    operation at a time, in the order the changes were made.
 *  - What: [off, off+len) is the exact byte range of block ev->blkno the
 *    change wrote (never the 16-byte block header: its magic, number and
 *    crc are the cache's seal).  The bytes hold the new value when the
 *    event is called; the old value is what the block held at
 *    write_access (a mode that needs it keeps its own copy there).
 *  - Guarantee: every byte of a metadata block changed within a handle
 *    lies in the range of one of its events (the checker proves it in
 *    test builds).  Data blocks (UBJ_KIND_DATA) have no events; the
 *    metadata pointing at them does (EXT_MAP).
 *  - Fits the cache write hooks (struct ubj_cache_hooks in
 *    src/cache/cache.h, registered by the mode's mount; docs/DESIGN.md,
 *    "Cache write hooks"): an event names the block and bytes a mode
 *    rolls back in its write_begin hook (the dependency's "undo" range,
 *    its old bytes kept from write_access) and releases in write_done;
 *    ranges are within one block, so a rollback copies bytes into the
 *    stable snapshot that is written, never into the live buffer.  Mode
 *    trial (UBJ_TRIAL_HOOKS=1) does it for R1 and R2 below.
 *
 * Ordering rules of seed 003 (Ganger & Patt) a mode can enforce from them:
 *  R1 initialise before pointing: a new inode (INODE_INIT) or node
 *     (NODE_INIT) reaches the disk before the pointer to it (DIRENT_ADD,
 *     EXT_MAP/EXT_SPLIT/EXT_ROOT_OUT, DIR_SPLIT, XATTR with a new block).
 *  R2 nullify before reuse: a removed pointer (DIRENT_REMOVE, EXT_UNMAP,
 *     INODE_CLEAR) reaches the disk before the freed resource is reused
 *     (BLOCK_FREE, INODE_FREE clear the bitmap only after it, or the mode
 *     delays the bitmap write).
 *  R3 new pointer before the old one is removed: DIRENT_RENAME's new name
 *     (and LINK_COUNT's increase) reach the disk before the old name's
 *     DIRENT_REMOVE; a moved root (EXT_ROOT_OUT/IN) or merged node is
 *     written before its old place is freed.
 *
 * The table: X(type, name, block it changes, a, b) -- name is what
 * UBJ_TEST_DROP_EVENT takes and messages print; a and b as listed.
 */
#define UBJ_EVENTS(X)                                                          \
    /* block bitmap bits [a, a+b) of this bitmap block set (fs_balloc):     \
       the allocation itself; what it is for follows (EXT_MAP, NODE_INIT).  \
       R2: must not reach the disk before the last pointer to an earlier    \
       owner was nullified (the free's EXT_UNMAP). */                        \
    X(BLOCK_ALLOC, "block_alloc")                                              \
    /* block bitmap bits [a, a+b) cleared (fs_bfree), after every pointer   \
       to the blocks was removed in this handle (R2). */                     \
    X(BLOCK_FREE, "block_free")                                                \
    /* inode bitmap bit a set (fs_ialloc), before INODE_INIT. */             \
    X(INODE_ALLOC, "inode_alloc")                                              \
    /* inode bitmap bit a cleared (fs_ifree), after INODE_CLEAR (R2). */     \
    X(INODE_FREE, "inode_free")                                                \
    /* inode ev->ino's 256-byte slot written whole (fs_inode_new): R1,      \
       before the DIRENT_ADD naming it. */                                   \
    X(INODE_INIT, "inode_init")                                                \
    /* inode slot zeroed (fs_inode_destroy): the inode's nullification,     \
       before its INODE_FREE and its blocks' BLOCK_FREE (R2). */             \
    X(INODE_CLEAR, "inode_clear")                                              \
    /* attributes of inode ev->ino (mode, uid, gid: bytes 0-11; size,      \
       blocks, times, flags, generation, rdev: 16-95; parent: 112-119):     \
       no ordering of its own (fs_idirty, callers of setattr/touch). */      \
    X(INODE_ATTR, "inode_attr")                                                \
    /* inode ev->ino's nlink (bytes 12-15 of its slot) is now a: an        \
       increase before the new name (R3), a decrease after the name's       \
       DIRENT_REMOVE (R2; softdep_change_linkcnt). */                        \
    X(LINK_COUNT, "link_count")                                                \
    /* block b allocated for (inode ev->ino, logical block a): an extent    \
       record in the inode's root or a leaf written (new, or grown); the    \
       data block is initialised before this pointer (R1, ordered data;     \
       softdep_setup_allocdirect). */                                        \
    X(EXT_MAP, "ext_map")                                                      \
    /* extent records of inode ev->ino from logical block a removed or     \
       cut (truncate): before the blocks' BLOCK_FREE (R2). */                \
    X(EXT_UNMAP, "ext_unmap")                                                  \
    /* a tree node (extent, directory or xattr block of inode ev->ino,     \
       magic a) written whole: R1, before any pointer to it. */              \
    X(NODE_INIT, "node_init")                                                  \
    /* extent node split: the index record for new node b (logical a)      \
       written in its parent (or the moved half removed from the old node): \
       after the new node's NODE_INIT (R1), before the old copy goes (R3). */\
    X(EXT_SPLIT, "ext_split")                                                  \
    /* the inode's extent root moved out into node b (depth grows): the    \
       root's bytes in the inode now index b; R1 (b initialised first). */   \
    X(EXT_ROOT_OUT, "ext_root_out")                                            \
    /* node b's entries moved back into the inode's root (depth shrinks):  \
       R3 (the root written before b is freed). */                           \
    X(EXT_ROOT_IN, "ext_root_in")                                              \
    /* name ev->name -> inode a (type b, DT_*) added to a directory leaf  \
       (also when the insert split the leaf: over the record where it went):\
       after the inode's INODE_INIT / LINK_COUNT increase (R1;              \
       softdep_setup_directory_add). */                                      \
    X(DIRENT_ADD, "dirent_add")                                                \
    /* name ev->name of inode a (type b) removed: from a leaf (records     \
       after it moved down), or, when it was the leaf's last, on the block  \
       whose change unlinks the freed leaf (the ancestor losing its index   \
       record, beside that DIR_MERGE, or the root made an empty leaf):      \
       before the inode's LINK_COUNT decrease (R2; softdep_setup_remove). */\
    X(DIRENT_REMOVE, "dirent_remove")                                          \
    /* existing name ev->name re-pointed at inode a (rename over a         \
       target): the new pointer before the old target's LINK_COUNT drop     \
       (R3; softdep_setup_directory_change). */                              \
    X(DIRENT_RENAME, "dirent_rename")                                          \
    /* the directory root in inode ev->ino (bytes 128-159: root, depth,    \
       entries, nodes) changed: a new root (R1: after its NODE_INIT) or    \
       the counts. */                                                        \
    X(DIR_ROOT, "dir_root")                                                    \
    /* directory B+tree node split, new node b whose lowest key is a: on   \
       the old node, its upper half removed (moved into b, which NODE_INIT  \
       covers: R1, then R3: after the parent points at b); on the parent,   \
       the index record (a, b) inserted.  The name the split inserted has   \
       its own DIRENT_ADD. */                                                \
    X(DIR_SPLIT, "dir_split")                                                  \
    /* directory node removal (an emptied non-root node: src/fs/dir.c      \
       never moves records between siblings): on the parent, the index      \
       record (key a, child node b) removed, before b is freed (R2, R3). */ \
    X(DIR_MERGE, "dir_merge")                                                  \
    /* inode ev->ino put on the orphan list: its orphan_next (a: next) or  \
       the superblock's orphan_head; before the last name goes (R3). */      \
    X(ORPHAN_LINK, "orphan_link")                                              \
    /* inode ev->ino taken off the orphan list (head or predecessor's      \
       orphan_next re-pointed), before its INODE_CLEAR/INODE_FREE (R2). */   \
    X(ORPHAN_UNLINK, "orphan_unlink")                                          \
    /* inode ev->ino's xattr block records changed, or the inode's         \
       xattr_blk (bytes 96-103) set / cleared (R1 for a new block, R2 for  \
       a freed one). */                                                      \
    X(XATTR, "xattr")                                                          \
    /* superblock summary fields: free_blocks, free_inodes (152-167);      \
       mount state and times (184-279).  No ordering (counts are rebuilt   \
       at an unclean mount). */                                              \
    X(SUPER_SUMMARY, "super_summary")

enum ubj_event_type {
#define UBJ_EVENT_ENUM(type, name) UBJ_EV_##type,
    UBJ_EVENTS(UBJ_EVENT_ENUM)
#undef UBJ_EVENT_ENUM
    UBJ_EV_COUNT
};

/* One change the file system made (contracts above). */
struct ubj_event {
    enum ubj_event_type type;
    uint64_t blkno;          /* the block changed */
    uint32_t off, len;       /* the byte range written in it */
    uint64_t ino;            /* the inode concerned (0: none) */
    uint64_t a, b;           /* per type (UBJ_EVENTS) */
    const char *name;        /* DIRENT_*: the name (not NUL-terminated) */
    uint32_t namelen;
};

/* ubj_event_name -- an event type's name ("dirent_add"), or "?". */
const char *ubj_event_name(enum ubj_event_type type);

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

/* 2: `reclaim` left the table -- a mode registers it with the cache, beside
 * its write hooks (ubj_cache_set_hooks in its mount; "Cache write hooks"
 * below).  3: the handle layer (src/txn/handle.c) owns the handles: start
 * gets the handle about to open, stop only the last level of one.  4: tick
 * gets the caller's flags (UBJ_TICK_BACKGROUND: nobody waits for its I/O;
 * this replaced the models' per-thread asynchronous bracket) */
#define UBJ_MODE_OPS_VERSION 4u

/* ubj_tick_crit -- the class of a tick's device I/O (ubjfs.h's
 * UBJ_TICK_* flags): time-noncritical when nobody waits
 * (UBJ_TICK_BACKGROUND), else time-critical.  The modes pass it down to
 * ubj_bdev_write_crit / ubj_bdev_flush_crit and, as ubj_crit_wb, to the
 * cache's write calls. */
static inline enum ubj_req_crit ubj_tick_crit(unsigned flags)
{
    return (flags & UBJ_TICK_BACKGROUND) ? UBJ_CRIT_NONCRITICAL : UBJ_CRIT_CRITICAL;
}

/* ubj_crit_wb -- the cache's write-back flag for I/O of class crit:
 * UBJ_WB_BACKGROUND below time-critical, else 0. */
static inline unsigned ubj_crit_wb(enum ubj_req_crit crit)
{
    return crit == UBJ_CRIT_CRITICAL ? 0 : UBJ_WB_BACKGROUND;
}

struct ubj_mode_ops {
    uint32_t version;     /* UBJ_MODE_OPS_VERSION */
    const char *name;     /* "none", ... */
    /* mount: set up state in t->priv, register the mode's cache hooks
     * (ubj_cache_set_hooks(t->cache, .., t): at least its reclaim) once
     * that state exists; run recovery.  0 or -errno (txn.c clears the
     * hooks after a failed mount and after unmount). */
    int (*mount)(struct ubj_txn *t);
    /* unmount: final commit, write everything home, flush.  0 or -EIO. */
    int (*unmount)(struct ubj_txn *t);
    /* start: handle h (h->t, h->credits set) is about to open, the first
     * level of an operation of the calling thread; no handle of that
     * thread is open, so this is where a mode's policy may commit
     * (through the barrier, ubj_txn_lock_updates: it waits for other
     * threads' handles) and checkpoint.  0, or -errno: h does not open. */
    int (*start)(struct ubj_handle *h);
    /* the caller is about to modify *b; may substitute another buffer
     * (UBJ: a copy of a FROZEN one).  ubj_txn_write_access then waits
     * until no write of the buffer returned is inside its stable-buffer
     * window (ubj_cache_wait_stable, src/cache/cache.h): a mode need not. */
    int (*write_access)(struct ubj_handle *h, struct ubj_buf **b);
    /* the caller modified b (kind: data or metadata). */
    int (*dirty)(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind);
    /* block `blkno` was freed within h (revoke). */
    int (*forget)(struct ubj_handle *h, uint64_t blkno);
    /* end the handle (its last level; the layer then uncounts it);
     * returns 0 or an error the operation must report. */
    int (*stop)(struct ubj_handle *h);
    /* commit (UBJ_COMMIT_* flags). */
    int (*commit)(struct ubj_txn *t, unsigned flags);
    /* the periodic timer fired (every commit_interval_ms); flags:
     * UBJ_TICK_BACKGROUND (ubjfs.h) when nobody waits for it (the mount's
     * timer thread, a harness's background tick): its device I/O goes at
     * class ubj_tick_crit(flags), and the caller is charged no device
     * time on a timed model. */
    int (*tick)(struct ubj_txn *t, unsigned flags);
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
    /*
     * event: optional (NULL: the mode is block-level and ignores events;
     * none, ubj and the journal modes).  The file system described one
     * change it made to block ev->blkno of h (see "Semantic events"
     * below); called by ubj_txn_event only, after write_access and before
     * the dirty() of that change.  0 or -errno (the operation fails).
     */
    int (*event)(struct ubj_handle *h, const struct ubj_event *ev);
    /*
     * stats: optional (NULL: t->stats is always current).  Bring t->stats
     * up to date with counters that move outside commits (UBJ: a device
     * read into the region charges the NVM model, cache.h's fill hook).
     * Called by ubj_txn_stats only, with the mount lock held.
     */
    void (*stats)(struct ubj_txn *t);
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
    struct ubj_evcheck *check;    /* the event checker (UBJ_TEST_HOOKS,
                                     UBJ_CHECK_EVENTS=1), or NULL */
    pthread_mutex_t *lock;        /* the mount lock, held around every call
                                     here; a mode's tick may release it
                                     around device I/O (UBJ's checkpoint),
                                     the handle layer while it waits.
                                     Set before ubj_txn_mount (kept by it);
                                     NULL: never released */
    struct ubj_handles hs;        /* the handle layer (src/txn/handle.c) */
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
int ubj_txn_tick(struct ubj_txn *t, unsigned flags);
/* ubj_txn_stats -- t->stats, brought up to date by the mode (ops->stats);
 * the mount lock held.  Returns &t->stats. */
const struct ubj_txn_stats *ubj_txn_stats(struct ubj_txn *t);
/* ubj_txn_reclaim -- the reclaim hook the mode registered with the cache,
 * called now (ubj_cache_reclaim) and traced: what the cache calls when it
 * has no room; for tests that want a reclaim at a chosen point.  The file
 * system never calls it: the cache calls the mode directly. */
int ubj_txn_reclaim(struct ubj_txn *t);
/* ubj_txn_event -- the file system made change *ev within h (the
 * contracts above): to the checker (test builds, UBJ_CHECK_EVENTS=1),
 * then to the mode's event op if it has one.  0 or -errno. */
int ubj_txn_event(struct ubj_handle *h, const struct ubj_event *ev);

extern const struct ubj_mode_ops ubj_mode_none;
extern const struct ubj_mode_ops ubj_mode_ubj;
/* the journal modes (src/txn/journal.c, docs/JOURNAL.md) */
extern const struct ubj_mode_ops ubj_mode_ordered, ubj_mode_journal,
    ubj_mode_writeback;
/* the conventional scheme of seed 003 (src/txn/sync.c, docs/SYNC.md) */
extern const struct ubj_mode_ops ubj_mode_sync;

#endif /* UBJ_TXN_MODE_H */
