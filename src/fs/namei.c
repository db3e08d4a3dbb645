/*
 * namei.c -- namespace operations of the public API (lookup, mknod,
 * create, mkdir, unlink, rmdir, rename, link, symlink, readlink, readdir)
 * and the path helpers (ubj_path_lookup, ubj_path_parent), with Linux's
 * semantics and error codes (include/ubjfs/ubjfs.h documents each).
 *
 * Invariants kept here:
 *  - A directory's nlink is 2 + its subdirectories; its `parent` field
 *    names the directory holding its one name (the root: itself).
 *  - Link counts stop at NAMEI_LINK_MAX (65000, ext4's EXT4_LINK_MAX).
 *  - Every mutation runs in one handle (fs_start/fs_stop) whose credits
 *    bound the blocks it may dirty (NAMEI_CR_* below, from dir.c's depth
 *    bound of 8).  Checks that can fail come before the first change; an
 *    allocation failure in fs_dir_add changes nothing, and a failure after
 *    a new inode exists destroys it again.
 *  - Symlink targets: <= 127 bytes inline in i_data.symlink (no
 *    UBJ_IFL_EXTTREE); longer ones (<= 4095) in data block 0 of an extent
 *    tree; size = target length either way.
 *  - A directory whose nlink is 0 (removed, still open) accepts no lookup,
 *    creation or listing: -ENOENT, as Linux's dead directories.
 *
 * Errors: every public function clears the thread's message on entry;
 * on failure, a message set below (corruption, I/O) is kept, otherwise
 * one is made from the operation, the name and strerror.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define NAMEI_LINK_MAX 65000u
#define NAMEI_SYMLOOP_MAX 40u      /* Linux's MAXSYMLINKS */
#define NAMEI_PATH_MAX 4096u       /* Linux's PATH_MAX, NUL included */

/*
 * Credits: blocks an operation may dirty.  dir.c's trees are at most 8
 * levels deep: adding a name dirties the leaf and 8 index nodes, 9 new
 * split nodes and a new root, a bitmap block for each new node, the
 * superblock and the directory inode (31); removing one dirties or frees
 * 9 nodes (+ 8 from a root collapse), their bitmap blocks, the superblock
 * and the inode.  Destroying an inode is bounded by inode.c's own
 * estimate (64).
 */
#define NAMEI_CR_DIR_ADD 31u
#define NAMEI_CR_DIR_REMOVE 36u
#define NAMEI_CR_DIR_SET 2u
#define NAMEI_CR_INODE_NEW 3u      /* inode bitmap, superblock, inode block */
#define NAMEI_CR_DIR_INIT 4u       /* node, bitmap, superblock, inode */
#define NAMEI_CR_SYMLINK 8u        /* data block, extent alloc, inode */
#define NAMEI_CR_DESTROY 64u
#define NAMEI_CR_MAKE (NAMEI_CR_DIR_ADD + NAMEI_CR_INODE_NEW + NAMEI_CR_DIR_INIT + \
                       NAMEI_CR_SYMLINK + 2u)
#define NAMEI_CR_REMOVE (NAMEI_CR_DIR_REMOVE + NAMEI_CR_DESTROY + 4u)
#define NAMEI_CR_RENAME (NAMEI_CR_DIR_ADD + NAMEI_CR_DIR_REMOVE + 2u * NAMEI_CR_DIR_SET + \
                         NAMEI_CR_DESTROY + 8u)
#define NAMEI_CR_LINK (NAMEI_CR_DIR_ADD + 2u)

/* What a new inode is to be (namei_make). */
struct namei_new {
    uint32_t mode;          /* type | permissions */
    uint64_t rdev;
    const char *target;     /* symlinks */
    size_t tlen;
};

/* namei_dt -- the DT_* type of an inode mode. */
static unsigned namei_dt(uint32_t mode)
{
    return (mode & S_IFMT) >> 12;
}

/* namei_msg -- a failing operation's message if the lower layers left
 * none; returns rc. */
static int namei_msg(int rc, const char *op, const char *name)
{
    if (rc < 0 && ubj_errormsg()[0] == '\0') {
        if (name)
            ubj_set_error(rc, "%s '%.64s': %s", op, name, strerror(-rc));
        else
            ubj_set_error(rc, "%s: %s", op, strerror(-rc));
    }
    return rc;
}

/* namei_end -- unlock, and make sure a failure carries a message. */
static int namei_end(struct ubj_fs *fs, struct ubj_handle *h, int rc,
                     const char *op, const char *name)
{
    rc = fs_stop(fs, h, rc);
    return namei_msg(rc, op, name);
}

/* namei_end_pre -- namei_end of an operation that read first
 * (fs_start_read_first): its pins dropped. */
static int namei_end_pre(struct ubj_fs *fs, struct ubj_handle *h, int rc,
                         const char *op, const char *name, struct fs_rd *rd)
{
    rc = fs_stop_read_first(fs, h, rc, rd);
    return namei_msg(rc, op, name);
}

/* namei_name -- check one name: 1..255 bytes, no '/'. */
static int namei_name(const char *name, size_t *len)
{
    if (name == NULL)
        return -EINVAL;
    size_t n = strnlen(name, UBJ_NAME_MAX + 1);
    if (n == 0 || memchr(name, '/', n) != NULL)
        return -EINVAL;
    if (n > UBJ_NAME_MAX)
        return -ENAMETOOLONG;
    *len = n;
    return 0;
}

