/* util/num.c — strict number parsing (see num.h for the rules). */
#include "util/num.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int all_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

Status num_parse_u64(const char *s, uint64_t *out, Err *e)
{
    if (!s || !*s) return err_set(e, ST_USAGE, "empty value where a whole number is needed");
    if (!all_digits(s)) {
        if (s[0] == '-') return err_set(e, ST_USAGE, "'%s' is negative; a non-negative whole number is needed", s);
        return err_set(e, ST_USAGE, "'%s' is not a whole number", s);
    }
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE) return err_set(e, ST_OVERFLOW, "'%s' does not fit in 64 bits", s);
    *out = (uint64_t)v;
    return ST_OK;
}

/* A strict decimal/scientific float syntax: [sign] digits [. digits] [e [sign] digits].
 * Rejects hex floats, "nan", "inf", leading/trailing junk and whitespace. */
static int is_decimal_syntax(const char *s)
{
    const char *p = s;
    int digits = 0;
    if (*p == '+' || *p == '-') p++;
    while (isdigit((unsigned char)*p)) p++, digits++;
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) p++, digits++;
    }
    if (!digits) return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return 0;
        while (isdigit((unsigned char)*p)) p++;
    }
    return *p == '\0';
}

static int is_nonfinite_word(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    return !strcasecmp(p, "nan") || !strcasecmp(p, "inf") || !strcasecmp(p, "infinity");
}

Status num_parse_double(const char *s, int flags, double *out, Err *e)
{
    if (!s || !*s) return err_set(e, ST_USAGE, "empty value where a number is needed");
    if (is_nonfinite_word(s)) {
        if (!(flags & NUM_ALLOW_NONFINITE)) return err_set(e, ST_USAGE, "'%s' is not a finite number", s);
        *out = strtod(s, NULL);
        return ST_OK;
    }
    if (!is_decimal_syntax(s)) return err_set(e, ST_USAGE, "'%s' is not a number", s);
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE && isinf(v)) {
        if (!(flags & NUM_ALLOW_NONFINITE)) return err_set(e, ST_USAGE, "'%s' is out of range (beyond %g)", s, DBL_MAX);
    }
    *out = v;
    return ST_OK;
}

Status num_parse_count(const char *s, uint64_t *out, Err *e)
{
    if (s && all_digits(s)) return num_parse_u64(s, out, e);
    double d;
    Status st = num_parse_double(s, NUM_FINITE_ONLY, &d, e);
    if (st) return st;
    if (d < 0) return err_set(e, ST_USAGE, "'%s' is negative; a non-negative count is needed", s);
    if (d != floor(d)) return err_set(e, ST_USAGE, "'%s' is not a whole number", s);
    if (d >= 18446744073709551616.0) return err_set(e, ST_OVERFLOW, "'%s' does not fit in 64 bits", s);
    *out = (uint64_t)d;
    return ST_OK;
}

Status num_parse_i64(const char *s, int64_t *out, Err *e)
{
    if (!s || !*s) return err_set(e, ST_USAGE, "empty value where a whole number is needed");
    const char *p = s + (s[0] == '-' || s[0] == '+');
    if (!all_digits(p)) return err_set(e, ST_USAGE, "'%s' is not a whole number", s);
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE) return err_set(e, ST_OVERFLOW, "'%s' does not fit in 64 bits", s);
    *out = (int64_t)v;
    return ST_OK;
}

Status num_parse_int_range(const char *s, long lo, long hi, int *out, Err *e)
{
    int64_t v;
    Status st = num_parse_i64(s, &v, e);
    if (st == ST_OVERFLOW) return err_set(e, ST_USAGE, "'%s' is out of range [%ld, %ld]", s, lo, hi);
    if (st) return st;
    if (v < lo || v > hi) return err_set(e, ST_USAGE, "'%s' is out of range [%ld, %ld]", s, lo, hi);
    *out = (int)v;
    return ST_OK;
}

Status num_parse_shape(const char *s, uint64_t *rows, uint64_t *cols, Err *e)
{
    if (!s || !*s) return err_set(e, ST_USAGE, "empty shape; expected RxC, e.g. 4096x4096");
    const char *x = strpbrk(s, "xX");
    if (!x || x == s || !x[1] || strpbrk(x + 1, "xX"))
        return err_set(e, ST_USAGE, "'%s' is not a shape; expected RxC, e.g. 4096x4096", s);
    char head[64];
    size_t n = (size_t)(x - s);
    if (n >= sizeof head) return err_set(e, ST_USAGE, "'%s' is not a shape; expected RxC", s);
    memcpy(head, s, n);
    head[n] = '\0';
    Err sub;
    uint64_t r, c;
    if (num_parse_u64(head, &r, &sub) || num_parse_u64(x + 1, &c, &sub))
        return err_set(e, ST_USAGE, "'%s' is not a shape; expected RxC with positive whole numbers", s);
    if (r == 0 || c == 0) return err_set(e, ST_USAGE, "'%s' has a zero dimension", s);
    uint64_t prod;
    if (u64_mul(r, c, &prod)) return err_set(e, ST_OVERFLOW, "'%s' has more than 2^64 elements", s);
    *rows = r;
    *cols = c;
    return ST_OK;
}

char *num_trim(char *s)
{
    char *p = s;
    while (*p && isspace((unsigned char)*p)) p++;
    size_t n = strlen(p);
    while (n && isspace((unsigned char)p[n - 1])) n--;
    memmove(s, p, n);
    s[n] = '\0';
    return s;
}

char *num_fmt_grouped(uint64_t n, char *buf, int size)
{
    char digits[32];
    int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)n);
    int groups = (nd - 1) / 3, len = nd + groups;
    if (len + 1 > size) {
        snprintf(buf, (size_t)size, "%s", digits);
        return buf;
    }
    buf[len] = '\0';
    for (int i = nd - 1, o = len - 1, k = 0; i >= 0; i--, k++) {
        if (k && k % 3 == 0) buf[o--] = ',';
        buf[o--] = digits[i];
    }
    return buf;
}
