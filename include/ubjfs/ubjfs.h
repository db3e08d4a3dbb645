/*
 * ubjfs/ubjfs.h -- the ubjfs file system library.
 *
 * An inode-number based API in the shape of FUSE's low-level operations
 * (include/fuse_lowlevel.h), with POSIX/Linux semantics and Linux's error
 * codes, plus path helpers for tools and tests.
 *
 * Conventions
 *  - Every function returns 0 (or a non-negative count) on success and a
 *    negative errno on failure; ubj_errormsg() then holds a one-line
 *    message for this thread (PMDK's pmem_errormsg()).
 *  - Sizes and offsets are bytes; times are struct timespec (ns resolution).
 *  - Names are one path component: 1..255 bytes, no '/', no NUL; "." and
 *    ".." are handled as the kernel's VFS would (see each function).
 *  - Permission checks are the caller's job (as with FUSE's
 *    default_permissions): the library checks types and existence only.
 *  - Thread-safety: every function on a mounted `struct ubj_fs` may be
 *    called from several threads at once (one lock per mount serialises the
 *    file-system operations; see docs/DESIGN.md).
 */
#ifndef UBJFS_UBJFS_H
#define UBJFS_UBJFS_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>
#include "ubjfs/bdev.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t ubj_ino_t;
#define UBJ_ROOT_INO 1u
#define UBJ_NAME_MAX 255u       /* bytes in one name */
#define UBJ_SYMLINK_MAX 4095u   /* bytes in a symlink target */
#define UBJ_MAX_FILE_SIZE (1ULL << 44) /* 16 TiB: 2^32 blocks of 4 KiB */
/* A write that starts below UBJ_MAX_FILE_SIZE but runs past it writes
 * what fits and returns the short count (Linux's generic_write_checks);
 * -EFBIG only when it starts at or past the limit. */

/* ubj_errormsg -- the last error message of this thread ("" if none). */
const char *ubj_errormsg(void);

/* ---- format and mount -------------------------------------------------- */

/* Names of the released consistency modes, for callers that pick one
 * (ubj_format_opts.mode, ubj_config.mode).  What modes this build has,
 * what each needs and promises: the mode registry, ubjfs/mode.h. */
#define UBJ_MODE_NONE "none"
#define UBJ_MODE_UBJ  "ubj"    /* NVM-resident cache, commit in place (docs/UBJ.md) */
/* JBD2-like journal (docs/JOURNAL.md) */
#define UBJ_MODE_ORDERED   "ordered"    /* data home before metadata commits */
#define UBJ_MODE_JOURNAL   "journal"    /* data and metadata through the journal */
#define UBJ_MODE_WRITEBACK "writeback"  /* metadata journaled, data unordered */

struct ubj_format_opts {
    uint64_t inodes;      /* inode count; 0 = one per 16 KiB, min 64 */
    const char *mode;     /* default consistency mode recorded; NULL = "none" */
    uint8_t uuid[16];     /* all zero = random; a given uuid also fixes the
                             directory hash seed (a reproducible image) */
    const char *label;    /* up to 31 bytes; NULL = none */
    unsigned flags;       /* UBJ_FORMAT_* */
    uint64_t journal_blocks; /* journal area in blocks: 0 = the default for
                                the journal modes (scaled to the image as
                                mke2fs does), none for the others; at
                                least 64 (docs/JOURNAL.md) */
};
/* The journal commits with one flush instead of two (its recovery then
 * trusts a commit block only if the transaction checksum in it matches;
 * docs/JOURNAL.md, "async commit"). */
#define UBJ_FORMAT_JOURNAL_ASYNC 0x2u
/* The device already reads as zeros (a new or freshly truncated file):
 * skip zeroing the inode table (ext4's lazy_itable_init).  Without it,
 * ubj_format writes zeros over the whole inode table. */
#define UBJ_FORMAT_ZEROED 0x1u

/*
 * ubj_format -- write an empty file system over the whole device (mkfs).
 * Returns 0; -EINVAL for a device smaller than 1 MiB (256 blocks) or a bad
 * option; -EFBIG for more than 2^40 blocks; -ENOSPC when the inode tables
 * leave no data blocks; or the device's error (-EIO).  Not thread-safe with
 * respect to other users of the device.  Source: mke2fs.
 */
int ubj_format(struct ubj_bdev *dev, const struct ubj_format_opts *opts);

#define UBJ_MOUNT_RDONLY   0x1u  /* refuse every change with -EROFS */
#define UBJ_MOUNT_NO_TIMER 0x2u  /* no background commit/write-back thread */
/* Before going read-write (or read-only: it reports then too), run fsck's
 * passes (ubj_check without repair) over the image as mounted; any problem
 * leaves the mount read-only, as below.  Costs about one fsck -n
 * (docs/USAGE.md, "-o scrub"). */
#define UBJ_MOUNT_SCRUB    0x4u
/* Never change atime on reads (mount -o noatime; without it: relatime,
 * as Linux's default).  setattr still sets it when asked (touch -a). */
#define UBJ_MOUNT_NOATIME  0x8u
/* Read-ahead windows wholly beyond a read call are read synchronously, the
 * reader waiting for them at the marker, instead of as asynchronous
 * time-limited requests it meets later (the default, as Linux's
 * page_cache_async_ra; docs/READAHEAD.md, "Asynchronous windows"): for
 * side-by-side comparisons (`bench readahead --sync-windows`). */
#define UBJ_MOUNT_RA_SYNC  0x10u

