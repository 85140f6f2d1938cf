/* planner/plan_terms.h — the rows of a plan: its memory terms (MEM_TERMS), collectives (COLLECTIVES) and
 * time breakdown, and the link arithmetic the collectives are timed by. Included by planner/plan.h.
 *
 * Persistent terms (the executor's arena must match these byte for byte):
 *   MT_WEIGHT_GEMM   elements = sum over this stage's layers of the four linear
 *                    weights per TP rank: QKV (heads+2*kv_heads)*head_dim/tp x hidden,
 *                    proj hidden x heads*head_dim/tp, FC1 k*ffn/tp x hidden (k = 2 for
 *                    SwiGLU, else 1), FC2 hidden x ffn/tp; dtype recipe.gemm.dt[STATE_WEIGHT].
 *   MT_WEIGHT_OTHER  token embedding Vp/tp x hidden (stage 0), learned position table
 *                    seq_len x hidden (stage 0, replicated over TP), 1 or 2 norms per layer
 *                    (2*hidden for LayerNorm, hidden for RMSNorm each), linear biases
 *                    (QKV and FC1 biases /tp, proj and FC2 biases whole), the final norm
 *                    (last stage), the LM head Vp/tp x hidden on the last stage when untied,
 *                    or when tied and pp > 1 (Megatron's copy of the embedding there);
 *                    dtype recipe.other.dt[STATE_WEIGHT].
 *   MT_FP8_ROWWISE / MT_FP8_COLWISE   one byte per linear-weight element each, when the
 *                    recipe caches that copy. Only QKV, proj, FC1, FC2 get FP8 copies —
 *                    never embeddings, the LM head, norms or biases.
 *   MT_MASTER_*, MT_GRAD_*, MT_OPTIM_M_*, MT_OPTIM_V_*   the same element counts in
 *                    the recipe's dtypes, divided as above when sharded.
 *   MT_SCALE_GEMM    per-tensor scaling records of the FP8 GEMM operands, per linear
 *                    weight: one for x (the GEMM input) and one for dy (the output
 *                    gradient) when act_gran is per-tensor, one for w when weight_gran is
 *                    per-tensor. A record is fp32 scale, fp32 scale_inv and an fp32 amax
 *                    history of amax_history entries (delayed scaling) or 1 entry (current
 *                    scaling): (2 + H) * 4 bytes.
 *   MT_SCALE_BLOCK   block or channel scales of every FP8-stored weight tensor (working
 *                    weight in FP8, row-wise copy, transposed copy) when weight_gran is
 *                    finer than per-tensor, counted with fp8/granularity.h on the stored
 *                    shape ([out, in] for the working weight and row-wise copy, [in, out]
 *                    for the transposed copy).
 *   MT_SCALE_STATE   one record (fp32 scale, fp32 scale_inv, fp32 amax) = 12 bytes per
 *                    linear weight for each state in recipe.gemm.scaled_mask that is kept
 *                    (e.g. FP8-LM's FP16 master, FP8 gradient and FP8 first moment);
 *                    replicated, not sharded.
 *   MT_ROUTER_BIAS   a sigmoid router's per-expert selection bias (DeepSeek-V3's auxiliary-
 *                    loss-free balancing): 4 bytes (FP32) x experts per MoE layer the GPU holds
 *                    (an MTP depth's MoE layer included), whole on every rank, never sharded. A
 *                    buffer, not a parameter: no master, gradient or Adam state, not in any
 *                    gradient collective (Megatron-Core core_v0.15.0 moe/router.py registers
 *                    expert_bias as an FP32 buffer; finalize_model_grads.py moves it from the
 *                    step's token counts). 0 for other models.
 * Activations, workspace and overheads are predictions the executor measures
 * and compares within a tolerance. */
#ifndef FP8PLAN_PLANNER_PLAN_TERMS_H
#define FP8PLAN_PLANNER_PLAN_TERMS_H

#include <stdint.h>

#include "fp8/dtype.h"
#include "planner/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- memory terms ------------------------------------------------------------- */

