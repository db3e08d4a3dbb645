/*
 * bench_out.h -- the output of `ubjfs bench run` and of the headline
 * experiment (src/tools/bench_out.c): the results table, the ratio table
 * (ubj over ordered and over journal), CSV, JSON and gnuplot plots.
 *
 * Everything here works on an array of rows, one per bh_run() (a
 * workload x mode x device), and touches no file system: the tests
 * (tests/bench_cli/) drive it with hand-made rows.  The CSV columns and
 * the JSON fields are documented in docs/TOOLS.md ("bench run output").
 * Functions return 0 or a negative errno; they write no message (the
 * caller names the file).
 */
#ifndef UBJ_TOOLS_BENCH_OUT_H
#define UBJ_TOOLS_BENCH_OUT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "bench/harness.h"

#define TOOLS_BOUT_SCHEMA "ubjfs-bench/2"   /* JSON "schema" (2: config holds
                                               effective values + "requested") */

/* struct tools_bout_row -- one run: what was asked and what bh_run() measured. */
struct tools_bout_row {
    double scale;           /* the file-set scale asked for (0 = workload default) */
    uint64_t ops_asked;     /* transactions asked for (0 = workload default) */
    uint64_t seed;
    const char *clock;      /* "virtual" or "real" */
    struct bh_result r;
};

/* struct tools_bout_meta -- the whole invocation (JSON "config"): the
 * effective values, and the req_* as asked (0 / NULL = the default). */
struct tools_bout_meta {
    const char *command;    /* "run" or "headline" */
    const char *clock;      /* "virtual" or "real" */
    uint64_t seed;
    unsigned procs;         /* 0 = each workload's own (JSON null) */
    uint64_t think_ns;
    uint32_t cache_blocks;
    uint64_t image_blocks;
    uint32_t commit_interval_ms;
    const char *nvm_profile;
    const char *readahead;          /* the read path: "off-page" (default), "off" */
    double wall_s;          /* host seconds of the whole invocation */
    uint64_t op_cpu_ns;     /* CPU ns charged per file-system call */
    bool final_sync;        /* elapsed time includes the final sync */
    bool serial;            /* --serial (real clock: no overlap) */
    uint32_t req_cache_blocks;      /* as asked (0 = default) */
    uint64_t req_image_blocks;
    uint32_t req_commit_interval_ms;
    const char *req_nvm_profile;    /* NULL = default */
    bool think_set;                 /* --think was given */
};

/* struct tools_bout_ratio -- mode `num` over mode `den` on one workload
 * and device: throughput ratio (ops/s) and elapsed-time ratio. */
struct tools_bout_ratio {
    const char *workload, *device;
    double thr, elapsed;
};

/* struct tools_bout_mean -- the means of a set of ratios. */
struct tools_bout_mean {
    size_t n;
    double thr_geo, el_geo;     /* geometric means */
    double thr_arith, el_arith; /* arithmetic means */
};

/* tools_bout_table -- the results table (one line per row) on f. */
int tools_bout_table(FILE *f, const struct tools_bout_row *rows, size_t n);

/*
 * tools_bout_ratios -- for each (workload, device) holding a row of mode
 * `num` and one of mode `den` (first match each, in row order), the
 * ratios into out[0..max).  Returns how many (<= max).
 */
size_t tools_bout_ratios(const struct tools_bout_row *rows, size_t n,
                         const char *num, const char *den,
                         struct tools_bout_ratio *out, size_t max);

/* tools_bout_mean -- geometric and arithmetic means of r[0..n) (ratios
 * that are not finite and positive are left out; m->n counts the rest). */
void tools_bout_mean(const struct tools_bout_ratio *r, size_t n,
                     struct tools_bout_mean *m);

/* tools_bout_ratio_modes -- the modes the ratios compare, from the mode
 * registry (ubjfs/mode.h): *num the UBJ_MODE_F_SUBJECT mode ("" if none),
 * dens[0..max) the UBJ_MODE_F_BASELINE modes in registry order; returns
 * how many dens were stored. */
size_t tools_bout_ratio_modes(const char **num, const char **dens, size_t max);

/* tools_bout_ratio_table -- the ratios of `num` over each of dens[0..ndens)
 * on f, per workload and device, then the geometric and the arithmetic
 * mean.  Prints nothing (and returns 0) when no pair exists. */
int tools_bout_ratio_table(FILE *f, const struct tools_bout_row *rows, size_t n,
                           const char *num, const char *const *dens, size_t ndens);

/* tools_bout_csv -- a header line and one line per row (RFC 4180). */
int tools_bout_csv(FILE *f, const struct tools_bout_row *rows, size_t n);

/* tools_bout_json -- one JSON object: schema, config, results, ratios. */
int tools_bout_json(FILE *f, const struct tools_bout_meta *meta,
                    const struct tools_bout_row *rows, size_t n);

