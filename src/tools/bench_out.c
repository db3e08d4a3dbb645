/*
 * bench_out.c -- what `ubjfs bench run` and the headline experiment print
 * and write (bench_out.h): the results table, the ratio table, CSV, JSON
 * and the gnuplot data, script and SVG plots.
 *
 * Rows keep the order they were run in; workloads, modes and devices are
 * listed in order of first appearance.  Nothing here reads a clock, so the
 * CSV of a virtual-clock run depends only on the counters (the
 * determinism test compares two of them byte for byte).  The column and
 * field names are documented in docs/TOOLS.md; a change here changes
 * TOOLS_BOUT_SCHEMA.
 *
 * Storage bytes: data + metadata + journal are every write to the device;
 * checkpoint is the part of data + metadata that checkpoints wrote home,
 * so the table says so and the bytes plot never stacks it on the others.
 * gnuplot runs in a process group of its own and is killed (the whole
 * group) when it has not finished after TOOLS_BOUT_GNUPLOT_S seconds.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench_out.h"
#include "ubjfs/mode.h"

#define BOUT_MIB (1024.0 * 1024.0)
#define BOUT_PATH 4096

enum bout_key { BOUT_WORKLOAD, BOUT_MODE, BOUT_DEVICE };

static const char *const bout_opnames[BH_OP_NR] = {
    "create", "unlink", "mkdir", "rmdir", "open", "read", "write", "append",
    "fsync", "stat", "rename", "readdir", "other",
};


/* How long gnuplot may take (ms) before it is killed; a variable so that
 * the tests can shorten it. */
static unsigned bout_gnuplot_ms = TOOLS_BOUT_GNUPLOT_S * 1000u;

/* tools_bout_opname -- the lower-case name of operation kind k. */
const char *tools_bout_opname(enum bh_opkind k)
{
    return (unsigned)k < BH_OP_NR ? bout_opnames[k] : "?";
}

/* bout_field -- the workload, mode or device of row r. */
static const char *bout_field(const struct tools_bout_row *r, enum bout_key k)
{
    return k == BOUT_WORKLOAD ? r->r.workload : k == BOUT_MODE ? r->r.mode : r->r.device;
}

/* bout_keys -- the distinct values of field k in order of first
 * appearance, into out[0..n); returns how many. */
static size_t bout_keys(const struct tools_bout_row *rows, size_t n, enum bout_key k,
                        const char **out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = bout_field(&rows[i], k);
        size_t j = 0;
        while (j < m && strcmp(out[j], s) != 0)
            j++;
        if (j == m)
            out[m++] = s;
    }
    return m;
}

/* bout_find -- the first row of (workload, mode, device), or NULL. */
static const struct tools_bout_row *bout_find(const struct tools_bout_row *rows, size_t n,
                                              const char *w, const char *m, const char *d)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].r.workload, w) == 0 && strcmp(rows[i].r.mode, m) == 0 &&
            strcmp(rows[i].r.device, d) == 0)
            return &rows[i];
    return NULL;
}

/* bout_width -- the widest value of field k, at least `min`. */
static int bout_width(const struct tools_bout_row *rows, size_t n, enum bout_key k, int min)
{
    int w = min;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(bout_field(&rows[i], k));
        if (l > w)
            w = l;
    }
    return w;
}

/* bout_ferr -- 0, or -EIO if stream f saw an error. */
static int bout_ferr(FILE *f)
{
    return ferror(f) ? -EIO : 0;
}

/* tools_bout_table -- the results table on f. */
int tools_bout_table(FILE *f, const struct tools_bout_row *rows, size_t n)
{
    int ww = bout_width(rows, n, BOUT_WORKLOAD, 8);
    int wd = bout_width(rows, n, BOUT_DEVICE, 6);
    int wm = bout_width(rows, n, BOUT_MODE, 4);
    fputs("(MiB written: data + meta + jrnl = all storage writes; ckpt_MiB is the part of "
          "data + meta that checkpoints wrote home, not an addition)\n", f);
    fputs("(locked%: of the device time reads and cache misses' victim writes "
          "were waited for, the share with the mount lock held)\n", f);
    fprintf(f, "%-*s %-*s %-*s %8s %10s %11s %8s %8s %9s %9s %9s %9s %9s %8s %9s %6s %8s\n",
            ww, "workload", wd, "device", wm, "mode", "txns", "elapsed_s", "txn/s",
            "p50_ms", "p99_ms", "data_MiB", "meta_MiB", "jrnl_MiB", "ckpt_MiB",
            "nvm_MiB", "flushes", "energy_J", "hit%", "locked%");
    for (size_t i = 0; i < n; i++) {
        const struct bh_result *r = &rows[i].r;
        char lk[16] = "-";
        uint64_t held = r->read_wait_locked_ns + r->victim_wait_ns;
        if (held + r->read_wait_unlocked_ns > 0)
            snprintf(lk, sizeof lk, "%.1f",
                     100.0 * (double)held / (double)(held + r->read_wait_unlocked_ns));
        fprintf(f, "%-*s %-*s %-*s %8llu %10.3f %11.1f %8.3f %8.3f %9.2f %9.2f %9.2f "
                "%9.2f %9.2f %8llu %9.3f %6.1f %8s\n",
                ww, r->workload, wd, r->device, wm, r->mode, (unsigned long long)r->ops,
                (double)r->elapsed_ns / 1e9, r->ops_per_s,
                (double)r->lat_p50_ns / 1e6, (double)r->lat_p99_ns / 1e6,
                (double)r->bytes_data / BOUT_MIB, (double)r->bytes_metadata / BOUT_MIB,
                (double)r->bytes_journal / BOUT_MIB, (double)r->bytes_checkpoint / BOUT_MIB,
                (double)r->nvm_bytes / BOUT_MIB, (unsigned long long)r->dev_flushes,
                r->energy_dev_j + r->energy_nvm_j, r->hit_ratio * 100.0, lk);
    }
    return bout_ferr(f);
}

