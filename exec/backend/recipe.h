/* exec/backend/recipe.h — which of the planner's recipes the executor runs.
 *
 * A recipe is data: a row of models/recipes.csv, read by the planner into a
 * Recipe (planner/recipe.h). The executor uses that struct as it is — the
 * dtype of every persistent state (StateSet, indexed by StateId) for the block
 * linear weights (QKV, proj, FC1, FC2: `gemm`) and for every other parameter
 * (embeddings, LM head, norms, biases: `other`), which states carry a scaling
 * record, the cached FP8 weight copies, the GEMM formats and the scaling mode.
 * The step is written once against those fields, so any row whose combination
 * the executor implements runs, and the others are refused with the reason
 * (exec_recipe_check).
 *
 * What the catalog leaves to the executor is named here once: activations are
 * kept in the other parameters' working dtype (16-bit in every catalog row;
 * fp32 in the tests' exact recipe), and FP8 scales follow Transformer Engine's
 * defaults (amax algorithm max, margin 0). */
#ifndef FP8PLAN_EXEC_RECIPE_H
#define FP8PLAN_EXEC_RECIPE_H

#include "fp8/delayed.h"
#include "planner/recipe.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TE DelayedScaling's defaults (the catalog has no column for them). */
#define EXEC_AMAX_ALGO AMAX_ALGO_MAX
enum { EXEC_FP8_MARGIN = 0 };

/* The activation dtype: the other parameters' working dtype when it is fp32,
 * fp16 or bf16, else bf16. Non-FP8 GEMMs and the embeddings take weights and
 * activations in this one dtype. */
Dtype exec_act_dtype(const Recipe *r);

/* The amax history rows a recipe's FP8 GEMM scales keep: the window for
 * delayed scaling, 1 for current scaling. */
uint32_t exec_history_len(const Recipe *r);

/* 1 when state id of a set is kept and carries a scaling record. */
static inline int exec_state_scaled(const StateSet *s, StateId id)
{
    return s->dt[id] != DT_NONE && ((s->scaled_mask >> id) & 1u);
}

/* 1 for FP8 GEMMs with block scales (DeepSeek-V3: 1x128 activation and gradient tiles, 128x128 weight
 * blocks, current scaling per block): no per-tensor scaling banks, each FP8 copy carries its blocks'
 * scale_inv arrays. */
static inline int exec_block_scaled(const Recipe *r)
{
    return recipe_fp8_gemm(r) && (r->act_gran != GRAN_TENSOR || r->weight_gran != GRAN_TENSOR);
}

/* 1 when state set s is MS-AMP O1's linears (msamp/optim/adamw.py with FP32
 * moments): a per-tensor scaled FP16 weight and no master, read by FP8 GEMMs,
 * scaled FP8 gradients, unscaled FP32 Adam m and v — the optimizer unscales the
 * gradient and the weight, updates in FP32 and stores the weight back in FP16
 * with a new power-of-two scale from its amax, in place (Fp8AdamDesc). */
int exec_o1_states(const Recipe *r, const StateSet *s);

/* ST_OK when the executor implements this combination; otherwise
 * ST_UNAVAILABLE (a legal recipe the executor does not run yet, e.g. block
 * scaling) or ST_USAGE (an inconsistent one), naming the recipe and the field. */
Status exec_recipe_check(const Recipe *r, Err *e);

#ifdef __cplusplus
}
#endif
#endif
