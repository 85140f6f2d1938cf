/* tests/support/exec_fixtures.h — tiny models, recipes, plans and token batches
 * shared by the executor's tests (static inline: each test binary takes what
 * it uses).
 *
 * The recipes here are the planner's Recipe, mirroring the catalog's rows
 * (models/recipes.csv) for the four recipes the executor runs — except
 * te-fp8's amax history, 16 instead of 1024 so a spike can be seen leaving the
 * window in a short test — plus an all-FP32 one for finite differences.
 * test_exec_train and test_exec_plan use the catalog's rows themselves. The
 * models are the planner's ModelSpec: a GPT-2-style one and a LLaMA-style one. */
#ifndef FP8PLAN_TESTS_EXEC_FIXTURES_H
#define FP8PLAN_TESTS_EXEC_FIXTURES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/compare.h"
#include "exec/measure/plan_link.h"
#include "exec/model/model.h"
#include "exec/backend/rng.h"
#include "test.h"

/* The CPU backend for a test that swaps some of its operations for recorders: a copy of its table in *bk, the
 * backend itself returned (the recorders call on to its functions; the test destroys it); NULL, and a failed
 * check naming why, when it cannot be made. */
static inline Backend *fx_cpu_copy(Backend *bk)
{
    Err e;
    Backend *cpu = NULL;
    if (backend_cpu_create(&cpu, &e)) {
        CHECKF(0, "%s", e.msg);
        return NULL;
    }
    *bk = *cpu;
    return cpu;
}

static inline void fx_states(StateSet *s, Dtype w, Dtype master, Dtype grad, Dtype m, Dtype v, unsigned scaled)
{
    s->dt[STATE_WEIGHT] = w;
    s->dt[STATE_MASTER] = master;
    s->dt[STATE_GRAD] = grad;
    s->dt[STATE_M] = m;
    s->dt[STATE_V] = v;
    s->scaled_mask = scaled;
}

/* "fp32", "megatron-bf16", "te-fp8", "te-fp8-current", "fp8lm", "msamp-o1", "deepseek-v3". */
static inline Recipe fx_recipe(const char *name)
{
    Recipe r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.other_name, sizeof r.other_name, "%s", name);
    r.min_sm = 80;
    r.comm_dp_grad = r.other_comm_dp_grad = DT_FP32; /* Megatron's collectives: FP32 gradients, BF16 otherwise */
    r.comm_param_gather = r.other_comm_param_gather = r.comm_tp_ag = r.comm_tp_rs = DT_BF16;
    Dtype A = !strcmp(name, "fp32") ? DT_FP32 : DT_BF16;
    r.gemm_fwd = r.gemm_bwd = r.saved_input = A;
    fx_states(&r.gemm, A, DT_FP32, DT_FP32, DT_FP32, DT_FP32, 0);
    r.other = r.gemm;
    r.fp8_row = r.fp8_col = DT_NONE;
    r.act_gran = r.weight_gran = GRAN_TENSOR;
    r.scaling = SCALING_NONE;
    r.amax_history = 0;
    if (!strcmp(name, "te-fp8") || !strcmp(name, "te-fp8-current") || !strcmp(name, "fp8lm") ||
        !strcmp(name, "msamp-o1")) {
        r.gemm_fwd = r.saved_input = r.fp8_row = r.fp8_col = DT_E4M3;
        r.gemm_bwd = DT_E5M2;
        r.scaling = SCALING_DELAYED;
        r.amax_history = 16;
        r.amax_reduce = AMAX_ALL;
        r.min_sm = 89;
        if (!strcmp(name, "te-fp8-current")) {
            r.scaling = SCALING_CURRENT;
            r.amax_history = 1;
        }
        if (!strcmp(name, "fp8lm")) { /* FP8-LM: FP16 master + FP8 grad + FP8 m + FP16 v, all scaled */
            fx_states(&r.gemm, DT_NONE, DT_FP16, DT_E4M3, DT_E4M3, DT_FP16,
                      1u << STATE_MASTER | 1u << STATE_GRAD | 1u << STATE_M | 1u << STATE_V);
            r.amax_history = 1;
        }
        if (!strcmp(name, "msamp-o1")) { /* MS-AMP O1: scaled FP16 weight (no master), scaled E4M3 grad, FP32 m, v */
            fx_states(&r.gemm, DT_FP16, DT_NONE, DT_E4M3, DT_FP32, DT_FP32, 1u << STATE_WEIGHT | 1u << STATE_GRAD);
            r.amax_history = 1;
            r.comm_dp_grad = DT_E4M3, r.comm_param_gather = DT_FP16;
        }
    }
    if (!strcmp(name, "deepseek-v3")) { /* E4M3 everywhere, 1x128 / 128x128 current scales, BF16 m and v */
        r.gemm_fwd = r.gemm_bwd = r.saved_input = r.fp8_row = r.fp8_col = DT_E4M3;
        r.act_gran = GRAN_1X128, r.weight_gran = GRAN_128X128;
        r.scaling = SCALING_CURRENT;
        r.amax_history = 1;
        r.min_sm = 90;
        fx_states(&r.gemm, DT_BF16, DT_FP32, DT_FP32, DT_BF16, DT_BF16, 0);
    }
    return r;
}

