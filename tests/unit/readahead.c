/*
 * unit/readahead.c -- src/fs/readahead.c, the read-ahead window engine,
 * over a simulated page cache (a cached bit and a marker bit per page;
 * submit marks pages cached and logs what it was asked).  Each test feeds
 * read calls as do_generic_file_read does (fs_ra_page per page, then
 * fs_ra_read_done) and compares the submitted windows with sequences
 * computed by hand from Linux's rules after both 2013 changes
 * (docs/READAHEAD.md has the same sequences in prose): the sequential ramp-up x4 then x2, a 128 KiB
 * call's merged first window, the end of file, small random reads read
 * exactly, interleaved streams (context read-ahead and the marker path),
 * POSIX_FADV_RANDOM, the OFF policies, and linux-2013's one difference --
 * the signed sequential-miss test that turns a backward random read into
 * a 4-page window.  A wrong rule changes a window and fails the test.
 */
#include "testutil.h"

#include "fs/readahead.h"

#define NP 2048u     /* simulated file pages */
#define LOGMAX 64

struct sim {
    uint8_t cached[NP];
    uint8_t marker[NP];
    uint64_t npages;            /* the file's size in pages */
    struct { uint64_t start, n, marker; } log[LOGMAX];
    unsigned nlog;
    unsigned reads;             /* pages the caller read itself */
};

static int sim_cached(void *ctx, uint64_t p)
{
    struct sim *s = ctx;
    assert_true(p < NP);
    return s->cached[p];
}

static int sim_take_marker(void *ctx, uint64_t p)
{
    struct sim *s = ctx;
    assert_true(p < NP);
    int m = s->marker[p];
    s->marker[p] = 0;
    return m;
}

static int sim_submit(void *ctx, uint64_t start, uint32_t n, uint64_t marker)
{
    struct sim *s = ctx;
    assert_true(n >= 1 && start + n <= s->npages);
    assert_true(s->nlog < LOGMAX);
    s->log[s->nlog].start = start;
    s->log[s->nlog].n = n;
    s->log[s->nlog].marker = marker;
    s->nlog++;
    if (marker != FS_RA_NO_MARKER) {
        assert_true(marker >= start && marker < start + n);   /* R2 */
        if (!s->cached[marker])
            s->marker[marker] = 1;   /* only a page this read brings in */
    }
    for (uint64_t p = start; p < start + n; p++)
        s->cached[p] = 1;
    return 0;
}

static const struct fs_ra_ops sim_ops = {
    .cached = sim_cached, .take_marker = sim_take_marker, .submit = sim_submit,
};

/* sim_read -- one read call of `pages` pages at page `first` (clipped to
 * the file), as do_generic_file_read drives the engine. */
static void sim_read(struct sim *s, struct fs_ra_state *ra, enum fs_ra_policy pol,
                     uint64_t first, uint64_t pages)
{
    uint64_t last = first + pages;
    if (last > s->npages)
        last = s->npages;
    for (uint64_t p = first; p < last; p++) {
        assert_int_equal(fs_ra_page(ra, pol, &sim_ops, s, p, last, s->npages), 0);
        if (!s->cached[p]) {
            s->cached[p] = 1;   /* no_cached_page: the caller's readpage */
            s->reads++;
        }
        if (pol == FS_RA_LINUX || pol == FS_RA_LINUX_2013)
            assert_true(ra->async_size <= ra->size && ra->size <= 2 * ra->ra_pages); /* R1 */
    }
    if (last > first)
        fs_ra_read_done(ra, first * 4096, (last - first) * 4096);
}

static struct sim *sim_new(uint64_t npages)
{
    struct sim *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    s->npages = npages;
    return s;
}

/* expect_log -- the submits since `from` were exactly `want` (triples of
 * start, count, marker; -1 for none). */
static void expect_log(const struct sim *s, unsigned from, const long long *want,
                       unsigned n)
{
    if (s->nlog - from != n) {
        for (unsigned i = from; i < s->nlog; i++)
            print_message("  got (%llu, %llu, %lld)\n", (unsigned long long)s->log[i].start,
                          (unsigned long long)s->log[i].n,
                          s->log[i].marker == FS_RA_NO_MARKER ? -1ll : (long long)s->log[i].marker);
        fail_msg("%u submits, want %u", s->nlog - from, n);
    }
    for (unsigned i = 0; i < n; i++) {
        const long long *w = want + 3 * i;
        uint64_t m = w[2] < 0 ? FS_RA_NO_MARKER : (uint64_t)w[2];
        if (s->log[from + i].start != (uint64_t)w[0] || s->log[from + i].n != (uint64_t)w[1] ||
            s->log[from + i].marker != m)
            fail_msg("submit %u: (%llu, %llu, %lld), want (%lld, %lld, %lld)", i,
                     (unsigned long long)s->log[from + i].start,
                     (unsigned long long)s->log[from + i].n,
                     s->log[from + i].marker == FS_RA_NO_MARKER ? -1ll
                                                                : (long long)s->log[from + i].marker,
                     w[0], w[1], w[2]);
    }
}

