/* tests/unit/test_plan_korthikanti.c — activation memory against Korthikanti et
 * al. 2022 (arXiv 2205.05198), Table 2 and the Fig. 1 values quoted in
 * shared/reference/planner.md section 1.4 (16-bit activations, 1-byte dropout
 * masks, materialized attention, first pipeline stage):
 *   22B  (L48 h6144 a64, t8 p1 mbs4):     none 59.25 GiB, seq+sel 9.5625 GiB, full 4.50 GiB
 *   175B (L96 h12288 a96, t8 p8 v3 mbs1): none 66.84375 GiB, seq+sel 12.3515625 GiB
 * The planner itemizes two things the paper's formula leaves out, so each check
 * adds them explicitly: the fp32 mean/rstd every LayerNorm saves (8 B per token
 * and norm) and the embedding dropout mask on stage 0 (1 B per token and
 * hidden unit, per in-flight micro-batch). */
#include "planner/plan.h"
#include "support/fixtures.h"
#include "test.h"

static GpuSpec gpu; /* fx_gpu(), set by main */

static ModelSpec gpt(uint32_t layers, uint32_t hidden, uint32_t heads)
{
    ModelSpec m = {.name = "k",
                   .layers = layers,
                   .hidden = hidden,
                   .ffn_hidden = 4 * hidden,
                   .heads = heads,
                   .kv_heads = heads,
                   .head_dim = hidden / heads,
                   .vocab = 51200,
                   .seq_len = 2048,
                   .norm = NORM_LAYERNORM,
                   .mlp = MLP_GELU,
                   .pos = POS_LEARNED,
                   .tied_embeddings = 1,
                   .linear_bias = 1};
    return m;
}

/* Layer activations of stage 0 as Korthikanti counts them (the planner's layer
 * terms minus the embedding dropout mask, which the paper leaves out). */
static uint64_t layer_act(const Plan *p, uint64_t emb_mask)
{
    return p->mem[MT_ACT_LAYER_HP].bytes + p->mem[MT_ACT_LAYER_FP8].bytes + p->mem[MT_ACT_ATTN].bytes +
           p->mem[MT_ACT_MASK].bytes - emb_mask;
}

static const uint64_t GiB = 1ull << 30;

static void test_22b(void)
{
    ModelSpec m = gpt(48, 6144, 64);
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &gpu, in.recipe = &r;
    in.tp = 8, in.mbs = 4, in.gbs = 4, in.attn = ATTN_MATERIALIZED, in.dropout = 1;
    const uint64_t s = 2048, b = 4, h = 6144, a = 64, t = 8, L = 48, sbh = s * b * h;
    const uint64_t emb_mask_nosp = s * b * h, emb_mask_sp = s * b * h / t;
    Plan p;

    /* TP, no SP, no recompute: sbh(10 + 24/t + 5as/(ht)) per layer */
    in.sp = 0;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    uint64_t paper = L * (sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t);
    CHECK_EQ_U64(paper, 5925ull * GiB / 100); /* 59.25 GiB */
    CHECK_EQ_U64(layer_act(&p, emb_mask_nosp), paper + L * 2 * s * b * 8);

    /* TP + SP + selective recompute: 34 sbh/t per layer */
    in.sp = 1, in.recompute = RECOMPUTE_SELECTIVE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    paper = L * 34 * sbh / t;
    CHECK_EQ_U64(paper, 95625ull * GiB / 10000); /* 9.5625 GiB */
    CHECK_EQ_U64(layer_act(&p, emb_mask_sp), paper + L * 2 * s * b / t * 8);

    /* full recompute without SP: the layer inputs, 2 sbh per layer */
    in.sp = 0, in.recompute = RECOMPUTE_FULL;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    paper = L * 2 * sbh;
    CHECK_EQ_U64(paper, 45ull * GiB / 10); /* 4.50 GiB */
    CHECK_EQ_U64(layer_act(&p, emb_mask_nosp), paper);
}

static void test_175b_interleaved(void)
{
    ModelSpec m = gpt(96, 12288, 96);
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &gpu, in.recipe = &r;
    in.tp = 8, in.pp = 8, in.vpp = 3, in.mbs = 1, in.gbs = 16, in.attn = ATTN_MATERIALIZED, in.dropout = 1;
    const uint64_t s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
    /* first stage: L * (1 + (p-1)/(p v)) = 96 * 31/24 = 124 layer passes in flight, touching 11 micro-batches */
    const uint64_t units = 124, mbs_in_flight = 11;
    Plan p;
    in.sp = 0;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.stage, 0);
    uint64_t paper = units * (sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t);
    CHECK_EQ_U64(paper, 6684375ull * GiB / 100000); /* 66.84375 GiB */
    CHECK_EQ_U64(layer_act(&p, sbh * mbs_in_flight), paper + units * 2 * s * b * 8);

    in.sp = 1, in.recompute = RECOMPUTE_SELECTIVE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    paper = units * 34 * sbh / t;
    CHECK_EQ_U64(paper, 123515625ull * GiB / 10000000); /* 12.3515625 GiB */
    CHECK_EQ_U64(layer_act(&p, sbh / t * mbs_in_flight), paper + units * 2 * s * b / t * 8);
}

static void test_1f1b_in_flight(void)
{
    /* non-interleaved 1F1B: stage 0 holds min(pp, micro-batches) micro-batches, the last stage one */
    ModelSpec m = gpt(96, 12288, 96);
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &gpu, in.recipe = &r;
    in.tp = 8, in.pp = 4, in.mbs = 1;
    Plan p4, p2;
    in.gbs = 64;
    CHECK(plan_build(&in, &p4, NULL) == ST_OK);
    in.gbs = 2; /* only 2 micro-batches: stage 0 holds 2 */
    CHECK(plan_build(&in, &p2, NULL) == ST_OK);
    CHECK_EQ_U64(p4.mem[MT_ACT_LAYER_HP].bytes, 2 * p2.mem[MT_ACT_LAYER_HP].bytes);
}

int main(void)
{
    gpu = fx_gpu();
    RUN(test_22b);
    RUN(test_175b_interleaved);
    RUN(test_1f1b_in_flight);
    return test_summary();
}
