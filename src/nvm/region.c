/*
 * region.c -- the persistent region (include/ubjfs/nvm.h): layout
 * arithmetic, mapping a file with libpmem, checking the header, formatting.
 *
 * Owns: struct ubj_nvm (nvm_int.h) from open/format to close, the file
 * descriptor that holds the region's flock, the mapping.
 *
 * Invariants:
 *  R1 Open writes nothing: a region that fails any check is unmapped and
 *     refused with a one-line message before a byte of it changes.
 *  R2 After a successful open or format, r->layout equals the header's
 *     layout, which is self-consistent (offsets derived from nbufs) and
 *     fits in the mapping; the data array is 4096-aligned in memory.
 *  R3 Format clears the magic first (persisted) and writes it last
 *     (persisted), so an interrupted format leaves a region that every
 *     open refuses as "not a region".
 *  R4 A read-only region (UBJ_NVM_OPEN_RDONLY) is never passed to
 *     persist.c (asserted there); a regular file is then mapped PROT_READ
 *     (a device such as /dev/dax through libpmem, which knows its size).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libpmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "nvm/nvm_int.h"
#include "ubjfs/model.h"
#include "util/util.h"

#define NVM_BS 4096u

/* nvm_round_up -- x rounded up to a multiple of 4096. */
static uint64_t nvm_round_up(uint64_t x)
{
    return (x + NVM_BS - 1) / NVM_BS * NVM_BS;
}

/* nvm_layout_of -- the layout of exactly n buffers. */
static void nvm_layout_of(uint32_t n, struct ubj_nvm_layout *l)
{
    l->nbufs = n;
    l->block_size = NVM_BS;
    l->desc_size = UBJ_NVM_DESC_SIZE;
    l->desc_off = UBJ_NVM_HDR_SIZE;
    l->data_off = l->desc_off + nvm_round_up((uint64_t)n * UBJ_NVM_DESC_SIZE);
    l->size = l->data_off + (uint64_t)n * NVM_BS;
}

/* ubj_nvm_layout_for -- layout of nbufs buffers, or of what fits in size. */
int ubj_nvm_layout_for(uint32_t nbufs, uint64_t size, struct ubj_nvm_layout *out)
{
    uint64_t n = nbufs;
    memset(out, 0, sizeof *out);   /* all zero on error */
    if (n == 0) {
        if (size <= UBJ_NVM_HDR_SIZE)
            return ubj_set_error(-EINVAL, "nvm: a region of %llu bytes holds "
                                 "no buffer", (unsigned long long)size);
        n = (size - UBJ_NVM_HDR_SIZE) / (NVM_BS + UBJ_NVM_DESC_SIZE);
        if (n > UBJ_NVM_MAX_BUFS)
            n = UBJ_NVM_MAX_BUFS;
        struct ubj_nvm_layout l;
        while (n > 0 && (nvm_layout_of((uint32_t)n, &l), l.size > size))
            n--;
    }
    if (n < UBJ_NVM_MIN_BUFS || n > UBJ_NVM_MAX_BUFS)
        return ubj_set_error(-EINVAL, "nvm: %llu buffers (a region holds %u..%u)",
                             (unsigned long long)n, UBJ_NVM_MIN_BUFS,
                             UBJ_NVM_MAX_BUFS);
    nvm_layout_of((uint32_t)n, out);
    if (nbufs != 0 && size != 0 && out->size > size)
        return ubj_set_error(-EINVAL, "nvm: %u buffers need %llu bytes, more "
                             "than the %llu given", nbufs,
                             (unsigned long long)out->size,
                             (unsigned long long)size);
    return 0;
}

/* nvm_header_crc -- crc32c of the static part of the header. */
uint32_t nvm_header_crc(const struct nvm_header *h)
{
    return ubj_crc32c(~0u, h, NVM_HDR_CRC_LEN);
}

/* nvm_free -- release whatever an open or format set up. */
static void nvm_free(struct ubj_nvm *r)
{
    if (r == NULL)
        return;
    nvm_shadow_detach(r);
    if (r->model != NULL)
        ubj_nvm_model_destroy(r->model);
    if (r->base != NULL) {
        if (r->mmapped)
            munmap(r->base, r->map_len);
        else
            pmem_unmap(r->base, r->map_len);
    }
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r);
}

