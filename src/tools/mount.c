/*
 * mount.c -- `ubjfs mount [OPTIONS] IMAGE MOUNTPOINT`: serve an image
 * through FUSE (src/fuse/) until it is unmounted.
 *
 * Order of events, chosen so that every error is reported by the command
 * the user typed, before it returns:
 *   1. options are parsed and checked (a trial format catches an unknown
 *      --mode; usage errors exit 2);
 *   2. without -f, the process forks at once, before any thread exists
 *      (the library's commit timer and libfuse's workers are threads, which
 *      fork does not copy); the parent waits on a pipe;
 *   3. the child creates the FUSE session (bad -o options fail here),
 *      opens the image with an exclusive flock (a second mount of the same
 *      image fails here: "in use"), mounts the library (recovery runs
 *      here), mounts the kernel side;
 *   4. only then does it detach (setsid, chdir /, stdio to /dev/null or,
 *      with --log FILE, stdout and stderr appended to FILE, opened by the
 *      checks before the fork so a bad path fails the mount),
 *      write the pid file and tell the parent, which exits 0; on any
 *      failure the child has printed one line and exits 1, and so does the
 *      parent.
 * Unmounting (`fusermount3 -u MOUNTPOINT`, `umount`, SIGTERM, SIGINT or
 * SIGHUP) ends the request loop; the daemon then detaches the kernel
 * mount, drops its references and calls ubj_unmount (final commit, write
 * back, device flush, superblock clean) and exits 0, or 1 after logging
 * an unmount error (syslog when detached); once the loop has ended,
 * SIGTERM, SIGINT and SIGHUP are ignored.  umount(2) does not wait for
 * that: from the image's open until the loop ends the daemon marks the
 * image as served (imglock.c), and a tool -- or a new mount -- that finds
 * the image locked without the mark waits for the daemon to close it.
 *
 * --device SPEC puts timed model layers (include/ubjfs/model.h,
 * docs/DEVICES.md) over the image file, on a real clock: every request
 * blocks until the modeled device would have completed it, so programs
 * using the mount see the modeled device's speed.  The statistics (the
 * model's, or without --device the image device's counters, then the file
 * system's: tools_fs_report) are written after the unmount, and whenever
 * the daemon gets SIGUSR1, to --stats FILE (replaced each time) or else
 * -- with --device -- to stderr (with -f or --log) or syslog (detached).  SIGUSR1 is blocked in every thread and taken
 * by one thread with sigwait, so the report is not written from a signal
 * handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "fuse/fuse.h"
#include "fs/readahead.h"
#include "tools.h"

#define MOUNT_CACHE_MIN (64u * 4096u)    /* the library's minimum cache */
#define MOUNT_FUSE_MAGIC 0x65735546      /* statfs f_type of FUSE (linux/magic.h) */

struct mount_args {
    const char *image, *mountpoint;
    const char *mode, *nvm, *pidfile;
    const char *log;                     /* --log FILE, or NULL */
    int log_fd;                          /* open on FILE (appending), or -1 */
    const char *device, *nvm_profile, *stats;   /* --device, --nvm-profile, --stats */
    const char *readahead;               /* --readahead: the read path (NULL: the
                                            kernel's window above, off below) */
    char *models;                        /* --device's model layers */
    uint64_t cache_bytes;                /* 0: the library's default */
    uint32_t commit_ms;                  /* 0: the library's default */
    bool foreground, debug, format_nvm, scrub;
    unsigned unclean;                    /* -o unclean=: UBJ_UNCLEAN_* */
    bool noatime;                        /* -o noatime: also the daemon's reads */
    struct ubj_fuse_opts fo;
    char *fuse_opts;                     /* -o options left for libfuse */
    char **o_copies;                     /* each -o argument, split in place:
                                            mode= etc. point into them */
    size_t n_o_copies;
    char image_abs[PATH_MAX], mnt_abs[PATH_MAX], nvm_abs[PATH_MAX];
    char stats_abs[PATH_MAX];
    dev_t mnt_dev;                       /* the mount point's device before */
};

