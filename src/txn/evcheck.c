/*
 * evcheck.c -- the event checker: a wrapper stacked over any mode by the
 * dispatch (src/txn/txn.c), compiled only with UBJ_TEST_HOOKS and
 * switched on for a mount by UBJ_CHECK_EVENTS=1.  It never changes what
 * the wrapped mode sees: txn.c forwards every call unchanged and calls the
 * checker beside it; the checker only reads buffers.
 *
 * Owns: per handle, one snapshot of each block it write-accessed (taken
 * after the mode's write_access, on the buffer the mode returned) and the
 * byte ranges of the events on that block since.
 *
 * Invariants it proves (an abort with one line on stderr naming the
 * block, the byte and the events seen, so that the running test fails):
 *  - at every metadata dirty(), each byte that differs from the snapshot,
 *    outside the 16-byte block header (magic, crc, number: the seal's),
 *    lies in the range of an event of that handle on that block; then
 *    the snapshot is the dirtied bytes and the ranges start afresh;
 *  - every event names a block write-accessed in its handle, a range
 *    inside the block past its header, and matches the change it
 *    describes (the per-type checks in evc_match).
 * UBJ_TEST_DROP_EVENT=<name> (ubj_event_name) makes the dispatch drop
 * every event of that type: the proof that a missing event is caught.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "txn/evcheck.h"

#define EVC_HDR 16u          /* struct ubj_blkhdr: never an event's */
#define EVC_BS 4096u
#define EVC_ISLOT 256u       /* inode slot (slot 0: the header) */
#define EVC_CHUNK 64u        /* ubj_evcheck_dirty compares so many at once */
#define EVC_DIR_RECS 32u     /* UBJ_DIR_REC_OFF: a directory node's records */
#define EVC_DIR_FIXED 18u    /* UBJ_DIR_LEAF_FIXED: a leaf record's head */

static const char *const evc_names[UBJ_EV_COUNT] = {
#define EVC_NAME(type, name) name,
    UBJ_EVENTS(EVC_NAME)
#undef EVC_NAME
};

/* ubj_event_name -- an event type's name. */
const char *ubj_event_name(enum ubj_event_type type)
{
    return (unsigned)type < UBJ_EV_COUNT ? evc_names[type] : "?";
}

/* ubj_evcheck_tap -- see evcheck.h (defined in every build so that a
 * test links; only a test build's checker calls it). */
void (*ubj_evcheck_tap)(const struct ubj_event *ev);

#if UBJ_TEST_HOOKS

struct evc_range { uint32_t off, len; enum ubj_event_type type; };

struct evc_block {
    struct ubj_handle *h;
    uint64_t blkno;
    struct ubj_buf *b;           /* the buffer write_access returned */
    uint8_t snap[EVC_BS];
    struct evc_range *r;
    size_t nr, cap;
};

struct ubj_evcheck {
    struct evc_block **blk;
    size_t n, cap;
    int drop;                 /* UBJ_TEST_DROP_EVENT's type, or -1 */
};

/* evc_fail -- one line naming what is wrong, then abort. */
__attribute__((noreturn, format(printf, 1, 2)))
static void evc_fail(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ubjfs event check: %s\n", line);
    fflush(stderr);
    abort();
}

/* ubj_evcheck_drop -- whether UBJ_TEST_DROP_EVENT named `type` at open. */
bool ubj_evcheck_drop(const struct ubj_evcheck *c, enum ubj_event_type type)
{
    return c->drop == (int)type;
}

/* ubj_evcheck_open -- a checker when UBJ_CHECK_EVENTS=1. */
struct ubj_evcheck *ubj_evcheck_open(void)
{
    const char *e = getenv("UBJ_CHECK_EVENTS");
    if (e == NULL || strcmp(e, "1") != 0)
        return NULL;
    struct ubj_evcheck *c = calloc(1, sizeof *c);
    if (c == NULL)
        evc_fail("out of memory");
    const char *d = getenv("UBJ_TEST_DROP_EVENT");
    c->drop = -1;
    for (int i = 0; d != NULL && i < (int)UBJ_EV_COUNT; i++)
        if (strcmp(d, ubj_event_name((enum ubj_event_type)i)) == 0)
            c->drop = i;
    return c;
}

