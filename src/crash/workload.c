/*
 * workload.c -- the crash explorer's workloads: the text language (one
 * operation per line; docs/GUARANTEES.md), the fixed file set and the
 * ACE-style generator of bounded sequences, and running one operation on
 * a mount with self-describing data (cx_fill).
 *
 * Invariants: every offset, length and size in a parsed workload is a
 * multiple of 16 (the data cell) and at most CX_MAX_FILE; paths are
 * absolute and shorter than CX_PATH_MAX.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "crash/crash.h"
#include "txn/mode.h"      /* the handle layer's test hook (overlap) */
#include "ubjfs/ubjfs.h"
#include "util/util.h"

static const char *const wl_names[CX_NOPKINDS] = {
    "creat", "mkdir", "write", "append", "truncate", "fallocate", "link",
    "unlink", "rename", "rmdir", "symlink", "setxattr", "removexattr",
    "fsync", "fdatasync", "sync", "open", "close", "tick", "overlap",
};

/* Arguments each kind takes: p = path, n = number, s = string. */
static const char *const wl_args[CX_NOPKINDS] = {
    "p", "p", "pnn", "pn", "pn", "pnn", "pp", "p", "pp", "p", "sp", "psn",
    "ps", "p", "p", "", "p", "p", "", "p",
};

/* ---- parsing ------------------------------------------------------------ */

/* wl_number -- a decimal number with an optional K suffix (x1024). */
static int wl_number(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -EINVAL;   /* no sign, no space: strtoull would take them */
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || v > CX_MAX_FILE)
        return -EINVAL;   /* (checked before the K: no wrap-around) */
    if (*end == 'K' || *end == 'k') {
        v *= 1024;
        end++;
    }
    if (*end != '\0' || v > CX_MAX_FILE)
        return -EINVAL;
    *out = v;
    return 0;
}

/* wl_parse_op -- one op from its words; 0 or -EINVAL with *why. */
static int wl_parse_op(char **word, int nw, struct cx_op *op, const char **why)
{
    int k;
    for (k = 0; k < CX_NOPKINDS; k++)
        if (strcmp(word[0], wl_names[k]) == 0)
            break;
    if (k == CX_NOPKINDS)
        return *why = "unknown operation", -EINVAL;
    memset(op, 0, sizeof *op);
    op->kind = (enum cx_opkind)k;
    const char *args = wl_args[k];
    int want = (int)strlen(args);
    if (k == CX_FALLOCATE && nw == want + 2 && strcmp(word[nw - 1], "keep") == 0) {
        op->keep_size = 1;
        nw--;
    }
    if (nw != want + 1)
        return *why = "wrong number of arguments", -EINVAL;
    int paths = 0, nums = 0;
    for (int i = 0; i < want; i++) {
        const char *w = word[i + 1];
        if (args[i] == 'n') {
            uint64_t v;
            if (wl_number(w, &v) < 0 || v % 16 != 0)
                return *why = "numbers must be multiples of 16, at most 256K", -EINVAL;
            if (nums++ == 0 && k != CX_SETXATTR)
                op->off = v;
            else
                op->len = v;
            continue;
        }
        if (strlen(w) >= CX_PATH_MAX)
            return *why = "path or name too long", -EINVAL;
        if (args[i] == 'p' && w[0] != '/')
            return *why = "paths must be absolute", -EINVAL;
        strcpy(paths++ == 0 ? op->a : op->b, w);
    }
    if (k == CX_APPEND || k == CX_TRUNCATE) {
        op->len = op->off;               /* the one number */
        op->off = 0;
    }
    if (k == CX_SETXATTR && op->len > 1024)
        return *why = "xattr values up to 1K", -EINVAL;
    if ((k == CX_WRITE || k == CX_FALLOCATE) && op->off + op->len > CX_MAX_FILE)
        return *why = "beyond 256K", -EINVAL;
    if ((k == CX_WRITE || k == CX_APPEND) && op->len > CX_MAX_WRITE)
        return *why = "one write up to 64K (a larger one commits in several "
                      "transactions: docs/GUARANTEES.md, G3)", -EINVAL;
    return 0;
}

