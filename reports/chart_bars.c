/* reports/chart_bars.c — horizontal stacked and grouped bars from a Table (see chart_bars.h). */
#include "reports/chart_bars.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/chart_frame.h"

enum { MAX_KEYS = 32, MAX_BARS = 512, MAX_SEGS = 24, LABEL_MAX = 96 };

typedef struct {
    int line, col, idx; /* the cell, and its segment index (style and legend) */
} Seg;

typedef struct {
    int line, def, key, group; /* line: the first row of the bar */
    Seg seg[MAX_SEGS];
    int nseg;
    double total, lo, hi; /* table units */
    int has_band;
} Bar;

typedef struct {
    const BarSpec *sp;
    const Table *t;
    int cat, cat2, cat3, series, stack, skip, only, cols[BAR_MAX_DEFS][BAR_MAX_SEGS], ncols[BAR_MAX_DEFS];
    int lo[BAR_MAX_DEFS], hi[BAR_MAX_DEFS], tol[BAR_MAX_DEFS], base[BAR_MAX_DEFS], ref[BAR_MAX_REFS];
    char keys[MAX_KEYS][LABEL_MAX];
    int nkeys;
    char segs[MAX_SEGS][LABEL_MAX]; /* segment labels */
    int nsegs;
    char groups[MAX_BARS][LABEL_MAX];
    int ngroups;
    Bar bars[MAX_BARS], tmp[MAX_BARS];
    int nbars;
    int dropped; /* cells beyond MAX_BARS bars, MAX_KEYS keys or MAX_SEGS segments: not drawn, said */
} Ctx;

static int col_or_fail(HtmlDoc *d, const Ctx *c, const char *name, int *bad)
{
    if (!name) return -1;
    int k = table_col_find(c->t, name);
    if (k < 0) {
        Err e;
        err_set(&e, ST_SOFTWARE, "chart %s: the table has no column '%s'", c->sp->id, name);
        html_fail(d, &e);
        *bad = 1;
    }
    return k;
}

/* The text of a cell as a label (strings as they are, numbers as the text table shows them). */
static void cell_label(const Table *t, int line, int col, char *buf)
{
    const char *s = table_get_str(t, line, col);
    if (s)
        snprintf(buf, LABEL_MAX, "%s", s);
    else
        table_cell_text(t, line, col, TABLE_TEXT, buf, LABEL_MAX);
}

static int index_of(char (*names)[LABEL_MAX], int *n, int max, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(names[i], name)) return i;
    if (*n == max) return -1;
    snprintf(names[*n], LABEL_MAX, "%s", name);
    return (*n)++;
}

static int resolve(HtmlDoc *d, Ctx *c)
{
    const BarSpec *sp = c->sp;
    int bad = 0;
    c->cat = col_or_fail(d, c, sp->cat_col, &bad);
    c->cat2 = col_or_fail(d, c, sp->cat_col2, &bad);
    c->cat3 = col_or_fail(d, c, sp->cat_col3, &bad);
    c->only = col_or_fail(d, c, sp->only_col, &bad);
    c->series = col_or_fail(d, c, sp->series_col, &bad);
    c->stack = col_or_fail(d, c, sp->stack_col, &bad);
    c->skip = col_or_fail(d, c, sp->skip_col, &bad);
    for (int b = 0; b < sp->nbars; b++) {
        const BarDef *bd = &sp->bars[b];
        for (c->ncols[b] = 0; c->ncols[b] < BAR_MAX_SEGS && bd->cols[c->ncols[b]]; c->ncols[b]++)
            c->cols[b][c->ncols[b]] = col_or_fail(d, c, bd->cols[c->ncols[b]], &bad);
        c->lo[b] = col_or_fail(d, c, bd->lo_col, &bad);
        c->hi[b] = col_or_fail(d, c, bd->hi_col, &bad);
        c->tol[b] = col_or_fail(d, c, bd->tol_pct_col, &bad);
        c->base[b] = col_or_fail(d, c, bd->tol_base_col, &bad);
    }
    for (int r = 0; r < sp->nrefs; r++) c->ref[r] = col_or_fail(d, c, sp->refs[r].col, &bad);
    if (!bad && c->stack < 0) /* column stacking: the segments are the first bar's columns */
        for (int k = 0; k < c->ncols[0]; k++) {
            const TableCol *col = table_col(c->t, c->cols[0][k]);
            index_of(c->segs, &c->nsegs, MAX_SEGS,
                     sp->seg_labels[k] ? sp->seg_labels[k]
                     : col->label      ? col->label
                                       : col->name);
        }
    return bad;
}

