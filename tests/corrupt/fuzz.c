/*
 * corrupt/fuzz.c -- images corrupted at random offsets (run under ASan +
 * UBSan by CI).  A small image is populated with every kind of structure
 * (directories of one and of many tree nodes, files with holes and with
 * a deep extent tree, inline and block symlinks, hard links, an orphan).
 * Each iteration copies it, changes random bytes in 1..4 random blocks --
 * half of the time inside metadata blocks whose crc is then recomputed,
 * so structure checks (not the checksum) have to catch the damage -- and
 * then:
 *  - ubj_check (read-only) returns CLEAN, UNCORRECTED or OPERROR;
 *  - ubj_mount fails with a negative errno and a message, or mounts; then
 *    a walk of the whole tree (readdir, lookup, getattr, pread of every
 *    file, readlink) and a few changes return values or negative errnos
 *    (never more bytes than asked), and the unmount returns;
 *  - ubj_check with UBJ_CHECK_REPAIR never crashes; when it says
 *    REPAIRED, a second pass is CLEAN, and the image then mounts and
 *    walks without a single error.
 * "Never a crash" is what ASan/UBSan and the process itself check; the
 * assertions check return conventions and fsck's promises.
 * UBJ_FUZZ_ITERS and UBJ_FUZZ_SEED override the defaults.
 */
#include "testutil.h"

#include "fs/format.h"

#define IMG_BLOCKS 600u
#define DEFAULT_ITERS 500

static char where[160];        /* iteration description for messages */
static long n_mounted, n_refused, n_repaired, n_clean, n_uncorrected;

/* build_image -- the populated pristine image. */
static struct ubj_bdev *build_image(void)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new_inodes(IMG_BLOCKS, 300, &dev, &fs);
    uint8_t buf[20000];
    tpattern_fill(buf, sizeof buf, 1, 0);
    assert_ok(tpath_mkdir(fs, "/a", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/a/b", 0750, NULL));
    assert_ok(tpath_put(fs, "/a/small", "small", 5));
    assert_ok(tpath_put(fs, "/a/b/medium", buf, sizeof buf));
    /* a big directory: several leaf nodes and an internal one */
    assert_ok(tpath_mkdir(fs, "/big", 0755, NULL));
    char p[96];
    for (int i = 0; i < 200; i++) {
        snprintf(p, sizeof p, "/big/entry-with-a-long-name-%03d", i);
        assert_ok(tpath_create(fs, p, 0644, NULL));
    }
    /* a fragmented file: every other block, so the extent tree has
     * more entries than fit in the inode */
    struct ubj_stat st;
    assert_ok(tpath_create(fs, "/frag", 0644, &st));
    for (int i = 0; i < 40; i++)
        assert_rc(ubj_pwrite(fs, st.ino, buf, 100, (off_t)i * 8192), 100);
    assert_rc(ubj_pwrite(fs, st.ino, "end", 3, (off_t)1 << 32), 3);
    assert_ok(tpath_symlink(fs, "a/b/medium", "/short-link"));
    memset(p, 'x', 90);
    p[90] = '\0';
    char longt[400];
    snprintf(longt, sizeof longt, "/%s/%s/%s/%s", p, p, p, p);
    assert_ok(tpath_symlink(fs, longt, "/long-link"));
    assert_ok(tpath_link(fs, "/a/small", "/a/b/hard"));
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0600, 0, NULL, NULL));
    assert_ok(ubj_unmount(fs));
    int lines = -1;
    assert_int_equal(ubj_test_check(dev, 0, &lines), UBJ_CHECK_CLEAN);
    assert_int_equal(lines, 0);
    return dev;
}

/* quiet_report -- count fsck lines without printing. */
static void quiet_report(void *ctx, const char *line)
{
    (*(int *)ctx)++;
    (void)line;
}

/* walk -- everything below dir; every result is a value or an errno.
 * With `strict`, every call must succeed.  *budget bounds the work (a
 * corrupt tree may loop). */
