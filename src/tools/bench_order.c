/*
 * bench_order.c -- `ubjfs bench ordering`: the metadata-ordering study of
 * seed 003 (Ganger & Patt, OSDI'94), issue 21 item 5 and the ordering
 * issues after it: per workload x users x mode, one harness run (bh_run)
 * on the seed's disk, hdd:hp_c2249a, with its write cache off (the
 * profile's default, write_cache = 0).  A benchmark, not a timed test;
 * docs/RESULTS.md records the figures.
 *
 * The grid.  Workloads ganger (4 users copying and removing trees, sized
 * so that it is disk-bound: its source tree larger than the buffer cache,
 * as in the seed) and andrew (wl_andrew.c: mkdir, copy, stat, read,
 * compile); users 1 and 4; modes the list or_modes_default (the later
 * ordering modes are one entry each there), every one on the VIRTUAL
 * clock (deterministic: users serialised, docs/HARNESS.md says what that
 * hides); then one configuration -- ganger, 4 users, every mode -- on the
 * REAL clock, where the users' transactions overlap (smaller by default,
 * since its time is real time), after its twin on the virtual clock (the
 * same sizes: the difference is the overlap).  Sizes: or_size() (--full: larger).
 *
 * Per cell: task elapsed time (bh_result.user_ns: per user and the mean;
 * per phase), the harness's elapsed time (with the final sync), the
 * device's read, write and flush requests and bytes written, and the
 * conventional scheme's mean task time over this mode's (x_sync: > 1 is
 * faster than sync).  Output: the table on stdout, a progress line per
 * run on stderr, --csv FILE, --json FILE, --plots DIR (gnuplot: the mean
 * task time and the write requests per mode and configuration).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "bench_out.h"
#include "ubjfs/mode.h"
#include "ubjfs/model.h"
#include "tools.h"

#define OR_MAXV 16u
#define OR_DEVICE "hdd:hp_c2249a"

/* The modes, in the study's order: the conventional scheme first.  A mode
 * this build lacks is skipped with a note (an explicit --mode must exist). */
static const char *const or_modes_default[] = { "sync", "none", "ordered", "ubj" };
static const char *const or_wl_default[] = { "ganger", "andrew" };
static const unsigned or_users_default[] = { 1, 4 };

/* One configuration's sizes. */
struct or_size {
    const char *kv;          /* the workload's kv (NULL: its defaults) */
    uint32_t cache_blocks;
    uint64_t image_blocks;   /* 0: the harness's default (256 MiB) */
};

struct or_cell {
    const char *wl, *mode;
    bool real;
    unsigned users;
    struct or_size sz;
    double host_s;
    double x_sync;           /* sync's user_mean_ns / this one's (NAN: no sync) */
    struct bh_result r;
};

struct or_args {
    const char *modes[OR_MAXV];
    unsigned nmode;
    const char *wls[OR_MAXV];
    unsigned nwl;
    unsigned users[OR_MAXV];
    unsigned nusers;
    const char *device;
    struct tools_bout_study io;   /* --seed, --csv, --json, --plots, --quiet */
    bool full, tiny, no_real;
};

/* or_size -- the sizes of workload wl on the virtual or the real clock.
 * ganger: a source tree of files x 8 KiB (mean) twice the cache -- the
 * seed's trees did not fit its cache -- each user's copy as large again;
 * andrew: the benchmark's ~200 KB tree per user (--full: four times). */
static struct or_size or_size(const char *wl, bool real, bool full, bool tiny)
{
    if (tiny)   /* seconds, for tests: nothing disk-bound */
        return strcmp(wl, "ganger") == 0
                   ? (struct or_size){ real ? "files=6,dirs=2" : "files=24,dirs=4", 256, 0 }
                   : (struct or_size){ "files=10,dirs=2,compile_us=10,link_ms=1", 256, 0 };
    if (strcmp(wl, "ganger") == 0) {
        if (full)   /* 32 MiB source, 16 MiB cache, 5 x 32 MiB fits 1 GiB */
            return real ? (struct or_size){ "files=1000,dirs=80", 1024, 0 }
                        : (struct or_size){ "files=4000,dirs=320", 4096, 262144 };
        return real ? (struct or_size){ "files=250,dirs=20", 256, 0 }   /* 2 MiB / 1 MiB */
                    : (struct or_size){ "files=1000,dirs=80", 1024, 0 };  /* 8 MiB / 4 MiB */
    }
    return (struct or_size){ full ? "files=280" : NULL, 1024, 0 };
}

