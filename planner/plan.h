/* planner/plan.h — the analytic plan: per-GPU memory terms, collectives and
 * step time for a model, GPU, recipe and parallel layout.
 *
 *   PlanInput in;
 *   plan_input_defaults(&in);            // layout 1x1x1x1, documented overheads
 *   in.model = m; in.gpu = g; in.recipe = r; in.tp = 8; in.pp = 4; in.dp = 4;
 *   Plan p;
 *   if (plan_build(&in, &p, &err)) ... // err.msg names the bad input
 *
 * plan_build is pure (no I/O, no malloc) and fills a fixed-size Plan; the CLI,
 * the TUI, the executor and the tests all call it. Every total is a sum over
 * named terms, so every number a user sees can be traced to one row.
 *
 * Conventions
 * - Bytes are uint64 with overflow checks (ST_OVERFLOW past 2^64); doubles
 *   only for rates and times. "GB" in reports means 1e9 bytes.
 * - Memory is for the most-loaded GPU: PP stage 0 (token/position embedding,
 *   the most in-flight micro-batches) or the last stage (final norm, LM head,
 *   logits), whichever totals more; Plan.stage says which.
 * - TP shards the linear weights (QKV and FC1 by output rows, proj and FC2 by
 *   input columns), the vocabulary of the embedding and LM head, and the
 *   column-parallel biases; norms and row-parallel biases are replicated.
 *   The vocabulary is padded to a multiple of vocab_pad * tp (Megatron's
 *   --make-vocab-size-divisible-by; 50257 -> 50304 for GPT-2 at tp 1).
 * - Sharded states (distributed optimizer / ZeRO) hold ceil(elements / (dp*cp))
 *   elements per GPU, counted separately for the linear weights and the rest.
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
#ifndef FP8PLAN_PLANNER_PLAN_H
#define FP8PLAN_PLANNER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/dtype.h"
#include "planner/layout.h"
#include "planner/recipe.h"
#include "planner/spec.h"
#include "planner/stack.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inputs ------------------------------------------------------------------ */

