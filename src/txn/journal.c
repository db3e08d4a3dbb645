/*
 * journal.c -- consistency modes `ordered` (the default of ext4), `journal`
 * and `writeback`: a JBD2-like write-ahead journal (include/linux/jbd2.h,
 * fs/jbd2/commit.c, checkpoint.c, revoke.c) on the shared buffer cache in
 * DRAM.  One implementation; the three ops tables differ in a flag that
 * decides what happens to file data:
 *
 *   ordered    data is not journaled; a transaction's dirty data goes home
 *              before its commit block (no stale block is ever visible)
 *   journal    data is journaled like metadata (a transaction is all or
 *              nothing, data included)
 *   writeback  data is not journaled nor ordered (fsync still writes it
 *              before committing)
 *
 * Transaction life cycle (jbd2's t_state), and who moves it:
 *
 *   RUNNING     handles join it (jnl_start .. jnl_stop); buffers it dirties
 *               are listed (jnl_dirty), journaled ones PINNED
 *   LOCKED      the handle layer's barrier: new handles wait, the commit
 *               waits until the open ones stopped (src/txn/handle.c:
 *               ubj_txn_lock_updates) -- jnl_commit_locked begins
 *   COMMITTING  (ordered) data home; revoke, descriptor and data copies
 *               written to the log; flush; commit block; flush
 *               -- jnl_commit_locked, phases 1-3
 *   COMMITTED   in live[]: its copies are in the log, its buffers still
 *               PINNED and DIRTY (owned by it) -- jnl_committed
 *   CHECKPOINTED  its buffers home and flushed, the tail moved past it in
 *               the journal superblock (flushed) -- jnl_checkpoint_locked,
 *               jnl_advance_tail
 *
 * Flush order (sync commit, the default; docs/JOURNAL.md):
 *   [ordered: data home] [journal superblock if the log was empty on disk]
 *   revoke/descriptor/data blocks, FLUSH, commit block, FLUSH.
 * Async commit (UBJ_JFEAT_COMPAT_ASYNC_COMMIT, mkfs --journal-async-commit):
 *   [ordered: data home, FLUSH] blocks, commit block, FLUSH; recovery
 *   trusts a commit only if the transaction checksum in it matches.
 *
 * Invariants (jnl_invariants checks them in debug builds):
 *  J1 A buffer journaled in the running transaction is DIRTY, PINNED and
 *     listed in run[] (listed_tid == txid); nothing uncommitted reaches
 *     its home: the cache writes only unpinned buffers.
 *  J2 A buffer whose newest logged copy is in a live (committed, not
 *     checkpointed) transaction T is owned by T (own_tid == T, on owned[])
 *     and stays PINNED until a checkpoint writes it home; its block is in
 *     `logged` with the tid of its newest live copy.
 *  J3 The tail (live[0] or, when empty, the head) never passes a
 *     transaction owning a buffer that is not home, nor one whose block a
 *     running forget revoked (forget_min): a block re-dirtied or freed in
 *     the running transaction keeps its older transaction in the log until
 *     the running one commits (jbd2 forces that commit: so do we at a
 *     handle boundary).
 *  J4 The journal superblock on disk says start = 0 only while live[] is
 *     empty and nothing was committed since (js_clean); the first commit
 *     after that writes it, durable before its commit block.
 *  J5 Log space is reused only after the superblock that moved the tail
 *     past it is durable (jnl_advance_tail flushes).
 *  J6 A block freed in the running transaction whose copy is in the log
 *     gets a revoke record (unless journaled again).  A block freed in the
 *     running transaction and reused for data in it is journaled, in every
 *     mode, never written home before the commit: until then it belongs
 *     to its old owner in the committed state (ext4 gets the same by not
 *     reusing such blocks; our allocator reuses them at once).
 *  J7 commit runs with no handle open: every commit takes the handle
 *     layer's barrier (jnl_commit_locked: ubj_txn_lock_updates waits for
 *     the open handles) and checks it inside (ubj_txn_assert_quiet:
 *     aborts in every build); reclaim and a checkpoint commit only at a
 *     safe point (ubj_txn_safe_point), never waiting.  Open handles
 *     reserve credits against half the cache and half the log
 *     (ubj_handles_set_capacity at mount), and a start commits or
 *     checkpoints for its credits plus the open handles' (jnl_make_room).
 *     The mount lock guards the state; the handle layer releases it only
 *     while it waits.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "txn/journal.h"
#include "util/util.h"

#define JNL_BS UBJ_JBS
#define JNL_IOBLOCKS 64u             /* log blocks per device write */
#define JNL_IOSEGS 4u                /* log writes in flight at once */
#define JNL_CKPT_AGE_TICKS 6u        /* checkpoint after 6 commit intervals */
#define JNL_MIN_TXN 8u               /* smallest running-transaction limit */
#define JNL_DATA_LIST 256u           /* data buffers written one by one at a
                                        commit; more: the cache's coalesced
                                        write-back of every dirty buffer */
#define JNL_DATA_MARGIN 8u           /* journaled blocks kept for an
                                        operation's metadata after its data */

enum jnl_flavour { JNL_ORDERED = 0, JNL_JOURNAL = 1, JNL_WRITEBACK = 2 };

static const char *const jnl_names[] = { "ordered", "journal", "writeback" };

/* A committed transaction still in the log. */
struct jnl_tx {
    uint64_t tid;
    uint64_t start;          /* relative position of its first block */
    uint64_t len;            /* log blocks, commit block included */
};

/* A buffer listed in the running transaction. */
struct jnl_entry {
    uint64_t blkno;
    uint32_t idx;
    uint32_t reserved;
};

/* Per-mount state [the mount lock]. */
struct jnl_state {
    enum jnl_flavour fl;
    bool rdonly, async;
    bool js_clean;           /* J4: the superblock on disk says start 0 */
    int error;               /* sticky: the journal is aborted */
    struct ubj_jgeom g;
    struct ubj_jsuper *js;   /* in-memory copy of the journal superblock */
    uint32_t nbufs;
    uint64_t loglen;         /* blocks of the circular log */
    uint64_t head;           /* next log position */
    uint32_t max_txn;        /* running-transaction limit, journaled blocks */
    /* committed transactions not yet checkpointed, oldest first */
    struct jnl_tx *live;
    uint32_t nlive, caplive;
    /* the running transaction */
    struct jnl_entry *run;
    uint32_t nrun, caprun;
    uint64_t *listed_tid;    /* [nbufs] txid the buffer was listed in */
    uint64_t *listed_blk;    /* [nbufs] for which block */
    struct ubj_jmap revokes; /* blocks to revoke at commit */
    struct ubj_jmap freed;   /* blocks freed in it (J6) */
    uint64_t forget_min;     /* J3: oldest live tid a forget depends on */
    bool data_pending;       /* unjournaled data dirtied since the last
                                data write */
    struct jnl_entry *data;  /* those buffers (jbd2's inode data lists), */
    uint32_t ndata;          /* up to JNL_DATA_LIST; beyond: data_all */
    bool data_all;
    uint64_t *dlisted;       /* [nbufs] txid the buffer was put in data[] */
    uint64_t *dlisted_blk;   /* [nbufs] for which block */
    /* committed copies not yet home (J2) */
    uint64_t *own_tid;       /* [nbufs] 0 = not owned */
    uint64_t *own_blk;       /* [nbufs] */
    uint32_t *owned;         /* indices with own_tid != 0 */
    uint32_t nowned;
    uint32_t *scratch;       /* [nbufs] checkpoint's list */
    struct ubj_jmap logged;  /* block -> tid of its newest live copy */
    uint32_t ticks_live;     /* ticks since the last checkpoint */
    /* I/O */
    uint8_t *iobuf;          /* JNL_IOSEGS segments of JNL_IOBLOCKS staged
                                log blocks, one per write in flight */
    uint8_t *blk;            /* one control block being built */
};

