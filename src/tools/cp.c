/*
 * cp.c -- `ubjfs cp`: copy files and trees into or out of an image, like
 * mtools' mcopy and e2tools' e2cp.  This file parses the operands, decides
 * the direction and the target of each source (cp's rules: into an
 * existing directory the source keeps its name; otherwise the target is
 * the new name), mounts the image and keeps the hard-link map.  The copy
 * itself is cp_in.c (host -> image) and cp_out.c (image -> host).
 *
 * Invariants: exactly one side is an image (image-to-image is refused);
 * the image is mounted once (read-write for copy in, read-only for copy
 * out) and unmounted at the end, its error reported; a failure on one file
 * is reported and the copy goes on (exit 1 at the end), like cp; a
 * directory already on the stack of directories being copied (c->dirs) is
 * a loop and is reported, never entered, so every copy ends.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cp.h"

/* cp_usage -- the --help text. */
static void cp_usage(void)
{
    printf("Usage: %s [-r] [-p] [--nvm PATH] SRC... DST\n"
           "Copy files into or out of a ubjfs image.  Exactly one side is in an\n"
           "image, written IMAGE:/path; the other is a host path.\n"
           "  ubjfs cp FILE... IMAGE:/dir       copy in\n"
           "  ubjfs cp -r DIR IMAGE:/newname     copy a tree in\n"
           "  ubjfs cp -r IMAGE:/dir... HOSTDIR  copy trees out\n"
           "As cp(1): a DST that is an existing directory receives each SRC under\n"
           "its own name (an existing directory is merged into); otherwise DST is\n"
           "the new name and there must be one SRC.  Regular files are written in\n"
           "1 MiB chunks (holes stay holes).  Mode and access/modification times\n"
           "are always preserved, ownership when run as root or with -p.\n\n"
           "Options:\n"
           "  -r, -R, --recursive  copy directories and their contents; symlinks\n"
           "                       are copied as symlinks and hard links within\n"
           "                       the copy as hard links.  Without -r, directories\n"
           "                       are skipped (an error) and symlink operands are\n"
           "                       followed.  FIFOs, sockets and device nodes are\n"
           "                       always made anew (devices need root on a host).\n"
           "                       A directory that is its own ancestor (a loop in\n"
           "                       a corrupt image) is reported and not entered.\n"
           "  -p, --preserve       also preserve owner and group when not root\n"
           TOOLS_NVM_HELP
           "      --help           print this help\n\n"
           "Exit status: 0 everything copied, 1 something could not be copied (each\n"
           "problem is reported; the rest is copied), 2 usage error.\n", tools_prog);
}

/* cp_fail -- report and remember a failure. */
void cp_fail(struct cp_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", tools_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    c->failed = true;
}

/* cp_link_hash -- bucket of a key. */
static size_t cp_link_hash(uint64_t k1, uint64_t k2, size_t cap)
{
    uint64_t h = (k1 * 0x9e3779b97f4a7c15ULL) ^ (k2 + 0x632be59bd9b4e019ULL);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return (size_t)(h & (cap - 1));
}

/* cp_link_find -- look a key up. */
struct cp_link *cp_link_find(struct cp_links *l, uint64_t k1, uint64_t k2)
{
    if (l->cap == 0)
        return NULL;
    for (size_t i = cp_link_hash(k1, k2, l->cap); l->v[i].used; i = (i + 1) & (l->cap - 1))
        if (l->v[i].k1 == k1 && l->v[i].k2 == k2)
            return &l->v[i];
    return NULL;
}

/* cp_link_grow -- double the table. */
static int cp_link_grow(struct cp_links *l)
{
    size_t ncap = l->cap ? l->cap * 2 : 64;
    struct cp_link *nv = calloc(ncap, sizeof *nv);
    if (nv == NULL)
        return -ENOMEM;
    for (size_t j = 0; j < l->cap; j++) {
        if (!l->v[j].used)
            continue;
        size_t i = cp_link_hash(l->v[j].k1, l->v[j].k2, ncap);
        while (nv[i].used)
            i = (i + 1) & (ncap - 1);
        nv[i] = l->v[j];
    }
    free(l->v);
    l->v = nv;
    l->cap = ncap;
    return 0;
}

