/* exec/model/model.h — the decoder the executor trains, and its training step.
 *
 * One model for every family models.csv describes, driven by the planner's
 * ModelSpec (planner/spec.h) and Recipe (planner/recipe.h) — the same structs
 * the plan is made from:
 *   x = embed(tokens) [+ learned positions]
 *   per layer (pre-norm):
 *     x = x + Proj(Attn(Rope?(QKV(Norm1(x)))))       QKV [(H + 2·KV)·D, C]; GQA when KV < H
 *     x = x + FC2(Act(FC1(Norm2(x))))                 FC1 [k·F, C]: GELU (k 1) or SwiGLU's fused
 *                                                     gate and up (k 2, gate first)
 *   logits = NormF(x) · headᵀ                         head: the token embedding (tied) or its own
 * with Norm a LayerNorm (weight and bias) or an RMSNorm (weight), biases on the
 * block linears when the model has them, and a mean softmax cross-entropy.
 * GPT-2 is layernorm/gelu/learned/tied/biases; LLaMA rmsnorm/swiglu/rope/
 * untied/no biases with grouped-query attention. B = micro-batch, T =
 * sequence, C = hidden, F = FFN, H = heads, KV = KV heads, D = head_dim, V =
 * vocabulary (Vp = padded rows of the embedding), L = layers.
 *
 * Sizes first, then one allocation (llm.c's shape): model_layout() lists every
 * tensor with its memory term (the planner's MemTermId), dtype and element
 * count — a pure function — and model_create() carves them from one arena
 * sized by the Plan's terms (exec/model/arena.h). A step runs the plan's
 * micro-batches (gradient accumulation) through a Backend, so the same
 * orchestration drives the CPU reference and the GPU. */
#ifndef FP8PLAN_EXEC_MODEL_MODEL_H
#define FP8PLAN_EXEC_MODEL_MODEL_H

#include <stdint.h>

#include "exec/model/arena.h"
#include "exec/model/model_mtp.h"
#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "exec/backend/recipe.h"
#include "check/observed.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parameter tensors (the values key the initial weights' random streams:
 * keep them). A norm's bias exists for LayerNorm only; the linear biases when
 * the model has linear_bias; WPE for learned positions; LM_HEAD when untied. */
typedef enum {
    PK_WTE = 0, /* (Vp, C) token embedding (and LM head when tied) */
    PK_WPE,     /* (T, C) learned position embedding */
    PK_NORM1_W,
    PK_NORM1_B, /* (C) */
    PK_QKV_W,   /* ((H + 2KV)·D, C) */
    PK_QKV_B,   /* ((H + 2KV)·D) */
    PK_PROJ_W,
    PK_PROJ_B, /* (C, H·D), (C) */
    PK_NORM2_W,
    PK_NORM2_B,
    PK_FC1_W,
    PK_FC1_B, /* (k·F, C), (k·F) */
    PK_FC2_W,
    PK_FC2_B, /* (C, F), (C) */
    PK_NORMF_W,
    PK_NORMF_B,
    PK_LM_HEAD, /* (Vp, C) when untied */
    /* mixture of experts (exec/model/model_moe.c), on the layers from dense_layers on; such a layer's
     * PK_FC1_W / PK_FC2_W are its shared experts' (width S·Fe), absent without shared experts */
    PK_ROUTER_W, /* (E, C) the router's logits */
    PK_ROUTER_B, /* no parameter (kept: the values key random streams): a sigmoid router's bias is the buffer
                    Model.expert_bias */
    PK_XFC1_W,   /* (E · k·Fe, C) the routed experts' FC1, expert after expert */
    PK_XFC2_W,   /* (E · C, Fe) their FC2 */
    PK_QNORM_W,  /* (D) q/k norms (models.csv qk_norm, Qwen3): the RMSNorm weight of every query head */
    PK_KNORM_W,  /* (D) and of every key head */
    /* latent attention (DeepSeek-V2/V3; exec/model/model_mla.c): its linears replace QKV, PK_PROJ_W reads
     * heads x v_head_dim; RMSNorms over the two latents (Megatron-Core's q_layernorm / kv_layernorm) */
    PK_QDOWN_W,  /* (q_lora, C) */
    PK_QLAT_W,   /* (q_lora) the q latent's norm */
    PK_QUP_W,    /* (H·D, q_lora), or (H·D, C) without a q latent; D = qk_nope + qk_rope */
    PK_KVDOWN_W, /* (kv_lora + qk_rope, C) */
    PK_KVLAT_W,  /* (kv_lora) the kv latent's norm */
    PK_KVUP_W,   /* (H·(qk_nope + Dv), kv_lora) */
    /* multi-token prediction (exec/model/model_mtp.c; models.csv mtp_layers), per depth: the norms of the
     * shifted tokens' embedding (enorm) and of the previous depth's block output (hnorm; the main model's last
     * for depth 1), eh_proj over their concatenation, the depth's own final norm; the depths' blocks are the
     * stage's last mtp blocks (layers L .. L + D − 1, the main model's L blocks before them) */
    PK_ENORM_W, /* (C) */
    PK_ENORM_B,
    PK_HNORM_W,
    PK_HNORM_B,
    PK_EHPROJ_W, /* (C, 2C) */
    PK_MTPNORM_W,
    PK_MTPNORM_B,
    PK_COUNT
} ParamKind;

