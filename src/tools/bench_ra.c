/*
 * bench_ra.c -- `ubjfs bench readahead`: the read-ahead study of issue 19
 * (seed 002, Olivier et al.): per device model x access pattern x call
 * size x read-ahead policy, a cold-cache run of the pattern's pread calls
 * on the virtual clock (a benchmark, not a timed test; docs/RESULTS.md
 * records the figures, docs/READAHEAD.md the policies).
 *
 * One cell: the pattern's image (built once per pattern on a RAM device:
 * its files written contiguously, then unmounted) under the device model
 * on a new virtual clock (a flash model gets every non-zero block written
 * through it first, so its FTL maps them and reads take the flash read
 * path: ra_populate), mounted with the policy (fresh cache: cold;
 * noatime, no timer: nothing but the reads reaches the device), every
 * file's inode looked at, then the calls, each timed on the model's clock
 * (the modeled device time the call waited for; the file system's own CPU
 * time is not modeled -- the NAND driver's is, in the model's request
 * time).  Then: mean and p99 time per call, total time, the device's
 * energy (active + idle over the run) and energy per MiB read, the
 * device's read requests, and read-ahead issued / used / wasted (issued
 * and never used by the end of the run) / late (ubj_fs_stats).
 *
 * The oracle's future: each pattern's calls are generated before its
 * runs, and a bitmap per file marks every page they read; the oracle
 * (ubj_config.ra_future) asks it.  With a cold cache larger than a file,
 * every page read ahead that the calls read at all is used.
 *
 * SQLite (sql-point, sql-range; the seed's macro-benchmark): the harness's
 * sqlite workload through its VFS (bh_run, src/bench/wl_sqlite.c), table
 * t of 20 000 rows loaded untimed, then 200 indexed queries -- batch 1
 * (a point query: the range holds about one row) or 100 -- with the
 * ubjfs cache dropped after the load (BH_F_COLD) and SQLite's own cache
 * at 16 pages, so the queries' pages come from the device; once per
 * device and policy (SQLite reads 4 KiB pages whatever the call size:
 * the row's KiB is 4), not under the oracle (no future through SQLite).
 * The harness reports no read-ahead counters nor device reads: those
 * columns are 0 there.  Time is the harness's elapsed time of the queries.
 *
 * Output: the table on stdout, a progress line per run on stderr, the
 * targets of issue 19 checked at the end (the check lines), --csv FILE,
 * --json FILE, --plots DIR (gnuplot: per call size, one SVG per device
 * with the total time of each policy on each pattern).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "bench_out.h"
#include "ubjfs/model.h"
#include "tools.h"

#define RA_MAXF 16u                 /* files of a pattern */
#define RA_MAXV 16u                 /* devices, patterns, sizes, policies */
#define RA_IMAGE_MIB 96u            /* the RAM image */
#define RA_CACHE 4096u              /* 16 MiB of buffers */

enum ra_pat { P_SEQ, P_RANDOM, P_STRIDED, P_BACKWARD, P_INTERLEAVED, P_MIXED,
              P_SQL_POINT, P_SQL_RANGE, P_NR };
static const char *const ra_pat_names[P_NR] = {
    "sequential", "random", "strided", "backward", "interleaved", "mixed",
    "sql-point", "sql-range",
};
#define RA_SQL(p) ((p) == P_SQL_POINT || (p) == P_SQL_RANGE)
#define RA_SQL_ROWS "20000"   /* rows of the table (~3 MiB with its index) */
#define RA_SQL_OPS 200u       /* queries */

/* The devices: spec, label (with the drive's read-ahead said). */
static const char *const ra_dev_default[][2] = {
    { "nand:slc", "nand:slc" }, { "nand:mlc", "nand:mlc" },
    { "ssd:emmc", "ssd:emmc" }, { "ssd:sata", "ssd:sata" },
    { "hdd:modern7200", "hdd:modern7200" },
    { "hdd:modern7200,readahead_sectors=0", "hdd:modern7200/dra-off" },
    { "hdd:hp_c2249a", "hdd:hp_c2249a" },
    { "hdd:hp_c2249a,readahead_sectors=0", "hdd:hp_c2249a/dra-off" },
};
static const char *const ra_pol_default[] = {
    "off-page", "off", "linux", "linux-2013", "adaptive", "oracle",
};

struct ra_call {
    uint32_t file;
    uint64_t off;
    uint32_t len;
};

/* One pattern's image and calls. */
struct ra_set {
    enum ra_pat pat;
    uint32_t csize;                 /* call size, bytes */
    uint64_t cpu_ns;                /* the reader's time after each call */
    unsigned mflags;                /* extra UBJ_MOUNT_* (--sync-windows) */
    unsigned nfiles;
    uint64_t size[RA_MAXF];
    ubj_ino_t ino[RA_MAXF];
    uint8_t *future[RA_MAXF];       /* page bitmaps of what the calls read */
    struct ra_call *calls;
    size_t ncalls, cap;
    struct ubj_bdev *ram;           /* the image */
};

/* One cell's figures. */
struct ra_cell {
    const char *dev, *pol;
    enum ra_pat pat;
    uint32_t csize;
    uint64_t calls, bytes, total_ns, mean_ns, p99_ns, dev_reads;
    double energy_j, mj_per_mib;
    uint64_t ra_issued, ra_used, ra_wasted, ra_late;
};

struct ra_args {
    const char *devs[RA_MAXV][2];
    unsigned ndev;
    const char *pols[RA_MAXV];
    unsigned npol;
    uint32_t sizes[RA_MAXV];
    unsigned nsize;
    bool pats[P_NR];
    uint64_t file_bytes;
    uint64_t cpu_ns;                /* --cpu-us */
    bool sync_windows;              /* --sync-windows */
    struct tools_bout_study io;   /* --seed, --csv, --json, --plots, --quiet */
    bool full;
};

/* ---- patterns -------------------------------------------------------------- */

