/*
 * bench/sqlite_vfs.c -- a SQLite VFS (sqlite3_vfs, version 2) whose files
 * live on the benchmark run's mount, so libsqlite3's own pager and journal
 * drive the library (the SQLite workload, wl_sqlite.c).
 *
 * Paths are absolute in the mount ("bench.db" -> "/bench.db").  Each VFS
 * method is one or a few counted calls (bench_int.h): xOpen = lookup
 * (STAT) + create if asked (CREATE) + OPEN; xRead/xWrite = one READ/WRITE;
 * xTruncate OTHER; xSync FSYNC (fdatasync with SQLITE_SYNC_DATAONLY);
 * xFileSize STAT; xDelete UNLINK (+ FSYNC of the directory when SQLite
 * asks for the directory sync); xAccess STAT.
 * Locking: one process, one connection -- every lock is granted at once
 * (xLock records the level, xCheckReservedLock reports no other holder).
 * Determinism: xRandomness is a stream seeded from the run's seed,
 * xCurrentTime reads the run's clock (from 2020-01-01), xSleep lets the
 * run's clock pass.
 * A file-system error becomes SQLITE_FULL (-ENOSPC) or the method's
 * SQLITE_IOERR_* code; bh_sqlvfs_errno() hands the errno to the workload.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "bench/bench_int.h"
#include "util/util.h"

#define SV_MAXPATH 512
#define SV_EPOCH_JD_MS 212189155200000LL   /* 2020-01-01 00:00 UTC, Julian ms */

struct bh_sqlvfs {
    sqlite3_vfs base;
    struct bh_run *r;
    char name[48];
    struct bh_proc rng;       /* xRandomness */
    unsigned ntemp;           /* temporary file names */
    int err;                  /* last negative errno */
};

struct sv_file {
    sqlite3_file base;        /* first: SQLite's handle */
    struct bh_sqlvfs *v;
    ubj_ino_t ino, dir;
    char name[UBJ_NAME_MAX + 1];
    bool del_on_close;
    int lock;
};

/* sv_vfs -- our VFS behind SQLite's pointer. */
static struct bh_sqlvfs *sv_vfs(sqlite3_vfs *vfs)
{
    return (struct bh_sqlvfs *)vfs;
}

/* sv_fail -- remember rc; SQLITE_FULL for -ENOSPC, else `code`. */
static int sv_fail(struct bh_sqlvfs *v, int rc, int code)
{
    v->err = rc;
    return rc == -ENOSPC ? SQLITE_FULL : code;
}

/* ---- file methods --------------------------------------------------------- */

/* sv_close -- release; delete a DELETEONCLOSE file. */
static int sv_close(sqlite3_file *f)
{
    struct sv_file *sf = (struct sv_file *)f;
    struct bh_run *r = sf->v->r;
    int rc = bh_close(r, sf->ino);
    if (rc == 0 && sf->del_on_close)
        rc = bh_unlink(r, sf->dir, sf->name);
    return rc < 0 ? sv_fail(sf->v, rc, SQLITE_IOERR_CLOSE) : SQLITE_OK;
}

/* sv_read -- pread; zero-fill and SHORT_READ past the end. */
static int sv_read(sqlite3_file *f, void *buf, int amt, sqlite3_int64 off)
{
    struct sv_file *sf = (struct sv_file *)f;
    bh_count(sf->v->r, BH_OP_READ);
    bh_call_begin(sf->v->r);
    ssize_t got = ubj_pread(bh_fs(sf->v->r), sf->ino, buf, (size_t)amt, (off_t)off);
    bh_call_end(sf->v->r);
    if (got < 0)
        return sv_fail(sf->v, (int)got, SQLITE_IOERR_READ);
    bh_count_bytes(sf->v->r, 0, (uint64_t)got);
    if (got < amt) {
        memset((char *)buf + got, 0, (size_t)(amt - got));
        return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
}

/* sv_write -- pwrite all of it. */
static int sv_write(sqlite3_file *f, const void *buf, int amt, sqlite3_int64 off)
{
    struct sv_file *sf = (struct sv_file *)f;
    bh_count(sf->v->r, BH_OP_WRITE);
    bh_call_begin(sf->v->r);
    ssize_t w = ubj_pwrite(bh_fs(sf->v->r), sf->ino, buf, (size_t)amt, (off_t)off);
    bh_call_end(sf->v->r);
    if (w < 0)
        return sv_fail(sf->v, (int)w, SQLITE_IOERR_WRITE);
    bh_count_bytes(sf->v->r, (uint64_t)w, 0);
    return w < amt ? sv_fail(sf->v, -ENOSPC, SQLITE_FULL) : SQLITE_OK;
}

/* sv_truncate -- set the size. */
static int sv_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    struct sv_file *sf = (struct sv_file *)f;
    int rc = bh_truncate(sf->v->r, sf->ino, (uint64_t)size);
    return rc < 0 ? sv_fail(sf->v, rc, SQLITE_IOERR_TRUNCATE) : SQLITE_OK;
}

