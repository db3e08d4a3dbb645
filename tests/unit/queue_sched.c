/*
 * tests/unit/queue_sched.c -- the request queue's schedulers (src/dev/
 * queue_sched.c) and their use by the queue (src/dev/queue_run.c) on the
 * HDD model, with dispatch sequences computed by hand; criticality tiers
 * and raising; the depth limit; an SSD (any number of slots) dispatching
 * at arrival; the HDD model's positioning estimate itself.
 *
 * The disk: HP C2249A with no controller overhead, bus or read-ahead
 * ("bare"), T_rot = 60e9 / 5400 = 11 111 111 ns, 96 sectors per track in
 * zone 1, 17 surfaces (1632 sectors = 204 blocks per cylinder), skews 14
 * sectors per head and 32 per cylinder: the first sector of (cylinder c,
 * head h) lies at angle ((c mod 96) * 64 + 14 h) mod 96 sectors (64 =
 * (16 * 14 + 32) mod 96).  Seeks: 1 cylinder 2.89 ms (first-ten table),
 * 100 cylinders 3.81 + 0.33 * 10 = 7.11 ms; head switch 0.89 ms.
 *
 * The scene: read A (block 0: cylinder 0, head 0, sectors 0-7) arrives
 * at 0 and is dispatched at once (the clock then moves 1 ns, so the
 * decision at 0 sees A alone); it ends at 8/96 T = 925 926 ns with the
 * head at angle 8 (sectors).  At 1 ns arrive, in this order:
 *   W block 20400: cylinder 100, head 0, sector 0: angle 64
 *   X block 213:   cylinder 1, head 0, sector 72:  angle (72 + 64) % 96 = 40
 *   Y block 11:    cylinder 0, head 0, sector 88:  angle 88
 *   Z block 14:    cylinder 0, head 1, sector 16:  angle 16 + 14 = 30
 * FCFS:  W X Y Z.
 * C-LOOK from block 1 (after A): Y(11) Z(14) X(213) W(20400).
 * SPTF at 925 926 ns, head at angle 8 (one sector = T/96 = 115 741 ns):
 *   Y: no move, wait 80 sectors                          = 9.259 ms
 *   Z: head switch 0.89 ms = 7.69 sectors -> 15.69, wait 14.31 = 2.546 ms
 *   X: seek 2.89 ms = 24.97 sectors -> 32.97, wait 7.03  = 3.704 ms
 *   W: seek 7.11 ms = 61.43 sectors -> 69.43, wait 90.57 = 17.593 ms
 *   -> Z, which ends at angle 38 on head 1.  From there:
 *   Y: switch 7.69 -> 45.69, wait 42.31 sectors          = 5.787 ms
 *   X: seek 24.97 -> 62.97, wait 73.03                   = 11.343 ms
 *   W: seek 61.43 -> 3.43, wait 60.57                    = 14.120 ms
 *   -> Y, which ends at angle 0 (96) on head 0.  From there:
 *   X: 24.97, wait 15.03 = 4.630 ms;  W: 61.43, wait 2.57 = 7.407 ms
 *   -> X, then W.      SPTF: Z Y X W.
 */
#include "testutil.h"
#include "ubjfs/model.h"
#include "ubjfs/queue.h"

#define BS UBJ_BLOCK_SIZE
#define BARE "hp_c2249a,overhead_read_ms=0,overhead_write_ms=0,overhead_hit_ms=0," \
             "overhead_flush_ms=0,bus_mb_s=0,readahead_sectors=0"
#define NBLK (101u * 204u)
#define NSCENE 4

static unsigned char bufs[8][BS];

/* open_q -- queue `qargs` over the bare HDD (or `model` if given). */
static struct ubj_bdev *open_q(const char *qargs, const char *model)
{
    char spec[512];
    snprintf(spec, sizeof spec, "queue:%s@%s", qargs, model ? model : "hdd:" BARE);
    struct ubj_spec_opts o = { .nblocks = NBLK };
    struct ubj_bdev *d;
    int rc = ubj_bdev_open_spec(spec, NULL, &o, &d);
    if (rc != 0)
        fail_msg("open %s: %d %s", spec, rc, ubj_errormsg());
    return d;
}

/* clock_of -- the stack's clock. */
static struct ubj_clock *clock_of(struct ubj_bdev *d)
{
    return ubj_model_clock(ubj_model_find(d));
}

