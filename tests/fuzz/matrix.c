/*
 * fuzz/matrix.c -- the corruption matrix (issue 22; xfstests' fuzz group):
 * every field of tests/fuzz/fields.tsv, in a populated image (mode none,
 * clean), a journal holding committed transactions (mode journal, after
 * an fsync, no unmount) or an NVM region holding commits (mode ubj, same),
 * is set to zeros, ones, random bytes, and has its first and its last
 * bit flipped, the checksum recomputed (but for checksum fields), and the
 * outcome classified:
 *   R  detected and repaired: fsck -n exits 4, fsck -y 1 (or 0), a second
 *      fsck -n is clean, the file system mounts and works;
 *   N  detected, not repairable in v1: fsck -y exits 4 or 8, a second
 *      fsck -n again, and a read-write mount is refused (fails, or comes
 *      up read-only with the error recorded);
 *   V  valid: fsck stays clean, the mount works, the tree (names, types,
 *      sizes, links, contents, symlinks; xattrs but for xattr fields)
 *      equals the original, and fsck is clean after using it;
 *   -  the change left the bytes as they were (nothing to test);
 *   M  fsck (of the pair) is clean but mount refuses it (safe: nothing is
 *      changed or exposed);
 *   L  undetected and harmful, a known limit of v1 listed in `limits`
 *      below with its reason: the damaged value is one a legal state holds;
 *   X  a broken promise: undetected and harmful, or a repair that does not
 *      hold.  Any X fails the test.
 * The matrix (with the first report line as the reason of each detection)
 * must equal the one in docs/GUARANTEES.md between the fuzz-matrix
 * markers; UBJ_MATRIX_WRITE=1 rewrites it there.
 */
#include "fz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crash/crash.h"
#include "ubjfs/nvm.h"
#include "ubjfs/ubjfs.h"

static const enum fz_how hows[] = { FZ_ZEROS, FZ_ONES, FZ_RANDOM, FZ_FIRSTBIT, FZ_LASTBIT };
#define NHOWS (sizeof hows / sizeof hows[0])

struct base {
    const char *file;
    struct fz_case c;
    struct cx_tree *ref;
};
static struct base bases[] = { { "none-clean.fz", { 0 }, NULL }, { "journal-fsynced.fz", { 0 }, NULL },
                               { "ubj-fsynced.fz", { 0 }, NULL } };

static char first_line[256];

static void first(void *ctx, const char *line)
{
    if (first_line[0] == '\0' && strncmp(line, "note:", 5) != 0)
        snprintf(first_line, sizeof first_line, "%s", line);
    (*(int *)ctx)++;
}

/* pair -- the case as a device (and region file). */
static struct ubj_bdev *pair(const struct fz_case *c, char *reg, size_t len)
{
    struct ubj_bdev *dev;
    if (fz_case_dev(c, &dev) < 0 || fz_case_region(c, reg, len) < 0)
        fz_fail("cannot make a device");
    return dev;
}

/* fsck -- on dev, through the region when reg is set (dev consumed then). */
static int fsck(struct ubj_bdev **dev, const char *reg, unsigned flags)
{
    struct ubj_bdev *on = *dev;
    if (reg[0] != '\0') {
        if (ubj_nvm_overlay_create(*dev, reg, &on) < 0) {
            snprintf(first_line, sizeof first_line, "%s", ubj_errormsg());
            return UBJ_CHECK_OPERROR;   /* dev is still ours */
        }
        *dev = NULL;                    /* the overlay owns it */
    }
    int n = 0;
    first_line[0] = '\0';
    int r = ubj_check(on, flags, first, &n);
    if (on != *dev)
        ubj_bdev_destroy(on);
    return r;
}

/* mount_rw -- mount dev (and reg) read-write: the mount, or NULL with the
 * reason in why (refused, or read-only with the error recorded). */
