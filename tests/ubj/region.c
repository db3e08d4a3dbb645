/*
 * tests/ubj/region.c -- the persistent region (src/nvm/region.c,
 * persist.c, shadow.c) and pairing it with an image (ubjm_attach,
 * ubj_mount in mode ubj): layouts; format/open round trip; every refusal
 * (missing, not a region, corrupt header, truncated, another image,
 * another layout, in use, --format-nvm over committed blocks) returns the
 * right error with a message and leaves the file byte for byte unchanged;
 * the persistence counters; the shadow's crash images (durable / all /
 * random mixes at 8-byte granularity, partial cache lines).
 */
#include "ubjtest.h"
#include "ubjfs/model.h"
#include "nvm/nvm_int.h"
#include "txn/ubj.h"

static const uint8_t uuid_a[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t uuid_b[16] = { 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9 };

/* fresh -- a region path with nothing there. */
static void fresh(char *p, size_t len, const char *tag)
{
    ut_region_path(p, len, tag);
    unlink(p);
}

/* make_region -- format a 64-buffer region of image uuid at p. */
static void make_region(const char *p, const uint8_t uuid[16])
{
    struct ubj_nvm_layout l;
    struct ubj_nvm *r;
    assert_ok(ubj_nvm_layout_for(64, 0, &l));
    assert_ok(ubj_nvm_format(p, &l, uuid, &r));
    ubj_nvm_close(r);
}

/* assert_unchanged -- the file at p still holds exactly want. */
static void assert_unchanged(const char *p, const uint8_t *want, size_t wlen)
{
    uint8_t *now;
    size_t len;
    assert_ok(ut_file_get(p, &now, &len));
    assert_int_equal(len, wlen);
    assert_memory_equal(now, want, len);
    free(now);
}

/* expect_refused -- attach(flags) fails with rc, a message containing
 * `words`, and the file unchanged. */
static void expect_refused(const char *p, uint64_t size, uint32_t nbufs,
                           const uint8_t uuid[16], unsigned flags, int rc,
                           const char *words)
{
    uint8_t *before = NULL;
    size_t len = 0;
    int exists = ut_file_get(p, &before, &len) == 0;
    struct ubj_nvm *r = NULL;
    assert_rc(ubjm_attach(p, size, nbufs, uuid, flags, &r), rc);
    if (strstr(ubj_errormsg(), words) == NULL)
        fail_msg("message '%s' lacks '%s'", ubj_errormsg(), words);
    if (exists)
        assert_unchanged(p, before, len);
    else
        assert_int_equal(access(p, F_OK), -1);
    free(before);
}

/* layouts: offsets, rounding, sizes both ways, limits. */
static void test_layout(void **state)
{
    (void)state;
    struct ubj_nvm_layout l, m;
    assert_ok(ubj_nvm_layout_for(64, 0, &l));
    assert_int_equal(l.nbufs, 64);
    assert_int_equal(l.block_size, 4096);
    assert_int_equal(l.desc_size, 48);
    assert_int_equal(l.desc_off, 4096);
    assert_int_equal(l.data_off, 8192);             /* 64 * 48 = 3072 -> 4096 */
    assert_int_equal(l.size, 8192 + 64 * 4096);
    assert_ok(ubj_nvm_layout_for(0, l.size, &m));
    assert_int_equal(m.nbufs, 64);
    assert_ok(ubj_nvm_layout_for(0, l.size + 4095, &m));
    assert_int_equal(m.nbufs, 64);
    assert_rc(ubj_nvm_layout_for(0, l.size - 1, &m), -EINVAL);   /* 63 buffers */
    assert_rc(ubj_nvm_layout_for(64, l.size - 1, &m), -EINVAL);
    assert_rc(ubj_nvm_layout_for(63, 0, &m), -EINVAL);
    assert_ok(ubj_nvm_layout_for(0, 1ull << 30, &m));
    assert_true(m.size <= 1ull << 30);
    assert_int_equal(m.data_off % 4096, 0);
    assert_true(m.data_off >= m.desc_off + (uint64_t)m.nbufs * 48);
    struct ubj_nvm_layout n;
    assert_ok(ubj_nvm_layout_for(m.nbufs + 1, 0, &n));
    assert_true(n.size > 1ull << 30);                /* the most that fit */
    assert_int_equal(sizeof(struct ubj_bufdesc), UBJ_NVM_DESC_SIZE);
}

/* format, close, open: the same layout, uuid, zero descriptors, record 0. */
static void test_format_open(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "fo");
    struct ubj_nvm_layout l;
    struct ubj_nvm *r;
    assert_ok(ubj_nvm_layout_for(100, 0, &l));
    assert_ok(ubj_nvm_format(p, &l, uuid_a, &r));
    uint64_t id = ubj_nvm_region_id(r);
    ubj_nvm_close(r);
    assert_ok(ubj_nvm_open(p, 0, &r));
    const struct ubj_nvm_layout *g = ubj_nvm_get_layout(r);
    assert_int_equal(g->nbufs, 100);
    assert_int_equal(g->size, l.size);
    assert_int_equal(g->data_off, l.data_off);
    assert_memory_equal(ubj_nvm_uuid(r), uuid_a, 16);
    assert_int_equal(ubj_nvm_region_id(r), id);
    assert_int_equal(ubj_nvm_committed(r), 0);
    assert_int_equal((uintptr_t)ubj_nvm_data(r) % 4096, 0);
    const struct ubj_bufdesc *d = ubj_nvm_desc(r);
    for (uint32_t i = 0; i < 100; i++)
        assert_int_equal(d[i].ptag, 0);
    assert_int_equal(ubjm_pending(r, 1000), 0);
    ubj_nvm_close(r);
    /* a read-only open shares the lock; a second writer is refused */
    struct ubj_nvm *ro1, *ro2;
    assert_ok(ubj_nvm_open(p, UBJ_NVM_OPEN_RDONLY, &ro1));
    assert_ok(ubj_nvm_open(p, UBJ_NVM_OPEN_RDONLY, &ro2));
    assert_rc(ubj_nvm_open(p, 0, &r), -EBUSY);
    ubj_nvm_close(ro1);
    ubj_nvm_close(ro2);
    assert_ok(ubjm_attach(p, 0, 0, uuid_a, 0, &r));
    expect_refused(p, 0, 0, uuid_a, 0, -EBUSY, "in use");
    ubj_nvm_close(r);
    unlink(p);
}

