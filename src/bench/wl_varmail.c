/*
 * bench/wl_varmail.c -- Filebench's varmail personality
 * (filebench/workloads/varmail.f): a mail server's /var/mail, each thread
 * looping over delete, create + append + fsync, open + read + append +
 * fsync, open + read.
 *
 * varmail.f defaults: nfiles 1000 (x scale), meandirwidth 1000000 (one
 * directory), filesize cvar-gamma mean 16 KiB gamma 1.5, nthreads 16,
 * iosize 1 MiB, meanappendsize 16 KiB; fileset prealloc 80%.
 * One transaction = one pass over the thread's flowop list:
 *   deletefile; createfile; appendfilerand 16k; fsync; closefile;
 *   openfile; readwholefile 1m; appendfilerand 16k; fsync; closefile;
 *   openfile; readwholefile 1m; closefile.
 * Filebench runs for a time; our default is 2000 transactions.
 * kv: nfiles, dirwidth, filesize, iosize, appendsize.
 */
#include "bench/bench_int.h"

/* vm_init -- the bigfileset. */
static int vm_init(struct bh_run *r)
{
    struct fb_params p = { .nfiles = 1000, .width = 1000000, .fsize = 16384,
                           .iosize = 1 << 20, .append = 16384 };
    return fb_state_init(r, "varmail", &p, 80);
}

/* vm_op -- one pass of the flowop list. */
static int vm_op(struct bh_run *r, struct bh_proc *p)
{
    struct fb_state *s = bh_state(r);
    struct bh_fileset *fs = &s->set;
    int64_t rc = fb_deletefile(r, fs, p);
    int64_t fd = rc < -1 ? rc : fb_createfile(r, fs, p);
    if (fd >= -1) fd = fb_appendfilerand(r, fs, fd, p, s->append);
    if (fd >= -1) fd = fb_fsync(r, fs, fd);
    if (fd >= -1) fd = fb_closefile(r, fs, fd);
    if (fd >= -1) fd = fb_openfile(r, fs, p);
    if (fd >= -1) fd = fb_readwholefile(r, fs, fd, s->iosize);
    if (fd >= -1) fd = fb_appendfilerand(r, fs, fd, p, s->append);
    if (fd >= -1) fd = fb_fsync(r, fs, fd);
    if (fd >= -1) fd = fb_closefile(r, fs, fd);
    if (fd >= -1) fd = fb_openfile(r, fs, p);
    if (fd >= -1) fd = fb_readwholefile(r, fs, fd, s->iosize);
    if (fd >= -1) fd = fb_closefile(r, fs, fd);
    return fd < -1 ? (int)fd : 0;
}

const struct bh_workload bh_wl_varmail = {
    .name = "varmail",
    .summary = "Filebench varmail.f: mail server (create/append/fsync/read/delete)",
    .default_procs = 16,
    .default_ops = 2000,
    .init = vm_init,
    .op = vm_op,
    .fini = fb_state_fini,
};
