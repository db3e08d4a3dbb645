/*
 * sync.c -- consistency mode `sync`: the conventional scheme of Ganger &
 * Patt (seed 003) -- every ordering-critical metadata write synchronous,
 * everything else delayed write-back (none's: src/txn/none.c), as 4.4BSD
 * FFS does without soft updates.  docs/SYNC.md lists, per operation, the
 * writes in order and the rule each serves.
 *
 * What it guarantees (metadata INTEGRITY, not a prefix; docs/GUARANTEES.md):
 *  - After a crash: no name points to an uninitialised inode (R1), no
 *    freed block or inode is reachable from a removed pointer that is
 *    still on the disk (R2), a rename leaves at least one name (R3); a
 *    split's moved half is reachable (new node, then parent, then old
 *    node); leaked blocks and inodes are possible (a bitmap bit on the
 *    disk is set before any pointer to what it covers, and cleared only
 *    after the last one is gone); the superblock's summary counters are
 *    not ordered (FFS: recomputed after an unclean mount).  File data is not ordered: a block written
 *    since the last sync may hold its old contents, zeros, or what the
 *    block held before it was allocated.
 *  - fsync/fdatasync/sync write EVERY dirty buffer home and flush (none's
 *    commit): everything before the call is durable.
 *
 * How (the rules of src/txn/mode.h, "Ordering rules of seed 003"): each
 * event is a *provider* of one class for later events of the same handle,
 * and a *dependent* of some classes.  At a dependent event the mode writes
 * home, synchronously (ubj_cache_write_home, then a flush on a device with
 * a volatile write cache), every block of the handle holding a pending
 * provider of those classes -- except the event's own block, which the
 * same atomic block write carries.  So whatever a buffer holds was safe
 * to write from the moment it was changed: the write-back that follows
 * (tick, reclaim, eviction, commit) needs no ordering.
 *
 *   class    provided by                              needed by
 *   INIT     INODE_INIT, NODE_INIT                    DIRENT_ADD, DIRENT_RENAME, EXT_MAP,
 *                                                     EXT_SPLIT, DIR_SPLIT, EXT_ROOT_OUT,
 *                                                     DIR_ROOT, XATTR                (R1)
 *   ALLOC    INODE_ALLOC, BLOCK_ALLOC (bitmaps:       the same, and INODE_INIT (an
 *            a bit on the disk before what it         initialised inode is never
 *            covers is used or pointed at)            marked free)
 *   (ORPHAN_LINK needs NULL and LINK: the list names an inode only once
 *   its last name and its link count are gone on the disk)
 *   LINK     LINK_COUNT                               the same, and INODE_INIT
 *                                                     (a link count covers a name or a
 *                                                     ".." before it is written: R1/R3)
 *   NAME     DIRENT_ADD, DIRENT_RENAME                DIRENT_REMOVE                  (R3)
 *   NULL     DIRENT_REMOVE, DIRENT_RENAME, DIR_MERGE, LINK_COUNT, INODE_CLEAR,
 *            EXT_UNMAP, EXT_ROOT_IN, INODE_CLEAR,     BLOCK_FREE                     (R2)
 *            XATTR
 *   ORPHAN   ORPHAN_UNLINK                            INODE_CLEAR, INODE_FREE (R2;
 *                                                     INODE_FREE needs NULL too: the
 *                                                     cleared slot before its bit)
 *
 * The file system makes its changes in that order (src/fs/namei.c: a
 * link count is raised before the name it counts is added; dir.c and
 * extent.c: a split fills its new node before the old one loses its upper
 * half).  Splits are the one place where a change is made before what it
 * depends on: the old node loses its moved half (DIR_SPLIT / EXT_SPLIT on
 * it, the first naming the new node b) before the parent gains b's index.
 * That old node joins the deferred set: write_begin defers it
 * (UBJ_WRITE_DEFER), or under UBJ_WRITE_MUST writes the device's own copy
 * of it instead (UBJ_WRITE_ROLLED_BACK: the buffer stays DIRTY).  At the
 * handle's stop the mode writes, synchronously and in this order, the
 * handle's new nodes, its other changed blocks (the parents and the inode
 * that now point at them), then the deferred old nodes from the last
 * deferred to the first (each parent before the child whose moved half
 * it indexes), and releases them.  The order: new node, then
 * parent, then old node.  Between the parent's write and the old node's,
 * the disk holds the old node's last written copy: the moved half twice
 * (fsck: keys outside the node's range, which it drops) or, if the node
 * was never written since it was made, an empty leaf -- stale copies the
 * unclean mount's reachability pass removes; no name is lost.
 *
 * Lock: the synchronous writes are made with the mount lock held: inside
 * a handle nothing releases it (docs/DESIGN.md, "Device reads outside the
 * mount lock": the file system's operations are atomic to each other), so
 * another operation waits for them.  Reads outside the lock still run.
 *
 * State [the mount lock] per handle (h->priv: a struct sync_h): pending
 * providers (block, classes), the blocks changed, the new nodes, the
 * deferred old nodes.  [s->lock, taken by the events and write_begin
 * (maybe without the mount lock); never the mount lock]: the deferred
 * set of every open handle.
 *  S1 A block is in the deferred set only while the handle that split it
 *     is open; stop empties its part (so no cycle can form: the
 *     progress invariant 15 of src/cache/cache.c).
 *  S2 A pending provider's block is written before any dependent event of
 *     its classes in another block returns (broken variants skip it).
 *
 * Owns: ubj_mode_sync, ubj_sync_stats_get, ubj_sync_test_break.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "txn/mode.h"
#include "txn/sync.h"

/* from src/util/errormsg.c */
int ubj_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