/* One parameter tensor and every state the recipe keeps for it (the dtypes
 * of recipe.gemm for block linear weights, recipe.other for the rest). */
typedef struct {
    ParamKind kind;
    int layer;           /* block index, −1 for embeddings / final norm / head */
    uint64_t rows, cols; /* GEMM weights (N, K); vectors (n, 1) */
    uint64_t numel;
    int decay;                  /* AdamW weight decay applies (matrices) */
    int gemm;                   /* a block linear weight: recipe.gemm states, FP8 copies */
    int expert;                 /* a routed experts' weight (also gemm): the plan's MT_*_EXPERT terms */
    void *weight;               /* working copy, or NULL when the recipe keeps none */
    void *master;               /* master copy, or NULL */
    void *grad;                 /* main gradient (accumulated over the step's micro-batches) */
    void *m, *v;                /* Adam moments */
    uint8_t *wq_row;            /* (N, K) cached FP8 copy for fprop, or NULL */
    uint8_t *wq_col;            /* (K, N) cached FP8 transposed copy for dgrad, or NULL */
    float *wq_row_s, *wq_col_s; /* block scaling: the copies' 128x128 blocks' scale_inv (fp8/quant.h order) */
    /* scaling records {scale, scale_inv, amax} (REC_FLOATS) of scaled states, or NULL */
    float *weight_rec, *master_rec, *grad_rec, *m_rec, *v_rec; /* weight_rec: MS-AMP O1's FP16 weight */
    uint32_t wslot;                                            /* forward scaling-bank slot of the weight (gemm only) */
    /* Sharded states (Model.shard_ways > 1): the parameter's first element in its class's flat order,
     * and the part of it this rank owns, elements [own_lo, own_lo + own_n) (own_n may be 0). A sharded
     * state's pointer (master, m, v) addresses element own_lo in this rank's shard, NULL when own_n is 0. */
    uint64_t flat, own_lo, own_n;
} ModelParam;

/* Activations of one block saved for backward. Each GEMM input is saved
 * either in the activation dtype (act_in) or as its FP8 transposed copy
 * (q_col, what wgrad reads on Hopper). */
typedef struct {
    void *x;                        /* (B·T, C) block input = norm 1 input */
    float *norm1_mean, *norm1_rstd; /* (B·T); mean: LayerNorm only */
    void *qkv;                      /* (B·T, (H + 2KV)·D) (latent attention: (B·T, 2H·D + H·Dv), assembled by
                                       exec/model/model_mla.c), after the rotary embedding; with q/k norms the QKV
                                       output (their input: the backward rebuilds the normalized, rotated q, k) */
    void *probs;                    /* (B, H, T, T) */
    void *res2;                     /* (B·T, C) x + attention branch = norm 2 input */
    float *norm2_mean, *norm2_rstd;
    void *fc1;                 /* (B·T, k·F) the activation's input */
    void *act_in[LIN_KINDS];   /* saved GEMM inputs (B·T, K) or NULL (latent attention in BF16: kv_down reads
                                  the q projection's, model_linear_saved) */
    uint8_t *q_col[LIN_KINDS]; /* saved FP8 GEMM inputs (K, B·T) or NULL */
    float *q_col_s[LIN_KINDS]; /* block scaling: their 1x128 tiles' scale_inv (K, ceil(B·T/128)) */
    /* latent attention: the latents as their projections wrote them (their norms' inputs) and the norms' rstd */
    void *cq, *ckv;            /* (B·T, q_lora), (B·T, kv_lora) */
    float *cq_rstd, *ckv_rstd; /* (B·T) each */
    /* a MoE layer's routed part (exec/model/model_moe.c; NULL on dense layers); R = B·T·k rows */
    float *r_scores;   /* (B·T, E) the router's scores */
    int32_t *r_ids;    /* (B·T, k) the experts each token chose */
    float *r_w;        /* (B·T, k) their combine weights */
    int32_t *r_counts; /* (E) rows per expert */
    int32_t *r_rowof;  /* (B·T, k) the permuted row of each (token, slot) */
    void *r_in;        /* (B·T, C) norm 2's output when no shared FC1 saves it (else act_in[LIN_FC1]) */
    void *x_in;        /* (R, C) the dispatched expert inputs */
    void *x_fc1;       /* (R, k·Fe) the experts' FC1 output */
    void *x_fc2in;     /* (R, Fe) the experts' activation output = FC2 input */
    /* expert tensor parallelism at ep 1 (model_etp_arena): x_in, x_fc1 and x_fc2in (FP8: x_fc1, q_xin, q_xh and
     * their tiles) are the experts' side, the ETP group's etp·R rows at the rank's Fe/etp columns */
    void *y_tok; /* (R, C) expert or expert tensor parallelism: the experts' outputs back at their token copies, kept
                    for the combine weights' gradient (one rank recomputes them) */
    /* FP8 recipes save the experts' GEMM inputs as transposed FP8 copies instead of x_in / x_fc2in
     * (those NULL), each expert's columns [r_g, r_g + m_g) cast with its own scale */
    uint8_t *q_xin; /* (C, R) */
    uint8_t *q_xh;  /* (Fe, R) */
    /* block scaling: their 1x128 tiles along the rows, each expert's from its first row (model_moe_block.c):
     * (C, model_moe_tiles(R, E)) and (Fe, ...) at most */
    float *q_xin_s, *q_xh_s;
} LayerActs;

