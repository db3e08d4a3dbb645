/*
 * tests/journal/format.c -- the journal's on-disk format and recovery
 * (SCAN / REVOKE / REPLAY, src/txn/jrecovery.c) on hand-built logs: one
 * committed transaction, a torn or damaged commit, a stale sequence, a
 * corrupt block behind a valid commit (sync: an error, or skipped with
 * FORCE; async: the end of the log), escaped blocks, revoke records,
 * wrap-around, several descriptors, bad tags, a bad journal superblock,
 * idempotent recovery; plus the block-number map and the overlay device.
 */
#include "jtest.h"

#define FB_DEV 512u            /* blocks of the device */
#define FB_JSTART 16u          /* the journal area */
#define FB_JBLOCKS 64u
#define FB_FS 512u

/* A log under construction. */
struct lb {
    struct ubj_bdev *dev;
    struct ubj_jgeom g;
    uint64_t pos, seq;
    uint32_t crc, nblocks;
};

/* lb_new -- a device with an empty journal (compat features `compat`),
 * its log starting at relative block `start` with sequence `seq`. */
static void lb_new(struct lb *l, uint64_t compat, uint64_t start, uint64_t seq)
{
    memset(l, 0, sizeof *l);
    assert_int_equal(ubj_bdev_ram_create(FB_DEV, &l->dev), 0);
    l->g.dev = l->dev;
    l->g.start = FB_JSTART;
    l->g.blocks = FB_JBLOCKS;
    l->g.fs_nblocks = FB_FS;
    for (int i = 0; i < 16; i++)
        l->g.uuid[i] = (uint8_t)(i * 7 + 1);
    l->g.seed = ubj_crc32c(~0u, l->g.uuid, 16);
    assert_ok(ubj_journal_format(&l->g, compat, true));
    struct ubj_jsuper js;
    assert_ok(ubj_jsuper_read(&l->g, &js));
    js.start = start;
    js.sequence = seq;
    assert_int_equal(ubj_jsuper_write(&l->g, &js, UBJ_CRIT_CRITICAL), 0);
    l->pos = start;
    l->seq = seq;
}

/* lb_put -- write one log block at the current position; chain it. */
static void lb_put(struct lb *l, const void *blk, bool chain)
{
    assert_int_equal(ubj_bdev_write(l->dev, l->g.start + l->pos, 1, blk), 0);
    if (chain) {
        l->crc = ubj_crc32c(l->crc ? l->crc : l->g.seed, blk, JT_BS);
        l->nblocks++;
    }
    l->pos = l->pos + 1 >= FB_JBLOCKS ? UBJ_JOURNAL_FIRST : l->pos + 1;
}

/* lb_ctl -- a zeroed control block of `type` for the current sequence. */
static struct ubj_jhdr *lb_ctl(uint8_t *blk, uint32_t type, uint64_t seq)
{
    memset(blk, 0, JT_BS);
    struct ubj_jhdr *h = (struct ubj_jhdr *)blk;
    h->magic = UBJ_JMAGIC;
    h->blocktype = type;
    h->sequence = seq;
    return h;
}

/* lb_data -- the content logged for home block `home` in version v. */
static void lb_data(uint8_t *blk, uint64_t home, uint64_t v)
{
    jt_fill(blk, JT_BS, home * 1000 + v, 0);
}

/* lb_desc -- a descriptor for n homes (versions v) and their copies. */
static void lb_desc(struct lb *l, const uint64_t *homes, uint32_t n, uint64_t v)
{
    uint8_t blk[JT_BS], data[JT_BS];
    struct ubj_jhdr *h = lb_ctl(blk, UBJ_JB_DESCRIPTOR, l->seq);
    h->count = n;
    for (uint32_t k = 0; k < n; k++) {
        lb_data(data, homes[k], v);
        struct ubj_jtag t = { .blocknr = homes[k], .flags = UBJ_JTAG_SAME_UUID |
                              (k + 1 == n ? UBJ_JTAG_LAST : 0),
                              .crc = ubj_jtag_crc(l->g.seed, l->seq, data) };
        memcpy(blk + 32 + k * 16, &t, 16);
    }
    ubj_jblock_seal(l->g.seed, blk);
    lb_put(l, blk, true);
    for (uint32_t k = 0; k < n; k++) {
        lb_data(data, homes[k], v);
        lb_put(l, data, true);
    }
}

