/*
 * tests/ubj/ioerror.c -- mode ubj under persistent device errors (issue 14,
 * defect 1): a fault device under the image fails every write (or every
 * flush) from request k on, for a sweep of k over a whole workload, and is
 * healthy again afterwards.  64-buffer cache, as in the outside report.
 *
 * Four path configurations make a different checkpoint meet the fault:
 *   start    a low frozen limit: the early checkpoint at a handle start
 *   timer    ubj_tick after every op: the timer's checkpoint, run without
 *            the mount lock (ubjm_checkpoint_unlocked)
 *   sync     ubj_sync often (UBJ_COMMIT_SYNC)
 *   reclaim  no early checkpoint, no tick, no sync: the cache runs full
 * and in each the unmount's own checkpoint when k lies past the workload.
 * The workload runs op for op on a mode-none reference (its tree digest
 * after each op is the truth).  For every run:
 *  - before the fault fires, every op returns what the reference returned;
 *  - once an op (or a tick) has failed, every change is refused (-EROFS or
 *    -EIO, never a hang), fsync and sync fail;
 *  - unmount returns an error -- with the fault still armed, and with the
 *    device healthy again -- and never leaves the image CLEAN without
 *    ERRORS;
 *  - fsck of the pair (image + region) is clean; a crash right after the
 *    error (image and region copied) and the real image each mount with
 *    the device healthy and show exactly the reference tree after some op
 *    j with (last acknowledged fsync/sync) <= j <= (last op that
 *    succeeded): nothing acknowledged lost, no half operation; the
 *    superblock then carries ERRORS; that unmount returns 0 and the image
 *    alone checks clean.
 *
 * The region must record each failure (errno, which checkpoint), and each
 * configuration must have met the fault in its own path and in unmount's.
 *
 * Fails on fd8c42e (run before the region record existed, with every
 * other check here): each of the 105 runs that fired failed -- a change
 * after the error succeeded (232 creates), fsync after it succeeded (67),
 * unmount returned 0 with the device healed (49) and left the image
 * CLEAN without ERRORS (68), the recovered tree was no reference state
 * (67 + 14 of the crash copies), and fsck of the pair and of the image
 * found the outside report's damage (5 runs): "directory 1: records 4
 * names ... found 5" and "entry 'after-error-0' -> inode 69, which is
 * free" -- a create that failed half-way in reclaim's checkpoint, then
 * committed by the next fsync and written home by the unmount.
 */
#include "ubjtest.h"
#include "fs/fs.h"
#include "fs/format.h"
#include "txn/ubj.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#define NB 2048u        /* image blocks */
#define NBUFS 64u       /* region buffers: the report's 64-block cache */
#define NOPS 300u       /* ops of one workload */
#define MAXLEN 12000u   /* bytes of one write at most */

enum path { P_START, P_TIMER, P_SYNC, P_RECLAIM, P_N };
static const char *const path_name[P_N] = { "start", "timer", "sync", "reclaim" };

/* The truth for one configuration: the reference's results and digests. */
struct truth {
    enum path path;
    struct ut_op ops[NOPS + 1];
    long long rc[NOPS + 1];
    uint64_t digest[NOPS + 1];   /* digest[i]: after op i (0: before any) */
};

/* One fault run's observations. */
struct run {
    char region[256], crash[300];
    struct ubj_bdev *fdev;       /* fault device over a RAM image */
    struct ubj_fs *fs;
    unsigned ok, acked;          /* last op that succeeded; last acked sync */
    int failed;                  /* some call failed (the fault fired) */
    struct ubj_bdev *cdev;       /* the crash copy's image, or NULL */
};

static char desc[200];
static unsigned where_seen[UBJ_NVM_ERR_UNMOUNT + 1];   /* per sweep */
static jmp_buf run_jmp;          /* hard(): abandon the run */
static int run_bad;              /* soft() or hard() reported this run */
static struct ubj_bdev *run_dev; /* the run's fault device (freed by hard) */

