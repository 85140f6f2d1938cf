/* exec/measure/run_log.c — a run's steps as measured and its time and throughput rows
 * (see run_log.h). */
#include "exec/measure/run_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t run_timed_from(const RunLog *l) { return l->steps > RUN_WARMUP_STEPS ? RUN_WARMUP_STEPS : 0; }

void run_log_free(RunLog *l)
{
    free(l->loss);
    free(l->step_s);
    for (int i = 0; i < 4; i++) free(l->phase[i]);
    for (int i = 0; i < BK_OPCAT_COUNT; i++) free(l->cat[i]);
    memset(l, 0, sizeof *l);
}

Status run_log_init(RunLog *l, uint32_t steps, Err *e)
{
    memset(l, 0, sizeof *l);
    size_t n = steps ? steps : 1;
    l->loss = calloc(n, sizeof *l->loss);
    l->step_s = calloc(n, sizeof *l->step_s);
    int ok = l->loss && l->step_s;
    for (int i = 0; i < 4; i++) ok &= (l->phase[i] = calloc(n, sizeof(double))) != NULL;
    for (int i = 0; i < BK_OPCAT_COUNT; i++) ok &= (l->cat[i] = calloc(n, sizeof(double))) != NULL;
    if (!ok) {
        run_log_free(l);
        return err_set(e, ST_NOMEM, "out of memory for a log of %u steps", steps);
    }
    l->cap = steps;
    return ST_OK;
}

