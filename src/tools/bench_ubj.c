/*
 * bench_ubj.c -- `ubjfs bench ubj`: the figures of issue 3, item 8 (a
 * benchmark, not a timed test; docs/PERFORMANCE.md records them).
 *
 *   append+fsync   latency of a 4 KiB append followed by fsync, mode ubj
 *                  (region in DRAM: /dev/shm) and mode none, per operation:
 *                  median, 90th and 99th percentile, mean
 *   recovery       a region of --recovery-size is filled with committed
 *                  blocks (fsync'd writes), copied as a crash would leave it,
 *                  and the copy mounted: the mode's recovery time (scan +
 *                  adopt) and the whole mount, scaled per GiB of region
 *   mix            ops/s of none and ubj on a create / write 8 KiB /
 *                  (fsync) / unlink-every-4th mix, with and without fsync,
 *                  after a warm-up that touches every cache buffer once,
 *                  timed up to a final sync (the task is done when its data
 *                  is durable, as Ganger measures task elapsed time); the
 *                  median of --runs alternating runs
 *
 * Images live on a RAM device unless --device file:PATH (then none's
 * fsync pays a real fdatasync).  The region is a file in --nvm-dir
 * (default /dev/shm); with PMEM_IS_PMEM_FORCE=1 in the environment libpmem
 * treats it as persistent memory (cache-line flushes instead of msync),
 * which is how DRAM stands in for NVM here, as in the paper.
 *
 * --device SPEC may put timed model layers over the image's RAM or file
 * device (include/ubjfs/model.h), on a virtual clock unless --clock real.
 * Then the figures also come in modeled time: append+fsync latency as
 * the device time each operation waited for, and its device energy;
 * recovery as the device time of the crash copy's mount (the copy is put
 * under the same model layers); the mix as operations per second of
 * modeled device time up to the final sync.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ubjfs/nvm.h"
#include "tools.h"

#define BU_MAXRUNS 99u

struct bu_args {
    unsigned runs;             /* mix runs of each mode (median) */
    uint64_t ops, mix_ops, size, recovery_size;
    uint32_t cache_blocks;
    const char *nvm_dir;
    const char *nvm_profile;   /* NVM cost model, or NULL */
    const char *file;          /* NULL: RAM device */
    const char *spec;          /* --device as given */
    char *models;              /* its model layers ("": none) */
    enum ubj_clock_kind clock; /* of the models */
    bool csv;
};

struct bu_mount {
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    char region[512];
};

/* bu_now_ns -- monotonic nanoseconds. */
static uint64_t bu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* bu_cpu_ns -- CPU time (user + system) of this process so far: less
 * disturbed than wall time by other load on a shared machine. */
static uint64_t bu_cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* bu_fail -- report a failed call; returns -1. */
static int bu_fail(const char *what, int rc)
{
    tools_err("%s: %s", what, tools_libmsg(rc));
    return -1;
}

/* bu_usage -- the --help text. */
static void bu_usage(void)
{
    printf("Usage: %s ubj [OPTIONS]\n"
           "Benchmarks of mode ubj (issue 3): 4 KiB append+fsync latency (ubj and\n"
           "none), recovery time per GiB of NVM region, and ops/s of none against\n"
           "ubj on a create/write/fsync mix and on the same mix without fsync.\n\n"
           "Options:\n"
           "  -n, --ops N            append+fsync operations (default 20000)\n"
           "      --mix-ops N        operations of each mix run (default 20000)\n"
           "  -r, --runs R           mix runs of each mode, alternating; the\n"
           "                         median is printed (default 5)\n"
           "  -s, --size SIZE        image size (default 512M)\n"
           "  -c, --cache BLOCKS     cache / region buffers (default 16384)\n"
           "      --recovery-size S  region size for the recovery figure\n"
           "                         (default 256M; needs that much in --nvm-dir)\n"
           "      --nvm-dir DIR      where region files go (default /dev/shm)\n"
           "      --nvm-profile P    charge the region's persists to NVM cost\n"
           "                         model P (dram, sttmram, pcm): modeled time\n"
           "                         and energy per append+fsync are printed\n"
           "  -d, --device SPEC      ram (default) or file:PATH for the image, under\n"
           "                         timed model layers if given (hdd:modern7200,\n"
           "                         nand:slc@file:/tmp/x, ...; docs/DEVICES.md): the\n"
           "                         figures then also come in modeled device time\n"
           "      --clock KIND       the models' clock: virtual (default) or real\n"
           "      --csv              name,value lines\n"
           "      --help             print this help\n\n"
           "Set PMEM_IS_PMEM_FORCE=1 to flush with cache-line instructions\n"
           "(DRAM as NVM) instead of msync.  Exit status: 0, 1 error, 2 usage.\n",
           tools_prog);
}

