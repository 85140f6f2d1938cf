/* check/fidelity_pairs.c — what FP8 buys over BF16, measured against planned
 * (see fidelity.h).
 *
 * A pair is two planned runs of measured.csv that one source measured in the same
 * configuration, once with a recipe whose GEMMs stay in BF16 (or FP16 / FP32) and
 * once with a recipe whose GEMMs run in FP8: every field of the run but its id, its
 * recipe and its measured figures is equal (source, stack, model, GPU, layout,
 * micro- and global batch, sequence, sharding, recompute and every configuration
 * cell). FP8-LM's micro-batch-4 row therefore pairs with nothing: its headline
 * speed-up changes the micro-batch as well as the precision. One BF16 run pairs
 * with each FP8 run of its configuration (FP8-LM's GPT-175B: TE and MS-AMP). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check/fidelity.h"

static int gemm_fp8(const Recipe *rc) { return dtype_is_fp8(rc->gemm_fwd) || dtype_is_fp8(rc->gemm_bwd); }

/* The same configuration: everything a run states except its id, recipe and measured figures. */
static int same_config(const MeasuredRun *a, const MeasuredRun *b)
{
    return !strcmp(a->source_id, b->source_id) && a->stack == b->stack && a->model == b->model && a->gpu == b->gpu &&
           a->gpus == b->gpus && a->tp == b->tp && a->pp == b->pp && a->vpp == b->vpp && a->cp == b->cp &&
           a->dp == b->dp && a->mbs == b->mbs && a->seq == b->seq && a->first == b->first && a->last == b->last &&
           a->ep == b->ep && a->etp == b->etp && a->gbs == b->gbs && a->sharding == b->sharding &&
           a->recompute == b->recompute && a->recompute_mods == b->recompute_mods && a->overlap_ep == b->overlap_ep &&
           a->dualpipe == b->dualpipe && a->ep_comm_sms == b->ep_comm_sms && a->graph_scope == b->graph_scope &&
           a->moe_dedup == b->moe_dedup && a->moe_capacity == b->moe_capacity && a->sp == b->sp &&
           a->dropout == b->dropout && a->swiglu == b->swiglu && a->tp_overlap == b->tp_overlap &&
           a->grad_acc == b->grad_acc && a->attn == b->attn && a->fusion == b->fusion && a->main_grad == b->main_grad;
}

/* A row both measured and planned (a throughput on each side). */
static int usable(const FidelityRow *o)
{
    return o->planned && isfinite(o->meas_tok) && o->meas_tok > 0 && isfinite(o->pred_tok) && o->pred_tok > 0;
}

int fidelity_pairs(const FidelityRow *rows, int n, FidelityPair *out, int cap)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        const FidelityRow *b = &rows[i];
        if (!usable(b) || gemm_fp8(b->run->recipe)) continue;
        for (int j = 0; j < n; j++) {
            const FidelityRow *f = &rows[j];
            if (!usable(f) || !gemm_fp8(f->run->recipe) || !same_config(b->run, f->run)) continue;
            if (k < cap) {
                FidelityPair *p = &out[k];
                p->bf16 = b, p->fp8 = f;
                p->meas = f->meas_tok / b->meas_tok;
                p->pred = f->pred_tok / b->pred_tok;
                p->err = check_rel_err(p->pred, p->meas);
            }
            k++;
        }
    }
    return k;
}

void fidelity_pairs_summary(const FidelityPair *p, int n, FidelityGroup *all, FidelityGroup *dev,
                            FidelityGroup *holdout)
{
    FidelityGroup *gs[3] = {all, dev, holdout};
    const char *names[3] = {"FP8/BF16 speed-up", "speed-up dev", "speed-up hold-out"};
    for (int g = 0; g < 3; g++) {
        memset(gs[g], 0, sizeof *gs[g]);
        snprintf(gs[g]->name, sizeof gs[g]->name, "%s", names[g]);
    }
    for (int i = 0; i < n; i++) {
        /* both runs come from one source, so both are held out or neither */
        FidelityGroup *side = p[i].fp8->holdout ? holdout : dev;
        FidelityGroup *to[2] = {all, side};
        for (int g = 0; g < 2; g++) {
            to[g]->mae = check_mean_next(to[g]->mae, to[g]->n, fabs(p[i].err));
            to[g]->bias = check_mean_next(to[g]->bias, to[g]->n, p[i].err);
            to[g]->n++;
        }
    }
}
