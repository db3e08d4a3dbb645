/*
 * raadapt.c -- the `adaptive` read-ahead policy's decisions (the read path
 * that applies them is rapath.c; the windows it cuts are the engine's,
 * readahead.c).  It owns three things:
 *
 *  - the device's cost of a read of k blocks, a + b k: declared by the
 *    model (ubj_model_read_cost, from its profile, for a request `gap`
 *    blocks after the stream's previous one), or, when nothing declares
 *    one, measured (fs->ra_fit: a least-squares fit over the read-ahead
 *    requests, timed on the model's clock; exploring small windows until
 *    it can tell a from b);
 *  - the stream's use: the used fraction of its read-ahead (a moving
 *    average over its windows, each folded in when the reader passes its
 *    end or when it leaves the ring of the last FS_RA_WINDOWS), and the
 *    fraction its stride predicts (r pages read, then `gap` skipped);
 *  - the gate (fs_ra_adaptive_len: how many of a window's pages beyond the
 *    call to read), the window's cap (ra_cap: linux's 128 KiB, grown up
 *    to 1 MiB while the per-request term dominates a window's transfer
 *    and the stream uses what it reads), a small file's rest
 *    (fs_ra_adaptive_tail: read in the same request when the follow-on
 *    request would cost more) and the window's layout
 *    (fs_ra_adaptive_layout: a waited-for window cut into several
 *    requests by a fragmented file reads a further one only when it pays,
 *    at the stream's measured miss cost, fs_ra_adaptive_miss);
 *  - the bets on a small random read's neighbours (fs_ra_adaptive_neighbours,
 *    ra_nb_len, fs_ra_adaptive_nb_cut): at a jump the engine reads as it
 *    is, the pages after the call, priced by the gate with u the
 *    probability that a later read asks for one (ra_nb_p: a per-call
 *    hazard measured on the bets, a bet not yet got pending, not unused,
 *    over the calls still expected; kept apart from the windows'),
 *    growing while the measure says they pay, and only as far as the
 *    call's request reads them (no request of its own).
 *
 * docs/READAHEAD.md, "The oracle and the adaptive policy", has the rules, the state
 * diagram and the figures.  Everything here runs under the mount lock
 * (rapath.c S1) and only under FS_RA_ADAPTIVE.
 *
 * Invariants:
 *  A1 0 <= s->p_used <= 1 (a moving average of fractions in [0, 1]).
 *  A2 fs_ra_adaptive_len(c, x, ...) <= x: of the engine's window adaptive
 *     reads a part; past it only fs_ra_adaptive_tail reads, and only up
 *     to the end of a file no larger than ra_want's window.
 *  A3 s->ra.ra_pages is the advice's window (fs_ra_stream_advise) or a
 *     power of two up to UBJ_CACHE_RUN_MAX above it (ra_cap).
 *  A4 0 < ra_nb_p(c, false) <= 1, and a bet reads at most s->nb_k <= the
 *     stream's window pages, all in the request of the call's own last page.
 */
#include <errno.h>
#include <math.h>
#include "fs/fs.h"
#include "ubjfs/model.h"

#define RA_EXPLORE 1u        /* measuring: pages ahead at first, doubling
                                with each measured request */
#define RA_NEAR_GAP 256u     /* a stride gap up to this is "near": the disk
                                passes it rather than seeks */
#define RA_CAP_RATIO 8.0     /* grow the cap until a <= b x pages / 8 */
#define RA_CACHE_SHARE 8u    /* a grown window, or a file's rest read at
                                once, takes at most nbufs / 8 buffers: read-
                                ahead must not push out the working set
                                (a break test: adaptive:8192 on an 8 MiB
                                file in a 16 MiB cache read it whole at a
                                random read of page 0, 1.7x slower) */
#define RA_CAP_USE 0.9       /* ... while the stream uses this much */
#define RA_CAP_FOLDS 1u      /* ... of at least this many windows */
#define RA_NB_PRIOR 0.25     /* a neighbour bet's use before any is
                                measured: one page in four (ra_nb_horizon:
                                the least horizon gives it at the stream's
                                density) */

#if UBJ_TEST_HOOKS
static bool ra_break_nocost;   /* the broken variant ra-no-cost */
static bool ra_break_nolayout; /* the broken variant ra-no-layout */
static bool ra_break_nbu;      /* the broken variant ra-nb-u */
static bool ra_break_nblag;    /* the broken variant ra-nb-lag */

