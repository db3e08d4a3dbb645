/*
 * cat.c -- `ubjfs cat`: write files of an image to standard output, in
 * order, following symlinks.  The image of each operand is mounted
 * read-only for that operand.  Only data is read (TOOLS_CHUNK reads of the
 * runs ubj_seek_data / ubj_seek_hole find); a hole's zeros are written
 * from a zero buffer without a library call, or, when standard output is
 * a regular file being written at its end, made by extending it (a hole
 * again), so a 16 TiB sparse file costs its data, plus the zeros a pipe
 * must carry.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tools.h"

#define CAT_ZEROS (64u << 20)   /* bytes of zeros per write for a hole */

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

/* cat_zeros -- a read-only run of CAT_ZEROS zero bytes (an anonymous
 * mapping: every page is the kernel's zero page, so it costs no memory),
 * mapped once; NULL if it cannot be. */
static const unsigned char *cat_zeros(void)
{
    static const unsigned char *z;
    if (z == NULL) {
        void *p = mmap(NULL, CAT_ZEROS, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        z = p == MAP_FAILED ? NULL : p;
    }
    return z;
}

/* cat_hole -- n zero bytes for a hole, without reading it: when standard
 * output is a regular file (not O_APPEND) whose end we are at, the file is
 * extended over them (they read as zeros: a hole there too); otherwise
 * they are written from cat_zeros() in CAT_ZEROS pieces (16 TiB of
 * holes: 2^18 writes).  0 or -errno. */
static int cat_hole(uint64_t n)
{
    static const unsigned char small[UBJ_BLOCK_SIZE];
    const unsigned char *zeros = cat_zeros();
    size_t piece = zeros != NULL ? CAT_ZEROS : sizeof small;
    if (zeros == NULL)
        zeros = small;
    struct stat so;
    int fl = fcntl(STDOUT_FILENO, F_GETFL);
    off_t pos = lseek(STDOUT_FILENO, 0, SEEK_CUR);
    if (fl >= 0 && !(fl & O_APPEND) && pos >= 0 && fstat(STDOUT_FILENO, &so) == 0 &&
        S_ISREG(so.st_mode) && pos >= so.st_size && n <= (uint64_t)INT64_MAX - (uint64_t)pos &&
        ftruncate(STDOUT_FILENO, pos + (off_t)n) == 0 &&
        lseek(STDOUT_FILENO, pos + (off_t)n, SEEK_SET) >= 0)
        return 0;
    while (n > 0) {
        size_t k = n < piece ? (size_t)n : piece;
        int rc = cat_write_all(zeros, k);
        if (rc < 0)
            return rc;
        n -= k;
    }
    return 0;
}

/* cat_data -- bytes [from, to) of the file, read in TOOLS_CHUNK pieces.
 * 0, or 1 (reported). */
static int cat_data(struct ubj_fs *fs, const struct tools_spec *s, ubj_ino_t ino,
                    off_t from, off_t to, unsigned char *buf)
{
    while (from < to) {
        size_t want = (uint64_t)(to - from) < TOOLS_CHUNK ? (size_t)(to - from)
                                                          : TOOLS_CHUNK;
        ssize_t n = ubj_pread(fs, ino, buf, want, from);
        if (n <= 0) {
            tools_err("%s:%s: read: %s", s->image, s->path,
                      tools_strerror(n < 0 ? (int)n : -EIO));
            return 1;
        }
        int rc = cat_write_all(buf, (size_t)n);
        if (rc < 0) {
            tools_err("write error: %s", tools_strerror(rc));
            return 1;
        }
        from += n;
    }
    return 0;
}

/* cat_file -- copy one image file to stdout: its data runs (found with
 * ubj_seek_data / ubj_seek_hole) are read, its holes are zeros that are
 * never read (cat_hole).  0, or 1 (reported). */
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
    off_t off = 0, size = (off_t)st.size;
    while (off < size) {
        off_t data = ubj_seek_data(fs, st.ino, off);
        off_t hole = data == -ENXIO ? size : data < 0 ? data
                                                      : ubj_seek_hole(fs, st.ino, data);
        if (data == -ENXIO)
            data = size;
        if (data < 0 || hole < 0) {
            tools_err("%s:%s: read: %s", s->image, s->path,
                      tools_strerror((int)(data < 0 ? data : hole)));
            return 1;
        }
        if ((rc = cat_hole((uint64_t)(data - off))) < 0) {
            tools_err("write error: %s", tools_strerror(rc));
            return 1;
        }
        if (cat_data(fs, s, st.ino, data, hole, buf) != 0)
            return 1;
        off = hole;
    }
    return 0;
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