/* mount_usage -- the --help text. */
static void mount_usage(void)
{
    printf("Usage: %s [OPTIONS] IMAGE MOUNTPOINT\n"
           "Mount the ubjfs file system in IMAGE on MOUNTPOINT through FUSE.\n"
           "Runs in the background once the mount has succeeded (errors are\n"
           "reported first); unmount with 'fusermount3 -u MOUNTPOINT' (or umount,\n"
           "or SIGTERM/SIGINT to the daemon): everything is committed and written\n"
           "back, and the image is left clean.  An image already mounted (or\n"
           "opened by another ubjfs command) is refused.\n\n"
           "Options:\n"
           "  -m, --mode MODE        consistency mode (default: the one recorded by\n"
           "                         mkfs); see docs/USAGE.md for what each guarantees\n"
           "      --nvm PATH         mode ubj: the NVM region holding the cache (made\n"
           "                         by mkfs --nvm, or here with --format-nvm; default:\n"
           "                         $UBJFS_NVM); after a crash, recovery reads it:\n"
           "                         keep it with the image\n"
           "      --format-nvm       mode ubj: make the region anew (refused while it\n"
           "                         holds committed blocks not yet written home)\n"
           "      --nvm-profile P    mode ubj: charge every store, flush and fence of\n"
           "                         the region to NVM cost model P (dram, sttmram,\n"
           "                         pcm, or a profile file); reported with the stats\n"
           "  -D, --device SPEC      timed device model over the image, on a real\n"
           "                         clock: hdd:hp_c2249a, hdd:modern7200, ssd:sata,\n"
           "                         ssd:nvme, ssd:emmc, nand:slc, nand:mlc, with\n"
           "                         ,key=value overrides (nand:slc,op_pct=20); see\n"
           "                         docs/DEVICES.md.  Requests take the modeled time.\n"
           "                         A request queue may go on top:\n"
           "                         queue:clook@hdd:modern7200 (fcfs, clook, sptf)\n"
           "      --readahead P      read-ahead policy (also -o readahead=P); with any\n"
           "                         the kernel reads ahead nothing above the mount\n"
           "                         (FUSE max_readahead 0): off-page reads each\n"
           "                         missing block alone, off each READ's contiguous\n"
           "                         missing blocks in one request (as off-page here:\n"
           "                         the kernel then sends one page per READ),\n"
           "                         linux[:KIB] (window, default 128) and linux-2013\n"
           "                         read ahead as Linux does, adaptive[:KIB] as\n"
           "                         linux where it pays (docs/READAHEAD.md).\n"
           "                         Without it: the kernel's default window, each\n"
           "                         READ read as off does.\n"
           "      --stats FILE       write the statistics (the model's, or the image's\n"
           "                         requests; the cache's, commits) to FILE at\n"
           "                         unmount and on SIGUSR1 (with --device and no\n"
           "                         --stats: stderr with -f or --log, else syslog)\n"
           "  -c, --cache-size SIZE  buffer cache size, bytes with K/M/G suffix\n"
           "                         (default 64M, at least 256K)\n"
           "  -i, --commit-interval MS  milliseconds between background commits\n"
           "                         (default 5000)\n"
           "  -r, --read-only        mount read-only (also -o ro)\n"
           "  -f, --foreground       stay in the foreground (messages on stderr)\n"
           "  -d, --debug            print every FUSE request (implies -f)\n"
           "  -p, --pid-file FILE    write the daemon's pid to FILE (removed at exit)\n"
           "      --log FILE         append the daemon's stderr to FILE: its errors\n"
           "                         (also in syslog), the statistics when --stats is\n"
           "                         not given, abort and sanitizer reports\n"
           "  -o OPT[,OPT...]        mount options: FUSE's (allow_other, allow_root,\n"
           "                         nosuid, nodev, noexec, noatime, auto_unmount,\n"
           "                         fsname=NAME, max_read=N, ...; noatime also stops\n"
           "                         ubjfs's own relatime updates) and these:\n"
           "      writeback_cache    the kernel caches writes and sends them later\n"
           "                         (ENOSPC still fails write(2); slower in mode ubj)\n"
           "      no_writeback_cache\n"
           "                         every write reaches the daemon before write(2)\n"
           "                         returns (the default)\n"
           "      attr_timeout=S     seconds the kernel trusts attributes (default 10)\n"
           "      entry_timeout=S    seconds the kernel trusts names (default 10)\n"
           "      negative_timeout=S\n"
           "                         seconds it trusts that a name is absent (10)\n"
           "      max_threads=N      worker threads (default libfuse's, 10)\n"
           "      max_idle_threads=N\n"
           "                         idle workers kept (default libfuse's)\n"
           "      no_io_uring        read requests from /dev/fuse even where the\n"
           "                         kernel offers FUSE over io_uring (Linux 6.14+,\n"
           "                         fuse.enable_uring=1; used by default then)\n"
           "      scrub              run fsck's checks (read-only) before going\n"
           "                         read-write; on a finding the mount stays\n"
           "                         read-only (costs about one fsck -n)\n"
           "      unclean=P          an image a crash left from a mode that promises\n"
           "                         metadata integrity only (sync): 'default'\n"
           "                         reclaims its leaks with fsck's full pass\n"
           "                         before going read-write; 'refuse' mounts it\n"
           "                         read-write only after fsck -y; 'reclaim' also\n"
           "                         does the pass after a crash of mode none\n"
           "      file_handles       OPEN and RELEASE reach the daemon, which keeps\n"
           "                         an open-file object per open (two round trips\n"
           "                         more per open and close)\n"
           "      no_file_handles    the kernel opens files itself (the default)\n"
           "      no_killpriv_v2     let the kernel clear set-id bits and file\n"
           "                         capabilities (one more request per write)\n"
           "      mode=, nvm=, nvm_profile=, device=, stats=, cache_size=,\n"
           "      commit_interval=, pid_file=, log=, readahead=, format_nvm\n"
           "                         the options above (--mode M as mode=M; an\n"
           "                         /etc/fstab line gives them so)\n"
           "      --help             print this help\n\n"
           "FUSE's default_permissions is always on: the kernel checks permissions\n"
           "with the files' modes.\n\n"
           "Exit status: 0 mounted (with -f: unmounted cleanly), 1 error, 2 usage\n"
           "error.  After a crash, mount again: recovery runs at mount.\n"
           "Example: %s --device nand:slc --stats /tmp/st img /mnt\n",
           tools_prog, tools_prog);
}

