/*
 * bench/wl_util.c -- what the workloads share (bench/bench_int.h): counted
 * wrappers of the file-system calls (each one ubj_* call, one bh_count),
 * random variates on a process's stream, and Filebench-style file sets.
 *
 * File sets follow Filebench's "define fileset" (filebench/fileset.c):
 * `entries` files whose sizes are drawn from a gamma distribution of the
 * given mean (cvar-gamma), spread over a directory tree whose directories
 * hold `dirwidth` entries on average, `prealloc` percent of them created
 * and written before the run.  Our tree is regular: ceil(n / width) leaf
 * directories, grouped `width` to a parent, level by level, until one
 * level fits under the file set's own directory.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bench/bench_int.h"
#include "util/util.h"

/* ---- random variates ----------------------------------------------------- */

/* bh_below -- uniform in [0, n) (Lemire's multiply-shift; bias < 2^-64 n). */
uint64_t bh_below(struct bh_proc *p, uint64_t n)
{
    if (n == 0)
        return 0;
    return (uint64_t)(((unsigned __int128)bh_rand(p) * n) >> 64);
}

/* bh_range -- uniform in [lo, hi]. */
uint64_t bh_range(struct bh_proc *p, uint64_t lo, uint64_t hi)
{
    if (hi <= lo)
        return lo;
    return lo + bh_below(p, hi - lo + 1);
}

/* bh_unit -- uniform in (0, 1). */
double bh_unit(struct bh_proc *p)
{
    return ((double)(bh_rand(p) >> 11) + 0.5) / 9007199254740992.0;
}

/* bh_exp -- exponential variate of mean `mean`. */
uint64_t bh_exp(struct bh_proc *p, double mean)
{
    if (mean <= 0)
        return 0;
    return (uint64_t)(-log(bh_unit(p)) * mean);
}