/* start_a -- submit read A at block 0 and let 1 ns pass. */
static void start_a(struct ubj_bdev *d, struct ubj_req *a)
{
    ubj_req_init(a, UBJ_REQ_READ, 0, 1, bufs[7]);
    assert_int_equal(ubj_bdev_submit(d, a), 0);
    ubj_clock_advance(clock_of(d), 1);
}

/* order_of -- the indices of r[0..n) sorted by dispatch time. */
static void order_of(const struct ubj_req *r, int n, int *out)
{
    for (int i = 0; i < n; i++)
        out[i] = i;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && r[out[j]].t_dispatch < r[out[j - 1]].t_dispatch; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
}

/* run_scene -- the scene of the top comment under scheduler `qargs`;
 * returns the dispatch order of W X Y Z as a string like "WXYZ". */
static void run_scene(const char *qargs, char *got)
{
    static const uint64_t blk[NSCENE] = { 20400, 213, 11, 14 };   /* W X Y Z */
    struct ubj_bdev *d = open_q(qargs, NULL);
    struct ubj_req a, r[NSCENE];
    start_a(d, &a);
    for (int i = 0; i < NSCENE; i++) {
        ubj_req_init(&r[i], UBJ_REQ_READ, blk[i], 1, bufs[i]);
        assert_int_equal(ubj_bdev_submit(d, &r[i]), 0);
    }
    for (int i = 0; i < NSCENE; i++)
        assert_int_equal(ubj_bdev_wait(d, &r[i]), 0);
    assert_int_equal(ubj_bdev_wait(d, &a), 0);
    assert_int_equal(a.t_dispatch, 0);
    assert_int_equal(a.t_complete, 925926);
    int ord[NSCENE];
    order_of(r, NSCENE, ord);
    assert_int_equal(r[ord[0]].t_dispatch, 925926);   /* right after A */
    for (int i = 0; i < NSCENE; i++) {
        got[i] = "WXYZ"[ord[i]];
        assert_int_equal(r[i].t_arrive, 1);
        if (i > 0)      /* one at a time, back to back */
            assert_int_equal(r[ord[i]].t_dispatch, r[ord[i - 1]].t_complete);
    }
    got[NSCENE] = '\0';
    ubj_bdev_destroy(d);
}

/* test_fcfs_clook_sptf -- the three hand-computed sequences. */
static void test_fcfs_clook_sptf(void **state)
{
    (void)state;
    char got[NSCENE + 1];
    run_scene("fcfs", got);
    assert_string_equal(got, "WXYZ");
    run_scene("clook", got);
    assert_string_equal(got, "YZXW");
    run_scene("sptf", got);
    assert_string_equal(got, "ZYXW");
}

/* test_position_estimate -- the HDD model's estimate for the scene's
 * first decision, to the nanosecond of the hand computation (rounded). */
static void test_position_estimate(void **state)
{
    (void)state;
    struct ubj_bdev *d = open_q("fcfs", NULL);
    struct ubj_bdev *m = ubj_model_find(d);
    struct ubj_req a;
    start_a(d, &a);
    assert_int_equal(ubj_bdev_wait(d, &a), 0);
    static const struct { uint64_t blk; double ms; } c[] = {
        { 11, 9.2592592 }, { 14, 2.5462962 },      /* Y, Z */
        { 213, 3.7037036 }, { 20400, 17.5925925 }, /* X, W */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint64_t ns;
        assert_int_equal(ubj_model_position_ns(m, UBJ_REQ_READ, 0, c[i].blk, 1,
                                               925926, &ns), 0);
        if (ns < c[i].ms * 1e6 - 2 || ns > c[i].ms * 1e6 + 2)
            fail_msg("block %llu: %llu ns, want %.0f", (unsigned long long)c[i].blk,
                     (unsigned long long)ns, c[i].ms * 1e6);
    }
    uint64_t ns = 1;
    assert_int_equal(ubj_model_position_ns(m, UBJ_REQ_FLUSH, 0, 0, 0, 0, &ns), 0);
    assert_int_equal(ns, 0);
    assert_int_equal(ubj_model_position_ns(m, UBJ_REQ_READ, 0, NBLK, 1, 0, &ns),
                     -EINVAL);
    struct ubj_bdev *ssd;
    struct ubj_spec_opts o = { .nblocks = 64 };
    assert_int_equal(ubj_bdev_open_spec("ssd:sata", NULL, &o, &ssd), 0);
    assert_int_equal(ubj_model_position_ns(ssd, UBJ_REQ_READ, 0, 0, 1, 0, &ns),
                     -EOPNOTSUPP);
    assert_int_equal(ubj_model_slots(ssd), 0);
    assert_int_equal(ubj_model_slots(m), 1);
    ubj_bdev_destroy(ssd);
    ubj_bdev_destroy(d);
}