static void walk(struct ubj_fs *fs, ubj_ino_t dir, int depth, int strict, long *budget)
{
    static uint8_t buf[65536];
    struct tdirent *v;
    size_t n;
    int rc = tdir_list(fs, dir, &v, &n);
    if (strict && rc != 0)
        fail_msg("%s: readdir %llu after repair: %d", where, (unsigned long long)dir, rc);
    if (rc < 0) {
        assert_true(rc >= -4095);
        return;
    }
    for (size_t i = 0; i < n && --*budget > 0; i++) {
        if (strcmp(v[i].name, ".") == 0 || strcmp(v[i].name, "..") == 0)
            continue;
        struct ubj_stat st, lk;
        rc = ubj_getattr(fs, v[i].ino, &st);
        int lrc = ubj_lookup(fs, dir, v[i].name, &lk);
        if (strict && (rc != 0 || lrc != 0 || lk.ino != v[i].ino))
            fail_msg("%s: '%s' after repair: getattr %d lookup %d", where, v[i].name,
                     rc, lrc);
        assert_true(rc <= 0 && rc >= -4095 && lrc <= 0 && lrc >= -4095);
        if (rc < 0)
            continue;
        if (S_ISDIR(st.mode)) {
            if (depth < 12)
                walk(fs, v[i].ino, depth + 1, strict, budget);
        } else if (S_ISREG(st.mode)) {
            uint64_t end = st.size < (1u << 20) ? st.size : (1u << 20);
            for (uint64_t off = 0; off < end; off += sizeof buf) {
                ssize_t r = ubj_pread(fs, v[i].ino, buf, sizeof buf, (off_t)off);
                if (strict && r <= 0)
                    fail_msg("%s: pread '%s' after repair: %zd", where, v[i].name, r);
                assert_true(r <= (ssize_t)sizeof buf && r >= -4095);
                if (r <= 0)
                    break;
            }
            if (st.size > 100) {
                ssize_t r = ubj_pread(fs, v[i].ino, buf, 100, (off_t)(st.size - 100));
                assert_true(r <= 100 && r >= -4095);
            }
        } else if (S_ISLNK(st.mode)) {
            ssize_t r = ubj_readlink(fs, v[i].ino, (char *)buf, sizeof buf);
            if (strict && r <= 0)
                fail_msg("%s: readlink '%s' after repair: %zd", where, v[i].name, r);
            assert_true(r <= (ssize_t)sizeof buf && r >= -4095);
        }
    }
    free(v);
}

/* poke -- a few changes on a possibly corrupt mount. */
static void poke(struct ubj_fs *fs)
{
    struct ubj_stat st;
    int rc = tpath_create(fs, "/new-file", 0644, &st);
    assert_true(rc <= 0 && rc >= -4095);
    if (rc == 0) {
        ssize_t n = ubj_pwrite(fs, st.ino, "fuzz", 4, 10000);
        assert_true(n <= 4 && n >= -4095);
    }
    rc = tpath_mkdir(fs, "/a/new-dir", 0755, NULL);
    assert_true(rc <= 0 && rc >= -4095);
    rc = tpath_rename(fs, "/a/small", "/big/renamed", 0);
    assert_true(rc <= 0 && rc >= -4095);
    rc = tpath_unlink(fs, "/big/entry-with-a-long-name-007");
    assert_true(rc <= 0 && rc >= -4095);
    rc = tpath_truncate(fs, "/frag", 20000);
    assert_true(rc <= 0 && rc >= -4095);
    rc = tpath_rmdir(fs, "/a/b");
    assert_true(rc <= 0 && rc >= -4095);
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
}

/* has_header -- the block starts with a known metadata magic. */
static int has_header(const uint8_t *blk)
{
    uint32_t m;
    memcpy(&m, blk, 4);
    return m == UBJ_MAGIC_SUPER || m == UBJ_MAGIC_BBITMAP || m == UBJ_MAGIC_IBITMAP ||
           m == UBJ_MAGIC_INODES || m == UBJ_MAGIC_EXTENT || m == UBJ_MAGIC_DIR;
}

/* corrupt -- change bytes in 1..4 random blocks of dev. */
static void corrupt(struct ubj_bdev *dev, struct tprng *r, int reseal, const uint8_t uuid[16])
{
    static uint8_t blk[UBJ_BS];
    int nb = 1 + (int)tprng_below(r, 4);
    size_t len = strlen(where);
    for (int k = 0; k < nb; k++) {
        uint64_t b;
        /* prefer blocks in use: metadata and the used data area */
        for (int tries = 0;; tries++) {
            b = tprng_below(r, IMG_BLOCKS);
            assert_ok(ubj_bdev_read(dev, b, 1, blk));
            if (tries > 20 || (reseal ? has_header(blk) : tzero_check(blk, UBJ_BS) != UBJ_BS))
                break;
        }
        int nbytes = 1 + (int)tprng_below(r, tprng_below(r, 2) ? 4 : 64);
        for (int i = 0; i < nbytes; i++) {
            /* bias towards headers and the first records */
            size_t off = tprng_below(r, 3) ? tprng_below(r, 512) : tprng_below(r, UBJ_BS);
            if (reseal && off >= 4 && off < 8)
                off += 4;                       /* leave the crc to reseal */
            switch (tprng_below(r, 4)) {
            case 0: blk[off] ^= (uint8_t)(1u << tprng_below(r, 8)); break;
            case 1: blk[off] = 0; break;
            case 2: blk[off] = 0xff; break;
            default: blk[off] = (uint8_t)tprng_next(r); break;
            }
        }
        if (reseal && has_header(blk))
            timg_reseal(blk, uuid);
        assert_ok(ubj_bdev_write(dev, b, 1, blk));
        len += (size_t)snprintf(where + len, sizeof where - len, " %llu/%d",
                                (unsigned long long)b, nbytes);
        if (len >= sizeof where)
            len = sizeof where - 1;
    }
}