/* lb_revoke -- a revoke block for n blocks. */
static void lb_revoke(struct lb *l, const uint64_t *blks, uint32_t n)
{
    uint8_t blk[JT_BS];
    struct ubj_jhdr *h = lb_ctl(blk, UBJ_JB_REVOKE, l->seq);
    h->count = n;
    memcpy(blk + 32, blks, n * 8u);
    ubj_jblock_seal(l->g.seed, blk);
    lb_put(l, blk, true);
}

/* lb_commit -- the commit block of the current transaction; the next
 * transaction begins. */
static void lb_commit(struct lb *l)
{
    uint8_t blk[JT_BS];
    lb_ctl(blk, UBJ_JB_COMMIT, l->seq);
    struct ubj_jcommit *c = (struct ubj_jcommit *)blk;
    c->nblocks = l->nblocks;
    c->txn_crc = l->crc ? l->crc : l->g.seed;
    c->commit_sec = 1700000000;
    ubj_jblock_seal(l->g.seed, blk);
    lb_put(l, blk, false);
    l->seq++;
    l->crc = 0;
    l->nblocks = 0;
}

/* lb_home_is -- home block holds version v of its content (0: zeros). */
static bool lb_home_is(struct lb *l, uint64_t home, uint64_t v)
{
    uint8_t got[JT_BS], want[JT_BS];
    assert_int_equal(ubj_bdev_read(l->dev, home, 1, got), 0);
    if (v == 0)
        memset(want, 0, sizeof want);
    else
        lb_data(want, home, v);
    return memcmp(got, want, JT_BS) == 0;
}

/* lb_recover -- ubj_journal_recover; returns its rc, fills *r. */
static int lb_recover(struct lb *l, unsigned flags, struct ubj_jrec_result *r)
{
    return ubj_journal_recover(&l->g, flags, r);
}

/* ---- the map ----------------------------------------------------------------- */

/* test_jmap -- random puts, gets and deletes against a plain array. */
static void test_jmap(void **state)
{
    (void)state;
    enum { N = 3000 };
    static uint64_t ref[N];      /* 0 = absent, else value + 1 */
    struct ubj_jmap m = { 0 };
    struct tprng r;
    tprng_seed(&r, 42);
    for (int step = 0; step < 200000; step++) {
        uint64_t k = tprng_below(&r, N), v;
        uint64_t key = k * 977 + 3;          /* spread keys, some collide */
        switch (tprng_below(&r, 3)) {
        case 0:
            assert_int_equal(ubj_jmap_put(&m, key, step), 0);
            ref[k] = (uint64_t)step + 1;
            break;
        case 1:
            assert_int_equal(ubj_jmap_del(&m, key), ref[k] != 0);
            ref[k] = 0;
            break;
        default:
            assert_int_equal(ubj_jmap_get(&m, key, &v), ref[k] != 0);
            if (ref[k])
                assert_int_equal(v, ref[k] - 1);
        }
    }
    uint64_t n = 0;
    for (int k = 0; k < N; k++)
        n += ref[k] != 0;
    assert_int_equal(m.n, n);
    ubj_jmap_clear(&m);
    assert_false(ubj_jmap_get(&m, 3, NULL));
    ubj_jmap_free(&m);
}

/* ---- recovery ------------------------------------------------------------------ */

/* test_empty -- an empty journal: nothing to do, nothing written. */
static void test_empty(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, 0, 5);
    struct ubj_jrec_result r;
    assert_int_equal(lb_recover(&l, 0, &r), 0);
    assert_int_equal(r.next_seq, 5);
    assert_int_equal(r.blocks, 0);
    ubj_bdev_destroy(l.dev);
}

