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
}

/* ra_fit_get -- the fit's a (ns per request) and b (ns per block); false
 * while it cannot tell them apart (fewer than 4 requests, or one size). */
static bool ra_fit_get(const struct fs_ra_fit *f, double *a, double *b)
{
    double det = f->n * f->skk - f->sk * f->sk;
    if (f->n < 4 || det < 1e-9 * f->n * f->skk)
        return false;
    *b = (f->n * f->skt - f->sk * f->st) / det;
    *a = (f->st - *b * f->sk) / f->n;
    return true;
}

/* ra_adaptive_len -- how many of the `x` pages a window asks for beyond
 * the call's adaptive reads ahead (docs/READAHEAD.md, "adaptive"): a
 * read-ahead page saves, when used, its share a / r of the request a call
 * of r pages would make; it costs b when wasted.  With u the stream's
 * used fraction: all x when u a / r > (1 - u) b and u >= 1/2; x u when
 * it pays with u below 1/2 (shrink); none when it does not pay (off),
 * except a probe of 4 pages every 16th refusal to measure u again; none
 * ever when the device has no per-request cost worth a tenth of a block
 * (raw NAND: reading ahead saves nothing).  While the fit cannot tell a
 * from b: all x (the windows are the measurements). */
static uint32_t ra_adaptive_len(struct fs_ra_call *c, uint32_t x)
{
    struct ubj_fs *fs = c->fs;
    struct fs_ra_stream *s = c->s;
    double a, b;
    if (!ra_fit_get(&fs->ra_fit, &a, &b))
        return x;
    if (b < 1)
        b = 1;
    if (a <= 0.1 * b) {
        fs->ra_gated++;
        return 0;   /* no per-request cost: never pays */
    }
    double r = (double)(c->last - c->first), u = s->p_used;
    if (u * a / r > (1 - u) * b)
        return u >= 0.5 ? x : (uint32_t)(x * u) > 0 ? (uint32_t)(x * u) : 1;
    fs->ra_gated++;
    if (++s->w_off % 16 == 0)
        return x < 4 ? x : 4;   /* probe */
    return 0;
}

/* ra_window_note -- adaptive: a window of pages [start, start + n)
 * beyond the calls was read ahead; the older of the two tracked ones is
 * done: its used fraction enters the stream's average. */
static void ra_window_note(struct fs_ra_stream *s, uint64_t start, uint32_t n)
{
    if (s->w_len[0] > 0)
        s->p_used = 0.7 * s->p_used + 0.3 * (double)s->w_used[0] / s->w_len[0];
    s->w_start[0] = s->w_start[1];
    s->w_len[0] = s->w_len[1];
    s->w_used[0] = s->w_used[1];
    s->w_next[0] = s->w_next[1];
    s->w_start[1] = start;
    s->w_len[1] = n;
    s->w_used[1] = 0;
    s->w_next[1] = start;
}

/* ra_window_use -- adaptive: page is read by a call; count it in the
 * tracked window it falls in (once, pages taken in increasing order). */
static void ra_window_use(struct fs_ra_stream *s, uint64_t page)
{
    for (int w = 0; w < 2; w++)
        if (page >= s->w_next[w] && page < s->w_start[w] + s->w_len[w]) {
            s->w_used[w]++;
            s->w_next[w] = page + 1;
        }
}

/* ra_read -- read pages [start, start + n) ahead, one cache call per
 * physically contiguous stretch (the marker on page `marker`), timing
 * each for adaptive's fit; FS_RESTART, else 0 (S3: errors dropped). */
static int ra_read(struct fs_ra_call *c, uint64_t start, uint64_t n, uint64_t marker)
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
            int rc = fs_read_ahead(fs, pblk, k, mark);
            if (rc == FS_RESTART)
                return rc;
            if (rc > 0) {
                fs->ra_energy_j += ra_energy(c->md) - e0;
                if (rc == (int)k && c->md != NULL)   /* one request of k */
                    ra_fit_add(&fs->ra_fit, k, (double)(ra_now(c->md) - t0));
            }
            run = k;
        }
        page += run;
    }
    return 0;
}

/* ra_submit -- fs_ra_ops.submit: read the window ahead; under adaptive
 * the pages beyond the call only as far as ra_adaptive_len allows (the
 * marker goes with them). */
static int ra_submit(void *ctx, uint64_t start, uint32_t n, uint64_t marker)
{
    struct fs_ra_call *c = ctx;
    if (c->fs->ra_policy != FS_RA_ADAPTIVE)
        return ra_read(c, start, n, marker);
    uint64_t end = start + n, dend = end < c->last ? end : c->last;
    uint64_t xs = start > c->last ? start : c->last;   /* beyond the call */
    uint32_t x = end > xs ? (uint32_t)(end - xs) : 0;
    uint32_t keep = x ? ra_adaptive_len(c, x) : 0;
    if (keep < x)
        marker = marker < xs + keep ? marker : FS_RA_NO_MARKER;
    if (keep > 0)
        ra_window_note(c->s, xs, keep);
    uint64_t rs = start > c->cur ? start : c->cur;   /* the call's part */
    uint64_t rend = keep > 0 ? xs + keep : dend;
    return rend > rs ? ra_read(c, rs, rend - rs, marker) : 0;
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
