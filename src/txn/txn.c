/*
 * txn.c -- the transaction dispatch layer (src/txn/mode.h): the file
 * system calls only these functions, and they are the only callers of a
 * mode's operations.  The one place for tracing (build with
 * -DUBJ_TRACE_TXN to log every call and its result to stderr) and for
 * argument assertions.
 *
 * Owns: t's common fields (ops, cache, dev, txid, stats, img, check) at
 * mount, clearing the cache hooks a mode registered (ubj_cache_set_hooks,
 * in its mount) after its unmount or failed mount, the semantic events' dispatch (ubj_txn_event) and the event
 * checker's place beside every call (src/txn/evcheck.c: test builds,
 * UBJ_CHECK_EVENTS=1; it only reads, the mode gets every call unchanged),
 * and the verbs of format and mount (ubj_txn_format_*, check_last,
 * prepare, record, error, release): what the file system asks of
 * whichever mode it runs, never naming one.  The modes themselves are
 * listed once, in src/txn/registry.c.
 *
 * Invariants:
 *  - After a successful ubj_txn_mount, t->ops is a registered mode whose
 *    version is UBJ_MODE_OPS_VERSION, and t->cache/t->dev are set; every
 *    other function requires that.
 *  - A handle always points back to its mount (h->t) and is used between
 *    one start and its stop only; the handle layer (src/txn/handle.c)
 *    owns it and its counting: start and stop go through it, and it
 *    calls the mode's start and stop (the first and the last level).
 *  - The arguments asserted here come from the file system, never from
 *    user input: a failing assert is a bug in the caller.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "txn/evcheck.h"   /* the event checker (test builds) */
#include "txn/journal.h"   /* the format area: the journal's */
#include "txn/mode.h"
#include "txn/registry.h"

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

/* txn_needs -- what mode `ops` needs besides the image, from the registry:
 * a log in the image's format area (it mounts and recovers it itself;
 * for other modes mount replays a log left there, docs/JOURNAL.md), an
 * NVM region holding committed blocks off the image until they are
 * written home (an unclean image needs it), or nothing. */
static enum ubj_mode_need txn_needs(const struct ubj_mode_ops *ops)
{
    const struct ubj_mode_entry *e = ubj_registry_by_ops(ops);
    return e != NULL ? e->info.needs : UBJ_MODE_NEEDS_NOTHING;
}

/* ubj_txn_format_reserve -- the format area's size (see mode.h). */
int ubj_txn_format_reserve(const struct ubj_mode_ops *ops, uint64_t nblocks,
                           uint64_t data_start, uint64_t asked, uint64_t *blocks)
{
    uint64_t jb = asked;
    *blocks = 0;
    if (jb == 0 && ops != NULL && txn_needs(ops) == UBJ_MODE_NEEDS_LOG)
        jb = ubj_journal_default_blocks(nblocks);
    if (jb == 0)
        return 0;
    if (jb < UBJ_JOURNAL_MIN_BLOCKS)
        return ubj_set_error(-EINVAL, "format: a journal of %llu blocks is "
                             "smaller than %u blocks", (unsigned long long)jb,
                             UBJ_JOURNAL_MIN_BLOCKS);
    if (jb >= nblocks - data_start)
        return ubj_set_error(-ENOSPC, "format: a journal of %llu blocks leaves "
                             "no data blocks in %llu", (unsigned long long)jb,
                             (unsigned long long)nblocks);
    *blocks = jb;
    return 0;
}

/* ubj_txn_format_area -- an empty journal in img's format area. */
int ubj_txn_format_area(const struct ubj_mode_image *img, bool async, bool zeroed)
{
    struct ubj_jgeom g;
    int rc = ubj_journal_geom(img, &g);
    if (rc == 0)
        rc = ubj_journal_format(&g, async ? UBJ_JFEAT_COMPAT_ASYNC_COMMIT : 0,
                                zeroed);
    return rc;
}

/* ubj_txn_check_last -- the format area's log; the last mode's say. */
int ubj_txn_check_last(const struct ubj_mode_ops *ops,
                       const struct ubj_mode_image *img,
                       const struct ubj_config *cfg)
{
    assert(ops != NULL && img != NULL);
    int rc = 0;
    if (img->area_blocks && txn_needs(ops) != UBJ_MODE_NEEDS_LOG)   /* docs/JOURNAL.md */
        rc = ubj_journal_mount_other(img);
    if (rc == 0 && img->last != NULL && img->last->check_last != NULL)
        rc = img->last->check_last(img, cfg, img->last == ops);
    return rc;
}

