/* catalog/catalog_cells.h — the strict cell readers of the catalog-style CSV
 * files (models, GPUs, recipes, stacks, measured runs). Every error names file,
 * row and column and quotes the value. */
#ifndef FP8PLAN_CATALOG_CATALOG_CELLS_H
#define FP8PLAN_CATALOG_CATALOG_CELLS_H

#include <stddef.h>
#include <stdint.h>

#include "catalog/csv_table.h"
#include "util/status.h"

typedef struct {
    const CsvTable *t;
    int r;
    Err *e;
    const void *ctx; /* the caller's (cell_parse_rows passes it through) */
} Cur;

/* ST_DATA "FILE: row R, column C: <why>". */
Status cell_bad(Cur *c, const char *col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *cell_text(Cur *c, const char *col);
/* A whole number in [lo, hi]. */
Status cell_u32(Cur *c, const char *col, uint32_t lo, uint32_t hi, uint32_t *out);
/* Same, with an empty cell read as 0 (optional columns: "not used"). */
Status cell_u32_or0(Cur *c, const char *col, uint32_t hi, uint32_t *out);
/* cell_yesno with an empty cell read as no. */
Status cell_yesno_or_no(Cur *c, const char *col, int *out);
/* A positive count (util/num.h rules). */
Status cell_count(Cur *c, const char *col, uint64_t *out);
/* A finite number >= 0 (> 0 unless allow_zero). */
Status cell_rate(Cur *c, const char *col, int allow_zero, double *out);
/* A finite number in [lo, hi]. */
Status cell_range(Cur *c, const char *col, double lo, double hi, double *out);
Status cell_yesno(Cur *c, const char *col, int *out);
/* "9.0" -> 90: one digit after the point. */
Status cell_sm(Cur *c, const char *col, uint32_t *out);
/* Non-empty text shorter than size; name_like: letters, digits, '.', '_', '-' only. */
Status cell_textcopy(Cur *c, const char *col, char *dst, size_t size, int name_like);

/* Column lists. A file's columns are one X-macro list, X(column, reader, field, lo, hi, opt), in the
 * file's order: CELL_COL_HEAD makes the header list (`&(LIST(CELL_COL_HEAD))[1]`: past the first comma; opt
 * "?" marks a column the header may leave out), CELL_COL_READ reads each cell into the row, in order, with
 * cell_col_<reader> (inside the row function: `Cur *c`, `Status st` and the row as `rowp`). Adding a column
 * is its field plus one row. A reader reads column col into *field (size bytes when text; a number in
 * [lo, hi]); a file adds its own (an enum's names) as static cell_col_<NAME>. */
#define CELL_COL_HEAD(col, rd, field, lo, hi, opt) "," opt #col
/* A reader of an enum column: parse(text, field) returns 0 or -1; "'VALUE' is not <what>" when it fails. */
#define CELL_COL_ENUM(rd, parse, what)                                                                         \
    static Status cell_col_##rd(Cur *c, const char *col, void *f, size_t size, double lo, double hi)           \
    {                                                                                                          \
        (void)size, (void)lo, (void)hi;                                                                        \
        return parse(cell_text(c, col), f) ? cell_bad(c, col, "'%s' is not " what, cell_text(c, col)) : ST_OK; \
    }
#define CELL_COL_READ(col, rd, field, lo, hi, opt) \
    if ((st = cell_col_##rd(c, #col, &rowp->field, sizeof rowp->field, lo, hi))) return st;
Status cell_col_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi);        /* name-like text */
Status cell_col_OPT_NAME(Cur *c, const char *col, void *f, size_t size, double lo, double hi);    /* blank: "" */
Status cell_col_TEXT(Cur *c, const char *col, void *f, size_t size, double lo, double hi);        /* non-empty text */
Status cell_col_YESNO(Cur *c, const char *col, void *f, size_t size, double lo, double hi);       /* int */
Status cell_col_YESNO_OR_NO(Cur *c, const char *col, void *f, size_t size, double lo, double hi); /* blank: no */
Status cell_col_U32(Cur *c, const char *col, void *f, size_t size, double lo, double hi);         /* uint32_t */
Status cell_col_U32_OR0(Cur *c, const char *col, void *f, size_t size, double lo, double hi);     /* blank: 0 */
Status cell_col_RANGE(Cur *c, const char *col, void *f, size_t size, double lo, double hi);       /* double */
Status cell_col_OPT_RANGE(Cur *c, const char *col, void *f, size_t size, double lo, double hi);   /* blank: 0 */
Status cell_col_US(Cur *c, const char *col, void *f, size_t size, double lo, double hi);     /* microseconds -> s */
Status cell_col_OPT_US(Cur *c, const char *col, void *f, size_t size, double lo, double hi); /* blank: 0 */

/* Parse the CSV, check the header names `columns`, the `key` column's values are
 * unique (key NULL: no key column) and there are at most max_rows, then call fn for each data row with
 * rows + r * size. *n = rows parsed (0 on error). The caller frees t. */
Status cell_parse_rows(const char *text, size_t len, const char *fname, const char *columns, const char *key,
                       Status (*fn)(Cur *, void *), const void *ctx, void *rows, size_t size, int max_rows, int *n,
                       CsvTable *t, Err *e);
/* cell_parse_rows for callers that need nothing of the table afterwards (it is freed). */
Status cell_parse_all(const char *text, size_t len, const char *fname, const char *columns, const char *key,
                      Status (*fn)(Cur *, void *), const void *ctx, void *rows, size_t size, int max_rows, int *n,
                      Err *e);

#endif
