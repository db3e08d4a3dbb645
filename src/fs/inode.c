/*
 * inode.c -- inode references (struct fs_iref), attributes and timestamps,
 * creating and destroying inodes, the open table and the orphan list.
 *
 * Inode i lives in inode-table block it_start + i / 15, slot 1 + i % 15
 * (slot 0 is the block header).  An iref holds a cache reference on that
 * block; fs_iwrite must precede every batch of changes (a mode may move
 * the inode to another buffer) and fs_idirty follow it.
 *
 * Invariants:
 *  - An inode is in use iff its mode is non-zero and its inode-bitmap bit
 *    is set; fs_inode_new and fs_inode_destroy change both in the same
 *    handle.
 *  - The open table counts ubj_open references per inode [fs->lock]; an
 *    entry exists only while its count is > 0.
 *  - The orphan list (sb.orphan_head -> inode.orphan_next -> ... -> 0)
 *    holds exactly the inodes with nlink 0 that are still open (or were
 *    open when the system stopped); mount and unmount destroy all of them,
 *    so a cleanly unmounted image (without ERRORS) has an empty list.
 *    Before freeing anything, fs_orphan_cleanup verifies the whole list
 *    (inode_orphan_verify: what is checkable without a scan of the
 *    directories -- see docs/GUARANTEES.md) and frees nothing if it lies.
 *  - A directory's own "." link goes with its name: dropping the last name
 *    link of a directory (nlink 2 -> 1) takes nlink to 0.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define INODE_DESTROY_CREDITS 64u

/* inode_blk -- the inode-table block holding `ino`. */
static uint64_t inode_blk(const struct ubj_fs *fs, ubj_ino_t ino)
{
    return fs->sb.it_start + ino / UBJ_INODES_PER_BLOCK;
}

/* inode_at -- the inode slot of `ino` in its block's data. */
static struct ubj_inode *inode_at(struct ubj_buf *b, ubj_ino_t ino)
{
    return (struct ubj_inode *)(b->data + UBJ_INODE_SIZE *
                                (1 + ino % UBJ_INODES_PER_BLOCK));
}

/* fs_iget_raw -- reference an inode slot whether in use or not. */
int fs_iget_raw(struct ubj_fs *fs, ubj_ino_t ino, struct fs_iref *r)
{
    struct ubj_buf *b;
    if (ino == 0 || ino >= fs->sb.ninodes)
        return ubj_set_error(-ENOENT, "inode %llu out of range",
                             (unsigned long long)ino);
    int rc = fs_meta_read(fs, inode_blk(fs, ino), UBJ_MAGIC_INODES, &b);
    if (rc < 0)
        return rc;
    r->ino = ino;
    r->b = b;
    r->ip = inode_at(b, ino);
    return 0;
}

/* fs_iget -- reference an in-use inode. */
int fs_iget(struct ubj_fs *fs, ubj_ino_t ino, struct fs_iref *r)
{
    int rc = fs_iget_raw(fs, ino, r);
    if (rc < 0)
        return rc;
    if (r->ip->mode == 0) {
        fs_iput(fs, r);
        return ubj_set_error(-ENOENT, "inode %llu is not in use",
                             (unsigned long long)ino);
    }
    return 0;
}

/* fs_iwrite -- write access to the inode's block; re-point r->ip. */
int fs_iwrite(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    fs_gen_bump(fs);
    int rc = ubj_txn_write_access(h, &r->b);
    if (rc < 0)
        return rc;
    r->ip = inode_at(r->b, r->ino);
    struct ubj_blkhdr *hdr = (struct ubj_blkhdr *)r->b->data;
    if (hdr->magic == 0) {   /* a lazily initialised (all-zero) block */
        hdr->magic = UBJ_MAGIC_INODES;
        hdr->blkno = inode_blk(fs, r->ino);
    }
    return 0;
}

/* fs_ievent -- event `type` for the `len` bytes at `field` of r's inode
 * (a: the event's a). */
int fs_ievent(struct ubj_handle *h, struct fs_iref *r, enum ubj_event_type type,
              const void *field, size_t len, uint64_t a)
{
    return fs_event(h, r->b, field, len,
                    (struct ubj_event){ .type = type, .ino = r->ino, .a = a });
}

