/*
 * journal.h -- internals of the JBD2-like journal shared by
 * src/txn/journal.c (the modes ordered, journal and writeback),
 * src/txn/jrecovery.c (format, SCAN / REVOKE / REPLAY, the fsck hook),
 * src/txn/txn.c (the format area's verbs: format, mount of other modes),
 * src/fs/check.c (fsck) and the tests.  docs/JOURNAL.md describes the
 * design, docs/FORMAT.md section 13 the on-disk structures
 * (src/txn/jformat.h).
 *
 * Positions in the log are relative to the start of the journal area:
 * the journal superblock is relative block 0, the log is the circular
 * range [first, maxlen) (first = 1, maxlen = the area's length).
 */
#ifndef UBJ_TXN_JOURNAL_H
#define UBJ_TXN_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "txn/jformat.h"
#include "txn/mode.h"
#include "ubjfs/bdev.h"

#define UBJ_JOURNAL_MIN_BLOCKS 64u    /* the smallest area mkfs accepts */
#define UBJ_JOURNAL_FIRST 1u          /* first log block (relative) */

/* Where a journal lives and how its checksums are seeded. */
struct ubj_jgeom {
    struct ubj_bdev *dev;   /* the image (or an overlay over it) */
    uint64_t start;         /* absolute block of the journal superblock */
    uint64_t blocks;        /* blocks of the area */
    uint64_t fs_nblocks;    /* blocks of the file system: tags name blocks
                               below it, outside the area */
    uint32_t seed;          /* crc32c(~0, uuid) */
    uint8_t uuid[16];
};

/* ubj_journal_default_blocks -- the default area for an image of nblocks
 * blocks, as mke2fs's ext2fs_default_journal_size (1024 blocks up to
 * 128 MiB ... 262144 from 128 GiB on), but at most a quarter of a small
 * image and never below UBJ_JOURNAL_MIN_BLOCKS. */
uint64_t ubj_journal_default_blocks(uint64_t nblocks);

/* ubj_journal_geom -- the journal in the format area of the image img
 * describes (validated by the caller or bounds-checked here) on img->dev.
 * 0; -ENOENT (no journal area); -EUCLEAN (area out of bounds). */
int ubj_journal_geom(const struct ubj_mode_image *img, struct ubj_jgeom *g);

/* ubj_journal_format -- write an empty journal: zero the log unless
 * `zeroed` (the device reads as zeros), then the journal superblock
 * (sequence 1, start 0) with compat features `compat`.  No flush. */
int ubj_journal_format(const struct ubj_jgeom *g, uint64_t compat, bool zeroed);

/* ---- a map from block numbers to 64-bit values ----------------------------- */

/* Open addressing with linear probing and backward-shift deletion; keys
 * are stored + 1 (0 = empty).  A zeroed struct is an empty map. */
struct ubj_jmap {
    uint64_t *keys;
    uint64_t *vals;
    uint64_t mask;          /* slots - 1 (0 before the first put) */
    uint64_t n;             /* entries */
};
/* ubj_jmap_put -- insert or replace.  0 or -ENOMEM (the map is unchanged). */
int ubj_jmap_put(struct ubj_jmap *m, uint64_t key, uint64_t val);
/* ubj_jmap_get -- true and *val (may be NULL) if key is present. */
bool ubj_jmap_get(const struct ubj_jmap *m, uint64_t key, uint64_t *val);
/* ubj_jmap_del -- remove key; true if it was present. */
bool ubj_jmap_del(struct ubj_jmap *m, uint64_t key);
/* ubj_jmap_clear -- remove everything (a large table is freed). */
void ubj_jmap_clear(struct ubj_jmap *m);
/* ubj_jmap_free -- release the memory. */
void ubj_jmap_free(struct ubj_jmap *m);

/* ---- blocks ---------------------------------------------------------------- */

/* ubj_jblock_seal -- fill in a control block's crc (header magic, type,
 * sequence and count must be set). */
void ubj_jblock_seal(uint32_t seed, void *blk);
/* ubj_jblock_ok -- magic and crc of a control block are right. */
bool ubj_jblock_ok(uint32_t seed, const void *blk);
/* ubj_jtag_crc -- a tag's checksum of the 4096-byte log copy. */
uint32_t ubj_jtag_crc(uint32_t seed, uint64_t sequence, const void *copy);

/* ubj_jsuper_read -- read and validate the journal superblock: magic,
 * crc, version, geometry, uuid, features.  0 or -EUCLEAN / -EIO with the
 * message set. */
int ubj_jsuper_read(const struct ubj_jgeom *g, struct ubj_jsuper *js);
/* ubj_jsuper_write -- seal and write js (no flush) at class crit
 * (ubj_bdev_write_crit: UBJ_CRIT_CRITICAL waits on the clock).  0 or the
 * error. */
int ubj_jsuper_write(const struct ubj_jgeom *g, struct ubj_jsuper *js,
                     enum ubj_req_crit crit);

/* ---- recovery: SCAN, REVOKE, REPLAY ------------------------------------------ */

#define UBJ_JREC_FORCE 0x1u   /* fsck: skip corrupt blocks of committed
                                 transactions (and report them) instead of
                                 failing */

