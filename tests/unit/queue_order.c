/*
 * tests/unit/queue_order.c -- what the request queue (src/dev/queue.c)
 * promises about order and data, checked from below: a logging device
 * under the queue records every request the queue dispatches (which
 * request, FUA or not, when it began and ended), and a checker proves
 * that no completion broke a constraint.
 *
 *  - property: random submissions (reads, writes, flushes over a few
 *    overlapping blocks; FUA; no tag, barriers, after-lists of random
 *    earlier requests; random classes and raises; callbacks or waits;
 *    time passing) on the virtual clock over an HDD and an SSD model with
 *    each scheduler, and on the real clock inline and threaded; seeded,
 *    and on the virtual clock deterministic (two runs log the same).
 *    The checker: every request completes once, successfully; a read
 *    returns exactly the latest write submitted before it; conflicting
 *    requests, barriers and after-lists end before what follows them
 *    begins; a write that follows a non-FUA write (a barrier, an after
 *    list) begins only after a flush that began after that write ended
 *    has ended -- the log device declares a volatile cache.
 *  - stale reads: a read covered by a queued write is served from it at
 *    once; one partly covered waits for the writes (C-LOOK would put it
 *    first); an unrelated read overtakes queued writes.
 *  - FUA in the recorder's crash states, directly and below a queue
 *    (barrier: flush, then the write with FUA).
 */
#include "testutil.h"
#include <pthread.h>
#include <unistd.h>
#include "dev/dev_int.h"
#include "ubjfs/model.h"
#include "ubjfs/queue.h"

#define BS UBJ_BLOCK_SIZE
#define DEVBLK 32u
#define SPAN 24u           /* requests touch blocks [0, SPAN + 3) */
#define MAXREQ 400u
#define MAXLOG (2 * MAXREQ)

/* ---- the logging device ---------------------------------------------------- */

struct logent {
    uint32_t pid;            /* the request's id; 0: the queue's own flush */
    uint32_t op;
    bool fua;
    uint64_t blkno;
    uint32_t count;
    uint64_t begin, end;     /* virtual ns, or a global event counter */
};

struct logdev {
    struct ubj_bdev base;
    pthread_mutex_t lock;
    bool virt;               /* times from the requests, else a counter */
    uint64_t counter;        /* [atomic] */
    struct logent ent[MAXLOG];
    uint32_t n;              /* [lock] */
};

/* log_tick -- the next event number. */
static uint64_t log_tick(struct logdev *l)
{
    return __atomic_add_fetch(&l->counter, 1, __ATOMIC_SEQ_CST);
}

/* log_submit -- note the request, forward it, note its end. */
static void log_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    struct logdev *l = (struct logdev *)d;
    pthread_mutex_lock(&l->lock);
    assert_true(l->n < MAXLOG);
    struct logent *e = &l->ent[l->n++];
    pthread_mutex_unlock(&l->lock);
    *e = (struct logent){ .pid = r->pid, .op = r->op, .blkno = r->blkno,
                          .count = r->count,
                          .fua = r->op == UBJ_REQ_WRITE && dev_req_fua(r) };
    e->begin = l->virt ? r->t_dispatch : log_tick(l);
    int rc = ubj_bdev_forward(d->lower, r);
    e->end = l->virt ? r->t_complete : log_tick(l);
    ubj_req_complete(r, rc);
}

