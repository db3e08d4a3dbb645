/*
 * bench_run.c -- `ubjfs bench run` (workloads x modes x devices through the
 * evaluation harness, src/bench/harness.h) and the headline experiment,
 * `ubjfs bench` with no arguments (also `ubjfs bench headline`): the
 * options, the loop over the runs, the progress bar, and where the
 * output goes (bench_out.c formats it).
 *
 * Runs are made device by device, then workload by workload, then mode by
 * mode in the order given, each a fresh image (bh_run); a failed run is
 * reported and the others still run (exit 1 at the end).  On the virtual
 * clock nothing printed on stdout except the wall-time line, and nothing
 * in the CSV, depends on the host's speed.
 *
 * The headline's embedded defaults (bench_presets[]) were chosen so that
 * the whole experiment -- 4 workloads x 4 modes x 2 devices -- takes about
 * two minutes of host time on the 2-core reference machine (docs/RESULTS.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bench_out.h"
#include "fs/readahead.h"
#include "fs/readahead.h"
#include "tools.h"
#include "ubjfs/bdev.h"

#define BRUN_MAX_LIST 16u          /* workloads, modes or devices per invocation */
#define BRUN_BAR 28                /* progress bar width, characters */

/* struct brun_preset -- the headline's scale and transaction count for one
 * workload (full and --quick). */
struct brun_preset {
    const char *workload;
    double scale;
    uint64_t ops;
    double quick_scale;
    uint64_t quick_ops;
};

static const struct brun_preset brun_presets[] = {
    { "postmark",   10,  50000, 1,    1000 },  /* 5000 files (original: 500) */
    { "varmail",    1,   10000, 0.2,  500 },   /* 1000 files, Filebench's */
    { "fileserver", 0.1, 8000,  0.02, 200 },   /* 1000 files of 128 KiB mean */
    { "iozone",     1,   0,     0.05, 0 },     /* 0: the workload's count */
};
#define BRUN_NPRESETS (sizeof brun_presets / sizeof brun_presets[0])

static const char *const brun_def_devices[] = { "ssd:sata", "hdd:modern7200" };

struct brun_list {
    const char *v[BRUN_MAX_LIST];
    size_t n;
};

struct brun_args {
    bool headline, quick, quiet, no_plot;
    struct brun_list wl, modes, devs;
    const char *nvm_profile, *kv, *trace_out, *trace_in;
    const char *readahead;     /* --readahead: the read path (NULL: off-page) */
    const char *csv, *json, *plot, *results;
    uint32_t cache_blocks, commit_ms;
    uint64_t image_blocks, ops, think_ns, seed, op_cpu_ns;
    bool no_final_sync;
    bool serial;                  /* --serial: BH_F_SERIAL */
    unsigned procs;
    double scale;              /* 0: workload default (run) or preset (headline) */
    bool think_set;
    enum ubj_clock_kind clock;
    char trace_wl[32];         /* --trace-in: the workload it records */
    struct bh_params trace_prm;   /* and its parameters */
};

struct brun_prog {
    bool tty, quiet;
    size_t idx, total;
    char label[160];
    double t0, last;
};

