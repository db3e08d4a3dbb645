/*
 * ofile.c -- open file descriptions (struct ubj_file, ubjfs.h "open
 * files"): ubj_file_open/close, pread/pwrite through a file, ubj_fadvise,
 * the library's set of live files, and closing a mount's files at
 * unmount (fs_files_close_all).
 *
 * A ubj_file is an inode number, an access mode and one ubj_open
 * reference, plus the per-open-file state POSIX puts in an open file
 * description: the read-ahead hint (advice) and the read-ahead stream
 * (struct fs_ra_stream, rapath.c).  The reads and writes are those of
 * file.c (fs_pread_stream with this file's stream and advice, ubj_pwrite):
 * this file adds no read path of its own, except WILLNEED (ofile_willneed)
 * which reads blocks ahead into the cache (fs_read_ahead: batched, only
 * into free or clean unreferenced buffers) without copying them.
 *
 * Life of one file (the function doing each step):
 *
 *   (none) --ubj_file_open--> LIVE --ubj_file_close--> (freed)
 *                               \--fs_files_close_all (ubj_unmount)--> (freed)
 *
 * Invariants:
 *  O1 A file is LIVE iff it is in ofile_live (the live set, hashed by
 *     address) and in its mount's fs->files list; both change together
 *     under ofile_lock.  ubj_file_close of an address not in the set is
 *     -EBADF without reading it, so a second close, or a close after
 *     ubj_unmount freed the file, touches no freed memory.
 *  O2 A LIVE file holds exactly one ubj_open reference on f->ino; close
 *     drops it after leaving the set (ubj_release), unmount drops every
 *     one at once with the open table (super_close_all).
 *  O3 fs, ino and accmode never change after open; advice is atomic; ra
 *     is read and written under the mount lock only (rapath.c S1), and
 *     follows advice at the file's next read (fs_ra_stream).
 *
 * Locking: ofile_lock is a leaf: taken inside the mount lock by
 * fs_files_close_all, never held while taking the mount lock (open and
 * close take it after/before their ubj_open/ubj_release).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "fs/fs.h"

#define OFILE_BUCKETS 1024u   /* the live set's hash chains */

struct ubj_file {
    struct ubj_fs *fs;             /* O3: never changes */
    ubj_ino_t ino;                 /* O3 */
    int accmode;                   /* O3: O_RDONLY, O_WRONLY or O_RDWR */
    _Atomic int advice;            /* UBJ_FADV_NORMAL, _SEQUENTIAL, _RANDOM */
    struct fs_ra_stream ra;        /* [the mount lock] its read-ahead
                                      stream (rapath.c; zero: none yet) */
    struct ubj_file *hnext;        /* [ofile_lock] the live set's chain */
    struct ubj_file *next, *prev;  /* [ofile_lock] fs->files */
};

static pthread_mutex_t ofile_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ubj_file *ofile_live[OFILE_BUCKETS];   /* [ofile_lock] */

#if UBJ_TEST_HOOKS   /* deliberately broken variants: a test build only */
static int ofile_break_mode;

/* fs_ofile_test_break -- select a broken variant (0: none). */
void fs_ofile_test_break(enum fs_ofile_break which)
{
    ofile_break_mode = (int)which;
}
#define ofile_broken(b) (ofile_break_mode == (int)(b))
#else
#define ofile_broken(b) false
#endif

/* ---- the live set ------------------------------------------------------- */

/* ofile_bucket -- the live-set chain of address f. */
static struct ubj_file **ofile_bucket(const struct ubj_file *f)
{
    uint64_t a = (uint64_t)(uintptr_t)f;
    return &ofile_live[(a * 0x9e3779b97f4a7c15ULL) >> 54];
}

/* ofile_insert_locked -- make f LIVE (O1). */
static void ofile_insert_locked(struct ubj_file *f)
{
    struct ubj_file **head = ofile_bucket(f);
    f->hnext = *head;
    *head = f;
    f->prev = NULL;
    f->next = f->fs->files;
    if (f->next != NULL)
        f->next->prev = f;
    f->fs->files = f;
}

/* ofile_remove_locked -- take address f out of the set without reading
 * it unless it is there; true if it was LIVE (O1). */
static bool ofile_remove_locked(struct ubj_file *f)
{
    struct ubj_file **p = ofile_bucket(f);
    while (*p != NULL && *p != f)
        p = &(*p)->hnext;
    if (*p == NULL)
        return false;
    *p = f->hnext;
    if (f->prev != NULL)
        f->prev->next = f->next;
    else
        f->fs->files = f->next;
    if (f->next != NULL)
        f->next->prev = f->prev;
    return true;
}

/* fs_files_close_all -- unmount: free every LIVE file of fs (their open
 * references go with the open table: O2). */
