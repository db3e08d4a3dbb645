/*
 * mkfs.c -- `ubjfs mkfs` / `mkfs.ubjfs`: make an empty file system.
 *
 * Never silently overwrites user data: an existing image that holds a
 * ubjfs superblock or any nonzero byte (anywhere in a regular file; in the
 * first MiB of a block device) needs --force, and so does
 * --size on an existing non-empty file (its contents are discarded).  The
 * image is locked with flock(LOCK_EX) for the whole run (the lock the
 * other tools take), so a mounted image is refused.  A file mkfs creates
 * is sized with ftruncate (sparse) and formatted with UBJ_FORMAT_ZEROED;
 * if formatting fails, the file is removed again.
 *
 * Validate before destroying: the options (a trial format on a small RAM
 * device), the region (--nvm: layout, path, contents, writability, room;
 * mkfs_nvm_check) and the image's geometry (ubj_format's checks on a probe
 * device of the real size that writes nothing) are all checked before
 * the first write.  Then the region is made (for a uuid chosen here), and
 * only then the image, so a region that cannot be made leaves the image
 * untouched; the summary is printed once both are made.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpmem.h>
#include <linux/fs.h>          /* BLKGETSIZE64 */
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include "fs/format.h"
#include "txn/journal.h"      /* UBJ_JOURNAL_MIN_BLOCKS */
#include "txn/ubj.h"          /* ubjm_attach, ubjm_pending: the region */
#include "ubjfs/nvm.h"
#include "tools.h"

#define MKFS_MIN_SIZE (1ULL << 20)                 /* 1 MiB */
#define MKFS_MAX_SIZE ((1ULL << 40) * UBJ_BS)      /* 2^40 blocks: 4 PiB */
#define MKFS_NVM_BUFS 16384u     /* default region: ubjm_attach's (64 MiB) */

struct mkfs_args {
    const char *image;
    uint64_t size;          /* bytes; 0 = not given */
    struct ubj_format_opts fo;
    bool force, quiet;
    bool journal_async;     /* --journal-async-commit */
    const char *nvm;        /* --nvm: also format this region (mode ubj) */
    bool nvm_existed;       /* the region file was there before */
    uint64_t nvm_size;      /* --nvm-size; 0 = MKFS_NVM_BUFS buffers */
    const char *nvm_size_arg;             /* as given, for messages */
    struct ubj_nvm_layout nvm_layout;     /* what the region will be */
};

/* mkfs_usage -- the --help text. */
static void mkfs_usage(void)
{
    char all[256], logged[256];
    tools_mode_names(0, -1, UBJ_MODE_ORDER_REGISTRY, ", ", ", ", all, sizeof all);
    tools_mode_names(0, UBJ_MODE_NEEDS_LOG, UBJ_MODE_ORDER_REGISTRY, ", ", " and ",
                     logged, sizeof logged);
    printf("Usage: %s [OPTIONS] IMAGE\n"
           "Make an empty ubjfs file system on IMAGE: a regular file (created,\n"
           "sparse, if missing) or a block device.\n\n"
           "Options:\n"
           "  -s, --size SIZE    image size in bytes, or with a K, M, G, T or P suffix\n"
           "                     (powers of 1024), from 1M to 4P; rounded down to a\n"
           "                     multiple of 4096.  Required for a new file; for an\n"
           "                     existing file it discards the contents (needs --force)\n"
           "                     unless the file is empty.  Not for block devices.\n"
           "  -N, --inodes N     number of inodes (default: one per 16 KiB, at least 64)\n"
           "  -m, --mode MODE    consistency mode recorded as the mount default:\n"
           "                     %s (default: %s)\n"
           "  -J, --journal-size SIZE  journal area (K, M, G suffixes); default for\n"
           "                     %s: scaled to the image\n"
           "                     as mke2fs does (4M up to 128M images ... 1G), none\n"
           "                     for the other modes; at least 256K\n"
           "      --journal-async-commit  commit with one flush instead of two\n"
           "                     (docs/JOURNAL.md)\n"
           "  -L, --label LABEL  volume label, up to 31 bytes\n"
           "      --nvm REGION   mode ubj: also make REGION (a file, e.g. under\n"
           "                     /dev/shm, a DAX file or /dev/dax) the image's empty\n"
           "                     NVM region; refused if it holds committed blocks\n"
           "                     not yet written home, and an existing region\n"
           "                     (its image's) without --force\n"
           "      --nvm-size SIZE  bytes of the new region (default: 16384 buffers,\n"
           "                     about 64M; K/M/G suffixes)\n"
           "  -f, --force        overwrite an existing file system or nonzero data\n"
           "  -q, --quiet        print nothing on success\n"
           "      --help         print this help\n\n"
           "Without --size an existing file keeps its size.  An image that holds a\n"
           "ubjfs superblock or any nonzero byte (anywhere in a regular file, in the\n"
           "first MiB of a block device) is refused unless --force is given.\n\n"
           "Exit status: 0 made, 1 error (reported in one line; a refused image\n"
           "is left untouched), 2 usage error.\n", tools_prog, all, UBJ_MODE_NONE, logged);
}

