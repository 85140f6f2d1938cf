/* check/compare.c — every row and verdict of measured versus planned
 * (see compare.h): memory terms and device memory, collectives, and the
 * judging rules. Time and rate rows are compare_time.c's. */
#include "check/compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check/compare_internal.h"

Tolerances compare_tolerances_default(void)
{
    Tolerances t = {.step_time = 0.15, .device_used = 0.05};
    return t;
}

MeasureRow *cmp_row(Comparison *c, CompareSection sec, const char *name, const char *category, RowUnit kind,
                    MeasureMode mode, const char *note)
{
    if (c->n >= COMPARE_MAX_ROWS) return NULL;
    MeasureRow *r = &c->rows[c->n++];
    memset(r, 0, sizeof *r);
    r->section = sec;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->category = category;
    r->kind = kind;
    r->mode = mode;
    r->note = note;
    return r;
}

void cmp_set(MeasureRow *r, int has_planned, double planned, int has_measured, double measured)
{
    if (!r) return;
    r->has_planned = has_planned;
    r->planned = planned;
    r->has_measured = has_measured;
    r->measured = measured;
}

/* One row per plan memory term that applies to the model (no expert terms for a dense one), one total
 * per category (the high-water of what the run held), one per executor-only term. */
static void memory_rows(const Plan *p, const Observed *ob, Comparison *c)
{
    int row[MT_COUNT_]; /* the row of each term, -1 where it does not apply */
    for (int i = 0; i < MT_COUNT_; i++) {
        const MemTerm *m = &p->mem[i];
        row[i] = -1;
        if (!plan_term_applies(p, (MemTermId)i)) continue;
        int held = ob->held[i], ws = i == MT_WORKSPACE;
        MeasureMode mode = MEASURE_INFO;
        const char *note = NULL;
        if (held && mem_term_persistent((MemTermId)i) && !ws)
            mode = MEASURE_EXACT; /* states, copies, scales: byte for byte */
        else if (i == MT_TRANSIENT || i == MT_ACT_MOE)
            mode = MEASURE_BOUND; /* MoE: with the experts on other ranks their side may lie outside the arena
                                     and the plan counts its uniform rows x --moe-imbalance (docs/executor-moe.md) */
        else if (mem_term_category((MemTermId)i) == MC_ACTIVATION)
            mode = MEASURE_EXACT; /* the plan itemizes the saved tensors; the executor saves exactly those */
        else if (ws && ob->gemm_workspace_bytes)
            mode = MEASURE_EXACT; /* the backend's workspace is carved from the arena */
        else
            note = ws               ? "n/a: backend has no GEMM workspace"
                   : !ob->on_device ? "n/a on the cpu backend"
                                    : "not measured in the arena";
        MeasureRow *r = cmp_row(c, CMP_MEMORY, mem_term_name((MemTermId)i),
                                mem_category_name(mem_term_category((MemTermId)i)), UNIT_BYTES, mode, note);
        row[i] = r ? (int)(r - c->rows) : -1;
        cmp_set(r, 1, (double)m->bytes, mode != MEASURE_INFO, (double)ob->placed[i]);
    }
    for (int cat = 0; cat < MC_OVERHEAD; cat++) {
        double planned = 0.0, measured = 0.0;
        int any = 0;
        for (int i = 0; i < MT_COUNT_; i++) {
            if (row[i] < 0) continue;
            const MeasureRow *t = &c->rows[row[i]];
            if (mem_term_category((MemTermId)i) != (MemCategory)cat || t->mode == MEASURE_INFO) continue;
            planned += t->planned;
            measured += t->measured;
            any = 1;
        }
        if (!any) continue;
        char name[40];
        snprintf(name, sizeof name, "total_%s", mem_category_name((MemCategory)cat));
        /* the transient term is a bound, so the activation total is one too */
        MeasureRow *r = cmp_row(c, CMP_MEMORY, name, mem_category_name((MemCategory)cat), UNIT_BYTES,
                                cat == MC_ACTIVATION ? MEASURE_BOUND : MEASURE_EXACT, NULL);
        cmp_set(r, 1, planned, 1, measured);
    }
    for (int k = 0; k < ob->nextra; k++) {
        MeasureRow *r =
            cmp_row(c, CMP_MEMORY, ob->extra[k].name, "activation", UNIT_BYTES, MEASURE_INFO, "not in the plan");
        cmp_set(r, 0, 0.0, 1, (double)ob->extra[k].bytes);
    }
}

static uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* What the driver counted (a backend with hooks): context, communicator, arena,
 * outside the arena, the peak against the plan's total. */
