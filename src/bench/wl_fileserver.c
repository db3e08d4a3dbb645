/*
 * bench/wl_fileserver.c -- Filebench's fileserver personality
 * (filebench/workloads/fileserver.f): a file server's mix of whole-file
 * creates and writes, appends, whole-file reads, deletes and stats.
 *
 * fileserver.f defaults: nfiles 10000 (x scale), meandirwidth 20, filesize
 * cvar-gamma mean 128 KiB gamma 1.5, nthreads 50, iosize 1 MiB,
 * meanappendsize 16 KiB; fileset prealloc 80% (about 1 GiB at scale 1:
 * give it image_blocks or a scale to match).
 * One transaction = one pass over the thread's flowop list:
 *   createfile; writewholefile 1m; closefile; openfile; appendfilerand
 *   16k; closefile; openfile; readwholefile 1m; closefile; deletefile;
 *   statfile.
 * Default 1000 transactions (Filebench runs for a time).
 * kv: nfiles, dirwidth, filesize, iosize, appendsize.
 */
#include "bench/bench_int.h"

/* fsv_init -- the bigfileset. */
static int fsv_init(struct bh_run *r)
{
    struct fb_params p = { .nfiles = 10000, .width = 20, .fsize = 131072,
                           .iosize = 1 << 20, .append = 16384 };
    return fb_state_init(r, "fileserver", &p, 80);
}

/* fsv_op -- one pass of the flowop list. */
static int fsv_op(struct bh_run *r, struct bh_proc *p)
{
    struct fb_state *s = bh_state(r);
    struct bh_fileset *fs = &s->set;
    int64_t fd = fb_createfile(r, fs, p);
    if (fd >= -1) fd = fb_writewholefile(r, fs, fd, s->iosize);
    if (fd >= -1) fd = fb_closefile(r, fs, fd);
    if (fd >= -1) fd = fb_openfile(r, fs, p);
    if (fd >= -1) fd = fb_appendfilerand(r, fs, fd, p, s->append);
    if (fd >= -1) fd = fb_closefile(r, fs, fd);
    if (fd >= -1) fd = fb_openfile(r, fs, p);
    if (fd >= -1) fd = fb_readwholefile(r, fs, fd, s->iosize);
    if (fd >= -1) fd = fb_closefile(r, fs, fd);
    if (fd >= -1) fd = fb_deletefile(r, fs, p);
    if (fd >= -1) fd = fb_statfile(r, fs, p);
    return fd < -1 ? (int)fd : 0;
}

const struct bh_workload bh_wl_fileserver = {
    .name = "fileserver",
    .summary = "Filebench fileserver.f: whole-file create/write/append/read/"
               "delete/stat",
    .default_procs = 50,
    .default_ops = 1000,
    .init = fsv_init,
    .op = fsv_op,
    .fini = fb_state_fini,
};
