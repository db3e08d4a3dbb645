/*
 * readahead.h -- the read-ahead window engine (src/fs/readahead.c): the
 * decisions of Linux's on-demand read-ahead (mm/readahead.c) and of the
 * plain policies, per open file, with no I/O of its own.  It decides
 * which pages of a file to read and where to put the asynchronous marker;
 * the read path (file.c, issue 19 item 3) does the reading through the
 * cache callbacks below.  Pages are file blocks (4 KiB), numbered from 0.
 *
 * Locking: a struct fs_ra_state belongs to one open file; its caller
 * serialises the calls on it (the file's read-ahead lock).  The engine
 * keeps no global state and is reentrant.
 */
#ifndef UBJ_FS_READAHEAD_H
#define UBJ_FS_READAHEAD_H

#include <stdbool.h>
#include <stdint.h>

/* The policies of the engine (docs/READAHEAD.md). */
enum fs_ra_policy {
    FS_RA_OFF_PAGE = 0,  /* no read-ahead; a miss reads its one page (Linux
                            with read-ahead off, MTD's readpage) */
    FS_RA_OFF,           /* no read-ahead; a miss reads the rest of the
                            call's range at once (batched) */
    FS_RA_LINUX,         /* on-demand read-ahead, after both 2013 changes */
    FS_RA_LINUX_2013,    /* the same with the sequential-miss test done in
                            the signed arithmetic of a 32-bit kernel before
                            "readahead: fix sequential read cache miss
                            detection" */
    FS_RA_ORACLE,        /* clairvoyant: a miss reads the pages from it on
                            that the future (ops->future) will read, up to
                            FS_RA_ORACLE_MAX; nothing else (the bound) */
    FS_RA_ADAPTIVE,      /* FS_RA_LINUX's windows, each gated by the
                            read path's cost test (src/fs/rapath.c) */
};
#define FS_RA_ORACLE_MAX 256u   /* pages of one oracle read (1 MiB) */

#define FS_RA_DEFAULT_PAGES 32u   /* 128 KiB: Linux's VM_READAHEAD_PAGES */
#define FS_RA_NO_MARKER UINT64_MAX

/*
 * struct fs_ra_state -- Linux's struct file_ra_state: the current window
 * [start, start + size), of which the last async_size pages are "ahead";
 * the first of those (start + size - async_size) carries the marker whose
 * read starts the next window.  ra_pages is the largest window (0: the
 * file reads ahead nothing).  prev_pos is where the last read call ended,
 * as do_generic_file_read leaves it: (last page touched << 12) | (offset
 * after the last byte within that page); -1 before the first read.
 */
struct fs_ra_state {
    uint64_t start;
    uint32_t size;
    uint32_t async_size;
    uint32_t ra_pages;
    bool random;          /* POSIX_FADV_RANDOM (FMODE_RANDOM): misses read
                             exactly the call's pages, no window */
    int64_t prev_pos;
};

/*
 * struct fs_ra_ops -- what the engine asks of the cache, for one file.
 *   cached(ctx, page)        1 if the page is in the cache, else 0
 *   take_marker(ctx, page)   1 if the page carries the marker, which is
 *                            cleared by the call (PG_readahead's
 *                            TestClearPageReadahead), else 0
 *   future(ctx, page)        FS_RA_ORACLE only: 1 if the trace will read
 *                            the page later, else 0 (NULL for the others)
 *   submit(ctx, start, n, marker)  read the pages of [start, start + n)
 *                            that are not cached (n >= 1, all below the
 *                            file's end: the engine clips); put the marker
 *                            on page `marker` if this read brings it in
 *                            (FS_RA_NO_MARKER: none).  Returns 0 or a
 *                            negative errno, which fs_ra_page passes on.
 *   neighbours(ctx, index, last)  FS_RA_ADAPTIVE only (NULL, or 0, for the
 *                            others: Linux reads a small random read as it
 *                            is): pages after the call [index, last) of a
 *                            small random read to offer submit with it, a
 *                            bet that a later read asks for them
 */
