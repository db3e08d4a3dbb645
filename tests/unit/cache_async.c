/*
 * tests/unit/cache_async.c -- the cache's writes as asynchronous v2
 * requests (src/cache/cache.c, "asynchronous writes"; issue 18 item 3):
 *  - write-back over a request queue on the virtual clock has several
 *    requests in flight at once (bounded by the cache), waits for all of
 *    them, and the device holds every block's newest bytes after it;
 *  - an eviction write nobody waits for goes from the write_begin
 *    snapshot: a buffer changed after its window closed, while the
 *    write is still held by the device, reaches the device as it was at
 *    the snapshot (a device that copied the live buffer would hold the
 *    change), and stays DIRTY so the change is written next time;
 *  - write_done runs once per write, on completion (not at submission);
 *  - reads never see data older than a write in flight to the block:
 *    the cache keeps an io_busy buffer cached (no eviction, no re-read);
 *  - a process that waits for another caller's write in flight (its
 *    write_home meeting a background write-back) raises that request to
 *    time-critical in the queue.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <cmocka.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"
#include "ubjfs/queue.h"
#include "cache/cache.h"

#define BS 4096u
#define NBUFS 16u
#define DEVBLOCKS 4096u
#define HDDBLOCKS 418000u   /* the HP C2249A's stroke, in RAM */

/* open_hdd -- spec over a RAM device of the C2249A's size (virtual clock). */
static struct ubj_bdev *open_hdd(const char *spec)
{
    struct ubj_spec_opts o = { .nblocks = HDDBLOCKS };
    struct ubj_bdev *d;
    assert_int_equal(ubj_bdev_open_spec(spec, NULL, &o, &d), 0);
    return d;
}

/* ---- a gate device: holds writes until the test releases them ----------- */

struct gate {
    struct ubj_bdev base;
    pthread_mutex_t mu;        /* a queue's dispatcher submits, a test
                                  thread releases */
    bool closed;               /* [mu] writes are held */
    uint32_t nheld;            /* [mu] */
    struct ubj_req *held[64];  /* [mu] */
    uint64_t submitted;        /* [mu] writes seen */
};

/* gate_submit -- reads and flushes pass at once; writes wait while closed. */
static void gate_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    struct gate *g = (struct gate *)d;
    if (r->op == UBJ_REQ_WRITE) {
        pthread_mutex_lock(&g->mu);
        g->submitted++;
        if (g->closed && g->nheld < 64) {
            g->held[g->nheld++] = r;
            pthread_mutex_unlock(&g->mu);
            return;
        }
        pthread_mutex_unlock(&g->mu);
        ubj_req_complete(r, ubj_bdev_write(d->lower, r->blkno, r->count, r->buf));
        return;
    }
    int rc = r->op == UBJ_REQ_READ ? ubj_bdev_read(d->lower, r->blkno, r->count, r->buf)
                                   : ubj_bdev_flush(d->lower);
    ubj_req_complete(r, rc);
}

/* gate_release -- open the gate: every held write reaches the medium now
 * (copied from its buffer at this moment) and completes. */
static void gate_release(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->closed = false;
    uint32_t n = g->nheld;
    struct ubj_req *held[64];
    memcpy(held, g->held, n * sizeof held[0]);
    g->nheld = 0;
    pthread_mutex_unlock(&g->mu);
    for (uint32_t k = 0; k < n; k++) {
        struct ubj_req *r = held[k];
        ubj_req_complete(r, ubj_bdev_write(g->base.lower, r->blkno, r->count, r->buf));
    }
}

/* gate_held -- how many writes the gate holds now. */
static uint32_t gate_held(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    uint32_t n = g->nheld;
    pthread_mutex_unlock(&g->mu);
    return n;
}

static void gate_destroy(struct ubj_bdev *d)
{
    ubj_bdev_destroy(d->lower);
    pthread_mutex_destroy(&((struct gate *)d)->mu);
    free(d);
}

static const struct ubj_bdev_ops gate_ops = {
    .version = UBJ_BDEV_OPS_V2, .name = "gate", .destroy = gate_destroy,
    .submit = gate_submit,
};

static struct gate *gate_new(void)
{
    struct ubj_bdev *ram;
    assert_int_equal(ubj_bdev_ram_create(DEVBLOCKS, &ram), 0);
    struct gate *g = calloc(1, sizeof *g);
    assert_non_null(g);
    g->base = (struct ubj_bdev){ .ops = &gate_ops, .block_size = BS,
                                 .nblocks = DEVBLOCKS, .lower = ram };
    pthread_mutex_init(&g->mu, NULL);
    return g;
}

