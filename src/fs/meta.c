/*
 * meta.c -- the block and handle plumbing every file-system operation
 * uses: metadata block checksums (seal and verify), verified metadata
 * buffers from the cache (fs_meta_read, fs_meta_write_begin,
 * fs_meta_dirty, fs_super_dirty), and the entry and exit of every public
 * operation (fs_start/fs_stop: the mount lock, a read-only or failed
 * mount refused, the handle; a mode's device-error record put into the
 * home superblock; the sticky error of corruption found at run time
 * recorded as ERRORS at once, meta_errors_record).
 *
 * Invariants:
 *  - Every metadata block carries struct ubj_blkhdr: its type magic, its own
 *    block number and crc32c(csum_seed, block with crc = 0), where
 *    csum_seed = crc32c(~0, uuid).  A block read from the device is verified
 *    once, the first time it is used (UBJ_BUF_VERIFY), by fs_meta_read().
 *  - A block that fails verification is dropped from the cache and makes
 *    the mount's error sticky (-EUCLEAN): the mount goes read-only.
 *  - fs_start returns with fs->lock held unless it fails; fs_stop releases
 *    it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs/fs.h"

/* ---- checksums ---------------------------------------------------------- */

/* fs_block_crc -- crc32c of a block as if its crc field were zero. */
uint32_t fs_block_crc(uint32_t seed, const void *data)
{
    static const uint8_t zero[4];
    const uint8_t *p = data;
    uint32_t c = ubj_crc32c(seed, p, offsetof(struct ubj_blkhdr, crc));
    c = ubj_crc32c(c, zero, sizeof zero);
    return ubj_crc32c(c, p + offsetof(struct ubj_blkhdr, blkno),
                      UBJ_BS - offsetof(struct ubj_blkhdr, blkno));
}

/* fs_block_seal -- set a metadata block's magic, number and crc. */
void fs_block_seal(uint32_t seed, void *data, uint32_t magic, uint64_t blkno)
{
    struct ubj_blkhdr *h = data;
    h->magic = magic;
    h->blkno = blkno;
    h->crc = fs_block_crc(seed, data);
}

/* meta_block_problem -- why a block fails verification, or NULL. */
static const char *meta_block_problem(uint32_t seed, const void *data,
                                       uint32_t magic, uint64_t blkno)
{
    const struct ubj_blkhdr *h = data;
    if (h->magic != magic)
        return "bad magic";
    if (h->blkno != blkno)
        return "wrong block number (misdirected write)";
    if (h->crc != fs_block_crc(seed, data))
        return "bad checksum";
    return NULL;
}

/* fs_block_verify -- check a metadata block's header and crc. */
int fs_block_verify(uint32_t seed, const void *data, uint32_t magic, uint64_t blkno)
{
    return meta_block_problem(seed, data, magic, blkno) ? -EUCLEAN : 0;
}

/* fs_seal -- cache seal callback: checksum with the magic the block holds
 * (data is the snapshot being written, or a live buffer at a mode's
 * commit: what the device or the log gets). */
void fs_seal(void *ctx, uint64_t blkno, void *data)
{
    struct ubj_fs *fs = ctx;
    const struct ubj_blkhdr *h = data;
    fs_block_seal(fs->csum_seed, data, h->magic, blkno);
}

/* meta_kind_name -- a block type's name for messages. */
static const char *meta_kind_name(uint32_t magic)
{
    switch (magic) {
    case UBJ_MAGIC_SUPER: return "superblock";
    case UBJ_MAGIC_BBITMAP: return "block bitmap";
    case UBJ_MAGIC_IBITMAP: return "inode bitmap";
    case UBJ_MAGIC_INODES: return "inode table";
    case UBJ_MAGIC_EXTENT: return "extent node";
    case UBJ_MAGIC_DIR: return "directory node";
    case UBJ_MAGIC_XATTR: return "xattr block";
    default: return "metadata";
    }
}

/* meta_all_zero -- whether a block is entirely zero. */
static bool meta_all_zero(const void *data)
{
    const uint64_t *w = data;
    for (size_t i = 0; i < UBJ_BS / 8; i++)
        if (w[i])
            return false;
    return true;
}

/* ---- metadata buffers ----------------------------------------------------- */

