/*
 * model_nand.c -- raw NAND flash behind a page-mapped flash translation
 * layer running in the host driver (an MTD-level FTL), one chip on one
 * 8-bit bus.
 *
 * Units: the FTL maps 4 KiB units (one file-system block each).  A flash
 * page of page_bytes holds S = page_bytes / 4096 units (S >= 1), or a unit
 * spans P = 4096 / page_bytes pages (P >= 1; 2 for 2 KiB SLC pages).  A
 * physical block of pages_per_block pages has spb unit slots; slot
 * numbers are block * spb + offset.
 *
 * Operation costs (ns), each including the host driver's cost per
 * operation (seed-2: read 52 us, write 106 us, erase 32 us):
 *   page read    = drv_read  + tR + (page + spare) bytes * bus_ns
 *   unit read    (S > 1) = drv_read + tR + (4096 + spare/S) bytes * bus_ns
 *   page program = drv_write + (page + spare) bytes * bus_ns + tPROG
 *   block erase  = drv_erase + tBERS
 * Energy: cpu_w during driver time, vcc * icc during array and bus time,
 * vcc * isb when idle.
 *
 * FTL: writes go out of place to the open (active) block's next free
 * slots; the old copy becomes invalid.  With S > 1 units are gathered in
 * a page buffer in host RAM and the page is programmed when full (a flush,
 * or a FUA write, programs a partial page and pads it).  When the active
 * block is full and at most one free block is left, greedy garbage
 * collection runs:
 * the full block with the fewest valid units (ties: fewest erases, then
 * lowest number) has its valid units read and rewritten, and is erased;
 * this repeats until two blocks are free.  A new block is the free block
 * with the fewest erases (then lowest number): dynamic wear leveling.
 * Physical blocks = ceil(units / spb) + max(ceil of op_pct % of that,
 * min_spare_blocks >= 3), which guarantees GC always finds a victim with
 * a free slot's worth of invalid units.  The device never learns which
 * blocks the file system freed (no TRIM in bdev.h): once written, a unit
 * stays valid until overwritten.
 *
 * Invariants (checked by nand_check, after every request with check=1):
 *  l2p[u] = s  <=>  p2l[s] = u, for every mapped unit u and valid slot s;
 *  valid[b] = number of slots of b with p2l != NONE;
 *  a FREE block has wptr 0 and no valid slot; slots at or past wptr are
 *  never valid; exactly one block is OPEN (the active one) or none.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "dev/model_int.h"
#include "util/util.h"

#define NAND_NONE UINT32_MAX
#define NAND_MAX_SLOTS (1ull << 30)   /* table limit: 4 TiB of 4 KiB units */
#define NAND_UNIT 4096u

enum nand_state { NB_FREE = 0, NB_OPEN = 1, NB_FULL = 2 };

struct nand_params {
    uint64_t page_bytes, spare_bytes, ppb;
    double t_r_us, t_prog_us, t_bers_us, bus_ns;
    double drv_read_us, drv_write_us, drv_erase_us, cpu_w;
    double vcc_v, icc_ma, isb_ua, op_pct;
    uint64_t min_spare;
    bool check;
};

struct nand {
    struct nand_params p;
    uint64_t nunits;        /* logical units = device blocks */
    uint32_t S, P;          /* units per page, pages per unit */
    uint32_t spb;           /* unit slots per block */
    uint32_t nblk;          /* physical blocks */
    uint32_t *l2p, *p2l;    /* unit -> slot, slot -> unit (NAND_NONE) */
    uint32_t *valid, *wptr; /* per block */
    uint64_t *erases;       /* per block */
    uint8_t *state;         /* per block: enum nand_state */
    uint32_t nfree;         /* FREE blocks */
    uint32_t active;        /* the OPEN block or NAND_NONE */
    uint32_t buf_fill;      /* S > 1: units in the unprogrammed page */
    uint64_t free_at;       /* ns: the chip and driver are free */
    bool in_gc;
    double chip_w;          /* vcc * icc, W */
};

/* Cost of the work of one request: time, energy, driver time. */
struct nand_cost {
    double ns, j, drv_ns;
};

