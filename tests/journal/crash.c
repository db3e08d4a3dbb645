/*
 * tests/journal/crash.c -- simulated power loss at every flush epoch of a
 * workload in each journal mode (issue 4, item 6; BRIEF section 8).
 *
 * A deterministic random workload (create, sector-granular writes,
 * truncates, renames over existing names, hard links, unlinks, fsync,
 * fdatasync, sync) runs on an image behind the write-recording device
 * (src/dev/record.c), with a 64-block journal and a small cache so that
 * commits by size, wrap-around, checkpoints and reclaim all happen.  A
 * model follows every operation: which file each name holds, its size,
 * link count, and for every 512-byte sector the history of what was
 * written there.  Every written sector carries a header naming (file,
 * sector, generation), so a sector read back is either zero, a valid
 * sector of some file, or garbage.
 *
 * For each epoch k (the writes between flush k and flush k + 1) crash
 * images are built: only what was durable; everything; the epoch's first
 * write dropped; its last-but-one write torn to one block; and random
 * mixes (each write dropped, whole, or torn at 512-byte sectors).  Each:
 *   1. ubj_check (replaying the journal in memory) is CLEAN;
 *   2. mount (recovery) shows the model's state after some operation i
 *      with i >= the last operation whose fsync/sync had returned before
 *      flush k: every name, size, link count (renames atomic, nothing of
 *      an uncommitted transaction), and every sector:
 *        journal    exactly the state-i contents;
 *        ordered    the state-i contents or something written there later
 *                   (an in-place overwrite may land before its commit) --
 *                   never another file's sector or an older version
 *                   (no stale data);
 *        writeback  as ordered for sectors written before the last
 *                   acknowledged sync, anything for later ones;
 *   3. after unmount ubj_check is CLEAN.
 * Then the deliberately broken variants (src/txn/journal.h: the flush
 * before the commit block left out; the flush before a checkpoint moves
 * the tail left out) must each be caught by the same exploration.
 *
 * Environment: UBJ_JCRASH_SEED, UBJ_JCRASH_OPS (default 150),
 * UBJ_JCRASH_STRIDE (epochs, default 1), UBJ_JCRASH_RANDOM (random images
 * per epoch, default 3), UBJ_JCRASH_BLOCKS (image size, default 512),
 * UBJ_JCRASH_ONLY (one mode), UBJ_JCRASH_DEBUG (every state tried).
 */
#include "jtest.h"

#define CR_BLOCKS 512u           /* 2 MiB image: the allocator wraps, blocks are reused */
#define CR_JBLOCKS 64u
#define CR_BUFS 96u
#define CR_SECT 512u
#define CR_MAXSECT 96u           /* files up to 48 KiB */
#define CR_NAMES 12
#define CR_FILES 256
#define CR_MAXOPS 600
#define CR_MAXHIST 48
#define CR_MAGIC 0x524f5443534a5455ull   /* "UTJSCTOR" */

static const char *const cr_names[CR_NAMES] = {
    "/f0", "/f1", "/f2", "/f3", "/f4", "/f5", "/f6", "/f7",
    "/d/g0", "/d/g1", "/d/g2", "/d/g3",
};

enum cr_op { CR_CREATE, CR_WRITE, CR_TRUNC, CR_RENAME, CR_LINK, CR_UNLINK,
             CR_FSYNC, CR_FDATASYNC, CR_SYNC };

/* One change of one sector: after op `op`, it holds generation `gen`. */
struct cr_change {
    uint32_t op, gen;
};

struct cr_file {
    uint32_t nhist[CR_MAXSECT];
    struct cr_change hist[CR_MAXSECT][CR_MAXHIST];
};

/* What the model says after one operation. */
struct cr_snap {
    int16_t name[CR_NAMES];          /* file id, -1 = free */
    uint32_t size[CR_FILES];         /* bytes */
    uint8_t nlink[CR_FILES];
    uint32_t durable_flushes;        /* for fsync/sync ops: flushes done at
                                        return; UINT32_MAX otherwise */
};