/* brun_usage -- the --help text. */
static void brun_usage(void)
{
    const char *num, *dens[8];
    size_t nd = tools_bout_ratio_modes(&num, dens, 8);
    char over[256] = "", heads[256], headc[256];
    for (size_t i = 0; i < nd; i++)
        snprintf(over + strlen(over), sizeof over - strlen(over), "%s%s",
                 i == 0 ? "" : i + 1 == nd ? " and over " : ", over ", dens[i]);
    tools_mode_names(UBJ_MODE_F_HEADLINE, -1, UBJ_MODE_ORDER_BASELINES_FIRST, ", ", ", ",
                     heads, sizeof heads);
    tools_mode_names(UBJ_MODE_F_HEADLINE, -1, UBJ_MODE_ORDER_BASELINES_FIRST, ",", ",",
                     headc, sizeof headc);
    printf("Usage: %s run [OPTIONS]\n"
           "       %s [headline] [--quick] [--results DIR] [OPTIONS]\n"
           "Run the evaluation harness: every workload x mode x device profile, each\n"
           "on a fresh image through the timed device models, and print one table\n"
           "row per run (transactions, elapsed time, txn/s, p50/p99 response time,\n"
           "storage MiB written as data/metadata/journal plus, of data + metadata,\n"
           "the checkpoints' share; NVM MiB, device flushes, energy, cache hit %%),\n"
           "then the ratios of mode %s over %s (throughput\n"
           "and elapsed time, per workload and device, with their geometric and\n"
           "arithmetic means).\n\n"
           "With no arguments (or 'headline'), the headline experiment of\n"
           "docs/RESULTS.md: modes %s; workloads postmark,\n"
           "varmail, fileserver, iozone at embedded scales; devices ssd:sata and\n"
           "hdd:modern7200; results.csv, results.json, table.txt and SVG plots go to\n"
           "--results DIR (default $UBJFS_RESULTS, else ./ubjfs-results).\n\n"
           "Options:\n"
           "  -w, --workload NAME[,NAME..]  workloads (repeatable; 'all'); run default:\n"
           "                        the headline's four\n"
           "  -m, --mode MODE[,MODE..]      consistency modes (repeatable; default\n"
           "                        %s)\n"
           "  -d, --device SPEC     device profile stack, e.g. ssd:sata, ssd:emmc,\n"
           "                        ssd:nvme, hdd:modern7200, hdd:hp_c2249a, nand:slc,\n"
           "                        under a request queue if given:\n"
           "                        queue:clook@hdd:modern7200 (fcfs, clook, sptf)\n"
           "                        (repeatable; default ssd:sata and hdd:modern7200)\n"
           "      --nvm-profile P   NVM of mode ubj: dram (default), sttmram, pcm\n"
           "      --readahead P     the read path: off-page (default: a device\n"
           "                        request per missing block), off (one per run\n"
           "                        of missing blocks of a call), linux[:KIB],\n"
           "                        linux-2013[:KIB] or adaptive[:KIB] (read-ahead\n"
           "                        windows; docs/READAHEAD.md)\n"
           "      --cache SIZE      buffer cache (default 16M; K/M/G suffixes)\n"
           "      --image SIZE      image size (default 256M)\n"
           "      --commit-interval MS  commit interval (default 5000)\n"
           "      --scale X         file-set size multiplier (run default 1 = each\n"
           "                        workload's original; headline: its presets)\n"
           "      --procs N         closed-loop processes (default: the workload's)\n"
           "      --ops N           transactions per run (default: the workload's)\n"
           "      --think TIME      mean think time, e.g. 0, 500us, 2ms, 1s (a bare\n"
           "                        number is ms; default: the workload's)\n"
           "      --kv K=V[,K=V..]  workload-specific parameters (keys checked against\n"
           "                        every workload before any run)\n"
           "      --op-cpu TIME     CPU time charged per file-system call (system\n"
           "                        call + VFS cost the models do not see; default 0)\n"
           "      --no-final-sync   leave the final sync out of the elapsed time\n"
           "      --serial          real clock: one transaction at a time (by\n"
           "                        default the processes' transactions overlap)\n"
           "      --seed N          random seed (default 1)\n"
           "      --clock KIND      virtual (default: deterministic, no sleeping) or\n"
           "                        real (threads; requests sleep until done)\n"
           "      --trace-out FILE  record the run's operations (one run only)\n"
           "      --trace-in FILE   replay FILE open-loop in each mode and device with\n"
           "                        its recorded workload and parameters (-w, if\n"
           "                        given, must name that workload)\n"
           "      --csv FILE        results as CSV (columns: docs/TOOLS.md)\n"
           "      --json FILE       results as JSON (fields: docs/TOOLS.md)\n"
           "      --plot DIR        SVG plots via gnuplot: throughput-DEVICE.svg and\n"
           "                        bytes-DEVICE.svg (with their data and plots.gp)\n"
           "      --results DIR     headline: where everything goes\n"
           "      --no-plot         headline: no plots\n"
           "      --quick           headline at a tiny scale (the CI smoke test)\n"
           "  -q, --quiet           no progress on stderr\n"
           "      --help            print this help\n\n"
           "Output files and directories are created and checked before the first run.\n"
           "In virtual time the same command gives the same counters.\n"
           "Exit status: 0 done, 1 a run or an output failed, 2 usage error.\n",
           tools_prog, tools_prog, num, over, heads, headc);
}

/* brun_now -- monotonic seconds. */
static double brun_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* brun_add -- append `s` to l (split at commas when `split`).  0 or 2. */
static int brun_add(struct brun_list *l, char *s, bool split, const char *what)
{
    char *save = NULL;
    char *tok = split ? strtok_r(s, ",", &save) : s;
    if (tok == NULL || *tok == '\0')
        return tools_usage_err("empty %s", what);
    for (; tok != NULL; tok = split ? strtok_r(NULL, ",", &save) : NULL) {
        if (l->n == BRUN_MAX_LIST)
            return tools_usage_err("too many %ss (at most %u)", what, BRUN_MAX_LIST);
        l->v[l->n++] = tok;
    }
    return 0;
}