#define NK(n, t, f, lo, hi) { n, t, offsetof(struct nand_params, f), lo, hi }
static const struct prof_key nand_keys[] = {
    NK("page_bytes", PK_U64, page_bytes, 512, 65536),
    NK("spare_bytes", PK_U64, spare_bytes, 0, 65536),
    NK("pages_per_block", PK_U64, ppb, 1, 65536),
    NK("t_r_us", PK_DOUBLE, t_r_us, 0, 1e6),
    NK("t_prog_us", PK_DOUBLE, t_prog_us, 0, 1e6),
    NK("t_bers_us", PK_DOUBLE, t_bers_us, 0, 1e7),
    NK("bus_ns_per_byte", PK_DOUBLE, bus_ns, 0, 1e6),
    NK("drv_read_us", PK_DOUBLE, drv_read_us, 0, 1e6),
    NK("drv_write_us", PK_DOUBLE, drv_write_us, 0, 1e6),
    NK("drv_erase_us", PK_DOUBLE, drv_erase_us, 0, 1e6),
    NK("cpu_w", PK_DOUBLE, cpu_w, 0, 1e4),
    NK("vcc_v", PK_DOUBLE, vcc_v, 0, 100),
    NK("icc_ma", PK_DOUBLE, icc_ma, 0, 1e5),
    NK("isb_ua", PK_DOUBLE, isb_ua, 0, 1e8),
    NK("op_pct", PK_DOUBLE, op_pct, 0, 1000),
    NK("min_spare_blocks", PK_U64, min_spare, 3, 1 << 20),
    NK("check", PK_BOOL, check, 0, 1),
    { NULL, PK_DOUBLE, 0, 0, 0 },
};

/* ---- flash operations -------------------------------------------------- */

/* nand_op -- charge one flash operation: driver time drv_us on the CPU,
 * then chip_ns of array + bus time. */
static void nand_op(const struct nand *n, struct nand_cost *c, double drv_us,
                    double chip_ns)
{
    double drv = drv_us * MODEL_NS_PER_US;
    c->ns += drv + chip_ns;
    c->drv_ns += drv;
    c->j += (n->p.cpu_w * drv + n->chip_w * chip_ns) * 1e-9;
}

/* nand_page_bus -- bus time of a whole page with its spare area. */
static double nand_page_bus(const struct nand *n)
{
    return (double)(n->p.page_bytes + n->p.spare_bytes) * n->p.bus_ns;
}

/* nand_read_unit -- read the unit in slot s (P pages, or part of one). */
static void nand_read_unit(const struct nand *n, struct nand_cost *c,
                           struct ubj_model_stats *st)
{
    double tr = n->p.t_r_us * MODEL_NS_PER_US;
    if (n->S > 1) {
        double bytes = NAND_UNIT + (double)n->p.spare_bytes / n->S;
        nand_op(n, c, n->p.drv_read_us, tr + bytes * n->p.bus_ns);
        st->flash_reads++;
        return;
    }
    for (uint32_t i = 0; i < n->P; i++) {
        nand_op(n, c, n->p.drv_read_us, tr + nand_page_bus(n));
        st->flash_reads++;
    }
}

/* nand_program_pages -- program k pages. */
static void nand_program_pages(const struct nand *n, uint32_t k,
                               struct nand_cost *c, struct ubj_model_stats *st)
{
    for (uint32_t i = 0; i < k; i++) {
        nand_op(n, c, n->p.drv_write_us,
                nand_page_bus(n) + n->p.t_prog_us * MODEL_NS_PER_US);
        st->flash_programs++;
    }
}

/* nand_erase -- erase block b: it becomes FREE. */
static void nand_erase(struct nand *n, uint32_t b, struct nand_cost *c,
                       struct ubj_model_stats *st)
{
    nand_op(n, c, n->p.drv_erase_us, n->p.t_bers_us * MODEL_NS_PER_US);
    st->flash_erases++;
    n->erases[b]++;
    n->wptr[b] = 0;
    n->state[b] = NB_FREE;
    n->nfree++;
}

/* ---- allocation and GC ------------------------------------------------- */

