/*
 * killafter.c -- LD_PRELOAD shim for tests/fuse/sqlite_gap.sh (built by
 * the test with the system compiler, never linked into ubjfs).  It owns
 * one thing: crash a FUSE daemon at an exact point of a client's work.
 *
 * unlink(2) and fdatasync(2) are passed through; on the $UBJ_KILL_AFTER-th
 * successful call of $UBJ_KILL_CALL ("unlink", whose path must end in
 * $UBJ_KILL_SUFFIX to count, or "fdatasync") the daemon $UBJ_KILL_PID is
 * sent SIGKILL and the shim waits until it is gone before returning: the
 * call was answered, every later request of the client fails
 * (ECONNABORTED).  After an unlink of a rollback journal this is the
 * window in which sqlite3's unixDelete() (os_unix.c) acknowledges a commit
 * without the directory sync that makes the journal's deletion durable;
 * after an fdatasync it is any other point of a commit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int (*real_unlink)(const char *);
static int (*real_fdatasync)(int);
static long seen;

/* gone -- has process pid exited (no longer exists or is a zombie)? */
static int gone(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && (p[2] == 'Z' || p[2] == 'X');
}

/* kill_daemon -- SIGKILL $UBJ_KILL_PID and wait (up to 10 s) until gone */
static void kill_daemon(void)
{
    const char *s = getenv("UBJ_KILL_PID");
    if (!s)
        return;
    pid_t pid = (pid_t)atol(s);
    kill(pid, SIGKILL);
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    for (int i = 0; i < 1000 && !gone(pid); i++)
        nanosleep(&ts, NULL);
    fprintf(stderr, "killafter: killed %d after call %ld\n", (int)pid, seen);
}

/* counts -- is this successful call of `call` on `path` one that counts? */
static int counts(const char *call, const char *path)
{
    const char *want = getenv("UBJ_KILL_CALL");
    if (!want || strcmp(want, call) != 0)
        return 0;
    const char *suffix = getenv("UBJ_KILL_SUFFIX");
    if (!path || !suffix)
        return 1;
    size_t pl = strlen(path), sl = strlen(suffix);
    return pl >= sl && strcmp(path + pl - sl, suffix) == 0;
}

/* after -- a successful call was answered: kill if it is the chosen one */
static void after(const char *call, const char *path)
{
    const char *n = getenv("UBJ_KILL_AFTER");
    if (n && counts(call, path) && ++seen == atol(n))
        kill_daemon();
}

int unlink(const char *path)
{
    if (!real_unlink)
        real_unlink = (int (*)(const char *))dlsym(RTLD_NEXT, "unlink");
    int rc = real_unlink(path);
    int saved = errno;
    if (rc == 0)
        after("unlink", path);
    errno = saved;
    return rc;
}

int fdatasync(int fd)
{
    if (!real_fdatasync)
        real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int rc = real_fdatasync(fd);
    int saved = errno;
    if (rc == 0)
        after("fdatasync", NULL);
    errno = saved;
    return rc;
}
