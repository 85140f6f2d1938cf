/* catalog/catalog_cells.c — strict cell readers shared by the catalog parsers (see catalog_cells.h). */
#include "catalog/catalog_cells.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/num.h"

Status cell_bad(Cur *c, const char *col, const char *fmt, ...)
{
    char why[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return err_set(c->e, ST_DATA, "%s: row %d, column %s: %.420s", c->t->fname, csv_table_rowno(c->r), col, why);
}

const char *cell_text(Cur *c, const char *col) { return csv_table_cell(c->t, c->r, col); }

static Status num_fail(Cur *c, const char *col, Status st, const Err *sub)
{
    return err_set(c->e, st == ST_OVERFLOW ? ST_OVERFLOW : ST_DATA, "%s: row %d, column %s: %s", c->t->fname,
                   csv_table_rowno(c->r), col, sub->msg);
}

Status cell_u32(Cur *c, const char *col, uint32_t lo, uint32_t hi, uint32_t *out)
{
    const char *s = cell_text(c, col);
    uint64_t v;
    Err sub;
    Status st = num_parse_u64(s, &v, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (v < lo || v > hi) return cell_bad(c, col, "'%s' is out of range [%u, %u]", s, lo, hi);
    *out = (uint32_t)v;
    return ST_OK;
}

Status cell_u32_or0(Cur *c, const char *col, uint32_t hi, uint32_t *out)
{
    if (!*cell_text(c, col)) return *out = 0, ST_OK;
    return cell_u32(c, col, 0, hi, out);
}

Status cell_yesno_or_no(Cur *c, const char *col, int *out)
{
    if (!*cell_text(c, col)) return *out = 0, ST_OK;
    return cell_yesno(c, col, out);
}

Status cell_count(Cur *c, const char *col, uint64_t *out)
{
    Err sub;
    Status st = num_parse_count(cell_text(c, col), out, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (*out == 0) return cell_bad(c, col, "'%s' must be positive", cell_text(c, col));
    return ST_OK;
}

Status cell_rate(Cur *c, const char *col, int allow_zero, double *out)
{
    Err sub;
    Status st = num_parse_double(cell_text(c, col), NUM_FINITE_ONLY, out, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (*out < 0 || (!allow_zero && *out == 0))
        return cell_bad(c, col, allow_zero ? "'%s' must not be negative" : "'%s' must be positive", cell_text(c, col));
    return ST_OK;
}

Status cell_range(Cur *c, const char *col, double lo, double hi, double *out)
{
    Err sub;
    Status st = num_parse_double(cell_text(c, col), NUM_FINITE_ONLY, out, &sub);
    if (st) return num_fail(c, col, st, &sub);
    if (*out < lo || *out > hi) return cell_bad(c, col, "'%s' is out of range [%g, %g]", cell_text(c, col), lo, hi);
    return ST_OK;
}

Status cell_yesno(Cur *c, const char *col, int *out)
{
    const char *s = cell_text(c, col);
    if (!strcasecmp(s, "yes")) return *out = 1, ST_OK;
    if (!strcasecmp(s, "no")) return *out = 0, ST_OK;
    return cell_bad(c, col, "'%s' is not yes or no", s);
}

Status cell_sm(Cur *c, const char *col, uint32_t *out)
{
    const char *s = cell_text(c, col);
    unsigned maj, min;
    char tail;
    if (sscanf(s, "%u.%1u%c", &maj, &min, &tail) != 2 || maj > 99 || !strchr(s, '.') || s[0] < '0' || s[0] > '9')
        return cell_bad(c, col, "'%s' is not a compute capability like 9.0", s);
    *out = maj * 10 + min;
    return ST_OK;
}

Status cell_textcopy(Cur *c, const char *col, char *dst, size_t size, int name_like)
{
    const char *s = cell_text(c, col);
    size_t n = strlen(s);
    if (!n) return cell_bad(c, col, "empty value");
    if (n >= size) return cell_bad(c, col, "'%.40s...' is longer than %zu characters", s, size - 1);
    if (name_like)
        for (const char *p = s; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  strchr("._-", *p)))
                return cell_bad(c, col, "'%.60s' may only hold letters, digits, '.', '_' and '-'", s);
    memcpy(dst, s, n + 1);
    return ST_OK;
}

/* ---- the readers of X-macro column lists (see catalog_cells.h) ---- */

Status cell_col_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)lo, (void)hi;
    return cell_textcopy(c, col, f, size, 1);
}
Status cell_col_OPT_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    return *cell_text(c, col) ? cell_col_NAME(c, col, f, size, lo, hi) : ST_OK; /* blank: none */
}
Status cell_col_TEXT(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)lo, (void)hi;
    return cell_textcopy(c, col, f, size, 0);
}
Status cell_col_YESNO(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return cell_yesno(c, col, f);
}
Status cell_col_YESNO_OR_NO(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo, (void)hi;
    return cell_yesno_or_no(c, col, f);
}
Status cell_col_U32_OR0(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size, (void)lo;
    return cell_u32_or0(c, col, (uint32_t)hi, f);
}
Status cell_col_U32(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size;
    return cell_u32(c, col, (uint32_t)lo, (uint32_t)hi, f);
}
Status cell_col_RANGE(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    (void)size;
    return cell_range(c, col, lo, hi, f);
}
/* A cell that may be blank (0: not modelled), else a number in [lo, hi]. */
Status cell_col_OPT_RANGE(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    *(double *)f = 0;
    return *cell_text(c, col) ? cell_col_RANGE(c, col, f, size, lo, hi) : ST_OK;
}
/* Microseconds in [lo, hi] into seconds. */
Status cell_col_US(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    double us;
    Status st = cell_col_RANGE(c, col, &us, size, lo, hi);
    *(double *)f = us * 1e-6;
    return st;
}
Status cell_col_OPT_US(Cur *c, const char *col, void *f, size_t size, double lo, double hi)
{
    *(double *)f = 0;
    return *cell_text(c, col) ? cell_col_US(c, col, f, size, lo, hi) : ST_OK;
}

