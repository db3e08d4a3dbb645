/*
 * nvm_model.c -- the cost model of an NVM-resident cache region (DRAM,
 * STT-MRAM, PCM): what the persistence layer's stores, flushes, fences
 * and reads cost in time and energy (ubj_nvm_model_*, include/ubjfs/
 * model.h).
 *
 * Model: the unit is a 64-byte line.
 *   store(off, len)  lines = lines touched by [off, off+len);
 *                    time  = lines * store_ns_per_line (CPU cache; 0 by
 *                    default), no medium energy (the line is written to
 *                    the medium when flushed)
 *   flush(off, len)  lines covering the range are written to the medium:
 *                    time = lines * write_ns, energy = lines * 512 bits *
 *                    write_pj_bit (flushes are charged one after another)
 *   fence()          time = fence_ns
 *   read(off, len)   time = lines * read_ns, energy = lines * 512 *
 *                    read_pj_bit
 * A persist of N lines (flush + fence) therefore costs
 * N * write_ns + fence_ns and N * 512 * write_pj_bit pJ.  The time is
 * charged to the caller on the model's clock (ubj_clock_advance: the
 * virtual clock moves, the real clock spins).  Not modeled: write
 * combining of repeated flushes of a line, bank parallelism, background
 * power (refresh, leakage), wear.
 *
 * Invariants: counters are [lock]; the clock reference is held until
 * destroy.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "dev/model_int.h"
#include "util/util.h"

#define NVM_LINE_BITS (UBJ_NVM_LINE * 8u)

struct nvm_params {
    double read_ns, write_ns, read_pj_bit, write_pj_bit, fence_ns, store_ns;
};

struct ubj_nvm_model {
    struct nvm_params p;
    struct ubj_clock *clock;
    pthread_mutex_t lock;
    struct ubj_nvm_stats st;    /* [lock] */
};

#define VK(n, f, hi) { n, PK_DOUBLE, offsetof(struct nvm_params, f), 0, hi }
static const struct prof_key nvm_keys[] = {
    VK("read_ns", read_ns, 1e9),
    VK("write_ns", write_ns, 1e9),
    VK("read_pj_bit", read_pj_bit, 1e6),
    VK("write_pj_bit", write_pj_bit, 1e6),
    VK("fence_ns", fence_ns, 1e9),
    VK("store_ns_per_line", store_ns, 1e9),
    { NULL, PK_DOUBLE, 0, 0, 0 },
};

/* nvm_lines -- 64-byte lines touched by [off, off + len). */
static uint64_t nvm_lines(uint64_t off, size_t len)
{
    if (len == 0)
        return 0;
    return (off + len - 1) / UBJ_NVM_LINE - off / UBJ_NVM_LINE + 1;
}

/* nvm_charge -- add time and energy, then let the time pass. */
static uint64_t nvm_charge(struct ubj_nvm_model *m, double ns, double pj)
{
    uint64_t t = model_round_ns(ns);
    m->st.time_ns += t;
    m->st.energy_j += pj * 1e-12;
    return t;
}

/* nvm_wait -- the caller spends t ns (outside the lock). */
static uint64_t nvm_wait(struct ubj_nvm_model *m, uint64_t t)
{
    if (t > 0)
        ubj_clock_advance(m->clock, t);
    return t;
}