/* bu_parse_model -- --device SPEC (a ram or file: leaf under model
 * layers) and --clock.  -1 to go on, else an exit code. */
static int bu_parse_model(struct bu_args *a, int c, const char *arg)
{
    if (c == 'K')
        return tools_bench_clock(arg, &a->clock);
    return tools_bench_device(arg, &a->spec, &a->models, &a->file);
}

/* bu_parse -- options into *a.  -1 to go on, else an exit code. */
static int bu_parse(int argc, char **argv, struct bu_args *a)
{
    static const struct option lo[] = {
        TOOLS_BENCH_OPTIONS,
        { "mix-ops", required_argument, NULL, 'M' },
        { "recovery-size", required_argument, NULL, 'R' },
        { "runs", required_argument, NULL, 'r' },
        { NULL, 0, NULL, 0 },
    };
    uint64_t v;
    int c, rc;
    optind = 0;
    while ((c = getopt_long(argc, argv, "n:s:c:d:r:h", lo, NULL)) != -1) {
        switch (c) {
        case 'n': case 'M':
            if (tools_parse_u64(optarg, &v) < 0 || v == 0 || v > 10000000)
                return tools_usage_err("invalid count '%s'", optarg);
            *(c == 'n' ? &a->ops : &a->mix_ops) = v;
            break;
        case 's': case 'R':
            if ((rc = tools_bench_size(optarg, c == 's' ? &a->size
                                                        : &a->recovery_size)) >= 0)
                return rc;
            break;
        case 'c':
            if ((rc = tools_bench_cache(optarg, &a->cache_blocks)) >= 0)
                return rc;
            break;
        case 'D': a->nvm_dir = optarg; break;
        case 'P':
            if ((rc = tools_bench_nvm_profile(optarg, &a->nvm_profile)) >= 0)
                return rc;
            break;
        case 'd': case 'K':
            if ((rc = bu_parse_model(a, c, optarg)) >= 0)
                return rc;
            break;
        case 'C': a->csv = true; break;
        case 'r':
            if (tools_parse_u64(optarg, &v) < 0 || v == 0 || v > BU_MAXRUNS)
                return tools_usage_err("invalid --runs '%s' (1..%u)", optarg, BU_MAXRUNS);
            a->runs = (unsigned)v;
            break;
        case 'h': case 'H': bu_usage(); return TOOLS_EXIT_OK;
        default: return tools_bad_option();
        }
    }
    if (optind < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind]);
    return -1;
}

/* bu_device -- a fresh image device of `size` bytes.  0 or -1. */
static int bu_device(const struct bu_args *a, uint64_t size, struct ubj_bdev **dev)
{
    int rc;
    if (a->file == NULL) {
        rc = ubj_bdev_ram_create(size / 4096, dev);
    } else {
        if (truncate(a->file, 0) != 0 && errno != ENOENT)
            return bu_fail(a->file, -errno);
        rc = ubj_bdev_file_open(a->file, UBJ_BDEV_CREATE | UBJ_BDEV_RESIZE, size, dev);
    }
    if (rc < 0)
        return bu_fail("device", rc);
    struct ubj_bdev *leaf = *dev;
    rc = tools_dev_wrap(a->models, a->clock, leaf, dev);
    if (rc < 0) {
        ubj_bdev_destroy(leaf);
        *dev = NULL;
        return bu_fail(a->spec, rc);
    }
    return 0;
}

/* bu_mount -- format and mount a fresh image in `mode` (ubj: with a new
 * region of `nbufs` buffers).  0 or -1. */