typedef enum {
    MC_STATE = 0, /* weights, master, gradients, optimizer moments */
    MC_FP8_COPY,  /* cached FP8 weight copies */
    MC_SCALE,     /* scales, scale_inv, amax histories */
    MC_ACTIVATION,
    MC_OVERHEAD,
    MC_COUNT_
} MemCategory;

/* Every memory term, once: X(id, stable snake_case name, category, persistent: lives across steps). The
 * enum, mem_term_name, mem_term_category and mem_term_persistent come from it, and the executor names its
 * arena by these names: a new term is a row here, its formula (plan_mem.c, plan_moe_mem.c) and, where the
 * executor holds it, its arena tag. The order is the reports' order. */
#define MEM_TERMS(X)                                                                                    \
    X(MT_WEIGHT_GEMM, "weight_gemm", MC_STATE, 1)                                                       \
    X(MT_WEIGHT_OTHER, "weight_other", MC_STATE, 1)                                                     \
    X(MT_FP8_ROWWISE, "fp8_rowwise", MC_FP8_COPY, 1)                                                    \
    X(MT_FP8_COLWISE, "fp8_colwise", MC_FP8_COPY, 1)                                                    \
    X(MT_MASTER_GEMM, "master_gemm", MC_STATE, 1)                                                       \
    X(MT_MASTER_OTHER, "master_other", MC_STATE, 1)                                                     \
    X(MT_GRAD_GEMM, "grad_gemm", MC_STATE, 1)                                                           \
    X(MT_GRAD_OTHER, "grad_other", MC_STATE, 1)                                                         \
    X(MT_OPTIM_M_GEMM, "adam_m_gemm", MC_STATE, 1)                                                      \
    X(MT_OPTIM_M_OTHER, "adam_m_other", MC_STATE, 1)                                                    \
    X(MT_OPTIM_V_GEMM, "adam_v_gemm", MC_STATE, 1)                                                      \
    X(MT_OPTIM_V_OTHER, "adam_v_other", MC_STATE, 1)                                                    \
    X(MT_SCALE_GEMM, "scale_gemm", MC_SCALE, 1)                                                         \
    X(MT_SCALE_BLOCK, "scale_block", MC_SCALE, 1)                                                       \
    X(MT_SCALE_STATE, "scale_state", MC_SCALE, 1)                                                       \
    /* high-precision tensors the layers save for backward */                                           \
    X(MT_ACT_LAYER_HP, "act_layer_hp", MC_ACTIVATION, 0)                                                \
    /* FP8 GEMM inputs the layers save (+ their block scales) */                                        \
    X(MT_ACT_LAYER_FP8, "act_layer_fp8", MC_ACTIVATION, 0)                                              \
    /* attention probabilities (+ dropout) when materialized; softmax stats with flash */               \
    X(MT_ACT_ATTN, "act_attention", MC_ACTIVATION, 0)                                                   \
    /* hidden/embedding dropout masks (1 B each) */                                                     \
    X(MT_ACT_MASK, "act_dropout_mask", MC_ACTIVATION, 0)                                                \
    /* final norm input/output and the FP32 softmax of the logits (last stage) */                       \
    X(MT_ACT_OUTPUT, "act_output", MC_ACTIVATION, 0)                                                    \
    /* peak working set: logits temporaries, backward temporaries (with materialized attention's fp32 \
     * d(probabilities) and an FP8 weight gradient's fp32 staging), recompute */ \
    X(MT_TRANSIENT, "transient", MC_ACTIVATION, 0)                                                      \
    /* NCCL buffers, nccl_comm_bytes per communicator */                                                \
    X(MT_COMM_BUFFER, "comm_buffers", MC_OVERHEAD, 1)                                                   \
    /* cuBLASLt workspace */                                                                            \
    X(MT_WORKSPACE, "gemm_workspace", MC_OVERHEAD, 1)                                                   \
    /* CUDA context, module images, library handles */                                                  \
    X(MT_CUDA_CONTEXT, "cuda_context", MC_OVERHEAD, 1)                                                  \
    /* allocator slack: frag_frac of the allocator-managed terms */                                     \
    X(MT_FRAGMENTATION, "fragmentation", MC_OVERHEAD, 0)                                                \
    /* mixture of experts (0 for dense models): the routed experts' weights and states, held by ep x \
     * etp ranks and sharded over the expert-data-parallel group; their FP8 copies; the MoE layers' \
     * routing activations */  \
    X(MT_WEIGHT_EXPERT, "weight_expert", MC_STATE, 1)                                                   \
    /* row-wise + transposed FP8 copies of the expert weights */                                        \
    X(MT_FP8_EXPERT, "fp8_expert", MC_FP8_COPY, 1)                                                      \
    X(MT_MASTER_EXPERT, "master_expert", MC_STATE, 1)                                                   \
    X(MT_GRAD_EXPERT, "grad_expert", MC_STATE, 1)                                                       \
    X(MT_OPTIM_M_EXPERT, "adam_m_expert", MC_STATE, 1)                                                  \
    X(MT_OPTIM_V_EXPERT, "adam_v_expert", MC_STATE, 1)                                                  \
    /* router scores, dispatched expert inputs, expert FC1/FC2 activations, combine inputs, maps */     \
    X(MT_ACT_MOE, "act_moe", MC_ACTIVATION, 0)                                                          \
    /* a sigmoid router's expert bias: an FP32 buffer (E per MoE layer) whole on every rank, without \
     * gradient or optimizer state (Megatron-Core's expert_bias) */  \
    X(MT_ROUTER_BIAS, "router_bias", MC_STATE, 1)