/* tools_bout_ratios -- num over den per (workload, device). */
size_t tools_bout_ratios(const struct tools_bout_row *rows, size_t n,
                         const char *num, const char *den,
                         struct tools_bout_ratio *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++) {
        const struct bh_result *a = &rows[i].r;
        if (strcmp(a->mode, num) != 0 || bout_find(rows, n, a->workload, num, a->device) != &rows[i])
            continue;
        const struct tools_bout_row *b = bout_find(rows, n, a->workload, den, a->device);
        if (b == NULL)
            continue;
        out[k].workload = a->workload;
        out[k].device = a->device;
        out[k].thr = b->r.ops_per_s > 0 ? a->ops_per_s / b->r.ops_per_s : NAN;
        out[k].elapsed = b->r.elapsed_ns > 0 ? (double)a->elapsed_ns / (double)b->r.elapsed_ns
                                             : NAN;
        k++;
    }
    return k;
}

/* bout_usable -- is v a ratio a mean may use? */
static bool bout_usable(double v)
{
    return isfinite(v) && v > 0;
}

/* tools_bout_mean -- geometric and arithmetic means of the ratios. */
void tools_bout_mean(const struct tools_bout_ratio *r, size_t n, struct tools_bout_mean *m)
{
    double lt = 0, le = 0, st = 0, se = 0;
    memset(m, 0, sizeof *m);
    for (size_t i = 0; i < n; i++) {
        if (!bout_usable(r[i].thr) || !bout_usable(r[i].elapsed))
            continue;
        lt += log(r[i].thr);
        le += log(r[i].elapsed);
        st += r[i].thr;
        se += r[i].elapsed;
        m->n++;
    }
    if (m->n == 0) {
        m->thr_geo = m->el_geo = m->thr_arith = m->el_arith = NAN;
        return;
    }
    m->thr_geo = exp(lt / (double)m->n);
    m->el_geo = exp(le / (double)m->n);
    m->thr_arith = st / (double)m->n;
    m->el_arith = se / (double)m->n;
}

/* bout_ratio_cell -- "1.850 (+85%)" into buf, or "-" when v is unusable;
 * small ratios keep 3 significant digits ("0.00412 (-99.59%)") so that
 * nothing but a true 0 reads as -100%, and a change under 0.5% keeps a
 * decimal ("0.997 (-0.3%)", never "-0%"). */
static void bout_ratio_cell(double v, char *buf, size_t len)
{
    double pct = (v - 1.0) * 100.0;
    if (!bout_usable(v))
        snprintf(buf, len, "-");
    else if (v < 0.01)
        snprintf(buf, len, "%.3g (%+.2f%%)", v, pct);
    else if (fabs(pct) < 0.5)
        snprintf(buf, len, "%.3f (%+.1f%%)", v, pct);
    else
        snprintf(buf, len, "%.3f (%+.0f%%)", v, pct);
}

/* bout_ratio_line -- one line of the ratio table. */
static void bout_ratio_line(FILE *f, int ww, int wd, const char *w, const char *d,
                            const double *v, size_t nv)
{
    fprintf(f, "%-*s %-*s", ww, w, wd, d);
    for (size_t i = 0; i < nv; i++) {
        char cell[48];
        bout_ratio_cell(v[i], cell, sizeof cell);
        fprintf(f, " %20s", cell);
    }
    fputc('\n', f);
}

/* bout_ratio_body -- the per-pair lines; fills the means. */
static int bout_ratio_body(FILE *f, const struct tools_bout_row *rows, size_t n,
                           const char *num, const char *const *dens, size_t ndens,
                           int ww, int wd, struct tools_bout_mean *means)
{
    struct tools_bout_ratio *rt = calloc(n ? n : 1, sizeof *rt * ndens);
    size_t *cnt = calloc(ndens, sizeof *cnt);
    if (rt == NULL || cnt == NULL) {
        free(rt);
        free(cnt);
        return -ENOMEM;
    }
    for (size_t j = 0; j < ndens; j++) {
        cnt[j] = tools_bout_ratios(rows, n, num, dens[j], rt + j * n, n);
        tools_bout_mean(rt + j * n, cnt[j], &means[j]);
    }
    for (size_t i = 0; i < n; i++) {
        const struct bh_result *a = &rows[i].r;
        if (strcmp(a->mode, num) != 0 || bout_find(rows, n, a->workload, num, a->device) != &rows[i])
            continue;
        double v[2 * 8];
        bool any = false;
        for (size_t j = 0; j < ndens && j < 8; j++) {
            v[2 * j] = v[2 * j + 1] = NAN;
            for (size_t k = 0; k < cnt[j]; k++)
                if (rt[j * n + k].workload == a->workload && rt[j * n + k].device == a->device) {
                    v[2 * j] = rt[j * n + k].thr;
                    v[2 * j + 1] = rt[j * n + k].elapsed;
                    any = true;
                }
        }
        if (any)
            bout_ratio_line(f, ww, wd, a->workload, a->device, v, 2 * (ndens < 8 ? ndens : 8));
    }
    free(rt);
    free(cnt);
    return 0;
}

