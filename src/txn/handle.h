/*
 * handle.h -- the handle layer every mode shares (src/txn/handle.c): the
 * running transaction's open handles, the commit barrier and the credits
 * handles reserve (after jbd2's start_this_handle, jbd2_journal_stop,
 * jbd2_journal_lock_updates, t_updates and T_LOCKED; docs/DESIGN.md,
 * "Handles and the commit barrier").
 *
 * Every function here is called with the mount lock (t->lock) held; the
 * waits are condition variables on that lock, released while waiting, so
 * an operation that releases the mount lock inside its handle (a test's
 * parked operation today; a device read later, issue 20 item 3) cannot be
 * cut in half by another thread's commit.
 */
#ifndef UBJ_TXN_HANDLE_H
#define UBJ_TXN_HANDLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct ubj_txn;

/*
 * The running transaction's state as the handle layer sees it (jbd2's
 * t_state; a mode's own commit phases follow COMMITTING):
 *
 *   RUNNING     handles start and stop freely
 *   LOCKED      a committer took the barrier: new handles wait, the
 *               committer waits until the open ones stop
 *   COMMITTING  no handle open; the committer runs the mode's commit
 */
enum ubj_tstate { UBJ_T_RUNNING, UBJ_T_LOCKED, UBJ_T_COMMITTING };

/* One file-system operation (every mode's; the layer allocates it). */
struct ubj_handle {
    struct ubj_txn *t;
    uint32_t credits;         /* blocks it may dirty, all levels added */
    uint32_t used;            /* blocks dirtied (the mode counts) */
    uint32_t ref;             /* started levels (nested starts, jbd2 h_ref) */
    uint32_t reserved;        /* credits counted in hs.outstanding */
    uint64_t priv;            /* the mode's per-handle word (journal: the
                                 log room the start secured) */
    struct ubj_handle *prev;  /* the thread's handle before this one */
    struct ubj_handle *next;  /* [the mount lock] the free list */
};

/* The layer's per-mount state, in struct ubj_txn (t->hs). */
struct ubj_handles {
    enum ubj_tstate state;    /* [lock] */
    uint32_t updates;         /* [lock] open (outermost) handles */
    uint64_t outstanding;     /* [lock] credits the open handles reserved */
    uint64_t capacity;        /* credits open handles may hold at once
                                 (the mode's mount sets it; default: the
                                 cache's buffers) */
    pthread_t committer;      /* [lock] the barrier's owner (not RUNNING) */
    uint32_t lock_depth;      /* [lock] its nested locks */
    uint32_t waiting_commit;  /* [lock] committers waiting for handles */
    uint32_t waiting_start;   /* [lock] starts waiting (barrier or room) */
    uint64_t waits;           /* [lock] waits of either kind, ever */
    pthread_cond_t cv;        /* a handle stopped or the barrier lifted */
    struct ubj_handle *free;  /* [lock] stopped handles kept for reuse */
    bool live;                /* cv initialised (between init and fini) */
};

/* ubj_handles_init -- at mount, before the mode's: RUNNING, no handle,
 * capacity `capacity` credits. */
void ubj_handles_init(struct ubj_txn *t, uint64_t capacity);
/* ubj_handles_fini -- at unmount, after the mode's; aborts (every build)
 * if a handle is still open. */
void ubj_handles_fini(struct ubj_txn *t);
/* ubj_handles_set_capacity -- the mode's mount: how many credits open
 * handles may reserve at once (at least 1). */
void ubj_handles_set_capacity(struct ubj_txn *t, uint64_t capacity);

/*
 * ubj_handle_start -- open a handle for at most `credits` blocks: a start
 * nested in the calling thread's open handle of t shares it (ref + 1,
 * credits added); otherwise wait while a committer holds the barrier and
 * while the open handles' credits leave no room for these (a handle
 * alone always starts; its reservation is clipped to the capacity), run
 * the mode's start (its policy: it may commit, through the barrier, and
 * checkpoint: no handle of this thread is open then), and count it.
 * 0 and *h, or the mode's -errno (nothing opened).
 */
int ubj_handle_start(struct ubj_txn *t, uint32_t credits, struct ubj_handle **h);
/* ubj_handle_stop -- end one level of h; the last runs the mode's stop,
 * uncounts h and wakes the waiters.  The mode's result. */
int ubj_handle_stop(struct ubj_handle *h);

/*
 * ubj_txn_lock_updates / ubj_txn_unlock_updates -- the commit barrier
 * around every commit of a mode: RUNNING -> LOCKED (new handles wait),
 * wait until the open handles stopped, -> COMMITTING; unlock: -> RUNNING,
 * waking the waiters.  The owner may nest them.  Locking from inside the
 * caller's own open handle of t aborts (every build): it would wait for
 * itself.
 */
void ubj_txn_lock_updates(struct ubj_txn *t);
void ubj_txn_unlock_updates(struct ubj_txn *t);
/* ubj_txn_assert_quiet -- a mode's commit checks that it runs inside the
 * barrier (COMMITTING, this thread, no handle open); aborts (every build)
 * with `who` otherwise. */
void ubj_txn_assert_quiet(const struct ubj_txn *t, const char *who);
/* ubj_txn_safe_point -- no handle is open and no other thread holds the
 * barrier: a commit needs no wait, so reclaim and checkpoint may commit
 * here. */
bool ubj_txn_safe_point(const struct ubj_txn *t);
/* ubj_txn_open_handles / ubj_txn_outstanding -- open handles, and the
 * credits they reserved. */
uint32_t ubj_txn_open_handles(const struct ubj_txn *t);
uint64_t ubj_txn_outstanding(const struct ubj_txn *t);

#if UBJ_TEST_HOOKS
/* ubj_handle_test_break -- test builds: the broken variant
 * `handle-no-wait`: the barrier neither waits for open handles nor aborts
 * when it finds them (a commit may take half an operation). */
void ubj_handle_test_break(bool no_wait);
/* ubj_handle_test_hook -- test builds: fn(arg, h, blkno) after every
 * ubj_txn_dirty (inside h, the mount lock held; fn may release and retake
 * it to park the operation); NULL: none. */
void ubj_handle_test_hook(void (*fn)(void *arg, struct ubj_handle *h, uint64_t blkno),
                          void *arg);
/* ubj_handle_test_point -- txn.c's call of the hook. */
void ubj_handle_test_point(struct ubj_handle *h, uint64_t blkno);
#endif

#endif /* UBJ_TXN_HANDLE_H */