struct cr {
    const char *mode;
    uint64_t seed;
    unsigned nops;
    uint64_t nblocks;                /* image size */
    struct cr_file *files;           /* [CR_FILES] histories */
    struct cr_snap *snap;            /* [nops + 1]: 0 = before the first op */
    uint32_t nfiles, gen;
    struct ubj_bdev *rec;            /* the recorder over the image */
    /* results */
    unsigned images, failures;
    char why[256];
    char first[400];                 /* the first failure, described */
};

/* ---- sector patterns ------------------------------------------------------------ */

/* cr_mix -- splitmix64 step. */
static uint64_t cr_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* cr_sector -- the 512 bytes of generation gen of sector s of file fid. */
static void cr_sector(uint8_t *p, uint32_t fid, uint32_t s, uint32_t gen)
{
    uint64_t magic = CR_MAGIC;
    memcpy(p, &magic, 8);
    memcpy(p + 8, &fid, 4);
    memcpy(p + 12, &s, 4);
    memcpy(p + 16, &gen, 4);
    uint32_t c = ubj_crc32c(0, p, 20);
    memcpy(p + 20, &c, 4);
    for (unsigned i = 24; i < CR_SECT; i += 8) {
        uint64_t v = cr_mix(((uint64_t)fid << 40) ^ ((uint64_t)s << 24) ^ gen ^ i);
        memcpy(p + i, &v, 8);
    }
}

/* cr_decode -- 0: zeros; 1: a valid sector (*fid, *s, *gen); -1 garbage. */
static int cr_decode(const uint8_t *p, uint32_t *fid, uint32_t *s, uint32_t *gen)
{
    if (tzero_check(p, CR_SECT) == CR_SECT)
        return 0;
    uint8_t want[CR_SECT];
    memcpy(fid, p + 8, 4);
    memcpy(s, p + 12, 4);
    memcpy(gen, p + 16, 4);
    cr_sector(want, *fid, *s, *gen);
    return memcmp(want, p, CR_SECT) == 0 ? 1 : -1;
}

/* ---- the model ------------------------------------------------------------------ */

/* cr_gen_at -- generation of sector s of fid after op i (0: zero). */
static uint32_t cr_gen_at(const struct cr *c, uint32_t fid, uint32_t s, unsigned i,
                          uint32_t *changed_at)
{
    const struct cr_file *f = &c->files[fid];
    uint32_t g = 0, at = 0;
    for (uint32_t k = 0; k < f->nhist[s] && f->hist[s][k].op <= i; k++) {
        g = f->hist[s][k].gen;
        at = f->hist[s][k].op;
    }
    if (changed_at)
        *changed_at = at;
    return g;
}

/* cr_later -- whether sector s of fid was given generation g after op i. */
static bool cr_later(const struct cr *c, uint32_t fid, uint32_t s, unsigned i,
                     uint32_t g)
{
    const struct cr_file *f = &c->files[fid];
    for (uint32_t k = 0; k < f->nhist[s]; k++)
        if (f->hist[s][k].op > i && f->hist[s][k].gen == g)
            return true;
    return false;
}

/* cr_set -- after op, sector s of fid holds generation g. */
static void cr_set(struct cr *c, uint32_t fid, uint32_t s, unsigned op, uint32_t g)
{
    struct cr_file *f = &c->files[fid];
    uint32_t n = f->nhist[s];
    if (n > 0 && f->hist[s][n - 1].op == op) {
        f->hist[s][n - 1].gen = g;
        return;
    }
    assert_true(n < CR_MAXHIST);
    f->hist[s][n] = (struct cr_change){ .op = op, .gen = g };
    f->nhist[s]++;
}

/* ---- the workload ---------------------------------------------------------------- */

