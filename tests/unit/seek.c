/*
 * seek.c -- ubj_seek_data / ubj_seek_hole (src/fs/file.c; issue 14,
 * defect 6): lseek(2)'s SEEK_DATA/SEEK_HOLE answers from the extent map.
 * Holes at the start, in the middle and at the end; a file of only holes;
 * data up to a partial last block (the hole is the size); fallocated
 * (unwritten) ranges are holes until written; after truncate down and up;
 * hundreds of extents in a tree of depth >= 1 walked both ways against
 * the pattern written; a 16 TiB file with one block at its end (found by
 * a few tree lookups, no data block read); -ENXIO at and past EOF and for
 * negative offsets, -EISDIR, -EINVAL.
 *
 * Fails on fd8c42e: it does not build (ubj_seek_data and ubj_seek_hole
 * do not exist; the only way to find data was to read every block).
 */
#include "testutil.h"

#define BS 4096u

/* t_file -- create a regular file at path; its inode. */
static ubj_ino_t t_file(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    assert_ok(tpath_create(fs, path, 0644, &st));
    return st.ino;
}

/* t_put -- write n bytes of pattern at off (must all be written). */
static void t_put(struct ubj_fs *fs, ubj_ino_t ino, uint64_t off, size_t n)
{
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    tpattern_fill(buf, n, 5, off);
    assert_rc(ubj_pwrite(fs, ino, buf, n, (off_t)off), (ssize_t)n);
    free(buf);
}

/* t_size -- set the size (truncate down or up). */
static void t_size(struct ubj_fs *fs, ubj_ino_t ino, uint64_t size)
{
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = size };
    assert_ok(ubj_setattr(fs, ino, &sa, NULL));
}

#define D(off) ubj_seek_data(fs, ino, (off_t)(off))
#define H(off) ubj_seek_hole(fs, ino, (off_t)(off))

/* test_empty -- size 0: nothing at offset 0, as Linux (-ENXIO both). */
static void test_empty(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    assert_rc(D(0), -ENXIO);
    assert_rc(H(0), -ENXIO);
}

/* test_only_holes -- a file extended by truncate: one hole to the end. */
static void test_only_holes(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    t_size(fs, ino, 10 * BS + 100);
    assert_rc(D(0), -ENXIO);
    assert_rc(D(10 * BS + 99), -ENXIO);
    assert_rc(H(0), 0);
    assert_rc(H(5000), 5000);
    assert_rc(H(10 * BS + 99), 10 * BS + 99);
    assert_rc(H(10 * BS + 100), -ENXIO);          /* at EOF */
    assert_rc(D(10 * BS + 100), -ENXIO);
    assert_rc(H(1ll << 50), -ENXIO);              /* far past it */
    assert_rc(D(-1), -ENXIO);                     /* negative: Linux's ENXIO */
    assert_rc(H(-4096), -ENXIO);
}

/* test_start_middle_end -- hole, data, hole, data, hole to EOF. */
static void test_start_middle_end(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    t_put(fs, ino, 3 * BS, BS);                   /* block 3 */
    t_put(fs, ino, 10 * BS + 17, BS);             /* blocks 10, 11 */
    uint64_t size = 20 * BS + 7;
    t_size(fs, ino, size);
    assert_rc(D(0), 3 * BS);                      /* hole at the start */
    assert_rc(D(3 * BS - 1), 3 * BS);
    assert_rc(D(3 * BS), 3 * BS);
    assert_rc(D(3 * BS + 5), 3 * BS + 5);         /* inside data: off itself */
    assert_rc(H(0), 0);
    assert_rc(H(3 * BS), 4 * BS);
    assert_rc(H(4 * BS - 1), 4 * BS);
    assert_rc(D(4 * BS), 10 * BS);                /* the middle hole */
    assert_rc(D(10 * BS + 3), 10 * BS + 3);       /* a block's unwritten head is data */
    assert_rc(H(10 * BS), 12 * BS);
    assert_rc(D(12 * BS), -ENXIO);                /* only the hole at the end */
    assert_rc(H(12 * BS + 1), 12 * BS + 1);
    assert_rc(H(size - 1), size - 1);
    assert_rc(D(size), -ENXIO);
    assert_rc(H(size), -ENXIO);
}

/* test_data_to_eof -- data to a partial last block: the hole is the size. */
static void test_data_to_eof(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    t_put(fs, ino, 0, 5000);
    assert_rc(D(0), 0);
    assert_rc(D(4999), 4999);
    assert_rc(H(0), 5000);                        /* not 8192: the size */
    assert_rc(H(4096), 5000);
    assert_rc(H(5000), -ENXIO);
}

