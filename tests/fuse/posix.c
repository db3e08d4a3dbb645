/*
 * posix.c -- system calls through a FUSE mount of ubjfs (`ubjfs mount`):
 * open-but-unlinked files and lookup references (no inode reuse while
 * the kernel holds one), renameat2 flags, utimensat with UTIME_NOW and
 * UTIME_OMIT, xattrs, fallocate, shared mmap, large directories,
 * default_permissions access checks, O_APPEND, O_TRUNC, sparse files,
 * special files and errors.  main() mounts a fresh image (exit 77 with the
 * reason when FUSE is unusable here -- under CI=true only when the machine
 * has no /dev/fuse, as tests/common/skip.bash), runs the tests, unmounts
 * and requires a clean fsck.
 */
#include "testutil.h"
#include <linux/falloc.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static char g_dir[256], g_mnt[300], g_img[300], g_pid[300];
static const char *g_tool;

/* t_ci -- running under CI=true, where a skip is a failure */
static bool t_ci(void)
{
    const char *ci = getenv("CI");
    return ci != NULL && strcmp(ci, "true") == 0;
}

/* t_skip -- say why the test skips: 77, or 1 under CI=true unless `fact`
 * (the machine genuinely lacks what the test needs) */
static int t_skip(bool fact, const char *why)
{
    bool as_failure = t_ci() && !fact;
    printf("%s: %s\n", as_failure ? "FAIL: CI=true, so this may not skip" : "SKIP", why);
    fflush(stdout);
    return as_failure ? 1 : 77;
}

/* P -- a path inside the mount (static buffers, 4 in rotation). */
static const char *P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *P(const char *fmt, ...)
{
    static char bufs[4][1024];
    static int next;
    char rel[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    char *b = bufs[next++ % 4];
    snprintf(b, 1024, "%s/%s", g_mnt, rel);
    return b;
}

/* t_put -- create path with n bytes of pattern seed. */
static void t_put(const char *path, size_t n, uint64_t seed)
{
    uint8_t *buf = malloc(n ? n : 1);
    assert_non_null(buf);
    tpattern_fill(buf, n, seed, 0);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, n), (ssize_t)n);
    assert_int_equal(close(fd), 0);
    free(buf);
}

/* t_check -- path holds exactly n bytes of pattern seed. */
static void t_check(const char *path, size_t n, uint64_t seed)
{
    uint8_t *buf = malloc(n + 1);
    assert_non_null(buf);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, buf, n + 1), (ssize_t)n);
    assert_int_equal(tpattern_check(buf, n, seed, 0), n);
    close(fd);
    free(buf);
}

/* t_bfree -- free blocks of the mount. */
static unsigned long t_bfree(void)
{
    struct statvfs v;
    assert_int_equal(statvfs(g_mnt, &v), 0);
    return v.f_bfree;
}

/* test_unlinked_open -- an open, unlinked file keeps its data while new
 * files are made (its inode number is not reused), and its blocks come
 * back after the close. */
static void test_unlinked_open(void **state)
{
    (void)state;
    assert_int_equal(mkdir(P("unl"), 0755), 0);
    unsigned long free0 = t_bfree();
    enum { N = 1 << 20 };
    t_put(P("unl/victim"), N, 11);
    int fd = open(P("unl/victim"), O_RDWR);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    ino_t ino = st.st_ino;
    assert_int_equal(unlink(P("unl/victim")), 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_nlink, 0);
    for (int i = 0; i < 200; i++) {
        t_put(P("unl/new%03d", i), 100, (uint64_t)i);
        struct stat ns;
        assert_int_equal(stat(P("unl/new%03d", i), &ns), 0);
        assert_true(ns.st_ino != ino);
    }
    uint8_t *buf = malloc(N);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, N, 0), N);
    assert_int_equal(tpattern_check(buf, N, 11, 0), N);
    assert_int_equal(pwrite(fd, "tail", 4, N), 4);
    assert_int_equal(fsync(fd), 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, N + 4);
    free(buf);
    assert_int_equal(close(fd), 0);
    for (int i = 0; i < 200; i++)
        assert_int_equal(unlink(P("unl/new%03d", i)), 0);
    /* FORGET is asynchronous: the blocks return within a moment */
    for (int i = 0; i < 50 && t_bfree() != free0; i++)
        t_sleep_ns(100 * 1000 * 1000);
    assert_int_equal(t_bfree(), free0);
    assert_int_equal(rmdir(P("unl")), 0);
}