static Status check_unique(const CsvTable *t, const char *key, int max_rows, Err *e)
{
    int col = key ? csv_table_col(t, key) : -1;
    for (int i = 0; col >= 0 && i < t->nrows; i++)
        for (int j = 0; j < i; j++)
            if (!strcasecmp(t->cells[(long)i * t->ncols + col], t->cells[(long)j * t->ncols + col]))
                return err_set(e, ST_DATA, "%s: row %d, column %s: '%s' repeats row %d", t->fname, csv_table_rowno(i),
                               key, t->cells[(long)i * t->ncols + col], csv_table_rowno(j));
    if (t->nrows > max_rows)
        return err_set(e, ST_DATA, "%s: %d rows; at most %d are supported", t->fname, t->nrows, max_rows);
    return ST_OK;
}

Status cell_parse_rows(const char *text, size_t len, const char *fname, const char *columns, const char *key,
                       Status (*fn)(Cur *, void *), const void *ctx, void *rows, size_t size, int max_rows, int *n,
                       CsvTable *t, Err *e)
{
    /* the limit enforced while reading; a row may leave out the header's last, optional columns */
    Status st = csv_table_parse_cols(text, len, fname, max_rows, columns, t, e);
    if (!st) st = csv_table_expect(t, columns, e);
    if (!st) st = check_unique(t, key, max_rows, e);
    for (int r = 0; !st && r < t->nrows; r++) {
        Cur cur = {t, r, e, ctx};
        st = fn(&cur, (char *)rows + (size_t)r * size);
    }
    *n = st ? 0 : t->nrows;
    return st;
}

Status cell_parse_all(const char *text, size_t len, const char *fname, const char *columns, const char *key,
                      Status (*fn)(Cur *, void *), const void *ctx, void *rows, size_t size, int max_rows, int *n,
                      Err *e)
{
    CsvTable t;
    Status st = cell_parse_rows(text, len, fname, columns, key, fn, ctx, rows, size, max_rows, n, &t, e);
    csv_table_free(&t);
    return st;
}
