/*
 * fz_mutate.c -- the structure-aware mutator: finds every structure of the
 * field table in a case's pages (superblock, bitmaps, inodes and their
 * i_data, extent and directory nodes and records, xattr blocks and
 * records, journal control blocks and tags, the NVM region's header and
 * descriptors, and the metadata copies its buffers hold), changes one
 * field and recomputes the checksums with the library's own functions
 * (fs_block_seal, ubj_jblock_seal, ubj_jtag_crc, nvm_header_crc) so that
 * the change reaches the structure checks behind them.
 */
#include "fz.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/format.h"
#include "fs/fs.h"
#include "nvm/nvm_int.h"
#include "txn/journal.h"
#include "util/util.h"

const char *const fz_how_names[FZ_NHOW] = {
    "zeros", "ones", "random", "firstbit", "lastbit", "plus1", "minus1",
};

static uint16_t g16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t g32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t g64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint8_t *page_of(const struct fz_case *c, int region, uint32_t page)
{
    return (region ? c->reg : c->img) + (size_t)page * FZ_PAGE;
}

static uint32_t seed_of(const struct fz_case *c)
{
    return ubj_crc32c(~0u, c->img + 40, 16);
}

struct found {
    struct fz_inst *v;
    size_t n, max;
};

static void add(struct found *f, const char *st, const char *kind, int region,
                uint32_t page, uint32_t base, uint32_t var, uint32_t var2)
{
    if (f->n < f->max)
        f->v[f->n] = (struct fz_inst){ st, kind, region, page, base, var, var2 };
    f->n++;
}

/* ext_node -- an extent header at `at` and its entries at `ent`. */
static void ext_node(struct found *f, const uint8_t *p, int region, uint32_t page,
                     uint32_t at, uint32_t ent, uint32_t cap)
{
    add(f, "ext_hdr", NULL, region, page, at, 0, 0);
    uint32_t n = g16(p + at + 2);
    const char *kind = g16(p + at + 6) == 0 ? "leaf" : "index";
    for (uint32_t k = 0; k < n && k < cap; k++)
        add(f, "ext_entry", kind, region, page, ent + 16 * k, 0, 0);
}

/* used16 -- a node's `used` bytes of records, at most what fits after 32. */
static uint32_t used16(const uint8_t *p)
{
    uint32_t u = g16(p);
    return u > FZ_PAGE - 32 ? FZ_PAGE - 32 : u;
}