/* meta_corrupt -- record a corruption: sticky fs->error, message, -EUCLEAN. */
static int meta_corrupt(struct ubj_fs *fs, uint64_t blkno, uint32_t magic,
                         const char *why)
{
    if (!fs->error)
        fs->error = -EUCLEAN;
    return ubj_set_error(-EUCLEAN, "block %llu: %s (%s)",
                         (unsigned long long)blkno, why, meta_kind_name(magic));
}

/* meta_unverified -- b was just read from the device and not checked yet
 * (its flags read under the cache's lock: src/cache/cache.h, "Locking"). */
static bool meta_unverified(struct ubj_fs *fs, const struct ubj_buf *b)
{
    return (ubj_cache_peek(fs->cache, b).flags & UBJ_BUF_VERIFY) != 0;
}

/* fs_meta_read -- a referenced, verified metadata buffer of block blkno. */
int fs_meta_read(struct ubj_fs *fs, uint64_t blkno, uint32_t magic,
                 struct ubj_buf **out)
{
    bool fresh;
    return fs_meta_read_fresh(fs, blkno, magic, out, &fresh);
}

/* fs_meta_read_fresh -- fs_meta_read, telling whether it verified now. */
int fs_meta_read_fresh(struct ubj_fs *fs, uint64_t blkno, uint32_t magic,
                       struct ubj_buf **out, bool *fresh)
{
    *fresh = false;
    struct ubj_buf *b;
    int rc = fs_get_read(fs, blkno, &b);
    if (rc == FS_RESTART)
        return rc;
    if (rc < 0)
        return ubj_set_error(rc, "block %llu (%s): read failed: %s",
                             (unsigned long long)blkno, meta_kind_name(magic),
                             strerror(-rc));
    if (meta_unverified(fs, b)) {
        const char *why = NULL;
        bool lazy_ok = magic == UBJ_MAGIC_INODES &&
                       ((const struct ubj_blkhdr *)b->data)->magic == 0 &&
                       meta_all_zero(b->data);
        if (!lazy_ok)
            why = meta_block_problem(fs->csum_seed, b->data, magic, blkno);
        if (why) {
            ubj_cache_put(fs->cache, b);
            ubj_cache_forget(fs->cache, blkno);
            return meta_corrupt(fs, blkno, magic, why);
        }
        ubj_cache_clear_flags(fs->cache, b, UBJ_BUF_VERIFY);
        *fresh = true;
    }
    *out = b;
    return 0;
}

/* meta_write_begin -- a metadata buffer ready for modification; `fresh`
 * blocks are not read: they come back zeroed with their header set, and
 * NODE_INIT (ino `owner`) says so. */
static int meta_write_begin(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blkno,
                            uint32_t magic, bool fresh, ubj_ino_t owner,
                            struct ubj_buf **out)
{
    struct ubj_buf *b;
    int rc;
    if (fresh) {
        rc = ubj_cache_get(fs->cache, blkno, UBJ_GET_NOREAD, &b);
        if (rc < 0)
            return ubj_set_error(rc, "block %llu (%s): no buffer: %s",
                                 (unsigned long long)blkno,
                                 meta_kind_name(magic), strerror(-rc));
        if (meta_unverified(fs, b))
            ubj_cache_clear_flags(fs->cache, b, UBJ_BUF_VERIFY);
    } else {
        rc = fs_meta_read(fs, blkno, magic, &b);
        if (rc < 0)
            return rc;
    }
    fs_gen_bump(fs);
    rc = ubj_txn_write_access(h, &b);
    if (rc < 0) {
        ubj_cache_put(fs->cache, b);
        return rc;
    }
    if (fresh) {
        struct ubj_blkhdr *hdr = (struct ubj_blkhdr *)b->data;
        memset(b->data, 0, UBJ_BS);
        hdr->magic = magic;
        hdr->blkno = blkno;
        /* NODE_INIT: a new tree node, written whole from here on (R1) */
        rc = fs_event(h, b, b->data + sizeof *hdr, UBJ_BS - sizeof *hdr,
                      (struct ubj_event){ .type = UBJ_EV_NODE_INIT, .ino = owner,
                                          .a = magic });
        if (rc < 0) {
            ubj_cache_put(fs->cache, b);
            return rc;
        }
    }
    *out = b;
    return 0;
}

