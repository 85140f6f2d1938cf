/* reports/html_sweep.c — the sweep page (see html_sweep.h). */
#include "reports/html_sweep.h"

#include <stdlib.h>
#include <string.h>

#include "reports/chart_xy.h"
#include "reports/html_page.h"
#include "reports/plan_report.h"

enum {
    P_RECIPE,
    P_STACK,
    P_TP,
    P_PP,
    P_VPP,
    P_CP,
    P_DP,
    P_MBS,
    P_RECOMPUTE,
    P_SHARDING,
    P_TOTAL,
    P_TOKS,
    P_STEP,
    P_COUNT
};

static const TableCol point_cols[P_COUNT] = {
    [P_RECIPE] = {"recipe", NULL, NULL, TC_STR, 0, 0},
    [P_STACK] = {"stack", NULL, NULL, TC_STR, 0, 0},
    [P_TP] = {"tp", NULL, NULL, TC_U64, 0, 0},
    [P_PP] = {"pp", NULL, NULL, TC_U64, 0, 0},
    [P_VPP] = {"vpp", NULL, NULL, TC_U64, 0, 0},
    [P_CP] = {"cp", NULL, NULL, TC_U64, 0, 0},
    [P_DP] = {"dp", NULL, NULL, TC_U64, 0, 0},
    [P_MBS] = {"mbs", NULL, NULL, TC_U64, 0, 0},
    [P_RECOMPUTE] = {"recompute", NULL, NULL, TC_STR, 0, 0},
    [P_SHARDING] = {"sharding", NULL, NULL, TC_STR, 0, 0},
    [P_TOTAL] = {"total_bytes", "memory", "B", TC_U64, 0, TF_GROUP},
    [P_TOKS] = {"tokens_per_s", "tokens/s", "tok/s", TC_F64, 0, 0},
    [P_STEP] = {"step_time_s", "step", "s", TC_F64, 4, 0},
};

Table *sweep_points_new(void) { return table_new(point_cols, P_COUNT); }

void sweep_points_add(const Plan *p, void *ctx)
{
    Table *t = ctx;
    const PlanInput *in = &p->in;
    table_row(t);
    table_str(t, P_RECIPE, in->recipe->name);
    table_str(t, P_STACK, in->stack ? in->stack->name : "none");
    table_u64(t, P_TP, in->tp);
    table_u64(t, P_PP, in->pp);
    table_u64(t, P_VPP, in->vpp);
    table_u64(t, P_CP, in->cp);
    table_u64(t, P_DP, in->dp);
    table_u64(t, P_MBS, in->mbs);
    table_str(t, P_RECOMPUTE, recompute_name(in->recompute));
    table_str(t, P_SHARDING, sharding_name(in->sharding));
    table_u64(t, P_TOTAL, p->total_bytes);
    table_f64(t, P_TOKS, p->tokens_per_s);
    table_f64(t, P_STEP, p->time.step_s);
}

typedef struct {
    int line;
    double mem, toks;
} Pt;

static int by_memory(const void *a, const void *b)
{
    const Pt *x = a, *y = b;
    if (x->mem != y->mem) return x->mem < y->mem ? -1 : 1;
    if (x->toks != y->toks) return x->toks > y->toks ? -1 : 1; /* the better point of equal memory first */
    return x->line - y->line;
}

int sweep_pareto(const Table *points, int *lines, int max)
{
    int n = table_lines(points), k = 0, m = 0;
    int cm = table_col_find(points, "total_bytes"), ct = table_col_find(points, "tokens_per_s");
    Pt *pt = malloc(sizeof *pt * (size_t)(n ? n : 1));
    if (!pt || cm < 0 || ct < 0) {
        free(pt);
        return 0;
    }
    for (int l = 0; l < n; l++)
        if (table_get_f64(points, l, cm, &pt[m].mem) && table_get_f64(points, l, ct, &pt[m].toks)) pt[m++].line = l;
    qsort(pt, (size_t)m, sizeof *pt, by_memory);
    double best = -1;
    for (int i = 0; i < m && k < max; i++)
        if (pt[i].toks > best) best = pt[i].toks, lines[k++] = pt[i].line;
    free(pt);
    return k;
}

