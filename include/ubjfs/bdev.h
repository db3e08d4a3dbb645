/*
 * ubjfs/bdev.h -- block devices behind one operations table.
 *
 * A block device is a struct of callbacks with a written contract (after
 * littlefs's lfs_config and SQLite's sqlite3_io_methods) plus its geometry.
 * Every call from the layers above goes through the dispatch functions
 * ubj_bdev_read/write/flush (src/dev/bdev.c): the one place that checks
 * bounds, counts statistics and can trace.  Wrappers (fault injection,
 * timed models, write recording) hold the device they wrap in `lower` and
 * own it: destroying the top of a stack destroys the whole stack.
 *
 * Units: a block is `block_size` bytes (4096 for every device ubjfs makes);
 * block numbers and counts are in blocks; sizes in bytes.
 * Errors: negative errno values (-EIO, -EINVAL, -ENOSPC, ...).
 * Thread-safety: every function here may be called from several threads at
 * once on the same device; implementations serialise what needs it.
 */
#ifndef UBJFS_BDEV_H
#define UBJFS_BDEV_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UBJ_BLOCK_SIZE 4096u          /* bytes; the only block size in v1 */
#define UBJ_BDEV_OPS_VERSION 1u

struct ubj_bdev;

/*
 * What a device promises about writes that a power cut interrupts
 * (SQLite's xDeviceCharacteristics).  Callers may rely only on what is set.
 */
#define UBJ_BDEV_ATOMIC_SECTOR  0x1u  /* a 512-byte sector is written whole */
#define UBJ_BDEV_ATOMIC_BLOCK   0x2u  /* a whole block is written whole */
#define UBJ_BDEV_VOLATILE_CACHE 0x4u  /* writes need flush() to be durable */

/*
 * struct ubj_bdev_ops -- the contract every device implements.
 *
 * read:  fill `buf` with `count` blocks starting at `blkno`.  The dispatch
 *        layer has already checked blkno + count <= nblocks and count > 0.
 * write: store `count` blocks from `buf` at `blkno`; the data is durable
 *        only after a later flush() returns 0 (if UBJ_BDEV_VOLATILE_CACHE).
 * flush: make every write that returned before this call durable
 *        (fdatasync for files, blkdev cache flush).  May return -EIO.
 * destroy: release the device and, for a wrapper, its lower device.
 *        Never fails; pending writes are not flushed.
 * All return 0 or a negative errno (-EIO for a device error).
 */
struct ubj_bdev_ops {
    uint32_t version;   /* UBJ_BDEV_OPS_VERSION */
    const char *name;   /* "file", "ram", "fault", ... */
    int (*read)(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf);
    int (*write)(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                 const void *buf);
    int (*flush)(struct ubj_bdev *d);
    void (*destroy)(struct ubj_bdev *d);
};

/* Counters kept by the dispatch layer (src/dev/bdev.c); updated atomically. */
struct ubj_bdev_stats {
    uint64_t reads;          /* read requests */
    uint64_t writes;         /* write requests */
    uint64_t flushes;        /* flush requests */
    uint64_t bytes_read;     /* bytes */
    uint64_t bytes_written;  /* bytes */
    uint64_t errors;         /* requests that returned an error */
};

/*
 * struct ubj_bdev -- a device instance.  Implementations embed it as their
 * first member and cast back (container_of style).
 */
struct ubj_bdev {
    const struct ubj_bdev_ops *ops;
    uint32_t block_size;      /* bytes; UBJ_BLOCK_SIZE */
    uint32_t guarantees;      /* UBJ_BDEV_* flags */
    uint64_t nblocks;         /* device size in blocks */
    struct ubj_bdev *lower;   /* wrapped device, owned; NULL for a leaf */
    struct ubj_bdev_stats stats; /* [atomic] */
    uint32_t mounted;         /* [atomic] 1 while a ubj_mount holds it */
    uint32_t kind;            /* UBJ_BDEV_KIND_*: what it is (ubj_bdev_kind) */
};

