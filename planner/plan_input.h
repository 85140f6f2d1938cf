/* planner/plan_input.h — a plan's input (PlanInput): model, GPU, recipe, layout, the stack's settings,
 * overheads and time-model overrides, with its defaults. Included by planner/plan.h. */
#ifndef FP8PLAN_PLANNER_PLAN_INPUT_H
#define FP8PLAN_PLANNER_PLAN_INPUT_H

#include <stdint.h>

#include "planner/layout.h"
#include "planner/recipe.h"
#include "planner/spec.h"
#include "planner/stack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inputs ------------------------------------------------------------------ */

/* The Adam moments' dtype: the recipe's, or both moments of every parameter kept in fp32 / bf16, as Megatron-Core's
 * precision-aware optimizer keeps them (--exp-avg-dtype, --exp-avg-sq-dtype: megatron/core/optimizer/
 * optimizer_config.py at core_v0.15.0, TE's FusedAdam exp_avg_dtype / exp_avg_sq_dtype). Plain fp32 and bf16 only:
 * TE's fp16 and uint8 moments carry a scale each (FusedAdam's scaled states), as FP8-LM's and MS-AMP's do, and a
 * recipe whose moments are scaled keeps them (plan_validate refuses the option there). */
typedef enum { MOMENT_RECIPE = 0, MOMENT_FP32, MOMENT_BF16, MOMENT_COUNT_ } MomentDtype;
const char *moment_dtype_name(MomentDtype m);
int moment_dtype_parse(const char *s, MomentDtype *out); /* "recipe", "fp32", "bf16": 0, or -1 */

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
    int moe_fused_mlp;       /* 1: the experts' FC1, activation and FC2 run as Transformer Engine's fused ops
                                (Megatron-Core >= 0.18 --use-transformer-engine-op-fuser): a clamped GLU's clamps and
                                biased experts' bias adds run inside them (plan_moe_extra.c) */
    MomentDtype moment_dt;   /* the Adam moments' dtype (above): their memory terms and the optimizer's bytes */

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
    int permute_fusion;     /* MoE token permutation: 1 = Transformer Engine's fused permute, 0 = PyTorch index ops
                               (the stack's permute_fusion; routed_act counts what each saves for backward) */
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

#ifdef __cplusplus
}
#endif
#endif
