/* planner/sweep.h — enumerate layouts and recipes for N GPUs, keep the best.
 *
 * For every stack (base's when none are listed) and recipe, TP in the powers of
 * two dividing N (up to max_tp), PP in the divisors of N/TP, virtual stages
 * 1..max_vpp (PP > 1 only), CP in the powers of two up to max_cp, DP =
 * N/(TP*PP*CP), micro-batch in the powers of two up to max_mbs, recompute
 * none/selective/full/op and the distributed optimizer off/on — and for models with
 * experts EP in the powers of two dividing the experts and tp*cp*dp/etp with ETP 1 or
 * TP (op-level recompute is not searched for MoE / MLA / MTP models) — the sweep builds
 * a plan (plan_build_memory_first: a layout over the memory limit gets its
 * collectives and time only when the list of nearest misses could keep it, so a
 * step time that would overflow is counted as a reject only for layouts that fit
 * or are kept). When the layers do not divide over PP x VPP it tries
 * uneven pipelines instead: the middle stages hold ceil(L/PP) or floor(L/PP)
 * layers and the first and last split the rest (Llama-3-405B's 126 layers on
 * 16 stages: 7 + 14 x 8 + 7). Invalid layouts are counted by reason, layouts
 * over the memory limit (base.max_mem_frac of capacity) as not fitting, and the
 * rest are ranked by predicted tokens/s (with open choices, base.mem_unknown, a
 * layout is over the limit when its low end is: an UNCERTAIN plan is ranked
 * with the ones that fit, its verdict saying which it is; the nearest misses
 * are ordered by their high end, total_bytes); the best `k` are kept in the caller's
 * array (only an index of k ints is allocated while the sweep runs). The global batch is fixed for the whole sweep
 * (base.gbs, or about 2M tokens when 0) so throughputs compare. */
#ifndef FP8PLAN_PLANNER_SWEEP_H
#define FP8PLAN_PLANNER_SWEEP_H

#include "planner/plan.h"
#include "planner/sweep_rank.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most GPUs a sweep plans for (2^20, ten times the largest clusters of 2025); sweep_run refuses more. */
enum { SWEEP_MAX_GPUS = 1u << 20 };

typedef struct {
    PlanInput base; /* model, gpu, seq, gbs, dropout, attn, sp, overheads, efficiencies; layout ignored */
    const Recipe *const *recipes;
    int nrecipes;
    const StackSpec *const *stacks; /* applied in turn (plan_input_use_stack); NULL/0: base as it is */
    int nstacks;
    /* Called after each stack is applied (e.g. to put back options the user set explicitly); may be NULL. */
    void (*after_stack)(PlanInput *in, void *ctx);
    void *after_stack_ctx;
    uint32_t gpus;
    uint32_t max_tp;    /* 0 = the GPU's gpus_per_node */
    uint32_t max_vpp;   /* 0 = 8 */
    uint32_t max_cp;    /* 0 = 8 */
    uint32_t max_mbs;   /* 0 = 8 */
    int fold;           /* fold near-duplicates (planner/sweep_rank.h) into the faster plan */
    uint32_t *variants; /* NULL, or room for k counts: near-duplicates folded into each kept plan */
    Plan *nearest;      /* NULL, or room for k_nearest plans that do not fit, the closest to fitting first */
    int k_nearest;
    /* Optional: called with every plan that fits (or may: UNCERTAIN), in evaluation order (the HTML scatter). */
    void (*on_fit)(const Plan *p, void *ctx);
    void *on_fit_ctx;
} SweepSpec;

typedef struct {
    uint64_t evaluated; /* layouts x recipes built or rejected */
    uint64_t valid;     /* built */
    uint64_t oom;       /* built but over the memory limit */
    uint64_t rejected[REJECT_COUNT_];
    uint64_t folded; /* plans that fit but were folded into a near-duplicate */
    int n_nearest;   /* plans in SweepSpec.nearest */
} SweepStats;

/* Called every few thousand evaluations with the count so far and the total. */
typedef void (*SweepProgress)(uint64_t done, uint64_t total, void *ctx);

/* Number of evaluations sweep_run will make. */
uint64_t sweep_size(const SweepSpec *s);

/* The global batch every layout uses: base.gbs, or about 2M tokens (2^21 / seq, rounded up) when 0. */
uint64_t sweep_gbs(const SweepSpec *s);

/* Run the sweep. `top` has room for k plans; *n_top receives how many were
 * kept (sorted best first). ST_USAGE when gpus is 0 or no recipe is given. */
Status sweep_run(const SweepSpec *s, Plan *top, int k, int *n_top, SweepStats *stats, SweepProgress progress, void *ctx,
                 Err *e);

#ifdef __cplusplus
}
#endif
#endif
