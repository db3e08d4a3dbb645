/*
 * spec.c -- open a device stack from a spec string (ubj_bdev_open_spec,
 * include/ubjfs/model.h):  layer ( "@" layer )*, top first, where a
 * layer is "ram", "file:PATH" (PATH runs to the end of the string),
 * "fault", "queue:SCHED[,key=value...]" (a request queue,
 * include/ubjfs/queue.h), or "KIND:PROFILE[,key=value...]" with KIND
 * hdd, ssd or nand.
 *
 * The stack is built bottom up: the leaf (the last layer if it is ram or
 * file:, else the caller's `lower`, else a RAM device), then each wrapper
 * over the previous device.  Every model in the stack shares one clock:
 * opts->clock, or a new clock whose kind is opts->clock_kind unless a
 * model layer says clock=real or clock=virtual.
 *
 * Invariants: on failure nothing stays open and the caller's `lower` is
 * neither destroyed nor left wrapped (the wrapper directly above it is
 * detached before the partial stack is destroyed); the stack holds the
 * only references to a clock this function created.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dev/model_int.h"
#include "ubjfs/queue.h"
#include "util/util.h"

#define SPEC_MAX_LAYERS 16
#define SPEC_RAM_BLOCKS 16384u    /* 64 MiB */

struct spec_stack {
    char *layer[SPEC_MAX_LAYERS];   /* pointers into a private copy */
    size_t n;
};

/* spec_split -- cut the copy at each '@' (a "file:" layer ends the list). */
static int spec_split(char *s, struct spec_stack *st)
{
    st->n = 0;
    while (s != NULL) {
        if (st->n == SPEC_MAX_LAYERS)
            return ubj_set_error(-EINVAL, "device spec: more than %d layers",
                                 SPEC_MAX_LAYERS);
        st->layer[st->n++] = s;
        if (strncmp(s, "file:", 5) == 0)
            break;
        char *at = strchr(s, '@');
        if (at != NULL)
            *at++ = '\0';
        s = at;
    }
    for (size_t i = 0; i < st->n; i++)
        if (st->layer[i][0] == '\0')
            return ubj_set_error(-EINVAL, "device spec: empty layer");
    return 0;
}

/* spec_is_leaf -- true for "ram" and "file:..." layers. */
static bool spec_is_leaf(const char *l)
{
    return strcmp(l, "ram") == 0 || strncmp(l, "file:", 5) == 0;
}

/* spec_is_queue -- true for a "queue:SCHED[,...]" layer. */
static bool spec_is_queue(const char *l)
{
    return strncmp(l, "queue:", 6) == 0;
}

/* spec_clock_opt -- the clock=... option of a model layer: 1 real,
 * 0 virtual, -1 absent, -EINVAL for another value. */
static int spec_clock_opt(const char *l)
{
    const char *c = strstr(l, ",clock=");
    if (c == NULL)
        return -1;
    c += 7;
    size_t n = strcspn(c, ",");
    if (n == 4 && strncmp(c, "real", 4) == 0)
        return 1;
    if (n == 7 && strncmp(c, "virtual", 7) == 0)
        return 0;
    return ubj_set_error(-EINVAL, "device spec: clock must be real or virtual "
                         "in \"%s\"", l);
}

/* spec_clock -- the clock every model of the stack will share. */
static int spec_clock(const struct spec_stack *st, const struct ubj_spec_opts *o,
                      struct ubj_clock **out)
{
    *out = NULL;
    enum ubj_clock_kind kind = o->clock_kind;
    bool any_model = false;
    for (size_t i = 0; i < st->n; i++) {
        if (spec_is_leaf(st->layer[i]) || strcmp(st->layer[i], "fault") == 0 ||
            spec_is_queue(st->layer[i]))
            continue;
        any_model = true;
        int c = spec_clock_opt(st->layer[i]);
        if (c < -1)
            return c;
        if (c >= 0)
            kind = c ? UBJ_CLOCK_REAL : UBJ_CLOCK_VIRTUAL;
    }
    if (!any_model)
        return 0;
    if (o->clock != NULL) {
        *out = ubj_clock_get(o->clock);
        return 0;
    }
    return ubj_clock_create(kind, out);
}

/* spec_leaf -- open a "ram" or "file:PATH" leaf. */
static int spec_leaf(const char *l, const struct ubj_spec_opts *o,
                     struct ubj_bdev **out)
{
    if (strcmp(l, "ram") == 0)
        return ubj_bdev_ram_create(o->nblocks ? o->nblocks : SPEC_RAM_BLOCKS, out);
    const char *path = l + 5;
    if (*path == '\0')
        return ubj_set_error(-EINVAL, "device spec: file: needs a path");
    unsigned flags = o->file_flags ? o->file_flags : UBJ_BDEV_CREATE;
    return ubj_bdev_file_open(path, flags, o->nblocks * UBJ_BLOCK_SIZE, out);
}

