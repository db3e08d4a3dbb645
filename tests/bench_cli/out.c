/*
 * bench_cli/out.c -- the output code of `ubjfs bench run` and of the
 * headline experiment (src/tools/bench_out.c, compiled into this test) on
 * hand-made results: no harness run is involved.
 *
 * Checks: the ratios of ubj over ordered/journal per (workload, device)
 * and their geometric and arithmetic means (values computed by hand;
 * unusable ratios left out); the ratio table's lines, and nothing printed
 * without a pair; the results table has one line per row; the CSV has the
 * documented header, as many fields on every line as in the header, and
 * RFC 4180 quoting of a device spec with a comma; the JSON has the schema,
 * every result field, escaped strings and null for a non-finite number,
 * the config's default procs as null and the "requested" values; a tiny
 * ratio keeps its digits (0.004 is not "-100%", 0.997 not "-0%"); the table says that
 * ckpt_MiB is part of data + meta; the plots (when gnuplot is installed)
 * are non-empty SVG files, the data files mark a missing run with '?', the
 * bytes plot stacks data + metadata + journal only (checkpoint drawn
 * apart), mode names are not rotated; SVG files of an earlier run are
 * removed when gnuplot is missing, and a gnuplot that hangs is killed.
 */
#include "testutil.h"
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools/bench_out.c"

/* t_row -- a hand-made row. */
static struct tools_bout_row t_row(const char *w, const char *m, const char *d,
                                   double ops_per_s, uint64_t elapsed_ns)
{
    struct tools_bout_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.r.workload, sizeof r.r.workload, "%s", w);
    snprintf(r.r.mode, sizeof r.r.mode, "%s", m);
    snprintf(r.r.device, sizeof r.r.device, "%s", d);
    snprintf(r.r.nvm_profile, sizeof r.r.nvm_profile, "dram");
    r.clock = "virtual";
    r.seed = 7;
    r.scale = 0.5;
    r.ops_asked = 100;
    r.r.ops = 100;
    r.r.procs = 2;
    r.r.cache_blocks = 4096;
    r.r.ops_per_s = ops_per_s;
    r.r.elapsed_ns = elapsed_ns;
    r.r.bytes_data = 3u << 20;
    r.r.bytes_metadata = 1u << 20;
    r.r.bytes_journal = strcmp(m, "journal") == 0 ? 4u << 20 : 1u << 19;
    r.r.bytes_checkpoint = 1u << 18;
    r.r.dev_flushes = 11;
    r.r.hit_ratio = 0.75;
    for (int k = 0; k < BH_OP_NR; k++)
        r.r.opcount[k] = (uint64_t)k * 3;
    return r;
}

/* t_rows -- 2 workloads x 3 modes on one device, plus postmark on a
 * second device without a journal row.  Returns the count. */
static size_t t_rows(struct tools_bout_row *v)
{
    size_t n = 0;
    v[n++] = t_row("postmark", "ordered", "ssd:sata", 100, 1000000000);
    v[n++] = t_row("postmark", "journal", "ssd:sata", 50, 2000000000);
    v[n++] = t_row("postmark", "ubj", "ssd:sata", 200, 500000000);
    v[n++] = t_row("varmail", "ordered", "ssd:sata", 40, 1000000000);
    v[n++] = t_row("varmail", "journal", "ssd:sata", 40, 1000000000);
    v[n++] = t_row("varmail", "ubj", "ssd:sata", 20, 2000000000);
    v[n++] = t_row("postmark", "ordered", "hdd:x,qd=2", 10, 8000000000);
    v[n++] = t_row("postmark", "ubj", "hdd:x,qd=2", 80, 1000000000);
    return n;
}

/* struct t_mem -- a memory stream and the text written to it. */
struct t_mem {
    char *buf;
    size_t len;
    FILE *f;
};

/* t_mem_open -- open m's stream. */
static void t_mem_open(struct t_mem *m)
{
    m->buf = NULL;
    m->len = 0;
    m->f = open_memstream(&m->buf, &m->len);
    assert_non_null(m->f);
}

/* t_mem_close -- close it: m->buf holds the text. */
static void t_mem_close(struct t_mem *m)
{
    assert_int_equal(fclose(m->f), 0);
}

