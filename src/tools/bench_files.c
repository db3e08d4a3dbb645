/*
 * bench_files.c -- what the study commands (bench readahead, bench
 * ordering) share around their own grids: the options loop, and the
 * output files --csv, --json and --plots written through the study's own
 * writers, each failure reported naming the file (bench_out.h).  Apart
 * from bench_out.c, which writes no message and is compiled into
 * tests/bench_cli/out.c on its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bench_out.h"
#include "tools.h"

/* bout_mkdirs -- mkdir -p path.  0 or -1 (reported). */
static int bout_mkdirs(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        tools_err("%s: %s", path, strerror(ENAMETOOLONG));
        return -1;
    }
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            tools_err("%s: %s", buf, strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    return 0;
}

/* tools_bout_probe_file -- can path be written?  Opened for writing (created if
 * missing, not truncated) and closed, before any run.  0 or -1 (reported). */
int tools_bout_probe_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        tools_err("%s: %s", path, strerror(errno));
        return -1;
    }
    close(fd);
    return 0;
}

/* bout_join -- dir/name into buf. */
static const char *bout_join(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
    return buf;
}

/* tools_bout_probe_dir -- make dir (mkdir -p), check that it is a directory and
 * that names[] can be written in it.  0 or -1 (reported). */
int tools_bout_probe_dir(const char *dir, const char *const *names, size_t n)
{
    struct stat st;
    char p[4096];
    if (bout_mkdirs(dir) < 0)
        return -1;
    int e = stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
    if (e != 0) {
        tools_err("%s: %s", dir, strerror(e));
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (tools_bout_probe_file(bout_join(p, sizeof p, dir, names[i])) < 0)
            return -1;
    return 0;
}

/* tools_bout_study_preflight -- see bench_out.h. */
int tools_bout_study_preflight(const struct tools_bout_study *io)
{
    static const char *const plot[] = { "plots.gp" };
    if (io->csv != NULL && tools_bout_probe_file(io->csv) < 0)
        return TOOLS_EXIT_ERR;
    if (io->json != NULL && tools_bout_probe_file(io->json) < 0)
        return TOOLS_EXIT_ERR;
    if (io->plots != NULL && tools_bout_probe_dir(io->plots, plot, 1) < 0)
        return TOOLS_EXIT_ERR;
    return TOOLS_EXIT_OK;
}

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
        case '?': rc = tools_bad_option(); break;   /* getopt said what */
        case 'S':
            io->seed = strtoull(optarg, &end, 10);
            if (*end != '\0' || end == optarg || io->seed == 0 || optarg[0] == '-')
                rc = tools_usage_err("bad --seed '%s' (a whole number, 1 or more)", optarg);
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