/* test_fallocated -- unwritten extents are holes (ext4's answer) until
 * written; KEEP_SIZE blocks past EOF change nothing. */
static void test_fallocated(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    t_put(fs, ino, 0, BS);                        /* block 0 */
    assert_ok(ubj_fallocate(fs, ino, 0, BS, 5 * BS));     /* blocks 1..5 */
    assert_rc(H(0), BS);
    assert_rc(D(BS), -ENXIO);                     /* unwritten to EOF */
    assert_rc(H(2 * BS), 2 * BS);
    t_put(fs, ino, 3 * BS, BS);                   /* converts block 3 */
    assert_rc(D(BS), 3 * BS);
    assert_rc(H(3 * BS), 4 * BS);
    assert_rc(D(4 * BS), -ENXIO);
    assert_ok(ubj_fallocate(fs, ino, UBJ_FALLOC_KEEP_SIZE, 6 * BS, 50 * BS));
    assert_rc(H(4 * BS), 4 * BS);
    assert_rc(H(6 * BS - 1), 6 * BS - 1);
    assert_rc(H(6 * BS), -ENXIO);                 /* size is still 6 blocks */
}

/* test_truncate -- truncating down ends the data at the new size;
 * extending again adds a hole. */
static void test_truncate(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    t_put(fs, ino, 0, 10 * BS);
    assert_rc(H(0), 10 * BS);
    t_size(fs, ino, 2 * BS + 10);
    assert_rc(H(0), 2 * BS + 10);
    assert_rc(D(2 * BS + 9), 2 * BS + 9);
    t_size(fs, ino, 100 * BS);
    assert_rc(H(0), 3 * BS);                      /* blocks 3.. were freed */
    assert_rc(D(3 * BS), -ENXIO);
    t_size(fs, ino, 0);
    assert_rc(D(0), -ENXIO);
    assert_rc(H(0), -ENXIO);
}

/* test_many_extents -- every third block written (an extent tree of depth
 * >= 1): walking data and holes from 0 visits exactly those blocks. */
static void test_many_extents(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    const unsigned n = 600;
    for (unsigned i = 0; i < n; i++)
        t_put(fs, ino, (uint64_t)i * 3 * BS, BS);
    uint64_t size = (uint64_t)n * 3 * BS;
    t_size(fs, ino, size);
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, ino, &st));
    assert_true(st.blocks > (uint64_t)n * (BS / 512));   /* tree nodes too */
    unsigned found = 0;
    off_t off = 0;
    for (;;) {
        off_t d = D(off);
        if (d == -ENXIO)
            break;
        assert_true(d >= 0);
        assert_int_equal(d, (off_t)found * 3 * BS);
        off_t h = H(d);
        assert_int_equal(h, d + BS);
        found++;
        off = h;
    }
    assert_int_equal(found, n);
    assert_rc(H(size - 2 * BS), size - 2 * BS);
}

/* test_huge -- a 16 TiB file with data only in its last block and in the
 * middle (no data block is read: the answers come from the tree). */
static void test_huge(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    const uint64_t max = UBJ_MAX_FILE_SIZE, mid = max / 2 + 12345;
    t_put(fs, ino, max - 10, 10);
    t_put(fs, ino, mid, 100);
    assert_rc(D(0), mid / BS * BS);
    assert_rc(H(mid), mid / BS * BS + BS);
    assert_rc(D(mid + BS), max - BS);
    assert_rc(H(max - BS), max);
    assert_rc(D(max - 1), max - 1);
    assert_rc(D(max), -ENXIO);
}

/* test_errors -- not a regular file, no such inode. */
static void test_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    assert_ok(tpath_mkdir(fs, "/d", 0755, &st));
    assert_rc(ubj_seek_data(fs, st.ino, 0), -EISDIR);
    assert_rc(ubj_seek_hole(fs, st.ino, 0), -EISDIR);
    assert_ok(tpath_symlink(fs, "target", "/l"));
    assert_rc(ubj_seek_data(fs, tpath_ino(fs, "/l"), 0), -EINVAL);
    assert_rc(ubj_seek_hole(fs, 4000, 0), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_empty, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_only_holes, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_start_middle_end, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_data_to_eof, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_fallocated, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_truncate, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_many_extents, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_huge, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
