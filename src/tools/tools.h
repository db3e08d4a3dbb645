/*
 * tools.h -- what the `ubjfs` command-line tool's subcommands share
 * (src/tools/util.c): the program name used in messages, error printing,
 * size and number parsing, IMAGE:/path arguments, opening and mounting an
 * image, directory listings, mode strings and time formatting;
 * (src/tools/modes.c) the lists of consistency modes from the registry;
 * and (src/tools/imglock.c) opening an image that a mount daemon may still
 * hold after `umount`.
 *
 * The tools use only the public API (the headers in include/ubjfs/); inspect and mkfs
 * also read the superblock through src/fs/format.h, and with inspect, fsck and
 * util.c map its mode code through the registry (src/txn/registry.h).
 *
 * Exit codes every subcommand follows unless its --help says otherwise:
 * 0 success, 1 an error (after reporting it), 2 a usage error.
 */
#ifndef UBJ_TOOLS_TOOLS_H
#define UBJ_TOOLS_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>
#include "ubjfs/mode.h"
#include "ubjfs/model.h"
#include "ubjfs/ubjfs.h"

#define TOOLS_VERSION "0.1.0"

#define TOOLS_EXIT_OK    0
#define TOOLS_EXIT_ERR   1
#define TOOLS_EXIT_USAGE 2

#define TOOLS_CHUNK (1u << 20)   /* bytes per read/write when copying */

/* One subcommand: run(argc, argv) with argv[0] = tools_prog. */
struct tools_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

/* The subcommands (one file each). */
int tools_mkfs_main(int argc, char **argv);
int tools_fsck_main(int argc, char **argv);
int tools_cp_main(int argc, char **argv);
int tools_ls_main(int argc, char **argv);
int tools_cat_main(int argc, char **argv);
int tools_stat_main(int argc, char **argv);
int tools_inspect_main(int argc, char **argv);
int tools_bench_main(int argc, char **argv);
int tools_bench_ubj_main(int argc, char **argv);   /* bench_ubj.c: `bench ubj` */
int tools_bench_modes_main(int argc, char **argv); /* bench_modes.c: `bench modes` */
int tools_bench_dev_main(int argc, char **argv);   /* bench_dev.c: `bench dev` */
int tools_bench_readahead_main(int argc, char **argv);   /* bench_ra.c: `bench readahead` */
int tools_bench_ordering_main(int argc, char **argv);    /* bench_order.c: `bench ordering` */
int tools_bench_run_main(int argc, char **argv);   /* bench_run.c: `bench run` */
int tools_bench_headline_main(int argc, char **argv); /* bench_run.c: `bench` */
int tools_mount_main(int argc, char **argv);   /* mount.c + src/fuse/ */
/* mount_helper.c: `ubjfs IMAGE MOUNTPOINT -o OPTS`, mount.fuse3's form */
int tools_mount_helper_main(int argc, char **argv);
int tools_crashtest_main(int argc, char **argv); /* crashtest.c + src/crash/ */

/* ---- messages ---------------------------------------------------------- */

/* "ubjfs cp", "mkfs.ubjfs", ...: the prefix of every message. */
extern const char *tools_prog;

/* tools_err -- print "PROG: MESSAGE\n" on stderr. */
void tools_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* tools_usage_err -- print "PROG: MESSAGE" and a --help hint; returns 2. */
int tools_usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* tools_bad_option -- the getopt '?' case: the hint only; returns 2. */
int tools_bad_option(void);

/* tools_strerror -- strerror of a negative errno value. */
const char *tools_strerror(int rc);

/* tools_libmsg -- the library's message for a failed call returning rc
 * (ubj_errormsg()), or strerror(-rc) when the library set none; a message
 * that ends in ':' (no reason given) gets strerror(-rc) appended. */
const char *tools_libmsg(int rc);

/* ---- parsing ----------------------------------------------------------- */

/* tools_parse_size -- "4096", "64K", "1M", "3G", "1T", "2P" (powers of
 * 1024, case-insensitive).  0 and *out; -EINVAL (syntax); -ERANGE. */
int tools_parse_size(const char *s, uint64_t *out);

/* tools_parse_u64 -- a plain decimal number.  0; -EINVAL; -ERANGE. */
int tools_parse_u64(const char *s, uint64_t *out);

