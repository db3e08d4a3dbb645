/*
 * errormsg.c -- the thread-local last-error message (PMDK's
 * pmem_errormsg() convention): a failing function sets a one-line message
 * and returns a negative errno; ubj_errormsg() reads it.
 */
#include <stdarg.h>
#include <stdio.h>
#include "ubjfs/ubjfs.h"
#include "util/util.h"

static _Thread_local char ubj_msg[256];

/* ubj_errormsg -- the last error message set on this thread. */
const char *ubj_errormsg(void)
{
    return ubj_msg;
}

/* ubj_set_error -- format this thread's message; returns rc unchanged. */
int ubj_set_error(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ubj_msg, sizeof ubj_msg, fmt, ap);
    va_end(ap);
    return rc;
}

/* ubj_clear_error -- forget the message. */
void ubj_clear_error(void)
{
    ubj_msg[0] = '\0';
}
