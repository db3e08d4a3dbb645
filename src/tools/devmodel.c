/*
 * devmodel.c -- what `ubjfs mount` and `ubjfs bench` share about timed
 * device models (include/ubjfs/model.h): splitting a --device spec into
 * its model layers and its leaf, a trial open that catches a bad spec or
 * profile before anything is touched, stacking the model layers over a
 * device the tool opened itself, marks of modeled time and energy, and
 * the statistics report.
 *
 * A tool's --device SPEC is a ubj_bdev_open_spec string.  The tool opens
 * the leaf itself (the image file of a mount; the RAM device or the
 * file:PATH of a benchmark, which it sizes, creates and removes as
 * before), then puts the model layers over it with tools_dev_wrap.  Every
 * model of one stack shares one clock, of the kind the tool asks for
 * (virtual for benchmarks, real for mounts) unless a layer's clock= key
 * says otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ubjfs/model.h"
#include "tools.h"

/* tools_dev_split -- cut `spec` into its model layers and its leaf. */
int tools_dev_split(const char *spec, char **models, const char **leaf)
{
    const char *p = spec, *lf = NULL;
    *models = NULL;
    *leaf = NULL;
    if (spec == NULL || spec[0] == '\0')
        return -EINVAL;
    while (p != NULL) {
        const char *at = strchr(p, '@');
        if (strncmp(p, "file:", 5) == 0) {   /* PATH runs to the end */
            if (p[5] == '\0')
                return -EINVAL;
            lf = p;
            break;
        }
        size_t len = at ? (size_t)(at - p) : strlen(p);
        if (len == 0)
            return -EINVAL;
        if (len == 3 && strncmp(p, "ram", 3) == 0) {
            if (at != NULL)
                return -EINVAL;              /* a leaf must come last */
            lf = p;
            break;
        }
        p = at ? at + 1 : NULL;
    }
    size_t mlen = lf ? (size_t)(lf - spec) : strlen(spec);
    if (mlen > 0 && spec[mlen - 1] == '@')
        mlen--;
    *models = strndup(spec, mlen);
    if (*models == NULL)
        return -ENOMEM;
    *leaf = lf;
    return 0;
}

/* tools_dev_parse -- split, try and take the file leaf of a --device. */
int tools_dev_parse(const char *spec, char **models, const char **file)
{
    const char *leaf;
    free(*models);
    *models = NULL;
    int rc = tools_dev_split(spec, models, &leaf);
    if (rc == -ENOMEM) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    if (rc < 0)
        return tools_usage_err("invalid --device '%s' (ram, file:PATH, or model "
                               "and queue layers over them, e.g. nand:slc@ram, "
                               "queue:clook@hdd:modern7200)", spec);
    rc = tools_dev_trial(*models);
    if (rc < 0)
        return tools_usage_err("invalid --device '%s': %s", spec, tools_libmsg(rc));
    *file = leaf != NULL && strncmp(leaf, "file:", 5) == 0 ? leaf + 5 : NULL;
    return -1;
}

/* tools_dev_trial -- open the model layers over a small RAM device and
 * close them again: a bad layer or profile is caught up front.  0, or the
 * error (ubj_errormsg() says which layer). */
int tools_dev_trial(const char *models)
{
    struct ubj_bdev *ram, *top;
    if (models == NULL || models[0] == '\0')
        return 0;
    int rc = ubj_bdev_ram_create(1024, &ram);
    if (rc < 0)
        return rc;
    struct ubj_spec_opts o = { .clock_kind = UBJ_CLOCK_VIRTUAL };
    rc = ubj_bdev_open_spec(models, ram, &o, &top);
    if (rc < 0) {
        ubj_bdev_destroy(ram);
        return rc;
    }
    ubj_bdev_destroy(top);
    return 0;
}

/* tools_dev_wrap -- put the model layers over `leaf` (owned by the stack
 * on success; untouched on failure).  "" = no layers: *out = leaf. */
int tools_dev_wrap(const char *models, enum ubj_clock_kind kind,
                   struct ubj_bdev *leaf, struct ubj_bdev **out)
{
    if (models == NULL || models[0] == '\0') {
        *out = leaf;
        return 0;
    }
    struct ubj_spec_opts o = { .clock_kind = kind };
    return ubj_bdev_open_spec(models, leaf, &o, out);
}

/* tools_dev_mark -- the model's clock time and energy now (m->model is
 * false, and the rest 0, when the stack has no model). */
