/*
 * public.c -- a user of the file system: includes only include/ubjfs/ and
 * links only the core library (no src/ include directory, no SQLite, no
 * evaluation library, no cmocka: see CMakeLists.txt, tests/api).  Formats
 * a RAM device and an image file, mounts each, creates, writes and reads a
 * file (by inode number and through a struct ubj_file), unmounts, mounts
 * again to read it back, and checks the image.
 * tests/api/links.cmake checks the binary needs no SQLite.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ubjfs/bdev.h"
#include "ubjfs/ubjfs.h"

#define PUB_BLOCKS 2048u

/* pub_fail -- print what failed (and the library's message); exit 1. */
static void pub_fail(const char *what, long rc)
{
    fprintf(stderr, "FAIL: %s: %ld (%s)\n", what, rc, ubj_errormsg());
    exit(1);
}

/* pub_mount -- ubj_mount without the background thread, or fail. */
static struct ubj_fs *pub_mount(struct ubj_bdev *dev)
{
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER };
    struct ubj_fs *fs = NULL;
    int rc = ubj_mount(dev, &cfg, &fs);
    if (rc != 0)
        pub_fail("ubj_mount", rc);
    return fs;
}

/* pub_read_back -- /hello holds exactly `want`. */
static void pub_read_back(struct ubj_fs *fs, const char *want)
{
    struct ubj_stat st;
    char buf[256] = "";
    int rc = ubj_lookup(fs, UBJ_ROOT_INO, "hello", &st);
    if (rc != 0)
        pub_fail("ubj_lookup", rc);
    if (st.size != strlen(want))
        pub_fail("size of /hello", (long)st.size);
    if ((rc = ubj_open(fs, st.ino, O_RDONLY)) != 0)
        pub_fail("ubj_open", rc);
    ssize_t n = ubj_pread(fs, st.ino, buf, sizeof buf - 1, 0);
    if (n != (ssize_t)strlen(want) || memcmp(buf, want, (size_t)n) != 0)
        pub_fail("ubj_pread", (long)n);
    if ((rc = ubj_release(fs, st.ino)) != 0)
        pub_fail("ubj_release", rc);
    struct ubj_file *f;                     /* the same through an open file */
    if ((rc = ubj_file_open(fs, st.ino, O_RDONLY, &f)) != 0)
        pub_fail("ubj_file_open", rc);
    if ((rc = ubj_fadvise(f, 0, 0, UBJ_FADV_WILLNEED)) != 0)
        pub_fail("ubj_fadvise", rc);
    memset(buf, 0, sizeof buf);
    n = ubj_file_pread(f, buf, sizeof buf - 1, 0);
    if (n != (ssize_t)strlen(want) || memcmp(buf, want, (size_t)n) != 0)
        pub_fail("ubj_file_pread", (long)n);
    if ((rc = ubj_file_close(f)) != 0)
        pub_fail("ubj_file_close", rc);
}

/* pub_run -- format `dev` in `mode`, write /hello, read it back after a
 * remount, check the image clean. */
static void pub_run(struct ubj_bdev *dev, const char *mode)
{
    static const char text[] = "hello from a user of include/ubjfs/\n";
    struct ubj_format_opts fo = { .mode = mode };
    int rc = ubj_format(dev, &fo);
    if (rc != 0)
        pub_fail("ubj_format", rc);
    struct ubj_fs *fs = pub_mount(dev);
    struct ubj_stat st;
    if ((rc = ubj_create(fs, UBJ_ROOT_INO, "hello", S_IFREG | 0644, NULL, &st)) != 0)
        pub_fail("ubj_create", rc);
    if ((rc = ubj_open(fs, st.ino, O_RDWR)) != 0)
        pub_fail("ubj_open", rc);
    ssize_t n = ubj_pwrite(fs, st.ino, text, sizeof text - 1, 0);
    if (n != (ssize_t)(sizeof text - 1))
        pub_fail("ubj_pwrite", (long)n);
    if ((rc = ubj_fsync(fs, st.ino, 0)) != 0)
        pub_fail("ubj_fsync", rc);
    if ((rc = ubj_release(fs, st.ino)) != 0)
        pub_fail("ubj_release", rc);
    pub_read_back(fs, text);
    if ((rc = ubj_unmount(fs)) != 0)
        pub_fail("ubj_unmount", rc);
    fs = pub_mount(dev);
    pub_read_back(fs, text);
    if ((rc = ubj_unmount(fs)) != 0)
        pub_fail("ubj_unmount", rc);
    if ((rc = ubj_check(dev, 0, NULL, NULL)) != UBJ_CHECK_CLEAN)
        pub_fail("ubj_check", rc);
    printf("ok: %s\n", mode);
}

int main(void)
{
    struct ubj_bdev *dev = NULL;
    int rc = ubj_bdev_ram_create(PUB_BLOCKS, &dev);
    if (rc != 0)
        pub_fail("ubj_bdev_ram_create", rc);
    pub_run(dev, UBJ_MODE_NONE);
    pub_run(dev, UBJ_MODE_ORDERED);
    ubj_bdev_destroy(dev);

    char path[] = "/tmp/ubjfs-api-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        pub_fail("mkstemp", -errno);
    close(fd);
    rc = ubj_bdev_file_open(path, UBJ_BDEV_RESIZE, (uint64_t)PUB_BLOCKS * 4096u, &dev);
    if (rc != 0) {
        unlink(path);
        pub_fail("ubj_bdev_file_open", rc);
    }
    pub_run(dev, UBJ_MODE_JOURNAL);
    ubj_bdev_destroy(dev);
    unlink(path);
    return 0;
}
