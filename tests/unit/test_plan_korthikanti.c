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
#include <string.h>

#include "planner/plan.h"
#include "planner/plan_internal.h"
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

/* GPT-175B (L96 h12288 a96) at tp 8, pp x vpp, micro-batch 1, gbs 16, materialized attention, dropout. */
static PlanInput gpt175b(ModelSpec *m, Recipe *r, uint32_t pp, uint32_t vpp)
{
    *m = gpt(96, 12288, 96);
    *r = fx_bf16_recipe("bf16", 0);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = &gpu, in.recipe = r;
    in.tp = 8, in.pp = pp, in.vpp = vpp, in.mbs = 1, in.gbs = 16, in.attn = ATTN_MATERIALIZED, in.dropout = 1;
    return in;
}

static void test_175b_interleaved(void)
{
    ModelSpec m;
    Recipe r;
    PlanInput in = gpt175b(&m, &r, 8, 3);
    const uint64_t s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
    /* first stage: L * (1 + (p-1)/(p v)) = 96 * 31/24 = 124 layer passes in flight (31 chunks of 4 layers).
     * Embedding masks: one per micro-batch whose chunk 0 is held. Megatron's interleaved order runs the
     * forwards in rounds of 8 micro-batches through chunk 0, then 1, then 2; a micro-batch's chunk 0 is freed
     * by its last backward, 2 x 8 = 16 backwards after its first. The 31 forwards before the first backward are
     * micro-batches 0-7 on chunks 0, 1, 2 and 8-14 on chunk 0 (15 masks); the first backward frees chunk 2 of
     * micro-batch 0 (no mask), and the next forward, chunk 0 of 15, makes 16 masks: all 16 micro-batches of the
     * step (gbs 16, mbs 1). */
    const uint64_t units = 124, mbs_in_flight = 16;
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

/* The embedding masks when not every micro-batch is held: the same model at pp 4, vpp 2 (24 layers a stage, chunks
 * of 12), gbs 16. Stage 0 warms up with (4 - 1) x 2 + (2 - 1) x 4 = 10 forwards and runs 1 more before its first
 * backward: 11 chunks = 132 layer passes = 96 x (1 + 3/8). Forwards 0-10 are micro-batches 0-3 on chunk 0, 0-3 on
 * chunk 1, 4-6 on chunk 0 (7 masks). Then one forward, one backward: backward 0 frees chunk 1 of micro-batch 0,
 * forward 11 is chunk 0 of micro-batch 7 (8 masks); forwards 12-15 are chunk 1 of 4-7 (no mask) while backwards
 * 1-3 free chunk 1 of 1-3; backward 4 frees the first mask (chunk 0 of 0) before forward 16 adds chunk 0 of 8.
 * The peak is 8 = 2 x pp masks, not the ceil(11 / 2) = 6 micro-batches that 11 chunks would fill. */
static void test_interleaved_masks_two_rounds(void)
{
    ModelSpec m;
    Recipe r;
    PlanInput in = gpt175b(&m, &r, 4, 2);
    const uint64_t s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h, units = 132;
    Plan p;
    in.sp = 0;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.stage, 0);
    uint64_t paper = units * (sbh * 10 + sbh * 24 / t + 5 * a * s * s * b / t);
    CHECK_EQ_U64(layer_act(&p, sbh * 8), paper + units * 2 * s * b * 8);
}

/* plan_inflight_mbs on every kind of stage, traced along Megatron's order by hand (the plans above reach only
 * stage 0, whose warm-up always exceeds 2 pp):
 *   pp 1: 1 (gradient accumulation runs the micro-batches one after another).
 *   1F1B, pp 4: stage s holds pp - s, at most m: 4 (m 8) and 2 (m 2) on stage 0, 1 on stage 3.
 *   pp 4, vpp 2, m 16: stage 0 8 (test_interleaved_masks_two_rounds). Stage 2 warms up with 1 x 2 + 4 = 6
 *     forwards (0-3 on chunk 0, 0-1 on chunk 1); then one forward, one backward: forwards 6-7 are chunk 1 of 2-3,
 *     8-10 chunk 0 of 4-6 (7 masks) while backwards 0-3 free chunk 1 of 0-3; backward 4 frees chunk 0 of 0
 *     before forward 11: 7 = its warm-up + 1 (< 2 pp). Stage 3 warms up with 4 (chunk 0 of 0-3); forwards 4-7
 *     are chunk 1 of 0-3, each freed by the backward after it; forward 8 is chunk 0 of 4 (5), then backward 4
 *     frees chunk 0 of 0: 5. With m 4 stage 0 holds all 4.
 *   pp 8, vpp 2, m 32: stage 4 3 x 2 + 8 + 1 = 15 (< 16), stage 7 9, stage 0 16 = 2 pp. */
static void test_inflight_mbs_by_stage(void)
{
    const struct {
        uint64_t pp, vpp, m;
        uint32_t stage;
        uint64_t want;
    } cases[] = {
        {1, 1, 8, 0, 1},  {4, 1, 8, 0, 4}, {4, 1, 2, 0, 2},   {4, 1, 8, 3, 1},  {4, 2, 16, 0, 8},  {4, 2, 16, 2, 7},
        {4, 2, 16, 3, 5}, {4, 2, 4, 0, 4}, {8, 2, 32, 4, 15}, {8, 2, 32, 7, 9}, {8, 2, 32, 0, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Geo g;
        memset(&g, 0, sizeof g);
        g.pp = cases[i].pp, g.vpp = cases[i].vpp, g.m = cases[i].m;
        uint64_t got = plan_inflight_mbs(&g, cases[i].stage);
        CHECKF(got == cases[i].want, "pp %llu vpp %llu m %llu stage %u: %llu micro-batches, expected %llu",
               (unsigned long long)g.pp, (unsigned long long)g.vpp, (unsigned long long)g.m, cases[i].stage,
               (unsigned long long)got, (unsigned long long)cases[i].want);
    }
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
    RUN(test_interleaved_masks_two_rounds);
    RUN(test_1f1b_in_flight);
    RUN(test_inflight_mbs_by_stage);
    return test_summary();
}
