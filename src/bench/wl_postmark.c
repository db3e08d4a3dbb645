/*
 * bench/wl_postmark.c -- PostMark (J. Katcher, "PostMark: a new file
 * system benchmark", NetApp TR-3022, 1997; postmark-1.5.c): the small,
 * short-lived files of mail and news servers.
 *
 * Setup (untimed): `files` files (default 500, x scale) of sizes uniform in
 * [min, max] (default 500 .. 10000 bytes), spread at random over `subdirs`
 * subdirectories (PostMark's default 0: all in one directory), written in
 * `write`-byte calls.
 * One transaction (PostMark's run_transactions loop body) is two parts:
 *   1. read or append, on a random existing file: read with probability
 *      bias_read/10 (default 5) -- open, the whole file in `read`-byte
 *      calls, close -- else append: open, a random amount uniform in
 *      [min, max] but not beyond max bytes of file, in `write`-byte calls,
 *      close;
 *   2. create or delete: create with probability bias_create/10 (default
 *      5) -- a new file of a random size, as in the setup -- else delete a
 *      random existing file.
 * Default transactions 500, block sizes 512 bytes (PostMark's defaults;
 * unbuffered: each block is one call).  PostMark's final deletion phase is
 * not run (the timed phase is the transactions, as PostMark's "transaction
 * time").  Processes (default 1) share one file pool; on the real clock
 * they overlap (bench_int.h, "Overlap"): a file a process works on is
 * busy (no other picks it), and slots are named by index, never by a
 * pointer held across a call (the pool may grow meanwhile).
 * kv: files, min, max, subdirs, read, write, bias_read, bias_create.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/bench_int.h"
#include "util/util.h"

struct pm_file {
    ubj_ino_t ino;           /* 0: free slot */
    bool busy;               /* a process works on it (overlap): not picked */
    uint32_t dir;            /* subdirectory index */
    uint64_t size;
    uint64_t name;           /* number in its name */
};

struct pm_state {
    uint64_t files, min, max, subdirs, rbs, wbs, bias_read, bias_create;
    ubj_ino_t *dirs;         /* subdirs entries, or the root alone */
    struct pm_file *f;       /* cap slots */
    uint64_t cap, nlive, next_name;
    uint64_t creating;       /* free slots taken by creates in progress */
};

static const char *const pm_keys[] = {
    "files", "min", "max", "subdirs", "read", "write", "bias_read",
    "bias_create", NULL
};

/* pm_params -- read kv and the scale. */
static int pm_params(struct bh_run *r, struct pm_state *s)
{
    int rc = bh_kv_check(r, pm_keys);
    if (rc == 0) rc = bh_kv_u64(r, "files", 500, &s->files);
    if (rc == 0) rc = bh_kv_u64(r, "min", 500, &s->min);
    if (rc == 0) rc = bh_kv_u64(r, "max", 10000, &s->max);
    if (rc == 0) rc = bh_kv_u64(r, "subdirs", 0, &s->subdirs);
    if (rc == 0) rc = bh_kv_u64(r, "read", 512, &s->rbs);
    if (rc == 0) rc = bh_kv_u64(r, "write", 512, &s->wbs);
    if (rc == 0) rc = bh_kv_u64(r, "bias_read", 5, &s->bias_read);
    if (rc == 0) rc = bh_kv_u64(r, "bias_create", 5, &s->bias_create);
    if (rc < 0)
        return rc;
    if (s->files == 0 || s->min > s->max || s->max > (1ull << 30) || s->rbs == 0 ||
        s->wbs == 0 || s->bias_read > 10 || s->bias_create > 10 || s->subdirs > 100000)
        return ubj_set_error(-EINVAL, "bench postmark: need files >= 1, min <= max <= "
                             "1 GiB, block sizes > 0, biases 0..10, subdirs <= 100000");
    double n = (double)s->files * bh_params_of(r)->scale;
    s->files = n < 1 ? 1 : (uint64_t)n;
    return bh_params_end(r);
}

/* pm_name -- the file name of slot f. */
static void pm_name(const struct pm_file *f, char *buf, size_t size)
{
    snprintf(buf, size, "pm%llu", (unsigned long long)f->name);
}

/* pm_slot -- a free slot for a new file, growing the pool if full: its
 * index, or -ENOMEM. */
static int64_t pm_slot(struct pm_state *s, struct bh_proc *p)
{
    if (s->nlive + s->creating == s->cap) {
        uint64_t cap = s->cap * 2;
        struct pm_file *n = realloc(s->f, cap * sizeof *n);
        if (n == NULL)
            return ubj_set_error(-ENOMEM, "bench postmark: out of memory");
        memset(n + s->cap, 0, (cap - s->cap) * sizeof *n);
        s->f = n;
        s->cap = cap;
    }
    uint64_t i = bh_below(p, s->cap);
    while (s->f[i].ino != 0 || s->f[i].busy)
        i = (i + 1) % s->cap;
    return (int64_t)i;
}

