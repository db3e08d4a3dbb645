/*
 * fault/inject.c -- device errors under a workload, with
 * ubj_bdev_fault_create over a RAM device: EIO on the nth read, write or
 * flush (transient and persistent, nth swept over the whole workload),
 * torn writes, faults during mount, format and fsck.
 *
 * A persistent fault stays armed through the unmount; a transient one has
 * passed.  What is asserted for each run:
 *  - every call returns 0 / a count or a negative errno; counts are never
 *    more than asked; no call fails before the fault has fired (so the
 *    fault-free part of the run behaves exactly like the clean run);
 *  - once a fault has fired, some call (possibly the unmount) reports
 *    -EIO to its caller (EIO surfaces, it is not swallowed);
 *  - nothing hangs (an alarm kills the executable) or crashes;
 *  - after disarming and unmounting (errors allowed), ubj_check on the
 *    RAW lower device returns CLEAN, or UNCORRECTED and then, with
 *    UBJ_CHECK_REPAIR, REPAIRED followed by a CLEAN second pass; the
 *    repaired image mounts, its whole tree can be walked without an
 *    error, it takes new files, and it unmounts fsck-clean.
 *
 * What mode `none` can and cannot promise here.  `none` is write-back
 * with no ordering and no journal (ext2-like): blocks reach the device in
 * whatever order the cache evicts them, and after the first I/O error the
 * mount refuses changes (-EROFS) and writes nothing more.  So the device
 * then holds some mix of old and new blocks: fsck may find orphan inodes,
 * leaked or doubly-claimed blocks, wrong counts, entries pointing at free
 * inodes, or (after a torn write) blocks with bad checksums -- it can
 * repair them, which is all that is asserted about the image.  It does
 * NOT promise that anything written before the error survives, with one
 * exception asserted below for plain (untorn) EIO: a file written and
 * ubj_sync()'d before the fault was armed, in a directory the workload
 * never changes, has its blocks and entries untouched afterwards, so it
 * is intact after repair.  (A torn write may garble an inode-table or
 * bitmap block shared with that file, so then nothing is promised.)
 */
#include "testutil.h"

#include <signal.h>
#include <unistd.h>

#define DEV_BLOCKS 1024u
#define KEEP_LEN 20000u

/* One run's observations. */
struct run {
    struct ubj_bdev *fdev;    /* fault device (top) */
    struct ubj_fs *fs;
    int saw_eio;
    long calls, errors;
    const char *what;         /* description for messages */
};

static char run_desc[200];

/* ck -- record a call's result: a negative errno (never before the fault
 * fired), or a non-negative count not above `max` (-1: no bound). */
static long long ck(struct run *r, long long rc, long long max, const char *call,
                    int line)
{
    r->calls++;
    if (rc < 0) {
        r->errors++;
        if (rc < -4095)
            fail_msg("%s: line %d: %s returned %lld (not an errno)", run_desc, line,
                     call, rc);
        if (ubj_bdev_fault_fired(r->fdev) == 0)
            fail_msg("%s: line %d: %s failed with %lld (%s) before any fault",
                     run_desc, line, call, rc, ubj_errormsg());
        if (rc == -EIO)
            r->saw_eio = 1;
    } else if (max >= 0 && rc > max) {
        fail_msg("%s: line %d: %s returned %lld > %lld", run_desc, line, call, rc, max);
    }
    return rc;
}
#define CK(r, x) ck((r), (long long)(x), -1, #x, __LINE__)
#define CKN(r, x, max) ck((r), (long long)(x), (long long)(max), #x, __LINE__)

/* w_path -- "/w/d<k>/<prefix><i>". */
static void w_path(char *buf, size_t sz, int k, const char *prefix, int i)
{
    snprintf(buf, sz, "/w/d%d/%s%d", k, prefix, i);
}

/* w_file_op -- write, read back (checked while no fault fired), fsync. */
static void w_file_op(struct run *r, const char *p, int i, uint8_t *buf, uint8_t *out)
{
    struct ubj_fs *fs = r->fs;
    struct ubj_stat st;
    if (CK(r, tpath_create(fs, p, 0644, &st)) < 0)
        return;
    size_t len = 3000 + (size_t)(i * 7919) % 20000;
    off_t off = (i % 4) * 1000;
    tpattern_fill(buf, len, (uint64_t)i, (uint64_t)off);
    CKN(r, ubj_pwrite(fs, st.ino, buf, len, off), len);
    uint64_t fired = ubj_bdev_fault_fired(r->fdev);
    ssize_t n = CKN(r, ubj_pread(fs, st.ino, out, len, off), len);
    if (fired == 0 && ubj_bdev_fault_fired(r->fdev) == 0) {
        if (n != (ssize_t)len || tpattern_check(out, len, (uint64_t)i, (uint64_t)off) != len)
            fail_msg("%s: read back of %s differs", run_desc, p);
    }
    if (i % 5 == 0)
        CK(r, ubj_fsync(fs, st.ino, i % 2));
    if (i % 7 == 0) {
        struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = len / 3 };
        CK(r, ubj_setattr(fs, st.ino, &sa, NULL));
    }
}

