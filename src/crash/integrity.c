/*
 * integrity.c -- the crash explorer's integrity oracle: the tree rules
 * for a mode that promises metadata integrity, not prefix consistency
 * (UBJ_MODE_META_INTEGRITY: seed 003's conventional scheme, ordering-
 * critical metadata written synchronously).  The engine (engine.c,
 * ex_recover) checks the rest of the promise around it: fsck on the
 * crash state finds leaks only, the mount succeeds (reclaiming them),
 * the file system is usable, fsck is clean after the unmount.
 *
 * Without a prefix, what a crash state must show is what was made
 * durable and not touched since:
 *   - a checkpoint: the state after the last acknowledged sync (with
 *     fsync_all, after the last acknowledged fsync/fdatasync/sync: lo),
 *     else the base; every name of it, exactly (type, link count, size,
 *     xattrs, contents);
 *   - without fsync_all: each fsync/fdatasync acknowledged since the
 *     checkpoint: its file exactly as after it, and of a directory the
 *     names in it (their types);
 *   - each begun rename of a name of the checkpoint: the inode under the
 *     old name or the new one, never neither.
 * A fact is "touched" -- and not asked for -- when an op begun after it
 * that changes names names its path, an ancestor or a descendant of it
 * (rename, rmdir, creates inside a directory change it), or its inode
 * under another name (a hard link), in the state before or after that
 * op; an op that changes only contents (write, append, truncate,
 * fallocate, xattrs) of its path or inode leaves the name asked for (the
 * same inode, type) but not the contents.  This is conservative: a
 * touched fact may still hold, an untouched one must.
 */
#include <stdio.h>
#include <string.h>
#include "crash/crash.h"

/* iq_related -- p and q are the same path or one is an ancestor of the
 * other ("/" is everyone's). */
static int iq_related(const char *p, const char *q)
{
    size_t lp = strlen(p), lq = strlen(q), m = lp < lq ? lp : lq;
    if (strncmp(p, q, m) != 0)
        return 0;
    if (lp == lq || m == 1)
        return 1;
    return (lp > lq ? p : q)[m] == '/';
}

/* iq_paths -- the names op changes (symlink: the link, not its target;
 * syncs, opens, closes and ticks change none).  The count (0..2). */
static unsigned iq_paths(const struct cx_op *op, const char *out[2])
{
    switch (op->kind) {
    case CX_FSYNC: case CX_FDATASYNC: case CX_SYNC: case CX_OPEN: case CX_CLOSE:
    case CX_TICK:
        return 0;
    case CX_SYMLINK:
        out[0] = op->b;
        return 1;
    case CX_LINK: case CX_RENAME:
        out[0] = op->a;
        out[1] = op->b;
        return 2;
    default:
        out[0] = op->a;
        return 1;
    }
}

/* iq_ino_at -- the inode at path in t, or 0. */
static uint64_t iq_ino_at(const struct cx_tree *t, const char *path)
{
    long i = cx_tree_lookup(t, path);
    uint64_t ino = 0;
    if (i >= 0)
        cx_tree_entry(t, (size_t)i, &ino, NULL);
    return ino;
}

/* iq_data_op -- an op that changes a file's contents, size or xattrs but
 * no name. */
static int iq_data_op(enum cx_opkind k)
{
    return k == CX_WRITE || k == CX_APPEND || k == CX_TRUNCATE || k == CX_FALLOCATE ||
           k == CX_SETXATTR || k == CX_REMOVEXATTR;
}

/* How much of a fact a later op touched. */
#define IQ_UNTOUCHED 0
#define IQ_DATA 1        /* its contents: the name (type, inode) still holds */
#define IQ_NAME 2        /* its name: nothing is asked */

/* iq_touched -- how much the ops in [k0, k1) but `skip` touch path (or
 * inode ino, if not 0): a data op its own path or inode IQ_DATA, any
 * other op a related path or the inode IQ_NAME. */
static int iq_touched(const struct cx_integrity *q, unsigned k0, unsigned k1,
                      unsigned skip, const char *path, uint64_t ino)
{
    int t = IQ_UNTOUCHED;
    for (unsigned k = k0; k < k1; k++) {
        const char *p[2];
        unsigned n = k == skip ? 0 : iq_paths(&q->w->ops[k], p);
        int data = iq_data_op(q->w->ops[k].kind);
        for (unsigned i = 0; i < n; i++) {
            int same = ino != 0 && (iq_ino_at(q->ref[k], p[i]) == ino ||
                                    iq_ino_at(q->ref[k + 1], p[i]) == ino);
            if (!data && (same || iq_related(p[i], path)))
                return IQ_NAME;
            if (data && (same || strcmp(p[i], path) == 0))
                t = IQ_DATA;
        }
    }
    return t;
}

/* iq_name -- path names inode ino of type `type` in got.  1, or 0 (why). */
static int iq_name(const struct cx_tree *got, const char *path, uint64_t ino,
                   uint32_t type, char *why, size_t len)
{
    long g = cx_tree_lookup(got, path);
    uint64_t gino = 0;
    uint32_t gtype = 0;
    if (g >= 0)
        cx_tree_entry(got, (size_t)g, &gino, &gtype);
    if (g >= 0 && gino == ino && gtype == type)
        return 1;
    snprintf(why, len, "%s is %s", path, g < 0 ? "missing" : gino != ino ?
             "another inode" : "of another type");
    return 0;
}

