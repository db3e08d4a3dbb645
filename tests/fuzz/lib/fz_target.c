/*
 * fz_target.c -- the three fuzz targets over one container (fz.h):
 *  - mount: fsck -n first; mount (image and region together in mode ubj),
 *    a short sequence of operations chosen by the input's ops word (walk,
 *    create + write + fsync, mkdir + rename, unlink / rmdir, truncate,
 *    setxattr, symlink, sync), unmount; an image that was clean and a
 *    mount that stayed healthy must leave a clean image;
 *  - recover: recovery alone: journal superblock + SCAN of the log and a
 *    read of every copy it would replay; the region's header, descriptor
 *    scan and the overlay it makes, every block read through it;
 *  - fsck: fsck -n (the pair in mode ubj), then fsck -y (the image; with
 *    --discard-nvm when there is a region) and, if it exits 0 or 1, a
 *    second fsck -n that must be clean.
 * Every result must follow the library's conventions (0 or a negative
 * errno, never more bytes than asked); a broken promise aborts.
 */
#include "fz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs.h"
#include "txn/journal.h"
#include "txn/ubj.h"
#include "ubjfs/nvm.h"
#include "ubjfs/ubjfs.h"

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fz_quiet(void *ctx, const char *line)
{
    (void)line;
    (*(int *)ctx)++;
}

/* report lines kept for a failure message */
static char lines[2048];

static void keep(void *ctx, const char *line)
{
    size_t l = strlen(lines);
    if (l + strlen(line) + 2 < sizeof lines)
        snprintf(lines + l, sizeof lines - l, "%s\n", line);
    (*(int *)ctx)++;
}

static void errno_ok(long rc, const char *what)
{
    if (rc > 0 || rc < -4095)
        fz_fail("%s returned %ld: not 0 or a negative errno", what, rc);
}

/* check -- fsck the case: the pair (region path) or the bare image.
 * dev is consumed when a pair is made. */
static int check(struct ubj_bdev *dev, const char *region, unsigned flags, int *destroyed)
{
    struct ubj_bdev *on = dev;
    int n = 0;
    *destroyed = 0;
    if (region != NULL && region[0] != '\0') {
        int rc = ubj_nvm_overlay_create(dev, region, &on);
        if (rc < 0)
            return UBJ_CHECK_OPERROR;
        *destroyed = 1;
    }
    lines[0] = '\0';
    int r = ubj_check(on, flags, keep, &n);
    if (r != UBJ_CHECK_CLEAN && r != UBJ_CHECK_REPAIRED && r != UBJ_CHECK_UNCORRECTED &&
        r != UBJ_CHECK_OPERROR)
        fz_fail("ubj_check returned %d", r);
    if (r == UBJ_CHECK_REPAIRED && !(flags & UBJ_CHECK_REPAIR))
        fz_fail("fsck -n said REPAIRED");
    if (*destroyed)
        ubj_bdev_destroy(on);
    return r;
}

/* open_pair -- a RAM device and a region file (if any) of the case. */
static int open_pair(const struct fz_case *c, struct ubj_bdev **dev, char *reg, size_t len)
{
    if (fz_case_dev(c, dev) < 0)
        return -1;
    if (fz_case_region(c, reg, len) < 0) {
        ubj_bdev_destroy(*dev);
        return -1;
    }
    return 0;
}

/* check_case -- fsck -n of a fresh copy of the case. */
static int check_case(const struct fz_case *c)
{
    struct ubj_bdev *dev;
    char reg[256];
    if (open_pair(c, &dev, reg, sizeof reg) < 0)
        return UBJ_CHECK_OPERROR;
    int destroyed;
    int r = check(dev, reg, 0, &destroyed);
    if (!destroyed)
        ubj_bdev_destroy(dev);
    fz_region_drop(reg);
    return r;
}

int fz_target_fsck(const uint8_t *d, size_t n)
{
    struct fz_case c;
    if (fz_decode(d, n, &c) < 0)
        return 0;
    (void)check_case(&c);
    struct ubj_bdev *dev;
    if (fz_case_dev(&c, &dev) == 0) {
        int destroyed;
        unsigned fl = UBJ_CHECK_REPAIR | (c.rpages ? UBJ_CHECK_DISCARD_NVM : 0u);
        int r1 = check(dev, NULL, fl, &destroyed);
        if (getenv("FZ_VERBOSE") != NULL)
            fprintf(stderr, "fz fsck: -y %d\n%s", r1, lines);
        if (r1 == UBJ_CHECK_CLEAN || r1 == UBJ_CHECK_REPAIRED) {
            char first[sizeof lines];
            memcpy(first, lines, sizeof lines);
            int r2 = check(dev, NULL, 0, &destroyed);
            if (r2 != UBJ_CHECK_CLEAN)
                fz_fail("fsck -y exited %d but a second fsck -n exits %d:\n-- fsck -y:\n%s"
                        "-- fsck -n:\n%s", r1, r2, first, lines);
        }
        ubj_bdev_destroy(dev);
    }
    fz_case_free(&c);
    return 0;
}