/* test_one_transaction -- replayed, the log restarted after it. */
static void test_one_transaction(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, 3, 10);
    uint64_t homes[] = { 100, 101, 300 };
    lb_desc(&l, homes, 3, 1);
    lb_commit(&l);
    struct ubj_jrec_result r;
    assert_int_equal(lb_recover(&l, 0, &r), 1);
    assert_int_equal(r.transactions, 1);
    assert_int_equal(r.blocks, 3);
    assert_int_equal(r.next_seq, 12);            /* 11 is never reused */
    for (int k = 0; k < 3; k++)
        assert_true(lb_home_is(&l, homes[k], 1));
    struct ubj_jsuper js;
    assert_ok(ubj_jsuper_read(&l.g, &js));
    assert_int_equal(js.start, 0);
    assert_int_equal(js.sequence, 12);
    assert_int_equal(lb_recover(&l, 0, &r), 0);  /* idempotent: clean now */
    ubj_bdev_destroy(l.dev);
}

/* test_torn_commit -- a transaction without a valid commit block (missing,
 * torn at a sector, or of another sequence) ends the log. */
static void test_torn_commit(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        struct lb l;
        lb_new(&l, 0, 1, 1);
        uint64_t a = 200, b = 201;
        lb_desc(&l, &a, 1, 1);
        lb_commit(&l);                            /* T1 committed */
        lb_desc(&l, &b, 1, 2);                    /* T2 ... */
        uint64_t cpos = l.pos;
        if (variant == 1) {                       /* commit torn: sector 0 only */
            uint8_t old[JT_BS];
            jt_fill(old, JT_BS, 99, 0);
            assert_int_equal(ubj_bdev_write(l.dev, l.g.start + cpos, 1, old), 0);
            lb_commit(&l);
            uint8_t blk[JT_BS];
            assert_int_equal(ubj_bdev_read(l.dev, l.g.start + cpos, 1, blk), 0);
            memcpy(old, blk, 512);
            assert_int_equal(ubj_bdev_write(l.dev, l.g.start + cpos, 1, old), 0);
        } else if (variant == 2) {                /* a stale commit of T1 */
            l.seq--;
            lb_commit(&l);
        }
        struct ubj_jrec_result r;
        assert_int_equal(lb_recover(&l, 0, &r), 1);
        assert_int_equal(r.transactions, 1);
        assert_true(lb_home_is(&l, a, 1));
        assert_true(lb_home_is(&l, b, 0));
        assert_int_equal(r.next_seq, 3);
        ubj_bdev_destroy(l.dev);
    }
}

/* lb_damage -- flip a byte of the log block at relative position pos. */
static void lb_damage(struct lb *l, uint64_t pos)
{
    uint8_t blk[JT_BS];
    assert_int_equal(ubj_bdev_read(l->dev, l->g.start + pos, 1, blk), 0);
    blk[100] ^= 0x5a;
    assert_int_equal(ubj_bdev_write(l->dev, l->g.start + pos, 1, blk), 0);
}

/* test_corrupt_sync -- sync commit: a damaged data block behind a valid
 * commit block is corruption: an error, or with FORCE that copy skipped
 * and everything else (later transactions too) replayed. */
static void test_corrupt_sync(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, 1, 1);
    uint64_t t1[] = { 120, 121 }, t2 = 122;
    lb_desc(&l, t1, 2, 1);
    lb_commit(&l);
    lb_desc(&l, &t2, 1, 2);
    lb_commit(&l);
    lb_damage(&l, 3);                                /* T1's copy of 121 */
    struct ubj_jrec_result r;
    assert_rc(lb_recover(&l, 0, &r), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "checksum"));
    assert_true(lb_home_is(&l, 120, 0));             /* nothing written */
    assert_int_equal(lb_recover(&l, UBJ_JREC_FORCE, &r), 1);
    assert_int_equal(r.bad, 1);
    assert_true(r.problem[0] != '\0');
    assert_true(lb_home_is(&l, 120, 1));
    assert_true(lb_home_is(&l, 121, 0));
    assert_true(lb_home_is(&l, t2, 2));
    ubj_bdev_destroy(l.dev);
}

/* test_corrupt_async -- async commit: the same damage means the
 * transaction was torn: the log ends before it, later ones included. */
