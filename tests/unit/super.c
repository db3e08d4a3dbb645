/*
 * unit/super.c -- format, mount, unmount, the superblock and inodes
 * (src/fs/super.c, src/fs/inode.c).
 *
 * Checks: the layout ubj_format writes (recomputed here independently and
 * compared with statfs and the raw superblock) for 1 MiB, 64 MiB and a
 * sparse 1 TiB RAM device, with the time format and mount take; format's
 * argument errors; every superblock field mount validates (-EUCLEAN with a
 * message naming it), a truncated device (-EFBIG), read-only mounts (also
 * forced by an unknown ro_compat feature); checksum verification of
 * metadata blocks; mount state and counters on disk; the timer thread; the
 * orphan list across unmount and across a crash (a device snapshot taken
 * after ubj_sync, mounted without the original ever being unmounted).
 */
#include "testutil.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "fs/fs.h"
#include "ubjfs/model.h"
#include "txn/registry.h"    /* on-disk mode codes */

#define MIB_BLOCKS 256u
#define TIB_BLOCKS (1ULL << 28)

static struct ubj_config t_cfg = { .flags = UBJ_MOUNT_NO_TIMER };

/* t_secs -- monotonic seconds. */
static double t_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* t_dev -- a zeroed RAM device. */
static struct ubj_bdev *t_dev(uint64_t nblocks)
{
    struct ubj_bdev *d = NULL;
    assert_int_equal(ubj_bdev_ram_create(nblocks, &d), 0);
    return d;
}

/* t_read_sb -- the superblock as it is on the device. */
static void t_read_sb(struct ubj_bdev *d, struct ubj_super *sb)
{
    assert_int_equal(ubj_bdev_read(d, 0, 1, sb), 0);
}

/* t_write_sb -- store sb at block 0, resealed unless `raw`. */
static void t_write_sb(struct ubj_bdev *d, struct ubj_super *sb, bool raw)
{
    if (!raw)
        fs_block_seal(ubj_crc32c(~0u, sb->uuid, 16), sb, UBJ_MAGIC_SUPER, 0);
    assert_int_equal(ubj_bdev_write(d, 0, 1, sb), 0);
}

/* Expected geometry, computed here without super.c. */
struct t_layout {
    uint64_t ninodes, bb, ib, it_start, it, data_start;
};

/* t_layout_of -- the layout format must produce for nblocks. */
static void t_layout_of(uint64_t nblocks, uint64_t inodes, struct t_layout *l)
{
    uint64_t n = inodes ? inodes : nblocks / 4;
    if (n < 64)
        n = 64;
    n = (n + 14) / 15 * 15;
    l->ninodes = n;
    l->bb = (nblocks + 32639) / 32640;
    l->ib = (n + 32639) / 32640;
    l->it_start = 1 + l->bb + l->ib;
    l->it = n / 15;
    l->data_start = l->it_start + l->it;
}

/* t_check_layout -- statfs and the raw superblock against the layout. */
static void t_check_layout(struct ubj_bdev *d, struct ubj_fs *fs, uint64_t nblocks)
{
    struct t_layout l;
    struct ubj_statfs sf;
    struct ubj_super sb;
    t_layout_of(nblocks, 0, &l);
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    assert_int_equal(sf.bsize, 4096);
    assert_int_equal(sf.blocks, nblocks - l.data_start);
    assert_int_equal(sf.bfree, nblocks - l.data_start - 1);
    assert_int_equal(sf.bavail, sf.bfree);
    assert_int_equal(sf.files, l.ninodes - 1);
    assert_int_equal(sf.ffree, l.ninodes - 2);
    assert_int_equal(sf.namemax, 255);
    t_read_sb(d, &sb);
    assert_int_equal(sb.bb_start, 1);
    assert_int_equal(sb.bb_blocks, l.bb);
    assert_int_equal(sb.ib_start, 1 + l.bb);
    assert_int_equal(sb.ib_blocks, l.ib);
    assert_int_equal(sb.it_start, l.it_start);
    assert_int_equal(sb.it_blocks, l.it);
    assert_int_equal(sb.data_start, l.data_start);
    assert_int_equal(sb.ninodes, l.ninodes);
    assert_memory_equal(sb.uuid, sf.uuid, 16);
}

/* t_check_root -- the root directory's attributes. */
static void t_check_root(struct ubj_fs *fs)
{
    struct ubj_stat st;
    assert_int_equal(ubj_getattr(fs, UBJ_ROOT_INO, &st), 0);
    assert_int_equal(st.ino, 1);
    assert_int_equal(st.mode, S_IFDIR | 0755);
    assert_int_equal(st.nlink, 2);
    assert_int_equal(st.size, 4096);
    assert_int_equal(st.blocks, 8);
    assert_int_equal(st.uid, 0);
    assert_int_equal(st.blksize, 4096);
    assert_true(st.mtime.tv_sec > 1600000000);
    assert_int_equal(ubj_getattr(fs, 0, &st), -ENOENT);
    assert_int_equal(ubj_getattr(fs, 2, &st), -ENOENT);
    assert_int_equal(ubj_getattr(fs, (ubj_ino_t)1 << 50, &st), -ENOENT);
}

/* t_cycle -- format, mount, check, remount, check, for one size. */
static void t_cycle(uint64_t nblocks, unsigned fmt_flags, bool timing)
{
    struct ubj_bdev *d = t_dev(nblocks);
    struct ubj_fs *fs = NULL;
    struct ubj_format_opts o = { .flags = fmt_flags };
    double t0 = t_secs();
    assert_int_equal(ubj_format(d, &o), 0);
    double t1 = t_secs();
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    double t2 = t_secs();
    t_check_layout(d, fs, nblocks);
    t_check_root(fs);
    assert_int_equal(ubj_unmount(fs), 0);
    double t3 = t_secs();
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    double t4 = t_secs();
    t_check_layout(d, fs, nblocks);
    t_check_root(fs);
    assert_int_equal(ubj_unmount(fs), 0);
    if (timing) {
        printf("# %llu blocks: format %.3f s, mount %.4f s, unmount %.4f s, "
               "remount %.4f s\n", (unsigned long long)nblocks, t1 - t0,
               t2 - t1, t3 - t2, t4 - t3);
        assert_true(t1 - t0 < 20.0);
        assert_true(t2 - t1 < 2.0);
        assert_true(t4 - t3 < 2.0);
    }
    ubj_bdev_destroy(d);
}

