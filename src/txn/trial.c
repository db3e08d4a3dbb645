/*
 * trial.c -- consistency mode `trial`, test-only (UBJ_TEST_HOOKS builds):
 * the proof that a mode is this one file plus one entry in
 * src/txn/registry.c (docs/DESIGN.md, "Adding a consistency mode").  With
 * only that, mkfs, fsck, inspect, bench and crashtest know it
 * (tests/tools/trialmode.sh).
 *
 * What it guarantees: what `none` does (src/txn/none.c) -- nothing after a
 * crash; fsync/sync write everything home and flush.  Every operation is
 * none's, reached through its table.
 *
 * With UBJ_TRIAL_HOOKS=1 in the environment at mount, it also proves that
 * the cache's write hooks and the semantic events are enough to build
 * ordering on (docs/DESIGN.md, "Cache write hooks"): a small soft-updates
 * model from the events, enforced through write_begin / write_done, on
 * top of none's operations (tests/unit/trial_hooks.c runs a workload on a
 * tiny cache under a device that checks the order).  Two of seed 003's
 * rules:
 *   R1 a name reaches the disk only after the inode it names was
 *      initialised there: DIRENT_ADD / DIRENT_RENAME naming inode a depend
 *      on a's INODE_INIT while that is not on the device; DIR_SPLIT and
 *      DIR_MERGE (records moved, the inodes unnamed) and the nodes
 *      NODE_INIT made in the same handle depend on every such INODE_INIT.
 *   R2 an inode's link count drop or clearing reaches the disk only after
 *      the name's removal: LINK_COUNT and INODE_CLEAR after a
 *      DIRENT_REMOVE or DIRENT_RENAME in the same handle depend on it.
 * write_begin defers a block with an unsatisfied dependency, or under
 * UBJ_WRITE_MUST rolls it back in the snapshot: a directory node whole to
 * the device's copy (records move around: a byte range is no valid undo),
 * an inode's field to its value before the update (kept at write_access).
 * So an inode table block's write always carries its INODE_INITs (an
 * INODE_INIT supersedes earlier records of its slot; a cleared inode's
 * INODE_INIT is moot), a directory block's unrolled write its removals:
 * every cycle (a directory block adding a name of an inode whose table
 * block drops another's link) resolves by one rolled-back inode block
 * write -- the progress invariant 15 of src/cache/cache.c asks of a mode.
 * fsync/sync/unmount write back with UBJ_WB_MUST until nothing is dirty;
 * reclaim writes back with UBJ_WB_MUST.
 *
 * State [s->lock, taken by the events (mount lock held) and by the hooks
 * (maybe not): never the mount lock]: providers (updates others wait for)
 * and dependents (updates that wait), in arrays; a provider's state moves
 * PENDING --write_begin of its block, not rolled back--> SENT
 * --write_done rc 0--> ONDISK (rc < 0: back to PENDING); a dependent is
 * dropped once a write that carried it unrolled completed, or its block
 * was freed, or an INODE_INIT superseded it.  Per handle [the mount
 * lock]: the last removal, the nodes made, the blocks' contents at
 * write_access brought up to date by each event (an update's undo value
 * is what its block held just before it).
 *  T-H Those per-handle records are the mount's, so at most one handle is
 *      open at a time: the mount sets the handle layer's capacity to one
 *      credit (src/txn/handle.c, H2: a second handle waits until the
 *      first stops).  Commits run inside the barrier (none's N1).
 *
 * Owns: ubj_mode_trial.
 */
#if UBJ_TEST_HOOKS
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "txn/mode.h"

/* from src/util/errormsg.c */
int ubj_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define TRIAL_BS 4096u
#define TRIAL_HDR 16u            /* block header: the seal's, never rolled back */
#define TRIAL_NONE UINT32_MAX
#define TRIAL_PASSES 8u          /* UBJ_WB_MUST write-backs that empty the cache */

enum { TRIAL_P_FREE, TRIAL_P_PENDING, TRIAL_P_SENT, TRIAL_P_ONDISK };
enum { TRIAL_INIT, TRIAL_REMOVE };

/* An update other blocks' updates wait for. */
struct trial_prov {
    uint64_t blkno;
    uint64_t ino;            /* TRIAL_INIT: the inode */
    uint32_t off, len;
    uint8_t kind, state;
    uint32_t deps;           /* dependents pointing at it */
};

