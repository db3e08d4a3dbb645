/*
 * tests/unit/record_cut.c -- the write recorder's persistence models
 * (src/dev/record.c): the crash states each model allows, computed by
 * hand for small request sequences and compared with every state the
 * record's API can build; writes of several threads in flight at once
 * below the recorder; and an ordering guarantee proven below a C-LOOK
 * queue.
 *
 * A state is a bit mask over the sequence's writes: write i (to block i,
 * filled with 'A' + i) reached the medium.  The states a model allows are
 * collected as a set of masks (a bit set over them: STATE(m)).
 *
 * Sequences:
 *  - serial: A, B (FUA), C, flush, D, each waited for (events S C S C ...).
 *      volatile (epoch 0 = {A, B, C}, epoch 1 = {D} after the flush): any
 *      subset of epoch 0, except that keeping C keeps B (B was FUA and
 *      completed before C began): {} A B AB BC ABC, then ABC ABCD.
 *      write-through (one write in flight at a time): {} A AB ABC ABCD.
 *  - overlapping (modeled times from a scripted timed device below the
 *    recorder; [submission, completion)): W0 [0,10) W1 [2,5) W2 [6,12)
 *    W3 [12,14).  Completions: W1@5, W0@10, W2@12, W3@14.  Cuts (just
 *    before each completion):
 *      k=0: durable {},        in flight {W0, W1}: {} 0 1 01
 *      k=1: durable {1},       in flight {W0, W2}: 1 01 12 012
 *      k=2: durable {0,1},     in flight {W2} (W3 is submitted at 12,
 *           after the completion at 12):            01 012
 *      k=3: durable {0,1,2},   in flight {W3}:      012 0123
 *      k=4: everything.
 *    -> {} 0 1 01 12 012 0123.
 * Shown to fail (by editing src/dev/record.c, then restored): in-flight
 * writes never kept at a cut (rec_crash_cut_locked skipping the choices)
 * loses states 0 and 12 (test_overlap; and the torn write); a submission
 * ordered before a completion at the same time (rec_before returning
 * !ac) puts W3 in flight at k=2 (test_overlap) and lets the barrier
 * write below the queue be in flight with the write it follows
 * (test_barrier_below_queue); FUA ignored by the volatile model
 * (rec_last_kept returning `first`) adds C and AC (test_serial); modeled
 * times ignored (every key untimed) leaves nothing overlapping
 * (test_overlap, and no violation to find below the queue); the old
 * recorder's lock held across the lower write (a mutex around
 * rec_submit) never has two in flight (test_concurrent); writes not yet
 * submitted counted in flight (rec_inflight_locked without its
 * submission test) breaks every thread's program order
 * (test_concurrent) and the hand-computed sets.
 */
#include "testutil.h"
#include <pthread.h>
#include "dev/dev_int.h"
#include "ubjfs/model.h"
#include "ubjfs/queue.h"

#define BS UBJ_BLOCK_SIZE
#define NW_MAX 16u
#define STATE(m) (1ull << (m))

/* ---- a scripted timed device: times each write as the script says ------ */

struct scripted {
    struct ubj_bdev base;
    const uint64_t (*times)[2];   /* [submission, completion) per write */
    unsigned n, next;
    long sleep_ns;                /* or: untimed, each write takes this long */
};

/* sc_submit -- forward to RAM; a write gets the script's modeled times
 * (or takes sleep_ns of real time, untimed). */
static void sc_submit(struct ubj_bdev *d, struct ubj_req *q)
{
    struct scripted *s = (struct scripted *)d;
    if (q->op == UBJ_REQ_WRITE && s->sleep_ns)
        t_sleep_ns(s->sleep_ns);
    int rc = ubj_bdev_forward(d->lower, q);
    if (q->op == UBJ_REQ_WRITE && s->next < s->n) {
        q->t_dispatch = s->times[s->next][0];
        q->t_complete = s->times[s->next][1];
        q->dev_flags_ |= DEVF_TIMED;
        s->next++;
    }
    ubj_req_complete(q, rc);
}

/* sc_destroy -- free the device and its RAM. */
static void sc_destroy(struct ubj_bdev *d)
{
    ubj_bdev_destroy(d->lower);
    free(d);
}

static const struct ubj_bdev_ops sc_ops = {
    .version = UBJ_BDEV_OPS_V2, .name = "scripted", .destroy = sc_destroy,
    .submit = sc_submit,
};

/* ---- helpers ----------------------------------------------------------------- */

/* put_rc -- write block i (filled 'A' + i), FUA if asked, and wait;
 * the result (thread-safe: no cmocka assertion). */