/* bh_normal -- a standard normal variate (Box-Muller). */
static double bh_normal(struct bh_proc *p)
{
    double u = bh_unit(p), v = bh_unit(p);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* bh_gamma_shape -- gamma(shape, 1) (Marsaglia & Tsang 2000; shape < 1
 * by the boost u^(1/shape)). */
static double bh_gamma_shape(struct bh_proc *p, double shape)
{
    double boost = 1.0;
    if (shape < 1.0) {
        boost = pow(bh_unit(p), 1.0 / shape);
        shape += 1.0;
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = bh_normal(p), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = bh_unit(p);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v * boost;
    }
}

/* bh_gamma -- gamma variate of the given mean and shape (>= 1). */
uint64_t bh_gamma(struct bh_proc *p, double mean, double shape)
{
    if (shape <= 0)
        return mean < 1 ? 1 : (uint64_t)mean;
    double x = bh_gamma_shape(p, shape) * mean / shape;
    return x < 1 ? 1 : (uint64_t)x;
}

/* ---- counted calls -------------------------------------------------------- */
/* Each releases the run's bookkeeping lock around its ubj_* call when the
 * run overlaps (bench_int.h, "Overlap"); out-parameters that are not the
 * caller's own locals (bh_create's *ino, bh_mkdir's) are written after it
 * is retaken. */

/* bh_create -- create a regular file (CREATE). */
int bh_create(struct bh_run *r, ubj_ino_t dir, const char *name, ubj_ino_t *ino)
{
    struct ubj_stat st;
    bh_count(r, BH_OP_CREATE);
    bh_call_begin(r);
    int rc = ubj_create(bh_fs(r), dir, name, 0644, NULL, &st);
    bh_call_end(r);
    if (rc == 0 && ino != NULL)
        *ino = st.ino;
    return rc;
}

/* bh_mkdir -- create a directory (MKDIR). */
int bh_mkdir(struct bh_run *r, ubj_ino_t dir, const char *name, ubj_ino_t *ino)
{
    struct ubj_stat st;
    bh_count(r, BH_OP_MKDIR);
    bh_call_begin(r);
    int rc = ubj_mkdir(bh_fs(r), dir, name, 0755, NULL, &st);
    bh_call_end(r);
    if (rc == 0 && ino != NULL)
        *ino = st.ino;
    return rc;
}

/* bh_unlink -- remove a file (UNLINK). */
int bh_unlink(struct bh_run *r, ubj_ino_t dir, const char *name)
{
    bh_count(r, BH_OP_UNLINK);
    bh_call_begin(r);
    int rc = ubj_unlink(bh_fs(r), dir, name);
    bh_call_end(r);
    return rc;
}

/* bh_rmdir -- remove a directory (RMDIR). */
int bh_rmdir(struct bh_run *r, ubj_ino_t dir, const char *name)
{
    bh_count(r, BH_OP_RMDIR);
    bh_call_begin(r);
    int rc = ubj_rmdir(bh_fs(r), dir, name);
    bh_call_end(r);
    return rc;
}

/* bh_open -- take an open reference (OPEN). */
int bh_open(struct bh_run *r, ubj_ino_t ino, int flags)
{
    bh_count(r, BH_OP_OPEN);
    bh_call_begin(r);
    int rc = ubj_open(bh_fs(r), ino, flags);
    bh_call_end(r);
    return rc;
}

/* bh_close -- drop it (OTHER). */
int bh_close(struct bh_run *r, ubj_ino_t ino)
{
    bh_count(r, BH_OP_OTHER);
    bh_call_begin(r);
    int rc = ubj_release(bh_fs(r), ino);
    bh_call_end(r);
    return rc;
}

/* bh_fsync -- fsync / fdatasync (FSYNC). */
int bh_fsync(struct bh_run *r, ubj_ino_t ino, int datasync)
{
    bh_count(r, BH_OP_FSYNC);
    bh_call_begin(r);
    int rc = ubj_fsync(bh_fs(r), ino, datasync);
    bh_call_end(r);
    return rc;
}

/* bh_stat -- attributes (STAT). */
int bh_stat(struct bh_run *r, ubj_ino_t ino, struct ubj_stat *st)
{
    bh_count(r, BH_OP_STAT);
    bh_call_begin(r);
    int rc = ubj_getattr(bh_fs(r), ino, st);
    bh_call_end(r);
    return rc;
}

/* bh_lookup -- a name in a directory (STAT). */
int bh_lookup(struct bh_run *r, ubj_ino_t dir, const char *name,
              struct ubj_stat *st)
{
    bh_count(r, BH_OP_STAT);
    bh_call_begin(r);
    int rc = ubj_lookup(bh_fs(r), dir, name, st);
    bh_call_end(r);
    return rc;
}

/* bh_truncate -- set the size (OTHER). */
int bh_truncate(struct bh_run *r, ubj_ino_t ino, uint64_t size)
{
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = size };
    bh_count(r, BH_OP_OTHER);
    bh_call_begin(r);
    int rc = ubj_setattr(bh_fs(r), ino, &sa, NULL);
    bh_call_end(r);
    return rc;
}

/* bh_write -- len bytes at off in io-sized calls. */
int bh_write(struct bh_run *r, ubj_ino_t ino, uint64_t off, uint64_t len,
             uint64_t io, enum bh_opkind kind)
{
    if (io == 0 || io > BH_IO_MAX)
        io = BH_IO_MAX;
    while (len > 0) {
        size_t n = len < io ? (size_t)len : (size_t)io;
        bh_count(r, kind);
        bh_call_begin(r);
        ssize_t w = ubj_pwrite(bh_fs(r), ino, bh_wbuf(r), n, (off_t)off);
        bh_call_end(r);
        if (w < 0)
            return (int)w;
        bh_count_bytes(r, (uint64_t)w, 0);
        if ((size_t)w < n)
            return ubj_set_error(-ENOSPC, "write: short write (%zd of %zu bytes)",
                                 w, n);
        off += n;
        len -= n;
    }
    return 0;
}

/* bh_read -- [off, off + len) in io-sized calls, up to EOF. */
int64_t bh_read(struct bh_run *r, ubj_ino_t ino, uint64_t off, uint64_t len,
                uint64_t io)
{
    if (io == 0 || io > BH_IO_MAX)
        io = BH_IO_MAX;
    int64_t total = 0;
    while (len > 0) {
        size_t n = len < io ? (size_t)len : (size_t)io;
        bh_count(r, BH_OP_READ);
        bh_call_begin(r);
        ssize_t got = ubj_pread(bh_fs(r), ino, bh_rbuf(r), n, (off_t)off);
        bh_call_end(r);
        if (got < 0)
            return got;
        bh_count_bytes(r, 0, (uint64_t)got);
        total += got;
        if ((size_t)got < n)
            break;
        off += n;
        len -= n;
    }
    return total;
}

