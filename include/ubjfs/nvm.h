/*
 * ubjfs/nvm.h -- the persistent (NVM) region that holds UBJ's buffer cache,
 * its persistence primitives, the recording shadow used by crash tests,
 * and the read-only overlay device that fsck uses to check a pair
 * (region, image).
 *
 * A region is a file mapped with PMDK's libpmem (pmem_map_file): a file on
 * a DAX file system, a /dev/dax device, or an ordinary file (e.g. under
 * /dev/shm) as an emulation.  Layout (docs/UBJ.md has every field):
 *
 *   [0, 4096)              header: magic, version, layout (buffer count,
 *                          block size, descriptor size and offsets), the
 *                          uuid of the paired image, a crc32c of those;
 *                          at byte 256 the last committed transaction id,
 *                          one aligned 8-byte word (outside the crc)
 *   [desc_off, +nbufs*48)  buffer descriptors (struct ubj_bufdesc)
 *   [data_off, +nbufs*4K)  4 KiB buffers, 4096-aligned
 *
 * Persistence (after libpmem's verbs, nothing cleverer): every store that
 * recovery trusts goes through ubj_nvm_copy / ubj_nvm_memset /
 * ubj_nvm_store64, is made durable by ubj_nvm_flush (write back the cache
 * lines of a range) and ubj_nvm_drain (wait until every flush issued
 * before it is durable); ubj_nvm_persist = flush + drain.  On real
 * persistent memory (pmem_is_pmem) these are pmem_flush / pmem_drain; on
 * an ordinary mapping, flush remembers the range and drain calls
 * pmem_msync over what was flushed.  Only an aligned 8-byte store is
 * atomic; a cache line (64 bytes) is the unit of flush.
 *
 * Locking: a region is used by one thread at a time (the mount lock of
 * the file system that owns it serialises commit, checkpoint and
 * recovery).  The shadow recorder is process-wide test machinery.
 *
 * Errors: negative errno values; a failing function sets ubj_errormsg().
 */
#ifndef UBJFS_NVM_H
#define UBJFS_NVM_H

#include <stddef.h>
#include <stdint.h>
#include "ubjfs/bdev.h"

