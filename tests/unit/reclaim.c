/*
 * tests/unit/reclaim.c -- the read-write mount of an image a crash left
 * (state MOUNTED) from a mode that promises metadata integrity only
 * (src/fs/reclaim.c, ubj_config.unclean): its leaks -- a free block and a
 * free inode marked in use, a link count above the names -- are reclaimed
 * through fsck's full reachability pass, statfs is right at once and fsck
 * is clean after the unmount; corruption leaves the mount read-only
 * with the reason; UBJ_UNCLEAN_REFUSE refuses read-write, not read-only.
 * Mode none shows the pass (UBJ_UNCLEAN_RECLAIM) and that the default
 * leaves a mode that promises nothing alone; every integrity-only mode of
 * the registry gets the default.  The broken variant (test builds: the
 * pass skipped, the mount trusting the bitmaps) must fail the statfs and
 * fsck checks, in line.
 */
#include "testutil.h"
#include <sys/wait.h>
#include <unistd.h>
#include "fs/fs.h"
#include "ubjfs/mode.h"

#define R_BLOCKS 1024u
#define R_LEAK_BLOCKS 3u

/* r_bit -- set bit `bit` of the bitmap starting at block `start`. */
static void r_bit(struct ubj_bdev *d, const uint8_t uuid[16], uint64_t start,
                  uint64_t bit, int val)
{
    uint8_t buf[UBJ_BS];
    uint64_t blk = start + bit / UBJ_BITMAP_BITS, b = bit % UBJ_BITMAP_BITS;
    assert_ok(ubj_bdev_read(d, blk, 1, buf));
    uint8_t *p = buf + sizeof(struct ubj_blkhdr) + b / 8;
    *p = (uint8_t)(val ? *p | (1u << (b % 8)) : *p & ~(1u << (b % 8)));
    timg_reseal(buf, uuid);
    assert_ok(ubj_bdev_write(d, blk, 1, buf));
}

/* r_super -- the superblock of d. */
static struct ubj_super r_super(struct ubj_bdev *d)
{
    uint8_t buf[UBJ_BS];
    struct ubj_super sb;
    assert_ok(ubj_bdev_read(d, 0, 1, buf));
    memcpy(&sb, buf, sizeof sb);
    return sb;
}

/* r_nlink -- add 1 to inode ino's link count on d. */
static void r_nlink(struct ubj_bdev *d, const uint8_t uuid[16], ubj_ino_t ino)
{
    struct ubj_super sb = r_super(d);
    uint8_t buf[UBJ_BS];
    uint64_t blk = sb.it_start + ino / UBJ_INODES_PER_BLOCK;
    size_t off = UBJ_INODE_SIZE * (1 + ino % UBJ_INODES_PER_BLOCK);
    assert_ok(ubj_bdev_read(d, blk, 1, buf));
    struct ubj_inode ip;
    memcpy(&ip, buf + off, sizeof ip);
    ip.nlink++;
    memcpy(buf + off, &ip, sizeof ip);
    timg_reseal(buf, uuid);
    assert_ok(ubj_bdev_write(d, blk, 1, buf));
}

/* The crash image and what a clean one would count. */
struct r_img {
    struct ubj_bdev *dev;
    uint64_t bfree, ffree;       /* statfs after sync, before the crash */
};

/* r_crash -- format in `mode`, make files, sync, copy the device while
 * still mounted (state MOUNTED: the crash), then add the leaks of a crash
 * (corrupt: also an in-use block marked free). */
static struct r_img r_crash(const char *mode, bool corrupt)
{
    struct r_img r;
    struct ubj_bdev *live;
    struct ubj_fs *fs;
    assert_ok(ubj_bdev_ram_create(R_BLOCKS, &live));
    struct ubj_format_opts fo = { .mode = mode, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(live, &fo));
    struct ubj_config mc = { .mode = mode, .flags = UBJ_MOUNT_NO_TIMER };
    assert_ok(ubj_mount(live, &mc, &fs));
    uint8_t data[3 * UBJ_BS];
    memset(data, 'x', sizeof data);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_create(fs, "/d/f", 0644, NULL));
    assert_rc(tpath_write(fs, "/d/f", data, sizeof data, 0), (ssize_t)sizeof data);
    ubj_ino_t f = tpath_ino(fs, "/d/f");
    assert_ok(ubj_sync(fs));
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    r.bfree = sf.bfree;
    r.ffree = sf.ffree;
    assert_ok(ubj_bdev_ram_create(R_BLOCKS, &r.dev));
    assert_ok(timg_copy(live, r.dev));
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(live);
    uint8_t uuid[16];
    assert_ok(timg_uuid(r.dev, uuid));
    struct ubj_super sb = r_super(r.dev);
    assert_true(sb.state & UBJ_STATE_MOUNTED);
    for (unsigned i = 0; i < R_LEAK_BLOCKS; i++)   /* free blocks at the end */
        r_bit(r.dev, uuid, sb.bb_start, R_BLOCKS - 2 - i, 1);
    r_bit(r.dev, uuid, sb.ib_start, sb.ninodes - 2, 1);   /* a free inode */
    r_nlink(r.dev, uuid, f);                              /* a name went */
    if (corrupt) {
        struct ubj_inode ip;
        uint8_t buf[UBJ_BS];
        assert_ok(ubj_bdev_read(r.dev, sb.it_start + f / UBJ_INODES_PER_BLOCK, 1, buf));
        memcpy(&ip, buf + UBJ_INODE_SIZE * (1 + f % UBJ_INODES_PER_BLOCK), sizeof ip);
        r_bit(r.dev, uuid, sb.bb_start, ip.i_data.ext.e[0].pblk, 0);
    }
    return r;
}

