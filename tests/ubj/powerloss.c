/*
 * tests/ubj/powerloss.c -- simulated power failure at every persistence
 * point of a workload in mode ubj (issue 3, item 6b and 6c).
 *
 * A deterministic random workload (creates, appends, overwrites,
 * truncates, renames, links, unlinks, mkdir/rmdir, fsync, sync) runs on a
 * mode-ubj mount -- a tiny cache so that commits at handle boundaries,
 * copies on write, checkpoints and reclaim all happen -- and, op for op, on
 * a mode-none reference mount whose tree digest after each op is the
 * truth.  The region is recorded by the nvm shadow (src/nvm/shadow.c); the
 * image sits on a crash device that knows which blocks were flushed.
 *
 * A first run counts the persistence points P (every drain, from the
 * mount's to the unmount's).  Then for each point k (all of them, or
 * UBJ_POWERLOSS_STRIDE apart) the workload is run again and, right before
 * drain k takes effect, the state is captured; from it crash images are
 * built with three policies: only what was durable, everything, and
 * random mixes (each 8-byte word of NVM and each unflushed device block
 * independently kept or lost: partially persisted cache lines).  For
 * each crash image:
 *   1. ubj_check through the overlay of (image, region) is clean;
 *   2. the commit record C in the region maps to the number of ops that
 *      had completed when C committed (a commit hook records it); that is
 *      at least the ops completed when the last acknowledged fsync/sync
 *      returned before the crash (nothing fsync'd is lost);
 *   3. mount (recovery) shows exactly the reference tree after those ops:
 *      nothing of an uncommitted transaction, no half operation;
 *   4. unmount (checkpoint) leaves an image ubj_check finds clean.
 * Deliberately broken variants (a persist left out; src/txn/ubj.h) must
 * each be caught by the same exploration.
 *
 * Environment: UBJ_POWERLOSS_SEED, UBJ_POWERLOSS_OPS (default 70),
 * UBJ_POWERLOSS_STRIDE (default 1: every point), UBJ_POWERLOSS_RANDOM
 * (random images per point, default 2).
 */
#include "ubjtest.h"
#include "txn/ubj.h"

#if UBJ_TEST_HOOKS   /* every test: ubjm_test_on_commit, broken variants */
#define PL_BLOCKS 1024u
#define PL_BUFS 64u
#define PL_MAXOPS 400u
#define PL_MAXC 4096u

struct pl {
    uint64_t seed;
    unsigned nops;
    char region[256], crash[320];
    struct ubj_bdev *cdev;
    struct ubj_fs *fs;
    struct ubj_nvm_shadow *sh;
    /* truth, from the first run */
    uint64_t digest[PL_MAXOPS + 1];
    long long rc[PL_MAXOPS + 1];
    uint64_t points;
    struct ubj_fs_stats stats;   /* of the first run, before unmount */
    unsigned ops_changed;        /* ops that changed the tree */
    /* per run */
    unsigned ops_done, acked;
    unsigned acked_at_capture;
    uint64_t map_txid[PL_MAXC];
    unsigned map_ops[PL_MAXC];
    unsigned nmap;
    uint64_t base_txid;      /* the record before the run: the empty tree */
    /* results */
    unsigned checked, failures;
    int quiet;               /* broken variants: count, do not fail */
};

/* pl_on_commit -- commit hook: txid committed after ops_done ops. */
static void pl_on_commit(void *ctx, uint64_t txid)
{
    struct pl *p = ctx;
    assert_true(p->nmap < PL_MAXC);
    if (getenv("UBJ_POWERLOSS_TRACE"))
        fprintf(stderr, "commit %llu after op %u at point %llu\n",
                (unsigned long long)txid, p->ops_done,
                (unsigned long long)ubj_nvm_shadow_points(p->sh));
    p->map_txid[p->nmap] = txid;
    p->map_ops[p->nmap++] = p->ops_done;
}

/* pl_on_capture -- the shadow captured the region: capture the device. */
static void pl_on_capture(void *ctx)
{
    struct pl *p = ctx;
    ut_cdev_capture(p->cdev);
    p->acked_at_capture = p->acked;
}

