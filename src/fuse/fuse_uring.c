/*
 * fuse_uring.c -- FUSE over io_uring: per-CPU queues of ring entries, a
 * pinned thread serving each queue, requests handed to libfuse's parser
 * and replies committed back (why and how: fuse_uring.h).
 *
 * Entry layout.  Each entry registers two buffers with the kernel: a
 * header block (struct uring_hdr: the request's fuse_in_header, then the
 * reply's fuse_out_header, in in_out; the opcode's fixed arguments in
 * op_in; sizes and the commit id in ent) and a payload buffer, which the
 * kernel fills with the variable part (names, write data) and reads the
 * reply's arguments from.  The payload sits URING_PRE bytes into a larger
 * allocation so that the in_header and op_in can be copied in front of it:
 * libfuse then sees one contiguous request, as read(2) of /dev/fuse gives,
 * and write data is never copied.
 *
 * Threads.  A queue's thread owns its ring (single issuer): it submits the
 * REGISTER commands, waits for completions (a request, or -ENOTCONN when
 * the connection ends), runs libfuse on the request and, from the writev
 * hook called inside that, submits COMMIT_AND_FETCH.  `cur` (thread-local)
 * names the entry being served so the hook can tell a ring reply from a
 * notification or a /dev/fuse reply.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "fuse/fuse_uring.h"

/* the kernel's ABI (include/uapi/linux/fuse.h, protocol 7.42) */
#define URING_CMD_REGISTER 1u
#define URING_CMD_COMMIT_AND_FETCH 2u
#define URING_HDR_SZ 128u            /* FUSE_URING_IN_OUT_HEADER_SZ */
#define URING_OP_SZ 128u             /* FUSE_URING_OP_IN_OUT_SZ */

struct uring_ent_in_out {            /* struct fuse_uring_ent_in_out */
    uint64_t flags;
    uint64_t commit_id;
    uint32_t payload_sz;
    uint32_t padding;
    uint64_t reserved;
};

struct uring_hdr {                   /* struct fuse_uring_req_header */
    char in_out[URING_HDR_SZ];
    char op_in[URING_OP_SZ];
    struct uring_ent_in_out ent;
};

struct uring_cmd_req {               /* struct fuse_uring_cmd_req */
    uint64_t flags;
    uint64_t commit_id;
    uint16_t qid;
    uint8_t padding[6];
};

#define URING_PRE 4096u              /* room for in_header + op_in */
#define URING_THREADS 2u             /* per CPU queue: a slow request (an
                                      * fsync waiting for the disk) leaves
                                      * the CPU's other requests a server */
#define URING_WAIT_MS 200            /* a stopping thread notices within */

struct uring_queue;

struct uring_ent {
    struct uring_queue *q;
    struct uring_hdr *hdr;
    char *buf;                       /* URING_PRE + payload bytes */
    struct iovec iov[2];             /* registered: header, payload */
    uint64_t commit_id;              /* the request being served */
};

struct uring_queue {                 /* one thread serving CPU queue qid */
    struct ubj_fuse_uring *u;
    unsigned qid;
    pthread_t thread;
    bool started;
    bool ring_ok;
    bool fixed;                      /* the session fd is registered */
    struct io_uring ring;
    struct uring_ent *ents;
};

struct ubj_fuse_uring {
    struct fuse_session *se;
    unsigned nq, depth;              /* CPU queues; entries per thread */
    unsigned nt;                     /* threads: URING_THREADS per queue */
    size_t payload;
    struct uring_queue *q;
    atomic_bool stop;
    atomic_uint serving;             /* queues that have served a request */
    bool started;
    bool announce;                   /* say so on stderr once */
    pthread_mutex_t lock;            /* the set-up barrier: */
    pthread_cond_t cond;
    unsigned setup_done, setup_failed;   /* [lock] threads that set up */
    bool go;                         /* [lock] every thread is ready */
    bool ready;                      /* start succeeded: ask for the ring */
};

static __thread struct uring_ent *cur;   /* the entry this thread serves */

/* possible_cpus -- the kernel's num_possible_cpus(), from the highest id
 * in /sys/devices/system/cpu/possible ("0-1", "0-3,8-11"): one queue each
 * (too few and the kernel never readies the ring: requests then stay on
 * /dev/fuse; a queue id beyond its count is refused and its thread ends) */