/* iq_checkpoint -- the state every name of which is durable: after the
 * last acknowledged sync (fsync_all: lo), else the base (0). */
static unsigned iq_checkpoint(const struct cx_integrity *q)
{
    if (q->fsync_all)
        return q->lo;
    unsigned s = 0;
    for (unsigned i = 0; i < q->lo; i++)
        if (q->w->ops[i].kind == CX_SYNC && q->refrc[i] == 0)
            s = i + 1;
    return s;
}

/* iq_state -- every untouched name of state s, exactly.  1 or 0 (why). */
static int iq_state(const struct cx_integrity *q, unsigned s, const struct cx_tree *got,
                    char *why, size_t len)
{
    char tmp[320];
    const struct cx_tree *ref = q->ref[s];
    for (size_t i = 0; i < cx_tree_size(ref); i++) {
        uint64_t ino;
        uint32_t type;
        const char *path = cx_tree_entry(ref, i, &ino, &type);
        int t = iq_touched(q, s, q->hi, q->hi, path, ino);
        if (t == IQ_NAME || (t == IQ_DATA && iq_name(got, path, ino, type, tmp, sizeof tmp)) ||
            (t == IQ_UNTOUCHED && cx_tree_ent_match(got, ref, path, tmp, sizeof tmp)))
            continue;
        snprintf(why, len, "integrity: durable since %s%u and not touched since, "
                 "but %.300s", s ? "op " : "the setup, state ", s, tmp);
        return 0;
    }
    return 1;
}

/* iq_fsynced -- op i (an acknowledged fsync/fdatasync of path a): its file
 * exactly as after it, a directory's names.  1 or 0 (why). */
static int iq_fsynced(const struct cx_integrity *q, unsigned i, const struct cx_tree *got,
                      char *why, size_t len)
{
    char tmp[320];
    const struct cx_tree *ref = q->ref[i + 1];
    const char *a = q->w->ops[i].a;
    long e = cx_tree_lookup(ref, a);
    uint64_t ino;
    uint32_t type;
    if (e < 0)
        return 1;
    cx_tree_entry(ref, (size_t)e, &ino, &type);
    int t = iq_touched(q, i + 1, q->hi, q->hi, a, ino);
    if ((t == IQ_UNTOUCHED && !cx_tree_ent_match(got, ref, a, tmp, sizeof tmp)) ||
        (t == IQ_DATA && !iq_name(got, a, ino, type, tmp, sizeof tmp))) {
        snprintf(why, len, "integrity: op %u fsync'd %s, untouched since, but %.300s",
                 i + 1, a, tmp);
        return 0;
    }
    size_t la = strlen(a);
    for (size_t k = 0; (type & 0170000) == 0040000 && k < cx_tree_size(ref); k++) {
        uint64_t cino;
        uint32_t ctype;
        const char *c = cx_tree_entry(ref, k, &cino, &ctype);
        if (strncmp(c, a, la) != 0 || c[la] != '/' || strchr(c + la + 1, '/') ||
            iq_touched(q, i + 1, q->hi, q->hi, c, cino) == IQ_NAME ||
            iq_name(got, c, cino, ctype, tmp, sizeof tmp))
            continue;
        snprintf(why, len, "integrity: op %u fsync'd directory %s, but its name "
                 "(untouched since) %.300s", i + 1, a, tmp);
        return 0;
    }
    return 1;
}

/* iq_renames -- each begun rename of a name durable in state s, otherwise
 * untouched: the inode under the old or the new name.  1 or 0 (why). */
static int iq_renames(const struct cx_integrity *q, unsigned s, const struct cx_tree *got,
                      char *why, size_t len)
{
    for (unsigned j = s; j < q->hi; j++) {
        const struct cx_op *op = &q->w->ops[j];
        if (op->kind != CX_RENAME || q->refrc[j] != 0)
            continue;
        uint64_t ino = iq_ino_at(q->ref[s], op->a);
        if (ino == 0 || iq_touched(q, s, q->hi, j, op->a, ino) == IQ_NAME ||
            iq_touched(q, s, q->hi, j, op->b, 0) == IQ_NAME)
            continue;
        if (iq_ino_at(got, op->a) == ino || iq_ino_at(got, op->b) == ino)
            continue;
        snprintf(why, len, "integrity: op %u (rename %s %s) kept neither name of "
                 "inode %llu", j + 1, op->a, op->b, (unsigned long long)ino);
        return 0;
    }
    return 1;
}

/* cx_integrity_match -- the integrity oracle's tree rules. */
int cx_integrity_match(const struct cx_integrity *q, const struct cx_tree *got,
                       char *why, size_t len)
{
    unsigned s = iq_checkpoint(q);
    if (!iq_state(q, s, got, why, len))
        return 0;
    for (unsigned i = s; !q->fsync_all && i < q->lo; i++) {
        enum cx_opkind k = q->w->ops[i].kind;
        if ((k == CX_FSYNC || k == CX_FDATASYNC) && q->refrc[i] == 0 &&
            !iq_fsynced(q, i, got, why, len))
            return 0;
    }
    return iq_renames(q, s, got, why, len);
}