/* ld_count -- readdir callback: count entries. */
static int ld_count(void *ctx, const char *name, size_t namelen, ubj_ino_t ino,
                    unsigned type, uint64_t next)
{
    (void)name; (void)namelen; (void)ino; (void)type; (void)next;
    (*(int64_t *)ctx)++;
    return 0;
}

/* bh_listdir -- one whole listing (READDIR). */
int64_t bh_listdir(struct bh_run *r, ubj_ino_t dir)
{
    int64_t n = 0;
    bh_count(r, BH_OP_READDIR);
    bh_call_begin(r);
    int rc = ubj_readdir(bh_fs(r), dir, 0, ld_count, &n);
    bh_call_end(r);
    return rc < 0 ? rc : n;
}

/* ---- file sets ------------------------------------------------------------ */

/* bh_fentry_name -- "f<idx>". */
void bh_fentry_name(uint64_t idx, char *buf, size_t size)
{
    snprintf(buf, size, "f%llu", (unsigned long long)idx);
}

/* fs_mkdirs -- `n` directories "d<i>", child i under parents[i / width]. */
static int fs_mkdirs(struct bh_run *r, const ubj_ino_t *parents, uint64_t width,
                     uint64_t n, ubj_ino_t *out)
{
    char name[BH_NAME_LEN];
    for (uint64_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "d%llu", (unsigned long long)i);
        int rc = bh_mkdir(r, parents[i / width], name, &out[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* fs_tree -- the directory tree; leaf[i] for i < ceil(n / width). */
static int fs_tree(struct bh_run *r, ubj_ino_t root, uint64_t n, uint64_t width,
                   ubj_ino_t **leaves)
{
    uint64_t counts[16];
    unsigned levels = 0;
    uint64_t c = (n + width - 1) / width;
    while (c > 1 && levels < 15) {          /* counts[0] = leaves */
        counts[levels++] = c;
        if (c <= width)
            break;
        c = (c + width - 1) / width;
    }
    ubj_ino_t *cur = malloc(sizeof *cur);
    if (cur == NULL)
        return -ENOMEM;
    cur[0] = root;
    for (unsigned k = levels; k-- > 0;) {   /* top level first */
        ubj_ino_t *next = malloc(counts[k] * sizeof *next);
        int rc = next ? 0 : -ENOMEM;
        uint64_t pw = k + 1 < levels ? width : counts[k];
        if (rc == 0)
            rc = fs_mkdirs(r, cur, pw, counts[k], next);
        free(cur);
        cur = next;
        if (rc < 0) {
            free(next);
            return rc;
        }
    }
    *leaves = cur;
    return 0;
}

/* fs_fits -- -ENOSPC (with the sizes) if the pre-allocated files cannot
 * fit in the free blocks and inodes. */
static int fs_fits(struct bh_run *r, const struct bh_fileset *fs,
                   const bool *pre)
{
    uint64_t blocks = 0, files = 0;
    for (uint64_t i = 0; i < fs->n; i++)
        if (pre[i]) {
            blocks += (fs->e[i].size + 4095) / 4096;
            files++;
        }
    struct ubj_statfs sf;
    ubj_statfs_get(bh_fs(r), &sf);
    if (blocks <= sf.bfree && files < sf.ffree)
        return 0;
    /* blocks for the data, and for the inodes at mkfs's one per 16 KiB */
    uint64_t used = sf.blocks - sf.bfree, inodes = sf.files - sf.ffree + files;
    bh_note_need(r, used + blocks > inodes * 4 ? used + blocks : inodes * 4);
    return ubj_set_error(-ENOSPC, "bench %s: file set %s needs %llu MiB in %llu "
                         "files; the image has %llu MiB and %llu inodes free: "
                         "raise image_blocks or lower the scale",
                         bh_workload_name(r), fs->name,
                         (unsigned long long)(blocks / 256 + 1),
                         (unsigned long long)files,
                         (unsigned long long)(sf.bfree / 256),
                         (unsigned long long)sf.ffree);
}

/* fs_populate -- create and write the pre-allocated entries. */
static int fs_populate(struct bh_run *r, struct bh_fileset *fs, const bool *pre,
                       uint64_t io)
{
    char fname[BH_NAME_LEN];
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < fs->n; i++) {
        struct bh_fentry *e = &fs->e[i];
        if (!pre[i])
            continue;
        bh_fentry_name(i, fname, sizeof fname);
        rc = bh_create(r, e->dir, fname, &e->ino);
        if (rc == 0)
            rc = bh_write(r, e->ino, 0, e->size, io, BH_OP_WRITE);
        if (rc == 0) {
            e->cur = e->size;
            fs->nexist++;
        }
    }
    return rc;
}

/* bh_fileset_make -- a Filebench file set. */
int bh_fileset_make(struct bh_run *r, struct bh_fileset *fs, const char *name,
                    uint64_t n, uint64_t width, double mean, double shape,
                    unsigned prealloc_pct, uint64_t io)
{
    memset(fs, 0, sizeof *fs);
    snprintf(fs->name, sizeof fs->name, "%s", name);
    fs->n = n ? n : 1;
    width = width ? width : 1;
    fs->e = calloc(fs->n, sizeof *fs->e);
    bool *pre = calloc(fs->n, sizeof *pre);
    if (fs->e == NULL || pre == NULL) {
        free(pre);
        return ubj_set_error(-ENOMEM, "bench: out of memory");
    }
    struct bh_proc *p = bh_setup_proc(r);
    for (uint64_t i = 0; i < fs->n; i++) {
        fs->e[i].size = bh_gamma(p, mean, shape);
        pre[i] = bh_below(p, 100) < prealloc_pct;
    }
    ubj_ino_t top, *leaves = NULL;
    int rc = fs_fits(r, fs, pre);
    if (rc == 0)
        rc = bh_mkdir(r, UBJ_ROOT_INO, name, &top);
    if (rc == 0 && fs->n > width)
        rc = fs_tree(r, top, fs->n, width, &leaves);
    for (uint64_t i = 0; rc == 0 && i < fs->n; i++)
        fs->e[i].dir = leaves ? leaves[i / width] : top;
    if (rc == 0)
        rc = fs_populate(r, fs, pre, io);
    free(leaves);
    free(pre);
    return rc;
}

/* bh_fileset_free -- release the table. */
void bh_fileset_free(struct bh_fileset *fs)
{
    free(fs->e);
    fs->e = NULL;
}

/* fs_eligible -- entry i exists (want) or not, and nobody works on it. */
static bool fs_eligible(const struct bh_fileset *fs, uint64_t i, bool want)
{
    return !fs->e[i].busy && (fs->e[i].ino != 0) == want;
}

/* bh_fileset_pick -- a random existing (or free) entry that is not busy:
 * random probes, then a scan from a random start; marked busy.  (With
 * nothing busy -- always so on the virtual clock -- the picks and the
 * random draws are those of the table alone.) */
int64_t bh_fileset_pick(struct bh_proc *p, struct bh_fileset *fs, bool want)
{
    uint64_t have = want ? fs->nexist : fs->n - fs->nexist;
    if (have == 0)
        return -1;
    int64_t got = -1;
    for (unsigned k = 0; k < 16 && got < 0; k++) {
        uint64_t i = bh_below(p, fs->n);
        if (fs_eligible(fs, i, want))
            got = (int64_t)i;
    }
    if (got < 0) {
        uint64_t s = bh_below(p, fs->n);
        for (uint64_t k = 0; k < fs->n && got < 0; k++)
            if (fs_eligible(fs, (s + k) % fs->n, want))
                got = (int64_t)((s + k) % fs->n);
    }
    if (got >= 0)
        fs->e[got].busy = true;
    return got;
}

/* bh_fentry_done -- see bench_int.h. */
void bh_fentry_done(struct bh_fileset *fs, int64_t idx)
{
    if (idx >= 0)
        fs->e[idx].busy = false;
}