/* ra_rand -- xorshift64. */
static uint64_t ra_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* ra_add -- one call; the future bitmap marks its pages.  0 or -ENOMEM. */
static int ra_add(struct ra_set *s, uint32_t file, uint64_t off, uint64_t len)
{
    if (s->ncalls == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        struct ra_call *c = realloc(s->calls, cap * sizeof *c);
        if (c == NULL)
            return -ENOMEM;
        s->calls = c;
        s->cap = cap;
    }
    s->calls[s->ncalls++] = (struct ra_call){ file, off, (uint32_t)len };
    for (uint64_t p = off / UBJ_BLOCK_SIZE; p * UBJ_BLOCK_SIZE < off + len; p++)
        s->future[file][p / 8] |= (uint8_t)(1u << (p % 8));
    return 0;
}

/* ra_calls_file -- file f read whole, in order, by calls of c bytes. */
static int ra_calls_file(struct ra_set *s, uint32_t f)
{
    int rc = 0;
    for (uint64_t o = 0; o < s->size[f] && rc == 0; o += s->csize)
        rc = ra_add(s, f, o, s->size[f] - o < s->csize ? s->size[f] - o : s->csize);
    return rc;
}

/* ra_calls -- the pattern's calls (files and sizes set). */
static int ra_calls(struct ra_set *s, uint64_t seed)
{
    uint64_t c = s->csize, n = s->size[0] / c, x = seed | 1;
    int rc = 0;
    switch (s->pat) {
    case P_SEQ:
        return ra_calls_file(s, 0);
    case P_RANDOM: {   /* a quarter of the slots, each once, in random order */
        uint64_t *slot = malloc(n * sizeof *slot);
        if (slot == NULL)
            return -ENOMEM;
        for (uint64_t i = 0; i < n; i++)
            slot[i] = i;
        for (uint64_t i = n - 1; i > 0; i--) {
            uint64_t j = ra_rand(&x) % (i + 1), t = slot[i];
            slot[i] = slot[j];
            slot[j] = t;
        }
        for (uint64_t i = 0; i < (n + 3) / 4 && rc == 0; i++)
            rc = ra_add(s, 0, slot[i] * c, c);
        free(slot);
        return rc;
    }
    case P_STRIDED:
        for (uint64_t i = 0; 2 * i < n && rc == 0; i++)
            rc = ra_add(s, 0, 2 * i * c, c);
        return rc;
    case P_BACKWARD:
        for (uint64_t i = n; i > 0 && rc == 0; i--)
            rc = ra_add(s, 0, (i - 1) * c, c);
        return rc;
    case P_INTERLEAVED:   /* A from 0, B from the middle, alternating */
        for (uint64_t i = 0; i < n / 2 && rc == 0; i++) {
            rc = ra_add(s, 0, i * c, c);
            if (rc == 0)
                rc = ra_add(s, 0, (n / 2 + i) * c, c);
        }
        return rc;
    default: {   /* P_MIXED: every file whole, the files in random order */
        uint32_t order[RA_MAXF];
        for (uint32_t i = 0; i < s->nfiles; i++)
            order[i] = i;
        for (uint32_t i = s->nfiles - 1; i > 0; i--) {
            uint32_t j = (uint32_t)(ra_rand(&x) % (i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (uint32_t i = 0; i < s->nfiles && rc == 0; i++)
            rc = ra_calls_file(s, order[i]);
        return rc;
    }
    }
}

/* ra_image -- the pattern's files on a fresh RAM image: one file of
 * file_bytes, or (mixed) RA_MAXF files of 4 KiB x 2^(i mod 7) up to 256
 * KiB, plus a 5/3 sliver, so sizes vary.  0 or a negative errno. */
static int ra_image(struct ra_set *s, uint64_t file_bytes)
{
    s->nfiles = s->pat == P_MIXED ? RA_MAXF : 1;
    for (unsigned f = 0; f < s->nfiles; f++) {
        s->size[f] = s->pat == P_MIXED ? (4096ull << (f % 7)) + (f % 3) * 1000 : file_bytes;
        s->future[f] = calloc(s->size[f] / UBJ_BLOCK_SIZE / 8 + 2, 1);
        if (s->future[f] == NULL)
            return -ENOMEM;
    }
    int rc = ubj_bdev_ram_create((uint64_t)RA_IMAGE_MIB << 8, &s->ram);
    struct ubj_format_opts fo = { .mode = "none", .flags = UBJ_FORMAT_ZEROED };
    struct ubj_fs *fs = NULL;
    if (rc == 0)
        rc = ubj_format(s->ram, &fo);
    struct ubj_config cfg = { .mode = "none", .flags = UBJ_MOUNT_NO_TIMER };
    if (rc == 0)
        rc = ubj_mount(s->ram, &cfg, &fs);
    uint8_t *buf = rc == 0 ? malloc(1u << 20) : NULL;
    if (rc == 0 && buf == NULL)
        rc = -ENOMEM;
    for (unsigned f = 0; rc == 0 && f < s->nfiles; f++) {
        char name[16];
        struct ubj_stat st;
        snprintf(name, sizeof name, "f%u", f);
        rc = ubj_create(fs, UBJ_ROOT_INO, name, 0644, NULL, &st);
        s->ino[f] = st.ino;
        for (uint64_t o = 0; rc == 0 && o < s->size[f]; o += 1u << 20) {
            uint64_t n = s->size[f] - o < (1u << 20) ? s->size[f] - o : 1u << 20;
            memset(buf, (int)(1 + f + o / 4096), n);   /* never a zero block */
            ssize_t w = ubj_pwrite(fs, st.ino, buf, n, (off_t)o);
            rc = w == (ssize_t)n ? 0 : w < 0 ? (int)w : -EIO;
        }
    }
    free(buf);
    if (fs != NULL) {
        int urc = ubj_unmount(fs);
        rc = rc == 0 ? urc : rc;
    }
    return rc;
}

/* ra_set_free -- everything of s. */
static void ra_set_free(struct ra_set *s)
{
    for (unsigned f = 0; f < RA_MAXF; f++)
        free(s->future[f]);
    free(s->calls);
    ubj_bdev_destroy(s->ram);
    memset(s, 0, sizeof *s);
}

/* ra_future -- ubj_config.ra_future over the pattern's bitmaps. */
static int ra_future(void *ctx, ubj_ino_t ino, uint64_t page)
{
    const struct ra_set *s = ctx;
    for (unsigned f = 0; f < s->nfiles; f++)
        if (s->ino[f] == ino)
            return page * UBJ_BLOCK_SIZE < s->size[f] &&
                   (s->future[f][page / 8] >> (page % 8)) & 1;
    return 0;
}

/* ---- one cell ---------------------------------------------------------------- */

/* ra_cmp -- qsort of uint64_t. */
static int ra_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ra_calls_run -- the calls on the mounted fs, each timed on dev's model
 * clock into ns[], the clock moved by s->cpu_ns after each (the reader's
 * own work, not in the figures: what asynchronous read-ahead can hide).
 * 0 or a negative errno. */
static int ra_calls_run(struct ra_set *s, struct ubj_fs *fs, struct ubj_bdev *dev,
                        uint64_t *ns, struct ra_cell *c)
{
    uint8_t *buf = malloc(s->csize);
    if (buf == NULL)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < s->ncalls && rc == 0; i++) {
        const struct ra_call *k = &s->calls[i];
        uint64_t t0 = tools_dev_now(dev);
        ssize_t n = ubj_pread(fs, s->ino[k->file], buf, k->len, (off_t)k->off);
        ns[i] = tools_dev_now(dev) - t0;
        if (n != (ssize_t)k->len)
            rc = n < 0 ? (int)n : -EIO;
        else if (buf[0] != (uint8_t)(1 + k->file + (k->off & ~((1ull << 20) - 1)) / 4096)) {
            tools_err("wrong bytes at %llu of f%u",
                      (unsigned long long)k->off, k->file);
            rc = -EIO;
        }
        c->bytes += (uint64_t)n;
        c->total_ns += ns[i];
        if (s->cpu_ns > 0)   /* the reader works on the data: time passes */
            ubj_clock_advance(ubj_model_clock(ubj_model_find(dev)), s->cpu_ns);
    }
    free(buf);
    return rc;
}

/* ra_populate -- a flash model maps only what was written through it (an
 * unmapped unit is answered from RAM at the driver's cost): write every
 * non-zero block of the image through the model on top of it once. */
static int ra_populate(struct ubj_bdev *dev, struct ubj_bdev *ram)
{
    static const uint8_t zero[4096];
    uint8_t *buf = malloc(4096);
    int rc = buf ? 0 : -ENOMEM;
    for (uint64_t b = 0; rc == 0 && b < ram->nblocks; b++) {
        rc = ubj_bdev_read(ram, b, 1, buf);
        if (rc == 0 && memcmp(buf, zero, sizeof zero) != 0)
            rc = ubj_bdev_write(dev, b, 1, buf);
    }
    free(buf);
    return rc;
}

/* ra_cell_run -- one cell: the image under `spec` mounted with `pol`, the
 * calls, the figures into *c.  0 or a negative errno (message set). */
static int ra_cell_run(struct ra_set *s, const char *spec, const char *pol,
                       struct ra_cell *c)
{
    struct ubj_bdev *dev;
    int rc = tools_dev_wrap(spec, UBJ_CLOCK_VIRTUAL, s->ram, &dev);
    if (rc < 0)
        return rc;
    if (strncmp(spec, "nand", 4) == 0)   /* the flash path: the FTL maps it */
        rc = ra_populate(dev, s->ram);
    struct ubj_config cfg = { .mode = "none", .cache_blocks = RA_CACHE, .readahead = pol,
                              .flags = UBJ_MOUNT_NO_TIMER | UBJ_MOUNT_NOATIME | s->mflags,
                              .ra_future = ra_future, .ra_future_ctx = s };
    struct ubj_fs *fs = NULL;
    uint64_t *ns = calloc(s->ncalls, sizeof *ns);
    if (rc == 0)
        rc = ns ? ubj_mount(dev, &cfg, &fs) : -ENOMEM;
    for (unsigned f = 0; rc == 0 && f < s->nfiles; f++)
        rc = ubj_getattr(fs, s->ino[f], &(struct ubj_stat){ 0 });
    struct tools_dev_mark m0, m1;
    struct ubj_bdev_stats b0, b1;
    tools_dev_mark(dev, &m0);
    ubj_bdev_stats_get(s->ram, &b0);
    if (rc == 0)
        rc = ra_calls_run(s, fs, dev, ns, c);
    tools_dev_mark(dev, &m1);
    ubj_bdev_stats_get(s->ram, &b1);
    if (rc == 0) {
        struct ubj_fs_stats st;
        ubj_fs_stats_get(fs, &st);
        c->calls = s->ncalls;
        c->mean_ns = c->total_ns / (c->calls ? c->calls : 1);
        qsort(ns, s->ncalls, sizeof *ns, ra_cmp);
        c->p99_ns = s->ncalls ? ns[(s->ncalls * 99 + 99) / 100 - 1] : 0;
        c->energy_j = m1.energy_j - m0.energy_j;
        c->mj_per_mib = c->bytes ? c->energy_j * 1e3 / ((double)c->bytes / 1048576.0) : 0;
        c->dev_reads = b1.reads - b0.reads;
        c->ra_issued = st.ra_blocks;
        c->ra_used = st.ra_used;
        c->ra_wasted = st.ra_blocks - st.ra_used;
        c->ra_late = st.ra_late;
    }
    free(ns);
    if (fs != NULL) {
        int urc = ubj_unmount(fs);
        rc = rc == 0 ? urc : rc;
    }
    if (dev != s->ram) {   /* the model goes, the image stays */
        struct ubj_bdev *top = dev;
        while (top->lower != s->ram)
            top = top->lower;
        top->lower = NULL;
        ubj_bdev_destroy(dev);
    }
    return rc;
}

/* ra_sql_run -- an SQLite cell through the harness (see the top). */
static int ra_sql_run(const char *spec, const char *pol, enum ra_pat p, struct ra_cell *c)
{
    char kv[128];
    snprintf(kv, sizeof kv, "rows=%s,insert_pct=0,cache_pages=16,batch=%u", RA_SQL_ROWS,
             p == P_SQL_POINT ? 1u : 100u);
    struct bh_config cfg = {
        .workload = "sqlite", .mode = "none", .device = spec, .readahead = pol,
        .cache_blocks = RA_CACHE, .clock = UBJ_CLOCK_VIRTUAL, .flags = BH_F_COLD,
        .params = { .procs = 1, .ops = RA_SQL_OPS, .seed = 1, .kv = kv },
    };
    struct bh_result r;
    int rc = bh_run(&cfg, &r);
    if (rc < 0)
        return rc;
    c->calls = r.ops;
    c->bytes = r.app_bytes_read;
    c->total_ns = r.elapsed_ns - r.sync_ns;
    c->mean_ns = r.lat_mean_ns;
    c->p99_ns = r.lat_p99_ns;
    c->energy_j = r.energy_dev_j;
    c->mj_per_mib = c->bytes ? c->energy_j * 1e3 / ((double)c->bytes / 1048576.0) : 0;
    c->dev_reads = r.dev_reads;
    c->ra_issued = r.ra_blocks;
    c->ra_used = r.ra_used;
    c->ra_wasted = r.ra_blocks > r.ra_used ? r.ra_blocks - r.ra_used : 0;
    c->ra_late = r.ra_late;
    return 0;
}

/* ---- output ------------------------------------------------------------------ */

/* ra_table_head, ra_table_row -- the table on f. */
static void ra_table_head(FILE *f)
{
    fprintf(f, "%-24s %-11s %4s %-10s %6s %10s %10s %10s %10s %8s %6s %7s %7s %6s %5s\n",
            "device", "pattern", "KiB", "policy", "calls", "mean_us", "p99_us",
            "total_ms", "energy_mJ", "mJ/MiB", "reads", "ra_iss", "ra_used", "ra_wst",
            "late");
}

static void ra_table_row(FILE *f, const struct ra_cell *c)
{
    fprintf(f, "%-24s %-11s %4u %-10s %6llu %10.1f %10.1f %10.2f %10.3f %8.2f %6llu "
            "%7llu %7llu %6llu %5llu\n", c->dev, ra_pat_names[c->pat], c->csize / 1024,
            c->pol, (unsigned long long)c->calls, (double)c->mean_ns / 1e3,
            (double)c->p99_ns / 1e3, (double)c->total_ns / 1e6, c->energy_j * 1e3,
            c->mj_per_mib, (unsigned long long)c->dev_reads,
            (unsigned long long)c->ra_issued, (unsigned long long)c->ra_used,
            (unsigned long long)c->ra_wasted, (unsigned long long)c->ra_late);
}

/* ra_csv -- header + a line per cell. */
static int ra_csv(const char *path, const struct ra_cell *c, size_t n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    fputs("device,pattern,call_kib,policy,calls,bytes,mean_ns,p99_ns,total_ns,energy_j,"
          "mj_per_mib,dev_reads,ra_issued,ra_used,ra_wasted,ra_late\n", f);
    for (size_t i = 0; i < n; i++) {
        tools_bout_csv_field(f, c[i].dev);
        fprintf(f, ",%s,%u,%s,%llu,%llu,%llu,%llu,%llu,%.9g,%.9g,%llu,%llu,%llu,%llu,%llu\n",
                ra_pat_names[c[i].pat], c[i].csize / 1024, c[i].pol,
                (unsigned long long)c[i].calls, (unsigned long long)c[i].bytes,
                (unsigned long long)c[i].mean_ns, (unsigned long long)c[i].p99_ns,
                (unsigned long long)c[i].total_ns, c[i].energy_j, c[i].mj_per_mib,
                (unsigned long long)c[i].dev_reads, (unsigned long long)c[i].ra_issued,
                (unsigned long long)c[i].ra_used, (unsigned long long)c[i].ra_wasted,
                (unsigned long long)c[i].ra_late);
    }
    return fclose(f) == 0 ? 0 : -EIO;
}

/* ra_json -- {"schema", "file_bytes", "cells": [...]}. */
static int ra_json(const char *path, const struct ra_args *a, const struct ra_cell *c,
                   size_t n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -errno;
    fprintf(f, "{\"schema\": \"ubjfs-bench-readahead/1\", \"file_bytes\": %llu, "
            "\"seed\": %llu, \"cache_blocks\": %u, \"cells\": [",
            (unsigned long long)a->file_bytes, (unsigned long long)a->io.seed, RA_CACHE);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n  {\"device\": " : "\n  {\"device\": ", f);
        tools_bout_json_string(f, c[i].dev);
        fprintf(f, ", \"pattern\": \"%s\", \"call_kib\": %u, \"policy\": \"%s\", "
                "\"calls\": %llu, \"bytes\": %llu, \"mean_ns\": %llu, \"p99_ns\": %llu, "
                "\"total_ns\": %llu, \"energy_j\": %.9g, \"mj_per_mib\": %.9g, "
                "\"dev_reads\": %llu, \"ra_issued\": %llu, \"ra_used\": %llu, "
                "\"ra_wasted\": %llu, \"ra_late\": %llu}", ra_pat_names[c[i].pat],
                c[i].csize / 1024, c[i].pol, (unsigned long long)c[i].calls,
                (unsigned long long)c[i].bytes, (unsigned long long)c[i].mean_ns,
                (unsigned long long)c[i].p99_ns, (unsigned long long)c[i].total_ns,
                c[i].energy_j, c[i].mj_per_mib, (unsigned long long)c[i].dev_reads,
                (unsigned long long)c[i].ra_issued, (unsigned long long)c[i].ra_used,
                (unsigned long long)c[i].ra_wasted, (unsigned long long)c[i].ra_late);
    }
    fputs("\n]}\n", f);
    return fclose(f) == 0 ? 0 : -EIO;
}

/* ra_find -- the cell of (dev, pattern, size, policy), or NULL. */
static const struct ra_cell *ra_find(const struct ra_cell *c, size_t n, const char *dev,
                                     enum ra_pat p, uint32_t size, const char *pol)
{
    for (size_t i = 0; i < n; i++)
        if (c[i].pat == p && c[i].csize == size && strcmp(c[i].dev, dev) == 0 &&
            strcmp(c[i].pol, pol) == 0)
            return &c[i];
    return NULL;
}

/* ra_plots -- dir/ra-KIB-DEVICE.dat (a row per pattern, a column per
 * policy: total ms), plots.gp, and gnuplot's SVGs.  0 or its error. */
static int ra_plots(const char *dir, const struct ra_args *a, const struct ra_cell *c,
                    size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/plots.gp", dir);
    FILE *gp = fopen(path, "w");
    if (gp == NULL)
        return -errno;
    fputs("set terminal svg size 900,420\nset style data histograms\n"
          "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
          "set ylabel 'total modeled time (ms)'\nset logscale y\nset key outside right\n"
          "set xtics rotate by -30\n", gp);
    for (unsigned d = 0; d < a->ndev; d++)
        for (unsigned z = 0; z < a->nsize; z++) {
            char safe[64];
            size_t k = 0;
            for (const char *p = a->devs[d][1]; *p && k + 1 < sizeof safe; p++)
                safe[k++] = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ? *p : '-';
            safe[k] = '\0';
            snprintf(path, sizeof path, "%s/ra-%u-%s.dat", dir, a->sizes[z] / 1024, safe);
            FILE *f = fopen(path, "w");
            if (f == NULL) {
                fclose(gp);
                return -errno;
            }
            fputs("pattern", f);
            for (unsigned p = 0; p < a->npol; p++)
                fprintf(f, " %s", a->pols[p]);
            fputc('\n', f);
            for (int t = 0; t < P_NR; t++) {
                if (!a->pats[t])
                    continue;
                fputs(ra_pat_names[t], f);
                for (unsigned p = 0; p < a->npol; p++) {
                    const struct ra_cell *x = ra_find(c, n, a->devs[d][1], (enum ra_pat)t,
                                                      a->sizes[z], a->pols[p]);
                    fprintf(f, " %.6f", x ? (double)x->total_ns / 1e6 : NAN);
                }
                fputc('\n', f);
            }
            fclose(f);
            fprintf(gp, "set output 'ra-%u-%s.svg'\nset title '%s, %u KiB calls, cold "
                    "cache'\nplot for [i=2:%u] 'ra-%u-%s.dat' using i:xtic(1) title "
                    "columnheader(i)\n", a->sizes[z] / 1024, safe, a->devs[d][1],
                    a->sizes[z] / 1024, a->npol + 1, a->sizes[z] / 1024, safe);
        }
    if (fclose(gp) != 0)
        return -EIO;
    return tools_bout_run_gnuplot(dir);
}

/* ---- the targets of issue 19 ------------------------------------------------- */

/* ra_ratio -- a's total time (energy with `en`) over b's; NAN if missing. */
static double ra_ratio(const struct ra_cell *a, const struct ra_cell *b, bool en)
{
    if (a == NULL || b == NULL)
        return NAN;
    return en ? a->energy_j / b->energy_j : (double)a->total_ns / (double)b->total_ns;
}

/* ra_verdict -- a target's verdict into buf: "no cells" when none was
 * compared, else "met" or "NOT met" and the figure (fmt, x). */
static void ra_verdict(char *buf, size_t len, unsigned cells, bool met, const char *fmt,
                       double x)
{
    if (cells == 0) {
        snprintf(buf, len, "no cells");
        return;
    }
    int k = snprintf(buf, len, "%s (", met ? "met" : "NOT met");
    if (k > 0 && (size_t)k < len)
        k += snprintf(buf + k, len - (size_t)k, fmt, x);
    if (k > 0 && (size_t)k < len)
        snprintf(buf + k, len - (size_t)k, ")");
}

/* ra_check_nand -- NAND: adaptive within 2% of off (time and energy)
 * everywhere; linux within 2% of off and linux-2013 slower on random. */
static void ra_check_nand(FILE *f, const struct ra_args *a, const struct ra_cell *c, size_t n)
{
    double worst_ad = 0, worst_lx = 0, best_13 = INFINITY;
    unsigned n_ad = 0, n_lx = 0, n_13 = 0;   /* cells compared */
    for (unsigned d = 0; d < a->ndev; d++) {
        const char *dev = a->devs[d][1];
        if (strncmp(dev, "nand:", 5) != 0)
            continue;
        for (int p = 0; p < P_NR; p++)
            for (unsigned z = 0; a->pats[p] && z < a->nsize; z++) {
                const struct ra_cell *off = ra_find(c, n, dev, (enum ra_pat)p, a->sizes[z], "off");
                for (int en = 0; en < 2; en++) {
                    double r = ra_ratio(ra_find(c, n, dev, (enum ra_pat)p, a->sizes[z],
                                                "adaptive"), off, en);
                    n_ad += isfinite(r);
                    if (isfinite(r) && fabs(r - 1) > worst_ad)
                        worst_ad = fabs(r - 1);
                }
                if (p != P_RANDOM)
                    continue;
                double rl = ra_ratio(ra_find(c, n, dev, P_RANDOM, a->sizes[z], "linux"), off, false);
                double r13 = ra_ratio(ra_find(c, n, dev, P_RANDOM, a->sizes[z], "linux-2013"),
                                      off, false);
                n_lx += isfinite(rl);
                n_13 += isfinite(r13);
                if (isfinite(rl) && fabs(rl - 1) > worst_lx)
                    worst_lx = fabs(rl - 1);
                if (isfinite(r13) && r13 < best_13)
                    best_13 = r13;
            }
    }
    char ad[64], lx[64], l13[64];
    ra_verdict(ad, sizeof ad, n_ad, worst_ad <= 0.02, "worst %.2f%%", worst_ad * 100);
    ra_verdict(lx, sizeof lx, n_lx, worst_lx <= 0.02, "worst %.2f%%", worst_lx * 100);
    ra_verdict(l13, sizeof l13, n_13, best_13 > 1.0, "least %.3fx", best_13);
    fprintf(f, "target NAND adaptive within 2%% of off (time, energy): %s\n", ad);
    fprintf(f, "target NAND random: linux within 2%% of off: %s; linux-2013 slower than off: "
            "%s\n", lx, l13);
}

/* ra_check_seq -- HDD/SSD sequential 4 KiB: linux over off-page against
 * the ratio the cost equation T = a + b k predicts, with a and b from the
 * off policy's 4 KiB and 128 KiB sequential cells of the same device.
 * linux's n requests of k = pages / n pages on average: on a disk one
 * after the other, n a + pages b; on an SSD its asynchronous windows keep
 * two requests in flight (the next is submitted at the marker, as the
 * reader starts waiting for this one), so a request's latency overlaps
 * the previous one's transfer over the host link: the first costs a + b
 * k, each later one max(a, b k) (docs/READAHEAD.md, "Asynchronous
 * windows"). */
static void ra_check_seq(FILE *f, const struct ra_args *a, const struct ra_cell *c, size_t n)
{
    for (unsigned d = 0; d < a->ndev; d++) {
        const char *dev = a->devs[d][1];
        if (strncmp(dev, "nand:", 5) == 0)
            continue;
        const struct ra_cell *op = ra_find(c, n, dev, P_SEQ, 4096, "off-page");
        const struct ra_cell *lx = ra_find(c, n, dev, P_SEQ, 4096, "linux");
        const struct ra_cell *o4 = ra_find(c, n, dev, P_SEQ, 4096, "off");
        const struct ra_cell *o128 = ra_find(c, n, dev, P_SEQ, 131072, "off");
        if (!op || !lx || !o4 || !o128)
            continue;
        double t4 = (double)o4->mean_ns, t128 = (double)o128->mean_ns;
        double b = (t128 - t4) / 31, a0 = t4 - b;
        double pages = (double)lx->bytes / 4096, nreq = (double)lx->dev_reads;
        double t_lx = nreq * a0 + pages * b;
        if (strncmp(dev, "ssd:", 4) == 0 && nreq >= 1) {
            double bk = b * pages / nreq;
            t_lx = a0 + bk + (nreq - 1) * (a0 > bk ? a0 : bk);
        }
        double pred = (double)op->total_ns / t_lx;
        double meas = (double)op->total_ns / (double)lx->total_ns;
        fprintf(f, "target %s seq 4 KiB off-page/linux: measured %.2fx, predicted %.2fx "
                "(a %.1f us, b %.1f us, %llu requests): %s\n", dev, meas, pred, a0 / 1e3,
                b / 1e3, (unsigned long long)lx->dev_reads,
                fabs(meas / pred - 1) <= 0.10 ? "met" : "NOT met");
    }
}

/* ra_check_adaptive -- everywhere: adaptive <= 1.05 x min(off, linux), and
 * where oracle beats both by > 10% adaptive closes half the gap. */
static void ra_check_adaptive(FILE *f, const struct ra_args *a, const struct ra_cell *c,
                              size_t n)
{
    unsigned bad5 = 0, gaps = 0, closed = 0, cells = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(c[i].pol, "adaptive") != 0)
            continue;
        const struct ra_cell *off = ra_find(c, n, c[i].dev, c[i].pat, c[i].csize, "off");
        const struct ra_cell *lx = ra_find(c, n, c[i].dev, c[i].pat, c[i].csize, "linux");
        const struct ra_cell *orc = ra_find(c, n, c[i].dev, c[i].pat, c[i].csize, "oracle");
        if (off == NULL || lx == NULL)
            continue;
        double best = fmin((double)off->total_ns, (double)lx->total_ns);
        double r = (double)c[i].total_ns / best;
        cells++;
        if (r > worst)
            worst = r;
        if (r > 1.05) {
            bad5++;
            fprintf(f, "  adaptive %.3fx the better of off and linux: %s %s %u KiB\n", r,
                    c[i].dev, ra_pat_names[c[i].pat], c[i].csize / 1024);
        }
        if (orc != NULL && (double)orc->total_ns < best / 1.10) {
            gaps++;
            double frac = (best - (double)c[i].total_ns) / (best - (double)orc->total_ns);
            closed += frac >= 0.5;
            if (frac < 0.5)
                fprintf(f, "  adaptive closes %.0f%% of oracle's gap: %s %s %u KiB\n",
                        frac * 100, c[i].dev, ra_pat_names[c[i].pat], c[i].csize / 1024);
        }
    }
    (void)a;
    if (cells == 0)
        fprintf(f, "target adaptive <= 1.05 x min(off, linux): no cells\n");
    else
        fprintf(f, "target adaptive <= 1.05 x min(off, linux): %s (%u of %u cells over; worst "
                "%.3fx)\n", bad5 == 0 ? "met" : "NOT met", bad5, cells, worst);
    if (gaps == 0)
        fprintf(f, "target adaptive closes >= half of oracle's gap where it is > 10%%: "
                "no cells\n");
    else
        fprintf(f, "target adaptive closes >= half of oracle's gap where it is > 10%%: %s "
                "(%u of %u)\n", closed == gaps ? "met" : "NOT met", closed, gaps);
}

