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
 * The input is planner/plan_input.h; the memory terms, collectives and time rows are planner/plan_terms.h
 * (both included here). */
#ifndef FP8PLAN_PLANNER_PLAN_H
#define FP8PLAN_PLANNER_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/dtype.h"
#include "planner/layout.h"
#include "planner/plan_input.h"
#include "planner/plan_terms.h"
#include "planner/recipe.h"
#include "planner/spec.h"
#include "planner/stack.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    uint64_t linear_tensors; /* dense-DP linear weight tensors on the GPU (4 per layer; latent attention's 4 or 5, a
                                MoE layer's 2 with no shared expert, an MTP depth's eh_proj more) */

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
    REJECT_MOMENTS,   /* --moment-dtype on a recipe whose Adam moments are scaled (FP8-LM, MS-AMP O3) */
    REJECT_COUNT_
} PlanReject;

const char *plan_reject_name(PlanReject r);

/* Bytes per parameter of the linear weights' states as this input keeps them: the
 * recipe's Table 1a figure with the stack's main-gradient dtype (--main-grad) and
 * the moments' (--moment-dtype) applied, unsharded. per (optional, STATE_COUNT_ entries) receives each state's
 * share. */
double plan_state_bytes_per_param(const PlanInput *in, double *per);
/* Is the recipe's transposed FP8 weight copy (Recipe.fp8_col) needed on the plan's GPU? Hopper's FP8 GEMMs are TN-only,
 * so dgrad reads a transposed copy; Blackwell's (SM 10.x, 11.x, 13.x) take every layout, and a per-tensor scale is the
 * same for a tensor and its transpose, so the row-wise copy serves both GEMMs (Transformer Engine creates the
 * transpose only where is_non_tn_fp8_gemm_supported() is false). Block and channel scales run along one axis: those
 * recipes keep a column-wise copy on every GPU. */
int plan_fp8_col_held(const PlanInput *in);
/* Does the plan's GPU run FP8 GEMMs TN-only (SM 8.9, 9.x, 12.x: a GEMM that reads an operand along its other axis
 * needs a transposed FP8 copy of it), as plan_fp8_col_held decides for the weights? 0 on Blackwell (SM 10.x, 11.x,
 * 13.x) and on a host. */
int plan_fp8_tn_only(const PlanInput *in);
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

/* The first of plan_validate's checks, in its order (plan_validate runs it, then the rest): the model, the GPU,
 * the settings (efficiencies, overlaps, fractions, launch floor, enums in range), the padded vocabulary, the layout
 * sizes for 0, heads and FFN by tp, and the layers per stage (pp, vpp, first and last stage layers). Of cp, dp and mbs
 * it reads only whether they are 0, of recompute and sharding only whether they are in range, and nothing of ep,
 * etp, world, seq, gbs, stage_view or the MoE settings: when it rejects an input, plan_validate rejects for the same
 * reason every input that differs from it only in those (sweep_run counts such a block of layouts at once).
 * REJECT_NONE: the rest of plan_validate decides. */
PlanReject plan_validate_head(const PlanInput *in, Err *e);

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
 * (CO_EP_COUNTS) only on a host profile (gpu->host) too, the experts' amax reductions over their EDP and ETP groups
 * (CO_EDP_AMAX_AR, CO_ETP_AMAX_AR) only on this executor's stack (fusion fp8plan). Text views list what
 * applies; CSV / JSON views list every row (a stable schema). */
int plan_term_applies(const Plan *p, MemTermId id);
int plan_coll_applies(const Plan *p, CollectiveId id);

/* 1 when state st of state set s is sharded over the DP x CP group under in->sharding (before the
 * group size is considered: over one rank nothing is): dist-opt the recipe's shard_mask; ZeRO-1/2
 * m and v, the master unless the GEMMs read it (recipe_master_is_compute), ZeRO-2 the gradient too;
 * ZeRO-3 everything. A sharded state of E elements holds ceil(E / (dp * cp)) on every rank. */
int plan_state_sharded(const PlanInput *in, const StateSet *s, StateId st);

#ifdef __cplusplus
}
#endif
#endif