/* test_sizes_small -- 1 MiB and 64 MiB images. */
static void test_sizes_small(void **state)
{
    (void)state;
    t_cycle(MIB_BLOCKS, 0, false);
    t_cycle(MIB_BLOCKS, UBJ_FORMAT_ZEROED, false);
    t_cycle(64u * MIB_BLOCKS, 0, true);
}

/* test_size_1tib -- a sparse 1 TiB RAM device formats and mounts fast. */
static void test_size_1tib(void **state)
{
    (void)state;
    t_cycle(TIB_BLOCKS, UBJ_FORMAT_ZEROED, true);
}

/* test_format_zeroes_itable -- without ZEROED the inode table is zeroed. */
static void test_format_zeroes_itable(void **state)
{
    (void)state;
    uint64_t n = 4096;
    struct ubj_bdev *d = t_dev(n);
    struct t_layout l;
    uint8_t *buf = malloc(4096);
    t_layout_of(n, 0, &l);
    memset(buf, 0xa5, 4096);
    for (uint64_t b = 0; b < n; b++)
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
    assert_int_equal(ubj_format(d, NULL), 0);
    for (uint64_t b = l.it_start + 1; b < l.data_start; b++) {
        assert_int_equal(ubj_bdev_read(d, b, 1, buf), 0);
        assert_int_equal(tzero_check(buf, 4096), 4096);
    }
    struct ubj_fs *fs;
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    t_check_layout(d, fs, n);
    assert_int_equal(ubj_unmount(fs), 0);
    /* with ZEROED over garbage the table is left alone */
    memset(buf, 0xa5, 4096);
    assert_int_equal(ubj_bdev_write(d, l.it_start + 1, 1, buf), 0);
    struct ubj_format_opts o = { .flags = UBJ_FORMAT_ZEROED };
    assert_int_equal(ubj_format(d, &o), 0);
    assert_int_equal(ubj_bdev_read(d, l.it_start + 1, 1, buf), 0);
    assert_int_equal(buf[100], 0xa5);
    free(buf);
    ubj_bdev_destroy(d);
}

/* fake_io -- a device whose every request fails: reads. */
static int fake_io(struct ubj_bdev *d, uint64_t b, uint32_t c, void *buf)
{
    (void)d; (void)b; (void)c; (void)buf;
    return -EIO;
}
/* fake_wr -- writes fail. */
static int fake_wr(struct ubj_bdev *d, uint64_t b, uint32_t c, const void *buf)
{
    (void)d; (void)b; (void)c; (void)buf;
    return -EIO;
}
/* fake_flush -- flushes fail. */
static int fake_flush(struct ubj_bdev *d) { (void)d; return -EIO; }
/* fake_destroy -- nothing to free (the device is on the stack). */
static void fake_destroy(struct ubj_bdev *d) { (void)d; }
static const struct ubj_bdev_ops fake_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "fake", .read = fake_io,
    .write = fake_wr, .flush = fake_flush, .destroy = fake_destroy,
};

/* test_format_errors -- bad devices and options. */
static void test_format_errors(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(255);
    assert_int_equal(ubj_format(d, NULL), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "1 MiB"));
    ubj_bdev_destroy(d);

    struct ubj_bdev huge = { .ops = &fake_ops, .block_size = 4096,
                             .nblocks = (1ULL << 40) + 1 };
    assert_int_equal(ubj_format(&huge, NULL), -EFBIG);
    huge.nblocks = 1ULL << 40;      /* allowed size: fails only at I/O */
    assert_int_equal(ubj_format(&huge, NULL), -EIO);
    assert_int_equal(ubj_format(NULL, NULL), -EINVAL);

    d = t_dev(MIB_BLOCKS);
    struct ubj_format_opts o = { .mode = "bogus" };
    assert_int_equal(ubj_format(d, &o), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "bogus"));
    o = (struct ubj_format_opts){ .label = "0123456789012345678901234567890X" };
    assert_int_equal(ubj_format(d, &o), -EINVAL);
    o = (struct ubj_format_opts){ .inodes = MIB_BLOCKS * 15 };
    assert_int_equal(ubj_format(d, &o), -ENOSPC);
    o = (struct ubj_format_opts){ .inodes = UINT64_MAX };
    assert_int_equal(ubj_format(d, &o), -ENOSPC);
    /* the device was never written by the failed calls */
    struct ubj_super sb;
    t_read_sb(d, &sb);
    assert_int_equal(sb.hdr.magic, 0);

    /* label of 31 bytes, given uuid, inode count rounded up to 15s */
    o = (struct ubj_format_opts){ .label = "0123456789012345678901234567890",
                                  .inodes = 100, .mode = "none" };
    for (int i = 0; i < 16; i++)
        o.uuid[i] = (uint8_t)(i + 1);
    assert_int_equal(ubj_format(d, &o), 0);
    t_read_sb(d, &sb);
    assert_string_equal(sb.label, o.label);
    assert_memory_equal(sb.uuid, o.uuid, 16);
    assert_int_equal(sb.ninodes, 105);
    assert_int_equal(sb.state, UBJ_STATE_CLEAN);
    assert_int_equal(sb.mode, UBJ_FMT_MODE_NONE);
    assert_int_equal(fs_block_verify(ubj_crc32c(~0u, sb.uuid, 16), &sb,
                                     UBJ_MAGIC_SUPER, 0), 0);
    struct ubj_fs *fs;
    struct ubj_statfs sf;
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    assert_memory_equal(sf.uuid, o.uuid, 16);
    assert_int_equal(sf.files, 104);
    assert_int_equal(ubj_unmount(fs), 0);
    /* random uuids differ between formats */
    uint8_t u1[16];
    assert_int_equal(ubj_format(d, NULL), 0);
    t_read_sb(d, &sb);
    memcpy(u1, sb.uuid, 16);
    assert_int_equal(ubj_format(d, NULL), 0);
    t_read_sb(d, &sb);
    assert_memory_not_equal(u1, sb.uuid, 16);
    ubj_bdev_destroy(d);
}

