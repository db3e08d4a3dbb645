/*
 * bench_dev.c -- `ubjfs bench dev`: what one request costs the CPU on a
 * device stack (a benchmark, not a timed test; docs/PERFORMANCE.md
 * records the figures of issue 18: the request queue's cost per request
 * on the RAM device).
 *
 * For each --device SPEC (ubj_bdev_open_spec; default ram, then a queue
 * over ram dispatching in the caller's thread, then one handing every
 * request to its dispatcher thread), in one thread, 4 KiB requests over
 * the first 1024 blocks:
 *   read    v1 ubj_bdev_read, waited for (the cache's read path today)
 *   write   v1 ubj_bdev_write, waited for
 *   submit  v2 writes submitted with a completion callback, 64 at a time,
 *           then ubj_bdev_drain (the asynchronous write-back to come)
 * ns per request of wall time, the median of --runs runs, the stacks
 * taking turns so that drift in the machine's speed spreads over all.
 * Models run on a virtual clock (their CPU cost, not modeled time).
 *
 * --modeled Q: instead, on each stack with a model, the schedulers'
 * effect in modeled time: --ops random 4 KiB writes over the first --span
 * blocks from a closed loop that keeps Q requests outstanding (submit Q,
 * then wait for the oldest and submit another in its place); the modeled
 * throughput and the mean and largest response time.  Deterministic.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ubjfs/model.h"
#include "tools.h"

#define BD_MAXDEV 8u
#define BD_MAXRUNS 99u
#define BD_SPAN 1024u         /* blocks the requests go round */
#define BD_BATCH 64u          /* v2 submissions between drains */
#define BD_KINDS 3
#define BD_MAXQD 1024u        /* --modeled: requests outstanding at most */

struct bd_args {
    const char *spec[BD_MAXDEV];
    unsigned nspec;
    uint64_t ops;
    unsigned runs;
    uint64_t modeled;     /* queue depth of the modeled run; 0: CPU cost */
    uint64_t span;        /* blocks of the devices */
};

static const char *const bd_default[] = {
    "ram", "queue:fcfs@ram", "queue:fcfs,dispatch=thread@ram",
};
static const char *const bd_kind[BD_KINDS] = { "read", "write", "submit" };

/* bd_now -- monotonic ns. */
static uint64_t bd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* bd_done -- a submission's callback: count it (callbacks of one queue
 * may run in several threads at once). */
static void bd_done(struct ubj_req *r)
{
    __atomic_add_fetch((unsigned *)r->priv, 1, __ATOMIC_RELAXED);
}

/* bd_submit_burst -- ops v2 writes with callbacks, drained every batch. */
static int bd_submit_burst(struct ubj_bdev *d, uint64_t ops, unsigned char *buf)
{
    struct ubj_req r[BD_BATCH];
    unsigned done = 0;
    for (uint64_t i = 0; i < ops; i += BD_BATCH) {
        uint64_t n = ops - i < BD_BATCH ? ops - i : BD_BATCH;
        for (uint64_t k = 0; k < n; k++) {
            ubj_req_init(&r[k], UBJ_REQ_WRITE, (i + k) % BD_SPAN, 1, buf);
            r[k].done = bd_done;
            r[k].priv = &done;
            if (ubj_bdev_submit(d, &r[k]) < 0)
                return -EIO;
        }
        if (ubj_bdev_drain(d) < 0)
            return -EIO;
    }
    return __atomic_load_n(&done, __ATOMIC_RELAXED) == ops ? 0 : -EIO;
}

/* bd_run -- one timed run of kind k on d: ns per request, or 0 on error. */
static double bd_run(struct ubj_bdev *d, int k, uint64_t ops, unsigned char *buf)
{
    int rc = 0;
    uint64_t t0 = bd_now();
    if (k == 2) {
        rc = bd_submit_burst(d, ops, buf);
    } else {
        for (uint64_t i = 0; i < ops && rc == 0; i++)
            rc = k == 0 ? ubj_bdev_read(d, i % BD_SPAN, 1, buf)
                        : ubj_bdev_write(d, i % BD_SPAN, 1, buf);
    }
    uint64_t t1 = bd_now();
    return rc == 0 ? (double)(t1 - t0) / (double)ops : 0.0;
}

/* bd_cmp -- qsort order of doubles. */
static int bd_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* bd_measure -- every stack, kind and run (stacks in turn); medians into
 * med[spec][kind].  0 or an exit code. */