/* pl_ops_of -- ops completed at commit txid; -1 if unknown. */
static long pl_ops_of(const struct pl *p, uint64_t txid)
{
    if (txid <= p->base_txid)
        return 0;
    for (unsigned i = 0; i < p->nmap; i++)
        if (p->map_txid[i] == txid)
            return p->map_ops[i];
    return -1;
}

/* pl_last_change -- the last op at or before op i that changed the tree
 * (an fsync of an unchanged tree acknowledges what the last change left). */
static unsigned pl_last_change(const struct pl *p, unsigned i)
{
    while (i > 0 && p->digest[i] == p->digest[i - 1])
        i--;
    return i;
}

/* pl_reference -- a mode-none mount to replay the ops on. */
static struct ubj_fs *pl_reference(struct ubj_bdev **dev)
{
    struct ubj_fs *fs;
    assert_int_equal(ubj_bdev_ram_create(PL_BLOCKS, dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_NONE };
    assert_ok(ubj_format(*dev, &fo));
    assert_ok(ubj_test_mount(*dev, 0, &fs));
    return fs;
}

/* pl_run -- one run of the workload; arm the shadow at `arm` (0: none).
 * The first run (truth != 0) also replays every op on the reference. */
static void pl_run(struct pl *p, uint64_t arm, int truth)
{
    struct ubj_bdev *refdev = NULL;
    struct ubj_fs *ref = truth ? pl_reference(&refdev) : NULL;
    p->cdev = ut_cdev_new(PL_BLOCKS);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(p->cdev, &fo));
    assert_ok(ubj_bdev_flush(p->cdev));
    unlink(p->region);
    struct ubj_fs *fs;
    assert_ok(ut_mount(p->cdev, p->region, PL_BUFS, UBJ_NVM_FORMAT, 0, &fs));
    assert_ok(ubj_unmount(fs));           /* an empty, formatted region */
    struct ubj_nvm *r;
    assert_ok(ubj_nvm_open(p->region, 0, &r));
    p->base_txid = ubj_nvm_committed(r);
    ubj_nvm_close(r);
    p->ops_done = p->acked = p->acked_at_capture = 0;
    p->nmap = 0;
    ubj_nvm_shadow_arm(p->sh, arm, pl_on_capture, p);
    ubj_nvm_shadow_install(p->sh);
    ubjm_test_on_commit(pl_on_commit, p);
    assert_ok(ut_mount(p->cdev, p->region, 0, 0, 0, &p->fs));
    ubj_nvm_shadow_install(NULL);
    if (truth)
        p->digest[0] = ut_digest(ref);
    struct tprng rng;
    tprng_seed(&rng, p->seed);
    for (unsigned i = 1; i <= p->nops; i++) {
        struct ut_op op = ut_op_random(&rng, 9000);
        long long rc = ut_op_apply(p->fs, &op);
        if (truth) {
            long long want = ut_op_apply(ref, &op);
            if (rc != want)
                fail_msg("op %u (kind %d %s %s): ubj %lld, reference %lld (%s)",
                         i, op.kind, op.a, op.b, rc, want, ubj_errormsg());
            p->rc[i] = rc;
            p->digest[i] = ut_digest(ref);
        } else if (rc != p->rc[i]) {
            fail_msg("op %u: %lld, first run %lld", i, rc, p->rc[i]);
        }
        p->ops_done = i;
        if ((op.kind == UT_OP_FSYNC || op.kind == UT_OP_SYNC) && rc == 0)
            p->acked = i;
    }
    if (truth) {
        ubj_fs_stats_get(p->fs, &p->stats);
        p->ops_changed = 0;
        for (unsigned i = 1; i <= p->nops; i++)
            p->ops_changed += p->digest[i] != p->digest[i - 1];
    }
    assert_ok(ubj_unmount(p->fs));
    p->fs = NULL;
    ubjm_test_on_commit(NULL, NULL);
    if (truth) {
        p->points = ubj_nvm_shadow_points(p->sh);
        assert_ok(ubj_unmount(ref));
        ubj_bdev_destroy(refdev);
    }
}

/* pl_fail -- one failed check: fail now, or count it (broken variants). */
#define pl_fail(p, ...) do {                                   \
        (p)->failures++;                                       \
        if (!(p)->quiet)                                       \
            fail_msg(__VA_ARGS__);                             \
    } while (0)

