/*
 * format.h -- every on-disk structure of ubjfs v1 (docs/FORMAT.md says the
 * same in prose; keep both true).
 *
 * All integers are little-endian; the build refuses big-endian hosts.
 * Layout of an image of N blocks of 4096 bytes:
 *
 *   block 0                      superblock
 *   [bb_start, +bb_blocks)       block bitmap   (bit b = block b in use)
 *   [ib_start, +ib_blocks)       inode bitmap   (bit i = inode i in use)
 *   [it_start, +it_blocks)       inode table    (15 inodes per block)
 *   [data_start, N)              data: file blocks, extent and directory
 *                                nodes, long symlink targets
 *
 * Metadata blocks (superblock, bitmaps, inode table, extent nodes,
 * directory nodes, xattr blocks) begin with a 16-byte header: type magic, crc32c of the
 * whole block with the crc field zero (seeded with the crc32c of the uuid),
 * and the block's own number (catches misdirected writes).
 */
#ifndef UBJ_FS_FORMAT_H
#define UBJ_FS_FORMAT_H

#include <stdint.h>
#include <assert.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ubjfs v1 supports little-endian hosts only"
#endif

#define UBJ_BS 4096u                 /* bytes per block */
#define UBJ_FORMAT_VERSION 1u

/* Block header magics, one per metadata block type. */
#define UBJ_MAGIC_SUPER   0x464a4255u /* "UBJF" */
#define UBJ_MAGIC_BBITMAP 0x4d424255u /* "UBBM" */
#define UBJ_MAGIC_IBITMAP 0x4d494255u /* "UBIM" */
#define UBJ_MAGIC_INODES  0x444e4955u /* "UIND" */
#define UBJ_MAGIC_EXTENT  0x54584555u /* "UEXT" */
#define UBJ_MAGIC_DIR     0x52494455u /* "UDIR" */
#define UBJ_MAGIC_XATTR   0x54415855u /* "UXAT" */

struct ubj_blkhdr {
    uint32_t magic;    /* UBJ_MAGIC_* */
    uint32_t crc;      /* crc32c(seed, block with crc = 0) */
    uint64_t blkno;    /* this block's own number */
};
static_assert(sizeof(struct ubj_blkhdr) == 16, "blkhdr");

/* Superblock state. */
#define UBJ_STATE_CLEAN   1u   /* unmounted cleanly */
#define UBJ_STATE_MOUNTED 2u   /* mounted (or crashed while mounted) */
#define UBJ_STATE_ERRORS  4u   /* an error was seen: run fsck */

/* The consistency mode recorded at mkfs (default for mount) is a code of
 * the mode registry (src/txn/registry.h), which alone pairs codes and modes. */

struct ubj_super {
    struct ubj_blkhdr hdr;       /*   0 magic UBJ_MAGIC_SUPER, blkno 0 */
    uint32_t version;            /*  16 UBJ_FORMAT_VERSION */
    uint32_t block_size;         /*  20 4096 */
    uint64_t nblocks;            /*  24 blocks in the image */
    uint64_t ninodes;            /*  32 inodes (inode 0 is never used) */
    uint8_t  uuid[16];           /*  40 */
    uint64_t feat_compat;        /*  56 unknown bits: ignore */
    uint64_t feat_incompat;      /*  64 unknown bits: refuse to mount */
    uint64_t feat_ro_compat;     /*  72 unknown bits: mount read-only */
    uint64_t bb_start;           /*  80 block bitmap: first block */
    uint64_t bb_blocks;          /*  88 and length */
    uint64_t ib_start;           /*  96 inode bitmap */
    uint64_t ib_blocks;          /* 104 */
    uint64_t it_start;           /* 112 inode table */
    uint64_t it_blocks;          /* 120 */
    uint64_t journal_start;      /* 128 reserved for the journal (0: none) */
    uint64_t journal_blocks;     /* 136 */
    uint64_t data_start;         /* 144 first data block */
    uint64_t free_blocks;        /* 152 free block count */
    uint64_t free_inodes;        /* 160 free inode count */
    uint64_t root_ino;           /* 168 UBJ_ROOT_INO (1) */
    uint64_t orphan_head;        /* 176 first inode of the orphan list, 0 = empty */
    uint32_t mode;               /* 184 mode code (src/txn/registry.h) */
    uint32_t state;              /* 188 UBJ_STATE_* */
    int64_t  mkfs_time;          /* 192 seconds since the epoch */
    int64_t  mount_time;         /* 200 */
    int64_t  write_time;         /* 208 */
    uint32_t mount_count;        /* 216 */
    uint32_t hash_seed;          /* 220 seed of the directory name hash */
    char     label[32];          /* 224 NUL-padded */
    uint64_t nvm_region_id;      /* 256 mode ubj: the NVM region (its random
                                    id, include/ubjfs/nvm.h) of the current
                                    or last mount; 0 = none.  With state
                                    MOUNTED and mount_mode ubj, that
                                    region holds committed blocks the
                                    image may lack (docs/UBJ.md) */
    uint32_t mount_mode;         /* 264 mode code of that mount */
    uint32_t pad0;               /* 268 zero */
    uint64_t nvm_gen;            /* 272 mode ubj: that mount's generation,
                                    also stored in the region; a region
                                    with an older one is an old copy */
    uint8_t  reserved[UBJ_BS - 280]; /* 280 zero */
};
static_assert(sizeof(struct ubj_super) == UBJ_BS, "super");