/* rewrite_hdr -- change the header of the region file at p with edit()
 * and, if reseal, recompute its crc. */
static void rewrite_hdr(const char *p, void (*edit)(struct nvm_header *), int reseal)
{
    uint8_t *buf;
    size_t len;
    assert_ok(ut_file_get(p, &buf, &len));
    struct nvm_header *h = (struct nvm_header *)buf;
    edit(h);
    if (reseal)
        h->hdr_crc = nvm_header_crc(h);
    assert_ok(ut_file_put(p, buf, len));
    free(buf);
}

static void edit_nbufs(struct nvm_header *h) { h->nbufs++; }
static void edit_version(struct nvm_header *h) { h->version = 2; }
static void edit_offsets(struct nvm_header *h) { h->data_off += 4096; }

/* every refusal: error code, message, file untouched. */
static void test_refusals(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "ref");
    expect_refused(p, 0, 0, uuid_a, 0, -ENOENT, "--format-nvm");
    /* not a region: zeros, and a text file */
    uint8_t zeros[8192] = { 0 };
    assert_ok(ut_file_put(p, zeros, sizeof zeros));
    expect_refused(p, 0, 0, uuid_a, 0, -EUCLEAN, "not a ubjfs NVM region");
    assert_ok(ut_file_put(p, "hello, world\n", 13));
    expect_refused(p, 0, 0, uuid_a, 0, -EUCLEAN, "not a ubjfs NVM region");
    /* corrupt header: checksum, version, inconsistent layout */
    make_region(p, uuid_a);
    rewrite_hdr(p, edit_nbufs, 0);
    expect_refused(p, 0, 0, uuid_a, 0, -EUCLEAN, "checksum");
    make_region(p, uuid_a);
    rewrite_hdr(p, edit_version, 1);
    expect_refused(p, 0, 0, uuid_a, 0, -EUCLEAN, "version");
    make_region(p, uuid_a);
    rewrite_hdr(p, edit_offsets, 1);
    expect_refused(p, 0, 0, uuid_a, 0, -EUCLEAN, "inconsistent");
    /* truncated */
    make_region(p, uuid_a);
    assert_int_equal(truncate(p, 8192 + 10 * 4096), 0);
    expect_refused(p, 0, 0, uuid_a, 0, -EUCLEAN, "truncated");
    /* another image, another layout */
    make_region(p, uuid_a);
    expect_refused(p, 0, 0, uuid_b, 0, -EINVAL, "another image");
    expect_refused(p, 0, 65, uuid_a, 0, -EINVAL, "another layout");
    expect_refused(p, 4096 * 1000, 0, uuid_a, 0, -EINVAL, "another layout");
    struct ubj_nvm *r;
    assert_ok(ubjm_attach(p, 0, 64, uuid_a, 0, &r));
    ubj_nvm_close(r);
    /* read-only attach of a missing region does not create it */
    unlink(p);
    expect_refused(p, 0, 0, uuid_a, UBJM_NVMA_RDONLY, -ENOENT, "no region");
    unlink(p);
}

