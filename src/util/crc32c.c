/*
 * crc32c.c -- CRC-32C (Castagnoli) for metadata checksums, from ISA-L's
 * crc32_iscsi (hardware-accelerated where the CPU has SSE4.2/PCLMUL).
 * Owns nothing else.  The seed convention is ext4's: a running value is
 * passed back in as the seed of the next call.
 */
#include <isa-l/crc.h>
#include "util/util.h"

/* ubj_crc32c -- crc32c of data[0..len) continuing from `seed`. */
uint32_t ubj_crc32c(uint32_t seed, const void *data, size_t len)
{
    return crc32_iscsi((unsigned char *)(uintptr_t)data, (int)len, seed);
}
