/*
 * bench.c -- `ubjfs bench micro`: single-thread operation rates of the
 * library on a fresh image (docs/PERFORMANCE.md records the figures).
 *
 * Each run formats a fresh image (RAM device by default, 256 MiB), mounts
 * it without the timer thread and times, one after the other:
 *   create        N empty files in one directory       (ubj_create)
 *   stat          N lookups of those names             (ubj_lookup)
 *   unlink        N removals of those names            (ubj_unlink)
 *   create+unlink N pairs on the same names            (one op = a pair)
 *   read-4k       N 4 KiB reads of a hot 1 MiB file    (ubj_pread, cached)
 *   write-4k      W 4 KiB appends to a new file        (ubj_pwrite)
 *   fsync-4k      F 4 KiB appends, each + ubj_fsync    (fsync'd append)
 * with W = min(N, blocks / 4) so the written data fits in the image, and
 * F = min(W, --fsync-ops, default 2000) since each fsync may cost a device
 * flush (milliseconds on a disk).
 * Every figure is the median of R runs (default 5); names are made before
 * the clock starts.  Nothing here is a timed test: it only reports.
 *
 * --device SPEC may put timed model layers over the RAM or file device
 * ("hdd:modern7200", "nand:slc@file:/tmp/x"; include/ubjfs/model.h).
 * Their clock is virtual unless --clock real: modeled time passes only
 * while the library waits for the model, so each row then also reports
 * the modeled device time it waited for and the device energy it cost.
 * Mode ubj gets a fresh NVM region per run in --nvm-dir, charged to
 * --nvm-profile when given.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ubjfs/model.h"
#include "tools.h"

#define BENCH_NAME_LEN 12u             /* "f" + up to 10 digits + NUL */
#define BENCH_HOT_BLOCKS 256u          /* the cached-read file: 1 MiB */

enum bench_row { B_CREATE, B_STAT, B_UNLINK, B_PAIR, B_READ, B_WRITE, B_FSYNC, B_NROWS };

static const char *const bench_names[B_NROWS] = {
    "create", "stat", "unlink", "create+unlink", "read-4k-cached",
    "write-4k-seq", "fsync-4k-append",
};

struct bench_args {
    uint64_t ops, runs, size;
    uint64_t fsync_ops;        /* cap of the fsync row */
    uint32_t cache_blocks;
    const char *file;          /* NULL: RAM device */
    const char *mode;
    const char *spec;          /* --device as given */
    char *models;              /* its model layers ("": none) */
    enum ubj_clock_kind clock; /* of the models */
    const char *nvm_dir, *nvm_profile;   /* mode ubj */
    bool csv, force;
};

struct bench_run {
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ubj_ino_t dir;
    char *names;               /* ops names of BENCH_NAME_LEN bytes */
    unsigned char *block;      /* 4 KiB of data */
    uint64_t ops[B_NROWS];     /* operations per row */
    double secs[B_NROWS];      /* this run's time per row */
    double dsecs[B_NROWS];     /* modeled device time per row */
    double djoules[B_NROWS];   /* device energy per row */
    double t0;                 /* the row's start: wall time ... */
    struct tools_dev_mark m0;  /* ... and the model's */
    bool model;                /* the device has a model */
    char region[512];          /* mode ubj's region file, or "" */
};

