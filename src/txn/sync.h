/*
 * sync.h -- mode `sync` (src/txn/sync.c): what the crash explorer and the
 * tests need of it beyond its ops table.
 */
#ifndef UBJ_TXN_SYNC_H
#define UBJ_TXN_SYNC_H

#include <stdint.h>

/* Counters of mode sync (ubj_sync_stats_get). */
struct ubj_sync_stats {
    uint64_t sync_points;   /* dependent events that had to wait for a write */
    uint64_t sync_writes;   /* ordering-critical blocks written synchronously */
    uint64_t sync_flushes;  /* flushes after them (volatile write cache only) */
    uint64_t deferred;      /* write_begin deferrals of a split's old node */
    uint64_t rolled_back;   /* ... written as the device's copy (UBJ_WRITE_MUST) */
};

struct ubj_txn;

/* ubj_sync_stats_get -- mode sync's counters of mount t (zeros when t is
 * in another mode).  Call with the mount lock held. */
void ubj_sync_stats_get(const struct ubj_txn *t, struct ubj_sync_stats *out);

#if UBJ_TEST_HOOKS
/* Broken variants (test builds; process-wide, read at every event). */
#define UBJ_SYNC_BREAK_INIT    0x1u  /* sync-no-init: a name or pointer may reach
                                        the disk before what it points at (R1) */
#define UBJ_SYNC_BREAK_NULLIFY 0x2u  /* sync-no-nullify: a link count drop, an
                                        inode clear or a free before the removed
                                        pointer is on the disk (R2) */
#define UBJ_SYNC_BREAK_RENAME  0x4u  /* sync-no-rename: the old name removed
                                        before the new one is on the disk (R3) */
#define UBJ_SYNC_BREAK_SPLIT   0x8u  /* sync-no-split: a split's old node is
                                        written at once, before the parent
                                        points at its moved half */
/* ubj_sync_test_break -- select the broken variants `bits` (0: none). */
void ubj_sync_test_break(unsigned bits);
#endif

#endif /* UBJ_TXN_SYNC_H */