static int bd_measure(const struct bd_args *a, struct ubj_bdev **dev,
                      double med[BD_MAXDEV][BD_KINDS])
{
    static double t[BD_MAXDEV][BD_KINDS][BD_MAXRUNS];
    static unsigned char buf[UBJ_BLOCK_SIZE];
    for (unsigned s = 0; s < a->nspec; s++)      /* warm-up: touch the span */
        if (bd_run(dev[s], 1, BD_SPAN, buf) == 0.0)
            return TOOLS_EXIT_ERR;
    for (unsigned run = 0; run < a->runs; run++)
        for (unsigned s = 0; s < a->nspec; s++)
            for (int k = 0; k < BD_KINDS; k++)
                if ((t[s][k][run] = bd_run(dev[s], k, a->ops, buf)) == 0.0) {
                    tools_err("%s: %s failed: %s", a->spec[s], bd_kind[k],
                              ubj_errormsg());
                    return TOOLS_EXIT_ERR;
                }
    for (unsigned s = 0; s < a->nspec; s++)
        for (int k = 0; k < BD_KINDS; k++) {
            qsort(t[s][k], a->runs, sizeof t[s][k][0], bd_cmp);
            med[s][k] = t[s][k][a->runs / 2];
        }
    return 0;
}

/* bd_report -- the table: ns per request, and the difference to the
 * first stack. */
static void bd_report(const struct bd_args *a, double med[BD_MAXDEV][BD_KINDS])
{
    printf("ubjfs bench dev: ns per 4 KiB request, one thread, median of %u "
           "run%s of %llu\n", a->runs, a->runs == 1 ? "" : "s",
           (unsigned long long)a->ops);
    printf("%-40s %9s %9s %9s   (+ over %s)\n", "device", bd_kind[0], bd_kind[1],
           bd_kind[2], a->spec[0]);
    for (unsigned s = 0; s < a->nspec; s++) {
        printf("%-40s %9.1f %9.1f %9.1f", a->spec[s], med[s][0], med[s][1], med[s][2]);
        if (s > 0)
            printf("   %+.1f %+.1f %+.1f", med[s][0] - med[0][0],
                   med[s][1] - med[0][1], med[s][2] - med[0][2]);
        printf("\n");
    }
}

/* bd_modeled -- the closed loop of --modeled on d: modeled ops/s and
 * mean / max response time (ms) into out[3].  0 or -EIO. */
static int bd_modeled(struct ubj_bdev *d, const struct bd_args *a, double out[3])
{
    static struct ubj_req r[BD_MAXQD];
    static unsigned char buf[UBJ_BLOCK_SIZE];
    struct ubj_clock *c = ubj_model_clock(ubj_model_find(d));
    uint64_t x = 88172645463325252ull, t0 = ubj_clock_now(c), sum = 0, max = 0;
    uint64_t qd = a->modeled < a->ops ? a->modeled : a->ops;
    for (uint64_t i = 0; i < a->ops + qd; i++) {
        struct ubj_req *q = &r[i % qd];
        if (i >= qd) {                  /* the oldest outstanding one */
            if (ubj_bdev_wait(d, q) < 0)
                return -EIO;
            uint64_t rsp = q->t_complete - q->t_arrive;
            sum += rsp;
            max = rsp > max ? rsp : max;
        }
        if (i >= a->ops)
            continue;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;     /* xorshift64 */
        ubj_req_init(q, UBJ_REQ_WRITE, x % a->span, 1, buf);
        if (ubj_bdev_submit(d, q) < 0)
            return -EIO;
    }
    double secs = (double)(ubj_clock_now(c) - t0) * 1e-9;
    out[0] = secs > 0 ? (double)a->ops / secs : 0.0;
    out[1] = (double)sum / (double)a->ops * 1e-6;
    out[2] = (double)max * 1e-6;
    return 0;
}

/* bd_report_modeled -- --modeled: each stack with a model. */
static int bd_report_modeled(const struct bd_args *a, struct ubj_bdev **dev)
{
    printf("ubjfs bench dev --modeled %llu: %llu random 4 KiB writes over %llu "
           "blocks, %llu outstanding, modeled time (virtual clock)\n",
           (unsigned long long)a->modeled, (unsigned long long)a->ops,
           (unsigned long long)a->span, (unsigned long long)a->modeled);
    printf("%-44s %10s %10s %10s\n", "device", "ops/s", "mean_ms", "max_ms");
    for (unsigned s = 0; s < a->nspec; s++) {
        double v[3];
        if (ubj_model_find(dev[s]) == NULL) {
            printf("%-44s %10s\n", a->spec[s], "(no model)");
            continue;
        }
        if (bd_modeled(dev[s], a, v) < 0) {
            tools_err("%s: %s", a->spec[s], ubj_errormsg());
            return TOOLS_EXIT_ERR;
        }
        printf("%-44s %10.1f %10.3f %10.3f\n", a->spec[s], v[0], v[1], v[2]);
    }
    return 0;
}

