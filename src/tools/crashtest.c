/*
 * crashtest.c -- `ubjfs crashtest`: the crash-state explorer (src/crash/)
 * over generated ACE-style workloads or workload files, in one or more
 * modes; prints the figures and every failure, and writes a minimized
 * reproducer (a workload file) for each failing workload.
 *
 * Exit status: 0 no failure, 1 a failure was found or the exploration
 * could not run, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "crash/crash.h"
#include "tools.h"

#define CT_MAX_MODES 8
#define CT_MAX_FILES 64
#define CT_MAX_REPRO 5          /* reproducers written per mode */

struct ct_opts {
    const char *modes[CT_MAX_MODES];
    unsigned nmodes;
    const char *files[CT_MAX_FILES];
    unsigned nfiles;
    unsigned depth;             /* generated sequence length (1..3) */
    uint64_t pairs, triples;    /* sampled sequences of 2 and 3 items */
    uint64_t random, ops;       /* random workloads and their length */
    int full;
    const char *out;            /* reproducer directory */
    struct cx_config cfg;
};

/* ct_usage -- the --help text. */
static void ct_usage(void)
{
    char all[256], def[256];
    tools_mode_names(0, -1, UBJ_MODE_ORDER_CONSISTENT_FIRST, ", ", " or ", all, sizeof all);
    tools_mode_names(UBJ_MODE_F_CRASH_DEFAULT, -1, UBJ_MODE_ORDER_REGISTRY, ", ", ", ",
                     def, sizeof def);
    printf("Usage: %s [options]\n"
           "Explore the crash states of workloads in each mode: every device flush\n"
           "epoch (prefix cuts, torn 512-byte sectors, subsets of the unflushed\n"
           "writes) and every NVM fence (durable stores plus subsets of unpersisted\n"
           "lines, partial at 8 bytes), plus crashes during recovery; each state must\n"
           "recover, check clean, and hold the guarantees of docs/GUARANTEES.md.\n\n"
           "Options:\n"
           "  --mode M         %s; repeatable\n"
           "                   (default: %s)\n"
           "  --workload FILE  a workload file (the language: docs/GUARANTEES.md);\n"
           "                   repeatable; without it, generated workloads\n"
           "  --depth N        generated sequence length: 1, 2 or 3 (quick 2, full 3);\n"
           "                   0: none (only --random)\n"
           "  --pairs N        sampled 2-item sequences (quick 6, full 300)\n"
           "  --triples N      sampled 3-item sequences (quick 0, full 60)\n"
           "  --random N       also N random workloads (seeded by --seed)\n"
           "  --ops N          ops per random workload (40; at most 64)\n"
           "  --k N            enumerate every subset up to N writes/lines (4)\n"
           "  --samples N      random states per point beyond that (quick 4, full 6)\n"
           "  --dcrash N       crash the recovery of every N-th state (quick 40, full 25)\n"
           "  --seed N         seed for sampling and tearing (1)\n"
           "  --persist MODEL  what the device is assumed to do with writes: volatile\n"
           "                   (a write cache: durable after a flush or with FUA; an\n"
           "                   epoch's writes survive in any subset; the default) or\n"
           "                   write-through (durable on completion; the writes in\n"
           "                   flight at the cut survive in any subset)\n"
           "  --oracle O       what a recovered state must be: auto (the mode's\n"
           "                   promise: integrity-only modes the integrity oracle,\n"
           "                   the others the prefix one; the default), prefix (some\n"
           "                   state after a prefix of the ops) or integrity (fsck\n"
           "                   finds only leaks, fsync'd files and names kept, a\n"
           "                   rename keeps a name; no prefix)\n"
           "  --atomic-block   the device writes each 4 KiB block whole\n"
           "                   (UBJ_BDEV_ATOMIC_BLOCK): writes torn only between\n"
           "                   blocks (default: torn at 512-byte sectors)\n"
           "  --stack SPEC     device layers between the file system and the write\n"
           "                   recorder, e.g. queue:clook@hdd:hp_c2249a (a request\n"
           "                   queue over a model on the virtual clock): the states\n"
           "                   follow the scheduler's order (default: none)\n"
           "  --quick          the CI pass (default): each core op once, suffixes\n"
           "                   rotating, plus the pairs\n"
           "  --full           the long pass (>= 100 000 states in the default modes):\n"
           "                   every core op with every suffix, pairs and triples\n"
           "  --out DIR        where reproducers are written (.)\n",
           tools_prog, all, def);
#if UBJ_TEST_HOOKS
    printf("  --break NAME     TEST BUILDS ONLY: run a deliberately broken variant:\n"
           "                   %s\n", cx_break_names());
#endif
    printf("  --timeout S      a state taking longer is a hang: abort (60)\n"
           "  -v, --verbose    print every failing state\n"
           "      --help       print this help\n\n"
           "Exit status: 0 no failure; 1 failures (or the exploration could not\n"
           "run); 2 usage error (also a workload file that does not parse).\n"
           "A state that hangs longer than --timeout (0: no watchdog) aborts the\n"
           "run (status 134) after printing its description.\n"
           "Set UBJ_TRACE_CRASH=1 to print every device state explored.\n");
}