/* commit_block -- give descriptor i a tag of txid with block blkno and
 * set the commit record, through the nvm verbs. */
static void commit_block(struct ubj_nvm *r, uint32_t i, uint64_t blkno,
                         uint64_t txid, uint64_t record)
{
    struct ubj_bufdesc *d = ubj_nvm_desc(r);
    d[i].blkno = blkno;
    ubj_nvm_store64(r, &d[i].ptag, ubjm_ptag(txid, UBJ_KIND_META));
    ubj_nvm_flush(r, &d[i], sizeof d[i]);
    ubj_nvm_store64(r, ubj_nvm_committed_word(r), record);
    ubj_nvm_flush(r, ubj_nvm_committed_word(r), 8);
    assert_ok(ubj_nvm_drain(r));
}

/* --format-nvm: refused (unchanged) while committed blocks are not home;
 * allowed over uncommitted tags, a foreign file, a corrupt header. */
static void test_format_guard(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "guard");
    struct ubj_nvm *r;
    make_region(p, uuid_a);
    assert_ok(ubj_nvm_open(p, 0, &r));
    commit_block(r, 3, 17, 5, 5);
    assert_int_equal(ubjm_pending(r, 100), 1);
    assert_rc(ubjm_pending(r, 10), -EUCLEAN);    /* block 17 beyond 10 */
    ubj_nvm_close(r);
    expect_refused(p, 0, 64, uuid_a, UBJM_NVMA_FORMAT, -EBUSY,
                   "mount once without --format-nvm");
    expect_refused(p, 0, 64, uuid_b, UBJM_NVMA_FORMAT, -EBUSY, "not yet written home");
    /* the tag's transaction never committed: nothing pending */
    assert_ok(ubj_nvm_open(p, 0, &r));
    commit_block(r, 3, 17, 6, 5);
    assert_int_equal(ubjm_pending(r, 100), 0);
    ubj_nvm_close(r);
    assert_ok(ubjm_attach(p, 0, 80, uuid_b, UBJM_NVMA_FORMAT, &r));
    assert_int_equal(ubj_nvm_get_layout(r)->nbufs, 80);
    assert_memory_equal(ubj_nvm_uuid(r), uuid_b, 16);
    ubj_nvm_close(r);
    /* over a file that is not a region */
    assert_ok(ut_file_put(p, "not a region", 12));
    assert_ok(ubjm_attach(p, 0, 0, uuid_a, UBJM_NVMA_FORMAT, &r));
    assert_int_equal(ubj_nvm_get_layout(r)->nbufs, 16384);   /* the default */
    ubj_nvm_close(r);
    /* by size */
    unlink(p);
    assert_ok(ubjm_attach(p, 1u << 20, 0, uuid_a, UBJM_NVMA_FORMAT, &r));
    assert_int_equal(ubj_nvm_get_layout(r)->nbufs, 252);   /* fills 1 MiB exactly */
    ubj_nvm_close(r);
    unlink(p);
}