/* fs_ra_test_break_nblag -- see fs.h. */
void fs_ra_test_break_nblag(bool nb_lag)
{
    ra_break_nblag = nb_lag;
}

/* fs_ra_test_break_nbu -- see fs.h. */
void fs_ra_test_break_nbu(bool nb_u)
{
    ra_break_nbu = nb_u;
}

/* fs_ra_test_break_nolayout -- see fs.h. */
void fs_ra_test_break_nolayout(bool no_layout)
{
    ra_break_nolayout = no_layout;
}

/* fs_ra_test_break_nocost -- see fs.h. */
void fs_ra_test_break_nocost(bool no_cost)
{
    ra_break_nocost = no_cost;
}
#endif

/* ra_cost -- the cost the device declares for a request `gap` blocks
 * after the stream's previous one: 0, or -EOPNOTSUPP (none). */
static int ra_cost(struct fs_ra_call *c, uint64_t gap, struct ubj_model_rcost *k)
{
#if UBJ_TEST_HOOKS
    if (ra_break_nocost)
        return -EOPNOTSUPP;   /* broken variant ra-no-cost: never asked */
#endif
    int rc = c->md != NULL ? ubj_model_read_cost(c->md, gap, k) : -EOPNOTSUPP;
    if (rc < 0)
        ubj_clear_error();
    return rc;
}

/* fs_ra_now -- the model's clock, ns (0 without a model). */
uint64_t fs_ra_now(struct ubj_bdev *md)
{
    struct ubj_clock *clk = md ? ubj_model_clock(md) : NULL;
    return clk ? ubj_clock_now(clk) : 0;
}

/* fs_ra_fit_add -- measuring: one request of k blocks took t ns. */
void fs_ra_fit_add(struct fs_ra_fit *f, double k, double t)
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

/* ra_gap -- the stream's gap before this call: pages between where its
 * previous call ended and this call's first page; UBJ_MODEL_GAP_FAR for
 * the first call, a backward or a far jump (another stream on the same
 * state, or a random read). */
static uint64_t ra_gap(const struct fs_ra_call *c)
{
    int64_t prev = c->s->ra.prev_pos;
    if (prev < 0)
        return UBJ_MODEL_GAP_FAR;
    uint64_t next = ((uint64_t)prev >> 12) + (((uint64_t)prev & 4095u) == 0);
    if (c->first < next || c->first - next > RA_NEAR_GAP)
        return UBJ_MODEL_GAP_FAR;
    return c->first - next;
}

/* ra_gate -- the test on cost a + b k and use u, for x pages beyond a
 * call of r: a used page saves its share a / r of the request the call
 * would otherwise make, a wasted one costs b: gain = u a / r, loss =
 * (1 - u) b.  All x when gain > 2 loss (grow, as linux ramps), x / 2
 * when gain > loss (shrink), else none (off) but a probe of 4 pages
 * every 16th refusal, to measure u again. */
static uint32_t ra_gate(struct fs_ra_call *c, uint32_t x, double a, double b, double u)
{
    double r = (double)(c->last - c->first);
    double gain = u * a / r, loss = (1 - u) * b;
    if (gain > 2 * loss)
        return x;
    if (gain > loss)
        return x / 2 > 0 ? x / 2 : 1;
    c->fs->ra_gated++;
    if (++c->s->w_off % 16 == 0)
        return x < 4 ? x : 4;
    return 0;
}

/* ra_measured_len -- the gate on the measured cost (no model declares
 * one): while the fit cannot tell a from b, RA_EXPLORE pages, twice as
 * many after each measured request, of a window that continues the call
 * (`ahead`, an asynchronous window, is not read: a cut one would leave a
 * hole before it); a linear fit with a <= 0.1 b: never (raw NAND); a fit
 * that is not linear (a disk): a taken as large, u alone decides. */
static uint32_t ra_measured_len(struct fs_ra_call *c, uint32_t x, bool ahead)
{
    struct ubj_fs *fs = c->fs;
    double a, b;
    bool linear = false;
    if (!ra_fit_get(&fs->ra_fit, &a, &b, &linear)) {
        uint32_t cap = RA_EXPLORE << (fs->ra_fit.n < 8 ? (unsigned)fs->ra_fit.n : 8u);
        return ahead ? 0 : x < cap ? x : cap;
    }
    if (b < 1)
        b = 1;
    if (linear && a <= 0.1 * b) {
        fs->ra_gated++;
        return 0;
    }
    return ra_gate(c, x, linear ? a : 1e9 * b, b, c->s->p_used);
}

