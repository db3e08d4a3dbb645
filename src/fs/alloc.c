/*
 * alloc.c -- the block and inode bitmaps: allocate, free, free counts.
 *
 * Both bitmaps are arrays of metadata blocks read and changed through the
 * cache (fs_meta_read / fs_meta_write_begin / fs_meta_dirty); bit n of the
 * map (bit n % UBJ_BITMAP_BITS of bitmap block n / UBJ_BITMAP_BITS, LSB
 * first after the block header) is block or inode n.
 *
 * In memory, per bitmap block (struct fs_alloc; a read-write mount, and a
 * read-only mount after a crash, read every bitmap block once to fill it:
 * fs_alloc_scan):
 *   cnt[i]  free bits in block i, or ALLOC_UNKNOWN until block i is first
 *           read; a known 0 lets a search skip the block without I/O.
 *   low[i]  a lower bound of the first free bit in block i: every bit
 *           below it (in the allocatable range) is in use.  Raised by
 *           searches and allocations, lowered by frees.
 * Invariants: cnt[i], when known, equals the zero bits of block i's newest
 * version; only bits in [lo, hi) (data blocks [data_start, nblocks),
 * inodes [1, ninodes)) are ever allocated or freed, so metadata and
 * out-of-range bits can never be handed out even if a corrupt bitmap
 * clears them.  sb.free_blocks / sb.free_inodes (in memory) move with
 * every change but are NOT written to block 0 each time: the superblock
 * goes into a transaction only when something else of it changes (mount,
 * unmount, the orphan list), so one fsync'd append does not commit it.
 * The counts on the device are exact after a clean unmount; after a crash
 * mount recounts them from the bitmaps (fs_alloc_scan), like ext4's
 * lazy s_free_blocks_count.
 *
 * Cross-checks (a bitmap with a valid checksum can still lie, and a block
 * it wrongly shows free would be handed out over another file's data):
 *  - at mount (fs_alloc_scan), every bit outside the allocatable range
 *    (superblock, bitmaps, inode table, journal area; inode 0; bits past
 *    the end) must be set, and on a cleanly unmounted image the free bits
 *    must add up to the superblock's counts;
 *  - before a run of blocks is handed out (alloc_check_cached), none of
 *    them may be in the cache: a freed block is always forgotten
 *    (ubj_txn_forget), so a cached one was read or written by this mount
 *    and never freed -- it is in use.  (Not after a mode-ubj recovery
 *    that kept blocks: see fs_alloc_init.)
 * A failed check is -EUCLEAN with the sticky fs->error (read-only until
 * fsck) and a message naming the first block; nothing is allocated.
 *
 * Policy: next-fit from a goal (the caller's, else the cursor), taking the
 * first free bit found and the run of free bits after it, up to `want`,
 * within one bitmap block.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs/fs.h"

#define ALLOC_UNKNOWN UINT32_MAX
#define ALLOC_WORDS (UBJ_BITMAP_BITS / 64u)   /* 510 */

struct fs_alloc {
    uint64_t nbb, nib;     /* bitmap blocks: block map, inode map */
    uint32_t *bcnt, *blow; /* per block-bitmap block */
    uint32_t *icnt, *ilow; /* per inode-bitmap block */
    bool cached_check;     /* alloc_check_cached is sound for this mount */
};

/* One bitmap as the generic code sees it. */
struct alloc_map {
    uint64_t start;        /* first bitmap block */
    uint64_t nblk;         /* bitmap blocks */
    uint64_t lo, hi;       /* allocatable bits [lo, hi) */
    uint32_t magic;
    uint32_t *cnt, *low;
    const char *what;      /* "block" / "inode" */
};

static_assert(UBJ_BITMAP_BITS % 64u == 0, "bitmap words");

