/*
 * jformat.h -- the on-disk structures of the journal area (modes ordered,
 * journal and writeback; docs/FORMAT.md section 13 says the same in
 * prose, docs/JOURNAL.md the design).  The area's place in the image is
 * the superblock's journal_start/journal_blocks (the file system's), which
 * the file system hands to the modes as struct ubj_mode_image
 * (src/txn/mode.h: area_start, area_blocks).
 *
 * All integers are little-endian (the build refuses big-endian hosts).
 */
#ifndef UBJ_TXN_JFORMAT_H
#define UBJ_TXN_JFORMAT_H

#include <assert.h>
#include <stdint.h>

#define UBJ_JBS 4096u                 /* bytes per block (the image's) */

/* ---- the journal (modes ordered, journal, writeback; docs/JOURNAL.md) --- */
/*
 * The area [journal_start, +journal_blocks) holds, at relative block 0,
 * the journal superblock and, in relative blocks [first, maxlen), a
 * circular log of transactions.  A transaction is laid out as
 *     revoke block*  (descriptor block, its data blocks)*  commit block
 * (positions wrap from maxlen - 1 to first).  Every control block
 * (superblock, descriptor, revoke, commit) starts with struct ubj_jhdr and
 * keeps everything it says in its first 512 bytes but descriptors and
 * revoke blocks, whose tail holds more tags/records; the rest is zero.
 * Checksums: crc32c seeded with crc32c(~0, uuid) as every metadata block.
 * A journaled block whose first 4 bytes equal UBJ_JMAGIC is stored with
 * them zeroed (UBJ_JTAG_ESCAPED) so the log never shows a false header.
 */
#define UBJ_JMAGIC 0x4c4a4255u        /* "UBJL" at offset 0 of control blocks */
#define UBJ_JB_DESCRIPTOR 1u
#define UBJ_JB_COMMIT     2u
#define UBJ_JB_SUPER      3u
#define UBJ_JB_REVOKE     4u

struct ubj_jhdr {
    uint32_t magic;      /*  0 UBJ_JMAGIC */
    uint32_t blocktype;  /*  4 UBJ_JB_* */
    uint64_t sequence;   /*  8 transaction id (superblock: 0) */
    uint32_t crc;        /* 16 crc32c(seed, whole block with crc = 0) */
    uint32_t count;      /* 20 descriptor: tags; revoke: records; else 0 */
    uint64_t reserved;   /* 24 zero */
};
static_assert(sizeof(struct ubj_jhdr) == 32, "jhdr");

#define UBJ_JOURNAL_VERSION 1u
#define UBJ_JFEAT_INCOMPAT_CSUM  0x1u  /* crc32c on control blocks and tags */
#define UBJ_JFEAT_INCOMPAT_64BIT 0x2u  /* tags name 64-bit block numbers */
#define UBJ_JFEAT_INCOMPAT_KNOWN (UBJ_JFEAT_INCOMPAT_CSUM | UBJ_JFEAT_INCOMPAT_64BIT)
#define UBJ_JFEAT_COMPAT_ASYNC_COMMIT 0x1u /* commit blocks are written without
                                              a flush before them: a transaction
                                              checksum mismatch ends the log */

/* The journal superblock: relative block 0 of the area. */
struct ubj_jsuper {
    struct ubj_jhdr hdr;       /*   0 blocktype UBJ_JB_SUPER, sequence 0 */
    uint32_t version;          /*  32 UBJ_JOURNAL_VERSION */
    uint32_t block_size;       /*  36 4096 */
    uint64_t area_start;       /*  40 absolute block of this superblock */
    uint64_t maxlen;           /*  48 blocks of the area (= sb.journal_blocks) */
    uint64_t first;            /*  56 first log block, relative (1) */
    uint64_t sequence;         /*  64 id of the first transaction of the log */
    uint64_t start;            /*  72 relative block where it begins; 0 = empty */
    uint8_t  uuid[16];         /*  80 the file system's uuid */
    uint64_t feat_compat;      /*  96 UBJ_JFEAT_COMPAT_* */
    uint64_t feat_incompat;    /* 104 UBJ_JFEAT_INCOMPAT_* (both in v1) */
    uint64_t feat_ro_compat;   /* 112 0 */
    uint32_t max_txn;          /* 120 log blocks a transaction may use (a hint) */
    uint32_t reserved0;        /* 124 */
    uint8_t  reserved[UBJ_JBS - 128];
};
static_assert(sizeof(struct ubj_jsuper) == UBJ_JBS, "jsuper");

/* Descriptor tag: one per journaled block, in log order after the
 * descriptor; tags start at byte 32 of the descriptor. */
#define UBJ_JTAG_ESCAPED   0x1u  /* first 4 bytes were UBJ_JMAGIC, stored as 0 */
#define UBJ_JTAG_SAME_UUID 0x2u  /* jbd2's flag: no uuid follows (always, v1) */
#define UBJ_JTAG_LAST      0x4u  /* the descriptor's last tag */
#define UBJ_JTAG_KNOWN (UBJ_JTAG_ESCAPED | UBJ_JTAG_SAME_UUID | UBJ_JTAG_LAST)
struct ubj_jtag {
    uint64_t blocknr;    /* home block */
    uint32_t flags;      /* UBJ_JTAG_* */
    uint32_t crc;        /* crc32c(seed, sequence (8 bytes) || log copy) */
};
static_assert(sizeof(struct ubj_jtag) == 16, "jtag");
#define UBJ_JTAGS_PER_BLOCK ((UBJ_JBS - 32u) / 16u)     /* 254 */
#define UBJ_JREVOKES_PER_BLOCK ((UBJ_JBS - 32u) / 8u)   /* 508 u64 block numbers */

/* Commit block: ends a transaction. */
struct ubj_jcommit {
    struct ubj_jhdr hdr;       /*  0 blocktype UBJ_JB_COMMIT */
    int64_t  commit_sec;       /* 32 wall-clock time of the commit */
    uint32_t commit_nsec;      /* 40 */
    uint32_t nblocks;          /* 44 log blocks of the transaction before this one */
    uint32_t txn_crc;          /* 48 crc32c(seed) chained over those blocks as
                                      written, in log order */
    uint32_t reserved0;        /* 52 */
    uint8_t  reserved[UBJ_JBS - 56];
};
static_assert(sizeof(struct ubj_jcommit) == UBJ_JBS, "jcommit");

#endif /* UBJ_TXN_JFORMAT_H */