typedef struct {
    int32_t *tokens, *targets; /* (B·T) of the micro-batch being run */
    float *losses;             /* (B·T) */
    float *rope;               /* (T, R/2, 2) cos, sin of the rotary embedding (R: D, or latent attention's
                                  qk_rope), or NULL */
    LayerActs *layer;          /* L blocks */
    void *x_final;             /* (B·T, C) last block output = final norm input */
    float *normf_mean, *normf_rstd;
    void *normf_out; /* (B·T, C) */
    float *logits;   /* (B·T, Vp) FP32 (as Megatron's cross-entropy), overwritten by d(logits) */
    /* working buffers of one block, reused (not saved) */
    void *dlogits;   /* (B·T, Vp) d(logits) in the activation dtype for the LM-head GEMMs */
    void *t_in;      /* (B·T, F) GEMM input in the activation dtype when it is saved only in FP8 */
    uint8_t *t_qrow; /* (B·T, max K) FP8 row-wise GEMM input for fprop */
    uint8_t *t_qcol; /* (max K, B·T) FP8 transposed input when recast in backward */
    uint8_t *t_wrow; /* (max block weight) FP8 weight, row-wise, when the recipe does not keep copies */
    uint8_t *t_wcol; /* (max block weight) FP8 weight, transposed, likewise */
    void *t_out;     /* (B·T, C) projection / FC2 output before the residual add */
    /* q/k norms: the attention's input (B·T, (H + 2KV)·D), normalized and rotated from the saved QKV output, and
     * the norms' (B·T, H + KV) FP32 rstd, in the forward (t_) and rebuilt in the block backward (b_) */
    void *t_qkv, *b_qkv;
    float *t_qkrstd, *b_qkrstd;
    void *d_res;     /* (B·T, C) residual-stream gradient */
    void *d_a;       /* (B·T, max N) gradient of a GEMM output */
    void *d_b;       /* (B·T, C) gradient of a C-wide GEMM input */
    void *d_act;     /* (B·T, F) SwiGLU only: gradient of the activation's output */
    uint8_t *d_qrow; /* (B·T, max N) FP8 output gradient for dgrad */
    uint8_t *d_qcol; /* (max N, B·T) FP8 transposed output gradient for wgrad */
    /* block scaling: the 1x128 tiles' scale_inv of t_qrow (B·T, ceil(K/128)), d_qrow (B·T, ceil(N/128)) and
     * d_qcol (N, ceil(B·T/128)) */
    float *t_qrow_s, *d_qrow_s, *d_qcol_s;
    float *attn_scratch; /* (B, H, T, T) FP32 */
    float *attn_scores;  /* (H, T, T) FP32 raw scores of one sequence in the forward (phase FWD) */
    float *gstage;       /* FP32 staging of a gradient not kept in FP32: (max non-embedding param + C) */
    float *gstage_emb;   /* (Vp·C [+ Vp·C untied] [+ T·C learned]) FP32 staging of the embeddings' gradients */
    /* tensor parallelism (tp > 1 only, exec/model/model_tp.c) */
    void *tp_fwd;     /* (B·T, C) forward: a gathered input, or a partial output before its reduce-scatter */
    void *tp_head_x;  /* (B·T, C) the LM head's input gathered again (backward) */
    void *tp_head_d;  /* (B·T, C) the LM head's partial input gradient before its reduce-scatter */
    void *tp_full;    /* (B·T, C) blocks' backward: a gathered output gradient; a column-parallel partial input
                        gradient before its reduce-scatter, then that linear's input gathered again (BF16 (B·T, C),
                        FP8 the transposed shards (tp, C, B·T/tp)) */
    uint8_t *tp_qloc; /* (B·T/tp, C) FP8 row-wise input shard for the forward's gather */
    float *tp_norm;   /* FP32, every replicated parameter's gradient packed for their one all-reduce (phase FINISH) */
    float *tp_xstats; /* (3, B·T) the vocabulary-parallel cross-entropy's max, sum and target logit */
    /* mixture of experts (exec/model/model_moe.c) */
    float *r_logits; /* (B·T, E) FP32 router logits; in backward their gradient */
    float *r_dw;     /* (B·T, k) FP32 d(combine weights) */
    float *r_ds;     /* (B·T, E) FP32 d(scores) of the auxiliary loss */
    void *r_dl;      /* (B·T, E) d(logits) in the activation dtype for the router's GEMMs */
    void *x_y;       /* (R, C) the experts' outputs (forward; recomputed in backward), then d(expert inputs) */
    void *x_dy;      /* (R, C) d(expert outputs); none with expert parallelism's FP8 dispatch (x_y holds them) */
    /* expert tensor parallelism at ep 1 (model_etp_arena): x_y, x_dy, x_dh2 and x_dh1 hold the ETP group's etp·R
     * rows, x_y and x_dy the experts' side and the gather / reduce-scatter's rows in backward; etp_rows those of
     * the forward */
    void *etp_rows;
    uint8_t *ep_pay; /* expert parallelism's FP8 dispatch: the token side's send buffer, R rows of codes + scales */
    void *x_dh2;     /* (R, Fe) d(activation output) */
    void *x_dh1;     /* (R, k·Fe) d(FC1 output) */
    void *t_moe;     /* (B·T, C) the routed part's combined output (forward) */
    void *d_moe;     /* (B·T, C) d(norm 2 output) through the routed experts and the router (backward) */
    void *x_h;       /* FP8 recipes: (R, Fe) the experts' activation output before its cast (forward) */
    /* latent attention's working rows (exec/model/model_mla.c): forward kv_down's output and an up-projection's;
     * backward d(kv_down output), d(an up-projection's output or a down-projection's input) and two latents' */
    /* TP: B·Ts the sequence shard's tokens, where the down-projections and the latents' norms run */
    void *m_kvd, *m_up;         /* (B·Ts, kv_lora + qk_rope), (B·T, max(H·D, H·(qk_nope + Dv))) */
    void *d_kvd, *d_up;         /* (B·Ts, kv_lora + qk_rope), max((B·T, max(H·D, H·(qk_nope + Dv))), (B·Ts, C)) */
    void *d_lat, *d_lat2;       /* (B·Ts, max(q_lora, kv_lora)) each */
    MtpActs mtp[MODEL_MTP_MAX]; /* multi-token prediction: depth d's (d < m->mtp; exec/model/model_mtp.h) */
    float *pp_xsinv;            /* PP, FP8: (slots, L, LIN_COUNT) the scale_inv each in-flight micro-batch's saved FP8
                         inputs were cast with (exec/model/model_pp.c) */
    float *pp_xesc;             /* PP, FP8 experts: (slots, MoE layers, n, E/ep) each expert's FC1 and FC2 saved input
                          scale_inv and (ep 1, n 3) the scale FC2's input was cast with, for the backward's
                          recomputed expert outputs (exec/model/model_pp.c model_pp_expert_scales); at pp 1,
                          ep 1 under delayed scaling (1, MoE layers, 1, E) that scale alone */
} ModelActs;

