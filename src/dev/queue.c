/*
 * queue.c -- the request queue device (include/ubjfs/queue.h): it holds
 * the requests submitted to it, works out what each must wait for, and
 * completes them; src/dev/queue_run.c dispatches them (virtual-clock
 * simulation or dispatcher thread), src/dev/queue_sched.c picks which.
 * The entries' state machine is drawn in src/dev/queue_int.h.
 *
 * What a request waits for (edges, from the entry it waits for):
 *  - a barrier: every request held when it was submitted (order edges)
 *    and, for a write, every write completed before not yet durable
 *    (dur_need = last_dirty);
 *    every later request: the latest barrier still held (order edge);
 *  - UBJ_ORDER_AFTER: each listed request still held (order edges); one
 *    already complete adds its durability need (qwseq_) or, if it failed,
 *    fails this one;
 *  - conflicts: every held request sharing a block, one of the two a
 *    write (conflict edges: completion only) -- so conflicting requests
 *    complete in submission order.  A read the latest queued write to
 *    its blocks covers whole is served from that write (q_forward).
 * Durability: writes are numbered as they complete (wdone); a flush
 * covers the writes completed before its dispatch (covers), and
 * `durable` is the largest cover completed.  A write that follows (order
 * edge) a write completed without FUA on a volatile cache needs that
 * number durable: it waits in FLUSHWAIT while the queue's own flush (one
 * reserved entry) runs.
 *
 * Invariants [lock]:
 *  1. held list = every entry not FREE, in submission order (the own
 *     flush where it was added); nheld = the user entries among them <= depth.
 *  2. An entry is READY iff it is on the ready list; its ndeps is 0 and,
 *     if a write, dur_need <= durable.
 *  3. An entry in FLUSHWAIT has ndeps 0 and dur_need > durable, and the
 *     own flush is READY or BUSY (or will be re-armed: flush_again).
 *  4. busy = entries in BUSY.
 *  5. A request's qent_ points to its entry exactly while it is held;
 *     retired requests wait on `pending` for their completion, outside
 *     the lock.
 *  6. durable <= wdone; a write's number is > durable until a flush
 *     dispatched after its completion completes.
 * q_check() asserts them in debug builds.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dev/dev_int.h"
#include "dev/queue_int.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define Q_EDGE_CHUNK 256u
#define Q_COMPLETE_BATCH 64u

static const struct ubj_bdev_ops queue_ops;

/* q_of -- the queue embedding d, or NULL if d is not one. */
static inline struct queue *q_of(const struct ubj_bdev *d)
{
    return d != NULL && d->ops == &queue_ops ? (struct queue *)d : NULL;
}

/* q_now -- the queue's clock. */
uint64_t q_now(struct queue *q)
{
    return ubj_clock_now(q->clock);
}

#ifndef NDEBUG
/* q_check -- invariants 1-4 and 6 (debug builds). */
static int q_check(const struct queue *q)
{
    uint32_t n = 0, b = 0;
    for (const struct qent *e = q->held_head; e != NULL; e = e->next) {
        if (e->state == QE_FREE || (e->next == NULL) != (e == q->held_tail))
            return 0;
        n += e->r != NULL;
        b += e->state == QE_BUSY;
    }
    for (const struct qent *e = q->ready; e != NULL; e = e->rnext)
        if (e->state != QE_READY || e->ndeps != 0)
            return 0;
    return n == q->nheld && b == q->busy && q->nheld <= q->conf.depth &&
           q->durable <= q->wdone;
}
#endif

/* ---- lists and edges ------------------------------------------------------- */

/* q_held_add -- append e to the held list. */
static void q_held_add(struct queue *q, struct qent *e)
{
    e->next = NULL;
    e->prev = q->held_tail;
    if (q->held_tail != NULL)
        q->held_tail->next = e;
    else
        q->held_head = e;
    q->held_tail = e;
}

/* q_held_del -- unlink e from the held list. */
static void q_held_del(struct queue *q, struct qent *e)
{
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        q->held_head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        q->held_tail = e->prev;
    e->prev = e->next = NULL;
}

