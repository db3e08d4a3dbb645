/*
 * model_hdd.c -- a disk drive model in the manner of DiskSim (Ganger,
 * Worthington, Patt) and Ruemmler & Wilkes (IEEE Computer, 1994).
 *
 * Geometry: zones of cylinders with a fixed number of sectors per track
 * (zoned recording).  A 512-byte LBN maps to (cylinder, head, sector) in
 * cylinder-major order; track and cylinder skew shift each track's first
 * sector so that a sequential transfer crossing a track boundary finds its
 * next sector just after the head or cylinder switch.  Sparing is not
 * modeled (the geometry's capacity is the sum of the zones).  A lower
 * device larger than the geometry extends the innermost zone.
 *
 * Mechanics: seek(d) = first10[d-1] for d <= 10 if given, else
 * a + b*sqrt(d) for d < boundary, else c + e*d (ms); a head change costs
 * max(seek, head switch); a write adds the settle delay after any
 * movement.  The platters turn continuously: at clock time t the angle is
 * frac(t / T_rot), so the rotational wait is the angle from where the
 * head is to the target sector's start.  Transfer of k sectors on a track
 * of spt sectors takes k / spt rotations.
 *
 * Controller: a fixed overhead per command (miss, hit, write, flush); a
 * host bus of bus_mb_s overlaps the media transfer (the request ends when
 * both are done).  Read-ahead: after a read miss the disk keeps reading
 * the following sectors into its buffer (up to readahead_sectors past the
 * highest sector requested) until the next miss; reads that fall in what
 * has been or is being read are buffer hits, and a stream still running
 * keeps going for a sequential reader (the limit moves with the highest
 * sector requested).  Write cache (optional): a
 * write completes once in the cache; dirty entries (sequential writes
 * merged) are destaged in idle gaps between requests, when the cache is
 * full (oldest first, charged to the write that needs the room), and by a
 * flush (all of them, in LBN order starting at the head: C-LOOK).  A FUA
 * write bypasses the cache: it costs what a write costs without one.
 *
 * Energy: seek_w during seeks, rw_w during rotation and transfer, idle_w
 * for the rest of a request's service; read-ahead streaming adds
 * (rw_w - idle_w) while it runs.
 *
 * SPTF: hdd_estimate predicts a request's positioning time (seek and
 * rotational wait) from the state above without changing it, so a queue
 * (src/dev/queue_sched.c) can pick the nearest request.
 *
 * Invariants: requests are served one at a time (free_at); `cyl`/`head`
 * is where the arm is once free_at has passed; wc[] holds disjoint or
 * overlapping dirty ranges in arrival order, wc_sectors their total.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dev/model_int.h"
#include "util/util.h"

#define HDD_MAX_ZONES 64
#define HDD_ALIGN_NS 1.0    /* a wait within 1 ns of a turn counts as 0 */

struct hdd_zone {
    uint64_t first_cyl, last_cyl;   /* inclusive */
    uint64_t spt;                   /* sectors per track */
    int64_t tskew, cskew, offset;   /* sectors; -1 = compute */
    uint64_t first_lbn, nsect;      /* computed */
};

struct hdd_params {
    uint64_t sector_bytes, rpm, surfaces;
    double boundary, a_ms, b_ms, c_ms, e_ms;
    double head_switch_ms, settle_ms;
    double ovh_read_ms, ovh_write_ms, ovh_hit_ms, ovh_flush_ms;
    double bus_mb_s;
    bool write_cache;
    uint64_t write_cache_kib, readahead;
    double idle_w, seek_w, rw_w;
    struct hdd_zone zones[HDD_MAX_ZONES];
    unsigned nzones;
    double first10[10];
    bool have_first10;
};

struct hdd_ent {
    uint64_t lbn, n;        /* dirty sectors [lbn, lbn + n) */
};

/* Time spent by one media access, split by phase (ns). */
struct hdd_acc {
    double seek, rot, xfer;
    uint64_t seeks;
};

struct hdd {
    struct hdd_params p;
    double trot;            /* ns per revolution */
    uint64_t nsect;         /* sectors in the geometry */
    uint64_t spb;           /* sectors per 4096-byte block */
    uint64_t free_at;       /* ns: the drive finishes its current work */
    uint64_t cyl, head;     /* arm position */
    bool ra_on;             /* read-ahead stream valid */
    uint64_t ra_lo;         /* first buffered sector */
    uint64_t ra_next;       /* first sector streamed after the miss */
    uint64_t ra_limit;      /* stream stops before this sector */
    uint64_t ra_charged;    /* stream energy charged up to this sector */
    double ra_t0;           /* ns: streaming of ra_next starts */
    double ra_sect;         /* ns per sector while streaming */
    struct hdd_ent *wc;     /* dirty entries, oldest first */
    size_t wc_n, wc_cap;
    uint64_t wc_sectors, wc_max;
};

