/*
 * registry.c -- the one mode registry: every consistency mode this build
 * knows, with its name, on-disk code, needs, options, help line, flags,
 * promises and operations (src/txn/registry.h, include/ubjfs/mode.h).
 * No other list of modes exists: the file system maps names and codes to
 * operations here, and the tools, the benchmark harness and the crash
 * explorer read the public view.
 *
 * Owns: the table and its lookups.
 *
 * Invariants (checked by tests/unit/registry.c): names and codes are unique;
 * every entry's ops->name is its name; test-only entries (UBJ_MODE_F_TEST)
 * have codes >= UBJ_FMT_MODE_TEST_MIN and exist only with UBJ_TEST_HOOKS.
 */
#include <stddef.h>
#include <string.h>
#include "txn/registry.h"

#if UBJ_TEST_HOOKS
extern const struct ubj_mode_ops ubj_mode_trial;   /* src/txn/trial.c */
#endif

#define REG_JOURNAL_OPTIONS "--journal-size SIZE, --journal-async-commit"

/* Registry order: the order mkfs --help lists; a new mode adds one entry. */
static const struct ubj_mode_entry reg_modes[] = {
    { { "none", "no journal: fsync/sync write back everything and flush",
        "", UBJ_MODE_NEEDS_NOTHING, UBJ_MODE_F_HEADLINE,
        { false, UBJ_MODE_DATA_EXACT, UBJ_MODE_META_NONE, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_NONE, &ubj_mode_none },
    { { "ubj", "NVM-resident cache, commit in place (docs/UBJ.md)",
        "--nvm REGION, --nvm-size SIZE, --nvm-profile P", UBJ_MODE_NEEDS_NVM,
        UBJ_MODE_F_CRASH_DEFAULT | UBJ_MODE_F_HEADLINE | UBJ_MODE_F_SUBJECT,
        { true, UBJ_MODE_DATA_EXACT, UBJ_MODE_META_PREFIX, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_UBJ, &ubj_mode_ubj },
    { { "ordered", "journal: data home before metadata commits (docs/JOURNAL.md)",
        REG_JOURNAL_OPTIONS, UBJ_MODE_NEEDS_LOG,
        UBJ_MODE_F_CRASH_DEFAULT | UBJ_MODE_F_HEADLINE | UBJ_MODE_F_BASELINE |
        UBJ_MODE_F_BENCH_ASYNC,
        { true, UBJ_MODE_DATA_ORDERED, UBJ_MODE_META_PREFIX, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_ORDERED, &ubj_mode_ordered },
    { { "journal", "journal: data and metadata through the log (docs/JOURNAL.md)",
        REG_JOURNAL_OPTIONS, UBJ_MODE_NEEDS_LOG,
        UBJ_MODE_F_CRASH_DEFAULT | UBJ_MODE_F_HEADLINE | UBJ_MODE_F_BASELINE |
        UBJ_MODE_F_BENCH_ASYNC,
        { true, UBJ_MODE_DATA_EXACT, UBJ_MODE_META_PREFIX, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_JOURNAL, &ubj_mode_journal },
    { { "writeback", "journal: metadata only, data unordered (docs/JOURNAL.md)",
        REG_JOURNAL_OPTIONS, UBJ_MODE_NEEDS_LOG, 0,
        { true, UBJ_MODE_DATA_UNSPECIFIED, UBJ_MODE_META_PREFIX, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_WRITEBACK, &ubj_mode_writeback },
    { { "sync", "no journal: ordering-critical metadata written synchronously "
        "(Ganger & Patt's conventional scheme; docs/SYNC.md)",
        "", UBJ_MODE_NEEDS_NOTHING, 0,
        { true, UBJ_MODE_DATA_UNSPECIFIED, UBJ_MODE_META_INTEGRITY, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_SYNC, &ubj_mode_sync },
#if UBJ_TEST_HOOKS
    { { "trial", "test-only: proves a mode is one file and one entry",
        "", UBJ_MODE_NEEDS_NOTHING, UBJ_MODE_F_TEST,
        { false, UBJ_MODE_DATA_EXACT, UBJ_MODE_META_NONE, UBJ_MODE_FSYNC_ALL } },
      UBJ_FMT_MODE_TEST_MIN, &ubj_mode_trial },   /* src/txn/trial.c */
#endif
};
#define REG_N (sizeof reg_modes / sizeof reg_modes[0])

/* ubj_mode_count -- the number of modes of this build. */
size_t ubj_mode_count(void)
{
    return REG_N;
}

/* ubj_mode_at -- mode number i in registry order, or NULL. */
const struct ubj_mode_info *ubj_mode_at(size_t i)
{
    return i < REG_N ? &reg_modes[i].info : NULL;
}

/* ubj_mode_lookup -- the mode called `name`, or NULL. */
const struct ubj_mode_info *ubj_mode_lookup(const char *name)
{
    const struct ubj_mode_entry *e = ubj_registry_by_name(name);
    return e ? &e->info : NULL;
}

/* reg_rank -- the group of mode m in `order` (lower groups first). */
static unsigned reg_rank(const struct ubj_mode_info *m, enum ubj_mode_order order)
{
    switch (order) {
    case UBJ_MODE_ORDER_CONSISTENT_FIRST:
        return m->promises.crash_consistent ? 0 : 1;
    case UBJ_MODE_ORDER_NEEDS:
        return (unsigned)m->needs;
    case UBJ_MODE_ORDER_BASELINES_FIRST:
        return (m->flags & UBJ_MODE_F_BASELINE) ? 0 : (m->flags & UBJ_MODE_F_SUBJECT) ? 1 : 2;
    default:
        return 0;
    }
}

#define REG_MAX_RANK 3u

/* ubj_mode_list -- the modes with every flag of `flags`, in `order`. */
size_t ubj_mode_list(unsigned flags, enum ubj_mode_order order,
                     const struct ubj_mode_info **v, size_t max)
{
    size_t n = 0;
    for (unsigned r = 0; r < REG_MAX_RANK; r++)
        for (size_t i = 0; i < REG_N; i++) {
            const struct ubj_mode_info *m = &reg_modes[i].info;
            if ((m->flags & flags) != flags || reg_rank(m, order) != r)
                continue;
            if (n < max)
                v[n] = m;
            n++;
        }
    return n;
}

/* ubj_registry_by_name -- the mode called `name`, or NULL. */
const struct ubj_mode_entry *ubj_registry_by_name(const char *name)
{
    for (size_t i = 0; name != NULL && i < REG_N; i++)
        if (strcmp(reg_modes[i].info.name, name) == 0)
            return &reg_modes[i];
    return NULL;
}

/* ubj_registry_by_code -- the mode of on-disk code `code`, or NULL. */
const struct ubj_mode_entry *ubj_registry_by_code(uint32_t code)
{
    for (size_t i = 0; i < REG_N; i++)
        if (reg_modes[i].code == code)
            return &reg_modes[i];
    return NULL;
}

/* ubj_registry_by_ops -- the mode whose operations are `ops`, or NULL. */
const struct ubj_mode_entry *ubj_registry_by_ops(const struct ubj_mode_ops *ops)
{
    for (size_t i = 0; ops != NULL && i < REG_N; i++)
        if (reg_modes[i].ops == ops)
            return &reg_modes[i];
    return NULL;
}

/* ubj_mode_find -- the operations of the mode named `name`, or NULL. */
const struct ubj_mode_ops *ubj_mode_find(const char *name)
{
    const struct ubj_mode_entry *e = ubj_registry_by_name(name);
    return e ? e->ops : NULL;
}