/* soft -- report a failed expectation of this run and go on checking. */
static void soft(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void soft(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s: ", desc);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    run_bad = 1;
}

/* hard -- report and abandon the run (its mount is leaked, its device
 * freed): the sweep counts it and goes on. */
#define hard(...) do { soft(__VA_ARGS__); longjmp(run_jmp, 1); } while (0)

/* cfg_limits -- the thresholds of a configuration (read at mount). */
static void cfg_limits(enum path p)
{
    ubjm_test_limits(0, p == P_START ? 150 : 1000);
}

#define NDIRS 4u
#define NNAMES 48u      /* names per directory */
static char names[NDIRS * NNAMES][24], dirs[NDIRS][8], subdirs[NDIRS][12];

/* names_init -- "/d<k>", "/d<k>/s" and "/d<k>/n<i>". */
static void names_init(void)
{
    for (unsigned k = 0; k < NDIRS; k++) {
        snprintf(dirs[k], sizeof dirs[k], "/d%u", k);
        snprintf(subdirs[k], sizeof subdirs[k], "/d%u/s", k);
        for (unsigned i = 0; i < NNAMES; i++)
            snprintf(names[k * NNAMES + i], sizeof names[0], "/d%u/n%u", k, i);
    }
}

/* cfg_op -- op i of the workload for path p: four directories first, then
 * mostly creates and small writes over many names (directories and inode
 * tables grow, so metadata competes for the cache), renames, links,
 * unlinks, truncates, fsyncs; syncs only in P_SYNC. */
static struct ut_op cfg_op(struct tprng *r, enum path p, unsigned i)
{
    static const int weights[UT_NOPS] = {
        [UT_OP_CREATE] = 30, [UT_OP_APPEND] = 16, [UT_OP_WRITE] = 6,
        [UT_OP_TRUNC] = 4, [UT_OP_RENAME] = 10, [UT_OP_UNLINK] = 10,
        [UT_OP_FSYNC] = 8, [UT_OP_MKDIR] = 2, [UT_OP_RMDIR] = 2,
        [UT_OP_LINK] = 5, [UT_OP_SYNC] = 0,
    };
    struct ut_op op = { .kind = UT_OP_MKDIR, .a = dirs[(i - 1) % NDIRS] };
    if (i <= NDIRS)
        return op;
    int total = 0, k = 0;
    for (int j = 0; j < UT_NOPS; j++)
        total += weights[j];
    int x = (int)tprng_below(r, (uint64_t)total);
    while (x >= weights[k])
        x -= weights[k++];
    op.kind = k;
    op.a = names[tprng_below(r, NDIRS * NNAMES)];
    op.b = names[tprng_below(r, NDIRS * NNAMES)];
    op.len = 1 + tprng_below(r, p == P_RECLAIM ? 4 * MAXLEN : MAXLEN);
    op.off = tprng_below(r, MAXLEN);
    op.seed = tprng_next(r);
    if (k == UT_OP_MKDIR || k == UT_OP_RMDIR)
        op.a = subdirs[tprng_below(r, NDIRS)];
    if (p == P_SYNC && k == UT_OP_FSYNC && i % 2 == 0)
        op.kind = UT_OP_SYNC;
    return op;
}

/* truth_build -- run the workload on a mode-none reference. */
static void truth_build(struct truth *t, enum path p)
{
    struct ubj_bdev *dev;
    struct ubj_fs *ref;
    assert_ok(ubj_bdev_ram_create(NB, &dev));
    struct ubj_format_opts fo = { .mode = UBJ_MODE_NONE };
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &ref));
    t->path = p;
    names_init();
    struct tprng rng;
    tprng_seed(&rng, 0x10e4404u + (uint64_t)p);
    t->digest[0] = ut_digest(ref);
    for (unsigned i = 1; i <= NOPS; i++) {
        t->ops[i] = cfg_op(&rng, p, i);
        t->rc[i] = ut_op_apply(ref, &t->ops[i]);
        t->digest[i] = ut_digest(ref);
    }
    assert_ok(ubj_unmount(ref));
    ubj_bdev_destroy(dev);
}

/* run_mount -- a fresh ubj image on a fault device, mounted over a fresh
 * region. */