/* cr_pick_name -- a random name slot that is used (want_used) or free. */
static int cr_pick_name(struct tprng *r, const struct cr_snap *sn, bool want_used)
{
    int start = (int)tprng_below(r, CR_NAMES);
    for (int k = 0; k < CR_NAMES; k++) {
        int i = (start + k) % CR_NAMES;
        if ((sn->name[i] >= 0) == want_used)
            return i;
    }
    return -1;
}

/* cr_write_op -- write sectors [s0, s0 + n) of name slot i: new
 * generations in the model, the bytes in the file system. */
static void cr_write_op(struct cr *c, struct ubj_fs *fs, struct cr_snap *sn,
                        int i, uint32_t s0, uint32_t n, unsigned op)
{
    uint32_t fid = (uint32_t)sn->name[i];
    uint8_t *buf = malloc((size_t)n * CR_SECT);
    assert_non_null(buf);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t g = ++c->gen;
        cr_sector(buf + (size_t)k * CR_SECT, fid, s0 + k, g);
        cr_set(c, fid, s0 + k, op, g);
    }
    /* a hole between the old end and s0 reads as zeros: no change needed */
    assert_int_equal(tpath_write(fs, cr_names[i], buf, (size_t)n * CR_SECT,
                                 (off_t)s0 * CR_SECT), (ssize_t)n * CR_SECT);
    if ((s0 + n) * CR_SECT > sn->size[fid])
        sn->size[fid] = (s0 + n) * CR_SECT;
    free(buf);
}

/* cr_trunc_op -- truncate name slot i to `sectors` sectors. */
static void cr_trunc_op(struct cr *c, struct ubj_fs *fs, struct cr_snap *sn,
                        int i, uint32_t sectors, unsigned op)
{
    uint32_t fid = (uint32_t)sn->name[i];
    for (uint32_t s = sectors; s < sn->size[fid] / CR_SECT; s++)
        if (cr_gen_at(c, fid, s, op, NULL) != 0)
            cr_set(c, fid, s, op, 0);
    assert_ok(tpath_truncate(fs, cr_names[i], (uint64_t)sectors * CR_SECT));
    sn->size[fid] = sectors * CR_SECT;
}

/* cr_drop_name -- name slot i stops naming its file. */
static void cr_drop_name(struct cr_snap *sn, int i)
{
    int fid = sn->name[i];
    sn->name[i] = -1;
    if (fid >= 0)
        sn->nlink[fid]--;
}

/* cr_namespace_op -- create, rename, link, unlink. */
static void cr_namespace_op(struct cr *c, struct ubj_fs *fs, struct tprng *r,
                            struct cr_snap *sn, enum cr_op kind)
{
    int a = cr_pick_name(r, sn, true);
    int b = (int)tprng_below(r, CR_NAMES);
    if (kind == CR_CREATE || a < 0) {
        int f = cr_pick_name(r, sn, false);
        if (f < 0 || c->nfiles >= CR_FILES)
            return;
        assert_ok(tpath_create(fs, cr_names[f], 0644, NULL));
        sn->name[f] = (int16_t)c->nfiles++;
        sn->size[sn->name[f]] = 0;
        sn->nlink[sn->name[f]] = 1;
    } else if (kind == CR_RENAME) {
        if (a == b || sn->name[a] == sn->name[b])
            return;                      /* same inode: rename does nothing */
        assert_ok(tpath_rename(fs, cr_names[a], cr_names[b], 0));
        int fid = sn->name[a];
        cr_drop_name(sn, b);
        sn->name[b] = (int16_t)fid;
        sn->name[a] = -1;
    } else if (kind == CR_LINK) {
        if (sn->name[b] >= 0)
            return;
        assert_ok(tpath_link(fs, cr_names[a], cr_names[b]));
        sn->name[b] = sn->name[a];
        sn->nlink[sn->name[a]]++;
    } else {
        assert_ok(tpath_unlink(fs, cr_names[a]));
        cr_drop_name(sn, a);
    }
}

