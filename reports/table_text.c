/* reports/table_text.c — a Table as aligned text that fits TABLE_WIDTH columns.
 *
 * Numbers right-aligned, text left-aligned, two blanks between columns, no trailing blanks. When the
 * natural width passes TABLE_WIDTH, text columns (prose: sources, notes) are narrowed to no less than
 * WRAP_MIN and their cells wrap onto more lines, at a blank where one is near, else after '/', ',' or
 * '-', else anywhere; when that is not enough, the columns are printed in groups one under the other,
 * each group led by the first column again. Widths count characters (UTF-8 code points), not bytes. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "reports/table_internal.h"
#include "util/num.h"
#include "util/text.h"

enum { GAP = 2, WRAP_MIN = 24 };

/* A number too long for fixed notation (1e+124 seconds from an efficiency of 1e-300) prints as %g. */
enum { FIXED_MAX = 20 };

void table_fmt_text(const TableCol *col, const Cell *c, char *buf)
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
        else if ((col->flags & TF_SCI) ||
                 snprintf(buf, CELL_MAX, "%.*f", col->prec, c->v.f) > FIXED_MAX) /* too long: scientific */
            snprintf(buf, CELL_MAX, "%.*g", col->prec > 0 ? col->prec : 6, c->v.f);
        break;
    }
}

/* The text of a cell: a string cell's own text (any length), else its number formatted into buf. */
static const char *cell_text(const Table *t, int r, int c, char *buf)
{
    const Cell *cell = &t->rows[r].cells[c];
    if (t->cols[c].type == TC_STR && cell->set) return cell->v.s;
    table_fmt_text(&t->cols[c], cell, buf);
    return buf;
}

static int right_aligned(const TableCol *col) { return col->type != TC_STR && !(col->flags & TF_LEFT); }

static const char *label(const TableCol *col) { return col->label ? col->label : col->name; }

static int width_of(const char *s) { return (int)text_width(s); }

/* Bytes of s that fill at most w columns, and where its next line starts. A break is looked for in the
 * last third of the line: a blank (dropped), else just after '/', ',', ';' or '-'. */
static size_t wrap_piece(const char *s, int w, const char **next)
{
    size_t len = strlen(s), i = 0, blank = 0, mark = 0;
    int cols = 0;
    while (i < len && cols < w) {
        int k = utf8_seq_len(s + i, len - i);
        if (k <= 0) k = 1;
        if (s[i] == ' ' && cols >= w / 3) blank = i;
        if (strchr("/,;-", s[i]) && cols + 1 < w && cols >= w / 3) mark = i + 1;
        i += (size_t)k, cols++;
    }
    if (i >= len) return *next = s + len, len;
    if (s[i] == ' ') blank = i; /* the line ends exactly at a blank */
    size_t cut = blank ? blank : mark ? mark : i;
    const char *n = s + cut;
    while (*n == ' ') n++;
    *next = n;
    return cut;
}

/* One output line, written as it is made: blanks are held back until something follows them on the
 * line, so a line ends without trailing blanks and no line is kept in memory (the text of a table costs
 * no allocation, however wide its cells: the allocator calls of a report do not depend on its values). */
typedef struct {
    FILE *f;
    size_t blanks; /* blanks not yet written */
} Line;

static void put(Line *l, const char *s, size_t n)
{
    size_t end = n;
    while (end && s[end - 1] == ' ') end--;
    if (end) {
        for (; l->blanks; l->blanks--) fputc(' ', l->f);
        fwrite(s, 1, end, l->f);
    }
    l->blanks += n - end;
}

static void pad(Line *l, int n)
{
    for (int i = 0; i < n; i++) put(l, " ", 1);
}

/* A cell's piece s (n bytes) in a column of width w, after the gap unless it is the first. */
static void put_cell(Line *l, int first, const char *s, size_t n, int w, int right)
{
    char tmp[CELL_MAX * 4];
    size_t m = n < sizeof tmp - 1 ? n : sizeof tmp - 1;
    memcpy(tmp, s, m);
    tmp[m] = '\0';
    int gap = w - width_of(tmp);
    if (gap < 0) gap = 0;
    if (!first) pad(l, GAP);
    if (right) pad(l, gap);
    put(l, s, n);
    if (!right) pad(l, gap);
}

/* End the line (its trailing blanks dropped). */
static void flush(Line *l, FILE *f)
{
    l->blanks = 0;
    fputc('\n', f);
}