/* fs_idirty -- the inode was changed: its attributes (INODE_ATTR: every
 * caller of fs_touch, setattr, size and block counts; the fields with an
 * event of their own -- nlink, xattr_blk, orphan_next, i_data -- are
 * named by their callers), then dirty. */
int fs_idirty(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    static const size_t span[][2] = {
        { offsetof(struct ubj_inode, mode), offsetof(struct ubj_inode, nlink) },
        { offsetof(struct ubj_inode, size), offsetof(struct ubj_inode, xattr_blk) },
        { offsetof(struct ubj_inode, parent), offsetof(struct ubj_inode, reserved) },
    };
    int rc = 0;
    if (h->t->check || h->t->ops->event)   /* events wanted */
        for (size_t i = 0; i < 3 && rc == 0; i++)
            rc = fs_ievent(h, r, UBJ_EV_INODE_ATTR, (uint8_t *)r->ip + span[i][0],
                           span[i][1] - span[i][0], 0);
    return rc < 0 ? rc : fs_meta_dirty(fs, h, r->b);
}

/* fs_iput -- drop the reference. */
void fs_iput(struct ubj_fs *fs, struct fs_iref *r)
{
    if (r->b)
        ubj_cache_put(fs->cache, r->b);
    r->b = NULL;
    r->ip = NULL;
}

/* ---- attributes ------------------------------------------------------------ */

/* inode_ts -- a timespec from seconds and nanoseconds. */
static struct timespec inode_ts(int64_t sec, uint32_t nsec)
{
    struct timespec ts = { .tv_sec = (time_t)sec, .tv_nsec = (long)nsec };
    return ts;
}

/* fs_inode_to_stat -- the public attributes of an inode. */
void fs_inode_to_stat(const struct ubj_inode *ip, ubj_ino_t ino, struct ubj_stat *st)
{
    memset(st, 0, sizeof *st);
    st->ino = ino;
    st->mode = ip->mode;
    st->nlink = ip->nlink;
    st->uid = ip->uid;
    st->gid = ip->gid;
    st->rdev = ip->rdev;
    st->size = ip->size;
    st->blocks = ip->blocks * (UBJ_BS / 512u);
    st->blksize = UBJ_BS;
    st->generation = ip->generation;
    st->atime = inode_ts(ip->atime, ip->atime_ns);
    st->mtime = inode_ts(ip->mtime, ip->mtime_ns);
    st->ctime = inode_ts(ip->ctime, ip->ctime_ns);
    st->crtime = inode_ts(ip->crtime, ip->crtime_ns);
}

/* fs_istat -- the attributes of in-use inode ino. */
int fs_istat(struct ubj_fs *fs, ubj_ino_t ino, struct ubj_stat *st)
{
    struct fs_iref r = { 0 };   /* gcc -O2 cannot see fs_iget sets it */
    int rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        fs_inode_to_stat(r.ip, ino, st);
        fs_iput(fs, &r);
    }
    return rc;
}

/* ubj_getattr -- attributes of `ino`. */
int ubj_getattr(struct ubj_fs *fs, ubj_ino_t ino, struct ubj_stat *st)
{
    struct ubj_handle *h;
    if (!fs || !st)
        return ubj_set_error(-EINVAL, "getattr: bad argument");
    fs_start(fs, 0, &h);
    struct fs_rd rd;   /* a miss may read outside the lock (fs.h) */
    int rc;
    fs_rd_begin(fs, &rd);
    do {
        rc = fs_istat(fs, ino, st);
    } while (fs_rd_again(&rd, rc));
    return fs_stop(fs, h, rc);
}

/* ubj_stat_to_posix -- copy into a struct stat (st_dev = 0). */
void ubj_stat_to_posix(const struct ubj_stat *in, struct stat *out)
{
    memset(out, 0, sizeof *out);
    out->st_ino = (ino_t)in->ino;
    out->st_mode = (mode_t)in->mode;
    out->st_nlink = (nlink_t)in->nlink;
    out->st_uid = (uid_t)in->uid;
    out->st_gid = (gid_t)in->gid;
    out->st_rdev = (dev_t)in->rdev;
    out->st_size = (off_t)in->size;
    out->st_blocks = (blkcnt_t)in->blocks;
    out->st_blksize = (blksize_t)in->blksize;
    out->st_atim = in->atime;
    out->st_mtim = in->mtime;
    out->st_ctim = in->ctime;
}

