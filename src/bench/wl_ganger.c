/*
 * bench/wl_ganger.c -- the metadata-intensive benchmark of G. Ganger and
 * Y. Patt ("Metadata update performance in file systems", OSDI 1994, and
 * Ganger's dissertation, 1995): N users, each copying a directory tree
 * and then removing the copy, concurrently.
 *
 * Their trees were real source trees; ours is synthetic, with the shape
 * as parameters: a source tree "src" built before the run (untimed) of
 * `dirs` directories (default 40) in a tree of fan-out 4 and `files`
 * files (default 500, x scale) of gamma-distributed sizes (mean 8 KiB,
 * shape 1), file i in directory i % dirs.  Users = processes (default 4).
 * User u's task: mkdir u<u>; the directories (parents first); each file
 * copied (open and read the source in 64 KiB calls, create and write the
 * copy, close both); then remove: every file, the directories (children
 * first), u<u>.  One transaction = one of those steps (one directory or
 * one file).  A user is done after `rounds` (default 1) copy+remove
 * cycles; the run ends when all are (ops 0 = until then).  Task elapsed
 * time is the figure to read (bh_result.user_ns; phases "copy": the
 * mkdirs and copies, "remove": the rest; with rounds > 1, "copy" ends
 * with the last round's last copy).
 * kv: files, dirs, filesize, rounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench/bench_int.h"
#include "util/util.h"

#define GG_FANOUT 4u
#define GG_IO 65536u

struct gg_file { ubj_ino_t ino; uint64_t size; };

struct gg_user {
    uint64_t step;            /* within the cycle */
    uint64_t round;
    ubj_ino_t top;
    ubj_ino_t *dirs;          /* the copy's directories */
};

struct gg_state {
    uint64_t nfiles, ndirs, rounds;
    ubj_ino_t *sdirs;         /* source directories */
    struct gg_file *files;
    struct gg_user *users;
    unsigned nusers;
};

static const char *const gg_phases[] = { "copy", "remove", NULL };
static const char *const gg_keys[] = { "files", "dirs", "filesize", "rounds", NULL };

/* gg_parent -- index of directory j's parent (-1: the tree's top). */
static int64_t gg_parent(uint64_t j)
{
    return j == 0 ? -1 : (int64_t)((j - 1) / GG_FANOUT);
}

/* gg_build -- the source tree. */
static int gg_build(struct bh_run *r, struct gg_state *s, uint64_t fsize)
{
    ubj_ino_t top;
    char name[BH_NAME_LEN];
    int rc = bh_mkdir(r, UBJ_ROOT_INO, "src", &top);
    for (uint64_t j = 0; rc == 0 && j < s->ndirs; j++) {
        int64_t pj = gg_parent(j);
        snprintf(name, sizeof name, "d%llu", (unsigned long long)j);
        rc = bh_mkdir(r, pj < 0 ? top : s->sdirs[pj], name, &s->sdirs[j]);
    }
    struct bh_proc *p = bh_setup_proc(r);
    for (uint64_t i = 0; rc == 0 && i < s->nfiles; i++) {
        s->files[i].size = bh_gamma(p, (double)fsize, 1.0);
        bh_fentry_name(i, name, sizeof name);
        rc = bh_create(r, s->sdirs[i % s->ndirs], name, &s->files[i].ino);
        if (rc == 0)
            rc = bh_write(r, s->files[i].ino, 0, s->files[i].size, GG_IO, BH_OP_WRITE);
    }
    return rc;
}

/* gg_init -- parameters, the source tree, the users. */
static int gg_init(struct bh_run *r)
{
    struct gg_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench ganger: out of memory");
    bh_set_state(r, s);
    uint64_t fsize;
    int rc = bh_kv_check(r, gg_keys);
    if (rc == 0) rc = bh_kv_u64(r, "files", 500, &s->nfiles);
    if (rc == 0) rc = bh_kv_u64(r, "dirs", 40, &s->ndirs);
    if (rc == 0) rc = bh_kv_u64(r, "filesize", 8192, &fsize);
    if (rc == 0) rc = bh_kv_u64(r, "rounds", 1, &s->rounds);
    if (rc < 0)
        return rc;
    if (s->nfiles == 0 || s->ndirs == 0 || s->ndirs > 100000 || s->rounds == 0 ||
        fsize == 0)
        return ubj_set_error(-EINVAL, "bench ganger: dirs 1 .. 100000, files, rounds "
                             "and filesize > 0");
    if ((rc = bh_params_end(r)) != 0)
        return rc;
    s->nfiles = fb_scaled(r, s->nfiles);
    s->nusers = bh_params_of(r)->procs;
    s->sdirs = calloc(s->ndirs, sizeof *s->sdirs);
    s->files = calloc(s->nfiles, sizeof *s->files);
    s->users = calloc(s->nusers, sizeof *s->users);
    for (unsigned u = 0; s->users != NULL && u < s->nusers; u++)
        if ((s->users[u].dirs = calloc(s->ndirs, sizeof(ubj_ino_t))) == NULL)
            rc = -ENOMEM;
    if (rc < 0 || s->sdirs == NULL || s->files == NULL || s->users == NULL)
        return ubj_set_error(-ENOMEM, "bench ganger: out of memory");
    return gg_build(r, s, fsize);
}