#define HK(n, t, f, lo, hi) { n, t, offsetof(struct hdd_params, f), lo, hi }
static const struct prof_key hdd_keys[] = {
    HK("sector_bytes", PK_U64, sector_bytes, 512, 4096),
    HK("rpm", PK_U64, rpm, 1, 100000),
    HK("surfaces", PK_U64, surfaces, 1, 1000),
    HK("seek_boundary_cyl", PK_DOUBLE, boundary, 0, 1e9),
    HK("seek_short_a_ms", PK_DOUBLE, a_ms, 0, 1e4),
    HK("seek_short_b_ms", PK_DOUBLE, b_ms, 0, 1e4),
    HK("seek_long_c_ms", PK_DOUBLE, c_ms, 0, 1e4),
    HK("seek_long_e_ms", PK_DOUBLE, e_ms, 0, 1e4),
    HK("head_switch_ms", PK_DOUBLE, head_switch_ms, 0, 1e4),
    HK("write_settle_ms", PK_DOUBLE, settle_ms, 0, 1e4),
    HK("overhead_read_ms", PK_DOUBLE, ovh_read_ms, 0, 1e4),
    HK("overhead_write_ms", PK_DOUBLE, ovh_write_ms, 0, 1e4),
    HK("overhead_hit_ms", PK_DOUBLE, ovh_hit_ms, 0, 1e4),
    HK("overhead_flush_ms", PK_DOUBLE, ovh_flush_ms, 0, 1e4),
    HK("bus_mb_s", PK_DOUBLE, bus_mb_s, 0, 1e9),
    HK("write_cache", PK_BOOL, write_cache, 0, 1),
    HK("write_cache_kib", PK_U64, write_cache_kib, 0, 1 << 30),
    HK("readahead_sectors", PK_U64, readahead, 0, 1 << 30),
    HK("idle_w", PK_DOUBLE, idle_w, 0, 1e4),
    HK("seek_w", PK_DOUBLE, seek_w, 0, 1e4),
    HK("rw_w", PK_DOUBLE, rw_w, 0, 1e4),
    { NULL, PK_DOUBLE, 0, 0, 0 },
};

/* hdd_parse_nums -- up to max numbers from s into v; count in *n. */
static int hdd_parse_nums(const char *s, double *v, unsigned max, unsigned *n)
{
    *n = 0;
    while (*s != '\0') {
        char *end;
        double x = strtod(s, &end);
        if (end == s || !isfinite(x) || *n == max)
            return -EINVAL;
        v[(*n)++] = x;
        s = end;
        while (*s == ' ' || *s == '\t')
            s++;
    }
    return 0;
}

/* hdd_hook -- the "zone" and "seek_first10_ms" lines. */
static int hdd_hook(void *params, const struct prof_line *l, const struct prof *p)
{
    struct hdd_params *hp = params;
    double v[10];
    unsigned n;
    if (strcmp(l->key, "seek_first10_ms") == 0) {
        if (hdd_parse_nums(l->value, v, 10, &n) < 0 || n != 10)
            return prof_err(-EINVAL, p, l, "expected 10 seek times (ms)");
        for (unsigned i = 0; i < 10; i++)
            if (v[i] < 0)
                return prof_err(-EINVAL, p, l, "negative seek time");
        memcpy(hp->first10, v, sizeof hp->first10);
        hp->have_first10 = true;
        return 1;
    }
    if (strcmp(l->key, "zone") != 0)
        return 0;
    if (hdd_parse_nums(l->value, v, 6, &n) < 0 || (n != 3 && n != 6))
        return prof_err(-EINVAL, p, l, "expected first_cyl last_cyl spt "
                        "[track_skew cyl_skew offset]");
    for (unsigned i = 0; i < n; i++)
        if (v[i] < 0 || v[i] != floor(v[i]) || v[i] > 1e12)
            return prof_err(-EINVAL, p, l, "zone values must be integers >= 0");
    if (hp->nzones == HDD_MAX_ZONES)
        return prof_err(-EINVAL, p, l, "too many zones");
    struct hdd_zone *z = &hp->zones[hp->nzones++];
    *z = (struct hdd_zone){
        .first_cyl = (uint64_t)v[0], .last_cyl = (uint64_t)v[1],
        .spt = (uint64_t)v[2], .tskew = n == 6 ? (int64_t)v[3] : -1,
        .cskew = n == 6 ? (int64_t)v[4] : -1, .offset = n == 6 ? (int64_t)v[5] : 0,
    };
    return 1;
}