/* fs_meta_write_begin -- an existing metadata block, read and verified,
 * ready for modification. */
int fs_meta_write_begin(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blkno,
                        uint32_t magic, struct ubj_buf **out)
{
    return meta_write_begin(fs, h, blkno, magic, false, 0, out);
}

/* fs_meta_new -- a new tree node of inode `owner` at blkno (not read). */
int fs_meta_new(struct ubj_fs *fs, struct ubj_handle *h, uint64_t blkno,
                uint32_t magic, ubj_ino_t owner, struct ubj_buf **out)
{
    return meta_write_begin(fs, h, blkno, magic, true, owner, out);
}

/* fs_meta_dirty -- the caller changed metadata buffer b. */
int fs_meta_dirty(struct ubj_fs *fs, struct ubj_handle *h, struct ubj_buf *b)
{
    (void)fs;
    return ubj_txn_dirty(h, b, UBJ_KIND_META);
}

/* fs_event -- an event for the bytes [p, p+len) of b. */
int fs_event(struct ubj_handle *h, const struct ubj_buf *b, const void *p,
             size_t len, struct ubj_event ev)
{
    ev.blkno = b->d->blkno;
    ev.off = (uint32_t)((const uint8_t *)p - b->data);
    ev.len = (uint32_t)len;
    return ubj_txn_event(h, &ev);
}

/* super_summary -- SUPER_SUMMARY over the fields of block 0 that differ
 * from fs->sb among the summary ones (free counts, mount state): the
 * counts and state super.c and alloc.c keep in memory. */
static int super_summary(struct ubj_handle *h, const struct ubj_buf *b,
                         const struct ubj_super *sb)
{
    static const size_t span[][2] = {
        { offsetof(struct ubj_super, free_blocks), offsetof(struct ubj_super, root_ino) },
        { offsetof(struct ubj_super, mode), offsetof(struct ubj_super, reserved) },
    };
    int rc = 0;
    for (size_t i = 0; i < 2 && rc == 0; i++) {
        size_t off = span[i][0], len = span[i][1] - span[i][0];
        if (memcmp(b->data + off, (const uint8_t *)sb + off, len) != 0)
            rc = fs_event(h, b, b->data + off, len,
                          (struct ubj_event){ .type = UBJ_EV_SUPER_SUMMARY });
    }
    return rc;
}

/* fs_super_dirty_ev -- copy fs->sb into block 0's buffer, the caller's
 * event and the summary's, and dirty it. */
int fs_super_dirty_ev(struct ubj_fs *fs, struct ubj_handle *h,
                      const struct ubj_event *ev, size_t field, size_t flen)
{
    struct ubj_buf *b;
    int rc = fs_meta_write_begin(fs, h, 0, UBJ_MAGIC_SUPER, &b);
    if (rc < 0)
        return rc;
    fs->sb.hdr.magic = UBJ_MAGIC_SUPER;
    fs->sb.hdr.blkno = 0;
    if (h->t->check || h->t->ops->event)   /* events wanted: name the change */
        rc = super_summary(h, b, &fs->sb);
    /* the reserved tail never changes in memory: copy the fields only */
    memcpy(b->data, &fs->sb, offsetof(struct ubj_super, reserved));
    if (rc == 0 && ev != NULL)
        rc = fs_event(h, b, b->data + field, flen, *ev);
    if (rc == 0)
        rc = fs_meta_dirty(fs, h, b);
    ubj_cache_put(fs->cache, b);
    return rc;
}

/* fs_super_dirty -- copy fs->sb into block 0's buffer and dirty it. */
int fs_super_dirty(struct ubj_fs *fs, struct ubj_handle *h)
{
    return fs_super_dirty_ev(fs, h, NULL, 0, 0);
}

/* ---- entry and exit of every public operation ------------------------- */

/* ---- reads outside the mount lock (fs.h, struct fs_rd) ------------------ */

static _Thread_local struct fs_rd *fs_rd_cur;   /* this thread's, or NULL */

#if UBJ_TEST_HOOKS
static bool meta_no_revalidate;   /* broken variant no-revalidate (fs.h) */

/* fs_file_test_break -- test builds: the broken variant no-revalidate. */
void fs_file_test_break(bool no_revalidate)
{
    meta_no_revalidate = no_revalidate;
}