/* An update of block blkno that waits for provider prov. */
struct trial_dep {
    uint64_t blkno;
    uint64_t ino;            /* an inode field: its inode (an INODE_INIT of
                                it supersedes); 0: a directory node */
    uint32_t off, len;       /* inode field: the range undone */
    uint32_t prov;
    uint64_t seq;            /* creation order */
    bool sent;               /* carried unrolled by the write in flight */
    uint8_t old[256];        /* inode field: the bytes before the update */
};

/* One block's contents at its last write_access in the running handle. */
struct trial_copy {
    uint64_t blkno;
    uint8_t data[TRIAL_BS];
};

struct trial_state {
    struct ubj_txn *t;
    pthread_mutex_t lock;
    struct trial_prov *prov;     /* [lock] */
    uint32_t nprov, capprov;
    struct trial_dep *dep;       /* [lock] */
    uint32_t ndep, capdep;
    uint64_t seq;                /* [lock] dependents made */
    /* the open handle (one at a time: T-H) [the mount lock] */
    uint32_t last_remove;        /* provider, or TRIAL_NONE */
    uint64_t made[16];           /* nodes NODE_INIT made */
    uint32_t nmade;
    struct trial_copy *copy;
    uint32_t ncopy, capcopy;
};

/* trial_of -- trial's own state (prepare's argument), or NULL: none's. */
static inline struct trial_state *trial_of(struct ubj_txn *t)
{
    return t->arg;
}

/* trial_grow -- make room for one more element of size sz in *v. */
static int trial_grow(void **v, uint32_t n, uint32_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    uint32_t ncap = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, (size_t)ncap * sz);
    if (p == NULL)
        return ubj_set_error(-ENOMEM, "mode trial: out of memory");
    *v = p;
    *cap = ncap;
    return 0;
}

/* ---- records [s->lock] ---------------------------------------------------- */

/* trial_overlap -- [o1, o1+l1) and [o2, o2+l2) share a byte. */
static inline bool trial_overlap(uint32_t o1, uint32_t l1, uint32_t o2, uint32_t l2)
{
    return o1 < o2 + l2 && o2 < o1 + l1;
}

/* trial_prov_new -- a PENDING provider; its index or TRIAL_NONE. */
static uint32_t trial_prov_new(struct trial_state *s, const struct ubj_event *ev,
                               uint8_t kind)
{
    uint32_t i = 0;
    while (i < s->nprov && s->prov[i].state != TRIAL_P_FREE)
        i++;
    if (i == s->nprov) {
        if (trial_grow((void **)&s->prov, s->nprov, &s->capprov, sizeof *s->prov) < 0)
            return TRIAL_NONE;
        s->nprov++;
    }
    s->prov[i] = (struct trial_prov){ .blkno = ev->blkno, .ino = ev->ino,
                                      .off = ev->off, .len = ev->len,
                                      .kind = kind, .state = TRIAL_P_PENDING };
    return i;
}

/* trial_prov_gc -- free a provider nobody waits for once it is on disk. */
static void trial_prov_gc(struct trial_state *s, uint32_t i)
{
    if (s->prov[i].state == TRIAL_P_ONDISK && s->prov[i].deps == 0)
        s->prov[i].state = TRIAL_P_FREE;
}

/* trial_dep_new -- block blkno's update waits for provider p (unless that
 * is on disk already).  old: the bytes before (an inode field) or NULL. */
static int trial_dep_new(struct trial_state *s, uint64_t blkno, uint64_t ino,
                         uint32_t off, uint32_t len, const uint8_t *old, uint32_t p)
{
    if (p == TRIAL_NONE || s->prov[p].state == TRIAL_P_ONDISK ||
        s->prov[p].state == TRIAL_P_FREE)
        return 0;
    for (uint32_t k = 0; k < s->ndep; k++)   /* the same wait: once */
        if (s->dep[k].blkno == blkno && s->dep[k].prov == p && !old)
            return 0;
    int rc = trial_grow((void **)&s->dep, s->ndep, &s->capdep, sizeof *s->dep);
    if (rc < 0)
        return rc;
    struct trial_dep *d = &s->dep[s->ndep++];
    *d = (struct trial_dep){ .blkno = blkno, .ino = ino, .off = off,
                             .len = old ? len : 0, .prov = p, .seq = ++s->seq };
    if (old)
        memcpy(d->old, old, len);
    s->prov[p].deps++;
    return 0;
}