#ifdef __cplusplus
extern "C" {
#endif

#define UBJ_NVM_VERSION    1u
#ifndef UBJ_NVM_LINE               /* also in ubjfs/model.h */
#define UBJ_NVM_LINE 64u   /* bytes: the unit of flush and of media writes */
#endif
#define UBJ_NVM_HDR_SIZE   4096u   /* bytes of the header page */
#define UBJ_NVM_DESC_SIZE  48u     /* bytes per buffer descriptor */
#define UBJ_NVM_MIN_BUFS   64u     /* smallest region (the cache's minimum) */
#define UBJ_NVM_MAX_BUFS   (1u << 28)

struct ubj_nvm;
struct ubj_nvm_model;   /* the NVM cost model, ubjfs/model.h */

/* The layout recorded in a region's header. */
struct ubj_nvm_layout {
    uint32_t nbufs;        /* buffers */
    uint32_t block_size;   /* 4096 */
    uint32_t desc_size;    /* UBJ_NVM_DESC_SIZE */
    uint64_t desc_off;     /* bytes from the start of the region */
    uint64_t data_off;     /* 4096-aligned */
    uint64_t size;         /* bytes the layout needs (the file may be larger) */
};

/* ---- region (src/nvm/region.c) ---------------------------------------- */

#define UBJ_NVM_OPEN_RDONLY 0x1u   /* map read-only (fsck); no persist allowed */
#define UBJ_NVM_OPEN_PRIVATE 0x2u  /* a private copy-on-write mapping of a file
                                      opened read-only: stores and persists
                                      work in memory and never reach the file
                                      (a read-only mount uses the region as
                                      its cache without changing it) */

/*
 * ubj_nvm_layout_for -- the layout of a region of `nbufs` buffers (nbufs
 * != 0), or of the most buffers that fit in `size` bytes (nbufs == 0).
 * Returns 0; -EINVAL if fewer than UBJ_NVM_MIN_BUFS or more than
 * UBJ_NVM_MAX_BUFS buffers result, or nbufs needs more than a non-zero
 * `size` (then *out is all zero).
 */
int ubj_nvm_layout_for(uint32_t nbufs, uint64_t size, struct ubj_nvm_layout *out);

/*
 * ubj_nvm_open -- map the existing region at `path` and check its header:
 * magic, version, checksum, a layout consistent with itself and with the
 * file's size.  Takes an exclusive flock on the file (shared with
 * UBJ_NVM_OPEN_RDONLY).  Writes nothing.  Returns 0 and *out; -ENOENT (no
 * file); -EBUSY (locked by another user); -EUCLEAN (not a region, or a
 * corrupt header: the message says which); -EACCES, -ENOMEM, -EIO.
 */
int ubj_nvm_open(const char *path, unsigned flags, struct ubj_nvm **out);

/*
 * ubj_nvm_format -- make `path` (created if missing, resized to the
 * layout's size if smaller) an empty region with `layout`, paired with the
 * image `uuid`: every descriptor zero, committed transaction 0.  The magic
 * is cleared first and written last, so an interrupted format leaves a
 * region every open refuses.  Does NOT check what the file held: callers
 * decide (ubj_nvm_attach refuses to lose committed blocks).  Returns 0 and
 * *out (mapped, locked); -EBUSY (locked); -ENOSPC, -EIO, -EACCES.
 */
int ubj_nvm_format(const char *path, const struct ubj_nvm_layout *layout,
                   const uint8_t uuid[16], struct ubj_nvm **out);

/* ubj_nvm_close -- unmap and unlock (nothing is persisted).  NULL: no-op. */
void ubj_nvm_close(struct ubj_nvm *r);

/* Accessors (never fail). */
const struct ubj_nvm_layout *ubj_nvm_get_layout(const struct ubj_nvm *r);
const uint8_t *ubj_nvm_uuid(const struct ubj_nvm *r);         /* 16 bytes */
uint64_t ubj_nvm_region_id(const struct ubj_nvm *r);          /* random at format */
void *ubj_nvm_desc(struct ubj_nvm *r);                        /* descriptor array */
uint8_t *ubj_nvm_data(struct ubj_nvm *r);                     /* buffer array */
uint64_t *ubj_nvm_committed_word(struct ubj_nvm *r);          /* the commit record */
uint64_t ubj_nvm_committed(const struct ubj_nvm *r);          /* its value */
uint64_t ubj_nvm_mount_gen(const struct ubj_nvm *r);          /* 0 = never set */

/*
 * ubj_nvm_set_mount_gen -- store and persist the region's mount generation
 * (one atomic 8-byte word of the header): a read-write mount numbers
 * itself and records the number in the image too, so that an older copy
 * of the region is told apart (docs/UBJ.md, "Region identity").  0 or the
 * persist's error; -EROFS on a read-only region.  Not thread-safe.
 */
int ubj_nvm_set_mount_gen(struct ubj_nvm *r, uint64_t gen);

/*
 * The device error that stopped a mode-ubj mount (docs/UBJ.md, "Device
 * errors"): a checkpoint could not write committed blocks home, so the
 * file system went read-only and those blocks stay in the region until a
 * mount with a working device writes them home.  Recorded in the header
 * at once (persisted) and kept until that mount has put UBJ_STATE_ERRORS
 * into the image's superblock.
 */
#define UBJ_NVM_ERR_START   1u      /* the checkpoint at a handle start */
#define UBJ_NVM_ERR_TIMER   2u      /* the timer's checkpoint */
#define UBJ_NVM_ERR_SYNC    3u      /* sync's checkpoint */
#define UBJ_NVM_ERR_RECLAIM 4u      /* the checkpoint of a full cache */
#define UBJ_NVM_ERR_UNMOUNT 5u      /* unmount's checkpoint */
#define UBJ_NVM_ERR_FLUSH   0x100u  /* flag: the device flush failed (the
                                       writes home had succeeded) */
struct ubj_nvm_error {
    int err;             /* positive errno of the device (EIO, ...) */
    uint32_t where;      /* UBJ_NVM_ERR_* */
    int64_t time;        /* seconds since the epoch */
    uint64_t txid;       /* the commit record then: every commit up to it
                            is in the region */
    uint64_t blocks;     /* committed blocks not home then */
};

/*
 * ubj_nvm_error_record -- store and persist *e (details first, then the
 * one word that makes them count: a crash in between records nothing).
 * 0 or the persist's error; -EROFS on a read-only region; -EINVAL if
 * e->err is not positive.  Not thread-safe.
 */
