/* reports/table.h — one table, three renderings: aligned text, CSV, JSON.
 *
 * Every subcommand that prints rows builds a Table and hands it to
 * table_write(), so `--format table|csv|json` means the same thing everywhere:
 *   text: a header row, a units row, a rule, then aligned rows (numbers right,
 *         text left; byte counts with thousands separators);
 *   csv:  RFC 4180, one header row of snake_case names, C-locale numbers, exact
 *         integers, text quoted only when it must be (libcsv's csv_fwrite);
 *   json: an array of objects keyed by the column names.
 * Rule rows and the title appear in text only. */
#ifndef FP8PLAN_REPORTS_TABLE_H
#define FP8PLAN_REPORTS_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TABLE_TEXT, TABLE_CSV, TABLE_JSON } TableFormat;

typedef enum { TC_STR, TC_U64, TC_I64, TC_F64 } TableColType;

enum {
    TF_GROUP = 1 << 0, /* text: thousands separators (16,777,216) */
    TF_EXACT = 1 << 1, /* csv/json doubles with %.17g instead of %.12g */
    TF_LEFT = 1 << 2,  /* text: left-align even if numeric */
    TF_SCI = 1 << 3,   /* text: doubles as %.*g instead of %.*f */
    TF_KEY = 1 << 4,   /* text: names the row; repeated in front of each group when a wide table splits */
};

typedef struct {
    const char *name;  /* snake_case; CSV header and JSON key (units in the name: _bytes, _s, _pct) */
    const char *label; /* text header; NULL = name */
    const char *unit;  /* text units row ("B", "GB", "%", "s"); NULL = blank */
    TableColType type;
    int prec; /* text: digits after the point (or significant digits with TF_SCI) */
    unsigned flags;
} TableCol;

typedef struct Table Table;

/* A table with a copy of cols[0..ncols). NULL when out of memory. */
Table *table_new(const TableCol *cols, int ncols);
void table_free(Table *t);

/* Text-only title printed above the header. */
void table_set_title(Table *t, const char *title);

/* Append a row; later setters fill it. Unset cells print as "-" (text), empty (CSV), null (JSON). */
void table_row(Table *t);
/* Append a rule (text only): a separator between groups of rows. */
void table_rule(Table *t);

void table_str(Table *t, int col, const char *s);
void table_strf(Table *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void table_u64(Table *t, int col, uint64_t v);
void table_i64(Table *t, int col, int64_t v);
void table_f64(Table *t, int col, double v);

int table_rows(const Table *t); /* data rows (rules excluded) */

/* A copy of t with only the columns named in `names` (comma-separated, in that order; --columns).
 * NULL with ST_USAGE naming an unknown or repeated column and listing the known ones, or ST_NOMEM. */
Table *table_select(const Table *t, const char *names, Err *e);

/* Text output fits this many columns: wider tables wrap their text columns and then split into
 * groups of columns (reports/table_text.c); prose goes through table_put_prose. */
enum { TABLE_WIDTH = 100 };

/* Render. Returns ST_NOMEM if any earlier call ran out of memory, ST_IO on a write error. */
Status table_write(const Table *t, TableFormat fmt, FILE *f, Err *e);

/* "table" / "text", "csv", "json". */
Status table_format_parse(const char *s, TableFormat *out, Err *e);

/* Prose for a text report, wrapped at blanks to TABLE_WIDTH columns; each line of the formatted text
 * wraps by itself, its continuation lines indented two more blanks than it. */
void table_put_prose(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Write s as a JSON string literal (quoted, escaped). */
void json_put_str(FILE *f, const char *s);
/* Write s as a CSV field, quoted only when needed. */
void csv_put_str(FILE *f, const char *s);

#ifdef __cplusplus
}
#endif
#endif
