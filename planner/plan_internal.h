/* planner/plan_internal.h — what the plan_*.c files share (not a public API).
 *
 * Geo holds the layout-resolved sizes every part of the model needs; Ck is a
 * sticky overflow flag so the arithmetic stays readable: a chain of ck_mul /
 * ck_add calls and one check at the end. */
#ifndef FP8PLAN_PLANNER_PLAN_INTERNAL_H
#define FP8PLAN_PLANNER_PLAN_INTERNAL_H

#include "planner/plan.h"
#include "planner/plan_ctx.h"

typedef struct {
    int ovf;
} Ck;

static inline uint64_t ck_mul(Ck *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) c->ovf = 1;
    return r;
}
static inline uint64_t ck_add(Ck *c, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) c->ovf = 1;
    return r;
}
static inline uint64_t ck_mul3(Ck *c, uint64_t a, uint64_t b, uint64_t d) { return ck_mul(c, ck_mul(c, a, b), d); }
/* Division is most of a plan's cost: skip it for a divisor of 1 (the common
 * tp/cp/dp = 1 cases) and use 32-bit division when both operands fit. */
static inline uint64_t udiv(uint64_t a, uint64_t b)
{
    if (b == 1) return a;
    if ((a | b) <= UINT32_MAX) return (uint32_t)a / (uint32_t)b;
    return a / b;
}
static inline uint64_t umod(uint64_t a, uint64_t b)
{
    if (b == 1) return 0;
    if ((a | b) <= UINT32_MAX) return (uint32_t)a % (uint32_t)b;
    return a % b;
}
static inline uint64_t ceil_div(uint64_t a, uint64_t b) { return udiv(a, b) + (umod(a, b) != 0); }

/* dtype_bytes and dtype_is_fp8 inline: plan_build calls them a few hundred times per plan. */
static inline uint64_t dt_bytes(Dtype d)
{
    switch (d) {
    case DT_FP32: return 4;
    case DT_FP16:
    case DT_BF16: return 2;
    case DT_E4M3:
    case DT_E5M2:
    case DT_E8M0: return 1;
    default: return 0;
    }
}
static inline int dt_fp8(Dtype d) { return d == DT_E4M3 || d == DT_E5M2; }
/* recipe_fp8_gemm and recipe_fp8_copy_bytes_per_param inline, for the same reason. */
static inline int rc_fp8_gemm(const Recipe *r) { return dt_fp8(r->gemm_fwd) || dt_fp8(r->gemm_bwd); }
static inline uint64_t rc_copy_bytes(const Recipe *r) { return dt_bytes(r->fp8_row) + dt_bytes(r->fp8_col); }

/* ---- mixture of experts, latent attention and multi-token prediction (plan_moe*.c) ---- */

/* One linear layer of a layer kind, per rank: weight [rows, cols], `count` of them (the local experts of a
 * grouped GEMM; 1 otherwise), each multiplying m rows per micro-batch; the input it saves for its weight gradient
 * has `saved` rows (the sequence-parallel shard when the linear gathers its input). */
enum { XL_GEMM = 0, XL_EXPERT, XL_ROUTER }; /* states: dense-DP FP8 weight, expert-DP FP8 weight, BF16 "other" */
typedef struct {
    uint64_t rows, cols, count, m, saved;
    uint8_t kind;
    uint8_t up;   /* 1: an up-projection of latent attention (q_up, kv_up) */
    uint8_t part; /* XP_*: what --recompute-modules mlp / shared_experts / moe run again */
} Lin;
enum { XP_ATTN = 0, XP_FFN, XP_SHARED, XP_MOE }; /* XP_MOE: the router and the routed experts */
enum { XK_DENSE = 0, XK_MOE, XK_COUNT, X_MAX_LIN = 10 };
typedef struct {
    int on, mla;
    uint64_t E, El, topk, ep, etp, edp, ep_stride; /* experts, local experts, top-k, groups; EP ranks are etp apart */
    uint64_t Fe_t, Fs_t;                           /* expert FFN per ETP rank, shared-expert FFN per TP rank */
    uint64_t rows, rows_e; /* expert rows per micro-batch on this rank (all local experts), per local expert */
    uint64_t dqk, dv;      /* query/key and value head dims */
    uint64_t latent;       /* MLA: q_lora (h without one) + kv_lora, the up-projections' inputs SP gathers */
    Lin lin[XK_COUNT][X_MAX_LIN];
    int nlin[XK_COUNT];
    uint64_t gemm[XK_COUNT], other[XK_COUNT]; /* per layer and rank: dense-DP linear weights, norms + router */
    uint64_t ngemm[XK_COUNT];                 /* per layer: its dense-DP linear weight tensors (gemm's) */
    uint64_t rbias;  /* a sigmoid router's expert bias per MoE layer (E FP32 values, a buffer: not in other) */
    uint64_t expert; /* expert weights per MoE layer on this rank */
    uint64_t mtp, mtp_gemm, mtp_other; /* MTP depth; per depth besides its layer: eh_proj, three norms */
    uint64_t nd[3], nx[3];             /* dense / MoE layers on the first, the MoE-heaviest middle and the last stage */
} MoeGeo;

