/*
 * file.c -- the file API: open/release, pread, pwrite, truncate
 * (fs_truncate and ubj_setattr), fsync, SEEK_DATA/SEEK_HOLE.
 *
 * Every entry point runs under the mount lock between fs_start and
 * fs_stop.  Operations whose handle size depends on the inode (O_TRUNC,
 * setattr, the last release of an unlinked file, an atime update) take the
 * lock alone first and start their handle with ubj_txn_start once the
 * inode is known (file_handle_start: same refusals as fs_start).
 *
 * Invariants kept here:
 *  F1 The bytes of a file's last block past i_size read as zeros: a
 *     partial write into a newly allocated block zeroes the rest of it,
 *     and fs_truncate zeroes the tail of the block at the old (extend) or
 *     new (shrink) end, so extending a file shows zeros, never old bytes.
 *  F2 No written block is mapped past the block holding the last byte of
 *     i_size (unwritten ones may be, after fallocate KEEP_SIZE): a write
 *     that fails on I/O after allocating trims the file past its new
 *     size (-ENOSPC comes before an allocation, so it needs no trim).
 *  F3 Data blocks are changed through ubj_cache_get + ubj_txn_write_access
 *     + ubj_txn_dirty(UBJ_KIND_DATA); a block is read from the device only
 *     when part of its old contents survives the write.
 *
 *  F4 A pread that misses in the cache waits for the device outside the
 *     mount lock (fs_get_read, struct fs_rd: meta.c) and keeps what
 *     it copied only if nothing changed meanwhile: fs->gen is what it was
 *     when the inode was looked up, else the buffer is dropped and the read
 *     restarts from its first uncopied byte with the inode looked up
 *     again (size, extents).  Bytes copied before a restart were right when
 *     copied (as Linux, a read is not atomic against a concurrent write or
 *     truncate: a short read, never stale or foreign bytes).  After
 *     FS_RD_TRIES tries it reads under the lock: it finishes.  Nothing
 *     drops the lock inside a handle (docs/DESIGN.md, "Device reads
 *     outside the mount lock").
 *  F5 A write reads before its handle starts (file_preread): the inode,
 *     the extent paths of its range and the partial blocks it keeps
 *     bytes of are read with the lock released around each miss, and
 *     pinned until the write is done; the write then finds them cached.
 *     Only what an allocation reads (block bitmaps) is read under the
 *     lock, after the first write access.
 *
 * The read path is the hot one (>= 1e6 cached 4 KiB reads/s): one
 * fs_iget, one extent map per run of blocks, one cache get per block, no
 * handle unless relatime says atime must change.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "fs/fs.h"

#define FILE_RW_MAX 0x7ffff000u          /* Linux's MAX_RW_COUNT: one call */
#define FILE_BLOCKS_END (1ULL << 32)    /* one past the last logical block */
#define FILE_TREE_CREDITS 12u           /* extent nodes on a path, twice */
#define FILE_ATIME_MAX_AGE (24 * 3600)  /* relatime: seconds */
#define FILE_PREREAD_RUNS 8u            /* extent runs a write's pre-read maps */

/* file_err -- a failing entry point's message: the lower layer's message
 * prefixed with the operation (or, if there is none, the operation, inode
 * and error); returns rc. */
static int file_err(int rc, const char *op, ubj_ino_t ino)
{
    char lower[200];
    snprintf(lower, sizeof lower, "%s", ubj_errormsg());
    if (lower[0])
        return ubj_set_error(rc, "%s: %s", op, lower);
    return ubj_set_error(rc, "%s: inode %llu: %s", op, (unsigned long long)ino,
                         strerror(-rc));
}

/* file_handle_start -- a handle for a change under an already held mount
 * lock; -EROFS on a read-only or failed mount, as fs_start. */
static int file_handle_start(struct ubj_fs *fs, uint64_t credits,
                             struct ubj_handle **h)
{
    return fs_handle_start(fs, credits, h);
}

/* file_trunc_credits -- blocks a truncate of this inode may dirty: the
 * inode, superblock, tail block, the tree's right edge and the bitmap
 * blocks its blocks can lie in. */
static uint64_t file_trunc_credits(const struct ubj_fs *fs, const struct ubj_inode *ip)
{
    uint64_t bitmaps = ip->blocks + 1 < fs->sb.bb_blocks ? ip->blocks + 1
                                                         : fs->sb.bb_blocks;
    return 3 + FILE_TREE_CREDITS + bitmaps;
}

/* file_write_credits -- blocks a write over nblocks file blocks may dirty:
 * each data block, its bitmap block and tree growth, plus the inode,
 * superblock and a path of splits. */
static uint64_t file_write_credits(uint64_t nblocks)
{
    return 2 * nblocks + 4 + FILE_TREE_CREDITS + FS_XATTR_CREDITS;
}

