/*
 * bench_modes.c -- `ubjfs bench modes`: the figures of issue 4, item 8 (a
 * benchmark, not a timed test; docs/PERFORMANCE.md records them).
 *
 * For each consistency mode of the registry (ubjfs/mode.h) -- those needing
 * nothing, those with a log area, the ones flagged UBJ_MODE_F_BENCH_ASYNC
 * again with async commit ("-async"), and those with an NVM region (today:
 * none, ordered, journal, writeback, ordered-async, journal-async, ubj) --
 * on a freshly formatted image
 * (a file by default, so that a device flush is a real fdatasync; written
 * through once first so that the host has it allocated): N appends of
 * 4 KiB to one file, each followed by fsync.  Reported per mode:
 *   latency of append + fsync: median, 90th and 99th percentile, mean
 *   per fsync: device flushes, and storage bytes written by category --
 *   data and metadata written home (bytes_data, bytes_metadata, which
 *   include checkpoint writes), journal (the log), checkpoint (the part
 *   of the home writes a checkpoint made) -- the device's own count of
 *   bytes written, and for ubj the bytes persisted to the NVM region.
 * The mounts run without the commit timer, so every commit is an fsync's
 * (or a checkpoint's); checkpoints happen when the log or cache fills, so
 * their cost is amortised over the run as in a steady state.
 *
 * Then recovery: on a RAM image in mode journal (default journal size),
 * 64 KiB writes + fsync until about 3/4 of the log holds committed
 * transactions not yet checkpointed; a copy of the device taken as a
 * crash leaves it is mounted: the time of SCAN + REVOKE + REPLAY and the
 * blocks replayed (ubj_fs_stats recovery_ns, recovered_blocks).
 *
 * --device SPEC may put timed model layers over the file or RAM device (a
 * spec without a leaf goes over RAM, as in ubj_bdev_open_spec), on a
 * virtual clock unless --clock real; then each mode also reports the
 * modeled device time an append + fsync waited for (median, p99, mean)
 * and the device energy per fsync.  --nvm-profile charges mode ubj's
 * region to an NVM cost model (time and energy per fsync reported).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fs/format.h"
#include "ubjfs/model.h"
#include "tools.h"

#define BM_MAXMODES 16u

/* One configuration: a mode and its format flags. */
struct bm_mode {
    const char *label;       /* column header */
    const char *mode;        /* a mode name of the registry */
    unsigned fmt_flags;      /* UBJ_FORMAT_JOURNAL_ASYNC */
};

static struct bm_mode bm_all[BM_MAXMODES];   /* bm_modes_init */
static size_t bm_nall;
static char bm_labels[BM_MAXMODES][40];     /* the "-async" labels */

/* bm_modes_init -- the configurations, from the registry: every mode in
 * UBJ_MODE_ORDER_NEEDS, the async variants right after the last mode with
 * a log area. */
static void bm_modes_init(void)
{
    const struct ubj_mode_info *v[BM_MAXMODES];
    size_t n = ubj_mode_list(0, UBJ_MODE_ORDER_NEEDS, v, BM_MAXMODES);
    bm_nall = 0;
    for (size_t i = 0; i < n && i < BM_MAXMODES && bm_nall < BM_MAXMODES; i++) {
        bm_all[bm_nall++] = (struct bm_mode){ v[i]->name, v[i]->name, 0 };
        if (v[i]->needs != UBJ_MODE_NEEDS_LOG ||
            (i + 1 < n && v[i + 1]->needs == UBJ_MODE_NEEDS_LOG))
            continue;
        for (size_t j = 0; j < n && bm_nall < BM_MAXMODES; j++) {
            if (!(v[j]->flags & UBJ_MODE_F_BENCH_ASYNC))
                continue;
            snprintf(bm_labels[bm_nall], sizeof bm_labels[0], "%s-async", v[j]->name);
            bm_all[bm_nall] = (struct bm_mode){ bm_labels[bm_nall], v[j]->name,
                                                UBJ_FORMAT_JOURNAL_ASYNC };
            bm_nall++;
        }
    }
}