/* ra_jump -- the call is a small random read of a stream with a past: its
 * gap is far (a backward or far jump), it is not the stream's first call
 * nor at page 0 (the engine's start of file), not larger than the window
 * and not under RANDOM advice.  A window read beyond it is a bet on its
 * neighbours. */
static bool ra_jump(const struct fs_ra_call *c)
{
    return c->s->ra.prev_pos >= 0 && c->first > 0 && !c->s->ra.random &&
           c->last - c->first <= c->s->ra.ra_pages && ra_gap(c) == UBJ_MODEL_GAP_FAR;
}

/* ra_nb_horizon -- the calls a bet page is still expected to be asked
 * for in, for a per-call hazard h0 (the stream's density: r pages of the
 * file's npages a call): as many calls as the stream has made (the Lindy
 * estimate), but at least the horizon at which the prior gives
 * RA_NB_PRIOR, and at most the calls a page survives in the cache (its
 * buffers over the pages a call brings in: r and the bet). */
static double ra_nb_horizon(const struct fs_ra_call *c, double h0)
{
    const struct fs_ra_stream *s = c->s;
    double r = (double)(c->last - c->first), k = s->nb_k > 0 ? s->nb_k : 1;
    double r0 = log1p(-RA_NB_PRIOR) / log1p(-h0);
    double life = (double)ubj_cache_nbufs(c->fs->cache) / (r + k);
    double rr = s->n_calls > r0 ? s->n_calls : r0;
    return rr < life ? rr : life;
}

/* ra_nb_p -- the probability that a later read asks for a neighbour the
 * stream bet on, A4: 1 - (1 - h)^R, with h the per-call hazard that a
 * given page not yet got is asked for, and R the calls still expected
 * (ra_nb_horizon).  h is measured on the bets, censoring-aware: (pages
 * got + 1) / (exposure + 1 / h0) -- a bet page not yet got is pending,
 * not a failure: it adds a call of exposure at each call of the stream,
 * and a page evicted unused goes on adding (a failure); the prior is one
 * use in 1 / h0 page-calls, h0 the stream's density (r / npages).  The
 * earlier estimate, (used + prior) / (pages bet + prior's weight), counted
 * a page bet and not yet got as unused: a random stream's neighbour is got
 * long after it is bet on, and its bets stopped for good (ssd:sata: 10
 * pages).  `measured`: without the prior's use but with its exposure,
 * used / (exposure + 1 / h0) -- the bet grows on evidence beyond the
 * prior (0 before any page is got; with the exposure alone, one page got
 * early over a few page-calls grew bets that SQLite's queries never read:
 * point queries on hdd:modern7200 with its read-ahead off 1.043x). */
static double ra_nb_p(const struct fs_ra_call *c, bool measured)
{
    const struct fs_ra_stream *s = c->s;
    double r = (double)(c->last - c->first), n = c->npages > 0 ? (double)c->npages : 1;
    double h0 = r < n ? r / n : 0.5;
#if UBJ_TEST_HOOKS
    if (ra_break_nblag)   /* broken variant ra-nb-lag: pending is unused */
        return measured ? (s->nb_iss > 0 ? (double)s->nb_used / s->nb_iss : 0)
                        : fmin(1, (s->nb_used + 1.0) / (s->nb_iss + 4.0));
#endif
    double h = measured ? s->nb_used / (s->nb_expo + 1.0 / h0)
                        : (s->nb_used + 1.0) / (s->nb_expo + 1.0 / h0);
    if (h >= 1)
        return 1;
    double p = -expm1(ra_nb_horizon(c, h0) * log1p(-h));
    return p > 0 || measured ? p : 1e-9;
}

/* fs_ra_adaptive_neighbours -- a small random read's miss (the engine's
 * standalone case): the pages after the call to offer the gate as a
 * neighbour bet (fs_ra_adaptive_len prices them): the stream's next bet,
 * nb_k pages; none where the call is no jump (a stride's next page is the
 * one it skips) or the device declares no per-request cost worth a block
 * (raw NAND). */
