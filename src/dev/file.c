/*
 * file.c -- a block device on a regular file or a Linux block device
 * (ubj_bdev_file_open): pread/pwrite at block offsets, flush = fdatasync.
 *
 * Owns: the descriptor (and with UBJ_BDEV_EXCL its flock, released by
 * close), the geometry found at open, and the O_DIRECT bounce buffers.
 *
 * Invariants:
 *  - Nothing in struct file_bdev changes after open, so requests need no
 *    lock: pread/pwrite on one descriptor are safe from several threads.
 *  - nblocks = floor(length / 4096) >= 1, fixed at open.  The length is the
 *    file's size (after CREATE/RESIZE sizing) or, for a block device,
 *    BLKGETSIZE64 (limited to size_bytes when RESIZE asks for less; more
 *    than the device holds is -ENOSPC).
 *  - Reads and writes loop over short transfers and EINTR.  A read past the
 *    physical end of a regular file (shrunk behind our back) yields zeros.
 *  - With UBJ_BDEV_DIRECT every transfer the kernel sees is 4096-aligned in
 *    offset, length and memory: an unaligned caller buffer is bounced
 *    through a posix_memalign'd buffer of at most FILE_BOUNCE_BLOCKS.
 *  - Errors: write on RDONLY -> -EROFS; ENOSPC/EDQUOT -> -ENOSPC; EIO and
 *    every other I/O failure -> -EIO.  Each failure sets ubj_errormsg().
 * Guarantees: VOLATILE_CACHE | ATOMIC_SECTOR (what disks promise).
 * Interface v2 (file_submit): every request is served in the caller's
 * thread with pread/pwrite; a FUA write is pwritev2(RWF_DSYNC) -- the
 * kernel writes it through (FUA to a block device, or its data and the
 * metadata to reach it for a file) -- falling back to pwrite + fdatasync
 * where the kernel refuses the flag (EOPNOTSUPP, EINVAL: before 4.7).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "dev/dev_int.h"
#include "ubjfs/bdev.h"
#include "util/util.h"

/* from src/util/errormsg.c (declared in fs/fs.h, which dev/ must not use) */

#define FILE_ALIGN 4096u             /* O_DIRECT memory/offset alignment */
#define FILE_BOUNCE_BLOCKS 256u      /* largest bounce buffer: 1 MiB */
#define FILE_FLAGS_ALL (UBJ_BDEV_RDONLY | UBJ_BDEV_CREATE | UBJ_BDEV_DIRECT | \
                        UBJ_BDEV_RESIZE | UBJ_BDEV_EXCL)

struct file_bdev {
    struct ubj_bdev base;   /* first: the handle callers hold */
    int fd;
    unsigned flags;         /* UBJ_BDEV_* given at open */
    bool is_blk;            /* a block device (else a regular file) */
};

/* file_of -- the file device embedding d. */
static inline struct file_bdev *file_of(struct ubj_bdev *d)
{
    return (struct file_bdev *)d;
}

/* file_strerror -- thread-safe description of errno value e. */
static const char *file_strerror(int e)
{
    const char *s = strerrordesc_np(e);
    return s != NULL ? s : "unknown error";
}

/* file_past_eof -- true if off is at/after the end of f's regular file. */
static bool file_past_eof(const struct file_bdev *f, uint64_t off)
{
    struct stat st;
    return !f->is_blk && fstat(f->fd, &st) == 0 && off >= (uint64_t)st.st_size;
}

/* file_pread_all -- read len bytes at off, looping; zeros past the EOF. */
static int file_pread_all(struct file_bdev *f, void *buf, size_t len, uint64_t off)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = pread(f->fd, p, len, (off_t)off);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            off += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        int e = n < 0 ? errno : 0;
        /* n == 0: EOF.  EINVAL: O_DIRECT at the unaligned offset a short
         * read left at the end of a shrunk file. */
        if (n == 0 || (e == EINVAL && file_past_eof(f, off))) {
            memset(p, 0, len);       /* beyond the physical end */
            return 0;
        }
        return ubj_set_error(-EIO, "file bdev: read at byte %llu: %s",
                             (unsigned long long)off, file_strerror(e));
    }
    return 0;
}