/* trial_dep_drop -- forget dependent k (swapped with the last). */
static void trial_dep_drop(struct trial_state *s, uint32_t k)
{
    uint32_t p = s->dep[k].prov;
    s->prov[p].deps--;
    s->dep[k] = s->dep[--s->ndep];
    trial_prov_gc(s, p);
}

/* trial_init_pending -- inode ino's newest INODE_INIT not on disk, or
 * TRIAL_NONE. */
static uint32_t trial_init_pending(const struct trial_state *s, uint64_t ino)
{
    for (uint32_t i = s->nprov; i-- > 0;)
        if (s->prov[i].kind == TRIAL_INIT && s->prov[i].ino == ino &&
            (s->prov[i].state == TRIAL_P_PENDING || s->prov[i].state == TRIAL_P_SENT))
            return i;
    return TRIAL_NONE;
}

/* trial_moot -- provider i no longer needs the disk (its inode was cleared,
 * its block freed): those waiting for it may go. */
static void trial_moot(struct trial_state *s, uint32_t i)
{
    if (s->prov[i].state == TRIAL_P_FREE)
        return;
    s->prov[i].state = TRIAL_P_ONDISK;
    trial_prov_gc(s, i);
}

/* ---- events ------------------------------------------------------------- */

/* trial_old -- the bytes [off, off+len) of block blkno at its write_access
 * in this handle, or NULL. */
static const uint8_t *trial_old(const struct trial_state *s, uint64_t blkno,
                                uint32_t off, uint32_t len)
{
    if (off + len > TRIAL_BS || len > sizeof ((struct trial_dep *)0)->old)
        return NULL;
    for (uint32_t k = s->ncopy; k-- > 0;)
        if (s->copy[k].blkno == blkno)
            return s->copy[k].data + off;
    return NULL;
}

/* trial_names -- a name-bearing directory node change (R1): ev's block and
 * the nodes made in this handle wait for INODE_INIT p, or for every one
 * not on disk (p == TRIAL_NONE: split or merge -- the inodes unknown). */
static int trial_names(struct trial_state *s, const struct ubj_event *ev,
                       uint32_t p, bool all)
{
    int rc = 0;
    for (uint32_t i = 0; i < s->nprov && rc == 0; i++) {
        bool waiting = s->prov[i].state == TRIAL_P_PENDING ||
                       s->prov[i].state == TRIAL_P_SENT;
        if (!waiting || (all ? s->prov[i].kind != TRIAL_INIT : i != p))
            continue;
        rc = trial_dep_new(s, ev->blkno, 0, 0, 0, NULL, i);
        for (uint32_t m = 0; m < s->nmade && rc == 0; m++)
            rc = trial_dep_new(s, s->made[m], 0, 0, 0, NULL, i);
    }
    return rc;
}

/* trial_init -- INODE_INIT: it supersedes earlier records of the slot;
 * names of the inode will wait for it. */
static int trial_init(struct trial_state *s, const struct ubj_event *ev)
{
    for (uint32_t k = s->ndep; k-- > 0;)
        if (s->dep[k].blkno == ev->blkno &&
            trial_overlap(s->dep[k].off, s->dep[k].len, ev->off, ev->len))
            trial_dep_drop(s, k);
    return trial_prov_new(s, ev, TRIAL_INIT) == TRIAL_NONE ? -ENOMEM : 0;
}

/* trial_inode_field -- LINK_COUNT / INODE_CLEAR: after a removal in this
 * handle, wait for it, undone meanwhile to the value before. */
static int trial_inode_field(struct trial_state *s, const struct ubj_event *ev)
{
    if (ev->type == UBJ_EV_INODE_CLEAR) {   /* its INODE_INITs are moot */
        uint32_t p;
        while ((p = trial_init_pending(s, ev->ino)) != TRIAL_NONE)
            trial_moot(s, p);
    }
    const uint8_t *old = trial_old(s, ev->blkno, ev->off, ev->len);
    if (s->last_remove == TRIAL_NONE || old == NULL)
        return 0;   /* nothing to wait for (or no copy: never undone) */
    return trial_dep_new(s, ev->blkno, ev->ino, ev->off, ev->len, old,
                         s->last_remove);
}

