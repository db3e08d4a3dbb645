/*
 * fuzz/damage.c -- mount-time behaviour on damage found at run time
 * (issue 22, item 4), the same in modes none, journal and ubj: a populated
 * image (tests/fuzz seeds) whose block of one structure -- an inode-table
 * block, a directory node, an extent node, an xattr block -- fails its
 * checksum on the device is mounted (mount does not read those blocks);
 * the operation that reads it gets EUCLEAN (never garbage), the mount
 * turns read-only with the error recorded (ubj_fs_error, writers get
 * EROFS, the message names the block), and after the unmount the
 * superblock says ERRORS, so fsck -n reports it.  A crash right after
 * the error (the device copied while the mount is up) leaves ERRORS in
 * the home superblock, and the next mount's recovery keeps it.
 */
#include "fz.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/format.h"
#include "ubjfs/nvm.h"
#include "ubjfs/ubjfs.h"

static int failures;

#define EXPECT(cond, ...)                                                       \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("FAIL %s/%s: ", mode, st);                                   \
            printf(__VA_ARGS__);                                                \
            printf("\n");                                                       \
            failures++;                                                         \
        }                                                                       \
    } while (0)

static uint32_t g32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* find -- the damaged block for structure st: a directory node that is not
 * the root's, the extent node, the xattr block, the inode-table block of
 * inode 50 (a name in /big).  -1 if none. */
static long find(const struct fz_case *c, const char *st, uint64_t *ino)
{
    struct ubj_super sb;
    memcpy(&sb, c->img, sizeof sb);
    uint32_t want = strcmp(st, "dir") == 0 ? UBJ_MAGIC_DIR
                  : strcmp(st, "extent") == 0 ? UBJ_MAGIC_EXTENT
                  : strcmp(st, "xattr") == 0 ? UBJ_MAGIC_XATTR : UBJ_MAGIC_INODES;
    if (want == UBJ_MAGIC_INODES) {
        *ino = 50;
        return (long)(sb.it_start + 50 / UBJ_INODES_PER_BLOCK);
    }
    long found = -1;
    for (uint64_t b = sb.data_start + 1; b < c->nblocks; b++) {
        const uint8_t *p = c->img + b * FZ_PAGE;
        if (g32(p) != want)
            continue;
        uint64_t owner;
        memcpy(&owner, p + (want == UBJ_MAGIC_XATTR ? 16 : 24), 8);
        *ino = want == UBJ_MAGIC_EXTENT ? 0 : owner;
        found = (long)b;
        if (want != UBJ_MAGIC_DIR)
            break;   /* directories: the last node, one of /big's */
    }
    return found;
}

/* touch -- the operation that reads the damaged block; its result. */
static int touch(struct ubj_fs *fs, const char *st, uint64_t ino)
{
    static uint8_t buf[1 << 18];
    struct ubj_stat s;
    if (strcmp(st, "inode") == 0)
        return ubj_getattr(fs, ino, &s);
    if (strcmp(st, "xattr") == 0) {
        ssize_t r = ubj_getxattr(fs, ino, "user.colour", buf, sizeof buf);
        return r < 0 ? (int)r : 0;
    }
    if (strcmp(st, "dir") == 0) {
        char name[64];
        int rc = 0;
        for (int i = 0; i < 90 && rc == 0; i++) {
            snprintf(name, sizeof name, "entry-with-a-long-name-%03d", i);
            rc = ubj_path_lookup(fs, "/big", 0, &s) ? -EIO : ubj_lookup(fs, s.ino, name, &s);
        }
        return rc;
    }
    int rc = ubj_path_lookup(fs, "/frag", 0, &s);
    if (rc < 0)
        return rc;
    ssize_t r = ubj_pread(fs, s.ino, buf, sizeof buf, 0);
    return r < 0 ? (int)r : 0;
}

/* errors_on -- whether block 0 of dev says ERRORS. */
static bool errors_on(struct ubj_bdev *dev)
{
    uint8_t blk0[UBJ_BS];
    struct ubj_super sb;
    if (ubj_bdev_read(dev, 0, 1, blk0) < 0)
        return false;
    memcpy(&sb, blk0, sizeof sb);
    return (sb.state & UBJ_STATE_ERRORS) != 0;
}

/* crashed -- a crash right after the error was found, the mount still
 * up: a copy of the device (and region) as they are now must say ERRORS
 * in the home superblock at once, and keep it through the next mount's
 * recovery, which replays the mount's own committed superblock (without
 * ERRORS) from the log or brings it back from the region. */
