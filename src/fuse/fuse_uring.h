/*
 * fuse_uring.h -- FUSE over io_uring for the frontend (private to
 * src/fuse).  fuse_uring.c owns the per-CPU request queues: Linux 6.14+
 * (CONFIG_FUSE_IO_URING, module parameter fuse.enable_uring=1) can hand
 * FUSE requests to the daemon through io_uring commands, one queue per
 * CPU, instead of read(2)/writev(2) on /dev/fuse.  A request made on CPU
 * n goes to queue n, served by threads pinned to CPU n: the caller's
 * wake-up of the daemon and the daemon's of the caller stay on one CPU,
 * where /dev/fuse moves every request between CPUs (on a virtual machine
 * whose idle CPUs halt, two cross-CPU wake-ups cost 20-40 us per request;
 * docs/PERFORMANCE.md).  libfuse 3.14 has no io_uring transport, so this
 * file is one, under libfuse's request parser and reply builders: a
 * request from the ring is laid out as /dev/fuse would deliver it and
 * passed to fuse_session_process_buf(); the reply libfuse writes comes
 * back through the custom-io writev hook (fuse_io.c) and is committed to
 * the ring entry it answers.  The protocol is the kernel's
 * (include/uapi/linux/fuse.h 7.42, fs/fuse/dev_uring.c;
 * Documentation/filesystems/fuse-io-uring.rst).  Forgets, interrupts and
 * notifications keep using /dev/fuse (the kernel sends them there).
 */
#ifndef UBJ_FUSE_FUSE_URING_H
#define UBJ_FUSE_FUSE_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fuse_session;
struct ubj_fuse_uring;

/* FUSE_OVER_IO_URING in fuse_init_in/out.flags2 (1ULL << 41 of the 64-bit
 * flags; linux-libc-dev of Debian 12 predates it) */
#define UBJ_FUSE_FLAGS2_OVER_IO_URING (1u << 9)

/*
 * ubj_fuse_uring_new -- the queues' state for session `se` (not started):
 * one queue per possible CPU, `depth` entries each, payload buffers of
 * `max_write` bytes or more; `announce`: say on stderr when the first
 * request arrives through the ring.  0 and *out, or -ENOMEM.  Call once,
 * before the session loop.
 */
int ubj_fuse_uring_new(struct fuse_session *se, unsigned depth, size_t max_write,
                       bool announce, struct ubj_fuse_uring **out);

/*
 * ubj_fuse_uring_start -- before the session loop (so before INIT): when
 * the kernel lets FUSE use io_uring (the fuse module's enable_uring), start
 * the queue threads (two per CPU) and wait until every one has its ring
 * and buffers.  Then they register their entries (retrying until the
 * kernel has processed INIT) and serve requests until the connection ends.
 * 0 if all are ready; -EOPNOTSUPP (not enabled) or -EIO (a thread or ring
 * could not be made: all are stopped again) otherwise -- the INIT reply
 * must then not ask for io_uring, because once it does the kernel holds
 * every request until each CPU queue has an entry registered.
 */
int ubj_fuse_uring_start(struct ubj_fuse_uring *u);

/* ubj_fuse_uring_ready -- did ubj_fuse_uring_start succeed? (the INIT
 * reply may ask for io_uring).  False for NULL. */
bool ubj_fuse_uring_ready(const struct ubj_fuse_uring *u);

/*
 * ubj_fuse_uring_reply -- the writev hook's question: is this reply
 * (iov[0] a struct fuse_out_header) one for the ring request this thread
 * is serving?  If so it is committed to the ring (and the entry fetches
 * the next request): true, with *n the bytes taken or -1 and errno.
 * Otherwise false: the caller writes it to /dev/fuse.
 */
bool ubj_fuse_uring_reply(struct iovec *iov, int count, ssize_t *n);

/* ubj_fuse_uring_active -- the number of queues serving requests (0: the
 * mount uses /dev/fuse only). */
unsigned ubj_fuse_uring_active(const struct ubj_fuse_uring *u);

/*
 * ubj_fuse_uring_free -- after the session loop and the unmount: wake and
 * join every queue thread, free the rings and buffers.  NULL is ignored.
 */
void ubj_fuse_uring_free(struct ubj_fuse_uring *u);

#endif /* UBJ_FUSE_FUSE_URING_H */
