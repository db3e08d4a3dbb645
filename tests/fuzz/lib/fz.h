/*
 * fz.h -- the in-tree fuzzing support of tests/fuzz (issue 22): the field
 * table (fields.tsv), the fuzz input container (an image and, in mode
 * ubj, its NVM region, stored sparsely by 4096-byte page), the
 * structure-aware mutator and the harness targets (mount + operations +
 * unmount, recovery alone, fsck -n / fsck -y + fsck -n).  Used by the
 * libFuzzer and AFL++ binaries, the replay driver, the seed maker and the
 * corruption matrix; docs/GUARANTEES.md, "Fuzzing".  Prefix fz_.
 * Errors: negative errno.  Not thread-safe (one case at a time).
 */
#ifndef UBJ_TESTS_FUZZ_FZ_H
#define UBJ_TESTS_FUZZ_FZ_H

#include <stddef.h>
#include <stdint.h>

#include "ubjfs/bdev.h"

/* ---- the field table (fz_table.c) ------------------------------------ */

struct fz_field {
    char doc[16];     /* FORMAT.md, UBJ.md */
    char table[40];   /* "<section>#<n>": the n-th offset table of it */
    char st[16];      /* structure: super, inode, jtag, bufdesc, ... */
    char off[24];     /* offset as the docs write it */
    char size[16];    /* size as the docs write it */
    char name[40];    /* field ("leaf.lblk": a record kind and its field) */
    char cls[24];     /* meaning class: checksum, magic, pointer, ... */
    int o, n;         /* numeric offset and size; -1 when variable */
};

/* fz_table_load -- parse a fields.tsv.  0 and a malloc'd array; -errno
 * or -EINVAL (a malformed line, reported on stderr). */
int fz_table_load(const char *path, struct fz_field **out, size_t *n);
/* fz_table -- the tree's table (UBJ_FUZZ_FIELDS, or $UBJ_SRC/tests/fuzz/
 * fields.tsv), loaded once; aborts if it cannot be read. */
const struct fz_field *fz_table(size_t *n);

/* ---- the container (fz_case.c) --------------------------------------- */

#define FZ_MAGIC "UBJFZ1\n"          /* 8 bytes with the NUL */
#define FZ_PAGE 4096u
#define FZ_MIN_BLOCKS 256u
#define FZ_MAX_BLOCKS 2048u           /* inputs larger are clamped */
#define FZ_MAX_RPAGES 1024u
#define FZ_REGION_BIT 0x80000000u     /* a record of a region page */

/* Header: magic[8], u32 nblocks, u32 region pages (0: no region),
 * u32 ops (which operations the mount target runs), u32 reserved; then
 * records of u32 where (block, or FZ_REGION_BIT | page) + 4096 bytes.
 * Pages not recorded are zero. */
struct fz_case {
    uint32_t nblocks;
    uint32_t rpages;
    uint32_t ops;
    uint8_t *img;      /* nblocks * 4096 */
    uint8_t *reg;      /* rpages * 4096, NULL without a region */
};

/* fz_decode -- any bytes to a case (clamped, never fails but for -ENOMEM;
 * too short or a bad magic: -EINVAL). */
int fz_decode(const uint8_t *d, size_t n, struct fz_case *c);
/* fz_encode -- the case as a container into out[max]: its length, or 0
 * if it does not fit. */
size_t fz_encode(const struct fz_case *c, uint8_t *out, size_t max);
void fz_case_free(struct fz_case *c);
/* fz_case_dev -- a RAM device holding the image.  0 or -errno. */
int fz_case_dev(const struct fz_case *c, struct ubj_bdev **out);
/* fz_case_region -- write the region to a fresh file; path[len] gets its
 * name ("" and 0 without a region).  0 or -errno.  fz_region_drop
 * removes it. */
int fz_case_region(const struct fz_case *c, char *path, size_t len);
void fz_region_drop(char *path);
/* fz_case_take -- a case from a device (and region file, may be NULL). */
int fz_case_take(struct ubj_bdev *dev, const char *region, uint32_t ops,
                 struct fz_case *c);