/* q_ready_add -- e becomes READY at time t (not before its arrival). */
static void q_ready_add(struct queue *q, struct qent *e)
{
    e->state = QE_READY;
    e->rprev = NULL;
    e->rnext = q->ready;
    if (q->ready != NULL)
        q->ready->rprev = e;
    q->ready = e;
}

/* q_kick -- wake the dispatcher if something is ready for it (after the
 * submitter had its chance to dispatch inline: a wake costs a futex call
 * and a context switch, which an idle queue's caller-dispatched request
 * must not pay). */
static void q_kick(struct queue *q)
{
    if (q->has_thread && q->ready != NULL)
        pthread_cond_signal(&q->work_cv);
}

/* q_ready_del -- take e off the ready list (to dispatch it). */
void q_ready_del(struct queue *q, struct qent *e)
{
    if (e->rprev != NULL)
        e->rprev->rnext = e->rnext;
    else
        q->ready = e->rnext;
    if (e->rnext != NULL)
        e->rnext->rprev = e->rprev;
    e->rprev = e->rnext = NULL;
}

/* q_edge -- make `to` wait for `from`.  0 or -ENOMEM. */
static int q_edge(struct queue *q, struct qent *from, struct qent *to, bool order)
{
    if (q->edge_free == NULL) {
        void **c = realloc(q->edge_chunks, (q->nchunks + 1) * sizeof *c);
        struct qedge *x = malloc(Q_EDGE_CHUNK * sizeof *x);
        if (c != NULL)
            q->edge_chunks = c;
        if (c == NULL || x == NULL) {
            free(x);
            return -ENOMEM;
        }
        q->edge_chunks[q->nchunks++] = x;
        for (uint32_t i = 0; i < Q_EDGE_CHUNK; i++) {
            x[i].next = q->edge_free;
            q->edge_free = &x[i];
        }
    }
    struct qedge *g = q->edge_free;
    q->edge_free = g->next;
    g->to = to;
    g->order = order;
    g->next = from->waiters;
    from->waiters = g;
    to->ndeps++;
    return 0;
}

/* ---- durability -------------------------------------------------------------- */

/* q_ent_init -- entry e (FREE) for request r (NULL: the own flush) in
 * WAIT: everything but the child (made at dispatch) and the list links
 * (set when it joins a list). */
static void q_ent_init(struct qent *e, struct ubj_req *r, uint64_t seq,
                       uint32_t crit, uint64_t deadline, uint64_t t)
{
    e->r = r;
    e->seq = seq;
    e->state = QE_WAIT;
    e->crit = crit;
    e->deadline = deadline;
    e->ndeps = 0;
    e->dep_failed = false;
    e->fail_rc = 0;
    e->io_done = false;
    e->dur_need = e->covers = 0;
    e->t_arrive = t;
    e->t_ready = e->t_dispatch = e->t_complete = 0;
    e->lrc = 0;
    e->waiters = NULL;
}

/* q_need_flush -- FLUSHWAIT e needs writes 1..e->dur_need durable: arm
 * the own flush (it takes e's place in FCFS order and e's class), or
 * note that the one in flight covers too little. */
static void q_need_flush(struct queue *q, struct qent *e, uint64_t t)
{
    struct qent *f = q->own;
    if (f->state == QE_FREE) {
        q_ent_init(f, NULL, e->seq, e->crit, e->deadline, t);
        q_held_add(q, f);
        q_ready_add(q, f);
        q->st.added_flushes++;
    } else if (f->state == QE_READY) {
        f->seq = e->seq < f->seq ? e->seq : f->seq;
        f->crit = e->crit > f->crit ? e->crit : f->crit;
    } else if (f->covers < e->dur_need) {
        q->flush_again = true;
    }
}

/* q_release -- e waits for nothing any more (time t): READY, FLUSHWAIT,
 * or -- ordered after a failure -- failed. */