/* mount_seconds -- a non-negative decimal number of seconds. */
static int mount_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e9)
        return -EINVAL;
    *out = v;
    return 0;
}

/* mount_count -- a decimal count 1..1000. */
static int mount_count(const char *s, unsigned *out)
{
    uint64_t v;
    if (tools_parse_u64(s, &v) < 0 || v == 0 || v > 1000)
        return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

static int mount_opt_value(struct mount_args *a, int c, const char *arg);

/* -o KEY=VALUE that is the option --LONG VALUE (mount_opt_value's letter):
 * what an /etc/fstab line or mount -t fuse.ubjfs can give (mount_helper.c) */
static const struct { const char *key; int c; } mount_valued[] = {
    { "mode", 'm' }, { "nvm", 'N' }, { "nvm_profile", 'P' }, { "device", 'D' },
    { "stats", 'S' }, { "cache_size", 'c' }, { "commit_interval", 'i' },
    { "pid_file", 'p' }, { "log", 'L' }, { "readahead", 'R' },
};

/* mount_own_opt -- one -o option that is ours: 1 taken, 0 not ours, or a
 * usage error's exit code. */
static int mount_own_opt(struct mount_args *a, const char *opt)
{
    const char *v = strchr(opt, '=');
    size_t kl = v ? (size_t)(v - opt) : strlen(opt);
    int rc = 0;
#define MOUNT_KEY(k) (kl == strlen(k) && strncmp(opt, k, kl) == 0)
    for (size_t i = 0; i < sizeof mount_valued / sizeof mount_valued[0]; i++) {
        if (!MOUNT_KEY(mount_valued[i].key))
            continue;
        if (v == NULL || v[1] == '\0')
            return tools_usage_err("-o %s needs a value (-o %s=...)", opt,
                                   mount_valued[i].key);
        rc = mount_opt_value(a, mount_valued[i].c, v + 1);
        return rc < 0 ? 1 : rc;
    }
    if (MOUNT_KEY("format_nvm") && !v)
        a->format_nvm = true;
    else if (MOUNT_KEY("writeback_cache") && !v)
        a->fo.writeback_cache = true;
    else if (MOUNT_KEY("no_writeback_cache") && !v)
        a->fo.writeback_cache = false;
    else if (MOUNT_KEY("ro") && !v)
        a->fo.rdonly = true;
    else if (MOUNT_KEY("rw") && !v)
        a->fo.rdonly = false;
    else if (MOUNT_KEY("scrub") && !v)
        a->scrub = true;
    else if (MOUNT_KEY("unclean") && v) {
        const char *p = v + 1;
        if (strcmp(p, "default") && strcmp(p, "reclaim") && strcmp(p, "refuse"))
            return tools_usage_err("-o unclean: 'default', 'reclaim' or 'refuse', "
                                   "not '%s'", p);
        a->unclean = !strcmp(p, "reclaim") ? UBJ_UNCLEAN_RECLAIM
                   : !strcmp(p, "refuse") ? UBJ_UNCLEAN_REFUSE : UBJ_UNCLEAN_DEFAULT;
        return 1;
    }
    else if ((MOUNT_KEY("noatime") || MOUNT_KEY("atime")) && !v) {
        /* the kernel's mount flag (forwarded to libfuse) and the daemon's
         * own relatime on READ, which the kernel's flag does not reach */
        a->noatime = MOUNT_KEY("noatime");
        return 0;
    } else if (MOUNT_KEY("relatime") && !v)
        a->noatime = false;             /* what the daemon does: libfuse has no such option */
    else if (MOUNT_KEY("strictatime"))
        return tools_usage_err("-o strictatime: ubjfs has no strict atime "
                               "(relatime, the default, or noatime)");
    else if (MOUNT_KEY("debug") && !v)
        a->debug = a->foreground = true;
    else if (MOUNT_KEY("default_permissions") && !v)
        ;                               /* always on */
    else if (MOUNT_KEY("attr_timeout") && v)
        rc = mount_seconds(v + 1, &a->fo.attr_timeout);
    else if (MOUNT_KEY("entry_timeout") && v)
        rc = mount_seconds(v + 1, &a->fo.entry_timeout);
    else if (MOUNT_KEY("negative_timeout") && v)
        rc = mount_seconds(v + 1, &a->fo.negative_timeout);
    else if (MOUNT_KEY("max_threads") && v)
        rc = mount_count(v + 1, &a->fo.max_threads);
    else if (MOUNT_KEY("max_idle_threads") && v)
        rc = mount_count(v + 1, &a->fo.max_idle_threads);
    else if (MOUNT_KEY("max_read") && v) {
        /* the kernel's too (forwarded to libfuse), and INIT must agree */
        uint64_t mr;
        if (tools_parse_u64(v + 1, &mr) < 0 || mr < 4096 || mr > (1u << 30))
            return tools_usage_err("bad value in -o %s (bytes, 4096 .. 1G)", opt);
        a->fo.max_read = (unsigned)mr;
        return 0;
    } else if ((MOUNT_KEY("io_uring") || MOUNT_KEY("no_io_uring") ||
                MOUNT_KEY("killpriv_v2") || MOUNT_KEY("no_killpriv_v2") ||
                MOUNT_KEY("file_handles") || MOUNT_KEY("no_file_handles") ||
                MOUNT_KEY("scrub") || MOUNT_KEY("format_nvm") ||
                MOUNT_KEY("writeback_cache") || MOUNT_KEY("no_writeback_cache")) && v)
        rc = -EINVAL;                   /* a flag given a value */
    else if (MOUNT_KEY("io_uring") && !v)
        a->fo.no_io_uring = false;
    else if (MOUNT_KEY("no_io_uring") && !v)
        a->fo.no_io_uring = true;
    else if (MOUNT_KEY("file_handles") && !v)
        a->fo.file_handles = true;
    else if (MOUNT_KEY("no_file_handles") && !v)
        a->fo.file_handles = false;
    else if (MOUNT_KEY("killpriv_v2") && !v)
        a->fo.no_killpriv_v2 = false;
    else if (MOUNT_KEY("no_killpriv_v2") && !v)
        a->fo.no_killpriv_v2 = true;
    else
        return 0;
#undef MOUNT_KEY
    if (rc < 0)
        return tools_usage_err("bad value in -o %s", opt);
    return 1;
}

/* mount_opts -- split one -o argument: ours are applied, the rest is
 * appended to a->fuse_opts for libfuse.  -1 to go on, else an exit code. */
static int mount_opts(struct mount_args *a, const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    char **kept = realloc(a->o_copies, (a->n_o_copies + 1) * sizeof *kept);
    if (kept != NULL)
        a->o_copies = kept;
    if (copy == NULL || kept == NULL) {
        free(copy);
        tools_err("out of memory");
        return TOOLS_EXIT_ERR;
    }
    a->o_copies[a->n_o_copies++] = copy;   /* kept: values point into it */
    int ret = -1;
    for (char *o = strtok_r(copy, ",", &save); o && ret < 0; o = strtok_r(NULL, ",", &save)) {
        int rc = mount_own_opt(a, o);
        if (rc == TOOLS_EXIT_USAGE) {
            ret = TOOLS_EXIT_USAGE;
        } else if (rc == 0) {
            size_t ol = a->fuse_opts ? strlen(a->fuse_opts) : 0;
            char *n = realloc(a->fuse_opts, ol + strlen(o) + 2);
            if (n == NULL) {
                tools_err("out of memory");
                ret = TOOLS_EXIT_ERR;
                break;
            }
            snprintf(n + ol, strlen(o) + 2, "%s%s", ol ? "," : "", o);
            a->fuse_opts = n;
        }
    }
    return ret;
}

/* mount_readahead -- --readahead P / -o readahead=P: the read-ahead
 * policies of issue 19 (docs/READAHEAD.md).  Every policy answers INIT
 * with max_readahead 0 -- the kernel reads ahead nothing above the mount,
 * so the policy alone decides -- and is the mount's read path
 * (ubj_config.readahead).  oracle needs a trace's future: refused.  -1
 * or an exit code. */
static int mount_readahead(struct mount_args *a, const char *arg)
{
    enum fs_ra_policy pol;
    uint32_t pages;
    if (fs_ra_policy_parse(arg, &pol, &pages) < 0)
        return tools_usage_err("bad readahead=%s: %s", arg, ubj_errormsg());
    if (pol == FS_RA_ORACLE)
        return tools_usage_err("readahead=oracle: needs the future reads of a "
                               "trace (ubjfs bench readahead only)");
    a->fo.no_kernel_readahead = true;
    a->readahead = arg;
    return -1;
}

/* mount_opt_value -- one option with an argument; -1 or an exit code. */
static int mount_opt_value(struct mount_args *a, int c, const char *arg)
{
    uint64_t v;
    switch (c) {
    case 'm':
        a->mode = arg;
        return -1;
    case 'N':
        a->nvm = arg;
        return -1;
    case 'p':
        a->pidfile = arg;
        return -1;
    case 'L':
        a->log = arg;
        return -1;
    case 'D':
        a->device = arg;
        return -1;
    case 'P':
        a->nvm_profile = arg;
        return -1;
    case 'S':
        a->stats = arg;
        return -1;
    case 'R':
        return mount_readahead(a, arg);
    case 'o':
        return mount_opts(a, arg);
    case 'c':
        if (tools_parse_size(arg, &v) < 0 || v < MOUNT_CACHE_MIN ||
            v / 4096 > UINT32_MAX)
            return tools_usage_err("bad --cache-size '%s' (256K .. 16T)", arg);
        a->cache_bytes = v;
        return -1;
    case 'i':
        if (tools_parse_u64(arg, &v) < 0 || v == 0 || v > 3600000)
            return tools_usage_err("bad --commit-interval '%s' (1 .. 3600000 ms)", arg);
        a->commit_ms = (uint32_t)v;
        return -1;
    default:
        return tools_bad_option();
    }
}

/* mount_parse -- options and operands; -1 to go on, else an exit code. */
static int mount_parse(int argc, char **argv, struct mount_args *a)
{
    static const struct option lo[] = {
        { "mode", required_argument, NULL, 'm' },
        { "nvm", required_argument, NULL, 'N' },
        { "format-nvm", no_argument, NULL, 'F' },
        { "cache-size", required_argument, NULL, 'c' },
        { "commit-interval", required_argument, NULL, 'i' },
        { "read-only", no_argument, NULL, 'r' },
        { "foreground", no_argument, NULL, 'f' },
        { "debug", no_argument, NULL, 'd' },
        { "pid-file", required_argument, NULL, 'p' },
        { "log", required_argument, NULL, 'L' },
        { "device", required_argument, NULL, 'D' },
        { "nvm-profile", required_argument, NULL, 'P' },
        { "stats", required_argument, NULL, 'S' },
        { "readahead", required_argument, NULL, 'R' },
        { "help", no_argument, NULL, 'H' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, "m:c:i:rfdp:o:D:", lo, NULL)) != -1) {
        int rc = -1;
        if (c == 'H') {
            mount_usage();
            return TOOLS_EXIT_OK;
        } else if (c == 'r') {
            a->fo.rdonly = true;
        } else if (c == 'F') {
            a->format_nvm = true;
        } else if (c == 'f') {
            a->foreground = true;
        } else if (c == 'd') {
            a->debug = a->foreground = true;
        } else {
            rc = mount_opt_value(a, c, optarg);
        }
        if (rc >= 0)
            return rc;
    }
    if (argc - optind != 2)
        return tools_usage_err(argc - optind < 2 ? "missing IMAGE or MOUNTPOINT"
                                                 : "too many operands");
    a->image = argv[optind];
    a->mountpoint = argv[optind + 1];
    return -1;
}