static int bu_mount(const struct bu_args *a, const char *mode, uint64_t size,
                    uint32_t nbufs, struct bu_mount *m)
{
    memset(m, 0, sizeof *m);
    if (bu_device(a, size, &m->dev) < 0)
        return -1;
    struct ubj_format_opts fo = { .mode = mode, .flags = UBJ_FORMAT_ZEROED };
    fo.inodes = a->mix_ops + 1024 > size / 16384 ? a->mix_ops + 1024 : 0;
    int rc = ubj_format(m->dev, &fo);
    if (rc < 0)
        return bu_fail("format", rc);
    struct ubj_config cfg = { .mode = mode, .cache_blocks = nbufs,
                              .flags = UBJ_MOUNT_NO_TIMER };
    if (strcmp(mode, UBJ_MODE_UBJ) == 0) {
        snprintf(m->region, sizeof m->region, "%s/ubjfs-bench-%d.nvm",
                 a->nvm_dir, (int)getpid());
        cfg.nvm_path = m->region;
        cfg.nvm_flags = UBJ_NVM_FORMAT;
        cfg.nvm_profile = a->nvm_profile;
    }
    rc = ubj_mount(m->dev, &cfg, &m->fs);
    return rc < 0 ? bu_fail("mount", rc) : 0;
}

/* bu_unmount -- unmount, destroy the device, remove the region. */
static int bu_unmount(struct bu_mount *m)
{
    int rc = m->fs ? ubj_unmount(m->fs) : 0;
    ubj_bdev_destroy(m->dev);
    if (m->region[0])
        unlink(m->region);
    m->fs = NULL;
    m->dev = NULL;
    return rc < 0 ? bu_fail("unmount", rc) : 0;
}

/* bu_cmp_u64 -- qsort order. */
static int bu_cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* bu_print -- one figure. */
static void bu_print(const struct bu_args *a, const char *name, double v,
                     const char *unit)
{
    if (a->csv)
        printf("%s,%.3f\n", name, v);
    else
        printf("  %-34s %14.3f %s\n", name, v, unit);
}

/* bu_latencies -- print median, p90, p99 and mean of lat[0..n) (sorts
 * it) as NAME_PREFIX_<k>_us. */
static void bu_latencies(const struct bu_args *a, const char *prefix, uint64_t *lat,
                         uint64_t n)
{
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        sum += (double)lat[i];
    qsort(lat, n, sizeof *lat, bu_cmp_u64);
    char name[96];
    const char *k[4] = { "median", "p90", "p99", "mean" };
    double v[4] = { (double)lat[n / 2], (double)lat[n * 9 / 10],
                    (double)lat[n * 99 / 100], sum / (double)n };
    for (int j = 0; j < 4; j++) {
        snprintf(name, sizeof name, "%s_%s_us", prefix, k[j]);
        bu_print(a, name, v[j] / 1000.0, "us");
    }
}

/* bu_append_fsync -- per-op latency of n 4 KiB appends + fsync (and, with
 * a model, the modeled device time each waited for and the energy). */
static int bu_append_fsync(const struct bu_args *a, const char *mode)
{
    struct bu_mount m;
    uint64_t *lat = malloc(2 * a->ops * sizeof *lat), *dlat = lat ? lat + a->ops : NULL;
    unsigned char *blk = malloc(4096);
    int ret = (lat && blk) ? bu_mount(a, mode, a->size, a->cache_blocks, &m) : -1;
    struct ubj_stat st;
    struct tools_dev_mark m0, m1;
    if (ret == 0 && ubj_create(m.fs, UBJ_ROOT_INO, "log", 0644, NULL, &st) < 0)
        ret = bu_fail("create", -EIO);
    if (ret == 0)
        tools_dev_mark(m.dev, &m0);
    for (uint64_t i = 0; ret == 0 && i < a->ops; i++) {
        memset(blk, (int)(i & 0xff), 4096);
        uint64_t t0 = bu_now_ns(), d0 = tools_dev_now(m.dev);
        ssize_t n = ubj_pwrite(m.fs, st.ino, blk, 4096, (off_t)(i % (a->size / 8192)) * 4096);
        int rc = n == 4096 ? ubj_fsync(m.fs, st.ino, 0) : (int)(n < 0 ? n : -EIO);
        lat[i] = bu_now_ns() - t0;
        dlat[i] = tools_dev_now(m.dev) - d0;
        if (rc < 0)
            ret = bu_fail("append+fsync", rc);
    }
    struct ubj_fs_stats fst;
    if (ret == 0) {
        tools_dev_mark(m.dev, &m1);
        ubj_fs_stats_get(m.fs, &fst);
    }
    if (bu_unmount(&m) < 0)
        ret = -1;
    if (ret == 0) {
        char name[64];
        snprintf(name, sizeof name, "append_fsync_%s", mode);
        bu_latencies(a, name, lat, a->ops);
        if (m1.model) {
            snprintf(name, sizeof name, "append_fsync_%s_model", mode);
            bu_latencies(a, name, dlat, a->ops);
            snprintf(name, sizeof name, "append_fsync_%s_model_uj_per_op", mode);
            bu_print(a, name, (m1.energy_j - m0.energy_j) * 1e6 / (double)a->ops, "uJ");
        }
        snprintf(name, sizeof name, "append_fsync_%s_dev_flushes_per_op", mode);
        bu_print(a, name, (double)fst.dev_flushes / (double)a->ops, "");
        if (strcmp(mode, UBJ_MODE_UBJ) == 0) {
            bu_print(a, "append_fsync_ubj_nvm_bytes_per_op",
                     (double)fst.nvm_bytes / (double)a->ops, "bytes");
            bu_print(a, "append_fsync_ubj_persists_per_op",
                     (double)fst.nvm_persists / (double)a->ops, "");
            if (a->nvm_profile != NULL) {
                bu_print(a, "append_fsync_ubj_nvm_model_us_per_op",
                         (double)fst.nvm_model_ns / 1e3 / (double)a->ops, "us");
                bu_print(a, "append_fsync_ubj_nvm_model_uj_per_op",
                         fst.nvm_model_energy_j * 1e6 / (double)a->ops, "uJ");
            }
        }
    }
    free(lat);
    free(blk);
    return ret;
}

