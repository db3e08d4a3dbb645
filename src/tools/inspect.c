/*
 * inspect.c -- `ubjfs inspect`: the superblock, the layout, allocation
 * counts and state of an image, read raw from the device (block 0 cast to
 * struct ubj_super of src/fs/format.h; the bitmaps counted bit by bit),
 * then a read-only mount attempt whose outcome (statfs or the error) is
 * reported too.
 *
 * Works on images that do not mount: every field is bounds-checked before
 * it is used to address anything, a bad superblock is reported in one
 * line (exit 1) and whatever can be read is still printed.  Never writes:
 * the device is opened read-only.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs/format.h"
#include "txn/registry.h"    /* mode code -> name */
#include "tools.h"

struct inspect_ctx {
    const char *image;
    struct ubj_bdev *dev;
    struct ubj_super *sb;
    unsigned char *blk;          /* one block of scratch */
    int problems;                /* problems found (exit 1 if any) */
};

/* inspect_usage -- the --help text. */
static void inspect_usage(void)
{
    printf("Usage: %s [--nvm PATH] IMAGE\n"
           "Print the superblock of a ubjfs image, its layout (where the bitmaps,\n"
           "inode table and data are), used and free blocks and inodes (from the\n"
           "superblock counters and counted in the bitmaps), its state, and\n"
           "whether it mounts.  Reads only; works on images that do not mount.\n\n"
           "Options:\n"
           TOOLS_NVM_HELP
           "      --help  print this help\n\n"
           "Exit status: 0 the image looks sound, 1 a problem was found (each is\n"
           "reported on one line) or the image cannot be read, 2 usage error.\n",
           tools_prog);
}

/* inspect_problem -- report one problem line "PROG: IMAGE: ...". */
static void inspect_problem(struct inspect_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void inspect_problem(struct inspect_ctx *c, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tools_err("%s: %s", c->image, line);
    c->problems++;
}

/* inspect_time -- seconds since the epoch as text, "never" for 0. */
static void inspect_time(int64_t secs, char *buf, size_t len)
{
    if (secs == 0) {
        snprintf(buf, len, "never");
        return;
    }
    struct timespec ts = { .tv_sec = (time_t)secs, .tv_nsec = 0 };
    tools_fmt_time(&ts, false, buf, len);
}

/* inspect_state -- the state flags as words. */
static void inspect_state(uint32_t s, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s(0x%x)",
             (s & UBJ_STATE_CLEAN) ? "clean " : "",
             (s & UBJ_STATE_MOUNTED) ? "mounted-or-not-cleanly-unmounted " : "",
             (s & UBJ_STATE_ERRORS) ? "errors " : "",
             (s & ~(UBJ_STATE_CLEAN | UBJ_STATE_MOUNTED | UBJ_STATE_ERRORS)) ? "unknown-bits " : "",
             s);
}

/* inspect_fields -- print the superblock's fields. */
static void inspect_fields(const struct ubj_super *sb)
{
    char uu[37], t[128], label[33];
    tools_uuid_string(sb->uuid, uu);
    memcpy(label, sb->label, 32);
    label[32] = '\0';
    for (char *p = label; *p; p++)
        if ((unsigned char)*p < 32 || (unsigned char)*p > 126)
            *p = '?';
    printf("superblock:\n");
    printf("  magic:          0x%08x\n", sb->hdr.magic);
    printf("  checksum:       0x%08x\n", sb->hdr.crc);
    printf("  version:        %u\n", sb->version);
    printf("  block size:     %u\n", sb->block_size);
    printf("  blocks:         %llu\n", (unsigned long long)sb->nblocks);
    printf("  inodes:         %llu\n", (unsigned long long)sb->ninodes);
    printf("  uuid:           %s\n", uu);
    printf("  label:          %s\n", label[0] ? label : "(none)");
    printf("  features:       compat 0x%llx incompat 0x%llx ro_compat 0x%llx\n",
           (unsigned long long)sb->feat_compat, (unsigned long long)sb->feat_incompat,
           (unsigned long long)sb->feat_ro_compat);
    const struct ubj_mode_entry *me = ubj_registry_by_code(sb->mode);
    printf("  mode:           %s (%u)\n", me ? me->info.name : "unknown", sb->mode);
    inspect_state(sb->state, t, sizeof t);
    printf("  state:          %s\n", t);
    inspect_time(sb->mkfs_time, t, sizeof t);
    printf("  created:        %s\n", t);
    inspect_time(sb->mount_time, t, sizeof t);
    printf("  last mounted:   %s\n", t);
    inspect_time(sb->write_time, t, sizeof t);
    printf("  last written:   %s\n", t);
    printf("  mount count:    %u\n", sb->mount_count);
    printf("  hash seed:      0x%08x\n", sb->hash_seed);
    printf("  root inode:     %llu\n", (unsigned long long)sb->root_ino);
    printf("  orphan list:    %llu%s\n", (unsigned long long)sb->orphan_head,
           sb->orphan_head ? "" : " (empty)");
}