/* ---- mount ---- */

struct dl {
    char name[8][UBJ_NAME_MAX + 1];
    ubj_ino_t ino[8];
    unsigned type[8];
    int n;
    long total;
};

static int fill(void *ctx, const char *name, size_t namelen, ubj_ino_t ino, unsigned type,
                uint64_t next)
{
    struct dl *l = ctx;
    (void)next;
    if (namelen > UBJ_NAME_MAX)
        fz_fail("readdir gave a name of %zu bytes", namelen);
    if (++l->total > 4096)
        return 1;
    if (l->n < 8 && !(namelen <= 2 && name[0] == '.' && (namelen == 1 || name[1] == '.'))) {
        memcpy(l->name[l->n], name, namelen);
        l->name[l->n][namelen] = '\0';
        l->ino[l->n] = ino;
        l->type[l->n] = type;
        l->n++;
    }
    return 0;
}

static uint8_t iobuf[65536];

/* walk -- readdir, lookup, getattr, read, readlink, listxattr below dir. */
static void walk(struct ubj_fs *fs, ubj_ino_t dir, int depth, struct dl *top)
{
    struct dl l;
    memset(&l, 0, sizeof l);
    int rc = ubj_readdir(fs, dir, 0, fill, &l);
    errno_ok(rc, "readdir");
    if (top != NULL)
        *top = l;
    for (int i = 0; i < l.n; i++) {
        struct ubj_stat st;
        rc = ubj_lookup(fs, dir, l.name[i], &st);
        errno_ok(rc, "lookup");
        rc = ubj_getattr(fs, l.ino[i], &st);
        errno_ok(rc, "getattr");
        if (rc < 0)
            continue;
        ssize_t r;
        if (S_ISREG(st.mode)) {
            r = ubj_pread(fs, st.ino, iobuf, sizeof iobuf, 0);
            if (r > (ssize_t)sizeof iobuf)
                fz_fail("pread returned %zd > %zu", r, sizeof iobuf);
            errno_ok(r < 0 ? r : 0, "pread");
            if (st.size > 10) {
                r = ubj_pread(fs, st.ino, iobuf, 10, (off_t)(st.size - 5));
                if (r > 5)
                    fz_fail("pread past EOF returned %zd", r);
            }
        } else if (S_ISLNK(st.mode)) {
            r = ubj_readlink(fs, st.ino, (char *)iobuf, 4096);
            if (r > 4096)
                fz_fail("readlink returned %zd", r);
        } else if (S_ISDIR(st.mode) && depth < 3) {
            walk(fs, st.ino, depth + 1, NULL);
        }
        r = ubj_listxattr(fs, st.ino, (char *)iobuf, 4096);
        if (r > 4096)
            fz_fail("listxattr returned %zd", r);
    }
}

/* operate -- the operations ops selects, on a mount that may be damaged. */
static void operate(struct ubj_fs *fs, uint32_t ops)
{
    struct dl top;
    memset(&top, 0, sizeof top);
    struct ubj_stat st;
    if (ops & 0x1)
        walk(fs, UBJ_ROOT_INO, 0, &top);
    if (ops & 0x2) {
        int rc = ubj_create(fs, UBJ_ROOT_INO, "fz-new", 0644, NULL, &st);
        errno_ok(rc, "create");
        if (rc == 0) {
            memset(iobuf, 0xa5, 9000);
            ssize_t w = ubj_pwrite(fs, st.ino, iobuf, 9000, 100);
            if (w > 9000)
                fz_fail("pwrite returned %zd", w);
            errno_ok(ubj_fsync(fs, st.ino, 0), "fsync");
        }
    }
    if (ops & 0x4) {
        errno_ok(ubj_mkdir(fs, UBJ_ROOT_INO, "fz-dir", 0755, NULL, &st), "mkdir");
        errno_ok(ubj_rename(fs, UBJ_ROOT_INO, "fz-new", st.ino ? st.ino : UBJ_ROOT_INO,
                            "fz-moved", 0), "rename");
    }
    for (int i = 0; i < top.n && (ops & 0x8); i++) {
        if (top.type[i] == 4)
            errno_ok(ubj_rmdir(fs, UBJ_ROOT_INO, top.name[i]), "rmdir");
        else
            errno_ok(ubj_unlink(fs, UBJ_ROOT_INO, top.name[i]), "unlink");
        if (i >= 1)
            break;
    }
    if ((ops & 0x10) && top.n > 0 && ubj_getattr(fs, top.ino[top.n - 1], &st) == 0 &&
        S_ISREG(st.mode)) {
        struct ubj_setattr sa;
        memset(&sa, 0, sizeof sa);
        sa.valid = UBJ_SET_SIZE;
        sa.size = st.size / 2 + 1;
        errno_ok(ubj_setattr(fs, st.ino, &sa, NULL), "truncate");
    }
    if (ops & 0x20)
        errno_ok(ubj_setxattr(fs, UBJ_ROOT_INO, "user.fz", "value", 5, 0), "setxattr");
    if (ops & 0x40)
        errno_ok(ubj_symlink(fs, "fz-moved", UBJ_ROOT_INO, "fz-link", NULL, NULL), "symlink");
    if (ops & 0x80)
        errno_ok(ubj_sync(fs), "sync");
}

