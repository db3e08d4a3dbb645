/*
 * fuse.c -- the FUSE frontend: one `static const struct fuse_lowlevel_ops`
 * table (fu_ops, at the end) whose handlers call the library and map its
 * negative errno to fuse_reply_err(req, -rc) (libfuse's passthrough_ll.c
 * is the model; -EUCLEAN, corruption, goes out as EIO: fu_err).  FUSE node ids are our inode numbers (FUSE_ROOT_ID ==
 * UBJ_ROOT_INO == 1); the generation comes from the inode.
 *
 * Lookup references (the one piece of state kept here).  The kernel counts
 * every entry it receives (lookup, create, mknod, mkdir, symlink, link,
 * readdirplus) and later returns the count with FORGET; until then it may
 * use the node id, even after the last name is gone (an open file, a
 * process's cwd, a dentry still cached).  So while a node's count is
 * above zero we hold one ubj_open reference on the inode (fu_ref_get /
 * fu_ref_put): an unlinked inode stays on the orphan list instead of
 * being freed and its number reused for another file under the kernel's
 * feet.  The last FORGET releases it (and frees it if it has no name);
 * whatever the kernel never forgets is released by ubj_fuse_destroy and
 * ubj_unmount.
 *
 * Open files:
 *  F1 fi->fh of a file request is 0 or a struct ubj_file this frontend
 *     made for that OPEN or CREATE and has not closed: RELEASE (or the
 *     failed reply of the open) closes it, and ubj_unmount frees whatever
 *     the kernel never released.  A request with fh 0 (no_open, the
 *     default) uses the inode-number call.  Under writeback_cache an
 *     O_WRONLY open is made O_RDWR (as libfuse's passthrough_ll): the
 *     kernel reads through it to fill a partly written page.
 *
 * Invariants:
 *  R1 refs[] holds an entry for ino iff the kernel may hold the node id
 *     (count = entries replied minus FORGETs), and then exactly one
 *     library open reference belongs to it; the root is never counted.
 *  R2 the count is raised before the reply is sent and lowered again if
 *     libfuse could not send it (the kernel did not see it), so it never
 *     drops below the kernel's own count.
 *  R3 between the library's lookup and the reference, no FUSE request can
 *     unlink the name: the kernel holds the parent directory's lock (shared
 *     for lookup and readdir, exclusive for create, link, unlink, rename),
 *     so the inode a reply names is the inode the reference pins.
 *  R4 ref_lock is taken before the mount lock, never while holding it
 *     (library callbacks never call back here).
 *
 * Round trips.  Every request costs the caller a round trip to this
 * daemon (tens to hundreds of microseconds: two thread wake-ups, often on
 * another CPU), so the frontend asks for as few as the semantics allow:
 *  - no OPEN/RELEASE by default: where the kernel supports it
 *    (FUSE_CAP_NO_OPEN_SUPPORT, Linux >= 5.1) the first OPEN is answered
 *    ENOSYS, which tells the kernel to open files itself from then on;
 *    requests carry fh 0 and use the inode-number calls, and the kernel
 *    truncates for O_TRUNC with SETATTR.  Nothing is lost: an open file
 *    pins its kernel inode, so the lookup reference (R1) keeps an
 *    unlinked file alive until its last close.  -o file_handles (and any
 *    kernel without the capability) keeps OPEN and RELEASE: each OPEN and
 *    CREATE makes a struct ubj_file (ubjfs.h, "open files": the open file
 *    description whose read-ahead state issue 19 keeps), carried in
 *    fi->fh and closed by RELEASE, READ and WRITE go through it (F1), and
 *    O_TRUNC rides on OPEN (ATOMIC_O_TRUNC).  That costs two round trips
 *    per open(2)/close(2) of an existing file (PostMark 1.29x the time,
 *    docs/PERFORMANCE.md, "OPEN and RELEASE") and buys nothing until the
 *    read-ahead engine keeps per-open state (issue 19, item 3), whose
 *    per-stream policies will need it; off and off-page never do.
 *  - no OPENDIR/RELEASEDIR: where the kernel supports it
 *    (FUSE_CAP_NO_OPENDIR_SUPPORT, Linux >= 5.1) the first OPENDIR is
 *    answered ENOSYS, which tells the kernel to open directories itself
 *    from then on (readdir cookies are stable: nothing to keep per open).
 *  - FUSE over io_uring where the kernel offers it (fuse_uring.h): the
 *    request and its reply stay on the caller's CPU.
 *  - no GETXATTR of security.capability before every write(2): the INIT
 *    reply asks for FUSE_HANDLE_KILLPRIV_V2 (fuse_io.h; libfuse 3.14 has
 *    no knob for it) and the library clears set-id bits and capabilities
 *    itself on write, truncate (FATTR_KILL_SUIDGID arrives as
 *    FUSE_SET_ATTR_KILL_SUID) and chown.  -o no_killpriv_v2 turns it off.
 *  - no FLUSH: `flush` is not in the table, so libfuse answers ENOSYS,
 *    which the kernel takes as "never send it again" (a Linux file system
 *    does nothing on close; dirty pages are still written back first).
 *  - attributes and names are cached by the kernel for attr_timeout and
 *    entry_timeout seconds, absent names for negative_timeout: safe,
 *    since every change comes through this mount and the kernel
 *    invalidates what its own requests change.
 *  - READDIRPLUS returns attributes with names; writes and reads carry up
 *    to UBJ_FUSE_MAX_WRITE bytes; several worker threads overlap the
 *    transfers (the library serialises the operations themselves).
 *  - with -o writeback_cache the kernel also caches writes and sends them
 *    in large batches later; "WB" below says how a full device still fails
 *    write(2) with ENOSPC.  Not the default: measured slower in mode ubj
 *    (fsync waits for the kernel's background writeback; dirty-page
 *    throttling of the mount), docs/PERFORMANCE.md.
 *
 * Read-ahead.  The kernel's page cache reads ahead above this daemon
 * (READs larger than the program asked for, up to the mount's bdi
 * read_ahead_kb, the max_readahead of INIT's reply: 128 KiB unless told).
 * --readahead off or off-page (issue 19) answer INIT with max_readahead 0,
 * so the kernel asks for what the program reads and nothing more; no
 * option keeps the kernel's window.  FUSE forwards no fadvise: a
 * program's posix_fadvise reaches the kernel's page cache only, never
 * ubj_fadvise.
 *
 * WB.  With writeback_cache, write(2) copies into the kernel's page cache
 * and returns; the kernel sends the pages here later (FUSE_WRITE with
 * fi->writepage), when the write(2) that made them can no longer fail.
 * ext4 reserves blocks inside write(2) (delayed allocation) and fails it
 * with ENOSPC; FUSE has no such hook, so:
 *  W1 a reserve: the kernel keeps at most its per-mount dirty limit D (the
 *     bdi's max_bytes: 1% of the dirty threshold; lowered for a small
 *     image, or writeback_cache is refused) of our pages dirty or under
 *     writeback, and `reserve` = 2 D + 4 MiB stays free for them: statfs
 *     counts it as not available (ext4's reserved blocks) and fallocate
 *     may not take it.
 *  W2 a gate: when a written-back request leaves fewer than `reserve`
 *     blocks free, or fails, its inode is flagged (fu_ref.enospc) and the
 *     kernel's attributes of it dropped (notify_inval_inode); the next
 *     write(2) then asks for them (GETATTR with a file handle), is answered
 *     ENOSPC and returns it.  A writer into a full device so stops with
 *     ENOSPC while all it was told was written still fits the reserve.  A
 *     file created while space is low is flagged at once.  A flag older
 *     than FU_WB_GATE_NS is stale (an lseek(SEEK_END) or a read at EOF
 *     asks the same way once the attributes time out: they must not fail).
 *  W3 a writeback that fails anyway (the reserve used up by many writers at
 *     once) is answered with its errno, never with a short count (the
 *     kernel does not look at the count of a writeback): the kernel returns
 *     it from fsync(2) and close(2), and the pages it covered are dropped
 *     from the page cache, so reads show what is stored.
 *  W4 the kernel owns i_size, mtime and ctime of regular files: it ignores
 *     those of our replies and sends its own by SETATTR.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "fuse/fuse.h"
#include "fuse/fuse_io.h"
#include "fuse/fuse_uring.h"
#include "util/util.h"

#define FU_BUCKETS 4096u          /* lookup-reference hash buckets */
#define FU_MAX_BACKGROUND 64u     /* kernel background requests (writeback) */
#define FU_SETTLE_MS 100          /* fu_forgets_settle's longest wait */
#define FU_READ_SLACK 16384u      /* a /dev/fuse read: max_write + headers */
#define FU_URING_DEPTH 1u         /* io_uring entries per queue thread */
#define FU_GROUPS_MAX 64          /* supplementary groups looked at by access */
#define FU_MIB (1024u * 1024u)
#define FU_WB_SLACK (4u * FU_MIB)  /* W1: margin over twice the dirty limit */
#define FU_WB_MIN_DIRTY FU_MIB     /* W1: a smaller dirty limit: no writeback_cache */
#define FU_WB_GATE_NS 1000000000u  /* W2: a flag this old is stale */

