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

/* fs_ra_probe -- the cache's UBJ_RA_* bits of file page `page` of the
 * call's inode (a hole: cached); the adaptive policy's view of a window's
 * fate (raadapt.c). */
unsigned fs_ra_probe(struct fs_ra_call *c, uint64_t page)
{
    return ra_probe(c, page, false);
}

/* fs_ra_pblk -- the device block of file page `page` of the call's inode
 * (0: a hole, past the mapping, or an error); the adaptive policy's view
 * of a window's layout (raadapt.c). */
uint64_t fs_ra_pblk(struct fs_ra_call *c, uint64_t page)
{
    uint64_t pblk;
    return ra_map(c, page, &pblk) < 0 ? 0 : pblk;
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
            uint64_t t0 = fs_ra_now(c->md);
            /* async: wanted from now on (the reader's pace is unknown;
             * a late hit raises it to time-critical) */
            int rc = async ? ubj_cache_readahead_async(fs->cache, pblk, k, mark, t0)
                           : fs_read_ahead(fs, pblk, k, mark);
            if (rc == FS_RESTART)
                return rc;
            if (rc > 0) {
                fs->ra_energy_j += ra_energy(c->md) - e0;
                if (!async && rc == (int)k && c->md != NULL) {   /* one request of k */
                    double t = (double)(fs_ra_now(c->md) - t0);
                    fs_ra_fit_add(&fs->ra_fit, k, t);
                    if (c->miss)
                        fs_ra_adaptive_miss(c, k, t);
                }
            }
            run = k;
        }
        page += run;
    }
    return 0;
}

/* ra_submit -- fs_ra_ops.submit: read the window ahead; under adaptive
 * the call's missing pages from the stepped one on (as off reads them)
 * and, of the window's pages beyond the call, as many as
 * fs_ra_adaptive_len allows (the marker only with them), and a small
 * file's rest with a window kept whole (fs_ra_adaptive_tail), cut where the
 * file's layout makes further requests that do not pay
 * (fs_ra_adaptive_layout; raadapt.c).  A bet on a small random read's
 * neighbours (offered by ra_neighbours) is read only as far as the
 * call's request reaches (fs_ra_adaptive_nb_cut), with no marker and not
 * as a window of the stream's.  A read of the call's pages alone is timed
 * as the stream's miss (fs_ra_adaptive_miss). */
static int ra_submit(void *ctx, uint64_t start, uint32_t n, uint64_t marker)
{
    struct fs_ra_call *c = ctx;
    if (c->fs->ra_policy != FS_RA_ADAPTIVE)
        return ra_read(c, start, n, marker, start >= c->last &&
                                            !(c->fs->flags & UBJ_MOUNT_RA_SYNC));
    uint64_t end = start + n, xs = start > c->last ? start : c->last;
    uint32_t x = end > xs ? (uint32_t)(end - xs) : 0;
    uint32_t keep = x ? fs_ra_adaptive_len(c, x, start >= c->last) : 0;
    bool bet = c->bet && start < c->last;   /* a bet on the neighbours */
    c->bet = false;
    if (bet) {   /* in the call's request only; no marker: no stream */
        keep = keep > 0 ? fs_ra_adaptive_nb_cut(c, xs, keep) : 0;
        marker = FS_RA_NO_MARKER;
    } else {
        if (x > 0)
            keep = fs_ra_adaptive_tail(c, xs, keep);   /* a small file's rest */
        if (keep > 0)   /* each further request the layout takes must pay */
            keep = fs_ra_adaptive_layout(c, xs, keep, start <= c->last);
    }
    if (keep == 0 || marker >= xs + keep)
        marker = keep == 0 ? FS_RA_NO_MARKER : marker;
    if (keep > 0 && !bet)
        fs_ra_window_note(c, xs, keep);
    c->miss = keep == 0;   /* the call's pages alone: a miss, timed */
    if (start <= c->last)   /* the window continues the call: one range */
        return ra_read(c, c->cur, xs + keep - c->cur, marker, false);
    int rc = ra_read(c, c->cur, c->last - c->cur, marker, false);
    return rc == 0 && keep > 0
           ? ra_read(c, xs, keep, marker, !(c->fs->flags & UBJ_MOUNT_RA_SYNC)) : rc;
}

/* ra_neighbours -- fs_ra_ops.neighbours: adaptive's bet on a small random
 * read's neighbours (fs_ra_adaptive_neighbours). */
static uint32_t ra_neighbours(void *ctx, uint64_t index, uint64_t last)
{
    (void)index;
    (void)last;
    return fs_ra_adaptive_neighbours(ctx);
}

static const struct fs_ra_ops ra_ops = {
    .cached = ra_cached, .take_marker = ra_take_marker, .future = ra_future,
    .submit = ra_submit, .neighbours = ra_neighbours,
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
        fs_ra_adaptive_step(c, page);
    int rc = fs_ra_page(&c->s->ra, c->fs->ra_policy, &ra_ops, c, page, c->last,
                        c->npages);
    if (rc == FS_RESTART)
        return rc;
    if (rc < 0 || c->err < 0)
        ubj_clear_error();   /* S3: the demand read reports its own */
    c->err = 0;
    return 0;
}
