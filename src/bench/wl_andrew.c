/*
 * bench/wl_andrew.c -- an Andrew-like benchmark (issue 21 item 5): the five
 * phases of the Andrew benchmark (Howard et al., "Scale and Performance in
 * a Distributed File System", ACM TOCS 6(1), 1988), run by N users at
 * once, each on a tree of its own (as Ganger & Patt's multi-user copy).
 *
 * What the original is (as published): a read-only source subtree of about
 * 70 files, about 200 KB, the source of an application program, and five
 * phases: MakeDir (build a target subtree of the source's shape), Copy
 * (copy every file into it), ScanDir (examine the status of every file,
 * reading no data), ReadAll (read every byte of every file) and Make
 * (compile and link the files).  What is assumed here (no source gives
 * it): the tree's shape (`dirs` 5 directories, fan-out 4, file i in
 * directory i % dirs), the sizes (gamma, mean 2900 B, shape 1: 70 x 2900 B
 * = ~200 KB), one file in five a header (i % 5 == 0) and the rest
 * compiled, an object file as large as its source, and the compiler's CPU
 * time (`compile_us` per KiB of source read, default 1000: ~0.2 s per
 * user) and the linker's (`link_ms`, default 20), charged as think time on
 * the run's clock (bh_sleep_ns, outside the bookkeeping lock, so on the
 * real clock another user runs meanwhile).
 *
 * Setup (untimed): per user u, a source tree a<u>/src (directories
 * d<j>, files f<i>; the same sizes for every user).  A user's steps, one
 * transaction each, phase by phase (bh_proc.phase):
 *   mkdir    a<u>/dst, then its directories, parents first
 *   copy     per file: open + read the source (64 KiB calls), create +
 *            write the copy, close both
 *   stat     per directory: readdir, then a lookup (stat) of each of its files
 *   read     per file of the copy: open, read every byte, close
 *   compile  per compiled file: open + read it and the headers of its
 *            directory, the compiler's CPU time, create + write f<i>.o;
 *            then the link: read every object, the linker's CPU time,
 *            create + write a<u>/dst/prog (the objects' total size)
 * A user is done after its link; the run ends when every user is (ops 0 =
 * until then).  Phase times: bh_result.phase_ns.
 * kv: files, dirs, filesize, compile_us, link_ms.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench_int.h"
#include "util/util.h"

#define AN_FANOUT 4u
#define AN_IO 65536u
#define AN_HDR(i) ((i) % 5 == 0)   /* one file in five is a header */

enum an_phase { AN_MKDIR, AN_COPY, AN_STAT, AN_READ, AN_COMPILE, AN_NPHASES };
static const char *const an_phases[] = { "mkdir", "copy", "stat", "read", "compile", NULL };

struct an_user {
    uint64_t step;
    ubj_ino_t stop, dtop;     /* src and dst top directories */
    ubj_ino_t *sdir, *ddir;   /* [dirs] */
    ubj_ino_t *sfile, *dfile; /* [files] */
};

struct an_state {
    uint64_t nfiles, ndirs, compile_us, link_ms, ncomp;
    uint64_t *size;           /* [files], every user's */
    struct an_user *users;
    unsigned nusers;
};

static const char *const an_keys[] = { "files", "dirs", "filesize", "compile_us",
                                       "link_ms", NULL };

/* an_parent -- directory j's parent (-1: the tree's top). */
static int64_t an_parent(uint64_t j)
{
    return j == 0 ? -1 : (int64_t)((j - 1) / AN_FANOUT);
}

/* an_dname -- "d<j>". */
static void an_dname(uint64_t j, char *buf, size_t size)
{
    snprintf(buf, size, "d%llu", (unsigned long long)j);
}

/* an_think -- CPU time on the run's clock, the bookkeeping lock released
 * (as a counted call's, bench_int.h "Overlap"). */
static void an_think(struct bh_run *r, uint64_t ns)
{
    bh_call_begin(r);
    bh_sleep_ns(r, ns);
    bh_call_end(r);
}

/* an_build -- user u's source tree. */
static int an_build(struct bh_run *r, struct an_state *s, unsigned uid)
{
    struct an_user *u = &s->users[uid];
    char name[BH_NAME_LEN];
    ubj_ino_t top;
    snprintf(name, sizeof name, "a%u", uid);
    int rc = bh_mkdir(r, UBJ_ROOT_INO, name, &top);
    if (rc == 0)
        rc = bh_mkdir(r, top, "src", &u->stop);
    for (uint64_t j = 0; rc == 0 && j < s->ndirs; j++) {
        int64_t pj = an_parent(j);
        an_dname(j, name, sizeof name);
        rc = bh_mkdir(r, pj < 0 ? u->stop : u->sdir[pj], name, &u->sdir[j]);
    }
    for (uint64_t i = 0; rc == 0 && i < s->nfiles; i++) {
        bh_fentry_name(i, name, sizeof name);
        rc = bh_create(r, u->sdir[i % s->ndirs], name, &u->sfile[i]);
        if (rc == 0)
            rc = bh_write(r, u->sfile[i], 0, s->size[i], AN_IO, BH_OP_WRITE);
    }
    return rc;
}

