/*
 * tests/ubj/differential.c -- mode ubj against mode none on the same long
 * random workload: every operation returns the same result on both, and
 * the trees (names, types, link counts, sizes, bytes) are equal every 50
 * operations, across remounts, and after all of it both images check
 * clean.  The workload is large enough to grow extent trees and split
 * directory B+trees, so that copy-on-write meets every metadata path of
 * the file system (a buffer modified without write access, or a stale
 * pointer into a superseded version, shows up here as a difference or, in
 * debug builds, as the frozen-bytes assertion of src/txn/ubj.c).
 * UBJ_DIFF_OPS (default 3000), UBJ_DIFF_SEED.
 */
#include "ubjtest.h"
#include "txn/ubj.h"

#define DF_BLOCKS 16384u

struct df_op {
    int kind;
    char a[64], b[64];
    uint64_t off, len, seed;
};
enum { DF_CREATE, DF_WRITE, DF_BIGWRITE, DF_TRUNC, DF_RENAME, DF_UNLINK,
       DF_MKDIR, DF_RMDIR, DF_LINK, DF_SYMLINK, DF_FSYNC, DF_SETATTR, DF_READ,
       DF_NKINDS };

/* df_name -- a random path among 3 directories x 120 names. */
static void df_name(struct tprng *r, char *buf, size_t len)
{
    static const char *const dirs[] = { "", "/d1", "/d1/d2", "/d3" };
    snprintf(buf, len, "%s/n%03u", dirs[tprng_below(r, 4)], (unsigned)tprng_below(r, 120));
}

/* df_random -- the next operation. */
static struct df_op df_random(struct tprng *r)
{
    static const int w[DF_NKINDS] = { 20, 16, 3, 4, 8, 8, 3, 1, 3, 2, 4, 2, 6 };
    int total = 0, k = 0;
    for (int i = 0; i < DF_NKINDS; i++)
        total += w[i];
    int x = (int)tprng_below(r, (uint64_t)total);
    while (x >= w[k])
        x -= w[k++];
    struct df_op op = { .kind = k };
    df_name(r, op.a, sizeof op.a);
    df_name(r, op.b, sizeof op.b);
    if (k == DF_MKDIR || k == DF_RMDIR) {
        static const char *const d[] = { "/d1", "/d1/d2", "/d3" };
        snprintf(op.a, sizeof op.a, "%s", d[tprng_below(r, 3)]);
    }
    op.len = 1 + tprng_below(r, k == DF_BIGWRITE ? 300000 : 9000);
    op.off = tprng_below(r, 400000);
    op.seed = tprng_next(r);
    return op;
}

/* df_apply -- run op; returns a result to compare (rc or a digest). */
static long long df_apply(struct ubj_fs *fs, const struct df_op *op)
{
    struct ubj_stat st;
    long long rc;
    uint8_t *buf;
    switch (op->kind) {
    case DF_CREATE: return tpath_create(fs, op->a, 0644, NULL);
    case DF_WRITE:
    case DF_BIGWRITE:
        buf = malloc(op->len);
        tpattern_fill(buf, op->len, op->seed, 0);
        rc = tpath_stat(fs, op->a, &st);
        if (rc == 0)
            rc = tpath_write(fs, op->a, buf, op->len,
                             (off_t)(op->seed & 1 ? st.size : op->off % (st.size + 4096)));
        free(buf);
        return rc;
    case DF_TRUNC: return tpath_truncate(fs, op->a, op->off);
    case DF_RENAME: return tpath_rename(fs, op->a, op->b, (unsigned)(op->seed % 3 == 0));
    case DF_UNLINK: return tpath_unlink(fs, op->a);
    case DF_MKDIR: return tpath_mkdir(fs, op->a, 0755, NULL);
    case DF_RMDIR: return tpath_rmdir(fs, op->a);
    case DF_LINK: return tpath_link(fs, op->a, op->b);
    case DF_SYMLINK: return tpath_symlink(fs, op->b, op->a);
    case DF_FSYNC: {
        ubj_ino_t ino = tpath_ino(fs, op->a);
        return ino ? ubj_fsync(fs, ino, 0) : ubj_sync(fs);
    }
    case DF_SETATTR: {
        ubj_ino_t ino = tpath_ino(fs, op->a);
        struct ubj_setattr sa = { .valid = UBJ_SET_MODE, .mode = (uint32_t)(op->seed & 0777) };
        return ino ? ubj_setattr(fs, ino, &sa, NULL) : -ENOENT;
    }
    case DF_READ:
        buf = malloc(op->len);
        rc = tpath_read(fs, op->a, buf, op->len, (off_t)op->off % 100000);
        if (rc > 0)
            rc = (long long)ubj_crc32c(0, buf, (size_t)rc) + 1000000;
        free(buf);
        return rc;
    default:
        return -EINVAL;
    }
}