static bool meta_no_preread;      /* broken variant no-preread (fs.h) */

/* fs_preread_test_break -- test builds: the broken variant no-preread. */
void fs_preread_test_break(bool no_preread)
{
    meta_no_preread = no_preread;
}
#endif

/* fs_rd_begin -- a try of a handle-less read operation begins (lock held). */
void fs_rd_begin(struct ubj_fs *fs, struct fs_rd *rd)
{
    rd->fs = fs;
    rd->gen0 = fs->gen;
    rd->tries = 0;
    rd->pinning = false;
    rd->npin = 0;
    fs_rd_cur = rd;
}

/* fs_rd_begin_pinned -- a writer's pre-read begins (fs.h). */
void fs_rd_begin_pinned(struct ubj_fs *fs, struct fs_rd *rd)
{
    fs_rd_begin(fs, rd);
    rd->pinning = true;
}

/* meta_rd_pin -- keep a second reference to blkno's buffer b (held) for
 * rd's writer, if it has room and the mount's pins stay under their share
 * (lock held). */
static void meta_rd_pin(struct fs_rd *rd, uint64_t blkno, struct ubj_buf *b)
{
    struct ubj_fs *fs = rd->fs;
    if (!rd->pinning || rd->npin == sizeof rd->pin / sizeof rd->pin[0] ||
        fs->rd_pins >= ubj_cache_nbufs(fs->cache) / FS_RD_PIN_SHARE)
        return;
    for (unsigned i = 0; i < rd->npin; i++)
        if (rd->pin[i] == b)
            return;
    struct ubj_buf *again;   /* b again, or a newer version of blkno */
    if (ubj_cache_lookup(fs->cache, blkno, &again) < 0)
        return;              /* b is held: no I/O, and no lookup counted */
    rd->pin[rd->npin++] = again;
    fs->rd_pins++;
}

/* fs_rd_unpin -- drop a pre-read's pins (lock held). */
void fs_rd_unpin(struct fs_rd *rd)
{
    for (unsigned i = 0; i < rd->npin; i++)
        ubj_cache_put(rd->fs->cache, rd->pin[i]);
    rd->fs->rd_pins -= rd->npin;
    rd->npin = 0;
}

/* fs_rd_end -- the operation reads no more outside the lock. */
void fs_rd_end(struct fs_rd *rd)
{
    if (fs_rd_cur == rd)
        fs_rd_cur = NULL;
}

/* fs_rd_again -- after a try that returned rc: true to run it again
 * (FS_RESTART; the last try holds the lock throughout), else false and
 * the operation is over. */
bool fs_rd_again(struct fs_rd *rd, int rc)
{
    if (rc != FS_RESTART) {
        fs_rd_end(rd);
        return false;
    }
    ubj_clear_error();   /* messages of the unwound try */
    rd->tries++;
    rd->gen0 = rd->fs->gen;
    fs_rd_cur = rd->tries < FS_RD_TRIES ? rd : NULL;
    return true;
}

/* meta_rd_changed -- after the lock was off for rd's read: did anything
 * change (fs->gen moved; never under the broken variant no-revalidate)? */
static bool meta_rd_changed(const struct ubj_fs *fs, const struct fs_rd *rd)
{
    bool changed = fs->gen != rd->gen0;
#if UBJ_TEST_HOOKS
    changed = changed && !meta_no_revalidate;
#endif
    return changed;
}

/* fs_get_read -- a block for the running read operation (fs.h). */
int fs_get_read(struct ubj_fs *fs, uint64_t blkno, struct ubj_buf **out)
{
    struct fs_rd *rd = fs_rd_cur;
    if (rd == NULL || rd->fs != fs)
        return ubj_cache_get(fs->cache, blkno, 0, out);
    int rc = ubj_cache_get_unlocking(fs->cache, blkno, 0, &fs->lock, out);
    if (rc < 0)
        return rc;
    if (rc == 0 || !meta_rd_changed(fs, rd)) {
        meta_rd_pin(rd, blkno, *out);
        return 0;
    }
    ubj_cache_put(fs->cache, *out);
    *out = NULL;
    return FS_RESTART;
}

