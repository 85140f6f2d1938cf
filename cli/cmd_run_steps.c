/* cli/cmd_run_steps.c — `fp8plan run`'s training loop, its CSV side files
 * (the scaling trace, the loss log) and the end-of-run report: wiring the
 * measurement (exec/measure/measurement.h), the comparison
 * (exec/measure/compare.h) and its rendering (reports/run_report.h). */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_run.h"
#include "exec/comm/comm_mpi.h"
#include "cli/cmd_run_check.h"
#include "exec/measure/compare.h"
#include "reports/run_report.h"

/* One CSV row per FP8 tensor of the step just taken (its last micro-batch). */
static void trace_rows(FILE *f, const Model *m)
{
    for (uint32_t l = 0; l < m->spec.layers; l++)
        for (int k = 0; k < LIN_KINDS; k++) {
            if (!model_has_linear(m, l, (LinearKind)k)) continue; /* not this block's attention, or no FFN */
            const struct {
                const char *bank, *operand;
                const ScalingBank *b;
                const BankTrace *t;
                uint32_t slot;
            } r[3] = {{"fwd", "x", &m->sc.fwd, &m->tr_fwd, model_slot_x(m, l, (LinearKind)k)},
                      {"fwd", "w", &m->sc.fwd, &m->tr_fwd, model_slot_w(m, l, (LinearKind)k)},
                      {"bwd", "dy", &m->sc.bwd, &m->tr_bwd, model_slot_dy(m, l, (LinearKind)k)}};
            for (int i = 0; i < 3; i++)
                fprintf(f, "%u,%s,%u,%s,%s,%s,%.17g,%.17g,%.17g\n", m->step, r[i].bank, l, linear_name((LinearKind)k),
                        r[i].operand, dtype_name(r[i].b->fmt), (double)r[i].t->amax[r[i].slot],
                        (double)r[i].t->scale_used[r[i].slot], (double)r[i].t->scale_next[r[i].slot]);
        }
    /* a MoE block's routed experts, one tensor each: linear experts.fc1.G / experts.fc2.G */
    for (uint32_t l = 0; l < m->spec.layers; l++)
        for (int f2 = 0; m->spec.experts && l + m->layer0 >= m->spec.dense_layers && f2 < 2; f2++)
            for (uint32_t g = 0; g < m->spec.experts; g++)
                for (int op = 0; op < 3; op++) {
                    const ScalingBank *b = op < 2 ? &m->sc.fwd : &m->sc.bwd;
                    const BankTrace *t = op < 2 ? &m->tr_fwd : &m->tr_bwd;
                    uint32_t slot = model_slot_expert(m, l, f2, op) + g;
                    fprintf(f, "%u,%s,%u,experts.fc%d.%u,%s,%s,%.17g,%.17g,%.17g\n", m->step, op < 2 ? "fwd" : "bwd", l,
                            f2 + 1, g,
                            op == 0   ? "x"
                            : op == 1 ? "w"
                                      : "dy",
                            dtype_name(b->fmt), (double)t->amax[slot], (double)t->scale_used[slot],
                            (double)t->scale_next[slot]);
                }
}

/* SIGINT or SIGTERM asks a one-rank run to stop: the step in flight finishes
 * and the report covers the steps taken; a second one ends the process at
 * once. Several ranks keep the default action (stopping would need the ranks
 * to agree on the last step: a collective the plan does not count). */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
    if (stop_sig) outfile_die_of_signal(sig);
    stop_sig = sig;
}