static int put_rc(struct ubj_bdev *d, unsigned i, int fua)
{
    unsigned char b[BS];
    memset(b, 'A' + (int)i, BS);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_WRITE, i, 1, b);
    r.flags = fua ? UBJ_REQ_FUA : 0;
    return ubj_bdev_submit_wait(d, &r);
}

/* put -- put_rc, which must succeed. */
static void put(struct ubj_bdev *d, unsigned i, int fua)
{
    assert_int_equal(put_rc(d, i, fua), 0);
}

/* mask_of -- which of blocks 0..n-1 of img hold their write's data
 * (anything else must be the original zeros). */
static unsigned mask_of(struct ubj_bdev *img, unsigned n)
{
    unsigned char b[BS];
    unsigned m = 0;
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(ubj_bdev_read(img, i, 1, b), 0);
        if (b[0] == 'A' + (int)i)
            m |= 1u << i;
        else
            assert_int_equal(b[0], 0);
    }
    return m;
}

/* whole_or_drop -- choices keeping the writes of mask `m` whole. */
static void whole_or_drop(struct ubj_rec_choice *ch, uint64_t n, uint64_t m)
{
    for (uint64_t j = 0; j < n; j++)
        ch[j] = (struct ubj_rec_choice){ (m >> j) & 1 ? UBJ_REC_WHOLE : UBJ_REC_DROP,
                                         0, 0 };
}

enum model { VOLATILE, THROUGH };

/* each_state -- build every whole-or-dropped state `model` allows of
 * rec's record and call fn(img, ctx) on it; returns the most writes one
 * epoch (volatile) or cut (write-through) leaves open. */
static uint64_t each_state(struct ubj_bdev *rec, enum model model,
                           void (*fn)(struct ubj_bdev *img, void *ctx), void *ctx)
{
    struct ubj_bdev *img;
    struct ubj_rec_choice ch[NW_MAX];
    uint64_t in[NW_MAX], most = 0, n, first;
    uint64_t points = model == VOLATILE ? ubj_bdev_record_flushes(rec)
                                        : ubj_bdev_record_writes(rec);
    assert_int_equal(ubj_bdev_ram_create(rec->nblocks, &img), 0);
    for (uint64_t k = 0; k <= points; k++) {
        if (model == VOLATILE)
            assert_int_equal(ubj_bdev_record_epoch(rec, k, &first, &n), 0);
        else
            assert_int_equal(ubj_bdev_record_cut(rec, k, in, NW_MAX, &n), 0);
        assert_true(n <= NW_MAX);
        most = n > most ? n : most;
        for (uint64_t m = 0; m < (1ull << n); m++) {
            whole_or_drop(ch, n, m);
            assert_int_equal(model == VOLATILE ? ubj_bdev_record_crash(rec, k, ch, n, img)
                             : ubj_bdev_record_crash_cut(rec, k, ch, n, img), 0);
            fn(img, ctx);
        }
    }
    ubj_bdev_destroy(img);
    return most;
}

struct collect {
    unsigned nw;       /* blocks 0..nw-1 */
    uint64_t set;      /* the states seen */
};

/* collect_one -- add img's state to the set. */
static void collect_one(struct ubj_bdev *img, void *ctx)
{
    struct collect *c = ctx;
    c->set |= STATE(mask_of(img, c->nw));
}

/* states -- the set of states `model` allows; *most as each_state's. */
static uint64_t states(struct ubj_bdev *rec, enum model model, unsigned nw, uint64_t *most)
{
    struct collect c = { nw, 0 };
    uint64_t m = each_state(rec, model, collect_one, &c);
    if (most)
        *most = m;
    return c.set;
}

/* ---- the tests ---------------------------------------------------------------- */

/* test_serial -- A, B (FUA), C, flush, D, one at a time: the two models'
 * state sets as computed by hand (file comment). */
static void test_serial(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *rec;
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    assert_int_equal(ubj_bdev_record_create(ram, &rec), 0);
    put(rec, 0, 0);
    put(rec, 1, 1);
    put(rec, 2, 0);
    assert_int_equal(ubj_bdev_flush(rec), 0);
    put(rec, 3, 0);
    enum { A = 1, B = 2, C = 4, D = 8 };
    assert_int_equal(states(rec, VOLATILE, 4, NULL),
                     STATE(0) | STATE(A) | STATE(B) | STATE(A | B) | STATE(B | C) |
                     STATE(A | B | C) | STATE(A | B | C | D));
    uint64_t most;
    assert_int_equal(states(rec, THROUGH, 4, &most),
                     STATE(0) | STATE(A) | STATE(A | B) | STATE(A | B | C) |
                     STATE(A | B | C | D));
    assert_int_equal(most, 1);
    for (uint64_t j = 0; j < 4; j++)   /* untimed: completion = record order */
        assert_int_equal(ubj_bdev_record_durable(rec, j), (int64_t)j);
    ubj_bdev_destroy(rec);
}

