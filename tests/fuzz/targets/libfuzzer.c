/*
 * targets/libfuzzer.c -- a libFuzzer (or AFL++ -fsanitize=fuzzer) entry
 * point for one of the targets of lib/fz_target.c, chosen at build time
 * (FZ_TARGET = mount, recover, fsck), with the structure-aware mutator of
 * lib/fz_mutate.c as libFuzzer's custom mutator; one mutation in four is
 * libFuzzer's own byte-level one.
 */
#include "fz.h"

#include <stddef.h>
#include <stdint.h>

#define FZ_CAT2(a, b) a##b
#define FZ_CAT(a, b) FZ_CAT2(a, b)

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return FZ_CAT(fz_target_, FZ_TARGET)(data, size);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
    struct fz_case c;
    if (fz_decode(data, size, &c) < 0 || seed % 4 == 0) {
        if (c.img != NULL)
            fz_case_free(&c);
        return LLVMFuzzerMutate(data, size, max);
    }
    fz_case_free(&c);
    return fz_mutate(data, size, max, seed);
}
