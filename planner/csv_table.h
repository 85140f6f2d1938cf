/* planner/csv_table.h — strict CSV text into rows of strings (libcsv).
 *
 * Used by the catalog parsers. The text is parsed in libcsv's strict mode; a
 * UTF-8 byte-order mark is skipped; blank lines are ignored. Row 1 is the
 * header; every later row must have exactly as many fields as the header.
 * Errors name the file and the row (ST_DATA). */
#ifndef FP8PLAN_PLANNER_CSV_TABLE_H
#define FP8PLAN_PLANNER_CSV_TABLE_H

#include <stddef.h>

#include "util/status.h"

typedef struct {
    const char *fname;
    int ncols;
    int nrows;    /* data rows, header excluded */
    char **head;  /* ncols header names */
    char **cells; /* nrows * ncols, row-major; every cell NUL-terminated */
} CsvTable;

/* Parse text into t (caller frees with csv_table_free, also after an error). */
Status csv_table_parse(const char *text, size_t len, const char *fname, CsvTable *t, Err *e);
void csv_table_free(CsvTable *t);

/* Check the header names exactly the comma-separated `columns` (any order),
 * each once; names the first unknown, duplicated or missing column. */
Status csv_table_expect(const CsvTable *t, const char *columns, Err *e);

/* Column index of name, -1 if absent. */
int csv_table_col(const CsvTable *t, const char *name);

/* Cell of data row r (0-based) in the column named `name` (must exist). */
const char *csv_table_cell(const CsvTable *t, int r, const char *name);

/* The file row number of data row r (header = 1, so data row 0 is row 2). */
static inline int csv_table_rowno(int r) { return r + 2; }

#endif
