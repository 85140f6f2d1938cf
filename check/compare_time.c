/* check/compare_time.c — the time and throughput rows of measured
 * versus planned (see compare.h):
 *   forward, backward, communication, optimizer   the phases;
 *   gpu_gemm, gpu_kernels, gpu_optimizer, gpu_comm device time by category,
 *       when the backend times its operations, beside the plan's GEMM,
 *       attention + other kernels + weight casts, optimizer and communication;
 *   step   the phases' sum beside the plan's step time: checked within the
 *          step tolerance on a GPU backend against a GPU's plan, and on the
 *          CPU reference against a host profile's plan (fp8plan calibrate:
 *          the catalog row of this machine, compute_capability cpu) — with
 *          the phases' planned times beside them (forward and backward of the
 *          plan's stage, the optimizer, the exposed collectives), each phase
 *          checked within the step tolerance too (a step that agrees because
 *          a slow forward cancels a fast optimizer is not a pass; the
 *          communication phase is shown: TP's collectives run inside the
 *          forward and backward, and each planned collective has its own
 *          checked row; under pipeline parallelism only the step is checked,
 *          a stage's phases interleave with waits for the others); shown only
 *          when the plan describes other hardware (a GPU plan for a CPU run,
 *          a host plan for a GPU run);
 *   moe_router, moe_permute, expert_gemm, moe_act_cast, ep_comm_exposed (expert parallelism), moe_other
 *          the MoE layers' parts on the CPU reference against a host profile's plan, host clock laps inside
 *          the MoE layers (exec/model/model.h MoePart), each but moe_other checked within the step tolerance
 *          (a step that agrees while the experts' GEMMs are slow and the permutes fast is not a pass);
 *   <collective>.time   per planned collective of a host plan over 2 or more
 *          ranks: the seconds per step in the calls' transfers (the
 *          communicator's host clock from the moment every rank arrived),
 *          their median over the timed steps as the step's, beside the
 *          plan's calls x (latency + bus bytes / bandwidth), checked within
 *          the step tolerance; <collective>.wait, the mean time per step its
 *          calls spent waiting for the other ranks to arrive, and
 *          collective_wait, every collective's (shown);
 *   tokens_per_s, model_tflops, mfu_bf16, mfu_fp8   rates, shown (they follow
 *          from the step row).
 * Medians over the timed steps (warm-up excluded), spreads filled. */
#include <math.h>
#include <stdio.h>

#include "check/compare_internal.h"

static MeasureRow *time_row(Comparison *c, const char *name, const Observed *ob, const double *v)
{
    MeasureRow *r = cmp_row(c, CMP_TIME, name, "time", UNIT_SECONDS, MEASURE_INFO, NULL);
    if (!r) return NULL;
    double med, spread;
    measure_stats(v, check_timed_from(ob->steps), ob->steps, ob->sorted, &med, &spread);
    r->has_measured = !isnan(med);
    r->measured = med;
    r->has_spread = !isnan(spread);
    r->spread = spread;
    return r;
}

static void plan_value(MeasureRow *r, double v)
{
    if (!r) return;
    r->has_planned = 1;
    r->planned = v;
}

static void note(MeasureRow *r, const char *n)
{
    if (r) r->note = n;
}

/* Why the times are not compared, kept in the comparison: "n/a: the plan is for <gpu>" (a GPU's plan, a CPU
 * run), "n/a: the plan is for host profile <name>" (a host's plan, a GPU run). */
static const char *other_note(const Plan *p, Comparison *c)
{
    snprintf(c->notes[0], sizeof c->notes[0], "n/a: the plan is for %s%s", p->in.gpu->host ? "host profile " : "",
             p->in.gpu->name);
    return c->notes[0];
}

/* The plan describes the hardware the run is on: a GPU's row for a GPU backend, a host profile for the CPU. */
static int same_hardware(const Plan *p, const Observed *ob) { return !ob->on_device == !!p->in.gpu->host; }

/* Per collective of the plan over 2 or more ranks: seconds per step in its calls against the plan's, the median
 * over the timed steps as the step row's (the warm-up step's first calls set up MPI's connections). */