/* bench_usage -- the --help text. */
static void bench_usage(void)
{
    printf("Usage: %s micro [OPTIONS]\n"
           "Single-thread micro-benchmarks of the library on a fresh image: create,\n"
           "stat (lookup), unlink, create+unlink pairs, 4 KiB cached read, 4 KiB\n"
           "sequential write (appends) and fsync'd 4 KiB append.  Prints op, ops,\n"
           "seconds, ops/s and ns/op, each the median of the runs.\n\n"
           "Options:\n"
           "  -n, --ops N           operations per row (default 100000; the write\n"
           "                        rows do at most a quarter of the image's blocks)\n"
           "      --fsync-ops F     operations of the fsync row (default 2000, at\n"
           "                        most --ops)\n"
           "  -r, --runs R          runs, each on a fresh image (default 5)\n"
           "  -d, --device SPEC     ram (default) or file:PATH (created, and removed\n"
           "                        afterwards; an existing non-empty file needs --force),\n"
           "                        optionally under timed model layers: hdd:hp_c2249a,\n"
           "                        nand:slc@file:/tmp/x, ssd:nvme (over ram), ...\n"
           "                        (docs/DEVICES.md); rows then add the modeled device\n"
           "                        time and energy\n"
           "      --clock KIND      the models' clock: virtual (default; no sleeping,\n"
           "                        the same figures every run) or real\n"
           "      --nvm-dir DIR     mode ubj: where the region goes (default /dev/shm)\n"
           "      --nvm-profile P   mode ubj: NVM cost model (dram, sttmram, pcm)\n"
           "  -s, --size SIZE       image size (default 256M; K/M/G/T suffixes)\n"
           "  -m, --mode MODE       consistency mode (default none)\n"
           "  -c, --cache BLOCKS    buffer cache size in 4 KiB blocks (default: the\n"
           "                        library's, 16384)\n"
           "      --csv             comma-separated output with a header line\n"
           "  -f, --force           allow --device file:PATH to overwrite PATH\n"
           "      --help            print this help\n\n"
           "Exit status: 0 done, 1 an operation failed, 2 usage error.\n", tools_prog);
}

/* bench_now -- monotonic seconds. */
static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* bench_fail -- report a failed library call; returns -1. */
static int bench_fail(const char *what, int rc)
{
    tools_err("%s: %s", what, tools_libmsg(rc));
    return -1;
}

/* bench_name -- the i-th file name. */
static inline const char *bench_name(const struct bench_run *r, uint64_t i)
{
    return r->names + i * BENCH_NAME_LEN;
}

/* bench_device -- a fresh zeroed device for one run.  0 or -1. */
static int bench_device(const struct bench_args *a, struct ubj_bdev **dev)
{
    int rc;
    if (a->file == NULL) {
        rc = ubj_bdev_ram_create(a->size / UBJ_BLOCK_SIZE, dev);
    } else {
        if (truncate(a->file, 0) != 0 && errno != ENOENT) {
            tools_err("%s: %s", a->file, strerror(errno));
            return -1;
        }
        rc = ubj_bdev_file_open(a->file, UBJ_BDEV_CREATE | UBJ_BDEV_RESIZE |
                                UBJ_BDEV_EXCL, a->size, dev);
    }
    if (rc < 0)
        return bench_fail(a->file ? a->file : "ram device", rc);
    struct ubj_bdev *leaf = *dev;
    rc = tools_dev_wrap(a->models, a->clock, leaf, dev);
    if (rc < 0) {
        ubj_bdev_destroy(leaf);
        *dev = NULL;
        return bench_fail(a->spec, rc);
    }
    return 0;
}

/* bench_row_start -- the clocks at the start of a row. */
static void bench_row_start(struct bench_run *r)
{
    tools_dev_mark(r->dev, &r->m0);
    r->t0 = bench_now();
}

/* bench_row_end -- the row's wall time, modeled time and energy. */
static void bench_row_end(struct bench_run *r, enum bench_row row)
{
    struct tools_dev_mark m1;
    r->secs[row] = bench_now() - r->t0;
    tools_dev_mark(r->dev, &m1);
    r->model = m1.model;
    r->dsecs[row] = (double)(m1.ns - r->m0.ns) / 1e9;
    r->djoules[row] = m1.energy_j - r->m0.energy_j;
}

