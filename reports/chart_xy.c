/* reports/chart_xy.c — line and scatter charts from Table columns (see chart_xy.h). */
#include "reports/chart_xy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/chart_frame.h"

enum { MARKERS_UP_TO = 400 }; /* lines with more points are drawn without hover markers */

typedef struct {
    int x, y, f;
    int tips[XY_MAX_TIPS];
} Cols;

typedef struct {
    HtmlDoc *d;
    const XySpec *sp;
    Svg s;
    Axis ax, ay;
    double xs, ys;
    int skipped;
} Ctx;

static int find(Ctx *c, const Table *t, const char *name)
{
    int k = table_col_find(t, name);
    if (k < 0) {
        Err e;
        err_set(&e, ST_SOFTWARE, "chart %s: the table has no column '%s'", c->sp->id, name);
        html_fail(c->d, &e);
    }
    return k;
}

static int resolve(Ctx *c, const XySeries *s, Cols *k)
{
    k->x = find(c, s->t, s->x_col);
    k->y = find(c, s->t, s->y_col);
    k->f = s->filter_col ? find(c, s->t, s->filter_col) : -1;
    int bad = k->x < 0 || k->y < 0 || (s->filter_col && k->f < 0);
    for (int i = 0; i < XY_MAX_TIPS; i++) {
        k->tips[i] = s->tips[i] ? find(c, s->t, s->tips[i]) : -1;
        bad |= s->tips[i] && k->tips[i] < 0;
    }
    return bad;
}

static int in_series(const XySeries *s, const Cols *k, int line)
{
    if (table_line_is_rule(s->t, line)) return 0;
    if (k->f < 0) return 1;
    const char *v = table_get_str(s->t, line, k->f);
    return v && !strcmp(v, s->filter_val);
}

/* The row's point in axis units; 0 when it cannot be drawn on these axes. */
static int point(const Ctx *c, const Table *t, int line, int xc, int yc, double *x, double *y)
{
    double vx, vy;
    if (!table_get_f64(t, line, xc, &vx) || !table_get_f64(t, line, yc, &vy)) return 0;
    vx *= c->xs, vy *= c->ys;
    if (!isfinite(vx) || !isfinite(vy) || (c->sp->x_log && vx <= 0) || (c->sp->y_log && vy <= 0)) return 0;
    *x = vx, *y = vy;
    return 1;
}

static void extend(double v, double *lo, double *hi) { *lo = fmin(*lo, v), *hi = fmax(*hi, v); }

/* Data ranges over the n series; rows the axes cannot show are counted over the first `counted`. */
static void ranges(Ctx *c, const XySeries *list, const Cols *cols, int n, int counted, double *x0, double *x1,
                   double *y0, double *y1)
{
    for (int i = 0; i < n; i++)
        for (int l = 0; l < table_lines(list[i].t); l++) {
            double x, y;
            if (!in_series(&list[i], &cols[i], l)) continue;
            if (point(c, list[i].t, l, cols[i].x, cols[i].y, &x, &y))
                extend(x, x0, x1), extend(y, y0, y1);
            else if (i < counted)
                c->skipped++;
        }
}

/* "x_col 12, y_col 3.4, tip 5" for a point's <title>. */
static void tip_text(const XySeries *s, const Cols *k, int line, int count, char *buf, size_t size)
{
    char v[128];
    size_t n = (size_t)snprintf(buf, size, "%s", s->label);
    int cols[2 + XY_MAX_TIPS] = {k->x, k->y};
    int nc = 2;
    for (int i = 0; i < XY_MAX_TIPS; i++)
        if (k->tips[i] >= 0) cols[nc++] = k->tips[i];
    for (int i = 0; i < nc && n < size; i++) {
        const TableCol *col = table_col(s->t, cols[i]);
        const char *str = table_get_str(s->t, line, cols[i]);
        if (!str) table_cell_text(s->t, line, cols[i], TABLE_TEXT, v, sizeof v), str = v;
        n += (size_t)snprintf(buf + n, size - n, "%s%s %s%s%s", i ? ", " : ": ", col->label ? col->label : col->name,
                              str, col->unit ? " " : "", col->unit ? col->unit : "");
    }
    if (count > 1 && n < size) snprintf(buf + n, size - n, " (and %d more rows at this point)", count - 1);
}

