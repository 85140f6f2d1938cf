/* cli/cmd_run_report.c — the end of `fp8plan run`: loss and throughput
 * summary, the plan-versus-measured table (memory terms, device memory, time
 * per phase and per device category), the throughput table (tokens/s, model
 * TFLOP/s, MFU), and all of those rows as one CSV (-o FILE). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_run.h"
#include "reports/table.h"
#include "util/fileio.h"
#include "util/num.h"

/* Columns of the report's tables; −1 where a table has none. */
typedef struct {
    int section, term, category, plan_b, meas_b, plan_s, meas_s, spread, plan_v, meas_v, unit, rel, check, verdict;
} Cols;

enum { K_BYTES, K_SECONDS, K_VALUE };

static const TableCol C_SECTION = {"section", NULL, NULL, TC_STR, 0, 0};
static const TableCol C_TERM = {"term", NULL, NULL, TC_STR, 0, 0};
static const TableCol C_CATEGORY = {"category", NULL, NULL, TC_STR, 0, 0};
static const TableCol C_PLAN_B = {"planned_bytes", "planned", "B", TC_U64, 0, TF_GROUP};
static const TableCol C_MEAS_B = {"measured_bytes", "measured", "B", TC_U64, 0, TF_GROUP};
static const TableCol C_PLAN_S = {"planned_s", "planned", "s", TC_F64, 6, TF_EXACT};
static const TableCol C_MEAS_S = {"measured_s", "measured", "s", TC_F64, 6, TF_EXACT};
static const TableCol C_SPREAD = {"spread_pct", "spread", "%", TC_F64, 1, 0};
static const TableCol C_PLAN_V = {"planned_value", "planned", NULL, TC_F64, 6, TF_EXACT | TF_SCI};
static const TableCol C_MEAS_V = {"measured_value", "measured", NULL, TC_F64, 6, TF_EXACT | TF_SCI};
static const TableCol C_UNIT = {"unit", NULL, NULL, TC_STR, 0, 0};
static const TableCol C_REL = {"rel_err_pct", "rel err", "%", TC_F64, 2, 0};
static const TableCol C_CHECK = {"check", NULL, NULL, TC_STR, 0, 0};
static const TableCol C_VERDICT = {"verdict", NULL, NULL, TC_STR, 0, 0};