typedef enum {
#define MT_ENUM_(id, name, cat, persistent) id,
    MEM_TERMS(MT_ENUM_)
#undef MT_ENUM_
        MT_COUNT_
} MemTermId;

/* A term's row of MEM_TERMS, without a Plan: its name ("?" past the list), its category, whether it lives
 * across steps. */
const char *mem_term_name(MemTermId id);
MemCategory mem_term_category(MemTermId id);
int mem_term_persistent(MemTermId id);

/* A term's figures for one stage. Its labels (name, category, persistence) are its MEM_TERMS row's, read with the
 * functions above from its index: a Plan's mem[id] (and a stage's) is term id, so no plan copies them. */
typedef struct {
    Dtype dtype;       /* DT_NONE when the term holds no tensor or mixed dtypes */
    uint32_t shards;   /* 1 = whole on every GPU; n = this GPU holds 1/n (ceil) */
    uint64_t elements; /* tensor elements (0 for overheads) */
    uint64_t bytes;
} MemTerm;

/* ---- collectives -------------------------------------------------------------- */

typedef enum {
    GROUP_TP = 0,
    GROUP_CP,
    GROUP_DP,
    GROUP_PP,
    GROUP_EMB,
    GROUP_AMAX,
    GROUP_EP,  /* expert parallel: ep ranks, etp apart */
    GROUP_ETP, /* expert tensor parallel: etp consecutive ranks */
    GROUP_EDP, /* expert data parallel: edp ranks, ep * etp apart */
    GROUP_COUNT_
} CommGroup;
/* CommOp: planner/spec.h (a host profile's fits name it). */

/* Every collective the plan counts, once: X(id, stable name, group, op). The enum and coll_name, coll_group and
 * coll_op (plan_comm.c) come from it; the bytes, calls and time are the planner's. */
