/*
 * readahead.c -- the read-ahead window engine (readahead.h): which pages
 * of a file a read call brings into the cache, and where the next window
 * is triggered.  It owns struct fs_ra_state's rules and nothing else: no
 * I/O (the caller's submit callback reads), no cache state (cached and
 * take_marker ask), no lock (the caller serialises a file's calls).
 *
 * FS_RA_LINUX reimplements Linux's on-demand read-ahead as it stood after
 * the two changes of 2013 (mm/readahead.c's ondemand_readahead,
 * try_context_readahead made conservative by "readahead: make context
 * readahead more conservative", the sequential-miss test fixed by
 * "readahead: fix sequential read cache miss detection"), written from
 * their description, the kernel source read as reference only.
 * FS_RA_LINUX_2013 differs in that one test: see fs_ra_seq_miss.
 * docs/READAHEAD.md has the rules in prose and hand-computed sequences.
 *
 * The window (ra->start, size, async_size; marker = start + size -
 * async_size) moves as below; each arrow names the branch of
 * ra_ondemand that takes it (fs_ra_page calls it on a miss, "sync", and
 * on a hit of the marker, "async"):
 *
 *   any state --miss at page 0 / sequential miss / oversize call-->
 *       INITIAL  [index, init_size(req))      async = size - req, or size
 *                                             (ra_ondemand: initial)
 *   window --index at the marker or just past the window-->
 *       RAMP-UP  [start + size, next_size(size)), async = size (all ahead)
 *                                             (ra_ondemand: ramp-up)
 *   any state --marker hit that the state does not expect (interleaved
 *               streams, or a state overwritten by another stream)-->
 *       RESUMED  [first miss after index, next_size(miss - index + req))
 *                                             (ra_ondemand: marker)
 *   any state --miss with more cached history below it than req-->
 *       CONTEXT  [index, min(2x if the history reaches page 0, + req, max))
 *                async = 1                    (ra_ondemand: context)
 *   any state --small random miss-->
 *       unchanged; the call's pages [index, last) are read as they are
 *       (FS_RA_ADAPTIVE: with the neighbours ops->neighbours offers)
 *                                             (ra_ondemand: standalone)
 *   INITIAL / CONTEXT / RESUMED --the window starts at index and is all
 *               ahead (size == async)-->
 *       the next window merged into it: size += next_size(size),
 *       async = that                          (ra_ondemand: readit)
 *
 * Invariants after every ra_ondemand that moved the window:
 *  R1 1 <= size <= 2 * ra_pages and async_size <= size (the merge of
 *     readit is the only way past ra_pages, as in Linux of that time).
 *  R2 The marker page start + size - async_size lies inside the window
 *     when async_size > 0.
 * The OFF policies never touch the window or set a marker.
 */
#include "fs/readahead.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/util.h"

#define RA_PAGE_SHIFT 12
#define RA_FORCE_CHUNK 512u   /* force_page_cache_readahead's 2 MiB chunks */

void fs_ra_init(struct fs_ra_state *ra, uint32_t ra_pages)
{
    *ra = (struct fs_ra_state){ .ra_pages = ra_pages, .prev_pos = -1 };
}

/* roundup_pow_of_two for 1 <= x <= 2^31 (larger: 2^31) */
static uint64_t ra_pow2_up(uint64_t x)
{
    uint64_t p = 1;
    while (p < x && p < (1ull << 31))
        p <<= 1;
    return p;
}

/* get_init_ra_size: the first window for a request of `req` pages. */
uint32_t fs_ra_init_size(uint32_t req, uint32_t max)
{
    uint64_t n = ra_pow2_up(req ? req : 1);
    if (n <= max / 32)
        n *= 4;
    else if (n <= max / 4)
        n *= 2;
    else
        n = max;
    return (uint32_t)n;
}

/* get_next_ra_size: ramp up x4 while small, then x2, capped at max. */
uint32_t fs_ra_next_size(uint32_t cur, uint32_t max)
{
    uint64_t n = cur < max / 16 ? 4ull * cur : 2ull * cur;
    return (uint32_t)(n < max ? n : max);
}

bool fs_ra_seq_miss(const struct fs_ra_state *ra, enum fs_ra_policy pol,
                    uint64_t index)
{
    if (ra->prev_pos < 0)
        return false;   /* no read yet (page 0 is caught before this) */
    uint64_t prev = (uint64_t)ra->prev_pos >> RA_PAGE_SHIFT;
    if (pol == FS_RA_LINUX || pol == FS_RA_ADAPTIVE)
        return index - prev <= 1u;   /* unsigned: backward wraps huge */
    if (pol == FS_RA_LINUX_2013) {
        /* pgoff_t (32-bit unsigned long) minus loff_t (long long): the
         * page index converts to long long, the difference is signed, so
         * any earlier page counts as "sequential". */
        int64_t d = (int64_t)index - (int64_t)prev;
        return d <= 1;
    }
    return false;
}