/* file_check_reg -- 0 for a regular file; -EISDIR / -EINVAL otherwise. */
static int file_check_reg(const struct ubj_inode *ip, const char *op, ubj_ino_t ino)
{
    if (S_ISREG(ip->mode))
        return 0;
    if (S_ISDIR(ip->mode))
        return ubj_set_error(-EISDIR, "%s: inode %llu is a directory", op,
                             (unsigned long long)ino);
    return ubj_set_error(-EINVAL, "%s: inode %llu is not a regular file", op,
                         (unsigned long long)ino);
}

/* file_ts_le -- (s1, n1) is not after (s2, n2). */
static bool file_ts_le(int64_t s1, uint32_t n1, int64_t s2, uint32_t n2)
{
    return s1 < s2 || (s1 == s2 && n1 <= n2);
}

/* file_atime -- relatime: update atime if it is not after mtime or ctime,
 * or older than a day (Linux's relatime_need_update); never under
 * UBJ_MOUNT_NOATIME.  Errors are ignored
 * (the read succeeded), as Linux's touch_atime. */
static void file_atime(struct ubj_fs *fs, struct fs_iref *r)
{
    if (fs->flags & UBJ_MOUNT_NOATIME)
        return;
    const struct ubj_inode *ip = r->ip;
    struct timespec now;
    if (fs->flags & UBJ_MOUNT_RDONLY || fs->error)
        return;
    bool due = file_ts_le(ip->atime, ip->atime_ns, ip->mtime, ip->mtime_ns) ||
               file_ts_le(ip->atime, ip->atime_ns, ip->ctime, ip->ctime_ns);
    if (!due) {   /* the day-old test needs no precision: the cheap clock */
        if (fs->now)
            fs->now(fs->now_ctx, &now);
        else
            clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if ((int64_t)now.tv_sec - ip->atime < FILE_ATIME_MAX_AGE)
            return;
    }
    fs_now(fs, &now);
    if (ip->atime == (int64_t)now.tv_sec && ip->atime_ns == (uint32_t)now.tv_nsec)
        return;
    struct ubj_handle *h;
    if (ubj_txn_start(&fs->txn, 1, &h) < 0)
        return;
    if (fs_iwrite(fs, h, r) == 0) {
        r->ip->atime = now.tv_sec;
        r->ip->atime_ns = (uint32_t)now.tv_nsec;
        (void)fs_idirty(fs, h, r);
    }
    (void)ubj_txn_stop(h);
}

/* ---- reading ------------------------------------------------------------- */

/* file_read_run -- copy n bytes at pos from the run mapped at pblk (0: a
 * hole) into dst; *done = bytes copied: block by block under
 * FS_RA_OFF_PAGE (a miss reads its block alone) and under the window
 * policies (the engine's step before each block: ra, rapath.c), else in
 * runs (the missing blocks of each stretch between cached ones as one
 * device read: fs_get_read_run).  Returns 0, FS_RESTART (F4) or the
 * cache's error. */
static int file_read_run(struct ubj_fs *fs, struct fs_ra_call *ra, uint64_t pblk,
                         uint8_t *dst, uint64_t pos, uint64_t n, uint64_t *done)
{
    *done = 0;
    if (pblk == 0) {
        memset(dst, 0, n);
        *done = n;
        return 0;
    }
    struct ubj_buf *bufs[UBJ_CACHE_RUN_MAX];
    while (n > 0) {
        uint32_t boff = (uint32_t)(pos % UBJ_BS);
        uint64_t left = (boff + n + UBJ_BS - 1) / UBJ_BS;   /* blocks */
        uint32_t want = fs->ra_policy == FS_RA_OFF_PAGE || ra ? 1u
                        : left < UBJ_CACHE_RUN_MAX ? (uint32_t)left : UBJ_CACHE_RUN_MAX;
        int got = ra ? fs_ra_step(ra, pos / UBJ_BS) : 0;
        if (got == 0)
            got = want == 1 ? fs_get_read(fs, pblk, &bufs[0])
                            : fs_get_read_run(fs, pblk, want, bufs);
        if (got < 0)
            return got;
        if (want == 1)
            got = 1;
        for (int i = 0; i < got; i++) {
            uint64_t c = UBJ_BS - boff < n ? UBJ_BS - boff : n;
            memcpy(dst, bufs[i]->data + boff, c);
            ubj_cache_put(fs->cache, bufs[i]);
            pblk++;
            dst += c;
            pos += c;
            n -= c;
            *done += c;
            boff = 0;
        }
    }
    return 0;
}

/* file_read_locked -- read up to size bytes at off of a regular file;
 * *done = bytes read (on an error: up to the run that failed, as before
 * F4; on a restart: up to the block that restarts).  Returns 0 (done
 * the whole range or to the end of the file), FS_RESTART (F4) or an
 * error. */