int ubj_nvm_error_record(struct ubj_nvm *r, const struct ubj_nvm_error *e);
/* ubj_nvm_error_get -- 1 and *out if an error is recorded, else 0. */
int ubj_nvm_error_get(const struct ubj_nvm *r, struct ubj_nvm_error *out);
/* ubj_nvm_error_clear -- forget the record, persisted.  0, the persist's
 * error, or -EROFS on a read-only region. */
int ubj_nvm_error_clear(struct ubj_nvm *r);
/* ubj_nvm_error_text -- *e as one line without a newline, e.g. "the
 * timer's checkpoint could not write 12 committed blocks home
 * (Input/output error) at 2025-01-02 03:04:05 UTC, after commit 41";
 * returns buf. */
char *ubj_nvm_error_text(const struct ubj_nvm_error *e, char *buf, size_t len);
int ubj_nvm_is_pmem(const struct ubj_nvm *r);                 /* 1: real pmem */
const char *ubj_nvm_path(const struct ubj_nvm *r);

/* ---- persistence (src/nvm/persist.c) ---------------------------------- */

/* ubj_nvm_copy -- store len bytes of src at dst (inside the region). */
void ubj_nvm_copy(struct ubj_nvm *r, void *dst, const void *src, size_t len);
/* ubj_nvm_memset -- store len bytes of c at dst (inside the region). */
void ubj_nvm_memset(struct ubj_nvm *r, void *dst, int c, size_t len);
/* ubj_nvm_store64 -- one atomic aligned 8-byte store (dst 8-aligned). */
void ubj_nvm_store64(struct ubj_nvm *r, uint64_t *dst, uint64_t v);
/* ubj_nvm_flush -- start writing back the cache lines of [p, p+len). */
void ubj_nvm_flush(struct ubj_nvm *r, const void *p, size_t len);
/* ubj_nvm_drain -- wait until every earlier flush is durable: the
 * persistence point.  0, or -EIO (msync failed; message set). */
int ubj_nvm_drain(struct ubj_nvm *r);
/* ubj_nvm_persist -- flush [p, p+len) and drain. */
int ubj_nvm_persist(struct ubj_nvm *r, const void *p, size_t len);
/*
 * ubj_nvm_filled -- a device read has written [p, p+len) of the region
 * (a cache buffer filled from the block device by a miss or read-ahead:
 * the device's DMA, not CPU stores, so no store is recorded and no
 * persistence point made -- a CLEAN buffer needs none).  Counts
 * bytes_filled and charges the cost model, if any, for writing those
 * lines to the medium (ubj_nvm_model_fill).  Allowed on a read-only
 * (private) mapping too: the cache still reads into it.  Thread-safe:
 * the counter is updated atomically, the model takes its own lock.
 */
void ubj_nvm_filled(struct ubj_nvm *r, const void *p, size_t len);

struct ubj_nvm_counters {
    uint64_t bytes_stored;    /* through copy/memset/store64 */
    uint64_t bytes_flushed;   /* cache lines written back x 64 */
    uint64_t flushes;         /* flush calls */
    uint64_t drains;          /* persistence points (drain, persist) */
    uint64_t bytes_filled;    /* written by device reads (ubj_nvm_filled) */
};
/* ubj_nvm_counters_get -- counters since the region was opened. */
void ubj_nvm_counters_get(const struct ubj_nvm *r, struct ubj_nvm_counters *out);

/*
 * ubj_nvm_set_model -- charge every store, flush and drain of r to the
 * NVM cost model m (ubjfs/model.h: time on its clock, energy), which r
 * owns from now on (destroyed by ubj_nvm_close or a later set).  NULL:
 * none.  Reads of the region (cache hits) are not charged.
 */
void ubj_nvm_set_model(struct ubj_nvm *r, struct ubj_nvm_model *m);
/* ubj_nvm_get_model -- r's cost model, or NULL. */
struct ubj_nvm_model *ubj_nvm_get_model(const struct ubj_nvm *r);

/* ---- the shadow recorder, for crash tests (src/nvm/shadow.c) ---------- */

/*
 * While installed, a shadow records the region opened (read-write) next:
 * its durable image (the contents at attach time, then every flushed line
 * as it was when flushed, applied at the following drain), the lines
 * flushed since the last drain, and the count of persistence points
 * (drains).  Armed with a point k, it captures, right before the k-th
 * drain takes effect, everything a power failure there could leave: the
 * durable image, the pending flushed lines and the current contents.
 * ubj_nvm_shadow_image then builds one possible crash image: only what
 * was certainly durable, everything, or a random mix chosen independently
 * for each 8-byte word (so cache lines come out partially persisted).
 * Stores that bypass the nvm layer (the file system writing a DIRTY
 * buffer) are seen in the current contents, never as durable.
 */