/* bench_setup -- device, format, mount, the directory.  0 or -1. */
static int bench_setup(const struct bench_args *a, struct bench_run *r)
{
    if (bench_device(a, &r->dev) < 0)
        return -1;
    struct ubj_format_opts fo = { .mode = a->mode, .flags = UBJ_FORMAT_ZEROED };
    uint64_t def = a->size / 16384;
    fo.inodes = a->ops + 1024 > def ? a->ops + 1024 : 0;
    int rc = ubj_format(r->dev, &fo);
    if (rc < 0)
        return bench_fail("format", rc);
    struct ubj_config cfg = { .mode = a->mode, .cache_blocks = a->cache_blocks,
                              .flags = UBJ_MOUNT_NO_TIMER };
    if (tools_mode_needs(a->mode, UBJ_MODE_NEEDS_NVM)) {
        snprintf(r->region, sizeof r->region, "%s/ubjfs-bench-micro-%d.nvm",
                 a->nvm_dir, (int)getpid());
        cfg.nvm_path = r->region;
        cfg.nvm_flags = UBJ_NVM_FORMAT;
        cfg.nvm_profile = a->nvm_profile;
    }
    rc = ubj_mount(r->dev, &cfg, &r->fs);
    if (rc < 0)
        return bench_fail("mount", rc);
    struct ubj_stat st;
    rc = ubj_mkdir(r->fs, UBJ_ROOT_INO, "d", 0755, NULL, &st);
    if (rc < 0)
        return bench_fail("mkdir", rc);
    r->dir = st.ino;
    return 0;
}

/* bench_teardown -- unmount and destroy the run's device. */
static int bench_teardown(struct bench_run *r)
{
    int rc = 0;
    if (r->fs != NULL)
        rc = ubj_unmount(r->fs);
    r->fs = NULL;
    ubj_bdev_destroy(r->dev);
    r->dev = NULL;
    if (r->region[0] != '\0')
        unlink(r->region);
    r->region[0] = '\0';
    return rc < 0 ? bench_fail("unmount", rc) : 0;
}

/* bench_names_ops -- create, stat, unlink, create+unlink.  0 or -1. */
static int bench_names_ops(struct bench_run *r, uint64_t n)
{
    struct ubj_fs *fs = r->fs;
    struct ubj_stat st;
    int rc = 0;
    bench_row_start(r);
    for (uint64_t i = 0; i < n && rc == 0; i++)
        rc = ubj_create(fs, r->dir, bench_name(r, i), 0644, NULL, &st);
    bench_row_end(r, B_CREATE);
    if (rc < 0)
        return bench_fail("create", rc);
    bench_row_start(r);
    for (uint64_t i = 0; i < n && rc == 0; i++)
        rc = ubj_lookup(fs, r->dir, bench_name(r, i), &st);
    bench_row_end(r, B_STAT);
    if (rc < 0)
        return bench_fail("lookup", rc);
    bench_row_start(r);
    for (uint64_t i = 0; i < n && rc == 0; i++)
        rc = ubj_unlink(fs, r->dir, bench_name(r, i));
    bench_row_end(r, B_UNLINK);
    if (rc < 0)
        return bench_fail("unlink", rc);
    bench_row_start(r);
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        rc = ubj_create(fs, r->dir, bench_name(r, i), 0644, NULL, &st);
        if (rc == 0)
            rc = ubj_unlink(fs, r->dir, bench_name(r, i));
    }
    bench_row_end(r, B_PAIR);
    if (rc < 0)
        return bench_fail("create+unlink", rc);
    r->ops[B_CREATE] = r->ops[B_STAT] = r->ops[B_UNLINK] = r->ops[B_PAIR] = n;
    return 0;
}

/* bench_newfile -- create and open file `name` in the run's directory. */
static int bench_newfile(struct bench_run *r, const char *name, ubj_ino_t *ino)
{
    struct ubj_stat st;
    int rc = ubj_create(r->fs, r->dir, name, 0644, NULL, &st);
    if (rc == 0)
        rc = ubj_open(r->fs, st.ino, O_RDWR);
    if (rc < 0)
        return bench_fail(name, rc);
    *ino = st.ino;
    return 0;
}