/* One node the kernel holds: [ref_lock] */
struct fu_ref {
    ubj_ino_t ino;
    uint64_t nlookup;
    uint64_t enospc;          /* W2: when flagged (CLOCK_MONOTONIC ns), or 0 */
    struct fu_ref *next;
};

struct ubj_fuse {
    struct ubj_fuse_io io;    /* first: the transport hooks' userdata */
    struct ubj_fs *fs;
    struct fuse_session *se;
    struct ubj_fuse_opts o;
    char *fsname;
    bool mounted;
    bool signals;
    bool no_opendir;          /* the kernel may skip OPENDIR (init) */
    bool no_open;             /* no -o file_handles, and the kernel may skip OPEN (init) */
    bool wb;                  /* the kernel caches writes (init) */
    uint64_t reserve;         /* blocks kept for the kernel's dirty pages (WB) */
    pthread_mutex_t ref_lock;
    struct fu_ref *refs[FU_BUCKETS];   /* [ref_lock] */
    _Atomic uint64_t forgets_done;   /* FORGET messages handled (fuse_io.h) */
};

/* ---- helpers ------------------------------------------------------------ */

/* fu_get -- the frontend of a request. */
static struct ubj_fuse *fu_get(fuse_req_t req)
{
    return fuse_req_userdata(req);
}

/* fu_log -- report an error the library could not have been asked about
 * by the caller (I/O, corruption): stderr in the foreground, syslog when
 * detached (stderr is /dev/null then, so both are written). */
static void fu_log(int rc, const char *op)
{
    if (rc != -EIO && rc != -EUCLEAN && rc != -ENOMEM)
        return;
    syslog(LOG_ERR, "%s: %s", op, ubj_errormsg());
    fprintf(stderr, "ubjfs: %s: %s\n", op, ubj_errormsg());
}

/* fu_err -- reply with the library's result (0 or a negative errno).
 * Corruption the library found (-EUCLEAN: a block that fails its checks,
 * the mount now read-only) reaches the program as EIO, the error every
 * program handles as "the storage failed"; the log line (fu_log) names the
 * block, and later writers get EROFS (docs/GUARANTEES.md, "Damage found at
 * run time"). */
static void fu_err(fuse_req_t req, int rc, const char *op)
{
    if (rc < 0)
        fu_log(rc, op);
    fuse_reply_err(req, rc == -EUCLEAN ? EIO : rc < 0 ? -rc : 0);
}

/* fu_cred -- the caller's uid and gid: the owner of new inodes. */
static struct ubj_cred fu_cred(fuse_req_t req)
{
    const struct fuse_ctx *c = fuse_req_ctx(req);
    struct ubj_cred cr = { .uid = c->uid, .gid = c->gid };
    return cr;
}

/* fu_bucket -- the lookup-reference chain of ino. */
static struct fu_ref **fu_bucket(struct ubj_fuse *f, ubj_ino_t ino)
{
    return &f->refs[(ino * 0x9e3779b97f4a7c15ULL) >> 52];
}

/* fu_ref_get -- one more kernel lookup of ino (R1, R2). */
static int fu_ref_get(struct ubj_fuse *f, ubj_ino_t ino)
{
    if (ino == UBJ_ROOT_INO)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&f->ref_lock);
    struct fu_ref **head = fu_bucket(f, ino), *r = *head;
    while (r != NULL && r->ino != ino)
        r = r->next;
    if (r != NULL) {
        r->nlookup++;
    } else if ((r = malloc(sizeof *r)) == NULL) {
        rc = -ENOMEM;
    } else if ((rc = ubj_open(f->fs, ino, O_RDONLY)) < 0) {
        free(r);
    } else {
        r->ino = ino;
        r->nlookup = 1;
        r->enospc = 0;
        r->next = *head;
        *head = r;
    }
    pthread_mutex_unlock(&f->ref_lock);
    return rc;
}

/* fu_ref_put -- the kernel forgot n lookups of ino; the last releases it. */
static void fu_ref_put(struct ubj_fuse *f, ubj_ino_t ino, uint64_t n)
{
    if (ino == UBJ_ROOT_INO)
        return;
    pthread_mutex_lock(&f->ref_lock);
    for (struct fu_ref **p = fu_bucket(f, ino); *p != NULL; p = &(*p)->next) {
        struct fu_ref *r = *p;
        if (r->ino != ino)
            continue;
        if (n < r->nlookup) {
            r->nlookup -= n;
            break;
        }
        *p = r->next;
        free(r);
        int rc = ubj_release(f->fs, ino);
        if (rc < 0)
            fu_log(rc, "forget");
        break;
    }
    pthread_mutex_unlock(&f->ref_lock);
}

/* fu_now_ns -- CLOCK_MONOTONIC in ns (never 0). */
static uint64_t fu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 1;
}

/* fu_enospc_set -- W2: flag ino (the kernel holds it: R1) so that its next
 * write(2) fails, and drop the kernel's attributes so that it asks (again
 * each time: a SETATTR or stat reply may have renewed them). */
static void fu_enospc_set(struct ubj_fuse *f, ubj_ino_t ino)
{
    uint64_t now = fu_now_ns();
    pthread_mutex_lock(&f->ref_lock);
    for (struct fu_ref *r = *fu_bucket(f, ino); r != NULL; r = r->next)
        if (r->ino == ino) {
            r->enospc = now;
            break;
        }
    pthread_mutex_unlock(&f->ref_lock);
    (void)fuse_lowlevel_notify_inval_inode(f->se, ino, -1, 0);
}

/* fu_enospc_take -- W2: was ino flagged within FU_WB_GATE_NS?  Clears the
 * flag.  An older flag is stale: the write(2) it was meant for would have
 * come at once, and the next GETATTR with a file handle may be an lseek
 * or a read at the end of the file, which must not fail. */
static bool fu_enospc_take(struct ubj_fuse *f, ubj_ino_t ino)
{
    uint64_t at = 0;
    pthread_mutex_lock(&f->ref_lock);
    for (struct fu_ref *r = *fu_bucket(f, ino); r != NULL; r = r->next)
        if (r->ino == ino) {
            at = r->enospc;
            r->enospc = 0;
            break;
        }
    pthread_mutex_unlock(&f->ref_lock);
    return at != 0 && fu_now_ns() - at < FU_WB_GATE_NS;
}

