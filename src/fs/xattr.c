/*
 * xattr.c -- extended attributes: ubj_getxattr, ubj_setxattr,
 * ubj_listxattr, ubj_removexattr, with Linux's semantics and errors, kept
 * in one UBJ_MAGIC_XATTR block per inode (format.h, docs/FORMAT.md).
 *
 * Invariants:
 *  X1 inode.xattr_blk is 0 or a block in [data_start, nblocks) holding an
 *     xattr node owned by the inode; that block counts in inode.blocks.
 *  X2 a node holds 1..n records, sorted by (ns, name bytes, name length),
 *     unique, packed from offset 32 and padded to 4 bytes; `used` is the
 *     sum of their padded sizes and at most UBJ_XATTR_SPACE.  Removing
 *     the last record frees the block.
 *  X3 a change is built in a scratch copy first; the block and the inode
 *     are written only once the new set is known to fit, so a refused
 *     change (-EEXIST, -ENODATA, -ENOSPC) changes nothing.
 * Every node is checked against X1/X2 each time it is read (xattr_check);
 * a violation is -EUCLEAN and turns the mount read-only (fs->error), as for
 * every corruption the library finds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define XATTR_CREDITS FS_XATTR_CREDITS

struct xattr_name {
    uint8_t ns;          /* UBJ_XATTR_NS_* */
    uint8_t len;         /* bytes of s (no prefix) */
    const char *s;
};

static const struct {
    const char *prefix;
    uint8_t len, ns;
} xattr_ns[] = {
    { "user.", 5, UBJ_XATTR_NS_USER },
    { "trusted.", 8, UBJ_XATTR_NS_TRUSTED },
    { "security.", 9, UBJ_XATTR_NS_SECURITY },
};
#define XATTR_NNS (sizeof xattr_ns / sizeof xattr_ns[0])

/* One record, as read from a node. */
struct xattr_rec {
    uint8_t ns, nlen;
    uint16_t vlen;
    const uint8_t *name, *value;
};

/* xattr_prefix -- the prefix of namespace ns ("" if unknown). */
static const char *xattr_prefix(uint8_t ns, size_t *len)
{
    for (size_t i = 0; i < XATTR_NNS; i++) {
        if (xattr_ns[i].ns == ns) {
            *len = xattr_ns[i].len;
            return xattr_ns[i].prefix;
        }
    }
    *len = 0;
    return "";
}

/* xattr_name_parse -- split "ns.name" (Linux's checks and errors). */
static int xattr_name_parse(const char *name, struct xattr_name *out)
{
    if (name == NULL)
        return ubj_set_error(-EINVAL, "xattr: no name");
    size_t n = strnlen(name, UBJ_XATTR_NAME_MAX + 1);
    if (n == 0 || n > UBJ_XATTR_NAME_MAX)
        return ubj_set_error(-ERANGE, "xattr: name of %s bytes (1..255)",
                             n == 0 ? "0" : "more than 255");
    for (size_t i = 0; i < XATTR_NNS; i++) {
        if (strncmp(name, xattr_ns[i].prefix, xattr_ns[i].len) != 0)
            continue;
        if (n == xattr_ns[i].len)
            return ubj_set_error(-EINVAL, "xattr: \"%s\": empty name", name);
        out->ns = xattr_ns[i].ns;
        out->len = (uint8_t)(n - xattr_ns[i].len);
        out->s = name + xattr_ns[i].len;
        return 0;
    }
    return ubj_set_error(-EOPNOTSUPP, "xattr: \"%.40s\": namespace not "
                         "supported (user., trusted., security.)", name);
}

/* xattr_rec_size -- the padded size of a record. */
static size_t xattr_rec_size(size_t nlen, size_t vlen)
{
    return (UBJ_XATTR_REC_FIXED + nlen + vlen + 3u) & ~(size_t)3u;
}

