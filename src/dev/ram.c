/*
 * ram.c -- a block device in DRAM (ubj_bdev_ram_create): tests, benchmarks
 * and the reference for what a device must do.
 *
 * Storage: one zero-filled byte array of nblocks * 4096 bytes.  Small
 * devices use calloc; from RAM_MMAP_MIN bytes on, an anonymous private
 * mapping with MAP_NORESERVE, so a sparse 1 TiB device costs only the
 * pages actually written.
 *
 * Invariants and thread-safety: after creation nothing in struct ram_bdev
 * changes until destroy, so reads and writes need no lock.  Requests on
 * different blocks never interfere; concurrent requests on the same block
 * race in memcpy exactly as they would on a disk (the caller's business).
 * The dispatch layer has checked every range, so no bounds checks here.
 * Guarantees: ATOMIC_BLOCK (a write is never visible half-done to a later
 * request once it returned; there is no power loss in DRAM), no volatile
 * cache (flush is a no-op, a FUA write an ordinary one).
 * Interface v2: its submit is its own calls (dev_submit_calls): every
 * request completes in the caller's thread before submit returns.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "dev/dev_int.h"
#include "ubjfs/bdev.h"
#include "util/util.h"

/* from src/util/errormsg.c (declared in fs/fs.h, which dev/ must not use) */

#define RAM_MMAP_MIN (16u << 20)   /* bytes; mmap instead of calloc from here */

struct ram_bdev {
    struct ubj_bdev base;   /* first: the handle callers hold */
    unsigned char *mem;     /* nblocks * block_size bytes */
    size_t len;             /* bytes in mem */
    bool mapped;            /* mem from mmap (else calloc) */
};

/* ram_of -- the ram device embedding d. */
static inline struct ram_bdev *ram_of(struct ubj_bdev *d)
{
    return (struct ram_bdev *)d;
}

/* ram_read -- copy blocks out of the array. */
static int ram_read(struct ubj_bdev *d, uint64_t blkno, uint32_t count, void *buf)
{
    struct ram_bdev *r = ram_of(d);
    memcpy(buf, r->mem + blkno * UBJ_BLOCK_SIZE, (size_t)count * UBJ_BLOCK_SIZE);
    return 0;
}

/* ram_write -- copy blocks into the array. */
static int ram_write(struct ubj_bdev *d, uint64_t blkno, uint32_t count,
                     const void *buf)
{
    struct ram_bdev *r = ram_of(d);
    memcpy(r->mem + blkno * UBJ_BLOCK_SIZE, buf, (size_t)count * UBJ_BLOCK_SIZE);
    return 0;
}

/* ram_flush -- nothing to make durable. */
static int ram_flush(struct ubj_bdev *d)
{
    (void)d;
    return 0;
}

/* ram_destroy -- release the array and the device. */
static void ram_destroy(struct ubj_bdev *d)
{
    struct ram_bdev *r = ram_of(d);
    if (r->mapped)
        munmap(r->mem, r->len);
    else
        free(r->mem);
    free(r);
}

static const struct ubj_bdev_ops ram_ops = {
    .version = UBJ_BDEV_OPS_V2,
    .name = "ram",
    .read = ram_read,
    .write = ram_write,
    .flush = ram_flush,
    .destroy = ram_destroy,
    .submit = dev_submit_calls,     /* synchronous, in the caller's thread */
};

/* ram_alloc -- zeroed storage of len bytes; sets r->mem and r->mapped. */
static int ram_alloc(struct ram_bdev *r, size_t len)
{
    r->len = len;
    if (len < RAM_MMAP_MIN) {
        r->mem = calloc(1, len);
        r->mapped = false;
        return r->mem != NULL ? 0 : -ENOMEM;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -ENOMEM;
    r->mem = p;
    r->mapped = true;
    return 0;
}

/* ubj_bdev_ram_create -- a zero-filled DRAM device of nblocks blocks. */
int ubj_bdev_ram_create(uint64_t nblocks, struct ubj_bdev **out)
{
    if (out == NULL)
        return ubj_set_error(-EINVAL, "ram bdev: NULL output pointer");
    *out = NULL;
    if (nblocks == 0)
        return ubj_set_error(-EINVAL, "ram bdev: zero blocks");
    if (nblocks > SIZE_MAX / UBJ_BLOCK_SIZE)
        return ubj_set_error(-ENOMEM, "ram bdev: %llu blocks exceed the "
                             "address space", (unsigned long long)nblocks);
    struct ram_bdev *r = calloc(1, sizeof *r);
    if (r == NULL)
        return ubj_set_error(-ENOMEM, "ram bdev: out of memory");
    if (ram_alloc(r, (size_t)nblocks * UBJ_BLOCK_SIZE) < 0) {
        free(r);
        return ubj_set_error(-ENOMEM, "ram bdev: cannot allocate %llu blocks",
                             (unsigned long long)nblocks);
    }
    r->base.ops = &ram_ops;
    r->base.block_size = UBJ_BLOCK_SIZE;
    r->base.guarantees = UBJ_BDEV_ATOMIC_BLOCK;
    r->base.nblocks = nblocks;
    r->base.lower = NULL;
    *out = &r->base;
    return 0;
}