/* Phases of the step whose working buffers share memory (arena overlay). */
enum { MODEL_PHASE_FWD = 1, MODEL_PHASE_HEAD = 2, MODEL_PHASE_BLOCKS = 3, MODEL_PHASE_FINISH = 4 };

/* Scaling state of the FP8 GEMMs: the forward bank (inputs X and weights W of
 * every FP8 linear tensor, recipe.gemm_fwd) and the backward bank (output
 * gradients dY, recipe.gemm_bwd), one record set per tensor as the plan counts
 * them (planner/plan_moe_mem.c: a grouped GEMM's experts one each, the router
 * none). Block l's tensors are numbered from t0(l) = the tensors of the blocks
 * before it: its linears in execution order (model_block_linears: QKV 0, proj 1,
 * then FC1 2 and FC2 3 where the block has a dense or shared FFN; latent attention
 * q_down, q_up, kv_down, kv_up in QKV's place), then on a MoE block the routed
 * experts (model_slot_expert). */
typedef struct {
    ScalingBank fwd, bwd;
} ModelScaling;

/* Training hyper-parameters. */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    uint32_t warmup; /* linear warm-up steps (0 = none) */
    float init_std;  /* N(0, init_std) for matrices; residual projections ÷ √(2L) */
    uint64_t seed;
} ModelHyper;

/* Defaults: lr 1e-3, betas 0.9/0.95, eps 1e-8, wd 0.1 (matrices), no warm-up,
 * init std 0.02, seed 1. */
ModelHyper model_hyper_default(void);

/* The rotary embedding's base: models.csv has no column for it; 10000 is
 * RoFormer's, LLaMA 1/2's and Megatron's default (LLaMA 3 trains with 500000). */
