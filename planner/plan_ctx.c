/* planner/plan_ctx.c — plan contexts (planner/plan_ctx.h): what plan_build works out from an input's model, GPU,
 * recipe and settings, once for every layout. */
#include <string.h>

#include "planner/plan_internal.h"

static void key_of(const PlanInput *in, PlanCtxKey *k)
{
    memset(k, 0, sizeof *k);
    k->model = in->model, k->gpu = in->gpu, k->recipe = in->recipe;
    k->eff_gemm_bf16 = in->eff_gemm_bf16, k->eff_gemm_fp8 = in->eff_gemm_fp8, k->eff_attn = in->eff_attn;
    k->eff_hbm = in->eff_hbm, k->eff_net = in->eff_net;
    k->frag_frac = in->frag_frac, k->max_mem_frac = in->max_mem_frac;
    k->overlap_tp = in->overlap_tp, k->overlap_dp = in->overlap_dp, k->overlap_pp = in->overlap_pp;
    k->overlap_cp = in->overlap_cp, k->launch_s = in->launch_s;
    k->attn = (int)in->attn, k->main_grad = (int)in->main_grad, k->fusion = (int)in->fusion;
    k->mem_savings = in->mem_savings, k->mem_unknown = in->mem_unknown;
}

void plan_ctx_parts(PlanCtx *cx, const PlanInput *in)
{
    cx->params_ovf = model_params(in->model, &cx->params) != 0;
    gemm_gpu_init(in, &cx->gg);
}

void plan_ctx_init(PlanCtx *cx, const PlanInput *in)
{
    memset(cx, 0, sizeof *cx);
    cx->made = 1;
    if (in) key_of(in, &cx->key);
    cx->setup = plan_validate_setup(in, NULL);
    if (cx->setup == REJECT_NONE) plan_ctx_parts(cx, in); /* the parts read a valid model and GPU only */
}

/* Settings compared bit for bit (-0.0 is not 0.0: a launch floor is copied into the GEMM rates as it is). */
static int same(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, sizeof x), memcpy(&y, &b, sizeof y);
    return x == y;
}

int plan_ctx_matches(const PlanCtx *cx, const PlanInput *in)
{
    const PlanCtxKey *k = &cx->key;
    return cx->made && in && k->model == in->model && k->gpu == in->gpu && k->recipe == in->recipe &&
           same(k->eff_gemm_bf16, in->eff_gemm_bf16) && same(k->eff_gemm_fp8, in->eff_gemm_fp8) &&
           same(k->eff_attn, in->eff_attn) && same(k->eff_hbm, in->eff_hbm) && same(k->eff_net, in->eff_net) &&
           same(k->frag_frac, in->frag_frac) && same(k->max_mem_frac, in->max_mem_frac) &&
           same(k->overlap_tp, in->overlap_tp) && same(k->overlap_dp, in->overlap_dp) &&
           same(k->overlap_pp, in->overlap_pp) && same(k->overlap_cp, in->overlap_cp) &&
           same(k->launch_s, in->launch_s) && k->attn == (int)in->attn && k->main_grad == (int)in->main_grad &&
           k->fusion == (int)in->fusion && k->mem_savings == in->mem_savings && k->mem_unknown == in->mem_unknown;
}
