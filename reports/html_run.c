/* reports/html_run.c — a run against its plan (see html_run.h). */
#include "reports/html_run.h"

#include <math.h>

#include "reports/chart_bars.h"
#include "reports/chart_xy.h"
#include "reports/html_page.h"

/* GB when the largest byte count is at least 10 GB, else MB. */
static void byte_unit(const Table *t, double *scale, const char **unit, const char **axis)
{
    double mx = 0, v;
    int pc = table_col_find(t, "planned_bytes"), mc = table_col_find(t, "measured_bytes");
    for (int l = 0; l < table_lines(t); l++) {
        if (table_get_f64(t, l, pc, &v)) mx = fmax(mx, v);
        if (table_get_f64(t, l, mc, &v)) mx = fmax(mx, v);
    }
    int gb = mx >= 1e10;
    *scale = gb ? 1e-9 : 1e-6;
    *unit = gb ? "GB" : "MB";
    *axis = gb ? "bytes (GB = 1e9 B)" : "bytes (MB = 1e6 B)";
}

static void memory_chart(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "run-memory",
        .title = "Memory per term: planned and measured",
        .desc = "What the plan counts for each memory term beside what the run placed there, for the terms the "
                "run measures (the rest are in the table at the end). The whisker over the measured bar is what "
                "the check accepts: the planned bytes exactly (persistent states, itemized activations), anything "
                "up to the plan (a peak estimate), or the plan within a tolerance.",
        .decimals = 3,
        .cat_col = "term",
        .bars = {{.label = "planned", .cols = {"planned_bytes"}},
                 {.label = "measured",
                  .cols = {"measured_bytes"},
                  .lo_col = "accept_lo_bytes",
                  .hi_col = "accept_hi_bytes"}},
        .nbars = 2,
        .band_label = "accepted by the check",
        .table_caption = "memory terms: planned, measured, the accepted range and the verdict",
        .collapse_after = 12,
    };
    byte_unit(t, &s.scale, &s.unit, &s.axis);
    chart_bars(d, t, &s);
}

static void time_chart(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "run-time",
        .title = "Time per phase: planned and measured",
        .desc = "Median seconds per step over the timed steps (warm-up excluded) of each phase and, on a GPU, each "
                "device category, beside the plan's; the whisker is the accepted band where a row is checked.",
        .axis = "seconds per step",
        .unit = "s",
        .decimals = 6,
        .cat_col = "term",
        .bars = {{.label = "planned", .cols = {"planned_s"}},
                 {.label = "measured", .cols = {"measured_s"}, .lo_col = "accept_lo_s", .hi_col = "accept_hi_s"}},
        .nbars = 2,
        .band_label = "accepted by the check",
        .table_caption = "time rows: planned, measured (median), spread and verdict",
    };
    chart_bars(d, t, &s);
}

static void comm_chart(HtmlDoc *d, const Table *t)
{
    BarSpec s = {
        .id = "run-comm",
        .title = "Collectives: bytes sent per step, planned and counted",
        .desc = "The plan's bytes each GPU sends per step (every collective) beside the bus bytes the communicator "
                "counted per step; per-collective counts arrive with the executor's Measurement (issue 10).",
        .decimals = 3,
        .cat_col = "term",
        .bars = {{.label = "planned", .cols = {"planned_bytes"}}, {.label = "measured", .cols = {"measured_bytes"}}},
        .nbars = 2,
        .table_caption = "bytes per step",
    };
    byte_unit(t, &s.scale, &s.unit, &s.axis);
    chart_bars(d, t, &s);
}

static void step_charts(HtmlDoc *d, const Table *t)
{
    XySpec loss = {
        .id = "run-loss",
        .title = "Loss per step",
        .desc = "Mean cross-entropy of each step's batch (nats per token).",
        .x_axis = "step",
        .y_axis = "loss (nats/token)",
        .y_zero = 1,
        .series = {{.t = t, .x_col = "step", .y_col = "loss", .label = "loss", .kind = XY_LINE, .style = 0}},
        .nseries = 1,
        .table_caption = "every step: loss and seconds per phase",
        .collapse_after = 1,
    };
    chart_xy(d, &loss);
    XySpec ph = {
        .id = "run-phases",
        .title = "Step time per phase",
        .desc = "Seconds of each phase in every step (device time where the backend has timestamps, host clock "
                "otherwise); the first step includes the warm-up.",
        .x_axis = "step",
        .y_axis = "seconds",
        .y_zero = 1,
        .series = {{.t = t, .x_col = "step", .y_col = "forward_s", .label = "forward", .kind = XY_LINE, .style = 0},
                   {.t = t, .x_col = "step", .y_col = "backward_s", .label = "backward", .kind = XY_LINE, .style = 1},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "communication_s",
                    .label = "communication",
                    .kind = XY_LINE,
                    .style = 2},
                   {.t = t, .x_col = "step", .y_col = "optimizer_s", .label = "optimizer", .kind = XY_LINE, .style = 3},
                   {.t = t,
                    .x_col = "step",
                    .y_col = "step_s",
                    .label = "step (sum)",
                    .kind = XY_LINE,
                    .style = 7,
                    .dashed = 1}},
        .nseries = 5,
        .table_caption = "(the same steps table as above)",
        .collapse_after = 1,
    };
    chart_xy(d, &ph);
}

Status html_run_page(FILE *f, const RunPage *pg, Err *e)
{
    HtmlDoc d;
    html_begin(&d, f, pg->title, pg->subtitle);
    if (pg->summary) html_pre(&d, pg->summary);
    html_h2(&d, "memory", "Memory");
    memory_chart(&d, pg->memory);
    html_h2(&d, "time", "Time");
    time_chart(&d, pg->time);
    step_charts(&d, pg->steps);
    html_h2(&d, "communication", "Communication");
    comm_chart(&d, pg->comm);
    html_h2(&d, "rows", "Every row");
    html_table(&d, pg->csv, "run-csv", "the report's rows, as -o FILE --format csv writes them", 0);
    return html_end(&d, e);
}