uint32_t fs_ra_adaptive_neighbours(struct fs_ra_call *c)
{
    struct ubj_model_rcost far;
    c->bet = false;
    if (!c->jump || c->md == NULL || ra_cost(c, UBJ_MODEL_GAP_FAR, &far) < 0 ||
        far.a_ns <= far.b_ns)
        return 0;
    c->bet = true;
    return c->s->nb_k > 0 ? c->s->nb_k : 1;
}

/* ra_nb_len -- the gate for a neighbour bet: ra_gate's test with u the
 * probability that a later read asks for a neighbour (ra_nb_p, A4) and a
 * the far request that read would make, without its probe (no bet is
 * refused for good: the estimate rises again as earlier bets are got).
 * The next bet doubles when the whole window paid on the measure alone (up to the window's cap: a
 * used neighbour saves a request, a wasted one costs its transfer, per
 * page alike), halves when half did, is one page when none did. */
static uint32_t ra_nb_len(struct fs_ra_call *c, uint32_t x, const struct ubj_model_rcost *far)
{
    struct fs_ra_stream *s = c->s;
    double p = ra_nb_p(c, false);
#if UBJ_TEST_HOOKS
    if (ra_break_nbu)
        p = s->p_used;   /* broken variant ra-nb-u: the windows' use */
#endif
    c->ad_u = p;
    c->ad_a = far->a_ns;
    double r = (double)(c->last - c->first), b = far->b_ns > 1 ? far->b_ns : 1;
    double gain = p * far->a_ns / r, loss = (1 - p) * b;
    uint32_t keep = gain > 2 * loss ? x : gain > loss ? (x / 2 > 0 ? x / 2 : 1) : 0;
    uint32_t k = s->nb_k > 0 ? s->nb_k : 1;
    double pm = ra_nb_p(c, true);
    if (keep == x && keep > 0 && pm * far->a_ns / r > 2 * (1 - pm) * b)   /* measured */
        s->nb_k = 2 * k < s->ra.ra_pages ? 2 * k : s->ra.ra_pages;
    else if (keep == x && keep > 0)
        s->nb_k = k;
    else
        s->nb_k = keep > 0 && k > 1 ? k / 2 : 1;
    return keep;
}

/* fs_ra_adaptive_nb_cut -- of the `keep` pages from xs a neighbour bet
 * kept, those one request reads with the call's own: while uncached and
 * on the device block after the previous (the call's last page missing:
 * its request is being made).  A bet never makes a request of its own: a
 * neighbour of a fragmented file elsewhere on the disk costs a request
 * and (measured on SQLite point queries, hdd:modern7200) a turn, against
 * its transfer alone in the call's.  The pages read count as the bets'. */
uint32_t fs_ra_adaptive_nb_cut(struct fs_ra_call *c, uint64_t xs, uint32_t keep)
{
    uint64_t last = c->last - 1, pblk = fs_ra_pblk(c, last);
    uint32_t n = 0;
    if (pblk == 0 || (fs_ra_probe(c, last) & UBJ_RA_CACHED) || xs != c->last)
        return 0;
    while (n < keep && !(fs_ra_probe(c, xs + n) & UBJ_RA_CACHED) &&
           fs_ra_pblk(c, xs + n) == pblk + 1 + n)
        n++;
    c->s->nb_iss += n;
    return n;
}

/* fs_ra_adaptive_len -- how many of the `x` pages a window asks for beyond
 * the call adaptive reads (A2).  With a declared cost: none ever when the
 * device has no per-request term worth a block anywhere (raw NAND:
 * reading ahead only wastes), else the gate with a for this stream's gap
 * and u the stream's measured use -- but at most r / (r + gap) when the
 * stream strides (it skipped `gap` pages after its last call, as before
 * it, or at most 4 r: those pages will be skipped again; a stream's first
 * call of r > 1 pages is taken for a stride of gap r, and given at least
 * half the window either way), and at least
 * RA_CAP_USE for an asynchronous window otherwise (a hit of the marker:
 * the stream read its window up to there).  Asynchronous windows are read
 * as any other.  Without a declared cost, the measured one
 * (ra_measured_len).  Without a model (nothing to measure on): all x,
 * linux's windows.  A bet on a small random read's neighbours (c->bet):
 * ra_nb_len; the engine's context window at such a jump (history cached
 * below the miss: pages earlier jumps read, or a stream's trace) is a bet
 * as well once the stream has made one: u at most the bets' measured use
 * (ra_nb_p) -- on a random stream linux's context windows are wasted,
 * and no window of its ring is folded in time to tell. */
