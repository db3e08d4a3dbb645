/*
 * nvm_int.h -- what region.c, persist.c and shadow.c share: the mapped
 * region object, the on-NVM header, and the shadow's hooks.
 *
 * Header (bytes, little-endian), all fixed at format except `committed`:
 *     0  magic        UBJ_NVM_MAGIC ("UBJNVMR1")
 *     8  version      UBJ_NVM_VERSION
 *    12  block_size   4096
 *    16  nbufs
 *    20  desc_size    48
 *    24  desc_off
 *    32  data_off
 *    40  size         bytes the layout needs
 *    48  uuid[16]     the paired image's uuid
 *    64  region_id    random at format
 *    72  format_time  seconds since the epoch
 *    80  hdr_crc      crc32c(~0, bytes [0, 80))
 *    84  (zero)
 *    88  mount_gen    generation of the last read-write mount
 *    96  err_code     0, or the device error that stopped the last mount
 *                     (docs/UBJ.md, "Device errors"): errno | where << 32;
 *                     stored last, one atomic word
 *   104  err_time, err_txid, err_blocks: its details (valid iff err_code)
 *   128  (zero up to 256)
 *   256  committed    last committed transaction id: one aligned 8-byte
 *                     word in its own cache line, the commit record
 */
#ifndef UBJ_NVM_INT_H
#define UBJ_NVM_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "ubjfs/nvm.h"

#define UBJ_NVM_MAGIC 0x3152564d4e4a4255ull   /* "UBJNVMR1" little-endian */
#define NVM_HDR_CRC_LEN 80u
#define NVM_COMMITTED_OFF 256u

struct nvm_header {
    uint64_t magic;
    uint32_t version;
    uint32_t block_size;
    uint32_t nbufs;
    uint32_t desc_size;
    uint64_t desc_off;
    uint64_t data_off;
    uint64_t size;
    uint8_t  uuid[16];
    uint64_t region_id;
    int64_t  format_time;
    uint32_t hdr_crc;
    uint32_t pad;
    uint64_t mount_gen;      /* 88: generation of the last read-write mount
                                (outside the crc: one atomic word) */
    uint64_t err_code;       /* 96: the recorded device error (outside the
                                crc, like everything from here on) */
    int64_t  err_time;       /* 104 */
    uint64_t err_txid;       /* 112 */
    uint64_t err_blocks;     /* 120 */
    uint8_t  zero[NVM_COMMITTED_OFF - 128];
    uint64_t committed;
};
_Static_assert(offsetof(struct nvm_header, hdr_crc) == NVM_HDR_CRC_LEN, "hdr");
_Static_assert(offsetof(struct nvm_header, committed) == NVM_COMMITTED_OFF, "hdr");

/* Flushed ranges remembered until the next drain (non-pmem mappings). */
struct nvm_range {
    uint64_t lo, hi;     /* byte offsets; lo == hi: none */
};

struct ubj_nvm {
    char *path;
    int fd;                        /* holds the flock */
    bool rdonly;
    bool mmapped;                  /* plain mmap (read-only file), else libpmem */
    bool private_map;              /* MAP_PRIVATE copy: persists stay in memory */
    bool is_pmem;
    uint8_t *base;                 /* the mapping */
    size_t map_len;
    struct nvm_header *hdr;        /* == base */
    struct ubj_nvm_layout layout;
    uint8_t uuid[16];
    uint64_t region_id;
    struct nvm_range pending;      /* flushed since the last drain (msync) */
    struct ubj_nvm_counters stats;
    struct ubj_nvm_shadow *shadow; /* recording, or NULL */
    struct ubj_nvm_model *model;   /* cost model (owned), or NULL */
};

/* region.c */
uint32_t nvm_header_crc(const struct nvm_header *h);

/* shadow.c: called by region.c and persist.c */
void nvm_shadow_attach(struct ubj_nvm *r);        /* if one is installed */
void nvm_shadow_detach(struct ubj_nvm *r);
void nvm_shadow_flush(struct ubj_nvm_shadow *s, const uint8_t *base,
                      uint64_t off, uint64_t len);
void nvm_shadow_drain(struct ubj_nvm_shadow *s, const uint8_t *base);

/* nvm_off -- byte offset of p in r's mapping (p inside it). */
static inline uint64_t nvm_off(const struct ubj_nvm *r, const void *p)
{
    return (uint64_t)((const uint8_t *)p - r->base);
}

#endif /* UBJ_NVM_INT_H */