/* one_iteration -- corrupt, check, mount + walk, repair, verify. */
static void one_iteration(struct ubj_bdev *pristine, struct ubj_bdev *dev,
                          struct tprng *r, const uint8_t uuid[16], long it, uint64_t seed)
{
    assert_ok(timg_copy(pristine, dev));
    int reseal = (int)tprng_below(r, 2);
    snprintf(where, sizeof where, "seed %llu iteration %ld%s blocks",
             (unsigned long long)seed, it, reseal ? " resealed" : "");
    corrupt(dev, r, reseal, uuid);
    int lines = 0;
    int rc = ubj_check(dev, 0, quiet_report, &lines);
    if (rc != UBJ_CHECK_CLEAN && rc != UBJ_CHECK_UNCORRECTED && rc != UBJ_CHECK_OPERROR)
        fail_msg("%s: fsck -n returned %d", where, rc);
    if (rc != UBJ_CHECK_CLEAN && lines == 0)
        fail_msg("%s: fsck -n returned %d without a line", where, rc);
    struct ubj_fs *fs;
    rc = ubj_test_mount(dev, 0, &fs);
    if (rc == 0) {
        n_mounted++;
        long budget = 20000;
        walk(fs, UBJ_ROOT_INO, 0, 0, &budget);
        poke(fs);
        rc = ubj_unmount(fs);
        assert_true(rc <= 0 && rc >= -4095);
    } else {
        n_refused++;
        if (rc > 0 || rc < -4095 || ubj_errormsg()[0] == '\0')
            fail_msg("%s: mount returned %d, message '%s'", where, rc, ubj_errormsg());
    }
    lines = 0;
    rc = ubj_check(dev, UBJ_CHECK_REPAIR, quiet_report, &lines);
    if (rc == UBJ_CHECK_CLEAN) {
        n_clean++;
        return;
    }
    if (rc == UBJ_CHECK_UNCORRECTED || rc == UBJ_CHECK_OPERROR) {
        n_uncorrected++;
        return;
    }
    if (rc != UBJ_CHECK_REPAIRED)
        fail_msg("%s: fsck -y returned %d", where, rc);
    n_repaired++;
    lines = 0;
    rc = ubj_check(dev, 0, quiet_report, &lines);
    if (rc != UBJ_CHECK_CLEAN || lines != 0) {
        ubj_test_check(dev, 0, NULL);          /* print what is left */
        fail_msg("%s: after REPAIRED, fsck -n returned %d with %d lines", where, rc,
                 lines);
    }
    rc = ubj_test_mount(dev, 0, &fs);
    if (rc != 0)
        fail_msg("%s: repaired image does not mount: %d %s", where, rc, ubj_errormsg());
    long budget = 20000;
    walk(fs, UBJ_ROOT_INO, 0, 1, &budget);
    assert_ok(tpath_put(fs, "/after-repair", "ok", 2));
    assert_ok(ubj_unmount(fs));
    lines = 0;
    rc = ubj_check(dev, 0, quiet_report, &lines);
    if (rc != UBJ_CHECK_CLEAN || lines != 0)
        fail_msg("%s: repaired image, used, fsck returned %d with %d lines", where, rc,
                 lines);
}

/* test_fuzz -- the iterations. */
static void test_fuzz(void **state)
{
    (void)state;
    uint64_t seed = tprng_env_seed("UBJ_FUZZ_SEED", 20240601);
    long iters = (long)tprng_env_seed("UBJ_FUZZ_ITERS", DEFAULT_ITERS);
    struct ubj_bdev *pristine = build_image(), *dev;
    assert_ok(ubj_bdev_ram_create(IMG_BLOCKS, &dev));
    uint8_t uuid[16];
    assert_ok(timg_uuid(pristine, uuid));
    struct tprng r;
    tprng_seed(&r, seed);
    for (long it = 0; it < iters; it++)
        one_iteration(pristine, dev, &r, uuid, it, seed);
    fprintf(stderr, "fuzz: %ld iterations (seed %llu): %ld mounted, %ld refused; "
            "fsck -y: %ld clean, %ld repaired, %ld left uncorrected\n", iters,
            (unsigned long long)seed, n_mounted, n_refused, n_clean, n_repaired,
            n_uncorrected);
    assert_true(n_repaired > 0);
    ubj_bdev_destroy(dev);
    ubj_bdev_destroy(pristine);
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_fuzz) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