enum { SY_INIT = 0x1u, SY_LINK = 0x2u, SY_NAME = 0x4u, SY_NULL = 0x8u,
       SY_ORPHAN = 0x10u, SY_ALLOC = 0x20u };

/* A growable list of block numbers. */
struct sync_vec {
    uint64_t *v;
    uint32_t n, cap;
};

/* A provider pending in a handle: a block and the classes it holds. */
struct sync_prov {
    uint64_t blkno;
    unsigned cls;
};

/* One open handle's records [the mount lock]. */
struct sync_h {
    struct sync_prov *prov;
    uint32_t nprov, capprov;
    struct sync_vec touched;     /* blocks with an event in the handle */
    struct sync_vec fresh;       /* NODE_INIT blocks */
    struct sync_vec named;       /* fresh nodes a split event named already */
    struct sync_vec defer;       /* old nodes deferred, in order */
    struct sync_h *next;         /* the free list */
};

struct sync_state {
    struct ubj_txn *t;
    pthread_mutex_t lock;
    struct sync_vec dset;        /* [lock] deferred blocks of every handle */
    struct sync_h *free;         /* [mount lock] records kept for reuse */
    bool volatile_cache;         /* the device needs a flush for durability */
    struct ubj_sync_stats st;    /* [mount lock]; deferred, rolled_back [lock] */
};

#if UBJ_TEST_HOOKS
static atomic_uint sync_break;

void ubj_sync_test_break(unsigned bits)
{
    atomic_store(&sync_break, bits);
}

/* sync_broken -- whether the broken variant `bit` is selected. */
static bool sync_broken(unsigned bit)
{
    return (atomic_load(&sync_break) & bit) != 0;
}
#else
static bool sync_broken(unsigned bit)
{
    (void)bit;
    return false;
}
#endif

/* ---- lists ------------------------------------------------------------------ */

static bool vec_has(const struct sync_vec *v, uint64_t x)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (v->v[i] == x)
            return true;
    return false;
}

/* vec_add -- append x (unless `uniq` and present).  0 or -ENOMEM. */
static int vec_add(struct sync_vec *v, uint64_t x, bool uniq)
{
    if (uniq && vec_has(v, x))
        return 0;
    if (v->n == v->cap) {
        uint32_t ncap = v->cap ? v->cap * 2 : 16;
        uint64_t *p = realloc(v->v, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return ubj_set_error(-ENOMEM, "mode sync: out of memory");
        v->v = p;
        v->cap = ncap;
    }
    v->v[v->n++] = x;
    return 0;
}

/* vec_del -- remove one x (order kept). */
static void vec_del(struct sync_vec *v, uint64_t x)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (v->v[i] == x) {
            memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof v->v[0]);
            v->n--;
            return;
        }
}