void run_stop_on_signals(int ranks)
{
    if (ranks != 1) return;
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction sa;
        if (sigaction(sigs[i], NULL, &sa) || sa.sa_handler == SIG_IGN) continue; /* nohup, a background job */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* FP8PLAN_FAULT_STEP=N (a test hook): step N fails as a backend error would. */
static uint32_t fault_step(void)
{
    const char *v = getenv("FP8PLAN_FAULT_STEP");
    return v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

/* FP8PLAN_FAULT_EP_COUNTS=R (a test hook): with expert parallelism, rank R announces to its next EP peer one
 * row more than it dispatches, so the peers' counts disagree (exec/model/model_moe_ep.c). */
static int fault_ep_counts(const Model *m)
{
    const char *v = getenv("FP8PLAN_FAULT_EP_COUNTS");
    return v && *v && m->comm && strtol(v, NULL, 10) == m->comm->rank;
}

int run_train(const RunArgs *a, Model *m, DataStream *d, Measurement *ms, RunFiles *sf)
{
    m->ep_fault = fault_ep_counts(m);
    /* every rank draws the whole global batch (dp x n tokens: the stream stays
     * the same on every rank, and in a checkpoint) and trains on its share */
    const uint64_t bt = (uint64_t)m->batch * m->seq, n = model_step_tokens(m), all = n * m->dp;
    const uint64_t mine = n * (uint64_t)m->dp_rank; /* TP/PP ranks share their DP rank's */
    int32_t *in = malloc(all * sizeof *in), *tgt = malloc(all * sizeof *tgt);
    Err e;
    int rc = 0;
    double t0 = run_now_s();
    const uint32_t fault = fault_step();
    if (!in || !tgt) rc = run_fail((err_set(&e, ST_NOMEM, "out of memory"), &e));
    for (uint32_t i = 0; !rc && i < a->steps; i++) {
        float loss;
        if (stop_sig) {
            run_progress_end();
            fprintf(stderr, "fp8plan run: %s: stopped after %u of the %u steps asked for\n",
                    stop_sig == SIGINT ? "SIGINT" : "SIGTERM", i, a->steps);
            rc = 128 + stop_sig;
            break;
        }
        for (uint64_t k = 0; k < (uint64_t)m->microbatches * m->dp; k++)
            data_next(d, m->batch, m->seq, in + k * bt, tgt + k * bt);
        if (fault && m->step + 1 == fault) {
            err_set(&e, ST_SOFTWARE, "step %u: fault injected (FP8PLAN_FAULT_STEP=%u)", fault, fault);
            run_progress_end();
            rc = run_fail(&e);
            break;
        }
        if (measure_step(ms, m, in + mine, tgt + mine, &loss, &e)) {
            err_prefix(&e, "step %u", m->step + 1);
            rc = run_fail(&e);
            break;
        }
        if (sf->trace_open) trace_rows(sf->trace.f, m);
        if (sf->loss_open) fprintf(sf->loss.f, "%u,%.9g\n", m->step, (double)loss);
        if (!isfinite(loss)) {
            rc = run_fail(
                (err_set(&e, ST_DATA, "step %u: the loss is %g (training diverged)", m->step, (double)loss), &e));
            break;
        }
        run_progress_end(); /* the progress line goes, the log line comes, the progress line returns */
        if (!a->quiet && (i % a->log_every == 0 || i + 1 == a->steps)) {
            printf("step %6u  loss %8.4f  %9.0f tok/s  fwd %8.2f ms  bwd %8.2f ms  opt %7.2f ms\n", m->step,
                   (double)loss, (double)n / ms->step_s[i], 1e3 * m->phase_s[PHASE_FWD], 1e3 * m->phase_s[PHASE_BWD],
                   1e3 * m->phase_s[PHASE_OPT]);
            fflush(stdout);
        }
        run_progress_step(i + 1, a->steps, run_now_s() - t0);
    }
    run_progress_end();
    free(in);
    free(tgt);
    return rc;
}

/* Open the side files the flags ask for (a trace needs an FP8 recipe). */
int run_files_open(const RunArgs *a, Model *m, RunFiles *sf)
{
    Err e;
    if (a->trace) {
        if (!recipe_fp8_gemm(&m->recipe))
            return cli_usage(RUN_CMD, "--scaling-trace: recipe %s has no FP8 tensors", m->recipe.name);
        if (exec_block_scaled(&m->recipe))
            return cli_usage(RUN_CMD, "--scaling-trace: recipe %s scales per block; the trace lists per-tensor scales",
                             m->recipe.name);
        if (model_trace_enable(m, &e) || outfile_open(&sf->trace, a->trace, &e)) return run_fail(&e);
        sf->trace_open = 1;
        fprintf(sf->trace.f, "step,bank,layer,linear,operand,format,amax,scale_used,scale_next\n");
    }
    if (a->loss_log) {
        if (outfile_open(&sf->loss, a->loss_log, &e)) return run_fail(&e);
        sf->loss_open = 1;
        fprintf(sf->loss.f, "step,loss\n");
    }
    if (a->want_routing) { /* every rank records its routing */
        if (!m->moe_layers) return cli_usage(RUN_CMD, "--routing-log: model %s has no MoE layers", m->spec.name);
        uint64_t n = (uint64_t)m->moe_layers * m->spec.experts;
        if (!(m->route_log = calloc((size_t)a->steps * n, sizeof *m->route_log)))
            return run_fail((err_set(&e, ST_NOMEM, "out of memory for the routing log"), &e));
        m->route_cap = a->steps;
    }
    if (a->routing_log) {
        if (outfile_open(&sf->routing, a->routing_log, &e)) return run_fail(&e);
        sf->routing_open = 1;
        fprintf(sf->routing.f, "step,layer,rank,expert,token_copies\n");
    }
    return 0;
}

int run_routing_write(const RunArgs *a, Model *m, RunFiles *sf)
{
    if (!a->want_routing) return 0;
    Err e;
    const uint64_t E = m->spec.experts, n = (uint64_t)m->moe_layers * E, S = m->route_steps;
    const int R = m->comm->size;
    uint64_t *all = sf->routing_open ? calloc((size_t)R * S * n + 1, sizeof *all) : NULL;
    if (sf->routing_open && !all) return run_fail((err_set(&e, ST_NOMEM, "out of memory for the routing log"), &e));
    if (comm_gather_bytes(m->comm, m->route_log, S * n * sizeof *all, all, &e)) {
        free(all);
        return run_fail(&e);
    }
    for (uint64_t t = 0; sf->routing_open && t < S; t++)
        for (uint32_t l = 0, i = 0; l < m->spec.layers; l++) {
            if (l + m->layer0 < m->spec.dense_layers) continue; /* a dense layer */
            for (int r = 0; r < R; r++)
                for (uint64_t x = 0; x < E; x++)
                    fprintf(sf->routing.f, "%llu,%u,%d,%llu,%llu\n", (unsigned long long)(m->step - S + t + 1),
                            l + m->layer0, r, (unsigned long long)x,
                            (unsigned long long)all[((uint64_t)r * S + t) * n + (uint64_t)i * E + x]);
            i++;
        }
    free(all);
    return 0;
}

int run_files_commit(RunFiles *sf)
{
    Err e;
    OutFile *f[3] = {&sf->trace, &sf->loss, &sf->routing};
    int *open[3] = {&sf->trace_open, &sf->loss_open, &sf->routing_open};
    for (int i = 0; i < 3; i++) {
        if (!*open[i]) continue;
        *open[i] = 0;
        if (outfile_commit(f[i], &e)) return run_fail(&e);
    }
    return 0;
}

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
    run_report_summary(f, r->p, r->ms, data_entropy_floor(r->d));
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
        if (st) return run_fail(&e);
    }
    return 0;
}

