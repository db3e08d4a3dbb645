/*
 * engine.c -- the crash explorer's engine: it records a workload at both
 * persistence layers, enumerates the crash states of every persistence
 * point, and checks each one with the oracle (oracle.c).
 *
 * One exploration (cx_explore) of workload W in mode M:
 *   0. M's promises and needs, from the mode registry, choose the
 *      exploration and the oracle (ex_promises).
 *   1. base: a RAM image formatted in M (mode ubj: and a region), the
 *      setup ops applied, unmounted: the starting pair, kept in memory.
 *   2. reference: for each j = 0..n, the base with ops 1..j applied and
 *      every open file closed, snapshotted (cx_tree): the state after j.
 *   3. recording: the base on a recording device (src/dev/record.c); in
 *      mode ubj the region under the shadow (src/nvm/shadow.c).  Markers
 *      (nvm points, device writes, device flushes) at each op's begin and
 *      end give, for any crash instant, lo = the state the last
 *      acknowledged fsync/fdatasync/sync made durable and hi = the ops
 *      begun: recovery must show some state j in [lo, hi].
 *   4. states, under the persistence model cfg->persist:
 *      - journal modes, none, volatile cache: every flush epoch e: the
 *        writes before flush e, then of the epoch's writes: every prefix
 *        (littlefs's "cut after the n-th write"), a prefix whose last
 *        write is torn at 512-byte sectors, every subset when at most k,
 *        else seeded random subsets (each write dropped, whole or torn);
 *      - journal modes, none, write-through: every cut k (just before
 *        the k-th write completes): the k completed writes, then the
 *        writes in flight treated as an epoch's (ex_cuts; a serial run
 *        has one in flight: dropped, whole, torn); states equal to one
 *        already checked with the same bounds are skipped;
 *      - ubj: the workload re-run once per NVM persistence point p,
 *        captured right before drain p: the durable region, everything,
 *        every subset of the unpersisted 64-byte lines when at most k,
 *        else random subsets, lines persisted partially (8-byte words),
 *        and the shadow's random mixes; each with the device as the epoch
 *        then open leaves it (nothing, all, prefixes, torn writes) --
 *        write-through: as the capture found it (every completed write;
 *        none is in flight at a fence of a serial run) -- and after the
 *        last point the epochs (write-through: cuts) opened since.
 *   5. each state: ubj_check of the crash image is clean; mount
 *      (recovery) succeeds; the tree matches a state j in [lo, hi]
 *      (data exact in ubj/journal/none; ordered: later versions of the
 *      same cell allowed; writeback: data not compared), free counts
 *      included (orphans reclaimed); cx_usable; unmount; ubj_check clean.
 *      A mode promising metadata integrity only (or cfg->oracle
 *      CX_ORACLE_INTEGRITY) is checked by the integrity oracle instead:
 *      fsck of the crash state finds leaks only, mount reclaims them, the
 *      tree keeps what was made durable and untouched since and a name of
 *      each begun rename (integrity.c), cx_usable, fsck clean after.
 *      Every dcrash-th state is also crashed during its recovery (the
 *      recovery recorded the same way, cut at its flushes -- write-
 *      through: its cuts -- or fences) and must recover to the same
 *      states.
 *
 * Determinism: mounts have no timer, so every re-run of a workload makes
 * the same requests; a re-run that sees another number of persistence
 * points or another result for an op aborts the exploration (-EPROTO).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cache/cache.h"  /* ubj_cache_test_break_nowait */
#include "crash/crash.h"
#include "txn/handle.h"   /* ubj_handle_test_break */
#include "txn/sync.h"     /* ubj_sync_test_break */
#include "txn/journal.h"
#include "txn/ubj.h"
#include "ubjfs/mode.h"
#include "ubjfs/model.h"  /* ubj_bdev_open_spec: cfg->stack */
#include "ubjfs/nvm.h"
#include "ubjfs/ubjfs.h"
#include "util/util.h"

#define EX_BS UBJ_BLOCK_SIZE
#define EX_LINE UBJ_NVM_LINE
#define EX_MAX_SEEN 4096u
#define EX_MAX_REGION_STATES 48u

struct ex_mark {
    uint64_t d, w, f;        /* nvm points, device writes, device flushes */
};

/* One crash state: how to build the device image, the region image, the
 * range of acceptable states and a description. */
struct ex_state {
    struct ubj_bdev *rec;            /* recording to cut */
    uint64_t epoch;                  /* volatile: the flush epoch; write-
                                        through (cut): the cut */
    int cut;                         /* 1: a write-through cut */
    const struct ubj_rec_choice *ch;
    uint64_t nch;
    const uint8_t *region;           /* NULL: not mode ubj */
    unsigned lo, hi;
    unsigned dhi;                    /* ops whose data may show (ordered): hi,
                                        or the first crash's hi when nested */
    char desc[192];
};

struct ex {
    const struct cx_config *cfg;
    const struct cx_workload *w;
    struct cx_result *res;
    int nvm, log, data;              /* ex_promises */
    int integrity, fsync_all;        /* ex_promises: the integrity oracle */
    bool atomic;                     /* ex_promises: torn only between blocks */
    uint8_t *base, *base_region;
    size_t region_size;
    char reg_run[256], reg_crash[256], reg_ref[256], reg_nest[256], reg_nest2[256];
    struct cx_tree *ref[CX_MAX_OPS + 1];
    long long refrc[CX_MAX_OPS];
    struct ex_mark beg[CX_MAX_OPS], end[CX_MAX_OPS];
    uint64_t points;                 /* nvm points of an unarmed run */
    struct ubj_bdev *rec;            /* the latest run's recording */
    struct ubj_bdev *top;            /* cfg->stack over rec (owns it), or NULL */
    struct ubj_nvm_shadow *sh;
    struct ex_mark cap;
    struct ubj_bdev *img;            /* crash images are built here */
    uint64_t rng;
    uint64_t seen[EX_MAX_SEEN];
    unsigned nseen;
    uint64_t nstate;
    int stop;
    int nested;                      /* checking a crash of a recovery */
};

/* ---- test-only broken variants -------------------------------------------------- */

#if UBJ_TEST_HOOKS   /* a test build only (CMake option UBJ_TEST_HOOKS) */

static enum ubjm_break ex_ubj_break;
static enum ubj_jbreak ex_j_break;
static bool ex_h_break;   /* handle-no-wait: the commit barrier does not wait */
static bool ex_c_break;   /* cache-no-wait: write-back does not wait for its writes */
static unsigned ex_s_break;   /* sync-*: UBJ_SYNC_BREAK_* (src/txn/sync.h) */

#define EXB_NO UBJM_BREAK_NONE, UBJ_JBREAK_NONE   /* neither ubj nor journal */
static const struct {
    const char *name;
    enum ubjm_break ub;
    enum ubj_jbreak jb;
    bool hb, cb;
    unsigned sb;
} ex_breaks[] = {
    { "none", EXB_NO, false, false, 0 },
    { "ubj-data-flush", UBJM_BREAK_DATA_FLUSH, UBJ_JBREAK_NONE, false, false, 0 },
    { "ubj-commit-persist", UBJM_BREAK_COMMIT_PERSIST, UBJ_JBREAK_NONE, false, false, 0 },
    { "ubj-early-free", UBJM_BREAK_EARLY_FREE, UBJ_JBREAK_NONE, false, false, 0 },
    { "ubj-ckpt-flush", UBJM_BREAK_CKPT_FLUSH, UBJ_JBREAK_NONE, false, false, 0 },
    { "journal-commit-flush", UBJM_BREAK_NONE, UBJ_JBREAK_COMMIT_FLUSH, false, false, 0 },
    { "journal-ckpt-flush", UBJM_BREAK_NONE, UBJ_JBREAK_CKPT_FLUSH, false, false, 0 },
    { "handle-no-wait", EXB_NO, true, false, 0 },
    { "cache-no-wait", EXB_NO, false, true, 0 },
    { "sync-no-init", EXB_NO, false, false, UBJ_SYNC_BREAK_INIT },
    { "sync-no-nullify", EXB_NO, false, false, UBJ_SYNC_BREAK_NULLIFY },
    { "sync-no-rename", EXB_NO, false, false, UBJ_SYNC_BREAK_RENAME },
    { "sync-no-split", EXB_NO, false, false, UBJ_SYNC_BREAK_SPLIT },
};

/* cx_set_break -- select a broken variant for the recorded runs. */
int cx_set_break(const char *name)
{
    for (size_t i = 0; i < sizeof ex_breaks / sizeof ex_breaks[0]; i++)
        if (strcmp(name, ex_breaks[i].name) == 0) {
            ex_ubj_break = ex_breaks[i].ub;
            ex_j_break = ex_breaks[i].jb;
            ex_h_break = ex_breaks[i].hb;
            ex_c_break = ex_breaks[i].cb;
            ex_s_break = ex_breaks[i].sb;
            return 0;
        }
    return ubj_set_error(-EINVAL, "unknown broken variant '%s' (%s)", name,
                         cx_break_names());
}