uint32_t fs_ra_adaptive_len(struct fs_ra_call *c, uint32_t x, bool ahead)
{
    struct ubj_model_rcost far, k;
    if (c->md == NULL)
        return x;
    if (ra_cost(c, UBJ_MODEL_GAP_FAR, &far) < 0)
        return ra_measured_len(c, x, ahead);
    if (far.a_ns <= far.b_ns) {
        c->fs->ra_gated++;
        return 0;   /* no per-request cost: never pays */
    }
    if (c->bet && !ahead)
        return ra_nb_len(c, x, &far);   /* a bet on the neighbours */
    uint64_t gap = ra_gap(c);
    double u = c->s->p_used, r = (double)(c->last - c->first);
    bool first = c->s->ra.prev_pos < 0 && c->last - c->first > 1;
    if (first)
        gap = c->last - c->first;   /* a first call of several pages: it may
                                       skip as much as it reads */
    bool stride = gap != UBJ_MODEL_GAP_FAR && gap > 0 &&
                  (gap == c->s->gap_prev || (double)gap <= 4 * r);
    if (stride)
        u = fmin(u, r / (r + (double)gap));
    else if (c->jump && !ahead && c->s->nb_iss > 0)   /* a context window at */
        u = fmin(u, ra_nb_p(c, false));                    /* a jump: a bet too */
    else if (ahead)
        u = fmax(u, RA_CAP_USE);
    if (ra_cost(c, gap, &k) < 0)
        k = far;
    c->ad_u = u;
    c->ad_a = k.a_ns;
    uint32_t keep = ra_gate(c, x, k.a_ns, k.b_ns > 1 ? k.b_ns : 1, u);
    return first && keep < x / 2 ? x / 2 : keep;   /* ... or not: half, to see */
}

/* ra_miss_cost -- what a miss of the call's stream costs per request
 * beyond its transfer: measured (s->a_miss, over its requests of the
 * calls' pages alone) once it made one, else the gate's declared a. */
static double ra_miss_cost(const struct fs_ra_call *c)
{
    return c->s->n_miss > 0 ? c->s->a_miss : c->ad_a;
}

/* fs_ra_adaptive_miss -- a request of the call's k pages alone (no page
 * beyond the call) took t ns on the model's clock: its per-request part,
 * t less the declared transfer, enters the stream's moving average. */
void fs_ra_adaptive_miss(struct fs_ra_call *c, uint32_t k, double t)
{
    struct ubj_model_rcost far;
    struct fs_ra_stream *s = c->s;
    if (ra_cost(c, UBJ_MODEL_GAP_FAR, &far) < 0)
        return;
    double a = fmax(0, t - k * far.b_ns);
    s->a_miss = s->n_miss++ > 0 ? 0.7 * s->a_miss + 0.3 * a : a;
}

/* ra_stretch -- the pages from `p` (missing, below `end`) that one request
 * reads: while each is uncached and the next device block. */
static uint32_t ra_stretch(struct fs_ra_call *c, uint64_t p, uint64_t end, uint64_t pblk)
{
    uint32_t n = 1;
    while (p + n < end && !(fs_ra_probe(c, p + n) & UBJ_RA_CACHED) &&
           fs_ra_pblk(c, p + n) == pblk + n)
        n++;
    return n;
}

/* fs_ra_adaptive_layout -- of the `keep` pages from xs the gate kept for
 * a window that continues the call (`cont`: read with the call's pages,
 * waited for), the prefix whose requests pay.  The gate priced the window
 * as one request, but where the file's blocks are not contiguous (a
 * fragmented file: SQLite's, grown page by page between its journal's
 * writes) the cache reads one request per physical stretch.  The first
 * stretch is the gate's (it continues the call's request, or the call
 * reads nothing); each further one, of n pages starting `gap` blocks after
 * the previous one's end (backward: far), is a request of its own, and its
 * net is n m / r - a(gap): what its pages would save used whole, at m
 * (what a miss of this stream costs per request, measured:
 * ra_miss_cost) per call of r pages, less the request's declared cost.
 * The prefix ends after the stretch where the running sum of nets is
 * largest.  A break at a cached page is the gate's (its use u measures
 * those), and an asynchronous window is not priced here (A2: the result
 * is at most keep). */
