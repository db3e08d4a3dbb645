/*
 * super.c -- format (mkfs), mount, unmount, sync, statfs and statistics;
 * the superblock in memory and on disk; the background commit timer.  The
 * block and handle plumbing every operation uses (checksums, metadata
 * buffers, fs_start/fs_stop) is meta.c's.
 *
 * Invariants:
 *  - fs->sb is the authoritative superblock while mounted [fs->lock]; block
 *    0's cache buffer receives a copy through fs_super_dirty() whenever a
 *    field changes, and the cache seals (crc) the snapshot it writes.
 *  - ubj_format writes straight to the device, never through a cache, and
 *    writes the superblock last (after zapping the old one first), so a
 *    half-formatted device never mounts.
 *  - Mount trusts nothing in the superblock before checking it: every
 *    region is bounds-checked before any arithmetic uses it.
 *  - The timer thread takes fs->lock for each tick; unmount wakes it
 *    through timer_cv and joins it before tearing anything down.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "fs/fs.h"
#include "txn/registry.h"    /* mode names <-> on-disk codes */

#define SUPER_MIN_BLOCKS 256u
#define SUPER_MAX_BLOCKS (1ULL << 40)
#define SUPER_BATCH 256u                 /* blocks per device request */
#define SUPER_BYTES_PER_INODE 16384u
#define SUPER_MIN_INODES 64u
#define SUPER_CACHE_DEFAULT 16384u
#define SUPER_CACHE_MIN 64u
#define SUPER_COMMIT_MS_DEFAULT 5000u
#define SUPER_INCOMPAT_KNOWN 0ULL        /* no incompatible features in v1 */
#define SUPER_RO_COMPAT_KNOWN 0ULL
#define SUPER_STATE_KNOWN (UBJ_STATE_CLEAN | UBJ_STATE_MOUNTED | UBJ_STATE_ERRORS)
#define SUPER_CREDITS 4u                 /* superblock + slack */

/* super_mode_by_name -- the recorded code of mode `name`; -1 if unknown
 * (the mode registry, src/txn/registry.c). */
static int64_t super_mode_by_name(const char *name)
{
    const struct ubj_mode_entry *e = ubj_registry_by_name(name);
    return e ? (int64_t)e->code : -1;
}

/* super_mode_by_fmt -- the name of recorded mode `fmt`; NULL if unknown. */
static const char *super_mode_by_fmt(uint32_t fmt)
{
    const struct ubj_mode_entry *e = ubj_registry_by_code(fmt);
    return e ? e->info.name : NULL;
}