/* pl_dump -- print a tree (names, types, sizes, content crcs). */
static void pl_dump(struct ubj_fs *fs, ubj_ino_t ino, const char *prefix)
{
    struct tdirent *v;
    size_t n;
    if (tdir_list(fs, ino, &v, &n) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct ubj_stat st;
        if (!strcmp(v[i].name, ".") || !strcmp(v[i].name, "..") ||
            ubj_getattr(fs, v[i].ino, &st) < 0)
            continue;
        uint32_t crc = 0;
        if (S_ISREG(st.mode)) {
            uint8_t *buf = malloc(st.size + 1);
            ubj_pread(fs, v[i].ino, buf, st.size, 0);
            crc = ubj_crc32c(0, buf, st.size);
            free(buf);
        }
        fprintf(stderr, "    %s/%s ino %llu mode %o nlink %u size %llu crc %08x\n",
                prefix, v[i].name, (unsigned long long)v[i].ino, st.mode, st.nlink,
                (unsigned long long)st.size, crc);
        if (S_ISDIR(st.mode)) {
            char sub[600];
            snprintf(sub, sizeof sub, "%.200s/%.255s", prefix, v[i].name);
            pl_dump(fs, v[i].ino, sub);
        }
    }
    free(v);
}

/* pl_dump_reference -- the reference tree after `ops` ops. */
static void pl_dump_reference(const struct pl *p, long ops)
{
    struct ubj_bdev *dev;
    struct ubj_fs *ref = pl_reference(&dev);
    struct tprng rng;
    tprng_seed(&rng, p->seed);
    for (long i = 1; i <= ops; i++) {
        struct ut_op op = ut_op_random(&rng, 9000);
        long long rc = ut_op_apply(ref, &op);
        if (i > ops - 4)
            fprintf(stderr, "  op %ld: kind %d %s %s off %llu len %llu -> %lld\n", i,
                    op.kind, op.a, op.b, (unsigned long long)op.off,
                    (unsigned long long)op.len, rc);
    }
    fprintf(stderr, "  reference after op %ld:\n", ops);
    pl_dump(ref, UBJ_ROOT_INO, "");
    ubj_unmount(ref);
    ubj_bdev_destroy(dev);
}

/* pl_check_image -- checks 1-4 on one crash image. */
static void pl_check_image(struct pl *p, uint64_t k, enum ubj_shadow_policy pol,
                           uint64_t seed, uint8_t *img)
{
    size_t size = ubj_nvm_shadow_size(p->sh);
    assert_ok(ubj_nvm_shadow_image(p->sh, pol, seed, img));
    assert_ok(ut_file_put(p->crash, img, size));
    struct ubj_bdev *dev = ut_cdev_image(p->cdev, pol, seed);
    uint64_t C;
    memcpy(&C, img + 256, 8);
    long ops = pl_ops_of(p, C);
    p->checked++;
    int lines, r = ut_check_pair(dev, p->crash, &lines);
    struct ubj_fs *fs = NULL;
    if (r != UBJ_CHECK_CLEAN) {
        pl_fail(p, "point %llu policy %d seed %llu: fsck of the pair: %d",
                (unsigned long long)k, pol, (unsigned long long)seed, r);
    } else if (ops < 0) {
        pl_fail(p, "point %llu: commit record %llu unknown", (unsigned long long)k,
                (unsigned long long)C);
    } else if ((unsigned)ops < pl_last_change(p, p->acked_at_capture)) {
        pl_fail(p, "point %llu policy %d: recovered to op %ld, but op %u was "
                "acknowledged by fsync", (unsigned long long)k, pol, ops,
                p->acked_at_capture);
    } else {
        int rc = ut_mount(dev, p->crash, 0, 0, 0, &fs);
        if (rc < 0) {
            pl_fail(p, "point %llu policy %d: mount: %d %s", (unsigned long long)k,
                    pol, rc, ubj_errormsg());
            fs = NULL;
        } else if (ut_digest(fs) != p->digest[ops]) {
            if (!p->quiet) {
                fprintf(stderr, "  recovered (record %llu):\n", (unsigned long long)C);
                pl_dump(fs, UBJ_ROOT_INO, "");
                pl_dump_reference(p, ops);
            }
            pl_fail(p, "point %llu policy %d seed %llu: tree differs from the "
                    "reference after op %ld", (unsigned long long)k, pol,
                    (unsigned long long)seed, ops);
        }
    }
    if (fs != NULL) {
        int rc = ubj_unmount(fs);
        if (rc < 0)
            pl_fail(p, "point %llu: unmount %d", (unsigned long long)k, rc);
        else if (ubj_test_check(dev, 0, NULL) != UBJ_CHECK_CLEAN)
            pl_fail(p, "point %llu: fsck after recovery not clean",
                    (unsigned long long)k);
    }
    ubj_bdev_destroy(dev);
}

