/*
 * corrupt/verify.c -- what a read-write mount must verify before it frees
 * or allocates anything (issue 14, defects 4 and 5).  Each image is built
 * here, then one structure is edited with its checksum recomputed, so only
 * the mount's cross-checks (not the checksums) can catch it:
 *
 *   orphan list: a still-named inode (nlink 0) on the list of a cleanly
 *   unmounted image; a non-empty directory on the list of a crashed one;
 *   a list that loops (two inodes, and one pointing at itself);
 *   block bitmap: in-use data blocks marked free (the outside report: a
 *   6 MB write overwrote two files); metadata blocks marked free; the
 *   superblock's free count disagreeing with the bitmap; in-use blocks
 *   marked free with the counts made to agree, on a crashed image: cached
 *   blocks are refused at allocation, cold ones only `scrub` finds.
 *
 * A finding leaves the mount up but read-only: ubj_mount returns 0 with
 * the reason in ubj_errormsg(), fs->error is -EUCLEAN, writers get EROFS,
 * the on-disk superblock says ERRORS, nothing is lost, and fsck -n reports
 * the problem and fsck -y repairs it.
 */
#include "testutil.h"
#include "fs/fs.h"

#define V_BLOCKS 4096u            /* 16 MiB */
#define V_FILE (1u << 20)         /* the two victims: 1 MiB each */
#define V_BIG (6u << 20)          /* the write of the outside report */

/* ---- raw edits ------------------------------------------------------------ */

/* v_sb -- the superblock as on the device. */
static struct ubj_super v_sb(struct ubj_bdev *d)
{
    static struct ubj_super sb;
    assert_ok(ubj_bdev_read(d, 0, 1, &sb));
    return sb;
}

/* v_sb_apply -- timg_edit callback: copy ctx (a struct ubj_super) in. */
static void v_sb_apply(void *block, void *ctx)
{
    memcpy(block, ctx, offsetof(struct ubj_super, reserved));
}

/* v_sb_put -- store sb (resealed). */
static void v_sb_put(struct ubj_bdev *d, struct ubj_super *sb)
{
    assert_ok(timg_edit(d, 0, 1, v_sb_apply, sb));
}

struct v_ino { ubj_ino_t ino; struct ubj_inode val; bool put; };

/* v_ino_apply -- read (put = false) or store the inode slot. */
static void v_ino_apply(void *block, void *ctx)
{
    struct v_ino *e = ctx;
    uint8_t *p = (uint8_t *)block + UBJ_INODE_SIZE * (1 + e->ino % UBJ_INODES_PER_BLOCK);
    if (e->put)
        memcpy(p, &e->val, sizeof e->val);
    else
        memcpy(&e->val, p, sizeof e->val);
}

/* v_ino_get / v_ino_put -- one raw inode. */
static struct ubj_inode v_ino_get(struct ubj_bdev *d, ubj_ino_t ino)
{
    struct v_ino e = { .ino = ino };
    assert_ok(timg_edit(d, v_sb(d).it_start + ino / UBJ_INODES_PER_BLOCK, 1,
                        v_ino_apply, &e));
    return e.val;
}
static void v_ino_put(struct ubj_bdev *d, ubj_ino_t ino, const struct ubj_inode *ip)
{
    struct v_ino e = { .ino = ino, .val = *ip, .put = true };
    assert_ok(timg_edit(d, v_sb(d).it_start + ino / UBJ_INODES_PER_BLOCK, 1,
                        v_ino_apply, &e));
}

struct v_bits { uint64_t base, from, to; };

/* v_bits_apply -- clear bits [from, to) of the map that holds `base`.. */
static void v_bits_apply(void *block, void *ctx)
{
    const struct v_bits *e = ctx;
    uint8_t *w = (uint8_t *)block + sizeof(struct ubj_blkhdr);
    for (uint64_t b = e->from; b < e->to; b++)
        if (b >= e->base && b < e->base + UBJ_BITMAP_BITS)
            w[(b - e->base) / 8] &= (uint8_t)~(1u << ((b - e->base) % 8));
}