static void q_release(struct queue *q, struct qent *e, uint64_t t)
{
    if (e->fail_rc < 0 || e->dep_failed) {
        int rc = e->fail_rc < 0 ? e->fail_rc
                                : ubj_set_error(-EIO, "queue: ordered after a "
                                                "request that failed");
        q->st.failed_order += e->fail_rc == 0;
        q_retire(q, e, rc, t, false);
        return;
    }
    if (e->r != NULL && e->r->op == UBJ_REQ_WRITE && e->dur_need > q->durable) {
        e->state = QE_FLUSHWAIT;
        e->link = q->flushwait;
        q->flushwait = e;
        q_need_flush(q, e, t);
        return;
    }
    q_ready_add(q, e);
}

/* q_recheck_flush -- after a flush completed (rc: its result) at t: the
 * entries it made durable become READY; if it failed, they fail. */
static void q_recheck_flush(struct queue *q, int rc, uint64_t t)
{
    struct qent *list = q->flushwait;
    q->flushwait = NULL;
    while (list != NULL) {
        struct qent *e = list;
        list = e->link;
        if (rc < 0) {
            q_retire(q, e, rc, t, false);
        } else if (e->dur_need <= q->durable) {
            e->t_ready = e->t_ready > t ? e->t_ready : t;
            q_ready_add(q, e);
        } else {
            e->link = q->flushwait;
            q->flushwait = e;
            q_need_flush(q, e, t);
        }
    }
}

/* ---- completion ------------------------------------------------------------ */

/* q_class_account -- one completed request of class c in the statistics. */
static void q_class_account(struct queue *q, uint32_t c, uint64_t arr,
                            uint64_t disp, uint64_t done, uint64_t deadline)
{
    struct ubj_queue_class_stats *s = &q->st.cls[c];
    uint64_t rsp = done - arr;
    s->completed++;
    s->queue_ns += disp - arr;
    s->service_ns += done - disp;
    s->response_ns += rsp;
    s->response_max_ns = rsp > s->response_max_ns ? rsp : s->response_max_ns;
    if (c == UBJ_CRIT_LIMITED && done > deadline)
        s->late++;
    q->st.completed++;
}

/* q_pending_push -- r is retired: complete it once the lock is dropped. */
static void q_pending_push(struct queue *q, struct ubj_req *r)
{
    uint32_t cap = q->conf.depth;
    q->pending[(q->pending_head + q->npending) % cap] = r;
    q->npending++;
}

/* q_finish_user -- fill in user entry e's request and free the entry. */
static void q_finish_user(struct queue *q, struct qent *e, int rc, uint64_t wnum)
{
    struct ubj_req *r = e->r;
    r->result = rc;
    r->t_arrive = e->t_arrive;
    r->t_dispatch = e->t_dispatch;
    r->t_complete = e->t_complete;
    r->clock = q->clock;
    r->dev_flags_ = q->virt ? DEVF_TIMED : 0;
    r->qwseq_ = wnum;
    r->qent_ = NULL;
    q_class_account(q, e->crit, e->t_arrive, e->t_dispatch, e->t_complete,
                    e->deadline);
    q_pending_push(q, r);
    e->r = NULL;
    e->state = QE_FREE;
    e->link = q->free_list;
    q->free_list = e;
    q->nheld--;
    pthread_cond_broadcast(&q->room_cv);
}