/* log_destroy -- the lower device, then the log. */
static void log_destroy(struct ubj_bdev *d)
{
    struct logdev *l = (struct logdev *)d;
    ubj_bdev_destroy(d->lower);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static const struct ubj_bdev_ops log_ops = {
    .version = UBJ_BDEV_OPS_V2, .name = "log",
    .destroy = log_destroy, .submit = log_submit,
};

/* log_create -- a logging device over lower, declaring a volatile cache. */
static struct logdev *log_create(struct ubj_bdev *lower, bool virt)
{
    struct logdev *l = calloc(1, sizeof *l);
    assert_non_null(l);
    pthread_mutex_init(&l->lock, NULL);
    l->virt = virt;
    l->base.ops = &log_ops;
    l->base.block_size = BS;
    l->base.nblocks = lower->nblocks;
    l->base.guarantees = lower->guarantees | UBJ_BDEV_VOLATILE_CACHE;
    l->base.lower = lower;
    return l;
}

/* stack -- "queue:QARGS" over a log over the stack `below`. */
static struct ubj_bdev *stack(const char *qargs, const char *below, bool virt,
                              struct logdev **logp)
{
    struct ubj_spec_opts o = { .nblocks = DEVBLK };
    struct ubj_bdev *low, *q;
    assert_int_equal(ubj_bdev_open_spec(below, NULL, &o, &low), 0);
    struct logdev *l = log_create(low, virt);
    char spec[128];
    snprintf(spec, sizeof spec, "queue:%s", qargs);
    int rc = ubj_bdev_open_spec(spec, &l->base, &o, &q);
    if (rc != 0)
        fail_msg("%s: %d %s", spec, rc, ubj_errormsg());
    *logp = l;
    return q;
}

/* ---- the property test ------------------------------------------------------ */

/* pat -- the byte request `id` writes at byte i of block blk. */
static inline unsigned char pat(uint32_t id, uint64_t blk, size_t i)
{
    return (unsigned char)(id * 131u + blk * 29u + i * 7u + (i >> 8));
}

struct tq {
    struct ubj_req r;
    uint32_t id;
    uint32_t expect[3];      /* reads: the writer of each block (0: none) */
    struct ubj_req *after[3];
    uint32_t after_id[3];
    int calls;
    bool waited;
    unsigned char buf[3 * BS];
};

struct world {
    struct tq q[MAXREQ];
    uint32_t n;
    uint32_t writer[DEVBLK]; /* the latest write submitted to each block */
};

/* tq_done -- a callback: count it. */
static void tq_done(struct ubj_req *r)
{
    struct tq *t = r->priv;
    __atomic_add_fetch(&t->calls, 1, __ATOMIC_SEQ_CST);
}

/* gen_one -- request number i (id i + 1) of the random workload. */
static void gen_one(struct world *w, struct tprng *g, uint32_t i)
{
    struct tq *t = &w->q[i];
    memset(t, 0, sizeof *t);
    t->id = i + 1;
    uint64_t x = tprng_below(g, 100);
    uint32_t op = x < 45 ? UBJ_REQ_WRITE : x < 92 ? UBJ_REQ_READ : UBJ_REQ_FLUSH;
    uint64_t blk = tprng_below(g, SPAN);
    uint32_t cnt = op == UBJ_REQ_FLUSH ? 0 : 1 + (uint32_t)tprng_below(g, 3);
    ubj_req_init(&t->r, op, op == UBJ_REQ_FLUSH ? 0 : blk, cnt,
                 op == UBJ_REQ_FLUSH ? NULL : t->buf);
    t->r.pid = t->id;
    t->r.crit = (uint32_t)tprng_below(g, UBJ_CRIT_CLASSES);
    t->r.deadline_ns = tprng_below(g, 20000000);
    if (op == UBJ_REQ_WRITE && tprng_below(g, 4) == 0)
        t->r.flags = UBJ_REQ_FUA;
    x = tprng_below(g, 100);
    if (x < 10) {
        t->r.order = UBJ_ORDER_BARRIER;
    } else if (x < 30 && i > 0) {
        uint32_t k = 1 + (uint32_t)tprng_below(g, 3);
        for (uint32_t j = 0; j < k; j++) {
            uint32_t a = (uint32_t)tprng_below(g, i);
            t->after[j] = &w->q[a].r;
            t->after_id[j] = a + 1;
        }
        t->r.order = UBJ_ORDER_AFTER;
        t->r.after = t->after;
        t->r.nafter = k;
    }
    for (uint32_t b = 0; b < cnt; b++) {
        if (op == UBJ_REQ_WRITE) {
            for (size_t k = 0; k < BS; k++)
                t->buf[b * BS + k] = pat(t->id, blk + b, k);
            w->writer[blk + b] = t->id;
        } else {
            t->expect[b] = w->writer[blk + b];
        }
    }
    t->waited = tprng_below(g, 5) == 0;
    if (!t->waited) {
        t->r.done = tq_done;
        t->r.priv = t;
    }
}

/* run_random -- submit n random requests to d (seed), with raises, waits
 * and time passing; then drain. */
static void run_random(struct ubj_bdev *d, struct world *w, uint64_t seed, uint32_t n)
{
    struct tprng g;
    tprng_seed(&g, seed);
    memset(w->writer, 0, sizeof w->writer);
    w->n = n;
    struct ubj_bdev *m = ubj_model_find(d);
    struct ubj_clock *c = m != NULL ? ubj_model_clock(m) : NULL;
    bool virt = c != NULL && ubj_clock_kind(c) == UBJ_CLOCK_VIRTUAL;
    for (uint32_t i = 0; i < n; i++) {
        gen_one(w, &g, i);
        assert_int_equal(ubj_bdev_submit(d, &w->q[i].r), 0);
        uint64_t x = tprng_below(&g, 100);
        uint32_t a = (uint32_t)tprng_below(&g, i + 1);
        if (x < 10)
            (void)ubj_bdev_raise(d, &w->q[a].r, UBJ_CRIT_CRITICAL, 0);
        else if (x < 20 && w->q[a].waited)
            assert_int_equal(ubj_bdev_wait(d, &w->q[a].r), 0);
        else if (x < 40 && virt)
            ubj_clock_advance(c, tprng_below(&g, 3000000));
    }
    assert_int_equal(ubj_bdev_drain(d), 0);
    for (uint32_t i = 0; i < n; i++)
        if (w->q[i].waited)
            assert_int_equal(ubj_bdev_wait(d, &w->q[i].r), 0);
}

/* check_data -- every request done once, OK; reads hold their writers. */
static void check_data(const struct world *w)
{
    for (uint32_t i = 0; i < w->n; i++) {
        const struct tq *t = &w->q[i];
        assert_int_equal(t->r.state, UBJ_REQ_DONE);
        assert_int_equal(t->r.result, 0);
        assert_int_equal(t->calls, t->waited ? 0 : 1);
        if (t->r.op != UBJ_REQ_READ)
            continue;
        for (uint32_t b = 0; b < t->r.count; b++)
            for (size_t k = 0; k < BS; k++) {
                unsigned char want = t->expect[b] ? pat(t->expect[b], t->r.blkno + b, k) : 0;
                if (t->buf[b * BS + k] != want)
                    fail_msg("read %u block %llu: byte %zu is %u, want %u (writer %u)",
                             t->id, (unsigned long long)(t->r.blkno + b), k,
                             t->buf[b * BS + k], want, t->expect[b]);
            }
    }
}

/* flushed_between -- a flush began after `a` ended and ended before `b` began. */
static bool flushed_between(const struct logdev *l, const struct logent *a,
                            const struct logent *b)
{
    for (uint32_t k = 0; k < l->n; k++)
        if (l->ent[k].op == UBJ_REQ_FLUSH && l->ent[k].begin >= a->end &&
            l->ent[k].end <= b->begin)
            return true;
    return false;
}

/* follows -- does request j (later) follow i by a tag? */
static bool follows(const struct world *w, uint32_t i, uint32_t j)
{
    const struct tq *tj = &w->q[j];
    if (tj->r.order == UBJ_ORDER_BARRIER || w->q[i].r.order == UBJ_ORDER_BARRIER)
        return true;
    for (uint32_t k = 0; k < tj->r.nafter; k++)
        if (tj->after_id[k] == i + 1)
            return true;
    return false;
}

/* check_pair -- the constraints between logged requests i < j. */
static void check_pair(const struct world *w, const struct logdev *l,
                       const struct logent *ei, const struct logent *ej,
                       uint32_t i, uint32_t j)
{
    const struct ubj_req *ri = &w->q[i].r, *rj = &w->q[j].r;
    bool tag = follows(w, i, j);
    bool conflict = ri->op != UBJ_REQ_FLUSH && rj->op != UBJ_REQ_FLUSH &&
        (ri->op == UBJ_REQ_WRITE || rj->op == UBJ_REQ_WRITE) &&
        ri->blkno < rj->blkno + rj->count && rj->blkno < ri->blkno + ri->count;
    if ((tag || conflict) && ei->end > ej->begin)
        fail_msg("request %u (%s) began at %llu before %u ended at %llu", j + 1,
                 tag ? "tagged" : "conflicting", (unsigned long long)ej->begin,
                 i + 1, (unsigned long long)ei->end);
    if (tag && ri->op == UBJ_REQ_WRITE && rj->op == UBJ_REQ_WRITE && !ei->fua &&
        !flushed_between(l, ei, ej))
        fail_msg("write %u follows write %u (no FUA) with no flush between", j + 1,
                 i + 1);
}

/* check_log -- each request logged once (reads: at most), the pairs. */
static void check_log(const struct world *w, const struct logdev *l,
                      uint64_t forwarded)
{
    static const struct logent *at[MAXREQ];
    memset(at, 0, sizeof at);
    for (uint32_t k = 0; k < l->n; k++) {
        const struct logent *e = &l->ent[k];
        assert_true(e->begin <= e->end);
        if (e->pid == 0) {
            assert_int_equal(e->op, UBJ_REQ_FLUSH);
            continue;
        }
        assert_true(e->pid <= w->n);
        assert_null(at[e->pid - 1]);
        at[e->pid - 1] = e;
    }
    uint64_t missing = 0;
    for (uint32_t i = 0; i < w->n; i++)
        if (at[i] == NULL) {
            assert_int_equal(w->q[i].r.op, UBJ_REQ_READ);
            missing++;
        }
    assert_int_equal(missing, forwarded);
    for (uint32_t j = 0; j < w->n; j++)
        for (uint32_t i = 0; i < j && at[j] != NULL; i++)
            if (at[i] != NULL)
                check_pair(w, l, at[i], at[j], i, j);
}

static struct world worlds[2];

/* one_run -- a stack, a seeded workload, the checks; the log's pids and
 * times into out (for determinism) if not NULL. */
static void one_run(const char *qargs, const char *below, bool virt, uint64_t seed,
                    uint32_t n, struct world *w, struct logent *out, uint32_t *nout)
{
    struct logdev *l;
    struct ubj_bdev *d = stack(qargs, below, virt, &l);
    run_random(d, w, seed, n);
    struct ubj_queue_stats st;
    assert_int_equal(ubj_queue_stats_get(d, &st), 0);
    assert_int_equal(st.submitted, n);
    assert_int_equal(st.completed, n);
    check_data(w);
    check_log(w, l, st.forwarded);
    if (out != NULL) {
        memcpy(out, l->ent, l->n * sizeof *out);
        *nout = l->n;
    }
    ubj_bdev_destroy(d);
}

static const struct { const char *qargs, *below; bool virt; } configs[] = {
    { "fcfs", "hdd:hp_c2249a@ram", true },
    { "clook", "hdd:hp_c2249a@ram", true },
    { "sptf,depth=16", "hdd:modern7200@ram", true },
    { "sptf", "ssd:sata@ram", true },
    { "clook,depth=8", "nand:slc@ram", true },
    { "clook", "ram", false },
    { "sptf,dispatch=thread", "ram", false },
    { "fcfs,slots=4,dispatch=thread", "ssd:nvme,clock=real@ram", false },
};

/* test_property -- every configuration, several seeds. */
static void test_property(void **state)
{
    (void)state;
    uint64_t base = tprng_env_seed("UBJ_QUEUE_SEED", 1);
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (uint64_t s = 0; s < 12; s++)
            one_run(configs[c].qargs, configs[c].below, configs[c].virt,
                    base + s * 7919 + c, 300, &worlds[0], NULL, NULL);
}

/* test_deterministic -- on the virtual clock one seed logs the same. */
static void test_deterministic(void **state)
{
    (void)state;
    static struct logent a[MAXLOG], b[MAXLOG];
    uint32_t na, nb;
    for (size_t c = 0; c < 5; c++) {
        one_run(configs[c].qargs, configs[c].below, true, 42, 300, &worlds[0], a, &na);
        one_run(configs[c].qargs, configs[c].below, true, 42, 300, &worlds[1], b, &nb);
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na * sizeof a[0]);
    }
}