/* workload -- a fixed mix of namespace and data operations under /w. */
static void workload(struct run *r, int rounds)
{
    struct ubj_fs *fs = r->fs;
    static uint8_t buf[32768], out[32768];
    char p[96], q[96];
    for (int k = 0; k < 4; k++) {
        snprintf(p, sizeof p, "/w/d%d", k);
        CK(r, tpath_mkdir(fs, p, 0755, NULL));
    }
    for (int i = 0; i < rounds; i++) {
        int k = i % 4;
        w_path(p, sizeof p, k, "f", i);
        w_file_op(r, p, i, buf, out);
        if (i % 3 == 0) {
            w_path(q, sizeof q, (k + 1) % 4, "g", i);
            CK(r, tpath_rename(fs, p, q, 0));
        }
        if (i % 4 == 1 && i > 4) {          /* f(i-4), or where it went */
            int j = i - 4;
            if (j % 3 == 0)
                w_path(q, sizeof q, (j + 1) % 4, "g", j);
            else
                w_path(q, sizeof q, j % 4, "f", j);
            CK(r, tpath_unlink(fs, q));
        }
        if (i % 6 == 2) {
            w_path(q, sizeof q, k, "s", i);
            CK(r, tpath_symlink(fs, "../d0/f0", q));
            w_path(q, sizeof q, k, "l", i);
            CK(r, tpath_link(fs, p, q));
        }
        if (i % 8 == 3) {
            snprintf(q, sizeof q, "/w/d%d/sub%d", k, i);
            CK(r, tpath_mkdir(fs, q, 0755, NULL));
            CK(r, tpath_rmdir(fs, q));
        }
        if (i % 10 == 9)
            CK(r, ubj_sync(fs));
        if (i % 5 == 2 && i > 12) {         /* re-read an older, evicted file */
            int j = i - 12;
            w_path(q, sizeof q, j % 3 == 0 ? (j + 1) % 4 : j % 4, j % 3 == 0 ? "g" : "f", j);
            if (j % 4 != 1) {                
                struct ubj_stat st;
                if (CK(r, tpath_stat(fs, q, &st)) == 0)
                    CKN(r, ubj_pread(fs, st.ino, out, sizeof out, 0), sizeof out);
            }
        }
        if (i % 9 == 4) {
            struct tdirent *v;
            size_t n;
            ubj_ino_t d = tpath_ino(fs, "/w/d1");
            if (d && CK(r, tdir_list(fs, d, &v, &n)) == 0)
                free(v);
        }
    }
    struct ubj_statfs sf;
    CK(r, ubj_statfs_get(fs, &sf));
}

/* walk -- read every name, attribute and byte under dir `ino`; every
 * call must succeed (the image is clean).  Returns files seen. */
static long walk(struct ubj_fs *fs, ubj_ino_t ino, int depth)
{
    struct tdirent *v;
    size_t n;
    static uint8_t buf[65536];
    assert_ok(tdir_list(fs, ino, &v, &n));
    long files = 0;
    for (size_t i = 2; i < n; i++) {
        struct ubj_stat st;
        assert_ok(ubj_getattr(fs, v[i].ino, &st));
        if (S_ISDIR(st.mode) && depth < 20) {
            files += walk(fs, v[i].ino, depth + 1);
        } else if (S_ISREG(st.mode)) {
            files++;
            for (uint64_t off = 0; off < st.size; off += sizeof buf)
                assert_true(ubj_pread(fs, v[i].ino, buf, sizeof buf, (off_t)off) > 0);
        } else if (S_ISLNK(st.mode)) {
            assert_true(ubj_readlink(fs, v[i].ino, (char *)buf, sizeof buf) > 0);
        }
    }
    free(v);
    return files;
}

/* prepare -- format the RAM device, create /keep/file (synced) and /w,
 * wrap in a fault device.  Returns the fault device. */
