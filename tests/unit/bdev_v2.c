/*
 * tests/unit/bdev_v2.c -- the conformance suite of device interface v2
 * (include/ubjfs/bdev.h, src/dev/req.c), run over every kind of device:
 * ram, file, fault, record, cow, map, a v1-table device through the
 * adapter, each timed model (virtual clock; ssd also on the real clock),
 * and request queues (real clock inline and threaded over ram, virtual
 * over hdd and ssd, real over ssd, under and over a synchronous wrapper).
 *
 * Every kind must: complete each accepted request exactly once, through
 * its callback or its waiter, with the data a v1 call also sees; reject
 * bad requests without completing them, counting the error; count
 * requests and bytes; carry modeled times on a timed stack (and move the
 * virtual clock to them when waited for); accept FUA, flushes and tags;
 * drain and raise without error; serve background I/O (the _crit calls,
 * ubj_bdev_wait_data) without moving a virtual clock.  A tagged write on
 * a volatile-cache stack without a queue costs one flush before it.
 */
#include "testutil.h"
#include <pthread.h>
#include <unistd.h>
#include "ubjfs/model.h"
#include "ubjfs/queue.h"

#define BS UBJ_BLOCK_SIZE
#define NB 256u              /* blocks of each device */
#define NREQ 16u

struct kind {
    const char *name;
    const char *spec;        /* ubj_bdev_open_spec; NULL: see make */
    int special;             /* 0 spec, 1 file, 2 map, 3 v1 table, 4 cow */
    int rdonly;              /* writes fail with -EROFS */
};

static const struct kind kinds[] = {
    { "ram", "ram", 0, 0 },
    { "file", NULL, 1, 0 },
    { "fault", "fault@ram", 0, 0 },
    { "record", NULL, 5, 0 },
    { "cow", NULL, 4, 0 },
    { "map", NULL, 2, 1 },
    { "v1-table", NULL, 3, 0 },
    { "hdd", "hdd:hp_c2249a@ram", 0, 0 },
    { "hdd-wcache", "hdd:modern7200@ram", 0, 0 },
    { "ssd", "ssd:sata@ram", 0, 0 },
    { "nand", "nand:slc@ram", 0, 0 },
    { "ssd-real", "ssd:nvme,clock=real@ram", 0, 0 },
    { "queue-inline", "queue:fcfs@ram", 0, 0 },
    { "queue-thread", "queue:clook,dispatch=thread@ram", 0, 0 },
    { "queue-hdd", "queue:sptf,depth=8@hdd:hp_c2249a@ram", 0, 0 },
    { "queue-ssd", "queue:clook@ssd:sata@ram", 0, 0 },
    { "queue-ssd-real", "queue:fcfs@ssd:nvme,clock=real@ram", 0, 0 },
    { "queue-fault", "queue:clook@fault@ram", 0, 0 },
    { "fault-queue", "fault@queue:fcfs,dispatch=thread@ram", 0, 0 },
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static unsigned char map_block[BS];

/* map_find -- the map overlay serves block 0 from map_block. */
static const uint8_t *map_find(void *ctx, uint64_t blkno)
{
    (void)ctx;
    return blkno == 0 ? map_block : NULL;
}

/* make -- open a device of kind k (path: a temp file for "file"). */
static struct ubj_bdev *make(const struct kind *k, char *path)
{
    struct ubj_bdev *d = NULL, *ram = NULL;
    struct ubj_spec_opts o = { .nblocks = NB };
    int rc;
    switch (k->special) {
    case 1: {
        assert_int_equal(t_tmpfile(path, 64, "v2"), 0);
        rc = ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, NB * BS, &d);
        break;
    }
    case 2: {
        assert_int_equal(ubj_bdev_ram_create(NB, &ram), 0);
        struct ubj_bdev_map m = { .name = "testmap", .find = map_find };
        rc = ubj_bdev_map_create(ram, &m, &d);
        break;
    }
    case 3:
        rc = tdev_sparse_create(NB, &d);
        break;
    case 4:
        assert_int_equal(ubj_bdev_ram_create(NB, &ram), 0);
        rc = ubj_bdev_cow_create(ram, 0, &d);
        break;
    case 5:
        assert_int_equal(ubj_bdev_ram_create(NB, &ram), 0);
        rc = ubj_bdev_record_create(ram, &d);
        break;
    default:
        rc = ubj_bdev_open_spec(k->spec, NULL, &o, &d);
    }
    if (rc != 0)
        fail_msg("%s: open = %d: %s", k->name, rc, ubj_errormsg());
    return d;
}