/* ---- stale reads -------------------------------------------------------------- */

static unsigned char p1[4 * BS], p2[BS], rb[3][2 * BS];

/* test_stale_reads -- see the top comment; over the bare HDD, C-LOOK. */
static void test_stale_reads(void **state)
{
    (void)state;
    struct logdev *l;
    struct ubj_bdev *d = stack("clook", "hdd:hp_c2249a,overhead_read_ms=0,"
                               "overhead_write_ms=0,bus_mb_s=0,readahead_sectors=0@ram",
                               true, &l);
    memset(p1, 1, sizeof p1);
    memset(p2, 2, sizeof p2);
    struct ubj_req a, w1, w2, r1, r2, r3;
    ubj_req_init(&a, UBJ_REQ_READ, 0, 1, rb[0]);           /* keeps the disk busy */
    assert_int_equal(ubj_bdev_submit(d, &a), 0);
    ubj_clock_advance(ubj_model_clock(ubj_model_find(d)), 1);
    ubj_req_init(&w1, UBJ_REQ_WRITE, 10, 4, p1);           /* blocks 10-13 */
    assert_int_equal(ubj_bdev_submit(d, &w1), 0);
    ubj_req_init(&r1, UBJ_REQ_READ, 11, 1, rb[0]);         /* covered by w1 */
    assert_int_equal(ubj_bdev_submit(d, &r1), 0);
    assert_int_equal(r1.state, UBJ_REQ_DONE);              /* served at once */
    assert_int_equal(r1.t_complete, 1);
    assert_memory_equal(rb[0], p1, BS);
    ubj_req_init(&w2, UBJ_REQ_WRITE, 12, 1, p2);
    assert_int_equal(ubj_bdev_submit(d, &w2), 0);
    ubj_req_init(&r2, UBJ_REQ_READ, 11, 2, rb[1]);         /* w1 and w2 */
    assert_int_equal(ubj_bdev_submit(d, &r2), 0);
    ubj_req_init(&r3, UBJ_REQ_READ, 5, 1, rb[2]);          /* unrelated */
    assert_int_equal(ubj_bdev_submit(d, &r3), 0);
    assert_int_equal(ubj_bdev_drain(d), 0);
    assert_int_equal(ubj_bdev_wait(d, &r2), 0);
    assert_memory_equal(rb[1], p1, BS);                    /* block 11 from w1 */
    assert_memory_equal(rb[1] + BS, p2, BS);               /* block 12 from w2 */
    assert_true(r2.t_dispatch >= w1.t_complete);
    assert_true(r2.t_dispatch >= w2.t_complete);
    assert_true(r3.t_dispatch < w1.t_dispatch);            /* overtook the writes */
    struct ubj_queue_stats st;
    assert_int_equal(ubj_queue_stats_get(d, &st), 0);
    assert_int_equal(st.forwarded, 1);
    ubj_bdev_destroy(d);
}