/* bm_labels_list -- every label, then "recovery", joined by ", ". */
static const char *bm_labels_list(char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i <= bm_nall && at < len; i++) {
        int m = snprintf(buf + at, len - at, "%s%s", i ? ", " : "",
                         i < bm_nall ? bm_all[i].label : "recovery");
        at += m > 0 ? (size_t)m : 0;
    }
    return buf;
}
#define BM_NALL bm_nall

struct bm_args {
    uint64_t ops, size;
    uint32_t cache_blocks;
    const char *file;        /* NULL: RAM device */
    const char *nvm_dir;
    char deffile[512];
    const char *only;        /* comma-separated labels, or NULL */
    const char *spec;        /* --device as given, or NULL */
    char *models;            /* its model layers (NULL or "": none) */
    enum ubj_clock_kind clock;
    const char *nvm_profile; /* mode ubj's NVM cost model, or NULL */
    bool csv;
};

/* What one mode measured. */
struct bm_result {
    double med_us, p90_us, p99_us, mean_us;
    double flushes, data, meta, journal, ckpt, dev, nvm;   /* per fsync */
    uint64_t commits, checkpoints;
    bool model;                            /* a device model was present */
    double dmed_us, dp99_us, dmean_us;     /* modeled device time per op */
    double dev_uj, nvm_ns, nvm_uj;         /* device, NVM energy/time per op */
};

/* bm_now_ns -- monotonic nanoseconds. */
static uint64_t bm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* bm_usage -- the --help text. */
static void bm_usage(void)
{
    printf("Usage: %s modes [OPTIONS]\n"
           "4 KiB append + fsync in every consistency mode (issue 4): latency and\n"
           "storage bytes written per fsync by category, side by side.\n\n"
           "Options:\n"
           "  -n, --ops N          append+fsync operations per mode (default 2000)\n"
           "  -s, --size SIZE      image size (default 256M)\n"
           "  -c, --cache BLOCKS   cache buffers (default 16384)\n"
           "  -d, --device SPEC    file:PATH (default: a file in $TMPDIR or /var/tmp)\n"
           "                       or ram, under timed model layers if given\n"
           "                       (hdd:hp_c2249a = the model over ram,\n"
           "                       nand:slc@file:/tmp/x; docs/DEVICES.md)\n"
           "      --clock KIND     the models' clock: virtual (default) or real\n"
           "      --nvm-profile P  mode ubj: NVM cost model (dram, sttmram, pcm)\n"
           "      --nvm-dir DIR    where mode ubj's region goes (default /dev/shm)\n"
           , tools_prog);
    char list[512], text[600];
    snprintf(text, sizeof text, "comma-separated subset of: %s",
             bm_labels_list(list, sizeof list));
    printf("  -m, --modes LIST     ");
    tools_wrap(stdout, text, 23, 23, 76);
    printf("      --csv            mode,name,value lines\n"
           "      --help           print this help\n\n"
           "Exit status: 0, 1 error, 2 usage.\n");
}

/* bm_parse_model -- --device, --clock, --nvm-profile.  -1 to go on,
 * else an exit code. */
static int bm_parse_model(struct bm_args *a, int c, const char *arg)
{
    switch (c) {
    case 'd':
        return tools_bench_device(arg, &a->spec, &a->models, &a->file);
    case 'K':
        return tools_bench_clock(arg, &a->clock);
    case 'P':
        return tools_bench_nvm_profile(arg, &a->nvm_profile);
    default:
        return tools_bad_option();
    }
}

/* bm_check_modes -- every name of the --modes list is a mode label or
 * "recovery" (no empty name).  -1 to go on, else an exit code. */
static int bm_check_modes(const char *list)
{
    for (const char *p = list; ; ) {
        size_t len = strcspn(p, ",");
        bool ok = len == 8 && strncmp(p, "recovery", 8) == 0;
        for (size_t i = 0; !ok && i < BM_NALL; i++)
            ok = strlen(bm_all[i].label) == len && strncmp(p, bm_all[i].label, len) == 0;
        if (!ok) {
            char known[512];
            return tools_usage_err("unknown mode '%.*s' in --modes (%s)", (int)len, p,
                                   bm_labels_list(known, sizeof known));
        }
        if (p[len] == '\0')
            return -1;
        p += len + 1;
    }
}