/* bench_read -- n cached 4 KiB reads cycling over a hot 1 MiB file. */
static int bench_read(struct bench_run *r, uint64_t n)
{
    ubj_ino_t ino;
    if (bench_newfile(r, "hot", &ino) < 0)
        return -1;
    ssize_t got = 0;
    for (uint32_t b = 0; b < BENCH_HOT_BLOCKS && got >= 0; b++)
        got = ubj_pwrite(r->fs, ino, r->block, UBJ_BLOCK_SIZE, (off_t)b * UBJ_BLOCK_SIZE);
    for (uint32_t b = 0; b < BENCH_HOT_BLOCKS && got >= 0; b++)   /* warm */
        got = ubj_pread(r->fs, ino, r->block, UBJ_BLOCK_SIZE, (off_t)b * UBJ_BLOCK_SIZE);
    bench_row_start(r);
    for (uint64_t i = 0; i < n && got >= 0; i++)
        got = ubj_pread(r->fs, ino, r->block, UBJ_BLOCK_SIZE,
                        (off_t)(i % BENCH_HOT_BLOCKS) * UBJ_BLOCK_SIZE);
    bench_row_end(r, B_READ);
    ubj_release(r->fs, ino);
    if (got < 0)
        return bench_fail("read", (int)got);
    if (got != UBJ_BLOCK_SIZE)
        return bench_fail("read (short)", -EIO);
    r->ops[B_READ] = n;
    return 0;
}

/* bench_append -- w 4 KiB appends to a new file, with fsync if asked. */
static int bench_append(struct bench_run *r, uint64_t w, bool sync, enum bench_row row)
{
    ubj_ino_t ino;
    if (bench_newfile(r, sync ? "fsynced" : "seq", &ino) < 0)
        return -1;
    ssize_t got = UBJ_BLOCK_SIZE;
    int rc = 0;
    bench_row_start(r);
    for (uint64_t i = 0; i < w && got == UBJ_BLOCK_SIZE && rc == 0; i++) {
        got = ubj_pwrite(r->fs, ino, r->block, UBJ_BLOCK_SIZE, (off_t)(i * UBJ_BLOCK_SIZE));
        if (sync && got == UBJ_BLOCK_SIZE)
            rc = ubj_fsync(r->fs, ino, 0);
    }
    bench_row_end(r, row);
    ubj_release(r->fs, ino);
    if (got != UBJ_BLOCK_SIZE)
        return bench_fail("write", got < 0 ? (int)got : -ENOSPC);
    if (rc < 0)
        return bench_fail("fsync", rc);
    r->ops[row] = w;
    return 0;
}

/* bench_one -- one run on a fresh image.  0 or -1. */
static int bench_one(const struct bench_args *a, struct bench_run *r)
{
    uint64_t w = a->size / UBJ_BLOCK_SIZE / 4;
    if (w > a->ops)
        w = a->ops;
    int rc = bench_setup(a, r);
    if (rc == 0)
        rc = bench_names_ops(r, a->ops);
    if (rc == 0)
        rc = bench_read(r, a->ops);
    if (rc == 0)
        rc = bench_append(r, w, false, B_WRITE);
    if (rc == 0)
        rc = bench_append(r, w < a->fsync_ops ? w : a->fsync_ops, true, B_FSYNC);
    if (bench_teardown(r) < 0)
        rc = -1;
    return rc;
}