typedef struct {
    /* model, resolved */
    uint64_t h, F, k, heads, kv_heads, q_dim, kv_dim, L, V, Vp, seq;
    /* layout */
    uint64_t tp, pp, vpp, cp, dp, d, mbs, m, world, rep;
    uint64_t Ls;         /* layers on stage 0 */
    uint64_t Lf, Lm, Ll; /* layers on the first, each middle and the last stage (Lf = Ll = Lm when even) */
    uint64_t tok;        /* tokens of one micro-batch on this CP rank: mbs * seq / cp */
    uint64_t s_local;    /* seq / cp */
    /* per-rank sizes, divided once: q_dim/tp, kv_dim/tp, ffn/tp, heads/tp, Vp/tp, ceil(tok/rep), ceil(h/tp) */
    uint64_t q_t, kv_t, F_t, heads_t, Vp_t, tok_r, h_t;
    /* per TP rank, per layer */
    uint64_t lin_rows[LIN_COUNT], lin_cols[LIN_COUNT];
    uint64_t gemm_layer;  /* linear weight elements per layer */
    uint64_t other_layer; /* norms + biases per layer */
    uint64_t norm_elems;  /* one norm (2h LayerNorm, h RMSNorm) */
    uint64_t emb;         /* token embedding Vp/tp * h */
    uint64_t pos;         /* learned position table seq_len * h */
    MoeGeo x; /* x.on: the model has experts, latent attention or MTP (plan_moe.c); for other models only on, mla,
                 E, mtp, dqk and dv are set (0): the dense paths read nothing else of it */
} Geo;

/* Index of a stage in MoeGeo.nd / nx: 0 first, 2 last (also when pp = 1: both), 1 a middle one. */
static inline int x_stage(const Geo *g, uint32_t stage) { return stage == 0 ? 0 : stage == g->pp - 1 ? 2 : 1; }

/* Stage-specific memory (both stage 0 and the last stage are built; the larger is reported). mem: MT_COUNT_ terms
 * where the caller points it (plan_build: stage 0's are the plan's own, so a plan whose stage 0 is the largest is
 * not copied again). */
typedef struct {
    MemTerm *mem;
    uint64_t cat[MC_COUNT_];
    uint64_t total;
    uint64_t params, params_gemm, params_expert;
    uint64_t linear_tensors; /* the dense-DP linear weight tensors params_gemm holds (Plan.linear_tensors) */
    uint64_t layer_bwd;      /* plan_memory: a layer's backward working set, the part of MT_TRANSIENT every stage has */
} StageMem;

/* Activation bytes of one layer and micro-batch (recompute none; plan_mem.c explains the items). */
typedef struct {
    uint64_t hp, fp8, fp8_elems, attn, mask, input; /* input: the layer input (full recompute keeps only this) */
    uint64_t op;      /* everything op-level recompute keeps (layer input, odd matmul outputs, attention out + lse) */
    uint64_t wcopy;   /* FP8 weight copies a layer saves for backward when they are not cached */
    uint64_t moe;     /* a MoE layer's routing activations (MT_ACT_MOE) */
    uint64_t moe_off; /* of which in host memory between forward and backward (--offload-modules) */
    uint64_t rebuilt; /* what --recompute-modules rebuilds of one layer before its backward (in the transient) */
} LayerAct;

/* Parameters of one layer's parts, whole (no parallelism): plan_params.c. */
typedef struct {
    uint64_t attn;        /* attention linear weights (standard QKV + proj, or MLA's five) */
    uint64_t attn_other;  /* q/k norms or MLA latent norms, attention biases */
    uint64_t dense_ffn;   /* dense FFN weights (FC1 + FC2) */
    uint64_t dense_other; /* the layer's two norms + FFN biases */
    uint64_t expert;      /* one routed expert ((k + 1) Fe h) */
    uint64_t shared;      /* the shared experts' MLP */
    uint64_t router;      /* router weight */
    uint64_t router_bias; /* a sigmoid router's expert bias (E values): a buffer, not a parameter (plan_params.c) */
    uint64_t moe_other;   /* a MoE layer's two norms */
    uint64_t norm;        /* one norm */
} LayerParams;
void plan_layer_params(const ModelSpec *md, Ck *ck, LayerParams *o);