static int jnl_rdonly_token;         /* prepare's argument for a read-only mount */

/* ---- test hooks ------------------------------------------------------------- */

#if UBJ_TEST_HOOKS   /* broken variants and limits: a test build only */
static int jnl_break_mode = -1;      /* -1: read UBJ_TEST_JBREAK at first use */
static uint32_t jnl_lim_txn;

/* ubj_journal_test_break -- select a deliberately broken variant. */
void ubj_journal_test_break(enum ubj_jbreak which)
{
    jnl_break_mode = (int)which;
}

/* ubj_journal_test_limits -- override the running-transaction limit. */
void ubj_journal_test_limits(uint32_t max_txn)
{
    jnl_lim_txn = max_txn;
}

/* jnl_broken -- whether broken variant b is selected. */
static bool jnl_broken(enum ubj_jbreak b)
{
    if (jnl_break_mode < 0) {
        const char *e = getenv("UBJ_TEST_JBREAK");
        jnl_break_mode = e ? atoi(e) : 0;
    }
    return jnl_break_mode == (int)b;
}
#else   /* a plain build: constants, no code and no branch left behind */
#define jnl_lim_txn 0u
#define jnl_broken(b) false
#endif /* UBJ_TEST_HOOKS */

/* ---- helpers ----------------------------------------------------------------- */

/* jnl_trace -- with UBJ_TRACE_JOURNAL set in the environment, log an event
 * (commit, checkpoint, revoke) to stderr: for debugging crash tests. */