/* bm_parse -- options into *a; -1 to go on, else an exit code. */
static int bm_parse(int argc, char **argv, struct bm_args *a)
{
    static const struct option lo[] = {
        TOOLS_BENCH_OPTIONS,
        { "modes", required_argument, NULL, 'm' },
        { NULL, 0, NULL, 0 },
    };
    uint64_t v;
    int c, rc;
    optind = 0;
    while ((c = getopt_long(argc, argv, "n:s:c:d:m:h", lo, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (tools_parse_u64(optarg, &v) < 0 || v < 10 || v > 10000000)
                return tools_usage_err("invalid --ops '%s' (10..10000000)", optarg);
            a->ops = v;
            break;
        case 's':
            if ((rc = tools_bench_size(optarg, &a->size)) >= 0)
                return rc;
            break;
        case 'c':
            if ((rc = tools_bench_cache(optarg, &a->cache_blocks)) >= 0)
                return rc;
            break;
        case 'D': a->nvm_dir = optarg; break;
        case 'm':
            if ((rc = bm_check_modes(optarg)) >= 0)
                return rc;
            a->only = optarg;
            break;
        case 'C': a->csv = true; break;
        case 'h': case 'H': bm_usage(); return TOOLS_EXIT_OK;
        default:
            if ((rc = bm_parse_model(a, c, optarg)) >= 0)
                return rc;
        }
    }
    if (optind < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind]);
    return -1;
}

/* bm_selected -- whether mode `label` is in the --modes list. */
static bool bm_selected(const struct bm_args *a, const char *label)
{
    if (a->only == NULL)
        return true;
    size_t n = strlen(label);
    for (const char *p = a->only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, label, n) == 0)
            return true;
        p += len + (e != NULL);
    }
    return false;
}

/* bm_prefill -- make the image file and write zeros over all of it, so
 * that the host file system has every block allocated: otherwise each
 * first write into a hole makes the host allocate, and an fdatasync pays
 * for it, which would favour the modes that write fewer distinct blocks.
 * 0 or -1. */
static int bm_prefill(const struct bm_args *a)
{
    struct ubj_bdev *dev;
    if (truncate(a->file, 0) != 0 && errno != ENOENT) {
        tools_err("%s: %s", a->file, strerror(errno));
        return -1;
    }
    int rc = ubj_bdev_file_open(a->file, UBJ_BDEV_CREATE | UBJ_BDEV_RESIZE,
                                a->size, &dev);
    if (rc < 0) {
        tools_err("device: %s", tools_libmsg(rc));
        return -1;
    }
    unsigned char *z = calloc(256, 4096);
    uint64_t nb = dev->nblocks;
    for (uint64_t b = 0; rc == 0 && b < nb; b += 256)
        rc = z ? ubj_bdev_write(dev, b, nb - b < 256 ? (uint32_t)(nb - b) : 256, z)
               : -ENOMEM;
    if (rc == 0)
        rc = ubj_bdev_flush(dev);
    free(z);
    ubj_bdev_destroy(dev);
    if (rc < 0)
        tools_err("%s: prefill: %s", a->file, tools_libmsg(rc));
    return rc < 0 ? -1 : 0;
}

/* bm_device -- the image device (a RAM one is new and zeroed; the file
 * was prefilled and is formatted anew by each mode).  0 or -1. */
static int bm_device(const struct bm_args *a, struct ubj_bdev **dev)
{
    int rc = a->file == NULL ? ubj_bdev_ram_create(a->size / 4096, dev)
                             : ubj_bdev_file_open(a->file, 0, 0, dev);
    if (rc < 0) {
        tools_err("device: %s", tools_libmsg(rc));
        return -1;
    }
    struct ubj_bdev *leaf = *dev;
    rc = tools_dev_wrap(a->models, a->clock, leaf, dev);
    if (rc < 0) {
        tools_err("device %s: %s", a->spec, tools_libmsg(rc));
        ubj_bdev_destroy(leaf);
        return -1;
    }
    return 0;
}