#define COLLECTIVES(X)                                                                                         \
    /* TP without SP: all-reduce after proj and FC2 (forward) */                                               \
    X(CO_TP_AR_FWD, "tp_allreduce_fwd", GROUP_TP, OP_ALL_REDUCE)                                               \
    /* TP without SP: all-reduce of the QKV/FC1 input gradients */                                             \
    X(CO_TP_AR_BWD, "tp_allreduce_bwd", GROUP_TP, OP_ALL_REDUCE)                                               \
    /* SP: all-gather before QKV and FC1 (forward) */                                                          \
    X(CO_TP_AG_FWD, "tp_allgather_fwd", GROUP_TP, OP_ALL_GATHER)                                               \
    /* SP: reduce-scatter after proj and FC2 (forward) */                                                      \
    X(CO_TP_RS_FWD, "tp_reducescatter_fwd", GROUP_TP, OP_REDUCE_SCATTER)                                       \
    /* SP: all-gather of proj/FC2 output gradients + re-gather of saved inputs */                              \
    X(CO_TP_AG_BWD, "tp_allgather_bwd", GROUP_TP, OP_ALL_GATHER)                                               \
    /* SP: reduce-scatter of QKV/FC1 input gradients */                                                        \
    X(CO_TP_RS_BWD, "tp_reducescatter_bwd", GROUP_TP, OP_REDUCE_SCATTER)                                       \
    /* TP outside the layers (planner/plan_comm_vocab.c), per micro-batch unless said. \
     * Without SP: the vocabulary-parallel embedding's partial sums (forward) and the LM head's input gradient \
     * (backward) all-reduced; with SP and learned positions the embedding's (Megatron adds the positions to \
     * the whole, then splits it to the sequence shards): */                       \
    X(CO_TP_VOCAB_AR, "tp_vocab_allreduce", GROUP_TP, OP_ALL_REDUCE)                                           \
    /* SP: the LM head's input (forward, and again for its weight gradient) and the embedding's output \
     * gradient (backward) all-gathered: */       \
    X(CO_TP_VOCAB_AG, "tp_vocab_allgather", GROUP_TP, OP_ALL_GATHER)                                           \
    /* SP: the embedding's partial sums to the sequence shards (forward, without learned positions) and the \
     * LM head's input gradient (backward) reduce-scattered: */  \
    X(CO_TP_VOCAB_RS, "tp_vocab_reducescatter", GROUP_TP, OP_REDUCE_SCATTER)                                   \
    /* vocabulary-parallel cross-entropy: max logit (MAX), target logit and sum of exponentials (SUM), FP32 \
     * [tokens] each: 3 calls: */  \
    X(CO_TP_LOSS_AR, "tp_loss_allreduce", GROUP_TP, OP_ALL_REDUCE)                                             \
    /* once per step, one coalesced all-reduce of the gradients of the parameters every TP rank holds whole \
     * (with SP norms and row-parallel biases, MoE routers; q/k norms always): */  \
    X(CO_TP_NORM_GRAD_AR, "tp_norm_grad_allreduce", GROUP_TP, OP_ALL_REDUCE)                                   \
    /* CP: K,V exchange (forward, again in backward) and dK,dV reduce */                                       \
    X(CO_CP_KV, "cp_kv_exchange", GROUP_CP, OP_ALL_GATHER)                                                     \
    /* PP: activations forward, gradients backward, per micro-batch and chunk */                               \
    X(CO_PP_P2P, "pp_send_recv", GROUP_PP, OP_SEND_RECV)                                                       \
    /* DP: gradient all-reduce (no sharded gradients) */                                                       \
    X(CO_DP_GRAD_AR, "dp_grad_allreduce", GROUP_DP, OP_ALL_REDUCE)                                             \
    /* DP: gradient reduce-scatter (sharded optimizer) */                                                      \
    X(CO_DP_GRAD_RS, "dp_grad_reducescatter", GROUP_DP, OP_REDUCE_SCATTER)                                     \
    /* DP: parameter all-gather after the sharded step (twice per step at ZeRO-3) */                           \
    X(CO_DP_PARAM_AG, "dp_param_allgather", GROUP_DP, OP_ALL_GATHER)                                           \
    /* tied embedding gradient all-reduce between first and last stage */                                      \
    X(CO_EMB_GRAD_AR, "emb_grad_allreduce", GROUP_EMB, OP_ALL_REDUCE)                                          \
    /* amax reduction per micro-batch (forward and backward) */                                                \
    X(CO_AMAX_AR, "amax_allreduce", GROUP_AMAX, OP_ALL_REDUCE)                                                 \
    /* mixture of experts, per MoE layer and micro-batch (plan_moe_comm.c) */                                  \
    /* tokens to their experts (the recipe's ep_dispatch_comm: FP8 + scales for DeepSeek-V3) */                \
    X(CO_EP_DISPATCH_FWD, "ep_dispatch_fwd", GROUP_EP, OP_ALL_TO_ALL)                                          \
    /* expert outputs back (ep_combine_comm) */                                                                \
    X(CO_EP_COMBINE_FWD, "ep_combine_fwd", GROUP_EP, OP_ALL_TO_ALL)                                            \
    /* output gradients to the experts (dispatch dtype) */                                                     \
    X(CO_EP_DISPATCH_BWD, "ep_dispatch_bwd", GROUP_EP, OP_ALL_TO_ALL)                                          \
    /* input gradients back (combine dtype) */                                                                 \
    X(CO_EP_COMBINE_BWD, "ep_combine_bwd", GROUP_EP, OP_ALL_TO_ALL)                                            \
    /* expert TP: the dispatched rows gathered over etp (forward; output gradients backward) */                \
    X(CO_ETP_AG, "etp_allgather", GROUP_ETP, OP_ALL_GATHER)                                                    \
    /* expert TP: expert outputs reduce-scattered over etp (forward; input gradients backward) */              \
    X(CO_ETP_RS, "etp_reducescatter", GROUP_ETP, OP_REDUCE_SCATTER)                                            \
    /* expert gradients all-reduced over the expert-data-parallel group */                                     \
    X(CO_EDP_GRAD_AR, "edp_grad_allreduce", GROUP_EDP, OP_ALL_REDUCE)                                          \
    /* expert gradients reduce-scattered (sharded optimizer) */                                                \
    X(CO_EDP_GRAD_RS, "edp_grad_reducescatter", GROUP_EDP, OP_REDUCE_SCATTER)                                  \
    /* expert parameters all-gathered after the sharded step */                                                \
    X(CO_EDP_PARAM_AG, "edp_param_allgather", GROUP_EDP, OP_ALL_GATHER)                                        \
    /* this executor's delayed scaling (fusion fp8plan, ep > 1): the local experts' amax records MAX-reduced \
     * over their EDP group and over their ETP group, per micro-batch (forward and backward banks) */ \
    X(CO_EDP_AMAX_AR, "edp_amax_allreduce", GROUP_EDP, OP_ALL_REDUCE)                                          \
    X(CO_ETP_AMAX_AR, "etp_amax_allreduce", GROUP_ETP, OP_ALL_REDUCE)                                          \
    /* the executor's token counts before each forward dispatch (E int32; host plans only) */                  \
    X(CO_EP_COUNTS, "ep_counts", GROUP_EP, OP_ALL_TO_ALL)

