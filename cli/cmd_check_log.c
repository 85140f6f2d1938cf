/* cli/cmd_check_log.c — fp8plan check-log LOG --from CONFIG: a run someone did (a Megatron-LM or torchtitan
 * log, Megatron-LM's functional-test golden values) beside the plan of its configuration, with the verdict
 * columns of `fp8plan run` (check/compare.h's rows, reports/run_report.h's tables).
 *
 * Rows: the step time (median over the logged steps after the warm-up, checked against the plan within
 * the run's step-time tolerance, 15 %), the allocator's peaks (torch max_memory_allocated against the
 * plan's allocated bytes within 8 %; max_memory_reserved beside the plan's reserved bytes, shown: the
 * allocator reserve is a stack convention), and tokens/s and TFLOP/s per GPU (shown: they follow from the
 * step time, and each framework counts FLOPs its own way). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_plan.h"
#include "check/compare.h"
#include "import/runlog.h"
#include "catalog/measured.h"
#include "reports/run_report.h"
#include "util/num.h"

#define CMD "check-log"

/* the target for allocator-traced peaks: within 8 % */
#define ALLOC_TOL 0.08

static const char help_head[] =
    "usage: fp8plan check-log LOG --from CONFIG [--warmup N] [plan options] [--format table|csv|json|html] [-o FILE]\n"
    "\n"
    "A training run's log beside the plan of its configuration (docs/import.md). LOG is a Megatron-LM or\n"
    "Megatron-Bridge log (iteration and memory lines), a torchtitan log (step lines) or a Megatron-LM\n"
    "functional-test golden_values JSON; --from reads the run's configuration as `fp8plan plan --from`\n"
    "does, and every plan option (--gpu, --gpus, --model, ...) applies on top of it.\n"
    "\n"
    "  --warmup N         logged steps skipped before the median step time (a tenth of them, at least 1)\n"
    "  --measured-row ID  write the run as a row of measured.csv instead (CSV, exit 0): append it to your\n"
    "                     catalog copy's measured.csv and `report fidelity --catalog DIR` checks the planner on it\n"
    "\n"
    "Rows: step time (tolerance 15 %), max allocated (tolerance 8 %), max reserved, tokens/s and TFLOP/s\n"
    "per GPU (shown). Exit 1 when a checked row is outside its tolerance.\n\n";

static char help_buf[8192];

static const char *help_text(void)
{
    char opts[6144];
    snprintf(help_buf, sizeof help_buf, "%s%s", help_head, plan_options_help(PO_RECIPE | PO_LAYOUT, opts, sizeof opts));
    return help_buf;
}

typedef struct {
    const Plan *p;
    const RunLog *l;
    const char *log;
    Comparison *c;
    size_t used, skipped;
} Page;

static Status page(FILE *f, const void *ctx, Err *e)
{
    const Page *g = ctx;
    const Plan *p = g->p;
    table_put_prose(f,
                    "%s (%s): %zu logged steps, the first %zu skipped as warm-up, the median of %zu taken. Plan: %s "
                    "on %s, %s, stack %s, TP %u x PP %u x CP %u x DP %u = %u GPUs, micro-batch %u, global batch "
                    "%llu, seq %u.",
                    g->log, runlog_kind_name(g->l->kind), g->l->n, g->skipped, g->used, p->in.model->name,
                    p->in.gpu->name, p->in.recipe->name, p->in.stack ? p->in.stack->name : "none", p->in.tp, p->in.pp,
                    p->in.cp, p->in.dp, p->world, p->in.mbs, (unsigned long long)p->in.gbs, p->seq);
    for (int i = 0; i < 2; i++) {
        Table *t = run_report_table(g->c, i ? RUN_TABLE_RATES : RUN_TABLE_TERMS);
        if (!t) return err_set(e, ST_NOMEM, "out of memory for the tables");
        table_set_title(t, i ? "Rates (shown, not checked)" : "Plan versus the log");
        fprintf(f, "\n");
        Status st = table_write(t, TABLE_TEXT, f, e);
        table_free(t);
        if (st) return st;
    }
    fprintf(f, "\n%d checked row%s outside %s tolerance\n", g->c->failed, g->c->failed == 1 ? "" : "s",
            g->c->failed == 1 ? "its" : "their");
    return ST_OK;
}

