/* catalog/csv_table.h — strict CSV text into rows of strings (libcsv).
 *
 * The one reader of CSV text (catalog files, FP8-LM Table 5, delayed-scaling
 * traces use its checks). The text is parsed in libcsv's strict mode; a
 * UTF-8 byte-order mark is skipped; blank lines are ignored. Row 1 is the
 * header; every later row must have exactly as many fields as the header.
 * Errors name the file and the row (ST_DATA). */
#ifndef FP8PLAN_CATALOG_CSV_TABLE_H
#define FP8PLAN_CATALOG_CSV_TABLE_H

#include <stddef.h>

#include "util/status.h"

typedef struct {
    const char *fname;
    int ncols;
    int nrows;    /* data rows, header excluded */
    char **head;  /* ncols header names */
    char **cells; /* nrows * ncols, row-major; every cell NUL-terminated */
} CsvTable;

/* Limits every reader shares: reading stops at the first row or field past them. */
enum { CSV_TABLE_MAX_ROWS = 65536, CSV_TABLE_MAX_COLS = 1024 };

/* Parse text into t (caller frees with csv_table_free, also after an error). A cell holding a control
 * byte (NUL, tab, escape, ... 0x00-0x1F, 0x7F) or invalid UTF-8 is an error naming its row, column and
 * byte. More than max_rows data rows (CSV_TABLE_MAX_ROWS for csv_table_parse) is an error found while
 * reading, not after. */
Status csv_table_parse(const char *text, size_t len, const char *fname, CsvTable *t, Err *e);
Status csv_table_parse_max(const char *text, size_t len, const char *fname, int max_rows, CsvTable *t, Err *e);
/* csv_table_parse_max where a data row may stop before the header's last columns when every one it leaves out is
 * optional in `columns` (csv_table_expect's list: '?' before a name): the cells it leaves out read as empty. A
 * file's rows written before an optional column was added to its header still read. */
Status csv_table_parse_cols(const char *text, size_t len, const char *fname, int max_rows, const char *columns,
                            CsvTable *t, Err *e);

/* The hygiene the parser applies (a byte-order mark is skipped with util/text.h's utf8_bom_len), for
 * readers that stream CSV themselves (catalog/csv_column.h): the check of one cell's bytes (the message
 * starts with `where`, e.g. "trace.csv: row 3, column amax"). */
Status csv_cell_check(const char *cell, size_t len, const char *where, Err *e);
void csv_table_free(CsvTable *t);

/* Check the header names exactly the comma-separated `columns` (any order),
 * each once; names the first unknown, duplicated or missing column. A name
 * written "?name" is optional: the header may leave it out (its cells read
 * as empty). */
Status csv_table_expect(const CsvTable *t, const char *columns, Err *e);

/* Column index of name, -1 if absent. */
int csv_table_col(const CsvTable *t, const char *name);

/* Cell of data row r (0-based) in the column named `name` (must exist). */
const char *csv_table_cell(const CsvTable *t, int r, const char *name);

/* The file row number of data row r (header = 1, so data row 0 is row 2). */
static inline int csv_table_rowno(int r) { return r + 2; }

#endif