void tools_dev_mark(struct ubj_bdev *dev, struct tools_dev_mark *m)
{
    struct ubj_bdev *md = dev ? ubj_model_find(dev) : NULL;
    struct ubj_model_stats s;
    memset(m, 0, sizeof *m);
    if (md == NULL || ubj_model_stats_get(md, &s) < 0)
        return;
    m->model = true;
    m->ns = ubj_clock_now(ubj_model_clock(md));
    m->energy_j = s.energy_j;
    m->bytes_written = s.bytes_written;
}

/* tools_dev_now -- the model's clock time (0 without a model). */
uint64_t tools_dev_now(struct ubj_bdev *dev)
{
    struct ubj_bdev *md = dev ? ubj_model_find(dev) : NULL;
    return md ? ubj_clock_now(ubj_model_clock(md)) : 0;
}

/* dev_kind -- the kind of the first model layer of `spec` ("hdd", ...). */
static const char *dev_kind(const char *spec)
{
    static const char *const kinds[] = { "hdd", "ssd", "nand" };
    for (const char *p = spec; p != NULL && *p != '\0';) {
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            size_t n = strlen(kinds[i]);
            if (strncmp(p, kinds[i], n) == 0 && p[n] == ':')
                return kinds[i];
        }
        if (strncmp(p, "file:", 5) == 0)
            break;
        p = strchr(p, '@');
        p = p ? p + 1 : NULL;
    }
    return "";
}

/* dev_line -- one "name value" line of the report. */
static void dev_line(FILE *f, const char *name, const char *fmt, double v)
{
    fprintf(f, "%-20s ", name);
    fprintf(f, fmt, v);
    fputc('\n', f);
}

/* dev_counts -- the request and byte lines every report has. */
static void dev_counts(FILE *f, uint64_t reads, uint64_t writes, uint64_t flushes,
                       uint64_t bytes_read, uint64_t bytes_written)
{
    dev_line(f, "reads", "%.0f", (double)reads);
    dev_line(f, "writes", "%.0f", (double)writes);
    dev_line(f, "flushes", "%.0f", (double)flushes);
    dev_line(f, "bytes_read", "%.0f", (double)bytes_read);
    dev_line(f, "bytes_written", "%.0f", (double)bytes_written);
}

/* dev_report_flash -- the NAND lines. */
static void dev_report_flash(FILE *f, const struct ubj_model_stats *s)
{
    dev_line(f, "flash_reads", "%.0f", (double)s->flash_reads);
    dev_line(f, "flash_programs", "%.0f", (double)s->flash_programs);
    dev_line(f, "flash_erases", "%.0f", (double)s->flash_erases);
    dev_line(f, "gc_runs", "%.0f", (double)s->gc_runs);
    dev_line(f, "gc_copies", "%.0f", (double)s->gc_copies);
    dev_line(f, "driver_s", "%.6f", (double)s->driver_ns / 1e9);
    fprintf(f, "%-20s %llu %.2f %llu\n", "erase_min_mean_max",
            (unsigned long long)s->erase_min, s->erase_mean,
            (unsigned long long)s->erase_max);
}

/* dev_report_disk -- the HDD lines. */
static void dev_report_disk(FILE *f, const struct ubj_model_stats *s)
{
    dev_line(f, "seeks", "%.0f", (double)s->seeks);
    dev_line(f, "seek_s", "%.6f", (double)s->seek_ns / 1e9);
    dev_line(f, "rotation_s", "%.6f", (double)s->rotation_ns / 1e9);
    dev_line(f, "transfer_s", "%.6f", (double)s->transfer_ns / 1e9);
    dev_line(f, "overhead_s", "%.6f", (double)s->overhead_ns / 1e9);
    dev_line(f, "buffer_hits", "%.0f", (double)s->buffer_hits);
    dev_line(f, "destages", "%.0f", (double)s->destages);
}