static void test_corrupt_async(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, UBJ_JFEAT_COMPAT_ASYNC_COMMIT, 1, 1);
    uint64_t t1 = 130, t2[] = { 131, 132 }, t3 = 133;
    lb_desc(&l, &t1, 1, 1);
    lb_commit(&l);
    lb_desc(&l, t2, 2, 2);
    lb_commit(&l);
    lb_desc(&l, &t3, 1, 3);
    lb_commit(&l);
    lb_damage(&l, 5);                                /* T2's copy of 131 */
    struct ubj_jrec_result r;
    assert_int_equal(lb_recover(&l, 0, &r), 1);
    assert_int_equal(r.transactions, 1);
    assert_true(lb_home_is(&l, t1, 1));
    assert_true(lb_home_is(&l, 131, 0));
    assert_true(lb_home_is(&l, 132, 0));
    assert_true(lb_home_is(&l, t3, 0));
    ubj_bdev_destroy(l.dev);
}

/* test_escaped -- a copy stored with its magic zeroed is restored. */
static void test_escaped(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, 1, 1);
    uint8_t blk[JT_BS], data[JT_BS], want[JT_BS];
    lb_data(want, 140, 1);
    uint32_t magic = UBJ_JMAGIC;
    memcpy(want, &magic, 4);
    memcpy(data, want, JT_BS);
    memset(data, 0, 4);                                /* the log copy */
    struct ubj_jhdr *h = lb_ctl(blk, UBJ_JB_DESCRIPTOR, l.seq);
    h->count = 1;
    struct ubj_jtag t = { .blocknr = 140,
                          .flags = UBJ_JTAG_SAME_UUID | UBJ_JTAG_LAST | UBJ_JTAG_ESCAPED,
                          .crc = ubj_jtag_crc(l.g.seed, l.seq, data) };
    memcpy(blk + 32, &t, 16);
    ubj_jblock_seal(l.g.seed, blk);
    lb_put(&l, blk, true);
    lb_put(&l, data, true);
    lb_commit(&l);
    assert_int_equal(lb_recover(&l, 0, NULL), 1);
    uint8_t got[JT_BS];
    assert_int_equal(ubj_bdev_read(l.dev, 140, 1, got), 0);
    assert_memory_equal(got, want, JT_BS);
    ubj_bdev_destroy(l.dev);
}

/* test_revoke -- a revoke record hides the block's copies in its own and
 * earlier transactions, not later ones; an uncommitted revoke hides
 * nothing. */
static void test_revoke(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, 1, 1);
    uint64_t a = 150, b = 151, c = 152;
    uint64_t t1[] = { a, b, c };
    lb_desc(&l, t1, 3, 1);           /* T1: a b c */
    lb_commit(&l);
    uint64_t rv[] = { a, b };
    lb_revoke(&l, rv, 2);            /* T2: revoke a b */
    lb_commit(&l);
    lb_desc(&l, &b, 1, 3);           /* T3: b again */
    lb_commit(&l);
    lb_revoke(&l, &c, 1);            /* T4 (uncommitted): revoke c */
    struct ubj_jrec_result r;
    assert_int_equal(lb_recover(&l, 0, &r), 1);
    assert_int_equal(r.transactions, 3);
    assert_true(lb_home_is(&l, a, 0));   /* revoked */
    assert_true(lb_home_is(&l, b, 3));   /* journaled after the revoke */
    assert_true(lb_home_is(&l, c, 1));   /* the revoke did not commit */
    ubj_bdev_destroy(l.dev);
}

/* test_wrap -- a log that begins near the end of the area and wraps,
 * with a transaction crossing the end; a copy logged twice: the newest. */
static void test_wrap(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, FB_JBLOCKS - 4, 7);
    uint64_t t1[] = { 160, 161, 162, 163, 164 };      /* crosses the end */
    lb_desc(&l, t1, 5, 1);
    lb_commit(&l);
    uint64_t t2[] = { 161, 170 };
    lb_desc(&l, t2, 2, 2);
    lb_commit(&l);
    assert_true(l.pos < 16);
    struct ubj_jrec_result r;
    assert_int_equal(lb_recover(&l, 0, &r), 1);
    assert_int_equal(r.transactions, 2);
    assert_int_equal(r.blocks, 6);
    assert_true(lb_home_is(&l, 160, 1));
    assert_true(lb_home_is(&l, 161, 2));
    assert_true(lb_home_is(&l, 164, 1));
    assert_true(lb_home_is(&l, 170, 2));
    ubj_bdev_destroy(l.dev);
}