void fs_files_close_all(struct ubj_fs *fs)
{
    pthread_mutex_lock(&ofile_lock);
    while (fs->files != NULL) {
        struct ubj_file *f = fs->files;
        (void)ofile_remove_locked(f);
        free(f);
    }
    pthread_mutex_unlock(&ofile_lock);
}

/* ---- open, close, read, write ------------------------------------------- */

/* ubj_file_open -- a new open file description with one open reference. */
int ubj_file_open(struct ubj_fs *fs, ubj_ino_t ino, int flags,
                  struct ubj_file **out)
{
    if (fs == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "file open: no mount or no result");
    int acc = flags & O_ACCMODE;
    if (acc != O_RDONLY && acc != O_WRONLY && acc != O_RDWR)
        return ubj_set_error(-EINVAL, "file open: bad access mode %d", acc);
    struct ubj_file *f = calloc(1, sizeof *f);
    if (f == NULL)
        return ubj_set_error(-ENOMEM, "file open: out of memory");
    int rc = ubj_open(fs, ino, flags);
    if (rc < 0) {
        free(f);
        return rc;                 /* ubj_open's message */
    }
    f->fs = fs;
    f->ino = ino;
    f->accmode = acc;
    atomic_init(&f->advice, UBJ_FADV_NORMAL);
    pthread_mutex_lock(&ofile_lock);
    ofile_insert_locked(f);
    pthread_mutex_unlock(&ofile_lock);
    *out = f;
    return 0;
}

/* ubj_file_close -- leave the live set, drop the reference, free. */
int ubj_file_close(struct ubj_file *file)
{
    pthread_mutex_lock(&ofile_lock);
    bool live = file != NULL && ofile_remove_locked(file);
    pthread_mutex_unlock(&ofile_lock);
    if (!live)
        return ubj_set_error(-EBADF, "file close: not an open file (closed "
                             "already, or by its unmount)");
    int rc = ofile_broken(FS_OFILE_BREAK_CLOSE_KEEPS_REF) ? 0
           : ubj_release(file->fs, file->ino);
    free(file);
    return rc;
}

/* ubj_file_pread -- ubj_pread through a file opened for reading. */
ssize_t ubj_file_pread(struct ubj_file *file, void *buf, size_t size, off_t off)
{
    if (file == NULL || file->accmode == O_WRONLY)
        return ubj_set_error(-EBADF, "file pread: %s", file ? "opened write-only"
                                                            : "no file");
    return fs_pread_stream(file->fs, file->ino, &file->ra,
                           atomic_load(&file->advice), buf, size, off);
}

/* ubj_file_pwrite -- ubj_pwrite through a file opened for writing. */
ssize_t ubj_file_pwrite(struct ubj_file *file, const void *buf, size_t size,
                        off_t off)
{
    if (file == NULL || file->accmode == O_RDONLY)
        return ubj_set_error(-EBADF, "file pwrite: %s", file ? "opened read-only"
                                                             : "no file");
    return ubj_pwrite(file->fs, file->ino, buf, size, off);
}

/* ubj_file_advice -- the read-ahead hint. */
int ubj_file_advice(const struct ubj_file *file)
{
    if (file == NULL)
        return ubj_set_error(-EBADF, "file advice: no file");
    return atomic_load(&file->advice);
}

/* ubj_file_ino -- the file's inode. */
ubj_ino_t ubj_file_ino(const struct ubj_file *file)
{
    return file ? file->ino : 0;
}

/* ---- fadvise -------------------------------------------------------------- */

/* ofile_willneed -- read ahead the mapped blocks in [first, last] (block
 * numbers of the file): one asynchronous read-ahead
 * (ubj_cache_readahead_async) per physically contiguous stretch, as
 * Linux's force_page_cache_readahead, under the mount lock;
 * read-ahead takes only free or clean unreferenced buffers and stops when
 * there are none.  Stops at the first error (ignored: advice). */
static void ofile_willneed(struct ubj_fs *fs, struct fs_iref *r, uint64_t first,
                           uint64_t last)
{
    uint64_t cap = ubj_cache_nbufs(fs->cache) / 2;
    uint32_t chunk = ubj_cache_nbufs(fs->cache) / UBJ_CACHE_RUN_SHARE;  /* one call's most */
    chunk = chunk > UBJ_CACHE_RUN_MAX ? UBJ_CACHE_RUN_MAX : chunk > 0 ? chunk : 1;
    if (last - first + 1 > cap)
        last = first + cap - 1;
    for (uint64_t lblk = first; lblk <= last;) {
        uint64_t pblk, max = last - lblk + 1;
        uint32_t len;
        if (fs_ext_map(fs, r, (uint32_t)lblk, max > chunk ? chunk : (uint32_t)max,
                       &pblk, &len) < 0)
            return;
        if (pblk != 0 && ubj_cache_readahead_async(fs->cache, pblk, len, UINT64_MAX, 0) < 0)
            return;
        lblk += len;
    }
}

