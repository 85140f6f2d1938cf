/* reports/table.c — Table storage and its CSV/JSON renderers (text: table_text.c). */
#include "reports/table.h"

#include <csv.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "reports/html_page.h"
#include "reports/table_internal.h"
#include "util/num.h"
#include "util/text.h"

Table *table_new(const TableCol *cols, int ncols)
{
    Table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cols = malloc(sizeof *cols * (size_t)ncols);
    t->width = calloc((size_t)ncols, sizeof *t->width);
    if (!t->cols || !t->width) {
        free(t->cols);
        free(t->width);
        free(t);
        return NULL;
    }
    memcpy(t->cols, cols, sizeof *cols * (size_t)ncols);
    t->ncols = ncols;
    return t;
}

void table_free(Table *t)
{
    if (!t) return;
    for (int r = 0; r < t->nrows; r++) {
        if (!t->rows[r].cells) continue;
        for (int c = 0; c < t->ncols; c++)
            if (t->cols[c].type == TC_STR && t->rows[r].cells[c].set) free(t->rows[r].cells[c].v.s);
        free(t->rows[r].cells);
    }
    free(t->rows);
    free(t->cols);
    free(t->width);
    free(t->title);
    free(t);
}

void table_set_title(Table *t, const char *title)
{
    free(t->title);
    t->title = title ? strdup(title) : NULL;
    if (title && !t->title) t->oom = 1;
}

void table_set_width(Table *t, int col, int width)
{
    if (col < 0 || col >= t->ncols || width < 0) {
        t->oom = 2; /* programming error: reported by table_write */
        return;
    }
    t->width[col] = width;
}

static Row *push_row(Table *t, int rule)
{
    if (t->nrows == t->cap) {
        int ncap = t->cap ? t->cap * 2 : 16;
        Row *nr = realloc(t->rows, sizeof *nr * (size_t)ncap);
        if (!nr) {
            t->oom = 1;
            return NULL;
        }
        t->rows = nr, t->cap = ncap;
    }
    Row *r = &t->rows[t->nrows];
    r->rule = rule;
    r->cells = NULL;
    if (!rule) {
        r->cells = calloc((size_t)t->ncols, sizeof *r->cells);
        if (!r->cells) {
            t->oom = 1;
            return NULL;
        }
    }
    t->nrows++;
    return r;
}

void table_row(Table *t) { push_row(t, 0); }
void table_rule(Table *t) { push_row(t, 1); }

static Cell *cur(Table *t, int col, TableColType want)
{
    if (t->oom || !t->nrows || t->rows[t->nrows - 1].rule) return NULL;
    if (col < 0 || col >= t->ncols || t->cols[col].type != want) {
        t->oom = 2; /* programming error: reported by table_write */
        return NULL;
    }
    return &t->rows[t->nrows - 1].cells[col];
}

void table_str(Table *t, int col, const char *s)
{
    Cell *c = cur(t, col, TC_STR);
    if (!c) return;
    if (c->set) free(c->v.s);
    c->v.s = strdup(s ? s : "");
    c->set = c->v.s != NULL;
    if (!c->set) t->oom = 1;
}

void table_strf(Table *t, int col, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    table_str(t, col, buf);
}

void table_u64(Table *t, int col, uint64_t v)
{
    Cell *c = cur(t, col, TC_U64);
    if (c) c->v.u = v, c->set = 1;
}

void table_i64(Table *t, int col, int64_t v)
{
    Cell *c = cur(t, col, TC_I64);
    if (c) c->v.i = v, c->set = 1;
}

void table_f64(Table *t, int col, double v)
{
    Cell *c = cur(t, col, TC_F64);
    if (c) c->v.f = v, c->set = 1;
}

