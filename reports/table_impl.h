/* reports/table_impl.h — the Table's storage, shared by its renderers (table.c: CSV and JSON;
 * table_text.c: aligned text). Private to reports/table*.c. */
#ifndef FP8PLAN_REPORTS_TABLE_IMPL_H
#define FP8PLAN_REPORTS_TABLE_IMPL_H

#include "reports/table.h"

enum { CELL_MAX = 128 }; /* a formatted number's buffer (strings are printed from the cell itself) */

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

/* The aligned text rendering (table_text.c). */
void table_write_text(const Table *t, FILE *f);

#endif
