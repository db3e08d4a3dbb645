/*
 * unit/registry.c -- the mode registry (src/txn/registry.c) and its public
 * view (include/ubjfs/mode.h).
 *
 * Checks: names and on-disk codes are unique; each entry's ops are a
 * version-1 table named as the entry; the codes of the released modes keep
 * their on-disk values (docs/FORMAT.md); test-only entries have test codes
 * and the flag, and exist only in a UBJ_TEST_HOOKS build; lookups by name,
 * code and ops agree and refuse NULL and unknown keys; ubj_mode_at stops
 * at the count; ubj_mode_list keeps every order's groups, counts past a
 * cut list, and filters by flags; the standard sets are not empty (one
 * ratio numerator, at least one denominator, a crashtest default).
 */
#include "testutil.h"
#include <string.h>
#include "txn/registry.h"

#if UBJ_TEST_HOOKS
#define T_HOOKS 1
#else
#define T_HOOKS 0
#endif

/* every entry: unique name and code; ops named as the entry. */
static void test_entries(void **state)
{
    (void)state;
    size_t n = ubj_mode_count();
    assert_true(n >= 5);
    for (size_t i = 0; i < n; i++) {
        const struct ubj_mode_info *m = ubj_mode_at(i);
        assert_non_null(m);
        const struct ubj_mode_entry *e = ubj_registry_by_name(m->name);
        assert_ptr_equal(&e->info, m);
        assert_non_null(e->ops);
        assert_int_equal(e->ops->version, UBJ_MODE_OPS_VERSION);
        assert_string_equal(e->ops->name, m->name);
        assert_ptr_equal(ubj_registry_by_code(e->code), e);
        assert_ptr_equal(ubj_registry_by_ops(e->ops), e);
        assert_ptr_equal(ubj_mode_find(m->name), e->ops);
        assert_non_null(m->help);
        assert_non_null(m->options);
        bool test = (m->flags & UBJ_MODE_F_TEST) != 0;
        assert_int_equal(test, e->code >= UBJ_FMT_MODE_TEST_MIN);
        assert_true(!test || T_HOOKS);
        for (size_t j = 0; j < i; j++) {
            const struct ubj_mode_entry *o = ubj_registry_by_name(ubj_mode_at(j)->name);
            assert_true(strcmp(o->info.name, m->name) != 0);
            assert_true(o->code != e->code);
        }
    }
    assert_null(ubj_mode_at(n));
}

/* the released modes keep their on-disk codes. */
static void test_codes(void **state)
{
    (void)state;
    static const struct { const char *name; uint32_t code; } want[] = {
        { "none", 0 }, { "ubj", 1 }, { "ordered", 2 }, { "journal", 3 }, { "writeback", 4 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_int_equal(ubj_registry_by_name(want[i].name)->code, want[i].code);
#if UBJ_TEST_HOOKS
    assert_int_equal(ubj_registry_by_name("trial")->code, UBJ_FMT_MODE_TEST_MIN);
#else
    assert_null(ubj_mode_lookup("trial"));
#endif
}

/* unknown and NULL keys. */
static void test_unknown(void **state)
{
    (void)state;
    assert_null(ubj_mode_lookup(NULL));
    assert_null(ubj_mode_lookup("nosuchmode"));
    assert_null(ubj_mode_lookup("UBJ"));           /* case-sensitive */
    assert_null(ubj_registry_by_name(NULL));
    assert_null(ubj_registry_by_code(6));
    assert_null(ubj_registry_by_ops(NULL));
    assert_null(ubj_mode_find(NULL));
}

/* l_rank -- the group of m in order o, as mode.h defines the orders. */
static unsigned l_rank(const struct ubj_mode_info *m, enum ubj_mode_order o)
{
    switch (o) {
    case UBJ_MODE_ORDER_CONSISTENT_FIRST: return !m->promises.crash_consistent;
    case UBJ_MODE_ORDER_NEEDS: return (unsigned)m->needs;
    case UBJ_MODE_ORDER_BASELINES_FIRST:
        return (m->flags & UBJ_MODE_F_BASELINE) ? 0 : (m->flags & UBJ_MODE_F_SUBJECT) ? 1 : 2;
    default: return 0;
    }
}

/* every order lists every mode once, groups ascending; cut lists count on. */
static void test_list(void **state)
{
    (void)state;
    size_t n = ubj_mode_count();
    const struct ubj_mode_info *v[32];
    for (int o = UBJ_MODE_ORDER_REGISTRY; o <= UBJ_MODE_ORDER_BASELINES_FIRST; o++) {
        assert_int_equal(ubj_mode_list(0, (enum ubj_mode_order)o, v, 32), n);
        for (size_t i = 0; i < n; i++) {
            assert_ptr_equal(ubj_mode_lookup(v[i]->name), v[i]);
            if (i > 0)
                assert_true(l_rank(v[i - 1], (enum ubj_mode_order)o) <=
                            l_rank(v[i], (enum ubj_mode_order)o));
            for (size_t j = 0; j < i; j++)
                assert_ptr_not_equal(v[j], v[i]);
        }
    }
    ubj_mode_list(0, UBJ_MODE_ORDER_REGISTRY, v, 32);
    for (size_t i = 0; i < n; i++)
        assert_ptr_equal(v[i], ubj_mode_at(i));
    const struct ubj_mode_info *one[1] = { NULL };
    assert_int_equal(ubj_mode_list(0, UBJ_MODE_ORDER_REGISTRY, one, 1), n);
    assert_ptr_equal(one[0], ubj_mode_at(0));
    assert_int_equal(ubj_mode_list(0, UBJ_MODE_ORDER_REGISTRY, NULL, 0), n);
    assert_int_equal(ubj_mode_list(UBJ_MODE_F_SUBJECT, UBJ_MODE_ORDER_REGISTRY, v, 32), 1);
    assert_true(ubj_mode_list(UBJ_MODE_F_BASELINE, UBJ_MODE_ORDER_REGISTRY, v, 32) >= 1);
    size_t k = ubj_mode_list(UBJ_MODE_F_CRASH_DEFAULT, UBJ_MODE_ORDER_REGISTRY, v, 32);
    assert_true(k >= 1);
    for (size_t i = 0; i < k; i++)
        assert_true(v[i]->flags & UBJ_MODE_F_CRASH_DEFAULT);
}

/* main -- run the suite. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_codes),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
