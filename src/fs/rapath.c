/*
 * rapath.c -- read-ahead in the read path: the bridge between the window
 * engine (readahead.c, which decides in file pages and does no I/O) and
 * the cache (ubj_cache_readahead, ubj_cache_ra_probe, in device blocks).
 * It owns the stream states of a mount -- the per-inode default streams of
 * the inode-number calls (fs->ra_slots) and the rules that tie a stream to
 * its inode (fs->ra_epoch: invalidation) and to its open file's advice --
 * and the engine's callbacks over one read call (struct fs_ra_call).
 *
 * Streams.  A struct ubj_file carries its own stream (ofile.c); ubj_pread
 * by inode number uses the default stream of its inode, one of
 * FS_RA_SLOTS direct-mapped slots (a slot taken by another inode starts
 * afresh: two files read alternately through inode numbers whose slots
 * collide lose their windows, never correctness).
 *
 * Invariants:
 *  S1 A stream is used only under the mount lock (the engine's state is
 *     changed by fs_ra_step with the lock held; the cache's read-ahead
 *     releases it only inside its device read, after the engine updated
 *     the window and before it looks at it again).
 *  S2 A stream whose epoch is not its inode's fs->ra_epoch slot is reset
 *     before use (fs_ra_stream): truncate (and any future range-shifting
 *     operation) calls fs_ra_invalidate, so no window survives the pages
 *     it described.
 *  S3 Read-ahead errors never fail a read: the page the caller needs is
 *     got (and its error reported) by the normal path; only FS_RESTART
 *     (the lock was released and something changed: file.c F4) unwinds.
 */
#include <errno.h>
#include <string.h>
#include "fs/fs.h"
#include "ubjfs/model.h"

/* fs_ra_slot -- the default-stream and epoch slot of inode ino. */
static inline uint32_t fs_ra_slot(ubj_ino_t ino)
{
    return (uint32_t)((ino * 0x9e3779b97f4a7c15ULL) >> 58) & (FS_RA_SLOTS - 1);
}

/* fs_ra_invalidate -- truncate or a range-shifting change of ino: every
 * stream of it starts afresh at its next read (S2).  Lock held. */
void fs_ra_invalidate(struct ubj_fs *fs, ubj_ino_t ino)
{
    fs->ra_epoch[fs_ra_slot(ino)]++;
}

/* fs_ra_stream_reset -- a fresh window for ino, as advice says: NORMAL the
 * mount's window, SEQUENTIAL twice it, RANDOM no window (mm/fadvise.c). */
static void fs_ra_stream_reset(const struct ubj_fs *fs, struct fs_ra_stream *s,
                               ubj_ino_t ino, int advice)
{
    memset(s, 0, sizeof *s);
    fs_ra_init(&s->ra, fs->ra_pages);
    s->p_used = 1.0;
    s->ino = ino;
    s->epoch = fs->ra_epoch[fs_ra_slot(ino)];
    fs_ra_stream_advise(fs, s, advice);
}

/* fs_ra_stream_advise -- apply an open file's advice to its stream: the
 * window's size and the random mode change, the window stays (as Linux's
 * fadvise sets ra_pages and FMODE_RANDOM only). */
void fs_ra_stream_advise(const struct ubj_fs *fs, struct fs_ra_stream *s, int advice)
{
    s->advice = advice;
    s->ra.random = advice == UBJ_FADV_RANDOM;
    s->ra.ra_pages = advice == UBJ_FADV_SEQUENTIAL ? 2 * fs->ra_pages : fs->ra_pages;
}

/* fs_ra_stream -- the stream a read of ino uses (own: an open file's, or
 * NULL for the inode's default), valid for this read (S2); NULL when the
 * mount's policy keeps no window.  Lock held. */
struct fs_ra_stream *fs_ra_stream(struct ubj_fs *fs, ubj_ino_t ino,
                                  struct fs_ra_stream *own, int advice)
{
    if (fs->ra_policy == FS_RA_OFF_PAGE || fs->ra_policy == FS_RA_OFF)
        return NULL;
    struct fs_ra_stream *s = own ? own : &fs->ra_slots[fs_ra_slot(ino)];
    if (s->ino != ino || s->epoch != fs->ra_epoch[fs_ra_slot(ino)])
        fs_ra_stream_reset(fs, s, ino, advice);
    else if (s->advice != advice)
        fs_ra_stream_advise(fs, s, advice);
    return s;
}

