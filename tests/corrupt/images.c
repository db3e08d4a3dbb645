/*
 * corrupt/images.c -- bad images, one named problem each: a truncated
 * image (device smaller than the superblock says: -EFBIG), a larger
 * device (fine), foreign images (zeros, random bytes, an ext2 superblock:
 * -EUCLEAN), a bad superblock checksum, and superblock / inode fields made
 * impossible but re-sealed with a valid crc (so the geometry and
 * structure checks, not the checksum, must catch them).  Every failing
 * mount leaves a one-line ubj_errormsg(); ubj_check reports at least one
 * line and never returns CLEAN for them.
 */
#include "testutil.h"

#include <stddef.h>
#include "fs/format.h"

#define IMG_BLOCKS 2048u

/* lines_ctx -- collects ubj_check's lines. */
struct lines_ctx { int n; char first[256]; };

/* lines_report -- count lines, keep the first. */
static void lines_report(void *ctx, const char *line)
{
    struct lines_ctx *c = ctx;
    if (c->n++ == 0)
        snprintf(c->first, sizeof c->first, "%s", line);
}

/* expect_check_bad -- fsck (read-only) finds a problem, says so. */
static void expect_check_bad(struct ubj_bdev *dev, const char *what)
{
    struct lines_ctx c = { 0 };
    int rc = ubj_check(dev, 0, lines_report, &c);
    if (rc != UBJ_CHECK_OPERROR && rc != UBJ_CHECK_UNCORRECTED)
        fail_msg("%s: ubj_check returned %d", what, rc);
    if (c.n == 0)
        fail_msg("%s: ubj_check said nothing", what);
    assert_null(strchr(c.first, '\n'));
}

/* expect_mount_fails -- mount returns `want` (0 = any negative) and a
 * one-line message; prints it for the log. */
static void expect_mount_fails(struct ubj_bdev *dev, int want, const char *what)
{
    struct ubj_fs *fs = NULL;
    int rc = ubj_test_mount(dev, 0, &fs);
    if (rc >= 0 || (want != 0 && rc != want)) {
        if (rc == 0)
            ubj_unmount(fs);
        fail_msg("%s: mount returned %d, want %d", what, rc, want);
    }
    const char *m = ubj_errormsg();
    if (m[0] == '\0' || strchr(m, '\n') != NULL)
        fail_msg("%s: bad message '%s'", what, m);
    fprintf(stderr, "  %-34s -> %d: %s\n", what, rc, m);
    /* read-only mounts refuse as well */
    assert_true(ubj_test_mount(dev, UBJ_MOUNT_RDONLY, &fs) < 0);
}

/* mount_may_work -- mount fails with a message, or works: then a walk
 * and a change return values or negative errnos. */
static void mount_may_work(struct ubj_bdev *dev, const char *what)
{
    struct ubj_fs *fs = NULL;
    int rc = ubj_test_mount(dev, 0, &fs);
    fprintf(stderr, "  %-34s -> %d: %s\n", what, rc, rc ? ubj_errormsg() : "mounted");
    if (rc < 0) {
        assert_true(ubj_errormsg()[0] != '\0');
        return;
    }
    assert_int_equal(rc, 0);
    char buf[8];
    assert_true(tpath_read(fs, "/d/f", buf, sizeof buf, 0) <= 5);
    assert_true(tdir_count(fs, UBJ_ROOT_INO) >= -4095);
    assert_true(tpath_create(fs, "/new", 0644, NULL) <= 0);
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    ubj_unmount(fs);
}

/* populated -- a RAM device with a small tree, unmounted. */
static struct ubj_bdev *populated(void)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new(IMG_BLOCKS, &dev, &fs);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_put(fs, "/d/f", "hello", 5));
    assert_ok(tpath_symlink(fs, "d/f", "/l"));
    assert_ok(ubj_unmount(fs));
    return dev;
}

/* test_reseal_matches -- our crc helper agrees with the library. */
static void test_reseal_matches(void **state)
{
    (void)state;
    struct ubj_bdev *dev = populated();
    static struct ubj_super sb, sb2;
    assert_ok(ubj_bdev_read(dev, 0, 1, &sb));
    sb2 = sb;
    timg_reseal(&sb2, sb.uuid);
    assert_int_equal(sb2.hdr.crc, sb.hdr.crc);
    ubj_bdev_destroy(dev);
}