/* ofile_dontneed -- drop the clean cached blocks of [first, last]. */
static int ofile_dontneed(struct ubj_fs *fs, struct fs_iref *r, uint64_t first,
                          uint64_t last)
{
    for (uint64_t lblk = first; lblk <= last;) {
        uint64_t pblk, max = last - lblk + 1;
        uint32_t len;
        int rc = fs_ext_map(fs, r, (uint32_t)lblk, max > UINT32_MAX ? UINT32_MAX
                            : (uint32_t)max, &pblk, &len);
        if (rc < 0)
            return rc;
        for (uint32_t i = 0; pblk != 0 && i < len; i++)
            (void)ubj_cache_drop_clean(fs->cache, pblk + i);
        lblk += len;
    }
    return 0;
}

/*
 * ofile_range -- the blocks [*first, *last] of the file's [off, off + len)
 * (len 0: to the end) that WILLNEED (every block touched) or DONTNEED
 * (whole blocks only, and the last block of the file when the range
 * reaches its end: Linux's generic_fadvise) act on, within the size.
 * false when there are none.
 */
static bool ofile_range(uint64_t size, uint64_t off, uint64_t len, bool whole,
                        uint64_t *first, uint64_t *last)
{
    if (size == 0 || off >= size)
        return false;
    uint64_t end = len == 0 || len > size - off ? size : off + len;  /* exclusive */
    *first = off / UBJ_BS;
    *last = (end - 1) / UBJ_BS;
    if (whole && !ofile_broken(FS_OFILE_BREAK_DONTNEED_PARTIAL)) {
        *first = (off + UBJ_BS - 1) / UBJ_BS;
        if (end % UBJ_BS != 0 && end != size) {
            if (*last == 0)
                return false;
            (*last)--;
        }
    }
    return *first <= *last;
}

/* ofile_cache_advice -- WILLNEED or DONTNEED under the mount lock. */
static int ofile_cache_advice(struct ubj_file *file, uint64_t off, uint64_t len,
                              int advice)
{
    struct ubj_fs *fs = file->fs;
    struct ubj_handle *h;
    struct fs_iref r;
    uint64_t first, last;
    fs_start(fs, 0, &h);
    int rc = fs_iget(fs, file->ino, &r);
    if (rc < 0)
        return fs_stop(fs, h, rc);
    if (S_ISFIFO(r.ip->mode))
        rc = ubj_set_error(-ESPIPE, "fadvise: inode %llu is a FIFO",
                           (unsigned long long)file->ino);
    else if (!S_ISREG(r.ip->mode) || r.ip->size > UBJ_MAX_FILE_SIZE)
        ;                          /* no data to cache (or a size fsck fixes) */
    else if (!ofile_range(r.ip->size, off, len, advice == UBJ_FADV_DONTNEED,
                          &first, &last))
        ;
    else if (advice == UBJ_FADV_WILLNEED && !ofile_broken(FS_OFILE_BREAK_WILLNEED_NOOP))
        ofile_willneed(fs, &r, first, last);
    else if (advice == UBJ_FADV_DONTNEED && !ofile_broken(FS_OFILE_BREAK_DONTNEED_NOOP))
        rc = ofile_dontneed(fs, &r, first, last);
    fs_iput(fs, &r);
    return fs_stop(fs, h, rc);
}

/* ubj_fadvise -- posix_fadvise(2) on one open file description. */
int ubj_fadvise(struct ubj_file *file, off_t off, off_t len, int advice)
{
    if (file == NULL)
        return ubj_set_error(-EBADF, "fadvise: no file");
    if (off < 0 || len < 0)
        return ubj_set_error(-EINVAL, "fadvise: negative %s %lld",
                             off < 0 ? "offset" : "length",
                             (long long)(off < 0 ? off : len));
    switch (advice) {
    case UBJ_FADV_NORMAL:
    case UBJ_FADV_RANDOM:
    case UBJ_FADV_SEQUENTIAL:
        if (!ofile_broken(FS_OFILE_BREAK_ADVICE_LOST))
            atomic_store(&file->advice, advice);
        return 0;
    case UBJ_FADV_WILLNEED:
    case UBJ_FADV_DONTNEED:
        return ofile_cache_advice(file, (uint64_t)off, (uint64_t)len, advice);
    default:
        return ubj_set_error(-EINVAL, "fadvise: unknown advice %d", advice);
    }
}