/* unmake -- destroy d (and its temp file). */
static void unmake(const struct kind *k, struct ubj_bdev *d, const char *path)
{
    ubj_bdev_destroy(d);
    if (k->special == 1)
        unlink(path);
}

/* A callback's record of what it saw. */
struct seen {
    int calls;
    int result;
    uint32_t state;
};

/* on_done -- count the completion; check it runs once. */
static void on_done(struct ubj_req *r)
{
    struct seen *s = r->priv;
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_SEQ_CST);
    s->result = r->result;
    s->state = r->state;
}

static unsigned char wbuf[NREQ][BS], rbuf[NREQ][BS];

/* test_async_round_trip -- NREQ writes, then NREQ reads, all with
 * callbacks; each completes once with the data; drain completes all. */
static void test_async_round_trip(void **state)
{
    const struct kind *k = *state;
    char path[64];
    struct ubj_bdev *d = make(k, path);
    struct ubj_req w[NREQ], r[NREQ];
    struct seen sw[NREQ] = {{0}}, sr[NREQ] = {{0}};
    for (uint32_t i = 0; i < NREQ; i++) {
        tpattern_fill(wbuf[i], BS, 7 + i, 0);
        ubj_req_init(&w[i], UBJ_REQ_WRITE, 3 + 5 * i, 1, wbuf[i]);
        w[i].done = on_done;
        w[i].priv = &sw[i];
        w[i].pid = 100 + i;
        assert_int_equal(ubj_bdev_submit(d, &w[i]), 0);
    }
    assert_int_equal(ubj_bdev_drain(d), 0);
    for (uint32_t i = 0; i < NREQ; i++) {
        assert_int_equal(sw[i].calls, 1);
        assert_int_equal(sw[i].state, UBJ_REQ_DONE);
        assert_int_equal(sw[i].result, k->rdonly ? -EROFS : 0);
        memset(rbuf[i], 0xee, BS);
        ubj_req_init(&r[i], UBJ_REQ_READ, 3 + 5 * i, 1, rbuf[i]);
        r[i].done = on_done;
        r[i].priv = &sr[i];
        r[i].crit = UBJ_CRIT_CRITICAL;
        assert_int_equal(ubj_bdev_submit(d, &r[i]), 0);
    }
    assert_int_equal(ubj_bdev_drain(d), 0);
    for (uint32_t i = 0; i < NREQ; i++) {
        assert_int_equal(sr[i].calls, 1);
        assert_int_equal(sr[i].result, 0);
        if (k->rdonly)
            assert_int_equal(tzero_check(rbuf[i], BS), BS);
        else
            assert_int_equal(tpattern_check(rbuf[i], BS, 7 + i, 0), BS);
    }
    unmake(k, d, path);
}

/* test_sync_and_v1 -- submit_wait, wait, FUA, flush; v1 and v2 see the
 * same data; stats count every request once. */
static void test_sync_and_v1(void **state)
{
    const struct kind *k = *state;
    char path[64];
    struct ubj_bdev *d = make(k, path);
    ubj_bdev_stats_reset(d);
    unsigned char a[2 * BS], b[2 * BS];
    tpattern_fill(a, sizeof a, 99, 0);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_WRITE, 40, 2, a);
    r.flags = UBJ_REQ_FUA;
    int want = k->rdonly ? -EROFS : 0;
    assert_int_equal(ubj_bdev_submit_wait(d, &r), want);
    assert_int_equal(r.state, UBJ_REQ_DONE);
    assert_int_equal(ubj_bdev_read(d, 40, 2, b), 0);         /* v1 sees v2 */
    if (!k->rdonly)
        assert_memory_equal(a, b, sizeof a);
    if (!k->rdonly)
        assert_int_equal(ubj_bdev_write(d, 50, 1, a + BS), 0);
    ubj_req_init(&r, UBJ_REQ_READ, 50, 1, b);                /* v2 sees v1 */
    assert_int_equal(ubj_bdev_submit(d, &r), 0);
    assert_int_equal(ubj_bdev_wait(d, &r), 0);
    if (!k->rdonly)
        assert_memory_equal(a + BS, b, BS);
    ubj_req_init(&r, UBJ_REQ_FLUSH, 0, 0, NULL);
    assert_int_equal(ubj_bdev_submit_wait(d, &r), 0);
    struct ubj_bdev_stats st;
    ubj_bdev_stats_get(d, &st);
    assert_int_equal(st.writes, k->rdonly ? 1 : 2);
    assert_int_equal(st.reads, 2);
    assert_int_equal(st.flushes, 1);
    assert_int_equal(st.bytes_read, 3 * BS);
    assert_int_equal(st.bytes_written, k->rdonly ? 0 : 3 * BS);
    assert_int_equal(st.errors, k->rdonly ? 1 : 0);
    unmake(k, d, path);
}

