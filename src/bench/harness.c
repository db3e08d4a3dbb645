/*
 * bench/harness.c -- one benchmark run (bench/harness.h): the device stack,
 * format, NVM region, mount, the workload's untimed setup, the timed phase
 * as closed-loop processes (or an open-loop trace replay), and the metrics.
 *
 * The closed loop (Ganger's dissertation, ch. 3), VIRTUAL clock, one thread:
 *   every process p has ready_ns (all start at t0, the start of the timed
 *   phase).  Repeat: take the process with the smallest ready_ns (ties: the
 *   lowest id); if a commit tick falls due before it, run the tick first;
 *   wait until ready_ns (idle time passes, the devices drain); run ONE
 *   transaction of p to completion (the clock moves as the models serve its
 *   requests); its response time is completion - max(ready_ns, now); p is
 *   ready again at completion + an exponential think time (mean think_ns,
 *   from p's own random stream).  Stop after `ops` transactions or when
 *   every process is done.
 *   Ticks: every commit_interval_ms of clock time the harness calls
 *   ubj_tick_flags(fs, UBJ_TICK_BACKGROUND), as the timer thread would
 *   (its writes occupy the device but nobody waits for them).  A tick that
 *   falls due while a transaction runs is run right after it.
 *   NVM time: the mode-ubj region charges its profile's time to a model of
 *   its own; after every transaction and tick the harness adds the new NVM
 *   time to the run's clock (the CPU stalls on the stores and fences), so
 *   device and NVM share one time line.
 * REAL clock: one thread per process, each waiting for its ready time on
 *   the clock, then running its transaction holding the run's mutex `mu`
 *   (the bookkeeping lock: the workload's shared tables, the latency
 *   array, the counters); every counted file-system call releases `mu`
 *   around its ubj_* call (bh_call_begin/end), so the processes'
 *   transactions overlap for real, as far as the file system lets them
 *   (its mount lock, released while a read waits for the device:
 *   docs/DESIGN.md).  A workload with `serial` set, or BH_F_SERIAL, keeps
 *   `mu` across its calls: one transaction at a time, as before issue 20.
 *   The mount keeps its timer thread.  txn_overlap_max reports the most
 *   transactions in progress at once.
 *
 * What is timed.  The setup (format, mount, the workload's init, a sync
 * and a drain of the device) is not.  The timed phase starts with the
 * counters reset and ends with a final ubj_sync(), INCLUDED in elapsed_ns
 * (and reported alone as sync_ns): the seed measures task elapsed time,
 * and a task is done when its data is durable -- without it a mode that
 * leaves more dirty data in the cache would look faster.  BH_F_NO_FINAL_SYNC
 * leaves it out (the sync then happens at unmount, unmeasured).  The
 * unmount itself is never timed.
 *
 * Metrics (bh_result): counters are deltas over the timed phase of
 * ubj_fs_stats (storage bytes by category, flushes, commits, NVM bytes and
 * energy, cache hits), of the device's own write counter, and of the
 * model's statistics (reset at t0: energy).  Percentiles are exact, over
 * every transaction's response time (nearest rank).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bench/bench_int.h"
#include "ubjfs/mode.h"
#include "util/util.h"

#define BH_DEF_CACHE BH_DEFAULT_CACHE_BLOCKS
#define BH_DEF_IMAGE BH_DEFAULT_IMAGE_BLOCKS
#define BH_DEF_COMMIT_MS BH_DEFAULT_COMMIT_MS
#define BH_MAX_PROCS 4096u
#define BH_PROGRESS_EVERY 256u

struct bh_run {
    const struct bh_config *cfg;
    uint64_t need_blocks;          /* bh_note_need: an image that would fit */
    const struct bh_workload *wl;
    struct bh_params prm;
    char kvbuf[256];
    struct ubj_clock *clock;
    struct ubj_bdev *dev;          /* top of the stack */
    struct ubj_bdev *model;        /* topmost model device, or NULL */
    struct ubj_fs *fs;
    char nvm_dir[256], nvm_path[300];
    void *state;                   /* the workload's */
    struct bh_proc *procs;
    struct bh_proc setup;
    bool timed;                    /* counting into opcount (else init_opcount) */
    uint64_t opcount[BH_OP_NR], init_opcount[BH_OP_NR];   /* [atomic] */
    uint64_t app_wr, app_rd;                               /* [atomic] */
    uint64_t *lat;                 /* response times [mu] */
    uint64_t nlat, caplat;
    uint64_t issued;               /* transactions started [mu] */
    uint64_t nvm_seen;             /* NVM model ns already charged */
    uint64_t t0;                   /* start of the timed phase */
    uint8_t *wbuf, *rbuf;
    struct bh_trace *trace;        /* recording, or NULL */
    const struct bh_trace_in *replay;   /* replaying, or NULL */
    pthread_mutex_t mu;
    bool overlap;                  /* counted calls release mu (real clock) */
    unsigned inflight, inflight_max; /* transactions in progress [mu] */
    int error;                     /* first error of a real-clock thread [mu] */
    char errmsg[256];
    bool kv_probe;                 /* bh_workload_check_kv: no file system;
                                      bh_params_end stops the init */
};

/* bh_nvm -- does mode `name` (of the registry, ubjfs/mode.h) need an NVM
 * region? */
static bool bh_nvm(const char *name)
{
    const struct ubj_mode_info *m = ubj_mode_lookup(name);
    return m != NULL && m->needs == UBJ_MODE_NEEDS_NVM;
}

/* bh_known_modes -- "ubj, ordered, ...": the registry's modes, the
 * crash-consistent ones first, into buf. */