/* cx_break_get -- the selected variant's name. */
const char *cx_break_get(void)
{
    for (size_t i = 0; i < sizeof ex_breaks / sizeof ex_breaks[0]; i++)
        if (ex_breaks[i].ub == ex_ubj_break && ex_breaks[i].jb == ex_j_break &&
            ex_breaks[i].hb == ex_h_break && ex_breaks[i].cb == ex_c_break &&
            ex_breaks[i].sb == ex_s_break)
            return ex_breaks[i].name;
    return "none";
}

/* cx_break_applies -- whether the selected variant changes what mode
 * `name` does: the ubj-* variants the mode with an NVM region, the
 * journal-* ones the modes with a log, the sync-* ones the modes that
 * promise metadata integrity only, handle-no-wait, cache-no-wait (and
 * none) every mode. */
bool cx_break_applies(const char *name)
{
    const struct ubj_mode_info *m = ubj_mode_lookup(name);
    if (m == NULL)
        return false;
    if (ex_ubj_break != UBJM_BREAK_NONE)
        return m->needs == UBJ_MODE_NEEDS_NVM;
    if (ex_j_break != UBJ_JBREAK_NONE)
        return m->needs == UBJ_MODE_NEEDS_LOG;
    if (ex_s_break != 0)
        return m->promises.meta == UBJ_MODE_META_INTEGRITY;
    return true;
}

/* cx_break_names -- every name cx_set_break takes. */
const char *cx_break_names(void)
{
    return "none ubj-data-flush ubj-commit-persist ubj-early-free ubj-ckpt-flush "
           "journal-commit-flush journal-ckpt-flush handle-no-wait cache-no-wait "
           "sync-no-init sync-no-nullify sync-no-rename sync-no-split";
}

/* ex_breaking -- switch the selected variant on (1) or everything off (0). */
static void ex_breaking(int on)
{
    ubjm_test_break(on ? ex_ubj_break : UBJM_BREAK_NONE);
    ubj_journal_test_break(on ? ex_j_break : UBJ_JBREAK_NONE);
    ubj_handle_test_break(on && ex_h_break);
    ubj_cache_test_break_nowait(on && ex_c_break);
    ubj_sync_test_break(on ? ex_s_break : 0);
}
#else   /* a plain build: no broken variant to switch */
#define ex_breaking(on) ((void)0)
#endif /* UBJ_TEST_HOOKS */

/* ---- the watchdog ----------------------------------------------------------------- */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t wd_once = PTHREAD_ONCE_INIT;
static time_t wd_deadline;               /* [wd_lock] 0: idle */
static char wd_what[320];                /* [wd_lock] */

/* wd_thread -- abort with the state when one takes too long (a hang). */
static void *wd_thread(void *arg)
{
    (void)arg;
    for (;;) {
        sleep(1);
        pthread_mutex_lock(&wd_lock);
        if (wd_deadline != 0 && time(NULL) > wd_deadline) {
            fprintf(stderr, "crashtest: HANG: no progress for the timeout in %s\n", wd_what);
            abort();
        }
        pthread_mutex_unlock(&wd_lock);
    }
    return NULL;
}

/* wd_start -- the watchdog thread, once per process. */
static void wd_start(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, wd_thread, NULL) == 0)
        pthread_detach(t);
}

/* wd_arm -- expect progress within s seconds (0: disarm). */
static void wd_arm(unsigned s, const char *what)
{
    if (s != 0)
        pthread_once(&wd_once, wd_start);
    pthread_mutex_lock(&wd_lock);
    wd_deadline = s ? time(NULL) + (time_t)s : 0;
    snprintf(wd_what, sizeof wd_what, "%s", what ? what : "");
    pthread_mutex_unlock(&wd_lock);
}

/* ---- helpers ------------------------------------------------------------------------ */

/* ex_rand -- splitmix64. */
static uint64_t ex_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* cx_config_default -- the defaults. */
void cx_config_default(struct cx_config *c)
{
    memset(c, 0, sizeof *c);
    const struct ubj_mode_info *m = NULL;   /* the first of the default set */
    ubj_mode_list(UBJ_MODE_F_CRASH_DEFAULT, UBJ_MODE_ORDER_REGISTRY, &m, 1);
    c->mode = m ? m->name : NULL;
    c->k = 4;
    c->samples = 6;
    c->seed = 1;
    c->nblocks = 256;
    c->cache = 64;
    c->timeout_s = 60;
}

/* ex_op_hash -- fold one operation into h (its fields, not its padding). */
static uint32_t ex_op_hash(uint32_t h, const struct cx_op *op)
{
    uint64_t nums[4] = { (uint64_t)op->kind, op->off, op->len, (uint64_t)op->keep_size };
    h = ubj_crc32c(h, nums, sizeof nums);
    h = ubj_crc32c(h, op->a, strlen(op->a) + 1);
    return ubj_crc32c(h, op->b, strlen(op->b) + 1);
}

/* ex_workload_hash -- a hash of the workload's operations: the random
 * states depend on what the workload is, not on its name, so that a
 * reproducer file replays the crash point it records. */
static uint32_t ex_workload_hash(const struct cx_workload *w)
{
    uint32_t h = 0;
    for (unsigned i = 0; i < w->nsetup; i++)
        h = ex_op_hash(h, &w->setup[i]);
    h = ubj_crc32c(h, "begin", 5);
    for (unsigned i = 0; i < w->nops; i++)
        h = ex_op_hash(h, &w->ops[i]);
    return h;
}

/* ex_now -- the file system's clock in an exploration: one fixed time
 * (2026-01-01), so that timestamps and relatime's choices -- and with them
 * the writes, stores and crash states -- are the same run after run. */
static void ex_now(void *ctx, struct timespec *ts)
{
    (void)ctx;
    ts->tv_sec = 1767225600;
    ts->tv_nsec = 0;
}

/* ex_mount_cfg -- the mount configuration of mode M on region `path`. */
static struct ubj_config ex_mount_cfg(const struct ex *x, const char *path, unsigned nf)
{
    struct ubj_config c = { .mode = x->cfg->mode, .cache_blocks = x->cfg->cache,
                            .flags = UBJ_MOUNT_NO_TIMER, .now = ex_now,
                            /* the integrity oracle: leaks reclaimed at mount,
                             * also for a mode that does not promise it */
                            .unclean = x->integrity ? UBJ_UNCLEAN_RECLAIM
                                                    : UBJ_UNCLEAN_DEFAULT };
    if (x->nvm) {
        c.nvm_path = path;
        c.nvm_flags = nf;
    }
    return c;
}

/* ex_file_put -- write a whole host file. */
static int ex_file_put(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return ubj_set_error(-errno, "%s: %s", path, strerror(errno));
    ssize_t n = write(fd, buf, len);
    int e = errno;
    close(fd);
    return n == (ssize_t)len ? 0 : ubj_set_error(-(n < 0 ? e : EIO), "%s: short write", path);
}

/* ex_file_get -- read a whole host file (malloc'd). */
static int ex_file_get(const char *path, uint8_t **buf, size_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return ubj_set_error(-errno, "%s: %s", path, strerror(errno));
    off_t end = lseek(fd, 0, SEEK_END);
    *len = end > 0 ? (size_t)end : 0;
    *buf = malloc(*len ? *len : 1);
    ssize_t n = *buf && end >= 0 ? pread(fd, *buf, *len, 0) : -1;
    close(fd);
    return n == (ssize_t)*len ? 0 : ubj_set_error(-EIO, "%s: short read", path);
}

/* ex_ram_from -- a RAM device holding buf (nblocks blocks). */
static int ex_ram_from(const struct ex *x, const uint8_t *buf, struct ubj_bdev **out)
{
    int rc = ubj_bdev_ram_create(x->cfg->nblocks, out);
    if (rc == 0 && (rc = ubj_bdev_write(*out, 0, x->cfg->nblocks, buf)) < 0)
        ubj_bdev_destroy(*out);
    return rc;
}

/* ex_mark_now -- the markers at this instant. */
static void ex_mark_now(const struct ex *x, struct ubj_bdev *rec, struct ex_mark *m)
{
    m->d = x->nvm ? ubj_nvm_shadow_points(x->sh) : 0;
    m->w = ubj_bdev_record_writes(rec);
    m->f = ubj_bdev_record_flushes(rec);
}

/* ex_is_sync -- an op that acknowledges durability. */
static int ex_is_sync(enum cx_opkind k)
{
    return k == CX_FSYNC || k == CX_FDATASYNC || k == CX_SYNC || k == CX_OVERLAP;
}

/* ex_bounds -- lo/hi for an instant after D nvm drains and F flushes took
 * effect, before anything later (write-through: F counts completed
 * writes, not flushes). */
static void ex_bounds(const struct ex *x, uint64_t D, uint64_t F, unsigned *lo,
                      unsigned *hi)
{
    int w = x->cfg->persist == CX_PERSIST_THROUGH;
    *lo = *hi = 0;
    for (unsigned i = 0; i < x->w->nops; i++) {
        if (x->beg[i].d <= D && (w ? x->beg[i].w : x->beg[i].f) <= F)
            *hi = i + 1;
        if (ex_is_sync(x->w->ops[i].kind) && x->refrc[i] == 0 &&
            x->end[i].d <= D && (w ? x->end[i].w : x->end[i].f) <= F)
            *lo = i + 1;
    }
}

