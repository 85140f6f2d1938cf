/* tests/unit/test_exec_plan_moe.c — the executor's tensors against the planner's terms for models with experts
 * (exec/model/model_moe.c), as test_exec_plan.c does for dense ones: the expert states byte for byte, expert
 * parallelism's share of them, the FP8 and block-scaled experts' copies and scales, and the catalog's MoE rows
 * shrunk. */
#include <stdlib.h>

#include "exec/measure/plan_link.h"
#include "exec/model/model.h"
#include "support/exec_plan_check.h"
#include "support/fixtures.h"
#include "test.h"

static Catalog *cat;

static int compare_mb(const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro)
{
    return exec_plan_mismatches(cat, m, recipe, mbs, micro);
}

static int compare(const ModelSpec *m, const char *recipe, uint32_t mbs) { return compare_mb(m, recipe, mbs, 1); }

/* Models with experts (exec/model/model_moe.c) on megatron-bf16, the MoE layers' recipe today: the expert
 * weights, their master, gradients and Adam moments in the plan's expert terms, the router among the other
 * parameters (a sigmoid router's bias in router_bias: an FP32 buffer, no states), the shared experts and dense
 * first layers among the GEMM weights — byte for byte. The catalog's Mixtral (softmax, no shared experts) shrunk, at its 8 experts and
 * at a real expert count (64 and 128 experts, top-8), gpt-oss (128 experts, top-4), and the fixtures with
 * a dense first layer and a shared expert (softmax and sigmoid). Worked by hand for the first: hidden 64,
 * 4 heads of 16 with 1 KV head, expert FFN 14336 x 64 / 4096 = 224, 8 experts, 2 layers. Expert elements
 * per layer 8 x (2 x 224 x 64 + 64 x 224) = 344,064, two layers 688,128: weights BF16 1,376,256 B,
 * master, gradients, m, v FP32 2,752,512 B each. GEMM weights: QKV (4 + 2) x 16 x 64 = 6,144 and proj
 * 64 x 64 = 4,096 per layer, 20,480 in all: 40,960 B in BF16. */