/* ra_clip_submit -- read [start, start + size) clipped to the file's
 * npages, with the marker at start + size - async (none if async is 0
 * or the marker page is past the end). */
static int ra_clip_submit(const struct fs_ra_ops *ops, void *ctx,
                          uint64_t start, uint64_t size, uint64_t async,
                          uint64_t npages)
{
    if (start >= npages || size == 0)
        return 0;
    uint64_t n = npages - start < size ? npages - start : size;
    uint64_t marker = async ? start + size - async : FS_RA_NO_MARKER;
    if (marker != FS_RA_NO_MARKER && marker >= start + n)
        marker = FS_RA_NO_MARKER;
    int rc = 0;
    while (n > 0 && rc == 0) {   /* submit takes at most UINT32_MAX pages */
        uint32_t k = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
        rc = ops->submit(ctx, start, k, marker);
        start += k;
        n -= k;
    }
    return rc;
}

/* ra_next_miss -- page_cache_next_miss: the first page in [from, from +
 * max) not cached, or from + max if all are. */
static uint64_t ra_next_miss(const struct fs_ra_ops *ops, void *ctx,
                             uint64_t from, uint32_t max)
{
    for (uint32_t i = 0; i < max; i++)
        if (!ops->cached(ctx, from + i))
            return from + i;
    return from + max;
}

/* ra_history -- count_history_pages: pages cached contiguously just below
 * index (index - 1 down), at most max; reaching page 0 stops the count. */
static uint32_t ra_history(const struct fs_ra_ops *ops, void *ctx,
                           uint64_t index, uint32_t max)
{
    uint32_t n = 0;
    while (n < max && n < index && ops->cached(ctx, index - 1 - n))
        n++;
    return n;
}

/* ra_ondemand -- ondemand_readahead for a miss (hit_marker false) or a
 * marker hit at `index`, `req` pages left in the call. */
static int ra_ondemand(struct fs_ra_state *ra, enum fs_ra_policy pol,
                       const struct fs_ra_ops *ops, void *ctx, bool hit_marker,
                       uint64_t index, uint64_t req, uint64_t npages)
{
    uint32_t max = ra->ra_pages;
    uint32_t req32 = req > UINT32_MAX ? UINT32_MAX : (uint32_t)req;

    if (index == 0)
        goto initial;   /* start of file */

    /* ramp-up: the expected page (the marker, or just past the window) */
    if (index == ra->start + ra->size - ra->async_size ||
        index == ra->start + ra->size) {
        ra->start += ra->size;
        ra->size = fs_ra_next_size(ra->size, max);
        ra->async_size = ra->size;
        goto readit;
    }

    /* marker: a marked page the state did not expect (interleaved reads):
     * the cache tells how far the old window went ahead */
    if (hit_marker) {
        uint64_t start = ra_next_miss(ops, ctx, index + 1, max);
        if (start - index > max)
            return 0;
        uint64_t size = start - index + req;
        ra->start = start;
        ra->size = fs_ra_next_size(size > UINT32_MAX ? UINT32_MAX : (uint32_t)size, max);
        ra->async_size = ra->size;
        goto readit;
    }

    if (req > max)
        goto initial;   /* oversize call */
    if (fs_ra_seq_miss(ra, pol, index))
        goto initial;   /* sequential miss */

    /* context: the cache holds the trace a sequential stream leaves */
    uint32_t hist = ra_history(ops, ctx, index, max);
    if (hist > req32) {
        uint64_t size = hist;
        if (size >= index)
            size *= 2;   /* history from page 0: a whole-file read */
        size += req;
        ra->start = index;
        ra->size = (uint32_t)(size < max ? size : max);
        ra->async_size = 1;
        goto readit;
    }

    /* standalone, small random read: as is, the state untouched (adaptive
     * may offer its neighbours with it: ops->neighbours) */
    uint32_t nb = pol == FS_RA_ADAPTIVE && ops->neighbours != NULL
                  ? ops->neighbours(ctx, index, index + req) : 0;
    return ra_clip_submit(ops, ctx, index, req + nb, 0, npages);

initial:
    ra->start = index;
    ra->size = fs_ra_init_size(req32, max);
    ra->async_size = ra->size > req32 ? ra->size - req32 : ra->size;

readit:
    /* the window starts here and is all ahead: its marker would be hit by
     * this very call, so merge the next window in now */
    if (index == ra->start && ra->size == ra->async_size) {
        ra->async_size = fs_ra_next_size(ra->size, max);
        ra->size += ra->async_size;
    }
    assert(ra->size >= 1 && ra->async_size <= ra->size);   /* R1, R2 */
    return ra_clip_submit(ops, ctx, ra->start, ra->size, ra->async_size, npages);
}