static struct sync_state *sync_of(struct ubj_txn *t)
{
    return t->priv;
}

static struct sync_h *sync_h_of(struct ubj_handle *h)
{
    return (struct sync_h *)(uintptr_t)h->priv;
}

/* ---- the event table --------------------------------------------------------- */

/* sync_needs -- the provider classes that must be on the disk before the
 * change ev describes may be (and so before the event returns). */
static unsigned sync_needs(const struct ubj_event *ev)
{
    switch (ev->type) {
    case UBJ_EV_INODE_INIT:   /* its bitmap bit first: an initialised
                                 inode is never marked free on the disk */
        return SY_ALLOC | SY_LINK;
    case UBJ_EV_ORPHAN_LINK:  /* the list names only an inode whose last
                                 name and link count are gone */
        return SY_NULL | SY_LINK;
    case UBJ_EV_DIRENT_ADD:
    case UBJ_EV_DIRENT_RENAME:
    case UBJ_EV_EXT_MAP:
    case UBJ_EV_EXT_SPLIT:
    case UBJ_EV_DIR_SPLIT:
    case UBJ_EV_EXT_ROOT_OUT:
    case UBJ_EV_XATTR:
        return SY_INIT | SY_ALLOC | SY_LINK;
    case UBJ_EV_DIR_ROOT:   /* and a count drop after the removal */
        return SY_INIT | SY_ALLOC | SY_LINK | SY_NULL;
    case UBJ_EV_DIRENT_REMOVE:
        return SY_NAME;
    case UBJ_EV_INODE_CLEAR:   /* and off the orphan list first */
        return SY_NULL | SY_ORPHAN;
    case UBJ_EV_LINK_COUNT:
    case UBJ_EV_BLOCK_FREE:
        return SY_NULL;
    case UBJ_EV_INODE_FREE:
        return SY_NULL | SY_ORPHAN;   /* the slot cleared, off the list */
    default:
        return 0;
    }
}

/* sync_provides -- the classes the change ev describes provides. */
static unsigned sync_provides(const struct ubj_event *ev)
{
    switch (ev->type) {
    case UBJ_EV_INODE_INIT:
    case UBJ_EV_NODE_INIT:
        return SY_INIT;
    case UBJ_EV_INODE_ALLOC:
    case UBJ_EV_BLOCK_ALLOC:
        return SY_ALLOC;
    case UBJ_EV_LINK_COUNT:
        return SY_LINK;
    case UBJ_EV_DIRENT_ADD:
        return SY_NAME;
    case UBJ_EV_DIRENT_RENAME:
        return SY_NAME | SY_NULL;
    case UBJ_EV_DIRENT_REMOVE:
    case UBJ_EV_DIR_MERGE:
    case UBJ_EV_EXT_UNMAP:
    case UBJ_EV_EXT_ROOT_IN:
    case UBJ_EV_INODE_CLEAR:
    case UBJ_EV_XATTR:
        return SY_NULL;
    case UBJ_EV_ORPHAN_UNLINK:
        return SY_ORPHAN;
    default:
        return 0;
    }
}

/* sync_broken_classes -- the classes a broken variant does not wait for. */
static unsigned sync_broken_classes(void)
{
    unsigned skip = 0;
    if (sync_broken(UBJ_SYNC_BREAK_INIT))
        skip |= SY_INIT | SY_LINK | SY_ALLOC;
    if (sync_broken(UBJ_SYNC_BREAK_NULLIFY))
        skip |= SY_NULL | SY_ORPHAN;
    if (sync_broken(UBJ_SYNC_BREAK_RENAME))
        skip |= SY_NAME;
    return skip;
}

/* ---- synchronous writes [the mount lock] --------------------------------------- */