/* file_pwrite_once -- one pwrite, or pwritev2 with RWF_DSYNC if fua (on
 * a kernel that refuses the flag: pwrite, and *fua cleared so that the
 * caller flushes instead). */
static ssize_t file_pwrite_once(struct file_bdev *f, const void *p, size_t len,
                                uint64_t off, bool *fua)
{
    if (!*fua)
        return pwrite(f->fd, p, len, (off_t)off);
    struct iovec iov = { .iov_base = (void *)p, .iov_len = len };
    ssize_t n = pwritev2(f->fd, &iov, 1, (off_t)off, RWF_DSYNC);
    if (n < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) {
        *fua = false;
        return pwrite(f->fd, p, len, (off_t)off);
    }
    return n;
}

/* file_pwrite_all -- write len bytes at off, looping over short writes;
 * with *fua each piece is written through (see file_pwrite_once). */
static int file_pwrite_all(struct file_bdev *f, const void *buf, size_t len,
                           uint64_t off, bool *fua)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = file_pwrite_once(f, p, len, off, fua);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            off += (uint64_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        int e = n < 0 ? errno : EIO;
        int rc = (e == ENOSPC || e == EDQUOT) ? -ENOSPC : -EIO;
        return ubj_set_error(rc, "file bdev: write at byte %llu: %s",
                             (unsigned long long)off, file_strerror(e));
    }
    return 0;
}

/* file_needs_bounce -- O_DIRECT with a buffer the kernel would refuse. */
static inline bool file_needs_bounce(const struct file_bdev *f, const void *buf)
{
    return (f->flags & UBJ_BDEV_DIRECT) && ((uintptr_t)buf % FILE_ALIGN) != 0;
}

/* file_bounce_alloc -- an aligned buffer for up to `count` blocks; sets *n. */
static void *file_bounce_alloc(uint32_t count, uint32_t *n)
{
    void *b = NULL;
    *n = count < FILE_BOUNCE_BLOCKS ? count : FILE_BOUNCE_BLOCKS;
    if (posix_memalign(&b, FILE_ALIGN, (size_t)*n * UBJ_BLOCK_SIZE) != 0)
        return NULL;
    return b;
}

/* file_read_bounced -- O_DIRECT read into an unaligned buffer. */
static int file_read_bounced(struct file_bdev *f, uint64_t blkno,
                             uint32_t count, unsigned char *buf)
{
    uint32_t step;
    unsigned char *b = file_bounce_alloc(count, &step);
    if (b == NULL)
        return ubj_set_error(-ENOMEM, "file bdev: no memory for a bounce buffer");
    int rc = 0;
    for (uint32_t done = 0; done < count && rc == 0; done += step) {
        uint32_t n = count - done < step ? count - done : step;
        size_t len = (size_t)n * UBJ_BLOCK_SIZE;
        rc = file_pread_all(f, b, len, (blkno + done) * UBJ_BLOCK_SIZE);
        if (rc == 0)
            memcpy(buf + (size_t)done * UBJ_BLOCK_SIZE, b, len);
    }
    free(b);
    return rc;
}

/* file_write_bounced -- O_DIRECT write from an unaligned buffer. */
static int file_write_bounced(struct file_bdev *f, uint64_t blkno,
                              uint32_t count, const unsigned char *buf,
                              bool *fua)
{
    uint32_t step;
    unsigned char *b = file_bounce_alloc(count, &step);
    if (b == NULL)
        return ubj_set_error(-ENOMEM, "file bdev: no memory for a bounce buffer");
    int rc = 0;
    for (uint32_t done = 0; done < count && rc == 0; done += step) {
        uint32_t n = count - done < step ? count - done : step;
        size_t len = (size_t)n * UBJ_BLOCK_SIZE;
        memcpy(b, buf + (size_t)done * UBJ_BLOCK_SIZE, len);
        rc = file_pwrite_all(f, b, len, (blkno + done) * UBJ_BLOCK_SIZE, fua);
    }
    free(b);
    return rc;
}