/* meta_page -- the structures of a metadata block (image or copy). */
static void meta_page(struct found *f, const uint8_t *p, int region, uint32_t page)
{
    uint32_t magic = g32(p);
    switch (magic) {
    case UBJ_MAGIC_SUPER:
        add(f, "blkhdr", NULL, region, page, 0, 0, 0);
        add(f, "super", NULL, region, page, 0, 0, 0);
        return;
    case UBJ_MAGIC_BBITMAP:
    case UBJ_MAGIC_IBITMAP:
        add(f, "blkhdr", NULL, region, page, 0, 0, 0);
        add(f, "bitmap", NULL, region, page, 0, 0, 0);
        return;
    case UBJ_MAGIC_INODES:
        add(f, "blkhdr", NULL, region, page, 0, 0, 0);
        for (uint32_t s = 1; s <= UBJ_INODES_PER_BLOCK; s++) {
            uint32_t b = s * UBJ_INODE_SIZE;
            uint32_t mode = g32(p + b);
            if (mode == 0)
                continue;
            add(f, "inode", NULL, region, page, b, 0, 0);
            if (S_ISDIR(mode))
                add(f, "dir_root", NULL, region, page, b + 128, 0, 0);
            else if (g32(p + b + 80) & UBJ_IFL_EXTTREE)
                ext_node(f, p, region, page, b + 128, b + 144, UBJ_EXT_ROOT_MAX);
        }
        return;
    case UBJ_MAGIC_EXTENT:
        add(f, "blkhdr", NULL, region, page, 0, 0, 0);
        ext_node(f, p, region, page, 16, 24, UBJ_EXT_NODE_MAX);
        return;
    case UBJ_MAGIC_DIR: {
        add(f, "blkhdr", NULL, region, page, 0, 0, 0);
        add(f, "dir_node", NULL, region, page, 0, 0, 0);
        uint32_t nrec = g16(p + 16), used = used16(p + 20);
        if (g16(p + 18) != 0) {
            for (uint32_t k = 0; k < nrec && 16 * k + 16 <= used; k++)
                add(f, "dir_rec", "internal", region, page, 32 + 16 * k, 0, 0);
            return;
        }
        for (uint32_t off = 32, k = 0; k < nrec && off + 18 <= 32 + used; k++) {
            uint32_t nl = p[off + 17];
            if (off + 18 + nl > FZ_PAGE)
                break;
            add(f, "dir_rec", "leaf", region, page, off, nl, 0);
            off += (18 + nl + 7) / 8 * 8;
        }
        return;
    }
    case UBJ_MAGIC_XATTR: {
        add(f, "blkhdr", NULL, region, page, 0, 0, 0);
        add(f, "xattr_blk", NULL, region, page, 0, 0, 0);
        uint32_t cnt = g16(p + 24), used = used16(p + 26);
        for (uint32_t off = 32, k = 0; k < cnt && off + 4 <= 32 + used; k++) {
            uint32_t nl = p[off + 1], vl = g16(p + off + 2);
            if (off + 4 + nl + vl > FZ_PAGE)
                break;
            add(f, "xattr_rec", NULL, region, page, off, nl, vl);
            off += (4 + nl + vl + 3) & ~3u;
        }
        return;
    }
    case UBJ_JMAGIC: {
        add(f, "jhdr", NULL, region, page, 0, 0, 0);
        uint32_t type = g32(p + 4), cnt = g32(p + 20);
        if (type == UBJ_JB_SUPER)
            add(f, "jsuper", NULL, region, page, 0, 0, 0);
        else if (type == UBJ_JB_COMMIT)
            add(f, "jcommit", NULL, region, page, 0, 0, 0);
        else if (type == UBJ_JB_DESCRIPTOR)
            for (uint32_t k = 0; k < cnt && k < 254; k++)
                add(f, "jtag", NULL, region, page, 32 + 16 * k, 0, 0);
        return;
    }
    default:
        return;
    }
}

size_t fz_instances(const struct fz_case *c, struct fz_inst *out, size_t max)
{
    struct found f = { out, 0, max };
    for (uint32_t b = 0; b < c->nblocks; b++)
        meta_page(&f, page_of(c, 0, b), 0, b);
    if (c->rpages == 0)
        return f.n;
    const uint8_t *h = c->reg;
    if (g64(h) == UBJ_NVM_MAGIC)
        add(&f, "nvm_header", NULL, 1, 0, 0, 0, 0);
    uint64_t doff = g64(h + 24), dend = g64(h + 32), nbufs = g32(h + 16);
    if (doff % FZ_PAGE || dend % FZ_PAGE || doff == 0 || dend <= doff ||
        dend / FZ_PAGE > c->rpages) {   /* a broken header: guess page 1, if any */
        doff = FZ_PAGE;
        dend = (c->rpages >= 2 ? 2u : c->rpages) * (uint64_t)FZ_PAGE;
        nbufs = FZ_PAGE / 48;
    }
    for (uint64_t k = 0; k < nbufs && doff + 48 * (k + 1) <= dend; k++) {
        const uint8_t *d = c->reg + doff + 48 * k;
        if (k == 0 || g64(d) != 0 || g64(d + 32) != 0)
            add(&f, "bufdesc", NULL, 1, (uint32_t)((doff + 48 * k) / FZ_PAGE),
                (uint32_t)((doff + 48 * k) % FZ_PAGE), 0, 0);
    }
    for (uint32_t p = (uint32_t)(dend / FZ_PAGE); p < c->rpages; p++)
        meta_page(&f, page_of(c, 1, p), 1, p);
    return f.n;
}

int fz_field_span(const struct fz_inst *i, const struct fz_field *f, uint32_t *off,
                  uint32_t *len)
{
    if (strcmp(i->st, f->st) != 0)
        return -1;
    const char *dot = strchr(f->name, '.');
    if (dot != NULL && (i->kind == NULL || strncmp(f->name, i->kind, (size_t)(dot - f->name)) != 0 ||
                        i->kind[dot - f->name] != '\0'))
        return -1;
    uint32_t o, n;
    if (f->o >= 0 && f->n >= 0) {
        o = (uint32_t)f->o;
        n = (uint32_t)f->n;
    } else if (strcmp(f->st, "dir_rec") == 0) {          /* leaf.name */
        o = 18;
        n = i->var;
    } else if (strcmp(f->name, "name") == 0) {           /* xattr_rec */
        o = 4;
        n = i->var;
    } else {                                             /* xattr value */
        o = 4 + i->var;
        n = i->var2;
    }
    if (n == 0 || i->base + o + n > FZ_PAGE)
        return -1;
    *off = i->base + o;
    *len = n;
    return 0;
}