/* fs_touch -- set the chosen timestamps to now. */
void fs_touch(struct ubj_fs *fs, struct ubj_inode *ip, bool atime, bool mtime,
              bool ctime)
{
    struct timespec now;
    fs_now(fs, &now);
    if (atime) {
        ip->atime = now.tv_sec;
        ip->atime_ns = (uint32_t)now.tv_nsec;
    }
    if (mtime) {
        ip->mtime = now.tv_sec;
        ip->mtime_ns = (uint32_t)now.tv_nsec;
    }
    if (ctime) {
        ip->ctime = now.tv_sec;
        ip->ctime_ns = (uint32_t)now.tv_nsec;
    }
}

/* ---- creating and destroying ------------------------------------------- */

/* inode_parent_sgid -- the parent's setgid bit and gid (false if none). */
static bool inode_parent_sgid(struct ubj_fs *fs, ubj_ino_t parent, uint32_t *gid)
{
    struct fs_iref p = { 0 };
    if (parent == 0 || fs_iget(fs, parent, &p) < 0)
        return false;
    bool sgid = S_ISDIR(p.ip->mode) && (p.ip->mode & S_ISGID);
    *gid = p.ip->gid;
    fs_iput(fs, &p);
    return sgid;
}

/* inode_init -- a fresh inode's fields. */
static void inode_init(struct ubj_fs *fs, struct ubj_inode *ip, uint32_t mode,
                       const struct ubj_cred *cred, bool sgid, uint32_t pgid)
{
    memset(ip, 0, sizeof *ip);
    ip->mode = mode;
    ip->uid = cred ? cred->uid : 0;
    ip->gid = cred ? cred->gid : 0;
    if (sgid) {
        ip->gid = pgid;
        if (S_ISDIR(mode))
            ip->mode |= S_ISGID;
    }
    ip->nlink = 1;
    fs_touch(fs, ip, true, true, true);
    ip->crtime = ip->ctime;
    ip->crtime_ns = ip->ctime_ns;
    ip->generation = (uint32_t)fs->generation++;
    if (S_ISREG(mode))
        fs_ext_init(ip);
}

/* fs_inode_preread_new -- a create's pre-read (fs_start_read_first): the
 * inode bitmap and the inode-table block of the inode fs_inode_new(hint)
 * would take now. */
int fs_inode_preread_new(struct ubj_fs *fs, ubj_ino_t parent_hint)
{
    ubj_ino_t ino;
    struct fs_iref r = { 0 };
    int rc = fs_ialloc_peek(fs, parent_hint, &ino);
    if (rc < 0)
        return rc;
    rc = fs_iget_raw(fs, ino, &r);
    if (rc == 0)
        fs_iput(fs, &r);
    return rc;
}

/* fs_inode_new -- allocate and initialise an inode; a write-accessed iref. */
int fs_inode_new(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t parent_hint,
                 uint32_t mode, const struct ubj_cred *cred, struct fs_iref *r)
{
    uint32_t pgid = 0;
    ubj_ino_t ino;
    if ((mode & S_IFMT) == 0)
        return ubj_set_error(-EINVAL, "new inode without a file type");
    bool sgid = inode_parent_sgid(fs, parent_hint, &pgid);
    int rc = fs_ialloc(fs, h, parent_hint, &ino);
    if (rc < 0)
        return rc;
    rc = fs_iget_raw(fs, ino, r);
    if (rc == 0) {
        rc = fs_iwrite(fs, h, r);
        if (rc < 0)
            fs_iput(fs, r);
    }
    if (rc < 0) {
        (void)fs_ifree(fs, h, ino);
        return rc;
    }
    if (r->ip->mode != 0) {
        fs_iput(fs, r);
        if (!fs->error)
            fs->error = -EUCLEAN;
        return ubj_set_error(-EUCLEAN, "inode %llu is free in the bitmap "
                             "but in use in the table",
                             (unsigned long long)ino);
    }
    inode_init(fs, r->ip, mode, cred, sgid, pgid);
    rc = fs_ievent(h, r, UBJ_EV_INODE_INIT, r->ip, sizeof *r->ip, 0);
    if (rc == 0)
        rc = fs_idirty(fs, h, r);
    if (rc < 0)
        fs_iput(fs, r);
    return rc;
}