/* ex_image -- state s's device image onto target, under its model. */
static int ex_image(const struct ex_state *s, struct ubj_bdev *target)
{
    return s->cut ? ubj_bdev_record_crash_cut(s->rec, s->epoch, s->ch, s->nch, target)
                  : ubj_bdev_record_crash(s->rec, s->epoch, s->ch, s->nch, target);
}

/* ---- base, reference, recorded runs --------------------------------------------------- */

/* ex_base -- format, set up, unmount; keep image and region. */
static int ex_base(struct ex *x)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    int rc = ubj_bdev_ram_create(x->cfg->nblocks, &dev);
    if (rc < 0)
        return rc;
    struct ubj_format_opts fo = { .mode = x->cfg->mode, .flags = UBJ_FORMAT_ZEROED,
                                  .journal_blocks = x->log ? 64 : 0 };
    memcpy(fo.uuid, "ubjfs-crashtest!", 16);   /* reproducible (hash seed) */
    rc = ubj_format(dev, &fo);
    struct ubj_config mc = ex_mount_cfg(x, x->reg_run, UBJ_NVM_FORMAT);
    if (x->nvm)
        unlink(x->reg_run);
    if (rc == 0 && (rc = ubj_mount(dev, &mc, &fs)) == 0) {
        struct cx_opens o = { .n = 0 };
        for (unsigned i = 0; rc == 0 && i < x->w->nsetup; i++) {
            long long r = cx_apply(fs, &x->w->setup[i], i + 1, &o);
            if (r < 0) {
                char line[160];
                cx_op_format(&x->w->setup[i], line, sizeof line);
                rc = ubj_set_error((int)r, "setup op '%s' failed: %lld", line, r);
            }
        }
        cx_close_all(fs, &o);
        int u = ubj_unmount(fs);
        rc = rc ? rc : u;
    }
    x->base = malloc((size_t)x->cfg->nblocks * EX_BS);
    if (rc == 0 && x->base == NULL)
        rc = -ENOMEM;
    if (rc == 0)
        rc = ubj_bdev_read(dev, 0, x->cfg->nblocks, x->base);
    if (rc == 0 && x->nvm)
        rc = ex_file_get(x->reg_run, &x->base_region, &x->region_size);
    ubj_bdev_destroy(dev);
    return rc;
}

/* ex_reference -- the state after each prefix (opens closed). */
static int ex_reference(struct ex *x)
{
    int rc = 0;
    for (unsigned j = 0; rc == 0 && j <= x->w->nops; j++) {
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        if ((rc = ex_ram_from(x, x->base, &dev)) < 0)
            break;
        if (x->nvm)
            rc = ex_file_put(x->reg_ref, x->base_region, x->region_size);
        struct ubj_config mc = ex_mount_cfg(x, x->reg_ref, 0);
        if (rc == 0 && (rc = ubj_mount(dev, &mc, &fs)) == 0) {
            struct cx_opens o = { .n = 0 };
            for (unsigned i = 0; i < j; i++) {
                long long r = cx_apply(fs, &x->w->ops[i], cx_ver(i), &o);
                if (i == j - 1)
                    x->refrc[i] = r < 0 ? r : 0;
            }
            cx_close_all(fs, &o);
            rc = cx_tree_take(fs, &x->ref[j]);
            int u = ubj_unmount(fs);
            rc = rc ? rc : u;
        }
        ubj_bdev_destroy(dev);
    }
    return rc;
}

/* ex_on_capture -- the armed nvm point: note the device's markers. */
static void ex_on_capture(void *ctx)
{
    struct ex *x = ctx;
    ex_mark_now(x, x->rec, &x->cap);
}

/* ex_declare -- the recorder tells the mode what the persistence model
 * assumes, for a mode that consults the device's guarantees (sync: a
 * flush after its synchronous writes only on a volatile cache): the
 * volatile model a volatile write cache, --atomic-block whole blocks.
 * Only for the integrity-only modes: the others flush regardless, and
 * their explored states stay as they were. */
static void ex_declare(struct ex *x, struct ubj_bdev *rec)
{
    if (!x->integrity)
        return;
    if (x->cfg->persist != CX_PERSIST_THROUGH)
        rec->guarantees |= UBJ_BDEV_VOLATILE_CACHE;
    if (x->atomic)
        rec->guarantees |= UBJ_BDEV_ATOMIC_BLOCK;
}

/* ex_run -- the recorded run, armed at nvm point `arm` (0: none); the
 * recording stays in x->rec. */
static int ex_run(struct ex *x, uint64_t arm, int first)
{
    struct ubj_bdev *ram;
    struct ubj_fs *fs;
    ubj_bdev_destroy(x->top != NULL ? x->top : x->rec);
    x->rec = x->top = NULL;
    int rc = ex_ram_from(x, x->base, &ram);
    if (rc == 0 && (rc = ubj_bdev_record_create(ram, &x->rec)) < 0)
        ubj_bdev_destroy(ram);
    if (rc == 0)
        ex_declare(x, x->rec);
    if (rc == 0 && x->cfg->stack != NULL &&
        (rc = ubj_bdev_open_spec(x->cfg->stack, x->rec, NULL, &x->top)) < 0) {
        ubj_bdev_destroy(x->rec);
        x->rec = NULL;
    }
    if (rc == 0 && x->nvm)
        rc = ex_file_put(x->reg_run, x->base_region, x->region_size);
    if (rc < 0)
        return rc;
    x->res->runs++;
    struct ubj_config mc = ex_mount_cfg(x, x->reg_run, 0);
    if (x->nvm) {
        ubj_nvm_shadow_arm(x->sh, arm, ex_on_capture, x);
        ubj_nvm_shadow_install(x->sh);
    }
    ex_breaking(1);
    rc = ubj_mount(x->top != NULL ? x->top : x->rec, &mc, &fs);
    ubj_nvm_shadow_install(NULL);
    if (rc < 0) {
        ex_breaking(0);
        return rc;
    }
    struct cx_opens o = { .n = 0 };
    for (unsigned i = 0; rc == 0 && i < x->w->nops; i++) {
        struct ex_mark b, e;
        ex_mark_now(x, x->rec, &b);
        long long r = cx_apply(fs, &x->w->ops[i], cx_ver(i), &o);
        ex_mark_now(x, x->rec, &e);
        if ((r < 0 ? r : 0) != x->refrc[i]) {
            char line[160];
            cx_op_format(&x->w->ops[i], line, sizeof line);
            rc = ubj_set_error(-EPROTO, "op %u '%s' returned %lld, the reference %lld",
                               i + 1, line, r, x->refrc[i]);
        }
        if (first) {
            x->beg[i] = b;
            x->end[i] = e;
        } else if (memcmp(&b, &x->beg[i], sizeof b) || memcmp(&e, &x->end[i], sizeof e)) {
            rc = ubj_set_error(-EPROTO, "op %u made other requests on a re-run", i + 1);
        }
    }
    cx_close_all(fs, &o);
    int u = ubj_unmount(fs);
    ex_breaking(0);
    rc = rc ? rc : u;
    if (rc == 0 && x->nvm) {
        uint64_t p = ubj_nvm_shadow_points(x->sh);
        if (first)
            x->points = p;
        else if (p != x->points)
            rc = ubj_set_error(-EPROTO, "a re-run made %llu nvm points, not %llu",
                               (unsigned long long)p, (unsigned long long)x->points);
    }
    return rc;
}

/* ---- checking one state ------------------------------------------------------------------ */

struct ex_fsck {
    char first[200];
    char corrupt[200];       /* the first line that is no leak */
    int lines;
};

/* ex_fsck_report -- keep the first problem line (notes are not problems)
 * and the first corruption line. */
static void ex_fsck_report(void *ctx, const char *line)
{
    struct ex_fsck *c = ctx;
    if (strncmp(line, "note: ", 6) == 0)
        return;
    if (c->lines++ == 0)
        snprintf(c->first, sizeof c->first, "%s", line);
    if (c->corrupt[0] == '\0' && strncmp(line, "leak: ", 6) != 0)
        snprintf(c->corrupt, sizeof c->corrupt, "%s", line);
}

/* ex_fsck_corrupt -- what the first corruption line of a crash state
 * breaks of the integrity promise (I2), for the failure message. */
static const char *ex_fsck_corrupt(const char *line)
{
    return strstr(line, "which is free") ? "a name points to an uninitialised inode"
         : strstr(line, "used twice") ? "a block belongs to two files"
         : strstr(line, "in use but marked free") ? "an in-use block or inode is "
                                                    "marked free"
         : "corruption";
}

/* ex_fsck -- ubj_check of img (with the region at `region`, if any);
 * leaks_ok: leaks are allowed (the integrity oracle on a crash state),
 * else the image must be clean. */
