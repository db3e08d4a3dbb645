/*
 * oracle.c -- what a recovered file system must look like: snapshots of
 * whole trees (cx_tree), their comparison with the reference state after
 * a prefix of the workload, the data-cell rules that find stale and
 * foreign blocks, and the usability probe run after recovery.
 *
 * A snapshot lists every reachable name (sorted by path) with its type,
 * link count, size, contents (regular files), target (symlinks) and
 * xattrs, plus the free block and inode counts.  It is bounded (depth 16,
 * CX_TREE_MAX entries, files up to CX_MAX_FILE) so that a corrupt tree
 * is reported, never followed forever.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crash/crash.h"
#include "ubjfs/ubjfs.h"
#include "util/util.h"

#define CX_TREE_MAX 4096u
#define CX_DEPTH_MAX 16

struct cx_ent {
    char path[256];
    uint32_t type;           /* S_IFMT bits */
    uint32_t nlink;
    uint64_t size;
    uint64_t ino;
    uint8_t *data;           /* file contents or symlink target */
    size_t dlen;
    uint32_t xcrc;           /* crc of the xattr names and values */
};

struct cx_tree {
    struct cx_ent *e;
    size_t n, cap;
    uint64_t bfree, ffree;
};

/* ---- snapshots ---------------------------------------------------------------- */

struct tr_names {
    char (*name)[256];
    uint64_t *ino;
    size_t n, cap;
    int err;
};

/* tr_fill -- readdir callback: collect names but . and .. */
static int tr_fill(void *ctx, const char *name, size_t namelen, ubj_ino_t ino,
                   unsigned type, uint64_t next)
{
    struct tr_names *v = ctx;
    (void)type;
    (void)next;
    if ((namelen == 1 && name[0] == '.') || (namelen == 2 && !memcmp(name, "..", 2)))
        return 0;
    if (namelen > 255 || v->n >= CX_TREE_MAX)
        return v->err = -EUCLEAN, 1;
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        char (*nn)[256] = realloc(v->name, cap * sizeof *nn);
        uint64_t *ni = nn ? realloc(v->ino, cap * sizeof *ni) : NULL;
        if (nn)
            v->name = nn;
        if (ni == NULL)
            return v->err = -ENOMEM, 1;
        v->ino = ni;
        v->cap = cap;
    }
    memcpy(v->name[v->n], name, namelen);
    v->name[v->n][namelen] = '\0';
    v->ino[v->n++] = ino;
    return 0;
}

/* tr_push -- a new entry at the end of t.  NULL when out of memory or full. */
static struct cx_ent *tr_push(struct cx_tree *t)
{
    if (t->n >= CX_TREE_MAX)
        return NULL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 32;
        struct cx_ent *e = realloc(t->e, cap * sizeof *e);
        if (e == NULL)
            return NULL;
        t->e = e;
        t->cap = cap;
    }
    struct cx_ent *e = &t->e[t->n++];
    memset(e, 0, sizeof *e);
    return e;
}

/* tr_xattrs -- crc of every xattr name and value of ino. */
static int tr_xattrs(struct ubj_fs *fs, ubj_ino_t ino, uint32_t *crc)
{
    char list[4096];
    uint8_t val[4096];
    ssize_t n = ubj_listxattr(fs, ino, list, sizeof list);
    *crc = 0;
    if (n < 0)
        return (int)n;
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1) {
        ssize_t v = ubj_getxattr(fs, ino, list + i, val, sizeof val);
        if (v < 0)
            return (int)v;
        *crc = ubj_crc32c(*crc, list + i, strlen(list + i) + 1);
        *crc = ubj_crc32c(*crc, val, (size_t)v);
    }
    return 0;
}

