/*
 * jrecovery.c -- what the journal modes share with mount, fsck and mkfs:
 * the journal area's geometry and default size, its format, the control
 * blocks' checksums, the journal superblock, and recovery in jbd2's three
 * passes (fs/jbd2/recovery.c):
 *
 *   SCAN    walk the log from the superblock's start and sequence; a
 *           transaction counts only when its commit block is valid (magic,
 *           crc, the expected sequence) -- with async commit also its
 *           transaction checksum; the first that does not ends the log.
 *   REVOKE  a revoke record of transaction R hides the copies of its block
 *           in every transaction <= R (a freed metadata block reused for
 *           data must not be overwritten by an old copy).
 *   REPLAY  write the newest visible copy of each block home, flush.
 * then the log restarts: start = 0, sequence = the last one found + 1
 * (never reused: remnants of a torn transaction stay invisible).
 *
 * Invariants:
 *  - Recovery reads the log through g->dev only and writes only in REPLAY
 *    and the superblock reset, so pointing g->dev at an overlay
 *    (src/dev/cow.c) makes it harmless (fsck -n).
 *  - Every count, position and block number read from the log is checked
 *    before use: a corrupt log gives -EUCLEAN (or, with UBJ_JREC_FORCE,
 *    a skipped block and a problem line), never a crash or a write outside
 *    the file system.
 *  - The scan walks at most the log's length, so it ends on any input.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "txn/journal.h"
#include "util/util.h"

#define JR_BS UBJ_JBS
#define JR_BATCH 64u                  /* blocks per device request */


/* ---- the block-number map ---------------------------------------------------- */

/* jmap_slot -- the slot holding key, or the empty slot where it would go. */
static uint64_t jmap_slot(const struct ubj_jmap *m, uint64_t key)
{
    uint64_t i = (key * 0x9E3779B97F4A7C15ull >> 17) & m->mask;
    while (m->keys[i] != 0 && m->keys[i] != key + 1)
        i = (i + 1) & m->mask;
    return i;
}

/* jmap_resize -- rehash into `size` slots (a power of two). */
static int jmap_resize(struct ubj_jmap *m, uint64_t size)
{
    uint64_t *k = calloc(size, sizeof *k), *v = malloc(size * sizeof *v);
    if (k == NULL || v == NULL) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    struct ubj_jmap old = *m;
    m->keys = k;
    m->vals = v;
    m->mask = size - 1;
    for (uint64_t i = 0; old.keys && i <= old.mask; i++) {
        if (old.keys[i] == 0)
            continue;
        uint64_t s = jmap_slot(m, old.keys[i] - 1);
        k[s] = old.keys[i];
        v[s] = old.vals[i];
    }
    free(old.keys);
    free(old.vals);
    return 0;
}

/* ubj_jmap_put -- insert or replace key. */
int ubj_jmap_put(struct ubj_jmap *m, uint64_t key, uint64_t val)
{
    if (m->keys == NULL || (m->n + 1) * 2 > m->mask + 1) {
        if (jmap_resize(m, m->keys ? (m->mask + 1) * 2 : 64) < 0)
            return -ENOMEM;
    }
    uint64_t s = jmap_slot(m, key);
    if (m->keys[s] == 0) {
        m->keys[s] = key + 1;
        m->n++;
    }
    m->vals[s] = val;
    return 0;
}

/* ubj_jmap_get -- look key up. */
bool ubj_jmap_get(const struct ubj_jmap *m, uint64_t key, uint64_t *val)
{
    if (m->keys == NULL || m->n == 0)
        return false;
    uint64_t s = jmap_slot(m, key);
    if (m->keys[s] == 0)
        return false;
    if (val != NULL)
        *val = m->vals[s];
    return true;
}

/* ubj_jmap_del -- remove key, shifting the probe chain back over the hole. */
bool ubj_jmap_del(struct ubj_jmap *m, uint64_t key)
{
    if (m->keys == NULL || m->n == 0)
        return false;
    uint64_t hole = jmap_slot(m, key);
    if (m->keys[hole] == 0)
        return false;
    m->keys[hole] = 0;
    m->n--;
    for (uint64_t i = (hole + 1) & m->mask; m->keys[i] != 0; i = (i + 1) & m->mask) {
        uint64_t home = ((m->keys[i] - 1) * 0x9E3779B97F4A7C15ull >> 17) & m->mask;
        /* move i into the hole unless its home lies cyclically in (hole, i] */
        bool stays = hole <= i ? (home > hole && home <= i)
                               : (home > hole || home <= i);
        if (stays)
            continue;
        m->keys[hole] = m->keys[i];
        m->vals[hole] = m->vals[i];
        m->keys[i] = 0;
        hole = i;
    }
    return true;
}