static void rule(Line *l, FILE *f, int total)
{
    for (int i = 0; i < total; i++) put(l, "-", 1);
    flush(l, f);
}

/* The columns cols[0..n) of t, with widths w. */
static void write_group(const Table *t, FILE *f, const int *cols, int n, const int *w, Line *l)
{
    char buf[CELL_MAX];
    int total = 0, any_unit = 0;
    for (int i = 0; i < n; i++) total += w[cols[i]] + (i ? GAP : 0);
    for (int i = 0; i < n; i++) any_unit |= t->cols[cols[i]].unit && *t->cols[cols[i]].unit;
    for (int i = 0; i < n; i++) {
        const TableCol *col = &t->cols[cols[i]];
        put_cell(l, !i, label(col), strlen(label(col)), w[cols[i]], right_aligned(col));
    }
    flush(l, f);
    if (any_unit) {
        for (int i = 0; i < n; i++) {
            const TableCol *col = &t->cols[cols[i]];
            const char *u = col->unit ? col->unit : "";
            put_cell(l, !i, u, strlen(u), w[cols[i]], right_aligned(col));
        }
        flush(l, f);
    }
    rule(l, f, total);
    const char *rest[64];
    for (int r = 0; r < t->nrows; r++) {
        if (t->rows[r].rule) {
            rule(l, f, total);
            continue;
        }
        int more = 1;
        for (int i = 0; i < n && i < 64; i++) rest[i] = NULL;
        for (int line = 0; more; line++) {
            more = 0;
            for (int i = 0; i < n && i < 64; i++) {
                int c = cols[i];
                const TableCol *col = &t->cols[c];
                if (!line) rest[i] = cell_text(t, r, c, buf);
                if (!rest[i]) { /* this cell has ended: blanks */
                    put_cell(l, !i, "", 0, w[c], 0);
                    continue;
                }
                if (col->type != TC_STR) { /* numbers never wrap */
                    put_cell(l, !i, rest[i], strlen(rest[i]), w[c], right_aligned(col));
                    rest[i] = NULL;
                    continue;
                }
                const char *next;
                size_t m = wrap_piece(rest[i], w[c], &next);
                put_cell(l, !i, rest[i], m, w[c], right_aligned(col));
                rest[i] = *next ? next : NULL;
                more |= rest[i] != NULL;
            }
            flush(l, f);
        }
    }
}

/* The columns that name a row, repeated in front of every group: the TF_KEY columns wherever they are,
 * or without any the leading text columns (at least the first column) as long as they take at most
 * KEY_MAX columns together. Their indices go to keys[]; returns their width. */
enum { KEY_MAX = 40, KEY_MIN = 8 }; /* KEY_MIN: how narrow a key text column may wrap */
static int is_key(const int *keys, int nkeys, int c)
{
    for (int i = 0; i < nkeys; i++)
        if (keys[i] == c) return 1;
    return 0;
}

static int key_columns(const Table *t, const int *w, int *keys, int *nkeys)
{
    int width = 0, k = 0;
    for (int c = 0; c < t->ncols; c++)
        if (t->cols[c].flags & TF_KEY) width += (k ? GAP : 0) + w[c], keys[k++] = c;
    if (!k) {
        width = w[0], keys[k++] = 0;
        while (k < t->ncols - 1 && t->cols[k].type == TC_STR && width + GAP + w[k] <= KEY_MAX)
            width += GAP + w[k], keys[k] = k, k++;
    }
    *nkeys = k;
    return width;
}