struct ubj_config {
    uint32_t version;             /* 0 */
    const char *mode;             /* NULL = the mode recorded by mkfs */
    uint32_t cache_blocks;        /* buffers; 0 = 16384 (64 MiB); below 64 is raised to 64 */
    uint32_t commit_interval_ms;  /* 0 = 5000 */
    unsigned flags;               /* UBJ_MOUNT_* */
    /* Mode ubj only (docs/UBJ.md): the NVM region holding the cache. */
    const char *nvm_path;         /* region file, DAX file or /dev/dax; required */
    uint64_t nvm_size;            /* bytes; 0 = the region's own (or, with
                                     UBJ_NVM_FORMAT, cache_blocks' worth) */
    unsigned nvm_flags;           /* UBJ_NVM_* */
    const char *nvm_profile;      /* NVM cost model charged for every store,
                                     flush and fence of the region: "dram",
                                     "sttmram", "pcm" or a profile file
                                     (ubjfs/model.h); NULL: none */
    /* The clock of timestamps (atime, mtime, ctime, crtime; superblock
     * times): now(now_ctx, ts) fills ts.  NULL = CLOCK_REALTIME.  A
     * benchmark on a virtual clock passes its own so that its runs are
     * deterministic (relatime's decisions depend on timestamps).  Called
     * with the mount lock held; must not call into the mount. */
    void (*now)(void *now_ctx, struct timespec *ts);
    void *now_ctx;
    /* The read path (docs/READAHEAD.md): "off-page" (NULL: the default)
     * reads each missing block with a request of its own, as Linux with
     * read-ahead off and MTD's readpage; "off" reads each contiguous run
     * of missing blocks of a call as one request (batched, no block
     * beyond the call's range); "linux[:KIB]" (KIB: the largest window, a
     * multiple of 4 from 4 to 65536, default 128) reads ahead with Linux's
     * on-demand window, "linux-2013[:KIB]" the same with the sequential-
     * miss test before its 2013 fix (docs/READAHEAD.md); read-ahead is
     * synchronous.  "adaptive[:KIB]": linux's windows, each read only if
     * the stream's used fraction pays for it at the device's measured
     * per-request and per-block cost; "oracle": clairvoyant from
     * ra_future below (the bound).  docs/READAHEAD.md. */
    const char *readahead;
    /* The oracle's future (readahead "oracle", required by it: -EINVAL
     * without; ignored by the other policies): ra_future(ctx, ino, page)
     * is nonzero if a later read will ask for 4 KiB page `page` of inode
     * ino -- a benchmark that knows its trace answers it.  Called with the
     * mount lock held; must not call into the mount. */
    int (*ra_future)(void *ra_future_ctx, ubj_ino_t ino, uint64_t page);
    void *ra_future_ctx;
    /* An image not unmounted cleanly from a mode that promises metadata
     * integrity only (UBJ_MODE_META_INTEGRITY, include/ubjfs/mode.h; it may
     * hold leaked blocks and inodes), at a read-write mount
     * (src/fs/reclaim.c): UBJ_UNCLEAN_* below. */
    unsigned unclean;
};
/* UBJ_UNCLEAN_DEFAULT (0): reclaim the leaks through fsck's full
 * reachability pass before going read-write (a check, then, if it found
 * leaks only, a repair; corruption: the mount comes up read-only with the
 * reason, as UBJ_MOUNT_SCRUB); statfs is right at once.  Other modes:
 * nothing (their own recovery). */
#define UBJ_UNCLEAN_DEFAULT 0u
/* As DEFAULT, and the same pass after a crash of a mode that keeps nothing
 * beside the image and promises nothing (none); ignored for modes with a
 * log or an NVM region. */
#define UBJ_UNCLEAN_RECLAIM 1u
/* An integrity-only mode's unclean image: a read-write mount fails with
 * -EUCLEAN until `fsck -y` (read-only mounts are allowed). */
#define UBJ_UNCLEAN_REFUSE  2u
/* (Re)initialise the region (--format-nvm): refused with -EBUSY while it
 * holds committed blocks not yet written home. */
#define UBJ_NVM_FORMAT 0x1u

struct ubj_fs;

/*
 * ubj_mount -- mount the file system on `dev` (which the mount does not
 * own: destroy it after ubj_unmount).  cfg may be NULL for defaults.
 * Returns 0 and *out, or -EINVAL (bad config, unknown mode), -EUCLEAN
 * (corrupt or foreign image: bad magic, checksum, geometry), -EFBIG (image
 * larger than the device: truncated), -EBUSY (`dev` is mounted already:
 * one mount per device object; a second process is kept out by opening
 * the image with UBJ_BDEV_EXCL), -EROFS, -ENOMEM, -EIO.  The message
 * names the problem in one line.  An unclean image of an integrity-only
 * mode: its leaks reclaimed first, or -EUCLEAN with UBJ_UNCLEAN_REFUSE
 * (ubj_config.unclean).
 * A structure that is readable but wrong (a block bitmap that marks
 * metadata free or disagrees with the free counts of a cleanly unmounted
 * image, an orphan list that is not what an unmount or crash leaves, a
 * problem -o scrub or the leak reclaim finds: docs/GUARANTEES.md) does
 * not fail the mount: it
 * returns 0 read-only (writers get -EROFS; ERRORS is recorded in the
 * superblock) with the reason in ubj_errormsg() and ubj_fs_error().
 */
int ubj_mount(struct ubj_bdev *dev, const struct ubj_config *cfg,
              struct ubj_fs **out);

/*
 * ubj_fs_error -- the mount's sticky error: 0 while it is healthy, else
 * the negative errno (-EUCLEAN: corruption found; -EIO) that turned it
 * read-only.  With msg (len bytes, NUL-terminated, truncated), the reason
 * when mount found it, "" when healthy, and a pointer to the failed
 * operation's own error otherwise.  Returns -EINVAL for a NULL fs.  Takes
 * the mount lock; thread-safe.
 */
int ubj_fs_error(struct ubj_fs *fs, char *msg, size_t len);

/*
 * ubj_unmount -- commit, write back every dirty buffer, flush the device
 * and free the mount.  Files still open are closed (their orphans freed),
 * and every struct ubj_file of the mount is freed (ubj_file_close of one
 * afterwards is -EBADF).
 * Returns 0 or the first error seen (-EIO); the mount is freed either way.
 */
int ubj_unmount(struct ubj_fs *fs);

/* ---- attributes -------------------------------------------------------- */

struct ubj_stat {
    ubj_ino_t ino;
    uint32_t mode;        /* S_IFMT | permission bits */
    uint32_t nlink;
    uint32_t uid, gid;
    uint64_t rdev;
    uint64_t size;        /* bytes */
    uint64_t blocks;      /* 512-byte units allocated (st_blocks) */
    uint32_t blksize;     /* 4096 */
    uint64_t generation;
    struct timespec atime, mtime, ctime, crtime;
};

