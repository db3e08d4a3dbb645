/*
 * fz_seeds.c -- the seed corpus, made at test time (not committed): in
 * every mode (none, ordered, journal, writeback, ubj with its region) a
 * populated, cleanly unmounted image, and two mid-mount states taken
 * after an fsync without an unmount (what a crash leaves: MOUNTED, the
 * journal or the region holding the newest commits; one with an open
 * unlinked file on the orphan list).
 */
#include "fz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ubjfs/nvm.h"
#include "ubjfs/ubjfs.h"

#define SEED_BLOCKS 384u

static int save(const char *dir, const char *mode, const char *what, struct ubj_bdev *dev,
                const char *reg)
{
    struct fz_case c;
    int rc = fz_case_take(dev, reg[0] ? reg : NULL, 0, &c);
    if (rc < 0)
        return rc;
    size_t max = 24 + (size_t)(c.nblocks + c.rpages) * (4 + FZ_PAGE);
    uint8_t *buf = malloc(max);
    size_t n = buf ? fz_encode(&c, buf, max) : 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%s.fz", dir, mode, what);
    rc = n ? fz_write_file(path, buf, n) : -ENOMEM;
    free(buf);
    fz_case_free(&c);
    return rc;
}

/* fixed_now -- one instant for every timestamp: reproducible seeds (the
 * corruption matrix compares its outcomes and reasons across runs). */
static void fixed_now(void *ctx, struct timespec *ts)
{
    (void)ctx;
    ts->tv_sec = 1700000000;
    ts->tv_nsec = 123456789;
}

/* populate -- every kind of structure. */
static int populate(struct ubj_fs *fs)
{
    struct ubj_stat d, f, g;
    static uint8_t buf[20000];
    memset(buf, 'x', sizeof buf);
    int rc = ubj_mkdir(fs, UBJ_ROOT_INO, "a", 0755, NULL, &d);
    rc = rc ? rc : ubj_create(fs, d.ino, "small", 0644, NULL, &f);
    if (rc == 0 && ubj_pwrite(fs, f.ino, "small", 5, 0) != 5)
        rc = -EIO;
    rc = rc ? rc : ubj_link(fs, f.ino, UBJ_ROOT_INO, "hard", NULL);
    rc = rc ? rc : ubj_create(fs, UBJ_ROOT_INO, "frag", 0600, NULL, &g);
    for (int i = 0; rc == 0 && i < 10; i++)
        if (ubj_pwrite(fs, g.ino, buf, 100, (off_t)i * 8192) != 100)
            rc = -EIO;
    if (rc == 0 && ubj_pwrite(fs, g.ino, buf, sizeof buf, 200000) != (ssize_t)sizeof buf)
        rc = -EIO;
    rc = rc ? rc : ubj_setxattr(fs, g.ino, "user.colour", "blue", 4, 0);
    rc = rc ? rc : ubj_setxattr(fs, g.ino, "trusted.t", "1234567", 7, 0);
    rc = rc ? rc : ubj_symlink(fs, "a/small", UBJ_ROOT_INO, "short", NULL, NULL);
    char longt[300];
    memset(longt, 'l', sizeof longt - 1);
    longt[sizeof longt - 1] = '\0';
    rc = rc ? rc : ubj_symlink(fs, longt, UBJ_ROOT_INO, "long", NULL, NULL);
    rc = rc ? rc : ubj_mknod(fs, UBJ_ROOT_INO, "fifo", S_IFIFO | 0600, 0, NULL, NULL);
    rc = rc ? rc : ubj_mkdir(fs, UBJ_ROOT_INO, "big", 0755, NULL, &d);
    for (int i = 0; rc == 0 && i < 90; i++) {
        char name[64];
        snprintf(name, sizeof name, "entry-with-a-long-name-%03d", i);
        rc = ubj_create(fs, d.ino, name, 0644, NULL, NULL);
    }
    return rc;
}

/* one_mode -- the three seeds of a mode. */
static int one_mode(const char *dir, const char *mode)
{
    struct ubj_bdev *dev;
    int rc = ubj_bdev_ram_create(SEED_BLOCKS, &dev);
    if (rc < 0)
        return rc;
    struct ubj_format_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.mode = mode;
    fo.inodes = 135;
    fo.journal_blocks = strcmp(mode, "none") && strcmp(mode, "ubj") ? 64 : 0;
    memset(fo.uuid, 0x5a, sizeof fo.uuid);   /* reproducible layout and hash seed */
    char reg[256] = "";
    if (strcmp(mode, "ubj") == 0)
        snprintf(reg, sizeof reg, "%s/ubjfz-seed-%d.nvm",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
    struct ubj_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.cache_blocks = 64;
    cfg.flags = UBJ_MOUNT_NO_TIMER;
    cfg.now = fixed_now;
    cfg.nvm_path = reg[0] ? reg : NULL;
    cfg.nvm_flags = reg[0] ? UBJ_NVM_FORMAT : 0u;
    struct ubj_fs *fs = NULL;
    rc = ubj_format(dev, &fo);
    rc = rc ? rc : ubj_mount(dev, &cfg, &fs);
    rc = rc ? rc : populate(fs);
    if (fs != NULL) {
        int u = ubj_unmount(fs);
        rc = rc ? rc : u;
        fs = NULL;
    }
    rc = rc ? rc : save(dir, mode, "clean", dev, reg);
    cfg.nvm_flags = 0;
    /* mid-mount: changes committed by fsync, no unmount */
    struct ubj_stat st, o;
    rc = rc ? rc : ubj_mount(dev, &cfg, &fs);
    rc = rc ? rc : ubj_create(fs, UBJ_ROOT_INO, "late", 0644, NULL, &st);
    if (rc == 0 && ubj_pwrite(fs, st.ino, "late data", 9, 4096) != 9)
        rc = -EIO;
    rc = rc ? rc : ubj_rename(fs, UBJ_ROOT_INO, "hard", UBJ_ROOT_INO, "hard2", 0);
    rc = rc ? rc : ubj_unlink(fs, UBJ_ROOT_INO, "fifo");
    rc = rc ? rc : ubj_fsync(fs, st.ino, 0);
    rc = rc ? rc : save(dir, mode, "fsynced", dev, reg);
    /* an orphan: open, unlinked, committed */
    rc = rc ? rc : ubj_lookup(fs, UBJ_ROOT_INO, "frag", &o);
    rc = rc ? rc : ubj_open(fs, o.ino, 0);
    rc = rc ? rc : ubj_unlink(fs, UBJ_ROOT_INO, "frag");
    rc = rc ? rc : ubj_sync(fs);
    rc = rc ? rc : save(dir, mode, "orphan", dev, reg);
    if (fs != NULL) {
        int u = ubj_unmount(fs);
        rc = rc ? rc : u;
    }
    if (rc < 0)
        fprintf(stderr, "fz seeds, mode %s: %d %s\n", mode, rc, ubj_errormsg());
    ubj_bdev_destroy(dev);
    if (reg[0])
        unlink(reg);
    return rc;
}

int fz_seeds_make(const char *dir)
{
    static const char *const modes[] = { "none", "ordered", "journal", "writeback", "ubj" };
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return -errno;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        int rc = one_mode(dir, modes[i]);
        if (rc < 0)
            return rc;
    }
    return 3 * (int)(sizeof modes / sizeof modes[0]);
}
