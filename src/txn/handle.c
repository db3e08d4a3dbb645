/*
 * handle.c -- the handle layer every mode shares (src/txn/handle.h): the
 * running transaction counts its open handles, a commit locks it and
 * waits for them to stop, and handles reserve credits against a capacity
 * so that overlapping handles never pin the cache full.  After jbd2
 * (fs/jbd2/transaction.c: start_this_handle, jbd2_journal_stop,
 * jbd2_journal_lock_updates; t_updates, T_LOCKED), smaller: one running
 * transaction per mount, its commit synchronous in the committer.
 *
 * Owns: t->hs (struct ubj_handles) and every struct ubj_handle, allocated
 * here (a free list per mount) and handed to the mode's start/stop.  A
 * mode no longer embeds a handle or counts a depth: it calls
 * ubj_txn_lock_updates/unlock_updates around its commit (and
 * ubj_txn_assert_quiet inside it), ubj_txn_safe_point where it may commit
 * without waiting (reclaim, a checkpoint that commits first), and sets
 * its capacity at mount.
 *
 * A handle (the operation h of one thread; nested starts share it):
 *
 *   (none) --ubj_handle_start: wait RUNNING and room, mode start--> OPEN
 *   OPEN   --ubj_handle_start in the same thread (ref + 1)-------> OPEN
 *   OPEN   --ubj_handle_stop, ref > 1 (ref - 1)-------------------> OPEN
 *   OPEN   --ubj_handle_stop, last level: mode stop, uncounted,
 *             waiters woken--------------------------------------> (free list)
 *
 * The running transaction (t->hs.state), every move through hl_set_state,
 * whose table (hl_moves) is this diagram:
 *
 *   RUNNING    --ubj_txn_lock_updates (committer := this thread)---> LOCKED
 *   LOCKED     --ubj_txn_lock_updates, once updates == 0-----------> COMMITTING
 *   COMMITTING --ubj_txn_unlock_updates, last nested level---------> RUNNING
 *
 * Invariants ([the mount lock]):
 *  H1 hs.updates is the number of OPEN handles, hs.outstanding the sum of
 *     their `reserved`; a handle's reserved <= hs.capacity.
 *  H2 A handle opens only in RUNNING (or in its own thread's barrier:
 *     never, a committer holds no handle), and then only if it is alone or
 *     its credits fit beside the others' (outstanding + reserved <=
 *     capacity): overlapping handles can pin at most `capacity` buffers
 *     between them.
 *  H3 COMMITTING implies hs.updates == 0: a commit never takes half an
 *     operation.  Checked by ubj_txn_assert_quiet in every mode's commit,
 *     which aborts in EVERY build (not an assert), as does locking the
 *     barrier from inside an open handle (it would wait for itself) and
 *     unmounting with a handle open.
 *  H4 Every wait is a condition wait on the mount lock (hs.cv), which is
 *     released meanwhile; hs.cv is broadcast whenever updates falls or
 *     the barrier lifts.  A wait without a mount lock (t->lock NULL: one
 *     thread) could never end: it aborts.
 * The broken variant `handle-no-wait` (test builds) drops H3's wait and
 * its checks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "txn/handle.h"
#include "txn/mode.h"

/* the calling thread's innermost open handle (any mount) */
static _Thread_local struct ubj_handle *hl_current;

#if UBJ_TEST_HOOKS
static bool hl_no_wait;   /* the broken variant handle-no-wait */
static void (*hl_hook)(void *, struct ubj_handle *, uint64_t);
static void *hl_hook_arg;
#define HL_BROKEN() (hl_no_wait)
#else
#define HL_BROKEN() (false)
#endif

/* hl_abort -- a broken handle invariant: say which and abort. */
static _Noreturn void hl_abort(const struct ubj_txn *t, const char *what)
{
    fprintf(stderr, "ubjfs: mode %s: %s (open handles %u, state %d)\n",
            t->ops != NULL ? t->ops->name : "?", what, t->hs.updates,
            (int)t->hs.state);
    abort();
}

/* hl_mine -- the calling thread's open handle of t, or NULL. */
static struct ubj_handle *hl_mine(const struct ubj_txn *t)
{
    for (struct ubj_handle *h = hl_current; h != NULL; h = h->prev)
        if (h->t == t)
            return h;
    return NULL;
}