typedef enum {
#define CO_ENUM_(id, name, group, op) id,
    COLLECTIVES(CO_ENUM_)
#undef CO_ENUM_
        CO_COUNT_
} CollectiveId;

/* A collective's row of COLLECTIVES, without a Plan: its stable name ("?" past the list), its group and its op. */
const char *coll_name(CollectiveId id);
CommGroup coll_group(CollectiveId id);
CommOp coll_op(CollectiveId id);

/* A collective's figures. Its labels are its COLLECTIVES row's, read with the functions above from its index: a
 * Plan's coll[id] is collective id, so no plan copies them. */
typedef struct {
    Dtype dtype;            /* DT_NONE for mixed (e.g. FP8 gradients of linears + FP32 of the rest) */
    uint32_t ranks;         /* group size (0: collective not used) */
    int inter_node;         /* 1: the group spans nodes */
    uint64_t payload_bytes; /* per call, S as nccl-tests defines it (total array bytes) */
    uint64_t bus_bytes;     /* per call, bytes this GPU sends: 2(n-1)/n S (AR), (n-1)/n S (AG, RS), S (p2p);
                               all-to-all: the copies that leave the GPU (plan_moe_comm.c) */
    uint64_t calls;         /* per step */
    uint64_t step_bytes;    /* bus_bytes * calls: what this GPU sends per step */
    uint64_t step_payload;  /* 0: payload_bytes * calls; else the payload per step where calls of several sizes
                               share the row (payload_bytes their mean): plan_coll_step_payload */
    double bw;              /* bus bandwidth one call achieves, B/s: NVLink inside a node, min(NVLink,
                               ranks per node x NIC) across nodes, x eff_net (NCCL's LL protocol: less) */
    double latency_s;       /* per call: NCCL's ring latency (base + per-step hop latencies); all-to-all: one
                               grouped send/recv (base + one hop) */
    double time_s;          /* per step: calls x (latency + bus bytes / bw) */
    double exposed_s;       /* the part not hidden behind compute (the stack's overlap) */
} Collective;