/* t_count -- occurrences of s in text. */
static size_t t_count(const char *text, const char *s)
{
    size_t n = 0;
    for (const char *p = strstr(text, s); p != NULL; p = strstr(p + 1, s))
        n++;
    return n;
}

/* t_ratios -- per-pair values and the means, by hand. */
static void t_ratios(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    struct tools_bout_ratio r[16];
    size_t k = tools_bout_ratios(v, n, "ubj", "ordered", r, 16);
    assert_int_equal(k, 3);
    assert_string_equal(r[0].workload, "postmark");
    assert_string_equal(r[0].device, "ssd:sata");
    assert_true(fabs(r[0].thr - 2.0) < 1e-12 && fabs(r[0].elapsed - 0.5) < 1e-12);
    assert_string_equal(r[1].workload, "varmail");
    assert_true(fabs(r[1].thr - 0.5) < 1e-12 && fabs(r[1].elapsed - 2.0) < 1e-12);
    assert_string_equal(r[2].device, "hdd:x,qd=2");
    assert_true(fabs(r[2].thr - 8.0) < 1e-12 && fabs(r[2].elapsed - 0.125) < 1e-12);
    struct tools_bout_mean m;
    tools_bout_mean(r, k, &m);
    assert_int_equal(m.n, 3);
    assert_true(fabs(m.thr_geo - 2.0) < 1e-9);          /* cbrt(2 * 0.5 * 8) */
    assert_true(fabs(m.el_geo - 0.5) < 1e-9);
    assert_true(fabs(m.thr_arith - 10.5 / 3) < 1e-9);
    assert_true(fabs(m.el_arith - 2.625 / 3) < 1e-9);
    assert_int_equal(tools_bout_ratios(v, n, "ubj", "journal", r, 16), 2);
    assert_int_equal(tools_bout_ratios(v, n, "ubj", "none", r, 16), 0);
    assert_int_equal(tools_bout_ratios(v, n, "ubj", "ordered", r, 1), 1);
    /* a zero throughput below makes the pair unusable for the means */
    v[3].r.ops_per_s = 0;
    k = tools_bout_ratios(v, n, "ubj", "ordered", r, 16);
    assert_int_equal(k, 3);
    assert_true(isnan(r[1].thr));
    tools_bout_mean(r, k, &m);
    assert_int_equal(m.n, 2);
    assert_true(fabs(m.thr_geo - 4.0) < 1e-9);
    tools_bout_mean(r, 0, &m);
    assert_int_equal(m.n, 0);
    assert_true(isnan(m.thr_geo));
}

/* t_ratio_table -- the printed ratios. */
static void t_ratio_table(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    const char *dens[] = { "ordered", "journal" };
    struct t_mem m;
    t_mem_open(&m);
    assert_int_equal(tools_bout_ratio_table(m.f, v, n, "ubj", dens, 2), 0);
    t_mem_close(&m);
    assert_non_null(strstr(m.buf, "thr ubj/ordered"));
    assert_non_null(strstr(m.buf, "time ubj/journal"));
    assert_non_null(strstr(m.buf, "2.000 (+100%)"));
    assert_null(strstr(m.buf, "(-100%)"));
    assert_int_equal(t_count(m.buf, "\ngeometric mean "), 1);
    assert_int_equal(t_count(m.buf, "\narithmetic mean "), 1);
    assert_int_equal(t_count(m.buf, "\npostmark "), 2);
    assert_int_equal(t_count(m.buf, "\nvarmail "), 1);
    free(m.buf);
    /* a tiny ratio keeps its digits: 0.004 is -99.60%, not -100% */
    v[6].r.ops_per_s = 2500;
    v[7].r.ops_per_s = 10;
    v[7].r.elapsed_ns = 32000000;
    t_mem_open(&m);
    assert_int_equal(tools_bout_ratio_table(m.f, v, n, "ubj", dens, 2), 0);
    t_mem_close(&m);
    assert_non_null(strstr(m.buf, "0.004 (-99.60%)"));
    assert_null(strstr(m.buf, "(-100%)"));
    free(m.buf);
    v[2].r.ops_per_s = 99.7;   /* postmark ssd: ubj/ordered 0.997 is -0.3%, not -0% */
    t_mem_open(&m);
    assert_int_equal(tools_bout_ratio_table(m.f, v, n, "ubj", dens, 2), 0);
    t_mem_close(&m);
    assert_non_null(strstr(m.buf, "0.997 (-0.3%)"));
    assert_null(strstr(m.buf, "-0%"));
    free(m.buf);
    t_mem_open(&m);     /* no ubj rows: nothing at all */
    assert_int_equal(tools_bout_ratio_table(m.f, v, 2, "ubj", dens, 2), 0);
    t_mem_close(&m);
    assert_int_equal(m.len, 0);
    free(m.buf);
}

