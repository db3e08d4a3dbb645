/*
 * persist.c -- the persistence verbs of a region (include/ubjfs/nvm.h):
 * copy, memset, store64 (stores), flush, drain, persist.  The one place
 * every trusted store and every fence passes, so the shadow recorder
 * (shadow.c) sees them all.
 *
 * Two back ends, chosen at map time by pmem_is_pmem():
 *   pmem      flush = pmem_flush (CLWB/CLFLUSHOPT per line), drain =
 *             pmem_drain (SFENCE).
 *   msync     flush remembers the byte range (one [lo, hi) union per
 *             drain interval); drain = pmem_msync over that range.  On a
 *             tmpfs or page-cache file this survives a process crash; the
 *             union may persist more than was flushed, which the model
 *             allows (any store may become durable early).
 *
 * Invariants: P1 every pointer passed lies inside the mapping (asserted);
 * P2 store64 targets are 8-byte aligned (asserted); P3 a read-only region
 * never gets here (asserted); P4 stats count every call.  Device reads
 * into the region (ubj_nvm_filled) are counted and charged, not stored.
 */
#include <assert.h>
#include <errno.h>
#include <libpmem.h>
#include <string.h>
#include "nvm/nvm_int.h"
#include "ubjfs/model.h"
#include "util/util.h"

/* persist_check -- P1/P3 for [p, p+len). */
static inline void persist_check(const struct ubj_nvm *r, const void *p, size_t len)
{
    (void)r; (void)p; (void)len;
    assert(!r->rdonly);
    assert((const uint8_t *)p >= r->base &&
           nvm_off(r, p) + len <= r->map_len);
}

/* ubj_nvm_copy -- memcpy into the region (stores, not yet flushed). */
void ubj_nvm_copy(struct ubj_nvm *r, void *dst, const void *src, size_t len)
{
    persist_check(r, dst, len);
    memcpy(dst, src, len);
    r->stats.bytes_stored += len;
    if (r->model != NULL)
        ubj_nvm_model_store(r->model, nvm_off(r, dst), len);
}

/* ubj_nvm_memset -- memset into the region (stores, not yet flushed). */
void ubj_nvm_memset(struct ubj_nvm *r, void *dst, int c, size_t len)
{
    persist_check(r, dst, len);
    memset(dst, c, len);
    r->stats.bytes_stored += len;
    if (r->model != NULL)
        ubj_nvm_model_store(r->model, nvm_off(r, dst), len);
}

/* ubj_nvm_store64 -- one aligned atomic 8-byte store. */
void ubj_nvm_store64(struct ubj_nvm *r, uint64_t *dst, uint64_t v)
{
    persist_check(r, dst, 8);
    assert(((uintptr_t)dst & 7u) == 0);
    __atomic_store_n(dst, v, __ATOMIC_RELEASE);
    r->stats.bytes_stored += 8;
    if (r->model != NULL)
        ubj_nvm_model_store(r->model, nvm_off(r, dst), 8);
}

/* ubj_nvm_flush -- write back the lines of [p, p+len) (asynchronously). */
void ubj_nvm_flush(struct ubj_nvm *r, const void *p, size_t len)
{
    persist_check(r, p, len);
    if (len == 0)
        return;
    uint64_t lo = nvm_off(r, p) & ~(uint64_t)(UBJ_NVM_LINE - 1);
    uint64_t hi = (nvm_off(r, p) + len + UBJ_NVM_LINE - 1) &
                  ~(uint64_t)(UBJ_NVM_LINE - 1);
    r->stats.flushes++;
    r->stats.bytes_flushed += hi - lo;
    if (r->shadow != NULL)
        nvm_shadow_flush(r->shadow, r->base, lo, hi - lo);
    if (r->model != NULL)
        ubj_nvm_model_flush(r->model, lo, hi - lo);
    if (r->is_pmem) {
        pmem_flush(p, len);
        return;
    }
    if (r->pending.lo == r->pending.hi) {
        r->pending.lo = lo;
        r->pending.hi = hi;
    } else {
        if (lo < r->pending.lo)
            r->pending.lo = lo;
        if (hi > r->pending.hi)
            r->pending.hi = hi;
    }
}

/* ubj_nvm_drain -- the persistence point: every earlier flush is durable. */
int ubj_nvm_drain(struct ubj_nvm *r)
{
    assert(!r->rdonly);
    r->stats.drains++;
    if (r->shadow != NULL)
        nvm_shadow_drain(r->shadow, r->base);
    if (r->model != NULL)
        ubj_nvm_model_fence(r->model);
    if (r->is_pmem) {
        pmem_drain();
        return 0;
    }
    if (r->pending.lo == r->pending.hi || r->private_map) {
        r->pending.lo = r->pending.hi = 0;
        return 0;             /* a private copy: nothing reaches the file */
    }
    uint64_t lo = r->pending.lo, hi = r->pending.hi;
    r->pending.lo = r->pending.hi = 0;
    if (pmem_msync(r->base + lo, hi - lo) != 0)
        return ubj_set_error(-EIO, "nvm: %s: msync of %llu bytes failed: %s",
                             r->path, (unsigned long long)(hi - lo),
                             pmem_errormsg());
    return 0;
}

/* ubj_nvm_persist -- flush then drain. */
int ubj_nvm_persist(struct ubj_nvm *r, const void *p, size_t len)
{
    ubj_nvm_flush(r, p, len);
    return ubj_nvm_drain(r);
}

/* ubj_nvm_set_model -- charge r's persistence to m (owned). */
void ubj_nvm_set_model(struct ubj_nvm *r, struct ubj_nvm_model *m)
{
    if (r->model != NULL && r->model != m)
        ubj_nvm_model_destroy(r->model);
    r->model = m;
}

/* ubj_nvm_get_model -- r's cost model, or NULL. */
struct ubj_nvm_model *ubj_nvm_get_model(const struct ubj_nvm *r)
{
    return r->model;
}

/* ubj_nvm_filled -- count and charge a device read into the region.
 * Called by whichever thread ends a read (no mount lock): the counter is
 * atomic, the model has its own lock; the shadow recorder is not told
 * (nothing was stored through the CPU, nothing needs persisting). */
void ubj_nvm_filled(struct ubj_nvm *r, const void *p, size_t len)
{
    assert((const uint8_t *)p >= r->base && nvm_off(r, p) + len <= r->map_len);
    __atomic_fetch_add(&r->stats.bytes_filled, (uint64_t)len, __ATOMIC_RELAXED);
    if (r->model != NULL)
        ubj_nvm_model_fill(r->model, nvm_off(r, p), len);
}

/* ubj_nvm_counters_get -- a copy of the counters (bytes_filled read
 * atomically: device reads end on other threads). */
void ubj_nvm_counters_get(const struct ubj_nvm *r, struct ubj_nvm_counters *out)
{
    out->bytes_stored = r->stats.bytes_stored;
    out->bytes_flushed = r->stats.bytes_flushed;
    out->flushes = r->stats.flushes;
    out->drains = r->stats.drains;
    out->bytes_filled = __atomic_load_n(&r->stats.bytes_filled, __ATOMIC_RELAXED);
}