/* test_rejects -- bad requests come back as -EINVAL/-EBUSY, uncompleted,
 * counted as errors. */
static void test_rejects(void **state)
{
    const struct kind *k = *state;
    char path[64];
    struct ubj_bdev *d = make(k, path);
    ubj_bdev_stats_reset(d);
    unsigned char buf[BS];
    struct seen s = {0};
    struct ubj_req r;
    struct {
        uint32_t op, count, flags, order, crit;
        uint64_t blkno;
        int nobuf, rc;
    } bad[] = {
        { UBJ_REQ_READ, 1, 0, 0, 0, NB, 0, -EINVAL },        /* past the end */
        { UBJ_REQ_WRITE, 2, 0, 0, 0, NB - 1, 0, -EINVAL },   /* straddles it */
        { UBJ_REQ_READ, 0, 0, 0, 0, 0, 0, -EINVAL },         /* no blocks */
        { UBJ_REQ_READ, 1, 0, 0, 0, 0, 1, -EINVAL },         /* no buffer */
        { UBJ_REQ_FLUSH, 1, 0, 0, 0, 0, 1, -EINVAL },        /* flush with blocks */
        { UBJ_REQ_READ, 1, UBJ_REQ_FUA, 0, 0, 0, 0, -EINVAL }, /* FUA read */
        { UBJ_REQ_WRITE, 1, 0x100, 0, 0, 0, 0, -EINVAL },    /* private flag */
        { 7, 1, 0, 0, 0, 0, 0, -EINVAL },                    /* unknown op */
        { UBJ_REQ_WRITE, 1, 0, UBJ_ORDER_AFTER, 0, 0, 0, -EINVAL }, /* empty list */
        { UBJ_REQ_WRITE, 1, 0, 9, 0, 0, 0, -EINVAL },        /* unknown tag */
        { UBJ_REQ_WRITE, 1, 0, 0, 3, 0, 0, -EINVAL },        /* unknown class */
    };
    size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        ubj_req_init(&r, bad[i].op, bad[i].blkno, bad[i].count,
                     bad[i].nobuf ? NULL : buf);
        r.flags = bad[i].flags;
        r.order = bad[i].order;
        r.crit = bad[i].crit;
        r.done = on_done;
        r.priv = &s;
        int rc = ubj_bdev_submit(d, &r);
        if (rc != bad[i].rc)
            fail_msg("%s: bad request %zu: %d, want %d", k->name, i, rc, bad[i].rc);
    }
    ubj_req_init(&r, UBJ_REQ_READ, 0, 1, buf);
    r.state = UBJ_REQ_INFLIGHT;                   /* as if still in flight */
    assert_int_equal(ubj_bdev_submit(d, &r), -EBUSY);
    assert_int_equal(s.calls, 0);
    assert_int_equal(ubj_bdev_submit(NULL, &r), -EINVAL);
    assert_int_equal(ubj_bdev_submit(d, NULL), -EINVAL);
    ubj_req_init(&r, UBJ_REQ_READ, 0, 1, buf);
    assert_int_equal(ubj_bdev_wait(d, &r), -EINVAL);          /* never submitted */
    r.done = on_done;
    assert_int_equal(ubj_bdev_submit_wait(d, &r), -EINVAL);   /* has a callback */
    struct ubj_bdev_stats st;
    ubj_bdev_stats_get(d, &st);
    assert_int_equal(st.errors, n + 1);
    assert_int_equal(st.reads + st.writes + st.flushes, 0);
    unmake(k, d, path);
}

/* test_times -- a timed stack stamps arrival <= dispatch <= completion on
 * its clock and the wait moves a virtual clock to the completion; an
 * untimed device without a queue leaves the request untimed. */