/* nand_take_free -- open the free block with the fewest erases. */
static uint32_t nand_take_free(struct nand *n)
{
    uint32_t best = NAND_NONE;
    for (uint32_t b = 0; b < n->nblk; b++)
        if (n->state[b] == NB_FREE &&
            (best == NAND_NONE || n->erases[b] < n->erases[best]))
            best = b;
    n->state[best] = NB_OPEN;
    n->nfree--;
    n->active = best;
    return best;
}

/* nand_victim -- the full block with the fewest valid units (greedy). */
static uint32_t nand_victim(const struct nand *n)
{
    uint32_t best = NAND_NONE;
    for (uint32_t b = 0; b < n->nblk; b++) {
        if (n->state[b] != NB_FULL)
            continue;
        if (best == NAND_NONE || n->valid[b] < n->valid[best] ||
            (n->valid[b] == n->valid[best] && n->erases[b] < n->erases[best]))
            best = b;
    }
    return best;
}

static int nand_place(struct nand *n, uint64_t u, struct nand_cost *c,
                      struct ubj_model_stats *st);

/* nand_gc_one -- collect one victim: copy its valid units, erase it. */
static int nand_gc_one(struct nand *n, struct nand_cost *c,
                       struct ubj_model_stats *st)
{
    uint32_t v = nand_victim(n);
    if (v == NAND_NONE || n->valid[v] == n->spb)
        return ubj_set_error(-EUCLEAN, "nand model: GC found no victim "
                             "(free %u of %u blocks)", n->nfree, n->nblk);
    st->gc_runs++;
    n->in_gc = true;
    for (uint32_t i = 0; i < n->spb && n->valid[v] > 0; i++) {
        uint32_t s = v * n->spb + i;
        uint32_t u = n->p2l[s];
        if (u == NAND_NONE)
            continue;
        nand_read_unit(n, c, st);
        n->p2l[s] = NAND_NONE;
        n->valid[v]--;
        n->l2p[u] = NAND_NONE;
        int rc = nand_place(n, u, c, st);
        if (rc < 0) {
            n->in_gc = false;
            return rc;
        }
        st->gc_copies++;
    }
    n->in_gc = false;
    nand_erase(n, v, c, st);
    return 0;
}

/* nand_alloc -- the next slot to write; runs GC when the active block is
 * full and at most one block is free (not from inside GC). */
static int nand_alloc(struct nand *n, uint32_t *slot, struct nand_cost *c,
                      struct ubj_model_stats *st)
{
    for (;;) {
        if (n->active != NAND_NONE && n->wptr[n->active] < n->spb) {
            uint32_t b = n->active;
            *slot = b * n->spb + n->wptr[b]++;
            if (n->wptr[b] == n->spb) {
                n->state[b] = NB_FULL;
                n->active = NAND_NONE;
            }
            return 0;
        }
        if (n->nfree <= 1 && !n->in_gc) {
            int rc = nand_gc_one(n, c, st);
            if (rc < 0)
                return rc;
            continue;
        }
        if (n->nfree == 0)
            return ubj_set_error(-EUCLEAN, "nand model: no free block");
        nand_take_free(n);
    }
}

/* nand_place -- write unit u to a new slot (mapping + program cost). */
static int nand_place(struct nand *n, uint64_t u, struct nand_cost *c,
                      struct ubj_model_stats *st)
{
    uint32_t s = NAND_NONE;
    int rc = nand_alloc(n, &s, c, st);
    if (rc < 0)
        return rc;
    n->l2p[u] = s;
    n->p2l[s] = (uint32_t)u;
    n->valid[s / n->spb]++;
    if (n->S == 1) {
        nand_program_pages(n, n->P, c, st);
    } else if (++n->buf_fill == n->S) {
        nand_program_pages(n, 1, c, st);
        n->buf_fill = 0;
    }
    return 0;
}

/* nand_unmap -- invalidate unit u's current copy, if any. */
static void nand_unmap(struct nand *n, uint64_t u)
{
    uint32_t s = n->l2p[u];
    if (s == NAND_NONE)
        return;
    n->p2l[s] = NAND_NONE;
    n->valid[s / n->spb]--;
    n->l2p[u] = NAND_NONE;
}