/* ---- memory helpers (plan_mem.c), shared with plan_moe_mem.c ---- */
/* Sets term id of sm: its bytes, elements of dtype dt, sharded `shards` ways; its name, category and whether it
 * persists are its MEM_TERMS row's (mem_term_name, ...), not held in sm. */
void plan_term(StageMem *sm, MemTermId id, Dtype dt, uint64_t elements, uint64_t bytes, uint32_t shards);
/* Every term of sm empty (DT_NONE, 0 elements, 0 bytes, 1 shard) before a stage's plan_memory writes the ones it
 * holds with plan_term. */
void plan_mem_blank(StageMem *sm);
/* The five states of `elems` elements of a state set, sharded over d ranks as the input's sharding says. */
void plan_state_terms(const PlanInput *in, uint64_t d, StageMem *sm, Ck *ck, const StateSet *s, uint64_t elems,
                      MemTermId w, MemTermId master, MemTermId grad, MemTermId mm, MemTermId vv);
/* The states of s that it has (dtype not DT_NONE) and that shard over the DP group (bit 1u << StateId): the bits of
 * plan_state_sharded, all at once. */
unsigned plan_state_shard_bits(const PlanInput *in, const StateSet *s);
/* Scales of one FP8-stored R x C tensor at granularity gr (0 for per-tensor; *count UINT64_MAX on overflow). */
uint64_t plan_block_scale_bytes(Granularity gr, uint64_t rows, uint64_t cols, uint64_t *count);

/* Block scales of one FP8 linear weight [rows, cols] at the weight granularity: its FP8 working weight
 * (sharded over d under ZeRO-3), the row-wise copy and the transposed copy when kept; returns the count, *bytes
 * their bytes. */
uint64_t plan_weight_block_scales(const PlanInput *in, uint64_t rows, uint64_t cols, uint64_t d, int row, int col,
                                  Ck *ck, uint64_t *bytes);
/* ZeRO-3's gathered layer: its weights in the compute dtype, FP8 copies, unsharded gradient and reduce-scatter
 * input (per linear weight), and the other parameters' weight, gradient and fp32 reduction (plan_mem.c). */
uint64_t plan_zero3_layer_bytes(const PlanInput *in, uint64_t gemm, uint64_t other, Ck *ck);
/* MT_SCALE_GEMM (per-tensor records of ntens FP8 tensors), MT_SCALE_BLOCK and MT_SCALE_STATE. */
void plan_scale_terms(const PlanInput *in, StageMem *sm, Ck *ck, uint64_t ntens, uint64_t block_n, uint64_t block_b);

/* The input's sequence length (its model's when 0) and global batch (about 2M tokens rounded up to mbs x dp
 * when 0). */
static inline uint64_t resolve_seq(const PlanInput *in) { return in->seq ? in->seq : in->model->seq_len; }

static inline uint64_t resolve_gbs(const PlanInput *in, uint64_t seq)
{
    if (in->gbs) return in->gbs;
    uint64_t unit = (uint64_t)in->mbs * in->dp;
    uint64_t want = ceil_div(1ull << 21, seq ? seq : 1); /* about 2M tokens */
    return ceil_div(want, unit ? unit : 1) * (unit ? unit : 1);
}

/* Layers per stage: the first and last as given (0 = an even share), the rest split evenly. Returns 0, or -1
 * when the counts do not add up (e, when non-NULL, explains; plan_validate.c). */
int plan_stage_split(const PlanInput *in, uint64_t L, uint64_t *lf, uint64_t *lm, uint64_t *ll, Err *e);
/* The geometry of an input: its model's sizes, layout and per-rank sizes. It reads nothing of the input's
 * recompute or sharding, so inputs that differ only in those share it (plan_sweep_build). */
void plan_geo(const PlanInput *in, uint64_t seq, uint64_t gbs, Geo *g);
/* The checks of plan_validate after plan_validate_head's (plan_validate runs both). */
PlanReject plan_validate_tail(const PlanInput *in, Err *e);
/* plan_validate in two parts, in its order: the model, the GPU and the settings (what a plan context decides once,
 * plan_ctx.h), then everything that reads the layout (plan_validate_head's rest, then plan_validate_tail). */
PlanReject plan_validate_setup(const PlanInput *in, Err *e);
PlanReject plan_validate_layout(const PlanInput *in, Err *e);
/* A context's layout-free parts (parameter counts, GEMM rates) for in; plan_ctx_init is this with the key and the
 * setup checks (plan_ctx.c). */
void plan_ctx_parts(PlanCtx *cx, const PlanInput *in);