/* fu_wb_low -- W2: are fewer than `reserve` blocks free? */
static bool fu_wb_low(struct ubj_fuse *f)
{
    struct ubj_statfs s;
    return ubj_statfs_get(f->fs, &s) == 0 && s.bavail < f->reserve;
}

/* fu_entry_fill -- a fuse_entry_param for st. */
static void fu_entry_fill(const struct ubj_fuse *f, const struct ubj_stat *st,
                          struct fuse_entry_param *e)
{
    memset(e, 0, sizeof *e);
    e->ino = st->ino;
    e->generation = st->generation;
    ubj_stat_to_posix(st, &e->attr);
    e->attr_timeout = f->o.attr_timeout;
    e->entry_timeout = f->o.entry_timeout;
}

/* fu_reply_entry -- reply with st, taking a lookup reference for it. */
static void fu_reply_entry(fuse_req_t req, const struct ubj_stat *st)
{
    struct ubj_fuse *f = fu_get(req);
    struct fuse_entry_param e;
    fu_entry_fill(f, st, &e);
    int rc = fu_ref_get(f, st->ino);
    if (rc < 0) {
        fu_err(req, rc, "lookup reference");
        return;
    }
    if (fuse_reply_entry(req, &e) != 0)
        fu_ref_put(f, st->ino, 1);
}

/* fu_reply_made -- the reply of a call that made or named an inode. */
static void fu_reply_made(fuse_req_t req, int rc, const struct ubj_stat *st,
                          const char *op)
{
    if (rc < 0)
        fu_err(req, rc, op);
    else
        fu_reply_entry(req, st);
}

/* ---- per-thread read buffer ------------------------------------------ */

static pthread_key_t fu_buf_key;
static pthread_once_t fu_buf_once = PTHREAD_ONCE_INIT;

struct fu_buf {
    size_t cap;
    char data[];
};

/* fu_buf_key_make -- the key whose destructor frees a thread's buffer. */
static void fu_buf_key_make(void)
{
    (void)pthread_key_create(&fu_buf_key, free);
}

/* fu_buffer -- this thread's buffer of at least n bytes (NULL: ENOMEM). */
static char *fu_buffer(size_t n)
{
    pthread_once(&fu_buf_once, fu_buf_key_make);
    struct fu_buf *b = pthread_getspecific(fu_buf_key);
    if (b != NULL && b->cap >= n)
        return b->data;
    size_t cap = n < 65536 ? 65536 : n;
    struct fu_buf *nb = realloc(b, sizeof *nb + cap);
    if (nb == NULL)
        return NULL;
    nb->cap = cap;
    pthread_setspecific(fu_buf_key, nb);
    return nb->data;
}

/* ---- session ------------------------------------------------------------- */

/* fu_init -- negotiate the connection (what libfuse offers for speed). */
static void fu_init(void *userdata, struct fuse_conn_info *conn)
{
    struct ubj_fuse *f = userdata;
    unsigned want = FUSE_CAP_ASYNC_READ | FUSE_CAP_READDIRPLUS |
                    FUSE_CAP_READDIRPLUS_AUTO | FUSE_CAP_PARALLEL_DIROPS;
    f->no_opendir = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
    f->no_open = !f->o.file_handles && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) != 0;
    if (!f->no_open)
        want |= FUSE_CAP_ATOMIC_O_TRUNC;   /* O_TRUNC rides on OPEN */
    if (f->o.writeback_cache && !f->o.rdonly)
        want |= FUSE_CAP_WRITEBACK_CACHE;
    want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;   /* changes all come through here */
    conn->want |= want & conn->capable;
    conn->want &= ~(unsigned)(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
    if (!(want & FUSE_CAP_ATOMIC_O_TRUNC))
        conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
    if (!(want & FUSE_CAP_WRITEBACK_CACHE))
        conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
    conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
    f->wb = (conn->want & FUSE_CAP_WRITEBACK_CACHE) != 0;
    if (!f->wb)
        f->reserve = 0;
    conn->max_write = UBJ_FUSE_MAX_WRITE;
    if (f->o.no_kernel_readahead)      /* the bdi's read_ahead_kb becomes 0 */
        conn->max_readahead = 0;
    if (f->o.max_read > 0)             /* libfuse refuses INIT unless equal */
        conn->max_read = f->o.max_read;
#if UBJ_TEST_HOOKS   /* a test build only (CMake option UBJ_TEST_HOOKS) */
    if (getenv("UBJ_FUSE_BREAK_INIT") != NULL)   /* tests/fuse/mount.sh: an */
        conn->max_read = 1;                     /* INIT that libfuse refuses */
    if (getenv("UBJ_FUSE_TEST_NONBLOCK") != NULL)   /* tests/fuse/uring.sh: */
        (void)ubj_fuse_io_nonblock(&f->io);    /* every idle reader meets it */
#endif
    conn->max_background = FU_MAX_BACKGROUND;
    conn->congestion_threshold = FU_MAX_BACKGROUND * 3 / 4;
    conn->time_gran = 1;
}

/* fu_destroy -- the kernel connection ended; ubj_fuse_destroy cleans up. */
static void fu_destroy(void *userdata)
{
    (void)userdata;
}

/* ---- names ----------------------------------------------------------------- */

/* fu_lookup -- name in parent; a miss is a cached negative entry. */
static void fu_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_stat st;
    int rc = ubj_lookup(f->fs, parent, name, &st);
    if (rc == -ENOENT && f->o.negative_timeout > 0) {
        struct fuse_entry_param e;
        memset(&e, 0, sizeof e);
        e.entry_timeout = f->o.negative_timeout;
        fuse_reply_entry(req, &e);
        return;
    }
    fu_reply_made(req, rc, &st, "lookup");
}

/* fu_forget -- the kernel dropped nlookup references to ino. */
static void fu_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    struct ubj_fuse *f = fu_get(req);
    fu_ref_put(f, ino, nlookup);
    atomic_fetch_add(&f->forgets_done, 1);   /* after the blocks are freed */
    fuse_reply_none(req);
}

/* fu_forget_multi -- FORGET for a batch of nodes. */
static void fu_forget_multi(fuse_req_t req, size_t count,
                            struct fuse_forget_data *forgets)
{
    struct ubj_fuse *f = fu_get(req);
    for (size_t i = 0; i < count; i++)
        fu_ref_put(f, forgets[i].ino, forgets[i].nlookup);
    atomic_fetch_add(&f->forgets_done, 1);   /* one message, as counted read */
    fuse_reply_none(req);
}

/* fu_forgets_settle -- every FORGET the kernel has queued so far is
 * handled when this returns: the kernel queues an inode's FORGET inside
 * the unlink(2) or close(2) that drops it, so a request sent after that
 * call finds it on /dev/fuse, which it drains itself (fuse_io.h), or read
 * by another thread, which it waits for (microseconds; at most
 * FU_SETTLE_MS).  Returns the FORGET messages handled when it returns. */
static uint64_t fu_forgets_settle(struct ubj_fuse *f)
{
    (void)ubj_fuse_io_drain(&f->io);
    struct timespec nap = { 0, 50000L };
    for (int i = 0; i < FU_SETTLE_MS * 20; i++) {
        if (atomic_load(&f->forgets_done) >= atomic_load(&f->io.forgets_read))
            break;
        nanosleep(&nap, NULL);
    }
    return atomic_load(&f->forgets_done);
}

/* fu_enospc_wait -- a request failed with ENOSPC (after `before` FORGETs
 * were handled): settle the FORGETs; true if some were handled since (try
 * once more), as ext4 retries an allocation after a commit
 * (ext4_should_retry_alloc). */
static bool fu_enospc_wait(struct ubj_fuse *f, uint64_t before)
{
    return fu_forgets_settle(f) != before;
}