static void test_times(void **state)
{
    const struct kind *k = *state;
    char path[64];
    struct ubj_bdev *d = make(k, path);
    struct ubj_bdev *model = ubj_model_find(d), *queue = ubj_queue_find(d);
    unsigned char buf[BS] = {0};
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_READ, 9, 1, buf);
    assert_int_equal(ubj_bdev_submit_wait(d, &r), 0);
    if (model == NULL && queue == NULL) {
        assert_null(r.clock);
    } else {
        assert_non_null(r.clock);
        assert_true(r.t_arrive <= r.t_dispatch);
        assert_true(r.t_dispatch <= r.t_complete);
        assert_true(ubj_clock_now(r.clock) >= r.t_complete);
    }
    if (model != NULL) {
        assert_ptr_equal(r.clock, ubj_model_clock(model));
        assert_true(r.t_complete > r.t_dispatch);    /* a read costs time */
        struct ubj_model_stats ms;
        assert_int_equal(ubj_model_stats_get(model, &ms), 0);
        assert_int_equal(ms.async_requests, 0);      /* it was waited for */
    }
    unmake(k, d, path);
}

/* clock_virtual_now -- the time of d's stack's virtual clock, or
 * UINT64_MAX when it has none (untimed, or real). */
static uint64_t clock_virtual_now(struct ubj_bdev *d)
{
    struct ubj_bdev *model = ubj_model_find(d);
    struct ubj_clock *c = model != NULL ? ubj_model_clock(model) : NULL;
    return c != NULL && ubj_clock_kind(c) == UBJ_CLOCK_VIRTUAL ? ubj_clock_now(c)
                                                               : UINT64_MAX;
}

/* test_background -- I/O nobody waits for (issue 18: what replaced the
 * models' asynchronous bracket): ubj_bdev_write_crit / flush_crit below
 * time-critical and ubj_bdev_wait_data return with the request completed
 * and its data done, without moving a virtual clock; a model counts the
 * requests asynchronous; an unknown class is refused. */
static void test_background(void **state)
{
    const struct kind *k = *state;
    char path[64];
    struct ubj_bdev *d = make(k, path);
    struct ubj_bdev *model = ubj_model_find(d);
    if (model != NULL)
        assert_int_equal(ubj_model_stats_reset(model), 0);
    unsigned char a[2 * BS], b[2 * BS];
    tpattern_fill(a, sizeof a, 77, 0);
    uint64_t t0 = clock_virtual_now(d);
    int want = k->rdonly ? -EROFS : 0;
    assert_int_equal(ubj_bdev_write_crit(d, 60, 2, a, UBJ_CRIT_NONCRITICAL), want);
    assert_int_equal(ubj_bdev_flush_crit(d, UBJ_CRIT_NONCRITICAL), 0);
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_READ, 60, 2, b);
    assert_int_equal(ubj_bdev_wait_data(d, &r), -EINVAL);    /* never submitted */
    assert_int_equal(ubj_bdev_submit(d, &r), 0);
    assert_int_equal(ubj_bdev_wait_data(d, &r), 0);
    assert_int_equal(r.state, UBJ_REQ_DONE);
    if (!k->rdonly)
        assert_memory_equal(a, b, sizeof a);
    assert_int_equal(clock_virtual_now(d), t0);              /* no time moved */
    if (model != NULL) {
        struct ubj_model_stats ms;
        assert_int_equal(ubj_model_stats_get(model, &ms), 0);
        assert_true(ms.async_requests >= (k->rdonly ? 2u : 3u));
    }
    assert_int_equal(ubj_bdev_write_crit(d, 60, 1, a, UBJ_CRIT_CLASSES), -EINVAL);
    assert_int_equal(ubj_bdev_flush_crit(d, UBJ_CRIT_CLASSES), -EINVAL);
    assert_int_equal(ubj_bdev_flush_crit(d, UBJ_CRIT_LIMITED), -EINVAL);  /* no deadline */
    assert_int_equal(ubj_bdev_drain(d), 0);
    unmake(k, d, path);
}

/* test_tags_and_raise -- barrier and after-list writes land; raise and
 * drain succeed; a queue counts a raise. */
