/* tests/support/exec_plan_check.h — the executor's tensors against the planner's terms for one configuration,
 * shared by tests/unit/test_exec_plan.c (dense models, latent attention) and test_exec_plan_moe.c (experts). */
#ifndef FP8PLAN_TESTS_EXEC_PLAN_CHECK_H
#define FP8PLAN_TESTS_EXEC_PLAN_CHECK_H

#include <stdint.h>

#include "catalog/catalog.h"

/* Builds the Plan the way `fp8plan run` does (exec_plan_input with stacks.csv's fp8plan row on h100-sxm; `micro`
 * micro-batches of `mbs` sequences per step), lays out the executor's tensors (sizes only) and compares every term
 * the arena holds: equal byte for byte, the transient and the MoE saved tensors at most the plan's (a MoE or
 * latent-attention model's transient is its tests' to compare). Each mismatch is printed to stderr; returns how
 * many there were (a plan or layout that fails counts as one). */
int exec_plan_mismatches(const Catalog *cat, const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro);

#endif