/* bm_cmp -- qsort order of latencies. */
static int bm_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* bm_loop -- the measured appends + fsyncs; latencies into lat[], the
 * modeled device time of each into lat[ops + i]. */
static int bm_loop(const struct bm_args *a, struct ubj_fs *fs, struct ubj_bdev *dev,
                   ubj_ino_t ino, uint64_t *lat)
{
    unsigned char *blk = malloc(4096);
    if (blk == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < a->ops; i++) {
        memset(blk, (int)(i & 0xff), 4096);
        uint64_t off = i % (a->size / 8192) * 4096;
        uint64_t t0 = bm_now_ns(), d0 = tools_dev_now(dev);
        ssize_t n = ubj_pwrite(fs, ino, blk, 4096, (off_t)off);
        rc = n == 4096 ? ubj_fsync(fs, ino, 0) : (int)(n < 0 ? n : -EIO);
        lat[i] = bm_now_ns() - t0;
        lat[a->ops + i] = tools_dev_now(dev) - d0;
    }
    free(blk);
    return rc;
}

/* bm_model_figures -- modeled time per op (lat[ops..2 ops)), energy. */
static void bm_model_figures(const struct bm_args *a, uint64_t *lat,
                             const struct tools_dev_mark *m0,
                             const struct tools_dev_mark *m1,
                             const struct ubj_fs_stats *s0,
                             const struct ubj_fs_stats *s1, struct bm_result *r)
{
    double sum = 0, n = (double)a->ops;
    uint64_t *d = lat + a->ops;
    r->model = m1->model;
    r->nvm_ns = (double)(s1->nvm_model_ns - s0->nvm_model_ns) / n;
    r->nvm_uj = (s1->nvm_model_energy_j - s0->nvm_model_energy_j) * 1e6 / n;
    if (!m1->model)
        return;
    for (uint64_t i = 0; i < a->ops; i++)
        sum += (double)d[i];
    qsort(d, a->ops, sizeof *d, bm_cmp);
    r->dmed_us = (double)d[a->ops / 2] / 1e3;
    r->dp99_us = (double)d[a->ops * 99 / 100] / 1e3;
    r->dmean_us = sum / n / 1e3;
    r->dev_uj = (m1->energy_j - m0->energy_j) * 1e6 / n;
}

/* bm_figures -- latency percentiles and per-fsync deltas. */
static void bm_figures(const struct bm_args *a, uint64_t *lat,
                       const struct ubj_fs_stats *s0, const struct ubj_fs_stats *s1,
                       const struct ubj_bdev_stats *d0, const struct ubj_bdev_stats *d1,
                       struct bm_result *r)
{
    double sum = 0, n = (double)a->ops;
    for (uint64_t i = 0; i < a->ops; i++)
        sum += (double)lat[i];
    qsort(lat, a->ops, sizeof *lat, bm_cmp);
    r->med_us = (double)lat[a->ops / 2] / 1e3;
    r->p90_us = (double)lat[a->ops * 9 / 10] / 1e3;
    r->p99_us = (double)lat[a->ops * 99 / 100] / 1e3;
    r->mean_us = sum / n / 1e3;
    r->flushes = (double)(d1->flushes - d0->flushes) / n;
    r->data = (double)(s1->bytes_data - s0->bytes_data) / n;
    r->meta = (double)(s1->bytes_metadata - s0->bytes_metadata) / n;
    r->journal = (double)(s1->bytes_journal - s0->bytes_journal) / n;
    r->ckpt = (double)(s1->bytes_checkpoint - s0->bytes_checkpoint) / n;
    r->dev = (double)(d1->bytes_written - d0->bytes_written) / n;
    r->nvm = (double)(s1->nvm_bytes - s0->nvm_bytes) / n;
    r->commits = s1->commits - s0->commits;
    r->checkpoints = s1->checkpoints - s0->checkpoints;
}

