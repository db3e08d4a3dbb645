/*
 * bench/wl_oltp.c -- an OLTP-like mix after Filebench's oltp personality
 * (filebench/workloads/oltp.f: a database's shadow processes reading,
 * database writers and a log writer).
 *
 * oltp.f defaults: 10 data files of 10 MiB (datafiles, prealloc 100%),
 * one 10 MiB log file, iosize 2 KiB, 200 shadow threads, 10 db writers,
 * 1 log writer.  Shadows read 2 KiB at random offsets and post to the
 * writers' semaphores; a db writer waits for 1000 posts, then writes 100
 * random 2 KiB blocks (dsync); the log writer waits for 3200 posts, then
 * writes 256 KiB (dsync).
 * Here, one transaction is one shadow iteration -- a random 2 KiB read of
 * a random data file -- and the writers' work is spread at the same
 * rates: every 10th transaction also writes 2 KiB at a random offset of a
 * random data file and fdatasyncs it (100 per 1000 reads), every 100th
 * also appends 8 KiB to the log (sequentially, wrapping at its size) and
 * fdatasyncs it (256 KiB per 3200 reads).  A closed-loop process cannot
 * block on a semaphore without a transaction of its own, so the poster
 * does the writer's work, which is also what oltp.f's blocking sempost
 * amounts to when writers fall behind.
 * The scale multiplies the data and log file SIZES (10 files kept).
 * Default 200 processes, 5000 transactions.
 * kv: nfiles, filesize, logsize, iosize.
 */
#include <errno.h>
#include <stdlib.h>
#include "bench/bench_int.h"
#include "util/util.h"

#define OLTP_WRITE_EVERY 10u
#define OLTP_LOG_EVERY 100u
#define OLTP_LOG_IO 8192u

struct oltp_state {
    struct bh_fileset data, log;
    uint64_t iosize, fsize, logsize, logpos, n;
};

static const char *const oltp_keys[] = {
    "nfiles", "filesize", "logsize", "iosize", NULL
};

/* oltp_scaled -- a size x scale, at least 64 KiB, in whole iosize units. */
static uint64_t oltp_scaled(struct bh_run *r, uint64_t size, uint64_t io)
{
    double x = (double)size * bh_params_of(r)->scale;
    uint64_t v = x < 65536 ? 65536 : (uint64_t)x;
    return v / io * io;
}

/* oltp_init -- data files and the log. */
static int oltp_init(struct bh_run *r)
{
    struct oltp_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench oltp: out of memory");
    bh_set_state(r, s);
    uint64_t nfiles;
    int rc = bh_kv_check(r, oltp_keys);
    if (rc == 0) rc = bh_kv_u64(r, "nfiles", 10, &nfiles);
    if (rc == 0) rc = bh_kv_u64(r, "filesize", 10 << 20, &s->fsize);
    if (rc == 0) rc = bh_kv_u64(r, "logsize", 10 << 20, &s->logsize);
    if (rc == 0) rc = bh_kv_u64(r, "iosize", 2048, &s->iosize);
    if (rc == 0 && (s->iosize == 0 || s->iosize > 65536 || nfiles == 0 ||
                    nfiles > 100000 || s->fsize == 0 || s->logsize == 0))
        rc = ubj_set_error(-EINVAL, "bench oltp: iosize 1 .. 64 KiB, nfiles "
                           "1 .. 100000, filesize and logsize > 0");
    if (rc == 0)
        rc = bh_params_end(r);
    if (rc < 0)
        return rc;
    s->fsize = oltp_scaled(r, s->fsize, s->iosize);
    s->logsize = oltp_scaled(r, s->logsize, OLTP_LOG_IO);
    rc = bh_fileset_make(r, &s->data, "datafiles", nfiles, 1024,
                         (double)s->fsize, 0, 100, BH_IO_MAX);
    if (rc == 0)
        rc = bh_fileset_make(r, &s->log, "logfile", 1, 1024,
                             (double)s->logsize, 0, 100, BH_IO_MAX);
    return rc;
}

/* oltp_dbwrite -- a db writer's random dsync write. */
static int oltp_dbwrite(struct bh_run *r, struct oltp_state *s, struct bh_proc *p)
{
    const struct bh_fentry *e = &s->data.e[bh_below(p, s->data.n)];
    uint64_t off = bh_below(p, e->size / s->iosize) * s->iosize;
    int rc = bh_write(r, e->ino, off, s->iosize, s->iosize, BH_OP_WRITE);
    return rc < 0 ? rc : bh_fsync(r, e->ino, 1);
}

/* oltp_logwrite -- the log writer's dsync write. */
static int oltp_logwrite(struct bh_run *r, struct oltp_state *s)
{
    const struct bh_fentry *e = &s->log.e[0];
    if (s->logpos + OLTP_LOG_IO > e->size)
        s->logpos = 0;
    uint64_t off = s->logpos;
    s->logpos += OLTP_LOG_IO;    /* reserved before the write (overlap) */
    int rc = bh_write(r, e->ino, off, OLTP_LOG_IO, OLTP_LOG_IO, BH_OP_WRITE);
    return rc < 0 ? rc : bh_fsync(r, e->ino, 1);
}

/* oltp_op -- one shadow read, plus the writers' share. */
static int oltp_op(struct bh_run *r, struct bh_proc *p)
{
    struct oltp_state *s = bh_state(r);
    const struct bh_fentry *e = &s->data.e[bh_below(p, s->data.n)];
    uint64_t off = bh_below(p, e->size / s->iosize) * s->iosize;
    int64_t got = bh_read(r, e->ino, off, s->iosize, s->iosize);
    if (got < 0)
        return (int)got;
    s->n++;
    int rc = 0;
    if (s->n % OLTP_WRITE_EVERY == 0)
        rc = oltp_dbwrite(r, s, p);
    if (rc == 0 && s->n % OLTP_LOG_EVERY == 0)
        rc = oltp_logwrite(r, s);
    return rc;
}

/* oltp_fini -- free the state. */
static void oltp_fini(struct bh_run *r)
{
    struct oltp_state *s = bh_state(r);
    if (s != NULL) {
        bh_fileset_free(&s->data);
        bh_fileset_free(&s->log);
    }
    free(s);
    bh_set_state(r, NULL);
}

const struct bh_workload bh_wl_oltp = {
    .name = "oltp",
    .summary = "OLTP mix after Filebench oltp.f: 2 KiB random reads, dsync "
               "random writes and log writes",
    .default_procs = 200,
    .default_ops = 5000,
    .init = oltp_init,
    .op = oltp_op,
    .fini = oltp_fini,
};