static void test_moe_terms_match_plan(void)
{
    ExecOverrides o = {.layers = 2, .hidden = 64, .heads = 4, .seq = 32, .vocab = 256};
    ModelSpec m;
    Err e;
    CHECK_EQ_INT(exec_model(catalog_model(cat, "mixtral-8x7b"), &o, &m, &e), ST_OK);
    CHECK_EQ_INT(m.expert_ffn, 224);
    PlanInput in;
    static Plan p;
    uint64_t have[ARENA_TERMS];
    exec_plan_in(cat, &m, "megatron-bf16", 1, 1, &in);
    CHECK(!exec_plan_layout(&in, &p, have));
    CHECK_EQ_U64(have[MT_WEIGHT_EXPERT], 1376256);
    CHECK_EQ_U64(have[MT_MASTER_EXPERT], 2752512);
    CHECK_EQ_U64(have[MT_GRAD_EXPERT], 2752512);
    CHECK_EQ_U64(have[MT_OPTIM_M_EXPERT], 2752512);
    CHECK_EQ_U64(have[MT_OPTIM_V_EXPERT], 2752512);
    CHECK_EQ_U64(have[MT_WEIGHT_GEMM], 40960);
    /* expert parallelism, dp 4 x ep 2: 4 of the 8 experts a rank, 344,064 weights: BF16 688,128 B, FP32 master,
     * gradient and moments 1,376,256 B each, as the plan's per-GPU terms; the router (8 x 64) stays whole */
    exec_plan_dp(&in, 4, SHARD_NONE);
    in.ep = 2;
    uint64_t other1 = have[MT_WEIGHT_OTHER];
    CHECK(!exec_plan_layout(&in, &p, have));
    CHECK_EQ_U64(have[MT_WEIGHT_EXPERT], 688128);
    CHECK_EQ_U64(have[MT_MASTER_EXPERT], 1376256);
    CHECK_EQ_U64(have[MT_OPTIM_V_EXPERT], 1376256);
    CHECK_EQ_U64(have[MT_WEIGHT_OTHER], other1);
    for (int t = MT_WEIGHT_EXPERT; t <= MT_OPTIM_V_EXPERT; t++) CHECK_EQ_U64(have[t], p.mem[t].bytes);
    CHECK_EQ_INT(compare(&m, "megatron-bf16", 1), 0);
    CHECK_EQ_INT(compare(&m, "megatron-bf16", 2), 0);
    /* te-fp8 (the experts in FP8, one scaling record set per expert, as the plan counts them): FP8 copies of
     * the 688,128 expert weights in both layouts, 1 B each = 1,376,256 B (fp8_expert); of the 20,480 GEMM
     * weights 20,480 B row-wise and 20,480 B transposed. FP8 tensors: 2 layers x (QKV + proj + 8 experts x
     * (FC1, FC2)) = 36 (no shared experts: no FC1/FC2 records), each with x, w and dy records of scale,
     * scale_inv and a 1024-row amax history: 36 x 3 x (2 + 1024) x 4 B = 443,232 B; te-fp8-current's history
     * is one row: 36 x 3 x 3 x 4 = 1,296 B. */
    static const struct {
        const char *recipe;
        uint64_t scale;
    } f8[] = {{"te-fp8", 443232}, {"te-fp8-current", 1296}};
    for (int i = 0; i < 2; i++) {
        exec_plan_in(cat, &m, f8[i].recipe, 1, 1, &in);
        CHECK(!exec_plan_layout(&in, &p, have));
        CHECK_EQ_U64(have[MT_FP8_EXPERT], 1376256);
        CHECK_EQ_U64(have[MT_FP8_ROWWISE], 20480);
        CHECK_EQ_U64(have[MT_FP8_COLWISE], 20480);
        CHECK_EQ_U64(have[MT_SCALE_GEMM], f8[i].scale);
        CHECK_EQ_INT(compare(&m, f8[i].recipe, 1), 0);
        CHECK_EQ_INT(compare(&m, f8[i].recipe, 2), 0);
    }
    /* deepseek-v3 (block-scaled experts, model_moe_block.c): the same FP8 expert copies, 1,376,256 B; block
     * scales of each expert's (N, K) on its own: FC1 (448, 64) 4 x 1 blocks and its transpose 4, FC2 (64, 224)
     * 1 x 2 and 2: 12 per expert x 8 experts x 2 layers = 192, plus QKV (96, 64) and proj (64, 64) one block a
     * copy: 4 a layer, 8: 200 FP32 scales, 800 B. act_moe per layer (B·T 128 tokens, R = 256 rows, E 8, C 64,
     * Fe 224): the router's probabilities 128·8·4 = 4,096, its BF16 input 128·64·2 = 16,384, the FC1 input in
     * FP8 256·64 = 16,384 with its tiles 64 x (8 + ⌊248/128⌋ = 9) x 4 = 2,304, FC1's BF16 output 256·448·2 =
     * 229,376, the FC2 input 256·224 = 57,344 with 224·9·4 = 8,064, and this executor's routing data (the plan of
     * its stack, fp8plan): per (token, slot) an expert id, a combine weight and a row, 256·12 = 3,072, and the 8
     * int32 counts, 32: 337,056; 2 layers 674,112, planned and held. (Megatron-Core's, which the plan counted before
     * for this stack too: top-k ids and weights 128·2·8 = 2,048 and per row a weight and two maps 256·12 = 3,072,
     * 339,072 a layer.) */
    exec_plan_in(cat, &m, "deepseek-v3", 4, 1, &in);
    CHECK(!exec_plan_layout(&in, &p, have));
    CHECK_EQ_U64(have[MT_FP8_EXPERT], 1376256);
    CHECK_EQ_U64(have[MT_SCALE_BLOCK], 800);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, 800);
    CHECK_EQ_U64(p.mem[MT_ACT_MOE].bytes, 674112);
    CHECK_EQ_U64(have[MT_ACT_MOE], 674112);
    CHECK_EQ_U64(have[MT_TRANSIENT], p.mem[MT_TRANSIENT].bytes);
    CHECK_EQ_INT(compare(&m, "deepseek-v3", 4), 0);
    static const struct {
        const char *model;
        uint32_t experts, topk;
    } real[] = {{"mixtral-8x7b", 64, 8}, {"mixtral-8x7b", 128, 8}, {"gpt-oss-120b", 0, 0}, {"qwen3-30b-a3b", 0, 0}};
    for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
        ExecOverrides r = {.layers = 2, .hidden = 64, .heads = 8, .seq = 16, .vocab = 256, .expert_ffn = 32};
        r.experts = real[i].experts, r.topk = real[i].topk;
        CHECKF(exec_model(catalog_model(cat, real[i].model), &r, &m, &e) == ST_OK, "%s: %s", real[i].model, e.msg);
        CHECKF(compare(&m, "megatron-bf16", 1) == 0, "%s, %u experts", real[i].model, m.experts);
        CHECKF(compare(&m, "te-fp8", 1) == 0, "%s, %u experts, te-fp8", real[i].model, m.experts);
        CHECKF(compare(&m, "deepseek-v3", 1) == 0, "%s, %u experts, deepseek-v3", real[i].model, m.experts);
    }
    for (int r = ROUTER_SOFTMAX; r <= ROUTER_SIGMOID; r++) { /* a dense first layer, a shared expert */
        ExecOverrides d = {.layers = 3, .hidden = 32, .heads = 4, .seq = 16, .vocab = 64, .experts = 4, .topk = 2};
        d.expert_ffn = 16, d.dense_layers = 1, d.dense_layers_set = 1;
        CHECK_EQ_INT(exec_model(catalog_model(cat, "mixtral-8x7b"), &d, &m, &e), ST_OK);
        m.shared_experts = 1, m.router = (RouterType)r;
        if (r == ROUTER_SIGMOID) m.router_groups = 2, m.router_group_topk = 1;
        CHECK_EQ_INT(compare_mb(&m, "megatron-bf16", 2, 2), 0);
        CHECK_EQ_INT(compare_mb(&m, "te-fp8", 2, 2), 0); /* the shared expert's FP8 records too */
        CHECK_EQ_INT(compare_mb(&m, "te-fp8-current", 2, 2), 0);
        CHECK_EQ_INT(compare_mb(&m, "deepseek-v3", 2, 2), 0);
    }
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_moe_terms_match_plan);
    free(cat);
    return test_summary();
}