/* fs_get_read_run -- a run of blocks for the running read operation. */
int fs_get_read_run(struct ubj_fs *fs, uint64_t blkno, uint32_t n, struct ubj_buf **out)
{
    struct fs_rd *rd = fs_rd_cur;
    if (rd == NULL || rd->fs != fs)
        return ubj_cache_get_run(fs->cache, blkno, n, out);
    bool dropped;
    int k = ubj_cache_get_run_unlocking(fs->cache, blkno, n, &fs->lock, &dropped, out);
    if (k < 0 || !dropped || !meta_rd_changed(fs, rd))
        return k;
    for (int i = 0; i < k; i++)
        ubj_cache_put(fs->cache, out[i]);
    return FS_RESTART;
}

/* fs_handle_start -- the handle of an operation holding the lock (fs.h). */
int fs_handle_start(struct ubj_fs *fs, uint64_t credits, struct ubj_handle **h)
{
    *h = NULL;
    if (fs->flags & UBJ_MOUNT_RDONLY)
        return ubj_set_error(-EROFS, "file system is mounted read-only");
    if (fs->error)
        return ubj_set_error(-EROFS, "file system is read-only after an error "
                             "(%s): unmount and run fsck", strerror(-fs->error));
    int rc = ubj_txn_start(&fs->txn, credits > UINT32_MAX ? UINT32_MAX
                                                          : (uint32_t)credits, h);
    if (rc < 0)
        *h = NULL;
    return rc;
}

/* fs_read_ahead -- read-ahead of a run for the running read operation. */
int fs_read_ahead(struct ubj_fs *fs, uint64_t blkno, uint32_t n, uint64_t mark)
{
    struct fs_rd *rd = fs_rd_cur;
    bool dropped;
    pthread_mutex_t *outer = rd != NULL && rd->fs == fs ? &fs->lock : NULL;
    int k = ubj_cache_readahead(fs->cache, blkno, n, mark, outer, &dropped);
    if (k < 0 || !dropped || !meta_rd_changed(fs, rd))
        return k;
    return FS_RESTART;
}

/* fs_start -- lock the mount; with credits, refuse a read-only or failed
 * mount and start a handle.  On failure the lock is NOT held. */
int fs_start(struct ubj_fs *fs, uint32_t credits, struct ubj_handle **h)
{
    *h = NULL;
    pthread_mutex_lock(&fs->lock);
    if (credits == 0)
        return 0;
    int rc = fs_handle_start(fs, credits, h);
    if (rc < 0)
        pthread_mutex_unlock(&fs->lock);
    return rc;
}

/* fs_start_read_first -- pre-read, then the handle (fs.h).  A pre-read
 * that fails on the device or on a corrupt block fails the operation
 * with that error and message. */
int fs_start_read_first(struct ubj_fs *fs, uint32_t credits, struct ubj_handle **h,
                        struct fs_rd *rd, int (*pre)(struct ubj_fs *fs, void *arg),
                        void *arg)
{
    *h = NULL;
    pthread_mutex_lock(&fs->lock);
    fs_rd_begin_pinned(fs, rd);
    int rc;
    if (credits > 0 && ((fs->flags & UBJ_MOUNT_RDONLY) || fs->error)) {
        fs_rd_end(rd);   /* refused below: nothing to read for */
        pre = NULL;
    }
#if UBJ_TEST_HOOKS
    if (meta_no_preread) {
        fs_rd_end(rd);
        pre = NULL;
    }
#endif
    do
        rc = pre != NULL ? pre(fs, arg) : 0;
    while (pre != NULL && fs_rd_again(rd, rc));
    if (rc == -EIO || rc == -EUCLEAN || rc == -ENOMEM || rc == -ENOBUFS) {
        /* the device, the image or memory failed: the operation would
         * have met it in the same read (a fault must surface, never be
         * absorbed by the operation's own second read) */
        fs_rd_unpin(rd);
        return fs_stop(fs, NULL, rc);
    }
    ubj_clear_error();   /* a name not there, a full bitmap: the operation's */
    if (credits == 0)
        return 0;
    rc = fs_handle_start(fs, credits, h);
    if (rc < 0) {
        fs_rd_unpin(rd);
        pthread_mutex_unlock(&fs->lock);
    }
    return rc;
}