static int file_read_locked(struct ubj_fs *fs, struct fs_iref *r,
                            struct fs_ra_stream *s, void *buf, size_t size,
                            uint64_t off, uint64_t *done)
{
    *done = 0;
    uint64_t isize = r->ip->size;
    if (isize > UBJ_MAX_FILE_SIZE)
        return ubj_set_error(-EUCLEAN, "inode %llu: size %llu beyond the limit",
                             (unsigned long long)r->ino, (unsigned long long)isize);
    if (off >= isize)
        return 0;
    uint64_t end = isize - off < size ? isize : off + size;
    uint8_t *dst = buf;
    uint64_t pos = off;
    struct fs_ra_call call, *ra = NULL;
    if (s != NULL) {
        fs_ra_call_begin(&call, fs, r, s, off, end);
        ra = &call;
    }
    while (pos < end) {
        uint32_t lblk = (uint32_t)(pos / UBJ_BS);
        uint64_t pblk;
        uint32_t len;
        uint64_t n = 0;
        int rc = fs_ext_map(fs, r, lblk, (uint32_t)((end - 1) / UBJ_BS - lblk + 1),
                            &pblk, &len);
        if (rc == 0) {
            uint64_t run_end = ((uint64_t)lblk + len) * UBJ_BS;
            n = (run_end < end ? run_end : end) - pos;
            rc = file_read_run(fs, ra, pblk, dst, pos, n, &n);
        }
        if (rc == FS_RESTART) {   /* what this run copied is right */
            *done = pos + n - off;
            return rc;
        }
        if (rc < 0)   /* a failed run counts nothing: *done as it started */
            return rc;
        dst += n;
        pos += n;
        *done = pos - off;
    }
    return 0;
}

/* fs_pread_stream -- pread(2) through read-ahead stream `own` (NULL: the
 * inode's default): holes read as zeros; relatime atime; device reads
 * outside the mount lock (F4); the stream's prev_pos after the call. */
ssize_t fs_pread_stream(struct ubj_fs *fs, ubj_ino_t ino, struct fs_ra_stream *own,
                        int advice, void *buf, size_t size, off_t off)
{
    struct ubj_handle *h;
    struct fs_iref r;
    if (off < 0)
        return ubj_set_error(-EINVAL, "pread: negative offset %lld", (long long)off);
    if (size > FILE_RW_MAX)
        size = FILE_RW_MAX;
    fs_start(fs, 0, &h);
    uint64_t total = 0;
    struct fs_rd rd;
    int rc;
    fs_rd_begin(fs, &rd);
    bool own_msg = false;   /* rc from file_check_reg: its message */
    struct fs_ra_stream *s = NULL;
    do {
        rc = fs_iget(fs, ino, &r);
        if (rc < 0)
            continue;   /* to fs_rd_again: a restart, or the end */
        rc = file_check_reg(r.ip, "pread", ino);
        own_msg = rc < 0;
        s = rc == 0 ? fs_ra_stream(fs, ino, own, advice) : NULL;
        if (rc == 0 && size > total) {
            uint64_t n;
            rc = file_read_locked(fs, &r, s, (uint8_t *)buf + total, size - total,
                                  (uint64_t)off + total, &n);
            total += n;
            if (rc == FS_RESTART && total == size)
                rc = 0;
            if (rc != FS_RESTART && (rc == 0 || total > 0) && size > 0) {
                fs_rd_end(&rd);   /* the atime update writes */
                file_atime(fs, &r);
            }
        }
        fs_iput(fs, &r);
    } while (fs_rd_again(&rd, rc));
    if (s != NULL && total > 0)
        fs_ra_read_done(&s->ra, (uint64_t)off, total);
    if (rc < 0 && total == 0)
        return fs_stop(fs, h, own_msg ? rc : file_err(rc, "pread", ino));
    return fs_stop(fs, h, (int)total);
}

/* ubj_pread -- pread(2) by inode number: the inode's default stream. */
ssize_t ubj_pread(struct ubj_fs *fs, ubj_ino_t ino, void *buf, size_t size,
                  off_t off)
{
    return fs_pread_stream(fs, ino, NULL, UBJ_FADV_NORMAL, buf, size, off);
}

/* ---- SEEK_DATA / SEEK_HOLE ---------------------------------------------- */

/* file_seek_locked -- the first offset >= off of data (data) or of a hole
 * (!data), from the extent map alone: one fs_ext_map per run of equal
 * status, never a data block read.  Unwritten extents are holes (as ext4
 * answers without dirty page-cache pages over them: they read as zeros);
 * the end of the file counts as a hole.  *out; -ENXIO (off at or past the
 * end, or no data at or after off). */