/* test_many_descriptors -- a transaction of 300 copies: two descriptors. */
static void test_many_descriptors(void **state)
{
    (void)state;
    struct lb l;
    memset(&l, 0, sizeof l);
    assert_int_equal(ubj_bdev_ram_create(4096, &l.dev), 0);
    l.g = (struct ubj_jgeom){ .dev = l.dev, .start = 8, .blocks = 400,
                              .fs_nblocks = 4096 };
    l.g.seed = ubj_crc32c(~0u, l.g.uuid, 16);
    assert_ok(ubj_journal_format(&l.g, 0, true));
    struct ubj_jsuper js;
    assert_ok(ubj_jsuper_read(&l.g, &js));
    js.start = 1;
    assert_int_equal(ubj_jsuper_write(&l.g, &js, UBJ_CRIT_CRITICAL), 0);
    l.pos = 1;
    l.seq = 1;
    uint64_t homes[300];
    for (int i = 0; i < 300; i++)
        homes[i] = 1000u + (uint64_t)i;
    uint8_t blk[JT_BS], data[JT_BS];   /* as lb_desc, in two descriptors */
    for (int part = 0; part < 2; part++) {
        uint32_t n = part == 0 ? UBJ_JTAGS_PER_BLOCK : 300 - UBJ_JTAGS_PER_BLOCK;
        const uint64_t *hh = homes + (part == 0 ? 0 : UBJ_JTAGS_PER_BLOCK);
        struct ubj_jhdr *h = lb_ctl(blk, UBJ_JB_DESCRIPTOR, l.seq);
        h->count = n;
        for (uint32_t k = 0; k < n; k++) {
            lb_data(data, hh[k], 1);
            struct ubj_jtag t = { .blocknr = hh[k], .flags = UBJ_JTAG_SAME_UUID |
                                  (k + 1 == n ? UBJ_JTAG_LAST : 0),
                                  .crc = ubj_jtag_crc(l.g.seed, l.seq, data) };
            memcpy(blk + 32 + k * 16, &t, 16);
        }
        ubj_jblock_seal(l.g.seed, blk);
        assert_int_equal(ubj_bdev_write(l.dev, l.g.start + l.pos, 1, blk), 0);
        l.crc = ubj_crc32c(l.crc ? l.crc : l.g.seed, blk, JT_BS);
        l.nblocks++;
        l.pos++;
        for (uint32_t k = 0; k < n; k++) {
            lb_data(data, hh[k], 1);
            assert_int_equal(ubj_bdev_write(l.dev, l.g.start + l.pos, 1, data), 0);
            l.crc = ubj_crc32c(l.crc, data, JT_BS);
            l.nblocks++;
            l.pos++;
        }
    }
    uint8_t cb[JT_BS];
    lb_ctl(cb, UBJ_JB_COMMIT, l.seq);
    struct ubj_jcommit *c = (struct ubj_jcommit *)cb;
    c->nblocks = l.nblocks;
    c->txn_crc = l.crc;
    ubj_jblock_seal(l.g.seed, cb);
    assert_int_equal(ubj_bdev_write(l.dev, l.g.start + l.pos, 1, cb), 0);
    struct ubj_jrec_result r;
    assert_int_equal(ubj_journal_recover(&l.g, 0, &r), 1);
    assert_int_equal(r.blocks, 300);
    for (int i = 0; i < 300; i += 37)
        assert_true(lb_home_is(&l, homes[i], 1));
    assert_true(lb_home_is(&l, homes[299], 1));
    ubj_bdev_destroy(l.dev);
}

/* test_bad_tags -- a valid descriptor naming a block inside the journal
 * or past the file system is corruption, never written. */
static void test_bad_tags(void **state)
{
    (void)state;
    uint64_t bad[] = { FB_JSTART + 5, FB_FS + 3 };
    for (int i = 0; i < 2; i++) {
        struct lb l;
        lb_new(&l, 0, 1, 1);
        lb_desc(&l, &bad[i], 1, 1);
        lb_commit(&l);
        assert_rc(lb_recover(&l, 0, NULL), -EUCLEAN);
        struct ubj_jrec_result r;
        assert_int_equal(lb_recover(&l, UBJ_JREC_FORCE, &r), 1);
        assert_int_equal(r.blocks, 0);
        assert_true(r.problem[0] != '\0');
        ubj_bdev_destroy(l.dev);
    }
}

