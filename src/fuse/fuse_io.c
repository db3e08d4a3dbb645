/*
 * fuse_io.c -- the transport hooks of the FUSE frontend (fuse_io.h):
 * read(2) and writev(2) on /dev/fuse for libfuse, noting the INIT request
 * and amending its reply with FUSE_HANDLE_KILLPRIV_V2 (why: fuse_io.h).
 * The protocol structures are the kernel's (<linux/fuse.h>).
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "fuse/fuse_io.h"
#include "fuse/fuse_uring.h"

#define IO_LAZY_MIN_NS 1000000L      /* lazy reader: first pause, 1 ms */
#define IO_LAZY_MAX_NS 100000000L    /* ... doubling up to 100 ms */

/* io_read_lazy -- the ring serves requests: read /dev/fuse without
 * sleeping in its wait queue (fuse_io.h, "Lazy /dev/fuse") */
static ssize_t io_read_lazy(struct ubj_fuse_io *io, int fd, void *buf, size_t len)
{
    pthread_mutex_lock(&io->lazy_lock);
    if (!io->nonblock) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0)
            io->nonblock = true;
    }
    long pause = IO_LAZY_MIN_NS;
    ssize_t n;
    for (;;) {
        n = read(fd, buf, len);
        if (n >= 0 || errno != EAGAIN)
            break;
        if (fuse_session_exited(io->se)) {
            errno = EINTR;            /* libfuse's loop then sees the exit */
            break;
        }
        struct timespec ts = { 0, pause };
        nanosleep(&ts, NULL);
        pause = pause * 2 > IO_LAZY_MAX_NS ? IO_LAZY_MAX_NS : pause * 2;
    }
    int saved = errno;
    pthread_mutex_unlock(&io->lazy_lock);
    errno = saved;
    return n;
}

/* io_read -- one request, as libfuse reads it; remember an INIT's flags. */
static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    struct ubj_fuse_io *io = userdata;     /* the session's first member */
    if (io->uring != NULL && ubj_fuse_uring_active(io->uring) > 0)
        return io_read_lazy(io, fd, buf, len);
    ssize_t n = read(fd, buf, len);
    const size_t need = sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in);
    if (n >= (ssize_t)need) {
        struct fuse_in_header ih;
        memcpy(&ih, buf, sizeof ih);
        if (ih.opcode == FUSE_INIT && io->init_unique == 0) {
            struct fuse_init_in in;
            memcpy(&in, (char *)buf + sizeof ih, sizeof in);
            io->kernel_flags = in.flags;
            if (in.flags & FUSE_INIT_EXT)
                io->kernel_flags2 = in.flags2;
            io->init_unique = ih.unique;
        }
    }
    return n;
}

/* io_amend_init -- the INIT reply in iov[1]: add the flags we want too. */
static void io_amend_init(struct ubj_fuse_io *io, struct iovec *iov, int count)
{
    struct fuse_out_header oh;
    if (count < 2 || iov[0].iov_len < sizeof oh ||
        iov[1].iov_len < offsetof(struct fuse_init_out, flags) + sizeof(uint32_t))
        return;
    memcpy(&oh, iov[0].iov_base, sizeof oh);
    if (oh.unique != io->init_unique)
        return;
    io->init_unique = 0;
    if (oh.error != 0)
        return;
    struct fuse_init_out *out = iov[1].iov_base;
    if (io->killpriv_v2 && (io->kernel_flags & FUSE_HANDLE_KILLPRIV_V2)) {
        out->flags |= FUSE_HANDLE_KILLPRIV_V2;
        io->granted = true;
    }
    if (ubj_fuse_uring_ready(io->uring) &&
        (io->kernel_flags2 & UBJ_FUSE_FLAGS2_OVER_IO_URING) &&
        iov[1].iov_len >= offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t)) {
        out->flags |= FUSE_INIT_EXT;
        out->flags2 |= UBJ_FUSE_FLAGS2_OVER_IO_URING;
        io->uring_granted = true;
    }
}

/* io_writev -- one reply or notification, as libfuse writes it. */
static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    struct ubj_fuse_io *io = userdata;
    ssize_t n;
    if (ubj_fuse_uring_reply(iov, count, &n))
        return n;
    if (io->init_unique == 0)
        return writev(fd, iov, count);
    io_amend_init(io, iov, count);
    return writev(fd, iov, count);
}

/* ubj_fuse_io_install -- see fuse_io.h. */
int ubj_fuse_io_install(struct fuse_session *se, struct ubj_fuse_io *io)
{
    static const struct fuse_custom_io hooks = {
        .read = io_read,
        .writev = io_writev,
    };
    io->se = se;                   /* io is reached as the session's userdata */
    if (pthread_mutex_init(&io->lazy_lock, NULL) != 0)
        return -EINVAL;
    return fuse_session_custom_io(se, &hooks, fuse_session_fd(se)) == 0 ? 0 : -EINVAL;
}
