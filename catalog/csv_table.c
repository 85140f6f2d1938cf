/* catalog/csv_table.c — strict CSV reader over a text buffer (see csv_table.h). */
#include "catalog/csv_table.h"

#include <csv.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "util/text.h"

typedef struct {
    CsvTable *t;
    char **row; /* fields of the row being read */
    int nrow, caprow;
    int record; /* records completed so far (header = record 1) */
    int oom;
    int ragged_row, ragged_n; /* first ragged record and its field count */
    char **cells;
    int ncells, capcells;
    int max_rows;        /* data rows allowed */
    const char *columns; /* csv_table_parse_cols's list (NULL: every row has the header's fields) */
    int min_fields;      /* a data row may have this many fields or more, up to the header's */
    int stop;            /* 1: too many rows, 2: too many columns, 3: a bad byte; reading stops */
    Err bad;             /* the bad byte's message (stop == 3) */
} Ctx;

Status csv_cell_check(const char *cell, size_t len, const char *where, Err *e)
{
    size_t at = text_bad_byte(cell, len);
    if (at == len) return ST_OK;
    enum { SHOW = 40 }; /* bytes of the cell quoted in the message */
    char shown[4 * SHOW + 1];
    unsigned char b = (unsigned char)cell[at];
    text_escape_n(cell, len < SHOW ? len : SHOW, shown, sizeof shown, 1);
    return err_set(e, ST_DATA, "%s: %s 0x%02X at byte %zu of '%s%s' (cells hold printable UTF-8 text only)", where,
                   b < 0x20 || b == 0x7F ? "control byte" : "invalid UTF-8 byte", b, at + 1, shown,
                   len > SHOW ? "..." : "");
}

static char *dup_field(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (n) memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void on_field(void *field, size_t len, void *data)
{
    Ctx *c = data;
    if (c->oom || c->stop) return;
    if (c->nrow >= CSV_TABLE_MAX_COLS) {
        c->stop = 2;
        return;
    }
    if (field && len) {
        char where[256];
        snprintf(where, sizeof where, "%s: row %d, column %d", c->t->fname, c->record + 1, c->nrow + 1);
        if (c->record >= 1 && c->nrow < c->t->ncols)
            snprintf(where, sizeof where, "%s: row %d, column %.60s", c->t->fname, c->record + 1, c->t->head[c->nrow]);
        if (csv_cell_check(field, len, where, &c->bad)) {
            c->stop = 3;
            return;
        }
    }
    if (c->nrow == c->caprow) {
        int ncap = c->caprow ? c->caprow * 2 : 32;
        char **nr = realloc(c->row, sizeof *nr * (size_t)ncap);
        if (!nr) {
            c->oom = 1;
            return;
        }
        c->row = nr;
        c->caprow = ncap;
    }
    char *s = dup_field(field ? field : "", field ? len : 0);
    if (!s) {
        c->oom = 1;
        return;
    }
    c->row[c->nrow++] = s;
}

static void drop_row(Ctx *c)
{
    for (int i = 0; i < c->nrow; i++) free(c->row[i]);
    c->nrow = 0;
}

/* 1 when `columns` (csv_table_expect's list) marks `name` optional ("?name"). */
static int optional_col(const char *columns, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = columns; *p;) {
        const char *q = strchr(p, ',');
        size_t m = q ? (size_t)(q - p) : strlen(p);
        if (*p == '?' && m == n + 1 && !strncmp(p + 1, name, n)) return 1;
        p = q ? q + 1 : p + m;
    }
    return 0;
}

static void on_record(int term, void *data)
{
    (void)term;
    Ctx *c = data;
    if (c->oom || c->stop) {
        drop_row(c);
        return;
    }
    c->record++;
    if (c->record > 1 && c->t->nrows >= c->max_rows) { /* one row past the limit: stop reading */
        c->stop = 1;
        drop_row(c);
        return;
    }
    CsvTable *t = c->t;
    if (c->record == 1) { /* header */
        t->head = c->row;
        t->ncols = c->nrow;
        c->row = NULL;
        c->nrow = c->caprow = 0;
        c->min_fields = t->ncols;
        while (c->columns && c->min_fields > 0 && optional_col(c->columns, t->head[c->min_fields - 1])) c->min_fields--;
        return;
    }
    while (c->nrow < t->ncols && c->nrow >= c->min_fields && !c->oom) on_field(NULL, 0, c); /* left out: empty */
    if (c->nrow != t->ncols) {
        if (!c->ragged_row) {
            c->ragged_row = c->record;
            c->ragged_n = c->nrow;
        }
        drop_row(c);
        return;
    }
    if (c->ncells + c->nrow > c->capcells) {
        int ncap = c->capcells ? c->capcells * 2 : 256;
        while (ncap < c->ncells + c->nrow) ncap *= 2;
        char **nc = realloc(c->cells, sizeof *nc * (size_t)ncap);
        if (!nc) {
            c->oom = 1;
            drop_row(c);
            return;
        }
        c->cells = nc;
        c->capcells = ncap;
    }
    memcpy(c->cells + c->ncells, c->row, sizeof *c->row * (size_t)c->nrow);
    c->ncells += c->nrow;
    c->nrow = 0;
    t->nrows++;
}