/* t_table -- a header and one line per row. */
static void t_table(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    struct t_mem m;
    t_mem_open(&m);
    assert_int_equal(tools_bout_table(m.f, v, n), 0);
    t_mem_close(&m);
    assert_int_equal(t_count(m.buf, "\n"), n + 3);
    assert_non_null(strstr(m.buf, "ckpt_MiB is the part of data + meta"));
    assert_non_null(strstr(m.buf, "locked%: of the device time"));
    assert_non_null(strstr(m.buf, "\nworkload "));
    assert_non_null(strstr(m.buf, "hdd:x,qd=2"));
    free(m.buf);
}

/* t_fields -- fields of one CSV line (quotes respected). */
static size_t t_fields(const char *line, size_t len)
{
    size_t n = 1;
    bool q = false;
    for (size_t i = 0; i < len; i++) {
        if (line[i] == '"')
            q = !q;
        else if (line[i] == ',' && !q)
            n++;
    }
    return n;
}

/* t_csv -- header and field counts. */
static void t_csv(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    struct t_mem m;
    t_mem_open(&m);
    assert_int_equal(tools_bout_csv(m.f, v, n), 0);
    t_mem_close(&m);
    assert_true(strncmp(m.buf, "workload,mode,device,nvm_profile,clock,scale,ops_asked,seed,"
                        "cache_blocks,procs,ops,elapsed_ns,ops_per_s,", 100) == 0);
    assert_non_null(strstr(m.buf, ",hit_ratio,sync_ns,app_bytes_written,app_bytes_read,"
                                  "commits,checkpoints,op_create,op_unlink,"));
    assert_non_null(strstr(m.buf, ",op_other,init_op_create,"));
    assert_non_null(strstr(m.buf, ",init_op_other,txn_overlap_max,read_wait_locked_ns,"
                                  "read_wait_unlocked_ns,victim_wait_ns\n"));
    size_t lines = 0, want = 0;
    for (char *p = m.buf; *p; lines++) {
        char *e = strchr(p, '\n');
        assert_non_null(e);
        size_t f = t_fields(p, (size_t)(e - p));
        if (lines == 0)
            want = f;
        assert_int_equal(f, want);
        p = e + 1;
    }
    assert_int_equal(want, 32 + 2 * BH_OP_NR + 4);
    assert_int_equal(lines, n + 1);
    assert_non_null(strstr(m.buf, "\npostmark,ubj,\"hdd:x,qd=2\",dram,virtual,0.5,100,7,4096,2,"
                                  "100,1000000000,80,"));
    free(m.buf);
}