/* cx_workload_parse -- the text language into *w. */
int cx_workload_parse(const char *text, const char *what, struct cx_workload *w)
{
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", what);
    struct cx_op tmp[2 * CX_MAX_OPS];
    unsigned n = 0, begin = 0, lineno = 0;
    int seen_begin = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char line[512];
        lineno++;
        if (len >= sizeof line)
            return ubj_set_error(-EINVAL, "%s:%u: line too long", what, lineno);
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (nl != NULL);
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *word[8], *save = NULL;
        int nw = 0;
        for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
            if (nw == 8)
                return ubj_set_error(-EINVAL, "%s:%u: too many words", what, lineno);
            word[nw++] = t;
        }
        if (nw == 0)
            continue;
        if (strcmp(word[0], "begin") == 0 && nw == 1) {
            if (seen_begin++)
                return ubj_set_error(-EINVAL, "%s:%u: a second 'begin'", what, lineno);
            begin = n;
            continue;
        }
        if (n == 2 * CX_MAX_OPS)
            return ubj_set_error(-EINVAL, "%s:%u: more than %u ops", what, lineno,
                                 2 * CX_MAX_OPS);
        const char *why = "";
        if (wl_parse_op(word, nw, &tmp[n], &why) < 0)
            return ubj_set_error(-EINVAL, "%s:%u: %s: %s", what, lineno, word[0], why);
        n++;
    }
    if (begin > CX_MAX_OPS || n - begin > CX_MAX_OPS)
        return ubj_set_error(-EINVAL, "%s: more than %u ops in a section", what,
                             CX_MAX_OPS);
    memcpy(w->setup, tmp, begin * sizeof *tmp);
    w->nsetup = begin;
    memcpy(w->ops, tmp + begin, (n - begin) * sizeof *tmp);
    w->nops = n - begin;
    return 0;
}

/* cx_workload_load -- read and parse a workload file. */
int cx_workload_load(const char *path, struct cx_workload *w)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return ubj_set_error(-errno, "%s: %s", path, strerror(errno));
    char *buf = malloc(65536);
    size_t n = buf ? fread(buf, 1, 65535, f) : 0;
    int bad = buf == NULL || ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        free(buf);
        return ubj_set_error(-EINVAL, "%s: unreadable or larger than 64K", path);
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n) != NULL) {
        free(buf);
        return ubj_set_error(-EINVAL, "%s: not a text file (a NUL byte)", path);
    }
    const char *base = strrchr(path, '/');
    int rc = cx_workload_parse(buf, base ? base + 1 : path, w);
    free(buf);
    return rc;
}

/* ---- formatting ------------------------------------------------------------- */

/* cx_op_format -- one op as a line. */
void cx_op_format(const struct cx_op *op, char *buf, size_t len)
{
    const char *n = op->kind < CX_NOPKINDS ? wl_names[op->kind] : "?";
    unsigned long long off = op->off, l = op->len;
    switch (op->kind) {
    case CX_WRITE:
        snprintf(buf, len, "%s %s %llu %llu", n, op->a, off, l);
        break;
    case CX_FALLOCATE:
        snprintf(buf, len, "%s %s %llu %llu%s", n, op->a, off, l,
                 op->keep_size ? " keep" : "");
        break;
    case CX_APPEND:
    case CX_TRUNCATE:
        snprintf(buf, len, "%s %s %llu", n, op->a, l);
        break;
    case CX_SETXATTR:
        snprintf(buf, len, "%s %s %s %llu", n, op->a, op->b, l);
        break;
    case CX_LINK:
    case CX_RENAME:
    case CX_SYMLINK:
    case CX_REMOVEXATTR:
        snprintf(buf, len, "%s %s %s", n, op->a, op->b);
        break;
    case CX_SYNC:
    case CX_TICK:
        snprintf(buf, len, "%s", n);
        break;
    default:
        snprintf(buf, len, "%s %s", n, op->a);
        break;
    }
}