/* One superblock corruption: what to change and the message it gives. */
struct t_corrupt {
    const char *name;
    void (*apply)(struct ubj_super *sb);
    bool raw;            /* do not reseal (tests magic/crc themselves) */
    const char *msg;     /* substring of the error message */
};

/* c_* -- one corruption each, named by the function (see the table). */
static void c_magic(struct ubj_super *sb) { sb->hdr.magic ^= 1; }
static void c_crc(struct ubj_super *sb) { sb->reserved[100] ^= 0x40; }
static void c_crcfield(struct ubj_super *sb) { sb->hdr.crc ^= 0x80000000u; }
static void c_blkno(struct ubj_super *sb)  /* sealed as block 7 */
{
    fs_block_seal(ubj_crc32c(~0u, sb->uuid, 16), sb, UBJ_MAGIC_SUPER, 7);
}
static void c_version(struct ubj_super *sb) { sb->version = 2; }
static void c_bsize(struct ubj_super *sb) { sb->block_size = 8192; }
static void c_nblocks_small(struct ubj_super *sb) { sb->nblocks = 100; }
static void c_ninodes(struct ubj_super *sb) { sb->ninodes = 14; }
static void c_ninodes_big(struct ubj_super *sb) { sb->ninodes = 1ULL << 62; }
static void c_bb_start(struct ubj_super *sb) { sb->bb_start = 2; }
static void c_bb_blocks(struct ubj_super *sb) { sb->bb_blocks = 0; }
static void c_ib(struct ubj_super *sb) { sb->ib_blocks += 1; }
static void c_it(struct ubj_super *sb) { sb->it_start += 1; }
static void c_it_blocks(struct ubj_super *sb) { sb->it_blocks = UINT64_MAX; }
static void c_data(struct ubj_super *sb) { sb->data_start -= 1; }
static void c_journal(struct ubj_super *sb) { sb->journal_blocks = 1ULL << 50; }
static void c_journal_wrap(struct ubj_super *sb)  /* end wraps to data_start */
{
    sb->journal_start = sb->it_start + sb->it_blocks;
    sb->journal_blocks = 0 - sb->journal_start + 5;
    sb->data_start = 5;
}
static void c_journal_empty(struct ubj_super *sb)
{
    sb->journal_start = sb->it_start + sb->it_blocks;
}
static void c_meta_end(struct ubj_super *sb)     /* regions past the end */
{
    sb->ninodes = (sb->nblocks - 1) * 15;
    sb->ib_blocks = (sb->ninodes + 32639) / 32640;
    sb->it_start = sb->ib_start + sb->ib_blocks;
    sb->it_blocks = sb->ninodes / 15;
}
static void c_incompat(struct ubj_super *sb) { sb->feat_incompat = 1ULL << 7; }
static void c_free_blocks(struct ubj_super *sb) { sb->free_blocks = sb->nblocks; }
static void c_free_inodes(struct ubj_super *sb) { sb->free_inodes = sb->ninodes; }
static void c_root(struct ubj_super *sb) { sb->root_ino = 2; }
static void c_orphan(struct ubj_super *sb) { sb->orphan_head = sb->ninodes; }
static void c_mode(struct ubj_super *sb) { sb->mode = 77; }
static void c_state(struct ubj_super *sb) { sb->state = 0x100; }
static void c_zero(struct ubj_super *sb) { memset(sb, 0, sizeof *sb); }

static const struct t_corrupt t_corruptions[] = {
    { "magic", c_magic, true, "magic" },
    { "crc (payload)", c_crc, true, "checksum" },
    { "crc (field)", c_crcfield, true, "checksum" },
    { "zeroed", c_zero, true, "magic" },
    { "blkno", c_blkno, true, "block number" },
    { "version", c_version, false, "version" },
    { "block size", c_bsize, false, "block size" },
    { "nblocks", c_nblocks_small, false, "block count" },
    { "ninodes", c_ninodes, false, "inode count" },
    { "ninodes huge", c_ninodes_big, false, "inode count" },
    { "bb_start", c_bb_start, false, "block bitmap" },
    { "bb_blocks", c_bb_blocks, false, "block bitmap" },
    { "ib_blocks", c_ib, false, "inode bitmap" },
    { "it_start", c_it, false, "inode table" },
    { "it_blocks", c_it_blocks, false, "inode table" },
    { "data_start", c_data, false, "data area" },
    { "journal", c_journal, false, "journal" },
    { "journal wrap", c_journal_wrap, false, "journal" },
    { "journal empty", c_journal_empty, false, "journal" },
    { "metadata end", c_meta_end, false, "beyond the image" },
    { "incompat", c_incompat, false, "incompatible" },
    { "free blocks", c_free_blocks, false, "free block count" },
    { "free inodes", c_free_inodes, false, "free inode count" },
    { "root", c_root, false, "root inode" },
    { "orphan head", c_orphan, false, "orphan" },
    { "mode", c_mode, false, "mode" },
    { "state", c_state, false, "state" },
};