/* ubj_stat_to_posix -- copy into a struct stat (st_dev = 0). */
struct stat;
void ubj_stat_to_posix(const struct ubj_stat *in, struct stat *out);

/* Which fields ubj_setattr changes (FUSE_SET_ATTR_* have the same roles). */
#define UBJ_SET_MODE      0x01u
#define UBJ_SET_UID       0x02u
#define UBJ_SET_GID       0x04u
#define UBJ_SET_SIZE      0x08u
#define UBJ_SET_ATIME     0x10u
#define UBJ_SET_MTIME     0x20u
#define UBJ_SET_ATIME_NOW 0x40u
#define UBJ_SET_MTIME_NOW 0x80u
#define UBJ_SET_CTIME     0x100u
/* clear S_ISUID, and S_ISGID when group-executable (Linux's ATTR_KILL_SUID
 * and ATTR_KILL_SGID; FUSE's FATTR_KILL_SUIDGID: a truncate by a caller
 * without CAP_FSETID) */
#define UBJ_SET_KILL_SUIDGID 0x200u

struct ubj_setattr {
    unsigned valid;       /* UBJ_SET_* */
    uint32_t mode;        /* permission bits only (07777); type is kept */
    uint32_t uid, gid;
    uint64_t size;        /* bytes; truncate or extend (sparse) */
    struct timespec atime, mtime, ctime;
};

struct ubj_cred { uint32_t uid, gid; };  /* owner of new inodes; NULL = 0:0 */

/* ubj_getattr -- attributes of `ino`.  -ENOENT if it is not in use. */
int ubj_getattr(struct ubj_fs *fs, ubj_ino_t ino, struct ubj_stat *st);

/*
 * ubj_setattr -- chmod/chown/truncate/utimens (POSIX chmod(), chown(),
 * truncate(), utimensat()).  ctime is set to now for any change; a size
 * change also sets mtime.  chown clears S_ISUID/S_ISGID on regular files,
 * and UBJ_SET_KILL_SUIDGID does so for any change.  A chown or a size
 * change of a regular file also removes its security.capability
 * attribute (Linux's security_inode_killpriv(), which notify_change()
 * runs for ATTR_KILL_PRIV), as ubj_pwrite does.
 * Returns 0 and the new attributes in *st (may be NULL); -ENOENT; -EISDIR
 * (size on a directory); -EINVAL (size on a non-regular file); -EFBIG
 * (size > UBJ_MAX_FILE_SIZE); -ENOSPC; -EROFS; -EIO.
 */
int ubj_setattr(struct ubj_fs *fs, ubj_ino_t ino, const struct ubj_setattr *sa,
                struct ubj_stat *st);

/* ---- namespace --------------------------------------------------------- */

/*
 * ubj_lookup -- the inode named `name` in directory `parent`; "." and ".."
 * are resolved.  Returns 0 and *st; -ENOENT; -ENOTDIR (parent not a
 * directory); -ENAMETOOLONG; -EINVAL (empty name or containing '/').
 */
int ubj_lookup(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
               struct ubj_stat *st);

/*
 * ubj_mknod -- create a node of type mode & S_IFMT (S_IFREG, S_IFIFO,
 * S_IFCHR, S_IFBLK, S_IFSOCK; S_IFREG if 0) in `parent` (POSIX mknod()).
 * A new inode inherits the parent's gid when the parent has S_ISGID.
 * Returns 0 and *st (may be NULL); -EEXIST (name in use, any type);
 * -ENOENT (parent gone); -ENOTDIR; -ENAMETOOLONG; -EINVAL (bad name or
 * type); -EPERM (S_IFDIR: use ubj_mkdir, as Linux's may_mknod());
 * -ENOSPC (no inode or block); -EMLINK; -EROFS; -EIO.
 */
int ubj_mknod(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
              uint32_t mode, uint64_t rdev, const struct ubj_cred *cred,
              struct ubj_stat *st);

/* ubj_create -- ubj_mknod of a regular file (open(O_CREAT|O_EXCL)). */
int ubj_create(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
               uint32_t mode, const struct ubj_cred *cred, struct ubj_stat *st);

/* ubj_mkdir -- POSIX mkdir(); errors as ubj_mknod, plus -EMLINK when the
 * parent's link count would overflow. */
int ubj_mkdir(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
              uint32_t mode, const struct ubj_cred *cred, struct ubj_stat *st);

/*
 * ubj_unlink -- remove a non-directory name (POSIX unlink()).  The inode is
 * freed at its last link and last close.  -ENOENT; -EISDIR (a directory,
 * or "." / "..": Linux's errors); -ENOTDIR; -EROFS; -EIO.
 */
int ubj_unlink(struct ubj_fs *fs, ubj_ino_t parent, const char *name);

/*
 * ubj_rmdir -- remove an empty directory (POSIX rmdir()).  -ENOENT;
 * -ENOTDIR (not a directory); -ENOTEMPTY; -EINVAL (name "."); -EBUSY
 * (the root); -ENOTEMPTY for ".." (Linux); -EROFS; -EIO.
 */
int ubj_rmdir(struct ubj_fs *fs, ubj_ino_t parent, const char *name);

#define UBJ_RENAME_NOREPLACE 0x1u  /* renameat2 RENAME_NOREPLACE */
#define UBJ_RENAME_EXCHANGE  0x2u  /* renameat2 RENAME_EXCHANGE */

/*
 * ubj_rename -- rename(2)/renameat2(2).  Atomic with respect to every
 * other operation of this mount.  Replacing: a file over a file, an empty
 * directory over an empty directory.  Renaming a name onto a hard link of
 * the same inode does nothing and returns 0.
 * Returns 0; -ENOENT (old missing); -EEXIST (NOREPLACE and new exists);
 * -ENOTEMPTY (new is a non-empty directory); -EISDIR (old a file, new a
 * directory); -ENOTDIR (old a directory, new not); -EINVAL (moving a
 * directory into itself or a descendant, both flags, a bad flag); -EBUSY
 * ("." or ".." as either name, as Linux); -ENOENT (EXCHANGE and new
 * missing); -EMLINK; -EROFS; -EIO.
 */