/* ---- the engine's callbacks over one read call --------------------------- */

/* ra_map -- the device block of file page `page` (0: a hole or past the
 * mapping), through the call's one-extent memo.  0 or fs_ext_map's error. */
static int ra_map(struct fs_ra_call *c, uint64_t page, uint64_t *pblk)
{
    if (page >= c->m_lblk && page < c->m_lblk + c->m_len) {
        *pblk = c->m_pblk ? c->m_pblk + (page - c->m_lblk) : 0;
        return 0;
    }
    if (page >= c->npages || page >= UINT32_MAX) {
        *pblk = 0;
        return 0;
    }
    uint64_t max = c->npages - page;
    uint32_t len;
    int rc = fs_ext_map(c->fs, c->r, (uint32_t)page,
                        max > UINT32_MAX ? UINT32_MAX : (uint32_t)max, &c->m_pblk, &len);
    if (rc < 0) {
        c->err = rc;
        *pblk = 0;
        return rc;
    }
    c->m_lblk = page;
    c->m_len = len;
    *pblk = c->m_pblk;
    return 0;
}

/* ra_probe -- the cache's UBJ_RA_* bits of page's block (take: clear the
 * marker); a hole (nothing to read) counts cached and unmarked. */
static unsigned ra_probe(struct fs_ra_call *c, uint64_t page, bool take)
{
    uint64_t pblk;
    if (ra_map(c, page, &pblk) < 0 || pblk == 0)
        return UBJ_RA_CACHED;
    return ubj_cache_ra_probe(c->fs->cache, pblk, take);
}

/* ra_cached -- fs_ra_ops.cached. */
static int ra_cached(void *ctx, uint64_t page)
{
    return (ra_probe(ctx, page, false) & UBJ_RA_CACHED) != 0;
}

/* ra_take_marker -- fs_ra_ops.take_marker. */
static int ra_take_marker(void *ctx, uint64_t page)
{
    return (ra_probe(ctx, page, true) & UBJ_RA_MARKED) != 0;
}

/* ra_future -- fs_ra_ops.future: the oracle's answer (ubj_config.ra_future). */
static int ra_future(void *ctx, uint64_t page)
{
    struct fs_ra_call *c = ctx;
    return c->fs->ra_future != NULL &&
           c->fs->ra_future(c->fs->ra_future_ctx, c->r->ino, page) != 0;
}

/* ra_energy -- the model's active energy so far (0 without a model). */
static double ra_energy(struct ubj_bdev *md)
{
    struct ubj_model_stats ms;
    if (md == NULL || ubj_model_stats_get(md, &ms) < 0)
        return 0;
    return ms.energy_active_j;
}

#define RA_EXPLORE 1u   /* adaptive: pages ahead at first while the fit is not
                           ready, doubling with each measured request */

/* ra_now -- the model's clock, ns (0 without a model). */
static uint64_t ra_now(struct ubj_bdev *md)
{
    struct ubj_clock *clk = md ? ubj_model_clock(md) : NULL;
    return clk ? ubj_clock_now(clk) : 0;
}

/* ra_fit_add -- adaptive: one request of k blocks took t ns. */
static void ra_fit_add(struct fs_ra_fit *f, double k, double t)
{
    f->n += 1;
    f->sk += k;
    f->st += t;
    f->skk += k * k;
    f->skt += k * t;
    f->stt += t * t;
}

/* ra_fit_get -- the fit's a (ns per request) and b (ns per block), and
 * whether the line explains the requests (relative RMS residual below
 * 5%, a >= 0: a device whose cost is a + b k, as flash and SSD models;
 * a disk's seeks and buffer hits are not).  false while it cannot tell a
 * from b (fewer than 3 requests, or one size). */
static bool ra_fit_get(const struct fs_ra_fit *f, double *a, double *b, bool *linear)
{
    double det = f->n * f->skk - f->sk * f->sk;
    if (f->n < 3 || det < 1e-9 * f->n * f->skk)
        return false;
    *b = (f->n * f->skt - f->sk * f->st) / det;
    *a = (f->st - *b * f->sk) / f->n;
    double sse = f->stt - *a * f->st - *b * f->skt, mean = f->st / f->n;
    *linear = *a >= -0.01 * mean && sse <= 0.0025 * mean * mean * f->n;
    return true;
}

