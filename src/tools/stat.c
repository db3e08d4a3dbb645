/*
 * stat.c -- `ubjfs stat`: every attribute of files in an image (the
 * fields of struct ubj_stat), in the layout of stat(1): name (and symlink
 * target), type, size, 512-byte blocks, I/O block, inode, links,
 * generation, mode in octal and text, uid, gid, rdev, and the four times
 * with nanoseconds.  Symlinks are not followed unless -L.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "tools.h"

/* stat_usage -- the --help text. */
static void stat_usage(void)
{
    printf("Usage: %s [-L] [--nvm PATH] IMAGE:/path...\n"
           "Print every attribute of files in a ubjfs image: type, size, blocks\n"
           "(512-byte units), inode, links, generation, mode, uid, gid, device\n"
           "number, and access/modify/change/birth times with nanoseconds.\n\n"
           "Options:\n"
           "  -L          follow a symlink operand (default: the link itself)\n"
           TOOLS_NVM_HELP
           "      --help  print this help\n\n"
           "Times are local (set TZ for another zone).\n"
           "Exit status: 0 all printed, 1 an operand could not be looked up,\n"
           "2 usage error.\n", tools_prog);
}

/* stat_type -- stat(1)'s name of a file type. */
static const char *stat_type(uint32_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "regular file";
    case S_IFDIR: return "directory";
    case S_IFLNK: return "symbolic link";
    case S_IFCHR: return "character special file";
    case S_IFBLK: return "block special file";
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    default: return "unknown";
    }
}

/* stat_print -- the report for one file. */
static void stat_print(struct ubj_fs *fs, const char *arg, const struct ubj_stat *st)
{
    char mode[11], t[80];
    printf("  File: %s", arg);
    if (S_ISLNK(st->mode)) {
        char *tg = malloc(UBJ_SYMLINK_MAX + 1);
        ssize_t n = tg ? ubj_readlink(fs, st->ino, tg, UBJ_SYMLINK_MAX) : -ENOMEM;
        if (n >= 0) {
            tg[n] = '\0';
            printf(" -> %s", tg);
        }
        free(tg);
    }
    printf("\n  Type: %s\n", stat_type(st->mode));
    printf("  Size: %-15llu Blocks: %-12llu IO Block: %u\n",
           (unsigned long long)st->size, (unsigned long long)st->blocks, st->blksize);
    printf(" Inode: %-15llu Links: %-13u Generation: %llu\n",
           (unsigned long long)st->ino, st->nlink, (unsigned long long)st->generation);
    tools_mode_string(st->mode, mode);
    printf("Access: (%04o/%s)  Uid: %u  Gid: %u  Device type: %u,%u\n",
           st->mode & 07777, mode, st->uid, st->gid,
           major((dev_t)st->rdev), minor((dev_t)st->rdev));
    tools_fmt_time(&st->atime, true, t, sizeof t);
    printf("Access: %s\n", t);
    tools_fmt_time(&st->mtime, true, t, sizeof t);
    printf("Modify: %s\n", t);
    tools_fmt_time(&st->ctime, true, t, sizeof t);
    printf("Change: %s\n", t);
    tools_fmt_time(&st->crtime, true, t, sizeof t);
    printf(" Birth: %s\n", t);
}

/* stat_operand -- look one operand up and print it.  0 or 1 (reported). */
static int stat_operand(const char *arg, bool follow)
{
    struct tools_spec s;
    if (tools_spec_parse(arg, true, &s) <= 0) {
        tools_err("out of memory");
        return 1;
    }
    struct tools_img img;
    int failed = 0;
    if (tools_img_mount(&img, s.image, false) < 0) {
        failed = 1;
    } else {
        struct ubj_stat st;
        int rc = ubj_path_lookup(img.fs, s.path, follow ? 0 : UBJ_PATH_NOFOLLOW, &st);
        if (rc < 0) {
            tools_err("%s:%s: %s", s.image, s.path, tools_strerror(rc));
            failed = 1;
        } else {
            stat_print(img.fs, arg, &st);
        }
        if (tools_img_unmount(&img) < 0)
            failed = 1;
    }
    tools_spec_free(&s);
    return failed;
}

/* tools_stat_main -- `ubjfs stat`. */
int tools_stat_main(int argc, char **argv)
{
    static const struct option lo[] = {
        TOOLS_IMAGE_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    bool follow = false;
    int c, rc;
    optind = 0;
    while ((c = getopt_long(argc, argv, "L", lo, NULL)) != -1) {
        switch (c) {
        case 'L': follow = true; break;
        default:
            if ((rc = tools_image_opt(c, optarg, stat_usage)) >= 0)
                return rc;
        }
    }
    if (optind >= argc)
        return tools_usage_err("missing IMAGE:/path operand");
    if (tools_specs_check(argc - optind, argv + optind) != 0)
        return TOOLS_EXIT_USAGE;
    int failed = 0;
    for (int i = optind; i < argc; i++)
        failed |= stat_operand(argv[i], follow);
    fflush(stdout);
    return failed ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}