/* nvm_lock_open -- open path, take the flock; *r allocated.  0 or -errno. */
static int nvm_lock_open(const char *path, bool rdonly, bool create,
                         struct ubj_nvm **out)
{
    struct ubj_nvm *r = calloc(1, sizeof *r);
    if (r == NULL || (r->path = strdup(path)) == NULL) {
        free(r);
        return ubj_set_error(-ENOMEM, "nvm: out of memory");
    }
    r->rdonly = rdonly;
    int oflags = (rdonly ? O_RDONLY : O_RDWR) | O_CLOEXEC | (create ? O_CREAT : 0);
    r->fd = open(path, oflags, 0600);
    if (r->fd < 0) {
        int e = errno;
        nvm_free(r);
        if (e == ENOENT)
            return ubj_set_error(-ENOENT, "nvm: no region at %s (create it with "
                                 "--format-nvm)", path);
        return ubj_set_error(-e, "nvm: %s: %s", path, strerror(e));
    }
    if (flock(r->fd, (rdonly ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int e = errno;
        nvm_free(r);
        if (e == EWOULDBLOCK)
            return ubj_set_error(-EBUSY, "nvm: %s is in use (mounted or locked "
                                 "by another program)", path);
        return ubj_set_error(-e, "nvm: %s: flock: %s", path, strerror(e));
    }
    *out = r;
    return 0;
}

/* nvm_file_size -- the size of r's file or device in bytes.  0 or -errno
 * (then *size is 0 and *regular false). */
static int nvm_file_size(struct ubj_nvm *r, uint64_t *size, bool *regular)
{
    struct stat st;
    *size = 0;
    *regular = false;
    if (fstat(r->fd, &st) != 0)
        return ubj_set_error(-errno, "nvm: %s: %s", r->path, strerror(errno));
    *regular = S_ISREG(st.st_mode);
    *size = (uint64_t)st.st_size;
    return 0;
}

/* nvm_map_plain -- mmap the whole regular file (no libpmem): read-only
 * shared, or a private copy-on-write view.  0 or -errno. */
static int nvm_map_plain(struct ubj_nvm *r, uint64_t size, int prot, int flags)
{
    if (size < UBJ_NVM_HDR_SIZE)
        return ubj_set_error(-EUCLEAN, "nvm: %s is not a ubjfs NVM region "
                             "(%llu bytes)", r->path, (unsigned long long)size);
    void *p = mmap(NULL, size, prot, flags, r->fd, 0);
    if (p == MAP_FAILED)
        return ubj_set_error(-errno, "nvm: %s: mmap: %s", r->path, strerror(errno));
    r->base = p;
    r->map_len = size;
    r->is_pmem = false;
    r->mmapped = true;
    return 0;
}

/* nvm_map -- map the whole file (read-only, private, or with libpmem).
 * 0 or -errno. */
static int nvm_map(struct ubj_nvm *r)
{
    uint64_t size;
    bool regular;
    int rc = nvm_file_size(r, &size, &regular);
    if (rc < 0)
        return rc;
    if (r->private_map && !regular)
        return ubj_set_error(-EINVAL, "nvm: %s: a read-only mount needs a region "
                             "file (not a device)", r->path);
    if (r->private_map)
        rc = nvm_map_plain(r, size, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    else if (r->rdonly && regular)
        rc = nvm_map_plain(r, size, PROT_READ, MAP_SHARED);
    else {   /* read-write, or a device (/dev/dax: libpmem finds its size) */
        size_t len = 0;
        int is_pmem = 0;
        errno = 0;
        void *p = pmem_map_file(r->path, 0, 0, 0, &len, &is_pmem);
        if (p == NULL) {
            int e = errno ? errno : EIO;
            const char *why = pmem_errormsg();
            return ubj_set_error(-e, "nvm: %s: %s", r->path,
                                 why && *why ? why : strerror(e));
        }
        r->base = p;
        r->map_len = len;
        r->is_pmem = is_pmem != 0;
    }
    if (rc < 0)
        return rc;
    r->hdr = (struct nvm_header *)r->base;
    return 0;
}

/* nvm_check_header -- every check of R2 on a mapped region.  0 or -EUCLEAN. */
static int nvm_check_header(struct ubj_nvm *r)
{
    const struct nvm_header *h = r->hdr;
    if (r->map_len < UBJ_NVM_HDR_SIZE || h->magic != UBJ_NVM_MAGIC)
        return ubj_set_error(-EUCLEAN, "nvm: %s is not a ubjfs NVM region "
                             "(bad magic; --format-nvm initialises it)", r->path);
    if (h->version != UBJ_NVM_VERSION)
        return ubj_set_error(-EUCLEAN, "nvm: %s: unsupported region version %u",
                             r->path, h->version);
    if (h->hdr_crc != nvm_header_crc(h))
        return ubj_set_error(-EUCLEAN, "nvm: %s: corrupt header (checksum "
                             "mismatch)", r->path);
    struct ubj_nvm_layout l;
    if (h->nbufs < UBJ_NVM_MIN_BUFS || h->nbufs > UBJ_NVM_MAX_BUFS)
        return ubj_set_error(-EUCLEAN, "nvm: %s: corrupt header (%u buffers)",
                             r->path, h->nbufs);
    nvm_layout_of(h->nbufs, &l);
    if (h->block_size != l.block_size || h->desc_size != l.desc_size ||
        h->desc_off != l.desc_off || h->data_off != l.data_off || h->size != l.size)
        return ubj_set_error(-EUCLEAN, "nvm: %s: corrupt header (layout of %u "
                             "buffers inconsistent)", r->path, h->nbufs);
    if (l.size > r->map_len)
        return ubj_set_error(-EUCLEAN, "nvm: %s: truncated: its layout needs "
                             "%llu bytes, the file has %llu", r->path,
                             (unsigned long long)l.size,
                             (unsigned long long)r->map_len);
    r->layout = l;
    memcpy(r->uuid, h->uuid, 16);
    r->region_id = h->region_id;
    return 0;
}

/* ubj_nvm_open -- map and check an existing region; writes nothing. */
int ubj_nvm_open(const char *path, unsigned flags, struct ubj_nvm **out)
{
    struct ubj_nvm *r;
    if (path == NULL || out == NULL ||
        (flags & ~(UBJ_NVM_OPEN_RDONLY | UBJ_NVM_OPEN_PRIVATE)) ||
        flags == (UBJ_NVM_OPEN_RDONLY | UBJ_NVM_OPEN_PRIVATE))
        return ubj_set_error(-EINVAL, "nvm: bad open arguments");
    bool priv = (flags & UBJ_NVM_OPEN_PRIVATE) != 0;
    int rc = nvm_lock_open(path, (flags & UBJ_NVM_OPEN_RDONLY) != 0 || priv, false, &r);
    if (rc < 0)
        return rc;
    if (priv) {               /* the file is read-only; the memory is ours */
        r->rdonly = false;
        r->private_map = true;
    }
    rc = nvm_map(r);
    if (rc == 0)
        rc = nvm_check_header(r);
    if (rc < 0) {
        nvm_free(r);
        return rc;
    }
    if (!r->rdonly)
        nvm_shadow_attach(r);
    *out = r;
    return 0;
}

/* nvm_random64 -- 64 random bits (getrandom, or a clock mix). */
static uint64_t nvm_random64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        v = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)getpid() << 48);
    }
    return v;
}