/* fs_stop_read_first -- drop the pre-read's pins, then fs_stop. */
int fs_stop_read_first(struct ubj_fs *fs, struct ubj_handle *h, int rc,
                       struct fs_rd *rd)
{
    fs_rd_unpin(rd);
    return fs_stop(fs, h, rc);
}

/* meta_home_errors -- put ERRORS into the home superblock straight on the
 * device: read it, set the bit (MOUNTED stays: in mode ubj the region may
 * hold committed blocks the image lacks), reseal, write, flush.  The
 * cached copy may be frozen, and the device may be all that still takes
 * a write.  A home block that does not verify is left alone (in mode ubj
 * the region's copy will replace it).  Returns whether ERRORS is home. */
static bool meta_home_errors(struct ubj_fs *fs)
{
    struct ubj_super *sb = aligned_alloc(UBJ_BS, UBJ_BS);
    int rc = sb ? ubj_bdev_read(fs->dev, 0, 1, sb) : -ENOMEM;
    bool home = false;
    if (rc == 0 && fs_block_verify(fs->csum_seed, sb, UBJ_MAGIC_SUPER, 0) == 0) {
        sb->state = (sb->state & ~UBJ_STATE_CLEAN) | UBJ_STATE_MOUNTED |
                    UBJ_STATE_ERRORS;
        fs_block_seal(fs->csum_seed, sb, UBJ_MAGIC_SUPER, 0);
        rc = ubj_bdev_write(fs->dev, 0, 1, sb);
        if (rc == 0)
            rc = ubj_bdev_flush(fs->dev);
        home = rc == 0;
    }
    free(sb);
    return home;
}

/*
 * fs_errors_home -- once the mode's resources record a device error
 * (ubj_txn_error; UBJ: a checkpoint failed: docs/UBJ.md, "Device errors"):
 * ERRORS into the home superblock as soon as the device takes it
 * (meta_home_errors); nothing else of the mount may reach the device.
 * Keeps the caller's error message.
 */
void fs_errors_home(struct ubj_fs *fs)
{
    if (fs->errors_home || (fs->flags & UBJ_MOUNT_RDONLY) ||
        ubj_txn_error(&fs->txn, false) == 0)
        return;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ubj_errormsg());
    fs->errors_home = meta_home_errors(fs);
    ubj_set_error(-EIO, "%s", msg);
}

/*
 * meta_errors_record -- the mount's sticky error (fs->error: corruption
 * found at run time, docs/GUARANTEES.md "Damage found at run time"),
 * recorded at once where every later mount and fsck sees it, even after
 * a crash: ERRORS in the home superblock straight on the device
 * (meta_home_errors: durable before the operation returns; ubj_mount
 * keeps a home ERRORS across the log's replay and the region's recovery,
 * super_reload), and in the superblock dirtied in a handle of its own, so
 * that the next commit carries it into the log or, in mode ubj, the
 * region -- a checkpoint of an older committed copy then cannot take it
 * from the home block for good.  Once per read-write mount (fs->errors_set,
 * [lock]); keeps the caller's error message.  A failure to record it
 * leaves the mount as read-only as before.
 */
static void meta_errors_record(struct ubj_fs *fs)
{
    if (fs->errors_set || fs->error == 0 || (fs->flags & UBJ_MOUNT_RDONLY))
        return;
    fs->errors_set = true;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ubj_errormsg());
    (void)meta_home_errors(fs);
    fs->sb.state |= UBJ_STATE_ERRORS;
    struct ubj_handle *h;
    if (ubj_txn_start(&fs->txn, 1, &h) == 0) {
        (void)fs_super_dirty(fs, h);
        (void)ubj_txn_stop(h);
    }
    ubj_set_error(fs->error, "%s", msg);
}

/* fs_stop -- stop the handle (if any) and unlock; the first error wins.
 * A failed call of a mount whose mode recorded a device error (UBJ: its
 * checkpoint failed), or that made the mount's error sticky (corruption),
 * records ERRORS. */
int fs_stop(struct ubj_fs *fs, struct ubj_handle *h, int rc)
{
    if (h) {
        int src = ubj_txn_stop(h);
        if (rc >= 0 && src < 0)
            rc = src;
    }
    if (rc < 0 && !fs->errors_home)
        fs_errors_home(fs);
    if (rc < 0 && fs->error != 0 && !fs->errors_set)
        meta_errors_record(fs);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}