static void row(Comparison *c, CompareSection sec, const char *name, const char *cat, RowUnit kind, double planned,
                double measured, MeasureMode mode, double tol, const char *note, const char *unit)
{
    const int have = !isnan(measured);
    MeasureRow *r = cmp_row(c, sec, name, cat, kind, have ? mode : MEASURE_INFO, have ? note : "not in the log");
    cmp_set(r, 1, planned, have, have ? measured : 0);
    if (r) r->tol = tol, r->unit = unit;
}

/* The run as a row of measured.csv (catalog/measured.h's columns): what `report fidelity --catalog DIR`
 * reads once the row is appended to DIR/measured.csv. Blank where the run keeps its stack's value. */
static Table *measured_row(const PlanArgs *a, const Plan *p, const RunLog *l, const char *log, const char *id,
                           double step_s, double tok_s_gpu, size_t used, size_t skipped)
{
    enum { NCOL = 35 };
    TableCol cols[NCOL];
    static char names[NCOL][32]; /* table_new copies the columns, not their names */
    const char *m = measured_columns;
    int n = 0;
    while (*m && n < NCOL) {
        size_t k = strcspn(m, ",");
        snprintf(names[n], sizeof names[n], "%.*s", (int)k, m);
        cols[n] = (TableCol){names[n], NULL, NULL, TC_STR, 0, 0};
        n++;
        m += k + (m[k] == ',');
    }
    Table *t = n == NCOL && !*m ? table_new(cols, n) : NULL;
    if (!t) return NULL;
    const PlanInput *in = &p->in;
    const char *yn[] = {"no", "yes"};
    int i = 0;
    table_row(t);
    table_str(t, i++, id);
    table_str(t, i++, "check-log");
    table_str(t, i++, in->stack ? in->stack->name : "");
    table_str(t, i++, in->model->name);
    table_str(t, i++, in->gpu->name);
    table_strf(t, i++, "%u", p->world);
    table_strf(t, i++, "%u", in->tp);
    table_strf(t, i++, "%u", in->pp);
    table_strf(t, i++, "%u", in->vpp ? in->vpp : 1);
    table_strf(t, i++, "%u", in->cp);
    table_strf(t, i++, "%u", in->dp);
    table_strf(t, i++, "%u", in->mbs);
    table_strf(t, i++, "%llu", (unsigned long long)in->gbs);
    table_strf(t, i++, "%u", p->seq);
    table_str(t, i++, in->recipe->name);
    table_str(t, i++, sharding_name(in->sharding));
    table_str(t, i++, recompute_name(in->recompute));
    if (in->first_stage_layers) table_strf(t, i, "%u", in->first_stage_layers);
    i++;
    if (in->last_stage_layers) table_strf(t, i, "%u", in->last_stage_layers);
    i++;
    table_str(t, i++, yn[in->sp != 0]);
    table_str(t, i++, yn[in->dropout != 0]);
    table_str(t, i++, attn_name(in->attn));
    table_str(t, i++, fusion_name(in->fusion));
    table_str(t, i++, yn[in->fused_swiglu != 0]);
    if (a->given & PG_OV_TP_ON) table_str(t, i, "yes");
    i++;
    table_str(t, i++, main_grad_name(in->main_grad));
    table_str(t, i++, yn[in->grad_acc_fusion != 0]);
    table_strf(t, i++, "%.17g", tok_s_gpu);
    table_strf(t, i++, "%.17g", step_s);
    double tf = NAN;
    for (size_t k = 0, seen = 0; k < l->n; k++) /* the last timed step's own figure, when the log gives one */
        if (!isnan(l->steps[k].step_s) && seen++ >= skipped && !isnan(l->steps[k].tflops)) tf = l->steps[k].tflops;
    if (!isnan(tf)) table_strf(t, i, "%.17g", tf);
    i += 2; /* mfu_pct: blank */
    int alloc = !isnan(l->max_alloc_bytes);
    double mem = alloc ? l->max_alloc_bytes : l->max_reserved_bytes;
    if (!isnan(mem)) {
        table_strf(t, i, "%.17g", mem / 1073741824.0);
        table_str(t, i + 1, alloc ? "allocated" : "reserved");
    }
    i += 2;
    table_strf(t, i++, "check-log of %s: median of %zu steps after %zu warm-up; DP/PP overlap as the stack's row",
               runlog_kind_name(l->kind), used, skipped);
    table_str(t, i++, log);
    return t;
}

