/*
 * util.h -- small services every layer may use: crc32c, the thread-local
 * error message, the directory name hash, the clock.  No layer state.
 */
#ifndef UBJ_UTIL_H
#define UBJ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ubj_crc32c -- CRC-32C of data[0..len) continuing from `seed` (ISA-L). */
uint32_t ubj_crc32c(uint32_t seed, const void *data, size_t len);

/* ubj_set_error -- set this thread's one-line message (printf format) for
 * ubj_errormsg(); returns rc unchanged so callers can `return` it. */
int ubj_set_error(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ubj_clear_error -- empty this thread's message. */
void ubj_clear_error(void);

/* ubj_name_hash -- 64-bit seeded hash of a directory entry name (part of
 * the on-disk format: docs/FORMAT.md). */
uint64_t ubj_name_hash(uint32_t seed, const char *name, size_t len);

/* ubj_now -- the current time (CLOCK_REALTIME, ns). */
void ubj_now(struct timespec *ts);

#endif /* UBJ_UTIL_H */
