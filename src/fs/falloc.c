/*
 * falloc.c -- ubj_fallocate: preallocation with unwritten extents
 * (fallocate(2) modes 0 and FALLOC_FL_KEEP_SIZE), checks and errors in the
 * order of Linux's vfs_fallocate().
 *
 * The range is walked in rounds of at most FALLOC_RUNS extent lookups or
 * insertions, each round one handle under the mount lock, so a large
 * fallocate never builds one unbounded transaction nor holds the lock for
 * long; the inode is taken afresh each round.
 *
 * Invariants:
 *  A1 blocks already mapped are never touched: written data stays, and so
 *     does an unwritten extent (fs_ext_prealloc only fills holes).
 *  A2 with mode 0, the size after each round covers exactly what the
 *     range has allocated so far (at most off + len), as ext4 updates
 *     i_size extent by extent: after -ENOSPC the file ends where the
 *     allocation stopped.
 *  A3 unwritten extents lie past i_size only after KEEP_SIZE (fsck
 *     accepts that, as e2fsck does); a later truncate frees them.
 */
#include <errno.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define FALLOC_RUNS 16u                      /* extent steps per handle */
#define FALLOC_CREDITS (FALLOC_RUNS * 16u + 4u + FS_XATTR_CREDITS)

struct falloc_req {
    ubj_ino_t ino;
    bool keep;            /* KEEP_SIZE */
    uint64_t end;         /* off + len, bytes */
    uint64_t pos, lend;   /* next logical block, one past the last */
};

/* falloc_type -- Linux's refusals by file type. */
static int falloc_type(uint32_t mode, ubj_ino_t ino)
{
    if (S_ISREG(mode))
        return 0;
    int rc = S_ISDIR(mode) ? -EISDIR : S_ISFIFO(mode) ? -ESPIPE : -ENODEV;
    return ubj_set_error(rc, "fallocate: inode %llu is not a regular file",
                         (unsigned long long)ino);
}

/* falloc_finish -- size (mode 0) and times after a round. */
static int falloc_finish(struct ubj_fs *fs, struct ubj_handle *h,
                         struct fs_iref *r, const struct falloc_req *q)
{
    uint64_t covered = q->pos * UBJ_BS < q->end ? q->pos * UBJ_BS : q->end;
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    bool grow = !q->keep && covered > r->ip->size;
    if (grow)
        r->ip->size = covered;
    fs_touch(fs, r->ip, false, grow, true);
    fs_remove_privs(fs, r->ip);             /* as a write: file_modified() */
    rc = fs_idirty(fs, h, r);
    return rc == 0 ? fs_xattr_killpriv(fs, h, r) : rc;
}

/* falloc_round -- one handle's worth of the range. */
static int falloc_round(struct ubj_fs *fs, struct falloc_req *q)
{
    struct ubj_handle *h;
    struct fs_iref r;
    int rc = fs_start(fs, FALLOC_CREDITS, &h);
    if (rc < 0)
        return rc;
    rc = fs_iget(fs, q->ino, &r);
    if (rc < 0)
        return fs_stop(fs, h, rc);
    rc = falloc_type(r.ip->mode, q->ino);
    uint64_t before = q->pos;
    for (unsigned i = 0; rc == 0 && i < FALLOC_RUNS && q->pos < q->lend; i++) {
        uint64_t want = q->lend - q->pos;
        uint32_t got = 0;
        rc = fs_ext_prealloc(fs, h, &r, (uint32_t)q->pos,
                             want > UINT32_MAX ? UINT32_MAX : (uint32_t)want, &got);
        q->pos += got;
    }
    if (rc == 0 || q->pos > before) {
        int frc = falloc_finish(fs, h, &r, q);
        if (rc == 0)
            rc = frc;
    }
    fs_iput(fs, &r);
    return fs_stop(fs, h, rc);
}

/* ubj_fallocate -- fallocate(2) modes 0 and KEEP_SIZE. */
int ubj_fallocate(struct ubj_fs *fs, ubj_ino_t ino, int mode, off_t off,
                  off_t len)
{
    if (fs == NULL || off < 0 || len <= 0)
        return ubj_set_error(-EINVAL, "fallocate: bad argument (offset %lld, "
                             "length %lld)", (long long)off, (long long)len);
    if (mode & ~UBJ_FALLOC_KEEP_SIZE)
        return ubj_set_error(-EOPNOTSUPP, "fallocate: mode 0x%x not supported "
                             "(0 and KEEP_SIZE are)", (unsigned)mode);
    if ((uint64_t)off > UBJ_MAX_FILE_SIZE ||
        (uint64_t)len > UBJ_MAX_FILE_SIZE - (uint64_t)off)
        return ubj_set_error(-EFBIG, "fallocate: range beyond the maximum "
                             "file size");
    struct falloc_req q = {
        .ino = ino, .keep = (mode & UBJ_FALLOC_KEEP_SIZE) != 0,
        .end = (uint64_t)off + (uint64_t)len,
        .pos = (uint64_t)off / UBJ_BS,
    };
    q.lend = (q.end + UBJ_BS - 1) / UBJ_BS;
    int rc;
    do {
        rc = falloc_round(fs, &q);
    } while (rc == 0 && q.pos < q.lend);
    return rc;
}