/* ---- mechanics ---------------------------------------------------------- */

/* hdd_seek_ms -- seek time for a distance of d cylinders. */
static double hdd_seek_ms(const struct hdd_params *p, uint64_t d)
{
    if (d == 0)
        return 0.0;
    if (p->have_first10 && d <= 10)
        return p->first10[d - 1];
    if ((double)d < p->boundary)
        return p->a_ms + p->b_ms * sqrt((double)d);
    return p->c_ms + p->e_ms * (double)d;
}

/* hdd_bus_ns -- host bus time for `bytes`. */
static double hdd_bus_ns(const struct hdd *h, uint64_t bytes)
{
    return h->p.bus_mb_s > 0 ? (double)bytes * 1e3 / h->p.bus_mb_s : 0.0;
}

/* hdd_zone_of -- the zone holding LBN lbn (lbn < nsect). */
static const struct hdd_zone *hdd_zone_of(const struct hdd *h, uint64_t lbn)
{
    unsigned lo = 0, hi = h->p.nzones - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (h->p.zones[mid].first_lbn <= lbn)
            lo = mid;
        else
            hi = mid - 1;
    }
    return &h->p.zones[lo];
}

/* hdd_locate -- (cyl, head, sector) of lbn; returns its zone. */
static const struct hdd_zone *hdd_locate(const struct hdd *h, uint64_t lbn,
                                         uint64_t *cyl, uint64_t *head,
                                         uint64_t *sec)
{
    const struct hdd_zone *z = hdd_zone_of(h, lbn);
    uint64_t off = lbn - z->first_lbn, per_cyl = h->p.surfaces * z->spt;
    *cyl = z->first_cyl + off / per_cyl;
    *head = (off % per_cyl) / z->spt;
    *sec = off % z->spt;
    return z;
}

/* hdd_angle -- fraction of a turn where sector (cyl, head, sec) starts. */
static double hdd_angle(const struct hdd *h, const struct hdd_zone *z,
                        uint64_t cyl, uint64_t head, uint64_t sec)
{
    uint64_t per_cyl_skew = (h->p.surfaces - 1) * (uint64_t)z->tskew +
                            (uint64_t)z->cskew;
    uint64_t skew = (cyl - z->first_cyl) % z->spt * (per_cyl_skew % z->spt) +
                    head * (uint64_t)z->tskew + (uint64_t)z->offset;
    return (double)((sec + skew) % z->spt) / (double)z->spt;
}

/* hdd_rot_wait -- ns from time t until angle `target` passes the head. */
static double hdd_rot_wait(const struct hdd *h, double t, double target)
{
    double now = fmod(t, h->trot) / h->trot;
    double w = (target - now) * h->trot;
    if (w < 0)
        w += h->trot;
    if (w < HDD_ALIGN_NS || w > h->trot - HDD_ALIGN_NS)
        w = 0;
    return w;
}

/* hdd_move_ns -- ns to move the arm from (fcyl, fhead) to (cyl, head):
 * seek or head switch, plus the settle delay of a write; 0 if it is there. */
static double hdd_move_ns(const struct hdd *h, uint64_t fcyl, uint64_t fhead,
                          uint64_t cyl, uint64_t head, bool write)
{
    uint64_t d = cyl > fcyl ? cyl - fcyl : fcyl - cyl;
    if (d == 0 && head == fhead)
        return 0.0;
    double ms = hdd_seek_ms(&h->p, d);
    if (head != fhead && h->p.head_switch_ms > ms)
        ms = h->p.head_switch_ms;
    if (write)
        ms += h->p.settle_ms;
    return ms * MODEL_NS_PER_MS;
}

/* hdd_position -- ns to move the arm to (cyl, head); counts a seek. */
static double hdd_position(struct hdd *h, uint64_t cyl, uint64_t head,
                           bool write, struct hdd_acc *a)
{
    double ns = hdd_move_ns(h, h->cyl, h->head, cyl, head, write);
    if (ns > 0.0)
        a->seeks++;
    return ns;
}

