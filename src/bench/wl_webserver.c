/*
 * bench/wl_webserver.c -- Filebench's webserver personality
 * (filebench/workloads/webserver.f): whole-file reads of many small files
 * and an append to a shared log.
 *
 * webserver.f defaults: nfiles 1000 (x scale), meandirwidth 20, filesize
 * cvar-gamma mean 16 KiB gamma 1.5, nthreads 100, iosize 1 MiB,
 * meanappendsize 16 KiB; bigfileset prealloc 100%; logfiles: 1 entry
 * (prealloc, empty here: it only grows).
 * One transaction = one pass over the thread's flowop list:
 *   10 x (openfile; readwholefile 1m; closefile); appendfilerand 16k
 *   to the log file.
 * Default 2000 transactions.
 * kv: nfiles, dirwidth, filesize, iosize, appendsize.
 */
#include <errno.h>
#include "bench/bench_int.h"

/* ws_init -- bigfileset and the log. */
static int ws_init(struct bh_run *r)
{
    struct fb_params p = { .nfiles = 1000, .width = 20, .fsize = 16384,
                           .iosize = 1 << 20, .append = 16384 };
    int rc = fb_state_init(r, "webserver", &p, 100);
    struct fb_state *s = bh_state(r);
    if (rc == 0)
        rc = bh_fileset_make(r, &s->log, "logfiles", 1, p.width, 1.0, 0, 0,
                             s->iosize);
    if (rc == 0)
        rc = fb_createfile(r, &s->log, bh_setup_proc(r)) < 0 ? -EIO : 0;
    if (rc == 0)
        rc = (int)fb_closefile(r, &s->log, 0);
    return rc < 0 ? rc : 0;
}

/* ws_op -- one pass of the flowop list. */
static int ws_op(struct bh_run *r, struct bh_proc *p)
{
    struct fb_state *s = bh_state(r);
    int64_t fd = 0;
    for (unsigned k = 0; k < 10 && fd >= -1; k++) {
        fd = fb_openfile(r, &s->set, p);
        if (fd >= -1) fd = fb_readwholefile(r, &s->set, fd, s->iosize);
        if (fd >= -1) fd = fb_closefile(r, &s->set, fd);
    }
    if (fd >= -1) fd = fb_appendfilerand(r, &s->log, 0, p, s->append);
    return fd < -1 ? (int)fd : 0;
}

const struct bh_workload bh_wl_webserver = {
    .name = "webserver",
    .summary = "Filebench webserver.f: 10 whole-file reads + a log append",
    .default_procs = 100,
    .default_ops = 2000,
    .init = ws_init,
    .op = ws_op,
    .fini = fb_state_fini,
};
