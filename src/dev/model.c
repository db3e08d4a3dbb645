/*
 * model.c -- the framework shared by the timed device models: the block
 * device wrapper (ubj_model_create), arrival/queueing/service accounting,
 * modeled completion times, waiting until the device is idle, statistics
 * (log-scale histograms for percentiles) and energy.
 *
 * A request's life (model_submit, interface v2):
 *   1. t_arr = the clock's time when the request reaches the wrapper --
 *      or, when a queue above dispatched it (DEVF_QUEUED), its dispatch
 *      time, with its arrival at the queue kept for the statistics;
 *   2. the data goes to the lower device (the model never touches it);
 *      a request the lower device fails is returned as is, not modeled;
 *   3. under the device lock the model (kind->submit) computes t_start
 *      (>= t_arr: the queueing delay) and t_done, updates its state, and
 *      this file accounts the request;
 *   4. the request completes at once, carrying t_done as its modeled
 *      completion on the model's clock (DEVF_TIMED); whoever waits for it
 *      waits on the clock until then (ubj_bdev_wait, the v1 calls and
 *      the _crit calls at UBJ_CRIT_CRITICAL: src/dev/bdev.c,
 *      src/dev/req.c).  A request without UBJ_REQ_SYNC counts as
 *      asynchronous.
 * FUA: a write with FUA pays the profile's write-through cost (the model
 * kinds' submit: no write cache for it).
 *
 * Invariants (all [lock]):
 *  - arrivals handed to the model never decrease (last_arr);
 *  - busy_until = the latest t_done so far; busy_ns grows by the part of
 *    each request's [t_start, t_done] after busy_until (so busy time is
 *    the union of service intervals when requests start in order), plus
 *    the background work a model reports (bg_busy_ns);
 *  - energy_active_j = sum of the models' per-request energy plus
 *    power_w x busy ns added; idle energy is idle_w x (elapsed - busy),
 *    computed when the statistics are read;
 *  - the histograms count every accounted request (reads, writes and
 *    flushes) by service time and by response time.
 * The model device owns its lower device and one clock reference.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "dev/dev_int.h"
#include "dev/model_int.h"
#include "util/util.h"

#define MODEL_HIST_N (16u + 60u * UBJ_MODEL_HIST_SUB)   /* buckets */

struct model_dev {
    struct ubj_bdev base;           /* first: the handle callers hold */
    const struct model_kind *kind;
    void *impl;                     /* [lock] the model's state */
    struct ubj_clock *clock;        /* one reference held */
    double idle_w;                  /* W, from the profile */
    pthread_mutex_t lock;
    uint64_t t_reset;               /* [lock] clock time of create/reset */
    uint64_t last_arr;              /* [lock] latest arrival handed on */
    uint64_t busy_until;            /* [lock] latest completion so far */
    uint64_t nreq;                  /* [lock] requests accounted */
    uint64_t rsp_sum;               /* [lock] sum of response times, ns */
    struct ubj_model_stats st;      /* [lock] */
    uint64_t svc_hist[MODEL_HIST_N];/* [lock] service times */
    uint64_t rsp_hist[MODEL_HIST_N];/* [lock] response times */
};

/* ---- histograms ---------------------------------------------------------- */

/* model_hist_idx -- bucket of v ns: exact below 16, then 16 per octave. */
static unsigned model_hist_idx(uint64_t v)
{
    if (v < 16)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);    /* e >= 4 */
    unsigned m = (unsigned)((v >> (e - 4)) & 15u);
    return 16u + (e - 4u) * UBJ_MODEL_HIST_SUB + m;
}

/* model_hist_high -- the largest value that falls into bucket idx. */
static uint64_t model_hist_high(unsigned idx)
{
    if (idx < 16)
        return idx;
    unsigned e = (idx - 16u) / UBJ_MODEL_HIST_SUB + 4u;
    uint64_t m = (idx - 16u) % UBJ_MODEL_HIST_SUB;
    uint64_t low = (16u + m) << (e - 4u);
    return low + (1ull << (e - 4u)) - 1u;
}

/* model_hist_pct -- the pct-th percentile (bucket upper bound, clamped to
 * the largest sample) of a histogram of n samples. */
static uint64_t model_hist_pct(const uint64_t *h, uint64_t n, unsigned pct,
                               uint64_t max)
{
    if (n == 0)
        return 0;
    uint64_t want = (n * pct + 99u) / 100u, seen = 0;
    for (unsigned i = 0; i < MODEL_HIST_N; i++) {
        seen += h[i];
        if (seen >= want) {
            uint64_t v = model_hist_high(i);
            return v < max ? v : max;
        }
    }
    return max;
}