/* hdd_media -- access n sectors at lbn starting at time t (ns); moves the
 * arm; returns the end time and fills *first (first sector's start). */
static double hdd_media(struct hdd *h, uint64_t lbn, uint64_t n, double t,
                        bool write, struct hdd_acc *a, double *first)
{
    bool started = false;
    while (n > 0) {
        uint64_t cyl, head, sec;
        const struct hdd_zone *z = hdd_locate(h, lbn, &cyl, &head, &sec);
        uint64_t k = z->spt - sec < n ? z->spt - sec : n;
        double pos = hdd_position(h, cyl, head, write, a);
        h->cyl = cyl;
        h->head = head;
        t += pos;
        double w = hdd_rot_wait(h, t, hdd_angle(h, z, cyl, head, sec));
        t += w;
        if (!started && first != NULL)
            *first = t;
        started = true;
        double x = (double)k * h->trot / (double)z->spt;
        t += x;
        a->seek += pos;
        a->rot += w;
        a->xfer += x;
        lbn += k;
        n -= k;
    }
    return t;
}

/* hdd_energy -- joules of an access split as in *a, lasting `total` ns. */
static double hdd_energy(const struct hdd *h, const struct hdd_acc *a, double total)
{
    double mech = a->seek + a->rot + a->xfer;
    double rest = total > mech ? total - mech : 0.0;
    return (h->p.seek_w * a->seek + h->p.rw_w * (a->rot + a->xfer) +
            h->p.idle_w * rest) * 1e-9;
}

/* hdd_acc_add -- add an access's phases to the statistics. */
static void hdd_acc_add(struct ubj_model_stats *st, const struct hdd_acc *a)
{
    st->seeks += a->seeks;
    st->seek_ns += model_round_ns(a->seek);
    st->rotation_ns += model_round_ns(a->rot);
    st->transfer_ns += model_round_ns(a->xfer);
}

/* ---- read-ahead stream ----------------------------------------------------- */

/* hdd_ra_avail -- first sector not yet streamed into the buffer at time t. */
static uint64_t hdd_ra_avail(const struct hdd *h, double t)
{
    if (t <= h->ra_t0)
        return h->ra_next;
    double k = floor((t - h->ra_t0) / h->ra_sect);
    uint64_t avail = h->ra_next + (uint64_t)k;
    return avail < h->ra_limit ? avail : h->ra_limit;
}

/* hdd_ra_charge -- charge the stream's energy (rw_w - idle_w above the
 * idle power) for the sectors it has read by time t. */
static void hdd_ra_charge(struct hdd *h, double t, struct ubj_model_stats *st)
{
    uint64_t avail = hdd_ra_avail(h, t);
    double extra = h->p.rw_w - h->p.idle_w;
    if (avail > h->ra_charged && extra > 0)
        st->energy_active_j += extra * (double)(avail - h->ra_charged) *
                               h->ra_sect * 1e-9;
    if (avail > h->ra_charged)
        h->ra_charged = avail;
}

/* hdd_ra_stop -- end the stream at time t: charge its energy, leave the arm
 * on the track of the last streamed sector. */
static void hdd_ra_stop(struct hdd *h, double t, struct ubj_model_stats *st)
{
    if (!h->ra_on)
        return;
    hdd_ra_charge(h, t, st);
    uint64_t avail = hdd_ra_avail(h, t);
    if (avail > h->ra_next) {
        uint64_t sec;
        hdd_locate(h, avail - 1, &h->cyl, &h->head, &sec);
    }
    h->ra_on = false;
}

/* hdd_ra_start -- begin streaming after a read miss of [lbn, lbn + n). */
static void hdd_ra_start(struct hdd *h, uint64_t lbn, uint64_t n, double t_end)
{
    h->ra_on = h->p.readahead > 0 && lbn + n < h->nsect;
    if (!h->ra_on)
        return;
    const struct hdd_zone *z = hdd_zone_of(h, lbn + n);
    h->ra_lo = lbn;
    h->ra_next = lbn + n;
    h->ra_charged = lbn + n;
    h->ra_limit = lbn + n + h->p.readahead;
    if (h->ra_limit > h->nsect)
        h->ra_limit = h->nsect;
    h->ra_t0 = t_end;
    /* a track of spt sectors, then a switch worth tskew sectors */
    h->ra_sect = h->trot * (double)(z->spt + (uint64_t)z->tskew) /
                 ((double)z->spt * (double)z->spt);
}