/* bd_usage -- --help. */
static void bd_usage(void)
{
    printf("Usage: ubjfs bench dev [OPTIONS]\n"
           "What one 4 KiB request costs the CPU on a device stack: v1 reads and\n"
           "writes waited for, and v2 writes submitted with a completion callback\n"
           "(64 at a time, then drained); ns per request of wall time, median of\n"
           "the runs, the stacks taking turns.  Models run on a virtual clock.\n\n"
           "Options:\n"
           "  -d, --device SPEC   a device stack (repeatable, up to %u; default:\n"
           "                      ram, queue:fcfs@ram, queue:fcfs,dispatch=thread@ram)\n"
           "      --ops N         requests per run and kind (default 200000)\n"
           "      --runs N        runs (default 5, at most %u)\n"
           "      --modeled Q     instead: on stacks with a model, --ops random\n"
           "                      writes kept Q outstanding (at most %u), in\n"
           "                      modeled time: ops/s, mean and max response\n"
           "      --span N        blocks of each device (default 1024)\n"
           "      --help          print this help\n\n"
           "Exit status: 0 done, 1 a request failed, 2 usage error.\n",
           BD_MAXDEV, BD_MAXRUNS, BD_MAXQD);
}

/* bd_parse -- the options; -1 to go on, else an exit code. */
static int bd_parse(int argc, char **argv, struct bd_args *a)
{
    static const struct option lo[] = {
        { "device", required_argument, NULL, 'd' },
        { "ops", required_argument, NULL, 'o' },
        { "runs", required_argument, NULL, 'r' },
        { "modeled", required_argument, NULL, 'm' },
        { "span", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    uint64_t v;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:h", lo, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (a->nspec == BD_MAXDEV)
                return tools_usage_err("at most %u --device", BD_MAXDEV);
            a->spec[a->nspec++] = optarg;
            break;
        case 'o':
            if (tools_parse_u64(optarg, &a->ops) < 0 || a->ops == 0)
                return tools_usage_err("invalid --ops '%s'", optarg);
            break;
        case 'r':
            if (tools_parse_u64(optarg, &v) < 0 || v == 0 || v > BD_MAXRUNS)
                return tools_usage_err("invalid --runs '%s' (1 to %u)", optarg,
                                       BD_MAXRUNS);
            a->runs = (unsigned)v;
            break;
        case 'm':
            if (tools_parse_u64(optarg, &a->modeled) < 0 || a->modeled == 0 ||
                a->modeled > BD_MAXQD)
                return tools_usage_err("invalid --modeled '%s' (1 to %u)", optarg,
                                       BD_MAXQD);
            break;
        case 's':
            if (tools_parse_u64(optarg, &a->span) < 0 || a->span < BD_SPAN)
                return tools_usage_err("invalid --span '%s' (at least %u)", optarg,
                                       BD_SPAN);
            break;
        case 'h': bd_usage(); return TOOLS_EXIT_OK;
        default: return TOOLS_EXIT_USAGE;
        }
    }
    if (optind < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind]);
    for (unsigned i = 0; a->nspec == 0 && i < sizeof bd_default / sizeof bd_default[0]; i++)
        a->spec[i] = bd_default[i];
    if (a->nspec == 0)
        a->nspec = sizeof bd_default / sizeof bd_default[0];
    return -1;
}

/* tools_bench_dev_main -- `ubjfs bench dev`. */
int tools_bench_dev_main(int argc, char **argv)
{
    struct bd_args a = { .ops = 200000, .runs = 5, .span = BD_SPAN };
    int ret = bd_parse(argc, argv, &a);
    if (ret >= 0)
        return ret;
    struct ubj_bdev *dev[BD_MAXDEV] = {0};
    struct ubj_spec_opts o = { .nblocks = a.span, .clock_kind = UBJ_CLOCK_VIRTUAL };
    ret = 0;
    for (unsigned s = 0; s < a.nspec && ret == 0; s++) {
        int rc = ubj_bdev_open_spec(a.spec[s], NULL, &o, &dev[s]);
        if (rc < 0)
            ret = tools_usage_err("device '%s': %s", a.spec[s], tools_libmsg(rc));
    }
    static double med[BD_MAXDEV][BD_KINDS];
    if (ret == 0 && a.modeled > 0)
        ret = bd_report_modeled(&a, dev);
    else if (ret == 0 && (ret = bd_measure(&a, dev, med)) == 0)
        bd_report(&a, med);
    for (unsigned s = 0; s < a.nspec; s++)
        ubj_bdev_destroy(dev[s]);
    return ret;
}