/* or_now -- monotonic seconds. */
static double or_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the command line ------------------------------------------------------ */

/* or_usage -- the --help text. */
static void or_usage(void)
{
    printf("Usage: %s [OPTIONS]\n"
           "The metadata-ordering study (seed 003, Ganger & Patt; issue 21): per\n"
           "workload x users x consistency mode, one harness run on hdd:hp_c2249a\n"
           "(write cache off) on the virtual clock (users serialised), then ganger\n"
           "with 4 users in every mode on the real clock (users overlapping).  Per\n"
           "run: task elapsed time (mean and slowest user; per phase), the device's\n"
           "read / write / flush requests and MiB written, and sync's mean task time\n"
           "over the mode's (x_sync).  A progress line per run on stderr, the table\n"
           "on stdout.  docs/RESULTS.md, docs/TOOLS.md.\n\n"
           "Options:\n"
           "      --full            larger sizes: ganger 4000 files (32 MiB) over a\n"
           "                        16 MiB cache, andrew 280 files; real clock: ganger\n"
           "                        1000 files over 4 MiB (default: ganger 1000 files\n"
           "                        over 4 MiB, andrew 70 files; real: 250 over 1 MiB)\n"
           "  -m, --mode MODE       a mode (repeatable; default sync, none, ordered,\n"
           "                        ubj -- those this build has)\n"
           "  -w, --workload NAME   ganger or andrew (repeatable; default both)\n"
           "  -u, --users N         users, 1..%u (repeatable; default 1 and 4)\n"
           "  -d, --device SPEC     the device stack (default %s)\n"
           "      --tiny            a grid of seconds (tests: ganger 24 files, andrew\n"
           "                        10, a 1 MiB cache; real: 6 files)\n"
           "      --no-real         no real-clock runs\n"
           "      --seed N          random seed (default 1)\n"
           "      --csv FILE        the runs as CSV\n"
           "      --json FILE       the runs as JSON\n"
           "      --plots DIR       gnuplot SVGs into DIR\n"
           "  -q, --quiet           no progress lines\n"
           "      --help            print this help\n\n"
           "Exit status: 0 done, 1 a run failed, 2 usage error.\n", tools_prog,
           BH_USERS_MAX, OR_DEVICE);
}

/* or_parse_one -- option c with arg (tools_bout_study_opts's callback; ctx:
 * the struct or_args); 0, or an exit code. */
static int or_parse_one(void *ctx, int c, const char *arg)
{
    struct or_args *a = ctx;
    char *end;
    unsigned long v;
    switch (c) {
    case 'm': {
        struct ubj_format_opts fo = { .mode = arg };
        if (tools_format_trial(&fo) < 0)
            return tools_usage_err("unknown mode '%s'", arg);
        if (a->nmode == OR_MAXV)
            return tools_usage_err("at most %u modes", OR_MAXV);
        a->modes[a->nmode++] = arg;
        return 0;
    }
    case 'w':
        if (strcmp(arg, "ganger") != 0 && strcmp(arg, "andrew") != 0)
            return tools_usage_err("bad --workload '%s' (ganger, andrew)", arg);
        if (a->nwl == OR_MAXV)
            return tools_usage_err("at most %u workloads", OR_MAXV);
        a->wls[a->nwl++] = arg;
        return 0;
    case 'u':
        v = strtoul(arg, &end, 10);
        if (*end != '\0' || v < 1 || v > BH_USERS_MAX || a->nusers == OR_MAXV)
            return tools_usage_err("bad --users '%s' (1..%u)", arg, BH_USERS_MAX);
        a->users[a->nusers++] = (unsigned)v;
        return 0;
    case 'd': a->device = arg; return 0;
    case 'f': a->full = true; return 0;
    case 'T': a->tiny = true; return 0;
    case 'R': a->no_real = true; return 0;
    default:
        return tools_usage_err("unknown option");
    }
}