/* ---- the command --------------------------------------------------------------- */

/* ra_usage -- the --help text. */
static void ra_usage(void)
{
    printf("Usage: %s [OPTIONS]\n"
           "The read-ahead study (issue 19, seed 002): per device model x access\n"
           "pattern x call size x read-ahead policy, one cold-cache run on the virtual\n"
           "clock: mean and p99 modeled time per call, total time, device energy and\n"
           "energy per MiB, device reads, read-ahead issued / used / wasted / late.\n"
           "A progress line per run on stderr, the table on stdout, then the targets\n"
           "of issue 19 checked.  docs/READAHEAD.md, docs/RESULTS.md.\n\n"
           "Options:\n"
           "      --full            the full grid: call sizes 4, 8, 16, 32, 64 and 128\n"
           "                        KiB, 16 MiB files (default: 4 and 128 KiB, 4 MiB)\n"
           "  -d, --device SPEC     a device model (repeatable; default nand:slc,\n"
           "                        nand:mlc, ssd:emmc, ssd:sata, hdd:modern7200 and\n"
           "                        hdd:hp_c2249a, each disk also with\n"
           "                        ,readahead_sectors=0: its drive read-ahead off)\n"
           "  -p, --policy P        a policy (repeatable; default off-page, off, linux,\n"
           "                        linux-2013, adaptive, oracle)\n"
           "  -s, --size KIB        a call size (repeatable, 4..1024, a multiple of 4)\n"
           "      --pattern NAME    sequential, random, strided, backward, interleaved,\n"
           "                        mixed, sql-point or sql-range (SQLite queries\n"
           "                        through the harness; repeatable; default all)\n"
           "      --file-size SIZE  the file of the one-file patterns (K/M suffixes;\n"
           "                        256K..64M, a multiple of every call size;\n"
           "                        default 4M, --full 16M)\n"
           "      --seed N          the random and mixed orders (default 1)\n"
           "      --cpu-us US       the reader's processing time after each call of\n"
           "                        the file patterns (default 0), virtual: the\n"
           "                        figures are the calls' waits without it\n"
           "      --sync-windows    read-ahead windows beyond a call waited for at\n"
           "                        the marker (UBJ_MOUNT_RA_SYNC; default:\n"
           "                        asynchronous, met when the reader gets there)\n"
           "      --csv FILE        the cells as CSV\n"
           "      --json FILE       the cells as JSON\n"
           "      --plots DIR       gnuplot SVGs per call size and device into DIR\n"
           "  -q, --quiet           no progress lines\n"
           "      --help            print this help\n\n"
           "Exit status: 0 done, 1 a run failed, 2 usage error.\n", tools_prog);
}