/* tools_fmt_size -- "1 GiB", "1.50 MiB", "512 bytes" into buf. */
void tools_fmt_size(uint64_t bytes, char *buf, size_t len);

/* ---- IMAGE:/path arguments ------------------------------------------- */

struct tools_spec {
    char *image;   /* host path of the image */
    char *path;    /* absolute path inside the image ("/" at least) */
};

/*
 * tools_spec_parse -- split "IMAGE:/path" (also "IMAGE:" = the root and
 * "IMAGE:rel" = "/rel").  The split is at the first ':' whose prefix names
 * an existing regular file or block device; with `force`, at the first ':'
 * anyway (the image may be missing: the error comes at open).  Returns 1
 * and *out filled (free with tools_spec_free), 0 if `arg` is a host path,
 * -ENOMEM.
 */
int tools_spec_parse(const char *arg, bool force, struct tools_spec *out);
void tools_spec_free(struct tools_spec *s);

/* tools_specs_check -- every one of the n operands has the IMAGE:/path
 * form; else a usage error is reported and 2 returned (0 if all do). */
int tools_specs_check(int n, char **ops);

/* ---- mode ubj: the NVM region (--nvm) ---------------------------------- */

/* getopt_long value of --nvm in every subcommand that opens an image. */
#define TOOLS_OPT_NVM 0x4e56
#define TOOLS_NVM_LONGOPT { "nvm", required_argument, NULL, TOOLS_OPT_NVM }
#define TOOLS_NVM_HELP \
    "      --nvm PATH  a mode-ubj image's NVM region (made by mkfs --nvm; the\n" \
    "              default is $UBJFS_NVM): it holds the committed blocks\n"

/* tools_nvm_opt -- the --nvm case: remember PATH for tools_img_mount.
 * 0, or a reported usage error (2) for an empty PATH. */
int tools_nvm_opt(const char *path);

/* TOOLS_IMAGE_LONGOPTS -- --help and --nvm, the last long options of
 * every subcommand that reads an image through IMAGE:/path operands or
 * an IMAGE (ls, stat, cat, cp, inspect). */
#define TOOLS_IMAGE_LONGOPTS { "help", no_argument, NULL, 'H' }, TOOLS_NVM_LONGOPT

/* tools_image_opt -- the getopt cases those subcommands share: 'H'
 * (usage(), then 0), --nvm PATH, anything else (getopt said what) a
 * usage error.  -1 to go on, else an exit code. */
int tools_image_opt(int c, const char *arg, void (*usage)(void));

/* tools_nvm_path -- --nvm's PATH, else $UBJFS_NVM, else NULL. */
const char *tools_nvm_path(void);

/* ---- an image held by a finishing mount daemon (imglock.c) ---------- */

/* tools_open_excl -- ubj_bdev_file_open(path, flags | UBJ_BDEV_EXCL, 0,
 * out), but an image locked by a process that does not serve a mount of
 * it (a mount daemon after `umount`, finishing its final commit; another
 * tool) is waited for, up to 60 s, with a note on stderr after 1 s.  A
 * mounted image is refused at once.  0, or the open's negative errno
 * (-EBUSY: in use). */
int tools_open_excl(const char *path, unsigned flags, struct ubj_bdev **out);

/* tools_serving_mark -- the mount daemon, before it opens `path`: mark the
 * image as served (a lock on a descriptor of its own).  The descriptor,
 * or -1 (not marked: the tools then wait for a mounted image too, and
 * give up after 60 s). */
int tools_serving_mark(const char *path);

/* tools_image_served -- whether a mount daemon serves `path` now (holds
 * the mark of tools_serving_mark).  Never blocks. */
bool tools_image_served(const char *path);

/* tools_serving_unmark -- the request loop has ended: drop the mark (*fd
 * closed and set to -1; nothing if it is -1). */
void tools_serving_unmark(int *fd);

/* tools_mount_error -- report that `image` (open as dev) cannot be
 * mounted (rc): a mode-ubj image without a region says to pass --nvm. */
void tools_mount_error(const char *image, struct ubj_bdev *dev, int rc);

/* ---- images ------------------------------------------------------------ */

struct tools_img {
    const char *name;       /* host path, for messages */
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
};