/* test_truncated -- the device is smaller than the image. */
static void test_truncated(void **state)
{
    (void)state;
    const uint64_t sizes[] = { IMG_BLOCKS - 1, IMG_BLOCKS / 2, 300, 8, 1 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        struct ubj_bdev *view;
        assert_ok(tdev_view_create(populated(), sizes[i], &view));
        char what[64];
        snprintf(what, sizeof what, "truncated to %llu blocks",
                 (unsigned long long)sizes[i]);
        expect_mount_fails(view, -EFBIG, what);
        expect_check_bad(view, what);
        ubj_bdev_destroy(view);
    }
}

/* test_larger_device -- an image on a larger device mounts and works. */
static void test_larger_device(void **state)
{
    (void)state;
    struct ubj_bdev *view;
    struct ubj_fs *fs;
    assert_ok(tdev_view_create(populated(), IMG_BLOCKS + 100, &view));
    assert_ok(ubj_test_mount(view, 0, &fs));
    char buf[5];
    assert_rc(tpath_read(fs, "/d/f", buf, 5, 0), 5);
    assert_ok(tpath_put(fs, "/new", "x", 1));
    assert_ok(ubj_unmount(fs));
    int lines = -1;
    int rc = ubj_test_check(view, 0, &lines);
    assert_true(rc == UBJ_CHECK_CLEAN);
    ubj_bdev_destroy(view);
}

/* test_foreign -- zeros, random bytes, an ext2 superblock. */
static void test_foreign(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    uint8_t blk[4096];
    /* all zeros */
    assert_ok(ubj_bdev_ram_create(IMG_BLOCKS, &dev));
    expect_mount_fails(dev, -EUCLEAN, "zeroed device");
    expect_check_bad(dev, "zeroed device");
    /* random bytes everywhere */
    struct tprng r;
    tprng_seed(&r, 5);
    for (uint64_t b = 0; b < IMG_BLOCKS; b++) {
        for (size_t i = 0; i < sizeof blk; i += 8) {
            uint64_t x = tprng_next(&r);
            memcpy(blk + i, &x, 8);
        }
        assert_ok(ubj_bdev_write(dev, b, 1, blk));
    }
    expect_mount_fails(dev, -EUCLEAN, "random bytes");
    expect_check_bad(dev, "random bytes");
    ubj_bdev_destroy(dev);
    /* ext2: superblock at byte 1024, s_magic 0xEF53 at offset 56 */
    assert_ok(ubj_bdev_ram_create(IMG_BLOCKS, &dev));
    memset(blk, 0, sizeof blk);
    uint32_t inodes = 512, blocks = IMG_BLOCKS, log_bs = 2;
    memcpy(blk + 1024 + 0, &inodes, 4);
    memcpy(blk + 1024 + 4, &blocks, 4);
    memcpy(blk + 1024 + 24, &log_bs, 4);
    blk[1024 + 56] = 0x53;
    blk[1024 + 57] = 0xef;
    assert_ok(ubj_bdev_write(dev, 0, 1, blk));
    expect_mount_fails(dev, -EUCLEAN, "ext2 superblock");
    expect_check_bad(dev, "ext2 superblock");
    ubj_bdev_destroy(dev);
}

/* ---- superblock edits -------------------------------------------------- */

struct sb_edit {
    const char *what;
    size_t off;           /* field offset in struct ubj_super */
    size_t size;          /* 4 or 8 */
    uint64_t value;
    int want;             /* mount's error; 0 = any negative; 1 = mount may
                             also succeed (a redundant field it may ignore
                             or recompute), fsck must still report it */
};

/* sb_apply -- store the field. */
static void sb_apply(void *block, void *ctx)
{
    const struct sb_edit *e = ctx;
    uint8_t *p = block;
    if (e->size == 4) {
        uint32_t v = (uint32_t)e->value;
        memcpy(p + e->off, &v, 4);
    } else {
        memcpy(p + e->off, &e->value, 8);
    }
}

#define SBF(f) offsetof(struct ubj_super, f), sizeof(((struct ubj_super *)0)->f)