#define MODEL_ROPE_BASE 10000.0
/* Norm epsilon (GPT-2's LayerNorm and LLaMA's RMSNorm both use 1e-5). */
#define MODEL_NORM_EPS 1e-5f
/* Mixture of experts. models.csv has no column for the balance terms: softmax routers train with the
 * Switch Transformer's auxiliary loss at its coefficient 1e-2 (Fedus et al. 2021, section 2.2); sigmoid
 * routers with DeepSeek-V3's aux-loss-free bias, moved by 1e-3 per step towards the mean load (the
 * report's bias update speed, section 4.2: 0.001). Combine weights are the chosen scores normalised to
 * sum 1, with no extra scale. */
#define MODEL_MOE_AUX_COEFF  1e-2f
#define MODEL_MOE_BIAS_SPEED 1e-3f

/* Host copies of one scaling bank's state for the last micro-batch (scaling trace). */
enum { MODEL_CLASSES = 3 };    /* parameter classes of the sharded states (model_internal.h) */
enum { MODEL_GROUPS_MAX = 8 }; /* sub-communicators a rank may own: TP, DP, PP, amax, embedding, EP, EDP, ETP */

typedef struct {
    float *amax;       /* (n) amax each tensor's cast observed */
    float *scale_used; /* (n) the scale that cast used */
    float *scale_next; /* (n) the scale the next micro-batch will use (= scale_used for current scaling) */
} BankTrace;

/* PHASE_FWD, PHASE_BWD, PHASE_OPT, PHASE_COMM: check/observed.h (the parts of a step a run observes) */

/* The parts of a MoE layer a step times (model_moe_lap; check/observed.h OBS_MOE_* in this order): the router (its
 * GEMMs, score and top-k, the counts, its backward with the auxiliary loss), the permute and unpermute (forward
 * and backward, the routing-weight gradient), the experts' grouped GEMMs (fprop, dgrad, wgrad, the recomputed
 * output), the experts' activation with their FP8 input and gradient casts, expert parallelism's exchange (the
 * all-to-alls with their local row sorting), and the rest (the FP8 expert weights' casts). */
typedef enum {
    MOE_PART_ROUTER = 0,
    MOE_PART_PERMUTE,
    MOE_PART_XGEMM,
    MOE_PART_ACT,
    MOE_PART_EP,
    MOE_PART_OTHER,
    MOE_PARTS
} MoePart;