/* file_read -- read blocks with pread (bounced if O_DIRECT needs it). */
static int file_read(struct file_bdev *f, uint64_t blkno, uint32_t count, void *buf)
{
    if (file_needs_bounce(f, buf))
        return file_read_bounced(f, blkno, count, buf);
    return file_pread_all(f, buf, (size_t)count * UBJ_BLOCK_SIZE,
                          blkno * UBJ_BLOCK_SIZE);
}

/* file_write -- write blocks with pwrite (bounced if O_DIRECT needs it);
 * *fua as file_pwrite_once. */
static int file_write(struct file_bdev *f, uint64_t blkno, uint32_t count,
                      const void *buf, bool *fua)
{
    if (f->flags & UBJ_BDEV_RDONLY)
        return ubj_set_error(-EROFS, "file bdev: device opened read-only");
    if (file_needs_bounce(f, buf))
        return file_write_bounced(f, blkno, count, buf, fua);
    return file_pwrite_all(f, buf, (size_t)count * UBJ_BLOCK_SIZE,
                           blkno * UBJ_BLOCK_SIZE, fua);
}

/* file_flush -- fdatasync: completed writes reach stable storage. */
static int file_flush(struct file_bdev *f)
{
    if (f->flags & UBJ_BDEV_RDONLY)
        return 0;
    while (fdatasync(f->fd) != 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        int rc = (e == ENOSPC || e == EDQUOT) ? -ENOSPC : -EIO;
        return ubj_set_error(rc, "file bdev: fdatasync: %s", file_strerror(e));
    }
    return 0;
}

/* file_destroy -- close the descriptor (dropping any flock) and free. */
static void file_destroy(struct ubj_bdev *d)
{
    struct file_bdev *f = file_of(d);
    close(f->fd);
    free(f);
}

/* file_submit -- serve r in the caller's thread; FUA as RWF_DSYNC, or a
 * write and fdatasync where the kernel lacks it. */
static void file_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    struct file_bdev *f = file_of(d);
    int rc;
    if (r->op == UBJ_REQ_READ) {
        rc = file_read(f, r->blkno, r->count, r->buf);
    } else if (r->op == UBJ_REQ_WRITE) {
        bool want = dev_req_fua(r), fua = want;
        rc = file_write(f, r->blkno, r->count, r->buf, &fua);
        if (rc == 0 && want && !fua)
            rc = file_flush(f);
    } else {
        rc = file_flush(f);
    }
    ubj_req_complete(r, rc);
}

static const struct ubj_bdev_ops file_ops = {
    .version = UBJ_BDEV_OPS_V2,
    .name = "file",
    .destroy = file_destroy,
    .submit = file_submit,
};

/* file_open_fd -- open(2) path for our flags; a negative errno on failure.
 * O_NONBLOCK keeps a FIFO from blocking; it is cleared once the type is
 * known to be a file or block device. */
static int file_open_fd(const char *path, unsigned flags)
{
    int of = O_CLOEXEC | O_NONBLOCK;
    of |= (flags & UBJ_BDEV_RDONLY) ? O_RDONLY : O_RDWR;
    if (flags & UBJ_BDEV_CREATE)
        of |= O_CREAT;
    if (flags & UBJ_BDEV_DIRECT)
        of |= O_DIRECT;
    int fd = open(path, of, 0666);
    if (fd >= 0)
        return fd;
    int e = errno;
    if (e == EINVAL && (flags & UBJ_BDEV_DIRECT))
        return ubj_set_error(-EINVAL, "%s: O_DIRECT not supported here", path);
    return ubj_set_error(-e, "%s: %s", path, file_strerror(e));
}

/* file_size_regular -- size a regular file per CREATE/RESIZE; *len out. */
static int file_size_regular(int fd, const char *path, unsigned flags,
                             uint64_t size_bytes, off_t cur, uint64_t *len)
{
    bool fresh = (flags & UBJ_BDEV_CREATE) && cur == 0;
    *len = (uint64_t)cur;
    if (size_bytes == 0 || !((flags & UBJ_BDEV_RESIZE) || fresh))
        return 0;
    if (size_bytes > (uint64_t)INT64_MAX)
        return ubj_set_error(-EINVAL, "%s: size %llu too large", path,
                             (unsigned long long)size_bytes);
    if ((uint64_t)cur != size_bytes && ftruncate(fd, (off_t)size_bytes) != 0) {
        int e = errno;
        return ubj_set_error(-e, "%s: resize to %llu bytes: %s", path,
                             (unsigned long long)size_bytes, file_strerror(e));
    }
    *len = size_bytes;
    return 0;
}