static struct ubj_fs *mount_rw(struct ubj_bdev *dev, const char *reg, char *why, size_t len)
{
    struct ubj_fs *fs;
    int rc = fz_mount(dev, reg, 0, &fs);
    if (rc < 0) {
        snprintf(why, len, "mount: %s", ubj_errormsg());
        return NULL;
    }
    char msg[200];
    if (ubj_fs_error(fs, msg, sizeof msg) != 0) {
        snprintf(why, len, "mount read-only: %s", msg);
        ubj_unmount(fs);
        return NULL;
    }
    rc = ubj_mkdir(fs, UBJ_ROOT_INO, "fz-probe", 0755, NULL, NULL);
    if (rc == 0)
        rc = ubj_rmdir(fs, UBJ_ROOT_INO, "fz-probe");
    if (rc < 0) {
        snprintf(why, len, "mount: a change fails (%s): %s", strerror(-rc), ubj_errormsg());
        ubj_unmount(fs);
        return NULL;
    }
    return fs;
}

/* evaluate -- the outcome of one corrupted case; reason[len] says why. */
static char evaluate(const struct fz_case *c, const struct base *b, const char *allowed,
                     char *reason, size_t len)
{
    char reg[256];
    struct ubj_bdev *dev = pair(c, reg, sizeof reg);
    int r1 = fsck(&dev, reg, 0);
    char out = 'X';
    reason[0] = '\0';
    if (dev == NULL && fz_case_dev(c, &dev) < 0)   /* the image again, same region file */
        fz_fail("cannot make a device");
    if (r1 == UBJ_CHECK_CLEAN) {
        struct ubj_fs *fs = mount_rw(dev, reg, reason, len);
        if (fs == NULL) {
            out = 'M';   /* fsck clean, mount refuses: reported as such */
        } else {
            struct cx_tree *t = NULL;
            char why[448] = "";
            int ok = cx_tree_take(fs, &t) == 0;
            if (ok && !cx_tree_match(t, b->ref, CX_DATA_EXACT, 0, 0, why, sizeof why) &&
                !(allowed != NULL && strstr(why, allowed) != NULL))
                ok = 0;
            if (t != NULL)
                cx_tree_free(t);
            if (ok && cx_usable(fs) != 0) {
                ok = 0;
                snprintf(why, sizeof why, "not usable: %s", ubj_errormsg());
            }
            ubj_unmount(fs);
            if (!ok) {
                snprintf(reason, len, "undetected: %s", why);
            } else if (fsck(&dev, reg, 0) != UBJ_CHECK_CLEAN) {
                snprintf(reason, len, "fsck finds after use: %s", first_line);
            } else {
                out = 'V';
            }
        }
    } else if (reg[0] != '\0') {
        /* the region: mount is its repair (recovery); a refusal is final in v1 */
        char why[256];
        struct ubj_fs *fs = mount_rw(dev, reg, why, sizeof why);
        snprintf(reason, len, "%s", first_line);
        if (fs != NULL) {
            ubj_unmount(fs);
            snprintf(reason, len, "fsck --nvm %d, but the pair mounts: %s", r1, first_line);
        } else {
            out = 'N';
            snprintf(reason, len, "%s", why);
        }
    } else {
        int r2 = fsck(&dev, reg, UBJ_CHECK_REPAIR);
        char line2[256];
        snprintf(line2, sizeof line2, "%s", first_line);
        int r3 = fsck(&dev, reg, 0);
        if (r2 == UBJ_CHECK_CLEAN || r2 == UBJ_CHECK_REPAIRED) {
            char why[256] = "";
            struct ubj_fs *fs = r3 == UBJ_CHECK_CLEAN ? mount_rw(dev, reg, why, sizeof why) : NULL;
            int usable = fs != NULL && cx_usable(fs) == 0;
            if (fs != NULL)
                ubj_unmount(fs);
            if (r3 != UBJ_CHECK_CLEAN)
                snprintf(reason, len, "fsck -y %d, then fsck -n %d: %s", r2, r3, first_line);
            else if (!usable)
                snprintf(reason, len, "repaired, but %s", why[0] ? why : "not usable");
            else {
                out = 'R';
                snprintf(reason, len, "%s", line2);
            }
        } else if (r3 != UBJ_CHECK_UNCORRECTED && r3 != UBJ_CHECK_OPERROR) {
            snprintf(reason, len, "fsck -y %d, then fsck -n %d", r2, r3);
        } else {
            char why[256];
            struct ubj_fs *fs = mount_rw(dev, reg, why, sizeof why);
            if (fs != NULL) {
                ubj_unmount(fs);
                snprintf(reason, len, "fsck -y %d (%s), but it mounts read-write", r2, line2);
            } else {
                out = 'N';
                snprintf(reason, len, "%s", line2);
            }
        }
    }
    if (dev != NULL)
        ubj_bdev_destroy(dev);
    fz_region_drop(reg);
    return out;
}