/* namei_is_dot -- "." or "..". */
static bool namei_is_dot(const char *name, size_t len)
{
    return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

/* namei_dir -- reference directory `ino`, live (nlink > 0): -ENOENT,
 * -ENOTDIR. */
static int namei_dir(struct ubj_fs *fs, ubj_ino_t ino, struct fs_iref *r)
{
    int rc = fs_iget(fs, ino, r);
    if (rc < 0)
        return rc;
    if (!S_ISDIR(r->ip->mode))
        rc = -ENOTDIR;
    else if (r->ip->nlink == 0)
        rc = -ENOENT;
    if (rc < 0)
        fs_iput(fs, r);
    return rc;
}

/* namei_child -- the inode `name` names in directory `d` ("." and ".."
 * included).  -ENOENT. */
static int namei_child(struct ubj_fs *fs, struct fs_iref *d, const char *name,
                       size_t len, ubj_ino_t *ino)
{
    if (len == 1 && name[0] == '.') {
        *ino = d->ino;
        return 0;
    }
    if (len == 2 && name[0] == '.' && name[1] == '.') {
        *ino = d->ino == UBJ_ROOT_INO ? UBJ_ROOT_INO : d->ip->parent;
        return 0;
    }
    return fs_dir_lookup(fs, d, name, len, ino, NULL);
}

/* namei_exists -- 1 if `name` is in `d`, 0 if not, or a negative errno. */
static int namei_exists(struct ubj_fs *fs, struct fs_iref *d, const char *name,
                        size_t len, ubj_ino_t *ino)
{
    int rc = fs_dir_lookup(fs, d, name, len, ino, NULL);
    if (rc == -ENOENT)
        return 0;
    return rc < 0 ? rc : 1;
}

/* ---- pre-reads (issue 20 item 3; fs_start_read_first) ------------------ */

/* What a namespace change reads before its handle starts: up to two
 * (directory, name) pairs, with the inode each name holds, and for a
 * create the inode bitmap and table block its new inode would take. */
struct namei_pre {
    ubj_ino_t dir[2];
    const char *name[2];
    unsigned n;
    bool make;
};

/* namei_pre_name -- pre-read directory `dir`, the path to `name` in it,
 * and the inode it names (or, for a create, the new inode's blocks). */
static int namei_pre_name(struct ubj_fs *fs, ubj_ino_t dir, const char *name,
                          bool make)
{
    struct fs_iref d, c;
    size_t len;
    ubj_ino_t ino;
    int rc = namei_dir(fs, dir, &d);
    if (rc < 0)
        return rc;
    rc = namei_name(name, &len);
    if (rc == 0 && !namei_is_dot(name, len)) {
        rc = fs_dir_lookup(fs, &d, name, len, &ino, NULL);
        if (rc == 0 && fs_iget(fs, ino, &c) == 0)
            fs_iput(fs, &c);
        else if (rc == -ENOENT && make)
            rc = fs_inode_preread_new(fs, dir);
    }
    fs_iput(fs, &d);
    return rc;
}

/* namei_pre -- fs_start_read_first's pre-read of a namespace change. */
static int namei_pre(struct ubj_fs *fs, void *arg)
{
    const struct namei_pre *p = arg;
    int rc = 0;
    for (unsigned i = 0; i < p->n && rc != FS_RESTART; i++)
        rc = namei_pre_name(fs, p->dir[i], p->name[i], p->make);
    return rc;
}

/* namei_nlink_done -- LINK_COUNT for r's new nlink, then fs_idirty. */
static int namei_nlink_done(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    int rc = fs_ievent(h, r, UBJ_EV_LINK_COUNT, &r->ip->nlink, sizeof r->ip->nlink,
                       r->ip->nlink);
    return rc < 0 ? rc : fs_idirty(fs, h, r);
}

/* namei_nlink_add -- add `delta` to an inode's link count (and ctime). */
static int namei_nlink_add(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                           int delta)
{
    if (delta == 0)
        return 0;
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    r->ip->nlink = (uint32_t)((int64_t)r->ip->nlink + delta);
    fs_touch(fs, r->ip, false, false, true);
    return namei_nlink_done(fs, h, r);
}

/* namei_ctime -- ctime of an inode to now (it was renamed). */
static int namei_ctime(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    fs_touch(fs, r->ip, false, false, true);
    return fs_idirty(fs, h, r);
}

/* namei_set_parent -- a moved directory's ".." (and its ctime). */
static int namei_set_parent(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                            ubj_ino_t parent)
{
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    r->ip->parent = parent;
    fs_touch(fs, r->ip, false, false, true);
    return fs_idirty(fs, h, r);
}

/* namei_drop_dir -- a removed directory: its last links go (nlink -> 0),
 * then it is destroyed, or orphaned while open. */
static int namei_drop_dir(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    r->ip->nlink = 1;
    rc = namei_nlink_done(fs, h, r);
    if (rc < 0)
        return rc;
    return fs_inode_drop_link(fs, h, r);
}

/* namei_drop -- a name of inode r is gone (file or directory). */
static int namei_drop(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    if (S_ISDIR(r->ip->mode))
        return namei_drop_dir(fs, h, r);
    return fs_inode_drop_link(fs, h, r);
}

/* ---- symlink targets ------------------------------------------------------ */

/* namei_symlink_done -- a new symlink's inode completed (its target or
 * empty extent root in i_data): INODE_INIT again, then fs_idirty. */
static int namei_symlink_done(struct ubj_fs *fs, struct ubj_handle *h,
                              struct fs_iref *c)
{
    int rc = fs_ievent(h, c, UBJ_EV_INODE_INIT, c->ip, sizeof *c->ip, 0);
    return rc < 0 ? rc : fs_idirty(fs, h, c);
}

/* namei_symlink_store -- write a new symlink's target into its inode. */
static int namei_symlink_store(struct ubj_fs *fs, struct ubj_handle *h,
                               struct fs_iref *c, const char *target, size_t tlen)
{
    int rc = fs_iwrite(fs, h, c);
    if (rc < 0)
        return rc;
    memset(&c->ip->i_data, 0, sizeof c->ip->i_data);
    c->ip->size = tlen;
    if (tlen <= UBJ_SYMLINK_INLINE_MAX) {
        c->ip->flags &= ~UBJ_IFL_EXTTREE;
        memcpy(c->ip->i_data.symlink, target, tlen);
        return namei_symlink_done(fs, h, c);
    }
    fs_ext_init(c->ip);
    rc = namei_symlink_done(fs, h, c);
    if (rc < 0)
        return rc;

    uint64_t pblk;
    uint32_t got;
    bool fresh;
    struct ubj_buf *b = NULL;
    rc = fs_ext_alloc(fs, h, c, 0, 1, &pblk, &got, &fresh);
    if (rc < 0)
        return rc;
    rc = ubj_cache_get(fs->cache, pblk, UBJ_GET_NOREAD, &b);
    if (rc < 0)
        return rc;
    fs_gen_bump(fs);
    rc = ubj_txn_write_access(h, &b);
    if (rc == 0) {
        memset(b->data, 0, UBJ_BS);
        memcpy(b->data, target, tlen);
        rc = ubj_txn_dirty(h, b, UBJ_KIND_DATA);
    }
    ubj_cache_put(fs->cache, b);
    return rc;
}

/* namei_symlink_read -- copy up to cap bytes of symlink c's target into
 * buf; *len gets the target's full length.  -EUCLEAN if damaged. */
static int namei_symlink_read(struct ubj_fs *fs, struct fs_iref *c, char *buf,
                              size_t cap, size_t *len)
{
    uint64_t size = c->ip->size;
    bool ext = (c->ip->flags & UBJ_IFL_EXTTREE) != 0;

    if (size == 0 || size > UBJ_SYMLINK_MAX || (!ext && size > UBJ_SYMLINK_INLINE_MAX))
        return ubj_set_error(-EUCLEAN, "symlink %llu: bad size %llu",
                             (unsigned long long)c->ino, (unsigned long long)size);
    *len = (size_t)size;
    size_t n = size < cap ? (size_t)size : cap;
    if (!ext) {
        memcpy(buf, c->ip->i_data.symlink, n);
        return 0;
    }
    uint64_t pblk;
    uint32_t run;
    struct ubj_buf *b = NULL;
    int rc = fs_ext_map(fs, c, 0, 1, &pblk, &run);
    if (rc < 0)
        return rc;
    if (pblk == 0)
        return ubj_set_error(-EUCLEAN, "symlink %llu: target block missing",
                             (unsigned long long)c->ino);
    rc = fs_get_read(fs, pblk, &b);
    if (rc < 0)
        return ubj_set_error(rc, "symlink %llu: reading block %llu: %s",
                             (unsigned long long)c->ino, (unsigned long long)pblk,
                             strerror(-rc));
    memcpy(buf, b->data, n);
    ubj_cache_put(fs->cache, b);
    return 0;
}

/* ---- lookup ----------------------------------------------------------------- */

/* ubj_lookup -- the inode `name` names in `parent`. */
int ubj_lookup(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
               struct ubj_stat *st)
{
    struct ubj_handle *h;
    struct fs_iref d;
    ubj_ino_t ino;
    size_t len;

    ubj_clear_error();
    if (fs == NULL || st == NULL)
        return ubj_set_error(-EINVAL, "lookup: bad argument");
    fs_start(fs, 0, &h);
    struct fs_rd rd;   /* a miss may read outside the lock (fs.h) */
    int rc;
    fs_rd_begin(fs, &rd);
    do {
        rc = namei_dir(fs, parent, &d);
        if (rc < 0)
            continue;
        rc = namei_name(name, &len);
        if (rc == 0)
            rc = namei_child(fs, &d, name, len, &ino);
        fs_iput(fs, &d);
        if (rc == 0)
            rc = fs_istat(fs, ino, st);
    } while (fs_rd_again(&rd, rc));
    return namei_end(fs, h, rc, "lookup", name);
}

/* ---- creating names ------------------------------------------------------- */

/* namei_init_new -- type-specific set-up of a new inode c in parent d. */
static int namei_init_new(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *d,
                          struct fs_iref *c, const struct namei_new *nn)
{
    int rc = fs_iwrite(fs, h, c);
    if (rc < 0)
        return rc;
    if (S_ISCHR(nn->mode) || S_ISBLK(nn->mode))
        c->ip->rdev = nn->rdev;
    if (S_ISDIR(nn->mode)) {
        c->ip->nlink = 2;
        c->ip->parent = d->ino;
    }
    rc = namei_nlink_done(fs, h, c);
    if (rc == 0 && S_ISDIR(nn->mode))
        rc = fs_dir_init(fs, h, c);
    if (rc == 0 && S_ISLNK(nn->mode))
        rc = namei_symlink_store(fs, h, c, nn->target, nn->tlen);
    return rc;
}

/* namei_free_name -- the directory `parent` (held in *d) and the length
 * of `name`, a valid name not yet in it: 0, or the error (nothing held):
 * -ENOTDIR/-ENOENT for the directory, -EINVAL/-ENAMETOOLONG for the name,
 * -EEXIST when it exists or is "." or "..". */
static int namei_free_name(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
                           struct fs_iref *d, size_t *len)
{
    ubj_ino_t other;
    int rc = namei_dir(fs, parent, d);
    if (rc < 0)
        return rc;
    rc = namei_name(name, len);
    if (rc == 0 && namei_is_dot(name, *len))
        rc = -EEXIST;
    if (rc == 0) {
        rc = namei_exists(fs, d, name, *len, &other);
        if (rc == 1)
            rc = -EEXIST;
    }
    if (rc < 0)
        fs_iput(fs, d);
    return rc;
}

/* namei_make -- create `name` in `parent` as described by nn. */
static int namei_make(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t parent,
                      const char *name, const struct namei_new *nn,
                      const struct ubj_cred *cred, struct ubj_stat *st)
{
    struct fs_iref d, c;
    ubj_ino_t ino;
    size_t len;
    int rc = namei_free_name(fs, parent, name, &d, &len);
    if (rc < 0)
        return rc;
    if (S_ISDIR(nn->mode) && d.ip->nlink >= NAMEI_LINK_MAX)
        rc = -EMLINK;
    /* a directory's parent counts its ".." before the child exists
     * (4.4BSD ufs_mkdir: mode sync writes it first, R3) */
    bool counted = false;
    if (rc == 0 && S_ISDIR(nn->mode)) {
        rc = namei_nlink_add(fs, h, &d, 1);
        counted = rc == 0;
    }
    if (rc == 0)
        rc = fs_inode_new(fs, h, parent, nn->mode, cred, &c);
    if (rc < 0) {
        if (counted && fs->error == 0)
            (void)namei_nlink_add(fs, h, &d, -1);
        fs_iput(fs, &d);
        return rc;
    }
    bool added = false;
    rc = namei_init_new(fs, h, &d, &c, nn);
    if (rc == 0)
        rc = fs_dir_add(fs, h, &d, name, len, c.ino, namei_dt(nn->mode));
    added = rc == 0;
    if (rc < 0 && counted && fs->error == 0)
        (void)namei_nlink_add(fs, h, &d, -1);
    if (rc == 0 && st)
        fs_inode_to_stat(c.ip, c.ino, st);
    ino = c.ino;
    fs_iput(fs, &c);
    fs_iput(fs, &d);
    if (rc < 0 && !added && fs->error == 0)
        (void)fs_inode_destroy(fs, h, ino);   /* undo: no name points at it */
    return rc;
}

/* namei_make_entry -- the public create functions' shared frame. */
static int namei_make_entry(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
                            const struct namei_new *nn, const struct ubj_cred *cred,
                            struct ubj_stat *st, const char *op)
{
    struct ubj_handle *h;
    struct fs_rd rd;
    struct namei_pre pre = { .dir = { parent }, .name = { name }, .n = 1, .make = true };
    int rc = fs_start_read_first(fs, NAMEI_CR_MAKE, &h, &rd, namei_pre, &pre);
    if (rc < 0)
        return rc;
    rc = namei_make(fs, h, parent, name, nn, cred, st);
    return namei_end_pre(fs, h, rc, op, name, &rd);
}

/* namei_mknod -- ubj_mknod under the name of operation `op`. */
static int namei_mknod(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
                       uint32_t mode, uint64_t rdev, const struct ubj_cred *cred,
                       struct ubj_stat *st, const char *op)
{
    ubj_clear_error();
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "%s: no file system", op);
    uint32_t type = mode & S_IFMT;
    if (type == 0)
        type = S_IFREG;
    if (type == S_IFDIR)   /* Linux may_mknod(): directories need mkdir */
        return ubj_set_error(-EPERM, "%s: cannot make a directory node", op);
    if (type != S_IFREG && type != S_IFIFO && type != S_IFCHR && type != S_IFBLK &&
        type != S_IFSOCK)
        return ubj_set_error(-EINVAL, "%s: bad file type 0%o", op, (unsigned)type);
    struct namei_new nn = { .mode = type | (mode & 07777), .rdev = rdev };
    return namei_make_entry(fs, parent, name, &nn, cred, st, op);
}