typedef struct {
    const ModelSpec *model;
    const GpuSpec *gpu;
    const Recipe *recipe;

    /* layout */
    uint32_t tp, pp, vpp, cp, dp; /* vpp: virtual stages per PP rank (interleaved 1F1B), 1 = none */
    uint32_t world;               /* 0 = tp*pp*cp*dp; otherwise must equal it */
    uint32_t mbs;                 /* micro-batch size, sequences */
    uint64_t gbs;                 /* global batch, sequences; 0 = about 2M tokens (2^21/seq) rounded up to mbs*dp */
    uint32_t seq;                 /* sequence length; 0 = model->seq_len */
    int sp;                       /* sequence parallelism (ignored when tp = 1) */
    Recompute recompute;
    Sharding sharding;
    AttnImpl attn;
    int dropout;        /* 1: count dropout masks (Korthikanti's setting); 0: dropout off (modern LLMs) */
    uint32_t vocab_pad; /* pad the vocabulary to a multiple of vocab_pad*tp; 0 or 1 = no padding */

    /* uneven pipeline stages (Megatron --decoder-first/last-pipeline-num-layers): layers on the first and the
     * last stage, 0 = an even share; the other stages split the rest evenly */
    uint32_t first_stage_layers, last_stage_layers;
    /* 1: the layers are placed chunk by chunk (Megatron-Core's --pipeline-model-parallel-layout), so the end
     * stages' counts need not fit plan_vpp_split_ok's forms; 0: the flags above, which must */
    int custom_pp_layout;
    /* the stage the plan's memory terms and collectives describe: 0 = the most-loaded one (the default),
     * s + 1 = stage s (the executor compares each pipeline rank with its own stage's plan) */
    uint32_t stage_view;

    /* mixture of experts (planner/plan_moe.h; ep = etp = 1 for dense models). The expert groups are carved
     * from the same ranks as Megatron-Core does: experts are split over ep ranks (ep * etp consecutive ranks,
     * etp fastest), each expert's FFN over etp ranks, and the expert states are reduced and sharded over the
     * expert-data-parallel group edp = tp * cp * dp / (ep * etp) = world / (etp * ep * pp). */
    uint32_t ep, etp;
    double moe_imbalance;    /* dropless routing: tokens of the most-loaded expert rank / the mean (>= 1, default 1) */
    double moe_capacity;     /* capacity factor: each expert's buffer holds this x its even share (0 = dropless) */
    int moe_dedup;           /* MOE_DISPATCH_*: 0 Megatron's all-to-all dispatcher, one copy per (token, expert);
                                HYBRIDEP: once to each remote node its experts are on, then forwarded inside the node
                                over NVLink one copy per (token, expert); DEEPEP: once to each remote node and once to
                                each GPU that holds one of its experts (plan_moe_comm.c) */
    double overlap_ep;       /* fraction of the concurrent compute that hides the expert all-to-alls (the stack's) */
    uint32_t ep_comm_sms;    /* SMs the all-to-all kernels take from the GEMMs while they overlap them (DeepSeek: 20) */
    int dualpipe;            /* DualPipe (DeepSeek-V3): bidirectional pipeline, two copies of the stage parameters,
                             all-to-alls hidden behind the paired chunk (plan_moe_time.c) */
    unsigned recompute_mods; /* RECOMPUTE_MOD_* bits: modules recomputed in backward on top of `recompute` */
    unsigned graph_scope;    /* GRAPH_* bits: the parts of the layers captured as CUDA graphs (0: none) */
    unsigned offload_mods;   /* OFFLOAD_MOD_* bits: modules whose saved inputs wait in host memory (0: none) */

    /* implementation choices (PLAN_UNK_* bits, above): mem_savings are taken as facts (the terms are built with
     * them); mem_unknown are open: the terms are built without them (the high end) and plan_build adds the
     * low end with them taken (Plan.low_bytes, Plan.verdict). 0 and 0: the plan as before they existed. */
    unsigned mem_savings, mem_unknown;

    /* the software stack (planner/stack.h): plan_input_use_stack() copies a row into the fields below */
    const StackSpec *stack; /* NULL: none applied (the neutral defaults of plan_input_defaults) */
    MainGrad main_grad;     /* main-gradient dtype: the recipe's, or fp32 / bf16 */
    int fp8_weight_cache;   /* 1: cached FP8 weight copies (once per step); 0: recast per micro-batch */
    int fused_swiglu;       /* 1: SwiGLU saves 6F bytes per token with FC2's input; 0: 8F */
    KernelFusion fusion;    /* memory-bound kernel list */
    int grad_acc_fusion;    /* te kernels: 1 = weight gradients accumulate into the main gradient in the GEMM epilogue
                               (Megatron --gradient-accumulation-fusion); 0 = a separate add every micro-batch (the
                               compile and eager lists always add with autograd, from the second micro-batch on) */
    double launch_s;        /* floor of one kernel launch, s */
    /* host issue of an eager MoE layer (the stack's; 0 = not modelled): the host's time per operation it issues,
     * the operations of one MoE layer's forward and backward outside the experts' GEMMs, and those per local expert */
    double host_op_s, moe_host_ops, expert_host_ops;
    uint32_t loss_bytes; /* bytes per logit at the loss's peak (bf16 logits, fp32 copies, saved softmax, its grad) */
    double overlap_tp, overlap_dp, overlap_pp, overlap_cp; /* fraction of the concurrent compute that hides them */

    /* overheads (settable; bytes) */
    uint64_t cuda_context_bytes; /* default 512 MiB */
    uint64_t workspace_bytes;    /* cuBLASLt workspace, default 32 MiB (TE's Hopper size) */
    uint64_t nccl_comm_bytes;    /* per NCCL communicator this GPU uses, default 616,562,688 */
    /* communicators the process holds whatever the layout (default 0: one per
     * parallel group of 2 or more): fp8plan run on a GPU makes one NCCL
     * communicator even for one rank, and its buffers are in what it measures */
    uint32_t comms_min;
    double frag_frac;    /* allocator reserve over allocated bytes (the stack's), default 0.05 */
    double max_mem_frac; /* a plan fits when its total is at most this fraction of capacity, default 0.95 */

    /* time model overrides (0 = the catalog's value); an efficiency is at least PLAN_EFF_MIN */
    double eff_gemm_bf16; /* saturated BF16 GEMM rate, fraction of the BF16 peak; 0: the GPU's measured MAMF */
    double eff_gemm_fp8;  /* same for FP8; 0: the GPU's measured FP8 MAMF */
    double eff_attn;      /* asymptotic attention efficiency, fraction of the BF16 peak; 0: the kernel's */
    double eff_hbm;       /* memory-bound kernels vs HBM peak, default 0.80 */
    double eff_net;       /* achieved bus bandwidth vs link peak, default 0.80 */
} PlanInput;

