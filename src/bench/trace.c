/*
 * bench/trace.c -- recording a run's transactions and operations, and
 * loading a recording for open-loop replay (harness.c replays it).
 *
 * Format (text, one record a line, fields separated by one space; times
 * are ns from the start of the timed phase):
 *
 *   ubjfs-bench-trace 1
 *   workload NAME
 *   params PROCS OPS THINK_NS SCALE SEED
 *   kv KV                        ("-" when the run had none)
 *   O KIND T_NS                  one file-system operation (KIND: create,
 *                                unlink, mkdir, rmdir, open, read, write,
 *                                append, fsync, stat, rename, readdir, other)
 *   T SEQ PROC ARRIVAL_NS START_NS END_NS
 *                                closes a transaction: the O lines since
 *                                the previous T are its operations
 *   end N                        N transactions; the last line
 *
 * Replay: the harness re-runs the named workload with the recorded
 * parameters (so the same seed produces the same operations) and issues
 * transaction k of process PROC at ARRIVAL_NS whatever happened before:
 * an open loop, where a closed loop would wait for the previous
 * completion.  The number of O lines of each transaction is checked
 * against what the replay issued (a replay on another mode or device
 * performs the same operations; only their timing differs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/bench_int.h"
#include "util/util.h"

#define TRACE_MAGIC "ubjfs-bench-trace 1"

struct bh_trace {
    FILE *f;
    uint64_t ntxn;
    bool err;
};

static const char *const op_names[BH_OP_NR] = {
    "create", "unlink", "mkdir", "rmdir", "open", "read", "write", "append",
    "fsync", "stat", "rename", "readdir", "other",
};

/* bh_opkind_name -- the name of an operation kind. */
const char *bh_opkind_name(enum bh_opkind k)
{
    return (unsigned)k < BH_OP_NR ? op_names[k] : "other";
}

/* bh_trace_create -- open the file and write the header. */
int bh_trace_create(const char *path, const char *workload,
                    const struct bh_params *prm, struct bh_trace **out)
{
    struct bh_trace *t = calloc(1, sizeof *t);
    if (t == NULL)
        return ubj_set_error(-ENOMEM, "trace: out of memory");
    t->f = fopen(path, "w");
    if (t->f == NULL) {
        int e = errno;
        free(t);
        return ubj_set_error(-e, "trace: %s: %s", path, strerror(e));
    }
    fprintf(t->f, "%s\nworkload %s\nparams %u %llu %llu %.17g %llu\nkv %s\n",
            TRACE_MAGIC, workload, prm->procs, (unsigned long long)prm->ops,
            (unsigned long long)prm->think_ns, prm->scale,
            (unsigned long long)prm->seed,
            prm->kv && prm->kv[0] ? prm->kv : "-");
    *out = t;
    return 0;
}

/* bh_trace_op -- one O line. */
void bh_trace_op(struct bh_trace *t, enum bh_opkind kind, uint64_t at)
{
    if (fprintf(t->f, "O %s %llu\n", bh_opkind_name(kind),
                (unsigned long long)at) < 0)
        t->err = true;
}

/* bh_trace_txn -- one T line. */
void bh_trace_txn(struct bh_trace *t, uint64_t seq, unsigned proc,
                  uint64_t arrival, uint64_t start, uint64_t end)
{
    if (fprintf(t->f, "T %llu %u %llu %llu %llu\n", (unsigned long long)seq,
                proc, (unsigned long long)arrival, (unsigned long long)start,
                (unsigned long long)end) < 0)
        t->err = true;
    t->ntxn++;
}

/* bh_trace_close -- the end line; -EIO if any write failed. */
int bh_trace_close(struct bh_trace *t)
{
    if (t == NULL)
        return 0;
    fprintf(t->f, "end %llu\n", (unsigned long long)t->ntxn);
    bool bad = t->err || ferror(t->f);
    bad |= fclose(t->f) != 0;
    free(t);
    return bad ? ubj_set_error(-EIO, "trace: write failed") : 0;
}

/* tl_bad -- a parse error at path:line. */
static int tl_bad(const char *path, unsigned line, const char *what)
{
    return ubj_set_error(-EINVAL, "trace %s:%u: %s", path, line, what);
}