/* bm_one -- format, mount, measure, unmount one configuration. */
static int bm_one(const struct bm_args *a, const struct bm_mode *m, struct bm_result *r)
{
    struct ubj_bdev *dev;
    struct ubj_fs *fs = NULL;
    char region[600] = "";
    if (bm_device(a, &dev) < 0)
        return -1;
    struct ubj_format_opts fo = { .mode = m->mode, .flags = m->fmt_flags |
                                  (a->file ? 0 : UBJ_FORMAT_ZEROED) };
    struct ubj_config cfg = { .mode = m->mode, .cache_blocks = a->cache_blocks,
                              .flags = UBJ_MOUNT_NO_TIMER };
    if (tools_mode_needs(m->mode, UBJ_MODE_NEEDS_NVM)) {
        snprintf(region, sizeof region, "%s/ubjfs-bench-modes-%d.nvm", a->nvm_dir,
                 (int)getpid());
        cfg.nvm_path = region;
        cfg.nvm_flags = UBJ_NVM_FORMAT;
        cfg.nvm_profile = a->nvm_profile;
    }
    uint64_t *lat = malloc(2 * a->ops * sizeof *lat);
    struct ubj_stat st;
    int rc = lat ? ubj_format(dev, &fo) : -ENOMEM;
    if (rc == 0)
        rc = ubj_mount(dev, &cfg, &fs);
    if (rc == 0)
        rc = ubj_create(fs, UBJ_ROOT_INO, "log", 0644, NULL, &st);
    if (rc == 0)
        rc = ubj_fsync(fs, st.ino, 0);
    struct ubj_fs_stats s0, s1;
    struct ubj_bdev_stats d0, d1;
    struct tools_dev_mark m0, m1;
    if (rc == 0) {
        ubj_fs_stats_get(fs, &s0);
        ubj_bdev_stats_get(dev, &d0);
        tools_dev_mark(dev, &m0);
        rc = bm_loop(a, fs, dev, st.ino, lat);
        tools_dev_mark(dev, &m1);
        ubj_fs_stats_get(fs, &s1);
        ubj_bdev_stats_get(dev, &d1);
    }
    if (rc < 0)
        tools_err("mode %s: %s", m->label, tools_libmsg(rc));
    int urc = fs ? ubj_unmount(fs) : 0;
    if (rc == 0 && urc < 0)
        tools_err("mode %s: unmount: %s", m->label, tools_libmsg(urc));
    ubj_bdev_destroy(dev);
    if (region[0])
        unlink(region);
    if (rc == 0 && urc == 0) {
        bm_model_figures(a, lat, &m0, &m1, &s0, &s1, r);
        bm_figures(a, lat, &s0, &s1, &d0, &d1, r);
    }
    free(lat);
    return rc == 0 && urc == 0 ? 0 : -1;
}

/* bm_fill_log -- 64 KiB writes + fsync until 3/4 of the log is live. */
static int bm_fill_log(struct ubj_fs *fs, uint64_t log_bytes)
{
    struct ubj_stat st;
    unsigned char *buf = malloc(65536);
    int rc = buf ? ubj_create(fs, UBJ_ROOT_INO, "fill", 0644, NULL, &st) : -ENOMEM;
    struct ubj_fs_stats fst = { 0 };
    for (uint64_t i = 0; rc == 0; i++) {
        ubj_fs_stats_get(fs, &fst);
        if (fst.checkpoints > 0 || fst.bytes_journal + 2 * 65536 > log_bytes * 3 / 4)
            break;
        memset(buf, (int)i, 65536);
        ssize_t n = ubj_pwrite(fs, st.ino, buf, 65536, (off_t)(i * 65536));
        rc = n == 65536 ? ubj_fsync(fs, st.ino, 0) : (int)(n < 0 ? n : -EIO);
    }
    free(buf);
    return rc;
}