/* v_bmap_clear -- mark blocks [from, to) free in the block bitmap. */
static void v_bmap_clear(struct ubj_bdev *d, uint64_t from, uint64_t to)
{
    struct ubj_super sb = v_sb(d);
    for (uint64_t i = from / UBJ_BITMAP_BITS; i <= (to - 1) / UBJ_BITMAP_BITS; i++) {
        struct v_bits e = { i * UBJ_BITMAP_BITS, from, to };
        assert_ok(timg_edit(d, sb.bb_start + i, 1, v_bits_apply, &e));
    }
}

/* ---- images ------------------------------------------------------------------ */

/* v_put_file -- /name with V_FILE bytes of pattern `seed`. */
static ubj_ino_t v_put_file(struct ubj_fs *fs, const char *path, uint64_t seed)
{
    uint8_t *buf = malloc(V_FILE);
    tpattern_fill(buf, V_FILE, seed, 0);
    assert_ok(tpath_put(fs, path, buf, V_FILE));
    free(buf);
    return tpath_ino(fs, path);
}

/* v_same -- the file still holds pattern `seed` (V_FILE bytes). */
static void v_same(struct ubj_fs *fs, const char *path, uint64_t seed)
{
    uint8_t *buf = malloc(V_FILE);
    assert_rc(tpath_read(fs, path, buf, V_FILE, 0), V_FILE);
    size_t at = tpattern_check(buf, V_FILE, seed, 0);
    free(buf);
    if (at != V_FILE)
        fail_msg("%s changed at byte %zu", path, at);
}

/* v_first_block -- the physical block of `path`'s first block (a file
 * written at once is one run here: asserted). */
static uint64_t v_first_block(struct ubj_fs *fs, const char *path)
{
    struct fs_iref r = { 0 };
    uint64_t pblk;
    uint32_t len;
    ubj_ino_t ino = tpath_ino(fs, path);
    pthread_mutex_lock(&fs->lock);
    assert_ok(fs_iget(fs, ino, &r));
    assert_ok(fs_ext_map(fs, &r, 0, V_FILE / UBJ_BS, &pblk, &len));
    fs_iput(fs, &r);
    pthread_mutex_unlock(&fs->lock);
    assert_int_equal(len, V_FILE / UBJ_BS);
    return pblk;
}

/* v_one_file -- an image with /f1 (pattern 11), cleanly unmounted. */
static struct ubj_bdev *v_one_file(void)
{
    struct ubj_bdev *d;
    struct ubj_fs *fs;
    ubj_test_fs_new(V_BLOCKS, &d, &fs);
    v_put_file(fs, "/f1", 11);
    assert_ok(ubj_unmount(fs));
    return d;
}

/* v_crash -- a copy of the mounted device after ubj_sync (state MOUNTED). */
static struct ubj_bdev *v_crash(struct ubj_fs *fs, struct ubj_bdev *d)
{
    struct ubj_bdev *c;
    assert_ok(ubj_sync(fs));
    assert_ok(ubj_bdev_ram_create(d->nblocks, &c));
    assert_ok(timg_copy(d, c));
    return c;
}

/* ---- what a degraded mount looks like ---------------------------------------- */

/* v_degraded -- mounted, but read-only with -EUCLEAN: the message names
 * `what`, writers get EROFS, the device's superblock says ERRORS. */
static void v_degraded(struct ubj_bdev *d, struct ubj_fs *fs, int rc, const char *what)
{
    char m[256];
    assert_rc(rc, 0);
    int err = ubj_fs_error(fs, m, sizeof m);
    fprintf(stderr, "  mount -> %d, error %d: %s\n", rc, err, m);
    assert_int_equal(err, fs->error);
    if (err != -EUCLEAN)
        fail_msg("mount went on read-write (error %d) despite: %s", err, what);
    if (!strstr(m, what) || strchr(m, '\n'))
        fail_msg("message '%s' does not name '%s' in one line", m, what);
    assert_rc(tpath_create(fs, "/probe", 0644, NULL), -EROFS);
    assert_true(v_sb(d).state & UBJ_STATE_ERRORS);
}

