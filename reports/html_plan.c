/* reports/html_plan.c — plan and compare pages (see html_plan.h). */
#include "reports/html_plan.h"

#include <stdlib.h>
#include <string.h>

#include "reports/chart_bars.h"
#include "reports/chart_plan.h"
#include "reports/plan_report.h"

static void nomem(HtmlDoc *d, const char *what)
{
    Err e;
    err_set(&e, ST_NOMEM, "out of memory building the %s table", what);
    html_fail(d, &e);
}

static void memory_chart(HtmlDoc *d, const Plan *plans, int n, double headroom_frac)
{
    Table *t = chart_memory_table(plans, n);
    if (!t) return nomem(d, "memory");
    char headroom[96], desc[400];
    snprintf(headroom, sizeof headroom, "headroom limit (%.0f %% of capacity)", 100 * headroom_frac);
    snprintf(desc, sizeof desc,
             "Bytes on the most-loaded GPU (PP stage %u), grouped as the seed accounts for them; GB = 1e9 B. The "
             "marks are the GPU's capacity and the headroom limit.",
             plans[0].stage);
    BarSpec s = {
        .id = "mem",
        .title = "Per-GPU memory by state",
        .desc = desc,
        .axis = "per-GPU memory (GB = 1e9 B)",
        .unit = "GB",
        .scale = 1e-9,
        .decimals = 2,
        .cat_col = "recipe",
        .nbars = 1,
        .refs = {{"capacity_bytes", 1, "capacity"}, {"capacity_bytes", headroom_frac, headroom}},
        .nrefs = headroom_frac > 0 ? 2 : 1,
        .table_caption = "per-GPU bytes by group (each group is the sum of its terms in plan --view terms)",
    };
    for (int g = 0; g < MG_COUNT_; g++) {
        s.bars[0].cols[g] = mem_group_col((MemGroup)g);
        s.seg_labels[g] = mem_group_label((MemGroup)g);
    }
    chart_bars(d, t, &s);
    table_free(t);
}

static void comm_charts(HtmlDoc *d, const Plan *plans, int n)
{
    Table *t = chart_collectives_table(plans, n);
    if (!t) return nomem(d, "collectives");
    BarSpec bytes = {
        .id = "comm-bytes",
        .title = "Bytes sent per step, per collective",
        .desc = "What each GPU sends per step (bus bytes: ring factors as nccl-tests defines them, times the calls "
                "per step); GB = 1e9 B. Collectives a layout does not use are left out.",
        .axis = "bytes sent per GPU per step (GB = 1e9 B)",
        .unit = "GB",
        .scale = 1e-9,
        .decimals = 3,
        .cat_col = "collective",
        .series_col = "recipe",
        .skip_col = "link",
        .skip_val = "-",
        .bars = {{.cols = {"step_bytes"}}},
        .nbars = 1,
        .table_caption = "every collective of each plan, as plan --view collectives writes them",
        .collapse_after = 16,
    };
    chart_bars(d, t, &bytes);
    BarSpec time = bytes;
    time.id = "comm-time";
    time.title = "Time per collective: exposed and overlapped";
    time.desc = "Seconds per step each collective takes; the hatched inner bar is the exposed part on the critical "
                "path, the rest of the bar is hidden behind compute.";
    time.axis = "seconds per step";
    time.unit = "s";
    time.scale = 1;
    time.decimals = 4;
    time.bars[0] = (BarDef){.cols = {"time_s", "exposed_s"}, .overlay = 1};
    time.seg_labels[0] = "overlapped with compute (the bar beyond the exposed part)";
    time.seg_labels[1] = "exposed";
    chart_bars(d, t, &time);
    table_free(t);
}

static void time_chart(HtmlDoc *d, const Plan *plans, int n)
{
    Table *t = chart_time_table(plans, n);
    if (!t) return nomem(d, "time");
    BarSpec s = {
        .id = "time",
        .title = "Step time breakdown",
        .desc = "Seconds per optimizer step by item: GEMMs at the recipe's rate, attention, memory-bound work, each "
                "communication class's exposed time, the pipeline bubble, the optimizer.",
        .axis = "seconds per step",
        .unit = "s",
        .scale = 1,
        .decimals = 3,
        .cat_col = "recipe",
        .stack_col = "item",
        .skip_col = "item",
        .skip_val = "step",
        .bars = {{.cols = {"seconds"}}},
        .nbars = 1,
        .table_caption = "the step-time items of each plan, as plan --view time writes them",
        .collapse_after = 24,
    };
    chart_bars(d, t, &s);
    table_free(t);
}

void html_plan_charts(HtmlDoc *d, const Plan *plans, int n, double headroom_frac)
{
    html_h2(d, "memory", "Memory");
    memory_chart(d, plans, n, headroom_frac);
    html_h2(d, "communication", "Communication");
    comm_charts(d, plans, n);
    html_h2(d, "step-time", "Step time");
    time_chart(d, plans, n);
}