/* ---- hooks: count write_begin / write_done ------------------------------ */

struct counts {
    unsigned begins, dones;
};

static int cnt_begin(void *ctx, struct ubj_buf *b, uint64_t blkno, const void *live,
                     void *snap, unsigned flags)
{
    (void)b, (void)blkno, (void)live, (void)snap, (void)flags;
    ((struct counts *)ctx)->begins++;
    return UBJ_WRITE_AS_IS;
}

static void cnt_done(void *ctx, struct ubj_buf *b, uint64_t blkno, int rc,
                     bool rolled_back)
{
    (void)b, (void)blkno, (void)rolled_back;
    assert_int_equal(rc, 0);
    ((struct counts *)ctx)->dones++;
}

static const struct ubj_cache_hooks cnt_hooks = {
    .write_begin = cnt_begin, .write_done = cnt_done,
};

/* dirty_block -- get blkno (no read), fill it with byte v, mark it dirty. */
static void dirty_block(struct ubj_cache *c, uint64_t blkno, uint8_t v)
{
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_get(c, blkno, UBJ_GET_NOREAD, &b), 0);
    ubj_cache_wait_stable(c, b);
    memset(b->data, v, BS);
    ubj_cache_mark_dirty(c, b, UBJ_KIND_DATA, 1);
    ubj_cache_put(c, b);
}

/* dev_byte -- the first byte of blkno on device d (reads must be whole). */
static uint8_t dev_byte(struct ubj_bdev *d, uint64_t blkno)
{
    uint8_t buf[BS];
    assert_int_equal(ubj_bdev_read(d, blkno, 1, buf), 0);
    for (uint32_t i = 1; i < BS; i++)
        assert_int_equal(buf[i], buf[0]);
    return buf[0];
}

/* ---- tests --------------------------------------------------------------- */

/*
 * test_writeback_inflight -- 12 dirty blocks far apart on the HDD model
 * behind a C-LOOK queue (virtual clock): one write-back submits them all
 * before it waits (the queue holds several at once: 1 with one request in
 * flight, as before), they complete before it returns (every buffer
 * CLEAN, the device holds the bytes) and write_done ran once each; the
 * waiting caller raised them to time-critical.
 */
static void test_writeback_inflight(void **st)
{
    (void)st;
    struct ubj_bdev *d = open_hdd("queue:clook@hdd:hp_c2249a");
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 64 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    struct counts n = { 0 };
    ubj_cache_set_hooks(c, &cnt_hooks, &n);
    static const uint64_t blk[12] = { 90000, 5, 300000, 17, 200000, 41, 400000,
                                      123, 250000, 77, 150000, 1000 };
    for (unsigned k = 0; k < 12; k++)
        dirty_block(c, blk[k], (uint8_t)(k + 1));
    assert_int_equal(ubj_cache_writeback(c, UBJ_WB_FLUSH), 0);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.dirty, 0);
    assert_int_equal(n.begins, 12);
    assert_int_equal(n.dones, 12);
    assert_true(cs.io_inflight_max > 1);
    assert_true(cs.io_inflight_max <= 32);
    struct ubj_queue_stats qs;
    assert_int_equal(ubj_queue_stats_get(ubj_queue_find(d), &qs), 0);
    assert_true(qs.max_held > 1);          /* several requests held at once */
    /* submitted time-noncritical, raised once the caller waits for them;
     * plus the flush (time-critical) */
    assert_int_equal(qs.cls[UBJ_CRIT_NONCRITICAL].completed +
                     qs.cls[UBJ_CRIT_CRITICAL].completed, 13);
    assert_true(qs.cls[UBJ_CRIT_CRITICAL].raised > 0);
    assert_true(cs.io_raised > 0);
    for (unsigned k = 0; k < 12; k++)
        assert_int_equal(dev_byte(d, blk[k]), k + 1);
    ubj_cache_set_hooks(c, NULL, NULL);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
}

/*
 * test_writeback_bounded -- 200 scattered dirty blocks: at most the
 * cache's limit (32) of requests in flight, and all of them home.
 */