/* evc_drop_at -- forget snapshot i. */
static void evc_drop_at(struct ubj_evcheck *c, size_t i)
{
    free(c->blk[i]->r);
    free(c->blk[i]);
    c->blk[i] = c->blk[--c->n];
}

/* ubj_evcheck_close -- free the checker. */
void ubj_evcheck_close(struct ubj_evcheck *c)
{
    if (c == NULL)
        return;
    while (c->n)
        evc_drop_at(c, c->n - 1);
    free(c->blk);
    free(c);
}

/* evc_find -- h's snapshot of blkno, or NULL. */
static struct evc_block *evc_find(struct ubj_evcheck *c, struct ubj_handle *h,
                                  uint64_t blkno, size_t *at)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->blk[i]->h == h && c->blk[i]->blkno == blkno) {
            if (at)
                *at = i;
            return c->blk[i];
        }
    return NULL;
}

/* ubj_evcheck_access -- snapshot b the first time h accesses it. */
void ubj_evcheck_access(struct ubj_evcheck *c, struct ubj_handle *h,
                        struct ubj_buf *b)
{
    struct evc_block *e = evc_find(c, h, b->d->blkno, NULL);
    if (e != NULL) {
        e->b = b;    /* a mode may hand out another buffer (UBJ COW) */
        return;
    }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->blk = realloc(c->blk, c->cap * sizeof *c->blk);
        if (c->blk == NULL)
            evc_fail("out of memory");
    }
    e = calloc(1, sizeof *e);
    if (e == NULL)
        evc_fail("out of memory");
    e->h = h;
    e->blkno = b->d->blkno;
    e->b = b;
    memcpy(e->snap, b->data, EVC_BS);
    c->blk[c->n++] = e;
}

/* evc_bits -- bits [first, first+count) of a bitmap block all `set` and
 * inside [off, off+len). */
static const char *evc_bits(const uint8_t *data, const struct ubj_event *ev, bool set)
{
    if (ev->b == 0 || ev->a + ev->b > (EVC_BS - EVC_HDR) * 8u)
        return "bits outside the bitmap";
    uint64_t lo = EVC_HDR + ev->a / 8, hi = EVC_HDR + (ev->a + ev->b - 1) / 8;
    if (lo < ev->off || hi >= (uint64_t)ev->off + ev->len)
        return "range does not hold the bits";
    for (uint64_t i = ev->a; i < ev->a + ev->b; i++)
        if (((data[EVC_HDR + i / 8] >> (i % 8)) & 1u) != (set ? 1u : 0u))
            return set ? "a bit is not set" : "a bit is not clear";
    return NULL;
}

/* evc_in_slot -- the range lies in one inode slot, [from, to) of it. */
static bool evc_in_slot(const struct ubj_event *ev, uint32_t from, uint32_t to)
{
    uint32_t s = ev->off / EVC_ISLOT, o = ev->off % EVC_ISLOT;
    return s >= 1 && o >= from && o + ev->len <= to &&
           (ev->off + ev->len - 1) / EVC_ISLOT == s;
}

/* evc_attr_ok -- an INODE_ATTR range avoids nlink, xattr_blk,
 * orphan_next and i_data (each has its own event). */
static bool evc_attr_ok(const struct ubj_event *ev)
{
    uint32_t o = ev->off % EVC_ISLOT, end = o + ev->len;
    if (!evc_in_slot(ev, 0, 128))
        return false;
    return !(o < 16 && end > 12) && !(o < 112 && end > 96);
}

/* evc_dirent -- a DIRENT_ADD / DIRENT_RENAME range holds a whole leaf
 * record (src/fs/format.h: key 8, ino 8, type 1, namelen 1, name) with
 * ev's name pointing at inode a with type b. */
