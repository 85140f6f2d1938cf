/* tests/unit/test_plan_stage.c — the plan of a given pipeline stage (PlanInput.stage_view): its memory
 * terms and what it sends, worked by hand on the tiny GPT (tests/support/fixtures.c) with 4 layers over
 * 4 stages, one layer each; mbs 1, seq 4, gbs 4: 4 micro-batches a step. */
#include "planner/plan.h"
#include "support/fixtures.h"
#include "test.h"

static ModelSpec M;
static GpuSpec G;
static Recipe R;

/* The input of stage s (s < 0: the default, the most-loaded stage). */
static PlanInput stage_input(int s)
{
    M = fx_tiny_model();
    M.layers = 4;
    G = fx_gpu();
    R = fx_bf16_recipe("megatron-bf16", 0); /* BF16 weights, FP32 gradients and states */
    PlanInput in = fx_input(&M, &G, &R);
    in.pp = 4, in.gbs = 4;
    in.stage_view = s < 0 ? 0 : (uint32_t)s + 1;
    return in;
}

static Plan stage_plan(int s)
{
    PlanInput in = stage_input(s);
    Plan p;
    Err e;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    return p;
}

/* Per layer: linear weights QKV 3 x 8 x 8 = 192, proj 64, FC1 32 x 8 = 256, FC2 256: 768; other: two
 * LayerNorms (weight and bias) 4 x 8 = 32, biases 24 + 8 + 32 + 8 = 72: 104. Stage 0 adds the token
 * embedding 10 x 8 = 80 (vocabulary 10, no padding) and the positions 4 x 8 = 32: 216 elements, BF16
 * 432 B, FP32 gradient 864 B. A middle stage: 104, 208 B. Stage 3 adds the final LayerNorm 16 and its
 * copy of the tied head 80: 200, 400 B (gradient 800). Linear weights: 768 x 2 = 1,536 B on every stage. */
static void test_stage_memory(void)
{
    const uint64_t other[4] = {432, 208, 208, 400};
    for (int s = 0; s < 4; s++) {
        Plan p = stage_plan(s);
        CHECK_EQ_U64(p.stage, (uint64_t)s);
        CHECK_EQ_U64(p.stage_layers, 1);
        CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 1536);
        CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].bytes, other[s]);
        CHECK_EQ_U64(p.mem[MT_GRAD_OTHER].bytes, 2 * other[s]);
    }
    /* 1F1B keeps pp − s micro-batches in flight on stage s: 4, 3, 2, 1 layers' activations */
    Plan p0 = stage_plan(0), p1 = stage_plan(1), p3 = stage_plan(3);
    CHECK(p0.mem[MT_ACT_LAYER_HP].bytes > 0);
    CHECK_EQ_U64(3 * p0.mem[MT_ACT_LAYER_HP].bytes, 4 * p1.mem[MT_ACT_LAYER_HP].bytes);
    CHECK_EQ_U64(p0.mem[MT_ACT_LAYER_HP].bytes, 4 * p3.mem[MT_ACT_LAYER_HP].bytes);
    /* the default: the most-loaded stage, here stage 0 (more other weights and activations) */
    Plan d = stage_plan(-1);
    CHECK_EQ_U64(d.stage, 0);
    CHECK_EQ_U64(d.total_bytes, p0.total_bytes);
}

/* A micro-batch's activation (or its gradient) is tokens 1 x 4 x hidden 8 in BF16 = 64 B. The first stage
 * sends 4 activations a step (256 B), the last 4 gradients (256 B), a middle stage both: 8 sends, 512 B.
 * The tied embedding's gradient (80 elements, FP32: 320 B) is all-reduced between stages 0 and 3 (2 ranks:
 * 2 x (2 − 1)/2 x 320 = 320 B sent); a middle stage holds neither copy and takes no part. */
static void test_stage_sends(void)
{
    const uint64_t calls[4] = {4, 8, 8, 4};
    for (int s = 0; s < 4; s++) {
        Plan p = stage_plan(s);
        const Collective *pp = &p.coll[CO_PP_P2P], *emb = &p.coll[CO_EMB_GRAD_AR];
        CHECK_EQ_U64(pp->payload_bytes, 64);
        CHECK_EQ_U64(pp->calls, calls[s]);
        CHECK_EQ_U64(pp->step_bytes, 64 * calls[s]);
        CHECK_EQ_U64(emb->calls, s == 0 || s == 3 ? 1 : 0);
        CHECK_EQ_U64(emb->step_bytes, s == 0 || s == 3 ? 320 : 0);
        CHECK_EQ_U64(p.pp_comm_bytes, 64 * calls[s] + (s == 0 || s == 3 ? 320 : 0));
    }
}

/* Multi-token prediction over stages (issue 42): the tiny GPT untied, rotary positions, one MTP depth. The depth
 * sits on the last stage with its own copy of the embedding for its next tokens' lookup, kept in sync with the
 * first stage's by the embedding group's all-reduce as a tied head is (Megatron-Core core_v0.16.0: GPTModel builds
 * the embedding where mtp_process; finalize_model_grads' _allreduce_word_embedding_grads reduces it for
 * mtp_num_layers > 0, tied or not). No linear biases (DeepSeek's). Other weights by hand (no positions with RoPE):
 * a layer's two LayerNorms 32; stage 0 adds the embedding 80: 112 elements, BF16 224 B; a middle stage 32, 64 B;
 * stage 3 its layer 32, the MTP depth's layer 32 and its enorm, hnorm and final LayerNorm 3 x 16 = 48, the final
 * LayerNorm 16, the untied LM head 80 and the MTP lookup's embedding copy 80: 288, BF16 576 B (FP32 gradient
 * 1,152 B). Linear weights on
 * stage 3: 2 layers x 768 + eh_proj 8 x 16 = 1,664, BF16 3,328 B. The embedding gradient all-reduce: 80 FP32 =
 * 320 B between stages 0 and 3 (2 ranks: 2 x (2 − 1)/2 x 320 = 320 B sent), once a step; none without MTP. */
static void test_stage_mtp(void)
{
    const uint64_t other[4] = {224, 64, 64, 576};
    for (int mtp = 0; mtp <= 1; mtp++)
        for (int s = 0; s < 4; s++) {
            PlanInput in = stage_input(s);
            M.tied_embeddings = 0, M.linear_bias = 0, M.pos = POS_ROPE, M.mtp_layers = (uint32_t)mtp;
            Plan p;
            Err e;
            CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
            const Collective *emb = &p.coll[CO_EMB_GRAD_AR];
            int end = s == 0 || s == 3;
            CHECK_EQ_U64(emb->calls, mtp && end ? 1 : 0);
            CHECK_EQ_U64(emb->step_bytes, mtp && end ? 320 : 0);
            if (!mtp) continue;
            CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].bytes, other[s]);
            CHECK_EQ_U64(p.mem[MT_GRAD_OTHER].bytes, 2 * other[s]);
            CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, s == 3 ? 3328 : 1536);
        }
}

/* A stage past the pipeline is refused with the stages there are. */
static void test_stage_refused(void)
{
    PlanInput in = stage_input(4); /* stage_view 5 */
    Plan p;
    Err e;
    CHECK_EQ_INT(plan_build(&in, &p, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "stage 4: --pp 4 has stages 0 .. 3");
}

int main(void)
{
    RUN(test_stage_memory);
    RUN(test_stage_sends);
    RUN(test_stage_mtp);
    RUN(test_stage_refused);
    return test_summary();
}
