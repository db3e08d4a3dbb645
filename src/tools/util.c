/*
 * util.c -- helpers shared by the `ubjfs` subcommands (see tools.h):
 * messages, parsing of sizes and numbers, IMAGE:/path arguments, opening
 * and mounting images, sorted directory listings and text formatting.
 *
 * Invariants: every message goes to stderr prefixed by tools_prog; nothing
 * here exits the process; every allocation is freed by its *_free pair.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "fs/format.h"
#include "txn/registry.h"    /* the modes an image may record */
#include "tools.h"

const char *tools_prog = "ubjfs";

/* tools_err -- print "PROG: MESSAGE\n" on stderr. */
void tools_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", tools_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* tools_bad_option -- the hint after getopt's own message; returns 2. */
int tools_bad_option(void)
{
    fprintf(stderr, "Try '%s --help' for more information.\n", tools_prog);
    return TOOLS_EXIT_USAGE;
}

/* tools_usage_err -- a usage error message plus the --help hint. */
int tools_usage_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", tools_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return tools_bad_option();
}

/* tools_strerror -- strerror of a negative errno value. */
const char *tools_strerror(int rc)
{
    return strerror(rc < 0 ? -rc : rc);
}

/* tools_libmsg -- the library's last message, or strerror(-rc); a
 * message without its reason ("nvm: PATH: ") gets strerror(-rc). */
const char *tools_libmsg(int rc)
{
    static _Thread_local char buf[512];
    const char *m = ubj_errormsg();
    if (m == NULL || m[0] == '\0')
        return tools_strerror(rc);
    size_t n = strlen(m);
    while (n > 0 && m[n - 1] == ' ')
        n--;
    if (n > 0 && m[n - 1] != ':')
        return m;
    snprintf(buf, sizeof buf, "%.*s %s", (int)n, m,
             tools_strerror(rc != 0 ? rc : -EINVAL));
    return buf;
}

/* util_digits -- parse the leading decimal digits of s; *end after them. */
static int util_digits(const char *s, uint64_t *out, const char **end)
{
    uint64_t v = 0;
    const char *p = s;
    if (!isdigit((unsigned char)*p))
        return -EINVAL;
    for (; isdigit((unsigned char)*p); p++) {
        if (__builtin_mul_overflow(v, 10u, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v))
            return -ERANGE;
    }
    *out = v;
    *end = p;
    return 0;
}

/* tools_parse_u64 -- a plain decimal number. */
int tools_parse_u64(const char *s, uint64_t *out)
{
    const char *end;
    int rc = util_digits(s, out, &end);
    if (rc == 0 && *end != '\0')
        rc = -EINVAL;
    return rc;
}

/* util_suffix_shift -- log2 of a K/M/G/T/P suffix; -1 if not one. */
static int util_suffix_shift(char c)
{
    switch (toupper((unsigned char)c)) {
    case 'K': return 10;
    case 'M': return 20;
    case 'G': return 30;
    case 'T': return 40;
    case 'P': return 50;
    default: return -1;
    }
}

/* tools_parse_size -- bytes with an optional K/M/G/T/P suffix. */
int tools_parse_size(const char *s, uint64_t *out)
{
    const char *end;
    uint64_t v;
    int rc = util_digits(s, &v, &end);
    if (rc < 0)
        return rc;
    int shift = 0;
    if (*end != '\0') {
        shift = util_suffix_shift(*end);
        if (shift < 0 || end[1] != '\0')
            return -EINVAL;
    }
    if (shift > 0 && v > (UINT64_MAX >> shift))
        return -ERANGE;
    *out = v << shift;
    return 0;
}

/* tools_fmt_size -- a human-readable size in binary units. */
void tools_fmt_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    int u = 0;
    uint64_t whole = bytes;
    while (whole >= 1024 && u < 6) {
        whole /= 1024;
        u++;
    }
    if (u == 0) {
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / (double)(1ULL << (10 * u));
    if (bytes % (1ULL << (10 * u)) == 0)
        snprintf(buf, len, "%llu %s", (unsigned long long)whole, unit[u]);
    else
        snprintf(buf, len, "%.2f %s", v, unit[u]);
}

/* util_is_image_file -- does `path` name a regular file or block device? */
static bool util_is_image_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

