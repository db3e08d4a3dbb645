/*
 * cp_in.c -- `ubjfs cp`, host -> image: files, directories (recursively,
 * entries in name order), symlinks, special files and hard links.
 *
 * Order of attribute updates on each copy: data first, then owner (a chown
 * clears set-id bits), then mode and times in one ubj_setattr; a
 * directory's attributes are set after its contents (adding entries
 * changes its mtime).  Regular files are read with SEEK_DATA/SEEK_HOLE so
 * host holes stay holes, in TOOLS_CHUNK pieces.  The image file itself is
 * never copied into itself.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cp.h"

/* cpin_cred -- owner of a new inode copied from host file `st`. */
static struct ubj_cred cpin_cred(const struct cp_ctx *c, const struct stat *st)
{
    struct ubj_cred cr = { c->uid, c->gid };
    if (c->own) {
        cr.uid = (uint32_t)st->st_uid;
        cr.gid = (uint32_t)st->st_gid;
    }
    return cr;
}

/* cpin_attrs -- owner, mode, atime and mtime of image inode `ino` from `st`. */
static void cpin_attrs(struct cp_ctx *c, ubj_ino_t ino, const struct stat *st,
                       const char *dpath)
{
    struct ubj_setattr sa;
    memset(&sa, 0, sizeof sa);
    struct ubj_stat cur;
    int rc = ubj_getattr(c->img.fs, ino, &cur);
    if (rc == 0 && c->own && (cur.uid != st->st_uid || cur.gid != st->st_gid)) {
        sa.valid = UBJ_SET_UID | UBJ_SET_GID;
        sa.uid = (uint32_t)st->st_uid;
        sa.gid = (uint32_t)st->st_gid;
        rc = ubj_setattr(c->img.fs, ino, &sa, NULL);
    }
    if (rc == 0) {
        sa.valid = UBJ_SET_ATIME | UBJ_SET_MTIME;
        if (!S_ISLNK(st->st_mode))
            sa.valid |= UBJ_SET_MODE;
        sa.mode = st->st_mode & 07777;
        sa.atime = st->st_atim;
        sa.mtime = st->st_mtim;
        rc = ubj_setattr(c->img.fs, ino, &sa, NULL);
    }
    if (rc < 0)
        cp_fail(c, "%s:%s: setting attributes: %s", c->image, dpath, tools_strerror(rc));
}

/* cpin_clear -- make room for a non-directory at (dparent, dname): an
 * existing non-directory is removed.  0, or -1 (reported). */
static int cpin_clear(struct cp_ctx *c, const struct ubj_stat *dst, bool exists,
                      ubj_ino_t dparent, const char *dname, const char *dpath,
                      const char *src)
{
    if (!exists)
        return 0;
    if (S_ISDIR(dst->mode)) {
        cp_fail(c, "cannot overwrite directory '%s:%s' with non-directory '%s'",
                c->image, dpath, src);
        return -1;
    }
    int rc = ubj_unlink(c->img.fs, dparent, dname);
    if (rc < 0) {
        cp_fail(c, "%s:%s: %s", c->image, dpath, tools_strerror(rc));
        return -1;
    }
    return 0;
}

/* cpin_write_all -- write len bytes at off to `ino`.  0 or a negative errno. */
static int cpin_write_all(struct cp_ctx *c, ubj_ino_t ino, const unsigned char *p,
                          size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = ubj_pwrite(c->img.fs, ino, p, len, off);
        if (n < 0)
            return (int)n;
        if (n == 0)
            return -ENOSPC;
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

/* cpin_range -- copy bytes [from, to) of host fd to `ino`.  0 or -errno;
 * *eof set when the host file turned out shorter. */
static int cpin_range(struct cp_ctx *c, int fd, ubj_ino_t ino, off_t from,
                      off_t to, bool *eof, bool *host_err)
{
    while (from < to) {
        size_t want = (size_t)(to - from) < TOOLS_CHUNK ? (size_t)(to - from)
                                                        : TOOLS_CHUNK;
        ssize_t n = pread(fd, c->buf, want, from);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *host_err = true;
            return -errno;
        }
        if (n == 0) {
            *eof = true;
            return 0;
        }
        int rc = cpin_write_all(c, ino, c->buf, (size_t)n, from);
        if (rc < 0)
            return rc;
        from += n;
    }
    return 0;
}