int ubj_rename(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
               ubj_ino_t newparent, const char *newname, unsigned flags);

/*
 * ubj_link -- a hard link `newname` in `newparent` to `ino` (POSIX link()).
 * -EPERM (ino is a directory); -EEXIST; -EMLINK (65000 links); -ENOENT
 * (ino unlinked: nlink 0); other errors as ubj_mknod.
 */
int ubj_link(struct ubj_fs *fs, ubj_ino_t ino, ubj_ino_t newparent,
             const char *newname, struct ubj_stat *st);

/*
 * ubj_symlink -- create symlink `name` in `parent` pointing at `target`
 * (1..4095 bytes, any bytes but NUL).  -ENAMETOOLONG (target too long);
 * -ENOENT (empty target); other errors as ubj_mknod.
 */
int ubj_symlink(struct ubj_fs *fs, const char *target, ubj_ino_t parent,
                const char *name, const struct ubj_cred *cred,
                struct ubj_stat *st);

/*
 * ubj_readlink -- copy the target of symlink `ino` into buf (not
 * NUL-terminated, truncated to size as readlink(2)).  Returns the number of
 * bytes copied; -EINVAL (not a symlink); -ENOENT; -EIO.
 */
ssize_t ubj_readlink(struct ubj_fs *fs, ubj_ino_t ino, char *buf, size_t size);

/*
 * ubj_readdir -- list directory `ino` from position `cookie` (0 = start).
 * For each entry, `fill` is called with its name (not NUL-terminated),
 * inode, type (DT_* of <dirent.h>) and the cookie that resumes after it;
 * returning non-zero stops the listing.  "." and ".." come first.  Cookies
 * are stable: an entry present for the whole listing is returned exactly
 * once however many entries are created or removed in between (they are
 * hash keys, as ext4's htree telldir cookies).  Returns 0; -ENOTDIR;
 * -ENOENT; -EIO.  `fill` must not call back into this mount.
 */
typedef int (*ubj_filldir_t)(void *ctx, const char *name, size_t namelen,
                             ubj_ino_t ino, unsigned type, uint64_t next_cookie);
int ubj_readdir(struct ubj_fs *fs, ubj_ino_t ino, uint64_t cookie,
                ubj_filldir_t fill, void *ctx);

/* ---- files ------------------------------------------------------------- */

/*
 * ubj_open -- take an open reference on `ino` (any type).  An inode with
 * open references outlives its last unlink until ubj_release.  With
 * O_TRUNC on a regular file, truncates it to 0.  Returns 0; -ENOENT;
 * -EISDIR (O_WRONLY/O_RDWR on a directory); -EROFS.
 */
int ubj_open(struct ubj_fs *fs, ubj_ino_t ino, int flags);

/* ubj_release -- drop an open reference; frees an unlinked inode at zero.
 * Returns 0, -EINVAL (no reference held), -EIO. */
int ubj_release(struct ubj_fs *fs, ubj_ino_t ino);

/*
 * ubj_pread -- read up to `size` bytes at `off` (POSIX pread()).  Holes
 * read as zeros.  Returns the bytes read (0 at or past EOF); -EISDIR;
 * -EINVAL (negative offset, not a regular file); -ENOENT; -EIO.
 */
ssize_t ubj_pread(struct ubj_fs *fs, ubj_ino_t ino, void *buf, size_t size,
                  off_t off);

/*
 * ubj_seek_data, ubj_seek_hole -- lseek(2) SEEK_DATA and SEEK_HOLE on a
 * regular file, from its extent map (no data block is read; the cost is
 * one tree lookup per run of data or hole crossed).  Granularity is the
 * 4 KiB block: a hole is a run of blocks with nothing mapped, and blocks
 * preallocated by ubj_fallocate but not yet written (unwritten extents,
 * which read as zeros) are holes too, as ext4 reports them; the end of the
 * file is a hole, so ubj_seek_hole returns at most the size.
 *   ubj_seek_data: the smallest offset >= off that is data (off itself
 *     when off is in data).
 *   ubj_seek_hole: the smallest offset >= off in a hole (off itself when
 *     off is in one), or the size.
 * Returns that offset; -ENXIO when off < 0 or off >= the size, and from
 * ubj_seek_data when only holes remain after off (Linux's answers);
 * -EISDIR; -EINVAL (not a regular file); -ENOENT; -EUCLEAN (a corrupt
 * extent tree); -EIO.  Reads only: never changes atime.  Thread-safe
 * (takes the mount lock).
 */
off_t ubj_seek_data(struct ubj_fs *fs, ubj_ino_t ino, off_t off);
off_t ubj_seek_hole(struct ubj_fs *fs, ubj_ino_t ino, off_t off);

/*
 * ubj_pwrite -- write `size` bytes at `off` (POSIX pwrite()); extends the
 * file, leaving holes unallocated.  Clears S_ISUID (and S_ISGID if group
 * executable) like Linux's file_remove_privs().  A large write runs as
 * several transactions (one per eighth of the cache, like ext4's
 * per-page-range handles): a crash in the middle may keep a prefix of it.
 * Returns the bytes written (a short count if the device fills or fails
 * after some bytes); -ENOSPC (nothing
 * written); -EFBIG (off at or beyond UBJ_MAX_FILE_SIZE); -EISDIR;
 * -EINVAL; -ENOENT; -EROFS; -EIO.
 */
ssize_t ubj_pwrite(struct ubj_fs *fs, ubj_ino_t ino, const void *buf,
                   size_t size, off_t off);

/*
 * ubj_fsync -- make `ino`'s data and attributes durable (POSIX fsync();
 * datasync != 0: fdatasync()).  What it costs depends on the consistency
 * mode (docs/DESIGN.md).  Returns 0; -ENOENT; -EIO.
 */
int ubj_fsync(struct ubj_fs *fs, ubj_ino_t ino, int datasync);

/* ubj_sync -- make everything durable (sync(2)).  0 or -EIO. */
int ubj_sync(struct ubj_fs *fs);

