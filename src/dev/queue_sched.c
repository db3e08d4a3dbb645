/*
 * queue_sched.c -- the request queue's schedulers (include/ubjfs/queue.h):
 * given the ready requests of one criticality tier, which is dispatched
 * next.  The queue (src/dev/queue.c) decides what is ready -- ordering
 * tags, conflicts, durability -- so a scheduler only orders what may go.
 *
 *  FCFS   the earliest submission.
 *  C-LOOK (FreeBSD's bioq_disksort, Linux's elevator sweeps): the request
 *         with the lowest first block at or after `head` (the block after
 *         the last request dispatched); if there is none, the lowest first
 *         block of all -- a sweep upwards, then a jump back to the start.
 *  SPTF   (Worthington, Ganger & Patt 1994; Jacobson & Wilkes 1991): the
 *         shortest positioning time -- seek plus rotational wait from
 *         where the arm will be at the decision's time -- as the model
 *         estimates it (ubj_model_position_ns, src/dev/model_hdd.c).  A
 *         stack without a model that estimates falls back to C-LOOK.
 *  A flush has no position: C-LOOK and SPTF dispatch the earliest ready
 *  flush before any read or write.
 * Every rule breaks ties by submission order, so decisions depend only on
 * the candidates and the context: the queue's virtual-clock runs are
 * deterministic.
 */
#include <errno.h>
#include <string.h>
#include "dev/queue_int.h"
#include "ubjfs/model.h"

static const char *const qs_names[] = { "fcfs", "clook", "sptf" };
#define QS_NSCHED (sizeof qs_names / sizeof qs_names[0])

/* qs_earlier -- true if candidate a is before b by (key, seq). */
static inline int qs_earlier(uint64_t ka, uint64_t sa, uint64_t kb, uint64_t sb)
{
    return ka < kb || (ka == kb && sa < sb);
}

/* qs_fcfs -- the earliest submission among cand[] for which `want`
 * holds (want: 0 any, 1 flushes only); n if none. */
static size_t qs_fcfs(const struct qs_cand *cand, size_t n, int flushes_only)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        if (flushes_only && cand[i].op != UBJ_REQ_FLUSH)
            continue;
        if (best == n || cand[i].seq < cand[best].seq)
            best = i;
    }
    return best;
}

/* qs_clook -- C-LOOK over the positional candidates (a ready flush goes
 * first). */
static size_t qs_clook(const struct qs_ctx *c, const struct qs_cand *cand, size_t n)
{
    size_t fl = qs_fcfs(cand, n, 1);
    if (fl < n)
        return fl;
    size_t up = n, low = n;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = cand[i].blkno, s = cand[i].seq;
        if (low == n || qs_earlier(b, s, cand[low].blkno, cand[low].seq))
            low = i;
        if (b >= c->head &&
            (up == n || qs_earlier(b, s, cand[up].blkno, cand[up].seq)))
            up = i;
    }
    return up < n ? up : low;
}

/* qs_sptf -- the shortest estimated positioning time (a ready flush goes
 * first); C-LOOK if the model cannot estimate. */
static size_t qs_sptf(const struct qs_ctx *c, const struct qs_cand *cand, size_t n)
{
    size_t fl = qs_fcfs(cand, n, 1);
    if (fl < n)
        return fl;
    size_t best = n;
    uint64_t best_ns = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t ns;
        if (c->model == NULL ||
            ubj_model_position_ns(c->model, (enum ubj_req_op)cand[i].op,
                                  cand[i].flags, cand[i].blkno, cand[i].count,
                                  c->t, &ns) < 0)
            return qs_clook(c, cand, n);
        if (best == n || qs_earlier(ns, cand[i].seq, best_ns, cand[best].seq)) {
            best = i;
            best_ns = ns;
        }
    }
    return best;
}

/* qs_pick -- dispatch which candidate next. */
size_t qs_pick(const struct qs_ctx *c, const struct qs_cand *cand, size_t n)
{
    if (n <= 1)
        return 0;
    if (c->sched == UBJ_SCHED_CLOOK)
        return qs_clook(c, cand, n);
    if (c->sched == UBJ_SCHED_SPTF)
        return qs_sptf(c, cand, n);
    return qs_fcfs(cand, n, 0);
}

/* qs_sched_parse -- a scheduler by name. */
int qs_sched_parse(const char *name, size_t len)
{
    for (size_t i = 0; i < QS_NSCHED; i++)
        if (strlen(qs_names[i]) == len && strncmp(qs_names[i], name, len) == 0)
            return (int)i;
    return -EINVAL;
}

/* qs_sched_name -- a scheduler's name. */
const char *qs_sched_name(uint32_t sched)
{
    return sched < QS_NSCHED ? qs_names[sched] : "?";
}
