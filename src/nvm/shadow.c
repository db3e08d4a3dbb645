/*
 * shadow.c -- the recording shadow of a region for crash tests
 * (include/ubjfs/nvm.h): a model of what a power failure can leave in
 * persistent memory at each persistence point.
 *
 * Model (x86 with ADR, libpmem's verbs): a store lands in the CPU cache
 * and may reach the media at any time, in 8-byte pieces, in any order; a
 * flushed line is guaranteed durable, as it was when flushed, once the
 * next drain completes.  So at any instant the media holds, for every
 * 8-byte word, either its durable value, or (if its line was flushed and
 * not yet drained) the value flushed, or any later value it was given --
 * the recorder keeps the durable and the current values (the latest),
 * and the flushed snapshots.
 *
 * State [single thread: the region's user]:
 *   durable   the region as certainly persistent: the contents at attach,
 *             then each flushed line (as snapshotted at flush) applied at
 *             the following drain
 *   pend      lines flushed since the last drain, with their snapshot
 *   points    drains since attach (persistence points)
 *   capture   at the armed point, before that drain applies anything:
 *             copies of durable, pend and the current mapping
 * Invariants: S1 at most one region is attached to a shadow, and only
 * while it is installed or was when the region was opened; S2 durable and
 * the capture have the size of the mapping at attach.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "nvm/nvm_int.h"
#include "util/util.h"

struct shadow_line {
    uint64_t off;                       /* line-aligned byte offset */
    uint8_t bytes[UBJ_NVM_LINE];        /* contents when flushed */
};

struct ubj_nvm_shadow {
    struct ubj_nvm *r;                  /* attached region or NULL */
    size_t size;
    uint8_t *durable;
    struct shadow_line *pend;
    size_t npend, cap;
    uint64_t points;
    uint64_t arm_point;                 /* 0: not armed */
    void (*on_capture)(void *ctx);
    void *ctx;
    int captured;
    uint8_t *cap_durable, *cap_current;
    struct shadow_line *cap_pend;
    size_t cap_npend;
};

static struct ubj_nvm_shadow *shadow_installed;   /* process-wide */

/* ubj_nvm_shadow_new -- an idle shadow. */
int ubj_nvm_shadow_new(struct ubj_nvm_shadow **out)
{
    struct ubj_nvm_shadow *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "shadow: out of memory");
    *out = s;
    return 0;
}

/* shadow_drop_capture -- forget a captured state. */
static void shadow_drop_capture(struct ubj_nvm_shadow *s)
{
    free(s->cap_durable);
    free(s->cap_current);
    free(s->cap_pend);
    s->cap_durable = s->cap_current = NULL;
    s->cap_pend = NULL;
    s->cap_npend = 0;
    s->captured = 0;
}

/* ubj_nvm_shadow_free -- free a shadow that is not installed. */
void ubj_nvm_shadow_free(struct ubj_nvm_shadow *s)
{
    if (s == NULL)
        return;
    if (shadow_installed == s)
        shadow_installed = NULL;
    if (s->r != NULL)
        s->r->shadow = NULL;
    shadow_drop_capture(s);
    free(s->durable);
    free(s->pend);
    free(s);
}

/* ubj_nvm_shadow_install -- regions opened from now on record into s. */
void ubj_nvm_shadow_install(struct ubj_nvm_shadow *s)
{
    shadow_installed = s;
}

/* ubj_nvm_shadow_arm -- capture before drain number `point`. */
void ubj_nvm_shadow_arm(struct ubj_nvm_shadow *s, uint64_t point,
                        void (*on_capture)(void *ctx), void *ctx)
{
    shadow_drop_capture(s);
    s->arm_point = point;
    s->on_capture = on_capture;
    s->ctx = ctx;
}

/* ubj_nvm_shadow_points -- drains recorded since attach. */
uint64_t ubj_nvm_shadow_points(const struct ubj_nvm_shadow *s)
{
    return s->points;
}

/* ubj_nvm_shadow_captured -- whether the armed point was reached. */
int ubj_nvm_shadow_captured(const struct ubj_nvm_shadow *s)
{
    return s->captured;
}

/* ubj_nvm_shadow_size -- bytes recorded. */
size_t ubj_nvm_shadow_size(const struct ubj_nvm_shadow *s)
{
    return s->size;
}

/* nvm_shadow_attach -- region r was opened: record it if a shadow is
 * installed and free; the durable image starts as r's contents. */