static void key_of(const Ctx *c, int line, int def, char *key)
{
    const BarSpec *sp = c->sp;
    if (c->series >= 0) {
        cell_label(c->t, line, c->series, key);
        if (sp->nbars > 1) snprintf(key + strlen(key), LABEL_MAX - strlen(key), " %s", sp->bars[def].label);
    } else {
        snprintf(key, LABEL_MAX, "%s", sp->nbars > 1 ? sp->bars[def].label : "");
    }
}

/* Add the cell to the bar as segment idx; 0 when the cell has no drawable value. */
static int add_seg(Bar *b, const Table *t, int line, int col, int idx)
{
    double v;
    if (b->nseg == MAX_SEGS || !table_get_f64(t, line, col, &v) || !isfinite(v) || v < 0) return 0;
    b->seg[b->nseg++] = (Seg){line, col, idx};
    return 1;
}

/* The bar's interval: lo and hi columns, or base x (1 -+ pct / 100). */
static void band(const Ctx *c, int l, int d, Bar *b)
{
    double pct, base;
    if (c->lo[d] >= 0 && c->hi[d] >= 0)
        b->has_band = table_get_f64(c->t, l, c->lo[d], &b->lo) && table_get_f64(c->t, l, c->hi[d], &b->hi);
    else if (c->tol[d] >= 0 && c->base[d] >= 0 && table_get_f64(c->t, l, c->tol[d], &pct) &&
             table_get_f64(c->t, l, c->base[d], &base))
        b->has_band = 1, b->lo = base * (1 - pct / 100), b->hi = base * (1 + pct / 100);
    b->has_band = b->has_band && isfinite(b->lo) && isfinite(b->hi) && b->lo >= 0;
}

/* Every row's bars, grouped by category in first-seen order. */
static void collect(Ctx *c)
{
    const BarSpec *sp = c->sp;
    char cat[LABEL_MAX], key[LABEL_MAX], lab[LABEL_MAX];
    Bar *tmp = c->tmp;
    int n = 0;
    for (int l = 0; l < table_lines(c->t); l++) {
        if (table_line_is_rule(c->t, l)) continue;
        if (c->skip >= 0 && (cell_label(c->t, l, c->skip, lab), !strcmp(lab, sp->skip_val))) continue;
        if (c->only >= 0 && (cell_label(c->t, l, c->only, lab), strcmp(lab, sp->only_val))) continue;
        cell_label(c->t, l, c->cat, cat);
        for (int k = 0; k < 2; k++) {
            int more = k ? c->cat3 : c->cat2;
            if (more < 0) continue;
            char joined[2 * LABEL_MAX + 8];
            cell_label(c->t, l, more, lab);
            snprintf(joined, sizeof joined, "%s \xc2\xb7 %s", cat, lab);
            size_t len = strlen(joined) < LABEL_MAX ? strlen(joined) : LABEL_MAX - 1;
            memcpy(cat, joined, len);
            cat[len] = '\0';
        }
        int g = index_of(c->groups, &c->ngroups, MAX_BARS, cat);
        for (int d = 0; d < sp->nbars; d++) {
            key_of(c, l, d, key);
            int k = index_of(c->keys, &c->nkeys, MAX_KEYS, key);
            Bar *b = &tmp[n < MAX_BARS ? n : 0];
            if (g >= 0 && k >= 0 && c->stack >= 0 && n && tmp[n - 1].group == g && tmp[n - 1].key == k) {
                b = &tmp[n - 1]; /* the next row of a stacked bar */
            } else if (g < 0 || k < 0 || n == MAX_BARS) {
                c->dropped++;
                continue;
            } else {
                memset(b, 0, sizeof *b);
                *b = (Bar){.line = l, .def = d, .key = k, .group = g};
            }
            int added = 0;
            if (c->stack >= 0) {
                cell_label(c->t, l, c->stack, lab);
                int idx = index_of(c->segs, &c->nsegs, MAX_SEGS, lab);
                added = idx >= 0 && add_seg(b, c->t, l, c->cols[d][0], idx);
                c->dropped += idx < 0 || (!added && b->nseg == MAX_SEGS);
            } else {
                for (int s = 0; s < c->ncols[d]; s++) added |= add_seg(b, c->t, l, c->cols[d][s], s);
            }
            if (b == &tmp[n] && added) {
                band(c, l, d, b);
                n++;
            }
        }
    }
    for (int i = 0; i < n; i++) { /* totals: the stack's sum, or the longest overlaid bar */
        Bar *b = &tmp[i];
        for (int s = 0; s < b->nseg; s++) {
            double v;
            table_get_f64(c->t, b->seg[s].line, b->seg[s].col, &v);
            b->total = sp->bars[b->def].overlay ? fmax(b->total, v) : b->total + v;
        }
    }
    for (int g = 0; g < c->ngroups; g++) /* stable by group */
        for (int i = 0; i < n; i++)
            if (tmp[i].group == g) c->bars[c->nbars++] = tmp[i];
}

