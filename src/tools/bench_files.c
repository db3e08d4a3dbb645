/*
 * bench_files.c -- what the study commands (bench readahead, bench
 * ordering) share around their own grids: the options loop, and the
 * output files --csv, --json and --plots written through the study's own
 * writers, each failure reported naming the file (bench_out.h).  Apart
 * from bench_out.c, which writes no message and is compiled into
 * tests/bench_cli/out.c on its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bench_out.h"
#include "tools.h"

/* tools_bout_study_files -- see bench_out.h. */
int tools_bout_study_files(const char *cmd, const char *csv, const char *json,
                           const char *plots, int (*wcsv)(const char *, void *),
                           int (*wjson)(const char *, void *),
                           int (*wplots)(const char *, void *), void *ctx)
{
    int rc = 0;
    if (csv && (rc = wcsv(csv, ctx)) < 0)
        tools_err("%s: %s", csv, strerror(-rc));
    if (json && rc == 0 && (rc = wjson(json, ctx)) < 0)
        tools_err("%s: %s", json, strerror(-rc));
    if (plots && rc == 0) {
        (void)mkdir(plots, 0755);
        rc = wplots(plots, ctx);
        if (rc == -ENOPKG) {
            fprintf(stderr, "%s: no gnuplot: %s/plots.gp written, no SVG\n", cmd, plots);
            rc = 0;
        } else if (rc < 0) {
            tools_err("%s: plots: %s", plots, strerror(-rc));
        }
    }
    return rc;
}

/* tools_bout_study_opts -- see bench_out.h. */
int tools_bout_study_opts(int argc, char **argv, const char *short_opts,
                          const struct option *lo, void (*usage)(void),
                          int (*one)(void *ctx, int c, const char *arg), void *ctx,
                          struct tools_bout_study *io)
{
    int c;
    char *end;
    optind = 1;
    while ((c = getopt_long(argc, argv, short_opts, lo, NULL)) != -1) {
        if (c == 'h') {
            usage();
            return TOOLS_EXIT_OK;
        }
        int rc = 0;
        switch (c) {
        case '?': rc = TOOLS_EXIT_USAGE; break;
        case 'S':
            io->seed = strtoull(optarg, &end, 10);
            if (*end != '\0' || io->seed == 0)
                rc = tools_usage_err("bad --seed '%s'", optarg);
            break;
        case 'c': io->csv = optarg; break;
        case 'j': io->json = optarg; break;
        case 'o': io->plots = optarg; break;
        case 'q': io->quiet = true; break;
        default: rc = one(ctx, c, optarg); break;
        }
        if (rc != 0)
            return rc;
    }
    if (optind < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind]);
    return -1;
}
