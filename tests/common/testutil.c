/*
 * testutil.c -- helpers shared by every test executable (see testutil.h).
 *
 * Owns nothing global: every helper works on what it is given.  Set-up
 * helpers fail the running cmocka test on error (they are for set-up, not
 * for the behaviour under test); the tpath_* wrappers return the library's
 * result unchanged so tests can assert error codes through them.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

/* ---- PRNG: splitmix64 seeding xoshiro256** ---------------------------- */

/* tprng_splitmix -- one splitmix64 step. */
static uint64_t tprng_splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* tprng_seed -- fill the xoshiro state from splitmix64(seed). */
void tprng_seed(struct tprng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = tprng_splitmix(&seed);
}

/* tprng_rotl -- rotate left. */
static uint64_t tprng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* tprng_next -- xoshiro256**. */
uint64_t tprng_next(struct tprng *r)
{
    uint64_t *s = r->s;
    uint64_t out = tprng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = tprng_rotl(s[3], 45);
    return out;
}

/* tprng_below -- uniform in [0, n) by rejection. */
uint64_t tprng_below(struct tprng *r, uint64_t n)
{
    if (n == 0)
        return 0;
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = tprng_next(r);
    while (x >= lim);
    return x % n;
}

/* tprng_env_seed -- seed from the environment, or dflt. */
uint64_t tprng_env_seed(const char *var, uint64_t dflt)
{
    const char *s = getenv(var);
    if (s == NULL || *s == '\0')
        return dflt;
    return strtoull(s, NULL, 0);
}

/* ---- patterns ---------------------------------------------------------- */

/* tpattern_byte -- a cheap mix of seed and offset, never constant. */
uint8_t tpattern_byte(uint64_t seed, uint64_t off)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + (off >> 3) * 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 29;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 32;
    return (uint8_t)(x >> ((off & 7) * 8));
}

/* tpattern_fill -- fill buf with the pattern from file offset off. */
void tpattern_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        p[i] = tpattern_byte(seed, off + i);
}

/* tpattern_check -- first mismatching index or len. */
size_t tpattern_check(const void *buf, size_t len, uint64_t seed, uint64_t off)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i] != tpattern_byte(seed, off + i))
            return i;
    return len;
}

/* tzero_check -- first non-zero index or len. */
size_t tzero_check(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i] != 0)
            return i;
    return len;
}

/* ---- set-up ------------------------------------------------------------ */

/* ubj_test_mount -- mount without the background timer. */
int ubj_test_mount(struct ubj_bdev *dev, unsigned flags, struct ubj_fs **fs)
{
    struct ubj_config cfg = { .version = 0, .flags = UBJ_MOUNT_NO_TIMER | flags };
    return ubj_mount(dev, &cfg, fs);
}

/* ubj_test_fs_new -- RAM device + format + mount. */
void ubj_test_fs_new(uint64_t nblocks, struct ubj_bdev **dev, struct ubj_fs **fs)
{
    ubj_test_fs_new_inodes(nblocks, 0, dev, fs);
}

/* ubj_test_fs_new_inodes -- RAM device + format with `inodes` + mount. */
void ubj_test_fs_new_inodes(uint64_t nblocks, uint64_t inodes,
                            struct ubj_bdev **dev, struct ubj_fs **fs)
{
    int rc = ubj_bdev_ram_create(nblocks, dev);
    if (rc != 0)
        fail_msg("ubj_bdev_ram_create(%llu): %d", (unsigned long long)nblocks, rc);
    struct ubj_format_opts fo = { .inodes = inodes, .flags = UBJ_FORMAT_ZEROED };
    rc = ubj_format(*dev, &fo);
    if (rc != 0)
        fail_msg("ubj_format: %d %s", rc, ubj_errormsg());
    rc = ubj_test_mount(*dev, 0, fs);
    if (rc != 0)
        fail_msg("ubj_mount: %d %s", rc, ubj_errormsg());
}

/* ubj_test_remount -- unmount then mount again. */
void ubj_test_remount(struct ubj_bdev *dev, struct ubj_fs **fs)
{
    int rc = ubj_unmount(*fs);
    *fs = NULL;
    if (rc != 0)
        fail_msg("ubj_unmount: %d %s", rc, ubj_errormsg());
    rc = ubj_test_mount(dev, 0, fs);
    if (rc != 0)
        fail_msg("ubj_mount (remount): %d %s", rc, ubj_errormsg());
}

struct tcheck_ctx { int lines; };

/* tcheck_report -- print and count one fsck line. */
static void tcheck_report(void *ctx, const char *line)
{
    struct tcheck_ctx *c = ctx;
    c->lines++;
    fprintf(stderr, "  fsck: %s\n", line);
}

