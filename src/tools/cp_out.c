/*
 * cp_out.c -- `ubjfs cp`, image -> host: files, directories (recursively,
 * entries in name order), symlinks, special files and hard links.
 *
 * Each host file is created 0600 (directories 0700) and gets its owner
 * (root or -p), then mode, then times once complete; a directory's come
 * after its contents (so a read-only directory can still be filled and
 * its mtime is the image's).  Only a file's data runs are read (found
 * with ubj_seek_data / ubj_seek_hole), so holes cost nothing and stay
 * holes; in a file whose image blocks are fewer than its size, all-zero
 * 4 KiB blocks of the data are skipped too; ftruncate sets the size.  The
 * image file itself is never a target.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cp.h"

/* cpout_owner -- chown (not following symlinks); quiet EPERM if not root. */
static void cpout_owner(struct cp_ctx *c, int fd, const char *dst,
                        const struct ubj_stat *st)
{
    if (!c->own)
        return;
    int r = fd >= 0 ? fchown(fd, st->uid, st->gid)
                    : fchownat(AT_FDCWD, dst, st->uid, st->gid, AT_SYMLINK_NOFOLLOW);
    if (r != 0 && !((errno == EPERM || errno == EINVAL) && geteuid() != 0))
        cp_fail(c, "%s: chown: %s", dst, strerror(errno));
}

/* cpout_attrs -- owner, mode (not for symlinks) and times of host `dst`;
 * through fd when >= 0. */
static void cpout_attrs(struct cp_ctx *c, int fd, const char *dst,
                        const struct ubj_stat *st)
{
    bool link = S_ISLNK(st->mode);
    cpout_owner(c, fd, dst, st);
    if (!link) {
        int r = fd >= 0 ? fchmod(fd, st->mode & 07777) : chmod(dst, st->mode & 07777);
        if (r != 0)
            cp_fail(c, "%s: chmod: %s", dst, strerror(errno));
    }
    struct timespec ts[2] = { st->atime, st->mtime };
    int r = fd >= 0 ? futimens(fd, ts)
                    : utimensat(AT_FDCWD, dst, ts, link ? AT_SYMLINK_NOFOLLOW : 0);
    if (r != 0)
        cp_fail(c, "%s: setting times: %s", dst, strerror(errno));
}

/* cpout_clear -- make room for a non-directory at host `dst`: an existing
 * non-directory is removed.  0, or -1 (reported). */
static int cpout_clear(struct cp_ctx *c, const struct stat *hst, bool hexists,
                       const char *dst, const char *spath)
{
    if (!hexists)
        return 0;
    if (S_ISDIR(hst->st_mode)) {
        cp_fail(c, "cannot overwrite directory '%s' with non-directory '%s:%s'",
                dst, c->image, spath);
        return -1;
    }
    if (unlink(dst) != 0) {
        cp_fail(c, "%s: %s", dst, strerror(errno));
        return -1;
    }
    return 0;
}

/* cpout_zero -- is a block all zeros? */
static bool cpout_zero(const unsigned char *p, size_t len)
{
    static const unsigned char z[UBJ_BLOCK_SIZE];
    for (size_t o = 0; o < len; o += sizeof z) {
        size_t n = len - o < sizeof z ? len - o : sizeof z;
        if (memcmp(p + o, z, n) != 0)
            return false;
    }
    return true;
}