/* util_spec_fill -- *out from arg split at position `colon`. */
static int util_spec_fill(const char *arg, size_t colon, struct tools_spec *out)
{
    const char *rest = arg + colon + 1;
    out->image = strndup(arg, colon);
    size_t rl = strlen(rest);
    out->path = malloc(rl + 2);
    if (out->image == NULL || out->path == NULL) {
        tools_spec_free(out);
        return -ENOMEM;
    }
    if (rest[0] == '/') {
        memcpy(out->path, rest, rl + 1);
    } else {
        out->path[0] = '/';
        memcpy(out->path + 1, rest, rl + 1);
    }
    return 1;
}

/* tools_spec_parse -- split "IMAGE:/path" (see tools.h). */
int tools_spec_parse(const char *arg, bool force, struct tools_spec *out)
{
    out->image = NULL;
    out->path = NULL;
    const char *first = strchr(arg, ':');
    for (const char *c = first; c != NULL; c = strchr(c + 1, ':')) {
        if (c == arg)
            continue;
        char *prefix = strndup(arg, (size_t)(c - arg));
        if (prefix == NULL)
            return -ENOMEM;
        bool hit = util_is_image_file(prefix);
        free(prefix);
        if (hit)
            return util_spec_fill(arg, (size_t)(c - arg), out);
    }
    if (force && first != NULL && first != arg)
        return util_spec_fill(arg, (size_t)(first - arg), out);
    return 0;
}

/* tools_spec_free -- release a parsed spec. */
void tools_spec_free(struct tools_spec *s)
{
    free(s->image);
    free(s->path);
    s->image = NULL;
    s->path = NULL;
}

/* tools_specs_check -- usage error unless every operand is IMAGE:/path. */
int tools_specs_check(int n, char **ops)
{
    for (int i = 0; i < n; i++) {
        const char *c = strchr(ops[i], ':');
        if (c == NULL || c == ops[i])
            return tools_usage_err("'%s' is not of the form IMAGE:/path", ops[i]);
    }
    return 0;
}

static const char *util_nvm;   /* --nvm PATH */

/* tools_nvm_opt -- remember --nvm PATH. */
int tools_nvm_opt(const char *path)
{
    if (path[0] == '\0')
        return tools_usage_err("--nvm needs the path of an NVM region");
    util_nvm = path;
    return 0;
}

/* tools_image_opt -- --help, --nvm, or a bad option. */
int tools_image_opt(int c, const char *arg, void (*usage)(void))
{
    switch (c) {
    case 'H':
        usage();
        return TOOLS_EXIT_OK;
    case TOOLS_OPT_NVM:
        return tools_nvm_opt(arg) != 0 ? TOOLS_EXIT_USAGE : -1;
    default:
        return tools_bad_option();
    }
}

/* tools_nvm_path -- --nvm, else $UBJFS_NVM, else NULL. */
const char *tools_nvm_path(void)
{
    const char *e = getenv("UBJFS_NVM");
    if (util_nvm != NULL)
        return util_nvm;
    return e != NULL && e[0] != '\0' ? e : NULL;
}

/* util_code_nvm -- is `code` the on-disk code of a mode with an NVM region
 * (the registry, src/txn/registry.c)? */
static bool util_code_nvm(uint32_t code)
{
    const struct ubj_mode_entry *e = ubj_registry_by_code(code);
    return e != NULL && e->info.needs == UBJ_MODE_NEEDS_NVM;
}

/* util_is_ubj -- does the superblock on dev say mode ubj (made or last
 * mounted so)? */
static bool util_is_ubj(struct ubj_bdev *dev)
{
    struct ubj_super *sb = malloc(sizeof *sb);
    bool ubj = sb != NULL && ubj_bdev_read(dev, 0, 1, sb) == 0 &&
               sb->hdr.magic == UBJ_MAGIC_SUPER &&
               (util_code_nvm(sb->mode) ||
                ((sb->state & UBJ_STATE_MOUNTED) && util_code_nvm(sb->mount_mode)));
    free(sb);
    return ubj;
}

/* tools_mount_error -- why `image` did not mount, with the --nvm hint. */
void tools_mount_error(const char *image, struct ubj_bdev *dev, int rc)
{
    if (tools_nvm_path() == NULL && util_is_ubj(dev))
        tools_err("%s: cannot mount: a mode-ubj image needs its NVM region "
                  "(made by mkfs --nvm): pass --nvm PATH (or set UBJFS_NVM)", image);
    else
        tools_err("%s: cannot mount: %s", image, tools_libmsg(rc));
}