/* mount_abs -- `path` made absolute into buf (the daemon runs in /);
 * the path to use, or NULL (reported). */
static const char *mount_abs(const char *path, char *buf, size_t len)
{
    char cwd[PATH_MAX];
    if (path[0] == '/')
        return path;
    if (getcwd(cwd, sizeof cwd) == NULL ||
        snprintf(buf, len, "%s/%s", cwd, path) >= (int)len) {
        tools_err("%s: path too long", path);
        return NULL;
    }
    return buf;
}

/* mount_check_model -- --device, --nvm-profile, --stats: the spec must
 * name model layers only (the image is the leaf) and open; the profile
 * must load.  -1 to go on, else an exit code. */
static int mount_check_model(struct mount_args *a)
{
    if (a->device != NULL) {
        const char *leaf;
        int rc = tools_dev_split(a->device, &a->models, &leaf);
        if (rc == -ENOMEM) {
            tools_err("out of memory");
            return TOOLS_EXIT_ERR;
        }
        if (rc < 0 || leaf != NULL || a->models[0] == '\0')
            return tools_usage_err("bad --device '%s': model layers only (the image "
                                   "is the device under them), e.g. nand:slc",
                                   a->device);
        rc = tools_dev_trial(a->models);
        if (rc < 0)
            return tools_usage_err("bad --device '%s': %s", a->device, tools_libmsg(rc));
    }
    if (a->nvm_profile != NULL) {
        struct ubj_nvm_model *m;
        int rc = ubj_nvm_model_create(a->nvm_profile, NULL, &m);
        if (rc < 0)
            return tools_usage_err("bad --nvm-profile '%s': %s", a->nvm_profile,
                                   tools_libmsg(rc));
        ubj_nvm_model_destroy(m);
    }
    if (a->stats != NULL &&
        (a->stats = mount_abs(a->stats, a->stats_abs, sizeof a->stats_abs)) == NULL)
        return TOOLS_EXIT_ERR;
    return -1;
}

