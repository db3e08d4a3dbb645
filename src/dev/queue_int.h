/*
 * queue_int.h -- the parts of the request queue (include/ubjfs/queue.h)
 * and how they meet:
 *   queue.c        the device: holding requests, their ordering (tags,
 *                  conflicts, durability), completion, statistics, the API
 *   queue_run.c    running it: dispatch, the virtual-clock event
 *                  simulation, the real-clock dispatcher thread
 *   queue_sched.c  the schedulers: which ready request goes next
 * Nothing here is public.
 */
#ifndef UBJ_DEV_QUEUE_INT_H
#define UBJ_DEV_QUEUE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ubjfs/bdev.h"
#include "ubjfs/queue.h"

/*
 * The states of a queue entry (struct qent) -- one per request held, plus
 * the queue's own flush -- and the functions that move it (queue.c unless
 * marked run):
 *
 *   FREE --q_submit--> WAIT --q_release--> READY --q_dispatch (run)--> BUSY
 *                        |         |                                   |
 *                        |         +--> FLUSHWAIT --q_recheck_flush--> READY
 *                        |                                             |
 *                        +---- q_release (ordered after a failure) ----+
 *                                                                      v
 *   FREE <------------------------ q_retire ---------------------- (done)
 *
 *   from      to         performed by       when
 *   FREE      WAIT       q_submit           a request is accepted (or the
 *                                           queue needs a flush: q_need_flush)
 *   WAIT      READY      q_release          nothing it follows is pending and
 *                                           what it must follow is durable
 *   WAIT      FLUSHWAIT  q_release          a write it follows is not yet
 *                                           durable: a flush must come first
 *   FLUSHWAIT READY      q_recheck_flush    a flush made that write durable
 *   READY     BUSY       q_dispatch (run)   a scheduler picked it
 *   BUSY      FREE       q_retire           the device completed it
 *   WAIT/FLUSHWAIT FREE  q_retire           it failed undispatched (ordered
 *                                           after a failure; its flush failed)
 * A read a queued write covers never takes an entry (q_forward).
 */
enum qe_state { QE_FREE = 0, QE_WAIT, QE_FLUSHWAIT, QE_READY, QE_BUSY };

struct qent;

/* "to" must wait for the entry holding this edge; an order edge (a tag)
 * also carries failure and durability, a conflict edge only completion. */
struct qedge {
    struct qent *to;
    struct qedge *next;
    bool order;
};

struct qent {
    struct ubj_req *r;          /* the submitter's request; NULL: own flush */
    struct ubj_req child;       /* what goes to the lower device */
    uint64_t seq;               /* submission number (own flush: borrowed) */
    uint32_t state;             /* enum qe_state */
    uint32_t crit;              /* class now (raised, or the flush's waiters') */
    uint64_t deadline;          /* UBJ_CRIT_LIMITED: ns */
    uint32_t ndeps;             /* entries it still waits for */
    bool dep_failed;            /* ordered after a request that failed */
    int fail_rc;                /* could not be ordered (bad after[], memory) */
    uint32_t cflags;            /* DEVF_* its child is dispatched with */
    bool io_done;               /* run: the lower device finished, due at t_complete */
    uint64_t dur_need;          /* write: writes 1..dur_need must be durable */
    uint64_t covers;            /* flush: writes completed when dispatched */
    uint64_t t_arrive, t_ready, t_dispatch, t_complete;   /* ns */
    int lrc;                    /* the lower device's result */
    uint32_t slot;              /* run, virtual: the device slot it holds */
    uint64_t dseq;              /* run: dispatch number (ties of completions) */
    struct qedge *waiters;      /* entries waiting for this one */
    struct qent *prev, *next;   /* held list, submission order */
    struct qent *rprev, *rnext; /* ready list */
    struct qent *link;          /* flush-wait list, free list */
};