/* util_open_error -- why `image` could not be opened. */
static void util_open_error(const char *image, int rc)
{
    struct stat st;
    if (stat(image, &st) == 0 && S_ISDIR(st.st_mode))
        tools_err("%s: is a directory, not an image", image);
    else
        tools_err("%s", tools_libmsg(rc));
}

/* tools_img_mount -- open and mount an image for a tool. */
int tools_img_mount(struct tools_img *img, const char *image, bool rw)
{
    img->name = image;
    img->dev = NULL;
    img->fs = NULL;
    int rc = tools_open_excl(image, rw ? 0u : UBJ_BDEV_RDONLY, &img->dev);
    if (rc < 0) {
        util_open_error(image, rc);
        return -1;
    }
    struct ubj_config cfg = { 0 };
    cfg.flags = UBJ_MOUNT_NO_TIMER | (rw ? 0u : UBJ_MOUNT_RDONLY);
    cfg.nvm_path = tools_nvm_path();      /* a mode-ubj image's region */
    rc = ubj_mount(img->dev, &cfg, &img->fs);
    if (rc < 0) {
        tools_mount_error(image, img->dev, rc);
        ubj_bdev_destroy(img->dev);
        img->dev = NULL;
        img->fs = NULL;
        return -1;
    }
    char why[256];
    if (rw && ubj_fs_error(img->fs, why, sizeof why) < 0)
        tools_err("%s: mounted read-only: %s", image, why);
    return 0;
}

/* tools_img_unmount -- unmount and close; reports the unmount's error. */
int tools_img_unmount(struct tools_img *img)
{
    int ret = 0;
    if (img->fs != NULL) {
        int rc = ubj_unmount(img->fs);
        if (rc < 0) {
            tools_err("%s: unmount: %s", img->name, tools_libmsg(rc));
            ret = -1;
        }
    }
    ubj_bdev_destroy(img->dev);
    img->fs = NULL;
    img->dev = NULL;
    return ret;
}

/* tools_format_trial -- format a 1 MiB RAM device with the options. */
int tools_format_trial(const struct ubj_format_opts *fo)
{
    struct ubj_bdev *ram;
    int rc = ubj_bdev_ram_create(256, &ram);
    if (rc < 0)
        return rc;
    struct ubj_format_opts t = *fo;
    t.inodes = 0;
    t.flags = UBJ_FORMAT_ZEROED;
    t.journal_blocks = 0;   /* checked against the real image by its format */
    rc = ubj_format(ram, &t);
    ubj_bdev_destroy(ram);
    return rc;
}

/* A probe device: nblocks that read as zeros and refuse every write with
 * -ECANCELED, the signal that ubj_format got past its checks. */
struct util_probe {
    struct ubj_bdev dev;
};

/* util_probe_read -- zeros. */
static int util_probe_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                           void *buf)
{
    (void)blkno;
    memset(buf, 0, (size_t)count * d->block_size);
    return 0;
}

/* util_probe_write -- the first write ends the probe. */
static int util_probe_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                            const void *buf)
{
    (void)d;
    (void)blkno;
    (void)count;
    (void)buf;
    return -ECANCELED;
}

/* util_probe_flush -- nothing is ever written. */
static int util_probe_flush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* util_probe_destroy -- free the probe. */
static void util_probe_destroy(struct ubj_bdev *d)
{
    free(d);
}

static const struct ubj_bdev_ops util_probe_ops = {
    .version = UBJ_BDEV_OPS_VERSION, .name = "mkfs-probe",
    .read = util_probe_read, .write = util_probe_write,
    .flush = util_probe_flush, .destroy = util_probe_destroy,
};

/* tools_format_probe -- ubj_format's checks at the image's real geometry. */
int tools_format_probe(const struct ubj_format_opts *fo, uint64_t nblocks)
{
    struct util_probe *p = calloc(1, sizeof *p);
    if (p == NULL)
        return -ENOMEM;
    p->dev.ops = &util_probe_ops;
    p->dev.block_size = UBJ_BLOCK_SIZE;
    p->dev.nblocks = nblocks;
    struct ubj_format_opts t = *fo;
    t.flags |= UBJ_FORMAT_ZEROED;         /* nothing to zero: the first write */
    int rc = ubj_format(&p->dev, &t);     /* is the superblock's or a bitmap's */
    ubj_bdev_destroy(&p->dev);
    return rc == -ECANCELED ? 0 : rc;
}