/* inspect_region -- one layout row; checks it lies inside the image. */
static bool inspect_region(struct inspect_ctx *c, const char *name, uint64_t start,
                           uint64_t len)
{
    printf("  %-14s %12llu %12llu\n", name, (unsigned long long)start,
           (unsigned long long)len);
    uint64_t n = c->sb->nblocks;
    if (start > n || len > n - start) {
        inspect_problem(c, "%s [%llu, +%llu) lies outside the image", name,
                        (unsigned long long)start, (unsigned long long)len);
        return false;
    }
    return true;
}

/* inspect_geometry -- the layout table and its sanity.  true if sane. */
static bool inspect_geometry(struct inspect_ctx *c)
{
    const struct ubj_super *sb = c->sb;
    bool ok = true;
    if (sb->version != UBJ_FORMAT_VERSION)
        inspect_problem(c, "unknown version %u (this tool knows %u)",
                        sb->version, UBJ_FORMAT_VERSION), ok = false;
    if (sb->block_size != UBJ_BS)
        inspect_problem(c, "block size %u (expected %u)", sb->block_size,
                        UBJ_BS), ok = false;
    if (sb->nblocks > c->dev->nblocks)
        inspect_problem(c, "truncated image: %llu blocks recorded, the device "
                        "has %llu", (unsigned long long)sb->nblocks,
                        (unsigned long long)c->dev->nblocks), ok = false;
    printf("layout:           %12s %12s\n", "first block", "blocks");
    ok &= inspect_region(c, "superblock", 0, 1);
    ok &= inspect_region(c, "block bitmap", sb->bb_start, sb->bb_blocks);
    ok &= inspect_region(c, "inode bitmap", sb->ib_start, sb->ib_blocks);
    ok &= inspect_region(c, "inode table", sb->it_start, sb->it_blocks);
    if (sb->journal_blocks != 0)
        ok &= inspect_region(c, "journal", sb->journal_start, sb->journal_blocks);
    ok &= inspect_region(c, "data", sb->data_start,
                         sb->nblocks > sb->data_start ? sb->nblocks - sb->data_start : 0);
    uint64_t bits = UBJ_BITMAP_BITS;
    if (sb->bb_blocks < (sb->nblocks + bits - 1) / bits)
        inspect_problem(c, "block bitmap too small: %llu blocks cannot map %llu blocks",
                        (unsigned long long)sb->bb_blocks, (unsigned long long)sb->nblocks), ok = false;
    if (sb->ib_blocks < (sb->ninodes + bits - 1) / bits)
        inspect_problem(c, "inode bitmap too small: %llu blocks cannot map %llu inodes",
                        (unsigned long long)sb->ib_blocks, (unsigned long long)sb->ninodes), ok = false;
    return ok;
}

/* inspect_popcount -- set bits among the first nbits of p. */
static uint64_t inspect_popcount(const unsigned char *p, uint64_t nbits)
{
    uint64_t n = 0, whole = nbits / 8;
    for (uint64_t i = 0; i < whole; i++)
        n += (uint64_t)__builtin_popcount(p[i]);
    if (nbits % 8)
        n += (uint64_t)__builtin_popcount(p[whole] & ((1u << (nbits % 8)) - 1));
    return n;
}

/* inspect_bitmap -- count set bits of a bitmap of `nbits` bits kept in
 * `blocks` blocks from `start`.  -1 if it could not be read. */
static int64_t inspect_bitmap(struct inspect_ctx *c, const char *what, uint64_t start,
                              uint64_t blocks, uint64_t nbits, uint32_t magic)
{
    uint64_t used = 0, bad = 0, lazy = 0;
    for (uint64_t i = 0; i < blocks && i * UBJ_BITMAP_BITS < nbits; i++) {
        int rc = ubj_bdev_read(c->dev, start + i, 1, c->blk);
        if (rc < 0) {
            tools_err("%s: %s block %llu: %s", c->image, what,
                      (unsigned long long)(start + i), tools_libmsg(rc));
            c->problems++;
            return -1;
        }
        struct ubj_blkhdr h;
        memcpy(&h, c->blk, sizeof h);
        uint64_t left = nbits - i * UBJ_BITMAP_BITS;
        uint64_t here = left < UBJ_BITMAP_BITS ? left : UBJ_BITMAP_BITS;
        if (h.magic == 0 && h.crc == 0 && h.blkno == 0)
            lazy++;                          /* never written: all free */
        else if (h.magic != magic || h.blkno != start + i)
            bad++;
        used += inspect_popcount(c->blk + sizeof h, here);
    }
    if (bad)
        inspect_problem(c, "%s: %llu block(s) with a wrong header (of %llu)", what,
                        (unsigned long long)bad, (unsigned long long)blocks);
    if (lazy)
        printf("  (%s: %llu never-written block(s), counted as free)\n", what,
               (unsigned long long)lazy);
    return (int64_t)used;
}

