/* planner/plan_advice.c — the seed's "when not to use FP8" cases, attached to a plan.
 * Each line names its reason; the report prints the ones whose bit is set. */
#include "planner/plan_internal.h"

static const char *const advice[ADV_COUNT_] = {
    [ADV_OOM] = "does not fit: the total exceeds the GPU's memory; shard the optimizer (--dist-opt), add TP/PP, "
                "recompute activations or lower the micro-batch",
    [ADV_COMPUTE_ONLY] = "compute-only FP8: weights, gradients and optimizer states stay BF16/FP32 and the cached FP8 "
                         "weight copies come on top, so state memory does not shrink (FP8-LM Table 5: TE uses 69.6 GB "
                         "at 175B, BF16 66.1 GB)",
    [ADV_COMPUTE_ONLY_CAST] = "compute-only FP8: weights, gradients and optimizer states stay BF16/FP32, so state "
                              "memory does not shrink (the FP8 weight copies are cast per micro-batch here, none "
                              "cached)",
    [ADV_FP32_GRAD_COMM] = "gradients are reduced in FP32: FP8 GEMMs do not shrink data-parallel traffic "
                           "(FP8-LM section 3.2.2); FP8 gradients with a shared scale do",
    [ADV_BF16_GRAD_COMM] = "gradients are reduced in BF16 (the main gradient's dtype): FP8 GEMMs do not shrink "
                           "data-parallel traffic below 2 B per gradient (FP8-LM section 3.2.2); FP8 gradients with "
                           "a shared scale do",
    [ADV_PER_TENSOR] = "per-tensor scaling: one outlier sets the amax of the whole tensor and costs every other value "
                       "resolution (FP8 Formats section 4.3); heavy outliers call for block or channel scales",
    [ADV_FP8_SECOND_MOMENT] =
        "Adam's second moment in FP8 diverges (FP8-LM Table 6 #4, Fig. 8); keep v in FP16 or wider",
    [ADV_TP_ONLY_AMAX] = "amax reduced over TP/CP only: scales can differ across data-parallel ranks unless the caller "
                         "keeps them consistent (Megatron tp_only_amax_red)",
    [ADV_REPRODUCIBILITY] = "delayed scaling depends on the amax history, the rank reduction order and checkpoint "
                            "restore: bitwise reproducibility across layouts or resumes is harder than with BF16",
    [ADV_CONVERGENCE] = "convergence evidence is limited: FP8-LM trained GPT-175B for 40B tokens, FP8 Formats' 175B "
                        "baseline stopped at 75 %; re-check convergence on your model and token budget",
    [ADV_HEADROOM] = "above the memory limit (--max-mem-frac of capacity): it may start, but allocator growth, "
                     "a longer sequence or a NCCL buffer resize can push it out of memory; not counted as fitting",
    [ADV_MX_BOTH_COPIES] = "MXFP8 row-wise and column-wise copies are quantized separately: a tensor needed both ways "
                           "costs 2 x (1 + 1/32) = 2.06 B per element, more than BF16's 2",
};

const char *advice_text(AdviceId a) { return (unsigned)a < ADV_COUNT_ ? advice[a] : "?"; }

void plan_advise(const PlanInput *in, Plan *p)
{
    const Recipe *r = in->recipe;
    uint32_t m = 0;
    if (p->verdict == PLAN_OOM) /* an uncertain plan says so in its verdict, not as an OOM or headroom line */
        m |= 1u << ADV_OOM;
    else if (p->verdict == PLAN_OVER_LIMIT)
        m |= 1u << ADV_HEADROOM;
    int fp8 = rc_fp8_gemm(r);
    if (fp8) {
        int hp_states = 1;
        for (int s = 0; s < STATE_COUNT_; s++)
            if (r->gemm.dt[s] != DT_NONE && dt_bytes(r->gemm.dt[s]) < 2) hp_states = 0;
        if (r->gemm.dt[STATE_MASTER] != DT_NONE && dt_bytes(r->gemm.dt[STATE_MASTER]) < 4) hp_states = 0;
        if (hp_states && rc_copy_bytes(r)) { /* which, as the plan holds the copies or not */
            uint64_t held = p->mem[MT_FP8_ROWWISE].bytes + p->mem[MT_FP8_COLWISE].bytes + p->mem[MT_FP8_EXPERT].bytes;
            m |= 1u << (held ? ADV_COMPUTE_ONLY : ADV_COMPUTE_ONLY_CAST);
        }
        if (r->act_gran == GRAN_TENSOR || r->weight_gran == GRAN_TENSOR) m |= 1u << ADV_PER_TENSOR;
        if (r->scaling == SCALING_DELAYED) m |= 1u << ADV_REPRODUCIBILITY;
        /* delayed scaling only: a current scale is the tensor's own, per rank by design */
        if (r->amax_reduce == AMAX_TP && r->scaling == SCALING_DELAYED && p->in.dp > 1) m |= 1u << ADV_TP_ONLY_AMAX;
        if (r->act_gran == GRAN_1X32 || r->weight_gran == GRAN_1X32) m |= 1u << ADV_MX_BOTH_COPIES;
        m |= 1u << ADV_CONVERGENCE;
        /* the dtype the plan's dp_grad collective moves (plan_comm.c): the recipe's, or the main gradient's */
        Dtype gd = plan_grad_dt(in, r->comm_dp_grad);
        if (gd == DT_FP32 && p->shard_ways > 1) m |= 1u << ADV_FP32_GRAD_COMM;
        if (gd == DT_BF16 && p->shard_ways > 1) m |= 1u << ADV_BF16_GRAD_COMM;
    }
    if (dt_fp8(r->gemm.dt[STATE_V])) m |= 1u << ADV_FP8_SECOND_MOMENT;
    p->advice_mask = m;
}
