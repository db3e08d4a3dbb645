/*
 * fault.c -- the fault-injecting wrapper (ubj_bdev_fault_create): passes
 * every request to the device it wraps until an armed fault fires, then
 * fails requests with -EIO (SQLite test6.c / littlefs emubd style).
 *
 * Per request kind (read, write, flush) one arm:
 *   countdown  requests of that kind still to pass before the fault fires
 *              (1 = the very next one); 0 = not armed.
 *   persistent once fired, every later request of that kind fails too,
 *              until ubj_bdev_fault_disarm().
 *   tripped    a persistent arm that has fired.
 *   torn       for writes: sectors (512 bytes) of a failing request that
 *              still reach the lower device first (a torn write).
 *
 * Invariants:
 *  - arm[] and the decision to fail are [lock]; the I/O itself (including
 *    the torn part of a failing write) runs outside the lock.
 *  - A failed read, flush, or write (beyond its torn prefix) never reaches
 *    the lower device.  A passing request is forwarded as it is (the same
 *    object, FUA and all: ubj_bdev_forward), a torn prefix written with
 *    v1 calls, so the lower device's stats count what really reached it.
 *  - `fired` counts failed requests; written under the lock, read with an
 *    atomic load by ubj_bdev_fault_fired().
 *  - The wrapper owns `lower` from a successful create on: destroy
 *    destroys it.  Geometry and guarantees are those of lower.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dev/dev_int.h"
#include "ubjfs/bdev.h"
#include "util/util.h"

/* from src/util/errormsg.c (declared in fs/fs.h, which dev/ must not use) */

#define FAULT_SECTOR 512u
#define FAULT_NOPS 3

struct fault_arm {
    uint64_t countdown;     /* [lock] 0 = not armed */
    bool persistent;        /* [lock] */
    bool tripped;           /* [lock] persistent and fired */
    uint32_t torn;          /* [lock] sectors written by a failing write */
};

struct fault_bdev {
    struct ubj_bdev base;   /* first: the handle callers hold */
    pthread_mutex_t lock;
    struct fault_arm arm[FAULT_NOPS];   /* [lock] by enum ubj_fault_op */
    uint64_t fired;         /* [lock] writes; [atomic] reads */
};

static const char *const fault_op_name[FAULT_NOPS] = { "read", "write", "flush" };

/* fault_of -- the fault device embedding d. */
static inline struct fault_bdev *fault_of(struct ubj_bdev *d)
{
    return (struct fault_bdev *)d;
}

/* fault_should_fail -- count one request of kind op; true if it must fail.
 * *torn receives the torn-sector count for a failing write. */