/* test_rename_flags -- renameat2 NOREPLACE, EXCHANGE, WHITEOUT. */
static void test_rename_flags(void **state)
{
    (void)state;
    assert_int_equal(mkdir(P("ren"), 0755), 0);
    t_put(P("ren/a"), 10, 1);
    t_put(P("ren/b"), 20, 2);
    errno = 0;
    assert_int_equal(renameat2(AT_FDCWD, P("ren/a"), AT_FDCWD, P("ren/b"),
                               RENAME_NOREPLACE), -1);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(renameat2(AT_FDCWD, P("ren/a"), AT_FDCWD, P("ren/b"),
                               RENAME_EXCHANGE), 0);
    t_check(P("ren/a"), 20, 2);
    t_check(P("ren/b"), 10, 1);
    errno = 0;
    assert_int_equal(renameat2(AT_FDCWD, P("ren/a"), AT_FDCWD, P("ren/zz"),
                               RENAME_EXCHANGE), -1);
    assert_int_equal(errno, ENOENT);
    errno = 0;
    assert_int_equal(renameat2(AT_FDCWD, P("ren/a"), AT_FDCWD, P("ren/c"),
                               RENAME_WHITEOUT), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(renameat2(AT_FDCWD, P("ren/a"), AT_FDCWD, P("ren/c"),
                               RENAME_NOREPLACE), 0);
    assert_int_equal(rename(P("ren/c"), P("ren/b")), 0);     /* replaces */
    t_check(P("ren/b"), 20, 2);
    assert_int_equal(access(P("ren/a"), F_OK), -1);
    assert_int_equal(mkdir(P("ren/d"), 0755), 0);
    errno = 0;
    assert_int_equal(rename(P("ren/d"), P("ren/d/sub")), -1);
    assert_int_equal(errno, EINVAL);
}

/* test_times -- utimensat: nanoseconds, UTIME_OMIT, UTIME_NOW. */
static void test_times(void **state)
{
    (void)state;
    t_put(P("times"), 1, 1);
    struct stat a, b;
    assert_int_equal(stat(P("times"), &a), 0);
    struct timespec ts[2] = { { 0, UTIME_OMIT }, { 1234567890, 123456789 } };
    assert_int_equal(utimensat(AT_FDCWD, P("times"), ts, 0), 0);
    assert_int_equal(stat(P("times"), &b), 0);
    assert_int_equal(b.st_mtim.tv_sec, 1234567890);
    assert_int_equal(b.st_mtim.tv_nsec, 123456789);
    assert_int_equal(b.st_atim.tv_sec, a.st_atim.tv_sec);
    assert_int_equal(b.st_atim.tv_nsec, a.st_atim.tv_nsec);
    assert_true(ts_cmp(&b.st_ctim, &a.st_ctim) >= 0);
    struct timespec before;
    clock_gettime(CLOCK_REALTIME, &before);
    before.tv_sec -= 1;
    struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
    assert_int_equal(utimensat(AT_FDCWD, P("times"), now, 0), 0);
    assert_int_equal(stat(P("times"), &b), 0);
    assert_true(ts_cmp(&b.st_atim, &before) > 0);
    assert_int_equal(b.st_mtim.tv_sec, 1234567890);
    assert_int_equal(unlink(P("times")), 0);
}

/* test_xattr -- the xattr system calls and their errors. */
static void test_xattr(void **state)
{
    (void)state;
    const char *f = P("xa");
    char buf[8192];
    t_put(f, 1, 1);
    errno = 0;
    assert_int_equal(getxattr(f, "user.a", buf, sizeof buf), -1);
    assert_int_equal(errno, ENODATA);
    assert_int_equal(setxattr(f, "user.a", "value", 5, 0), 0);
    assert_int_equal(setxattr(f, "security.b", "x", 1, 0), 0);
    assert_int_equal(getxattr(f, "user.a", NULL, 0), 5);
    errno = 0;
    assert_int_equal(getxattr(f, "user.a", buf, 2), -1);
    assert_int_equal(errno, ERANGE);
    assert_int_equal(getxattr(f, "user.a", buf, sizeof buf), 5);
    assert_memory_equal(buf, "value", 5);
    ssize_t n = listxattr(f, buf, sizeof buf);
    assert_true(n >= 18);   /* user.a\0security.b\0 (+ any the kernel adds) */
    assert_non_null(memmem(buf, (size_t)n, "user.a\0", 7));
    assert_non_null(memmem(buf, (size_t)n, "security.b\0", 11));
    errno = 0;
    assert_int_equal(setxattr(f, "user.a", "v", 1, XATTR_CREATE), -1);
    assert_int_equal(errno, EEXIST);
    errno = 0;
    assert_int_equal(setxattr(f, "user.new", "v", 1, XATTR_REPLACE), -1);
    assert_int_equal(errno, ENODATA);
    errno = 0;
    assert_int_equal(setxattr(f, "system.nope", "v", 1, 0), -1);
    assert_int_equal(errno, EOPNOTSUPP);
    memset(buf, 'z', sizeof buf);
    errno = 0;
    assert_int_equal(setxattr(f, "user.big", buf, 5000, 0), -1);
    assert_int_equal(errno, ENOSPC);
    assert_int_equal(removexattr(f, "user.a"), 0);
    errno = 0;
    assert_int_equal(removexattr(f, "user.a"), -1);
    assert_int_equal(errno, ENODATA);
    assert_int_equal(symlink("xa", P("xa.link")), 0);
    errno = 0;
    assert_int_equal(lsetxattr(P("xa.link"), "user.a", "v", 1, 0), -1);
    assert_int_equal(errno, EPERM);
    assert_int_equal(unlink(P("xa.link")), 0);
    /* kept for the check after the remount in fuse_posix's main */
}

/* test_fallocate -- modes 0 and KEEP_SIZE; others EOPNOTSUPP. */
static void test_fallocate(void **state)
{
    (void)state;
    int fd = open(P("fa"), O_CREAT | O_RDWR, 0644);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fallocate(fd, 0, 0, 1 << 20), 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 1 << 20);
    assert_int_equal(st.st_blocks, (1 << 20) / 512);
    assert_int_equal(fallocate(fd, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20), 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 1 << 20);
    assert_int_equal(st.st_blocks, (2 << 20) / 512);
    errno = 0;
    assert_int_equal(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), -1);
    assert_int_equal(errno, EOPNOTSUPP);
    assert_int_equal(posix_fallocate(fd, 0, 3 << 20), 0);
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, 3 << 20);
    char buf[4096];
    assert_int_equal(pread(fd, buf, sizeof buf, 2 << 20), (ssize_t)sizeof buf);
    assert_int_equal(tzero_check(buf, sizeof buf), sizeof buf);
    assert_int_equal(close(fd), 0);
    assert_int_equal(unlink(P("fa")), 0);
}