/* pl_explore -- crash at every stride-th point (random images per point:
 * nrandom); stop at the first failure if asked.  Returns the failures. */
static unsigned pl_explore(struct pl *p, uint64_t stride, unsigned nrandom,
                           int stop_at_first)
{
    uint8_t *img = NULL;
    for (uint64_t k = 1; k <= p->points; k += stride) {
        pl_run(p, k, 0);
        if (!ubj_nvm_shadow_captured(p->sh))
            fail_msg("point %llu of %llu was not reached again",
                     (unsigned long long)k, (unsigned long long)p->points);
        if (img == NULL)
            img = malloc(ubj_nvm_shadow_size(p->sh));
        pl_check_image(p, k, UBJ_SHADOW_DURABLE, 0, img);
        pl_check_image(p, k, UBJ_SHADOW_ALL, 0, img);
        for (unsigned j = 0; j < nrandom; j++)
            pl_check_image(p, k, UBJ_SHADOW_RANDOM, p->seed * 1000 + k * 10 + j, img);
        ubj_bdev_destroy(p->cdev);
        p->cdev = NULL;
        if (stop_at_first && p->failures)
            break;
    }
    free(img);
    return p->failures;
}

/* ---- a crash during recovery ------------------------------------------- */

struct pl_nest {
    struct ubj_nvm_shadow *sh;
    struct ubj_bdev *cdev;       /* the recovering mount's image */
    const uint8_t *region;       /* the first crash's region image */
    size_t size;
    const struct ubj_bdev *dev0; /* the first crash's device image */
    char path[340], path2[340];
};

/* pl_nest_capture -- the nested shadow captured: capture the device. */
static void pl_nest_capture(void *ctx)
{
    ut_cdev_capture(((struct pl_nest *)ctx)->cdev);
}

/* pl_nest_run -- recover the first crash image (mount + unmount) with the
 * nested shadow armed at `arm`; returns its persistence points. */
static uint64_t pl_nest_run(struct pl_nest *n, uint64_t arm)
{
    assert_ok(ut_file_put(n->path, n->region, n->size));
    n->cdev = ut_cdev_new(PL_BLOCKS);
    uint8_t blk[UT_BS];
    for (uint64_t b = 0; b < PL_BLOCKS; b++) {
        assert_ok(ubj_bdev_read((struct ubj_bdev *)n->dev0, b, 1, blk));
        assert_ok(ubj_bdev_write(n->cdev, b, 1, blk));
    }
    assert_ok(ubj_bdev_flush(n->cdev));
    ubj_nvm_shadow_arm(n->sh, arm, pl_nest_capture, n);
    ubj_nvm_shadow_install(n->sh);
    struct ubj_fs *fs;
    assert_ok(ut_mount(n->cdev, n->path, 0, 0, 0, &fs));
    ubj_nvm_shadow_install(NULL);
    assert_ok(ubj_unmount(fs));
    return ubj_nvm_shadow_points(n->sh);
}

/* pl_nest_check -- crash at every point of the recovery of one crash
 * image (the tree after `ops` ops); each must recover to that tree. */