/* the counters of the persistence verbs; line granularity. */
static void test_persist_stats(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "stats");
    make_region(p, uuid_a);
    struct ubj_nvm *r;
    struct ubj_nvm_counters s0, s1;
    assert_ok(ubj_nvm_open(p, 0, &r));
    ubj_nvm_counters_get(r, &s0);
    uint8_t *data = ubj_nvm_data(r);
    ubj_nvm_copy(r, data + 60, "0123456789", 10);   /* spans two lines */
    ubj_nvm_flush(r, data + 60, 10);
    ubj_nvm_memset(r, data + 4096, 7, 1);
    assert_ok(ubj_nvm_persist(r, data + 4096, 1));
    ubj_nvm_counters_get(r, &s1);
    assert_int_equal(s1.bytes_stored - s0.bytes_stored, 11);
    assert_int_equal(s1.bytes_flushed - s0.bytes_flushed, 3 * 64);
    assert_int_equal(s1.flushes - s0.flushes, 2);
    assert_int_equal(s1.drains - s0.drains, 1);
    ubj_nvm_close(r);
    assert_ok(ubj_nvm_open(p, 0, &r));               /* it persisted */
    assert_memory_equal(ubj_nvm_data(r) + 60, "0123456789", 10);
    ubj_nvm_close(r);
    unlink(p);
}

/* the shadow: what each policy keeps of stores, flushes and drains. */
static void test_shadow(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "shadow");
    make_region(p, uuid_a);
    struct ubj_nvm_shadow *s;
    struct ubj_nvm *r;
    assert_ok(ubj_nvm_shadow_new(&s));
    ubj_nvm_shadow_install(s);
    assert_ok(ubj_nvm_open(p, 0, &r));
    ubj_nvm_shadow_install(NULL);
    ubj_nvm_shadow_arm(s, 2, NULL, NULL);
    uint8_t *d = ubj_nvm_data(r);
    size_t base = (size_t)(d - (uint8_t *)ubj_nvm_committed_word(r)) + 256;
    uint64_t *w = (uint64_t *)d;
    ubj_nvm_store64(r, &w[0], 0x1111);               /* persisted at point 1 */
    assert_ok(ubj_nvm_persist(r, &w[0], 8));
    ubj_nvm_store64(r, &w[1], 0x2222);               /* never flushed */
    for (int i = 0; i < 8; i++)                      /* a whole line, flushed */
        ubj_nvm_store64(r, &w[8 + i], 0x3300u + (uint64_t)i);
    ubj_nvm_flush(r, &w[8], 64);
    ubj_nvm_store64(r, &w[9], 0x4444);               /* after the flush */
    assert_int_equal(ubj_nvm_shadow_points(s), 1);
    assert_ok(ubj_nvm_drain(r));                     /* point 2: captured */
    assert_true(ubj_nvm_shadow_captured(s));
    size_t size = ubj_nvm_shadow_size(s);
    uint64_t *img = malloc(size);
    const uint64_t *iw = (const uint64_t *)((uint8_t *)img + base);
    assert_ok(ubj_nvm_shadow_image(s, UBJ_SHADOW_DURABLE, 0, img));
    assert_int_equal(iw[0], 0x1111);
    assert_int_equal(iw[1], 0);
    assert_int_equal(iw[8], 0);
    assert_ok(ubj_nvm_shadow_image(s, UBJ_SHADOW_ALL, 0, img));
    assert_int_equal(iw[1], 0x2222);
    assert_int_equal(iw[8], 0x3300);
    assert_int_equal(iw[9], 0x4444);
    int seen1[2] = { 0 }, seen8[2] = { 0 }, seen9[3] = { 0 }, partial = 0;
    for (uint64_t seed = 0; seed < 64; seed++) {
        assert_ok(ubj_nvm_shadow_image(s, UBJ_SHADOW_RANDOM, seed, img));
        assert_int_equal(iw[0], 0x1111);
        assert_true(iw[1] == 0 || iw[1] == 0x2222);
        seen1[iw[1] != 0]++;
        assert_true(iw[8] == 0 || iw[8] == 0x3300);
        seen8[iw[8] != 0]++;
        assert_true(iw[9] == 0 || iw[9] == 0x3301 || iw[9] == 0x4444);
        seen9[iw[9] == 0 ? 0 : iw[9] == 0x3301 ? 1 : 2]++;
        int set = 0;
        for (int i = 0; i < 8; i++)
            set += iw[8 + i] != 0;
        partial += set > 0 && set < 8;               /* a partly persisted line */
    }
    assert_true(seen1[0] && seen1[1] && seen8[0] && seen8[1]);
    assert_true(seen9[0] && seen9[1] && seen9[2]);
    assert_true(partial > 0);
    /* after the drain the flushed line is durable */
    ubj_nvm_shadow_arm(s, 3, NULL, NULL);
    assert_ok(ubj_nvm_drain(r));
    assert_ok(ubj_nvm_shadow_image(s, UBJ_SHADOW_DURABLE, 0, img));
    assert_int_equal(iw[8], 0x3300);
    assert_int_equal(iw[9], 0x3301);                 /* as flushed */
    assert_int_equal(iw[1], 0);
    free(img);
    ubj_nvm_close(r);
    ubj_nvm_shadow_free(s);
    unlink(p);
}