/* ubj_test_check -- run ubj_check, printing lines. */
int ubj_test_check(struct ubj_bdev *dev, unsigned flags, int *nlines)
{
    struct tcheck_ctx c = { 0 };
    int rc = ubj_check(dev, flags, tcheck_report, &c);
    if (nlines)
        *nlines = c.lines;
    return rc;
}

/* ubj_test_fs_done -- unmount, check clean, destroy. */
void ubj_test_fs_done(struct ubj_bdev *dev, struct ubj_fs *fs)
{
    int rc = ubj_unmount(fs);
    if (rc != 0)
        fail_msg("ubj_unmount: %d %s", rc, ubj_errormsg());
    int lines = -1;
    rc = ubj_test_check(dev, 0, &lines);
    ubj_bdev_destroy(dev);
    if (rc != UBJ_CHECK_CLEAN || lines != 0)
        fail_msg("ubj_check: %d with %d lines", rc, lines);
}

/* tfs_setup -- a fresh mounted file system as the test's state. */
int tfs_setup(void **state)
{
    struct tfs *t = calloc(1, sizeof *t);
    if (t == NULL)
        return -1;
    ubj_test_fs_new_inodes(TFS_BLOCKS, TFS_INODES, &t->dev, &t->fs);
    *state = t;
    return 0;
}

/* tfs_teardown -- unmount, require a clean check, free. */
int tfs_teardown(void **state)
{
    struct tfs *t = *state;
    if (t == NULL)
        return 0;
    *state = NULL;
    if (t->fs == NULL) {            /* the test unmounted it already */
        ubj_bdev_destroy(t->dev);
        free(t);
        return 0;
    }
    int rc = ubj_unmount(t->fs);
    int lines = -1;
    int crc = ubj_test_check(t->dev, 0, &lines);
    ubj_bdev_destroy(t->dev);
    free(t);
    if (rc != 0 || crc != UBJ_CHECK_CLEAN || lines != 0) {
        print_error("teardown: unmount %d, check %d with %d lines\n", rc, crc, lines);
        return -1;
    }
    return 0;
}

/* ---- path helpers ------------------------------------------------------ */

/* tpath_split -- split path into parent and last name. */
int tpath_split(const char *path, char *dir, size_t dsz, char *name, size_t nsz)
{
    if (path == NULL || path[0] != '/')
        return -EINVAL;
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (start == end)
        return -EINVAL;                   /* "/" */
    if (end - start >= nsz)
        return -ENAMETOOLONG;
    memcpy(name, path + start, end - start);
    name[end - start] = '\0';
    size_t dlen = start;
    while (dlen > 1 && path[dlen - 1] == '/')
        dlen--;
    if (dlen >= dsz)
        return -ENAMETOOLONG;
    memcpy(dir, path, dlen);
    dir[dlen] = '\0';
    return 0;
}

/* tpath_parent -- split and resolve the parent directory. */
static int tpath_parent(struct ubj_fs *fs, const char *path, ubj_ino_t *parent,
                        char *name, size_t nsz)
{
    char dir[4096];
    int rc = tpath_split(path, dir, sizeof dir, name, nsz);
    if (rc < 0)
        return rc;
    struct ubj_stat st;
    rc = ubj_path_lookup(fs, dir, 0, &st);
    if (rc < 0)
        return rc;
    *parent = st.ino;
    return 0;
}

/* tpath_stat -- lstat. */
int tpath_stat(struct ubj_fs *fs, const char *path, struct ubj_stat *st)
{
    return ubj_path_lookup(fs, path, UBJ_PATH_NOFOLLOW, st);
}

/* tpath_ino -- inode number or 0. */
ubj_ino_t tpath_ino(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    if (tpath_stat(fs, path, &st) != 0)
        return 0;
    return st.ino;
}

/* tpath_create -- create a regular file. */
int tpath_create(struct ubj_fs *fs, const char *path, uint32_t mode,
                 struct ubj_stat *st)
{
    char name[1024];
    ubj_ino_t p;
    int rc = tpath_parent(fs, path, &p, name, sizeof name);
    return rc < 0 ? rc : ubj_create(fs, p, name, mode, NULL, st);
}

/* tpath_mkdir -- make a directory. */
int tpath_mkdir(struct ubj_fs *fs, const char *path, uint32_t mode,
                struct ubj_stat *st)
{
    char name[1024];
    ubj_ino_t p;
    int rc = tpath_parent(fs, path, &p, name, sizeof name);
    return rc < 0 ? rc : ubj_mkdir(fs, p, name, mode, NULL, st);
}

/* tpath_symlink -- make a symlink at path. */
int tpath_symlink(struct ubj_fs *fs, const char *target, const char *path)
{
    char name[1024];
    ubj_ino_t p;
    int rc = tpath_parent(fs, path, &p, name, sizeof name);
    return rc < 0 ? rc : ubj_symlink(fs, target, p, name, NULL, NULL);
}

