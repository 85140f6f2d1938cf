/* planner/sweep_rank.h — the lists a sweep keeps: the best plans that fit, with near-duplicates folded
 * into the better one, and the plans that miss the GPU's memory by the least. Caller-owned arrays, no
 * malloc (like the sweep). */
#ifndef FP8PLAN_PLANNER_SWEEP_RANK_H
#define FP8PLAN_PLANNER_SWEEP_RANK_H

#include "planner/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Two plans are near-duplicates when they share the stack, recipe, TP, PP, CP, DP and micro-batch and
 * their tokens/s differ by at most SWEEP_NEAR_PCT % of the larger: they differ only in virtual stages,
 * uneven stage ends, recompute or sharding, and their throughput does not tell them apart. */
#define SWEEP_NEAR_PCT 2.0
int sweep_near_duplicate(const Plan *a, const Plan *b);

typedef struct {
    Plan *v;            /* room for k plans (slots) */
    uint32_t *variants; /* NULL, or k counts: near-duplicates folded into the plan of the same slot */
    int *order;         /* room for k slot numbers: the n kept plans, best first */
    int k, n;
} SweepList;

/* Keep p if it is among the k fastest (tokens/s, descending). With fold, a near-duplicate of a kept
 * plan does not take a place: the faster of the two stays and counts the other as a variant.
 * Returns 1 when p was folded into (or replaced) a kept plan. */
int sweep_keep_best(SweepList *l, const Plan *p, int fold);

/* Keep p if it is among the k plans closest to fitting (fewest bytes over the memory limit, max_mem_frac
 * of capacity; then tokens/s). A plan
 * with the same stack, recipe, TP, PP, CP, DP and micro-batch as a kept one and the same bytes (sharding over
 * one rank, say) is the same answer: only the better of the two is kept. */
void sweep_keep_nearest(SweepList *l, const Plan *p);

/* Could sweep_keep_nearest keep p, judged by its memory alone (its bytes over the limit)? 0 means it
 * would not: the sweep then skips the rest of p's plan (collectives, time), which only a kept plan shows. */
int sweep_nearest_may_keep(const SweepList *l, const Plan *p);

/* After the last plan: v[0..n) (and variants) in rank order. */
void sweep_list_finish(SweepList *l);

#ifdef __cplusplus
}
#endif
#endif