/* A sweep's geometry, kept from one row to the next (sweep.c). */
typedef struct {
    Geo g;
    int have;   /* g holds the geometry of the last row built */
    PlanCtx cx; /* the context of the last row that got past its memory (made again when a row's differs) */
} PlanSweepGeo;
/* plan_build_fast (memory_first 0) for a sweep's row whose plan_validate_head the sweep has run on an input that
 * differs from it only in what that does not read (REJECT_NONE): the rest of plan_validate, then the build.
 * same_layout: the row differs from the last one given c only in recompute and sharding, so c's geometry is taken
 * instead of built again (plan_geo reads neither). memory_first 1: as plan_build_memory_first, but a plan that
 * cannot fit (plan_may_fit 0) has only what ranks a miss filled: total_bytes, capacity_bytes, limit_bytes, fits,
 * low_bytes, low_stage, unknown_bytes, stage and verdict (the sweep builds a miss it keeps again, whole). */
Status plan_sweep_build(const PlanInput *in, PlanSweepGeo *c, int same_layout, int memory_first, Plan *out,
                        PlanReject *why);
/* The MoE/MLA checks of plan_validate (REJECT_NONE when the input fits) and geometry (fills g->x). */
PlanReject moe_validate(const PlanInput *in, Err *e);
void moe_geo(const PlanInput *in, Geo *g);
/* Dense and MoE layers on stage s (the first dense_layers layers are dense). */
void moe_stage_kinds(const PlanInput *in, const Geo *g, uint32_t s, uint64_t *nd, uint64_t *nx);
/* Layers on a stage. */
static inline uint64_t geo_layers(const Geo *g, uint32_t stage)
{
    return stage == 0 ? g->Lf : stage == g->pp - 1 ? g->Ll : g->Lm;
}
/* The main-gradient dtype of a state set under the input's main_grad setting (FP8 gradients stay FP8); inline:
 * a plan asks it about a dozen times. */
static inline Dtype plan_grad_dt(const PlanInput *in, Dtype recipe_dt)
{
    if (dt_fp8(recipe_dt) || recipe_dt == DT_NONE) return recipe_dt;
    return in->main_grad == MAIN_GRAD_FP32 ? DT_FP32 : in->main_grad == MAIN_GRAD_BF16 ? DT_BF16 : recipe_dt;
}
/* An Adam moment's dtype under the input's moment_dt (a state the set does not hold stays DT_NONE). */
static inline Dtype plan_moment_dt(const PlanInput *in, Dtype recipe_dt)
{
    if (recipe_dt == DT_NONE) return recipe_dt;
    return in->moment_dt == MOMENT_FP32 ? DT_FP32 : in->moment_dt == MOMENT_BF16 ? DT_BF16 : recipe_dt;
}
void plan_layer_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a);
/* Parts of plan_layer_act, added into *a: the input a linear saves for its weight gradient ([rows, cols] in the
 * recipe's saved dtype: FP8 + block scales into a->fp8, else into *hp); standard attention (norm1, Q/K/V, flash
 * output and statistics, QKV and proj inputs); an FFN of F_t per TP rank (norm2, FC1 output, FC1 and FC2
 * inputs; F_t = 0: the norm only). */
void plan_saved_input(const Recipe *rc, Ck *ck, uint64_t rows, uint64_t cols, LayerAct *a, uint64_t *hp);
void plan_attn_act(const PlanInput *in, const Geo *g, Ck *ck, LayerAct *a);
/* q/k norms (qk_norm): one layer's working copy of the attention's normalized, rotated input [tok, q_t + 2 kv_t]
 * (BF16) and the norms' fp32 rstd [tok, q and k heads of the rank], in the backward's working set (the saved
 * Q, K, V are the norms' input; the backward rebuilds the copy). 0 without q/k norms. */
uint64_t plan_qk_norm_bytes(const PlanInput *in, const Geo *g, Ck *ck);
void plan_ffn_act(const PlanInput *in, const Geo *g, Ck *ck, uint64_t F_t, int dense, LayerAct *a);
/* The open implementation choices (plan.h PLAN_UNK_*) as the memory terms apply them, when in->mem_savings takes
 * them: is the BF16 attention output dropped (attn_out, FP8-saved inputs only); are FP8 weight copies held, cached
 * or saved per micro-batch (not under ZeRO-3, not with the fp8_weight_cache saving); bytes per parameter of the
 * copies one linear's GEMM casts while it runs (the fp8_weight_cache saving; 0 otherwise). dense (plan_ffn_act):
 * a dense layer's FFN, which the dense_act saving changes (a shared expert's FFN: 0). */