/* r_quiet -- a report callback that drops the lines. */
static void r_quiet(void *ctx, const char *line)
{
    (void)ctx, (void)line;
}

/* r_check -- ubj_check_ex of d (no repair). */
static struct ubj_check_result r_check(struct ubj_bdev *d)
{
    struct ubj_check_result res;
    (void)ubj_check_ex(d, 0, r_quiet, NULL, &res);
    return res;
}

/* r_mount_cycle -- mount r's image with policy `unclean`; 0 when statfs
 * right after the mount counts what a clean image would and fsck after the
 * unmount finds nothing, else 1 (with the reason on stderr).  The mount
 * itself must succeed read-write. */
static int r_mount_cycle(struct r_img *r, const char *mode, unsigned unclean)
{
    struct ubj_fs *fs;
    struct ubj_config mc = { .mode = mode, .flags = UBJ_MOUNT_NO_TIMER,
                             .unclean = unclean };
    assert_ok(ubj_mount(r->dev, &mc, &fs));
    assert_int_equal(ubj_fs_error(fs, NULL, 0), 0);
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    uint8_t back[UBJ_BS];
    assert_rc(tpath_read(fs, "/d/f", back, sizeof back, 2 * UBJ_BS), UBJ_BS);
    assert_int_equal(back[17], 'x');
    assert_ok(ubj_unmount(fs));
    struct ubj_check_result res = r_check(r->dev);
    int bad = 0;
    if (sf.bfree != r->bfree || sf.ffree != r->ffree) {
        fprintf(stderr, "  statfs after the mount: %llu blocks %llu inodes free, a "
                "clean image %llu %llu\n", (unsigned long long)sf.bfree,
                (unsigned long long)sf.ffree, (unsigned long long)r->bfree,
                (unsigned long long)r->ffree);
        bad = 1;
    }
    if (res.problems != 0) {
        fprintf(stderr, "  fsck after the unmount: %lu problems (%lu leaks)\n",
                res.problems, res.leaks);
        bad = 1;
    }
    ubj_bdev_destroy(r->dev);
    return bad;
}

/* test_none_reclaim -- mode none with UBJ_UNCLEAN_RECLAIM: the leaks go
 * through the pass; the broken variant (no pass) fails the same checks. */
static void test_none_reclaim(void **state)
{
    (void)state;
    struct r_img r = r_crash("none", false);
    struct ubj_check_result res = r_check(r.dev);
    assert_int_equal(res.corrupt, 0);
    assert_int_equal(res.leaks, 3);                /* 1 block run, 1 inode, nlink */
    assert_int_equal(res.leaked_blocks, R_LEAK_BLOCKS);
    assert_int_equal(res.leaked_inodes, 1);
    assert_int_equal(r_mount_cycle(&r, "none", UBJ_UNCLEAN_RECLAIM), 0);
    r = r_crash("none", false);                    /* the default: none is left */
    assert_int_equal(r_mount_cycle(&r, "none", UBJ_UNCLEAN_DEFAULT), 1);
    r = r_crash("none", false);                    /* refuse: only integrity modes */
    assert_int_equal(r_mount_cycle(&r, "none", UBJ_UNCLEAN_REFUSE), 1);
#if UBJ_TEST_HOOKS
    fs_reclaim_test_break(true);                   /* trusts the bitmaps */
    r = r_crash("none", false);
    int broken = r_mount_cycle(&r, "none", UBJ_UNCLEAN_RECLAIM);
    fs_reclaim_test_break(false);
    assert_int_equal(broken, 1);
#endif
}

/* test_corrupt_read_only -- corruption found by the pass: nothing
 * repaired, the mount read-only with the reason; fsck -y repairs it. */