/* q_retire_one -- e completed with rc at t; release its waiters, free it. */
static void q_retire_one(struct queue *q, struct qent *e, int rc, uint64_t t,
                         bool dispatched)
{
    uint32_t op = e->r != NULL ? e->r->op : UBJ_REQ_FLUSH;
    uint64_t wnum = 0;
    if (dispatched) {
        q->busy--;
        if (q->slots > 0) {
            q->slot_used[e->slot] = false;
            q->slot_free[e->slot] = t;
        }
        q->last_retire = t;
    } else {
        e->t_dispatch = t;
    }
    e->t_complete = t;
    if (rc == 0 && op == UBJ_REQ_WRITE) {
        q->wdone++;
        if (q->volatile_cache && !(dispatched && dev_req_fua(&e->child)))
            wnum = q->last_dirty = q->wdone;  /* not durable: a flush must follow */
    }
    if (rc == 0 && op == UBJ_REQ_FLUSH && dispatched && e->covers > q->durable)
        q->durable = e->covers;
    q_held_del(q, e);
    if (q->barrier == e)
        q->barrier = NULL;
    for (struct qedge *g = e->waiters, *n; g != NULL; g = n) {
        struct qent *x = g->to;
        n = g->next;
        x->t_ready = x->t_ready > t ? x->t_ready : t;
        if (g->order && rc < 0)
            x->dep_failed = true;
        else if (g->order && wnum > x->dur_need && x->r->op == UBJ_REQ_WRITE)
            x->dur_need = wnum;
        g->next = q->edge_free;
        q->edge_free = g;
        if (--x->ndeps == 0)
            q_release(q, x, t);
    }
    e->waiters = NULL;
    if (e == q->own) {
        e->state = QE_FREE;
        pthread_cond_broadcast(&q->room_cv);  /* drain may be waiting */
        bool again = q->flush_again;
        q->flush_again = false;
        if (rc < 0 || again || dispatched)
            q_recheck_flush(q, rc, t);
        return;
    }
    q_finish_user(q, e, rc, wnum);
    if (op == UBJ_REQ_FLUSH && rc == 0)
        q_recheck_flush(q, 0, t);
}

/* q_retire -- q_retire_one, then wake the dispatcher for what it freed
 * (a slot) or released. */
void q_retire(struct queue *q, struct qent *e, int rc, uint64_t t, bool dispatched)
{
    q_retire_one(q, e, rc, t, dispatched);
    q_kick(q);
}

/* q_complete_pending -- run the completions of retired requests, in
 * retirement order, with the lock dropped. */
void q_complete_pending(struct queue *q)
{
    while (q->npending > 0) {
        struct ubj_req *batch[Q_COMPLETE_BATCH];
        uint32_t n = q->npending < Q_COMPLETE_BATCH ? q->npending : Q_COMPLETE_BATCH;
        for (uint32_t i = 0; i < n; i++) {
            batch[i] = q->pending[q->pending_head];
            q->pending_head = (q->pending_head + 1) % q->conf.depth;
        }
        q->npending -= n;
        q->completing += n;
        pthread_mutex_unlock(&q->lock);
        for (uint32_t i = 0; i < n; i++)
            ubj_req_complete(batch[i], batch[i]->result);
        pthread_mutex_lock(&q->lock);
        q->completing -= n;
        if (q->completing == 0)
            pthread_cond_broadcast(&q->room_cv);
    }
}

/* ---- submission -------------------------------------------------------------- */

/* q_overlap -- do [a, a + an) and [b, b + bn) share a block? */
static inline bool q_overlap(uint64_t a, uint32_t an, uint64_t b, uint32_t bn)
{
    return a < b + bn && b < a + an;
}

/* q_forward -- if untagged read r is covered whole by the latest held
 * write to its blocks, copy that write's data into it and return true. */
static bool q_forward(struct queue *q, struct ubj_req *r)
{
    for (struct qent *x = q->held_tail; x != NULL; x = x->prev) {
        const struct ubj_req *w = x->r;
        if (w == NULL || w->op != UBJ_REQ_WRITE ||
            !q_overlap(w->blkno, w->count, r->blkno, r->count))
            continue;
        if (w->blkno > r->blkno || w->blkno + w->count < r->blkno + r->count)
            return false;
        size_t bs = q->base.block_size;
        memcpy(r->buf, (const char *)w->buf + (size_t)(r->blkno - w->blkno) * bs,
               (size_t)r->count * bs);
        return true;
    }
    return false;
}

/* q_held_entry -- the held entry of request a (submitted here), or NULL
 * if a has completed. */
static struct qent *q_held_entry(struct queue *q, const struct ubj_req *a)
{
    struct qent *x = a->qent_;
    if (x == NULL || x < q->ents || x >= q->ents + q->conf.depth)
        return NULL;
    return x->r == a && x->seq == a->qseq_ && x->state != QE_FREE ? x : NULL;
}

/* q_after -- the edges of UBJ_ORDER_AFTER entry e.  0, -EINVAL (a listed
 * request is not an earlier one of this queue) or -ENOMEM. */