/* nand_in_buffer -- true if slot s is in the unprogrammed page (S > 1). */
static bool nand_in_buffer(const struct nand *n, uint32_t s)
{
    if (n->S == 1 || n->buf_fill == 0 || n->active == NAND_NONE)
        return false;
    uint32_t b = n->active, first = b * n->spb + n->wptr[b] - n->buf_fill;
    return s >= first && s < b * n->spb + n->wptr[b];
}

/* nand_pad -- program a partial buffered page (flush); its empty slots
 * are skipped. */
static void nand_pad(struct nand *n, struct nand_cost *c,
                     struct ubj_model_stats *st)
{
    if (n->S == 1 || n->buf_fill == 0)
        return;
    uint32_t b = n->active;
    n->wptr[b] += n->S - n->buf_fill;
    n->buf_fill = 0;
    nand_program_pages(n, 1, c, st);
    if (n->wptr[b] == n->spb) {
        n->state[b] = NB_FULL;
        n->active = NAND_NONE;
    }
}

/* ---- requests ------------------------------------------------------------ */

/* nand_read_req -- read units [u, u + k). */
static void nand_read_req(struct nand *n, uint64_t u, uint32_t k,
                          struct nand_cost *c, struct ubj_model_stats *st)
{
    uint32_t last_page = NAND_NONE;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t s = n->l2p[u + i];
        if (s == NAND_NONE || nand_in_buffer(n, s)) {
            nand_op(n, c, n->p.drv_read_us, 0);   /* answered from RAM */
            continue;
        }
        uint32_t page = n->S > 1 ? s / n->S : NAND_NONE;
        if (page != NAND_NONE && page == last_page) {
            double bytes = NAND_UNIT + (double)n->p.spare_bytes / n->S;
            nand_op(n, c, 0, bytes * n->p.bus_ns);  /* same page register */
            continue;
        }
        nand_read_unit(n, c, st);
        last_page = page;
    }
}

