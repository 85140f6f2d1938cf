/* tests/support/exec_fixtures.h — tiny models, recipes and token batches shared
 * by the executor's tests (static inline: each test binary takes what it uses).
 *
 * The recipes here mirror the catalog's rows (models/recipes.csv) for the four
 * recipes the executor runs — except te-fp8's amax history, 16 instead of 1024
 * so a spike can be seen leaving the window in a short test — plus an all-FP32
 * one for finite differences. test_exec_train and test_exec_plan use the
 * catalog's rows themselves. */
#ifndef FP8PLAN_TESTS_EXEC_FIXTURES_H
#define FP8PLAN_TESTS_EXEC_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/model/gpt.h"
#include "exec/rng.h"

static inline void fx_states(ExecStates *s, Dtype w, Dtype master, Dtype grad, Dtype m, Dtype v, unsigned scaled)
{
    s->dt[ES_WEIGHT] = w;
    s->dt[ES_MASTER] = master;
    s->dt[ES_GRAD] = grad;
    s->dt[ES_M] = m;
    s->dt[ES_V] = v;
    s->scaled = scaled;
}

/* "fp32", "megatron-bf16", "te-fp8", "te-fp8-current", "fp8lm". */
static inline ExecRecipe fx_recipe(const char *name)
{
    ExecRecipe r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    Dtype A = !strcmp(name, "fp32") ? DT_FP32 : DT_BF16;
    r.act = r.gemm_fwd = r.gemm_bwd = r.saved_input = A;
    fx_states(&r.gemm, A, DT_FP32, DT_FP32, DT_FP32, DT_FP32, 0);
    r.other = r.gemm;
    r.fp8_row = r.fp8_col = DT_NONE;
    r.act_gran = r.weight_gran = GRAN_TENSOR;
    r.amax_algo = AMAX_ALGO_MAX;
    if (!strcmp(name, "te-fp8") || !strcmp(name, "te-fp8-current") || !strcmp(name, "fp8lm")) {
        r.gemm_fwd = r.saved_input = r.fp8_row = r.fp8_col = DT_E4M3;
        r.gemm_bwd = DT_E5M2;
        r.scaling = EXEC_SCALING_DELAYED;
        r.amax_history = 16;
        if (!strcmp(name, "te-fp8-current")) {
            r.scaling = EXEC_SCALING_CURRENT;
            r.amax_history = 1;
        }
        if (!strcmp(name, "fp8lm")) { /* FP8-LM: FP16 master + FP8 grad + FP8 m + FP16 v, all scaled */
            fx_states(&r.gemm, DT_NONE, DT_FP16, DT_E4M3, DT_E4M3, DT_FP16,
                      1u << ES_MASTER | 1u << ES_GRAD | 1u << ES_M | 1u << ES_V);
            r.amax_history = 1;
        }
    }
    return r;
}

/* L=2, C=32, H=4, F=128, T=16, B=4, V=64 (tied, with biases). */
static inline GptShape fx_shape(void)
{
    GptShape s = {.layers = 2,
                  .hidden = 32,
                  .heads = 4,
                  .ffn = 128,
                  .seq = 16,
                  .batch = 4,
                  .vocab = 64,
                  .vocab_padded = 64,
                  .tied = 1,
                  .biases = 1};
    return s;
}

/* Random tokens in [0, V) and their successors as targets. */
static inline void fx_tokens(const GptShape *s, uint64_t seed, int32_t *in, int32_t *tgt)
{
    Rng r = {.s = seed};
    uint64_t n = (uint64_t)s->batch * s->seq;
    for (uint64_t i = 0; i < n; i++) in[i] = (int32_t)rng_below(&r, s->vocab);
    for (uint64_t i = 0; i < n; i++) tgt[i] = (i + 1) % s->seq ? in[i + 1] : (int32_t)rng_below(&r, s->vocab);
}

#endif