/* an_params -- the kv over the defaults, checked. */
static int an_params(struct bh_run *r, struct an_state *s, uint64_t *fsize)
{
    int rc = bh_kv_check(r, an_keys);
    if (rc == 0) rc = bh_kv_u64(r, "files", 70, &s->nfiles);
    if (rc == 0) rc = bh_kv_u64(r, "dirs", 5, &s->ndirs);
    if (rc == 0) rc = bh_kv_u64(r, "filesize", 2900, fsize);
    if (rc == 0) rc = bh_kv_u64(r, "compile_us", 1000, &s->compile_us);
    if (rc == 0) rc = bh_kv_u64(r, "link_ms", 20, &s->link_ms);
    if (rc < 0)
        return rc;
    if (s->nfiles == 0 || s->nfiles > 1000000 || s->ndirs == 0 || s->ndirs > 100000 ||
        *fsize == 0 || *fsize > (1u << 30) || s->compile_us > 1000000 ||
        s->link_ms > 100000)
        return ubj_set_error(-EINVAL, "bench andrew: files 1 .. 1000000, dirs 1 .. "
                             "100000, filesize 1 .. 1g, compile_us <= 1000000, "
                             "link_ms <= 100000");
    return 0;
}

/* an_init -- parameters, the sizes, every user's source tree. */
static int an_init(struct bh_run *r)
{
    struct an_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench andrew: out of memory");
    bh_set_state(r, s);
    uint64_t fsize;
    int rc = an_params(r, s, &fsize);
    if (rc < 0)
        return rc;
    if ((rc = bh_params_end(r)) != 0)
        return rc;
    s->nfiles = fb_scaled(r, s->nfiles);
    for (uint64_t i = 0; i < s->nfiles; i++)
        s->ncomp += !AN_HDR(i);
    s->nusers = bh_params_of(r)->procs;
    s->size = calloc(s->nfiles, sizeof *s->size);
    s->users = calloc(s->nusers, sizeof *s->users);
    if (s->size == NULL || s->users == NULL)
        return ubj_set_error(-ENOMEM, "bench andrew: out of memory");
    for (unsigned u = 0; u < s->nusers; u++) {
        struct an_user *x = &s->users[u];
        x->sdir = calloc(s->ndirs, sizeof *x->sdir);
        x->ddir = calloc(s->ndirs, sizeof *x->ddir);
        x->sfile = calloc(s->nfiles, sizeof *x->sfile);
        x->dfile = calloc(s->nfiles, sizeof *x->dfile);
        if (!x->sdir || !x->ddir || !x->sfile || !x->dfile)
            return ubj_set_error(-ENOMEM, "bench andrew: out of memory");
    }
    struct bh_proc *p = bh_setup_proc(r);
    for (uint64_t i = 0; i < s->nfiles; i++)
        s->size[i] = bh_gamma(p, (double)fsize, 1.0);
    for (unsigned u = 0; rc == 0 && u < s->nusers; u++)
        rc = an_build(r, s, u);
    return rc;
}

/* an_readall -- open, read every byte, close; the bytes read or an errno. */
static int64_t an_readall(struct bh_run *r, ubj_ino_t ino, uint64_t size)
{
    int rc = bh_open(r, ino, 0);
    if (rc < 0)
        return rc;
    int64_t got = bh_read(r, ino, 0, size, AN_IO);
    rc = bh_close(r, ino);
    return got < 0 ? got : rc < 0 ? rc : got;
}

/* an_newfile -- create dir/name, write len bytes, close. */
static int an_newfile(struct bh_run *r, ubj_ino_t dir, const char *name, uint64_t len,
                      ubj_ino_t *ino)
{
    int rc = bh_create(r, dir, name, ino);
    if (rc == 0)
        rc = bh_open(r, *ino, 1);
    if (rc == 0) {
        rc = bh_write(r, *ino, 0, len, AN_IO, BH_OP_WRITE);
        int crc = bh_close(r, *ino);
        rc = rc < 0 ? rc : crc;
    }
    return rc;
}

/* an_copy -- source file i into the user's copy. */
static int an_copy(struct bh_run *r, struct an_state *s, struct an_user *u, uint64_t i)
{
    char name[BH_NAME_LEN];
    int64_t got = an_readall(r, u->sfile[i], s->size[i]);
    if (got < 0)
        return (int)got;
    bh_fentry_name(i, name, sizeof name);
    return an_newfile(r, u->ddir[i % s->ndirs], name, (uint64_t)got, &u->dfile[i]);
}

/* an_scan -- readdir directory j of the copy, stat each of its files. */
static int an_scan(struct bh_run *r, struct an_state *s, struct an_user *u, uint64_t j)
{
    char name[BH_NAME_LEN];
    struct ubj_stat st;
    int64_t n = bh_listdir(r, u->ddir[j]);
    int rc = n < 0 ? (int)n : 0;
    for (uint64_t i = j; rc == 0 && i < s->nfiles; i += s->ndirs) {
        bh_fentry_name(i, name, sizeof name);
        rc = bh_lookup(r, u->ddir[j], name, &st);
    }
    return rc;
}