/* mkfs_parse -- options into *a; returns -1 to go on, else an exit code. */
static int mkfs_parse(int argc, char **argv, struct mkfs_args *a)
{
    static const struct option lo[] = {
        { "size", required_argument, NULL, 's' },
        { "inodes", required_argument, NULL, 'N' },
        { "mode", required_argument, NULL, 'm' },
        { "journal-size", required_argument, NULL, 'J' },
        { "journal-async-commit", no_argument, NULL, 'A' },
        { "label", required_argument, NULL, 'L' },
        { "force", no_argument, NULL, 'f' },
        { "quiet", no_argument, NULL, 'q' },
        { "nvm", required_argument, NULL, 'V' },
        { "nvm-size", required_argument, NULL, 'Z' },
        { "help", no_argument, NULL, 'H' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "s:N:m:L:J:fq", lo, NULL)) != -1) {
        switch (c) {
        case 's': {
            int rc = tools_parse_size(optarg, &a->size);
            if (rc == -ERANGE)
                return tools_usage_err("size '%s' is too large (maximum 4P)", optarg);
            if (rc < 0)
                return tools_usage_err("invalid size '%s' (bytes, or a number "
                                       "with K, M, G, T or P)", optarg);
            if (a->size < MKFS_MIN_SIZE)
                return tools_usage_err("size '%s' is too small (minimum 1M)", optarg);
            if (a->size > MKFS_MAX_SIZE)
                return tools_usage_err("size '%s' is too large (maximum 4P)", optarg);
            a->size -= a->size % UBJ_BS;
            break;
        }
        case 'N':
            if (tools_parse_u64(optarg, &a->fo.inodes) < 0 || a->fo.inodes == 0)
                return tools_usage_err("invalid inode count '%s'", optarg);
            break;
        case 'm': a->fo.mode = optarg; break;
        case 'J':
            if (tools_parse_size(optarg, &a->fo.journal_blocks) < 0 ||
                a->fo.journal_blocks / UBJ_BS == 0)
                return tools_usage_err("invalid journal size '%s'", optarg);
            a->fo.journal_blocks /= UBJ_BS;
            if (a->fo.journal_blocks < UBJ_JOURNAL_MIN_BLOCKS)
                return tools_usage_err("journal size '%s' is below the minimum "
                                       "(%u blocks, 256K)", optarg,
                                       UBJ_JOURNAL_MIN_BLOCKS);
            break;
        case 'A': a->journal_async = true; break;
        case 'L':
            if (strlen(optarg) > 31)
                return tools_usage_err("label '%s' is longer than 31 bytes", optarg);
            a->fo.label = optarg;
            break;
        case 'f': a->force = true; break;
        case 'q': a->quiet = true; break;
        case 'V': a->nvm = optarg; break;
        case 'Z':
            if (tools_parse_size(optarg, &a->nvm_size) < 0 || a->nvm_size == 0)
                return tools_usage_err("invalid --nvm-size '%s'", optarg);
            a->nvm_size_arg = optarg;
            break;
        case 'H': mkfs_usage(); return TOOLS_EXIT_OK;
        default: return tools_bad_option();
        }
    }
    if (optind >= argc)
        return tools_usage_err("missing IMAGE");
    if (optind + 1 < argc)
        return tools_usage_err("unexpected argument '%s'", argv[optind + 1]);
    if ((a->nvm || a->nvm_size) && !tools_mode_needs(a->fo.mode, UBJ_MODE_NEEDS_NVM))
        return tools_usage_err("--nvm and --nvm-size need --mode ubj");
    if (a->nvm_size && !a->nvm)
        return tools_usage_err("--nvm-size needs --nvm");
    a->image = argv[optind];
    return -1;
}