/* bench_cmp_double -- qsort order for doubles. */
static int bench_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* bench_median -- the median of v[0..n) (sorts v). */
static double bench_median(double *v, uint64_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* bench_header -- the title and column line. */
static void bench_header(const struct bench_args *a, bool model)
{
    if (a->csv) {
        printf("op,ops,seconds,ops_per_s,ns_per_op%s\n",
               model ? ",model_seconds,model_us_per_op,model_ops_per_s,energy_mj_per_op" : "");
        return;
    }
    char sz[32];
    tools_fmt_size(a->size, sz, sizeof sz);
    printf("ubjfs bench micro: %s device, %s image, mode %s, median of %llu run%s\n",
           model ? a->spec : a->file ? "file" : "ram", sz, a->mode ? a->mode : UBJ_MODE_NONE,
           (unsigned long long)a->runs, a->runs == 1 ? "" : "s");
    if (model)
        printf("(model columns: device time the library waited for on the %s clock, "
               "and device energy)\n", a->clock == UBJ_CLOCK_REAL ? "real" : "virtual");
    printf("%-16s %10s %12s %14s %12s", "op", "ops", "seconds", "ops/s", "ns/op");
    if (model)
        printf(" %12s %12s %12s %12s", "model s", "model us/op", "model ops/s", "mJ/op");
    printf("\n");
}

/* bench_report -- print the medians; each array is [B_NROWS][runs]. */
static void bench_report(const struct bench_args *a, double *secs, double *dsecs,
                         double *dj, const uint64_t *ops, bool model)
{
    bench_header(a, model);
    for (int row = 0; row < B_NROWS; row++) {
        size_t at = (size_t)row * a->runs;
        double med = bench_median(secs + at, a->runs);
        double dmed = bench_median(dsecs + at, a->runs);
        double jmed = bench_median(dj + at, a->runs);
        double n = (double)ops[row];
        double rate = med > 0 ? n / med : 0;
        double ns = ops[row] ? med * 1e9 / n : 0;
        double dus = ops[row] ? dmed * 1e6 / n : 0, drate = dmed > 0 ? n / dmed : 0;
        double mj = ops[row] ? jmed * 1e3 / n : 0;
        if (a->csv) {
            printf("%s,%llu,%.6f,%.1f,%.1f", bench_names[row],
                   (unsigned long long)ops[row], med, rate, ns);
            if (model)
                printf(",%.6f,%.3f,%.1f,%.6f", dmed, dus, drate, mj);
        } else {
            printf("%-16s %10llu %12.6f %14.1f %12.1f", bench_names[row],
                   (unsigned long long)ops[row], med, rate, ns);
            if (model)
                printf(" %12.6f %12.3f %12.1f %12.6f", dmed, dus, drate, mj);
        }
        printf("\n");
    }
    fflush(stdout);
}

/* bench_alloc -- names and the data block for a run.  0 or -1. */
static int bench_alloc(const struct bench_args *a, struct bench_run *r)
{
    r->names = malloc(a->ops * BENCH_NAME_LEN);
    r->block = malloc(UBJ_BLOCK_SIZE);
    if (r->names == NULL || r->block == NULL) {
        tools_err("out of memory");
        return -1;
    }
    for (uint64_t i = 0; i < a->ops; i++)
        snprintf(r->names + i * BENCH_NAME_LEN, BENCH_NAME_LEN, "f%08u", (unsigned)i);
    for (unsigned i = 0; i < UBJ_BLOCK_SIZE; i++)
        r->block[i] = (unsigned char)(i * 31u + 7u);
    return 0;
}

/* bench_micro -- all runs, then the report.  An exit code. */
static int bench_micro(const struct bench_args *a, bool created)
{
    struct bench_run r;
    memset(&r, 0, sizeof r);
    double *secs = calloc(3 * B_NROWS * a->runs, sizeof *secs);
    double *dsecs = secs ? secs + B_NROWS * a->runs : NULL;
    double *dj = secs ? dsecs + B_NROWS * a->runs : NULL;
    uint64_t ops[B_NROWS] = { 0 };
    int ret = (secs == NULL || bench_alloc(a, &r) < 0) ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
    if (secs == NULL)
        tools_err("out of memory");
    for (uint64_t run = 0; ret == TOOLS_EXIT_OK && run < a->runs; run++) {
        memset(r.secs, 0, sizeof r.secs);
        memset(r.dsecs, 0, sizeof r.dsecs);
        memset(r.djoules, 0, sizeof r.djoules);
        if (bench_one(a, &r) < 0)
            ret = TOOLS_EXIT_ERR;
        for (int row = 0; row < B_NROWS; row++) {
            size_t at = (size_t)row * a->runs + run;
            secs[at] = r.secs[row];
            dsecs[at] = r.dsecs[row];
            dj[at] = r.djoules[row];
        }
        memcpy(ops, r.ops, sizeof ops);
    }
    if (ret == TOOLS_EXIT_OK)
        bench_report(a, secs, dsecs, dj, ops, r.model);
    if (created && a->file != NULL)
        unlink(a->file);
    free(secs);
    free(r.names);
    free(r.block);
    return ret;
}

/* bench_check_file -- may --device file:PATH be used?  *created if new. */
static int bench_check_file(const struct bench_args *a, bool *created)
{
    struct stat st;
    *created = false;
    if (a->file == NULL)
        return 0;
    if (stat(a->file, &st) != 0) {
        if (errno != ENOENT) {
            tools_err("%s: %s", a->file, strerror(errno));
            return -1;
        }
        *created = true;
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        tools_err("%s: not a regular file", a->file);
        return -1;
    }
    if (st.st_size > 0 && !a->force) {
        tools_err("%s exists and is not empty; use --force to overwrite it", a->file);
        return -1;
    }
    return 0;
}

/* bench_parse_more -- the options added for device models and mode ubj.
 * -1 to go on, else an exit code. */
static int bench_parse_more(struct bench_args *a, int c, const char *arg)
{
    switch (c) {
    case 'd':      /* a ram or file: leaf (default ram) under model layers */
        return tools_bench_device(arg, &a->spec, &a->models, &a->file);
    case 'K':
        return tools_bench_clock(arg, &a->clock);
    case 'D':
        a->nvm_dir = arg;
        return -1;
    case 'P':
        return tools_bench_nvm_profile(arg, &a->nvm_profile);
    default:
        return tools_bad_option();
    }
}

/* bench_parse -- options into *a; -1 to go on, else an exit code. */
static int bench_parse(int argc, char **argv, struct bench_args *a)
{
    static const struct option lo[] = {
        TOOLS_BENCH_OPTIONS,
        { "runs", required_argument, NULL, 'r' },
        { "mode", required_argument, NULL, 'm' },
        { "fsync-ops", required_argument, NULL, 'F' },
        { "force", no_argument, NULL, 'f' },
        { NULL, 0, NULL, 0 },
    };
    uint64_t v;
    int c, rc;
    optind = 0;
    while ((c = getopt_long(argc, argv, "n:r:d:s:m:c:fh", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (tools_parse_u64(optarg, &a->ops) < 0 || a->ops == 0 || a->ops > 100000000)
                return tools_usage_err("invalid --ops '%s' (1..100000000)", optarg);
            break;
        case 'r':
            if (tools_parse_u64(optarg, &a->runs) < 0 || a->runs == 0 || a->runs > 1000)
                return tools_usage_err("invalid --runs '%s' (1..1000)", optarg);
            break;
        case 's':
            if (tools_parse_size(optarg, &a->size) < 0 || a->size < (4u << 20))
                return tools_usage_err("invalid --size '%s' (at least 4M)", optarg);
            a->size -= a->size % UBJ_BLOCK_SIZE;
            break;
        case 'm': a->mode = optarg; break;
        case 'c':
            if (tools_parse_u64(optarg, &v) < 0 || v < 64 || v > UINT32_MAX)
                return tools_usage_err("invalid --cache '%s' (64 or more blocks)", optarg);
            a->cache_blocks = (uint32_t)v;
            break;
        case 'C': a->csv = true; break;
        case 'F':
            if (tools_parse_u64(optarg, &a->fsync_ops) < 0 || a->fsync_ops == 0)
                return tools_usage_err("invalid --fsync-ops '%s'", optarg);
            break;
        case 'f': a->force = true; break;
        case 'h': case 'H': bench_usage(); return TOOLS_EXIT_OK;
        default:
            if ((rc = bench_parse_more(a, c, optarg)) >= 0)
                return rc;
        }
    }
    if (optind >= argc)
        return tools_usage_err("missing benchmark name (micro)");
    if (strcmp(argv[optind], "micro") != 0)
        return tools_usage_err("unknown benchmark '%s' (headline, run, micro, ubj, "
                               "modes, dev)", argv[optind]);
    if (optind + 1 < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind + 1]);
    /* each op's file needs an inode (15 per 4 KiB block) and room in its
     * directory: keep that within half the image */
    uint64_t need = (a->ops + 1024) / 15 * UBJ_BLOCK_SIZE * 2 + (4u << 20);
    if (a->size < need)
        return tools_usage_err("--size %lluM is too small for --ops %llu (needs "
                               "at least %lluM)",
                               (unsigned long long)(a->size >> 20),
                               (unsigned long long)a->ops,
                               (unsigned long long)((need + (1u << 20) - 1) >> 20));
    return -1;
}

/* bench_overview -- `ubjfs bench --help`: every benchmark. */
static int bench_overview(void)
{
    char heads[256], text[512];
    tools_mode_names(UBJ_MODE_F_HEADLINE, -1, UBJ_MODE_ORDER_BASELINES_FIRST, ", ", ", ",
                     heads, sizeof heads);
    snprintf(text, sizeof text, "the headline experiment: modes %s on postmark, "
             "varmail, fileserver, iozone, on an SSD and an HDD model (docs/RESULTS.md)",
             heads);
    printf("Usage: ubjfs bench [--quick] [--results DIR] [OPTIONS]\n"
           "       ubjfs bench run [OPTIONS]\n"
           "       ubjfs bench micro|ubj|modes|dev|readahead|ordering [OPTIONS]\n\n"
           "  (none), headline  ");
    tools_wrap(stdout, text, 20, 20, 72);
    printf("  run               the evaluation harness: any workloads x modes x\n"
           "                    device profiles; table, CSV, JSON, plots\n"
           "  micro             single-thread operation rates of the library\n"
           "  ubj               mode ubj: append+fsync latency, recovery, ubj vs none\n"
           "  modes             every mode: cost of one fsync'd append, by category\n"
           "  dev               CPU cost of one request on device stacks (queue, ...)\n"
           "  readahead         the read-ahead study: policies x patterns x devices\n"
           "  ordering          the metadata-ordering study: modes x ganger/andrew x users\n\n"
           "Run 'ubjfs bench BENCHMARK --help' for its options.\n"
           "Exit status: 0 success, 1 a run failed, 2 usage error.\n");
    return TOOLS_EXIT_OK;
}

/* bench_study_argv -- a study command (readahead, ordering) speaks as
 * "ubjfs bench NAME" in its messages, getopt's included: tools_prog and
 * its argv[0] (argv + 1) say so. */
static char **bench_study_argv(char **argv)
{
    static char prog[64];
    snprintf(prog, sizeof prog, "%s %s", tools_prog, argv[1]);
    tools_prog = prog;
    argv[1] = prog;
    return argv + 1;
}

/* tools_bench_main -- `ubjfs bench`. */
int tools_bench_main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return bench_overview();
    struct bench_args a = { .ops = 100000, .runs = 5, .size = 256u << 20,
                            .fsync_ops = 2000, .nvm_dir = "/dev/shm" };
    /* no benchmark name: the headline, with whatever options follow */
    if (argc < 2 || argv[1][0] == '-')
        return tools_bench_headline_main(argc, argv);     /* src/tools/bench_run.c */
    if (strcmp(argv[1], "headline") == 0 || strcmp(argv[1], "run") == 0)
        return (argv[1][0] == 'r' ? tools_bench_run_main : tools_bench_headline_main)(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "ubj") == 0)   /* src/tools/bench_ubj.c */
        return tools_bench_ubj_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "modes") == 0)   /* src/tools/bench_modes.c */
        return tools_bench_modes_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "dev") == 0)   /* src/tools/bench_dev.c */
        return tools_bench_dev_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "readahead") == 0)   /* src/tools/bench_ra.c */
        return tools_bench_readahead_main(argc - 1, bench_study_argv(argv));
    if (argc >= 2 && strcmp(argv[1], "ordering") == 0)   /* src/tools/bench_order.c */
        return tools_bench_ordering_main(argc - 1, bench_study_argv(argv));
    int ret = bench_parse(argc, argv, &a);
    if (ret < 0) {
        struct ubj_format_opts fo = { .mode = a.mode };
        int rc = tools_format_trial(&fo);
        bool created;
        if (rc == -EINVAL)
            ret = tools_usage_err("%s", tools_libmsg(rc));
        else if (bench_check_file(&a, &created) < 0)
            ret = TOOLS_EXIT_ERR;
        else
            ret = bench_micro(&a, created);
    }
    free(a.models);
    return ret;
}
