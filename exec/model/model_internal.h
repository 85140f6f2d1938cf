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
/* Mixture of experts: 1 when block l (of this stage) is a MoE layer (the model's layers from
 * dense_layers on); its FFN width: ffn_hidden on a dense layer, the shared experts' S·Fe on a MoE
 * layer (0: none); a linear's output and input widths on block l (FC1 and FC2 follow that width). */
static inline int model_moe_layer(const Model *m, uint32_t l)
{
    return m->spec.experts > 0 && l + m->layer0 >= m->spec.dense_layers;
}
static inline uint64_t model_ffn_of(const Model *m, uint32_t l)
{
    /* shared experts: column/row-parallel as the dense FFN, S·Fe/tp columns a TP rank (spec.ffn_hidden is already
     * the rank's: model_tp_spec) */
    return model_moe_layer(m, l) ? (uint64_t)m->spec.shared_experts * m->spec.expert_ffn / (m->tp ? m->tp : 1)
                                 : m->spec.ffn_hidden;
}
/* A routed expert's FFN width on this rank: expert_ffn / etp (expert tensor parallelism, model_moe_etp.c). */
static inline uint64_t model_xffn(const Model *m) { return m->spec.expert_ffn / (m->etp ? m->etp : 1); }
/* The routed experts leave this rank's tokens (expert or expert tensor parallelism: model_moe_ep.c). */
static inline int model_ep_on(const Model *m) { return m->ep > 1 || m->etp > 1; }
uint64_t model_lin_n(const Model *m, uint32_t l, LinearKind k);
uint64_t model_lin_k(const Model *m, uint32_t l, LinearKind k);

/* The state dtypes of a parameter's class (recipe.gemm or recipe.other). */
static inline const StateSet *model_states(const Model *m, const ModelParam *p)
{
    return p->gemm ? &m->recipe.gemm : &m->recipe.other;
}

/* 1 for MS-AMP O1's linears (exec_o1_states): no master, the optimizer updates the per-tensor scaled FP16
 * weight (its record weight_rec) in place. */
static inline int model_o1(const Model *m, const ModelParam *p)
{
    return p->gemm && exec_o1_states(&m->recipe, &m->recipe.gemm);
}

/* The per-tensor scaled FP16 tensor the optimizer writes and the FP8 copies are cast from: FP8-LM's master,
 * MS-AMP O1's weight; NULL when the parameter has none. *rec: its scaling record. */