/* or_defaults -- the lists not given. */
static void or_defaults(struct or_args *a)
{
    bool given = a->nmode > 0;
    for (unsigned i = 0; !given && i < sizeof or_modes_default / sizeof *or_modes_default; i++) {
        if (ubj_mode_lookup(or_modes_default[i]) != NULL)
            a->modes[a->nmode++] = or_modes_default[i];
        else if (!a->io.quiet)
            fprintf(stderr, "%s: mode %s: not in this build, skipped\n", tools_prog,
                    or_modes_default[i]);
    }
    for (unsigned i = 0; a->nwl == 0 && i < 2; i++)
        a->wls[i] = or_wl_default[i];
    if (a->nwl == 0)
        a->nwl = 2;
    for (unsigned i = 0; a->nusers == 0 && i < 2; i++)
        a->users[i] = or_users_default[i];
    if (a->nusers == 0)
        a->nusers = 2;
}

/* or_parse -- the options, then the defaults.  -1, or an exit code. */
static int or_parse(int argc, char **argv, struct or_args *a)
{
    static const struct option lo[] = {
        { "full", no_argument, NULL, 'f' }, { "tiny", no_argument, NULL, 'T' },
        { "mode", required_argument, NULL, 'm' }, { "workload", required_argument, NULL, 'w' },
        { "users", required_argument, NULL, 'u' }, { "device", required_argument, NULL, 'd' },
        { "no-real", no_argument, NULL, 'R' },
        TOOLS_BOUT_STUDY_LONGOPTS,
    };
    int rc = tools_bout_study_opts(argc, argv, "m:w:u:d:q", lo, or_usage, or_parse_one, a,
                                   &a->io);
    if (rc >= 0)
        return rc;
    or_defaults(a);
    if (a->nmode == 0)
        return tools_usage_err("no mode to run");
    if (a->full && a->tiny)
        return tools_usage_err("--full and --tiny exclude each other");
    struct ubj_spec_opts so = { .nblocks = 1024, .clock_kind = UBJ_CLOCK_VIRTUAL };
    struct ubj_bdev *dev = NULL;
    rc = ubj_bdev_open_spec(a->device, NULL, &so, &dev);
    if (rc < 0)
        return tools_usage_err("bad --device '%s': %s", a->device, tools_libmsg(rc));
    ubj_bdev_destroy(dev);
    return -1;
}

/* ---- the runs -------------------------------------------------------------- */

/* or_run -- one cell.  0 or a negative errno (message set). */
static int or_run(const struct or_args *a, struct or_cell *c)
{
    struct bh_config cfg = {
        .workload = c->wl, .mode = c->mode, .device = a->device,
        .cache_blocks = c->sz.cache_blocks, .image_blocks = c->sz.image_blocks,
        .clock = c->real ? UBJ_CLOCK_REAL : UBJ_CLOCK_VIRTUAL,
        .params = { .procs = c->users, .seed = a->io.seed, .kv = c->sz.kv },
    };
    double t0 = or_now();
    int rc = bh_run(&cfg, &c->r);
    c->host_s = or_now() - t0;
    return rc;
}

/* or_cells -- the grid's cells (without figures) into *out, *n of them. */
static int or_cells(const struct or_args *a, struct or_cell **out, size_t *n)
{
    size_t total = (size_t)a->nwl * a->nusers * a->nmode + (a->no_real ? 0 : 2 * a->nmode);
    struct or_cell *c = calloc(total, sizeof *c);
    if (c == NULL)
        return -ENOMEM;
    size_t k = 0;
    for (unsigned w = 0; w < a->nwl; w++)
        for (unsigned u = 0; u < a->nusers; u++)
            for (unsigned m = 0; m < a->nmode; m++)
                c[k++] = (struct or_cell){ .wl = a->wls[w], .mode = a->modes[m],
                                           .users = a->users[u],
                                           .sz = or_size(a->wls[w], false, a->full, a->tiny) };
    for (int real = 0; !a->no_real && real < 2; real++)   /* its virtual twin first */
        for (unsigned m = 0; m < a->nmode; m++)
            c[k++] = (struct or_cell){ .wl = "ganger", .mode = a->modes[m], .real = real,
                                       .users = 4,
                                       .sz = or_size("ganger", true, a->full, a->tiny) };
    *out = c;
    *n = k;
    return 0;
}

/* or_same -- same configuration (all but the mode)? */
static bool or_same(const struct or_cell *x, const struct or_cell *y)
{
    return strcmp(x->wl, y->wl) == 0 && x->real == y->real && x->users == y->users &&
           x->sz.cache_blocks == y->sz.cache_blocks &&
           strcmp(x->sz.kv ? x->sz.kv : "", y->sz.kv ? y->sz.kv : "") == 0;
}