static void test_writeback_bounded(void **st)
{
    (void)st;
    struct ubj_bdev *d = open_hdd("queue:sptf@hdd:hp_c2249a");
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = 256 };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    for (unsigned k = 0; k < 200; k++)
        dirty_block(c, (uint64_t)k * 2003 % 400000, (uint8_t)(k % 250 + 1));
    assert_int_equal(ubj_cache_writeback(c, 0), 0);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.dirty, 0);
    assert_int_equal(cs.io_inflight_max, 32);
    for (unsigned k = 0; k < 200; k++)
        assert_int_equal(dev_byte(d, (uint64_t)k * 2003 % 400000), k % 250 + 1);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
}

/* evict_until_held -- misses on fresh blocks until CLOCK has sent block
 * victim's write to the (closed) gate. */
static void evict_until_held(struct ubj_cache *c, struct gate *g, uint64_t first)
{
    for (uint64_t k = 0; g->nheld == 0 && k < 4 * NBUFS; k++) {
        struct ubj_buf *b;
        assert_int_equal(ubj_cache_get(c, first + k, 0, &b), 0);
        ubj_cache_put(c, b);
    }
    assert_int_equal(g->nheld, 1);
}

/*
 * test_snapshot_after_begin -- block 5 is written by an eviction (nobody
 * waits) and the device holds the write; meanwhile a holder changes the
 * buffer (its window closed: wait_stable does not wait) and dirties it.
 * The device gets the snapshot's bytes (0xA1), not the change (0xB2);
 * write_done runs at the completion, not before; the buffer stays DIRTY
 * (redirtied in flight) and the next write-back writes the change.  While
 * the write is held, block 5 stays cached: a read is a hit on the newest
 * bytes, never a re-read of the device's older ones.
 */
static void test_snapshot_after_begin(void **st)
{
    (void)st;
    struct gate *g = gate_new();
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = NBUFS };
    assert_int_equal(ubj_cache_create(&g->base, &cfg, &c), 0);
    struct counts n = { 0 };
    ubj_cache_set_hooks(c, &cnt_hooks, &n);
    dirty_block(c, 5, 0xA1);
#if UBJ_TEST_HOOKS
    ubj_cache_test_break_live(getenv("UBJ_CACHE_BREAK_LIVE") != NULL);
#endif
    g->closed = true;
    evict_until_held(c, g, 100);
    assert_int_equal(n.begins, 1);
    assert_int_equal(n.dones, 0);             /* not completed yet */
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_lookup(c, 5, &b), 0);   /* still cached */
    assert_int_equal(b->data[0], 0xA1);
    ubj_cache_wait_stable(c, b);              /* the snapshot is taken */
    memset(b->data, 0xB2, BS);
    ubj_cache_mark_dirty(c, b, UBJ_KIND_DATA, 2);
    ubj_cache_put(c, b);
    for (uint64_t k = 0; k < 2 * NBUFS; k++) {   /* more misses: 5 stays */
        assert_int_equal(ubj_cache_get(c, 1000 + k, 0, &b), 0);
        ubj_cache_put(c, b);
    }
    assert_int_equal(ubj_cache_lookup(c, 5, &b), 0);
    assert_int_equal(b->data[0], 0xB2);
    ubj_cache_put(c, b);
    gate_release(g);
#if UBJ_TEST_HOOKS
    ubj_cache_test_break_live(false);
#endif
    assert_int_equal(n.dones, 1);
    assert_int_equal(dev_byte(g->base.lower, 5), 0xA1);   /* the snapshot */
    assert_int_equal(ubj_cache_lookup(c, 5, &b), 0);
    assert_int_equal(ubj_cache_peek(c, b).state, UBJ_BUF_DIRTY);
    ubj_cache_put(c, b);
    assert_int_equal(ubj_cache_writeback(c, 0), 0);
    assert_int_equal(dev_byte(g->base.lower, 5), 0xB2);
    assert_int_equal(n.dones, 2);
    ubj_cache_set_hooks(c, NULL, NULL);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(&g->base);
}

/*
 * test_eviction_async -- CLOCK's write of a dirty victim is submitted and
 * not waited for: the miss that caused it returns while the device holds
 * it (the old synchronous write blocked there), it is counted written
 * only once it completes, and ubj_cache_wait_writes finds it done.
 */