/* an_compile -- the k-th compiled file: it and its directory's headers
 * read, the compiler's time, the object written. */
static int an_compile(struct bh_run *r, struct an_state *s, struct an_user *u, uint64_t k)
{
    uint64_t i = 0, seen = 0;
    for (; i < s->nfiles; i++)            /* the k-th file that is not a header */
        if (!AN_HDR(i) && seen++ == k)
            break;
    uint64_t d = i % s->ndirs, bytes = 0;
    int64_t got = an_readall(r, u->dfile[i], s->size[i]);
    for (uint64_t h = d; got >= 0 && h < s->nfiles; h += s->ndirs)
        if (AN_HDR(h)) {
            bytes += (uint64_t)got;
            got = an_readall(r, u->dfile[h], s->size[h]);
        }
    if (got < 0)
        return (int)got;
    bytes += (uint64_t)got;
    an_think(r, s->compile_us * 1000 * bytes / 1024);
    char name[BH_NAME_LEN + 2];
    ubj_ino_t obj;
    snprintf(name, sizeof name, "f%llu.o", (unsigned long long)i);
    return an_newfile(r, u->ddir[d], name, s->size[i], &obj);
}

/* an_link -- every object read, the linker's time, prog written. */
static int an_link(struct bh_run *r, struct an_state *s, struct an_user *u)
{
    char name[BH_NAME_LEN + 2];
    struct ubj_stat st;
    uint64_t total = 0;
    for (uint64_t i = 0; i < s->nfiles; i++) {
        if (AN_HDR(i))
            continue;
        snprintf(name, sizeof name, "f%llu.o", (unsigned long long)i);
        int rc = bh_lookup(r, u->ddir[i % s->ndirs], name, &st);
        int64_t got = rc < 0 ? rc : an_readall(r, st.ino, s->size[i]);
        if (got < 0)
            return (int)got;
        total += (uint64_t)got;
    }
    an_think(r, s->link_ms * 1000000);
    ubj_ino_t prog;
    return an_newfile(r, u->dtop, "prog", total, &prog);
}

/* an_step -- step k of user uid; its phase into *phase. */
static int an_step(struct bh_run *r, struct an_state *s, unsigned uid, uint64_t k,
                   unsigned *phase)
{
    struct an_user *u = &s->users[uid];
    uint64_t nd = s->ndirs, nf = s->nfiles;
    char name[BH_NAME_LEN];
    if (k <= nd) {
        *phase = AN_MKDIR;
        if (k == 0) {
            struct ubj_stat st;
            snprintf(name, sizeof name, "a%u", uid);
            int rc = bh_lookup(r, UBJ_ROOT_INO, name, &st);
            return rc < 0 ? rc : bh_mkdir(r, st.ino, "dst", &u->dtop);
        }
        int64_t pj = an_parent(k - 1);
        an_dname(k - 1, name, sizeof name);
        return bh_mkdir(r, pj < 0 ? u->dtop : u->ddir[pj], name, &u->ddir[k - 1]);
    }
    k -= nd + 1;
    if (k < nf) {
        *phase = AN_COPY;
        return an_copy(r, s, u, k);
    }
    k -= nf;
    if (k < nd) {
        *phase = AN_STAT;
        return an_scan(r, s, u, k);
    }
    k -= nd;
    if (k < nf) {
        *phase = AN_READ;
        int64_t got = an_readall(r, u->dfile[k], s->size[k]);
        return got < 0 ? (int)got : 0;
    }
    k -= nf;
    *phase = AN_COMPILE;
    return k < s->ncomp ? an_compile(r, s, u, k) : an_link(r, s, u);
}

/* an_op -- the user's next step; 1 after its link. */
static int an_op(struct bh_run *r, struct bh_proc *p)
{
    struct an_state *s = bh_state(r);
    struct an_user *u = &s->users[p->id];
    uint64_t steps = 2 * (s->ndirs + s->nfiles) + 1 + s->ncomp + 1;
    if (u->step >= steps)
        return 1;
    int rc = an_step(r, s, p->id, u->step, &p->phase);
    if (rc < 0)
        return rc;
    u->step++;
    return 0;
}

/* an_fini -- free the state. */
static void an_fini(struct bh_run *r)
{
    struct an_state *s = bh_state(r);
    if (s == NULL)
        return;
    for (unsigned u = 0; s->users != NULL && u < s->nusers; u++) {
        free(s->users[u].sdir);
        free(s->users[u].ddir);
        free(s->users[u].sfile);
        free(s->users[u].dfile);
    }
    free(s->users);
    free(s->size);
    free(s);
    bh_set_state(r, NULL);
}

const struct bh_workload bh_wl_andrew = {
    .name = "andrew",
    .summary = "Andrew benchmark (Howard et al., TOCS 1988): per user mkdir, copy, "
               "stat, read and a synthetic compile of a ~200 KB source tree",
    .default_procs = 1,
    .default_ops = 0,
    .init = an_init,
    .op = an_op,
    .fini = an_fini,
    .phases = an_phases,
};