void html_plan_layout_line(const Plan *p, char *buf, size_t size)
{
    const PlanInput *in = &p->in;
    snprintf(buf, size,
             "%s on %s, stack %s: TP %u x PP %u (vpp %u) x CP %u x DP %u = %u GPUs, micro-batch %u, global batch "
             "%llu, seq %u, sharding %s, recompute %s",
             in->model->name, in->gpu->name, in->stack ? in->stack->name : "none", in->tp, in->pp, in->vpp, in->cp,
             in->dp, p->world, in->mbs, (unsigned long long)in->gbs, p->seq, sharding_name(in->sharding),
             recompute_name(in->recompute));
}

static void put_table(HtmlDoc *d, Table *t, const char *id, const char *caption, int collapse)
{
    if (!t) return nomem(d, id);
    html_table(d, t, id, caption, collapse);
    table_free(t);
}

Status html_plan_page(FILE *f, const Plan *p, double headroom_frac, const char *trust, Err *e)
{
    HtmlDoc d;
    char title[256], sub[512];
    snprintf(title, sizeof title, "fp8plan plan: %s on %s, recipe %s", p->in.model->name, p->in.gpu->name,
             p->in.recipe->name);
    html_plan_layout_line(p, sub, sizeof sub);
    html_begin(&d, f, title, sub);
    html_p(&d,
           "%s: %.2f GB of %.2f GB (%.1f %% of capacity). %.0f tokens/s, %.1f TFLOP/s per GPU, MFU %.1f %% of "
           "the BF16 peak, %.1f %% of the FP8 peak.",
           plan_verdict_name(p->verdict), plan_gb(p->total_bytes), plan_gb(p->capacity_bytes),
           100.0 * (double)p->total_bytes / (double)p->capacity_bytes, p->tokens_per_s, p->tflops_per_gpu,
           p->mfu_bf16_pct, p->mfu_fp8_pct);
    if (p->in.mem_unknown) { /* the open choices: the band, and what each saving alone takes off */
        char list[160], each[512];
        size_t k = 0;
        each[0] = '\0';
        for (int i = 0; i < PLAN_UNK_COUNT_ && k < sizeof each; i++)
            if (p->in.mem_unknown & plan_unknowns[i].bit)
                k += (size_t)snprintf(each + k, sizeof each - k, "%s%s %.2f GB", k ? ", " : "", plan_unknowns[i].name,
                                      plan_gb(p->unknown_bytes[i]));
        char need[128] = "";
        if (p->verdict == PLAN_UNCERTAIN)
            snprintf(need, sizeof need, " It fits if the savings that hold take at least %.2f GB off the total.",
                     plan_gb(p->total_bytes - p->limit_bytes));
        plan_unknown_format(p->in.mem_unknown, list, sizeof list);
        html_p(&d,
               "Open choices (--unknown %s): the terms below take none of their savings; with all of them the "
               "plan needs %.2f GB (PP stage %u). Each alone takes off the total: %s.%s",
               list, plan_gb(p->low_bytes), p->low_stage, each, need);
    }
    if (trust) html_p(&d, "%s", trust); /* how far to trust that throughput (cli plan_trust_text) */
    html_plan_charts(&d, p, 1, headroom_frac);
    html_h2(&d, "terms", "Every memory term");
    put_table(&d, plan_terms_table(p), "terms", "plan --view terms", 0);
    if (p->advice_mask) {
        html_h2(&d, "advice", "Advice");
        html_list_begin(&d);
        for (int a = 0; a < ADV_COUNT_; a++)
            if (p->advice_mask & (1u << a)) html_li(&d, "%s", advice_text((AdviceId)a));
        html_list_end(&d);
    }
    /* the text report as `fp8plan plan` prints it: inputs, assumptions, every number */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    Err te;
    if (!m || plan_write_text(p, m, &te)) {
        if (m) fclose(m);
        free(text);
        err_set(&te, ST_NOMEM, "out of memory writing the text report");
        html_fail(&d, &te);
    } else {
        fclose(m);
        html_h2(&d, "text", "The text report");
        html_pre(&d, text);
        free(text);
    }
    return html_end(&d, e);
}

Status html_compare_page(FILE *f, const Plan *plans, int n, double headroom_frac, const char *trust, Err *e)
{
    HtmlDoc d;
    char title[256], sub[512];
    snprintf(title, sizeof title, "fp8plan compare: %s on %s, %d recipes", plans[0].in.model->name,
             plans[0].in.gpu->name, n);
    html_plan_layout_line(&plans[0], sub, sizeof sub);
    html_begin(&d, f, title, sub);
    if (trust) html_p(&d, "%s", trust);
    html_plan_charts(&d, plans, n, headroom_frac);
    html_h2(&d, "side-by-side", "Side by side");
    put_table(&d, plan_compare_table(plans, n), "compare",
              "per GPU, GB = 1e9 B; communication = bytes each GPU sends per step; change against the first recipe", 0);
    Table *t = plan_summary_new(0);
    for (int i = 0; t && i < n; i++) plan_summary_row(t, &plans[i], 0);
    put_table(&d, t, "summary", "compare --format csv", 0);
    return html_end(&d, e);
}