/* gg_copy_file -- copy source file i into user u's tree. */
static int gg_copy_file(struct bh_run *r, struct gg_state *s, struct gg_user *u,
                        uint64_t i)
{
    char name[BH_NAME_LEN];
    ubj_ino_t dst;
    const struct gg_file *f = &s->files[i];
    bh_fentry_name(i, name, sizeof name);
    int rc = bh_open(r, f->ino, 0);
    if (rc < 0)
        return rc;
    int64_t got = bh_read(r, f->ino, 0, f->size, GG_IO);
    rc = got < 0 ? (int)got : bh_create(r, u->dirs[i % s->ndirs], name, &dst);
    if (rc == 0)
        rc = bh_open(r, dst, 1);
    if (rc == 0)
        rc = bh_write(r, dst, 0, (uint64_t)got, GG_IO, BH_OP_WRITE);
    if (rc == 0)
        rc = bh_close(r, dst);
    int crc = bh_close(r, f->ino);
    return rc < 0 ? rc : crc;
}

/* gg_step -- step k of a copy+remove cycle. */
static int gg_step(struct bh_run *r, struct gg_state *s, struct gg_user *u,
                   unsigned uid, uint64_t k)
{
    char name[BH_NAME_LEN];
    uint64_t nd = s->ndirs, nf = s->nfiles;
    if (k == 0) {
        snprintf(name, sizeof name, "u%u", uid);
        return bh_mkdir(r, UBJ_ROOT_INO, name, &u->top);
    }
    if (k <= nd) {
        uint64_t j = k - 1;
        int64_t pj = gg_parent(j);
        snprintf(name, sizeof name, "d%llu", (unsigned long long)j);
        return bh_mkdir(r, pj < 0 ? u->top : u->dirs[pj], name, &u->dirs[j]);
    }
    if (k <= nd + nf)
        return gg_copy_file(r, s, u, k - nd - 1);
    if (k <= nd + 2 * nf) {
        uint64_t i = k - nd - nf - 1;
        bh_fentry_name(i, name, sizeof name);
        return bh_unlink(r, u->dirs[i % nd], name);
    }
    if (k <= 2 * nd + 2 * nf) {
        uint64_t j = nd - 1 - (k - nd - 2 * nf - 1);
        int64_t pj = gg_parent(j);
        snprintf(name, sizeof name, "d%llu", (unsigned long long)j);
        return bh_rmdir(r, pj < 0 ? u->top : u->dirs[pj], name);
    }
    snprintf(name, sizeof name, "u%u", uid);
    return bh_rmdir(r, UBJ_ROOT_INO, name);
}

/* gg_op -- the user's next step; 1 when its rounds are done. */
static int gg_op(struct bh_run *r, struct bh_proc *p)
{
    struct gg_state *s = bh_state(r);
    struct gg_user *u = &s->users[p->id];
    if (u->round >= s->rounds)
        return 1;
    p->phase = u->step <= s->ndirs + s->nfiles ? 0 : 1;   /* copy, remove */
    int rc = gg_step(r, s, u, p->id, u->step);
    if (rc < 0)
        return rc;
    if (++u->step == 2 * s->ndirs + 2 * s->nfiles + 2) {
        u->step = 0;
        u->round++;
    }
    return 0;
}

/* gg_fini -- free the state. */
static void gg_fini(struct bh_run *r)
{
    struct gg_state *s = bh_state(r);
    if (s == NULL)
        return;
    for (unsigned u = 0; s->users != NULL && u < s->nusers; u++)
        free(s->users[u].dirs);
    free(s->users);
    free(s->sdirs);
    free(s->files);
    free(s);
    bh_set_state(r, NULL);
}

const struct bh_workload bh_wl_ganger = {
    .name = "ganger",
    .summary = "Ganger & Patt (OSDI'94): N users each copy a directory tree, "
               "then remove it",
    .default_procs = 4,
    .default_ops = 0,
    .init = gg_init,
    .op = gg_op,
    .fini = gg_fini,
    .phases = gg_phases,
};