int fz_mount(struct ubj_bdev *dev, const char *reg, unsigned flags, struct ubj_fs **out)
{
    struct ubj_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.cache_blocks = 64;
    cfg.flags = UBJ_MOUNT_NO_TIMER | flags;
    cfg.nvm_path = reg != NULL && reg[0] ? reg : NULL;
    return ubj_mount(dev, &cfg, out);
}

int fz_target_mount(const uint8_t *d, size_t n)
{
    struct fz_case c;
    if (fz_decode(d, n, &c) < 0)
        return 0;
    int pre = check_case(&c);
    struct ubj_bdev *dev;
    char reg[256];
    if (open_pair(&c, &dev, reg, sizeof reg) < 0) {
        fz_case_free(&c);
        return 0;
    }
    unsigned mflags = (c.ops & 0x100) ? UBJ_MOUNT_RDONLY : 0u;
    struct ubj_fs *fs;
    int rc = fz_mount(dev, reg, mflags, &fs);
    errno_ok(rc, "mount");
    if (getenv("FZ_VERBOSE") != NULL)
        fprintf(stderr, "fz mount: fsck -n %d, mount %d %s\n", pre, rc, rc ? ubj_errormsg() : "");
    if (rc == 0) {
        char msg[256];
        int health0 = ubj_fs_error(fs, msg, sizeof msg);
        errno_ok(health0, "ubj_fs_error");
        operate(fs, c.ops ? c.ops : 0xff);
        int health = ubj_fs_error(fs, msg, sizeof msg);
        errno_ok(health, "ubj_fs_error");
        int urc = ubj_unmount(fs);
        errno_ok(urc, "unmount");
        if (pre == UBJ_CHECK_CLEAN && health0 == 0 && health == 0 && urc == 0 &&
            !(mflags & UBJ_MOUNT_RDONLY)) {
            int destroyed;
            int post = check(dev, reg, 0, &destroyed);
            if (destroyed)
                dev = NULL;
            if (post != UBJ_CHECK_CLEAN)
                fz_fail("a clean image, mounted and changed without an error, is not clean "
                        "after the unmount (fsck -n %d):\n%s", post, lines);
        }
    }
    if (dev != NULL)
        ubj_bdev_destroy(dev);
    fz_region_drop(reg);
    fz_case_free(&c);
    return 0;
}

/* ---- recovery alone ---- */

int fz_target_recover(const uint8_t *d, size_t n)
{
    struct fz_case c;
    if (fz_decode(d, n, &c) < 0)
        return 0;
    struct ubj_bdev *dev;
    char reg[256];
    if (open_pair(&c, &dev, reg, sizeof reg) < 0) {
        fz_case_free(&c);
        return 0;
    }
    struct ubj_super sb;
    memcpy(&sb, c.img, sizeof sb);
    struct ubj_jgeom g;
    struct ubj_jsuper js;
    struct ubj_mode_image img;
    fs_mode_image(&sb, dev, true, &img);
    if (sb.journal_start != 0 && ubj_journal_geom(&img, &g) == 0 &&
        ubj_jsuper_read(&g, &js) == 0) {
        for (unsigned pass = 0; pass < 2; pass++) {
            struct ubj_jscan s;
            int rc = ubj_journal_scan(&g, &js, pass ? UBJ_JREC_FORCE : 0u, &s);
            errno_ok(rc, "journal scan");
            if (rc < 0)
                continue;
            for (size_t i = 0; i < s.nrep; i++) {
                if (s.rep[i].home >= c.nblocks)
                    fz_fail("journal scan plans a copy home to %llu, beyond the image",
                            (unsigned long long)s.rep[i].home);
                errno_ok(ubj_journal_read_copy(&g, &s.rep[i], iobuf), "read copy");
            }
            ubj_jscan_free(&s);
        }
    }
    if (reg[0] != '\0') {
        struct ubj_nvm *r;
        if (ubj_nvm_open(reg, UBJ_NVM_OPEN_RDONLY, &r) == 0) {
            int64_t p = ubjm_pending(r, c.nblocks);
            if (p < -4095 || p > (int64_t)ubj_nvm_get_layout(r)->nbufs)
                fz_fail("ubjm_pending returned %lld", (long long)p);
            ubj_nvm_close(r);
        }
        struct ubj_bdev *ov;
        if (ubj_nvm_overlay_create(dev, reg, &ov) == 0) {
            for (uint64_t b = 0; b < ov->nblocks; b++)
                errno_ok(ubj_bdev_read(ov, b, 1, iobuf), "overlay read");
            dev = ov;
        }
    }
    ubj_bdev_destroy(dev);
    fz_region_drop(reg);
    fz_case_free(&c);
    return 0;
}
