/* cli/cmd_run_report.c — `fp8plan run`'s end-of-run report: the comparison of the measurement
 * (exec/measure/measurement.h) with the plan (check/compare.h), rendered by reports/run_report.h
 * on stdout and to -o. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cmd_run.h"
#include "check/compare.h"
#include "reports/run_report.h"

/* The comparison: summary lines and tables on stdout, every row to -o. */
/* fn's output as a string (NULL when out of memory; the caller frees it). */
static char *captured(void (*fn)(FILE *, const void *), const void *ctx)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    fn(f, ctx);
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

typedef struct {
    const Plan *p;
    const Measurement *ms;
    const DataStream *d;
    const Comparison *cmp;
} ReportCtx;

static void summary_of(FILE *f, const void *ctx)
{
    const ReportCtx *r = ctx;
    Observed ob;
    measure_observe(r->ms, &ob);
    run_report_summary(f, r->p, &ob, data_entropy_floor(r->d));
}

static void verdict_of(FILE *f, const void *ctx) { run_report_verdict(f, ((const ReportCtx *)ctx)->cmp); }

/* The tables on stdout. */
static int print_tables(const Plan *p, const Measurement *ms, const Comparison *cmp)
{
    char title[200];
    Err e;
    uint32_t from = measure_timed_from(ms);
    const RunTable which[2] = {RUN_TABLE_TERMS, RUN_TABLE_RATES};
    for (int i = 0; i < 2; i++) {
        if (i == 0)
            if (p->in.dp > 1)
                snprintf(title, sizeof title, "Plan (%s, per GPU at dp %u) versus measured (%s backend, rank 0)",
                         p->in.gpu->name, p->in.dp, ms->backend);
            else
                snprintf(title, sizeof title, "Plan (%s, 1 GPU) versus measured (%s backend)", p->in.gpu->name,
                         ms->backend);
        else
            snprintf(title, sizeof title, "Throughput and collective calls (median step of steps %u..%u; plan for %s)",
                     ms->first_step + from + 1, ms->first_step + ms->steps, p->in.gpu->name);
        Table *t = run_report_table(cmp, which[i]);
        if (!t) return cli_nomem(RUN_CMD, "the report's tables");
        table_set_title(t, title);
        printf("\n");
        Status st = table_write(t, TABLE_TEXT, stdout, &e);
        table_free(t);
        if (st) return cli_fail(RUN_CMD, &e);
    }
    return 0;
}

/* A model with experts: the last step's routing per MoE layer — rows (token copies) per expert against the
 * plan's uniform expectation (micro-batches x B x T x top-k / E rows each, the most-loaded expert at
 * --moe-imbalance times the mean) — and the auxiliary loss. */
static void print_routing(const Plan *p, const Model *m, const RankData *rd)
{
    const ModelSpec *s = &m->spec;
    const int stages = rd && rd->route_counts; /* pipeline stages: every stage's layers, gathered */
    const uint64_t *counts = stages ? rd->route_counts : m->moe_counts;
    const uint32_t n = stages ? rd->route_layers : m->moe_layers;
    if (!counts || !s->experts) return;
    /* the counts are the DP ranks' sum: the step's global batch (each rank's micro-batches x dp) */
    const uint64_t E = s->experts,
                   rows = (uint64_t)m->microbatches * (m->dp ? m->dp : 1) * m->batch * m->seq * s->experts_per_token;
    printf("routing (last step, rows per expert; the plan's uniform expectation %.2f, most-loaded x%.2f):\n",
           (double)rows / (double)E, p->in.moe_imbalance);
    for (uint32_t i = 0; i < n; i++) { /* MoE layer i is the model's layer dense_layers + i */
        const uint64_t *c = counts + (uint64_t)i * E;
        uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
        for (uint64_t x = 0; x < E; x++) {
            lo = c[x] < lo ? c[x] : lo;
            hi = c[x] > hi ? c[x] : hi;
            sum += c[x];
        }
        printf("  layer %u: %llu rows, min %llu, max %llu per expert; most-loaded / mean %.2f\n", s->dense_layers + i,
               (unsigned long long)sum, (unsigned long long)lo, (unsigned long long)hi,
               sum ? (double)hi * (double)E / (double)sum : 0.0);
    }
    if (s->router == ROUTER_SOFTMAX)
        printf("  auxiliary balance loss (not in the loss above): %.6f\n", stages ? rd->moe_aux : m->moe_aux);
}

int run_report(const RunSpec *a, const CliOut *out, const Plan *p, const Model *m, const Measurement *ms,
               const DataStream *d, const RankData *ranks)
{
    static Comparison cmp;
    static Plan routed;
    Tolerances tol = compare_tolerances_default();
    if (m && m->a2a_fits) { /* rank 0's expert all-to-alls planned from the messages its calls sent and received */
        double call_s[EPR_COUNT_] = {0};
        for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++)
            if (m->ep_msg_calls[i]) call_s[i] = m->ep_msg_s[i] / (double)m->ep_msg_calls[i];
        routed = *p;
        plan_ep_routed_times(&routed, call_s);
        p = &routed;
    }
    compare(p, ms, &tol, &cmp);
    ReportCtx ctx = {p, ms, d, &cmp};
    char *summary = captured(summary_of, &ctx), *verdict = captured(verdict_of, &ctx);
    int rc = summary && verdict ? 0 : cli_nomem(RUN_CMD, "the report's summary");
    if (!rc) fputs(summary, stdout);
    if (!rc && m) print_routing(p, m, ranks);
    if (!rc) rc = print_tables(p, ms, &cmp);
    if (!rc && out->path) {
        Table *t = run_report_table(&cmp, RUN_TABLE_ALL);
        if (t && ranks && out->fmt != TABLE_HTML) { /* several ranks: a rank column, every rank's rows */
            Table *all = run_rank_csv(t, p, ranks);
            table_free(t);
            t = all;
        }
        rc = !t                       ? cli_nomem(RUN_CMD, "the report's rows")
             : out->fmt == TABLE_HTML ? run_html(a, out, p, m, ms, &cmp, t, summary, verdict)
                                      : cli_emit_table(RUN_CMD, t, out);
        table_free(t);
    }
    if (!rc) fputs(verdict, stdout);
    free(summary);
    free(verdict);
    if (rc) return rc;
    return cmp.failed ? status_exit_code(ST_TOLERANCE) : 0;
}
