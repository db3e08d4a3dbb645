/*
 * events.c -- the semantic events and their checker (issue 16;
 * src/txn/mode.h, src/txn/evcheck.c): a representative workload (create,
 * write, truncate, mkdir, rename, link, unlink, symlink, xattr, fallocate,
 * a big directory with splits and merges, a file whose extent tree is
 * deeper than one index level, an orphan) runs with the checker on
 * (UBJ_CHECK_EVENTS=1) in every mode and leaves no uncovered byte; a
 * dropped event (UBJ_TEST_DROP_EVENT) is caught with a one-line abort.
 * Test builds only (UBJ_TEST_HOOKS): skipped otherwise.
 */
#include "testutil.h"
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ubjfs/nvm.h"
#include "fs/format.h"
#include "txn/evcheck.h"

#define EV_BLOCKS 16384u

static const char *const ev_modes[] = { "none", "ordered", "journal",
                                        "writeback", "ubj" };

/* ev_mount -- a fresh RAM image formatted and mounted in `mode`. */
static void ev_mount(const char *mode, const char *region, struct ubj_bdev **dev,
                     struct ubj_fs **fs)
{
    assert_int_equal(ubj_bdev_ram_create(EV_BLOCKS, dev), 0);
    struct ubj_format_opts fo = { .mode = mode, .flags = UBJ_FORMAT_ZEROED };
    assert_ok(ubj_format(*dev, &fo));
    bool nvm = strcmp(mode, "ubj") == 0;
    if (nvm)
        unlink(region);
    struct ubj_config cfg = { .mode = mode, .cache_blocks = 512,
                              .flags = UBJ_MOUNT_NO_TIMER,
                              .nvm_path = nvm ? region : NULL,
                              .nvm_flags = nvm ? UBJ_NVM_FORMAT : 0 };
    assert_ok(ubj_mount(*dev, &cfg, fs));
}

/* ev_names -- n names "dNNNNN" in dir `d`: create (add) or unlink. */
static void ev_names(struct ubj_fs *fs, const char *d, int n, bool add)
{
    char p[64];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/name-with-some-length-%05d", d, i);
        if (add)
            assert_ok(tpath_create(fs, p, 0644, NULL));
        else
            assert_ok(tpath_unlink(fs, p));
    }
}

/* ev_deep_file -- a file of every other block: more extents than the
 * root and one level of leaves hold (7 * 254), so depth 2; then cut. */
static void ev_deep_file(struct ubj_fs *fs)
{
    static uint8_t blk[4096];
    memset(blk, 0x5a, sizeof blk);
    assert_ok(tpath_create(fs, "/deep", 0644, NULL));
    for (uint32_t i = 0; i < 1800; i++)
        assert_rc(tpath_write(fs, "/deep", blk, sizeof blk, (off_t)i * 8192),
                  (ssize_t)sizeof blk);
    assert_ok(tpath_truncate(fs, "/deep", 8192 * 300));
    assert_ok(tpath_truncate(fs, "/deep", 8192 * 3));
    assert_ok(tpath_unlink(fs, "/deep"));
}

/* ev_workload -- every kind of metadata change, in one mount. */
static void ev_workload(struct ubj_fs *fs)
{
    char buf[20000];
    memset(buf, 'x', sizeof buf);
    struct ubj_stat st;
    assert_ok(tpath_create(fs, "/a", 0644, &st));
    assert_rc(tpath_write(fs, "/a", buf, sizeof buf, 0), (ssize_t)sizeof buf);
    assert_ok(tpath_truncate(fs, "/a", 5000));
    assert_ok(tpath_truncate(fs, "/a", 70000));
    assert_ok(tpath_mkdir(fs, "/d", 0755, NULL));
    assert_ok(tpath_mkdir(fs, "/d/e", 0755, NULL));
    assert_ok(tpath_rename(fs, "/a", "/d/b", 0));
    assert_ok(tpath_link(fs, "/d/b", "/c"));
    assert_ok(tpath_create(fs, "/t", 0644, NULL));
    assert_ok(tpath_rename(fs, "/c", "/t", 0));        /* over a target */
    assert_ok(tpath_rename(fs, "/d/e", "/e", 0));      /* a directory moves */
    assert_ok(tpath_symlink(fs, "/d/b", "/s"));
    char longt[300];
    memset(longt, 'L', sizeof longt - 1);
    longt[sizeof longt - 1] = 0;
    assert_ok(tpath_symlink(fs, longt, "/sl"));
    ubj_ino_t ino = tpath_ino(fs, "/t");
    assert_ok(ubj_setxattr(fs, ino, "user.k", "v1", 2, 0));
    assert_ok(ubj_setxattr(fs, ino, "user.k", "value2", 6, 0));
    assert_ok(ubj_setxattr(fs, ino, "user.j", "w", 1, 0));
    assert_ok(ubj_removexattr(fs, ino, "user.k"));
    assert_ok(ubj_removexattr(fs, ino, "user.j"));
    assert_ok(ubj_setxattr(fs, ino, "user.z", "keep", 4, 0));
    assert_ok(ubj_fallocate(fs, ino, 0, 0, 65536));
    assert_ok(tpath_unlink(fs, "/d/b"));
    assert_ok(tpath_rmdir(fs, "/e"));
    /* an orphan: open, unlink, write, release */
    assert_ok(tpath_create(fs, "/o", 0644, &st));
    assert_ok(ubj_open(fs, st.ino, 0));
    assert_ok(tpath_unlink(fs, "/o"));
    assert_rc(ubj_pwrite(fs, st.ino, buf, 9000, 0), 9000);
    assert_ok(ubj_release(fs, st.ino));
    /* a big directory: splits, then merges */
    assert_ok(tpath_mkdir(fs, "/big", 0755, NULL));
    ev_names(fs, "/big", 1500, true);
    ev_names(fs, "/big", 1500, false);
    assert_ok(tpath_rmdir(fs, "/big"));
    ev_deep_file(fs);
    assert_ok(tpath_unlink(fs, "/t"));
}

