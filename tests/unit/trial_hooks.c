/*
 * tests/unit/trial_hooks.c -- the cache write hooks through the whole file
 * system: mode trial with UBJ_TRIAL_HOOKS=1 (src/txn/trial.c) orders the
 * writes of names after the inodes they name (R1) and of link-count drops
 * after the names' removal (R2), from the semantic events, by deferring
 * writes and, when the cache must write, rolling them back in the
 * snapshot.  A workload of creates, links, renames over targets, unlinks
 * and writes runs on the smallest cache (64 buffers) under a checking
 * device that, at every write:
 *  - verifies each metadata block's checksum against the bytes written
 *    (rolled-back snapshots included: the seal runs on the snapshot);
 *  - for a directory leaf whose records change, requires every inode it
 *    names to be initialised (mode != 0) on the device already (R1).
 * The same workload in plain trial (none's writes, no hooks) must break
 * R1 -- so the check can fail -- while with the hooks it never does, the
 * cache deferred, rolled back and asked with MUST, and the image ends
 * fsck-clean with every file's data.
 */
#include "testutil.h"
#include "fs/fs.h"
#include "fs/format.h"

#if UBJ_TEST_HOOKS
#define TH_BLOCKS 8192u      /* 32 MiB */
#define TH_INODES 4096u
#define TH_CACHE 64u
#define TH_DIRS 4
#define TH_FILES 400

/* ---- the checking device ------------------------------------------------- */

struct th_dev {
    struct ubj_bdev base;
    bool armed;              /* checks on (after mkfs) */
    uint32_t seed;           /* csum seed */
    uint64_t it_start, ninodes;
    unsigned crc_bad, r1_bad;
    unsigned leaf_writes;    /* leaves written with changed records */
    char first[160];         /* the first violation */
};

/* th_note -- count a violation, keep the first. */
static void th_note(struct th_dev *d, unsigned *counter, const char *what,
                    uint64_t blkno, uint64_t ino)
{
    if ((*counter)++ == 0 && d->first[0] == '\0')
        snprintf(d->first, sizeof d->first, "%s: block %llu, inode %llu", what,
                 (unsigned long long)blkno, (unsigned long long)ino);
}

/* th_is_meta -- a metadata magic. */
static bool th_is_meta(uint32_t m)
{
    return m == UBJ_MAGIC_SUPER || m == UBJ_MAGIC_BBITMAP || m == UBJ_MAGIC_IBITMAP ||
           m == UBJ_MAGIC_INODES || m == UBJ_MAGIC_EXTENT || m == UBJ_MAGIC_DIR ||
           m == UBJ_MAGIC_XATTR;
}

/* th_inode_used -- inode ino's slot on the device has a mode. */
static bool th_inode_used(struct th_dev *d, uint64_t ino)
{
    uint8_t blk[UBJ_BS];
    if (ino == 0 || ino >= d->ninodes)
        return false;
    uint64_t b = d->it_start + ino / UBJ_INODES_PER_BLOCK;
    if (ubj_bdev_read(d->base.lower, b, 1, blk) != 0)
        return false;
    uint32_t mode;
    memcpy(&mode, blk + UBJ_INODE_SIZE * (1 + ino % UBJ_INODES_PER_BLOCK), 4);
    return mode != 0;
}

/* th_leaf -- R1 for a leaf written with records the device lacks. */
static void th_leaf(struct th_dev *d, uint64_t blkno, const uint8_t *p)
{
    const struct ubj_dir_node *n = (const void *)p;
    uint8_t old[UBJ_BS];
    if (n->level != 0 || ubj_bdev_read(d->base.lower, blkno, 1, old) != 0 ||
        memcmp(old + 16, p + 16, UBJ_BS - 16) == 0)
        return;   /* an index node, or no record changed (a rolled-back node) */
    d->leaf_writes++;
    for (unsigned off = 0; off + UBJ_DIR_LEAF_FIXED <= n->used && off < UBJ_DIR_SPACE;) {
        const uint8_t *r = p + UBJ_DIR_REC_OFF + off;
        uint64_t ino;
        memcpy(&ino, r + 8, 8);
        if (!th_inode_used(d, ino))
            th_note(d, &d->r1_bad, "a name of an inode not initialised on the "
                    "device", blkno, ino);
        off += (UBJ_DIR_LEAF_FIXED + r[17] + 7u) & ~7u;
    }
}