/*
 * tools_bout_plots -- into directory `dir` (which must exist): the data
 * files, a gnuplot script plots.gp, and, by running `gnuplot` (from PATH)
 * on it, per device (DEVICE = the spec with [^A-Za-z0-9.+-] as '-'):
 * throughput-DEVICE.svg (one panel per workload, one bar per mode, mode
 * names under the bars) and bytes-DEVICE.svg (one panel per workload, one
 * bar per mode stacking data, metadata and journal MiB written, with the
 * checkpoint MiB -- a part of data + metadata -- as a narrow hatched bar
 * over it).  Those SVG files are removed first, so a failed or missing
 * gnuplot leaves none from an earlier run.  gnuplot is killed after
 * TOOLS_BOUT_GNUPLOT_S seconds.  Returns 0, -ENOPKG when gnuplot is not
 * installed (the script is written), -EIO when gnuplot failed,
 * -ETIMEDOUT when it was killed, or the errno of a file it could not write.
 */
int tools_bout_plots(const char *dir, const struct tools_bout_row *rows, size_t n,
                     const char *title);

#define TOOLS_BOUT_GNUPLOT_S 60

/* tools_bout_plot_names -- the SVG file names tools_bout_plots makes for
 * these rows, space-separated, into buf[len] (truncated to fit). */
void tools_bout_plot_names(const struct tools_bout_row *rows, size_t n, char *buf, size_t len);

/* tools_bout_opname -- the lower-case name of operation kind k ("create"). */
const char *tools_bout_opname(enum bh_opkind k);

/* The writers the tables above use, for other studies (bench_ra.c):
 * tools_bout_csv_field -- s as one CSV field (RFC 4180 quoting);
 * tools_bout_json_string -- s as a JSON string (NULL: null);
 * tools_bout_run_gnuplot -- `gnuplot plots.gp` in dir, killed after
 *   TOOLS_BOUT_GNUPLOT_S seconds: 0, -ENOPKG (no gnuplot), -EIO, -ETIMEDOUT. */
void tools_bout_csv_field(FILE *f, const char *s);
void tools_bout_json_string(FILE *f, const char *s);
int tools_bout_run_gnuplot(const char *dir);

/*
 * tools_bout_study_files (bench_files.c) -- a study's output files (bench
 * readahead, bench ordering): for each of csv, json (files) and plots (a directory,
 * made first) that is not NULL, in that order until one fails, its writer
 * called as w(path, ctx).  A plots writer returning -ENOPKG (no gnuplot)
 * is a note on stderr ("CMD: no gnuplot: DIR/plots.gp written, no SVG"),
 * not an error; any other error is reported naming the file.  Returns 0 or
 * the first error.
 */
/* struct tools_bout_study -- the options every study command has. */
struct tools_bout_study {
    uint64_t seed;             /* --seed N (> 0); the caller sets the default */
    const char *csv, *json;    /* --csv FILE, --json FILE, or NULL */
    const char *plots;         /* --plots DIR, or NULL */
    bool quiet;                /* -q, --quiet: no progress lines */
};

/*
 * tools_bout_study_opts (bench_files.c) -- a study command's options
 * loop: getopt_long over argv with short_opts and lo (which ends with
 * TOOLS_BOUT_STUDY_LONGOPTS); --help prints usage() and ends it (exit code
 * 0), getopt's '?' is a usage error (2), the shared options go into *io
 * (a bad --seed is a usage error), every other option to one(ctx, c,
 * optarg), which returns 0 to go on or an exit code; an operand is a usage
 * error.  Returns -1 to go on, else the exit code.
 */
int tools_bout_study_opts(int argc, char **argv, const char *short_opts,
                          const struct option *lo, void (*usage)(void),
                          int (*one)(void *ctx, int c, const char *arg), void *ctx,
                          struct tools_bout_study *io);

/* The long options every study shares (their values for `one`): --seed
 * 'S', --csv 'c', --json 'j', --plots 'o', --quiet 'q'; --help; the end. */
#define TOOLS_BOUT_STUDY_LONGOPTS \
    { "seed", required_argument, NULL, 'S' }, { "csv", required_argument, NULL, 'c' }, \
    { "json", required_argument, NULL, 'j' }, { "plots", required_argument, NULL, 'o' }, \
    { "quiet", no_argument, NULL, 'q' }, { "help", no_argument, NULL, 'h' }, \
    { NULL, 0, NULL, 0 }

/*
 * tools_bout_probe_file, tools_bout_probe_dir (bench_files.c) -- can `path`
 * be written (opened for writing, created if missing, not truncated, and
 * closed)?  Can directory `dir` be made (mkdir -p) and names[0..n) be
 * written in it?  0, or -1 with one line reported.  Before any run, so
 * that a bad path does not throw a long run away.
 */
int tools_bout_probe_file(const char *path);
int tools_bout_probe_dir(const char *dir, const char *const *names, size_t n);

/* tools_bout_study_preflight (bench_files.c) -- a study's --csv, --json and
 * --plots probed before its first run.  TOOLS_EXIT_OK, or TOOLS_EXIT_ERR
 * with one line reported. */
int tools_bout_study_preflight(const struct tools_bout_study *io);

int tools_bout_study_files(const char *cmd, const char *csv, const char *json,
                           const char *plots, int (*wcsv)(const char *, void *),
                           int (*wjson)(const char *, void *),
                           int (*wplots)(const char *, void *), void *ctx);

#endif /* UBJ_TOOLS_BENCH_OUT_H */
