/* util/status.c — Status names, exit codes and Err messages. */
#include "util/status.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int exit_code;
} status_table[] = {
    [ST_OK] = {"ok", 0},
    [ST_USAGE] = {"usage error", 64},
    [ST_DATA] = {"bad data", 65},
    [ST_NOINPUT] = {"cannot open input", 66},
    [ST_UNAVAILABLE] = {"unavailable", 69},
    [ST_SOFTWARE] = {"internal error", 70},
    [ST_NOMEM] = {"out of memory", 71},
    [ST_CANTCREAT] = {"cannot create output", 73},
    [ST_IO] = {"i/o error", 74},
    [ST_OVERFLOW] = {"overflow", 65},
    [ST_TOLERANCE] = {"outside tolerance", 1},
};
_Static_assert(sizeof status_table / sizeof status_table[0] == ST_COUNT_, "status_table must name every Status");

const char *status_str(Status st)
{
    if ((unsigned)st >= ST_COUNT_) return "unknown status";
    return status_table[st].name;
}

int status_exit_code(Status st)
{
    if ((unsigned)st >= ST_COUNT_) return 70;
    return status_table[st].exit_code;
}

Status err_vset(Err *e, Status st, const char *fmt, va_list ap)
{
    if (e) {
        e->st = st;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    }
    return st;
}

Status err_set(Err *e, Status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(e, st, fmt, ap);
    va_end(ap);
    return st;
}

void err_prefix(Err *e, const char *fmt, ...)
{
    if (!e) return;
    char old[sizeof e->msg];
    memcpy(old, e->msg, sizeof old);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    /* append ": old", truncating the old message if the two do not fit */
    size_t n = strlen(e->msg);
    if (n + 2 < sizeof e->msg) {
        memcpy(e->msg + n, ": ", 2);
        size_t room = sizeof e->msg - n - 3, len = strlen(old);
        if (len > room) len = room;
        memcpy(e->msg + n + 2, old, len);
        e->msg[n + 2 + len] = '\0';
    }
}

void err_clear(Err *e)
{
    if (!e) return;
    e->st = ST_OK;
    e->msg[0] = '\0';
}