/* inode_free_contents -- free the blocks an inode owns. */
static int inode_free_contents(struct ubj_fs *fs, struct ubj_handle *h,
                               struct fs_iref *r)
{
    uint32_t mode = r->ip->mode;
    if ((S_ISREG(mode) || S_ISLNK(mode)) && (r->ip->flags & UBJ_IFL_EXTTREE))
        return fs_ext_truncate(fs, h, r, 0);
    if (S_ISDIR(mode))
        return fs_dir_destroy(fs, h, r);
    return 0;
}

/* fs_inode_destroy -- free every block of the inode and the inode. */
int fs_inode_destroy(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino)
{
    struct fs_iref r = { 0 };
    int rc = fs_iget(fs, ino, &r);
    if (rc == -ENOENT)
        return ubj_set_error(-EUCLEAN, "destroying inode %llu, which is free",
                             (unsigned long long)ino);
    if (rc < 0)
        return rc;
    if (fs->sb.orphan_head != 0)
        rc = fs_orphan_del(fs, h, ino);
    if (rc == 0)
        rc = fs_iwrite(fs, h, &r);
    if (rc == 0)
        rc = inode_free_contents(fs, h, &r);
    if (rc == 0)
        rc = fs_xattr_free(fs, h, &r);
    if (rc == 0)
        rc = fs_iwrite(fs, h, &r);
    if (rc == 0) {
        memset(r.ip, 0, sizeof *r.ip);
        rc = fs_ievent(h, &r, UBJ_EV_INODE_CLEAR, r.ip, sizeof *r.ip, 0);
        if (rc == 0)
            rc = fs_idirty(fs, h, &r);
    }
    fs_iput(fs, &r);
    if (rc == 0)
        rc = fs_ifree(fs, h, ino);
    return rc;
}

/* fs_inode_drop_link -- nlink--, ctime; at 0 free the inode or, if open,
 * put it on the orphan list.  After a free, r may only be fs_iput. */
int fs_inode_drop_link(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    struct ubj_inode *ip = r->ip;
    if (ip->nlink == 0) {
        if (!fs->error)
            fs->error = -EUCLEAN;
        return ubj_set_error(-EUCLEAN, "inode %llu: link count already 0",
                             (unsigned long long)r->ino);
    }
    ip->nlink--;
    if (S_ISDIR(ip->mode) && ip->nlink == 1)
        ip->nlink = 0;       /* its "." goes with its name */
    fs_touch(fs, ip, false, false, true);
    rc = fs_ievent(h, r, UBJ_EV_LINK_COUNT, &ip->nlink, sizeof ip->nlink, ip->nlink);
    if (rc == 0)
        rc = fs_idirty(fs, h, r);
    if (rc < 0 || ip->nlink > 0)
        return rc;
    if (fs_open_count(fs, r->ino) > 0)
        return fs_orphan_add(fs, h, r);
    return fs_inode_destroy(fs, h, r->ino);
}

/* ---- open table ------------------------------------------------------------ */

/* inode_bucket -- the open-table bucket of `ino`. */
static struct fs_open **inode_bucket(struct ubj_fs *fs, ubj_ino_t ino)
{
    return &fs->open[(ino * 0x9e3779b97f4a7c15ULL) >> 56];
}

/* fs_open_inc -- one more open reference on `ino`. */
void fs_open_inc(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct fs_open **head = inode_bucket(fs, ino);
    for (struct fs_open *o = *head; o; o = o->next) {
        if (o->ino == ino) {
            o->count++;
            return;
        }
    }
    struct fs_open *o = malloc(sizeof *o);
    if (!o) {   /* no way to report it (void by contract): fail loudly */
        fprintf(stderr, "ubjfs: out of memory in the open table\n");
        abort();
    }
    o->ino = ino;
    o->count = 1;
    o->next = *head;
    *head = o;
}