/* Colour and pattern of segment s of a bar with key k. */
static void style_of(const Ctx *c, int k, int s, int *colour, int *pattern)
{
    int many_keys = c->nkeys > 1, many_segs = c->nsegs > 1;
    int i = many_keys ? k : many_segs ? s : 0;
    *colour = i % SVG_NCOLOURS;
    *pattern = many_keys && many_segs ? s % SVG_NPATTERNS : (i + i / SVG_NCOLOURS) % SVG_NPATTERNS;
}

static double ref_value(const Ctx *c, const Bar *b, int r, double *v)
{
    if (!table_get_f64(c->t, b->line, c->ref[r], v) || !isfinite(*v)) return 0;
    *v *= c->sp->refs[r].frac > 0 ? c->sp->refs[r].frac : 1;
    return 1;
}

static int group_starts(const Ctx *c, int i) { return i == 0 || c->bars[i - 1].group != c->bars[i].group; }
static int group_ends(const Ctx *c, int i) { return i + 1 == c->nbars || c->bars[i + 1].group != c->bars[i].group; }

enum { W = 960, BH = 16, GAP = 4, GGAP = 14, TOP = 8, AXIS_H = 52 };

/* The label at a bar's end: its key and total ("te-fp8: 74.90 GB"). */
static void value_label(const Ctx *c, const Bar *b, double scale, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%.*f %s", c->keys[b->key], c->keys[b->key][0] ? ": " : "", c->sp->decimals,
             b->total * scale, c->sp->unit);
}

