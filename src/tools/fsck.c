/*
 * fsck.c -- `ubjfs fsck` / `fsck.ubjfs`: check and repair an image with
 * ubj_check (src/fs/check.c does the work; this file opens the device,
 * prints each reported line and maps the result to the exit status).
 *
 * A check that found only leaks (ubj_check_ex: corrupt == 0; docs/TOOLS.md)
 * ends with the line "IMAGE: leaks only, no corruption: ..." instead of
 * "errors left uncorrected" (exit status 4 either way, as e2fsck's).
 *
 * Exit status is e2fsck's: 0 clean, 1 repaired, 4 errors left uncorrected,
 * 8 operational error (cannot open or read the image, not a ubjfs image),
 * 16 usage error.  Without -y the device is opened read-only (-n is the
 * default), so a check can never change the image.  A successful repair
 * leaves the superblock state CLEAN (ubj_check leaves MOUNTED to mount;
 * after fsck -y everything mount's recovery would do is done: the journal
 * replayed, orphans freed, counts set).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fs/format.h"
#include "txn/registry.h"    /* the modes an image may record */
#include "fs/fs.h"
#include "ubjfs/nvm.h"
#include "tools.h"

#define FSCK_EXIT_USAGE 16

struct fsck_ctx {
    unsigned long lines;   /* every line reported */
    unsigned long notes;   /* of which "note:" lines (not problems) */
};

/* fsck_usage -- the --help text. */
static void fsck_usage(void)
{
    printf("Usage: %s [-n|-y] [-v] [--nvm REGION | --discard-nvm] IMAGE\n"
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
           "      --discard-nvm  with -y: repair a mode-ubj image that crashed\n"
           "              although its NVM region is lost (the region's\n"
           "              committed blocks not yet home are given up)\n"
           "      --help  print this help\n\n"
           "Leaks (space only: a block or inode marked in use that nothing\n"
           "reachable holds, a link count above the names, a wrong free count) are\n"
           "printed as 'leak: ...' lines; a check that found nothing else ends with\n"
           "'IMAGE: leaks only, no corruption: ...'.\n\n"
           "Exit status (as e2fsck): 0 clean, 1 errors repaired (leaks included),\n"
           "4 errors left uncorrected (leaks only too: see the last line; or,\n"
           "checked without --nvm, a mode-ubj image that crashed: not known to be\n"
           "clean), 8 operational error (cannot read the image, not a ubjfs\n"
           "image), 16 usage error.\n", tools_prog);
}

/* fsck_report -- ubj_check's callback: print one problem line. */
static void fsck_report(void *ctx, const char *line)
{
    struct fsck_ctx *c = ctx;
    c->lines++;
    if (strncmp(line, "note:", 5) == 0)
        c->notes++;
    size_t n = strlen(line);
    fputs(line, stdout);
    if (n == 0 || line[n - 1] != '\n')
        fputc('\n', stdout);
    fflush(stdout);
}

/* fsck_bits_used -- set bits [lo, hi) of the bitmap at blocks
 * [start, start + nblk) on dev; -1 on a read error. */
static int64_t fsck_bits_used(struct ubj_bdev *dev, uint64_t start, uint64_t nblk,
                              uint64_t lo, uint64_t hi)
{
    uint8_t *b = malloc(UBJ_BS);
    int64_t n = 0;
    for (uint64_t i = 0; b != NULL && i < nblk; i++) {
        if (ubj_bdev_read(dev, start + i, 1, b) < 0) {
            n = -1;
            break;
        }
        uint64_t base = i * UBJ_BITMAP_BITS;
        for (uint64_t bit = 0; bit < UBJ_BITMAP_BITS; bit++) {
            uint64_t g = base + bit;
            const uint8_t *w = b + sizeof(struct ubj_blkhdr);
            if (g >= lo && g < hi && (w[bit / 8] >> (bit % 8) & 1))
                n++;
        }
    }
    free(b);
    return b == NULL ? -1 : n;
}

/* fsck_counts -- -v: inodes and data blocks in use, counted from the
 * (checked) bitmaps: the superblock's free counts are written lazily and
 * are stale after a crash. */
