/* reports/html_fp8.c — delayed scaling, Table 1b and quantization-error charts (see html_fp8.h). */
#include "reports/html_fp8.h"

#include "reports/chart_bars.h"
#include "reports/chart_xy.h"

void html_scaling_charts(HtmlDoc *d, const Table *t, const char *prefix)
{
    char id1[64], id2[64];
    snprintf(id1, sizeof id1, "%s-bounds", prefix ? prefix : "scaling");
    snprintf(id2, sizeof id2, "%s-scale", prefix ? prefix : "scaling");
    XySpec s = {
        .id = id1,
        .title = "Delayed scaling: where values land at each step's scale",
        .desc = "Magnitudes in the tensor's own units, log axis. A step casts with the scale computed from the "
                "window before it: values above the saturation bound clip to the format's maximum, values below "
                "the minimum-subnormal bound become 0 or the minimum subnormal, values at or below the flush bound "
                "become 0. Marks: steps whose cast saturates, and steps that kept the previous scale.",
        .x_axis = "step",
        .y_axis = "magnitude (tensor units, log)",
        .y_log = 1,
        .series = {{.t = t, .x_col = "step", .y_col = "amax", .label = "amax of the step", .kind = XY_LINE, .style = 0},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "window_amax",
                    .label = "window amax (next scale's input)",
                    .kind = XY_STEPS,
                    .style = 2,
                    .dashed = 1},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "saturate_above",
                    .label = "saturates above",
                    .kind = XY_STEPS,
                    .style = 5},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "min_sub_below",
                    .label = "under the grid below",
                    .kind = XY_STEPS,
                    .style = 3},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "flush_below",
                    .label = "flushes to 0 at or below",
                    .kind = XY_STEPS,
                    .style = 4,
                    .dashed = 1}},
        .nseries = 5,
        .events = {{t, "step", "amax", "cast", "ok", "the cast saturates (or the amax is inf/nan)"},
                   {t, "step", "amax", "update", "ok", "the update kept the scale (or hit FLT_MAX)"}},
        .nevents = 2,
        .table_caption = table_title(t),
        .collapse_after = 40,
    };
    chart_xy(d, &s);
    XySpec sc = {
        .id = id2,
        .title = "Delayed scaling: the scale per step",
        .desc = "The scale each step cast with (fp8 = cast(x * scale)) and the one it computed for the next step, "
                "log axis.",
        .x_axis = "step",
        .y_axis = "scale (log)",
        .y_log = 1,
        .series = {{.t = t, .x_col = "step", .y_col = "scale", .label = "scale used", .kind = XY_STEPS, .style = 0},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "next_scale",
                    .label = "next scale",
                    .kind = XY_STEPS,
                    .style = 1,
                    .dashed = 1}},
        .nseries = 2,
        .table = t,
        .table_caption = "(the same trace table as above)",
        .collapse_after = 1,
    };
    chart_xy(d, &sc);
}

void html_scales_chart(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "scales",
        .title = "Scale granularity: payload and scale bytes",
        .desc = "Bytes of one tensor in BF16 and in FP8 with each scale granularity (scales as stored, no GEMM "
                "padding); MB = 1e6 B.",
        .axis = "bytes (MB = 1e6 B)",
        .unit = "MB",
        .scale = 1e-6,
        .decimals = 3,
        .cat_col = "format",
        .cat_col2 = "granularity",
        .bars = {{.cols = {"payload_bytes", "scale_bytes"}}},
        .nbars = 1,
        .seg_labels = {"payload", "scales"},
        .table_caption = table_title(t),
    };
    chart_bars(d, t, &s);
}

void html_qerror_charts(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "qerror-rel",
        .title = "Quantization error by scale granularity: mean relative error",
        .desc = "Mean over nonzero values of |x - q(x)| / |x| after a round trip through FP8 with current scaling "
                "at each granularity; every value weighs the same.",
        .axis = "mean relative error (%)",
        .unit = "%",
        .decimals = 3,
        .cat_col = "granularity",
        .series_col = "format",
        .bars = {{.cols = {"mean_rel_pct"}}},
        .nbars = 1,
        .table_caption = table_title(t),
    };
    chart_bars(d, t, &s);
    BarSpec f = s;
    f.id = "qerror-flushed";
    f.title = "Quantization error by scale granularity: values flushed to zero";
    f.desc = "Nonzero values that became 0: what one coarse scale costs the many small values.";
    f.axis = "values flushed to zero (%)";
    f.decimals = 4;
    f.bars[0] = (BarDef){.cols = {"flushed_pct"}};
    f.table_caption = "(the same table as above)";
    f.collapse_after = 1;
    chart_bars(d, t, &f);
}

typedef void (*Charts)(HtmlDoc *d, const Table *t);

static Status page(FILE *f, const Table *t, Charts charts, Err *e)
{
    HtmlDoc d;
    const char *title = table_title(t);
    html_begin(&d, f, title ? title : "fp8plan", NULL);
    charts(&d, t);
    return html_end(&d, e);
}

static void scaling_charts(HtmlDoc *d, const Table *t) { html_scaling_charts(d, t, NULL); }

Status html_scaling_page(FILE *f, const Table *t, Err *e) { return page(f, t, scaling_charts, e); }
Status html_scales_page(FILE *f, const Table *t, Err *e) { return page(f, t, html_scales_chart, e); }
Status html_qerror_page(FILE *f, const Table *t, Err *e) { return page(f, t, html_qerror_charts, e); }