static void draw_bar(Svg *s, const Ctx *c, const Axis *ax, double scale, const Bar *b, double y)
{
    const BarSpec *sp = c->sp;
    char fill[64], lab[160], raw[64], tip[512];
    int overlay = sp->bars[b->def].overlay;
    double cum = 0, end = ax->px0;
    for (int k = 0; k < b->nseg; k++) {
        const Seg *g = &b->seg[k];
        double v;
        int colour, pattern;
        table_get_f64(c->t, g->line, g->col, &v);
        style_of(c, b->key, g->idx, &colour, &pattern);
        double x0 = axis_px(ax, overlay ? 0 : cum * scale), x1 = axis_px(ax, (overlay ? v : cum + v) * scale);
        cum += v;
        table_cell_text(c->t, g->line, g->col, TABLE_CSV, raw, sizeof raw);
        table_cell_text(c->t, g->line, g->col, TABLE_TEXT, lab, sizeof lab);
        const TableCol *col = table_col(c->t, g->col);
        const char *what = c->stack >= 0 || !overlay ? c->segs[g->idx] : col->label ? col->label : col->name;
        snprintf(tip, sizeof tip, "%s%s%s: %s %.*f %s (%s%s%s)", c->groups[b->group], c->keys[b->key][0] ? " · " : "",
                 c->keys[b->key], what, sp->decimals, v * scale, sp->unit, lab, col->unit ? " " : "",
                 col->unit ? col->unit : "");
        svg_put(
            s,
            "<rect class=\"bar\" x=\"$\" y=\"$\" width=\"$\" height=\"$\" fill=\"%r\" data-v=\"%s\" data-line=\"%d\" "
            "data-col=\"%s\" data-cat=\"%s\" data-key=\"%s\" data-seg=\"%s\"%r><title>%s</title></rect>\n",
            x0, y, x1 - x0, (double)BH, svg_fill(s, colour, pattern, fill), raw, g->line, col->name,
            c->groups[b->group], c->keys[b->key], c->segs[g->idx], overlay ? " data-overlay=\"1\"" : "", tip);
        end = fmax(end, x1);
    }
    if (b->has_band) {
        double xl = axis_px(ax, b->lo * scale), xh = axis_px(ax, b->hi * scale), ym = y + BH / 2.0;
        snprintf(tip, sizeof tip, "%s: %s %.*f to %.*f %s", c->groups[b->group],
                 sp->band_label ? sp->band_label : "interval", sp->decimals, b->lo * scale, sp->decimals, b->hi * scale,
                 sp->unit);
        svg_put(s,
                "<path class=\"whisker\" d=\"M$,$ H$ M$,$ V$ M$,$ V$\" fill=\"none\" data-lo=\"%g\" data-hi=\"%g\" "
                "data-line=\"%d\"><title>%s</title></path>\n",
                xl, ym, xh, xl, y + 2, y + BH - 2.0, xh, y + 2, y + BH - 2.0, b->lo, b->hi, b->line, tip);
        end = fmax(end, xh);
    }
    for (int r = 0; r < sp->nrefs; r++) {
        double v;
        if (!ref_value(c, b, r, &v)) continue;
        double xr = axis_px(ax, v * scale);
        snprintf(tip, sizeof tip, "%s: %.*f %s", sp->refs[r].label, sp->decimals, v * scale, sp->unit);
        svg_put(
            s,
            "<line class=\"ref%d\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\" data-v=\"%g\" data-line=\"%d\"><title>%s</title>"
            "</line>\n",
            r, xr, y - 3, xr, y + BH + 3.0, v, b->line, tip);
        end = fmax(end, xr);
    }
    value_label(c, b, scale, lab, sizeof lab);
    svg_put(s, "<text class=\"value\" x=\"$\" y=\"$\" data-total=\"%g\">%s</text>\n", end + 6, y + BH - 4.0, b->total,
            lab);
}