static inline void *model_fp16_src(const Model *m, const ModelParam *p, float **rec)
{
    const int o1 = model_o1(m, p);
    *rec = o1 ? p->weight_rec : p->master_rec;
    return o1 ? p->weight : model_states(m, p)->dt[STATE_MASTER] == DT_FP16 ? p->master : NULL;
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
/* The MLP's activation: fc1 (rows, k·F) → out (rows, F), and back. */
Status model_act_fwd(Model *m, uint64_t rows, uint64_t F, const void *fc1, void *out, Err *e);
Status model_act_bwd(Model *m, uint64_t rows, uint64_t F, const void *fc1, const void *dout, void *din, Err *e);
/* The rotary descriptor of the model's attention over qkv (latent attention: the decoupled columns only). */
RopeDesc model_rope_desc(const Model *m, void *qkv, int inverse);
/* Rotary embedding of q and k in qkv (B·T, W) in place (inverse: of dq and dk);
 * nothing for learned or no positions. */
Status model_pos_rope(Model *m, void *qkv, int inverse, Err *e);
/* The attention's input of block l (exec/model/model_qknorm.c), from its saved QKV output la->qkv: without
 * q/k norms la->qkv itself, rotated in place by the forward (bwd 0; the backward finds it rotated); with them
 * la->qkv copied into buf, its q and k heads normalized (FP32 rstd into rstd) and rotated there — in the
 * forward, and again in the backward (bwd 1) for the attention's backward. *out: the attention's qkv. */
Status model_attn_qkv(Model *m, uint32_t l, int bwd, void *buf, float *rstd, void **out, Err *e);
/* The attention's input gradient dqkv (B·T, W) made d(QKV output) in place: the inverse rotation, then with q/k
 * norms their backward (input la->qkv, rstd from model_attn_qkv's backward rebuild), their weights' gradients
 * accumulated. */
Status model_attn_qkv_bwd(Model *m, uint32_t l, void *dqkv, const float *rstd, Err *e);

/* ---- latent attention (model_mla.c; DeepSeek-V2/V3, models.csv kv_lora_rank > 0) ---- */
static inline int model_mla(const Model *m) { return spec_is_mla(&m->spec); }
/* The attention's row width W of q, k and v: (H + 2KV)·D, or latent attention's 2H·D + H·Dv. */
static inline uint64_t model_attn_w(const ModelSpec *s)
{
    if (!spec_is_mla(s)) return ((uint64_t)s->heads + 2ull * s->kv_heads) * s->head_dim;
    return (uint64_t)s->heads * (2ull * s->head_dim + s->v_head_dim);
}
/* The rotary table's width R: head_dim, or latent attention's qk_rope (only those columns turn). */
static inline uint32_t model_rope_dim(const ModelSpec *s) { return spec_is_mla(s) ? s->qk_rope_head_dim : s->head_dim; }
/* ST_UNAVAILABLE naming what the executor does not run with latent attention (ST_OK for other models). */
Status model_mla_check(const Plan *p, Err *e);
/* Block l's attention input projections: x (B·T, C) norm 1's output → the attention's rows la->qkv (B·T, W),
 * not rotated: q from q_up (through q_down and the q latent's norm), k's nope part and v from kv_up (through
 * the kv latent's norm), k's rope part kv_down's last qk_rope columns, the same in every head. */
Status model_mla_fwd(Model *m, uint32_t l, const void *x, Err *e);
/* Its backward: dqkv (B·T, W) d(the attention's rows, before rotation) → dx (B·T, C) d(norm 1 output)
 * overwritten; the five weights' and the two norms' gradients accumulated. */
Status model_mla_bwd(Model *m, uint32_t l, const void *dqkv, void *dx, Err *e);

/* ---- multi-token prediction (model_mtp.c; DeepSeek-V3, models.csv mtp_layers; tensors: model_mtp.h) ----
 * D sequential depths; depth k (1-based, index d = k − 1) at position i: the model's norm of the embedding of
 * token i+k (enorm) and of depth k−1's block output before its final norm (hnorm; the main model's last block
 * output for k = 1), concatenated [enorm; hnorm] (2C), eh_proj (C, 2C), one block of the model's kind (the
 * stage's block main_layers + d), the depth's own final norm and the shared head, cross-entropy against token
 * i+k+1 (each sequence's last k positions masked); each depth's mean times m->mtp_weight / D added to the
 * objective. The embedding and head are the main model's (gradients summed). */
static inline int model_mtp_block(const Model *m, uint32_t l) { return m->mtp && l + m->mtp >= m->spec.layers; }
static inline uint32_t model_main_layers(const Model *m) { return m->spec.layers - m->mtp; }
/* Depth d's valid positions of one micro-batch: B·(T − d − 1). */
static inline uint64_t model_mtp_valid(const Model *m, uint32_t d) { return (uint64_t)m->batch * (m->seq - d - 1); }
/* ST_UNAVAILABLE / ST_USAGE naming what the executor does not run with MTP (ST_OK without it). */
Status model_mtp_check(const Plan *p, Err *e);
/* Every depth's saved tensors (the last stage's; model_layout.c). */
void model_mtp_saved(Model *m, int bind, ArenaSpecs *sp);
/* d(depth d's loss of one valid token): mtp_weight / depths / the global step's valid positions of depth d. */
float model_mtp_dloss(const Model *m, uint32_t d);
/* Forward into depth d's block input x: its shifted tokens from the host inputs (and targets), their embedding,
 * enorm, hnorm of the previous depth's output (act.x_final for d 0), the concatenation and eh_proj. */
Status model_mtp_in_fwd(Model *m, uint32_t d, const int32_t *inputs, const int32_t *targets, Err *e);
/* Its backward from d_res = d(eh_proj output): the embedding's gradient accumulated, d_res = d(hnorm's input)
 * (overwritten). */
Status model_mtp_in_bwd(Model *m, uint32_t d, Err *e);
/* Depth d's masked positions' loss and d(logits) rows zeroed (after its head's cross-entropy). */
Status model_mtp_mask(Model *m, uint32_t d, Err *e);

/* ---- block linears (model_linear.c) ---- */

/* Block l's linears in execution order, their count: QKV, PROJ, FC1, FC2 — latent attention's Q_DOWN (with a
 * q latent), Q_UP, KV_DOWN, KV_UP in QKV's place —, FC1 and FC2 left out on a MoE block without shared experts.
 * A linear's FP8 tensor number in its block (its scaling slots) is its place here. */
uint32_t model_block_linears(const Model *m, uint32_t l, LinearKind ks[LIN_KINDS]);
/* The attention's first linear, the one norm 1's output is saved for: QKV, latent attention's Q_DOWN, or its
 * Q_UP without a q latent. */
static inline LinearKind model_attn_in(const Model *m)
{
    return !model_mla(m) ? LIN_QKV : m->spec.q_lora_rank ? LIN_Q_DOWN : LIN_Q_UP;
}
/* The saved input of linear k: la->act_in[k], but kv_down's is the q projection's (the same tensor, kept once:
 * Megatron-Core's two down-projections read one hidden_states) when it has none of its own. */
static inline void *model_linear_saved(const Model *m, LayerActs *la, LinearKind k)
{
    if (k == LIN_KV_DOWN && !la->act_in[k]) return la->act_in[model_attn_in(m)];
    return la->act_in[k];
}

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
enum { MODEL_CLASS_GEMM = 0, MODEL_CLASS_OTHER = 1, MODEL_CLASS_EXPERT = 2 };
static inline int model_class(const ModelParam *p)
{
    return p->expert ? MODEL_CLASS_EXPERT : p->gemm ? MODEL_CLASS_GEMM : MODEL_CLASS_OTHER;
}
/* 1 when p's gradient is reduce-scattered and its weight gathered (its class's states spread over ranks),
 * 0 when it is all-reduced whole. */
static inline int model_sharded(const Model *m, const ModelParam *p) { return m->class_ways[model_class(p)] > 1; }
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
/* Reduce-scatter every sharded class's gradient (CO_DP_GRAD_RS over the DP group, the routed experts'
 * CO_EDP_GRAD_RS over the expert-data-parallel group; this rank's part reduced in place). */
Status model_shard_reduce(Model *m, Err *e);
/* The gradients not sharded all-reduced in buckets (model_grad_bucket.c). */
Status model_reduce_grads(Model *m, Err *e);
/* All-gather every sharded class's working weight after the update (CO_DP_PARAM_AG, the experts'
 * CO_EDP_PARAM_AG; in the weight's dtype;
 * not FP8-LM's copies: model_copies_cast). */
Status model_shard_gather(Model *m, Err *e);
/* 1 for an FP8-LM linear whose master is sharded (no working weight: the GEMMs read the gathered
 * FP8 copies). */
int model_shard_copies(const Model *m, const ModelParam *p);
/* Such a linear's copies from the slot's scale (model_copies_cast set it): this rank's part of the
 * master cast into the row-wise copy, all-gathered in the forward format under id, the transposed
 * copy recast from it. */
Status model_shard_copy(Model *m, ModelParam *w, CollectiveId id, Err *e);
/* MAX all-reduce of n floats over the ranks (the sharded FP8-LM states' amaxes: COMM_UNPLANNED). */
Status model_shard_agree(Model *m, float *amax, uint64_t n, Err *e);

/* ---- FP8-LM's FP8 weight copies, cast once per step (model_copies.c) ---- */
/* 1 for a block linear whose GEMMs read kept FP8 copies of a scaled FP16 master, no working weight. */
int model_copies_once(const Model *m, const ModelParam *p);
/* Every such linear's copies from the master the optimizer wrote: the whole tensor's amax (agreed
 * over TP and sharded DP ranks, COMM_UNPLANNED), its current-scaling scale into the forward slot
 * (the slot's amax row left 0), the copies cast (sharded: gathered under id). After every optimizer
 * step and at model creation. */
Status model_copies_cast(Model *m, CollectiveId id, Err *e);

/* ---- one micro-batch (model_pass.c) ---- */
/* rows x (reps blocks of cols) in the activation dtype: src (leading dimension sld, blocks sstep apart) → dst (dld,
 * dstep; dstep 0: the blocks summed into one), through the backend's strided copy (latent attention's and MTP's
 * column slices). */
Status model_copy_strided(Model *m, uint64_t rows, uint64_t cols, uint64_t reps, const void *src, uint64_t sld,
                          uint64_t sstep, void *dst, uint64_t dld, uint64_t dstep, Err *e);

/* Forward to logits and per-token losses (the d(logits) replace the logits);
 * dloss scales d(loss)/d(logits) (1 / tokens of the step: a mean loss). */
Status model_forward(Model *m, const int32_t *inputs, const int32_t *targets, float dloss, Err *e);
/* Backward from d(logits) into the main gradients (accumulating). */
Status model_backward(Model *m, Err *e);

#include "exec/model/model_moe_internal.h" /* mixture of experts, expert (tensor) parallelism */

/* ---- the rank grid (model_groups.c) ---- */

/* This rank's tp_rank, dp_rank and stage from its world rank (m->tp and m->dp set; no communicator: the
 * plan's stage, rank 0 of every group). */
void model_groups_coords(const Plan *p, Model *m);
/* The communicators of the rank's TP, DP, pipeline, amax and embedding groups (a collective over the
 * world: every rank calls it, after model_groups_coords). */
Status model_groups_create(Model *m, Err *e);
/* The sub-communicators model_groups_create made (before the world's). */
void model_groups_destroy(Model *m);

/* ---- pipeline parallelism, 1F1B (model_pp.c) ---- */

static inline int model_first(const Model *m) { return m->stage == 0; }
static inline int model_last(const Model *m) { return m->stage + 1 >= m->pp; }
/* Block l's saved activations of the micro-batch in flight slot m->slot. */
static inline LayerActs *model_la(Model *m, uint32_t l)
{
    return &m->act.layer[(uint64_t)m->slot * m->spec.layers + l];
}
/* The token ids of the slot's micro-batch (the first stage keeps one set per slot for the embedding's backward). */
static inline int32_t *model_tok(Model *m) { return m->act.tokens + (uint64_t)m->slot * model_tokens(m); }
/* The stage, its layers and the micro-batches in flight from the plan (pp 1: all, one). */
void model_pp_stage(const Plan *p, Model *m);
/* PP's working memory (transient): with FP8, the saved inputs' scale_inv per slot; at pp 1 only, under delayed
 * scaling at ep 1, the scale each expert's FC2 input was cast with (the backward's recompute). */
void model_pp_layout(Model *m, int bind, ArenaSpecs *sp);
/* What the executor's PP needs of a plan (ST_OK at pp 1). */
Status model_pp_check(const Plan *p, Err *e);
/* A bank's amax reduction (over the recipe's group) and delayed update after a forward or backward
 * (TE's order; model_step.c). */
Status model_update_bank(Model *m, ScalingBank *b, BankTrace *t, Err *e);
/* PP with FP8: the scale_inv of block l's saved FP8 input k of the slot's micro-batch (the bank's is
 * the latest forward's); at pp 1 the bank's. */
static inline float *model_saved_sinv(Model *m, uint32_t l, LinearKind k)
{
    if (!m->act.pp_xsinv) return m->sc.fwd.scale_inv + model_slot_x(m, l, k);
    return m->act.pp_xsinv + ((uint64_t)m->slot * m->spec.layers + l) * LIN_COUNT + k;
}
/* Per-tensor FP8 experts: MoE block l's per-expert scales (E/ep floats) of the slot's micro-batch, as its
 * forward cast them: which 0 FC1's input scale_inv, 1 FC2's input scale_inv, 2 (ep 1) FC2's input scale;
 * NULL where the bank's serve (at pp 1 all but 2, and 2 too under current scaling). */
float *model_pp_expert_scales(Model *m, uint32_t l, int which);
/* d(mean loss)/d(one token's loss) (model_step.c). */
float model_dloss(const Model *m);
/* The micro-batch m->mb's token losses into *sum and step_losses (model_step.c). */
Status model_add_losses(Model *m, double *sum, Err *e);
/* The step's micro-batches on this stage in the 1F1B order (warm-up forwards, one forward one
 * backward, cool-down backwards), activations from the previous stage and gradients from the next
 * received (the plan's pp_send_recv: both ends' transfers; a recv's wait for the other stage in
 * collective_wait), forward and backward seconds added to ph[PHASE_FWD/BWD]. */
Status model_pp_run(Model *m, const int32_t *inputs, const int32_t *targets, double *ph, double *sum, Err *e);
/* After the micro-batches: the tied embedding's gradient summed between the first and last stage
 * (the plan's emb_grad_allreduce). */
Status model_pp_finish_grads(Model *m, Err *e);
/* The step's loss, known on the last stage, to every rank (not a plan collective). */
Status model_pp_share_loss(Model *m, float *loss, Err *e);
/* The stage that receives this stage's activations (+1) or gradients (−1). */
static inline int model_pp_peer(const Model *m, int dir) { return (int)m->stage + dir; } /* in ppc */

/* ---- tensor parallelism with sequence parallelism (model_tp.c) ----
 * QKV and FC1 are column-parallel (this rank's heads / FFN columns), proj and
 * FC2 row-parallel; the norms, residual stream, embedding lookup, LM head and
 * loss hold B·T/tp tokens of the flattened (B, T) batch. Every function is a
 * no-op or the one-rank path at tp 1. */

/* Tokens of the sequence-parallel regions on this rank: B·T/tp. */
static inline uint64_t model_sp_tokens(const Model *m) { return model_tokens(m) / (m->tp ? m->tp : 1); }
/* The tokens a MoE layer routes per micro-batch: the sequence-parallel shard, B·T/tp (Megatron-Core's router and
 * experts run on each TP rank's own tokens; B·T at tp 1), and the rows its experts see, k copies of each
 * (dropless). */
static inline uint64_t model_moe_tokens(const Model *m) { return model_sp_tokens(m); }
static inline uint64_t model_moe_rows(const Model *m) { return model_moe_tokens(m) * m->spec.experts_per_token; }
/* Expert tensor parallelism at ep 1: every ETP peer routes its R rows and the group gathers them, etp·R rows
 * exactly whatever the routing, so the experts' side lives in the arena at those rows as the plan counts it (the
 * saved x_in, x_fc1, x_fc2in, or under an FP8 recipe x_fc1 and the transposed FP8 copies q_xin, q_xh with their
 * tiles; the working rows x_y, x_dy, x_dh2, x_dh1, x_h and the FP8 copies t_qrow, d_qrow, d_qcol; model_moe_saved,
 * model_moe_transient, model_layout.c). At ep > 1 (the rows follow the routing) the experts' side is the EP
 * buffers outside the arena (model_ep_create). */
static inline int model_etp_arena(const Model *m) { return m->ep == 1 && m->etp > 1; }
/* The rows of the arena's expert tensors: the ETP group's under model_etp_arena, else the rank's own R. */
static inline uint64_t model_moe_xrows(const Model *m)
{
    return model_etp_arena(m) ? (uint64_t)m->etp * model_moe_rows(m) : model_moe_rows(m);
}
/* Column-parallel linears (their input gathered from the sequence shards): QKV, FC1, latent attention's
 * up-projections (q_up, kv_up) and MTP's eh_proj (Megatron-Core's MultiTokenPredictionLayer); latent attention's down-projections (q_down, kv_down) are duplicated — every
 * rank holds them whole and runs them on its sequence shard (model_tp_dup), as Megatron-Core's MLASelfAttention
 * does (core_v0.16.0: TELinear parallel_mode "duplicated") */
static inline int model_tp_col(const Model *m, LinearKind k)
{
    return m->tp > 1 && (k == LIN_QKV || k == LIN_FC1 || k == LIN_Q_UP || k == LIN_KV_UP || k == LIN_EH_PROJ);
}
static inline int model_tp_dup(const Model *m, LinearKind k)
{
    return m->tp > 1 && (k == LIN_Q_DOWN || k == LIN_KV_DOWN);
}
static inline int model_tp_row(const Model *m, LinearKind k) { return m->tp > 1 && (k == LIN_PROJ || k == LIN_FC2); }
/* Current scaling with TP: the amax a cast just measured on this rank's shard
 * made the whole tensor's (MAX over the TP group, counted as the plan's
 * amax_allreduce); nothing at tp 1. */
Status model_tp_amax(Model *m, float *amax, Err *e);
/* What the executor's TP needs of a plan (ST_OK at tp 1). */
Status model_tp_check(const Plan *p, Err *e);
/* A model with experts at tp > 1 or etp > 1 (model_moe_check): what the executor runs of it, or ST_UNAVAILABLE
 * naming the rest (a shared width tp does not divide). */
Status model_tp_moe_check(const Plan *p, Err *e);
/* This rank's share of the spec (heads, KV heads, FFN width / tp) and m->tp. */
void model_tp_spec(const Plan *p, Model *m);
/* Rows of the embedding and head shards: Vp/tp. */
static inline uint64_t model_vocab_rows(const Model *m) { return m->vocab_padded / (m->tp ? m->tp : 1); }
/* TP's working buffers (transient), nothing at tp 1. */
void model_tp_layout(Model *m, int bind, ArenaSpecs *sp);
/* The initial values of a sharded parameter: w (numel) = this rank's slice
 * of the one-rank tensor drawn from stream key (padded vocabulary rows 0).
 * Returns the slice's amax. Only for the tensors init_normal draws. */
float model_tp_fill(const Model *m, const ModelParam *p, uint64_t key, float std, float *w);
/* All-gather of a (B·T/tp, cols) token shard into (B·T, cols), counted under id. */
Status model_tp_gather(Model *m, CollectiveId id, const void *local, void *full, uint64_t cols, Dtype dt, Err *e);
/* Reduce-scatter (sum) of (B·T, cols) partial sums into this rank's (B·T/tp, cols). */
Status model_tp_scatter(Model *m, CollectiveId id, const void *full, void *local, uint64_t cols, Err *e);
/* Vocabulary-parallel token embedding: every token of the micro-batch looked
 * up in this rank's rows, reduce-scattered to the tokens' owners, learned
 * positions added there (out: B·T/tp tokens); and its backward from the
 * B·T/tp tokens' gradient dout into the FP32 gradient targets. */
Status model_tp_embed_fwd(Model *m, void *out, Err *e);
Status model_tp_embed_bwd(Model *m, const void *dout, Err *e);
/* The same for other token ids tok (B·T): MTP's next tokens. */
Status model_tp_embed_tok_fwd(Model *m, const int32_t *tok, void *out, Err *e);
Status model_tp_embed_tok_bwd(Model *m, const int32_t *tok, const void *dout, Err *e);
/* Vocabulary-parallel cross-entropy of act.logits (B·T, Vp/tp): losses of
 * every token on every rank, logits replaced by their gradient (xent_shard
 * with the max and sums all-reduced over the ranks). */
Status model_tp_xent(Model *m, float dloss, Err *e);
/* The same over other logits (B·T, Vp/tp), targets and losses: MTP's. */
Status model_tp_xent_of(Model *m, float *logits, const int32_t *targets, float *losses, float dloss, Err *e);
/* After the step's micro-batches: the gradients of the parameters every rank
 * holds whole but sees only B·T/tp tokens of (norms, learned positions)
 * all-reduced. Not plan collectives (the plan counts none for them). */
Status model_tp_finish_grads(Model *m, Err *e);

/* ---- block-scaled FP8 over TP (model_tp_block.c) ---- */
/* ST_UNAVAILABLE naming the flag and model column when a shard boundary (tokens, a sharded weight's rows or
 * columns) misses the recipe's 128 boundaries; ST_OK at tp 1 or without block scaling. */
Status model_tp_block_check(const Plan *p, Err *e);
/* Bytes of a (rows, cols) tensor's E4M3 codes followed by its 1x128 tiles' FP32 scales. */
uint64_t model_tp_block_seg(uint64_t rows, uint64_t cols);
/* A column-parallel linear's saved transposed shard's scales: after its codes (model_layout.c). */
float *model_tp_block_saved_s(Model *m, uint32_t l, LinearKind k);
/* A column-parallel forward: x, this rank's tokens, cast and gathered, the GEMM d (b set) run over the ranks'
 * rows into d->d. */
Status model_tp_block_fwd(Model *m, uint32_t l, LinearKind k, const void *x, GemmDesc *d, Err *e);
/* dY (B·T, N)'s transposed copy, each rank's tokens tiled on their own: (tp, N, B·T/tp) and their scales. */
Status model_tp_block_dy_col(Model *m, const void *dy, uint64_t N, uint8_t *col, float *col_s, Err *e);
/* A column-parallel wgrad (wg's a: model_tp_block_dy_col's copy): the saved shards gathered, rank by rank. */
Status model_tp_block_wgrad(Model *m, uint32_t l, LinearKind k, GemmDesc *wg, Err *e);

#endif