static int q_after(struct queue *q, struct qent *e)
{
    const struct ubj_req *r = e->r;
    for (uint32_t i = 0; i < r->nafter; i++) {
        const struct ubj_req *a = r->after[i];
        if (a == NULL || a->qowner_ != q || a->qseq_ == 0 || a->qseq_ >= e->seq)
            return ubj_set_error(-EINVAL, "queue: after[%u] is not an earlier "
                                 "request of this queue", i);
        struct qent *x = q_held_entry(q, a);
        int rc = x != NULL ? q_edge(q, x, e, true) : 0;
        if (rc < 0)
            return rc;
        if (x == NULL && a->result < 0)
            e->dep_failed = true;
        else if (x == NULL && r->op == UBJ_REQ_WRITE && a->qwseq_ > e->dur_need)
            e->dur_need = a->qwseq_;
    }
    return 0;
}

/* q_deps -- every edge new entry e needs (see the top comment). */
static int q_deps(struct queue *q, struct qent *e)
{
    const struct ubj_req *r = e->r;
    int rc = 0;
    if (r->order == UBJ_ORDER_BARRIER) {
        for (struct qent *x = q->held_head; x != NULL && rc == 0; x = x->next)
            if (x != e && x->r != NULL)
                rc = q_edge(q, x, e, true);
        if (r->op == UBJ_REQ_WRITE)     /* and what completed before it */
            e->dur_need = q->last_dirty;
        q->barrier = e;
        return rc;
    }
    if (q->barrier != NULL)
        rc = q_edge(q, q->barrier, e, true);
    if (rc == 0 && r->order == UBJ_ORDER_AFTER)
        rc = q_after(q, e);
    if (r->op == UBJ_REQ_FLUSH)
        return rc;
    for (struct qent *x = q->held_head; x != NULL && rc == 0; x = x->next) {
        const struct ubj_req *o = x->r;
        if (x != e && o != NULL && o->op != UBJ_REQ_FLUSH &&
            (o->op == UBJ_REQ_WRITE || r->op == UBJ_REQ_WRITE) &&
            q_overlap(o->blkno, o->count, r->blkno, r->count))
            rc = q_edge(q, x, e, false);
    }
    return rc;
}

/* q_room -- wait until fewer than depth user requests are held: the
 * simulation runs to a completion (the caller's clock moves to it), or
 * the caller sleeps until the dispatcher frees one. */
static void q_room(struct queue *q)
{
    if (q->nheld < q->conf.depth)
        return;
    q->st.full_waits++;
    while (q->nheld >= q->conf.depth) {
        if (!q->virt) {
            pthread_cond_wait(&q->room_cv, &q->lock);
            continue;
        }
        if (!q_sim_step(q, UINT64_MAX))
            break;
        q_complete_pending(q);
    }
    if (q->virt)
        ubj_clock_wait_until(q->clock, q->last_retire);
}

/* q_account_forward -- a read served from a queued write, at time t. */
static void q_account_forward(struct queue *q, struct ubj_req *r, uint64_t t)
{
    r->t_arrive = r->t_dispatch = r->t_complete = t;
    r->clock = q->clock;
    r->dev_flags_ = 0;
    r->qwseq_ = 0;
    r->qent_ = NULL;
    r->result = 0;
    q->st.forwarded++;
    q_class_account(q, r->crit, t, t, t, r->deadline_ns);
}

/* q_accept -- take an entry for r arriving now and work out its edges;
 * NULL if r completed already (forwarded, or failed: *rc). */
static struct qent *q_accept(struct queue *q, struct ubj_req *r, int *rc)
{
    uint64_t now = q_now(q);
    r->qowner_ = q;
    r->qseq_ = ++q->seq;
    q->st.submitted++;
    if (r->op == UBJ_REQ_READ && r->order == UBJ_ORDER_NONE && q_forward(q, r)) {
        q_account_forward(q, r, now);
        *rc = 0;
        return NULL;
    }
    struct qent *e = q->free_list;
    q->free_list = e->link;
    q_ent_init(e, r, r->qseq_, r->crit, r->deadline_ns, now);
    r->qent_ = e;
    q->nheld++;
    if (q->nheld > q->st.max_held)
        q->st.max_held = q->nheld;
    *rc = q_deps(q, e);
    q_held_add(q, e);
    return e;
}