/* The payload a collective's row moves per step. */
static inline uint64_t plan_coll_step_payload(const Collective *c)
{
    return c->step_payload ? c->step_payload : c->payload_bytes * c->calls;
}

/* ---- time --------------------------------------------------------------------- */

typedef struct {
    double gemm_s;        /* linear-layer and LM-head GEMMs, fwd + bwd (+ recompute), all micro-batches */
    double attn_s;        /* attention core (QK^T, softmax, PV), BF16 */
    double nongemm_s;     /* norms, activations, residuals, casts/transposes, current scaling's extra read */
    double tp_comm_s;     /* exposed TP/SP collectives (the stack's TP overlap hides the rest) */
    double cp_comm_s;     /* exposed CP exchange (overlaps attention) */
    double pp_comm_s;     /* PP send/recv on the critical path */
    double bubble_s;      /* pipeline fill/drain: (pp-1)/vpp micro-batch times */
    double dp_comm_s;     /* exposed DP gradient/parameter collectives */
    double optimizer_s;   /* optimizer step, memory-bound */
    double weight_cast_s; /* per-step FP8 weight cast (+ transpose) of the cached copies */
    double opt_cast_s;    /* of weight_cast_s, what the fp8plan executor casts in its optimizer phase (FP8-LM's
                             copies, once per step, no state sharded); the per-micro-batch casts are in fwd_s */
    double other_s;       /* amax reductions, tied-embedding and TP-replicated gradient all-reduces */
    double expert_gemm_s; /* grouped expert GEMMs (MoE; not in gemm_s) */
    double moe_route_s;   /* router, permutation, FP8 dispatch casts and expert activations (MoE) */
    /* of the MoE layers, forward + backward, without recompute (what run --gpu host times apart): the router (its
     * GEMMs, in gemm_s, with its score / top-k and backward kernels, in moe_route_s), the permutes and the experts'
     * activation with their FP8 casts (in moe_route_s) */
    double moe_router_s, moe_permute_s, moe_act_s;
    double ep_comm_s;  /* exposed expert all-to-alls and expert-TP collectives (MoE) */
    double moe_host_s; /* MoE layers whose host issue outlasts their GPU work: the host's excess (MoE) */
    double step_s;
    double microbatch_s; /* one micro-batch through the reported stage, fwd + bwd */
    double fwd_s, bwd_s; /* the slowest stage's forward and backward (recompute included) over its micro-batches:
                            the pipeline's compute without bubble or send/recv (fwd_s + bwd_s = the step's
                            share before DP, optimizer and casts when pp = 1) */
} TimeBreakdown;

/* Names for reports. */
const char *mem_category_name(MemCategory c);
const char *comm_group_name(CommGroup g);
/* The bus factor of op over n ranks, as nccl-tests defines it (bus bytes = payload x factor): all-reduce
 * 2(n - 1)/n, all-gather, reduce-scatter and all-to-all (n - 1)/n, send/recv (and broadcast) 1; 0 for n <= 1. */
double comm_bus_factor(CommOp op, uint64_t n);
/* nccl-tests' k of the bus factor k (n - 1) / n: 2 all-reduce, 1 all-gather / reduce-scatter / all-to-all, 0
 * point-to-point (planner/plan_link.c). */
uint64_t comm_ring_k(CommOp op);
/* The latency steps of one call of op over n ranks: 2(n - 1) for an all-reduce (a ring's reduce-scatter then
 * all-gather), 1 for send/recv, n - 1 for the others; 0 for n <= 1. */
double comm_ring_steps(CommOp op, uint64_t n);
/* The reduction path a call of op in dtype dt takes on a host profile's fits: the dtype's for the reducing
 * ops (all-reduce, reduce-scatter: FP32, BF16 and FP16 as BF16, E4M3 and E5M2 as FP8, a mixed dtype as
 * FP32), LINK_PATH_BYTES for the others. */
LinkPath link_path_of(CommOp op, Dtype dt);
/* The fit of gp's links.csv for one call of op in dtype dt with payload S: the row of (op, path, the range
 * holding S); for a path the profile lacks, the op's FP32 row. NULL when gp has none for op. */