/* tools_bout_ratio_modes -- the subject and baseline modes of the registry. */
size_t tools_bout_ratio_modes(const char **num, const char **dens, size_t max)
{
    const struct ubj_mode_info *s = NULL, *v[32];
    *num = ubj_mode_list(UBJ_MODE_F_SUBJECT, UBJ_MODE_ORDER_REGISTRY, &s, 1) ? s->name : "";
    size_t n = ubj_mode_list(UBJ_MODE_F_BASELINE, UBJ_MODE_ORDER_REGISTRY, v, 32);
    for (size_t i = 0; i < n && i < max && i < 32; i++)
        dens[i] = v[i]->name;
    return n < max ? n : max;
}

/* tools_bout_ratio_table -- num over each den, per pair, then the means. */
int tools_bout_ratio_table(FILE *f, const struct tools_bout_row *rows, size_t n,
                           const char *num, const char *const *dens, size_t ndens)
{
    struct tools_bout_mean means[8];
    struct tools_bout_ratio probe;
    size_t have = 0;
    if (ndens > 8)
        ndens = 8;
    for (size_t j = 0; j < ndens; j++)
        have += tools_bout_ratios(rows, n, num, dens[j], &probe, 1);
    if (have == 0)
        return 0;
    int ww = bout_width(rows, n, BOUT_WORKLOAD, 15);
    int wd = bout_width(rows, n, BOUT_DEVICE, 11);
    fprintf(f, "\nratios: thr = txn/s of %s / txn/s of the other mode (>1: %s faster);\n"
               "        time = elapsed time of %s / of the other mode (<1: %s finishes sooner)\n",
            num, num, num, num);
    fprintf(f, "%-*s %-*s", ww, "workload", wd, "device");
    for (size_t j = 0; j < ndens; j++) {
        char h[2][48];
        snprintf(h[0], sizeof h[0], "thr %s/%s", num, dens[j]);
        snprintf(h[1], sizeof h[1], "time %s/%s", num, dens[j]);
        fprintf(f, " %20s %20s", h[0], h[1]);
    }
    fputc('\n', f);
    int rc = bout_ratio_body(f, rows, n, num, dens, ndens, ww, wd, means);
    if (rc < 0)
        return rc;
    double g[16], a[16];
    for (size_t j = 0; j < ndens; j++) {
        g[2 * j] = means[j].thr_geo;
        g[2 * j + 1] = means[j].el_geo;
        a[2 * j] = means[j].thr_arith;
        a[2 * j + 1] = means[j].el_arith;
    }
    bout_ratio_line(f, ww, wd, "geometric mean", "(all pairs)", g, 2 * ndens);
    bout_ratio_line(f, ww, wd, "arithmetic mean", "(all pairs)", a, 2 * ndens);
    return bout_ferr(f);
}

/* ---- CSV ----------------------------------------------------------------- */