/* or_xsync -- every cell's x_sync from its configuration's sync cell. */
static void or_xsync(struct or_cell *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        c[i].x_sync = NAN;
        for (size_t j = 0; j < n; j++)
            if (strcmp(c[j].mode, "sync") == 0 && or_same(&c[i], &c[j]) &&
                c[i].r.user_mean_ns > 0)
                c[i].x_sync = (double)c[j].r.user_mean_ns / (double)c[i].r.user_mean_ns;
    }
}

/* or_user_max -- the slowest user's task time. */
static uint64_t or_user_max(const struct or_cell *c)
{
    uint64_t m = 0;
    for (unsigned u = 0; u < c->users && u < BH_USERS_MAX; u++)
        m = c->r.user_ns[u] > m ? c->r.user_ns[u] : m;
    return m;
}

/* ---- output ---------------------------------------------------------------- */

/* or_table -- the table on f. */
static void or_table(FILE *f, const struct or_args *a, const struct or_cell *c, size_t n)
{
    fprintf(f, "device %s", a->device);
    fputs("\n(size: the workload's kv and the cache; task_s: mean over users of the time\n"
          " to the end of the user's last transaction; max_s: the slowest user;\n"
          " elapsed_s: the run, with the final sync; x_sync: sync's task_s over this\n"
          " one; phases: mean seconds per phase)\n", f);
    fprintf(f, "%-8s %-7s %5s %-8s %-28s %9s %9s %9s %8s %8s %7s %8s %7s  %s\n",
            "workload", "clock", "users", "mode", "size", "task_s", "max_s", "elapsed_s", "reads", "writes",
            "flushes", "MiB_wr", "x_sync", "phases");
    for (size_t i = 0; i < n; i++) {
        const struct bh_result *r = &c[i].r;
        char xs[16], ph[160] = "";
        if (isfinite(c[i].x_sync))
            snprintf(xs, sizeof xs, "%.2f", c[i].x_sync);
        else
            snprintf(xs, sizeof xs, "-");
        for (unsigned k = 0; k < r->nphases && r->nphases > 1; k++)
            snprintf(ph + strlen(ph), sizeof ph - strlen(ph), "%s%s %.3f", k ? ", " : "",
                     r->phase_name[k], (double)r->phase_ns[k] / 1e9);
        char size[64];
        snprintf(size, sizeof size, "%s/%uK", c[i].sz.kv ? c[i].sz.kv : "-",
                 c[i].sz.cache_blocks * 4);
        fprintf(f, "%-8s %-7s %5u %-8s %-28s %9.3f %9.3f %9.3f %8llu %8llu %7llu %8.2f %7s"
                "  %s\n", c[i].wl, c[i].real ? "real" : "virtual", c[i].users, c[i].mode, size,
                (double)r->user_mean_ns / 1e9, (double)or_user_max(&c[i]) / 1e9,
                (double)r->elapsed_ns / 1e9, (unsigned long long)r->dev_reads,
                (unsigned long long)r->dev_writes, (unsigned long long)r->dev_flush_reqs,
                (double)r->bytes_device / 1048576.0, xs, ph);
    }
}

/* What the file writers get (tools_bout_study_files): the grid. */
struct or_out { const struct or_args *a; const struct or_cell *c; size_t n; };

/* or_list -- n values of v joined by ';' as one CSV/JSON-safe token. */
static void or_list(FILE *f, const uint64_t *v, unsigned n, const char *sep)
{
    for (unsigned i = 0; i < n; i++)
        fprintf(f, "%s%llu", i ? sep : "", (unsigned long long)v[i]);
}