/* ra_parse_one -- option c with arg (tools_bout_study_opts's callback; ctx:
 * the struct ra_args); 0, or an exit code. */
static int ra_parse_one(void *ctx, int c, const char *arg)
{
    struct ra_args *a = ctx;
    char *end;
    unsigned long v;
    switch (c) {
    case 'd':
        for (unsigned i = 0; i < a->ndev; i++)
            if (strcmp(a->devs[i][1], arg) == 0)
                return 0;   /* named twice: one column */
        if (a->ndev == RA_MAXV)
            return tools_usage_err("at most %u devices", RA_MAXV);
        a->devs[a->ndev][0] = a->devs[a->ndev][1] = arg;
        a->ndev++;
        return 0;
    case 'p':
        for (unsigned i = 0; i < a->npol; i++)
            if (strcmp(a->pols[i], arg) == 0)
                return 0;
        if (a->npol == RA_MAXV)
            return tools_usage_err("at most %u policies", RA_MAXV);
        a->pols[a->npol++] = arg;
        return 0;
    case 's':
        v = strtoul(arg, &end, 10);
        if (*end != '\0' || v < 4 || v > 1024 || v % 4 != 0 || a->nsize == RA_MAXV)
            return tools_usage_err("bad --size '%s' (KiB: 4..1024, a multiple of 4)", arg);
        for (unsigned i = 0; i < a->nsize; i++)
            if (a->sizes[i] == (uint32_t)v * 1024)
                return 0;
        a->sizes[a->nsize++] = (uint32_t)v * 1024;
        return 0;
    case 'P':
        for (int p = 0; p < P_NR; p++)
            if (strcmp(arg, ra_pat_names[p]) == 0) {
                a->pats[p] = true;
                return 0;
            }
        return tools_usage_err("unknown --pattern '%s'", arg);
    case 'F':
        if (tools_parse_size(arg, &a->file_bytes) < 0 || a->file_bytes < 256 * 1024 ||
            a->file_bytes > 64ull << 20 || a->file_bytes % 4096 != 0)
            return tools_usage_err("bad --file-size '%s' (256K..64M, whole blocks)", arg);
        return 0;
    case 'f': a->full = true; return 0;
    case 'W': a->sync_windows = true; return 0;
    case 'C':
        v = strtoul(arg, &end, 10);
        if (*end != '\0' || end == arg || v > 1000000)
            return tools_usage_err("bad --cpu-us '%s' (0..1000000)", arg);
        a->cpu_ns = (uint64_t)v * 1000;
        return 0;
    default:
        return tools_usage_err("unknown option");
    }
}