static void test_tags_and_raise(void **state)
{
    const struct kind *k = *state;
    char path[64];
    struct ubj_bdev *d = make(k, path);
    unsigned char a[BS], b[BS], c[BS];
    tpattern_fill(a, BS, 1, 0);
    tpattern_fill(b, BS, 2, 0);
    struct ubj_req w1, w2, w3;
    struct seen s1 = {0}, s2 = {0};
    ubj_req_init(&w1, UBJ_REQ_WRITE, 60, 1, a);
    w1.done = on_done;
    w1.priv = &s1;
    assert_int_equal(ubj_bdev_submit(d, &w1), 0);
    ubj_req_init(&w2, UBJ_REQ_WRITE, 61, 1, b);
    w2.order = UBJ_ORDER_BARRIER;
    w2.done = on_done;
    w2.priv = &s2;
    assert_int_equal(ubj_bdev_submit(d, &w2), 0);
    struct ubj_req *const after[] = { &w2 };
    ubj_req_init(&w3, UBJ_REQ_WRITE, 62, 1, a);
    w3.order = UBJ_ORDER_AFTER;
    w3.after = after;
    w3.nafter = 1;
    w3.crit = UBJ_CRIT_LIMITED;
    w3.deadline_ns = 1;
    assert_int_equal(ubj_bdev_submit(d, &w3), 0);
    assert_int_equal(ubj_bdev_raise(d, &w3, UBJ_CRIT_CRITICAL, 0), 0);
    struct ubj_bdev *q = ubj_queue_find(d), *m = ubj_model_find(d);
    if (q == d && m != NULL && ubj_clock_kind(ubj_model_clock(m)) == UBJ_CLOCK_VIRTUAL)
        assert_int_equal(w3.crit, UBJ_CRIT_CRITICAL);  /* still held: raised */
    /* lowering is refused once raised; a request complete before the
     * raise keeps its class */
    assert_int_equal(ubj_bdev_raise(d, &w3, UBJ_CRIT_LIMITED, 0),
                     w3.crit == UBJ_CRIT_CRITICAL ? -EINVAL : 0);
    assert_int_equal(ubj_bdev_wait(d, &w3), k->rdonly ? -EROFS : 0);
    assert_int_equal(ubj_bdev_drain(d), 0);
    assert_int_equal(s1.calls + s2.calls, 2);
    if (!k->rdonly) {
        assert_int_equal(ubj_bdev_read(d, 61, 1, c), 0);
        assert_memory_equal(b, c, BS);
        assert_int_equal(ubj_bdev_read(d, 62, 1, c), 0);
        assert_memory_equal(a, c, BS);
    }
    unmake(k, d, path);
}

/* test_threads -- four threads submit and wait at once; all complete. */
struct thr {
    struct ubj_bdev *d;
    unsigned id;
    int bad;
};
static void *thr_main(void *arg)
{
    struct thr *t = arg;
    unsigned char buf[BS], back[BS];
    for (unsigned i = 0; i < 32; i++) {
        uint64_t blk = 100 + t->id * 32 + i;
        tpattern_fill(buf, BS, blk, 0);
        struct ubj_req r;
        ubj_req_init(&r, UBJ_REQ_WRITE, blk, 1, buf);
        t->bad |= ubj_bdev_submit_wait(t->d, &r) != 0;
        ubj_req_init(&r, UBJ_REQ_READ, blk, 1, back);
        t->bad |= ubj_bdev_submit_wait(t->d, &r) != 0;
        t->bad |= memcmp(buf, back, BS) != 0;
    }
    return NULL;
}
static void test_threads(void **state)
{
    const struct kind *k = *state;
    if (k->rdonly)
        skip();                         /* a read-only map takes no writes */
    char path[64];
    struct ubj_bdev *d = make(k, path);
    pthread_t th[4];
    struct thr t[4];
    for (unsigned i = 0; i < 4; i++) {
        t[i] = (struct thr){ .d = d, .id = i };
        assert_int_equal(pthread_create(&th[i], NULL, thr_main, &t[i]), 0);
    }
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(t[i].bad, 0);
    }
    unmake(k, d, path);
}

/* test_preflush -- without a queue, a tagged write on a volatile cache
 * (the file device) is preceded by one flush and sent with FUA; an
 * untagged one is not. */