static int file_seek_locked(struct ubj_fs *fs, struct fs_iref *r, uint64_t off,
                            bool data, uint64_t *out)
{
    uint64_t size = r->ip->size;
    if (size > UBJ_MAX_FILE_SIZE)
        return ubj_set_error(-EUCLEAN, "inode %llu: size %llu beyond the limit",
                             (unsigned long long)r->ino, (unsigned long long)size);
    if (off >= size)
        return ubj_set_error(-ENXIO, "inode %llu: offset %llu is at or past the "
                             "end (%llu bytes)", (unsigned long long)r->ino,
                             (unsigned long long)off, (unsigned long long)size);
    uint64_t last = (size - 1) / UBJ_BS;        /* < 2^32: size <= 16 TiB */
    for (uint64_t lblk = off / UBJ_BS; lblk <= last;) {
        uint64_t pblk, max = last - lblk + 1;
        uint32_t len;
        int rc = fs_ext_map(fs, r, (uint32_t)lblk,
                            max > UINT32_MAX ? UINT32_MAX : (uint32_t)max, &pblk, &len);
        if (rc < 0)
            return rc;
        if ((pblk != 0) == data) {
            *out = lblk * UBJ_BS > off ? lblk * UBJ_BS : off;
            return 0;
        }
        lblk += len;
    }
    if (!data) {
        *out = size;
        return 0;
    }
    return ubj_set_error(-ENXIO, "inode %llu: no data at or after offset %llu",
                         (unsigned long long)r->ino, (unsigned long long)off);
}

/* file_seek -- ubj_seek_data (data) and ubj_seek_hole under the mount lock. */
static off_t file_seek(struct ubj_fs *fs, ubj_ino_t ino, off_t off, bool data)
{
    const char *op = data ? "seek data" : "seek hole";
    struct ubj_handle *h;
    struct fs_iref r;
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, ino, &r);
    if (rc < 0)
        return fs_stop(fs, h, file_err(rc, op, ino));
    uint64_t at = 0;
    rc = file_check_reg(r.ip, op, ino);
    if (rc == 0 && off < 0)
        rc = ubj_set_error(-ENXIO, "%s: negative offset %lld", op, (long long)off);
    else if (rc == 0)
        rc = file_seek_locked(fs, &r, (uint64_t)off, data, &at);
    if (rc < 0 && rc != -ENXIO)
        rc = file_err(rc, op, ino);
    fs_iput(fs, &r);
    rc = fs_stop(fs, h, rc);
    return rc < 0 ? rc : (off_t)at;
}

/* ubj_seek_data -- lseek(SEEK_DATA). */
off_t ubj_seek_data(struct ubj_fs *fs, ubj_ino_t ino, off_t off)
{
    return file_seek(fs, ino, off, true);
}

/* ubj_seek_hole -- lseek(SEEK_HOLE). */
off_t ubj_seek_hole(struct ubj_fs *fs, ubj_ino_t ino, off_t off)
{
    return file_seek(fs, ino, off, false);
}

/* ---- writing ------------------------------------------------------------- */

/* file_write_block -- copy n bytes into block blk at offset boff; a fresh
 * block's other bytes become zeros (F1). */
static int file_write_block(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blk,
                            bool fresh, uint32_t boff, const uint8_t *src,
                            uint32_t n)
{
    bool whole = boff == 0 && n == UBJ_BS;
    struct ubj_buf *b;
    int rc = ubj_cache_get(fs->cache, blk, fresh || whole ? UBJ_GET_NOREAD : 0, &b);
    if (rc < 0)
        return rc;
    fs_gen_bump(fs);
    rc = ubj_txn_write_access(h, &b);
    if (rc == 0) {
        if (fresh && !whole) {
            memset(b->data, 0, boff);
            memset(b->data + boff + n, 0, UBJ_BS - boff - n);
        }
        memcpy(b->data + boff, src, n);
        rc = ubj_txn_dirty(h, b, UBJ_KIND_DATA);
    }
    ubj_cache_put(fs->cache, b);
    return rc;
}

/* fs_remove_privs -- clear S_ISUID, and S_ISGID when group-executable,
 * as Linux's should_remove_suid() for a write, fallocate or chown. */