static int ex_fsck(struct ex *x, const char *region, int leaks_ok, char *why, size_t len)
{
    struct ex_fsck c = { .lines = 0, .corrupt = "" };
    struct ubj_bdev *dev = x->img, *ov = NULL, *nov = NULL;
    int rc = 0;
    if (region != NULL) {
        rc = ubj_bdev_cow_create(x->img, UBJ_COW_BORROW, &ov);
        if (rc == 0 && (rc = ubj_nvm_overlay_create(ov, region, &nov)) < 0)
            ubj_bdev_destroy(ov);
        dev = nov;
    }
    if (rc < 0) {
        snprintf(why, len, "fsck cannot open the crash state: %s", ubj_errormsg());
        return -1;
    }
    struct ubj_check_result res;
    int r = ubj_check_ex(dev, 0, ex_fsck_report, &c, &res);
    ubj_bdev_destroy(nov);
    if (r == UBJ_CHECK_CLEAN && c.lines == 0)
        return 0;
    if (leaks_ok && r != UBJ_CHECK_OPERROR && res.corrupt == 0)
        return 0;
    if (leaks_ok && r != UBJ_CHECK_OPERROR)
        snprintf(why, len, "integrity: fsck finds more than leaks on the crash state: "
                 "%s (%lu problems, %lu leaks; first: %s)", ex_fsck_corrupt(c.corrupt),
                 res.problems, res.leaks, c.corrupt);
    else
        snprintf(why, len, "fsck: %d (%d problems; first: %s)", r, c.lines, c.first);
    return -1;
}

/* ex_data -- the data rule for candidate state j when ops up to hi may
 * have begun: ordered allows zeros if one of ops j+1..hi truncates. */
static int ex_data(const struct ex *x, unsigned j, unsigned hi)
{
    if (x->data != CX_DATA_ORDERED)
        return x->data;
    for (unsigned i = j; i < hi; i++)
        if (x->w->ops[i].kind == CX_TRUNCATE)
            return CX_DATA_ORDERED | CX_DATA_ZERO_OK;
    return CX_DATA_ORDERED;
}

/* ex_match -- the recovered tree against [lo, hi]: 0 and the matching
 * range in *jmin..*jmax, else -1 with why. */
static int ex_match(struct ex *x, const struct cx_tree *got, unsigned lo, unsigned hi,
                    unsigned dhi, unsigned *jmin, unsigned *jmax, char *why, size_t len)
{
    uint32_t hv = dhi ? cx_ver(dhi - 1) : x->w->nsetup;
    char tmp[320];
    int found = 0;
    for (unsigned j = lo; j <= hi; j++) {
        if (!cx_tree_match(got, x->ref[j], ex_data(x, j, dhi), hv, 1, tmp, sizeof tmp))
            continue;
        if (!found++)
            *jmin = j;
        *jmax = j;
    }
    if (found)
        return 0;
    for (unsigned j = lo; j-- > 0;)
        if (cx_tree_match(got, x->ref[j], ex_data(x, j, dhi), hv, 1, tmp, sizeof tmp)) {
            snprintf(why, len, "durability: recovered the state after op %u, but op %u "
                     "(an acknowledged fsync/fdatasync/sync) needs at least op %u", j, lo, lo);
            return -1;
        }
    char tlo[200] = "";
    if (lo != hi) {
        cx_tree_match(got, x->ref[lo], ex_data(x, lo, dhi), hv, 1, tlo, sizeof tlo);
        cx_tree_match(got, x->ref[hi], ex_data(x, hi, dhi), hv, 1, tmp, sizeof tmp);
        snprintf(why, len, "the recovered tree is no state between op %u and op %u; "
                 "against op %u: %.150s; against op %u: %.150s", lo, hi, lo, tlo, hi, tmp);
    } else {
        cx_tree_match(got, x->ref[hi], ex_data(x, hi, dhi), hv, 1, tmp, sizeof tmp);
        snprintf(why, len, "the recovered tree is not the state after op %u: %.300s", hi, tmp);
    }
    return -1;
}

/* ex_integrity -- the integrity oracle's tree rules (integrity.c) for the
 * recovered tree: 0 and the bounds unchanged in *jmin..*jmax (a crash of
 * this recovery is held to the same facts), else -1 with why. */
static int ex_integrity(struct ex *x, const struct cx_tree *got, unsigned lo,
                        unsigned hi, unsigned *jmin, unsigned *jmax, char *why,
                        size_t len)
{
    const struct cx_integrity q = { .w = x->w, .ref = x->ref, .refrc = x->refrc,
                                    .lo = lo, .hi = hi, .fsync_all = x->fsync_all };
    *jmin = lo;
    *jmax = hi;
    return cx_integrity_match(&q, got, why, len) ? 0 : -1;
}

/* ex_recover -- mount img (recovery), match, use, unmount, fsck.  0 and
 * the matching range, or -1 with why. */
static int ex_recover(struct ex *x, const char *region, unsigned lo, unsigned hi,
                      unsigned dhi, unsigned *jmin, unsigned *jmax, char *why, size_t len)
{
    struct ubj_fs *fs;
    struct ubj_config mc = ex_mount_cfg(x, region, 0);
    int rc = ubj_mount(x->img, &mc, &fs);
    if (rc < 0) {
        snprintf(why, len, "recovery (mount) failed: %d %s", rc, ubj_errormsg());
        return -1;
    }
    struct cx_tree *t = NULL;
    int bad = 0;
    if ((rc = cx_tree_take(fs, &t)) < 0) {
        snprintf(why, len, "the recovered tree cannot be read: %d %s", rc, ubj_errormsg());
        bad = 1;
    } else if (x->integrity ? ex_integrity(x, t, lo, hi, jmin, jmax, why, len) < 0
                            : ex_match(x, t, lo, hi, dhi, jmin, jmax, why, len) < 0) {
        bad = 1;
    } else if ((rc = cx_usable(fs)) < 0) {
        snprintf(why, len, "%s", ubj_errormsg());
        bad = 1;
    }
    cx_tree_free(t);
    rc = ubj_unmount(fs);
    if (!bad && rc < 0) {
        snprintf(why, len, "unmount after recovery: %d %s", rc, ubj_errormsg());
        bad = 1;
    }
    if (!bad && ex_fsck(x, NULL, 0, why, len) < 0) {
        size_t l = strlen(why);
        snprintf(why + l, len - l, " -- after recovery and unmount");
        bad = 1;
    }
    return bad ? -1 : 0;
}

/* ex_build -- the state's device image into x->img and region into path. */
static int ex_build(struct ex *x, const struct ex_state *s, const char *path)
{
    int rc = ex_image(s, x->img);
    if (rc == 0 && s->region != NULL)
        rc = ex_file_put(path, s->region, x->region_size);
    return rc;
}

/* ex_fail -- record a failed state. */
static void ex_fail(struct ex *x, const struct ex_state *s, const char *why)
{
    x->res->failures++;
    if (x->res->failures == 1) {
        snprintf(x->res->first.point, sizeof x->res->first.point, "%s%s",
                 x->nested ? "crash during the recovery of: " : "", s->desc);
        snprintf(x->res->first.why, sizeof x->res->first.why, "%s", why);
    }
    if (x->cfg->verbose)
        fprintf(stderr, "crashtest: FAIL %s %s: %s: %s\n", x->cfg->mode, x->w->name,
                s->desc, why);
    if (x->cfg->stop_at_first)
        x->stop = 1;
}

static void ex_nested(struct ex *x, const struct ex_state *s, unsigned jmin, unsigned jmax);

/* ex_check -- check one state (and maybe crash its recovery). */
static void ex_check(struct ex *x, const struct ex_state *s)
{
    char why[448] = "", what[320];
    unsigned jmin = 0, jmax = 0;
    if (x->stop)
        return;
    snprintf(what, sizeof what, "mode %s workload %s state %s", x->cfg->mode,
             x->w->name, s->desc);
    wd_arm(x->cfg->timeout_s, what);
    x->res->states++;
    x->nstate++;
    const char *region = s->region ? (x->nested ? x->reg_nest2 : x->reg_crash) : NULL;
    int rc = ex_build(x, s, region);
    if (rc < 0) {
        snprintf(why, sizeof why, "cannot build the crash image: %s", ubj_errormsg());
        ex_fail(x, s, why);
    } else if (ex_fsck(x, region, x->integrity, why, sizeof why) < 0 ||
               ex_recover(x, region, s->lo, s->hi, s->dhi ? s->dhi : s->hi, &jmin, &jmax,
                          why, sizeof why) < 0) {
        ex_fail(x, s, why);
    } else if (!x->nested && x->cfg->dcrash && x->nstate % x->cfg->dcrash == 0) {
        ex_nested(x, s, jmin, jmax);
    }
    wd_arm(0, NULL);
}

/* ex_seen -- 1 if this (image-describing) hash was checked at this point. */
static int ex_seen(struct ex *x, uint64_t h)
{
    for (unsigned i = 0; i < x->nseen; i++)
        if (x->seen[i] == h)
            return 1;
    if (x->nseen < EX_MAX_SEEN)
        x->seen[x->nseen++] = h;
    return 0;
}

/* ex_choice_hash -- a hash of a choice vector (kept parts only). */
static uint64_t ex_choice_hash(const struct ubj_rec_choice *c, uint64_t n)
{
    uint64_t h = 0x5eed;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = c[i].keep == UBJ_REC_DROP ? 0 : c[i].keep == UBJ_REC_WHOLE ? 1
                   : c[i].keep == UBJ_REC_PREFIX ? 2 + ((uint64_t)c[i].sectors << 2)
                   : 3 + (c[i].seed << 2);
        h = (h ^ v ^ (i << 48)) * 0x100000001B3ull;
    }
    return h;
}