static bool fault_should_fail(struct fault_bdev *f, enum ubj_fault_op op,
                              uint32_t *torn)
{
    bool fail = false;
    pthread_mutex_lock(&f->lock);
    struct fault_arm *a = &f->arm[op];
    if (a->tripped) {
        fail = true;
    } else if (a->countdown > 0 && --a->countdown == 0) {
        fail = true;
        a->tripped = a->persistent;
    }
    if (fail) {
        *torn = a->torn;
        if (!a->tripped)
            *a = (struct fault_arm){0};
        __atomic_store_n(&f->fired, f->fired + 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&f->lock);
    return fail;
}

/* fault_eio -- the error a fired fault returns, with its message. */
static int fault_eio(enum ubj_fault_op op, uint64_t blkno)
{
    return ubj_set_error(-EIO, "fault bdev: injected I/O error on %s at "
                         "block %llu", fault_op_name[op],
                         (unsigned long long)blkno);
}

/* fault_tear -- write the first `sectors` sectors of a request to lower:
 * whole blocks directly, the partial block by read-modify-write. */
static int fault_tear(struct ubj_bdev *lower, uint64_t blkno, uint32_t count,
                      const unsigned char *buf, uint32_t sectors)
{
    uint32_t per_block = UBJ_BLOCK_SIZE / FAULT_SECTOR;
    uint64_t total = (uint64_t)count * per_block;
    if (sectors > total)
        sectors = (uint32_t)total;
    uint32_t full = sectors / per_block, part = sectors % per_block;
    int rc = full > 0 ? ubj_bdev_write(lower, blkno, full, buf) : 0;
    if (rc < 0 || part == 0)
        return rc;
    unsigned char *tmp = malloc(UBJ_BLOCK_SIZE);
    if (tmp == NULL)
        return -ENOMEM;
    rc = ubj_bdev_read(lower, blkno + full, 1, tmp);
    if (rc == 0) {
        memcpy(tmp, buf + (size_t)full * UBJ_BLOCK_SIZE,
               (size_t)part * FAULT_SECTOR);
        rc = ubj_bdev_write(lower, blkno + full, 1, tmp);
    }
    free(tmp);
    return rc;
}

/* fault_submit -- fail r (a write possibly torn) if its kind is armed,
 * else forward it to the lower device. */
static void fault_submit(struct ubj_bdev *d, struct ubj_req *r)
{
    _Static_assert((int)UBJ_FAULT_READ == (int)UBJ_REQ_READ &&
                   (int)UBJ_FAULT_WRITE == (int)UBJ_REQ_WRITE &&
                   (int)UBJ_FAULT_FLUSH == (int)UBJ_REQ_FLUSH,
                   "fault kinds are request operations");
    enum ubj_fault_op op = (enum ubj_fault_op)r->op;
    uint32_t torn = 0;
    int rc;
    if (!fault_should_fail(fault_of(d), op, &torn)) {
        rc = ubj_bdev_forward(d->lower, r);
    } else {
        if (op == UBJ_FAULT_WRITE && torn > 0)
            (void)fault_tear(d->lower, r->blkno, r->count, r->buf, torn);
        rc = fault_eio(op, r->blkno);
    }
    ubj_req_complete(r, rc);
}

/* fault_destroy -- destroy the lower device, then the wrapper. */
static void fault_destroy(struct ubj_bdev *d)
{
    struct fault_bdev *f = fault_of(d);
    ubj_bdev_destroy(d->lower);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static const struct ubj_bdev_ops fault_ops = {
    .version = UBJ_BDEV_OPS_V2,
    .name = "fault",
    .destroy = fault_destroy,
    .submit = fault_submit,
};

/* ubj_bdev_fault_create -- wrap lower in a pass-through fault injector. */
int ubj_bdev_fault_create(struct ubj_bdev *lower, struct ubj_bdev **out)
{
    if (out == NULL || lower == NULL)
        return ubj_set_error(-EINVAL, "fault bdev: NULL argument");
    *out = NULL;
    struct fault_bdev *f = calloc(1, sizeof *f);
    if (f == NULL)
        return ubj_set_error(-ENOMEM, "fault bdev: out of memory");
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        free(f);
        return ubj_set_error(-ENOMEM, "fault bdev: cannot create its mutex");
    }
    dev_wrap_init(&f->base, &fault_ops, lower);
    *out = &f->base;
    return 0;
}

/* ubj_bdev_fault_arm -- fail the nth next request of kind op. */
int ubj_bdev_fault_arm(struct ubj_bdev *d, enum ubj_fault_op op, uint64_t nth,
                       int persistent, uint32_t torn_sectors)
{
    if (d == NULL || d->ops != &fault_ops)
        return ubj_set_error(-EINVAL, "fault arm: not a fault device");
    if ((unsigned)op >= FAULT_NOPS || nth == 0)
        return ubj_set_error(-EINVAL, "fault arm: bad op %d or nth %llu",
                             (int)op, (unsigned long long)nth);
    struct fault_bdev *f = fault_of(d);
    pthread_mutex_lock(&f->lock);
    f->arm[op] = (struct fault_arm){
        .countdown = nth,
        .persistent = persistent != 0,
        .tripped = false,
        .torn = op == UBJ_FAULT_WRITE ? torn_sectors : 0,
    };
    pthread_mutex_unlock(&f->lock);
    return 0;
}

/* ubj_bdev_fault_disarm -- cancel every armed and tripped fault. */
int ubj_bdev_fault_disarm(struct ubj_bdev *d)
{
    if (d == NULL || d->ops != &fault_ops)
        return ubj_set_error(-EINVAL, "fault disarm: not a fault device");
    struct fault_bdev *f = fault_of(d);
    pthread_mutex_lock(&f->lock);
    memset(f->arm, 0, sizeof f->arm);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

/* ubj_bdev_fault_fired -- requests failed so far (0 for other devices). */
uint64_t ubj_bdev_fault_fired(const struct ubj_bdev *d)
{
    if (d == NULL || d->ops != &fault_ops)
        return 0;
    const struct fault_bdev *f = (const struct fault_bdev *)d;
    return __atomic_load_n(&f->fired, __ATOMIC_RELAXED);
}
