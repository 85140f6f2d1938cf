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
    int ncols;
    Row *rows;
    int nrows, cap;
    char *title;
    int oom;
};

/* The set cell at (line, col); NULL when unset, out of range or on a rule. */
const Cell *table_cell_at(const Table *t, int line, int col);

#endif