/* ct_num -- parse a decimal option value. */
static int ct_num(const char *s, uint64_t max, uint64_t *out)
{
    if (tools_parse_u64(s, out) < 0 || *out > max)
        return tools_usage_err("bad number '%s'", s);
    return 0;
}

/* ct_repro -- minimize a failing workload and write it as a file. */
static void ct_repro(const struct ct_opts *o, const char *mode, const struct cx_workload *w,
                     const struct cx_failure *f, unsigned n)
{
    struct cx_config c = o->cfg;
    c.mode = mode;
    struct cx_workload *m = malloc(sizeof *m);
    if (m == NULL)
        return;
    *m = *w;
    struct cx_failure mf = *f;
    cx_minimize(&c, m, &mf);
    char path[512], comment[1600], brk[96] = "";
#if UBJ_TEST_HOOKS
    const char *b = cx_break_get();
    if (strcmp(b, "none") != 0)
        snprintf(brk, sizeof brk, " --break %s", b);
#endif
    snprintf(path, sizeof path, "%s/crash-%s-%u.wl", o->out, mode, n);
    snprintf(comment, sizeof comment,
             "ubjfs crashtest reproducer (minimized from %s)\n"
             "mode %s, seed %llu%s%s\n"
             "crash point: %s\n"
             "failure: %s\n"
             "replay: ubjfs crashtest --mode %s --seed %llu%s%s%s%s%s%s --workload THIS_FILE",
             w->name, mode, (unsigned long long)c.seed, brk[0] ? ", broken variant" : "",
             brk, mf.point, mf.why, mode, (unsigned long long)c.seed, brk,
             c.persist == CX_PERSIST_THROUGH ? " --persist write-through" : "",
             c.stack != NULL ? " --stack " : "", c.stack != NULL ? c.stack : "",
             c.oracle == CX_ORACLE_INTEGRITY ? " --oracle integrity"
             : c.oracle == CX_ORACLE_PREFIX ? " --oracle prefix" : "",
             c.atomic_block ? " --atomic-block" : "");
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        tools_err("%s: %s", path, strerror(errno));
        free(m);
        return;
    }
    cx_workload_write(fp, m, comment);
    fclose(fp);
    printf("  reproducer (%u ops): %s\n", m->nops, path);
    free(m);
}

struct ct_mode_sum {
    struct cx_result r;
    uint64_t workloads, bad_workloads, errors, repro;
};