static uint32_t g32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t g64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* pick -- the instance of f's structure the matrix corrupts. */
static int pick(const struct fz_case *c, const struct fz_field *f, struct fz_inst *inst,
                size_t n, struct fz_inst *out)
{
    int found = -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t o, l;
        if (fz_field_span(&inst[i], f, &o, &l) < 0)
            continue;
        const uint8_t *p = (inst[i].region ? c->reg : c->img) + (size_t)inst[i].page * FZ_PAGE;
        const char *st = f->st;
        int want = 1;
        if (strcmp(st, "inode") == 0)
            want = g64(p + inst[i].base + 96) != 0;          /* has an xattr block */
        else if (strcmp(st, "blkhdr") == 0)
            want = g32(p) == 0x444e4955u;                    /* an inode-table block */
        else if (strcmp(st, "jhdr") == 0)
            want = g32(p + 4) == 1;                          /* a descriptor */
        else if (strcmp(st, "bufdesc") == 0)
            want = g64(p + inst[i].base + 32) != 0;          /* a committed tag */
        if (want) {
            *out = inst[i];
            return 0;
        }
        if (found < 0)
            found = (int)i;
    }
    if (found < 0)
        return -1;
    *out = inst[found];
    return 0;
}

/* The known limits: (structure, field, changes) whose damage no check of
 * v1 can tell from a legal state, and why. */
static const struct {
    const char *st, *name, *hows, *why;
} limits[] = {
    { "ext_entry", "leaf.len", "lastbit", "sets UNWRITTEN: a written extent turned "
      "preallocated reads as zeros, a legal state; v1 has no data checksums" },
    { "jsuper", "sequence", "ones random lastbit", "a higher first sequence makes the "
      "committed log look older than the superblock: the state of a log whose "
      "transactions were checkpointed" },
    { "jsuper", "start", "zeros firstbit", "start 0: an empty log (the state after a "
      "checkpoint); its transactions are not replayed" },
};

/* limit_of -- the reason if (f, how) is a known limit, else NULL. */
static const char *limit_of(const struct fz_field *f, enum fz_how how)
{
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        const char *h = strstr(limits[i].hows, fz_how_names[how]);
        if (strcmp(limits[i].st, f->st) == 0 && strcmp(limits[i].name, f->name) == 0 &&
            h != NULL)
            return limits[i].why;
    }
    return NULL;
}

/* sanitize -- the reason without what changes from run to run: the
 * region file's name, 16-digit region ids; no table bars. */
static void sanitize(char *s)
{
    char *p;
    while ((p = strstr(s, "ubjfz-")) != NULL) {
        char *e = strstr(p, ".nvm");
        if (e == NULL)
            break;
        while (p > s && p[-1] != ' ')
            p--;                            /* the directory: /dev/shm, $TMPDIR */
        memcpy(p, "REGION", 6);
        memmove(p + 6, e + 4, strlen(e + 4) + 1);
    }
    for (p = s; *p; p++) {
        size_t n = strspn(p, "0123456789abcdef");
        if (n == 16 && (p == s || p[-1] == ' ')) {
            memcpy(p, "<region-id>", 11);
            memmove(p + 11, p + 16, strlen(p + 16) + 1);
        }
        if (*p == '|' || *p == '\n')
            *p = '/';
    }
}