/* ---- the device ------------------------------------------------------------ */

/* the model's operation of each request operation (enum ubj_req_op) */
static const enum model_op model_ops_of[] = { MODEL_READ, MODEL_WRITE, MODEL_FLUSH };

/* model_of -- the model device embedding d. */
static inline struct model_dev *model_of(struct ubj_bdev *d)
{
    return (struct model_dev *)d;
}

/* model_account_locked -- add one timed request to the statistics. */
static void model_account_locked(struct model_dev *m, const struct model_req *r,
                                 bool async)
{
    struct ubj_model_stats *st = &m->st;
    uint64_t from = model_max(r->t_start, m->busy_until);
    uint64_t busy_add = r->t_done > from ? r->t_done - from : 0;
    uint64_t svc = r->t_done - r->t_start, rsp = r->t_done - r->t_queued;
    m->busy_until = model_max(m->busy_until, r->t_done);
    st->busy_ns += busy_add + r->bg_busy_ns;
    st->queue_ns += r->t_start - r->t_queued;
    st->service_ns += svc;
    st->service_max_ns = model_max(st->service_max_ns, svc);
    st->response_max_ns = model_max(st->response_max_ns, rsp);
    st->energy_active_j += r->energy_j + r->power_w * (double)busy_add * 1e-9;
    m->rsp_sum += rsp;
    m->nreq++;
    m->svc_hist[model_hist_idx(svc)]++;
    m->rsp_hist[model_hist_idx(rsp)]++;
    uint64_t bytes = (uint64_t)r->count * UBJ_BLOCK_SIZE;
    if (r->op == MODEL_READ) {
        st->reads++;
        st->bytes_read += bytes;
    } else if (r->op == MODEL_WRITE) {
        st->writes++;
        st->bytes_written += bytes;
    } else {
        st->flushes++;
    }
    if (async)
        st->async_requests++;
}

/* model_time -- model and account request q (lower I/O done) arriving
 * at t_arr, queued since t_queued. */
static int model_time(struct model_dev *m, struct ubj_req *q, uint64_t t_arr,
                      uint64_t t_queued)
{
    bool async = !(q->flags & UBJ_REQ_SYNC);
    struct model_req r = {
        .op = model_ops_of[q->op], .blkno = q->blkno, .count = q->count,
        .fua = q->op == UBJ_REQ_WRITE && dev_req_fua(q),
    };
    pthread_mutex_lock(&m->lock);
    m->last_arr = model_max(m->last_arr, t_arr);
    r.t_arr = m->last_arr;
    r.t_queued = (q->dev_flags_ & DEVF_QUEUED) ? t_queued : r.t_arr;
    int rc = m->kind->submit(m->impl, &r, &m->st);
    if (rc == 0)
        model_account_locked(m, &r, async);
    pthread_mutex_unlock(&m->lock);
    if (rc < 0)
        return rc;
    if (!(q->dev_flags_ & DEVF_QUEUED)) {
        q->t_arrive = r.t_arr;
        q->t_dispatch = r.t_start;
    }
    q->t_complete = r.t_done;
    q->t_cpu_ns = r.cpu_ns;
    q->clock = m->clock;
    q->dev_flags_ |= DEVF_TIMED;
    return 0;
}

/* model_submit -- the lower device does the I/O, then the model times it;
 * complete with the modeled completion time. */
static void model_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    struct model_dev *m = model_of(d);
    bool queued = (r->dev_flags_ & DEVF_QUEUED) != 0;
    uint64_t t_arr = queued ? r->t_dispatch : ubj_clock_now(m->clock);
    uint64_t t_queued = queued ? r->t_arrive : t_arr;
    int rc = ubj_bdev_forward(d->lower, r);
    if (rc == 0)
        rc = model_time(m, r, t_arr, t_queued);
    ubj_req_complete(r, rc);
}

/* model_destroy -- the model, its lower device, its clock reference. */
static void model_destroy(struct ubj_bdev *d)
{
    struct model_dev *m = model_of(d);
    ubj_bdev_destroy(d->lower);
    m->kind->destroy(m->impl);
    ubj_clock_put(m->clock);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

#define MODEL_OPS(kname) { .version = UBJ_BDEV_OPS_V2, .name = kname, \
    .destroy = model_destroy, .submit = model_submit }

