/* check/fidelity_band.c — how far to trust a plan's throughput: the planner's own
 * error on the published runs most like it (see fidelity.h).
 *
 * "Like it" is what decides whether the planner's physics has been checked there:
 * the same software stack, a GPU of the same generation (the compute capability's
 * major digit: Ampere 8.0 and Ada 8.9 together, Hopper 9.0, Blackwell 10.x), and
 * the same kind of model (with experts, or dense), since the MoE layers are
 * modelled apart. The band is the mean absolute error and the bias of those runs,
 * and of the held-out ones among them (runs no value was chosen on). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check/fidelity.h"

static int generation(const GpuSpec *g) { return (int)(g->sm / 10); }

void fidelity_band(const FidelityRow *rows, int n, const PlanInput *in, FidelityBand *b)
{
    memset(b, 0, sizeof *b);
    int moe = in->model && in->model->experts > 0;
    for (int i = 0; i < n; i++) {
        const FidelityRow *o = &rows[i];
        const MeasuredRun *r = o->run;
        if (!o->planned || isnan(o->tok_err) || !in->stack || strcmp(r->stack->name, in->stack->name) ||
            generation(r->gpu) != generation(in->gpu) || (r->model->experts > 0) != moe || in->gpu->host)
            continue;
        double e = o->tok_err;
        b->mae = check_mean_next(b->mae, b->n, fabs(e)), b->bias = check_mean_next(b->bias, b->n, e), b->n++;
        if (o->holdout) b->mae_hold = check_mean_next(b->mae_hold, b->n_hold, fabs(e)), b->n_hold++;
    }
}

void fidelity_band_text(const FidelityBand *b, const PlanInput *in, char *buf, size_t size)
{
    char like[200];
    snprintf(like, sizeof like, "stack %s, SM %d.x GPUs, %s models", in->stack ? in->stack->name : "none",
             generation(in->gpu), in->model && in->model->experts ? "mixture-of-experts" : "dense");
    if (in->gpu->host) {
        snprintf(buf, size, "trust: a measured host profile; `fp8plan run` checks the plan against this machine");
    } else if (!b->n) {
        snprintf(buf, size,
                 "trust: no published run like this one (%s) in measured.csv: this throughput is not checked "
                 "against any measurement",
                 like);
    } else {
        char hold[120] = "";
        if (b->n_hold)
            snprintf(hold, sizeof hold, "; %.1f %% over the %d of them held out", 100 * b->mae_hold, b->n_hold);
        snprintf(buf, size,
                 "trust: on published runs like this one (%s) the planner's throughput is off by %.1f %% on "
                 "average (bias %+.1f %%) over %d runs%s",
                 like, 100 * b->mae, 100 * b->bias, b->n, hold);
    }
}

void fidelity_band_short(const FidelityBand *b, const PlanInput *in, char *buf, size_t size)
{
    char hold[48] = "";
    if (in->gpu->host)
        snprintf(buf, size, "trust: a measured host profile");
    else if (!b->n)
        snprintf(buf, size, "trust: no published run like it (unchecked)");
    else {
        if (b->n_hold) snprintf(hold, sizeof hold, ", held out %.1f %%", 100 * b->mae_hold);
        snprintf(buf, size, "trust +-%.1f %% on %d run%s like it%s", 100 * b->mae, b->n, b->n == 1 ? "" : "s", hold);
    }
}
