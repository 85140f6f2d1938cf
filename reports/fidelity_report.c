/* reports/fidelity_report.c — published runs against the plan as tables (see fidelity_report.h). */
#include "reports/fidelity_report.h"

#include <math.h>

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
        for (int i = 0; i < s->nmoe_dev_gpus; i++) group_row(t, "moe dev gpu", &s->moe_dev_gpu[i]);
    }
    return t;
}

Table *fidelity_pairs_table(const FidelityPair *p, int n)
{
    const TableCol cols[] = {
        {"bf16_id", "BF16 run", NULL, TC_STR, 0, 0},
        {"fp8_id", "FP8 run", NULL, TC_STR, 0, 0},
        {"fp8_recipe", "FP8 recipe", NULL, TC_STR, 0, 0},
        {"holdout", "held", NULL, TC_STR, 0, 0},
        {"measured_speedup", "speed-up", "meas", TC_F64, 3, 0},
        {"predicted_speedup", "speed-up", "pred", TC_F64, 3, 0},
        {"speedup_error_pct", "err", "%", TC_F64, 1, 0},
    };
    Table *t = table_new(cols, (int)(sizeof cols / sizeof *cols));
    for (int i = 0; t && i < n; i++) {
        table_row(t);
        table_str(t, 0, p[i].bf16->run->id);
        table_str(t, 1, p[i].fp8->run->id);
        table_str(t, 2, p[i].fp8->run->recipe->name);
        table_str(t, 3, p[i].fp8->holdout ? "yes" : "no");
        table_f64(t, 4, p[i].meas);
        table_f64(t, 5, p[i].pred);
        table_f64(t, 6, 100 * p[i].err);
    }
    return t;
}

Table *fidelity_terms_table(const FidelityRow *rows, int n)
{
    /* the TimeBreakdown terms that add up to step_s (plan_time.c), in its order */
    static const char *const names[] = {"gemm",    "attn",        "nongemm",   "tp_comm",   "cp_comm",
                                        "pp_comm", "bubble",      "dp_comm",   "optimizer", "weight_cast",
                                        "other",   "expert_gemm", "moe_route", "ep_comm",   "moe_host"};
    enum { NT = sizeof names / sizeof *names, NC = 6 + NT };
    TableCol cols[NC] = {
        {"id", NULL, NULL, TC_STR, 0, 0},
        {"gpu", NULL, NULL, TC_STR, 0, 0},
        {"experts", "MoE", NULL, TC_STR, 0, 0},
        {"holdout", "held", NULL, TC_STR, 0, 0},
        {"tokens_error_pct", "err", "%", TC_F64, 1, 0},
        {"step_s", "step", "s", TC_F64, 3, 0},
    };
    static char head[NT][32]; /* table_new keeps the pointers */
    for (int j = 0; j < NT; j++) {
        snprintf(head[j], sizeof head[j], "%s_pct", names[j]);
        cols[6 + j] = (TableCol){head[j], names[j], "%", TC_F64, 1, 0};
    }
    Table *t = table_new(cols, NC);
    for (int i = 0; t && i < n; i++) {
        const FidelityRow *o = &rows[i];
        if (!o->planned) continue;
        const TimeBreakdown *b = &o->time;
        const double v[NT] = {b->gemm_s,    b->attn_s,        b->nongemm_s,   b->tp_comm_s,   b->cp_comm_s,
                              b->pp_comm_s, b->bubble_s,      b->dp_comm_s,   b->optimizer_s, b->weight_cast_s,
                              b->other_s,   b->expert_gemm_s, b->moe_route_s, b->ep_comm_s,   b->moe_host_s};
        table_row(t);
        table_str(t, 0, o->run->id);
        table_str(t, 1, o->run->gpu->name);
        table_str(t, 2, o->run->model->experts ? "yes" : "no");
        table_str(t, 3, o->holdout ? "yes" : "no");
        if (!isnan(o->tok_err)) table_f64(t, 4, 100 * o->tok_err);
        table_f64(t, 5, b->step_s);
        for (int j = 0; j < NT; j++) table_f64(t, 6 + j, b->step_s > 0 ? 100 * v[j] / b->step_s : 0);
    }
    return t;
}