static const char *bh_known_modes(char *buf, size_t len)
{
    const struct ubj_mode_info *v[32];
    size_t n = ubj_mode_list(0, UBJ_MODE_ORDER_CONSISTENT_FIRST, v, 32);
    buf[0] = '\0';
    for (size_t i = 0; i < n && i < 32; i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", v[i]->name);
    return buf;
}

/* ---- accessors for workloads -------------------------------------------- */

/* bh_fs -- the run's mount. */
struct ubj_fs *bh_fs(struct bh_run *r) { return r->fs; }

/* bh_params_of -- parameters with defaults filled in. */
const struct bh_params *bh_params_of(struct bh_run *r) { return &r->prm; }

/* bh_state -- the workload's run-wide pointer. */
void *bh_state(struct bh_run *r) { return r->state; }

/* bh_set_state -- set the workload's run-wide pointer. */
void bh_set_state(struct bh_run *r, void *st) { r->state = st; }

/* bh_setup_proc -- the init phase's random stream. */
struct bh_proc *bh_setup_proc(struct bh_run *r) { return &r->setup; }

/* bh_now_ns -- the run's clock. */
uint64_t bh_now_ns(struct bh_run *r) { return ubj_clock_now(r->clock); }

/* bh_sleep_ns -- let time pass. */
void bh_sleep_ns(struct bh_run *r, uint64_t ns) { ubj_clock_advance(r->clock, ns); }

/* bh_workload_name -- the workload's name. */
const char *bh_workload_name(struct bh_run *r) { return r->wl->name; }

/* bh_procs_of -- the processes. */
struct bh_proc *bh_procs_of(struct bh_run *r) { return r->procs; }

/* bh_wbuf -- the pattern buffer writes come from. */
const void *bh_wbuf(struct bh_run *r) { return r->wbuf; }

/* The calling thread's read buffer on the real clock (each process
 * reads into its own: with overlap two reads would race on one), or NULL
 * (the run's r->rbuf). */
static _Thread_local uint8_t *bh_thread_rbuf;
/* The calling thread's process, for the test hook. */
static _Thread_local const struct bh_proc *bh_thread_proc;

/* bh_rbuf -- the buffer reads go to. */
void *bh_rbuf(struct bh_run *r)
{
    return bh_thread_rbuf != NULL ? bh_thread_rbuf : r->rbuf;
}

#if UBJ_TEST_HOOKS
static void (*bh_call_hook)(void *, unsigned);
static void *bh_call_hook_arg;

/* bh_test_call_hook -- see bench_int.h. */
void bh_test_call_hook(void (*fn)(void *arg, unsigned proc), void *arg)
{
    bh_call_hook = fn;
    bh_call_hook_arg = arg;
}
#endif

/* bh_call_begin -- see bench_int.h, "Overlap". */
void bh_call_begin(struct bh_run *r)
{
    if (r->overlap)
        pthread_mutex_unlock(&r->mu);
#if UBJ_TEST_HOOKS
    if (bh_call_hook != NULL)
        bh_call_hook(bh_call_hook_arg,
                     bh_thread_proc != NULL ? bh_thread_proc->id : UINT_MAX);
#endif
}

/* bh_call_end -- see bench_int.h. */
void bh_call_end(struct bh_run *r)
{
    if (r->overlap)
        pthread_mutex_lock(&r->mu);
}

/* bh_count -- one file-system operation of `kind`. */
void bh_count(struct bh_run *r, enum bh_opkind kind)
{
    if ((unsigned)kind >= BH_OP_NR)
        kind = BH_OP_OTHER;
    uint64_t *c = r->timed ? r->opcount : r->init_opcount;
    __atomic_fetch_add(&c[kind], 1, __ATOMIC_RELAXED);
    if (r->cfg->op_cpu_ns != 0)
        ubj_clock_advance(r->clock, r->cfg->op_cpu_ns);
    if (r->timed && r->trace != NULL)
        bh_trace_op(r->trace, kind, ubj_clock_now(r->clock) - r->t0);
}

/* bh_count_bytes -- application bytes moved. */
void bh_count_bytes(struct bh_run *r, uint64_t written, uint64_t nread)
{
    if (!r->timed)
        return;
    __atomic_fetch_add(&r->app_wr, written, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->app_rd, nread, __ATOMIC_RELAXED);
}

/* bh_rand -- xorshift64* (Vigna 2016). */
uint64_t bh_rand(struct bh_proc *p)
{
    uint64_t x = p->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    p->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* bh_seed_of -- a nonzero stream seed for stream `i` (splitmix64). */
static uint64_t bh_seed_of(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return z != 0 ? z : 1;
}

/* ---- kv parameters ------------------------------------------------------- */

/* kv_find -- the value of key in kv (length in *len), or NULL. */
static const char *kv_find(const char *kv, const char *key, size_t *len)
{
    size_t klen = strlen(key);
    const char *s = kv;
    while (s != NULL && *s != '\0') {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n > klen && strncmp(s, key, klen) == 0 && s[klen] == '=') {
            *len = n - klen - 1;
            return s + klen + 1;
        }
        s = end ? end + 1 : NULL;
    }
    return NULL;
}

/* bh_kv_str -- a string parameter. */
int bh_kv_str(struct bh_run *r, const char *key, const char *dflt, char *buf,
              size_t size)
{
    size_t len;
    const char *v = kv_find(r->prm.kv, key, &len);
    if (v == NULL) {
        v = dflt;
        len = strlen(dflt);
    }
    if (len + 1 > size)
        return ubj_set_error(-EINVAL, "bench %s: value of %s too long",
                             r->wl->name, key);
    memcpy(buf, v, len);
    buf[len] = '\0';
    return 0;
}

/* bh_kv_u64 -- a numeric parameter (suffixes k, m, g: KiB, MiB, GiB). */
int bh_kv_u64(struct bh_run *r, const char *key, uint64_t dflt, uint64_t *out)
{
    size_t len;
    const char *v = kv_find(r->prm.kv, key, &len);
    *out = dflt;
    if (v == NULL)
        return 0;
    char tmp[32];
    if (len == 0 || len >= sizeof tmp)
        return ubj_set_error(-EINVAL, "bench %s: bad value for %s",
                             r->wl->name, key);
    memcpy(tmp, v, len);
    tmp[len] = '\0';
    char *end;
    errno = 0;
    unsigned long long x = strtoull(tmp, &end, 10);    /* 010 is ten */
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1024;
    else if (*end == 'm' || *end == 'M')
        mul = 1024 * 1024;
    else if (*end == 'g' || *end == 'G')
        mul = 1024ull * 1024 * 1024;
    if (mul != 1)
        end++;
    if (errno != 0 || end == tmp || *end != '\0' || tmp[0] < '0' || tmp[0] > '9' ||
        x > UINT64_MAX / mul)
        return ubj_set_error(-EINVAL, "bench %s: %s=%s is not a number",
                             r->wl->name, key, tmp);
    *out = (uint64_t)x * mul;
    return 0;
}

/* kv_key_later -- does key (klen bytes) appear again in the pairs from s? */
static bool kv_key_later(const char *s, const char *key, size_t klen)
{
    while (s != NULL && *s != '\0') {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n > klen && s[klen] == '=' && strncmp(s, key, klen) == 0)
            return true;
        s = end ? end + 1 : NULL;
    }
    return false;
}