/* A model with experts: the last step's routing per MoE layer — rows (token copies) per expert against the
 * plan's uniform expectation (micro-batches x B x T x top-k / E rows each, the most-loaded expert at
 * --moe-imbalance times the mean) — and the auxiliary loss. */
static void print_routing(const Plan *p, const Model *m)
{
    const ModelSpec *s = &m->spec;
    if (!m->moe_counts || !s->experts) return;
    const uint64_t E = s->experts, rows = (uint64_t)m->microbatches * m->batch * m->seq * s->experts_per_token;
    printf("routing (last step, rows per expert; the plan's uniform expectation %.2f, most-loaded x%.2f):\n",
           (double)rows / (double)E, p->in.moe_imbalance);
    for (uint32_t l = 0, i = 0; l < s->layers; l++) {
        if (l + m->layer0 < s->dense_layers) continue;
        const uint64_t *c = m->moe_counts + (uint64_t)i++ * E;
        uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
        for (uint64_t x = 0; x < E; x++) {
            lo = c[x] < lo ? c[x] : lo;
            hi = c[x] > hi ? c[x] : hi;
            sum += c[x];
        }
        printf("  layer %u: %llu rows, min %llu, max %llu per expert; most-loaded / mean %.2f\n", l + m->layer0,
               (unsigned long long)sum, (unsigned long long)lo, (unsigned long long)hi,
               sum ? (double)hi * (double)E / (double)sum : 0.0);
    }
    if (s->router == ROUTER_SOFTMAX) printf("  auxiliary balance loss (not in the loss above): %.6f\n", m->moe_aux);
}

int run_report(const RunArgs *a, const Plan *p, const Model *m, const Measurement *ms, const DataStream *d,
               const RankData *ranks)
{
    static Comparison cmp;
    Tolerances tol = compare_tolerances_default();
    compare(p, ms, &tol, &cmp);
    ReportCtx ctx = {p, ms, d, &cmp};
    char *summary = captured(summary_of, &ctx), *verdict = captured(verdict_of, &ctx);
    int rc = summary && verdict ? 0 : cli_nomem(RUN_CMD, "the report's summary");
    if (!rc) fputs(summary, stdout);
    if (!rc && m) print_routing(p, m);
    if (!rc) rc = print_tables(p, ms, &cmp);
    if (!rc && a->out.path) {
        Table *t = run_report_table(&cmp, RUN_TABLE_ALL);
        if (t && ranks && a->out.fmt != TABLE_HTML) { /* several ranks: a rank column, every rank's rows */
            Table *all = run_rank_csv(t, p, ranks);
            table_free(t);
            t = all;
        }
        rc = !t                         ? cli_nomem(RUN_CMD, "the report's rows")
             : a->out.fmt == TABLE_HTML ? run_html(a, p, m, ms, &cmp, t, summary, verdict)
                                        : cli_emit_table(RUN_CMD, t, &a->out);
        table_free(t);
    }
    if (!rc) fputs(verdict, stdout);
    free(summary);
    free(verdict);
    if (rc) return rc;
    return cmp.failed ? status_exit_code(ST_TOLERANCE) : 0;
}

void run_files_abort(RunFiles *sf)
{
    if (sf->trace_open) outfile_abort(&sf->trace);
    if (sf->loss_open) outfile_abort(&sf->loss);
    if (sf->routing_open) outfile_abort(&sf->routing);
    sf->trace_open = sf->loss_open = sf->routing_open = 0;
}
