/* tests/support/exec_plan_check.h — the executor's tensors against the planner's terms for one configuration,
 * shared by tests/unit/test_exec_plan.c (dense models, latent attention) and test_exec_plan_moe.c (experts). */
#ifndef FP8PLAN_TESTS_EXEC_PLAN_CHECK_H
#define FP8PLAN_TESTS_EXEC_PLAN_CHECK_H

#include <stdint.h>

#include "catalog/catalog.h"
#include "exec/model/arena.h"

/* Builds the Plan the way `fp8plan run` does (exec_plan_input with stacks.csv's fp8plan row on h100-sxm; `micro`
 * micro-batches of `mbs` sequences per step), lays out the executor's tensors (sizes only) and compares every term
 * the arena holds: equal byte for byte, the transient and the MoE saved tensors at most the plan's (a MoE or
 * latent-attention model's transient is its tests' to compare). Each mismatch is printed to stderr; returns how
 * many there were (a plan or layout that fails counts as one). */
/* exec_plan_input as `fp8plan run` calls it (stacks.csv's fp8plan row on h100-sxm, `micro` micro-batches of `mbs`
 * sequences a step) for the catalog's recipe of that name; a name not in it leaves in->recipe NULL, which
 * plan_build refuses. */
void exec_plan_in(const Catalog *cat, const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro,
                  PlanInput *in);

/* Builds in's Plan into *p and lays out the executor's tensors for it (sizes only): the bytes of each arena term in
 * have. Returns 0, or 1 with the plan's or the layout's error printed to stderr. */
int exec_plan_layout(const PlanInput *in, Plan *p, uint64_t have[ARENA_TERMS]);

int exec_plan_mismatches(const Catalog *cat, const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro);

#endif