/* ---- write cache ------------------------------------------------------------ */

/* hdd_wc_covers -- true if one dirty entry holds all of [lbn, lbn + n). */
static bool hdd_wc_covers(const struct hdd *h, uint64_t lbn, uint64_t n)
{
    for (size_t i = 0; i < h->wc_n; i++)
        if (h->wc[i].lbn <= lbn && lbn + n <= h->wc[i].lbn + h->wc[i].n)
            return true;
    return false;
}

/* hdd_wc_add -- append a dirty range (merged with a contiguous last one). */
static int hdd_wc_add(struct hdd *h, uint64_t lbn, uint64_t n)
{
    if (h->wc_n > 0 && h->wc[h->wc_n - 1].lbn + h->wc[h->wc_n - 1].n == lbn) {
        h->wc[h->wc_n - 1].n += n;
    } else {
        if (h->wc_n == h->wc_cap) {
            size_t cap = h->wc_cap ? h->wc_cap * 2 : 64;
            struct hdd_ent *e = realloc(h->wc, cap * sizeof *e);
            if (e == NULL)
                return ubj_set_error(-ENOMEM, "hdd model: out of memory");
            h->wc = e;
            h->wc_cap = cap;
        }
        h->wc[h->wc_n++] = (struct hdd_ent){ lbn, n };
    }
    h->wc_sectors += n;
    return 0;
}

/* hdd_wc_pop -- remove entry i (order kept). */
static void hdd_wc_pop(struct hdd *h, size_t i)
{
    h->wc_sectors -= h->wc[i].n;
    memmove(&h->wc[i], &h->wc[i + 1], (h->wc_n - i - 1) * sizeof h->wc[0]);
    h->wc_n--;
}

/* hdd_destage -- write entry i to the media from time t; returns the end. */
static double hdd_destage(struct hdd *h, size_t i, double t, struct hdd_acc *a,
                          struct ubj_model_stats *st)
{
    t = hdd_media(h, h->wc[i].lbn, h->wc[i].n, t, true, a, NULL);
    hdd_wc_pop(h, i);
    st->destages++;
    return t;
}

/* hdd_idle_destage -- destage oldest entries that fit in [free_at, t_arr):
 * background work, charged as busy time and energy. */
static void hdd_idle_destage(struct hdd *h, uint64_t t_arr, struct model_req *r,
                             struct ubj_model_stats *st)
{
    double t = (double)h->free_at;
    while (h->wc_n > 0) {
        uint64_t cyl = h->cyl, head = h->head;
        struct hdd_acc a = {0};
        double end = hdd_media(h, h->wc[0].lbn, h->wc[0].n, t, true, &a, NULL);
        if (end > (double)t_arr) {
            h->cyl = cyl;
            h->head = head;
            break;
        }
        hdd_wc_pop(h, 0);
        st->destages++;
        hdd_acc_add(st, &a);
        st->energy_active_j += hdd_energy(h, &a, end - t);
        r->bg_busy_ns += model_round_ns(end - t);
        t = end;
    }
    h->free_at = model_max(h->free_at, model_round_ns(t));
}

/* hdd_cmp_ent -- order dirty entries by LBN. */
static int hdd_cmp_ent(const void *x, const void *y)
{
    const struct hdd_ent *a = x, *b = y;
    return a->lbn < b->lbn ? -1 : a->lbn > b->lbn;
}

/* hdd_flush_all -- destage everything in C-LOOK order from time t. */
static double hdd_flush_all(struct hdd *h, double t, struct hdd_acc *a,
                            struct ubj_model_stats *st)
{
    if (h->wc_n == 0)
        return t;
    qsort(h->wc, h->wc_n, sizeof h->wc[0], hdd_cmp_ent);
    size_t start = 0;
    while (start < h->wc_n) {
        uint64_t c, hd, s;
        hdd_locate(h, h->wc[start].lbn, &c, &hd, &s);
        if (c >= h->cyl)
            break;
        start++;
    }
    if (start == h->wc_n)
        start = 0;
    /* destage from `start` to the end, then wrap to the beginning */
    size_t n = h->wc_n;
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        t = hdd_media(h, h->wc[i].lbn, h->wc[i].n, t, true, a, NULL);
        st->destages++;
    }
    h->wc_n = 0;
    h->wc_sectors = 0;
    return t;
}

