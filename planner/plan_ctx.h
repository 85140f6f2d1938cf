/* planner/plan_ctx.h — a plan context: what plan_build works out from an input's model, GPU, recipe and settings
 * alone, whatever its layout, worked out once and shared by every plan of the same catalog row.
 *
 *   PlanCtx cx;
 *   plan_ctx_init(&cx, &in);                 // in: model, GPU, recipe, stack and settings; its layout not read
 *   for (each layout) {
 *       in.tp = ...; in.pp = ...; in.dp = ...;
 *       if (plan_build_ctx(&cx, &in, &p, &why) == ST_OK) ...   // the plan plan_build_fast makes, bit for bit
 *   }
 *
 * What a context holds (the checks of the model, the GPU and the settings, the model's parameter counts, the GPU's
 * GEMM rates at the input's efficiencies) depends on the input's model, gpu and recipe pointers and on the settings
 * listed in PlanCtxKey, never on its layout (tp, pp, vpp, cp, dp, ep, etp, world, mbs, gbs, seq, stage split,
 * recompute, sharding, stage_view and the rest). plan_build_ctx compares those with the context's key; an input
 * that differs in one of them is planned with a context made for it there and then (the same plan, without the
 * saving). A context is plain data (no pointers into itself, nothing allocated): copy it, keep one per catalog row,
 * share it read-only between threads. Its fields are the planner's; read none of them. */
#ifndef FP8PLAN_PLANNER_PLAN_CTX_H
#define FP8PLAN_PLANNER_PLAN_CTX_H

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The GEMM model's rates of a GPU at an input's efficiencies (planner/plan_gemm.c, gemm_gpu_init). */
typedef struct {
    double sm_rate16, sm_rate8; /* saturated FLOP/s of one SM, 16-bit and FP8 operands */
    double inv_sms, sms;
    uint32_t tm_sh, tn_sh; /* log2 of the tile sides */
    double tile2;          /* 2 x a tile's outputs: its FLOPs per unit of K */
    double k0_16, k0_8;
    double inv_hbm;  /* s per byte at the achieved HBM bandwidth */
    double inv_elem; /* s per byte of the element-wise kernels (gpu_elem_bw) */
    double launch;   /* floor of one kernel, s */
} GemmGpu;

/* What a context depends on besides the model, GPU and recipe: the settings the model, GPU and settings checks and
 * the GEMM rates read. */
typedef struct {
    const ModelSpec *model;
    const GpuSpec *gpu;
    const Recipe *recipe;
    double eff_gemm_bf16, eff_gemm_fp8, eff_attn, eff_hbm, eff_net;
    double frag_frac, max_mem_frac, overlap_tp, overlap_dp, overlap_pp, overlap_cp, launch_s;
    int attn, main_grad, fusion;
    unsigned mem_savings, mem_unknown;
} PlanCtxKey;

typedef struct {
    int made;           /* 1 once plan_ctx_init has filled it (a zeroed context matches no input) */
    PlanCtxKey key;     /* the input it was made from */
    PlanReject setup;   /* plan_validate's verdict on the model, GPU and settings (REJECT_NONE: the layout decides) */
    int params_ovf;     /* model_params overflowed */
    ModelParams params; /* the model's parameter counts */
    GemmGpu gg;         /* the GPU's GEMM rates */
} PlanCtx;

/* Make the context of in's model, GPU, recipe and settings (in's layout is not read). Never fails: an input whose
 * model, GPU or settings plan_validate rejects gives a context whose plans are rejected for that reason. */
void plan_ctx_init(PlanCtx *cx, const PlanInput *in);

/* 1 when cx was made from an input with the same model, GPU, recipe and PlanCtxKey settings as in. */
int plan_ctx_matches(const PlanCtx *cx, const PlanInput *in);

/* plan_build_fast with the context's share of the work taken from cx (made again, for this call only, when
 * plan_ctx_matches is 0): the same status, reason and plan, bit for bit. */
Status plan_build_ctx(const PlanCtx *cx, const PlanInput *in, Plan *out, PlanReject *why);

#ifdef __cplusplus
}
#endif
#endif
