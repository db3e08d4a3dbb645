/*
 * falloc.c -- ubj_fallocate through the library (src/fs/falloc.c): modes
 * 0 and KEEP_SIZE allocate unwritten extents that read as zeros, keep
 * written data, convert on write, persist across remounts, are freed by
 * truncate and unlink; Linux's errors; -ENOSPC leaves a consistent file.
 * Every test ends with an fsck that must be clean (tfs_teardown).
 */
#include "testutil.h"
#include <linux/falloc.h>

#define BS 4096u

/* t_file -- create a regular file at path; its inode. */
static ubj_ino_t t_file(struct ubj_fs *fs, const char *path)
{
    struct ubj_stat st;
    assert_ok(tpath_create(fs, path, 0644, &st));
    return st.ino;
}

/* t_stat -- getattr that must succeed. */
static struct ubj_stat t_stat(struct ubj_fs *fs, ubj_ino_t ino)
{
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, ino, &st));
    return st;
}

/* t_zeros -- bytes [off, off+len) of ino read as zeros (within size). */
static void t_zeros(struct ubj_fs *fs, ubj_ino_t ino, off_t off, size_t len)
{
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    memset(buf, 0xa5, len);
    assert_rc(ubj_pread(fs, ino, buf, len, off), (ssize_t)len);
    assert_int_equal(tzero_check(buf, len), len);
    free(buf);
}

/* test_mode0 -- size grows to off+len, blocks allocated, zeros read. */
static void test_mode0(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    assert_int_equal(UBJ_FALLOC_KEEP_SIZE, FALLOC_FL_KEEP_SIZE);
    ubj_ino_t ino = t_file(fs, "/f");
    uint64_t free0 = t_free_blocks(fs);
    assert_ok(ubj_fallocate(fs, ino, 0, 1000, 100 * BS));
    struct ubj_stat st = t_stat(fs, ino);
    assert_int_equal(st.size, 1000 + 100 * BS);
    assert_int_equal(st.blocks, 101 * (BS / 512));     /* blocks 0..100 */
    assert_int_equal(t_free_blocks(fs), free0 - 101);
    t_zeros(fs, ino, 0, (size_t)st.size);
    /* a second call over the same range allocates nothing more */
    assert_ok(ubj_fallocate(fs, ino, 0, 0, 101 * BS));
    assert_int_equal(t_free_blocks(fs), free0 - 101);
    assert_int_equal(t_stat(fs, ino).size, 101 * BS);
    /* a smaller range never shrinks the file */
    assert_ok(ubj_fallocate(fs, ino, 0, 0, BS));
    assert_int_equal(t_stat(fs, ino).size, 101 * BS);
}

/* test_keep_size -- KEEP_SIZE: blocks past EOF, size unchanged; writing
 * there converts them; truncate frees them. */
static void test_keep_size(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    uint8_t buf[3 * BS], back[3 * BS];
    tpattern_fill(buf, 100, 7, 0);
    assert_rc(ubj_pwrite(fs, ino, buf, 100, 0), 100);
    uint64_t free0 = t_free_blocks(fs);
    assert_ok(ubj_fallocate(fs, ino, UBJ_FALLOC_KEEP_SIZE, 0, 64 * BS));
    struct ubj_stat st = t_stat(fs, ino);
    assert_int_equal(st.size, 100);
    assert_int_equal(st.blocks, 64 * (BS / 512));
    assert_int_equal(t_free_blocks(fs), free0 - 63);
    assert_rc(ubj_pread(fs, ino, back, sizeof back, 0), 100);
    assert_int_equal(tpattern_check(back, 100, 7, 0), 100);
    /* a write in the middle of the preallocated range, past EOF */
    tpattern_fill(buf, 2 * BS, 9, 10 * BS + 500);
    assert_rc(ubj_pwrite(fs, ino, buf, 2 * BS, 10 * BS + 500), 2 * BS);
    assert_int_equal(t_free_blocks(fs), free0 - 63);    /* converted, not new */
    st = t_stat(fs, ino);
    assert_int_equal(st.size, 12 * BS + 500);
    t_zeros(fs, ino, 100, 10 * BS + 400);
    assert_rc(ubj_pread(fs, ino, back, 2 * BS, 10 * BS + 500), 2 * BS);
    assert_int_equal(tpattern_check(back, 2 * BS, 9, 10 * BS + 500), 2 * BS);
    /* extending by truncate shows zeros over the unwritten blocks */
    assert_ok(tpath_truncate(fs, "/f", 40 * BS));
    t_zeros(fs, ino, 12 * BS + 500, 28 * BS - 500);
    assert_int_equal(t_stat(fs, ino).blocks, 64 * (BS / 512));
    /* shrinking frees the blocks past the new end, preallocated ones too */
    assert_ok(tpath_truncate(fs, "/f", 100));
    assert_int_equal(t_stat(fs, ino).blocks, BS / 512);
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_keeps_data -- fallocate over written data and holes keeps the data. */
static void test_keeps_data(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    uint8_t *buf = malloc(64 * BS), *back = malloc(64 * BS);
    assert_non_null(buf);
    assert_non_null(back);
    /* every third block written: 22 holes in between get preallocated,
     * more extent steps than one round does */
    for (unsigned b = 0; b < 64; b += 3) {
        tpattern_fill(buf, BS, 3, (uint64_t)b * BS);
        assert_rc(ubj_pwrite(fs, ino, buf, BS, (off_t)b * BS), BS);
    }
    uint64_t free0 = t_free_blocks(fs);
    assert_ok(ubj_fallocate(fs, ino, 0, 0, 64 * BS));
    assert_int_equal(t_free_blocks(fs), free0 - (64 - 22));
    assert_int_equal(t_stat(fs, ino).size, 64 * BS);
    assert_rc(ubj_pread(fs, ino, back, 64 * BS, 0), 64 * BS);
    for (unsigned b = 0; b < 64; b++) {
        if (b % 3 == 0)
            assert_int_equal(tpattern_check(back + b * BS, BS, 3, (uint64_t)b * BS), BS);
        else
            assert_int_equal(tzero_check(back + b * BS, BS), BS);
    }
    /* partial write into an unwritten block: the rest of it stays zero */
    assert_rc(ubj_pwrite(fs, ino, "abc", 3, 4 * BS + 7), 3);
    assert_rc(ubj_pread(fs, ino, back, BS, 4 * BS), BS);
    assert_memory_equal(back + 7, "abc", 3);
    back[7] = back[8] = back[9] = 0;
    assert_int_equal(tzero_check(back, BS), BS);
    free(buf);
    free(back);
}

/* test_persist -- unwritten extents survive a remount and read as zeros. */
static void test_persist(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "/f");
    assert_ok(ubj_fallocate(t->fs, ino, 0, 0, 16 * BS));
    assert_ok(ubj_fallocate(t->fs, ino, UBJ_FALLOC_KEEP_SIZE, 16 * BS, 16 * BS));
    assert_rc(ubj_pwrite(t->fs, ino, "x", 1, 5 * BS), 1);
    ubj_test_remount(t->dev, &t->fs);
    struct ubj_stat st = t_stat(t->fs, ino);
    assert_int_equal(st.size, 16 * BS);
    assert_int_equal(st.blocks, 32 * (BS / 512));
    t_zeros(t->fs, ino, 0, 5 * BS);
    t_zeros(t->fs, ino, 5 * BS + 1, 11 * BS - 1);
    assert_ok(tpath_unlink(t->fs, "/f"));
}