/* bh_kv_check -- refuse unknown keys, keys given twice and pairs without
 * '='. */
int bh_kv_check(struct bh_run *r, const char *const *known)
{
    const char *s = r->prm.kv;
    while (s != NULL && *s != '\0') {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        if (n == 0 || (end != NULL && end[1] == '\0'))
            return ubj_set_error(-EINVAL, "bench %s: an empty parameter (a comma "
                                 "too many)", r->wl->name);
        const char *eq = memchr(s, '=', n);
        bool ok = false;
        for (unsigned i = 0; eq != NULL && known[i] != NULL; i++)
            ok |= strlen(known[i]) == (size_t)(eq - s) &&
                  strncmp(known[i], s, (size_t)(eq - s)) == 0;
        if (!ok)
            return ubj_set_error(-EINVAL, "bench %s: unknown parameter '%.*s'",
                                 r->wl->name, (int)n, s);
        if (end != NULL && kv_key_later(end + 1, s, (size_t)(eq - s)))
            return ubj_set_error(-EINVAL, "bench %s: parameter '%.*s' given twice",
                                 r->wl->name, (int)(eq - s), s);
        s = end ? end + 1 : NULL;
    }
    return 0;
}

/* bh_params_end -- the parameters are read and checked: a probe stops. */
int bh_params_end(struct bh_run *r)
{
    return r->kv_probe ? -ECANCELED : 0;
}

/* ---- workloads ----------------------------------------------------------- */

extern const struct bh_workload bh_wl_postmark, bh_wl_varmail,
    bh_wl_fileserver, bh_wl_webserver, bh_wl_oltp, bh_wl_iozone, bh_wl_ganger,
    bh_wl_sqlite, bh_wl_andrew;

const struct bh_workload *const bh_workloads[] = {
    &bh_wl_postmark, &bh_wl_varmail, &bh_wl_fileserver, &bh_wl_webserver,
    &bh_wl_oltp, &bh_wl_iozone, &bh_wl_ganger, &bh_wl_sqlite, &bh_wl_andrew,
    NULL
};

/* bh_workload_find -- look a workload up by name. */
const struct bh_workload *bh_workload_find(const char *name)
{
    for (unsigned i = 0; name != NULL && bh_workloads[i] != NULL; i++)
        if (strcmp(bh_workloads[i]->name, name) == 0)
            return bh_workloads[i];
    return NULL;
}

/* bh_workload_check_kv -- the kv keys against the workload's, before a run:
 * its init runs on a probe run (no file system, no clock) and stops at its
 * bh_params_end, which returns -ECANCELED on a probe once the parameters
 * pass. */
int bh_workload_check_kv(const char *name, const char *kv)
{
    const struct bh_workload *wl = bh_workload_find(name);
    if (wl == NULL)
        return ubj_set_error(-EINVAL, "bench: unknown workload '%s'",
                             name ? name : "(none)");
    if (kv == NULL || *kv == '\0' || wl->init == NULL)
        return 0;
    struct bh_run *r = calloc(1, sizeof *r);
    if (r == NULL)
        return ubj_set_error(-ENOMEM, "bench: out of memory");
    static const struct bh_config probe_cfg;
    r->cfg = &probe_cfg;
    r->wl = wl;
    r->kv_probe = true;
    int rc = 0;
    if (strlen(kv) >= sizeof r->kvbuf)
        rc = ubj_set_error(-EINVAL, "bench: kv string too long");
    if (rc == 0) {
        strcpy(r->kvbuf, kv);
        r->prm.kv = r->kvbuf;
        rc = wl->init(r);
        if (wl->fini != NULL)
            wl->fini(r);
    }
    free(r);
    return rc == -ECANCELED || rc >= 0 ? 0 : rc;
}

/* bh_trace_check -- load a trace as a replay would; its workload and
 * parameters. */
int bh_trace_check(const char *path, char *workload, size_t len,
                   struct bh_params *params)
{
    struct bh_trace_in *in = NULL;
    int rc = bh_trace_load(path, &in);
    if (rc < 0)
        return rc;
    if (bh_workload_find(in->workload) == NULL)
        rc = ubj_set_error(-EINVAL, "trace %s:2: unknown workload '%s'", path,
                           in->workload);
    if (rc == 0 && workload != NULL && len > 0)
        snprintf(workload, len, "%s", in->workload);
    if (rc == 0 && params != NULL) {
        *params = in->params;
        params->kv = NULL;
    }
    bh_trace_in_free(in);
    return rc;
}

/* ---- set-up and tear-down ------------------------------------------------ */

/* run_check_cfg -- workload, mode and parameters; fills r->prm. */
static int run_check_cfg(struct bh_run *r, const char *wname,
                         const struct bh_params *in)
{
    const struct bh_config *cfg = r->cfg;
    r->wl = bh_workload_find(wname);
    if (r->wl == NULL) {
        char known[256] = "";
        for (unsigned i = 0; bh_workloads[i] != NULL; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     i ? ", " : "", bh_workloads[i]->name);
        return ubj_set_error(-EINVAL, "bench: unknown workload '%s' (known: %s)",
                             wname ? wname : "(none)", known);
    }
    if (ubj_mode_lookup(cfg->mode) == NULL) {
        char known[256];
        return ubj_set_error(-EINVAL, "bench: unknown mode '%s' (known: %s)",
                             cfg->mode ? cfg->mode : "(none)",
                             bh_known_modes(known, sizeof known));
    }
    r->prm = *in;
    if (r->prm.procs == 0)
        r->prm.procs = r->wl->default_procs ? r->wl->default_procs : 1;
    if (r->prm.ops == 0)
        r->prm.ops = r->wl->default_ops;
    if (r->prm.scale == 0)
        r->prm.scale = 1.0;
    if (r->prm.seed == 0)
        r->prm.seed = 1;
    if (r->prm.kv != NULL) {
        if (strlen(r->prm.kv) >= sizeof r->kvbuf)
            return ubj_set_error(-EINVAL, "bench: kv string too long");
        strcpy(r->kvbuf, r->prm.kv);
        r->prm.kv = r->kvbuf;
    }
    if (!(r->prm.scale > 0 && r->prm.scale <= 1e6) || !isfinite(r->prm.scale))
        return ubj_set_error(-EINVAL, "bench: scale %g out of range", r->prm.scale);
    if (r->prm.procs > BH_MAX_PROCS)
        return ubj_set_error(-EINVAL, "bench: %u processes (at most %u)",
                             r->prm.procs, BH_MAX_PROCS);
    if (cfg->clock != UBJ_CLOCK_VIRTUAL && cfg->clock != UBJ_CLOCK_REAL)
        return ubj_set_error(-EINVAL, "bench: bad clock kind %d", (int)cfg->clock);
    return 0;
}