/* sv_sync -- fsync or fdatasync. */
static int sv_sync(sqlite3_file *f, int flags)
{
    struct sv_file *sf = (struct sv_file *)f;
    int rc = bh_fsync(sf->v->r, sf->ino, (flags & SQLITE_SYNC_DATAONLY) != 0);
    return rc < 0 ? sv_fail(sf->v, rc, SQLITE_IOERR_FSYNC) : SQLITE_OK;
}

/* sv_filesize -- the size from the inode. */
static int sv_filesize(sqlite3_file *f, sqlite3_int64 *size)
{
    struct sv_file *sf = (struct sv_file *)f;
    struct ubj_stat st;
    int rc = bh_stat(sf->v->r, sf->ino, &st);
    if (rc < 0)
        return sv_fail(sf->v, rc, SQLITE_IOERR_FSTAT);
    *size = (sqlite3_int64)st.size;
    return SQLITE_OK;
}

/* sv_lock -- granted (one process). */
static int sv_lock(sqlite3_file *f, int level)
{
    ((struct sv_file *)f)->lock = level;
    return SQLITE_OK;
}

/* sv_unlock -- lowered. */
static int sv_unlock(sqlite3_file *f, int level)
{
    ((struct sv_file *)f)->lock = level;
    return SQLITE_OK;
}

/* sv_check_reserved -- no other connection can hold RESERVED. */
static int sv_check_reserved(sqlite3_file *f, int *res)
{
    (void)f;
    *res = 0;
    return SQLITE_OK;
}

/* sv_file_control -- no file controls of our own. */
static int sv_file_control(sqlite3_file *f, int op, void *arg)
{
    (void)f; (void)op; (void)arg;
    return SQLITE_NOTFOUND;
}

/* sv_sector_size -- the file system's block. */
static int sv_sector_size(sqlite3_file *f)
{
    (void)f;
    return 4096;
}

/* sv_device_chars -- promise nothing beyond POSIX. */
static int sv_device_chars(sqlite3_file *f)
{
    (void)f;
    return 0;
}

static const sqlite3_io_methods sv_io = {
    .iVersion = 1,
    .xClose = sv_close,
    .xRead = sv_read,
    .xWrite = sv_write,
    .xTruncate = sv_truncate,
    .xSync = sv_sync,
    .xFileSize = sv_filesize,
    .xLock = sv_lock,
    .xUnlock = sv_unlock,
    .xCheckReservedLock = sv_check_reserved,
    .xFileControl = sv_file_control,
    .xSectorSize = sv_sector_size,
    .xDeviceCharacteristics = sv_device_chars,
};

/* ---- VFS methods ---------------------------------------------------------- */

/* sv_parent -- directory and last component of an absolute path. */
static int sv_parent(struct bh_sqlvfs *v, const char *path, ubj_ino_t *dir,
                     char *name)
{
    const char *last;
    int rc = ubj_path_parent(bh_fs(v->r), path, dir, &last);
    if (rc < 0)
        return rc;
    size_t n = strcspn(last, "/");
    if (n == 0 || n > UBJ_NAME_MAX)
        return -EINVAL;
    memcpy(name, last, n);
    name[n] = '\0';
    return 0;
}

/* sv_open_path -- look up (and create) the file of sf. */
static int sv_open_path(struct bh_sqlvfs *v, struct sv_file *sf, const char *path,
                        int flags)
{
    int rc = sv_parent(v, path, &sf->dir, sf->name);
    if (rc < 0)
        return rc;
    struct ubj_stat st;
    rc = bh_lookup(v->r, sf->dir, sf->name, &st);
    if (rc == 0 && (flags & SQLITE_OPEN_EXCLUSIVE))
        return -EEXIST;
    if (rc == -ENOENT && (flags & SQLITE_OPEN_CREATE))
        rc = bh_create(v->r, sf->dir, sf->name, &st.ino);
    if (rc < 0)
        return rc;
    sf->ino = st.ino;
    return bh_open(v->r, sf->ino, (flags & SQLITE_OPEN_READWRITE) ? O_RDWR : O_RDONLY);
}

/* sv_open -- xOpen. */
static int sv_open(sqlite3_vfs *vfs, const char *zname, sqlite3_file *f,
                   int flags, int *out_flags)
{
    struct bh_sqlvfs *v = sv_vfs(vfs);
    struct sv_file *sf = (struct sv_file *)f;
    char tmp[64];
    memset(sf, 0, sizeof *sf);
    sf->v = v;
    if (zname == NULL) {
        snprintf(tmp, sizeof tmp, "/sqlite-temp-%u", v->ntemp++);
        zname = tmp;
        flags |= SQLITE_OPEN_CREATE | SQLITE_OPEN_DELETEONCLOSE;
    }
    sf->del_on_close = (flags & SQLITE_OPEN_DELETEONCLOSE) != 0;
    int rc = sv_open_path(v, sf, zname, flags);
    if (rc < 0)
        return sv_fail(v, rc, SQLITE_CANTOPEN);
    if (out_flags != NULL)
        *out_flags = flags;
    sf->base.pMethods = &sv_io;
    return SQLITE_OK;
}

