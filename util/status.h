/* util/status.h — the one error vocabulary shared by every fp8plan module.
 *
 * Library code never prints and never exits: it returns a Status and, where the
 * caller passed one, fills an Err with a message that names the file, row,
 * column, flag or value at fault. Only a command's entry point turns a Status
 * into an exit code (status_exit_code), and only main() returns it. */
#ifndef FP8PLAN_UTIL_STATUS_H
#define FP8PLAN_UTIL_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ST_OK = 0,
    ST_USAGE,       /* bad flag, bad option value, bad shape: exit 64 */
    ST_DATA,        /* bad input data (CSV cell, stdin line, checkpoint): exit 65 */
    ST_NOINPUT,     /* an input file cannot be opened: exit 66 */
    ST_UNAVAILABLE, /* a needed service is missing (no GPU, backend not built): exit 69 */
    ST_SOFTWARE,    /* internal error, a bug: exit 70 */
    ST_NOMEM,       /* allocation failed: exit 71 */
    ST_CANTCREAT,   /* an output file cannot be created: exit 73 */
    ST_IO,          /* read or write failed mid-way: exit 74 */
    ST_OVERFLOW,    /* a byte count or size passed 2^64 (treated as bad data): exit 65 */
    ST_TOLERANCE,   /* a measured term is outside its tolerance: exit 1 */
    ST_COUNT_
} Status;

/* A status plus a human-readable message, filled by the code that failed. */
typedef struct {
    Status st;
    char msg[512];
} Err;

/* Short name of a status ("usage error", "bad data", ...). Never NULL. */
const char *status_str(Status st);

/* The process exit code for a status (sysexits.h numbering; ST_TOLERANCE = 1). */
int status_exit_code(Status st);

/* Set e (when non-NULL) to st with a printf-style message; returns st so a
 * caller can write `return err_set(e, ST_DATA, "...")`. */
Status err_set(Err *e, Status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
Status err_vset(Err *e, Status st, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* Prepend context to an existing message: "ctx: old message". Keeps e->st. */
void err_prefix(Err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clear e to ST_OK with an empty message. */
void err_clear(Err *e);

#ifdef __cplusplus
}
#endif
#endif