/* fs_open_dec -- one reference less; the remaining count or -EINVAL. */
int fs_open_dec(struct ubj_fs *fs, ubj_ino_t ino)
{
    for (struct fs_open **p = inode_bucket(fs, ino); *p; p = &(*p)->next) {
        struct fs_open *o = *p;
        if (o->ino != ino)
            continue;
        uint32_t left = --o->count;
        if (left == 0) {
            *p = o->next;
            free(o);
        }
        return (int)(left > INT32_MAX ? INT32_MAX : left);
    }
    return ubj_set_error(-EINVAL, "inode %llu is not open",
                         (unsigned long long)ino);
}

/* fs_open_count -- open references on `ino`. */
uint32_t fs_open_count(struct ubj_fs *fs, ubj_ino_t ino)
{
    for (struct fs_open *o = *inode_bucket(fs, ino); o; o = o->next)
        if (o->ino == ino)
            return o->count;
    return 0;
}

/* ---- orphan list ----------------------------------------------------------- */

/* inode_orphan_head -- the superblock with its new orphan_head (event
 * `type` for inode ino). */
static int inode_orphan_head(struct ubj_fs *fs, struct ubj_handle *h,
                             enum ubj_event_type type, ubj_ino_t ino)
{
    struct ubj_event ev = { .type = type, .ino = ino, .a = fs->sb.orphan_head };
    return fs_super_dirty_ev(fs, h, &ev, offsetof(struct ubj_super, orphan_head),
                             sizeof fs->sb.orphan_head);
}

/* fs_orphan_add -- push an unlinked, still-open inode on the list. */
int fs_orphan_add(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    if (fs->sb.orphan_head == r->ino || r->ip->orphan_next != 0)
        return 0;    /* already listed */
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    r->ip->orphan_next = fs->sb.orphan_head;
    rc = fs_ievent(h, r, UBJ_EV_ORPHAN_LINK, &r->ip->orphan_next,
                   sizeof r->ip->orphan_next, r->ip->orphan_next);
    if (rc == 0)
        rc = fs_idirty(fs, h, r);
    if (rc < 0)
        return rc;
    fs->sb.orphan_head = r->ino;
    return inode_orphan_head(fs, h, UBJ_EV_ORPHAN_LINK, r->ino);
}

/* inode_orphan_bad -- a broken orphan list. */
static int inode_orphan_bad(struct ubj_fs *fs, ubj_ino_t ino, const char *why)
{
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "orphan list: inode %llu %s",
                         (unsigned long long)ino, why);
}

/* inode_orphan_clear -- r leaves the list: its orphan_next = 0. */
static int inode_orphan_clear(struct ubj_fs *fs, struct ubj_handle *h,
                              struct fs_iref *r)
{
    int rc = fs_iwrite(fs, h, r);
    if (rc == 0) {
        r->ip->orphan_next = 0;
        rc = fs_ievent(h, r, UBJ_EV_ORPHAN_UNLINK, &r->ip->orphan_next,
                       sizeof r->ip->orphan_next, 0);
    }
    return rc == 0 ? fs_idirty(fs, h, r) : rc;
}

/* inode_orphan_unhead -- remove the list's first inode. */
static int inode_orphan_unhead(struct ubj_fs *fs, struct ubj_handle *h,
                               ubj_ino_t ino)
{
    struct fs_iref r = { 0 };
    int rc = fs_iget_raw(fs, ino, &r);
    if (rc < 0)
        return rc;
    uint64_t next = r.ip->orphan_next;
    if (next >= fs->sb.ninodes) {
        fs_iput(fs, &r);
        return inode_orphan_bad(fs, ino, "links out of range");
    }
    rc = inode_orphan_clear(fs, h, &r);
    fs_iput(fs, &r);
    if (rc < 0)
        return rc;
    fs->sb.orphan_head = next;
    return inode_orphan_head(fs, h, UBJ_EV_ORPHAN_UNLINK, ino);
}