void csv_table_free(CsvTable *t)
{
    if (!t) return;
    for (int i = 0; i < t->ncols && t->head; i++) free(t->head[i]);
    for (long i = 0; i < (long)t->nrows * t->ncols && t->cells; i++) free(t->cells[i]);
    free(t->head);
    free(t->cells);
    t->head = t->cells = NULL;
    t->ncols = t->nrows = 0;
}

static Status parse_table(const char *text, size_t len, const char *fname, int max_rows, const char *columns,
                          CsvTable *t, Err *e)
{
    memset(t, 0, sizeof *t);
    t->fname = fname;
    size_t bom = utf8_bom_len(text, len);
    text += bom, len -= bom;
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL))
        return err_set(e, ST_NOMEM, "%s: out of memory", fname);
    Ctx c = {.t = t, .max_rows = max_rows, .columns = columns};
    /* in pieces, so that a file far past a limit stops being read at the limit */
    size_t off = 0, used = 0, piece = 0;
    int perr = 0;
    while (off < len && !c.stop && !c.oom) {
        piece = len - off < 65536 ? len - off : 65536;
        used = csv_parse(&p, text + off, piece, on_field, on_record, &c);
        if (used < piece) {
            perr = csv_error(&p);
            break;
        }
        off += piece;
    }
    int ferr = perr || c.stop ? 0 : csv_fini(&p, on_field, on_record, &c);
    csv_free(&p);
    drop_row(&c);
    free(c.row);
    t->cells = c.cells;
    if (c.oom || perr == CSV_ENOMEM) return err_set(e, ST_NOMEM, "%s: out of memory", fname);
    if (c.stop == 3) return err_set(e, ST_DATA, "%s", c.bad.msg);
    if (c.stop == 2)
        return err_set(e, ST_DATA, "%s: row %d: more than %d fields; at most %d are read", fname, c.record + 1,
                       CSV_TABLE_MAX_COLS, CSV_TABLE_MAX_COLS);
    if (c.stop == 1)
        return err_set(e, ST_DATA, "%s: more than %d data rows (at most %d are read; stopped at row %d)", fname,
                       max_rows, max_rows, c.record);
    if (perr || ferr) {
        /* the bad byte belongs to the record after the last complete one */
        return err_set(e, ST_DATA, "%s: row %d: malformed CSV (%s)", fname, c.record + 1,
                       perr == CSV_EPARSE || ferr ? "a quote inside an unquoted field or an unterminated quoted field"
                                                  : csv_strerror(perr));
    }
    if (c.record == 0) return err_set(e, ST_DATA, "%s: empty file (no header row)", fname);
    if (c.ragged_row)
        return err_set(e, ST_DATA, "%s: row %d: %d fields, but the header has %d", fname, c.ragged_row, c.ragged_n,
                       t->ncols);
    if (t->nrows == 0) return err_set(e, ST_DATA, "%s: no data rows after the header", fname);
    return ST_OK;
}

Status csv_table_parse_max(const char *text, size_t len, const char *fname, int max_rows, CsvTable *t, Err *e)
{
    return parse_table(text, len, fname, max_rows, NULL, t, e);
}

Status csv_table_parse_cols(const char *text, size_t len, const char *fname, int max_rows, const char *columns,
                            CsvTable *t, Err *e)
{
    return parse_table(text, len, fname, max_rows, columns, t, e);
}

Status csv_table_parse(const char *text, size_t len, const char *fname, CsvTable *t, Err *e)
{
    return csv_table_parse_max(text, len, fname, CSV_TABLE_MAX_ROWS, t, e);
}

int csv_table_col(const CsvTable *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (!strcmp(t->head[i], name)) return i;
    return -1;
}

const char *csv_table_cell(const CsvTable *t, int r, const char *name)
{
    int c = csv_table_col(t, name);
    return c < 0 ? "" : t->cells[(long)r * t->ncols + c];
}

Status csv_table_expect(const CsvTable *t, const char *columns, Err *e)
{
    for (int i = 0; i < t->ncols; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(t->head[i], t->head[j]))
                return err_set(e, ST_DATA, "%s: row 1: column '%s' appears twice", t->fname, t->head[i]);
        /* is head[i] one of the expected names ('?' before a name: optional)? */
        size_t n = strlen(t->head[i]);
        const char *p = columns;
        int found = 0;
        while (*p && !found) {
            const char *q = strchr(p, ',');
            size_t m = q ? (size_t)(q - p) : strlen(p);
            const char *nm = *p == '?' ? p + 1 : p;
            size_t k = *p == '?' ? m - 1 : m;
            if (k == n && !strncmp(nm, t->head[i], n)) found = 1;
            p = q ? q + 1 : p + m;
        }
        if (!found)
            return err_set(e, ST_DATA, "%s: row 1: unknown column '%s' (expected: %s)", t->fname, t->head[i], columns);
    }
    const char *p = columns;
    while (*p) {
        const char *q = strchr(p, ',');
        size_t m = q ? (size_t)(q - p) : strlen(p);
        char name[64];
        if (m >= sizeof name) m = sizeof name - 1;
        memcpy(name, p, m);
        name[m] = '\0';
        if (*name != '?' && csv_table_col(t, name) < 0)
            return err_set(e, ST_DATA, "%s: row 1: missing column '%s' (expected: %s)", t->fname, name, columns);
        p = q ? q + 1 : p + m;
    }
    return ST_OK;
}
