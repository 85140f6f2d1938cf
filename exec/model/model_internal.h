/* exec/model/model_internal.h — what the files of the model share
 * (model_layout.c, model_family.c, model_linear.c, model_grad.c, model_pass.c,
 * model_step.c, model_init.c). Internal to exec/model/. */
#ifndef FP8PLAN_EXEC_MODEL_MODEL_INTERNAL_H
#define FP8PLAN_EXEC_MODEL_MODEL_INTERNAL_H

#include "exec/model/model.h"

/* The plan's sizes into m, the parameter table, and the tensor specs with the
 * addresses bound to m's fields (model_create carves them next). */
Status model_layout_bind(Model *m, const Plan *p, ArenaSpecs *specs, Err *e);

const char *model_param_name(ParamKind k);

/* Sizes every file needs. */
static inline uint64_t model_tokens(const Model *m) { return (uint64_t)m->batch * m->seq; }         /* B·T */
static inline uint64_t model_q_dim(const ModelSpec *s) { return (uint64_t)s->heads * s->head_dim; } /* H·D */
/* GEMM input width K and output width N of a block linear (spec_linear_shape at TP 1). */
uint64_t model_linear_k(const ModelSpec *s, LinearKind k);
uint64_t model_linear_n(const ModelSpec *s, LinearKind k);

/* The state dtypes of a parameter's class (recipe.gemm or recipe.other). */
static inline const StateSet *model_states(const Model *m, const ModelParam *p)
{
    return p->gemm ? &m->recipe.gemm : &m->recipe.other;
}

/* The parameter of kind k in block l (or l = −1), NULL when the model has none. */
ModelParam *model_find_param(Model *m, ParamKind k, int layer);

/* ---- the family's pieces (model_family.c): what models.csv's norm, mlp and
 * position columns select ---- */

/* Norms: norm1 (PK_NORM1_W), norm2 (PK_NORM2_W) or the final one (PK_NORMF_W). */
Status model_norm_fwd(Model *m, ParamKind w, int layer, const void *in, void *out, float *mean, float *rstd, Err *e);
/* din = m->act.d_res += the input gradient; the weight (and bias) gradients accumulate. */
Status model_norm_bwd(Model *m, ParamKind w, int layer, const void *in, const float *mean, const float *rstd,
                      const void *dout, Err *e);
/* The MLP's activation: fc1 (B·T, k·F) → out (B·T, F), and back. */
Status model_act_fwd(Model *m, const void *fc1, void *out, Err *e);
Status model_act_bwd(Model *m, const void *fc1, const void *dout, void *din, Err *e);
/* Rotary embedding of q and k in qkv (B·T, W) in place (inverse: of dq and dk);
 * nothing for learned or no positions. */
Status model_pos_rope(Model *m, void *qkv, int inverse, Err *e);

/* ---- block linears (model_linear.c) ---- */

/* Where the input of linear k is written in the forward: its saved slot, or
 * the shared working buffer when only the FP8 copy is saved. */
void *model_linear_input(Model *m, uint32_t layer, LinearKind k);
/* y (B·T, N) = x (B·T, K) · Wᵀ (+ b): in the activation dtype, or FP8 with the casts the recipe needs. */
Status model_linear_fwd(Model *m, uint32_t layer, LinearKind k, const void *x, void *y, Err *e);
/* From dy (B·T, N): dx (B·T, K) overwritten (when dx is set), dW and db accumulated. */
Status model_linear_bwd(Model *m, uint32_t layer, LinearKind k, const void *dy, void *dx, Err *e);

/* ---- gradients (model_grad.c) ----
 * The FP32 buffer a parameter's gradient accumulates into during backward: its
 * main gradient when that is FP32, else a staging area (slot 0/1 for two
 * gradients alive at once, e.g. a LayerNorm's weight and bias). */
float *model_grad_target(Model *m, const ModelParam *p, int slot);
/* Before a gradient accumulates into its target: for the first micro-batch
 * zero the staging area, for a later one load the main gradient accumulated
 * so far into it (a no-op for FP32 main gradients and for the embeddings'
 * staging, which model_grads_begin prepares once per backward). */
Status model_grad_begin(Model *m, const ModelParam *p, int slot, Err *e);
/* Store a staged gradient into the main gradient's dtype (FP8: current
 * scaling, scale_inv kept beside it). No-op when the main gradient is FP32. */
Status model_grad_commit(Model *m, ModelParam *p, int slot, Err *e);
/* Once per backward (of micro-batch m->mb): zero the FP32 main gradients
 * (first micro-batch) and prepare the embeddings' staging. */
Status model_grads_begin(Model *m, Err *e);

/* ---- sharded states: the distributed optimizer / ZeRO-1 (model_shard.c) ---- */
enum { MODEL_CLASS_GEMM = 0, MODEL_CLASS_OTHER = 1 };
static inline int model_class(const ModelParam *p) { return p->gemm ? MODEL_CLASS_GEMM : MODEL_CLASS_OTHER; }
/* ST_OK when the executor shards the plan's states (sharding none, or zero1 / dist-opt for recipes
 * whose sharded classes keep a working weight gathered in its own dtype, unscaled states and
 * gradients reduced in their own dtype); ST_UNAVAILABLE naming what is not. */
Status model_shard_check(const Plan *p, Err *e);
/* From the plan and the parameter table (after params_fill): shard_ways, the classes' elements,
 * shards and sharded states, every parameter's flat offset. Pure. */
void model_shard_plan(Model *m, const Plan *p);
/* After the arena is carved: this rank's part of every parameter and the sharded states' pointers. */
void model_shard_bind(Model *m);
/* The elements of p the optimizer updates on this rank: [*lo, *lo + n), its own part when states are
 * sharded (n may be 0), else all (lo 0, n numel). */
uint64_t model_own(const Model *m, const ModelParam *p, uint64_t *lo);
/* State st of p (its bound pointer `base`) at element model_own's lo: a sharded state's pointer
 * already is; a whole one is advanced by lo elements. NULL when base is. */
void *model_state_at(const Model *m, const ModelParam *p, StateId st, void *base);
/* Reduce-scatter every gradient (CO_DP_GRAD_RS; this rank's part reduced in place). */
Status model_shard_reduce(Model *m, Err *e);
/* All-gather every working weight after the sharded update (CO_DP_PARAM_AG, in the weight's dtype). */
Status model_shard_gather(Model *m, Err *e);

/* ---- one micro-batch (model_pass.c) ---- */

/* Forward to logits and per-token losses (the d(logits) replace the logits);
 * dloss scales d(loss)/d(logits) (1 / tokens of the step: a mean loss). */
Status model_forward(Model *m, const int32_t *inputs, const int32_t *targets, float dloss, Err *e);
/* Backward from d(logits) into the main gradients (accumulating). */
Status model_backward(Model *m, Err *e);

#endif