uint32_t fs_ra_adaptive_layout(struct fs_ra_call *c, uint64_t xs, uint32_t keep, bool cont)
{
    uint64_t end = xs + keep, last = c->last > c->first ? c->last - 1 : c->first;
    uint64_t prev = cont ? fs_ra_pblk(c, last) : 0;   /* 0: no request yet */
    bool priced = prev != 0 && !(fs_ra_probe(c, last) & UBJ_RA_CACHED), merge = priced;
    bool cached = false;
    double r = (double)(c->last - c->first), m = ra_miss_cost(c), net = 0, best = 0;
    uint32_t best_len = 0;
#if UBJ_TEST_HOOKS
    if (ra_break_nolayout)
        return keep;   /* broken variant ra-no-layout: one request assumed */
#endif
    if (!cont || c->ad_a <= 0)
        return keep;   /* not waited for, or no declared cost to price by */
    prev += prev != 0;
    for (uint64_t p = xs; p < end;) {
        uint64_t pblk = fs_ra_pblk(c, p);
        if (pblk == 0 || (fs_ra_probe(c, p) & UBJ_RA_CACHED)) {
            cached = true;   /* a cached page or a hole: the gate's break */
            p++;
            continue;
        }
        uint32_t n = ra_stretch(c, p, end, pblk);
        struct ubj_model_rcost k;
        if (priced && !cached && !(merge && pblk == prev) &&
            ra_cost(c, pblk >= prev && prev != 0 ? pblk - prev : UBJ_MODEL_GAP_FAR, &k) == 0)
            net += n * m / r - k.a_ns;
        priced = true;
        merge = cached = false;
        prev = pblk + n;
        p += n;
        if (net >= best) {
            best = net;
            best_len = (uint32_t)(p - xs);
        }
    }
    return net >= best ? keep : best_len;
}

/* ra_window_fold -- window w's used fraction enters the stream's average
 * (A1); the slot is free after.  With the call `c` (the window leaves the
 * ring) its pages any call got since (cached, no longer marked unused by
 * the cache) count too: pages another query of the same file used later
 * were worth reading; without it (the stream passed the window) only the
 * stream's own uses count. */
static void ra_window_fold(struct fs_ra_stream *s, uint32_t w, struct fs_ra_call *c)
{
    if (s->w_len[w] == 0)
        return;
    uint32_t used = s->w_used[w];
    if (c != NULL && c->r->ino == s->ino) {
        uint32_t got = 0;
        for (uint64_t p = s->w_start[w]; p < s->w_start[w] + s->w_len[w]; p++) {
            unsigned b = fs_ra_probe(c, p);
            got += (b & UBJ_RA_CACHED) && !(b & UBJ_RA_UNUSED);
        }
        used = got > used ? got : used;
    }
    s->p_used = 0.7 * s->p_used + 0.3 * (double)used / s->w_len[w];
    s->w_len[w] = 0;
    s->w_folds++;
}

/* fs_ra_window_note -- a window of pages [start, start + n) beyond the
 * calls was read ahead; it replaces the ring's oldest (folded first). */
void fs_ra_window_note(struct fs_ra_call *c, uint64_t start, uint32_t n)
{
    struct fs_ra_stream *s = c->s;
    uint32_t w = s->w_head;
    ra_window_fold(s, w, c);
    s->w_start[w] = s->w_next[w] = start;
    s->w_len[w] = n;
    s->w_used[w] = 0;
    s->w_head = (w + 1) % FS_RA_WINDOWS;
}

/* ra_window_use -- page is read by a call: count it in the tracked window
 * it falls in (once: pages taken in increasing order); a window whose end
 * the stream has just passed (the page within a window's length past
 * it) is complete, and folded in at once. */
static void ra_window_use(struct fs_ra_stream *s, uint64_t page)
{
    bool moved = s->gap_cur != UBJ_MODEL_GAP_FAR;   /* forward, not a jump */
    for (uint32_t w = 0; w < FS_RA_WINDOWS; w++) {
        uint64_t end = s->w_start[w] + s->w_len[w];
        if (s->w_len[w] == 0)
            continue;
        if (page >= s->w_next[w] && page < end) {
            s->w_used[w]++;
            s->w_next[w] = page + 1;
        } else if (page == end || (moved && page > end && page <= end + s->w_len[w])) {
            ra_window_fold(s, w, NULL);
        }
    }
}