/* ubj_mknod -- create a regular file, fifo, device or socket node. */
int ubj_mknod(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
              uint32_t mode, uint64_t rdev, const struct ubj_cred *cred,
              struct ubj_stat *st)
{
    return namei_mknod(fs, parent, name, mode, rdev, cred, st, "mknod");
}

/* ubj_create -- create a regular file. */
int ubj_create(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
               uint32_t mode, const struct ubj_cred *cred, struct ubj_stat *st)
{
    return namei_mknod(fs, parent, name, S_IFREG | (mode & 07777), 0, cred, st, "create");
}

/* ubj_mkdir -- create a directory. */
int ubj_mkdir(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
              uint32_t mode, const struct ubj_cred *cred, struct ubj_stat *st)
{
    ubj_clear_error();
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "mkdir: no file system");
    struct namei_new nn = { .mode = S_IFDIR | (mode & 07777) };
    return namei_make_entry(fs, parent, name, &nn, cred, st, "mkdir");
}

/* ubj_symlink -- create symlink `name` -> target. */
int ubj_symlink(struct ubj_fs *fs, const char *target, ubj_ino_t parent,
                const char *name, const struct ubj_cred *cred,
                struct ubj_stat *st)
{
    ubj_clear_error();
    if (fs == NULL || target == NULL)
        return ubj_set_error(-EINVAL, "symlink: bad argument");
    size_t tlen = strnlen(target, UBJ_SYMLINK_MAX + 1);
    if (tlen == 0)
        return ubj_set_error(-ENOENT, "symlink: empty target");
    if (tlen > UBJ_SYMLINK_MAX)
        return ubj_set_error(-ENAMETOOLONG, "symlink: target longer than %u bytes",
                             UBJ_SYMLINK_MAX);
    struct namei_new nn = { .mode = S_IFLNK | 0777, .target = target, .tlen = tlen };
    return namei_make_entry(fs, parent, name, &nn, cred, st, "symlink");
}

