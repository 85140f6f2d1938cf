/* reports/table.c — Table storage and its text/CSV/JSON renderers. */
#include "reports/table.h"

#include <csv.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "reports/html_page.h"
#include "reports/table_internal.h"
#include "util/num.h"

Table *table_new(const TableCol *cols, int ncols)
{
    Table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cols = malloc(sizeof *cols * (size_t)ncols);
    if (!t->cols) {
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
    free(t->title);
    free(t);
}

void table_set_title(Table *t, const char *title)
{
    free(t->title);
    t->title = title ? strdup(title) : NULL;
    if (title && !t->title) t->oom = 1;
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

int table_rows(const Table *t)
{
    int n = 0;
    for (int r = 0; r < t->nrows; r++) n += !t->rows[r].rule;
    return n;
}

/* ---- cell formatting ---------------------------------------------------- */

enum { CELL_MAX = 128 };

static void fmt_text(const TableCol *col, const Cell *c, char *buf)
{
    if (!c->set) {
        snprintf(buf, CELL_MAX, "-");
        return;
    }
    switch (col->type) {
    case TC_STR: snprintf(buf, CELL_MAX, "%s", c->v.s); break;
    case TC_U64:
        if (col->flags & TF_GROUP)
            num_fmt_grouped(c->v.u, buf, CELL_MAX);
        else
            snprintf(buf, CELL_MAX, "%llu", (unsigned long long)c->v.u);
        break;
    case TC_I64:
        if ((col->flags & TF_GROUP) && c->v.i < 0) {
            buf[0] = '-';
            num_fmt_grouped((uint64_t)(-(c->v.i + 1)) + 1, buf + 1, CELL_MAX - 1);
        } else if (col->flags & TF_GROUP) {
            num_fmt_grouped((uint64_t)c->v.i, buf, CELL_MAX);
        } else {
            snprintf(buf, CELL_MAX, "%lld", (long long)c->v.i);
        }
        break;
    case TC_F64:
        if (!isfinite(c->v.f))
            snprintf(buf, CELL_MAX, "n/a");
        else if (col->flags & TF_SCI)
            snprintf(buf, CELL_MAX, "%.*g", col->prec > 0 ? col->prec : 6, c->v.f);
        else
            snprintf(buf, CELL_MAX, "%.*f", col->prec, c->v.f);
        break;
    }
}

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

static int right_aligned(const TableCol *col) { return col->type != TC_STR && !(col->flags & TF_LEFT); }

/* Append cell c's text s to line at *k: two blanks before every cell but the first, then s
 * padded with blanks to width (on the left when right-aligned). */
static void put_padded(char *line, int *k, int c, const char *s, int width, int right)
{
    int len = (int)strlen(s), gap = width > len ? width - len : 0;
    if (c) memset(line + *k, ' ', 2), *k += 2;
    if (right) memset(line + *k, ' ', (size_t)gap), *k += gap;
    memcpy(line + *k, s, (size_t)len), *k += len;
    if (!right) memset(line + *k, ' ', (size_t)gap), *k += gap;
}

/* Write len bytes of s and a newline, without the trailing blanks. */
static void put_line(FILE *f, const char *s, size_t len)
{
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    fwrite(s, 1, len, f);
    fputc('\n', f);
}

/* Every line is built in full, then written without its trailing blanks (a short
 * last cell, an empty last unit). Cells are at most their column's width, so a
 * line of cells is at most `total` characters. */
static void write_text(const Table *t, FILE *f)
{
    int *w = calloc((size_t)t->ncols, sizeof *w);
    char buf[CELL_MAX];
    if (!w) return;
    for (int c = 0; c < t->ncols; c++) {
        const TableCol *col = &t->cols[c];
        int lw = (int)strlen(col->label ? col->label : col->name);
        int uw = col->unit ? (int)strlen(col->unit) : 0;
        w[c] = lw > uw ? lw : uw;
        for (int r = 0; r < t->nrows; r++) {
            if (t->rows[r].rule) continue;
            fmt_text(col, &t->rows[r].cells[c], buf);
            int l = (int)strlen(buf);
            if (l > w[c]) w[c] = l;
        }
    }
    int total = 0;
    for (int c = 0; c < t->ncols; c++) total += w[c] + (c ? 2 : 0);
    char *line = malloc((size_t)total + 1);
    if (!line) {
        free(w);
        return;
    }
    int any_unit = 0, k;
    for (int c = 0; c < t->ncols; c++) any_unit |= t->cols[c].unit && *t->cols[c].unit;
    if (t->title) put_line(f, t->title, strlen(t->title));
    k = 0;
    for (int c = 0; c < t->ncols; c++)
        put_padded(line, &k, c, t->cols[c].label ? t->cols[c].label : t->cols[c].name, w[c],
                   right_aligned(&t->cols[c]));
    put_line(f, line, (size_t)k);
    if (any_unit) {
        k = 0;
        for (int c = 0; c < t->ncols; c++)
            put_padded(line, &k, c, t->cols[c].unit ? t->cols[c].unit : "", w[c], right_aligned(&t->cols[c]));
        put_line(f, line, (size_t)k);
    }
    memset(line, '-', (size_t)total);
    put_line(f, line, (size_t)total);
    for (int r = 0; r < t->nrows; r++) {
        if (t->rows[r].rule) {
            memset(line, '-', (size_t)total);
            put_line(f, line, (size_t)total);
            continue;
        }
        k = 0;
        for (int c = 0; c < t->ncols; c++) {
            fmt_text(&t->cols[c], &t->rows[r].cells[c], buf);
            put_padded(line, &k, c, buf, w[c], right_aligned(&t->cols[c]));
        }
        put_line(f, line, (size_t)k);
    }
    free(line);
    free(w);
}

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

void json_put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
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

Status table_write(const Table *t, TableFormat fmt, FILE *f, Err *e)
{
    if (!t || t->oom == 1) return err_set(e, ST_NOMEM, "out of memory building a table");
    if (t->oom == 2) return err_set(e, ST_SOFTWARE, "table cell set with the wrong type or column");
    switch (fmt) {
    case TABLE_TEXT: write_text(t, f); break;
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
        fmt_text(&t->cols[col], c ? c : &unset, tmp);
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