/* test_mmap -- a shared writable mapping reaches the file; a mapping sees
 * what write() wrote. */
static void test_mmap(void **state)
{
    (void)state;
    enum { N = 256 * 1024 };
    int fd = open(P("mm"), O_CREAT | O_RDWR, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, N), 0);
    uint8_t *m = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    tpattern_fill(m, N, 21, 0);
    assert_int_equal(msync(m, N, MS_SYNC), 0);
    assert_int_equal(munmap(m, N), 0);
    assert_int_equal(close(fd), 0);
    t_check(P("mm"), N, 21);
    t_put(P("mm2"), N, 22);
    fd = open(P("mm2"), O_RDONLY);
    m = mmap(NULL, N, PROT_READ, MAP_PRIVATE, fd, 0);
    assert_true(m != MAP_FAILED);
    assert_int_equal(tpattern_check(m, N, 22, 0), N);
    munmap(m, N);
    close(fd);
    assert_int_equal(unlink(P("mm")), 0);
    assert_int_equal(unlink(P("mm2")), 0);
}

/* test_readdir_big -- 3000 names listed once each, also while half of
 * them are removed during the listing. */
static void test_readdir_big(void **state)
{
    (void)state;
    enum { N = 3000 };
    assert_int_equal(mkdir(P("big"), 0755), 0);
    for (int i = 0; i < N; i++) {
        int fd = open(P("big/file-%05d", i), O_CREAT | O_WRONLY, 0644);
        assert_true(fd >= 0);
        close(fd);
    }
    static uint8_t seen[N];
    memset(seen, 0, sizeof seen);
    DIR *d = opendir(P("big"));
    assert_non_null(d);
    struct dirent *e;
    int count = 0, dots = 0;
    while ((e = readdir(d)) != NULL) {
        int i;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            dots++;
            continue;
        }
        assert_int_equal(sscanf(e->d_name, "file-%d", &i), 1);
        assert_true(i >= 0 && i < N);
        assert_int_equal(seen[i]++, 0);
        assert_int_equal(e->d_type, DT_REG);
        if (count++ == N / 4)          /* remove every odd one mid-listing */
            for (int k = 1; k < N; k += 2)
                assert_int_equal(unlink(P("big/file-%05d", k)), 0);
    }
    closedir(d);
    assert_int_equal(dots, 2);
    for (int i = 0; i < N; i += 2)
        assert_int_equal(seen[i], 1);        /* survivors: exactly once */
    for (int i = 0; i < N; i += 2)
        assert_int_equal(unlink(P("big/file-%05d", i)), 0);
    assert_int_equal(rmdir(P("big")), 0);
}

