/* exec/recipe.h — what the training step does for one precision recipe.
 *
 * A recipe is data (a row of models/recipes.csv, read by the planner); this is
 * the executor's view of it, field for field the planner's Recipe: the dtype of
 * every persistent state, split between the block linear weights (QKV, proj,
 * FC1, FC2: "gemm") and every other parameter (embeddings, LM head, norms,
 * biases: "other"); which states carry a per-tensor scaling record; the cached
 * FP8 weight copies; the GEMM formats and how FP8 scales are chosen. The step
 * is written once against these fields, so any row whose combination the
 * executor implements runs, and the others are refused with the reason
 * (exec_recipe_check). */
#ifndef FP8PLAN_EXEC_RECIPE_H
#define FP8PLAN_EXEC_RECIPE_H

#include <stdint.h>

#include "exec/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    EXEC_SCALING_NONE = 0, /* no FP8 GEMMs */
    EXEC_SCALING_DELAYED,  /* scale from an amax history (TE DelayedScaling) */
    EXEC_SCALING_CURRENT,  /* scale from this step's amax, computed before the cast (TE Float8CurrentScaling) */
} ExecScaling;

/* The persistent per-parameter states (the planner's StateId order). */
typedef enum { ES_WEIGHT = 0, ES_MASTER, ES_GRAD, ES_M, ES_V, ES_COUNT } ExecStateId;

typedef struct {
    Dtype dt[ES_COUNT]; /* DT_NONE = not kept (weight: GEMMs read the master's FP8 copies; master: the
                           working weight is the master) */
    unsigned scaled;    /* bit (1u << ExecStateId): states with a scaling record {scale, scale_inv, amax} */
} ExecStates;

typedef struct {
    char name[48];
    ExecStates gemm;   /* block linear weights */
    ExecStates other;  /* embeddings, LM head, norms, biases */
    Dtype act;         /* activations, and non-FP8 GEMM operands: DT_BF16 (or DT_FP32 for exact checks) */
    Dtype fp8_row;     /* cached FP8 copy (N, K) of each linear weight for fprop, or DT_NONE */
    Dtype fp8_col;     /* cached FP8 transposed copy (K, N) for dgrad (Hopper is TN only), or DT_NONE */
    Dtype gemm_fwd;    /* x and w of the block GEMMs: DT_E4M3, or act (no FP8) */
    Dtype gemm_bwd;    /* dy: DT_E5M2 (hybrid) or DT_E4M3 with FP8; act otherwise */
    Dtype saved_input; /* GEMM inputs kept for wgrad: act, or the FP8 transposed copy (gemm_fwd) */
    ExecScaling scaling;
    Granularity act_gran, weight_gran; /* GRAN_TENSOR (the only one the executor runs today) */
    uint32_t amax_history;             /* delayed scaling window (≥ 1) */
    AmaxAlgo amax_algo;                /* TE default: max */
    int margin;                        /* TE default: 0 */
} ExecRecipe;

/* 1 when the block GEMMs run in FP8. */
static inline int exec_recipe_fp8(const ExecRecipe *r) { return dtype_is_fp8(r->gemm_fwd); }

/* 1 when state s of a set carries a scaling record. */
static inline int exec_state_scaled(const ExecStates *s, ExecStateId id)
{
    return s->dt[id] != DT_NONE && ((s->scaled >> id) & 1u);
}

/* ST_OK when the executor implements this combination; otherwise ST_UNAVAILABLE
 * (a legal recipe the executor does not run yet, e.g. block scaling) or ST_USAGE
 * (an inconsistent one), naming the recipe and the field. */
Status exec_recipe_check(const ExecRecipe *r, Err *e);

#ifdef __cplusplus
}
#endif
#endif