/* super_div_up -- ceil(a / b) without overflow (b > 0). */
static uint64_t super_div_up(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* super_random -- fill buf from getrandom(2); falls back to a clock mix. */
static void super_random(void *buf, size_t len)
{
    uint8_t *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = getrandom(p + done, len - done, 0);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    if (done == len)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
                 ((uint64_t)getpid() << 16);
    for (; done < len; done++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        p[done] = (uint8_t)(x >> 24);
    }
}

/* ---- format ------------------------------------------------------------- */

/* Geometry computed by format. */
struct super_layout {
    uint64_t nblocks, ninodes;
    uint64_t bb_blocks, ib_blocks, it_start, it_blocks, data_start;
    uint64_t journal_blocks;     /* after the inode table; 0: none */
};

/* super_layout_compute -- the regions of an image; -ENOSPC if none fit. */
static int super_layout_compute(uint64_t nblocks, uint64_t inodes,
                                struct super_layout *l)
{
    uint64_t n = inodes ? inodes : nblocks * UBJ_BS / SUPER_BYTES_PER_INODE;
    if (n < SUPER_MIN_INODES)
        n = SUPER_MIN_INODES;
    if (n / UBJ_INODES_PER_BLOCK >= nblocks)
        return ubj_set_error(-ENOSPC, "%llu inodes do not fit in %llu blocks",
                             (unsigned long long)n, (unsigned long long)nblocks);
    n = super_div_up(n, UBJ_INODES_PER_BLOCK) * UBJ_INODES_PER_BLOCK;
    l->nblocks = nblocks;
    l->ninodes = n;
    l->bb_blocks = super_div_up(nblocks, UBJ_BITMAP_BITS);
    l->ib_blocks = super_div_up(n, UBJ_BITMAP_BITS);
    l->it_start = 1 + l->bb_blocks + l->ib_blocks;
    l->it_blocks = n / UBJ_INODES_PER_BLOCK;
    l->data_start = l->it_start + l->it_blocks;
    if (l->data_start >= nblocks)   /* the root directory needs one block */
        return ubj_set_error(-ENOSPC, "the inode table (%llu inodes, %llu "
                             "blocks) leaves no data blocks in %llu",
                             (unsigned long long)n,
                             (unsigned long long)l->it_blocks,
                             (unsigned long long)nblocks);
    return 0;
}

/* super_bits_set -- set bits [from, to) of a bitmap (LSB first per byte). */
static void super_bits_set(uint8_t *map, uint64_t from, uint64_t to)
{
    while (from < to && (from & 7)) {
        map[from >> 3] |= (uint8_t)(1u << (from & 7));
        from++;
    }
    if (to - from >= 8 && from < to) {
        uint64_t bytes = (to - from) >> 3;
        memset(map + (from >> 3), 0xff, bytes);
        from += bytes << 3;
    }
    while (from < to) {
        map[from >> 3] |= (uint8_t)(1u << (from & 7));
        from++;
    }
}

/* super_write_bitmap -- write `count` sealed bitmap blocks at `start`
 * covering bits [0, count * BITS): bits < used_below and >= used_from set. */
static int super_write_bitmap(struct ubj_bdev *dev, uint32_t seed, uint8_t *buf,
                              uint64_t start, uint64_t count, uint32_t magic,
                              uint64_t used_below, uint64_t used_from)
{
    for (uint64_t i = 0; i < count; i += SUPER_BATCH) {
        uint32_t n = (uint32_t)(count - i < SUPER_BATCH ? count - i : SUPER_BATCH);
        memset(buf, 0, (size_t)n * UBJ_BS);
        for (uint32_t j = 0; j < n; j++) {
            uint8_t *blk = buf + (size_t)j * UBJ_BS;
            uint64_t base = (i + j) * UBJ_BITMAP_BITS, end = base + UBJ_BITMAP_BITS;
            uint8_t *map = blk + sizeof(struct ubj_blkhdr);
            if (used_below > base)
                super_bits_set(map, 0, (used_below < end ? used_below : end) - base);
            if (used_from < end)
                super_bits_set(map, (used_from > base ? used_from : base) - base,
                               UBJ_BITMAP_BITS);
            fs_block_seal(seed, blk, magic, start + i + j);
        }
        int rc = ubj_bdev_write(dev, start + i, n, buf);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* super_zero_range -- write zero blocks over [start, start + count). */
static int super_zero_range(struct ubj_bdev *dev, uint8_t *buf, uint64_t start,
                            uint64_t count)
{
    memset(buf, 0, (size_t)SUPER_BATCH * UBJ_BS);
    for (uint64_t i = 0; i < count; i += SUPER_BATCH) {
        uint32_t n = (uint32_t)(count - i < SUPER_BATCH ? count - i : SUPER_BATCH);
        int rc = ubj_bdev_write(dev, start + i, n, buf);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* super_root_inode -- initialise the root directory inode. */
static void super_root_inode(struct ubj_inode *ip, const struct super_layout *l,
                             const struct timespec *now, uint32_t generation)
{
    memset(ip, 0, sizeof *ip);
    ip->mode = S_IFDIR | 0755;
    ip->nlink = 2;
    ip->size = UBJ_BS;
    ip->blocks = 1;
    ip->atime = ip->mtime = ip->ctime = ip->crtime = now->tv_sec;
    ip->atime_ns = ip->mtime_ns = ip->ctime_ns = ip->crtime_ns =
        (uint32_t)now->tv_nsec;
    ip->generation = generation;
    ip->parent = UBJ_ROOT_INO;
    ip->i_data.dir.root = l->data_start;
    ip->i_data.dir.depth = 0;
    ip->i_data.dir.entries = 0;
    ip->i_data.dir.nodes = 1;
}

/* super_write_root -- the inode-table block of the root and its empty
 * directory leaf at data_start. */
static int super_write_root(struct ubj_bdev *dev, uint32_t seed, uint8_t *buf,
                            const struct super_layout *l,
                            const struct timespec *now)
{
    uint32_t gen;
    super_random(&gen, sizeof gen);
    memset(buf, 0, UBJ_BS);
    uint64_t blk = l->it_start + UBJ_ROOT_INO / UBJ_INODES_PER_BLOCK;
    struct ubj_inode *ip = (struct ubj_inode *)(buf + UBJ_INODE_SIZE *
                           (1 + UBJ_ROOT_INO % UBJ_INODES_PER_BLOCK));
    super_root_inode(ip, l, now, gen);
    fs_block_seal(seed, buf, UBJ_MAGIC_INODES, blk);
    int rc = ubj_bdev_write(dev, blk, 1, buf);
    if (rc < 0)
        return rc;
    memset(buf, 0, UBJ_BS);
    struct ubj_dir_node *dn = (struct ubj_dir_node *)buf;
    dn->nrec = 0;
    dn->level = 0;
    dn->used = 0;
    dn->owner = UBJ_ROOT_INO;
    fs_block_seal(seed, buf, UBJ_MAGIC_DIR, l->data_start);
    return ubj_bdev_write(dev, l->data_start, 1, buf);
}

/* super_fill -- the superblock of a new image. */
static void super_fill(struct ubj_super *sb, const struct super_layout *l,
                       const struct ubj_format_opts *o, uint32_t mode,
                       const struct timespec *now)
{
    static const uint8_t nouuid[16];
    memset(sb, 0, sizeof *sb);
    sb->version = UBJ_FORMAT_VERSION;
    sb->block_size = UBJ_BS;
    sb->nblocks = l->nblocks;
    sb->ninodes = l->ninodes;
    if (memcmp(o->uuid, nouuid, 16) != 0)
        memcpy(sb->uuid, o->uuid, 16);
    else
        uuid_generate_random(sb->uuid);   /* RFC 4122 version 4 (libuuid) */
    sb->bb_start = 1;
    sb->bb_blocks = l->bb_blocks;
    sb->ib_start = 1 + l->bb_blocks;
    sb->ib_blocks = l->ib_blocks;
    sb->it_start = l->it_start;
    sb->it_blocks = l->it_blocks;
    sb->data_start = l->data_start;
    if (l->journal_blocks) {
        sb->journal_start = l->it_start + l->it_blocks;
        sb->journal_blocks = l->journal_blocks;
    }
    sb->free_blocks = l->nblocks - l->data_start - 1;
    sb->free_inodes = l->ninodes - 2;
    sb->root_ino = UBJ_ROOT_INO;
    sb->mode = mode;
    sb->state = UBJ_STATE_CLEAN;
    sb->mkfs_time = now->tv_sec;
    sb->write_time = now->tv_sec;
    if (memcmp(o->uuid, nouuid, 16) != 0)   /* a given uuid: reproducible */
        sb->hash_seed = ubj_crc32c(0x75626a66u, o->uuid, 16);
    else
        super_random(&sb->hash_seed, sizeof sb->hash_seed);
    if (o->label)
        memcpy(sb->label, o->label, strlen(o->label));
}

/* super_format_check -- validate the device and options. */
static int super_format_check(struct ubj_bdev *dev, const struct ubj_format_opts *o,
                              int64_t *mode, const struct ubj_mode_ops **ops)
{
    if (!dev)
        return ubj_set_error(-EINVAL, "format: no device");
    if (dev->block_size != UBJ_BS)
        return ubj_set_error(-EINVAL, "format: device block size %u, need %u",
                             dev->block_size, UBJ_BS);
    if (dev->nblocks < SUPER_MIN_BLOCKS)
        return ubj_set_error(-EINVAL, "format: device of %llu blocks is "
                             "smaller than 1 MiB (%u blocks)",
                             (unsigned long long)dev->nblocks, SUPER_MIN_BLOCKS);
    if (dev->nblocks > SUPER_MAX_BLOCKS)
        return ubj_set_error(-EFBIG, "format: device of %llu blocks is larger "
                             "than 2^40 blocks", (unsigned long long)dev->nblocks);
    if (o->label && strlen(o->label) > 31)
        return ubj_set_error(-EINVAL, "format: label longer than 31 bytes");
    const char *name = o->mode ? o->mode : UBJ_MODE_NONE;
    *mode = super_mode_by_name(name);
    *ops = ubj_mode_find(name);
    if (*mode < 0 || !*ops)
        return ubj_set_error(-EINVAL, "format: unknown mode \"%s\"", name);
    if (o->flags & ~(UBJ_FORMAT_ZEROED | UBJ_FORMAT_JOURNAL_ASYNC))
        return ubj_set_error(-EINVAL, "format: unknown flags 0x%x", o->flags);
    return 0;
}

/* super_layout_area -- reserve the mode's format area (the journal's)
 * after the inode table (ubj_txn_format_reserve).  0, -EINVAL, -ENOSPC. */
static int super_layout_area(struct super_layout *l, const struct ubj_format_opts *o,
                             const struct ubj_mode_ops *ops)
{
    uint64_t jb = 0;
    int rc = ubj_txn_format_reserve(ops, l->nblocks, l->data_start,
                                    o->journal_blocks, &jb);
    if (rc < 0 || jb == 0)
        return rc;
    l->journal_blocks = jb;
    l->data_start += jb;
    return 0;
}

/* super_format_area -- an empty log in the format area sb names. */
static int super_format_area(struct ubj_bdev *dev, const struct ubj_format_opts *o,
                             const struct ubj_super *sb)
{
    struct ubj_mode_image img;
    fs_mode_image(sb, dev, false, &img);
    return ubj_txn_format_area(&img, (o->flags & UBJ_FORMAT_JOURNAL_ASYNC) != 0,
                               (o->flags & UBJ_FORMAT_ZEROED) != 0);
}

/* super_format_write -- write every region, then the superblock; flush. */
static int super_format_write(struct ubj_bdev *dev, const struct ubj_format_opts *o,
                              const struct super_layout *l, uint32_t mode,
                              uint8_t *buf)
{
    struct timespec now;
    struct ubj_super *sb = malloc(sizeof *sb);
    if (!sb)
        return ubj_set_error(-ENOMEM, "format: out of memory");
    ubj_now(&now);
    super_fill(sb, l, o, mode, &now);
    uint32_t seed = ubj_crc32c(~0u, sb->uuid, 16);
    int rc = super_zero_range(dev, buf, 0, 1);  /* zap any old superblock */
    if (rc == 0)
        rc = super_write_bitmap(dev, seed, buf, sb->bb_start, l->bb_blocks,
                                UBJ_MAGIC_BBITMAP, l->data_start + 1, l->nblocks);
    if (rc == 0)
        rc = super_write_bitmap(dev, seed, buf, sb->ib_start, l->ib_blocks,
                                UBJ_MAGIC_IBITMAP, UBJ_ROOT_INO + 1, l->ninodes);
    if (rc == 0 && !(o->flags & UBJ_FORMAT_ZEROED))
        rc = super_zero_range(dev, buf, l->it_start, l->it_blocks);
    if (rc == 0)
        rc = super_write_root(dev, seed, buf, l, &now);
    if (rc == 0 && l->journal_blocks)
        rc = super_format_area(dev, o, sb);
    if (rc == 0) {
        fs_block_seal(seed, sb, UBJ_MAGIC_SUPER, 0);
        rc = ubj_bdev_write(dev, 0, 1, sb);
    }
    if (rc == 0)
        rc = ubj_bdev_flush(dev);
    free(sb);
    if (rc < 0)
        return ubj_set_error(rc, "format: device error: %s", strerror(-rc));
    return 0;
}

/* ubj_format -- write an empty file system over the whole device. */
int ubj_format(struct ubj_bdev *dev, const struct ubj_format_opts *opts)
{
    static const struct ubj_format_opts defaults;
    const struct ubj_format_opts *o = opts ? opts : &defaults;
    int64_t mode = -1;
    const struct ubj_mode_ops *ops = NULL;
    struct super_layout l = { 0 };
    int rc = super_format_check(dev, o, &mode, &ops);
    if (rc < 0)
        return rc;
    rc = super_layout_compute(dev->nblocks, o->inodes, &l);
    if (rc == 0)
        rc = super_layout_area(&l, o, ops);
    if (rc < 0)
        return rc;
    uint8_t *buf = aligned_alloc(UBJ_BS, (size_t)SUPER_BATCH * UBJ_BS);
    if (!buf)
        return ubj_set_error(-ENOMEM, "format: out of memory");
    rc = super_format_write(dev, o, &l, (uint32_t)mode, buf);
    free(buf);
    if (rc == 0)
        ubj_clear_error();
    return rc;
}

/* ---- superblock validation ---------------------------------------------- */

/* super_bad -- a corrupt-superblock error naming the field. */
#define super_bad(...) ubj_set_error(-EUCLEAN, "superblock: " __VA_ARGS__)

/* super_check_header -- magic, checksum, number, version, block size. */
static int super_check_header(const struct ubj_super *sb)
{
    if (sb->hdr.magic != UBJ_MAGIC_SUPER)
        return super_bad("bad magic 0x%08x (not a ubjfs image)", sb->hdr.magic);
    uint32_t seed = ubj_crc32c(~0u, sb->uuid, 16);
    if (sb->hdr.crc != fs_block_crc(seed, sb))
        return super_bad("bad checksum");
    if (sb->hdr.blkno != 0)
        return super_bad("block number %llu, expected 0",
                         (unsigned long long)sb->hdr.blkno);
    if (sb->version != UBJ_FORMAT_VERSION)
        return super_bad("unsupported format version %u", sb->version);
    if (sb->block_size != UBJ_BS)
        return super_bad("block size %u, expected %u", sb->block_size, UBJ_BS);
    if (sb->feat_incompat & ~SUPER_INCOMPAT_KNOWN)
        return super_bad("unsupported incompatible features 0x%llx",
                         (unsigned long long)(sb->feat_incompat &
                                              ~SUPER_INCOMPAT_KNOWN));
    return 0;
}

/* super_check_region -- region [start, +len) must begin at `expect`. */
static int super_check_region(const char *what, uint64_t start, uint64_t len,
                              uint64_t expect, uint64_t expect_len)
{
    if (start != expect || len != expect_len)
        return super_bad("%s at %llu+%llu, expected %llu+%llu", what,
                         (unsigned long long)start, (unsigned long long)len,
                         (unsigned long long)expect,
                         (unsigned long long)expect_len);
    return 0;
}

/* super_check_geometry -- sizes and the order of every region. */
static int super_check_geometry(const struct ubj_super *sb, uint64_t dev_nblocks)
{
    if (sb->nblocks < SUPER_MIN_BLOCKS || sb->nblocks > SUPER_MAX_BLOCKS)
        return super_bad("block count %llu out of range",
                         (unsigned long long)sb->nblocks);
    if (sb->nblocks > dev_nblocks)
        return ubj_set_error(-EFBIG, "image has %llu blocks but the device "
                             "only %llu: truncated?",
                             (unsigned long long)sb->nblocks,
                             (unsigned long long)dev_nblocks);
    if (sb->ninodes < SUPER_MIN_INODES || sb->ninodes % UBJ_INODES_PER_BLOCK ||
        sb->ninodes / UBJ_INODES_PER_BLOCK >= sb->nblocks)
        return super_bad("inode count %llu invalid",
                         (unsigned long long)sb->ninodes);
    int rc = super_check_region("block bitmap", sb->bb_start, sb->bb_blocks, 1,
                                super_div_up(sb->nblocks, UBJ_BITMAP_BITS));
    if (rc == 0)
        rc = super_check_region("inode bitmap", sb->ib_start, sb->ib_blocks,
                                sb->bb_start + sb->bb_blocks,
                                super_div_up(sb->ninodes, UBJ_BITMAP_BITS));
    if (rc == 0)
        rc = super_check_region("inode table", sb->it_start, sb->it_blocks,
                                sb->ib_start + sb->ib_blocks,
                                sb->ninodes / UBJ_INODES_PER_BLOCK);
    if (rc < 0)
        return rc;
    uint64_t end = sb->it_start + sb->it_blocks;   /* no overflow: < 2^42 */
    if (end >= sb->nblocks)
        return super_bad("metadata ends at block %llu, beyond the image",
                         (unsigned long long)end);
    if (sb->journal_blocks || sb->journal_start) {
        if (sb->journal_start != end || sb->journal_blocks == 0 ||
            sb->journal_blocks >= sb->nblocks - end)
            return super_bad("journal at %llu+%llu out of place",
                             (unsigned long long)sb->journal_start,
                             (unsigned long long)sb->journal_blocks);
        end += sb->journal_blocks;
    }
    if (sb->data_start != end || sb->data_start >= sb->nblocks)
        return super_bad("data area starts at %llu, expected %llu",
                         (unsigned long long)sb->data_start,
                         (unsigned long long)end);
    return 0;
}

/* super_check_fields -- counts, root, orphan head, mode, state. */
static int super_check_fields(const struct ubj_super *sb)
{
    if (sb->free_blocks > sb->nblocks - sb->data_start)
        return super_bad("free block count %llu exceeds the data area",
                         (unsigned long long)sb->free_blocks);
    if (sb->free_inodes >= sb->ninodes - 1)
        return super_bad("free inode count %llu exceeds the inode count",
                         (unsigned long long)sb->free_inodes);
    if (sb->root_ino != UBJ_ROOT_INO)
        return super_bad("root inode %llu, expected %u",
                         (unsigned long long)sb->root_ino, UBJ_ROOT_INO);
    if (sb->orphan_head >= sb->ninodes || sb->orphan_head == UBJ_ROOT_INO)
        return super_bad("orphan list head %llu out of range",
                         (unsigned long long)sb->orphan_head);
    if (!super_mode_by_fmt(sb->mode))
        return super_bad("unknown consistency mode %u", sb->mode);
    if (sb->state & ~SUPER_STATE_KNOWN)
        return super_bad("unknown state 0x%x", sb->state);
    return 0;
}

/* super_validate -- every check of a superblock read from dev. */
static int super_validate(const struct ubj_super *sb, uint64_t dev_nblocks)
{
    int rc = super_check_header(sb);
    if (rc == 0)
        rc = super_check_geometry(sb, dev_nblocks);
    if (rc == 0)
        rc = super_check_fields(sb);
    return rc;
}

/* ---- timer ---------------------------------------------------------------- */

/* super_timer_main -- tick the mode every commit_interval_ms until stopping. */
static void *super_timer_main(void *arg)
{
    struct ubj_fs *fs = arg;
    pthread_mutex_lock(&fs->lock);
    while (!fs->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)fs->commit_interval_ms * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        int rc = 0;
        while (!fs->stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&fs->timer_cv, &fs->lock, &ts);
        if (!fs->stopping)   /* background work: nobody waits for its I/O */
            (void)ubj_txn_tick(&fs->txn, UBJ_TICK_BACKGROUND);
    }
    pthread_mutex_unlock(&fs->lock);
    return NULL;
}

/* super_timer_start -- start the background thread. */
static int super_timer_start(struct ubj_fs *fs)
{
    int rc = pthread_create(&fs->timer, NULL, super_timer_main, fs);
    if (rc != 0)
        return ubj_set_error(-rc, "mount: cannot start the timer thread: %s",
                             strerror(rc));
    fs->timer_running = true;
    return 0;
}

/* super_timer_stop -- wake the thread and join it. */
static void super_timer_stop(struct ubj_fs *fs)
{
    if (!fs->timer_running)
        return;
    pthread_mutex_lock(&fs->lock);
    fs->stopping = true;
    pthread_cond_broadcast(&fs->timer_cv);
    pthread_mutex_unlock(&fs->lock);
    pthread_join(fs->timer, NULL);
    fs->timer_running = false;
}

/* ---- mount and unmount -------------------------------------------------- */

/* super_ra_policy -- cfg->readahead as the read path of the mount
 * (*pol and *pages, when pol is not NULL): off-page (the default), off,
 * linux[:KIB], linux-2013[:KIB], adaptive[:KIB] or oracle (with
 * cfg->ra_future) (docs/READAHEAD.md).  0 or -EINVAL
 * with the message set. */
static int super_ra_policy(const struct ubj_config *cfg, enum fs_ra_policy *pol,
                           uint32_t *pages)
{
    enum fs_ra_policy p = FS_RA_OFF_PAGE;
    uint32_t n = 0;
    if (cfg && cfg->readahead) {
        int rc = fs_ra_policy_parse(cfg->readahead, &p, &n);
        if (rc < 0)
            return rc;
        if (p == FS_RA_ORACLE && cfg->ra_future == NULL)
            return ubj_set_error(-EINVAL, "read-ahead oracle: needs the future "
                                 "(ubj_config.ra_future: the benchmark's trace)");
    }
    if (pol) {
        *pol = p;
        *pages = n;
    }
    return 0;
}

/* super_fs_new -- allocate and initialise a struct ubj_fs. */
static int super_fs_new(struct ubj_bdev *dev, const struct ubj_config *cfg,
                        struct ubj_fs **out)
{
    struct ubj_fs *fs = calloc(1, sizeof *fs);
    if (!fs)
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&fs->timer_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&fs->lock, NULL);
    fs->dev = dev;
    fs->flags = cfg ? cfg->flags : 0;
    fs->commit_interval_ms = cfg && cfg->commit_interval_ms ?
                             cfg->commit_interval_ms : SUPER_COMMIT_MS_DEFAULT;
    (void)super_ra_policy(cfg, &fs->ra_policy, &fs->ra_pages);   /* checked already */
    fs->ra_future = cfg ? cfg->ra_future : NULL;
    fs->ra_future_ctx = cfg ? cfg->ra_future_ctx : NULL;
    fs->now = cfg ? cfg->now : NULL;
    fs->now_ctx = cfg ? cfg->now_ctx : NULL;
    uint32_t gen;
    super_random(&gen, sizeof gen);
    fs->generation = gen;
    *out = fs;
    return 0;
}

/* super_fs_free -- release what super_fs_new and mount set up. */
static void super_fs_free(struct ubj_fs *fs)
{
    for (unsigned i = 0; i < FS_OPEN_BUCKETS; i++) {
        while (fs->open[i]) {
            struct fs_open *o = fs->open[i];
            fs->open[i] = o->next;
            free(o);
        }
    }
    fs_alloc_fini(fs);
    if (fs->cache)
        ubj_cache_destroy(fs->cache);
    ubj_txn_release(&fs->txn);   /* after the cache: its memory */
    pthread_mutex_destroy(&fs->lock);
    pthread_cond_destroy(&fs->timer_cv);
    free(fs);
}

/* super_read_raw -- read and validate block 0 straight from the device. */
static int super_read_raw(struct ubj_bdev *dev, struct ubj_super *sb)
{
    void *buf = aligned_alloc(UBJ_BS, UBJ_BS);
    if (!buf)
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    int rc = ubj_bdev_read(dev, 0, 1, buf);
    if (rc == 0)
        memcpy(sb, buf, sizeof *sb);
    free(buf);
    if (rc < 0)
        return ubj_set_error(rc, "mount: cannot read the superblock: %s",
                             strerror(-rc));
    return super_validate(sb, dev->nblocks);
}

/* super_reload -- after the mode's recovery: the newest superblock,
 * through the cache, validated again.  ERRORS in the home copy read
 * before the recovery stays (an error recorded at run time goes home at
 * once, meta.c, and the log or region may hold an older copy: as ext4
 * keeps its error state across the journal's replay). */
static int super_reload(struct ubj_fs *fs)
{
    struct ubj_buf *b;
    int rc = fs_meta_read(fs, 0, UBJ_MAGIC_SUPER, &b);
    if (rc < 0)
        return rc;
    struct ubj_super *sb = (struct ubj_super *)b->data;
    rc = super_validate(sb, fs->dev->nblocks);
    if (rc == 0 && memcmp(sb->uuid, fs->sb.uuid, 16) != 0)
        rc = super_bad("uuid changed during recovery");
    uint32_t home_errors = fs->sb.state & UBJ_STATE_ERRORS;
    if (rc == 0)
        memcpy(&fs->sb, sb, sizeof fs->sb);
    fs->sb.state |= home_errors;   /* recorded at run time (meta.c): kept */
    ubj_cache_put(fs->cache, b);
    return rc;
}

/* super_check_root -- the root inode must be an in-use directory. */
static int super_check_root(struct ubj_fs *fs)
{
    struct fs_iref r = { 0 };
    int rc = fs_iget(fs, UBJ_ROOT_INO, &r);
    if (rc == -ENOENT)
        return ubj_set_error(-EUCLEAN, "root inode is free");
    if (rc < 0)
        return rc;
    bool dir = S_ISDIR(r.ip->mode);
    fs_iput(fs, &r);
    if (!dir)
        return ubj_set_error(-EUCLEAN, "root inode is not a directory");
    return 0;
}

/* super_mark_mounted -- state MOUNTED, count, time; commit it. */
static int super_mark_mounted(struct ubj_fs *fs)
{
    struct ubj_handle *h;
    struct timespec now;
    int rc = ubj_txn_start(&fs->txn, SUPER_CREDITS, &h);
    if (rc < 0)
        return rc;
    fs_now(fs, &now);
    fs->sb.state = UBJ_STATE_MOUNTED | (fs->sb.state & UBJ_STATE_ERRORS);
    fs->sb.mount_mode = (uint32_t)super_mode_by_name(fs->txn.ops->name);
    fs->sb.nvm_region_id = fs->mrec.region_id;
    if (fs->mrec.gen)
        fs->sb.nvm_gen = fs->mrec.gen;
    fs->sb.mount_count++;
    fs->sb.mount_time = now.tv_sec;
    fs->sb.write_time = now.tv_sec;
    rc = fs_super_dirty(fs, h);
    int src = ubj_txn_stop(h);
    if (rc == 0)
        rc = src;
    if (rc == 0)
        rc = ubj_txn_commit(&fs->txn, UBJ_COMMIT_WAIT);
    return rc;
}

/* super_config_check -- validate cfg; fill the mode ops. */
static int super_config_check(struct ubj_bdev *dev, const struct ubj_config *cfg,
                              struct ubj_fs **out)
{
    if (!dev || !out)
        return ubj_set_error(-EINVAL, "mount: no device or result pointer");
    if (dev->block_size != UBJ_BS)
        return ubj_set_error(-EINVAL, "mount: device block size %u, need %u",
                             dev->block_size, UBJ_BS);
    if (cfg && cfg->version != 0)
        return ubj_set_error(-EINVAL, "mount: config version %u unknown",
                             cfg->version);
    if (cfg && (cfg->flags & ~(UBJ_MOUNT_RDONLY | UBJ_MOUNT_NO_TIMER |
                               UBJ_MOUNT_SCRUB | UBJ_MOUNT_NOATIME |
                               UBJ_MOUNT_RA_SYNC)))
        return ubj_set_error(-EINVAL, "mount: unknown flags 0x%x", cfg->flags);
    return super_ra_policy(cfg, NULL, NULL);
}

/* fs_mode_image -- the image as a mode's verbs see it. */
void fs_mode_image(const struct ubj_super *sb, struct ubj_bdev *dev, bool rdonly,
                   struct ubj_mode_image *img)
{
    *img = (struct ubj_mode_image){
        .dev = dev,
        .nblocks = sb->nblocks,
        .mounted = (sb->state & UBJ_STATE_MOUNTED) != 0,
        .errors = (sb->state & UBJ_STATE_ERRORS) != 0,
        .last = ubj_mode_find(super_mode_by_fmt(sb->mount_mode)),
        .recorded = ubj_mode_find(super_mode_by_fmt(sb->mode)),
        .region_id = sb->nvm_region_id,
        .gen = sb->nvm_gen,
        .area_start = sb->journal_start,
        .area_blocks = sb->journal_blocks,
        .rdonly = rdonly,
    };
    memcpy(img->uuid, sb->uuid, 16);
}

/*
 * super_mark_home -- the mode asked for it (fs->mrec.write_home), before
 * anything commits: write the home superblock with state MOUNTED, this
 * mode and what it records (region, generation, ERRORS), and flush.
 * Commits go elsewhere (UBJ: to its region only), so without this a crash
 * would leave a home superblock that says nothing of where they are.
 */
static int super_mark_home(struct ubj_fs *fs)
{
    struct ubj_super *sb = aligned_alloc(UBJ_BS, UBJ_BS);
    if (!sb)
        return ubj_set_error(-ENOMEM, "mount: out of memory");
    memcpy(sb, &fs->sb, sizeof *sb);     /* the home copy read at mount */
    sb->state = UBJ_STATE_MOUNTED | (sb->state & UBJ_STATE_ERRORS) |
                (fs->mrec.errors ? UBJ_STATE_ERRORS : 0u);   /* at the latest now */
    sb->mount_mode = (uint32_t)super_mode_by_name(fs->txn.ops->name);
    sb->nvm_region_id = fs->mrec.region_id;
    sb->nvm_gen = fs->mrec.gen;
    fs_block_seal(fs->csum_seed, sb, UBJ_MAGIC_SUPER, 0);
    int rc = ubj_bdev_write(fs->dev, 0, 1, sb);
    if (rc == 0)
        rc = ubj_bdev_flush(fs->dev);
    free(sb);
    if (rc < 0)
        return ubj_set_error(rc, "mount: cannot write the superblock: %s",
                             strerror(-rc));
    return 0;
}

/* super_clock_ns -- the mount's clock (fs_now: ubj_config.now, else
 * CLOCK_REALTIME) in ns, for the cache's device-wait counters. */
static uint64_t super_clock_ns(void *ctx)
{
    struct timespec ts;
    fs_now(ctx, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* super_mount_mode -- check the last mount, attach the mode's resources,
 * create the cache and mount the consistency mode (its recovery). */
static int super_mount_mode(struct ubj_fs *fs, const struct ubj_config *cfg)
{
    const char *name = cfg && cfg->mode ? cfg->mode : super_mode_by_fmt(fs->sb.mode);
    const struct ubj_mode_ops *ops = name ? ubj_mode_find(name) : NULL;
    if (!ops)
        return ubj_set_error(-EINVAL, "mount: unknown mode \"%s\"",
                             name ? name : "?");
    uint32_t nbufs = cfg && cfg->cache_blocks ? cfg->cache_blocks
                                              : SUPER_CACHE_DEFAULT;
    if (nbufs < SUPER_CACHE_MIN)
        nbufs = SUPER_CACHE_MIN;
    struct ubj_cache_config cc = {
        .nbufs = nbufs, .seal = fs_seal, .ctx = fs,   /* the mode registers
                                                         its hooks at mount */
        .clock_ns = super_clock_ns, .clock_ctx = fs,  /* device waits */
    };
    struct ubj_mode_image img;
    fs_mode_image(&fs->sb, fs->dev, (fs->flags & UBJ_MOUNT_RDONLY) != 0, &img);
    int rc = ubj_txn_check_last(ops, &img, cfg);
    if (rc < 0)
        return rc;
    rc = ubj_txn_prepare(&fs->txn, ops, cfg, &img, &cc);   /* UBJ: the region */
    if (rc < 0)
        return rc;
    rc = ubj_cache_create(fs->dev, &cc, &fs->cache);
    if (rc < 0) {
        ubj_txn_release(&fs->txn);
        return ubj_set_error(rc, "mount: cannot create a cache of %u buffers",
                             cc.nbufs);
    }
    fs->txn.lock = &fs->lock;   /* a mode's tick may release it for I/O */
    rc = ubj_txn_mount(&fs->txn, ops, fs->cache, fs->dev);
    if (rc < 0) {
        ubj_cache_destroy(fs->cache);
        fs->cache = NULL;
        ubj_txn_release(&fs->txn);
    }
    return rc;
}

/* super_record_error -- a device error the mode's resources recorded (UBJ:
 * the last mount went read-only; recovery has just brought its committed
 * blocks back) goes into the superblock as ERRORS, which the coming
 * super_mark_mounted commits; the home copy has it already
 * (super_mark_home).  Returns whether there was one. */
static bool super_record_error(struct ubj_fs *fs)
{
    if ((fs->flags & UBJ_MOUNT_RDONLY) || ubj_txn_error(&fs->txn, false) != 1)
        return false;
    fs->sb.state |= UBJ_STATE_ERRORS;
    return true;
}

/* super_verdict -- a mount check's result: corruption (-EUCLEAN with the
 * sticky fs->error) does not fail the mount but leaves it read-only, its
 * message kept for ubj_mount and ubj_fs_error and ERRORS recorded by
 * super_mark_mounted; any other error fails the mount. */
static int super_verdict(struct ubj_fs *fs, int rc)
{
    if (rc != -EUCLEAN || !fs->error)
        return rc;
    if (fs->mount_error[0] == '\0')
        snprintf(fs->mount_error, sizeof fs->mount_error, "%s", ubj_errormsg());
    fs->sb.state |= UBJ_STATE_ERRORS;
    return 0;
}

/* super_mount_fs -- everything after the mode is mounted (lock held).
 * Nothing is freed or allocated before the checks: the bitmaps (read
 * whole unless a clean image is mounted read-only), -o scrub, the orphan
 * list (docs/GUARANTEES.md, "what a mount verifies"). */
static int super_mount_fs(struct ubj_fs *fs)
{
    int rc = 0;
    bool rw = !(fs->flags & UBJ_MOUNT_RDONLY);
    if (rw)
        rc = ubj_txn_record(&fs->txn, &fs->mrec);   /* UBJ: number the mount */
    if (rc == 0 && fs->mrec.write_home)
        rc = super_mark_home(fs);
    if (rc == 0)
        rc = super_reload(fs);
    if (rc == 0)
        rc = fs_alloc_init(fs);
    bool clean = (fs->sb.state & UBJ_STATE_CLEAN) != 0;
    if (rc == 0 && (rw || !clean))   /* after a crash: counts are lazy */
        rc = super_verdict(fs, fs_alloc_scan(fs, clean));
    if (rc == 0)
        rc = super_check_root(fs);
    if (rc == 0 && fs->reclaim_error && !fs->error) {   /* reclaim.c's finding */
        fs->error = fs->reclaim_error;
        rc = super_verdict(fs, fs->reclaim_error);
    }
    if (rc == 0 && (fs->flags & UBJ_MOUNT_SCRUB) && !fs->error)
        rc = super_verdict(fs, fs_scrub(fs));
    if (rc == 0 && rw)
        rc = super_verdict(fs, fs_orphan_cleanup(fs));
    bool recorded = rc == 0 && super_record_error(fs);
    if (rc == 0 && rw)
        rc = super_mark_mounted(fs);
    if (rc == 0 && recorded)   /* ERRORS committed: the mode's record is done */
        rc = ubj_txn_error(&fs->txn, true);
    return rc;
}

/* ubj_mount -- mount the file system on dev. */
int ubj_mount(struct ubj_bdev *dev, const struct ubj_config *cfg,
              struct ubj_fs **out)
{
    struct ubj_fs *fs = NULL;
    int rc = super_config_check(dev, cfg, out);
    if (rc < 0)
        return rc;
    if (__atomic_exchange_n(&dev->mounted, 1u, __ATOMIC_ACQ_REL) != 0)
        return ubj_set_error(-EBUSY, "mount: the device is already mounted");
    rc = super_fs_new(dev, cfg, &fs);
    if (rc < 0) {
        __atomic_store_n(&dev->mounted, 0u, __ATOMIC_RELEASE);
        return rc;
    }
    rc = super_read_raw(dev, &fs->sb);
    if (rc < 0)
        goto fail;
    if (fs->sb.feat_ro_compat & ~SUPER_RO_COMPAT_KNOWN)
        fs->flags |= UBJ_MOUNT_RDONLY;
    bool reread;
    rc = fs_reclaim(fs, cfg, &reread);   /* an unclean integrity-only image */
    if (rc == 0 && reread)
        rc = super_read_raw(dev, &fs->sb);
    if (rc < 0)
        goto fail;
    fs->csum_seed = ubj_crc32c(~0u, fs->sb.uuid, 16);
    rc = super_mount_mode(fs, cfg);
    if (rc < 0)
        goto fail;
    struct ubj_bdev_stats ds;
    ubj_bdev_stats_get(dev, &ds);
    fs->dev_flushes_base = ds.flushes;
    pthread_mutex_lock(&fs->lock);
    rc = super_mount_fs(fs);
    if (rc < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", ubj_errormsg());
        (void)ubj_txn_unmount(&fs->txn);
        pthread_mutex_unlock(&fs->lock);
        ubj_set_error(rc, "%s", msg);
        goto fail;
    }
    pthread_mutex_unlock(&fs->lock);
    if (!(fs->flags & UBJ_MOUNT_NO_TIMER)) {
        rc = super_timer_start(fs);
        if (rc < 0) {
            pthread_mutex_lock(&fs->lock);
            (void)ubj_txn_unmount(&fs->txn);
            pthread_mutex_unlock(&fs->lock);
            goto fail;
        }
    }
    if (fs->mount_error[0])   /* mounted read-only after a finding */
        ubj_set_error(fs->error, "%s", fs->mount_error);
    else
        ubj_clear_error();
    *out = fs;
    return 0;
fail:
    super_fs_free(fs);
    __atomic_store_n(&dev->mounted, 0u, __ATOMIC_RELEASE);
    return rc;
}

/* ubj_fs_error -- the sticky error and, if mount found it, its reason. */
int ubj_fs_error(struct ubj_fs *fs, char *msg, size_t len)
{
    if (!fs)
        return ubj_set_error(-EINVAL, "fs_error: no mount");
    pthread_mutex_lock(&fs->lock);
    int err = fs->error;
    if (msg && len)
        snprintf(msg, len, "%s", fs->mount_error[0] ? fs->mount_error : err ?
                 "an operation failed after mount (see its error)" : "");
    pthread_mutex_unlock(&fs->lock);
    return err;
}

/* super_close_all -- forget every open reference; free the orphans. */
static int super_close_all(struct ubj_fs *fs)
{
    for (unsigned i = 0; i < FS_OPEN_BUCKETS; i++) {
        while (fs->open[i]) {
            struct fs_open *o = fs->open[i];
            fs->open[i] = o->next;
            free(o);
        }
    }
    if (fs->flags & UBJ_MOUNT_RDONLY)
        return 0;
    return fs_orphan_cleanup(fs);
}

/* super_mark_clean -- state CLEAN (keeping ERRORS), write time.  A mode
 * that promises metadata integrity only (no transaction makes the CLEAN
 * superblock atomic with the rest) first makes everything durable: its
 * unmount would write the superblock in one batch with the last dirty
 * blocks, so a crash could leave CLEAN beside a half-written change -- a
 * leak the next mount would not look for (src/fs/reclaim.c). */
static int super_mark_clean(struct ubj_fs *fs)
{
    struct ubj_handle *h;
    struct timespec now;
    if (fs->flags & UBJ_MOUNT_RDONLY)
        return 0;
    const struct ubj_mode_entry *e = ubj_registry_by_ops(fs->txn.ops);
    int rc = 0;
    if (e != NULL && e->info.promises.meta == UBJ_MODE_META_INTEGRITY)
        rc = ubj_txn_commit(&fs->txn, UBJ_COMMIT_WAIT);
    if (rc == 0)
        rc = ubj_txn_start(&fs->txn, SUPER_CREDITS, &h);
    if (rc < 0)
        return rc;
    fs_now(fs, &now);
    uint32_t errors = (fs->sb.state & UBJ_STATE_ERRORS) ||
                      fs->error ? UBJ_STATE_ERRORS : 0;
    fs->sb.state = UBJ_STATE_CLEAN | errors;
    fs->sb.write_time = now.tv_sec;
    rc = fs_super_dirty(fs, h);
    int src = ubj_txn_stop(h);
    return rc < 0 ? rc : src;
}

/* ubj_unmount -- commit, write back, flush and free the mount. */
int ubj_unmount(struct ubj_fs *fs)
{
    if (!fs)
        return ubj_set_error(-EINVAL, "unmount: no mount");
    super_timer_stop(fs);
    pthread_mutex_lock(&fs->lock);
    ubj_cache_wait_unlocked(fs->cache, &fs->lock);   /* a pread's read (F4) */
    fs_files_close_all(fs);
    int first = super_close_all(fs);
    int rc = super_mark_clean(fs);
    if (first == 0)
        first = rc;
    rc = ubj_txn_unmount(&fs->txn);
    if (first == 0 || (rc < 0 && first == -EROFS))   /* the cause, not -EROFS */
        first = rc;
    if (first < 0)
        fs_errors_home(fs);
    pthread_mutex_unlock(&fs->lock);
    struct ubj_bdev *dev = fs->dev;
    super_fs_free(fs);
    __atomic_store_n(&dev->mounted, 0u, __ATOMIC_RELEASE);
    return first;
}

/* ---- sync, statfs, statistics ----------------------------------------- */

/* fs_now -- the mount's clock for timestamps. */
void fs_now(const struct ubj_fs *fs, struct timespec *ts)
{
    if (fs->now)
        fs->now(fs->now_ctx, ts);
    else
        ubj_now(ts);
}

/* ubj_tick -- one timer tick, on the caller's schedule, waited for. */
int ubj_tick(struct ubj_fs *fs)
{
    return ubj_tick_flags(fs, 0);
}

/* ubj_tick_flags -- one timer tick; flags UBJ_TICK_*. */
int ubj_tick_flags(struct ubj_fs *fs, unsigned flags)
{
    struct ubj_handle *h;
    if (!fs)
        return ubj_set_error(-EINVAL, "tick: no mount");
    if (flags & ~UBJ_TICK_BACKGROUND)
        return ubj_set_error(-EINVAL, "tick: unknown flags 0x%x", flags);
    fs_start(fs, 0, &h);
    int rc = 0;
    if (!(fs->flags & UBJ_MOUNT_RDONLY))
        rc = ubj_txn_tick(&fs->txn, flags);
    if (rc < 0)
        rc = ubj_set_error(rc, "tick: %s", strerror(-rc));
    return fs_stop(fs, h, rc);
}

/* super_write_counts -- put the in-memory free counts into block 0 (they
 * are written lazily: alloc.c) in a handle of their own (lock held). */
static int super_write_counts(struct ubj_fs *fs)
{
    struct ubj_handle *h;
    if (fs->error)
        return 0;
    int rc = ubj_txn_start(&fs->txn, SUPER_CREDITS, &h);
    if (rc < 0)
        return rc;
    rc = fs_super_dirty(fs, h);
    int src = ubj_txn_stop(h);
    return rc < 0 ? rc : src;
}

/* ubj_sync -- commit and make everything durable. */
int ubj_sync(struct ubj_fs *fs)
{
    struct ubj_handle *h;
    if (!fs)
        return ubj_set_error(-EINVAL, "sync: no mount");
    fs_start(fs, 0, &h);
    int rc = 0;
    if (!(fs->flags & UBJ_MOUNT_RDONLY))
        rc = super_write_counts(fs);
    if (rc == 0 && !(fs->flags & UBJ_MOUNT_RDONLY))
        rc = ubj_txn_commit(&fs->txn, UBJ_COMMIT_WAIT | UBJ_COMMIT_SYNC);
    if (rc < 0)
        rc = ubj_set_error(rc, "sync: %s", strerror(-rc));
    return fs_stop(fs, h, rc);
}

/* ubj_statfs_get -- statfs(2). */
int ubj_statfs_get(struct ubj_fs *fs, struct ubj_statfs *out)
{
    struct ubj_handle *h;
    if (!fs || !out)
        return ubj_set_error(-EINVAL, "statfs: bad argument");
    fs_start(fs, 0, &h);
    memset(out, 0, sizeof *out);
    out->bsize = UBJ_BS;
    out->blocks = fs->sb.nblocks - fs->sb.data_start;
    out->bfree = fs->sb.free_blocks;
    out->bavail = fs->sb.free_blocks;
    out->files = fs->sb.ninodes - 1;
    out->ffree = fs->sb.free_inodes;
    out->namemax = UBJ_NAME_MAX;
    memcpy(out->uuid, fs->sb.uuid, 16);
    return fs_stop(fs, h, 0);
}

/* ubj_drop_caches -- drop the clean, unreferenced cached blocks. */
int ubj_drop_caches(struct ubj_fs *fs)
{
    struct ubj_handle *h;
    if (fs == NULL)
        return ubj_set_error(-EINVAL, "drop caches: no mount");
    fs_start(fs, 0, &h);
    ubj_cache_wait_readahead(fs->cache);   /* its blocks land, then go */
    ubj_cache_invalidate(fs->cache);
    return fs_stop(fs, h, 0);
}

/* ubj_fs_stats_get -- cache, mode and device counters since mount. */
void ubj_fs_stats_get(struct ubj_fs *fs, struct ubj_fs_stats *out)
{
    struct ubj_handle *h;
    struct ubj_cache_stats cs;
    struct ubj_bdev_stats ds;
    memset(out, 0, sizeof *out);
    if (!fs)
        return;
    fs_start(fs, 0, &h);
    (void)ubj_txn_stats(&fs->txn);   /* the mode's live counters */
    ubj_cache_stats_get(fs->cache, &cs);
    ubj_bdev_stats_get(fs->dev, &ds);
    out->cache_hits = cs.hits;
    out->cache_misses = cs.misses;
    out->cache_evictions = cs.evictions;
    out->writeback_blocks = cs.writeback_blocks;
    out->bytes_data = cs.writeback_data_bytes;
    out->bytes_metadata = cs.writeback_meta_bytes;
    out->bytes_journal = fs->txn.stats.bytes_journal;
    out->bytes_checkpoint = fs->txn.stats.bytes_checkpoint;
    out->commits = fs->txn.stats.commits;
    out->checkpoints = fs->txn.stats.checkpoints;
    out->dev_flushes = ds.flushes - fs->dev_flushes_base;
    out->nvm_bytes = fs->txn.stats.nvm_bytes;
    out->nvm_persists = fs->txn.stats.nvm_persists;
    out->cow_copies = fs->txn.stats.cow_copies;
    out->recovered_blocks = fs->txn.stats.recovered_blocks;
    out->recovery_ns = fs->txn.stats.recovery_ns;
    out->nvm_model_ns = fs->txn.stats.nvm_model_ns;
    out->nvm_model_energy_j = fs->txn.stats.nvm_model_energy_j;
    out->read_wait_locked_ns = cs.read_wait_locked_ns;
    out->read_wait_unlocked_ns = cs.read_wait_unlocked_ns;
    out->victim_wait_ns = cs.victim_wait_ns;
    out->ra_blocks = cs.ra_blocks;
    out->ra_requests = cs.ra_reads;
    out->ra_used = cs.ra_used;
    out->ra_unused = cs.ra_unused;
    out->ra_late = cs.ra_late;
    out->ra_async_requests = cs.ra_async;
    out->ra_late_wait_ns = cs.ra_late_ns;
    out->ra_unused_bytes = cs.ra_unused * UBJ_BS;
    out->ra_energy_j = fs->ra_energy_j;
    out->ra_unused_energy_j = cs.ra_blocks ? fs->ra_energy_j * (double)cs.ra_unused /
                                             (double)cs.ra_blocks : 0;
    fs_stop(fs, h, 0);
}
