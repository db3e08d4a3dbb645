/*
 * ubj.h -- internals of consistency mode `ubj` shared by src/txn/ubj.c
 * (the mode), src/txn/ubj_recovery.c (the verbs, recovery scan, the
 * recovered view) and the tests: the persistent commit tag of a
 * descriptor, the recovery scan, and test-only hooks (the broken variants
 * and callbacks only in a test build: UBJ_TEST_HOOKS).
 *
 * The commit tag (struct ubj_bufdesc.ptag) is the one word of a
 * descriptor that recovery trusts:
 *     ptag = txid << 8 | UBJM_PTAG_FROZEN [| UBJM_PTAG_META]
 * stored with one atomic 8-byte store (ubj_nvm_store64) when commit
 * `txid` freezes the buffer, and set back to 0 (persisted) before the
 * buffer leaves the frozen states.  A tag is *committed* when its txid is
 * at most the region's commit record.  docs/UBJ.md gives the argument.
 */
#ifndef UBJ_TXN_UBJ_H
#define UBJ_TXN_UBJ_H

#include <stdint.h>
#include "cache/cache.h"
#include "txn/mode.h"
#include "ubjfs/nvm.h"

#define UBJM_PTAG_FROZEN 0x1u
#define UBJM_PTAG_META   0x2u
#define UBJM_PTAG_KNOWN  (UBJM_PTAG_FROZEN | UBJM_PTAG_META)
#define UBJM_PTAG_SHIFT  8u

/* ubjm_ptag -- the tag of a buffer frozen by commit txid. */
static inline uint64_t ubjm_ptag(uint64_t txid, uint32_t kind)
{
    return txid << UBJM_PTAG_SHIFT | UBJM_PTAG_FROZEN |
           (kind == UBJ_KIND_META ? UBJM_PTAG_META : 0u);
}

/* ubjm_ptag_txid -- the transaction id of a tag. */
static inline uint64_t ubjm_ptag_txid(uint64_t tag)
{
    return tag >> UBJM_PTAG_SHIFT;
}

/*
 * The result of a recovery scan: `keep` lists, for every block, the
 * descriptor of its newest committed version; `drop` lists every other
 * descriptor whose tag is not 0 (uncommitted, superseded, or left over),
 * whose tag recovery must clear before the buffer is reused.
 */
struct ubjm_scan {
    uint32_t *keep, nkeep;
    uint32_t *drop, ndrop;
};

/*
 * ubjm_recovery_scan -- apply the recovery rules to the descriptor array
 * (read only): a tag is committed if FROZEN with 0 < txid <= committed;
 * among a block's committed versions the highest txid wins.  Returns 0
 * and *out (free with ubjm_scan_free); -EUCLEAN (a committed descriptor
 * names a block >= dev_nblocks, carries unknown tag bits, or two share a
 * block and a txid: a corrupt region); -ENOMEM.
 */
int ubjm_recovery_scan(const struct ubj_bufdesc *desc, uint32_t nbufs,
                      uint64_t committed, uint64_t dev_nblocks,
                      struct ubjm_scan *out);
void ubjm_scan_free(struct ubjm_scan *s);

/* ---- attaching the region, what it holds (ubj_recovery.c) -------------- */
/* (Pairing checks: include/ubjfs/nvm.h, ubj_nvm_pair_check.) */

#define UBJM_NVMA_FORMAT 0x1u   /* (re)initialise the region (--format-nvm) */
#define UBJM_NVMA_RDONLY 0x2u   /* open read-only (fsck) */
#define UBJM_NVMA_PRIVATE 0x4u  /* UBJ_NVM_OPEN_PRIVATE (a read-only mount) */

/*
 * ubjm_attach -- the region for image `uuid`, the way mount and mkfs
 * get it.  Without UBJM_NVMA_FORMAT: open it and refuse (writing nothing)
 * a region of another image (-EINVAL), another layout (-EINVAL: `nbufs`
 * != 0 and different, or `size` != 0 and different), a corrupt one
 * (-EUCLEAN) or a missing one (-ENOENT).  With UBJM_NVMA_FORMAT: make an
 * empty region of `nbufs` buffers (0: as many as fit in `size`; both 0:
 * 16384), but refuse with -EBUSY, writing nothing, a valid region that
 * still holds committed blocks not yet written home ("mount once without
 * --format-nvm to checkpoint").  Returns 0 and *out.
 */
int ubjm_attach(const char *path, uint64_t size, uint32_t nbufs,
                   const uint8_t uuid[16], unsigned flags, struct ubj_nvm **out);

