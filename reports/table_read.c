/* reports/table_read.c — reading a Table back (charts draw from the rows the
 * CSV is written from) and copying rows between tables (see table.h). */
#include <stdlib.h>
#include <string.h>

#include "reports/table_internal.h"

/* Append src's line `line` to t (a rule stays a rule), its cells in columns first.. (same types). */
static void append_line(Table *t, int key_col, const char *key, int first, const Table *src, int line)
{
    const Row *sr = &src->rows[line];
    if (sr->rule) {
        table_rule(t);
        return;
    }
    table_row(t);
    if (key_col >= 0) table_str(t, key_col, key);
    for (int c = 0; c < src->ncols && !t->oom; c++) {
        if (t->cols[first + c].type != src->cols[c].type) {
            t->oom = 2;
            return;
        }
        const Cell *sc = &sr->cells[c];
        if (!sc->set) continue;
        if (src->cols[c].type == TC_STR)
            table_str(t, first + c, sc->v.s);
        else
            t->rows[t->nrows - 1].cells[first + c] = *sc;
    }
}

void table_append_keyed(Table *t, int key_col, const char *key, int first, const Table *src)
{
    if (first < 0 || first + src->ncols > t->ncols) {
        t->oom = 2;
        return;
    }
    for (int r = 0; r < src->nrows && !t->oom; r++) append_line(t, key_col, key, first, src, r);
    if (src->oom && !t->oom) t->oom = src->oom;
}

void table_append_line(Table *t, const Table *src, int line)
{
    if (src->ncols > t->ncols || line < 0 || line >= src->nrows) {
        t->oom = 2;
        return;
    }
    append_line(t, -1, NULL, 0, src, line);
}

int table_ncols(const Table *t) { return t->ncols; }
const TableCol *table_col(const Table *t, int col) { return col >= 0 && col < t->ncols ? &t->cols[col] : NULL; }
const char *table_title(const Table *t) { return t->title; }
int table_lines(const Table *t) { return t->nrows; }
int table_line_is_rule(const Table *t, int line) { return line >= 0 && line < t->nrows && t->rows[line].rule; }

int table_col_find(const Table *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->cols[c].name, name)) return c;
    return -1;
}

const Cell *table_cell_at(const Table *t, int line, int col)
{
    if (line < 0 || line >= t->nrows || col < 0 || col >= t->ncols || t->rows[line].rule) return NULL;
    const Cell *c = &t->rows[line].cells[col];
    return c->set ? c : NULL;
}

int table_get_f64(const Table *t, int line, int col, double *v)
{
    const Cell *c = table_cell_at(t, line, col);
    if (!c) return 0;
    switch (t->cols[col].type) {
    case TC_U64: *v = (double)c->v.u; return 1;
    case TC_I64: *v = (double)c->v.i; return 1;
    case TC_F64: *v = c->v.f; return 1;
    case TC_STR: {
        char *end;
        *v = strtod(c->v.s, &end);
        return end != c->v.s && !*end;
    }
    }
    return 0;
}

const char *table_get_str(const Table *t, int line, int col)
{
    const Cell *c = table_cell_at(t, line, col);
    return c && t->cols[col].type == TC_STR ? c->v.s : NULL;
}