/* check-log's own flags (--warmup N, --measured-row ID) taken out of argv; the rest, the program's name first,
 * into pv for the plan options (pv holds argc + 1). An exit code, or 0. */
typedef struct {
    uint32_t warmup;
    int warm_given;
    const char *row_id;
} OwnFlags;

static int own_flags(int argc, char **argv, char **pv, int *pc, OwnFlags *f)
{
    *pc = 0;
    pv[(*pc)++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--measured-row")) {
            if (i + 1 >= argc || !argv[i + 1][0] || strpbrk(argv[i + 1], ",\"\r\n") || strlen(argv[i + 1]) >= 64)
                return cli_usage(CMD, "--measured-row needs an id for the run (1 to 63 characters, no comma or quote)");
            f->row_id = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--warmup")) {
            Err ne;
            uint64_t v;
            if (i + 1 >= argc || num_parse_u64(argv[i + 1], &v, &ne) || v > 1000000)
                return cli_usage(CMD, "--warmup needs a number of steps (0 to 1000000)");
            f->warmup = (uint32_t)v, f->warm_given = 1, i++;
            continue;
        }
        pv[(*pc)++] = argv[i];
    }
    pv[*pc] = NULL;
    return 0;
}

/* The median of the framework's TFLOP/s over the logged steps after the warm-up (NAN: none logged). */
static double median_tflops(const RunLog *l, uint32_t warmup, int *nomem)
{
    double tf = NAN;
    size_t ntf = 0;
    double *v = malloc((l->n ? l->n : 1) * sizeof *v);
    *nomem = !v;
    for (size_t i = 0, seen = 0; v && i < l->n; i++) {
        if (isnan(l->steps[i].step_s)) continue;
        if (seen++ < warmup) continue;
        if (!isnan(l->steps[i].tflops)) v[ntf++] = l->steps[i].tflops;
    }
    if (ntf) { /* median, as the step time */
        for (size_t i = 1; i < ntf; i++)
            for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
                double t = v[j];
                v[j] = v[j - 1], v[j - 1] = t;
            }
        tf = ntf % 2 ? v[ntf / 2] : (v[ntf / 2 - 1] + v[ntf / 2]) / 2;
    }
    free(v);
    return tf;
}

/* The rows: the step (checked), the allocator's peak (checked), the reserve and the rates (shown). */
static void fill_rows(Comparison *c, const Plan *p, const RunLog *l, double median, double tokens_step, double tf)
{
    c->n = 0;
    row(c, CMP_TIME, "step", "time", UNIT_SECONDS, p->time.step_s, median, MEASURE_TOL,
        compare_tolerances_default().step_time, "median after the warm-up", NULL);
    row(c, CMP_MEMORY, "max_allocated", "device", UNIT_BYTES, (double)p->alloc_bytes, l->max_alloc_bytes, MEASURE_TOL,
        ALLOC_TOL, "torch max_memory_allocated", NULL);
    row(c, CMP_MEMORY, "max_reserved", "device", UNIT_BYTES, (double)p->reserved_bytes, l->max_reserved_bytes,
        MEASURE_INFO, 0, "allocator reserve: the stack's convention", NULL);
    row(c, CMP_RATE, "tokens_per_s", "rate", UNIT_VALUE, p->tokens_per_s, tokens_step / median, MEASURE_INFO, 0,
        "follows from the step", "tok/s");
    row(c, CMP_RATE, "tflops_per_gpu", "rate", UNIT_VALUE, p->tflops_per_gpu, tf, MEASURE_INFO, 0,
        "the framework's FLOP count", "TFLOP/s");
    c->failed = measure_judge(c->rows, c->n);
}

/* The step time each logged step took (torchtitan logs tokens/s per GPU: the step is the batch over all), the
 * warm-up (a tenth of the timed steps, at least 1, unless given) and the median after it; an exit code. */