/* or_csv -- header + a line per cell. */
static int or_csv(const char *path, void *ctx)
{
    const struct or_out *o = ctx;
    const struct or_cell *c = o->c;
    size_t n = o->n;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    fputs("workload,clock,device,users,mode,kv,cache_blocks,ops,elapsed_ns,sync_ns,"
          "user_mean_ns,user_max_ns,user_ns,phases,phase_ns,dev_reads,dev_writes,"
          "dev_flushes,bytes_written,bytes_data,bytes_metadata,bytes_journal,"
          "txn_overlap_max,x_sync\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct bh_result *r = &c[i].r;
        fprintf(f, "%s,%s,", c[i].wl, c[i].real ? "real" : "virtual");
        tools_bout_csv_field(f, o->a->device);
        fprintf(f, ",%u,%s,", c[i].users, c[i].mode);
        tools_bout_csv_field(f, c[i].sz.kv ? c[i].sz.kv : "");
        fprintf(f, ",%u,%llu,%llu,%llu,%llu,%llu,", c[i].sz.cache_blocks,
                (unsigned long long)r->ops, (unsigned long long)r->elapsed_ns,
                (unsigned long long)r->sync_ns, (unsigned long long)r->user_mean_ns,
                (unsigned long long)or_user_max(&c[i]));
        or_list(f, r->user_ns, c[i].users < BH_USERS_MAX ? c[i].users : BH_USERS_MAX, ";");
        fputc(',', f);
        for (unsigned k = 0; k < r->nphases; k++)
            fprintf(f, "%s%s", k ? ";" : "", r->phase_name[k]);
        fputc(',', f);
        or_list(f, r->phase_ns, r->nphases, ";");
        fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%u,",
                (unsigned long long)r->dev_reads, (unsigned long long)r->dev_writes,
                (unsigned long long)r->dev_flush_reqs, (unsigned long long)r->bytes_device,
                (unsigned long long)r->bytes_data, (unsigned long long)r->bytes_metadata,
                (unsigned long long)r->bytes_journal, r->txn_overlap_max);
        if (isfinite(c[i].x_sync))
            fprintf(f, "%.6f", c[i].x_sync);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -EIO;
}

/* or_json -- {"schema", "device", "seed", "cells": [...]}. */
static int or_json(const char *path, void *ctx)
{
    const struct or_out *o = ctx;
    const struct or_args *a = o->a;
    const struct or_cell *c = o->c;
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    fputs("{\"schema\": \"ubjfs-bench-ordering/1\", \"device\": ", f);
    tools_bout_json_string(f, a->device);
    fprintf(f, ", \"seed\": %llu, \"full\": %s, \"cells\": [",
            (unsigned long long)a->io.seed, a->full ? "true" : "false");
    for (size_t i = 0; i < o->n; i++) {
        const struct bh_result *r = &c[i].r;
        fprintf(f, "%s\n  {\"workload\": \"%s\", \"clock\": \"%s\", \"users\": %u, "
                "\"mode\": \"%s\", \"kv\": ", i ? "," : "", c[i].wl,
                c[i].real ? "real" : "virtual", c[i].users, c[i].mode);
        tools_bout_json_string(f, c[i].sz.kv);
        fprintf(f, ", \"cache_blocks\": %u, \"ops\": %llu, \"elapsed_ns\": %llu, "
                "\"sync_ns\": %llu, \"user_mean_ns\": %llu, \"user_max_ns\": %llu, "
                "\"user_ns\": [", c[i].sz.cache_blocks, (unsigned long long)r->ops,
                (unsigned long long)r->elapsed_ns, (unsigned long long)r->sync_ns,
                (unsigned long long)r->user_mean_ns, (unsigned long long)or_user_max(&c[i]));
        or_list(f, r->user_ns, c[i].users < BH_USERS_MAX ? c[i].users : BH_USERS_MAX, ", ");
        fputs("], \"phase_ns\": {", f);
        for (unsigned k = 0; k < r->nphases; k++)
            fprintf(f, "%s\"%s\": %llu", k ? ", " : "", r->phase_name[k],
                    (unsigned long long)r->phase_ns[k]);
        fprintf(f, "}, \"dev_reads\": %llu, \"dev_writes\": %llu, \"dev_flushes\": %llu, "
                "\"bytes_written\": %llu, \"bytes_data\": %llu, \"bytes_metadata\": %llu, "
                "\"bytes_journal\": %llu, \"txn_overlap_max\": %u, \"x_sync\": ",
                (unsigned long long)r->dev_reads, (unsigned long long)r->dev_writes,
                (unsigned long long)r->dev_flush_reqs, (unsigned long long)r->bytes_device,
                (unsigned long long)r->bytes_data, (unsigned long long)r->bytes_metadata,
                (unsigned long long)r->bytes_journal, r->txn_overlap_max);
        if (isfinite(c[i].x_sync))
            fprintf(f, "%.6f}", c[i].x_sync);
        else
            fputs("null}", f);
    }
    fputs("\n]}\n", f);
    return fclose(f) == 0 ? 0 : -EIO;
}

/* or_dat -- dir/NAME.dat: a row per configuration (workload/users[/real]),
 * a column per mode, the value `what` (0: mean task seconds, 1: write
 * requests).  0 or a negative errno. */
