/*
 * fuse_io.h -- the frontend's transport hooks (private to src/fuse).
 * fuse_io.c owns what passes between libfuse and /dev/fuse: requests are
 * read and replies written exactly as libfuse would, with one amendment
 * to the INIT reply (below).
 */
#ifndef UBJ_FUSE_FUSE_IO_H
#define UBJ_FUSE_FUSE_IO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct fuse_session;
struct ubj_fuse_uring;

struct ubj_fuse_io {
    bool killpriv_v2;        /* in: ask for FUSE_HANDLE_KILLPRIV_V2 */
    struct ubj_fuse_uring *uring;  /* in: ask for io_uring (NULL: don't) */
    bool granted;            /* out: the INIT reply asked for killpriv_v2 */
    bool uring_granted;      /* out: ... for FUSE over io_uring */
    _Atomic uint64_t init_unique;  /* the INIT request seen, until its reply
                              * (read by every /dev/fuse reply: atomic;
                              * published after the flags below) */
    uint32_t kernel_flags;   /* what the kernel offered in INIT */
    uint32_t kernel_flags2;  /* ... its second word (FUSE_INIT_EXT) */
    struct fuse_session *se; /* set by ubj_fuse_io_install */
    pthread_mutex_t lazy_lock;     /* one lazy /dev/fuse reader at a time */
    pthread_cond_t kick;     /* [lazy_lock] ubj_fuse_io_kick ends a pause */
    uint64_t kicks, kicks_seen;    /* [lazy_lock] */
    _Atomic bool nonblock;   /* the descriptor was made O_NONBLOCK */
    _Atomic uint64_t forgets_read; /* FORGET and BATCH_FORGET messages read */
    pthread_mutex_t drain_lock;    /* one ubj_fuse_io_drain at a time */
    char *drain_buf;         /* [drain_lock] its read buffer */
    size_t bufsize;          /* in: bytes a read of /dev/fuse needs */
};

/*
 * ubj_fuse_io_install -- route the session's reads and writes on its
 * /dev/fuse descriptor (after fuse_session_mount) through the hooks, with
 * `io` as their state.  libfuse hands the hooks the session's userdata
 * (fuse_session_new()), so `io` must be the first member of that object.
 *
 * FUSE_HANDLE_KILLPRIV_V2 (Linux 5.11, protocol 7.33): with it the kernel
 * no longer asks the file system, before every write(2), whether the file
 * carries security.capability (a GETXATTR round trip per write: Linux's
 * file_remove_privs() in fuse_cache_write_iter()); the file system clears
 * S_ISUID/S_ISGID and the capability itself on write, truncate and chown
 * (the library does: ubj_pwrite, ubj_setattr with UBJ_SET_KILL_SUIDGID).
 * libfuse 3.14 cannot ask for it (no FUSE_CAP_ bit; added in 3.16), so
 * the INIT reply libfuse writes gets the flag here when the kernel offered
 * it and io->killpriv_v2 is set.  Likewise FUSE_OVER_IO_URING (Linux
 * 6.14, protocol 7.42; offered only when the fuse module's enable_uring
 * is set) when io->uring is given: the queues start once that reply is
 * written, and replies to ring requests go to the ring (fuse_uring.h).
 * Nothing else in any message changes.
 *
 * Lazy /dev/fuse.  Once the ring serves requests, the kernel sends only
 * FORGETs and INTERRUPTs to /dev/fuse, and nobody waits for them; but a
 * daemon thread asleep in read(2) makes every FORGET (one per unlink)
 * wake it on another CPU, in the unlinking process's system call (8.5%
 * of PostMark's time, measured with perf).  So then one thread at a time
 * reads /dev/fuse without blocking and sleeps between tries (1 ms, doubling
 * to 100 ms while nothing comes): FORGETs wait a little and arrive batched;
 * the end of the connection (ENODEV) and the session's exit are noticed
 * within 100 ms.  A reply that will make the kernel send FORGETs (unlink,
 * rmdir, rename over a name) kicks the reader (ubj_fuse_io_kick), so an
 * unlinked file's blocks are freed about a millisecond later.  (Measured
 * both ways: without the kick PostMark ran 1.2x faster with the program
 * on one CPU and 1.4x slower with it free to move; docs/PERFORMANCE.md.)
 * Two requests must see those blocks free at once: a STATFS (`rm -r x;
 * df`, or the last close of an unlinked file) and a request that failed
 * with ENOSPC, before it is tried again.  The kernel queues an inode's
 * FORGET inside the unlink(2) or close(2) that drops it, before that call
 * returns, so these requests take what /dev/fuse holds themselves
 * (ubj_fuse_io_drain) and then wait for FORGETs other threads have read
 * but not yet handled (fuse.c, fu_forgets_settle): no sleeping, no timing.
 *
 * 0, or -EINVAL if libfuse refused the hooks.  Not thread-safe: call once,
 * before the session loop.
 */
int ubj_fuse_io_install(struct fuse_session *se, struct ubj_fuse_io *io);

/* ubj_fuse_io_kick -- wake the lazy /dev/fuse reader now (FORGETs are
 * coming).  Thread-safe; a no-op before ubj_fuse_io_install. */
void ubj_fuse_io_kick(struct ubj_fuse_io *io);

/*
 * ubj_fuse_io_drain -- in lazy mode, read every message waiting on
 * /dev/fuse now (without blocking) and hand each to libfuse, on the
 * calling thread (a request handler: FORGETs and INTERRUPTs need no reply;
 * anything else is answered through /dev/fuse as usual).  Returns the
 * number handled; 0 when the readers block (they take each message at
 * once), nothing waits, or the caller is itself a request this thread's
 * drain is handling.  Thread-safe (one drain at a time); -ENOMEM if the
 * read buffer (io->bufsize bytes) cannot be had.
 */
int ubj_fuse_io_drain(struct ubj_fuse_io *io);

/*
 * ubj_fuse_io_nonblock -- make /dev/fuse O_NONBLOCK now, as the lazy
 * reader does once the ring serves.  Every reader copes: a thread that
 * chose to block and then finds the flag set (the kernel checks it again
 * after each wake-up whose request another reader took) waits as the lazy
 * reader does instead of failing the session with EAGAIN.  Test builds
 * call it at INIT under UBJ_FUSE_TEST_NONBLOCK=1 (tests/fuse/uring.sh) to
 * make that race certain.  0 or -errno from fcntl(2).  Thread-safe.
 */
int ubj_fuse_io_nonblock(struct ubj_fuse_io *io);

/* ubj_fuse_io_fini -- free what ubj_fuse_io_install made; after the
 * session (and every thread that could call the hooks) is gone. */
void ubj_fuse_io_fini(struct ubj_fuse_io *io);

#endif /* UBJ_FUSE_FUSE_IO_H */
