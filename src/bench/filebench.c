/*
 * bench/filebench.c -- the Filebench flowops our personalities use
 * (filebench/flowop_library.c: createfile, deletefile, openfile,
 * closefile, statfile, fsync, readwholefile, writewholefile,
 * appendfilerand), over a bh_fileset (wl_util.c).
 *
 * A flowop that finds no suitable entry (no free slot to create, nothing
 * to delete or open) does nothing and returns -1, as Filebench's flowop
 * then retries on its next pass.  appendfilerand appends a size uniform
 * in [1, iosize] (Filebench: random size up to iosize).  On the real clock
 * processes overlap (bench_int.h, "Overlap"): an entry a flowop picks is
 * busy -- no other process picks it -- until closefile (or the end of
 * deletefile and statfile), as Filebench's fileset_pick marks an entry
 * busy until fileset_unbusy; appendfilerand reserves its range before the
 * write (a shared log: webserver).
 *
 * Also the parameters and run state of the personalities with one big
 * fileset (fileserver, varmail, webserver): fb_params_read, fb_state_*.
 */
#include <errno.h>
#include <stdlib.h>
#include "bench/bench_int.h"
#include "util/util.h"

/* fb_scaled -- n x scale, at least 1. */
uint64_t fb_scaled(struct bh_run *r, uint64_t n)
{
    double x = (double)n * bh_params_of(r)->scale;
    return x < 1 ? 1 : (uint64_t)x;
}

/* fb_params_read -- see bench_int.h. */
int fb_params_read(struct bh_run *r, const char *wl, struct fb_params *p)
{
    static const char *const keys[] = {
        "nfiles", "dirwidth", "filesize", "iosize", "appendsize", NULL
    };
    int rc = bh_kv_check(r, keys);
    if (rc == 0) rc = bh_kv_u64(r, "nfiles", p->nfiles, &p->nfiles);
    if (rc == 0) rc = bh_kv_u64(r, "dirwidth", p->width, &p->width);
    if (rc == 0) rc = bh_kv_u64(r, "filesize", p->fsize, &p->fsize);
    if (rc == 0) rc = bh_kv_u64(r, "iosize", p->iosize, &p->iosize);
    if (rc == 0) rc = bh_kv_u64(r, "appendsize", p->append, &p->append);
    if (rc == 0 && (p->append == 0 || p->append > BH_IO_MAX || p->iosize == 0 ||
                    p->fsize == 0))
        rc = ubj_set_error(-EINVAL, "bench %s: appendsize 1 .. 1 MiB, filesize and "
                           "iosize > 0", wl);
    if (rc == 0 && (p->nfiles == 0 || p->width == 0))
        rc = ubj_set_error(-EINVAL, "bench %s: nfiles and dirwidth must be >= 1", wl);
    return rc == 0 ? bh_params_end(r) : rc;
}

/* fb_state_init -- see bench_int.h. */
int fb_state_init(struct bh_run *r, const char *wl, struct fb_params *p,
                  unsigned prealloc_pct)
{
    struct fb_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench %s: out of memory", wl);
    bh_set_state(r, s);
    int rc = fb_params_read(r, wl, p);
    s->iosize = p->iosize;
    s->append = p->append;
    if (rc == 0)
        rc = bh_fileset_make(r, &s->set, "bigfileset", fb_scaled(r, p->nfiles),
                             p->width, (double)p->fsize, 1.5, prealloc_pct, s->iosize);
    return rc;
}

/* fb_state_fini -- see bench_int.h: detach the state, then free it. */
void fb_state_fini(struct bh_run *r)
{
    struct fb_state *s = bh_state(r);
    bh_set_state(r, NULL);
    if (s == NULL)
        return;
    bh_fileset_free(&s->set);
    bh_fileset_free(&s->log);
    free(s);
}

/* fb_err -- a file-system error below -1. */
static int64_t fb_err(int rc)
{
    return rc < 0 ? rc : 0;
}