static const char *evc_dirent(const uint8_t *data, const struct ubj_event *ev)
{
    if (ev->name == NULL || ev->namelen == 0 || ev->namelen > ev->len)
        return "no name";
    bool named = false;
    for (uint32_t i = 0; i + ev->namelen <= ev->len; i++) {
        if (memcmp(data + ev->off + i, ev->name, ev->namelen) != 0)
            continue;
        named = true;
        uint32_t rs = ev->off + i;            /* the record's first byte */
        if (rs < EVC_DIR_FIXED + EVC_DIR_RECS)
            continue;
        rs -= EVC_DIR_FIXED;
        if (rs < ev->off)
            continue;                         /* its head lies outside */
        uint64_t ino;
        memcpy(&ino, data + rs + 8, 8);
        if (data[rs + 17] == ev->namelen && ino == ev->a && data[rs + 16] == ev->b)
            return NULL;
    }
    return named ? "no record in the range names inode a with type b"
                 : "range does not hold the name";
}

/* evc_match -- why ev does not describe what the bytes hold, or NULL. */
static const char *evc_match(const uint8_t *data, const struct ubj_event *ev)
{
    const uint8_t *p = data + ev->off;
    switch (ev->type) {
    case UBJ_EV_BLOCK_ALLOC: case UBJ_EV_INODE_ALLOC:
        return evc_bits(data, ev, true);
    case UBJ_EV_BLOCK_FREE: case UBJ_EV_INODE_FREE:
        return evc_bits(data, ev, false);
    case UBJ_EV_INODE_INIT:
        return ev->off % EVC_ISLOT == 0 && ev->len == EVC_ISLOT && ev->off ? NULL
               : "not one whole inode slot";
    case UBJ_EV_INODE_CLEAR:
        if (ev->off % EVC_ISLOT != 0 || ev->len != EVC_ISLOT || !ev->off)
            return "not one whole inode slot";
        for (uint32_t i = 0; i < ev->len; i++)
            if (p[i])
                return "the slot is not zero";
        return NULL;
    case UBJ_EV_INODE_ATTR:
        return evc_attr_ok(ev) ? NULL : "not the attribute fields of one inode";
    case UBJ_EV_LINK_COUNT: {
        uint32_t v;
        memcpy(&v, p, 4);
        if (ev->off % EVC_ISLOT != 12 || ev->len != 4 || ev->off < EVC_ISLOT)
            return "range is not an inode's nlink field";
        return v == ev->a ? NULL : "nlink does not hold the count";
    }
    case UBJ_EV_DIR_ROOT:
        return ev->off < EVC_ISLOT || !evc_in_slot(ev, 128, 160)
               ? "not a directory root in an inode" : NULL;
    case UBJ_EV_DIRENT_ADD: case UBJ_EV_DIRENT_RENAME:
        return evc_dirent(data, ev);
    case UBJ_EV_DIRENT_REMOVE:
        return ev->name == NULL || ev->namelen == 0 || ev->a == 0 ? "no name or inode"
               : NULL;
    case UBJ_EV_NODE_INIT:
        return ev->off == EVC_HDR && ev->len == EVC_BS - EVC_HDR ? NULL
               : "not the whole node";
    case UBJ_EV_SUPER_SUMMARY:
        return ev->blkno == 0 ? NULL : "not the superblock";
    default:
        return NULL;
    }
}

/* ubj_evcheck_event -- check ev, record its range. */
void ubj_evcheck_event(struct ubj_evcheck *c, struct ubj_handle *h,
                       const struct ubj_event *ev)
{
    const char *name = ubj_event_name(ev->type);
    struct evc_block *e = evc_find(c, h, ev->blkno, NULL);
    if (e == NULL)
        evc_fail("block %llu: event %s on a block not write-accessed in "
                 "its handle", (unsigned long long)ev->blkno, name);
    if (ev->len == 0 || ev->off < EVC_HDR || ev->off > EVC_BS ||
        ev->len > EVC_BS - ev->off)
        evc_fail("block %llu: event %s: bad range [%u, +%u)",
                 (unsigned long long)ev->blkno, name, ev->off, ev->len);
    const char *why = evc_match(e->b->data, ev);
    if (why)
        evc_fail("block %llu byte %u: event %s (ino %llu) wrong: %s",
                 (unsigned long long)ev->blkno, ev->off, name,
                 (unsigned long long)ev->ino, why);
    if (e->nr == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 8;
        e->r = realloc(e->r, e->cap * sizeof *e->r);
        if (e->r == NULL)
            evc_fail("out of memory");
    }
    e->r[e->nr++] = (struct evc_range){ ev->off, ev->len, ev->type };
    if (ubj_evcheck_tap != NULL)
        ubj_evcheck_tap(ev);
}

