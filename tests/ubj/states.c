/*
 * tests/ubj/states.c -- mode ubj's state machine seen through the file
 * system (src/txn/ubj.c, src/cache/cache.c): a write makes a buffer DIRTY
 * and pinned with no tag; fsync freezes it in place (tag, commit record)
 * with no device I/O at all; a write to a frozen buffer copies it (the
 * frozen one untouched, linked as the older version); the next commit
 * makes the old version FROZEN_OLD and a later persistence point frees it;
 * a checkpoint writes home, flushes once and cleans; freeing a frozen
 * block keeps it durable until that commit (crash copies prove both
 * sides); the recovery scan's rules on synthetic descriptors; thresholds,
 * the timer, cache pressure, read-only mounts, unmount leaves the region
 * empty.
 */
#include "ubjtest.h"
#include "fs/fs.h"
#include "txn/ubj.h"

#define NB 2048u      /* image blocks */
#define NBUFS 64u     /* region buffers */

struct fix {
    char region[256];
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
};

/* setup -- a fresh image and region, mounted. */
static int setup(void **state)
{
    struct fix *f = calloc(1, sizeof *f);
    ut_region_path(f->region, sizeof f->region, "states");
    ut_new_fs(NB, f->region, NBUFS, &f->dev, &f->fs);
    *state = f;
    return 0;
}

/* teardown -- unmount (if mounted), fsck the image alone, clean up. */
static int teardown(void **state)
{
    struct fix *f = *state;
    ubjm_test_limits(0, 0);
    if (f->fs)
        assert_ok(ubj_unmount(f->fs));
    assert_int_equal(ubj_test_check(f->dev, 0, NULL), UBJ_CHECK_CLEAN);
    ubj_bdev_destroy(f->dev);
    unlink(f->region);
    free(f);
    return 0;
}

/* find_buf -- the buffer holding exactly `data` (4 KiB), or NULL. */
static struct ubj_buf *find_buf(struct ubj_fs *fs, const uint8_t *data)
{
    for (uint32_t i = 0; i < ubj_cache_nbufs(fs->cache); i++) {
        struct ubj_buf *b = ubj_cache_buf_at(fs->cache, i);
        if (b->d->state != UBJ_BUF_FREE && memcmp(b->data, data, UT_BS) == 0)
            return b;
    }
    return NULL;
}

/* region_committed -- the commit record of fs's region. */
static uint64_t region_committed(struct ubj_fs *fs)
{
    return ubj_nvm_committed(((struct ubjm_prep *)fs->txn.arg)->r);
}

/* count_tags -- descriptors with a non-zero tag. */
static uint32_t count_tags(struct ubj_fs *fs)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ubj_cache_nbufs(fs->cache); i++)
        n += ubj_cache_buf_at(fs->cache, i)->d->ptag != 0;
    return n;
}

/* block_of -- the physical block of a file's block 0. */
static uint64_t block_of(struct ubj_fs *fs, const char *path)
{
    struct fs_iref r;
    uint64_t pblk = 0;
    uint32_t len;
    assert_ok(fs_iget(fs, tpath_ino(fs, path), &r));
    assert_ok(fs_ext_map(fs, &r, 0, 1, &pblk, &len));
    fs_iput(fs, &r);
    return pblk;
}

/* crash_copy -- mount copies of the region file and the image as a crash
 * would leave them right now (a process crash: every store kept). */
static void crash_copy(struct fix *f, struct ubj_bdev **dev, struct ubj_fs **fs,
                       char *path, size_t len)
{
    uint8_t *img;
    size_t n;
    snprintf(path, len, "%s.crash", f->region);
    assert_ok(ut_file_get(f->region, &img, &n));
    assert_ok(ut_file_put(path, img, n));
    free(img);
    *dev = ut_ram_copy(f->dev);
    int lines;
    assert_int_equal(ut_check_pair(*dev, path, &lines), UBJ_CHECK_CLEAN);
    assert_ok(ut_mount(*dev, path, 0, 0, 0, fs));
}