/*
 * ubj_tick -- do once what the background timer does every
 * commit_interval_ms: commit the running transaction if it is old enough
 * and let the mode write back / checkpoint (Linux: the jbd2 commit timer
 * and the flusher thread).  For mounts with UBJ_MOUNT_NO_TIMER that keep
 * their own (e.g. virtual) time: the caller decides when a tick is due.
 * Returns 0, -EINVAL (fs NULL), -EIO.  Takes the mount lock; thread-safe.
 * The caller waits for the tick's device I/O: on a timed device model
 * (ubjfs/model.h) its requests are time-critical and it waits on the
 * clock for them, as a foreground caller does.
 */
int ubj_tick(struct ubj_fs *fs);

#define UBJ_TICK_BACKGROUND 0x1u  /* nobody waits for the tick's I/O */

/*
 * ubj_tick_flags -- ubj_tick with `flags`: 0 is ubj_tick;
 * UBJ_TICK_BACKGROUND does what the mount's own timer thread does -- its
 * device requests are time-noncritical and submitted asynchronously, and
 * the call returns once they have completed without waiting on a timed
 * model's clock (they occupy the device, later requests queue behind
 * them, but the caller is charged no device time: ubjfs/bdev.h,
 * ubj_bdev_write_crit).  For a harness that drives the timer itself on a
 * virtual clock.  Returns as ubj_tick, or -EINVAL for an unknown flag.
 * Takes the mount lock; thread-safe.
 */
int ubj_tick_flags(struct ubj_fs *fs, unsigned flags);

struct ubj_statfs {
    uint32_t bsize;        /* 4096 */
    uint64_t blocks;       /* data-capable blocks in the image */
    uint64_t bfree;        /* free blocks */
    uint64_t bavail;       /* free blocks for unprivileged users (= bfree) */
    uint64_t files;        /* inodes */
    uint64_t ffree;        /* free inodes */
    uint32_t namemax;      /* UBJ_NAME_MAX */
    uint8_t uuid[16];
};
/* ubj_statfs_get -- statfs(2).  Returns 0. */
int ubj_statfs_get(struct ubj_fs *fs, struct ubj_statfs *out);

/* ---- extended attributes (src/fs/xattr.c) ------------------------------ */

/*
 * Names are "user.X", "trusted.X" or "security.X" (X: 1 or more bytes, the
 * whole name 1..255 bytes); any other namespace ("system." included) is
 * -EOPNOTSUPP, as on a Linux file system without ACL support.  Values are
 * any bytes.  All of an inode's names and values share one 4 KiB block:
 * each attribute takes 4 + strlen(X) + value size bytes, rounded up to a
 * multiple of 4, and together they must fit in 4064 bytes (so one value is
 * at most 4059 bytes, with a 1-byte name; docs/FORMAT.md).  As on Linux,
 * user.* attributes exist only on regular files and directories.
 * Permission checks (trusted.* needs CAP_SYS_ADMIN, user.* needs write
 * permission) are the caller's job, as for every other call.
 */
#define UBJ_XATTR_CREATE  0x1   /* = XATTR_CREATE: fail if it exists */
#define UBJ_XATTR_REPLACE 0x2   /* = XATTR_REPLACE: fail if it does not */
#define UBJ_XATTR_NAME_MAX 255u
#define UBJ_XATTR_SIZE_MAX 65536u  /* Linux's XATTR_SIZE_MAX */

/*
 * ubj_getxattr -- getxattr(2): copy the value of `name` into value.  With
 * size 0, only its length is returned.  Returns the value's length;
 * -ENODATA (no such attribute); -ERANGE (size too small, or a name that
 * is empty or longer than 255 bytes); -EOPNOTSUPP (namespace); -EINVAL
 * (nothing after the prefix); -ENOENT; -EUCLEAN; -EIO.
 */
ssize_t ubj_getxattr(struct ubj_fs *fs, ubj_ino_t ino, const char *name,
                     void *value, size_t size);

/*
 * ubj_setxattr -- setxattr(2): create or replace `name` (flags:
 * UBJ_XATTR_CREATE / UBJ_XATTR_REPLACE, or 0 for either); sets ctime.
 * Returns 0; -EEXIST (CREATE and it exists); -ENODATA (REPLACE and it
 * does not); -E2BIG (size > UBJ_XATTR_SIZE_MAX); -ENOSPC (the inode's
 * attributes would not fit in their block, or no free block); -EPERM
 * (user.* on a file that is neither regular nor a directory); -EINVAL (bad
 * flags, nothing after the prefix); -ERANGE (name length); -EOPNOTSUPP;
 * -ENOENT; -EROFS; -EUCLEAN; -EIO.
 */
int ubj_setxattr(struct ubj_fs *fs, ubj_ino_t ino, const char *name,
                 const void *value, size_t size, int flags);

/*
 * ubj_listxattr -- listxattr(2): every name, each NUL-terminated, one
 * after the other (sorted by namespace, then name).  With size 0, only
 * the length needed is returned.  Returns that length; -ERANGE (size too
 * small); -ENOENT; -EUCLEAN; -EIO.
 */
ssize_t ubj_listxattr(struct ubj_fs *fs, ubj_ino_t ino, char *list, size_t size);

/*
 * ubj_removexattr -- removexattr(2); sets ctime; the last removal frees
 * the block.  Returns 0; -ENODATA; -EOPNOTSUPP; -ERANGE; -EINVAL;
 * -ENOENT; -EROFS; -EUCLEAN; -EIO.
 */
int ubj_removexattr(struct ubj_fs *fs, ubj_ino_t ino, const char *name);

/* ---- preallocation (src/fs/falloc.c) ----------------------------------- */

#define UBJ_FALLOC_KEEP_SIZE 0x01  /* = FALLOC_FL_KEEP_SIZE */