/* queue_submit -- hold r, then (real clock) dispatch it or wake the
 * dispatcher; the virtual clock decides later (queue_run.c). */
static void queue_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    struct queue *q = q_of(d);
    pthread_mutex_lock(&q->lock);
    if (q->virt) {      /* decisions before this arrival are final now */
        uint64_t now = q_now(q);
        while (q_sim_step(q, now))
            ;
    }
    q_complete_pending(q);
    q_room(q);
    int rc;
    struct qent *e = q_accept(q, r, &rc);
    if (e == NULL) {
        q_complete_pending(q);
        pthread_mutex_unlock(&q->lock);
        ubj_req_complete(r, rc);
        return;
    }
    if (rc < 0)
        e->fail_rc = rc;            /* cannot be ordered: fail it */
    if (e->ndeps == 0)
        q_release(q, e, e->t_arrive);
    if (!q->virt && e->state == QE_READY)
        (void)q_run_inline(q, e);
    q_kick(q);
    assert(q_check(q));
    q_complete_pending(q);
    pthread_mutex_unlock(&q->lock);
}

/* ---- wait, raise, drain -------------------------------------------------------- */

/* queue_wait -- until r completes: on the virtual clock, run the
 * simulation until it is retired; then sleep for its completion. */
static int queue_wait(struct ubj_bdev *d, struct ubj_req *r)
{
    struct queue *q = q_of(d);
    if (q->virt) {
        pthread_mutex_lock(&q->lock);
        while (q_held_entry(q, r) != NULL && q_sim_step(q, UINT64_MAX))
            ;
        assert(q_held_entry(q, r) == NULL);
        q_complete_pending(q);
        pthread_mutex_unlock(&q->lock);
    }
    return dev_req_sleep(r);
}

/* queue_raise -- raise r while it waits here. */
static int queue_raise(struct ubj_bdev *d, struct ubj_req *r, uint32_t crit,
                       uint64_t deadline_ns)
{
    struct queue *q = q_of(d);
    pthread_mutex_lock(&q->lock);
    struct qent *e = q_held_entry(q, r);
    if (e != NULL && e->state != QE_BUSY && crit >= e->crit) {
        if (crit > e->crit)
            q->st.cls[crit].raised++;
        if (crit == UBJ_CRIT_LIMITED &&
            (e->crit != UBJ_CRIT_LIMITED || deadline_ns < e->deadline))
            e->deadline = deadline_ns;
        e->crit = crit;
        __atomic_store_n(&r->crit, crit, __ATOMIC_RELAXED);
        r->deadline_ns = e->deadline;
    }
    pthread_mutex_unlock(&q->lock);
    return 0;
}