/* tr_contents -- a regular file's bytes or a symlink's target. */
static int tr_contents(struct ubj_fs *fs, struct cx_ent *e)
{
    if (S_ISREG(e->type)) {
        if (e->size > CX_MAX_FILE)
            return ubj_set_error(-EFBIG, "%s: size %llu beyond any the workload made",
                                 e->path, (unsigned long long)e->size);
        e->data = malloc(e->size ? e->size : 1);
        if (e->data == NULL)
            return -ENOMEM;
        ssize_t got = ubj_pread(fs, e->ino, e->data, e->size, 0);
        if (got != (ssize_t)e->size)
            return ubj_set_error(got < 0 ? (int)got : -EIO, "%s: read %zd of %llu bytes",
                                 e->path, got, (unsigned long long)e->size);
        e->dlen = e->size;
    } else if (S_ISLNK(e->type)) {
        e->data = malloc(UBJ_SYMLINK_MAX);
        if (e->data == NULL)
            return -ENOMEM;
        ssize_t got = ubj_readlink(fs, e->ino, (char *)e->data, UBJ_SYMLINK_MAX);
        if (got < 0)
            return ubj_set_error((int)got, "%s: readlink", e->path);
        e->dlen = (size_t)got;
    }
    return 0;
}

/* tr_walk -- add the tree under directory ino (named prefix). */
static int tr_walk(struct ubj_fs *fs, ubj_ino_t ino, const char *prefix, int depth,
                   struct cx_tree *t)
{
    if (depth > CX_DEPTH_MAX)
        return ubj_set_error(-ELOOP, "%s: directories nested too deep", prefix);
    struct tr_names v = { 0 };
    int rc = ubj_readdir(fs, ino, 0, tr_fill, &v);
    if (rc == 0)
        rc = v.err;
    for (size_t i = 0; rc == 0 && i < v.n; i++) {
        struct cx_ent *e = tr_push(t);
        struct ubj_stat st;
        if (e == NULL) {
            rc = ubj_set_error(-E2BIG, "more than %u names", CX_TREE_MAX);
            break;
        }
        snprintf(e->path, sizeof e->path, "%s/%s", prefix, v.name[i]);
        if ((rc = ubj_getattr(fs, v.ino[i], &st)) < 0) {
            ubj_set_error(rc, "%s: getattr of inode %llu", e->path,
                          (unsigned long long)v.ino[i]);
            break;
        }
        e->ino = st.ino;
        e->type = st.mode & S_IFMT;
        e->nlink = st.nlink;
        e->size = S_ISDIR(st.mode) ? 0 : st.size;
        if ((rc = tr_contents(fs, e)) == 0 && (S_ISREG(st.mode) || S_ISDIR(st.mode)))
            rc = tr_xattrs(fs, st.ino, &e->xcrc);
        if (rc == 0 && S_ISDIR(st.mode)) {
            char sub[256];
            snprintf(sub, sizeof sub, "%s", e->path);
            rc = tr_walk(fs, st.ino, sub, depth + 1, t);
        }
    }
    free(v.name);
    free(v.ino);
    return rc;
}

/* tr_cmp -- order entries by path. */
static int tr_cmp(const void *a, const void *b)
{
    return strcmp(((const struct cx_ent *)a)->path, ((const struct cx_ent *)b)->path);
}