struct v_lines { const char *want; bool found; };

/* v_line -- fsck's report callback: print, look for l->want. */
static void v_line(void *ctx, const char *line)
{
    struct v_lines *l = ctx;
    fprintf(stderr, "  fsck: %s\n", line);
    if (strstr(line, l->want) && strncmp(line, "note: ", 6) != 0)
        l->found = true;
}

/* v_fsck -- after unmount: fsck -n finds `line`, fsck -y repairs, then
 * the image mounts read-write and checks clean. */
static void v_fsck(struct ubj_bdev *d, const char *line)
{
    struct ubj_fs *fs;
    struct v_lines l = { .want = line };
    assert_true(v_sb(d).state & UBJ_STATE_ERRORS);
    assert_int_equal(ubj_check(d, 0, v_line, &l), UBJ_CHECK_UNCORRECTED);
    if (!l.found)
        fail_msg("fsck -n reported no line containing '%s'", line);
    assert_int_equal(ubj_test_check(d, UBJ_CHECK_REPAIR, NULL), UBJ_CHECK_REPAIRED);
    assert_ok(ubj_test_mount(d, 0, &fs));
    assert_int_equal(fs->error, 0);
    assert_ok(tpath_create(fs, "/after-fsck", 0644, NULL));
    ubj_test_fs_done(d, fs);
}

/* v_umount -- unmount a mount that went read-only (0, or the error it
 * reports). */
static void v_umount(struct ubj_fs *fs)
{
    int rc = ubj_unmount(fs);
    assert_true(rc == 0 || rc == -EUCLEAN);
}

/* v_ro_round -- mount with `flags`: read-only naming `what`, `path` (if
 * any) still holds pattern `seed`; unmount; fsck finds `line`, repairs. */
static void v_ro_round(struct ubj_bdev *d, unsigned flags, const char *what,
                       const char *path, uint64_t seed, const char *line)
{
    struct ubj_fs *fs;
    int rc = ubj_test_mount(d, flags, &fs);
    v_degraded(d, fs, rc, what);
    if (path)
        v_same(fs, path, seed);
    v_umount(fs);
    v_fsck(d, line);
}

/* ---- defect 4: the orphan list --------------------------------------------- */

/* v_named_orphan -- /a (pattern 1) with nlink 0 put on the orphan list, on
 * a cleanly unmounted image or (crashed) a copy taken while mounted. */
static struct ubj_bdev *v_named_orphan(bool crashed, ubj_ino_t *a)
{
    struct ubj_bdev *d0, *d;
    struct ubj_fs *fs;
    ubj_test_fs_new(V_BLOCKS, &d0, &fs);
    *a = v_put_file(fs, "/a", 1);
    d = crashed ? v_crash(fs, d0) : d0;
    assert_ok(ubj_unmount(fs));
    if (crashed)
        ubj_bdev_destroy(d0);
    struct ubj_inode ip = v_ino_get(d, *a);
    ip.nlink = 0;
    v_ino_put(d, *a, &ip);
    struct ubj_super sb = v_sb(d);
    sb.orphan_head = *a;
    v_sb_put(d, &sb);
    return d;
}

/*
 * test_orphan_named -- the outside report: a file with a name, nlink 0
 * and a valid checksum is put on the orphan list of a cleanly unmounted
 * image.  Fails on fd8c42e: the mount freed it, the next create reused
 * the inode, and /a read the new file's 8 bytes.
 */
static void test_orphan_named(void **state)
{
    (void)state;
    ubj_ino_t a;
    struct ubj_fs *fs;
    struct ubj_bdev *d = v_named_orphan(false, &a);
    int rc = ubj_test_mount(d, 0, &fs);
    assert_rc(rc, 0);
    (void)tpath_put(fs, "/b", "new file", 8);      /* reused /a's inode */
    v_same(fs, "/a", 1);
    v_degraded(d, fs, rc, "orphan list");
    assert_int_equal(v_sb(d).orphan_head, a);      /* nothing was freed */
    v_umount(fs);
    v_fsck(d, "orphan list");
}