/* test_superblock_fields -- impossible values with a valid crc. */
static void test_superblock_fields(void **state)
{
    (void)state;
    const struct sb_edit edits[] = {
        { "magic", SBF(hdr.magic), 0x12345678, -EUCLEAN },
        { "block number", SBF(hdr.blkno), 7, -EUCLEAN },
        { "version 2", SBF(version), 2, 0 },
        { "version 0", SBF(version), 0, 0 },
        { "block size 1024", SBF(block_size), 1024, 0 },
        { "block size 0", SBF(block_size), 0, 0 },
        { "nblocks 0", SBF(nblocks), 0, -EUCLEAN },
        { "nblocks 10", SBF(nblocks), 10, -EUCLEAN },
        { "nblocks huge", SBF(nblocks), 1ull << 50, 0 },
        { "nblocks +1", SBF(nblocks), IMG_BLOCKS + 1, -EFBIG },
        { "ninodes 0", SBF(ninodes), 0, -EUCLEAN },
        { "ninodes huge", SBF(ninodes), 1ull << 40, -EUCLEAN },
        { "ninodes uint64 max", SBF(ninodes), UINT64_MAX, -EUCLEAN },
        { "bb_start 0", SBF(bb_start), 0, -EUCLEAN },
        { "bb_start past end", SBF(bb_start), IMG_BLOCKS + 5, -EUCLEAN },
        { "bb_start huge", SBF(bb_start), UINT64_MAX - 1, -EUCLEAN },
        { "bb_blocks 0", SBF(bb_blocks), 0, -EUCLEAN },
        { "bb_blocks huge", SBF(bb_blocks), UINT64_MAX, -EUCLEAN },
        { "ib_start 0", SBF(ib_start), 0, -EUCLEAN },
        { "ib_blocks 0", SBF(ib_blocks), 0, -EUCLEAN },
        { "it_start past end", SBF(it_start), IMG_BLOCKS, -EUCLEAN },
        { "it_blocks 0", SBF(it_blocks), 0, -EUCLEAN },
        { "it_blocks huge", SBF(it_blocks), 1ull << 62, -EUCLEAN },
        { "data_start 0", SBF(data_start), 0, -EUCLEAN },
        { "data_start past end", SBF(data_start), IMG_BLOCKS + 1, -EUCLEAN },
        { "free_blocks > nblocks", SBF(free_blocks), IMG_BLOCKS * 2, 1 },
        { "free_inodes > ninodes", SBF(free_inodes), 1ull << 40, 1 },
        { "root_ino 0", SBF(root_ino), 0, -EUCLEAN },
        { "root_ino huge", SBF(root_ino), 1ull << 40, -EUCLEAN },
        { "root_ino 100 (free)", SBF(root_ino), 100, -EUCLEAN },
        { "orphan_head huge", SBF(orphan_head), 1ull << 40, 1 },
        { "orphan_head a dir", SBF(orphan_head), UBJ_ROOT_INO, 1 },
        { "unknown incompat feature", SBF(feat_incompat), 1ull << 63, 0 },
        { "mode 77", SBF(mode), 77, 0 },
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        struct ubj_bdev *dev = populated();
        assert_ok(timg_edit(dev, 0, 1, sb_apply, (void *)&edits[i]));
        char what[80];
        snprintf(what, sizeof what, "sb %s", edits[i].what);
        if (edits[i].want == 1)
            mount_may_work(dev, what);
        else
            expect_mount_fails(dev, edits[i].want, what);
        expect_check_bad(dev, what);
        ubj_bdev_destroy(dev);
    }
    /* a bad checksum alone */
    struct ubj_bdev *dev = populated();
    const struct sb_edit label = { "label", SBF(label), 0x41414141, 0 };
    assert_ok(timg_edit(dev, 0, 0, sb_apply, (void *)&label));
    expect_mount_fails(dev, -EUCLEAN, "sb bad checksum");
    expect_check_bad(dev, "sb bad checksum");
    ubj_bdev_destroy(dev);
}

/* test_unknown_ro_compat -- an unknown read-only-compatible feature: a
 * read-only mount works; a read-write one is refused (EROFS, as ext4) or
 * is read-only in effect. */
static void test_unknown_ro_compat(void **state)
{
    (void)state;
    struct ubj_bdev *dev = populated();
    const struct sb_edit ro = { "ro_compat", SBF(feat_ro_compat), 1ull << 62, 0 };
    assert_ok(timg_edit(dev, 0, 1, sb_apply, (void *)&ro));
    struct ubj_fs *fs;
    assert_ok(ubj_test_mount(dev, UBJ_MOUNT_RDONLY, &fs));
    char buf[5];
    assert_rc(tpath_read(fs, "/d/f", buf, 5, 0), 5);
    assert_ok(ubj_unmount(fs));
    int rc = ubj_test_mount(dev, 0, &fs);
    if (rc == 0) {
        assert_rc(tpath_create(fs, "/x", 0644, NULL), -EROFS);
        assert_ok(ubj_unmount(fs));
    } else {
        assert_rc(rc, -EROFS);
    }
    /* an unknown compatible feature is ignored */
    const struct sb_edit co = { "compat", SBF(feat_compat), 1ull << 61, 0 };
    assert_ok(timg_edit(dev, 0, 1, sb_apply, (void *)&co));
    assert_ok(ubj_test_mount(dev, UBJ_MOUNT_RDONLY, &fs));
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
}