typedef struct Model {
    ModelSpec spec;        /* the architecture as run (the plan's model; layers = this stage's) */
    Recipe recipe;         /* the plan's recipe row */
    uint32_t batch, seq;   /* B (micro-batch), T */
    uint32_t microbatches; /* per step: global batch / (micro-batch × DP), from the plan */
    uint32_t dp;           /* data-parallel ranks (comm->size = dp · tp · pp): this rank runs micro-batches
                              dp_rank·microbatches .. of the global batch */
    uint32_t pp, stage;    /* pipeline stages and this rank's (model_groups.c): spec.layers are the
                              stage's, global layers layer0 ..; the first stage embeds, the last has the
                              final norm, head and loss (a tied head: its own copy of the embedding) */
    uint32_t layer0, layers_total;
    uint32_t slots, slot;  /* 1F1B: micro-batches in flight on this stage (act.layer holds slots × layers)
                              and the one being run */
    uint32_t tp;           /* tensor-parallel ranks: spec holds this rank's heads, KV heads and FFN width
                              (the whole / tp); sequence parallelism keeps B·T/tp tokens (tp_rank·B·T/tp
                              ..) in the norm/residual regions (model_tp.c) */
    uint64_t vocab_padded; /* Vp (the plan's padding) */
    Dtype act_dtype;       /* exec_act_dtype(&recipe) */
    ModelHyper hyper;
    Backend *bk;
    Comm *comm;
    /* Rank groups (exec/model/model_groups.c): rank = tp_rank + tp·(dp_rank + dp·stage) (Megatron's order:
     * TP fastest, pipeline stages slowest). tpc: the TP group (same dp_rank and stage), dpc: the DP group
     * (same tp_rank and stage), ppc: the pipeline (same tp_rank and dp_rank; its rank is the stage),
     * amaxc: the stage's TP x DP ranks (the amax group of recipes reducing over "all"), embc: the first
     * and last stage of the pipeline (a middle stage: itself alone). The world (comm) where a group is
     * every rank; sub-communicators (owned[]) otherwise. */
    uint32_t tp_rank, dp_rank;
    Comm *tpc, *dpc, *ppc, *amaxc, *embc;
    /* Expert parallelism (exec/model/model_moe_ep.c), the planner's "MoE parallel folding" at tp 1: the
     * stage's dp ranks regrouped as ep x edp (ep fastest), ep_rank = dp_rank mod ep. epc: the EP group
     * (ep consecutive ranks, the same ⌊dp_rank / ep⌋), which exchanges tokens; edpc: the expert-data-
     * parallel group (the same ep_rank, ep apart), which all-reduces the experts' gradients. This rank
     * holds experts ep_rank·E/ep .. (ep_rank + 1)·E/ep − 1. ep 1: epc is a one-rank group, edpc = dpc. */
    uint32_t ep, ep_rank;
    Comm *epc, *edpc;
    /* Expert tensor parallelism (--etp; exec/model/model_moe_etp.c): each routed expert's FFN split over the etp
     * ranks of an ETP group (FC1 column-parallel, FC2 row-parallel: expert_ffn / etp columns a rank), the expert
     * grid etp x ep x edp over the stage's tp x dp ranks, etp fastest (Megatron-Core's MoE folding): etp_rank =
     * within mod etp, ep_rank = ⌊within / etp⌋ mod ep. etpc gathers the dispatched rows before the experts and
     * reduce-scatters their partial outputs after; EP peers are etp apart. etp 1: etpc is a one-rank group. */
    uint32_t etp, etp_rank;
    Comm *etpc;
    Comm *owned[MODEL_GROUPS_MAX];
    /* The distributed optimizer / ZeRO-1 (the plan's sharding; exec/model/model_shard.c), as Megatron-Core's
     * distributed optimizer groups parameters: the dense ones over the DP group, the routed experts' over
     * the expert-data-parallel group. shard_ways: the widest class_ways (dp, or edp where only the experts
     * shard, e.g. tp 2 at dp 1), 1 when nothing is sharded. Per class
     * (MODEL_CLASS_GEMM: block linear weights but the routed experts', MODEL_CLASS_OTHER: the rest but the
     * experts', MODEL_CLASS_EXPERT: the routed experts' weights, each in parameter-table order) the elements
     * E, the ranks N its states are spread over (class_ways: dp, or edp = tp·dp / ep for the experts; 1 when
     * that group's gradients are all-reduced instead) and this rank's place among them (class_rank), the
     * shard S = ceil(E / N) every rank holds (place r owns flat elements [r·S, min((r+1)·S, E)); the last
     * places' tails are padding; S = 0 when N is 1), the sharded states (bit 1u << StateId) and this
     * rank's shard buffers. */
    uint32_t shard_ways;
    uint64_t class_elems[MODEL_CLASSES], shard_elems[MODEL_CLASSES];
    uint32_t class_ways[MODEL_CLASSES], class_rank[MODEL_CLASSES];
    unsigned shard_mask[MODEL_CLASSES];
    void *shard_buf[MODEL_CLASSES][STATE_COUNT_];
    /* A sigmoid router's selection bias (DeepSeek-V3's auxiliary-loss-free balancing), as Megatron-Core keeps
     * expert_bias: an FP32 buffer, not a parameter (no master, gradient or Adam state, in no gradient
     * collective), whole on every rank: (MoE layers of this stage, E), zeros at the start, every rank moving
     * it by the same rule from the same summed counts after each step (model_moe_after_step). In the arena
     * (the plan's router_bias term; checkpoints keep it); NULL for other routers. */
    float *expert_bias;
    Arena arena;
    ArenaSpecs specs;   /* every tensor with its term and offset (checkpoints walk it) */
    ModelParam *params; /* nparams */
    /* the gradient all-reduce's buckets (model_grad_bucket.c), made at the first step: spans (GradSpan, by
     * group, dtype, address), bucket b's first at grad_first[b], grad_first[grad_buckets] their count */
    struct GradSpan *grad_spans;
    uint32_t *grad_first, grad_buckets;
    uint32_t nparams;
    ModelActs act;
    ModelScaling sc;
    uint32_t step;        /* optimizer steps taken */
    uint32_t mb;          /* the micro-batch being run (0 .. microbatches − 1) */
    float *host_losses;   /* (B·T) host copy */
    AdamWDesc *opt_queue; /* (nparams) the step's AdamW updates, sent as one adamw_multi: allocated with the model,
                             so a step allocates nothing */
    float *step_losses;   /* (dp · microbatches · B·T) the step's token losses, every rank's in global order */
    /* Last step: forward, backward, optimizer, communication (seconds, summed
     * over the micro-batches). Device time between timestamps in the stream
     * when the backend has mark/elapsed (phase_device = 1; host gaps between
     * phases excluded), else the host clock around each synchronized phase. */
    double phase_s[4];
    int phase_device;
    /* Called by model_step with −1 before the step's work is issued and with
     * each phase (PHASE_*) once that phase's work has finished on the device
     * (forward and backward once per micro-batch); NULL: none. For
     * measurements between phases (device memory in use). */
    void (*on_phase)(void *ctx, int phase);
    void *on_phase_ctx;
    int trace; /* model_trace_enable: fill tr_fwd / tr_bwd every micro-batch */
    /* Mixture of experts: the last step's auxiliary balance loss (softmax routers: summed over the MoE
     * layers, mean over micro-batches; not part of the reported loss) and the tokens each expert of each
     * MoE layer received over the step (moe_counts: (MoE layers, E), host memory). */
    double moe_aux;
    /* The MoE layers' parts of the last step (MoePart), host clock, summed over its MoE layers and micro-batches:
     * filled on a backend without device timestamps (the CPU backend, whose operations have finished when they
     * return; moe_timed), else 0. moe_lap_s, moe_mark: the step's running sums and the last lap's clock. */
    double moe_part_s[MOE_PARTS], moe_lap_s[MOE_PARTS], moe_mark;
    int moe_timed;
    float moe_aux_coeff; /* MODEL_MOE_AUX_COEFF (model_create); 0: no auxiliary loss (finite-difference tests) */
    uint64_t *moe_counts;
    float *moe_scratch; /* host memory the routing's bookkeeping reuses (a step allocates nothing): (MoE layers,
                           E) floats, or the DP ranks' gathered counts, (dp, MoE layers, E) uint64 */
    uint32_t moe_layers;
    /* With pipeline stages: the model's MoE layers (every stage's; without stages moe_layers, the MTP block's
     * included) and the index among them of this stage's first (0 without stages). */
    uint32_t moe_layers_all, moe_first;
    /* Expert parallelism's working state (model_moe_ep.c; NULL at ep 1), and what this rank routed since
     * the model was made: ep_rows (E) the token copies it sent to each expert, summed over MoE layers,
     * micro-batches and steps (the measured routing the planner's plan_ep_routed takes); ep_calls the
     * dispatches (MoE layers x micro-batches x steps). ep_fault (a test hook): this rank announces one row
     * more than it sends to its next EP peer, so the peers' counts disagree. */
    struct MoeEp *moe_ep;
    uint64_t *ep_rows, ep_calls;
    double ep_counts_bytes[2]; /* what the EP all-to-alls moved outside the plan's rows (the counts): payload, sent */
    /* A host profile with the all-to-all's per-message fits (NULL: none; run_session sets it from the plan the
     * run is held to): each dispatch and combine call planned from its own messages (plan_a2a_peers_s), summed
     * in ep_msg_s over ep_msg_calls calls (EPR_* order: ep_msg_s[1] the forward dispatches) */
    const GpuSpec *a2a_fits;
    double ep_msg_s[5];
    uint64_t ep_msg_calls[5];
    uint64_t ep_buffer_bytes; /* the EP buffers allocated outside the arena (ep·R rows on the experts' side) */
    /* The routing log (run --routing-log; NULL: none): per step taken, this rank's token copies per expert of
     * each MoE layer (route_cap steps of moe_layers_all x E, route_steps filled; this stage's layers at
     * moe_first, the other stages' rows 0), before the DP ranks' sum. */
    uint64_t *route_log;
    uint32_t route_cap, route_steps;
    int ep_fault;
    /* etp_fault (a test hook; model_moe_etp.c): 1 or 2, this rank puts a NaN (1) or +Inf (2) into the first
     * element of every forward ETP reduce-scatter it takes part in, as a diverging partial sum would */
    int etp_fault;
    uint64_t *etp_seg;   /* (etp) the elements of each ETP rank's segment of a gather or reduce-scatter */
    int failed_together; /* a step failed on every rank at one agreed point (model_moe_ep.c): no rank waits in a
                            collective, so they can end without MPI_Abort (and rank 0 removes its files) */
    BankTrace tr_fwd, tr_bwd;
    /* Multi-token prediction (exec/model/model_mtp.c): depths run (their blocks the last mtp of spec.layers, the
     * main model's spec.layers − mtp before them), the weight of their summed losses in the objective
     * (MODEL_MTP_WEIGHT, each depth's lambda / depths) and the last step's mean loss of each depth over the global
     * batch (the DP ranks' token losses gathered and summed in global token order, as the main loss is; the
     * reported loss is the main model's). mtp_model: the model's depths; with PP only the last stage runs them
     * (mtp 0 elsewhere: model_pp.c) */
    uint32_t mtp, mtp_model;
    float mtp_weight;
    double mtp_loss[MODEL_MTP_MAX];
    float *step_mtp_losses; /* (depths, dp · microbatches · B·T) the step's MTP token losses, every rank's in global
                               order (the masked positions 0) */
    int32_t *mtp_host;      /* (2, B·T) host memory: one depth's shifted tokens and targets of a micro-batch */
} Model;

