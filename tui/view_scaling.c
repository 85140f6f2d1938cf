/* tui/view_scaling.c — the Scaling screen: Transformer Engine's delayed scaling
 * over an amax trace. Per step: the scale the cast used, where values flush to
 * zero or saturate at that scale, drawn as a log-scale chart and listed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fp8/scale.h"
#include "tui/model.h"
#include "tui/view.h"

static int bounds_of(const TuiState *s, int i, ScaleBounds *b)
{
    return scale_bounds(s->dcfg.fmt, s->steps[i].scale_used, b) == 0;
}

static const char *cast_word(const TuiState *s, const DelayedStep *st)
{
    float xs = st->amax * st->scale_used;
    if (isnan(st->amax)) return "nan";
    if (isinf(st->amax)) return "inf";
    return isinf(xs) || fp8_overflows(s->dcfg.fmt, xs) ? "saturates" : "ok";
}

static void detail(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    const DelayedStep *st = &s->steps[s->step_cur];
    ScaleBounds b;
    char n1[32], n2[32], n3[32];
    TuiLine buf[8];
    TuiLines L = {buf, 0, 8};
    if (s->step_cur > 0 && s->steps[s->step_cur - 1].why == AMAX_OK)
        lines_add(&L, SY_HEAD, "step %d: scale %s = %g/%s", s->step_cur + 1, tui_fmt_num(st->scale_used, 6, n1, 32),
                  (double)fp8_max(s->dcfg.fmt) / ldexp(1, s->dcfg.margin),
                  tui_fmt_num(s->steps[s->step_cur - 1].window_amax, 6, n2, 32));
    else
        lines_add(&L, SY_HEAD, "step %d: scale %s", s->step_cur + 1, tui_fmt_num(st->scale_used, 6, n1, 32));
    if (bounds_of(s, s->step_cur, &b)) {
        lines_add(&L, SY_WARN, " |x| <= %s becomes 0", tui_fmt_num(b.flush_below, 4, n1, 32));
        lines_add(&L, SY_PLAIN, " |x| < %s: min subnormal", tui_fmt_num(b.min_sub_below, 4, n2, 32));
        lines_add(&L, SY_PLAIN, " |x| > %s saturates", tui_fmt_num(b.saturate_above, 4, n3, 32));
    }
    lines_add(&L, strcmp(cast_word(s, st), "ok") ? SY_BAD : SY_GOOD, " amax %s: %s", tui_fmt_num(st->amax, 5, n1, 32),
              cast_word(s, st));
    lines_paint(&L, p, r, 0);
}

/* log10 magnitude -> chart row (top = hi) */
static int row_of(double v, double lo, double hi, int top, int rows)
{
    if (!(v > 0) || !isfinite(v)) return -1;
    double t = (hi - log10(v)) / (hi - lo);
    if (t < -1e-9 || t > 1 + 1e-9) return -1;
    return top + (int)floor(t * (rows - 1) + 0.5);
}