/* fu_mode_changed -- the library cleared set-id bits since ubj_privs_killed
 * read `killed` (a write or fallocate: the reply carries no attributes):
 * drop the kernel's cached attributes of ino, or a statx of the mode alone
 * shows the old bits until attr_timeout.  Another file's change only costs
 * a needless refresh. */
static void fu_mode_changed(struct ubj_fuse *f, fuse_ino_t ino, uint64_t killed)
{
    if (ubj_privs_killed(f->fs) != killed)
        (void)fuse_lowlevel_notify_inval_inode(f->se, ino, -1, 0);
}

/* fu_unlinked -- a name is gone; its inode's FORGET may follow: kick the
 * lazy reader (fuse_io.h: measured both ways, docs/PERFORMANCE.md) */
static void fu_unlinked(struct ubj_fuse *f)
{
    ubj_fuse_io_kick(&f->io);
}

/* FU_RETRY -- evaluate `call` (an int or ssize_t result) and once more if
 * it ran out of space while FORGETs were pending (fu_enospc_wait) */
#define FU_RETRY(f, var, call)                                        \
    do {                                                              \
        uint64_t fu_before_ = atomic_load(&(f)->forgets_done);        \
        var = (call);                                                 \
        if (var == -ENOSPC && fu_enospc_wait(f, fu_before_))          \
            var = (call);                                             \
    } while (0)

/* fu_mknod -- a node of any type but directory and symlink. */
static void fu_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode, dev_t rdev)
{
    struct ubj_cred cr = fu_cred(req);
    struct ubj_stat st;
    int rc;
    FU_RETRY(fu_get(req), rc, ubj_mknod(fu_get(req)->fs, parent, name, mode, rdev, &cr, &st));
    fu_reply_made(req, rc, &st, "mknod");
}

/* fu_mkdir -- mkdir(2). */
static void fu_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode)
{
    struct ubj_cred cr = fu_cred(req);
    struct ubj_stat st;
    int rc;
    FU_RETRY(fu_get(req), rc, ubj_mkdir(fu_get(req)->fs, parent, name, mode, &cr, &st));
    fu_reply_made(req, rc, &st, "mkdir");
}

/* fu_symlink -- symlink(2). */
static void fu_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                       const char *name)
{
    struct ubj_cred cr = fu_cred(req);
    struct ubj_stat st;
    int rc;
    FU_RETRY(fu_get(req), rc, ubj_symlink(fu_get(req)->fs, link, parent, name, &cr, &st));
    fu_reply_made(req, rc, &st, "symlink");
}

/* fu_link -- link(2): one more name, one more kernel lookup. */
static void fu_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                    const char *newname)
{
    struct ubj_stat st;
    int rc;
    FU_RETRY(fu_get(req), rc, ubj_link(fu_get(req)->fs, ino, newparent, newname, &st));
    fu_reply_made(req, rc, &st, "link");
}

/* fu_unlink -- unlink(2); the inode lives on while the kernel holds it. */
static void fu_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct ubj_fuse *f = fu_get(req);       /* req is gone after the reply */
    fu_err(req, ubj_unlink(f->fs, parent, name), "unlink");
    fu_unlinked(f);
}

/* fu_rmdir -- rmdir(2). */
static void fu_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct ubj_fuse *f = fu_get(req);
    fu_err(req, ubj_rmdir(f->fs, parent, name), "rmdir");
    fu_unlinked(f);
}

/* fu_rename -- rename(2) and renameat2(2)'s NOREPLACE and EXCHANGE. */
static void fu_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname, unsigned flags)
{
    unsigned uf = 0;
    if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
        fuse_reply_err(req, EINVAL);        /* RENAME_WHITEOUT: no overlayfs */
        return;
    }
    if (flags & RENAME_NOREPLACE)
        uf |= UBJ_RENAME_NOREPLACE;
    if (flags & RENAME_EXCHANGE)
        uf |= UBJ_RENAME_EXCHANGE;
    struct ubj_fuse *f = fu_get(req);
    fu_err(req, ubj_rename(f->fs, parent, name, newparent, newname, uf), "rename");
    fu_unlinked(f);                          /* a replaced name's FORGET */
}

/* fu_readlink -- readlink(2). */
static void fu_readlink(fuse_req_t req, fuse_ino_t ino)
{
    char buf[UBJ_SYMLINK_MAX + 1];
    ssize_t n = ubj_readlink(fu_get(req)->fs, ino, buf, UBJ_SYMLINK_MAX);
    if (n < 0) {
        fu_err(req, (int)n, "readlink");
        return;
    }
    buf[n] = '\0';
    fuse_reply_readlink(req, buf);
}

/* ---- attributes ----------------------------------------------------------- */

/* fu_reply_attr -- reply with the attributes in st. */
static void fu_reply_attr(fuse_req_t req, const struct ubj_stat *st)
{
    struct stat s;
    ubj_stat_to_posix(st, &s);
    fuse_reply_attr(req, &s, fu_get(req)->o.attr_timeout);
}

/* fu_getattr -- stat(2); with a file handle also the writeback write(2)
 * path, where a flagged inode gets its ENOSPC (W2). */
static void fu_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_stat st;
    if (fi != NULL && f->wb && fu_enospc_take(f, ino)) {
        fuse_reply_err(req, ENOSPC);
        return;
    }
    int rc = ubj_getattr(f->fs, ino, &st);
    if (rc < 0)
        fu_err(req, rc, "getattr");
    else
        fu_reply_attr(req, &st);
}

/* fu_setattr_map -- FUSE_SET_ATTR_* to a struct ubj_setattr. */
static void fu_setattr_map(const struct stat *a, int to_set, struct ubj_setattr *sa)
{
    memset(sa, 0, sizeof *sa);
    if (to_set & FUSE_SET_ATTR_MODE) {
        sa->valid |= UBJ_SET_MODE;
        sa->mode = a->st_mode & 07777;
    }
    if (to_set & FUSE_SET_ATTR_UID) {
        sa->valid |= UBJ_SET_UID;
        sa->uid = a->st_uid;
    }
    if (to_set & FUSE_SET_ATTR_GID) {
        sa->valid |= UBJ_SET_GID;
        sa->gid = a->st_gid;
    }
    if (to_set & FUSE_SET_ATTR_SIZE) {
        sa->valid |= UBJ_SET_SIZE;
        sa->size = (uint64_t)a->st_size;
    }
    if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
        sa->valid |= UBJ_SET_ATIME_NOW;
    } else if (to_set & FUSE_SET_ATTR_ATIME) {
        sa->valid |= UBJ_SET_ATIME;
        sa->atime = a->st_atim;
    }
    if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
        sa->valid |= UBJ_SET_MTIME_NOW;
    } else if (to_set & FUSE_SET_ATTR_MTIME) {
        sa->valid |= UBJ_SET_MTIME;
        sa->mtime = a->st_mtim;
    }
    if (to_set & FUSE_SET_ATTR_CTIME) {
        sa->valid |= UBJ_SET_CTIME;
        sa->ctime = a->st_ctim;
    }
    if (to_set & FUSE_SET_ATTR_KILL_SUID)     /* FATTR_KILL_SUIDGID */
        sa->valid |= UBJ_SET_KILL_SUIDGID;
}

/* fu_setattr -- chmod, chown, truncate, utimensat (UTIME_NOW; UTIME_OMIT
 * arrives as an unset bit). */
static void fu_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int to_set, struct fuse_file_info *fi)
{
    struct ubj_setattr sa;
    struct ubj_stat st;
    (void)fi;
    fu_setattr_map(attr, to_set, &sa);
    int rc = ubj_setattr(fu_get(req)->fs, ino, &sa, &st);
    if (rc < 0)
        fu_err(req, rc, "setattr");
    else
        fu_reply_attr(req, &st);
}