/* fz_write_file / fz_read_file -- whole files.  0 or -errno. */
int fz_write_file(const char *path, const void *d, size_t n);
int fz_read_file(const char *path, uint8_t **d, size_t *n);

/* ---- structures and the mutator (fz_mutate.c) ------------------------ */

/* One structure instance found in a page. */
struct fz_inst {
    const char *st;    /* table structure name */
    const char *kind;  /* record kind ("leaf", "index", "internal") or NULL */
    int region;        /* 1: a region page */
    uint32_t page;     /* block or region page */
    uint32_t base;     /* byte offset of the structure in the page */
    uint32_t var;      /* variable part: name length (dir_rec, xattr_rec) */
    uint32_t var2;     /* xattr_rec: value length */
};

/* fz_instances -- every structure instance of the case (up to max).
 * Returns how many were found (may exceed max). */
size_t fz_instances(const struct fz_case *c, struct fz_inst *out, size_t max);
/* fz_field_span -- where field f of instance i lies: 0 and off/len within
 * the page, or -ENOENT (f is not a field of i's structure and kind). */
int fz_field_span(const struct fz_inst *i, const struct fz_field *f,
                  uint32_t *off, uint32_t *len);
/* fz_reseal -- recompute the checksum of page (block header, journal
 * control block, region header) with the library's functions. */
void fz_reseal(struct fz_case *c, int region, uint32_t page);

enum fz_how { FZ_ZEROS, FZ_ONES, FZ_RANDOM, FZ_FIRSTBIT, FZ_LASTBIT,
              FZ_PLUS1, FZ_MINUS1, FZ_NHOW };
extern const char *const fz_how_names[FZ_NHOW];
/* fz_corrupt -- apply `how` to span off/len of the page; `rnd` seeds
 * FZ_RANDOM.  Reseals the page unless the field is its own checksum
 * (blkhdr.crc, jhdr.crc, nvm_header.hdr_crc). */
void fz_corrupt(struct fz_case *c, const struct fz_inst *i, const struct fz_field *f,
                enum fz_how how, uint64_t rnd);
/* fz_mutate -- the custom mutator: decode data[size], change one field of
 * one structure (or, sometimes, raw bytes of one page or the ops word),
 * reseal, encode into data[max].  New size (the old one if nothing fit). */
size_t fz_mutate(uint8_t *data, size_t size, size_t max, unsigned seed);

/* ---- the targets (fz_target.c) --------------------------------------- */

/* Each runs one input and returns 0; a broken promise (fsck -y exits 0
 * or 1 but a second fsck -n is not clean; a clean image is not clean
 * after a mount and operations; a result outside the conventions) prints
 * the reason and aborts, which the fuzzer records as a crash. */
int fz_target_mount(const uint8_t *d, size_t n);
int fz_target_recover(const uint8_t *d, size_t n);
int fz_target_fsck(const uint8_t *d, size_t n);
struct ubj_fs;
/* fz_mount -- mount dev with the region file reg ("" or NULL: none), 64
 * cache buffers, no timer, flags UBJ_MOUNT_*.  ubj_mount's result. */
int fz_mount(struct ubj_bdev *dev, const char *reg, unsigned flags, struct ubj_fs **out);
/* fz_quiet -- count report lines instead of printing them (ctx: int *). */
void fz_quiet(void *ctx, const char *line);
/* fz_fail -- print "fz: " + the message and abort. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- seeds (fz_seeds.c) ---------------------------------------------- */

/* fz_seeds_make -- write the seed corpus into dir (created): mkfs'd and
 * populated images in every mode, and mid-mount states (after fsync,
 * without an unmount: what a crash leaves, journal or region holding the
 * newest commits).  Returns the number of files, or -errno. */
int fz_seeds_make(const char *dir);

#endif /* UBJ_TESTS_FUZZ_FZ_H */