/* alloc_bmap -- the block bitmap. */
static void alloc_bmap(struct ubj_fs *fs, struct alloc_map *m)
{
    m->start = fs->sb.bb_start;
    m->nblk = fs->alloc->nbb;
    m->lo = fs->sb.data_start;
    m->hi = fs->sb.nblocks;
    m->magic = UBJ_MAGIC_BBITMAP;
    m->cnt = fs->alloc->bcnt;
    m->low = fs->alloc->blow;
    m->what = "block";
}

/* alloc_imap -- the inode bitmap. */
static void alloc_imap(struct ubj_fs *fs, struct alloc_map *m)
{
    m->start = fs->sb.ib_start;
    m->nblk = fs->alloc->nib;
    m->lo = 1;
    m->hi = fs->sb.ninodes;
    m->magic = UBJ_MAGIC_IBITMAP;
    m->cnt = fs->alloc->icnt;
    m->low = fs->alloc->ilow;
    m->what = "inode";
}

/* fs_alloc_init -- allocate the per-bitmap-block arrays (all unknown). */
int fs_alloc_init(struct ubj_fs *fs)
{
    struct fs_alloc *a = calloc(1, sizeof *a);
    if (!a)
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    a->nbb = fs->sb.bb_blocks;
    a->nib = fs->sb.ib_blocks;
    /* mode ubj's recovery may adopt the last committed version of a block
     * that a committed transaction freed (its tag lives until the next
     * commit: docs/UBJ.md, "revoke"), so after a recovery that kept
     * blocks a cached block may be free */
    a->cached_check = fs->txn.stats.recovered_blocks == 0;
    a->bcnt = malloc(a->nbb * sizeof *a->bcnt);
    a->blow = calloc(a->nbb, sizeof *a->blow);
    a->icnt = malloc(a->nib * sizeof *a->icnt);
    a->ilow = calloc(a->nib, sizeof *a->ilow);
    fs->alloc = a;
    if (!a->bcnt || !a->blow || !a->icnt || !a->ilow) {
        fs_alloc_fini(fs);
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    }
    for (uint64_t i = 0; i < a->nbb; i++)
        a->bcnt[i] = ALLOC_UNKNOWN;
    for (uint64_t i = 0; i < a->nib; i++)
        a->icnt[i] = ALLOC_UNKNOWN;
    return 0;
}

/* fs_alloc_fini -- free the arrays. */
void fs_alloc_fini(struct ubj_fs *fs)
{
    struct fs_alloc *a = fs->alloc;
    if (!a)
        return;
    free(a->bcnt);
    free(a->blow);
    free(a->icnt);
    free(a->ilow);
    free(a);
    fs->alloc = NULL;
}

/* ---- bit operations on one bitmap block (510 words) ---------------------- */

/* alloc_words -- the bitmap words of a bitmap block's data. */
static uint64_t *alloc_words(struct ubj_buf *b)
{
    return (uint64_t *)(b->data + sizeof(struct ubj_blkhdr));
}

/* alloc_find -- first bit in [from, to) equal to `val` (0/1); `to` if none. */
static uint32_t alloc_find(const uint64_t *w, uint32_t from, uint32_t to, int val)
{
    uint64_t flip = val ? 0 : ~0ULL;
    uint32_t i = from / 64;
    if (from >= to)
        return to;
    uint64_t x = (w[i] ^ flip) & (~0ULL << (from % 64));
    for (;;) {
        if (x) {
            uint32_t bit = i * 64 + (uint32_t)__builtin_ctzll(x);
            return bit < to ? bit : to;
        }
        if (++i * 64 >= to)
            return to;
        x = w[i] ^ flip;
    }
}

/* alloc_mark -- set (val 1) or clear bits [from, from + n). */
static void alloc_mark(uint64_t *w, uint32_t from, uint32_t n, int val)
{
    uint32_t to = from + n;
    while (from < to) {
        uint32_t i = from / 64, s = from % 64;
        uint32_t k = 64 - s < to - from ? 64 - s : to - from;
        uint64_t mask = (k == 64 ? ~0ULL : ((1ULL << k) - 1)) << s;
        if (val)
            w[i] |= mask;
        else
            w[i] &= ~mask;
        from += k;
    }
}