/*
 * sync_write_block -- write block blkno home now and wait for it (a write
 * of it in flight first: ubj_cache_write_home).  A block no longer cached
 * was written when its buffer was reused; a block the file system forgot
 * (freed) needs nothing.  0 or -EIO.
 */
static int sync_write_block(struct sync_state *s, uint64_t blkno)
{
    struct ubj_cache *c = s->t->cache;
    struct ubj_buf *b;
    if (ubj_cache_lookup(c, blkno, &b) < 0)
        return 0;
    struct ubj_buf_view v = ubj_cache_peek(c, b);
    int rc = 0;
    if (v.state == UBJ_BUF_DIRTY || v.state == UBJ_BUF_CLEAN) {
        /* CLEAN: changed inside this handle before its ubj_txn_dirty (a
         * truncate dirties the inode last), or written since -- again */
        if (v.state == UBJ_BUF_CLEAN)
            ubj_cache_mark_dirty(c, b, UBJ_KIND_META, s->t->txid);   /* sealed */
        rc = ubj_cache_write_home(c, b);
        s->st.sync_writes++;
    }
    ubj_cache_put(c, b);
    return rc;
}

/* sync_write_now -- write block blkno (changed, perhaps not yet marked
 * dirty: inside its event) home now and wait; a flush after it on a
 * volatile cache. */
static int sync_write_now(struct sync_state *s, uint64_t blkno)
{
    struct ubj_cache *c = s->t->cache;
    struct ubj_buf *b;
    if (ubj_cache_lookup(c, blkno, &b) < 0)
        return 0;
    ubj_cache_mark_dirty(c, b, UBJ_KIND_META, s->t->txid);
    int rc = ubj_cache_write_home(c, b);
    ubj_cache_put(c, b);
    s->st.sync_writes++;
    if (rc == 0 && s->volatile_cache) {
        s->st.sync_flushes++;
        s->t->stats.dev_flushes++;
        rc = ubj_bdev_flush(s->t->dev);
    }
    return rc;
}

/* sync_has_other -- a pending provider of `cls` in another block. */
static bool sync_has_other(const struct sync_h *sh, unsigned cls, uint64_t own)
{
    for (uint32_t i = 0; i < sh->nprov; i++)
        if ((sh->prov[i].cls & cls) && sh->prov[i].blkno != own)
            return true;
    return false;
}

/* sync_flush -- after synchronous writes: a flush where the device's
 * write cache is volatile (completion alone is durable on one without). */
static int sync_flush(struct sync_state *s, unsigned wrote)
{
    if (wrote == 0 || !s->volatile_cache)
        return 0;
    s->st.sync_flushes++;
    s->t->stats.dev_flushes++;
    return ubj_bdev_flush(s->t->dev);
}

/* sync_wait_for -- write every pending provider of `need` in another block
 * than `own` (S2), then drop every provider record of the blocks written.
 * Order: new things in the order they were made (a node before the node
 * that points at it), removals in reverse (the parent that dropped its
 * pointer before the child emptied below it). */