/* hl_owner -- the calling thread holds t's barrier. */
static bool hl_owner(const struct ubj_txn *t)
{
    return t->hs.state != UBJ_T_RUNNING && pthread_equal(t->hs.committer, pthread_self());
}

/* hl_moves -- the transitions of the diagram above: [from] = to. */
static const enum ubj_tstate hl_moves[] = {
    [UBJ_T_RUNNING] = UBJ_T_LOCKED,
    [UBJ_T_LOCKED] = UBJ_T_COMMITTING,
    [UBJ_T_COMMITTING] = UBJ_T_RUNNING,
};

/* hl_set_state -- move t's transaction to `to`; a move the diagram does
 * not draw aborts (every build). */
static void hl_set_state(struct ubj_txn *t, enum ubj_tstate to)
{
    if (hl_moves[t->hs.state] != to)
        hl_abort(t, "handle layer: a transaction state move the diagram does not draw");
    t->hs.state = to;
}

/* hl_wait -- one condition wait on the mount lock (H4). */
static void hl_wait(struct ubj_txn *t, uint32_t *counter)
{
    if (t->lock == NULL)
        hl_abort(t, "a handle wait without a mount lock would never end");
    (*counter)++;
    t->hs.waits++;
    pthread_cond_wait(&t->hs.cv, t->lock);
    (*counter)--;
}

/* ubj_handles_init -- RUNNING, no handle (see handle.h). */
void ubj_handles_init(struct ubj_txn *t, uint64_t capacity)
{
    t->hs = (struct ubj_handles){ .state = UBJ_T_RUNNING,
                                  .capacity = capacity ? capacity : 1 };
    pthread_cond_init(&t->hs.cv, NULL);
    t->hs.live = true;
}

/* ubj_handles_fini -- free the handles kept; none may be open (H3). */
void ubj_handles_fini(struct ubj_txn *t)
{
    if (!t->hs.live)
        return;
    if (t->hs.updates != 0)
        hl_abort(t, "unmount with a handle open");
    while (t->hs.free != NULL) {
        struct ubj_handle *h = t->hs.free;
        t->hs.free = h->next;
        free(h);
    }
    pthread_cond_destroy(&t->hs.cv);
    t->hs.live = false;
}

/* ubj_handles_set_capacity -- the mode's capacity in credits. */
void ubj_handles_set_capacity(struct ubj_txn *t, uint64_t capacity)
{
    t->hs.capacity = capacity ? capacity : 1;
}

/* hl_may_open -- H2 for a reservation of `want` credits. */
static bool hl_may_open(const struct ubj_txn *t, uint64_t want)
{
    const struct ubj_handles *hs = &t->hs;
    return hs->state == UBJ_T_RUNNING &&
           (hs->updates == 0 || hs->outstanding + want <= hs->capacity);
}

/* hl_alloc -- a handle from the free list or the heap. */
static struct ubj_handle *hl_alloc(struct ubj_txn *t)
{
    struct ubj_handle *h = t->hs.free;
    if (h != NULL)
        t->hs.free = h->next;
    else if ((h = malloc(sizeof *h)) == NULL)
        return NULL;
    *h = (struct ubj_handle){ .t = t };
    return h;
}

/* ubj_handle_start -- nest, or wait for the barrier and room, then the
 * mode's start (see handle.h). */
int ubj_handle_start(struct ubj_txn *t, uint32_t credits, struct ubj_handle **hp)
{
    struct ubj_handle *h = hl_mine(t);
    if (hl_owner(t))
        hl_abort(t, "handle start inside a commit (it would wait for itself)");
    if (h != NULL) {                       /* nested: jbd2's h_ref++ */
        h->ref++;
        h->credits += credits;
        *hp = h;
        return 0;
    }
    uint64_t want = credits < t->hs.capacity ? credits : t->hs.capacity;
    if ((h = hl_alloc(t)) == NULL)
        return -ENOMEM;
    h->credits = credits;
    for (;;) {
        while (!hl_may_open(t, want))
            hl_wait(t, &t->hs.waiting_start);
        int rc = t->ops->start(h);         /* may commit: the lock may go */
        if (rc < 0) {
            h->next = t->hs.free;
            t->hs.free = h;
            return rc;
        }
        if (hl_may_open(t, want))
            break;
    }
    h->ref = 1;
    h->reserved = (uint32_t)want;
    h->prev = hl_current;
    hl_current = h;
    t->hs.updates++;
    t->hs.outstanding += want;
    *hp = h;
    return 0;
}