static void nomem(HtmlDoc *d)
{
    Err e;
    err_set(&e, ST_NOMEM, "out of memory building the sweep page");
    html_fail(d, &e);
}

/* The points the chart draws: per recipe, the THIN_K fastest layouts in each of THIN_BINS equal slices of the
 * memory axis — every recipe's upper envelope, where a layout is chosen, and the spread below it — so that a
 * sweep of tens of thousands of fitting layouts stays a page of a few hundred kilobytes (a 1,024-GPU GPT-175B
 * sweep of every recipe drew 26,000 markers, 10 MB). The Pareto front and the tables keep every layout. */
enum { THIN_BINS = 160, THIN_K = 2, THIN_RECIPES = 64 };

typedef struct {
    int line, recipe, bin;
    double toks;
} Drawn;

static int by_slice(const void *a, const void *b)
{
    const Drawn *x = a, *y = b;
    if (x->recipe != y->recipe) return x->recipe - y->recipe;
    if (x->bin != y->bin) return x->bin - y->bin;
    if (x->toks != y->toks) return x->toks > y->toks ? -1 : 1;
    return x->line - y->line;
}

static int by_line(const void *a, const void *b) { return ((const Drawn *)a)->line - ((const Drawn *)b)->line; }

Table *sweep_points_drawn(const Table *points)
{
    int n = table_lines(points), m = 0, nr = 0;
    int cr = table_col_find(points, "recipe"), cm = table_col_find(points, "total_bytes"),
        ct = table_col_find(points, "tokens_per_s");
    const char *names[THIN_RECIPES];
    Drawn *d = calloc(n > 0 ? (size_t)n : 1, sizeof *d);
    double *mem = calloc(n > 0 ? (size_t)n : 1, sizeof *mem), lo = 0, hi = 0;
    Table *out = table_new(point_cols, P_COUNT);
    if (!d || !mem || !out) {
        free(d), free(mem), table_free(out);
        return NULL;
    }
    for (int l = 0; l < n; l++) {
        const char *r = table_get_str(points, l, cr);
        double x, y;
        if (!r || !table_get_f64(points, l, cm, &x) || !table_get_f64(points, l, ct, &y)) continue; /* a rule */
        int k = 0;
        while (k < nr && strcmp(names[k], r)) k++;
        if (k == nr && nr < THIN_RECIPES) names[nr++] = r;
        d[m] = (Drawn){l, k, 0, y}, mem[m] = x;
        if (!m || x < lo) lo = x;
        if (!m || x > hi) hi = x;
        m++;
    }
    for (int i = 0; i < m; i++) d[i].bin = hi > lo ? (int)((mem[i] - lo) / (hi - lo) * (THIN_BINS - 1) + 0.5) : 0;
    qsort(d, (size_t)m, sizeof *d, by_slice);
    int kept = 0;
    for (int i = 0, run = 0; i < m; i++) {
        run = i && d[i].recipe == d[i - 1].recipe && d[i].bin == d[i - 1].bin ? run + 1 : 0;
        if (run < THIN_K) d[kept++] = d[i];
    }
    qsort(d, (size_t)kept, sizeof *d, by_line); /* the points' own order: the series read first-seen recipes */
    for (int i = 0; i < kept; i++) table_append_line(out, points, d[i].line);
    free(d), free(mem);
    return out;
}

/* The front's rows as their own table (the points' columns), memory ascending. */
static Table *front_table(const Table *points)
{
    int n = table_lines(points);
    int *lines = malloc(sizeof *lines * (size_t)(n ? n : 1));
    Table *t = lines ? table_new(point_cols, P_COUNT) : NULL;
    int k = t ? sweep_pareto(points, lines, n) : 0;
    for (int i = 0; i < k; i++) table_append_line(t, points, lines[i]);
    free(lines);
    return t;
}