int plan_attn_out_dropped(const PlanInput *in);
int plan_fp8_copies_held(const PlanInput *in);
uint64_t plan_fp8_cast_bytes_per_param(const PlanInput *in);
void plan_memory(const PlanInput *in, const Geo *g, const LayerAct *la, uint32_t stage, StageMem *sm, Ck *ck,
                 int reuse);
/* Category sums, the allocator's reserve and the total of a stage whose terms are all written. */
void plan_mem_sums(const PlanInput *in, StageMem *sm, Ck *ck);
/* The last stage's loss working set beyond the saved fp32 softmax (MT_ACT_OUTPUT), plan_mem.c: (loss_bytes - 4) B a
 * logit [tok, Vp/tp]. Megatron's vocab-parallel cross entropy peaks in its forward (BF16 logits, an fp32 working
 * copy), before any gradient buffer exists. This executor (fusion fp8plan) turns its fp32 logits into their gradient
 * in place and peaks in the LM head's backward (exec/model/model_pass.c head_bwd): d(logits) in BF16 (loss_bytes 6)
 * while the head's dgrad writes d(its input) into the dX buffer (dx elements, as wide as the layers'), beside
 * d(residual) [tok_r, h] and, with sequence parallelism, the head's re-gathered input and its d(input) [tok, h]
 * before the reduce-scatter (exec/model/model_tp.c), all BF16. */
uint64_t plan_loss_bytes(const PlanInput *in, const Geo *g, uint64_t dx, Ck *ck);
/* Every memory term of a stage of a MoE / MLA / MTP model (plan_moe_mem.c). */
void moe_memory(const PlanInput *in, const Geo *g, uint32_t stage, StageMem *sm, Ck *ck);
void plan_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck);
/* Fill collective id (name, group, op from the blank table): dtype, ranks at stride, payload per call, calls per
 * step; bus bytes, bandwidth and time from NCCL's model (plan_comm.c). */
/* The calls a step of our executor's gradient reduction and distributed optimizer make over the DP group
 * (exec/model/model_grad_bucket.c, model_shard.c), eg linear-weight and eo other elements on the GPU, ntens linear
 * weight tensors, per class ([0] the linear weights', [1] the others'): per state class one bucket — its gradients
 * all-reduced or reduce-scattered (rs), its working weights all-gathered (ag), each in one call —, but one call per linear tensor where each carries its own scale:
 * FP8-LM's E4M3 gradients (reduced with a scale agreed per tensor) and its FP8 weight copies (no working weight:
 * each cast with its own scale, then gathered). */
void plan_dp_buckets(const PlanInput *in, uint64_t eg, uint64_t eo, uint64_t ntens, uint64_t rs[2], uint64_t ag[2]);
void plan_coll_set(const PlanInput *in, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks, uint64_t stride,
                   uint64_t payload, uint64_t calls, Ck *ck);
/* plan_coll_set of a gradient reduced after the backward (the tied embedding's, the experts' over EDP): on a host
 * profile timed from the cache or from memory as plan_grad_miss says (planner/plan_comm.c coll_time_of). */
void plan_coll_set_grad(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks,
                        uint64_t stride, uint64_t payload, uint64_t calls, Ck *ck);
/* Bytes one GPU sends for one call of op over n ranks with payload S (nccl-tests' bus bytes; plan_comm.c). */
uint64_t plan_bus_bytes(CommOp op, uint64_t n, uint64_t S, Ck *ck);
/* The bytes of a column-parallel input's saved shards gathered again for its weight gradient over tp ranks:
 * tok x cols in dt, and under block scaling (FP8 dt, gr not per-tensor) the transposed copies' scales, each
 * rank's (cols, tok/tp) tiled from its first token — what Transformer Engine's blockwise all-gather moves for
 * the columnwise data (exec/model/model_tp_block.c). */
uint64_t plan_tp_regather_bytes(Ck *ck, Dtype dt, Granularity gr, uint64_t tok, uint64_t cols, uint64_t tp);
/* The TP collectives outside the layers: vocabulary-parallel embedding, LM head and loss, the all-reduce of the
 * TP-replicated parameters' gradients (plan_comm_vocab.c); their seconds per micro-batch on a stage holding
 * the embedding (first) and/or the head (last), forward and backward, all on the critical path. */
void plan_comm_vocab(const PlanInput *in, const Geo *g, Plan *p, Ck *ck);
/* Bytes of the TP-replicated parameters' gradients on a stage (last: it holds the final norm), in their main-gradient
 * dtype; 0 at tp 1. Megatron-Core flattens them into one new tensor after the backward and all-reduces that over TP
 * (core_v0.16.0 distributed/finalize_model_grads.py _allreduce_non_tensor_model_parallel_grads:
 * _flatten_dense_tensors of every sequence_parallel / q,k_layernorm param's main_grad, FP32 under --bf16's
 * accumulate_allreduce_grads_in_fp32), so this is both tp_norm_grad_allreduce's payload and a transient buffer
 * (plan_mem.c, plan_moe_mem.c). */