/* The backend timestamps model_step records (ids MODEL_MARK_FIRST ..
 * BACKEND_MARKS − 1: a begin and an end per phase, in the order the phases
 * run — forward 0, backward 1 (once per micro-batch), communication 2,
 * optimizer 3: begin FIRST + 2k, end FIRST + 2k + 1); other users of mark()
 * take lower ids. */
enum { MODEL_MARK_FIRST = BACKEND_MARKS - 8 };

/* ST_OK when the executor builds the plan's model and recipe; ST_USAGE or
 * ST_UNAVAILABLE naming the field otherwise (a layout with CP > 1, interleaved
 * pipeline stages (vpp > 1), a stage without layers, TP without sequence parallelism,
 * sharding other than zero1 / dist-opt or of states the executor cannot shard
 * (model_shard.c), an odd head_dim with rotary positions, a vocabulary beyond
 * int32 token ids). */
Status model_check(const Plan *p, Err *e);

/* The tensor list of a plan's configuration (sizes first): appends every
 * tensor's spec to `specs` (see arena.h). Pure; used by model_create and by
 * tests. */
Status model_layout(const Plan *p, ArenaSpecs *specs, Err *e);

/* Build the model of a plan (exec/measure/plan_link.h makes the executor's
 * plan): validate, carve the arena with the plan's bytes per term, initialize
 * weights from hyper.seed (identically for every recipe). h may be NULL
 * (defaults). */