static void chart(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    int n = s->ntrace, lab = 6, plot_rows = r.h - 2;
    int cw = (r.w - lab - 1) / (n ? n : 1);
    if (cw > 3) cw = 3;
    if (cw < 1) cw = 1;
    int x = r.x;
    x += 1 + paint_text(p, r.y, x, 1, SY_MARK, paint_glyph(p, G_DOT));
    x += 1 + paint_text(p, r.y, x, r.w, SY_PLAIN, "amax");
    x += 1 + paint_text(p, r.y, x, 1, SY_BAD, paint_glyph(p, G_SAT));
    x += 1 + paint_text(p, r.y, x, r.w, SY_PLAIN, "saturates above");
    x += 1 + paint_text(p, r.y, x, 1, SY_WARN, paint_glyph(p, G_FLUSH));
    x += 1 + paint_text(p, r.y, x, r.w - x + r.x, SY_PLAIN, "flushes below");
    paint_text(p, r.y, x, r.w - x + r.x, SY_DIM, "(log)");
    /* the range: the amax values, widened by the bounds but at most 3 decades above / 6 below them */
    double amin = INFINITY, amaxv = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        float a = s->steps[i].amax;
        if (a > 0 && isfinite(a)) amin = fmin(amin, a), amaxv = fmax(amaxv, a);
    }
    if (!isfinite(amin)) amin = amaxv = 1;
    for (int i = 0; i < n; i++) {
        ScaleBounds b;
        if (!bounds_of(s, i, &b)) continue;
        lo = fmin(lo, log10(b.flush_below)), hi = fmax(hi, log10(b.saturate_above));
    }
    lo = fmax(floor(fmin(lo, log10(amin))), floor(log10(amin)) - 6);
    hi = fmin(ceil(fmax(hi, log10(amaxv))), ceil(log10(amaxv)) + 3);
    if (hi <= lo) hi = lo + 1;
    int top = r.y + 1;
    for (int k = 0; k < plot_rows; k++) { /* axis labels at the top, middle and bottom */
        if (k != 0 && k != plot_rows - 1 && k != plot_rows / 2) continue;
        double e = hi - (hi - lo) * k / (plot_rows - 1);
        paint_textf(p, top + k, r.x, lab, SY_DIM, "1e%.0f", e);
    }
    for (int k = 0; k < plot_rows; k++) paint_text(p, top + k, r.x + lab, 1, SY_DIM, paint_glyph(p, G_VRULE));
    for (int i = 0; i < n; i++) {
        int cx = r.x + lab + 1 + i * cw;
        if (cx >= r.x + r.w) break;
        ScaleBounds b;
        if (bounds_of(s, i, &b)) {
            int yf = row_of(b.flush_below, lo, hi, top, plot_rows),
                ys = row_of(b.saturate_above, lo, hi, top, plot_rows);
            if (yf >= 0) paint_repeat(p, yf, cx, cw, SY_WARN, paint_glyph(p, G_FLUSH));
            if (ys >= 0) paint_repeat(p, ys, cx, cw, SY_BAD, paint_glyph(p, G_SAT));
        }
        int ya = row_of(s->steps[i].amax, lo, hi, top, plot_rows);
        if (ya >= 0) paint_text(p, ya, cx, 1, SY_MARK, paint_glyph(p, G_DOT));
        int lbl = i == s->step_cur || (i + 1) % 5 == 0 || i == 0;
        if (lbl) paint_textf(p, top + plot_rows, cx, r.x + r.w - cx, i == s->step_cur ? SY_FOCUS : SY_DIM, "%d", i + 1);
    }
}

static void table(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    int wide = r.w >= 110;
    char hdr[200];
    snprintf(hdr, sizeof hdr, "%4s %9s %10s %-9s %10s %9s %9s %10s%s", "step", "amax", "scale", "cast", "next scale",
             "flush <=", "min sub <", "saturates >", wide ? "  window amax  update" : "");
    paint_text(p, r.y, r.x, r.w, SY_HEAD, hdr);
    int rows = r.h - 1, first = s->step_cur - rows / 2;
    if (first > s->ntrace - rows) first = s->ntrace - rows;
    if (first < 0) first = 0;
    for (int k = 0; k < rows && first + k < s->ntrace; k++) {
        int i = first + k;
        const DelayedStep *st = &s->steps[i];
        ScaleBounds b;
        char a[24], sc[24], nx[24], f[24], m[24], sa[24], w[24], line[220];
        if (!bounds_of(s, i, &b)) memset(&b, 0, sizeof b);
        snprintf(line, sizeof line, "%4d %9s %10s %-9s %10s %9s %9s %10s", i + 1, tui_fmt_num(st->amax, 5, a, 24),
                 tui_fmt_num(st->scale_used, 6, sc, 24), cast_word(s, st), tui_fmt_num(st->scale_next, 6, nx, 24),
                 tui_fmt_num(b.flush_below, 4, f, 24), tui_fmt_num(b.min_sub_below, 4, m, 24),
                 tui_fmt_num(b.saturate_above, 4, sa, 24));
        if (wide) {
            size_t at = strlen(line);
            snprintf(line + at, sizeof line - at, "  %11s  %s", tui_fmt_num(st->window_amax, 5, w, 24),
                     st->why == AMAX_OK ? "ok" : amax_case_name(st->why));
        }
        TuiStyle style = i == s->step_cur ? SY_FOCUS : strcmp(cast_word(s, st), "ok") ? SY_BAD : SY_PLAIN;
        paint_text(p, r.y + 1 + k, r.x, r.w, style, line);
    }
}

int view_scaling(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    view_form(s, p, l->dl_form);
    if (!s->sim_ok) {
        paint_text(p, l->dl_chart.y, l->dl_chart.x, l->dl_chart.w, SY_BAD, s->sim_err.msg);
        return 0;
    }
    detail(s, p, l->dl_detail);
    chart(s, p, l->dl_chart);
    table(s, p, l->dl_table);
    return 0;
}