/* nvm_format_write -- R3: clear the magic, zero the descriptors and the
 * commit record, write the header, then the magic; each step persisted. */
static int nvm_format_write(struct ubj_nvm *r, const struct ubj_nvm_layout *l,
                            const uint8_t uuid[16])
{
    struct nvm_header *h = r->hdr;
    ubj_nvm_store64(r, &h->magic, 0);
    int rc = ubj_nvm_persist(r, &h->magic, 8);
    if (rc < 0)
        return rc;
    struct nvm_header nh;
    memset(&nh, 0, sizeof nh);
    nh.version = UBJ_NVM_VERSION;
    nh.block_size = l->block_size;
    nh.nbufs = l->nbufs;
    nh.desc_size = l->desc_size;
    nh.desc_off = l->desc_off;
    nh.data_off = l->data_off;
    nh.size = l->size;
    memcpy(nh.uuid, uuid, 16);
    nh.region_id = nvm_random64();
    nh.format_time = (int64_t)time(NULL);
    nh.magic = UBJ_NVM_MAGIC;           /* the crc covers the final magic */
    nh.hdr_crc = nvm_header_crc(&nh);
    ubj_nvm_memset(r, r->base + l->desc_off, 0, l->data_off - l->desc_off);
    ubj_nvm_flush(r, r->base + l->desc_off, l->data_off - l->desc_off);
    ubj_nvm_copy(r, (uint8_t *)h + 8, (const uint8_t *)&nh + 8, sizeof nh - 8);
    ubj_nvm_flush(r, h, sizeof nh);
    rc = ubj_nvm_drain(r);
    if (rc < 0)
        return rc;
    ubj_nvm_store64(r, &h->magic, UBJ_NVM_MAGIC);
    rc = ubj_nvm_persist(r, &h->magic, 8);
    if (rc < 0)
        return rc;
    r->layout = *l;
    memcpy(r->uuid, uuid, 16);
    r->region_id = nh.region_id;
    return 0;
}