/* brun_add_workloads -- -w: names (checked) or 'all'.  0 or 2. */
static int brun_add_workloads(struct brun_args *a, char *s)
{
    size_t from = a->wl.n;
    int rc = brun_add(&a->wl, s, true, "workload");
    if (rc != 0)
        return rc;
    for (size_t i = from; i < a->wl.n; i++) {
        if (strcmp(a->wl.v[i], "all") == 0) {
            a->wl.n = from;
            for (size_t k = 0; bh_workloads[k] != NULL && a->wl.n < BRUN_MAX_LIST; k++)
                a->wl.v[a->wl.n++] = bh_workloads[k]->name;
            return 0;
        }
        if (bh_workload_find(a->wl.v[i]) == NULL) {
            char names[256] = "";
            for (size_t k = 0; bh_workloads[k] != NULL; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         k ? ", " : "", bh_workloads[k]->name);
            return tools_usage_err("unknown workload '%s' (%s, all)", a->wl.v[i], names);
        }
    }
    return 0;
}

/* brun_time -- "500us", "2ms", "1s", "250ns", bare = ms.  0 or -EINVAL. */
static int brun_time(const char *s, uint64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !(v >= 0) || v > 3600e3)
        return -EINVAL;
    double mul = 1e6;
    if (strcmp(end, "ns") == 0)
        mul = 1;
    else if (strcmp(end, "us") == 0)
        mul = 1e3;
    else if (strcmp(end, "s") == 0)
        mul = 1e9;
    else if (*end != '\0' && strcmp(end, "ms") != 0)
        return -EINVAL;
    *ns = (uint64_t)llround(v * mul);
    return 0;
}

/* brun_blocks -- a SIZE option as 4 KiB blocks in [min, max].  0 or 2. */
static int brun_blocks(const char *opt, const char *s, uint64_t min, uint64_t max,
                       uint64_t *out)
{
    uint64_t v;
    if (tools_parse_size(s, &v) < 0 || v / UBJ_BLOCK_SIZE < min || v / UBJ_BLOCK_SIZE > max)
        return tools_usage_err("invalid %s '%s' (%llu KiB .. %llu GiB)", opt, s,
                               (unsigned long long)(min * 4),
                               (unsigned long long)(max / 262144));
    *out = v / UBJ_BLOCK_SIZE;
    return 0;
}

/* brun_u64 -- a number option in [min, max].  0 or 2. */
static int brun_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (tools_parse_u64(s, out) < 0 || *out < min || *out > max)
        return tools_usage_err("invalid %s '%s' (%llu..%llu)", opt, s,
                               (unsigned long long)min, (unsigned long long)max);
    return 0;
}

enum {
    BO_NVM = 256, BO_RA, BO_CACHE, BO_IMAGE, BO_COMMIT, BO_SCALE, BO_PROCS, BO_OPS, BO_THINK,
    BO_KV, BO_SEED, BO_CLOCK, BO_TOUT, BO_TIN, BO_CSV, BO_JSON, BO_PLOT, BO_RESULTS,
    BO_NOPLOT, BO_QUICK, BO_HELP, BO_OPCPU, BO_NOSYNC, BO_SERIAL,
};

static const struct option brun_lopts[] = {
    { "workload", required_argument, NULL, 'w' },
    { "mode", required_argument, NULL, 'm' },
    { "device", required_argument, NULL, 'd' },
    { "quiet", no_argument, NULL, 'q' },
    { "nvm-profile", required_argument, NULL, BO_NVM },
    { "readahead", required_argument, NULL, BO_RA },
    { "cache", required_argument, NULL, BO_CACHE },
    { "image", required_argument, NULL, BO_IMAGE },
    { "commit-interval", required_argument, NULL, BO_COMMIT },
    { "scale", required_argument, NULL, BO_SCALE },
    { "procs", required_argument, NULL, BO_PROCS },
    { "ops", required_argument, NULL, BO_OPS },
    { "think", required_argument, NULL, BO_THINK },
    { "kv", required_argument, NULL, BO_KV },
    { "seed", required_argument, NULL, BO_SEED },
    { "clock", required_argument, NULL, BO_CLOCK },
    { "trace-out", required_argument, NULL, BO_TOUT },
    { "trace-in", required_argument, NULL, BO_TIN },
    { "csv", required_argument, NULL, BO_CSV },
    { "json", required_argument, NULL, BO_JSON },
    { "plot", required_argument, NULL, BO_PLOT },
    { "results", required_argument, NULL, BO_RESULTS },
    { "no-plot", no_argument, NULL, BO_NOPLOT },
    { "quick", no_argument, NULL, BO_QUICK },
    { "op-cpu", required_argument, NULL, BO_OPCPU },
    { "no-final-sync", no_argument, NULL, BO_NOSYNC },
    { "serial", no_argument, NULL, BO_SERIAL },
    { "help", no_argument, NULL, BO_HELP },
    { NULL, 0, NULL, 0 },
};