/* ubj_jmap_clear -- empty the map; a large table goes back to the heap. */
void ubj_jmap_clear(struct ubj_jmap *m)
{
    if (m->keys == NULL)
        return;
    if (m->mask + 1 > 4096) {
        ubj_jmap_free(m);
        return;
    }
    if (m->n > 0)
        memset(m->keys, 0, (m->mask + 1) * sizeof *m->keys);
    m->n = 0;
}

/* ubj_jmap_free -- release the map's memory. */
void ubj_jmap_free(struct ubj_jmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- geometry and format ------------------------------------------------------ */

/* ubj_journal_default_blocks -- mke2fs's table, bounded for small images. */
uint64_t ubj_journal_default_blocks(uint64_t n)
{
    static const struct { uint64_t below, blocks; } table[] = {
        { 32768, 1024 }, { 256 * 1024, 4096 }, { 512 * 1024, 8192 },
        { 4096 * 1024, 16384 }, { 8192 * 1024, 32768 },
        { 16384 * 1024, 65536 }, { 32768 * 1024, 131072 },
    };
    uint64_t j = 262144;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (n < table[i].below) {
            j = table[i].blocks;
            break;
        }
    if (j > n / 4)
        j = n / 4;
    return j < UBJ_JOURNAL_MIN_BLOCKS ? UBJ_JOURNAL_MIN_BLOCKS : j;
}

/* ubj_journal_geom -- the journal in img's format area. */
int ubj_journal_geom(const struct ubj_mode_image *img, struct ubj_jgeom *g)
{
    if (img->area_blocks == 0)
        return ubj_set_error(-ENOENT, "the image has no journal area (mkfs "
                             "with --journal-size or a journal mode)");
    uint64_t lim = img->nblocks < img->dev->nblocks ? img->nblocks : img->dev->nblocks;
    if (img->area_start == 0 || img->area_blocks < 2 ||
        img->area_start >= lim || img->area_blocks > lim - img->area_start)
        return ubj_set_error(-EUCLEAN, "journal area %llu+%llu out of bounds",
                             (unsigned long long)img->area_start,
                             (unsigned long long)img->area_blocks);
    memset(g, 0, sizeof *g);
    g->dev = img->dev;
    g->start = img->area_start;
    g->blocks = img->area_blocks;
    g->fs_nblocks = img->nblocks;
    memcpy(g->uuid, img->uuid, 16);
    g->seed = ubj_crc32c(~0u, img->uuid, 16);
    return 0;
}

/* jr_zero -- write zeros over relative blocks [from, to) of the area. */
static int jr_zero(const struct ubj_jgeom *g, uint64_t from, uint64_t to)
{
    uint8_t *z = calloc(JR_BATCH, JR_BS);
    if (z == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t b = from; b < to && rc == 0; b += JR_BATCH) {
        uint32_t n = to - b < JR_BATCH ? (uint32_t)(to - b) : JR_BATCH;
        rc = ubj_bdev_write(g->dev, g->start + b, n, z);
    }
    free(z);
    return rc;
}

/* jr_fresh_super -- the superblock of an empty journal. */
static void jr_fresh_super(const struct ubj_jgeom *g, uint64_t compat,
                           uint64_t sequence, struct ubj_jsuper *js)
{
    memset(js, 0, sizeof *js);
    js->hdr.magic = UBJ_JMAGIC;
    js->hdr.blocktype = UBJ_JB_SUPER;
    js->version = UBJ_JOURNAL_VERSION;
    js->block_size = JR_BS;
    js->area_start = g->start;
    js->maxlen = g->blocks;
    js->first = UBJ_JOURNAL_FIRST;
    js->sequence = sequence;
    js->start = 0;
    memcpy(js->uuid, g->uuid, 16);
    js->feat_compat = compat;
    js->feat_incompat = UBJ_JFEAT_INCOMPAT_CSUM | UBJ_JFEAT_INCOMPAT_64BIT;
    js->max_txn = (uint32_t)((g->blocks - UBJ_JOURNAL_FIRST) / 4);
}

/* ubj_journal_format -- an empty journal over the area. */
int ubj_journal_format(const struct ubj_jgeom *g, uint64_t compat, bool zeroed)
{
    struct ubj_jsuper *js = aligned_alloc(JR_BS, JR_BS);
    if (js == NULL)
        return ubj_set_error(-ENOMEM, "journal: out of memory");
    int rc = zeroed ? 0 : jr_zero(g, UBJ_JOURNAL_FIRST, g->blocks);
    jr_fresh_super(g, compat, 1, js);
    if (rc == 0)
        rc = ubj_jsuper_write(g, js, UBJ_CRIT_CRITICAL);
    free(js);
    if (rc < 0)
        return ubj_set_error(rc, "journal: cannot write the empty journal: %s",
                             strerror(-rc));
    return 0;
}

/* ---- control blocks ---------------------------------------------------------- */

/* jr_block_crc -- crc32c of a control block with its crc field as zero. */
static uint32_t jr_block_crc(uint32_t seed, const void *blk)
{
    static const uint8_t zero[4];
    const uint8_t *p = blk;
    uint32_t c = ubj_crc32c(seed, p, offsetof(struct ubj_jhdr, crc));
    c = ubj_crc32c(c, zero, sizeof zero);
    size_t after = offsetof(struct ubj_jhdr, crc) + 4;
    return ubj_crc32c(c, p + after, JR_BS - after);
}

/* ubj_jblock_seal -- set a control block's crc. */
void ubj_jblock_seal(uint32_t seed, void *blk)
{
    struct ubj_jhdr *h = blk;
    h->crc = jr_block_crc(seed, blk);
}

/* ubj_jblock_ok -- magic and crc match. */
bool ubj_jblock_ok(uint32_t seed, const void *blk)
{
    const struct ubj_jhdr *h = blk;
    return h->magic == UBJ_JMAGIC && h->crc == jr_block_crc(seed, blk);
}

/* ubj_jtag_crc -- crc32c(seed, sequence || copy). */
uint32_t ubj_jtag_crc(uint32_t seed, uint64_t sequence, const void *copy)
{
    uint32_t c = ubj_crc32c(seed, &sequence, sizeof sequence);
    return ubj_crc32c(c, copy, JR_BS);
}

/* jr_super_why -- what is wrong with a journal superblock, or NULL. */
static const char *jr_super_why(const struct ubj_jgeom *g, const struct ubj_jsuper *js)
{
    if (js->hdr.magic != UBJ_JMAGIC || js->hdr.blocktype != UBJ_JB_SUPER)
        return "bad magic (no journal superblock)";
    if (!ubj_jblock_ok(g->seed, js))
        return "bad checksum";
    if (js->version != UBJ_JOURNAL_VERSION || js->block_size != JR_BS)
        return "unsupported version or block size";
    if (js->area_start != g->start || js->maxlen != g->blocks ||
        js->first != UBJ_JOURNAL_FIRST)
        return "geometry differs from the file system's journal area";
    if (memcmp(js->uuid, g->uuid, 16) != 0)
        return "uuid differs from the file system's";
    if ((js->feat_incompat & ~UBJ_JFEAT_INCOMPAT_KNOWN) || js->feat_ro_compat)
        return "unsupported features";
    if (js->feat_incompat != UBJ_JFEAT_INCOMPAT_KNOWN)
        return "checksum or 64-bit feature missing";
    if (js->start != 0 && (js->start < js->first || js->start >= js->maxlen))
        return "log start out of the log";
    return NULL;
}

/* ubj_jsuper_read -- read and validate the journal superblock. */
int ubj_jsuper_read(const struct ubj_jgeom *g, struct ubj_jsuper *js)
{
    int rc = ubj_bdev_read(g->dev, g->start, 1, js);
    if (rc < 0)
        return ubj_set_error(rc, "journal superblock (block %llu): read failed: %s",
                             (unsigned long long)g->start, strerror(-rc));
    const char *why = jr_super_why(g, js);
    if (why != NULL)
        return ubj_set_error(-EUCLEAN, "journal superblock (block %llu): %s",
                             (unsigned long long)g->start, why);
    return 0;
}

/* ubj_jsuper_write -- seal and write the journal superblock at class crit. */
int ubj_jsuper_write(const struct ubj_jgeom *g, struct ubj_jsuper *js,
                     enum ubj_req_crit crit)
{
    ubj_jblock_seal(g->seed, js);
    return ubj_bdev_write_crit(g->dev, g->start, 1, js, crit);
}

/* ---- SCAN --------------------------------------------------------------------- */

struct jr_tag {
    uint64_t home, pos, seq;
    uint32_t flags;
    uint32_t bad;            /* its checksum did not match */
};

struct jr_rev {
    uint64_t blk, seq;
};

struct jr_scan {
    const struct ubj_jgeom *g;
    unsigned flags;
    bool async;
    struct jr_tag *tags;
    size_t ntags, captags;
    struct jr_rev *revs;
    size_t nrevs, caprevs;
    uint8_t *blk, *data;     /* one block each */
    uint64_t loglen, walked;
    struct ubj_jscan *out;
};

/* jr_next -- the log position after pos. */
static inline uint64_t jr_next(const struct ubj_jgeom *g, uint64_t pos)
{
    return pos + 1 >= g->blocks ? UBJ_JOURNAL_FIRST : pos + 1;
}

/* jr_corrupt -- a corrupt but checksummed log: -EUCLEAN with the message,
 * or with FORCE the problem noted and 0 (the log ends here). */
static int jr_corrupt(struct jr_scan *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int jr_corrupt(struct jr_scan *c, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!(c->flags & UBJ_JREC_FORCE))
        return ubj_set_error(-EUCLEAN, "journal: %s", msg);
    if (c->out->problem[0] == '\0')
        snprintf(c->out->problem, sizeof c->out->problem, "%s", msg);
    return 0;
}

/* jr_read -- read relative log block pos into buf. */
static int jr_read(struct jr_scan *c, uint64_t pos, void *buf)
{
    int rc = ubj_bdev_read(c->g->dev, c->g->start + pos, 1, buf);
    if (rc < 0)
        return ubj_set_error(rc, "journal: reading log block %llu failed: %s",
                             (unsigned long long)pos, strerror(-rc));
    c->walked++;
    return 0;
}

/* jr_push_tag -- remember one journaled copy.  0 or -ENOMEM. */
static int jr_push_tag(struct jr_scan *c, const struct jr_tag *t)
{
    if (c->ntags == c->captags) {
        size_t cap = c->captags ? c->captags * 2 : 256;
        struct jr_tag *n = realloc(c->tags, cap * sizeof *n);
        if (n == NULL)
            return ubj_set_error(-ENOMEM, "journal: out of memory for the scan");
        c->tags = n;
        c->captags = cap;
    }
    c->tags[c->ntags++] = *t;
    return 0;
}

/* jr_push_rev -- remember one revoke record.  0 or -ENOMEM. */
static int jr_push_rev(struct jr_scan *c, uint64_t blk, uint64_t seq)
{
    if (c->nrevs == c->caprevs) {
        size_t cap = c->caprevs ? c->caprevs * 2 : 256;
        struct jr_rev *n = realloc(c->revs, cap * sizeof *n);
        if (n == NULL)
            return ubj_set_error(-ENOMEM, "journal: out of memory for the scan");
        c->revs = n;
        c->caprevs = cap;
    }
    c->revs[c->nrevs++] = (struct jr_rev){ .blk = blk, .seq = seq };
    return 0;
}

/* jr_home_ok -- a tag may name this block: inside the file system, not in
 * the journal area. */
static bool jr_home_ok(const struct ubj_jgeom *g, uint64_t home)
{
    return home < g->fs_nblocks &&
           (home < g->start || home >= g->start + g->blocks);
}

/* jr_desc_check -- the tags of a valid descriptor are well formed.  NULL
 * or what is wrong. */
static const char *jr_desc_check(const struct ubj_jgeom *g, const uint8_t *blk)
{
    const struct ubj_jhdr *h = (const void *)blk;
    if (h->count == 0 || h->count > UBJ_JTAGS_PER_BLOCK)
        return "descriptor tag count out of range";
    for (uint32_t k = 0; k < h->count; k++) {
        struct ubj_jtag t;
        memcpy(&t, blk + sizeof *h + (size_t)k * sizeof t, sizeof t);
        if (t.flags & ~UBJ_JTAG_KNOWN)
            return "unknown tag flags";
        if (((t.flags & UBJ_JTAG_LAST) != 0) != (k + 1 == h->count))
            return "misplaced last-tag flag";
        if (!jr_home_ok(g, t.blocknr))
            return "tag names a block outside the file system or inside the journal";
    }
    return NULL;
}

/* Running state of one transaction's scan. */
struct jr_tx {
    uint64_t seq;
    uint32_t crc, nblocks;
    bool bad;
};

/* jr_descriptor -- a descriptor at *pos (in c->blk) and its data blocks.
 * 1 scanned, 0 the log ends, or an error. */
static int jr_descriptor(struct jr_scan *c, uint64_t *pos, struct jr_tx *tx)
{
    const char *why = jr_desc_check(c->g, c->blk);
    if (why != NULL)
        return jr_corrupt(c, "transaction %llu: log block %llu: %s",
                          (unsigned long long)tx->seq, (unsigned long long)*pos, why);
    const struct ubj_jhdr *h = (const void *)c->blk;
    tx->crc = ubj_crc32c(tx->crc, c->blk, JR_BS);
    tx->nblocks++;
    *pos = jr_next(c->g, *pos);
    for (uint32_t k = 0; k < h->count; k++) {
        struct ubj_jtag t;
        memcpy(&t, c->blk + sizeof *h + (size_t)k * sizeof t, sizeof t);
        if (c->walked >= c->loglen)
            return 0;
        int rc = jr_read(c, *pos, c->data);
        if (rc < 0)
            return rc;
        struct jr_tag jt = { .home = t.blocknr, .pos = *pos, .seq = tx->seq,
                             .flags = t.flags };
        jt.bad = ubj_jtag_crc(c->g->seed, tx->seq, c->data) != t.crc;
        tx->bad |= jt.bad != 0;
        tx->crc = ubj_crc32c(tx->crc, c->data, JR_BS);
        tx->nblocks++;
        if ((rc = jr_push_tag(c, &jt)) < 0)
            return rc;
        *pos = jr_next(c->g, *pos);
    }
    return 1;
}

/* jr_revoke -- a revoke block at *pos (in c->blk).  1, 0 or an error. */
static int jr_revoke(struct jr_scan *c, uint64_t *pos, struct jr_tx *tx)
{
    const struct ubj_jhdr *h = (const void *)c->blk;
    if (h->count > UBJ_JREVOKES_PER_BLOCK)
        return jr_corrupt(c, "transaction %llu: log block %llu: revoke count %u "
                          "out of range", (unsigned long long)tx->seq,
                          (unsigned long long)*pos, h->count);
    for (uint32_t k = 0; k < h->count; k++) {
        uint64_t b;
        memcpy(&b, c->blk + sizeof *h + (size_t)k * 8, 8);
        int rc = jr_push_rev(c, b, tx->seq);
        if (rc < 0)
            return rc;
    }
    tx->crc = ubj_crc32c(tx->crc, c->blk, JR_BS);
    tx->nblocks++;
    *pos = jr_next(c->g, *pos);
    return 1;
}

/* jr_commit -- the commit block at *pos ends transaction tx: 1 committed,
 * 0 the log ends before it, or an error. */
static int jr_commit(struct jr_scan *c, uint64_t *pos, struct jr_tx *tx)
{
    const struct ubj_jcommit *cm = (const void *)c->blk;
    bool match = cm->nblocks == tx->nblocks && cm->txn_crc == tx->crc && !tx->bad;
    if (!match) {
        if (c->async)
            return 0;   /* torn: its blocks were not all written */
        int rc = jr_corrupt(c, "transaction %llu: checksum mismatch behind a "
                            "valid commit block (log block %llu): log blocks "
                            "damaged or not flushed before the commit",
                            (unsigned long long)tx->seq, (unsigned long long)*pos);
        if (rc < 0)
            return rc;   /* FORCE: the good copies are replayed, bad ones skipped */
    }
    *pos = jr_next(c->g, *pos);
    return 1;
}

/* jr_scan_tx -- one transaction from *pos: 1 committed (pos after it),
 * 0 the log ends (pos unchanged), or an error. */
static int jr_scan_tx(struct jr_scan *c, uint64_t *pos, uint64_t seq)
{
    size_t tag0 = c->ntags, rev0 = c->nrevs;
    struct jr_tx tx = { .seq = seq, .crc = c->g->seed };
    uint64_t p = *pos;
    while (c->walked < c->loglen) {
        int rc = jr_read(c, p, c->blk);
        if (rc < 0)
            return rc;
        const struct ubj_jhdr *h = (const void *)c->blk;
        if (!ubj_jblock_ok(c->g->seed, c->blk) || h->sequence != seq)
            break;                       /* not written: the log ends */
        if (h->blocktype == UBJ_JB_DESCRIPTOR)
            rc = jr_descriptor(c, &p, &tx);
        else if (h->blocktype == UBJ_JB_REVOKE)
            rc = jr_revoke(c, &p, &tx);
        else if (h->blocktype == UBJ_JB_COMMIT)
            rc = jr_commit(c, &p, &tx);
        if (rc < 0)
            return rc;
        if (rc == 1 && h->blocktype == UBJ_JB_COMMIT) {
            *pos = p;
            return 1;
        }
        if (rc == 0)
            break;
    }
    c->ntags = tag0;   /* not committed: forget what it said */
    c->nrevs = rev0;
    return 0;
}

/* jr_lookahead -- the log ended at pos, expecting transaction seq: with
 * sync commit no valid commit block of seq (or a control block of a later
 * one) can follow, since a commit block is written only after its
 * transaction's blocks are durable; one that does means damaged log blocks
 * (issue 22: a corrupt descriptor silently dropped the committed
 * transactions behind it).  Blocks of older laps carry lower sequences
 * and are passed over; the scan covers at most a transaction's worth of
 * blocks (max_txn and its descriptors).  0, or the error of jr_corrupt
 * (FORCE: noted, 0). */
static int jr_lookahead(struct jr_scan *c, uint64_t pos, uint64_t seq, uint64_t max_txn)
{
    if (c->async || c->walked >= c->loglen)
        return 0;
    uint64_t limit = max_txn + max_txn / 254 + 3;
    if (limit > c->loglen)
        limit = c->loglen;
    for (uint64_t i = 0, p = pos; i < limit; i++, p = jr_next(c->g, p)) {
        int rc = ubj_bdev_read(c->g->dev, c->g->start + p, 1, c->blk);
        if (rc < 0)
            return 0;   /* the scan proper has read what it needed */
        const struct ubj_jhdr *h = (const void *)c->blk;
        if (!ubj_jblock_ok(c->g->seed, c->blk))
            continue;
        if (h->sequence < seq)
            continue;   /* an older lap (or the torn block itself) */
        if (h->sequence > seq || h->blocktype == UBJ_JB_COMMIT)
            return jr_corrupt(c, "the log ends at log block %llu (transaction %llu), but a "
                              "valid %s block of transaction %llu follows at %llu: log "
                              "blocks damaged", (unsigned long long)pos,
                              (unsigned long long)seq,
                              h->blocktype == UBJ_JB_COMMIT ? "commit" : "control",
                              (unsigned long long)h->sequence, (unsigned long long)p);
    }
    return 0;
}

/* jr_rep_cmp -- qsort order of the plan: by home block. */
static int jr_rep_cmp(const void *a, const void *b)
{
    const struct ubj_jrep *x = a, *y = b;
    return (x->home > y->home) - (x->home < y->home);
}

/* jr_plan -- REVOKE and the replay plan from the committed tags. */
static int jr_plan(struct jr_scan *c)
{
    struct ubj_jmap revoked = { 0 }, where = { 0 };
    struct ubj_jscan *s = c->out;
    int rc = 0;
    for (size_t i = 0; i < c->nrevs && rc == 0; i++) {
        uint64_t seq;
        if (!ubj_jmap_get(&revoked, c->revs[i].blk, &seq) || seq < c->revs[i].seq)
            rc = ubj_jmap_put(&revoked, c->revs[i].blk, c->revs[i].seq);
    }
    s->rep = c->ntags ? malloc(c->ntags * sizeof *s->rep) : NULL;
    if (c->ntags && s->rep == NULL)
        rc = -ENOMEM;
    for (size_t i = 0; i < c->ntags && rc == 0; i++) {
        const struct jr_tag *t = &c->tags[i];
        uint64_t rseq, at;
        if (t->bad) {
            s->bad++;
            continue;
        }
        if (ubj_jmap_get(&revoked, t->home, &rseq) && rseq >= t->seq) {
            s->revoked++;
            continue;
        }
        struct ubj_jrep r = { .home = t->home, .pos = t->pos, .flags = t->flags };
        if (ubj_jmap_get(&where, t->home, &at)) {
            s->rep[at] = r;
        } else {
            rc = ubj_jmap_put(&where, t->home, s->nrep);
            if (rc == 0)
                s->rep[s->nrep++] = r;
        }
    }
    ubj_jmap_free(&revoked);
    ubj_jmap_free(&where);
    if (rc < 0)
        return ubj_set_error(-ENOMEM, "journal: out of memory for the replay plan");
    if (s->nrep > 1)
        qsort(s->rep, s->nrep, sizeof *s->rep, jr_rep_cmp);
    return 0;
}

/* ubj_journal_scan -- SCAN and REVOKE: the replay plan. */
int ubj_journal_scan(const struct ubj_jgeom *g, const struct ubj_jsuper *js,
                     unsigned flags, struct ubj_jscan *out)
{
    memset(out, 0, sizeof *out);
    out->first_seq = out->end_seq = js->sequence;
    out->end_pos = js->start;
    if (js->start == 0)
        return 0;
    struct jr_scan c = {
        .g = g, .flags = flags, .out = out,
        .async = (js->feat_compat & UBJ_JFEAT_COMPAT_ASYNC_COMMIT) != 0,
        .loglen = g->blocks - UBJ_JOURNAL_FIRST,
        .blk = aligned_alloc(JR_BS, JR_BS), .data = aligned_alloc(JR_BS, JR_BS),
    };
    int rc = c.blk && c.data ? 0 : ubj_set_error(-ENOMEM, "journal: out of memory");
    uint64_t pos = js->start, seq = js->sequence;
    while (rc == 0) {
        rc = jr_scan_tx(&c, &pos, seq);
        if (rc == 1) {
            seq++;
            out->transactions++;
            rc = 0;
        } else {
            break;
        }
    }
    if (rc == 0)
        rc = jr_lookahead(&c, pos, seq, js->max_txn);
    out->end_seq = seq;
    out->end_pos = pos;
    out->tags = c.ntags;
    if (rc == 0)
        rc = jr_plan(&c);
    free(c.tags);
    free(c.revs);
    free(c.blk);
    free(c.data);
    if (rc < 0)
        ubj_jscan_free(out);
    return rc;
}

/* ubj_jscan_free -- free a scan's plan. */
void ubj_jscan_free(struct ubj_jscan *s)
{
    free(s->rep);
    s->rep = NULL;
    s->nrep = 0;
}

/* ---- REPLAY -------------------------------------------------------------------- */

/* ubj_journal_read_copy -- read and unescape one logged copy. */
int ubj_journal_read_copy(const struct ubj_jgeom *g, const struct ubj_jrep *r,
                          void *buf)
{
    int rc = ubj_bdev_read(g->dev, g->start + r->pos, 1, buf);
    if (rc < 0)
        return ubj_set_error(rc, "journal: reading log block %llu failed: %s",
                             (unsigned long long)r->pos, strerror(-rc));
    if (r->flags & UBJ_JTAG_ESCAPED) {
        uint32_t magic = UBJ_JMAGIC;
        memcpy(buf, &magic, sizeof magic);
    }
    return 0;
}

/* ubj_journal_replay -- write the plan home in runs, then flush. */
int ubj_journal_replay(const struct ubj_jgeom *g, const struct ubj_jscan *s)
{
    uint8_t *buf = aligned_alloc(JR_BS, (size_t)JR_BATCH * JR_BS);
    if (buf == NULL)
        return ubj_set_error(-ENOMEM, "journal: out of memory for the replay");
    int rc = 0;
    for (size_t i = 0; i < s->nrep && rc == 0;) {
        uint32_t n = 0;
        while (i + n < s->nrep && n < JR_BATCH &&
               s->rep[i + n].home == s->rep[i].home + n && rc == 0) {
            rc = ubj_journal_read_copy(g, &s->rep[i + n], buf + (size_t)n * JR_BS);
            n++;
        }
        if (rc == 0)
            rc = ubj_bdev_write(g->dev, s->rep[i].home, n, buf);
        i += n;
    }
    if (rc == 0)
        rc = ubj_bdev_flush(g->dev);
    free(buf);
    if (rc < 0)
        return ubj_set_error(rc, "journal: replay failed: %s", strerror(-rc));
    return 0;
}

/* jr_now_ns -- monotonic nanoseconds. */
static uint64_t jr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* jr_restart -- the log is empty again: start 0, the next sequence;
 * written and flushed. */
static int jr_restart(const struct ubj_jgeom *g, struct ubj_jsuper *js,
                      uint64_t next_seq)
{
    js->start = 0;
    js->sequence = next_seq;
    int rc = ubj_jsuper_write(g, js, UBJ_CRIT_CRITICAL);
    if (rc == 0)
        rc = ubj_bdev_flush(g->dev);
    if (rc < 0)
        return ubj_set_error(rc, "journal: cannot reset the journal superblock: %s",
                             strerror(-rc));
    return 0;
}

/* ubj_journal_recover -- SCAN, REVOKE, REPLAY; restart the log. */
int ubj_journal_recover(const struct ubj_jgeom *g, unsigned flags,
                        struct ubj_jrec_result *res)
{
    struct ubj_jrec_result r = { 0 };
    uint64_t t0 = jr_now_ns();
    struct ubj_jsuper *js = aligned_alloc(JR_BS, JR_BS);
    if (js == NULL)
        return ubj_set_error(-ENOMEM, "journal: out of memory");
    int rc = ubj_jsuper_read(g, js);
    r.next_seq = js->sequence;
    if (rc == 0 && js->start != 0) {
        struct ubj_jscan s;
        rc = ubj_journal_scan(g, js, flags, &s);
        if (rc == 0) {
            r.transactions = s.transactions;
            r.blocks = s.nrep;
            r.bad = s.bad;
            r.next_seq = s.end_seq + 1;   /* never reuse the torn one's id */
            memcpy(r.problem, s.problem, sizeof r.problem);
            rc = ubj_journal_replay(g, &s);
            ubj_jscan_free(&s);
        }
        if (rc == 0)
            rc = jr_restart(g, js, r.next_seq);
        if (rc == 0)
            rc = 1;
    }
    free(js);
    r.ns = jr_now_ns() - t0;
    if (res != NULL)
        *res = r;
    return rc;
}

/* ---- fsck ------------------------------------------------------------------------ */

/* jr_fsck_reset -- repair a corrupt journal superblock: zero the log and
 * write an empty journal (flushed). */
static int jr_fsck_reset(const struct ubj_jgeom *g, struct ubj_jsuper *js)
{
    int rc = jr_zero(g, UBJ_JOURNAL_FIRST, g->blocks);
    jr_fresh_super(g, 0, 1, js);
    if (rc == 0)
        rc = ubj_jsuper_write(g, js, UBJ_CRIT_CRITICAL);
    if (rc == 0)
        rc = ubj_bdev_flush(g->dev);
    return rc;
}

/* jr_fsck_replay -- replay the log for fsck (onto dev or an overlay). */
static int jr_fsck_replay(struct ubj_jgeom *g, bool repair, struct ubj_mode_view *out)
{
    if (!repair) {
        int rc = ubj_bdev_cow_create(g->dev, UBJ_COW_BORROW, &out->view);
        if (rc < 0)
            return rc;
        g->dev = out->view;
    }
    struct ubj_jrec_result r;
    int rc = ubj_journal_recover(g, UBJ_JREC_FORCE, &r);
    if (rc < 0) {
        snprintf(out->problem, sizeof out->problem, "journal: recovery failed: %s",
                 ubj_errormsg());
        return 1;
    }
    snprintf(out->note, sizeof out->note, "journal: replayed %llu committed "
             "transaction%s (%llu blocks) the last session left%s",
             (unsigned long long)r.transactions, r.transactions == 1 ? "" : "s",
             (unsigned long long)r.blocks,
             repair ? "" : " (in memory only: the image is not changed)");
    if (r.problem[0]) {
        snprintf(out->problem, sizeof out->problem, "journal: %llu damaged block "
                 "cop%s skipped: %.180s", (unsigned long long)r.bad,
                 r.bad == 1 ? "y" : "ies", r.problem);
        out->fixed = repair;
    }
    return 1;
}

/* ubj_journal_fsck -- replay (or reset) the journal before fsck's passes. */
int ubj_journal_fsck(const struct ubj_mode_image *img, bool repair,
                     struct ubj_mode_view *out)
{
    memset(out, 0, sizeof *out);
    struct ubj_jsuper *js = aligned_alloc(JR_BS, JR_BS);
    struct ubj_jgeom g;
    int ret = js ? 0 : -ENOMEM;
    if (ret == 0 && img->dev != NULL && ubj_journal_geom(img, &g) == 0) {
        if (ubj_jsuper_read(&g, js) < 0) {
            snprintf(out->problem, sizeof out->problem, "%s: %s", ubj_errormsg(),
                     repair ? "reset the journal (its log is lost)"
                            : "the journal would be reset (its log lost)");
            out->fixed = repair && jr_fsck_reset(&g, js) == 0;
            ret = 1;
        } else if (js->start != 0) {
            ret = jr_fsck_replay(&g, repair, out);
        }
    }
    free(js);
    return ret;
}

/* ---- other modes --------------------------------------------------------------- */

/* ubj_journal_mount_other -- replay a journaled session's log for a mode
 * that keeps no journal itself. */
int ubj_journal_mount_other(const struct ubj_mode_image *img)
{
    struct ubj_jgeom g;
    if (img->area_blocks == 0)
        return 0;
    int rc = ubj_journal_geom(img, &g);
    struct ubj_jsuper *js = aligned_alloc(JR_BS, JR_BS);
    if (rc == 0 && js == NULL)
        rc = ubj_set_error(-ENOMEM, "journal: out of memory");
    if (rc == 0)
        rc = ubj_jsuper_read(&g, js);
    if (rc == 0 && js->start != 0 && img->rdonly)
        rc = ubj_set_error(-EROFS, "the journal holds a log to replay: mount "
                           "read-write, or read-only in a journal mode");
    if (rc == 0 && js->start != 0)
        rc = ubj_journal_recover(&g, 0, NULL);
    free(js);
    return rc < 0 ? rc : 0;
}