static int sync_wait_for(struct sync_state *s, struct sync_h *sh, unsigned need,
                         uint64_t own)
{
    need &= ~sync_broken_classes();
    bool reverse = (need & (SY_NULL | SY_ORPHAN)) != 0;
    unsigned wrote = 0;
    uint32_t n = sh->nprov;
    for (uint32_t j = 0; j < n; j++) {
        struct sync_prov *p = &sh->prov[reverse ? n - 1 - j : j];
        if (!(p->cls & need) || p->blkno == own)
            continue;
        int rc = sync_write_block(s, p->blkno);
        if (rc < 0)
            return rc;
        wrote++;
        p->cls = 0;                            /* one record per block */
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (sh->prov[i].cls)
            sh->prov[k++] = sh->prov[i];
    sh->nprov = k;
    if (wrote)
        s->st.sync_points++;
    return sync_flush(s, wrote);
}

/* sync_provide -- record that block blkno holds a provider of `cls`. */
static int sync_provide(struct sync_h *sh, uint64_t blkno, unsigned cls)
{
    for (uint32_t i = 0; i < sh->nprov; i++)
        if (sh->prov[i].blkno == blkno) {
            sh->prov[i].cls |= cls;
            return 0;
        }
    if (sh->nprov == sh->capprov) {
        uint32_t ncap = sh->capprov ? sh->capprov * 2 : 16;
        struct sync_prov *p = realloc(sh->prov, (size_t)ncap * sizeof *p);
        if (p == NULL)
            return ubj_set_error(-ENOMEM, "mode sync: out of memory");
        sh->prov = p;
        sh->capprov = ncap;
    }
    sh->prov[sh->nprov++] = (struct sync_prov){ blkno, cls };
    return 0;
}

/* ---- the cache's hooks (maybe without the mount lock) -------------------------- */

/* sync_write_begin -- a deferred old node is not written as it is: later
 * (UBJ_WRITE_DEFER), or as the device holds it (UBJ_WRITE_MUST). */
static int sync_write_begin(void *ctx, struct ubj_buf *b, uint64_t blkno,
                            const void *live, void *snap, unsigned flags)
{
    struct ubj_txn *t = ctx;
    struct sync_state *s = sync_of(t);
    (void)b;
    (void)live;
    pthread_mutex_lock(&s->lock);
    bool held = vec_has(&s->dset, blkno);
    if (held && !(flags & UBJ_WRITE_MUST))
        s->st.deferred++;
    else if (held)
        s->st.rolled_back++;
    pthread_mutex_unlock(&s->lock);
    if (!held)
        return UBJ_WRITE_AS_IS;
    if (!(flags & UBJ_WRITE_MUST))
        return UBJ_WRITE_DEFER;
    /* the device's copy: what the disk already says, written again */
    if (ubj_bdev_read(t->dev, blkno, 1, snap) < 0)
        return UBJ_WRITE_DEFER;   /* never reached with MUST on a sane device */
    return UBJ_WRITE_ROLLED_BACK;
}

/* sync_reclaim -- write the dirty buffers home (the deferred ones wait). */
static int sync_reclaim(void *ctx)
{
    struct ubj_txn *t = ctx;
    return ubj_cache_writeback(t->cache, 0);
}

static const struct ubj_cache_hooks sync_hooks = {
    .write_begin = sync_write_begin,
    .reclaim = sync_reclaim,
};

/* ---- the mode's operations ------------------------------------------------------ */

static int sync_mount(struct ubj_txn *t)
{
    struct sync_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "mode sync: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->t = t;
    s->volatile_cache = (t->dev->guarantees & UBJ_BDEV_VOLATILE_CACHE) != 0;
    t->priv = s;
    ubj_cache_set_hooks(t->cache, &sync_hooks, t);
    return 0;
}

static void sync_h_free(struct sync_h *sh)
{
    free(sh->prov);
    free(sh->touched.v);
    free(sh->fresh.v);
    free(sh->named.v);
    free(sh->defer.v);
    free(sh);
}

static int sync_unmount(struct ubj_txn *t)
{
    int rc = ubj_mode_none.commit(t, UBJ_COMMIT_WAIT);
    struct sync_state *s = sync_of(t);
    while (s->free) {
        struct sync_h *sh = s->free;
        s->free = sh->next;
        sync_h_free(sh);
    }
    free(s->dset.v);
    pthread_mutex_destroy(&s->lock);
    free(s);
    t->priv = NULL;
    return rc;
}

/* sync_start -- the handle's records (from the free list). */
static int sync_start(struct ubj_handle *h)
{
    struct sync_state *s = sync_of(h->t);
    struct sync_h *sh = s->free;
    if (sh != NULL)
        s->free = sh->next;
    else if ((sh = calloc(1, sizeof *sh)) == NULL)
        return ubj_set_error(-ENOMEM, "mode sync: out of memory");
    sh->next = NULL;
    h->priv = (uint64_t)(uintptr_t)sh;
    return 0;
}

static int sync_publish(struct sync_state *s, struct sync_h *sh);

/* sync_split_event -- an event a split makes before its parent points at
 * the new node: no publication may run inside it. */
static bool sync_split_event(const struct sync_h *sh, const struct ubj_event *ev)
{
    switch (ev->type) {
    case UBJ_EV_NODE_INIT:
    case UBJ_EV_DIR_SPLIT:
    case UBJ_EV_EXT_SPLIT:
    case UBJ_EV_EXT_ROOT_OUT:
    case UBJ_EV_DIR_ROOT:
        return true;
    default:
        return vec_has(&sh->fresh, ev->blkno) || vec_has(&sh->defer, ev->blkno);
    }
}

/* sync_needs_split -- a provider of `need` in a split's new or old node:
 * waiting for it means publishing the split first (its old node cannot
 * be written alone, its new node is not reachable alone). */
static bool sync_needs_split(const struct sync_h *sh, unsigned need)
{
    for (uint32_t i = 0; i < sh->nprov; i++)
        if ((sh->prov[i].cls & need) && (vec_has(&sh->fresh, sh->prov[i].blkno) ||
                                         vec_has(&sh->defer, sh->prov[i].blkno)))
            return true;
    return false;
}

/* sync_event -- wait for what the change depends on, then record what it
 * provides (the table above); a split's old node is deferred, and
 * published (sync_publish) before a later change of the handle waits for
 * one of the split's blocks (a rename's removal for the new name a split
 * placed). */
static int sync_event(struct ubj_handle *h, const struct ubj_event *ev)
{
    struct sync_state *s = sync_of(h->t);
    struct sync_h *sh = sync_h_of(h);
    int rc = vec_add(&sh->touched, ev->blkno, true);
    if (rc == 0 && ev->type == UBJ_EV_NODE_INIT)
        rc = vec_add(&sh->fresh, ev->blkno, true);
    if (rc == 0 && (ev->type == UBJ_EV_DIR_SPLIT || ev->type == UBJ_EV_EXT_SPLIT) &&
        ev->b != 0 && vec_has(&sh->fresh, ev->b) && !vec_has(&sh->named, ev->b) &&
        !vec_has(&sh->fresh, ev->blkno)) {
        /* the first split event naming new node b: the old node, which
         * lost b's records; the parent gains b's index later */
        rc = vec_add(&sh->named, ev->b, false);
        if (rc == 0 && sync_broken(UBJ_SYNC_BREAK_SPLIT))
            rc = sync_write_now(s, ev->blkno);   /* old node before parent */
        else if (rc == 0 &&
            !vec_has(&sh->defer, ev->blkno)) {
            rc = vec_add(&sh->defer, ev->blkno, false);
            if (rc == 0) {
                pthread_mutex_lock(&s->lock);
                rc = vec_add(&s->dset, ev->blkno, false);
                pthread_mutex_unlock(&s->lock);
            }
        }
    }
    unsigned need = sync_needs(ev) & ~sync_broken_classes();
    if (rc == 0 && sh->defer.n > 0 && !sync_split_event(sh, ev) &&
        sync_needs_split(sh, need)) {
        rc = sync_publish(s, sh);
        sh->defer.n = sh->fresh.n = sh->named.n = 0;
    }
    if (rc == 0)
        rc = sync_wait_for(s, sh, need, ev->blkno);
    /* a directory's counts cover a name before the name can be written:
     * the name's leaf is not written between its DIRENT_ADD and this
     * event (dir_account right after the insert), so the inode goes now */
    if (rc == 0 && ev->type == UBJ_EV_DIR_ROOT && !sync_broken(UBJ_SYNC_BREAK_RENAME) &&
        sync_has_other(sh, SY_NAME, ev->blkno))
        rc = sync_write_now(s, ev->blkno);
    unsigned cls = sync_provides(ev);
    if (rc == 0 && cls)
        rc = sync_provide(sh, ev->blkno, cls);
    return rc;
}

/* sync_publish -- stop of a handle that split: its new nodes, then its
 * other changed blocks, then the deferred old nodes, last first, each
 * written and waited for; then every deferred node released (S1). */
static int sync_publish(struct sync_state *s, struct sync_h *sh)
{
    int rc = 0;
    unsigned wrote = 0;
    for (uint32_t i = 0; i < sh->fresh.n && rc == 0; i++, wrote++)
        rc = sync_write_block(s, sh->fresh.v[i]);
    if (rc == 0)
        rc = sync_flush(s, wrote);
    wrote = 0;
    for (uint32_t i = 0; i < sh->touched.n && rc == 0; i++) {
        uint64_t blk = sh->touched.v[i];
        if (vec_has(&sh->fresh, blk) || vec_has(&sh->defer, blk))
            continue;
        rc = sync_write_block(s, blk);
        wrote++;
    }
    if (rc == 0)
        rc = sync_flush(s, wrote);
    for (uint32_t i = sh->defer.n; i-- > 0 && rc == 0;) {
        uint64_t blk = sh->defer.v[i];
        pthread_mutex_lock(&s->lock);
        vec_del(&s->dset, blk);
        pthread_mutex_unlock(&s->lock);
        rc = sync_write_block(s, blk);
        if (rc == 0)
            rc = sync_flush(s, 1);
    }
    /* released whether or not the writes succeeded: a failed write leaves
     * the buffers DIRTY and the mount's error path takes over */
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < sh->defer.n; i++)
        vec_del(&s->dset, sh->defer.v[i]);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* sync_stop -- publish a split's blocks (S1), then recycle the records. */
static int sync_stop(struct ubj_handle *h)
{
    struct sync_state *s = sync_of(h->t);
    struct sync_h *sh = sync_h_of(h);
    int rc = 0;
    if (sh->defer.n > 0)
        rc = sync_publish(s, sh);
    sh->nprov = 0;
    sh->touched.n = sh->fresh.n = sh->named.n = sh->defer.n = 0;
    sh->next = s->free;
    s->free = sh;
    h->priv = 0;
    return rc;
}

/* The rest is none's: delayed write-back, commit = write back + flush. */
static int sync_commit(struct ubj_txn *t, unsigned flags)
{
    return ubj_mode_none.commit(t, flags);
}

static int sync_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    return ubj_mode_none.write_access(h, b);
}

