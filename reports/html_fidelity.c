/* reports/html_fidelity.c — the fidelity report as a page (see html_fidelity.h). */
#include "reports/html_fidelity.h"

#include <math.h>
#include <string.h>

#include "reports/chart_bars.h"
#include "reports/chart_xy.h"

/* Distinct texts of column col over the table's rows, in order of first appearance (at most max). */
static int distinct(const Table *t, const char *col, const char **out, int max)
{
    int c = table_col_find(t, col), n = 0;
    for (int l = 0; c >= 0 && l < table_lines(t); l++) {
        const char *s = table_get_str(t, l, c);
        if (!s || !*s) continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = !strcmp(out[i], s);
        if (!seen && n < max) out[n++] = s;
    }
    return n;
}

/* The line predicted = measured across the range of both columns, as a two-row table of those columns
 * (NULL when no row has both values). */
static Table *diagonal(const Table *t, const char *xc, const char *yc)
{
    int x = table_col_find(t, xc), y = table_col_find(t, yc);
    double lo = INFINITY, hi = 0;
    for (int l = 0; x >= 0 && y >= 0 && l < table_lines(t); l++) {
        double a, b;
        if (!table_get_f64(t, l, x, &a) || !table_get_f64(t, l, y, &b) || !(a > 0) || !(b > 0)) continue;
        lo = fmin(lo, fmin(a, b)), hi = fmax(hi, fmax(a, b));
    }
    if (!(hi > 0)) return NULL;
    const TableCol cols[] = {{xc, NULL, NULL, TC_F64, 0, 0}, {yc, NULL, NULL, TC_F64, 0, 0}};
    Table *d = table_new(cols, 2);
    for (int i = 0; d && i < 2; i++) {
        table_row(d);
        table_f64(d, 0, i ? hi : lo);
        table_f64(d, 1, i ? hi : lo);
    }
    return d;
}

/* Points of one column pair, one series per distinct value of by_col, the diagonal dashed. */
static void scatter(HtmlDoc *d, const Table *runs, XySpec *s, const char *by_col, const char *const *tips)
{
    const char *keys[XY_MAX_SERIES - 1];
    int n = distinct(runs, by_col, keys, XY_MAX_SERIES - 1);
    const char *xc = s->series[0].x_col, *yc = s->series[0].y_col;
    Table *diag = diagonal(runs, xc, yc);
    s->nseries = 0;
    for (int i = 0; i < n; i++) {
        XySeries *z = &s->series[s->nseries++];
        *z = (XySeries){.t = runs,
                        .x_col = xc,
                        .y_col = yc,
                        .filter_col = by_col,
                        .filter_val = keys[i],
                        .label = keys[i],
                        .kind = XY_POINTS,
                        .style = i};
        for (int k = 0; k < XY_MAX_TIPS && tips[k]; k++) z->tips[k] = tips[k];
    }
    if (diag)
        s->series[s->nseries++] = (XySeries){.t = diag,
                                             .x_col = xc,
                                             .y_col = yc,
                                             .label = "predicted = measured",
                                             .kind = XY_LINE,
                                             .style = n,
                                             .dashed = 1};
    s->table = runs;
    chart_xy(d, s);
    table_free(diag);
}

static void throughput_chart(HtmlDoc *d, const FidelityPage *pg)
{
    static const char *const tips[] = {"id", "model", "gpu", "recipe", "tokens_error_pct", NULL};
    XySpec s = {
        .id = "fid-tok",
        .title = "Predicted against measured tokens/s per GPU, every published run",
        .desc = "One point per run of models/measured.csv with a published throughput, one colour and marker per "
                "software stack; points on the dashed line are predicted exactly, points above it are predicted "
                "faster than they ran. Both axes are logarithmic: runs from 16 to 165,000 tokens/s per GPU.",
        .x_axis = "measured tokens/s per GPU",
        .y_axis = "predicted tokens/s per GPU",
        .x_log = 1,
        .y_log = 1,
        .series = {{.x_col = "measured_tokens_per_s_per_gpu", .y_col = "predicted_tokens_per_s_per_gpu"}},
        .table_caption = "report fidelity: every run (fidelity_runs.csv); error = predicted / measured - 1",
        .collapse_after = 12,
    };
    scatter(d, pg->runs, &s, "stack", tips);
}