/*
 * test_orphan_dir -- a directory holding a name, on the orphan list of a
 * crashed image (so the clean-image rule does not apply: its own records
 * must).  Fails on fd8c42e: the mount freed the directory (getattr:
 * ENOENT), leaving x without a name, and went on read-write.
 */
static void test_orphan_dir(void **state)
{
    (void)state;
    struct ubj_bdev *d0, *d;
    struct ubj_fs *fs;
    ubj_test_fs_new(V_BLOCKS, &d0, &fs);
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_put(fs, "/d/x", "kept", 4));
    ubj_ino_t dino = tpath_ino(fs, "/d"), x = tpath_ino(fs, "/d/x");
    d = v_crash(fs, d0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(d0);
    struct ubj_inode ip = v_ino_get(d, dino);
    ip.nlink = 0;
    v_ino_put(d, dino, &ip);
    struct ubj_super sb = v_sb(d);
    assert_true(sb.state & UBJ_STATE_MOUNTED);
    sb.orphan_head = dino;
    v_sb_put(d, &sb);

    int rc = ubj_test_mount(d, 0, &fs);
    assert_rc(rc, 0);
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, dino, &st));          /* not freed */
    char buf[4];                                   /* (d has nlink 0: no lookup) */
    assert_ok(ubj_open(fs, x, O_RDONLY));
    assert_rc(ubj_pread(fs, x, buf, 4, 0), 4);
    assert_memory_equal(buf, "kept", 4);
    assert_ok(ubj_release(fs, x));
    v_degraded(d, fs, rc, "directory");
    v_umount(fs);
    v_fsck(d, "directory holding names");   /* check.c, new */
}

/* v_orphans -- two files /p and /q, opened and unlinked, and a crash:
 * the list is head q -> p -> 0.  *p, *q their inodes. */