static void test_sizes(void **state)
{
    (void)state;
    /* get_init_ra_size: round up to a power of two, x4 if <= max/32, x2 if
     * <= max/4, else max */
    assert_int_equal(fs_ra_init_size(1, 32), 4);
    assert_int_equal(fs_ra_init_size(2, 32), 4);
    assert_int_equal(fs_ra_init_size(3, 32), 8);
    assert_int_equal(fs_ra_init_size(8, 32), 16);
    assert_int_equal(fs_ra_init_size(9, 32), 32);
    assert_int_equal(fs_ra_init_size(64, 32), 32);
    assert_int_equal(fs_ra_init_size(2, 64), 8);
    /* get_next_ra_size: x4 below max/16, else x2, at most max */
    assert_int_equal(fs_ra_next_size(1, 32), 4);
    assert_int_equal(fs_ra_next_size(2, 32), 4);
    assert_int_equal(fs_ra_next_size(4, 32), 8);
    assert_int_equal(fs_ra_next_size(16, 32), 32);
    assert_int_equal(fs_ra_next_size(32, 32), 32);
    assert_int_equal(fs_ra_next_size(3, 64), 12);
}

static void test_prev_pos(void **state)
{
    (void)state;
    struct fs_ra_state ra;
    fs_ra_init(&ra, 32);
    assert_int_equal(ra.prev_pos, -1);
    fs_ra_read_done(&ra, 0, 4096);       /* ends on a boundary: page 0, 0 */
    assert_int_equal(ra.prev_pos, 0);
    fs_ra_read_done(&ra, 0, 100);
    assert_int_equal(ra.prev_pos, 100);
    fs_ra_read_done(&ra, 4096, 8192);    /* pages 1-2: page 2, offset 0 */
    assert_int_equal(ra.prev_pos, 8192);
    fs_ra_read_done(&ra, 10, 4096);      /* ends at 4106: page 1, 10 */
    assert_int_equal(ra.prev_pos, 4106);
    fs_ra_read_done(&ra, 1 << 20, 0);    /* nothing read: unchanged */
    assert_int_equal(ra.prev_pos, 4106);
}

/* The sequential-miss test with the previous read on page 100. */
static void test_seq_miss_2013(void **state)
{
    (void)state;
    struct fs_ra_state ra;
    fs_ra_init(&ra, 32);
    assert_false(fs_ra_seq_miss(&ra, FS_RA_LINUX, 5));        /* no read yet */
    assert_false(fs_ra_seq_miss(&ra, FS_RA_LINUX_2013, 5));
    fs_ra_read_done(&ra, 100 * 4096, 4096);
    static const struct { uint64_t index; bool fixed, old; } t[] = {
        { 99, false, true }, { 100, true, true }, { 101, true, true },
        { 102, false, false }, { 0, false, true }, { 5000, false, false },
    };
    for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        assert_int_equal(fs_ra_seq_miss(&ra, FS_RA_LINUX, t[i].index), t[i].fixed);
        assert_int_equal(fs_ra_seq_miss(&ra, FS_RA_LINUX_2013, t[i].index), t[i].old);
        assert_false(fs_ra_seq_miss(&ra, FS_RA_OFF, t[i].index));
    }
}

/* 4 KiB sequential reads from page 0, max 32: the initial window of 4
 * (marker at 1), then x2 ramp-up (next_size: x4 only below max/16 = 2)
 * to the 32-page maximum, each window triggered by its marker. */
static void test_sequential(void **state)
{
    (void)state;
    for (int pol = FS_RA_LINUX; pol <= FS_RA_LINUX_2013; pol++) {
        struct sim *s = sim_new(1000);
        struct fs_ra_state ra;
        fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
        for (uint64_t p = 0; p < 100; p++)
            sim_read(s, &ra, (enum fs_ra_policy)pol, p, 1);
        static const long long want[] = {
            0, 4, 1,   4, 8, 4,   12, 16, 12,   28, 32, 28,   60, 32, 60,   92, 32, 92,
            124, 32, 124,
        };
        expect_log(s, 0, want, 7);
        assert_int_equal(s->reads, 0);   /* every page came from read-ahead */
        free(s);
    }
}