uint64_t plan_tp_flat_grad_bytes(const PlanInput *in, const Geo *g, uint32_t stage, int last, Ck *ck);
/* Seconds of one call over the TP group of the vocabulary-parallel all-reduce, all-gather and reduce-scatter
 * ([tok, h]) and of the loss's all-reduce ([tok] FP32), timed once per plan: 0 for an op no stage calls. */
typedef struct {
    double ar, ag, rs, loss;
} VocabCallT;
void plan_vocab_call_times(const PlanInput *in, const Geo *g, const Plan *p, VocabCallT *vt);
void plan_vocab_time(const PlanInput *in, const Geo *g, const VocabCallT *vt, int first, int last, double *fwd,
                     double *bwd);
/* The collectives of a MoE / MLA / MTP model that differ from a dense model's (plan_moe_comm.c). */
void moe_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck);
/* Bytes of one token copy of h elements in dtype dt with the recipe's activation scales (plan_moe_comm.c). */
double moe_copy_bytes(const Recipe *rc, Dtype dt, uint64_t h);
/* The ETP all-gather's rows as the EP dispatch delivered them (an FP8 payload with its scales, not quantized
 * again), or at ep 1 the hidden states in BF16, as Megatron-Core's all-to-all dispatcher gathers them before the
 * grouped linears quantize (token_dispatcher.py dispatch_postprocess). */
static inline Dtype moe_etp_gather_dtype(const PlanInput *in)
{
    const Dtype d = in->recipe->comm_ep_dispatch;
    return in->ep <= 1 && dt_fp8(d) ? DT_BF16 : d;
}
/* What one GPU holds of the stages (s, and pp - 1 - s with DualPipe): plan_moe_mem.c. */
typedef struct {
    uint64_t n[XK_COUNT];     /* layers of each kind, MTP layers included */
    uint64_t units[XK_COUNT]; /* in-flight layer-micro-batches of each kind */
    uint64_t mtp, nst;        /* MTP depths held, stages held (2 with DualPipe) */
    int first, last;
} Held;
void moe_held(const PlanInput *in, const Geo *g, uint32_t stage, Ck *ck, Held *o);
/* The saved activations of one layer of each kind (recompute none / selective / modules applied inside; under full
 * recompute the modules change nothing), and the bytes the modules rebuild of one layer (plan_moe_act.c). */
void moe_kind_acts(const PlanInput *in, const Geo *g, Ck *ck, LayerAct la[XK_COUNT]);
/* The most 1x128 tiles a column of an expert-grouped transposed copy (cols, rows) of El local experts holds. */
uint64_t moe_expert_tiles(uint64_t rows, uint64_t El);
/* One collective call's time over n ranks (stride in the rank order) for bus bytes b: NCCL's ring
 * latency (a host's measured link_lat) and the bandwidth the group's ranks share; *bw and *lat (optional)
 * receive the parts. */
double plan_coll_call(const PlanInput *in, CommOp op, uint64_t n, uint64_t stride, double b, double *bw, double *lat);
/* The time of one call of op in dtype dt with payload S, as every planned collective is timed: a host
 * profile's own fit of the op (plan_link_fit, plan_link_call) where it has one, else plan_coll_call of its
 * bus bytes. */
double plan_coll_time(const PlanInput *in, CommOp op, Dtype dt, uint64_t n, uint64_t stride, uint64_t S, Ck *ck,
                      double *bw, double *lat);
/* One call's seconds of a collective plan_coll_set has timed, for a caller about to time the same call (op, group
 * size, payload; the group's stride is the caller's to match): its latency plus its bus bytes at its bandwidth,
 * which is exactly what plan_coll_call returned for it (test_plan_time holds the two equal); -1 where that
 * does not hold: p->coll[id] unused or another call, or a host profile (its measured fits time some ops). The ring
 * model's time depends on op, group and bus bytes only, so a TP call of the same size is timed once per plan. */
double plan_coll_again(const PlanInput *in, const Plan *p, CollectiveId id, CommOp op, uint64_t n, uint64_t S);
/* plan_coll_set, with the call's time taken from the first of same[0..nsame) that made the same call over the same
 * group (plan_coll_again), else timed. */
void plan_coll_set_same(const PlanInput *in, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks, uint64_t stride,
                        uint64_t payload, uint64_t calls, Ck *ck, const CollectiveId *same, int nsame);