/* GPT-2 style: L=2, C=32, H=4, D=8, F=128, T=16, V=64 (layernorm, gelu, learned
 * positions, tied, with biases). */
static inline ModelSpec fx_gpt(void)
{
    ModelSpec m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "fx-gpt");
    m.layers = 2, m.hidden = 32, m.heads = m.kv_heads = 4, m.head_dim = 8, m.ffn_hidden = 128;
    m.vocab = 64, m.seq_len = 16;
    m.norm = NORM_LAYERNORM, m.mlp = MLP_GELU, m.pos = POS_LEARNED;
    m.tied_embeddings = 1, m.linear_bias = 1;
    return m;
}

/* LLaMA style: L=2, C=32, H=4 with KV=2 (grouped-query), D=8, F=48 (SwiGLU:
 * FC1 96 wide), T=16, V=64 (rmsnorm, swiglu, rope, untied, no biases). */
static inline ModelSpec fx_llama(void)
{
    ModelSpec m = fx_gpt();
    snprintf(m.name, sizeof m.name, "fx-llama");
    m.kv_heads = 2, m.ffn_hidden = 48;
    m.norm = NORM_RMSNORM, m.mlp = MLP_SWIGLU, m.pos = POS_ROPE;
    m.tied_embeddings = 0, m.linear_bias = 0;
    return m;
}

/* fx_llama with experts (exec/model/model_moe.c): block 0 dense (F=48), block 1 a MoE layer of 4 routed
 * experts of Fe=16 (SwiGLU: FC1 32 wide), top-2, one shared expert (S·Fe = 16) and a router of
 * type r (sigmoid: 2 groups, the top 1 group). */
static inline ModelSpec fx_moe(RouterType r)
{
    ModelSpec m = fx_llama();
    snprintf(m.name, sizeof m.name, "fx-moe-%s", r == ROUTER_SIGMOID ? "sigmoid" : "softmax");
    m.experts = 4, m.experts_per_token = 2, m.shared_experts = 1, m.expert_ffn = 16, m.dense_layers = 1;
    m.router = r;
    if (r == ROUTER_SIGMOID) m.router_groups = 2, m.router_group_topk = 1;
    return m;
}

/* Latent attention (DeepSeek-V2/V3, exec/model/model_mla.c) on fx_llama's blocks (or, moe: fx_moe's with the
 * sigmoid router, DeepSeek's): 4 heads of qk_nope 6 + qk_rope 4 = 10 for q and k, values of 6, a q latent of 16
 * (0 when q_lora is 0) and a kv latent of 12. */
static inline ModelSpec fx_mla(int moe, uint32_t q_lora)
{
    ModelSpec m = moe ? fx_moe(ROUTER_SIGMOID) : fx_llama();
    snprintf(m.name, sizeof m.name, "fx-mla%s", moe ? "-moe" : "");
    m.kv_heads = m.heads, m.head_dim = 10;
    m.q_lora_rank = q_lora, m.kv_lora_rank = 12, m.qk_nope_head_dim = 6, m.qk_rope_head_dim = 4, m.v_head_dim = 6;
    return m;
}

/* The executor's plan of a fixture (B = mbs sequences, `micro` micro-batches
 * per step on each of dp ranks, states sharded as `sharding` says, tp
 * tensor-parallel ranks (sequence-parallel) and pp stages, the vocabulary
 * padded to a multiple of 64 x tp) on the typed-in GPU. The model, recipe and
 * GPU are copied into static storage the plan points at (one plan at a time
 * per binary: the next call replaces them). */
