/*
 * txn.c -- the transaction dispatch layer (src/txn/mode.h): the file
 * system calls only these functions, and they are the only callers of a
 * mode's operations.  The one place for tracing (build with
 * -DUBJ_TRACE_TXN to log every call and its result to stderr) and for
 * argument assertions.
 *
 * Owns: t's common fields (ops, cache, dev, txid, stats) at mount.  The
 * modes themselves are listed once, in src/txn/registry.c.
 *
 * Invariants:
 *  - After a successful ubj_txn_mount, t->ops is a registered mode whose
 *    version is UBJ_MODE_OPS_VERSION, and t->cache/t->dev are set; every
 *    other function requires that.
 *  - A handle always points back to its mount (h->t) and is used between
 *    one start and its stop only.
 *  - The arguments asserted here come from the file system, never from
 *    user input: a failing assert is a bug in the caller.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "txn/mode.h"

/* from src/util/errormsg.c */
int ubj_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef UBJ_TRACE_TXN
#include <stdio.h>
#define TXN_TRACE(t, what, arg, rc)                                         \
    fprintf(stderr, "txn %s %s(%llu) txid %llu -> %d\n",                    \
            (t)->ops->name, (what), (unsigned long long)(arg),              \
            (unsigned long long)(t)->txid, (rc))
#else
#define TXN_TRACE(t, what, arg, rc) ((void)(t), (void)(arg))
#endif

/* ubj_txn_mount -- fill in t's common fields and run the mode's mount. */
int ubj_txn_mount(struct ubj_txn *t, const struct ubj_mode_ops *ops,
                  struct ubj_cache *c, struct ubj_bdev *dev)
{
    assert(t != NULL && ops != NULL && c != NULL && dev != NULL);
    if (ops->version != UBJ_MODE_OPS_VERSION)
        return ubj_set_error(-EINVAL, "mode %s: ops version %u, need %u",
                             ops->name, ops->version, UBJ_MODE_OPS_VERSION);
    *t = (struct ubj_txn){ .ops = ops, .cache = c, .dev = dev, .txid = 1,
                           .arg = t->arg, .lock = t->lock };
    int rc = ops->mount(t);
    TXN_TRACE(t, "mount", 0, rc);
    return rc;
}

/* ubj_txn_unmount -- the mode's final commit and teardown. */
int ubj_txn_unmount(struct ubj_txn *t)
{
    assert(t != NULL && t->ops != NULL);
    int rc = t->ops->unmount(t);
    TXN_TRACE(t, "unmount", 0, rc);
    return rc;
}

/* ubj_txn_start -- open a handle for at most `credits` blocks. */
int ubj_txn_start(struct ubj_txn *t, uint32_t credits, struct ubj_handle **h)
{
    assert(t != NULL && t->ops != NULL && h != NULL);
    int rc = t->ops->start(t, credits, h);
    assert(rc < 0 || (*h != NULL && (*h)->t == t));
    TXN_TRACE(t, "start", credits, rc);
    return rc;
}

/* ubj_txn_write_access -- the caller is about to modify *b. */
int ubj_txn_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    assert(h != NULL && h->t != NULL && b != NULL && *b != NULL);
    int rc = h->t->ops->write_access(h, b);
    assert(rc < 0 || *b != NULL);
    TXN_TRACE(h->t, "write_access", (*b)->d->blkno, rc);
    return rc;
}

/* ubj_txn_dirty -- the caller modified b. */
int ubj_txn_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    assert(h != NULL && h->t != NULL && b != NULL);
    assert(kind == UBJ_KIND_DATA || kind == UBJ_KIND_META);
    int rc = h->t->ops->dirty(h, b, kind);
    TXN_TRACE(h->t, kind == UBJ_KIND_META ? "dirty_meta" : "dirty_data",
              b->d->blkno, rc);
    return rc;
}

/* ubj_txn_forget -- block `blkno` was freed within h. */
int ubj_txn_forget(struct ubj_handle *h, uint64_t blkno)
{
    assert(h != NULL && h->t != NULL);
    int rc = h->t->ops->forget(h, blkno);
    TXN_TRACE(h->t, "forget", blkno, rc);
    return rc;
}

/* ubj_txn_stop -- end the handle (h is invalid afterwards). */
int ubj_txn_stop(struct ubj_handle *h)
{
    assert(h != NULL && h->t != NULL);
    struct ubj_txn *t = h->t;
    int rc = t->ops->stop(h);
    TXN_TRACE(t, "stop", 0, rc);
    return rc;
}

/* ubj_txn_commit -- commit the running transaction (UBJ_COMMIT_* flags). */
int ubj_txn_commit(struct ubj_txn *t, unsigned flags)
{
    assert(t != NULL && t->ops != NULL);
    int rc = t->ops->commit(t, flags);
    TXN_TRACE(t, "commit", flags, rc);
    return rc;
}

/* ubj_txn_tick -- the periodic timer fired. */
int ubj_txn_tick(struct ubj_txn *t)
{
    assert(t != NULL && t->ops != NULL);
    int rc = t->ops->tick(t);
    TXN_TRACE(t, "tick", 0, rc);
    return rc;
}

/* ubj_txn_reclaim -- the cache needs reusable buffers. */
int ubj_txn_reclaim(struct ubj_txn *t)
{
    assert(t != NULL && t->ops != NULL);
    int rc = t->ops->reclaim(t);
    TXN_TRACE(t, "reclaim", 0, rc);
    return rc;
}