/* fu_in_group -- is gid the caller's group or one of its groups? */
static bool fu_in_group(fuse_req_t req, uint32_t gid)
{
    if (fuse_req_ctx(req)->gid == gid)
        return true;
    gid_t list[FU_GROUPS_MAX];
    int n = fuse_req_getgroups(req, FU_GROUPS_MAX, list);
    for (int i = 0; i < n && i < FU_GROUPS_MAX; i++)
        if (list[i] == gid)
            return true;
    return false;
}

/* fu_access -- access(2) (only sent without default_permissions): the
 * kernel's generic_permission() rules without ACLs. */
static void fu_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_stat st;
    int rc = ubj_getattr(f->fs, ino, &st);
    if (rc < 0 || mask == F_OK) {
        fu_err(req, rc, "access");
        return;
    }
    uint32_t uid = fuse_req_ctx(req)->uid;
    uint32_t bits = st.mode;
    if ((mask & W_OK) && f->o.rdonly &&
        (S_ISREG(st.mode) || S_ISDIR(st.mode) || S_ISLNK(st.mode)))
        rc = -EROFS;
    else if (uid == 0)
        rc = ((mask & X_OK) && !S_ISDIR(st.mode) && !(st.mode & 0111)) ? -EACCES : 0;
    else {
        bits = uid == st.uid ? st.mode >> 6 : fu_in_group(req, st.gid) ? st.mode >> 3
                                                                     : st.mode;
        rc = ((bits & 7u & (uint32_t)mask) == ((uint32_t)mask & 7u)) ? 0 : -EACCES;
    }
    fu_err(req, rc, "access");
}

/* fu_statfs -- statfs(2). */
static void fu_statfs(fuse_req_t req, fuse_ino_t ino)
{
    struct ubj_statfs s;
    struct statvfs v;
    (void)ino;
    struct ubj_fuse *f = fu_get(req);
    (void)fu_forgets_settle(f);            /* rm -r x; df: x's blocks are free */
    int rc = ubj_statfs_get(f->fs, &s);
    if (rc < 0) {
        fu_err(req, rc, "statfs");
        return;
    }
    memset(&v, 0, sizeof v);
    v.f_bsize = v.f_frsize = s.bsize;
    v.f_blocks = s.blocks;
    v.f_bfree = s.bfree;
    v.f_bavail = s.bavail > f->reserve ? s.bavail - f->reserve : 0;   /* W1 */
    v.f_files = s.files;
    v.f_ffree = v.f_favail = s.ffree;
    v.f_namemax = s.namemax;
    uint64_t id = 0;
    for (int i = 0; i < 16; i++)
        id = id * 131 + s.uuid[i];
    v.f_fsid = (unsigned long)id;
    fuse_reply_statfs(req, &v);
}

/* ---- files ------------------------------------------------------------------ */

/* fu_file -- the open file of a request (F1), or NULL. */
static struct ubj_file *fu_file(const struct fuse_file_info *fi)
{
    return fi != NULL && fi->fh != 0 ? (struct ubj_file *)(uintptr_t)fi->fh : NULL;
}

/* fu_file_open -- a struct ubj_file for an OPEN or CREATE of ino (F1:
 * O_WRONLY is O_RDWR under writeback_cache). */
static int fu_file_open(struct ubj_fuse *f, ubj_ino_t ino, int flags,
                        struct ubj_file **file)
{
    if (f->wb && (flags & O_ACCMODE) == O_WRONLY)
        flags = (flags & ~O_ACCMODE) | O_RDWR;
    return ubj_file_open(f->fs, ino, flags, file);
}

/* fu_open -- open(2): a struct ubj_file in fi->fh (O_TRUNC included). */
static void fu_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_file *file;
    if (f->no_open) {                  /* see "Round trips" at the top */
        fuse_reply_err(req, ENOSYS);
        return;
    }
    int rc = fu_file_open(f, ino, fi->flags, &file);
    if (rc < 0) {
        fu_err(req, rc, "open");
        return;
    }
    fi->keep_cache = 1;      /* every change comes through this mount */
    fi->fh = (uint64_t)(uintptr_t)file;
    if (fuse_reply_open(req, fi) != 0)
        (void)ubj_file_close(file);
}

/* fu_create_existing -- create found the name taken (without O_EXCL): open
 * what is there, as open(2) with O_CREAT would. */
static int fu_create_existing(struct ubj_fuse *f, fuse_ino_t parent,
                              const char *name, struct ubj_stat *st)
{
    int rc = ubj_lookup(f->fs, parent, name, st);
    if (rc == 0 && S_ISDIR(st->mode))
        rc = -EISDIR;
    return rc;
}

/* fu_create_open -- the open part of create: the file's struct ubj_file
 * (F1), after an O_TRUNC of an existing file the attributes again; with
 * no_open none is kept (the kernel sends no RELEASE then: *file NULL),
 * and one is made only to truncate.  0 or a negative errno (nothing left
 * open). */
static int fu_create_open(struct ubj_fuse *f, struct ubj_stat *st, int oflags,
                          struct ubj_file **file)
{
    *file = NULL;
    if (f->no_open && !(oflags & O_TRUNC))
        return 0;
    int rc = fu_file_open(f, st->ino, oflags, file);
    if (rc == 0 && (oflags & O_TRUNC) && (rc = ubj_getattr(f->fs, st->ino, st)) < 0)
        (void)ubj_file_close(*file);
    if (rc == 0 && f->no_open) {
        rc = ubj_file_close(*file);
        *file = NULL;
    }
    return rc;
}

/* fu_create -- open(O_CREAT): create (or open what is there without
 * O_EXCL), and one lookup reference. */
static void fu_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                      mode_t mode, struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_cred cr = fu_cred(req);
    struct ubj_stat st;
    struct ubj_file *file = NULL;
    int oflags = fi->flags & ~O_TRUNC;
    int rc;
    FU_RETRY(f, rc, ubj_create(f->fs, parent, name, mode, &cr, &st));
    if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
        rc = fu_create_existing(f, parent, name, &st);
        oflags = fi->flags;
    }
    if (rc == 0)
        rc = fu_create_open(f, &st, oflags, &file);
    if (rc == 0 && (rc = fu_ref_get(f, st.ino)) < 0)
        (void)ubj_file_close(file);
    if (rc < 0) {
        fu_err(req, rc, "create");
        return;
    }
    struct fuse_entry_param e;
    fu_entry_fill(f, &st, &e);
    fi->keep_cache = 1;
    fi->fh = (uint64_t)(uintptr_t)file;
    if (fuse_reply_create(req, &e, fi) != 0) {
        fu_ref_put(f, st.ino, 1);
        (void)ubj_file_close(file);
    } else if (f->wb && (fi->flags & O_ACCMODE) != O_RDONLY && fu_wb_low(f)) {
        fu_enospc_set(f, st.ino);          /* W2: the first write(2) fails */
    }
}

/* fu_read -- pread(2) into this thread's buffer, through the open file. */
static void fu_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    char *buf = fu_buffer(size);
    if (buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    struct ubj_file *file = fu_file(fi);
    ssize_t n = file != NULL ? ubj_file_pread(file, buf, size, off)
                             : ubj_pread(fu_get(req)->fs, ino, buf, size, off);
    if (n < 0)
        fu_err(req, (int)n, "read");
    else
        fuse_reply_buf(req, buf, (size_t)n);
}

