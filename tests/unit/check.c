/*
 * tests/unit/check.c -- ubj_check (src/fs/check.c): a rich image checks
 * clean; each corruption, made by editing raw blocks (resealed where the
 * test wants a logical error rather than a checksum error), is detected
 * with the right code and line, left alone without UBJ_CHECK_REPAIR,
 * repaired with it (a second run is clean and the image mounts and reads
 * back); operational errors (bad magic, truncated image, EIO); and 300
 * rounds of random byte flips in metadata blocks, which must give a
 * valid code, and after a repair a clean, mountable image.
 */
#include "testutil.h"
#include "fs/fs.h"
#include "txn/registry.h"    /* on-disk mode codes */

#define T_BLOCKS 2048u
#define T_FUZZ_BLOCKS 8192u

/* ---- capturing the report ------------------------------------------------ */

struct tlines {
    int n;
    size_t len;
    char text[1 << 16];     /* lines joined with '\n' (truncated) */
};

/* t_report -- collect one line (and print it when FSCK_VERBOSE is set). */
static void t_report(void *ctx, const char *line)
{
    struct tlines *l = ctx;
    size_t n = strlen(line);
    l->n++;
    if (getenv("FSCK_VERBOSE"))
        fprintf(stderr, "  fsck: %s\n", line);
    if (l->len + n + 2 < sizeof l->text) {
        memcpy(l->text + l->len, line, n);
        l->len += n;
        l->text[l->len++] = '\n';
        l->text[l->len] = '\0';
    }
}

/* t_check -- ubj_check into a fresh collector. */
static int t_check(struct ubj_bdev *dev, unsigned flags, struct tlines *l)
{
    memset(l, 0, sizeof *l);
    return ubj_check(dev, flags, t_report, l);
}

/* t_has -- whether some reported line contains `s`. */
static bool t_has(const struct tlines *l, const char *s)
{
    return strstr(l->text, s) != NULL;
}

/* t_only_notes -- every reported line is a note. */
static bool t_only_notes(const struct tlines *l)
{
    int notes = 0;
    for (const char *p = l->text; (p = strstr(p, "note: ")) != NULL; p++)
        notes++;
    return notes == l->n;
}

#define assert_line(l, s) do { if (!t_has((l), (s))) \
    fail_msg("no fsck line contains \"%s\"; got:\n%s", (s), (l)->text); } while (0)

/* ---- raw block access ------------------------------------------------------ */

/* t_rd -- read block b. */
static void t_rd(struct ubj_bdev *d, uint64_t b, void *buf)
{
    assert_int_equal(ubj_bdev_read(d, b, 1, buf), 0);
}

/* t_wr -- write block b. */
static void t_wr(struct ubj_bdev *d, uint64_t b, const void *buf)
{
    assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
}

/* t_sb -- the superblock. */
static struct ubj_super t_sb(struct ubj_bdev *d)
{
    static uint8_t buf[UBJ_BS];
    struct ubj_super sb;
    t_rd(d, 0, buf);
    memcpy(&sb, buf, sizeof sb);
    return sb;
}

/* t_reseal -- recompute a metadata block's crc (its magic kept). */
static void t_reseal(struct ubj_bdev *d, uint8_t *buf, uint64_t blk)
{
    struct ubj_super sb = t_sb(d);
    struct ubj_blkhdr h;
    memcpy(&h, buf, sizeof h);
    fs_block_seal(ubj_crc32c(~0u, sb.uuid, 16), buf, h.magic, blk);
}

/* t_iblk -- inode-table block and byte offset of inode ino. */
static uint64_t t_iblk(struct ubj_bdev *d, ubj_ino_t ino, size_t *off)
{
    struct ubj_super sb = t_sb(d);
    *off = UBJ_INODE_SIZE * (1 + ino % UBJ_INODES_PER_BLOCK);
    return sb.it_start + ino / UBJ_INODES_PER_BLOCK;
}

/* t_iget -- a copy of inode ino. */
static struct ubj_inode t_iget(struct ubj_bdev *d, ubj_ino_t ino)
{
    uint8_t buf[UBJ_BS];
    struct ubj_inode ip;
    size_t off;
    t_rd(d, t_iblk(d, ino, &off), buf);
    memcpy(&ip, buf + off, sizeof ip);
    return ip;
}

/* t_iput -- store inode ino; `seal` recomputes the block's crc. */
static void t_iput(struct ubj_bdev *d, ubj_ino_t ino, const struct ubj_inode *ip,
                   bool seal)
{
    uint8_t buf[UBJ_BS];
    size_t off;
    uint64_t blk = t_iblk(d, ino, &off);
    t_rd(d, blk, buf);
    if (tzero_check(buf, sizeof buf) == sizeof buf) {   /* a lazy block */
        struct ubj_blkhdr h = { .magic = UBJ_MAGIC_INODES, .blkno = blk };
        memcpy(buf, &h, sizeof h);
    }
    memcpy(buf + off, ip, sizeof *ip);
    if (seal)
        t_reseal(d, buf, blk);
    t_wr(d, blk, buf);
}

/* t_bit -- set (val 1) or clear bit `bit` of the bitmap starting at
 * block `start`, resealing the block. */
static void t_bit(struct ubj_bdev *d, uint64_t start, uint64_t bit, int val)
{
    uint8_t buf[UBJ_BS];
    uint64_t blk = start + bit / UBJ_BITMAP_BITS, b = bit % UBJ_BITMAP_BITS;
    t_rd(d, blk, buf);
    uint8_t *p = buf + sizeof(struct ubj_blkhdr) + b / 8;
    *p = (uint8_t)(val ? *p | (1u << (b % 8)) : *p & ~(1u << (b % 8)));
    t_reseal(d, buf, blk);
    t_wr(d, blk, buf);
}

/* t_writes -- write requests the device has seen. */
static uint64_t t_writes(struct ubj_bdev *d)
{
    struct ubj_bdev_stats s;
    ubj_bdev_stats_get(d, &s);
    return s.writes;
}

/* ---- images ------------------------------------------------------------------ */

/* t_fill -- write `nblk` blocks of byte `c` at block `at` of path. */
static void t_fill(struct ubj_fs *fs, const char *path, uint64_t at, unsigned nblk,
                   int c)
{
    static uint8_t buf[UBJ_BS];
    memset(buf, c, sizeof buf);
    for (unsigned i = 0; i < nblk; i++)
        assert_rc(tpath_write(fs, path, buf, sizeof buf, (off_t)((at + i) * UBJ_BS)),
                  UBJ_BS);
}

/* t_populate -- files, a sparse file, hard link, directories, short and
 * long symlinks, a fragmented file (extent tree of depth 1). */
