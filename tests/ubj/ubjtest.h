/*
 * ubjtest.h -- helpers of the tests/ubj suite (mode ubj, issue 3), header
 * only so that each tests/ubj/<name>.c stays one executable:
 *
 *  - region files under /dev/shm (else $TMPDIR or /tmp), named per process
 *  - mounting a RAM image in mode ubj over a region
 *  - a crash device: a RAM block device that keeps, besides what was
 *    written, what was durable at the last flush, and can capture both so
 *    that a power-failure image keeps any subset of the unflushed writes
 *  - a digest of a whole tree (names, types, sizes, contents; no times)
 *  - a deterministic random workload applied to two mounts at once (the
 *    one under test and a reference), asserting equal results
 */
#ifndef UBJ_TESTS_UBJTEST_H
#define UBJ_TESTS_UBJTEST_H

#include "testutil.h"
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>
#include "ubjfs/nvm.h"
#include "util/util.h"

#define UT_FN static __attribute__((unused))
#define UT_BS 4096u

/* ut_dir -- where region files go: /dev/shm if usable, else $TMPDIR/tmp. */
UT_FN const char *ut_dir(void)
{
    if (access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* ut_region_path -- a per-process region file name with `tag`. */
UT_FN void ut_region_path(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "%s/ubjt-%d-%s.nvm", ut_dir(), (int)getpid(), tag);
}

/* ut_mount -- mount dev in mode ubj over `region`. */
UT_FN int ut_mount(struct ubj_bdev *dev, const char *region, uint32_t nbufs,
                   unsigned nvm_flags, unsigned mflags, struct ubj_fs **fs)
{
    struct ubj_config cfg = { .mode = UBJ_MODE_UBJ, .cache_blocks = nbufs,
                              .flags = UBJ_MOUNT_NO_TIMER | mflags,
                              .nvm_path = region, .nvm_flags = nvm_flags };
    return ubj_mount(dev, &cfg, fs);
}

/* ut_new_fs -- a RAM image of nblocks made in mode ubj and mounted over a
 * freshly formatted region of nbufs buffers. */
UT_FN void ut_new_fs(uint64_t nblocks, const char *region, uint32_t nbufs,
                     struct ubj_bdev **dev, struct ubj_fs **fs)
{
    assert_int_equal(ubj_bdev_ram_create(nblocks, dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(*dev, &fo));
    unlink(region);
    assert_ok(ut_mount(*dev, region, nbufs, UBJ_NVM_FORMAT, 0, fs));
}

/* ut_file_put -- write a host file. */
UT_FN int ut_file_put(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -errno;
    ssize_t n = write(fd, buf, len);
    close(fd);
    return n == (ssize_t)len ? 0 : -EIO;
}

/* ut_file_get -- read a whole host file (malloc'd; NULL and 0 on error). */
UT_FN int ut_file_get(const char *path, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    *len = (size_t)st.st_size;
    *buf = malloc(*len ? *len : 1);
    ssize_t n = *buf ? read(fd, *buf, *len) : -1;
    close(fd);
    return n == (ssize_t)*len ? 0 : -EIO;
}

/* ut_ram_copy -- a RAM device holding a copy of src. */
UT_FN struct ubj_bdev *ut_ram_copy(struct ubj_bdev *src)
{
    struct ubj_bdev *d;
    assert_int_equal(ubj_bdev_ram_create(src->nblocks, &d), 0);
    uint8_t *buf = malloc(UT_BS);
    for (uint64_t b = 0; b < src->nblocks; b++) {
        assert_int_equal(ubj_bdev_read(src, b, 1, buf), 0);
        assert_int_equal(ubj_bdev_write(d, b, 1, buf), 0);
    }
    free(buf);
    return d;
}

/* ut_check_pair -- ubj_check through the overlay of (dev, region); dev is
 * left unchanged (the overlay owns its lower device: a copy-on-write
 * overlay borrowing dev).  A region recovery
 * finds corrupt (-EUCLEAN: what `fsck --nvm` reports as an operational
 * error) gives UBJ_CHECK_OPERROR, so that a broken variant caught there
 * counts as caught. */
UT_FN int ut_check_pair(struct ubj_bdev *dev, const char *region, int *lines)
{
    struct ubj_bdev *ov;
    struct ubj_bdev *copy;
    assert_int_equal(ubj_bdev_cow_create(dev, UBJ_COW_BORROW, &copy), 0);
    int rc = ubj_nvm_overlay_create(copy, region, &ov);
    if (rc == -EUCLEAN) {
        fprintf(stderr, "  overlay: %s\n", ubj_errormsg());
        ubj_bdev_destroy(copy);
        return UBJ_CHECK_OPERROR;
    }
    if (rc < 0)
        fail_msg("overlay: %d %s", rc, ubj_errormsg());
    rc = ubj_test_check(ov, 0, lines);
    ubj_bdev_destroy(ov);
    return rc;
}

/* ---- the crash device -------------------------------------------------- */

struct ut_cdev {
    struct ubj_bdev base;
    pthread_mutex_t lock;
    uint8_t *cur, *dur;        /* contents written / durable at last flush */
    uint8_t *pend;             /* per block: written since the last flush */
    uint8_t *cap_cur, *cap_dur, *cap_pend;
    struct ubj_bdev *cap_base; /* RAM device of cap_dur, made by the first
                                  ut_cdev_image after a capture */
    int captured;
    uint64_t writes;
};

/* ut_cdev_of -- the crash device of d. */
static inline struct ut_cdev *ut_cdev_of(struct ubj_bdev *d)
{
    return (struct ut_cdev *)d;
}

/* ut_cdev_read -- the current contents. */
static int ut_cdev_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct ut_cdev *c = ut_cdev_of(d);
    pthread_mutex_lock(&c->lock);
    memcpy(buf, c->cur + blkno * UT_BS, (size_t)count * UT_BS);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* ut_cdev_write -- write; durable only after the next flush. */
static int ut_cdev_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                         const void *buf)
{
    struct ut_cdev *c = ut_cdev_of(d);
    pthread_mutex_lock(&c->lock);
    memcpy(c->cur + blkno * UT_BS, buf, (size_t)count * UT_BS);
    memset(c->pend + blkno, 1, count);
    c->writes += count;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* ut_cdev_flush -- every written block becomes durable. */
static int ut_cdev_flush(struct ubj_bdev *d)
{
    struct ut_cdev *c = ut_cdev_of(d);
    pthread_mutex_lock(&c->lock);
    for (uint64_t b = 0; b < d->nblocks; b++)
        if (c->pend[b]) {
            memcpy(c->dur + b * UT_BS, c->cur + b * UT_BS, UT_BS);
            c->pend[b] = 0;
        }
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* ut_cdev_destroy -- free everything. */
static void ut_cdev_destroy(struct ubj_bdev *d)
{
    struct ut_cdev *c = ut_cdev_of(d);
    free(c->cur); free(c->dur); free(c->pend);
    free(c->cap_cur); free(c->cap_dur); free(c->cap_pend);
    if (c->cap_base != NULL)
        ubj_bdev_destroy(c->cap_base);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static const struct ubj_bdev_ops ut_cdev_ops __attribute__((unused)) = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "crash",
    .read = ut_cdev_read, .write = ut_cdev_write, .flush = ut_cdev_flush,
    .destroy = ut_cdev_destroy,
};

/* ut_cdev_new -- a zeroed crash device of nblocks (all durable). */
UT_FN struct ubj_bdev *ut_cdev_new(uint64_t nblocks)
{
    struct ut_cdev *c = calloc(1, sizeof *c);
    assert_non_null(c);
    size_t bytes = (size_t)nblocks * UT_BS;
    c->cur = calloc(1, bytes);
    c->dur = calloc(1, bytes);
    c->pend = calloc(1, nblocks);
    c->cap_cur = malloc(bytes);
    c->cap_dur = malloc(bytes);
    c->cap_pend = malloc(nblocks);
    assert_true(c->cur && c->dur && c->pend && c->cap_cur && c->cap_dur && c->cap_pend);
    pthread_mutex_init(&c->lock, NULL);
    c->base.ops = &ut_cdev_ops;
    c->base.block_size = UT_BS;
    c->base.guarantees = UBJ_BDEV_ATOMIC_BLOCK | UBJ_BDEV_VOLATILE_CACHE;
    c->base.nblocks = nblocks;
    return &c->base;
}

/* ut_cdev_capture -- remember this instant for ut_cdev_image. */
UT_FN void ut_cdev_capture(struct ubj_bdev *d)
{
    struct ut_cdev *c = ut_cdev_of(d);
    pthread_mutex_lock(&c->lock);
    size_t bytes = (size_t)d->nblocks * UT_BS;
    memcpy(c->cap_cur, c->cur, bytes);
    memcpy(c->cap_dur, c->dur, bytes);
    memcpy(c->cap_pend, c->pend, d->nblocks);
    if (c->cap_base != NULL)
        ubj_bdev_destroy(c->cap_base);
    c->cap_base = NULL;
    c->captured = 1;
    pthread_mutex_unlock(&c->lock);
}

/* ut_cdev_image -- a device holding one power-failure image of the
 * capture: the durable blocks, plus every (ALL), no (DURABLE) or a random
 * choice of (RANDOM) the blocks written since the last flush.  It is a
 * copy-on-write overlay over a RAM copy of the capture's durable blocks
 * (made once per capture), holding the blocks taken: destroy it before
 * the crash device or its next capture. */
UT_FN struct ubj_bdev *ut_cdev_image(struct ubj_bdev *d, enum ubj_shadow_policy p,
                                     uint64_t seed)
{
    struct ut_cdev *c = ut_cdev_of(d);
    struct ubj_bdev *out;
    assert_true(c->captured);
    if (c->cap_base == NULL) {
        assert_int_equal(ubj_bdev_ram_create(d->nblocks, &c->cap_base), 0);
        assert_int_equal(ubj_bdev_write(c->cap_base, 0, (uint32_t)d->nblocks, c->cap_dur), 0);
    }
    assert_int_equal(ubj_bdev_cow_create(c->cap_base, UBJ_COW_BORROW, &out), 0);
    struct tprng r;
    tprng_seed(&r, seed);
    for (uint64_t b = 0; b < d->nblocks; b++) {
        bool take = c->cap_pend[b] &&
                    (p == UBJ_SHADOW_ALL || (p == UBJ_SHADOW_RANDOM && (tprng_next(&r) & 1)));
        if (take)
            assert_int_equal(ubj_bdev_write(out, b, 1, c->cap_cur + b * UT_BS), 0);
    }
    return out;
}

/* ---- tree digest ------------------------------------------------------- */

/* ut_dirent_cmp -- qsort by name. */
static int ut_dirent_cmp(const void *a, const void *b)
{
    return strcmp(((const struct tdirent *)a)->name, ((const struct tdirent *)b)->name);
}

/* ut_mix -- fold x into h. */
static inline uint64_t ut_mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

/* ut_digest_ino -- digest of the tree under directory ino (-1 on error). */
UT_FN uint64_t ut_digest_ino(struct ubj_fs *fs, ubj_ino_t ino, int depth)
{
    struct tdirent *v;
    size_t n;
    uint64_t h = 0x1234u + (uint64_t)depth;
    if (depth > 8 || tdir_list(fs, ino, &v, &n) < 0)
        return UINT64_MAX;
    qsort(v, n, sizeof *v, ut_dirent_cmp);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(v[i].name, ".") || !strcmp(v[i].name, ".."))
            continue;
        struct ubj_stat st;
        h = ut_mix(h, ubj_crc32c(0, v[i].name, strlen(v[i].name)));
        if (ubj_getattr(fs, v[i].ino, &st) < 0) {
            h = UINT64_MAX;
            break;
        }
        h = ut_mix(h, st.mode);
        h = ut_mix(h, st.nlink);
        if (S_ISDIR(st.mode)) {
            h = ut_mix(h, ut_digest_ino(fs, v[i].ino, depth + 1));
        } else if (S_ISREG(st.mode)) {
            uint8_t *buf = malloc(st.size ? st.size : 1);
            ssize_t got = ubj_pread(fs, v[i].ino, buf, st.size, 0);
            h = ut_mix(h, st.size);
            h = ut_mix(h, got == (ssize_t)st.size ? ubj_crc32c(0, buf, st.size) : 7);
            free(buf);
        }
    }
    free(v);
    return h;
}

/* ut_digest -- digest of the whole tree (names, types, links, contents). */
UT_FN uint64_t ut_digest(struct ubj_fs *fs)
{
    return ut_digest_ino(fs, UBJ_ROOT_INO, 0);
}

/* ---- a random workload on two mounts ----------------------------------- */

#define UT_NAMES 4
static const char *const ut_names[2 * UT_NAMES] __attribute__((unused)) = {
    "/f0", "/f1", "/f2", "/f3", "/d/g0", "/d/g1", "/d/g2", "/d/g3",
};

struct ut_op {
    int kind;             /* UT_OP_* */
    const char *a, *b;    /* paths */
    uint64_t off, len;
    uint64_t seed;        /* data */
};
enum { UT_OP_CREATE, UT_OP_APPEND, UT_OP_WRITE, UT_OP_TRUNC, UT_OP_RENAME,
       UT_OP_UNLINK, UT_OP_FSYNC, UT_OP_MKDIR, UT_OP_RMDIR, UT_OP_LINK,
       UT_OP_SYNC, UT_NOPS };

/* ut_op_random -- the next operation of a workload. */
UT_FN struct ut_op ut_op_random(struct tprng *r, uint64_t max_len)
{
    static const int weights[UT_NOPS] = { 12, 16, 12, 5, 7, 4, 9, 5, 1, 2, 1 };
    int total = 0, k = 0;
    for (int i = 0; i < UT_NOPS; i++)
        total += weights[i];
    int x = (int)tprng_below(r, (uint64_t)total);
    while (x >= weights[k])
        x -= weights[k++];
    struct ut_op op = { .kind = k };
    op.a = ut_names[tprng_below(r, 2 * UT_NAMES)];
    op.b = ut_names[tprng_below(r, 2 * UT_NAMES)];
    op.len = 1 + tprng_below(r, max_len);
    op.off = tprng_below(r, max_len);
    op.seed = tprng_next(r);
    if (k == UT_OP_MKDIR || k == UT_OP_RMDIR)
        op.a = tprng_below(r, 4) ? "/d" : "/d/s";
    return op;
}

/* ut_op_apply -- run op on fs; the library's result (or a byte count). */
UT_FN long long ut_op_apply(struct ubj_fs *fs, const struct ut_op *op)
{
    struct ubj_stat st;
    uint8_t *buf;
    long long rc;
    switch (op->kind) {
    case UT_OP_CREATE:
        return tpath_create(fs, op->a, 0644, NULL);
    case UT_OP_APPEND:
    case UT_OP_WRITE:
        rc = tpath_stat(fs, op->a, &st);
        if (rc < 0 || !S_ISREG(st.mode))
            return rc < 0 ? rc : -EISDIR;
        buf = malloc(op->len);
        tpattern_fill(buf, op->len, op->seed, 0);
        rc = tpath_write(fs, op->a, buf, op->len,
                         (off_t)(op->kind == UT_OP_APPEND ? st.size
                                 : op->off % (st.size + 1024)));
        free(buf);
        return rc;
    case UT_OP_TRUNC:
        rc = tpath_stat(fs, op->a, &st);
        if (rc < 0 || !S_ISREG(st.mode))
            return rc < 0 ? rc : -EISDIR;
        return tpath_truncate(fs, op->a, op->off % (st.size + 6000));
    case UT_OP_RENAME:
        return tpath_rename(fs, op->a, op->b, 0);
    case UT_OP_UNLINK:
        return tpath_unlink(fs, op->a);
    case UT_OP_FSYNC: {
        ubj_ino_t ino = tpath_ino(fs, op->a);
        return ubj_fsync(fs, ino ? ino : UBJ_ROOT_INO, (int)(op->seed & 1));
    }
    case UT_OP_MKDIR:
        return tpath_mkdir(fs, op->a, 0755, NULL);
    case UT_OP_RMDIR:
        return tpath_rmdir(fs, op->a);
    case UT_OP_LINK:
        return tpath_link(fs, op->a, op->b);
    case UT_OP_SYNC:
        return ubj_sync(fs);
    default:
        return -EINVAL;
    }
}

#endif /* UBJ_TESTS_UBJTEST_H */