int table_write_text(const Table *t, FILE *f)
{
    int n = t->ncols, nkeys = 1, ok = 0;
    int *w = calloc((size_t)n, sizeof *w), *minw = calloc((size_t)n, sizeof *minw);
    int *cols = calloc((size_t)n, sizeof *cols), *keys = calloc((size_t)n, sizeof *keys);
    Line l = {.f = f};
    char buf[CELL_MAX];
    if (!w || !minw || !cols || !keys) goto done;
    ok = 1;
    for (int c = 0; c < n; c++) {
        const TableCol *col = &t->cols[c];
        int lw = width_of(label(col)), uw = col->unit ? width_of(col->unit) : 0;
        w[c] = minw[c] = lw > uw ? lw : uw;
        if (t->width[c] > w[c]) w[c] = minw[c] = t->width[c]; /* table_set_width: whatever the cells */
        for (int r = 0; r < t->nrows; r++) {
            if (t->rows[r].rule) continue;
            int cw = width_of(cell_text(t, r, c, buf));
            if (cw > w[c]) w[c] = cw;
            if (col->type != TC_STR && cw > minw[c]) minw[c] = cw; /* numbers keep their width */
        }
        if (col->type == TC_STR && minw[c] < WRAP_MIN) minw[c] = w[c] < WRAP_MIN ? w[c] : WRAP_MIN;
    }
    int total = 0, narrowest = 0;
    for (int c = 0; c < n; c++) total += w[c] + (c ? GAP : 0), narrowest += minw[c] + (c ? GAP : 0);
    if (narrowest <= TABLE_WIDTH) {
        while (total > TABLE_WIDTH) { /* one table: narrow the widest text column that can wrap, by one */
            int widest = -1;
            for (int c = 0; c < n; c++)
                if (w[c] > minw[c] && (widest < 0 || w[c] > w[widest])) widest = c;
            w[widest]--, total--;
        }
    } else { /* groups of columns led by the keys: they leave room for the widest other column */
        key_columns(t, w, keys, &nkeys);
        int widest = 0, keyw = 0;
        for (int c = 0; c < n; c++)
            if (!is_key(keys, nkeys, c)) {
                int d = t->cols[c].type == TC_STR && w[c] > WRAP_MIN ? WRAP_MIN : w[c];
                if (d > widest) widest = d;
            }
        for (int i = 0; i < nkeys; i++) keyw += w[keys[i]] + (i ? GAP : 0);
        while (keyw > TABLE_WIDTH - GAP - widest) { /* narrow the widest key text column */
            int at = -1;
            for (int i = 0; i < nkeys; i++)
                if (t->cols[keys[i]].type == TC_STR && w[keys[i]] > KEY_MIN && (at < 0 || w[keys[i]] > w[at]))
                    at = keys[i];
            if (at < 0) break;
            w[at]--, keyw--;
        }
        int room = TABLE_WIDTH - keyw - GAP; /* a text column wraps to fit beside the keys */
        for (int c = 0; c < n; c++)
            if (t->cols[c].type == TC_STR && !is_key(keys, nkeys, c) && w[c] > room) w[c] = room > 1 ? room : 1;
    }
    if (t->title) table_put_prose(f, "%s", t->title);
    if (total <= TABLE_WIDTH) { /* one group, the columns in their order */
        for (int c = 0; c < n; c++) cols[c] = c;
        write_group(t, f, cols, n, w, &l);
        goto done;
    }
    /* groups of columns that fit, each led by the key columns */
    int keyw = 0, c = 0;
    for (int i = 0; i < nkeys; i++) keyw += w[keys[i]] + (i ? GAP : 0);
    for (int first = 1;; first = 0) {
        while (c < n && is_key(keys, nkeys, c)) c++;
        if (c >= n && !first) break;
        int k = nkeys, width = keyw;
        memcpy(cols, keys, sizeof *keys * (size_t)nkeys);
        if (!first) fputc('\n', f);
        while (c < n && (k == nkeys || width + GAP + w[c] <= TABLE_WIDTH)) {
            if (!is_key(keys, nkeys, c)) width += GAP + w[c], cols[k++] = c;
            c++;
        }
        write_group(t, f, cols, k, w, &l);
        if (c >= n) break;
    }
done:
    free(w);
    free(minw);
    free(cols);
    free(keys);
    return ok ? 0 : -1;
}

void table_put_prose(FILE *f, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (const char *para = text; *para;) { /* each line of text wraps by itself; its indent is kept, + 2 */
        const char *nl = strchr(para, '\n');
        size_t plen = nl ? (size_t)(nl - para) : strlen(para);
        char line[4096];
        memcpy(line, para, plen);
        line[plen] = '\0';
        int indent = 0;
        while (line[indent] == ' ') indent++;
        const char *s = line, *next;
        for (int first = 1; *s || first; first = 0) {
            int lead = first ? 0 : indent + 2;
            size_t m = wrap_piece(s, TABLE_WIDTH - lead, &next);
            while (m && s[m - 1] == ' ') m--;
            fprintf(f, "%*s%.*s\n", lead, "", (int)m, s);
            s = next;
        }
        para = nl ? nl + 1 : para + plen;
    }
}
