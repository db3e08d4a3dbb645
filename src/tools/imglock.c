/*
 * imglock.c -- an image held by a mount daemon that is still finishing its
 * unmount: the tools wait for it instead of refusing.
 *
 * `umount DIR` of a FUSE mount (not fuseblk) returns once the kernel has
 * dropped the mount; it does not wait for the daemon, which only then
 * makes its final commit, writes back, marks the image clean and exits,
 * closing the image (and so its exclusive flock, UBJ_BDEV_EXCL).  So
 * `umount DIR; ubjfs fsck -n IMAGE` would find the image locked.  The
 * daemon tells "serving" from "finishing": while it serves a mount (from
 * before it opens the image until its request loop ends) it holds an open
 * file description lock (F_OFD_SETLK, a read lock on byte 0) on a second
 * descriptor of the image.  flock and these locks do not interact, and
 * both go with the process if it dies.  A tool that finds the image
 * flocked refuses if the mark is there (mounted: "in use") -- once it has
 * stayed TOOLS_SERVED_GRACE_S: umount(8) returns when the kernel drops the
 * mount, and the daemon drops its mark only when its request loop has seen
 * that, a moment later (a `umount; mount` or `umount; fsck` met the mark
 * in that moment and was refused: tests/pkg/mount.sh, once in CI) -- and
 * otherwise waits for the holder -- a daemon finishing, or another tool --
 * up to TOOLS_LOCK_WAIT_S seconds, saying so after one.  Where the mark
 * cannot be taken (an NFS client emulates flock with POSIX locks, which
 * would conflict), the daemon goes unmarked and a tool waits the 60 s for
 * a mounted image before it says "in use".
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include "tools.h"

#define TOOLS_LOCK_WAIT_S 60
#define TOOLS_SERVED_GRACE_S 0.5   /* a daemon's mark outlives umount(8) by
                                      the time its request loop takes to
                                      see the unmount */
#define TOOLS_LOCK_POLL_NS 20000000L     /* 20 ms between tries */

/* imglock_range -- the lock record of the mark: byte 0, type `type`. */
static struct flock imglock_range(short type)
{
    struct flock l = { 0 };
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = 0;
    l.l_len = 1;
    return l;
}

/* tools_serving_mark -- see tools.h. */
int tools_serving_mark(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct flock l = imglock_range(F_RDLCK);
    if (fcntl(fd, F_OFD_SETLK, &l) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* tools_serving_unmark -- see tools.h. */
void tools_serving_unmark(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* tools_image_served -- see tools.h: does a mount daemon serve `path`
 * (the mark is held)? */
bool tools_image_served(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct flock l = imglock_range(F_WRLCK);
    bool held = fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type != F_UNLCK;
    close(fd);
    return held;
}

/* tools_open_excl -- see tools.h. */
int tools_open_excl(const char *path, unsigned flags, struct ubj_bdev **out)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool said = false;
    for (;;) {
        int rc = ubj_bdev_file_open(path, flags | UBJ_BDEV_EXCL, 0, out);
        if (rc != -EBUSY)
            return rc;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double s = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
        bool served = tools_image_served(path);
        if (served ? s >= TOOLS_SERVED_GRACE_S : s >= TOOLS_LOCK_WAIT_S)
            return rc;
        if (s >= 1 && !said && !served) {
            tools_err("%s: waiting for the process that has it open (a mount "
                      "daemon finishing its unmount?) to let go", path);
            said = true;
        }
        struct timespec p = { 0, TOOLS_LOCK_POLL_NS };
        nanosleep(&p, NULL);
    }
}