static struct ubj_bdev *prepare(void)
{
    struct ubj_bdev *ram, *fdev;
    struct ubj_fs *fs;
    ubj_test_fs_new(DEV_BLOCKS, &ram, &fs);
    static uint8_t keep[KEEP_LEN];
    tpattern_fill(keep, sizeof keep, 99, 0);
    assert_ok(tpath_mkdir(fs, "/keep", 0755, NULL));
    assert_ok(tpath_put(fs, "/keep/file", keep, sizeof keep));
    assert_ok(tpath_mkdir(fs, "/w", 0755, NULL));
    assert_ok(ubj_unmount(fs));
    assert_ok(ubj_bdev_fault_create(ram, &fdev));
    return fdev;
}

/* mount_small -- a mount with a small cache so the workload does I/O. */
static int mount_small(struct ubj_bdev *dev, struct ubj_fs **fs)
{
    struct ubj_config cfg = { .cache_blocks = 64, .flags = UBJ_MOUNT_NO_TIMER };
    return ubj_mount(dev, &cfg, fs);
}

/* check_quiet -- ubj_check printing at most a few lines; *lines counts
 * the problem lines (informational "note:" lines, such as "not cleanly
 * unmounted" after a mount that failed half-way, are not problems). */
struct qctx { int lines, printed; };

/* q_report -- print a few lines, count problem lines. */
static void q_report(void *ctx, const char *line)
{
    struct qctx *q = ctx;
    if (q->printed++ < 3)
        fprintf(stderr, "    fsck: %s\n", line);
    if (strncmp(line, "note:", 5) != 0)
        q->lines++;
}

/* check_quiet -- ubj_check with q_report. */
static int check_quiet(struct ubj_bdev *dev, unsigned flags, int *lines)
{
    struct qctx q = { 0 };
    int rc = ubj_check(dev, flags, q_report, &q);
    *lines = q.lines;
    return rc;
}

static int n_clean, n_repaired;   /* fsck outcomes, printed per sweep */

/* verify_after -- fsck (and repair), mount, walk, use, unmount, clean. */
static void verify_after(struct ubj_bdev *lower, int keep_promised)
{
    int lines;
    int rc = check_quiet(lower, 0, &lines);
    if (rc == UBJ_CHECK_CLEAN)
        n_clean++;
    else
        n_repaired++;
    if (rc != UBJ_CHECK_CLEAN) {
        if (rc != UBJ_CHECK_UNCORRECTED)
            fail_msg("%s: fsck -n returned %d", run_desc, rc);
        assert_true(lines > 0);
        rc = check_quiet(lower, UBJ_CHECK_REPAIR, &lines);
        if (rc != UBJ_CHECK_REPAIRED)
            fail_msg("%s: fsck -y returned %d (want REPAIRED)", run_desc, rc);
        rc = check_quiet(lower, 0, &lines);
        if (rc != UBJ_CHECK_CLEAN || lines != 0)
            fail_msg("%s: fsck after repair returned %d with %d lines", run_desc, rc,
                     lines);
    } else if (lines != 0) {
        fail_msg("%s: fsck CLEAN but %d lines", run_desc, lines);
    }
    struct ubj_fs *fs;
    rc = ubj_test_mount(lower, 0, &fs);
    if (rc != 0)
        fail_msg("%s: mount after fsck: %d %s", run_desc, rc, ubj_errormsg());
    walk(fs, UBJ_ROOT_INO, 0);
    if (keep_promised) {
        static uint8_t out[KEEP_LEN + 1];
        ssize_t n = tpath_read(fs, "/keep/file", out, sizeof out, 0);
        if (n != KEEP_LEN || tpattern_check(out, KEEP_LEN, 99, 0) != KEEP_LEN)
            fail_msg("%s: /keep/file lost or changed (%zd)", run_desc, n);
    }
    assert_ok(tpath_put(fs, "/after", "after", 5));
    assert_ok(tpath_mkdir(fs, "/after-dir", 0755, NULL));
    assert_ok(ubj_unmount(fs));
    rc = check_quiet(lower, 0, &lines);
    if (rc != UBJ_CHECK_CLEAN || lines != 0)
        fail_msg("%s: fsck after use returned %d with %d lines", run_desc, rc, lines);
}

/* one_run -- arm, mount (arm_before_mount) or mount then arm, workload,
 * disarm, unmount, verify.  Returns whether the fault fired. */