/* tools_img_mount -- open `image` (exclusive; read-only unless rw) and
 * mount it without the timer thread, with tools_nvm_path() as the region
 * of a mode-ubj image.  Reports failures (an image that is a directory
 * says so).  0 or -1. */
int tools_img_mount(struct tools_img *img, const char *image, bool rw);

/* tools_img_unmount -- unmount and close; reports ubj_unmount's error.
 * 0 or -1. */
int tools_img_unmount(struct tools_img *img);

/* tools_format_trial -- ubj_format a small RAM device with `fo` (inode
 * count ignored): catches an unknown mode or a bad label before anything
 * real is touched.  0 or ubj_format's error (ubj_errormsg() says why). */
int tools_format_trial(const struct ubj_format_opts *fo);

/* tools_format_probe -- run ubj_format's checks with `fo` (inode count and
 * journal size included) on a device of `nblocks` that reads zeros and
 * refuses the first write: the image's geometry is validated and nothing
 * is written.  0 (the format would start writing), or ubj_format's error
 * (-EINVAL, -EFBIG, -ENOSPC; ubj_errormsg() says why), -ENOMEM. */
int tools_format_probe(const struct ubj_format_opts *fo, uint64_t nblocks);

/* ---- directory listings ---------------------------------------------- */

struct tools_dirent {
    char *name;           /* NUL-terminated copy */
    ubj_ino_t ino;
    unsigned type;        /* DT_* */
};

struct tools_dirlist {
    struct tools_dirent *v;
    size_t n, cap;
};

/* tools_readdir_all -- every entry of directory `ino` sorted by name
 * (bytewise); "." and ".." only if `dots`.  0 or a negative errno. */
int tools_readdir_all(struct ubj_fs *fs, ubj_ino_t ino, bool dots,
                      struct tools_dirlist *out);
void tools_dirlist_free(struct tools_dirlist *l);

/* ---- formatting -------------------------------------------------------- */

/* tools_mode_string -- "drwxr-xr-x" (10 characters + NUL). */
void tools_mode_string(uint32_t mode, char out[11]);

/* tools_fmt_time -- local time "2024-11-29 21:50" (ns: with seconds,
 * nanoseconds and the zone, "2024-11-29 21:50:07.123456789 +0000"). */
void tools_fmt_time(const struct timespec *ts, bool ns, char *buf, size_t len);

/* tools_join -- "dir/name" (no doubled '/'); malloc'd, NULL on ENOMEM. */
char *tools_join(const char *dir, const char *name);

/* tools_uuid_string -- the usual 36-character text of a 16-byte uuid. */
void tools_uuid_string(const uint8_t uuid[16], char out[37]);

/* ---- timed device models (devmodel.c; include/ubjfs/model.h) ----------- */

/* tools_dev_split -- cut a --device spec into its model layers (*models,
 * malloc'd, "" if none) and its leaf (*leaf: a pointer into spec at "ram"
 * or "file:PATH", or NULL when the spec names no leaf).  0; -EINVAL (empty
 * layer, a leaf not last, "file:" without a path); -ENOMEM. */
int tools_dev_split(const char *spec, char **models, const char **leaf);

/* tools_dev_parse -- a benchmark's --device SPEC: split it (*models,
 * malloc'd, replacing the old one), try the model layers, and set *file to
 * the path of a file: leaf (or NULL).  -1 to go on, else an exit code
 * (usage errors reported). */
int tools_dev_parse(const char *spec, char **models, const char **file);

/* tools_dev_trial -- open `models` over a small RAM device and close it
 * again.  0, or the error (ubj_errormsg() names the layer). */
int tools_dev_trial(const char *models);

/* tools_dev_wrap -- stack `models` over `leaf` on a new clock of `kind`
 * (owned by the stack on success; on failure leaf is untouched).
 * "" or NULL: *out = leaf.  0 or ubj_bdev_open_spec's error. */
int tools_dev_wrap(const char *models, enum ubj_clock_kind kind,
                   struct ubj_bdev *leaf, struct ubj_bdev **out);

/* What a model had done at one moment (model false: no model). */
struct tools_dev_mark {
    bool model;
    uint64_t ns;             /* the model's clock */
    double energy_j;         /* device energy so far */
    uint64_t bytes_written;
};

/* tools_dev_mark -- a mark of the topmost model in dev's stack. */
void tools_dev_mark(struct ubj_bdev *dev, struct tools_dev_mark *m);