/* inode_orphan_unlink -- remove `ino` after `prev` (prev.next == ino). */
static int inode_orphan_unlink(struct ubj_fs *fs, struct ubj_handle *h,
                               struct fs_iref *prev, ubj_ino_t ino)
{
    struct fs_iref r = { 0 };
    int rc = fs_iget_raw(fs, ino, &r);
    if (rc < 0)
        return rc;
    uint64_t next = r.ip->orphan_next;
    rc = inode_orphan_clear(fs, h, &r);
    fs_iput(fs, &r);
    if (rc == 0)
        rc = fs_iwrite(fs, h, prev);
    if (rc == 0) {
        prev->ip->orphan_next = next;
        rc = fs_ievent(h, prev, UBJ_EV_ORPHAN_UNLINK, &prev->ip->orphan_next,
                       sizeof prev->ip->orphan_next, ino);
    }
    if (rc == 0)
        rc = fs_idirty(fs, h, prev);
    return rc;
}

/* fs_orphan_del -- take `ino` off the list (0 if it is not on it). */
int fs_orphan_del(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino)
{
    if (fs->sb.orphan_head == 0)
        return 0;
    if (fs->sb.orphan_head == ino)
        return inode_orphan_unhead(fs, h, ino);
    ubj_ino_t cur = fs->sb.orphan_head;
    for (uint64_t steps = 0; cur != 0; steps++) {
        struct fs_iref r = { 0 };
        if (steps >= fs->sb.ninodes)
            return inode_orphan_bad(fs, cur, "starts a loop");
        int rc = fs_iget_raw(fs, cur, &r);
        if (rc < 0)
            return rc;
        ubj_ino_t next = r.ip->orphan_next;
        if (next >= fs->sb.ninodes) {
            fs_iput(fs, &r);
            return inode_orphan_bad(fs, cur, "links out of range");
        }
        if (next == ino) {
            rc = inode_orphan_unlink(fs, h, &r, ino);
            fs_iput(fs, &r);
            return rc;
        }
        fs_iput(fs, &r);
        cur = next;
    }
    return 0;
}

/* inode_orphan_refuse -- a list that lies: nothing is freed; sticky
 * error (read-only until fsck), message, -EUCLEAN. */
static int __attribute__((format(printf, 4, 5)))
inode_orphan_refuse(struct ubj_fs *fs, ubj_ino_t ino, ubj_ino_t prev,
                    const char *fmt, ...)
{
    char why[120], after[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (prev)
        snprintf(after, sizeof after, "inode %llu", (unsigned long long)prev);
    else
        snprintf(after, sizeof after, "the superblock");
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "orphan list: inode %llu (after %s) %s: "
                         "nothing freed, read-only until fsck",
                         (unsigned long long)ino, after, why);
}

/* inode_orphan_dir_empty -- a directory on the list must be empty by its
 * own records: no names counted, a one-level tree, no record in it. */
static int inode_orphan_dir_empty(struct ubj_fs *fs, ubj_ino_t ino, ubj_ino_t prev,
                                  const struct ubj_dir_root *d)
{
    struct ubj_buf *b;
    if (d->entries != 0)
        return inode_orphan_refuse(fs, ino, prev, "is a directory holding %llu "
                                   "name%s", (unsigned long long)d->entries,
                                   d->entries == 1 ? "" : "s");
    if (d->depth != 0)
        return inode_orphan_refuse(fs, ino, prev, "is a directory whose tree has "
                                   "%u levels", d->depth + 1);
    if (d->root < fs->sb.data_start || d->root >= fs->sb.nblocks)
        return inode_orphan_refuse(fs, ino, prev, "is a directory whose tree is "
                                   "at block %llu, outside the data area",
                                   (unsigned long long)d->root);
    int rc = fs_meta_read(fs, d->root, UBJ_MAGIC_DIR, &b);
    if (rc < 0)
        return rc;
    const struct ubj_dir_node *n = (const struct ubj_dir_node *)b->data;
    unsigned nrec = n->nrec;
    bool mine = n->owner == ino && n->level == 0;
    ubj_cache_put(fs->cache, b);
    if (!mine || nrec != 0)
        return inode_orphan_refuse(fs, ino, prev, "is a directory whose root node "
                                   "%s", mine ? "holds names" : "is not its own leaf");
    return 0;
}