/* What a device is (struct ubj_bdev.kind, set by its constructor). */
enum ubj_bdev_kind {
    UBJ_BDEV_KIND_DEVICE = 0, /* a device, or a wrapper that passes every
                                 block down (fault, record, model) */
    UBJ_BDEV_KIND_COW = 1,    /* copy-on-write memory overlay (ubj_bdev_cow_create) */
    UBJ_BDEV_KIND_MAP = 2,    /* read-only map overlay (ubj_bdev_map_create) */
};

/* ---- dispatch (src/dev/bdev.c) ---------------------------------------- */

/*
 * ubj_bdev_read -- read `count` blocks at `blkno` into `buf`
 * (count * block_size bytes).  Returns 0, -EINVAL for count == 0, a NULL
 * argument, or a range past the end of the device, or the device's error
 * (-EIO).  Counts the request in d->stats.  Thread-safe.
 */
int ubj_bdev_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf);

/* ubj_bdev_write -- write `count` blocks at `blkno`; errors as ubj_bdev_read. */
int ubj_bdev_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                   const void *buf);

/*
 * ubj_bdev_flush -- make every completed write durable (POSIX fdatasync()
 * semantics).  Returns 0 or the device's error (-EIO).  Thread-safe.
 */
int ubj_bdev_flush(struct ubj_bdev *d);

/* ubj_bdev_destroy -- release `d` and every device below it; NULL is a no-op. */
void ubj_bdev_destroy(struct ubj_bdev *d);

/* ubj_bdev_stats_get -- a consistent-enough snapshot of d's counters. */
void ubj_bdev_stats_get(const struct ubj_bdev *d, struct ubj_bdev_stats *out);

/* ubj_bdev_stats_reset -- zero d's counters (not those of lower devices). */
void ubj_bdev_stats_reset(struct ubj_bdev *d);

/* ubj_bdev_kind -- what d is: UBJ_BDEV_KIND_* (DEVICE for NULL). */
uint32_t ubj_bdev_kind(const struct ubj_bdev *d);

/* ---- leaf devices ------------------------------------------------------ */

#define UBJ_BDEV_RDONLY 0x1u  /* open read-only; write() returns -EROFS */
#define UBJ_BDEV_CREATE 0x2u  /* create the file if missing (regular files) */
#define UBJ_BDEV_DIRECT 0x4u  /* O_DIRECT: bypass the host page cache */
#define UBJ_BDEV_RESIZE 0x8u  /* set a regular file's length to size_bytes */
#define UBJ_BDEV_EXCL   0x10u /* take an exclusive flock(); -EBUSY if held */

/*
 * ubj_bdev_file_open -- a regular file or a Linux block device, accessed
 * with pread/pwrite; flush is fdatasync(2).
 *   path:       file or /dev node.
 *   flags:      UBJ_BDEV_* above.
 *   size_bytes: with UBJ_BDEV_RESIZE (or CREATE of a new file), the file's
 *               new length; 0 = use the current length.  The device has
 *               floor(length / 4096) blocks.
 * Returns 0 and *out, or -ENOENT (missing, no CREATE), -EACCES, -EISDIR,
 * -EINVAL (size 0 / not a multiple-of-4096-capable length / bad flags),
 * -EBUSY (UBJ_BDEV_EXCL and another holder), -ENOSPC, or another open(2)
 * error.  A message for ubj_errormsg() is set on failure.
 */
int ubj_bdev_file_open(const char *path, unsigned flags, uint64_t size_bytes,
                       struct ubj_bdev **out);

/*
 * ubj_bdev_ram_create -- a device in DRAM of `nblocks` blocks, zero-filled.
 * flush is a no-op.  Returns 0, -EINVAL (nblocks == 0) or -ENOMEM.
 */
int ubj_bdev_ram_create(uint64_t nblocks, struct ubj_bdev **out);