/*
 * ubj_fallocate -- fallocate(2) modes 0 and FALLOC_FL_KEEP_SIZE: every hole
 * in [off, off + len) gets blocks, recorded as unwritten extents (they read
 * as zeros and cost no data write); blocks already mapped are kept.  Mode
 * 0 extends the size to off + len if that is larger (and sets mtime);
 * ctime is set either way.  With KEEP_SIZE, blocks past the end of the
 * file stay allocated until a truncate.  The range is allocated in several
 * transactions: after -ENOSPC what was allocated so far stays (with mode
 * 0, the size covers it), as ext4 does.  Returns 0; -EOPNOTSUPP (any other
 * mode bit: punch hole, zero, collapse, insert range); -EINVAL (off < 0,
 * len <= 0); -EFBIG (off + len beyond UBJ_MAX_FILE_SIZE); -EISDIR;
 * -ENODEV (not a regular file); -ENOSPC; -ENOENT; -EROFS; -EIO.
 */
int ubj_fallocate(struct ubj_fs *fs, ubj_ino_t ino, int mode, off_t off,
                  off_t len);

/* ---- open files (src/fs/ofile.c) --------------------------------------- */

/*
 * struct ubj_file -- one open file description (POSIX: what open(2)
 * makes and close(2) ends; what dup(2) would share), beside the
 * inode-number calls above, which stay: a ubj_file holds one ubj_open
 * reference on its inode, its access mode, and the per-open-file state
 * POSIX gives to an open file description -- the read-ahead policy hint
 * of ubj_fadvise, and the stream state the read-ahead engine of issue 19
 * (item 3) will keep there.  With `ubjfs mount -o file_handles` FUSE
 * carries one per OPEN in fi->fh (docs/DESIGN.md, "Open files").  Opaque.
 *
 * Life: ubj_file_open -> any number of ubj_file_pread / ubj_file_pwrite /
 * ubj_fadvise -> ubj_file_close (or ubj_unmount, which closes every file
 * of the mount still open: their objects are freed).  After ubj_file_close
 * or the unmount, the pointer is dead: ubj_file_close of it again returns
 * -EBADF (the library keeps the set of live files, so it never follows a
 * dead pointer there), but any other call with it is undefined, as a
 * file descriptor number used after close(2) may name another file.
 *
 * Thread-safety: every call may run in several threads at once, on one
 * file as on several; ubj_file_close must not run while another call on
 * the same file is in progress (as close(2) of a descriptor in use).
 */
struct ubj_file;

/* The advice of ubj_fadvise (the values of POSIX_FADV_*, Linux's). */
#define UBJ_FADV_NORMAL     0  /* no hint: the mount's read-ahead policy */
#define UBJ_FADV_RANDOM     1  /* random access: read ahead nothing */
#define UBJ_FADV_SEQUENTIAL 2  /* sequential: a larger read-ahead window */
#define UBJ_FADV_WILLNEED   3  /* read the range into the cache now */
#define UBJ_FADV_DONTNEED   4  /* drop the range's clean cached blocks */

/*
 * ubj_file_open -- open `ino` (any type ubj_open opens) as a new open file
 * description: takes one ubj_open reference (so an unlinked inode lives
 * until the last close), and O_TRUNC truncates a regular file, as
 * ubj_open.  flags: the access mode (O_RDONLY, O_WRONLY, O_RDWR) decides
 * which of ubj_file_pread and ubj_file_pwrite it allows; other flags are
 * passed to ubj_open, which looks at O_TRUNC only (O_APPEND is not kept:
 * ubj_file_pwrite writes at the offset it is given, as FUSE's kernel
 * sends them).  The read-ahead hint starts as UBJ_FADV_NORMAL.
 * Returns 0 and *out; -EINVAL (fs or out NULL, or an access mode of 3);
 * ubj_open's errors (-ENOENT, -EISDIR, -EROFS, -ENOSPC, -EIO); -ENOMEM.
 * Thread-safe (ubj_open takes the mount lock; then the library's lock of
 * its set of live files).
 */
int ubj_file_open(struct ubj_fs *fs, ubj_ino_t ino, int flags,
                  struct ubj_file **out);

/*
 * ubj_file_close -- end the open file description: drops its ubj_open
 * reference (the last close of an unlinked inode frees it, as
 * ubj_release) and frees the object, whatever the result.  Returns 0;
 * -EBADF (NULL, already closed, or closed by ubj_unmount: nothing is
 * touched); ubj_release's -EIO (the object is freed all the same, as
 * close(2) frees the descriptor on EIO).  Thread-safe, but see above.
 */
int ubj_file_close(struct ubj_file *file);

/*
 * ubj_file_pread -- pread(2) through an open file: ubj_pread of its inode
 * (holes read as zeros, relatime), with the file's own read-ahead stream
 * and advice (ubj_pread by inode number uses the inode's default stream).  Returns the bytes read (0 at or past
 * EOF); -EBADF (NULL, or opened O_WRONLY); ubj_pread's errors.
 */
ssize_t ubj_file_pread(struct ubj_file *file, void *buf, size_t size, off_t off);

/*
 * ubj_file_pwrite -- pwrite(2) through an open file: ubj_pwrite of its
 * inode at `off`.  Returns the bytes written; -EBADF (NULL, or opened
 * O_RDONLY); ubj_pwrite's errors.
 */
ssize_t ubj_file_pwrite(struct ubj_file *file, const void *buf, size_t size,
                        off_t off);

