/*
 * dev_int.h -- what the devices of src/dev share about requests beyond
 * the public interface (include/ubjfs/bdev.h): the device layer's private
 * request flags (struct ubj_req.dev_flags_) and the waiting primitive the
 * queue reuses.  Nothing here is public.
 */
#ifndef UBJ_DEV_DEV_INT_H
#define UBJ_DEV_DEV_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "ubjfs/bdev.h"

/* ---- struct ubj_req.dev_flags_ ------------------------------------------ */

/* t_arrive and t_dispatch were set by a queue above: a model times the
 * request from t_dispatch and counts its queueing from t_arrive. */
#define DEVF_QUEUED  0x1u
/* t_complete is a modeled completion on r->clock that whoever waits for
 * the request still has to wait for (a model sets it; a queue that waited
 * on the real clock itself clears it). */
#define DEVF_TIMED   0x2u
/* the request's tag has been made durable-ordered above (a preflush and
 * FUA by the dispatch layer): devices below do nothing more for it. */
#define DEVF_ORDERED 0x4u
/* written with FUA although the submitter did not ask (a barrier, or a
 * tagged write on a device without a queue). */
#define DEVF_FUA     0x8u

/* The private state a sleeping waiter puts in r->state (INFLIGHT + a
 * sleeper: ubj_req_complete must wake it). */
#define DEV_REQ_SLEEPING 3u

/* dev_wrap_init -- a wrapper's handle `b` over `lower`: ops, and lower's
 * geometry and guarantees. */
static inline void dev_wrap_init(struct ubj_bdev *b, const struct ubj_bdev_ops *ops,
                                 struct ubj_bdev *lower)
{
    b->ops = ops;
    b->block_size = lower->block_size;
    b->guarantees = lower->guarantees;
    b->nblocks = lower->nblocks;
    b->lower = lower;
}

/* dev_req_fua -- true if write r must be durable when it completes. */
static inline bool dev_req_fua(const struct ubj_req *r)
{
    return ((r->flags & UBJ_REQ_FUA) | (r->dev_flags_ & DEVF_FUA)) != 0;
}

/*
 * dev_submit_calls -- a submit made of d's own read/write/flush (which
 * must be set): the adapter the dispatch layer uses for a v1 table, and
 * the submit of a v2 device that serves every request synchronously in
 * the caller's thread (ram, cow, map).  A FUA write is the write, then a
 * flush.  Completes r before returning.
 */
void dev_submit_calls(struct ubj_bdev *d, struct ubj_req *r);

/*
 * dev_req_sleep -- block the calling thread until ubj_req_complete(r)
 * (r in flight, done == NULL); returns at once if it has completed.
 * Never touches r's clock.  Returns r->result.  Thread-safe; one sleeper
 * per request.
 */
int dev_req_sleep(struct ubj_req *r);

/*
 * dev_submit_queued -- a queue's dispatch of request r (its own object,
 * untagged, done == NULL) to device d: as ubj_bdev_submit, but r's
 * t_arrive and t_dispatch (set by the queue) are kept and dev_flags_
 * becomes `flags` | DEVF_QUEUED (a model below times r from t_dispatch).
 * Returns 0 (r completes as usual) or the rejection.  Thread-safe.
 */
int dev_submit_queued(struct ubj_bdev *d, struct ubj_req *r, uint32_t flags);

/*
 * dev_req_wait -- wait until r, submitted to d with done == NULL, has
 * completed (d's wait op, else dev_req_sleep); with `clock`, then wait on
 * the model's clock until r->t_complete if a model timed it.  Returns
 * r->result.  Thread-safe.
 */
int dev_req_wait(struct ubj_bdev *d, struct ubj_req *r, bool clock);

#endif /* UBJ_DEV_DEV_INT_H */
