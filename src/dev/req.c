/*
 * req.c -- requests (interface v2, include/ubjfs/bdev.h): their checks,
 * submission to a device, completion, waiting, forwarding through a
 * wrapper, raising and draining; and the adapter that drives a device
 * whose table is v1 (read/write/flush) with requests, which the
 * synchronous devices (ram, cow, map) use as their submit.
 *
 * A request's states (struct ubj_req.state) and who moves it:
 *
 *            ubj_bdev_submit / ubj_bdev_forward
 *   IDLE or DONE ---------------------------------> INFLIGHT
 *                                                     |  dev_req_sleep
 *                                                     v  (a waiter sleeps)
 *                        ubj_req_complete          SLEEPING (private)
 *   DONE <---------------------------------------- INFLIGHT or SLEEPING
 *
 *   from      to        performed by        when
 *   IDLE/DONE INFLIGHT  req_submit          accepted by ubj_bdev_submit
 *   INFLIGHT  SLEEPING  dev_req_sleep       a waiter blocks (done == NULL)
 *   INFLIGHT  DONE      ubj_req_complete    the device completes it
 *   SLEEPING  DONE      ubj_req_complete    ... and wakes the sleeper
 *   DONE      INFLIGHT  ubj_bdev_forward    a wrapper re-arms it after its
 *                                           lower device completed it
 *
 * Invariants:
 *  - A request is completed exactly once per submission; after the state
 *    becomes DONE ubj_req_complete touches it only to call its callback
 *    (which may free it) or, for a sleeper, the sleeper's own object
 *    (which lives until the sleeper has been woken under its mutex).
 *  - r->dev_ is the device executing r; the completion counts bytes and
 *    errors in that device's statistics, the submission counts the
 *    request.  ubj_bdev_forward moves dev_ down and back.
 *  - A device whose ops has no `wait` completes every request inside
 *    submit, or from another thread with a sleeper woken (dev_req_sleep);
 *    a device with `wait` (the queue) is asked to make progress.
 *  - The only clock wait is in ubj_bdev_wait (and the calls of bdev.c
 *    at UBJ_CRIT_CRITICAL): models compute completion times, waiters
 *    wait for them; ubj_bdev_wait_data waits for the completion alone.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "dev/dev_int.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define REQ_ADD(field, n) __atomic_fetch_add(&(field), (n), __ATOMIC_RELAXED)

/* A waiter blocked in dev_req_sleep. */
struct req_sleeper {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int woken;              /* [mu] */
};

/* req_v2 -- true if d's table has the v2 submit. */
static inline int req_v2(const struct ubj_bdev *d)
{
    return d->ops->version >= UBJ_BDEV_OPS_V2 && d->ops->submit != NULL;
}

/* ubj_req_init -- an IDLE request, everything else zero. */
void ubj_req_init(struct ubj_req *r, enum ubj_req_op op, uint64_t blkno,
                  uint32_t count, void *buf)
{
    *r = (struct ubj_req){ .op = op, .blkno = blkno, .count = count, .buf = buf };
}

/* req_bad -- reject r: count the error on d, set the message. */
static int req_bad(struct ubj_bdev *d, int rc, const char *what)
{
    REQ_ADD(d->stats.errors, 1);
    return ubj_set_error(rc, "bdev submit to %s: %s", d->ops->name, what);
}

/* req_check -- 0 if r may be handed to d, else the rejection. */
static int req_check(struct ubj_bdev *d, const struct ubj_req *r)
{
    uint32_t st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    if (st == UBJ_REQ_INFLIGHT || st == DEV_REQ_SLEEPING)
        return req_bad(d, -EBUSY, "request already in flight");
    if (r->op > UBJ_REQ_FLUSH)
        return req_bad(d, -EINVAL, "unknown operation");
    if ((r->flags & ~UBJ_REQ_FLAGS_PUBLIC) != 0 ||
        ((r->flags & UBJ_REQ_FUA) && r->op != UBJ_REQ_WRITE))
        return req_bad(d, -EINVAL, "bad flags (FUA is for writes)");
    if (r->order > UBJ_ORDER_AFTER ||
        (r->order == UBJ_ORDER_AFTER && (r->after == NULL || r->nafter == 0)))
        return req_bad(d, -EINVAL, "bad ordering tag");
    if (r->crit >= UBJ_CRIT_CLASSES)
        return req_bad(d, -EINVAL, "unknown criticality class");
    if (r->op == UBJ_REQ_FLUSH)
        return r->count == 0 ? 0 : req_bad(d, -EINVAL, "a flush has no blocks");
    if (r->buf == NULL)
        return req_bad(d, -EINVAL, "NULL buffer");
    if (r->count == 0 || r->count > d->nblocks || r->blkno > d->nblocks - r->count)
        return req_bad(d, -EINVAL, "blocks out of range");
    return 0;
}

/* dev_submit_calls -- run r through d's read/write/flush, complete it
 * (the adapter of v1 tables; dev_int.h).  FUA is a write, then a flush. */