static const char *verdict(const char *codes)
{
    int r = strchr(codes, 'R') != NULL, nn = strchr(codes, 'N') != NULL,
        v = strchr(codes, 'V') != NULL, m = strchr(codes, 'M') != NULL,
        l = strchr(codes, 'L') != NULL;
    if (strchr(codes, 'X'))
        return "**BROKEN**";
    if (r + nn + v + m + l > 1)
        return l ? "mixed, with a known limit" : "mixed";
    if (l)
        return "undetected: known limit of v1";
    if (r)
        return "detected and repaired";
    if (nn)
        return "detected, not repairable in v1";
    if (v)
        return "valid by construction";
    if (m)
        return "refused by mount only";
    return "not exercised";
}

/* allowed_diff -- the difference of the tree a legal value of f makes
 * (what cx_tree_match then says), or NULL: the tree must stay the same. */
static const char *allowed_diff(const struct fz_field *f)
{
    if (strcmp(f->cls, "xattr-value") == 0 || strcmp(f->st, "xattr_rec") == 0)
        return "xattrs";   /* a value, or a name that still sorts: read back as written */
    if (strcmp(f->cls, "size") == 0)
        return " size ";   /* a file's length: holes and zeroed tails read as zeros */
    return NULL;
}

/* class_reason -- why any value of a valid field is legal. */
static const char *class_reason(const char *cls)
{
    static const struct { const char *cls, *why; } t[] = {
        { "timestamp", "any time is legal" },
        { "nanoseconds", "read back as stored" },
        { "owner", "any owner is legal" },
        { "id", "random at format; any value is legal" },
        { "label", "any label is legal" },
        { "counter", "informational" },
        { "seed", "only orders names: keys are checked against it" },
        { "generation", "informational (NFS-style)" },
        { "device-number", "any rdev is legal" },
        { "xattr-value", "any value is legal and reads back as written" },
        { "size", "any length is legal: past the old end reads zeros (holes, zeroed tails)" },
        { "feature-compat", "unknown compat bits are ignored" },
        { "reserved", "written as zero, ignored when read" },
        { "volatile", "rebuilt at mount: recovery trusts only the tag" },
        { "hint", "a hint" },
        { "error-record", "informational: reported, then cleared" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].cls, cls) == 0)
            return t[i].why;
    return NULL;
}