/* th_read -- forward. */
static int th_read(struct ubj_bdev *dv, uint64_t blkno, uint32_t count, void *buf)
{
    return ubj_bdev_read(dv->lower, blkno, count, buf);
}

/* th_write -- check each block against what the device holds, forward. */
static int th_write(struct ubj_bdev *dv, uint64_t blkno, uint32_t count,
                    const void *buf)
{
    struct th_dev *d = (struct th_dev *)dv;
    for (uint32_t k = 0; k < count && d->armed; k++) {
        const uint8_t *p = (const uint8_t *)buf + (size_t)k * UBJ_BS;
        const struct ubj_blkhdr *h = (const void *)p;
        if (!th_is_meta(h->magic) || h->blkno != blkno + k)
            continue;   /* data */
        if (fs_block_verify(d->seed, p, h->magic, blkno + k) != 0)
            th_note(d, &d->crc_bad, "a checksum that does not match", blkno + k, 0);
        if (h->magic == UBJ_MAGIC_DIR)
            th_leaf(d, blkno + k, p);
    }
    return ubj_bdev_write(dv->lower, blkno, count, buf);
}

/* th_flush -- forward. */
static int th_flush(struct ubj_bdev *dv)
{
    return ubj_bdev_flush(dv->lower);
}

/* th_destroy -- free the wrapper and the RAM device. */
static void th_destroy(struct ubj_bdev *dv)
{
    ubj_bdev_destroy(dv->lower);
    free(dv);
}

static const struct ubj_bdev_ops th_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "trial-check",
    .read = th_read, .write = th_write, .flush = th_flush, .destroy = th_destroy,
};

/* th_new -- a formatted image (mode trial) under a checking device, armed. */
static struct th_dev *th_new(void)
{
    struct ubj_bdev *ram;
    assert_ok(ubj_bdev_ram_create(TH_BLOCKS, &ram));
    struct th_dev *d = calloc(1, sizeof *d);
    assert_non_null(d);
    d->base = (struct ubj_bdev){ .ops = &th_ops, .block_size = UBJ_BS,
                                 .nblocks = TH_BLOCKS, .lower = ram };
    struct ubj_format_opts fo = { .inodes = TH_INODES, .mode = "trial",
                                  .flags = UBJ_FORMAT_ZEROED,   /* a fixed uuid: */
                                  .uuid = { 0x75, 0x62, 0x6a, 0x16 } };  /* hash seed */
    assert_ok(ubj_format(&d->base, &fo));
    struct ubj_super sb;
    assert_ok(ubj_bdev_read(ram, 0, 1, &sb));
    d->seed = ubj_crc32c(~0u, sb.uuid, 16);
    d->it_start = sb.it_start;
    d->ninodes = sb.ninodes;
    d->armed = true;
    return d;
}

/* ---- the workload -------------------------------------------------------- */

/* th_path -- "/dD/<a long name>-N": leaves of ~50 names split. */
static void th_path(char *out, size_t sz, int dir, const char *what, int i)
{
    snprintf(out, sz, "/d%d/%s-a-name-long-enough-to-fill-directory-leaves-%04d",
             dir, what, i);
}

/* th_workload -- creates with data, hard links, renames (some over an
 * existing name), unlinks, an fsync now and then.  File n holds 3000
 * bytes: n, then a pattern seeded by n. */
static void th_workload(struct ubj_fs *fs)
{
    char p[160], q[160];
    uint8_t data[3000];
    for (int d = 0; d < TH_DIRS; d++) {
        snprintf(p, sizeof p, "/d%d", d);
        assert_ok(tpath_mkdir(fs, p, 0755, NULL));
    }
    for (int i = 0; i < TH_FILES; i++)
        for (int d = 0; d < TH_DIRS; d++) {
            int n = i * TH_DIRS + d;
            th_path(p, sizeof p, d, "f", i);
            uint64_t seed = (uint64_t)n;
            memcpy(data, &seed, 8);
            tpattern_fill(data + 8, sizeof data - 8, seed, 8);
            assert_ok(tpath_put(fs, p, data, sizeof data));
            if (n % 7 == 3) {
                th_path(q, sizeof q, (d + 1) % TH_DIRS, "link", i);
                assert_ok(tpath_link(fs, p, q));
            }
            if (n % 5 == 1 && i > 0) {   /* over an existing name */
                th_path(q, sizeof q, (d + 2) % TH_DIRS, "f", i - 1);
                assert_ok(tpath_rename(fs, p, q, 0));
            } else if (n % 3 == 2) {
                assert_ok(tpath_unlink(fs, p));
            }
            if (n % 61 == 0)
                assert_ok(ubj_fsync(fs, tpath_ino(fs, "/d0"), 0));
        }
}