/* alloc_zeros -- free bits in a whole bitmap block. */
static uint32_t alloc_zeros(const uint64_t *w)
{
    uint32_t ones = 0;
    for (uint32_t i = 0; i < ALLOC_WORDS; i++)
        ones += (uint32_t)__builtin_popcountll(w[i]);
    return UBJ_BITMAP_BITS - ones;
}

/* alloc_range -- the allocatable local bits [*lo, *hi) of bitmap block i;
 * false if it has none. */
static bool alloc_range(const struct alloc_map *m, uint64_t i, uint32_t *lo,
                        uint32_t *hi)
{
    uint64_t base = i * UBJ_BITMAP_BITS, end = base + UBJ_BITMAP_BITS;
    uint64_t l = m->lo > base ? m->lo : base;
    uint64_t h = m->hi < end ? m->hi : end;
    if (l >= h)
        return false;
    *lo = (uint32_t)(l - base);
    *hi = (uint32_t)(h - base);
    return true;
}

/* ---- free counts after a crash ---------------------------------------- */

/* alloc_zeros_in -- free bits of w in [lo, hi). */
static uint64_t alloc_zeros_in(const uint64_t *w, uint32_t lo, uint32_t hi)
{
    uint64_t n = 0;
    for (uint32_t b = lo; b < hi; ) {
        uint32_t i = b / 64, s = b % 64;
        uint32_t k = 64 - s < hi - b ? 64 - s : hi - b;
        uint64_t mask = (k == 64 ? ~0ULL : ((1ULL << k) - 1)) << s;
        n += (uint64_t)__builtin_popcountll(~w[i] & mask);
        b += k;
    }
    return n;
}

/* alloc_bad -- a bitmap that lies: sticky error, message, -EUCLEAN. */
static int __attribute__((format(printf, 2, 3)))
alloc_bad(struct ubj_fs *fs, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "%s: read-only until fsck", msg);
}

/* alloc_meta_name -- the metadata region holding block `blk`. */
static const char *alloc_meta_name(const struct ubj_super *sb, uint64_t blk)
{
    if (blk == 0)
        return "the superblock";
    if (blk < sb->ib_start)
        return "the block bitmap";
    if (blk < sb->it_start)
        return "the inode bitmap";
    if (blk < sb->it_start + sb->it_blocks)
        return "the inode table";
    return "the journal";
}

/* alloc_scan_block -- bitmap block i as read at mount: cnt[i], and the
 * allocatable free bits added to *nfree; every other bit must be set. */
static int alloc_scan_block(struct ubj_fs *fs, const struct alloc_map *m,
                            uint64_t i, uint64_t *nfree)
{
    struct ubj_buf *b;
    uint32_t lo = UBJ_BITMAP_BITS, hi = UBJ_BITMAP_BITS;
    int rc = fs_meta_read(fs, m->start + i, m->magic, &b);
    if (rc < 0)
        return rc;
    const uint64_t *w = alloc_words(b);
    if (!alloc_range(m, i, &lo, &hi))
        lo = hi = UBJ_BITMAP_BITS;
    uint32_t zeros = alloc_zeros(w);
    uint64_t in = lo < hi ? alloc_zeros_in(w, lo, hi) : 0;
    uint32_t bad = alloc_find(w, 0, lo, 0);
    if (bad >= lo)
        bad = alloc_find(w, hi, UBJ_BITMAP_BITS, 0);
    ubj_cache_put(fs->cache, b);
    m->cnt[i] = zeros;
    *nfree += in;
    if (zeros == in)
        return 0;
    uint64_t bit = i * UBJ_BITMAP_BITS + bad, n = zeros - in;
    if (bit >= m->hi)
        return alloc_bad(fs, "%s bitmap: %llu bit%s past the end of the map "
                         "clear, first %llu", m->what, (unsigned long long)n,
                         n == 1 ? "" : "s", (unsigned long long)bit);
    if (m->magic == UBJ_MAGIC_IBITMAP)
        return alloc_bad(fs, "inode bitmap: inode 0 is marked free");
    return alloc_bad(fs, "block bitmap: %llu metadata block%s marked free, "
                     "first %llu (%s)", (unsigned long long)n, n == 1 ? "" : "s",
                     (unsigned long long)bit, alloc_meta_name(&fs->sb, bit));
}