/* Bitmaps: bits after the header, LSB first in each byte. */
#define UBJ_BITMAP_BITS ((UBJ_BS - sizeof(struct ubj_blkhdr)) * 8u) /* 32640 */

/* ---- inodes ----------------------------------------------------------- */

/*
 * Inode table block: slot 0 (256 bytes) holds the block header (rest
 * zero), slots 1..15 inodes.  Inode i lives in block it_start + i / 15,
 * slot 1 + i % 15.  A block that is entirely zero (never written since
 * mkfs, ext4's lazy inode table) is valid and holds 15 free inodes; the
 * first change writes it with a header.  A free inode has mode 0.
 */
#define UBJ_INODE_SIZE 256u
#define UBJ_INODES_PER_BLOCK 15u  /* slot 0 of each inode block is the header */

/* Inode flags. */
#define UBJ_IFL_EXTTREE 0x1u  /* i_data holds an extent tree root (reg files,
                                 long symlinks); otherwise for symlinks the
                                 target is inline in i_data */

/* Extent tree node header: in i_data (root) and after the block header. */
#define UBJ_EXT_MAGIC 0xf30au
struct ubj_ext_hdr {
    uint16_t magic;    /* UBJ_EXT_MAGIC */
    uint16_t entries;  /* entries in use */
    uint16_t max;      /* capacity: 7 in the inode, 254 in a block */
    uint16_t depth;    /* 0 = entries are leaves (extents) */
};
/* Leaf: a run of `len` blocks of the file from logical block `lblk` at
 * physical block `pblk`.  Bit 31 of len marks an unwritten (preallocated,
 * reads as zeros) extent; len (without the bit) is 1..32767 here in v1. */
#define UBJ_EXT_UNWRITTEN 0x80000000u
#define UBJ_EXT_MAX_LEN 32768u   /* exclusive bound: lengths 1..32767 */
struct ubj_extent {
    uint32_t lblk;
    uint32_t len;
    uint64_t pblk;
};
/* Index: the child node at `child` covers logical blocks from `lblk` on. */
struct ubj_ext_idx {
    uint32_t lblk;
    uint32_t reserved;
    uint64_t child;
};
static_assert(sizeof(struct ubj_extent) == 16, "extent");
static_assert(sizeof(struct ubj_ext_idx) == 16, "ext idx");
#define UBJ_EXT_ROOT_MAX 7u
#define UBJ_EXT_NODE_MAX ((UBJ_BS - 16u - 8u) / 16u) /* 254 */

/* Directory root, in i_data of a directory. */
struct ubj_dir_root {
    uint64_t root;      /* block of the B+tree root node (never 0) */
    uint32_t depth;     /* 0 = the root is a leaf */
    uint32_t reserved;
    uint64_t entries;   /* names in the directory (not "." / "..") */
    uint64_t nodes;     /* tree blocks in use */
};

struct ubj_inode {
    uint32_t mode;              /*   0 S_IFMT | 07777; 0 = free */
    uint32_t uid;               /*   4 */
    uint32_t gid;               /*   8 */
    uint32_t nlink;             /*  12 */
    uint64_t size;              /*  16 bytes */
    uint64_t blocks;            /*  24 fs blocks allocated (data + nodes) */
    int64_t  atime, mtime, ctime, crtime; /* 32..63 seconds */
    uint32_t atime_ns, mtime_ns, ctime_ns, crtime_ns; /* 64..79 */
    uint32_t flags;             /*  80 UBJ_IFL_* */
    uint32_t generation;        /*  84 */
    uint64_t rdev;              /*  88 device nodes */
    uint64_t xattr_blk;         /*  96 extended attributes block (0: none) */
    uint64_t orphan_next;       /* 104 next inode on the orphan list, 0 = end */
    uint64_t parent;            /* 112 directories: the parent ("..") */
    uint64_t reserved;          /* 120 */
    union {                     /* 128 */
        uint8_t raw[128];
        struct { struct ubj_ext_hdr hdr; uint8_t pad[8];
                 struct ubj_extent e[UBJ_EXT_ROOT_MAX]; } ext;
        struct ubj_dir_root dir;
        char symlink[128];      /* inline target, <= 127 bytes, NUL-padded */
    } i_data;
};
static_assert(sizeof(struct ubj_inode) == UBJ_INODE_SIZE, "inode");
#define UBJ_SYMLINK_INLINE_MAX 127u

