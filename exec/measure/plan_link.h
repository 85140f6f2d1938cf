/* exec/measure/plan_link.h — where a run meets the planner: the model the run
 * trains (a catalog row with its sizes overridden) and the PlanInput of one
 * GPU running it the way the executor does. The executor then takes the Plan
 * itself (model_create): its ModelSpec, Recipe and sizes, and its bytes per
 * term by MemTermId. */
#ifndef FP8PLAN_EXEC_MEASURE_PLAN_LINK_H
#define FP8PLAN_EXEC_MEASURE_PLAN_LINK_H

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes that replace a catalog model's (0 = keep the model's). */
typedef struct {
    uint32_t layers, hidden, heads, kv_heads, ffn, seq;
    uint32_t vocab;
    /* models with experts: routed experts, top-k, the expert FFN width (else it follows the hidden size as
     * ffn does) and the dense first layers (dense_layers_set: given, 0 allowed). Where the catalog's
     * group-limited routing does not fit the experts and top-k given, it is dropped (every expert eligible). */
    uint32_t experts, topk, expert_ffn, dense_layers;
    int dense_layers_set;
    /* multi-token prediction depths (mtp_layers_set: given, 0 allowed; 0 to 16 as the catalog's column) */
    uint32_t mtp_layers;
    int mtp_layers_set;
} ExecOverrides;

/* The model the executor trains: `base` with the overrides applied, every
 * column (norm, mlp, positions, tied embeddings, biases) kept. The FFN width
 * follows the hidden size (ffn_hidden · hidden / base hidden) unless given;
 * the KV heads follow the heads at the model's ratio (heads · kv_heads / base
 * heads: 1 for multi-head models) unless given; head_dim = hidden / heads; the
 * learned position table, when the model has one, has seq rows. ST_USAGE
 * naming the flag for sizes that do not fit together. */
Status exec_model(const ModelSpec *base, const ExecOverrides *o, ModelSpec *out, Err *e);

/* A PlanInput for one GPU running the model as the executor does: TP = PP =
 * CP = DP = 1, micro-batch mbs, `microbatches` micro-batches per step (global
 * batch mbs · microbatches: gradient accumulation), materialized attention
 * (the executor's attention stores its probabilities), no dropout, no
 * recompute, no sharding, no fragmentation allowance (one arena, allocated
 * once) — then, when stack is not NULL, that software stack's settings
 * (plan_input_use_stack; `fp8plan run` passes stacks.csv's "fp8plan" row, which
 * describes this executor, unless --stack names another). */
void exec_plan_input(PlanInput *in, const ModelSpec *m, const GpuSpec *gpu, const Recipe *r, uint32_t mbs,
                     uint32_t microbatches, const StackSpec *stack);

/* Data parallelism over dp ranks: in->dp = dp and the global batch dp times
 * one rank's (each rank runs the micro-batches exec_plan_input gave), the
 * states sharded as `sharding` says (SHARD_NONE, SHARD_ZERO1 or SHARD_DIST_OPT
 * run; exec/model/model_shard.c). */
void exec_plan_dp(PlanInput *in, uint32_t dp, Sharding sharding);

#ifdef __cplusplus
}
#endif
#endif