/* bout_csv_str -- s as a CSV field (quoted when it holds , " or a newline). */
static void bout_csv_str(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* tools_bout_csv -- header + one line per row. */
int tools_bout_csv(FILE *f, const struct tools_bout_row *rows, size_t n)
{
    fputs("workload,mode,device,nvm_profile,clock,scale,ops_asked,seed,cache_blocks,procs,"
          "ops,elapsed_ns,ops_per_s,lat_mean_ns,lat_p50_ns,lat_p99_ns,lat_max_ns,"
          "bytes_data,bytes_metadata,bytes_journal,bytes_checkpoint,bytes_device,"
          "nvm_bytes,dev_flushes,energy_dev_j,energy_nvm_j,hit_ratio,sync_ns,"
          "app_bytes_written,app_bytes_read,commits,checkpoints", f);
    for (int k = 0; k < BH_OP_NR; k++)
        fprintf(f, ",op_%s", bout_opnames[k]);
    for (int k = 0; k < BH_OP_NR; k++)
        fprintf(f, ",init_op_%s", bout_opnames[k]);
    fputs(",txn_overlap_max,read_wait_locked_ns,read_wait_unlocked_ns,victim_wait_ns\n", f);
    for (size_t i = 0; i < n; i++) {
        const struct bh_result *r = &rows[i].r;
        const char *s[5] = { r->workload, r->mode, r->device, r->nvm_profile, rows[i].clock };
        for (int k = 0; k < 5; k++) {
            bout_csv_str(f, s[k] != NULL ? s[k] : "");
            fputc(',', f);
        }
        fprintf(f, "%.9g,%llu,%llu,%u,%u,%llu,%llu,%.9g,%llu,%llu,%llu,%llu,"
                "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.9g,%.9g,%.9g",
                rows[i].scale, (unsigned long long)rows[i].ops_asked,
                (unsigned long long)rows[i].seed, r->cache_blocks, r->procs,
                (unsigned long long)r->ops, (unsigned long long)r->elapsed_ns, r->ops_per_s,
                (unsigned long long)r->lat_mean_ns, (unsigned long long)r->lat_p50_ns,
                (unsigned long long)r->lat_p99_ns, (unsigned long long)r->lat_max_ns,
                (unsigned long long)r->bytes_data, (unsigned long long)r->bytes_metadata,
                (unsigned long long)r->bytes_journal, (unsigned long long)r->bytes_checkpoint,
                (unsigned long long)r->bytes_device, (unsigned long long)r->nvm_bytes,
                (unsigned long long)r->dev_flushes, r->energy_dev_j, r->energy_nvm_j,
                r->hit_ratio);
        fprintf(f, ",%llu,%llu,%llu,%llu,%llu", (unsigned long long)r->sync_ns,
                (unsigned long long)r->app_bytes_written, (unsigned long long)r->app_bytes_read,
                (unsigned long long)r->commits, (unsigned long long)r->checkpoints);
        for (int k = 0; k < BH_OP_NR; k++)
            fprintf(f, ",%llu", (unsigned long long)r->opcount[k]);
        for (int k = 0; k < BH_OP_NR; k++)
            fprintf(f, ",%llu", (unsigned long long)r->init_opcount[k]);
        fprintf(f, ",%u,%llu,%llu,%llu\n", r->txn_overlap_max,
                (unsigned long long)r->read_wait_locked_ns,
                (unsigned long long)r->read_wait_unlocked_ns,
                (unsigned long long)r->victim_wait_ns);
    }
    return bout_ferr(f);
}

/* ---- JSON ---------------------------------------------------------------- */

/* bout_json_str -- s as a JSON string (NULL: null). */
static void bout_json_str(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* bout_json_num -- a double as a JSON number (not finite: null). */
static void bout_json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

/* bout_json_kstr -- `"key": "value", `. */
static void bout_json_kstr(FILE *f, const char *k, const char *v)
{
    fprintf(f, "\"%s\": ", k);
    bout_json_str(f, v);
    fputs(", ", f);
}

/* bout_json_ku64 -- `"key": number, ` of an integer. */
static void bout_json_ku64(FILE *f, const char *k, uint64_t v)
{
    fprintf(f, "\"%s\": %llu, ", k, (unsigned long long)v);
}

/* bout_json_kdbl -- `"key": number, ` of a double (null if not finite). */
static void bout_json_kdbl(FILE *f, const char *k, double v)
{
    fprintf(f, "\"%s\": ", k);
    bout_json_num(f, v);
    fputs(", ", f);
}

/* bout_json_config -- the "config" object. */
static void bout_json_config(FILE *f, const struct tools_bout_meta *m)
{
    fputs("  \"config\": {", f);
    bout_json_kstr(f, "command", m->command);
    bout_json_kstr(f, "clock", m->clock);
    bout_json_ku64(f, "seed", m->seed);
    if (m->procs != 0)
        bout_json_ku64(f, "procs", m->procs);
    else
        fputs("\"procs\": null, ", f);     /* each workload's own: results[].procs */
    bout_json_ku64(f, "think_ns", m->think_ns);
    bout_json_ku64(f, "cache_blocks", m->cache_blocks);
    bout_json_ku64(f, "image_blocks", m->image_blocks);
    bout_json_ku64(f, "commit_interval_ms", m->commit_interval_ms);
    bout_json_kstr(f, "nvm_profile", m->nvm_profile);
    bout_json_kstr(f, "readahead", m->readahead);
    bout_json_ku64(f, "op_cpu_ns", m->op_cpu_ns);
    fprintf(f, "\"final_sync\": %s, ", m->final_sync ? "true" : "false");
    fprintf(f, "\"serial\": %s, ", m->serial ? "true" : "false");
    fputs("\"wall_s\": ", f);
    bout_json_num(f, m->wall_s);
    fputs(",\n    \"requested\": {", f);
    bout_json_ku64(f, "procs", m->procs);
    fprintf(f, "\"think_set\": %s, ", m->think_set ? "true" : "false");
    bout_json_ku64(f, "cache_blocks", m->req_cache_blocks);
    bout_json_ku64(f, "image_blocks", m->req_image_blocks);
    bout_json_ku64(f, "commit_interval_ms", m->req_commit_interval_ms);
    fputs("\"nvm_profile\": ", f);
    bout_json_str(f, m->req_nvm_profile);
    fputs("}},\n", f);
}

/* bout_json_ops -- `"key": {"create": n, ...}` of an op-count array. */
static void bout_json_ops(FILE *f, const char *key, const uint64_t *v)
{
    fprintf(f, "\"%s\": {", key);
    for (int k = 0; k < BH_OP_NR; k++)
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", bout_opnames[k], (unsigned long long)v[k]);
    fputc('}', f);
}

/* bout_json_row -- one element of "results". */
static void bout_json_row(FILE *f, const struct tools_bout_row *row)
{
    const struct bh_result *r = &row->r;
    fputs("    {", f);
    bout_json_kstr(f, "workload", r->workload);
    bout_json_kstr(f, "mode", r->mode);
    bout_json_kstr(f, "device", r->device);
    bout_json_kstr(f, "nvm_profile", r->nvm_profile);
    bout_json_kstr(f, "clock", row->clock);
    bout_json_kdbl(f, "scale", row->scale);
    bout_json_ku64(f, "ops_asked", row->ops_asked);
    bout_json_ku64(f, "seed", row->seed);
    bout_json_ku64(f, "cache_blocks", r->cache_blocks);
    bout_json_ku64(f, "procs", r->procs);
    bout_json_ku64(f, "ops", r->ops);
    bout_json_ku64(f, "elapsed_ns", r->elapsed_ns);
    bout_json_kdbl(f, "ops_per_s", r->ops_per_s);
    bout_json_ku64(f, "lat_mean_ns", r->lat_mean_ns);
    bout_json_ku64(f, "lat_p50_ns", r->lat_p50_ns);
    bout_json_ku64(f, "lat_p99_ns", r->lat_p99_ns);
    bout_json_ku64(f, "lat_max_ns", r->lat_max_ns);
    bout_json_ku64(f, "bytes_data", r->bytes_data);
    bout_json_ku64(f, "bytes_metadata", r->bytes_metadata);
    bout_json_ku64(f, "bytes_journal", r->bytes_journal);
    bout_json_ku64(f, "bytes_checkpoint", r->bytes_checkpoint);
    bout_json_ku64(f, "bytes_device", r->bytes_device);
    bout_json_ku64(f, "nvm_bytes", r->nvm_bytes);
    bout_json_ku64(f, "dev_flushes", r->dev_flushes);
    bout_json_kdbl(f, "energy_dev_j", r->energy_dev_j);
    bout_json_kdbl(f, "energy_nvm_j", r->energy_nvm_j);
    bout_json_kdbl(f, "hit_ratio", r->hit_ratio);
    bout_json_ku64(f, "sync_ns", r->sync_ns);
    bout_json_ku64(f, "app_bytes_written", r->app_bytes_written);
    bout_json_ku64(f, "app_bytes_read", r->app_bytes_read);
    bout_json_ku64(f, "commits", r->commits);
    bout_json_ku64(f, "checkpoints", r->checkpoints);
    bout_json_ku64(f, "txn_overlap_max", r->txn_overlap_max);
    bout_json_ku64(f, "read_wait_locked_ns", r->read_wait_locked_ns);
    bout_json_ku64(f, "read_wait_unlocked_ns", r->read_wait_unlocked_ns);
    bout_json_ku64(f, "victim_wait_ns", r->victim_wait_ns);
    bout_json_ops(f, "opcount", r->opcount);
    fputs(", ", f);
    bout_json_ops(f, "init_opcount", r->init_opcount);
    fputs("}", f);
}

/* bout_json_pairs -- the "ratios" member for num over den. */
static int bout_json_pairs(FILE *f, const struct tools_bout_row *rows, size_t n,
                           const char *num, const char *den, bool last)
{
    struct tools_bout_ratio *rt = calloc(n ? n : 1, sizeof *rt);
    if (rt == NULL)
        return -ENOMEM;
    size_t k = tools_bout_ratios(rows, n, num, den, rt, n);
    struct tools_bout_mean m;
    tools_bout_mean(rt, k, &m);
    fprintf(f, "    \"%s/%s\": {\"pairs\": [", num, den);
    for (size_t i = 0; i < k; i++) {
        fputs(i ? ", {" : "{", f);
        bout_json_kstr(f, "workload", rt[i].workload);
        bout_json_kstr(f, "device", rt[i].device);
        bout_json_kdbl(f, "throughput", rt[i].thr);
        fputs("\"elapsed\": ", f);
        bout_json_num(f, rt[i].elapsed);
        fputc('}', f);
    }
    fputs("],\n      \"geometric_mean\": {", f);
    bout_json_kdbl(f, "throughput", m.thr_geo);
    fputs("\"elapsed\": ", f);
    bout_json_num(f, m.el_geo);
    fputs("}, \"arithmetic_mean\": {", f);
    bout_json_kdbl(f, "throughput", m.thr_arith);
    fputs("\"elapsed\": ", f);
    bout_json_num(f, m.el_arith);
    fprintf(f, "}}%s\n", last ? "" : ",");
    free(rt);
    return 0;
}

/* tools_bout_json -- the whole document. */
int tools_bout_json(FILE *f, const struct tools_bout_meta *meta,
                    const struct tools_bout_row *rows, size_t n)
{
    fprintf(f, "{\n  \"schema\": \"%s\",\n", TOOLS_BOUT_SCHEMA);
    bout_json_config(f, meta);
    fputs("  \"results\": [\n", f);
    for (size_t i = 0; i < n; i++) {
        bout_json_row(f, &rows[i]);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"ratios\": {\n", f);
    const char *num, *dens[8];
    size_t nd = tools_bout_ratio_modes(&num, dens, 8);
    for (size_t j = 0; j < nd; j++) {
        int rc = bout_json_pairs(f, rows, n, num, dens[j], j + 1 == nd);
        if (rc < 0)
            return rc;
    }
    fputs("  }\n}\n", f);
    return bout_ferr(f);
}

/* ---- plots --------------------------------------------------------------- */

/* bout_fopen -- fopen dir/name for writing; NULL (errno set) on failure. */
static FILE *bout_fopen(const char *dir, const char *name)
{
    char path[BOUT_PATH];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    return fopen(path, "w");
}

/* bout_fclose -- close f; 0 or a negative errno (write or close error). */
static int bout_fclose(FILE *f)
{
    int rc = bout_ferr(f);
    if (fclose(f) != 0 && rc == 0)
        rc = errno ? -errno : -EIO;
    return rc;
}

/* bout_safe -- s with every character outside [A-Za-z0-9.+-] as '-'. */
static void bout_safe(const char *s, char *out, size_t len)
{
    size_t i = 0;
    for (; s[i] != '\0' && i + 1 < len; i++) {
        char c = s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-';
        out[i] = ok ? c : '-';
    }
    out[i] = '\0';
}

/* bout_gp_quote -- s in a gnuplot or data-file double-quoted string
 * (" and \ replaced by '). */
static void bout_gp_quote(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fputc(*s == '"' || *s == '\\' ? '\'' : *s, f);
    fputc('"', f);
}

struct bout_plot {
    const struct tools_bout_row *rows;
    size_t n;
    const char **w, **m, **d;     /* workloads, modes, devices */
    size_t nw, nm, nd;
    char (*dname)[128];           /* file-name form of each device */
};

/* bout_has -- does any row have workload w on device d? */
static bool bout_has(const struct bout_plot *p, const char *w, const char *d)
{
    for (size_t j = 0; j < p->nm; j++)
        if (bout_find(p->rows, p->n, w, p->m[j], d) != NULL)
            return true;
    return false;
}

/* bout_data_head -- the comment lines that open a block of a data file. */
static void bout_data_head(FILE *f, size_t blk, const char *w, const char *d,
                           const char *what, const char *cols)
{
    fprintf(f, "%s# %s on %s: %s\n# %s\n", blk ? "\n\n" : "", w, d, what, cols);
}

/* bout_thr_data -- throughput-DEV.dat: per workload run on device k a
 * block, one line per mode: name, x position (the mode's index), txn/s
 * ('?' when that mode did not run there). */
static int bout_thr_data(const char *dir, const struct bout_plot *p, size_t k)
{
    char name[160];
    snprintf(name, sizeof name, "throughput-%s.dat", p->dname[k]);
    FILE *f = bout_fopen(dir, name);
    if (f == NULL)
        return -errno;
    for (size_t i = 0, blk = 0; i < p->nw; i++) {
        if (!bout_has(p, p->w[i], p->d[k]))
            continue;
        bout_data_head(f, blk++, p->w[i], p->d[k], "transactions/s", "mode x txn/s");
        for (size_t j = 0; j < p->nm; j++) {
            const struct tools_bout_row *r = bout_find(p->rows, p->n, p->w[i], p->m[j], p->d[k]);
            bout_gp_quote(f, p->m[j]);
            if (r != NULL)
                fprintf(f, " %zu %.6f\n", j, r->r.ops_per_s);
            else
                fprintf(f, " %zu ?\n", j);
        }
    }
    return bout_fclose(f);
}

/* bout_bytes_data -- bytes-DEV.dat: per workload run on device k a block,
 * one line per mode: name, x, MiB of data, metadata, journal, checkpoint
 * (checkpoint is a part of data + metadata). */
static int bout_bytes_data(const char *dir, const struct bout_plot *p, size_t k)
{
    char name[160];
    snprintf(name, sizeof name, "bytes-%s.dat", p->dname[k]);
    FILE *f = bout_fopen(dir, name);
    if (f == NULL)
        return -errno;
    for (size_t i = 0, blk = 0; i < p->nw; i++) {
        if (!bout_has(p, p->w[i], p->d[k]))
            continue;
        bout_data_head(f, blk++, p->w[i], p->d[k],
                       "MiB written (checkpoint is a part of data + metadata)",
                       "mode x data metadata journal checkpoint");
        for (size_t j = 0; j < p->nm; j++) {
            const struct tools_bout_row *r = bout_find(p->rows, p->n, p->w[i], p->m[j], p->d[k]);
            bout_gp_quote(f, p->m[j]);
            if (r == NULL) {
                fprintf(f, " %zu ? ? ? ?\n", j);
                continue;
            }
            fprintf(f, " %zu %.6f %.6f %.6f %.6f\n", j, (double)r->r.bytes_data / BOUT_MIB,
                    (double)r->r.bytes_metadata / BOUT_MIB, (double)r->r.bytes_journal / BOUT_MIB,
                    (double)r->r.bytes_checkpoint / BOUT_MIB);
        }
    }
    return bout_fclose(f);
}

/* bout_panels -- how many workloads ran on device k. */
static size_t bout_panels(const struct bout_plot *p, size_t k)
{
    size_t panels = 0;
    for (size_t i = 0; i < p->nw; i++)
        panels += bout_has(p, p->w[i], p->d[k]);
    return panels;
}

/* bout_gp_head -- terminal, output, the common style, the mode names as
 * horizontal x tic labels under their bars, and the figure's title (two
 * lines: title, then note). */
static void bout_gp_head(FILE *f, const struct bout_plot *p, size_t k, const char *out,
                         const char *title, const char *note)
{
    size_t panels = bout_panels(p, k);
    size_t per = 70 * p->nm + 90 > 260 ? 70 * p->nm + 90 : 260;
    fprintf(f, "\nset terminal svg size %zu,460 noenhanced font \"Sans,10\" background rgb \"white\"\n",
            per * panels + 40);
    fprintf(f, "set output \"%s\"\n", out);
    fputs("set datafile missing \"?\"\nset style fill solid 0.85 border -1\n"
          "set grid ytics\nset yrange [0:*]\nset offsets 0, 0, graph 0.25, 0\n"
          "set bmargin 3\nset xtics nomirror scale 0 font \",9\"\nset ytics nomirror\n", f);
    fprintf(f, "set xrange [-0.6:%.1f]\nset xtics (", (double)p->nm - 0.4);
    for (size_t j = 0; j < p->nm; j++) {
        fputs(j ? ", " : "", f);
        bout_gp_quote(f, p->m[j]);
        fprintf(f, " %zu", j);
    }
    fprintf(f, ")\nset multiplot layout 1,%zu title ", panels);
    fputc('"', f);
    for (const char *s = title; *s; s++)
        fputc(*s == '"' || *s == '\\' ? '\'' : *s, f);
    fprintf(f, "\\n%s\"\n", note);
}

/* bout_gp_thr -- the throughput figure of device k: per workload a panel,
 * one colored bar per mode (its name below, its value above). */
static void bout_gp_thr(FILE *f, const struct bout_plot *p, size_t k, const char *title)
{
    char t[512], out[160], dat[160];
    snprintf(t, sizeof t, "%s: throughput on %s (transactions/s, higher is better)",
             title, p->d[k]);
    snprintf(out, sizeof out, "throughput-%s.svg", p->dname[k]);
    snprintf(dat, sizeof dat, "throughput-%s.dat", p->dname[k]);
    bout_gp_head(f, p, k, out, t, "each panel on its own scale");
    fputs("unset key\nset ylabel \"transactions/s\"\n", f);
    for (size_t i = 0, blk = 0; i < p->nw; i++) {
        if (!bout_has(p, p->w[i], p->d[k]))
            continue;
        fputs("set title ", f);
        bout_gp_quote(f, p->w[i]);
        fprintf(f, "\n%splot '%s' index %zu using 2:3:(0.7):($2+1) with boxes lc variable, \\\n"
                "  '' index %zu using 2:3:($3 >= 100 ? sprintf(\"%%.0f\", $3) : "
                "sprintf(\"%%.3g\", $3)) with labels offset 0,0.7 font \",8\"\n",
                blk == 1 ? "unset ylabel\n" : "", dat, blk, blk);
        blk++;
    }
    fputs("unset multiplot\n", f);
}

/* bout_gp_bytes -- the storage-bytes figure of device k: per workload a
 * panel, per mode a bar stacking data, metadata and journal, and over it
 * a narrow hatched bar of the checkpoint MiB (a part of data + metadata,
 * so it is not stacked). */
static void bout_gp_bytes(FILE *f, const struct bout_plot *p, size_t k, const char *title)
{
    char t[512], out[160], dat[160];
    snprintf(t, sizeof t, "%s: storage MiB written on %s by category", title, p->d[k]);
    snprintf(out, sizeof out, "bytes-%s.svg", p->dname[k]);
    snprintf(dat, sizeof dat, "bytes-%s.dat", p->dname[k]);
    bout_gp_head(f, p, k, out, t, "bar = data + metadata + journal; hatched = of which "
                 "checkpoint (home writes of committed blocks, inside data + metadata)");
    fputs("set key top left opaque font \",9\" samplen 2\nset ylabel \"MiB written\"\n", f);
    for (size_t i = 0, blk = 0; i < p->nw; i++) {
        if (!bout_has(p, p->w[i], p->d[k]))
            continue;
        fputs("set title ", f);
        bout_gp_quote(f, p->w[i]);
        fprintf(f, "\n%splot '%s' index %zu using 2:($3+$4+$5):(0.7) with boxes "
                "lc rgb \"#bb5566\" title \"journal\", \\\n"
                "  '' index %zu using 2:($3+$4):(0.7) with boxes lc rgb \"#ddaa33\" "
                "title \"metadata\", \\\n"
                "  '' index %zu using 2:3:(0.7) with boxes lc rgb \"#4477aa\" "
                "title \"data\", \\\n"
                "  '' index %zu using 2:6:(0.3) with boxes lc rgb \"black\" "
                "fs transparent pattern 4 border title \"of which checkpoint\"\n",
                blk == 1 ? "unset key\nunset ylabel\n" : "", dat, blk, blk, blk, blk);
        blk++;
    }
    fputs("unset multiplot\n", f);
}

/* bout_gp_script -- plots.gp. */
static int bout_gp_script(const char *dir, const struct bout_plot *p, const char *title)
{
    FILE *f = bout_fopen(dir, "plots.gp");
    if (f == NULL)
        return -errno;
    fputs("# plots.gp -- written by `ubjfs bench`; run it in this directory:\n"
          "#   gnuplot plots.gp\n", f);
    for (size_t k = 0; k < p->nd; k++) {
        bout_gp_thr(f, p, k, title);
        bout_gp_bytes(f, p, k, title);
    }
    return bout_fclose(f);
}

/* bout_sleep_ms -- sleep ms milliseconds. */
static void bout_sleep_ms(unsigned ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* bout_wait -- wait for child pid (its own process group) at most
 * bout_gnuplot_ms; then kill the group.  Its wait status, or a negative
 * errno (-ETIMEDOUT: killed). */
static int bout_wait(pid_t pid, int *st)
{
    for (unsigned waited = 0; ; waited += 20) {
        pid_t got = waitpid(pid, st, WNOHANG);
        if (got == pid)
            return 0;
        if (got < 0 && errno != EINTR)
            return -errno;
        if (waited >= bout_gnuplot_ms) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, st, 0) < 0 && errno == EINTR)
                ;
            return -ETIMEDOUT;
        }
        bout_sleep_ms(20);
    }
}