struct util_rd_ctx {
    struct tools_dirlist *l;
    bool dots;
    int err;
};

/* util_rd_fill -- ubj_readdir callback: append one entry. */
static int util_rd_fill(void *ctx, const char *name, size_t namelen,
                        ubj_ino_t ino, unsigned type, uint64_t next_cookie)
{
    struct util_rd_ctx *c = ctx;
    (void)next_cookie;
    bool dot = (namelen == 1 && name[0] == '.') ||
               (namelen == 2 && name[0] == '.' && name[1] == '.');
    if (dot && !c->dots)
        return 0;
    struct tools_dirlist *l = c->l;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        struct tools_dirent *nv = realloc(l->v, ncap * sizeof *nv);
        if (nv == NULL) {
            c->err = -ENOMEM;
            return 1;
        }
        l->v = nv;
        l->cap = ncap;
    }
    char *copy = strndup(name, namelen);
    if (copy == NULL) {
        c->err = -ENOMEM;
        return 1;
    }
    l->v[l->n++] = (struct tools_dirent){ .name = copy, .ino = ino, .type = type };
    return 0;
}

/* util_dirent_cmp -- qsort order: bytewise by name. */
static int util_dirent_cmp(const void *a, const void *b)
{
    const struct tools_dirent *x = a, *y = b;
    return strcmp(x->name, y->name);
}

/* tools_readdir_all -- a directory's entries, sorted by name. */
int tools_readdir_all(struct ubj_fs *fs, ubj_ino_t ino, bool dots,
                      struct tools_dirlist *out)
{
    out->v = NULL;
    out->n = out->cap = 0;
    struct util_rd_ctx c = { .l = out, .dots = dots, .err = 0 };
    int rc = ubj_readdir(fs, ino, 0, util_rd_fill, &c);
    if (rc == 0)
        rc = c.err;
    if (rc < 0) {
        tools_dirlist_free(out);
        return rc;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, util_dirent_cmp);
    return 0;
}

/* tools_dirlist_free -- release a listing. */
void tools_dirlist_free(struct tools_dirlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* util_type_char -- the ls type letter of a mode. */
static char util_type_char(uint32_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFDIR: return 'd';
    case S_IFREG: return '-';
    case S_IFLNK: return 'l';
    case S_IFCHR: return 'c';
    case S_IFBLK: return 'b';
    case S_IFIFO: return 'p';
    case S_IFSOCK: return 's';
    default: return '?';
    }
}

/* tools_mode_string -- "drwxr-xr-x" with s/S/t/T as ls prints them. */
void tools_mode_string(uint32_t mode, char out[11])
{
    static const char rwx[] = "rwxrwxrwx";
    out[0] = util_type_char(mode);
    for (int i = 0; i < 9; i++)
        out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
    if (mode & S_ISUID)
        out[3] = (mode & S_IXUSR) ? 's' : 'S';
    if (mode & S_ISGID)
        out[6] = (mode & S_IXGRP) ? 's' : 'S';
    if (mode & S_ISVTX)
        out[9] = (mode & S_IXOTH) ? 't' : 'T';
    out[10] = '\0';
}

/* tools_fmt_time -- local time as text (see tools.h). */
void tools_fmt_time(const struct timespec *ts, bool ns, char *buf, size_t len)
{
    struct tm tm;
    time_t t = ts->tv_sec;
    if (localtime_r(&t, &tm) == NULL) {
        snprintf(buf, len, "%lld.%09ld", (long long)ts->tv_sec, (long)ts->tv_nsec);
        return;
    }
    char a[64], z[16];
    if (!ns) {
        strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
        return;
    }
    strftime(a, sizeof a, "%Y-%m-%d %H:%M:%S", &tm);
    strftime(z, sizeof z, "%z", &tm);
    snprintf(buf, len, "%s.%09ld %s", a, (long)ts->tv_nsec, z);
}

/* tools_join -- "dir/name" without a doubled '/'. */
char *tools_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    bool slash = !(dl > 0 && dir[dl - 1] == '/');
    char *p = malloc(dl + nl + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, dir, dl);
    size_t o = dl;
    if (slash)
        p[o++] = '/';
    memcpy(p + o, name, nl + 1);
    return p;
}

/* tools_uuid_string -- 8-4-4-4-12 lowercase hex. */
void tools_uuid_string(const uint8_t u[16], char out[37])
{
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
             "%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
             u[10], u[11], u[12], u[13], u[14], u[15]);
}