/* spec_queue -- open a "queue:ARGS" layer over dev. */
static int spec_queue(const char *l, struct ubj_bdev *dev, struct ubj_bdev **out)
{
    struct ubj_queue_conf c;
    int rc = ubj_bdev_queue_parse(l + 6, &c);
    return rc < 0 ? rc : ubj_bdev_queue_create(dev, &c, out);
}

/* spec_wrap -- put wrapper layer l over *dev (ownership passes on success). */
static int spec_wrap(const char *l, struct ubj_clock *clock, struct ubj_bdev *dev,
                     struct ubj_bdev **out)
{
    if (strcmp(l, "fault") == 0)
        return ubj_bdev_fault_create(dev, out);
    if (spec_is_queue(l))
        return spec_queue(l, dev, out);
    const char *colon = strchr(l, ':');
    if (colon == NULL || colon == l || colon[1] == '\0')
        return ubj_set_error(-EINVAL, "device spec: \"%s\" is not ram, "
                             "file:PATH, fault, queue:SCHED or KIND:PROFILE", l);
    char kind[16];
    size_t n = (size_t)(colon - l);
    if (n >= sizeof kind)
        return ubj_set_error(-EINVAL, "device spec: unknown kind in \"%s\"", l);
    memcpy(kind, l, n);
    kind[n] = '\0';
    return ubj_model_create(kind, colon + 1, clock, dev, out);
}

/* spec_unwind -- destroy a partial stack without the caller's lower. */
static void spec_unwind(struct ubj_bdev *top, struct ubj_bdev *keep)
{
    if (top == NULL || top == keep)
        return;
    for (struct ubj_bdev *d = top; d != NULL; d = d->lower)
        if (d->lower == keep && keep != NULL) {
            d->lower = NULL;
            break;
        }
    ubj_bdev_destroy(top);
}

/* spec_build -- the leaf, then every wrapper from the bottom up. */
static int spec_build(const struct spec_stack *st, struct ubj_bdev *lower,
                      const struct ubj_spec_opts *o, struct ubj_clock *clock,
                      struct ubj_bdev **out)
{
    size_t nwrap = st->n;
    struct ubj_bdev *dev = lower;
    int rc = 0;
    if (spec_is_leaf(st->layer[st->n - 1])) {
        if (lower != NULL)
            return ubj_set_error(-EINVAL, "device spec: \"%s\" names a leaf but "
                                 "a lower device was given", st->layer[st->n - 1]);
        nwrap--;
        rc = spec_leaf(st->layer[nwrap], o, &dev);
    } else if (dev == NULL) {
        rc = ubj_bdev_ram_create(o->nblocks ? o->nblocks : SPEC_RAM_BLOCKS, &dev);
    }
    for (size_t i = nwrap; rc == 0 && i-- > 0;) {
        if (spec_is_leaf(st->layer[i])) {
            rc = ubj_set_error(-EINVAL, "device spec: leaf \"%s\" must be the "
                               "last layer", st->layer[i]);
            break;
        }
        struct ubj_bdev *up;
        rc = spec_wrap(st->layer[i], clock, dev, &up);
        if (rc == 0)
            dev = up;
    }
    if (rc < 0) {
        spec_unwind(dev, lower);
        return rc;
    }
    *out = dev;
    return 0;
}

/* ubj_bdev_open_spec -- open the stack described by spec. */
int ubj_bdev_open_spec(const char *spec, struct ubj_bdev *lower,
                       const struct ubj_spec_opts *opts, struct ubj_bdev **out)
{
    if (out == NULL || spec == NULL)
        return ubj_set_error(-EINVAL, "device spec: NULL argument");
    *out = NULL;
    struct ubj_spec_opts o = opts != NULL ? *opts : (struct ubj_spec_opts){0};
    char *copy = strdup(spec);
    if (copy == NULL)
        return ubj_set_error(-ENOMEM, "device spec: out of memory");
    struct spec_stack st;
    struct ubj_clock *clock = NULL;
    int rc = spec_split(copy, &st);
    if (rc == 0)
        rc = spec_clock(&st, &o, &clock);
    if (rc == 0)
        rc = spec_build(&st, lower, &o, clock, out);
    ubj_clock_put(clock);
    free(copy);
    return rc;
}