static void t_populate(struct ubj_fs *fs)
{
    char target[301];
    memset(target, 't', 300);
    target[300] = '\0';
    assert_ok(tpath_create(fs, "/a", 0644, NULL));
    t_fill(fs, "/a", 0, 1, 'A');
    assert_ok(tpath_create(fs, "/b", 0644, NULL));
    t_fill(fs, "/b", 0, 1, 'B');
    assert_ok(tpath_create(fs, "/big", 0644, NULL));
    t_fill(fs, "/big", 0, 3, 'G');
    assert_ok(tpath_create(fs, "/sparse", 0644, NULL));
    t_fill(fs, "/sparse", 100, 1, 'S');
    assert_ok(tpath_create(fs, "/empty", 0644, NULL));
    assert_ok(tpath_link(fs, "/a", "/hard"));
    assert_ok(tpath_mkdir(fs, "/d1", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/d1/d2", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/d3", 0755, NULL));
    assert_ok(tpath_create(fs, "/d1/f", 0600, NULL));
    t_fill(fs, "/d1/f", 0, 2, 'F');
    assert_ok(tpath_symlink(fs, "a", "/sl"));
    assert_ok(tpath_symlink(fs, target, "/ll"));
    assert_ok(tpath_create(fs, "/frag", 0644, NULL));
    for (unsigned i = 0; i < 40; i++)
        t_fill(fs, "/frag", 2 * i, 1, 'a' + (int)(i % 26));
    struct ubj_stat st;                             /* extended attributes */
    assert_ok(tpath_stat(fs, "/b", &st));
    assert_ok(ubj_setxattr(fs, st.ino, "user.color", "blue", 4, 0));
    assert_ok(ubj_setxattr(fs, st.ino, "trusted.k", "v", 1, 0));
    assert_ok(tpath_stat(fs, "/d1", &st));
    assert_ok(ubj_setxattr(fs, st.ino, "user.dir", "yes", 3, 0));
    assert_ok(tpath_stat(fs, "/ll", &st));
    assert_ok(ubj_setxattr(fs, st.ino, "security.x", "s", 1, 0));
    for (unsigned i = 0; i < 20; i++) {             /* a second inode block */
        char path[32];
        snprintf(path, sizeof path, "/d3/n%02u", i);
        assert_ok(tpath_create(fs, path, 0644, NULL));
    }
}

/* t_small -- a formatted, populated, unmounted RAM image. */
static struct ubj_bdev *t_small(void)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_test_fs_new(T_BLOCKS, &dev, &fs);
    t_populate(fs);
    assert_ok(ubj_unmount(fs));
    return dev;
}

/* t_ino -- inode number of path on an unmounted image (mounts briefly). */
static ubj_ino_t t_ino(struct ubj_bdev *dev, const char *path)
{
    struct ubj_fs *fs;
    assert_ok(ubj_test_mount(dev, 0, &fs));
    ubj_ino_t ino = tpath_ino(fs, path);
    assert_ok(ubj_unmount(fs));
    assert_true(ino != 0);
    return ino;
}

/* t_content_ok -- mount, the populated files read back, unmount. */
static void t_content_ok(struct ubj_bdev *dev, bool frag)
{
    struct ubj_fs *fs;
    uint8_t buf[UBJ_BS];
    char link[512];
    struct ubj_stat st;
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_rc(tpath_read(fs, "/a", buf, sizeof buf, 0), UBJ_BS);
    assert_int_equal(buf[0], 'A');
    assert_int_equal(buf[UBJ_BS - 1], 'A');
    assert_rc(tpath_read(fs, "/big", buf, sizeof buf, 2 * UBJ_BS), UBJ_BS);
    assert_int_equal(buf[17], 'G');
    assert_rc(tpath_read(fs, "/sparse", buf, sizeof buf, 100 * UBJ_BS), UBJ_BS);
    assert_int_equal(buf[5], 'S');
    assert_ok(ubj_path_lookup(fs, "/ll", UBJ_PATH_NOFOLLOW, &st));
    assert_rc(ubj_readlink(fs, st.ino, link, sizeof link), 300);
    assert_int_equal(link[299], 't');
    for (unsigned i = 0; frag && i < 40; i++) {
        assert_rc(tpath_read(fs, "/frag", buf, sizeof buf, (off_t)(2 * i * UBJ_BS)),
                  UBJ_BS);
        assert_int_equal(buf[100], 'a' + (int)(i % 26));
    }
    assert_ok(ubj_unmount(fs));
}

/* t_repair_cycle -- the damaged image: without repair UNCORRECTED and
 * untouched; with repair REPAIRED; then CLEAN with no line; mountable. */
static void t_repair_cycle(struct ubj_bdev *dev, struct tlines *l, const char *expect,
                           const char *also)
{
    uint64_t w0 = t_writes(dev);
    assert_int_equal(t_check(dev, 0, l), UBJ_CHECK_UNCORRECTED);
    assert_line(l, expect);
    if (also)
        assert_line(l, also);
    assert_int_equal(t_writes(dev), w0);            /* -n never writes */
    assert_int_equal(t_check(dev, UBJ_CHECK_REPAIR, l), UBJ_CHECK_REPAIRED);
    assert_line(l, expect);
    assert_line(l, "[fixed]");
    assert_true(t_writes(dev) > w0);
    assert_int_equal(t_check(dev, 0, l), UBJ_CHECK_CLEAN);
    if (l->n != 0)
        fail_msg("after the repair:\n%s", l->text);
}

static struct ubj_bdev *t_fuzz_image(void);

/* ---- clean images ------------------------------------------------------------ */

/* test_fresh -- a new image is clean; so is a repair run, which writes nothing. */
static void test_fresh(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct tlines l;
    ubj_test_fs_new(256, &dev, &fs);
    assert_ok(ubj_unmount(fs));
    assert_int_equal(t_check(dev, 0, &l), UBJ_CHECK_CLEAN);
    assert_int_equal(l.n, 0);
    uint64_t w0 = t_writes(dev);
    assert_int_equal(t_check(dev, UBJ_CHECK_REPAIR, &l), UBJ_CHECK_CLEAN);
    assert_int_equal(l.n, 0);
    assert_int_equal(t_writes(dev), w0);
    ubj_bdev_destroy(dev);
}

/* test_rich_clean -- files, links, symlinks, sparse and fragmented files
 * and a directory of 5000 long names (a B+tree of depth >= 2). */
static void test_rich_clean(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct tlines l;
    char name[256];
    ubj_test_fs_new_inodes(16384, 8192, &dev, &fs);
    t_populate(fs);
    struct ubj_stat st;
    assert_ok(tpath_mkdir(fs, "/huge", 0755, &st));
    for (unsigned i = 0; i < 5000; i++) {
        int n = snprintf(name, sizeof name, "entry-%05u-", i);
        memset(name + n, 'x', 200 - (size_t)n);
        name[200] = '\0';
        assert_ok(ubj_create(fs, st.ino, name, 0644, NULL, NULL));
    }
    assert_ok(ubj_unmount(fs));
    struct ubj_inode ip = t_iget(dev, st.ino);
    assert_true(ip.i_data.dir.depth >= 2);
    assert_int_equal(ip.i_data.dir.entries, 5000);
    assert_int_equal(t_check(dev, 0, &l), UBJ_CHECK_CLEAN);
    if (l.n != 0)
        fail_msg("clean image reported:\n%s", l.text);

    /* a checksum error in one leaf: the 5000-name tree is rebuilt whole */
    uint8_t buf[UBJ_BS];
    uint64_t blk = ip.i_data.dir.root;
    for (unsigned lvl = ip.i_data.dir.depth; lvl > 0; lvl--) {
        t_rd(dev, blk, buf);
        memcpy(&blk, buf + UBJ_DIR_REC_OFF + 16 + 8, 8);   /* second child */
    }
    t_rd(dev, blk, buf);
    buf[UBJ_BS - 1] ^= 0x5a;                                /* past `used` */
    t_wr(dev, blk, buf);
    t_repair_cycle(dev, &l, "bad checksum", NULL);
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_int_equal(tdir_count(fs, st.ino), 5000);
    for (unsigned i = 0; i < 5000; i += 7) {
        int n = snprintf(name, sizeof name, "entry-%05u-", i);
        memset(name + n, 'x', 200 - (size_t)n);
        name[200] = '\0';
        struct ubj_stat cs;
        assert_ok(ubj_lookup(fs, st.ino, name, &cs));
    }
    assert_ok(ubj_create(fs, st.ino, "after-repair", 0644, NULL, NULL));
    ubj_test_fs_done(dev, fs);
}