/* ---- device choices of one epoch ----------------------------------------------------------- */

struct ex_vecs {
    struct ubj_rec_choice *v;    /* nvec vectors of c choices */
    unsigned nvec, cap;
    uint64_t c;
    char (*desc)[96];
};

/* ex_vec_add -- append a vector (unless one equal was added).  0/-ENOMEM. */
static int ex_vec_add(struct ex_vecs *s, const struct ubj_rec_choice *v, const char *desc)
{
    for (unsigned i = 0; i < s->nvec; i++)
        if (ex_choice_hash(s->v + i * s->c, s->c) == ex_choice_hash(v, s->c))
            return 0;
    if (s->nvec == s->cap) {
        unsigned cap = s->cap ? 2 * s->cap : 16;
        struct ubj_rec_choice *n = realloc(s->v, cap * (s->c ? s->c : 1) * sizeof *n);
        char (*d)[96] = n ? realloc(s->desc, cap * sizeof *d) : NULL;
        if (n)
            s->v = n;
        if (d == NULL)
            return -ENOMEM;
        s->desc = d;
        s->cap = cap;
    }
    memcpy(s->v + s->nvec * s->c, v, s->c * sizeof *v);
    snprintf(s->desc[s->nvec++], 96, "%s", desc);
    if (getenv("UBJ_TRACE_CRASH"))   /* debugging aid: every device state */
        fprintf(stderr, "cx: state: %s\n", desc);
    return 0;
}

/* ex_sectors -- 512-byte sectors of write i of the recording. */
static uint32_t ex_sectors(struct ubj_bdev *rec, uint64_t i)
{
    uint32_t count = 1;
    ubj_bdev_record_write_info(rec, i, NULL, &count, NULL);
    return count * (EX_BS / 512);
}

/*
 * ex_vecs_of -- the device states of c writes left open (an epoch's, or a
 * cut's in flight): write i of them is idx[i], or first + i with idx NULL:
 * prefixes (all when `all_prefixes`, else none and all), torn prefixes,
 * all writes but one (lost whole, or torn at random sectors), a
 * multi-block write of which only the first or the last block arrived
 * (the others all did), subsets
 * (every one when c <= k, else samples random).  With cfg->atomic_block
 * no write is torn inside a block: torn prefixes end at a block boundary
 * (a one-block write is never torn) and writes are never kept sector by
 * sector.
 */
static int ex_vecs_of(struct ex *x, struct ubj_bdev *rec, uint64_t first,
                      const uint64_t *idx, uint64_t c, int all_prefixes, struct ex_vecs *s)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    struct ubj_rec_choice *v = calloc(c ? c : 1, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    char d[96];
    int rc = 0;
    for (uint64_t n = 0; rc == 0 && n <= c; n++) {      /* cut after the n-th write */
        if (!all_prefixes && n != 0 && n != c)
            continue;
        for (uint64_t i = 0; i < c; i++)
            v[i].keep = i < n ? UBJ_REC_WHOLE : UBJ_REC_DROP;
        snprintf(d, sizeof d, "cut after write %llu of %llu", (unsigned long long)n,
                 (unsigned long long)c);
        rc = ex_vec_add(s, v, d);
    }
    unsigned torn = c <= x->cfg->samples ? (unsigned)c : x->cfg->samples;
    for (unsigned t = 0; rc == 0 && t < torn && c > 0; t++) {  /* torn last write */
        uint64_t p = c <= x->cfg->samples ? t : ex_rand(&x->rng) % c;
        uint32_t ns = ex_sectors(rec, idx ? idx[p] : first + p), bs = EX_BS / 512;
        if (x->atomic && ns <= bs)
            continue;   /* one block: written whole */
        for (uint64_t i = 0; i < c; i++)
            v[i].keep = i < p ? UBJ_REC_WHOLE : UBJ_REC_DROP;
        v[p].keep = UBJ_REC_PREFIX;
        v[p].sectors = x->atomic
                     ? bs * (1 + (uint32_t)(ex_rand(&x->rng) % (ns / bs - 1)))
                     : 1 + (uint32_t)(ex_rand(&x->rng) % (ns - 1));
        snprintf(d, sizeof d, "writes 1..%llu, write %llu torn after sector %u of %u",
                 (unsigned long long)p, (unsigned long long)p + 1, v[p].sectors, ns);
        rc = ex_vec_add(s, v, d);
        v[p].sectors = 0;
    }
    for (unsigned t = 0; rc == 0 && t < torn && c > 1; t++) {  /* one write torn */
        uint64_t p = c <= x->cfg->samples ? t : ex_rand(&x->rng) % c;
        for (uint64_t i = 0; i < c; i++)
            v[i].keep = UBJ_REC_WHOLE;
        v[p].keep = UBJ_REC_SECTORS;
        v[p].seed = ex_rand(&x->rng);
        snprintf(d, sizeof d, "every write but %llu, whose sectors are kept at random "
                 "(seed %llu)", (unsigned long long)p + 1, (unsigned long long)v[p].seed);
        if (!x->atomic)   /* sectors at random: torn inside blocks */
            rc = ex_vec_add(s, v, d);
        v[p].seed = 0;
        if (rc == 0) {   /* ... and the same write lost whole (reordered) */
            v[p].keep = UBJ_REC_DROP;
            snprintf(d, sizeof d, "every write but %llu", (unsigned long long)p + 1);
            rc = ex_vec_add(s, v, d);
        }
    }
    for (unsigned t = 0; rc == 0 && t < torn && c > 0; t++) {  /* only the end */
        uint64_t p = c <= x->cfg->samples ? t : ex_rand(&x->rng) % c;
        uint32_t ns = ex_sectors(rec, idx ? idx[p] : first + p);
        if (ns <= 8)
            continue;   /* one block: the torn prefixes cover it */
        for (uint64_t i = 0; i < c; i++)
            v[i].keep = UBJ_REC_WHOLE;
        v[p].keep = UBJ_REC_SUFFIX;
        v[p].sectors = 8;
        snprintf(d, sizeof d, "every write, but of write %llu only its last block "
                 "(of %u sectors)", (unsigned long long)p + 1, ns);
        rc = ex_vec_add(s, v, d);
        v[p].keep = UBJ_REC_PREFIX;   /* ... or only its first (a log's
                                         descriptor without its blocks) */
        snprintf(d, sizeof d, "every write, but of write %llu only its first block "
                 "(of %u sectors)", (unsigned long long)p + 1, ns);
        if (rc == 0)
            rc = ex_vec_add(s, v, d);
        v[p].sectors = 0;
    }
    if (c > 0 && c <= x->cfg->k) {
        for (uint64_t m = 1; rc == 0 && m + 1 < (1ull << c); m++) {
            for (uint64_t i = 0; i < c; i++)
                v[i].keep = (m >> i) & 1 ? UBJ_REC_WHOLE : UBJ_REC_DROP;
            snprintf(d, sizeof d, "subset 0x%llx of %llu writes", (unsigned long long)m,
                     (unsigned long long)c);
            rc = ex_vec_add(s, v, d);
        }
    } else {
        for (unsigned r = 0; rc == 0 && c > 0 && r < x->cfg->samples; r++) {
            uint64_t sd = ex_rand(&x->rng);
            for (uint64_t i = 0; i < c; i++) {
                unsigned pick = (unsigned)(ex_rand(&x->rng) %
                                           (x->atomic ? 2u : 3u));
                v[i].keep = pick == 0 ? UBJ_REC_DROP : pick == 1 ? UBJ_REC_WHOLE
                                                                : UBJ_REC_SECTORS;
                v[i].seed = pick == 2 ? sd + i : 0;
            }
            snprintf(d, sizeof d, "random subset (seed %llu) of %llu writes%s",
                     (unsigned long long)sd, (unsigned long long)c,
                     x->atomic ? "" : ", torn at sectors");
            rc = ex_vec_add(s, v, d);
        }
    }
    free(v);
    return rc;
}

/* ex_vecs_make -- the device states of epoch e (writes first..first+c). */
static int ex_vecs_make(struct ex *x, struct ubj_bdev *rec, uint64_t first, uint64_t c,
                        int all_prefixes, struct ex_vecs *s)
{
    return ex_vecs_of(x, rec, first, NULL, c, all_prefixes, s);
}

/* ex_vecs_free -- free the vectors. */
static void ex_vecs_free(struct ex_vecs *s)
{
    free(s->v);
    free(s->desc);
}

/* ---- write-through: cuts --------------------------------------------------------------------- */

/* ex_keep_hash -- what choice c keeps of write i, as a hash (0: nothing);
 * summed over the writes, an image's description in any order. */
static uint64_t ex_keep_hash(uint64_t i, const struct ubj_rec_choice *c)
{
    if (c->keep == UBJ_REC_DROP ||
        ((c->keep == UBJ_REC_PREFIX || c->keep == UBJ_REC_SUFFIX) && c->sectors == 0))
        return 0;
    uint64_t v = (uint64_t)c->keep | (uint64_t)c->sectors << 8 |
                 (c->keep == UBJ_REC_SECTORS ? c->seed << 24 : 0);
    uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull ^ v * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 31)) * 0x94D049BB133111EBull;
    return z ^ (z >> 29);
}