int main(void)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char dir[256];
    snprintf(dir, sizeof dir, "%s/ubjfz-matrix-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    if (fz_seeds_make(dir) < 0)
        fz_fail("cannot make the bases");
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        char p[512];
        uint8_t *d;
        size_t n;
        snprintf(p, sizeof p, "%s/%s", dir, bases[i].file);
        if (fz_read_file(p, &d, &n) < 0 || fz_decode(d, n, &bases[i].c) < 0)
            fz_fail("cannot read %s", p);
        free(d);
        unlink(p);
        /* the reference tree: the base as recovery makes it */
        char reg[256], why[256];
        struct ubj_bdev *dev = pair(&bases[i].c, reg, sizeof reg);
        struct ubj_fs *fs = mount_rw(dev, reg, why, sizeof why);
        if (fs == NULL || cx_tree_take(fs, &bases[i].ref) < 0)
            fz_fail("base %s: %s", bases[i].file, why);
        ubj_unmount(fs);
        ubj_bdev_destroy(dev);
        fz_region_drop(reg);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);

    size_t nt;
    const struct fz_field *tab = fz_table(&nt);
    static struct fz_inst inst[3][8192];
    size_t ninst[3];
    for (int b = 0; b < 3; b++) {
        ninst[b] = fz_instances(&bases[b].c, inst[b], 8192);
        if (ninst[b] > 8192)
            ninst[b] = 8192;
    }
    size_t cap = 1 << 18, used = 0;
    char *md = malloc(cap);
    used += (size_t)snprintf(md + used, cap - used,
        "| Structure | Field | Class | zeros | ones | random | first bit | last bit | Outcome | Reason |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n");
    int broken = 0, cases = 0;
    for (size_t k = 0; k < nt; k++) {
        const struct fz_field *f = &tab[k];
        int b = strncmp(f->st, "j", 1) == 0 ? 1
              : strcmp(f->st, "nvm_header") == 0 || strcmp(f->st, "bufdesc") == 0 ? 2 : 0;
        struct fz_inst in;
        char codes[NHOWS + 1] = "";
        char reason[300] = "";
        if (pick(&bases[b].c, f, inst[b], ninst[b], &in) < 0) {
            memset(codes, '?', NHOWS);
            snprintf(reason, sizeof reason, "no instance in the %s base", bases[b].file);
            broken++;
        } else {
            for (size_t h = 0; h < NHOWS; h++) {
                struct fz_case c = bases[b].c;
                size_t isz = (size_t)c.nblocks * FZ_PAGE, rsz = (size_t)c.rpages * FZ_PAGE;
                c.img = malloc(isz);
                memcpy(c.img, bases[b].c.img, isz);
                c.reg = rsz ? malloc(rsz) : NULL;
                if (rsz)
                    memcpy(c.reg, bases[b].c.reg, rsz);
                fz_corrupt(&c, &in, f, hows[h], 0x1234 + k * 8 + h);
                if (memcmp(c.img, bases[b].c.img, isz) == 0 &&
                    (rsz == 0 || memcmp(c.reg, bases[b].c.reg, rsz) == 0)) {
                    codes[h] = '-';
                    free(c.img);
                    free(c.reg);
                } else {
                    char why[300];
                    codes[h] = evaluate(&c, &bases[b], allowed_diff(f), why, sizeof why);
                    cases++;
                    free(c.img);
                    free(c.reg);
                    const char *lim = codes[h] == 'X' ? limit_of(f, hows[h]) : NULL;
                    if (lim != NULL) {
                        codes[h] = 'L';
                        snprintf(why, sizeof why, "limit: %s", lim);
                        reason[0] = '\0';
                    }
                    if (codes[h] == 'X') {
                        broken++;
                        printf("BROKEN %s.%s %s: %s\n", f->st, f->name, fz_how_names[hows[h]],
                               why);
                    }
                    if (reason[0] == '\0' || (codes[h] == 'X' && !strchr(codes, 'X')))
                        snprintf(reason, sizeof reason, "%s", why);
                }
            }
        }
        const char *v = verdict(codes);
        if (strcmp(v, "valid by construction") == 0 && class_reason(f->cls) != NULL)
            snprintf(reason, sizeof reason, "%s", class_reason(f->cls));
        sanitize(reason);
        if (used + 1024 > cap)
            md = realloc(md, cap *= 2);
        used += (size_t)snprintf(md + used, cap - used, "| %s | `%s` | %s | %c | %c | %c | %c | %c | %s | %s |\n",
                                 f->st, f->name, f->cls, codes[0], codes[1], codes[2], codes[3],
                                 codes[4], v, reason);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%s", md);
    printf("%zu fields, %d corrupted cases, %d broken, %.1f s\n", nt, cases, broken, secs);

    /* against the docs */
    const char *src = getenv("UBJ_SRC") ? getenv("UBJ_SRC") : ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/GUARANTEES.md", src);
    uint8_t *doc;
    size_t dn;
    if (fz_read_file(path, &doc, &dn) < 0)
        fz_fail("cannot read %s", path);
    doc[dn] = '\0';
    const char *begin = "<!-- fuzz-matrix begin -->\n", *end = "<!-- fuzz-matrix end -->";
    char *a = strstr((char *)doc, begin), *e = a ? strstr(a, end) : NULL;
    if (a == NULL || e == NULL)
        fz_fail("%s has no fuzz-matrix markers", path);
    a += strlen(begin);
    int same = (size_t)(e - a) == used && memcmp(a, md, used) == 0;
    if (!same && getenv("UBJ_MATRIX_WRITE") != NULL) {
        FILE *f = fopen(path, "w");
        fwrite(doc, 1, (size_t)(a - (char *)doc), f);
        fwrite(md, 1, used, f);
        fputs(e, f);
        fclose(f);
        printf("rewrote the matrix in %s\n", path);
        same = 1;
    } else if (!same) {
        printf("the matrix differs from the one in %s (UBJ_MATRIX_WRITE=1 rewrites it)\n", path);
    }
    free(doc);
    free(md);
    for (int b = 0; b < 3; b++) {
        cx_tree_free(bases[b].ref);
        fz_case_free(&bases[b].c);
    }
    return broken || !same ? 1 : 0;
}
