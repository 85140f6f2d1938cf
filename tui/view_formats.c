/* tui/view_formats.c — the Formats screen: a value -> code explorer (value times
 * scale, cast with round-to-nearest-even, the byte, what it decodes to, the
 * error and the neighbouring grid points) over the E4M3 / E5M2 properties,
 * all computed from fp8/'s codecs. */
#include <math.h>
#include <stdio.h>

#include "fp8/format.h"
#include "fp8/scale.h"
#include "tui/fields.h"
#include "tui/model.h"
#include "tui/view.h"

static void result(const TuiState *s, const TuiPaint *p, TuiRect r)
{
    TuiFx fx;
    char a[32], b[32], c[32];
    tui_fx_compute(s->fx_value, s->fx_fmt, s->fx_scale, s->fx_sat, &fx);
    TuiLine buf[12];
    TuiLines L = {buf, 0, 12};
    lines_add(&L, SY_HEAD, "%s %s scale %s = %s in fp32", tui_fmt_num(fx.x, 10, a, 32), paint_glyph(p, G_TIMES),
              tui_fmt_num(s->fx_scale, 9, b, 32), tui_fmt_num(fx.scaled, 9, c, 32));
    lines_add(&L, SY_PLAIN, "%s code 0x%02X = %s (s.exp.mant)", dtype_name(s->fx_fmt), fx.code, fx.bits);
    lines_add(&L, SY_PLAIN, "decodes to %s; dequantized (/ scale) %s", tui_fmt_num(fx.value, 10, a, 32),
              tui_fmt_num(fx.back, 10, b, 32));
    TuiStyle cls = fx.cls == FX_NORMAL ? SY_GOOD : fx.cls == FX_SUBNORMAL ? SY_WARN : SY_BAD;
    if (isnan(fx.rel_err))
        lines_add(&L, cls, "lands as: %s", tui_fx_class_name(fx.cls));
    else
        lines_add(&L, cls, "error %s (%.3g %% of the value): %s", tui_fmt_num(fx.abs_err, 4, a, 32), 100 * fx.rel_err,
                  tui_fx_class_name(fx.cls));
    lines_add(&L, SY_PLAIN, "neighbours: %s  <  x  <  %s", tui_fmt_num(fx.prev, 8, a, 32),
              tui_fmt_num(fx.next, 8, b, 32));
    ScaleBounds sb;
    if (!scale_bounds(s->fx_fmt, s->fx_scale, &sb)) {
        lines_add(&L, SY_DIM, "at this scale: |x| <= %s flushes to 0,", tui_fmt_num(sb.flush_below, 4, a, 32));
        lines_add(&L, SY_DIM, "  < %s is subnormal, > %s saturates", tui_fmt_num(sb.normal_below, 4, b, 32),
                  tui_fmt_num(sb.saturate_above, 5, c, 32));
    }
    lines_paint(&L, p, r, 0);
}

static void props(const TuiPaint *p, TuiRect r)
{
    FormatInfo f[2];
    if (format_info(DT_E4M3, &f[0], NULL) || format_info(DT_E5M2, &f[1], NULL)) return;
    char v[2][64];
    TuiLine buf[16];
    TuiLines L = {buf, 0, 16};
    lines_add(&L, SY_HEAD, "%-22s %-24s %-24s", "FP8 Formats Table 1", "E4M3", "E5M2");
#define ROW(label, ...)                                                       \
    do {                                                                      \
        for (int k = 0; k < 2; k++) snprintf(v[k], sizeof v[k], __VA_ARGS__); \
        lines_add(&L, SY_PLAIN, "%-22s %-24s %-24s", label, v[0], v[1]);      \
    } while (0)
    ROW("exponent / mantissa", "%d / %d", f[k].exp_bits, f[k].man_bits);
    ROW("exponent bias", "%d", f[k].bias);
    ROW("max normal", "%.12g", f[k].max_normal);
    ROW("min normal", "%.12g (2^%d)", f[k].min_normal, (int)log2(f[k].min_normal));
    ROW("max subnormal", "%.12g", f[k].max_subnormal);
    ROW("min subnormal", "%.12g (2^%d)", f[k].min_subnormal, (int)log2(f[k].min_subnormal));
    ROW("binades (normal+sub)", "%d (%d + %d)", f[k].binades, f[k].normal_binades, f[k].binades - f[k].normal_binades);
    ROW("points per binade", "%d", f[k].points_per_binade);
    ROW("Inf / NaN codes", "%llu / %llu", (unsigned long long)f[k].inf_codes, (unsigned long long)f[k].nan_codes);
    ROW("finite codes", "%llu", (unsigned long long)f[k].finite_codes);
#undef ROW
    lines_add(&L, SY_DIM, "Computed by decoding every code (as fp8plan formats).");
    lines_paint(&L, p, r, 0);
}

int view_formats(const TuiState *s, const TuiLayout *l, const TuiPaint *p)
{
    TuiRect f = l->fx_form;
    view_form(s, p, f);
    TuiLine buf[6];
    TuiLines L = {buf, 0, 6};
    lines_wrap(&L, SY_DIM, f.w - 2, 0,
               "The cast rounds x times scale to the nearest FP8 value (ties to even), as cuda_fp8.h does.");
    TuiRect under = {f.y + (XF_COUNT + 1), f.x + 1, f.h - (XF_COUNT + 1), f.w - 1};
    lines_paint(&L, p, under, 0);
    result(s, p, l->fx_result);
    props(p, l->fx_table);
    return 0;
}