static unsigned possible_cpus(void)
{
    unsigned n = 0;
    FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
    if (f != NULL) {
        char line[256];
        if (fgets(line, sizeof line, f) != NULL)
            for (char *p = line; *p != '\0';) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);
                if (end == p)
                    break;
                if (v + 1 > n && v < 4096)
                    n = (unsigned)v + 1;
                p = *end != '\0' ? end + 1 : end;
            }
        fclose(f);
    }
    if (n == 0) {
        long c = sysconf(_SC_NPROCESSORS_CONF);
        n = c > 0 ? (unsigned)c : 1u;
    }
    return n;
}

/* ubj_fuse_uring_new -- see fuse_uring.h. */
int ubj_fuse_uring_new(struct fuse_session *se, unsigned depth, size_t max_write,
                       bool announce, struct ubj_fuse_uring **out)
{
    struct ubj_fuse_uring *u = calloc(1, sizeof *u);
    if (u == NULL)
        return -ENOMEM;
    u->se = se;
    u->announce = announce;
    u->nq = possible_cpus();
    u->depth = depth > 0 ? depth : 1;
    u->payload = max_write > 2u * FUSE_MIN_READ_BUFFER ? max_write : 2u * FUSE_MIN_READ_BUFFER;
    u->nt = u->nq * URING_THREADS;
    u->q = calloc(u->nt, sizeof *u->q);
    if (u->q == NULL || pthread_mutex_init(&u->lock, NULL) != 0) {
        free(u->q);
        free(u);
        return -ENOMEM;
    }
    if (pthread_cond_init(&u->cond, NULL) != 0) {
        pthread_mutex_destroy(&u->lock);
        free(u->q);
        free(u);
        return -ENOMEM;
    }
    for (unsigned i = 0; i < u->nt; i++) {
        u->q[i].u = u;
        u->q[i].qid = i % u->nq;
    }
    *out = u;
    return 0;
}