static const struct ubj_bdev_ops model_ops[] = {
    MODEL_OPS("hdd"), MODEL_OPS("ssd"), MODEL_OPS("nand"),
};
static const struct model_kind *const model_kinds[] = {
    &model_hdd_kind, &model_ssd_kind, &model_nand_kind,
};
#define MODEL_NKINDS (sizeof model_kinds / sizeof model_kinds[0])

/* ubj_model_is_model -- 1 if d's ops are one of the model tables. */
int ubj_model_is_model(const struct ubj_bdev *d)
{
    return d != NULL && d->ops >= &model_ops[0] &&
           d->ops < &model_ops[MODEL_NKINDS];
}

/* ubj_model_find -- the topmost model device in the stack at d. */
struct ubj_bdev *ubj_model_find(struct ubj_bdev *d)
{
    while (d != NULL && !ubj_model_is_model(d))
        d = d->lower;
    return d;
}

/* ubj_model_clock -- d's clock, NULL if d is not a model. */
struct ubj_clock *ubj_model_clock(const struct ubj_bdev *d)
{
    return ubj_model_is_model(d) ? ((const struct model_dev *)d)->clock : NULL;
}

/* model_new -- allocate and fill the wrapper of a created model state. */
static int model_new(size_t ki, void *impl, double idle_w,
                     struct ubj_clock *clock, struct ubj_bdev *lower,
                     struct ubj_bdev **out)
{
    struct model_dev *m = calloc(1, sizeof *m);
    if (m == NULL)
        return ubj_set_error(-ENOMEM, "model: out of memory");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return ubj_set_error(-ENOMEM, "model: cannot create its mutex");
    }
    m->kind = model_kinds[ki];
    m->impl = impl;
    m->idle_w = idle_w;
    m->clock = clock;
    m->t_reset = ubj_clock_now(clock);
    m->last_arr = m->t_reset;
    m->busy_until = m->t_reset;
    dev_wrap_init(&m->base, &model_ops[ki], lower);
    *out = &m->base;
    return 0;
}

/* ubj_model_create -- wrap lower in a timed model of kind/profile. */
int ubj_model_create(const char *kind, const char *profile,
                     struct ubj_clock *clock, struct ubj_bdev *lower,
                     struct ubj_bdev **out)
{
    if (out == NULL || kind == NULL || profile == NULL || lower == NULL)
        return ubj_set_error(-EINVAL, "model: NULL argument");
    *out = NULL;
    size_t ki = 0;
    while (ki < MODEL_NKINDS && strcmp(model_kinds[ki]->name, kind) != 0)
        ki++;
    if (ki == MODEL_NKINDS)
        return ubj_set_error(-EINVAL, "model: unknown kind \"%s\" (hdd, ssd, "
                             "nand)", kind);
    if (lower->block_size != UBJ_BLOCK_SIZE)
        return ubj_set_error(-EINVAL, "model: lower device has %u-byte blocks",
                             lower->block_size);
    struct prof *p;
    int rc = prof_load(kind, profile, &p);
    if (rc < 0)
        return rc;
    void *impl = NULL;
    double idle_w = 0;
    rc = model_kinds[ki]->create(p, lower->nblocks, &impl, &idle_w);
    prof_free(p);
    if (rc < 0)
        return rc;
    struct ubj_clock *c = clock != NULL ? ubj_clock_get(clock) : NULL;
    if (c == NULL && (rc = ubj_clock_create(UBJ_CLOCK_VIRTUAL, &c)) < 0) {
        model_kinds[ki]->destroy(impl);
        return rc;
    }
    rc = model_new(ki, impl, idle_w, c, lower, out);
    if (rc < 0) {
        model_kinds[ki]->destroy(impl);
        ubj_clock_put(c);
    }
    return rc;
}

