/*
 * check_int.h -- the checker's private state and the functions its files
 * share (src/fs/check*.c; the passes: check.c).  Not for use outside them.
 */
#ifndef UBJ_FS_CHECK_INT_H
#define UBJ_FS_CHECK_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "fs/fs.h"

#define CK_EXT_MAX_DEPTH 5u         /* extent.c's EXT_MAX_DEPTH */
#define CK_DIR_MAX_DEPTH 8u         /* dir.c's DIR_MAX_DEPTH */
#define CK_LEVELS 10u               /* node buffers: one per tree level */
#define CK_MAP_LINES 20u            /* bitmap runs reported per kind */
#define CK_IREC 16u                 /* internal directory record */
#define CK_EXT_OFF 16u              /* ext header in an extent node */
#define CK_EXT_ENTS 24u             /* first entry in an extent node */
#define CK_NO_BOUND UINT64_MAX
#define CK_LBLK_END (1ULL << 32)
#define CK_NONE UINT64_MAX
#define CK_LL(x) ((unsigned long long)(x))

enum ck_kind { CK_DATA = 0, CK_EXTNODE = 1, CK_DIRNODE = 2, CK_XATTRNODE = 3 };

/* Inode record flags. */
#define CK_DEAD    0x0001u  /* free, or freed by the repair */
#define CK_GONE    0x0002u  /* already zeroed on disk by pass 1 */
#define CK_REACHED 0x0004u
#define CK_ORPHAN  0x0008u  /* a valid member of the orphan list */
#define CK_REXT    0x0010u  /* rebuild the extent tree */
#define CK_RDIR    0x0020u  /* rebuild the directory tree */
#define CK_NEWROOT 0x0040u  /* the root directory, to be created */
#define CK_NOTREE  0x0080u  /* directory whose tree was destroyed (root 0) */
#define CK_XNLINK  0x0100u  /* set nlink = counted */
#define CK_XSIZE   0x0200u  /* set size = want_size */
#define CK_XBLOCKS 0x0400u  /* set blocks = blocks counted */
#define CK_XPARENT 0x0800u  /* set parent = pdir */
#define CK_XONEXT  0x1000u  /* set orphan_next = 0 */
#define CK_XDIRCNT 0x2000u  /* set the directory counters */
#define CK_LATE    0x4000u  /* freed by passes 3-4 (in use as found) */
#define CK_XFIX (CK_XNLINK | CK_XSIZE | CK_XBLOCKS | CK_XPARENT | CK_XONEXT | \
                 CK_XDIRCNT)

/* One in-use inode (records are kept sorted by inode number). */
struct ck_ino {
    uint64_t ino;
    uint64_t parent;        /* on disk (directories) */
    uint64_t onext;         /* orphan_next on disk */
    uint64_t want_size;     /* with CK_XSIZE */
    uint64_t blocks;        /* counted: data + tree nodes + xattr block */
    uint64_t xblocks;       /* 1 if the inode keeps an xattr block */
    uint64_t entries;       /* directories: names kept */
    uint64_t nodes;         /* directories: tree nodes counted */
    uint64_t pdir;          /* directories: the one holding its name */
    uint64_t pedge;         /* index of that name's entry, CK_NONE if none */
    uint64_t edge0, nedge;  /* this directory's entries in ck->edges */
    uint64_t claim0, nclaim;/* this inode's claims from pass 1 */
    uint32_t mode, nlink;
    uint32_t counted;       /* names (files), subdirectories (directories) */
    uint32_t flags;         /* CK_* */
    uint32_t dist;          /* directories: names from the root, CK_FAR if none */
};
#define CK_FAR UINT32_MAX

/* A run of blocks some inode's tree holds. */
struct ck_claim {
    uint64_t pblk;
    uint64_t rec;           /* index of the owner in ck->recs */
    uint32_t lblk, len;     /* data: logical start; blocks */
    uint8_t kind;           /* enum ck_kind */
    uint8_t unwritten;
    uint8_t dead;           /* no longer held (dropped, moved, owner freed) */
    uint8_t move;           /* shared with another claim: copy elsewhere */
};

/* A directory entry found in pass 1. */
struct ck_edge {
    uint64_t dir, ino, key;
    uint64_t name;          /* offset in ck->names */
    uint8_t namelen, type;  /* type as found (DT_*), fixed in pass 2 */
    uint8_t drop;
};

/* How the reports name one kind of tree and what its nodes are claimed as. */
struct ck_tree {
    const char *owner;      /* "inode", "directory" */
    const char *node;       /* what a node is called */
    const char *items;      /* what a node holds */
    const char *below;      /* what a dropped node takes with it */
    enum ck_kind kind;      /* the claim of a node */
};