static int one_run(enum ubj_fault_op op, uint64_t nth, int persistent, uint32_t torn,
                   int arm_before_mount, int rounds)
{
    static const char *opn[] = { "read", "write", "flush" };
    snprintf(run_desc, sizeof run_desc, "%s fault #%llu %s%s%s", opn[op],
             (unsigned long long)nth, persistent ? "persistent" : "transient",
             torn ? " torn" : "", arm_before_mount ? " from mount" : "");
    struct run r = { .fdev = prepare() };
    if (arm_before_mount)
        assert_ok(ubj_bdev_fault_arm(r.fdev, op, nth, persistent, torn));
    int rc = CK(&r, mount_small(r.fdev, &r.fs));
    if (rc == 0) {
        if (!arm_before_mount)
            assert_ok(ubj_bdev_fault_arm(r.fdev, op, nth, persistent, torn));
        workload(&r, rounds);
        /* a persistent fault stays armed through the unmount (the device
         * keeps the mix of blocks the failure left, like a dead disk); a
         * transient one is over anyway */
        if (!persistent)
            assert_ok(ubj_bdev_fault_disarm(r.fdev));
        CK(&r, ubj_unmount(r.fs));
    }
    assert_ok(ubj_bdev_fault_disarm(r.fdev));
    int fired = ubj_bdev_fault_fired(r.fdev) > 0;
    if (fired && !r.saw_eio)
        fail_msg("%s: the fault fired but no call returned -EIO", run_desc);
    if (!fired && r.errors)
        fail_msg("%s: %ld errors without a fault", run_desc, r.errors);
    verify_after(r.fdev->lower, !torn);
    ubj_bdev_destroy(r.fdev);
    return fired;
}

/* count_requests -- the clean run's requests of each kind after mount. */
static void count_requests(int rounds, uint64_t n[3])
{
    snprintf(run_desc, sizeof run_desc, "clean run");
    struct run r = { .fdev = prepare() };
    assert_ok(mount_small(r.fdev, &r.fs));
    struct ubj_bdev_stats s0, s1;
    ubj_bdev_stats_get(r.fdev, &s0);
    workload(&r, rounds);
    assert_ok(ubj_unmount(r.fs));
    ubj_bdev_stats_get(r.fdev, &s1);
    assert_int_equal(r.errors, 0);
    n[0] = s1.reads - s0.reads;
    n[1] = s1.writes - s0.writes;
    n[2] = s1.flushes - s0.flushes;
    fprintf(stderr, "clean workload: %llu reads, %llu writes, %llu flushes, "
            "%ld calls\n", (unsigned long long)n[0], (unsigned long long)n[1],
            (unsigned long long)n[2], r.calls);
    verify_after(r.fdev->lower, 1);
    ubj_bdev_destroy(r.fdev);
}

#define ROUNDS 120

/* sweep -- nth over [1, total] in about `runs` steps (and total + 1, which
 * never fires). */
static void sweep(enum ubj_fault_op op, int persistent, uint32_t torn, int runs)
{
    uint64_t n[3];
    count_requests(ROUNDS, n);
    uint64_t total = n[op];
    assert_true(total > 0);
    uint64_t step = total / (uint64_t)runs + 1;
    int fired = 0, tried = 0;
    n_clean = n_repaired = 0;
    for (uint64_t nth = 1; nth <= total; nth += step) {
        fired += one_run(op, nth, persistent, torn, 0, ROUNDS);
        tried++;
    }
    assert_int_equal(one_run(op, total + 1, persistent, torn, 0, ROUNDS), 0);
    fprintf(stderr, "%s sweep (%s%s): %d of %d runs fired; fsck: %d clean, "
            "%d repaired\n",
            op == UBJ_FAULT_READ ? "read" : op == UBJ_FAULT_WRITE ? "write" : "flush",
            persistent ? "persistent" : "transient", torn ? ", torn" : "", fired, tried,
            n_clean, n_repaired);
    assert_true(fired >= tried - 1);
}

/* test_<kind>_<persistence> -- one sweep each. */
static void test_read_transient(void **s) { (void)s; sweep(UBJ_FAULT_READ, 0, 0, 40); }
static void test_read_persistent(void **s) { (void)s; sweep(UBJ_FAULT_READ, 1, 0, 40); }
static void test_write_transient(void **s) { (void)s; sweep(UBJ_FAULT_WRITE, 0, 0, 40); }
static void test_write_persistent(void **s) { (void)s; sweep(UBJ_FAULT_WRITE, 1, 0, 40); }
static void test_flush_transient(void **s) { (void)s; sweep(UBJ_FAULT_FLUSH, 0, 0, 20); }
static void test_flush_persistent(void **s) { (void)s; sweep(UBJ_FAULT_FLUSH, 1, 0, 20); }