/* xattr_cmp -- order of record (ns, name, len) against a name. */
static int xattr_cmp(uint8_t ns, const uint8_t *name, size_t len,
                     const struct xattr_name *x)
{
    if (ns != x->ns)
        return ns < x->ns ? -1 : 1;
    size_t m = len < x->len ? len : x->len;
    int c = memcmp(name, x->s, m);
    if (c != 0)
        return c;
    return len == x->len ? 0 : (len < x->len ? -1 : 1);
}

/* xattr_rec_at -- decode the record at offset off of a record area. */
static void xattr_rec_at(const uint8_t *area, size_t off, struct xattr_rec *r)
{
    const uint8_t *p = area + off;
    r->ns = p[0];
    r->nlen = p[1];
    r->vlen = (uint16_t)(p[2] | (p[3] << 8));
    r->name = p + UBJ_XATTR_REC_FIXED;
    r->value = r->name + r->nlen;
}

/* xattr_corrupt -- a broken node: -EUCLEAN, the mount turns read-only. */
static int xattr_corrupt(struct ubj_fs *fs, ubj_ino_t ino, uint64_t blk,
                         const char *why)
{
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "inode %llu: corrupt xattr block %llu: %s",
                         (unsigned long long)ino, (unsigned long long)blk, why);
}

/* xattr_check -- X2 for node data b of inode ino. */
static int xattr_check(struct ubj_fs *fs, ubj_ino_t ino, uint64_t blk,
                       const uint8_t *b)
{
    const struct ubj_xattr_node *n = (const struct ubj_xattr_node *)b;
    const uint8_t *area = b + UBJ_XATTR_REC_OFF;
    if (n->owner != ino)
        return xattr_corrupt(fs, ino, blk, "owned by another inode");
    if (n->count == 0 || n->used > UBJ_XATTR_SPACE)
        return xattr_corrupt(fs, ino, blk, "bad record count or size");
    size_t off = 0;
    struct xattr_rec prev = { 0 };
    for (unsigned i = 0; i < n->count; i++) {
        struct xattr_rec r;
        if (off + UBJ_XATTR_REC_FIXED > n->used)
            return xattr_corrupt(fs, ino, blk, "record past the end");
        xattr_rec_at(area, off, &r);
        if (r.ns < UBJ_XATTR_NS_USER || r.ns > UBJ_XATTR_NS_SECURITY || r.nlen == 0)
            return xattr_corrupt(fs, ino, blk, "bad record name");
        off += xattr_rec_size(r.nlen, r.vlen);
        if (off > n->used)
            return xattr_corrupt(fs, ino, blk, "record past the end");
        if (memchr(r.name, 0, r.nlen) != NULL)
            return xattr_corrupt(fs, ino, blk, "bad record name");
        struct xattr_name x = { r.ns, r.nlen, (const char *)r.name };
        if (i > 0 && xattr_cmp(prev.ns, prev.name, prev.nlen, &x) >= 0)
            return xattr_corrupt(fs, ino, blk, "records out of order");
        prev = r;
    }
    if (off != n->used)
        return xattr_corrupt(fs, ino, blk, "record sizes do not add up");
    return 0;
}

/* xattr_load -- the inode's node buffer, checked; *out = NULL if none. */
static int xattr_load(struct ubj_fs *fs, struct fs_iref *r, struct ubj_buf **out)
{
    uint64_t blk = r->ip->xattr_blk;
    *out = NULL;
    if (blk == 0)
        return 0;
    if (blk < fs->sb.data_start || blk >= fs->sb.nblocks)
        return xattr_corrupt(fs, r->ino, blk, "outside the data area");
    struct ubj_buf *b;
    int rc = fs_meta_read(fs, blk, UBJ_MAGIC_XATTR, &b);
    if (rc < 0)
        return rc;
    rc = xattr_check(fs, r->ino, blk, b->data);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    *out = b;
    return 0;
}

