/*
 * evcheck.h -- the event checker (src/txn/evcheck.c), private to
 * src/txn/txn.c: a wrapper stacked over whichever mode a mount runs
 * (UBJ_TEST_HOOKS builds, switched on by UBJ_CHECK_EVENTS=1).
 * docs/DESIGN.md, "The event checker".
 */
#ifndef UBJ_TXN_EVCHECK_H
#define UBJ_TXN_EVCHECK_H

#include "txn/mode.h"

/* ubj_evcheck_open -- a checker if the environment asks for one, else
 * NULL (always NULL without UBJ_TEST_HOOKS). */
struct ubj_evcheck *ubj_evcheck_open(void);
void ubj_evcheck_close(struct ubj_evcheck *c);
/* ubj_evcheck_drop -- checker c was opened with UBJ_TEST_DROP_EVENT
 * naming this event type: the dispatch drops it, so a test proves the
 * checker catches a missing event (read at open, i.e. at each mount). */
bool ubj_evcheck_drop(const struct ubj_evcheck *c, enum ubj_event_type type);
/* after the mode's write_access gave b: snapshot it (first time in h) */
void ubj_evcheck_access(struct ubj_evcheck *c, struct ubj_handle *h,
                        struct ubj_buf *b);
/* an event: check it against the buffer, record its range */
void ubj_evcheck_event(struct ubj_evcheck *c, struct ubj_handle *h,
                       const struct ubj_event *ev);
/* before the mode's dirty: every changed byte covered (metadata) */
void ubj_evcheck_dirty(struct ubj_evcheck *c, struct ubj_handle *h,
                       struct ubj_buf *b, enum ubj_buf_kind kind);
/* forget (the block was freed): drop its snapshot */
void ubj_evcheck_forget(struct ubj_evcheck *c, struct ubj_handle *h, uint64_t blkno);
/* ubj_evcheck_tap -- when set (a test: tests/unit/events.c), the checker
 * calls it with every event it accepted, after its checks, on the thread
 * sending it (under the mount lock); ev and its name last only for the
 * call.  Set or clear it only while no mount with a checker runs. */
extern void (*ubj_evcheck_tap)(const struct ubj_event *ev);
/* handle h stops: drop its snapshots */
void ubj_evcheck_stop(struct ubj_evcheck *c, struct ubj_handle *h);

#endif /* UBJ_TXN_EVCHECK_H */