/* brun_opt_num -- the numeric options.  0, 2, or -1 if c is not one. */
static int brun_opt_num(struct brun_args *a, int c, const char *arg)
{
    uint64_t v;
    int rc;
    switch (c) {
    case BO_CACHE:
        rc = brun_blocks("--cache", arg, 64, UINT32_MAX, &v);
        a->cache_blocks = (uint32_t)v;
        return rc;
    case BO_IMAGE:
        return brun_blocks("--image", arg, 1024, 1ull << 28, &a->image_blocks);
    case BO_COMMIT:
        rc = brun_u64("--commit-interval", arg, 1, 3600000, &v);
        a->commit_ms = (uint32_t)v;
        return rc;
    case BO_PROCS:
        rc = brun_u64("--procs", arg, 1, 1024, &v);
        a->procs = (unsigned)v;
        return rc;
    case BO_OPS:
        return brun_u64("--ops", arg, 1, 1000000000, &a->ops);
    case BO_SEED:
        return brun_u64("--seed", arg, 1, UINT64_MAX, &a->seed);
    case BO_SCALE: {
        char *end;
        errno = 0;
        a->scale = strtod(arg, &end);
        if (end == arg || *end != '\0' || errno != 0 || !(a->scale > 0) || a->scale > 1000)
            return tools_usage_err("invalid --scale '%s' (a number in (0, 1000])", arg);
        return 0;
    }
    case BO_THINK:
        if (brun_time(arg, &a->think_ns) < 0)
            return tools_usage_err("invalid --think '%s' (e.g. 0, 500us, 2ms, 1s)", arg);
        a->think_set = true;
        return 0;
    case BO_OPCPU:
        if (brun_time(arg, &a->op_cpu_ns) < 0)
            return tools_usage_err("invalid --op-cpu '%s' (e.g. 0, 2us)", arg);
        return 0;
    default:
        return -1;
    }
}

/* brun_opt_str -- the string options.  0, 2, or -1 if c is not one. */
static int brun_opt_str(struct brun_args *a, int c, char *arg)
{
    switch (c) {
    case 'w': return brun_add_workloads(a, arg);
    case 'm': return brun_add(&a->modes, arg, true, "mode");
    case 'd': return brun_add(&a->devs, arg, false, "device");
    case 'q': a->quiet = true; return 0;
    case BO_NVM: a->nvm_profile = arg; return 0;
    case BO_RA: {
        enum fs_ra_policy pol;
        uint32_t pages;
        if (fs_ra_policy_parse(arg, &pol, &pages) < 0)
            return tools_usage_err("bad --readahead '%s': %s", arg, ubj_errormsg());
        if (pol == FS_RA_ORACLE)
            return tools_usage_err("--readahead oracle: needs a trace's future "
                                   "reads (ubjfs bench readahead only)");
        a->readahead = arg;
        return 0;
    }
    case BO_KV:
        if (a->kv != NULL)
            return tools_usage_err("--kv given twice: give its pairs once, comma-separated");
        a->kv = arg;
        return 0;
    case BO_TOUT: a->trace_out = arg; return 0;
    case BO_TIN: a->trace_in = arg; return 0;
    case BO_CSV: a->csv = arg; return 0;
    case BO_JSON: a->json = arg; return 0;
    case BO_PLOT: a->plot = arg; return 0;
    case BO_RESULTS: a->results = arg; return 0;
    case BO_NOPLOT: a->no_plot = true; return 0;
    case BO_QUICK: a->quick = true; return 0;
    case BO_NOSYNC: a->no_final_sync = true; return 0;
    case BO_SERIAL: a->serial = true; return 0;
    case BO_CLOCK: {
        int rc = tools_bench_clock(arg, &a->clock);
        return rc < 0 ? 0 : rc;
    }
    default:
        return -1;
    }
}

/* brun_check_modes -- every mode is one the library formats.  0 or 2. */
static int brun_check_modes(const struct brun_args *a)
{
    for (size_t i = 0; i < a->modes.n; i++) {
        struct ubj_format_opts fo = { .mode = a->modes.v[i] };
        if (tools_format_trial(&fo) < 0)
            return tools_usage_err("unknown mode '%s'", a->modes.v[i]);
    }
    return 0;
}

/* brun_check_devices -- every device spec opens (on a small RAM leaf)
 * and the NVM profile loads.  0 or 2. */
static int brun_check_devices(const struct brun_args *a)
{
    for (size_t i = 0; i < a->devs.n; i++) {
        struct ubj_spec_opts so = { .nblocks = 1024, .clock_kind = a->clock };
        struct ubj_bdev *d;
        int rc = ubj_bdev_open_spec(a->devs.v[i], NULL, &so, &d);
        if (rc < 0)
            return tools_usage_err("device '%s': %s", a->devs.v[i], tools_libmsg(rc));
        ubj_bdev_destroy(d);
    }
    if (a->nvm_profile != NULL) {
        struct ubj_nvm_model *m;
        int rc = ubj_nvm_model_create(a->nvm_profile, NULL, &m);
        if (rc < 0)
            return tools_usage_err("NVM profile '%s': %s", a->nvm_profile, tools_libmsg(rc));
        ubj_nvm_model_destroy(m);
    }
    return 0;
}