/* test_corrupt_super -- each bad field: -EUCLEAN, a message naming it. */
static void test_corrupt_super(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(2048);
    struct ubj_super good, sb;
    assert_int_equal(ubj_format(d, NULL), 0);
    t_read_sb(d, &good);
    for (size_t i = 0; i < sizeof t_corruptions / sizeof t_corruptions[0]; i++) {
        const struct t_corrupt *c = &t_corruptions[i];
        struct ubj_fs *fs = NULL;
        sb = good;
        c->apply(&sb);
        t_write_sb(d, &sb, c->raw);
        int rc = ubj_mount(d, &t_cfg, &fs);
        if (rc != -EUCLEAN || !strstr(ubj_errormsg(), c->msg))
            fail_msg("%s: rc %d, message \"%s\"", c->name, rc, ubj_errormsg());
        assert_null(fs);
        assert_non_null(strstr(ubj_errormsg(), "superblock"));
        t_write_sb(d, &good, true);
    }
    /* the good superblock still mounts */
    struct ubj_fs *fs;
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* test_truncated -- an image larger than its device: -EFBIG. */
static void test_truncated(void **state)
{
    (void)state;
    struct ubj_bdev *big = t_dev(1024), *small = t_dev(600);
    uint8_t *buf = malloc(600 * 4096);
    assert_int_equal(ubj_format(big, NULL), 0);
    assert_int_equal(ubj_bdev_read(big, 0, 600, buf), 0);
    assert_int_equal(ubj_bdev_write(small, 0, 600, buf), 0);
    struct ubj_fs *fs = NULL;
    assert_int_equal(ubj_mount(small, &t_cfg, &fs), -EFBIG);
    assert_non_null(strstr(ubj_errormsg(), "truncated"));
    assert_non_null(strstr(ubj_errormsg(), "1024"));
    assert_non_null(strstr(ubj_errormsg(), "600"));
    /* a device larger than the image is fine */
    struct ubj_bdev *bigger = t_dev(2000);
    assert_int_equal(ubj_bdev_read(big, 0, 600, buf), 0);
    assert_int_equal(ubj_bdev_write(bigger, 0, 600, buf), 0);
    assert_int_equal(ubj_bdev_read(big, 600, 424, buf), 0);
    assert_int_equal(ubj_bdev_write(bigger, 600, 424, buf), 0);
    assert_int_equal(ubj_mount(bigger, &t_cfg, &fs), 0);
    struct ubj_statfs sf;
    assert_int_equal(ubj_statfs_get(fs, &sf), 0);
    struct t_layout l;
    t_layout_of(1024, 0, &l);
    assert_int_equal(sf.blocks, 1024 - l.data_start);
    assert_int_equal(ubj_unmount(fs), 0);
    /* an empty device: not an image */
    struct ubj_bdev *empty = t_dev(300);
    assert_int_equal(ubj_mount(empty, &t_cfg, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "not a ubjfs image"));
    free(buf);
    ubj_bdev_destroy(big);
    ubj_bdev_destroy(small);
    ubj_bdev_destroy(bigger);
    ubj_bdev_destroy(empty);
}

/* test_mount_config -- bad configurations and modes. */
static void test_mount_config(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs = NULL;
    assert_int_equal(ubj_format(d, NULL), 0);
    struct ubj_config c = { .mode = "nosuchmode", .flags = UBJ_MOUNT_NO_TIMER };
    assert_int_equal(ubj_mount(d, &c, &fs), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "nosuchmode"));
    c = (struct ubj_config){ .version = 9 };
    assert_int_equal(ubj_mount(d, &c, &fs), -EINVAL);
    c = (struct ubj_config){ .flags = 0x80 };
    assert_int_equal(ubj_mount(d, &c, &fs), -EINVAL);
    assert_int_equal(ubj_mount(NULL, NULL, &fs), -EINVAL);
    assert_int_equal(ubj_mount(d, NULL, NULL), -EINVAL);
    /* tiny cache (raised to the minimum), explicit mode */
    c = (struct ubj_config){ .mode = "none", .cache_blocks = 1,
                             .flags = UBJ_MOUNT_NO_TIMER };
    assert_int_equal(ubj_mount(d, &c, &fs), 0);
    t_check_root(fs);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* test_mount_state -- MOUNTED with a count on disk; CLEAN after unmount;
 * a read-only mount writes nothing. */
static void test_mount_state(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs;
    struct ubj_super sb;
    assert_int_equal(ubj_format(d, NULL), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    t_read_sb(d, &sb);
    assert_int_equal(sb.state, UBJ_STATE_MOUNTED);
    assert_int_equal(sb.mount_count, 1);
    assert_true(sb.mount_time > 1600000000);
    assert_int_equal(fs_block_verify(ubj_crc32c(~0u, sb.uuid, 16), &sb,
                                     UBJ_MAGIC_SUPER, 0), 0);
    assert_int_equal(ubj_unmount(fs), 0);
    t_read_sb(d, &sb);
    assert_int_equal(sb.state, UBJ_STATE_CLEAN);
    assert_int_equal(sb.mount_count, 1);

    struct ubj_bdev_stats before, after;
    struct ubj_config ro = { .flags = UBJ_MOUNT_NO_TIMER | UBJ_MOUNT_RDONLY };
    ubj_bdev_stats_get(d, &before);
    assert_int_equal(ubj_mount(d, &ro, &fs), 0);
    t_check_root(fs);
    struct ubj_handle *h;
    assert_int_equal(fs_start(fs, 1, &h), -EROFS);
    assert_int_equal(ubj_sync(fs), 0);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_stats_get(d, &after);
    assert_int_equal(after.writes, before.writes);
    t_read_sb(d, &sb);
    assert_int_equal(sb.mount_count, 1);

    /* an unknown ro_compat feature forces a read-only mount */
    sb.feat_ro_compat = 1ULL << 33;
    t_write_sb(d, &sb, false);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(fs_start(fs, 1, &h), -EROFS);
    assert_int_equal(ubj_unmount(fs), 0);
    /* an unknown compat feature is ignored */
    sb.feat_ro_compat = 0;
    sb.feat_compat = 1ULL << 20;
    t_write_sb(d, &sb, false);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(fs_start(fs, 1, &h), 0);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    assert_int_equal(ubj_unmount(fs), 0);
    t_read_sb(d, &sb);
    assert_int_equal(sb.mount_count, 2);
    ubj_bdev_destroy(d);
}

/* test_corrupt_blocks -- metadata checksums are verified on first use. */
static void test_corrupt_blocks(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs;
    struct ubj_super sb;
    uint8_t buf[4096];
    assert_int_equal(ubj_format(d, NULL), 0);
    t_read_sb(d, &sb);
    /* inode table block of the root: the mount fails naming it */
    assert_int_equal(ubj_bdev_read(d, sb.it_start, 1, buf), 0);
    buf[300] ^= 1;
    assert_int_equal(ubj_bdev_write(d, sb.it_start, 1, buf), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "bad checksum (inode table)"));
    buf[300] ^= 1;
    assert_int_equal(ubj_bdev_write(d, sb.it_start, 1, buf), 0);
    /* a misdirected write: a valid bitmap block at the wrong place; the
     * mount reads every bitmap block (fs_alloc_scan) and comes up
     * read-only naming it */
    assert_int_equal(ubj_bdev_read(d, sb.bb_start, 1, buf), 0);
    assert_int_equal(ubj_bdev_write(d, sb.ib_start, 1, buf), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    struct ubj_handle *h;
    assert_non_null(strstr(ubj_errormsg(), "inode bitmap"));
    assert_int_equal(fs->error, -EUCLEAN);
    /* the mount refuses further changes after the error */
    assert_int_equal(fs_start(fs, 1, &h), -EROFS);
    assert_non_null(strstr(ubj_errormsg(), "fsck"));
    assert_int_equal(ubj_unmount(fs), 0);
    t_read_sb(d, &sb);
    assert_int_equal(sb.state, UBJ_STATE_CLEAN | UBJ_STATE_ERRORS);
    ubj_bdev_destroy(d);
}

/* test_timer -- the background thread ticks and stops at once. */
static void test_timer(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs;
    assert_int_equal(ubj_format(d, NULL), 0);
    struct ubj_config c = { .commit_interval_ms = 5 };
    assert_int_equal(ubj_mount(d, &c, &fs), 0);
    assert_true(fs->timer_running);
    /* dirty the superblock; the timer's tick writes it back */
    struct ubj_handle *h;
    assert_int_equal(fs_start(fs, 1, &h), 0);
    fs->sb.write_time = 12345;
    assert_int_equal(fs_super_dirty(fs, h), 0);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    struct ubj_super sb;
    for (int i = 0; i < 400; i++) {
        t_read_sb(d, &sb);
        if (sb.write_time == 12345)
            break;
        t_sleep_ns(5000000);
    }
    assert_int_equal(sb.write_time, 12345);
    assert_int_equal(ubj_unmount(fs), 0);
    /* default 5 s interval: unmount does not wait for it */
    assert_int_equal(ubj_mount(d, NULL, &fs), 0);
    double t0 = t_secs();
    assert_int_equal(ubj_unmount(fs), 0);
    assert_true(t_secs() - t0 < 1.0);
    ubj_bdev_destroy(d);
}

/* tick_dirty_ns -- on a mount of mode none over an ssd:sata model (virtual
 * clock), dirty 64 blocks, tick with `flags`; the virtual ns it took. */
static uint64_t tick_dirty_ns(unsigned flags, int *rc, uint64_t *writes)
{
    struct ubj_bdev *ram = t_dev(MIB_BLOCKS * 16), *d;
    assert_int_equal(ubj_format(ram, NULL), 0);
    assert_int_equal(ubj_model_create("ssd", "sata", NULL, ram, &d), 0);
    struct ubj_fs *fs;
    struct ubj_config c = { .flags = UBJ_MOUNT_NO_TIMER };
    assert_int_equal(ubj_mount(d, &c, &fs), 0);
    static char buf[64 * 4096];
    memset(buf, 'w', sizeof buf);
    assert_int_equal(tpath_put(fs, "/f", buf, sizeof buf), 0);
    struct ubj_clock *clk = ubj_model_clock(d);
    struct ubj_bdev_stats b0, b1;
    ubj_bdev_stats_get(d, &b0);
    uint64_t t0 = ubj_clock_now(clk);
    *rc = ubj_tick_flags(fs, flags);
    uint64_t dt = ubj_clock_now(clk) - t0;
    ubj_bdev_stats_get(d, &b1);
    *writes = (b1.bytes_written - b0.bytes_written) / 4096;
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
    return dt;
}

/* test_tick_flags -- a background tick writes the same blocks home but
 * charges its caller no device time; a foreground one waits for them;
 * an unknown flag is refused */
static void test_tick_flags(void **state)
{
    (void)state;
    int rc;
    uint64_t wfg, wbg, w;
    uint64_t fg = tick_dirty_ns(0, &rc, &wfg);
    assert_int_equal(rc, 0);
    uint64_t bg = tick_dirty_ns(UBJ_TICK_BACKGROUND, &rc, &wbg);
    assert_int_equal(rc, 0);
    print_message("tick: foreground %llu ns, background %llu ns, %llu / %llu blocks\n",
                  (unsigned long long)fg, (unsigned long long)bg,
                  (unsigned long long)wfg, (unsigned long long)wbg);
    assert_true(wfg >= 64 && wbg == wfg);   /* the same write-back */
    assert_true(fg > 0);
    assert_int_equal(bg, 0);
    (void)tick_dirty_ns(0x80u, &rc, &w);
    assert_int_equal(rc, -EINVAL);
}

/* test_sync_stats -- sync flushes; counters count since mount. */
static void test_sync_stats(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs;
    struct ubj_fs_stats st;
    assert_int_equal(ubj_format(d, NULL), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    ubj_fs_stats_get(fs, &st);
    uint64_t flushes = st.dev_flushes, commits = st.commits;
    struct ubj_handle *h;
    assert_int_equal(fs_start(fs, 1, &h), 0);
    assert_int_equal(fs_super_dirty(fs, h), 0);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    assert_int_equal(ubj_sync(fs), 0);
    ubj_fs_stats_get(fs, &st);
    assert_true(st.dev_flushes > flushes);
    assert_true(st.commits > commits);
    assert_true(st.bytes_metadata >= 4096);
    assert_true(st.cache_hits + st.cache_misses > 0);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* t_orphan -- a new inode of `mode`, open and unlinked: on the orphan
 * list.  Regular files get `nblk` data blocks. */
static ubj_ino_t t_orphan(struct ubj_fs *fs, uint32_t mode, uint32_t nblk)
{
    struct ubj_handle *h;
    struct fs_iref r;
    assert_int_equal(fs_start(fs, 16, &h), 0);
    assert_int_equal(fs_inode_new(fs, h, UBJ_ROOT_INO, mode, NULL, &r), 0);
    ubj_ino_t ino = r.ino;
    uint32_t done = 0;
    while (done < nblk) {
        uint64_t pblk;
        uint32_t got;
        bool fresh;
        assert_int_equal(fs_ext_alloc(fs, h, &r, done, nblk - done, &pblk,
                                      &got, &fresh), 0);
        done += got;
    }
    assert_int_equal(fs_iwrite(fs, h, &r), 0);
    r.ip->size = (uint64_t)nblk * 4096;
    assert_int_equal(fs_idirty(fs, h, &r), 0);
    fs_open_inc(fs, ino);
    assert_int_equal(fs_inode_drop_link(fs, h, &r), 0);
    assert_int_equal(r.ip->nlink, 0);
    fs_iput(fs, &r);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    return ino;
}

/* t_snapshot -- a copy of the device (what a crash would leave). */
static struct ubj_bdev *t_snapshot(struct ubj_bdev *d)
{
    struct ubj_bdev *c = t_dev(d->nblocks);
    uint8_t *buf = malloc(64 * 4096);
    for (uint64_t b = 0; b < d->nblocks; b += 64) {
        uint32_t n = d->nblocks - b < 64 ? (uint32_t)(d->nblocks - b) : 64;
        assert_int_equal(ubj_bdev_read(d, b, n, buf), 0);
        assert_int_equal(ubj_bdev_write(c, b, n, buf), 0);
    }
    free(buf);
    return c;
}

/* test_orphans -- open unlinked inodes survive until unmount or, after a
 * crash, until the next mount frees them. */
static void test_orphans(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(4096);
    struct ubj_fs *fs;
    struct ubj_statfs s0, s1;
    struct ubj_stat st;
    assert_int_equal(ubj_format(d, NULL), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(ubj_statfs_get(fs, &s0), 0);
    ubj_ino_t a = t_orphan(fs, S_IFREG | 0644, 300);
    ubj_ino_t b = t_orphan(fs, S_IFIFO | 0600, 0);
    ubj_ino_t c = t_orphan(fs, S_IFREG | 0600, 5);
    assert_int_equal(ubj_statfs_get(fs, &s1), 0);
    assert_true(s1.bfree <= s0.bfree - 305);
    assert_int_equal(s1.ffree, s0.ffree - 3);
    assert_int_equal(fs->sb.orphan_head, c);
    assert_int_equal(ubj_getattr(fs, a, &st), 0);
    assert_int_equal(st.nlink, 0);
    assert_int_equal(st.size, 300 * 4096);
    assert_true(st.blocks >= 300 * 8);
    assert_int_equal(ubj_sync(fs), 0);

    /* crash now: the snapshot has the three orphans */
    struct ubj_bdev *crash = t_snapshot(d);

    /* take the middle one off the list and free it, as a release would */
    struct ubj_handle *h;
    assert_int_equal(fs_start(fs, 16, &h), 0);
    assert_int_equal(fs_open_dec(fs, b), 0);
    assert_int_equal(fs_open_dec(fs, b), -EINVAL);
    assert_int_equal(fs_orphan_del(fs, h, b), 0);
    assert_int_equal(fs_orphan_del(fs, h, b), 0);   /* not listed: no-op */
    assert_int_equal(fs_inode_destroy(fs, h, b), 0);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    assert_int_equal(ubj_getattr(fs, b, &st), -ENOENT);
    assert_int_equal(fs->sb.orphan_head, c);
    struct fs_iref r;
    assert_int_equal(fs_iget(fs, c, &r), 0);
    assert_int_equal(r.ip->orphan_next, a);
    fs_iput(fs, &r);
    assert_int_equal(fs_open_count(fs, a), 1);
    /* unmount closes a and c and frees them */
    assert_int_equal(ubj_unmount(fs), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(ubj_statfs_get(fs, &s1), 0);
    assert_int_equal(s1.bfree, s0.bfree);
    assert_int_equal(s1.ffree, s0.ffree);
    assert_int_equal(fs->sb.orphan_head, 0);
    assert_int_equal(ubj_getattr(fs, a, &st), -ENOENT);
    assert_int_equal(ubj_unmount(fs), 0);

    /* the crashed image: state MOUNTED, three orphans, freed by mount */
    struct ubj_super sb;
    t_read_sb(crash, &sb);
    assert_int_equal(sb.state, UBJ_STATE_MOUNTED);
    assert_int_equal(sb.orphan_head, c);
    assert_int_equal(ubj_mount(crash, &t_cfg, &fs), 0);
    assert_int_equal(fs->sb.orphan_head, 0);
    assert_int_equal(ubj_statfs_get(fs, &s1), 0);
    assert_int_equal(s1.bfree, s0.bfree);
    assert_int_equal(s1.ffree, s0.ffree);
    assert_int_equal(ubj_getattr(fs, a, &st), -ENOENT);
    assert_int_equal(ubj_getattr(fs, b, &st), -ENOENT);
    assert_int_equal(ubj_getattr(fs, c, &st), -ENOENT);
    assert_int_equal(ubj_unmount(fs), 0);
    t_read_sb(crash, &sb);
    assert_int_equal(sb.orphan_head, 0);
    assert_int_equal(ubj_test_check(crash, 0, NULL), UBJ_CHECK_CLEAN);
    assert_int_equal(ubj_test_check(d, 0, NULL), UBJ_CHECK_CLEAN);
    ubj_bdev_destroy(crash);
    ubj_bdev_destroy(d);
}

/* test_orphan_loop -- a looping orphan list: no hang; nothing is freed and
 * the mount is read-only (docs/GUARANTEES.md). */
static void test_orphan_loop(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs;
    assert_int_equal(ubj_format(d, NULL), 0);
    t_unchecked_begin();    /* this mount makes the loop: damage, no event's */
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    t_unchecked_end();
    ubj_ino_t a = t_orphan(fs, S_IFIFO | 0600, 0);
    ubj_ino_t b = t_orphan(fs, S_IFIFO | 0600, 0);
    struct ubj_handle *h;
    struct fs_iref r;
    assert_int_equal(fs_start(fs, 4, &h), 0);
    assert_int_equal(fs_iget(fs, a, &r), 0);    /* b -> a -> a -> ... */
    assert_int_equal(fs_iwrite(fs, h, &r), 0);
    assert_int_equal(fs->sb.orphan_head, b);
    r.ip->orphan_next = a;
    assert_int_equal(fs_idirty(fs, h, &r), 0);
    fs_iput(fs, &r);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    assert_int_equal(ubj_sync(fs), 0);
    struct ubj_bdev *crash = t_snapshot(d);
    /* unmount: the loop is caught and reported */
    assert_int_equal(ubj_unmount(fs), -EUCLEAN);
    assert_int_equal(ubj_mount(crash, &t_cfg, &fs), 0);
    assert_non_null(strstr(ubj_errormsg(), "orphan list"));
    assert_int_equal(fs->error, -EUCLEAN);
    assert_int_equal(fs->sb.orphan_head, b);
    assert_int_equal(fs_start(fs, 1, &h), -EROFS);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(crash);
    ubj_bdev_destroy(d);
}

/* test_inode_new -- fields of new inodes, setgid inheritance, drop_link. */
static void test_inode_new(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(MIB_BLOCKS);
    struct ubj_fs *fs;
    struct ubj_handle *h;
    struct fs_iref r, p;
    struct ubj_stat st;
    struct ubj_cred cred = { 1000, 100 };
    assert_int_equal(ubj_format(d, NULL), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(fs_start(fs, 16, &h), 0);
    assert_int_equal(fs_inode_new(fs, h, 1, S_IFREG | 0640, &cred, &r), 0);
    assert_int_equal(r.ino, 2);
    assert_int_equal(r.ip->mode, S_IFREG | 0640);
    assert_int_equal(r.ip->uid, 1000);
    assert_int_equal(r.ip->gid, 100);
    assert_int_equal(r.ip->nlink, 1);
    assert_true(r.ip->flags & UBJ_IFL_EXTTREE);
    assert_int_equal(r.ip->crtime, r.ip->ctime);
    fs_iput(fs, &r);
    assert_int_equal(fs_inode_new(fs, h, 1, S_IFREG | 0640, &cred, &r), 0);
    uint32_t gen2 = r.ip->generation;
    fs_iput(fs, &r);
    assert_int_equal(fs_iget(fs, 2, &r), 0);
    assert_int_not_equal(r.ip->generation, gen2);
    fs_iput(fs, &r);
    /* parent with setgid */
    assert_int_equal(fs_iget(fs, 1, &p), 0);
    assert_int_equal(fs_iwrite(fs, h, &p), 0);
    p.ip->mode |= S_ISGID;
    p.ip->gid = 55;
    assert_int_equal(fs_idirty(fs, h, &p), 0);
    fs_iput(fs, &p);
    assert_int_equal(fs_inode_new(fs, h, 1, S_IFDIR | 0755, &cred, &r), 0);
    assert_int_equal(r.ip->gid, 55);
    assert_int_equal(r.ip->mode, S_IFDIR | S_ISGID | 0755);
    fs_iput(fs, &r);
    assert_int_equal(fs_inode_new(fs, h, 1, S_IFIFO | 0600, NULL, &r), 0);
    assert_int_equal(r.ip->gid, 55);
    assert_int_equal(r.ip->uid, 0);
    assert_int_equal(r.ip->mode, S_IFIFO | 0600);
    ubj_ino_t fifo = r.ino;
    /* two links: dropping one keeps it */
    assert_int_equal(fs_iwrite(fs, h, &r), 0);
    r.ip->nlink = 2;     /* with the event the file system gives it */
    assert_int_equal(fs_ievent(h, &r, UBJ_EV_LINK_COUNT, &r.ip->nlink,
                               sizeof r.ip->nlink, 2), 0);
    assert_int_equal(fs_idirty(fs, h, &r), 0);
    assert_int_equal(fs_inode_drop_link(fs, h, &r), 0);
    assert_int_equal(r.ip->nlink, 1);
    assert_int_equal(fs_inode_drop_link(fs, h, &r), 0);
    fs_iput(fs, &r);
    assert_int_equal(fs_inode_new(fs, h, 1, 0644, NULL, &r), -EINVAL);
    assert_int_equal(fs_stop(fs, h, 0), 0);
    assert_int_equal(ubj_getattr(fs, fifo, &st), -ENOENT);
    assert_int_equal(ubj_getattr(fs, 2, &st), 0);
    assert_int_equal(st.uid, 1000);
    struct stat ps;
    ubj_stat_to_posix(&st, &ps);
    assert_int_equal(ps.st_ino, 2);
    assert_int_equal(ps.st_mode, S_IFREG | 0640);
    assert_int_equal(ps.st_uid, 1000);
    assert_int_equal(ps.st_blksize, 4096);
    assert_int_equal(ps.st_mtim.tv_nsec, st.mtime.tv_nsec);
    /* the open table */
    fs_open_inc(fs, 7);
    fs_open_inc(fs, 7);
    fs_open_inc(fs, 7 + 256);
    assert_int_equal(fs_open_count(fs, 7), 2);
    assert_int_equal(fs_open_count(fs, 8), 0);
    assert_int_equal(fs_open_dec(fs, 7), 1);
    assert_int_equal(fs_open_dec(fs, 7), 0);
    assert_int_equal(fs_open_dec(fs, 7), -EINVAL);
    assert_int_equal(fs_open_count(fs, 7 + 256), 1);
    assert_int_equal(fs_open_dec(fs, 7 + 256), 0);
    assert_int_equal(ubj_unmount(fs), 0);
    assert_int_equal(ubj_mount(d, &t_cfg, &fs), 0);
    assert_int_equal(ubj_getattr(fs, 2, &st), 0);
    assert_int_equal(st.gid, 100);
    assert_int_equal(ubj_unmount(fs), 0);
    ubj_bdev_destroy(d);
}

/* test_seal_verify -- seal/verify agree; each header field is checked. */
static void test_seal_verify(void **state)
{
    (void)state;
    uint8_t blk[4096];
    for (int i = 0; i < 4096; i++)
        blk[i] = (uint8_t)(i * 7);
    fs_block_seal(1234, blk, UBJ_MAGIC_DIR, 99);
    assert_int_equal(fs_block_verify(1234, blk, UBJ_MAGIC_DIR, 99), 0);
    assert_int_equal(fs_block_verify(1235, blk, UBJ_MAGIC_DIR, 99), -EUCLEAN);
    assert_int_equal(fs_block_verify(1234, blk, UBJ_MAGIC_EXTENT, 99), -EUCLEAN);
    assert_int_equal(fs_block_verify(1234, blk, UBJ_MAGIC_DIR, 98), -EUCLEAN);
    blk[4095] ^= 1;
    assert_int_equal(fs_block_verify(1234, blk, UBJ_MAGIC_DIR, 99), -EUCLEAN);
    blk[4095] ^= 1;
    /* the crc is that of the block with the crc field zero */
    struct ubj_blkhdr *hd = (struct ubj_blkhdr *)blk;
    uint32_t crc = hd->crc;
    hd->crc = 0;
    assert_int_equal(ubj_crc32c(1234, blk, 4096), crc);
}

/* test_fuzz_super -- random values in random superblock fields (resealed,
 * so the checksum passes): mount never crashes; whatever it accepts
 * unmounts. */
static void test_fuzz_super(void **state)
{
    (void)state;
    struct ubj_bdev *d = t_dev(2048);
    struct ubj_super good, sb;
    struct tprng r;
    uint8_t *img = malloc(2048 * 4096);
    tprng_seed(&r, tprng_env_seed("UBJ_SEED", 42));
    assert_int_equal(ubj_format(d, NULL), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 2048, img), 0);
    memcpy(&good, img, sizeof good);
    int accepted = 0;
    for (int i = 0; i < 1500; i++) {
        sb = good;
        int nfields = 1 + (int)tprng_below(&r, 3);
        for (int k = 0; k < nfields; k++) {
            size_t off = 16 + 8 * tprng_below(&r, (256 - 16) / 8);
            uint64_t v = tprng_next(&r);
            switch (tprng_below(&r, 4)) {
            case 0: v &= 0xff; break;
            case 1: v %= 4096; break;
            case 2: v = *(uint64_t *)((uint8_t *)&sb + off) + (v % 5) - 2; break;
            default: break;
            }
            memcpy((uint8_t *)&sb + off, &v, 8);
        }
        t_write_sb(d, &sb, false);
        struct ubj_fs *fs = NULL;
        int rc = ubj_mount(d, &t_cfg, &fs);
        if (rc == 0) {
            accepted++;
            (void)ubj_unmount(fs);
        } else {
            assert_true(rc == -EUCLEAN || rc == -EFBIG || rc == -EINVAL);
            assert_true(strlen(ubj_errormsg()) > 0);
            assert_null(fs);
        }
        assert_int_equal(ubj_bdev_write(d, 0, 2048, img), 0);
    }
    printf("# fuzz: %d of 1500 corrupted superblocks mounted\n", accepted);
    free(img);
    ubj_bdev_destroy(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seal_verify),
        cmocka_unit_test(test_sizes_small),
        cmocka_unit_test(test_size_1tib),
        cmocka_unit_test(test_format_zeroes_itable),
        cmocka_unit_test(test_format_errors),
        cmocka_unit_test(test_corrupt_super),
        cmocka_unit_test(test_fuzz_super),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_mount_config),
        cmocka_unit_test(test_mount_state),
        cmocka_unit_test(test_corrupt_blocks),
        cmocka_unit_test(test_timer),
        cmocka_unit_test(test_tick_flags),
        cmocka_unit_test(test_sync_stats),
        cmocka_unit_test(test_inode_new),
        cmocka_unit_test(test_orphans),
        cmocka_unit_test(test_orphan_loop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