/* tpath_link -- hard link newpath to oldpath (no follow, as link(2)). */
int tpath_link(struct ubj_fs *fs, const char *oldpath, const char *newpath)
{
    struct ubj_stat st;
    int rc = tpath_stat(fs, oldpath, &st);
    if (rc < 0)
        return rc;
    char name[1024];
    ubj_ino_t p;
    rc = tpath_parent(fs, newpath, &p, name, sizeof name);
    return rc < 0 ? rc : ubj_link(fs, st.ino, p, name, NULL);
}

/* tpath_unlink -- unlink. */
int tpath_unlink(struct ubj_fs *fs, const char *path)
{
    char name[1024];
    ubj_ino_t p;
    int rc = tpath_parent(fs, path, &p, name, sizeof name);
    return rc < 0 ? rc : ubj_unlink(fs, p, name);
}

/* tpath_rmdir -- rmdir. */
int tpath_rmdir(struct ubj_fs *fs, const char *path)
{
    char name[1024];
    ubj_ino_t p;
    int rc = tpath_parent(fs, path, &p, name, sizeof name);
    return rc < 0 ? rc : ubj_rmdir(fs, p, name);
}

/* tpath_rename -- renameat2. */
int tpath_rename(struct ubj_fs *fs, const char *oldpath, const char *newpath,
                 unsigned flags)
{
    char n1[1024], n2[1024];
    ubj_ino_t p1, p2;
    int rc = tpath_parent(fs, oldpath, &p1, n1, sizeof n1);
    if (rc < 0)
        return rc;
    rc = tpath_parent(fs, newpath, &p2, n2, sizeof n2);
    return rc < 0 ? rc : ubj_rename(fs, p1, n1, p2, n2, flags);
}

/* tpath_write -- pwrite by path (follows symlinks). */
ssize_t tpath_write(struct ubj_fs *fs, const char *path, const void *buf,
                    size_t len, off_t off)
{
    struct ubj_stat st;
    int rc = ubj_path_lookup(fs, path, 0, &st);
    return rc < 0 ? rc : ubj_pwrite(fs, st.ino, buf, len, off);
}

/* tpath_read -- pread by path (follows symlinks). */
ssize_t tpath_read(struct ubj_fs *fs, const char *path, void *buf, size_t len,
                   off_t off)
{
    struct ubj_stat st;
    int rc = ubj_path_lookup(fs, path, 0, &st);
    return rc < 0 ? rc : ubj_pread(fs, st.ino, buf, len, off);
}

/* tpath_truncate -- set the size. */
int tpath_truncate(struct ubj_fs *fs, const char *path, uint64_t size)
{
    struct ubj_stat st;
    int rc = ubj_path_lookup(fs, path, 0, &st);
    if (rc < 0)
        return rc;
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = size };
    return ubj_setattr(fs, st.ino, &sa, NULL);
}

/* tpath_put -- create or truncate, then write the whole buffer. */
int tpath_put(struct ubj_fs *fs, const char *path, const void *buf, size_t len)
{
    struct ubj_stat st;
    int rc = tpath_create(fs, path, 0644, &st);
    if (rc == -EEXIST) {
        rc = ubj_path_lookup(fs, path, 0, &st);
        if (rc == 0)
            rc = ubj_open(fs, st.ino, O_RDWR | O_TRUNC);
        if (rc == 0)
            rc = ubj_release(fs, st.ino);
    }
    if (rc < 0)
        return rc;
    ssize_t n = len ? ubj_pwrite(fs, st.ino, buf, len, 0) : 0;
    if (n < 0)
        return (int)n;
    return (size_t)n == len ? 0 : -ENOSPC;
}

/* ---- listings ---------------------------------------------------------- */

struct tdir_ctx {
    struct tdirent *v;
    size_t n, cap;
    int err;
};

/* tdir_fill -- append one entry. */
static int tdir_fill(void *ctx, const char *name, size_t namelen, ubj_ino_t ino,
                     unsigned type, uint64_t next_cookie)
{
    struct tdir_ctx *c = ctx;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct tdirent *v = realloc(c->v, cap * sizeof *v);
        if (v == NULL) {
            c->err = -ENOMEM;
            return 1;
        }
        c->v = v;
        c->cap = cap;
    }
    struct tdirent *e = &c->v[c->n++];
    size_t l = namelen < sizeof e->name - 1 ? namelen : sizeof e->name - 1;
    memcpy(e->name, name, l);
    e->name[l] = '\0';
    e->ino = ino;
    e->type = type;
    e->cookie = next_cookie;
    return 0;
}