/* brun_check_trace -- --trace-in: the file is a whole trace of a known
 * workload, the -w given (if any) is that workload, and no option the
 * trace fixes is given; without -w the trace's workload is used.  0 or 2. */
static int brun_check_trace(struct brun_args *a)
{
    if (a->trace_in == NULL)
        return 0;
    int rc = bh_trace_check(a->trace_in, a->trace_wl, sizeof a->trace_wl, &a->trace_prm);
    if (rc < 0)
        return tools_usage_err("--trace-in: %s", tools_libmsg(rc));
    if (a->wl.n > 1)
        return tools_usage_err("--trace-in replays one workload's trace: give one -w");
    if (a->wl.n == 1 && strcmp(a->wl.v[0], a->trace_wl) != 0)
        return tools_usage_err("--trace-in %s records workload '%s', not '%s' (-w)",
                               a->trace_in, a->trace_wl, a->wl.v[0]);
    if (a->kv != NULL || a->scale > 0 || a->ops > 0 || a->procs > 0 || a->think_set)
        return tools_usage_err("--trace-in replays the recorded parameters: no --kv, "
                               "--scale, --ops, --procs or --think");
    a->wl.v[0] = a->trace_wl;
    a->wl.n = 1;
    return 0;
}

/* brun_check_kv -- --kv names only parameters of every chosen workload.
 * 0 or 2. */
static int brun_check_kv(const struct brun_args *a)
{
    for (size_t i = 0; a->kv != NULL && i < a->wl.n; i++) {
        int rc = bh_workload_check_kv(a->wl.v[i], a->kv);
        if (rc < 0)
            return tools_usage_err("--kv: %s", tools_libmsg(rc));
    }
    return 0;
}

/* brun_defaults -- fill the lists not given; check the combination.  0 or 2. */
static int brun_defaults(struct brun_args *a)
{
    int rc = brun_check_trace(a);
    if (rc != 0)
        return rc;
    if (a->wl.n == 0)
        for (size_t i = 0; i < BRUN_NPRESETS; i++)
            a->wl.v[a->wl.n++] = brun_presets[i].workload;
    if (a->modes.n == 0) {   /* the registry's headline set */
        const struct ubj_mode_info *m[BRUN_MAX_LIST];
        size_t nm = ubj_mode_list(UBJ_MODE_F_HEADLINE, UBJ_MODE_ORDER_BASELINES_FIRST,
                                  m, BRUN_MAX_LIST);
        for (size_t i = 0; i < nm && i < BRUN_MAX_LIST; i++)
            a->modes.v[a->modes.n++] = m[i]->name;
    }
    if (a->devs.n == 0)
        for (size_t i = 0; i < sizeof brun_def_devices / sizeof *brun_def_devices; i++)
            a->devs.v[a->devs.n++] = brun_def_devices[i];
    if (!a->headline && (a->quick || a->results != NULL || a->no_plot))
        return tools_usage_err("--quick, --results and --no-plot are headline options "
                               "(ubjfs bench headline)");
    if (a->trace_out != NULL && a->wl.n * a->modes.n * a->devs.n != 1)
        return tools_usage_err("--trace-out records one run: give one workload, mode and device");
    if (a->headline && a->results == NULL) {
        const char *env = getenv("UBJFS_RESULTS");
        a->results = env != NULL && *env != '\0' ? env : "ubjfs-results";
    }
    rc = brun_check_kv(a);
    if (rc == 0)
        rc = brun_check_modes(a);
    return rc != 0 ? rc : brun_check_devices(a);
}

/* brun_parse -- options into *a; -1 to go on, else an exit code.  argv[0]
 * is "run", "headline" or, for bare `ubjfs bench [OPTIONS]`, "bench". */
static int brun_parse(int argc, char **argv, struct brun_args *a)
{
    int c;
    optind = 0;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "w:m:d:qh", brun_lopts, NULL)) != -1) {
        if (c == BO_HELP || c == 'h') {
            brun_usage();
            return TOOLS_EXIT_OK;
        }
        int rc = brun_opt_num(a, c, optarg);
        if (rc < 0)
            rc = brun_opt_str(a, c, optarg);
        if (rc < 0)
            return tools_bad_option();
        if (rc > 0)
            return rc;
    }
    if (optind < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind]);
    int rc = brun_defaults(a);
    return rc != 0 ? rc : -1;
}