/* namei_link -- body of ubj_link. */
static int namei_link(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino,
                      ubj_ino_t newparent, const char *newname, struct ubj_stat *st)
{
    struct fs_iref d, c;
    size_t len;
    int rc = namei_free_name(fs, newparent, newname, &d, &len);
    if (rc < 0)
        return rc;
    rc = fs_iget(fs, ino, &c);
    if (rc < 0) {
        fs_iput(fs, &d);
        return rc;
    }
    if (S_ISDIR(c.ip->mode))
        rc = -EPERM;
    else if (c.ip->nlink == 0)
        rc = -ENOENT;
    else if (c.ip->nlink >= NAMEI_LINK_MAX)
        rc = -EMLINK;
    /* the count covers the name before the name exists (R3) */
    if (rc == 0)
        rc = namei_nlink_add(fs, h, &c, 1);
    if (rc == 0) {
        rc = fs_dir_add(fs, h, &d, newname, len, ino, namei_dt(c.ip->mode));
        if (rc < 0 && fs->error == 0)
            (void)namei_nlink_add(fs, h, &c, -1);
    }
    if (rc == 0 && st)
        fs_inode_to_stat(c.ip, ino, st);
    fs_iput(fs, &c);
    fs_iput(fs, &d);
    return rc;
}