static void test_preflush(void **state)
{
    (void)state;
    char path[64];
    struct ubj_bdev *d = make(&kinds[1], path), *rec;
    assert_int_equal(ubj_bdev_record_create(d, &rec), 0);
    unsigned char a[BS] = {1};
    struct ubj_req r;
    ubj_req_init(&r, UBJ_REQ_WRITE, 5, 1, a);
    assert_int_equal(ubj_bdev_submit_wait(rec, &r), 0);
    assert_int_equal(ubj_bdev_record_flushes(rec), 0);
    ubj_req_init(&r, UBJ_REQ_WRITE, 6, 1, a);
    r.order = UBJ_ORDER_BARRIER;
    assert_int_equal(ubj_bdev_submit_wait(rec, &r), 0);
    assert_int_equal(ubj_bdev_record_flushes(rec), 1);
    assert_int_equal(ubj_bdev_record_write_fua(rec, 0), 0);
    assert_int_equal(ubj_bdev_record_write_fua(rec, 1), 1);
    assert_int_equal(r.flags & UBJ_REQ_FUA, 0);      /* the caller's flags kept */
    unmake(&kinds[1], rec, path);
}

/* test_fault_errors -- a failing device's error reaches the callback,
 * through a queue as well; the queue fails what is ordered after it. */
static void test_fault_errors(void **state)
{
    (void)state;
    static const char *const specs[] = { "fault@ram", "queue:fcfs@fault@ram",
                                         "queue:clook,dispatch=thread@fault@ram",
                                         "queue:fcfs@fault@hdd:hp_c2249a@ram" };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        struct ubj_bdev *d, *f;
        struct ubj_spec_opts o = { .nblocks = NB };
        assert_int_equal(ubj_bdev_open_spec(specs[i], NULL, &o, &d), 0);
        for (f = d; f != NULL && ubj_bdev_fault_fired(f) == 0 &&
             ubj_bdev_fault_arm(f, UBJ_FAULT_WRITE, 1, 0, 0) != 0; f = f->lower)
            ;
        assert_non_null(f);
        unsigned char a[BS] = {0};
        struct ubj_req w, x;
        struct seen sw = {0}, sx = {0};
        ubj_req_init(&w, UBJ_REQ_WRITE, 1, 1, a);
        w.done = on_done;
        w.priv = &sw;
        assert_int_equal(ubj_bdev_submit(d, &w), 0);
        struct ubj_req *const after[] = { &w };
        ubj_req_init(&x, UBJ_REQ_WRITE, 2, 1, a);
        x.order = UBJ_ORDER_AFTER;
        x.after = after;
        x.nafter = 1;
        x.done = on_done;
        x.priv = &sx;
        assert_int_equal(ubj_bdev_submit(d, &x), 0);
        assert_int_equal(ubj_bdev_drain(d), 0);
        assert_int_equal(sw.calls, 1);
        assert_int_equal(sw.result, -EIO);
        assert_int_equal(sx.calls, 1);
        /* without a queue x was written (its predecessor had completed) */
        assert_int_equal(sx.result, i == 0 ? 0 : -EIO);
        ubj_bdev_destroy(d);
    }
}

/* The suite: each conformance test once per kind, named test/kind. */
static const struct { const char *name; CMUnitTestFunction fn; } suite[] = {
    { "async_round_trip", test_async_round_trip },
    { "sync_and_v1", test_sync_and_v1 },
    { "rejects", test_rejects },
    { "times", test_times },
    { "background", test_background },
    { "tags_and_raise", test_tags_and_raise },
    { "threads", test_threads },
};
#define NSUITE (sizeof suite / sizeof suite[0])

int main(void)
{
    static struct CMUnitTest tests[NSUITE * NKINDS + 2];
    static char names[NSUITE * NKINDS][64];
    size_t n = 0;
    for (size_t t = 0; t < NSUITE; t++)
        for (size_t k = 0; k < NKINDS; k++, n++) {
            snprintf(names[n], sizeof names[n], "%s/%s", suite[t].name, kinds[k].name);
            tests[n] = (struct CMUnitTest){ .name = names[n], .test_func = suite[t].fn,
                                            .initial_state = (void *)&kinds[k] };
        }
    tests[n++] = (struct CMUnitTest){ .name = "preflush", .test_func = test_preflush };
    tests[n++] = (struct CMUnitTest){ .name = "fault_errors",
                                      .test_func = test_fault_errors };
    return _cmocka_run_group_tests("bdev_v2", tests, n, NULL, NULL);
}