/* test_errors -- Linux's errors, in vfs_fallocate's order. */
static void test_errors(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    struct ubj_stat st;
    ubj_ino_t ino = t_file(fs, "/f");
    assert_rc(ubj_fallocate(fs, ino, 0, 0, 0), -EINVAL);
    assert_rc(ubj_fallocate(fs, ino, 0, -1, 10), -EINVAL);
    assert_rc(ubj_fallocate(fs, ino, 0, 0, -5), -EINVAL);
    assert_rc(ubj_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, BS),
              -EOPNOTSUPP);
    assert_rc(ubj_fallocate(fs, ino, FALLOC_FL_ZERO_RANGE, 0, BS), -EOPNOTSUPP);
    assert_rc(ubj_fallocate(fs, ino, FALLOC_FL_COLLAPSE_RANGE, 0, BS), -EOPNOTSUPP);
    assert_rc(ubj_fallocate(fs, ino, 0, (off_t)UBJ_MAX_FILE_SIZE, 1), -EFBIG);
    assert_rc(ubj_fallocate(fs, ino, 0, (off_t)UBJ_MAX_FILE_SIZE - BS, 2 * BS), -EFBIG);
    assert_ok(tpath_mkdir(fs, "/d", 0755, &st));
    assert_rc(ubj_fallocate(fs, st.ino, 0, 0, BS), -EISDIR);
    assert_ok(ubj_mknod(fs, UBJ_ROOT_INO, "p", S_IFIFO | 0644, 0, NULL, &st));
    assert_rc(ubj_fallocate(fs, st.ino, 0, 0, BS), -ESPIPE);
    assert_ok(tpath_symlink(fs, "f", "/l"));
    assert_rc(ubj_fallocate(fs, tpath_ino(fs, "/l"), 0, 0, BS), -ENODEV);
    assert_rc(ubj_fallocate(fs, 999999, 0, 0, BS), -ENOENT);
    assert_int_equal(t_stat(fs, ino).size, 0);
    /* the last block a file may have */
    assert_ok(ubj_fallocate(fs, ino, UBJ_FALLOC_KEEP_SIZE,
                            (off_t)UBJ_MAX_FILE_SIZE - BS, BS));
    assert_int_equal(t_stat(fs, ino).blocks, BS / 512);
}

/* test_enospc -- more than the free space: -ENOSPC, the size covers what
 * was allocated, fsck is clean, and the space comes back on unlink. */
static void test_enospc(void **state)
{
    struct ubj_fs *fs = TFS(state)->fs;
    ubj_ino_t ino = t_file(fs, "/f");
    uint64_t free0 = t_free_blocks(fs);
    assert_rc(ubj_fallocate(fs, ino, 0, 0, (off_t)(free0 + 10) * BS), -ENOSPC);
    struct ubj_stat st = t_stat(fs, ino);
    uint64_t used = free0 - t_free_blocks(fs);
    assert_true(used > free0 / 2);
    assert_true(st.size <= used * BS);
    assert_true(st.size > 0);
    assert_int_equal(st.size % BS, 0);
    t_zeros(fs, ino, (off_t)st.size - BS, BS);
    assert_ok(tpath_unlink(fs, "/f"));
    assert_int_equal(t_free_blocks(fs), free0);
}

/* test_rofs -- a read-only mount refuses with -EROFS. */
static void test_rofs(void **state)
{
    struct tfs *t = TFS(state);
    ubj_ino_t ino = t_file(t->fs, "/f");
    assert_ok(ubj_unmount(t->fs));
    assert_ok(ubj_test_mount(t->dev, UBJ_MOUNT_RDONLY, &t->fs));
    assert_rc(ubj_fallocate(t->fs, ino, 0, 0, BS), -EROFS);
    ubj_test_remount(t->dev, &t->fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mode0, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_keep_size, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_keeps_data, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_persist, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_errors, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_enospc, tfs_setup, tfs_teardown),
        cmocka_unit_test_setup_teardown(test_rofs, tfs_setup, tfs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