/* ra_oracle -- FS_RA_ORACLE's miss at index: the call's pages and every
 * later one the future reads, while uncached (FS_RA_ORACLE_MAX at most). */
static int ra_oracle(const struct fs_ra_ops *ops, void *ctx, uint64_t index,
                     uint64_t last, uint64_t npages)
{
    uint64_t j = index + 1;
    while (j < npages && j - index < FS_RA_ORACLE_MAX && !ops->cached(ctx, j) &&
           (j < last || (ops->future != NULL && ops->future(ctx, j))))
        j++;
    return ra_clip_submit(ops, ctx, index, j - index, 0, npages);
}

int fs_ra_page(struct fs_ra_state *ra, enum fs_ra_policy pol,
               const struct fs_ra_ops *ops, void *ctx, uint64_t index,
               uint64_t last, uint64_t npages)
{
    assert(index < last);
    uint64_t req = last - index;
    bool linux_pol = pol == FS_RA_LINUX || pol == FS_RA_LINUX_2013 ||
                     pol == FS_RA_ADAPTIVE;
    int rc = 0;

    if (!ops->cached(ctx, index)) {
        if (pol == FS_RA_OFF)
            return ra_clip_submit(ops, ctx, index, req, 0, npages);
        if (pol == FS_RA_ORACLE)
            return ra_oracle(ops, ctx, index, last, npages);
        if (pol == FS_RA_OFF_PAGE || !linux_pol || ra->ra_pages == 0)
            return ra_clip_submit(ops, ctx, index, 1, 0, npages);
        if (ra->random) {   /* force_page_cache_readahead: exactly req */
            for (uint64_t p = index; p < last && rc == 0; p += RA_FORCE_CHUNK) {
                uint64_t k = last - p < RA_FORCE_CHUNK ? last - p : RA_FORCE_CHUNK;
                rc = ra_clip_submit(ops, ctx, p, k, 0, npages);
            }
            return rc;
        }
        rc = ra_ondemand(ra, pol, ops, ctx, false, index, req, npages);
        if (!ops->cached(ctx, index))
            return rc;   /* the caller reads the page itself */
    }
    if (linux_pol && ra->ra_pages != 0 && ops->take_marker(ctx, index)) {
        int rc2 = ra_ondemand(ra, pol, ops, ctx, true, index, req, npages);
        if (rc == 0)
            rc = rc2;
    }
    return rc;
}

void fs_ra_read_done(struct fs_ra_state *ra, uint64_t pos, uint64_t len)
{
    if (len == 0)
        return;
    uint64_t end = pos + len;
    uint64_t last_page = (end - 1) >> RA_PAGE_SHIFT;
    ra->prev_pos = (int64_t)((last_page << RA_PAGE_SHIFT) | (end & 4095u));
}

/* ---- policy names --------------------------------------------------------- */

static const char *const ra_names[] = {
    [FS_RA_OFF_PAGE] = "off-page", [FS_RA_OFF] = "off",
    [FS_RA_LINUX] = "linux", [FS_RA_LINUX_2013] = "linux-2013",
    [FS_RA_ORACLE] = "oracle", [FS_RA_ADAPTIVE] = "adaptive",
};

int fs_ra_policy_parse(const char *name, enum fs_ra_policy *pol, uint32_t *ra_pages)
{
    static const char accepted[] = "off-page, off, linux[:KIB], linux-2013[:KIB], "
                                   "adaptive[:KIB] or oracle";
    if (name == NULL)
        return ubj_set_error(-EINVAL, "read-ahead: no policy named (%s)", accepted);
    for (unsigned p = 0; p < sizeof ra_names / sizeof ra_names[0]; p++) {
        size_t n = strlen(ra_names[p]);
        if (strncmp(name, ra_names[p], n) != 0 || (name[n] != '\0' && name[n] != ':'))
            continue;
        bool window = p == FS_RA_LINUX || p == FS_RA_LINUX_2013 || p == FS_RA_ADAPTIVE;
        uint32_t pages = window ? FS_RA_DEFAULT_PAGES : p == FS_RA_ORACLE ? FS_RA_ORACLE_MAX : 0;
        if (name[n] == ':') {
            char *end;
            unsigned long kib = window ? strtoul(name + n + 1, &end, 10) : 0;
            if (!window || end == name + n + 1 || *end != '\0' ||
                kib < 4 || kib > 65536 || kib % 4 != 0)
                return ubj_set_error(-EINVAL, "read-ahead %s: the window is KIB, "
                                     "a multiple of 4 from 4 to 65536 (%s)",
                                     name, accepted);
            pages = (uint32_t)(kib / 4);
        }
        *pol = (enum fs_ra_policy)p;
        *ra_pages = pages;
        return 0;
    }
    return ubj_set_error(-EINVAL, "read-ahead %s: unknown policy (%s)", name, accepted);
}
