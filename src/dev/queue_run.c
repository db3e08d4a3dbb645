/*
 * queue_run.c -- running the request queue (include/ubjfs/queue.h):
 * dispatching a ready entry to the lower device, and the two ways the
 * queue moves forward.  src/dev/queue.c decides what is ready and
 * completes what the device finished; queue_sched.c picks.
 *
 * Virtual clock: a discrete-event simulation with two kinds of event --
 *  - a completion: the entry at the device with the earliest modeled
 *    completion (ties: dispatched first) retires at that time;
 *  - a decision: when a device slot is free and some entry is ready, at
 *    d = the latest of (the earliest time an entry was ready: arrival and
 *    dependencies; the last decision; the time the slot became free), the
 *    scheduler picks among the entries ready by d; the lower device (a
 *    model: it completes at once with its modeled time) serves it.
 *  A completion at the same time as a decision goes first (what it
 *  releases may be picked).  Nothing runs by itself: q_sim_step processes
 *  one event, and the queue calls it for every event before a new
 *  arrival (queue_submit), until an awaited request is done (queue_wait),
 *  or to the end (queue_drain).  Decisions thus come in time order and
 *  never before every request that could take part in them has arrived
 *  -- but for a caller that does not let time pass while it waits
 *  (ubj_bdev_wait_data: background I/O): its wait decides ahead of the
 *  clock, and what it submits
 *  next arrives "late" and takes part in the next decision only.
 *  With fcfs and untagged, non-conflicting requests a model is given the
 *  same requests at the same times as without the queue: d is the
 *  arrival or the end of the previous request, which is where the model
 *  would have started it anyway (its statistics count from the arrival).
 *
 * Real clock (or no model): the dispatcher thread (q_thread_main) picks
 * and dispatches while a slot is free, doing the lower I/O without the
 * lock; a modeled completion is retired when the clock reaches it (the
 * thread naps on a monotonic condition variable, spinning the last
 * Q_SPIN_NS); an untimed one at once.  An idle queue over an untimed
 * device dispatches in the submitter's thread (q_run_inline).
 *
 * Invariants: the lock is held except around the real clock's lower I/O;
 * an entry in BUSY has its slot (slots > 0) and, once its I/O is done,
 * its completion time in t_complete.
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>
#include "dev/dev_int.h"
#include "dev/queue_int.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define Q_SPIN_NS 100000ull     /* real clock: nap until this close, then spin */

/* q_tier -- e's criticality tier at time t (0 most critical); all 0 with
 * tiers off. */
static int q_tier(const struct queue *q, const struct qent *e, uint64_t t)
{
    if (!q->crit_on || e->crit == UBJ_CRIT_CRITICAL)
        return 0;
    if (e->crit == UBJ_CRIT_LIMITED)
        return e->deadline <= t ? 0 : 1;
    return 2;
}

/* q_ready_at -- the earliest time e could be dispatched. */
static inline uint64_t q_ready_at(const struct qent *e)
{
    return e->t_arrive > e->t_ready ? e->t_arrive : e->t_ready;
}

/* q_dispatch_flags -- the FUA flag e goes down with (a barrier write to a
 * volatile cache gets one). */
static uint32_t q_dispatch_fua(const struct queue *q, const struct qent *e)
{
    const struct ubj_req *r = e->r;
    if (r == NULL || r->op != UBJ_REQ_WRITE)
        return 0;
    if ((r->flags & UBJ_REQ_FUA) ||
        (r->order == UBJ_ORDER_BARRIER && q->volatile_cache))
        return UBJ_REQ_FUA;
    return 0;
}

/* q_pick -- the scheduler's choice among the most critical entries ready
 * by t. */
struct qent *q_pick(struct queue *q, uint64_t t)
{
    size_t n = 0;
    int best = 3;
    for (struct qent *e = q->ready; e != NULL; e = e->rnext) {
        if (q->virt && q_ready_at(e) > t)
            continue;
        int tier = q_tier(q, e, t);
        if (tier > best)
            continue;
        if (tier < best) {
            best = tier;
            n = 0;
        }
        const struct ubj_req *r = e->r;
        q->cand_e[n] = e;
        q->cand[n] = (struct qs_cand){
            .seq = e->seq, .op = r != NULL ? r->op : UBJ_REQ_FLUSH,
            .blkno = r != NULL ? r->blkno : 0, .count = r != NULL ? r->count : 0,
            .flags = q_dispatch_fua(q, e),
        };
        n++;
    }
    if (n == 0)
        return NULL;
    struct qs_ctx c = { .sched = q->conf.sched, .head = q->head,
                        .model = q->model, .t = t };
    return q->cand_e[qs_pick(&c, q->cand, n)];
}