/* cr_one_op -- a random operation number `op` (1-based) on fs and the model. */
static void cr_one_op(struct cr *c, struct ubj_fs *fs, struct tprng *r, unsigned op)
{
    struct cr_snap *sn = &c->snap[op];
    *sn = c->snap[op - 1];
    sn->durable_flushes = UINT32_MAX;
    unsigned w = (unsigned)tprng_below(r, 100);
    enum cr_op kind = w < 36 ? CR_WRITE : w < 44 ? CR_CREATE : w < 51 ? CR_TRUNC :
                      w < 61 ? CR_RENAME : w < 64 ? CR_LINK : w < 71 ? CR_UNLINK :
                      w < 87 ? CR_FSYNC : w < 91 ? CR_FDATASYNC : CR_SYNC;
    int i = cr_pick_name(r, sn, true);
    if ((kind == CR_WRITE || kind == CR_TRUNC || kind == CR_FSYNC ||
         kind == CR_FDATASYNC) && i < 0)
        kind = CR_CREATE;
    if (kind == CR_WRITE) {
        uint32_t s0 = (uint32_t)tprng_below(r, CR_MAXSECT - 1);
        uint32_t n = 1 + (uint32_t)tprng_below(r, CR_MAXSECT - s0 < 24 ? CR_MAXSECT - s0 : 24);
        cr_write_op(c, fs, sn, i, s0, n, op);
    } else if (kind == CR_TRUNC) {
        uint32_t lim = sn->size[(uint32_t)sn->name[i]] / CR_SECT + 8;
        if (lim > CR_MAXSECT)
            lim = CR_MAXSECT;
        cr_trunc_op(c, fs, sn, i, (uint32_t)tprng_below(r, lim + 1), op);
    } else if (kind == CR_FSYNC || kind == CR_FDATASYNC) {
        assert_ok(ubj_fsync(fs, tpath_ino(fs, cr_names[i]), kind == CR_FDATASYNC));
        sn->durable_flushes = (uint32_t)ubj_bdev_record_flushes(c->rec);
    } else if (kind == CR_SYNC) {
        assert_ok(ubj_sync(fs));
        sn->durable_flushes = (uint32_t)ubj_bdev_record_flushes(c->rec);
    } else {
        cr_namespace_op(c, fs, r, sn, kind);
    }
}

/* cr_run -- the workload on a fresh image behind a recorder. */
static void cr_run(struct cr *c, unsigned fmt_flags)
{
    struct ubj_bdev *ram;
    struct ubj_fs *fs;
    assert_int_equal(ubj_bdev_ram_create(c->nblocks, &ram), 0);
    struct ubj_format_opts fo = { .mode = c->mode, .journal_blocks = CR_JBLOCKS,
                                  .flags = UBJ_FORMAT_ZEROED | fmt_flags };
    assert_ok(ubj_format(ram, &fo));
    assert_ok(jt_mount(ram, CR_BUFS, 0, &fs));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(ubj_unmount(fs));
    assert_int_equal(ubj_bdev_record_create(ram, &c->rec), 0);
    memset(&c->snap[0], 0, sizeof c->snap[0]);
    for (int i = 0; i < CR_NAMES; i++)
        c->snap[0].name[i] = -1;
    c->snap[0].durable_flushes = 0;
    assert_ok(jt_mount(c->rec, CR_BUFS, 0, &fs));
    struct tprng r;
    tprng_seed(&r, c->seed);
    for (unsigned op = 1; op <= c->nops; op++)
        cr_one_op(c, fs, &r, op);
    assert_ok(ubj_unmount(fs));
}

/* ---- checking a crash image ------------------------------------------------------ */