/* ubj_handle_stop -- one level; the last: mode stop, uncount, wake. */
int ubj_handle_stop(struct ubj_handle *h)
{
    struct ubj_txn *t = h->t;
    if (h->ref == 0 || t->hs.updates == 0)
        hl_abort(t, "stop of a handle that is not open");
    if (--h->ref > 0)
        return 0;
    int rc = t->ops->stop(h);
    if (hl_current == h)
        hl_current = h->prev;
    else                                   /* stopped out of order */
        for (struct ubj_handle *c = hl_current; c != NULL; c = c->prev)
            if (c->prev == h)
                c->prev = h->prev;
    t->hs.updates--;
    t->hs.outstanding -= h->reserved;
    h->next = t->hs.free;
    t->hs.free = h;
    if (t->hs.waiting_commit || t->hs.waiting_start)
        pthread_cond_broadcast(&t->hs.cv);
    return rc;
}

/* ubj_txn_lock_updates -- the barrier: LOCKED, wait, COMMITTING. */
void ubj_txn_lock_updates(struct ubj_txn *t)
{
    struct ubj_handles *hs = &t->hs;
    if (hl_owner(t)) {
        hs->lock_depth++;
        return;
    }
    if (hl_mine(t) != NULL && !HL_BROKEN())
        hl_abort(t, "commit from inside an open handle (it would wait for itself)");
    while (hs->state != UBJ_T_RUNNING)     /* another thread's commit */
        hl_wait(t, &hs->waiting_start);
    hl_set_state(t, UBJ_T_LOCKED);
    hs->committer = pthread_self();
    hs->lock_depth = 1;
    while (hs->updates > 0 && !HL_BROKEN())
        hl_wait(t, &hs->waiting_commit);
    hl_set_state(t, UBJ_T_COMMITTING);
}

/* ubj_txn_unlock_updates -- lift the barrier (last level): RUNNING. */
void ubj_txn_unlock_updates(struct ubj_txn *t)
{
    struct ubj_handles *hs = &t->hs;
    if (!hl_owner(t))
        hl_abort(t, "barrier unlocked by a thread that does not hold it");
    if (--hs->lock_depth > 0)
        return;
    hl_set_state(t, UBJ_T_RUNNING);
    if (hs->waiting_start || hs->waiting_commit)
        pthread_cond_broadcast(&hs->cv);
}

/* ubj_txn_assert_quiet -- H3, in every build. */
void ubj_txn_assert_quiet(const struct ubj_txn *t, const char *who)
{
    if (HL_BROKEN())
        return;
    if (t->hs.state != UBJ_T_COMMITTING || !hl_owner(t) || t->hs.updates != 0) {
        char what[160];
        snprintf(what, sizeof what, "%s: commit with open handles or outside "
                 "the commit barrier", who);
        hl_abort(t, what);
    }
}

/* ubj_txn_safe_point -- no open handle, no other thread's barrier. */
bool ubj_txn_safe_point(const struct ubj_txn *t)
{
    return t->hs.updates == 0 && (t->hs.state == UBJ_T_RUNNING || hl_owner(t));
}

/* ubj_txn_open_handles -- open handles. */
uint32_t ubj_txn_open_handles(const struct ubj_txn *t)
{
    return t->hs.updates;
}

/* ubj_txn_outstanding -- their reserved credits. */
uint64_t ubj_txn_outstanding(const struct ubj_txn *t)
{
    return t->hs.outstanding;
}

#if UBJ_TEST_HOOKS
/* ubj_handle_test_break -- the broken variant handle-no-wait. */
void ubj_handle_test_break(bool no_wait)
{
    hl_no_wait = no_wait;
}

/* ubj_handle_test_hook -- the parking hook (see handle.h). */
void ubj_handle_test_hook(void (*fn)(void *, struct ubj_handle *, uint64_t), void *arg)
{
    hl_hook = fn;
    hl_hook_arg = arg;
}

/* ubj_handle_test_point -- call the hook, if any. */
void ubj_handle_test_point(struct ubj_handle *h, uint64_t blkno)
{
    if (hl_hook != NULL)
        hl_hook(hl_hook_arg, h, blkno);
}
#endif
