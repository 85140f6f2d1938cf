/* check/fidelity_input.c — a published run (catalog/measured.h) as the planner's input (see fidelity_input.h). */
#include "check/fidelity_input.h"

void measured_plan_input(const MeasuredRun *r, PlanInput *in)
{
    plan_input_defaults(in);
    plan_input_use_stack(in, r->stack);
    in->model = r->model, in->gpu = r->gpu, in->recipe = r->recipe;
    in->tp = r->tp, in->pp = r->pp, in->vpp = r->vpp, in->cp = r->cp, in->dp = r->dp;
    in->world = r->gpus;
    in->mbs = r->mbs ? r->mbs : 1;
    in->gbs = r->gbs;
    in->seq = r->seq;
    in->sharding = r->sharding;
    in->recompute = r->recompute;
    in->recompute_mods = r->recompute_mods;
    in->mem_unknown = r->unknown;
    if (r->overlap_ep >= 0) in->overlap_ep = r->overlap_ep;
    in->dualpipe = r->dualpipe == 1, in->ep_comm_sms = r->ep_comm_sms, in->moe_fused_mlp = r->fused_mlp == 1;
    in->graph_scope = r->graph_scope, in->moe_dedup = r->moe_dedup, in->offload_mods = r->offload_mods;
    if (r->moe_capacity > 0) in->moe_capacity = r->moe_capacity;
    in->first_stage_layers = r->first;
    in->last_stage_layers = r->last;
    in->custom_pp_layout = r->custom_pp_layout;
    if (r->sp >= 0) in->sp = r->sp;
    if (r->dropout >= 0) in->dropout = r->dropout;
    if (r->tp_overlap >= 0) in->overlap_tp = r->tp_overlap ? r->stack->overlap_tp_on : 0;
    if (r->attn != ATTN_COUNT_) in->attn = r->attn;
    if (r->main_grad != MAIN_GRAD_COUNT_) in->main_grad = r->main_grad;
    if (r->fusion != FUSE_COUNT_) in->fusion = r->fusion, in->grad_acc_fusion = r->fusion == FUSE_TE;
    if (r->swiglu >= 0) in->fused_swiglu = r->swiglu;
    if (r->grad_acc >= 0) in->grad_acc_fusion = r->grad_acc;
    in->ep = r->ep, in->etp = r->etp;
}