/* t_as_nobody -- run fn(arg) in a child as uid/gid 65534; its result. */
static int t_as_nobody(int (*fn)(const char *), const char *arg)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(100);
        _exit(fn(arg));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* t_try_read -- 0 if path opens for reading, else errno. */
static int t_try_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

/* t_try_create -- 0 if path can be created, else errno. */
static int t_try_create(const char *path)
{
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

/* test_permissions -- default_permissions: the kernel checks the modes. */
static void test_permissions(void **state)
{
    (void)state;
    if (geteuid() != 0 && t_ci())
        fail_msg("CI=true, so this may not skip: the permission checks need root");
    if (geteuid() != 0)
        skip();
    assert_int_equal(mkdir(P("perm"), 0755), 0);
    t_put(P("perm/secret"), 10, 1);
    assert_int_equal(chmod(P("perm/secret"), 0600), 0);
    assert_int_equal(t_as_nobody(t_try_read, P("perm/secret")), EACCES);
    assert_int_equal(t_as_nobody(t_try_create, P("perm/new")), EACCES);
    assert_int_equal(chmod(P("perm/secret"), 0644), 0);
    assert_int_equal(t_as_nobody(t_try_read, P("perm/secret")), 0);
    assert_int_equal(chmod(P("perm"), 0777), 0);
    assert_int_equal(t_as_nobody(t_try_create, P("perm/new")), 0);
    struct stat st;
    assert_int_equal(stat(P("perm/new"), &st), 0);
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65534);
    assert_int_equal(chown(P("perm/new"), 0, 0), 0);
    assert_int_equal(chmod(P("perm/secret"), 0), 0);
    assert_int_equal(t_try_read(P("perm/secret")), 0);      /* root */
    assert_int_equal(unlink(P("perm/new")), 0);
    assert_int_equal(unlink(P("perm/secret")), 0);
    assert_int_equal(rmdir(P("perm")), 0);
}