/* cr_acked -- the last op whose fsync/sync had returned within k flushes. */
static unsigned cr_acked(const struct cr *c, uint64_t k)
{
    unsigned acked = 0;
    for (unsigned i = 1; i <= c->nops; i++)
        if (c->snap[i].durable_flushes <= k)
            acked = i;
    return acked;
}

/* What the recovered image shows for one name. */
struct cr_seen {
    bool exists;
    ubj_ino_t ino;
    uint64_t size;
    uint32_t nlink;
};

/* cr_block_young -- writeback: some sector of the 4 KiB block holding
 * sector s was written after the last acknowledged sync, by op i at the
 * latest (its data may never have reached the block: anything goes). */
static bool cr_block_young(const struct cr *c, uint32_t fid, uint32_t s, unsigned i,
                           unsigned acked)
{
    uint32_t b0 = s / 8 * 8;
    for (uint32_t t = b0; t < b0 + 8 && t < CR_MAXSECT; t++) {
        const struct cr_file *f = &c->files[fid];
        for (uint32_t k = 0; k < f->nhist[t]; k++)
            if (f->hist[t][k].op > acked && f->hist[t][k].op <= i)
                return true;
    }
    return false;
}

/* cr_sector_ok -- sector s of file fid read back as (kind, vfid, vs, vgen)
 * is allowed in state i of mode c->mode. */
static bool cr_sector_ok(const struct cr *c, unsigned i, unsigned acked, uint32_t fid,
                         uint32_t s, int kind, uint32_t vfid, uint32_t vs, uint32_t vgen)
{
    uint32_t want = cr_gen_at(c, fid, s, i, NULL);
    uint32_t got = kind == 1 ? vgen : 0;
    bool valid = kind == 0 || (kind == 1 && vfid == fid && vs == s);
    if (valid && got == want)
        return true;
    if (strcmp(c->mode, UBJ_MODE_JOURNAL) == 0)
        return false;
    if (valid && cr_later(c, fid, s, i, got))
        return true;                      /* overwritten in place later */
    return strcmp(c->mode, UBJ_MODE_WRITEBACK) == 0 &&
           cr_block_young(c, fid, s, i, acked);
}

/* cr_content_ok -- every sector of the file named by slot n is allowed. */
static bool cr_content_ok(struct cr *c, struct ubj_fs *fs, unsigned i, unsigned acked,
                          int n, uint32_t size)
{
    uint32_t fid = (uint32_t)c->snap[i].name[n];
    uint8_t *buf = malloc(size + 1);
    assert_non_null(buf);
    bool ok = tpath_read(fs, cr_names[n], buf, size + 1, 0) == (ssize_t)size;
    for (uint32_t s = 0; ok && s < size / CR_SECT; s++) {
        uint32_t vfid = 0, vs = 0, vgen = 0;
        int kind = cr_decode(buf + (size_t)s * CR_SECT, &vfid, &vs, &vgen);
        if (!cr_sector_ok(c, i, acked, fid, s, kind, vfid, vs, vgen)) {
            snprintf(c->why, sizeof c->why, "state %u: %s sector %u: read %s "
                     "(file %u sector %u gen %u), expected gen %u", i,
                     cr_names[n], s, kind == 0 ? "zeros" : kind < 0 ? "garbage" : "data",
                     vfid, vs, vgen, cr_gen_at(c, fid, s, i, NULL));
            ok = false;
        }
    }
    free(buf);
    return ok;
}

/* cr_state_ok -- the recovered names, sizes, links and contents are the
 * model's state after op i. */