static struct ubj_bdev *v_orphans(ubj_ino_t *p, ubj_ino_t *q)
{
    struct ubj_bdev *d0, *d;
    struct ubj_fs *fs;
    ubj_test_fs_new(V_BLOCKS, &d0, &fs);
    *p = v_put_file(fs, "/p", 3);
    *q = v_put_file(fs, "/q", 4);
    assert_ok(ubj_open(fs, *p, O_RDWR));
    assert_ok(ubj_open(fs, *q, O_RDWR));
    assert_ok(tpath_unlink(fs, "/p"));
    assert_ok(tpath_unlink(fs, "/q"));
    assert_int_equal(fs->sb.orphan_head, *q);
    d = v_crash(fs, d0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(d0);
    return d;
}

/*
 * test_orphan_cycle -- q -> p -> q, and q -> q.  Fails on fd8c42e: the
 * inodes were freed without a word (getattr: ENOENT), read-write.
 */
static void test_orphan_cycle(void **state)
{
    (void)state;
    for (int self = 0; self < 2; self++) {
        ubj_ino_t p, q;
        struct ubj_fs *fs;
        struct ubj_bdev *d = v_orphans(&p, &q);
        struct ubj_inode ip = v_ino_get(d, self ? q : p);
        ip.orphan_next = q;
        v_ino_put(d, self ? q : p, &ip);
        int rc = ubj_test_mount(d, 0, &fs);
        assert_rc(rc, 0);
        struct ubj_stat st;
        assert_ok(ubj_getattr(fs, p, &st));          /* nothing was freed */
        assert_ok(ubj_getattr(fs, q, &st));
        v_degraded(d, fs, rc, "loop");
        v_umount(fs);
        v_fsck(d, "orphan list");
    }
}

/* ---- a leaf that maps its own block (fuzz_libfuzzer_mount, stop 29) ------ */

#define V_FRAGS 20u                     /* one-block extents: a depth-1 tree */

struct v_leaf { uint64_t self; unsigned n; };

/* v_leaf_apply -- the leaf's last extent now maps the leaf itself. */
static void v_leaf_apply(void *block, void *ctx)
{
    struct v_leaf *l = ctx;
    uint8_t *b = block;
    struct ubj_ext_hdr *hd = (void *)(b + sizeof(struct ubj_blkhdr));
    struct ubj_extent *e = (void *)(b + sizeof(struct ubj_blkhdr) + sizeof *hd);
    assert_int_equal(hd->depth, 0);
    l->n = hd->entries;
    e[hd->entries - 1].pblk = l->self;
}

/* v_self_leaf -- /s: V_FRAGS blocks at every other logical block (one
 * extent each: a root index over one leaf), its leaf edited so the last
 * extent maps the leaf's own block; opened and unlinked when `orphan`,
 * and the image a crash copy, else cleanly unmounted. */
static struct ubj_bdev *v_self_leaf(bool orphan, ubj_ino_t *ino)
{
    struct ubj_bdev *d0, *d;
    struct ubj_fs *fs;
    uint8_t blk[UBJ_BS];
    ubj_test_fs_new(V_BLOCKS, &d0, &fs);
    assert_ok(tpath_create(fs, "/s", 0644, NULL));
    for (unsigned i = 0; i < V_FRAGS; i++) {
        tpattern_fill(blk, UBJ_BS, 7, (uint64_t)i * 2 * UBJ_BS);
        assert_rc(tpath_write(fs, "/s", blk, UBJ_BS, (uint64_t)i * 2 * UBJ_BS), UBJ_BS);
    }
    *ino = tpath_ino(fs, "/s");
    if (orphan) {
        assert_ok(ubj_open(fs, *ino, O_RDWR));
        assert_ok(tpath_unlink(fs, "/s"));
        assert_int_equal(fs->sb.orphan_head, *ino);
    }
    d = orphan ? v_crash(fs, d0) : d0;
    assert_ok(ubj_unmount(fs));
    if (orphan)
        ubj_bdev_destroy(d0);
    struct ubj_inode ip = v_ino_get(d, *ino);
    assert_int_equal(ip.i_data.ext.hdr.depth, 1);
    assert_int_equal(ip.i_data.ext.hdr.entries, 1);
    struct v_leaf l = {
        .self = ((const struct ubj_ext_idx *)(const void *)ip.i_data.ext.e)[0].child };
    assert_ok(timg_edit(d, l.self, 1, v_leaf_apply, &l));
    assert_int_equal(l.n, V_FRAGS);
    return d;
}

/*
 * test_extent_own_block -- freeing a file whose leaf maps the leaf's own
 * block as data: the leaf's write access was revoked by the free while
 * the leaf was still being changed (the event checker aborted, in the
 * orphan cleanup of a mount: fuzz_libfuzzer_mount, stop 29).  Now the
 * free is refused as corruption: the orphan cleanup at mount, and an
 * unlink on a mount.
 */
static void test_extent_own_block(void **state)
{
    (void)state;
    ubj_ino_t ino;
    struct ubj_fs *fs;
    const char *what = "extent maps a block of its own tree";
    struct ubj_bdev *d = v_self_leaf(true, &ino);
    int rc = ubj_test_mount(d, 0, &fs);
    v_degraded(d, fs, rc, what);
    v_umount(fs);
    v_fsck(d, "used twice");
    d = v_self_leaf(false, &ino);
    assert_ok(ubj_test_mount(d, 0, &fs));
    assert_int_equal(fs->error, 0);
    assert_rc(tpath_unlink(fs, "/s"), -EUCLEAN);
    if (!strstr(ubj_errormsg(), what))
        fail_msg("unlink's message '%s' does not name '%s'", ubj_errormsg(), what);
    v_degraded(d, fs, 0, "an operation failed");
    v_umount(fs);
    v_fsck(d, "used twice");
}

/* test_orphan_valid -- the list of a crash is still freed (the checks do
 * not refuse what is right). */
static void test_orphan_valid(void **state)
{
    (void)state;
    ubj_ino_t p, q;
    struct ubj_fs *fs;
    struct ubj_bdev *d = v_orphans(&p, &q);
    assert_ok(ubj_test_mount(d, 0, &fs));
    assert_int_equal(fs->error, 0);
    assert_int_equal(fs->sb.orphan_head, 0);
    struct ubj_stat st;
    assert_rc(ubj_getattr(fs, p, &st), -ENOENT);
    assert_rc(ubj_getattr(fs, q, &st), -ENOENT);
    ubj_test_fs_done(d, fs);
}

/* ---- defect 5: the block bitmap -------------------------------------------- */

/* v_victims -- /f1 and /f2 (1 MiB each, adjacent), cleanly unmounted:
 * their blocks [*from, *to). */
static struct ubj_bdev *v_victims(uint64_t *from, uint64_t *to)
{
    struct ubj_bdev *d;
    struct ubj_fs *fs;
    ubj_test_fs_new(V_BLOCKS, &d, &fs);
    v_put_file(fs, "/f1", 11);
    v_put_file(fs, "/f2", 12);
    *from = v_first_block(fs, "/f1");
    *to = v_first_block(fs, "/f2") + V_FILE / UBJ_BS;
    assert_int_equal(*to - *from, 2 * V_FILE / UBJ_BS);
    assert_ok(ubj_unmount(fs));
    return d;
}

/* v_big_write -- write 6 MB to /big: its result (bytes or -errno). */
static ssize_t v_big_write(struct ubj_fs *fs)
{
    uint8_t *buf = malloc(V_BIG);
    memset(buf, 0x5a, V_BIG);
    ssize_t n = tpath_put(fs, "/big", buf, V_BIG);
    free(buf);
    return n;
}

/*
 * test_bitmap_data_free -- the outside report: the blocks of /f1 and /f2
 * marked free (valid checksum), then a 6 MB write.  Fails on fd8c42e: the
 * mount was read-write, the write took the blocks and both files changed.
 */
static void test_bitmap_data_free(void **state)
{
    (void)state;
    uint64_t from, to;
    struct ubj_fs *fs;
    struct ubj_bdev *d = v_victims(&from, &to);
    v_bmap_clear(d, from, to);
    int rc = ubj_test_mount(d, 0, &fs);
    (void)v_big_write(fs);
    v_same(fs, "/f1", 11);
    v_same(fs, "/f2", 12);
    v_degraded(d, fs, rc, "block bitmap");
    v_umount(fs);
    v_fsck(d, "in use but marked free");
}

/*
 * test_bitmap_meta_free -- the inode table's blocks marked free.  Fails
 * on fd8c42e: mounted read-write without a word (the allocator never
 * hands out metadata, but the map is corrupt and says nothing).
 */
static void test_bitmap_meta_free(void **state)
{
    (void)state;
    struct ubj_bdev *d = v_one_file();
    struct ubj_super sb = v_sb(d);
    v_bmap_clear(d, sb.it_start, sb.it_start + 3);
    v_ro_round(d, 0, "metadata", "/f1", 11, "in use but marked free");
}

/*
 * test_free_count -- a cleanly unmounted image whose superblock counts
 * 100 more free blocks than the bitmap holds (and, second round, one
 * fewer free inode).  Fails on fd8c42e: mounted read-write, statfs
 * reporting the superblock's number.
 */
static void test_free_count(void **state)
{
    (void)state;
    for (int inodes = 0; inodes < 2; inodes++) {
        struct ubj_bdev *d = v_one_file();
        struct ubj_super sb = v_sb(d);
        if (inodes)
            sb.free_inodes -= 1;
        else
            sb.free_blocks += 100;
        v_sb_put(d, &sb);
        v_ro_round(d, 0, "free", "/f1", 11, "free counts");
    }
}

/* v_hidden -- /f1 and /f2's blocks marked free on a crashed image (the
 * mount recounts: nothing disagrees). */
static struct ubj_bdev *v_hidden(void)
{
    uint64_t from, to;
    struct ubj_fs *fs;
    struct ubj_bdev *d0 = v_victims(&from, &to), *d;
    assert_ok(ubj_test_mount(d0, 0, &fs));
    d = v_crash(fs, d0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(d0);
    v_bmap_clear(d, from, to);
    return d;
}

/*
 * test_bitmap_cached -- the counts agree (a crash: recounted), but the
 * files were read since mount: the allocator refuses to hand out a block
 * the cache holds.  Fails on fd8c42e: the write overwrote both files.
 */
static void test_bitmap_cached(void **state)
{
    (void)state;
    struct ubj_fs *fs;
    struct ubj_bdev *d = v_hidden();
    assert_ok(ubj_test_mount(d, 0, &fs));
    assert_int_equal(fs->error, 0);                 /* nothing seen yet */
    v_same(fs, "/f1", 11);
    v_same(fs, "/f2", 12);
    ssize_t n = v_big_write(fs);
    fprintf(stderr, "  6 MB write -> %zd: %s\n", n, ubj_errormsg());
    assert_rc(n, -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "block bitmap"));
    v_same(fs, "/f1", 11);
    v_same(fs, "/f2", 12);
    assert_rc(tpath_create(fs, "/probe", 0644, NULL), -EROFS);
    v_umount(fs);
    v_fsck(d, "in use but marked free");
}

/*
 * test_scrub -- what the cheap checks cannot see: the same hidden bitmap
 * damage with cold files, and a still-named orphan on a crashed image.
 * Without scrub both mount read-write (documented in GUARANTEES.md);
 * with UBJ_MOUNT_SCRUB the mount runs fsck's passes first and comes up
 * read-only.  Fails on fd8c42e: UBJ_MOUNT_SCRUB did not exist (-EINVAL).
 */
static void test_scrub(void **state)
{
    (void)state;
    struct ubj_fs *fs;
    struct ubj_bdev *d = v_hidden(), *c;
    assert_ok(ubj_bdev_ram_create(d->nblocks, &c));
    assert_ok(timg_copy(d, c));
    assert_ok(ubj_test_mount(c, 0, &fs));           /* the cheap checks: silent */
    assert_int_equal(fs->error, 0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(c);
    int rc = ubj_test_mount(d, UBJ_MOUNT_SCRUB, &fs);
    assert_non_null(strstr(ubj_errormsg(), "marked free"));   /* mount's own */
    v_degraded(d, fs, rc, "scrub");
    (void)v_big_write(fs);
    v_same(fs, "/f1", 11);
    v_same(fs, "/f2", 12);
    v_umount(fs);
    v_fsck(d, "in use but marked free");

    /* a named file with nlink 0 on the orphan list of a crashed image */
    ubj_ino_t a;
    d = v_named_orphan(true, &a);
    v_ro_round(d, UBJ_MOUNT_SCRUB, "orphan list", "/a", 1, "orphan list");
}

/* test_scrub_clean -- scrub of a healthy image: read-write, no error. */
static void test_scrub_clean(void **state)
{
    (void)state;
    uint64_t from, to;
    struct ubj_fs *fs;
    struct ubj_bdev *d = v_victims(&from, &to);
    assert_ok(ubj_test_mount(d, UBJ_MOUNT_SCRUB, &fs));
    assert_int_equal(fs->error, 0);
    assert_int_equal(v_big_write(fs), 0);
    v_same(fs, "/f1", 11);
    ubj_test_fs_done(d, fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orphan_named),
        cmocka_unit_test(test_orphan_dir),
        cmocka_unit_test(test_orphan_cycle),
        cmocka_unit_test(test_orphan_valid),
        cmocka_unit_test(test_extent_own_block),
        cmocka_unit_test(test_bitmap_data_free),
        cmocka_unit_test(test_bitmap_meta_free),
        cmocka_unit_test(test_free_count),
        cmocka_unit_test(test_bitmap_cached),
        cmocka_unit_test(test_scrub),
        cmocka_unit_test(test_scrub_clean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