/* fix_tags -- a page of the journal area changed: recompute the tag crc of
 * every copy the descriptors name (in area order, without wrapping) and
 * reseal the descriptors. */
static void fix_tags(struct fz_case *c, uint32_t seed)
{
    uint64_t js = g64(c->img + 128), jb = g64(c->img + 136);
    if (js == 0 || js >= c->nblocks || jb > c->nblocks - js)
        return;
    for (uint64_t r = 1; r < jb; r++) {
        uint8_t *d = page_of(c, 0, (uint32_t)(js + r));
        if (g32(d) != UBJ_JMAGIC || g32(d + 4) != UBJ_JB_DESCRIPTOR)
            continue;
        uint32_t cnt = g32(d + 20);
        uint64_t seq = g64(d + 8);
        for (uint32_t k = 0; k < cnt && k < 254 && r + 1 + k < jb; k++) {
            uint32_t crc = ubj_jtag_crc(seed, seq, page_of(c, 0, (uint32_t)(js + r + 1 + k)));
            memcpy(d + 32 + 16 * k + 12, &crc, 4);
        }
        ubj_jblock_seal(seed, d);
    }
}

void fz_reseal(struct fz_case *c, int region, uint32_t page)
{
    uint8_t *p = page_of(c, region, page);
    uint32_t seed = seed_of(c), magic = g32(p);
    if (region && page == 0) {
        if (g64(p) == UBJ_NVM_MAGIC) {
            uint32_t crc = nvm_header_crc((const struct nvm_header *)p);
            memcpy(p + 80, &crc, 4);
        }
        return;
    }
    switch (magic) {
    case UBJ_MAGIC_SUPER: case UBJ_MAGIC_BBITMAP: case UBJ_MAGIC_IBITMAP:
    case UBJ_MAGIC_INODES: case UBJ_MAGIC_EXTENT: case UBJ_MAGIC_DIR:
    case UBJ_MAGIC_XATTR:
        fs_block_seal(seed, p, magic, g64(p + 8));
        break;
    case UBJ_JMAGIC:
        ubj_jblock_seal(seed, p);
        break;
    default:
        break;
    }
    uint64_t js = g64(c->img + 128), jb = g64(c->img + 136);
    if (!region && js != 0 && page > js && page < js + jb && g32(p) != UBJ_JMAGIC)
        fix_tags(c, seed);
}

/* own_crc -- f is the checksum of the block it lies in (not recomputed
 * after its own change); a tag's or a transaction's checksum is inside a
 * control block that is resealed. */
static int own_crc(const struct fz_field *f)
{
    return strcmp(f->cls, "checksum") == 0 &&
           (strcmp(f->st, "blkhdr") == 0 || strcmp(f->st, "jhdr") == 0 ||
            strcmp(f->st, "nvm_header") == 0);
}

void fz_corrupt(struct fz_case *c, const struct fz_inst *i, const struct fz_field *f,
                enum fz_how how, uint64_t rnd)
{
    uint32_t off, len;
    if (fz_field_span(i, f, &off, &len) < 0)
        return;
    uint8_t *p = page_of(c, i->region, i->page) + off;
    switch (how) {
    case FZ_ZEROS: memset(p, 0, len); break;
    case FZ_ONES: memset(p, 0xff, len); break;
    case FZ_RANDOM: {
        uint64_t s = rnd;
        int same = 1;
        for (uint32_t k = 0; k < len; k++) {
            uint8_t b = (uint8_t)rng_next(&s);
            same &= p[k] == b;
            p[k] = b;
        }
        if (same)
            p[0] ^= 0x5a;
        break;
    }
    case FZ_FIRSTBIT: p[0] ^= 0x01; break;
    case FZ_LASTBIT: p[len - 1] ^= 0x80; break;
    case FZ_PLUS1:
    case FZ_MINUS1: {
        uint64_t v = 0;
        uint32_t n = len < 8 ? len : 8;
        memcpy(&v, p, n);
        v += how == FZ_PLUS1 ? 1 : (uint64_t)-1;
        memcpy(p, &v, n);
        break;
    }
    default:
        break;
    }
    if (!own_crc(f))
        fz_reseal(c, i->region, i->page);
}