/* sv_delete -- xDelete (+ the directory's fsync when asked). */
static int sv_delete(sqlite3_vfs *vfs, const char *path, int sync_dir)
{
    struct bh_sqlvfs *v = sv_vfs(vfs);
    ubj_ino_t dir;
    char name[UBJ_NAME_MAX + 1];
    int rc = sv_parent(v, path, &dir, name);
    if (rc == 0)
        rc = bh_unlink(v->r, dir, name);
    if (rc == -ENOENT)
        return SQLITE_IOERR_DELETE_NOENT;
    if (rc == 0 && sync_dir)
        rc = bh_fsync(v->r, dir, 0);
    return rc < 0 ? sv_fail(v, rc, SQLITE_IOERR_DELETE) : SQLITE_OK;
}

/* sv_access -- exists (every file is readable and writable). */
static int sv_access(sqlite3_vfs *vfs, const char *path, int flags, int *res)
{
    struct bh_sqlvfs *v = sv_vfs(vfs);
    ubj_ino_t dir;
    char name[UBJ_NAME_MAX + 1];
    struct ubj_stat st;
    (void)flags;
    int rc = sv_parent(v, path, &dir, name);
    if (rc == 0)
        rc = bh_lookup(v->r, dir, name, &st);
    if (rc < 0 && rc != -ENOENT)
        return sv_fail(v, rc, SQLITE_IOERR_ACCESS);
    *res = rc == 0;
    return SQLITE_OK;
}

/* sv_fullpath -- "/" + a relative name. */
static int sv_fullpath(sqlite3_vfs *vfs, const char *path, int n, char *out)
{
    (void)vfs;
    int len = snprintf(out, (size_t)n, "%s%s", path[0] == '/' ? "" : "/", path);
    return len < 0 || len >= n ? SQLITE_CANTOPEN : SQLITE_OK;
}

/* sv_randomness -- the run's deterministic stream. */
static int sv_randomness(sqlite3_vfs *vfs, int n, char *out)
{
    struct bh_sqlvfs *v = sv_vfs(vfs);
    for (int i = 0; i < n; i++)
        out[i] = (char)(bh_rand(&v->rng) >> 56);
    return n;
}

/* sv_sleep -- let the time pass on the run's clock. */
static int sv_sleep(sqlite3_vfs *vfs, int us)
{
    bh_sleep_ns(sv_vfs(vfs)->r, (uint64_t)us * 1000u);
    return us;
}

/* sv_time64 -- Julian day in ms, from the run's clock. */
static int sv_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    *out = SV_EPOCH_JD_MS + (sqlite3_int64)(bh_now_ns(sv_vfs(vfs)->r) / 1000000u);
    return SQLITE_OK;
}

/* sv_time -- Julian day as a double. */
static int sv_time(sqlite3_vfs *vfs, double *out)
{
    sqlite3_int64 ms;
    sv_time64(vfs, &ms);
    *out = (double)ms / 86400000.0;
    return SQLITE_OK;
}

/* sv_last_error -- nothing beyond the return codes. */
static int sv_last_error(sqlite3_vfs *vfs, int n, char *buf)
{
    (void)vfs;
    if (n > 0)
        buf[0] = '\0';
    return 0;
}

/* bh_sqlvfs_create -- a VFS of the run, registered under its own name. */
int bh_sqlvfs_create(struct bh_run *r, struct bh_sqlvfs **out)
{
    struct bh_sqlvfs *v = calloc(1, sizeof *v);
    if (v == NULL)
        return ubj_set_error(-ENOMEM, "bench sqlite: out of memory");
    v->r = r;
    v->rng.rng = bh_params_of(r)->seed * 0x9E3779B97F4A7C15ULL | 1u;
    snprintf(v->name, sizeof v->name, "ubjfs-bench-%p", (void *)v);
    v->base = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(struct sv_file),
        .mxPathname = SV_MAXPATH, .zName = v->name, .pAppData = v,
        .xOpen = sv_open, .xDelete = sv_delete, .xAccess = sv_access,
        .xFullPathname = sv_fullpath, .xRandomness = sv_randomness,
        .xSleep = sv_sleep, .xCurrentTime = sv_time,
        .xGetLastError = sv_last_error, .xCurrentTimeInt64 = sv_time64,
    };
    if (sqlite3_initialize() != SQLITE_OK || sqlite3_vfs_register(&v->base, 0) != SQLITE_OK) {
        free(v);
        return ubj_set_error(-EIO, "bench sqlite: cannot register the VFS");
    }
    *out = v;
    return 0;
}

/* bh_sqlvfs_name -- the registered name. */
const char *bh_sqlvfs_name(const struct bh_sqlvfs *v)
{
    return v->name;
}

/* bh_sqlvfs_errno -- the last error, cleared. */
int bh_sqlvfs_errno(struct bh_sqlvfs *v)
{
    int e = v->err;
    v->err = 0;
    return e;
}

/* bh_sqlvfs_destroy -- unregister, free. */
void bh_sqlvfs_destroy(struct bh_sqlvfs *v)
{
    if (v == NULL)
        return;
    sqlite3_vfs_unregister(&v->base);
    free(v);
}