/* mount in mode ubj: the config is required and checked; refusals write
 * nothing to the region or the image. */
static void test_mount_config(void **state)
{
    (void)state;
    char p[256], q[256];
    fresh(p, sizeof p, "mnt");
    fresh(q, sizeof q, "mnt2");
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_int_equal(ubj_bdev_ram_create(1024, &dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ };
    assert_ok(ubj_format(dev, &fo));
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER };
    assert_rc(ubj_mount(dev, &cfg, &fs), -EINVAL);          /* no region */
    assert_non_null(strstr(ubj_errormsg(), "needs an NVM region"));
    cfg.mode = UBJ_MODE_NONE;
    cfg.nvm_path = p;
    assert_rc(ubj_mount(dev, &cfg, &fs), -EINVAL);          /* none + region */
    assert_rc(ut_mount(dev, p, 64, 0, 0, &fs), -ENOENT);    /* no file yet */
    assert_rc(ut_mount(dev, p, 64, 0x80, 0, &fs), -EINVAL); /* bad nvm_flags */
    /* a region of another image: refused, neither side written */
    make_region(q, uuid_b);
    uint8_t *before;
    size_t len;
    assert_ok(ut_file_get(q, &before, &len));
    struct ubj_bdev_stats ds0, ds1;
    ubj_bdev_stats_get(dev, &ds0);
    assert_rc(ut_mount(dev, q, 0, 0, 0, &fs), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), "another image"));
    ubj_bdev_stats_get(dev, &ds1);
    assert_int_equal(ds1.writes, ds0.writes);
    assert_unchanged(q, before, len);
    free(before);
    /* made with --format-nvm; then the layout must match */
    assert_ok(ut_mount(dev, p, 64, UBJ_NVM_FORMAT, 0, &fs));
    assert_ok(tpath_create(fs, "/x", 0644, NULL));
    assert_ok(ubj_sync(fs));
    assert_ok(ubj_unmount(fs));
    assert_rc(ut_mount(dev, p, 128, 0, 0, &fs), -EINVAL);
    assert_ok(ut_mount(dev, p, 0, 0, 0, &fs));
    assert_true(tpath_ino(fs, "/x") != 0);
    /* while mounted the region is locked */
    assert_rc(ubjm_attach(p, 0, 0, uuid_a, 0, &(struct ubj_nvm *){ NULL }), -EBUSY);
    assert_ok(tpath_create(fs, "/y", 0644, NULL));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/y"), 0));
    /* a crash now leaves committed blocks in the region: --format-nvm is
     * refused until a mount has checkpointed them */
    uint8_t *img;
    assert_ok(ut_file_get(p, &img, &len));
    struct ubj_bdev *crashed = ut_ram_copy(dev);
    assert_ok(ubj_unmount(fs));
    assert_ok(ut_file_put(q, img, len));
    free(img);
    assert_rc(ut_mount(crashed, q, 0, UBJ_NVM_FORMAT, 0, &fs), -EBUSY);
    assert_non_null(strstr(ubj_errormsg(), "mount once without --format-nvm"));
    assert_ok(ut_mount(crashed, q, 0, 0, 0, &fs));
    assert_true(tpath_ino(fs, "/y") != 0);
    assert_ok(ubj_unmount(fs));
    assert_ok(ut_mount(crashed, q, 0, UBJ_NVM_FORMAT, 0, &fs));   /* now allowed */
    assert_true(tpath_ino(fs, "/y") != 0);
    assert_ok(ubj_unmount(fs));
    assert_int_equal(ubj_test_check(crashed, 0, NULL), UBJ_CHECK_CLEAN);
    ubj_bdev_destroy(crashed);
    ubj_bdev_destroy(dev);
    unlink(p);
    unlink(q);
}