/* brun_preset -- the headline preset of workload w, or NULL. */
static const struct brun_preset *brun_preset(const char *w)
{
    for (size_t i = 0; i < BRUN_NPRESETS; i++)
        if (strcmp(brun_presets[i].workload, w) == 0)
            return &brun_presets[i];
    return NULL;
}

/* brun_params -- scale and ops of workload w under the options. */
static void brun_params(const struct brun_args *a, const char *w, double *scale, uint64_t *ops)
{
    const struct brun_preset *p = a->headline ? brun_preset(w) : NULL;
    *scale = a->scale;
    *ops = a->ops;
    if (a->trace_in != NULL) {     /* the replay runs the recorded ones */
        *scale = a->trace_prm.scale;
        *ops = a->trace_prm.ops;
        return;
    }
    if (p != NULL && a->scale == 0)
        *scale = a->quick ? p->quick_scale : p->scale;
    if (p != NULL && a->ops == 0)
        *ops = a->quick ? p->quick_ops : p->ops;
}

/* brun_progress -- the harness's progress callback: the bar (terminal) */
static void brun_progress(void *arg, uint64_t done, uint64_t total)
{
    struct brun_prog *p = arg;
    double now = brun_now();
    if (!p->tty || p->quiet || (now - p->last < 0.1 && done < total))
        return;
    p->last = now;
    double frac = ((double)p->idx + (total ? (double)done / (double)total : 0)) / (double)p->total;
    if (frac > 1)
        frac = 1;
    int fill = (int)(frac * BRUN_BAR);
    char bar[BRUN_BAR + 1];
    for (int i = 0; i < BRUN_BAR; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[BRUN_BAR] = '\0';
    unsigned el = (unsigned)(now - p->t0);
    fprintf(stderr, "\r\033[K[%s] %3.0f%% %zu/%zu %s %u:%02u", bar, frac * 100,
            p->idx + 1, p->total, p->label, el / 60, el % 60);
    fflush(stderr);
}

/* brun_one -- run one workload x mode x device into *row.  0 or -1. */
static int brun_one(const struct brun_args *a, const char *w, const char *m, const char *d,
                    struct brun_prog *pr, struct tools_bout_row *row)
{
    memset(row, 0, sizeof *row);
    brun_params(a, w, &row->scale, &row->ops_asked);
    row->seed = a->seed;
    row->clock = a->clock == UBJ_CLOCK_REAL ? "real" : "virtual";
    struct bh_config cfg = {
        .workload = w, .mode = m, .device = d, .nvm_profile = a->nvm_profile,
        .readahead = a->readahead,
        .cache_blocks = a->cache_blocks, .image_blocks = a->image_blocks,
        .commit_interval_ms = a->commit_ms, .clock = a->clock,
        .params = { .procs = a->procs, .ops = row->ops_asked, .scale = row->scale,
                    .seed = a->seed, .kv = a->kv,
                    .think_ns = a->think_set ? a->think_ns : 0 },
        .trace_out = a->trace_out, .trace_in = a->trace_in, .op_cpu_ns = a->op_cpu_ns,
        .flags = (a->no_final_sync ? BH_F_NO_FINAL_SYNC : 0) |
                 (a->serial ? BH_F_SERIAL : 0),
        .progress = brun_progress, .progress_arg = pr,
    };
    snprintf(pr->label, sizeof pr->label, "%s %s %s", w, m, d);
    double t = brun_now();
    brun_progress(pr, 0, 1);
    int rc = bh_run(&cfg, &row->r);
    if (pr->tty && !pr->quiet)
        fputs("\r\033[K", stderr);
    if (rc < 0) {
        tools_err("%s: %s", pr->label, tools_libmsg(rc));
        return -1;
    }
    if (!pr->tty && !pr->quiet)
        fprintf(stderr, "%s: [%zu/%zu] %s: %llu txns, %.1f s\n", tools_prog, pr->idx + 1,
                pr->total, pr->label, (unsigned long long)row->r.ops, brun_now() - t);
    return 0;
}

/* brun_all -- every run, device x workload x mode.  Rows made in *n;
 * returns the number of failed runs. */
static size_t brun_all(const struct brun_args *a, struct tools_bout_row *rows, size_t *n)
{
    struct brun_prog pr = { .tty = isatty(STDERR_FILENO) == 1, .quiet = a->quiet,
                            .total = a->wl.n * a->modes.n * a->devs.n, .t0 = brun_now() };
    size_t failed = 0;
    *n = 0;
    for (size_t k = 0; k < a->devs.n; k++)
        for (size_t i = 0; i < a->wl.n; i++)
            for (size_t j = 0; j < a->modes.n; j++, pr.idx++) {
                if (brun_one(a, a->wl.v[i], a->modes.v[j], a->devs.v[k], &pr, &rows[*n]) == 0)
                    (*n)++;
                else
                    failed++;
            }
    return failed;
}

/* brun_banner -- what was run, at which scale. */
static void brun_banner(FILE *f, const struct brun_args *a)
{
    fprintf(f, "ubjfs bench %s: %zu workload%s x %zu mode%s x %zu device%s, %s clock, seed %llu\n",
            a->headline ? (a->quick ? "headline --quick" : "headline") : "run",
            a->wl.n, a->wl.n == 1 ? "" : "s", a->modes.n, a->modes.n == 1 ? "" : "s",
            a->devs.n, a->devs.n == 1 ? "" : "s",
            a->clock == UBJ_CLOCK_REAL ? "real" : "virtual", (unsigned long long)a->seed);
    if (a->readahead != NULL)
        fprintf(f, "read path: %s (--readahead)\n", a->readahead);
    fputs("scale:", f);
    for (size_t i = 0; i < a->wl.n; i++) {
        double s;
        uint64_t o;
        brun_params(a, a->wl.v[i], &s, &o);
        char sb[32], ob[32];
        snprintf(sb, sizeof sb, s > 0 ? "%g" : "default", s);
        snprintf(ob, sizeof ob, o > 0 ? "%llu txns" : "default txns", (unsigned long long)o);
        fprintf(f, "%s %s %s (%s)", i ? "," : "", a->wl.v[i], sb, ob);
    }
    fputc('\n', f);
    if (a->trace_in != NULL)
        fprintf(f, "trace: replaying %s open-loop (workload %s, its recorded parameters)\n",
                a->trace_in, a->trace_wl);
}

/* brun_report -- banner, table and ratios on f. */
static int brun_report(FILE *f, const struct brun_args *a, const struct tools_bout_row *rows,
                       size_t n)
{
    brun_banner(f, a);
    int rc = tools_bout_table(f, rows, n);
    if (rc == 0) {
        const char *num, *dens[8];
        size_t nd = tools_bout_ratio_modes(&num, dens, 8);
        rc = tools_bout_ratio_table(f, rows, n, num, dens, nd);
    }
    if (a->quick)
        fputs("note: --quick runs at a tiny scale as a smoke test; its figures are not "
              "results (ratios like these mean nothing: run 'ubjfs bench')\n", f);
    fflush(f);
    return rc;
}

/* brun_join -- dir/name into buf. */
static const char *brun_join(char *buf, size_t len, const char *dir, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
    return buf;
}

/* brun_preflight -- every output file and directory, before the first
 * run (so that a bad path does not throw a long run away).  0 or -1
 * (one line reported). */
static int brun_preflight(const struct brun_args *a)
{
    static const char *const res[] = { "results.csv", "results.json", "table.txt", "plots.gp" };
    static const char *const plot[] = { "plots.gp" };
    const char *files[] = { a->csv, a->json, a->trace_out };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (files[i] != NULL && tools_bout_probe_file(files[i]) < 0)
            return -1;
    if (a->plot != NULL && tools_bout_probe_dir(a->plot, plot, 1) < 0)
        return -1;
    if (a->results != NULL && tools_bout_probe_dir(a->results, res, a->no_plot ? 3 : 4) < 0)
        return -1;
    return 0;
}

/* brun_write -- write one output file with fn.  0 or -1 (reported). */
static int brun_write(const char *path, const struct brun_args *a,
                      const struct tools_bout_meta *meta,
                      const struct tools_bout_row *rows, size_t n, char kind)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        tools_err("%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = kind == 'c' ? tools_bout_csv(f, rows, n)
           : kind == 'j' ? tools_bout_json(f, meta, rows, n)
                         : brun_report(f, a, rows, n);
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc < 0) {
        tools_err("%s: %s", path, tools_strerror(rc));
        return -1;
    }
    return 0;
}