/* bu_copy_file -- copy src to dst (the crash image of a region). */
static int bu_copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char *buf = malloc(1 << 20);
    int rc = (in < 0 || out < 0 || !buf) ? -1 : 0;
    ssize_t n = 0;
    while (rc == 0 && (n = read(in, buf, 1 << 20)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -1;
    if (n < 0)
        rc = -1;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    free(buf);
    return rc < 0 ? bu_fail(dst, -EIO) : 0;
}

/* bu_fill -- commit up to half the region's buffers of file data. */
static int bu_fill(struct ubj_fs *fs, uint32_t nbufs)
{
    struct ubj_stat st;
    int rc = ubj_create(fs, UBJ_ROOT_INO, "fill", 0644, NULL, &st);
    unsigned char *buf = calloc(1, 64 * 4096);
    if (rc < 0 || buf == NULL)
        return bu_fail("fill", rc < 0 ? rc : -ENOMEM);
    uint64_t blocks = nbufs / 2 - nbufs / 16;
    for (uint64_t b = 0; b < blocks && rc == 0; b += 64) {
        memset(buf, (int)b, 64 * 4096);
        ssize_t n = ubj_pwrite(fs, st.ino, buf, 64 * 4096, (off_t)(b * 4096));
        rc = n == 64 * 4096 ? ubj_fsync(fs, st.ino, 0) : -EIO;
    }
    free(buf);
    return rc < 0 ? bu_fail("fill", rc) : 0;
}

/* bu_recovery -- mount a crash copy of a filled region; time recovery. */
static int bu_recovery(const struct bu_args *a)
{
    struct ubj_nvm_layout l;
    if (ubj_nvm_layout_for(0, a->recovery_size, &l) < 0)
        return bu_fail("recovery size", -EINVAL);
    struct bu_mount m;
    uint64_t isize = (uint64_t)l.nbufs * 4096 * 2 + (64u << 20);
    if (bu_mount(a, UBJ_MODE_UBJ, isize, l.nbufs, &m) < 0 || bu_fill(m.fs, l.nbufs) < 0)
        return -1;
    char crash[600];
    snprintf(crash, sizeof crash, "%s.crash", m.region);
    struct ubj_bdev *copy = NULL;
    int ret = bu_copy_file(m.region, crash);
    if (ret == 0 && ubj_bdev_ram_create(m.dev->nblocks, &copy) < 0)
        ret = bu_fail("ram device", -ENOMEM);
    unsigned char *blk = malloc(256 * 4096);
    for (uint64_t b = 0; ret == 0 && b < m.dev->nblocks; b += 256) {
        uint32_t n = m.dev->nblocks - b < 256 ? (uint32_t)(m.dev->nblocks - b) : 256;
        if (!blk || ubj_bdev_read(m.dev, b, n, blk) < 0 || ubj_bdev_write(copy, b, n, blk) < 0)
            ret = bu_fail("copy image", -EIO);
    }
    free(blk);
    struct ubj_bdev *top = copy;        /* the copy under the same models */
    if (ret == 0 && tools_dev_wrap(a->models, a->clock, copy, &top) < 0)
        ret = bu_fail(a->spec, -EINVAL);
    if (top != copy)
        copy = top;
    struct ubj_fs *fs2 = NULL;
    struct ubj_config cfg = { .mode = UBJ_MODE_UBJ, .flags = UBJ_MOUNT_NO_TIMER,
                              .nvm_path = crash };
    uint64_t t0 = bu_now_ns(), d0 = tools_dev_now(copy);
    if (ret == 0 && ubj_mount(copy, &cfg, &fs2) < 0)
        ret = bu_fail("mount after crash", -EIO);
    uint64_t mount_ns = bu_now_ns() - t0, dmount_ns = tools_dev_now(copy) - d0;
    struct ubj_fs_stats fst;
    if (ret == 0) {
        ubj_fs_stats_get(fs2, &fst);
        ubj_unmount(fs2);
        double gib = (double)l.size / (double)(1u << 30);
        bu_print(a, "recovery_region_mib", (double)l.size / (1u << 20), "MiB");
        bu_print(a, "recovery_blocks_kept", (double)fst.recovered_blocks, "blocks");
        bu_print(a, "recovery_scan_ms", (double)fst.recovery_ns / 1e6, "ms");
        bu_print(a, "recovery_scan_ms_per_gib", (double)fst.recovery_ns / 1e6 / gib, "ms/GiB");
        bu_print(a, "recovery_mount_ms", (double)mount_ns / 1e6, "ms");
        bu_print(a, "recovery_mount_ms_per_gib", (double)mount_ns / 1e6 / gib, "ms/GiB");
        if (a->models != NULL && a->models[0] != '\0')
            bu_print(a, "recovery_mount_model_ms", (double)dmount_ns / 1e6, "ms");
    }
    ubj_bdev_destroy(copy);
    unlink(crash);
    if (bu_unmount(&m) < 0)
        ret = -1;
    return ret;
}

/* bu_warm -- touch every cache buffer once (write and remove a file as
 * large as the cache): the first touch of a fresh mapping's pages costs a
 * page fault each (a tmpfs region's more than a DRAM cache's), which a
 * short run would otherwise measure instead of the steady state. */
static int bu_warm(const struct bu_args *a, struct ubj_fs *fs, unsigned char *buf)
{
    struct ubj_stat st;
    int rc = ubj_create(fs, UBJ_ROOT_INO, "warm", 0644, NULL, &st);
    for (uint64_t b = 0; rc == 0 && b < a->cache_blocks; b += 2) {
        ssize_t n = ubj_pwrite(fs, st.ino, buf, 8192, (off_t)(b * 4096));
        rc = n == 8192 ? 0 : (int)(n < 0 ? n : -EIO);
    }
    if (rc == 0)
        rc = ubj_unlink(fs, UBJ_ROOT_INO, "warm");
    if (rc == 0)
        rc = ubj_sync(fs);
    return rc < 0 ? bu_fail("warm-up", rc) : 0;
}

/* bu_mix -- ops/s of the create/write/(fsync)/unlink mix in `mode`:
 * rate[0] up to the last operation, rate[1] up to a final sync, rate[2]
 * the same per second of CPU time, rate[3] per second of modeled device
 * time up to the final sync (0 without a model). */
static int bu_mix(const struct bu_args *a, const char *mode, bool sync, double rate[4])
{
    struct bu_mount m;
    unsigned char *buf = calloc(1, 8192);
    int ret = buf ? bu_mount(a, mode, a->size, a->cache_blocks, &m) : -1;
    if (ret == 0)
        ret = bu_warm(a, m.fs, buf);
    char name[32];
    uint64_t t0 = bu_now_ns(), c0 = bu_cpu_ns(), d0 = ret == 0 ? tools_dev_now(m.dev) : 0;
    for (uint64_t i = 0; ret == 0 && i < a->mix_ops; i++) {
        struct ubj_stat st;
        snprintf(name, sizeof name, "m%llu", (unsigned long long)i);
        int rc = ubj_create(m.fs, UBJ_ROOT_INO, name, 0644, NULL, &st);
        if (rc == 0) {
            memset(buf, (int)i, 8192);
            ssize_t n = ubj_pwrite(m.fs, st.ino, buf, 8192, 0);
            rc = n == 8192 ? 0 : (int)(n < 0 ? n : -EIO);
        }
        if (rc == 0 && sync)
            rc = ubj_fsync(m.fs, st.ino, 0);
        if (rc == 0 && i % 4 == 3) {
            snprintf(name, sizeof name, "m%llu", (unsigned long long)(i - 2));
            rc = ubj_unlink(m.fs, UBJ_ROOT_INO, name);
        }
        if (rc < 0)
            ret = bu_fail("mix", rc);
    }
    rate[0] = (double)a->mix_ops / ((double)(bu_now_ns() - t0) / 1e9);
    if (ret == 0 && ubj_sync(m.fs) < 0)   /* the task ends when all is durable */
        ret = bu_fail("sync", -EIO);
    rate[1] = (double)a->mix_ops / ((double)(bu_now_ns() - t0) / 1e9);
    rate[2] = (double)a->mix_ops / ((double)(bu_cpu_ns() - c0) / 1e9);
    uint64_t dns = ret == 0 ? tools_dev_now(m.dev) - d0 : 0;
    rate[3] = dns > 0 ? (double)a->mix_ops / ((double)dns / 1e9) : 0;
    if (bu_unmount(&m) < 0)
        ret = -1;
    free(buf);
    return ret;
}

/* bu_cmp_double -- qsort order. */
static int bu_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* bu_median -- the median of v[0..n) (sorts v). */
static double bu_median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, bu_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* bu_mixes -- none and ubj, with and without fsync: the median of
 * a->runs alternating runs of each; without fsync also timed up to the
 * final sync ("durable"). */
static int bu_mixes(const struct bu_args *a)
{
    static const char *const end[4] = { "", "_durable", "_durable_cpu", "_durable_model" };
    bool model = a->models != NULL && a->models[0] != '\0';
    for (int sync = 1; sync >= 0; sync--) {
        double vn[4][BU_MAXRUNS], vu[4][BU_MAXRUNS], r3[4];
        for (unsigned r = 0; r < a->runs; r++) {
            if (bu_mix(a, UBJ_MODE_NONE, sync, r3) < 0)
                return -1;
            for (int e = 0; e < 4; e++)
                vn[e][r] = r3[e];
            if (bu_mix(a, UBJ_MODE_UBJ, sync, r3) < 0)
                return -1;
            for (int e = 0; e < 4; e++)
                vu[e][r] = r3[e];
        }
        for (int e = 0; e < 4; e++) {
            if ((sync && e == 1) || (e == 3 && !model))
                continue;   /* with fsync everything is durable already */
            double rn = bu_median(vn[e], a->runs), ru = bu_median(vu[e], a->runs);
            const char *k = sync ? "fsync" : "nosync";
            char name[64];
            snprintf(name, sizeof name, "mix_%s%s_none_ops_per_s", k, end[e]);
            bu_print(a, name, rn, "ops/s");
            snprintf(name, sizeof name, "mix_%s%s_ubj_ops_per_s", k, end[e]);
            bu_print(a, name, ru, "ops/s");
            snprintf(name, sizeof name, "mix_%s%s_ubj_vs_none_pct", k, end[e]);
            bu_print(a, name, 100.0 * (ru - rn) / rn, "%");
        }
    }
    return 0;
}

/* tools_bench_ubj_main -- `ubjfs bench ubj`. */
int tools_bench_ubj_main(int argc, char **argv)
{
    struct bu_args a = { .runs = 5, .ops = 20000, .mix_ops = 20000, .size = 512u << 20,
                         .recovery_size = 256u << 20, .cache_blocks = 16384,
                         .nvm_dir = "/dev/shm" };
    int ret = bu_parse(argc, argv, &a);
    if (ret >= 0) {
        free(a.models);
        return ret;
    }
    const char *force = getenv("PMEM_IS_PMEM_FORCE");
    if (a.csv)
        printf("name,value\n");
    else
        printf("ubjfs bench ubj: %s image%s, region in %s (%s), cache %u buffers\n",
               a.models && a.models[0] ? a.spec : a.file ? "file" : "ram",
               a.models && a.models[0] ? (a.clock == UBJ_CLOCK_REAL ? " (real clock)"
                                                                   : " (virtual clock)") : "",
               a.nvm_dir,
               force && strcmp(force, "1") == 0 ? "as pmem: cache-line flushes"
                                                : "msync unless on DAX",
               a.cache_blocks);
    ret = TOOLS_EXIT_OK;
    if (bu_append_fsync(&a, UBJ_MODE_UBJ) < 0 || bu_append_fsync(&a, UBJ_MODE_NONE) < 0 ||
        bu_recovery(&a) < 0 || bu_mixes(&a) < 0)
        ret = TOOLS_EXIT_ERR;
    fflush(stdout);
    free(a.models);
    return ret;
}
