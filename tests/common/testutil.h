/*
 * testutil.h -- helpers linked into every test executable (tests/common/).
 *
 *  - cmocka: including this header includes <cmocka.h> with the headers it
 *    needs before it.
 *  - ubj_test_*: a RAM device + format + mount (UBJ_MOUNT_NO_TIMER) in one
 *    call, remount, and an fsck helper that prints each reported line.
 *  - tpath_*: path-based wrappers over the inode API ("/a/b"): each returns
 *    what the underlying ubj_* call returns (0 / count / negative errno).
 *  - tdir_list: a whole directory listing as an array.
 *  - tprng: xoshiro256** seeded with splitmix64 (deterministic, per test).
 *  - tpattern: a byte pattern that is a function of (seed, file offset),
 *    so a range can be filled and verified anywhere in a file.
 *  - t_no_hooks: the cmocka test that stands for one needing the test
 *    hooks (CMake option UBJ_TEST_HOOKS) in a build without them.
 *  - t_unchecked_begin/end: mounts without the event checker, for a test
 *    that damages metadata by design.
 *  - t_tmpfile*: temporary files under $TMPDIR (else /tmp).
 *  - t_submit_async: a v2 request nobody waits for (a callback counts it).
 */
#ifndef UBJ_TESTUTIL_H
#define UBJ_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "ubjfs/ubjfs.h"
#include "ubjfs/bdev.h"

/* ---- deterministic PRNG ------------------------------------------------ */

struct tprng { uint64_t s[4]; };

/* tprng_seed -- seed the generator (any value, 0 included). */
void tprng_seed(struct tprng *r, uint64_t seed);
/* tprng_next -- the next 64 random bits. */
uint64_t tprng_next(struct tprng *r);
/* tprng_below -- uniform in [0, n) (n > 0; 0 when n == 0). */
uint64_t tprng_below(struct tprng *r, uint64_t n);
/* tprng_env_seed -- seed from environment variable `var` (decimal or 0x
 * hex) or `dflt` when unset. */
uint64_t tprng_env_seed(const char *var, uint64_t dflt);

/* ---- fill patterns ----------------------------------------------------- */

/* tpattern_byte -- the pattern byte of `seed` at file offset `off`. */
uint8_t tpattern_byte(uint64_t seed, uint64_t off);
/* tpattern_fill -- buf[i] = tpattern_byte(seed, off + i). */
void tpattern_fill(void *buf, size_t len, uint64_t seed, uint64_t off);
/* tpattern_check -- index of the first byte that differs, or len. */
size_t tpattern_check(const void *buf, size_t len, uint64_t seed, uint64_t off);
/* tzero_check -- index of the first non-zero byte, or len. */
size_t tzero_check(const void *buf, size_t len);

/* ---- file system set-up ----------------------------------------------- */

/* ubj_test_fs_new -- RAM device of nblocks, ubj_format, ubj_mount with
 * UBJ_MOUNT_NO_TIMER; fails the test on any error. */
void ubj_test_fs_new(uint64_t nblocks, struct ubj_bdev **dev, struct ubj_fs **fs);
/* ubj_test_fs_new_inodes -- the same with `inodes` inodes (0 = default). */
void ubj_test_fs_new_inodes(uint64_t nblocks, uint64_t inodes,
                            struct ubj_bdev **dev, struct ubj_fs **fs);
/* ubj_test_mount -- ubj_mount with UBJ_MOUNT_NO_TIMER | flags; returns rc. */
int ubj_test_mount(struct ubj_bdev *dev, unsigned flags, struct ubj_fs **fs);
/* ubj_test_remount -- unmount (must return 0) and mount again. */
void ubj_test_remount(struct ubj_bdev *dev, struct ubj_fs **fs);
/* ubj_test_check -- ubj_check; each reported line is printed to stderr
 * and counted into *nlines (may be NULL).  Returns the UBJ_CHECK_* code. */
int ubj_test_check(struct ubj_bdev *dev, unsigned flags, int *nlines);
/* ubj_test_fs_done -- unmount (must return 0), ubj_check must be CLEAN
 * with no line, destroy the device. */
void ubj_test_fs_done(struct ubj_bdev *dev, struct ubj_fs *fs);

/* ---- test devices (tdev.c) --------------------------------------------- */

/* tdev_sparse_create -- a device of any size whose blocks live in a hash
 * table once written (unwritten blocks read as zeros): images of a TiB and
 * more in little memory.  Thread-safe.  0 or -ENOMEM. */
int tdev_sparse_create(uint64_t nblocks, struct ubj_bdev **out);
/* tdev_sparse_mapped -- blocks stored by a sparse device. */
uint64_t tdev_sparse_mapped(const struct ubj_bdev *d);
/* tdev_view_create -- a wrapper that passes requests to `lower` (owned)
 * but reports `nblocks` (smaller or larger than lower's: a truncated or
 * over-sized image; requests past lower's end fail with -EIO). */
int tdev_view_create(struct ubj_bdev *lower, uint64_t nblocks, struct ubj_bdev **out);

/* ---- raw images (timage.c; for corruption tests) ----------------------- */