/* ra_adaptive_len -- how many of the `x` pages a window asks for beyond
 * the call adaptive reads ahead (docs/READAHEAD.md, "adaptive"): a
 * read-ahead page saves, when used, its share a / r of the request a call
 * of r pages would make; it costs b when wasted.  With u the stream's
 * used fraction, gain = u a / r and loss = (1 - u) b: all x when gain >
 * 2 loss (grow, as linux ramps), x / 2 when gain > loss (shrink), else
 * none (off), but a probe of 4 pages every 16th refusal to measure u
 * again; none ever when the device has no per-request cost worth a tenth
 * of a block (raw NAND: reading ahead saves nothing).  While the fit
 * cannot tell a from b (exploring): RA_EXPLORE pages, twice as many after
 * each measured request, of a window that continues the call (`ahead`,
 * an asynchronous window, is not read: a cut one would leave a hole
 * before it).  When the fit's line does not explain the
 * device (a disk: seeks, drive buffer hits), a is taken as large: u
 * alone decides.  Without a device model (nothing timed): all x. */
static uint32_t ra_adaptive_len(struct fs_ra_call *c, uint32_t x, bool ahead)
{
    struct ubj_fs *fs = c->fs;
    struct fs_ra_stream *s = c->s;
    double a, b, r = (double)(c->last - c->first), u = s->p_used;
    bool linear = false;
    if (c->md == NULL)
        return x;   /* no model: nothing to measure, linux's windows */
    if (!ra_fit_get(&fs->ra_fit, &a, &b, &linear)) {   /* exploring */
        uint32_t cap = RA_EXPLORE << (fs->ra_fit.n < 8 ? (unsigned)fs->ra_fit.n : 8u);
        return ahead ? 0 : x < cap ? x : cap;
    }
    if (b < 1)
        b = 1;
    if (linear && a <= 0.1 * b) {
        fs->ra_gated++;
        return 0;   /* no per-request cost: never pays */
    }
    if (!linear)
        a = 1e9 * b;   /* unknown: large; u decides */
    double gain = u * a / r, loss = (1 - u) * b;
    if (gain > 2 * loss)
        return x;   /* grows with linux's windows */
    if (gain > loss)
        return x / 2 > 0 ? x / 2 : 1;   /* shrinks */
    fs->ra_gated++;
    if (++s->w_off % 16 == 0)
        return x < 4 ? x : 4;   /* off, but a probe */
    return 0;
}

/* ra_window_note -- adaptive: a window of pages [start, start + n)
 * beyond the calls was read ahead; it replaces the ring's oldest, whose
 * used fraction enters the stream's average. */
static void ra_window_note(struct fs_ra_stream *s, uint64_t start, uint32_t n)
{
    uint32_t w = s->w_head;
    if (s->w_len[w] > 0)
        s->p_used = 0.7 * s->p_used + 0.3 * (double)s->w_used[w] / s->w_len[w];
    s->w_start[w] = s->w_next[w] = start;
    s->w_len[w] = n;
    s->w_used[w] = 0;
    s->w_head = (w + 1) % FS_RA_WINDOWS;
}

/* ra_window_use -- adaptive: page is read by a call; count it in the
 * tracked window it falls in (once, pages taken in increasing order). */
static void ra_window_use(struct fs_ra_stream *s, uint64_t page)
{
    for (uint32_t w = 0; w < FS_RA_WINDOWS; w++)
        if (page >= s->w_next[w] && page < s->w_start[w] + s->w_len[w]) {
            s->w_used[w]++;
            s->w_next[w] = page + 1;
        }
}

/* ra_read -- read pages [start, start + n) ahead, one cache call per
 * physically contiguous stretch (the marker on page `marker`): waited for,
 * each timed for adaptive's fit -- or, `async` (a window wholly beyond
 * the call), submitted time-limited and not waited for
 * (ubj_cache_readahead_async: the reader meets its ready time when it gets
 * there); FS_RESTART, else 0 (S3: errors dropped). */