/* test_clook_wraps -- C-LOOK sweeps up from the head, then wraps: after
 * A at block 1000, queued 3000 500 1500 800 go 1500 3000 500 800. */
static void test_clook_wraps(void **state)
{
    (void)state;
    static const uint64_t blk[4] = { 3000, 500, 1500, 800 };
    struct ubj_bdev *d = open_q("clook", NULL);
    struct ubj_req a, r[4];
    ubj_req_init(&a, UBJ_REQ_WRITE, 1000, 1, bufs[7]);
    assert_int_equal(ubj_bdev_submit(d, &a), 0);
    ubj_clock_advance(clock_of(d), 1);
    for (int i = 0; i < 4; i++) {
        ubj_req_init(&r[i], UBJ_REQ_WRITE, blk[i], 1, bufs[i]);
        assert_int_equal(ubj_bdev_submit(d, &r[i]), 0);
    }
    assert_int_equal(ubj_bdev_drain(d), 0);
    int ord[4];
    order_of(r, 4, ord);
    assert_int_equal(blk[ord[0]], 1500);
    assert_int_equal(blk[ord[1]], 3000);
    assert_int_equal(blk[ord[2]], 500);
    assert_int_equal(blk[ord[3]], 800);
    ubj_bdev_destroy(d);
}

/* test_criticality -- in the scene under C-LOOK, W made time-critical
 * goes first; Y time-limited with a deadline already past counts as
 * critical too (then C-LOOK: Y before W); crit=0 ignores classes; a raise
 * after submission moves X to the front. */