/* ubj_txn_prepare -- attach the mode's resources. */
int ubj_txn_prepare(struct ubj_txn *t, const struct ubj_mode_ops *ops,
                    const struct ubj_config *cfg, const struct ubj_mode_image *img,
                    struct ubj_cache_config *cc)
{
    assert(t != NULL && ops != NULL && img != NULL && cc != NULL);
    t->ops = ops;
    t->img = *img;
    t->arg = NULL;
    int rc = 0;
    if (ops->prepare)
        rc = ops->prepare(cfg, &t->img, cc, &t->arg);
    else if (cfg && (cfg->nvm_path || cfg->nvm_size || cfg->nvm_flags ||
                     cfg->nvm_profile))
        rc = ubj_set_error(-EINVAL, "mount: mode %s takes no NVM region "
                           "(--nvm and its options are for mode ubj)", ops->name);
    if (rc < 0)
        t->arg = NULL;
    return rc;
}

/* ubj_txn_release -- free what prepare attached. */
void ubj_txn_release(struct ubj_txn *t)
{
    if (t->ops && t->ops->release && t->arg)
        t->ops->release(t->arg);
    t->arg = NULL;
}

/* ubj_txn_record -- what the superblock records of this mount. */
int ubj_txn_record(struct ubj_txn *t, struct ubj_mode_record *rec)
{
    assert(t != NULL && t->ops != NULL && rec != NULL);
    *rec = (struct ubj_mode_record){ 0 };
    int rc = t->ops->record ? t->ops->record(t, &t->img, rec) : 0;
    TXN_TRACE(t, "record", rec->gen, rc);
    return rc;
}

/* ubj_txn_error -- the mode's record of a device error. */
int ubj_txn_error(struct ubj_txn *t, bool clear)
{
    assert(t != NULL && t->ops != NULL);
    return t->ops->error ? t->ops->error(t, clear) : 0;
}

/* ubj_txn_view -- fsck's recovered view of the format area's log. */
int ubj_txn_view(const struct ubj_mode_image *img, bool repair,
                 struct ubj_mode_view *out)
{
    assert(img != NULL && out != NULL);
    return ubj_journal_fsck(img, repair, out);
}

/* ubj_txn_view_region -- the view verb of the mode that keeps a region. */
int ubj_txn_view_region(const struct ubj_mode_image *img, const char *path,
                        struct ubj_bdev **out)
{
    assert(img != NULL && out != NULL);
    for (size_t i = 0; i < ubj_mode_count(); i++) {
        const struct ubj_mode_ops *ops = ubj_registry_by_name(ubj_mode_at(i)->name)->ops;
        if (ops->view != NULL)
            return ops->view(img, path, out);
    }
    return ubj_set_error(-EINVAL, "nvm overlay: no mode keeps an NVM region");
}

/* ubj_txn_unrecovered -- the mode whose region an unclean image needs. */
const struct ubj_mode_ops *ubj_txn_unrecovered(const struct ubj_mode_image *img)
{
    if (!img->mounted)
        return NULL;
    if (img->last != NULL && txn_needs(img->last) == UBJ_MODE_NEEDS_NVM)
        return img->last;
    if (img->recorded != NULL && txn_needs(img->recorded) == UBJ_MODE_NEEDS_NVM)
        return img->recorded;
    return NULL;
}

/* ubj_txn_mount -- fill in t's common fields and run the mode's mount. */
int ubj_txn_mount(struct ubj_txn *t, const struct ubj_mode_ops *ops,
                  struct ubj_cache *c, struct ubj_bdev *dev)
{
    assert(t != NULL && ops != NULL && c != NULL && dev != NULL);
    if (ops->version != UBJ_MODE_OPS_VERSION)
        return ubj_set_error(-EINVAL, "mode %s: ops version %u, need %u",
                             ops->name, ops->version, UBJ_MODE_OPS_VERSION);
    *t = (struct ubj_txn){ .ops = ops, .cache = c, .dev = dev, .txid = 1,
                           .arg = t->arg, .img = t->img, .lock = t->lock };
    ubj_handles_init(t, ubj_cache_nbufs(c));   /* the mode may lower it */
    int rc = ops->mount(t);
    TXN_TRACE(t, "mount", 0, rc);
    if (rc == 0) {
        t->check = ubj_evcheck_open();
    } else {
        ubj_cache_set_hooks(c, NULL, NULL);   /* what the mode registered */
        ubj_handles_fini(t);
    }
    return rc;
}

