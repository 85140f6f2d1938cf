/* planner/stack.h — a training software stack as plain data: one row of
 * models/stacks.csv.
 *
 * Two runs of the same model, GPU, recipe and layout differ by the stack that
 * runs them: which attention kernel it calls, how many memory-bound kernels a
 * layer launches (fused by Transformer Engine, by torch.compile, or one per
 * PyTorch op), what each launch costs at least, which collectives it hides
 * under compute, the defaults it ships (main-gradient dtype, FP8 weight
 * caching, fused SwiGLU) and how much its allocator reserves over what it
 * allocates. The planner applies a stack's row to a PlanInput
 * (plan_input_use_stack); every field stays settable afterwards. */
#ifndef FP8PLAN_PLANNER_STACK_H
#define FP8PLAN_PLANNER_STACK_H

#include <stddef.h>
#include "planner/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The attention kernel: FlashAttention-2, FlashAttention-3 (Hopper only; other
 * GPUs run FlashAttention-2), cuDNN fused attention, the materialized
 * softmax(QK^T)V with batched GEMMs, or "te": Transformer Engine's own choice
 * (cuDNN on SM 9.0 and later, FlashAttention-2 below). */
typedef enum {
    ATTN_FLASH = 0, /* FlashAttention-2 ("flash" and "flash2") */
    ATTN_MATERIALIZED,
    ATTN_FLASH3,
    ATTN_CUDNN,
    ATTN_TE,
    ATTN_COUNT_
} AttnImpl;

/* Main-gradient dtype: the recipe's, or forced to fp32 / bf16 for the
 * high-precision gradients (FP8 gradients of FP8-LM-style recipes stay FP8). */
typedef enum { MAIN_GRAD_RECIPE = 0, MAIN_GRAD_FP32, MAIN_GRAD_BF16, MAIN_GRAD_COUNT_ } MainGrad;

/* How the memory-bound work of a layer is split into kernels:
 *   te       Megatron-Core with Transformer Engine: norm + FP8 cast fused, fused
 *            RoPE, bias-dropout-add and SwiGLU fusions, cast+transpose in one pass;
 *   compile  torch.compile (inductor) fuses each chain of pointwise ops;
 *   eager    one kernel per PyTorch op (unfused norms, activations, casts);
 *   fp8plan  this project's executor: one kernel per step of its layer. */
typedef enum { FUSE_TE = 0, FUSE_COMPILE, FUSE_EAGER, FUSE_FP8PLAN, FUSE_COUNT_ } KernelFusion;

typedef struct {
    char name[SPEC_NAME_MAX];
    AttnImpl attn;         /* default attention kernel */
    int sequence_parallel; /* 1: sequence parallelism with TP (norms, dropout and residuals split over TP ranks) */
    int fused_swiglu;     /* 1: SwiGLU saves its 2F input only (6F bytes per token with FC2's input); 0: + silu(gate) */
    MainGrad main_grad;   /* default main-gradient dtype */
    int fp8_weight_cache; /* 1: FP8 weight copies cast once per step and kept (TE is_first_microbatch);
                              0: recast every micro-batch and saved per layer for backward */
    KernelFusion fusion;  /* the memory-bound kernel list */
    double launch_s;      /* floor of one kernel launch, seconds (launch latency or host dispatch) */
    /* Host issue of an eager MoE layer (0 = not modelled): the host's time to issue one operation (Python,
     * framework dispatch and launch), the operations one MoE layer issues per micro-batch, forward and backward,
     * outside the experts' GEMMs, and the operations per local expert (a grouped GEMM that launches one GEMM per
     * expert: fprop, dgrad and wgrad of FC1 and FC2). */
    double host_op_s, moe_host_ops, expert_host_ops;
    uint32_t loss_bytes;  /* bytes per logit element at the loss's memory peak */
    double overlap_tp;    /* fraction of the concurrent GEMMs a TP collective can hide behind (0: exposed) */
    double overlap_tp_on; /* the same once the stack's optional TP overlap is switched on (TE userbuffers with
                             --tp-comm-overlap, torchtitan's async TP): what --overlap-tp on selects */
    double overlap_dp;    /* same for DP gradient reduce / parameter gather behind backward / forward */
    double overlap_pp;    /* same for pipeline send/recv behind the neighbouring micro-batch */
    double overlap_cp;    /* same for the context-parallel K/V ring behind attention */
    double overlap_ep;    /* same for the expert all-to-alls behind the MoE layers' compute */
    double alloc_reserve; /* caching allocator: reserved bytes over allocated, fraction */
    int calibrated;       /* 0: the efficiency values are not yet measured on a GPU (fp8plan before calibrate) */
    char source[STACK_SOURCE_MAX];
    char alias[SPEC_NAME_MAX]; /* a second name that says what the row is (optional column; "" none) */
    int expert_tp;      /* 1: a MoE plan's --etp defaults to its --tp (Megatron-Core: expert_tensor_parallel_size None
                      becomes tensor_model_parallel_size); 0: to 1 (optional column expert_tp: tp | 1, blank 1) */
    int permute_fusion; /* 1: MoE token permutation runs Transformer Engine's fused permute (Megatron-Core
                           --moe-permute-fusion); 0: PyTorch index ops (optional column permute_fusion, blank no) */
} StackSpec;

/* "megatron-core (nvidia-recipes)": the row's name and, where it has one, the alias that says what it is;
 * "none" for NULL. buf holds at least STACK_LABEL_MAX bytes. */
enum { STACK_LABEL_MAX = 2 * SPEC_NAME_MAX + 4 };
const char *stack_label(const StackSpec *s, char *buf, size_t size);
const char *attn_name(AttnImpl a);
int attn_parse(const char *s, AttnImpl *out); /* flash, flash2, flash3, cudnn, te, materialized */
const char *main_grad_name(MainGrad g);
int main_grad_parse(const char *s, MainGrad *out);
const char *fusion_name(KernelFusion f);
int fusion_parse(const char *s, KernelFusion *out);

/* The expert-TP size a plan takes when --etp is not given: the TP size under a stack whose expert_tp is tp
 * (Megatron-Core) for a model with experts, else 1. The CLI and the TUI (on every stack, TP or model change)
 * both apply it. */
static inline uint32_t stack_default_etp(const StackSpec *s, const ModelSpec *m, uint32_t tp)
{
    return s && s->expert_tp && m && m->experts ? tp : 1;
}

#ifdef __cplusplus
}
#endif
#endif