/* run_nvm_dir -- a fresh directory for the region (/dev/shm preferred),
 * named after the process (ubjfs-bench-PID-XXXXXX) so that leftovers can
 * be told apart. */
static int run_nvm_dir(struct bh_run *r)
{
    const char *bases[] = { "/dev/shm", getenv("TMPDIR"), "/tmp" };
    for (unsigned i = 0; i < 3; i++) {
        if (bases[i] == NULL || access(bases[i], W_OK) != 0)
            continue;
        snprintf(r->nvm_dir, sizeof r->nvm_dir, "%s/ubjfs-bench-%d-XXXXXX",
                 bases[i], (int)getpid());
        if (mkdtemp(r->nvm_dir) != NULL) {
            snprintf(r->nvm_path, sizeof r->nvm_path, "%s/region", r->nvm_dir);
            return 0;
        }
    }
    r->nvm_dir[0] = '\0';
    return ubj_set_error(-errno, "bench: no temporary directory for the NVM "
                         "region: %s", strerror(errno));
}

/* run_open_device -- the device stack and its clock. */
static int run_open_device(struct bh_run *r)
{
    const struct bh_config *cfg = r->cfg;
    int rc = ubj_clock_create(cfg->clock, &r->clock);
    if (rc < 0)
        return rc;
    struct ubj_spec_opts so = { .clock = r->clock,
                                .nblocks = cfg->image_blocks ? cfg->image_blocks
                                                             : BH_DEF_IMAGE };
    rc = ubj_bdev_open_spec(cfg->device ? cfg->device : "ram", NULL, &so, &r->dev);
    if (rc < 0)
        return rc;
    r->model = ubj_model_find(r->dev);
    return 0;
}

/* run_now -- the file system's timestamps on the virtual clock: a fixed
 * epoch (2026-01-01) plus the clock, so that relatime's decisions -- and
 * with them which inode blocks a run dirties -- repeat run after run. */
static void run_now(void *ctx, struct timespec *ts)
{
    struct bh_run *r = ctx;
    uint64_t ns = ubj_clock_now(r->clock);
    ts->tv_sec = (time_t)(1767225600 + ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
}

/* run_format_mount -- mkfs in the mode, the region, the mount.  On the
 * virtual clock the image is reproducible (uuid and hash seed from the
 * run's seed) and timestamps come from the clock (run_now). */
static int run_format_mount(struct bh_run *r)
{
    const struct bh_config *cfg = r->cfg;
    bool leaf_file = cfg->device != NULL && strstr(cfg->device, "file:") != NULL;
    bool virt = cfg->clock == UBJ_CLOCK_VIRTUAL;
    struct ubj_format_opts fo = { .mode = cfg->mode,
                                  .flags = leaf_file ? 0u : UBJ_FORMAT_ZEROED };
    if (virt) {
        uint64_t a = bh_seed_of(r->prm.seed, BH_MAX_PROCS + 2);
        uint64_t b = bh_seed_of(r->prm.seed, BH_MAX_PROCS + 3);
        memcpy(fo.uuid, &a, 8);
        memcpy(fo.uuid + 8, &b, 8);
    }
    int rc = ubj_format(r->dev, &fo);
    if (rc < 0)
        return rc;
    struct ubj_config mc = {
        .mode = cfg->mode,
        .cache_blocks = cfg->cache_blocks ? cfg->cache_blocks : BH_DEF_CACHE,
        .commit_interval_ms = cfg->commit_interval_ms ? cfg->commit_interval_ms
                                                      : BH_DEF_COMMIT_MS,
        .flags = virt ? UBJ_MOUNT_NO_TIMER : 0u,
        .now = virt ? run_now : NULL,
        .now_ctx = r,
        .readahead = cfg->readahead,
    };
    if (bh_nvm(cfg->mode)) {
        rc = run_nvm_dir(r);
        if (rc < 0)
            return rc;
        mc.nvm_path = r->nvm_path;
        mc.nvm_flags = UBJ_NVM_FORMAT;
        mc.nvm_profile = cfg->nvm_profile ? cfg->nvm_profile : BH_DEFAULT_NVM_PROFILE;
    }
    return ubj_mount(r->dev, &mc, &r->fs);
}

/* run_check_line -- ubj_check's report: keep the first line. */
static void run_check_line(void *ctx, const char *line)
{
    char *first = ctx;
    if (first[0] == '\0')
        snprintf(first, 200, "%s", line);
}

/* run_check -- BH_F_CHECK: fsck the unmounted image. */
static int run_check(struct bh_run *r)
{
    char first[200] = "";
    int c = ubj_check(r->dev, 0, run_check_line, first);
    if (c == UBJ_CHECK_CLEAN)
        return 0;
    return ubj_set_error(-EUCLEAN, "bench %s: fsck after the run: %s",
                         r->wl->name, first[0] ? first : "not clean");
}

/* run_teardown -- unmount, close, remove the region; keeps the first error. */
static int run_teardown(struct bh_run *r, int rc)
{
    if (r->wl != NULL && r->wl->fini != NULL && r->fs != NULL)
        r->wl->fini(r);
    if (r->fs != NULL) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", ubj_errormsg());
        int urc = ubj_unmount(r->fs);
        r->fs = NULL;
        if (rc == 0)
            rc = urc;
        else
            ubj_set_error(rc, "%s", msg);
        if (rc == 0 && (r->cfg->flags & BH_F_CHECK))
            rc = run_check(r);
    }
    ubj_bdev_destroy(r->dev);
    ubj_clock_put(r->clock);
    if (r->nvm_dir[0] != '\0') {
        unlink(r->nvm_path);
        rmdir(r->nvm_dir);
    }
    if (r->trace != NULL) {
        int trc = bh_trace_close(r->trace);
        if (rc == 0)
            rc = trc;
    }
    free(r->procs);
    free(r->lat);
    free(r->wbuf);
    free(r->rbuf);
    pthread_mutex_destroy(&r->mu);
    return rc;
}