/* mount_check -- operands and mode before anything is started; -1 to go
 * on, else an exit code. */
static int mount_check(struct mount_args *a)
{
    struct stat st;
    int mrc = mount_check_model(a);
    if (mrc >= 0)
        return mrc;
    if (a->mode != NULL) {
        struct ubj_format_opts fo = { .mode = a->mode };
        if (tools_format_trial(&fo) < 0)
            return tools_usage_err("unknown mode '%s'", a->mode);
    }
    if (a->nvm == NULL)
        a->nvm = getenv("UBJFS_NVM");        /* as the other tools */
    if (a->format_nvm && a->nvm == NULL)
        return tools_usage_err("--format-nvm needs --nvm");
    if (a->nvm != NULL &&
        (a->nvm = mount_abs(a->nvm, a->nvm_abs, sizeof a->nvm_abs)) == NULL)
        return TOOLS_EXIT_ERR;
    if (realpath(a->image, a->image_abs) == NULL) {
        tools_err("%s: %s", a->image, strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    if (realpath(a->mountpoint, a->mnt_abs) == NULL || stat(a->mnt_abs, &st) < 0) {
        tools_err("%s: %s", a->mountpoint, strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    if (!S_ISDIR(st.st_mode)) {
        tools_err("%s: not a directory", a->mountpoint);
        return TOOLS_EXIT_ERR;
    }
    a->mnt_dev = st.st_dev;
    if (a->log != NULL) {                /* opened here: a bad path is said now */
        a->log_fd = open(a->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (a->log_fd < 0) {
            tools_err("%s: cannot open the log: %s", a->log, strerror(errno));
            return TOOLS_EXIT_ERR;
        }
    }
    return -1;
}

/* ---- the daemon ------------------------------------------------------------ */

struct mount_run {
    struct ubj_bdev *dev;               /* the stack: models over the image */
    struct ubj_fs *fs;
    struct ubj_fuse *fuse;
    const struct mount_args *args;
    pthread_t stats_thread;             /* takes SIGUSR1 (--device, --stats) */
    int mark;                           /* "served" mark (imglock.c), or -1 */
    bool stats_running;
    volatile bool stats_stop;           /* [set before the wake-up signal] */
};

/* mount_report_to -- the report on f, headed by a comment line. */
static void mount_report_to(FILE *f, const struct mount_run *m,
                            const struct ubj_fs_stats *fst, const char *when)
{
    fprintf(f, "# ubjfs mount statistics (%s): %s\n", when, m->args->image_abs);
    (void)tools_dev_report(f, m->dev, m->args->device, fst);   /* a model's */
    if (strcmp(when, "unmount") == 0)   /* the fs is gone: read before */
        fprintf(f, "# the file system's counters below: before the unmount's "
                "final commit and write-back\n");
    tools_fs_report(f, m->dev, fst);
    fflush(f);
}

/* mount_report_file -- write the report to --stats FILE (via FILE.tmp and
 * a rename, so a reader never sees half of it). */
static void mount_report_file(const struct mount_run *m,
                              const struct ubj_fs_stats *fst, const char *when)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", m->args->stats);
    FILE *f = fopen(tmp, "w");
    if (f != NULL) {
        mount_report_to(f, m, fst, when);
        if (fclose(f) == 0 && rename(tmp, m->args->stats) == 0)
            return;
    }
    syslog(LOG_ERR, "%s: %s", m->args->stats, strerror(errno));
    tools_err("%s: cannot write the statistics: %s", m->args->stats, strerror(errno));
}

/* mount_report_syslog -- the report as one syslog line. */
static void mount_report_syslog(const struct mount_run *m,
                                const struct ubj_fs_stats *fst, const char *when)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return;
    mount_report_to(f, m, fst, when);
    fclose(f);
    for (char *p = buf; p && *p; p++)
        if (*p == '\n')
            *p = ';';
    syslog(LOG_INFO, "%s", buf ? buf : "");
    free(buf);
}

/* mount_report -- the model's statistics where --stats and -f say. */
static void mount_report(const struct mount_run *m, const struct ubj_fs_stats *fst,
                         const char *when)
{
    if ((m->args->device == NULL && m->args->stats == NULL) || m->dev == NULL)
        return;
    if (m->args->stats != NULL)
        mount_report_file(m, fst, when);
    else if (m->args->foreground || m->args->log_fd >= 0)
        mount_report_to(stderr, m, fst, when);
    else
        mount_report_syslog(m, fst, when);
}

/* mount_stats_main -- the SIGUSR1 thread: a report per signal. */
static void *mount_stats_main(void *arg)
{
    struct mount_run *m = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    for (;;) {
        int sig;
        if (sigwait(&set, &sig) != 0 || __atomic_load_n(&m->stats_stop, __ATOMIC_ACQUIRE))
            break;
        struct ubj_fs_stats fst;
        ubj_fs_stats_get(m->fs, &fst);
        mount_report(m, &fst, "SIGUSR1");
    }
    return NULL;
}

/* mount_stats_start -- start the SIGUSR1 thread (SIGUSR1 is blocked). */
static void mount_stats_start(struct mount_run *m)
{
    if (m->args->device == NULL && m->args->stats == NULL)
        return;
    if (pthread_create(&m->stats_thread, NULL, mount_stats_main, m) == 0)
        m->stats_running = true;
    else {
        syslog(LOG_WARNING, "no SIGUSR1 statistics: cannot start a thread");
        tools_err("no SIGUSR1 statistics: cannot start a thread");
    }
}

/* mount_stats_stop -- wake the SIGUSR1 thread for the last time; join. */
static void mount_stats_stop(struct mount_run *m)
{
    if (!m->stats_running)
        return;
    __atomic_store_n(&m->stats_stop, true, __ATOMIC_RELEASE);
    pthread_kill(m->stats_thread, SIGUSR1);
    pthread_join(m->stats_thread, NULL);
    m->stats_running = false;
}

/* mount_open_dev -- the image, and the model layers over it on a real
 * clock.  0 or -1 (reported). */
static int mount_open_dev(const struct mount_args *a, struct mount_run *m)
{
    struct ubj_bdev *img;
    /* waits for a daemon still finishing (umount; mount), refuses a
     * served image; marks it once it has it */
    int rc = tools_open_excl(a->image_abs, a->fo.rdonly ? UBJ_BDEV_RDONLY : 0u, &img);
    if (rc < 0) {
        tools_err("%s", tools_libmsg(rc));
        return -1;
    }
    m->mark = tools_serving_mark(a->image_abs);
    rc = tools_dev_wrap(a->models, UBJ_CLOCK_REAL, img, &m->dev);
    if (rc < 0) {
        tools_err("%s: --device %s: %s", a->image, a->device, tools_libmsg(rc));
        ubj_bdev_destroy(img);
        return -1;
    }
    return 0;
}

/* mount_start -- session, image, library mount, kernel mount.  0, -2
 * (reported: a mount option libfuse rejects, a usage error) or -1
 * (reported). */
static int mount_start(struct mount_args *a, struct mount_run *m)
{
    a->fo.fuse_opts = a->fuse_opts;
    a->fo.fsname = a->image_abs;
    a->fo.debug = a->debug;
    int rc = ubj_fuse_new(&a->fo, &m->fuse);
    if (rc < 0) {
        tools_err("bad mount options: %s", tools_libmsg(rc));
        return rc == -EINVAL ? -2 : -1;
    }
    if (mount_open_dev(a, m) < 0)
        return -1;
    struct ubj_config cfg = { 0 };
    cfg.mode = a->mode;
    cfg.cache_blocks = (uint32_t)(a->cache_bytes / 4096);
    cfg.commit_interval_ms = a->commit_ms;
    cfg.flags = (a->fo.rdonly ? UBJ_MOUNT_RDONLY : 0u) |
                (a->noatime ? UBJ_MOUNT_NOATIME : 0u) |
                (a->scrub ? UBJ_MOUNT_SCRUB : 0u);
    cfg.unclean = a->unclean;
    cfg.nvm_path = a->nvm;
    cfg.nvm_flags = a->format_nvm ? UBJ_NVM_FORMAT : 0u;
    cfg.nvm_profile = a->nvm_profile;
    cfg.readahead = a->readahead ? a->readahead : "off";   /* below the kernel's window */
    rc = ubj_mount(m->dev, &cfg, &m->fs);
    if (rc < 0) {
        tools_err("%s: cannot mount: %s", a->image, tools_libmsg(rc));
        return -1;
    }
    char why[256];
    if (ubj_fs_error(m->fs, why, sizeof why) < 0) {
        syslog(LOG_ERR, "%s: mounted read-only: %s", a->image, why);
        tools_err("%s: mounted read-only: %s", a->image, why);
    }
    if (ubj_fuse_mount(m->fuse, m->fs, a->mnt_abs) < 0) {
        tools_err("%s: cannot mount on %s (see the message above)", a->image,
                  a->mountpoint);
        return -1;
    }
    return 0;
}

/* mount_stop -- undo mount_start in reverse; the unmount's result.  The
 * model's statistics are reported after the unmount's write-back. */
static int mount_stop(struct mount_run *m, const char *image)
{
    int ret = 0;
    struct ubj_fs_stats fst;
    memset(&fst, 0, sizeof fst);
    tools_serving_unmark(&m->mark);   /* finishing: the tools wait for us */
    mount_stats_stop(m);
    if (m->fuse != NULL)
        ubj_fuse_destroy(m->fuse);    /* kernel unmount, references dropped */
    if (m->fs != NULL) {
        ubj_fs_stats_get(m->fs, &fst);
        int rc = ubj_unmount(m->fs);
        if (rc < 0) {
            syslog(LOG_ERR, "%s: unmount: %s", image, tools_libmsg(rc));
            tools_err("%s: unmount: %s", image, tools_libmsg(rc));
            ret = -1;
        }
        mount_report(m, &fst, "unmount");
    }
    if (m->dev != NULL)
        ubj_bdev_destroy(m->dev);
    return ret;
}

/* mount_pidfile -- write our pid; 0 or -1 (reported). */
static int mount_pidfile(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0) {
        tools_err("%s: cannot write the pid file: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* mount_pidfile_remove -- remove the pid file if it still holds our pid:
 * a new mount of the image (umount; mount at once) may have written its
 * own there once we closed the image. */
static void mount_pidfile_remove(const char *path)
{
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f == NULL)
        return;
    int n = fscanf(f, "%ld", &pid);
    fclose(f);
    if (n == 1 && pid == (long)getpid())
        (void)unlink(path);
}

/* mount_detach -- become a daemon: own session, no terminal, cwd /;
 * stdout and stderr to --log's file if given, else /dev/null. */
static void mount_detach(const struct mount_args *a)
{
    (void)setsid();
    if (chdir("/") < 0)
        return;
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0)
        return;
    int out = a->log_fd >= 0 ? a->log_fd : fd;
    (void)dup2(fd, 0);
    (void)dup2(out, 1);
    (void)dup2(out, 2);
    if (fd > 2)
        close(fd);
}

/* mount_serve -- everything after the fork (or in the foreground):
 * returns the exit code; `ready` (or -1) is written once mounted. */
static int mount_serve(struct mount_args *a, int ready)
{
    struct mount_run m = { .args = a, .mark = -1 };
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);   /* inherited by every thread */
    openlog("ubjfs", LOG_PID, LOG_DAEMON);
    if (ready < 0 && a->log_fd >= 0)     /* -f --log FILE: stderr is FILE */
        (void)dup2(a->log_fd, STDERR_FILENO);
    int st = mount_start(a, &m);
    if (st < 0) {
        (void)mount_stop(&m, a->image);
        return st == -2 ? TOOLS_EXIT_USAGE : TOOLS_EXIT_ERR;
    }
    if (a->pidfile != NULL && mount_pidfile(a->pidfile) < 0) {
        (void)mount_stop(&m, a->image);
        return TOOLS_EXIT_ERR;
    }
    if (ready >= 0) {
        mount_detach(a);
        char ok = 0;
        if (write(ready, &ok, 1) != 1)
            syslog(LOG_WARNING, "%s: cannot tell the parent", a->image);
        close(ready);
    }
    mount_stats_start(&m);
    int rc = ubj_fuse_loop(m.fuse);
    /* the final commit is not cut short: umount returns before it, and a
     * shutdown's SIGTERM to every process comes next (libfuse leaves a
     * handler that is not its own in place) */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    if (rc < 0) {
        syslog(LOG_ERR, "%s: FUSE session failed: %s", a->image, strerror(-rc));
        tools_err("%s: FUSE session failed: %s", a->image, strerror(-rc));
    }
    int src = mount_stop(&m, a->image);
    if (a->pidfile != NULL)
        mount_pidfile_remove(a->pidfile);
    return rc < 0 || src < 0 ? TOOLS_EXIT_ERR : TOOLS_EXIT_OK;
}

/* mount_mounted -- is our FUSE file system on the mount point?  A daemon
 * whose INIT failed unmounts at once, so the path may show what is under
 * it instead (a directory, or another FUSE mount): the device must be new.
 * 0, or the errno to report. */
static int mount_mounted(const struct mount_args *a)
{
    struct stat st;
    struct statfs sf;
    if (stat(a->mnt_abs, &st) < 0 || statfs(a->mnt_abs, &sf) < 0)
        return errno;
    return st.st_dev != a->mnt_dev && sf.f_type == MOUNT_FUSE_MAGIC ? 0 : ENOTCONN;
}

/* mount_reap -- the handshake failed: the daemon ends by itself (libfuse
 * exits its loop, the mount is detached); wait for it, then ask with
 * SIGTERM, then SIGKILL and detach the dead mount if it is still ours.
 * Never detaches by path what the daemon did not leave behind. */
static void mount_reap(const struct mount_args *a, pid_t pid)
{
    int status;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 200; i++) {          /* 10 s a round */
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid || (w < 0 && errno != EINTR))
                return;
            struct timespec t = { 0, 50000000L };
            nanosleep(&t, NULL);
        }
        (void)kill(pid, round == 0 ? SIGTERM : SIGKILL);
    }
    struct stat st;                      /* a dead FUSE mount on top: ours */
    if (stat(a->mnt_abs, &st) == 0)
        return;
    pid_t f = fork();
    if (f == 0) {                        /* fusermount3 -u -z: detach it */
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            (void)dup2(null, STDERR_FILENO);
        execlp("fusermount3", "fusermount3", "-u", "-z", a->mnt_abs, (char *)NULL);
        _exit(127);
    }
    while (f > 0 && waitpid(f, &status, 0) < 0 && errno == EINTR)
        ;
}