/* ubj_link -- hard link `newname` in `newparent` to `ino`. */
int ubj_link(struct ubj_fs *fs, ubj_ino_t ino, ubj_ino_t newparent,
             const char *newname, struct ubj_stat *st)
{
    struct ubj_handle *h;
    ubj_clear_error();
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "link: no file system");
    struct fs_rd rd;
    struct namei_pre pre = { .dir = { newparent }, .name = { newname }, .n = 1 };
    int rc = fs_start_read_first(fs, NAMEI_CR_LINK, &h, &rd, namei_pre, &pre);
    if (rc < 0)
        return rc;
    rc = namei_link(fs, h, ino, newparent, newname, st);
    return namei_end_pre(fs, h, rc, "link", newname, &rd);
}

/* ---- removing names ------------------------------------------------------- */

/* namei_remove -- body of unlink (dir = false) and rmdir (dir = true). */
static int namei_remove(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t parent,
                        const char *name, bool dir)
{
    struct fs_iref d, c;
    ubj_ino_t ino;
    size_t len;
    int rc = namei_dir(fs, parent, &d);
    if (rc < 0)
        return rc;
    rc = namei_name(name, &len);
    if (rc == 0 && namei_is_dot(name, len))
        /* Linux do_rmdir()/do_unlinkat() on a non-LAST_NORM name */
        rc = !dir ? -EISDIR : (len == 2 ? -ENOTEMPTY : -EINVAL);
    if (rc == 0)
        rc = fs_dir_lookup(fs, &d, name, len, &ino, NULL);
    if (rc == 0)
        rc = fs_iget(fs, ino, &c);
    if (rc < 0) {
        fs_iput(fs, &d);
        return rc;
    }
    bool isdir = S_ISDIR(c.ip->mode);
    if (!dir && isdir)
        rc = -EISDIR;
    else if (dir && !isdir)
        rc = -ENOTDIR;
    else if (dir && ino == UBJ_ROOT_INO)
        rc = -EBUSY;
    else if (dir && c.ip->i_data.dir.entries != 0)
        rc = -ENOTEMPTY;
    if (rc == 0)
        rc = fs_dir_remove(fs, h, &d, name, len);
    if (rc == 0 && dir)
        rc = namei_nlink_add(fs, h, &d, -1);
    if (rc == 0)
        rc = namei_drop(fs, h, &c);
    fs_iput(fs, &c);
    fs_iput(fs, &d);
    return rc;
}

/* ubj_unlink -- remove a non-directory name. */
int ubj_unlink(struct ubj_fs *fs, ubj_ino_t parent, const char *name)
{
    struct ubj_handle *h;
    ubj_clear_error();
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "unlink: no file system");
    struct fs_rd rd;
    struct namei_pre pre = { .dir = { parent }, .name = { name }, .n = 1 };
    int rc = fs_start_read_first(fs, NAMEI_CR_REMOVE, &h, &rd, namei_pre, &pre);
    if (rc < 0)
        return rc;
    rc = namei_remove(fs, h, parent, name, false);
    return namei_end_pre(fs, h, rc, "unlink", name, &rd);
}

/* ubj_rmdir -- remove an empty directory. */
int ubj_rmdir(struct ubj_fs *fs, ubj_ino_t parent, const char *name)
{
    struct ubj_handle *h;
    ubj_clear_error();
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "rmdir: no file system");
    struct fs_rd rd;
    struct namei_pre pre = { .dir = { parent }, .name = { name }, .n = 1 };
    int rc = fs_start_read_first(fs, NAMEI_CR_REMOVE, &h, &rd, namei_pre, &pre);
    if (rc < 0)
        return rc;
    rc = namei_remove(fs, h, parent, name, true);
    return namei_end_pre(fs, h, rc, "rmdir", name, &rd);
}

/* ---- rename ----------------------------------------------------------------- */

/* State of one rename: both parents (np may point at op), the moved
 * inode and the inode at the new name (if any). */
struct namei_ren {
    struct fs_iref op, np_own, oc, nc;
    struct fs_iref *np;
    const char *name, *newname;
    size_t len, newlen;
    bool have_nc, odir, ndir, same_parent;
    unsigned flags;
};

/* namei_is_ancestor -- 1 if `anc` is `ino` or one of its ancestors (walking
 * the parent fields up to the root), 0 if not, or -EUCLEAN. */
static int namei_is_ancestor(struct ubj_fs *fs, ubj_ino_t anc, ubj_ino_t ino)
{
    for (uint64_t steps = 0; steps < fs->sb.ninodes; steps++) {
        struct fs_iref r;
        if (ino == anc)
            return 1;
        if (ino == UBJ_ROOT_INO)
            return 0;
        int rc = fs_iget(fs, ino, &r);
        if (rc < 0)
            return rc == -ENOENT ? ubj_set_error(-EUCLEAN, "directory %llu: "
                                   "parent chain broken", (unsigned long long)ino) : rc;
        ubj_ino_t up = r.ip->parent;
        bool isdir = S_ISDIR(r.ip->mode);
        fs_iput(fs, &r);
        if (!isdir || up == 0)
            return ubj_set_error(-EUCLEAN, "directory %llu: bad parent %llu",
                                 (unsigned long long)ino, (unsigned long long)up);
        ino = up;
    }
    return ubj_set_error(-EUCLEAN, "directory parent chain loops");
}