/* ubj_txn_unmount -- the mode's final commit and teardown. */
int ubj_txn_unmount(struct ubj_txn *t)
{
    assert(t != NULL && t->ops != NULL);
    if (ubj_txn_open_handles(t) != 0)   /* H3: aborts, every build */
        ubj_handles_fini(t);
    int rc = t->ops->unmount(t);
    TXN_TRACE(t, "unmount", 0, rc);
    ubj_cache_set_hooks(t->cache, NULL, NULL);   /* the mode's state is gone */
    ubj_handles_fini(t);
    ubj_evcheck_close(t->check);
    t->check = NULL;
    return rc;
}

/* ubj_txn_start -- open a handle for at most `credits` blocks (the
 * handle layer: it may wait, src/txn/handle.c). */
int ubj_txn_start(struct ubj_txn *t, uint32_t credits, struct ubj_handle **h)
{
    assert(t != NULL && t->ops != NULL && h != NULL);
    int rc = ubj_handle_start(t, credits, h);
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
    if (rc == 0)   /* the stable-buffer rule: no write's window is open */
        ubj_cache_wait_stable(h->t->cache, *b);
    if (rc == 0 && h->t->check)
        ubj_evcheck_access(h->t->check, h, *b);
    TXN_TRACE(h->t, "write_access", (*b)->d->blkno, rc);
    return rc;
}

/* ubj_txn_dirty -- the caller modified b. */
int ubj_txn_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    assert(h != NULL && h->t != NULL && b != NULL);
    assert(kind == UBJ_KIND_DATA || kind == UBJ_KIND_META);
    if (h->t->check)
        ubj_evcheck_dirty(h->t->check, h, b, kind);
    int rc = h->t->ops->dirty(h, b, kind);
    TXN_TRACE(h->t, kind == UBJ_KIND_META ? "dirty_meta" : "dirty_data",
              b->d->blkno, rc);
#if UBJ_TEST_HOOKS
    ubj_handle_test_point(h, b->d->blkno);   /* a test may park h here */
#endif
    return rc;
}

/* ubj_txn_forget -- block `blkno` was freed within h. */
int ubj_txn_forget(struct ubj_handle *h, uint64_t blkno)
{
    assert(h != NULL && h->t != NULL);
    if (h->t->check)
        ubj_evcheck_forget(h->t->check, h, blkno);
    int rc = h->t->ops->forget(h, blkno);
    TXN_TRACE(h->t, "forget", blkno, rc);
    return rc;
}

/* ubj_txn_stop -- end the handle (h is invalid afterwards). */
int ubj_txn_stop(struct ubj_handle *h)
{
    assert(h != NULL && h->t != NULL);
    struct ubj_txn *t = h->t;
    if (t->check)
        ubj_evcheck_stop(t->check, h);
    int rc = ubj_handle_stop(h);
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

/* ubj_txn_tick -- the periodic timer fired (flags: UBJ_TICK_*). */
int ubj_txn_tick(struct ubj_txn *t, unsigned flags)
{
    assert(t != NULL && t->ops != NULL);
    int rc = t->ops->tick(t, flags);
    TXN_TRACE(t, "tick", flags, rc);
    return rc;
}

/* ubj_txn_stats -- the mode's counters, up to date. */
const struct ubj_txn_stats *ubj_txn_stats(struct ubj_txn *t)
{
    assert(t != NULL && t->ops != NULL);
    if (t->ops->stats != NULL)
        t->ops->stats(t);
    return &t->stats;
}

/* ubj_txn_reclaim -- the mode's reclaim hook, now (tests). */
int ubj_txn_reclaim(struct ubj_txn *t)
{
    assert(t != NULL && t->ops != NULL);
    int rc = ubj_cache_reclaim(t->cache);
    TXN_TRACE(t, "reclaim", 0, rc);
    return rc;
}

/* ubj_txn_event -- a semantic event: the checker, then the mode's op. */
int ubj_txn_event(struct ubj_handle *h, const struct ubj_event *ev)
{
    assert(h != NULL && h->t != NULL && ev != NULL);
    assert((unsigned)ev->type < UBJ_EV_COUNT);
    struct ubj_txn *t = h->t;
    if (t->check) {   /* test builds, UBJ_CHECK_EVENTS=1 */
        if (ubj_evcheck_drop(t->check, ev->type))   /* UBJ_TEST_DROP_EVENT */
            return 0;
        ubj_evcheck_event(t->check, h, ev);
    }
    int rc = t->ops->event ? t->ops->event(h, ev) : 0;
    TXN_TRACE(t, ubj_event_name(ev->type), ev->blkno, rc);
    return rc;
}