static void put_point(Ctx *c, const XySeries *s, const Cols *k, int line, int count, double px, double py, int marker,
                      const char *colour, double r)
{
    char vx[64], vy[64], tip[768];
    table_cell_text(s->t, line, k->x, TABLE_CSV, vx, sizeof vx);
    table_cell_text(s->t, line, k->y, TABLE_CSV, vy, sizeof vy);
    tip_text(s, k, line, count, tip, sizeof tip);
    svg_put(&c->s,
            "<g class=\"pt\" data-x=\"%s\" data-y=\"%s\" data-n=\"%d\" data-line=\"%d\" data-px=\"$\" data-py=\"$\">"
            "<title>%s</title>",
            vx, vy, count, line, px, py, tip);
    svg_marker(&c->s, marker, px, py, r, colour);
    svg_put(&c->s, "</g>\n");
}

/* Points, one per XY_BIN_PX square: the first row of each square is drawn, with the count. */
static void draw_points(Ctx *c, const XySeries *s, const Cols *k, int marker, const char *colour)
{
    int n = table_lines(s->t), cap = 1, ncells = 0;
    while (cap < 2 * n + 2) cap *= 2; /* open addressing over the squares' keys, at most half full */
    size_t m = (size_t)(n ? n : 1);
    long *key = malloc(sizeof *key * m);
    int *first = malloc(sizeof *first * m), *count = calloc(m, sizeof *count),
        *slot = malloc(sizeof *slot * (size_t)cap);
    if (!key || !first || !count || !slot) {
        free(key), free(first), free(count), free(slot);
        Err e;
        err_set(&e, ST_NOMEM, "out of memory drawing chart %s", c->sp->id);
        html_fail(c->d, &e);
        return;
    }
    for (int i = 0; i < cap; i++) slot[i] = -1;
    for (int l = 0; l < n; l++) {
        double x, y;
        if (!in_series(s, k, l) || !point(c, s->t, l, k->x, k->y, &x, &y)) continue;
        long kv = (long)floor(axis_px(&c->ax, x) / XY_BIN_PX) * 100000L + (long)floor(axis_px(&c->ay, y) / XY_BIN_PX);
        unsigned h = (unsigned)(kv * 2654435761u) & (unsigned)(cap - 1);
        while (slot[h] >= 0 && key[slot[h]] != kv) h = (h + 1) & (unsigned)(cap - 1);
        if (slot[h] < 0) slot[h] = ncells, key[ncells] = kv, first[ncells] = l, ncells++;
        count[slot[h]]++;
    }
    for (int i = 0; i < ncells; i++) {
        double x, y;
        point(c, s->t, first[i], k->x, k->y, &x, &y);
        put_point(c, s, k, first[i], count[i], axis_px(&c->ax, x), axis_px(&c->ay, y), marker, colour, 3.6);
    }
    free(key), free(first), free(count), free(slot);
}

/* A polyline (or steps), broken where a row cannot be drawn; hover markers on short series. */
static void draw_line(Ctx *c, const XySeries *s, const Cols *k, const char *cls, const char *colour, int marker)
{
    int pen = 0, npts = 0;
    svg_put(&c->s, "<path class=\"%r\" fill=\"none\" stroke=\"%r\" stroke-width=\"2\"%r d=\"", cls, colour,
            s->dashed ? " stroke-dasharray=\"6 4\"" : "");
    for (int l = 0; l < table_lines(s->t); l++) {
        double x, y;
        if (!in_series(s, k, l)) continue;
        if (!point(c, s->t, l, k->x, k->y, &x, &y)) {
            pen = 0;
            continue;
        }
        double nx = axis_px(&c->ax, x), ny = axis_px(&c->ay, y);
        if (!pen)
            svg_put(&c->s, "M$,$ ", nx, ny);
        else if (s->kind == XY_STEPS)
            svg_put(&c->s, "H$ V$ ", nx, ny);
        else
            svg_put(&c->s, "L$,$ ", nx, ny);
        pen = 1, npts++;
    }
    svg_put(&c->s, "\"/>\n");
    if (npts > MARKERS_UP_TO) return;
    for (int l = 0; l < table_lines(s->t); l++) {
        double x, y;
        if (in_series(s, k, l) && point(c, s->t, l, k->x, k->y, &x, &y))
            put_point(c, s, k, l, 1, axis_px(&c->ax, x), axis_px(&c->ay, y), marker, colour, 2.4);
    }
}