/* fu_writeback -- the reply to a written-back request (W2, W3). */
static void fu_writeback(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                         ssize_t n)
{
    struct ubj_fuse *f = fu_get(req);
    if (n >= 0 && (size_t)n == size) {
        fuse_reply_write(req, size);
        if (fu_wb_low(f))
            fu_enospc_set(f, ino);
        return;
    }
    fu_err(req, n < 0 ? (int)n : -ENOSPC, "writeback");
    fu_enospc_set(f, ino);
    /* the kernel ended the pages' writeback on the reply: drop them */
    (void)fuse_lowlevel_notify_inval_inode(f->se, ino, off, (off_t)size);
}

/* fu_write -- pwrite(2); a short count when the device fills (written-back
 * pages: an error, W3). */
static void fu_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
                     off_t off, struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    ssize_t n;
    uint64_t killed = ubj_privs_killed(f->fs);
    struct ubj_file *file = fu_file(fi);
    FU_RETRY(f, n, file != NULL ? ubj_file_pwrite(file, buf, size, off)
                                : ubj_pwrite(f->fs, ino, buf, size, off));
    fu_mode_changed(f, ino, killed);
    if (f->wb && fi != NULL && fi->writepage)
        fu_writeback(req, ino, size, off, n);
    else if (n < 0)
        fu_err(req, (int)n, "write");
    else
        fuse_reply_write(req, (size_t)n);
}

/* fu_release -- the last close of an open (or a create): close its
 * struct ubj_file (F1; an unlinked file is freed once the kernel forgot
 * it too). */
static void fu_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct ubj_file *file = fu_file(fi);
    (void)ino;
    int rc = file != NULL ? ubj_file_close(file) : 0;
    if (rc < 0)
        fu_log(rc, "release");
    fuse_reply_err(req, 0);
}

/* fu_fsync -- fsync(2)/fdatasync(2): the mode's commit. */
static void fu_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
                     struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    (void)fi;
    if (f->wb)                   /* the kernel reported a failed writeback */
        (void)fu_enospc_take(f, ino);
    fu_err(req, ubj_fsync(f->fs, ino, datasync), "fsync");
}

/* fu_fallocate -- fallocate(2) modes 0 and KEEP_SIZE. */
static void fu_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
                         off_t len, struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_statfs s;
    (void)fi;
    if (f->wb && len > 0 && ubj_statfs_get(f->fs, &s) == 0 &&
        (uint64_t)len / s.bsize + f->reserve > s.bavail) {
        fuse_reply_err(req, ENOSPC);     /* W1: not the kernel's reserve */
        return;
    }
    int rc;
    uint64_t killed = ubj_privs_killed(f->fs);
    FU_RETRY(f, rc, ubj_fallocate(f->fs, ino, mode, off, len));
    fu_mode_changed(f, ino, killed);
    fu_err(req, rc, "fallocate");
}

/* fu_lseek -- SEEK_DATA / SEEK_HOLE, from the extent map (the kernel
 * answers SEEK_SET, SEEK_CUR and SEEK_END itself).  Under writeback_cache
 * the kernel may hold dirty pages it does not write back before asking
 * (Linux's fuse_lseek does not), so an answer from the map could call
 * them a hole and a sparse-aware copy would skip them: there, ENOSYS
 * makes the kernel answer itself for the rest of the mount (all data up
 * to the size: always safe). */
static void fu_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                     struct fuse_file_info *fi)
{
    struct ubj_fuse *f = fu_get(req);
    struct ubj_fs *fs = f->fs;
    (void)fi;
    if (f->wb) {
        fuse_reply_err(req, ENOSYS);
        return;
    }
    off_t at = whence == SEEK_DATA ? ubj_seek_data(fs, ino, off)
             : whence == SEEK_HOLE ? ubj_seek_hole(fs, ino, off) : -EINVAL;
    if (at < 0)
        fu_err(req, (int)at, "lseek");
    else
        fuse_reply_lseek(req, at);
}

/* ---- directories ----------------------------------------------------------- */

/* fu_opendir -- nothing to keep: readdir offsets are stable cookies. */
static void fu_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    if (fu_get(req)->no_opendir) {     /* see "Round trips" at the top */
        fuse_reply_err(req, ENOSYS);
        return;
    }
    fi->fh = 0;
    fuse_reply_open(req, fi);
}

/* fu_releasedir -- the matching close. */
static void fu_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

/* fu_fsyncdir -- fsync(2) of a directory (its entries). */
static void fu_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
                        struct fuse_file_info *fi)
{
    (void)fi;
    fu_err(req, ubj_fsync(fu_get(req)->fs, ino, datasync), "fsyncdir");
}

/* One collected entry of readdirplus. */
struct fu_dent {
    char name[UBJ_NAME_MAX + 1];
    ubj_ino_t ino;
    unsigned type;
    uint64_t next;
};

/* State of one readdir reply. */
struct fu_dir {
    fuse_req_t req;
    char *buf;
    size_t size, used;
    struct fu_dent *v;        /* readdirplus: entries to stat */
    size_t n, cap;
    int err;
};

/* fu_name -- a NUL-terminated copy of a library name. */
static void fu_name(char *out, const char *name, size_t len)
{
    memcpy(out, name, len);
    out[len] = '\0';
}

/* fu_fill_plain -- ubj_readdir callback: one entry straight into the reply. */
static int fu_fill_plain(void *ctx, const char *name, size_t namelen,
                         ubj_ino_t ino, unsigned type, uint64_t next)
{
    struct fu_dir *d = ctx;
    char nm[UBJ_NAME_MAX + 1];
    struct stat st;
    fu_name(nm, name, namelen);
    memset(&st, 0, sizeof st);
    st.st_ino = ino;
    st.st_mode = type << 12;
    size_t need = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used,
                                    nm, &st, (off_t)next);
    if (need > d->size - d->used)
        return 1;
    d->used += need;
    return 0;
}

/* fu_fill_plus -- ubj_readdir callback: collect what fits (attributes are
 * read after the listing: callbacks must not call the library). */
static int fu_fill_plus(void *ctx, const char *name, size_t namelen,
                        ubj_ino_t ino, unsigned type, uint64_t next)
{
    struct fu_dir *d = ctx;
    struct fu_dent *e;
    char nm[UBJ_NAME_MAX + 1];
    fu_name(nm, name, namelen);
    size_t need = fuse_add_direntry_plus(d->req, NULL, 0, nm, NULL, 0);
    if (need > d->size - d->used)
        return 1;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 32;
        e = realloc(d->v, cap * sizeof *e);
        if (e == NULL) {
            d->err = -ENOMEM;
            return 1;
        }
        d->v = e;
        d->cap = cap;
    }
    e = &d->v[d->n++];
    memcpy(e->name, nm, namelen + 1);
    e->ino = ino;
    e->type = type;
    e->next = next;
    d->used += need;
    return 0;
}