/* the NVM cost model is charged for every store, flush and drain; a
 * mount with nvm_profile reports its time and energy. */
static void test_cost_model(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "model");
    make_region(p, uuid_a);
    struct ubj_nvm *r;
    struct ubj_nvm_model *m;
    assert_ok(ubj_nvm_open(p, 0, &r));
    assert_ok(ubj_nvm_model_create("pcm", NULL, &m));
    ubj_nvm_set_model(r, m);
    uint8_t *d = ubj_nvm_data(r);
    ubj_nvm_memset(r, d, 1, 640);
    ubj_nvm_flush(r, d, 640);                 /* 10 lines */
    ubj_nvm_store64(r, (uint64_t *)(d + 4096), 5);
    assert_ok(ubj_nvm_persist(r, d + 4096, 8)); /* 1 line + a fence */
    assert_ok(ubj_nvm_drain(r));              /* a fence */
    struct ubj_nvm_stats ms;
    ubj_nvm_model_stats(ubj_nvm_get_model(r), &ms);
    assert_int_equal(ms.stores, 2);
    assert_int_equal(ms.bytes_stored, 648);
    assert_int_equal(ms.lines_flushed, 11);
    assert_int_equal(ms.flushes, 2);
    assert_int_equal(ms.fences, 2);
    assert_true(ms.time_ns > 0 && ms.energy_j > 0);
    ubj_nvm_close(r);                         /* destroys the model */
    /* through a mount */
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    assert_int_equal(ubj_bdev_ram_create(1024, &dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ };
    assert_ok(ubj_format(dev, &fo));
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .nvm_path = p,
                              .nvm_flags = UBJ_NVM_FORMAT, .nvm_profile = "nosuch" };
    assert_true(ubj_mount(dev, &cfg, &fs) < 0);
    cfg.nvm_profile = "sttmram";
    assert_ok(ubj_mount(dev, &cfg, &fs));
    assert_ok(tpath_put(fs, "/m", "model", 5));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/m"), 0));
    struct ubj_fs_stats st;
    ubj_fs_stats_get(fs, &st);
    assert_true(st.nvm_model_ns > 0 && st.nvm_model_energy_j > 0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(dev);
    unlink(p);
}

/* fill_read -- remount dev over region p with nvm_profile sttmram (write
 * 50 ns per line) and read policy `ra`, read /f (64 KiB) cold, return the
 * NVM time charged meanwhile and the blocks the device wrote into the
 * region (misses + read-ahead). */