/* cpin_data -- copy the data of host fd (size bytes) into `ino`, skipping
 * holes; the image file gets the host size.  0 or -errno (*host_err says
 * which side failed). */
static int cpin_data(struct cp_ctx *c, int fd, ubj_ino_t ino, off_t size,
                     bool *host_err)
{
    off_t off = 0;
    bool eof = false;
    int rc = 0;
    while (rc == 0 && !eof && off < size) {
        off_t data = lseek(fd, off, SEEK_DATA), hole;
        if (data < 0 && errno == ENXIO)
            break;                       /* a hole up to the end */
        if (data < 0) {
            data = off;                  /* no SEEK_DATA here: copy it all */
            hole = size;
        } else {
            hole = lseek(fd, data, SEEK_HOLE);
            if (hole < 0 || hole > size)
                hole = size;
        }
        if (data >= size)
            break;
        rc = cpin_range(c, fd, ino, data, hole, &eof, host_err);
        off = hole;
    }
    if (rc < 0)
        return rc;
    struct ubj_stat st;
    rc = ubj_getattr(c->img.fs, ino, &st);
    if (rc == 0 && st.size != (uint64_t)size) {
        struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = (uint64_t)size };
        rc = ubj_setattr(c->img.fs, ino, &sa, NULL);
    }
    return rc;
}

/* cpin_hardlink -- a further name of an already copied host inode.
 * Returns true if handled (linked or reported). */