static void test_criticality(void **state)
{
    (void)state;
    static const uint64_t blk[NSCENE] = { 20400, 213, 11, 14 };
    static const struct {
        const char *args;
        uint32_t crit[NSCENE];
        int raise_x;
        const char *want;
    } cases[] = {
        { "clook", { UBJ_CRIT_CRITICAL, 0, 0, 0 }, 0, "WYZX" },
        { "clook", { UBJ_CRIT_CRITICAL, 0, UBJ_CRIT_LIMITED, 0 }, 0, "YWZX" },
        { "clook,crit=0", { UBJ_CRIT_CRITICAL, 0, 0, 0 }, 0, "YZXW" },
        { "clook", { 0, 0, 0, 0 }, 1, "XWYZ" },
        { "fcfs,crit=1", { 0, 0, 0, UBJ_CRIT_CRITICAL }, 0, "ZWXY" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct ubj_bdev *d = open_q(cases[c].args, NULL);
        struct ubj_req a, r[NSCENE];
        start_a(d, &a);
        for (int i = 0; i < NSCENE; i++) {
            ubj_req_init(&r[i], UBJ_REQ_READ, blk[i], 1, bufs[i]);
            r[i].crit = cases[c].crit[i];
            r[i].deadline_ns = 500000;       /* before A ends: overdue */
            assert_int_equal(ubj_bdev_submit(d, &r[i]), 0);
        }
        if (cases[c].raise_x)
            assert_int_equal(ubj_bdev_raise(d, &r[1], UBJ_CRIT_CRITICAL, 0), 0);
        assert_int_equal(ubj_bdev_drain(d), 0);
        int ord[NSCENE];
        char got[NSCENE + 1];
        order_of(r, NSCENE, ord);
        for (int i = 0; i < NSCENE; i++)
            got[i] = "WXYZ"[ord[i]];
        got[NSCENE] = '\0';
        if (strcmp(got, cases[c].want) != 0)
            fail_msg("case %zu (%s): %s, want %s", c, cases[c].args, got,
                     cases[c].want);
        struct ubj_queue_stats st;
        assert_int_equal(ubj_queue_stats_get(d, &st), 0);
        assert_int_equal(st.cls[UBJ_CRIT_CRITICAL].raised, cases[c].raise_x);
        assert_int_equal(st.completed, NSCENE + 1);
        ubj_bdev_destroy(d);
    }
}

/* test_depth -- with depth 2, the third submission waits for A: the
 * caller's clock moves to A's completion, and it arrives then. */
static void test_depth(void **state)
{
    (void)state;
    struct ubj_bdev *d = open_q("fcfs,depth=2", NULL);
    struct ubj_req a, r[2];
    start_a(d, &a);
    ubj_req_init(&r[0], UBJ_REQ_READ, 11, 1, bufs[0]);
    assert_int_equal(ubj_bdev_submit(d, &r[0]), 0);
    assert_int_equal(ubj_clock_now(clock_of(d)), 1);
    ubj_req_init(&r[1], UBJ_REQ_READ, 14, 1, bufs[1]);
    assert_int_equal(ubj_bdev_submit(d, &r[1]), 0);   /* full: waits for A */
    assert_int_equal(ubj_clock_now(clock_of(d)), 925926);
    assert_int_equal(ubj_bdev_drain(d), 0);
    assert_int_equal(r[1].t_arrive, 925926);
    struct ubj_queue_stats st;
    assert_int_equal(ubj_queue_stats_get(d, &st), 0);
    assert_int_equal(st.full_waits, 1);
    assert_int_equal(st.max_held, 2);
    /* the per-class sums: A queued 0, r0 and r1 waited behind it */
    const struct ubj_queue_class_stats *c = &st.cls[UBJ_CRIT_NONCRITICAL];
    assert_int_equal(c->completed, 3);
    assert_int_equal(c->queue_ns, r[0].t_dispatch - 1 + r[1].t_dispatch - 925926);
    assert_int_equal(c->response_ns, a.t_complete + r[0].t_complete - 1 +
                     r[1].t_complete - 925926);
    ubj_bdev_destroy(d);
}

/* test_ssd_any_slots -- on an SSD (slots 0) nothing waits in the queue:
 * each request is dispatched at its arrival; requests arriving together
 * go down in C-LOOK order (blocks 10 20 30 40: the reverse of
 * submission), so the shared host link finishes them in that order. */
static void test_ssd_any_slots(void **state)
{
    (void)state;
    struct ubj_bdev *d = open_q("clook", "ssd:sata");
    struct ubj_req r[4];
    for (int i = 0; i < 4; i++) {
        ubj_req_init(&r[i], UBJ_REQ_WRITE, 40 - 10 * (uint64_t)i, 1, bufs[i]);
        assert_int_equal(ubj_bdev_submit(d, &r[i]), 0);
    }
    assert_int_equal(ubj_bdev_drain(d), 0);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r[i].t_dispatch, r[i].t_arrive);
        if (i > 0)      /* the shared link: the lower block first */
            assert_true(r[i].t_complete < r[i - 1].t_complete);
    }
    ubj_bdev_destroy(d);
}

/* test_parse -- the spec arguments. */
static void test_parse(void **state)
{
    (void)state;
    struct ubj_queue_conf c;
    assert_int_equal(ubj_bdev_queue_parse("sptf,depth=7,crit=0,slots=3,"
                                          "dispatch=thread", &c), 0);
    assert_int_equal(c.sched, UBJ_SCHED_SPTF);
    assert_int_equal(c.depth, 7);
    assert_int_equal(c.crit, 0);
    assert_int_equal(c.slots, 3);
    assert_int_equal(c.dispatch, UBJ_QUEUE_THREAD);
    static const char *const bad[] = { "", "lifo", "fcfs,", "fcfs,depth=0",
                                       "fcfs,depth=x", "fcfs,crit=2",
                                       "fcfs,dispatch=x", "fcfs,depth",
                                       "fcfs,depth=-1", "fcfs,speed=1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ubj_bdev_queue_parse(bad[i], &c) != -EINVAL)
            fail_msg("\"%s\" accepted", bad[i]);
    struct ubj_bdev *d;
    assert_int_equal(ubj_bdev_open_spec("queue:lifo@ram", NULL, NULL, &d), -EINVAL);
    assert_int_equal(ubj_bdev_open_spec("queue:fcfs@ram", NULL, NULL, &d), 0);
    assert_ptr_equal(ubj_queue_find(d), d);
    assert_null(ubj_queue_find(d->lower));
    assert_int_equal(ubj_queue_stats_get(d->lower, &(struct ubj_queue_stats){0}),
                     -EINVAL);
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fcfs_clook_sptf),
        cmocka_unit_test(test_position_estimate),
        cmocka_unit_test(test_clook_wraps),
        cmocka_unit_test(test_criticality),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_ssd_any_slots),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