/* ---- fault injection (src/dev/fault.c) -------------------------------- */

enum ubj_fault_op { UBJ_FAULT_READ = 0, UBJ_FAULT_WRITE = 1, UBJ_FAULT_FLUSH = 2 };

/*
 * ubj_bdev_fault_create -- wrap `lower` (taking ownership) in a device that
 * passes every request through until an armed fault fires.  On failure
 * `lower` is NOT destroyed.  Returns 0, -EINVAL or -ENOMEM.
 */
int ubj_bdev_fault_create(struct ubj_bdev *lower, struct ubj_bdev **out);

/*
 * ubj_bdev_fault_arm -- make the `nth` next request of kind `op` (1 = the
 * very next) fail with -EIO.  persistent != 0: that request and every later
 * one of that kind fail until ubj_bdev_fault_disarm(); otherwise only the
 * one fails (transient).  A write that fails with `torn_sectors` > 0 first
 * writes that many leading 512-byte sectors of the request to the lower
 * device (a torn write); 0 writes nothing.  Returns 0 or -EINVAL (not a
 * fault device, nth == 0).  Thread-safe.
 */
int ubj_bdev_fault_arm(struct ubj_bdev *d, enum ubj_fault_op op, uint64_t nth,
                       int persistent, uint32_t torn_sectors);

/* ubj_bdev_fault_disarm -- cancel every armed fault; requests pass again. */
int ubj_bdev_fault_disarm(struct ubj_bdev *d);

/* ubj_bdev_fault_fired -- how many requests the wrapper has failed so far. */
uint64_t ubj_bdev_fault_fired(const struct ubj_bdev *d);

/* ---- write recording for crash tests (src/dev/record.c) ---------------- */

/*
 * ubj_bdev_record_create -- wrap `lower` (taking ownership) in a device
 * that passes every request through and records each completed write
 * (block number, count, a copy of the data) and each completed flush; the
 * first time a block is written, its previous contents are saved, so the
 * image as it was at creation can be rebuilt.  Writes are serialised.
 * On failure `lower` is NOT destroyed.  Returns 0, -EINVAL or -ENOMEM.
 *
 * Crash model: a write is durable once a later flush has completed.  With
 * k flushes completed (k = 0 .. ubj_bdev_record_flushes), the writes issued
 * before flush k began are durable; the writes of "epoch k" -- issued after
 * flush k began and before flush k + 1 began (or the end of the record) --
 * may each have reached the medium whole, partly (512-byte sectors) or not
 * at all; later writes never happened.
 */
int ubj_bdev_record_create(struct ubj_bdev *lower, struct ubj_bdev **out);

/* ubj_bdev_record_writes / _flushes -- requests recorded so far (0 if d
 * is not a recording device). */
uint64_t ubj_bdev_record_writes(const struct ubj_bdev *d);
uint64_t ubj_bdev_record_flushes(const struct ubj_bdev *d);

/* ubj_bdev_record_epoch -- the writes of epoch k: indices [*first, *first
 * + *count).  0 or -EINVAL (k > flushes, not a recording device). */
int ubj_bdev_record_epoch(const struct ubj_bdev *d, uint64_t k, uint64_t *first,
                          uint64_t *count);

/* ubj_bdev_record_write_info -- write number i: its first block, block
 * count and data (valid until the device is destroyed).  0 or -EINVAL. */
int ubj_bdev_record_write_info(const struct ubj_bdev *d, uint64_t i,
                               uint64_t *blkno, uint32_t *count,
                               const void **data);