/* t_json -- the document's members. */
static void t_json(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    snprintf(v[0].r.device, sizeof v[0].r.device, "ssd:\"q\"\\");
    v[1].r.hit_ratio = NAN;
    struct tools_bout_meta meta = { .command = "run", .clock = "virtual", .seed = 7,
                                    .cache_blocks = 4096, .req_cache_blocks = 0 };
    struct t_mem m;
    t_mem_open(&m);
    assert_int_equal(tools_bout_json(m.f, &meta, v, n), 0);
    t_mem_close(&m);
    assert_non_null(strstr(m.buf, "\"schema\": \"" TOOLS_BOUT_SCHEMA "\""));
    assert_non_null(strstr(m.buf, "\"nvm_profile\": null"));
    assert_non_null(strstr(m.buf, "\"procs\": null, "));
    assert_non_null(strstr(m.buf, "\"cache_blocks\": 4096, "));
    assert_non_null(strstr(m.buf, "\"requested\": {\"procs\": 0, \"think_set\": false, "
                                  "\"cache_blocks\": 0, "));
    assert_non_null(strstr(m.buf, "\"device\": \"ssd:\\\"q\\\"\\\\\""));
    assert_non_null(strstr(m.buf, "\"hit_ratio\": null"));
    const char *fields[] = { "workload", "mode", "device", "clock", "scale", "ops_asked", "seed",
                             "cache_blocks", "procs", "ops", "elapsed_ns", "ops_per_s",
                             "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "lat_max_ns",
                             "bytes_data", "bytes_metadata", "bytes_journal",
                             "bytes_checkpoint", "bytes_device", "nvm_bytes", "dev_flushes",
                             "energy_dev_j", "energy_nvm_j", "hit_ratio", "sync_ns",
                             "app_bytes_written", "app_bytes_read", "commits", "checkpoints",
                             "opcount", "init_opcount", "fsync" };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\": ", fields[i]);
        assert_true(t_count(m.buf, key) >= n);
    }
    assert_non_null(strstr(m.buf, "\"ubj/ordered\": {\"pairs\": [{"));
    assert_non_null(strstr(m.buf, "\"geometric_mean\": {\"throughput\": "));
    assert_int_equal(t_count(m.buf, "{"), t_count(m.buf, "}"));
    assert_int_equal(t_count(m.buf, "["), t_count(m.buf, "]"));
    free(m.buf);
}

/* t_file_size -- size of dir/name, -1 if missing. */
static long t_file_size(const char *dir, const char *name)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

/* t_read -- the text of dir/name (at most len - 1 bytes) into buf. */
static void t_read(const char *dir, const char *name, char *buf, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t got = fread(buf, 1, len - 1, f);
    buf[got] = '\0';
    fclose(f);
}

/* t_check_script -- plots.gp: the bytes bars stack data, metadata and
 * journal (columns 3..5) and draw checkpoint (column 6) apart, never added
 * to them; the mode names are not rotated. */
static void t_check_script(const char *dir)
{
    static char text[65536];
    t_read(dir, "plots.gp", text, sizeof text);
    assert_null(strstr(text, "rowstacked"));
    assert_null(strstr(text, "rotate"));
    assert_int_equal(t_count(text, "using 2:($3+$4+$5):(0.7) with boxes"), 3);
    assert_int_equal(t_count(text, "using 2:6:(0.3) with boxes"), 3);
    assert_null(strstr(text, "$5+$6"));
    assert_non_null(strstr(text, "set xtics (\"ordered\" 0, \"journal\" 1, \"ubj\" 2)"));
}

/* t_put -- write text into dir/name (mode 0755 if exec). */
static void t_put(const char *dir, const char *name, const char *text, bool exec)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(p, exec ? 0755 : 0644), 0);
}

/* t_with_path -- tools_bout_plots with PATH = bin only. */
static int t_with_path(const char *bin, const char *dir, const struct tools_bout_row *v,
                       size_t n)
{
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", bin, 1);
    int rc = tools_bout_plots(dir, v, n, "t");
    if (old != NULL)
        setenv("PATH", old, 1);
    free(old);
    return rc;
}

/* t_plots_no_gnuplot -- without gnuplot: -ENOPKG, and an SVG an earlier
 * run left there is gone (it would not match the new data). */
static void t_plots_no_gnuplot(const char *dir, const struct tools_bout_row *v, size_t n)
{
    t_put(dir, "throughput-ssd-sata.svg", "<svg>stale</svg>\n", false);
    t_put(dir, "bytes-hdd-x-qd-2.svg", "<svg>stale</svg>\n", false);
    assert_int_equal(t_with_path("/nonexistent-bin", dir, v, n), -ENOPKG);
    assert_int_equal(t_file_size(dir, "throughput-ssd-sata.svg"), -1);
    assert_int_equal(t_file_size(dir, "bytes-hdd-x-qd-2.svg"), -1);
    assert_true(t_file_size(dir, "plots.gp") > 0);
}