/*
 * ubj_fadvise -- posix_fadvise(2) on [off, off + len) (len 0: to the end
 * of the file), per open file description, with Linux's semantics
 * (mm/fadvise.c) where ubjfs has the object:
 *   UBJ_FADV_NORMAL, _SEQUENTIAL, _RANDOM: set this open file's read-ahead
 *     hint (ubj_file_advice); the range is ignored.  Under the window
 *     policies (ubj_config.readahead linux, linux-2013) the file's stream
 *     follows it from its next read: NORMAL the mount's window, SEQUENTIAL
 *     twice that, RANDOM no window (a miss reads exactly the call's
 *     pages), as Linux's ra_pages and FMODE_RANDOM; under off and
 *     off-page nothing reads ahead and the hint changes no read.
 *   UBJ_FADV_WILLNEED: read the range's mapped blocks ahead into the cache
 *     now, synchronously, each physically contiguous stretch of missing
 *     blocks as one device request (holes and unwritten extents read
 *     nothing), clipped at the end of the file and to half the cache
 *     (ubj_config.cache_blocks / 2 blocks: more would evict its own first
 *     blocks), whatever the policy.  As all read-ahead it takes only free
 *     or clean unreferenced buffers -- never writes a dirty one home, asks
 *     for no commit or reclaim -- and stops when none is left; its blocks
 *     count in ubj_fs_stats' ra_* counters.  A device error stops it and
 *     is not returned (the read that needs the block reports it), as
 *     Linux.
 *   UBJ_FADV_DONTNEED: drop the range's cached blocks that are clean and
 *     unreferenced -- whole blocks only, except the file's last block
 *     when the range reaches the end of the file, as Linux keeps partial
 *     pages.  Dirty, frozen (mode ubj) and referenced blocks stay; unlike
 *     Linux it starts no write-back of dirty ones (writing home is the
 *     consistency mode's decision).
 * On a file that is not regular (a directory, symlink, device node or
 * socket) the hints are stored and WILLNEED and DONTNEED do nothing, but
 * WILLNEED and DONTNEED of a FIFO are -ESPIPE, as Linux (which refuses
 * the hints there too; ubj_file keeps no file type to do so).  Returns 0; -EBADF (NULL); -EINVAL (unknown
 * advice, off < 0 or len < 0); -ESPIPE; -ENOENT and -EIO from reading
 * the inode and its extent map (WILLNEED, DONTNEED).  atime is not
 * changed.  Thread-safe (WILLNEED and DONTNEED take the mount lock).
 * FUSE forwards no fadvise to a file system: through a mount, only the
 * kernel's page cache follows a program's posix_fadvise.
 */
int ubj_fadvise(struct ubj_file *file, off_t off, off_t len, int advice);

/*
 * ubj_file_advice -- this open file's read-ahead hint: UBJ_FADV_NORMAL,
 * UBJ_FADV_SEQUENTIAL or UBJ_FADV_RANDOM (the last set by ubj_fadvise);
 * -EBADF for NULL.  Lock-free, thread-safe.
 */
int ubj_file_advice(const struct ubj_file *file);

/* ubj_file_ino -- the inode this file is open on (0 for NULL). */
ubj_ino_t ubj_file_ino(const struct ubj_file *file);

/* ---- path helpers (tools, tests) --------------------------------------- */

#define UBJ_PATH_NOFOLLOW 0x1u  /* do not follow a symlink in the last component */

/*
 * ubj_path_lookup -- resolve an absolute path ("/a/b"; "/" is the root;
 * repeated '/' allowed) following symlinks in every component but the last
 * when UBJ_PATH_NOFOLLOW.  Returns 0 and *st; -ENOENT; -ENOTDIR; -ELOOP
 * (more than 40 symlinks); -ENAMETOOLONG; -EINVAL (relative path); -ENOENT for "" (as
 * Linux's path walk).
 */
int ubj_path_lookup(struct ubj_fs *fs, const char *path, unsigned flags,
                    struct ubj_stat *st);

/*
 * ubj_path_parent -- resolve all of `path` but its last component:
 * *parent gets the directory's inode and *name points into `path` at the
 * last component (which may be followed by '/').  Errors as
 * ubj_path_lookup; -EINVAL for "/".
 */
int ubj_path_parent(struct ubj_fs *fs, const char *path, ubj_ino_t *parent,
                    const char **name);

/* ---- statistics -------------------------------------------------------- */

struct ubj_fs_stats {
    uint64_t cache_hits, cache_misses;   /* buffer lookups */
    uint64_t cache_evictions;            /* buffers reused */
    uint64_t writeback_blocks;           /* blocks written home by the cache */
    uint64_t bytes_data, bytes_metadata; /* storage bytes written, by category */
    uint64_t bytes_journal, bytes_checkpoint;
    uint64_t commits, checkpoints;
    uint64_t dev_flushes;                /* flush requests to the device */
    /* mode ubj (zero otherwise; docs/UBJ.md) */
    uint64_t nvm_bytes;                  /* bytes persisted to the NVM region */
    uint64_t nvm_persists;               /* persistence points (flush + drain) */
    uint64_t cow_copies;                 /* frozen buffers copied on write */
    uint64_t recovered_blocks;           /* committed blocks kept by recovery */
    uint64_t recovery_ns;                /* time of the mount's recovery */
    uint64_t nvm_model_ns;               /* NVM time charged by nvm_profile */
    double nvm_model_energy_j;           /* NVM energy charged by nvm_profile */
    /* Device waits, ns on the mount's clock (ubj_config.now, else
     * CLOCK_REALTIME): reads a cache miss waited for with the mount lock
     * held -- every other operation waits meanwhile -- or released
     * (docs/DESIGN.md, "Device reads outside the mount lock"), and dirty
     * blocks the cache wrote home, the lock held, to free a buffer (the
     * whole write over a request queue; without one only its submission:
     * such a victim is not waited for). */
    uint64_t read_wait_locked_ns, read_wait_unlocked_ns;
    uint64_t victim_wait_ns;
    /* read-ahead (policies linux, linux-2013; docs/READAHEAD.md) */
    uint64_t ra_blocks;                  /* blocks read ahead */
    uint64_t ra_requests;                /* device requests that read them */
    uint64_t ra_used;                    /* ... of those blocks, read by a call
                                            before they left the cache */
    uint64_t ra_unused;                  /* ... evicted or dropped unread */
    uint64_t ra_late;                    /* reads that found a block still
                                            being read ahead, or read ahead
                                            asynchronously but not ready on
                                            the clock, and waited */
    uint64_t ra_unused_bytes;            /* ra_unused x 4096 */
    double ra_energy_j;                  /* the device model's active energy
                                            of the read-ahead requests (0
                                            without a model) */
    double ra_unused_energy_j;           /* its share of the unused blocks:
                                            ra_energy_j x ra_unused / ra_blocks */
    uint64_t ra_async_requests;          /* of ra_requests, the asynchronous
                                            windows (time-limited, not waited
                                            for by their submitter) */
    uint64_t ra_late_wait_ns;            /* clock time late hits waited for an
                                            asynchronous window's ready time */
};
/*
 * ubj_privs_killed -- how many times since mount a write, fallocate,
 * chown or UBJ_SET_KILL_SUIDGID cleared set-id bits (a file's mode changed
 * without a chmod).  Lock-free, thread-safe; 0 for NULL.  The FUSE
 * frontend compares it around a write to know when the kernel's cached
 * mode went stale (fuse_lowlevel_notify_inval_inode).
 */