/* brun_plot -- the plots into dir (checked by brun_preflight).  1 SVG
 * files written; 0 none (no rows, or gnuplot missing: a warning); -1
 * failed (reported). */
static int brun_plot(const char *dir, const struct brun_args *a,
                     const struct tools_bout_row *rows, size_t n)
{
    if (n == 0)
        return 0;
    char title[128];
    snprintf(title, sizeof title, "ubjfs bench (%s clock, seed %llu)",
             a->clock == UBJ_CLOCK_REAL ? "real" : "virtual", (unsigned long long)a->seed);
    int rc = tools_bout_plots(dir, rows, n, title);
    if (rc == -ENOPKG) {
        tools_err("gnuplot is not installed: wrote %s/plots.gp and its data, no SVG "
                  "(install gnuplot-nox)", dir);
        return 0;
    }
    if (rc < 0) {
        tools_err("plots in %s: %s", dir, rc == -EIO ? "gnuplot failed"
                  : rc == -ETIMEDOUT ? "gnuplot did not finish in time (killed)"
                  : tools_strerror(rc));
        return -1;
    }
    return 1;
}

/* brun_outputs -- CSV, JSON, plots (and the headline's results dir).
 * Returns the number of failures. */
static int brun_outputs(const struct brun_args *a, const struct tools_bout_meta *meta,
                        const struct tools_bout_row *rows, size_t n)
{
    int bad = 0;
    char p[4096];
    if (a->csv != NULL)
        bad += brun_write(a->csv, a, meta, rows, n, 'c') < 0;
    if (a->json != NULL)
        bad += brun_write(a->json, a, meta, rows, n, 'j') < 0;
    if (a->plot != NULL)
        bad += brun_plot(a->plot, a, rows, n) < 0;
    if (a->results == NULL)
        return bad;
    bad += brun_write(brun_join(p, sizeof p, a->results, "results.csv"), a, meta, rows, n, 'c') < 0;
    bad += brun_write(brun_join(p, sizeof p, a->results, "results.json"), a, meta, rows, n, 'j') < 0;
    bad += brun_write(brun_join(p, sizeof p, a->results, "table.txt"), a, meta, rows, n, 't') < 0;
    int plotted = a->no_plot ? 0 : brun_plot(a->results, a, rows, n);
    bad += plotted < 0;
    char svgs[2048] = "";
    if (plotted > 0)
        tools_bout_plot_names(rows, n, svgs, sizeof svgs);
    printf("\nresults in %s/: results.csv results.json table.txt%s%s%s\n", a->results,
           a->no_plot || n == 0 ? "" : " plots.gp", svgs[0] ? " " : "", svgs);
    return bad;
}