/* ra_want -- the window at which the per-request term a (for a request
 * `gap` blocks after the previous) is at most an eighth of its transfer:
 * the power of two from `base` up, at most UBJ_CACHE_RUN_MAX (1 MiB, the
 * oracle's largest request); `base` when no cost is declared. */
static uint32_t ra_want(struct fs_ra_call *c, uint32_t base, uint64_t gap)
{
    struct ubj_model_rcost k;
    uint32_t cap = base;
    if (base == 0 || ra_cost(c, gap, &k) < 0 || k.b_ns <= 0)
        return base;
    double want = RA_CAP_RATIO * k.a_ns / k.b_ns;
    uint32_t share = ubj_cache_nbufs(c->fs->cache) / RA_CACHE_SHARE;
    if (want > share)
        want = share;
    while (cap < UBJ_CACHE_RUN_MAX && cap < want)
        cap *= 2;
    return cap > UBJ_CACHE_RUN_MAX && UBJ_CACHE_RUN_MAX > base ? UBJ_CACHE_RUN_MAX : cap;
}

/* ra_cap -- the stream's largest window for this call (A3): the advice's
 * (at most the cache's share, RA_CACHE_SHARE), grown to ra_want once the stream used at least RA_CAP_USE of what it
 * read, over RA_CAP_FOLDS window(s) or more. */
static void ra_cap(struct fs_ra_call *c)
{
    struct fs_ra_stream *s = c->s;
    uint32_t base = s->advice == UBJ_FADV_SEQUENTIAL ? 2 * c->fs->ra_pages : c->fs->ra_pages;
    uint32_t share = ubj_cache_nbufs(c->fs->cache) / RA_CACHE_SHARE;
    if (base > share && share >= 4)   /* adaptive:KIB past the cache's share */
        base = share;
    s->ra.ra_pages = s->w_folds >= RA_CAP_FOLDS && s->p_used >= RA_CAP_USE
                     ? ra_want(c, base, ra_gap(c)) : base;
}

/* fs_ra_adaptive_tail -- the gate kept [xs, xs + keep) of a window; if
 * the file ends within ra_want's window for a sequential follow-on (gap
 * 0: the request the rest would take), the rest of it too when reading
 * it now costs less than the request it would take later: with T pages
 * left, u a(0) > (1 - u) T b (a small file read from its start is read in
 * one request, as the oracle reads it) -- unless the device reads ahead
 * itself (a disk's drive read-ahead: a follow-on costs under a quarter of
 * a request elsewhere, and its buffer streams what the host would wait
 * for).  The pages to read from xs. */
uint32_t fs_ra_adaptive_tail(struct fs_ra_call *c, uint64_t xs, uint32_t keep)
{
    struct ubj_model_rcost k, far;
    uint64_t end = xs + keep;
    if (end >= c->npages || c->npages > ra_want(c, c->s->ra.ra_pages, 0) ||
        c->npages - xs > ubj_cache_nbufs(c->fs->cache) / RA_CACHE_SHARE ||
        ra_cost(c, 0, &k) < 0 || ra_cost(c, UBJ_MODEL_GAP_FAR, &far) < 0 ||
        k.a_ns < far.a_ns / 4)
        return keep;   /* a drive that reads ahead itself: its follow-on is a hit */
    double t = (double)(c->npages - end), u = c->s->p_used;
    return u * k.a_ns > (1 - u) * t * k.b_ns ? (uint32_t)(c->npages - xs) : keep;
}

/* fs_ra_adaptive_step -- before page `page` of the call is got: at the
 * call's first page the window's cap, and the page's use. */
void fs_ra_adaptive_step(struct fs_ra_call *c, uint64_t page)
{
    if (page == c->first) {
        c->s->n_calls++;
        if (c->s->nb_iss > c->s->nb_used)   /* the bets pending */
            c->s->nb_expo += c->s->nb_iss - c->s->nb_used;
        ra_cap(c);
        c->s->gap_prev = c->s->gap_cur;
        c->s->gap_cur = ra_gap(c);
        c->jump = ra_jump(c);
        for (uint64_t p = page; c->jump && p < c->last; p++) {
            unsigned b = fs_ra_probe(c, p);   /* read ahead, never got: a */
            c->s->nb_used += (b & UBJ_RA_CACHED) && (b & UBJ_RA_UNUSED);   /* bet paid */
        }
    }
    ra_window_use(c->s, page);
}