/* tools_fs_report -- see tools.h. */
void tools_fs_report(FILE *f, struct ubj_bdev *dev, const struct ubj_fs_stats *fst)
{
    if (dev != NULL && ubj_model_find(dev) == NULL) {   /* no model: the device */
        struct ubj_bdev_stats b;
        ubj_bdev_stats_get(dev, &b);
        fprintf(f, "%-20s %s\n", "device", "image (no model)");
        fprintf(f, "%-20s %s\n", "clock", "real");
        dev_counts(f, b.reads, b.writes, b.flushes, b.bytes_read, b.bytes_written);
        dev_line(f, "errors", "%.0f", (double)b.errors);
    }
    if (fst == NULL)
        return;
    dev_line(f, "cache_hits", "%.0f", (double)fst->cache_hits);
    dev_line(f, "cache_misses", "%.0f", (double)fst->cache_misses);
    dev_line(f, "cache_evictions", "%.0f", (double)fst->cache_evictions);
    dev_line(f, "writeback_blocks", "%.0f", (double)fst->writeback_blocks);
    dev_line(f, "fs_bytes_data", "%.0f", (double)fst->bytes_data);
    dev_line(f, "fs_bytes_metadata", "%.0f", (double)fst->bytes_metadata);
    dev_line(f, "fs_bytes_journal", "%.0f", (double)fst->bytes_journal);
    dev_line(f, "fs_bytes_checkpoint", "%.0f", (double)fst->bytes_checkpoint);
    dev_line(f, "commits", "%.0f", (double)fst->commits);
    dev_line(f, "checkpoints", "%.0f", (double)fst->checkpoints);
    dev_line(f, "fs_dev_flushes", "%.0f", (double)fst->dev_flushes);
    if (fst->nvm_persists > 0 || fst->nvm_bytes > 0) {   /* mode ubj */
        dev_line(f, "nvm_bytes", "%.0f", (double)fst->nvm_bytes);
        dev_line(f, "nvm_persists", "%.0f", (double)fst->nvm_persists);
        dev_line(f, "cow_copies", "%.0f", (double)fst->cow_copies);
    }
    if (fst->ra_blocks > 0) {   /* a read-ahead policy read ahead */
        const struct { const char *k; double v; } ra[] = {
            { "ra_blocks", (double)fst->ra_blocks }, { "ra_requests", (double)fst->ra_requests },
            { "ra_used", (double)fst->ra_used }, { "ra_unused", (double)fst->ra_unused },
            { "ra_late", (double)fst->ra_late },
            { "ra_unused_bytes", (double)fst->ra_unused_bytes },
        };
        for (size_t i = 0; i < sizeof ra / sizeof ra[0]; i++)
            dev_line(f, ra[i].k, "%.0f", ra[i].v);
        dev_line(f, "ra_energy_j", "%.9f", fst->ra_energy_j);
        dev_line(f, "ra_unused_energy_j", "%.9f", fst->ra_unused_energy_j);
    }
}

/* tools_dev_report -- the statistics of the model in `dev`'s stack as
 * "name value" lines; fst (may be NULL) adds the NVM cost model's.
 * 0, or -EINVAL when the stack has no model (nothing printed). */
int tools_dev_report(FILE *f, struct ubj_bdev *dev, const char *spec,
                     const struct ubj_fs_stats *fst)
{
    struct ubj_bdev *md = dev ? ubj_model_find(dev) : NULL;
    struct ubj_model_stats s;
    if (md == NULL || ubj_model_stats_get(md, &s) < 0)
        return -EINVAL;
    enum ubj_clock_kind ck = ubj_clock_kind(ubj_model_clock(md));
    const char *kind = dev_kind(spec);
    fprintf(f, "%-20s %s\n", "device", spec);
    fprintf(f, "%-20s %s\n", "clock", ck == UBJ_CLOCK_REAL ? "real" : "virtual");
    dev_line(f, "elapsed_s", "%.6f", (double)s.elapsed_ns / 1e9);
    dev_counts(f, s.reads, s.writes, s.flushes, s.bytes_read, s.bytes_written);
    dev_line(f, "async_requests", "%.0f", (double)s.async_requests);
    dev_line(f, "busy_s", "%.6f", (double)s.busy_ns / 1e9);
    dev_line(f, "utilization_pct", "%.2f",
             s.elapsed_ns ? 100.0 * (double)s.busy_ns / (double)s.elapsed_ns : 0.0);
    dev_line(f, "queue_s", "%.6f", (double)s.queue_ns / 1e9);
    dev_line(f, "service_mean_us", "%.1f", (double)s.service_mean_ns / 1e3);
    dev_line(f, "service_p99_us", "%.1f", (double)s.service_p99_ns / 1e3);
    dev_line(f, "response_mean_us", "%.1f", (double)s.response_mean_ns / 1e3);
    dev_line(f, "response_p99_us", "%.1f", (double)s.response_p99_ns / 1e3);
    dev_line(f, "response_max_us", "%.1f", (double)s.response_max_ns / 1e3);
    if (strcmp(kind, "hdd") == 0)
        dev_report_disk(f, &s);
    if (strcmp(kind, "nand") == 0)
        dev_report_flash(f, &s);
    dev_line(f, "energy_active_j", "%.6f", s.energy_active_j);
    dev_line(f, "energy_idle_j", "%.6f", s.energy_idle_j);
    dev_line(f, "energy_j", "%.6f", s.energy_j);
    if (fst != NULL && (fst->nvm_model_ns > 0 || fst->nvm_model_energy_j > 0)) {
        dev_line(f, "nvm_model_s", "%.6f", (double)fst->nvm_model_ns / 1e9);
        dev_line(f, "nvm_model_energy_j", "%.6f", fst->nvm_model_energy_j);
    }
    return 0;
}