static bool cr_state_ok(struct cr *c, struct ubj_fs *fs, const struct cr_seen *seen,
                        unsigned i, unsigned acked)
{
    const struct cr_snap *sn = &c->snap[i];
    for (int n = 0; n < CR_NAMES; n++) {
        int fid = sn->name[n];
        if (seen[n].exists != (fid >= 0))
            return false;
        if (fid < 0)
            continue;
        if (seen[n].size != sn->size[fid] || seen[n].nlink != sn->nlink[fid])
            return false;
        for (int m = 0; m < n; m++)     /* hard links: same inode iff same file */
            if (seen[m].exists && (seen[m].ino == seen[n].ino) != (sn->name[m] == fid))
                return false;
    }
    for (int n = 0; n < CR_NAMES; n++) {
        bool first = true;
        for (int m = 0; m < n; m++)
            first = first && !(seen[m].exists && sn->name[m] == sn->name[n]);
        if (sn->name[n] >= 0 && first &&
            !cr_content_ok(c, fs, i, acked, n, sn->size[sn->name[n]]))
            return false;
    }
    return true;
}

/* cr_look -- what the mounted image shows for every name; false if a
 * directory holds a name the model does not know. */
static bool cr_look(struct ubj_fs *fs, struct cr_seen *seen)
{
    long in_root = 0, in_d = 0;
    for (int n = 0; n < CR_NAMES; n++) {
        struct ubj_stat st;
        seen[n] = (struct cr_seen){ 0 };
        if (tpath_stat(fs, cr_names[n], &st) == 0) {
            seen[n] = (struct cr_seen){ .exists = true, .ino = st.ino,
                                        .size = st.size, .nlink = st.nlink };
            if (n < 8)
                in_root++;
            else
                in_d++;
        }
    }
    return tdir_count(fs, UBJ_ROOT_INO) == in_root + 1 &&     /* + "/d" */
           tdir_count(fs, tpath_ino(fs, "/d")) == in_d;
}

/* cr_report -- ubj_check's lines: keep the first problem (not a note). */
static void cr_report(void *ctx, const char *line)
{
    struct cr *c = ctx;
    if (strncmp(line, "note: ", 6) != 0 && c->why[0] == '\0')
        snprintf(c->why, sizeof c->why, "fsck: %s", line);
}

/* cr_check_image -- fsck, recover, match a model state, fsck again.
 * true if every check passed (else c->why says what failed). */
static bool cr_check_image(struct cr *c, struct ubj_bdev *img, uint64_t k)
{
    c->images++;
    c->why[0] = '\0';
    int rc = ubj_check(img, 0, cr_report, c);
    if (rc != UBJ_CHECK_CLEAN) {
        if (c->why[0] == '\0')
            snprintf(c->why, sizeof c->why, "fsck before mount: %d", rc);
        return false;
    }
    struct ubj_fs *fs;
    rc = jt_mount(img, CR_BUFS, 0, &fs);
    if (rc < 0) {
        snprintf(c->why, sizeof c->why, "mount: %s", ubj_errormsg());
        return false;
    }
    struct cr_seen seen[CR_NAMES];
    unsigned acked = cr_acked(c, k);
    bool ok = cr_look(fs, seen);
    if (!ok)
        snprintf(c->why, sizeof c->why, "a directory holds unknown names");
    bool matched = false;
    for (unsigned i = c->nops + 1; ok && !matched && i-- > acked;) {
        matched = cr_state_ok(c, fs, seen, i, acked);
        if (getenv("UBJ_JCRASH_DEBUG") && c->why[0])
            fprintf(stderr, "    epoch %llu state %u: %s\n", (unsigned long long)k,
                    i, c->why);
        if (getenv("UBJ_JCRASH_DEBUG"))
            c->why[0] = '\0';
    }
    if (ok && !matched && c->why[0] == '\0')
        snprintf(c->why, sizeof c->why, "no state in [%u, %u] matches the names "
                 "and sizes", acked, c->nops);
    ok = ok && matched;
    rc = ubj_unmount(fs);
    if (ok && rc < 0)
        snprintf(c->why, sizeof c->why, "unmount: %s", ubj_errormsg());
    ok = ok && rc == 0;
    if (ok && (rc = ubj_check(img, 0, cr_report, c)) != UBJ_CHECK_CLEAN) {
        if (c->why[0] == '\0')
            snprintf(c->why, sizeof c->why, "fsck after unmount: %d", rc);
        ok = false;
    }
    return ok;
}