static void fsck_counts(const char *image, struct ubj_bdev *dev)
{
    struct ubj_super *sb = malloc(sizeof *sb);
    if (sb == NULL || ubj_bdev_read(dev, 0, 1, sb) < 0 ||
        sb->hdr.magic != UBJ_MAGIC_SUPER) {
        free(sb);
        return;
    }
    uint64_t data = sb->nblocks > sb->data_start ? sb->nblocks - sb->data_start : 0;
    int64_t bused = fsck_bits_used(dev, sb->bb_start, sb->bb_blocks,
                                   sb->data_start, sb->nblocks);
    int64_t iused = fsck_bits_used(dev, sb->ib_start, sb->ib_blocks, 1, sb->ninodes);
    if (bused >= 0 && iused >= 0)
        printf("%s: %llu/%llu inodes used, %llu/%llu data blocks used\n", image,
               (unsigned long long)iused + 1, (unsigned long long)sb->ninodes,
               (unsigned long long)bused, (unsigned long long)data);
    free(sb);
}

/* fsck_super -- the superblock on dev (malloc'd), or NULL. */
static struct ubj_super *fsck_super(struct ubj_bdev *dev)
{
    struct ubj_super *sb = malloc(sizeof *sb);
    if (sb != NULL && (ubj_bdev_read(dev, 0, 1, sb) < 0 ||
                       sb->hdr.magic != UBJ_MAGIC_SUPER)) {
        free(sb);
        sb = NULL;
    }
    return sb;
}

/* fsck_crashed_region -- the mode whose NVM region may hold committed
 * blocks the image lacks (the image crashed while mounted in it, or
 * records it), or NULL. */
static const char *fsck_crashed_region(const struct ubj_super *sb)
{
    if (!(sb->state & UBJ_STATE_MOUNTED))
        return NULL;
    const uint32_t codes[2] = { sb->mount_mode, sb->mode };
    for (int i = 0; i < 2; i++) {
        const struct ubj_mode_entry *e = ubj_registry_by_code(codes[i]);
        if (e != NULL && e->info.needs == UBJ_MODE_NEEDS_NVM)
            return e->info.name;
    }
    return NULL;
}

/* fsck_hint -- a check of an image that crashed in a region mode, alone: say what it
 * cannot see.  Returns whether it said so (the image is then not known to
 * be clean, whatever the check found). */
static bool fsck_hint(const char *image, struct ubj_bdev *dev)
{
    struct ubj_super *sb = fsck_super(dev);
    const char *m = sb != NULL ? fsck_crashed_region(sb) : NULL;
    if (m != NULL)
        printf("%s: last mounted in mode %s and not unmounted cleanly: committed "
               "blocks may live in its NVM region, which this check did not "
               "read: pass --nvm REGION\n", image, m);
    free(sb);
    return m != NULL;
}

/* fsck_mark_clean -- after a successful repair: state CLEAN.  0, or -1
 * (reported). */
static int fsck_mark_clean(const char *image, struct ubj_bdev *dev)
{
    struct ubj_super *sb = fsck_super(dev);
    int rc = 0;
    if (sb != NULL && (sb->state & UBJ_STATE_MOUNTED)) {
        sb->state = (sb->state & ~UBJ_STATE_MOUNTED) | UBJ_STATE_CLEAN;
        fs_block_seal(ubj_crc32c(~0u, sb->uuid, 16), sb, UBJ_MAGIC_SUPER, 0);
        rc = ubj_bdev_write(dev, 0, 1, sb);
        if (rc == 0)
            rc = ubj_bdev_flush(dev);
        if (rc < 0)
            tools_err("%s: marking the superblock clean: %s", image, tools_strerror(rc));
    }
    free(sb);
    return rc < 0 ? -1 : 0;
}

/* fsck_nvm_error -- with --nvm: say what a device error the region
 * records did (a mode-ubj mount went read-only after a checkpoint
 * failed; docs/UBJ.md, "Device errors"). */