/* What a crash image keeps of one write of the crash epoch. */
enum ubj_rec_keep {
    UBJ_REC_DROP = 0,     /* nothing of it reached the medium */
    UBJ_REC_WHOLE = 1,    /* all of it */
    UBJ_REC_PREFIX = 2,   /* its first `sectors` 512-byte sectors */
    UBJ_REC_SUFFIX = 4,   /* its last `sectors` sectors (a device that
                             wrote a multi-block request out of order) */
    UBJ_REC_SECTORS = 3,  /* each 512-byte sector kept or not, pseudo-randomly
                             from `seed` (a device reordering inside a write) */
};
struct ubj_rec_choice {
    uint32_t keep;        /* enum ubj_rec_keep */
    uint32_t sectors;     /* UBJ_REC_PREFIX, UBJ_REC_SUFFIX */
    uint64_t seed;        /* UBJ_REC_SECTORS */
};

/*
 * ubj_bdev_record_crash -- write onto `target` (at least as large; not
 * flushed) the image a power cut during epoch k leaves: the image at
 * creation, every write durable after flush k, then the writes of epoch
 * k as choice[j] says for its j-th write (j < nchoice; the rest, or all
 * with choice NULL, are dropped), in issue order.  Returns 0, -EINVAL
 * (bad k, target too small) or the target's error.
 */
int ubj_bdev_record_crash(struct ubj_bdev *d, uint64_t k,
                          const struct ubj_rec_choice *choice, uint64_t nchoice,
                          struct ubj_bdev *target);

/*
 * ---- overlays: devices over `lower` that serve some blocks themselves ----
 *
 * cow (src/dev/cow.c): copy-on-write in memory -- every write kept there,
 * lower never written (fsck -n replays a journal into one).
 * map (src/dev/map.c): read-only -- the blocks a map names come from the
 * map's memory, the others from lower (the NVM view of an image and its
 * region, src/nvm/view.c, is one).
 */

#define UBJ_COW_BORROW 0x1u  /* do not destroy `lower` with the overlay */

/*
 * ubj_bdev_cow_create -- a device that reads `lower` but keeps every
 * write in memory (lower is never written; flush does nothing): lets fsck
 * -n replay a journal without changing the image.  Owns `lower` unless
 * UBJ_COW_BORROW.  On failure `lower` is NOT destroyed.  Returns 0,
 * -EINVAL or -ENOMEM.  Its kind is UBJ_BDEV_KIND_COW.
 */
int ubj_bdev_cow_create(struct ubj_bdev *lower, unsigned flags,
                        struct ubj_bdev **out);

/* ubj_bdev_cow_blocks -- blocks held in memory (0: not a cow overlay). */
uint64_t ubj_bdev_cow_blocks(const struct ubj_bdev *d);

/* What a map overlay serves itself. */
struct ubj_bdev_map {
    const char *name;        /* the device's name (in messages) */
    const void *owner;       /* its creator's tag (ubj_bdev_map_owner) */
    const char *erofs;       /* the message of a write (-EROFS) */
    /* the 4096-byte copy of blkno the map holds, or NULL: lower's */
    const uint8_t *(*find)(void *ctx, uint64_t blkno);
    void (*fini)(void *ctx); /* on destroy, after lower is destroyed */
    void *ctx;
};

/*
 * ubj_bdev_map_create -- a read-only device over `lower` (which it owns
 * once this succeeds): each block map->find names comes from the map,
 * runs of the others from lower; writes fail with -EROFS (map->erofs);
 * flush does nothing.  Geometry and guarantees are lower's; the kind is
 * UBJ_BDEV_KIND_MAP.  *map is copied.  Returns 0 and *out, -EINVAL or
 * -ENOMEM (then neither lower nor ctx is touched).
 */
int ubj_bdev_map_create(struct ubj_bdev *lower, const struct ubj_bdev_map *map,
                        struct ubj_bdev **out);

/* ubj_bdev_map_owner -- the owner tag d was created with if d is a map
 * overlay, else NULL; ubj_bdev_map_ctx -- its ctx (NULL likewise). */
const void *ubj_bdev_map_owner(const struct ubj_bdev *d);
void *ubj_bdev_map_ctx(const struct ubj_bdev *d);

#ifdef __cplusplus
}
#endif
#endif /* UBJFS_BDEV_H */