/* test_workload_every_mode -- no uncovered byte, no wrong event. */
static void test_workload_every_mode(void **state)
{
    (void)state;
    char region[256];
    snprintf(region, sizeof region, "/tmp/ubjt-events-%d.nvm", (int)getpid());
    for (size_t m = 0; m < sizeof ev_modes / sizeof *ev_modes; m++) {
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        ev_mount(ev_modes[m], region, &dev, &fs);
        ev_workload(fs);
        assert_ok(ubj_unmount(fs));
        assert_int_equal(ubj_test_check(dev, 0, NULL), UBJ_CHECK_CLEAN);
        ubj_bdev_destroy(dev);
    }
    unlink(region);
}

/* ev_child_status -- run the workload in a child with the checker on and
 * event `drop` dropped; its wait status and first stderr line. */
static int ev_child_status(const char *mode, const char *drop, char *line, size_t sz)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], 2);
        close(pfd[0]);
        setenv("UBJ_TEST_DROP_EVENT", drop, 1);
        char region[256];
        snprintf(region, sizeof region, "/tmp/ubjt-evdrop-%d.nvm", (int)getpid());
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        ev_mount(mode, region, &dev, &fs);
        ev_workload(fs);
        unlink(region);
        _exit(0);
    }
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    line[0] = 0;
    char tmp[600];
    while (fgets(tmp, sizeof tmp, f))      /* keep the checker's line */
        if (strstr(tmp, "ubjfs event check:") && !line[0])
            snprintf(line, sz, "%s", tmp);
    fclose(f);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

/* ---- what the events say (recorded through ubj_evcheck_tap) ---------- */

#define TAP_MAX 20000u
struct tap_ev {
    enum ubj_event_type type;
    uint64_t blkno, ino, a, b;
    char name[64];                    /* "" when the event has none */
};
static struct tap_ev tap_log[TAP_MAX];
static unsigned tap_n;

/* tap_record -- ubj_evcheck_tap: keep the event (names copied) */
static void tap_record(const struct ubj_event *ev)
{
    if (tap_n == TAP_MAX)
        return;
    struct tap_ev *t = &tap_log[tap_n++];
    *t = (struct tap_ev){ .type = ev->type, .blkno = ev->blkno, .ino = ev->ino,
                          .a = ev->a, .b = ev->b };
    if (ev->name != NULL && ev->namelen < sizeof t->name) {
        memcpy(t->name, ev->name, ev->namelen);
        t->name[ev->namelen] = 0;
    }
}

/* tap_count -- events of `type` naming `name` (NULL: any) */
static unsigned tap_count(enum ubj_event_type type, const char *name, struct tap_ev **last)
{
    unsigned n = 0;
    for (unsigned i = 0; i < tap_n; i++)
        if (tap_log[i].type == type && (name == NULL || strcmp(tap_log[i].name, name) == 0)) {
            n++;
            if (last)
                *last = &tap_log[i];
        }
    return n;
}

/* test_event_contents -- in every mode, a directory grown past several
 * leaf splits and shrunk again: every name added has exactly one
 * DIRENT_ADD naming its inode and type (also a name whose insert split
 * the leaf), every name removed a DIRENT_REMOVE naming its inode; every
 * directory NODE_INIT names the directory; every DIR_SPLIT's b is a node
 * a NODE_INIT made, with the split's key in a. */