/* interesting -- set a small integer field to a value near a boundary. */
static void interesting(struct fz_case *c, const struct fz_inst *i, const struct fz_field *f,
                        uint64_t r)
{
    uint32_t off, len;
    if (fz_field_span(i, f, &off, &len) < 0 || len > 8)
        return;
    uint64_t nb = c->nblocks, ds = g64(c->img + 144), ni = g64(c->img + 32);
    const uint64_t vals[] = { 0, 1, 2, 3, 7, 15, 16, 254, 255, 256, 4064, 4096, 65535,
                              nb - 1, nb, nb + 1, ds - 1, ds, ni - 1, ni, 0x7fffffffull,
                              0x80000000ull, 0xffffffffull, ~0ull };
    uint64_t v = vals[r % (sizeof vals / sizeof vals[0])];
    memcpy(page_of(c, i->region, i->page) + off, &v, len);
    if (!own_crc(f))
        fz_reseal(c, i->region, i->page);
}

/* raw -- change a few bytes of one non-zero page. */
static void raw(struct fz_case *c, uint64_t *s)
{
    uint32_t total = c->nblocks + c->rpages;
    for (int tries = 0; tries < 32; tries++) {
        uint32_t k = (uint32_t)(rng_next(s) % total);
        int region = k >= c->nblocks;
        uint32_t page = region ? k - c->nblocks : k;
        uint8_t *p = page_of(c, region, page);
        int nz = 0;
        for (uint32_t j = 0; j < FZ_PAGE && !nz; j += 8)
            nz = g64(p + j) != 0;
        if (!nz && tries < 31)
            continue;
        int n = 1 + (int)(rng_next(s) % 8);
        for (int j = 0; j < n; j++) {
            uint32_t o = (uint32_t)(rng_next(s) % (rng_next(s) & 1 ? 512 : FZ_PAGE));
            p[o] = (uint8_t)rng_next(s);
        }
        if (rng_next(s) & 1)
            fz_reseal(c, region, page);
        return;
    }
}

size_t fz_mutate(uint8_t *data, size_t size, size_t max, unsigned seed)
{
    struct fz_case c;
    if (fz_decode(data, size, &c) < 0)
        return size;
    uint64_t s = seed;
    size_t ntab;
    const struct fz_field *tab = fz_table(&ntab);
    static struct fz_inst inst[8192];
    int rounds = rng_next(&s) % 8 == 0 ? 2 + (int)(rng_next(&s) % 3) : 1;
    for (int r = 0; r < rounds; r++) {
        uint64_t what = rng_next(&s) % 100;
        size_t ni = what < 80 ? fz_instances(&c, inst, sizeof inst / sizeof inst[0]) : 0;
        if (ni > sizeof inst / sizeof inst[0])
            ni = sizeof inst / sizeof inst[0];
        if (what < 5) {
            c.ops = (uint32_t)rng_next(&s);
        } else if (ni == 0) {
            raw(&c, &s);
        } else {
            const struct fz_inst *i = &inst[rng_next(&s) % ni];
            const struct fz_field *cand[64];
            size_t nc = 0;
            uint32_t o, l;
            for (size_t k = 0; k < ntab && nc < 64; k++)
                if (fz_field_span(i, &tab[k], &o, &l) == 0)
                    cand[nc++] = &tab[k];
            if (nc == 0)
                continue;
            const struct fz_field *f = cand[rng_next(&s) % nc];
            if (rng_next(&s) % 3 == 0)
                interesting(&c, i, f, rng_next(&s));
            else
                fz_corrupt(&c, i, f, (enum fz_how)(rng_next(&s) % FZ_NHOW), rng_next(&s));
        }
    }
    uint8_t *tmp = malloc(max);
    size_t n = tmp ? fz_encode(&c, tmp, max) : 0;
    if (n > 0)
        memcpy(data, tmp, n);
    free(tmp);
    fz_case_free(&c);
    return n > 0 ? n : size;
}