/* tools_dev_now -- the model's clock in ns (0 without a model). */
uint64_t tools_dev_now(struct ubj_bdev *dev);

/* tools_dev_report -- the model's statistics as "name value" lines on f
 * (device spec, clock, requests, bytes, busy time, queueing, service and
 * response mean/p99, disk or flash counters, energy; the NVM cost model's
 * time and energy from fst when not NULL).  0, or -EINVAL without a
 * model (nothing printed). */
int tools_dev_report(FILE *f, struct ubj_bdev *dev, const char *spec,
                     const struct ubj_fs_stats *fst);

/* tools_fs_report -- what a mount's --stats adds to (or, without a model
 * in `dev`'s stack, gives instead of) tools_dev_report, as "name value"
 * lines on f: without a model the device's own counters (reads, writes,
 * flushes, bytes, errors: ubj_bdev_stats), then the file system's
 * counters from fst (cache hits, misses, evictions, write-back, bytes by
 * category, commits, checkpoints, flushes; NVM persists in mode ubj).
 * Either argument may be NULL (its part is left out). */
void tools_fs_report(FILE *f, struct ubj_bdev *dev, const struct ubj_fs_stats *fst);

/* ---- benchmark options (bench_opts.c) ---------------------------------- */

/* TOOLS_BENCH_OPTIONS -- the long options `ubjfs bench micro`, `ubj` and
 * `modes` all take (<getopt.h>), first in each one's table: a tool's own
 * options follow, then { NULL, 0, NULL, 0 }.  The order keeps the lists
 * getopt prints for an ambiguous abbreviation (--c: --cache --csv --clock). */
#define TOOLS_BENCH_OPTIONS \
    { "ops", required_argument, NULL, 'n' }, \
    { "size", required_argument, NULL, 's' }, \
    { "cache", required_argument, NULL, 'c' }, \
    { "device", required_argument, NULL, 'd' }, \
    { "nvm-dir", required_argument, NULL, 'D' }, \
    { "csv", no_argument, NULL, 'C' }, \
    { "clock", required_argument, NULL, 'K' }, \
    { "nvm-profile", required_argument, NULL, 'P' }, \
    { "help", no_argument, NULL, 'H' }

/* The helpers below take one option's argument, report a usage error
 * themselves and store the value only when it is valid.  -1 to go on,
 * else an exit code. */

/* tools_bench_device -- --device SPEC: tools_dev_parse, and *given =
 * spec once it parsed. */
int tools_bench_device(const char *spec, const char **given, char **models,
                       const char **file);

/* tools_bench_clock -- --clock virtual|real. */
int tools_bench_clock(const char *arg, enum ubj_clock_kind *clock);

/* tools_bench_nvm_profile -- --nvm-profile P: P must load as an NVM cost
 * model (ubj_nvm_model_create). */
int tools_bench_nvm_profile(const char *arg, const char **profile);

/* tools_bench_cache -- --cache BLOCKS of `bench ubj` and `bench modes`:
 * 64 .. 2^24. */
int tools_bench_cache(const char *arg, uint32_t *blocks);

/* tools_bench_size -- a SIZE of `bench ubj` and `bench modes`: at least
 * 16M, rounded down to whole 4 KiB blocks. */
int tools_bench_size(const char *arg, uint64_t *size);

/* ---- the mode registry's lists (src/tools/modes.c) ---- */

/* tools_mode_names -- the names of the modes with every flag of `flags`
 * (0: all) and, if need >= 0, needing `need` (enum ubj_mode_need), in
 * `order`, joined by sep (the last two by `last`), into buf of len bytes
 * (cut to fit).  Returns buf. */
const char *tools_mode_names(unsigned flags, int need, enum ubj_mode_order order,
                             const char *sep, const char *last, char *buf, size_t len);

/* tools_mode_needs -- is `name` a mode of this build that needs `need`? */
bool tools_mode_needs(const char *name, enum ubj_mode_need need);

/* tools_wrap -- print the words of `text` (split at spaces) to f, the
 * cursor being at column `col`: a line that would pass column `width`
 * goes on at column `indent`; ends with a newline. */
void tools_wrap(FILE *f, const char *text, size_t col, size_t indent, size_t width);

#endif /* UBJ_TOOLS_TOOLS_H */