/* Event marks: a dashed line across the plot at the row's x and a marker on its y (at the top when
 * the y cannot be drawn, e.g. an inf amax on a log axis). */
static void draw_events(Ctx *c, const XyEvents *ev, int marker, double top, double base)
{
    int xc = find(c, ev->t, ev->x_col), yc = find(c, ev->t, ev->y_col), sc = find(c, ev->t, ev->status_col);
    if (xc < 0 || yc < 0 || sc < 0) return;
    char vx[64], tip[256];
    for (int l = 0; l < table_lines(ev->t); l++) {
        const char *st = table_get_str(ev->t, l, sc);
        double x, y, py = top + 9;
        if (!st || !strcmp(st, ev->ok_value) || !table_get_f64(ev->t, l, xc, &x)) continue;
        x *= c->xs;
        if (!isfinite(x) || (c->sp->x_log && x <= 0)) continue;
        if (point(c, ev->t, l, xc, yc, &x, &y)) py = axis_px(&c->ay, y);
        double px = axis_px(&c->ax, x);
        table_cell_text(ev->t, l, xc, TABLE_CSV, vx, sizeof vx);
        snprintf(tip, sizeof tip, "%s %s: %s", table_col(ev->t, xc)->name, vx, st);
        svg_put(&c->s, "<g class=\"ev\" data-x=\"%s\" data-status=\"%s\"><title>%s</title>", vx, st, tip);
        svg_put(&c->s, "<line class=\"event\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\"/>", px, top, px, base);
        svg_marker(&c->s, marker, px, py - 9, 5, "#b3261e");
        svg_put(&c->s, "</g>\n");
    }
}