/* timg_copy -- copy every block of src to dst (dst at least as large).
 * 0 or the device's error. */
int timg_copy(struct ubj_bdev *src, struct ubj_bdev *dst);
/* timg_reseal -- recompute the crc of a metadata block (src/fs/format.h:
 * crc32c of the block with the crc field zero, seeded with crc32c(~0,
 * uuid)), so a deliberate change passes the checksum.  The magic and block
 * number fields are left as they are. */
void timg_reseal(void *block, const uint8_t uuid[16]);
/* timg_uuid -- the uuid in the superblock of dev (block 0). 0 or error. */
int timg_uuid(struct ubj_bdev *dev, uint8_t uuid[16]);
/* timg_edit -- read block blkno, call edit(block, ctx), optionally reseal
 * with the image's uuid, write it back.  0 or the device's error. */
int timg_edit(struct ubj_bdev *dev, uint64_t blkno, int reseal,
              void (*edit)(void *block, void *ctx), void *ctx);

/* ---- path helpers ------------------------------------------------------ */

/* tpath_split -- copy path into dir (size dsz) and name (size nsz): the
 * last component without trailing '/', and what precedes it ("/" at
 * least).  -EINVAL for "/" or a relative path, -ENAMETOOLONG if a buffer
 * is too small. */
int tpath_split(const char *path, char *dir, size_t dsz, char *name, size_t nsz);
/* tpath_stat -- lstat(): no follow of the last component. */
int tpath_stat(struct ubj_fs *fs, const char *path, struct ubj_stat *st);
/* tpath_ino -- inode of path (no follow), 0 on any error. */
ubj_ino_t tpath_ino(struct ubj_fs *fs, const char *path);
int tpath_create(struct ubj_fs *fs, const char *path, uint32_t mode,
                 struct ubj_stat *st);
int tpath_mkdir(struct ubj_fs *fs, const char *path, uint32_t mode,
                struct ubj_stat *st);
int tpath_symlink(struct ubj_fs *fs, const char *target, const char *path);
int tpath_link(struct ubj_fs *fs, const char *oldpath, const char *newpath);
int tpath_unlink(struct ubj_fs *fs, const char *path);
int tpath_rmdir(struct ubj_fs *fs, const char *path);
int tpath_rename(struct ubj_fs *fs, const char *oldpath, const char *newpath,
                 unsigned flags);
ssize_t tpath_write(struct ubj_fs *fs, const char *path, const void *buf,
                    size_t len, off_t off);
ssize_t tpath_read(struct ubj_fs *fs, const char *path, void *buf, size_t len,
                   off_t off);
/* tpath_put -- create (or truncate) path and write len bytes of buf. */
int tpath_put(struct ubj_fs *fs, const char *path, const void *buf, size_t len);
/* tpath_truncate -- setattr size. */
int tpath_truncate(struct ubj_fs *fs, const char *path, uint64_t size);

/* ---- directory listings ------------------------------------------------ */

struct tdirent {
    char name[256];      /* NUL-terminated copy */
    ubj_ino_t ino;
    unsigned type;       /* DT_* */
    uint64_t cookie;     /* resumes after this entry */
};
/* tdir_list -- every entry of directory `ino` ("." and ".." included)
 * into a malloc'd array (*out, free it) of *n.  Returns ubj_readdir's rc. */
int tdir_list(struct ubj_fs *fs, ubj_ino_t ino, struct tdirent **out, size_t *n);
/* tdir_count -- entries of `ino` other than "." and ".."; negative errno. */
long tdir_count(struct ubj_fs *fs, ubj_ino_t ino);

/* ---- fixture and assertions ------------------------------------------- */

/* A mounted 4096-block (16 MiB) RAM file system with 8192 inodes for
 * setup/teardown. */
struct tfs { struct ubj_bdev *dev; struct ubj_fs *fs; };
#define TFS_BLOCKS 4096u
#define TFS_INODES 8192u
/* tfs_setup -- cmocka setup: *state = a new struct tfs. */
int tfs_setup(void **state);
/* tfs_teardown -- cmocka teardown: ubj_test_fs_done (fsck must be clean). */
int tfs_teardown(void **state);
#define TFS(state) ((struct tfs *)*(state))

/* assert_ok -- expression must be 0; prints ubj_errormsg() otherwise. */
#define assert_ok(x) do { long long t_rc_ = (long long)(x); \
    if (t_rc_ != 0) fail_msg("%s = %lld (%s)", #x, t_rc_, ubj_errormsg()); \
} while (0)
/* assert_rc -- expression must equal `want` (e.g. -ENOENT or a count). */
#define assert_rc(x, want) do { long long t_rc_ = (long long)(x); \
    long long t_want_ = (long long)(want); \
    if (t_rc_ != t_want_) fail_msg("%s = %lld, want %s = %lld (%s)", #x, \
        t_rc_, #want, t_want_, ubj_errormsg()); \
} while (0)

/* ---- modes and threads (tmode.c) ------------------------------------- */

