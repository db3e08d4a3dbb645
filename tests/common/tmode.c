/*
 * tmode.c -- helpers of the tests that run threads on one mount in every
 * mode (the files of tests/concurrency): a fresh image mounted in a named mode
 * (its NVM region for ubj, the trial mode's hooks) and the timed flag
 * waits the threads use to meet (see testutil.h, "Modes and threads").
 */
#include "testutil.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *const tm_modes[TM_NMODES] = { "none", "ubj", "ordered", "journal",
                                          "writeback", "sync", "trial" };

/* tm_all_modes -- one(mode, arg, why) in every mode; fail the test with
 * the first failure (each printed). */
void tm_all_modes(void (*one)(const char *m, void *arg, char *why, size_t wn),
                  void *arg, volatile sig_atomic_t *phase)
{
    char why[256], first[256] = "";
    for (int i = 0; i < TM_NMODES; i++) {
        if (phase != NULL)
            *phase = (sig_atomic_t)i;
        why[0] = '\0';
        one(tm_modes[i], arg, why, sizeof why);
        if (why[0] != '\0') {
            fprintf(stderr, "%s\n", why);
            if (first[0] == '\0')
                snprintf(first, sizeof first, "%s", why);
        }
    }
    if (first[0] != '\0')
        fail_msg("%s", first);
}

const char *tm_readahead;

/* tm_mount -- a fresh image in mode m, nbufs cache buffers, the timer
 * every interval_ms. */
void tm_mount(struct tmount *tm, const char *m, uint32_t nbufs,
              uint32_t interval_ms)
{
    memset(tm, 0, sizeof *tm);
    bool ubj = strcmp(m, "ubj") == 0;
    if (strcmp(m, "trial") == 0)
        setenv("UBJ_TRIAL_HOOKS", "1", 1);
    else
        unsetenv("UBJ_TRIAL_HOOKS");
    assert_int_equal(ubj_bdev_ram_create(16384, &tm->dev), 0);
    struct ubj_format_opts fo = { .mode = m, .inodes = 4096,
                                  .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(tm->dev, &fo));
    tm->cfg = (struct ubj_config){ .mode = m, .cache_blocks = nbufs,
                                   .commit_interval_ms = interval_ms,
                                   .readahead = tm_readahead };
    if (ubj) {
        snprintf(tm->region, sizeof tm->region, "/tmp/ubj-tmode-%d.nvm",
                 (int)getpid());
        unlink(tm->region);
        tm->cfg.nvm_path = tm->region;
        tm->cfg.nvm_flags = UBJ_NVM_FORMAT;
    }
    if (ubj_mount(tm->dev, &tm->cfg, &tm->fs) != 0)
        fail_msg("mount in mode %s: %s", m, ubj_errormsg());
}

/* tm_done -- unmount, fsck clean, destroy. */
void tm_done(struct tmount *tm, const char *m)
{
    if (ubj_unmount(tm->fs) != 0)
        fail_msg("unmount in mode %s: %s", m, ubj_errormsg());
    int lines = 0;
    int rc = ubj_test_check(tm->dev, 0, &lines);
    if (rc != UBJ_CHECK_CLEAN)
        fail_msg("mode %s: fsck %d (%d lines)", m, rc, lines);
    ubj_bdev_destroy(tm->dev);
    if (tm->region[0])
        unlink(tm->region);
    unsetenv("UBJ_TRIAL_HOOKS");
}

/* tdeadline_in -- now + ms on CLOCK_REALTIME (the condvars' clock). */
struct timespec tdeadline_in(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* tflag_wait -- wait up to ms for *flag (under m, signalled on cv). */
int tflag_wait(pthread_mutex_t *m, pthread_cond_t *cv, const int *flag, long ms)
{
    pthread_mutex_lock(m);
    struct timespec dl = tdeadline_in(ms);
    while (!*flag && pthread_cond_timedwait(cv, m, &dl) == 0)
        ;
    int v = *flag;
    pthread_mutex_unlock(m);
    return v;
}

/* tflag_park_locked -- announce the park, wait for the release (m held). */
void tflag_park_locked(pthread_mutex_t *m, pthread_cond_t *cv, int *parked,
                       const int *release)
{
    *parked = 1;
    pthread_cond_broadcast(cv);
    while (!*release)
        pthread_cond_wait(cv, m);
}

/* tflag_set -- *flag := 1 under m; wake the waiters on cv. */
void tflag_set(pthread_mutex_t *m, pthread_cond_t *cv, int *flag)
{
    pthread_mutex_lock(m);
    *flag = 1;
    pthread_cond_broadcast(cv);
    pthread_mutex_unlock(m);
}