/* ra_parse -- the options, then the defaults.  -1, or an exit code. */
static int ra_parse(int argc, char **argv, struct ra_args *a)
{
    static const struct option lo[] = {
        { "full", no_argument, NULL, 'f' }, { "device", required_argument, NULL, 'd' },
        { "policy", required_argument, NULL, 'p' }, { "size", required_argument, NULL, 's' },
        { "pattern", required_argument, NULL, 'P' },
        { "file-size", required_argument, NULL, 'F' },
        { "cpu-us", required_argument, NULL, 'C' },
        { "sync-windows", no_argument, NULL, 'W' },
        TOOLS_BOUT_STUDY_LONGOPTS,
    };
    int rc = tools_bout_study_opts(argc, argv, "d:p:s:q", lo, ra_usage, ra_parse_one, a,
                                   &a->io);
    if (rc >= 0)
        return rc;
    for (unsigned i = 0; a->ndev == 0 && i < sizeof ra_dev_default / sizeof ra_dev_default[0]; i++)
        a->devs[i][0] = ra_dev_default[i][0], a->devs[i][1] = ra_dev_default[i][1];
    if (a->ndev == 0)
        a->ndev = sizeof ra_dev_default / sizeof ra_dev_default[0];
    for (unsigned i = 0; a->npol == 0 && i < sizeof ra_pol_default / sizeof ra_pol_default[0]; i++)
        a->pols[i] = ra_pol_default[i];
    if (a->npol == 0)
        a->npol = sizeof ra_pol_default / sizeof ra_pol_default[0];
    static const uint32_t full[] = { 4, 8, 16, 32, 64, 128 }, small[] = { 4, 128 };
    for (unsigned i = 0; a->nsize == 0 && i < (a->full ? 6u : 2u); i++)
        a->sizes[i] = (a->full ? full[i] : small[i]) * 1024;
    if (a->nsize == 0)
        a->nsize = a->full ? 6 : 2;
    bool any = false;
    for (int p = 0; p < P_NR; p++)
        any = any || a->pats[p];
    for (int p = 0; !any && p < P_NR; p++)
        a->pats[p] = true;
    if (a->file_bytes == 0)
        a->file_bytes = a->full ? 16u << 20 : 4u << 20;
    for (unsigned z = 0; z < a->nsize; z++)   /* every pattern reads whole calls */
        if (a->sizes[z] > a->file_bytes || a->file_bytes % a->sizes[z] != 0)
            return tools_usage_err("--file-size %llu KiB is not a multiple of the call "
                                   "size %u KiB (-s): every pattern reads whole calls",
                                   (unsigned long long)(a->file_bytes >> 10),
                                   a->sizes[z] / 1024);
    for (unsigned d = 0; d < a->ndev; d++) {   /* a bad layer or profile: now */
        int drc = tools_dev_trial(a->devs[d][0]);
        if (drc < 0)
            return tools_usage_err("device '%s': %s", a->devs[d][0], tools_libmsg(drc));
    }
    for (unsigned p = 0; p < a->npol; p++) {
        struct ubj_config cfg = { .readahead = a->pols[p], .ra_future = ra_future };
        struct ubj_bdev *ram;
        struct ubj_fs *fs = NULL;
        if (ubj_bdev_ram_create(64, &ram) == 0) {   /* an unformatted device: the */
            int mrc = ubj_mount(ram, &cfg, &fs);     /* policy is checked first */
            ubj_bdev_destroy(ram);
            if (mrc == -EINVAL && strstr(ubj_errormsg(), "read-ahead") != NULL)
                return tools_usage_err("bad --policy '%s': %s", a->pols[p], ubj_errormsg());
        }
    }
    return -1;
}