/* ---- inode edits -------------------------------------------------------- */

struct ino_edit {
    ubj_ino_t ino;
    void (*fn)(struct ubj_inode *ip);
};

/* ino_apply -- edit the inode's slot in its table block. */
static void ino_apply(void *block, void *ctx)
{
    const struct ino_edit *e = ctx;
    struct ubj_inode *ip = (struct ubj_inode *)((uint8_t *)block +
                           UBJ_INODE_SIZE * (1 + e->ino % UBJ_INODES_PER_BLOCK));
    e->fn(ip);
}

/* edit_inode -- apply fn to inode ino of dev (resealed). */
static void edit_inode(struct ubj_bdev *dev, ubj_ino_t ino, void (*fn)(struct ubj_inode *))
{
    static struct ubj_super sb;
    assert_ok(ubj_bdev_read(dev, 0, 1, &sb));
    struct ino_edit e = { ino, fn };
    assert_ok(timg_edit(dev, sb.it_start + ino / UBJ_INODES_PER_BLOCK, 1, ino_apply, &e));
}

/* root_* -- edits of the root inode. */
static void root_to_file(struct ubj_inode *ip) { ip->mode = S_IFREG | 0644; }
static void root_free(struct ubj_inode *ip) { ip->mode = 0; }
static void root_tree_past_end(struct ubj_inode *ip)
{
    ip->i_data.dir.root = IMG_BLOCKS + 1000;
}
static void root_tree_at_super(struct ubj_inode *ip) { ip->i_data.dir.root = 0; }
static void root_depth_huge(struct ubj_inode *ip) { ip->i_data.dir.depth = 1000; }

/* test_root_inode -- a root that is not a directory or is free: mount
 * refuses; a root whose tree points nowhere: mount refuses or lookups
 * fail cleanly. */
static void test_root_inode(void **state)
{
    (void)state;
    void (*fns[])(struct ubj_inode *) = { root_to_file, root_free };
    const char *names[] = { "root is a file", "root is free" };
    for (int i = 0; i < 2; i++) {
        struct ubj_bdev *dev = populated();
        edit_inode(dev, UBJ_ROOT_INO, fns[i]);
        expect_mount_fails(dev, -EUCLEAN, names[i]);
        expect_check_bad(dev, names[i]);
        ubj_bdev_destroy(dev);
    }
    void (*tree[])(struct ubj_inode *) = { root_tree_past_end, root_tree_at_super,
                                           root_depth_huge };
    for (int i = 0; i < 3; i++) {
        struct ubj_bdev *dev = populated();
        edit_inode(dev, UBJ_ROOT_INO, tree[i]);
        struct ubj_fs *fs;
        int rc = ubj_test_mount(dev, 0, &fs);
        if (rc == 0) {
            struct ubj_stat st;
            rc = ubj_lookup(fs, UBJ_ROOT_INO, "d", &st);
            assert_true(rc < 0);
            assert_true(tdir_count(fs, UBJ_ROOT_INO) < 0);
            assert_true(tpath_create(fs, "/new", 0644, NULL) < 0);
            ubj_unmount(fs);
        }
        expect_check_bad(dev, "root tree");
        ubj_bdev_destroy(dev);
    }
}

/* file_* / link_* -- edits of a file or symlink inode (found by a lookup
 * first). */