Status model_create(const Plan *p, const ModelHyper *h, Backend *bk, Comm *comm, Model **out, Err *e);
void model_destroy(Model *m);

/* Tokens one step consumes on this rank: microbatches · B · T (the global
 * batch is dp times as many). */
uint64_t model_step_tokens(const Model *m);

/* One training step on host tokens inputs/targets (model_step_tokens each,
 * micro-batch after micro-batch): forward and backward of every micro-batch
 * (gradients accumulated in the main gradients, the loss a mean over the
 * whole batch), gradient all-reduce, optimizer. Scaling updates after each
 * micro-batch's forward and backward (TE's order). *loss = mean loss of the
 * step's tokens before the update. */
Status model_step(Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Forward only (no update, scaling state untouched except amax row 0 for
 * delayed scaling, which is zeroed again): the mean loss over the step's
 * micro-batches. For gradient checks. */
Status model_loss(Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Forward + backward of every micro-batch without the all-reduce, scaling
 * update or optimizer: leaves the accumulated gradients in the main-gradient
 * tensors. For gradient checks. */
Status model_grads(Model *m, const int32_t *inputs, const int32_t *targets, float *loss, Err *e);

/* Write the initial values from hyper.seed, as model_create does after
 * zeroing the arena: working weights, master copies and their scaling
 * records, and scale = scale_inv = 1 for every FP8 tensor (gradients, moments
 * and amax histories are left as they are). The same seed gives the same
 * weights for every recipe and backend. */
Status model_init_weights(Model *m, Err *e);

/* Record every FP8 tensor's amax and scales (FP8 recipes; a no-op otherwise):
 * after model_step, tr_fwd / tr_bwd hold the last micro-batch's values. */
Status model_trace_enable(Model *m, Err *e);

/* The rotary table (seq, head_dim/2, 2): cos and sin of t·base^(−2i/head_dim),
 * computed in double and rounded once, so every backend rotates by the same
 * floats. */
void model_rope_table(uint32_t seq, uint32_t head_dim, double base, float *cos_sin);

/* When spec (one of m->specs) is this rank's shard of a sharded state: 1, and *whole the state's
 * bytes over the whole class (its E elements; exec/model/model_shard.c), *lo the byte offset of
 * this rank's shard in it; 0 for every other tensor. For checkpoints: they hold the whole state. */
int model_shard_spec(const Model *m, const ArenaSpec *spec, uint64_t *whole, uint64_t *lo);
/* The group whose ranks hold the shards of such a spec: the routed experts' EDP group (edpc), the DP group
 * (dpc) for the others' (model_shard_spec 1; NULL for any other spec). */
Comm *model_shard_group(const Model *m, const ArenaSpec *spec);

/* Scaling-bank slots (ModelScaling) of block l's linear k, which the block
 * must have: fwd 2·(t0 + k) + {0: X, 1: W}, bwd t0 + k. */
uint32_t model_slot_x(const Model *m, uint32_t layer, LinearKind k);
uint32_t model_slot_w(const Model *m, uint32_t layer, LinearKind k);
uint32_t model_slot_dy(const Model *m, uint32_t layer, LinearKind k);
/* 1 when block l has linear k (FC1 and FC2: a dense FFN or shared experts). */
int model_has_linear(const Model *m, uint32_t layer, LinearKind k);
/* The first of E consecutive slots of MoE block l's routed experts (expert g at
 * the returned slot + g): fc2 0 for FC1, 1 for FC2; op 0 X, 1 W (forward bank),
 * 2 dY (backward bank). After the block's linears: fwd 2·(t0 + n) + (2·fc2 +
 * {0 X, 1 W})·E, bwd t0 + n + fc2·E, n the block's linears. */
uint32_t model_slot_expert(const Model *m, uint32_t layer, int fc2, int op);
/* FP8 linear tensors of the stage (the backward bank's n; the forward's is twice that). */
uint32_t model_fp8_tensors(const Model *m);

/* Parameter count (elements over all parameter tensors). */
uint64_t model_weight_count(const Model *m);

#ifdef __cplusplus
}
#endif
#endif