static void device_rows(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *c)
{
    const ObsDevice *m = &ob->dev;
    if (!m->have || !m->sampled[DEVM_AFTER_BACKEND]) return;
    const uint64_t *u = m->used;
    uint64_t comm_at = m->sampled[DEVM_AFTER_COMM] ? u[DEVM_AFTER_COMM] : u[DEVM_AFTER_BACKEND];
    uint64_t context = u[DEVM_AFTER_BACKEND] + m->lazy; /* + what the first step loaded lazily */
    uint64_t comm = minus(comm_at, u[DEVM_AFTER_BACKEND]) + m->grew[PHASE_COMM];
    uint64_t peak = m->sampled[DEVM_STEP] ? u[DEVM_STEP] : (m->sampled[DEVM_AFTER_MODEL] ? u[DEVM_AFTER_MODEL] : 0);
    if (m->sampled[DEVM_AFTER_MODEL] && u[DEVM_AFTER_MODEL] > peak) peak = u[DEVM_AFTER_MODEL];
    MeasureRow *r = cmp_row(c, CMP_MEMORY, "device_used", "device", UNIT_BYTES, MEASURE_TOL,
                            "cudaMemGetInfo peak vs the plan's total, every term");
    cmp_set(r, 1, (double)p->total_bytes, peak > 0, (double)peak);
    if (r) r->tol = tol->device_used;
    r = cmp_row(c, CMP_MEMORY, "device_cuda_context", "device", UNIT_BYTES, MEASURE_INFO,
                "in use once the backend was up, plus what the first step loaded lazily (library kernels)");
    cmp_set(r, 1, (double)p->mem[MT_CUDA_CONTEXT].bytes, 1, (double)context);
    r = cmp_row(c, CMP_MEMORY, "device_comm_buffer", "device", UNIT_BYTES, MEASURE_INFO,
                "added by the communicator and its first collectives");
    cmp_set(r, 1, (double)p->mem[MT_COMM_BUFFER].bytes, m->sampled[DEVM_AFTER_COMM], (double)comm);
    r = cmp_row(c, CMP_MEMORY, "device_arena", "device", UNIT_BYTES, MEASURE_INFO,
                "added by allocating the arena, vs its size");
    cmp_set(r, 1, (double)ob->arena_bytes, m->sampled[DEVM_AFTER_MODEL], (double)minus(u[DEVM_AFTER_MODEL], comm_at));
    r = cmp_row(c, CMP_MEMORY, "device_outside_arena", "device", UNIT_BYTES, MEASURE_INFO,
                "peak - context - communicator - arena: scratch and slack");
    cmp_set(r, 1, (double)p->mem[MT_FRAGMENTATION].bytes, peak > 0,
            (double)minus(peak, context + comm + ob->arena_bytes));
    static const char *const grew_name[3] = {"device_grew_forward", "device_grew_backward", "device_grew_optimizer"};
    static const int grew_phase[3] = {PHASE_FWD, PHASE_BWD, PHASE_OPT};
    for (int k = 0; k < 3; k++) {
        if (!m->grew[grew_phase[k]]) continue;
        r = cmp_row(c, CMP_MEMORY, grew_name[k], "device", UNIT_BYTES, MEASURE_INFO,
                    "rise of the count during the phase (lazy allocations)");
        cmp_set(r, 0, 0.0, 1, (double)m->grew[grew_phase[k]]);
    }
}

/* Per planner collective that either side has: bus bytes per step (checked),
 * calls and payload per step (shown). */
static void comm_rows(const Plan *p, const Observed *ob, Comparison *c)
{
    double steps = ob->steps ? (double)ob->steps : 1.0;
    for (int i = 0; i < CO_COUNT_; i++) {
        const Collective *pc = &p->coll[i];
        const ObsColl *m = &ob->coll[i];
        if (!pc->calls && !m->calls) continue;
        const char *why = pc->ranks ? "per step" : "per step; the plan counts collectives over 2 or more ranks";
        /* an all-to-all's bytes follow the routing: the plan's here are its uniform expectation; the per-rank
         * table compares them exactly with the plan given the measured routing (planner/plan_routed.h); so do
         * the ETP group's gather and reduce-scatter of the rows its experts received when ep > 1 (at ep 1 they
         * are every member's tokens x top-k, the uniform plan's exactly) */
        const int routed = coll_op((CollectiveId)i) == OP_ALL_TO_ALL ||
                           ((i == CO_ETP_AG || i == CO_ETP_RS) && p->in.ep > 1 && p->in.etp > 1);
        const char *uniform = "uniform routing; exact with the measured routing in the expert all-to-all table";
        char name[40];
        MeasureRow *r = cmp_row(c, CMP_COMM, coll_name((CollectiveId)i), "comm", UNIT_BYTES,
                                routed ? MEASURE_INFO : MEASURE_EXACT, routed ? uniform : NULL);
        cmp_set(r, 1, (double)pc->step_bytes, 1, m->bus_step);
        snprintf(name, sizeof name, "%s.payload",
                 coll_name((CollectiveId)i)); /* whole bytes: checked over 2 or more ranks */
        r = cmp_row(c, CMP_COMM, name, "comm", UNIT_BYTES, pc->ranks && !routed ? MEASURE_EXACT : MEASURE_INFO,
                    routed      ? uniform
                    : pc->ranks ? NULL
                                : why);
        cmp_set(r, 1, (double)plan_coll_step_payload(pc), 1, (double)m->payload_bytes / steps);
        snprintf(name, sizeof name, "%s.calls", coll_name((CollectiveId)i));
        /* the gradient all-reduce's and the distributed optimizer's buckets are the plan's calls exactly
         * (planner/plan_comm.c plan_dp_buckets, exec/model/model_grad_bucket.c, model_shard.c); the other
         * collectives' calls are shown */
        const int buckets = pc->ranks && (i == CO_DP_GRAD_AR || i == CO_DP_GRAD_RS || i == CO_DP_PARAM_AG ||
                                          i == CO_EDP_GRAD_AR || i == CO_EDP_GRAD_RS || i == CO_EDP_PARAM_AG);
        r = cmp_row(c, CMP_COMM, name, "comm", UNIT_VALUE, buckets ? MEASURE_EXACT : MEASURE_INFO,
                    buckets ? NULL : why);
        cmp_set(r, 1, (double)pc->calls, 1, (double)m->calls / steps);
        if (r) r->unit = "calls";
    }
}

