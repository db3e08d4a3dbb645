/*
 * tests/unit/sync_order.c -- mode sync (src/txn/sync.c) writes its
 * ordering-critical metadata in the order of seed 003's rules: a
 * workload of every metadata operation (creates that split directory
 * leaves and the root, mkdir, hard links, renames within and across
 * directories and over a target, unlinks of open and closed files,
 * rmdir, a fragmented file whose extent tree splits and grows, truncates
 * that free it again, xattrs) runs on a tiny cache over a write recorder,
 * never synced; then EVERY cut of the recorded writes (the write-through
 * model: a power cut between any two writes) is checked with fsck -n.
 * A cut may leak -- fsck's "leak: " class (ubj_check_ex's corrupt count
 * is 0): blocks or inodes marked used that no file reaches, a link count
 * above the names, counts above what the tree holds, a split's stale copy,
 * an empty node a truncate left, a moved directory's R3 window -- but
 * nothing else: no name of an uninitialised inode, no block in two files,
 * no broken tree, nothing marked free that a file uses.
 * The names the workload keeps through a rename (at least one of old and
 * new) are checked on every cut too.
 *
 * Each broken variant (UBJ_SYNC_BREAK_*) must make some cut fail: the
 * test runs them and expects failures, so the test could fail.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"
#include "txn/sync.h"
#include "ubjfs/bdev.h"
#include "ubjfs/ubjfs.h"

#define SO_BLOCKS 8192u
#define SO_BUFS 48u

/* What fsck -n said of one cut beyond leaks (its "leak: " lines). */
struct so_lines {
    int other;
    char first[256];
};

static void so_report(void *ctx, const char *line)
{
    struct so_lines *l = ctx;
    if (strncmp(line, "note:", 5) == 0 || strncmp(line, "leak: ", 6) == 0)
        return;
    if (getenv("SO_VERBOSE"))
        printf("#   %s\n", line);
    if (l->other++ == 0)
        snprintf(l->first, sizeof l->first, "%s", line);
}

/* so_put -- write n bytes of pattern into path (created if missing). */
static void so_put(struct ubj_fs *fs, const char *path, size_t n, uint64_t seed)
{
    char *buf = malloc(n);
    assert_non_null(buf);
    tpattern_fill(buf, n, seed, 0);
    assert_ok(tpath_put(fs, path, buf, n));
    free(buf);
}

#define SO_SYNCED 70   /* names made and synced before the splits */

/* so_kept -- name i of /d is synced and never removed or renamed after. */
static bool so_kept(int i)
{
    return i < SO_SYNCED && i > 3 && !(i >= 10 && i < 150 && (i - 10) % 3 == 0);
}

/* so_workload -- every metadata operation; one sync after the first
 * SO_SYNCED creates (*synced: the writes recorded by then). */
