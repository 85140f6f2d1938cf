/* util/num.h — strict number parsing for flags, CSV cells and stdin lines.
 *
 * strtoull/strtod are lenient: "-1" wraps to 2^64-1, "42abc" parses as 42,
 * "" as 0, "1e400" as inf. These wrappers reject all of that and say why in
 * e->msg (the message quotes the text; the caller adds the flag, file, row or
 * line). No locale: the decimal point is always '.'. */
#ifndef FP8PLAN_UTIL_NUM_H
#define FP8PLAN_UTIL_NUM_H

#include <stdint.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    NUM_FINITE_ONLY = 0,
    NUM_ALLOW_NONFINITE = 1 << 0, /* accept nan, inf, -inf (e.g. values fed to `cast`) */
};

/* Decimal digits only, 0 ≤ value < 2^64. */
Status num_parse_u64(const char *s, uint64_t *out, Err *e);

/* A non-negative whole number written as an integer or in decimal/scientific
 * notation ("175e9", "1.5e9", "2800000000000"); must be exactly integral and
 * below 2^64. */
Status num_parse_count(const char *s, uint64_t *out, Err *e);

/* Optional sign then decimal digits, within int64_t. */
Status num_parse_i64(const char *s, int64_t *out, Err *e);

/* An int in [lo, hi]. */
Status num_parse_int_range(const char *s, long lo, long hi, int *out, Err *e);

/* A decimal or scientific number; hex floats are rejected. Finite unless
 * flags has NUM_ALLOW_NONFINITE. Overflow past DBL_MAX is an error; underflow
 * gives the correctly rounded (possibly zero or subnormal) value. */
Status num_parse_double(const char *s, int flags, double *out, Err *e);

/* "RxC" with R, C positive integers, e.g. "4096x4096". */
Status num_parse_shape(const char *s, uint64_t *rows, uint64_t *cols, Err *e);

/* Strip leading and trailing ASCII whitespace in place; returns s. */
char *num_trim(char *s);

/* Overflow-checked uint64 arithmetic: return 0 on success, 1 on overflow. */
static inline int u64_mul(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_mul_overflow(a, b, out); }
static inline int u64_add(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_add_overflow(a, b, out); }

/* Format n with thousands separators ("16,777,216") into buf; returns buf. */
char *num_fmt_grouped(uint64_t n, char *buf, int size);

#ifdef __cplusplus
}
#endif
#endif