/* cx_workload_write -- the workload as text. */
void cx_workload_write(FILE *f, const struct cx_workload *w, const char *comment)
{
    char line[256];
    for (const char *c = comment; c && *c;) {
        const char *nl = strchr(c, '\n');
        int len = nl ? (int)(nl - c) : (int)strlen(c);
        fprintf(f, "# %.*s\n", len, c);
        c += len + (nl != NULL);
    }
    for (unsigned i = 0; i < w->nsetup; i++) {
        cx_op_format(&w->setup[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    fprintf(f, "begin\n");
    for (unsigned i = 0; i < w->nops; i++) {
        cx_op_format(&w->ops[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
}

/* ---- the generator ------------------------------------------------------------ */

/* The fixed file set: parent and sibling dependencies for every op. */
static const char wl_setup_text[] =
    "mkdir /A\nmkdir /B\ncreat /foo\nwrite /foo 0 8192\ncreat /A/foo\n"
    "write /A/foo 0 4096\nsetxattr /A/foo user.x 32\n";

/* cx_workload_default_setup -- put the fixed file set in w's setup. */
void cx_workload_default_setup(struct cx_workload *w)
{
    struct cx_workload s;
    if (cx_workload_parse(wl_setup_text, "setup", &s) == 0) {
        memcpy(w->setup, s.ops, s.nops * sizeof *s.ops);
        w->nsetup = s.nops;
    }
}

/* cx_workload_overlap -- the two overlapping operations (issue 20): the
 * default file set, then `overlap /A/ov` (a create parked in its handle
 * while an fsync of /A commits) and a write of the new file.  0 or
 * -EINVAL. */
int cx_workload_overlap(struct cx_workload *w)
{
    static struct cx_workload s;   /* (large: not on the stack) */
    memset(w, 0, sizeof *w);
    cx_workload_default_setup(w);
    int rc = cx_workload_parse("overlap /A/ov\nwrite /A/ov 0 4096\n", "overlap", &s);
    if (rc == 0) {
        memcpy(w->ops, s.ops, s.nops * sizeof *s.ops);
        w->nops = s.nops;
    }
    return rc;
}

/* One core item: its ops (lines), the file and the directory to sync. */
struct wl_core {
    const char *ops;
    const char *file, *dir;
};

static const struct wl_core wl_cores[] = {
    { "creat /bar", "/bar", "/" },
    { "creat /A/bar", "/A/bar", "/A" },
    { "mkdir /C", "/C", "/" },
    { "mkdir /A/C", "/A/C", "/A" },
    { "write /foo 0 4096", "/foo", "/" },
    { "write /foo 1040 3008", "/foo", "/" },
    { "append /foo 4096", "/foo", "/" },
    { "append /A/foo 1200", "/A/foo", "/A" },
    { "write /foo 16384 4096", "/foo", "/" },
    { "creat /A/bar\nwrite /A/bar 0 12288", "/A/bar", "/A" },
    { "truncate /foo 0", "/foo", "/" },
    { "truncate /foo 5008", "/foo", "/" },
    { "truncate /A/foo 20480", "/A/foo", "/A" },
    { "fallocate /foo 8192 8192", "/foo", "/" },
    { "fallocate /A/foo 4096 8192 keep", "/A/foo", "/A" },
    { "link /foo /B/foo", "/B/foo", "/B" },
    { "link /A/foo /A/baz", "/A/baz", "/A" },
    { "unlink /foo", "/", "/" },
    { "unlink /A/foo", "/A", "/A" },
    { "rename /foo /bar", "/bar", "/" },
    { "rename /foo /A/foo", "/A/foo", "/A" },
    { "rename /A/foo /B/foo", "/B/foo", "/B" },
    { "rename /A /C", "/C", "/" },
    { "rename /A /B", "/B", "/" },
    { "rmdir /B", "/", "/" },
    { "symlink /foo /B/sym", "/B", "/B" },
    { "setxattr /foo user.a 64", "/foo", "/" },
    { "removexattr /A/foo user.x", "/A/foo", "/A" },
    { "open /foo\nunlink /foo", "/", "/" },
    { "open /A/foo\nrename /foo /A/foo\nclose /A/foo", "/A/foo", "/A" },
    { "write /foo 0 4096\ntick\ncreat /bar\ntick\ntick\ntick\ntick\ntick\ntick",
      "/bar", "/" },
    { "write /A/foo 0 8192\ntick\nunlink /foo\ntick", "/A/foo", "/A" },
};
#define WL_NCORES (sizeof wl_cores / sizeof wl_cores[0])
#define WL_NSUFFIX CX_GEN_SUFFIXES

/* cx_gen_variants -- core items times persistence suffixes. */
unsigned cx_gen_variants(void)
{
    return (unsigned)(WL_NCORES * WL_NSUFFIX);
}

/* wl_push -- append the ops of `text` to w.  0 or -E2BIG/-EINVAL. */
static int wl_push(struct cx_workload *w, const char *text)
{
    struct cx_workload t;
    int rc = cx_workload_parse(text, "generator", &t);
    if (rc < 0)
        return rc;
    if (w->nops + t.nops > CX_MAX_OPS)
        return -E2BIG;
    memcpy(w->ops + w->nops, t.ops, t.nops * sizeof *t.ops);
    w->nops += t.nops;
    return 0;
}

/* cx_gen_item -- append core item i / WL_NSUFFIX with suffix i % WL_NSUFFIX. */
int cx_gen_item(struct cx_workload *w, unsigned i)
{
    if (i >= cx_gen_variants())
        return ubj_set_error(-EINVAL, "generator: item %u of %u", i, cx_gen_variants());
    const struct wl_core *c = &wl_cores[i / WL_NSUFFIX];
    int rc = wl_push(w, c->ops);
    char sfx[96] = "";
    switch (i % WL_NSUFFIX) {
    case 1: snprintf(sfx, sizeof sfx, "fsync %s", c->file); break;
    case 2: snprintf(sfx, sizeof sfx, "fdatasync %s", c->file); break;
    case 3: snprintf(sfx, sizeof sfx, "fsync %s", c->dir); break;
    case 4: snprintf(sfx, sizeof sfx, "sync"); break;
    default: break;
    }
    if (rc == 0 && sfx[0])
        rc = wl_push(w, sfx);
    size_t l = strlen(w->name);
    if (l + 8 < sizeof w->name)
        snprintf(w->name + l, sizeof w->name - l, "%s%u", l ? "+" : "g", i);
    return rc;
}

/* ---- random workloads ------------------------------------------------------------ */

/* wl_rand -- splitmix64 step. */
static uint64_t wl_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* cx_gen_random -- nops random ops over 8 names in /, /d and /d/s. */
int cx_gen_random(struct cx_workload *w, uint64_t seed, unsigned nops)
{
    static const char *const names[] = { "/f0", "/f1", "/f2", "/f3", "/d/g0",
                                         "/d/g1", "/d/g2", "/d/s/h0" };
    static const char kinds[] = "cccwwwwaaatrrufFmRlTTsoxS";  /* weights */
    if (nops > CX_MAX_OPS)
        return ubj_set_error(-E2BIG, "random workload: more than %u ops", CX_MAX_OPS);
    int rc = cx_workload_parse("mkdir /d\ncreat /f0\nwrite /f0 0 8K\nbegin\n", "random", w);
    uint64_t x = seed;
    for (unsigned i = 0; rc == 0 && i < nops; i++) {
        const char *a = names[wl_rand(&x) % 8], *b = names[wl_rand(&x) % 8];
        const char *dir = wl_rand(&x) & 1 ? "/d" : "/d/s";
        char line[160];
        switch (kinds[wl_rand(&x) % (sizeof kinds - 1)]) {
        case 'c': snprintf(line, sizeof line, "creat %s", a); break;
        case 'w': snprintf(line, sizeof line, "write %s %llu %llu", a,
                           (unsigned long long)(wl_rand(&x) % 24) * 1024,
                           (unsigned long long)(1 + wl_rand(&x) % 200) * 64); break;
        case 'a': snprintf(line, sizeof line, "append %s %llu", a,
                           (unsigned long long)(1 + wl_rand(&x) % 300) * 16); break;
        case 't': snprintf(line, sizeof line, "truncate %s %llu", a,
                           (unsigned long long)(wl_rand(&x) % 800) * 16); break;
        case 'r': snprintf(line, sizeof line, "rename %s %s", a, b); break;
        case 'u': snprintf(line, sizeof line, "unlink %s", a); break;
        case 'f': snprintf(line, sizeof line, "fsync %s", a); break;
        case 'F': snprintf(line, sizeof line, "fdatasync %s", a); break;
        case 'm': snprintf(line, sizeof line, "mkdir %s", dir); break;
        case 'R': snprintf(line, sizeof line, "rmdir %s", dir); break;
        case 'l': snprintf(line, sizeof line, "link %s %s", a, b); break;
        case 'T': snprintf(line, sizeof line, "tick"); break;
        case 's': snprintf(line, sizeof line, "sync"); break;
        case 'o': snprintf(line, sizeof line, "open %s", a); break;
        case 'x': snprintf(line, sizeof line, "setxattr %s user.k %llu", a,
                           (unsigned long long)(1 + wl_rand(&x) % 20) * 16); break;
        default: snprintf(line, sizeof line, "fsync /d"); break;
        }
        rc = wl_push(w, line);
    }
    snprintf(w->name, sizeof w->name, "random%llu", (unsigned long long)seed);
    return rc;
}

/* ---- running an op -------------------------------------------------------------- */

/* cx_fill -- 16-byte cells naming (file, offset, version). */
void cx_fill(void *buf, size_t len, uint64_t fileid, uint64_t off, uint32_t ver)
{
    uint8_t *p = buf;
    for (size_t i = 0; i + 16 <= len; i += 16) {
        uint32_t cell = (uint32_t)((off + i) / 16), id = (uint32_t)fileid;
        uint32_t mix = (id * 0x9E3779B1u) ^ (ver * 0x85EBCA77u) ^ (cell * 0xC2B2AE3Du);
        uint16_t magic = 0xC5A1, chk = (uint16_t)(mix ^ (mix >> 16));
        memcpy(p + i, &magic, 2);
        memcpy(p + i + 2, &chk, 2);
        memcpy(p + i + 4, &id, 4);
        memcpy(p + i + 8, &ver, 4);
        memcpy(p + i + 12, &cell, 4);
    }
}

/* wl_ino -- the inode at path (following a last symlink unless nofollow). */
static long long wl_ino(struct ubj_fs *fs, const char *path, int nofollow,
                        struct ubj_stat *st)
{
    int rc = ubj_path_lookup(fs, path, nofollow ? UBJ_PATH_NOFOLLOW : 0, st);
    return rc < 0 ? rc : (long long)st->ino;
}

/* wl_parent -- parent inode and last name of path (copied into name). */
static int wl_parent(struct ubj_fs *fs, const char *path, ubj_ino_t *dir,
                     char name[CX_PATH_MAX])
{
    const char *n;
    int rc = ubj_path_parent(fs, path, dir, &n);
    if (rc < 0)
        return rc;
    snprintf(name, CX_PATH_MAX, "%s", n);
    char *slash = strchr(name, '/');
    if (slash)
        *slash = '\0';
    return 0;
}

/* wl_write -- write the op's cells at off. */
static long long wl_write(struct ubj_fs *fs, ubj_ino_t ino, uint64_t off,
                          uint64_t len, uint32_t ver)
{
    uint8_t *buf = malloc(len ? len : 16);
    if (buf == NULL)
        return -ENOMEM;
    cx_fill(buf, len, ino, off, ver);
    long long rc = ubj_pwrite(fs, ino, buf, len, (off_t)off);
    free(buf);
    return rc;
}

/* wl_open -- take a reference and remember it under the path. */
static long long wl_open(struct ubj_fs *fs, ubj_ino_t ino, const char *path,
                         struct cx_opens *o)
{
    if (o->n == CX_MAX_OPEN)
        return -EMFILE;
    int rc = ubj_open(fs, ino, O_RDONLY);
    if (rc == 0) {
        o->ino[o->n] = ino;
        snprintf(o->path[o->n++], CX_PATH_MAX, "%s", path);
    }
    return rc;
}

/* wl_close -- drop the newest reference taken under path. */
static long long wl_close(struct ubj_fs *fs, const char *path, struct cx_opens *o)
{
    for (unsigned i = o->n; i-- > 0;) {
        if (strcmp(o->path[i], path) != 0)
            continue;
        int rc = ubj_release(fs, o->ino[i]);
        o->n--;
        memmove(&o->ino[i], &o->ino[i + 1], (o->n - i) * sizeof o->ino[0]);
        memmove(o->path[i], o->path[i + 1], (o->n - i) * sizeof o->path[0]);
        return rc;
    }
    return -EBADF;
}

/* wl_apply_ino -- the ops that act on the inode at op->a. */
static long long wl_apply_ino(struct ubj_fs *fs, const struct cx_op *op, uint32_t ver,
                              struct cx_opens *o)
{
    struct ubj_stat st;
    int nofollow = op->kind == CX_SETXATTR || op->kind == CX_REMOVEXATTR;
    long long ino = wl_ino(fs, op->a, nofollow, &st);
    if (ino < 0)
        return ino;
    switch (op->kind) {
    case CX_WRITE:
        return wl_write(fs, (ubj_ino_t)ino, op->off, op->len, ver);
    case CX_APPEND:
        if (st.size % 16 != 0 || st.size + op->len > CX_MAX_FILE)
            return -EFBIG;
        return wl_write(fs, (ubj_ino_t)ino, st.size, op->len, ver);
    case CX_TRUNCATE: {
        struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = op->len };
        return ubj_setattr(fs, (ubj_ino_t)ino, &sa, NULL);
    }
    case CX_FALLOCATE:
        return ubj_fallocate(fs, (ubj_ino_t)ino, op->keep_size ? UBJ_FALLOC_KEEP_SIZE : 0,
                             (off_t)op->off, (off_t)op->len);
    case CX_SETXATTR: {
        uint8_t val[1024];
        cx_fill(val, op->len, (ubj_ino_t)ino, 0, ver);
        return ubj_setxattr(fs, (ubj_ino_t)ino, op->b, val, op->len, 0);
    }
    case CX_REMOVEXATTR:
        return ubj_removexattr(fs, (ubj_ino_t)ino, op->b);
    case CX_FSYNC:
    case CX_FDATASYNC:
        return ubj_fsync(fs, (ubj_ino_t)ino, op->kind == CX_FDATASYNC);
    case CX_OPEN:
        return wl_open(fs, (ubj_ino_t)ino, op->a, o);
    default:
        return -EINVAL;
    }
}

/* ---- overlap: two operations at once (test builds) -------------------------- */

#if UBJ_TEST_HOOKS
/* The pair `overlap PATH` runs: a create of PATH in a second thread,
 * parked inside its handle after its first ubj_txn_dirty with the mount
 * lock released (as a device read will be, issue 20 item 3), while this
 * thread fsyncs PATH's directory.  The parked create goes on once the
 * fsync waits in the commit barrier (it must) or has returned (the broken
 * variant handle-no-wait: it committed half of the create). */
struct wl_ov {
    struct ubj_fs *fs;
    ubj_ino_t dir;
    char name[CX_PATH_MAX];
    int parked, done, synced;   /* atomics */
    long long rc;
};

static _Thread_local int wl_park_me;   /* this thread's next dirty parks */

/* wl_nap -- 100 us. */
static void wl_nap(void)
{
    struct timespec ts = { 0, 100000 };
    nanosleep(&ts, NULL);
}

/* wl_park -- the handle layer's hook: park the create (see above). */
static void wl_park(void *arg, struct ubj_handle *h, uint64_t blkno)
{
    struct wl_ov *ov = arg;
    (void)blkno;
    if (!wl_park_me)
        return;
    wl_park_me = 0;
    __atomic_store_n(&ov->parked, 1, __ATOMIC_RELEASE);
    for (;;) {
        pthread_mutex_unlock(h->t->lock);
        wl_nap();
        pthread_mutex_lock(h->t->lock);
        if (h->t->hs.waiting_commit + h->t->hs.waiting_start > 0 ||
            __atomic_load_n(&ov->synced, __ATOMIC_ACQUIRE))
            break;
    }
}

/* wl_ov_main -- the parked create's thread. */
static void *wl_ov_main(void *arg)
{
    struct wl_ov *ov = arg;
    wl_park_me = 1;
    ov->rc = ubj_create(ov->fs, ov->dir, ov->name, 0644, NULL, NULL);
    __atomic_store_n(&ov->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* wl_overlap -- the pair; the create's error, else the fsync's. */
static long long wl_overlap(struct ubj_fs *fs, ubj_ino_t dir, const char *name)
{
    struct wl_ov ov = { .fs = fs, .dir = dir };
    snprintf(ov.name, sizeof ov.name, "%s", name);
    pthread_t a;
    ubj_handle_test_hook(wl_park, &ov);
    if (pthread_create(&a, NULL, wl_ov_main, &ov) != 0) {
        ubj_handle_test_hook(NULL, NULL);
        return -EAGAIN;
    }
    while (!__atomic_load_n(&ov.parked, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&ov.done, __ATOMIC_ACQUIRE))   /* (it failed early) */
        wl_nap();
    long long src = ubj_fsync(fs, dir, 0);
    __atomic_store_n(&ov.synced, 1, __ATOMIC_RELEASE);
    pthread_join(a, NULL);
    ubj_handle_test_hook(NULL, NULL);
    return ov.rc < 0 ? ov.rc : src;
}
#else
/* wl_overlap -- a plain build has no test hook to park an operation. */
static long long wl_overlap(struct ubj_fs *fs, ubj_ino_t dir, const char *name)
{
    (void)fs;
    (void)dir;
    (void)name;
    return ubj_set_error(-EOPNOTSUPP, "overlap: a test build's operation (UBJ_TEST_HOOKS)");
}
#endif /* UBJ_TEST_HOOKS */

/* cx_apply -- run one op. */
long long cx_apply(struct ubj_fs *fs, const struct cx_op *op, uint32_t ver,
                   struct cx_opens *o)
{
    ubj_ino_t d1, d2;
    char n1[CX_PATH_MAX], n2[CX_PATH_MAX];
    struct ubj_stat st;
    long long rc;
    switch (op->kind) {
    case CX_SYNC:
        return ubj_sync(fs);
    case CX_TICK:
        return ubj_tick(fs);
    case CX_CLOSE:
        return wl_close(fs, op->a, o);
    case CX_OVERLAP:
        if ((rc = wl_parent(fs, op->a, &d1, n1)) < 0)
            return rc;
        return wl_overlap(fs, d1, n1);
    case CX_CREAT:
    case CX_MKDIR:
    case CX_UNLINK:
    case CX_RMDIR:
        if ((rc = wl_parent(fs, op->a, &d1, n1)) < 0)
            return rc;
        if (op->kind == CX_CREAT)
            return ubj_create(fs, d1, n1, 0644, NULL, NULL);
        if (op->kind == CX_MKDIR)
            return ubj_mkdir(fs, d1, n1, 0755, NULL, NULL);
        return op->kind == CX_UNLINK ? ubj_unlink(fs, d1, n1) : ubj_rmdir(fs, d1, n1);
    case CX_SYMLINK:
        if ((rc = wl_parent(fs, op->b, &d1, n1)) < 0)
            return rc;
        return ubj_symlink(fs, op->a, d1, n1, NULL, NULL);
    case CX_LINK:
        if ((rc = wl_ino(fs, op->a, 1, &st)) < 0 || (rc = wl_parent(fs, op->b, &d1, n1)) < 0)
            return rc;
        return ubj_link(fs, st.ino, d1, n1, NULL);
    case CX_RENAME:
        if ((rc = wl_parent(fs, op->a, &d1, n1)) < 0 ||
            (rc = wl_parent(fs, op->b, &d2, n2)) < 0)
            return rc;
        return ubj_rename(fs, d1, n1, d2, n2, 0);
    default:
        return wl_apply_ino(fs, op, ver, o);
    }
}

/* cx_close_all -- release every reference still held. */
void cx_close_all(struct ubj_fs *fs, struct cx_opens *o)
{
    while (o->n > 0)
        ubj_release(fs, o->ino[--o->n]);
}