static void coll_time_rows(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *c)
{
    double steps = ob->steps ? (double)ob->steps : 1.0;
    for (int i = 0; i < CO_COUNT_; i++) {
        const Collective *pc = &p->coll[i];
        if (!pc->calls || pc->ranks < 2) continue;
        char name[40];
        snprintf(name, sizeof name, "%s.time", coll_name((CollectiveId)i));
        MeasureRow *r = time_row(c, name, ob, ob->coll_s + (size_t)i * ob->cap);
        if (!r) continue;
        r->has_measured &= ob->coll[i].calls > 0;
        plan_value(r, pc->time_s);
        r->mode = MEASURE_TOL;
        r->tol = tol->step_time;
        r->note = "per step, host clock, from the moment every rank arrived";
        /* and the part before it, as a profiler splits a collective's span: its arrival's wait for the other
         * ranks (the two barriers: their skew, a waiting rank's return to its core; a receive's wait for its
         * sender), which its .time row leaves out and the plan does not hold */
        if (!ob->coll_total.calls) continue;
        snprintf(name, sizeof name, "%s.wait", coll_name((CollectiveId)i));
        MeasureRow *w = cmp_row(c, CMP_TIME, name, "time", UNIT_SECONDS, MEASURE_INFO,
                                "mean per step: this collective's wait for the other ranks (in collective_wait)");
        cmp_set(w, 0, 0, ob->coll[i].calls > 0, ob->coll[i].wait_s / steps);
    }
    if (ob->coll_total.calls && p->world > 1) {
        MeasureRow *r = cmp_row(c, CMP_TIME, "collective_wait", "time", UNIT_SECONDS, MEASURE_INFO,
                                "mean per step: waiting for the other ranks to arrive (their skew; not in the plan)");
        cmp_set(r, 0, 0, 1, ob->coll_total.wait_s / steps);
    }
}

/* The MoE layers' parts a CPU run times by host clock (OBS_MOE_*) beside the plan's terms of the same work, each
 * checked within the step tolerance (shown under pipeline parallelism: a stage's layers are not the plan's slowest
 * stage's); the rest (the FP8 expert weights' casts, planned as fp8_weight_cast) shown. */