/* tl_push -- append a transaction. */
static int tl_push(struct bh_trace_in *in, uint64_t *cap,
                   const struct bh_trace_txn *t)
{
    if (in->n == *cap) {
        uint64_t c = *cap ? *cap * 2 : 256;
        struct bh_trace_txn *n = realloc(in->t, c * sizeof *n);
        if (n == NULL)
            return ubj_set_error(-ENOMEM, "trace: out of memory");
        in->t = n;
        *cap = c;
    }
    in->t[in->n++] = *t;
    return 0;
}

/* tl_header -- the four header lines. */
static int tl_header(FILE *f, const char *path, struct bh_trace_in *in)
{
    char line[512];
    unsigned long long ops, think, seed;
    if (!fgets(line, sizeof line, f) || strncmp(line, TRACE_MAGIC, strlen(TRACE_MAGIC)) != 0)
        return tl_bad(path, 1, "not a ubjfs bench trace");
    if (!fgets(line, sizeof line, f) || sscanf(line, "workload %31s", in->workload) != 1)
        return tl_bad(path, 2, "expected 'workload NAME'");
    if (!fgets(line, sizeof line, f) ||
        sscanf(line, "params %u %llu %llu %lg %llu", &in->params.procs, &ops,
               &think, &in->params.scale, &seed) != 5)
        return tl_bad(path, 3, "expected 'params PROCS OPS THINK SCALE SEED'");
    in->params.ops = ops;
    in->params.think_ns = think;
    in->params.seed = seed;
    if (!fgets(line, sizeof line, f) || strncmp(line, "kv ", 3) != 0)
        return tl_bad(path, 4, "expected 'kv KV'");
    line[strcspn(line, "\n")] = '\0';
    if (strlen(line + 3) >= sizeof in->kvbuf)
        return tl_bad(path, 4, "kv string too long");
    strcpy(in->kvbuf, line + 3);
    in->params.kv = strcmp(in->kvbuf, "-") == 0 ? NULL : in->kvbuf;
    return 0;
}

/* tl_body -- O, T and end lines. */
static int tl_body(FILE *f, const char *path, struct bh_trace_in *in)
{
    char line[256], kind[16];
    unsigned line_no = 4;
    uint64_t cap = 0;
    uint32_t nops = 0;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        unsigned long long seq, a, s, e, n;
        struct bh_trace_txn t = { 0 };
        if (line[0] == 'O' && sscanf(line, "O %15s %llu", kind, &a) == 2) {
            nops++;
        } else if (line[0] == 'T' &&
                   sscanf(line, "T %llu %u %llu %llu %llu", &seq, &t.proc, &a,
                          &s, &e) == 5) {
            if (seq != in->n)
                return tl_bad(path, line_no, "transactions out of sequence");
            t.arrival_ns = a;
            t.nops = nops;
            nops = 0;
            int rc = tl_push(in, &cap, &t);
            if (rc < 0)
                return rc;
        } else if (sscanf(line, "end %llu", &n) == 1) {
            return n == in->n ? 0 : tl_bad(path, line_no, "wrong transaction count");
        } else {
            return tl_bad(path, line_no, "unrecognised line");
        }
    }
    return tl_bad(path, line_no, "truncated (no 'end' line)");
}

/* bh_trace_load -- read a whole trace. */
int bh_trace_load(const char *path, struct bh_trace_in **out)
{
    struct bh_trace_in *in = calloc(1, sizeof *in);
    if (in == NULL)
        return ubj_set_error(-ENOMEM, "trace: out of memory");
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        int e = errno;
        free(in);
        return ubj_set_error(-e, "trace: %s: %s", path, strerror(e));
    }
    int rc = tl_header(f, path, in);
    if (rc == 0)
        rc = tl_body(f, path, in);
    fclose(f);
    if (rc < 0) {
        bh_trace_in_free(in);
        return rc;
    }
    *out = in;
    return 0;
}

/* bh_trace_in_free -- release a loaded trace. */
void bh_trace_in_free(struct bh_trace_in *in)
{
    if (in == NULL)
        return;
    free(in->t);
    free(in);
}