/* alloc_scan_map -- every block of one bitmap; *nfree = its free
 * allocatable bits.  Stops at the first finding (the mount is read-only
 * then, and a block whose count stays unknown is read when needed). */
static int alloc_scan_map(struct ubj_fs *fs, const struct alloc_map *m,
                          uint64_t *nfree)
{
    *nfree = 0;
    for (uint64_t i = 0; i < m->nblk; i++) {
        int rc = alloc_scan_block(fs, m, i, nfree);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* alloc_scan_count -- a cleanly unmounted image's count must be exact. */
static int alloc_scan_count(struct ubj_fs *fs, const struct alloc_map *m,
                            uint64_t counted, uint64_t *sbcount)
{
    if (counted == *sbcount)
        return 0;
    return alloc_bad(fs, "%s bitmap: %llu %ss free, but the superblock of the "
                     "cleanly unmounted image counts %llu", m->what,
                     (unsigned long long)counted, m->what,
                     (unsigned long long)*sbcount);
}

/* fs_alloc_scan -- read every bitmap block at mount: counts, checks. */
int fs_alloc_scan(struct ubj_fs *fs, bool exact)
{
    struct alloc_map bm, im;
    uint64_t nb, ni;
    alloc_bmap(fs, &bm);
    alloc_imap(fs, &im);
    int rc = alloc_scan_map(fs, &bm, &nb);
    if (rc == 0)
        rc = alloc_scan_map(fs, &im, &ni);
    if (rc < 0)
        return rc;
    if (exact) {   /* keep the superblock's numbers on a mismatch: fsck's */
        rc = alloc_scan_count(fs, &bm, nb, &fs->sb.free_blocks);
        if (rc == 0)
            rc = alloc_scan_count(fs, &im, ni, &fs->sb.free_inodes);
        return rc;
    }
    fs->sb.free_blocks = nb;
    fs->sb.free_inodes = ni;
    return 0;
}

/* ---- allocation ------------------------------------------------------------ */

/* alloc_event -- the event of bits [bit, bit + n) of bitmap block b
 * changed (set: taken): BLOCK_ALLOC/FREE or INODE_ALLOC/FREE. */
static int alloc_event(struct ubj_handle *h, const struct alloc_map *m,
                       struct ubj_buf *b, uint32_t bit, uint32_t n, bool set)
{
    bool blocks = m->magic == UBJ_MAGIC_BBITMAP;
    enum ubj_event_type type = blocks ? (set ? UBJ_EV_BLOCK_ALLOC : UBJ_EV_BLOCK_FREE)
                                      : (set ? UBJ_EV_INODE_ALLOC : UBJ_EV_INODE_FREE);
    uint32_t lo = bit / 8, hi = (bit + n - 1) / 8;
    const uint8_t *bits = (const uint8_t *)alloc_words(b);
    return fs_event(h, b, bits + lo, hi - lo + 1u,
                    (struct ubj_event){ .type = type, .a = bit, .b = n });
}

/* alloc_take -- mark [bit, bit + n) of bitmap block i used. */
static int alloc_take(struct ubj_fs *fs, struct ubj_handle *h,
                      const struct alloc_map *m, uint64_t i, struct ubj_buf *b,
                      uint32_t bit, uint32_t n)
{
    fs_gen_bump(fs);
    int rc = ubj_txn_write_access(h, &b);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    alloc_mark(alloc_words(b), bit, n, 1);
    rc = alloc_event(h, m, b, bit, n, true);
    if (rc == 0)
        rc = fs_meta_dirty(fs, h, b);
    ubj_cache_put(fs->cache, b);
    if (rc < 0)
        return rc;
    m->cnt[i] -= n;
    if (m->low[i] == bit)
        m->low[i] = bit + n;
    return 0;
}

/* alloc_check_cached -- none of blocks [start, start + n), marked free,
 * may be in the cache (it would be a block of this mount still in use). */
static int alloc_check_cached(struct ubj_fs *fs, uint64_t start, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        struct ubj_buf *b;
        if (ubj_cache_lookup(fs->cache, start + k, &b) < 0)
            continue;
        ubj_cache_put(fs->cache, b);
        return alloc_bad(fs, "block bitmap: block %llu is marked free but in "
                         "use (this mount read or wrote it and never freed it)",
                         (unsigned long long)(start + k));
    }
    return 0;
}

/* alloc_in_block -- a run of up to `want` free bits of block i at or after
 * local bit `from`.  1 and *bit,*got if allocated; 0 if none; -errno.
 * With h NULL nothing is taken: 1 and *bit (*got 1) name the first free
 * bit an allocation would take. */
static int alloc_in_block(struct ubj_fs *fs, struct ubj_handle *h,
                          const struct alloc_map *m, uint64_t i, uint32_t from,
                          uint32_t want, uint32_t *bit, uint32_t *got)
{
    uint32_t lo, hi;
    struct ubj_buf *b;
    if (m->cnt[i] == 0 || !alloc_range(m, i, &lo, &hi))
        return 0;
    if (from < lo)
        from = lo;
    bool from_low = from <= m->low[i];
    if (from_low)
        from = m->low[i];
    if (from >= hi)
        return 0;
    int rc = fs_meta_read(fs, m->start + i, m->magic, &b);
    if (rc < 0)
        return rc;
    const uint64_t *w = alloc_words(b);
    if (m->cnt[i] == ALLOC_UNKNOWN)
        m->cnt[i] = alloc_zeros(w);
    uint32_t f = alloc_find(w, from, hi, 0);
    if (from_low)
        m->low[i] = f;
    if (f >= hi || h == NULL) {   /* none; or a peek (fs_ialloc_peek) */
        ubj_cache_put(fs->cache, b);
        *bit = f;
        *got = 1;
        return f < hi;
    }
    uint32_t limit = hi - f < want ? hi - f : want;
    uint32_t e = alloc_find(w, f, f + limit, 1);
    if (m->magic == UBJ_MAGIC_BBITMAP && fs->alloc->cached_check)
        rc = alloc_check_cached(fs, i * UBJ_BITMAP_BITS + f, e - f);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    rc = alloc_take(fs, h, m, i, b, f, e - f);
    if (rc < 0)
        return rc;
    *bit = f;
    *got = e - f;
    return 1;
}

/* alloc_search -- next-fit over every bitmap block from global bit `goal`,
 * wrapping once.  0 and *start,*got; -ENOSPC; -errno. */
static int alloc_search(struct ubj_fs *fs, struct ubj_handle *h,
                        const struct alloc_map *m, uint64_t goal, uint32_t want,
                        uint64_t *start, uint32_t *got)
{
    if (goal < m->lo || goal >= m->hi)
        goal = m->lo;
    uint64_t i0 = goal / UBJ_BITMAP_BITS;
    uint32_t off = (uint32_t)(goal % UBJ_BITMAP_BITS), bit = 0;
    /* every block once from the goal on, then the goal's block from 0 */
    for (uint64_t k = 0; k <= m->nblk; k++) {
        if (k == m->nblk && off == 0)
            break;
        uint64_t i = (i0 + k) % m->nblk;
        int rc = alloc_in_block(fs, h, m, i, k == 0 ? off : 0, want, &bit, got);
        if (rc < 0)
            return rc;
        if (rc > 0) {
            *start = i * UBJ_BITMAP_BITS + bit;
            return 0;
        }
    }
    return -ENOSPC;
}

/* fs_balloc -- allocate up to `want` contiguous blocks near `goal`. */
int fs_balloc(struct ubj_fs *fs, struct ubj_handle *h, uint64_t goal,
              uint32_t want, uint64_t *start, uint32_t *got)
{
    struct alloc_map m;
    if (want == 0)
        return ubj_set_error(-EINVAL, "block allocation of 0 blocks");
    if (fs->sb.free_blocks == 0)
        return ubj_set_error(-ENOSPC, "no free blocks");
    alloc_bmap(fs, &m);
    if (goal < m.lo || goal >= m.hi)
        goal = fs->balloc_hint;
    int rc = alloc_search(fs, h, &m, goal, want, start, got);
    if (rc == -ENOSPC)
        return ubj_set_error(rc, "no free blocks (bitmaps full; the "
                             "superblock counted %llu free)",
                             (unsigned long long)fs->sb.free_blocks);
    if (rc < 0)
        return rc;
    fs->balloc_hint = *start + *got;
    fs->sb.free_blocks -= *got <= fs->sb.free_blocks ? *got : fs->sb.free_blocks;
    (void)h;
    return 0;   /* the superblock's counts are written lazily */
}

/* alloc_ifind -- the inode an allocation near `hint` takes (h) or would
 * take (h NULL): 0 and *out, -ENOSPC (no message), -errno. */
static int alloc_ifind(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t hint,
                       uint64_t *out)
{
    struct alloc_map m;
    uint32_t got;
    if (fs->sb.free_inodes == 0)
        return -ENOSPC;
    alloc_imap(fs, &m);
    if (hint < m.lo || hint >= m.hi)
        hint = fs->ialloc_hint;
    return alloc_search(fs, h, &m, hint, 1, out, &got);
}

/* fs_ialloc -- allocate an inode near `hint`. */
int fs_ialloc(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t hint,
              ubj_ino_t *out)
{
    uint64_t ino;
    if (fs->sb.free_inodes == 0)
        return ubj_set_error(-ENOSPC, "no free inodes");
    int rc = alloc_ifind(fs, h, hint, &ino);
    if (rc == -ENOSPC)
        return ubj_set_error(rc, "no free inodes (bitmap full; the "
                             "superblock counted %llu free)",
                             (unsigned long long)fs->sb.free_inodes);
    if (rc < 0)
        return rc;
    fs->ialloc_hint = ino + 1;
    fs->sb.free_inodes--;
    *out = ino;
    return 0;   /* the superblock's counts are written lazily */
}

/* fs_ialloc_peek -- the inode fs_ialloc(hint) would take now (fs.h). */
int fs_ialloc_peek(struct ubj_fs *fs, ubj_ino_t hint, ubj_ino_t *out)
{
    uint64_t ino;
    int rc = alloc_ifind(fs, NULL, hint, &ino);
    if (rc == 0)
        *out = ino;
    return rc;
}

/* ---- freeing --------------------------------------------------------------- */

/* alloc_corrupt -- a bad free: sticky error, message, -EUCLEAN. */
static int alloc_corrupt(struct ubj_fs *fs, const char *what, uint64_t start,
                         uint64_t count, const char *why)
{
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "freeing %s%s %llu..%llu: %s", what,
                         count > 1 ? "s" : "", (unsigned long long)start,
                         (unsigned long long)(start + count - 1), why);
}