static void file_size_huge(struct ubj_inode *ip) { ip->size = UINT64_MAX; }
static void file_extent_past_end(struct ubj_inode *ip)
{
    ip->i_data.ext.e[0].pblk = (uint64_t)IMG_BLOCKS * 1000;
}
static void file_extent_entries(struct ubj_inode *ip) { ip->i_data.ext.hdr.entries = 60000; }
static void file_extent_depth(struct ubj_inode *ip) { ip->i_data.ext.hdr.depth = 40; }
static void file_extent_magic(struct ubj_inode *ip) { ip->i_data.ext.hdr.magic = 0x1234; }
static void file_extent_len(struct ubj_inode *ip) { ip->i_data.ext.e[0].len = 32767; }
static void file_extent_super(struct ubj_inode *ip) { ip->i_data.ext.e[0].pblk = 0; }
static void file_nlink_0(struct ubj_inode *ip) { ip->nlink = 0; }
static void file_mode_dir(struct ubj_inode *ip) { ip->mode = S_IFDIR | 0755; }
static void file_mode_bad(struct ubj_inode *ip) { ip->mode = 0170000 | 0644; }
static void link_inline_long(struct ubj_inode *ip)
{
    ip->size = 4000;
    memset(ip->i_data.symlink, 'z', sizeof ip->i_data.symlink);
}
static void link_size_0(struct ubj_inode *ip) { ip->size = 0; }

/* test_bad_inodes -- corrupt (but sealed) inodes: every call returns a
 * value or a negative errno, fsck reports them. */
static void test_bad_inodes(void **state)
{
    (void)state;
    struct {
        const char *what, *path;
        void (*fn)(struct ubj_inode *);
    } cases[] = {
        { "file size huge", "/d/f", file_size_huge },
        { "extent past the end", "/d/f", file_extent_past_end },
        { "extent entries 60000", "/d/f", file_extent_entries },
        { "extent depth 40", "/d/f", file_extent_depth },
        { "extent magic", "/d/f", file_extent_magic },
        { "extent over metadata", "/d/f", file_extent_len },
        { "extent at block 0", "/d/f", file_extent_super },
        { "nlink 0", "/d/f", file_nlink_0 },
        { "file is a dir", "/d/f", file_mode_dir },
        { "bad type", "/d/f", file_mode_bad },
        { "symlink inline 4000", "/l", link_inline_long },
        { "symlink size 0", "/l", link_size_0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ubj_bdev *dev = populated();
        struct ubj_fs *fs;
        assert_ok(ubj_test_mount(dev, UBJ_MOUNT_RDONLY, &fs));
        ubj_ino_t ino = tpath_ino(fs, cases[i].path);
        assert_true(ino != 0);
        assert_ok(ubj_unmount(fs));
        edit_inode(dev, ino, cases[i].fn);
        expect_check_bad(dev, cases[i].what);
        int rc = ubj_test_mount(dev, 0, &fs);
        if (rc == 0) {
            static uint8_t buf[70000];
            struct ubj_stat st;
            rc = ubj_getattr(fs, ino, &st);
            assert_true(rc <= 0);
            ssize_t n = ubj_pread(fs, ino, buf, sizeof buf, 0);
            assert_true(n <= (ssize_t)sizeof buf);
            n = ubj_pread(fs, ino, buf, 100, (off_t)1 << 40);
            assert_true(n <= 100);
            n = ubj_readlink(fs, ino, (char *)buf, sizeof buf);
            assert_true(n <= (ssize_t)sizeof buf);
            n = ubj_pwrite(fs, ino, "abc", 3, 5000);
            assert_true(n <= 3);
            struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = 1 };
            assert_true(ubj_setattr(fs, ino, &sa, NULL) <= 0);
            assert_true(tdir_count(fs, ino) >= -4095);
            rc = tpath_unlink(fs, cases[i].path);
            assert_true(rc <= 0);
            ubj_unmount(fs);
        } else {
            assert_true(rc < 0);
        }
        /* repair makes it clean (or says what it could not fix) */
        rc = ubj_test_check(dev, UBJ_CHECK_REPAIR, NULL);
        assert_true(rc == UBJ_CHECK_REPAIRED || rc == UBJ_CHECK_UNCORRECTED ||
                    rc == UBJ_CHECK_CLEAN);
        if (rc == UBJ_CHECK_REPAIRED) {
            int lines = -1;
            rc = ubj_test_check(dev, 0, &lines);
            if (rc != UBJ_CHECK_CLEAN || lines != 0)
                fail_msg("%s: after REPAIRED, fsck returns %d with %d lines",
                         cases[i].what, rc, lines);
        }
        ubj_bdev_destroy(dev);
    }
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reseal_matches), cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_larger_device), cmocka_unit_test(test_foreign),
        cmocka_unit_test(test_superblock_fields), cmocka_unit_test(test_unknown_ro_compat),
        cmocka_unit_test(test_root_inode), cmocka_unit_test(test_bad_inodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
