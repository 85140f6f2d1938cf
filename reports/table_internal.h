/* reports/table_internal.h — the Table's storage, shared by reports/table.c
 * (building and rendering) and reports/table_read.c (reading back and copying
 * rows). Nothing outside those two files includes this. */
#ifndef FP8PLAN_REPORTS_TABLE_INTERNAL_H
#define FP8PLAN_REPORTS_TABLE_INTERNAL_H

#include "reports/table.h"

typedef struct {
    unsigned char set;
    union {
        char *s;
        uint64_t u;
        int64_t i;
        double f;
    } v;
} Cell;

typedef struct {
    int rule; /* 1 = separator row, no cells */
    Cell *cells;
} Row;

struct Table {
    TableCol *cols;
    int *width; /* per column: its least text width (table_set_width; 0 = its widest cell) */
    int ncols;
    Row *rows;
    int nrows, cap;
    char *title;
    int oom;
};

enum { CELL_MAX = 128 }; /* a formatted number's buffer (text cells are printed from the cell itself) */

/* A cell as aligned text shows it ("-" unset, "n/a" not finite, %g when fixed notation is too long);
 * buf holds CELL_MAX bytes (a longer string is cut: table_write_text prints strings whole). */
void table_fmt_text(const TableCol *col, const Cell *c, char *buf);

/* The aligned text rendering, fitting TABLE_WIDTH columns (reports/table_text.c); -1 when memory ran out
 * (what was written is incomplete), 0 otherwise. */
int table_write_text(const Table *t, FILE *f);

/* The set cell at (line, col); NULL when unset, out of range or on a rule. */
const Cell *table_cell_at(const Table *t, int line, int col);

#endif