/* ra_grid -- every cell, in pattern, size, device, policy order, into
 * *cells (*n of them).  0 or an exit code. */
static int ra_grid(const struct ra_args *a, struct ra_cell **cells, size_t *n)
{
    size_t total = 0, k = 0;
    size_t npol_sql = 0;   /* SQLite: no oracle */
    for (unsigned q = 0; q < a->npol; q++)
        npol_sql += strcmp(a->pols[q], "oracle") != 0;
    for (int p = 0; p < P_NR; p++)
        total += !a->pats[p] ? 0 : RA_SQL(p) ? (size_t)a->ndev * npol_sql
                                             : (size_t)a->nsize * a->ndev * a->npol;
    *cells = calloc(total, sizeof **cells);
    if (*cells == NULL)
        return TOOLS_EXIT_ERR;
    for (int p = 0; p < P_NR; p++)
        for (unsigned z = 0; a->pats[p] && z < (RA_SQL(p) ? 1 : a->nsize); z++) {
            struct ra_set s = { .pat = (enum ra_pat)p, .csize = a->sizes[z],
                                .cpu_ns = a->cpu_ns,
                                .mflags = a->sync_windows ? UBJ_MOUNT_RA_SYNC : 0 };
            int rc = RA_SQL(p) ? 0 : ra_image(&s, a->file_bytes);
            if (rc == 0 && !RA_SQL(p))
                rc = ra_calls(&s, a->io.seed);
            for (unsigned d = 0; rc == 0 && d < a->ndev; d++)
                for (unsigned q = 0; rc == 0 && q < a->npol; q++) {
                    if (RA_SQL(p) && strcmp(a->pols[q], "oracle") == 0)
                        continue;   /* no future through SQLite */
                    struct ra_cell *c = &(*cells)[k++];
                    *c = (struct ra_cell){ .dev = a->devs[d][1], .pol = a->pols[q],
                                           .pat = (enum ra_pat)p,
                                           .csize = RA_SQL(p) ? 4096 : a->sizes[z] };
                    rc = RA_SQL(p) ? ra_sql_run(a->devs[d][0], a->pols[q], (enum ra_pat)p, c)
                                   : ra_cell_run(&s, a->devs[d][0], a->pols[q], c);
                    if (rc == 0 && !a->io.quiet)
                        fprintf(stderr, "[%zu/%zu] %s %s %u KiB %s: %.2f ms, %.3f mJ\n", k,
                                total, c->dev, ra_pat_names[p], a->sizes[z] / 1024, c->pol,
                                (double)c->total_ns / 1e6, c->energy_j * 1e3);
                }
            ra_set_free(&s);
            if (rc < 0) {
                tools_err("%s %u KiB: %s", ra_pat_names[p],
                          a->sizes[z] / 1024, tools_libmsg(rc));
                *n = k;
                return TOOLS_EXIT_ERR;
            }
        }
    *n = k;
    return TOOLS_EXIT_OK;
}