static void test_eviction_async(void **st)
{
    (void)st;
    struct gate *g = gate_new();
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = NBUFS };
    assert_int_equal(ubj_cache_create(&g->base, &cfg, &c), 0);
    dirty_block(c, 7, 0x33);
    g->closed = true;
    evict_until_held(c, g, 200);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.io_writes, 1);
    assert_int_equal(cs.writeback_blocks, 0);   /* counted on completion */
    gate_release(g);
    ubj_cache_wait_writes(c);
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.writeback_blocks, 1);
    assert_int_equal(cs.dirty, 0);
    assert_int_equal(dev_byte(g->base.lower, 7), 0x33);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(&g->base);
}

/* What test_raise_waiter's threads share. */
struct raise_ctx {
    struct ubj_cache *c;
    struct gate *g;
    int wb_rc;
    bool saw_raise;      /* the gate opened on a raise, not on time */
};

/* raise_wb_main -- a background write-back (nobody waits for it). */
static void *raise_wb_main(void *arg)
{
    struct raise_ctx *x = arg;
    x->wb_rc = ubj_cache_writeback(x->c, UBJ_WB_BACKGROUND);
    return NULL;
}

/* raise_release_main -- open the gate once a raise was counted (or after
 * 10 s, so that a missing raise fails the test instead of hanging it). */
static void *raise_release_main(void *arg)
{
    struct raise_ctx *x = arg;
    struct ubj_cache_stats cs;
    for (int i = 0; i < 10000; i++) {
        ubj_cache_stats_get(x->c, &cs);
        if (cs.io_raised > 0) {
            x->saw_raise = true;
            break;
        }
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    }
    gate_release(x->g);
    return NULL;
}

/*
 * test_raise_waiter -- a background write-back's four writes sit in a
 * C-LOOK queue (dispatcher thread) over a gate that holds the first: they
 * stay time-noncritical (nobody waits); write_home of one of their
 * buffers then waits for it, raising that request to time-critical (the
 * cache and the queue count it; the gate opens only then), and completes
 * once the gate opens.
 */
static void test_raise_waiter(void **st)
{
    (void)st;
    struct gate *g = gate_new();
    struct ubj_bdev *d;
    struct ubj_queue_conf qc = { .sched = UBJ_SCHED_CLOOK, .dispatch = UBJ_QUEUE_THREAD };
    assert_int_equal(ubj_bdev_queue_create(&g->base, &qc, &d), 0);
    struct ubj_cache *c;
    struct ubj_cache_config cfg = { .nbufs = NBUFS };
    assert_int_equal(ubj_cache_create(d, &cfg, &c), 0);
    for (unsigned k = 1; k <= 4; k++)
        dirty_block(c, 100 * k, (uint8_t)k);
    pthread_mutex_lock(&g->mu);
    g->closed = true;
    pthread_mutex_unlock(&g->mu);
    struct raise_ctx x = { .c = c, .g = g, .wb_rc = -1 };
    pthread_t wb, rel;
    assert_int_equal(pthread_create(&wb, NULL, raise_wb_main, &x), 0);
    struct ubj_queue_stats qs;
    do {   /* all four submitted, the first held at the gate */
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
        assert_int_equal(ubj_queue_stats_get(d, &qs), 0);
    } while (qs.submitted < 4 || gate_held(g) < 1);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(c, &cs);
    assert_int_equal(cs.io_raised, 0);          /* background: not raised */
    struct ubj_buf *b;
    assert_int_equal(ubj_cache_lookup(c, 400, &b), 0);
    assert_int_equal(pthread_create(&rel, NULL, raise_release_main, &x), 0);
    assert_int_equal(ubj_cache_write_home(c, b), 0);   /* waits, raises */
    ubj_cache_put(c, b);
    assert_int_equal(pthread_join(rel, NULL), 0);
    assert_int_equal(pthread_join(wb, NULL), 0);
    assert_int_equal(x.wb_rc, 0);
    assert_true(x.saw_raise);   /* raised while the gate held the writes */
    ubj_cache_stats_get(c, &cs);
    assert_true(cs.io_raised >= 1);   /* and write_home's own write, maybe */
    assert_int_equal(ubj_queue_stats_get(d, &qs), 0);
    assert_true(qs.cls[UBJ_CRIT_CRITICAL].raised >= 1);
    for (unsigned k = 1; k <= 4; k++)
        assert_int_equal(dev_byte(d, 100 * k), k);
    ubj_cache_destroy(c);
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writeback_inflight),
        cmocka_unit_test(test_writeback_bounded),
        cmocka_unit_test(test_snapshot_after_begin),
        cmocka_unit_test(test_eviction_async),
        cmocka_unit_test(test_raise_waiter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