/* alloc_release -- clear bits [start, start + count) (in range, checked),
 * refusing bits already clear.  Changes nothing on a double free within
 * one bitmap block. */
static int alloc_release(struct ubj_fs *fs, struct ubj_handle *h,
                         const struct alloc_map *m, uint64_t start, uint64_t count)
{
    while (count > 0) {
        uint64_t i = start / UBJ_BITMAP_BITS;
        uint32_t bit = (uint32_t)(start % UBJ_BITMAP_BITS);
        uint32_t n = UBJ_BITMAP_BITS - bit < count ? UBJ_BITMAP_BITS - bit
                                                   : (uint32_t)count;
        struct ubj_buf *b;
        int rc = fs_meta_write_begin(fs, h, m->start + i, m->magic, &b);
        if (rc < 0)
            return rc;
        uint64_t *w = alloc_words(b);
        uint32_t z = alloc_find(w, bit, bit + n, 0);
        if (z < bit + n) {
            ubj_cache_put(fs->cache, b);
            return alloc_corrupt(fs, m->what, start, count, "already free "
                                 "(double free)");
        }
        if (m->cnt[i] == ALLOC_UNKNOWN)
            m->cnt[i] = alloc_zeros(w) + n;
        else
            m->cnt[i] += n;
        alloc_mark(w, bit, n, 0);
        rc = alloc_event(h, m, b, bit, n, false);
        if (rc == 0)
            rc = fs_meta_dirty(fs, h, b);
        ubj_cache_put(fs->cache, b);
        if (rc < 0)
            return rc;
        if (bit < m->low[i])
            m->low[i] = bit;
        start += n;
        count -= n;
    }
    return 0;
}