/* ---- directory B+tree nodes ------------------------------------------- */
/*
 * Keys are 63-bit name hashes with the low 8 bits a collision index:
 *   key = max((hash64(seed, name) >> 1) & ~0xff, 0x100) | seq.
 * Keys are the readdir cookies.  Below 0x100: cookie 0 starts the listing
 * at ".", 1 resumes at "..", 2..0xff at the first name; a name's cookie
 * (the position after it) is its key + 1.
 *
 * A node: block header, node header, then records packed from offset 32.
 * Leaf record:     u64 key, u64 ino, u8 type (DT_*), u8 namelen, name
 *                  (18 + namelen bytes, padded to a multiple of 8).
 * Internal record: u64 key, u64 child  (16 bytes): child holds keys >=
 *                  key and < the next record's key; the first record's key
 *                  is 0.
 * Records are sorted by key, unique within the tree.
 */
struct ubj_dir_node {
    struct ubj_blkhdr hdr;   /*  0 magic UBJ_MAGIC_DIR */
    uint16_t nrec;           /* 16 records */
    uint16_t level;          /* 18 0 = leaf */
    uint16_t used;           /* 20 bytes of records in use, from offset 32 */
    uint16_t reserved0;      /* 22 */
    uint64_t owner;          /* 24 the directory's inode number */
};
#define UBJ_DIR_REC_OFF 32u
#define UBJ_DIR_SPACE (UBJ_BS - UBJ_DIR_REC_OFF)   /* 4064 bytes */
#define UBJ_DIR_LEAF_FIXED 18u
#define UBJ_DIR_FIRST_KEY 0x100u

/* ---- extended attributes ---------------------------------------------- */
/*
 * An inode's extended attributes live in one UBJ_MAGIC_XATTR block named by
 * the inode's xattr_blk (0: none; the block counts in the inode's
 * `blocks`).  After the block header and the xattr header, records are
 * packed from offset 32:
 *   u8 ns (UBJ_XATTR_NS_*), u8 name_len (1..255 without the prefix),
 *   u16 value_len, name (without its "user."/"trusted."/"security."
 *   prefix), value; each record padded with zeros to a multiple of 4.
 * Records are sorted by (ns, name bytes, name length), names unique; a
 * block holds at least one record (the last removal frees it).  So the
 * names and values of one inode fit in 4064 bytes: one value is at most
 * 4059 bytes (UBJ_XATTR_VALUE_MAX, with a 1-byte name).
 */
#define UBJ_XATTR_NS_USER     1u   /* "user." */
#define UBJ_XATTR_NS_TRUSTED  2u   /* "trusted." */
#define UBJ_XATTR_NS_SECURITY 3u   /* "security." */
struct ubj_xattr_node {
    struct ubj_blkhdr hdr;   /*  0 magic UBJ_MAGIC_XATTR */
    uint64_t owner;          /* 16 the inode number */
    uint16_t count;          /* 24 records */
    uint16_t used;           /* 26 bytes of records from offset 32 (padded) */
    uint32_t reserved;       /* 28 zero */
};
static_assert(sizeof(struct ubj_xattr_node) == 32, "xattr node");
#define UBJ_XATTR_REC_OFF 32u
#define UBJ_XATTR_SPACE (UBJ_BS - UBJ_XATTR_REC_OFF)   /* 4064 bytes */
#define UBJ_XATTR_REC_FIXED 4u
#define UBJ_XATTR_VALUE_MAX (UBJ_XATTR_SPACE - UBJ_XATTR_REC_FIXED - 1u) /* 4059 */

/* ---- the journal area --------------------------------------------------- */
/* [journal_start, +journal_blocks) holds the journal of modes ordered,
 * journal and writeback: its structures are src/txn/jformat.h's. */

#endif /* UBJ_FS_FORMAT_H */