/* tdir_list -- read the whole directory. */
int tdir_list(struct ubj_fs *fs, ubj_ino_t ino, struct tdirent **out, size_t *n)
{
    struct tdir_ctx c = { 0 };
    int rc = ubj_readdir(fs, ino, 0, tdir_fill, &c);
    if (rc == 0 && c.err)
        rc = c.err;
    if (rc < 0) {
        free(c.v);
        *out = NULL;
        *n = 0;
        return rc;
    }
    *out = c.v;
    *n = c.n;
    return 0;
}

/* tdir_count -- entries other than "." and "..". */
long tdir_count(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct tdirent *v;
    size_t n;
    int rc = tdir_list(fs, ino, &v, &n);
    if (rc < 0)
        return rc;
    long cnt = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].name, ".") != 0 && strcmp(v[i].name, "..") != 0)
            cnt++;
    free(v);
    return cnt;
}

/* ---- misc -------------------------------------------------------------- */

/* ts_cmp -- compare timespecs. */
int ts_cmp(const struct timespec *a, const struct timespec *b)
{
    if (a->tv_sec != b->tv_sec)
        return a->tv_sec < b->tv_sec ? -1 : 1;
    if (a->tv_nsec != b->tv_nsec)
        return a->tv_nsec < b->tv_nsec ? -1 : 1;
    return 0;
}

/* t_free_blocks -- statfs bfree. */
uint64_t t_free_blocks(struct ubj_fs *fs)
{
    struct ubj_statfs s;
    int rc = ubj_statfs_get(fs, &s);
    if (rc != 0)
        fail_msg("ubj_statfs_get: %d", rc);
    return s.bfree;
}

/* t_free_inodes -- statfs ffree. */
uint64_t t_free_inodes(struct ubj_fs *fs)
{
    struct ubj_statfs s;
    int rc = ubj_statfs_get(fs, &s);
    if (rc != 0)
        fail_msg("ubj_statfs_get: %d", rc);
    return s.ffree;
}

/* t_sleep_ns -- sleep for ns nanoseconds. */
void t_sleep_ns(long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* t_no_hooks -- stands for a test that needs UBJ_TEST_HOOKS: skip. */
void t_no_hooks(void **state)
{
    (void)state;
    const char *ci = getenv("CI");
    if (ci != NULL && strcmp(ci, "true") == 0)
        fail_msg("CI=true, so this may not skip: needs a test build (UBJ_TEST_HOOKS)");
    print_message("SKIP: needs a test build (UBJ_TEST_HOOKS)\n");
    skip();
}

/* UBJ_CHECK_EVENTS's value saved by t_unchecked_begin ("" if unset). */
static char t_unchecked_saved[16];
static bool t_unchecked_was_set;

/* t_unchecked_begin -- unset UBJ_CHECK_EVENTS, keeping its value. */
void t_unchecked_begin(void)
{
    const char *v = getenv("UBJ_CHECK_EVENTS");
    t_unchecked_was_set = v != NULL;
    snprintf(t_unchecked_saved, sizeof t_unchecked_saved, "%s", v ? v : "");
    unsetenv("UBJ_CHECK_EVENTS");
}

/* t_unchecked_end -- restore UBJ_CHECK_EVENTS. */
void t_unchecked_end(void)
{
    if (t_unchecked_was_set)
        setenv("UBJ_CHECK_EVENTS", t_unchecked_saved, 1);
    t_unchecked_was_set = false;
}

/* t_tmpfile -- see testutil.h. */
int t_tmpfile(char *path, size_t len, const char *tag)
{
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/tmp";
    int n = snprintf(path, len, "%s/ubj-%s-XXXXXX", dir, tag);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

/* t_tmpfile_setup -- see testutil.h. */
int t_tmpfile_setup(void **state)
{
    static char path[4096];
    if (t_tmpfile(path, sizeof path, "test") < 0)
        return -1;
    *state = path;
    return 0;
}

/* t_tmpfile_teardown -- see testutil.h. */
int t_tmpfile_teardown(void **state)
{
    unlink((const char *)*state);
    return 0;
}

/* t_done_count -- t_submit_async's callback: count the completion. */
static void t_done_count(struct ubj_req *r)
{
    __atomic_fetch_add((int *)r->priv, 1, __ATOMIC_RELAXED);
}

/* t_submit_async -- see testutil.h. */
void t_submit_async(struct ubj_bdev *d, struct ubj_req *r, enum ubj_req_op op,
                    uint64_t blkno, uint32_t count, void *buf, int *done)
{
    ubj_req_init(r, op, blkno, count, buf);
    r->done = t_done_count;
    r->priv = done;
    assert_int_equal(ubj_bdev_submit(d, r), 0);
}