/* Where the cuts of one recording are explored from, and their bounds. */
struct ex_cutspec {
    struct ubj_bdev *rec;
    uint64_t k0;                 /* the first cut */
    const uint8_t *region;       /* mode ubj: the region with them, else NULL */
    int marked;                  /* 1: lo/hi from the markers (nvm points D) */
    uint64_t D;
    unsigned lo, hi, dhi;        /* marked == 0: fixed bounds */
    int all_prefixes;            /* ex_vecs_of's */
    const char *what;            /* the description's start */
};

/* ex_cut_states -- the states of cut k (its writes in flight in[0..n));
 * hsum = the hash of its durable writes (ex_keep_hash summed). */
static int ex_cut_states(struct ex *x, const struct ex_cutspec *cs, uint64_t k,
                         const uint64_t *in, uint64_t n, uint64_t hsum)
{
    struct ex_vecs v;
    int rc = ex_vecs_of(x, cs->rec, 0, in, n, cs->all_prefixes, &v);
    if (rc < 0)
        return rc;
    struct ex_state st = { .rec = cs->rec, .epoch = k, .cut = 1, .nch = n,
                           .region = cs->region, .lo = cs->lo, .hi = cs->hi,
                           .dhi = cs->dhi };
    if (cs->marked)
        ex_bounds(x, cs->D, k, &st.lo, &st.hi);
    uint64_t nw = ubj_bdev_record_writes(cs->rec);
    for (unsigned i = 0; i < v.nvec && !x->stop; i++) {
        st.ch = v.v + i * n;
        uint64_t h = hsum + ((uint64_t)st.lo << 40 ^ (uint64_t)st.hi << 20 ^ st.dhi);
        for (uint64_t j = 0; j < n; j++)
            h += ex_keep_hash(in[j], &st.ch[j]);
        if (ex_seen(x, h & ~(1ull << 63)))
            continue;                    /* the same image, the same bounds */
        snprintf(st.desc, sizeof st.desc, "%swrite-through cut %llu of %llu (%llu "
                 "durable, %llu in flight): %s", cs->what, (unsigned long long)k,
                 (unsigned long long)nw, (unsigned long long)k, (unsigned long long)n,
                 v.desc[i]);
        ex_check(x, &st);
    }
    ex_vecs_free(&v);
    return 0;
}

/* ex_cuts -- every cut k >= cs->k0 of cs->rec: the completed writes,
 * then the writes in flight as an epoch's (states seen at the same
 * bounds skipped: a serial run's "in-flight write lost" at cut k is "it
 * kept whole" at cut k - 1). */
static int ex_cuts(struct ex *x, const struct ex_cutspec *cs)
{
    uint64_t nw = ubj_bdev_record_writes(cs->rec), n = 0, cap = 0, hsum = 0;
    uint64_t *in = NULL;
    const struct ubj_rec_choice whole = { UBJ_REC_WHOLE, 0, 0 };
    int rc = 0;
    x->nseen = 0;
    for (uint64_t k = 0; rc == 0 && k <= nw && !x->stop; k++) {
        if (k >= cs->k0) {
            if ((rc = ubj_bdev_record_cut(cs->rec, k, in, cap, &n)) == 0 && n > cap) {
                uint64_t *t = realloc(in, n * sizeof *t);
                rc = t ? ubj_bdev_record_cut(cs->rec, k, t, n, &n) : -ENOMEM;
                in = t ? t : in;
                cap = t ? n : cap;
            }
            if (rc == 0)
                rc = ex_cut_states(x, cs, k, in, n, hsum);
        }
        int64_t d = k < nw ? ubj_bdev_record_durable(cs->rec, k) : 0;
        if (d < 0)
            rc = (int)d;
        else if (k < nw)
            hsum += ex_keep_hash((uint64_t)d, &whole);
    }
    free(in);
    return rc;
}

/* ---- journal modes and none: flush epochs ------------------------------------------------- */

/* ex_explore_epochs -- every epoch of the recording (write-through:
 * every cut). */
static int ex_explore_epochs(struct ex *x)
{
    int rc = ex_run(x, 0, 1);
    if (rc == 0 && x->cfg->persist == CX_PERSIST_THROUGH) {
        x->res->points += ubj_bdev_record_writes(x->rec);
        struct ex_cutspec cs = { .rec = x->rec, .marked = 1, .all_prefixes = 1,
                                 .what = "" };
        return ex_cuts(x, &cs);
    }
    uint64_t nf = ubj_bdev_record_flushes(x->rec);
    x->res->points += nf;
    for (uint64_t e = 0; rc == 0 && e <= nf && !x->stop; e++) {
        uint64_t first, c;
        struct ex_vecs s;
        if ((rc = ubj_bdev_record_epoch(x->rec, e, &first, &c)) < 0 ||
            (rc = ex_vecs_make(x, x->rec, first, c, 1, &s)) < 0)
            break;
        struct ex_state st = { .rec = x->rec, .epoch = e, .nch = c };
        ex_bounds(x, 0, e, &st.lo, &st.hi);
        for (unsigned i = 0; i < s.nvec && !x->stop; i++) {
            st.ch = s.v + i * c;
            snprintf(st.desc, sizeof st.desc, "flush epoch %llu of %llu (writes %llu..%llu): %s",
                     (unsigned long long)e, (unsigned long long)nf,
                     (unsigned long long)first + 1, (unsigned long long)(first + c), s.desc[i]);
            ex_check(x, &st);
        }
        ex_vecs_free(&s);
    }
    return rc;
}

/* ---- mode ubj: nvm fences ------------------------------------------------------------------ */

struct ex_regions {
    uint8_t *img[EX_MAX_REGION_STATES];
    char desc[EX_MAX_REGION_STATES][80];
    unsigned n;
};

/* ex_region_add -- keep a region image (one already kept at this point,
 * or one too many, is freed instead). */
static void ex_region_add(struct ex *x, struct ex_regions *r, uint8_t *img, const char *d)
{
    uint64_t h = ubj_crc32c(0x1234, img, x->region_size);
    if (r->n == EX_MAX_REGION_STATES || ex_seen(x, h | (uint64_t)1 << 63)) {
        free(img);
        return;
    }
    r->img[r->n] = img;
    snprintf(r->desc[r->n++], 80, "%s", d);
}

/* ex_regions_make -- the region states of the captured point. */
static int ex_regions_make(struct ex *x, struct ubj_nvm_shadow *sh, struct ex_regions *r)
{
    size_t sz = x->region_size;
    uint8_t *dur = malloc(sz), *all = malloc(sz);
    uint64_t *lines = malloc((sz / EX_LINE + 1) * sizeof *lines);
    if (!dur || !all || !lines || ubj_nvm_shadow_image(sh, UBJ_SHADOW_DURABLE, 0, dur) < 0 ||
        ubj_nvm_shadow_image(sh, UBJ_SHADOW_ALL, 0, all) < 0) {
        free(dur); free(all); free(lines);
        return ubj_set_error(-ENOMEM, "region states: no capture or no memory");
    }
    size_t nl = 0;
    for (size_t o = 0; o < sz; o += EX_LINE)
        if (memcmp(dur + o, all + o, EX_LINE) != 0)
            lines[nl++] = o;
    uint8_t *t = malloc(sz);
    if (t)
        memcpy(t, dur, sz);
    if (t)
        ex_region_add(x, r, t, "durable stores only");
    if ((t = malloc(sz)) != NULL) {
        memcpy(t, all, sz);
        ex_region_add(x, r, t, "every store");
    }
    char d[80];
    if (nl <= x->cfg->k) {               /* every subset of whole lines */
        for (uint64_t m = 1; m + 1 < (1ull << nl); m++) {
            if ((t = malloc(sz)) == NULL)
                break;
            memcpy(t, dur, sz);
            for (size_t i = 0; i < nl; i++)
                if ((m >> i) & 1)
                    memcpy(t + lines[i], all + lines[i], EX_LINE);
            snprintf(d, sizeof d, "lines subset 0x%llx of %zu", (unsigned long long)m, nl);
            ex_region_add(x, r, t, d);
        }
    }
    unsigned extra = nl > x->cfg->k ? x->cfg->samples : (nl ? x->cfg->samples / 2 : 0);
    for (unsigned s = 0; s < extra; s++) {   /* random lines, some partial */
        if ((t = malloc(sz)) == NULL)
            break;
        memcpy(t, dur, sz);
        uint64_t sd = ex_rand(&x->rng);
        uint64_t g = sd;
        for (size_t i = 0; i < nl; i++) {
            unsigned pick = (unsigned)(ex_rand(&g) % 3);
            for (unsigned wd = 0; wd < EX_LINE; wd += 8)
                if (pick == 1 || (pick == 2 && (ex_rand(&g) & 1)))
                    memcpy(t + lines[i] + wd, all + lines[i] + wd, 8);
        }
        snprintf(d, sizeof d, "random lines, partial at 8 bytes (seed %llu) of %zu",
                 (unsigned long long)sd, nl);
        ex_region_add(x, r, t, d);
    }
    for (unsigned s = 0; s < 2 && nl > 0; s++) {   /* with flushed snapshots */
        uint64_t sd = ex_rand(&x->rng);
        if ((t = malloc(sz)) == NULL || ubj_nvm_shadow_image(sh, UBJ_SHADOW_RANDOM, sd, t) < 0) {
            free(t);
            break;
        }
        snprintf(d, sizeof d, "shadow random mix (seed %llu)", (unsigned long long)sd);
        ex_region_add(x, r, t, d);
    }
    free(dur);
    free(all);
    free(lines);
    return 0;
}