static void run_mount(struct run *r, enum path p)
{
    struct ubj_bdev *ram;
    ut_region_path(r->region, sizeof r->region, "ioerr");
    snprintf(r->crash, sizeof r->crash, "%s.crash", r->region);
    assert_ok(ubj_bdev_ram_create(NB, &ram));
    assert_ok(ubj_bdev_fault_create(ram, &r->fdev));
    run_dev = r->fdev;
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(r->fdev, &fo));
    unlink(r->region);
    cfg_limits(p);
    assert_ok(ut_mount(r->fdev, r->region, NBUFS, UBJ_NVM_FORMAT, 0, &r->fs));
}

/* is_refusal -- an error a change may get once the mount has failed. */
static bool is_refusal(long long rc)
{
    return rc == -EROFS || rc == -EIO;
}

/* run_workload -- the ops (and ticks) until the first failure. */
static void run_workload(struct run *r, const struct truth *t)
{
    for (unsigned i = 1; i <= NOPS && !r->failed; i++) {
        long long rc = ut_op_apply(r->fs, &t->ops[i]);
        if (rc != t->rc[i]) {
            bool short_write = (t->ops[i].kind == UT_OP_APPEND ||
                                t->ops[i].kind == UT_OP_WRITE) && rc >= 0 && rc < t->rc[i];
            if (ubj_bdev_fault_fired(r->fdev) == 0 || !(is_refusal(rc) || short_write))
                hard("op %u (kind %d %s): %lld, reference %lld (%s)", i, t->ops[i].kind, t->ops[i].a, rc, t->rc[i],
                         ubj_errormsg());
            r->failed = 1;
            break;
        }
        r->ok = i;
        if ((t->ops[i].kind == UT_OP_FSYNC || t->ops[i].kind == UT_OP_SYNC) && rc == 0)
            r->acked = i;
        /* as the mount's timer thread ticks: nobody waits for its I/O */
        if (t->path == P_TIMER && (rc = ubj_tick_flags(r->fs, UBJ_TICK_BACKGROUND)) < 0) {
            if (!is_refusal(rc))
                soft("tick after op %u: %lld (%s)", i, rc, ubj_errormsg());
            r->failed = 1;
        }
    }
}

/* run_after_error -- a failed mount refuses every change, never hangs;
 * ubj_errormsg() is one line. */
static void run_after_error(struct run *r)
{
    static const uint8_t data[5000];
    for (int k = 0; k < 4; k++) {
        char p[64];
        snprintf(p, sizeof p, "/after-error-%d", k);
        long long rc = tpath_create(r->fs, p, 0644, NULL);
        if (!is_refusal(rc))
            soft("create after the error: %lld (%s)", rc, ubj_errormsg());
        assert_null(strchr(ubj_errormsg(), '\n'));
        rc = tpath_write(r->fs, "/f0", data, sizeof data, 0);
        if (rc >= 0 || !(is_refusal(rc) || rc == -ENOENT || rc == -EISDIR))
            soft("write after the error: %lld (%s)", rc, ubj_errormsg());
    }
    if (!is_refusal(ubj_fsync(r->fs, UBJ_ROOT_INO, 0)))
        soft("fsync after the error succeeded");
    if (!is_refusal(ubj_sync(r->fs)))
        soft("sync after the error succeeded");
}

/* run_crash_copy -- keep the image and the region as a process crash
 * right now would leave them. */
static void run_crash_copy(struct run *r)
{
    uint8_t *img = NULL;
    size_t n = 0;
    assert_ok(ut_file_get(r->region, &img, &n));
    assert_ok(ut_file_put(r->crash, img, n));
    free(img);
    r->cdev = ut_ram_copy(r->fdev->lower);
}

/* sb_state -- the home superblock's state bits. */
static uint32_t sb_state(struct ubj_bdev *dev)
{
    struct ubj_super *sb = aligned_alloc(UT_BS, UT_BS);
    assert_ok(ubj_bdev_read(dev, 0, 1, sb));
    uint32_t st = sb->state;
    free(sb);
    return st;
}

/* note_report -- count the problem lines of ubj_check ("note:" lines are
 * not problems), print a few. */
static void note_report(void *ctx, const char *line)
{
    int *n = ctx;
    if (strncmp(line, "note:", 5) == 0)
        return;
    if ((*n)++ < 3)
        fprintf(stderr, "    fsck: %s\n", line);
}