/* ubj_nvm_model_create -- a cost model for an NVM profile. */
int ubj_nvm_model_create(const char *profile, struct ubj_clock *clock,
                         struct ubj_nvm_model **out)
{
    if (out == NULL || profile == NULL)
        return ubj_set_error(-EINVAL, "nvm model: NULL argument");
    *out = NULL;
    struct prof *pr;
    int rc = prof_load("nvm", profile, &pr);
    if (rc < 0)
        return rc;
    struct ubj_nvm_model *m = calloc(1, sizeof *m);
    if (m == NULL) {
        prof_free(pr);
        return ubj_set_error(-ENOMEM, "nvm model: out of memory");
    }
    rc = prof_apply(pr, "nvm", nvm_keys, &m->p, NULL);
    prof_free(pr);
    if (rc == 0 && pthread_mutex_init(&m->lock, NULL) != 0)
        rc = ubj_set_error(-ENOMEM, "nvm model: cannot create its mutex");
    if (rc == 0) {
        m->clock = clock != NULL ? ubj_clock_get(clock) : NULL;
        if (m->clock == NULL && (rc = ubj_clock_create(UBJ_CLOCK_VIRTUAL,
                                                       &m->clock)) < 0)
            pthread_mutex_destroy(&m->lock);
    }
    if (rc < 0) {
        free(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* ubj_nvm_model_destroy -- release m. */
void ubj_nvm_model_destroy(struct ubj_nvm_model *m)
{
    if (m == NULL)
        return;
    ubj_clock_put(m->clock);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* ubj_nvm_model_store -- charge CPU stores into the region. */
uint64_t ubj_nvm_model_store(struct ubj_nvm_model *m, uint64_t off, size_t len)
{
    uint64_t lines = nvm_lines(off, len);
    pthread_mutex_lock(&m->lock);
    m->st.stores++;
    m->st.bytes_stored += len;
    m->st.lines_stored += lines;
    uint64_t t = nvm_charge(m, (double)lines * m->p.store_ns, 0);
    pthread_mutex_unlock(&m->lock);
    return nvm_wait(m, t);
}

/* nvm_flush_locked -- write `lines` lines to the medium. */
static uint64_t nvm_flush_locked(struct ubj_nvm_model *m, uint64_t lines)
{
    m->st.flushes++;
    m->st.lines_flushed += lines;
    return nvm_charge(m, (double)lines * m->p.write_ns,
                      (double)lines * NVM_LINE_BITS * m->p.write_pj_bit);
}

/* ubj_nvm_model_flush -- charge writing back the lines of a range. */
uint64_t ubj_nvm_model_flush(struct ubj_nvm_model *m, uint64_t off, size_t len)
{
    pthread_mutex_lock(&m->lock);
    uint64_t t = nvm_flush_locked(m, nvm_lines(off, len));
    pthread_mutex_unlock(&m->lock);
    return nvm_wait(m, t);
}

/* ubj_nvm_model_flush_lines -- charge writing back nlines whole lines. */
uint64_t ubj_nvm_model_flush_lines(struct ubj_nvm_model *m, uint64_t nlines)
{
    pthread_mutex_lock(&m->lock);
    uint64_t t = nvm_flush_locked(m, nlines);
    pthread_mutex_unlock(&m->lock);
    return nvm_wait(m, t);
}

/* nvm_lines_charge -- one call moving `lines` lines of the medium, each
 * costing ns and pj_bit x 512: count the call and the lines. */
static uint64_t nvm_lines_charge(struct ubj_nvm_model *m, uint64_t *calls,
                                 uint64_t *nlines, uint64_t lines, double ns,
                                 double pj_bit)
{
    pthread_mutex_lock(&m->lock);
    (*calls)++;
    *nlines += lines;
    uint64_t t = nvm_charge(m, (double)lines * ns,
                            (double)lines * NVM_LINE_BITS * pj_bit);
    pthread_mutex_unlock(&m->lock);
    return nvm_wait(m, t);
}

/* ubj_nvm_model_fill -- charge a device read's writes into the region. */
uint64_t ubj_nvm_model_fill(struct ubj_nvm_model *m, uint64_t off, size_t len)
{
    uint64_t lines = nvm_lines(off, len);
    if (lines == 0)
        return 0;
    return nvm_lines_charge(m, &m->st.fills, &m->st.lines_filled, lines,
                            m->p.write_ns, m->p.write_pj_bit);
}

/* ubj_nvm_model_fence -- charge a store fence. */
uint64_t ubj_nvm_model_fence(struct ubj_nvm_model *m)
{
    pthread_mutex_lock(&m->lock);
    m->st.fences++;
    uint64_t t = nvm_charge(m, m->p.fence_ns, 0);
    pthread_mutex_unlock(&m->lock);
    return nvm_wait(m, t);
}

/* ubj_nvm_model_read -- charge reading a range from the medium. */
uint64_t ubj_nvm_model_read(struct ubj_nvm_model *m, uint64_t off, size_t len)
{
    return nvm_lines_charge(m, &m->st.reads, &m->st.lines_read, nvm_lines(off, len),
                            m->p.read_ns, m->p.read_pj_bit);
}

/* ubj_nvm_model_stats -- snapshot of the counters. */
void ubj_nvm_model_stats(struct ubj_nvm_model *m, struct ubj_nvm_stats *out)
{
    pthread_mutex_lock(&m->lock);
    *out = m->st;
    pthread_mutex_unlock(&m->lock);
}

/* ubj_nvm_model_stats_reset -- zero the counters. */
void ubj_nvm_model_stats_reset(struct ubj_nvm_model *m)
{
    pthread_mutex_lock(&m->lock);
    memset(&m->st, 0, sizeof m->st);
    pthread_mutex_unlock(&m->lock);
}

/* ubj_nvm_model_clock -- m's clock. */
struct ubj_clock *ubj_nvm_model_clock(const struct ubj_nvm_model *m)
{
    return m->clock;
}