static void so_workload(struct ubj_fs *fs, struct ubj_bdev *rec, uint64_t *synced)
{
    char p[64], q[64];
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/e", 0755, NULL));
    for (int i = 0; i < 160; i++) {          /* leaf and root splits */
        if (i == SO_SYNCED) {
            assert_ok(ubj_sync(fs));
            *synced = ubj_bdev_record_writes(rec);
        }
        snprintf(p, sizeof p, "/d/file-with-a-long-name-%03d", i);
        assert_ok(tpath_create(fs, p, 0644, NULL));
    }
    so_put(fs, "/d/file-with-a-long-name-007", 9000, 7);
    assert_ok(tpath_mkdir(fs, "/d/sub", 0755, NULL));
    assert_ok(tpath_link(fs, "/d/file-with-a-long-name-007", "/e/hard"));
    assert_ok(tpath_rename(fs, "/d/file-with-a-long-name-001", "/d/renamed", 0));
    assert_ok(tpath_rename(fs, "/d/file-with-a-long-name-002", "/e/moved", 0));
    assert_ok(tpath_rename(fs, "/d/file-with-a-long-name-003", "/e/hard", 0));
    assert_ok(tpath_rename(fs, "/d/sub", "/e/sub", 0));
    /* a fragmented file: every other block, so its extents split */
    struct ubj_stat st;
    assert_ok(tpath_create(fs, "/e/frag", 0644, &st));
    char blk[4096];
    for (int i = 0; i < 1200; i += 2) {
        tpattern_fill(blk, sizeof blk, (uint64_t)i, 0);
        assert_rc(ubj_pwrite(fs, st.ino, blk, sizeof blk, (uint64_t)i * 4096), 4096);
    }
    for (int i = 10; i < 150; i += 3) {
        snprintf(p, sizeof p, "/d/file-with-a-long-name-%03d", i);
        assert_ok(tpath_unlink(fs, p));
    }
    /* an open file unlinked: the orphan list */
    so_put(fs, "/e/held", 5000, 9);
    assert_ok(tpath_stat(fs, "/e/held", &st));
    assert_ok(ubj_open(fs, st.ino, 0));
    assert_ok(tpath_unlink(fs, "/e/held"));
    assert_ok(ubj_setxattr(fs, st.ino, "user.a", "1", 1, 0));
    assert_ok(ubj_release(fs, st.ino));
    assert_ok(tpath_truncate(fs, "/e/frag", 300 * 4096));
    assert_ok(tpath_rmdir(fs, "/e/sub"));
    for (int i = 0; i < 20; i++) {
        snprintf(p, sizeof p, "/e/x%02d", i);
        snprintf(q, sizeof q, "/d/y%02d", i);
        assert_ok(tpath_create(fs, p, 0644, NULL));
        assert_ok(tpath_rename(fs, p, q, 0));
    }
    assert_ok(tpath_truncate(fs, "/e/frag", 0));
}

/* so_names_kept -- the renamed names: old or new, never neither; after
 * the sync (`synced`), every synced name that stays. */
static const char *so_names_kept(struct ubj_fs *fs, bool synced)
{
    static char lost[64];
    struct ubj_stat st0;
    for (int i = 0; synced && i < SO_SYNCED; i++) {
        snprintf(lost, sizeof lost, "/d/file-with-a-long-name-%03d", i);
        if (so_kept(i) && tpath_stat(fs, lost, &st0) != 0) {
            if (getenv("SO_VERBOSE"))
                printf("#   %s: %s\n", lost, ubj_errormsg());
            return lost;
        }
    }
    static const char *const pairs[][2] = {
        { "/d/file-with-a-long-name-001", "/d/renamed" },
        { "/d/file-with-a-long-name-002", "/e/moved" },
    };
    struct ubj_stat st;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        bool root = tpath_stat(fs, "/d", &st) == 0 && tpath_stat(fs, "/e", &st) == 0;
        if (!root)
            continue;   /* the mkdirs themselves not on the disk yet */
        if (tpath_stat(fs, pairs[i][0], &st) != 0 && tpath_stat(fs, pairs[i][1], &st) != 0)
            return pairs[i][1];
    }
    return NULL;
}

/* so_run -- the workload under `bits`; the cuts that failed (a broken
 * variant: stop at the first), and the first failure in why. */