/* ubj_model_position_ns -- the model kind's positioning estimate. */
int ubj_model_position_ns(struct ubj_bdev *d, enum ubj_req_op op, uint32_t flags,
                          uint64_t blkno, uint32_t count, uint64_t t_ns,
                          uint64_t *out_ns)
{
    if (!ubj_model_is_model(d) || out_ns == NULL || (uint32_t)op > UBJ_REQ_FLUSH ||
        (op != UBJ_REQ_FLUSH && (count == 0 || count > d->nblocks ||
                                 blkno > d->nblocks - count)))
        return ubj_set_error(-EINVAL, "model position: not a model device, "
                             "or a bad request");
    struct model_dev *m = model_of(d);
    if (m->kind->position == NULL)
        return ubj_set_error(-EOPNOTSUPP, "model position: %s has no "
                             "positioning estimate", m->kind->name);
    struct model_req r = { .op = model_ops_of[op], .blkno = blkno, .count = count,
                           .fua = op == UBJ_REQ_WRITE && (flags & UBJ_REQ_FUA) };
    pthread_mutex_lock(&m->lock);
    int rc = m->kind->position(m->impl, &r, t_ns, out_ns);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* ubj_model_slots -- requests the model serves at once (0: any number). */
uint32_t ubj_model_slots(const struct ubj_bdev *d)
{
    return ubj_model_is_model(d) ? ((const struct model_dev *)d)->kind->slots : 0;
}

/* ubj_model_wait_idle -- wait until d has finished all queued work. */
int ubj_model_wait_idle(struct ubj_bdev *d)
{
    if (!ubj_model_is_model(d))
        return ubj_set_error(-EINVAL, "model wait: not a model device");
    struct model_dev *m = model_of(d);
    pthread_mutex_lock(&m->lock);
    uint64_t t = model_max(m->kind->idle_at(m->impl), m->busy_until);
    pthread_mutex_unlock(&m->lock);
    ubj_clock_wait_until(m->clock, t);
    return 0;
}

/* ubj_model_stats_get -- snapshot with means, percentiles and energy. */
int ubj_model_stats_get(struct ubj_bdev *d, struct ubj_model_stats *out)
{
    if (!ubj_model_is_model(d) || out == NULL)
        return ubj_set_error(-EINVAL, "model stats: not a model device");
    struct model_dev *m = model_of(d);
    uint64_t now = ubj_clock_now(m->clock);
    pthread_mutex_lock(&m->lock);
    *out = m->st;
    out->elapsed_ns = now > m->t_reset ? now - m->t_reset : 0;
    if (m->nreq > 0) {
        out->service_mean_ns = out->service_ns / m->nreq;
        out->response_mean_ns = m->rsp_sum / m->nreq;
        out->service_p99_ns = model_hist_pct(m->svc_hist, m->nreq, 99,
                                             out->service_max_ns);
        out->response_p99_ns = model_hist_pct(m->rsp_hist, m->nreq, 99,
                                              out->response_max_ns);
    }
    if (m->kind->fill != NULL)
        m->kind->fill(m->impl, out);
    pthread_mutex_unlock(&m->lock);
    uint64_t idle = out->elapsed_ns > out->busy_ns ?
                    out->elapsed_ns - out->busy_ns : 0;
    out->energy_idle_j = m->idle_w * (double)idle * 1e-9;
    out->energy_j = out->energy_active_j + out->energy_idle_j;
    return 0;
}

/* ubj_model_stats_reset -- zero the statistics, restart elapsed time. */
int ubj_model_stats_reset(struct ubj_bdev *d)
{
    if (!ubj_model_is_model(d))
        return ubj_set_error(-EINVAL, "model stats: not a model device");
    struct model_dev *m = model_of(d);
    uint64_t now = ubj_clock_now(m->clock);
    pthread_mutex_lock(&m->lock);
    memset(&m->st, 0, sizeof m->st);
    memset(m->svc_hist, 0, sizeof m->svc_hist);
    memset(m->rsp_hist, 0, sizeof m->rsp_hist);
    m->nreq = 0;
    m->rsp_sum = 0;
    m->t_reset = now;
    m->busy_until = model_max(m->busy_until, now);
    pthread_mutex_unlock(&m->lock);
    return 0;
}

/* ubj_model_check -- the model's invariant check, if it has one. */
int ubj_model_check(struct ubj_bdev *d)
{
    if (!ubj_model_is_model(d))
        return ubj_set_error(-EINVAL, "model check: not a model device");
    struct model_dev *m = model_of(d);
    int rc = 0;
    pthread_mutex_lock(&m->lock);
    if (m->kind->check != NULL)
        rc = m->kind->check(m->impl);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* ubj_model_read_cost -- the read cost the stack's model declares. */
int ubj_model_read_cost(struct ubj_bdev *d, uint64_t gap, struct ubj_model_rcost *out)
{
    if (d == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "model read cost: NULL argument");
    struct ubj_bdev *md = ubj_model_find(d);
    if (md == NULL || model_of(md)->kind->read_cost == NULL)
        return ubj_set_error(-EOPNOTSUPP, "model read cost: no model declares one");
    *out = (struct ubj_model_rcost){ 0 };
    model_of(md)->kind->read_cost(model_of(md)->impl, gap, out);
    return 0;
}