/* bm_recovery -- time the recovery of a log 3/4 full.  0 or -1. */
static int bm_recovery(const struct bm_args *a)
{
    struct ubj_bdev *dev, *copy = NULL;
    struct ubj_fs *fs = NULL, *fs2 = NULL;
    uint64_t nb = a->size / 4096;
    struct ubj_format_opts fo = { .mode = UBJ_MODE_JOURNAL, .flags = UBJ_FORMAT_ZEROED };
    struct ubj_config cfg = { .cache_blocks = a->cache_blocks, .flags = UBJ_MOUNT_NO_TIMER };
    int rc = ubj_bdev_ram_create(nb, &dev);
    if (rc == 0 && (rc = ubj_format(dev, &fo)) == 0)
        rc = ubj_mount(dev, &cfg, &fs);
    struct ubj_super *sb = malloc(4096);
    if (rc == 0 && (sb == NULL || ubj_bdev_read(dev, 0, 1, sb) < 0))
        rc = -EIO;
    if (rc == 0)
        rc = bm_fill_log(fs, sb->journal_blocks * 4096);
    if (rc == 0)
        rc = ubj_bdev_ram_create(nb, &copy);
    unsigned char *blk = malloc(256 * 4096);
    for (uint64_t b = 0; rc == 0 && b < nb; b += 256) {
        uint32_t n = nb - b < 256 ? (uint32_t)(nb - b) : 256;
        if (!blk || ubj_bdev_read(dev, b, n, blk) < 0 || ubj_bdev_write(copy, b, n, blk) < 0)
            rc = -EIO;
    }
    free(blk);
    uint64_t t0 = bm_now_ns(), mount_ns = 0;
    if (rc == 0 && (rc = ubj_mount(copy, &cfg, &fs2)) == 0)
        mount_ns = bm_now_ns() - t0;
    struct ubj_fs_stats st;
    if (rc == 0) {
        ubj_fs_stats_get(fs2, &st);
        double ms = (double)st.recovery_ns / 1e6;
        if (a->csv) {
            printf("recovery,journal_blocks,%llu\nrecovery,blocks_replayed,%llu\n"
                   "recovery,recovery_ms,%.3f\nrecovery,mount_ms,%.3f\n",
                   (unsigned long long)sb->journal_blocks,
                   (unsigned long long)st.recovered_blocks, ms, (double)mount_ns / 1e6);
        } else {
            printf("recovery (mode journal, RAM, log of %llu blocks 3/4 full): %llu "
                   "blocks replayed in %.2f ms (%.0f MiB/s), whole mount %.2f ms\n",
                   (unsigned long long)sb->journal_blocks,
                   (unsigned long long)st.recovered_blocks, ms,
                   (double)st.recovered_blocks * 4096 / (1 << 20) / (ms / 1e3),
                   (double)mount_ns / 1e6);
        }
    }
    if (rc < 0)
        tools_err("recovery: %s", tools_libmsg(rc));
    if (fs2)
        ubj_unmount(fs2);
    if (fs)
        ubj_unmount(fs);
    free(sb);
    ubj_bdev_destroy(copy);
    ubj_bdev_destroy(dev);
    return rc < 0 ? -1 : 0;
}

/* bm_csv -- one mode's figures as lines. */
static void bm_csv(const char *label, const struct bm_result *r)
{
    if (r->model)
        printf("%s,model_median_us,%.3f\n%s,model_p99_us,%.3f\n%s,model_mean_us,%.3f\n"
               "%s,device_uj_per_fsync,%.3f\n", label, r->dmed_us, label, r->dp99_us,
               label, r->dmean_us, label, r->dev_uj);
    if (r->nvm_ns > 0 || r->nvm_uj > 0)
        printf("%s,nvm_model_ns_per_fsync,%.1f\n%s,nvm_model_uj_per_fsync,%.4f\n",
               label, r->nvm_ns, label, r->nvm_uj);
    const char *k[] = { "median_us", "p90_us", "p99_us", "mean_us", "flushes_per_fsync",
                        "data_bytes_per_fsync", "metadata_bytes_per_fsync",
                        "journal_bytes_per_fsync", "checkpoint_bytes_per_fsync",
                        "device_bytes_per_fsync", "nvm_bytes_per_fsync" };
    double v[] = { r->med_us, r->p90_us, r->p99_us, r->mean_us, r->flushes, r->data,
                   r->meta, r->journal, r->ckpt, r->dev, r->nvm };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        printf("%s,%s,%.3f\n", label, k[i], v[i]);
}