/* check_clean -- ubj_check of dev: CLEAN, no problem line. */
static void check_clean(struct ubj_bdev *dev, const char *what)
{
    int n = 0;
    int rc = ubj_check(dev, 0, note_report, &n);
    if (rc != UBJ_CHECK_CLEAN || n != 0)
        soft("fsck of %s: %d with %d problems", what, rc, n);
}

/* check_pair_clean -- ubj_check through the overlay of (dev, region). */
static void check_pair_clean(struct ubj_bdev *dev, const char *region)
{
    struct ubj_bdev *ov;
    int rc = ubj_nvm_overlay_create(ut_ram_copy(dev), region, &ov);
    if (rc < 0)
        hard("overlay: %d %s", rc, ubj_errormsg());
    check_clean(ov, "the pair");
    ubj_bdev_destroy(ov);
}

/* verify_recovered -- mount (dev, region) on a healthy device: the tree is
 * the reference's after some op in [acked, ok]; ERRORS recorded; a clean
 * unmount and fsck. */
static void verify_recovered(struct run *r, const struct truth *t,
                             struct ubj_bdev *dev, const char *region, const char *what)
{
    struct ubj_fs *fs;
    check_pair_clean(dev, region);
    cfg_limits(t->path);
    int rc = ut_mount(dev, region, 0, 0, 0, &fs);
    if (rc < 0)
        hard("%s: mount: %d %s", what, rc, ubj_errormsg());
    uint64_t d = ut_digest(fs);
    unsigned j = r->acked;
    while (j <= r->ok && t->digest[j] != d)
        j++;
    if (j > r->ok)
        soft("%s: the recovered tree is not the reference's after any "
                 "op in [%u, %u] (last acknowledged, last done)", what,
                 r->acked, r->ok);
    bool errors = (fs->sb.state & UBJ_STATE_ERRORS) != 0;
    if ((rc = ubj_unmount(fs)) != 0)
        hard("%s: unmount after recovery: %d %s", what, rc, ubj_errormsg());
    check_clean(dev, what);
    if (r->failed && !errors)
        soft("%s: the mount after the error did not record ERRORS", what);
    if (r->failed && (sb_state(dev) & (UBJ_STATE_CLEAN | UBJ_STATE_ERRORS)) !=
                     (UBJ_STATE_CLEAN | UBJ_STATE_ERRORS))
        soft("%s: home superblock not CLEAN|ERRORS after that mount", what);
}

/* check_record -- after a failure the region records it (read-only open:
 * the unmount left the region as the next mount will find it). */
static void check_record(struct run *r, int fired)
{
    struct ubj_nvm *nvm;
    struct ubj_nvm_error e;
    char text[256];
    assert_ok(ubj_nvm_open(r->region, UBJ_NVM_OPEN_RDONLY, &nvm));
    int got = ubj_nvm_error_get(nvm, &e);
    ubj_nvm_close(nvm);
    if (got != fired)
        soft("the region records %s error", got ? "an" : "no");
    if (!got)
        return;
    if (e.err != EIO || (e.where & 0xffu) < UBJ_NVM_ERR_START ||
        (e.where & 0xffu) > UBJ_NVM_ERR_UNMOUNT)
        soft("recorded error %d at %#x", e.err, e.where);
    else
        where_seen[e.where & 0xffu]++;
    ubj_nvm_error_text(&e, text, sizeof text);
    if (strchr(text, '\n') || !strstr(text, "Input/output error"))
        soft("record text \"%s\"", text);
}

/* one_run -- fail every `op` request from number k on; returns whether
 * the fault fired.  heal_first: the device is healthy again before the
 * unmount (else after it). */