static int step_median(const Plan *p, RunLog *l, const char *log, OwnFlags *f, double tokens_step, double *median,
                       size_t *used, size_t *timed)
{
    Err e;
    for (size_t i = 0; i < l->n; i++)
        if (isnan(l->steps[i].step_s) && !isnan(l->steps[i].tps) && l->steps[i].tps > 0)
            l->steps[i].step_s = tokens_step / (l->steps[i].tps * p->world);
    for (size_t i = 0; i < l->n; i++) *timed += !isnan(l->steps[i].step_s);
    if (!f->warm_given) f->warmup = *timed / 10 > 1 ? (uint32_t)(*timed / 10) : 1;
    if (runlog_median_step(l, f->warmup, median, used, &e)) {
        err_prefix(&e, "%s", log);
        return cli_fail(CMD, &e);
    }
    return 0;
}

/* What the run is: --measured-row's one CSV row, or the page / table of rows with the verdict's exit. */
static int emit(PlanArgs *a, const Plan *p, const RunLog *l, const char *log, const OwnFlags *f, Comparison *c,
                double median, double tokens_step, size_t used, size_t timed)
{
    size_t skipped = (size_t)f->warmup < timed ? f->warmup : timed;
    int rc;
    if (f->row_id) {
        Table *t = measured_row(a, p, l, log, f->row_id, median, tokens_step / median / p->world, used, skipped);
        CliOut out = a->out;
        if (out.fmt == TABLE_TEXT) out.fmt = TABLE_CSV;
        rc = t ? cli_emit_table(CMD, t, &out) : cli_nomem(CMD, "the measured row");
        table_free(t);
        return rc; /* the row is the product: no verdict exit */
    }
    Page g = {p, l, log, c, used, skipped};
    if (a->out.fmt == TABLE_TEXT) {
        rc = cli_emit_page(CMD, &a->out, page, &g);
    } else {
        Table *t = run_report_table(c, RUN_TABLE_ALL);
        rc = t ? cli_emit_table(CMD, t, &a->out) : cli_nomem(CMD, "the rows");
        table_free(t);
    }
    if (rc) return rc;
    return c->failed ? status_exit_code(ST_TOLERANCE) : 0;
}

int cmd_check_log(int argc, char **argv)
{
    /* --warmup N and --measured-row ID are check-log's own; LOG is the first argument; the rest are plan options */
    char **pv = malloc(((size_t)argc + 1) * sizeof *pv);
    if (!pv) return cli_nomem(CMD, "the arguments");
    int pc;
    OwnFlags f = {0};
    int rc = own_flags(argc, argv, pv, &pc, &f);
    const char *log = !rc && pc > 1 && pv[1][0] != '-' ? pv[1] : NULL;
    if (log) pv[1] = pv[0]; /* the plan options after it */
    PlanArgs a;
    if (!rc)
        rc = log ? plan_args_parse(CMD, pc - 1, pv + 1, PO_RECIPE | PO_LAYOUT, help_text(), &a)
                 : plan_args_parse(CMD, pc, pv, PO_RECIPE | PO_LAYOUT, help_text(), &a);
    free(pv);
    if (rc) return rc < 0 ? 0 : rc;
    if (!log) return cli_usage(CMD, "LOG is required, as the first argument: fp8plan check-log LOG --from CONFIG");
    RunLog l;
    Err e;
    if (runlog_read(log, &l, &e)) return cli_fail(CMD, &e);
    Catalog *cat = NULL;
    Plan *p = malloc(sizeof *p);
    static Comparison c;
    if (!p) rc = cli_nomem(CMD, "the plan");
    if (!rc) rc = plan_catalog_load(CMD, a.catalog, &cat);
    if (!rc) rc = plan_args_resolve(CMD, cat, &a, a.recipe);
    if (!rc && plan_build(&a.in, p, &e)) {
        rc = e.st == ST_USAGE ? cli_usage(CMD, "%s", e.msg) : cli_fail(CMD, &e);
        plan_from_blame(CMD, &a);
    }
    double tokens_step = 0, median = NAN;
    size_t used = 0, timed = 0;
    if (!rc) tokens_step = (double)p->in.gbs * p->seq;
    if (!rc) rc = step_median(p, &l, log, &f, tokens_step, &median, &used, &timed);
    if (!rc) {
        int nomem;
        double tf = median_tflops(&l, f.warmup, &nomem);
        if (nomem)
            rc = cli_nomem(CMD, "the rates");
        else
            fill_rows(&c, p, &l, median, tokens_step, tf);
    }
    if (!rc) rc = emit(&a, p, &l, log, &f, &c, median, tokens_step, used, timed);
    runlog_free(&l);
    free(cat);
    free(p);
    return rc;
}
