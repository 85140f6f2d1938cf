/* cli/cmd_run_report.c — the end of `fp8plan run`: loss and throughput
 * summary, the plan-versus-measured memory table, the time per phase, and the
 * same rows as CSV (-o FILE). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_run.h"
#include "reports/table.h"
#include "util/fileio.h"
#include "util/num.h"

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of v[from..n) (n > from), or NaN. */
static double median(const double *v, uint32_t from, uint32_t n)
{
    if (n <= from) return NAN;
    uint32_t k = n - from;
    double *t = malloc(k * sizeof *t);
    if (!t) return NAN;
    memcpy(t, v + from, k * sizeof *t);
    qsort(t, k, sizeof *t, cmp_double);
    double m = k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
    free(t);
    return m;
}

enum { C_SECTION, C_TERM, C_CATEGORY, C_PLAN_B, C_MEAS_B, C_PLAN_S, C_MEAS_S, C_REL, C_CHECK, C_VERDICT, C_N };

static Table *new_table(void)
{
    const TableCol cols[C_N] = {
        {"section", NULL, NULL, TC_STR, 0, 0},
        {"term", NULL, NULL, TC_STR, 0, 0},
        {"category", NULL, NULL, TC_STR, 0, 0},
        {"planned_bytes", "planned", "B", TC_U64, 0, TF_GROUP},
        {"measured_bytes", "measured", "B", TC_U64, 0, TF_GROUP},
        {"planned_s", "planned", "s", TC_F64, 6, TF_EXACT},
        {"measured_s", "measured", "s", TC_F64, 6, TF_EXACT},
        {"rel_err_pct", "rel err", "%", TC_F64, 2, 0},
        {"check", NULL, NULL, TC_STR, 0, 0},
        {"verdict", NULL, NULL, TC_STR, 0, 0},
    };
    return table_new(cols, C_N);
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

static void add_row(Table *t, const char *section, const MeasureRow *r, int bytes)
{
    table_row(t);
    table_str(t, C_SECTION, section);
    table_str(t, C_TERM, r->name);
    table_str(t, C_CATEGORY, r->category ? r->category : "-");
    if (bytes) {
        if (r->has_planned) table_u64(t, C_PLAN_B, (uint64_t)r->planned);
        if (r->has_measured) table_u64(t, C_MEAS_B, (uint64_t)r->measured);
    } else {
        if (r->has_planned) table_f64(t, C_PLAN_S, r->planned);
        if (r->has_measured) table_f64(t, C_MEAS_S, r->measured);
    }
    double e = measure_rel_err(r);
    if (isfinite(e) && r->mode != MEASURE_INFO) table_f64(t, C_REL, 100.0 * e); /* unchecked rows: no error */
    if (r->mode == MEASURE_TOL)
        table_strf(t, C_CHECK, "+-%g %%", 100.0 * r->tol);
    else
        table_str(t, C_CHECK, mode_name(r->mode));
    table_str(t, C_VERDICT, measure_verdict_text(r));
}

/* The time rows: measured medians (first step of this run excluded as warm-up). */
static int time_rows(const RunArgs *a, const Plan *p, const Gpt *g, const RunLog *l, MeasureRow *rows)
{
    static const char *const names[4] = {"forward", "backward", "optimizer", "communication"};
    const int gpu = strcmp(g->bk->name, "cpu") != 0;
    static char note[96];
    snprintf(note, sizeof note, "n/a: the plan is for %s", p->in.gpu->name);
    uint32_t from = l->steps > 1 ? 1 : 0;
    int n = 0;
    for (int k = 0; k < 4; k++) {
        MeasureRow *r = &rows[n++];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", names[k]);
        r->category = "time";
        r->has_measured = l->steps > 0;
        r->measured = median(l->phase[k], from, l->steps);
        if (k == PHASE_OPT) r->has_planned = 1, r->planned = p->time.optimizer_s;
        r->mode = MEASURE_INFO;
        r->note = gpu ? "phase not split in the plan" : note;
        if (k == PHASE_OPT) r->note = gpu ? "not checked" : note;
    }
    MeasureRow *r = &rows[n++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "step");
    r->category = "time";
    r->has_planned = 1;
    r->planned = p->time.step_s;
    r->has_measured = l->steps > 0;
    r->measured = median(l->step_s, from, l->steps);
    /* on a GPU the step time is a prediction checked within 15 % (issue 6's target);
     * the CPU reference is not the machine the plan describes */
    r->mode = gpu ? MEASURE_TOL : MEASURE_INFO;
    r->tol = 0.15;
    r->note = note;
    (void)a;
    return n;
}

int run_report(const RunArgs *a, const Plan *p, const Gpt *g, const RunLog *l, const DataStream *d)
{
    MeasureRow mem[EXEC_MAX_ROWS], tim[8];
    int failed = 0, tfailed;
    int nm = exec_memory_rows(p, g, mem, &failed);
    if (exec_device_row(p, g, &mem[nm])) failed += mem[nm++].verdict != VERDICT_OK;
    int nt = time_rows(a, p, g, l, tim);
    tfailed = measure_judge(tim, nt);
    failed += tfailed;

    /* summary */
    uint64_t bt = (uint64_t)g->shape.batch * g->shape.seq;
    uint32_t from = l->steps > 1 ? 1 : 0, tail = l->steps < 10 ? l->steps : 10;
    double last = 0.0;
    for (uint32_t i = l->steps - tail; i < l->steps; i++) last += l->loss[i] / tail;
    double step = median(l->step_s, from, l->steps);
    printf("\nloss: first %.4f, final %.4f (mean of the last %u steps); ln V = %.4f", (double)l->loss[0], last, tail,
           log((double)g->shape.vocab));
    double floor = data_entropy_floor(d);
    if (floor >= 0) printf(", data entropy %.4f", floor);
    printf("\nthroughput: %.0f tokens/s (median step %.3f ms over steps %u..%u); plan for %s: %.0f tokens/s\n",
           (double)bt / step, 1e3 * step, l->first_step + from + 1, l->first_step + l->steps, p->in.gpu->name,
           p->tokens_per_s);

    const CommStats *cs = &g->comm->stats;
    uint64_t steps = l->steps ? l->steps : 1;
    uint64_t sent = p->dp_comm_bytes + p->tp_comm_bytes + p->pp_comm_bytes + p->cp_comm_bytes;
    char b1[32], b2[32];
    printf("collectives (%s, %d rank%s): %llu calls and %s payload bytes per step, %.0f bus bytes; plan: %s bytes "
           "sent per GPU per step\n",
           g->comm->name, g->comm->size, g->comm->size == 1 ? "" : "s", (unsigned long long)(cs->calls / steps),
           num_fmt_grouped(cs->payload_bytes / steps, b1, sizeof b1), cs->bus_bytes / (double)steps,
           num_fmt_grouped(sent, b2, sizeof b2));

    Table *t = new_table();
    if (!t) return 71;
    for (int i = 0; i < nm; i++) add_row(t, "memory", &mem[i], 1);
    for (int i = 0; i < nt; i++) add_row(t, "time", &tim[i], 0);
    char title[160];
    snprintf(title, sizeof title, "Plan (%s, 1 GPU) versus measured (%s backend)", p->in.gpu->name, g->bk->name);
    table_set_title(t, title);
    Err e;
    printf("\n");
    if (table_write(t, TABLE_TEXT, stdout, &e)) {
        table_free(t);
        return cli_fail("run", &e);
    }
    int rc = 0;
    if (a->out) {
        CliOut o = {.fmt = TABLE_CSV, .path = a->out};
        rc = cli_emit_table("run", t, &o);
    }
    table_free(t);
    if (rc) return rc;
    int persistent_ok = 1;
    for (int i = 0; i < nm; i++)
        if (mem[i].mode == MEASURE_EXACT && mem[i].verdict != VERDICT_OK) persistent_ok = 0;
    printf("\n%s; %d term%s outside tolerance\n",
           persistent_ok ? "every exact term matches the plan byte for byte" : "EXACT TERMS DIFFER FROM THE PLAN",
           failed, failed == 1 ? "" : "s");
    return failed ? status_exit_code(ST_TOLERANCE) : 0;
}
