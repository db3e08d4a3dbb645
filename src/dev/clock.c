/*
 * clock.c -- the clocks the device models run on (ubj_clock_*; see
 * include/ubjfs/model.h).
 *
 * VIRTUAL: `now` is a simulated time in ns, starting at 0, moved forward
 * only by ubj_clock_wait_until (to the later of now and the target) and
 * ubj_clock_advance.  Several threads may share one clock: `now` is an
 * atomic that only grows (compare-and-swap maximum), so a waiter never
 * moves time backwards.  Nothing sleeps.
 *
 * REAL: `now` is CLOCK_MONOTONIC minus the creation instant `t0`.  Waiting
 * sleeps with clock_nanosleep(TIMER_ABSTIME) until CLOCK_SPIN_NS before
 * the target (the scheduler wakes a sleeper late by tens of microseconds),
 * then spins on clock_gettime until the target.
 *
 * Invariants: kind and t0 never change after creation; refs counts the
 * owners (atomic); the clock is freed when it drops to 0.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include "ubjfs/model.h"
#include "util/util.h"

#define CLOCK_SPIN_NS 50000ull   /* spin for the last 50 us of a real wait */

struct ubj_clock {
    enum ubj_clock_kind kind;
    uint64_t t0;            /* REAL: CLOCK_MONOTONIC at creation, ns */
    uint64_t vnow;          /* VIRTUAL: [atomic] current time, ns */
    unsigned refs;          /* [atomic] */
};

/* clock_mono_ns -- CLOCK_MONOTONIC in ns. */
static uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* clock_sleep_abs -- sleep until CLOCK_MONOTONIC reads `mono_ns`. */
static void clock_sleep_abs(uint64_t mono_ns)
{
    struct timespec ts = {
        .tv_sec = (time_t)(mono_ns / 1000000000ull),
        .tv_nsec = (long)(mono_ns % 1000000000ull),
    };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* clock_vmax -- raise the virtual time to at least t. */
static void clock_vmax(struct ubj_clock *c, uint64_t t)
{
    uint64_t cur = __atomic_load_n(&c->vnow, __ATOMIC_ACQUIRE);
    while (cur < t && !__atomic_compare_exchange_n(&c->vnow, &cur, t, false,
                                                   __ATOMIC_ACQ_REL,
                                                   __ATOMIC_ACQUIRE))
        ;
}

/* ubj_clock_create -- a new clock reading 0. */
int ubj_clock_create(enum ubj_clock_kind kind, struct ubj_clock **out)
{
    if (out == NULL)
        return ubj_set_error(-EINVAL, "clock: NULL output pointer");
    *out = NULL;
    if (kind != UBJ_CLOCK_VIRTUAL && kind != UBJ_CLOCK_REAL)
        return ubj_set_error(-EINVAL, "clock: unknown kind %d", (int)kind);
    struct ubj_clock *c = calloc(1, sizeof *c);
    if (c == NULL)
        return ubj_set_error(-ENOMEM, "clock: out of memory");
    c->kind = kind;
    c->t0 = kind == UBJ_CLOCK_REAL ? clock_mono_ns() : 0;
    c->refs = 1;
    *out = c;
    return 0;
}

/* ubj_clock_get -- one more reference. */
struct ubj_clock *ubj_clock_get(struct ubj_clock *c)
{
    if (c != NULL)
        __atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
    return c;
}

/* ubj_clock_put -- drop a reference; free on the last. */
void ubj_clock_put(struct ubj_clock *c)
{
    if (c != NULL && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
        free(c);
}

/* ubj_clock_kind -- the clock's kind. */
enum ubj_clock_kind ubj_clock_kind(const struct ubj_clock *c)
{
    return c->kind;
}

/* ubj_clock_now -- current time in ns since creation. */
uint64_t ubj_clock_now(struct ubj_clock *c)
{
    if (c->kind == UBJ_CLOCK_VIRTUAL)
        return __atomic_load_n(&c->vnow, __ATOMIC_ACQUIRE);
    return clock_mono_ns() - c->t0;
}

/* ubj_clock_wait_until -- block until the clock reads t_ns. */
void ubj_clock_wait_until(struct ubj_clock *c, uint64_t t_ns)
{
    if (c->kind == UBJ_CLOCK_VIRTUAL) {
        clock_vmax(c, t_ns);
        return;
    }
    uint64_t target = c->t0 + t_ns;
    uint64_t now = clock_mono_ns();
    if (now >= target)
        return;
    if (target - now > CLOCK_SPIN_NS)
        clock_sleep_abs(target - CLOCK_SPIN_NS);
    while (clock_mono_ns() < target)
        ;
}

/* ubj_clock_advance -- let ns pass for the caller. */
void ubj_clock_advance(struct ubj_clock *c, uint64_t ns)
{
    if (c->kind == UBJ_CLOCK_VIRTUAL) {
        __atomic_add_fetch(&c->vnow, ns, __ATOMIC_ACQ_REL);
        return;
    }
    ubj_clock_wait_until(c, ubj_clock_now(c) + ns);
}