/* bh_fs_error -- -ENOSPC becomes "the file set does not fit". */
int bh_fs_error(struct bh_run *r, int rc, const char *what)
{
    if (rc != -ENOSPC || strstr(ubj_errormsg(), "raise image_blocks") != NULL)
        return rc;
    struct ubj_statfs sf;
    ubj_statfs_get(r->fs, &sf);
    return ubj_set_error(-ENOSPC, "bench %s: %s: the image is full (%llu of %llu "
                         "data blocks, %llu of %llu inodes used): the file set "
                         "needs more than %llu KiB; raise image_blocks or lower "
                         "the scale", r->wl->name, what,
                         (unsigned long long)(sf.blocks - sf.bfree),
                         (unsigned long long)sf.blocks,
                         (unsigned long long)(sf.files - sf.ffree),
                         (unsigned long long)sf.files,
                         (unsigned long long)sf.blocks * 4);
}

/* ---- the timed phase ----------------------------------------------------- */

/* run_charge_nvm -- add the NVM model's new time to the clock, when the
 * device has no timed model: with one, the NVM model runs on the model's
 * clock (ubjm_prepare) and its time has passed already. */
static void run_charge_nvm(struct bh_run *r)
{
    struct ubj_fs_stats st;
    if (r->model != NULL)
        return;
    ubj_fs_stats_get(r->fs, &st);
    if (st.nvm_model_ns > r->nvm_seen) {
        ubj_clock_advance(r->clock, st.nvm_model_ns - r->nvm_seen);
        r->nvm_seen = st.nvm_model_ns;
    }
}

/* run_tick -- one timer tick as a background thread would do it. */
static int run_tick(struct bh_run *r)
{
    int rc = ubj_tick_flags(r->fs, UBJ_TICK_BACKGROUND);
    run_charge_nvm(r);
    return rc;
}

/* run_record -- one completed transaction's response time. [mu] */
static int run_record(struct bh_run *r, uint64_t lat)
{
    if (r->nlat == r->caplat) {
        uint64_t cap = r->caplat ? r->caplat * 2 : 1024;
        uint64_t *n = realloc(r->lat, cap * sizeof *n);
        if (n == NULL)
            return ubj_set_error(-ENOMEM, "bench: out of memory");
        r->lat = n;
        r->caplat = cap;
    }
    r->lat[r->nlat++] = lat;
    return 0;
}

/* run_progress -- report now and then. */
static void run_progress(struct bh_run *r, uint64_t done)
{
    if (r->cfg->progress != NULL && done % BH_PROGRESS_EVERY == 0)
        r->cfg->progress(r->cfg->progress_arg, done, r->prm.ops);
}

/* run_txn -- one transaction of p starting now (arrival as given). */
static int run_txn(struct bh_run *r, struct bh_proc *p, uint64_t arrival)
{
    uint64_t seq = r->issued++;
    uint64_t start = ubj_clock_now(r->clock);
    if (++r->inflight > r->inflight_max)
        r->inflight_max = r->inflight;
    int rc = r->wl->op(r, p);
    r->inflight--;
    if (rc < 0)
        return bh_fs_error(r, rc, "transaction");
    if (rc == 1) {               /* nothing more to do: not a transaction */
        r->issued--;
        return 1;
    }
    run_charge_nvm(r);
    uint64_t end = ubj_clock_now(r->clock);
    /* the virtual clock's process cannot have waited for another (one
     * thread: "now" is when it could start); on the real clock the wait
     * for the run's mutex -- another process's transaction, serialised,
     * or its bookkeeping -- is part of the response time */
    bool from_arrival = r->replay != NULL || r->cfg->clock == UBJ_CLOCK_REAL;
    uint64_t base = from_arrival ? arrival : (arrival > start ? arrival : start);
    int rrc = run_record(r, end - base);
    if (rrc < 0)
        return rrc;
    if (r->trace != NULL)
        bh_trace_txn(r->trace, seq, p->id, arrival - r->t0, start - r->t0,
                     end - r->t0);
    p->done++;
    p->end_ns = end;
    if (p->phase < BH_PHASES_MAX)
        p->phase_end_ns[p->phase] = end;
    run_progress(r, r->nlat);
    return rc;
}

/* run_next -- the ready process with the smallest ready time, or NULL. */
static struct bh_proc *run_next(struct bh_run *r, const bool *fin)
{
    struct bh_proc *best = NULL;
    for (unsigned i = 0; i < r->prm.procs; i++)
        if (!fin[i] && (best == NULL || r->procs[i].ready_ns < best->ready_ns))
            best = &r->procs[i];
    return best;
}

/* run_ticks_until -- run every tick due at or before t (waiting for each). */
static int run_ticks_until(struct bh_run *r, uint64_t *next_tick, uint64_t t,
                           uint64_t interval)
{
    while (*next_tick <= t) {
        ubj_clock_wait_until(r->clock, *next_tick);
        int rc = run_tick(r);
        if (rc < 0)
            return rc;
        *next_tick += interval;
    }
    return 0;
}

