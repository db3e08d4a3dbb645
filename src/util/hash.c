/*
 * hash.c -- the directory name hash: 64-bit FNV-1a over the name, seeded
 * from the superblock, finished with the splitmix64 mixer so that the high
 * bits (the B+tree key) are well spread.  Part of the on-disk format:
 * changing it changes where names live (docs/FORMAT.md).
 */
#include "util/util.h"

/* ubj_name_hash -- 64-bit hash of name[0..len) under `seed`. */
uint64_t ubj_name_hash(uint32_t seed, const char *name, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)seed * 0x9e3779b97f4a7c15ULL);
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)name[i];
        h *= 0x100000001b3ULL;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}