/* namei_ren_check -- every rule of rename(2) before anything changes.
 * Returns 0 to go ahead, 1 for "nothing to do", or a negative errno. */
static int namei_ren_check(struct ubj_fs *fs, struct namei_ren *r)
{
    bool exch = r->flags & UBJ_RENAME_EXCHANGE;
    int rc;

    if ((r->flags & UBJ_RENAME_NOREPLACE) && r->have_nc)
        return -EEXIST;
    if (exch && !r->have_nc)
        return -ENOENT;
    if (r->have_nc && r->nc.ino == r->oc.ino)
        return 1;                                  /* same inode: no change */
    if (!r->same_parent && r->odir) {
        rc = namei_is_ancestor(fs, r->oc.ino, r->np->ino);
        if (rc != 0)
            return rc < 0 ? rc : -EINVAL;          /* into itself or below */
    }
    if (!r->same_parent && r->ndir) {
        rc = namei_is_ancestor(fs, r->nc.ino, r->op.ino);
        if (rc != 0)
            return rc < 0 ? rc : (exch ? -EINVAL : -ENOTEMPTY);
    }
    if (r->have_nc && !exch) {
        if (r->odir && !r->ndir)
            return -ENOTDIR;
        if (!r->odir && r->ndir)
            return -EISDIR;
        if (r->ndir && r->nc.ip->i_data.dir.entries != 0)
            return -ENOTEMPTY;
    }
    if (!r->same_parent) {
        if (r->odir && !r->ndir && r->np->ip->nlink >= NAMEI_LINK_MAX)
            return -EMLINK;
        if (exch && r->ndir && !r->odir && r->op.ip->nlink >= NAMEI_LINK_MAX)
            return -EMLINK;
    }
    return 0;
}

/* namei_ren_exchange -- swap the two names. */
static int namei_ren_exchange(struct ubj_fs *fs, struct ubj_handle *h, struct namei_ren *r)
{
    int rc = fs_dir_set(fs, h, &r->op, r->name, r->len, r->nc.ino,
                        namei_dt(r->nc.ip->mode));
    if (rc == 0)
        rc = fs_dir_set(fs, h, r->np, r->newname, r->newlen, r->oc.ino,
                        namei_dt(r->oc.ip->mode));
    if (rc == 0 && !r->same_parent) {
        if (r->odir)
            rc = namei_set_parent(fs, h, &r->oc, r->np->ino);
        if (rc == 0 && r->ndir)
            rc = namei_set_parent(fs, h, &r->nc, r->op.ino);
        int d = (int)r->odir - (int)r->ndir;       /* subdirectories moved op -> np */
        if (rc == 0)
            rc = namei_nlink_add(fs, h, &r->op, -d);
        if (rc == 0)
            rc = namei_nlink_add(fs, h, r->np, d);
    }
    if (rc == 0)
        rc = namei_ctime(fs, h, &r->oc);
    if (rc == 0)
        rc = namei_ctime(fs, h, &r->nc);
    return rc;
}

/* namei_ren_move -- move (or move over) the name. */
static int namei_ren_move(struct ubj_fs *fs, struct ubj_handle *h, struct namei_ren *r)
{
    unsigned type = namei_dt(r->oc.ip->mode);
    /* link counts of the parents: the moved subdirectory's "..", and the
     * replaced directory's ".." */
    int dop = 0, dnp = 0;
    if (r->odir && !r->same_parent) {
        dop--;
        dnp++;
    }
    if (r->ndir)
        dnp--;
    if (r->same_parent) {
        dop += dnp;
        dnp = 0;
    }
    /* Counts go up before the names they count and down after (4.4BSD
     * ufs_rename; mode sync writes them in that order, R3): a moved file
     * is counted twice while both its names exist, the new parent counts
     * the moved directory before it is there. */
    int rc = 0;
    bool bumped = !r->odir;
    if (bumped)
        rc = namei_nlink_add(fs, h, &r->oc, 1);
    if (rc == 0 && dnp > 0)
        rc = namei_nlink_add(fs, h, r->np, dnp);
    if (rc == 0) {
        if (r->have_nc)
            rc = fs_dir_set(fs, h, r->np, r->newname, r->newlen, r->oc.ino, type);
        else
            rc = fs_dir_add(fs, h, r->np, r->newname, r->newlen, r->oc.ino, type);
    }
    bool moved = rc == 0;
    if (rc == 0)
        rc = fs_dir_remove(fs, h, &r->op, r->name, r->len);
    if (rc < 0) {
        if (!moved && fs->error == 0) {   /* nothing renamed: counts back */
            if (bumped)
                (void)namei_nlink_add(fs, h, &r->oc, -1);
            if (dnp > 0)
                (void)namei_nlink_add(fs, h, r->np, -dnp);
        }
        return rc;
    }
    if (r->odir && !r->same_parent)
        rc = namei_set_parent(fs, h, &r->oc, r->np->ino);
    if (rc == 0 && bumped)
        rc = namei_nlink_add(fs, h, &r->oc, -1);
    if (rc == 0)
        rc = namei_nlink_add(fs, h, &r->op, dop);
    if (rc == 0 && dnp < 0)
        rc = namei_nlink_add(fs, h, r->np, dnp);
    if (rc == 0)
        rc = namei_ctime(fs, h, &r->oc);
    if (rc == 0 && r->have_nc)
        rc = namei_drop(fs, h, &r->nc);
    return rc;
}