/* run_closed_virtual -- the discrete-event closed loop (one thread). */
static int run_closed_virtual(struct bh_run *r)
{
    uint64_t interval = (uint64_t)(r->cfg->commit_interval_ms ?
                                   r->cfg->commit_interval_ms : BH_DEF_COMMIT_MS) * 1000000u;
    uint64_t next_tick = r->t0 + interval;
    bool *fin = calloc(r->prm.procs, sizeof *fin);
    if (fin == NULL)
        return ubj_set_error(-ENOMEM, "bench: out of memory");
    int rc = 0;
    while (rc == 0 && (r->prm.ops == 0 || r->issued < r->prm.ops)) {
        struct bh_proc *p = run_next(r, fin);
        if (p == NULL)
            break;
        uint64_t now = ubj_clock_now(r->clock);
        rc = run_ticks_until(r, &next_tick, p->ready_ns > now ? p->ready_ns : now,
                             interval);
        if (rc < 0)
            break;
        ubj_clock_wait_until(r->clock, p->ready_ns);
        rc = run_txn(r, p, p->ready_ns);
        if (rc == 1) {
            fin[p->id] = true;
            rc = 0;
        }
        p->ready_ns = ubj_clock_now(r->clock) + bh_exp(p, (double)r->prm.think_ns);
    }
    free(fin);
    return rc;
}

/* run_replay_virtual -- open loop: the trace's transactions at their
 * recorded arrival times, whatever the completions. */
static int run_replay_virtual(struct bh_run *r)
{
    const struct bh_trace_in *in = r->replay;
    uint64_t interval = (uint64_t)(r->cfg->commit_interval_ms ?
                                   r->cfg->commit_interval_ms : BH_DEF_COMMIT_MS) * 1000000u;
    uint64_t next_tick = r->t0 + interval;
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < in->n; i++) {
        const struct bh_trace_txn *t = &in->t[i];
        if (t->proc >= r->prm.procs)
            return ubj_set_error(-EINVAL, "bench: trace transaction %llu names "
                                 "process %u of %u", (unsigned long long)i,
                                 t->proc, r->prm.procs);
        uint64_t arrival = r->t0 + t->arrival_ns;
        uint64_t now = ubj_clock_now(r->clock);
        rc = run_ticks_until(r, &next_tick, arrival > now ? arrival : now, interval);
        if (rc < 0)
            break;
        ubj_clock_wait_until(r->clock, arrival);
        uint64_t before = 0;
        for (unsigned k = 0; k < BH_OP_NR; k++)
            before += r->opcount[k];
        rc = run_txn(r, &r->procs[t->proc], arrival);
        uint64_t after = 0;
        for (unsigned k = 0; k < BH_OP_NR; k++)
            after += r->opcount[k];
        if (rc >= 0 && after - before != t->nops)
            return ubj_set_error(-EINVAL, "bench: trace replay diverged at "
                                 "transaction %llu (%llu operations, the trace "
                                 "has %u)", (unsigned long long)i,
                                 (unsigned long long)(after - before), t->nops);
        rc = rc == 1 ? 0 : rc;
    }
    return rc;
}

struct run_thread {
    struct bh_run *r;
    struct bh_proc *p;
    uint8_t *rbuf;                 /* this process's read buffer */
    pthread_t tid;
};

/* run_thread_fail -- keep a real-clock thread's first error. [mu] */
static void run_thread_fail(struct bh_run *r, int rc)
{
    if (r->error == 0) {
        r->error = rc;
        snprintf(r->errmsg, sizeof r->errmsg, "%s", ubj_errormsg());
    }
}

/* run_thread_main -- one closed-loop process on the real clock. */
static void *run_thread_main(void *arg)
{
    struct run_thread *th = arg;
    struct bh_run *r = th->r;
    struct bh_proc *p = th->p;
    bh_thread_proc = p;
    bh_thread_rbuf = th->rbuf;
    for (;;) {
        ubj_clock_wait_until(r->clock, p->ready_ns);
        pthread_mutex_lock(&r->mu);
        if (r->error != 0 || (r->prm.ops != 0 && r->issued >= r->prm.ops)) {
            pthread_mutex_unlock(&r->mu);
            break;
        }
        int rc = run_txn(r, p, p->ready_ns);
        if (rc < 0)
            run_thread_fail(r, rc);
        pthread_mutex_unlock(&r->mu);
        if (rc != 0)
            break;
        p->ready_ns = ubj_clock_now(r->clock) + bh_exp(p, (double)r->prm.think_ns);
    }
    bh_thread_proc = NULL;
    bh_thread_rbuf = NULL;
    return NULL;
}

/* run_closed_real -- one thread per process. */
static int run_closed_real(struct bh_run *r)
{
    struct run_thread *th = calloc(r->prm.procs, sizeof *th);
    if (th == NULL)
        return ubj_set_error(-ENOMEM, "bench: out of memory");
    r->overlap = r->wl->serial == NULL && !(r->cfg->flags & BH_F_SERIAL);
    unsigned started = 0;
    for (; started < r->prm.procs; started++) {
        th[started].r = r;
        th[started].p = &r->procs[started];
        /* untouched pages cost nothing: a process reading 2 KiB uses 2 KiB */
        th[started].rbuf = malloc(BH_IO_MAX);
        if (th[started].rbuf == NULL ||
            pthread_create(&th[started].tid, NULL, run_thread_main, &th[started]) != 0) {
            free(th[started].rbuf);
            break;
        }
    }
    if (started < r->prm.procs) {
        pthread_mutex_lock(&r->mu);
        run_thread_fail(r, ubj_set_error(-EAGAIN, "bench: cannot start thread %u",
                                         started));
        pthread_mutex_unlock(&r->mu);
    }
    for (unsigned i = 0; i < started; i++) {
        pthread_join(th[i].tid, NULL);
        free(th[i].rbuf);
    }
    free(th);
    r->overlap = false;
    if (r->error != 0)
        return ubj_set_error(r->error, "%s", r->errmsg);
    return 0;
}

/* ---- metrics --------------------------------------------------------------- */

/* cmp_u64 -- qsort order. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* pct -- nearest-rank percentile of the sorted v[0..n). */
static uint64_t pct(const uint64_t *v, uint64_t n, unsigned p)
{
    if (n == 0)
        return 0;
    uint64_t k = (n * p + 99) / 100;
    return v[k ? k - 1 : 0];
}