/* queue_drain -- complete everything held (callbacks included). */
static int queue_drain(struct ubj_bdev *d)
{
    struct queue *q = q_of(d);
    pthread_mutex_lock(&q->lock);
    if (q->virt)
        while (q_sim_step(q, UINT64_MAX))
            q_complete_pending(q);
    q_complete_pending(q);
    while (q->held_head != NULL || q->npending > 0 || q->completing > 0)
        pthread_cond_wait(&q->room_cv, &q->lock);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

/* ---- the device -------------------------------------------------------------- */

/* q_free -- release q's memory (lower and the thread are gone). */
static void q_free(struct queue *q)
{
    for (size_t i = 0; i < q->nchunks; i++)
        free(q->edge_chunks[i]);
    free(q->edge_chunks);
    free(q->ents);
    free(q->cand);
    free(q->cand_e);
    free(q->pending);
    free(q->slot_free);
    free(q->slot_used);
    ubj_clock_put(q->clock);
    pthread_cond_destroy(&q->work_cv);
    pthread_cond_destroy(&q->room_cv);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* queue_destroy -- drain, stop the dispatcher, destroy lower, free. */
static void queue_destroy(struct ubj_bdev *d)
{
    struct queue *q = q_of(d);
    (void)queue_drain(d);
    q_thread_stop(q);
    ubj_bdev_destroy(d->lower);
    q_free(q);
}

static const struct ubj_bdev_ops queue_ops = {
    .version = UBJ_BDEV_OPS_V2,
    .name = "queue",
    .destroy = queue_destroy,
    .submit = queue_submit,
    .wait = queue_wait,
    .raise = queue_raise,
    .drain = queue_drain,
};

/* q_conf_fill -- check *in and fill in its defaults. */
static int q_conf_fill(const struct ubj_queue_conf *in, struct ubj_queue_conf *c)
{
    *c = in != NULL ? *in : (struct ubj_queue_conf){ .crit = -1 };
    if (c->sched > UBJ_SCHED_SPTF || c->dispatch > UBJ_QUEUE_THREAD ||
        c->depth > UBJ_QUEUE_DEPTH_MAX)
        return ubj_set_error(-EINVAL, "queue: unknown scheduler or dispatch, "
                             "or depth above %u", UBJ_QUEUE_DEPTH_MAX);
    if (c->depth == 0)
        c->depth = UBJ_QUEUE_DEPTH_DEFAULT;
    if (c->crit != 0 && c->crit != 1)
        c->crit = c->sched != UBJ_SCHED_FCFS;
    return 0;
}

/* q_alloc -- q's arrays for depth + 1 entries and its slots. */
static int q_alloc(struct queue *q)
{
    uint32_t n = q->conf.depth + 1;
    q->ents = calloc(n, sizeof *q->ents);
    q->cand = calloc(n, sizeof *q->cand);
    q->cand_e = calloc(n, sizeof *q->cand_e);
    q->pending = calloc(q->conf.depth, sizeof *q->pending);
    if (q->slots > 0) {
        q->slot_free = calloc(q->slots, sizeof *q->slot_free);
        q->slot_used = calloc(q->slots, sizeof *q->slot_used);
    }
    if (q->ents == NULL || q->cand == NULL || q->cand_e == NULL ||
        q->pending == NULL || (q->slots > 0 && (q->slot_free == NULL ||
                                                q->slot_used == NULL)))
        return -ENOMEM;
    q->own = &q->ents[q->conf.depth];
    for (uint32_t i = q->conf.depth; i-- > 0;) {
        q->ents[i].link = q->free_list;
        q->free_list = &q->ents[i];
    }
    return 0;
}

/* q_setup -- the clock, engine and slots of q over lower. */
static int q_setup(struct queue *q, struct ubj_bdev *lower)
{
    q->model = ubj_model_find(lower);
    q->timed = q->model != NULL;
    if (q->timed) {
        q->clock = ubj_clock_get(ubj_model_clock(q->model));
        q->virt = ubj_clock_kind(q->clock) == UBJ_CLOCK_VIRTUAL;
    } else {
        int rc = ubj_clock_create(UBJ_CLOCK_REAL, &q->clock);
        if (rc < 0)
            return rc;
    }
    q->slots = q->conf.slots ? q->conf.slots
                             : q->timed ? ubj_model_slots(q->model) : 1;
    q->volatile_cache = (lower->guarantees & UBJ_BDEV_VOLATILE_CACHE) != 0;
    q->crit_on = q->conf.crit == 1;
    return 0;
}

/* ubj_bdev_queue_create -- a request queue over lower. */
int ubj_bdev_queue_create(struct ubj_bdev *lower, const struct ubj_queue_conf *conf,
                          struct ubj_bdev **out)
{
    if (lower == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "queue: NULL argument");
    *out = NULL;
    struct queue *q = calloc(1, sizeof *q);
    if (q == NULL)
        return ubj_set_error(-ENOMEM, "queue: out of memory");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);  /* the dispatcher's naps */
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->room_cv, NULL);
    pthread_cond_init(&q->work_cv, &ca);
    pthread_condattr_destroy(&ca);
    int rc = q_conf_fill(conf, &q->conf);
    if (rc == 0)
        rc = q_setup(q, lower);
    if (rc == 0 && q_alloc(q) < 0)
        rc = ubj_set_error(-ENOMEM, "queue: out of memory");
    if (rc == 0 && !q->virt)
        rc = q_thread_start(q);
    if (rc < 0) {
        q_free(q);
        return rc;
    }
    dev_wrap_init(&q->base, &queue_ops, lower);
    *out = &q->base;
    return 0;
}