/* Fill every field with the documented defaults (layout 1x1x1x1, mbs 1, flash
 * attention, no dropout, sp on, no recompute, no sharding, vocab_pad 128) and
 * NULL model/gpu/recipe. No stack is applied: the recipe's main gradient, cached
 * FP8 copies, fused SwiGLU, TE-style fused kernels without a launch floor, DP
 * collectives hidden behind compute, nothing else overlapped. */
void plan_input_defaults(PlanInput *in);

/* Apply a stack's row: attention kernel, sequence parallelism, SwiGLU fusion,
 * main-gradient dtype, FP8 weight caching, kernel fusion (te also fuses the
 * weight-gradient accumulation) and launch floor, overlaps, allocator reserve. */
void plan_input_use_stack(PlanInput *in, const StackSpec *s);

/* The attention kernel that runs on this GPU for the input's choice (te: cuDNN on
 * SM 9.0+, FlashAttention-2 below; flash3 on a GPU other than SM 9.x: FlashAttention-2). */
AttnImpl plan_attn_kernel(const PlanInput *in);

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

typedef struct {
    MemTermId id;
    const char *name; /* stable snake_case name, e.g. "weight_gemm" */
    MemCategory cat;
    Dtype dtype;       /* DT_NONE when the term holds no tensor or mixed dtypes */
    uint64_t elements; /* tensor elements (0 for overheads) */
    uint64_t bytes;
    uint32_t shards; /* 1 = whole on every GPU; n = this GPU holds 1/n (ceil) */
    int persistent;  /* 1: lives across steps (state, copies, scales) */
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

/* Every collective the plan counts, once: X(id, stable name, group, op). The enum and the plan's blank
 * table (names, groups, ops; plan_comm.c) come from it; the bytes, calls and time are the planner's. */
#define COLLECTIVES(X)                                                                                        \
    /* TP without SP: all-reduce after proj and FC2 (forward) */                                              \
    X(CO_TP_AR_FWD, "tp_allreduce_fwd", GROUP_TP, OP_ALL_REDUCE)                                              \
    /* TP without SP: all-reduce of the QKV/FC1 input gradients */                                            \
    X(CO_TP_AR_BWD, "tp_allreduce_bwd", GROUP_TP, OP_ALL_REDUCE)                                              \
    /* SP: all-gather before QKV and FC1 (forward) */                                                         \
    X(CO_TP_AG_FWD, "tp_allgather_fwd", GROUP_TP, OP_ALL_GATHER)                                              \
    /* SP: reduce-scatter after proj and FC2 (forward) */                                                     \
    X(CO_TP_RS_FWD, "tp_reducescatter_fwd", GROUP_TP, OP_REDUCE_SCATTER)                                      \
    /* SP: all-gather of proj/FC2 output gradients + re-gather of saved inputs */                             \
    X(CO_TP_AG_BWD, "tp_allgather_bwd", GROUP_TP, OP_ALL_GATHER)                                              \
    /* SP: reduce-scatter of QKV/FC1 input gradients */                                                       \
    X(CO_TP_RS_BWD, "tp_reducescatter_bwd", GROUP_TP, OP_REDUCE_SCATTER)                                      \
    /* TP outside the layers (planner/plan_comm_vocab.c), per micro-batch unless said. \
     * Without SP: the vocabulary-parallel embedding's partial sums (forward) and the LM head's input gradient \
     * (backward) all-reduced; with SP and learned positions the embedding's (Megatron adds the positions to \
     * the whole, then splits it to the sequence shards): */                      \
    X(CO_TP_VOCAB_AR, "tp_vocab_allreduce", GROUP_TP, OP_ALL_REDUCE)                                          \
    /* SP: the LM head's input (forward, and again for its weight gradient) and the embedding's output \
     * gradient (backward) all-gathered: */      \
    X(CO_TP_VOCAB_AG, "tp_vocab_allgather", GROUP_TP, OP_ALL_GATHER)                                          \
    /* SP: the embedding's partial sums to the sequence shards (forward, without learned positions) and the \
     * LM head's input gradient (backward) reduce-scattered: */ \
    X(CO_TP_VOCAB_RS, "tp_vocab_reducescatter", GROUP_TP, OP_REDUCE_SCATTER)                                  \
    /* vocabulary-parallel cross-entropy: max logit (MAX), target logit and sum of exponentials (SUM), FP32 \
     * [tokens] each: 3 calls: */ \
    X(CO_TP_LOSS_AR, "tp_loss_allreduce", GROUP_TP, OP_ALL_REDUCE)                                            \
    /* once per step, one coalesced all-reduce of the gradients of the parameters every TP rank holds whole \
     * (with SP norms and row-parallel biases, MoE routers; q/k norms always): */ \
    X(CO_TP_NORM_GRAD_AR, "tp_norm_grad_allreduce", GROUP_TP, OP_ALL_REDUCE)                                  \
    /* CP: K,V exchange (forward, again in backward) and dK,dV reduce */                                      \
    X(CO_CP_KV, "cp_kv_exchange", GROUP_CP, OP_ALL_GATHER)                                                    \
    /* PP: activations forward, gradients backward, per micro-batch and chunk */                              \
    X(CO_PP_P2P, "pp_send_recv", GROUP_PP, OP_SEND_RECV)                                                      \
    /* DP: gradient all-reduce (no sharded gradients) */                                                      \
    X(CO_DP_GRAD_AR, "dp_grad_allreduce", GROUP_DP, OP_ALL_REDUCE)                                            \
    /* DP: gradient reduce-scatter (sharded optimizer) */                                                     \
    X(CO_DP_GRAD_RS, "dp_grad_reducescatter", GROUP_DP, OP_REDUCE_SCATTER)                                    \
    /* DP: parameter all-gather after the sharded step (twice per step at ZeRO-3) */                          \
    X(CO_DP_PARAM_AG, "dp_param_allgather", GROUP_DP, OP_ALL_GATHER)                                          \
    /* tied embedding gradient all-reduce between first and last stage */                                     \
    X(CO_EMB_GRAD_AR, "emb_grad_allreduce", GROUP_EMB, OP_ALL_REDUCE)                                         \
    /* amax reduction per micro-batch (forward and backward) */                                               \
    X(CO_AMAX_AR, "amax_allreduce", GROUP_AMAX, OP_ALL_REDUCE)                                                \
    /* mixture of experts, per MoE layer and micro-batch (plan_moe_comm.c) */                                 \
    /* tokens to their experts (the recipe's ep_dispatch_comm: FP8 + scales for DeepSeek-V3) */               \
    X(CO_EP_DISPATCH_FWD, "ep_dispatch_fwd", GROUP_EP, OP_ALL_TO_ALL)                                         \
    /* expert outputs back (ep_combine_comm) */                                                               \
    X(CO_EP_COMBINE_FWD, "ep_combine_fwd", GROUP_EP, OP_ALL_TO_ALL)                                           \
    /* output gradients to the experts (dispatch dtype) */                                                    \
    X(CO_EP_DISPATCH_BWD, "ep_dispatch_bwd", GROUP_EP, OP_ALL_TO_ALL)                                         \
    /* input gradients back (combine dtype) */                                                                \
    X(CO_EP_COMBINE_BWD, "ep_combine_bwd", GROUP_EP, OP_ALL_TO_ALL)                                           \
    /* expert TP: the dispatched rows gathered over etp (forward; output gradients backward) */               \
    X(CO_ETP_AG, "etp_allgather", GROUP_ETP, OP_ALL_GATHER)                                                   \
    /* expert TP: expert outputs reduce-scattered over etp (forward; input gradients backward) */             \
    X(CO_ETP_RS, "etp_reducescatter", GROUP_ETP, OP_REDUCE_SCATTER)                                           \
    /* expert gradients all-reduced over the expert-data-parallel group */                                    \
    X(CO_EDP_GRAD_AR, "edp_grad_allreduce", GROUP_EDP, OP_ALL_REDUCE)                                         \
    /* expert gradients reduce-scattered (sharded optimizer) */                                               \
    X(CO_EDP_GRAD_RS, "edp_grad_reducescatter", GROUP_EDP, OP_REDUCE_SCATTER)                                 \
    /* expert parameters all-gathered after the sharded step */                                               \
    X(CO_EDP_PARAM_AG, "edp_param_allgather", GROUP_EDP, OP_ALL_GATHER)                                       \
    /* the executor's token counts before each forward dispatch (E int32; host plans only) */                 \
    X(CO_EP_COUNTS, "ep_counts", GROUP_EP, OP_ALL_TO_ALL)

typedef enum {
#define CO_ENUM_(id, name, group, op) id,
    COLLECTIVES(CO_ENUM_)
#undef CO_ENUM_
        CO_COUNT_
} CollectiveId;

typedef struct {
    CollectiveId id;
    const char *name;
    CommGroup group;
    CommOp op;
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
    double other_s;       /* amax reductions, tied-embedding and TP-replicated gradient all-reduces */
    double expert_gemm_s; /* grouped expert GEMMs (MoE; not in gemm_s) */
    double moe_route_s;   /* router, permutation, FP8 dispatch casts and expert activations (MoE) */
    double ep_comm_s;     /* exposed expert all-to-alls and expert-TP collectives (MoE) */
    double moe_host_s;    /* MoE layers whose host issue outlasts their GPU work: the host's excess (MoE) */
    double step_s;
    double microbatch_s; /* one micro-batch through the reported stage, fwd + bwd */
    double fwd_s, bwd_s; /* the slowest stage's forward and backward (recompute included) over its micro-batches:
                            the pipeline's compute without bubble or send/recv (fwd_s + bwd_s = the step's
                            share before DP, optimizer and casts when pp = 1) */
} TimeBreakdown;

/* ---- advice ------------------------------------------------------------------- */

typedef enum {
    ADV_OOM = 0,           /* total exceeds the GPU's memory */
    ADV_COMPUTE_ONLY,      /* FP8 GEMMs but high-precision states: FP8 copies add memory */
    ADV_COMPUTE_ONLY_CAST, /* the same with the copies cast per micro-batch (--fp8-weight-cache off): none held */
    ADV_FP32_GRAD_COMM,    /* gradients reduced in FP32: FP8 GEMMs do not shrink DP traffic */
    ADV_BF16_GRAD_COMM,    /* the same with the BF16 main gradient the plan reduces (--main-grad bf16) */
    ADV_PER_TENSOR,        /* per-tensor scaling and outliers */
    ADV_FP8_SECOND_MOMENT, /* FP8 Adam v diverges */
    ADV_TP_ONLY_AMAX,      /* amax not reduced over DP */
    ADV_REPRODUCIBILITY,   /* delayed scaling: history, reduction order, checkpoints */
    ADV_CONVERGENCE,       /* FP8 convergence evidence is limited */
    ADV_MX_BOTH_COPIES,    /* MXFP8 row- and column-wise copies both quantized */
    ADV_HEADROOM,          /* within capacity but above max_mem_frac of it */
    ADV_COUNT_
} AdviceId;

/* One line of advice for a plan, naming its reason (static text). */
const char *advice_text(AdviceId a);

/* ---- the plan ----------------------------------------------------------------- */

/* A plan's memory verdict. Without open choices (in.mem_unknown) the low end is the total, so a plan is FITS,
 * OVER_LIMIT or OOM exactly as its total says. */
typedef enum {
    PLAN_FITS = 0,   /* total_bytes (the high end) within limit_bytes */
    PLAN_UNCERTAIN,  /* the high end above the limit, the low end within it: it fits if the open savings that
                        hold take at least total_bytes - limit_bytes off the total */
    PLAN_OVER_LIMIT, /* the low end above the limit, within capacity */
    PLAN_OOM,        /* the low end above capacity */
    PLAN_VERDICT_COUNT_
} PlanVerdict;
/* "FITS", "UNCERTAIN", "OVER LIMIT", "OOM". */
const char *plan_verdict_name(PlanVerdict v);

typedef struct {
    PlanInput in;    /* copy of the input, gbs and seq resolved */
    int gbs_default; /* the input's gbs was 0: in.gbs is the default, about 2M tokens */
    uint32_t world, microbatches, seq, vocab_padded, sp;
    uint32_t stage;                                 /* PP stage the memory terms describe */
    uint32_t stage_layers;                          /* layers on that PP rank */
    uint32_t first_layers, mid_layers, last_layers; /* layers per stage: first, each middle one, last */
    uint32_t shard_ways;                            /* dp * cp */
    uint64_t params_total;                          /* whole model, unpadded vocabulary */
    uint64_t params_gpu;                            /* parameters held by the reported GPU (before state sharding) */
    uint64_t params_gemm_gpu;                       /* of which linear-layer weights (experts apart) */
    uint64_t params_expert_gpu;                     /* of which routed-expert weights (MoE) */
    uint64_t params_active;                         /* parameters a token uses (model_params; = total when dense) */
    uint64_t linear_tensors;                        /* linear weight tensors on the GPU (4 per layer) */

    MemTerm mem[MT_COUNT_];
    uint64_t cat_bytes[MC_COUNT_];
    uint64_t total_bytes, capacity_bytes;
    uint64_t limit_bytes;    /* max_mem_frac x capacity */
    uint64_t alloc_bytes;    /* what the caching allocator hands out (states, copies, scales, activations, workspace) */
    uint64_t reserved_bytes; /* alloc_bytes + the allocator's reserve */
    int fits;                /* total_bytes <= limit_bytes */
    /* open choices (in.mem_unknown): the band. total_bytes and the terms are the high end, every open saving off;
     * low_bytes the total with all of them taken (its most-loaded stage low_stage, chosen again; never above
     * total_bytes: a saving that would add bytes is taken as none); unknown_bytes[i]
     * what saving plan_unknowns[i] alone takes off total_bytes (0 when it is not open, or saves nothing here).
     * Without open choices low_bytes = total_bytes, low_stage = stage. Sweeps rank every plan whose low end fits
     * (plan_may_fit): an uncertain plan is ranked by its throughput beside the plans that fit, marked by verdict. */
    uint64_t low_bytes;
    uint32_t low_stage;
    uint64_t unknown_bytes[PLAN_UNK_COUNT_];
    PlanVerdict verdict;

    Collective coll[CO_COUNT_];
    uint64_t dp_comm_bytes, tp_comm_bytes, pp_comm_bytes, cp_comm_bytes;
    uint64_t ep_comm_bytes;     /* expert all-to-alls and expert-TP gathers (MoE) */
    uint64_t weight_comm_bytes; /* DP (and expert-DP) parameter all-gather + gradient reduce-scatter/all-reduce */

    TimeBreakdown time;
    double model_flops_step; /* model FLOPs per step, all GPUs (6N + attention, no recompute) */
    double tokens_per_s, samples_per_s, tflops_per_gpu, mfu_bf16_pct, mfu_fp8_pct;

    uint32_t advice_mask; /* bit (1u << AdviceId) */
} Plan;

/* The smallest efficiency (a fraction of a peak rate) a plan accepts: 0.1 %. Far below anything a GPU,
 * link or kernel achieves, and it keeps every time term a finite double (a subnormal efficiency made
 * the step time inf and the throughput NaN). */
#define PLAN_EFF_MIN 1e-3

/* Why an input cannot be planned (for sweep statistics). */
typedef enum {
    REJECT_NONE = 0,
    REJECT_ZERO,      /* a layout value is 0 */
    REJECT_HEADS_TP,  /* heads or kv_heads not divisible by tp */
    REJECT_FFN_TP,    /* ffn_hidden not divisible by tp */
    REJECT_LAYERS_PP, /* layers not divisible by pp*vpp (or bad first/last stage layer counts) */
    REJECT_VPP,       /* vpp > 1 needs pp > 1 and microbatches divisible by pp */
    REJECT_SEQ_CP,    /* seq not divisible by 2*cp */
    REJECT_SEQ_POS,   /* seq longer than the learned position table */
    REJECT_WORLD,     /* world != tp*pp*cp*dp */
    REJECT_GBS,       /* global batch not divisible by mbs*dp */
    REJECT_HW,        /* recipe needs a newer GPU */
    REJECT_MODEL,     /* model or GPU spec itself is invalid (zero sizes or rates) */
    REJECT_KNOB,      /* an overhead or efficiency setting is out of range */
    REJECT_OVERFLOW,  /* a byte count passed 2^64 */
    REJECT_EP,        /* ep/etp do not fit the model's experts or tp*cp*dp, or a dense model */
    REJECT_NONFINITE, /* the step time or a rate from it is not a finite positive double (catalog rates too small) */
    REJECT_COUNT_
} PlanReject;

const char *plan_reject_name(PlanReject r);

/* Bytes per parameter of the linear weights' states as this input keeps them: the
 * recipe's Table 1a figure with the stack's main-gradient dtype (--main-grad)
 * applied, unsharded. per (optional, STATE_COUNT_ entries) receives each state's
 * share. */
double plan_state_bytes_per_param(const PlanInput *in, double *per);
/* Is the recipe's transposed FP8 weight copy (Recipe.fp8_col) needed on the plan's GPU? Hopper's FP8 GEMMs are TN-only,
 * so dgrad reads a transposed copy; Blackwell's (SM 10.x, 11.x, 13.x) take every layout, and a per-tensor scale is the
 * same for a tensor and its transpose, so the row-wise copy serves both GEMMs (Transformer Engine creates the
 * transpose only where is_non_tn_fp8_gemm_supported() is false). Block and channel scales run along one axis: those
 * recipes keep a column-wise copy on every GPU. */
int plan_fp8_col_held(const PlanInput *in);
/* The SMs the expert all-to-all kernels hold while they overlap compute: --ep-comm-sms, else with --overlap-ep or
 * DualPipe the dispatcher's own (DeepEP 20, HybridEP 16), else 0 (plan_moe_time.c). */
uint32_t plan_ep_comm_sms(const PlanInput *in);
/* Bytes per parameter of the FP8 copies of one linear weight the plan holds or casts: the row-wise copy, and the
 * transposed one where plan_fp8_col_held. */
uint64_t plan_fp8_copy_bytes_per_param(const PlanInput *in);

/* Check the input without building. Returns the reason (REJECT_NONE when the
 * input can be planned) and, when e is non-NULL, fills it with a message naming
 * the flag and value (ST_USAGE; ST_OVERFLOW for REJECT_OVERFLOW). */
PlanReject plan_validate(const PlanInput *in, Err *e);

/* 1 when Megatron-Core can interleave vpp virtual stages over pipeline stages holding first, middle (each
 * stage between, when pp > 2) and last layers: every count a multiple of vpp, or the account_for_embedding /
 * account_for_loss split (middle stages s layers, s a multiple of vpp, the end stages s or s - 1). */
int plan_vpp_split_ok(uint32_t pp, uint32_t vpp, uint64_t first, uint64_t middle, uint64_t last);

/* Build the plan. ST_USAGE for an invalid layout or recipe/GPU combination,
 * ST_OVERFLOW when a byte count passes 2^64, ST_SOFTWARE for NULL inputs.
 * `out` is fully written on success and left unspecified on failure. */
Status plan_build(const PlanInput *in, Plan *out, Err *e);

/* Same, reporting the reject reason instead of a message (used by sweeps). */
Status plan_build_fast(const PlanInput *in, Plan *out, PlanReject *why);

/* 1 when the plan fits at its low end: FITS or UNCERTAIN. */
static inline int plan_may_fit(const Plan *p) { return p->verdict == PLAN_FITS || p->verdict == PLAN_UNCERTAIN; }

/* As plan_build_fast, but a plan that cannot fit (plan_may_fit 0) stops after its memory: its memory
 * terms, totals, limit and layout are filled, its collectives, time, rates and advice are not (left
 * unspecified), and a collective byte count or time figure that would overflow is not detected. A plan
 * that fits is complete. For sweeps, where most layouts of a large model do not fit. */
Status plan_build_memory_first(const PlanInput *in, Plan *out, PlanReject *why);

/* Whether a memory term / collective exists for the plan's model: the expert terms (MT_*_EXPERT, MT_ACT_MOE)
 * and the expert collectives (GROUP_EP, GROUP_ETP, GROUP_EDP) only with experts, MT_ROUTER_BIAS only with a
 * sigmoid router, the count exchange
 * (CO_EP_COUNTS) only on a host profile (gpu->host) too. Text views list what
 * applies; CSV / JSON views list every row (a stable schema). */
int plan_term_applies(const Plan *p, MemTermId id);
int plan_coll_applies(const Plan *p, CollectiveId id);

/* Names for reports. */
const char *mem_category_name(MemCategory c);
const char *comm_group_name(CommGroup g);
/* The bus factor of op over n ranks, as nccl-tests defines it (bus bytes = payload x factor): all-reduce
 * 2(n - 1)/n, all-gather, reduce-scatter and all-to-all (n - 1)/n, send/recv (and broadcast) 1; 0 for n <= 1. */
double comm_bus_factor(CommOp op, uint64_t n);
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
/* 1 when state st of state set s is sharded over the DP x CP group under in->sharding (before the
 * group size is considered: over one rank nothing is): dist-opt the recipe's shard_mask; ZeRO-1/2
 * m and v, the master unless the GEMMs read it (recipe_master_is_compute), ZeRO-2 the gradient too;
 * ZeRO-3 everything. A sharded state of E elements holds ceil(E / (dp * cp)) on every rank. */
int plan_state_sharded(const PlanInput *in, const StateSet *s, StateId st);

#ifdef __cplusplus
}
#endif
#endif