/* file_size_blockdev -- a block device's size, limited by RESIZE. */
static int file_size_blockdev(int fd, const char *path, unsigned flags,
                              uint64_t size_bytes, uint64_t *len)
{
    if (ioctl(fd, BLKGETSIZE64, len) != 0) {
        int e = errno;
        return ubj_set_error(-e, "%s: BLKGETSIZE64: %s", path, file_strerror(e));
    }
    if (!(flags & UBJ_BDEV_RESIZE) || size_bytes == 0)
        return 0;
    if (size_bytes > *len)
        return ubj_set_error(-ENOSPC, "%s: block device holds %llu bytes, "
                             "%llu asked", path, (unsigned long long)*len,
                             (unsigned long long)size_bytes);
    *len = size_bytes;
    return 0;
}

/* file_setup -- check type, lock, size; fills f's geometry.  0 or -errno. */
static int file_setup(struct file_bdev *f, const char *path, uint64_t size_bytes)
{
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return ubj_set_error(-errno, "%s: fstat: %s", path, file_strerror(errno));
    if (S_ISDIR(st.st_mode))
        return ubj_set_error(-EISDIR, "%s: is a directory", path);
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        return ubj_set_error(-EINVAL, "%s: not a regular file or block device",
                             path);
    f->is_blk = S_ISBLK(st.st_mode);
    int fl = fcntl(f->fd, F_GETFL);
    if (fl < 0 || fcntl(f->fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
        return ubj_set_error(-errno, "%s: fcntl: %s", path, file_strerror(errno));
    if ((f->flags & UBJ_BDEV_EXCL) && flock(f->fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK)
            return ubj_set_error(-EBUSY, "%s: in use (locked by another opener)",
                                 path);
        return ubj_set_error(-e, "%s: flock: %s", path, file_strerror(e));
    }
    uint64_t len;
    int rc = f->is_blk
        ? file_size_blockdev(f->fd, path, f->flags, size_bytes, &len)
        : file_size_regular(f->fd, path, f->flags, size_bytes, st.st_size, &len);
    if (rc < 0)
        return rc;
    if (len < UBJ_BLOCK_SIZE)
        return ubj_set_error(-EINVAL, "%s: %llu bytes, smaller than one %u-byte "
                             "block", path, (unsigned long long)len, UBJ_BLOCK_SIZE);
    f->base.nblocks = len / UBJ_BLOCK_SIZE;
    return 0;
}

/* ubj_bdev_file_open -- open a file or block device as a ubj_bdev. */
int ubj_bdev_file_open(const char *path, unsigned flags, uint64_t size_bytes,
                       struct ubj_bdev **out)
{
    if (out == NULL || path == NULL)
        return ubj_set_error(-EINVAL, "file bdev: NULL argument");
    *out = NULL;
    if ((flags & ~FILE_FLAGS_ALL) != 0 ||
        ((flags & UBJ_BDEV_RDONLY) &&
         (flags & (UBJ_BDEV_CREATE | UBJ_BDEV_RESIZE))))
        return ubj_set_error(-EINVAL, "%s: bad flags 0x%x", path, flags);
    struct file_bdev *f = calloc(1, sizeof *f);
    if (f == NULL)
        return ubj_set_error(-ENOMEM, "file bdev: out of memory");
    f->flags = flags;
    f->fd = file_open_fd(path, flags);
    if (f->fd < 0) {
        int rc = f->fd;
        free(f);
        return rc;
    }
    int rc = file_setup(f, path, size_bytes);
    if (rc < 0) {
        close(f->fd);
        free(f);
        return rc;
    }
    f->base.ops = &file_ops;
    f->base.block_size = UBJ_BLOCK_SIZE;
    f->base.guarantees = UBJ_BDEV_VOLATILE_CACHE | UBJ_BDEV_ATOMIC_SECTOR;
    f->base.lower = NULL;
    *out = &f->base;
    return 0;
}