/* ---- requests -------------------------------------------------------------- */

/* hdd_ra_hit -- if [lbn, lbn + n) is in the buffer or arriving in the
 * read-ahead stream at time t, its completion time; else a negative value.
 * A stream still running absorbs a request that starts in what it has
 * read (it keeps reading: readahead_sectors past the new request). */
static double hdd_ra_hit(struct hdd *h, uint64_t lbn, uint64_t n, double t,
                         double bus, double hit_ovh, struct ubj_model_stats *st)
{
    if (!h->ra_on || lbn < h->ra_lo)
        return -1.0;
    uint64_t avail = hdd_ra_avail(h, t);
    bool streaming = avail < h->ra_limit;
    if (lbn > avail || (!streaming && lbn + n > h->ra_limit))
        return -1.0;
    double ready = h->ra_t0 + (double)(lbn + n > h->ra_next ?
                   lbn + n - h->ra_next : 0) * h->ra_sect;
    if (streaming) {
        uint64_t want = lbn + n + h->p.readahead;
        want = want < h->nsect ? want : h->nsect;
        h->ra_limit = want > h->ra_limit ? want : h->ra_limit;
    }
    double end = fmax(t + hit_ovh + bus, ready + hdd_bus_ns(h, h->p.sector_bytes));
    hdd_ra_charge(h, end, st);
    return end;
}

/* hdd_read -- a read of n sectors at lbn starting at t; returns the end. */
static double hdd_read(struct hdd *h, uint64_t lbn, uint64_t n, double t,
                       struct hdd_acc *a, struct ubj_model_stats *st)
{
    double bus = hdd_bus_ns(h, n * h->p.sector_bytes);
    double hit_ovh = h->p.ovh_hit_ms * MODEL_NS_PER_MS;
    double end = hdd_ra_hit(h, lbn, n, t, bus, hit_ovh, st);
    if (end >= 0) {
        st->buffer_hits++;
        return end;
    }
    if (hdd_wc_covers(h, lbn, n)) {
        st->buffer_hits++;
        return t + hit_ovh + bus;
    }
    hdd_ra_stop(h, t, st);
    double first = t;
    t += h->p.ovh_read_ms * MODEL_NS_PER_MS;
    end = hdd_media(h, lbn, n, t, false, a, &first);
    hdd_ra_start(h, lbn, n, end);
    return fmax(end, first + bus);
}

/* hdd_write -- a write of n sectors at lbn starting at t; returns the end.
 * A FUA write goes to the media even with the write cache on (the
 * write-through path). */
static int hdd_write(struct hdd *h, uint64_t lbn, uint64_t n, bool fua, double *t,
                     struct hdd_acc *a, struct ubj_model_stats *st)
{
    double bus = hdd_bus_ns(h, n * h->p.sector_bytes);
    double start = *t + h->p.ovh_write_ms * MODEL_NS_PER_MS;
    if (h->ra_on && lbn < h->ra_limit && lbn + n > h->ra_lo)
        hdd_ra_stop(h, *t, st);
    if (h->p.write_cache && n <= h->wc_max && !fua) {
        double end = start + bus;
        if (h->wc_sectors + n > h->wc_max) {
            hdd_ra_stop(h, *t, st);
            while (h->wc_sectors + n > h->wc_max)
                end = hdd_destage(h, 0, end, a, st);
        }
        *t = end;
        return hdd_wc_add(h, lbn, n);
    }
    hdd_ra_stop(h, *t, st);
    double end = hdd_media(h, lbn, n, start, true, a, NULL);
    *t = fmax(end, start + bus);
    return 0;
}

/* hdd_submit -- time one request (arrival order, lock held). */
static int hdd_submit(void *impl, struct model_req *r, struct ubj_model_stats *st)
{
    struct hdd *h = impl;
    if (r->t_arr > h->free_at && h->wc_n > 0) {
        hdd_ra_stop(h, (double)h->free_at, st);
        hdd_idle_destage(h, r->t_arr, r, st);
    }
    r->t_start = model_max(r->t_arr, h->free_at);
    double t = (double)r->t_start;
    struct hdd_acc a = {0};
    int rc = 0;
    uint64_t lbn = r->blkno * h->spb, n = (uint64_t)r->count * h->spb;
    if (r->op == MODEL_READ) {
        t = hdd_read(h, lbn, n, t, &a, st);
    } else if (r->op == MODEL_WRITE) {
        rc = hdd_write(h, lbn, n, r->fua, &t, &a, st);
    } else {
        hdd_ra_stop(h, t, st);
        t = hdd_flush_all(h, t + h->p.ovh_flush_ms * MODEL_NS_PER_MS, &a, st);
    }
    if (rc < 0)
        return rc;
    r->t_done = model_max(r->t_start, model_round_ns(t));
    h->free_at = r->t_done;
    double svc = (double)(r->t_done - r->t_start);
    r->energy_j = hdd_energy(h, &a, svc);
    hdd_acc_add(st, &a);
    double mech = a.seek + a.rot + a.xfer;
    st->overhead_ns += svc > mech ? model_round_ns(svc - mech) : 0;
    return 0;
}