/* ---- FUA in crash states ------------------------------------------------------ */

/* image_block -- block b of the crash image of rec's epoch k under ch. */
static unsigned char image_byte(struct ubj_bdev *rec, uint64_t k,
                                const struct ubj_rec_choice *ch, uint64_t n,
                                uint64_t blk)
{
    struct ubj_bdev *img;
    unsigned char buf[BS];
    assert_int_equal(ubj_bdev_ram_create(rec->nblocks, &img), 0);
    assert_int_equal(ubj_bdev_record_crash(rec, k, ch, n, img), 0);
    assert_int_equal(ubj_bdev_read(img, blk, 1, buf), 0);
    ubj_bdev_destroy(img);
    return buf[0];
}

/* test_record_fua -- writes A, B (FUA), C in one epoch: an image that
 * keeps C keeps B whole; one that keeps nothing after B may lose it. */
static void test_record_fua(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *rec;
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    assert_int_equal(ubj_bdev_record_create(ram, &rec), 0);
    unsigned char b[BS];
    struct ubj_req r;
    for (int i = 0; i < 3; i++) {
        memset(b, 'A' + i, BS);
        ubj_req_init(&r, UBJ_REQ_WRITE, (uint64_t)i, 1, b);
        r.flags = i == 1 ? UBJ_REQ_FUA : 0;
        assert_int_equal(ubj_bdev_submit_wait(rec, &r), 0);
    }
    assert_int_equal(ubj_bdev_record_write_fua(rec, 0), 0);
    assert_int_equal(ubj_bdev_record_write_fua(rec, 1), 1);
    assert_int_equal(ubj_bdev_record_write_fua(rec, 3), -EINVAL);
    const struct ubj_rec_choice drop = { UBJ_REC_DROP, 0, 0 }, whole = { UBJ_REC_WHOLE, 0, 0 };
    struct ubj_rec_choice c1[3] = { drop, drop, whole };
    assert_int_equal(image_byte(rec, 0, c1, 3, 1), 'B');   /* FUA then C kept */
    assert_int_equal(image_byte(rec, 0, c1, 3, 0), 0);     /* A never forced */
    struct ubj_rec_choice c2[3] = { whole, drop, drop };
    assert_int_equal(image_byte(rec, 0, c2, 3, 1), 0);     /* cut before B ended */
    struct ubj_rec_choice c3[3] = { drop, drop, { UBJ_REC_PREFIX, 1, 0 } };
    assert_int_equal(image_byte(rec, 0, c3, 3, 1), 'B');   /* part of C: after B */
    ubj_bdev_destroy(rec);
}