static int one_run(const struct truth *t, enum ubj_fault_op op, uint64_t k,
                   int heal_first)
{
    snprintf(desc, sizeof desc, "%s path, %s fault from #%llu, healed %s unmount",
             path_name[t->path], op == UBJ_FAULT_WRITE ? "write" : "flush",
             (unsigned long long)k, heal_first ? "before" : "after");
    struct run r = { 0 };
    run_mount(&r, t->path);
    assert_ok(ubj_bdev_fault_arm(r.fdev, op, k, 1, 0));
    run_workload(&r, t);
    if (r.failed) {
        run_after_error(&r);
        if (k % 3 == 0)
            run_crash_copy(&r);
    }
    if (heal_first)
        assert_ok(ubj_bdev_fault_disarm(r.fdev));
    int rc = ubj_unmount(r.fs);
    int fired = ubj_bdev_fault_fired(r.fdev) > 0;
    assert_ok(ubj_bdev_fault_disarm(r.fdev));
    if (fired && rc == 0)
        soft("unmount returned 0 after the device failed");
    if (!fired && (rc != 0 || r.failed))
        soft("unmount %d / failed %d without a fault (%s)", rc,
                 r.failed, ubj_errormsg());
    r.failed |= fired;
    check_record(&r, fired);
    uint32_t st = sb_state(r.fdev->lower);
    if (fired && (st & UBJ_STATE_CLEAN) && !(st & UBJ_STATE_ERRORS))
        soft("unmount marked the image clean without ERRORS");
    if (!r.failed)
        r.acked = NOPS;   /* a clean run: exactly the final tree */
    verify_recovered(&r, t, r.fdev->lower, r.region, "the image");
    if (r.cdev) {
        verify_recovered(&r, t, r.cdev, r.crash, "the crash copy");
        ubj_bdev_destroy(r.cdev);
        unlink(r.crash);
    }
    ubj_bdev_destroy(r.fdev);
    unlink(r.region);
    return fired;
}

/* count_requests -- writes and flushes of a fault-free run: n[] of the
 * workload and the unmount, w[] of the workload alone. */
static void count_requests(const struct truth *t, uint64_t n[3], uint64_t w[3])
{
    snprintf(desc, sizeof desc, "%s path, clean run", path_name[t->path]);
    struct run r = { 0 };
    run_mount(&r, t->path);
    struct ubj_bdev_stats s0, s1;
    ubj_bdev_stats_get(r.fdev, &s0);
    run_workload(&r, t);
    assert_false(r.failed);
    ubj_bdev_stats_get(r.fdev, &s1);
    w[UBJ_FAULT_WRITE] = s1.writes - s0.writes;
    w[UBJ_FAULT_FLUSH] = s1.flushes - s0.flushes;
    assert_ok(ubj_unmount(r.fs));
    ubj_bdev_stats_get(r.fdev, &s1);
    n[UBJ_FAULT_READ] = s1.reads - s0.reads;
    n[UBJ_FAULT_WRITE] = s1.writes - s0.writes;
    n[UBJ_FAULT_FLUSH] = s1.flushes - s0.flushes;
    ubj_bdev_destroy(r.fdev);
    unlink(r.region);
}

/* guarded_run -- one_run; a hard() failure abandons only that run. */
static int guarded_run(const struct truth *t, enum ubj_fault_op op, uint64_t k,
                       int heal_first)
{
    run_bad = 0;
    if (setjmp(run_jmp) != 0) {
        ubj_bdev_destroy(run_dev);   /* its mount is leaked */
        return 1;
    }
    return one_run(t, op, k, heal_first);
}

/* sweep -- k over [1, total + 1] in about `runs` steps, for one path and
 * one kind of request. */
static void sweep(enum path p, enum ubj_fault_op op, int runs)
{
    static struct truth t;
    truth_build(&t, p);
    uint64_t n[3], w[3];
    count_requests(&t, n, w);
    uint64_t total = n[op], step = total / (uint64_t)runs + 1;
    assert_true(total > 0);
    int fired = 0, tried = 0, bad = 0;
    memset(where_seen, 0, sizeof where_seen);
    for (uint64_t k = 1; k <= total + 1; tried++) {
        /* healed before the unmount only if the fault fires before it */
        fired += guarded_run(&t, op, k, k <= w[op] && (k / step) % 2);
        bad += run_bad;
        /* ... then the unmount's last request, and one past it */
        k = k < total && k + step > total ? total : k == total ? total + 1 : k + step;
    }
    fprintf(stderr, "%s path, %s faults: %llu requests, %d of %d runs fired, "
            "%d failed\n", path_name[p], op == UBJ_FAULT_WRITE ? "write" : "flush",
            (unsigned long long)total, fired, tried, bad);
    fprintf(stderr, "  failed checkpoints: %u at a start, %u timer, %u sync, "
            "%u reclaim, %u unmount\n", where_seen[UBJ_NVM_ERR_START],
            where_seen[UBJ_NVM_ERR_TIMER], where_seen[UBJ_NVM_ERR_SYNC],
            where_seen[UBJ_NVM_ERR_RECLAIM], where_seen[UBJ_NVM_ERR_UNMOUNT]);
    assert_int_equal(bad, 0);
    assert_true(fired >= tried - 1);
    static const uint32_t own[P_N] = { UBJ_NVM_ERR_START, UBJ_NVM_ERR_TIMER,
                                       UBJ_NVM_ERR_SYNC, UBJ_NVM_ERR_RECLAIM };
    assert_true(where_seen[own[p]] > 0);          /* the path meant */
    assert_true(where_seen[UBJ_NVM_ERR_UNMOUNT] > 0);
    ubjm_test_limits(0, 0);
}