/* nand_write_req -- write units [u, u + k) out of place. */
static int nand_write_req(struct nand *n, uint64_t u, uint32_t k,
                          struct nand_cost *c, struct ubj_model_stats *st)
{
    for (uint32_t i = 0; i < k; i++) {
        nand_unmap(n, u + i);
        int rc = nand_place(n, u + i, c, st);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int nand_check(void *impl);

/* nand_submit -- time one request (single server). */
static int nand_submit(void *impl, struct model_req *r, struct ubj_model_stats *st)
{
    struct nand *n = impl;
    struct nand_cost c = {0};
    int rc = 0;
    r->t_start = model_max(r->t_arr, n->free_at);
    if (r->op == MODEL_READ) {
        nand_read_req(n, r->blkno, r->count, &c, st);
    } else if (r->op == MODEL_WRITE) {
        rc = nand_write_req(n, r->blkno, r->count, &c, st);
        if (rc == 0 && r->fua)
            nand_pad(n, &c, st);    /* FUA: program the buffered page now */
    } else {
        nand_pad(n, &c, st);
    }
    if (rc == 0 && n->p.check)
        rc = nand_check(n);
    if (rc < 0)
        return rc;
    r->t_done = r->t_start + model_round_ns(c.ns);
    n->free_at = r->t_done;
    r->energy_j = c.j;
    st->driver_ns += model_round_ns(c.drv_ns);
    /* MTD runs every operation in the calling thread: the driver polls
     * the chip's ready line and moves the bytes by programmed I/O, so the
     * whole service occupies the submitter's CPU (an asynchronous
     * submitter is charged it: nothing overlaps a raw-NAND read) */
    r->cpu_ns = r->t_done - r->t_start;
    return 0;
}

/* nand_idle_at -- when the chip is free. */
static uint64_t nand_idle_at(void *impl)
{
    return ((struct nand *)impl)->free_at;
}

/* nand_fill -- wear figures for a stats snapshot. */
static void nand_fill(void *impl, struct ubj_model_stats *st)
{
    struct nand *n = impl;
    uint64_t lo = UINT64_MAX, hi = 0;
    double sum = 0;
    for (uint32_t b = 0; b < n->nblk; b++) {
        lo = n->erases[b] < lo ? n->erases[b] : lo;
        hi = n->erases[b] > hi ? n->erases[b] : hi;
        sum += (double)n->erases[b];
    }
    st->erase_min = lo;
    st->erase_max = hi;
    st->erase_mean = sum / n->nblk;
}

/* nand_check_map -- l2p and p2l are inverse; count valid slots per block. */
static int nand_check_map(const struct nand *n, uint32_t *count)
{
    uint64_t mapped = 0;
    for (uint64_t u = 0; u < n->nunits; u++) {
        uint32_t s = n->l2p[u];
        if (s == NAND_NONE)
            continue;
        mapped++;
        if ((uint64_t)s >= (uint64_t)n->nblk * n->spb || n->p2l[s] != u)
            return ubj_set_error(-EUCLEAN, "nand ftl: unit %llu maps to slot "
                                 "%u which does not map back",
                                 (unsigned long long)u, s);
    }
    uint64_t slots = 0;
    for (uint64_t s = 0; s < (uint64_t)n->nblk * n->spb; s++) {
        uint32_t u = n->p2l[s];
        if (u == NAND_NONE)
            continue;
        slots++;
        uint32_t b = (uint32_t)(s / n->spb);
        count[b]++;
        if (u >= n->nunits || n->l2p[u] != s || s % n->spb >= n->wptr[b])
            return ubj_set_error(-EUCLEAN, "nand ftl: slot %llu holds unit "
                                 "%u that is not mapped there",
                                 (unsigned long long)s, u);
    }
    if (mapped != slots)
        return ubj_set_error(-EUCLEAN, "nand ftl: %llu units mapped but %llu "
                             "valid slots", (unsigned long long)mapped,
                             (unsigned long long)slots);
    return 0;
}

/* nand_check_blocks -- per-block counts and states agree with the map. */
static int nand_check_blocks(const struct nand *n, const uint32_t *count)
{
    uint32_t nfree = 0, nopen = 0;
    for (uint32_t b = 0; b < n->nblk; b++) {
        if (count[b] != n->valid[b])
            return ubj_set_error(-EUCLEAN, "nand ftl: block %u counts %u "
                                 "valid units, has %u", b, n->valid[b], count[b]);
        if (n->state[b] == NB_FREE && (n->wptr[b] != 0 || count[b] != 0))
            return ubj_set_error(-EUCLEAN, "nand ftl: free block %u is not "
                                 "empty", b);
        nfree += n->state[b] == NB_FREE;
        nopen += n->state[b] == NB_OPEN;
        if (n->state[b] == NB_OPEN && b != n->active)
            return ubj_set_error(-EUCLEAN, "nand ftl: block %u open but not "
                                 "active", b);
    }
    if (nfree != n->nfree || nopen > 1)
        return ubj_set_error(-EUCLEAN, "nand ftl: %u free blocks counted, %u "
                             "recorded; %u open", nfree, n->nfree, nopen);
    return 0;
}

/* nand_check -- verify every FTL invariant. */
static int nand_check(void *impl)
{
    struct nand *n = impl;
    uint32_t *count = calloc(n->nblk, sizeof *count);
    if (count == NULL)
        return ubj_set_error(-ENOMEM, "nand ftl check: out of memory");
    int rc = nand_check_map(n, count);
    if (rc == 0)
        rc = nand_check_blocks(n, count);
    free(count);
    return rc;
}

/* nand_destroy -- free the tables. */
static void nand_destroy(void *impl)
{
    struct nand *n = impl;
    if (n == NULL)
        return;
    free(n->l2p);
    free(n->p2l);
    free(n->valid);
    free(n->wptr);
    free(n->erases);
    free(n->state);
    free(n);
}

/* nand_geometry -- derive S, P, spb and the physical block count. */
static int nand_geometry(struct nand *n, const struct prof *pr)
{
    uint64_t pb = n->p.page_bytes;
    if ((pb & (pb - 1)) != 0)
        return prof_err(-EINVAL, pr, NULL, "page_bytes must be a power of two");
    n->S = pb >= NAND_UNIT ? (uint32_t)(pb / NAND_UNIT) : 1;
    n->P = pb < NAND_UNIT ? (uint32_t)(NAND_UNIT / pb) : 1;
    if (n->p.ppb % n->P != 0)
        return prof_err(-EINVAL, pr, NULL, "pages_per_block must hold whole "
                        "4 KiB units");
    n->spb = (uint32_t)(n->p.ppb * n->S / n->P);
    uint64_t data = (n->nunits + n->spb - 1) / n->spb;
    uint64_t spare = (uint64_t)ceil((double)data * n->p.op_pct / 100.0);
    if (spare < n->p.min_spare)
        spare = n->p.min_spare;
    if ((data + spare) * n->spb > NAND_MAX_SLOTS)
        return ubj_set_error(-EFBIG, "nand model: %llu blocks are too many for "
                             "the FTL tables", (unsigned long long)n->nunits);
    n->nblk = (uint32_t)(data + spare);
    return 0;
}

/* nand_tables -- allocate the mapping tables, everything unmapped/free. */
static int nand_tables(struct nand *n)
{
    size_t slots = (size_t)n->nblk * n->spb;
    n->l2p = malloc(n->nunits * sizeof *n->l2p);
    n->p2l = malloc(slots * sizeof *n->p2l);
    n->valid = calloc(n->nblk, sizeof *n->valid);
    n->wptr = calloc(n->nblk, sizeof *n->wptr);
    n->erases = calloc(n->nblk, sizeof *n->erases);
    n->state = calloc(n->nblk, sizeof *n->state);
    if (n->l2p == NULL || n->p2l == NULL || n->valid == NULL ||
        n->wptr == NULL || n->erases == NULL || n->state == NULL)
        return ubj_set_error(-ENOMEM, "nand model: out of memory for the FTL "
                             "tables");
    memset(n->l2p, 0xff, n->nunits * sizeof *n->l2p);
    memset(n->p2l, 0xff, slots * sizeof *n->p2l);
    n->nfree = n->nblk;
    n->active = NAND_NONE;
    return 0;
}

/* nand_create -- parse the profile, size the FTL for nblocks units. */
static int nand_create(const struct prof *pr, uint64_t nblocks, void **impl,
                       double *idle_w)
{
    struct nand *n = calloc(1, sizeof *n);
    if (n == NULL)
        return ubj_set_error(-ENOMEM, "nand model: out of memory");
    n->p = (struct nand_params){
        .page_bytes = 2048, .ppb = 64, .min_spare = 3, .vcc_v = 3.3,
    };
    n->nunits = nblocks;
    int rc = prof_apply(pr, "nand", nand_keys, &n->p, NULL);
    if (rc == 0 && nblocks >= NAND_NONE)
        rc = ubj_set_error(-EFBIG, "nand model: too many blocks");
    if (rc == 0)
        rc = nand_geometry(n, pr);
    if (rc == 0)
        rc = nand_tables(n);
    if (rc < 0) {
        nand_destroy(n);
        return rc;
    }
    n->chip_w = n->p.vcc_v * n->p.icc_ma * 1e-3;
    *idle_w = n->p.vcc_v * n->p.isb_ua * 1e-6;
    *impl = n;
    return 0;
}

/* nand_read_cost -- ubj_model_read_cost: no per-request term, each unit
 * its flash operations (nand_read_unit). */
static void nand_read_cost(const void *impl, uint64_t gap, struct ubj_model_rcost *out)
{
    const struct nand *n = impl;
    struct nand_cost c = { 0 };
    struct ubj_model_stats st;
    memset(&st, 0, sizeof st);
    nand_read_unit(n, &c, &st);
    (void)gap;   /* no positioning */
    out->a_ns = out->a_j = 0;
    out->b_ns = c.ns;
    out->b_j = c.j;
}

const struct model_kind model_nand_kind = {
    .name = "nand",
    .create = nand_create,
    .submit = nand_submit,
    .idle_at = nand_idle_at,
    .position = NULL,
    .slots = 1,
    .fill = nand_fill,
    .check = nand_check,
    .destroy = nand_destroy,
    .read_cost = nand_read_cost,
};
