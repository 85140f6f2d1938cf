/* reports/fidelity_report.c — plan every measured run and summarise the errors (see fidelity_report.h). */
#include "check/fidelity.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double GIB = 1073741824.0;

/* Does the list item p[0..n) name run r (its source_id, or source_id@gpu)? */
static int item_matches(const MeasuredRun *r, const char *p, size_t n)
{
    char src[MEASURED_ID_MAX * 2 + 2];
    snprintf(src, sizeof src, "%s@%s", r->source_id, r->gpu->name);
    size_t ns = strlen(r->source_id), nf = strlen(src);
    return (n == ns && !strncmp(p, r->source_id, n)) || (n == nf && !strncmp(p, src, n));
}

/* Is the run in the comma-separated hold-out list (source_id or source_id@gpu)? */
static int held_out(const MeasuredRun *r, const char *list)
{
    for (const char *p = list; p && *p;) {
        const char *q = strchr(p, ',');
        if (item_matches(r, p, q ? (size_t)(q - p) : strlen(p))) return 1;
        p = q ? q + 1 : NULL;
    }
    return 0;
}

/* The runs' distinct source ids, comma-separated, in file order (cut short when the buffer is full). */
static void known_sources(const MeasuredRun *runs, int n, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < n && k < cap - 1; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = !strcmp(runs[j].source_id, runs[i].source_id);
        if (!seen) k += (size_t)snprintf(out + k, cap - k, "%s%s", k ? ", " : "", runs[i].source_id);
    }
}

/* Every item of the hold-out list names a source of some run: a typo (`--holdout nosuch`, an empty
 * list) would otherwise hold out nothing and report a 0 % error over no runs. */
static Status check_holdout(const MeasuredRun *runs, int n, const char *list, Err *e)
{
    char known[384];
    for (const char *p = list ? list : "";;) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = item_matches(&runs[i], p, len);
        if (!found) {
            known_sources(runs, n, known, sizeof known);
            if (!len)
                return err_set(e, ST_USAGE, "--holdout '%s': an empty source id (known source ids: %s)",
                               list ? list : "", known);
            return err_set(e, ST_USAGE, "--holdout: unknown source '%.*s' (known source ids: %s; or SOURCE@GPU)",
                           (int)len, p, known);
        }
        if (!q) return ST_OK;
        p = q + 1;
    }
}

static void add(FidelityGroup *g, double err)
{
    if (isnan(err)) return;
    g->mae = (g->mae * g->n + fabs(err)) / (g->n + 1);
    g->bias = (g->bias * g->n + err) / (g->n + 1);
    g->n++;
}

static FidelityGroup *group(FidelityGroup *gs, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(gs[i].name, name)) return &gs[i];
    if (*n == FIDELITY_MAX_GROUPS) return NULL;
    FidelityGroup *g = &gs[(*n)++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    return g;
}

/* The predicted bytes of the kind a run published. */
static double kind_bytes(const Plan *p, MemKind k)
{
    switch (k) {
    case MEMK_ALLOCATED: return (double)p->alloc_bytes;
    case MEMK_RESERVED: return (double)p->reserved_bytes;
    default: return (double)p->total_bytes;
    }
}

