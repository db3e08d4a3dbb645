/*
 * ls.c -- `ubjfs ls`: list files of an image like ls(1): one name per
 * line, or with -l the mode string, link count, numeric uid and gid, size
 * (major, minor for devices), mtime, name and "-> target" for symlinks.
 * Entries are sorted bytewise by name; names starting with '.' are shown
 * only with -a (which also shows "." and ".."); -R descends into
 * subdirectories (never through symlinks) with a "IMAGE:/dir:" header.
 *
 * The image is mounted read-only, one operand at a time.
 */
#include <errno.h>
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "tools.h"

#define LS_MAX_DEPTH 1024u     /* -R: deeper than this is reported, not followed */

struct ls_opts {
    bool longfmt, all, recursive;
    ubj_ino_t stack[LS_MAX_DEPTH];  /* -R: the directories being listed */
    unsigned depth;
    bool headers;           /* print "IMAGE:/dir:" before a listing */
    bool first;             /* nothing printed yet (no blank line first) */
    bool failed;
};

/* One line of a long listing, gathered first to size the columns. */
struct ls_row {
    const char *name;
    struct ubj_stat st;
    char *target;           /* symlinks: malloc'd target */
};

/* ls_usage -- the --help text. */
static void ls_usage(void)
{
    printf("Usage: %s [-l] [-a] [-R] [--nvm PATH] IMAGE:/path...\n"
           "List directories (their entries) and files of a ubjfs image.\n\n"
           "Options:\n"
           "  -l          long format: mode, links, uid, gid, size, mtime, name\n"
           "              and '-> target' for symlinks (a symlink operand is\n"
           "              shown itself; without -l one to a directory is listed)\n"
           "  -a          include names starting with '.', and '.' and '..'\n"
           "  -R          list subdirectories recursively\n"
           TOOLS_NVM_HELP
           "      --help  print this help\n\n"
           "Names are sorted bytewise; times are local (set TZ for another zone).\n"
           "Exit status: 0 listed, 1 an operand could not be listed, 2 usage error.\n",
           tools_prog);
}

/* ls_fail -- report one problem and remember it. */
static void ls_fail(struct ls_opts *o, const char *image, const char *path, int rc)
{
    tools_err("%s:%s: %s", image, path, tools_strerror(rc));
    o->failed = true;
}

/* ls_numlen -- decimal digits of v. */
static int ls_numlen(uint64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* ls_size_text -- the size column: bytes, or "major, minor" for devices. */
static void ls_size_text(const struct ubj_stat *st, char *buf, size_t len)
{
    if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
        snprintf(buf, len, "%u, %u", major((dev_t)st->rdev), minor((dev_t)st->rdev));
    else
        snprintf(buf, len, "%llu", (unsigned long long)st->size);
}

/* ls_print_rows -- print gathered rows, columns aligned. */
static void ls_print_rows(const struct ls_row *r, size_t n, bool total)
{
    int wl = 1, wu = 1, wg = 1, ws = 1;
    uint64_t blocks = 0;
    char sz[48];
    for (size_t i = 0; i < n; i++) {
        int l;
        ls_size_text(&r[i].st, sz, sizeof sz);
        wl = (l = ls_numlen(r[i].st.nlink)) > wl ? l : wl;
        wu = (l = ls_numlen(r[i].st.uid)) > wu ? l : wu;
        wg = (l = ls_numlen(r[i].st.gid)) > wg ? l : wg;
        ws = (l = (int)strlen(sz)) > ws ? l : ws;
        blocks += r[i].st.blocks;
    }
    if (total)
        printf("total %llu\n", (unsigned long long)((blocks + 1) / 2));
    for (size_t i = 0; i < n; i++) {
        char mode[11], when[64];
        tools_mode_string(r[i].st.mode, mode);
        tools_fmt_time(&r[i].st.mtime, false, when, sizeof when);
        ls_size_text(&r[i].st, sz, sizeof sz);
        printf("%s %*u %*u %*u %*s %s %s", mode, wl, r[i].st.nlink, wu, r[i].st.uid,
               wg, r[i].st.gid, ws, sz, when, r[i].name);
        if (r[i].target != NULL)
            printf(" -> %s", r[i].target);
        putchar('\n');
    }
}

/* ls_target -- a symlink's target (malloc'd), NULL if not a symlink. */
static char *ls_target(struct ubj_fs *fs, const struct ubj_stat *st)
{
    if (!S_ISLNK(st->mode))
        return NULL;
    char *t = malloc(UBJ_SYMLINK_MAX + 1);
    if (t == NULL)
        return NULL;
    ssize_t n = ubj_readlink(fs, st->ino, t, UBJ_SYMLINK_MAX);
    t[n < 0 ? 0 : n] = '\0';
    return t;
}

/* ls_listing -- the visible entries of directory `ino`.  0 or -errno. */
static int ls_listing(struct ubj_fs *fs, ubj_ino_t ino, const struct ls_opts *o,
                      struct tools_dirlist *l)
{
    int rc = tools_readdir_all(fs, ino, o->all, l);
    if (rc < 0 || o->all)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (l->v[i].name[0] == '.')
            free(l->v[i].name);
        else
            l->v[k++] = l->v[i];
    }
    l->n = k;
    return 0;
}

