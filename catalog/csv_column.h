/* catalog/csv_column.h — one named column of CSV text, streamed cell by cell (libcsv, strict mode).
 *
 * For files too long to hold as a table whose readers want one column: `scaling --trace` reads the
 * 'amax' column of a trace. The rules are csv_table.h's: a UTF-8 byte-order mark is skipped, every cell
 * (the header's too) holds printable UTF-8 only, every row has as many fields as the header. The column
 * is found by name (case-insensitive, surrounding blanks ignored). Errors are "FILE:ROW: ..." (ST_DATA;
 * the header is row 1). */
#ifndef FP8PLAN_CATALOG_CSV_COLUMN_H
#define FP8PLAN_CATALOG_CSV_COLUMN_H

#include <stddef.h>

#include "util/status.h"

/* Called with each data row's cell of the column (len bytes, not NUL-terminated) and its file row. */
typedef Status (*CsvColumnFn)(void *ctx, unsigned long row, const char *cell, size_t len, Err *e);

/* Stream column `col` of text to fn. *rows = the rows read, the header included (0: an empty text).
 * Stops at fn's first error (returned with its message). */
Status csv_column_each(const char *text, size_t len, const char *fname, const char *col, CsvColumnFn fn, void *ctx,
                       unsigned long *rows, Err *e);

#endif