/* ex_regions_free -- free the images. */
static void ex_regions_free(struct ex_regions *r)
{
    for (unsigned i = 0; i < r->n; i++)
        free(r->img[i]);
    r->n = 0;
}

/* ex_point -- the states of nvm point p of the latest run (captured). */
static int ex_point(struct ex *x, struct ubj_bdev *rec, struct ubj_nvm_shadow *sh,
                    uint64_t p, uint64_t P, const struct ex_mark *cap, unsigned lo,
                    unsigned hi, unsigned dhi, int full)
{
    struct ex_regions r = { .n = 0 };
    struct ex_vecs s;
    uint64_t first, c;
    x->nseen = 0;
    int rc = ex_regions_make(x, sh, &r);
    int through = x->cfg->persist == CX_PERSIST_THROUGH;
    if (rc == 0 && through) {            /* every completed write, nothing
                                            in flight (a serial run) */
        first = c = 0;
        rc = ex_vecs_make(x, rec, 0, 0, full, &s);
    } else if (rc == 0 && (rc = ubj_bdev_record_epoch(rec, cap->f, &first, &c)) == 0) {
        c = cap->w - first;              /* issued before the capture */
        rc = ex_vecs_make(x, rec, first, c, full, &s);
    }
    if (rc < 0) {
        ex_regions_free(&r);
        return rc;
    }
    struct ex_state st = { .rec = rec, .epoch = through ? cap->w : cap->f, .cut = through,
                           .nch = c, .lo = lo, .hi = hi, .dhi = dhi };
    for (unsigned i = 0; i < r.n && !x->stop; i++) {
        st.region = r.img[i];
        unsigned pick = full && s.nvec > 1 ? 1 + (unsigned)(ex_rand(&x->rng) % (s.nvec - 1)) : 0;
        for (unsigned v = 0; v < s.nvec && !x->stop; v++) {
            if (i >= 2 && v != 0 && v != pick)   /* other regions: none + one */
                continue;
            st.ch = s.v + v * c;
            snprintf(st.desc, sizeof st.desc, "nvm point %llu of %llu: region %s; device "
                     "%s %llu: %s", (unsigned long long)p, (unsigned long long)P,
                     r.desc[i], through ? "write-through (all completed, none in flight) "
                     "cut" : "epoch", (unsigned long long)st.epoch, s.desc[v]);
            ex_check(x, &st);
        }
    }
    ex_vecs_free(&s);
    ex_regions_free(&r);
    return 0;
}

/* ex_tail -- mode ubj, after the last nvm point: the region as the run
 * left it (everything drained) with every device epoch opened since. */
static int ex_tail(struct ex *x)
{
    uint8_t *region;
    size_t size;
    int rc = ex_file_get(x->reg_run, &region, &size);
    if (rc == 0 && size != x->region_size)
        rc = ubj_set_error(-EPROTO, "the region changed size");
    if (rc == 0 && x->cfg->persist == CX_PERSIST_THROUGH) {
        struct ex_cutspec cs = { .rec = x->rec, .k0 = x->cap.w, .region = region,
                                 .marked = 1, .D = x->points, .all_prefixes = 1,
                                 .what = "after the last nvm point: region as left; " };
        rc = ex_cuts(x, &cs);
        free(region);
        return rc;
    }
    uint64_t nf = ubj_bdev_record_flushes(x->rec);
    for (uint64_t e = x->cap.f; rc == 0 && e <= nf && !x->stop; e++) {
        uint64_t first, c;
        struct ex_vecs s;
        if ((rc = ubj_bdev_record_epoch(x->rec, e, &first, &c)) < 0 ||
            (rc = ex_vecs_make(x, x->rec, first, c, 1, &s)) < 0)
            break;
        struct ex_state st = { .rec = x->rec, .epoch = e, .nch = c, .region = region };
        ex_bounds(x, x->points, e, &st.lo, &st.hi);
        for (unsigned i = 0; i < s.nvec && !x->stop; i++) {
            st.ch = s.v + i * c;
            snprintf(st.desc, sizeof st.desc, "after the last nvm point: region as left; "
                     "device epoch %llu of %llu: %s", (unsigned long long)e,
                     (unsigned long long)nf, s.desc[i]);
            ex_check(x, &st);
        }
        ex_vecs_free(&s);
    }
    free(region);
    return rc;
}

/* ex_explore_ubj -- every nvm point: re-run armed there, check its states. */
static int ex_explore_ubj(struct ex *x)
{
    int rc = ex_run(x, 0, 1);
    x->res->points += x->points;
    for (uint64_t p = 1; rc == 0 && p <= x->points && !x->stop; p++) {
        if ((rc = ex_run(x, p, 0)) < 0)
            break;
        if (!ubj_nvm_shadow_captured(x->sh)) {
            rc = ubj_set_error(-EPROTO, "nvm point %llu not reached again",
                               (unsigned long long)p);
            break;
        }
        unsigned lo, hi;
        ex_bounds(x, p - 1, x->cfg->persist == CX_PERSIST_THROUGH ? x->cap.w : x->cap.f,
                  &lo, &hi);
        rc = ex_point(x, x->rec, x->sh, p, x->points, &x->cap, lo, hi, hi, 1);
    }
    if (rc == 0 && !x->stop)
        rc = ex_tail(x);
    return rc;
}

/* ---- a crash during recovery -------------------------------------------------------------- */

struct ex_nest {
    struct ex *x;
    struct ubj_bdev *rec;
    struct ubj_nvm_shadow *sh;
    struct ex_mark cap;
};

/* ex_nest_capture -- the nested recording's markers at its capture. */
static void ex_nest_capture(void *ctx)
{
    struct ex_nest *n = ctx;
    n->cap.d = ubj_nvm_shadow_points(n->sh);
    n->cap.w = ubj_bdev_record_writes(n->rec);
    n->cap.f = ubj_bdev_record_flushes(n->rec);
}

/* ex_nest_run -- recover the state s (mount + unmount) on a recording,
 * armed at nvm point arm.  Returns nvm points or a negative errno. */
static long long ex_nest_run(struct ex_nest *n, const struct ex_state *s, uint64_t arm)
{
    struct ex *x = n->x;
    struct ubj_bdev *ram;
    struct ubj_fs *fs;
    ubj_bdev_destroy(n->rec);
    n->rec = NULL;
    int rc = ex_image(s, x->img);
    if (rc == 0 && (rc = ubj_bdev_ram_create(x->cfg->nblocks, &ram)) == 0) {
        uint8_t *buf = malloc((size_t)x->cfg->nblocks * EX_BS);
        rc = buf ? ubj_bdev_read(x->img, 0, x->cfg->nblocks, buf) : -ENOMEM;
        if (rc == 0)
            rc = ubj_bdev_write(ram, 0, x->cfg->nblocks, buf);
        free(buf);
        if (rc == 0 && (rc = ubj_bdev_record_create(ram, &n->rec)) < 0)
            ubj_bdev_destroy(ram);
        else if (rc < 0)
            ubj_bdev_destroy(ram);
        else
            ex_declare(x, n->rec);
    }
    if (rc == 0 && s->region)
        rc = ex_file_put(x->reg_nest, s->region, x->region_size);
    if (rc < 0)
        return rc;
    struct ubj_config mc = ex_mount_cfg(x, x->reg_nest, 0);
    if (s->region) {
        ubj_nvm_shadow_arm(n->sh, arm, ex_nest_capture, n);
        ubj_nvm_shadow_install(n->sh);
    }
    rc = ubj_mount(n->rec, &mc, &fs);
    ubj_nvm_shadow_install(NULL);
    if (rc == 0)
        rc = ubj_unmount(fs);
    if (rc < 0)
        return rc;
    return s->region ? (long long)ubj_nvm_shadow_points(n->sh) : 0;
}

/* ex_nested -- crash the recovery of state s at each of its persistence
 * points; each must recover to a state in [jmin, jmax]. */