/* fb_createfile -- create a free entry (empty; writewholefile fills it). */
int64_t fb_createfile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p)
{
    int64_t i = bh_fileset_pick(p, fs, false);
    if (i < 0)
        return -1;
    char name[BH_NAME_LEN];
    bh_fentry_name((uint64_t)i, name, sizeof name);
    struct bh_fentry *e = &fs->e[i];
    ubj_ino_t ino = 0;
    int rc = bh_create(r, e->dir, name, &ino);
    if (rc < 0) {
        bh_fentry_done(fs, i);
        return fb_err(rc);
    }
    e->ino = ino;
    e->cur = 0;
    fs->nexist++;
    rc = bh_open(r, ino, 1);
    return rc < 0 ? fb_err(rc) : i;
}

/* fb_deletefile -- unlink an existing entry. */
int64_t fb_deletefile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p)
{
    int64_t i = bh_fileset_pick(p, fs, true);
    if (i < 0)
        return -1;
    char name[BH_NAME_LEN];
    bh_fentry_name((uint64_t)i, name, sizeof name);
    int rc = bh_unlink(r, fs->e[i].dir, name);
    fs->e[i].ino = 0;
    fs->e[i].cur = 0;
    fs->nexist--;
    bh_fentry_done(fs, i);
    return rc < 0 ? fb_err(rc) : i;
}

/* fb_openfile -- open an existing entry. */
int64_t fb_openfile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p)
{
    int64_t i = bh_fileset_pick(p, fs, true);
    if (i < 0)
        return -1;
    int rc = bh_open(r, fs->e[i].ino, 2);
    return rc < 0 ? fb_err(rc) : i;
}

/* fb_statfile -- stat an existing entry. */
int64_t fb_statfile(struct bh_run *r, struct bh_fileset *fs, struct bh_proc *p)
{
    int64_t i = bh_fileset_pick(p, fs, true);
    if (i < 0)
        return -1;
    struct ubj_stat st;
    int rc = bh_stat(r, fs->e[i].ino, &st);
    bh_fentry_done(fs, i);
    return rc < 0 ? fb_err(rc) : i;
}

/* fb_closefile -- close the entry. */
int64_t fb_closefile(struct bh_run *r, struct bh_fileset *fs, int64_t idx)
{
    if (idx < 0)
        return idx;
    int rc = bh_close(r, fs->e[idx].ino);
    bh_fentry_done(fs, idx);
    return rc < 0 ? fb_err(rc) : idx;
}

/* fb_fsync -- fsync the entry. */
int64_t fb_fsync(struct bh_run *r, struct bh_fileset *fs, int64_t idx)
{
    if (idx < 0)
        return idx;
    int rc = bh_fsync(r, fs->e[idx].ino, 0);
    return rc < 0 ? fb_err(rc) : idx;
}

/* fb_readwholefile -- read the whole entry in iosize calls. */
int64_t fb_readwholefile(struct bh_run *r, struct bh_fileset *fs, int64_t idx,
                         uint64_t iosize)
{
    if (idx < 0)
        return idx;
    int64_t got = bh_read(r, fs->e[idx].ino, 0, fs->e[idx].cur, iosize);
    return got < 0 ? fb_err((int)got) : idx;
}

/* fb_writewholefile -- write the entry's full size from offset 0. */
int64_t fb_writewholefile(struct bh_run *r, struct bh_fileset *fs, int64_t idx,
                          uint64_t iosize)
{
    if (idx < 0)
        return idx;
    struct bh_fentry *e = &fs->e[idx];
    int rc = bh_write(r, e->ino, 0, e->size, iosize, BH_OP_WRITE);
    if (rc < 0)
        return fb_err(rc);
    if (e->cur < e->size)
        e->cur = e->size;
    return idx;
}

/* fb_appendfilerand -- append [1, iosize] bytes. */
int64_t fb_appendfilerand(struct bh_run *r, struct bh_fileset *fs, int64_t idx,
                          struct bh_proc *p, uint64_t iosize)
{
    if (idx < 0)
        return idx;
    struct bh_fentry *e = &fs->e[idx];
    uint64_t n = bh_range(p, 1, iosize), off = e->cur;
    e->cur += n;                 /* reserved: another process appends after */
    int rc = bh_write(r, e->ino, off, n, iosize, BH_OP_APPEND);
    return rc < 0 ? fb_err(rc) : idx;
}
