/*
 * cp.h -- what the three parts of `ubjfs cp` share: cp.c (arguments, the
 * top level, the hard-link map), cp_in.c (host -> image) and cp_out.c
 * (image -> host).
 */
#ifndef UBJ_TOOLS_CP_H
#define UBJ_TOOLS_CP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "tools.h"

/* One remembered hard-linked file: key -> the copy made of it. */
struct cp_link {
    uint64_t k1, k2;     /* (st_dev, st_ino) on the host, (ino, 0) in an image */
    uint64_t ino;        /* copy in: the image inode made */
    char *path;          /* copy out: the host path made */
    bool used;
};

struct cp_links {
    struct cp_link *v;   /* open addressing, linear probing */
    size_t n, cap;       /* cap is a power of two, n <= cap / 2 */
};

/* The directories being copied, outermost first: a directory found among
 * its own ancestors is a loop (a corrupt image, or a host file system that
 * shows one) and is not entered.  Keys as in struct cp_link. */
struct cp_dirstack {
    struct { uint64_t k1, k2; } *v;
    size_t n, cap;
};

struct cp_ctx {
    struct tools_img img;
    const char *image;         /* image name, for messages */
    dev_t img_dev;             /* the image file itself: never copied */
    ino_t img_ino;
    bool recursive;            /* -r */
    bool own;                  /* preserve uid/gid (root, or -p) */
    bool failed;               /* some file could not be copied */
    uint32_t uid, gid;         /* owner of new inodes when !own (copy in) */
    unsigned char *buf;        /* TOOLS_CHUNK bytes */
    struct cp_links links;
    struct cp_dirstack dirs;   /* ancestors of what is being copied */
};

/* cp_fail -- report "PROG: fmt..." and remember the failure. */
void cp_fail(struct cp_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cp_link_find -- the entry for (k1, k2), or NULL. */
struct cp_link *cp_link_find(struct cp_links *l, uint64_t k1, uint64_t k2);
/* cp_link_add -- remember (k1, k2) -> ino/path (path copied).  0 or -ENOMEM. */
int cp_link_add(struct cp_links *l, uint64_t k1, uint64_t k2, uint64_t ino,
                const char *path);

/* cp_dir_loop -- is (k1, k2) a directory being copied (an ancestor)?  If
 * so, reports "[IMAGE:]PATH: directory loop (...); not copied" (IMAGE: when
 * in_image) and returns true. */
bool cp_dir_loop(struct cp_ctx *c, uint64_t k1, uint64_t k2, bool in_image,
                 const char *path);
/* cp_dir_push -- (k1, k2) is now being copied.  0 or -ENOMEM (reported). */
int cp_dir_push(struct cp_ctx *c, uint64_t k1, uint64_t k2);
/* cp_dir_pop -- the innermost directory is done. */
void cp_dir_pop(struct cp_ctx *c);

/* cp_basename -- the last component of `path` with trailing '/' removed,
 * malloc'd ("" for "/"); NULL on ENOMEM. */
char *cp_basename(const char *path);

/* Host -> image (cp_in.c).  cp_in_node copies `src` to the name `dname`
 * in directory `dparent`; `dpath` is that name's image path (messages).
 * top: a command-line operand (without -r, symlinks are followed). */
void cp_in_node(struct cp_ctx *c, const char *src, ubj_ino_t dparent,
                const char *dname, const char *dpath, bool top);
/* cp_in_into -- copy the contents of host directory `src` into the
 * existing image directory `dir` (operands ".", "..", "/"). */
void cp_in_into(struct cp_ctx *c, const char *src, ubj_ino_t dir,
                const char *dpath);

/* Image -> host (cp_out.c).  `st` is the source's attributes, `spath` its
 * image path, `dst` the host path to make. */
void cp_out_node(struct cp_ctx *c, const struct ubj_stat *st,
                 const char *spath, const char *dst);
/* cp_out_into -- copy the contents of image directory `st` into the
 * existing host directory `dst` (operand "IMAGE:/"). */
void cp_out_into(struct cp_ctx *c, const struct ubj_stat *st,
                 const char *spath, const char *dst);

#endif /* UBJ_TOOLS_CP_H */