Status html_sweep_page(FILE *f, const SweepPage *pg, Err *e)
{
    HtmlDoc d;
    html_begin(&d, f, pg->title, pg->subtitle);
    if (pg->stats_text) html_pre(&d, pg->stats_text);
    Table *front = front_table(pg->points), *top = plan_summary_new(1), *drawn = sweep_points_drawn(pg->points);
    for (int i = 0; top && i < pg->ntop; i++) plan_summary_row(top, &pg->top[i], i + 1);
    if (!front || !top || !drawn) {
        nomem(&d);
    } else {
        char desc[640], chosen[256];
        int npoints = table_rows(pg->points);
        snprintf(
            desc, sizeof desc,
            "The layouts that fit (%d), as memory per GPU against predicted tokens/s, one colour and marker "
            "shape per recipe: of each recipe the %d fastest in each of %d slices of the memory axis are drawn "
            "(%d points), and points of one recipe closer than a marker's size are drawn once (hover says how "
            "many). The line is the Pareto front of every layout; the ring is the chosen plan (rank 1); the vertical "
            "lines are the GPU's capacity and the memory limit a layout must stay under.",
            npoints, THIN_K, THIN_BINS, table_rows(drawn));
        XySpec s = {
            .id = "sweep",
            .title = "Memory against throughput, every layout that fits",
            .desc = desc,
            .x_axis = "per-GPU memory (GB = 1e9 B)",
            .y_axis = "thousand tokens/s (all GPUs)",
            .x_scale = 1e-9,
            .y_scale = 1e-3,
            .front = {.t = front,
                      .x_col = "total_bytes",
                      .y_col = "tokens_per_s",
                      .label = "Pareto front (no layout has less memory and more tokens/s)",
                      .tips = {"tp", "pp", "cp", "dp", "mbs", "recompute"}},
            .table = front,
            .table_caption = "the layouts on the Pareto front, memory ascending",
        };
        /* one series per recipe, in first-seen order */
        int rc = table_col_find(pg->points, "recipe"), left_out = 0;
        for (int l = 0; l < table_lines(pg->points); l++) {
            const char *r = table_get_str(pg->points, l, rc);
            int seen = 0;
            for (int i = 0; r && i < s.nseries; i++) seen |= !strcmp(s.series[i].filter_val, r);
            if (!r || seen) continue;
            if (s.nseries == XY_MAX_SERIES) { /* one series per recipe, up to the chart's limit */
                left_out++;
                continue;
            }
            s.series[s.nseries] = (XySeries){.t = drawn,
                                             .x_col = "total_bytes",
                                             .y_col = "tokens_per_s",
                                             .filter_col = "recipe",
                                             .filter_val = r,
                                             .label = r,
                                             .kind = XY_POINTS,
                                             .style = s.nseries,
                                             .tips = {"tp", "pp", "vpp", "cp", "dp", "mbs"}};
            s.nseries++;
        }
        char limit[96], cap[64];
        snprintf(cap, sizeof cap, "GPU capacity %.2f GB", (double)pg->capacity_bytes * 1e-9);
        snprintf(limit, sizeof limit, "memory limit %.2f GB (%.0f %% of capacity)", (double)pg->limit_bytes * 1e-9,
                 100 * pg->limit_frac);
        if (pg->capacity_bytes) s.limits[s.nlimits++] = (XyLimit){(double)pg->capacity_bytes, cap};
        if (pg->limit_bytes && pg->limit_bytes != pg->capacity_bytes)
            s.limits[s.nlimits++] = (XyLimit){(double)pg->limit_bytes, limit};
        if (pg->ntop) {
            const PlanInput *in = &pg->top[0].in;
            snprintf(chosen, sizeof chosen, "chosen: %s TP%u PP%u CP%u DP%u mbs %u", in->recipe->name, in->tp, in->pp,
                     in->cp, in->dp, in->mbs);
            s.mark = (XyMark){top, 0, "total_bytes", "tokens_per_s", chosen};
        }
        if (npoints)
            chart_xy(&d, &s);
        else
            html_p(&d, "No layout fits: nothing to draw.");
        if (left_out)
            html_p(&d, "The layouts of %d more recipes are not drawn (a chart holds %d series); the tables have them.",
                   left_out, XY_MAX_SERIES);
        html_h2(&d, "best", "The best plans");
        html_table(&d, top, "top", "sweep --format csv: rank and the plan summary columns", 0);
    }
    table_free(front);
    table_free(top);
    table_free(drawn);
    return html_end(&d, e);
}