/* cr_image -- build the crash image of epoch k with `choice` and check it;
 * a failure is counted (and, unless `expect_fail`, fails the test). */
static void cr_image(struct cr *c, struct ubj_bdev *img, uint64_t k,
                     const struct ubj_rec_choice *choice, uint64_t n,
                     const char *what, bool expect_fail)
{
    if (expect_fail && c->failures > 0)
        return;
    assert_int_equal(ubj_bdev_record_crash(c->rec, k, choice, n, img), 0);
    if (cr_check_image(c, img, k))
        return;
    if (c->failures++ == 0)
        snprintf(c->first, sizeof c->first, "epoch %llu (%s): %s",
                 (unsigned long long)k, what, c->why);
    if (!expect_fail)
        fail_msg("mode %s seed %llu: crash in epoch %llu (%s): %s", c->mode,
                 (unsigned long long)c->seed, (unsigned long long)k, what, c->why);
}

/* cr_explore -- crash images of every (stride-th) epoch; returns when
 * done or, expecting failures, at the first one. */
static void cr_explore(struct cr *c, bool expect_fail)
{
    uint64_t stride = tprng_env_seed("UBJ_JCRASH_STRIDE", 1);
    uint64_t nrand = tprng_env_seed("UBJ_JCRASH_RANDOM", 3);
    uint64_t nf = ubj_bdev_record_flushes(c->rec);
    struct ubj_bdev *img;
    assert_int_equal(ubj_bdev_ram_create(c->nblocks, &img), 0);
    struct tprng r;
    tprng_seed(&r, c->seed ^ 0xc0ffee);
    for (uint64_t k = 0; k <= nf && !(expect_fail && c->failures); k += stride ? stride : 1) {
        uint64_t first, n;
        assert_int_equal(ubj_bdev_record_epoch(c->rec, k, &first, &n), 0);
        struct ubj_rec_choice *ch = calloc(n + 1, sizeof *ch);
        assert_non_null(ch);
        cr_image(c, img, k, NULL, 0, "durable only", expect_fail);
        for (uint64_t j = 0; j < n; j++)
            ch[j].keep = UBJ_REC_WHOLE;
        cr_image(c, img, k, ch, n, "everything", expect_fail);
        if (n >= 2) {
            ch[0].keep = UBJ_REC_DROP;
            cr_image(c, img, k, ch, n, "first write lost", expect_fail);
            ch[0].keep = UBJ_REC_WHOLE;
            ch[n - 2] = (struct ubj_rec_choice){ .keep = UBJ_REC_PREFIX, .sectors = 8 };
            cr_image(c, img, k, ch, n, "last-but-one write torn", expect_fail);
        }
        for (uint64_t t = 0; t < nrand; t++) {
            for (uint64_t j = 0; j < n; j++) {
                unsigned w = (unsigned)tprng_below(&r, 10);
                ch[j] = (struct ubj_rec_choice){
                    .keep = w < 3 ? UBJ_REC_DROP : w < 8 ? UBJ_REC_WHOLE :
                            w < 9 ? UBJ_REC_PREFIX : UBJ_REC_SECTORS,
                    .sectors = (uint32_t)tprng_below(&r, 16),
                    .seed = tprng_next(&r) };
            }
            cr_image(c, img, k, ch, n, "random mix", expect_fail);
        }
        free(ch);
    }
    ubj_bdev_destroy(img);
}

/* cr_new -- the state of one exploration. */
static struct cr *cr_new(const char *mode, uint64_t seed)
{
    struct cr *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->mode = mode;
    c->seed = seed;
    c->nops = (unsigned)tprng_env_seed("UBJ_JCRASH_OPS", 150);
    c->nblocks = tprng_env_seed("UBJ_JCRASH_BLOCKS", CR_BLOCKS);
    if (c->nops > CR_MAXOPS)
        c->nops = CR_MAXOPS;
    c->files = calloc(CR_FILES, sizeof *c->files);
    c->snap = calloc(c->nops + 1, sizeof *c->snap);
    assert_true(c->files && c->snap);
    return c;
}

