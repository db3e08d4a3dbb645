/*
 * ubjfs/queue.h -- the request queue: a block-device wrapper that holds
 * the requests submitted to it (interface v2, include/ubjfs/bdev.h) and
 * dispatches them to the device below in the order a scheduler picks,
 * honouring their ordering tags down to the device's volatile cache.
 *
 * Where the layers above need a disk scheduler -- Ganger & Patt's
 * scheduler-enforced ordering (seed 003), asynchronous write-back and
 * read-ahead -- they stack a queue on top of the device:
 *   ubj_bdev_open_spec("queue:clook,depth=32@hdd:modern7200", ...)
 *
 * Schedulers (src/dev/queue_sched.c), applied within a criticality tier:
 *  - fcfs:  submission order.
 *  - clook: C-LOOK (circular LOOK, the seed's default): the lowest block
 *           at or after the end of the last request dispatched, else the
 *           lowest block (one sweep upwards, then back to the start).
 *  - sptf:  shortest positioning time first, from the HDD model's seek
 *           and rotation estimate (ubj_model_position_ns); C-LOOK where
 *           the stack has no model that can estimate.
 *  A flush has no position: C-LOOK and SPTF take it first.
 * Criticality (crit=1): time-critical requests, and time-limited ones
 * whose deadline has passed, are served before time-limited ones, and
 * those before time-noncritical ones; the scheduler picks within the
 * most critical non-empty tier.  Off by default for fcfs (it is first
 * come, first served), on for the others.
 *
 * Ordering (besides the tags of bdev.h): requests that touch a common
 * block, one of them a write, complete in submission order -- except a
 * read that a queued write (the latest submitted to those blocks) covers
 * whole, which is served from that write's buffer at once, without the
 * device.  So a read never returns data older than a queued write; an
 * untagged read may otherwise overtake queued writes.  A request ordered
 * (by a tag) after one that failed fails with -EIO, undispatched.
 *
 * Durability: on a device with UBJ_BDEV_VOLATILE_CACHE, a write ordered
 * after a write that completed without FUA is dispatched only after a
 * flush that began after that completion has completed (the queue adds
 * the flush); a barrier write is sent with FUA.
 *
 * Time.  With a timed model in the stack below (include/ubjfs/model.h)
 * the queue runs on the model's clock:
 *  - virtual clock: the queue is part of the discrete-event timing.  It
 *    dispatches nothing by itself: a decision at time t is made once no
 *    request can arrive before t any more -- at the next submission
 *    (arriving later), or when a caller waits (ubj_bdev_wait: the queue
 *    runs its events until that request completes), or drains.  Every
 *    decision is a function of the requests and their times, so a
 *    single-threaded run gives the same figures every time; with fcfs
 *    and no tags, exactly those of the model alone.  A caller that
 *    waits for a request's data but not its time (ubj_bdev_wait_data:
 *    background I/O, ubj_bdev_write_crit below UBJ_CRIT_CRITICAL) runs
 *    the queue to its completion without moving the clock.
 *  - real clock (or no model: a queue over a RAM or file device, on its
 *    own CLOCK_MONOTONIC clock): a dispatcher thread feeds the device and
 *    completes requests (callbacks run on it) when the model says they
 *    are done.  Over a device without a model, a submission that finds
 *    the queue idle is dispatched in the caller's thread (dispatch=inline,
 *    the default); dispatch=thread hands every request to the thread.
 *
 * Thread-safety: every function may be called from several threads; the
 * queue serialises on one mutex (never held across a callback, nor, on
 * the real clock, across the lower device's I/O).
 * Errors: negative errno values with a message for ubj_errormsg().
 */
#ifndef UBJFS_QUEUE_H
#define UBJFS_QUEUE_H

#include <stdint.h>
#include "ubjfs/bdev.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ubj_queue_sched {
    UBJ_SCHED_FCFS = 0,
    UBJ_SCHED_CLOOK = 1,
    UBJ_SCHED_SPTF = 2,
};

enum ubj_queue_dispatch {
    UBJ_QUEUE_INLINE = 0,   /* an idle queue dispatches in the caller */
    UBJ_QUEUE_THREAD = 1,   /* every request through the dispatcher */
};

#define UBJ_QUEUE_DEPTH_DEFAULT 128u
#define UBJ_QUEUE_DEPTH_MAX 65536u