static void pl_nest_check(struct pl *p, struct pl_nest *n, long ops)
{
    uint64_t points = pl_nest_run(n, 0);
    ubj_bdev_destroy(n->cdev);
    uint8_t *img = malloc(n->size);
    for (uint64_t j = 1; j <= points; j++) {
        pl_nest_run(n, j);
        assert_true(ubj_nvm_shadow_captured(n->sh));
        for (int pol = 0; pol < 3; pol++) {
            assert_ok(ubj_nvm_shadow_image(n->sh, (enum ubj_shadow_policy)pol, j, img));
            assert_ok(ut_file_put(n->path2, img, n->size));
            struct ubj_bdev *dev = ut_cdev_image(n->cdev, (enum ubj_shadow_policy)pol, j);
            struct ubj_fs *fs;
            int lines;
            p->checked++;
            if (ut_check_pair(dev, n->path2, &lines) != UBJ_CHECK_CLEAN)
                fail_msg("crash %llu of a recovery: fsck of the pair", (unsigned long long)j);
            assert_ok(ut_mount(dev, n->path2, 0, 0, 0, &fs));
            if (ut_digest(fs) != p->digest[ops])
                fail_msg("crash %llu of a recovery (policy %d): tree differs from "
                         "op %ld", (unsigned long long)j, pol, ops);
            assert_ok(ubj_unmount(fs));
            assert_int_equal(ubj_test_check(dev, 0, NULL), UBJ_CHECK_CLEAN);
            ubj_bdev_destroy(dev);
        }
        ubj_bdev_destroy(n->cdev);
    }
    free(img);
}

/* pl_nested -- for every stride-th point of the workload, a random crash
 * image, then a crash at every point of its recovery. */
static void pl_nested(struct pl *p, uint64_t stride)
{
    struct pl_nest n = { 0 };
    assert_ok(ubj_nvm_shadow_new(&n.sh));
    snprintf(n.path, sizeof n.path, "%s.n1", p->crash);
    snprintf(n.path2, sizeof n.path2, "%s.n2", p->crash);
    uint8_t *img = NULL;
    for (uint64_t k = 1; k <= p->points; k += stride) {
        pl_run(p, k, 0);
        assert_true(ubj_nvm_shadow_captured(p->sh));
        n.size = ubj_nvm_shadow_size(p->sh);
        if (img == NULL)
            img = malloc(n.size);
        assert_ok(ubj_nvm_shadow_image(p->sh, UBJ_SHADOW_RANDOM, k, img));
        struct ubj_bdev *dev0 = ut_cdev_image(p->cdev, UBJ_SHADOW_RANDOM, k);
        uint64_t C;
        memcpy(&C, img + 256, 8);
        long ops = pl_ops_of(p, C);
        assert_true(ops >= 0);
        n.region = img;
        n.dev0 = dev0;
        pl_nest_check(p, &n, ops);
        ubj_bdev_destroy(dev0);
        ubj_bdev_destroy(p->cdev);
        p->cdev = NULL;
    }
    free(img);
    ubj_nvm_shadow_free(n.sh);
    unlink(n.path);
    unlink(n.path2);
}

/* pl_new -- a fresh exploration state; the first run finds the truth. */
static struct pl *pl_new(uint64_t seed, unsigned nops)
{
    struct pl *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->seed = seed;
    p->nops = nops < PL_MAXOPS ? nops : PL_MAXOPS;
    ut_region_path(p->region, sizeof p->region, "pl");
    static unsigned instance;           /* a failed test may leave one locked */
    snprintf(p->crash, sizeof p->crash, "%s.crash%u", p->region, instance++);
    assert_ok(ubj_nvm_shadow_new(&p->sh));
    ubjm_test_limits(250, 300);      /* commits and checkpoints often */
    pl_run(p, 0, 1);
    ubj_bdev_destroy(p->cdev);
    p->cdev = NULL;
    assert_true(p->points > 10);
    return p;
}

/* pl_free -- clean up. */
static void pl_free(struct pl *p)
{
    ubjm_test_limits(0, 0);
    ubjm_test_break(UBJM_BREAK_NONE);
    ubj_nvm_shadow_free(p->sh);
    unlink(p->region);
    unlink(p->crash);
    free(p);
}