/* ct_one -- explore one workload in one mode; report failures. */
static int ct_one(const struct ct_opts *o, const char *mode, const struct cx_workload *w,
                  struct ct_mode_sum *sum)
{
    struct cx_config c = o->cfg;
    c.mode = mode;
    struct cx_result r = { 0 };
    int rc = cx_explore(&c, w, &r);
    sum->workloads++;
    sum->r.states += r.states;
    sum->r.runs += r.runs;
    sum->r.points += r.points;
    sum->r.failures += r.failures;
    if (rc < 0) {
        sum->errors++;
        tools_err("mode %s workload %s: cannot explore: %s", mode, w->name,
                  tools_libmsg(rc));
        return 1;
    }
    if (r.failures == 0)
        return 0;
    sum->bad_workloads++;
    printf("FAIL mode %s workload %s: %llu of %llu states failed\n  first: %s\n  why: %s\n",
           mode, w->name, (unsigned long long)r.failures, (unsigned long long)r.states,
           r.first.point, r.first.why);
    if (sum->repro < CT_MAX_REPRO)
        ct_repro(o, mode, w, &r.first, (unsigned)++sum->repro);
    fflush(stdout);
    return 1;
}

/* ct_singles -- generated single items: all (full), or each core op
 * once with the persistence suffixes in rotation (quick). */
static unsigned ct_singles(const struct ct_opts *o)
{
    return o->full ? cx_gen_variants() : cx_gen_variants() / CX_GEN_SUFFIXES;
}

/* ct_generated -- workload number n of the generated set. */
static int ct_generated(const struct ct_opts *o, uint64_t n, struct cx_workload *w)
{
    unsigned v = cx_gen_variants();
    memset(w, 0, sizeof *w);
    cx_workload_default_setup(w);
    if (n < ct_singles(o))
        return cx_gen_item(w, o->full ? (unsigned)n : (unsigned)n * CX_GEN_SUFFIXES +
                                         (unsigned)n % CX_GEN_SUFFIXES);
    n -= ct_singles(o);
    unsigned len = n < o->pairs ? 2 : 3;
    uint64_t x = o->cfg.seed * 0x9E3779B97F4A7C15ull + n * 0xBF58476D1CE4E5B9ull + len;
    int rc = 0;
    for (unsigned i = 0; i < len && rc == 0; i++) {
        x ^= x >> 29;
        x *= 0x94D049BB133111EBull;
        x ^= x >> 32;
        rc = cx_gen_item(w, (unsigned)(x % v));
    }
    return rc;
}

/* ct_mode -- every workload in one mode. */
static int ct_mode(const struct ct_opts *o, const char *mode, struct ct_mode_sum *sum)
{
    struct cx_workload *w = malloc(sizeof *w);
    int bad = 0;
    if (w == NULL)
        return 1;
    if (o->nfiles > 0) {
        for (unsigned i = 0; i < o->nfiles; i++) {
            int rc = cx_workload_load(o->files[i], w);
            if (rc < 0) {
                tools_err("%s", tools_libmsg(rc));
                sum->errors++;
                bad = 1;
                continue;
            }
            bad |= ct_one(o, mode, w, sum);
        }
    } else {
        uint64_t n = o->depth >= 1 ? ct_singles(o) : 0;
        if (o->depth >= 2)
            n += o->pairs;
        if (o->depth >= 3)
            n += o->triples;
        for (uint64_t i = 0; i < n; i++) {
            if (ct_generated(o, i, w) < 0)
                continue;
            bad |= ct_one(o, mode, w, sum);
        }
        for (uint64_t i = 0; i < o->random; i++) {
            if (cx_gen_random(w, o->cfg.seed * 1000003u + i, (unsigned)o->ops) < 0)
                continue;
            bad |= ct_one(o, mode, w, sum);
        }
#if UBJ_TEST_HOOKS
        /* two operations at once (a create parked inside its handle while
         * an fsync commits): caught by the broken variant handle-no-wait */
        if (o->depth >= 1 && cx_workload_overlap(w) == 0)
            bad |= ct_one(o, mode, w, sum);
#endif
    }
    free(w);
    return bad;
}

/* ct_check_files -- every --workload file loads and parses, before any
 * mode runs.  0, or the usage exit status (the error reported once). */