/* evc_seen -- the names of the events recorded on e, for a message. */
static void evc_seen(const struct evc_block *e, char *out, size_t sz)
{
    size_t n = 0;
    out[0] = 0;
    for (size_t i = 0; i < e->nr && n + 1 < sz; i++)
        n += (size_t)snprintf(out + n, sz - n, "%s%s[%u,+%u)", i ? " " : "",
                              ubj_event_name(e->r[i].type), e->r[i].off,
                              e->r[i].len);
    if (!e->nr)
        snprintf(out, sz, "none");
}

/* ubj_evcheck_dirty -- every changed metadata byte covered by an event. */
void ubj_evcheck_dirty(struct ubj_evcheck *c, struct ubj_handle *h,
                       struct ubj_buf *b, enum ubj_buf_kind kind)
{
    size_t at;
    struct evc_block *e = evc_find(c, h, b->d->blkno, &at);
    if (e == NULL)
        return;   /* not write-accessed in h: not ours to judge */
    if (kind != UBJ_KIND_META) {
        evc_drop_at(c, at);
        return;
    }
    for (uint32_t i = EVC_HDR; i < EVC_BS; i++) {
        /* whole unchanged chunks at once (memcmp: a byte loop costs
         * much under the sanitizers) */
        if (i % EVC_CHUNK == 0 && memcmp(b->data + i, e->snap + i, EVC_CHUNK) == 0) {
            i += EVC_CHUNK - 1;
            continue;
        }
        if (b->data[i] == e->snap[i])
            continue;
        bool covered = false;
        for (size_t k = 0; k < e->nr && !covered; k++)
            covered = i >= e->r[k].off && i - e->r[k].off < e->r[k].len;
        if (!covered) {
            char seen[300];
            evc_seen(e, seen, sizeof seen);
            evc_fail("block %llu byte %u changed (0x%02x -> 0x%02x) with no "
                     "event at dirty; events on it: %s",
                     (unsigned long long)e->blkno, i, e->snap[i], b->data[i],
                     seen);
        }
    }
    memcpy(e->snap, b->data, EVC_BS);
    e->nr = 0;
}

/* ubj_evcheck_forget -- the block was freed: no more judgement on it. */
void ubj_evcheck_forget(struct ubj_evcheck *c, struct ubj_handle *h, uint64_t blkno)
{
    size_t at;
    if (evc_find(c, h, blkno, &at))
        evc_drop_at(c, at);
}

/* ubj_evcheck_stop -- h ends: drop its snapshots. */
void ubj_evcheck_stop(struct ubj_evcheck *c, struct ubj_handle *h)
{
    for (size_t i = c->n; i-- > 0;)
        if (c->blk[i]->h == h)
            evc_drop_at(c, i);
}

#else /* !UBJ_TEST_HOOKS: no checker, nothing dropped */

struct ubj_evcheck *ubj_evcheck_open(void) { return NULL; }
void ubj_evcheck_close(struct ubj_evcheck *c) { (void)c; }
bool ubj_evcheck_drop(const struct ubj_evcheck *c, enum ubj_event_type type)
{ (void)c; (void)type; return false; }
void ubj_evcheck_access(struct ubj_evcheck *c, struct ubj_handle *h,
                        struct ubj_buf *b) { (void)c; (void)h; (void)b; }
void ubj_evcheck_event(struct ubj_evcheck *c, struct ubj_handle *h,
                       const struct ubj_event *ev) { (void)c; (void)h; (void)ev; }
void ubj_evcheck_dirty(struct ubj_evcheck *c, struct ubj_handle *h,
                       struct ubj_buf *b, enum ubj_buf_kind kind)
{ (void)c; (void)h; (void)b; (void)kind; }
void ubj_evcheck_forget(struct ubj_evcheck *c, struct ubj_handle *h, uint64_t blkno)
{ (void)c; (void)h; (void)blkno; }
void ubj_evcheck_stop(struct ubj_evcheck *c, struct ubj_handle *h) { (void)c; (void)h; }

#endif /* UBJ_TEST_HOOKS */