/* cr_free -- release an exploration. */
static void cr_free(struct cr *c)
{
    ubj_bdev_destroy(c->rec);
    free(c->files);
    free(c->snap);
    free(c);
}

/* cr_mode -- explore one mode (fmt_flags: async commit); every image must
 * pass.  The run must have committed, checkpointed and wrapped. */
static void cr_mode(const char *mode, unsigned fmt_flags)
{
    const char *only = getenv("UBJ_JCRASH_ONLY");      /* debugging: one mode */
    if (only && strcmp(only, mode) != 0)
        return;
    uint64_t seed = tprng_env_seed("UBJ_JCRASH_SEED", 20240601);
    struct cr *c = cr_new(mode, seed);
    cr_run(c, fmt_flags);
    cr_explore(c, false);
    assert_true(ubj_bdev_record_flushes(c->rec) > 20);
    fprintf(stderr, "  %s%s: %llu flushes, %u crash images checked\n", mode,
            fmt_flags ? " (async commit)" : "",
            (unsigned long long)ubj_bdev_record_flushes(c->rec), c->images);
    assert_int_equal(c->failures, 0);
    cr_free(c);
}

static void test_ordered(void **state)
{
    (void)state;
    cr_mode(UBJ_MODE_ORDERED, 0);
}

static void test_journal(void **state)
{
    (void)state;
    cr_mode(UBJ_MODE_JOURNAL, 0);
}

static void test_writeback(void **state)
{
    (void)state;
    cr_mode(UBJ_MODE_WRITEBACK, 0);
}

static void test_async_commit(void **state)
{
    (void)state;
    cr_mode(UBJ_MODE_ORDERED, UBJ_FORMAT_JOURNAL_ASYNC);
    cr_mode(UBJ_MODE_JOURNAL, UBJ_FORMAT_JOURNAL_ASYNC);
}

#if UBJ_TEST_HOOKS   /* the broken variants: a test build only */
/* cr_broken -- with a flush left out, the same exploration must fail. */
static void cr_broken(const char *mode, enum ubj_jbreak which)
{
    uint64_t seed = tprng_env_seed("UBJ_JCRASH_SEED", 20240601);
    struct cr *c = cr_new(mode, seed);
    ubj_journal_test_break(which);
    cr_run(c, 0);
    ubj_journal_test_break(UBJ_JBREAK_NONE);
    cr_explore(c, true);
    fprintf(stderr, "  broken variant %d in mode %s caught after %u images: %s\n",
            (int)which, mode, c->images, c->first);
    assert_true(c->failures > 0);
    cr_free(c);
}

static void test_broken_commit_flush(void **state)
{
    (void)state;
    for (int m = 0; m < JT_NMODES; m++)
        cr_broken(jt_modes[m], UBJ_JBREAK_COMMIT_FLUSH);
}

static void test_broken_checkpoint_flush(void **state)
{
    (void)state;
    cr_broken(UBJ_MODE_ORDERED, UBJ_JBREAK_CKPT_FLUSH);
    cr_broken(UBJ_MODE_JOURNAL, UBJ_JBREAK_CKPT_FLUSH);
}

#else
#define test_broken_commit_flush t_no_hooks
#define test_broken_checkpoint_flush t_no_hooks
#endif /* UBJ_TEST_HOOKS */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ordered),
        cmocka_unit_test(test_journal),
        cmocka_unit_test(test_writeback),
        cmocka_unit_test(test_async_commit),
        cmocka_unit_test(test_broken_commit_flush),
        cmocka_unit_test(test_broken_checkpoint_flush),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