/* test_queue_durability -- a queue over a recorder over a file (a
 * volatile cache): W, a barrier write B, and X ordered after W reach the
 * recorder as W, flush, B with FUA, X; so every crash image that keeps X
 * keeps B, and W is durable before B. */
static void test_queue_durability(void **state)
{
    (void)state;
    char path[4096];
    assert_int_equal(t_tmpfile(path, sizeof path, "qdur"), 0);
    struct ubj_bdev *f, *rec, *q;
    assert_int_equal(ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, 16 * BS, &f), 0);
    assert_int_equal(ubj_bdev_record_create(f, &rec), 0);
    assert_int_equal(ubj_bdev_open_spec("queue:clook,dispatch=thread", rec, NULL, &q), 0);
    unsigned char bw[BS], bb[BS], bx[BS];
    memset(bw, 'W', BS);
    memset(bb, 'B', BS);
    memset(bx, 'X', BS);
    struct ubj_req w, b, x;
    ubj_req_init(&w, UBJ_REQ_WRITE, 9, 1, bw);
    assert_int_equal(ubj_bdev_submit(q, &w), 0);
    ubj_req_init(&b, UBJ_REQ_WRITE, 3, 1, bb);
    b.order = UBJ_ORDER_BARRIER;
    assert_int_equal(ubj_bdev_submit(q, &b), 0);
    struct ubj_req *const after[] = { &w };
    ubj_req_init(&x, UBJ_REQ_WRITE, 1, 1, bx);
    x.order = UBJ_ORDER_AFTER;
    x.after = after;
    x.nafter = 1;
    assert_int_equal(ubj_bdev_submit(q, &x), 0);
    assert_int_equal(ubj_bdev_drain(q), 0);
    assert_int_equal(ubj_bdev_record_writes(rec), 3);
    assert_int_equal(ubj_bdev_record_flushes(rec), 1);
    uint64_t first, n, blk;
    assert_int_equal(ubj_bdev_record_epoch(rec, 0, &first, &n), 0);
    assert_int_equal(n, 1);                                /* W, then the flush */
    assert_int_equal(ubj_bdev_record_write_info(rec, 0, &blk, NULL, NULL), 0);
    assert_int_equal(blk, 9);
    assert_int_equal(ubj_bdev_record_write_info(rec, 1, &blk, NULL, NULL), 0);
    assert_int_equal(blk, 3);
    assert_int_equal(ubj_bdev_record_write_fua(rec, 1), 1);  /* B with FUA */
    const struct ubj_rec_choice keep_x[2] = { { UBJ_REC_DROP, 0, 0 },
                                              { UBJ_REC_WHOLE, 0, 0 } };
    assert_int_equal(image_byte(rec, 1, keep_x, 2, 9), 'W');
    assert_int_equal(image_byte(rec, 1, keep_x, 2, 3), 'B');
    assert_int_equal(image_byte(rec, 1, keep_x, 2, 1), 'X');
    struct ubj_queue_stats st;
    assert_int_equal(ubj_queue_stats_get(q, &st), 0);
    assert_int_equal(st.added_flushes, 1);
    assert_int_equal(st.added_fua, 1);
    ubj_bdev_destroy(q);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_property),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_stale_reads),
        cmocka_unit_test(test_record_fua),
        cmocka_unit_test(test_queue_durability),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
