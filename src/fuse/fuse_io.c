/*
 * fuse_io.c -- the transport hooks of the FUSE frontend (fuse_io.h):
 * read(2) and writev(2) on /dev/fuse for libfuse, noting the INIT request
 * and amending its reply with FUSE_HANDLE_KILLPRIV_V2 (why: fuse_io.h).
 * The protocol structures are the kernel's (<linux/fuse.h>).
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

/* io_unlock -- cleanup handler: libfuse cancels its workers at exit,
 * inside read(2) or the timed wait below; the lock must not stay held */
static void io_unlock(void *lock)
{
    pthread_mutex_unlock(lock);
}

/* io_deadline -- now + ns on CLOCK_MONOTONIC (the condition's clock) */
static struct timespec io_deadline(long ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_nsec += ns;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    return ts;
}

/* io_set_nonblock -- make the descriptor O_NONBLOCK (for every reader:
 * the flag is the open file's); 0 or -errno */
static int io_set_nonblock(struct ubj_fuse_io *io, int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    io->nonblock = true;
    return 0;
}

/* io_read_lazy -- the ring serves requests: read /dev/fuse without
 * sleeping in its wait queue (fuse_io.h, "Lazy /dev/fuse"); a kick
 * (ubj_fuse_io_kick) ends a pause at once */
static ssize_t io_read_lazy(struct ubj_fuse_io *io, int fd, void *buf, size_t len)
{
    ssize_t n;
    int saved;
    pthread_mutex_lock(&io->lazy_lock);
    pthread_cleanup_push(io_unlock, &io->lazy_lock);
    if (!io->nonblock)
        (void)io_set_nonblock(io, fd);
    long pause = IO_LAZY_MIN_NS;
    for (;;) {
        n = read(fd, buf, len);
        if (n >= 0 || errno != EAGAIN)
            break;
        if (fuse_session_exited(io->se)) {
            errno = EINTR;            /* libfuse's loop then sees the exit */
            break;
        }
        if (io->kicks == io->kicks_seen) {
            struct timespec ts = io_deadline(pause);
            (void)pthread_cond_timedwait(&io->kick, &io->lazy_lock, &ts);
        }
        if (io->kicks != io->kicks_seen) {
            io->kicks_seen = io->kicks;
            pause = IO_LAZY_MIN_NS;
        } else {
            pause = pause * 2 > IO_LAZY_MAX_NS ? IO_LAZY_MAX_NS : pause * 2;
        }
    }
    saved = errno;
    pthread_cleanup_pop(1);
    errno = saved;
    return n;
}

/* ubj_fuse_io_kick -- see fuse_io.h. */
void ubj_fuse_io_kick(struct ubj_fuse_io *io)
{
    if (io->se == NULL)
        return;
    pthread_mutex_lock(&io->lazy_lock);
    io->kicks++;
    pthread_cond_signal(&io->kick);
    pthread_mutex_unlock(&io->lazy_lock);
}

/* io_note -- count a FORGET message read (fuse.c settles against it) */
static void io_note(struct ubj_fuse_io *io, const void *buf, ssize_t n)
{
    struct fuse_in_header ih;
    if (n < (ssize_t)sizeof ih)
        return;
    memcpy(&ih, buf, sizeof ih);
    if (ih.opcode == FUSE_FORGET || ih.opcode == FUSE_BATCH_FORGET)
        atomic_fetch_add(&io->forgets_read, 1);
}

/* set while this thread drains: a drained request that drains again (a
 * STATFS or an ENOSPC left on /dev/fuse from before the ring served)
 * must not wait for the lock this thread holds */
static _Thread_local bool io_draining;

/* ubj_fuse_io_drain -- see fuse_io.h. */
int ubj_fuse_io_drain(struct ubj_fuse_io *io)
{
    if (io->se == NULL || !io->nonblock || io_draining)
        return 0;
    int done = 0;
    pthread_mutex_lock(&io->drain_lock);
    io_draining = true;
    if (io->drain_buf == NULL)
        io->drain_buf = malloc(io->bufsize);
    if (io->drain_buf == NULL)
        done = -ENOMEM;
    while (done >= 0) {
        ssize_t n = read(fuse_session_fd(io->se), io->drain_buf, io->bufsize);
        if (n <= 0)
            break;                    /* EAGAIN: all taken; the end: the loop sees it */
        io_note(io, io->drain_buf, n);
        struct fuse_buf fb = { .mem = io->drain_buf, .size = (size_t)n };
        fuse_session_process_buf(io->se, &fb);
        done++;
    }
    io_draining = false;
    pthread_mutex_unlock(&io->drain_lock);
    return done;
}

