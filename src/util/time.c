/*
 * time.c -- the file system's clock: CLOCK_REALTIME at nanosecond
 * resolution, as Linux's current_time() for inode timestamps.
 */
#include "util/util.h"

/* ubj_now -- the current time. */
void ubj_now(struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
}