/* trial_event_locked -- one event into the records. */
static int trial_event_locked(struct trial_state *s, const struct ubj_event *ev)
{
    switch (ev->type) {
    case UBJ_EV_INODE_INIT:
        return trial_init(s, ev);
    case UBJ_EV_LINK_COUNT:
    case UBJ_EV_INODE_CLEAR:
        return trial_inode_field(s, ev);
    case UBJ_EV_DIRENT_RENAME:
    case UBJ_EV_DIRENT_REMOVE: {
        uint32_t p = trial_prov_new(s, ev, TRIAL_REMOVE);
        if (p == TRIAL_NONE)
            return -ENOMEM;
        s->last_remove = p;
        if (ev->type == UBJ_EV_DIRENT_REMOVE)
            return 0;
        return trial_names(s, ev, trial_init_pending(s, ev->a), false);
    }
    case UBJ_EV_DIRENT_ADD:
        return trial_names(s, ev, trial_init_pending(s, ev->a), false);
    case UBJ_EV_DIR_SPLIT:
    case UBJ_EV_DIR_MERGE:
        return trial_names(s, ev, TRIAL_NONE, true);
    case UBJ_EV_NODE_INIT:
        if (s->nmade < sizeof s->made / sizeof s->made[0])
            s->made[s->nmade++] = ev->blkno;
        return 0;
    default:
        return 0;
    }
}

/* ---- the cache hooks ------------------------------------------------------ */

/* trial_undo_node -- a directory node waits: its payload as the device has
 * it (what it held when last written; the header is resealed).  Called
 * with s->lock released: the read may complete other writes, whose
 * write_done takes it (a request queue runs completions in a submitter). */
static int trial_undo_node(struct trial_state *s, uint64_t blkno, uint8_t *snap)
{
    uint8_t *dev = malloc(TRIAL_BS);
    int rc = dev != NULL ? ubj_bdev_read(s->t->dev, blkno, 1, dev) : -ENOMEM;
    if (rc == 0)
        memcpy(snap + TRIAL_HDR, dev + TRIAL_HDR, TRIAL_BS - TRIAL_HDR);
    free(dev);
    return rc;
}

/* trial_undone -- dependent d of a write that rolls back: is its update
 * undone too?  A node is undone whole; an inode field by the oldest value
 * of every waiting update that overlaps it. */
static bool trial_undone(const struct trial_state *s, const struct trial_dep *d,
                         bool node)
{
    if (node)
        return true;
    for (uint32_t k = 0; k < s->ndep; k++) {
        const struct trial_dep *w = &s->dep[k];
        if (w->blkno == d->blkno && !w->sent && w->ino != 0 && w->seq < d->seq &&
            trial_overlap(w->off, w->len, d->off, d->len))
            return true;
    }
    return false;
}

/*
 * trial_write_begin -- defer a block with an update whose dependency is not
 * on the device, or under MUST undo those updates in the snapshot (inode
 * fields newest first, so the oldest value is what is written); mark what
 * the write carries: the updates not undone, and the block's providers --
 * all of them but a node's removals when the node is undone (an inode
 * field's undo value includes every INODE_INIT before it, and a later
 * INODE_INIT dropped it).
 */
static int trial_write_begin(void *ctx, struct ubj_buf *b, uint64_t blkno,
                             const void *live, void *snap, unsigned flags)
{
    struct trial_state *s = ctx;
    (void)b, (void)live;
    pthread_mutex_lock(&s->lock);
    bool waits = false, node = false;
    for (uint32_t k = 0; k < s->ndep; k++) {
        struct trial_dep *d = &s->dep[k];
        if (d->blkno != blkno)
            continue;
        d->sent = s->prov[d->prov].state == TRIAL_P_ONDISK;
        waits |= !d->sent;
        node |= !d->sent && d->ino == 0;
    }
    if (waits && !(flags & UBJ_WRITE_MUST)) {
        pthread_mutex_unlock(&s->lock);
        return UBJ_WRITE_DEFER;
    }
    if (waits) {
        if (node) {   /* a device that cannot be read will not take the write */
            pthread_mutex_unlock(&s->lock);
            (void)trial_undo_node(s, blkno, snap);
            pthread_mutex_lock(&s->lock);
        }
        uint64_t last = UINT64_MAX;   /* newest first */
        for (;;) {
            struct trial_dep *n = NULL;
            for (uint32_t k = 0; k < s->ndep; k++) {
                struct trial_dep *d = &s->dep[k];
                if (d->blkno == blkno && !d->sent && d->ino != 0 && d->seq < last &&
                    (n == NULL || d->seq > n->seq))
                    n = d;
            }
            if (n == NULL)
                break;
            memcpy((uint8_t *)snap + n->off, n->old, n->len);
            last = n->seq;
        }
        for (uint32_t k = 0; k < s->ndep; k++) {
            struct trial_dep *d = &s->dep[k];
            if (d->blkno == blkno && d->sent && trial_undone(s, d, node))
                d->sent = false;
        }
    }
    for (uint32_t i = 0; i < s->nprov; i++) {
        struct trial_prov *p = &s->prov[i];
        if (p->blkno == blkno && p->state == TRIAL_P_PENDING &&
            (p->kind == TRIAL_INIT || !node))
            p->state = TRIAL_P_SENT;
    }
    pthread_mutex_unlock(&s->lock);
    return waits ? UBJ_WRITE_ROLLED_BACK : UBJ_WRITE_AS_IS;
}