/* test_torn -- torn writes of 1, 4 and 7 sectors, transient and
 * persistent: only repairability is asserted. */
static void test_torn(void **s)
{
    (void)s;
    const uint32_t torn[] = { 1, 4, 7 };
    for (int i = 0; i < 3; i++) {
        sweep(UBJ_FAULT_WRITE, 0, torn[i], 15);
        sweep(UBJ_FAULT_WRITE, 1, torn[i], 15);
    }
}

/* test_mount_faults -- faults on each of mount's first requests. */
static void test_mount_faults(void **s)
{
    (void)s;
    for (int op = 0; op < 3; op++)
        for (uint64_t nth = 1; nth <= 12; nth++)
            for (int p = 0; p < 2; p++)
                one_run((enum ubj_fault_op)op, nth, p, 0, 1, 8);
}

/* test_format_faults -- format over a failing device returns an error
 * (never crashes); fsck of the result never crashes either. */
static void test_format_faults(void **s)
{
    (void)s;
    for (int op = 1; op < 3; op++) {
        for (uint64_t nth = 1; nth <= 40; nth += 3) {
            struct ubj_bdev *ram, *fdev;
            assert_ok(ubj_bdev_ram_create(DEV_BLOCKS, &ram));
            assert_ok(ubj_bdev_fault_create(ram, &fdev));
            assert_ok(ubj_bdev_fault_arm(fdev, (enum ubj_fault_op)op, nth, 0, 0));
            int rc = ubj_format(fdev, NULL);
            uint64_t fired = ubj_bdev_fault_fired(fdev);
            if (fired)
                assert_rc(rc, -EIO);
            else
                assert_ok(rc);
            assert_true(ubj_errormsg()[0] != '\0' || rc == 0);
            int lines;
            rc = check_quiet(fdev, 0, &lines);
            assert_true(rc == UBJ_CHECK_CLEAN || rc == UBJ_CHECK_UNCORRECTED ||
                        rc == UBJ_CHECK_OPERROR);
            ubj_bdev_destroy(fdev);
        }
    }
}

/* test_check_faults -- fsck over a device that fails reads: OPERROR for
 * the superblock, never a crash; a later clean pass is CLEAN. */
static void test_check_faults(void **s)
{
    (void)s;
    struct ubj_bdev *fdev = prepare();
    struct ubj_fs *fs;
    assert_ok(mount_small(fdev, &fs));
    struct run r = { .fdev = fdev, .fs = fs };
    workload(&r, 20);
    assert_ok(ubj_unmount(fs));
    int lines;
    assert_ok(ubj_bdev_fault_arm(fdev, UBJ_FAULT_READ, 1, 1, 0));
    assert_int_equal(check_quiet(fdev, 0, &lines), UBJ_CHECK_OPERROR);
    assert_ok(ubj_bdev_fault_disarm(fdev));
    for (uint64_t nth = 2; nth < 200; nth += 7) {
        for (int p = 0; p < 2; p++) {
            assert_ok(ubj_bdev_fault_arm(fdev, UBJ_FAULT_READ, nth, p, 0));
            int rc = check_quiet(fdev, p ? UBJ_CHECK_REPAIR : 0, &lines);
            assert_true(rc == UBJ_CHECK_CLEAN || rc == UBJ_CHECK_UNCORRECTED ||
                        rc == UBJ_CHECK_OPERROR);
            assert_ok(ubj_bdev_fault_disarm(fdev));
        }
        /* a failed read must not have made the check "repair" anything */
        assert_int_equal(check_quiet(fdev, 0, &lines), UBJ_CHECK_CLEAN);
    }
    ubj_bdev_destroy(fdev);
}

/* main -- run this suite's tests. */
int main(void)
{
    alarm(300);   /* a hang fails the run instead of waiting for ctest */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_transient), cmocka_unit_test(test_read_persistent),
        cmocka_unit_test(test_write_transient), cmocka_unit_test(test_write_persistent),
        cmocka_unit_test(test_flush_transient), cmocka_unit_test(test_flush_persistent),
        cmocka_unit_test(test_torn), cmocka_unit_test(test_mount_faults),
        cmocka_unit_test(test_format_faults), cmocka_unit_test(test_check_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