struct ck {
    struct ubj_bdev *dev;
    bool repair;
    bool discard_nvm;           /* UBJ_CHECK_DISCARD_NVM */
    void (*report)(void *ctx, const char *line);
    void *rctx;
    struct ubj_super sb;
    uint32_t seed;              /* crc32c(~0, uuid) */
    uint64_t nb, ni;            /* blocks, inodes */
    uint64_t *used;             /* nb bits: claimed or allocated; pass 5:
                                   the blocks in use after the repairs */
    uint64_t *nodes;            /* nb bits: tree nodes; from pass 4 on: the
                                   blocks in use as found */
    uint64_t *ifound;           /* ni bits: inodes in use as found */
    struct ck_ino *recs;
    size_t nrecs, caprecs;
    struct ck_claim *claims;
    size_t nclaims, capclaims, claims_p1;
    struct ck_edge *edges;
    size_t nedges, capedges;
    char *names;
    size_t nnames, capnames;
    uint8_t *lv[CK_LEVELS];     /* node buffers, one per tree level */
    uint8_t *iblk;              /* pass 1: the inode block being checked */
    uint8_t *tmp;               /* everything else */
    uint64_t cursor;            /* allocation cursor */
    uint64_t orphans;
    unsigned long problems, unfixed;    /* problems: leaks included */
    unsigned long leaks, notes;         /* ck_leak, ck_note lines */
    uint64_t leaked_blocks, leaked_inodes;
    bool fatal, wrote, dups, sb_dirty;
};


/* ck_bget -- bit i. */
static inline bool ck_bget(const uint64_t *m, uint64_t i)
{
    return (m[i >> 6] >> (i & 63)) & 1u;
}

/* ck_bset -- set bit i. */
static inline void ck_bset(uint64_t *m, uint64_t i)
{
    m[i >> 6] |= 1ULL << (i & 63);
}


/* check_util.c */
void __attribute__((format(printf, 3, 4)))
ck_problem(struct ck *ck, bool fixable, const char *fmt, ...);
void __attribute__((format(printf, 4, 5)))
ck_leak(struct ck *ck, uint64_t blocks, uint64_t inodes, const char *fmt, ...);
void __attribute__((format(printf, 2, 3)))
ck_note(struct ck *ck, const char *fmt, ...);
void __attribute__((format(printf, 2, 3)))
ck_fatal(struct ck *ck, const char *fmt, ...);
void __attribute__((format(printf, 2, 3)))
ck_failed(struct ck *ck, const char *fmt, ...);
const char *ck_show(char *out, size_t cap, const char *name, size_t len);
const char *ck_type_name(uint32_t mode);
bool ck_grow(struct ck *ck, void **arr, size_t *cap, size_t need, size_t size);
void ck_bset_range(uint64_t *m, uint64_t from, uint64_t n);
uint64_t ck_bcount(const uint64_t *m, uint64_t n);
size_t ck_bwords(uint64_t n);
int ck_read(struct ck *ck, uint64_t blk, void *buf);
int ck_write(struct ck *ck, uint64_t blk, const void *buf);
bool ck_crc_ok(const struct ck *ck, const uint8_t *b);
const char *ck_hdr_why(const uint8_t *b, uint32_t magic, uint64_t blk);
void ck_seal(const struct ck *ck, uint8_t *b, uint32_t magic, uint64_t blk);
bool ck_zero(const uint8_t *b);
uint64_t ck_div_up(uint64_t a, uint64_t b);
struct ck_ino *ck_find(struct ck *ck, uint64_t ino);
struct ck_ino *ck_live(struct ck *ck, uint64_t ino);
bool ck_claim_add(struct ck *ck, uint64_t rec, enum ck_kind kind,
                  uint64_t pblk, uint32_t lblk, uint32_t len, bool unwritten);
void ck_kill_claims(struct ck *ck, const struct ck_ino *r);
bool ck_edge_add(struct ck *ck, uint64_t dir, uint64_t ino, uint64_t key,
                 unsigned type, const char *name, unsigned len);
const char *ck_edge_name(const struct ck *ck, const struct ck_edge *e,
                         char *out, size_t cap);
struct ubj_inode *ck_iget(struct ck *ck, uint64_t ino, uint64_t *blk);
int ck_iput(struct ck *ck, uint64_t blk);

/* check_extent.c */
const char *ck_node_where(const struct ck *ck, uint64_t blk);
void ck_node_drop(struct ck *ck, const struct ck_tree *t, uint64_t ino,
                  uint64_t blk, const char *why, bool *bad);
bool ck_node_accept(struct ck *ck, const struct ck_tree *t, uint64_t rec,
                    uint64_t ino, uint64_t blk, const uint8_t *b, bool *bad);
void __attribute__((format(printf, 3, 4)))
ck_kill(struct ck *ck, struct ck_ino *r, const char *fmt, ...);
void ck_file(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip);
void ck_symlink(struct ck *ck, struct ck_ino *r, const struct ubj_inode *ip);
bool ck_special(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip);

/* check_dir.c */
bool ck_dir(struct ck *ck, struct ck_ino *r, struct ubj_inode *ip);

/* check_inode.c */
void ck_pass1(struct ck *ck);
bool ck_claim_live(const struct ck *ck, const struct ck_claim *c);
uint64_t ck_dup_sweep(struct ck *ck, bool report);
void ck_pass1b(struct ck *ck);

/* check_names.c */
void ck_pass2(struct ck *ck);
void ck_pass3(struct ck *ck);
void ck_pass4(struct ck *ck);

/* check_repair.c */
void ck_repair(struct ck *ck);

/* check_bitmap.c */
void ck_found_maps(struct ck *ck);
void ck_pass5(struct ck *ck);

#endif /* UBJ_FS_CHECK_INT_H */