/* run_latencies -- mean, p50, p99, max. */
static void run_latencies(struct bh_run *r, struct bh_result *out)
{
    qsort(r->lat, r->nlat, sizeof *r->lat, cmp_u64);
    long double sum = 0;
    for (uint64_t i = 0; i < r->nlat; i++)
        sum += r->lat[i];
    out->lat_mean_ns = r->nlat ? (uint64_t)(sum / r->nlat) : 0;
    out->lat_p50_ns = pct(r->lat, r->nlat, 50);
    out->lat_p99_ns = pct(r->lat, r->nlat, 99);
    out->lat_max_ns = r->nlat ? r->lat[r->nlat - 1] : 0;
}

/* run_users -- task elapsed time per process and the mean, and the mean
 * time of each phase (bh_result.user_ns, phase_ns). */
static void run_users(struct bh_run *r, struct bh_result *out)
{
    const char *const *ph = r->wl->phases;
    unsigned np = 0;
    while (ph != NULL && np < BH_PHASES_MAX && ph[np] != NULL)
        np++;
    out->nphases = np ? np : 1;
    for (unsigned k = 0; k < out->nphases; k++)
        snprintf(out->phase_name[k], sizeof out->phase_name[k], "%s", np ? ph[k] : "all");
    long double sum = 0, psum[BH_PHASES_MAX] = { 0 };
    for (unsigned i = 0; i < r->prm.procs; i++) {
        const struct bh_proc *p = &r->procs[i];
        uint64_t u = p->end_ns > r->t0 ? p->end_ns - r->t0 : 0, prev = r->t0;
        if (i < BH_USERS_MAX)
            out->user_ns[i] = u;
        sum += u;
        for (unsigned k = 0; k < out->nphases; k++) {
            uint64_t e = np == 0 ? p->end_ns : p->phase_end_ns[k];
            if (e < prev)
                e = prev;    /* no transaction of the phase: it took 0 */
            psum[k] += e - prev;
            prev = e;
        }
    }
    unsigned n = r->prm.procs ? r->prm.procs : 1;
    out->user_mean_ns = (uint64_t)(sum / n);
    for (unsigned k = 0; k < out->nphases; k++)
        out->phase_ns[k] = (uint64_t)(psum[k] / n);
}

struct run_base {
    struct ubj_fs_stats fs;
    struct ubj_bdev_stats dev;
};

/* run_snapshot -- counters at the start of the timed phase. */
static int run_snapshot(struct bh_run *r, struct run_base *b)
{
    ubj_fs_stats_get(r->fs, &b->fs);
    ubj_bdev_stats_get(r->dev, &b->dev);
    r->nvm_seen = b->fs.nvm_model_ns;
    if (r->model != NULL)
        return ubj_model_stats_reset(r->model);
    return 0;
}

/* run_metrics -- fill *out from the deltas since *b. */
static void run_metrics(struct bh_run *r, const struct run_base *b,
                        uint64_t t_end, uint64_t sync_ns, struct bh_result *out)
{
    const struct bh_config *cfg = r->cfg;
    struct ubj_fs_stats s;
    struct ubj_bdev_stats d;
    ubj_fs_stats_get(r->fs, &s);
    ubj_bdev_stats_get(r->dev, &d);
    snprintf(out->workload, sizeof out->workload, "%s", r->wl->name);
    snprintf(out->mode, sizeof out->mode, "%s", cfg->mode);
    snprintf(out->device, sizeof out->device, "%s", cfg->device ? cfg->device : "ram");
    snprintf(out->nvm_profile, sizeof out->nvm_profile, "%s",
             !bh_nvm(cfg->mode) ? "-" :
             cfg->nvm_profile ? cfg->nvm_profile : BH_DEFAULT_NVM_PROFILE);
    out->cache_blocks = cfg->cache_blocks ? cfg->cache_blocks : BH_DEF_CACHE;
    out->procs = r->prm.procs;
    out->ops = r->nlat;
    out->elapsed_ns = t_end - r->t0;
    out->ops_per_s = out->elapsed_ns ? (double)out->ops * 1e9 / (double)out->elapsed_ns : 0;
    run_latencies(r, out);
    out->bytes_data = s.bytes_data - b->fs.bytes_data;
    out->bytes_metadata = s.bytes_metadata - b->fs.bytes_metadata;
    out->bytes_journal = s.bytes_journal - b->fs.bytes_journal;
    out->bytes_checkpoint = s.bytes_checkpoint - b->fs.bytes_checkpoint;
    out->bytes_device = d.bytes_written - b->dev.bytes_written;
    out->nvm_bytes = s.nvm_bytes - b->fs.nvm_bytes;
    out->dev_flushes = s.dev_flushes - b->fs.dev_flushes;
    if (r->model != NULL) {
        struct ubj_model_stats ms;
        if (ubj_model_stats_get(r->model, &ms) == 0)
            out->energy_dev_j = ms.energy_j;
    }
    out->energy_nvm_j = s.nvm_model_energy_j - b->fs.nvm_model_energy_j;
    uint64_t hits = s.cache_hits - b->fs.cache_hits;
    uint64_t look = hits + (s.cache_misses - b->fs.cache_misses);
    out->hit_ratio = look ? (double)hits / (double)look : 0;
    memcpy(out->opcount, r->opcount, sizeof out->opcount);
    memcpy(out->init_opcount, r->init_opcount, sizeof out->init_opcount);
    out->sync_ns = sync_ns;
    out->app_bytes_written = r->app_wr;
    out->app_bytes_read = r->app_rd;
    out->commits = s.commits - b->fs.commits;
    out->checkpoints = s.checkpoints - b->fs.checkpoints;
    out->txn_overlap_max = r->inflight_max;
    out->read_wait_locked_ns = s.read_wait_locked_ns - b->fs.read_wait_locked_ns;
    out->read_wait_unlocked_ns = s.read_wait_unlocked_ns - b->fs.read_wait_unlocked_ns;
    out->victim_wait_ns = s.victim_wait_ns - b->fs.victim_wait_ns;
    out->dev_reads = d.reads - b->dev.reads;
    out->dev_writes = d.writes - b->dev.writes;
    out->dev_flush_reqs = d.flushes - b->dev.flushes;
    out->ra_blocks = s.ra_blocks - b->fs.ra_blocks;
    out->ra_used = s.ra_used - b->fs.ra_used;
    out->ra_late = s.ra_late - b->fs.ra_late;
    run_users(r, out);
}

