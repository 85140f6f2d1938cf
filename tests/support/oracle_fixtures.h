/* tests/support/oracle_fixtures.h — the inputs the planner oracles
 * (tests/unit/test_oracle_*.c) work their arithmetic on, typed in once.
 * Every hand-derived value in those files depends on these numbers: change
 * one and recompute the comments that use it. */
#ifndef FP8PLAN_TESTS_SUPPORT_ORACLE_FIXTURES_H
#define FP8PLAN_TESTS_SUPPORT_ORACLE_FIXTURES_H

#include "planner/plan.h"
#include "support/fixtures.h"
#include "test.h"

/* plan_build() of in; a failed check naming the planner's message when it refuses (the test's own counters:
 * test.h's are per file). */
static inline Plan ox_build(const PlanInput *in)
{
    Plan p;
    Err e = {0};
    CHECKF(plan_build(in, &p, &e) == ST_OK, "%s", e.msg);
    return p;
}

/* A tiny GPT: 4 layers, hidden 8, 2 heads (2 kv heads) of 4, FFN 16 (GeLU), RMSNorm (8 weights),
 * learned positions (seq_len x 8), tied embeddings, no biases. At tp 1 its linear weights per layer
 * are QKV 24 x 8 = 192, proj 8 x 8 = 64, FC1 16 x 8 = 128, FC2 8 x 16 = 128: 512. */
static inline ModelSpec ox_tiny(uint32_t vocab, uint32_t seq_len)
{
    ModelSpec m = {.name = "oracle-tiny",
                   .layers = 4,
                   .hidden = 8,
                   .ffn_hidden = 16,
                   .heads = 2,
                   .kv_heads = 2,
                   .head_dim = 4,
                   .vocab = vocab,
                   .seq_len = seq_len,
                   .norm = NORM_RMSNORM,
                   .mlp = MLP_GELU,
                   .pos = POS_LEARNED,
                   .tied_embeddings = 1,
                   .linear_bias = 0};
    return m;
}

/* Megatron-style BF16 (support/fixtures.h's fx_bf16_recipe): BF16 weights and GEMMs, FP32 master,
 * gradient, m and v (18 B/param) for every parameter; FP32 gradient reduction, BF16 parameter gathers,
 * TP collectives and saved GEMM inputs; SM 8.0. shard_mask: the states the distributed optimizer shards. */
static inline Recipe ox_bf16(unsigned shard_mask) { return fx_bf16_recipe("oracle-bf16", shard_mask); }

/* A GPU too large to be the bottleneck of a tiny model: SM 10.0 (every recipe runs), hbm bytes as given,
 * 1 TB/s HBM, 1 and 2 PFLOP/s BF16 and FP8, 100 GB/s in a node of 8, 10 GB/s between. */
static inline GpuSpec ox_big_gpu(uint64_t hbm_bytes)
{
    GpuSpec g = {.name = "g",
                 .sm = 100,
                 .hbm_bytes = hbm_bytes,
                 .hbm_bw = 1e12,
                 .flops_bf16 = 1e15,
                 .flops_fp8 = 2e15,
                 .flops_fp32 = 1e13,
                 .intra_bw = 1e11,
                 .inter_bw = 1e10,
                 .gpus_per_node = 8};
    return g;
}

/* A small mixture-of-experts model: 2 layers (the first dense, FFN dense_ffn), hidden 256, 2 heads of 128 (no
 * GQA), vocabulary 1000, seq 512, RMSNorm, SwiGLU, RoPE, untied; 8 routed experts of FFN 128, top 2, 1 shared
 * expert, softmax router. */
static inline ModelSpec ox_moe(uint32_t dense_ffn)
{
    ModelSpec m = {.name = "oracle-moe",
                   .layers = 2,
                   .hidden = 256,
                   .ffn_hidden = dense_ffn,
                   .heads = 2,
                   .kv_heads = 2,
                   .head_dim = 128,
                   .vocab = 1000,
                   .seq_len = 512,
                   .norm = NORM_RMSNORM,
                   .mlp = MLP_SWIGLU,
                   .pos = POS_ROPE,
                   .experts = 8,
                   .experts_per_token = 2,
                   .shared_experts = 1,
                   .expert_ffn = 128,
                   .dense_layers = 1,
                   .router = ROUTER_SOFTMAX};
    return m;
}

#endif