static int or_dat(const char *dir, const char *name, const struct or_args *a,
                  const struct or_cell *c, size_t n, int what)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.dat", dir, name);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    fputs("config", f);
    for (unsigned m = 0; m < a->nmode; m++)
        fprintf(f, " %s", a->modes[m]);
    fputc('\n', f);
    for (size_t i = 0; i < n; i += a->nmode) {   /* the cells come mode-innermost */
        fprintf(f, "%s/%uu/%uK%s", c[i].wl, c[i].users, c[i].sz.cache_blocks * 4,
                c[i].real ? "/real" : "");
        for (unsigned m = 0; m < a->nmode && i + m < n; m++)
            fprintf(f, " %.6f", what ? (double)c[i + m].r.dev_writes
                                     : (double)c[i + m].r.user_mean_ns / 1e9);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -EIO;
}

/* or_plots -- ordering-time.dat/.svg, ordering-writes.dat/.svg, plots.gp.
 * 0, or tools_bout_run_gnuplot's error. */
static int or_plots(const char *dir, void *ctx)
{
    const struct or_out *o = ctx;
    const struct or_args *a = o->a;
    int rc = or_dat(dir, "ordering-time", a, o->c, o->n, 0);
    if (rc == 0)
        rc = or_dat(dir, "ordering-writes", a, o->c, o->n, 1);
    if (rc < 0)
        return rc;
    char path[4096];
    snprintf(path, sizeof path, "%s/plots.gp", dir);
    FILE *gp = fopen(path, "w");
    if (gp == NULL)
        return -errno;
    fprintf(gp, "set terminal svg size 900,420\nset style data histograms\n"
            "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
            "set key outside right\nset xtics rotate by -30\n"
            "set output 'ordering-time.svg'\nset title '%s: mean task elapsed time'\n"
            "set ylabel 'seconds'\n"
            "plot for [i=2:%u] 'ordering-time.dat' using i:xtic(1) title columnheader(i)\n"
            "set output 'ordering-writes.svg'\nset title '%s: device write requests'\n"
            "set ylabel 'requests'\n"
            "plot for [i=2:%u] 'ordering-writes.dat' using i:xtic(1) title columnheader(i)\n",
            a->device, a->nmode + 1, a->device, a->nmode + 1);
    if (fclose(gp) != 0)
        return -EIO;
    return tools_bout_run_gnuplot(dir);
}

/* or_outputs -- table, files.  An exit code. */
static int or_outputs(const struct or_args *a, const struct or_cell *c, size_t n)
{
    or_table(stdout, a, c, n);
    struct or_out o = { a, c, n };
    int rc = tools_bout_study_files("bench ordering", a->io.csv, a->io.json, a->io.plots, or_csv,
                                    or_json, or_plots, &o);
    return rc < 0 ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}

/* tools_bench_ordering_main -- `ubjfs bench ordering`. */
int tools_bench_ordering_main(int argc, char **argv)
{
    struct or_args a = { .io.seed = 1, .device = OR_DEVICE };
    int rc = or_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = tools_bout_study_preflight(&a.io);   /* before a long run */
    if (rc != TOOLS_EXIT_OK)
        return rc;
    struct or_cell *c = NULL;
    size_t n = 0;
    if (or_cells(&a, &c, &n) < 0) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    double t0 = or_now();
    for (size_t i = 0; i < n; i++) {
        rc = or_run(&a, &c[i]);
        if (rc < 0) {
            tools_err("%s %s %u users %s: %s", c[i].wl,
                      c[i].real ? "real" : "virtual", c[i].users, c[i].mode,
                      tools_libmsg(rc));
            free(c);
            return TOOLS_EXIT_ERR;
        }
        if (!a.io.quiet)
            fprintf(stderr, "[%zu/%zu] %s %s %u users %s: task %.3f s, %llu reads, "
                    "%llu writes, %llu flushes (host %.1f s, %.0f s so far)\n", i + 1, n,
                    c[i].wl, c[i].real ? "real" : "virtual", c[i].users, c[i].mode,
                    (double)c[i].r.user_mean_ns / 1e9, (unsigned long long)c[i].r.dev_reads,
                    (unsigned long long)c[i].r.dev_writes,
                    (unsigned long long)c[i].r.dev_flush_reqs, c[i].host_s, or_now() - t0);
    }
    or_xsync(c, n);
    rc = or_outputs(&a, c, n);
    free(c);
    return rc;
}