/* How many of the requested steps the rows cover (a run stopped by a signal or
 * a failed step still reports the steps it took). */
static void steps_row(const Observed *ob, Comparison *c)
{
    MeasureRow *r = cmp_row(c, CMP_RATE, "completed_steps", "rate", UNIT_VALUE, MEASURE_INFO,
                            ob->steps < ob->cap ? "STOPPED EARLY: every row covers only the steps taken"
                                                : "every requested step was taken");
    cmp_set(r, 1, (double)ob->cap, 1, (double)ob->steps);
    if (r) r->unit = "steps";
}

void check_run(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *out)
{
    Tolerances def = compare_tolerances_default();
    if (!tol) tol = &def;
    memset(out, 0, sizeof *out);
    memory_rows(p, ob, out);
    device_rows(p, ob, tol, out);
    cmp_time_rows(p, ob, tol, out);
    cmp_rate_rows(p, ob, out);
    steps_row(ob, out);
    comm_rows(p, ob, out);
    out->failed = measure_judge(out->rows, out->n);
    out->exact_ok = 1;
    for (int i = 0; i < out->n; i++)
        if (out->rows[i].mode == MEASURE_EXACT && out->rows[i].verdict != VERDICT_OK &&
            out->rows[i].verdict != VERDICT_INFO)
            out->exact_ok = 0;
}

/* ---- judging ---------------------------------------------------------------------- */

double check_rel_err(double value, double ref)
{
    if (ref == 0.0) return value == 0.0 ? 0.0 : NAN;
    return value / ref - 1.0;
}

Verdict check_verdict(MeasureMode mode, double value, double ref, double tol)
{
    switch (mode) {
    case MEASURE_EXACT: return value == ref ? VERDICT_OK : VERDICT_MISMATCH;
    case MEASURE_BOUND: return value <= ref ? VERDICT_OK : VERDICT_OVER;
    case MEASURE_TOL: {
        double e = check_rel_err(value, ref);
        return isfinite(e) && fabs(e) <= tol ? VERDICT_OK : VERDICT_OUTSIDE;
    }
    default: return VERDICT_INFO;
    }
}

double measure_rel_err(const MeasureRow *r)
{
    if (!r->has_planned || !r->has_measured) return NAN;
    return check_rel_err(r->measured, r->planned);
}

int measure_judge(MeasureRow *rows, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        MeasureRow *r = &rows[i];
        r->verdict = VERDICT_INFO;
        if (r->mode == MEASURE_INFO || !r->has_planned || !r->has_measured) continue;
        r->verdict = check_verdict(r->mode, r->measured, r->planned, r->tol);
        failed += r->verdict != VERDICT_OK && r->verdict != VERDICT_INFO;
    }
    return failed;
}

const char *measure_verdict_text(const MeasureRow *r)
{
    switch (r->verdict) {
    case VERDICT_OK: return "ok";
    case VERDICT_MISMATCH: return "MISMATCH";
    case VERDICT_OVER: return "OVER";
    case VERDICT_OUTSIDE: return "OUTSIDE";
    default: return r->note ? r->note : "-";
    }
}

int check_accepted(const MeasureRow *r, double *lo, double *hi)
{
    if (!r->has_planned) return 0;
    switch (r->mode) {
    case MEASURE_EXACT: *lo = *hi = r->planned; return 1;
    case MEASURE_BOUND: *lo = 0, *hi = r->planned; return 1;
    case MEASURE_TOL: *lo = r->planned * (1 - r->tol), *hi = r->planned * (1 + r->tol); return 1;
    default: return 0;
    }
}

const char *check_mode_text(const MeasureRow *r, char *buf, size_t size)
{
    if (r->mode != MEASURE_TOL) return r->mode == MEASURE_INFO ? "-" : measure_mode_name(r->mode);
    snprintf(buf, size, "+-%g %%", 100.0 * r->tol);
    return buf;
}

const char *measure_mode_name(MeasureMode m)
{
    switch (m) {
    case MEASURE_EXACT: return "exact";
    case MEASURE_BOUND: return "<= plan";
    case MEASURE_TOL: return "tolerance";
    default: return "-";
    }
}