/* q_take_slot -- the free slot that has been free longest. */
static uint32_t q_take_slot(struct queue *q)
{
    uint32_t best = 0;
    bool found = false;
    for (uint32_t i = 0; i < q->slots; i++)
        if (!q->slot_used[i] && (!found || q->slot_free[i] < q->slot_free[best])) {
            best = i;
            found = true;
        }
    q->slot_used[best] = true;
    return best;
}

/* q_dispatch -- READY e goes to the device at t: BUSY, with its child. */
void q_dispatch(struct queue *q, struct qent *e, uint64_t t)
{
    q_ready_del(q, e);
    e->state = QE_BUSY;
    e->t_dispatch = t;
    e->dseq = ++q->dseq;
    e->io_done = false;
    q->busy++;
    if (q->slots > 0)
        e->slot = q_take_slot(q);
    struct ubj_req *c = &e->child, *r = e->r;
    if (r != NULL) {
        ubj_req_init(c, (enum ubj_req_op)r->op, r->blkno, r->count, r->buf);
        c->flags = r->flags;
        c->pid = r->pid;
        if (r->op != UBJ_REQ_FLUSH)
            q->head = r->blkno + r->count;
    } else {
        ubj_req_init(c, UBJ_REQ_FLUSH, 0, 0, NULL);
        c->flags = e->crit == UBJ_CRIT_CRITICAL ? UBJ_REQ_SYNC : 0;
    }
    e->cflags = 0;
    if (q_dispatch_fua(q, e) && !(c->flags & UBJ_REQ_FUA)) {
        e->cflags = DEVF_FUA;
        q->st.added_fua++;
    }
    if (c->op == UBJ_REQ_FLUSH)
        e->covers = q->wdone;
    c->crit = e->crit;
    c->deadline_ns = e->deadline;
    c->t_arrive = e->t_arrive;
    c->t_dispatch = t;
    q->st.dispatched++;
}

/* q_lower_io -- e's child through the lower device, waited for there;
 * e->t_complete = its modeled completion, or 0 if it had none. */
void q_lower_io(struct queue *q, struct qent *e, uint64_t t_now)
{
    struct ubj_bdev *lower = q->base.lower;
    int rc = dev_submit_queued(lower, &e->child, e->cflags);
    if (rc == 0)
        rc = dev_req_wait(lower, &e->child, false);
    e->lrc = rc;
    e->t_complete = (e->child.dev_flags_ & DEVF_TIMED) ? e->child.t_complete : t_now;
}

/* ---- the virtual clock --------------------------------------------------- */

/* q_sim_next -- the next event: 1 a decision at *t, 2 the completion of
 * *e at *t, 0 none. */
static int q_sim_next(struct queue *q, struct qent **e, uint64_t *t)
{
    struct qent *c = NULL;
    for (struct qent *x = q->held_head; x != NULL; x = x->next)
        if (x->state == QE_BUSY && (c == NULL || x->t_complete < c->t_complete ||
                                    (x->t_complete == c->t_complete &&
                                     x->dseq < c->dseq)))
            c = x;
    if (q->ready != NULL && (q->slots == 0 || q->busy < q->slots)) {
        uint64_t d = UINT64_MAX, f = 0;
        for (struct qent *x = q->ready; x != NULL; x = x->rnext)
            d = q_ready_at(x) < d ? q_ready_at(x) : d;
        for (uint32_t i = 0, first = 1; i < q->slots; i++)
            if (!q->slot_used[i] && (first || q->slot_free[i] < f)) {
                f = q->slot_free[i];
                first = 0;
            }
        d = d > q->last_disp ? d : q->last_disp;
        d = d > f ? d : f;
        if (c == NULL || d < c->t_complete) {
            *t = d;
            return 1;
        }
    }
    if (c == NULL)
        return 0;
    *e = c;
    *t = c->t_complete;
    return 2;
}

/* q_sim_step -- process the next event if it comes before limit. */
bool q_sim_step(struct queue *q, uint64_t limit)
{
    struct qent *e = NULL;
    uint64_t t = 0;
    int k = q_sim_next(q, &e, &t);
    if (k == 0 || t >= limit)
        return false;
    if (k == 2) {
        q_retire(q, e, e->lrc, t, true);
        return true;
    }
    e = q_pick(q, t);
    q_dispatch(q, e, t);
    q->last_disp = t;
    q_lower_io(q, e, t);
    return true;
}

