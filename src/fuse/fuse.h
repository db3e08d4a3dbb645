/*
 * fuse.h -- the FUSE frontend (src/fuse/fuse.c): serve a mounted
 * `struct ubj_fs` to the kernel through libfuse3's low-level API.
 * `ubjfs mount` (src/tools/mount.c) is its one user; this header keeps
 * libfuse's own headers out of the tools.
 *
 * Life cycle: ubj_fuse_new (parses the FUSE options: a bad one fails here,
 * before anything is mounted) -> ubj_fuse_mount (kernel mount) ->
 * ubj_fuse_loop (multi-threaded; returns after `fusermount3 -u`, umount,
 * or SIGTERM/SIGINT/SIGHUP) -> ubj_fuse_unmount -> ubj_fuse_destroy; the
 * caller then unmounts the library (final commit).
 */
#ifndef UBJ_FUSE_FUSE_H
#define UBJ_FUSE_FUSE_H

#include <stdbool.h>
#include "ubjfs/ubjfs.h"

struct ubj_fuse_opts {
    const char *fuse_opts;     /* libfuse mount options "a,b=c" or NULL */
    const char *fsname;        /* shown by mount(8) as the source */
    double attr_timeout;       /* seconds the kernel caches attributes */
    double entry_timeout;      /* ... names */
    double negative_timeout;   /* ... absent names (0: not cached) */
    bool writeback_cache;      /* kernel write-back page cache */
    bool rdonly;               /* the library mount is read-only */
    bool debug;                /* libfuse's request trace on stderr */
    unsigned max_threads;      /* worker threads (0: libfuse's default) */
    unsigned max_idle_threads; /* idle workers kept (0: default) */
    unsigned max_read;         /* -o max_read (bytes; 0: libfuse's) */
    bool no_io_uring;          /* serve /dev/fuse only, even where the
                                * kernel offers FUSE over io_uring */
    bool no_killpriv_v2;       /* don't take over suid/capability clearing
                                * (fuse_io.h); the kernel then asks for
                                * security.capability before every write */
    bool file_handles;         /* answer OPEN and RELEASE: a struct ubj_file
                                * per open in fi->fh (two round trips per
                                * open(2)/close(2)); false: the kernel
                                * opens files itself where it can */
    bool no_kernel_readahead;  /* INIT's max_readahead 0: the kernel reads
                                * ahead nothing above the mount (--readahead
                                * off, off-page); false: the kernel's own */
};

/* Defaults (docs/USAGE.md explains the choice). */
#define UBJ_FUSE_ATTR_TIMEOUT 10.0
#define UBJ_FUSE_ENTRY_TIMEOUT 10.0
#define UBJ_FUSE_NEGATIVE_TIMEOUT 10.0
#define UBJ_FUSE_MAX_WRITE (1u << 20)   /* bytes per FUSE write request */

struct ubj_fuse;

/* ubj_fuse_new -- a FUSE session with these options (not yet mounted).
 * 0 and *out; -EINVAL (a FUSE option libfuse rejects: ubj_errormsg() says
 * which, nothing is printed); -ENOMEM. */
int ubj_fuse_new(const struct ubj_fuse_opts *o, struct ubj_fuse **out);

/* ubj_fuse_mount -- mount the session on `mountpoint`, serving `fs`.
 * 0, or -EIO when the kernel mount fails (libfuse printed why). */
int ubj_fuse_mount(struct ubj_fuse *f, struct ubj_fs *fs, const char *mountpoint);

/* ubj_fuse_loop -- serve requests until unmounted or signalled (SIGTERM,
 * SIGINT, SIGHUP).  0 on such an end; a negative errno if the session
 * failed. */
int ubj_fuse_loop(struct ubj_fuse *f);

/* ubj_fuse_unmount -- detach the kernel mount (if still there). */
void ubj_fuse_unmount(struct ubj_fuse *f);

/* ubj_fuse_destroy -- free the session; drops the lookup references it
 * holds on `fs` (ubj_release), so call it before ubj_unmount. */
void ubj_fuse_destroy(struct ubj_fuse *f);

#endif /* UBJ_FUSE_FUSE_H */