static void fill_read(struct ubj_bdev *dev, const char *p, const char *ra,
                      uint64_t *ns, uint64_t *blocks)
{
    struct ubj_fs *fs;
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER | UBJ_MOUNT_NOATIME,
                              .nvm_path = p, .nvm_profile = "sttmram",
                              .readahead = ra };
    assert_ok(ubj_mount(dev, &cfg, &fs));
    ubj_ino_t ino = tpath_ino(fs, "/f");
    assert_true(ino != 0);
    struct ubj_fs_stats a, b;
    ubj_fs_stats_get(fs, &a);
    static char buf[65536];
    for (size_t off = 0; off < sizeof buf; off += 4096)
        assert_int_equal(ubj_pread(fs, ino, buf + off, 4096, off), 4096);
    ubj_fs_stats_get(fs, &b);
    *ns = b.nvm_model_ns - a.nvm_model_ns;
    *blocks = (b.cache_misses - a.cache_misses) + (b.ra_blocks - a.ra_blocks);
    assert_ok(ubj_unmount(fs));
}

/* a device read into a buffer of the region is an NVM write: every block
 * a miss or read-ahead brings in is charged 64 lines of write_ns, and
 * nothing else is charged by a read with atime off (broken: no fill hook
 * -> 0 ns) */
static void test_fill_charged(void **state)
{
    (void)state;
    char p[256];
    fresh(p, sizeof p, "fill");
    struct ubj_bdev *dev;
    assert_int_equal(ubj_bdev_ram_create(2048, &dev), 0);
    struct ubj_format_opts fo = { .mode = UBJ_MODE_UBJ };
    assert_ok(ubj_format(dev, &fo));
    struct ubj_fs *fs;
    struct ubj_config cfg = { .flags = UBJ_MOUNT_NO_TIMER, .nvm_path = p,
                              .nvm_flags = UBJ_NVM_FORMAT };
    assert_ok(ubj_mount(dev, &cfg, &fs));
    static char data[65536];
    memset(data, 'f', sizeof data);
    assert_ok(tpath_put(fs, "/f", data, sizeof data));
    assert_ok(ubj_unmount(fs));           /* checkpointed: /f is read cold */
    const char *pol[] = { "off-page", "linux" };   /* misses; read-ahead */
    for (int i = 0; i < 2; i++) {
        uint64_t ns, blocks;
        fill_read(dev, p, pol[i], &ns, &blocks);
        print_message("%s: %llu blocks filled, %llu ns\n", pol[i],
                      (unsigned long long)blocks, (unsigned long long)ns);
        assert_true(blocks >= 16);        /* the file's 16 blocks at least */
        assert_int_equal(ns, blocks * 64 * 50);
    }
    ubj_bdev_destroy(dev);
    unlink(p);
}

/* an image left mounted by mode ubj names its region: another mode, a new
 * region or another region of the same image is refused (they would serve
 * the image without its last commits); its own region recovers them */