/* test_small_clean -- the corruption tests' base image is clean. */
static void test_small_clean(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    assert_int_equal(t_check(dev, 0, &l), UBJ_CHECK_CLEAN);
    if (l.n != 0)
        fail_msg("clean image reported:\n%s", l.text);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* ---- logical corruptions (resealed) ------------------------------------------- */

/* test_bitmap_cleared -- an in-use block marked free. */
static void test_bitmap_cleared(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    struct ubj_inode ip = t_iget(dev, t_ino(dev, "/a"));
    t_bit(dev, t_sb(dev).bb_start, ip.i_data.ext.e[0].pblk, 0);
    t_repair_cycle(dev, &l, "in use but marked free", NULL);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_bitmap_set -- a free block marked in use. */
static void test_bitmap_set(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    t_bit(dev, t_sb(dev).bb_start, T_BLOCKS - 3, 1);
    t_repair_cycle(dev, &l, "free but marked in use", NULL);
    struct ubj_super sb = t_sb(dev);
    uint8_t buf[UBJ_BS];
    t_rd(dev, sb.bb_start, buf);
    assert_int_equal((buf[16 + (T_BLOCKS - 3) / 8] >> ((T_BLOCKS - 3) % 8)) & 1, 0);
    ubj_bdev_destroy(dev);
}

/* test_inode_bitmap -- an in-use inode marked free. */
static void test_inode_bitmap(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    t_bit(dev, t_sb(dev).ib_start, t_ino(dev, "/b"), 0);
    t_repair_cycle(dev, &l, "inode bitmap", NULL);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_link_count -- a file's and a directory's nlink. */
static void test_link_count(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t a = t_ino(dev, "/a"), d1 = t_ino(dev, "/d1");
    struct ubj_inode ip = t_iget(dev, a);
    assert_int_equal(ip.nlink, 2);                  /* /a and /hard */
    ip.nlink = 5;
    t_iput(dev, a, &ip, true);
    ip = t_iget(dev, d1);
    assert_int_equal(ip.nlink, 3);                  /* ., d1, d2/.. */
    ip.nlink = 7;
    t_iput(dev, d1, &ip, true);
    t_repair_cycle(dev, &l, "link count 5, should be 2", NULL);
    assert_int_equal(t_iget(dev, a).nlink, 2);
    assert_int_equal(t_iget(dev, d1).nlink, 3);
    ubj_bdev_destroy(dev);
}

/* test_entry_to_free -- a name whose inode is free: the name goes. */
static void test_entry_to_free(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t e = t_ino(dev, "/empty");
    struct ubj_inode zero;
    memset(&zero, 0, sizeof zero);
    t_iput(dev, e, &zero, true);
    t_repair_cycle(dev, &l, "which is free: remove it", NULL);
    struct ubj_fs *fs;
    struct ubj_stat st;
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_rc(tpath_stat(fs, "/empty", &st), -ENOENT);
    assert_ok(ubj_unmount(fs));
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_shared_block -- two files map the same block: the second gets a copy. */
static void test_shared_block(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t a = t_ino(dev, "/a"), b = t_ino(dev, "/b");
    assert_true(a < b);
    struct ubj_inode ia = t_iget(dev, a), ib = t_iget(dev, b);
    ib.i_data.ext.e[0].pblk = ia.i_data.ext.e[0].pblk;
    t_iput(dev, b, &ib, true);
    t_repair_cycle(dev, &l, "used twice", NULL);
    ib = t_iget(dev, b);
    assert_true(ib.i_data.ext.e[0].pblk != ia.i_data.ext.e[0].pblk);
    struct ubj_fs *fs;
    uint8_t buf[UBJ_BS];
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_rc(tpath_read(fs, "/b", buf, sizeof buf, 0), UBJ_BS);
    assert_int_equal(buf[0], 'A');                  /* a copy of the shared one */
    assert_ok(ubj_unmount(fs));
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_wrong_size -- a file shorter than its written blocks. */
static void test_wrong_size(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t g = t_ino(dev, "/big");
    struct ubj_inode ip = t_iget(dev, g);
    assert_int_equal(ip.size, 3 * UBJ_BS);
    ip.size = 100;
    t_iput(dev, g, &ip, true);
    t_repair_cycle(dev, &l, "size 100", NULL);
    assert_int_equal(t_iget(dev, g).size, 3 * UBJ_BS);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_blocks_count -- ip->blocks of a file. */
static void test_blocks_count(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t g = t_ino(dev, "/big");
    struct ubj_inode ip = t_iget(dev, g);
    assert_int_equal(ip.blocks, 3);
    ip.blocks = 9;
    t_iput(dev, g, &ip, true);
    t_repair_cycle(dev, &l, "9 blocks recorded, 3 counted", NULL);
    assert_int_equal(t_iget(dev, g).blocks, 3);
    ubj_bdev_destroy(dev);
}

/* test_dotdot -- a directory's parent field names the wrong directory. */
static void test_dotdot(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t d1 = t_ino(dev, "/d1"), d2 = t_ino(dev, "/d1/d2"), d3 = t_ino(dev, "/d3");
    struct ubj_inode ip = t_iget(dev, d2);
    assert_int_equal(ip.parent, d1);
    ip.parent = d3;
    t_iput(dev, d2, &ip, true);
    t_repair_cycle(dev, &l, "'..' is inode", NULL);
    assert_int_equal(t_iget(dev, d2).parent, d1);
    ubj_bdev_destroy(dev);
}

/* t_dir_insert -- add a record name -> ino to the root leaf of a depth-0
 * directory, keyed as dir.c would (resealed: a logical change). */
static void t_dir_insert(struct ubj_bdev *dev, ubj_ino_t dir, const char *name,
                         ubj_ino_t ino, unsigned type)
{
    struct ubj_super sb = t_sb(dev);
    struct ubj_inode ip = t_iget(dev, dir);
    uint8_t buf[UBJ_BS], rec[UBJ_DIR_LEAF_FIXED + 256];
    struct ubj_dir_node n;
    size_t len = strlen(name), rl = (UBJ_DIR_LEAF_FIXED + len + 7) & ~(size_t)7;
    uint64_t key = (ubj_name_hash(sb.hash_seed, name, len) >> 1) & ~(uint64_t)0xff;
    key = key < UBJ_DIR_FIRST_KEY ? UBJ_DIR_FIRST_KEY : key;
    assert_int_equal(ip.i_data.dir.depth, 0);
    t_rd(dev, ip.i_data.dir.root, buf);
    memcpy(&n, buf, sizeof n);
    assert_true(n.used + rl <= UBJ_DIR_SPACE);
    uint8_t *r = buf + UBJ_DIR_REC_OFF;
    unsigned off = 0;
    for (uint64_t k; off < n.used; off += (UBJ_DIR_LEAF_FIXED + r[off + 17] + 7u) & ~7u) {
        memcpy(&k, r + off, 8);
        if (k == key)
            key++;                                  /* the next free seq */
        else if (k > key)
            break;
    }
    memset(rec, 0, sizeof rec);
    memcpy(rec, &key, 8);
    memcpy(rec + 8, &ino, 8);
    rec[16] = (uint8_t)type;
    rec[17] = (uint8_t)len;
    memcpy(rec + UBJ_DIR_LEAF_FIXED, name, len);
    memmove(r + off + rl, r + off, n.used - off);
    memcpy(r + off, rec, rl);
    n.used = (uint16_t)(n.used + rl);
    n.nrec++;
    memcpy(buf, &n, sizeof n);
    t_reseal(dev, buf, ip.i_data.dir.root);
    t_wr(dev, ip.i_data.dir.root, buf);
    ip.i_data.dir.entries++;
    t_iput(dev, dir, &ip, true);
}

/* test_dir_two_names -- a directory named in / and in /d3, its '..' naming
 * /d3: the name nearer the root is kept (keeping '..' would make /d1 and
 * everything below it unreachable), the other removed, '..' fixed. */
static void test_dir_two_names(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t d1 = t_ino(dev, "/d1"), d3 = t_ino(dev, "/d3");
    t_dir_insert(dev, d3, "alias", d1, DT_DIR);
    struct ubj_inode ip = t_iget(dev, d1);
    ip.parent = d3;
    t_iput(dev, d1, &ip, true);
    t_repair_cycle(dev, &l, "is a second name of directory", "'..' is inode");
    assert_int_equal(t_iget(dev, d1).parent, UBJ_ROOT_INO);
    struct ubj_fs *fs;
    struct ubj_stat st;
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_ok(tpath_stat(fs, "/d1/f", &st));
    assert_ok(tpath_stat(fs, "/d1/d2", &st));
    assert_rc(tpath_stat(fs, "/d3/alias", &st), -ENOENT);
    assert_int_equal(tdir_count(fs, d3), 20);
    ubj_test_fs_done(dev, fs);
}

/* test_file_extra_name -- a raw extra name of a file: its nlink is low. */
static void test_file_extra_name(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t b = t_ino(dev, "/b"), d3 = t_ino(dev, "/d3");
    t_dir_insert(dev, d3, "b-too", b, DT_REG);
    t_repair_cycle(dev, &l, "link count 1, should be 2", NULL);
    assert_int_equal(t_iget(dev, b).nlink, 2);
    ubj_bdev_destroy(dev);
}

/* test_unreachable -- an in-use inode no directory names is freed. */
static void test_unreachable(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    struct ubj_super sb = t_sb(dev);
    ubj_ino_t e = t_ino(dev, "/empty"), lost = sb.ninodes - 1;
    struct ubj_inode ip = t_iget(dev, e);
    t_iput(dev, lost, &ip, true);                    /* a copy nobody names */
    t_bit(dev, sb.ib_start, lost, 1);
    uint8_t buf[UBJ_BS];
    t_rd(dev, 0, buf);
    struct ubj_super *s = (struct ubj_super *)(void *)buf;
    s->free_inodes--;
    t_reseal(dev, buf, 0);
    t_wr(dev, 0, buf);
    t_repair_cycle(dev, &l, "not reachable from the root", NULL);
    assert_int_equal(t_iget(dev, lost).mode, 0);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* t_classes -- check dev (no repair): corruption found or not; without it,
 * the leaks and what they hold as given, every problem line a "leak: "
 * one; then repaired and clean.  Frees dev. */
static void t_classes(struct ubj_bdev *dev, unsigned long leaks, bool corrupt,
                      uint64_t lblocks, uint64_t linodes)
{
    struct tlines l;
    struct ubj_check_result res;
    memset(&l, 0, sizeof l);
    assert_int_equal(ubj_check_ex(dev, 0, t_report, &l, &res), UBJ_CHECK_UNCORRECTED);
    if ((!corrupt && res.leaks != leaks) || (res.corrupt != 0) != corrupt ||
        res.problems != res.leaks + res.corrupt || res.unfixed != res.problems ||
        (!corrupt && (res.leaked_blocks != lblocks || res.leaked_inodes != linodes)))
        fail_msg("leaks %lu (want %lu) corrupt %lu (want %s) blocks %llu inodes %llu "
                 "(want %llu %llu):\n%s", res.leaks, leaks, res.corrupt,
                 corrupt ? "> 0" : "0", (unsigned long long)res.leaked_blocks,
                 (unsigned long long)res.leaked_inodes, (unsigned long long)lblocks,
                 (unsigned long long)linodes, l.text);
    int lines = 0;
    for (const char *p = l.text; *p; p = strchr(p, '\n') + 1)
        lines += strncmp(p, "leak: ", 6) == 0;
    if (!corrupt && (unsigned long)lines != leaks)
        fail_msg("%d 'leak: ' lines for %lu leaks:\n%s", lines, leaks, l.text);
    assert_int_equal(ubj_check_ex(dev, UBJ_CHECK_REPAIR, t_report, &l, &res),
                     UBJ_CHECK_REPAIRED);
    assert_int_equal(res.unfixed, 0);
    assert_int_equal(ubj_check_ex(dev, 0, t_report, &l, &res), UBJ_CHECK_CLEAN);
    assert_int_equal(res.problems, 0);
    ubj_bdev_destroy(dev);
}

/* t_free_counts -- add d to the superblock's free block count. */
static void t_free_counts(struct ubj_bdev *dev, int64_t d)
{
    uint8_t buf[UBJ_BS];
    t_rd(dev, 0, buf);
    struct ubj_super *s = (struct ubj_super *)(void *)buf;
    s->free_blocks = (uint64_t)((int64_t)s->free_blocks + d);
    t_reseal(dev, buf, 0);
    t_wr(dev, 0, buf);
}

/* test_leak_classes -- what loses only space is a leak (its own line
 * prefix and count: ubj_check_ex), everything else corruption: a free
 * block or inode marked in use, an unreachable inode, a link count above
 * the names, directory counters above what it holds and a wrong free
 * count are leaks; an in-use block marked free, a name to a free inode, a
 * link count or directory counter below are not. */
static void test_leak_classes(void **state)
{
    (void)state;
    struct ubj_bdev *dev = t_small();
    t_bit(dev, t_sb(dev).bb_start, T_BLOCKS - 3, 1);          /* block leak */
    t_bit(dev, t_sb(dev).bb_start, T_BLOCKS - 7, 1);
    t_classes(dev, 2, false, 2, 0);
    dev = t_small();
    t_bit(dev, t_sb(dev).ib_start, t_sb(dev).ninodes - 2, 1); /* inode leak */
    t_classes(dev, 1, false, 0, 1);
    dev = t_small();                                  /* a leaked inode + blocks */
    struct ubj_super sb = t_sb(dev);
    ubj_ino_t lost = sb.ninodes - 1;
    struct ubj_inode ip = t_iget(dev, t_ino(dev, "/a"));
    ip.nlink = 1;
    t_iput(dev, lost, &ip, true);        /* shares /a's block: corruption */
    t_bit(dev, sb.ib_start, lost, 1);
    t_classes(dev, 0, true, 0, 0);
    dev = t_small();
    sb = t_sb(dev);
    ip = t_iget(dev, t_ino(dev, "/empty"));
    t_iput(dev, lost, &ip, true);        /* names nothing, holds nothing */
    t_bit(dev, sb.ib_start, lost, 1);
    uint8_t buf[UBJ_BS];
    t_rd(dev, 0, buf);
    ((struct ubj_super *)(void *)buf)->free_inodes--;
    t_reseal(dev, buf, 0);
    t_wr(dev, 0, buf);
    t_classes(dev, 1, false, 0, 1);
    dev = t_small();                                  /* link count above */
    ubj_ino_t a = t_ino(dev, "/a");
    ip = t_iget(dev, a);
    ip.nlink = 3;
    t_iput(dev, a, &ip, true);
    t_classes(dev, 1, false, 0, 0);
    for (int d = 1; d >= -1; d -= 2) {                /* directory counters */
        dev = t_small();
        ubj_ino_t d3 = t_ino(dev, "/d3");
        ip = t_iget(dev, d3);
        ip.i_data.dir.entries = (uint64_t)((int64_t)ip.i_data.dir.entries + d);
        t_iput(dev, d3, &ip, true);
        t_classes(dev, 1, d < 0, 0, 0);               /* above: a leak */
    }
    dev = t_small();                                  /* a stale free count */
    t_free_counts(dev, -5);
    t_classes(dev, 1, false, 0, 0);
    dev = t_small();                                  /* link count below */
    t_dir_insert(dev, t_ino(dev, "/d3"), "b-too", t_ino(dev, "/b"), DT_REG);
    t_classes(dev, 0, true, 0, 0);
    dev = t_small();                                  /* a used block marked free */
    ip = t_iget(dev, t_ino(dev, "/a"));
    t_bit(dev, t_sb(dev).bb_start, ip.i_data.ext.e[0].pblk, 0);
    t_classes(dev, 0, true, 0, 0);
    dev = t_small();                                  /* a name to a free inode */
    struct ubj_inode zero;
    memset(&zero, 0, sizeof zero);
    t_iput(dev, t_ino(dev, "/empty"), &zero, true);
    t_classes(dev, 0, true, 0, 0);
}

/* test_orphans -- a crash with an open, unlinked file: notes, not problems;
 * the repair frees it as the next mount would. */
static void test_orphans(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev, *crash;
    struct ubj_fs *fs;
    struct ubj_stat st;
    uint8_t buf[UBJ_BS];
    ubj_test_fs_new(T_BLOCKS, &dev, &fs);
    assert_ok(tpath_create(fs, "/gone", 0644, &st));
    t_fill(fs, "/gone", 0, 4, 'O');
    assert_ok(ubj_open(fs, st.ino, O_RDWR));
    assert_ok(tpath_unlink(fs, "/gone"));
    assert_ok(ubj_sync(fs));
    assert_ok(ubj_bdev_ram_create(T_BLOCKS, &crash));  /* the image at the crash */
    for (uint64_t b = 0; b < T_BLOCKS; b++) {
        t_rd(dev, b, buf);
        t_wr(crash, b, buf);
    }
    assert_ok(ubj_release(fs, st.ino));
    ubj_test_fs_done(dev, fs);

    assert_int_equal(t_sb(crash).orphan_head, st.ino);
    assert_int_equal(t_check(crash, 0, &l), UBJ_CHECK_CLEAN);
    assert_int_equal(l.n, 2);
    assert_line(&l, "note: the file system was not cleanly unmounted");
    assert_line(&l, "note: 1 open-but-unlinked inode on the orphan list");
    assert_int_equal(t_check(crash, UBJ_CHECK_REPAIR, &l), UBJ_CHECK_CLEAN);
    assert_line(&l, "freeing them now");
    assert_int_equal(t_sb(crash).orphan_head, 0);
    assert_int_equal(t_iget(crash, st.ino).mode, 0);
    assert_int_equal(t_check(crash, 0, &l), UBJ_CHECK_CLEAN);
    assert_int_equal(l.n, 1);                       /* still: not unmounted */
    assert_ok(ubj_test_mount(crash, 0, &fs));
    ubj_test_fs_done(crash, fs);
}

/* test_ubj_crashed -- a mode-ubj image left MOUNTED: a check notes that
 * its NVM region may hold newer blocks; a repair refuses to touch it. */
static void test_ubj_crashed(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    uint8_t buf[UBJ_BS];
    t_rd(dev, 0, buf);
    struct ubj_super *sb = (struct ubj_super *)(void *)buf;
    sb->mode = UBJ_FMT_MODE_UBJ;
    sb->state = UBJ_STATE_MOUNTED;
    t_reseal(dev, buf, 0);
    t_wr(dev, 0, buf);
    uint64_t w0 = t_writes(dev);
    assert_int_equal(t_check(dev, 0, &l), UBJ_CHECK_CLEAN);
    assert_int_equal(l.n, 2);
    assert_line(&l, "note: mode ubj");
    assert_int_equal(t_check(dev, UBJ_CHECK_REPAIR, &l), UBJ_CHECK_OPERROR);
    assert_line(&l, "before repairing");
    assert_int_equal(t_writes(dev), w0);
    ubj_bdev_destroy(dev);
}

/* test_orphan_loop -- an orphan list that loops is cut. */
static void test_orphan_loop(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t e = t_ino(dev, "/empty");
    struct ubj_inode ip = t_iget(dev, e);
    ip.orphan_next = e;                             /* points at itself */
    t_iput(dev, e, &ip, true);
    t_repair_cycle(dev, &l, "orphan link", NULL);
    assert_int_equal(t_iget(dev, e).orphan_next, 0);
    ubj_bdev_destroy(dev);
}

/* ---- checksum errors ------------------------------------------------------------ */

/* test_inode_crc -- a flipped byte in an inode block: mount refuses, fsck
 * reports the checksum, checks the inodes one by one and reseals. */
static void test_inode_crc(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_fs *fs;
    struct ubj_bdev *dev = t_small();
    uint8_t buf[UBJ_BS];
    size_t off;
    uint64_t blk = t_iblk(dev, UBJ_ROOT_INO, &off);
    t_rd(dev, blk, buf);
    buf[off + offsetof(struct ubj_inode, atime)] ^= 0x01;  /* not resealed */
    t_wr(dev, blk, buf);
    assert_rc(ubj_test_mount(dev, 0, &fs), -EUCLEAN);
    t_repair_cycle(dev, &l, "bad checksum", NULL);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_inode_garbage -- an inode block with a bad magic: its inodes are
 * cleared, their names dropped, the rest of the tree kept. */
static void test_inode_garbage(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    ubj_ino_t f = t_ino(dev, "/d3/n19");
    size_t off, root_off;
    uint64_t blk = t_iblk(dev, f, &off);
    /* the layout of t_small() keeps the root elsewhere (it was a skip,
     * which never fired: a layout change must not empty the test) */
    assert_int_not_equal(blk, t_iblk(dev, UBJ_ROOT_INO, &root_off));
    uint8_t buf[UBJ_BS];
    t_rd(dev, blk, buf);
    buf[0] ^= 0xff;
    t_wr(dev, blk, buf);
    t_repair_cycle(dev, &l, "bad magic", "which is free: remove it");
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_extent_node_crc -- a fragmented file's extent node with a bad crc:
 * the tree is rebuilt and every block reads back. */
static void test_extent_node_crc(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    struct ubj_inode ip = t_iget(dev, t_ino(dev, "/frag"));
    assert_int_equal(ip.i_data.ext.hdr.depth, 1);
    struct ubj_ext_idx x;
    memcpy(&x, &ip.i_data.ext.e[0], sizeof x);
    uint8_t buf[UBJ_BS];
    t_rd(dev, x.child, buf);
    buf[UBJ_BS - 7] ^= 0x10;                        /* unused space */
    t_wr(dev, x.child, buf);
    t_repair_cycle(dev, &l, "extent node", NULL);
    t_content_ok(dev, true);
    ubj_bdev_destroy(dev);
}

/* test_dir_node_bad -- a directory node with a wrong owner (resealed):
 * dropped, its names lost, their inodes freed; the image is consistent. */
static void test_dir_node_bad(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    struct ubj_inode ip = t_iget(dev, t_ino(dev, "/d1"));
    uint8_t buf[UBJ_BS];
    t_rd(dev, ip.i_data.dir.root, buf);
    struct ubj_dir_node n;
    memcpy(&n, buf, sizeof n);
    n.owner = 12345;
    memcpy(buf, &n, sizeof n);
    t_reseal(dev, buf, ip.i_data.dir.root);
    t_wr(dev, ip.i_data.dir.root, buf);
    t_repair_cycle(dev, &l, "belongs to another directory",
                   "not reachable from the root");
    struct ubj_fs *fs;
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_int_equal(tdir_count(fs, tpath_ino(fs, "/d1")), 0);
    assert_ok(tpath_create(fs, "/d1/new", 0644, NULL));
    ubj_test_fs_done(dev, fs);
}

/* test_xattr -- an xattr block with a bad checksum is resealed; one
 * owned by another inode (resealed) is dropped with its attributes. */
static void test_xattr(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_fs *fs;
    char v[16];
    struct ubj_bdev *dev = t_small();
    ubj_ino_t b = t_ino(dev, "/b"), d1 = t_ino(dev, "/d1");
    struct ubj_inode ip = t_iget(dev, b);
    assert_true(ip.xattr_blk != 0);
    assert_int_equal(ip.blocks, 2);                 /* data + xattr block */
    uint8_t buf[UBJ_BS];
    t_rd(dev, ip.xattr_blk, buf);
    buf[UBJ_BS - 1] ^= 1;
    t_wr(dev, ip.xattr_blk, buf);
    t_repair_cycle(dev, &l, "xattr block", NULL);
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_rc(ubj_getxattr(fs, b, "user.color", v, sizeof v), 4);
    assert_ok(ubj_unmount(fs));

    ip = t_iget(dev, d1);
    t_rd(dev, ip.xattr_blk, buf);
    struct ubj_xattr_node n;
    memcpy(&n, buf, sizeof n);
    n.owner = b;
    memcpy(buf, &n, sizeof n);
    t_reseal(dev, buf, ip.xattr_blk);
    t_wr(dev, ip.xattr_blk, buf);
    t_repair_cycle(dev, &l, "owned by another inode", "found 2, 1, 1, 4096");
    ip = t_iget(dev, d1);
    assert_int_equal(ip.xattr_blk, 0);
    assert_int_equal(ip.blocks, ip.i_data.dir.nodes);
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_rc(ubj_getxattr(fs, d1, "user.dir", v, sizeof v), -ENODATA);
    assert_rc(ubj_getxattr(fs, b, "trusted.k", v, sizeof v), 1);
    ubj_test_fs_done(dev, fs);
}

/* test_root_missing -- the root inode freed: a new empty root is made;
 * everything else is unreachable and freed (v1 has no lost+found). */
static void test_root_missing(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_inode zero;
    struct ubj_fs *fs;
    struct ubj_bdev *dev = t_small();
    memset(&zero, 0, sizeof zero);
    t_iput(dev, UBJ_ROOT_INO, &zero, true);
    assert_true(ubj_test_mount(dev, 0, &fs) < 0);
    t_repair_cycle(dev, &l, "root directory missing", "not reachable from the root");
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_int_equal(tdir_count(fs, UBJ_ROOT_INO), 0);
    assert_int_equal(t_free_inodes(fs), t_sb(dev).ninodes - 2);
    assert_ok(tpath_mkdir(fs, "/again", 0755, NULL));
    ubj_test_fs_done(dev, fs);
}

/* test_extent_deep_rebuild -- a leaf of a depth-2 extent tree (1900
 * extents) with a bad checksum: the whole tree is rebuilt and every block
 * of the file reads back. */
static void test_extent_deep_rebuild(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_fs *fs;
    struct ubj_stat st;
    uint8_t buf[UBJ_BS];
    struct ubj_bdev *dev = t_fuzz_image();
    ubj_ino_t ino = t_ino(dev, "/deep");
    struct ubj_inode ip = t_iget(dev, ino);
    struct ubj_ext_idx x;
    struct ubj_ext_hdr h = ip.i_data.ext.hdr;
    memcpy(&x, &ip.i_data.ext.e[h.entries - 1], sizeof x);  /* last index node */
    t_rd(dev, x.child, buf);
    memcpy(&h, buf + 16, sizeof h);
    assert_int_equal(h.depth, 1);
    assert_true(h.entries >= 2);
    memcpy(&x, buf + 24 + 16, sizeof x);            /* its second leaf */
    t_rd(dev, x.child, buf);
    buf[UBJ_BS - 3] ^= 0x40;
    t_wr(dev, x.child, buf);
    t_repair_cycle(dev, &l, "bad checksum", NULL);
    assert_int_equal(t_iget(dev, ino).i_data.ext.hdr.depth, 2);
    assert_ok(ubj_test_mount(dev, 0, &fs));
    assert_ok(tpath_stat(fs, "/deep", &st));
    assert_int_equal(st.blocks, (uint64_t)t_iget(dev, ino).blocks * 8);
    for (unsigned b = 0; b < 3799; b++) {          /* size: 3799 blocks */
        assert_rc(ubj_pread(fs, ino, buf, UBJ_BS, (off_t)b * UBJ_BS), UBJ_BS);
        assert_int_equal(buf[b % UBJ_BS], b % 2 ? 0 : 'D');
    }
    assert_rc(ubj_pwrite(fs, ino, buf, UBJ_BS, (off_t)1 * UBJ_BS), UBJ_BS);
    ubj_test_fs_done(dev, fs);
}

/* ---- operational errors -------------------------------------------------------- */

/* test_bad_magic -- not a ubjfs image: OPERROR, nothing written. */
static void test_bad_magic(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    uint8_t buf[UBJ_BS];
    t_rd(dev, 0, buf);
    buf[0] ^= 0x20;
    t_wr(dev, 0, buf);
    uint64_t w0 = t_writes(dev);
    assert_int_equal(t_check(dev, 0, &l), UBJ_CHECK_OPERROR);
    assert_line(&l, "not a ubjfs image (bad magic");
    assert_int_equal(t_check(dev, UBJ_CHECK_REPAIR, &l), UBJ_CHECK_OPERROR);
    assert_int_equal(l.n, 1);
    assert_int_equal(t_writes(dev), w0);
    ubj_bdev_destroy(dev);

    assert_ok(ubj_bdev_ram_create(300, &dev));       /* all zero: no file system */
    assert_int_equal(t_check(dev, 0, &l), UBJ_CHECK_OPERROR);
    assert_line(&l, "not a ubjfs image");
    ubj_bdev_destroy(dev);
}

/* test_super_crc -- a superblock with a bad checksum cannot be trusted. */
static void test_super_crc(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small();
    uint8_t buf[UBJ_BS];
    t_rd(dev, 0, buf);
    buf[offsetof(struct ubj_super, free_blocks)] ^= 1;
    t_wr(dev, 0, buf);
    assert_int_equal(t_check(dev, UBJ_CHECK_REPAIR, &l), UBJ_CHECK_OPERROR);
    assert_line(&l, "no backup superblock");
    ubj_bdev_destroy(dev);
}

/* test_truncated -- the device is smaller than the image. */
static void test_truncated(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small(), *view;
    assert_ok(tdev_view_create(dev, T_BLOCKS - 100, &view));
    assert_int_equal(t_check(view, 0, &l), UBJ_CHECK_OPERROR);
    assert_line(&l, "truncated");
    ubj_bdev_destroy(view);
}

/* test_eio -- a read error is an operational error, not a crash. */
static void test_eio(void **state)
{
    (void)state;
    struct tlines l;
    struct ubj_bdev *dev = t_small(), *fd;
    assert_ok(ubj_bdev_fault_create(dev, &fd));
    for (uint64_t nth = 1; nth < 40; nth += 3) {
        assert_ok(ubj_bdev_fault_disarm(fd));
        assert_ok(ubj_bdev_fault_arm(fd, UBJ_FAULT_READ, nth, 1, 0));
        assert_int_equal(t_check(fd, UBJ_CHECK_REPAIR, &l), UBJ_CHECK_OPERROR);
        assert_line(&l, "cannot read");
    }
    assert_ok(ubj_bdev_fault_disarm(fd));
    assert_int_equal(t_check(fd, 0, &l), UBJ_CHECK_CLEAN);
    ubj_bdev_destroy(fd);
}

/* ---- random corruption ----------------------------------------------------------- */

/* t_meta_blocks -- every metadata block of an image: [0, data_start) and
 * the tree nodes (found by their magic and own block number). */
static uint64_t *t_meta_blocks(struct ubj_bdev *dev, size_t *n)
{
    struct ubj_super sb = t_sb(dev);
    uint64_t *v = malloc(sb.nblocks * sizeof *v);
    uint8_t buf[UBJ_BS];
    assert_non_null(v);
    *n = 0;
    for (uint64_t b = 0; b < sb.nblocks; b++) {
        struct ubj_blkhdr h;
        if (b >= sb.data_start) {
            t_rd(dev, b, buf);
            memcpy(&h, buf, sizeof h);
            bool node = h.magic == UBJ_MAGIC_EXTENT || h.magic == UBJ_MAGIC_DIR ||
                        h.magic == UBJ_MAGIC_XATTR;
            if (h.blkno != b || !node)
                continue;
        } else if (b >= sb.it_start) {
            t_rd(dev, b, buf);
            memcpy(&h, buf, sizeof h);
            if (h.magic == 0)
                continue;                           /* a lazy (zero) block */
        }
        v[(*n)++] = b;
    }
    return v;
}

/* t_fuzz_block -- damage block blk: bit flips, or plausible values (an
 * in-range block or inode number, a small count) over aligned fields;
 * often resealed, so that only the logic can catch it. */
static void t_fuzz_block(struct ubj_bdev *dev, uint64_t blk, struct tprng *r)
{
    uint8_t buf[UBJ_BS];
    t_rd(dev, blk, buf);
    unsigned how = (unsigned)tprng_below(r, 3), n = 1 + (unsigned)tprng_below(r, 6);
    for (unsigned i = 0; i < n; i++) {
        size_t off = tprng_below(r, 4) == 0 ? tprng_below(r, 64) : tprng_below(r, UBJ_BS);
        if (how == 0) {
            buf[off] ^= (uint8_t)(1u << tprng_below(r, 8));
        } else if (how == 1) {
            uint64_t v = tprng_below(r, T_FUZZ_BLOCKS);
            off &= ~(size_t)7;
            memcpy(buf + off, &v, 8);
        } else {
            uint16_t v = (uint16_t)tprng_below(r, 300);
            off &= ~(size_t)1;
            memcpy(buf + off, &v, 2);
        }
    }
    if (tprng_below(r, 4) != 0)
        t_reseal(dev, buf, blk);                    /* a logical error */
    t_wr(dev, blk, buf);
}

/* t_walk -- read everything under directory ino (names, attributes,
 * file contents up to 1 MiB, symlink targets, xattr lists); returns the
 * first error or 0.  `path` names ino for the message. */
static int t_walk(struct ubj_fs *fs, ubj_ino_t ino, unsigned depth, char *why,
                  size_t whysz)
{
    struct tdirent *ents;
    size_t n;
    static uint8_t buf[1 << 16];
    int rc = tdir_list(fs, ino, &ents, &n);
    if (rc < 0) {
        snprintf(why, whysz, "readdir %llu: %d %s", (unsigned long long)ino, rc,
                 ubj_errormsg());
        return rc;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct ubj_stat st;
        if (strcmp(ents[i].name, ".") == 0 || strcmp(ents[i].name, "..") == 0)
            continue;
        rc = ubj_lookup(fs, ino, ents[i].name, &st);
        if (rc == 0 && st.ino != ents[i].ino)
            rc = -EBADE;
        if (rc == 0 && ubj_listxattr(fs, st.ino, NULL, 0) < 0)
            rc = (int)ubj_listxattr(fs, st.ino, NULL, 0);
        if (rc == 0 && S_ISDIR(st.mode) && depth < 64)
            rc = t_walk(fs, st.ino, depth + 1, why, whysz);
        else if (rc == 0 && S_ISLNK(st.mode) && ubj_readlink(fs, st.ino, (char *)buf,
                                                              sizeof buf) < 0)
            rc = (int)ubj_readlink(fs, st.ino, (char *)buf, sizeof buf);
        for (uint64_t off = 0; rc == 0 && S_ISREG(st.mode) && off < st.size &&
             off < (1u << 20); off += sizeof buf) {
            ssize_t got = ubj_pread(fs, st.ino, buf, sizeof buf, (off_t)off);
            rc = got < 0 ? (int)got : 0;
        }
        if (rc < 0 && why[0] == '\0')
            snprintf(why, whysz, "'%s' (inode %llu): %d %s", ents[i].name,
                     (unsigned long long)ents[i].ino, rc, ubj_errormsg());
    }
    free(ents);
    return rc;
}

/* t_usable -- mount, walk everything, make a file, unmount: the library
 * must agree with a clean verdict.  0, or fails the test. */
static void t_usable(struct ubj_bdev *dev, unsigned round, uint64_t blk, const char *when)
{
    struct ubj_fs *fs;
    char why[512] = "";
    int rc = ubj_test_mount(dev, 0, &fs);
    if (rc != 0)
        fail_msg("round %u (block %llu) %s: does not mount: %s", round,
                 (unsigned long long)blk, when, ubj_errormsg());
    rc = t_walk(fs, UBJ_ROOT_INO, 0, why, sizeof why);
    if (rc == 0)
        rc = tpath_create(fs, "/fuzz-new", 0644, NULL);
    if (rc == 0)
        t_fill(fs, "/fuzz-new", 0, 2, 'z');
    int urc = ubj_unmount(fs);
    if (rc != 0 || urc != 0)
        fail_msg("round %u (block %llu) %s: the library disagrees: %s (create %d, "
                 "unmount %d)", round, (unsigned long long)blk, when, why, rc, urc);
}

/* t_fuzz_one -- flip bytes of one metadata block of a copy of `img` (a
 * copy-on-write overlay over it: a round copies only the blocks it
 * writes, not the 32 MiB image); check; repair; the repaired image must
 * be clean and mountable. */
static void t_fuzz_one(struct ubj_bdev *img, const uint64_t *meta, size_t nmeta,
                       struct tprng *r, unsigned round, unsigned hist[2][9])
{
    struct ubj_bdev *dev;
    struct tlines l;
    assert_ok(ubj_bdev_cow_create(img, UBJ_COW_BORROW, &dev));
    unsigned nblk = tprng_below(r, 4) == 0 ? 2 + (unsigned)tprng_below(r, 2) : 1;
    uint64_t blk = 0;
    for (unsigned k = 0; k < nblk; k++) {
        blk = meta[tprng_below(r, nmeta)];
        t_fuzz_block(dev, blk, r);
    }
    int rc = t_check(dev, 0, &l);
    assert_true(rc == UBJ_CHECK_CLEAN || rc == UBJ_CHECK_UNCORRECTED ||
                rc == UBJ_CHECK_OPERROR);
    assert_true(rc == UBJ_CHECK_CLEAN || l.n > 0);
    hist[0][rc]++;
    if (rc == UBJ_CHECK_CLEAN) {                    /* nothing to repair */
        t_usable(dev, round, blk, "found clean");
        rc = t_check(dev, 0, &l);
        if (rc != UBJ_CHECK_CLEAN || !t_only_notes(&l))
            fail_msg("round %u (block %llu): after use rc %d:\n%s", round,
                     (unsigned long long)blk, rc, l.text);
        ubj_bdev_destroy(dev);
        hist[1][0]++;
        return;
    }
    rc = t_check(dev, UBJ_CHECK_REPAIR, &l);
    hist[1][rc]++;
    assert_true(rc == UBJ_CHECK_CLEAN || rc == UBJ_CHECK_REPAIRED ||
                rc == UBJ_CHECK_UNCORRECTED || rc == UBJ_CHECK_OPERROR);
    if (rc == UBJ_CHECK_CLEAN || rc == UBJ_CHECK_REPAIRED) {
        int rc2 = t_check(dev, 0, &l);
        if (rc2 != UBJ_CHECK_CLEAN || !t_only_notes(&l))
            fail_msg("round %u (block %llu): after repair rc %d:\n%s", round,
                     (unsigned long long)blk, rc2, l.text);
        t_usable(dev, round, blk, "after repair");
        rc2 = t_check(dev, 0, &l);
        if (rc2 != UBJ_CHECK_CLEAN || l.n != 0)
            fail_msg("round %u (block %llu): after repair and use rc %d:\n%s", round,
                     (unsigned long long)blk, rc2, l.text);
    }
    ubj_bdev_destroy(dev);
}

/* t_fuzz_image -- the small image's contents plus a directory of 400
 * names (an index over leaves) and a file of 1900 extents (depth 2).  A
 * fixed uuid fixes the directory hash seed: the same image every run, so
 * that UBJ_FUZZ_SEED reproduces a round. */
static struct ubj_bdev *t_fuzz_image(void)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    struct ubj_stat st;
    char name[128];
    static uint8_t buf[UBJ_BS];
    struct ubj_format_opts fo = { .flags = UBJ_FORMAT_ZEROED,
                                  .uuid = { 0xf5, 0xc4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 } };
    assert_ok(ubj_bdev_ram_create(T_FUZZ_BLOCKS, &dev));
    assert_ok(ubj_format(dev, &fo));
    assert_ok(ubj_test_mount(dev, 0, &fs));
    t_populate(fs);
    assert_ok(tpath_mkdir(fs, "/many", 0755, &st));
    for (unsigned i = 0; i < 400; i++) {
        int n = snprintf(name, sizeof name, "m%u-", i);
        memset(name + n, 'q', i % 90);
        name[(size_t)n + i % 90] = '\0';
        assert_ok(ubj_create(fs, st.ino, name, 0644, NULL, NULL));
    }
    assert_ok(tpath_create(fs, "/deep", 0644, &st));
    memset(buf, 'D', sizeof buf);
    for (unsigned i = 0; i < 1900; i++)
        assert_rc(ubj_pwrite(fs, st.ino, buf, UBJ_BS, (off_t)(2 * i) * UBJ_BS), UBJ_BS);
    assert_ok(ubj_unmount(fs));
    assert_int_equal(t_iget(dev, st.ino).i_data.ext.hdr.depth, 2);
    return dev;
}

/* test_fuzz -- 300 rounds of random flips in random metadata blocks. */
static void test_fuzz(void **state)
{
    (void)state;
    struct tprng r;
    struct ubj_bdev *dev = t_fuzz_image();
    size_t nmeta;
    uint64_t *meta = t_meta_blocks(dev, &nmeta);
    assert_true(nmeta > 30);
    tprng_seed(&r, tprng_env_seed("UBJ_FUZZ_SEED", 0xf5c4));
    const char *env = getenv("UBJ_FUZZ_ROUNDS");
    unsigned rounds = env ? (unsigned)atoi(env) : 300u;
    unsigned hist[2][9] = { { 0 } };
    for (unsigned i = 0; i < rounds; i++)
        t_fuzz_one(dev, meta, nmeta, &r, i, hist);
    print_message("fuzz: %u rounds over %zu metadata blocks; check: %u clean, %u "
                  "uncorrected, %u operror; repair: %u clean, %u repaired, %u "
                  "uncorrected, %u operror\n", rounds, nmeta, hist[0][0], hist[0][4],
                  hist[0][8], hist[1][0], hist[1][1], hist[1][4], hist[1][8]);
    ubj_bdev_destroy(dev);
    free(meta);
}

/* main -- run every test. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh),
        cmocka_unit_test(test_small_clean),
        cmocka_unit_test(test_rich_clean),
        cmocka_unit_test(test_bitmap_cleared),
        cmocka_unit_test(test_bitmap_set),
        cmocka_unit_test(test_inode_bitmap),
        cmocka_unit_test(test_link_count),
        cmocka_unit_test(test_entry_to_free),
        cmocka_unit_test(test_shared_block),
        cmocka_unit_test(test_wrong_size),
        cmocka_unit_test(test_blocks_count),
        cmocka_unit_test(test_dotdot),
        cmocka_unit_test(test_dir_two_names),
        cmocka_unit_test(test_file_extra_name),
        cmocka_unit_test(test_unreachable),
        cmocka_unit_test(test_orphans),
        cmocka_unit_test(test_leak_classes),
        cmocka_unit_test(test_orphan_loop),
        cmocka_unit_test(test_ubj_crashed),
        cmocka_unit_test(test_inode_crc),
        cmocka_unit_test(test_inode_garbage),
        cmocka_unit_test(test_extent_node_crc),
        cmocka_unit_test(test_dir_node_bad),
        cmocka_unit_test(test_xattr),
        cmocka_unit_test(test_root_missing),
        cmocka_unit_test(test_extent_deep_rebuild),
        cmocka_unit_test(test_bad_magic),
        cmocka_unit_test(test_super_crc),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_eio),
        cmocka_unit_test(test_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