void plan_time(const PlanInput *in, const Geo *g, const GemmGpu *gg, Plan *p);
/* The fraction of the concurrent GEMMs that hides a TP collective: the stack's (in->overlap_tp), but none on a GPU
 * before Blackwell (sm < 100) when Transformer Engine's userbuffers would overlap them beside Megatron's merged
 * all-to-all schedule (overlap_ep > 0, ep > 1, tp > 1): Megatron-Bridge sets CUDA_DEVICE_MAX_CONNECTIONS=1 on Hopper
 * for TP or CP only without overlap_moe_expert_parallel_comm (training/comm_overlap.py,
 * _set_num_cuda_device_max_connections, v0.1.0rc4; scripts/performance/perf_plugins.py from v0.2.0; the MoE
 * ModelZoo's sbatch_benchmarking.sh sets 32 with A2A_OVERLAP=1), and without it "the communication kernel will be
 * pushed to the end of the GEMM kernel so failing to overlap" (the same code; docs/performance-guide.md, "Common
 * reason for TP comm overlap failure at Hopper"). */
double plan_tp_overlap(const PlanInput *in);
void plan_advise(const PlanInput *in, Plan *p);

/* in-flight layer-microbatch units on a stage (activations held at the peak) */
uint64_t plan_inflight_layers(const Geo *g, uint32_t stage);
/* micro-batches in flight on a stage's first model chunk (its embedding on stage 0) */
uint64_t plan_inflight_mbs(const Geo *g, uint32_t stage);

/* ---- memory-bound kernels of one layer and micro-batch (plan_kernels.c) ---- */
typedef struct {
    double fwd, bwd;           /* seconds */
    double fwd_attn, bwd_attn; /* of which the attention part */
    double acc_b;              /* the weight-gradient accumulation kernels (backward) */
    double lin_f, lin_b;       /* the recipe's FP8 linear extras (the rest: the FFN's) */
} LayerElem;
void plan_layer_elem(const PlanInput *in, const Geo *g, LayerElem *out);

/* ---- one layer and micro-batch of the time model (plan_time.c; MoE layer kinds: plan_moe_time.c) ---- */
typedef struct {
    double gemm_f, gemm_b, attn_f, attn_b, elem_f, elem_b;
    double rc_gemm, rc_attn, rc_elem; /* recompute added to the backward */
    double tp_f, tp_b, cp;            /* exposed collectives */
    double tp_raw;                    /* TP collectives before overlap (f + b) */
    double wg;                        /* weight-gradient GEMMs (in gemm_b) */
    double xg_f, xg_b;                /* expert GEMMs (in gemm_f, gemm_b) */
    double route_f, route_b;          /* router, permutation and expert-activation kernels (in elem_f, elem_b) */
    double router_k, perm_k, act_k;   /* forward + backward: the router (its GEMMs too), the permutes, the experts'
                                         activation and FP8 casts (TimeBreakdown moe_router_s ...) */
    double ep_f, ep_b, ep_raw;        /* exposed expert all-to-alls (and expert TP), and before overlap */
    double host_f, host_b;            /* the host's issue time beyond the layer's GPU time (MoE layers) */
} LayerT;

static inline double maxd(double a, double b) { return a > b ? a : b; }
static inline double exposed(double comm, double window, double ov) { return maxd(0.0, comm - ov * window); }
/* 1 / gpu_kind_bw(g, k, eff_hbm), given inv_elem = 1 / gpu_elem_bw(g, eff_hbm): a kind without a rate of its own
 * runs at the element-wise one, whose inverse the caller has (the same bits, no division). */
static inline double kind_inv(const GpuSpec *g, ElemKind k, double inv_elem)
{
    return g->elem_kind_bw[k] > 0 ? 1.0 / g->elem_kind_bw[k] : inv_elem;
}
/* Time of one call of collective c (0 when unused). */
static inline double call_s(const Collective *c) { return c->calls ? c->time_s / (double)c->calls : 0; }

/* ---- GEMM model (plan_gemm.c; GemmGpu is in planner/plan_ctx.h, a context holds one) ---- */
void gemm_gpu_init(const PlanInput *in, GemmGpu *gg);
/* 1 when the plan's FP8 GEMMs are MXFP8 block-scaled GEMMs (1x32 scales) on a Blackwell GPU, which
 * gemm_gpu_init rates at plan_mx_gemm_rel of the per-tensor FP8 rate. */
int plan_mx_gemm(const PlanInput *in);
/* 1 when the plan's FP8 GEMMs are DeepSeek-style block-scaled GEMMs (1x128 activations, 128x128 weights) on a
 * Hopper GPU, which gemm_gpu_init rates at arch_blockwise_gemm_rel_sm90 of the per-tensor FP8 rate. */