/* test_overlap -- W0..W3 with the scripted modeled times of the file
 * comment: the cuts' in-flight lists and the union of their states. */
static void test_overlap(void **state)
{
    (void)state;
    static const uint64_t times[4][2] = { { 0, 10 }, { 2, 5 }, { 6, 12 }, { 12, 14 } };
    struct ubj_bdev *ram, *rec;
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    struct scripted *s = calloc(1, sizeof *s);
    assert_non_null(s);
    dev_wrap_init(&s->base, &sc_ops, ram);
    s->times = times;
    s->n = 4;
    assert_int_equal(ubj_bdev_record_create(&s->base, &rec), 0);
    for (unsigned i = 0; i < 4; i++)
        put(rec, i, 0);
    static const int64_t corder[4] = { 1, 0, 2, 3 };
    for (uint64_t j = 0; j < 4; j++)
        assert_int_equal(ubj_bdev_record_durable(rec, j), corder[j]);
    assert_int_equal(ubj_bdev_record_durable(rec, 4), -EINVAL);
    static const uint64_t want[5][2] = { { 0, 1 }, { 0, 2 }, { 2 }, { 3 }, { 0 } };
    static const uint64_t nwant[5] = { 2, 2, 1, 1, 0 };
    uint64_t in[NW_MAX], n;
    for (uint64_t k = 0; k <= 4; k++) {
        assert_int_equal(ubj_bdev_record_cut(rec, k, in, NW_MAX, &n), 0);
        assert_int_equal(n, nwant[k]);
        for (uint64_t j = 0; j < n; j++)
            assert_int_equal(in[j], want[k][j]);
    }
    assert_int_equal(ubj_bdev_record_cut(rec, 0, in, 1, &n), 0);   /* the first only */
    assert_int_equal(n, 2);
    assert_int_equal(in[0], 0);
    assert_int_equal(ubj_bdev_record_cut(rec, 5, in, NW_MAX, &n), -EINVAL);
    uint64_t most;
    assert_int_equal(states(rec, THROUGH, 4, &most),
                     STATE(0) | STATE(1) | STATE(2) | STATE(3) | STATE(6) | STATE(7) |
                     STATE(15));
    assert_int_equal(most, 2);
    ubj_bdev_destroy(rec);
}

#define NTHR 4u
#define PER_THR 3u

struct writer {
    struct ubj_bdev *rec;
    unsigned t;            /* thread t writes blocks t * PER_THR + 0..2 in order */
    int rc;                /* the first failure */
};

/* writer_main -- three writes, each waited for. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (unsigned j = 0; j < PER_THR && w->rc == 0; j++)
        w->rc = put_rc(w->rec, w->t * PER_THR + j, 0);
    return NULL;
}

struct program_order {
    unsigned bad;          /* states with a thread's write j but not j - 1 */
};

/* program_one -- count img if some thread's later write is there without
 * its earlier one. */
static void program_one(struct ubj_bdev *img, void *ctx)
{
    struct program_order *o = ctx;
    unsigned m = mask_of(img, NTHR * PER_THR);
    for (unsigned t = 0; t < NTHR; t++)
        for (unsigned j = 1; j < PER_THR; j++)
            if ((m >> (t * PER_THR + j) & 1) && !(m >> (t * PER_THR + j - 1) & 1)) {
                o->bad++;
                return;
            }
}

/* test_concurrent -- four threads write through the recorder at once
 * over a device whose writes take 2 ms each: the recorder holds no lock
 * across the lower write, so writes of different threads are in flight
 * together (a recorder serialising them never shows two); each thread
 * waits for each write, so under write-through no state has a thread's
 * later write without its earlier one. */
static void test_concurrent(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *rec;
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    struct scripted *s = calloc(1, sizeof *s);
    assert_non_null(s);
    dev_wrap_init(&s->base, &sc_ops, ram);
    s->sleep_ns = 2000000;
    assert_int_equal(ubj_bdev_record_create(&s->base, &rec), 0);
    pthread_t th[NTHR];
    struct writer w[NTHR];
    for (unsigned t = 0; t < NTHR; t++) {
        w[t] = (struct writer){ rec, t, 0 };
        assert_int_equal(pthread_create(&th[t], NULL, writer_main, &w[t]), 0);
    }
    for (unsigned t = 0; t < NTHR; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(w[t].rc, 0);
    }
    assert_int_equal(ubj_bdev_record_writes(rec), NTHR * PER_THR);
    struct program_order po = { 0 };
    uint64_t most = each_state(rec, THROUGH, program_one, &po);
    assert_true(most >= 2);
    assert_int_equal(po.bad, 0);
    ubj_bdev_destroy(rec);
}