static void ex_nested(struct ex *x, const struct ex_state *s, unsigned jmin, unsigned jmax)
{
    struct ex_nest n = { .x = x, .sh = x->sh };
    char why[448];
    uint64_t saved[EX_MAX_SEEN];         /* the outer point's states seen */
    unsigned nsaved = x->nseen;
    memcpy(saved, x->seen, nsaved * sizeof *saved);
    x->nested = 1;
    long long P = ex_nest_run(&n, s, 0);
    if (P < 0) {
        snprintf(why, sizeof why, "recovery failed when recorded: %lld %s", P, ubj_errormsg());
        ex_fail(x, s, why);
    } else if (s->region == NULL && x->cfg->persist == CX_PERSIST_THROUGH) {
        char what[96];                   /* cuts of the recovery */
        snprintf(what, sizeof what, "[%.60s] recovery ", s->desc);
        struct ex_cutspec cs = { .rec = n.rec, .lo = jmin, .hi = jmax, .dhi = s->hi,
                                 .what = what };
        ex_cuts(x, &cs);
    } else if (s->region == NULL) {     /* flush epochs of the recovery */
        uint64_t nf = ubj_bdev_record_flushes(n.rec);
        for (uint64_t e = 0; e <= nf && !x->stop; e++) {
            uint64_t first, c;
            struct ex_vecs v;
            if (ubj_bdev_record_epoch(n.rec, e, &first, &c) < 0 ||
                ex_vecs_make(x, n.rec, first, c, 0, &v) < 0)
                break;
            struct ex_state ns = { .rec = n.rec, .epoch = e, .nch = c, .lo = jmin, .hi = jmax,
                                   .dhi = s->hi };
            for (unsigned i = 0; i < v.nvec && !x->stop; i++) {
                ns.ch = v.v + i * c;
                snprintf(ns.desc, sizeof ns.desc, "[%.60s] recovery epoch %llu: %s", s->desc,
                         (unsigned long long)e, v.desc[i]);
                ex_check(x, &ns);
            }
            ex_vecs_free(&v);
        }
    } else {                             /* nvm points of the recovery */
        for (uint64_t p = 1; p <= (uint64_t)P && !x->stop; p++) {
            if (ex_nest_run(&n, s, p) < 0 || !ubj_nvm_shadow_captured(n.sh))
                break;
            ex_point(x, n.rec, n.sh, p, (uint64_t)P, &n.cap, jmin, jmax, s->hi, 0);
        }
    }
    memcpy(x->seen, saved, nsaved * sizeof *saved);
    x->nseen = nsaved;
    ubj_bdev_destroy(n.rec);
    x->nested = 0;
}

/* ---- the exploration ------------------------------------------------------------------------ */

/* ex_paths -- region file names for this process. */
static void ex_paths(struct ex *x)
{
    const char *d = x->cfg->tmpdir;
    if (d == NULL || !*d)
        d = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (d == NULL || !*d)
        d = "/tmp";
    int pid = (int)getpid();
    snprintf(x->reg_run, sizeof x->reg_run, "%s/cx-%d-run.nvm", d, pid);
    snprintf(x->reg_crash, sizeof x->reg_crash, "%s/cx-%d-crash.nvm", d, pid);
    snprintf(x->reg_ref, sizeof x->reg_ref, "%s/cx-%d-ref.nvm", d, pid);
    snprintf(x->reg_nest, sizeof x->reg_nest, "%s/cx-%d-nest.nvm", d, pid);
    snprintf(x->reg_nest2, sizeof x->reg_nest2, "%s/cx-%d-nest2.nvm", d, pid);
}

/* ex_cleanup -- free everything and remove the region files. */
static void ex_cleanup(struct ex *x)
{
    for (unsigned j = 0; j <= CX_MAX_OPS; j++)
        cx_tree_free(x->ref[j]);
    ubj_bdev_destroy(x->top != NULL ? x->top : x->rec);
    ubj_bdev_destroy(x->img);
    if (x->sh)
        ubj_nvm_shadow_free(x->sh);
    free(x->base);
    free(x->base_region);
    unlink(x->reg_run);
    unlink(x->reg_crash);
    unlink(x->reg_ref);
    unlink(x->reg_nest);
    unlink(x->reg_nest2);
    ex_breaking(0);
}

/*
 * ex_promises -- what mode m (include/ubjfs/mode.h) makes the explorer do,
 * from the registry's data alone:
 *   needs an NVM region  -> its states are NVM fences (ex_explore_ubj) with
 *                           the region shadowed; else flush epochs;
 *   needs a log area     -> the base image gets a 64-block one;
 *   data exact           -> CX_DATA_EXACT (oracle.c compares contents);
 *   data ordered         -> CX_DATA_ORDERED (later versions of a cell too;
 *                           zeros after a truncate, ex_data);
 *   data unspecified     -> CX_DATA_ANY (contents not compared);
 *   metadata prefix      -> the prefix oracle: a state j in [lo, hi];
 *   metadata none        -> the same oracle: its failures are what the mode
 *                           does not promise (none: crashtest reports them);
 *   metadata integrity-only -> the integrity oracle (docs/GUARANTEES.md,
 *                           I1-I6): fsck on the crash state finds leaks
 *                           only, the mount reclaims them, durable facts
 *                           and renames (integrity.c), usable, fsck clean
 *                           after the unmount -- no prefix asked for;
 *   fsync all / file     -> what an fsync makes durable in that oracle.
 * cfg->oracle may ask for either oracle on any mode (the integrity one on
 * none must fail, on ordered must pass: tests/crash/explore.c).
 * Per mode of this build (the registry):
 *   none                 prefix oracle, reported as inconsistent;
 *   ubj, ordered, journal prefix oracle, data exact / ordered / exact;
 *   writeback            prefix oracle, data not compared;
 *   an integrity-only mode (sync) the integrity oracle.
 */
static int ex_promises(struct ex *x, const struct ubj_mode_info *m)
{
    enum cx_oracle o = x->cfg->oracle;
    if (o != CX_ORACLE_AUTO && o != CX_ORACLE_PREFIX && o != CX_ORACLE_INTEGRITY)
        return ubj_set_error(-EINVAL, "crash explorer: unknown oracle %d", (int)o);
    x->integrity = o == CX_ORACLE_INTEGRITY ||
                   (o == CX_ORACLE_AUTO && m->promises.meta == UBJ_MODE_META_INTEGRITY);
    /* an integrity-only mode writes its metadata in place, unjournaled:
     * it assumes 4 KiB blocks written whole (docs/SYNC.md), so its torn
     * states end at block boundaries, as --atomic-block */
    x->atomic = x->cfg->atomic_block || x->integrity;
    x->fsync_all = m->promises.fsync == UBJ_MODE_FSYNC_ALL;
    x->nvm = m->needs == UBJ_MODE_NEEDS_NVM;
    x->log = m->needs == UBJ_MODE_NEEDS_LOG;
    x->data = m->promises.data == UBJ_MODE_DATA_ORDERED ? CX_DATA_ORDERED
            : m->promises.data == UBJ_MODE_DATA_UNSPECIFIED ? CX_DATA_ANY : CX_DATA_EXACT;
    return 0;
}

/* cx_explore -- explore workload w in cfg->mode. */
int cx_explore(const struct cx_config *cfg, const struct cx_workload *w,
               struct cx_result *res)
{
    if (cfg == NULL || w == NULL || res == NULL || cfg->mode == NULL)
        return ubj_set_error(-EINVAL, "crash explorer: NULL argument");
    const struct ubj_mode_info *m = ubj_mode_lookup(cfg->mode);
    if (m == NULL)
        return ubj_set_error(-EINVAL, "crash explorer: unknown mode \"%s\"", cfg->mode);
    struct ex *x = calloc(1, sizeof *x);
    if (x == NULL)
        return -ENOMEM;
    x->cfg = cfg;
    x->w = w;
    x->res = res;
    int prc = ex_promises(x, m);
    if (prc < 0) {
        free(x);
        return prc;
    }
    x->rng = cfg->seed ^ ex_workload_hash(w) ^
             ((uint64_t)ubj_crc32c(7, cfg->mode, strlen(cfg->mode)) << 32);
    ex_paths(x);
    ubjm_test_limits(250, 300);       /* commits and checkpoints often */
    ex_breaking(0);
    int rc = ubj_bdev_ram_create(cfg->nblocks, &x->img);
    if (rc == 0 && x->nvm)
        rc = ubj_nvm_shadow_new(&x->sh);
    if (rc == 0)
        rc = ex_base(x);
    if (rc == 0)
        rc = ex_reference(x);
    if (rc == 0)
        rc = x->nvm ? ex_explore_ubj(x) : ex_explore_epochs(x);
    ubjm_test_limits(0, 0);
    ex_cleanup(x);
    free(x);
    return rc;
}

/* cx_minimize -- drop ops while the workload still fails. */
int cx_minimize(const struct cx_config *cfg, struct cx_workload *w,
                struct cx_failure *fail)
{
    struct cx_config c = *cfg;
    c.stop_at_first = 1;
    c.verbose = 0;
    struct cx_workload *t = malloc(sizeof *t);
    if (t == NULL)
        return -ENOMEM;
    for (int again = 1; again;) {
        again = 0;
        for (unsigned i = w->nops; i-- > 0 && !again;) {
            *t = *w;
            memmove(&t->ops[i], &t->ops[i + 1], (t->nops - i - 1) * sizeof t->ops[0]);
            t->nops--;
            struct cx_result r = { 0 };
            if (cx_explore(&c, t, &r) == 0 && r.failures > 0) {
                *w = *t;
                *fail = r.first;
                again = 1;
            }
        }
    }
    free(t);
    return 0;
}