/* 128 KiB calls (32 pages) from page 0: the initial window is max and all
 * ahead, so readit merges the next one: 64 pages, marker at 32. */
static void test_big_calls(void **state)
{
    (void)state;
    struct sim *s = sim_new(1000);
    struct fs_ra_state ra;
    fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
    sim_read(s, &ra, FS_RA_LINUX, 0, 32);
    sim_read(s, &ra, FS_RA_LINUX, 32, 32);
    sim_read(s, &ra, FS_RA_LINUX, 64, 32);
    static const long long want[] = { 0, 64, 32,   64, 32, 64,   96, 32, 96 };
    expect_log(s, 0, want, 3);
    free(s);
}

/* A 10-page file: windows stop at its end, and a marker past it is none. */
static void test_eof(void **state)
{
    (void)state;
    struct sim *s = sim_new(10);
    struct fs_ra_state ra;
    fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
    for (uint64_t p = 0; p < 10; p++)
        sim_read(s, &ra, FS_RA_LINUX, p, 1);
    static const long long want[] = { 0, 4, 1,   4, 6, 4 };
    expect_log(s, 0, want, 2);
    /* the marker at 4 asked for [12, 28): past the end, nothing */
    assert_int_equal(ra.start, 12);
    free(s);
}

/* Random 4 KiB reads: 500, then 100 (backward), then 700 (forward).
 * linux reads each page as is; linux-2013 takes the backward one for a
 * sequential miss: a window of 4 with its marker, 3 pages read for
 * nothing -- the seed's loss on random reads. */
static void test_random_2013(void **state)
{
    (void)state;
    static const uint64_t seq[] = { 500, 100, 700 };
    static const long long want_fixed[] = { 500, 1, -1,   100, 1, -1,   700, 1, -1 };
    static const long long want_2013[] = { 500, 1, -1,   100, 4, 101,   700, 1, -1 };
    for (int pol = FS_RA_LINUX; pol <= FS_RA_LINUX_2013; pol++) {
        struct sim *s = sim_new(1000);
        struct fs_ra_state ra;
        fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
        for (unsigned i = 0; i < 3; i++)
            sim_read(s, &ra, (enum fs_ra_policy)pol, seq[i], 1);
        expect_log(s, 0, pol == FS_RA_LINUX ? want_fixed : want_2013, 3);
        free(s);
    }
}

/* Two interleaved 4 KiB streams on one open file: A from page 0, B from
 * 500, alternating.  B's third read finds two cached pages below it
 * (more than its request): context read-ahead, [502, 505) marker 504.
 * A's marker at 4 no longer matches the state (B's): the marker path
 * finds the first miss after 4 (12), size next_size(12 - 4 + 1 = 9) =
 * 18.  B's marker at 504: first miss 505, next_size(2) = 4. */
static void test_interleaved(void **state)
{
    (void)state;
    struct sim *s = sim_new(1000);
    struct fs_ra_state ra;
    fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
    for (uint64_t k = 0; k < 5; k++) {
        sim_read(s, &ra, FS_RA_LINUX, k, 1);
        sim_read(s, &ra, FS_RA_LINUX, 500 + k, 1);
    }
    static const long long want[] = {
        0, 4, 1,       /* A 0: initial */
        500, 1, -1,    /* B 500: random, as is */
        4, 8, 4,       /* A 1: marker, ramp-up */
        501, 1, -1,    /* B 501: one page of history is not more than req */
        502, 3, 504,   /* B 502: context */
        12, 18, 12,    /* A 4: marker without its state */
        505, 4, 505,   /* B 504: marker without its state */
    };
    expect_log(s, 0, want, 7);
    free(s);
}

/* POSIX_FADV_RANDOM: misses read exactly the call's pages, no window, no
 * marker, however sequential the calls. */
static void test_fadv_random(void **state)
{
    (void)state;
    struct sim *s = sim_new(1000);
    struct fs_ra_state ra;
    fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
    ra.random = true;
    for (uint64_t p = 0; p < 12; p += 4)
        sim_read(s, &ra, FS_RA_LINUX, p, 4);
    static const long long want[] = { 0, 4, -1,   4, 4, -1,   8, 4, -1 };
    expect_log(s, 0, want, 3);
    assert_int_equal(ra.size, 0);
    free(s);
}