/* test_torn_in_flight -- a write in flight at a cut may be torn: a prefix
 * of its sectors over the block's previous contents. */
static void test_torn_in_flight(void **state)
{
    (void)state;
    struct ubj_bdev *ram, *rec, *img;
    assert_int_equal(ubj_bdev_ram_create(16, &ram), 0);
    assert_int_equal(ubj_bdev_record_create(ram, &rec), 0);
    put(rec, 0, 0);
    assert_int_equal(ubj_bdev_ram_create(16, &img), 0);
    const struct ubj_rec_choice torn = { UBJ_REC_PREFIX, 3, 0 };
    assert_int_equal(ubj_bdev_record_crash_cut(rec, 0, &torn, 1, img), 0);
    unsigned char b[BS];
    assert_int_equal(ubj_bdev_read(img, 0, 1, b), 0);
    assert_int_equal(b[3 * 512 - 1], 'A');
    assert_int_equal(b[3 * 512], 0);
    assert_int_equal(ubj_bdev_record_crash_cut(rec, 2, NULL, 0, img), -EINVAL);
    assert_int_equal(ubj_bdev_record_crash_cut(ram, 0, NULL, 0, img), -EINVAL);
    ubj_bdev_destroy(img);
    ubj_bdev_destroy(rec);
}

struct order_check {
    uint64_t x;        /* the block written last */
    unsigned nw;       /* blocks 1..nw written before it */
    unsigned bad;      /* states with x but not all of them */
};

/* order_one -- count img if block x holds its write while one of blocks
 * 1..nw lacks its own (each written once: "holds" is a nonzero byte). */
static void order_one(struct ubj_bdev *img, void *ctx)
{
    struct order_check *o = ctx;
    unsigned char b[BS];
    assert_int_equal(ubj_bdev_read(img, o->x, 1, b), 0);
    for (unsigned i = 1; b[0] != 0 && i <= o->nw; i++) {
        unsigned char c[BS];
        assert_int_equal(ubj_bdev_read(img, i, 1, c), 0);
        if (c[0] == 0) {
            o->bad++;
            return;
        }
    }
}

/* run_below_queue -- a C-LOOK queue over the recorder over an SSD model
 * (virtual clock, any number of requests at the device at once): writes
 * to blocks 4, 3, 2, 1, then X to block 10 with tag `order`, submitted
 * together; returns the write-through states in which X survived but
 * one of blocks 1..4 did not. */
static unsigned run_below_queue(uint32_t order, uint64_t *most)
{
    struct ubj_spec_opts o = { .nblocks = 64 };
    struct ubj_bdev *ssd, *rec, *q;
    assert_int_equal(ubj_bdev_open_spec("ssd:sata", NULL, &o, &ssd), 0);
    assert_int_equal(ubj_bdev_record_create(ssd, &rec), 0);
    assert_int_equal(ubj_bdev_open_spec("queue:clook", rec, NULL, &q), 0);
    static unsigned char b[5][BS];
    struct ubj_req r[5];
    for (unsigned i = 0; i < 5; i++) {
        memset(b[i], 'a' + (int)i, BS);
        ubj_req_init(&r[i], UBJ_REQ_WRITE, i < 4 ? 4 - i : 10, 1, b[i]);
        if (i == 4)
            r[i].order = order;
        assert_int_equal(ubj_bdev_submit(q, &r[i]), 0);
    }
    assert_int_equal(ubj_bdev_drain(q), 0);
    for (unsigned i = 0; i < 5; i++)
        assert_int_equal(r[i].result, 0);
    struct order_check oc = { 10, 4, 0 };
    *most = each_state(rec, THROUGH, order_one, &oc);
    ubj_bdev_destroy(q);
    return oc.bad;
}

/* test_barrier_below_queue -- with the recorder below the queue, the
 * order a barrier enforces holds in every write-through crash state: X
 * never survives without all four writes before it.  Untagged, the SSD
 * has all five in flight at once and the check finds states that break
 * that order (the check can fail). */
static void test_barrier_below_queue(void **state)
{
    (void)state;
    uint64_t most;
    assert_true(run_below_queue(UBJ_ORDER_NONE, &most) > 0);
    assert_true(most >= 2);                 /* overlap seen in modeled time */
    assert_int_equal(run_below_queue(UBJ_ORDER_BARRIER, &most), 0);
    assert_true(most >= 2);                 /* the four still overlap */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serial),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_torn_in_flight),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_barrier_below_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