const LinkFit *plan_link_fit(const GpuSpec *gp, CommOp op, Dtype dt, uint64_t S);
/* The fit of a gradient's all-reduce after the backward (the DP buckets, the tied embedding's gradient): gp's
 * LINK_PATH_FP32_GRAD row holding S for an FP32 all-reduce, else plan_link_fit's (a profile from an older
 * calibrate, another dtype: no gradient sweep measured it). */
const LinkFit *plan_link_fit_grad(const GpuSpec *gp, CommOp op, Dtype dt, uint64_t S);
/* The fit of the tied embedding's gradient all-reduce between the first and the last stage: gp's LINK_PATH_FP32_EMB
 * row holding S for an FP32 all-reduce (the later stage waits out the first one's last backward), else
 * plan_link_fit_grad's (a profile from an older calibrate, one rank: no embedding sweep measured it). */
const LinkFit *plan_link_fit_emb(const GpuSpec *gp, CommOp op, Dtype dt, uint64_t S);
/* The share of a gradient reduction's first-touched bytes (its payload and its scratch, half each) that come from
 * memory rather than the last-level cache, on host profile gp for a plan whose memory terms are mt and categories
 * cat, `ranks` ranks sharing the cache: 0.5 (1 - min(1, C / (R D_bwd))) + 0.5 (R D_step > C), C = gp->llc_bytes,
 * D_bwd the bytes a rank's backward touches, D_step its step's (planner/plan_cache.c); 1 when C is not known. */
double plan_grad_miss(const GpuSpec *gp, const MemTerm *mt, const uint64_t cat[MC_COUNT_], uint64_t ranks);
/* Seconds of one call of op over n ranks with payload S bytes at fit f: comm_ring_steps(op, n) x f->lat +
 * S x comm_bus_factor(op, n) / f->bw (no size term when f->bw is 0); *bw and *lat (optional) the parts. The one
 * formula every collective of a plan made with a host profile's fits is timed by. */
double plan_link_call(const LinkFit *f, CommOp op, uint64_t n, uint64_t S, double *bw, double *lat);
/* The per-message row (LINK_PATH_EAGER or LINK_PATH_RENDEZVOUS) of gp's all-to-all holding a message of b bytes;
 * NULL when gp has none (a profile from an older calibrate, a GPU). */
const LinkFit *plan_a2a_msg_fit(const GpuSpec *gp, uint64_t b);
/* Seconds of one message of b bytes to one peer of an all-to-all: f->lat + b / f->bw at f = plan_a2a_msg_fit(gp,
 * b) (no size term when f->bw is 0); 0 for b = 0 (no message: Open MPI's Alltoallv posts none for an empty
 * count); -1 when gp has no per-message rows. */
double plan_a2a_msg(const GpuSpec *gp, uint64_t b);
/* Seconds of one all-to-all call over n ranks with payload S a rank, S/n to each rank (uniform routing), on a
 * host profile with per-message rows: (n - 1) x plan_a2a_msg(gp, S / n) — the peers' messages one after
 * another, as one rank's one thread copies them (eager: into and out of shared-memory fragments; rendezvous:
 * the receiver's single copy), its own share folded into the fit (calibrate measured whole calls). *bw and
 * *lat (optional) the row's bandwidth and (n - 1) x its latency. -1 when gp has no per-message rows. */
double plan_a2a_call(const GpuSpec *gp, uint64_t n, uint64_t S, double *bw, double *lat);
/* Seconds of one all-to-all call of rank self over n ranks from its own messages: to[j] and from[j] elements of
 * elem_bytes sent to and received from rank j. Each peer j != self counts half of its message to j and half of
 * j's message to it, each at its own protocol's fit (plan_a2a_msg): an eager message is copied by both sides, a
 * rendezvous one by the receiver, and calibrate's fit of a message is per pair of equal messages, one each way.
 * Uneven routing makes the two sizes differ and puts messages on either side of the eager limit. -1 when gp has
 * no per-message rows. */
double plan_a2a_peers_s(const GpuSpec *gp, const uint64_t *to, const uint64_t *from, uint64_t elem_bytes, uint64_t n,
                        uint64_t self);

#ifdef __cplusplus
}
#endif
#endif