/* t_plots_hang -- a gnuplot that never finishes is killed: -ETIMEDOUT. */
static void t_plots_hang(const char *dir, const struct tools_bout_row *v, size_t n)
{
    char bin[] = "/tmp/ubjfs-bench-gp.XXXXXX";
    assert_non_null(mkdtemp(bin));
    t_put(bin, "gnuplot", "#!/bin/sh\nsleep 30\nexit 0\n", true);
    unsigned saved = bout_gnuplot_ms;
    bout_gnuplot_ms = 300;
    char path[600];
    snprintf(path, sizeof path, "%s:/usr/bin:/bin", bin);   /* our gnuplot first */
    assert_int_equal(t_with_path(path, dir, v, n), -ETIMEDOUT);
    bout_gnuplot_ms = saved;
    char p[512];
    snprintf(p, sizeof p, "%s/gnuplot", bin);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(rmdir(bin), 0);
}

/* t_plots -- data, script and (with gnuplot) the SVG files. */
static void t_plots(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    char dir[] = "/tmp/ubjfs-bench-out.XXXXXX";
    assert_non_null(mkdtemp(dir));
    int rc = tools_bout_plots(dir, v, n, "test \"plots\"");
    assert_true(rc == 0 || rc == -ENOPKG);
    assert_true(t_file_size(dir, "plots.gp") > 0);
    assert_true(t_file_size(dir, "throughput-ssd-sata.dat") > 0);
    assert_true(t_file_size(dir, "throughput-hdd-x-qd-2.dat") > 0);
    assert_true(t_file_size(dir, "bytes-ssd-sata.dat") > 0);
    assert_true(t_file_size(dir, "bytes-hdd-x-qd-2.dat") > 0);
    char p[512];
    snprintf(p, sizeof p, "%s/throughput-hdd-x-qd-2.dat", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char text[4096];
    size_t got = fread(text, 1, sizeof text - 1, f);
    text[got] = '\0';
    fclose(f);
    assert_non_null(strstr(text, "\"ordered\" 0 10.000000\n\"journal\" 1 ?\n\"ubj\" 2 80.000000\n"));
    assert_null(strstr(text, "varmail"));       /* not run on that device */
    t_check_script(dir);
    if (rc == 0) {
        assert_true(t_file_size(dir, "throughput-ssd-sata.svg") > 1000);
        assert_true(t_file_size(dir, "throughput-hdd-x-qd-2.svg") > 1000);
        assert_true(t_file_size(dir, "bytes-ssd-sata.svg") > 1000);
        assert_true(t_file_size(dir, "bytes-hdd-x-qd-2.svg") > 1000);
    } else {
        printf("gnuplot is not installed: SVG files not checked\n");
    }
    assert_int_equal(tools_bout_plots("/nonexistent/dir", v, n, "x"), -ENOENT);
    t_plots_no_gnuplot(dir, v, n);
    t_plots_hang(dir, v, n);
    const char *names[] = { "plots.gp", "throughput-ssd-sata.dat", "throughput-ssd-sata.svg",
                            "throughput-hdd-x-qd-2.dat", "throughput-hdd-x-qd-2.svg",
                            "bytes-ssd-sata.dat",
                            "bytes-ssd-sata.svg", "bytes-hdd-x-qd-2.dat", "bytes-hdd-x-qd-2.svg" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* t_plot_names -- the SVG names listed for the summary. */
static void t_plot_names(void **state)
{
    (void)state;
    struct tools_bout_row v[16];
    size_t n = t_rows(v);
    char buf[256];
    tools_bout_plot_names(v, n, buf, sizeof buf);
    assert_string_equal(buf, "throughput-ssd-sata.svg bytes-ssd-sata.svg "
                             "throughput-hdd-x-qd-2.svg bytes-hdd-x-qd-2.svg");
    tools_bout_plot_names(v, 0, buf, sizeof buf);
    assert_string_equal(buf, "");
}

/* main -- the output tests. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t_ratios),
        cmocka_unit_test(t_ratio_table),
        cmocka_unit_test(t_table),
        cmocka_unit_test(t_csv),
        cmocka_unit_test(t_json),
        cmocka_unit_test(t_plots),
        cmocka_unit_test(t_plot_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
