/* reports/scaling_report.c — the delayed-scaling trace table (see scaling_report.h). */
#include "reports/scaling_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

Table *scaling_trace_table(const DelayedCfg *cfg, const float *amax, size_t n, Err *e)
{
    float *hist = malloc(sizeof *hist * cfg->hist_len);
    Table *t = scaling_table_new(cfg);
    DelayedState s;
    if (!hist || !t) {
        free(hist);
        table_free(t);
        err_set(e, ST_NOMEM, "out of memory");
        return NULL;
    }
    if (delayed_init(&s, cfg, hist, e)) {
        free(hist);
        table_free(t);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        DelayedStep st;
        delayed_step(&s, amax[i], &st);
        scaling_table_row(t, cfg->fmt, &st);
    }
    free(hist);
    return t;
}

void scaling_steady_trace(float amax[SCALING_TRACE_STEPS])
{
    static const float steady[SCALING_TRACE_STEPS] = {1.0f, 1.1f, 0.9f, 1.0f, 1.2f, 1.0f, 0.95f, 1.05f,
                                                      1.1f, 1.0f, 0.9f, 1.0f, 1.1f, 1.0f, 0.9f,  1.0f};
    memcpy(amax, steady, sizeof steady);
}

void scaling_spike_trace(float amax[SCALING_TRACE_STEPS])
{
    scaling_steady_trace(amax);
    amax[5] = 640.0f; /* the spike: the next E4M3 scale is 448 / 640 = 0.7 */
    amax[6] = 2.0f;
}