/* The newest non-revoked copy of one block in the log. */
struct ubj_jrep {
    uint64_t home;          /* absolute home block */
    uint64_t pos;           /* relative log position of the copy */
    uint32_t flags;         /* UBJ_JTAG_* of its tag */
    uint32_t reserved;
};

/* What SCAN found and what REPLAY is to write. */
struct ubj_jscan {
    struct ubj_jrep *rep;   /* sorted by home block */
    size_t nrep;
    uint64_t first_seq;     /* the superblock's sequence */
    uint64_t end_seq;       /* the first transaction not found committed */
    uint64_t end_pos;       /* where the log ends (relative) */
    uint64_t transactions;  /* committed transactions found */
    uint64_t tags;          /* journaled block copies in them */
    uint64_t revoked;       /* copies skipped by a revoke record */
    uint64_t bad;           /* copies skipped as corrupt (UBJ_JREC_FORCE) */
    char problem[200];      /* the first corruption skipped, or "" */
};

/*
 * ubj_journal_scan -- SCAN the log from the superblock's start: a
 * transaction is committed when its commit block is valid (magic, crc,
 * sequence) and, with async commit, its transaction checksum matches; the
 * first that is not ends the log.  With sync commit a valid commit block
 * behind a checksum mismatch is corruption: -EUCLEAN, or with
 * UBJ_JREC_FORCE the bad copies are skipped.  Then REVOKE (a revoke
 * record of transaction R hides the block's copies in transactions <= R)
 * and the replay plan: the newest visible copy of each block.  Only reads.
 * 0 and *out (free with ubj_jscan_free); -EUCLEAN; -EIO; -ENOMEM.
 */
int ubj_journal_scan(const struct ubj_jgeom *g, const struct ubj_jsuper *js,
                     unsigned flags, struct ubj_jscan *out);
void ubj_jscan_free(struct ubj_jscan *s);

/* ubj_journal_read_copy -- the log copy of r into buf (4096 bytes),
 * unescaped.  0 or the device's error. */
int ubj_journal_read_copy(const struct ubj_jgeom *g, const struct ubj_jrep *r,
                          void *buf);

/* ubj_journal_replay -- REPLAY: write every copy of the plan home (on
 * g->dev), then flush.  0 or the device's error. */
int ubj_journal_replay(const struct ubj_jgeom *g, const struct ubj_jscan *s);

struct ubj_jrec_result {
    uint64_t transactions;  /* replayed */
    uint64_t blocks;        /* home blocks written */
    uint64_t bad;           /* copies skipped as corrupt (FORCE) */
    uint64_t next_seq;      /* the id the next transaction gets */
    uint64_t ns;            /* time taken */
    char problem[200];      /* as ubj_jscan.problem */
};

/*
 * ubj_journal_recover -- if the journal holds a log (start != 0): SCAN,
 * REVOKE, REPLAY onto g->dev, flush, then restart the log (start 0, the
 * sequence continues after the last transaction found + 1), write the
 * superblock and flush.  Returns 1 (recovered), 0 (clean: nothing to do)
 * or a negative errno with the message set; *res (may be NULL) is filled.
 */
int ubj_journal_recover(const struct ubj_jgeom *g, unsigned flags,
                        struct ubj_jrec_result *res);

/* ---- fsck and other modes --------------------------------------------------- */

/*
 * ubj_journal_fsck -- before ubj_check's passes: if the image img
 * describes (img->dev; NULL: block 0 is no valid superblock, nothing to
 * do) has a journal that holds a log, replay it (FORCE) -- onto dev when repair,
 * else into an in-memory overlay that out->view returns, so that -n never
 * writes.  A corrupt journal superblock is a problem; with repair the
 * journal is reset (its log lost).  Returns 0 (nothing to do, or a valid
 * superblock could not be read: pass 0 reports it), 1 (see *out), or
 * -ENOMEM / -EIO.
 */
int ubj_journal_fsck(const struct ubj_mode_image *img, bool repair,
                     struct ubj_mode_view *out);

/*
 * ubj_journal_mount_other -- a mount in a mode without a journal (none,
 * ubj) of an image that has one: recover the log a journaled session
 * left.  0; -EROFS (img->rdonly and a log to replay); -EUCLEAN; -EIO.
 */
int ubj_journal_mount_other(const struct ubj_mode_image *img);

/* ---- test-only hooks (journal.c) ---------------------------------------------- */

#if UBJ_TEST_HOOKS   /* a test build only (CMake option UBJ_TEST_HOOKS) */

/* Deliberately broken variants, for the crash tests that must catch them
 * (process-wide; also read at first use from the environment variable
 * UBJ_TEST_JBREAK). */
enum ubj_jbreak {
    UBJ_JBREAK_NONE = 0,
    UBJ_JBREAK_COMMIT_FLUSH = 1,  /* no flush before the commit block */
    UBJ_JBREAK_CKPT_FLUSH = 2,    /* checkpoint: the tail moves without a
                                     flush of the blocks written home */
};
void ubj_journal_test_break(enum ubj_jbreak which);

/* ubj_journal_test_limits -- override the running-transaction limit (log
 * blocks of journaled buffers; 0 = the default, a quarter of the log).
 * Process-wide, read at mount. */
void ubj_journal_test_limits(uint32_t max_txn);
#endif /* UBJ_TEST_HOOKS */

#endif /* UBJ_TXN_JOURNAL_H */