/* io_read -- one request, as libfuse reads it; remember an INIT's flags. */
static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    struct ubj_fuse_io *io = userdata;     /* the session's first member */
    if (io->uring != NULL && ubj_fuse_uring_active(io->uring) > 0) {
        ssize_t n = io_read_lazy(io, fd, buf, len);
        io_note(io, buf, n);
        return n;
    }
    ssize_t n = read(fd, buf, len);
    if (n < 0 && errno == EAGAIN) {
        /* the descriptor was made O_NONBLOCK (the ring's lazy reader, or a
         * drain) after this thread chose to block: the kernel checks the
         * flag again after each wake-up whose request another reader took
         * (fuse_dev_do_read), and libfuse ends the whole session on
         * EAGAIN.  Wait as the lazy reader does instead. */
        n = io_read_lazy(io, fd, buf, len);
        io_note(io, buf, n);
        return n;
    }
    io_note(io, buf, n);
    const size_t need = sizeof(struct fuse_in_header) + sizeof(struct fuse_init_in);
    if (n >= (ssize_t)need) {
        struct fuse_in_header ih;
        memcpy(&ih, buf, sizeof ih);
        if (ih.opcode == FUSE_INIT && atomic_load(&io->init_unique) == 0) {
            struct fuse_init_in in;
            memcpy(&in, (char *)buf + sizeof ih, sizeof in);
            io->kernel_flags = in.flags;
            if (in.flags & FUSE_INIT_EXT)
                io->kernel_flags2 = in.flags2;
            atomic_store_explicit(&io->init_unique, ih.unique, memory_order_release);
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
    if (oh.unique != atomic_load_explicit(&io->init_unique, memory_order_acquire))
        return;
    atomic_store(&io->init_unique, 0);
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
    if (atomic_load_explicit(&io->init_unique, memory_order_relaxed) == 0)
        return writev(fd, iov, count);
    io_amend_init(io, iov, count);
    return writev(fd, iov, count);
}

/* ubj_fuse_io_nonblock -- see fuse_io.h. */
int ubj_fuse_io_nonblock(struct ubj_fuse_io *io)
{
    return io_set_nonblock(io, fuse_session_fd(io->se));
}

/* ubj_fuse_io_install -- see fuse_io.h. */
int ubj_fuse_io_install(struct fuse_session *se, struct ubj_fuse_io *io)
{
    static const struct fuse_custom_io hooks = {
        .read = io_read,
        .writev = io_writev,
    };
    pthread_condattr_t ca;
    if (pthread_mutex_init(&io->lazy_lock, NULL) != 0)
        return -EINVAL;
    if (pthread_mutex_init(&io->drain_lock, NULL) != 0) {
        pthread_mutex_destroy(&io->lazy_lock);
        return -EINVAL;
    }
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&io->kick, &ca) != 0) {
        pthread_mutex_destroy(&io->drain_lock);
        pthread_mutex_destroy(&io->lazy_lock);
        return -EINVAL;
    }
    pthread_condattr_destroy(&ca);
    io->se = se;                   /* io is reached as the session's userdata */
    return fuse_session_custom_io(se, &hooks, fuse_session_fd(se)) == 0 ? 0 : -EINVAL;
}

/* ubj_fuse_io_fini -- see fuse_io.h. */
void ubj_fuse_io_fini(struct ubj_fuse_io *io)
{
    if (io->se == NULL)
        return;
    pthread_cond_destroy(&io->kick);
    pthread_mutex_destroy(&io->lazy_lock);
    pthread_mutex_destroy(&io->drain_lock);
    free(io->drain_buf);
    io->drain_buf = NULL;
    io->se = NULL;
}