/* The queue device.  [lock] unless said otherwise. */
struct queue {
    struct ubj_bdev base;       /* first: the handle callers hold */
    pthread_mutex_t lock;
    pthread_cond_t room_cv;     /* an entry was freed (room, drain) */
    pthread_cond_t work_cv;     /* the dispatcher has work */
    struct ubj_queue_conf conf; /* as created (defaults filled in) */
    bool crit_on;               /* criticality tiers */
    struct ubj_bdev *model;     /* the topmost model below, or NULL */
    struct ubj_clock *clock;    /* the model's clock, or our own (one ref) */
    bool virt;                  /* virtual clock: the event simulation runs */
    bool timed;                 /* completions carry modeled times */
    bool volatile_cache;        /* lower has UBJ_BDEV_VOLATILE_CACHE */
    uint32_t slots;             /* at the device at once; 0 = any number */
    struct qent *ents;          /* depth user entries + own flush (last) */
    struct qent *own;           /* the own flush entry */
    struct qent *free_list;
    struct qent *held_head, *held_tail;
    struct qent *ready;         /* ready list */
    struct qent *flushwait;
    struct qent *barrier;       /* the latest barrier still held */
    struct qedge *edge_free;
    void **edge_chunks;         /* allocations, freed at destroy */
    size_t nchunks;
    uint32_t nheld;             /* user entries held */
    uint32_t busy;              /* entries at the device */
    uint64_t seq, dseq;         /* submission and dispatch numbers */
    uint64_t wdone;             /* writes completed (numbers them) */
    uint64_t durable;           /* writes 1..durable are durable */
    uint64_t last_dirty;        /* the latest write completed not durable */
    bool flush_again;           /* the own flush in flight covers too little */
    uint64_t head;              /* block after the last dispatched request */
    uint64_t last_disp;         /* virtual: time of the last dispatch */
    uint64_t last_retire;       /* virtual: time of the last completion */
    uint64_t *slot_free;        /* virtual: when each slot is free (slots>0) */
    bool *slot_used;
    struct qs_cand *cand;       /* scratch for decisions (nents) */
    struct qent **cand_e;
    struct ubj_req **pending;   /* retired, to be completed (ring, depth) */
    uint32_t npending, pending_head;
    uint32_t completing;        /* completions taken, callbacks running */
    bool stopping;              /* the dispatcher must exit */
    bool has_thread;
    pthread_t thread;
    struct ubj_queue_stats st;
};

/* ---- queue.c, for queue_run.c (lock held) ----------------------------- */

/* q_retire -- entry e completed with rc at time t (dispatched: it was at
 * the device); releases what waits for it and frees it. */
void q_retire(struct queue *q, struct qent *e, int rc, uint64_t t, bool dispatched);

/* q_ready_del -- take READY e off the ready list. */
void q_ready_del(struct queue *q, struct qent *e);

/* q_complete_pending -- complete the retired requests (callbacks run with
 * the lock dropped and taken again). */
void q_complete_pending(struct queue *q);

/* q_now -- the queue's clock. */
uint64_t q_now(struct queue *q);

/* ---- queue_run.c (lock held) ------------------------------------------ */

/* q_pick -- the ready entry a scheduler dispatches at time t (its tier's
 * candidates: ready by t), or NULL if none is ready by t. */
struct qent *q_pick(struct queue *q, uint64_t t);

/* q_dispatch -- move READY e to BUSY at time t and make its child. */
void q_dispatch(struct queue *q, struct qent *e, uint64_t t);

/* q_lower_io -- submit e's child to the lower device and wait for it (no
 * clock wait); sets e->lrc and e->t_complete (the modeled completion, or
 * `t_now`).  Called with or without the lock (see queue_run.c). */
void q_lower_io(struct queue *q, struct qent *e, uint64_t t_now);

/* q_sim_step -- the virtual-clock simulation: process its next event if
 * it happens before `limit` (ns); false if there is none. */
bool q_sim_step(struct queue *q, uint64_t limit);

/* q_run_inline -- real clock: dispatch READY e in the calling thread if
 * the queue is idle; true if it did (e retired, lock held again). */
bool q_run_inline(struct queue *q, struct qent *e);

/* q_thread_start / q_thread_stop -- the real-clock dispatcher (lock not
 * held).  Start: 0 or -EAGAIN. */
int q_thread_start(struct queue *q);
void q_thread_stop(struct queue *q);

/* One ready request as a scheduler sees it. */
struct qs_cand {
    uint64_t seq;       /* submission order (lower = earlier) */
    uint64_t blkno;     /* first block (reads and writes) */
    uint32_t count;     /* blocks; 0 for a flush (no position) */
    uint32_t op;        /* enum ubj_req_op */
    uint32_t flags;     /* UBJ_REQ_FUA as it will be dispatched */
};

/* What a decision knows besides the candidates. */
struct qs_ctx {
    uint32_t sched;           /* enum ubj_queue_sched */
    uint64_t head;            /* the block after the last request dispatched */
    struct ubj_bdev *model;   /* the model below (SPTF's estimates), or NULL */
    uint64_t t;               /* the decision's time, ns on the model's clock */
};

/*
 * qs_pick -- the index (< n, n >= 1) of the candidate the scheduler
 * dispatches next.  Deterministic: ties go to the earlier submission.
 * Called with the queue's lock held; SPTF takes the model's lock.
 */
size_t qs_pick(const struct qs_ctx *c, const struct qs_cand *cand, size_t n);

/*
 * qs_sched_parse -- the scheduler named by the `len` bytes at `name`
 * ("fcfs", "clook", "sptf"): its enum ubj_queue_sched, or -EINVAL.
 */
int qs_sched_parse(const char *name, size_t len);

/* qs_sched_name -- the name of scheduler `sched` ("?" if unknown). */
const char *qs_sched_name(uint32_t sched);

#endif /* UBJ_DEV_QUEUE_INT_H */