static void draw(HtmlDoc *d, Ctx *c)
{
    const BarSpec *sp = c->sp;
    double scale = sp->scale > 0 ? sp->scale : 1, vmax = 0, v;
    for (int i = 0; i < c->nbars; i++) {
        const Bar *b = &c->bars[i];
        vmax = fmax(vmax, b->has_band ? fmax(b->total, b->hi) : b->total);
        for (int r = 0; r < sp->nrefs; r++)
            if (ref_value(c, b, r, &v)) vmax = fmax(vmax, v);
    }
    double lw = 40, rw = 40, H = TOP + AXIS_H;
    char lab[160];
    for (int g = 0; g < c->ngroups; g++) lw = fmax(lw, svg_text_width(c->groups[g], 12) + 14);
    for (int i = 0; i < c->nbars; i++) { /* room for the value labels: "key: 12.34 GB" */
        value_label(c, &c->bars[i], scale, lab, sizeof lab);
        rw = fmax(rw, svg_text_width(lab, 12) + 16);
    }
    lw = fmin(lw, 380), rw = fmin(rw, 300);
    for (int i = 0; i < c->nbars; i++) H += BH + GAP + (group_ends(c, i) ? GGAP : 0);
    Axis ax;
    axis_linear(&ax, 0, vmax * scale, 6, lw, W - rw);
    Svg s;
    svg_begin(&s, d->f, sp->id, W, H, sp->title);
    frame_x_axis(&s, &ax, H - AXIS_H, TOP - 4, sp->axis);
    svg_put(&s, "<g class=\"bars\" data-scale=\"%g\" data-x0=\"$\">\n", scale, ax.px0);
    double y = TOP;
    for (int i = 0; i < c->nbars; i++) {
        const Bar *b = &c->bars[i];
        if (group_starts(c, i)) {
            int nb = 0;
            char fit[LABEL_MAX + 4];
            while (i + nb < c->nbars && c->bars[i + nb].group == b->group) nb++;
            svg_fit_text(c->groups[b->group], 12, lw - 12, fit, sizeof fit);
            svg_put(&s, "<text class=\"cat\" x=\"$\" y=\"$\" text-anchor=\"end\"><title>%s</title>%s</text>\n", lw - 8,
                    y + (nb * (BH + GAP) - GAP) / 2.0 + 4, c->groups[b->group], fit);
        }
        draw_bar(&s, c, &ax, scale, b, y);
        y += BH + GAP + (group_ends(c, i) ? GGAP : 0);
    }
    svg_put(&s, "</g>\n");
    /* the legend's swatches use the chart's patterns: mark them before svg_end writes the defs */
    char fills[MAX_KEYS + MAX_SEGS][64];
    int nf = 0, colour, pattern;
    for (int k = 0; c->nkeys > 1 && k < c->nkeys; k++) {
        style_of(c, k, 0, &colour, &pattern);
        svg_fill(&s, colour, pattern, fills[nf++]);
    }
    for (int k = 0; c->nsegs > 1 && k < c->nsegs; k++) {
        style_of(c, 0, k, &colour, &pattern);
        svg_fill(&s, c->nkeys > 1 ? 7 : colour, pattern, fills[nf++]);
    }
    svg_end(&s);
    legend_begin(&s);
    nf = 0;
    for (int k = 0; c->nkeys > 1 && k < c->nkeys; k++) legend_item(&s, SW_FILL, fills[nf++], 0, c->keys[k]);
    for (int k = 0; c->nsegs > 1 && k < c->nsegs; k++) legend_item(&s, SW_FILL, fills[nf++], 0, c->segs[k]);
    for (int r = 0; r < sp->nrefs; r++) legend_item(&s, r ? SW_REF1 : SW_REF0, NULL, 0, sp->refs[r].label);
    int any_band = 0;
    for (int i = 0; i < c->nbars; i++) any_band |= c->bars[i].has_band;
    if (any_band) legend_item(&s, SW_WHISKER, NULL, 0, sp->band_label ? sp->band_label : "interval");
    legend_end(&s);
    Err e;
    if (svg_status(&s, &e)) html_fail(d, &e);
}

void chart_bars(HtmlDoc *d, const Table *t, const BarSpec *sp)
{
    Err te;
    if (table_check(t, &te)) return html_fail(d, &te); /* an incomplete table draws no chart */
    Ctx *c = calloc(1, sizeof *c);
    if (!c) {
        Err e;
        err_set(&e, ST_NOMEM, "out of memory drawing chart %s", sp->id);
        html_fail(d, &e);
        return;
    }
    c->sp = sp, c->t = t;
    html_fig_begin(d, sp->id, "bars", sp->title, sp->desc);
    if (!resolve(d, c)) {
        collect(c);
        if (c->nbars)
            draw(d, c);
        else
            html_p(d, "(nothing to draw: no row has a value)");
        if (c->dropped)
            html_p(d, "%d value%s not drawn: a bar chart holds at most %d bars, %d keys and %d segments a bar.",
                   c->dropped, c->dropped == 1 ? " is" : "s are", MAX_BARS, MAX_KEYS, MAX_SEGS);
    }
    html_table(d, t, NULL, sp->table_caption, sp->collapse_after);
    html_fig_end(d);
    free(c);
}