/* mount_handshake -- the daemon (pid) said it is mounted, but the
 * kernel's INIT is answered only once its loop runs: the first access to
 * the mount waits for that answer and fails (ENOTCONN, ECONNABORTED) if
 * INIT failed.  0, or an exit code after saying why and reaping the
 * daemon. */
static int mount_handshake(const struct mount_args *a, pid_t pid)
{
    int e = mount_mounted(a);
    if (e == 0)
        return TOOLS_EXIT_OK;
    tools_err("%s: the FUSE handshake (INIT) failed: %s", a->mnt_abs, strerror(e));
    mount_reap(a, pid);
    return TOOLS_EXIT_ERR;
}

/* mount_background -- fork; the parent waits for the child's word. */
static int mount_background(struct mount_args *a)
{
    int p[2];
    if (pipe(p) < 0) {
        tools_err("pipe: %s", strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        tools_err("fork: %s", strerror(errno));
        return TOOLS_EXIT_ERR;
    }
    if (pid == 0) {
        close(p[0]);
        _exit(mount_serve(a, p[1]));
    }
    close(p[1]);
    char ok;
    ssize_t n;
    do {
        n = read(p[0], &ok, 1);
    } while (n < 0 && errno == EINTR);
    close(p[0]);
    if (n == 1)
        return mount_handshake(a, pid);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status)
                                                         : TOOLS_EXIT_ERR;
}

/* tools_mount_main -- `ubjfs mount`. */
int tools_mount_main(int argc, char **argv)
{
    struct mount_args a = { .log_fd = -1 };
    a.fo.writeback_cache = false;   /* docs/PERFORMANCE.md: slower in mode ubj */
    a.fo.attr_timeout = UBJ_FUSE_ATTR_TIMEOUT;
    a.fo.entry_timeout = UBJ_FUSE_ENTRY_TIMEOUT;
    a.fo.negative_timeout = UBJ_FUSE_NEGATIVE_TIMEOUT;
    int rc = mount_parse(argc, argv, &a);
    if (rc < 0)
        rc = mount_check(&a);
    if (rc < 0)
        rc = a.foreground ? mount_serve(&a, -1) : mount_background(&a);
    free(a.fuse_opts);
    free(a.models);
    for (size_t i = 0; i < a.n_o_copies; i++)
        free(a.o_copies[i]);
    free(a.o_copies);
    return rc;
}