static int ra_read(struct fs_ra_call *c, uint64_t start, uint64_t n, uint64_t marker,
                   bool async)
{
    struct ubj_fs *fs = c->fs;
    uint64_t mark = UINT64_MAX;
    if (marker != FS_RA_NO_MARKER) {
        uint64_t p;
        if (ra_map(c, marker, &p) == 0 && p != 0)
            mark = p;
    }
    for (uint64_t page = start; page < start + n;) {
        uint64_t pblk;
        if (ra_map(c, page, &pblk) < 0)
            return 0;   /* S3 */
        uint64_t run = c->m_lblk + c->m_len - page;
        if (run > start + n - page)
            run = start + n - page;
        if (run == 0)
            return 0;
        if (pblk != 0) {
            uint32_t k = run > UBJ_CACHE_RUN_MAX ? UBJ_CACHE_RUN_MAX : (uint32_t)run;
            double e0 = ra_energy(c->md);
            uint64_t t0 = ra_now(c->md);
            /* async: wanted from now on (the reader's pace is unknown;
             * a late hit raises it to time-critical) */
            int rc = async ? ubj_cache_readahead_async(fs->cache, pblk, k, mark, t0)
                           : fs_read_ahead(fs, pblk, k, mark);
            if (rc == FS_RESTART)
                return rc;
            if (rc > 0) {
                fs->ra_energy_j += ra_energy(c->md) - e0;
                if (!async && rc == (int)k && c->md != NULL)   /* one request of k */
                    ra_fit_add(&fs->ra_fit, k, (double)(ra_now(c->md) - t0));
            }
            run = k;
        }
        page += run;
    }
    return 0;
}

/* ra_submit -- fs_ra_ops.submit: read the window ahead; under adaptive
 * the call's missing pages from the stepped one on (as off reads them)
 * and, of the window's pages beyond the call, as many as ra_adaptive_len
 * allows (the marker only with them). */
static int ra_submit(void *ctx, uint64_t start, uint32_t n, uint64_t marker)
{
    struct fs_ra_call *c = ctx;
    if (c->fs->ra_policy != FS_RA_ADAPTIVE)
        return ra_read(c, start, n, marker, start >= c->last &&
                                            !(c->fs->flags & UBJ_MOUNT_RA_SYNC));
    uint64_t end = start + n, xs = start > c->last ? start : c->last;
    uint32_t x = end > xs ? (uint32_t)(end - xs) : 0;
    uint32_t keep = x ? ra_adaptive_len(c, x, start >= c->last) : 0;
    if (keep == 0 || marker >= xs + keep)
        marker = keep == 0 ? FS_RA_NO_MARKER : marker;
    if (keep > 0)
        ra_window_note(c->s, xs, keep);
    if (start <= c->last)   /* the window continues the call: one range */
        return ra_read(c, c->cur, xs + keep - c->cur, marker, false);
    int rc = ra_read(c, c->cur, c->last - c->cur, marker, false);
    return rc == 0 && keep > 0
           ? ra_read(c, xs, keep, marker, !(c->fs->flags & UBJ_MOUNT_RA_SYNC)) : rc;
}

static const struct fs_ra_ops ra_ops = {
    .cached = ra_cached, .take_marker = ra_take_marker, .future = ra_future,
    .submit = ra_submit,
};

/* fs_ra_call_begin -- a read call of [off, end) bytes (end <= the size)
 * of the inode in r through stream s.  Lock held. */
void fs_ra_call_begin(struct fs_ra_call *c, struct ubj_fs *fs, struct fs_iref *r,
                      struct fs_ra_stream *s, uint64_t off, uint64_t end)
{
    memset(c, 0, sizeof *c);
    c->fs = fs;
    c->r = r;
    c->s = s;
    c->first = c->cur = off / UBJ_BS;
    c->last = (end + UBJ_BS - 1) / UBJ_BS;
    c->npages = (r->ip->size + UBJ_BS - 1) / UBJ_BS;
    c->md = ubj_model_find(fs->dev);
}

/* fs_ra_step -- the engine's step before page `page` of the call is got
 * from the cache: 0 or FS_RESTART (S3). */
int fs_ra_step(struct fs_ra_call *c, uint64_t page)
{
    if (page >= c->last)
        return 0;
    c->cur = page;
    if (c->fs->ra_policy == FS_RA_ADAPTIVE)
        ra_window_use(c->s, page);
    int rc = fs_ra_page(&c->s->ra, c->fs->ra_policy, &ra_ops, c, page, c->last,
                        c->npages);
    if (rc == FS_RESTART)
        return rc;
    if (rc < 0 || c->err < 0)
        ubj_clear_error();   /* S3: the demand read reports its own */
    c->err = 0;
    return 0;
}