void chart_xy(HtmlDoc *d, const XySpec *sp)
{
    Ctx c = {.d = d, .sp = sp, .xs = sp->x_scale > 0 ? sp->x_scale : 1, .ys = sp->y_scale > 0 ? sp->y_scale : 1};
    Cols cols[XY_MAX_SERIES + 1];
    int bad = 0, n = sp->nseries;
    XySeries all[XY_MAX_SERIES + 1];
    memcpy(all, sp->series, sizeof *all * (size_t)n);
    if (sp->front.t) all[n++] = sp->front;
    for (int i = 0; i < n; i++) {
        Err te;
        if (table_check(all[i].t, &te)) return html_fail(d, &te); /* an incomplete table draws no chart */
    }
    for (int i = 0; i < n; i++) bad |= resolve(&c, &all[i], &cols[i]);
    html_fig_begin(d, sp->id, "xy", sp->title, sp->desc);
    const Table *under = sp->table ? sp->table : sp->nseries ? sp->series[0].t : NULL;
    if (!bad) {
        double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
        ranges(&c, all, cols, n, sp->nseries, &x0, &x1, &y0, &y1); /* the front's rows are series rows too */
        if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
        for (int i = 0; i < sp->nlimits && i < 2; i++)
            if (isfinite(sp->limits[i].x * c.xs) && (!sp->x_log || sp->limits[i].x > 0))
                extend(sp->limits[i].x * c.xs, &x0, &x1);
        const double W = 960, H = 430, left = 78, right = 24, top = 12, base = H - 52;
        if (sp->x_log)
            axis_log(&c.ax, x0, x1, 8, left, W - right);
        else
            axis_linear(&c.ax, sp->x_zero ? fmin(0, x0) : x0, x1, 8, left, W - right);
        if (sp->y_log)
            axis_log(&c.ay, y0, y1, 7, base, top);
        else
            axis_linear(&c.ay, sp->y_zero ? fmin(0, y0) : y0, y1, 6, base, top);
        svg_begin(&c.s, d->f, sp->id, W, H, sp->title);
        frame_y_axis(&c.s, &c.ay, left, W - right, 16, sp->y_axis);
        frame_x_axis(&c.s, &c.ax, base, top, sp->x_axis);
        svg_put(&c.s, "<g class=\"series\">\n");
        for (int i = 0; i < sp->nseries; i++) {
            const XySeries *s = &sp->series[i];
            svg_put(&c.s, "<g class=\"s\" data-series=\"%s\" data-kind=\"%d\">\n", s->label, (int)s->kind);
            if (s->kind == XY_POINTS)
                draw_points(&c, s, &cols[i], s->style, svg_colour(s->style));
            else
                draw_line(&c, s, &cols[i], "line", svg_colour(s->style), s->style);
            svg_put(&c.s, "</g>\n");
        }
        if (sp->front.t) {
            svg_put(&c.s, "<g class=\"s front-series\" data-series=\"%s\">\n", sp->front.label);
            XySeries f = sp->front;
            f.kind = XY_STEPS;
            draw_line(&c, &f, &cols[n - 1], "front", "currentColor", 5);
            svg_put(&c.s, "</g>\n");
        }
        for (int i = 0; i < sp->nevents; i++) draw_events(&c, &sp->events[i], i ? 2 : 4, top, base);
        for (int i = 0; i < sp->nlimits && i < 2; i++) {
            double x = sp->limits[i].x * c.xs;
            if (!isfinite(x) || (sp->x_log && x <= 0)) continue;
            double px = axis_px(&c.ax, x);
            char vx[40];
            snprintf(vx, sizeof vx, "%.17g", sp->limits[i].x);
            svg_put(&c.s, "<g class=\"limit\" data-x=\"%s\"><title>%s</title>", vx, sp->limits[i].label);
            svg_put(&c.s, "<line class=\"ref%d\" x1=\"$\" y1=\"$\" x2=\"$\" y2=\"$\"/></g>\n", i, px, top, px, base);
        }
        if (sp->mark.t) {
            int xc = find(&c, sp->mark.t, sp->mark.x_col), yc = find(&c, sp->mark.t, sp->mark.y_col);
            double x, y;
            if (xc >= 0 && yc >= 0 && point(&c, sp->mark.t, sp->mark.line, xc, yc, &x, &y)) {
                double px = axis_px(&c.ax, x), py = axis_px(&c.ay, y);
                char vx[64], vy[64];
                table_cell_text(sp->mark.t, sp->mark.line, xc, TABLE_CSV, vx, sizeof vx);
                table_cell_text(sp->mark.t, sp->mark.line, yc, TABLE_CSV, vy, sizeof vy);
                svg_put(
                    &c.s,
                    "<g class=\"mark\" data-x=\"%s\" data-y=\"%s\"><circle class=\"ring\" cx=\"$\" cy=\"$\" r=\"9\"/>",
                    vx, vy, px, py);
                svg_put(&c.s, "<text x=\"$\" y=\"$\" text-anchor=\"%r\">%s</text></g>\n",
                        px > W / 2 ? px - 12 : px + 12, py - 12, px > W / 2 ? "end" : "start", sp->mark.label);
            }
        }
        svg_put(&c.s, "</g>\n");
        svg_end(&c.s);
        legend_begin(&c.s);
        for (int i = 0; i < sp->nseries; i++) {
            const XySeries *s = &sp->series[i];
            legend_item(&c.s, s->kind == XY_POINTS ? SW_MARKER : SW_LINE, svg_colour(s->style), s->style, s->label);
        }
        if (sp->front.t) legend_item(&c.s, SW_FRONT, NULL, 0, sp->front.label);
        for (int i = 0; i < sp->nevents; i++) legend_item(&c.s, SW_EVENT, NULL, i ? 2 : 4, sp->events[i].label);
        if (sp->mark.t) legend_item(&c.s, SW_RING, NULL, 0, sp->mark.label);
        for (int i = 0; i < sp->nlimits && i < 2; i++)
            legend_item(&c.s, i ? SW_REF1 : SW_REF0, NULL, 0, sp->limits[i].label);
        legend_end(&c.s);
        Err e;
        if (svg_status(&c.s, &e)) html_fail(d, &e);
        if (c.skipped)
            html_p(d, "%d value%s not drawn: %s.", c.skipped, c.skipped == 1 ? " is" : "s are",
                   sp->x_log || sp->y_log ? "zero, negative or not finite, which a log axis cannot show"
                                          : "not finite");
    }
    if (under) html_table(d, under, NULL, sp->table_caption, sp->collapse_after);
    html_fig_end(d);
}