static int sync_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    return ubj_mode_none.dirty(h, b, kind);
}

/* sync_forget -- a block freed within h: nothing of it is written for
 * the handle any more (its records go), then none's forget. */
static int sync_forget(struct ubj_handle *h, uint64_t blkno)
{
    struct sync_h *sh = sync_h_of(h);
    if (sh != NULL) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < sh->nprov; i++)
            if (sh->prov[i].blkno != blkno)
                sh->prov[k++] = sh->prov[i];
        sh->nprov = k;
        vec_del(&sh->touched, blkno);
        vec_del(&sh->fresh, blkno);
        if (vec_has(&sh->defer, blkno)) {
            struct sync_state *s = sync_of(h->t);
            vec_del(&sh->defer, blkno);
            pthread_mutex_lock(&s->lock);
            vec_del(&s->dset, blkno);
            pthread_mutex_unlock(&s->lock);
        }
    }
    return ubj_mode_none.forget(h, blkno);
}

/* sync_tick -- none's periodic write-back (flags: UBJ_TICK_*). */
static int sync_tick(struct ubj_txn *t, unsigned flags)
{
    return ubj_mode_none.tick(t, flags);
}

void ubj_sync_stats_get(const struct ubj_txn *t, struct ubj_sync_stats *out)
{
    memset(out, 0, sizeof *out);
    if (t->ops == NULL || t->ops->event != sync_event || t->priv == NULL)
        return;
    struct sync_state *s = t->priv;
    pthread_mutex_lock(&s->lock);
    *out = s->st;
    pthread_mutex_unlock(&s->lock);
}

const struct ubj_mode_ops ubj_mode_sync = {
    .version = UBJ_MODE_OPS_VERSION,
    .name = "sync",
    .mount = sync_mount,
    .unmount = sync_unmount,
    .start = sync_start,
    .write_access = sync_write_access,
    .dirty = sync_dirty,
    .forget = sync_forget,
    .stop = sync_stop,
    .commit = sync_commit,
    .tick = sync_tick,
    .event = sync_event,
};