/* nvm_prepare_size -- grow a regular file to `need` bytes; a device must
 * already be large enough.  0 or -errno. */
static int nvm_prepare_size(struct ubj_nvm *r, uint64_t need)
{
    uint64_t size;
    bool regular;
    int rc = nvm_file_size(r, &size, &regular);
    if (rc < 0 || size >= need || !regular)
        return rc;   /* a device's size is checked once mapped */
    rc = posix_fallocate(r->fd, 0, (off_t)need);
    if (rc == EOPNOTSUPP || rc == EINVAL)
        rc = ftruncate(r->fd, (off_t)need) == 0 ? 0 : errno;
    if (rc != 0)
        return ubj_set_error(-rc, "nvm: %s: cannot size to %llu bytes: %s",
                             r->path, (unsigned long long)need, strerror(rc));
    return 0;
}

/* ubj_nvm_format -- make path an empty region with layout l for uuid. */
int ubj_nvm_format(const char *path, const struct ubj_nvm_layout *l,
                   const uint8_t uuid[16], struct ubj_nvm **out)
{
    struct ubj_nvm *r;
    if (path == NULL || l == NULL || uuid == NULL || out == NULL)
        return ubj_set_error(-EINVAL, "nvm: bad format arguments");
    struct ubj_nvm_layout chk;
    if (ubj_nvm_layout_for(l->nbufs, 0, &chk) < 0 || chk.size != l->size ||
        chk.data_off != l->data_off)
        return ubj_set_error(-EINVAL, "nvm: inconsistent layout to format");
    bool existed = access(path, F_OK) == 0;
    int rc = nvm_lock_open(path, false, true, &r);
    if (rc < 0)
        return rc;
    rc = nvm_prepare_size(r, l->size);
    if (rc == 0)
        rc = nvm_map(r);
    if (rc == 0 && r->map_len < l->size)
        rc = ubj_set_error(-ENOSPC, "nvm: %s: mapped %zu bytes, need %llu",
                           path, r->map_len, (unsigned long long)l->size);
    if (rc == 0) {
        nvm_shadow_attach(r);
        rc = nvm_format_write(r, l, uuid);
    }
    if (rc < 0) {
        nvm_free(r);
        if (!existed)
            (void)unlink(path);   /* leave no half-made region behind */
        return rc;
    }
    *out = r;
    return 0;
}

/* ubj_nvm_close -- unmap and unlock. */
void ubj_nvm_close(struct ubj_nvm *r)
{
    nvm_free(r);
}

/* ---- accessors ------------------------------------------------------------ */

/* ubj_nvm_get_layout -- the region's layout. */
const struct ubj_nvm_layout *ubj_nvm_get_layout(const struct ubj_nvm *r)
{
    return &r->layout;
}

/* ubj_nvm_uuid -- the paired image's uuid (16 bytes). */
const uint8_t *ubj_nvm_uuid(const struct ubj_nvm *r)
{
    return r->uuid;
}

/* ubj_nvm_region_id -- the random id chosen at format. */
uint64_t ubj_nvm_region_id(const struct ubj_nvm *r)
{
    return r->region_id;
}

/* ubj_nvm_desc -- the descriptor array. */
void *ubj_nvm_desc(struct ubj_nvm *r)
{
    return r->base + r->layout.desc_off;
}

/* ubj_nvm_data -- the 4096-aligned buffer array. */
uint8_t *ubj_nvm_data(struct ubj_nvm *r)
{
    return r->base + r->layout.data_off;
}

/* ubj_nvm_mount_gen -- the generation of the last read-write mount. */
uint64_t ubj_nvm_mount_gen(const struct ubj_nvm *r)
{
    return __atomic_load_n(&r->hdr->mount_gen, __ATOMIC_ACQUIRE);
}

/* ubj_nvm_set_mount_gen -- store and persist a new mount generation. */
int ubj_nvm_set_mount_gen(struct ubj_nvm *r, uint64_t gen)
{
    if (r->rdonly)
        return ubj_set_error(-EROFS, "nvm: %s is open read-only", r->path);
    ubj_nvm_store64(r, &r->hdr->mount_gen, gen);
    return ubj_nvm_persist(r, &r->hdr->mount_gen, 8);
}

