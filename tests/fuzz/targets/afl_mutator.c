/*
 * targets/afl_mutator.c -- the structure-aware mutator as an AFL++ custom
 * mutator library (AFL_CUSTOM_MUTATOR_LIBRARY=libubjfs_afl_mutator.so;
 * docs/GUARANTEES.md, "Fuzzing"): afl_custom_fuzz runs fz_mutate on a copy.
 */
#include "fz.h"

#include <stdlib.h>
#include <string.h>

struct afl_state {
    unsigned seed;
    uint8_t *buf;
    size_t cap;
};

void *afl_custom_init(void *afl, unsigned int seed);
size_t afl_custom_fuzz(void *data, uint8_t *in, size_t in_size, uint8_t **out,
                       uint8_t *add, size_t add_size, size_t max_size);
void afl_custom_deinit(void *data);

void *afl_custom_init(void *afl, unsigned int seed)
{
    (void)afl;
    struct afl_state *s = calloc(1, sizeof *s);
    if (s != NULL)
        s->seed = seed;
    return s;
}

size_t afl_custom_fuzz(void *data, uint8_t *in, size_t in_size, uint8_t **out,
                       uint8_t *add, size_t add_size, size_t max_size)
{
    struct afl_state *s = data;
    (void)add;
    (void)add_size;
    size_t cap = max_size > in_size ? max_size : in_size;
    if (s->cap < cap) {
        uint8_t *nb = realloc(s->buf, cap);
        if (nb == NULL) {
            *out = in;
            return in_size;
        }
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf, in, in_size);
    *out = s->buf;
    return fz_mutate(s->buf, in_size, max_size, s->seed++ * 2654435761u);
}

void afl_custom_deinit(void *data)
{
    struct afl_state *s = data;
    free(s->buf);
    free(s);
}
