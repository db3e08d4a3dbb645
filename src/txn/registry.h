/*
 * registry.h -- the one mode registry (src/txn/registry.c), internal view:
 * each mode's public description (include/ubjfs/mode.h) plus what only the
 * file system and the transaction layer use -- the mode's on-disk code
 * (ubj_super.mode, ubj_super.mount_mode) and its operations table.
 *
 * Adding a mode: its own file in src/txn/ with its `const struct
 * ubj_mode_ops`, and one entry in registry.c (docs/DESIGN.md, "Adding a
 * consistency mode").  Nothing else lists modes.
 *
 * Thread-safety: constant data; every function may be called from any
 * thread.
 */
#ifndef UBJ_TXN_REGISTRY_H
#define UBJ_TXN_REGISTRY_H

#include <stdint.h>
#include "txn/mode.h"
#include "ubjfs/mode.h"

/* On-disk mode codes (ubj_super.mode, .mount_mode; docs/FORMAT.md).  Only
 * the registry pairs them with modes; the few uses outside src/txn/ are
 * super.c's mount/format functions, which the verbs work replaces. */
#define UBJ_FMT_MODE_NONE 0u
#define UBJ_FMT_MODE_UBJ  1u   /* NVM-resident cache, commit in place (docs/UBJ.md) */
#define UBJ_FMT_MODE_ORDERED   2u  /* journal: data home before metadata commits (docs/JOURNAL.md) */
#define UBJ_FMT_MODE_JOURNAL   3u  /* journal: data and metadata through the log */
#define UBJ_FMT_MODE_WRITEBACK 4u  /* journal: metadata only, data unordered */
#define UBJ_FMT_MODE_SYNC      5u  /* no journal: ordering-critical metadata written synchronously */
#define UBJ_FMT_MODE_TEST_MIN  0xf0u  /* 0xf0..0xff: test-only modes */

/* One mode. */
struct ubj_mode_entry {
    struct ubj_mode_info info;    /* first: ubj_mode_at returns &info */
    uint32_t code;                /* UBJ_FMT_MODE_* recorded on the image */
    const struct ubj_mode_ops *ops;
};

/* ubj_registry_by_name -- the mode called `name`; NULL if none (or NULL). */
const struct ubj_mode_entry *ubj_registry_by_name(const char *name);

/* ubj_registry_by_code -- the mode of on-disk code `code`; NULL if none. */
const struct ubj_mode_entry *ubj_registry_by_code(uint32_t code);

/* ubj_registry_by_ops -- the mode whose operations are `ops`; NULL if none. */
const struct ubj_mode_entry *ubj_registry_by_ops(const struct ubj_mode_ops *ops);

#endif /* UBJ_TXN_REGISTRY_H */