/* th_now -- one fixed time: timestamps (and relatime's choices) repeat. */
static void th_now(void *ctx, struct timespec *ts)
{
    (void)ctx;
    *ts = (struct timespec){ .tv_sec = 1700000000 };
}

/* th_run -- the workload in mode trial (hooks on or off) on the smallest
 * cache; the device's findings and the cache's counters. */
static void th_run(bool hooks, struct th_dev **out, struct ubj_cache_stats *cs)
{
    if (hooks)
        setenv("UBJ_TRIAL_HOOKS", "1", 1);
    else
        unsetenv("UBJ_TRIAL_HOOKS");
    struct th_dev *d = th_new();
    struct ubj_config cfg = { .mode = "trial", .cache_blocks = TH_CACHE,
                              .flags = UBJ_MOUNT_NO_TIMER, .now = th_now };
    struct ubj_fs *fs;
    assert_ok(ubj_mount(&d->base, &cfg, &fs));
    th_workload(fs);
    ubj_cache_stats_get(fs->cache, cs);
    assert_ok(ubj_unmount(fs));
    unsetenv("UBJ_TRIAL_HOOKS");
    *out = d;
}

/* th_verify -- fsck clean; every file that is left reads back whole. */
static void th_verify(struct th_dev *d)
{
    int lines = 0;
    assert_int_equal(ubj_test_check(&d->base, 0, &lines), UBJ_CHECK_CLEAN);
    assert_int_equal(lines, 0);
    struct ubj_fs *fs;
    assert_ok(ubj_test_mount(&d->base, 0, &fs));
    char p[160];
    uint8_t buf[3000];
    unsigned files = 0;
    for (int dir = 0; dir < TH_DIRS; dir++)
        for (int i = 0; i < TH_FILES; i++) {
            th_path(p, sizeof p, dir, "f", i);
            if (tpath_ino(fs, p) == 0)
                continue;   /* moved or removed */
            files++;
            assert_rc(tpath_read(fs, p, buf, sizeof buf, 0), (long long)sizeof buf);
            uint64_t seed;
            memcpy(&seed, buf, 8);
            assert_int_equal(tpattern_check(buf + 8, sizeof buf - 8, seed, 8),
                             sizeof buf - 8);
        }
    assert_true(files > TH_FILES);
    assert_ok(ubj_unmount(fs));
}

/* ---- tests --------------------------------------------------------------- */

/* without the hooks the cache writes names before their inodes: the check
 * sees it (so it can fail); with them never, though the cache had to
 * defer, roll back and ask with MUST; both images end fsck-clean. */
static void test_trial_orders_writes(void **state)
{
    (void)state;
    struct th_dev *d;
    struct ubj_cache_stats cs;

    th_run(false, &d, &cs);
    fprintf(stderr, "no hooks: %u leaf writes, %u R1 violations (first: %s), "
            "%u bad checksums\n", d->leaf_writes, d->r1_bad, d->first, d->crc_bad);
    assert_true(d->r1_bad > 0);
    assert_int_equal(d->crc_bad, 0);
    assert_int_equal(cs.write_deferred, 0);
    th_verify(d);
    ubj_bdev_destroy(&d->base);

    th_run(true, &d, &cs);
    fprintf(stderr, "hooks: %u leaf writes, %u R1 violations (%s), %u bad "
            "checksums; %llu deferred, %llu rolled back, %llu MUST sweeps, "
            "%llu reclaims\n", d->leaf_writes, d->r1_bad, d->first, d->crc_bad,
            (unsigned long long)cs.write_deferred,
            (unsigned long long)cs.write_rolled_back,
            (unsigned long long)cs.must_sweeps, (unsigned long long)cs.reclaims);
    assert_int_equal(d->r1_bad, 0);
    assert_int_equal(d->crc_bad, 0);
    assert_true(d->leaf_writes > 50);
    assert_true(cs.write_deferred > 0);
    assert_true(cs.write_rolled_back > 0);
    th_verify(d);
    ubj_bdev_destroy(&d->base);
}

#else
#define test_trial_orders_writes t_no_hooks   /* the mode is test-only */
#endif

/* main -- run the suite. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trial_orders_writes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
