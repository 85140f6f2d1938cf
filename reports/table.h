/* reports/table.h — one table, four renderings: aligned text, CSV, JSON, HTML.
 *
 * Every subcommand that prints rows builds a Table and hands it to
 * table_write(), so `--format table|csv|json` means the same thing everywhere:
 *   text: a header row, a units row, a rule, then aligned rows (numbers right,
 *         text left; byte counts with thousands separators);
 *   csv:  RFC 4180, one header row of snake_case names, C-locale numbers, exact
 *         integers, text quoted only when it must be (libcsv's csv_fwrite);
 *   json: an array of objects keyed by the column names;
 *   html: a self-contained page holding the table (reports/html_page.h); the
 *         commands with charts draw them from the same rows (reports/chart_*.h).
 * Rule rows and the title appear in text and HTML only. */
#ifndef FP8PLAN_REPORTS_TABLE_H
#define FP8PLAN_REPORTS_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TABLE_TEXT, TABLE_CSV, TABLE_JSON, TABLE_HTML } TableFormat;

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
/* ST_NOMEM when building t ran out of memory (t NULL, or a row or cell that could not be added: the
 * table is incomplete), ST_SOFTWARE for a cell set with the wrong type; ST_OK for a whole table. */
Status table_check(const Table *t, Err *e);

/* Text-only title printed above the header. */
void table_set_title(Table *t, const char *title);
/* Text only: column col is at least `width` characters wide whatever its cells hold (a wider cell still
 * widens it: nothing is cut), so a column of measured values keeps one layout from run to run. */
void table_set_width(Table *t, int col, int width);

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

/* ---- reading a table back: charts are drawn from the very rows the CSV is written from.
 * Lines are the appended rows and rules in order (0 .. table_lines()-1). */
int table_ncols(const Table *t);
const TableCol *table_col(const Table *t, int col);
/* Index of the column named `name`, or -1. */
int table_col_find(const Table *t, const char *name);
const char *table_title(const Table *t); /* NULL when none */
int table_lines(const Table *t);
int table_line_is_rule(const Table *t, int line);
/* A numeric cell (or a TC_STR cell that holds a number, e.g. "640" or "nan") as a double; 0 when
 * the cell is unset, a rule or not a number. */
int table_get_f64(const Table *t, int line, int col, double *v);
/* A TC_STR cell; NULL when unset or not a string column. */
const char *table_get_str(const Table *t, int line, int col);
/* The cell as `how` renders it: TABLE_CSV gives the CSV field's value (numbers exactly as the CSV
 * writes them, strings unquoted), TABLE_TEXT the text table's cell ("16,777,216", "-" when unset).
 * Returns 0 (and "") for a CSV cell that would be empty. */
int table_cell_text(const Table *t, int line, int col, TableFormat how, char *buf, size_t size);

/* Append src's rows and rules to t: each data row becomes a new row of t whose column key_col (a
 * TC_STR column; -1 for none) holds key and whose columns first .. first + ncols(src) - 1 take
 * src's cells (the column types must match: ST_SOFTWARE from table_write otherwise). Builds the
 * long tables charts compare plans with: every row of `plan --view time` per recipe. */
void table_append_keyed(Table *t, int key_col, const char *key, int first, const Table *src);
/* Append one line of src (a table with the same leading columns) to t. */
void table_append_line(Table *t, const Table *src, int line);

/* "table" / "text", "csv", "json", "html". */
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