/* trial_write_done -- what the write carried is on the device now. */
static void trial_write_done(void *ctx, struct ubj_buf *b, uint64_t blkno,
                             int rc, bool rolled_back)
{
    struct trial_state *s = ctx;
    (void)b, (void)rolled_back;
    pthread_mutex_lock(&s->lock);
    for (uint32_t i = 0; i < s->nprov; i++)
        if (s->prov[i].blkno == blkno && s->prov[i].state == TRIAL_P_SENT) {
            s->prov[i].state = rc == 0 ? TRIAL_P_ONDISK : TRIAL_P_PENDING;
            trial_prov_gc(s, i);
        }
    for (uint32_t k = s->ndep; k-- > 0;)
        if (s->dep[k].blkno == blkno && s->dep[k].sent && rc == 0)
            trial_dep_drop(s, k);
    pthread_mutex_unlock(&s->lock);
}

/* trial_flush_all -- UBJ_WB_MUST write-backs until nothing is dirty (each
 * pass lets the next write what the last one rolled back). */
static int trial_flush_all(struct ubj_txn *t)
{
    for (unsigned pass = 0; pass < TRIAL_PASSES; pass++) {
        struct ubj_cache_stats cs;
        ubj_cache_stats_get(t->cache, &cs);
        if (cs.dirty == 0)
            return 0;
        int rc = ubj_cache_writeback(t->cache, UBJ_WB_MUST);
        if (rc < 0)
            return rc;
    }
    return ubj_set_error(-EIO, "mode trial: dependencies did not resolve in "
                         "%u write-backs", TRIAL_PASSES);
}

/* trial_reclaim -- make room: write everything, rolled back at worst. */
static int trial_reclaim(void *ctx)
{
    struct trial_state *s = ctx;
    return ubj_cache_writeback(s->t->cache, UBJ_WB_MUST);
}

static const struct ubj_cache_hooks trial_hooks = {
    .write_begin = trial_write_begin,
    .write_done = trial_write_done,
    .reclaim = trial_reclaim,
};

/* ---- operations ----------------------------------------------------------- */

/* trial_prepare -- with UBJ_TRIAL_HOOKS=1, the state of the hooks (freed by
 * release after the cache is gone); no NVM options. */
static int trial_prepare(const struct ubj_config *cfg, const struct ubj_mode_image *img,
                         struct ubj_cache_config *cc, void **arg)
{
    (void)img, (void)cc;
    if (cfg && (cfg->nvm_path || cfg->nvm_size || cfg->nvm_flags || cfg->nvm_profile))
        return ubj_set_error(-EINVAL, "mount: mode trial takes no NVM region");
    const char *e = getenv("UBJ_TRIAL_HOOKS");
    *arg = NULL;
    if (e == NULL || strcmp(e, "1") != 0)
        return 0;
    struct trial_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "mode trial: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->last_remove = TRIAL_NONE;
    *arg = s;
    return 0;
}

/* trial_release -- free the hooks' state. */
static void trial_release(void *arg)
{
    struct trial_state *s = arg;
    pthread_mutex_destroy(&s->lock);
    free(s->prov);
    free(s->dep);
    free(s->copy);
    free(s);
}

/* trial_mount -- none's mount; then the hooks, if on. */
static int trial_mount(struct ubj_txn *t)
{
    int rc = ubj_mode_none.mount(t);
    struct trial_state *s = trial_of(t);
    if (rc == 0 && s != NULL) {
        s->t = t;
        ubj_cache_set_hooks(t->cache, &trial_hooks, s);
        ubj_handles_set_capacity(t, 1);   /* T-H: handles one at a time */
    }
    return rc;
}

/* trial_commit -- with the hooks: everything home first, then none's;
 * all inside the barrier (none's commit nests in it). */