/* inode_orphan_check -- can `ino` (reached after `prev`; 0: the
 * superblock) be on the list: in range, in use in the table and the
 * bitmap, no links, a directory empty.  *next = its link. */
static int inode_orphan_check(struct ubj_fs *fs, ubj_ino_t ino, ubj_ino_t prev,
                              ubj_ino_t *next)
{
    struct fs_iref r = { 0 };
    if (ino == UBJ_ROOT_INO || ino >= fs->sb.ninodes)
        return inode_orphan_refuse(fs, ino, prev, "%s", ino == UBJ_ROOT_INO ?
                                   "is the root directory" : "is out of range");
    int rc = fs_iget_raw(fs, ino, &r);
    if (rc < 0)
        return rc;
    struct ubj_inode ip = *r.ip;
    fs_iput(fs, &r);
    int used = fs_ialloc_test(fs, ino);
    if (used < 0)
        return used;
    *next = ip.orphan_next;
    if (ip.mode == 0 || !used)
        return inode_orphan_refuse(fs, ino, prev, "is free%s", ip.mode ?
                                   " in the inode bitmap" : "");
    if (ip.nlink != 0)
        return inode_orphan_refuse(fs, ino, prev, "has %u link%s", ip.nlink,
                                   ip.nlink == 1 ? "" : "s");
    if (S_ISDIR(ip.mode))
        return inode_orphan_dir_empty(fs, ino, prev, &ip.i_data.dir);
    return 0;
}

/*
 * inode_orphan_verify -- the whole list, before anything is freed.  A
 * cleanly unmounted image (without ERRORS) has none; each member passes
 * inode_orphan_check; a loop is found by Brent's method (a mark moved to
 * the current inode after 1, 2, 4, ... steps: any cycle meets it again
 * within twice its length plus the tail, and memory stays O(1)).
 */
static int inode_orphan_verify(struct ubj_fs *fs)
{
    ubj_ino_t cur = fs->sb.orphan_head, prev = 0, mark = cur, next = 0;
    uint32_t state = fs->sb.state;
    if (cur != 0 && (state & UBJ_STATE_CLEAN) && !(state & UBJ_STATE_ERRORS))
        return inode_orphan_refuse(fs, cur, 0, "heads the list of an image that "
                                   "was unmounted cleanly (it must be empty)");
    for (uint64_t run = 0, power = 1; cur != 0; ) {
        int rc = inode_orphan_check(fs, cur, prev, &next);
        if (rc < 0)
            return rc;
        prev = cur;
        cur = next;
        if (cur == mark)
            return inode_orphan_refuse(fs, cur, prev, "closes a loop");
        if (++run == power) {
            mark = cur;
            power *= 2;
            run = 0;
        }
    }
    return 0;
}

/* inode_orphan_one -- free the first orphan (verified) in its own handle. */
static int inode_orphan_one(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct ubj_handle *h;
    int rc = ubj_txn_start(&fs->txn, INODE_DESTROY_CREDITS, &h);
    if (rc < 0)
        return rc;
    rc = inode_orphan_unhead(fs, h, ino);
    if (rc == 0)
        rc = fs_inode_destroy(fs, h, ino);
    int src = ubj_txn_stop(h);
    return rc < 0 ? rc : src;
}

/* fs_orphan_cleanup -- verify the orphan list, then free every inode on
 * it.  Nothing after an error (the mount is read-only). */
int fs_orphan_cleanup(struct ubj_fs *fs)
{
    if (fs->error || fs->sb.orphan_head == 0)
        return 0;
    int rc = inode_orphan_verify(fs);
    while (rc == 0 && fs->sb.orphan_head != 0)
        rc = inode_orphan_one(fs, fs->sb.orphan_head);
    if (rc < 0 && !fs->error)
        fs->error = rc;   /* unmount records ERRORS: the list is left */
    return rc;
}