/* test_misc -- O_APPEND, O_TRUNC, sparse files, links, special files,
 * statvfs, sync calls and the common errors. */
static void test_misc(void **state)
{
    (void)state;
    int fd = open(P("app"), O_CREAT | O_WRONLY | O_APPEND, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "abc", 3), 3);
    assert_int_equal(pwrite(fd, "def", 3, 0), 3);      /* O_APPEND: at the end */
    assert_int_equal(fdatasync(fd), 0);
    assert_int_equal(syncfs(fd), 0);
    close(fd);
    char buf[16] = { 0 };
    fd = open(P("app"), O_RDWR | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(read(fd, buf, sizeof buf), 0);      /* O_TRUNC */
    assert_int_equal(pwrite(fd, "x", 1, 1 << 30), 1);    /* sparse at 1 GiB */
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, (1 << 30) + 1);
    assert_true(st.st_blocks <= 64);
    assert_int_equal(pread(fd, buf, 8, 1 << 20), 8);
    assert_int_equal(tzero_check(buf, 8), 8);
    close(fd);
    assert_int_equal(link(P("app"), P("app2")), 0);
    assert_int_equal(stat(P("app"), &st), 0);
    assert_int_equal(st.st_nlink, 2);
    assert_int_equal(unlink(P("app")), 0);
    assert_int_equal(stat(P("app2"), &st), 0);
    assert_int_equal(st.st_nlink, 1);
    assert_int_equal(symlink("app2", P("sym")), 0);
    assert_int_equal(readlink(P("sym"), buf, sizeof buf), 4);
    assert_memory_equal(buf, "app2", 4);
    assert_int_equal(mkfifo(P("fifo"), 0600), 0);
    assert_int_equal(lstat(P("fifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    char longname[300];
    memset(longname, 'n', 256);
    longname[256] = '\0';
    errno = 0;
    assert_int_equal(open(P("%s", longname), O_CREAT | O_WRONLY, 0644), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_int_equal(mkdir(P("full"), 0755), 0);
    t_put(P("full/f"), 1, 1);
    errno = 0;
    assert_int_equal(rmdir(P("full")), -1);
    assert_int_equal(errno, ENOTEMPTY);
    errno = 0;
    assert_int_equal(unlink(P("full")), -1);
    assert_int_equal(errno, EISDIR);
    int dfd = open(P("full"), O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(fsync(dfd), 0);
    close(dfd);
    struct statvfs v;
    assert_int_equal(statvfs(g_mnt, &v), 0);
    assert_int_equal(v.f_bsize, 4096);
    assert_int_equal(v.f_namemax, 255);
    assert_true(v.f_bfree > 0 && v.f_bfree <= v.f_blocks);
    assert_int_equal(unlink(P("full/f")), 0);
    assert_int_equal(rmdir(P("full")), 0);
    assert_int_equal(unlink(P("app2")), 0);
    assert_int_equal(unlink(P("sym")), 0);
    assert_int_equal(unlink(P("fifo")), 0);
}

/* t_run -- run a shell command; its exit status. */
static int t_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int t_run(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* t_alive -- pid runs: false once it has exited, even while a zombie (the
 * daemon belongs to PID 1, which may reap it seconds later: see
 * tests/common/proc.bash). */
static bool t_alive(long pid)
{
    char path[64], buf[256];
    if (pid <= 0 || kill((pid_t)pid, 0) != 0)
        return false;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *e = strrchr(buf, ')');
    return e == NULL || (e[1] == ' ' && e[2] != 'Z' && e[2] != 'X');
}

/* t_umount -- fusermount3 -u and wait for the daemon; 0 or -1. */
static int t_umount(void)
{
    long pid = 0;
    FILE *f = fopen(g_pid, "r");
    if (f == NULL || fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    if (f != NULL)
        fclose(f);
    if (t_run("fusermount3 -u '%s'", g_mnt) != 0)
        return -1;
    for (int i = 0; i < 6000 && t_alive(pid); i++)
        t_sleep_ns(10 * 1000 * 1000);
    return t_alive(pid) ? -1 : 0;
}

/* t_mount -- mount the image; 0, or the mount's exit status. */
static int t_mount(void)
{
    return t_run("'%s' mount -o allow_other --pid-file '%s' '%s' '%s' 2>'%s/mount.err'",
                 g_tool, g_pid, g_img, g_mnt, g_dir);
}

/* t_setup -- scratch dir, image, mount; 0, 1, or t_skip's status. */
static int t_setup(void)
{
    g_tool = getenv("UBJ_TOOL");
    if (g_tool == NULL || access(g_tool, X_OK) != 0) {
        printf("FAIL: UBJ_TOOL does not name the built ubjfs\n");
        return 1;
    }
    if (access("/dev/fuse", F_OK) != 0)
        return t_skip(true, "/dev/fuse does not exist (no FUSE in this kernel or container)");
    if (access("/dev/fuse", R_OK | W_OK) != 0)
        return t_skip(false, "/dev/fuse is not usable by this user");
    if (t_run("command -v fusermount3 >/dev/null") != 0)
        return t_skip(false, "fusermount3 is not installed (scripts/install-deps)");
    snprintf(g_dir, sizeof g_dir, "%s/ubjfs-posix.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(g_dir) == NULL || chmod(g_dir, 0755) != 0)
        return 1;
    snprintf(g_mnt, sizeof g_mnt, "%s/mnt", g_dir);
    snprintf(g_img, sizeof g_img, "%s/disk.img", g_dir);
    snprintf(g_pid, sizeof g_pid, "%s/pid", g_dir);
    if (mkdir(g_mnt, 0755) != 0 || t_run("'%s' mkfs -q -s 512M '%s'", g_tool, g_img) != 0)
        return 1;
    if (t_mount() != 0) {
        t_run("cat '%s/mount.err'; rm -rf '%s'", g_dir, g_dir);
        return t_skip(false, "cannot mount through FUSE here (the error above)");
    }
    return 0;
}

/* t_finish -- remount (the xattr must have persisted), unmount, fsck. */
static int t_finish(int failed)
{
    int rc = failed ? 1 : 0;
    char v[16];
    if (t_umount() != 0 || t_mount() != 0) {
        printf("FAIL: unmount or remount\n");
        rc = 1;
    } else if (getxattr(P("xa"), "security.b", v, sizeof v) != 1 || v[0] != 'x') {
        printf("FAIL: xattr security.b lost across a remount\n");
        rc = 1;
    }
    if (t_umount() != 0) {
        printf("FAIL: unmount\n");
        t_run("fusermount3 -u -z '%s'", g_mnt);
        rc = 1;
    } else if (t_run("'%s' fsck -n '%s'", g_tool, g_img) != 0) {
        printf("FAIL: fsck after the tests\n");
        rc = 1;
    }
    t_run("rm -rf '%s'", g_dir);
    return rc;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlinked_open),
        cmocka_unit_test(test_rename_flags),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_xattr),
        cmocka_unit_test(test_fallocate),
        cmocka_unit_test(test_mmap),
        cmocka_unit_test(test_readdir_big),
        cmocka_unit_test(test_permissions),
        cmocka_unit_test(test_misc),
    };
    int rc = t_setup();
    if (rc != 0)
        return rc;
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    return t_finish(failed);
}