/* namei_ren_get -- look up and reference everything a rename touches. */
static int namei_ren_get(struct ubj_fs *fs, struct namei_ren *r, ubj_ino_t parent,
                         ubj_ino_t newparent)
{
    ubj_ino_t oino, nino;
    int rc = namei_dir(fs, parent, &r->op);
    if (rc < 0)
        return rc;
    r->np = &r->op;
    r->same_parent = parent == newparent;
    if (!r->same_parent) {
        rc = namei_dir(fs, newparent, &r->np_own);
        if (rc < 0)
            return rc;
        r->np = &r->np_own;
    }
    rc = namei_name(r->name, &r->len);
    if (rc == 0)
        rc = namei_name(r->newname, &r->newlen);
    if (rc == 0 && (namei_is_dot(r->name, r->len) || namei_is_dot(r->newname, r->newlen)))
        rc = -EBUSY;   /* Linux do_renameat2(): old or new not LAST_NORM */
    if (rc == 0)
        rc = fs_dir_lookup(fs, &r->op, r->name, r->len, &oino, NULL);
    if (rc == 0)
        rc = fs_iget(fs, oino, &r->oc);
    if (rc < 0)
        return rc;
    r->odir = S_ISDIR(r->oc.ip->mode);
    rc = namei_exists(fs, r->np, r->newname, r->newlen, &nino);
    if (rc <= 0)
        return rc;
    if (nino == oino) {             /* hard links of one inode: no 2nd ref */
        r->nc = r->oc;
        r->nc.b = NULL;
        r->have_nc = true;
        return 0;
    }
    rc = fs_iget(fs, nino, &r->nc);
    if (rc < 0)
        return rc;
    r->have_nc = true;
    r->ndir = S_ISDIR(r->nc.ip->mode);
    return 0;
}

/* ubj_rename -- rename(2) / renameat2(2). */
int ubj_rename(struct ubj_fs *fs, ubj_ino_t parent, const char *name,
               ubj_ino_t newparent, const char *newname, unsigned flags)
{
    struct ubj_handle *h;
    struct namei_ren r;

    ubj_clear_error();
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "rename: no file system");
    if ((flags & ~(UBJ_RENAME_NOREPLACE | UBJ_RENAME_EXCHANGE)) != 0 ||
        flags == (UBJ_RENAME_NOREPLACE | UBJ_RENAME_EXCHANGE))
        return ubj_set_error(-EINVAL, "rename: bad flags 0x%x", flags);
    struct fs_rd rd;
    struct namei_pre pre = { .dir = { parent, newparent }, .name = { name, newname },
                             .n = 2 };
    int rc = fs_start_read_first(fs, NAMEI_CR_RENAME, &h, &rd, namei_pre, &pre);
    if (rc < 0)
        return rc;
    memset(&r, 0, sizeof r);
    r.name = name;
    r.newname = newname;
    r.flags = flags;
    rc = namei_ren_get(fs, &r, parent, newparent);
    if (rc == 0)
        rc = namei_ren_check(fs, &r);
    if (rc == 1)
        rc = 0;
    else if (rc == 0 && (flags & UBJ_RENAME_EXCHANGE))
        rc = namei_ren_exchange(fs, h, &r);
    else if (rc == 0)
        rc = namei_ren_move(fs, h, &r);
    fs_iput(fs, &r.nc);
    fs_iput(fs, &r.oc);
    fs_iput(fs, &r.np_own);
    fs_iput(fs, &r.op);
    return namei_end_pre(fs, h, rc, "rename", name, &rd);
}

/* ---- reading ---------------------------------------------------------------- */

/* ubj_readlink -- copy a symlink's target (truncated to size). */
ssize_t ubj_readlink(struct ubj_fs *fs, ubj_ino_t ino, char *buf, size_t size)
{
    struct ubj_handle *h;
    struct fs_iref c;
    size_t len = 0;

    ubj_clear_error();
    if (fs == NULL || (buf == NULL && size > 0))
        return ubj_set_error(-EINVAL, "readlink: bad argument");
    fs_start(fs, 0, &h);
    struct fs_rd rd;   /* a miss may read outside the lock (fs.h) */
    int rc;
    fs_rd_begin(fs, &rd);
    do {
        rc = fs_iget(fs, ino, &c);
        if (rc == 0) {
            if (!S_ISLNK(c.ip->mode))
                rc = -EINVAL;
            else
                rc = namei_symlink_read(fs, &c, buf, size, &len);
            fs_iput(fs, &c);
        }
    } while (fs_rd_again(&rd, rc));
    rc = namei_end(fs, h, rc, "readlink", NULL);
    if (rc < 0)
        return rc;
    return (ssize_t)(len < size ? len : size);
}

/* ubj_readdir -- list directory `ino` from `cookie`. */
int ubj_readdir(struct ubj_fs *fs, ubj_ino_t ino, uint64_t cookie,
                ubj_filldir_t fill, void *ctx)
{
    struct ubj_handle *h;
    struct fs_iref d;

    ubj_clear_error();
    if (fs == NULL || fill == NULL)
        return ubj_set_error(-EINVAL, "readdir: bad argument");
    fs_start(fs, 0, &h);
    int rc = namei_dir(fs, ino, &d);
    if (rc == 0) {
        rc = fs_dir_iterate(fs, &d, cookie, fill, ctx);
        fs_iput(fs, &d);
    }
    return namei_end(fs, h, rc, "readdir", NULL);
}

/* ---- paths ------------------------------------------------------------------ */

/* One path walk: the text still to resolve, owned (grows with symlinks). */
struct namei_walk {
    char *buf;
    size_t len, pos;
    ubj_ino_t cur;          /* directory the next component is looked up in */
    unsigned links;
};

/* namei_walk_link -- splice symlink c's target in front of the rest of
 * the walk (which starts at buf[rest]). */