/* What the file writers get (tools_bout_study_files). */
struct ra_out { const struct ra_args *a; const struct ra_cell *c; size_t n; };

static int ra_wcsv(const char *path, void *ctx)
{
    const struct ra_out *o = ctx;
    return ra_csv(path, o->c, o->n);
}

static int ra_wjson(const char *path, void *ctx)
{
    const struct ra_out *o = ctx;
    return ra_json(path, o->a, o->c, o->n);
}

static int ra_wplots(const char *dir, void *ctx)
{
    const struct ra_out *o = ctx;
    return ra_plots(dir, o->a, o->c, o->n);
}

/* ra_outputs -- table, targets, files.  An exit code. */
static int ra_outputs(const struct ra_args *a, const struct ra_cell *c, size_t n)
{
    ra_table_head(stdout);
    for (size_t i = 0; i < n; i++)
        ra_table_row(stdout, &c[i]);
    putchar('\n');
    ra_check_nand(stdout, a, c, n);
    ra_check_seq(stdout, a, c, n);
    ra_check_adaptive(stdout, a, c, n);
    struct ra_out o = { a, c, n };
    int rc = tools_bout_study_files("bench readahead", a->io.csv, a->io.json, a->io.plots, ra_wcsv,
                                    ra_wjson, ra_wplots, &o);
    return rc < 0 ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}

/* tools_bench_readahead_main -- `ubjfs bench readahead`. */
int tools_bench_readahead_main(int argc, char **argv)
{
    struct ra_args a = { .io.seed = 1 };
    int rc = ra_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    rc = tools_bout_study_preflight(&a.io);   /* before a long run */
    if (rc != TOOLS_EXIT_OK)
        return rc;
    struct ra_cell *cells = NULL;
    size_t n = 0;
    rc = ra_grid(&a, &cells, &n);
    if (rc == TOOLS_EXIT_OK)
        rc = ra_outputs(&a, cells, n);
    free(cells);
    return rc;
}