/* ls_long -- print a directory listing in long format. */
static void ls_long(struct ubj_fs *fs, const struct tools_dirlist *l,
                    struct ls_opts *o, const char *image, const char *path)
{
    struct ls_row *rows = calloc(l->n ? l->n : 1, sizeof *rows);
    if (rows == NULL) {
        ls_fail(o, image, path, -ENOMEM);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++) {
        int rc = ubj_getattr(fs, l->v[i].ino, &rows[n].st);
        if (rc < 0) {
            char *p = tools_join(path, l->v[i].name);
            ls_fail(o, image, p != NULL ? p : l->v[i].name, rc);
            free(p);
            continue;
        }
        rows[n].name = l->v[i].name;
        rows[n].target = ls_target(fs, &rows[n].st);
        n++;
    }
    ls_print_rows(rows, n, true);
    for (size_t i = 0; i < n; i++)
        free(rows[i].target);
    free(rows);
}

/* ls_descend_ok -- -R may enter `ino`: not an ancestor (a loop in a
 * corrupt image) and not too deep.  Reports and returns false otherwise. */
static bool ls_descend_ok(struct ls_opts *o, ubj_ino_t ino, const char *image,
                          const char *path)
{
    for (unsigned d = 0; d < o->depth; d++) {
        if (o->stack[d] == ino) {
            tools_err("%s:%s: directory loop (inode %llu is its own ancestor); "
                      "not followed", image, path, (unsigned long long)ino);
            o->failed = true;
            return false;
        }
    }
    if (o->depth >= LS_MAX_DEPTH) {
        tools_err("%s:%s: nested deeper than %u directories; not followed",
                  image, path, LS_MAX_DEPTH);
        o->failed = true;
        return false;
    }
    return true;
}

/* ls_dir -- list directory `ino` at `path`, then (with -R) its subdirectories. */
static void ls_dir(struct ubj_fs *fs, ubj_ino_t ino, const char *image,
                   const char *path, struct ls_opts *o)
{
    struct tools_dirlist l;
    int rc = ls_listing(fs, ino, o, &l);
    if (o->headers)
        printf("%s%s:%s:\n", o->first ? "" : "\n", image, path);
    o->first = false;
    if (rc < 0) {
        ls_fail(o, image, path, rc);
        return;
    }
    if (o->longfmt)
        ls_long(fs, &l, o, image, path);
    else
        for (size_t i = 0; i < l.n; i++)
            puts(l.v[i].name);
    o->stack[o->depth++] = ino;
    for (size_t i = 0; o->recursive && i < l.n; i++) {
        const char *nm = l.v[i].name;
        if (l.v[i].type != DT_DIR || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
            continue;
        char *sub = tools_join(path, nm);
        if (sub == NULL) {
            ls_fail(o, image, path, -ENOMEM);
            break;
        }
        if (ls_descend_ok(o, l.v[i].ino, image, sub))
            ls_dir(fs, l.v[i].ino, image, sub, o);
        free(sub);
    }
    o->depth--;
    tools_dirlist_free(&l);
}

/* ls_operand -- list one IMAGE:/path operand. */
static void ls_operand(const struct tools_spec *s, const char *arg, struct ls_opts *o)
{
    struct tools_img img;
    if (tools_img_mount(&img, s->image, false) < 0) {
        o->failed = true;
        return;
    }
    struct ubj_stat st;
    int rc = ubj_path_lookup(img.fs, s->path, UBJ_PATH_NOFOLLOW, &st);
    if (rc == 0 && S_ISLNK(st.mode) && !o->longfmt) {
        struct ubj_stat t;
        if (ubj_path_lookup(img.fs, s->path, 0, &t) == 0 && S_ISDIR(t.mode))
            st = t;
    }
    if (rc < 0) {
        ls_fail(o, s->image, s->path, rc);
    } else if (S_ISDIR(st.mode)) {
        ls_dir(img.fs, st.ino, s->image, s->path, o);
    } else {
        o->first = false;
        if (o->longfmt) {
            struct ls_row r = { .name = arg, .st = st, .target = ls_target(img.fs, &st) };
            ls_print_rows(&r, 1, false);
            free(r.target);
        } else {
            puts(arg);
        }
    }
    if (tools_img_unmount(&img) < 0)
        o->failed = true;
}

/* tools_ls_main -- `ubjfs ls`. */
int tools_ls_main(int argc, char **argv)
{
    static const struct option lo[] = {
        TOOLS_IMAGE_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    static struct ls_opts o;           /* large: the -R stack */
    o.first = true;
    int c, rc;
    optind = 0;
    while ((c = getopt_long(argc, argv, "laR", lo, NULL)) != -1) {
        switch (c) {
        case 'l': o.longfmt = true; break;
        case 'a': o.all = true; break;
        case 'R': o.recursive = true; break;
        default:
            if ((rc = tools_image_opt(c, optarg, ls_usage)) >= 0)
                return rc;
        }
    }
    if (optind >= argc)
        return tools_usage_err("missing IMAGE:/path operand");
    if (tools_specs_check(argc - optind, argv + optind) != 0)
        return TOOLS_EXIT_USAGE;
    o.headers = o.recursive || argc - optind > 1;
    for (int i = optind; i < argc; i++) {
        struct tools_spec s;
        int r = tools_spec_parse(argv[i], true, &s);
        if (r <= 0) {
            tools_err("out of memory");
            return TOOLS_EXIT_ERR;
        }
        ls_operand(&s, argv[i], &o);
        tools_spec_free(&s);
    }
    fflush(stdout);
    return o.failed ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}