struct fs_ra_ops {
    int (*cached)(void *ctx, uint64_t page);
    int (*future)(void *ctx, uint64_t page);   /* FS_RA_ORACLE: 1 if a later
                                                 read will ask for the page */
    int (*take_marker)(void *ctx, uint64_t page);
    int (*submit)(void *ctx, uint64_t start, uint32_t n, uint64_t marker);
    uint32_t (*neighbours)(void *ctx, uint64_t index, uint64_t last);
};

/*
 * fs_ra_init -- a new open file's state: no window, prev_pos -1,
 * ra_pages as given (FS_RA_DEFAULT_PAGES for Linux's default), not
 * random.  Never fails.
 */
void fs_ra_init(struct fs_ra_state *ra, uint32_t ra_pages);

/*
 * fs_ra_page -- the engine's step for page `index` of a read call whose
 * pages are [first, last) (index in it), in a file of `npages` pages,
 * before the caller gets the page from the cache -- do_generic_file_read's
 * two calls: on a miss the synchronous read-ahead (the window that
 * includes index), on a hit of the marker the asynchronous one (the next
 * window).  Under FS_RA_OFF_PAGE a miss submits [index, index + 1); under
 * FS_RA_OFF, [index, last); under FS_RA_ORACLE [index, j), j the first
 * page at or after last (and after index) that is cached, past the file
 * or not in the future, at most FS_RA_ORACLE_MAX pages from index.
 * FS_RA_ADAPTIVE decides as FS_RA_LINUX.  Updates ra (not under the OFF
 * policies and the oracle).
 * Returns 0, or submit's error (ra is updated all the same, as Linux's).
 */
int fs_ra_page(struct fs_ra_state *ra, enum fs_ra_policy pol,
               const struct fs_ra_ops *ops, void *ctx, uint64_t index,
               uint64_t last, uint64_t npages);

/*
 * fs_ra_read_done -- a read call that returned bytes [pos, pos + len)
 * (len > 0) sets prev_pos as do_generic_file_read does; len 0 changes
 * nothing.
 */
void fs_ra_read_done(struct fs_ra_state *ra, uint64_t pos, uint64_t len);

/*
 * fs_ra_seq_miss -- the sequential-miss test of ondemand_readahead: is a
 * miss at `index` the next page of (or the same page as) the last read?
 * FS_RA_LINUX and FS_RA_ADAPTIVE: index - prev page <= 1 in unsigned
 * arithmetic (fixed);
 * FS_RA_LINUX_2013: the same difference signed, as a 32-bit kernel
 * computed it before the fix -- true for every index below the previous
 * read's page too.  False for the other policies and before any read.
 * Exposed for tests and docs/READAHEAD.md's table.
 */
bool fs_ra_seq_miss(const struct fs_ra_state *ra, enum fs_ra_policy pol,
                    uint64_t index);

/*
 * fs_ra_policy_parse -- the policy named `name` (ubj_config.readahead,
 * mount -o readahead=): "off-page", "off", "linux" (FS_RA_DEFAULT_PAGES)
 * or "linux:KIB" (KIB a multiple of 4, 4..65536), "linux-2013[:KIB]",
 * "adaptive[:KIB]", "oracle" (ra_pages FS_RA_ORACLE_MAX).  *pol and
 * *ra_pages on success; -EINVAL with a one-line message naming the
 * accepted names otherwise.  Reentrant.
 */
int fs_ra_policy_parse(const char *name, enum fs_ra_policy *pol, uint32_t *ra_pages);

/* Linux's get_init_ra_size and get_next_ra_size (pages). */
uint32_t fs_ra_init_size(uint32_t req, uint32_t max);
uint32_t fs_ra_next_size(uint32_t cur, uint32_t max);

#endif