/* brun_meta -- the JSON "config": effective values and what was asked. */
static void brun_meta(const struct brun_args *a, struct tools_bout_meta *m, double wall_s)
{
    memset(m, 0, sizeof *m);
    m->command = a->headline ? "headline" : "run";
    m->clock = a->clock == UBJ_CLOCK_REAL ? "real" : "virtual";
    m->seed = a->seed;
    m->procs = a->procs;
    m->think_ns = a->think_ns;
    m->cache_blocks = a->cache_blocks ? a->cache_blocks : BH_DEFAULT_CACHE_BLOCKS;
    m->image_blocks = a->image_blocks ? a->image_blocks : BH_DEFAULT_IMAGE_BLOCKS;
    m->commit_interval_ms = a->commit_ms ? a->commit_ms : BH_DEFAULT_COMMIT_MS;
    m->nvm_profile = a->nvm_profile ? a->nvm_profile : BH_DEFAULT_NVM_PROFILE;
    m->readahead = a->readahead ? a->readahead : "off-page";
    m->wall_s = wall_s;
    m->op_cpu_ns = a->op_cpu_ns;
    m->final_sync = !a->no_final_sync;
    m->serial = a->serial;
    m->req_cache_blocks = a->cache_blocks;
    m->req_image_blocks = a->image_blocks;
    m->req_commit_interval_ms = a->commit_ms;
    m->req_nvm_profile = a->nvm_profile;
    m->think_set = a->think_set;
}

/* brun_main -- parse, run everything, report.  An exit code. */
static int brun_main(int argc, char **argv, bool headline)
{
    struct brun_args a = { .headline = headline, .seed = 1 };
    argv[0] = (char *)tools_prog;   /* getopt's messages start "ubjfs bench: " */
    int ret = brun_parse(argc, argv, &a);
    if (ret >= 0)
        return ret;
    if (brun_preflight(&a) < 0)
        return TOOLS_EXIT_ERR;
    double t0 = brun_now();
    size_t total = a.wl.n * a.modes.n * a.devs.n, n;
    struct tools_bout_row *rows = calloc(total, sizeof *rows);
    if (rows == NULL) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    size_t failed = brun_all(&a, rows, &n);
    int bad = brun_report(stdout, &a, rows, n) < 0;
    struct tools_bout_meta meta;
    brun_meta(&a, &meta, brun_now() - t0);
    bad += brun_outputs(&a, &meta, rows, n);
    printf("wall time: %.1f s (%zu run%s, %zu failed)\n", brun_now() - t0, total,
           total == 1 ? "" : "s", failed);
    free(rows);
    return failed || bad ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}

/* tools_bench_run_main -- `ubjfs bench run ...` (argv[0] = "run"). */
int tools_bench_run_main(int argc, char **argv)
{
    return brun_main(argc, argv, false);
}

/* tools_bench_headline_main -- `ubjfs bench [headline] [OPTIONS]`: argv[0]
 * is "headline" or the program name. */
int tools_bench_headline_main(int argc, char **argv)
{
    return brun_main(argc, argv, true);
}