/* crash_done -- unmount a crash copy; its image must check clean. */
static void crash_done(struct ubj_bdev *dev, struct ubj_fs *fs, const char *path)
{
    assert_ok(ubj_unmount(fs));
    assert_int_equal(ubj_test_check(dev, 0, NULL), UBJ_CHECK_CLEAN);
    ubj_bdev_destroy(dev);
    unlink(path);
}

/* write, freeze, copy on write, supersede, free, checkpoint. */
static void test_commit_cycle(void **state)
{
    struct fix *f = *state;
    struct ubj_fs *fs = f->fs;
    uint8_t p1[UT_BS], p2[UT_BS], p3[UT_BS], raw[UT_BS];
    tpattern_fill(p1, UT_BS, 1, 0);
    tpattern_fill(p2, UT_BS, 2, 0);
    tpattern_fill(p3, UT_BS, 3, 0);
    struct ubj_bdev_stats d0, d1;
    struct ubj_fs_stats s0, s1;
    assert_ok(tpath_create(fs, "/a", 0644, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/a"), 0));
    ubj_bdev_stats_get(f->dev, &d0);
    ubj_fs_stats_get(fs, &s0);

    assert_rc(tpath_write(fs, "/a", p1, UT_BS, 0), UT_BS);
    struct ubj_buf *b = find_buf(fs, p1);
    assert_non_null(b);
    assert_int_equal(b->d->state, UBJ_BUF_DIRTY);
    assert_true(b->flags & UBJ_BUF_PINNED);
    assert_int_equal(b->d->ptag, 0);
    uint64_t T = fs->txn.txid;

    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/a"), 0));
    assert_int_equal(b->d->state, UBJ_BUF_FROZEN);
    assert_false(b->flags & UBJ_BUF_PINNED);
    assert_int_equal(b->d->ptag, ubjm_ptag(T, UBJ_KIND_DATA));
    assert_int_equal(region_committed(fs), T);
    assert_int_equal(fs->txn.txid, T + 1);
    ubj_bdev_stats_get(f->dev, &d1);
    assert_int_equal(d1.writes, d0.writes);          /* no device I/O at all */
    assert_int_equal(d1.flushes, d0.flushes);
    ubj_fs_stats_get(fs, &s1);
    assert_int_equal(s1.commits, s0.commits + 1);
    assert_true(s1.nvm_bytes >= s0.nvm_bytes + UT_BS);
    assert_int_equal(s1.nvm_persists, s0.nvm_persists + 2);   /* P1, P2 */

    /* a write to the frozen block copies it */
    assert_rc(tpath_write(fs, "/a", p2, UT_BS, 0), UT_BS);
    struct ubj_buf *n = find_buf(fs, p2);
    assert_non_null(n);
    assert_ptr_not_equal(n, b);
    assert_memory_equal(b->data, p1, UT_BS);         /* untouched */
    assert_int_equal(b->d->state, UBJ_BUF_FROZEN);
    assert_int_equal(n->d->state, UBJ_BUF_DIRTY);
    assert_int_equal(n->d->older, b->idx);
    assert_int_equal(b->d->newer, n->idx);
    assert_int_equal(n->d->blkno, b->d->blkno);
    ubj_fs_stats_get(fs, &s1);
    assert_true(s1.cow_copies >= s0.cow_copies + 1);
    uint8_t rd[UT_BS];
    assert_rc(tpath_read(fs, "/a", rd, UT_BS, 0), UT_BS);
    assert_memory_equal(rd, p2, UT_BS);              /* reads: the newest */

    /* commit: the old version is out of date, its tag still durable */
    uint64_t T2 = fs->txn.txid;
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/a"), 0));
    assert_int_equal(n->d->state, UBJ_BUF_FROZEN);
    assert_int_equal(n->d->ptag, ubjm_ptag(T2, UBJ_KIND_DATA));
    assert_int_equal(b->d->state, UBJ_BUF_FROZEN_OLD);
    assert_int_equal(b->d->ptag, ubjm_ptag(T, UBJ_KIND_DATA));
    /* the next commit's persistence point frees it */
    assert_ok(tpath_create(fs, "/b", 0644, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/b"), 0));
    assert_int_equal(b->d->state, UBJ_BUF_FREE);
    assert_int_equal(b->d->ptag, 0);

    /* checkpoint (sync): home, one device flush, CLEAN, no tag left */
    ubj_bdev_stats_get(f->dev, &d0);
    ubj_fs_stats_get(fs, &s0);
    assert_ok(ubj_sync(fs));
    ubj_bdev_stats_get(f->dev, &d1);
    ubj_fs_stats_get(fs, &s1);
    assert_int_equal(d1.flushes, d0.flushes + 1);
    assert_true(d1.writes > d0.writes);
    assert_int_equal(s1.checkpoints, s0.checkpoints + 1);
    assert_true(s1.bytes_checkpoint > s0.bytes_checkpoint);
    assert_int_equal(n->d->state, UBJ_BUF_CLEAN);
    assert_int_equal(count_tags(fs), 0);
    assert_int_equal(ubjm_pending(((struct ubjm_prep *)fs->txn.arg)->r, NB), 0);
    assert_ok(ubj_bdev_read(f->dev, block_of(fs, "/a"), 1, raw));
    assert_memory_equal(raw, p2, UT_BS);

    /* a CLEAN buffer is written in place: no copy */
    assert_rc(tpath_write(fs, "/a", p3, UT_BS, 0), UT_BS);
    assert_memory_equal(n->data, p3, UT_BS);
    assert_int_equal(n->d->state, UBJ_BUF_DIRTY);
    ubj_fs_stats_get(fs, &s0);
    assert_int_equal(s0.cow_copies, s1.cow_copies);
}

/* freeing a frozen block: it stays durable until the freeing commit. */
static void test_revoke(void **state)
{
    struct fix *f = *state;
    assert_ok(ubj_unmount(f->fs));
    ubjm_test_limits(900, 900);     /* no commit but the ones we ask for */
    assert_ok(ut_mount(f->dev, f->region, 0, 0, 0, &f->fs));
    struct ubj_fs *fs = f->fs, *cfs;
    struct ubj_bdev *cdev;
    char cpath[300];
    uint8_t p[UT_BS], q[UT_BS], rd[UT_BS];
    tpattern_fill(p, UT_BS, 11, 0);
    tpattern_fill(q, UT_BS, 12, 0);
    assert_ok(tpath_create(fs, "/r", 0644, NULL));
    assert_rc(tpath_write(fs, "/r", p, UT_BS, 0), UT_BS);
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/r"), 0));
    uint64_t blk = block_of(fs, "/r");
    struct ubj_buf *b = find_buf(fs, p);
    assert_non_null(b);
    assert_int_equal(b->d->state, UBJ_BUF_FROZEN);

    assert_ok(tpath_unlink(fs, "/r"));
    assert_int_equal(b->d->state, UBJ_BUF_FROZEN_OLD);
    assert_true(b->d->ptag != 0);                     /* still durable */
    struct ubj_buf *x;
    assert_rc(ubj_cache_lookup(fs->cache, blk, &x), -ENOENT);   /* detached */
    /* the block is reused at once: a fresh buffer, zero-filled, not p */
    assert_ok(tpath_create(fs, "/s", 0644, NULL));
    assert_rc(tpath_write(fs, "/s", q, 100, 0), 100);
    assert_rc(tpath_read(fs, "/s", rd, UT_BS, 0), 100);
    assert_memory_equal(rd, q, 100);
    assert_memory_equal(b->data, p, UT_BS);

    /* a crash before the unlink commits: /r is there, whole */
    crash_copy(f, &cdev, &cfs, cpath, sizeof cpath);
    assert_rc(tpath_read(cfs, "/r", rd, UT_BS, 0), UT_BS);
    assert_memory_equal(rd, p, UT_BS);
    assert_int_equal(tpath_ino(cfs, "/s"), 0);
    crash_done(cdev, cfs, cpath);

    /* committed: the next persistence point frees the old buffer */
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/s"), 0));
    assert_ok(tpath_create(fs, "/t", 0644, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/t"), 0));
    assert_int_equal(b->d->ptag, 0);
    crash_copy(f, &cdev, &cfs, cpath, sizeof cpath);
    assert_int_equal(tpath_ino(cfs, "/r"), 0);
    assert_rc(tpath_read(cfs, "/s", rd, UT_BS, 0), 100);
    assert_memory_equal(rd, q, 100);
    crash_done(cdev, cfs, cpath);
}

/* desc -- a synthetic descriptor. */
static struct ubj_bufdesc desc(uint64_t blkno, uint64_t txid, uint64_t flags)
{
    struct ubj_bufdesc d = { .blkno = blkno, .older = UBJ_NOBUF, .newer = UBJ_NOBUF };
    d.ptag = txid << UBJM_PTAG_SHIFT | flags;
    if (flags == 0 && txid == 0)
        d.ptag = 0;
    return d;
}

/* in -- whether v[0..n) holds x. */
static bool in(const uint32_t *v, uint32_t n, uint32_t x)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

/* the recovery rules on a synthetic descriptor array. */
static void test_recovery_scan(void **state)
{
    (void)state;
    struct ubj_bufdesc d[10] = {
        desc(5, 3, UBJM_PTAG_FROZEN),                  /* 0: superseded by 1 */
        desc(5, 7, UBJM_PTAG_FROZEN | UBJM_PTAG_META),  /* 1: newest of 5 */
        desc(5, 9, UBJM_PTAG_FROZEN),                  /* 2: not committed */
        desc(6, 2, UBJM_PTAG_FROZEN),                  /* 3: only version of 6 */
        desc(7, 4, 0),                                /* 4: tag not FROZEN */
        desc(8, 0, 0),                                /* 5: no tag */
        desc(9, 0, UBJM_PTAG_FROZEN),                  /* 6: txid 0 */
        desc(6, 1, UBJM_PTAG_FROZEN),                  /* 7: superseded by 3 */
        desc(10, 8, UBJM_PTAG_FROZEN),                 /* 8: committed (8) */
        desc(0, 0, 0),                                /* 9: free */
    };
    struct ubjm_scan s;
    assert_ok(ubjm_recovery_scan(d, 10, 8, 100, &s));
    assert_int_equal(s.nkeep, 3);
    assert_true(in(s.keep, s.nkeep, 1) && in(s.keep, s.nkeep, 3) && in(s.keep, s.nkeep, 8));
    assert_int_equal(s.ndrop, 5);
    for (uint32_t i = 0; i < 10; i++)
        assert_int_equal(in(s.drop, s.ndrop, i), i == 0 || i == 2 || i == 4 || i == 6 || i == 7);
    ubjm_scan_free(&s);
    /* with record 9, buffer 2 wins block 5 */
    assert_ok(ubjm_recovery_scan(d, 10, 9, 100, &s));
    assert_true(in(s.keep, s.nkeep, 2) && !in(s.keep, s.nkeep, 1));
    ubjm_scan_free(&s);
    /* corruption: a committed block beyond the device; two versions of one
     * block in one transaction; unknown tag bits */
    assert_rc(ubjm_recovery_scan(d, 10, 8, 10, &s), -EUCLEAN);
    d[9] = desc(6, 2, UBJM_PTAG_FROZEN);
    assert_rc(ubjm_recovery_scan(d, 10, 8, 100, &s), -EUCLEAN);
    d[9] = desc(11, 2, UBJM_PTAG_FROZEN | 0x80);
    assert_rc(ubjm_recovery_scan(d, 10, 8, 100, &s), -EUCLEAN);
}

/* the limits: a full running transaction commits at a handle boundary;
 * frozen buffers beyond the limit are checkpointed. */
static void test_thresholds(void **state)
{
    struct fix *f = *state;
    assert_ok(ubj_unmount(f->fs));
    ubjm_test_limits(250, 300);
    assert_ok(ut_mount(f->dev, f->region, 0, 0, 0, &f->fs));
    struct ubj_fs_stats s0, s1;
    ubj_fs_stats_get(f->fs, &s0);
    uint8_t buf[2 * UT_BS];
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "/t%d", i);
        tpattern_fill(buf, sizeof buf, (uint64_t)i, 0);
        assert_ok(tpath_put(f->fs, name, buf, sizeof buf));
    }
    ubj_fs_stats_get(f->fs, &s1);
    assert_true(s1.commits > s0.commits);             /* no fsync was called */
    assert_true(s1.checkpoints > s0.checkpoints);
    struct ubj_cache_stats cs;
    ubj_cache_stats_get(f->fs->cache, &cs);
    assert_true(cs.dirty <= NBUFS / 4 + 24);
    for (int i = 0; i < 40; i++) {
        char name[16];
        uint8_t rd[2 * UT_BS];
        snprintf(name, sizeof name, "/t%d", i);
        tpattern_fill(buf, sizeof buf, (uint64_t)i, 0);
        assert_rc(tpath_read(f->fs, name, rd, sizeof rd, 0), sizeof rd);
        assert_memory_equal(rd, buf, sizeof rd);
    }
}

/* the timer commits every interval and checkpoints after 6 ticks. */
static void test_timer(void **state)
{
    struct fix *f = *state;
    assert_ok(ubj_unmount(f->fs));
    struct ubj_config cfg = { .mode = UBJ_MODE_UBJ, .commit_interval_ms = 10,
                              .nvm_path = f->region };
    assert_ok(ubj_mount(f->dev, &cfg, &f->fs));
    struct ubj_fs_stats s0, s1;
    ubj_fs_stats_get(f->fs, &s0);
    assert_ok(tpath_put(f->fs, "/timed", "x", 1));
    for (int i = 0; i < 200; i++) {
        t_sleep_ns(10 * 1000 * 1000);
        ubj_fs_stats_get(f->fs, &s1);
        if (s1.commits > s0.commits && s1.checkpoints > s0.checkpoints)
            break;
    }
    assert_true(s1.commits > s0.commits);
    assert_true(s1.checkpoints > s0.checkpoints);
    assert_int_equal(count_tags(f->fs), 0);
}

/* a cache much smaller than the data: writers wait on checkpoints, never
 * fail; everything reads back, before and after a remount. */
static void test_pressure(void **state)
{
    struct fix *f = *state;
    enum { CHUNK = 16 * 1024, TOTAL = 3 * 1024 * 1024 };
    uint8_t *buf = malloc(CHUNK), *rd = malloc(CHUNK);
    assert_ok(tpath_create(f->fs, "/big", 0644, NULL));
    ubj_ino_t ino = tpath_ino(f->fs, "/big");
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t off = 0; off < TOTAL; off += CHUNK) {
            tpattern_fill(buf, CHUNK, 77 + (uint64_t)pass, off);
            assert_rc(ubj_pwrite(f->fs, ino, buf, CHUNK, (off_t)off), CHUNK);
            if ((off / CHUNK) % 16 == 5)
                assert_ok(ubj_fsync(f->fs, ino, 0));
            if ((off / CHUNK) % 7 == 3) {           /* reads need buffers too */
                assert_rc(ubj_pread(f->fs, ino, rd, CHUNK, (off_t)(off / 2)), CHUNK);
            }
        }
    for (int round = 0; round < 2; round++) {
        for (uint64_t off = 0; off < TOTAL; off += CHUNK) {
            tpattern_fill(buf, CHUNK, 78, off);
            assert_rc(ubj_pread(f->fs, ino, rd, CHUNK, (off_t)off), CHUNK);
            assert_memory_equal(rd, buf, CHUNK);
        }
        assert_ok(ubj_unmount(f->fs));
        assert_int_equal(ubj_test_check(f->dev, 0, NULL), UBJ_CHECK_CLEAN);
        assert_ok(ut_mount(f->dev, f->region, 0, 0, 0, &f->fs));
        ino = tpath_ino(f->fs, "/big");
    }
    free(buf);
    free(rd);
}

/* one pwrite four times larger than the cache: written whole (one handle
 * per chunk, commits between them), never a half chunk; fsck clean. */
static void test_operation_too_big(void **state)
{
    struct fix *f = *state;
    enum { BIG = NBUFS * 4 * 4096 };
    uint8_t *buf = malloc(BIG), *rd = malloc(BIG);
    tpattern_fill(buf, BIG, 9, 0);
    assert_ok(tpath_create(f->fs, "/huge", 0644, NULL));
    ubj_ino_t ino = tpath_ino(f->fs, "/huge");
    assert_rc(ubj_pwrite(f->fs, ino, buf, BIG, 0), BIG);
    assert_rc(ubj_pread(f->fs, ino, rd, BIG, 0), BIG);
    assert_memory_equal(rd, buf, BIG);
    assert_ok(ubj_unmount(f->fs));
    assert_int_equal(ubj_test_check(f->dev, 0, NULL), UBJ_CHECK_CLEAN);
    assert_ok(ut_mount(f->dev, f->region, 0, 0, 0, &f->fs));
    assert_rc(ubj_pread(f->fs, tpath_ino(f->fs, "/huge"), rd, BIG, 0), BIG);
    assert_memory_equal(rd, buf, BIG);
    free(buf);
    free(rd);
}

/* a checkpoint whose writes or flush fail changes nothing (the blocks
 * stay frozen, safe in NVM), reports -EIO and turns the mount read-only
 * (docs/UBJ.md, "Device errors"); a crash then loses nothing; unmount
 * reports the error; the next mount, the device working, writes them. */
static void test_checkpoint_eio(void **state)
{
    struct fix *f = *state;
    assert_ok(ubj_unmount(f->fs));
    struct ubj_bdev *fdev;
    assert_ok(ubj_bdev_fault_create(f->dev, &fdev));
    f->dev = fdev;
    for (int op = UBJ_FAULT_WRITE; op <= UBJ_FAULT_FLUSH; op++) {
        assert_ok(ut_mount(f->dev, f->region, 0, 0, 0, &f->fs));
        uint8_t p[3 * UT_BS], rd[3 * UT_BS];
        char name[8];
        snprintf(name, sizeof name, "/e%d", op);
        tpattern_fill(p, sizeof p, 31u + (unsigned)op, 0);
        assert_ok(tpath_put(f->fs, name, p, sizeof p));
        assert_ok(ubj_fsync(f->fs, tpath_ino(f->fs, name), 0));
        uint32_t tags = count_tags(f->fs);
        assert_true(tags > 0);
        assert_ok(ubj_bdev_fault_arm(f->dev, (enum ubj_fault_op)op, 1, 1, 0));
        assert_rc(ubj_sync(f->fs), -EIO);
        assert_int_equal(count_tags(f->fs), tags);   /* nothing let go */
        assert_ok(ubj_bdev_fault_disarm(f->dev));
        assert_rc(ubj_sync(f->fs), -EROFS);          /* read-only now */
        assert_rc(tpath_create(f->fs, "/no", 0644, NULL), -EROFS);
        assert_int_equal(count_tags(f->fs), tags);
        /* a crash now: the region still holds everything */
        struct ubj_fs *cfs;
        struct ubj_bdev *cdev;
        char cpath[300];
        crash_copy(f, &cdev, &cfs, cpath, sizeof cpath);
        assert_rc(tpath_read(cfs, name, rd, sizeof rd, 0), sizeof rd);
        assert_memory_equal(rd, p, sizeof rd);
        crash_done(cdev, cfs, cpath);
        assert_rc(ubj_unmount(f->fs), -EIO);
        assert_ok(ut_mount(f->dev, f->region, 0, 0, 0, &f->fs));
        assert_true(f->fs->sb.state & UBJ_STATE_ERRORS);
        assert_ok(ubj_sync(f->fs));
        assert_int_equal(count_tags(f->fs), 0);
        assert_rc(tpath_read(f->fs, name, rd, sizeof rd, 0), sizeof rd);
        assert_memory_equal(rd, p, sizeof rd);
        if (op == UBJ_FAULT_WRITE)
            assert_ok(ubj_unmount(f->fs));
    }
}

/* unmount leaves no tag; a read-only mount of a crashed pair recovers in
 * memory, serves the committed data, and writes nothing home. */
static void test_unmount_and_readonly(void **state)
{
    struct fix *f = *state;
    uint8_t p[UT_BS], rd[UT_BS];
    tpattern_fill(p, UT_BS, 5, 0);
    assert_ok(tpath_put(f->fs, "/ro", p, UT_BS));
    assert_ok(ubj_fsync(f->fs, tpath_ino(f->fs, "/ro"), 0));
    char cpath[300];
    snprintf(cpath, sizeof cpath, "%s.ro", f->region);
    uint8_t *img;
    size_t n;
    assert_ok(ut_file_get(f->region, &img, &n));
    assert_ok(ut_file_put(cpath, img, n));
    free(img);
    struct ubj_bdev *cdev = ut_ram_copy(f->dev);
    assert_ok(ubj_unmount(f->fs));
    f->fs = NULL;
    struct ubj_nvm *r;
    assert_ok(ubj_nvm_open(f->region, 0, &r));
    assert_int_equal(ubjm_pending(r, NB), 0);
    const struct ubj_bufdesc *d = ubj_nvm_desc(r);
    for (uint32_t i = 0; i < NBUFS; i++)
        assert_int_equal(d[i].ptag, 0);
    ubj_nvm_close(r);
    /* the image alone is complete: mode none reads it */
    struct ubj_config none = { .mode = UBJ_MODE_NONE, .flags = UBJ_MOUNT_NO_TIMER | UBJ_MOUNT_RDONLY };
    struct ubj_fs *nfs;
    assert_ok(ubj_mount(f->dev, &none, &nfs));
    assert_rc(tpath_read(nfs, "/ro", rd, UT_BS, 0), UT_BS);
    assert_memory_equal(rd, p, UT_BS);
    assert_ok(ubj_unmount(nfs));

    struct ubj_fs *rfs;
    struct ubj_bdev_stats d0, d1;
    ubj_bdev_stats_get(cdev, &d0);
    assert_ok(ut_mount(cdev, cpath, 0, 0, UBJ_MOUNT_RDONLY, &rfs));
    assert_rc(tpath_read(rfs, "/ro", rd, UT_BS, 0), UT_BS);
    assert_memory_equal(rd, p, UT_BS);
    assert_rc(tpath_create(rfs, "/no", 0644, NULL), -EROFS);
    struct ubj_fs_stats fst;
    ubj_fs_stats_get(rfs, &fst);
    assert_true(fst.recovered_blocks > 0);
    assert_ok(ubj_unmount(rfs));
    ubj_bdev_stats_get(cdev, &d1);
    assert_int_equal(d1.writes, d0.writes);
    assert_ok(ubj_nvm_open(cpath, 0, &r));
    assert_true(ubjm_pending(r, NB) > 0);          /* still not home */
    ubj_nvm_close(r);
    assert_ok(ut_mount(cdev, cpath, 0, 0, 0, &rfs));  /* read-write: home */
    assert_ok(ubj_unmount(rfs));
    assert_int_equal(ubj_test_check(cdev, 0, NULL), UBJ_CHECK_CLEAN);
    assert_ok(ubj_nvm_open(cpath, 0, &r));
    assert_int_equal(ubjm_pending(r, NB), 0);
    ubj_nvm_close(r);
    ubj_bdev_destroy(cdev);
    unlink(cpath);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revoke, setup, teardown),
        cmocka_unit_test(test_recovery_scan),
        cmocka_unit_test_setup_teardown(test_thresholds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pressure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_operation_too_big, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_eio, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unmount_and_readonly, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