static int trial_commit(struct ubj_txn *t, unsigned flags)
{
    ubj_txn_lock_updates(t);
    int rc = trial_of(t) != NULL ? trial_flush_all(t) : 0;
    int crc = ubj_mode_none.commit(t, flags);
    ubj_txn_unlock_updates(t);
    return rc < 0 ? rc : crc;
}

/* trial_unmount -- with the hooks: everything home first, then none's. */
static int trial_unmount(struct ubj_txn *t)
{
    int rc = trial_of(t) != NULL ? trial_flush_all(t) : 0;
    int urc = ubj_mode_none.unmount(t);
    return rc < 0 ? rc : urc;
}

/* trial_start -- none's start; a new handle forgets the last one's
 * records (T-H: one handle open at a time). */
static int trial_start(struct ubj_handle *h)
{
    struct trial_state *s = trial_of(h->t);
    if (s != NULL) {
        s->last_remove = TRIAL_NONE;
        s->nmade = 0;
        s->ncopy = 0;
    }
    return ubj_mode_none.start(h);
}

/* trial_write_access -- none's; with the hooks, keep the block's bytes
 * (an inode field's undo is its value before the update). */
static int trial_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    int rc = ubj_mode_none.write_access(h, b);
    struct trial_state *s = trial_of(h->t);
    if (rc < 0 || s == NULL)
        return rc;
    uint32_t k = 0;
    while (k < s->ncopy && s->copy[k].blkno != (*b)->d->blkno)
        k++;
    if (k == s->ncopy) {
        rc = trial_grow((void **)&s->copy, s->ncopy, &s->capcopy, sizeof *s->copy);
        if (rc < 0)
            return rc;
        s->ncopy++;
    }
    s->copy[k].blkno = (*b)->d->blkno;
    memcpy(s->copy[k].data, (*b)->data, TRIAL_BS);
    return 0;
}

/* trial_dirty -- none's dirty. */
static int trial_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    return ubj_mode_none.dirty(h, b, kind);
}

/* trial_forget -- the block was freed: its records go (what waited for it
 * may go), then none's forget. */
static int trial_forget(struct ubj_handle *h, uint64_t blkno)
{
    struct trial_state *s = trial_of(h->t);
    if (s != NULL) {
        pthread_mutex_lock(&s->lock);
        for (uint32_t k = s->ndep; k-- > 0;)
            if (s->dep[k].blkno == blkno)
                trial_dep_drop(s, k);
        for (uint32_t i = 0; i < s->nprov; i++)
            if (s->prov[i].blkno == blkno)
                trial_moot(s, i);
        pthread_mutex_unlock(&s->lock);
    }
    return ubj_mode_none.forget(h, blkno);
}

/* trial_stop -- none's stop. */
static int trial_stop(struct ubj_handle *h)
{
    return ubj_mode_none.stop(h);
}

/* trial_tick -- none's tick (deferrals honoured). */
static int trial_tick(struct ubj_txn *t, unsigned flags)
{
    return ubj_mode_none.tick(t, flags);
}

/* trial_event -- with the hooks, into the records; then the handle's copy
 * of the block takes the change, so that the next update's undo value is
 * the bytes just before it. */
static int trial_event(struct ubj_handle *h, const struct ubj_event *ev)
{
    struct trial_state *s = trial_of(h->t);
    if (s == NULL)
        return 0;
    pthread_mutex_lock(&s->lock);
    int rc = trial_event_locked(s, ev);
    pthread_mutex_unlock(&s->lock);
    struct ubj_buf *b;
    for (uint32_t k = 0; k < s->ncopy; k++)
        if (s->copy[k].blkno == ev->blkno && ev->off + ev->len <= TRIAL_BS &&
            ubj_cache_lookup(h->t->cache, ev->blkno, &b) == 0) {
            memcpy(s->copy[k].data + ev->off, b->data + ev->off, ev->len);
            ubj_cache_put(h->t->cache, b);
        }
    return rc;
}

const struct ubj_mode_ops ubj_mode_trial = {
    .version = UBJ_MODE_OPS_VERSION,
    .name = "trial",
    .mount = trial_mount,
    .unmount = trial_unmount,
    .start = trial_start,
    .write_access = trial_write_access,
    .dirty = trial_dirty,
    .forget = trial_forget,
    .stop = trial_stop,
    .commit = trial_commit,
    .tick = trial_tick,
    .prepare = trial_prepare,
    .release = trial_release,
    .event = trial_event,
};
#else
typedef int trial_unused;   /* ISO C: a translation unit is not empty */
#endif