static void test_unclean_names_region(void **state)
{
    (void)state;
    char p[256], q[256], other[256];
    ut_region_path(p, sizeof p, "unclean");
    ut_region_path(q, sizeof q, "unclean-copy");
    ut_region_path(other, sizeof other, "unclean-other");
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ut_new_fs(2048, p, 64, &dev, &fs);
    uint8_t uuid[16];
    assert_ok(timg_uuid(dev, uuid));
    struct ubj_nvm *r;          /* a valid region of this image, not the one used */
    unlink(other);
    assert_ok(ubjm_attach(other, 0, 64, uuid, UBJM_NVMA_FORMAT, &r));
    ubj_nvm_close(r);
    assert_ok(tpath_put(fs, "/kept", "committed", 9));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/kept"), 0));
    uint8_t *img;               /* the crash: image and region as they are */
    size_t len;
    assert_ok(ut_file_get(p, &img, &len));
    assert_ok(ut_file_put(q, img, len));
    free(img);
    struct ubj_bdev *crashed = ut_ram_copy(dev);
    assert_ok(ubj_unmount(fs));

    struct ubj_config none = { .mode = UBJ_MODE_NONE, .flags = UBJ_MOUNT_NO_TIMER };
    assert_rc(ubj_mount(crashed, &none, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "not unmounted cleanly from mode ubj"));
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s.new", q);
    unlink(fresh);
    assert_rc(ut_mount(crashed, fresh, 64, UBJ_NVM_FORMAT, 0, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "refusing --format-nvm"));
    assert_int_equal(access(fresh, F_OK), -1);   /* nothing was created */
    assert_ok(ubjm_attach(other, 0, 64, uuid, UBJM_NVMA_FORMAT, &r));
    ubj_nvm_close(r);
    assert_rc(ut_mount(crashed, other, 64, 0, 0, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "mount with the region it used"));

    /* a lost region: repair without it; the region can never come back */
    struct ubj_bdev *lost = ut_ram_copy(crashed);
    assert_int_equal(ubj_check(lost, UBJ_CHECK_REPAIR, NULL, NULL), UBJ_CHECK_OPERROR);
    int cr = ubj_check(lost, UBJ_CHECK_REPAIR | UBJ_CHECK_DISCARD_NVM, NULL, NULL);
    assert_true(cr == UBJ_CHECK_CLEAN || cr == UBJ_CHECK_REPAIRED);
    assert_rc(ut_mount(lost, q, 64, 0, 0, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "would roll"));
    ubj_bdev_destroy(lost);

    assert_ok(ut_mount(crashed, q, 64, 0, 0, &fs));      /* its own region */
    uint8_t buf[16];
    assert_int_equal(tpath_read(fs, "/kept", buf, sizeof buf, 0), 9);
    assert_memory_equal(buf, "committed", 9);
    assert_ok(ubj_unmount(fs));
    assert_ok(ubj_mount(crashed, &none, &fs));   /* clean now: any mode */
    assert_true(tpath_ino(fs, "/kept") != 0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(crashed);
    ubj_bdev_destroy(dev);
    unlink(p);
    unlink(q);
    unlink(other);
}

/* an older copy of the right region (same id, taken before the last
 * mount) is refused, crashed image or clean: its commits would roll the
 * image back; the current region recovers everything */
static void test_stale_region_copy(void **state)
{
    (void)state;
    char p[256], old[256], cur[256];
    ut_region_path(p, sizeof p, "stale");
    ut_region_path(old, sizeof old, "stale-old");
    ut_region_path(cur, sizeof cur, "stale-cur");
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    ut_new_fs(2048, p, 64, &dev, &fs);
    assert_ok(tpath_put(fs, "/a", "one", 3));
    assert_ok(ubj_unmount(fs));
    uint8_t *img;
    size_t len;
    assert_ok(ut_file_get(p, &img, &len));      /* the copy a user keeps */
    assert_ok(ut_file_put(old, img, len));
    free(img);
    assert_ok(ut_mount(dev, p, 64, 0, 0, &fs));
    assert_ok(tpath_put(fs, "/b", "two", 3));
    assert_ok(ubj_fsync(fs, tpath_ino(fs, "/b"), 0));
    assert_ok(ut_file_get(p, &img, &len));      /* the crash */
    assert_ok(ut_file_put(cur, img, len));
    free(img);
    struct ubj_bdev *crashed = ut_ram_copy(dev);
    assert_ok(ubj_unmount(fs));

    assert_rc(ut_mount(crashed, old, 64, 0, 0, &fs), -EUCLEAN);
    assert_non_null(strstr(ubj_errormsg(), "older copy"));
    assert_ok(ut_mount(crashed, cur, 64, 0, 0, &fs));
    assert_true(tpath_ino(fs, "/b") != 0);
    assert_ok(ubj_unmount(fs));
    assert_rc(ut_mount(crashed, old, 64, 0, 0, &fs), -EUCLEAN);   /* clean too */
    assert_ok(ut_mount(crashed, cur, 64, 0, 0, &fs));
    assert_true(tpath_ino(fs, "/a") != 0 && tpath_ino(fs, "/b") != 0);
    assert_ok(ubj_unmount(fs));
    ubj_bdev_destroy(crashed);
    ubj_bdev_destroy(dev);
    unlink(p);
    unlink(old);
    unlink(cur);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_format_open),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_format_guard),
        cmocka_unit_test(test_persist_stats),
        cmocka_unit_test(test_shadow),
        cmocka_unit_test(test_mount_config),
        cmocka_unit_test(test_cost_model),
        cmocka_unit_test(test_fill_charged),
        cmocka_unit_test(test_unclean_names_region),
        cmocka_unit_test(test_stale_region_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