static void test_start_write(void **s) { (void)s; sweep(P_START, UBJ_FAULT_WRITE, 24); }
static void test_start_flush(void **s) { (void)s; sweep(P_START, UBJ_FAULT_FLUSH, 12); }
static void test_timer_write(void **s) { (void)s; sweep(P_TIMER, UBJ_FAULT_WRITE, 24); }
static void test_timer_flush(void **s) { (void)s; sweep(P_TIMER, UBJ_FAULT_FLUSH, 12); }
static void test_sync_write(void **s) { (void)s; sweep(P_SYNC, UBJ_FAULT_WRITE, 24); }
static void test_sync_flush(void **s) { (void)s; sweep(P_SYNC, UBJ_FAULT_FLUSH, 12); }
static void test_reclaim_write(void **s) { (void)s; sweep(P_RECLAIM, UBJ_FAULT_WRITE, 24); }
static void test_reclaim_flush(void **s) { (void)s; sweep(P_RECLAIM, UBJ_FAULT_FLUSH, 12); }

/* test_fsck_tool -- `ubjfs fsck --nvm` of a pair left by a failed
 * checkpoint (a crash right after it) says what happened, and is clean. */
static void test_fsck_tool(void **state)
{
    (void)state;
    const char *tool = getenv("UBJ_TOOL");
    if (tool == NULL || access(tool, X_OK) != 0)
        skip();   /* run through ctest, which names the ubjfs binary */
    static struct truth t;
    truth_build(&t, P_RECLAIM);
    snprintf(desc, sizeof desc, "fsck tool");
    struct run r = { 0 };
    run_mount(&r, t.path);
    assert_ok(ubj_bdev_fault_arm(r.fdev, UBJ_FAULT_WRITE, 1, 1, 0));
    run_workload(&r, &t);
    assert_true(r.failed);
    run_crash_copy(&r);
    char img[320], cmd[1200], line[1024];
    snprintf(img, sizeof img, "%s.img", r.region);
    uint8_t *buf = malloc((size_t)NB * UT_BS);
    assert_ok(ubj_bdev_read(r.cdev, 0, NB, buf));
    assert_ok(ut_file_put(img, buf, (size_t)NB * UT_BS));
    free(buf);
    snprintf(cmd, sizeof cmd, "'%s' fsck --nvm '%s' '%s' 2>&1", tool, r.crash, img);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    int said = 0;
    while (fgets(line, sizeof line, p)) {
        fprintf(stderr, "  %s", line);
        said += strstr(line, "records that ") && strstr(line, "could not write") &&
                strstr(line, "committed blocks home (Input/output error)");
    }
    int st = pclose(p);
    assert_int_equal(said, 1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    unlink(img);
    unlink(r.crash);
    ubj_bdev_destroy(r.cdev);
    assert_true(ubj_unmount(r.fs) < 0);
    ubj_bdev_destroy(r.fdev);
    unlink(r.region);
    ubjm_test_limits(0, 0);
}

int main(void)
{
    alarm(600);   /* a hang fails the test */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_write),
        cmocka_unit_test(test_start_flush),
        cmocka_unit_test(test_timer_write),
        cmocka_unit_test(test_timer_flush),
        cmocka_unit_test(test_sync_write),
        cmocka_unit_test(test_sync_flush),
        cmocka_unit_test(test_reclaim_write),
        cmocka_unit_test(test_reclaim_flush),
        cmocka_unit_test(test_fsck_tool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
