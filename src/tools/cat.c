/*
 * cat.c -- `ubjfs cat`: write files of an image to standard output, in
 * order, following symlinks, in TOOLS_CHUNK reads.  The image of each
 * operand is mounted read-only for that operand.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools.h"

/* cat_usage -- the --help text. */
static void cat_usage(void)
{
    printf("Usage: %s [--nvm PATH] IMAGE:/path...\n"
           "Write the contents of files in a ubjfs image to standard output\n"
           "(symlinks are followed).\n\n"
           "Options:\n"
           TOOLS_NVM_HELP
           "      --help  print this help\n\n"
           "Exit status: 0 all written, 1 an operand could not be read (a\n"
           "directory, missing, I/O error) or output failed, 2 usage error.\n",
           tools_prog);
}

/* cat_write_all -- write len bytes to stdout.  0 or -errno. */
static int cat_write_all(const unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* cat_file -- copy one image file to stdout.  0, or 1 (reported). */
static int cat_file(struct ubj_fs *fs, const struct tools_spec *s, unsigned char *buf)
{
    struct ubj_stat st;
    int rc = ubj_path_lookup(fs, s->path, 0, &st);
    if (rc == 0 && S_ISDIR(st.mode))
        rc = -EISDIR;
    if (rc < 0) {
        tools_err("%s:%s: %s", s->image, s->path, tools_strerror(rc));
        return 1;
    }
    off_t off = 0;
    for (;;) {
        ssize_t n = ubj_pread(fs, st.ino, buf, TOOLS_CHUNK, off);
        if (n < 0) {
            tools_err("%s:%s: read: %s", s->image, s->path, tools_strerror((int)n));
            return 1;
        }
        if (n == 0)
            return 0;
        if ((rc = cat_write_all(buf, (size_t)n)) < 0) {
            tools_err("write error: %s", tools_strerror(rc));
            return 1;
        }
        off += n;
    }
}

/* tools_cat_main -- `ubjfs cat`. */
int tools_cat_main(int argc, char **argv)
{
    static const struct option lo[] = {
        TOOLS_IMAGE_LONGOPTS,
        { NULL, 0, NULL, 0 },
    };
    int c, rc;
    optind = 0;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1)
        if ((rc = tools_image_opt(c, optarg, cat_usage)) >= 0)
            return rc;
    if (optind >= argc)
        return tools_usage_err("missing IMAGE:/path operand");
    if (tools_specs_check(argc - optind, argv + optind) != 0)
        return TOOLS_EXIT_USAGE;
    unsigned char *buf = malloc(TOOLS_CHUNK);
    if (buf == NULL) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    int failed = 0;
    for (int i = optind; i < argc; i++) {
        struct tools_spec s;
        if (tools_spec_parse(argv[i], true, &s) <= 0) {
            tools_err("out of memory");
            failed = 1;
            break;
        }
        struct tools_img img;
        if (tools_img_mount(&img, s.image, false) < 0) {
            failed = 1;
        } else {
            failed |= cat_file(img.fs, &s, buf);
            if (tools_img_unmount(&img) < 0)
                failed = 1;
        }
        tools_spec_free(&s);
    }
    free(buf);
    return failed ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}