Status run_step(Gpt *g, DevMeasure *dm, RunLog *l, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    if (l->steps >= l->cap) return err_set(e, ST_USAGE, "run log: all %u steps are taken", l->cap);
    int dev = dm && dm->have;
    DevmHook hook = {dm, g->bk};
    if (dev) {
        g->on_phase = devm_on_phase;
        g->on_phase_ctx = &hook;
        devm_step_begin(dm, g->bk);
    }
    Status st = gpt_step(g, inputs, targets, loss, e);
    double cat[BK_OPCAT_COUNT] = {0};
    int have_cat = dev ? devm_step_end(dm, g->bk, cat) : 0;
    g->on_phase = NULL;
    g->on_phase_ctx = NULL;
    if (st) return st;
    uint32_t i = l->steps++;
    if (i == 0) l->first_step = g->step - 1;
    l->loss[i] = *loss;
    double t = 0.0;
    for (int k = 0; k < 4; k++) t += (l->phase[k][i] = g->phase_s[k]);
    l->step_s[i] = t;
    l->phase_device = g->phase_device;
    if (have_cat) {
        for (int k = 0; k < BK_OPCAT_COUNT; k++) l->cat[k][i] = cat[k];
        l->cat_steps++;
    }
    return ST_OK;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void run_stats(const double *v, uint32_t from, uint32_t n, double *median, double *spread)
{
    *median = *spread = NAN;
    if (n <= from) return;
    uint32_t k = n - from;
    double *t = malloc(k * sizeof *t);
    if (!t) return;
    memcpy(t, v + from, k * sizeof *t);
    qsort(t, k, sizeof *t, cmp_double);
    *median = k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
    if (*median != 0.0) *spread = (t[k - 1] - t[0]) / *median;
    free(t);
}

/* the plan describes a GPU; the CPU reference is not one */
static int on_gpu(const Gpt *g) { return strcmp(g->bk->name, "cpu") != 0; }

static MeasureRow *time_row(MeasureRow *rows, int *n, const char *name, const RunLog *l, const double *v)
{
    MeasureRow *r = &rows[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->category = "time";
    r->mode = MEASURE_INFO;
    double med, spread;
    run_stats(v, run_timed_from(l), l->steps, &med, &spread);
    r->has_measured = !isnan(med);
    r->measured = med;
    r->has_spread = !isnan(spread);
    r->spread = spread;
    return r;
}

static void plan_value(MeasureRow *r, double v)
{
    r->has_planned = 1;
    r->planned = v;
}

int run_time_rows(const RunLog *l, const Plan *p, const Gpt *g, MeasureRow *rows)
{
    static char cpu_note[96];
    snprintf(cpu_note, sizeof cpu_note, "n/a: the plan is for %s", p->in.gpu->name);
    const int gpu = on_gpu(g);
    const TimeBreakdown *tb = &p->time;
    const double comm_planned = tb->dp_comm_s + tb->tp_comm_s + tb->pp_comm_s + tb->cp_comm_s + tb->other_s;
    int n = 0;
    static const char *const names[4] = {"forward", "backward", "optimizer", "communication"};
    static const int order[4] = {PHASE_FWD, PHASE_BWD, PHASE_COMM, PHASE_OPT};
    for (int k = 0; k < 4; k++) {
        int ph = order[k];
        MeasureRow *r = time_row(rows, &n, names[ph], l, l->phase[ph]);
        if (ph == PHASE_OPT) plan_value(r, tb->optimizer_s);
        if (ph == PHASE_COMM) plan_value(r, comm_planned);
        r->note = !gpu                                 ? cpu_note
                  : ph == PHASE_FWD || ph == PHASE_BWD ? "phase not split in the plan"
                  : l->phase_device                    ? "device time (timestamps)"
                                                       : "host clock";
    }
    if (l->steps && l->cat_steps == l->steps) {
        static const char *const cat_names[BK_OPCAT_COUNT] = {"gpu_gemm", "gpu_kernels", "gpu_optimizer", "gpu_comm"};
        static const char *const notes[BK_OPCAT_COUNT] = {
            "device time; plan: linear + head GEMMs (attention GEMMs are counted here)",
            "device time; plan: attention + other kernels + weight casts", "device time; plan: the optimizer step",
            "device time; plan: collectives"};
        const double planned[BK_OPCAT_COUNT] = {tb->gemm_s, tb->attn_s + tb->nongemm_s + tb->weight_cast_s,
                                                tb->optimizer_s, comm_planned};
        for (int k = 0; k < BK_OPCAT_COUNT; k++) {
            MeasureRow *r = time_row(rows, &n, cat_names[k], l, l->cat[k]);
            plan_value(r, planned[k]);
            r->note = notes[k];
        }
    }
    MeasureRow *r = time_row(rows, &n, "step", l, l->step_s);
    plan_value(r, tb->step_s);
    r->mode = gpu ? MEASURE_TOL : MEASURE_INFO; /* ±15 %: issue 6's target for the plan's step time */
    r->tol = 0.15;
    r->note = gpu ? (l->phase_device ? "sum of the phases' device time" : "sum of the phases, host clock") : cpu_note;
    measure_judge(rows, n);
    return n;
}

static MeasureRow *rate_row(MeasureRow *rows, int *n, const char *name, const char *unit, double planned,
                            double measured, const char *note)
{
    MeasureRow *r = &rows[(*n)++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->category = "rate";
    r->unit = unit;
    r->mode = MEASURE_INFO;
    r->has_planned = isfinite(planned);
    r->planned = planned;
    r->has_measured = isfinite(measured);
    r->measured = measured;
    r->note = note;
    return r;
}

int run_rate_rows(const RunLog *l, const Plan *p, const Gpt *g, const DevmPeak *peak, MeasureRow *rows)
{
    static char cpu_note[96];
    snprintf(cpu_note, sizeof cpu_note, "n/a: the plan is for %s", p->in.gpu->name);
    const int gpu = on_gpu(g);
    double step, spread;
    run_stats(l->step_s, run_timed_from(l), l->steps, &step, &spread);
    double tokens = (double)g->shape.batch * g->shape.seq;
    double flops = step > 0 ? p->model_flops_step / step : NAN; /* model FLOP/s of this GPU (world 1) */
    int n = 0;
    rate_row(rows, &n, "tokens_per_s", "tok/s", p->tokens_per_s, step > 0 ? tokens / step : NAN,
             gpu ? "tokens per step / median step" : cpu_note);
    rate_row(rows, &n, "model_tflops", "TFLOP/s", p->tflops_per_gpu, flops * 1e-12,
             gpu ? "plan's model FLOPs per step (6N + attention) / median step" : cpu_note);
    if (peak) {
        double bf16 = 100.0 * flops / peak->peak_bf16, fp8 = 100.0 * flops / peak->peak_fp8;
        rate_row(rows, &n, "mfu_bf16", "%", p->mfu_bf16_pct, bf16, peak->why);
        rate_row(rows, &n, "mfu_fp8", "%", p->in.gpu->flops_fp8 > 0 ? p->mfu_fp8_pct : NAN, fp8, peak->why);
    }
    measure_judge(rows, n);
    return n;
}