/* cp_link_add -- remember a copied hard-linked file. */
int cp_link_add(struct cp_links *l, uint64_t k1, uint64_t k2, uint64_t ino,
                const char *path)
{
    if ((l->n + 1) * 2 > l->cap && cp_link_grow(l) < 0)
        return -ENOMEM;
    char *p = NULL;
    if (path != NULL && (p = strdup(path)) == NULL)
        return -ENOMEM;
    size_t i = cp_link_hash(k1, k2, l->cap);
    while (l->v[i].used)
        i = (i + 1) & (l->cap - 1);
    l->v[i] = (struct cp_link){ .k1 = k1, .k2 = k2, .ino = ino, .path = p, .used = true };
    l->n++;
    return 0;
}

/* cp_links_free -- release the map. */
static void cp_links_free(struct cp_links *l)
{
    for (size_t i = 0; i < l->cap; i++)
        free(l->v[i].path);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* cp_dir_loop -- report a directory that is its own ancestor. */
bool cp_dir_loop(struct cp_ctx *c, uint64_t k1, uint64_t k2, bool in_image,
                 const char *path)
{
    for (size_t i = 0; i < c->dirs.n; i++) {
        if (c->dirs.v[i].k1 == k1 && c->dirs.v[i].k2 == k2) {
            size_t up = c->dirs.n - i;
            cp_fail(c, "%s%s%s: directory loop (it is its own ancestor, %zu "
                    "level%s up); not copied", in_image ? c->image : "",
                    in_image ? ":" : "", path, up, up > 1 ? "s" : "");
            return true;
        }
    }
    return false;
}

/* cp_dir_push -- enter a directory. */
int cp_dir_push(struct cp_ctx *c, uint64_t k1, uint64_t k2)
{
    struct cp_dirstack *d = &c->dirs;
    if (d->n == d->cap) {
        size_t ncap = d->cap ? d->cap * 2 : 32;
        void *nv = realloc(d->v, ncap * sizeof *d->v);
        if (nv == NULL) {
            cp_fail(c, "out of memory");
            return -ENOMEM;
        }
        d->v = nv;
        d->cap = ncap;
    }
    d->v[d->n].k1 = k1;
    d->v[d->n].k2 = k2;
    d->n++;
    return 0;
}

/* cp_dir_pop -- leave the innermost directory. */
void cp_dir_pop(struct cp_ctx *c)
{
    c->dirs.n--;
}

/* cp_basename -- last component without trailing slashes. */
char *cp_basename(const char *path)
{
    size_t e = strlen(path);
    while (e > 0 && path[e - 1] == '/')
        e--;
    size_t b = e;
    while (b > 0 && path[b - 1] != '/')
        b--;
    return strndup(path + b, e - b);
}

/* cp_merge_name -- an operand naming no new entry (".", "..", "/"). */
static bool cp_merge_name(const char *name)
{
    return name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* cp_in_operand -- copy host operand `src` into image directory `dir`. */
static void cp_in_operand(struct cp_ctx *c, const char *src, ubj_ino_t dir,
                          const char *dpath)
{
    char *name = cp_basename(src);
    if (name == NULL) {
        cp_fail(c, "out of memory");
        return;
    }
    struct stat st;
    if (cp_merge_name(name) && c->recursive && stat(src, &st) == 0 &&
        S_ISDIR(st.st_mode)) {
        cp_in_into(c, src, dir, dpath);
    } else {
        char *p = tools_join(dpath, name);
        if (p == NULL)
            cp_fail(c, "out of memory");
        else
            cp_in_node(c, src, dir, name, p, true);
        free(p);
    }
    free(name);
}

/* cp_slash_nondir -- a new target "dir/" (trailing '/') for a source that
 * is not a directory: it names a directory, and there is none. */
static bool cp_slash_nondir(const char *dpath, const char *src)
{
    struct stat st;
    size_t n = strlen(dpath);
    return n > 1 && dpath[n - 1] == '/' && !(stat(src, &st) == 0 && S_ISDIR(st.st_mode));
}

/* cp_in_target -- copy every source to image path `dpath`. */
static void cp_in_target(struct cp_ctx *c, char **srcs, int nsrc, const char *dpath)
{
    struct ubj_fs *fs = c->img.fs;
    struct ubj_stat dst;
    int rc = ubj_path_lookup(fs, dpath, 0, &dst);
    if (rc == 0 && S_ISDIR(dst.mode)) {
        for (int i = 0; i < nsrc; i++)
            cp_in_operand(c, srcs[i], dst.ino, dpath);
        return;
    }
    if (rc < 0 && rc != -ENOENT) {
        cp_fail(c, "%s:%s: %s", c->image, dpath, tools_strerror(rc));
        return;
    }
    if (nsrc > 1) {
        cp_fail(c, "target '%s:%s' is not a directory", c->image, dpath);
        return;
    }
    if (cp_slash_nondir(dpath, srcs[0])) {       /* as GNU cp */
        cp_fail(c, "cannot create regular file '%s:%s': %s", c->image, dpath,
                strerror(ENOTDIR));
        return;
    }
    ubj_ino_t parent;
    const char *last;
    rc = ubj_path_parent(fs, dpath, &parent, &last);
    if (rc < 0) {
        cp_fail(c, "%s:%s: %s", c->image, dpath, tools_strerror(rc));
        return;
    }
    char *name = strndup(last, strcspn(last, "/"));
    if (name == NULL)
        cp_fail(c, "out of memory");
    else
        cp_in_node(c, srcs[0], parent, name, dpath, true);
    free(name);
}

/* cp_out_operand -- copy image operand `spath` into host directory `dir`. */
static void cp_out_operand(struct cp_ctx *c, const char *spath, const char *dir)
{
    struct ubj_stat st;
    unsigned fl = c->recursive ? UBJ_PATH_NOFOLLOW : 0;
    int rc = ubj_path_lookup(c->img.fs, spath, fl, &st);
    if (rc < 0) {
        cp_fail(c, "%s:%s: %s", c->image, spath, tools_strerror(rc));
        return;
    }
    char *name = cp_basename(spath);
    if (name == NULL) {
        cp_fail(c, "out of memory");
        return;
    }
    if (cp_merge_name(name) && c->recursive && S_ISDIR(st.mode)) {
        cp_out_into(c, &st, spath, dir);
    } else {
        char *p = tools_join(dir, name);
        if (p == NULL)
            cp_fail(c, "out of memory");
        else
            cp_out_node(c, &st, spath, p);
        free(p);
    }
    free(name);
}

/* cp_out_target -- copy every image source to host path `dst`. */
static void cp_out_target(struct cp_ctx *c, char **spaths, int nsrc, const char *dst)
{
    struct stat hst;
    if (stat(dst, &hst) == 0 && S_ISDIR(hst.st_mode)) {
        for (int i = 0; i < nsrc; i++)
            cp_out_operand(c, spaths[i], dst);
        return;
    }
    if (nsrc > 1) {
        cp_fail(c, "target '%s' is not a directory", dst);
        return;
    }
    struct ubj_stat st;
    unsigned fl = c->recursive ? UBJ_PATH_NOFOLLOW : 0;
    int rc = ubj_path_lookup(c->img.fs, spaths[0], fl, &st);
    if (rc < 0)
        cp_fail(c, "%s:%s: %s", c->image, spaths[0], tools_strerror(rc));
    else
        cp_out_node(c, &st, spaths[0], dst);
}

/* cp_same_file -- do two host paths name the same file? */
static bool cp_same_file(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
}

/* cp_no_image -- explain why no operand is an image path.  Returns 2/1. */
static int cp_no_image(char **ops, int n)
{
    for (int i = 0; i < n; i++) {
        struct tools_spec s;
        if (tools_spec_parse(ops[i], true, &s) == 1) {
            struct stat st;
            if (stat(s.image, &st) == 0 && S_ISDIR(st.st_mode))
                tools_err("%s: is a directory, not an image (in '%s')", s.image, ops[i]);
            else if (stat(s.image, &st) == 0)
                tools_err("%s: not an image file (in '%s')", s.image, ops[i]);
            else
                tools_err("%s: %s (image of '%s')", s.image, strerror(ENOENT), ops[i]);
            tools_spec_free(&s);
            return TOOLS_EXIT_ERR;
        }
    }
    return tools_usage_err("no IMAGE:/path operand: one side of the copy must be "
                           "in an image");
}

/* cp_run -- mount, copy every operand, unmount.  An exit code. */
static int cp_run(struct cp_ctx *c, bool in, const char *image, char **srcs,
                  int nsrc, const char *dst)
{
    struct stat ist;
    if (stat(image, &ist) == 0) {
        c->img_dev = ist.st_dev;
        c->img_ino = ist.st_ino;
    }
    c->image = image;
    c->buf = malloc(TOOLS_CHUNK);
    if (c->buf == NULL) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    int ret = TOOLS_EXIT_OK;
    if (tools_img_mount(&c->img, image, in) < 0) {
        ret = TOOLS_EXIT_ERR;
    } else {
        if (in)
            cp_in_target(c, srcs, nsrc, dst);
        else
            cp_out_target(c, srcs, nsrc, dst);
        if (tools_img_unmount(&c->img) < 0)
            ret = TOOLS_EXIT_ERR;
    }
    if (c->failed)
        ret = TOOLS_EXIT_ERR;
    free(c->buf);
    free(c->dirs.v);
    cp_links_free(&c->links);
    return ret;
}

/* cp_dispatch -- classify the operands and run the copy.  An exit code. */
static int cp_dispatch(struct cp_ctx *c, char **ops, int n)
{
    struct tools_spec *sp = calloc((size_t)n, sizeof *sp);
    char **paths = calloc((size_t)n, sizeof *paths);
    int ret = -1, nimg = 0;
    if (sp == NULL || paths == NULL) {
        tools_err("out of memory");
        ret = TOOLS_EXIT_ERR;
    }
    for (int i = 0; ret < 0 && i < n; i++) {
        int r = tools_spec_parse(ops[i], false, &sp[i]);
        if (r < 0) {
            tools_err("out of memory");
            ret = TOOLS_EXIT_ERR;
        }
        nimg += r == 1;
        paths[i] = r == 1 ? sp[i].path : ops[i];
    }
    bool dst_img = ret < 0 && sp[n - 1].image != NULL;
    if (ret >= 0) {
        /* reported */
    } else if (nimg == 0) {
        ret = cp_no_image(ops, n);
    } else if (dst_img && nimg > 1) {
        ret = tools_usage_err("copying from an image to an image is not "
                              "supported: copy out to a host directory first");
    } else if (!dst_img && nimg != n - 1) {
        ret = tools_usage_err("sources must be all in one image or all on the "
                              "host (the destination is a host path)");
    } else {
        const char *image = dst_img ? sp[n - 1].image : sp[0].image;
        for (int i = 1; !dst_img && i < n - 1; i++)
            if (strcmp(sp[i].image, image) != 0 && !cp_same_file(sp[i].image, image))
                ret = tools_usage_err("sources are in different images ('%s' and "
                                      "'%s')", image, sp[i].image);
        if (ret < 0)
            ret = cp_run(c, dst_img, image, paths, n - 1, paths[n - 1]);
    }
    for (int i = 0; sp != NULL && i < n; i++)
        tools_spec_free(&sp[i]);
    free(sp);
    free(paths);
    return ret;
}

/* tools_cp_main -- `ubjfs cp`. */
int tools_cp_main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "recursive", no_argument, NULL, 'r' },
        { "preserve", no_argument, NULL, 'p' },
        TOOLS_IMAGE_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    struct cp_ctx c;
    memset(&c, 0, sizeof c);
    bool preserve = false;
    int o, rc;
    optind = 0;
    while ((o = getopt_long(argc, argv, "rRp", lo, NULL)) != -1) {
        switch (o) {
        case 'r': case 'R': c.recursive = true; break;
        case 'p': preserve = true; break;
        default:
            if ((rc = tools_image_opt(o, optarg, cp_usage)) >= 0)
                return rc;
        }
    }
    int n = argc - optind;
    if (n < 1)
        return tools_usage_err("missing file operand");
    if (n < 2)
        return tools_usage_err("missing destination file operand after '%s'",
                               argv[optind]);
    c.own = preserve || geteuid() == 0;
    c.uid = (uint32_t)geteuid();
    c.gid = (uint32_t)getegid();
    return cp_dispatch(&c, argv + optind, n);
}