void fs_remove_privs(struct ubj_fs *fs, struct ubj_inode *ip)
{
    uint32_t kill = S_ISUID;
    if ((ip->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
        kill |= S_ISGID;
    if (ip->mode & kill)
        atomic_fetch_add(&fs->privs_killed, 1);
    ip->mode &= ~kill;
}

/* ubj_privs_killed -- see ubjfs.h. */
uint64_t ubj_privs_killed(struct ubj_fs *fs)
{
    return fs ? atomic_load(&fs->privs_killed) : 0;
}

/* file_write_trim -- after a failed write, free what it allocated past
 * the file's end (F2); blocks it allocated inside holes stay mapped. */
static int file_write_trim(struct ubj_fs *fs, struct ubj_handle *h,
                           struct fs_iref *r, uint64_t end)
{
    uint64_t size = r->ip->size > end ? r->ip->size : end;
    uint64_t keep = (size + UBJ_BS - 1) / UBJ_BS;
    return keep < FILE_BLOCKS_END ? fs_ext_truncate(fs, h, r, (uint32_t)keep) : 0;
}

/* file_write_finish -- after bytes were written up to end: size, mtime,
 * ctime, privileges. */
static int file_write_finish(struct ubj_fs *fs, struct ubj_handle *h,
                             struct fs_iref *r, uint64_t end)
{
    int rc = fs_iwrite(fs, h, r);
    if (rc == 0) {
        if (r->ip->size < end)
            r->ip->size = end;
        fs_touch(fs, r->ip, false, true, true);
        fs_remove_privs(fs, r->ip);
        rc = fs_idirty(fs, h, r);
    }
    if (rc == 0)
        rc = fs_xattr_killpriv(fs, h, r);
    return rc;
}

/* file_write_locked -- write size (> 0) bytes at off into a regular file;
 * the bytes written, or an error if none was. */
static ssize_t file_write_locked(struct ubj_fs *fs, struct ubj_handle *h,
                                 struct fs_iref *r, const void *buf, size_t size,
                                 uint64_t off)
{
    const uint8_t *src = buf;
    uint64_t pos = off, end = off + size;
    int rc = 0;
    while (pos < end && rc == 0) {
        uint32_t lblk = (uint32_t)(pos / UBJ_BS);
        uint64_t left = (end - 1) / UBJ_BS - lblk + 1;
        uint64_t pblk;
        uint32_t got;
        bool fresh;
        rc = fs_ext_alloc(fs, h, r, lblk, left > UINT32_MAX ? UINT32_MAX : (uint32_t)left,
                          &pblk, &got, &fresh);
        for (uint32_t j = 0; rc == 0 && j < got && pos < end; j++) {
            uint32_t boff = (uint32_t)(pos % UBJ_BS);
            uint32_t n = UBJ_BS - boff < end - pos ? UBJ_BS - boff : (uint32_t)(end - pos);
            rc = file_write_block(fs, h, pblk + j, fresh, boff, src, n);
            if (rc == 0) {
                src += n;
                pos += n;
            }
        }
    }
    if (rc < 0 && rc != -ENOSPC)
        (void)file_write_trim(fs, h, r, pos);   /* the write's error wins */
    if (pos == off)
        return rc;
    int frc = file_write_finish(fs, h, r, pos);
    if (frc < 0 && rc == 0)
        return frc;
    return (ssize_t)(pos - off);
}

/* file_preread_block -- pre-read (and pin) data block pblk. */
static int file_preread_block(struct ubj_fs *fs, uint64_t pblk)
{
    struct ubj_buf *b;
    int rc = fs_get_read(fs, pblk, &b);
    if (rc == 0)
        ubj_cache_put(fs->cache, b);   /* the pin keeps it */
    return rc;
}

/* file_preread_range -- the extent paths of [off, off + size) (one
 * fs_ext_map per run of equal status, at most FILE_PREREAD_RUNS) and the
 * partial first and last blocks the write will read (F3: mapped, old
 * bytes surviving, inside the old size). */
static int file_preread_range(struct ubj_fs *fs, struct fs_iref *r, uint64_t off,
                              uint64_t size)
{
    uint64_t end = off + size, isize = r->ip->size;
    uint32_t first = (uint32_t)(off / UBJ_BS), last = (uint32_t)((end - 1) / UBJ_BS);
    bool head = off % UBJ_BS != 0 && off / UBJ_BS * UBJ_BS < isize;
    bool tail = end % UBJ_BS != 0 && (uint64_t)last * UBJ_BS < isize &&
                (last != first || !head);
    uint32_t lblk = first;
    for (unsigned k = 0; k < FILE_PREREAD_RUNS && lblk <= last; k++) {
        uint64_t pblk;
        uint32_t len;
        int rc = fs_ext_map(fs, r, lblk, last - lblk + 1, &pblk, &len);
        if (rc == 0 && pblk != 0 && head && lblk == first)
            rc = file_preread_block(fs, pblk);
        if (rc == 0 && pblk != 0 && tail && last - lblk < len)
            rc = file_preread_block(fs, pblk + (last - lblk));
        if (rc < 0)
            return rc;
        lblk += len;
    }
    return 0;
}

/* What a write's pre-read reads: its inode and range. */
struct file_pre {
    ubj_ino_t ino;
    uint64_t off, size;
};

/*
 * file_preread -- a write's pre-read (issue 20 item 3; F5;
 * fs_start_read_first): the inode, the extent paths of its range, the
 * partial blocks it keeps bytes of (F3), read and pinned before its
 * handle starts.  Only a prefetch: the write looks all up again under
 * the lock.  The block bitmaps an allocation reads cannot be known
 * before it: those reads stay under the lock (counted: ubj_fs_stats).
 */
static int file_preread(struct ubj_fs *fs, void *arg)
{
    const struct file_pre *p = arg;
    struct fs_iref r;
    int rc = fs_iget(fs, p->ino, &r);
    if (rc < 0)
        return rc;
    if (S_ISREG(r.ip->mode) && p->size > 0 && p->off < UBJ_MAX_FILE_SIZE)
        rc = file_preread_range(fs, &r, p->off,
                                p->size < UBJ_MAX_FILE_SIZE - p->off ? p->size
                                                    : UBJ_MAX_FILE_SIZE - p->off);
    fs_iput(fs, &r);
    return rc;
}

/* file_pwrite_once -- one handle's worth of pwrite (at most
 * file_write_chunk bytes) after its pre-read; the checks run even for
 * size 0. */
static ssize_t file_pwrite_once(struct ubj_fs *fs, ubj_ino_t ino, const void *buf,
                                size_t size, uint64_t o)
{
    struct ubj_handle *h;
    struct fs_iref r;
    struct fs_rd rd;
    struct file_pre pre = { .ino = ino, .off = o, .size = size };
    uint64_t nblocks = size ? (o + size - 1) / UBJ_BS - o / UBJ_BS + 1 : 0;
    int rc = fs_start_read_first(fs, (uint32_t)file_write_credits(nblocks), &h, &rd,
                                 file_preread, &pre);
    if (rc < 0)
        return file_err(rc, "pwrite", ino);
    rc = fs_iget(fs, ino, &r);
    if (rc < 0)
        return fs_stop_read_first(fs, h, file_err(rc, "pwrite", ino), &rd);
    ssize_t n = file_check_reg(r.ip, "pwrite", ino);
    if (n == 0 && size > 0 && o >= UBJ_MAX_FILE_SIZE)
        n = ubj_set_error(-EFBIG, "pwrite: inode %llu: offset %llu beyond the "
                          "maximum file size", (unsigned long long)ino,
                          (unsigned long long)o);
    if (n == 0 && size > 0) {
        if (size > UBJ_MAX_FILE_SIZE - o)
            size = (size_t)(UBJ_MAX_FILE_SIZE - o);   /* Linux: a short write */
        n = file_write_locked(fs, h, &r, buf, size, o);
        if (n < 0)
            n = file_err((int)n, "pwrite", ino);
    }
    fs_iput(fs, &r);
    return fs_stop_read_first(fs, h, (int)n, &rd);
}

/* file_write_chunk -- bytes one handle may write: an eighth of the cache
 * (at least 64 KiB), so that a mode that pins a transaction's buffers
 * (ubj, journal) can commit between chunks of a large write. */
static size_t file_write_chunk(struct ubj_fs *fs)
{
    size_t c = (size_t)ubj_cache_nbufs(fs->cache) / 8 * UBJ_BS;
    return c < 65536 ? 65536 : c;
}

/* ubj_pwrite -- pwrite(2): allocate, copy, extend, one handle per chunk;
 * a short count only if the device fills (or fails) after some bytes. */
ssize_t ubj_pwrite(struct ubj_fs *fs, ubj_ino_t ino, const void *buf,
                   size_t size, off_t off)
{
    if (off < 0)
        return ubj_set_error(-EINVAL, "pwrite: negative offset %lld", (long long)off);
    if (size > FILE_RW_MAX)
        size = FILE_RW_MAX;
    size_t chunk = file_write_chunk(fs), done = 0;
    do {
        size_t len = size - done < chunk ? size - done : chunk;
        ssize_t n = file_pwrite_once(fs, ino, (const uint8_t *)buf + done, len,
                                     (uint64_t)off + done);
        if (n < 0)
            return done > 0 ? (ssize_t)done : n;
        done += (size_t)n;
        if ((size_t)n < len)
            break;
    } while (done < size);
    return (ssize_t)done;
}

/* ---- truncate ------------------------------------------------------------ */

/* file_zero_tail -- zero the bytes from pos to the end of its block, if
 * that block is mapped (F1). */
static int file_zero_tail(struct ubj_fs *fs, struct ubj_handle *h,
                          struct fs_iref *r, uint64_t pos)
{
    uint32_t boff = (uint32_t)(pos % UBJ_BS);
    uint64_t pblk;
    uint32_t len;
    if (boff == 0 || pos / UBJ_BS >= FILE_BLOCKS_END)
        return 0;
    int rc = fs_ext_map(fs, r, (uint32_t)(pos / UBJ_BS), 1, &pblk, &len);
    if (rc < 0 || pblk == 0)
        return rc;
    struct ubj_buf *b;
    rc = ubj_cache_get(fs->cache, pblk, 0, &b);
    if (rc < 0)
        return rc;
    fs_gen_bump(fs);
    rc = ubj_txn_write_access(h, &b);
    if (rc == 0) {
        memset(b->data + boff, 0, UBJ_BS - boff);
        rc = ubj_txn_dirty(h, b, UBJ_KIND_DATA);
    }
    ubj_cache_put(fs->cache, b);
    return rc;
}

/* fs_truncate -- set a regular file's size: shrinking frees the blocks
 * past the end and zeroes the new last block's tail; growing is sparse. */
int fs_truncate(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                uint64_t size)
{
    uint64_t old = r->ip->size;
    int rc = 0;
    fs_ra_invalidate(fs, r->ino);   /* rapath.c S2: windows end here */
    if (size < old) {
        uint64_t keep = (size + UBJ_BS - 1) / UBJ_BS;
        if (keep < FILE_BLOCKS_END)
            rc = fs_ext_truncate(fs, h, r, (uint32_t)keep);
        if (rc == 0)
            rc = file_zero_tail(fs, h, r, size);
    } else if (size > old) {
        rc = file_zero_tail(fs, h, r, old);
    }
    if (rc == 0)
        rc = fs_iwrite(fs, h, r);
    if (rc == 0) {
        r->ip->size = size;
        rc = fs_idirty(fs, h, r);
    }
    return rc;
}

/* ---- attributes ---------------------------------------------------------- */

/* file_set_ts -- store a timespec into an inode's seconds/nanoseconds. */
static void file_set_ts(int64_t *sec, uint32_t *nsec, const struct timespec *ts)
{
    *sec = ts->tv_sec;
    *nsec = (uint32_t)ts->tv_nsec;
}

/* file_setattr_check -- the refusals of ubj_setattr, in Linux's order. */
static int file_setattr_check(struct ubj_fs *fs, const struct ubj_inode *ip,
                              const struct ubj_setattr *sa, ubj_ino_t ino)
{
    if (sa->valid & UBJ_SET_SIZE) {
        int rc = file_check_reg(ip, "setattr size", ino);
        if (rc < 0)
            return rc;
    }
    if (fs->flags & UBJ_MOUNT_RDONLY)
        return ubj_set_error(-EROFS, "setattr: file system is mounted read-only");
    if ((sa->valid & UBJ_SET_SIZE) && sa->size > UBJ_MAX_FILE_SIZE)
        return ubj_set_error(-EFBIG, "setattr: size %llu beyond the maximum",
                             (unsigned long long)sa->size);
    const struct timespec *ts[2] = { &sa->atime, &sa->mtime };
    unsigned set[2] = { UBJ_SET_ATIME, UBJ_SET_MTIME };
    for (int i = 0; i < 2; i++)
        if ((sa->valid & set[i]) && (ts[i]->tv_nsec < 0 || ts[i]->tv_nsec > 999999999L))
            return ubj_set_error(-EINVAL, "setattr: bad nanoseconds");
    return 0;
}

/* file_setattr_apply -- mode, owner and times of an attribute change. */
static void file_setattr_apply(struct ubj_fs *fs, struct ubj_inode *ip,
                               const struct ubj_setattr *sa, bool size_changed)
{
    struct timespec now;
    unsigned v = sa->valid;
    fs_now(fs, &now);
    if (v & UBJ_SET_MODE)
        ip->mode = (ip->mode & S_IFMT) | (sa->mode & 07777);
    if (v & (UBJ_SET_UID | UBJ_SET_GID)) {
        if (v & UBJ_SET_UID)
            ip->uid = sa->uid;
        if (v & UBJ_SET_GID)
            ip->gid = sa->gid;
        if (!S_ISDIR(ip->mode))
            fs_remove_privs(fs, ip);
    }
    if ((v & UBJ_SET_KILL_SUIDGID) && !S_ISDIR(ip->mode))
        fs_remove_privs(fs, ip);
    if (v & UBJ_SET_ATIME)
        file_set_ts(&ip->atime, &ip->atime_ns, &sa->atime);
    else if (v & UBJ_SET_ATIME_NOW)
        file_set_ts(&ip->atime, &ip->atime_ns, &now);
    if (v & UBJ_SET_MTIME)
        file_set_ts(&ip->mtime, &ip->mtime_ns, &sa->mtime);
    else if ((v & UBJ_SET_MTIME_NOW) || size_changed)
        file_set_ts(&ip->mtime, &ip->mtime_ns, &now);
    if (v & UBJ_SET_CTIME)
        file_set_ts(&ip->ctime, &ip->ctime_ns, &sa->ctime);
    else
        file_set_ts(&ip->ctime, &ip->ctime_ns, &now);
}

/* file_setattr_locked -- check, then change the inode in one handle. */
static int file_setattr_locked(struct ubj_fs *fs, struct fs_iref *r,
                               const struct ubj_setattr *sa,
                               struct ubj_handle **h)
{
    int rc = file_setattr_check(fs, r->ip, sa, r->ino);
    if (rc < 0)
        return rc;
    uint64_t credits = 1 + FS_XATTR_CREDITS + ((sa->valid & UBJ_SET_SIZE)
                                               ? file_trunc_credits(fs, r->ip) : 0);
    rc = file_handle_start(fs, credits, h);
    if (rc < 0)
        return rc;
    bool size_changed = (sa->valid & UBJ_SET_SIZE) && sa->size != r->ip->size;
    if (size_changed)
        rc = fs_truncate(fs, *h, r, sa->size);
    if (rc == 0)
        rc = fs_iwrite(fs, *h, r);
    if (rc == 0) {
        file_setattr_apply(fs, r->ip, sa, size_changed);
        rc = fs_idirty(fs, *h, r);
    }
    if (rc == 0 && (sa->valid & (UBJ_SET_UID | UBJ_SET_GID | UBJ_SET_SIZE)))
        rc = fs_xattr_killpriv(fs, *h, r);
    return rc;
}

/* ubj_setattr -- chmod, chown, truncate, utimens; ctime on any change. */
int ubj_setattr(struct ubj_fs *fs, ubj_ino_t ino, const struct ubj_setattr *sa,
                struct ubj_stat *st)
{
    struct ubj_handle *h;
    struct fs_iref r;
    if (fs == NULL || sa == NULL)
        return ubj_set_error(-EINVAL, "setattr: bad argument");
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, ino, &r);
    if (rc < 0)
        return fs_stop(fs, h, file_err(rc, "setattr", ino));
    if (sa->valid != 0)
        rc = file_setattr_locked(fs, &r, sa, &h);
    if (rc == 0 && st != NULL)
        fs_inode_to_stat(r.ip, ino, st);
    fs_iput(fs, &r);
    if (rc < 0)
        rc = file_err(rc, "setattr", ino);
    return fs_stop(fs, h, rc);
}

/* ---- open, release, fsync ------------------------------------------------ */

/* file_open_locked -- checks and O_TRUNC of ubj_open. */
static int file_open_locked(struct ubj_fs *fs, struct fs_iref *r, int flags,
                            struct ubj_handle **h)
{
    uint32_t mode = r->ip->mode;
    bool trunc = (flags & O_TRUNC) != 0;
    bool wr = (flags & O_ACCMODE) != O_RDONLY || trunc;
    if (wr && S_ISDIR(mode))
        return ubj_set_error(-EISDIR, "open: inode %llu is a directory",
                             (unsigned long long)r->ino);
    if (wr && (S_ISREG(mode) || S_ISLNK(mode)) && (fs->flags & UBJ_MOUNT_RDONLY))
        return ubj_set_error(-EROFS, "open: file system is mounted read-only");
    if (!trunc || !S_ISREG(mode))
        return 0;
    int rc = file_handle_start(fs, file_trunc_credits(fs, r->ip) + 1, h);
    if (rc == 0 && r->ip->size != 0)
        rc = fs_truncate(fs, *h, r, 0);
    if (rc == 0)
        rc = fs_iwrite(fs, *h, r);
    if (rc == 0) {
        fs_touch(fs, r->ip, false, true, true);
        rc = fs_idirty(fs, *h, r);
    }
    return rc;
}

/* ubj_open -- take an open reference; O_TRUNC empties a regular file. */
int ubj_open(struct ubj_fs *fs, ubj_ino_t ino, int flags)
{
    struct ubj_handle *h;
    struct fs_iref r;
    struct fs_rd rd;
    struct file_pre pre = { .ino = ino };   /* the inode: O_TRUNC writes it */
    fs_start_read_first(fs, 0, &h, &rd, file_preread, &pre);
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        rc = file_open_locked(fs, &r, flags, &h);
        if (rc == 0)
            fs_open_inc(fs, ino);
        fs_iput(fs, &r);
    }
    if (rc < 0)
        rc = file_err(rc, "open", ino);
    return fs_stop_read_first(fs, h, rc, &rd);
}

