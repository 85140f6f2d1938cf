/* cli/cmd_report_html.c — `fp8plan report html`: a what-if session (one model,
 * GPU and layout across recipes) as one self-contained HTML page. */
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "cli/cmd_report.h"
#include "reports/html_whatif.h"
#include "reports/scaling_report.h"
#include "reports/seed_report.h"

static const char help_head[] =
    "usage: fp8plan report html [-o FILE] [--model M --gpu G --recipes R1,R2,...] [layout options]\n"
    "\n"
    "A what-if session as one self-contained HTML file (inline SVG and CSS, no scripts, no network; light,\n"
    "dark and print styles): per-GPU memory by state against capacity and the headroom limit, bytes and time\n"
    "per collective (exposed and overlapped), the step-time breakdown, the side-by-side table, bytes per\n"
    "parameter (Table 1a), scale storage of the model's largest linear weight on one TP rank (Table 1b) and\n"
    "delayed scaling of the seed's spike to 640 with the first delayed-scaling recipe's amax history. Each\n"
    "chart has the table it is drawn from beneath it.\n"
    "\n"
    "With no --model: the seed's headline run, gpt-175b on h100-sxm, TP 8 x PP 4 x DP 4 with the distributed\n"
    "optimizer (layout flags given still apply); with no --recipes: megatron-bf16,te-fp8,fp8lm.\n"
    "\n"
    "  -o FILE    write the page to FILE atomically (stdout without it)\n";

/* Table 1a rows of every plan's recipe, as one table. */
static Table *t1a_of(const Catalog *cat, const Plan *plans, int n, Err *e)
{
    Table *all = NULL;
    for (int i = 0; i < n; i++) {
        const Plan *p = &plans[i];
        int sharded = p->in.sharding == SHARD_DIST_OPT;
        Table *part = seed_table1a(cat, p->in.recipe, 0, sharded, sharded ? p->shard_ways : 1, e);
        if (!part) break;
        if (!all) {
            TableCol cols[32];
            int nc = table_ncols(part) < 32 ? table_ncols(part) : 32;
            for (int c = 0; c < nc; c++) cols[c] = *table_col(part, c);
            if (!(all = table_new(cols, nc))) err_set(e, ST_NOMEM, "out of memory");
        }
        if (all) table_append_keyed(all, -1, NULL, 0, part);
        table_free(part);
        if (!all) return NULL;
    }
    return all;
}

typedef struct {
    WhatIfPage pg;
} Job;

static Status page(FILE *f, const void *ctx, Err *e) { return html_whatif_page(f, &((const Job *)ctx)->pg, e); }

int report_html(int argc, char **argv)
{
    const char *cmd = "report html";
    static char help[12288];
    char opts[6144];
    snprintf(help, sizeof help, "%s\n%s", help_head, plan_options_help(PO_RECIPES | PO_LAYOUT, opts, sizeof opts));
    char **pargv = calloc((size_t)argc + 8, sizeof *pargv);
    if (!pargv) return cli_fail(cmd, &(Err){ST_NOMEM, "out of memory"});
    int pargc = 0, rc;
    pargv[pargc++] = argv[0];
    pargv[pargc++] = "--model", pargv[pargc++] = (char *)plan_headline_model;
    pargv[pargc++] = "--gpu", pargv[pargc++] = (char *)plan_headline_gpu;
    pargv[pargc++] = "--recipes", pargv[pargc++] = "megatron-bf16,te-fp8,fp8lm";
    for (int i = 1; i < argc; i++) pargv[pargc++] = argv[i];
    PlanArgs a;
    rc = plan_args_parse(cmd, pargc, pargv, PO_RECIPES | PO_LAYOUT, help, &a);
    free(pargv);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.out.fmt != TABLE_TEXT && a.out.fmt != TABLE_HTML) return cli_usage(cmd, "--format: this report is html");
    a.out.fmt = TABLE_HTML;
    plan_args_headline(&a);
    Catalog *cat;
    if ((rc = plan_catalog_load(cmd, a.catalog, &cat))) return rc;
    Plan *plans = NULL;
    int n = 0;
    Table *t1a = NULL, *t1b = NULL, *trace = NULL;
    char t1b_what[256], trace_what[256];
    Err e;
    if ((rc = plan_build_recipes(cmd, cat, &a, &plans, &n))) goto done;
    /* the model's largest linear weight, FC1 ([k x ffn / tp, hidden]; k = 2 for SwiGLU's gate and up) */
    const PlanInput *in = &plans[0].in;
    uint64_t rows = (uint64_t)(in->model->mlp == MLP_SWIGLU ? 2 : 1) * in->model->ffn_hidden / in->tp;
    snprintf(t1b_what, sizeof t1b_what, "The FC1 weight of %s on one TP rank (TP %u): %llu x %u", in->model->name,
             in->tp, (unsigned long long)rows, in->model->hidden);
    const Recipe *delayed = NULL;
    for (int i = 0; i < n && !delayed; i++)
        if (plans[i].in.recipe->scaling == SCALING_DELAYED) delayed = plans[i].in.recipe;
    if (!(t1a = t1a_of(cat, plans, n, &e)) || !(t1b = seed_table1b(rows, in->model->hidden, &e))) {
        rc = cli_fail(cmd, &e);
        goto done;
    }
    if (delayed) {
        DelayedCfg cfg = {DT_E4M3, delayed->amax_history ? delayed->amax_history : 1, AMAX_ALGO_MAX, 0};
        float amax[SCALING_TRACE_STEPS];
        scaling_spike_trace(amax);
        snprintf(trace_what, sizeof trace_what, "%s's delayed scaling (E4M3, amax history %u, max, margin 0)",
                 delayed->name, cfg.hist_len);
        if (!(trace = scaling_trace_table(&cfg, amax, SCALING_TRACE_STEPS, &e))) {
            rc = cli_fail(cmd, &e);
            goto done;
        }
    }
    Job j = {{plans, n, plans[0].in.max_mem_frac, t1a, t1b, t1b_what, trace, trace_what}};
    rc = cli_emit_page(cmd, &a.out, page, &j);
done:
    table_free(t1a);
    table_free(t1b);
    table_free(trace);
    free(plans);
    free(cat);
    return rc;
}