/* bout_gnuplot -- run `gnuplot plots.gp` in dir, killed after
 * bout_gnuplot_ms.  0, -ENOPKG (no gnuplot), -EIO, -ETIMEDOUT. */
static int bout_gnuplot(const char *dir)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        setpgid(0, 0);
        if (chdir(dir) == 0)
            execlp("gnuplot", "gnuplot", "plots.gp", (char *)NULL);
        _exit(errno == ENOENT ? 127 : 126);
    }
    setpgid(pid, pid);
    int st = 0;
    int rc = bout_wait(pid, &st);
    if (rc < 0)
        return rc;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return -ENOPKG;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* tools_bout_csv_field, tools_bout_json_string, tools_bout_run_gnuplot --
 * the helpers above for other studies (bench_out.h). */
void tools_bout_csv_field(FILE *f, const char *s)
{
    bout_csv_str(f, s);
}

void tools_bout_json_string(FILE *f, const char *s)
{
    bout_json_str(f, s);
}

int tools_bout_run_gnuplot(const char *dir)
{
    return bout_gnuplot(dir);
}

/* bout_unlink_svgs -- remove the SVG files of p from dir (ENOENT is fine).
 * 0 or a negative errno. */
static int bout_unlink_svgs(const char *dir, const struct bout_plot *p)
{
    static const char *const kinds[] = { "throughput", "bytes" };
    char path[BOUT_PATH];
    for (size_t k = 0; k < p->nd; k++)
        for (size_t c = 0; c < 2; c++) {
            snprintf(path, sizeof path, "%s/%s-%s.svg", dir, kinds[c], p->dname[k]);
            if (unlink(path) != 0 && errno != ENOENT)
                return -errno;
        }
    return 0;
}