int plan_block_gemm(const PlanInput *in);
/* The GPU's MXFP8 GEMM rate as a fraction of its per-tensor FP8 rate: GpuSpec.mx_gemm_rel where set (the fit of
 * tests/unit/test_fidelity_fit.c varies it), else arch_mxfp8_gemm_rel_sm100. */
double plan_mx_gemm_rel(const GpuSpec *g);
/* Seconds for `batch` independent C[M,N] = A[M,K] B[K,N] with operands of in_bytes (1 or 2) and
 * out_bytes per element of C moved (2 for a BF16 output, 8 to read and write an fp32 accumulator). */
double gemm_time(const GemmGpu *gg, uint64_t M, uint64_t N, uint64_t K, uint64_t batch, int fp8, double out_bytes);
/* A layer's n linears (weight rows[i] x cols[i], tok rows of input): fp[i] the forward GEMM (f8: FP8 operands,
 * a BF16 output), wg[i] the weight gradient's (b8, wout bytes per output element), dg[i] the input gradient's
 * (b8, BF16 output; not written where bit i of no_dgrad is set), each gemm_time's. */
void gemm_time_linears(const GemmGpu *gg, uint64_t tok, const uint64_t *rows, const uint64_t *cols, int n, int f8,
                       int b8, double wout, unsigned no_dgrad, double *fp, double *dg, double *wg);
/* Seconds for `count` GEMMs of one shape launched one kernel each, round-robin on `streams` streams (Transformer
 * Engine's grouped GEMM: 4): rounds of `streams` concurrent kernels; streams 0: one batched kernel (gemm_time). */
double gemm_time_streams(const GemmGpu *gg, uint64_t M, uint64_t N, uint64_t K, uint64_t count, uint64_t streams,
                         int fp8, double out_bytes);
/* The attention core of one layer and micro-batch into L->attn_f / attn_b (plan_layer_time.c). */
void plan_attention(const PlanInput *in, const Geo *g, const GemmGpu *gg, LayerT *L);
/* A dense layer and micro-batch, and its recompute, into L (plan_layer_time.c). */
void plan_layer_time(const PlanInput *in, const Geo *g, const GemmGpu *gg, const Plan *p, LayerT *L);
/* Both layer kinds of a MoE / MLA / MTP model (plan_moe_time.c). */
void moe_layer_times(const PlanInput *in, const Geo *g, const GemmGpu *gg, const Plan *p, LayerT L[XK_COUNT]);
/* One MoE layer of Megatron-Core's merged 1F1B schedule (--overlap-moe-expert-parallel-comm; core_v0.14.0-0.16.0
 * models/common/model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run): one micro-batch's forward layer
 * issued beside another's backward layer, the all-to-alls on a communication stream,
 *   comm stream:    combine_bwd          | dispatch_fwd -> dispatch_bwd     | combine_fwd
 *   compute stream: attn_fwd -> post_attn | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | post_attn_bwd -> attn_bwd
 * Seconds: aF attention and router forward, mB / mW the experts' dgrad and wgrad (with their kernels), mF the experts'
 * forward, aB router and attention backward; df, cf, db, cb the dispatch and combine, forward and backward. */
typedef struct {
    double aF, mB, mW, mF, aB; /* compute */
    double df, cf, db, cb;     /* all-to-alls */
} MergedLayer;
/* The merged layer's time less its compute: the all-to-all time no partner piece hides (0 when each hides). */
double plan_ep_merged(const MergedLayer *m);
/* The share of the chunk micro-batches the merged schedule runs unmerged (warm-up forwards, cool-down backwards):
 * on the first stage, of pp stages with vpp chunks each and m micro-batches (plan_moe_time.c). */
double plan_unmerged_share(uint64_t pp, uint64_t vpp, uint64_t m);
/* Memory-bound kernels one MoE layer and micro-batch adds for a model detail (plan_moe_extra.c): bytes moved and
 * kernels launched, forward and backward. */
typedef struct {
    double fb, fk, bb, bk;
} MoeExtra;
/* A clamped GLU's clamps and biased experts' bias adds as Megatron-Core runs them (models.csv glu_clamp,
 * expert_bias; zero for other models and stacks): per MoE layer and micro-batch on this rank. */
void plan_moe_extras(const PlanInput *in, const Geo *g, MoeExtra *clamp, MoeExtra *bias);
/* Model FLOPs per token of a MoE / MLA / MTP model (plan_moe_time.c): 6 x the weights a token multiplies + attention. */
double moe_flops_per_token(const PlanInput *in, const Geo *g);

#endif