/* xattr_find -- the record named x in node b: its offset, or -1. */
static long xattr_find(const struct ubj_buf *b, const struct xattr_name *x,
                       struct xattr_rec *rec)
{
    if (b == NULL)
        return -1;
    const struct ubj_xattr_node *n = (const struct ubj_xattr_node *)b->data;
    const uint8_t *area = b->data + UBJ_XATTR_REC_OFF;
    size_t off = 0;
    for (unsigned i = 0; i < n->count; i++) {
        xattr_rec_at(area, off, rec);
        int c = xattr_cmp(rec->ns, rec->name, rec->nlen, x);
        if (c == 0)
            return (long)off;
        if (c > 0)
            break;
        off += xattr_rec_size(rec->nlen, rec->vlen);
    }
    return -1;
}

/* xattr_user_ok -- user.* attributes exist on files and directories only. */
static bool xattr_user_ok(const struct xattr_name *x, uint32_t mode)
{
    return x->ns != UBJ_XATTR_NS_USER || S_ISREG(mode) || S_ISDIR(mode);
}

/* ---- building a new record set ---------------------------------------- */

struct xattr_build {
    uint8_t area[UBJ_XATTR_SPACE];
    size_t used;
    unsigned count;
};

/* xattr_emit -- append one record; -ENOSPC if it does not fit. */
static int xattr_emit(struct xattr_build *nb, uint8_t ns, const void *name,
                      size_t nlen, const void *value, size_t vlen)
{
    size_t sz = xattr_rec_size(nlen, vlen);
    if (sz > UBJ_XATTR_SPACE - nb->used)
        return -ENOSPC;
    uint8_t *p = nb->area + nb->used;
    memset(p, 0, sz);
    p[0] = ns;
    p[1] = (uint8_t)nlen;
    p[2] = (uint8_t)(vlen & 0xff);
    p[3] = (uint8_t)(vlen >> 8);
    memcpy(p + UBJ_XATTR_REC_FIXED, name, nlen);
    if (vlen > 0)
        memcpy(p + UBJ_XATTR_REC_FIXED + nlen, value, vlen);
    nb->used += sz;
    nb->count++;
    return 0;
}

/* xattr_rebuild -- into nb: the old records of b (may be NULL) with x
 * set to value, or with x left out when `remove`; -ENOSPC if too big. */