/* cx_tree_take -- snapshot fs. */
int cx_tree_take(struct ubj_fs *fs, struct cx_tree **out)
{
    struct cx_tree *t = calloc(1, sizeof *t);
    if (t == NULL)
        return -ENOMEM;
    int rc = tr_walk(fs, UBJ_ROOT_INO, "", 0, t);
    struct ubj_statfs sf;
    if (rc == 0 && (rc = ubj_statfs_get(fs, &sf)) == 0) {
        t->bfree = sf.bfree;
        t->ffree = sf.ffree;
        if (t->n > 1)
            qsort(t->e, t->n, sizeof *t->e, tr_cmp);
    }
    if (rc < 0) {
        cx_tree_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* cx_tree_free -- free a snapshot. */
void cx_tree_free(struct cx_tree *t)
{
    if (t == NULL)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->e[i].data);
    free(t->e);
    free(t);
}

/* ---- comparison ----------------------------------------------------------------- */

struct tr_cell {
    uint32_t id, ver, cell;
};

/* tr_cell_decode -- 1 if the 16 bytes are a valid cell (decoded into c). */
static int tr_cell_decode(const uint8_t *p, struct tr_cell *c)
{
    uint8_t ref[16];
    memcpy(&c->id, p + 4, 4);
    memcpy(&c->ver, p + 8, 4);
    memcpy(&c->cell, p + 12, 4);
    cx_fill(ref, 16, c->id, (uint64_t)c->cell * 16, c->ver);
    return memcmp(ref, p, 16) == 0;
}

/* tr_data_ordered -- the cells of got against ref (same size): equal, or
 * a later version (<= hi) of the same file and offset.  0 or the index+1
 * of the first bad cell, with what it held in why. */
static size_t tr_data_ordered(const struct cx_ent *g, const struct cx_ent *r,
                              uint32_t hi, int zero_ok, char *why, size_t len)
{
    static const uint8_t zero[16];
    for (size_t o = 0; o + 16 <= g->dlen; o += 16) {
        if (memcmp(g->data + o, r->data + o, 16) == 0 ||
            (zero_ok && memcmp(g->data + o, zero, 16) == 0))
            continue;
        struct tr_cell cg, cr = { 0, 0, 0 };
        int vg = tr_cell_decode(g->data + o, &cg);
        int vr = tr_cell_decode(r->data + o, &cr);
        if (vg && cg.id == r->ino && cg.cell == o / 16 && cg.ver <= hi &&
            (!vr || cg.ver > cr.ver))
            continue;
        if (!vg)
            snprintf(why, len, "%s: bytes %zu..%zu are neither the expected data "
                     "nor any version written there (%s)", g->path, o, o + 15,
                     memcmp(g->data + o, zero, 16) ? "garbage" : "zeros: stale block");
        else
            snprintf(why, len, "%s: bytes %zu..%zu hold version %u of inode %u offset "
                     "%llu (%s); expected version %u", g->path, o, o + 15, cg.ver, cg.id,
                     (unsigned long long)cg.cell * 16,
                     cg.id != r->ino || cg.cell != o / 16 ? "foreign data"
                     : cg.ver > hi ? "from an operation not yet started" : "stale data",
                     vr ? cr.ver : 0);
        return o + 1;
    }
    return 0;
}

/* tr_ent_match -- one entry against its reference. */
static int tr_ent_match(const struct cx_ent *g, const struct cx_ent *r, int data,
                        uint32_t hi, char *why, size_t len)
{
    if (g->type != r->type) {
        snprintf(why, len, "%s: type %o, expected %o", g->path, g->type, r->type);
        return 0;
    }
    if (g->nlink != r->nlink || g->size != r->size || g->xcrc != r->xcrc) {
        snprintf(why, len, "%s: nlink %u size %llu xattrs %08x, expected nlink %u "
                 "size %llu xattrs %08x", g->path, g->nlink, (unsigned long long)g->size,
                 g->xcrc, r->nlink, (unsigned long long)r->size, r->xcrc);
        return 0;
    }
    if (S_ISLNK(g->type) && (g->dlen != r->dlen || memcmp(g->data, r->data, g->dlen))) {
        snprintf(why, len, "%s: symlink target differs", g->path);
        return 0;
    }
    if (!S_ISREG(g->type) || (data & 3) == CX_DATA_ANY || !memcmp(g->data, r->data, g->dlen))
        return 1;
    if ((data & 3) == CX_DATA_ORDERED)
        return tr_data_ordered(g, r, hi, (data & CX_DATA_ZERO_OK) != 0, why, len) == 0;
    tr_data_ordered(g, r, 0, 0, why, len);   /* describe the first difference */
    return 0;
}

/* cx_tree_match -- got against the reference state ref. */
int cx_tree_match(const struct cx_tree *got, const struct cx_tree *ref, int data,
                  uint32_t hi_ver, int counts, char *why, size_t len)
{
    size_t i = 0, j = 0;
    while (i < got->n || j < ref->n) {
        int c = i == got->n ? 1 : j == ref->n ? -1 : strcmp(got->e[i].path, ref->e[j].path);
        if (c < 0) {
            snprintf(why, len, "%s exists, but not in the expected state", got->e[i].path);
            return 0;
        }
        if (c > 0) {
            snprintf(why, len, "%s is missing", ref->e[j].path);
            return 0;
        }
        if (!tr_ent_match(&got->e[i], &ref->e[j], data, hi_ver, why, len))
            return 0;
        i++;
        j++;
    }
    if (counts && (got->bfree != ref->bfree || got->ffree != ref->ffree)) {
        snprintf(why, len, "free blocks %llu inodes %llu, expected %llu and %llu "
                 "(space not reclaimed or leaked)", (unsigned long long)got->bfree,
                 (unsigned long long)got->ffree, (unsigned long long)ref->bfree,
                 (unsigned long long)ref->ffree);
        return 0;
    }
    return 1;
}

/* ---- single entries (the integrity oracle, integrity.c) --------------------------- */

/* cx_tree_size -- the number of entries of t. */
size_t cx_tree_size(const struct cx_tree *t)
{
    return t->n;
}

/* cx_tree_entry -- entry i's path, inode and type (i < cx_tree_size). */
const char *cx_tree_entry(const struct cx_tree *t, size_t i, uint64_t *ino,
                          uint32_t *type)
{
    if (ino != NULL)
        *ino = t->e[i].ino;
    if (type != NULL)
        *type = t->e[i].type;
    return t->e[i].path;
}

/* cx_tree_lookup -- the index of `path` in t (sorted by path), or -1. */
long cx_tree_lookup(const struct cx_tree *t, const char *path)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(t->e[mid].path, path);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* cx_tree_ent_match -- entry `path` of got against ref's: type, link
 * count, size, xattrs, target, contents exactly.  1, or 0 with why. */
int cx_tree_ent_match(const struct cx_tree *got, const struct cx_tree *ref,
                      const char *path, char *why, size_t len)
{
    long r = cx_tree_lookup(ref, path), g = cx_tree_lookup(got, path);
    if (r < 0) {
        snprintf(why, len, "%s: not in the reference", path);
        return 0;
    }
    if (g < 0) {
        snprintf(why, len, "%s is missing", path);
        return 0;
    }
    return tr_ent_match(&got->e[g], &ref->e[r], CX_DATA_EXACT, 0, why, len);
}

/* ---- usability ------------------------------------------------------------------- */

/* cx_usable -- the file system still works after recovery (mkdir, create,
 * write, fsync, read back, unlink, rmdir; -ENOSPC from a full one is an
 * answer, not a failure: what was made is removed again). */
int cx_usable(struct ubj_fs *fs)
{
    struct ubj_stat d, f;
    uint8_t buf[8192], back[8192];
    const char *step = "mkdir";
    int rc = ubj_mkdir(fs, UBJ_ROOT_INO, "cx-usable", 0755, NULL, &d);
    if (rc == 0 && (step = "create", rc = ubj_create(fs, d.ino, "f", 0644, NULL, &f)) == 0) {
        cx_fill(buf, sizeof buf, f.ino, 0, 0xFFFFu);
        ssize_t n = ubj_pwrite(fs, f.ino, buf, sizeof buf, 0);
        step = "write";
        rc = n == (ssize_t)sizeof buf ? 0 : n < 0 ? (int)n : -EIO;
        if (rc == 0 && (step = "fsync", rc = ubj_fsync(fs, f.ino, 0)) == 0) {
            n = ubj_pread(fs, f.ino, back, sizeof back, 0);
            step = "read back";
            rc = n == (ssize_t)sizeof back && !memcmp(buf, back, sizeof buf) ? 0 : -EIO;
        }
        if (rc == 0)
            step = "unlink", rc = ubj_unlink(fs, d.ino, "f");
        if (rc == 0)
            step = "rmdir", rc = ubj_rmdir(fs, UBJ_ROOT_INO, "cx-usable");
    }
    if (rc == -ENOSPC) {   /* a full file system refusing more is working */
        (void)ubj_unlink(fs, d.ino, "f");
        (void)ubj_rmdir(fs, UBJ_ROOT_INO, "cx-usable");
        return 0;
    }
    if (rc < 0) {
        char msg[256];   /* the message buffer is ubj_set_error's own */
        snprintf(msg, sizeof msg, "%s", ubj_errormsg());
        return ubj_set_error(rc, "not usable after recovery: %s failed (%d: %s)",
                             step, rc, msg);
    }
    return 0;
}