/* fs_bfree -- free blocks [start, start + count) and revoke them. */
int fs_bfree(struct ubj_fs *fs, struct ubj_handle *h, uint64_t start, uint64_t count)
{
    struct alloc_map m;
    if (count == 0)
        return 0;
    alloc_bmap(fs, &m);
    if (start < m.lo || start >= m.hi || count > m.hi - start)
        return alloc_corrupt(fs, "block", start, count,
                             start < m.lo ? "not in the data area"
                                          : "beyond the end of the image");
    int rc = alloc_release(fs, h, &m, start, count);
    if (rc < 0)
        return rc;
    fs_gen_bump(fs);
    for (uint64_t b = start; b < start + count; b++) {
        rc = ubj_txn_forget(h, b);
        if (rc < 0)
            return rc;
    }
    uint64_t room = m.hi - m.lo - fs->sb.free_blocks;
    fs->sb.free_blocks += count <= room ? count : room;
    (void)h;
    return 0;   /* the superblock's counts are written lazily */
}

/* fs_ifree -- free inode `ino` in the bitmap. */
int fs_ifree(struct ubj_fs *fs, struct ubj_handle *h, ubj_ino_t ino)
{
    struct alloc_map m;
    alloc_imap(fs, &m);
    if (ino <= UBJ_ROOT_INO || ino >= m.hi)
        return alloc_corrupt(fs, "inode", ino, 1, ino == UBJ_ROOT_INO
                             ? "the root inode" : "out of range");
    int rc = alloc_release(fs, h, &m, ino, 1);
    if (rc < 0)
        return rc;
    if (fs->sb.free_inodes < m.hi - m.lo)
        fs->sb.free_inodes++;
    (void)h;
    return 0;   /* the superblock's counts are written lazily */
}

/* fs_ialloc_test -- whether inode `ino` (in range) is marked in use. */
int fs_ialloc_test(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct alloc_map m;
    struct ubj_buf *b;
    alloc_imap(fs, &m);
    int rc = fs_meta_read(fs, m.start + ino / UBJ_BITMAP_BITS, m.magic, &b);
    if (rc < 0)
        return rc;
    uint32_t bit = (uint32_t)(ino % UBJ_BITMAP_BITS);
    int used = (int)((alloc_words(b)[bit / 64] >> (bit % 64)) & 1u);
    ubj_cache_put(fs->cache, b);
    return used;
}