/* mkfs_trial -- validate the options on a RAM device before the image is
 * touched.  -1 to go on, else an exit code. */
static int mkfs_trial(const struct mkfs_args *a)
{
    int rc = tools_format_trial(&a->fo);
    if (rc == -EINVAL)
        return tools_usage_err("%s", tools_libmsg(rc));
    if (rc < 0) {
        tools_err("%s", tools_libmsg(rc));
        return TOOLS_EXIT_ERR;
    }
    return -1;
}

/* mkfs_nonzero -- whether buf[0..n) holds a nonzero byte. */
static bool mkfs_nonzero(const unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != 0)
            return true;
    return false;
}

/* mkfs_read_at -- pread that retries EINTR; bytes read or -errno. */
static ssize_t mkfs_read_at(int fd, void *buf, size_t len, off_t off)
{
    ssize_t n;
    do {
        n = pread(fd, buf, len, off);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

/*
 * mkfs_first_block -- classify what the image holds: *ubjfs when its
 * first block has the superblock magic; *nonzero when any byte is nonzero
 * -- the whole file for a regular file (visiting only its data extents
 * with SEEK_DATA/SEEK_HOLE, so a large sparse file costs little), the
 * first MiB for a block device.
 */
static int mkfs_first_block(int fd, const struct stat *st, bool *nonzero, bool *ubjfs)
{
    static unsigned char buf[1u << 20];
    ssize_t n = mkfs_read_at(fd, buf, UBJ_BS, 0);
    if (n < 0)
        return (int)n;
    uint32_t magic = 0;
    if (n >= 4)
        memcpy(&magic, buf, 4);
    *ubjfs = magic == UBJ_MAGIC_SUPER;
    *nonzero = mkfs_nonzero(buf, (size_t)n);
    if (*nonzero || !S_ISREG(st->st_mode)) {
        if (!*nonzero && (n = mkfs_read_at(fd, buf, sizeof buf, 0)) > 0)
            *nonzero = mkfs_nonzero(buf, (size_t)n);
        return 0;
    }
    off_t pos = 0;
    while (!*nonzero && pos < st->st_size) {
        off_t data = lseek(fd, pos, SEEK_DATA);
        if (data < 0)
            break;                       /* ENXIO: only a hole remains */
        off_t hole = lseek(fd, data, SEEK_HOLE);
        if (hole < 0)
            hole = st->st_size;
        for (pos = data; pos < hole && !*nonzero; pos += n) {
            size_t want = (size_t)(hole - pos) < sizeof buf ? (size_t)(hole - pos) : sizeof buf;
            n = mkfs_read_at(fd, buf, want, pos);
            if (n <= 0)
                return n < 0 ? (int)n : 0;
            *nonzero = mkfs_nonzero(buf, (size_t)n);
        }
    }
    return 0;
}

/* mkfs_check_existing -- refuse to overwrite data without --force. */
static int mkfs_check_existing(const struct mkfs_args *a, int fd,
                               const struct stat *st)
{
    bool nonzero = false, ubjfs = false;
    int rc = mkfs_first_block(fd, st, &nonzero, &ubjfs);
    if (rc < 0) {
        tools_err("%s: read: %s", a->image, tools_strerror(rc));
        return TOOLS_EXIT_ERR;
    }
    if (a->force)
        return -1;
    if (ubjfs) {
        tools_err("%s already holds a ubjfs file system (use --force to "
                  "overwrite it)", a->image);
        return TOOLS_EXIT_ERR;
    }
    if (nonzero) {
        tools_err("%s holds data (nonzero bytes); use --force to overwrite it",
                  a->image);
        return TOOLS_EXIT_ERR;
    }
    if (S_ISREG(st->st_mode) && a->size != 0 && st->st_size > 0) {
        tools_err("%s exists (%lld bytes): --size would discard its contents; "
                  "use --force", a->image, (long long)st->st_size);
        return TOOLS_EXIT_ERR;
    }
    return -1;
}

/* mkfs_geometry -- the size of the file system to make, in blocks: --size,
 * else the file's or the device's size.  Changes nothing.  -1 or an exit
 * code. */
static int mkfs_geometry(const struct mkfs_args *a, int fd, const struct stat *st,
                         uint64_t *nblocks)
{
    uint64_t bytes = a->size;
    if (S_ISBLK(st->st_mode)) {
        if (a->size != 0)
            return tools_usage_err("--size cannot be used with a block device");
        if (ioctl(fd, BLKGETSIZE64, &bytes) != 0) {
            tools_err("%s: cannot read the device's size: %s", a->image,
                      strerror(errno));
            return TOOLS_EXIT_ERR;
        }
    } else if (bytes == 0) {
        bytes = (uint64_t)st->st_size;
        if (bytes < MKFS_MIN_SIZE) {
            tools_err("%s is %lld bytes; an image needs at least 1M (give --size)",
                      a->image, (long long)st->st_size);
            return TOOLS_EXIT_ERR;
        }
    }
    *nblocks = bytes / UBJ_BS;
    return -1;
}

/* mkfs_probe -- ubj_format's checks at the real geometry (inode count,
 * journal size), before anything is written.  -1 or an exit code. */
static int mkfs_probe(const struct mkfs_args *a, uint64_t nblocks)
{
    int rc = tools_format_probe(&a->fo, nblocks);
    if (rc < 0) {
        tools_err("%s: %s", a->image, tools_libmsg(rc));
        return TOOLS_EXIT_ERR;
    }
    return -1;
}

/* mkfs_prepare -- size the image file; sets *zeroed.  A larger --size is
 * tried by growing the file first, so a size the host refuses (EFBIG)
 * loses nothing.  -1 or an exit code. */
static int mkfs_prepare(const struct mkfs_args *a, int fd, const struct stat *st,
                        bool created, bool *zeroed)
{
    *zeroed = false;
    if (S_ISBLK(st->st_mode))
        return -1;
    if (a->size == 0) {
        *zeroed = st->st_blocks == 0;    /* all holes: reads as zeros */
        return -1;
    }
    bool grow = created || (uint64_t)st->st_size < a->size;
    if ((grow && ftruncate(fd, (off_t)a->size) != 0) ||
        (!created && (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)a->size) != 0))) {
        tools_err("%s: cannot size to %llu bytes: %s", a->image,
                  (unsigned long long)a->size, strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    *zeroed = true;
    return -1;
}

/* mkfs_summary -- print what was made, from the new superblock, and the
 * region made with it (r, or NULL). */
static int mkfs_summary(const struct mkfs_args *a, struct ubj_bdev *dev,
                        struct ubj_nvm *r)
{
    struct ubj_super *sb = malloc(sizeof *sb);
    int rc = sb != NULL ? ubj_bdev_read(dev, 0, 1, sb) : -ENOMEM;
    if (rc < 0) {
        tools_err("%s: reading the new superblock: %s", a->image, tools_libmsg(rc));
        free(sb);
        return TOOLS_EXIT_ERR;
    }
    if (!a->quiet) {
        char sz[32], uu[37];
        uint64_t bytes = sb->nblocks * UBJ_BS;
        tools_fmt_size(bytes, sz, sizeof sz);
        tools_uuid_string(sb->uuid, uu);
        printf("Made a ubjfs file system on %s\n", a->image);
        printf("  size:        %s (%llu bytes, %llu blocks of %u bytes)\n", sz,
               (unsigned long long)bytes, (unsigned long long)sb->nblocks, UBJ_BS);
        printf("  inodes:      %llu\n", (unsigned long long)sb->ninodes);
        printf("  data blocks: %llu free from block %llu\n",
               (unsigned long long)sb->free_blocks,
               (unsigned long long)sb->data_start);
        printf("  uuid:        %s\n", uu);
        printf("  mode:        %s\n", a->fo.mode ? a->fo.mode : UBJ_MODE_NONE);
        if (sb->journal_blocks) {
            tools_fmt_size(sb->journal_blocks * UBJ_BS, sz, sizeof sz);
            printf("  journal:     %s (%llu blocks from block %llu)%s\n", sz,
                   (unsigned long long)sb->journal_blocks,
                   (unsigned long long)sb->journal_start,
                   a->journal_async ? ", async commit" : "");
        }
        printf("  label:       %.31s\n", sb->label[0] ? sb->label : "(none)");
        if (r != NULL) {
            tools_fmt_size(ubj_nvm_get_layout(r)->size, sz, sizeof sz);
            printf("  nvm region:  %s (%s, %u buffers%s)\n", a->nvm, sz,
                   ubj_nvm_get_layout(r)->nbufs,
                   ubj_nvm_is_pmem(r) ? ", persistent memory" : ", msync emulation");
        }
    }
    free(sb);
    return TOOLS_EXIT_OK;
}

/* mkfs_nvm_room -- the file system holding `where` has `grow` bytes free
 * (when statvfs can tell).  -1 or an exit code. */
static int mkfs_nvm_room(const struct mkfs_args *a, const char *where, uint64_t grow)
{
    struct statvfs vf;
    if (grow == 0 || statvfs(where, &vf) != 0)
        return -1;
    uint64_t avail = (uint64_t)vf.f_bavail * vf.f_frsize;
    if (avail >= grow)
        return -1;
    char need[32], have[32];
    tools_fmt_size(grow, need, sizeof need);
    tools_fmt_size(avail, have, sizeof have);
    tools_err("%s: the region needs %s more and its file system has %s free "
              "(a smaller --nvm-size?)", a->nvm, need, have);
    return TOOLS_EXIT_ERR;
}

/* mkfs_nvm_new -- a region file to create: its directory must take it. */
static int mkfs_nvm_new(const struct mkfs_args *a)
{
    char *dir = strdup(a->nvm);
    if (dir == NULL) {
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    char *sl = strrchr(dir, '/');
    const char *d = sl == NULL ? "." : sl == dir ? "/" : (*sl = '\0', dir);
    int ret = -1;
    if (access(d, W_OK | X_OK) != 0) {
        tools_err("%s: cannot create the region: %s: %s", a->nvm, d, strerror(errno));
        ret = TOOLS_EXIT_ERR;
    } else {
        ret = mkfs_nvm_room(a, d, a->nvm_layout.size);
    }
    free(dir);
    return ret;
}

/* mkfs_nvm_file -- an existing region file: writable, room to grow. */
static int mkfs_nvm_file(const struct mkfs_args *a, const struct stat *st)
{
    int fd = open(a->nvm, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        tools_err("%s: %s", a->nvm, strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    close(fd);
    uint64_t need = a->nvm_layout.size, have = (uint64_t)st->st_blocks * 512u;
    bool grows = (uint64_t)st->st_size < need && have < need;
    return mkfs_nvm_room(a, a->nvm, grows ? need - have : 0);
}

/* mkfs_nvm_device -- a device region (/dev/dax): it maps as the mount
 * will map it, and holds the layout.  -1 or an exit code. */
static int mkfs_nvm_device(const struct mkfs_args *a)
{
    size_t len = 0;
    int is_pmem = 0;
    errno = 0;
    void *p = pmem_map_file(a->nvm, 0, 0, 0, &len, &is_pmem);
    if (p == NULL) {
        int e = errno ? errno : EINVAL;
        const char *why = pmem_errormsg();
        tools_err("%s: cannot be mapped as an NVM region: %s", a->nvm,
                  why != NULL && *why ? why : strerror(e));
        return TOOLS_EXIT_ERR;
    }
    pmem_unmap(p, len);
    if (len < a->nvm_layout.size) {
        tools_err("%s holds %zu bytes; the region needs %llu (--nvm-size)", a->nvm,
                  len, (unsigned long long)a->nvm_layout.size);
        return TOOLS_EXIT_ERR;
    }
    return -1;
}

/* mkfs_nvm_contents -- refuse an existing region that holds committed
 * blocks not yet home, and without --force a region at all (it pairs with
 * an image, which would lose it) or a non-empty file that is not a
 * region.  -1 or an exit code. */
static int mkfs_nvm_contents(const struct mkfs_args *a, const struct stat *st)
{
    struct ubj_nvm *r;
    int rc = ubj_nvm_open(a->nvm, UBJ_NVM_OPEN_RDONLY, &r);
    if (rc == -EUCLEAN || rc == -ENOENT || rc == -EINVAL) {
        if (S_ISREG(st->st_mode) && st->st_size > 0 && !a->force) {
            tools_err("%s exists (%lld bytes) and is not an NVM region; use "
                      "--force to overwrite it", a->nvm, (long long)st->st_size);
            return TOOLS_EXIT_ERR;
        }
        return -1;               /* empty, a device, or --force: made anew */
    }
    int64_t pending = rc < 0 ? rc : ubjm_pending(r, UINT64_MAX);
    char owner[37] = "";
    if (rc == 0) {
        ubj_nvm_uuid_text(ubj_nvm_uuid(r), owner);
        ubj_nvm_close(r);
    }
    if (pending > 0) {
        tools_err("%s holds %lld committed blocks not yet written home: mount "
                  "its image once to checkpoint, or remove the file", a->nvm,
                  (long long)pending);
        return TOOLS_EXIT_ERR;
    }
    if (rc < 0) {
        tools_err("%s", tools_libmsg(rc));
        return TOOLS_EXIT_ERR;
    }
    if (!a->force) {   /* its image (this one or another) would lose it */
        tools_err("%s is the NVM region of the image with uuid %s; use --force "
                  "to reformat it (that image then no longer mounts in mode ubj)",
                  a->nvm, owner);
        return TOOLS_EXIT_ERR;
    }
    return -1;
}

/* mkfs_nvm_check -- everything about --nvm and --nvm-size that can be
 * checked before the image or the region is touched: the layout, the
 * path (not the image, not a directory), what it holds, that it can be
 * written and has room.  Sets a->nvm_layout, a->nvm_existed.  -1 to go
 * on, else an exit code. */
static int mkfs_nvm_check(struct mkfs_args *a)
{
    if (a->nvm == NULL)
        return -1;
    int rc = ubj_nvm_layout_for(a->nvm_size ? 0 : MKFS_NVM_BUFS, a->nvm_size,
                                &a->nvm_layout);
    if (rc < 0)
        return tools_usage_err("invalid --nvm-size '%s': %s",
                               a->nvm_size_arg ? a->nvm_size_arg : "", tools_libmsg(rc));
    struct stat st, ist;
    if (stat(a->nvm, &st) < 0) {
        if (errno == ENOENT)
            return mkfs_nvm_new(a);
        tools_err("%s: %s", a->nvm, strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    a->nvm_existed = true;
    if (stat(a->image, &ist) == 0 && ist.st_dev == st.st_dev && ist.st_ino == st.st_ino)
        return tools_usage_err("--nvm %s is the image itself", a->nvm);
    if (S_ISDIR(st.st_mode)) {
        tools_err("%s is a directory, not an NVM region file", a->nvm);
        return TOOLS_EXIT_ERR;
    }
    int ret = mkfs_nvm_contents(a, &st);
    if (ret < 0)
        ret = S_ISREG(st.st_mode) ? mkfs_nvm_file(a, &st) : mkfs_nvm_device(a);
    return ret;
}

/* mkfs_nvm_make -- --nvm: make the empty region for the image-to-be (uuid
 * a->fo.uuid), before the image is written: if it cannot be made, the
 * image is untouched.  *out stays open (locked) until the image is made.
 * -1 or an exit code. */
static int mkfs_nvm_make(const struct mkfs_args *a, struct ubj_nvm **out)
{
    int rc = ubjm_attach(a->nvm, a->nvm_size, 0, a->fo.uuid, UBJM_NVMA_FORMAT, out);
    if (rc < 0) {
        tools_err("%s (%s not touched)", tools_libmsg(rc), a->image);
        if (!a->nvm_existed)
            (void)unlink(a->nvm);   /* leave nothing half made behind */
        return TOOLS_EXIT_ERR;
    }
    return -1;
}

/* mkfs_format -- open the device, format, summarise.  An exit code. */
static int mkfs_format(struct mkfs_args *a, bool zeroed, struct ubj_nvm *r)
{
    struct ubj_bdev *dev;
    int rc = ubj_bdev_file_open(a->image, 0, 0, &dev);
    if (rc < 0) {
        tools_err("%s", tools_libmsg(rc));
        return TOOLS_EXIT_ERR;
    }
    a->fo.flags |= zeroed ? UBJ_FORMAT_ZEROED : 0;
    rc = ubj_format(dev, &a->fo);
    if (rc == 0)
        rc = ubj_bdev_flush(dev);
    if (rc < 0) {
        tools_err("%s: %s", a->image, tools_libmsg(rc));
        ubj_bdev_destroy(dev);
        return TOOLS_EXIT_ERR;
    }
    int ret = mkfs_summary(a, dev, r);
    ubj_bdev_destroy(dev);
    return ret;
}

/* mkfs_open -- open (or create) and lock the image; fd or -1 (reported). */
static int mkfs_open(const struct mkfs_args *a, bool *created)
{
    *created = false;
    int fd = open(a->image, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 && errno == ENOENT) {
        if (a->size == 0) {
            tools_err("%s does not exist: give --size to create it", a->image);
            return -1;
        }
        fd = open(a->image, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0666);
        *created = fd >= 0;
    }
    if (fd < 0) {
        tools_err("%s: %s", a->image, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        tools_err("%s: %s", a->image, errno == EWOULDBLOCK
                  ? "in use (mounted or locked by another program)" : strerror(errno));
        close(fd);
        if (*created)
            unlink(a->image);
        return -1;
    }
    return fd;
}

/* mkfs_check_image -- what can be checked of the open image without
 * changing it: its type, its contents (--force), its geometry with the
 * options.  -1 or an exit code. */
static int mkfs_check_image(const struct mkfs_args *a, int fd, bool created,
                            struct stat *st)
{
    if (fstat(fd, st) != 0) {
        tools_err("%s: %s", a->image, strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    if (!S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode)) {
        tools_err("%s: not a regular file or block device", a->image);
        return TOOLS_EXIT_ERR;
    }
    int ret = created ? -1 : mkfs_check_existing(a, fd, st);
    uint64_t nblocks = 0;
    if (ret < 0)
        ret = mkfs_geometry(a, fd, st, &nblocks);
    if (ret < 0)
        ret = mkfs_probe(a, nblocks);
    return ret;
}

/* mkfs_run -- check everything, then make the region (--nvm), size and
 * format the image.  An exit code. */
static int mkfs_run(struct mkfs_args *a)
{
    bool created, zeroed = false;
    int fd = mkfs_open(a, &created);
    if (fd < 0)
        return TOOLS_EXIT_ERR;
    struct stat st;
    struct ubj_nvm *r = NULL;
    int ret = mkfs_check_image(a, fd, created, &st);
    if (ret < 0 && a->nvm != NULL)
        ret = mkfs_nvm_make(a, &r);
    if (ret < 0)
        ret = mkfs_prepare(a, fd, &st, created, &zeroed);
    if (ret < 0)
        ret = mkfs_format(a, zeroed, r);
    ubj_nvm_close(r);
    if (ret != TOOLS_EXIT_OK && r != NULL && !a->nvm_existed)
        (void)unlink(a->nvm);    /* the image failed: no region for nothing */
    if (ret != TOOLS_EXIT_OK && created)
        unlink(a->image);
    close(fd);                   /* drops the lock */
    return ret;
}

/* mkfs_next_step -- mode ubj without --nvm: the image cannot be mounted
 * until it has a region; say how to make one (even with -q). */
static void mkfs_next_step(const struct mkfs_args *a)
{
    if (a->nvm != NULL || !tools_mode_needs(a->fo.mode, UBJ_MODE_NEEDS_NVM))
        return;
    fprintf(stderr, "%s: note: %s has no NVM region yet (mode ubj needs one to be "
            "mounted or read); make it at the first mount: ubjfs mount --nvm REGION "
            "--format-nvm %s MOUNTPOINT\n", tools_prog, a->image, a->image);
}

/* tools_mkfs_main -- `ubjfs mkfs`. */
int tools_mkfs_main(int argc, char **argv)
{
    struct mkfs_args a;
    memset(&a, 0, sizeof a);
    int ret = mkfs_parse(argc, argv, &a);
    if (ret >= 0)
        return ret;
    a.fo.flags = a.journal_async ? UBJ_FORMAT_JOURNAL_ASYNC : 0;
    ret = mkfs_trial(&a);
    if (ret >= 0)
        return ret;
    ret = mkfs_nvm_check(&a);
    if (ret >= 0)
        return ret;
    if (a.nvm != NULL)
        uuid_generate_random(a.fo.uuid);   /* the region is made first */
    ret = mkfs_run(&a);
    if (ret == TOOLS_EXIT_OK)
        mkfs_next_step(&a);
    return ret;
}