static unsigned so_run(unsigned bits, char *why, size_t wn)
{
    struct ubj_bdev *ram, *rec, *img;
    assert_int_equal(ubj_bdev_ram_create(SO_BLOCKS, &ram), 0);
    struct ubj_format_opts fo = { .mode = "sync", .inodes = 1024,
                                  .flags = UBJ_FORMAT_ZEROED,
                                  .uuid = { 0x5e, 0xed, 3 } };   /* fixed hash seed */
    assert_ok(ubj_format(ram, &fo));
    assert_int_equal(ubj_bdev_record_create(ram, &rec), 0);
    struct ubj_config cfg = { .mode = "sync", .cache_blocks = SO_BUFS,
                              .commit_interval_ms = 3600u * 1000u };
    struct ubj_fs *fs;
    assert_ok(ubj_mount(rec, &cfg, &fs));
#if UBJ_TEST_HOOKS
    ubj_sync_test_break(bits);
#endif
    uint64_t synced = UINT64_MAX;
    so_workload(fs, rec, &synced);
#if UBJ_TEST_HOOKS
    ubj_sync_test_break(0);
#endif
    uint64_t n = ubj_bdev_record_writes(rec);
    if (getenv("SO_TRACE"))
        for (uint64_t i = 0; i < n; i++) {
            uint64_t b0;
            uint32_t cnt;
            const void *data;
            assert_int_equal(ubj_bdev_record_write_info(rec, i, &b0, &cnt, &data), 0);
            for (uint32_t j = 0; j < cnt; j++) {
                const uint8_t *d = (const uint8_t *)data + (size_t)j * 4096;
                printf("#w %llu blk %llu magic %08x nrec %u level %u used %u\n",
                       (unsigned long long)i, (unsigned long long)(b0 + j),
                       *(const uint32_t *)d, *(const uint16_t *)(d + 16),
                       *(const uint16_t *)(d + 18), *(const uint16_t *)(d + 20));
            }
        }
    assert_int_equal(ubj_bdev_ram_create(SO_BLOCKS, &img), 0);
    unsigned bad = 0;
    why[0] = '\0';
    for (uint64_t k = 0; k <= n; k++) {
        assert_int_equal(ubj_bdev_record_crash_cut(rec, k, NULL, 0, img), 0);
        struct so_lines l = { 0 };
        struct ubj_check_result cr;
        int rc = ubj_check_ex(img, 0, so_report, &l, &cr);
        if (cr.corrupt > 0 && l.other == 0) {   /* counted past the lines shown */
            l.other = (int)cr.corrupt;
            snprintf(l.first, sizeof l.first, "%lu corrupt (not shown)", cr.corrupt);
        }
        const char *lost = NULL;
        struct ubj_fs *cfs;
        /* a small cache: the default 64 MiB one is allocated per cut, and
         * under ASan that was about 80% of this test (291 s; 62 s now) */
        struct ubj_config rcfg = { .mode = "sync", .cache_blocks = 64,
                                   .flags = UBJ_MOUNT_RDONLY };
        if (l.other == 0 && rc != UBJ_CHECK_OPERROR && ubj_mount(img, &rcfg, &cfs) == 0) {
            lost = so_names_kept(cfs, k >= synced);
            (void)ubj_unmount(cfs);
        }
        if (getenv("SO_VERBOSE") && (l.other > 0 || lost))
            printf("#   ^ cut %llu\n", (unsigned long long)k);
        if (l.other > 0 || rc == UBJ_CHECK_OPERROR || lost) {
            if (bad++ == 0)
                snprintf(why, wn, "cut %llu of %llu: %s%s", (unsigned long long)k,
                         (unsigned long long)n, lost ? "name gone: " : "",
                         lost ? lost : l.first);
            if (bits)
                break;
        }
    }
    ubj_bdev_destroy(img);
    (void)ubj_unmount(fs);   /* the recording is done: only to free it */
    ubj_bdev_destroy(rec);
    return bad;
}

/* test_cuts -- every cut of the real mode is damage-free. */
static void test_cuts(void **state)
{
    (void)state;
    char why[400];
    unsigned bad = so_run(0, why, sizeof why);
    if (bad)
        fail_msg("mode sync: %u cuts damaged; first: %s", bad, why);
}

/* test_broken -- each broken variant damages some cut. */
static void test_broken(void **state)
{
    (void)state;
#if !UBJ_TEST_HOOKS
    skip();   /* the broken variants are compiled into test builds only */
#else
    static const struct { unsigned bits; const char *name; } v[] = {
        { UBJ_SYNC_BREAK_INIT, "sync-no-init" },
        { UBJ_SYNC_BREAK_NULLIFY, "sync-no-nullify" },
        { UBJ_SYNC_BREAK_RENAME, "sync-no-rename" },
        { UBJ_SYNC_BREAK_SPLIT, "sync-no-split" },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char why[400];
        unsigned bad = so_run(v[i].bits, why, sizeof why);
        printf("# %s: %u cuts damaged%s%s\n", v[i].name, bad, bad ? "; first: " : "",
               why);
        if (bad == 0)
            fail_msg("broken variant %s not caught", v[i].name);
    }
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuts),
        cmocka_unit_test(test_broken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