static int namei_walk_link(struct ubj_fs *fs, struct namei_walk *w, struct fs_iref *c,
                           size_t rest)
{
    char target[UBJ_SYMLINK_MAX];
    size_t tlen = 0;

    if (++w->links > NAMEI_SYMLOOP_MAX)
        return ubj_set_error(-ELOOP, "too many levels of symbolic links");
    int rc = namei_symlink_read(fs, c, target, sizeof target, &tlen);
    if (rc < 0)
        return rc;
    char *nb = malloc(tlen + (w->len - rest) + 1);
    if (nb == NULL)
        return -ENOMEM;
    memcpy(nb, target, tlen);
    memcpy(nb + tlen, w->buf + rest, w->len - rest);
    nb[tlen + w->len - rest] = '\0';
    free(w->buf);
    w->buf = nb;
    w->len = tlen + (w->len - rest);
    w->pos = 0;
    if (target[0] == '/')
        w->cur = UBJ_ROOT_INO;    /* else: relative to the link's directory */
    return 0;
}

/* namei_walk_step -- resolve one component at w->pos.  Returns 0 (done
 * with it), or a negative errno. */
static int namei_walk_step(struct ubj_fs *fs, struct namei_walk *w, bool follow)
{
    struct fs_iref d, c;
    ubj_ino_t next;
    size_t q = w->pos, r;

    while (q < w->len && w->buf[q] != '/')
        q++;
    for (r = q; r < w->len && w->buf[r] == '/'; r++)
        ;
    bool last = r == w->len, slash = last && q < w->len;
    if (q - w->pos > UBJ_NAME_MAX)
        return -ENAMETOOLONG;
    int rc = namei_dir(fs, w->cur, &d);
    if (rc < 0)
        return rc;
    rc = namei_child(fs, &d, w->buf + w->pos, q - w->pos, &next);
    fs_iput(fs, &d);
    if (rc == 0)
        rc = fs_iget(fs, next, &c);
    if (rc < 0)
        return rc;
    uint32_t mode = c.ip->mode;
    if (S_ISLNK(mode) && (!last || follow || slash))
        rc = namei_walk_link(fs, w, &c, q);
    else if ((!last || slash) && !S_ISDIR(mode))
        rc = -ENOTDIR;
    else {
        w->cur = next;
        w->pos = q;
    }
    fs_iput(fs, &c);
    return rc;
}

/* namei_walk -- resolve path[0..len) (absolute) to *ino. */
static int namei_walk(struct ubj_fs *fs, const char *path, size_t len, bool follow,
                      ubj_ino_t *ino)
{
    struct namei_walk w = { .len = len, .cur = UBJ_ROOT_INO };
    int rc = 0;

    w.buf = malloc(len + 1);
    if (w.buf == NULL)
        return -ENOMEM;
    memcpy(w.buf, path, len);
    w.buf[len] = '\0';
    for (;;) {
        while (w.pos < w.len && w.buf[w.pos] == '/')
            w.pos++;
        if (w.pos == w.len)
            break;
        rc = namei_walk_step(fs, &w, follow);
        if (rc < 0)
            break;
    }
    free(w.buf);
    if (rc == 0)
        *ino = w.cur;
    return rc;
}

/* namei_path_check -- an absolute path of sane length: its length. */
static int namei_path_check(const char *path, size_t *len)
{
    if (path == NULL)
        return -EINVAL;
    size_t n = strnlen(path, NAMEI_PATH_MAX);
    if (n == 0)
        return -ENOENT;
    if (n >= NAMEI_PATH_MAX)
        return -ENAMETOOLONG;
    if (path[0] != '/')
        return -EINVAL;
    *len = n;
    return 0;
}

/* ubj_path_lookup -- resolve an absolute path. */
int ubj_path_lookup(struct ubj_fs *fs, const char *path, unsigned flags,
                    struct ubj_stat *st)
{
    struct ubj_handle *h;
    ubj_ino_t ino;
    size_t len;

    ubj_clear_error();
    if (fs == NULL || st == NULL || (flags & ~UBJ_PATH_NOFOLLOW) != 0)
        return ubj_set_error(-EINVAL, "path lookup: bad argument");
    int rc = namei_path_check(path, &len);
    if (rc < 0)
        return ubj_set_error(rc, "path '%.64s': %s", path ? path : "(null)",
                             strerror(-rc));
    fs_start(fs, 0, &h);
    struct fs_rd rd;   /* a miss may read outside the lock (fs.h) */
    fs_rd_begin(fs, &rd);
    do {
        rc = namei_walk(fs, path, len, !(flags & UBJ_PATH_NOFOLLOW), &ino);
        if (rc == 0)
            rc = fs_istat(fs, ino, st);
    } while (fs_rd_again(&rd, rc));
    return namei_end(fs, h, rc, "path", path);
}

/* ubj_path_parent -- resolve all of path but its last component. */
int ubj_path_parent(struct ubj_fs *fs, const char *path, ubj_ino_t *parent,
                    const char **name)
{
    struct ubj_handle *h;
    size_t len, end, start;

    ubj_clear_error();
    if (fs == NULL || parent == NULL || name == NULL)
        return ubj_set_error(-EINVAL, "path parent: bad argument");
    int rc = namei_path_check(path, &len);
    if (rc < 0)
        return ubj_set_error(rc, "path '%.64s': %s", path ? path : "(null)",
                             strerror(-rc));
    for (end = len; end > 0 && path[end - 1] == '/'; end--)
        ;
    if (end == 0)
        return ubj_set_error(-EINVAL, "path '/': no last component");
    for (start = end; path[start - 1] != '/'; start--)
        ;
    if (end - start > UBJ_NAME_MAX)
        return ubj_set_error(-ENAMETOOLONG, "path '%.64s': name too long", path);
    fs_start(fs, 0, &h);
    rc = namei_walk(fs, path, start, true, parent);
    if (rc == 0)
        *name = path + start;
    return namei_end(fs, h, rc, "path", path);
}
