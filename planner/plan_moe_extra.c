/* planner/plan_moe_extra.c — the kernels a clamped GLU and biased experts add to a MoE layer (models.csv
 * glu_clamp, expert_bias: GPT-OSS) where the stack's MoE layer is Megatron-Core's (moe_host_ops > 0, the stacks
 * whose layer was counted), as its TEGroupedMLP runs them (core_v0.15.0-v0.17.0 transformer/moe/experts.py and
 * fusions/fused_bias_geglu.py; GPT-OSS sets bias_activation_fusion, so the activation itself is the fused
 * weighted_bias_quick_geglu the kernel list already times). BF16 elements (2 B; a mask 1 B), with R routed rows
 * on the rank, h the hidden size, Fe the expert FFN width per ETP rank and El the local experts:
 *
 *   clamp  weighted_bias_quick_geglu_impl clamps outside the fused function: the gated half clamp(max) and the
 *          linear half clamp(min, max), each reading and writing R Fe elements (4 R Fe B), and torch.cat of the
 *          two halves (reads and writes 2 R Fe elements: 8 R Fe B): forward 16 R Fe B in 3 kernels. Backward
 *          (autograd: cat's gradient is two views): the gated half's clamp_backward where(x <= max, dy, 0) — the
 *          compare (read 2, write a 1 B mask) and the where (mask 1 + dy 2 in, 2 out): 8 B an element in 2
 *          kernels; the linear half's where((x >= min).logical_and_(x <= max), dy, 0): two compares, the and
 *          (two masks in, one out) and the where, 3 + 3 + 3 + 5 = 14 B in 4 kernels; chunk's gradient, the cat of
 *          the two halves, 8 R Fe B in 1: backward 30 R Fe B in 7 kernels. Recomputed with the activation
 *          (--recompute-modules moe_act: the checkpointed function is the whole bias_act_func), the forward's
 *          16 R Fe B in 3 again.
 *   bias   FC2's bias is added after the grouped GEMM (linear_fc2 skip_bias_add=True; FC1's goes into the GEMM's
 *          epilogue): _apply_bias splits the output by expert and per expert computes t + b * p (the bias times
 *          the routing weights p, [n_e, h] written, 2 n_e h B; the add reads t and it and writes, 6 n_e h B), then
 *          torch.cat of the El pieces (4 R h B): forward 12 R h B in 2 El + 1 kernels. Backward: per expert
 *          the bias's gradient (dy * p, 4 n_e h B, summed over rows, 2 n_e h B) and the routing weights' (dy * b,
 *          4 n_e h B, summed over h, 2 n_e h B), then split's gradient, the cat of the experts' output
 *          gradients (4 R h B), and the routing weights' (R elements: no bytes to speak of): 16 R h B in
 *          4 El + 2 kernels.
 *
 * The host issues each of these kernels as an operation of its own (moe_host: the forward's and the backward's
 * counts below). Megatron-Core 0.18's fused expert MLP (--use-transformer-engine-op-fuser, plan --moe-fused-mlp:
 * core_v0.18.0 experts.py _make_fused_ops, TE's GroupedLinear with its biases and ScaledClampedQGeGLU ops) runs
 * both inside its fused ops: none of these. */
#include "planner/plan_internal.h"

void plan_moe_extras(const PlanInput *in, const Geo *g, MoeExtra *clamp, MoeExtra *bias)
{
    const ModelSpec *md = in->model;
    const MoeGeo *x = &g->x;
    *clamp = (MoeExtra){0}, *bias = (MoeExtra){0};
    if (!(in->moe_host_ops > 0) || !x->E || in->moe_fused_mlp) return;
    double R = (double)x->rows, h = (double)g->h, Fe = (double)x->Fe_t, El = (double)x->El;
    if (md->glu_clamp > 0) *clamp = (MoeExtra){16 * R * Fe, 3, 30 * R * Fe, 7};
    if (md->expert_bias) *bias = (MoeExtra){12 * R * h, 2 * El + 1, 16 * R * h, 4 * El + 2};
}