static int xattr_rebuild(const struct ubj_buf *b, const struct xattr_name *x,
                         const void *value, size_t vlen, bool remove,
                         struct xattr_build *nb)
{
    nb->used = 0;
    nb->count = 0;
    bool placed = remove;
    int rc = 0;
    if (b != NULL) {
        const struct ubj_xattr_node *n = (const struct ubj_xattr_node *)b->data;
        const uint8_t *area = b->data + UBJ_XATTR_REC_OFF;
        size_t off = 0;
        for (unsigned i = 0; i < n->count && rc == 0; i++) {
            struct xattr_rec r;
            xattr_rec_at(area, off, &r);
            off += xattr_rec_size(r.nlen, r.vlen);
            int c = xattr_cmp(r.ns, r.name, r.nlen, x);
            if (c >= 0 && !placed) {
                rc = xattr_emit(nb, x->ns, x->s, x->len, value, vlen);
                placed = true;
            }
            if (c != 0 && rc == 0)
                rc = xattr_emit(nb, r.ns, r.name, r.nlen, r.value, r.vlen);
        }
    }
    if (rc == 0 && !placed)
        rc = xattr_emit(nb, x->ns, x->s, x->len, value, vlen);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* xattr_blk_ev -- XATTR: the inode's xattr_blk was set or cleared. */
static int xattr_blk_ev(struct ubj_handle *h, struct fs_iref *r)
{
    return fs_ievent(h, r, UBJ_EV_XATTR, &r->ip->xattr_blk, sizeof r->ip->xattr_blk,
                     r->ip->xattr_blk);
}

/* xattr_store -- write nb into the inode's node (allocating one if
 * needed) and record it in the inode; ctime. */
static int xattr_store(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                       const struct xattr_build *nb)
{
    uint64_t blk = r->ip->xattr_blk;
    bool fresh = blk == 0;
    int rc;
    if (fresh) {
        uint32_t got;
        rc = fs_balloc(fs, h, r->b->d->blkno, 1, &blk, &got);
        if (rc < 0)
            return rc;
    }
    struct ubj_buf *b;
    rc = fresh ? fs_meta_new(fs, h, blk, UBJ_MAGIC_XATTR, r->ino, &b)
               : fs_meta_write_begin(fs, h, blk, UBJ_MAGIC_XATTR, &b);
    if (rc == 0) {
        struct ubj_xattr_node *n = (struct ubj_xattr_node *)b->data;
        n->owner = r->ino;
        n->count = (uint16_t)nb->count;
        n->used = (uint16_t)nb->used;
        n->reserved = 0;
        memcpy(b->data + UBJ_XATTR_REC_OFF, nb->area, nb->used);
        memset(b->data + UBJ_XATTR_REC_OFF + nb->used, 0,
               UBJ_XATTR_SPACE - nb->used);
        rc = fs_event(h, b, &n->owner, UBJ_BS - offsetof(struct ubj_xattr_node, owner),
                      (struct ubj_event){ .type = UBJ_EV_XATTR, .ino = r->ino });
        if (rc == 0)
            rc = fs_meta_dirty(fs, h, b);
        ubj_cache_put(fs->cache, b);
    }
    if (rc == 0)
        rc = fs_iwrite(fs, h, r);
    if (rc < 0) {
        if (fresh)
            (void)fs_bfree(fs, h, blk, 1);
        return rc;
    }
    if (fresh) {
        r->ip->xattr_blk = blk;
        r->ip->blocks++;
        rc = xattr_blk_ev(h, r);   /* R1: after the node's NODE_INIT */
        if (rc < 0)
            return rc;
    }
    fs_touch(fs, r->ip, false, false, true);
    return fs_idirty(fs, h, r);
}

/* fs_xattr_free -- free the inode's xattr block, if any. */
int fs_xattr_free(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    uint64_t blk = r->ip->xattr_blk;
    if (blk == 0)
        return 0;
    if (blk < fs->sb.data_start || blk >= fs->sb.nblocks)
        return xattr_corrupt(fs, r->ino, blk, "outside the data area");
    int rc = fs_iwrite(fs, h, r);
    if (rc < 0)
        return rc;
    r->ip->xattr_blk = 0;
    r->ip->blocks = r->ip->blocks > 0 ? r->ip->blocks - 1 : 0;
    rc = xattr_blk_ev(h, r);      /* R2: before the block's BLOCK_FREE */
    if (rc == 0)
        rc = fs_idirty(fs, h, r);
    if (rc == 0)
        rc = fs_bfree(fs, h, blk, 1);
    return rc;
}

/* xattr_change -- set (value) or remove one attribute under the lock. */
static int xattr_change(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r,
                        const struct xattr_name *x, const void *value, size_t vlen,
                        int flags, bool remove)
{
    struct ubj_buf *b;
    struct xattr_rec rec;
    int rc = xattr_load(fs, r, &b);
    if (rc < 0)
        return rc;
    bool found = xattr_find(b, x, &rec) >= 0;
    if (remove && !found)
        rc = -ENODATA;
    else if (!remove && found && (flags & UBJ_XATTR_CREATE))
        rc = -EEXIST;
    else if (!remove && !found && (flags & UBJ_XATTR_REPLACE))
        rc = -ENODATA;
    struct xattr_build *nb = NULL;
    if (rc == 0) {
        nb = malloc(sizeof *nb);
        rc = nb ? xattr_rebuild(b, x, value, vlen, remove, nb) : -ENOMEM;
    }
    if (b != NULL)
        ubj_cache_put(fs->cache, b);
    if (rc == 0 && nb->count == 0) {
        rc = fs_xattr_free(fs, h, r);
        if (rc == 0 && (rc = fs_iwrite(fs, h, r)) == 0) {
            fs_touch(fs, r->ip, false, false, true);
            rc = fs_idirty(fs, h, r);
        }
    } else if (rc == 0) {
        rc = xattr_store(fs, h, r, nb);
    }
    free(nb);
    return rc;
}

/* fs_xattr_killpriv -- drop security.capability: a file whose contents
 * or owner changed loses its file capabilities (cap_inode_killpriv()). */
int fs_xattr_killpriv(struct ubj_fs *fs, struct ubj_handle *h, struct fs_iref *r)
{
    struct xattr_name x;
    if (r->ip->xattr_blk == 0 || !S_ISREG(r->ip->mode))
        return 0;
    int rc = xattr_name_parse("security.capability", &x);
    if (rc == 0)
        rc = xattr_change(fs, h, r, &x, NULL, 0, 0, true);
    return rc == -ENODATA ? 0 : rc;
}

/* ---- the public functions ---------------------------------------------- */

/* xattr_err -- the message of a failed call (keeps a lower one). */
static int xattr_err(int rc, const char *op, ubj_ino_t ino, const char *name)
{
    if (rc == -EUCLEAN || rc == -EIO || rc == -EROFS)
        return rc;          /* the lower layer's message names the problem */
    return ubj_set_error(rc, "%s: inode %llu: \"%.64s\": %s", op,
                         (unsigned long long)ino, name ? name : "",
                         strerror(-rc));
}

/* xattr_get_locked -- copy the value of x (size 0: only its length). */
static ssize_t xattr_get_locked(struct ubj_fs *fs, struct fs_iref *r,
                                const struct xattr_name *x, void *value,
                                size_t size)
{
    struct ubj_buf *b;
    struct xattr_rec rec;
    if (!xattr_user_ok(x, r->ip->mode))
        return -ENODATA;
    int rc = xattr_load(fs, r, &b);
    if (rc < 0)
        return rc;
    ssize_t n = -ENODATA;
    if (xattr_find(b, x, &rec) >= 0) {
        n = rec.vlen;
        if (size > 0 && size < rec.vlen)
            n = -ERANGE;
        else if (size > 0 && rec.vlen > 0)
            memcpy(value, rec.value, rec.vlen);
    }
    if (b != NULL)
        ubj_cache_put(fs->cache, b);
    return n;
}

/* ubj_getxattr -- getxattr(2). */
ssize_t ubj_getxattr(struct ubj_fs *fs, ubj_ino_t ino, const char *name,
                     void *value, size_t size)
{
    struct xattr_name x;
    struct ubj_handle *h;
    struct fs_iref r;
    if (fs == NULL || (value == NULL && size > 0))
        return ubj_set_error(-EINVAL, "getxattr: bad argument");
    int rc = xattr_name_parse(name, &x);
    if (rc < 0)
        return rc;
    fs_start(fs, 0, &h);
    ssize_t n = fs_iget(fs, ino, &r);
    if (n == 0) {
        n = xattr_get_locked(fs, &r, &x, value, size);
        fs_iput(fs, &r);
    }
    if (n < 0)
        n = xattr_err((int)n, "getxattr", ino, name);
    return fs_stop(fs, h, (int)n);
}

/* xattr_set_args -- the argument checks of ubj_setxattr. */
static int xattr_set_args(const void *value, size_t size, int flags)
{
    if (flags & ~(UBJ_XATTR_CREATE | UBJ_XATTR_REPLACE))
        return ubj_set_error(-EINVAL, "setxattr: bad flags 0x%x", (unsigned)flags);
    if (size > UBJ_XATTR_SIZE_MAX)
        return ubj_set_error(-E2BIG, "setxattr: value of %zu bytes (at most %u)",
                             size, UBJ_XATTR_SIZE_MAX);
    if (value == NULL && size > 0)
        return ubj_set_error(-EINVAL, "setxattr: no value");
    return 0;
}

/* xattr_modify -- the shared body of ubj_setxattr and ubj_removexattr. */
static int xattr_modify(struct ubj_fs *fs, ubj_ino_t ino, const char *name,
                        const void *value, size_t size, int flags, bool remove)
{
    const char *op = remove ? "removexattr" : "setxattr";
    struct xattr_name x;
    struct ubj_handle *h;
    struct fs_iref r;
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "%s: no mount", op);
    int rc = xattr_name_parse(name, &x);
    if (rc == 0 && !remove)
        rc = xattr_set_args(value, size, flags);
    if (rc < 0)
        return rc;
    rc = fs_start(fs, XATTR_CREDITS, &h);
    if (rc < 0)
        return rc;
    rc = fs_iget(fs, ino, &r);
    if (rc == 0) {
        if (!xattr_user_ok(&x, r.ip->mode))
            rc = remove ? -ENODATA : -EPERM;
        else
            rc = xattr_change(fs, h, &r, &x, value, size, flags, remove);
        fs_iput(fs, &r);
    }
    if (rc < 0)
        rc = xattr_err(rc, op, ino, name);
    return fs_stop(fs, h, rc);
}