/* bout_dnames -- file-name forms of the devices, made unique. */
static void bout_dnames(struct bout_plot *p)
{
    for (size_t k = 0; k < p->nd; k++) {
        bout_safe(p->d[k], p->dname[k], 100);
        for (size_t j = 0; j < k; j++)
            if (strcmp(p->dname[j], p->dname[k]) == 0) {
                size_t l = strlen(p->dname[k]);
                snprintf(p->dname[k] + l, 128 - l, "-%zu", k + 1);
                break;
            }
    }
}

/* tools_bout_plots -- data files, plots.gp, then gnuplot. */
int tools_bout_plots(const char *dir, const struct tools_bout_row *rows, size_t n,
                     const char *title)
{
    struct bout_plot p = { .rows = rows, .n = n };
    size_t cap = n ? n : 1;
    p.w = calloc(cap, sizeof *p.w);
    p.m = calloc(cap, sizeof *p.m);
    p.d = calloc(cap, sizeof *p.d);
    p.dname = calloc(cap, sizeof *p.dname);
    int rc = -ENOMEM;
    if (p.w != NULL && p.m != NULL && p.d != NULL && p.dname != NULL) {
        p.nw = bout_keys(rows, n, BOUT_WORKLOAD, p.w);
        p.nm = bout_keys(rows, n, BOUT_MODE, p.m);
        p.nd = bout_keys(rows, n, BOUT_DEVICE, p.d);
        bout_dnames(&p);
        rc = p.nw > 0 ? 0 : -EINVAL;
        for (size_t k = 0; rc == 0 && k < p.nd; k++) {
            rc = bout_thr_data(dir, &p, k);
            if (rc == 0)
                rc = bout_bytes_data(dir, &p, k);
        }
        if (rc == 0)
            rc = bout_gp_script(dir, &p, title);
        if (rc == 0)
            rc = bout_unlink_svgs(dir, &p);
        if (rc == 0)
            rc = bout_gnuplot(dir);
    }
    free(p.w);
    free(p.m);
    free(p.d);
    free(p.dname);
    return rc;
}

/* tools_bout_plot_names -- the SVG names tools_bout_plots makes. */
void tools_bout_plot_names(const struct tools_bout_row *rows, size_t n, char *buf, size_t len)
{
    struct bout_plot p = { .rows = rows, .n = n };
    size_t cap = n ? n : 1;
    if (len > 0)
        buf[0] = '\0';
    p.d = calloc(cap, sizeof *p.d);
    p.dname = calloc(cap, sizeof *p.dname);
    if (p.d != NULL && p.dname != NULL && len > 0) {
        p.nd = bout_keys(rows, n, BOUT_DEVICE, p.d);
        bout_dnames(&p);
        for (size_t k = 0; k < p.nd; k++) {
            size_t l = strlen(buf);
            snprintf(buf + l, len - l, "%sthroughput-%s.svg bytes-%s.svg", k ? " " : "",
                     p.dname[k], p.dname[k]);
        }
    }
    free(p.d);
    free(p.dname);
}