void nvm_shadow_attach(struct ubj_nvm *r)
{
    struct ubj_nvm_shadow *s = shadow_installed;
    if (s == NULL || s->r != NULL)
        return;
    uint8_t *d = realloc(s->durable, r->map_len);
    if (d == NULL)
        return;                         /* not recorded: the test will see 0 points */
    memcpy(d, r->base, r->map_len);
    s->durable = d;
    s->size = r->map_len;
    s->npend = 0;
    s->points = 0;
    s->r = r;
    r->shadow = s;
}

/* nvm_shadow_detach -- region r is being closed. */
void nvm_shadow_detach(struct ubj_nvm *r)
{
    if (r->shadow != NULL)
        r->shadow->r = NULL;
    r->shadow = NULL;
}

/* nvm_shadow_flush -- remember the lines of [off, off+len) as they are. */
void nvm_shadow_flush(struct ubj_nvm_shadow *s, const uint8_t *base,
                      uint64_t off, uint64_t len)
{
    for (uint64_t o = off; o < off + len; o += UBJ_NVM_LINE) {
        if (s->npend == s->cap) {
            size_t nc = s->cap ? 2 * s->cap : 256;
            struct shadow_line *p = realloc(s->pend, nc * sizeof *p);
            if (p == NULL)
                abort();                /* test machinery: no way to go on */
            s->pend = p;
            s->cap = nc;
        }
        s->pend[s->npend].off = o;
        memcpy(s->pend[s->npend].bytes, base + o, UBJ_NVM_LINE);
        s->npend++;
    }
}

/* shadow_capture -- keep durable, pending and current for image(). */
static void shadow_capture(struct ubj_nvm_shadow *s, const uint8_t *base)
{
    s->cap_durable = malloc(s->size);
    s->cap_current = malloc(s->size);
    s->cap_pend = malloc((s->npend ? s->npend : 1) * sizeof *s->cap_pend);
    if (!s->cap_durable || !s->cap_current || !s->cap_pend)
        abort();
    memcpy(s->cap_durable, s->durable, s->size);
    memcpy(s->cap_current, base, s->size);
    memcpy(s->cap_pend, s->pend, s->npend * sizeof *s->pend);
    s->cap_npend = s->npend;
    s->captured = 1;
    if (s->on_capture != NULL)
        s->on_capture(s->ctx);
}

/* nvm_shadow_drain -- a persistence point: maybe capture, then apply. */
void nvm_shadow_drain(struct ubj_nvm_shadow *s, const uint8_t *base)
{
    s->points++;
    if (s->arm_point != 0 && s->points == s->arm_point && !s->captured)
        shadow_capture(s, base);
    for (size_t i = 0; i < s->npend; i++)
        memcpy(s->durable + s->pend[i].off, s->pend[i].bytes, UBJ_NVM_LINE);
    s->npend = 0;
}

/* shadow_rand -- splitmix64 step. */
static uint64_t shadow_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ubj_nvm_shadow_image -- one possible crash image of the capture. */
int ubj_nvm_shadow_image(const struct ubj_nvm_shadow *s,
                         enum ubj_shadow_policy policy, uint64_t seed, void *buf)
{
    if (!s->captured)
        return ubj_set_error(-ENOENT, "shadow: nothing captured");
    uint8_t *img = buf;
    if (policy == UBJ_SHADOW_ALL) {
        memcpy(img, s->cap_current, s->size);
        return 0;
    }
    memcpy(img, s->cap_durable, s->size);
    if (policy == UBJ_SHADOW_DURABLE)
        return 0;
    uint64_t x = seed;
    for (size_t o = 0; o + 8 <= s->size; o += 8)   /* unflushed stores */
        if (memcmp(s->cap_durable + o, s->cap_current + o, 8) != 0 &&
            (shadow_rand(&x) & 1))
            memcpy(img + o, s->cap_current + o, 8);
    for (size_t i = 0; i < s->cap_npend; i++) {    /* flushed, not drained */
        const struct shadow_line *l = &s->cap_pend[i];
        for (unsigned w = 0; w < UBJ_NVM_LINE; w += 8) {
            uint64_t pick = shadow_rand(&x) % 3;
            const uint8_t *src = pick == 0 ? s->cap_durable + l->off + w
                               : pick == 1 ? l->bytes + w
                                           : s->cap_current + l->off + w;
            memcpy(img + l->off + w, src, 8);
        }
    }
    return 0;
}