/* inspect_alloc -- used/free blocks and inodes: counters and bitmaps. */
static void inspect_alloc(struct inspect_ctx *c)
{
    const struct ubj_super *sb = c->sb;
    printf("allocation:       %12s %12s %12s\n", "total", "used", "free");
    int64_t bu = inspect_bitmap(c, "block bitmap", sb->bb_start, sb->bb_blocks,
                                sb->nblocks, UBJ_MAGIC_BBITMAP);
    int64_t iu = inspect_bitmap(c, "inode bitmap", sb->ib_start, sb->ib_blocks,
                                sb->ninodes, UBJ_MAGIC_IBITMAP);
    printf("  blocks (super)  %12llu %12s %12llu\n", (unsigned long long)sb->nblocks,
           "", (unsigned long long)sb->free_blocks);
    if (bu >= 0)
        printf("  blocks (bitmap) %12llu %12lld %12llu\n", (unsigned long long)sb->nblocks,
               (long long)bu, (unsigned long long)(sb->nblocks - (uint64_t)bu));
    printf("  inodes (super)  %12llu %12s %12llu\n", (unsigned long long)sb->ninodes,
           "", (unsigned long long)sb->free_inodes);
    if (iu >= 0)
        printf("  inodes (bitmap) %12llu %12lld %12llu\n", (unsigned long long)sb->ninodes,
               (long long)iu, (unsigned long long)(sb->ninodes - (uint64_t)iu));
}

/* inspect_mount -- try a read-only mount and report statfs or the error. */
static void inspect_mount(struct inspect_ctx *c)
{
    struct ubj_fs *fs;
    struct ubj_config cfg = { .flags = UBJ_MOUNT_RDONLY | UBJ_MOUNT_NO_TIMER };
    cfg.nvm_path = tools_nvm_path();      /* a mode-ubj image's region */
    int rc = ubj_mount(c->dev, &cfg, &fs);
    if (rc < 0) {
        printf("mount:            fails\n");
        tools_mount_error(c->image, c->dev, rc);
        c->problems++;
        return;
    }
    struct ubj_statfs sf;
    memset(&sf, 0, sizeof sf);
    ubj_statfs_get(fs, &sf);
    printf("mount:            ok (read-only): %llu of %llu data blocks free, "
           "%llu of %llu inodes free\n", (unsigned long long)sf.bfree,
           (unsigned long long)sf.blocks, (unsigned long long)sf.ffree,
           (unsigned long long)sf.files);
    rc = ubj_unmount(fs);
    if (rc < 0) {
        tools_err("%s: unmount: %s", c->image, tools_libmsg(rc));
        c->problems++;
    }
}

/* inspect_run -- everything after the device is open. */
static void inspect_run(struct inspect_ctx *c)
{
    char sz[32];
    uint64_t bytes = c->dev->nblocks * UBJ_BS;
    tools_fmt_size(bytes, sz, sizeof sz);
    printf("image:            %s (%s, %llu blocks of %u bytes)\n", c->image, sz,
           (unsigned long long)c->dev->nblocks, UBJ_BS);
    int rc = ubj_bdev_read(c->dev, 0, 1, c->sb);
    if (rc < 0) {
        tools_err("%s: reading the superblock: %s", c->image, tools_libmsg(rc));
        c->problems++;
        return;
    }
    if (c->sb->hdr.magic != UBJ_MAGIC_SUPER) {
        tools_err("%s: no ubjfs superblock in block 0 (magic 0x%08x, expected "
                  "0x%08x)", c->image, c->sb->hdr.magic, UBJ_MAGIC_SUPER);
        c->problems++;
        return;
    }
    inspect_fields(c->sb);
    if (c->sb->hdr.blkno != 0)
        inspect_problem(c, "block number %llu in the superblock header (expected 0)",
                        (unsigned long long)c->sb->hdr.blkno);
    if (inspect_geometry(c))
        inspect_alloc(c);
    else
        printf("allocation:       not counted (the layout is not sound)\n");
    if (tools_image_served(c->image))   /* its cache may be ahead of this */
        printf("mount:            in use: a mount daemon serves this image (what "
               "is shown is the image as last written; the mounted file system "
               "may be ahead of it)\n");
    else
        inspect_mount(c);
}

/* tools_inspect_main -- `ubjfs inspect`. */
int tools_inspect_main(int argc, char **argv)
{
    static const struct option lo[] = {
        TOOLS_IMAGE_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    int o, rc;
    optind = 0;
    while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1)
        if ((rc = tools_image_opt(o, optarg, inspect_usage)) >= 0)
            return rc;
    if (optind >= argc)
        return tools_usage_err("missing IMAGE");
    if (optind + 1 < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind + 1]);
    struct inspect_ctx c = { .image = argv[optind] };
    rc = ubj_bdev_file_open(c.image, UBJ_BDEV_RDONLY, 0, &c.dev);
    if (rc < 0) {
        tools_err("%s", tools_libmsg(rc));
        return TOOLS_EXIT_ERR;
    }
    c.sb = malloc(sizeof *c.sb);
    c.blk = malloc(UBJ_BS);
    if (c.sb == NULL || c.blk == NULL) {
        tools_err("out of memory");
        c.problems++;
    } else {
        inspect_run(&c);
    }
    fflush(stdout);
    free(c.sb);
    free(c.blk);
    ubj_bdev_destroy(c.dev);
    return c.problems ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}