static void crashed(const struct fz_case *c, struct ubj_bdev *dev, const char *reg,
                    const char *mode, const char *st)
{
    uint8_t *img = malloc((size_t)c->nblocks * FZ_PAGE);
    struct ubj_bdev *copy = NULL;
    char reg2[300] = "";
    if (img == NULL || ubj_bdev_read(dev, 0, c->nblocks, img) < 0 ||
        ubj_bdev_ram_create(c->nblocks, &copy) < 0 ||
        ubj_bdev_write(copy, 0, c->nblocks, img) < 0)
        fz_fail("cannot copy the device");
    if (reg[0] != '\0') {
        uint8_t *d;
        size_t n;
        snprintf(reg2, sizeof reg2, "%s.crash", reg);
        if (fz_read_file(reg, &d, &n) < 0 || fz_write_file(reg2, d, n) < 0)
            fz_fail("cannot copy the region %s", reg);
        free(d);
    }
    EXPECT(errors_on(copy), "a crash now: the home superblock does not say ERRORS");
    struct ubj_fs *fs;
    int rc = fz_mount(copy, reg2, 0, &fs);
    EXPECT(rc == 0, "mount after the crash: %d %s", rc, ubj_errormsg());
    if (rc == 0) {
        ubj_unmount(fs);
        EXPECT(errors_on(copy), "the mount after the crash lost ERRORS (its recovery)");
    }
    ubj_bdev_destroy(copy);
    if (reg2[0] != '\0')
        unlink(reg2);
    free(img);
}

static void one(const char *dir, const char *mode, const char *st)
{
    char path[512], reg[256];
    snprintf(path, sizeof path, "%s/%s-clean.fz", dir, mode);
    uint8_t *d;
    size_t n;
    struct fz_case c;
    if (fz_read_file(path, &d, &n) < 0 || fz_decode(d, n, &c) < 0)
        fz_fail("cannot read %s", path);
    free(d);
    uint64_t ino = 0;
    long b = find(&c, st, &ino);
    EXPECT(b > 0, "no such block");
    if (b <= 0) {
        fz_case_free(&c);
        return;
    }
    c.img[(size_t)b * FZ_PAGE + 2000] ^= 0x40;       /* the crc no longer matches */
    struct ubj_bdev *dev;
    if (fz_case_dev(&c, &dev) < 0 || fz_case_region(&c, reg, sizeof reg) < 0)
        fz_fail("no device");
    struct ubj_fs *fs;
    int rc = fz_mount(dev, reg, 0, &fs);
    EXPECT(rc == 0, "mount %d %s", rc, ubj_errormsg());
    if (rc == 0) {
        char msg[256];
        EXPECT(ubj_fs_error(fs, msg, sizeof msg) == 0, "unhealthy before: %s", msg);
        rc = touch(fs, st, ino);
        char blk[32];
        snprintf(blk, sizeof blk, "block %ld", b);
        EXPECT(rc == -EUCLEAN, "the read of block %ld returned %d, not -EUCLEAN", b, rc);
        char said[256];
        snprintf(said, sizeof said, "%s", ubj_errormsg());
        EXPECT(strstr(said, blk) != NULL, "message '%s' does not name %s", said, blk);
        EXPECT(strstr(said, "(metadata)") == NULL, "message '%s' does not name the structure",
               said);
        int e = ubj_fs_error(fs, msg, sizeof msg);
        EXPECT(e == -EUCLEAN, "ubj_fs_error %d after the damage", e);
        rc = ubj_create(fs, UBJ_ROOT_INO, "after-damage", 0644, NULL, NULL);
        EXPECT(rc == -EROFS, "a create after the damage returned %d, not -EROFS", rc);
        printf("%-8s %-7s block %4ld: %s; then: %s\n", mode, st, b, said, ubj_errormsg());
        crashed(&c, dev, reg, mode, st);
        ubj_unmount(fs);
        struct ubj_super sb;
        uint8_t blk0[UBJ_BS];
        if (ubj_bdev_read(dev, 0, 1, blk0) == 0) {
            memcpy(&sb, blk0, sizeof sb);
            EXPECT(sb.state & UBJ_STATE_ERRORS, "superblock state %u without ERRORS", sb.state);
        }
        int lines = 0;
        struct ubj_bdev *on = dev;
        if (reg[0] != '\0' && ubj_nvm_overlay_create(dev, reg, &on) < 0)
            on = NULL;
        if (on != NULL) {
            int r = ubj_check(on, 0, fz_quiet, &lines);
            EXPECT(r == UBJ_CHECK_UNCORRECTED, "fsck -n after: %d", r);
            if (on != dev)
                dev = NULL, ubj_bdev_destroy(on);
        }
    }
    if (dev != NULL)
        ubj_bdev_destroy(dev);
    fz_region_drop(reg);
    fz_case_free(&c);
}

int main(void)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/ubjfz-damage-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    if (fz_seeds_make(dir) < 0)
        fz_fail("cannot make the images");
    static const char *const modes[] = { "none", "journal", "ubj" };
    static const char *const sts[] = { "inode", "dir", "extent", "xattr" };
    for (size_t m = 0; m < 3; m++)
        for (size_t s = 0; s < 4; s++)
            one(dir, modes[m], sts[s]);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