/* The CSV (every column), the text table of memory and time, the text table of rates. */
static Table *new_csv(Cols *c)
{
    const TableCol cols[] = {C_SECTION, C_TERM,   C_CATEGORY, C_PLAN_B, C_MEAS_B, C_PLAN_S, C_MEAS_S,
                             C_SPREAD,  C_PLAN_V, C_MEAS_V,   C_UNIT,   C_REL,    C_CHECK,  C_VERDICT};
    *c = (Cols){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    return table_new(cols, (int)(sizeof cols / sizeof cols[0]));
}

static Table *new_text(Cols *c)
{
    const TableCol cols[] = {C_SECTION, C_TERM,   C_CATEGORY, C_PLAN_B, C_MEAS_B, C_PLAN_S,
                             C_MEAS_S,  C_SPREAD, C_REL,      C_CHECK,  C_VERDICT};
    *c = (Cols){0, 1, 2, 3, 4, 5, 6, 7, -1, -1, -1, 8, 9, 10};
    return table_new(cols, (int)(sizeof cols / sizeof cols[0]));
}

static Table *new_rates(Cols *c)
{
    const TableCol cols[] = {C_TERM, C_UNIT, C_PLAN_V, C_MEAS_V, C_VERDICT};
    *c = (Cols){-1, 0, -1, -1, -1, -1, -1, -1, 2, 3, 1, -1, -1, 4};
    return table_new(cols, (int)(sizeof cols / sizeof cols[0]));
}

static const char *mode_name(MeasureMode m)
{
    switch (m) {
    case MEASURE_EXACT: return "exact";
    case MEASURE_BOUND: return "<= plan";
    case MEASURE_TOL: return "tolerance";
    default: return "-";
    }
}

static void add_row(Table *t, const Cols *c, const char *section, const MeasureRow *r, int kind)
{
    table_row(t);
    if (c->section >= 0) table_str(t, c->section, section);
    table_str(t, c->term, r->name);
    if (c->category >= 0) table_str(t, c->category, r->category ? r->category : "-");
    int pc = kind == K_BYTES ? c->plan_b : kind == K_SECONDS ? c->plan_s : c->plan_v;
    int mc = kind == K_BYTES ? c->meas_b : kind == K_SECONDS ? c->meas_s : c->meas_v;
    if (r->has_planned && pc >= 0) {
        if (kind == K_BYTES)
            table_u64(t, pc, (uint64_t)r->planned);
        else
            table_f64(t, pc, r->planned);
    }
    if (r->has_measured && mc >= 0) {
        if (kind == K_BYTES)
            table_u64(t, mc, (uint64_t)r->measured);
        else
            table_f64(t, mc, r->measured);
    }
    if (r->has_spread && c->spread >= 0) table_f64(t, c->spread, 100.0 * r->spread);
    if (r->unit && c->unit >= 0) table_str(t, c->unit, r->unit);
    double e = measure_rel_err(r);
    if (c->rel >= 0 && isfinite(e) && r->mode != MEASURE_INFO) table_f64(t, c->rel, 100.0 * e); /* unchecked: none */
    if (c->check >= 0) {
        if (r->mode == MEASURE_TOL)
            table_strf(t, c->check, "+-%g %%", 100.0 * r->tol);
        else
            table_str(t, c->check, mode_name(r->mode));
    }
    table_str(t, c->verdict, measure_verdict_text(r));
}

/* Every row into a table of the given columns (rates only where it has value columns). */
static void fill(Table *t, const Cols *c, const MeasureRow *mem, int nm, const MeasureRow *tim, int nt,
                 const MeasureRow *rate, int nr, int with_memory_time, int with_rates)
{
    for (int i = 0; with_memory_time && i < nm; i++) add_row(t, c, "memory", &mem[i], K_BYTES);
    for (int i = 0; with_memory_time && i < nt; i++) add_row(t, c, "time", &tim[i], K_SECONDS);
    for (int i = 0; with_rates && i < nr; i++) add_row(t, c, "rate", &rate[i], K_VALUE);
}

static int print_text(Table *t, const char *title)
{
    Err e;
    if (!t) return 71;
    table_set_title(t, title);
    printf("\n");
    if (table_write(t, TABLE_TEXT, stdout, &e)) return cli_fail("run", &e);
    return 0;
}

int run_report(const RunArgs *a, const Plan *p, const Gpt *g, const RunLog *l, const DataStream *d,
               const DevMeasure *dm, const DevmPeak *peak)
{
    MeasureRow mem[EXEC_MAX_ROWS + DEVM_MAX_ROWS], tim[RUN_MAX_TIME_ROWS], rate[RUN_MAX_RATE_ROWS];
    int failed = 0;
    int nm = exec_memory_rows(p, g, mem, &failed);
    if (dm) {
        int nd = devm_rows(dm, p, g, &mem[nm]);
        failed += measure_judge(&mem[nm], nd);
        nm += nd;
    }
    int nt = run_time_rows(l, p, g, tim);
    for (int i = 0; i < nt; i++) failed += tim[i].verdict != VERDICT_OK && tim[i].verdict != VERDICT_INFO;
    int nr = run_rate_rows(l, p, g, peak, rate);

    /* summary */
    uint64_t bt = (uint64_t)g->shape.batch * g->shape.seq;
    uint32_t from = run_timed_from(l), tail = l->steps < 10 ? l->steps : 10;
    double last = 0.0, step, spread;
    for (uint32_t i = l->steps - tail; i < l->steps; i++) last += l->loss[i] / tail;
    run_stats(l->step_s, from, l->steps, &step, &spread);
    char *sum = NULL; /* the summary lines, printed and kept for the HTML page */
    size_t sumlen = 0;
    FILE *ms = open_memstream(&sum, &sumlen), *so = ms ? ms : stdout;
    fprintf(so, "\nloss: first %.4f, final %.4f (mean of the last %u steps); ln V = %.4f", (double)l->loss[0], last,
            tail, log((double)g->shape.vocab));
    double floor = data_entropy_floor(d);
    if (floor >= 0) fprintf(so, ", data entropy %.4f", floor);
    fprintf(so,
            "\nthroughput: %.0f tokens/s (median step %.3f ms over steps %u..%u, spread %.1f %%); plan for %s: %.0f "
            "tokens/s\n",
            (double)bt / step, 1e3 * step, l->first_step + from + 1, l->first_step + l->steps, 100.0 * spread,
            p->in.gpu->name, p->tokens_per_s);

    const CommStats *cs = &g->comm->stats;
    uint64_t steps = l->steps ? l->steps : 1;
    uint64_t sent = p->dp_comm_bytes + p->tp_comm_bytes + p->pp_comm_bytes + p->cp_comm_bytes;
    char b1[32], b2[32];
    fprintf(so,
            "collectives (%s, %d rank%s): %llu calls and %s payload bytes per step, %.0f bus bytes; plan: %s bytes "
            "sent per GPU per step\n",
            g->comm->name, g->comm->size, g->comm->size == 1 ? "" : "s", (unsigned long long)(cs->calls / steps),
            num_fmt_grouped(cs->payload_bytes / steps, b1, sizeof b1), cs->bus_bytes / (double)steps,
            num_fmt_grouped(sent, b2, sizeof b2));
    if (ms) {
        fclose(ms);
        fputs(sum, stdout);
    }
    int persistent_ok = 1;
    for (int i = 0; i < nm; i++)
        if (mem[i].mode == MEASURE_EXACT && mem[i].verdict != VERDICT_OK) persistent_ok = 0;
    char verdict[160];
    snprintf(verdict, sizeof verdict, "%s; %d term%s outside tolerance",
             persistent_ok ? "every exact term matches the plan byte for byte" : "EXACT TERMS DIFFER FROM THE PLAN",
             failed, failed == 1 ? "" : "s");

    char title[200];
    Cols c;
    snprintf(title, sizeof title, "Plan (%s, 1 GPU) versus measured (%s backend)", p->in.gpu->name, g->bk->name);
    Table *t = new_text(&c);
    if (t) fill(t, &c, mem, nm, tim, nt, rate, nr, 1, 0);
    int rc = print_text(t, title);
    table_free(t);
    if (rc) return free(sum), rc;
    snprintf(title, sizeof title, "Throughput (median step of steps %u..%u; plan for %s)", l->first_step + from + 1,
             l->first_step + l->steps, p->in.gpu->name);
    t = new_rates(&c);
    if (t) fill(t, &c, mem, nm, tim, nt, rate, nr, 0, 1);
    rc = print_text(t, title);
    table_free(t);
    if (!rc && a->out) {
        t = new_csv(&c);
        if (t) fill(t, &c, mem, nm, tim, nt, rate, nr, 1, 1);
        CliOut o = {.fmt = TABLE_CSV, .path = a->out};
        rc = !t        ? 71
             : a->html ? run_html(a, p, g, l, (RunRows){mem, nm, tim, nt}, t, sum, verdict)
                       : cli_emit_table("run", t, &o);
        table_free(t);
    }
    free(sum);
    if (rc) return rc;
    printf("\n%s\n", verdict);
    return failed ? status_exit_code(ST_TOLERANCE) : 0;
}