Table *table_select(const Table *t, const char *names, Err *e)
{
    int pick[256], n = 0;
    for (const char *p = names; *p;) {
        size_t len = strcspn(p, ",");
        int c = 0;
        while (c < t->ncols && (strlen(t->cols[c].name) != len || strncmp(t->cols[c].name, p, len))) c++;
        if (c == t->ncols || n == (int)(sizeof pick / sizeof *pick)) {
            char known[1024] = "";
            for (int i = 0; i < t->ncols; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", t->cols[i].name);
            return err_set(e, ST_USAGE, "--columns: no column '%.*s' (known: %s)", (int)(len > 64 ? 64 : len), p,
                           known),
                   NULL;
        }
        for (int i = 0; i < n; i++)
            if (pick[i] == c) return err_set(e, ST_USAGE, "--columns: '%s' is named twice", t->cols[c].name), NULL;
        pick[n++] = c;
        p += len + (p[len] == ',');
    }
    if (!n) return err_set(e, ST_USAGE, "--columns: name at least one column"), NULL;
    TableCol cols[256];
    for (int i = 0; i < n; i++) cols[i] = t->cols[pick[i]];
    Table *s = table_new(cols, n);
    if (s && t->title) table_set_title(s, t->title);
    for (int i = 0; s && i < n; i++) s->width[i] = t->width[pick[i]];
    for (int r = 0; s && r < t->nrows; r++) {
        if (t->rows[r].rule) {
            table_rule(s);
            continue;
        }
        table_row(s);
        for (int i = 0; i < n; i++) {
            const Cell *c = &t->rows[r].cells[pick[i]];
            if (!c->set) continue;
            switch (cols[i].type) {
            case TC_STR: table_str(s, i, c->v.s); break;
            case TC_U64: table_u64(s, i, c->v.u); break;
            case TC_I64: table_i64(s, i, c->v.i); break;
            case TC_F64: table_f64(s, i, c->v.f); break;
            }
        }
    }
    if (!s || s->oom) {
        table_free(s);
        return err_set(e, ST_NOMEM, "out of memory"), NULL;
    }
    return s;
}

int table_rows(const Table *t)
{
    int n = 0;
    for (int r = 0; r < t->nrows; r++) n += !t->rows[r].rule;
    return n;
}

/* ---- cell formatting (text: reports/table_text.c) ---------------------- */

/* CSV and JSON share number formatting; returns 0 when the cell is empty/null. */
static int fmt_data_number(const TableCol *col, const Cell *c, char *buf)
{
    if (!c->set) return 0;
    switch (col->type) {
    case TC_U64: snprintf(buf, CELL_MAX, "%llu", (unsigned long long)c->v.u); return 1;
    case TC_I64: snprintf(buf, CELL_MAX, "%lld", (long long)c->v.i); return 1;
    case TC_F64:
        if (!isfinite(c->v.f)) return 0;
        snprintf(buf, CELL_MAX, (col->flags & TF_EXACT) ? "%.17g" : "%.12g", c->v.f);
        return 1;
    case TC_STR: return 0;
    }
    return 0;
}

/* ---- renderers ---------------------------------------------------------- */

void csv_put_str(FILE *f, const char *s)
{
    size_t n = strlen(s);
    int quote = n && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t');
    if (quote || strpbrk(s, ",\"\r\n"))
        csv_fwrite(f, s, n);
    else
        fputs(s, f);
}

static void write_csv(const Table *t, FILE *f)
{
    char buf[CELL_MAX];
    for (int c = 0; c < t->ncols; c++) {
        if (c) fputc(',', f);
        csv_put_str(f, t->cols[c].name);
    }
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        if (t->rows[r].rule) continue;
        for (int c = 0; c < t->ncols; c++) {
            const Cell *cell = &t->rows[r].cells[c];
            if (c) fputc(',', f);
            if (t->cols[c].type == TC_STR) {
                if (cell->set) csv_put_str(f, cell->v.s);
            } else if (fmt_data_number(&t->cols[c], cell, buf)) {
                fputs(buf, f);
            }
        }
        fputc('\n', f);
    }
}