/* fu_is_dot -- "." or "..": no attributes, no lookup reference. */
static bool fu_is_dot(const char *n)
{
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

/* fu_plus_add -- one collected entry into the reply; 1 if it took a
 * lookup reference, 0 if not, -1 if the buffer is full. */
static int fu_plus_add(struct ubj_fuse *f, struct fu_dir *d, const struct fu_dent *x)
{
    struct fuse_entry_param e;
    struct ubj_stat st;
    bool ref = false;
    memset(&e, 0, sizeof e);
    e.attr.st_ino = x->ino;
    e.attr.st_mode = x->type << 12;
    if (!fu_is_dot(x->name) && ubj_getattr(f->fs, x->ino, &st) == 0 &&
        fu_ref_get(f, x->ino) == 0) {
        fu_entry_fill(f, &st, &e);
        ref = true;
    }
    size_t need = fuse_add_direntry_plus(d->req, d->buf + d->used,
                                         d->size - d->used, x->name, &e,
                                         (off_t)x->next);
    if (need > d->size - d->used) {
        if (ref)
            fu_ref_put(f, x->ino, 1);
        return -1;
    }
    d->used += need;
    return ref ? 1 : 0;
}

/* fu_plus_reply -- stat the collected entries, reply, and undo the
 * references if the reply could not be sent (R2). */
static void fu_plus_reply(struct ubj_fuse *f, struct fu_dir *d)
{
    size_t added = 0;
    bool *took = calloc(d->n ? d->n : 1, sizeof *took);
    if (took == NULL) {
        fuse_reply_err(d->req, ENOMEM);
        return;
    }
    d->used = 0;
    for (; added < d->n; added++) {
        int r = fu_plus_add(f, d, &d->v[added]);
        if (r < 0)
            break;
        took[added] = r == 1;
    }
    if (fuse_reply_buf(d->req, d->buf, d->used) != 0) {
        for (size_t i = 0; i < added; i++)
            if (took[i])
                fu_ref_put(f, d->v[i].ino, 1);
    }
    free(took);
}

/* fu_readdir_common -- readdir and readdirplus. */
static void fu_readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
                              off_t off, bool plus)
{
    struct ubj_fuse *f = fu_get(req);
    struct fu_dir d = { .req = req, .size = size };
    d.buf = calloc(1, size ? size : 1);
    if (d.buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    int rc = ubj_readdir(f->fs, ino, (uint64_t)off, plus ? fu_fill_plus : fu_fill_plain,
                         &d);
    if (rc == 0)
        rc = d.err;
    if (rc == -ENOENT) {              /* a removed directory lists empty */
        rc = 0;
        d.used = d.n = 0;
    }
    if (rc < 0)
        fu_err(req, rc, "readdir");
    else if (plus)
        fu_plus_reply(f, &d);
    else
        fuse_reply_buf(req, d.buf, d.used);
    free(d.v);
    free(d.buf);
}

/* fu_readdir -- getdents(2). */
static void fu_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    fu_readdir_common(req, ino, size, off, false);
}

/* fu_readdirplus -- getdents(2) with attributes (one lookup each). */
static void fu_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    (void)fi;
    fu_readdir_common(req, ino, size, off, true);
}

/* ---- extended attributes ------------------------------------------------ */

/* fu_setxattr -- setxattr(2). */
static void fu_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                        const char *value, size_t size, int flags)
{
    fu_err(req, ubj_setxattr(fu_get(req)->fs, ino, name, value, size, flags),
           "setxattr");
}

/* fu_reply_sized -- a getxattr/listxattr reply: the length for size 0. */
static void fu_reply_sized(fuse_req_t req, ssize_t n, size_t size, const char *buf,
                           const char *op)
{
    if (n < 0)
        fu_err(req, (int)n, op);
    else if (size == 0)
        fuse_reply_xattr(req, (size_t)n);
    else
        fuse_reply_buf(req, buf, (size_t)n);
}

/* fu_getxattr -- getxattr(2). */
static void fu_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                        size_t size)
{
    char *buf = size ? fu_buffer(size) : NULL;
    if (size && buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t n = ubj_getxattr(fu_get(req)->fs, ino, name, buf, size);
    fu_reply_sized(req, n, size, buf, "getxattr");
}

/* fu_listxattr -- listxattr(2). */
static void fu_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    char *buf = size ? fu_buffer(size) : NULL;
    if (size && buf == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    ssize_t n = ubj_listxattr(fu_get(req)->fs, ino, buf, size);
    fu_reply_sized(req, n, size, buf, "listxattr");
}

/* fu_removexattr -- removexattr(2). */
static void fu_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    fu_err(req, ubj_removexattr(fu_get(req)->fs, ino, name), "removexattr");
}

/*
 * The operations.  Not set, so that the kernel does what Linux does for a
 * local file system without them: getlk/setlk/flock (the kernel keeps the
 * locks itself: one mount, one kernel), lseek (generic SEEK_DATA/SEEK_HOLE:
 * the whole file is data), copy_file_range (the kernel copies through
 * read and write), ioctl, poll, bmap.
 */
static const struct fuse_lowlevel_ops fu_ops = {
    .init = fu_init,
    .destroy = fu_destroy,
    .lookup = fu_lookup,
    .forget = fu_forget,
    .forget_multi = fu_forget_multi,
    .getattr = fu_getattr,
    .setattr = fu_setattr,
    .readlink = fu_readlink,
    .mknod = fu_mknod,
    .mkdir = fu_mkdir,
    .unlink = fu_unlink,
    .rmdir = fu_rmdir,
    .symlink = fu_symlink,
    .rename = fu_rename,
    .link = fu_link,
    .open = fu_open,
    .read = fu_read,
    .write = fu_write,
    .release = fu_release,
    .fsync = fu_fsync,
    .opendir = fu_opendir,
    .readdir = fu_readdir,
    .readdirplus = fu_readdirplus,
    .releasedir = fu_releasedir,
    .fsyncdir = fu_fsyncdir,
    .statfs = fu_statfs,
    .setxattr = fu_setxattr,
    .getxattr = fu_getxattr,
    .listxattr = fu_listxattr,
    .removexattr = fu_removexattr,
    .access = fu_access,
    .create = fu_create,
    .fallocate = fu_fallocate,
    .lseek = fu_lseek,
};

/* ---- life cycle ----------------------------------------------------------- */

/* fu_args -- argv for libfuse: debug, our defaults, the user's options. */
static int fu_args(const struct ubj_fuse_opts *o, struct fuse_args *args)
{
    int rc = fuse_opt_add_arg(args, "ubjfs");
    if (rc == 0 && o->debug)
        rc = fuse_opt_add_arg(args, "-odebug");
    if (rc == 0)
        rc = fuse_opt_add_arg(args, "-odefault_permissions,subtype=ubjfs");
    if (rc == 0 && o->rdonly)
        rc = fuse_opt_add_arg(args, "-oro");
    if (rc == 0 && o->fsname != NULL) {
        char *opt = NULL;
        rc = fuse_opt_add_opt_escaped(&opt, o->fsname);
        char *full = NULL;
        if (rc == 0 && asprintf(&full, "-ofsname=%s", opt) < 0)
            rc = -1;
        if (rc == 0)
            rc = fuse_opt_add_arg(args, full);
        free(full);
        free(opt);
    }
    if (rc == 0 && o->fuse_opts != NULL && o->fuse_opts[0] != '\0') {
        rc = fuse_opt_add_arg(args, "-o");
        if (rc == 0)
            rc = fuse_opt_add_arg(args, o->fuse_opts);
    }
    return rc == 0 ? 0 : -ENOMEM;
}

/* libfuse's complaint about the options (ubj_fuse_new: one thread). */
static char fu_optmsg[256];

/* fu_log_capture -- a fuse_log_func_t keeping libfuse's error message for
 * ubj_fuse_new's caller to print once (debug output still goes out). */
static void fu_log_capture(enum fuse_log_level level, const char *fmt, va_list ap)
{
    if (level >= FUSE_LOG_DEBUG) {
        vfprintf(stderr, fmt, ap);
        return;
    }
    size_t n = strlen(fu_optmsg);            /* the first line, in pieces */
    if (n > 0 && fu_optmsg[n - 1] == '\n')
        return;
    vsnprintf(fu_optmsg + n, sizeof fu_optmsg - n, fmt, ap);
}

/* fu_session_new -- fuse_session_new; its error in ubj_errormsg(). */
static int fu_session_new(struct ubj_fuse *f, struct fuse_args *args)
{
    fu_optmsg[0] = '\0';
    fuse_set_log_func(fu_log_capture);
    f->se = fuse_session_new(args, &fu_ops, sizeof fu_ops, f);
    fuse_set_log_func(NULL);
    if (f->se != NULL) {
        fputs(fu_optmsg, stderr);        /* a warning: not swallowed */
        return 0;
    }
    fu_optmsg[strcspn(fu_optmsg, "\n")] = '\0';
    const char *m = fu_optmsg;
    if (strncmp(m, "fuse: ", 6) == 0)
        m += 6;
    return ubj_set_error(-EINVAL, "%s", m[0] != '\0' ? m : "rejected by libfuse");
}