/*
 * ubjm_pending -- committed blocks of the region that recovery would
 * keep (not yet written home).  The same scan mount's recovery runs.
 * Returns the count, or -EUCLEAN for a corrupt descriptor array.
 */
int64_t ubjm_pending(struct ubj_nvm *r, uint64_t dev_nblocks);

/* What the mode's prepare() hands to its mount (t->arg). */
struct ubjm_prep {
    struct ubj_nvm *r;       /* the attached region, owned */
    int rdonly;              /* UBJ_MOUNT_RDONLY: never checkpoint */
};

/* The mode's verbs (ubj_recovery.c; src/txn/mode.h says what each does):
 * prepare attaches the region named by the mount config, checks it
 * against the image and hands its arrays to the cache; check_last
 * refuses to drop an unclean ubj mount's region; record numbers a
 * read-write mount in the region; error is the region's device-error
 * record. */
int ubjm_prepare(const struct ubj_config *cfg, const struct ubj_mode_image *img,
                     struct ubj_cache_config *cc, void **arg);
void ubjm_release(void *arg);
int ubjm_check_last(const struct ubj_mode_image *img, const struct ubj_config *cfg,
                    bool same);
int ubjm_record(struct ubj_txn *t, const struct ubj_mode_image *img,
                struct ubj_mode_record *rec);
int ubjm_error(struct ubj_txn *t, bool clear);
int ubjm_view(const struct ubj_mode_image *img, const char *path,
              struct ubj_bdev **out);

/*
 * ubjm_region_probe -- the random id of the region file at `path` and how
 * many committed blocks it holds that are not home (ubjm_pending),
 * without changing it.  0; -ENOENT (no file); -EUCLEAN (not a region);
 * the open's error.  Used by mount to refuse --format-nvm over a region
 * an unclean image still needs.
 */
int ubjm_region_probe(const char *path, uint64_t *id, int64_t *pending);

/* ---- test-only hooks (ubj.c) ------------------------------------------ */

/* ubjm_test_limits -- override the running-transaction limit (dirty
 * buffers before a commit at a handle boundary) and the frozen limit
 * (before a checkpoint) as fractions in 1/1000 of the cache; 0 = default
 * (250 and 500); a frozen limit of 1000 or more also turns off the
 * cold-pressure checkpoint, so that only the timer, sync, reclaim and
 * unmount checkpoint.  Process-wide, read at mount (not in a hot path).
 * In every build: the crash explorer (`ubjfs crashtest`, also in a plain
 * build) commits and checkpoints often through it. */
void ubjm_test_limits(unsigned dirty_permille, unsigned frozen_permille);

#if UBJ_TEST_HOOKS   /* a test build only (CMake option UBJ_TEST_HOOKS) */
/* Deliberately broken variants, for tests that must catch them. */
enum ubjm_break {
    UBJM_BREAK_NONE = 0,
    UBJM_BREAK_DATA_FLUSH = 1,     /* commit does not flush the data lines */
    UBJM_BREAK_COMMIT_PERSIST = 2, /* commit stores the record, never persists it */
    UBJM_BREAK_EARLY_FREE = 3,     /* superseded versions freed before the record */
    UBJM_BREAK_CKPT_FLUSH = 4,     /* checkpoint: no device flush before CLEAN */
    UBJM_BREAK_CKPT_ANY_FROZEN = 5,/* checkpoint writes whatever is FROZEN at
                                     write time, not only the listed versions */
};
/* ubjm_test_break -- select a broken variant (process-wide; also set
 * at first use from the environment variable UBJ_TEST_BREAK). */
void ubjm_test_break(enum ubjm_break which);

/* ubjm_test_on_commit -- call cb(ctx, txid) after each commit record
 * is persisted (NULL: none).  Process-wide. */
void ubjm_test_on_commit(void (*cb)(void *ctx, uint64_t txid), void *ctx);

/* Points inside the mode where a test may run code (and stop a thread). */
enum ubjm_test_point {
    UBJM_TP_CKPT_UNLOCKED = 1, /* the timer's checkpoint listed its buffers
                                 and released the mount lock */
    UBJM_TP_CKPT_WRITTEN = 2,  /* ... wrote them home and flushed (lock
                                 still released) */
    UBJM_TP_COMMIT_FROZEN = 3, /* commit phase 1 is durable, the commit
                                 record not yet stored (mount lock held) */
};
/* ubjm_test_on_point -- call cb(ctx, point) at each test point (NULL:
 * none).  Process-wide; the callback runs on the thread at the point. */
void ubjm_test_on_point(void (*cb)(void *ctx, enum ubjm_test_point p), void *ctx);
#endif /* UBJ_TEST_HOOKS */

#endif /* UBJ_TXN_UBJ_H */
