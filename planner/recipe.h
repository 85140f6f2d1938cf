/* planner/recipe.h — a precision recipe: which dtype every training state,
 * GEMM operand, collective and saved activation uses. One row of
 * models/recipes.csv; a user adds a recipe by adding a row.
 *
 * States are counted per parameter and split in two groups:
 *   gemm  — the weights of the linear layers inside transformer blocks (QKV,
 *           proj, FC1, FC2): the only tensors that get FP8 copies;
 *   other — everything else (token/position embeddings, LM head, norms,
 *           biases); their dtypes come from the recipe row named in the
 *           `other_params` column (FP8 recipes point at a BF16 recipe: MS-AMP
 *           and TE keep non-GEMM parameters on the high-precision path). */
#ifndef FP8PLAN_PLANNER_RECIPE_H
#define FP8PLAN_PLANNER_RECIPE_H

#include <stdint.h>

#include "fp8/dtype.h"
#include "fp8/granularity.h"
#include "planner/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The persistent per-parameter training states. */
typedef enum {
    STATE_WEIGHT = 0, /* working weight the step keeps (DT_NONE: GEMMs read the master or an FP8 copy) */
    STATE_MASTER,     /* master weight the optimizer updates (DT_NONE: the working weight is the master) */
    STATE_GRAD,       /* main gradient (accumulated across micro-batches) */
    STATE_M,          /* Adam first moment */
    STATE_V,          /* Adam second moment */
    STATE_COUNT_
} StateId;

typedef struct {
    Dtype dt[STATE_COUNT_];
    unsigned shard_mask;  /* bit (1u << StateId): states the distributed optimizer shards over DP x CP */
    unsigned scaled_mask; /* bit (1u << StateId): states that carry a per-tensor scaling record */
} StateSet;

typedef enum { SCALING_NONE = 0, SCALING_DELAYED, SCALING_CURRENT, SCALING_COUNT_ } ScalingMode;
/* Over which ranks amax values are reduced: none (block scales are local),
 * TP and CP only (Megatron tp_only_amax_red), or TP, CP and DP. */
typedef enum { AMAX_NONE = 0, AMAX_TP, AMAX_ALL, AMAX_REDUCE_COUNT_ } AmaxReduce;
/* The code that runs the recipe's FP8 linear layers (what its kernels cost beyond the GEMMs, planner/plan_kernels.c):
 *   none             no FP8 GEMMs;
 *   te               Transformer Engine's modules (and this project's executor): cuBLASLt per-tensor FP8 GEMMs,
 *                    casts fused into norms and cast+transpose, FP8 gradients staged in FP32 and committed once
 *                    per step;
 *   torchao          torchao Float8Linear, tensorwise: cuBLASLt through torch._scaled_mm, casts as the stack's
 *                    kernel list emits them;
 *   torchao-rowwise  torchao Float8Linear, rowwise: a CUTLASS row-wise-scaled GEMM in the forward, cuBLASLt with
 *                    an output-rescaling kernel in the backward (slow accumulation), every operand quantized again
 *                    along its other axis;
 *   msamp            MS-AMP's FP8 linear for Megatron: input amax in its own pass, the FP8 weight and input
 *                    transposed per backward, the FP8 gradient dequantized, summed and requantized per micro-batch. */
typedef enum { LIN_NONE = 0, LIN_TE, LIN_TORCHAO, LIN_TORCHAO_ROWWISE, LIN_MSAMP, LIN_IMPL_COUNT_ } Fp8Linear;

typedef struct {
    char name[SPEC_NAME_MAX];
    StateSet gemm;  /* linear-layer weights */
    StateSet other; /* embeddings, LM head, norms, biases (copied from the row named by other_name) */
    char other_name[SPEC_NAME_MAX];
    Dtype other_comm_dp_grad;      /* DP gradient and parameter-gather dtypes of the other params */
    Dtype other_comm_param_gather; /* (copied from the other_params row) */
    Dtype fp8_row;                 /* cached FP8 copy of each linear weight as stored, [out, in] (DT_NONE: none) */
    Dtype fp8_col;  /* cached FP8 transposed copy, [in, out]: Hopper FP8 GEMMs are TN-only, dgrad needs it (not held
                       where the GPU reads the row-wise copy transposed: plan_fp8_col_held) */
    Dtype gemm_fwd; /* format of x and w in FP8 GEMMs (DT_BF16: GEMMs stay BF16) */
    Dtype gemm_bwd; /* format of the output gradient dy in dgrad/wgrad */
    ScalingMode scaling;
    Granularity act_gran;    /* scale granularity of x and dy */
    Granularity weight_gran; /* scale granularity of w and its copies */
    uint32_t amax_history;   /* delayed scaling window (TE default 1024, Megatron 1) */
    AmaxReduce amax_reduce;
    Dtype comm_dp_grad;      /* DP gradient all-reduce / reduce-scatter */
    Dtype comm_param_gather; /* parameter all-gather after a sharded optimizer step */
    Dtype comm_tp_ag;        /* TP/SP all-gather of activations */
    Dtype comm_tp_rs;        /* TP/SP reduce-scatter (and all-reduce) of outputs and gradients */
    Dtype comm_ep_dispatch;  /* expert all-to-all that sends tokens (and output gradients) to the experts */
    Dtype comm_ep_combine;   /* expert all-to-all that returns expert outputs (and input gradients) */
    Dtype saved_input;       /* dtype of GEMM inputs saved for the weight gradient */
    Fp8Linear linear;        /* the code that runs the FP8 linear layers */
    uint32_t min_sm;         /* x 10: 89 = SM 8.9 */
    char source[SPEC_SOURCE_MAX];
} Recipe;

/* "weight", "master", "grad", "m", "v". */
const char *state_name(StateId s);
int state_parse(const char *s, StateId *out);
const char *scaling_name(ScalingMode m);
int scaling_parse(const char *s, ScalingMode *out);
const char *amax_reduce_name(AmaxReduce a);
int amax_reduce_parse(const char *s, AmaxReduce *out);
const char *fp8_linear_name(Fp8Linear l);
int fp8_linear_parse(const char *s, Fp8Linear *out);

/* 1 when the recipe runs its linear-layer GEMMs in FP8. */
int recipe_fp8_gemm(const Recipe *r);

/* 1 when the master is what the GEMMs read (no working weight and no FP8
 * row-wise copy): such a master can only be sharded by ZeRO-3. */
int recipe_master_is_compute(const StateSet *s, const Recipe *r);

/* Bytes per parameter of one state set with `dp_shards`-way sharding of the
 * states in shard_mask when `sharded` is set: the seed's Table 1a arithmetic.
 * states_out (optional, STATE_COUNT_ entries) receives each state's share.
 * FP8 copies are not states and are not included. */
double recipe_state_bytes_per_param(const StateSet *s, int sharded, uint32_t dp_shards, double *states_out);

/* Bytes per parameter of the cached FP8 copies (row-wise + transposed),
 * excluding block scales. */
unsigned recipe_fp8_copy_bytes_per_param(const Recipe *r);

#ifdef __cplusplus
}
#endif
#endif