/* pm_create -- a new file in a free slot (PostMark's create_file). */
static int pm_create(struct bh_run *r, struct pm_state *s, struct bh_proc *p)
{
    int64_t i = pm_slot(s, p);
    if (i < 0)
        return (int)i;
    struct pm_file *f = &s->f[i];
    char name[BH_NAME_LEN];
    f->busy = true;
    s->creating++;
    f->name = s->next_name++;
    f->dir = (uint32_t)bh_below(p, s->subdirs ? s->subdirs : 1);
    f->size = bh_range(p, s->min, s->max);
    uint64_t size = f->size;
    pm_name(f, name, sizeof name);
    ubj_ino_t ino = 0;
    int rc = bh_create(r, s->dirs[f->dir], name, &ino);
    s->creating--;
    if (rc == 0) {
        s->f[i].ino = ino;         /* s->f may have moved during the call */
        s->nlive++;
        rc = bh_write(r, ino, 0, size, s->wbs, BH_OP_WRITE);
    }
    s->f[i].busy = false;
    return rc;
}

/* pm_pick -- a random live slot that is not busy, marked busy; -1 if none
 * (a scan from a random start: with nothing busy, the first live slot). */
static int64_t pm_pick(struct pm_state *s, struct bh_proc *p)
{
    if (s->nlive == 0)
        return -1;
    uint64_t i = bh_below(p, s->cap);
    for (uint64_t k = 0; k < s->cap; k++, i = (i + 1) % s->cap)
        if (s->f[i].ino != 0 && !s->f[i].busy) {
            s->f[i].busy = true;
            return (int64_t)i;
        }
    return -1;
}

/* pm_delete -- remove a random file. */
static int pm_delete(struct bh_run *r, struct pm_state *s, struct bh_proc *p)
{
    int64_t i = pm_pick(s, p);
    if (i < 0)
        return 0;
    char name[BH_NAME_LEN];
    pm_name(&s->f[i], name, sizeof name);
    int rc = bh_unlink(r, s->dirs[s->f[i].dir], name);
    s->f[i].ino = 0;
    s->f[i].busy = false;
    s->nlive--;
    return rc;
}

/* pm_read_append -- part 1 of a transaction. */
static int pm_read_append(struct bh_run *r, struct pm_state *s, struct bh_proc *p)
{
    int64_t i = pm_pick(s, p);
    if (i < 0)
        return 0;
    ubj_ino_t ino = s->f[i].ino;
    uint64_t size = s->f[i].size;
    bool rd = bh_below(p, 10) < s->bias_read;
    int rc = bh_open(r, ino, rd ? 0 : 1);
    if (rc == 0) {
        if (rd) {
            int64_t got = bh_read(r, ino, 0, size, s->rbs);
            rc = got < 0 ? (int)got : 0;
        } else {
            uint64_t n = bh_range(p, s->min, s->max);
            if (size + n > s->max)
                n = s->max > size ? s->max - size : 0;
            rc = bh_write(r, ino, size, n, s->wbs, BH_OP_APPEND);
            if (rc == 0)
                s->f[i].size = size + n;
        }
        int crc = bh_close(r, ino);
        rc = rc < 0 ? rc : crc;
    }
    s->f[i].busy = false;
    return rc;
}

/* pm_init -- the subdirectories and the initial files. */
static int pm_init(struct bh_run *r)
{
    struct pm_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench postmark: out of memory");
    bh_set_state(r, s);
    int rc = pm_params(r, s);
    if (rc < 0)
        return rc;
    s->cap = s->files * 2;
    s->f = calloc(s->cap, sizeof *s->f);
    s->dirs = calloc(s->subdirs ? s->subdirs : 1, sizeof *s->dirs);
    if (s->f == NULL || s->dirs == NULL)
        return ubj_set_error(-ENOMEM, "bench postmark: out of memory");
    s->dirs[0] = UBJ_ROOT_INO;
    char name[BH_NAME_LEN];
    for (uint64_t i = 0; rc == 0 && i < s->subdirs; i++) {
        snprintf(name, sizeof name, "s%llu", (unsigned long long)i);
        rc = bh_mkdir(r, UBJ_ROOT_INO, name, &s->dirs[i]);
    }
    for (uint64_t i = 0; rc == 0 && i < s->files; i++)
        rc = pm_create(r, s, bh_setup_proc(r));
    return rc;
}

/* pm_op -- one PostMark transaction. */
static int pm_op(struct bh_run *r, struct bh_proc *p)
{
    struct pm_state *s = bh_state(r);
    int rc = pm_read_append(r, s, p);
    if (rc < 0)
        return rc;
    if (bh_below(p, 10) < s->bias_create)
        return pm_create(r, s, p);
    return pm_delete(r, s, p);
}

/* pm_fini -- free the state. */
static void pm_fini(struct bh_run *r)
{
    struct pm_state *s = bh_state(r);
    if (s == NULL)
        return;
    free(s->f);
    free(s->dirs);
    free(s);
    bh_set_state(r, NULL);
}

const struct bh_workload bh_wl_postmark = {
    .name = "postmark",
    .summary = "PostMark (Katcher 1997, NetApp TR-3022): small-file create/"
               "delete and read/append transactions",
    .default_procs = 1,
    .default_ops = 500,
    .init = pm_init,
    .op = pm_op,
    .fini = pm_fini,
};