/* file_release_last -- the last close: free the inode if it has no name. */
static int file_release_last(struct ubj_fs *fs, ubj_ino_t ino, struct ubj_handle **h)
{
    struct fs_iref r;
    if (fs_iget(fs, ino, &r) < 0)
        return 0;               /* already freed: nothing holds it */
    bool unlinked = r.ip->nlink == 0;
    uint64_t credits = file_trunc_credits(fs, r.ip) + 8;
    fs_iput(fs, &r);
    if (!unlinked || (fs->flags & UBJ_MOUNT_RDONLY))
        return 0;               /* a read-only mount leaves it to the next */
    int rc = file_handle_start(fs, credits, h);
    if (rc == 0)
        rc = fs_inode_destroy(fs, *h, ino);   /* takes it off the orphan list */
    return rc;
}

/* ubj_release -- drop an open reference; the last one of an unlinked
 * inode frees it. */
int ubj_release(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct ubj_handle *h;
    fs_start(fs, 0, &h);
    int rc = fs_open_dec(fs, ino);
    if (rc == 0)
        rc = file_release_last(fs, ino, &h);
    else if (rc > 0)
        rc = 0;
    if (rc < 0)
        rc = file_err(rc, "release", ino);
    return fs_stop(fs, h, rc);
}

/* ubj_fsync -- commit: everything `ino`'s state depends on becomes durable. */
int ubj_fsync(struct ubj_fs *fs, ubj_ino_t ino, int datasync)
{
    struct ubj_handle *h;
    struct fs_iref r;
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        fs_iput(fs, &r);
        rc = ubj_txn_commit(&fs->txn, UBJ_COMMIT_WAIT |
                            (datasync ? UBJ_COMMIT_DATA : 0u));
    }
    if (rc < 0)
        rc = file_err(rc, "fsync", ino);
    return fs_stop(fs, h, rc);
}