Status fidelity_evaluate(const MeasuredRun *runs, int n, const char *holdout, double max_mem_frac, FidelityRow *rows,
                         FidelitySummary *sum, Err *e)
{
    memset(sum, 0, sizeof *sum);
    Status st = holdout ? check_holdout(runs, n, holdout, e) : ST_OK;
    if (st) return st;
    if (!holdout) holdout = FIDELITY_DEFAULT_HOLDOUT;
    static Plan p; /* about 8 KB; not re-entrant, like the CLI that calls it */
    for (int i = 0; i < n; i++) {
        const MeasuredRun *r = &runs[i];
        FidelityRow *o = &rows[i];
        memset(o, 0, sizeof *o);
        o->run = r;
        o->holdout = held_out(r, holdout);
        o->meas_tok = measured_tokens(r);
        o->meas_gib = r->mem_gib;
        o->pred_tok = o->tok_err = o->pred_gib = o->mem_err = o->total_gib = NAN;
        PlanInput in;
        measured_plan_input(r, &in);
        if (max_mem_frac > 0) in.max_mem_frac = max_mem_frac;
        Err pe;
        if (plan_build(&in, &p, &pe)) {
            if (pe.st != ST_USAGE) return err_set(e, pe.st, "%s: %s", r->id, pe.msg);
            snprintf(o->why, sizeof o->why, "%.190s", pe.msg);
            sum->unplanned++;
            continue;
        }
        o->planned = 1;
        o->pred_tok = p.tokens_per_s / (double)p.world;
        o->tok_err = o->pred_tok / o->meas_tok - 1.0; /* NAN when not published */
        o->total_gib = (double)p.total_bytes / GIB;
        o->pred_gib = kind_bytes(&p, r->mem_kind) / GIB;
        o->mem_err = o->pred_gib / o->meas_gib - 1.0;
        o->oom = p.verdict == PLAN_OOM;
        o->over_limit = !plan_may_fit(&p);
        o->uncertain = p.verdict == PLAN_UNCERTAIN;
        if (r->model->experts) { /* mixture-of-experts runs: their own groups */
            add(&sum->moe, o->tok_err);
            add(o->holdout ? &sum->moe_holdout : &sum->moe_dev, o->tok_err);
            FidelityGroup *mg = group(sum->moe_source, &sum->nmoe_sources, r->source_id);
            if (mg) add(mg, o->tok_err);
            sum->moe_false_oom += o->oom;
            sum->moe_uncertain += o->uncertain;
            continue;
        }
        sum->false_oom += o->oom;
        sum->uncertain += o->uncertain;
        sum->over_limit += o->over_limit;
        add(&sum->all, o->tok_err);
        add(o->holdout ? &sum->holdout : &sum->dev, o->tok_err);
        FidelityGroup *g = group(sum->stack, &sum->nstacks, r->stack->name);
        if (g) add(g, o->tok_err);
        g = group(sum->source, &sum->nsources, r->source_id);
        if (g) add(g, o->tok_err);
        if (!strcmp(r->source_id, FIDELITY_TABLE5_SOURCE)) add(&sum->table5, o->tok_err);
        add(&sum->mem_all, o->mem_err);
        if (r->mem_kind == MEMK_ALLOCATED || r->mem_kind == MEMK_RESERVED) {
            add(&sum->mem_traced, o->mem_err);
            if (!isnan(o->mem_err) && fabs(o->mem_err) > sum->mem_traced_max) sum->mem_traced_max = fabs(o->mem_err);
        }
    }
    snprintf(sum->all.name, sizeof sum->all.name, "all");
    snprintf(sum->dev.name, sizeof sum->dev.name, "dev (not held out)");
    snprintf(sum->holdout.name, sizeof sum->holdout.name, "hold-out");
    snprintf(sum->table5.name, sizeof sum->table5.name, "FP8-LM Table 5");
    snprintf(sum->mem_traced.name, sizeof sum->mem_traced.name, "memory, allocator-traced");
    snprintf(sum->mem_all.name, sizeof sum->mem_all.name, "memory, all published");
    snprintf(sum->moe.name, sizeof sum->moe.name, "mixture of experts");
    snprintf(sum->moe_dev.name, sizeof sum->moe_dev.name, "dev (not held out)");
    snprintf(sum->moe_holdout.name, sizeof sum->moe_holdout.name, "hold-out");
    return ST_OK;
}

