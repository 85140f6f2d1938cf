/* reports/scaling_report.c — the delayed-scaling trace table (see scaling_report.h). */
#include "reports/scaling_report.h"

#include <math.h>
#include <stdio.h>

#include "fp8/codec.h"

enum { C_STEP, C_AMAX, C_SCALE, C_CAST, C_NEXT, C_WIN, C_UPDATE, C_FLUSH, C_MINSUB, C_SAT, NCOLS };

static const TableCol COLS[NCOLS] = {
    {"step", NULL, NULL, TC_U64, 0, 0},
    {"amax", NULL, NULL, TC_STR, 0, 0},
    {"scale", NULL, NULL, TC_F64, 6, TF_SCI | TF_EXACT},
    {"cast", NULL, NULL, TC_STR, 0, 0},
    {"next_scale", "next scale", NULL, TC_F64, 6, TF_SCI | TF_EXACT},
    {"window_amax", "window amax", NULL, TC_STR, 0, 0},
    {"update", NULL, NULL, TC_STR, 0, 0},
    {"flush_below", "flush <=", NULL, TC_F64, 4, TF_SCI | TF_EXACT},
    {"min_sub_below", "min sub <", NULL, TC_F64, 4, TF_SCI | TF_EXACT},
    {"saturate_above", "saturates >", NULL, TC_F64, 4, TF_SCI | TF_EXACT},
};

static const char *update_text(AmaxCase c)
{
    switch (c) {
    case AMAX_OK: return "ok";
    case AMAX_ZERO: return "kept: zero";
    case AMAX_INF: return "kept: inf";
    case AMAX_NAN: return "kept: nan";
    case AMAX_TINY: return "tiny: FLT_MAX";
    default: return "?";
    }
}

Table *scaling_table_new(const DelayedCfg *cfg)
{
    Table *t = table_new(COLS, NCOLS);
    if (!t) return NULL;
    char title[160];
    snprintf(title, sizeof title, "delayed scaling: %s, history %u, %s, margin %d (fmax %g)", dtype_name(cfg->fmt),
             (unsigned)cfg->hist_len, amax_algo_name(cfg->algo), cfg->margin, (double)fp8_max(cfg->fmt));
    table_set_title(t, title);
    return t;
}

void scaling_table_row(Table *t, Dtype fmt, const DelayedStep *st)
{
    ScaleBounds b;
    scale_bounds(fmt, st->scale_used, &b);
    float xs = st->amax * st->scale_used;
    const char *cast = isnan(st->amax)                         ? "nan"
                       : isinf(st->amax)                       ? "inf"
                       : (isinf(xs) || fp8_overflows(fmt, xs)) ? "saturates"
                                                               : "ok";
    table_row(t);
    table_u64(t, C_STEP, st->step);
    table_strf(t, C_AMAX, "%.9g", (double)st->amax);
    table_f64(t, C_SCALE, st->scale_used);
    table_str(t, C_CAST, cast);
    table_f64(t, C_NEXT, st->scale_next);
    table_strf(t, C_WIN, "%.9g", (double)st->window_amax);
    table_str(t, C_UPDATE, update_text(st->why));
    table_f64(t, C_FLUSH, b.flush_below);
    table_f64(t, C_MINSUB, b.min_sub_below);
    table_f64(t, C_SAT, b.saturate_above);
}
