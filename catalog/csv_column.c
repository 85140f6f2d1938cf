/* catalog/csv_column.c — one column of CSV text streamed to a callback (see csv_column.h). */
#include "catalog/csv_column.h"

#include <csv.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog/csv_table.h"
#include "util/num.h"
#include "util/text.h"

typedef struct {
    const char *fname, *name;
    CsvColumnFn fn;
    void *ctx;
    unsigned long row; /* 1 = header */
    long col, want, ncols;
    Err *e;
    int failed;
} Stream;

static void on_field(void *s, size_t len, void *data)
{
    Stream *t = data;
    t->col++;
    if (t->failed) return;
    char where[4200];
    snprintf(where, sizeof where, "%s:%lu: column %ld", t->fname, t->row, t->col);
    if (csv_cell_check(s, len, where, t->e)) {
        t->failed = 1;
        return;
    }
    if (t->row == 1) {
        char cell[128];
        size_t n = len < sizeof cell - 1 ? len : sizeof cell - 1;
        memcpy(cell, s, n);
        cell[n] = '\0';
        num_trim(cell);
        if (!strcasecmp(cell, t->name)) t->want = t->col;
        return;
    }
    if (t->col == t->want && t->fn(t->ctx, t->row, s, len, t->e)) t->failed = 1;
}

static void on_row(int c, void *data)
{
    Stream *t = data;
    (void)c;
    if (t->failed) return;
    if (t->row == 1) {
        t->ncols = t->col;
        if (!t->want) {
            err_set(t->e, ST_DATA, "%s:1: no '%s' column in the header row", t->fname, t->name);
            t->failed = 1;
        }
    } else if (t->col != t->ncols) {
        err_set(t->e, ST_DATA, "%s:%lu: %ld fields, the header has %ld", t->fname, t->row, t->col, t->ncols);
        t->failed = 1;
    }
    t->row++;
    t->col = 0;
}

Status csv_column_each(const char *text, size_t len, const char *fname, const char *col, CsvColumnFn fn, void *ctx,
                       unsigned long *rows, Err *e)
{
    *rows = 0;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI)) return err_set(e, ST_NOMEM, "out of memory reading %s", fname);
    Stream t = {fname, col, fn, ctx, 1, 0, 0, 0, e, 0};
    size_t bom = utf8_bom_len(text, len);
    if (csv_parse(&p, text + bom, len - bom, on_field, on_row, &t) != len - bom || csv_fini(&p, on_field, on_row, &t)) {
        if (!t.failed) err_set(e, ST_DATA, "%s:%lu: %s", fname, t.row, csv_strerror(csv_error(&p)));
        t.failed = 1;
    }
    csv_free(&p);
    *rows = t.row - 1;
    return t.failed ? e->st : ST_OK;
}