/* Always valid JSON and UTF-8: control characters escaped, a byte that is not part of valid UTF-8
 * written as U+FFFD (catalog cells are checked when read; this holds for any string). */
void json_put_str(FILE *f, const char *s)
{
    fputc('"', f);
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        int k = utf8_seq_len(s + i, len - i);
        if (!k) {
            fputs("\\ufffd", f);
            i++;
            continue;
        }
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20 || c == 0x7F)
                fprintf(f, "\\u%04x", c);
            else
                fwrite(s + i, 1, (size_t)k, f);
        }
        i += (size_t)k;
    }
    fputc('"', f);
}

static void write_json(const Table *t, FILE *f)
{
    char buf[CELL_MAX];
    int first = 1;
    fputs("[", f);
    for (int r = 0; r < t->nrows; r++) {
        if (t->rows[r].rule) continue;
        fputs(first ? "\n  {" : ",\n  {", f);
        first = 0;
        for (int c = 0; c < t->ncols; c++) {
            const Cell *cell = &t->rows[r].cells[c];
            if (c) fputs(", ", f);
            json_put_str(f, t->cols[c].name);
            fputs(": ", f);
            if (t->cols[c].type == TC_STR) {
                if (cell->set)
                    json_put_str(f, cell->v.s);
                else
                    fputs("null", f);
            } else if (fmt_data_number(&t->cols[c], cell, buf)) {
                fputs(buf, f);
            } else {
                fputs("null", f);
            }
        }
        fputs("}", f);
    }
    fputs(first ? "]\n" : "\n]\n", f);
}

Status table_check(const Table *t, Err *e)
{
    if (!t || t->oom == 1) return err_set(e, ST_NOMEM, "out of memory building a table");
    if (t->oom == 2) return err_set(e, ST_SOFTWARE, "table cell set with the wrong type or column");
    return ST_OK;
}

Status table_write(const Table *t, TableFormat fmt, FILE *f, Err *e)
{
    Status st = table_check(t, e);
    if (st) return st;
    switch (fmt) {
    case TABLE_TEXT:
        if (table_write_text(t, f)) return err_set(e, ST_NOMEM, "out of memory writing a table");
        break;
    case TABLE_CSV: write_csv(t, f); break;
    case TABLE_JSON: write_json(t, f); break;
    case TABLE_HTML: return html_table_page(t, f, e);
    }
    if (ferror(f)) return err_set(e, ST_IO, "write error");
    return ST_OK;
}

Status table_format_parse(const char *s, TableFormat *out, Err *e)
{
    if (!strcmp(s, "table") || !strcmp(s, "text"))
        *out = TABLE_TEXT;
    else if (!strcmp(s, "csv"))
        *out = TABLE_CSV;
    else if (!strcmp(s, "json"))
        *out = TABLE_JSON;
    else if (!strcmp(s, "html"))
        *out = TABLE_HTML;
    else
        return err_set(e, ST_USAGE, "unknown format '%s' (expected table, csv, json or html)", s);
    return ST_OK;
}

int table_cell_text(const Table *t, int line, int col, TableFormat how, char *buf, size_t size)
{
    char tmp[CELL_MAX];
    static const Cell unset = {0};
    const Cell *c = table_cell_at(t, line, col);
    int set = 1;
    if (col < 0 || col >= t->ncols) {
        set = 0, tmp[0] = '\0';
    } else if (how == TABLE_TEXT) {
        table_fmt_text(&t->cols[col], c ? c : &unset, tmp);
        set = c != NULL;
    } else if (!c) {
        set = 0, tmp[0] = '\0';
    } else if (t->cols[col].type == TC_STR) {
        snprintf(tmp, sizeof tmp, "%s", c->v.s);
    } else if (!fmt_data_number(&t->cols[col], c, tmp)) {
        set = 0, tmp[0] = '\0';
    }
    snprintf(buf, size, "%s", tmp);
    return set;
}