/* ubj_setxattr -- setxattr(2). */
int ubj_setxattr(struct ubj_fs *fs, ubj_ino_t ino, const char *name,
                 const void *value, size_t size, int flags)
{
    return xattr_modify(fs, ino, name, value, size, flags, false);
}

/* ubj_removexattr -- removexattr(2). */
int ubj_removexattr(struct ubj_fs *fs, ubj_ino_t ino, const char *name)
{
    return xattr_modify(fs, ino, name, NULL, 0, 0, true);
}

/* xattr_list_locked -- the names, NUL-terminated (size 0: the length). */
static ssize_t xattr_list_locked(struct ubj_fs *fs, struct fs_iref *r,
                                 char *list, size_t size)
{
    struct ubj_buf *b;
    int rc = xattr_load(fs, r, &b);
    if (rc < 0 || b == NULL)
        return rc;
    const struct ubj_xattr_node *n = (const struct ubj_xattr_node *)b->data;
    const uint8_t *area = b->data + UBJ_XATTR_REC_OFF;
    size_t off = 0, total = 0;
    for (unsigned pass = 0; pass < 2; pass++) {
        if (pass == 1 && (size == 0 || size < total))
            break;
        size_t at = 0;
        off = 0;
        for (unsigned i = 0; i < n->count; i++) {
            struct xattr_rec rec;
            size_t plen;
            xattr_rec_at(area, off, &rec);
            off += xattr_rec_size(rec.nlen, rec.vlen);
            const char *pre = xattr_prefix(rec.ns, &plen);
            if (pass == 0) {
                total += plen + rec.nlen + 1;
                continue;
            }
            memcpy(list + at, pre, plen);
            memcpy(list + at + plen, rec.name, rec.nlen);
            list[at + plen + rec.nlen] = '\0';
            at += plen + rec.nlen + 1;
        }
    }
    ubj_cache_put(fs->cache, b);
    if (size > 0 && size < total)
        return -ERANGE;
    return (ssize_t)total;
}

/* ubj_listxattr -- listxattr(2). */
ssize_t ubj_listxattr(struct ubj_fs *fs, ubj_ino_t ino, char *list, size_t size)
{
    struct ubj_handle *h;
    struct fs_iref r;
    if (fs == NULL || (list == NULL && size > 0))
        return ubj_set_error(-EINVAL, "listxattr: bad argument");
    fs_start(fs, 0, &h);
    ssize_t n = fs_iget(fs, ino, &r);
    if (n == 0) {
        n = xattr_list_locked(fs, &r, list, size);
        fs_iput(fs, &r);
    }
    if (n < 0)
        n = xattr_err((int)n, "listxattr", ino, NULL);
    return fs_stop(fs, h, (int)n);
}