static void jnl_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void jnl_trace(const char *fmt, ...)
{
    static int on = -1;
    if (on < 0)
        on = getenv("UBJ_TRACE_JOURNAL") != NULL;
    if (!on)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("journal: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* jnl_of -- the per-mount state of t. */
static inline struct jnl_state *jnl_of(struct ubj_txn *t)
{
    return t->priv;
}

/* jnl_fail -- abort the journal (sticky): no more commits; returns rc. */
static int jnl_fail(struct jnl_state *s, int rc)
{
    if (s->error == 0)
        s->error = rc;
    return rc;
}

/* jnl_flush -- flush the device at class crit (ubj_bdev_flush_crit), counted. */
static int jnl_flush(struct ubj_txn *t, enum ubj_req_crit crit)
{
    t->stats.dev_flushes++;
    jnl_trace("flush %llu on %s", (unsigned long long)__atomic_load_n(
              &t->dev->stats.flushes, __ATOMIC_RELAXED) + 1, t->dev->ops->name);
    return ubj_bdev_flush_crit(t->dev, crit);
}

/* jnl_next -- the log position after pos. */
static inline uint64_t jnl_next(const struct jnl_state *s, uint64_t pos)
{
    return pos + 1 >= s->g.blocks ? UBJ_JOURNAL_FIRST : pos + 1;
}

/* jnl_dist -- log blocks from position a up to (not including) b. */
static inline uint64_t jnl_dist(const struct jnl_state *s, uint64_t a, uint64_t b)
{
    return (b + s->loglen - a) % s->loglen;
}

/* jnl_log_free -- log blocks a new transaction may use (one stays free so
 * the head never reaches the tail). */
static uint64_t jnl_log_free(const struct jnl_state *s)
{
    uint64_t used = s->nlive ? jnl_dist(s, s->live[0].start, s->head) : 0;
    return s->loglen - used - 1;
}

/* jnl_div_up -- ceil(a / b). */
static inline uint64_t jnl_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* jnl_txn_blocks -- log blocks of a transaction journaling n buffers and
 * revoking nrev blocks. */
static uint64_t jnl_txn_blocks(uint64_t n, uint64_t nrev)
{
    return jnl_div_up(nrev, UBJ_JREVOKES_PER_BLOCK) +
           jnl_div_up(n, UBJ_JTAGS_PER_BLOCK) + n + 1;
}

/* jnl_reserve -- log space a handle of `credits` needs at its start: the
 * running transaction grown by the handle (credits capped at half the
 * log: the file system over-reserves), its descriptors and revoke blocks. */
static uint64_t jnl_reserve(const struct jnl_state *s, uint32_t credits)
{
    uint64_t cr = credits < s->loglen / 2 ? credits : s->loglen / 2;
    return jnl_txn_blocks(s->nrun + cr, s->revokes.n + UBJ_JREVOKES_PER_BLOCK);
}

/* jnl_running_empty -- nothing to commit. */
static bool jnl_running_empty(const struct jnl_state *s)
{
    return s->nrun == 0 && s->revokes.n == 0 && !s->data_pending;
}

/* jnl_running_reset -- the running transaction starts over (after a commit). */
static void jnl_running_reset(struct jnl_state *s)
{
    s->nrun = 0;
    ubj_jmap_clear(&s->revokes);
    ubj_jmap_clear(&s->freed);
    s->forget_min = UINT64_MAX;
}

/* jnl_now_ns -- monotonic nanoseconds. */
static uint64_t jnl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifndef NDEBUG
/* jnl_invariants -- J1, J2, J4 and the log's shape; true if they hold. */
static bool jnl_invariants(struct ubj_txn *t)
{
    struct jnl_state *s = jnl_of(t);
    assert(s->nlive == 0 || !s->js_clean);
    for (uint32_t k = 0; k < s->nlive; k++) {
        assert(s->live[k].tid < t->txid);
        assert(k == 0 || s->live[k].tid > s->live[k - 1].tid);
        assert(k == 0 || s->live[k].start ==
               (s->live[k - 1].start - UBJ_JOURNAL_FIRST + s->live[k - 1].len) %
               s->loglen + UBJ_JOURNAL_FIRST);
    }
    assert(s->head >= UBJ_JOURNAL_FIRST && s->head < s->g.blocks);
    for (uint32_t k = 0; k < s->nowned; k++) {
        uint32_t i = s->owned[k];
        assert(i < s->nbufs && s->own_tid[i] != 0 && s->own_tid[i] < t->txid);
    }
    for (uint32_t k = 0; k < s->nrun; k++) {
        const struct ubj_buf *b = ubj_cache_buf_at(t->cache, s->run[k].idx);
        struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
        if (v.blkno == s->run[k].blkno && v.state == UBJ_BUF_DIRTY &&
            v.txid == t->txid && s->listed_tid[b->idx] == t->txid)
            assert(v.flags & UBJ_BUF_PINNED);
    }
    return true;
}
#endif

/* ---- the log writer ----------------------------------------------------------- */

/*
 * Blocks on their way to the log, staged in runs of consecutive positions
 * (a segment of iobuf each) and written as jbd2's commit writes its log
 * buffers: every full run is submitted at once as a v2 request (class
 * crit; a time-critical one marked UBJ_REQ_SYNC), up to JNL_IOSEGS in
 * flight, and jnl_lw_flush waits for all of them together -- before the
 * flush that makes them durable and before the commit block.  A segment
 * is staged into again only after its request completed.
 */
struct jnl_lw {
    struct ubj_txn *t;
    struct jnl_state *s;
    uint64_t pos;            /* position of the next block */
    uint64_t stage_pos;      /* position of the staging segment's first */
    uint32_t nstage;
    uint32_t crc, nblocks;   /* the transaction checksum so far */
    enum ubj_req_crit crit;  /* the class of its writes (jnl_commit_quiet) */
    uint32_t seg;            /* the staging segment */
    uint32_t nflight;        /* requests in flight: seg - nflight .. seg - 1 */
    int rc;                  /* the first error of a write */
    struct ubj_req req[JNL_IOSEGS];   /* segment k's write */
};

/* jnl_lw_seg -- segment k of the staging buffer. */
static inline uint8_t *jnl_lw_seg(const struct jnl_lw *w, uint32_t k)
{
    return w->s->iobuf + (size_t)k * JNL_IOBLOCKS * JNL_BS;
}

/* jnl_lw_wait_oldest -- wait for the oldest write in flight (on the
 * clock too if time-critical: ubj_bdev_wait; else for its data only). */
static void jnl_lw_wait_oldest(struct jnl_lw *w)
{
    uint32_t k = (w->seg + JNL_IOSEGS - w->nflight) % JNL_IOSEGS;
    struct ubj_bdev *d = w->t->dev;
    int rc = w->crit == UBJ_CRIT_CRITICAL ? ubj_bdev_wait(d, &w->req[k])
                                          : ubj_bdev_wait_data(d, &w->req[k]);
    if (rc < 0 && w->rc == 0)
        w->rc = rc;
    w->nflight--;
}

/* jnl_lw_submit -- submit the staged run (not waited for) and move to
 * the next segment, waiting for the write that last used it. */
static void jnl_lw_submit(struct jnl_lw *w)
{
    if (w->nstage == 0)
        return;
    struct ubj_req *r = &w->req[w->seg];
    ubj_req_init(r, UBJ_REQ_WRITE, w->s->g.start + w->stage_pos, w->nstage,
                 jnl_lw_seg(w, w->seg));
    r->crit = w->crit;
    r->flags = w->crit == UBJ_CRIT_CRITICAL ? UBJ_REQ_SYNC : 0;
    int rc = ubj_bdev_submit(w->t->dev, r);
    if (rc < 0 && w->rc == 0)
        w->rc = rc;
    w->t->stats.bytes_journal += (uint64_t)w->nstage * JNL_BS;
    w->nstage = 0;
    if (rc == 0)
        w->nflight++;
    w->seg = (w->seg + 1) % JNL_IOSEGS;
    if (w->nflight == JNL_IOSEGS)
        jnl_lw_wait_oldest(w);   /* the segment staged into next */
}

/* jnl_lw_flush -- write the staged blocks and wait for every write of the
 * log writer.  0 or the first device error. */
static int jnl_lw_flush(struct jnl_lw *w)
{
    jnl_lw_submit(w);
    while (w->nflight > 0)
        jnl_lw_wait_oldest(w);
    int rc = w->rc;
    w->rc = 0;
    return rc;
}

/* jnl_lw_put -- stage one block (escaped: first 4 bytes zeroed; chained
 * into the transaction checksum unless it is the commit block).  0, or
 * the error of a write already completed. */
static int jnl_lw_put(struct jnl_lw *w, const void *blk, bool escape, bool chain)
{
    if (w->nstage > 0 && (w->nstage == JNL_IOBLOCKS ||
                          w->pos != w->stage_pos + w->nstage))
        jnl_lw_submit(w);
    if (w->rc < 0)
        return jnl_lw_flush(w);
    if (w->nstage == 0)
        w->stage_pos = w->pos;
    uint8_t *slot = jnl_lw_seg(w, w->seg) + (size_t)w->nstage * JNL_BS;
    memcpy(slot, blk, JNL_BS);
    if (escape)
        memset(slot, 0, sizeof(uint32_t));
    if (chain) {
        w->crc = ubj_crc32c(w->crc, slot, JNL_BS);
        w->nblocks++;
    }
    w->nstage++;
    w->pos = jnl_next(w->s, w->pos);
    return 0;
}

/* jnl_ctl_init -- start a control block of `type` in s->blk. */
static struct ubj_jhdr *jnl_ctl_init(struct jnl_state *s, uint32_t type, uint64_t T)
{
    memset(s->blk, 0, JNL_BS);
    struct ubj_jhdr *h = (struct ubj_jhdr *)s->blk;
    h->magic = UBJ_JMAGIC;
    h->blocktype = type;
    h->sequence = T;
    return h;
}

/* jnl_write_revokes -- the revoke blocks of transaction T. */
static int jnl_write_revokes(struct jnl_lw *w, uint64_t T)
{
    struct jnl_state *s = w->s;
    struct ubj_jhdr *h = NULL;
    const struct ubj_jmap *m = &s->revokes;
    for (uint64_t i = 0; m->n > 0 && i <= m->mask; i++) {
        if (m->keys[i] == 0)
            continue;
        if (h == NULL)
            h = jnl_ctl_init(s, UBJ_JB_REVOKE, T);
        uint64_t blk = m->keys[i] - 1;
        memcpy(s->blk + sizeof *h + (size_t)h->count * 8, &blk, 8);
        if (++h->count == UBJ_JREVOKES_PER_BLOCK) {
            ubj_jblock_seal(s->g.seed, s->blk);
            int rc = jnl_lw_put(w, s->blk, false, true);
            if (rc < 0)
                return rc;
            h = NULL;
        }
    }
    if (h == NULL)
        return 0;
    ubj_jblock_seal(s->g.seed, s->blk);
    return jnl_lw_put(w, s->blk, false, true);
}

/* jnl_copy_crc -- the tag checksum of b's log copy (escaped or not). */
static uint32_t jnl_copy_crc(uint32_t seed, uint64_t T, const uint8_t *data,
                             bool escaped)
{
    if (!escaped)
        return ubj_jtag_crc(seed, T, data);
    static const uint8_t zero[4];
    uint32_t c = ubj_crc32c(seed, &T, sizeof T);
    c = ubj_crc32c(c, zero, sizeof zero);
    return ubj_crc32c(c, data + 4, JNL_BS - 4);
}

/* jnl_write_chunk -- one descriptor and the copies of run[k0, k0 + n). */
static int jnl_write_chunk(struct jnl_lw *w, uint64_t T, uint32_t k0, uint32_t n)
{
    struct jnl_state *s = w->s;
    struct ubj_cache *c = w->t->cache;
    struct ubj_jhdr *h = jnl_ctl_init(s, UBJ_JB_DESCRIPTOR, T);
    h->count = n;
    for (uint32_t k = 0; k < n; k++) {
        struct ubj_buf *b = ubj_cache_buf_at(c, s->run[k0 + k].idx);
        ubj_cache_seal(c, b);           /* metadata checksums, now */
        uint32_t magic;
        memcpy(&magic, b->data, sizeof magic);
        bool esc = magic == UBJ_JMAGIC;
        struct ubj_jtag tag = {
            .blocknr = s->run[k0 + k].blkno,   /* jnl_collect: b's */
            .flags = UBJ_JTAG_SAME_UUID | (esc ? UBJ_JTAG_ESCAPED : 0u) |
                     (k + 1 == n ? UBJ_JTAG_LAST : 0u),
            .crc = jnl_copy_crc(s->g.seed, T, b->data, esc),
        };
        memcpy(s->blk + sizeof *h + (size_t)k * sizeof tag, &tag, sizeof tag);
    }
    ubj_jblock_seal(s->g.seed, s->blk);
    int rc = jnl_lw_put(w, s->blk, false, true);
    for (uint32_t k = 0; k < n && rc == 0; k++) {
        struct ubj_buf *b = ubj_cache_buf_at(c, s->run[k0 + k].idx);
        uint32_t magic;
        memcpy(&magic, b->data, sizeof magic);
        rc = jnl_lw_put(w, b->data, magic == UBJ_JMAGIC, true);
    }
    return rc;
}

/* jnl_write_blocks -- descriptors and copies of the n listed buffers. */
static int jnl_write_blocks(struct jnl_lw *w, uint64_t T, uint32_t n)
{
    for (uint32_t k = 0; k < n; k += UBJ_JTAGS_PER_BLOCK) {
        uint32_t m = n - k < UBJ_JTAGS_PER_BLOCK ? n - k : UBJ_JTAGS_PER_BLOCK;
        int rc = jnl_write_chunk(w, T, k, m);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* jnl_write_commit -- the commit block of T, written now. */
static int jnl_write_commit(struct jnl_lw *w, uint64_t T)
{
    struct jnl_state *s = w->s;
    jnl_ctl_init(s, UBJ_JB_COMMIT, T);
    struct ubj_jcommit *cm = (struct ubj_jcommit *)s->blk;
    struct timespec now;
    ubj_now(&now);
    cm->commit_sec = now.tv_sec;
    cm->commit_nsec = (uint32_t)now.tv_nsec;
    cm->nblocks = w->nblocks;
    cm->txn_crc = w->crc;
    ubj_jblock_seal(s->g.seed, s->blk);
    int rc = jnl_lw_put(w, s->blk, false, false);
    return rc < 0 ? rc : jnl_lw_flush(w);
}

/* ---- commit ------------------------------------------------------------------ */

/* jnl_collect -- keep the run[] entries that are still journaled buffers of
 * the running transaction (a freed block's buffer was dropped; a buffer
 * listed twice counts once).  Returns their number. */
static uint32_t jnl_collect(struct ubj_txn *t)
{
    struct jnl_state *s = jnl_of(t);
    uint64_t T = t->txid;
    uint32_t n = 0;
    for (uint32_t k = 0; k < s->nrun; k++) {
        struct jnl_entry e = s->run[k];
        const struct ubj_buf *b = ubj_cache_buf_at(t->cache, e.idx);
        struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
        if (v.blkno != e.blkno || v.state != UBJ_BUF_DIRTY ||
            v.txid != T || !(v.flags & UBJ_BUF_PINNED) ||
            s->listed_tid[e.idx] != T || s->listed_blk[e.idx] != e.blkno)
            continue;
        s->listed_tid[e.idx] = 0;      /* taken: a duplicate entry is skipped */
        s->run[n++] = e;
    }
    s->nrun = n;
    return n;
}

/* jnl_own -- after the commit of T: buffer idx (block blkno) is owned by T
 * until a checkpoint writes it home.  0 or -ENOMEM. */
static int jnl_own(struct jnl_state *s, uint32_t idx, uint64_t blkno, uint64_t T)
{
    if (s->own_tid[idx] == 0) {
        assert(s->nowned < s->nbufs);
        s->owned[s->nowned++] = idx;
    }
    s->own_tid[idx] = T;
    s->own_blk[idx] = blkno;
    return ubj_jmap_put(&s->logged, blkno, T);
}

/* jnl_committed -- T is durable: record it in live[], hand its buffers to
 * the checkpoint, drop the copies its revokes hide, start T + 1. */
static int jnl_committed(struct ubj_txn *t, uint64_t T, uint64_t start,
                         uint64_t end, uint32_t n)
{
    struct jnl_state *s = jnl_of(t);
    int rc = 0;
    for (uint32_t k = 0; k < n && rc == 0; k++)
        rc = jnl_own(s, s->run[k].idx, s->run[k].blkno, T);
    const struct ubj_jmap *m = &s->revokes;
    for (uint64_t i = 0; m->n > 0 && i <= m->mask; i++) {
        uint64_t lt;
        if (m->keys[i] != 0 && ubj_jmap_get(&s->logged, m->keys[i] - 1, &lt) && lt < T)
            ubj_jmap_del(&s->logged, m->keys[i] - 1);
    }
    if (rc == 0 && s->nlive == s->caplive) {
        uint32_t cap = s->caplive ? s->caplive * 2 : 64;
        struct jnl_tx *l = realloc(s->live, cap * sizeof *l);
        if (l == NULL)
            rc = -ENOMEM;
        else {
            s->live = l;
            s->caplive = cap;
        }
    }
    if (rc < 0)
        return jnl_fail(s, ubj_set_error(-ENOMEM, "journal: out of memory after "
                                         "commit %llu", (unsigned long long)T));
    s->live[s->nlive++] = (struct jnl_tx){ .tid = T, .start = start,
                                           .len = jnl_dist(s, start, end) };
    s->head = end;
    t->txid = T + 1;
    jnl_running_reset(s);
    t->stats.commits++;
    return 0;
}

/* jnl_entry_cmp -- qsort order of entries: by block number. */
static int jnl_entry_cmp(const void *a, const void *b)
{
    const struct jnl_entry *x = a, *y = b;
    return (x->blkno > y->blkno) - (x->blkno < y->blkno);
}

/* jnl_write_listed -- write the listed data buffers that are still dirty,
 * unjournaled data of their block, home in block order.  0 or -EIO. */
static int jnl_write_listed(struct ubj_txn *t, enum ubj_req_crit crit)
{
    struct jnl_state *s = jnl_of(t);
    if (s->ndata > 1)
        qsort(s->data, s->ndata, sizeof *s->data, jnl_entry_cmp);
    int rc = 0;
    for (uint32_t k = 0; k < s->ndata && rc == 0; k++) {
        struct ubj_buf *b;
        if (ubj_cache_lookup(t->cache, s->data[k].blkno, &b) < 0)
            continue;   /* written and evicted since */
        struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
        if (b->idx == s->data[k].idx && v.state == UBJ_BUF_DIRTY &&
            v.kind == UBJ_KIND_DATA && !(v.flags & UBJ_BUF_PINNED))
            rc = ubj_cache_write_home_flags(t->cache, b, ubj_crit_wb(crit));
        ubj_cache_put(t->cache, b);   /* else written, dropped or journaled */
    }
    return rc;
}

/* jnl_write_data -- write unjournaled dirty data home (ordered data, or
 * writeback's before an fsync): the listed buffers, or when there were too
 * many to list every dirty unpinned buffer; with flush, make it durable. */
static int jnl_write_data(struct ubj_txn *t, bool flush, enum ubj_req_crit crit)
{
    struct jnl_state *s = jnl_of(t);
    int rc = s->data_all ? ubj_cache_writeback(t->cache, ubj_crit_wb(crit))
                         : jnl_write_listed(t, crit);
    if (rc == 0 && flush)
        rc = jnl_flush(t, crit);
    if (rc == 0) {
        s->data_pending = false;
        s->data_all = false;
        s->ndata = 0;
    }
    return rc;
}

static int jnl_checkpoint_locked(struct ubj_txn *t, bool may_commit,
                                 enum ubj_req_crit crit);

/* jnl_fit -- make room in the log for a transaction of `blocks` blocks
 * (checkpoint without committing).  0 or an error (-ENOSPC: too big). */
static int jnl_fit(struct ubj_txn *t, uint64_t blocks, enum ubj_req_crit crit)
{
    struct jnl_state *s = jnl_of(t);
    if (blocks <= jnl_log_free(s))
        return 0;
    int rc = jnl_checkpoint_locked(t, false, crit);
    if (rc < 0)
        return rc;
    if (blocks <= jnl_log_free(s))
        return 0;
    return jnl_fail(s, ubj_set_error(-ENOSPC, "journal: a transaction of %llu "
                    "blocks does not fit in the log (%llu of %llu blocks free): "
                    "the journal is too small for one operation",
                    (unsigned long long)blocks, (unsigned long long)jnl_log_free(s),
                    (unsigned long long)s->loglen));
}

/* jnl_commit_log -- phases 2-3: the log blocks of T, flush, the commit
 * block, flush.  0 or the device's error. */
static int jnl_commit_log(struct ubj_txn *t, uint64_t T, uint32_t n,
                          struct jnl_lw *w)
{
    struct jnl_state *s = jnl_of(t);
    int rc = 0;
    bool sb_flush = false;
    if (s->js_clean) {                          /* J4 */
        s->js->start = s->head;
        s->js->sequence = T;
        rc = ubj_jsuper_write(&s->g, s->js, w->crit);
        t->stats.bytes_journal += JNL_BS;
        s->js_clean = false;
        sb_flush = true;
    }
    if (rc == 0)
        rc = jnl_write_revokes(w, T);
    if (rc == 0)
        rc = jnl_write_blocks(w, T, n);
    if (rc == 0)
        rc = jnl_lw_flush(w);
    if (rc == 0 && (!s->async || sb_flush) && !jnl_broken(UBJ_JBREAK_COMMIT_FLUSH))
        rc = jnl_flush(t, w->crit);
    if (rc == 0)
        rc = jnl_write_commit(w, T);
    if (rc == 0)
        rc = jnl_flush(t, w->crit);
    return rc;
}

/* jnl_commit_quiet -- commit the running transaction, inside the barrier
 * (J7): phase 1 (ordered) data home, phases 2-3 in jnl_commit_log, phase
 * 4 bookkeeping.  `wait`: fsync/sync/unmount (writeback mode writes its
 * data first).  crit: the class of its I/O (UBJ_CRIT_CRITICAL, or lower
 * for the timer's tick: nobody waits on the clock).  Each step's writes
 * have completed before the next is submitted (the _crit calls and the
 * cache return only then), so the order log blocks, flush, commit block,
 * flush holds over a reordering queue too. */
static int jnl_commit_quiet(struct ubj_txn *t, bool wait, enum ubj_req_crit crit)
{
    struct jnl_state *s = jnl_of(t);
    ubj_txn_assert_quiet(t, "journal commit");   /* J7: every build */
    if (s->error)
        return ubj_set_error(s->error, "journal: aborted after an error (%s); "
                             "no more commits", strerror(-s->error));
    if (s->rdonly)
        return 0;
    uint32_t n = jnl_collect(t);
    bool data = s->data_pending && (s->fl != JNL_WRITEBACK || wait);
    int rc = 0;
    if (n == 0 && s->revokes.n == 0) {           /* nothing to log */
        if (data)
            rc = jnl_write_data(t, wait, crit);
        jnl_running_reset(s);
        return rc < 0 ? jnl_fail(s, ubj_set_error(rc, "journal: writing data "
                                 "home failed: %s", strerror(-rc))) : 0;
    }
    uint64_t T = t->txid, start = s->head;
    rc = jnl_fit(t, jnl_txn_blocks(n, s->revokes.n), crit);
    if (rc < 0)
        return rc;
    if (data)                                    /* phase 1 */
        rc = jnl_write_data(t, s->async && s->fl == JNL_ORDERED, crit);
    struct jnl_lw w = { .t = t, .s = s, .pos = s->head, .crc = s->g.seed,
                        .crit = crit };
    if (rc == 0)
        rc = jnl_commit_log(t, T, n, &w);        /* phases 2-3 */
    if (rc < 0)
        return jnl_fail(s, ubj_set_error(rc, "journal: commit %llu failed: %s",
                                         (unsigned long long)T, strerror(-rc)));
    jnl_trace("commit %llu: %u blocks, %llu revokes, log %llu..%llu%s",
              (unsigned long long)T, n, (unsigned long long)s->revokes.n,
              (unsigned long long)start, (unsigned long long)w.pos,
              data ? ", data first" : "");
    rc = jnl_committed(t, T, start, w.pos, n);   /* phase 4 */
    assert(rc < 0 || jnl_invariants(t));
    return rc;
}

/* jnl_commit_locked -- take the barrier (wait for the open handles to
 * stop: LOCKED, then COMMITTING), commit (I/O at class crit), lift it (J7). */
static int jnl_commit_locked(struct ubj_txn *t, bool wait, enum ubj_req_crit crit)
{
    ubj_txn_lock_updates(t);
    int rc = jnl_commit_quiet(t, wait, crit);
    ubj_txn_unlock_updates(t);
    return rc;
}

/* ---- checkpoint ------------------------------------------------------------- */

/* jnl_logged_prune -- forget log copies in transactions before `tid`. */
static int jnl_logged_prune(struct jnl_state *s, uint64_t tid)
{
    struct ubj_jmap keep = { 0 };
    const struct ubj_jmap *m = &s->logged;
    for (uint64_t i = 0; m->n > 0 && i <= m->mask; i++)
        if (m->keys[i] != 0 && m->vals[i] >= tid &&
            ubj_jmap_put(&keep, m->keys[i] - 1, m->vals[i]) < 0) {
            ubj_jmap_free(&keep);
            return -ENOMEM;
        }
    ubj_jmap_free(&s->logged);
    s->logged = keep;
    return 0;
}

/* jnl_advance_tail -- drop the live transactions before `tid` (all of
 * them home and flushed) and persist the new tail (J5). */
static int jnl_advance_tail(struct ubj_txn *t, uint64_t tid, enum ubj_req_crit crit)
{
    struct jnl_state *s = jnl_of(t);
    uint32_t drop = 0;
    while (drop < s->nlive && s->live[drop].tid < tid)
        drop++;
    if (drop == 0)
        return 0;
    memmove(s->live, s->live + drop, (s->nlive - drop) * sizeof *s->live);
    s->nlive -= drop;
    int rc = jnl_logged_prune(s, tid);
    if (rc < 0)
        return jnl_fail(s, ubj_set_error(rc, "journal: out of memory"));
    s->js->start = s->nlive ? s->live[0].start : s->head;
    s->js->sequence = s->nlive ? s->live[0].tid : t->txid;
    rc = ubj_jsuper_write(&s->g, s->js, crit);
    t->stats.bytes_journal += JNL_BS;
    if (rc == 0)
        rc = jnl_flush(t, crit);
    if (rc < 0)
        return jnl_fail(s, ubj_set_error(rc, "journal: cannot move the log tail: %s",
                                         strerror(-rc)));
    return 0;
}

/* jnl_ckpt_pick -- unpin the owned buffers that may go home (into
 * scratch[]); the others stay owned.  Returns the oldest tid the tail
 * must keep (J3), and *nw. */
static uint64_t jnl_ckpt_pick(struct ubj_txn *t, uint32_t *nw)
{
    struct jnl_state *s = jnl_of(t);
    uint64_t blocker = s->forget_min;
    uint32_t keep = 0;
    *nw = 0;
    for (uint32_t k = 0; k < s->nowned; k++) {
        uint32_t idx = s->owned[k];
        struct ubj_buf *b = ubj_cache_buf_at(t->cache, idx);
        struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
        if (v.blkno != s->own_blk[idx] || v.state != UBJ_BUF_DIRTY) {
            s->own_tid[idx] = 0;           /* dropped: its block was freed */
            continue;
        }
        if (v.txid >= t->txid) {           /* re-dirtied in the running txn */
            if (s->own_tid[idx] < blocker)
                blocker = s->own_tid[idx];
            s->owned[keep++] = idx;
            continue;
        }
        ubj_cache_clear_flags(t->cache, b, UBJ_BUF_PINNED);
        s->scratch[(*nw)++] = idx;
    }
    s->nowned = keep;
    return blocker;
}

/* jnl_checkpoint_locked -- write the committed buffers home, flush, and
 * move the tail as far as J3 allows.  At a handle boundary with
 * may_commit, the running transaction commits first, so that nothing
 * blocks the tail and the whole log empties.  I/O at class crit. */
static int jnl_checkpoint_locked(struct ubj_txn *t, bool may_commit,
                                 enum ubj_req_crit crit)
{
    struct jnl_state *s = jnl_of(t);
    if (s->rdonly)
        return 0;
    if (s->error)
        return ubj_set_error(s->error, "journal: aborted after an error");
    int rc = 0;
    if (may_commit && ubj_txn_safe_point(t) && !jnl_running_empty(s) &&
        (rc = jnl_commit_locked(t, false, crit)) < 0)
        return rc;
    uint32_t nw;
    uint64_t blocker = jnl_ckpt_pick(t, &nw);
    if (nw > 0) {
        rc = ubj_cache_writeback(t->cache, ubj_crit_wb(crit));
        if (rc == 0 && !jnl_broken(UBJ_JBREAK_CKPT_FLUSH))
            rc = jnl_flush(t, crit);
    }
    uint64_t done = 0;
    for (uint32_t k = 0; k < nw; k++) {
        uint32_t idx = s->scratch[k];
        struct ubj_buf *b = ubj_cache_buf_at(t->cache, idx);
        struct ubj_buf_view v = ubj_cache_peek(t->cache, b);
        if (v.state == UBJ_BUF_DIRTY && v.blkno == s->own_blk[idx]) {
            ubj_cache_set_flags(t->cache, b, UBJ_BUF_PINNED);   /* not home */
            if (s->own_tid[idx] < blocker)
                blocker = s->own_tid[idx];
            s->owned[s->nowned++] = idx;
        } else {
            s->own_tid[idx] = 0;
            done++;
        }
    }
    if (rc < 0)
        return jnl_fail(s, ubj_set_error(rc, "journal: checkpoint: writing home "
                                         "failed: %s", strerror(-rc)));
    t->stats.bytes_checkpoint += done * JNL_BS;
    jnl_trace("checkpoint: %llu home, tail to %llu (running %llu, %u live)",
              (unsigned long long)done,
              (unsigned long long)(blocker < t->txid ? blocker : t->txid),
              (unsigned long long)t->txid, s->nlive);
    uint32_t before = s->nlive;
    rc = jnl_advance_tail(t, blocker < t->txid ? blocker : t->txid, crit);
    if (done > 0 || s->nlive < before)
        t->stats.checkpoints++;
    s->ticks_live = 0;
    return rc;
}

/* ---- recovery at mount ------------------------------------------------------ */

/* jnl_recover_rdonly -- a read-only mount must not write the image: the
 * replay plan goes into the cache as pinned dirty buffers (never written:
 * a read-only mount never commits nor checkpoints). */
static int jnl_recover_rdonly(struct ubj_txn *t, uint64_t *blocks)
{
    struct jnl_state *s = jnl_of(t);
    struct ubj_jscan sc;
    int rc = ubj_journal_scan(&s->g, s->js, 0, &sc);
    if (rc < 0)
        return rc;
    if (sc.nrep > s->nbufs / 2)
        rc = ubj_set_error(-ENOMEM, "journal: a read-only mount cannot hold the "
                           "%zu blocks to recover in a cache of %u buffers: "
                           "mount read-write to replay the journal",
                           sc.nrep, s->nbufs);
    for (size_t i = 0; i < sc.nrep && rc == 0; i++) {
        struct ubj_buf *b;
        rc = ubj_cache_get(t->cache, sc.rep[i].home, UBJ_GET_NOREAD, &b);
        if (rc < 0)
            break;
        rc = ubj_journal_read_copy(&s->g, &sc.rep[i], b->data);
        if (rc == 0) {
            ubj_cache_mark_dirty(t->cache, b, UBJ_KIND_DATA, 0);
            ubj_cache_set_flags(t->cache, b, UBJ_BUF_PINNED);
        }
        ubj_cache_put(t->cache, b);
    }
    *blocks = sc.nrep;
    ubj_jscan_free(&sc);
    return rc;
}

/* jnl_recover -- SCAN / REVOKE / REPLAY what the last session left. */
static int jnl_recover(struct ubj_txn *t)
{
    struct jnl_state *s = jnl_of(t);
    uint64_t t0 = jnl_now_ns(), blocks = 0;
    int rc = 0;
    if (s->js->start != 0 && s->rdonly) {
        rc = jnl_recover_rdonly(t, &blocks);
    } else if (s->js->start != 0) {
        struct ubj_jrec_result r;
        rc = ubj_journal_recover(&s->g, 0, &r);
        blocks = r.blocks;
        if (rc >= 0)
            rc = ubj_jsuper_read(&s->g, s->js);   /* restarted: start 0 */
    }
    t->stats.recovered_blocks = blocks;
    t->stats.recovery_ns = jnl_now_ns() - t0;
    return rc < 0 ? rc : 0;
}

/* ---- mount / unmount --------------------------------------------------------- */

/* jnl_state_free -- release the per-mount state. */
static void jnl_state_free(struct jnl_state *s)
{
    if (s == NULL)
        return;
    free(s->js);
    free(s->live);
    free(s->run);
    free(s->data);
    free(s->dlisted);
    free(s->dlisted_blk);
    free(s->listed_tid);
    free(s->listed_blk);
    ubj_jmap_free(&s->revokes);
    ubj_jmap_free(&s->freed);
    free(s->own_tid);
    free(s->own_blk);
    free(s->owned);
    free(s->scratch);
    ubj_jmap_free(&s->logged);
    free(s->iobuf);
    free(s->blk);
    free(s);
}

/* jnl_state_new -- the per-mount state for n buffers, or NULL. */
static struct jnl_state *jnl_state_new(uint32_t n)
{
    struct jnl_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->nbufs = n;
    s->js = aligned_alloc(JNL_BS, JNL_BS);
    s->listed_tid = calloc(n, sizeof *s->listed_tid);
    s->listed_blk = calloc(n, sizeof *s->listed_blk);
    s->data = malloc(JNL_DATA_LIST * sizeof *s->data);
    s->dlisted = calloc(n, sizeof *s->dlisted);
    s->dlisted_blk = calloc(n, sizeof *s->dlisted_blk);
    s->own_tid = calloc(n, sizeof *s->own_tid);
    s->own_blk = calloc(n, sizeof *s->own_blk);
    s->owned = malloc((size_t)n * sizeof *s->owned);
    s->scratch = malloc((size_t)n * sizeof *s->scratch);
    s->iobuf = aligned_alloc(JNL_BS, (size_t)JNL_IOSEGS * JNL_IOBLOCKS * JNL_BS);
    s->blk = aligned_alloc(JNL_BS, JNL_BS);
    s->forget_min = UINT64_MAX;
    if (!s->js || !s->listed_tid || !s->listed_blk || !s->data || !s->dlisted ||
        !s->dlisted_blk ||
        !s->own_tid ||
        !s->own_blk || !s->owned || !s->scratch || !s->iobuf || !s->blk) {
        jnl_state_free(s);
        return NULL;
    }
    return s;
}

/* jnl_limits -- the running-transaction limit: a quarter of the log (as
 * jbd2's j_max_transaction_buffers) and of the cache. */
static void jnl_limits(struct jnl_state *s)
{
    uint64_t l = jnl_lim_txn ? jnl_lim_txn : s->loglen / 4;
    if (l > s->nbufs / 4)
        l = s->nbufs / 4;
    if (l < JNL_MIN_TXN)
        l = JNL_MIN_TXN;
    while (l > 1 && jnl_txn_blocks(l, 2 * UBJ_JREVOKES_PER_BLOCK) >= s->loglen / 4)
        l--;
    s->max_txn = (uint32_t)l;
}

/* jnl_geom -- the journal in the format area of the image (t->img).  The
 * superblock is read once more, as a mount has always done (its I/O is
 * part of what the device models measure), though the geometry comes
 * from the file system's description. */
static int jnl_geom(struct ubj_txn *t, const char *mode, struct ubj_jgeom *g)
{
    void *sb = aligned_alloc(JNL_BS, JNL_BS);
    if (sb == NULL)
        return ubj_set_error(-ENOMEM, "mode %s: out of memory", mode);
    int rc = ubj_bdev_read(t->dev, 0, 1, sb);
    if (rc < 0)
        rc = ubj_set_error(rc, "mode %s: cannot read the superblock", mode);
    else if (t->img.area_blocks == 0)
        rc = ubj_set_error(-EINVAL, "mode %s needs a journal, and this image "
                           "has none (mkfs with --journal-size or a journal "
                           "mode)", mode);
    else
        rc = ubj_journal_geom(&t->img, g);
    free(sb);
    return rc;
}

static int jnl_reclaim(void *ctx);
/* the cache hooks: reclaim only (no write hooks: PINNED keeps what is not
 * committed from the device, J1) */
static const struct ubj_cache_hooks jnl_hooks = { .reclaim = jnl_reclaim };

/* jnl_mount -- find the journal, register the reclaim hook, recover, set
 * up the empty log. */
static int jnl_mount(struct ubj_txn *t, enum jnl_flavour fl)
{
    struct ubj_jgeom g;
    int rc = jnl_geom(t, jnl_names[fl], &g);
    if (rc < 0)
        return rc;
    struct jnl_state *s = jnl_state_new(ubj_cache_nbufs(t->cache));
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "mode %s: out of memory", jnl_names[fl]);
    s->fl = fl;
    s->g = g;
    s->rdonly = t->arg == &jnl_rdonly_token;
    s->loglen = g.blocks - UBJ_JOURNAL_FIRST;
    s->head = UBJ_JOURNAL_FIRST;
    t->priv = s;
    ubj_cache_set_hooks(t->cache, &jnl_hooks, t);
    uint64_t cap = s->nbufs / 2 < s->loglen / 2 ? s->nbufs / 2 : s->loglen / 2;
    ubj_handles_set_capacity(t, cap);   /* J7: what open handles reserve */
    rc = ubj_jsuper_read(&s->g, s->js);
    if (rc == 0)
        rc = jnl_recover(t);
    if (rc < 0) {
        jnl_state_free(s);
        t->priv = NULL;
        return rc;
    }
    s->js_clean = s->js->start == 0;
    s->async = (s->js->feat_compat & UBJ_JFEAT_COMPAT_ASYNC_COMMIT) != 0;
    t->txid = s->js->sequence ? s->js->sequence : 1;
    jnl_limits(s);
    return 0;
}

/* jnl_mark_clean -- an empty log on disk: start 0, flushed. */
static int jnl_mark_clean(struct ubj_txn *t)
{
    struct jnl_state *s = jnl_of(t);
    if (s->js_clean)
        return 0;
    s->js->start = 0;
    s->js->sequence = t->txid;
    int rc = ubj_jsuper_write(&s->g, s->js, UBJ_CRIT_CRITICAL);
    t->stats.bytes_journal += JNL_BS;
    if (rc == 0)
        rc = jnl_flush(t, UBJ_CRIT_CRITICAL);
    if (rc == 0)
        s->js_clean = true;
    return rc;
}

/* jnl_unmount -- a final commit, a full checkpoint, an empty log. */
static int jnl_unmount(struct ubj_txn *t)
{
    struct jnl_state *s = jnl_of(t);
    if (s == NULL)
        return 0;
    int rc = 0;
    if (!s->rdonly) {
        rc = jnl_commit_locked(t, true, UBJ_CRIT_CRITICAL);
        if (rc == 0)
            rc = jnl_checkpoint_locked(t, true, UBJ_CRIT_CRITICAL);
        if (rc == 0 && s->nlive != 0)
            rc = ubj_set_error(-EIO, "journal: %u transactions could not be "
                               "checkpointed", s->nlive);
        if (rc == 0)
            rc = jnl_mark_clean(t);
    }
    jnl_state_free(s);
    t->priv = NULL;
    return rc;
}

/* ---- handles ------------------------------------------------------------------ */

/* jnl_make_room -- before handle h opens: commit the running
 * transaction once it reached its limit (jbd2 commits when
 * t_outstanding_credits would pass j_max_transaction_buffers; we count
 * what was really journaled, since the file system's credits
 * over-reserve; the commit waits for the handles open beside h);
 * checkpoint when the log could not take the transaction grown by h and
 * the open handles, or committed buffers crowd the cache.  h->priv: the
 * nrun h may reach (the log room secured for its credits). */
static int jnl_make_room(struct ubj_handle *h)
{
    struct ubj_txn *t = h->t;
    struct jnl_state *s = jnl_of(t);
    uint32_t credits = h->credits;
    if (s->rdonly)
        return 0;
    int rc = 0;
    /* a transaction that freed many blocks commits too, so that reusing
     * them (J6: journaled while their free is uncommitted) stays rare */
    if (s->nrun >= s->max_txn || s->freed.n >= s->max_txn)
        rc = jnl_commit_locked(t, false, UBJ_CRIT_CRITICAL);
    uint64_t open = ubj_txn_outstanding(t);
    uint32_t all = open + credits > UINT32_MAX ? UINT32_MAX : (uint32_t)(open + credits);
    if (rc == 0 && (jnl_log_free(s) < jnl_reserve(s, all) ||
                    s->nowned > s->nbufs / 2))
        rc = jnl_checkpoint_locked(t, true, UBJ_CRIT_CRITICAL);
    h->priv = s->nrun + (credits < s->loglen / 2 ? credits : s->loglen / 2);
    return rc;
}

/* jnl_start -- before h opens: refuse an aborted journal, make room. */
static int jnl_start(struct ubj_handle *h)
{
    struct jnl_state *s = jnl_of(h->t);
    if (s->error)
        return ubj_set_error(-EROFS, "journal: aborted after an error (%s): "
                             "read-only", strerror(-s->error));
    return jnl_make_room(h);
}

/* jnl_write_access -- commits are synchronous, inside the barrier (no
 * handle open), so no buffer is ever being copied to the log while a
 * handle changes it: no frozen copy is needed (jbd2's b_frozen_data);
 * against a home write's snapshot, ubj_txn_write_access waits (the
 * stable-buffer rule, docs/DESIGN.md). */
static int jnl_write_access(struct ubj_handle *h, struct ubj_buf **b)
{
    (void)h;
    (void)b;
    return 0;
}

/* jnl_list -- put b in the running transaction's list (once per block). */
static int jnl_list(struct jnl_state *s, const struct ubj_buf *b, uint64_t T)
{
    uint32_t i = b->idx;
    if (s->listed_tid[i] == T && s->listed_blk[i] == b->d->blkno)
        return 0;
    if (s->nrun == s->caprun) {
        uint32_t cap = s->caprun ? s->caprun * 2 : 256;
        struct jnl_entry *r = realloc(s->run, cap * sizeof *r);
        if (r == NULL)
            return ubj_set_error(-ENOMEM, "journal: out of memory");
        s->run = r;
        s->caprun = cap;
    }
    s->run[s->nrun++] = (struct jnl_entry){ .blkno = b->d->blkno, .idx = i };
    s->listed_tid[i] = T;
    s->listed_blk[i] = b->d->blkno;
    return 0;
}

/* jnl_list_data -- remember an unjournaled data buffer for the next data
 * write (once per transaction; a full list means "write them all"). */
static void jnl_list_data(struct jnl_state *s, const struct ubj_buf *b, uint64_t T)
{
    if (s->data_all || (s->dlisted[b->idx] == T && s->ndata > 0 &&
                        s->dlisted_blk[b->idx] == b->d->blkno))
        return;
    if (s->ndata == JNL_DATA_LIST) {
        s->data_all = true;
        return;
    }
    s->data[s->ndata++] = (struct jnl_entry){ .blkno = b->d->blkno, .idx = b->idx };
    s->dlisted[b->idx] = T;
    s->dlisted_blk[b->idx] = b->d->blkno;
}

/* jnl_journals -- whether a change of b (kind) goes through the log. */
static bool jnl_journals(const struct jnl_state *s, const struct ubj_handle *h,
                         const struct ubj_buf *b, enum ubj_buf_kind kind)
{
    if (kind == UBJ_KIND_META || (ubj_cache_peek(h->t->cache, b).flags & UBJ_BUF_PINNED))
        return true;     /* metadata, or a copy already in the log path */
    if (s->fl == JNL_JOURNAL && s->nrun < s->nbufs / 2 &&
        s->nrun + 1 + JNL_DATA_MARGIN <= h->priv)
        return true;     /* data=journal, within the room the handle got
                            (an operation too big for the log: ordered) */
    /* J6: a block freed by this (uncommitted) transaction may still hold
     * committed data of its old owner: never home before the commit */
    return ubj_jmap_get(&s->freed, b->d->blkno, NULL);
}

/* jnl_dirty -- b joins the running transaction: journaled buffers are
 * pinned and listed (J1), others are data to order (J6). */
static int jnl_dirty(struct ubj_handle *h, struct ubj_buf *b, enum ubj_buf_kind kind)
{
    struct ubj_txn *t = h->t;
    struct jnl_state *s = jnl_of(t);
    bool journaled = jnl_journals(s, h, b, kind);
    ubj_cache_mark_dirty(t->cache, b, kind, t->txid);
    h->used++;
    if (ubj_cache_peek(t->cache, b).state != UBJ_BUF_DIRTY)
        return 0;        /* a freed block still held: its change is dropped */
    uint64_t blk = b->d->blkno;
    if (journaled) {
        if (kind == UBJ_KIND_DATA)
            jnl_trace("txn %llu: data block %llu journaled%s",
                      (unsigned long long)t->txid, (unsigned long long)blk,
                      ubj_jmap_get(&s->freed, blk, NULL) ? " (freed and reused)" : "");
        ubj_cache_set_flags(t->cache, b, UBJ_BUF_PINNED);
        ubj_jmap_del(&s->revokes, blk);   /* a newer copy follows: no revoke */
        return jnl_list(s, b, t->txid);
    }
    s->data_pending = true;
    jnl_list_data(s, b, t->txid);
    if (s->fl == JNL_JOURNAL)
        jnl_trace("txn %llu: data block %llu ordered (log full)",
                  (unsigned long long)t->txid, (unsigned long long)blk);
    if (ubj_jmap_get(&s->logged, blk, NULL) &&   /* an old copy in the log */
        ubj_jmap_put(&s->revokes, blk, 1) < 0)
        return ubj_set_error(-ENOMEM, "journal: out of memory");
    return 0;
}

/* jnl_forget -- a freed block: drop its cached versions, revoke its log
 * copies (J6), and keep their transaction in the log until this one
 * commits (J3). */
static int jnl_forget(struct ubj_handle *h, uint64_t blkno)
{
    struct ubj_txn *t = h->t;
    struct jnl_state *s = jnl_of(t);
    uint64_t tid;
    ubj_cache_forget(t->cache, blkno);
    int rc = ubj_jmap_put(&s->freed, blkno, 1);
    if (rc == 0 && ubj_jmap_get(&s->logged, blkno, &tid)) {
        jnl_trace("txn %llu: block %llu freed, revoked (copy in %llu)",
                  (unsigned long long)t->txid, (unsigned long long)blkno,
                  (unsigned long long)tid);
        rc = ubj_jmap_put(&s->revokes, blkno, 1);
        if (tid < s->forget_min)
            s->forget_min = tid;
    }
    return rc < 0 ? ubj_set_error(-ENOMEM, "journal: out of memory") : 0;
}

/* jnl_stop -- nothing to finish: the handle layer uncounts h. */
static int jnl_stop(struct ubj_handle *h)
{
    (void)h;
    return 0;
}

/* ---- commit policy ---------------------------------------------------------- */

/* jnl_commit -- fsync/fdatasync/sync: commit now (a second fsync finds
 * nothing to commit and costs nothing: group commit); sync checkpoints. */
static int jnl_commit(struct ubj_txn *t, unsigned flags)
{
    struct jnl_state *s = jnl_of(t);
    if (s->rdonly)
        return 0;
    int rc = jnl_commit_locked(t, (flags & UBJ_COMMIT_WAIT) != 0, UBJ_CRIT_CRITICAL);
    if (rc == 0 && (flags & UBJ_COMMIT_SYNC))
        rc = jnl_checkpoint_locked(t, true, UBJ_CRIT_CRITICAL);
    return rc;
}

/* jnl_tick -- the timer: commit; checkpoint when the log is half full,
 * committed buffers fill half the cache, or after 6 ticks.  The I/O's
 * class from the caller's flags (ubj_tick_crit). */
static int jnl_tick(struct ubj_txn *t, unsigned flags)
{
    struct jnl_state *s = jnl_of(t);
    enum ubj_req_crit crit = ubj_tick_crit(flags);
    if (s->rdonly || s->error)
        return 0;
    int rc = jnl_commit_locked(t, false, crit);
    if (rc < 0)
        return rc;
    if (s->nlive > 0)
        s->ticks_live++;
    if (jnl_log_free(s) < s->loglen / 2 || s->nowned > s->nbufs / 2 ||
        s->ticks_live >= JNL_CKPT_AGE_TICKS)
        rc = jnl_checkpoint_locked(t, true, crit);
    return rc;
}

/* jnl_reclaim -- the cache's reclaim hook (ctx: the mount): commit at a
 * handle boundary, write committed buffers home.  -ENOBUFS if that made no
 * room. */
static int jnl_reclaim(void *ctx)
{
    struct ubj_txn *t = ctx;
    struct jnl_state *s = jnl_of(t);
    if (s->rdonly || s->error)
        return ubj_set_error(-ENOBUFS, "journal: the cache (%u buffers) is full "
                             "and cannot be written home", s->nbufs);
    bool progress = false;
    int rc = 0;
    bool safe = ubj_txn_safe_point(t);   /* a commit here never waits */
    if (safe && !jnl_running_empty(s)) {
        rc = jnl_commit_locked(t, false, UBJ_CRIT_CRITICAL);
        progress = rc == 0;
    }
    uint64_t home = t->stats.bytes_checkpoint;
    if (rc == 0)
        rc = jnl_checkpoint_locked(t, safe, UBJ_CRIT_CRITICAL);
    if (rc < 0)
        return rc;
    if (!progress && t->stats.bytes_checkpoint == home)
        return ubj_set_error(-ENOBUFS, "journal: the cache (%u buffers) is full of "
                             "the running operation's changes", s->nbufs);
    return 0;
}

/* jnl_prepare -- before the cache exists: note a read-only mount. */
static int jnl_prepare(const struct ubj_config *cfg, const struct ubj_mode_image *img,
                       struct ubj_cache_config *cc, void **arg)
{
    (void)img;
    (void)cc;
    if (cfg != NULL && (cfg->nvm_path != NULL || cfg->nvm_size || cfg->nvm_flags ||
                        cfg->nvm_profile != NULL))
        return ubj_set_error(-EINVAL, "mount: the journal modes take no NVM "
                             "region (--nvm and its options are for mode ubj)");
    *arg = cfg != NULL && (cfg->flags & UBJ_MOUNT_RDONLY) ? &jnl_rdonly_token : NULL;
    return 0;
}

/* jnl_mount_ordered -- mount op of mode ordered. */
static int jnl_mount_ordered(struct ubj_txn *t)
{
    return jnl_mount(t, JNL_ORDERED);
}

/* jnl_mount_journal -- mount op of mode journal. */
static int jnl_mount_journal(struct ubj_txn *t)
{
    return jnl_mount(t, JNL_JOURNAL);
}

/* jnl_mount_writeback -- mount op of mode writeback. */
static int jnl_mount_writeback(struct ubj_txn *t)
{
    return jnl_mount(t, JNL_WRITEBACK);
}

/* JNL_OPS -- the ops table of one mode: all share the implementation. */
#define JNL_OPS(var, modename, mountfn)                                      \
    const struct ubj_mode_ops var = {                                        \
        .version = UBJ_MODE_OPS_VERSION,                                     \
        .name = modename,                                                    \
        .mount = mountfn,                                                    \
        .unmount = jnl_unmount,                                              \
        .start = jnl_start,                                                  \
        .write_access = jnl_write_access,                                    \
        .dirty = jnl_dirty,                                                  \
        .forget = jnl_forget,                                                \
        .stop = jnl_stop,                                                    \
        .commit = jnl_commit,                                                \
        .tick = jnl_tick,                                                    \
        .prepare = jnl_prepare,                                              \
    }

JNL_OPS(ubj_mode_ordered, "ordered", jnl_mount_ordered);
JNL_OPS(ubj_mode_journal, "journal", jnl_mount_journal);
JNL_OPS(ubj_mode_writeback, "writeback", jnl_mount_writeback);
