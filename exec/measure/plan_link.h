/* exec/measure/plan_link.h — where the executor meets the planner: the model the run
 * trains (a catalog row with its sizes overridden), the recipe row as the
 * executor's ExecRecipe, the shape from the Plan, the Plan's bytes per
 * executor term, and the measured-versus-planned rows of a finished run. */
#ifndef FP8PLAN_EXEC_PLAN_LINK_H
#define FP8PLAN_EXEC_PLAN_LINK_H

#include "exec/model/gpt.h"
#include "exec/measure/measure.h"
#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes that replace a catalog model's (0 = keep the model's). */
typedef struct {
    uint32_t layers, hidden, heads, ffn, seq;
    uint32_t vocab;
} ExecOverrides;

/* The model the executor trains: `base` with the overrides applied. The FFN
 * width follows the hidden size (ffn_hidden · hidden / base hidden) unless
 * given; head_dim = hidden / heads; the learned position table has seq rows.
 * ST_UNAVAILABLE for models the executor does not build (RMSNorm, SwiGLU,
 * rotary or no positions, grouped-query attention), ST_USAGE for bad sizes. */
Status exec_model(const ModelSpec *base, const ExecOverrides *o, ModelSpec *out, Err *e);

/* The planner's recipe row as the executor's recipe (then exec_recipe_check). */
Status exec_recipe_from_plan(const Recipe *r, ExecRecipe *out, Err *e);

/* A PlanInput for one GPU running the model as the executor does: TP = PP =
 * CP = DP = 1, micro-batch mbs, materialized attention (the executor's
 * attention stores its probabilities), no dropout, no recompute, no sharding,
 * no fragmentation allowance (one arena, allocated once). */
void exec_plan_input(PlanInput *in, const ModelSpec *m, const GpuSpec *gpu, const Recipe *r, uint32_t mbs);

/* The executor's shape for a built plan (vocabulary padded as the plan pads it). */
void exec_shape_from_plan(const Plan *p, GptShape *s);

/* The Plan's bytes for each executor term (0 for terms the plan lacks). */
void exec_planned_bytes(const Plan *p, uint64_t planned[TERM_COUNT]);

enum { EXEC_MAX_ROWS = MT_COUNT_ + TERM_COUNT + 8 };

/* One row per Plan memory term, one total per category (state, fp8_copy,
 * scale, activation: the high-water of what the run held), and one per
 * executor-only term: measured bytes from the arena, the check each row gets
 * (see measure.h), verdicts filled.
 * Returns the number of rows written to rows (≤ EXEC_MAX_ROWS); *failed
 * receives the number of failing rows. */
int exec_memory_rows(const Plan *p, const Gpt *g, MeasureRow *rows, int *failed);

#ifdef __cplusplus
}
#endif
#endif