uint64_t ubj_privs_killed(struct ubj_fs *fs);

/* ubj_fs_stats_get -- counters since mount. */
void ubj_fs_stats_get(struct ubj_fs *fs, struct ubj_fs_stats *out);

/*
 * ubj_drop_caches -- drop every cached block that is clean, unreferenced,
 * idle and the only version of its block, as Linux's `echo 1 >
 * /proc/sys/vm/drop_caches` without the sync: dirty and frozen blocks
 * stay (sync first to drop more).  For benchmarks that want a cold cache
 * without a remount (bench readahead's SQLite queries).  Returns 0, or
 * -EINVAL for NULL.  Thread-safe (takes the mount lock).
 */
int ubj_drop_caches(struct ubj_fs *fs);

/* ---- check and repair (fsck; src/fs/check.c) --------------------------- */

#define UBJ_CHECK_REPAIR 0x1u   /* fix what is found (fsck -y) */
/* With UBJ_CHECK_REPAIR: an image that was not unmounted cleanly from mode
 * ubj is repaired although its NVM region is not overlaid -- the region's
 * committed blocks that never reached the image are given up (fsck -y
 * --discard-nvm, for a lost region).  Without it such a repair is refused
 * (UBJ_CHECK_OPERROR): mount the pair first, which recovers them. */
#define UBJ_CHECK_DISCARD_NVM 0x2u

/* Result codes, as e2fsck's exit status. */
#define UBJ_CHECK_CLEAN       0
#define UBJ_CHECK_REPAIRED    1
#define UBJ_CHECK_UNCORRECTED 4
#define UBJ_CHECK_OPERROR     8

/*
 * ubj_nvm_overlay_create -- the recovered read-only view of an image and
 * its NVM region (src/fs/view.c): a block device that serves each block
 * from the newest committed version in the region at `region_path` (as
 * recovery would keep it), else from `image`, which it wraps (and owns
 * once this succeeds).  The region is opened read-only and must belong to
 * the image (the uuid in image block 0); writes fail with -EROFS.  Lets
 * ubj_check run unchanged on a pair (ubj_nvm_is_view tells it is one).
 * Returns 0 and *out; the errors of ubj_nvm_attach; -EUCLEAN (no ubjfs
 * superblock); -ENOMEM.
 */
int ubj_nvm_overlay_create(struct ubj_bdev *image, const char *region_path,
                           struct ubj_bdev **out);

/*
 * ubj_check -- check the unmounted image on `dev`: superblock, bitmaps
 * against reachability, link counts, directory structure ('.'/'..'),
 * blocks used twice, sizes against extents, checksums; the superblock's
 * free counts only on a cleanly unmounted image (a mount writes them
 * lazily and recounts them after a crash, as ext4 does).  Each problem is
 * reported as one line through `report(ctx, line)` (NULL: stderr).
 * flags: UBJ_CHECK_REPAIR, UBJ_CHECK_DISCARD_NVM; others are -EINVAL
 * (UBJ_CHECK_OPERROR with a line saying so).
 * Returns a UBJ_CHECK_* code (never negative): CLEAN, REPAIRED (with
 * UBJ_CHECK_REPAIR and all fixed), UNCORRECTED (problems left), OPERROR
 * (cannot read the image, or not a ubjfs image).  Not thread-safe with
 * respect to a mount of the same device.  Source: e2fsck passes 1-5.
 */
int ubj_check(struct ubj_bdev *dev, unsigned flags,
              void (*report)(void *ctx, const char *line), void *ctx);

/*
 * What ubj_check_ex found.  A *leak* loses only space: a block or inode
 * marked in use that nothing in use holds, an unreachable inode that
 * names nothing (and its blocks), a link count above the names, directory
 * counters at or above what the tree holds, a wrong superblock free count -- what an integrity-only mode
 * (UBJ_MODE_META_INTEGRITY, include/ubjfs/mode.h) may leave after a
 * crash; its report line starts "leak: ".  Everything else is
 * *corruption* (a name to a free inode, a block in two files, an in-use
 * block or inode marked free, a link count below the names, a damaged
 * tree).  A bitmap run is one problem however many bits it has.
 */
struct ubj_check_result {
    unsigned long problems;      /* problems found (lines that are neither
                                    notes nor repair failures; bitmap runs
                                    past the reported ones included) */
    unsigned long leaks;         /* of which leaks */
    unsigned long corrupt;       /* of which corruption: problems - leaks */
    unsigned long unfixed;       /* problems left (all of them without
                                    UBJ_CHECK_REPAIR), repair failures too */
    unsigned long notes;         /* "note: " lines (not problems) */
    uint64_t leaked_blocks;      /* blocks the leaks hold: bits set for
                                    free blocks, blocks of leaked inodes */
    uint64_t leaked_inodes;      /* inodes the leaks hold: bits set for free
                                    inodes, unreachable inodes */
    int fatal;                   /* 1: the check stopped (UBJ_CHECK_OPERROR):
                                    the counts are of what it saw so far */
};

/*
 * ubj_check_ex -- ubj_check, and (res not NULL) the counts of what it
 * found in *res, so that a caller tells "only leaks" (corrupt == 0,
 * leaks > 0) from corruption without reading the lines.  The result code
 * is ubj_check's (UNCORRECTED for leaks left as for corruption: e2fsck's
 * meaning).  Same errors and thread-safety as ubj_check.
 */
int ubj_check_ex(struct ubj_bdev *dev, unsigned flags,
                 void (*report)(void *ctx, const char *line), void *ctx,
                 struct ubj_check_result *res);

#ifdef __cplusplus
}
#endif
#endif /* UBJFS_UBJFS_H */