/* off-page: one page per miss; off: the call's rest at once; neither
 * keeps a window nor sets a marker. */
static void test_off(void **state)
{
    (void)state;
    struct sim *s = sim_new(1000);
    struct fs_ra_state ra;
    fs_ra_init(&ra, FS_RA_DEFAULT_PAGES);
    sim_read(s, &ra, FS_RA_OFF_PAGE, 0, 3);
    sim_read(s, &ra, FS_RA_OFF, 10, 3);
    sim_read(s, &ra, FS_RA_OFF, 11, 4);   /* 11, 12 cached: one run, 13-14 */
    static const long long want[] = {
        0, 1, -1,   1, 1, -1,   2, 1, -1,   10, 3, -1,   13, 2, -1,
    };
    expect_log(s, 0, want, 5);
    assert_int_equal(ra.size, 0);
    /* read-ahead off by ra_pages 0 under linux: page by page */
    fs_ra_init(&ra, 0);
    sim_read(s, &ra, FS_RA_LINUX, 100, 2);
    static const long long want0[] = { 100, 1, -1,   101, 1, -1 };
    expect_log(s, 5, want0, 2);
    free(s);
}

/* test_policy_parse -- the names of ubj_config.readahead: each policy,
 * its window in KiB, and every malformed or unbuilt name refused. */
static void test_policy_parse(void **state)
{
    (void)state;
    static const struct { const char *name; int rc; enum fs_ra_policy pol; uint32_t pages; }
    cases[] = {
        { "off-page", 0, FS_RA_OFF_PAGE, 0 }, { "off", 0, FS_RA_OFF, 0 },
        { "linux", 0, FS_RA_LINUX, FS_RA_DEFAULT_PAGES },
        { "linux:64", 0, FS_RA_LINUX, 16 }, { "linux:4", 0, FS_RA_LINUX, 1 },
        { "linux:65536", 0, FS_RA_LINUX, 16384 },
        { "linux-2013", 0, FS_RA_LINUX_2013, FS_RA_DEFAULT_PAGES },
        { "linux-2013:256", 0, FS_RA_LINUX_2013, 64 },
        { "linux:7", -EINVAL, 0, 0 }, { "linux:0", -EINVAL, 0, 0 },
        { "linux:65540", -EINVAL, 0, 0 }, { "linux:", -EINVAL, 0, 0 },
        { "linux:64k", -EINVAL, 0, 0 }, { "off:64", -EINVAL, 0, 0 },
        { "offf", -EINVAL, 0, 0 }, { "", -EINVAL, 0, 0 }, { "linuxx", -EINVAL, 0, 0 },
        { "oracle", 0, FS_RA_ORACLE, FS_RA_ORACLE_MAX }, { "oracle:64", -EINVAL, 0, 0 },
        { "adaptive", 0, FS_RA_ADAPTIVE, FS_RA_DEFAULT_PAGES },
        { "adaptive:512", 0, FS_RA_ADAPTIVE, 128 }, { "adaptivex", -EINVAL, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum fs_ra_policy pol = FS_RA_OFF;
        uint32_t pages = 12345;
        int rc = fs_ra_policy_parse(cases[i].name, &pol, &pages);
        if (rc != cases[i].rc)
            fail_msg("'%s': %d, want %d", cases[i].name, rc, cases[i].rc);
        if (rc == 0 && (pol != cases[i].pol || pages != cases[i].pages))
            fail_msg("'%s': policy %d, %u pages; want %d, %u", cases[i].name, (int)pol,
                     pages, (int)cases[i].pol, cases[i].pages);
        if (rc < 0 && (strchr(ubj_errormsg(), '\n') || !strstr(ubj_errormsg(), "read-ahead")))
            fail_msg("'%s': message '%s'", cases[i].name, ubj_errormsg());
    }
    assert_int_equal(fs_ra_policy_parse(NULL, &(enum fs_ra_policy){ 0 }, &(uint32_t){ 0 }),
                     -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_prev_pos),
        cmocka_unit_test(test_seq_miss_2013),
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_big_calls),
        cmocka_unit_test(test_eof),
        cmocka_unit_test(test_random_2013),
        cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_fadv_random),
        cmocka_unit_test(test_off),
        cmocka_unit_test(test_policy_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