static void test_corrupt_read_only(void **state)
{
    (void)state;
    struct r_img r = r_crash("none", true);
    struct ubj_fs *fs;
    struct ubj_config mc = { .mode = "none", .flags = UBJ_MOUNT_NO_TIMER,
                             .unclean = UBJ_UNCLEAN_RECLAIM };
    assert_ok(ubj_mount(r.dev, &mc, &fs));
    char why[256];
    assert_int_equal(ubj_fs_error(fs, why, sizeof why), -EUCLEAN);
    if (strstr(why, "in use but marked free") == NULL)
        fail_msg("the reason: %s", why);
    int rc = tpath_create(fs, "/new", 0644, NULL);
    assert_true(rc == -EROFS || rc == -EUCLEAN);
    (void)ubj_unmount(fs);
    struct ubj_check_result res = r_check(r.dev);
    assert_true(res.corrupt > 0);
    assert_int_equal(ubj_check(r.dev, UBJ_CHECK_REPAIR, r_quiet, NULL),
                     UBJ_CHECK_REPAIRED);
    ubj_bdev_destroy(r.dev);
}

/* test_integrity_modes -- every mode of the registry that promises
 * integrity only: the default reclaims; REFUSE refuses read-write with
 * -EUCLEAN and allows read-only. */
static void test_integrity_modes(void **state)
{
    (void)state;
    unsigned n = 0;
    for (size_t i = 0; i < ubj_mode_count(); i++) {
        const struct ubj_mode_info *m = ubj_mode_at(i);
        if (m->promises.meta != UBJ_MODE_META_INTEGRITY)
            continue;
        n++;
        struct r_img r = r_crash(m->name, false);
        assert_int_equal(r_mount_cycle(&r, m->name, UBJ_UNCLEAN_DEFAULT), 0);
        r = r_crash(m->name, false);
        struct ubj_fs *fs;
        struct ubj_config mc = { .mode = m->name, .flags = UBJ_MOUNT_NO_TIMER,
                                 .unclean = UBJ_UNCLEAN_REFUSE };
        assert_rc(ubj_mount(r.dev, &mc, &fs), -EUCLEAN);
        assert_non_null(strstr(ubj_errormsg(), "fsck -y"));
        mc.flags |= UBJ_MOUNT_RDONLY;
        assert_ok(ubj_mount(r.dev, &mc, &fs));
        assert_ok(ubj_unmount(fs));
        assert_int_equal(ubj_check(r.dev, UBJ_CHECK_REPAIR, r_quiet, NULL),
                         UBJ_CHECK_REPAIRED);
        mc.flags &= ~UBJ_MOUNT_RDONLY;          /* repaired: the pass is clean */
        mc.unclean = UBJ_UNCLEAN_DEFAULT;
        assert_ok(ubj_mount(r.dev, &mc, &fs));
        assert_int_equal(ubj_fs_error(fs, NULL, 0), 0);
        assert_ok(ubj_unmount(fs));
        ubj_bdev_destroy(r.dev);
    }
    if (n == 0)
        fprintf(stderr, "  no integrity-only mode in this build: only mode none's "
                "forced pass is tested\n");
}

/* r_tool -- run `$UBJ_TOOL fsck ARGS IMG`; its exit status and last line. */
static int r_tool(const char *args, const char *img, char *last, size_t len)
{
    char cmd[1024], line[512];
    snprintf(cmd, sizeof cmd, "\"%s\" fsck %s \"%s\" 2>&1", getenv("UBJ_TOOL"), args, img);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    last[0] = '\0';
    while (fgets(line, sizeof line, p) != NULL)
        snprintf(last, len, "%s", line);
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* test_fsck_tool -- `ubjfs fsck -n` of an image with leaks only ends with
 * its own line (exit 4, e2fsck's); -y reclaims them (exit 1), then clean;
 * with corruption too the last line is e2fsck's. */
static void test_fsck_tool(void **state)
{
    (void)state;
    if (getenv("UBJ_TOOL") == NULL) {
        fprintf(stderr, "  UBJ_TOOL unset (run by ctest): the tool is not checked\n");
        return;
    }
    char img[] = "/tmp/ubj-reclaim-XXXXXX", last[512];
    int fd = mkstemp(img);
    assert_true(fd >= 0);
    close(fd);
    for (int corrupt = 0; corrupt < 2; corrupt++) {
        struct r_img r = r_crash("none", corrupt);
        struct ubj_bdev *f;
        assert_ok(ubj_bdev_file_open(img, UBJ_BDEV_RESIZE, R_BLOCKS * UBJ_BS, &f));
        assert_ok(timg_copy(r.dev, f));
        ubj_bdev_destroy(f);
        ubj_bdev_destroy(r.dev);
        assert_int_equal(r_tool("-n", img, last, sizeof last), 4);
        bool leaks = strstr(last, "leaks only, no corruption: 3 leaks (3 blocks, "
                            "1 inode)") != NULL;
        if (leaks == (corrupt != 0))
            fail_msg("corrupt %d: last line %s", corrupt, last);
        assert_int_equal(r_tool("-y", img, last, sizeof last), 1);
        assert_int_equal(r_tool("-n", img, last, sizeof last), 0);
    }
    unlink(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_none_reclaim),
        cmocka_unit_test(test_corrupt_read_only),
        cmocka_unit_test(test_integrity_modes),
        cmocka_unit_test(test_fsck_tool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
