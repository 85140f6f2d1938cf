/* reports/run_report.c — a finished run rendered (see run_report.h). */
#include "reports/run_report.h"

#include <math.h>
#include <string.h>

#include "util/num.h"

/* Columns of the report's tables; −1 where a table has none. */
typedef struct {
    int section, term, category, plan_b, meas_b, plan_s, meas_s, spread, plan_v, meas_v, unit, rel, check, verdict;
} Cols;

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

static void add_row(Table *t, const Cols *c, const MeasureRow *r)
{
    static const char *const sections[CMP_SECTIONS] = {"memory", "time", "rate", "comm"};
    table_row(t);
    if (c->section >= 0) table_str(t, c->section, sections[r->section]);
    table_str(t, c->term, r->name);
    if (c->category >= 0) table_str(t, c->category, r->category ? r->category : "-");
    int pc = r->kind == UNIT_BYTES ? c->plan_b : r->kind == UNIT_SECONDS ? c->plan_s : c->plan_v;
    int mc = r->kind == UNIT_BYTES ? c->meas_b : r->kind == UNIT_SECONDS ? c->meas_s : c->meas_v;
    if (r->has_planned && pc >= 0) {
        if (r->kind == UNIT_BYTES)
            table_u64(t, pc, (uint64_t)r->planned);
        else
            table_f64(t, pc, r->planned);
    }
    if (r->has_measured && mc >= 0) {
        if (r->kind == UNIT_BYTES)
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
            table_str(t, c->check, measure_mode_name(r->mode));
    }
    table_str(t, c->verdict, measure_verdict_text(r));
}

/* The text widths of the measured columns, which must not move with what a run measured (README and the
 * docs quote these tables; two runs of one command print one layout): measured bytes as wide as the
 * planned bytes column (its label and every planned byte count: the plan is deterministic, and a passing
 * run's bytes are the plan's or below them); measured seconds MEAS_S_WIDTH, "%.6f" of up to 999.999999 s
 * a step; measured values MEAS_V_WIDTH, the longest "%.6g" of a positive number ("0.000123457",
 * "1.23457e+06"). A wider measured cell still widens its column. */
enum { MEAS_S_WIDTH = 10, MEAS_V_WIDTH = 11 };

static void measured_widths(Table *t, const Cols *c, const Comparison *cmp)
{
    if (c->meas_b >= 0) {
        int w = (int)strlen(C_PLAN_B.label);
        for (int i = 0; i < cmp->n; i++) {
            const MeasureRow *r = &cmp->rows[i];
            char buf[32];
            if (r->kind != UNIT_BYTES || !r->has_planned) continue;
            int n = (int)strlen(num_fmt_grouped((uint64_t)r->planned, buf, sizeof buf));
            w = n > w ? n : w;
        }
        table_set_width(t, c->meas_b, w);
    }
    if (c->meas_s >= 0) table_set_width(t, c->meas_s, MEAS_S_WIDTH);
    if (c->meas_v >= 0) table_set_width(t, c->meas_v, MEAS_V_WIDTH);
}

Table *run_report_table(const Comparison *cmp, RunTable which)
{
    Cols c;
    Table *t = which == RUN_TABLE_ALL ? new_csv(&c) : which == RUN_TABLE_RATES ? new_rates(&c) : new_text(&c);
    if (!t) return NULL;
    for (int i = 0; i < cmp->n; i++) {
        const MeasureRow *r = &cmp->rows[i];
        int value = r->kind == UNIT_VALUE; /* rates and call counts: the table with value columns */
        if (which == RUN_TABLE_ALL || (which == RUN_TABLE_RATES) == value) add_row(t, &c, r);
    }
    if (which != RUN_TABLE_ALL) measured_widths(t, &c, cmp);
    return t;
}

void run_report_summary(FILE *f, const Plan *p, const Observed *ob, double entropy)
{
    uint32_t from = check_timed_from(ob->steps), tail = ob->steps < 10 ? ob->steps : 10;
    double last = 0.0, step, spread;
    for (uint32_t i = ob->steps - tail; i < ob->steps; i++) last += ob->loss[i] / tail;
    measure_stats(ob->step_s, from, ob->steps, ob->sorted, &step, &spread);
    double lnv = log((double)p->in.model->vocab);
    char ent[48] = "", fell[48] = "";
    if (entropy >= 0) snprintf(ent, sizeof ent, ", data entropy %.4f", entropy);
    if (ob->loss[0] > 0) snprintf(fell, sizeof fell, "; fell %.1f %%", 100.0 * (ob->loss[0] - last) / ob->loss[0]);
    table_put_prose(f, "\nloss: first %.4f, final %.4f (mean of the last %u steps); ln V = %.4f%s%s\n",
                    (double)ob->loss[0], last, tail, lnv, ent, fell);
    table_put_prose(f,
                    "throughput: %.0f tokens/s (median step %.3f ms over steps %u..%u, spread %.1f %%); plan for "
                    "%s: %.0f tokens/s\n",
                    (double)ob->tokens_per_step / step, 1e3 * step, ob->first_step + from + 1,
                    ob->first_step + ob->steps, 100.0 * spread, p->in.gpu->name, p->tokens_per_s);
    const ObsColl *cs = &ob->coll_total;
    uint64_t steps = ob->steps ? ob->steps : 1;
    uint64_t sent = p->dp_comm_bytes + p->tp_comm_bytes + p->pp_comm_bytes + p->cp_comm_bytes;
    char b1[32], b2[32];
    table_put_prose(f,
                    "collectives (%s, %d rank%s): %llu calls and %s payload bytes per step, %.0f bus bytes; plan: "
                    "%s bytes sent per GPU per step\n",
                    ob->comm, ob->ranks, ob->ranks == 1 ? "" : "s", (unsigned long long)(cs->calls / steps),
                    num_fmt_grouped(cs->payload_bytes / steps, b1, sizeof b1), cs->bus_bytes / (double)steps,
                    num_fmt_grouped(sent, b2, sizeof b2));
}

void run_report_verdict(FILE *f, const Comparison *c)
{
    fprintf(f, "\n%s; %d term%s outside tolerance\n",
            c->exact_ok ? "every exact term matches the plan byte for byte" : "EXACT TERMS DIFFER FROM THE PLAN",
            c->failed, c->failed == 1 ? "" : "s");
}