static void mae_chart(HtmlDoc *d, const FidelityPage *pg)
{
    BarSpec s = {
        .id = "fid-mae",
        .title = "Mean absolute throughput error per software stack",
        .desc = "The mean of |predicted / measured - 1| over each stack's runs with a published throughput; the "
                "issue's target is at most 12 % within each stack and 10 % overall.",
        .axis = "mean absolute error (%)",
        .unit = "%",
        .decimals = 1,
        .cat_col = "group",
        .only_col = "kind",
        .only_val = "stack",
        .bars = {{.label = "MAE", .cols = {"mae_pct"}}},
        .nbars = 1,
        .seg_labels = {"mean absolute error"},
        .table_caption = "report fidelity: the summary (fidelity_summary.csv)",
    };
    chart_bars(d, pg->summary, &s);
}

static void memory_chart(HtmlDoc *d, const FidelityPage *pg)
{
    static const char *const tips[] = {"id", "stack", "model", "gpu", "mem_error_pct", NULL};
    XySpec s = {
        .id = "fid-mem",
        .title = "Predicted against measured memory per GPU, every run that published it",
        .desc = "The published peak against the planner's term of the same kind: allocated (max_memory_allocated), "
                "reserved (max_memory_reserved) or the device total (total: nvidia-smi or a kind the source does "
                "not state). GiB = 2^30 B.",
        .x_axis = "measured memory per GPU (GiB)",
        .y_axis = "predicted memory per GPU (GiB)",
        .x_zero = 1,
        .y_zero = 1,
        .series = {{.x_col = "measured_mem_gib", .y_col = "predicted_mem_gib"}},
        .table_caption = "report fidelity: every run (the memory columns)",
        .collapse_after = 12,
    };
    scatter(d, pg->runs, &s, "mem_kind", tips);
}

Status html_fidelity_page(FILE *f, const FidelityPage *pg, Err *e)
{
    HtmlDoc d;
    const FidelitySummary *s = pg->sum;
    char sub[512];
    snprintf(sub, sizeof sub,
             "models/measured.csv: %d runs with a published throughput, %d with allocator-traced "
             "memory; hold-out sources: %.300s",
             s->all.n, s->mem_traced.n, pg->holdout);
    html_begin(&d, f, "fp8plan report fidelity: the planner against published measured runs", sub);
    html_p(&d,
           "Throughput MAE %.1f %% over %d runs (dev %.1f %% over %d, hold-out %.1f %% over %d); FP8-LM Table 5 MAE "
           "%.1f %% over %d; allocator-traced memory MAE %.1f %% (worst %.1f %%) over %d; false OOMs %d (runs that "
           "ran but are predicted above their GPU's memory); over the memory limit %d; not planned %d.",
           100 * s->all.mae, s->all.n, 100 * s->dev.mae, s->dev.n, 100 * s->holdout.mae, s->holdout.n,
           100 * s->table5.mae, s->table5.n, 100 * s->mem_traced.mae, 100 * s->mem_traced_max, s->mem_traced.n,
           s->false_oom, s->over_limit, s->unplanned);
    if (s->moe.n) /* runs of models with experts: apart from the figures above, among the points below */
        html_p(&d,
               "Mixture-of-experts runs, summarised apart (the points below include them, under their stack): "
               "throughput MAE %.1f %% (bias %+.1f %%) over %d runs (dev %.1f %% over %d, hold-out %.1f %% over %d); "
               "false OOMs %d; uncertain %d (they fit only if savings their sources leave open hold).",
               100 * s->moe.mae, 100 * s->moe.bias, s->moe.n, 100 * s->moe_dev.mae, s->moe_dev.n,
               100 * s->moe_holdout.mae, s->moe_holdout.n, s->moe_false_oom, s->moe_uncertain);
    html_h2(&d, "throughput", "Throughput");
    throughput_chart(&d, pg);
    html_h2(&d, "mae", "Error per stack, source and group");
    mae_chart(&d, pg);
    html_h2(&d, "memory", "Memory");
    memory_chart(&d, pg);
    if (pg->pairs) {
        const FidelityGroup *a = pg->pairs_all, *dv = pg->pairs_dev, *ho = pg->pairs_holdout;
        html_h2(&d, "speedup", "What FP8 buys over BF16: measured and planned speed-up");
        html_p(&d,
               "Each row is one configuration a source measured twice, with BF16 and with FP8 GEMMs, and nothing "
               "else changed; speed-up = FP8 tokens/s over BF16 tokens/s, error = predicted / measured speed-up - 1. "
               "Speed-up MAE %.1f %% (bias %+.1f %%) over %d pairs; dev %.1f %% over %d, hold-out %.1f %% over %d.",
               100 * a->mae, 100 * a->bias, a->n, 100 * dv->mae, dv->n, 100 * ho->mae, ho->n);
        html_table(&d, pg->pairs, "fid-pairs", "report fidelity: the BF16/FP8 pairs (fidelity_pairs.csv)", 0);
    }
    return html_end(&d, e);
}