struct df {
    struct ubj_bdev *ndev, *udev;
    struct ubj_fs *nfs, *ufs;
    char region[256];
    uint32_t nbufs;
    struct ubj_fs_stats sum;      /* ubj's counters over every mount */
    unsigned ok;                  /* ops that succeeded */
};

/* df_add_stats -- add the ubj mount's counters to d->sum. */
static void df_add_stats(struct df *d)
{
    struct ubj_fs_stats st;
    ubj_fs_stats_get(d->ufs, &st);
    d->sum.commits += st.commits;
    d->sum.checkpoints += st.checkpoints;
    d->sum.cow_copies += st.cow_copies;
    d->sum.nvm_bytes += st.nvm_bytes;
}

/* df_remount -- unmount and mount both again. */
static void df_remount(struct df *d)
{
    ubj_test_remount(d->ndev, &d->nfs);
    df_add_stats(d);
    assert_ok(ubj_unmount(d->ufs));
    assert_ok(ut_mount(d->udev, d->region, 0, 0, 0, &d->ufs));
}

/* df_run -- the workload with a region of nbufs buffers. */
static void df_run(uint32_t nbufs, uint64_t seed, unsigned nops)
{
    struct df d = { .nbufs = nbufs };
    ut_region_path(d.region, sizeof d.region, "diff");
    assert_int_equal(ubj_bdev_ram_create(DF_BLOCKS, &d.ndev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_NONE, .inodes = 4096 };
    assert_ok(ubj_format(d.ndev, &fo));
    assert_ok(ubj_test_mount(d.ndev, 0, &d.nfs));
    assert_int_equal(ubj_bdev_ram_create(DF_BLOCKS, &d.udev), 0);
    fo.mode = UBJ_MODE_UBJ;
    assert_ok(ubj_format(d.udev, &fo));
    unlink(d.region);
    assert_ok(ut_mount(d.udev, d.region, nbufs, UBJ_NVM_FORMAT, 0, &d.ufs));
    struct tprng r;
    tprng_seed(&r, seed);
    for (unsigned i = 1; i <= nops; i++) {
        struct df_op op = df_random(&r);
        long long a = df_apply(d.nfs, &op), b = df_apply(d.ufs, &op);
        d.ok += a >= 0;
        if (a != b)
            fail_msg("op %u (kind %d %s %s): none %lld, ubj %lld (%s)", i, op.kind,
                     op.a, op.b, a, b, ubj_errormsg());
        if (i % 50 == 0 && ut_digest(d.nfs) != ut_digest(d.ufs))
            fail_msg("after op %u the trees differ", i);
        if (i % 1000 == 0)
            df_remount(&d);
    }
    assert_int_equal(ut_digest(d.nfs), ut_digest(d.ufs));
    df_add_stats(&d);
    struct ubj_fs_stats st = d.sum;
    fprintf(stderr, "differential (%u buffers): %u ops (%u succeeded); ubj: %llu "
            "commits, %llu checkpoints, %llu copies on write, %llu NVM bytes\n",
            nbufs, nops, d.ok, (unsigned long long)st.commits,
            (unsigned long long)st.checkpoints,
            (unsigned long long)st.cow_copies, (unsigned long long)st.nvm_bytes);
    assert_true(st.cow_copies > 100 && st.checkpoints > 2);
    ubj_test_fs_done(d.ndev, d.nfs);
    ubj_test_fs_done(d.udev, d.ufs);
    unlink(d.region);
}

/* a tiny cache: commits at handle boundaries, copies, checkpoints, reclaim. */
static void test_small_cache(void **state)
{
    (void)state;
    df_run(256, tprng_env_seed("UBJ_DIFF_SEED", 4242),
           (unsigned)tprng_env_seed("UBJ_DIFF_OPS", 3000));
}

/* a larger cache: long transactions, many versions. */
static void test_large_cache(void **state)
{
    (void)state;
    df_run(4096, tprng_env_seed("UBJ_DIFF_SEED", 4242) + 1,
           (unsigned)tprng_env_seed("UBJ_DIFF_OPS", 3000));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_cache),
        cmocka_unit_test(test_large_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