static int ct_check_files(const struct ct_opts *o)
{
    struct cx_workload *w = malloc(sizeof *w);
    if (w == NULL) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    int ret = 0;
    for (unsigned i = 0; i < o->nfiles && ret == 0; i++) {
        int rc = cx_workload_load(o->files[i], w);
        if (rc < 0)
            ret = tools_usage_err("%s", tools_libmsg(rc));
    }
    free(w);
    return ret;
}

/* ct_parse -- the options into *o.  0, or an exit status. */
static int ct_parse(int argc, char **argv, struct ct_opts *o)
{
    static const struct option lo[] = {
        { "mode", required_argument, NULL, 'm' }, { "workload", required_argument, NULL, 'w' },
        { "depth", required_argument, NULL, 'd' }, { "pairs", required_argument, NULL, 'P' },
        { "triples", required_argument, NULL, 'T' }, { "k", required_argument, NULL, 'k' },
        { "samples", required_argument, NULL, 's' }, { "dcrash", required_argument, NULL, 'D' },
        { "seed", required_argument, NULL, 'S' }, { "quick", no_argument, NULL, 'q' },
        { "full", no_argument, NULL, 'f' }, { "out", required_argument, NULL, 'o' },
#if UBJ_TEST_HOOKS   /* a test build only: the deliberately broken variants */
        { "break", required_argument, NULL, 'b' },
#endif
        { "timeout", required_argument, NULL, 't' },
        { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
        { "random", required_argument, NULL, 'r' }, { "ops", required_argument, NULL, 'O' },
        { "persist", required_argument, NULL, 'p' },
        { "stack", required_argument, NULL, 'X' },
        { "oracle", required_argument, NULL, 'R' },
        { "atomic-block", no_argument, NULL, 'A' },
        { NULL, 0, NULL, 0 },
    };
    int64_t depth = -1, pairs = -1, triples = -1, dcrash = -1;
    int samples_set = 0;
    uint64_t v;
    int c;
    while ((c = getopt_long(argc, argv, "v", lo, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (o->nmodes == CT_MAX_MODES)
                return tools_usage_err("too many --mode");
            o->modes[o->nmodes++] = optarg;
            break;
        case 'w':
            if (o->nfiles == CT_MAX_FILES)
                return tools_usage_err("too many --workload");
            o->files[o->nfiles++] = optarg;
            break;
        case 'd': if (ct_num(optarg, 3, &v)) return 2; depth = (int64_t)v; break;
        case 'P': if (ct_num(optarg, 1000000, &v)) return 2; pairs = (int64_t)v; break;
        case 'T': if (ct_num(optarg, 1000000, &v)) return 2; triples = (int64_t)v; break;
        case 'k': if (ct_num(optarg, 12, &v)) return 2; o->cfg.k = (unsigned)v; break;
        case 's': if (ct_num(optarg, 1000, &v)) return 2; o->cfg.samples = (unsigned)v; samples_set = 1; break;
        case 'D': if (ct_num(optarg, 1000000, &v)) return 2; dcrash = (int64_t)v; break;
        case 'S': if (ct_num(optarg, UINT64_MAX, &v)) return 2; o->cfg.seed = v; break;
        case 't': if (ct_num(optarg, 86400, &v)) return 2; o->cfg.timeout_s = (unsigned)v; break;
        case 'r': if (ct_num(optarg, 1000000, &v)) return 2; o->random = v; break;
        case 'O': if (ct_num(optarg, CX_MAX_OPS, &v)) return 2; o->ops = v; break;
        case 'q': o->full = 0; break;
        case 'f': o->full = 1; break;
        case 'o': o->out = optarg; break;
        case 'X': o->cfg.stack = optarg; break;
        case 'A': o->cfg.atomic_block = 1; break;
        case 'R':
            if (strcmp(optarg, "auto") == 0)
                o->cfg.oracle = CX_ORACLE_AUTO;
            else if (strcmp(optarg, "prefix") == 0)
                o->cfg.oracle = CX_ORACLE_PREFIX;
            else if (strcmp(optarg, "integrity") == 0)
                o->cfg.oracle = CX_ORACLE_INTEGRITY;
            else
                return tools_usage_err("--oracle: 'auto', 'prefix' or 'integrity', "
                                       "not '%s'", optarg);
            break;
        case 'p':
            if (strcmp(optarg, "volatile") == 0)
                o->cfg.persist = CX_PERSIST_VOLATILE;
            else if (strcmp(optarg, "write-through") == 0)
                o->cfg.persist = CX_PERSIST_THROUGH;
            else
                return tools_usage_err("--persist: 'volatile' or 'write-through', not '%s'",
                                       optarg);
            break;
#if UBJ_TEST_HOOKS
        case 'b':
            if (cx_set_break(optarg) < 0)
                return tools_usage_err("%s", tools_libmsg(-EINVAL));
            break;
#endif
        case 'v': o->cfg.verbose = 1; break;
        case 'h': ct_usage(); return -1;
        default: return tools_bad_option();
        }
    }
    if (optind != argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind]);
    for (unsigned i = 0; i < o->nmodes; i++)
        if (ubj_mode_lookup(o->modes[i]) == NULL)
            return tools_usage_err("unknown mode '%s'", o->modes[i]);
    if (o->nmodes == 0) {   /* the registry's default set */
        const struct ubj_mode_info *d[CT_MAX_MODES];
        size_t n = ubj_mode_list(UBJ_MODE_F_CRASH_DEFAULT, UBJ_MODE_ORDER_REGISTRY,
                                 d, CT_MAX_MODES);
        for (size_t i = 0; i < n && i < CT_MAX_MODES; i++)
            o->modes[o->nmodes++] = d[i]->name;
    }
#if UBJ_TEST_HOOKS
    bool breaks = false;   /* a variant that breaks none of the modes run
                              would only show them passing */
    for (unsigned i = 0; i < o->nmodes; i++)
        breaks = breaks || cx_break_applies(o->modes[i]);
    if (!breaks)
        return tools_usage_err("--break %s changes none of the modes run (--mode): "
                               "the ubj-* variants break mode ubj, journal-* "
                               "the modes with a log, sync-* the integrity-only "
                               "modes", cx_break_get());
#endif
    o->depth = depth >= 0 ? (unsigned)depth : o->full ? 3 : 2;
    o->pairs = pairs >= 0 ? (uint64_t)pairs : o->full ? 300 : 6;
    o->triples = triples >= 0 ? (uint64_t)triples : o->full ? 60 : 0;
    if (!o->full && !samples_set)
        o->cfg.samples = 4;
    o->cfg.dcrash = dcrash >= 0 ? (unsigned)dcrash : o->full ? 25 : 40;
    return 0;
}

/* tools_crashtest_main -- `ubjfs crashtest`. */
int tools_crashtest_main(int argc, char **argv)
{
    struct ct_opts o = { .nmodes = 0, .out = ".", .ops = 40 };
    cx_config_default(&o.cfg);
    int rc = ct_parse(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? TOOLS_EXIT_OK : rc;
    int bad = 0;
    uint64_t total = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int frc = ct_check_files(&o);
    if (frc != 0)
        return frc;
    for (unsigned i = 0; i < o.nmodes; i++) {
        struct ct_mode_sum sum = { .workloads = 0 };
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        bad |= ct_mode(&o, o.modes[i], &sum);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
        printf("mode %-9s %6llu workloads %8llu states %7llu runs %7llu points "
               "%6llu failures (%llu workloads) %8.1f s %8.0f states/s\n", o.modes[i],
               (unsigned long long)sum.workloads, (unsigned long long)sum.r.states,
               (unsigned long long)sum.r.runs, (unsigned long long)sum.r.points,
               (unsigned long long)sum.r.failures, (unsigned long long)sum.bad_workloads,
               s, s > 0 ? (double)sum.r.states / s : 0.0);
        fflush(stdout);
        total += sum.r.states;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("total: %llu states explored in %.1f s (%.0f states/s): %s\n",
           (unsigned long long)total, s, s > 0 ? (double)total / s : 0.0,
           bad ? "FAILURES FOUND" : "no failure");
    return bad ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}