/* hdd_absorbed -- true if a request of [lbn, lbn + n) starting at t would
 * be served by the buffer or the write cache (no media access). */
static bool hdd_absorbed(const struct hdd *h, const struct model_req *r,
                         uint64_t lbn, uint64_t n, double t)
{
    if (r->op == MODEL_WRITE)
        return h->p.write_cache && n <= h->wc_max && !r->fua;
    if (hdd_wc_covers(h, lbn, n))
        return true;
    if (!h->ra_on || lbn < h->ra_lo)
        return false;
    uint64_t avail = hdd_ra_avail(h, t);
    return lbn <= avail && (avail < h->ra_limit || lbn + n <= h->ra_limit);
}

/* hdd_estimate -- SPTF's positioning estimate (model_kind.position): the
 * seek (or head switch, plus a write's settle) and rotational wait that
 * request r would spend before its first sector if started at t0 (or at
 * free_at if later), from where the arm will be then (a read-ahead stream
 * stopped there leaves it on the track it reached); 0 for a flush and for
 * what the buffer or the write cache would absorb.  Changes nothing. */
static int hdd_estimate(void *impl, const struct model_req *r, uint64_t t0,
                        uint64_t *ns)
{
    const struct hdd *h = impl;
    double t = (double)model_max(t0, h->free_at);
    uint64_t lbn = r->blkno * h->spb, n = (uint64_t)r->count * h->spb;
    *ns = 0;
    if (r->op == MODEL_FLUSH || hdd_absorbed(h, r, lbn, n, t))
        return 0;
    uint64_t acyl = h->cyl, ahead = h->head, cyl, head, sec;
    if (h->ra_on && hdd_ra_avail(h, t) > h->ra_next)
        hdd_locate(h, hdd_ra_avail(h, t) - 1, &acyl, &ahead, &sec);
    bool write = r->op == MODEL_WRITE;
    t += (write ? h->p.ovh_write_ms : h->p.ovh_read_ms) * MODEL_NS_PER_MS;
    const struct hdd_zone *z = hdd_locate(h, lbn, &cyl, &head, &sec);
    double move = hdd_move_ns(h, acyl, ahead, cyl, head, write);
    double rot = hdd_rot_wait(h, t + move, hdd_angle(h, z, cyl, head, sec));
    *ns = model_round_ns(move + rot);
    return 0;
}

/* hdd_idle_at -- when the drive finishes what it was given. */
static uint64_t hdd_idle_at(void *impl)
{
    return ((struct hdd *)impl)->free_at;
}

/* hdd_destroy -- free the model. */
static void hdd_destroy(void *impl)
{
    struct hdd *h = impl;
    if (h != NULL)
        free(h->wc);
    free(h);
}

/* ---- creation -------------------------------------------------------------- */

/* hdd_defaults -- parameters before the profile (zones come from it). */
static void hdd_defaults(struct hdd_params *p)
{
    memset(p, 0, sizeof *p);
    p->sector_bytes = 512;
    p->rpm = 5400;
    p->surfaces = 1;
}

/* hdd_layout -- check the zones, fill in skews and LBN ranges; extend the
 * last zone if the device needs more sectors than the geometry has. */