/* ent_sqe -- a URING_CMD for entry e: REGISTER or COMMIT_AND_FETCH */
static int ent_submit(struct uring_ent *e, unsigned op)
{
    struct uring_queue *q = e->q;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
    if (sqe == NULL) {
        io_uring_submit(&q->ring);
        sqe = io_uring_get_sqe(&q->ring);
        if (sqe == NULL)
            return -EBUSY;
    }
    memset(sqe, 0, 2 * sizeof *sqe);          /* SQE128 */
    sqe->opcode = IORING_OP_URING_CMD;
    if (q->fixed) {
        sqe->fd = 0;                          /* index in the registered files */
        sqe->flags = IOSQE_FIXED_FILE;
    } else {
        sqe->fd = fuse_session_fd(q->u->se);
    }
    sqe->cmd_op = op;
    struct uring_cmd_req req = { .qid = (uint16_t)q->qid };
    if (op == URING_CMD_REGISTER) {
        sqe->addr = (uint64_t)(uintptr_t)e->iov;
        sqe->len = 2;
    } else {
        req.commit_id = e->commit_id;
    }
    memcpy(sqe->cmd, &req, sizeof req);
    io_uring_sqe_set_data(sqe, e);
    int rc;
    for (int tries = 0; tries < 100; tries++) {   /* a lost entry would */
        rc = io_uring_submit(&q->ring);            /* starve its CPU queue */
        if (rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
            break;
        usleep(100);
    }
    return rc < 0 ? rc : 0;
}

/* queue_setup -- the ring and the entries' buffers */
static int queue_setup(struct uring_queue *q)
{
    struct ubj_fuse_uring *u = q->u;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER;
    int rc = io_uring_queue_init_params(2 * u->depth, &q->ring, &p);
    if (rc < 0)
        return rc;
    q->ring_ok = true;
    int fd = fuse_session_fd(u->se);          /* no file lookup per command */
    q->fixed = io_uring_register_files(&q->ring, &fd, 1) == 0;
    q->ents = calloc(u->depth, sizeof *q->ents);
    if (q->ents == NULL)
        return -ENOMEM;
    for (unsigned i = 0; i < u->depth; i++) {
        struct uring_ent *e = &q->ents[i];
        e->q = q;
        if (posix_memalign((void **)&e->hdr, 64, sizeof *e->hdr) != 0 ||
            posix_memalign((void **)&e->buf, 4096, URING_PRE + u->payload) != 0)
            return -ENOMEM;
        memset(e->hdr, 0, sizeof *e->hdr);
        e->iov[0] = (struct iovec){ e->hdr, sizeof *e->hdr };
        e->iov[1] = (struct iovec){ e->buf + URING_PRE, u->payload };
    }
    return 0;
}

/* ent_fail -- answer the entry's request with an error (no reply came) */
static void ent_fail(struct uring_ent *e, uint64_t unique, int err)
{
    struct fuse_out_header oh = { .len = sizeof oh, .error = -err, .unique = unique };
    memcpy(e->hdr->in_out, &oh, sizeof oh);
    e->hdr->ent.payload_sz = 0;
    (void)ent_submit(e, URING_CMD_COMMIT_AND_FETCH);
}

/* ent_serve -- one request from the ring: lay it out as /dev/fuse would
 * and let libfuse run it (its reply comes back via ubj_fuse_uring_reply) */
static void ent_serve(struct uring_ent *e)
{
    struct fuse_in_header ih;
    memcpy(&ih, e->hdr->in_out, sizeof ih);
    uint32_t pay = e->hdr->ent.payload_sz;
    e->commit_id = e->hdr->ent.commit_id;
    size_t fixed = sizeof ih + pay;
    if (ih.len < fixed || ih.len - fixed > URING_OP_SZ || pay > e->q->u->payload) {
        ent_fail(e, ih.unique, EIO);
        return;
    }
    size_t opsz = ih.len - fixed;
    char *start = e->buf + URING_PRE - opsz - sizeof ih;
    memcpy(start, &ih, sizeof ih);
    memcpy(start + sizeof ih, e->hdr->op_in, opsz);
    struct fuse_buf fb = { .mem = start, .size = ih.len };
    cur = e;
    fuse_session_process_buf(e->q->u->se, &fb);
    if (cur == e) {                          /* libfuse sent no reply */
        cur = NULL;
        ent_fail(e, ih.unique, EIO);
    }
}

/* queue_register -- REGISTER every entry; -EAGAIN while the kernel has
 * not finished INIT */
static int queue_register(struct uring_queue *q)
{
    for (unsigned i = 0; i < q->u->depth; i++) {
        int rc = ent_submit(&q->ents[i], URING_CMD_REGISTER);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* queue_wait -- the next completion, or NULL after URING_WAIT_MS */
static struct io_uring_cqe *queue_wait(struct uring_queue *q)
{
    struct io_uring_cqe *cqe = NULL;
    struct __kernel_timespec ts = { 0, URING_WAIT_MS * 1000000LL };
    int rc = io_uring_wait_cqe_timeout(&q->ring, &cqe, &ts);
    return rc == 0 ? cqe : NULL;
}

/* queue_run -- the thread of one queue */
static void *queue_run(void *arg)
{
    struct uring_queue *q = arg;
    struct ubj_fuse_uring *u = q->u;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(q->qid, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    int rc = queue_setup(q);
    pthread_mutex_lock(&u->lock);          /* report, then wait for go */
    u->setup_done++;
    if (rc < 0)
        u->setup_failed++;
    pthread_cond_broadcast(&u->cond);
    while (!u->go && !atomic_load(&u->stop))
        pthread_cond_wait(&u->cond, &u->lock);
    pthread_mutex_unlock(&u->lock);
    if (rc < 0 || atomic_load(&u->stop) || queue_register(q) < 0)
        return NULL;
    unsigned dead = 0;
    bool counted = false;
    while (!atomic_load(&u->stop)) {
        struct io_uring_cqe *cqe = queue_wait(q);
        if (cqe == NULL)
            continue;
        struct uring_ent *e = io_uring_cqe_get_data(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&q->ring, cqe);
        if (res == -EAGAIN) {                /* INIT not processed yet */
            usleep(1000);
            (void)ent_submit(e, URING_CMD_REGISTER);
            continue;
        }
        if (res < 0) {                       /* -ENOTCONN: the end */
            if (++dead == u->depth)
                break;
            continue;
        }
        if (!counted) {                      /* REGISTER completes with a request */
            counted = true;
            if (atomic_fetch_add(&u->serving, 1) == 0 && u->announce)
                fprintf(stderr, "ubjfs: FUSE requests go through io_uring "
                        "(%u CPU queues, %u threads each)\n", u->nq, URING_THREADS);
        }
        ent_serve(e);
    }
    return NULL;
}

/* uring_enabled -- does the kernel let FUSE use io_uring now? */
static bool uring_enabled(void)
{
    char c = 'N';
    FILE *f = fopen("/sys/module/fuse/parameters/enable_uring", "r");
    if (f == NULL)
        return false;
    if (fscanf(f, " %c", &c) != 1)
        c = 'N';
    fclose(f);
    return c == 'Y' || c == '1';
}

/* uring_stop -- end and join every thread started */
static void uring_stop(struct ubj_fuse_uring *u)
{
    atomic_store(&u->stop, true);
    pthread_mutex_lock(&u->lock);
    pthread_cond_broadcast(&u->cond);
    pthread_mutex_unlock(&u->lock);
    for (unsigned i = 0; i < u->nt; i++)
        if (u->q[i].started) {
            pthread_join(u->q[i].thread, NULL);
            u->q[i].started = false;
        }
}

/* ubj_fuse_uring_start -- see fuse_uring.h. */
int ubj_fuse_uring_start(struct ubj_fuse_uring *u)
{
    if (u->started)
        return u->ready ? 0 : -EIO;
    u->started = true;
    if (!uring_enabled())
        return -EOPNOTSUPP;
    unsigned n = 0;
    for (unsigned i = 0; i < u->nt; i++)
        if (pthread_create(&u->q[i].thread, NULL, queue_run, &u->q[i]) == 0) {
            u->q[i].started = true;
            n++;
        }
    pthread_mutex_lock(&u->lock);
    while (u->setup_done < n)
        pthread_cond_wait(&u->cond, &u->lock);
    bool ok = n == u->nt && u->setup_failed == 0;
    u->go = ok;
    pthread_cond_broadcast(&u->cond);
    pthread_mutex_unlock(&u->lock);
    if (!ok) {
        uring_stop(u);
        return -EIO;
    }
    u->ready = true;
    return 0;
}

/* ubj_fuse_uring_ready -- see fuse_uring.h. */
bool ubj_fuse_uring_ready(const struct ubj_fuse_uring *u)
{
    return u != NULL && u->ready;
}

/* ubj_fuse_uring_reply -- see fuse_uring.h. */
bool ubj_fuse_uring_reply(struct iovec *iov, int count, ssize_t *n)
{
    struct uring_ent *e = cur;
    struct fuse_out_header oh;
    if (e == NULL || count < 1 || iov[0].iov_len < sizeof oh)
        return false;
    memcpy(&oh, iov[0].iov_base, sizeof oh);
    if (oh.unique != e->commit_id)
        return false;
    cur = NULL;
    size_t off = 0, total = iov[0].iov_len;
    char *pay = e->buf + URING_PRE;
    for (int i = 1; i < count; i++) {
        if (off + iov[i].iov_len > e->q->u->payload) {
            ent_fail(e, oh.unique, EIO);
            errno = EINVAL;
            *n = -1;
            return true;
        }
        memcpy(pay + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    total += off;
    memcpy(e->hdr->in_out, &oh, sizeof oh);
    e->hdr->ent.payload_sz = (uint32_t)off;
    int rc = ent_submit(e, URING_CMD_COMMIT_AND_FETCH);
    if (rc < 0) {
        errno = -rc;
        *n = -1;
    } else {
        *n = (ssize_t)total;
    }
    return true;
}

/* ubj_fuse_uring_active -- see fuse_uring.h. */
unsigned ubj_fuse_uring_active(const struct ubj_fuse_uring *u)
{
    return u ? atomic_load(&((struct ubj_fuse_uring *)u)->serving) : 0;
}

/* ubj_fuse_uring_free -- see fuse_uring.h. */
void ubj_fuse_uring_free(struct ubj_fuse_uring *u)
{
    if (u == NULL)
        return;
    uring_stop(u);
    for (unsigned i = 0; i < u->nt; i++) {
        struct uring_queue *q = &u->q[i];
        if (q->ring_ok)
            io_uring_queue_exit(&q->ring);
        for (unsigned j = 0; q->ents != NULL && j < u->depth; j++) {
            free(q->ents[j].hdr);
            free(q->ents[j].buf);
        }
        free(q->ents);
    }
    pthread_cond_destroy(&u->cond);
    pthread_mutex_destroy(&u->lock);
    free(u->q);
    free(u);
}