/* One mount of a fresh 64 MiB RAM image in a named mode. */
struct tmount {
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    char region[128];        /* mode ubj: its NVM region file, else "" */
    struct ubj_config cfg;
};
/* tm_modes -- every mode a concurrency test runs in: none, ubj, ordered,
 * journal, writeback, sync, trial (with its hooks). */
#define TM_NMODES 7
extern const char *const tm_modes[TM_NMODES];
/* tm_all_modes -- call one(mode, arg, why, sizeof why) for each of
 * tm_modes (*phase = its index first, for a watchdog's message, unless
 * NULL); one writes a failure into why or leaves it "".  Prints each
 * failure and fails the test with the first. */
void tm_all_modes(void (*one)(const char *m, void *arg, char *why, size_t wn),
                  void *arg, volatile sig_atomic_t *phase);
/* tm_mount -- format and mount in mode m ("trial": with its hooks,
 * UBJ_TRIAL_HOOKS=1) with nbufs cache buffers and the commit timer every
 * interval_ms; fails the test on error. */
void tm_mount(struct tmount *tm, const char *m, uint32_t nbufs,
              uint32_t interval_ms);
/* tm_readahead -- the read path of the next tm_mount calls
 * (ubj_config.readahead; NULL, the default: the library's). */
extern const char *tm_readahead;
/* tm_done -- unmount, fsck must be clean, destroy (the region too). */
void tm_done(struct tmount *tm, const char *m);
/* tdeadline_in -- now + ms on CLOCK_REALTIME (pthread condvars' clock). */
struct timespec tdeadline_in(long ms);
/* tflag_wait -- wait up to ms for *flag, read under m and signalled on
 * cv; returns its value then (0: timed out). */
int tflag_wait(pthread_mutex_t *m, pthread_cond_t *cv, const int *flag, long ms);
/* tflag_set -- *flag = 1 under m, and broadcast cv. */
void tflag_set(pthread_mutex_t *m, pthread_cond_t *cv, int *flag);
/* tflag_park_locked -- with m held: *parked = 1, broadcast cv, then wait
 * on cv until *release (a test hook parking its thread). */
void tflag_park_locked(pthread_mutex_t *m, pthread_cond_t *cv, int *parked,
                       const int *release);

/* ---- misc -------------------------------------------------------------- */

/* ts_cmp -- <0, 0, >0 as a is before, equal to, after b. */
int ts_cmp(const struct timespec *a, const struct timespec *b);
/* t_free_blocks -- statfs bfree (fails the test if statfs fails). */
uint64_t t_free_blocks(struct ubj_fs *fs);
/* t_free_inodes -- statfs ffree. */
uint64_t t_free_inodes(struct ubj_fs *fs);
/* t_sleep_ns -- nanosleep. */
void t_sleep_ns(long ns);

/* t_no_hooks -- a cmocka test for a build without the test hooks (CMake
 * option UBJ_TEST_HOOKS, which compiles the deliberately broken variants
 * and test callbacks): says so in one line and skips; under CI=true
 * (whose builds have the option on) fails instead.  A test needing the
 * hooks is compiled `#if UBJ_TEST_HOOKS`, else `#define test_x t_no_hooks`. */
void t_no_hooks(void **state);

/* t_unchecked_begin -- the mounts made until t_unchecked_end run without
 * the event checker (src/txn/evcheck.c: UBJ_CHECK_EVENTS, read at each
 * mount, is unset meanwhile).  Only for a test that damages metadata by
 * design, which no event describes; a test that changes metadata as the
 * file system would emits the events instead (fs_event, fs_ievent).  Not
 * nestable; not thread-safe (setenv): call with no mount of another
 * thread starting. */
void t_unchecked_begin(void);
/* t_unchecked_end -- UBJ_CHECK_EVENTS as it was before t_unchecked_begin. */
void t_unchecked_end(void);

/* ---- temporary files --------------------------------------------------- */

/* t_tmpfile -- make an empty file "$TMPDIR/ubj-TAG-XXXXXX" (/tmp when
 * TMPDIR is unset or empty) with mkstemp; its path into path[len].
 * 0, or -1 with errno (the path too long, mkstemp's error). */
int t_tmpfile(char *path, size_t len, const char *tag);
/* t_tmpfile_setup -- a cmocka setup: t_tmpfile(tag "test") into a static
 * buffer, *state is its path (one test at a time, as cmocka runs them). */
int t_tmpfile_setup(void **state);
/* t_tmpfile_teardown -- a cmocka teardown: unlink(*state). */
int t_tmpfile_teardown(void **state);

/* ---- device requests ---------------------------------------------------- */

/* t_submit_async -- v2 asynchronous submission to d: r becomes a request
 * of `op` on blocks [blkno, blkno + count) of buf, time-noncritical,
 * without UBJ_REQ_SYNC (a timed model counts it asynchronous and charges
 * nobody its time), whose callback adds 1 to *done.  Fails the test if
 * ubj_bdev_submit rejects it.  r and buf belong to the device until the
 * callback ran (on a device without a queue: before this returns). */
void t_submit_async(struct ubj_bdev *d, struct ubj_req *r, enum ubj_req_op op,
                    uint64_t blkno, uint32_t count, void *buf, int *done);

#endif /* UBJ_TESTUTIL_H */