static inline Status fx_plan_layout(const ModelSpec *m, const Recipe *r, uint32_t mbs, uint32_t micro, uint32_t dp,
                                    Sharding sharding, uint32_t tp, uint32_t pp, Plan *p, Err *e)
{
    static ModelSpec sm;
    static Recipe sr;
    static GpuSpec sg;
    sm = *m, sr = *r;
    memset(&sg, 0, sizeof sg); /* an H100 SXM-like GPU, as support/fixtures.h's fx_gpu */
    snprintf(sg.name, sizeof sg.name, "g");
    sg.sm = 90, sg.sms = 132, sg.hbm_bytes = 80ull << 30, sg.hbm_bw = 3.35e12, sg.flops_bf16 = 989e12;
    sg.flops_fp8 = 1979e12, sg.flops_fp32 = 67e12, sg.intra_bw = 450e9, sg.inter_bw = 50e9, sg.gpus_per_node = 8;
    PlanInput in;
    exec_plan_input(&in, &sm, &sg, &sr, mbs, micro, NULL); /* no stack: the planner's defaults */
    exec_plan_dp(&in, dp, sharding);
    in.vocab_pad = 64;
    in.tp = tp, in.pp = pp, in.sp = tp > 1; /* the executor's TP is sequence-parallel */
    return plan_build(&in, p, e);
}

static inline Status fx_plan_dp(const ModelSpec *m, const Recipe *r, uint32_t mbs, uint32_t micro, uint32_t dp,
                                Sharding sharding, Plan *p, Err *e)
{
    return fx_plan_layout(m, r, mbs, micro, dp, sharding, 1, 1, p, e);
}

/* tp tensor-parallel ranks and pp stages (dp 1, nothing sharded). */
static inline Status fx_plan_par(const ModelSpec *m, const Recipe *r, uint32_t mbs, uint32_t micro, uint32_t tp,
                                 uint32_t pp, Plan *p, Err *e)
{
    return fx_plan_layout(m, r, mbs, micro, 1, SHARD_NONE, tp, pp, p, e);
}

/* One rank (dp 1, nothing sharded). */
static inline Status fx_plan(const ModelSpec *m, const Recipe *r, uint32_t mbs, uint32_t micro, Plan *p, Err *e)
{
    return fx_plan_dp(m, r, mbs, micro, 1, SHARD_NONE, p, e);
}

/* Rank r of dp ranks without MPI: a single-rank communicator told it is rank r of dp (model_create's
 * collectives, FP8-LM's first copies, move nothing on it), the model of m and rc at micro-batch 2, ZeRO-1 when dp > 1; NULL (said on
 * stderr) when it cannot be built. fx_rank_drop frees the model and its communicator. */
static inline Model *fx_rank_model(Backend *bk, const ModelSpec *m, const Recipe *rc, int r, uint32_t dp)
{
    static Plan p;
    Err e;
    Comm *c = NULL;
    Model *md = NULL;
    if (fx_plan_dp(m, rc, 2, 1, dp, dp > 1 ? SHARD_ZERO1 : SHARD_NONE, &p, &e) || comm_single_create(&c, &e))
        return NULL;
    c->size = (int)dp, c->rank = r;
    if (model_create(&p, NULL, bk, c, &md, &e)) {
        fprintf(stderr, "  model_create rank %d: %s\n", r, e.msg);
        c->destroy(c);
        return NULL;
    }
    return md;
}

static inline void fx_rank_drop(Model *m)
{
    if (!m) return;
    Comm *c = m->comm;
    model_destroy(m);
    c->destroy(c);
}

/* A model of a fixture on bk: fx_plan, then model_create (h NULL: defaults). */
static inline Status fx_model(const ModelSpec *m, const Recipe *r, uint32_t mbs, uint32_t micro, const ModelHyper *h,
                              Backend *bk, Comm *comm, Model **out, Err *e)
{
    static Plan p;
    Status st = fx_plan(m, r, mbs, micro, &p, e);
    return st ? st : model_create(&p, h, bk, comm, out, e);
}

/* Random tokens in [0, V) and their successors as targets, for every
 * micro-batch of a step (model_step_tokens(m) each). */
static inline void fx_tokens(const Model *m, uint64_t seed, int32_t *in, int32_t *tgt)
{
    Rng r = {.s = seed};
    uint64_t n = model_step_tokens(m), T = m->seq, V = m->spec.vocab;
    for (uint64_t i = 0; i < n; i++) in[i] = (int32_t)rng_below(&r, V);
    for (uint64_t i = 0; i < n; i++) tgt[i] = (i + 1) % T ? in[i + 1] : (int32_t)rng_below(&r, V);
}

/* The comparison row called name; a failed check (and an empty row) when there is none. */
static inline const MeasureRow *fx_row(const Comparison *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->rows[i].name, name)) return &c->rows[i];
    CHECKF(0, "no row %s", name);
    static MeasureRow none;
    return &none;
}

#endif