static int hdd_layout(struct hdd *h, const struct prof *pr, uint64_t need)
{
    struct hdd_params *p = &h->p;
    if (p->nzones == 0)
        return prof_err(-EINVAL, pr, NULL, "no zone lines");
    uint64_t lbn = 0, next_cyl = 0;
    for (unsigned i = 0; i < p->nzones; i++) {
        struct hdd_zone *z = &p->zones[i];
        if (z->first_cyl != next_cyl || z->last_cyl < z->first_cyl || z->spt == 0)
            return prof_err(-EINVAL, pr, NULL, "zones must be contiguous from "
                            "cylinder 0 with sectors_per_track > 0");
        double sect_ns = h->trot / (double)z->spt;
        if (z->tskew < 0)
            z->tskew = (int64_t)ceil(p->head_switch_ms * MODEL_NS_PER_MS / sect_ns);
        if (z->cskew < 0)
            z->cskew = (int64_t)ceil(hdd_seek_ms(p, 1) * MODEL_NS_PER_MS / sect_ns);
        if (i == p->nzones - 1 && lbn + (z->last_cyl - z->first_cyl + 1) *
            p->surfaces * z->spt < need) {
            uint64_t per_cyl = p->surfaces * z->spt;
            z->last_cyl = z->first_cyl + (need - lbn + per_cyl - 1) / per_cyl - 1;
        }
        z->first_lbn = lbn;
        z->nsect = (z->last_cyl - z->first_cyl + 1) * p->surfaces * z->spt;
        lbn += z->nsect;
        next_cyl = z->last_cyl + 1;
    }
    h->nsect = lbn;
    return 0;
}

/* hdd_create -- parse the profile and lay out the disk for nblocks. */
static int hdd_create(const struct prof *pr, uint64_t nblocks, void **impl,
                      double *idle_w)
{
    struct hdd *h = calloc(1, sizeof *h);
    if (h == NULL)
        return ubj_set_error(-ENOMEM, "hdd model: out of memory");
    hdd_defaults(&h->p);
    int rc = prof_apply(pr, "hdd", hdd_keys, &h->p, hdd_hook);
    if (rc == 0 && UBJ_BLOCK_SIZE % h->p.sector_bytes != 0)
        rc = prof_err(-EINVAL, pr, NULL, "sector_bytes must divide 4096");
    if (rc == 0) {
        h->trot = 60e9 / (double)h->p.rpm;
        h->spb = UBJ_BLOCK_SIZE / h->p.sector_bytes;
        rc = hdd_layout(h, pr, nblocks * h->spb);
    }
    if (rc < 0) {
        free(h);
        return rc;
    }
    h->wc_max = h->p.write_cache_kib * 1024u / h->p.sector_bytes;
    *idle_w = h->p.idle_w;
    *impl = h;
    return 0;
}

/* hdd_read_cost -- ubj_model_read_cost: per block the larger of the
 * middle zone's media time and the bus's; per request, far away: overhead
 * + a seek over a third of the cylinders + half a turn; `gap` blocks
 * after the previous request, a buffer hit while the drive's read-ahead
 * covers it (overhead_hit, or the gap's passing if longer), else the gap's
 * passing, plus a turn when that is shorter than the overhead. */
static void hdd_read_cost(const void *impl, uint64_t gap, struct ubj_model_rcost *out)
{
    const struct hdd *h = impl;
    const struct hdd_zone *z = &h->p.zones[h->p.nzones / 2];
    uint64_t ncyl = h->p.zones[h->p.nzones - 1].last_cyl + 1;
    double ovh = h->p.ovh_read_ms * MODEL_NS_PER_MS;
    double media = h->trot * (double)h->spb / (double)z->spt;
    out->b_ns = fmax(media, hdd_bus_ns(h, UBJ_BLOCK_SIZE));
    if (gap == UBJ_MODEL_GAP_FAR || gap > h->nsect) {
        out->a_ns = ovh + hdd_seek_ms(&h->p, ncyl / 3) * MODEL_NS_PER_MS + h->trot / 2;
    } else {
        double pass = (double)gap * media;
        if (h->p.readahead > 0 && (gap + 1) * h->spb <= h->p.readahead)
            out->a_ns = fmax(h->p.ovh_hit_ms * MODEL_NS_PER_MS, pass);
        else
            out->a_ns = pass >= ovh ? pass : h->trot + pass;
    }
    out->a_j = h->p.rw_w * out->a_ns * 1e-9;
    out->b_j = h->p.rw_w * out->b_ns * 1e-9;
}

const struct model_kind model_hdd_kind = {
    .name = "hdd",
    .create = hdd_create,
    .submit = hdd_submit,
    .idle_at = hdd_idle_at,
    .position = hdd_estimate,
    .slots = 1,
    .fill = NULL,
    .check = NULL,
    .destroy = hdd_destroy,
    .read_cost = hdd_read_cost,
};