static bool cpin_hardlink(struct cp_ctx *c, const struct stat *st,
                          const struct ubj_stat *dst, bool exists, ubj_ino_t dparent,
                          const char *dname, const char *dpath, const char *src)
{
    if (!c->recursive || st->st_nlink < 2)
        return false;
    struct cp_link *l = cp_link_find(&c->links, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
    if (l == NULL)
        return false;
    if (exists && dst->ino == l->ino)
        return true;
    if (cpin_clear(c, dst, exists, dparent, dname, dpath, src) < 0)
        return true;
    int rc = ubj_link(c->img.fs, l->ino, dparent, dname, NULL);
    if (rc < 0)
        cp_fail(c, "%s:%s: link: %s", c->image, dpath, tools_strerror(rc));
    return true;
}

/* cpin_target_file -- the image inode to write: the existing regular file
 * (truncated) or a new one.  0 and *ino, or -1 (reported). */
static int cpin_target_file(struct cp_ctx *c, const struct stat *st,
                            const struct ubj_stat *dst, bool exists,
                            ubj_ino_t dparent, const char *dname,
                            const char *dpath, const char *src, ubj_ino_t *ino)
{
    int rc;
    if (exists && S_ISREG(dst->mode)) {
        *ino = dst->ino;
        rc = ubj_open(c->img.fs, *ino, O_WRONLY | O_TRUNC);
    } else {
        if (cpin_clear(c, dst, exists, dparent, dname, dpath, src) < 0)
            return -1;
        struct ubj_cred cr = cpin_cred(c, st);
        struct ubj_stat nst;
        rc = ubj_create(c->img.fs, dparent, dname, st->st_mode & 0777, &cr, &nst);
        if (rc == 0) {
            *ino = nst.ino;
            rc = ubj_open(c->img.fs, *ino, O_WRONLY);
        }
    }
    if (rc < 0) {
        cp_fail(c, "%s:%s: %s", c->image, dpath, tools_strerror(rc));
        return -1;
    }
    return 0;
}

/* cpin_file -- copy a regular file. */
static void cpin_file(struct cp_ctx *c, const char *src, const struct stat *st,
                      const struct ubj_stat *dst, bool exists, ubj_ino_t dparent,
                      const char *dname, const char *dpath)
{
    if (st->st_dev == c->img_dev && st->st_ino == c->img_ino) {
        cp_fail(c, "%s: is the image itself; not copied", src);
        return;
    }
    if (cpin_hardlink(c, st, dst, exists, dparent, dname, dpath, src))
        return;
    int fd = open(src, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        cp_fail(c, "%s: %s", src, strerror(errno));
        return;
    }
    ubj_ino_t ino = 0;
    if (cpin_target_file(c, st, dst, exists, dparent, dname, dpath, src, &ino) < 0) {
        close(fd);
        return;
    }
    bool host_err = false;
    int rc = cpin_data(c, fd, ino, st->st_size, &host_err);
    if (rc < 0 && host_err)
        cp_fail(c, "%s: read: %s", src, tools_strerror(rc));
    else if (rc < 0)
        cp_fail(c, "%s:%s: write: %s", c->image, dpath, tools_strerror(rc));
    int rrc = ubj_release(c->img.fs, ino);
    if (rrc < 0 && rc == 0)
        cp_fail(c, "%s:%s: close: %s", c->image, dpath, tools_strerror(rrc));
    close(fd);
    if (rc < 0)
        return;
    cpin_attrs(c, ino, st, dpath);
    if (c->recursive && st->st_nlink > 1 &&
        cp_link_add(&c->links, (uint64_t)st->st_dev, (uint64_t)st->st_ino, ino, NULL) < 0)
        cp_fail(c, "out of memory");
}

/* cpin_readlink -- the target of host symlink `src` (malloc'd) or NULL. */
static char *cpin_readlink(const char *src, size_t hint)
{
    size_t cap = hint + 2 > 256 ? hint + 2 : 256;
    for (;;) {
        char *b = malloc(cap);
        if (b == NULL)
            return NULL;
        ssize_t n = readlink(src, b, cap);
        if (n < 0) {
            free(b);
            return NULL;
        }
        if ((size_t)n < cap) {
            b[n] = '\0';
            return b;
        }
        free(b);
        cap *= 2;
    }
}

/* cpin_symlink -- copy a symlink as a symlink. */
static void cpin_symlink(struct cp_ctx *c, const char *src, const struct stat *st,
                         const struct ubj_stat *dst, bool exists, ubj_ino_t dparent,
                         const char *dname, const char *dpath)
{
    errno = ENOMEM;
    char *target = cpin_readlink(src, (size_t)st->st_size);
    if (target == NULL) {
        cp_fail(c, "%s: readlink: %s", src, strerror(errno));
        return;
    }
    if (cpin_clear(c, dst, exists, dparent, dname, dpath, src) == 0) {
        struct ubj_cred cr = cpin_cred(c, st);
        struct ubj_stat nst;
        int rc = ubj_symlink(c->img.fs, target, dparent, dname, &cr, &nst);
        if (rc < 0)
            cp_fail(c, "%s:%s: symlink: %s", c->image, dpath, tools_strerror(rc));
        else
            cpin_attrs(c, nst.ino, st, dpath);
    }
    free(target);
}

/* cpin_special -- copy a FIFO, socket or device node as such. */
static void cpin_special(struct cp_ctx *c, const char *src, const struct stat *st,
                         const struct ubj_stat *dst, bool exists, ubj_ino_t dparent,
                         const char *dname, const char *dpath)
{
    if (cpin_clear(c, dst, exists, dparent, dname, dpath, src) < 0)
        return;
    struct ubj_cred cr = cpin_cred(c, st);
    struct ubj_stat nst;
    int rc = ubj_mknod(c->img.fs, dparent, dname, st->st_mode & (S_IFMT | 07777),
                       (uint64_t)st->st_rdev, &cr, &nst);
    if (rc < 0)
        cp_fail(c, "%s:%s: mknod: %s", c->image, dpath, tools_strerror(rc));
    else
        cpin_attrs(c, nst.ino, st, dpath);
}

/* cpin_names_cmp -- qsort order for host names. */
static int cpin_names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* cpin_list -- sorted names in host directory `src` (not . and ..);
 * NULL with errno on failure. */
static char **cpin_list(const char *src, size_t *count)
{
    DIR *d = opendir(src);
    if (d == NULL)
        return NULL;
    char **v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int err = 0;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            char **nv = realloc(v, cap * sizeof *nv);
            if (nv == NULL) { err = ENOMEM; break; }
            v = nv;
        }
        if ((v[n] = strdup(e->d_name)) == NULL) { err = ENOMEM; break; }
        n++;
        errno = 0;
    }
    if (err == 0 && errno != 0)
        err = errno;
    closedir(d);
    if (err != 0) {
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
        errno = err;
        return NULL;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cpin_names_cmp);
    *count = n;
    if (v == NULL)
        v = malloc(sizeof *v);       /* an empty directory: a non-NULL list */
    if (v == NULL)
        errno = ENOMEM;
    return v;
}

