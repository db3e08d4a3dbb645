/*
 * fsck.c -- `ubjfs fsck` / `fsck.ubjfs`: check and repair an image with
 * ubj_check (src/fs/check.c does the work; this file opens the device,
 * prints each reported line and maps the result to the exit status).
 *
 * Exit status is e2fsck's: 0 clean, 1 repaired, 4 errors left uncorrected,
 * 8 operational error (cannot open or read the image, not a ubjfs image),
 * 16 usage error.  Without -y the device is opened read-only (-n is the
 * default), so a check can never change the image.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fs/format.h"
#include "ubjfs/nvm.h"
#include "tools.h"

#define FSCK_EXIT_USAGE 16

struct fsck_ctx {
    unsigned long lines;
};

/* fsck_usage -- the --help text. */
static void fsck_usage(void)
{
    printf("Usage: %s [-n|-y] [-v] [--nvm REGION] IMAGE\n"
           "Check the (unmounted) ubjfs image IMAGE: superblock, bitmaps against\n"
           "reachability, link counts, directory structure ('.' and '..'), blocks\n"
           "used twice, sizes against extents, checksums.  Each problem is printed\n"
           "on one line.\n\n"
           "Options:\n"
           "  -n          check only; open the image read-only (the default)\n"
           "  -y          repair what is found (also -p, -a)\n"
           "  -f          accepted for compatibility (every check is full)\n"
           "  -v          verbose: print the image's counts after the check\n"
           "      --nvm REGION  check the pair of a mode-ubj image and its NVM\n"
           "              region: every block is read from the region's newest\n"
           "              committed version, else from IMAGE (read-only; to\n"
           "              repair, mount the pair once, then fsck -y IMAGE)\n"
           "      --help  print this help\n\n"
           "Exit status (as e2fsck): 0 clean, 1 errors repaired, 4 errors left\n"
           "uncorrected, 8 operational error (cannot read the image, not a\n"
           "ubjfs image), 16 usage error.\n", tools_prog);
}

/* fsck_report -- ubj_check's callback: print one problem line. */
static void fsck_report(void *ctx, const char *line)
{
    struct fsck_ctx *c = ctx;
    c->lines++;
    size_t n = strlen(line);
    fputs(line, stdout);
    if (n == 0 || line[n - 1] != '\n')
        fputc('\n', stdout);
    fflush(stdout);
}

/* fsck_counts -- -v: the counts recorded in the (checked) superblock. */
static void fsck_counts(const char *image, struct ubj_bdev *dev)
{
    struct ubj_super *sb = malloc(sizeof *sb);
    if (sb == NULL || ubj_bdev_read(dev, 0, 1, sb) < 0 ||
        sb->hdr.magic != UBJ_MAGIC_SUPER) {
        free(sb);
        return;
    }
    uint64_t data = sb->nblocks > sb->data_start ? sb->nblocks - sb->data_start : 0;
    uint64_t ifree = sb->free_inodes <= sb->ninodes ? sb->free_inodes : sb->ninodes;
    uint64_t bfree = sb->free_blocks <= data ? sb->free_blocks : data;
    printf("%s: %llu/%llu inodes used, %llu/%llu data blocks used\n", image,
           (unsigned long long)(sb->ninodes - ifree), (unsigned long long)sb->ninodes,
           (unsigned long long)(data - bfree), (unsigned long long)data);
    free(sb);
}

/* fsck_result_text -- the final line's word for a UBJ_CHECK_* result. */
static const char *fsck_result_text(int r)
{
    switch (r) {
    case UBJ_CHECK_CLEAN: return "clean";
    case UBJ_CHECK_REPAIRED: return "errors repaired";
    case UBJ_CHECK_UNCORRECTED: return "errors left uncorrected";
    default: return "check failed (operational error)";
    }
}

/* tools_fsck_main -- `ubjfs fsck`. */
int tools_fsck_main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "help", no_argument, NULL, 'H' },
        { "nvm", required_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    bool repair = false, readonly = false, verbose = false;
    const char *nvm = NULL;
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "nyapfv", lo, NULL)) != -1) {
        switch (c) {
        case 'n': readonly = true; break;
        case 'y': case 'a': case 'p': repair = true; break;
        case 'f': break;
        case 'v': verbose = true; break;
        case 'V': nvm = optarg; break;
        case 'H': fsck_usage(); return TOOLS_EXIT_OK;
        default: tools_bad_option(); return FSCK_EXIT_USAGE;
        }
    }
    if (repair && readonly) {
        tools_usage_err("-n and -y cannot be combined");
        return FSCK_EXIT_USAGE;
    }
    if (repair && nvm) {
        tools_usage_err("--nvm checks only: mount the pair once (recovery and "
                        "checkpoint), then repair the image alone with -y");
        return FSCK_EXIT_USAGE;
    }
    if (optind >= argc || optind + 1 < argc) {
        tools_usage_err(optind >= argc ? "missing IMAGE" : "more than one IMAGE");
        return FSCK_EXIT_USAGE;
    }
    const char *image = argv[optind];
    struct ubj_bdev *dev;
    unsigned bflags = UBJ_BDEV_EXCL | (repair ? 0u : UBJ_BDEV_RDONLY);
    int rc = ubj_bdev_file_open(image, bflags, 0, &dev);
    if (rc < 0) {
        tools_err("%s", tools_libmsg(rc));
        return UBJ_CHECK_OPERROR;
    }
    if (nvm != NULL) {
        struct ubj_bdev *pair;
        rc = ubj_nvm_overlay_create(dev, nvm, &pair);
        if (rc < 0) {
            tools_err("%s", tools_libmsg(rc));
            ubj_bdev_destroy(dev);
            return UBJ_CHECK_OPERROR;
        }
        dev = pair;
    }
    struct fsck_ctx ctx = { 0 };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int r = ubj_check(dev, repair ? UBJ_CHECK_REPAIR : 0, fsck_report, &ctx);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (r != UBJ_CHECK_CLEAN && r != UBJ_CHECK_REPAIRED &&
        r != UBJ_CHECK_UNCORRECTED)
        r = UBJ_CHECK_OPERROR;
    if (r == UBJ_CHECK_OPERROR && ctx.lines == 0)
        tools_err("%s: %s", image, tools_libmsg(-EIO));
    if (verbose && r != UBJ_CHECK_OPERROR)
        fsck_counts(image, dev);
    ubj_bdev_destroy(dev);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (r == UBJ_CHECK_OPERROR)
        fprintf(stderr, "%s: %s: %s\n", tools_prog, image, fsck_result_text(r));
    else if (verbose)
        printf("%s: %s (%lu problem line%s, %.3f s)\n", image, fsck_result_text(r),
               ctx.lines, ctx.lines == 1 ? "" : "s", secs);
    else
        printf("%s: %s\n", image, fsck_result_text(r));
    return r;
}