/* ---- the real clock ------------------------------------------------------ */

/* q_run_inline -- dispatch e in the caller's thread if the queue holds
 * nothing else, the device is untimed and a slot is free. */
bool q_run_inline(struct queue *q, struct qent *e)
{
    if (q->conf.dispatch != UBJ_QUEUE_INLINE || q->timed || q->held_head != e ||
        e->next != NULL || (q->slots > 0 && q->busy >= q->slots))
        return false;
    q_dispatch(q, e, e->t_arrive);      /* at once: no second clock read */
    q->st.inline_dispatches++;
    pthread_mutex_unlock(&q->lock);
    q_lower_io(q, e, 0);
    pthread_mutex_lock(&q->lock);
    q_retire(q, e, e->lrc, q_now(q), true);
    return true;
}

/* q_retire_due -- retire the entries whose modeled completion has come;
 * *next = the earliest one still to come (UINT64_MAX: none).  True if
 * it retired any. */
static bool q_retire_due(struct queue *q, uint64_t *next)
{
    bool did = false;
    uint64_t now = q_now(q);
    *next = UINT64_MAX;
    for (struct qent *x = q->held_head, *n; x != NULL; x = n) {
        n = x->next;
        if (x->state != QE_BUSY || !x->io_done)
            continue;
        if (x->t_complete <= now) {
            q_retire(q, x, x->lrc, x->t_complete, true);
            did = true;
            n = q->held_head;       /* the list changed: start again */
        } else if (x->t_complete < *next) {
            *next = x->t_complete;
        }
    }
    return did;
}

/* q_thread_dispatch -- dispatch what a free slot allows; true if any. */
static bool q_thread_dispatch(struct queue *q)
{
    bool did = false;
    struct qent *e;
    while ((q->slots == 0 || q->busy < q->slots) &&
           (e = q_pick(q, q_now(q))) != NULL) {
        q_dispatch(q, e, q_now(q));
        q->st.thread_dispatches++;
        pthread_mutex_unlock(&q->lock);
        q_lower_io(q, e, 0);
        pthread_mutex_lock(&q->lock);
        if (e->child.dev_flags_ & DEVF_TIMED)
            e->io_done = true;          /* retired when the clock says */
        else
            q_retire(q, e, e->lrc, q_now(q), true);
        did = true;
    }
    return did;
}

/* q_thread_nap -- wait for work, or until the clock reaches `next`. */
static void q_thread_nap(struct queue *q, uint64_t next)
{
    if (next == UINT64_MAX) {
        pthread_cond_wait(&q->work_cv, &q->lock);
        return;
    }
    uint64_t now = q_now(q);
    if (next <= now)
        return;
    if (next - now <= Q_SPIN_NS) {
        pthread_mutex_unlock(&q->lock);
        ubj_clock_wait_until(q->clock, next);
        pthread_mutex_lock(&q->lock);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (next - now - Q_SPIN_NS);
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    (void)pthread_cond_timedwait(&q->work_cv, &q->lock, &ts);
}

/* q_thread_main -- the dispatcher: retire what is due, dispatch what may
 * go, complete, nap; until stopped with nothing held. */
static void *q_thread_main(void *arg)
{
    struct queue *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        uint64_t next;
        bool did = q_retire_due(q, &next);
        did |= q_thread_dispatch(q);
        if (q->npending > 0) {
            q_complete_pending(q);
            did = true;
        }
        if (did)
            continue;
        if (q->stopping && q->held_head == NULL)
            break;
        q_thread_nap(q, next);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* q_thread_start -- start the dispatcher. */
int q_thread_start(struct queue *q)
{
    q->has_thread = true;
    int e = pthread_create(&q->thread, NULL, q_thread_main, q);
    if (e != 0) {
        q->has_thread = false;
        return ubj_set_error(-EAGAIN, "queue: cannot start the dispatcher "
                             "thread");
    }
    return 0;
}

/* q_thread_stop -- stop the dispatcher once nothing is held. */
void q_thread_stop(struct queue *q)
{
    if (!q->has_thread)
        return;
    pthread_mutex_lock(&q->lock);
    q->stopping = true;
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    q->has_thread = false;
}