/* cpout_pwrite_all -- write len bytes at off to host fd.  0 or -errno. */
static int cpout_pwrite_all(int fd, const unsigned char *p, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

/* cpout_store -- write a chunk read from the image; with `sparse`, skip
 * all-zero 4 KiB blocks.  0 or -errno. */
static int cpout_store(int fd, const unsigned char *p, size_t len, off_t off,
                       bool sparse)
{
    if (!sparse)
        return cpout_pwrite_all(fd, p, len, off);
    for (size_t o = 0; o < len; o += UBJ_BLOCK_SIZE) {
        size_t n = len - o < UBJ_BLOCK_SIZE ? len - o : UBJ_BLOCK_SIZE;
        if (cpout_zero(p + o, n))
            continue;
        int rc = cpout_pwrite_all(fd, p + o, n, off + (off_t)o);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* cpout_range -- copy bytes [from, to) of image file `ino` to host fd.
 * 0 or -errno; *img_err says the image side failed. */
static int cpout_range(struct cp_ctx *c, int fd, ubj_ino_t ino, off_t from, off_t to,
                       bool sparse, bool *img_err)
{
    while (from < to) {
        size_t want = (uint64_t)(to - from) < TOOLS_CHUNK ? (size_t)(to - from)
                                                          : TOOLS_CHUNK;
        ssize_t n = ubj_pread(c->img.fs, ino, c->buf, want, from);
        if (n <= 0) {
            *img_err = true;
            return n < 0 ? (int)n : -EIO;    /* 0: shorter than its size */
        }
        int rc = cpout_store(fd, c->buf, (size_t)n, from, sparse);
        if (rc < 0)
            return rc;
        from += n;
    }
    return 0;
}

/* cpout_data -- copy the image file's data to host fd: only the runs
 * ubj_seek_data/ubj_seek_hole find are read and written (holes and
 * unwritten extents are skipped and stay holes), then ftruncate sets the
 * size.  0 or -errno; *img_err says the image side failed. */
static int cpout_data(struct cp_ctx *c, int fd, const struct ubj_stat *st,
                      bool *img_err)
{
    bool sparse = st->blocks * 512u < st->size;
    off_t off = 0, size = (off_t)st->size;
    while (off < size) {
        off_t data = ubj_seek_data(c->img.fs, st->ino, off);
        if (data == -ENXIO)
            break;                           /* a hole to the end */
        off_t hole = data < 0 ? data : ubj_seek_hole(c->img.fs, st->ino, data);
        if (hole < 0) {
            *img_err = true;
            return (int)hole;
        }
        int rc = cpout_range(c, fd, st->ino, data, hole, sparse, img_err);
        if (rc < 0)
            return rc;
        off = hole;
    }
    if (ftruncate(fd, size) != 0)
        return -errno;
    return 0;
}

/* cpout_hardlink -- a further name of an already copied image inode.
 * Returns true if handled (linked or reported). */
static bool cpout_hardlink(struct cp_ctx *c, const struct ubj_stat *st,
                           const struct stat *hst, bool hexists, const char *dst,
                           const char *spath)
{
    if (!c->recursive || st->nlink < 2)
        return false;
    struct cp_link *l = cp_link_find(&c->links, st->ino, 0);
    if (l == NULL)
        return false;
    struct stat first;
    if (hexists && stat(l->path, &first) == 0 && first.st_dev == hst->st_dev &&
        first.st_ino == hst->st_ino)
        return true;
    if (cpout_clear(c, hst, hexists, dst, spath) < 0)
        return true;
    if (link(l->path, dst) != 0)
        cp_fail(c, "%s: link to '%s': %s", dst, l->path, strerror(errno));
    return true;
}

/* cpout_open -- create or truncate host file `dst` for writing; fd or -1. */
static int cpout_open(struct cp_ctx *c, const struct stat *hst, bool hexists,
                      const char *dst, const char *spath)
{
    if (hexists && !S_ISREG(hst->st_mode) && cpout_clear(c, hst, hexists, dst, spath) < 0)
        return -1;
    int fl = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
    int fd = open(dst, fl, 0600);
    if (fd < 0 && errno == EACCES && hexists && S_ISREG(hst->st_mode) &&
        unlink(dst) == 0)
        fd = open(dst, fl, 0600);        /* cp -f: replace a read-only file */
    if (fd < 0)
        cp_fail(c, "%s: %s", dst, strerror(errno));
    return fd;
}

/* cpout_file -- copy a regular file out. */
static void cpout_file(struct cp_ctx *c, const struct ubj_stat *st, const char *spath,
                       const struct stat *hst, bool hexists, const char *dst)
{
    if (cpout_hardlink(c, st, hst, hexists, dst, spath))
        return;
    int fd = cpout_open(c, hst, hexists, dst, spath);
    if (fd < 0)
        return;
    bool img_err = false;
    int rc = cpout_data(c, fd, st, &img_err);
    if (rc < 0 && img_err)
        cp_fail(c, "%s:%s: read: %s", c->image, spath, tools_strerror(rc));
    else if (rc < 0)
        cp_fail(c, "%s: write: %s", dst, tools_strerror(rc));
    else
        cpout_attrs(c, fd, dst, st);
    if (close(fd) != 0 && rc == 0) {
        cp_fail(c, "%s: close: %s", dst, strerror(errno));
        rc = -EIO;
    }
    if (rc == 0 && c->recursive && st->nlink > 1 &&
        cp_link_add(&c->links, st->ino, 0, 0, dst) < 0)
        cp_fail(c, "out of memory");
}

/* cpout_symlink -- copy a symlink out as a symlink. */
static void cpout_symlink(struct cp_ctx *c, const struct ubj_stat *st,
                          const char *spath, const struct stat *hst, bool hexists,
                          const char *dst)
{
    char *target = malloc(UBJ_SYMLINK_MAX + 1);
    if (target == NULL) {
        cp_fail(c, "out of memory");
        return;
    }
    ssize_t n = ubj_readlink(c->img.fs, st->ino, target, UBJ_SYMLINK_MAX);
    if (n < 0) {
        cp_fail(c, "%s:%s: readlink: %s", c->image, spath, tools_strerror((int)n));
    } else if (cpout_clear(c, hst, hexists, dst, spath) == 0) {
        target[n] = '\0';
        if (symlink(target, dst) != 0)
            cp_fail(c, "%s: symlink: %s", dst, strerror(errno));
        else
            cpout_attrs(c, -1, dst, st);
    }
    free(target);
}

/* cpout_special -- copy a FIFO, socket or device node out as such. */
static void cpout_special(struct cp_ctx *c, const struct ubj_stat *st,
                          const char *spath, const struct stat *hst, bool hexists,
                          const char *dst)
{
    if (cpout_clear(c, hst, hexists, dst, spath) < 0)
        return;
    if (mknod(dst, (st->mode & S_IFMT) | 0600, (dev_t)st->rdev) != 0)
        cp_fail(c, "%s: mknod: %s", dst, strerror(errno));
    else
        cpout_attrs(c, -1, dst, st);
}

/* cp_out_into -- copy the entries of image dir `st` into host dir `dst`. */
void cp_out_into(struct cp_ctx *c, const struct ubj_stat *st, const char *spath,
                 const char *dst)
{
    struct tools_dirlist l;
    int rc = tools_readdir_all(c->img.fs, st->ino, false, &l);
    if (rc < 0) {
        cp_fail(c, "%s:%s: %s", c->image, spath, tools_strerror(rc));
        return;
    }
    if (cp_dir_push(c, st->ino, 0) < 0) {
        tools_dirlist_free(&l);
        return;
    }
    for (size_t i = 0; i < l.n; i++) {
        struct ubj_stat cst;
        char *s = tools_join(spath, l.v[i].name);
        char *d = tools_join(dst, l.v[i].name);
        if (s == NULL || d == NULL)
            cp_fail(c, "out of memory");
        else if ((rc = ubj_getattr(c->img.fs, l.v[i].ino, &cst)) < 0)
            cp_fail(c, "%s:%s: %s", c->image, s, tools_strerror(rc));
        else
            cp_out_node(c, &cst, s, d);
        free(s);
        free(d);
    }
    cp_dir_pop(c);
    tools_dirlist_free(&l);
}

/* cpout_dir -- copy a directory out: make (or merge into) it, copy its
 * entries, then set its attributes. */
static void cpout_dir(struct cp_ctx *c, const struct ubj_stat *st, const char *spath,
                      const struct stat *hst, bool hexists, const char *dst)
{
    if (!c->recursive) {
        cp_fail(c, "-r not specified; omitting directory '%s:%s'", c->image, spath);
        return;
    }
    if (hexists && !S_ISDIR(hst->st_mode)) {
        cp_fail(c, "cannot overwrite non-directory '%s' with directory '%s:%s'",
                dst, c->image, spath);
        return;
    }
    if (cp_dir_loop(c, st->ino, 0, true, spath))
        return;
    if (!hexists && mkdir(dst, 0700) != 0) {
        cp_fail(c, "%s: mkdir: %s", dst, strerror(errno));
        return;
    }
    cp_out_into(c, st, spath, dst);
    cpout_attrs(c, -1, dst, st);
}

/* cp_out_node -- copy image inode `st` (at `spath`) to host `dst`. */
void cp_out_node(struct cp_ctx *c, const struct ubj_stat *st, const char *spath,
                 const char *dst)
{
    struct stat hst;
    bool hexists = lstat(dst, &hst) == 0;
    if (!hexists && errno != ENOENT) {
        cp_fail(c, "%s: %s", dst, strerror(errno));
        return;
    }
    if (hexists && hst.st_dev == c->img_dev && hst.st_ino == c->img_ino) {
        cp_fail(c, "%s: is the image itself; not overwritten", dst);
        return;
    }
    switch (st->mode & S_IFMT) {
    case S_IFDIR: cpout_dir(c, st, spath, &hst, hexists, dst); break;
    case S_IFREG: cpout_file(c, st, spath, &hst, hexists, dst); break;
    case S_IFLNK: cpout_symlink(c, st, spath, &hst, hexists, dst); break;
    default: cpout_special(c, st, spath, &hst, hexists, dst); break;
    }
}