/* q_parse_kv -- one KEY=VALUE of a queue spec into c. */
static int q_parse_kv(const char *kv, size_t len, struct ubj_queue_conf *c)
{
    const char *eq = memchr(kv, '=', len);
    if (eq == NULL)
        return -EINVAL;
    size_t kl = (size_t)(eq - kv), vl = len - kl - 1;
    const char *v = eq + 1;
    if (kl == 8 && strncmp(kv, "dispatch", 8) == 0) {
        if (vl == 6 && strncmp(v, "inline", 6) == 0)
            c->dispatch = UBJ_QUEUE_INLINE;
        else if (vl == 6 && strncmp(v, "thread", 6) == 0)
            c->dispatch = UBJ_QUEUE_THREAD;
        else
            return -EINVAL;
        return 0;
    }
    char num[24], *end;
    if (vl == 0 || vl >= sizeof num)
        return -EINVAL;
    memcpy(num, v, vl);
    num[vl] = '\0';
    unsigned long x = strtoul(num, &end, 10);
    if (*end != '\0' || num[0] == '-' || x > UBJ_QUEUE_DEPTH_MAX)
        return -EINVAL;
    if (kl == 5 && strncmp(kv, "depth", 5) == 0 && x > 0)
        c->depth = (uint32_t)x;
    else if (kl == 4 && strncmp(kv, "crit", 4) == 0 && x <= 1)
        c->crit = (int32_t)x;
    else if (kl == 5 && strncmp(kv, "slots", 5) == 0)
        c->slots = (uint32_t)x;
    else
        return -EINVAL;
    return 0;
}

/* ubj_bdev_queue_parse -- SCHED[,key=value...] into *conf. */
int ubj_bdev_queue_parse(const char *args, struct ubj_queue_conf *conf)
{
    if (args == NULL || conf == NULL)
        return ubj_set_error(-EINVAL, "queue spec: NULL argument");
    *conf = (struct ubj_queue_conf){ .crit = -1 };
    size_t n = strcspn(args, ",");
    int s = qs_sched_parse(args, n);
    if (s < 0)
        return ubj_set_error(-EINVAL, "queue spec: scheduler \"%.*s\" is not "
                             "fcfs, clook or sptf", (int)n, args);
    conf->sched = (uint32_t)s;
    for (const char *p = args + n; *p == ',';) {
        p++;
        size_t len = strcspn(p, ",");
        if (q_parse_kv(p, len, conf) < 0)
            return ubj_set_error(-EINVAL, "queue spec: bad \"%.*s\" (depth=N, "
                                 "crit=0|1, slots=N, dispatch=inline|thread)",
                                 (int)len, p);
        p += len;
    }
    return 0;
}

/* ---- queries ------------------------------------------------------------------ */

/* ubj_queue_find -- the topmost queue at or below d. */
struct ubj_bdev *ubj_queue_find(struct ubj_bdev *d)
{
    while (d != NULL && q_of(d) == NULL)
        d = d->lower;
    return d;
}

/* ubj_queue_stats_get -- a snapshot of the counters. */
int ubj_queue_stats_get(struct ubj_bdev *d, struct ubj_queue_stats *out)
{
    struct queue *q = q_of(d);
    if (q == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "queue stats: not a queue");
    pthread_mutex_lock(&q->lock);
    *out = q->st;
    pthread_mutex_unlock(&q->lock);
    return 0;
}

/* ubj_queue_stats_reset -- zero the counters. */
int ubj_queue_stats_reset(struct ubj_bdev *d)
{
    struct queue *q = q_of(d);
    if (q == NULL)
        return ubj_set_error(-EINVAL, "queue stats: not a queue");
    pthread_mutex_lock(&q->lock);
    memset(&q->st, 0, sizeof q->st);
    pthread_mutex_unlock(&q->lock);
    return 0;
}