static void fsck_nvm_error(const char *image, const char *nvm)
{
    struct ubj_nvm *r;
    struct ubj_nvm_error e;
    char text[320];
    if (ubj_nvm_open(nvm, UBJ_NVM_OPEN_RDONLY, &r) < 0)
        return;   /* the overlay has reported why */
    if (ubj_nvm_error_get(r, &e) == 1)
        printf("%s: note: NVM region %s records that %s; the mount went "
               "read-only and kept them in the region, which this check "
               "read: mount the pair with a working device to write them "
               "home\n", image, nvm, ubj_nvm_error_text(&e, text, sizeof text));
    ubj_nvm_close(r);
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

/* fsck_leaks_line -- the final line of a check (-n) that found leaks and
 * no corruption: distinct from "errors left uncorrected", for scripts. */
static void fsck_leaks_line(const char *image, const struct ubj_check_result *res)
{
    printf("%s: leaks only, no corruption: %lu leak%s (%llu block%s, %llu inode%s); "
           "fsck -y reclaims them\n", image, res->leaks, res->leaks == 1 ? "" : "s",
           (unsigned long long)res->leaked_blocks, res->leaked_blocks == 1 ? "" : "s",
           (unsigned long long)res->leaked_inodes, res->leaked_inodes == 1 ? "" : "s");
}

/* tools_fsck_main -- `ubjfs fsck`. */
int tools_fsck_main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "help", no_argument, NULL, 'H' },
        { "nvm", required_argument, NULL, 'V' },
        { "discard-nvm", no_argument, NULL, 'D' },
        { NULL, 0, NULL, 0 },
    };
    bool repair = false, readonly = false, verbose = false, discard = false;
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
        case 'D': discard = true; break;
        case 'H': fsck_usage(); return TOOLS_EXIT_OK;
        default: tools_bad_option(); return FSCK_EXIT_USAGE;
        }
    }
    if (repair && readonly) {
        tools_usage_err("-n and -y cannot be combined");
        return FSCK_EXIT_USAGE;
    }
    if (nvm != NULL && nvm[0] == '\0') {
        tools_usage_err("--nvm needs the path of an NVM region");
        return FSCK_EXIT_USAGE;
    }
    if (discard && (!repair || nvm)) {
        tools_usage_err("--discard-nvm goes with -y, without --nvm");
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
    int rc = tools_open_excl(image, bflags, &dev);   /* waits for an unmount */
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
        fsck_nvm_error(image, nvm);
    }
    struct fsck_ctx ctx = { 0 };
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned cflags = (repair ? UBJ_CHECK_REPAIR : 0u) | (discard ? UBJ_CHECK_DISCARD_NVM : 0u);
    struct ubj_check_result res;
    int r = ubj_check_ex(dev, cflags, fsck_report, &ctx, &res);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (r != UBJ_CHECK_CLEAN && r != UBJ_CHECK_REPAIRED &&
        r != UBJ_CHECK_UNCORRECTED)
        r = UBJ_CHECK_OPERROR;
    if (repair && (r == UBJ_CHECK_CLEAN || r == UBJ_CHECK_REPAIRED) &&
        fsck_mark_clean(image, dev) < 0)
        r = UBJ_CHECK_OPERROR;
    bool partial = nvm == NULL && !repair && r != UBJ_CHECK_OPERROR &&
                   fsck_hint(image, dev);
    if (partial && r == UBJ_CHECK_CLEAN)   /* not "clean": half was not seen */
        r = UBJ_CHECK_UNCORRECTED;
    if (r == UBJ_CHECK_OPERROR && ctx.lines == 0)
        tools_err("%s: %s", image, tools_libmsg(-EIO));
    if (verbose && r != UBJ_CHECK_OPERROR)
        fsck_counts(image, dev);
    ubj_bdev_destroy(dev);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (r == UBJ_CHECK_OPERROR)
        fprintf(stderr, "%s: %s: %s\n", tools_prog, image, fsck_result_text(r));
    else if (verbose)
        printf("%s: %s (%lu problem%s of which %lu leak%s, %lu note%s, %.3f s)\n",
               image, fsck_result_text(r), res.problems, res.problems == 1 ? "" : "s",
               res.leaks, res.leaks == 1 ? "" : "s", ctx.notes,
               ctx.notes == 1 ? "" : "s", secs);
    else if (partial)
        printf("%s: not known to be clean (its NVM region was not checked)\n", image);
    else if (r == UBJ_CHECK_UNCORRECTED && res.corrupt == 0 && res.leaks > 0)
        fsck_leaks_line(image, &res);
    else
        printf("%s: %s\n", image, fsck_result_text(r));
    return r;
}