/* run_setup -- buffers, processes, trace. */
static int run_setup(struct bh_run *r)
{
    r->wbuf = malloc(BH_IO_MAX);
    r->rbuf = malloc(BH_IO_MAX);
    r->procs = calloc(r->prm.procs, sizeof *r->procs);
    if (r->wbuf == NULL || r->rbuf == NULL || r->procs == NULL)
        return ubj_set_error(-ENOMEM, "bench: out of memory");
    for (size_t i = 0; i < BH_IO_MAX; i++)
        r->wbuf[i] = (uint8_t)(i * 131u + (i >> 12) * 7u + 1u);
    for (unsigned i = 0; i < r->prm.procs; i++) {
        r->procs[i].id = i;
        r->procs[i].rng = bh_seed_of(r->prm.seed, i);
    }
    r->setup.id = r->prm.procs;
    r->setup.rng = bh_seed_of(r->prm.seed, BH_MAX_PROCS + 1);
    if (r->cfg->trace_out != NULL)
        return bh_trace_create(r->cfg->trace_out, r->wl->name, &r->prm, &r->trace);
    return 0;
}

/* run_untimed -- device, mount, the workload's file set, sync, drain. */
static int run_untimed(struct bh_run *r)
{
    int rc = run_setup(r);
    if (rc == 0)
        rc = run_open_device(r);
    if (rc == 0)
        rc = run_format_mount(r);
    if (rc == 0 && r->wl->init != NULL) {
        rc = r->wl->init(r);
        if (rc < 0)
            rc = bh_fs_error(r, rc, "setup");
    }
    if (rc == 0)
        rc = ubj_sync(r->fs);
    if (rc == 0 && r->model != NULL)
        rc = ubj_model_wait_idle(r->model);
    if (rc == 0 && (r->cfg->flags & BH_F_COLD))
        rc = ubj_drop_caches(r->fs);
    return rc;
}

/* run_timed -- the timed phase and the metrics. */
static int run_timed(struct bh_run *r, struct bh_result *out)
{
    struct run_base b;
    int rc = run_snapshot(r, &b);
    if (rc < 0)
        return rc;
    r->t0 = ubj_clock_now(r->clock);
    for (unsigned i = 0; i < r->prm.procs; i++)
        r->procs[i].ready_ns = r->t0;
    r->timed = true;
    if (r->replay != NULL)
        rc = run_replay_virtual(r);
    else if (r->cfg->clock == UBJ_CLOCK_VIRTUAL)
        rc = run_closed_virtual(r);
    else
        rc = run_closed_real(r);
    r->timed = false;
    if (rc < 0)
        return rc;
    uint64_t t_sync = ubj_clock_now(r->clock), t_end = t_sync;
    if (!(r->cfg->flags & BH_F_NO_FINAL_SYNC)) {
        rc = ubj_sync(r->fs);
        if (rc < 0)
            return rc;
        run_charge_nvm(r);
        t_end = ubj_clock_now(r->clock);
    }
    if (r->cfg->progress != NULL)
        r->cfg->progress(r->cfg->progress_arg, r->nlat, r->prm.ops);
    run_metrics(r, &b, t_end, t_end - t_sync, out);
    return 0;
}

/* bh_note_need -- see bench_int.h. */
void bh_note_need(struct bh_run *r, uint64_t blocks)
{
    if (blocks > r->need_blocks)
        r->need_blocks = blocks;
}

/* run_once -- one complete run; *need: the image a file set would have
 * needed (blocks), when it did not fit */
static int run_once(const struct bh_config *cfg, struct bh_result *out,
                    uint64_t *need)
{
    memset(out, 0, sizeof *out);
    struct bh_run *r = calloc(1, sizeof *r);
    if (r == NULL)
        return ubj_set_error(-ENOMEM, "bench: out of memory");
    r->cfg = cfg;
    pthread_mutex_init(&r->mu, NULL);
    struct bh_trace_in *in = NULL;
    int rc = 0;
    if (cfg->trace_in != NULL) {
        if (cfg->clock != UBJ_CLOCK_VIRTUAL)
            rc = ubj_set_error(-EINVAL, "bench: trace replay runs on the "
                               "virtual clock only");
        if (rc == 0)
            rc = bh_trace_load(cfg->trace_in, &in);
        if (rc == 0)
            rc = run_check_cfg(r, in->workload, &in->params);
        r->replay = in;
    } else {
        rc = run_check_cfg(r, cfg->workload, &cfg->params);
    }
    if (rc == 0)
        rc = run_untimed(r);
    if (rc == 0)
        rc = run_timed(r, out);
    rc = run_teardown(r, rc);
    bh_trace_in_free(in);
    *need = r->need_blocks;
    free(r);
    return rc;
}

/* run_fits_ram -- may an image of `blocks` live in RAM (the device's leaf
 * unless it names a file)?  Half the memory free now at most: a file set
 * of gigabytes must not drive the machine into the OOM killer. */
static bool run_fits_ram(const struct bh_config *cfg, uint64_t blocks)
{
    if (cfg->device != NULL && strstr(cfg->device, "file:") != NULL)
        return true;
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return true;
    return blocks <= (uint64_t)pages / 2 * (uint64_t)psz / 4096;
}

/* bh_run -- one complete run.  With no image size given, a file set that
 * does not fit the default image is run again, once, on an image half as
 * large again as it needs (the same every time: runs stay repeatable),
 * if that image fits in half the free memory. */
int bh_run(const struct bh_config *cfg, struct bh_result *out)
{
    if (cfg == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "bench: no config or result");
    uint64_t need = 0;
    int rc = run_once(cfg, out, &need);
    if (rc == -ENOSPC && cfg->image_blocks == 0 && need > BH_DEF_IMAGE &&
        cfg->trace_in == NULL) {
        struct bh_config big = *cfg;
        big.image_blocks = need + need / 2 + 16384;
        if (!run_fits_ram(cfg, big.image_blocks))
            return ubj_set_error(-ENOSPC, "bench %s: the file set needs an image of "
                                 "%llu MiB, more than half the free memory: lower "
                                 "the scale or the file sizes", cfg->workload,
                                 (unsigned long long)(big.image_blocks / 256));
        rc = run_once(&big, out, &need);
    }
    return rc;
}
