/* exec/model/gpt_internal.h — what the files of the GPT executor share
 * (gpt_layout.c, gpt_linear.c, gpt_step.c, gpt_init.c). Internal to exec/. */
#ifndef FP8PLAN_EXEC_GPT_INTERNAL_H
#define FP8PLAN_EXEC_GPT_INTERNAL_H

#include "exec/model/gpt.h"

/* Parameter table + tensor specs with the addresses bound to g's fields. */
Status gpt_layout_bind(Gpt *g, ArenaSpecs *specs, Err *e);

const char *gpt_param_name(ParamKind k);
uint64_t gpt_linear_k(const GptShape *s, LinearKind k); /* GEMM input width K */
uint64_t gpt_linear_n(const GptShape *s, LinearKind k); /* GEMM output width N */

/* The state dtypes of a parameter's class (recipe.gemm or recipe.other). */
static inline const ExecStates *gpt_states(const Gpt *g, const GptParam *p)
{
    return p->gemm ? &g->recipe.gemm : &g->recipe.other;
}

/* The parameter of kind k in block l (or l = −1), NULL when the shape has none. */
GptParam *gpt_find_param(Gpt *g, ParamKind k, int layer);

/* Where the BF16 input of linear k is written in the forward: its saved slot,
 * or the shared working buffer when only the FP8 copy is saved. */
void *gpt_linear_input(Gpt *g, uint32_t layer, LinearKind k);

/* y (B·T, N) = x (B·T, K) · Wᵀ (+ b): BF16, or FP8 with the casts the recipe needs. */
Status gpt_linear_fwd(Gpt *g, uint32_t layer, LinearKind k, const void *x, void *y, Err *e);
/* From dy (B·T, N): dx (B·T, K) overwritten (when dx is set), dW and db accumulated. */
Status gpt_linear_bwd(Gpt *g, uint32_t layer, LinearKind k, const void *dy, void *dx, Err *e);

/* The FP32 buffer a parameter's gradient accumulates into during backward:
 * its main gradient when that is FP32, else a staging area (slot 0/1 for
 * two gradients alive at once, e.g. an LN's weight and bias). */
float *gpt_grad_target(Gpt *g, const GptParam *p, int slot);
/* Before a gradient accumulates into its target: zero the staging area (a
 * no-op for FP32 main gradients, which are zeroed once per backward, and for
 * the embeddings' staging, likewise). */
Status gpt_grad_begin(Gpt *g, const GptParam *p, int slot, Err *e);
/* Store a staged gradient into the main gradient's dtype (FP8: current
 * scaling, scale_inv kept beside it). No-op when the main gradient is FP32. */
Status gpt_grad_commit(Gpt *g, GptParam *p, int slot, Err *e);

/* Forward to logits and per-token losses (the d(logits) replace the logits). */
Status gpt_forward(Gpt *g, const int32_t *inputs, const int32_t *targets, Err *e);
/* Backward from d(logits) into the main gradients. */
Status gpt_backward(Gpt *g, Err *e);

#endif