/* ubj_nvm_committed_word -- the commit record's address. */
uint64_t *ubj_nvm_committed_word(struct ubj_nvm *r)
{
    return &r->hdr->committed;
}

/* ubj_nvm_committed -- the last committed transaction id. */
uint64_t ubj_nvm_committed(const struct ubj_nvm *r)
{
    return __atomic_load_n(&r->hdr->committed, __ATOMIC_ACQUIRE);
}

/* ubj_nvm_is_pmem -- 1 if the mapping is real persistent memory. */
int ubj_nvm_is_pmem(const struct ubj_nvm *r)
{
    return r->is_pmem;
}

/* ubj_nvm_path -- the path the region was opened with. */
const char *ubj_nvm_path(const struct ubj_nvm *r)
{
    return r->path;
}

/* ---- the recorded device error ----------------------------------------- */

/* ubj_nvm_error_record -- store the details, persist, then the code word. */
int ubj_nvm_error_record(struct ubj_nvm *r, const struct ubj_nvm_error *e)
{
    if (r->rdonly)
        return ubj_set_error(-EROFS, "nvm: %s is open read-only", r->path);
    if (e->err <= 0)
        return ubj_set_error(-EINVAL, "nvm: no error to record");
    struct nvm_header *h = r->hdr;
    ubj_nvm_store64(r, (uint64_t *)&h->err_time, (uint64_t)e->time);
    ubj_nvm_store64(r, &h->err_txid, e->txid);
    ubj_nvm_store64(r, &h->err_blocks, e->blocks);
    int rc = ubj_nvm_persist(r, &h->err_time, 24);
    if (rc < 0)
        return rc;
    ubj_nvm_store64(r, &h->err_code, (uint64_t)(uint32_t)e->err |
                                     (uint64_t)e->where << 32);
    return ubj_nvm_persist(r, &h->err_code, 8);
}

/* ubj_nvm_error_get -- the recorded error, if any. */
int ubj_nvm_error_get(const struct ubj_nvm *r, struct ubj_nvm_error *out)
{
    uint64_t code = __atomic_load_n(&r->hdr->err_code, __ATOMIC_ACQUIRE);
    if (code == 0)
        return 0;
    *out = (struct ubj_nvm_error){
        .err = (int)(uint32_t)code, .where = (uint32_t)(code >> 32),
        .time = r->hdr->err_time, .txid = r->hdr->err_txid,
        .blocks = r->hdr->err_blocks,
    };
    return 1;
}

/* ubj_nvm_error_clear -- the code word 0, persisted. */
int ubj_nvm_error_clear(struct ubj_nvm *r)
{
    if (r->rdonly)
        return ubj_set_error(-EROFS, "nvm: %s is open read-only", r->path);
    ubj_nvm_store64(r, &r->hdr->err_code, 0);
    return ubj_nvm_persist(r, &r->hdr->err_code, 8);
}

/* nvm_where_text -- the checkpoint a UBJ_NVM_ERR_* names. */
static const char *nvm_where_text(uint32_t where)
{
    switch (where & 0xffu) {
    case UBJ_NVM_ERR_START: return "the checkpoint at an operation's start";
    case UBJ_NVM_ERR_TIMER: return "the timer's checkpoint";
    case UBJ_NVM_ERR_SYNC: return "sync's checkpoint";
    case UBJ_NVM_ERR_RECLAIM: return "the checkpoint of a full cache";
    case UBJ_NVM_ERR_UNMOUNT: return "unmount's checkpoint";
    default: return "a checkpoint";
    }
}

/* ubj_nvm_error_text -- one line saying what the record says. */
char *ubj_nvm_error_text(const struct ubj_nvm_error *e, char *buf, size_t len)
{
    char when[40] = "an unknown time";
    time_t t = (time_t)e->time;
    struct tm tm;
    if (gmtime_r(&t, &tm) != NULL)
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(buf, len, "%s could not %s %llu committed blocks home (%s) at %s, "
             "after commit %llu", nvm_where_text(e->where),
             (e->where & UBJ_NVM_ERR_FLUSH) ? "flush the device after writing"
                                            : "write",
             (unsigned long long)e->blocks, strerror(e->err), when,
             (unsigned long long)e->txid);
    return buf;
}