struct ubj_nvm_shadow;

enum ubj_shadow_policy {
    UBJ_SHADOW_DURABLE = 0,   /* only what was durable */
    UBJ_SHADOW_ALL = 1,       /* every store made so far */
    UBJ_SHADOW_RANDOM = 2,    /* each word: durable, flushed or current value */
};

/* ubj_nvm_shadow_new -- an idle shadow.  0 or -ENOMEM. */
int ubj_nvm_shadow_new(struct ubj_nvm_shadow **out);
/* ubj_nvm_shadow_free -- free it (must not be installed). */
void ubj_nvm_shadow_free(struct ubj_nvm_shadow *s);
/* ubj_nvm_shadow_install -- the next region opened or formatted
 * read-write records into s (NULL: none).  Process-wide. */
void ubj_nvm_shadow_install(struct ubj_nvm_shadow *s);
/* ubj_nvm_shadow_arm -- capture before persistence point `point` (1 = the
 * first drain after attach; 0 = never) and then call on_capture(ctx). */
void ubj_nvm_shadow_arm(struct ubj_nvm_shadow *s, uint64_t point,
                        void (*on_capture)(void *ctx), void *ctx);
/* ubj_nvm_shadow_points -- persistence points recorded since attach. */
uint64_t ubj_nvm_shadow_points(const struct ubj_nvm_shadow *s);
/* ubj_nvm_shadow_captured -- 1 once the armed point was captured. */
int ubj_nvm_shadow_captured(const struct ubj_nvm_shadow *s);
/* ubj_nvm_shadow_size -- bytes of the recorded region (0 before attach). */
size_t ubj_nvm_shadow_size(const struct ubj_nvm_shadow *s);
/* ubj_nvm_shadow_image -- one crash image of the captured state into buf
 * (ubj_nvm_shadow_size bytes).  0, or -ENOENT if nothing was captured. */
int ubj_nvm_shadow_image(const struct ubj_nvm_shadow *s,
                         enum ubj_shadow_policy policy, uint64_t seed, void *buf);

/* ---- pairing a region with an image (src/nvm/pair.c) ------------------ */

/*
 * ubj_nvm_pair_check -- refuse (writing nothing) a region r of another
 * image than `uuid` (-EINVAL, "nvm: PATH belongs to another image (uuid
 * ...; this image is ...)") or of another layout (-EINVAL: `nbufs` != 0
 * and different, or `size` != 0 and different).  0 if it pairs.  How a
 * mode attaches its region (and refuses to format one that still holds
 * committed blocks) is the mode's: src/txn/ubj.h, ubj_nvm_attach.
 */
int ubj_nvm_pair_check(struct ubj_nvm *r, uint64_t size, uint32_t nbufs,
                       const uint8_t uuid[16]);

/* ubj_nvm_uuid_text -- the usual text form of a uuid (36 chars + NUL). */
void ubj_nvm_uuid_text(const uint8_t u[16], char out[37]);

/* ---- the NVM view (src/nvm/view.c) ----------------------------------- */

/* One block the view serves from the region: its buffer there. */
struct ubj_nvm_view_block {
    uint64_t blkno;      /* the image's block */
    uint32_t buf;        /* the region buffer (descriptor index) holding it */
};

/*
 * ubj_nvm_view_create -- a read-only block device over `image` that
 * serves each listed block from its region buffer in r, every other one
 * from the image: a map overlay (include/ubjfs/bdev.h) named
 * "nvm-overlay", whose writes fail with -EROFS.  Which buffers are listed
 * is the caller's (the UBJ mode's recovery scan: ubj_nvm_overlay_create).
 * Owns image and r once this succeeds; *blocks is copied.  0 and *out,
 * -EINVAL, -ENOMEM.
 */
int ubj_nvm_view_create(struct ubj_bdev *image, struct ubj_nvm *r,
                        const struct ubj_nvm_view_block *blocks, uint32_t n,
                        struct ubj_bdev **out);

/* ubj_nvm_is_view -- 1 if d is a device made by ubj_nvm_view_create (fsck
 * then checks the pair, not the bare image), else 0. */
int ubj_nvm_is_view(const struct ubj_bdev *d);

#ifdef __cplusplus
}
#endif
#endif /* UBJFS_NVM_H */