/* bm_model_table -- the modeled figures side by side, if there are any. */
static void bm_model_table(const struct bm_args *a, const bool *done,
                           const struct bm_result *r)
{
    bool any = false;
    for (size_t i = 0; i < BM_NALL; i++)
        any = any || (done[i] && (r[i].model || r[i].nvm_ns > 0));
    if (!any)
        return;
    printf("modeled: %s on the %s clock (device time an append + fsync waited "
           "for; energy per fsync)\n", a->spec ? a->spec : "no device model",
           a->clock == UBJ_CLOCK_REAL ? "real" : "virtual");
    printf("%-14s %12s %12s %12s %12s %12s %12s\n", "mode", "dev med us", "dev p99 us",
           "dev mean us", "dev uJ", "nvm ns", "nvm uJ");
    for (size_t i = 0; i < BM_NALL; i++)
        if (done[i])
            printf("%-14s %12.1f %12.1f %12.1f %12.2f %12.1f %12.4f\n", bm_all[i].label,
                   r[i].dmed_us, r[i].dp99_us, r[i].dmean_us, r[i].dev_uj,
                   r[i].nvm_ns, r[i].nvm_uj);
}

/* bm_table -- every mode's figures side by side. */
static void bm_table(const struct bm_args *a, const bool *done,
                     const struct bm_result *r)
{
    char sz[32];
    tools_fmt_size(a->size, sz, sizeof sz);
    printf("ubjfs bench modes: %s device, %s image, %llu x (4 KiB append + fsync)\n",
           a->models && a->models[0] ? a->spec : a->file ? "file" : "ram", sz, (unsigned long long)a->ops);
    printf("%-14s %9s %9s %9s %9s %8s %9s %9s %9s %9s %10s %9s\n", "mode",
           "med us", "p90 us", "p99 us", "mean us", "flush/op", "data B", "meta B",
           "journal B", "ckpt B", "device B", "nvm B");
    for (size_t i = 0; i < BM_NALL; i++) {
        if (!done[i])
            continue;
        const struct bm_result *x = &r[i];
        printf("%-14s %9.1f %9.1f %9.1f %9.1f %8.2f %9.0f %9.0f %9.0f %9.0f %10.0f %9.0f\n",
               bm_all[i].label, x->med_us, x->p90_us, x->p99_us, x->mean_us,
               x->flushes, x->data, x->meta, x->journal, x->ckpt, x->dev, x->nvm);
    }
    printf("(bytes are per fsync; data and meta are home writes, checkpoints "
           "included; ckpt is the checkpoints' part of them)\n");
    bm_model_table(a, done, r);
}

/* tools_bench_modes_main -- `ubjfs bench modes`. */
int tools_bench_modes_main(int argc, char **argv)
{
    bm_modes_init();
    struct bm_args a = { .ops = 2000, .size = 256u << 20, .cache_blocks = 16384,
                         .nvm_dir = "/dev/shm" };
    const char *tmp = getenv("TMPDIR");
    snprintf(a.deffile, sizeof a.deffile, "%s/ubjfs-bench-modes-%d.img",
             tmp && *tmp ? tmp : "/var/tmp", (int)getpid());
    a.file = a.deffile;
    int ret = bm_parse(argc, argv, &a);
    if (ret >= 0) {
        free(a.models);
        return ret;
    }
    bool done[BM_MAXMODES] = { false };
    struct bm_result res[BM_MAXMODES];
    ret = TOOLS_EXIT_OK;
    if (a.file != NULL && bm_prefill(&a) < 0) {
        free(a.models);
        return TOOLS_EXIT_ERR;
    }
    for (size_t i = 0; i < BM_NALL; i++) {
        if (!bm_selected(&a, bm_all[i].label))
            continue;
        if (bm_one(&a, &bm_all[i], &res[i]) < 0) {
            ret = TOOLS_EXIT_ERR;
            break;
        }
        done[i] = true;
        if (a.csv)
            bm_csv(bm_all[i].label, &res[i]);
    }
    if (a.file == a.deffile)
        unlink(a.deffile);
    if (!a.csv)
        bm_table(&a, done, res);
    if (ret == TOOLS_EXIT_OK && bm_selected(&a, "recovery") && bm_recovery(&a) < 0)
        ret = TOOLS_EXIT_ERR;
    free(a.models);
    return ret;
}