static void test_event_contents(void **state)
{
    (void)state;
    for (size_t m = 0; m < sizeof ev_modes / sizeof *ev_modes; m++) {
        struct ubj_bdev *dev;
        struct ubj_fs *fs;
        char region[256];
        snprintf(region, sizeof region, "/tmp/ubjt-evtap-%d.nvm", (int)getpid());
        ev_mount(ev_modes[m], region, &dev, &fs);
        assert_ok(tpath_mkdir(fs, "/g", 0755, NULL));
        ubj_ino_t dino = tpath_ino(fs, "/g");
        tap_n = 0;
        ubj_evcheck_tap = tap_record;
        ev_names(fs, "/g", 400, true);
        unsigned adds = tap_n;
        ev_names(fs, "/g", 400, false);
        ubj_evcheck_tap = NULL;
        assert_true(tap_n < TAP_MAX);
        unsigned splits = 0;
        for (unsigned i = 0; i < adds; i++)
            if (tap_log[i].type == UBJ_EV_DIR_SPLIT) {
                splits++;
                bool made = false;
                for (unsigned k = 0; k < i && !made; k++)
                    made = tap_log[k].type == UBJ_EV_NODE_INIT &&
                           tap_log[k].blkno == tap_log[i].b;
                if (!made || tap_log[i].a == 0 || tap_log[i].ino != dino)
                    fail_msg("mode %s: DIR_SPLIT (a %llu, b %llu) names no new node",
                             ev_modes[m], (unsigned long long)tap_log[i].a,
                             (unsigned long long)tap_log[i].b);
            } else if (tap_log[i].type == UBJ_EV_NODE_INIT && tap_log[i].a == UBJ_MAGIC_DIR &&
                       tap_log[i].ino != dino) {
                fail_msg("mode %s: a directory NODE_INIT names inode %llu, not %llu",
                         ev_modes[m], (unsigned long long)tap_log[i].ino,
                         (unsigned long long)dino);
            }
        assert_true(splits >= 3);        /* the leaf split, more than once */
        /* each name: one DIRENT_ADD with its inode and type, one removal */
        char p[64];
        for (int i = 0; i < 400; i++) {
            snprintf(p, sizeof p, "name-with-some-length-%05d", i);
            struct tap_ev *e = NULL;
            unsigned n = 0;
            for (unsigned k = 0; k < adds; k++)
                if (tap_log[k].type == UBJ_EV_DIRENT_ADD && strcmp(tap_log[k].name, p) == 0) {
                    n++;
                    e = &tap_log[k];
                }
            if (n != 1)
                fail_msg("mode %s: %s: %u DIRENT_ADDs, want 1", ev_modes[m], p, n);
            if (e->ino != dino || e->a == 0 || e->b != 8 /* DT_REG */)
                fail_msg("mode %s: %s: DIRENT_ADD dir %llu inode %llu type %llu", ev_modes[m],
                         p, (unsigned long long)e->ino, (unsigned long long)e->a,
                         (unsigned long long)e->b);
            struct tap_ev *r = NULL;
            if (tap_count(UBJ_EV_DIRENT_REMOVE, p, &r) != 1 || r->a != e->a || r->b != 8)
                fail_msg("mode %s: %s: no DIRENT_REMOVE naming inode %llu", ev_modes[m], p,
                         (unsigned long long)e->a);
        }
        assert_ok(ubj_unmount(fs));
        ubj_bdev_destroy(dev);
        unlink(region);
    }
}

/* test_dropped_event_caught -- each dropped type aborts naming the block. */
static void test_dropped_event_caught(void **state)
{
    (void)state;
    static const char *const drops[] = { "dirent_add", "link_count",
        "inode_init", "block_alloc", "ext_map", "dirent_remove", "xattr",
        "orphan_link", "dir_split" };
    for (size_t m = 0; m < sizeof ev_modes / sizeof *ev_modes; m++)
        for (size_t i = 0; i < sizeof drops / sizeof *drops; i++) {
            if (m > 0 && i > 0)
                continue;       /* every type in one mode, one in each */
            char line[600];
            int st = ev_child_status(ev_modes[m], drops[i], line, sizeof line);
            if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT || !strstr(line, "block "))
                fail_msg("mode %s, %s dropped: not caught (status %d, \"%s\")",
                         ev_modes[m], drops[i], st, line);
        }
}

int main(void)
{
#if !UBJ_TEST_HOOKS
    fprintf(stderr, "events: a test build only (UBJ_TEST_HOOKS)\n");
    return 77;
#endif
    setenv("UBJ_CHECK_EVENTS", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_every_mode),
        cmocka_unit_test(test_event_contents),
        cmocka_unit_test(test_dropped_event_caught),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