/* test_bad_super -- a damaged journal superblock is refused. */
static void test_bad_super(void **state)
{
    (void)state;
    struct lb l;
    lb_new(&l, 0, 1, 1);
    struct ubj_jsuper js;
    assert_ok(ubj_jsuper_read(&l.g, &js));
    js.maxlen = 99;                          /* resealed, but wrong geometry */
    assert_int_equal(ubj_jsuper_write(&l.g, &js, UBJ_CRIT_CRITICAL), 0);
    assert_rc(ubj_jsuper_read(&l.g, &js), -EUCLEAN);
    lb_damage(&l, 0);
    assert_rc(ubj_jsuper_read(&l.g, &js), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "journal superblock"));
    assert_rc(lb_recover(&l, 0, NULL), -EUCLEAN);
    ubj_bdev_destroy(l.dev);
}

/* test_fsck_bad_super -- fsck reports a damaged journal superblock, and
 * -y resets the journal. */
static void test_fsck_bad_super(void **state)
{
    (void)state;
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    jt_new_fs(2048, UBJ_MODE_ORDERED, 0, 256, &dev, &fs);
    assert_ok(ubj_unmount(fs));
    struct ubj_super sb;
    assert_int_equal(ubj_bdev_read(dev, 0, 1, &sb), 0);
    uint8_t blk[JT_BS];
    assert_int_equal(ubj_bdev_read(dev, sb.journal_start, 1, blk), 0);
    blk[60] ^= 1;
    assert_int_equal(ubj_bdev_write(dev, sb.journal_start, 1, blk), 0);
    assert_int_equal(ubj_test_check(dev, 0, NULL), UBJ_CHECK_UNCORRECTED);
    assert_int_equal(jt_mount(dev, 256, 0, &fs), -EUCLEAN);
    assert_int_equal(ubj_test_check(dev, UBJ_CHECK_REPAIR, NULL), UBJ_CHECK_REPAIRED);
    jt_check_clean(dev, 0);
    assert_ok(jt_mount(dev, 256, 0, &fs));
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
}

/* test_overlay -- writes stay in memory; the lower device is untouched. */
static void test_overlay(void **state)
{
    (void)state;
    struct ubj_bdev *low, *ov;
    assert_int_equal(ubj_bdev_ram_create(64, &low), 0);
    uint8_t a[2 * JT_BS], b[2 * JT_BS], got[3 * JT_BS];
    jt_fill(a, sizeof a, 1, 0);
    jt_fill(b, sizeof b, 2, 0);
    assert_int_equal(ubj_bdev_write(low, 10, 2, a), 0);
    assert_int_equal(ubj_bdev_cow_create(low, UBJ_COW_BORROW, &ov), 0);
    assert_int_equal(ubj_bdev_write(ov, 11, 2, b), 0);
    assert_int_equal(ubj_bdev_flush(ov), 0);
    assert_int_equal(ubj_bdev_cow_blocks(ov), 2);
    assert_int_equal(ubj_bdev_read(ov, 10, 3, got), 0);
    assert_memory_equal(got, a, JT_BS);
    assert_memory_equal(got + JT_BS, b, 2 * JT_BS);
    assert_int_equal(ubj_bdev_read(low, 10, 2, got), 0);
    assert_memory_equal(got, a, 2 * JT_BS);            /* lower unchanged */
    ubj_bdev_destroy(ov);
    assert_int_equal(ubj_bdev_read(low, 10, 1, got), 0);  /* borrowed: alive */
    assert_int_equal(ubj_bdev_cow_blocks(low), 0);
    ubj_bdev_destroy(low);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jmap),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_one_transaction),
        cmocka_unit_test(test_torn_commit),
        cmocka_unit_test(test_corrupt_sync),
        cmocka_unit_test(test_corrupt_async),
        cmocka_unit_test(test_escaped),
        cmocka_unit_test(test_revoke),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_many_descriptors),
        cmocka_unit_test(test_bad_tags),
        cmocka_unit_test(test_bad_super),
        cmocka_unit_test(test_fsck_bad_super),
        cmocka_unit_test(test_overlay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