void dev_submit_calls(struct ubj_bdev *d, struct ubj_req *r)
{
    int rc;
    if (r->op == UBJ_REQ_READ) {
        rc = d->ops->read(d, r->blkno, r->count, r->buf);
    } else if (r->op == UBJ_REQ_WRITE) {
        rc = d->ops->write(d, r->blkno, r->count, r->buf);
        if (rc == 0 && dev_req_fua(r))
            rc = d->ops->flush(d);
    } else {
        rc = d->ops->flush(d);
    }
    ubj_req_complete(r, rc);
}

/* req_stack_holds -- true if a device in the stack at d holds requests
 * (a queue: it enforces ordering tags itself). */
static int req_stack_holds(const struct ubj_bdev *d)
{
    for (; d != NULL; d = d->lower)
        if (req_v2(d) && d->ops->drain != NULL)
            return 1;
    return 0;
}

/* req_wait_noclock -- wait until r completes at d; no clock wait. */
static int req_wait_noclock(struct ubj_bdev *d, struct ubj_req *r)
{
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == UBJ_REQ_DONE)
        return r->result;
    if (req_v2(d) && d->ops->wait != NULL)
        return d->ops->wait(d, r);
    return dev_req_sleep(r);
}

/* req_submit -- accept checked r at d: count it, hand it to the device. */
static void req_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    r->dev_ = d;
    r->result = 0;
    __atomic_store_n(&r->state, UBJ_REQ_INFLIGHT, __ATOMIC_RELEASE);
    if (r->op == UBJ_REQ_READ)
        REQ_ADD(d->stats.reads, 1);
    else if (r->op == UBJ_REQ_WRITE)
        REQ_ADD(d->stats.writes, 1);
    else
        REQ_ADD(d->stats.flushes, 1);
    if (req_v2(d))
        d->ops->submit(d, r);
    else
        dev_submit_calls(d, r);
}

/* req_preorder -- on a stack without a queue, a tagged write to a
 * volatile cache: flush what it follows first, then send it with FUA.
 * 0, or the flush's error. */
static int req_preorder(struct ubj_bdev *d, struct ubj_req *r)
{
    struct ubj_req f;
    ubj_req_init(&f, UBJ_REQ_FLUSH, 0, 0, NULL);
    f.flags = r->flags & UBJ_REQ_SYNC;
    f.crit = r->crit;
    f.pid = r->pid;
    f.dev_flags_ = DEVF_ORDERED;
    req_submit(d, &f);
    int rc = req_wait_noclock(d, &f);
    r->dev_flags_ |= DEVF_ORDERED | DEVF_FUA;
    return rc;
}

/* dev_submit_queued -- submit r (untagged) as a queue's dispatch: keep
 * its t_arrive and t_dispatch, with dev_flags_ = flags | DEVF_QUEUED. */
int dev_submit_queued(struct ubj_bdev *d, struct ubj_req *r, uint32_t flags)
{
    int rc = req_check(d, r);
    if (rc < 0)
        return rc;
    r->dev_flags_ = flags | DEVF_QUEUED;
    r->clock = NULL;
    r->t_complete = r->t_cpu_ns = 0;
    req_submit(d, r);
    return 0;
}

/* ubj_bdev_submit -- check r, then hand it to d. */
int ubj_bdev_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    if (d == NULL || d->ops == NULL || r == NULL)
        return ubj_set_error(-EINVAL, "bdev submit: no device or request");
    int rc = req_check(d, r);
    if (rc < 0)
        return rc;
    r->dev_flags_ = 0;
    r->clock = NULL;
    r->t_arrive = r->t_dispatch = r->t_complete = r->t_cpu_ns = 0;
    if (r->order != UBJ_ORDER_NONE && r->op == UBJ_REQ_WRITE &&
        (d->guarantees & UBJ_BDEV_VOLATILE_CACHE) && !req_stack_holds(d) &&
        (rc = req_preorder(d, r)) < 0) {
        r->dev_ = d;
        __atomic_store_n(&r->state, UBJ_REQ_INFLIGHT, __ATOMIC_RELEASE);
        REQ_ADD(d->stats.writes, 1);
        ubj_req_complete(r, rc);
        return 0;
    }
    req_submit(d, r);
    return 0;
}

/* ubj_req_complete -- count, mark DONE, call back or wake. */
void ubj_req_complete(struct ubj_req *r, int result)
{
    struct ubj_bdev *d = r->dev_;
    if (r->result != result)    /* the queue stored it already, under its lock */
        r->result = result;
    if (d != NULL) {
        if (result < 0)
            REQ_ADD(d->stats.errors, 1);
        else if (r->op == UBJ_REQ_READ)
            REQ_ADD(d->stats.bytes_read, (uint64_t)r->count * d->block_size);
        else if (r->op == UBJ_REQ_WRITE)
            REQ_ADD(d->stats.bytes_written, (uint64_t)r->count * d->block_size);
    }
    void (*done)(struct ubj_req *) = r->done;
    uint32_t old = __atomic_exchange_n(&r->state, UBJ_REQ_DONE, __ATOMIC_ACQ_REL);
    if (done != NULL) {
        done(r);            /* r may be gone after this */
        return;
    }
    if (old == DEV_REQ_SLEEPING) {
        struct req_sleeper *w = r->waiter_;   /* r lives: its waiter sleeps */
        pthread_mutex_lock(&w->mu);
        w->woken = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
    }
}