Table *fidelity_rows_table(const FidelityRow *rows, int n)
{
    const TableCol cols[] = {
        {"id", NULL, NULL, TC_STR, 0, 0},
        {"stack", NULL, NULL, TC_STR, 0, 0},
        {"model", NULL, NULL, TC_STR, 0, 0},
        {"gpu", NULL, NULL, TC_STR, 0, 0},
        {"gpus", NULL, NULL, TC_U64, 0, 0},
        {"recipe", NULL, NULL, TC_STR, 0, 0},
        {"holdout", "held", NULL, TC_STR, 0, 0},
        {"measured_tokens_per_s_per_gpu", "tok/s/GPU", "meas", TC_F64, 0, 0},
        {"predicted_tokens_per_s_per_gpu", "tok/s/GPU", "pred", TC_F64, 0, 0},
        {"tokens_error_pct", "err", "%", TC_F64, 1, 0},
        {"mem_kind", "kind", NULL, TC_STR, 0, 0},
        {"measured_mem_gib", "mem", "GiB meas", TC_F64, 1, 0},
        {"predicted_mem_gib", "mem", "GiB pred", TC_F64, 1, 0},
        {"mem_error_pct", "err", "%", TC_F64, 1, 0},
        {"predicted_total_gib", "total", "GiB", TC_F64, 1, 0},
        {"verdict", NULL, NULL, TC_STR, 0, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    for (int i = 0; t && i < n; i++) {
        const FidelityRow *o = &rows[i];
        const MeasuredRun *r = o->run;
        table_row(t);
        int k = 0;
        table_str(t, k++, r->id);
        table_str(t, k++, r->stack->name);
        table_str(t, k++, r->model->name);
        table_str(t, k++, r->gpu->name);
        table_u64(t, k++, r->gpus);
        table_str(t, k++, r->recipe->name);
        table_str(t, k++, o->holdout ? "yes" : "no");
        const double v[] = {o->meas_tok, o->pred_tok, 100 * o->tok_err};
        for (int j = 0; j < 3; j++, k++)
            if (!isnan(v[j])) table_f64(t, k, v[j]);
        table_str(t, k++, isnan(o->meas_gib) ? "" : r->mem_kind == MEMK_NONE ? "total" : mem_kind_name(r->mem_kind));
        const double m[] = {o->meas_gib, isnan(o->meas_gib) ? NAN : o->pred_gib, 100 * o->mem_err, o->total_gib};
        for (int j = 0; j < 4; j++, k++)
            if (!isnan(m[j])) table_f64(t, k, m[j]);
        table_str(t, k++,
                  !o->planned     ? o->why
                  : o->oom        ? "OOM (ran)"
                  : o->over_limit ? "over limit"
                  : o->uncertain  ? "uncertain"
                                  : "fits");
    }
    return t;
}

static void group_row(Table *t, const char *kind, const FidelityGroup *g)
{
    table_row(t);
    table_str(t, 0, kind);
    table_str(t, 1, g->name);
    table_u64(t, 2, (uint64_t)g->n);
    if (g->n) table_f64(t, 3, 100 * g->mae), table_f64(t, 4, 100 * g->bias);
}

Table *fidelity_summary_table(const FidelitySummary *s)
{
    const TableCol cols[] = {
        {"kind", NULL, NULL, TC_STR, 0, 0},      {"group", NULL, NULL, TC_STR, 0, 0},
        {"rows", NULL, NULL, TC_U64, 0, 0},      {"mae_pct", "MAE", "%", TC_F64, 1, 0},
        {"bias_pct", "bias", "%", TC_F64, 1, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    if (!t) return NULL;
    group_row(t, "throughput", &s->all);
    group_row(t, "throughput", &s->dev);
    group_row(t, "throughput", &s->holdout);
    table_rule(t);
    for (int i = 0; i < s->nstacks; i++) group_row(t, "stack", &s->stack[i]);
    table_rule(t);
    for (int i = 0; i < s->nsources; i++) group_row(t, "source", &s->source[i]);
    table_rule(t);
    group_row(t, "throughput", &s->table5);
    group_row(t, "memory", &s->mem_traced);
    group_row(t, "memory", &s->mem_all);
    if (s->moe.n) {
        table_rule(t);
        group_row(t, "moe", &s->moe);
        group_row(t, "moe", &s->moe_dev);
        group_row(t, "moe", &s->moe_holdout);
        for (int i = 0; i < s->nmoe_sources; i++) group_row(t, "moe source", &s->moe_source[i]);
    }
    return t;
}