/* cp_in_into -- copy the entries of host dir `src` into image dir `dir`. */
void cp_in_into(struct cp_ctx *c, const char *src, ubj_ino_t dir, const char *dpath)
{
    size_t n = 0;
    struct stat st;
    char **names = stat(src, &st) == 0 ? cpin_list(src, &n) : NULL;
    if (names == NULL) {
        cp_fail(c, "%s: %s", src, strerror(errno));
        return;
    }
    int rc = cp_dir_push(c, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
    for (size_t i = 0; i < n; i++) {
        char *s = tools_join(src, names[i]);
        char *d = tools_join(dpath, names[i]);
        if (s == NULL || d == NULL)
            cp_fail(c, "out of memory");
        else if (rc == 0)
            cp_in_node(c, s, dir, names[i], d, false);
        free(s);
        free(d);
        free(names[i]);
    }
    free(names);
    if (rc == 0)
        cp_dir_pop(c);
}

/* cpin_dir -- copy a directory: make (or merge into) it, copy its
 * entries, then set its attributes. */
static void cpin_dir(struct cp_ctx *c, const char *src, const struct stat *st,
                     const struct ubj_stat *dst, bool exists, ubj_ino_t dparent,
                     const char *dname, const char *dpath)
{
    if (!c->recursive) {
        cp_fail(c, "-r not specified; omitting directory '%s'", src);
        return;
    }
    if (cp_dir_loop(c, (uint64_t)st->st_dev, (uint64_t)st->st_ino, false, src))
        return;
    ubj_ino_t ino = 0;
    if (exists) {
        if (!S_ISDIR(dst->mode)) {
            cp_fail(c, "cannot overwrite non-directory '%s:%s' with directory '%s'",
                    c->image, dpath, src);
            return;
        }
        ino = dst->ino;
    } else {
        struct ubj_cred cr = cpin_cred(c, st);
        struct ubj_stat nst;
        int rc = ubj_mkdir(c->img.fs, dparent, dname, st->st_mode & 07777, &cr, &nst);
        if (rc < 0) {
            cp_fail(c, "%s:%s: mkdir: %s", c->image, dpath, tools_strerror(rc));
            return;
        }
        ino = nst.ino;
    }
    cp_in_into(c, src, ino, dpath);
    cpin_attrs(c, ino, st, dpath);
}

/* cp_in_node -- copy host `src` to (dparent, dname). */
void cp_in_node(struct cp_ctx *c, const char *src, ubj_ino_t dparent,
                const char *dname, const char *dpath, bool top)
{
    struct stat st;
    int r = (top && !c->recursive) ? stat(src, &st) : lstat(src, &st);
    if (r != 0) {
        cp_fail(c, "%s: %s", src, strerror(errno));
        return;
    }
    struct ubj_stat dst;
    int rc = ubj_lookup(c->img.fs, dparent, dname, &dst);
    if (rc < 0 && rc != -ENOENT) {
        cp_fail(c, "%s:%s: %s", c->image, dpath, tools_strerror(rc));
        return;
    }
    bool exists = rc == 0;
    switch (st.st_mode & S_IFMT) {
    case S_IFDIR: cpin_dir(c, src, &st, &dst, exists, dparent, dname, dpath); break;
    case S_IFREG: cpin_file(c, src, &st, &dst, exists, dparent, dname, dpath); break;
    case S_IFLNK: cpin_symlink(c, src, &st, &dst, exists, dparent, dname, dpath); break;
    default: cpin_special(c, src, &st, &dst, exists, dparent, dname, dpath); break;
    }
}