/* dev_req_sleep -- block until r completes (see dev_int.h). */
int dev_req_sleep(struct ubj_req *r)
{
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == UBJ_REQ_DONE)
        return r->result;
    struct req_sleeper w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    r->waiter_ = &w;
    pthread_mutex_lock(&w.mu);
    uint32_t expect = UBJ_REQ_INFLIGHT;
    if (__atomic_compare_exchange_n(&r->state, &expect, DEV_REQ_SLEEPING, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        while (!w.woken)
            pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return r->result;
}

/* dev_req_wait -- wait for r at d; on the model's clock too if `clock`. */
int dev_req_wait(struct ubj_bdev *d, struct ubj_req *r, bool clock)
{
    int rc = req_wait_noclock(d, r);
    if (clock && (r->dev_flags_ & DEVF_TIMED) && r->clock != NULL)
        ubj_clock_wait_until(r->clock, r->t_complete);
    return rc;
}

/* req_waitable -- 0 if a caller may wait for r at d, else -EINVAL with
 * the message naming `what`. */
static int req_waitable(const struct ubj_bdev *d, const struct ubj_req *r,
                        const char *what)
{
    if (d == NULL || r == NULL || r->done != NULL ||
        __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == UBJ_REQ_IDLE)
        return ubj_set_error(-EINVAL, "bdev %s: no device, a request with "
                             "a callback, or one never submitted", what);
    return 0;
}

/* ubj_bdev_wait -- wait for r's completion, then for its modeled time. */
int ubj_bdev_wait(struct ubj_bdev *d, struct ubj_req *r)
{
    int rc = req_waitable(d, r, "wait");
    return rc < 0 ? rc : dev_req_wait(d, r, true);
}

/* ubj_bdev_wait_data -- wait for r's completion only, not its modeled time. */
int ubj_bdev_wait_data(struct ubj_bdev *d, struct ubj_req *r)
{
    int rc = req_waitable(d, r, "wait_data");
    return rc < 0 ? rc : dev_req_wait(d, r, false);
}

/* ubj_bdev_submit_wait -- submit r marked SYNC and wait for it. */
int ubj_bdev_submit_wait(struct ubj_bdev *d, struct ubj_req *r)
{
    if (r == NULL || r->done != NULL)
        return ubj_set_error(-EINVAL, "bdev submit_wait: a request with a "
                             "callback");
    r->flags |= UBJ_REQ_SYNC;
    int rc = ubj_bdev_submit(d, r);
    return rc < 0 ? rc : dev_req_wait(d, r, true);
}

/* ubj_bdev_forward -- pass in-flight r to lower, wait there, re-arm it. */
int ubj_bdev_forward(struct ubj_bdev *lower, struct ubj_req *r)
{
    if (lower == NULL || lower->ops == NULL || r == NULL)
        return ubj_set_error(-EINVAL, "bdev forward: no device or request");
    struct ubj_bdev *up = r->dev_;
    void (*done)(struct ubj_req *) = r->done;
    void *priv = r->priv;
    r->done = NULL;
    __atomic_store_n(&r->state, UBJ_REQ_IDLE, __ATOMIC_RELAXED);
    int rc = req_check(lower, r);
    if (rc == 0) {
        req_submit(lower, r);
        rc = req_wait_noclock(lower, r);
    }
    r->done = done;
    r->priv = priv;
    r->dev_ = up;
    __atomic_store_n(&r->state, UBJ_REQ_INFLIGHT, __ATOMIC_RELEASE);
    return rc;
}

/* ubj_bdev_raise -- raise r at the first device down that holds requests. */
int ubj_bdev_raise(struct ubj_bdev *d, struct ubj_req *r, enum ubj_req_crit crit,
                   uint64_t deadline_ns)
{
    if (d == NULL || r == NULL || (uint32_t)crit >= UBJ_CRIT_CLASSES)
        return ubj_set_error(-EINVAL, "bdev raise: bad argument");
    if ((uint32_t)crit < __atomic_load_n(&r->crit, __ATOMIC_RELAXED))
        return ubj_set_error(-EINVAL, "bdev raise: class %u is below the "
                             "request's %u", (unsigned)crit, r->crit);
    for (; d != NULL; d = d->lower)
        if (req_v2(d) && d->ops->raise != NULL)
            return d->ops->raise(d, r, crit, deadline_ns);
    return 0;
}

/* ubj_bdev_drain -- drain every device of the stack that holds requests. */
int ubj_bdev_drain(struct ubj_bdev *d)
{
    if (d == NULL)
        return ubj_set_error(-EINVAL, "bdev drain: no device");
    for (; d != NULL; d = d->lower)
        if (req_v2(d) && d->ops->drain != NULL) {
            int rc = d->ops->drain(d);
            if (rc < 0)
                return rc;
        }
    return 0;
}
