/*
 * model_int.h -- internal interface between the model framework
 * (model.c), the device models (model_hdd.c, model_ssd.c, model_nand.c),
 * the NVM cost model (nvm_model.c), the profile parser (profile.c) and the
 * spec parser (spec.c).  Nothing here is public: the public API is
 * include/ubjfs/model.h.
 */
#ifndef UBJ_DEV_MODEL_INT_H
#define UBJ_DEV_MODEL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ubjfs/bdev.h"
#include "ubjfs/model.h"

/* ---- profiles (profile.c) ---------------------------------------------- */

/* One "key = value" line of a profile, in file order; overrides last. */
struct prof_line {
    char *key;
    char *value;
    unsigned line;          /* 1-based line in the source; 0 = override */
};

/* A loaded profile: where it came from and its lines. */
struct prof {
    char source[512];       /* file path or "built-in kind_name" */
    char name[64];          /* profile name */
    struct prof_line *lines;
    size_t nlines;
};

enum prof_type { PK_DOUBLE, PK_U64, PK_BOOL };

/* A parameter a model accepts: parsed into (char *)params + off. */
struct prof_key {
    const char *name;
    enum prof_type type;
    size_t off;             /* offsetof in the model's params struct */
    double min, max;        /* accepted range (inclusive) */
};

/* A hook for keys not in the table (e.g. HDD "zone" lines): returns 1 if
 * it took the line, 0 if the key is unknown, or a negative errno. */
typedef int (*prof_hook_fn)(void *params, const struct prof_line *l,
                            const struct prof *p);

/*
 * prof_load -- load profile `spec` ("name[,k=v...]" or "path[,k=v...]")
 * of model kind `kind` ("hdd", "ssd", "nand", "nvm"): lines of the file or
 * built-in text, then the overrides.  Returns 0, -ENOENT, -EINVAL or
 * -ENOMEM (message set).  Free with prof_free.
 */
int prof_load(const char *kind, const char *spec, struct prof **out);

/* prof_free -- release a loaded profile; NULL is a no-op. */
void prof_free(struct prof *p);

/*
 * prof_apply -- parse every line of p into `params` through `keys`
 * (terminated by a NULL name); lines whose key is not in the table go to
 * `hook` (may be NULL).  The key "kind" must equal `kind` if present;
 * "name" and "clock" are accepted and ignored.  Returns 0 or -EINVAL with
 * a message naming the source, line and key.
 */
int prof_apply(const struct prof *p, const char *kind,
               const struct prof_key *keys, void *params,
               prof_hook_fn hook);

/* prof_err -- set a message "<source>:<line>: <key>: <what>"; returns rc. */
int prof_err(int rc, const struct prof *p, const struct prof_line *l,
             const char *what);

/* prof_builtin_text -- the compiled-in text of profile kind_name, or NULL. */
const char *prof_builtin_text(const char *kind, const char *name);

/* prof_builtin_name -- the i-th built-in profile as "kind_name" (for tests
 * and docs), or NULL past the end. */
const char *prof_builtin_name(size_t i);

/* ---- model framework (model.c) ----------------------------------------- */

enum model_op { MODEL_READ = 0, MODEL_WRITE = 1, MODEL_FLUSH = 2 };

/* One request as a model sees it.  The model fills the outputs. */
struct model_req {
    enum model_op op;
    uint64_t blkno;         /* first 4096-byte block */
    uint32_t count;         /* blocks (0 for a flush) */
    uint64_t t_arr;         /* arrival at the device, ns */
    uint64_t t_queued;      /* arrival at the queue above (= t_arr without
                               one): queueing and response are counted
                               from here, ns */
    bool fua;               /* write: durable on completion (write-through) */
    uint64_t t_start;       /* out: service starts (>= t_arr), ns */
    uint64_t t_done;        /* out: completion (>= t_start), ns */
    double energy_j;        /* out: energy charged directly, J */
    double power_w;         /* out: power while this request extends the
                               device's busy time (charged per busy ns), W */
    uint64_t bg_busy_ns;    /* out: background work the model did before
                               t_start (destaging in an idle gap), ns */
    uint64_t cpu_ns;        /* out: of [t_start, t_done], the submitting
                               CPU's busy time (NAND: all of it, MTD), ns */
};

/* The operations of one device model. */
struct model_kind {
    const char *name;       /* "hdd", "ssd", "nand" */
    /* create: parse profile p for a device of nblocks; *impl = state.
     * *idle_w = idle power.  Returns 0 or a negative errno (message set). */
    int (*create)(const struct prof *p, uint64_t nblocks, void **impl,
                  double *idle_w);
    /* submit: time request r (called with the device lock held, in arrival
     * order); may add model-specific counters and background energy to
     * *st.  Returns 0 or a negative errno. */
    int (*submit)(void *impl, struct model_req *r, struct ubj_model_stats *st);
    /* idle_at: the time the device finishes everything submitted so far */
    uint64_t (*idle_at)(void *impl);
    /* position: ns of positioning (seek + rotation) request r would need
     * if started at t (no state change; r->t_* unused); NULL if the kind
     * has no positioning.  Returns 0 (lock held). */
    int (*position)(void *impl, const struct model_req *r, uint64_t t,
                    uint64_t *ns);
    /* slots: requests served at once, as a queue above should dispatch
     * them (1: one at a time; 0: any number, the model queues them) */
    uint32_t slots;
    /* fill: add state-derived fields (wear) to a stats snapshot; may be NULL */
    void (*fill)(void *impl, struct ubj_model_stats *st);
    /* check: verify invariants (0 or -EUCLEAN with message); may be NULL */
    int (*check)(void *impl);
    void (*destroy)(void *impl);
    /* read_cost: the profile's read cost (ubj_model_read_cost; the
     * profile only, so no lock needed); NULL: none declared */
    void (*read_cost)(const void *impl, uint64_t gap, struct ubj_model_rcost *out);
};

extern const struct model_kind model_hdd_kind;
extern const struct model_kind model_ssd_kind;
extern const struct model_kind model_nand_kind;

/* ---- small helpers shared by the models -------------------------------- */

#define MODEL_NS_PER_MS 1e6
#define MODEL_NS_PER_US 1e3

/* model_round_ns -- a non-negative duration in ns (double) as an integer. */
static inline uint64_t model_round_ns(double ns)
{
    return ns <= 0.0 ? 0 : (uint64_t)(ns + 0.5);
}

/* model_max -- the larger of two times. */
static inline uint64_t model_max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

#endif /* UBJ_DEV_MODEL_INT_H */