/* every persistence point of the workload recovers to the truth. */
static void test_every_point(void **state)
{
    (void)state;
    uint64_t seed = tprng_env_seed("UBJ_POWERLOSS_SEED", 20240611);
    struct pl *p = pl_new(seed, (unsigned)tprng_env_seed("UBJ_POWERLOSS_OPS", 150));
    uint64_t stride = tprng_env_seed("UBJ_POWERLOSS_STRIDE", 1);
    uint64_t only = tprng_env_seed("UBJ_POWERLOSS_ONLY", 0);
    if (only) {                          /* debugging one point */
        pl_run(p, only, 0);
        uint8_t *img = malloc(ubj_nvm_shadow_size(p->sh));
        pl_check_image(p, only, (enum ubj_shadow_policy)tprng_env_seed("UBJ_POWERLOSS_POLICY", 2),
                       tprng_env_seed("UBJ_POWERLOSS_ISEED", 0), img);
        free(img);
        ubj_bdev_destroy(p->cdev);
        pl_free(p);
        return;
    }
    unsigned nrandom = (unsigned)tprng_env_seed("UBJ_POWERLOSS_RANDOM", 2);
    pl_explore(p, stride ? stride : 1, nrandom, 0);
    fprintf(stderr, "powerloss: seed %llu, %u ops (%u changed the tree), %llu "
            "persistence points, %u crash images checked; the run made %llu "
            "commits, %llu checkpoints, %llu copies on write\n",
            (unsigned long long)seed, p->nops, p->ops_changed,
            (unsigned long long)p->points, p->checked,
            (unsigned long long)p->stats.commits,
            (unsigned long long)p->stats.checkpoints,
            (unsigned long long)p->stats.cow_copies);
    assert_true(p->stats.checkpoints >= 2 && p->stats.cow_copies > 10);
    assert_int_equal(p->failures, 0);
    assert_true(p->checked >= 3 * p->points / (stride ? stride : 1));
    pl_free(p);
}

/* a second workload, different seed and longer, every 3rd point. */
static void test_second_seed(void **state)
{
    (void)state;
    uint64_t seed = tprng_env_seed("UBJ_POWERLOSS_SEED", 20240611) + 7;
    struct pl *p = pl_new(seed, 120);
    pl_explore(p, 3, 1, 0);
    assert_int_equal(p->failures, 0);
    pl_free(p);
}

/* a crash during recovery (and the checkpoint of the unmount after it)
 * recovers again to the same tree. */
static void test_crash_in_recovery(void **state)
{
    (void)state;
    uint64_t seed = tprng_env_seed("UBJ_POWERLOSS_SEED", 20240611) + 3;
    struct pl *p = pl_new(seed, 150);
    pl_nested(p, tprng_env_seed("UBJ_POWERLOSS_NEST_STRIDE", 5));
    fprintf(stderr, "crash in recovery: %u crash images checked\n", p->checked);
    pl_free(p);
}

/* broken -- the exploration must catch broken variant b. */
static void broken(enum ubjm_break b)
{
    uint64_t seed = tprng_env_seed("UBJ_POWERLOSS_SEED", 20240611);
    struct pl *p = pl_new(seed, 70);   /* the truth: unbroken */
    ubjm_test_break(b);
    p->quiet = 1;
    unsigned f = pl_explore(p, 1, 2, 1);
    fprintf(stderr, "broken variant %d: caught after %u crash images\n", b, p->checked);
    if (f == 0)
        fail_msg("broken variant %d was not caught (%u images)", b, p->checked);
    pl_free(p);
}

static void test_broken_data_flush(void **state) { (void)state; broken(UBJM_BREAK_DATA_FLUSH); }
static void test_broken_commit_persist(void **state) { (void)state; broken(UBJM_BREAK_COMMIT_PERSIST); }
static void test_broken_early_free(void **state) { (void)state; broken(UBJM_BREAK_EARLY_FREE); }
static void test_broken_ckpt_flush(void **state) { (void)state; broken(UBJM_BREAK_CKPT_FLUSH); }

#else
#define test_every_point t_no_hooks
#define test_second_seed t_no_hooks
#define test_crash_in_recovery t_no_hooks
#define test_broken_data_flush t_no_hooks
#define test_broken_commit_persist t_no_hooks
#define test_broken_early_free t_no_hooks
#define test_broken_ckpt_flush t_no_hooks
#endif /* UBJ_TEST_HOOKS */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_point),
        cmocka_unit_test(test_second_seed),
        cmocka_unit_test(test_crash_in_recovery),
        cmocka_unit_test(test_broken_data_flush),
        cmocka_unit_test(test_broken_commit_persist),
        cmocka_unit_test(test_broken_early_free),
        cmocka_unit_test(test_broken_ckpt_flush),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