static void moe_part_rows(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *c)
{
    const TimeBreakdown *tb = &p->time;
    const int ep = p->in.ep > 1, checked = p->in.pp <= 1;
    const struct {
        const char *name;
        int part, show;
        double planned;
        const char *note;
    } rows[] = {
        {"moe_router", OBS_MOE_ROUTER, 1, tb->moe_router_s,
         "host clock; plan: router GEMMs, score + top-k, its backward (in gemm, moe_route_permute)"},
        {"moe_permute", OBS_MOE_PERMUTE, 1, tb->moe_permute_s,
         "host clock; plan: permute, unpermute, their backward (in moe_route_permute)"},
        {"expert_gemm", OBS_MOE_XGEMM, 1, tb->expert_gemm_s,
         "host clock; plan: the grouped GEMMs, fprop + dgrad + wgrad (+ recomputed output)"},
        {"moe_act_cast", OBS_MOE_ACT, 1, tb->moe_act_s,
         "host clock; plan: the experts' activation and FP8 casts (in moe_route_permute)"},
        {"ep_comm_exposed", OBS_MOE_EP, ep, tb->ep_comm_s,
         "host clock; the exchange, its row sorting and waits for the peers, never overlapped here: all exposed"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        if (!rows[i].show) continue;
        MeasureRow *r = time_row(c, rows[i].name, ob, ob->moe[rows[i].part]);
        plan_value(r, rows[i].planned);
        note(r, checked ? rows[i].note : "host clock; shown (a pipeline stage: the step is checked)");
        if (r && checked) r->mode = MEASURE_TOL, r->tol = tol->step_time;
    }
    double other = 0;
    for (uint32_t i = 0; i < ob->steps; i++) other += ob->moe[OBS_MOE_OTHER][i];
    if (other > 0)
        note(time_row(c, "moe_other", ob, ob->moe[OBS_MOE_OTHER]),
             "host clock; shown: the FP8 expert weights' casts (plan: in fp8_weight_cast)");
}

void cmp_time_rows(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *c)
{
    const char *cpu = other_note(p, c);
    const int gpu = ob->on_device, host = !gpu && same_hardware(p, ob);
    const TimeBreakdown *tb = &p->time;
    const double comm_planned = tb->dp_comm_s + tb->tp_comm_s + tb->pp_comm_s + tb->cp_comm_s + tb->other_s;
    static const char *const names[4] = {"forward", "backward", "optimizer", "communication"};
    static const int order[4] = {PHASE_FWD, PHASE_BWD, PHASE_COMM, PHASE_OPT};
    for (int k = 0; k < 4; k++) {
        int ph = order[k];
        MeasureRow *r = time_row(c, names[ph], ob, ob->phase[ph]);
        if (ph == PHASE_OPT) plan_value(r, tb->optimizer_s + tb->opt_cast_s); /* FP8-LM's copies cast there */
        if (ph == PHASE_COMM) plan_value(r, comm_planned);
        if (host && ph == PHASE_FWD) plan_value(r, tb->fwd_s);
        if (host && ph == PHASE_BWD) plan_value(r, tb->bwd_s);
        /* a pipeline's schedule interleaves the stages' forward and backward work with waits for the other
         * stages: a stage's phases are not the plan's, only their step is */
        const int phased = host && p->in.pp <= 1 && ph != PHASE_COMM;
        if (phased && r) r->mode = MEASURE_TOL, r->tol = tol->step_time;
        note(r, host && ph == PHASE_COMM ? "host clock; shown (each planned collective is checked on its own row)"
                : host && !phased        ? "host clock; shown (a pipeline stage: the step is checked)"
                : host                   ? "host clock; checked (each phase, as the step)"
                : !gpu || !same_hardware(p, ob)      ? cpu
                : ph == PHASE_FWD || ph == PHASE_BWD ? "phase not split in the plan"
                : ob->phase_device                   ? "device time (timestamps)"
                                                     : "host clock");
    }
    if (ob->steps && ob->cat_steps == ob->steps) {
        static const char *const cat_names[OBS_CATS] = {"gpu_gemm", "gpu_kernels", "gpu_optimizer", "gpu_comm"};
        static const char *const notes[OBS_CATS] = {
            "device time; plan: linear + head GEMMs (attention GEMMs are counted here)",
            "device time; plan: attention + other kernels + weight casts", "device time; plan: the optimizer step",
            "device time; plan: collectives"};
        const double planned[OBS_CATS] = {tb->gemm_s, tb->attn_s + tb->nongemm_s + tb->weight_cast_s, tb->optimizer_s,
                                          comm_planned};
        for (int k = 0; k < OBS_CATS; k++) {
            MeasureRow *r = time_row(c, cat_names[k], ob, ob->cat[k]);
            plan_value(r, planned[k]);
            note(r, notes[k]);
        }
    }
    MeasureRow *r = time_row(c, "step", ob, ob->step_s);
    plan_value(r, tb->step_s);
    if (host && ob->steps && ob->moe_steps == ob->steps && spec_is_moe(p->in.model)) moe_part_rows(p, ob, tol, c);
    if (host) coll_time_rows(p, ob, tol, c);
    if (!r) return;
    const int check = same_hardware(p, ob);
    r->mode = check ? MEASURE_TOL : MEASURE_INFO;
    r->tol = tol->step_time;
    r->note = !check ? cpu : ob->phase_device ? "sum of the phases' device time" : "sum of the phases, host clock";
}

static MeasureRow *rate_row(Comparison *c, const char *name, const char *unit, double planned, double measured,
                            const char *n)
{
    MeasureRow *r = cmp_row(c, CMP_RATE, name, "rate", UNIT_VALUE, MEASURE_INFO, n);
    cmp_set(r, isfinite(planned), planned, isfinite(measured), measured);
    if (r) r->unit = unit;
    return r;
}

void cmp_rate_rows(const Plan *p, const Observed *ob, Comparison *c)
{
    const char *cpu = c->notes[0]; /* cmp_time_rows wrote it */
    const int gpu = same_hardware(p, ob);
    double step, spread;
    measure_stats(ob->step_s, check_timed_from(ob->steps), ob->steps, ob->sorted, &step, &spread);
    double tokens = (double)ob->tokens_per_step;
    double flops = step > 0 ? p->model_flops_step / step : NAN; /* model FLOP/s of this GPU (world 1) */
    rate_row(c, "tokens_per_s", "tok/s", p->tokens_per_s, step > 0 ? tokens / step : NAN,
             gpu ? "tokens per step / median step" : cpu);
    rate_row(c, "model_tflops", "TFLOP/s", p->tflops_per_gpu, flops * 1e-12,
             gpu ? "plan's model FLOPs per step (6N + attention) / median step" : cpu);
    if (!ob->dev.have) return;
    const ObsDevice *d = &ob->dev;
    double bf16 = 100.0 * flops / d->peak_bf16, fp8 = 100.0 * flops / d->peak_fp8;
    rate_row(c, "mfu_bf16", "%", p->mfu_bf16_pct, bf16, d->peak_why);
    rate_row(c, "mfu_fp8", "%", p->in.gpu->flops_fp8 > 0 ? p->mfu_fp8_pct : NAN, fp8, d->peak_why);
}