/*
 * struct ubj_queue_conf -- how a queue works.  A zeroed struct: fcfs,
 * depth 128, criticality as the scheduler's default, slots from the
 * model, inline dispatch.
 */
struct ubj_queue_conf {
    uint32_t sched;     /* enum ubj_queue_sched */
    uint32_t depth;     /* requests held at once (waiting or at the device);
                           a submission beyond it waits for a completion
                           (virtual clock: the clock moves to it); 0 = 128 */
    int32_t crit;       /* criticality tiers: 1 on, 0 off, -1 or any other
                           value = the default (off for fcfs, else on) */
    uint32_t slots;     /* requests at the device at once; 0 = the model's
                           (ubj_model_slots: 1 hdd/nand, any number ssd),
                           1 without a model */
    uint32_t dispatch;  /* enum ubj_queue_dispatch (real clock only) */
};

/*
 * ubj_bdev_queue_create -- wrap `lower` (ownership passes on success) in
 * a request queue configured by `conf` (NULL: all defaults).  The queue
 * has lower's geometry and guarantees.  On the real clock (or without a
 * model) it starts its dispatcher thread.  On failure `lower` is NOT
 * destroyed.  Returns 0 and *out; -EINVAL (NULL, unknown scheduler or
 * dispatch, depth above UBJ_QUEUE_DEPTH_MAX), -ENOMEM, or the error of
 * starting the thread (-EAGAIN).
 */
int ubj_bdev_queue_create(struct ubj_bdev *lower, const struct ubj_queue_conf *conf,
                          struct ubj_bdev **out);

/*
 * ubj_bdev_queue_parse -- a queue configuration from the argument text of
 * a "queue:" spec layer: SCHED ( "," KEY "=" VALUE )*, SCHED = fcfs |
 * clook | sptf, KEY = depth | crit (0, 1) | slots | dispatch (inline,
 * thread).  Returns 0 and *conf, or -EINVAL with a message naming the
 * bad part.
 */
int ubj_bdev_queue_parse(const char *args, struct ubj_queue_conf *conf);

/* What a queue measured for the requests of one criticality class (the
 * class each had when it completed); times in ns, sums over requests. */
struct ubj_queue_class_stats {
    uint64_t completed;       /* requests completed (forwarded ones too) */
    uint64_t queue_ns;        /* sum of queueing delays: dispatch - arrival */
    uint64_t service_ns;      /* sum of service times: completion - dispatch */
    uint64_t response_ns;     /* sum of response times: completion - arrival */
    uint64_t response_max_ns; /* the longest response time */
    uint64_t late;            /* time-limited: completed after the deadline */
    uint64_t raised;          /* requests raised into this class */
};

/*
 * struct ubj_queue_stats -- a queue's counters since creation or reset.
 * Times are ns on the queue's clock (the model's, or its own monotonic
 * one).
 */
struct ubj_queue_stats {
    uint64_t submitted;       /* requests accepted */
    uint64_t completed;       /* requests completed (callbacks run or due) */
    uint64_t dispatched;      /* requests handed to the lower device
                                 (the queue's own flushes included) */
    uint64_t forwarded;       /* reads served from a queued write */
    uint64_t added_flushes;   /* flushes the queue added for ordering */
    uint64_t added_fua;       /* writes it sent with FUA (barriers) */
    uint64_t failed_order;    /* requests failed for following a failure */
    uint64_t inline_dispatches; /* real clock: dispatched by the submitter */
    uint64_t thread_dispatches; /* real clock: by the dispatcher thread */
    uint64_t full_waits;      /* submissions that waited for room */
    uint64_t max_held;        /* most requests held at once */
    struct ubj_queue_class_stats cls[UBJ_CRIT_CLASSES]; /* by enum ubj_req_crit */
};

/* ubj_queue_find -- the topmost queue in the stack at `d` (d or below),
 * or NULL. */
struct ubj_bdev *ubj_queue_find(struct ubj_bdev *d);

/* ubj_queue_stats_get -- a snapshot of queue `d`'s counters.  Returns 0 or
 * -EINVAL (not a queue, NULL out).  Thread-safe. */
int ubj_queue_stats_get(struct ubj_bdev *d, struct ubj_queue_stats *out);

/* ubj_queue_stats_reset -- zero queue `d`'s counters.  0 or -EINVAL. */
int ubj_queue_stats_reset(struct ubj_bdev *d);

#ifdef __cplusplus
}
#endif
#endif /* UBJFS_QUEUE_H */