/* ubj_fuse_new -- a session with these options, not yet mounted. */
int ubj_fuse_new(const struct ubj_fuse_opts *o, struct ubj_fuse **out)
{
    struct ubj_fuse *f = calloc(1, sizeof *f);
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    if (f == NULL)
        return -ENOMEM;
    f->o = *o;
    f->o.fuse_opts = NULL;
    f->o.fsname = NULL;
    pthread_mutex_init(&f->ref_lock, NULL);
    int rc = fu_args(o, &args);
    if (rc == 0)
        rc = fu_session_new(f, &args);
    fuse_opt_free_args(&args);
    if (rc < 0) {
        pthread_mutex_destroy(&f->ref_lock);
        free(f);
        return rc;
    }
    *out = f;
    return 0;
}

/* fu_unescape -- a mountinfo field in place (spaces and such are \ooo). */
static void fu_unescape(char *s)
{
    char *o = s;
    for (; *s != '\0'; s++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
            s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
}

/* fu_mount_dev -- "MAJ:MIN" of the newest mount on path (mountinfo: no
 * request to ourselves, which could not be answered yet).  0 or -ENOENT. */
static int fu_mount_dev(const char *path, char *dev, size_t len)
{
    char *real = realpath(path, NULL), *line = NULL;
    size_t cap = 0;
    int rc = -ENOENT;
    FILE *fp = real != NULL ? fopen("/proc/self/mountinfo", "re") : NULL;
    while (fp != NULL && getline(&line, &cap, fp) > 0) {
        char d[32], mp[4096];
        if (sscanf(line, "%*s %*s %31s %*s %4095s", d, mp) != 2)
            continue;
        fu_unescape(mp);
        if (strcmp(mp, real) == 0) {
            snprintf(dev, len, "%s", d);
            rc = 0;
        }
    }
    if (fp != NULL)
        fclose(fp);
    free(line);
    free(real);
    return rc;
}

/* fu_bdi_bytes -- read (set: *set != 0) the mount's dirty limit in bytes;
 * 0 or a negative errno. */
static int fu_bdi_bytes(const char *dev, uint64_t *bytes, uint64_t set)
{
    char path[96];
    snprintf(path, sizeof path, "/sys/class/bdi/%s/max_bytes", dev);
    FILE *fp = fopen(path, set ? "we" : "re");
    if (fp == NULL)
        return -errno;
    unsigned long long v = 0;
    int ok = set ? fprintf(fp, "%llu\n", (unsigned long long)set) > 0
                 : fscanf(fp, "%llu", &v) == 1;
    if (fclose(fp) != 0 || !ok)
        return -EIO;
    if (!set)
        *bytes = v;
    return 0;
}

/* fu_wb_setup -- W1: the reserve for the kernel's dirty pages, lowering
 * the kernel's dirty limit when the image is small; false when neither
 * can be done (writeback_cache is then not asked for). */
static bool fu_wb_setup(struct ubj_fuse *f, const char *mountpoint)
{
    struct ubj_statfs s;
    char dev[32];
    uint64_t dirty = 0;
    if (ubj_statfs_get(f->fs, &s) < 0 || fu_mount_dev(mountpoint, dev, sizeof dev) < 0 ||
        fu_bdi_bytes(dev, &dirty, 0) < 0 || dirty == 0)
        return false;
    uint64_t total = s.blocks * s.bsize, cap = total / 4;
    if (2 * dirty + FU_WB_SLACK > cap) {
        if (cap < FU_WB_SLACK + 2 * FU_WB_MIN_DIRTY)
            return false;
        uint64_t want = (cap - FU_WB_SLACK) / 2;
        if (fu_bdi_bytes(dev, NULL, want) < 0 || fu_bdi_bytes(dev, &dirty, 0) < 0 ||
            dirty == 0 || dirty > want)
            return false;
    }
    f->reserve = (2 * dirty + FU_WB_SLACK + s.bsize - 1) / s.bsize;
    return true;
}

/* ubj_fuse_mount -- mount on mountpoint, serving fs. */
int ubj_fuse_mount(struct ubj_fuse *f, struct ubj_fs *fs, const char *mountpoint)
{
    f->fs = fs;
    if (fuse_session_mount(f->se, mountpoint) != 0)
        return -EIO;
    f->mounted = true;
    f->io.killpriv_v2 = !f->o.no_killpriv_v2;
    f->io.bufsize = UBJ_FUSE_MAX_WRITE + FU_READ_SLACK;
    if (!f->o.no_io_uring &&
        ubj_fuse_uring_new(f->se, FU_URING_DEPTH, UBJ_FUSE_MAX_WRITE, f->o.debug,
                           &f->io.uring) < 0)
        return -ENOMEM;
    if (ubj_fuse_io_install(f->se, &f->io) < 0)
        return -EIO;
    if (f->io.uring != NULL && ubj_fuse_uring_start(f->io.uring) < 0) {
        ubj_fuse_uring_free(f->io.uring);     /* /dev/fuse only */
        f->io.uring = NULL;
    }
    if (f->o.writeback_cache && !f->o.rdonly && !fu_wb_setup(f, mountpoint))
        f->o.writeback_cache = false;     /* before INIT: see fu_wb_setup */
    /* a shell starts background jobs with SIGINT ignored, and libfuse
     * leaves ignored signals alone: SIGINT and SIGTERM must unmount */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    (void)sigaction(SIGINT, &dfl, NULL);
    (void)sigaction(SIGTERM, &dfl, NULL);
    if (fuse_set_signal_handlers(f->se) == 0)
        f->signals = true;
    return 0;
}

/* ubj_fuse_loop -- the multi-threaded request loop. */
int ubj_fuse_loop(struct ubj_fuse *f)
{
    struct fuse_loop_config *cfg = fuse_loop_cfg_create();
    if (cfg == NULL)
        return -ENOMEM;
    if (f->o.max_threads > 0)
        fuse_loop_cfg_set_max_threads(cfg, f->o.max_threads);
    if (f->o.max_idle_threads > 0)
        fuse_loop_cfg_set_idle_threads(cfg, f->o.max_idle_threads);
    int rc = fuse_session_loop_mt(f->se, cfg);
    fuse_loop_cfg_destroy(cfg);
    /* a positive result is the signal that ended the loop: a clean end */
    return rc < 0 ? rc : 0;
}

/* ubj_fuse_unmount -- detach the kernel mount. */
void ubj_fuse_unmount(struct ubj_fuse *f)
{
    if (f->signals) {
        fuse_remove_signal_handlers(f->se);
        f->signals = false;
    }
    if (f->mounted) {
        fuse_session_unmount(f->se);
        f->mounted = false;
    }
}

/* ubj_fuse_destroy -- free the session and drop every lookup reference. */
void ubj_fuse_destroy(struct ubj_fuse *f)
{
    if (f == NULL)
        return;
    ubj_fuse_unmount(f);
    ubj_fuse_uring_free(f->io.uring);     /* its threads use the session */
    f->io.uring = NULL;
    fuse_session_destroy(f->se);
    ubj_fuse_io_fini(&f->io);
    for (unsigned i = 0; i < FU_BUCKETS; i++) {
        while (f->refs[i] != NULL) {
            struct fu_ref *r = f->refs[i];
            f->refs[i] = r->next;
            if (f->fs != NULL)
                (void)ubj_release(f->fs, r->ino);
            free(r);
        }
    }
    pthread_mutex_destroy(&f->ref_lock);
    free(f);
}
