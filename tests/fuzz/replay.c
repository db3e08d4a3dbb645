/*
 * fuzz/replay.c -- the replay driver (a plain main(), so gcc builds and
 * the ASan pass run it too): every input through every fuzz target
 * (mount + operations, recovery alone, fsck -n / -y / -n; tests/fuzz/lib),
 * and (without -t) the custom mutator over it, whole and with its NVM
 * region cut to one page.
 *   fuzz_replay                 make the seed corpus in a scratch directory,
 *                               then replay it and tests/fuzz/regress/
 *   fuzz_replay --seeds DIR     only write the seed corpus into DIR
 *   fuzz_replay [-t TARGET] PATH...  replay files or directories
 * A broken promise aborts (the message names the input).
 */
#include "fz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *only;   /* one target, or NULL: all */
static long nfiles;

#define REPLAY_MUTATIONS 8   /* fz_mutate calls per input and cut */

/* mutate_cuts -- the custom mutator over the input as it is and with its
 * NVM region cut to one page (a region shorter than its header says:
 * fz_instances once read the buffer table past a 1-page region, found by
 * a long libFuzzer run, 2026-12-03).  ASan (the sanitizer pass) sees
 * every read outside a case; any result is fine. */
static void mutate_cuts(const uint8_t *d, size_t n)
{
    struct fz_case c;
    if (fz_decode(d, n, &c) < 0)
        return;
    size_t max = n + 2 * FZ_PAGE;
    uint8_t *buf = malloc(max);
    for (int cut = 0; buf != NULL && cut < 2; cut++) {
        if (cut == 1) {
            if (c.rpages < 2)
                break;
            uint8_t *one = malloc(FZ_PAGE);   /* exactly one page: ASan's bound */
            if (one == NULL)
                break;
            memcpy(one, c.reg, FZ_PAGE);
            free(c.reg);
            c.reg = one;
            c.rpages = 1;
        }
        size_t len = fz_encode(&c, buf, max);
        for (unsigned k = 0; len > 0 && k < REPLAY_MUTATIONS; k++) {
            size_t m = fz_encode(&c, buf, max);
            (void)fz_mutate(buf, m, max, 1000u * (unsigned)cut + k);
        }
    }
    free(buf);
    fz_case_free(&c);
}

static void run_file(const char *path)
{
    uint8_t *d;
    size_t n;
    int rc = fz_read_file(path, &d, &n);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(-rc));
        exit(1);
    }
    fprintf(stderr, "replay %s\n", path);
    if (only == NULL || strcmp(only, "mount") == 0)
        fz_target_mount(d, n);
    if (only == NULL || strcmp(only, "recover") == 0)
        fz_target_recover(d, n);
    if (only == NULL || strcmp(only, "fsck") == 0)
        fz_target_fsck(d, n);
    if (only == NULL)
        mutate_cuts(d, n);
    free(d);
    nfiles++;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        exit(1);
    }
    if (!S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    struct dirent **v;
    int n = scandir(path, &v, NULL, by_name);
    for (int i = 0; i < n; i++) {
        if (v[i]->d_name[0] != '.' && strcmp(v[i]->d_name, "README") != 0) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, v[i]->d_name);
            run_path(p);
        }
        free(v[i]);
    }
    free(v);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--seeds") == 0) {
        int rc = fz_seeds_make(argv[2]);
        if (rc < 0) {
            fprintf(stderr, "seeds: %s\n", strerror(-rc));
            return 1;
        }
        printf("%d seeds in %s\n", rc, argv[2]);
        return 0;
    }
    int i = 1;
    if (argc > 2 && strcmp(argv[1], "-t") == 0) {
        only = argv[2];
        i = 3;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (i < argc) {
        for (; i < argc; i++)
            run_path(argv[i]);
    } else {
        char dir[4096], reg[4096];
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(dir, sizeof dir, "%s/ubjfz-replay-%d", tmp, (int)getpid());
        int rc = fz_seeds_make(dir);
        if (rc < 0) {
            fprintf(stderr, "seeds: %s\n", strerror(-rc));
            return 1;
        }
        run_path(dir);
        const char *src = getenv("UBJ_SRC") ? getenv("UBJ_SRC") : ".";
        snprintf(reg, sizeof reg, "%s/tests/fuzz/regress", src);
        run_path(reg);
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%ld inputs replayed through %s in %.1f s\n", nfiles, only ? only : "every target",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
