/* tests/unit/test_oracle_memory.c — sharded training state, the tied LM head
 * on the last pipeline stage, TP-only amax reduction and the attention output's gradient in the working set,
 * worked by hand.
 *
 * An independent oracle: every expected byte count is arithmetic on the model
 * written out in the comments, never a value the planner produced.
 *
 * The model (tp 1): 4 layers, hidden 8, 2 heads of 4 (no GQA), FFN 16 (GeLU),
 * vocabulary 16 (vocab_pad 1), seq 4, RMSNorm (8 weights each), learned
 * positions (4 x 8), tied embeddings, no biases.
 *   linear weights per layer: QKV 24 x 8 = 192, proj 8 x 8 = 64, FC1 16 x 8 = 128,
 *   FC2 8 x 16 = 128: 512; x 4 layers = 2048
 *   other parameters (pp 1): 4 layers x 2 norms x 8 = 64, token embedding 16 x 8 = 128,
 *   positions 4 x 8 = 32, final norm 8 = 232 (tied: no separate LM head at pp 1)
 * With dp 3 neither count divides: a shard holds ceil(2048 / 3) = 683 (not 682)
 * linear and ceil(232 / 3) = 78 (not 77) other elements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

#define BIT(s) (1u << STATE_##s)

static PlanInput input(const ModelSpec *m, const GpuSpec *g, const Recipe *r, uint32_t dp, Sharding sh)
{
    PlanInput in;
    plan_input_defaults(&in);
    in.model = m, in.gpu = g, in.recipe = r;
    in.dp = dp, in.gbs = 2 * dp, in.sharding = sh, in.vocab_pad = 1;
    return in;
}

/* expected elements of the ten state terms (weight, master, gradient, m, v; linear and other) */
typedef struct {
    uint64_t w, wo, ma, mao, g, go, m, mo, v, vo;
} States;

static void check_states(const Plan *p, States want, const char *what)
{
    static const MemTermId ids[10] = {MT_WEIGHT_GEMM,  MT_WEIGHT_OTHER, MT_MASTER_GEMM,  MT_MASTER_OTHER,
                                      MT_GRAD_GEMM,    MT_GRAD_OTHER,   MT_OPTIM_M_GEMM, MT_OPTIM_M_OTHER,
                                      MT_OPTIM_V_GEMM, MT_OPTIM_V_OTHER};
    const uint64_t exp[10] = {want.w, want.wo, want.ma, want.mao, want.g, want.go, want.m, want.mo, want.v, want.vo};
    static const char *const names[10] = {"weight_gemm", "weight_other", "master_gemm", "master_other",
                                          "grad_gemm",   "grad_other",   "adam_m_gemm", "adam_m_other",
                                          "adam_v_gemm", "adam_v_other"};
    for (int i = 0; i < 10; i++) {
        uint64_t n = p->mem[ids[i]].elements, b = p->mem[ids[i]].bytes;
        CHECKF(n == exp[i], "%s: %s holds %llu elements, expected %llu", what, names[i], (unsigned long long)n,
               (unsigned long long)exp[i]);
        /* bytes: BF16 weights 2 B, every other state FP32 4 B */
        CHECKF(b == exp[i] * (i < 2 ? 2 : 4), "%s: %s is %llu bytes, expected %llu", what, names[i],
               (unsigned long long)b, (unsigned long long)(exp[i] * (i < 2 ? 2 : 4)));
    }
}

/* 2048 linear and 232 other elements, sharded 3 ways: 683 and 78 per GPU (ceil). */
enum { LIN = 2048, OTH = 232, LIN3 = 683, OTH3 = 78 };

static void test_sharding_modes_dp3(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(BIT(M) | BIT(V)); /* this distributed optimizer shards m and v only */
    Plan p;
    Err e = {0};

    PlanInput in = input(&m, &g, &r, 3, SHARD_NONE);
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    check_states(&p, (States){LIN, OTH, LIN, OTH, LIN, OTH, LIN, OTH, LIN, OTH}, "none");
    CHECK_EQ_U64(p.params_gpu, LIN + OTH);
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_AR].calls, 1); /* replicated states: one gradient all-reduce */
    CHECK_EQ_U64(p.coll[CO_DP_PARAM_AG].calls, 0);

    in.sharding = SHARD_DIST_OPT; /* the recipe's shard_mask: m and v */
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    check_states(&p, (States){LIN, OTH, LIN, OTH, LIN, OTH, LIN3, OTH3, LIN3, OTH3}, "dist-opt");
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_GEMM].shards, 3);
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].shards, 1);

    in.sharding = SHARD_ZERO1; /* master, m, v (the master is not what the GEMMs read) */
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    check_states(&p, (States){LIN, OTH, LIN3, OTH3, LIN, OTH, LIN3, OTH3, LIN3, OTH3}, "zero1");

    in.sharding = SHARD_ZERO2; /* + gradients */
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    check_states(&p, (States){LIN, OTH, LIN3, OTH3, LIN3, OTH3, LIN3, OTH3, LIN3, OTH3}, "zero2");
    /* sharded optimizer: gradients reduce-scattered, parameters gathered once. Payload: FP32
     * gradients (2048 + 232) x 4 = 9120 B, bus 9120 - ceil(9120 / 3) = 6080; BF16 parameters
     * 2280 x 2 = 4560 B, bus 4560 - 1520 = 3040 */
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_AR].calls, 0);
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_RS].payload_bytes, 9120);
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_RS].bus_bytes, 6080);
    CHECK_EQ_U64(p.coll[CO_DP_PARAM_AG].bus_bytes, 3040);
    CHECK_EQ_U64(p.coll[CO_DP_PARAM_AG].calls, 1);

    in.sharding = SHARD_ZERO3; /* + working weights */
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    check_states(&p, (States){LIN3, OTH3, LIN3, OTH3, LIN3, OTH3, LIN3, OTH3, LIN3, OTH3}, "zero3");
    /* parameters gathered before each micro-batch's forward and backward: 2 x m = 2 x 2 */
    CHECK_EQ_U64(p.coll[CO_DP_PARAM_AG].calls, 4);
}

/* Transient working set (tok 4, tp 1: no SP):
 *   backward temporaries dX and d(residual) 2 x 4 x 8 x 2 = 128 B and the gradient of the widest linear
 *   output: QKV's 24 (wider than FC1's 16) -> 4 x 24 x 2 = 192 B; 320 B in all; the last stage's loss
 *   (bf16 logits and fp32 copies beyond the saved softmax: the default 10 B per logit less 4)
 *   4 x 16 x 6 = 384 B wins without ZeRO-3.
 * ZeRO-3 (FSDP) adds, for the current and the prefetched layer, its gathered weights (BF16 2 B), a BF16
 *   gradient (2 B) and the reduce-scatter input in the reduction dtype (FP32 4 B) per parameter:
 *   2 x (512 x 8 + 16 x (2 + 2 + 4)) = 2 x 4224 = 8448 B -> 320 + 8448 = 8768 B.
 * With FP8 copies (E4M3 row-wise and transposed) on Hopper (SM 9.0: FP8 GEMMs are TN-only, dgrad reads the
 *   transposed copy) ZeRO-3 keeps none persistent; each gathered layer also holds its two copies (+2 B per
 *   linear weight: 512 x 10 + 128 = 5248 per layer, 10496 for two), and the widest FP8 output gradient
 *   (QKV's) in both layouts adds 2 x 4 x 24 = 192 B: 320 + 192 + 10496 = 11008 B.
 * On Blackwell (SM 10.0: FP8 GEMMs in every layout) a per-tensor scale serves the weight and its transpose, so
 *   the row-wise copy is the only one: ZeRO-2 holds LIN = 2048 B of it and no transposed copy; ZeRO-3's gathered
 *   layer holds +1 B per linear weight: 2 x (512 x 9 + 128) = 2 x 4736 = 9472 -> 320 + 192 + 9472 = 9984 B.
 *   A block-scaled weight (1 x 32 blocks along a row) cannot be read transposed: its column-wise copy stays,
 *   LIN = 2048 B, on Blackwell too. */
static void test_zero3_prefetch_transient(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(BIT(MASTER) | BIT(M) | BIT(V));
    Plan p;
    PlanInput in = input(&m, &g, &r, 3, SHARD_ZERO2);
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 384);
    in.sharding = SHARD_ZERO3;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 8768);

    Recipe f = r;
    f.fp8_row = f.fp8_col = DT_E4M3, f.gemm_fwd = DT_E4M3, f.gemm_bwd = DT_E5M2;
    f.scaling = SCALING_DELAYED, f.amax_history = 4, f.amax_reduce = AMAX_ALL, f.min_sm = 89;
    in.recipe = &f;
    static const struct {
        uint32_t sm;
        Granularity wg;
        uint64_t col, zero3_transient;
    } gpu_case[] = {
        {90, GRAN_TENSOR, LIN, 11008}, /* Hopper: both copies */
        {100, GRAN_TENSOR, 0, 9984},   /* Blackwell, per-tensor: the row-wise copy read both ways */
        {100, GRAN_1X32, LIN, 0},      /* Blackwell, 1 x 32 blocks: the column-wise copy stays (ZeRO-2 only) */
    };
    for (size_t i = 0; i < sizeof gpu_case / sizeof *gpu_case; i++) {
        g.sm = gpu_case[i].sm, f.weight_gran = gpu_case[i].wg;
        in.sharding = SHARD_ZERO2;
        CHECK(plan_build(&in, &p, NULL) == ST_OK);
        CHECKF(p.mem[MT_FP8_ROWWISE].bytes == LIN && p.mem[MT_FP8_COLWISE].bytes == gpu_case[i].col,
               "SM %u case %zu: row-wise %llu, column-wise %llu", gpu_case[i].sm, i,
               (unsigned long long)p.mem[MT_FP8_ROWWISE].bytes, (unsigned long long)p.mem[MT_FP8_COLWISE].bytes);
        if (!gpu_case[i].zero3_transient) continue;
        in.sharding = SHARD_ZERO3;
        CHECK(plan_build(&in, &p, NULL) == ST_OK);
        CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes, 0);
        CHECK_EQ_U64(p.mem[MT_FP8_COLWISE].bytes, 0);
        CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, gpu_case[i].zero3_transient);
    }
}

/* The tied LM head. Vocabulary 1024 (so the last stage's logits make it the heavier stage), pp 2:
 *   stage 0 other: 2 layers x 16 norm + embedding 1024 x 8 + positions 32 = 8256
 *   last stage:    2 layers x 16 norm + final norm 8 + Megatron's copy of the embedding
 *                  1024 x 8 for the LM head = 8232
 * The last stage is reported: its logits alone (transient 4 x 1024 x 6 = 24576 B, FP32 softmax
 * 16384 B) outweigh stage 0's extra micro-batch of activations.
 * The first and last stage then sum their embedding gradients: FP32 8192 x 4 = 32768 B, once.
 * At pp 1 the LM head is the embedding itself: other = 64 + 8192 + 32 + 8 = 8296; untied it is a
 * second 8192: 16488. */
static void test_tied_lm_head_on_last_stage(void)
{
    ModelSpec m = ox_tiny(1024, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(BIT(MASTER) | BIT(M) | BIT(V));
    Plan p;
    PlanInput in = input(&m, &g, &r, 1, SHARD_NONE);
    in.pp = 2;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p.stage, 1);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].elements, 8232);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].bytes, 8232 * 2);
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_OTHER].bytes, 8232 * 4);
    CHECK_EQ_U64(p.params_gpu, 1024 + 8232); /* 2 layers x 512 linear weights */
    CHECK_EQ_U64(p.coll[CO_EMB_GRAD_AR].calls, 1);
    CHECK_EQ_U64(p.coll[CO_EMB_GRAD_AR].payload_bytes, 32768);
    CHECK_EQ_U64(p.coll[CO_EMB_GRAD_AR].ranks, 2);

    in.pp = 1;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].elements, 8296);
    CHECK_EQ_U64(p.coll[CO_EMB_GRAD_AR].calls, 0);
    m.tied_embeddings = 0;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].elements, 16488);
    in.pp = 2; /* untied, pp 2: the last stage holds its own LM head, no embedding sync */
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].elements, 8232);
    CHECK_EQ_U64(p.coll[CO_EMB_GRAD_AR].calls, 0);
}

/* A custom recipe, typed as a recipes.csv row, that reduces amax over TP (and CP) only. */
static const char recipes_csv[] =
    "name,weight,fp8_rowwise,fp8_colwise,master,grad,adam_m,adam_v,dist_opt_shards,scaled_states,other_params,"
    "gemm_fwd,gemm_bwd,scaling,act_granularity,weight_granularity,amax_history,amax_reduce,dp_grad_comm,"
    "param_gather_comm,tp_allgather_comm,tp_reducescatter_comm,ep_dispatch_comm,ep_combine_comm,saved_gemm_input,"
    "fp8_linear,min_sm,source\n"
    "base,bf16,none,none,fp32,fp32,fp32,fp32,master+m+v,none,base,bf16,bf16,none,tensor,tensor,0,none,fp32,bf16,"
    "bf16,bf16,bf16,bf16,bf16,none,8.0,test\n"
    "fp8-tp-amax,bf16,e4m3,e4m3,fp32,fp32,fp32,fp32,master+m+v,none,base,e4m3,e5m2,delayed,tensor,tensor,16,tp,"
    "fp32,bf16,e4m3,bf16,bf16,bf16,e4m3,te,8.9,test\n";

/* Layout tp 2 x cp 2 x dp 2, seq 8 (divisible by 2 cp and, per CP rank, by tp), 2 micro-batches.
 * TP-only: the amax all-reduce spans tp x cp = 4 ranks; over everything it spans 2 x 2 x 2 = 8.
 * Per micro-batch a forward and a backward reduction: 2 x 2 = 4 calls. Payload: 4 linears x 4
 * layers x (2 + 1) fp32 / 2 = 4 x 4 x 12 / 2 = 96 B. With dp > 1 the plan warns that TP-only
 * reduction lets DP replicas' scales drift. */
static void test_tp_only_amax_custom_recipe(void)
{
    Catalog *c = calloc(1, sizeof *c);
    Err e = {0};
    CHECKF(catalog_parse_recipes(c, recipes_csv, strlen(recipes_csv), "custom.csv", &e) == ST_OK, "%s", e.msg);
    const Recipe *r = catalog_recipe(c, "fp8-tp-amax");
    CHECK(r != NULL);
    if (!r) {
        free(c);
        return;
    }
    CHECK_EQ_INT(r->amax_reduce, AMAX_TP);
    ModelSpec m = ox_tiny(16, 8);
    GpuSpec g = ox_big_gpu(1ull << 40);
    PlanInput in = input(&m, &g, r, 2, SHARD_NONE);
    in.tp = 2, in.cp = 2, in.seq = 8, in.gbs = 4;
    Plan p;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].ranks, 4);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].calls, 4);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].payload_bytes, 96);
    CHECK(p.advice_mask & (1u << ADV_TP_ONLY_AMAX));

    Recipe all = *r;
    all.amax_reduce = AMAX_ALL;
    in.recipe = &all;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].ranks, 8);
    CHECK(!(p.advice_mask & (1u << ADV_TP_ONLY_AMAX)));

    in.recipe = r, in.dp = 1, in.gbs = 2; /* one replica: nothing can drift, no warning */
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_AMAX_AR].ranks, 4);
    CHECK(!(p.advice_mask & (1u << ADV_TP_ONLY_AMAX)));
    free(c);
}

/* Block scales (DeepSeek-V3 style 128 x 128 weight blocks): every linear weight here is smaller than one
 * block, so each FP8 copy of it (row-wise and transposed; the BF16 working weight has none) carries one
 * FP32 scale: 4 linears x 4 layers x 2 copies = 32 scales, 128 B. No per-tensor GEMM records: activations
 * use 1 x 128 blocks too. */
static void test_block_scales(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(BIT(MASTER) | BIT(M) | BIT(V));
    r.fp8_row = r.fp8_col = DT_E4M3, r.gemm_fwd = r.gemm_bwd = DT_E4M3;
    r.scaling = SCALING_CURRENT, r.amax_history = 1, r.amax_reduce = AMAX_NONE, r.min_sm = 90;
    r.act_gran = GRAN_1X128, r.weight_gran = GRAN_128X128;
    PlanInput in = input(&m, &g, &r, 1, SHARD_NONE);
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].elements, 32);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, 128);
    CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].bytes, 0);
}

/* A recipe whose GEMMs read the master (no working weight, no FP8 copy) cannot let the distributed
 * optimizer shard that master: refused on whichever row it is, here the third. */
static void test_master_sharding_refused_on_any_row(void)
{
    char text[4096];
    const char *bad = "bf16-sharded,none,none,none,fp32,fp32,fp32,fp32,master+m+v,none,base,bf16,bf16,none,tensor,"
                      "tensor,0,none,fp32,bf16,bf16,bf16,bf16,bf16,bf16,none,8.0,test\n";
    snprintf(text, sizeof text, "%s%s", recipes_csv, bad);
    Catalog *c = calloc(1, sizeof *c);
    if (!c) return;
    Err e = {0};
    CHECK(catalog_parse_recipes(c, text, strlen(text), "custom.csv", &e) == ST_DATA);
    CHECK_CONTAINS(e.msg, "custom.csv: row 4");
    CHECK_CONTAINS(e.msg, "shards the master, but the GEMMs read it");
    free(c);
}

/* The last stage's transient is the larger of one layer's backward working set and the loss's working copies
 * beyond the saved softmax, (loss_bytes - 4) B per logit. Vocabulary 1000, 4 tokens (tp 1, micro-batch 1):
 *   backward set: dX and d(residual) 2 x 4 x 8 x 2 B = 128 + the widest output's gradient (QKV 24 > FC1
 *   16) 4 x 24 x 2 B = 192 -> 320
 *   loss_bytes 4: nothing beyond the softmax -> 320; 5: 4 x 1000 x 1 = 4,000; 10: 4 x 1000 x 6 = 24,000
 * This executor's stack (fusion fp8plan, loss_bytes 6) peaks in the LM head's backward, with the BF16 d(logits)
 * 4 x 1000 x 2 = 8,000, the dX buffer (heads 2 x 4 = 8 = h wide) and d(residual) 2 x 4 x 8 x 2 = 128: 8,128
 * (loss_bytes 10 there: 24,000 + 128 = 24,128). tp 2 with sequence parallelism: d(logits) 4 x 500 x 2 = 4,000,
 * dX 4 tokens x 1 head x 4 = 16 = d(residual)'s 2 tokens x 8: 2 x 16 x 2 = 64, the head's re-gathered input and
 * its d(input) 2 x 4 x 8 x 2 = 128: 4,192 (the layer's set at tp 2 is 224: dX, d(residual) 64, QKV's 12 columns
 * 4 x 12 x 2 = 96, the re-gathered input 64).
 * After the backward at tp > 1 Megatron flattens the TP-replicated parameters' main gradients into one new tensor
 * and all-reduces it (finalize_model_grads; plan_tp_flat_grad_bytes): 4 layers x 2 RMSNorms x 8 + the final norm 8
 * = 72 values, FP32 288 B — above the layer's 224 with loss_bytes 4 (Megatron, fusion te: nothing else of the
 * transient is live then, 288); this executor keeps its dX and d(residual) buffers all step, 2 x 16 x 2 = 64: 352.
 * main_grad bf16: 144 B, under 224. LayerNorm (weight and bias, 16 a norm) and linear biases (the row-parallel
 * proj and FC2, 8 each): 4 x (2 x 16 + 2 x 8) + 16 = 208 values, 832 B (the layer's set does not move). */
static void test_loss_transient(void)
{
    static const struct {
        KernelFusion fusion;
        uint32_t tp, lb;
        uint64_t want;
        MainGrad mg;
        int ln_bias;
    } rows[] = {
        {FUSE_TE, 1, 4, 320, 0, 0},       {FUSE_TE, 1, 5, 4000, 0, 0},        {FUSE_TE, 1, 10, 24000, 0, 0},
        {FUSE_FP8PLAN, 1, 6, 8128, 0, 0}, {FUSE_FP8PLAN, 1, 10, 24128, 0, 0}, {FUSE_FP8PLAN, 2, 6, 4192, 0, 0},
        {FUSE_TE, 2, 4, 288, 0, 0},       {FUSE_FP8PLAN, 2, 4, 352, 0, 0},    {FUSE_TE, 2, 4, 224, MAIN_GRAD_BF16, 0},
        {FUSE_TE, 2, 4, 832, 0, 1},
    };
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ModelSpec m = ox_tiny(1000, 4);
        if (rows[i].ln_bias) m.norm = NORM_LAYERNORM, m.linear_bias = 1;
        PlanInput in = input(&m, &g, &r, 1, SHARD_NONE);
        in.fusion = rows[i].fusion, in.tp = rows[i].tp, in.sp = rows[i].tp > 1, in.loss_bytes = rows[i].lb;
        in.main_grad = rows[i].mg;
        Plan p;
        Err e = {0};
        CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
        CHECKF(p.mem[MT_TRANSIENT].bytes == rows[i].want,
               "row %zu (tp %u, loss_bytes %u): transient %llu, expected %llu", i, rows[i].tp, rows[i].lb,
               (unsigned long long)p.mem[MT_TRANSIENT].bytes, (unsigned long long)rows[i].want);
    }
}

/* dX's buffer also holds the attention output's gradient [tok, heads/tp x head_dim] (the output projection's input
 * gradient, which the attention's backward reads), so it is the wider of the two. Vocabulary 1000, 4 tokens,
 * loss_bytes 4 (the layers' working set is the peak), heads of head_dim D:
 *   D 4, tp 1: 2 x 4 = 8 = h: as test_loss_transient, 320;
 *   D 8, tp 1: d(residual) 4 x 8 x 2 = 64 + dX's buffer 4 x 16 x 2 = 128 + the widest output's gradient, QKV's
 *     6 x 8 = 48 (FC1 16) 4 x 48 x 2 = 384 -> 576 (512 with dX 8 wide);
 *   D 8, tp 2 (sequence parallel, 2 tokens a rank): d(residual) 2 x 8 x 2 = 32 + dX's buffer, one head of 8 for the
 *     4 tokens, 4 x 8 x 2 = 64 (dX 2 x 8) + QKV's 48 / 2 = 24 columns 4 x 24 x 2 = 192 + the re-gathered input
 *     4 x 8 x 2 = 64 -> 352 (320 with dX 8 wide). */
static void test_attention_output_transient(void)
{
    static const struct {
        uint32_t head_dim, tp;
        uint64_t want;
    } rows[] = {{4, 1, 320}, {8, 1, 576}, {8, 2, 352}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        ModelSpec m = ox_tiny(1000, 4);
        m.head_dim = rows[i].head_dim;
        GpuSpec g = ox_big_gpu(1ull << 40);
        Recipe r = ox_bf16(0);
        PlanInput in = input(&m, &g, &r, 1, SHARD_NONE);
        in.loss_bytes = 4, in.tp = rows[i].tp;
        Plan p;
        Err e = {0};
        CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
        CHECKF(p.mem[MT_TRANSIENT].bytes == rows[i].want, "head_dim %u, tp %u: transient %llu, expected %llu",
               rows[i].head_dim, rows[i].tp, (unsigned long long)p.mem[MT_TRANSIENT].bytes,
               (unsigned long long)rows[i].want);
    }
}

/* Memory is reported for the most-loaded stage. 7 layers on 3 stages as 2 + 3 + 2 (first and last given):
 *   stage 0: 2 layers x (512 + 16 norm) = 1,056 + token embedding 16 x 8 = 128 + positions 4 x 8 = 32 -> 1,216
 *   stage 1: 3 layers x 528 = 1,584
 *   stage 2: 1,056 + final norm 8 + the tied LM head's copy 128 -> 1,192
 * at 18 B a parameter and one micro-batch in flight everywhere, the middle stage is the largest. */
static void test_middle_stage_reported(void)
{
    ModelSpec m = ox_tiny(16, 4);
    m.layers = 7;
    GpuSpec g = ox_big_gpu(1ull << 40);
    Recipe r = ox_bf16(0);
    PlanInput in = input(&m, &g, &r, 1, SHARD_NONE);
    in.pp = 3, in.gbs = 1, in.first_stage_layers = 2, in.last_stage_layers = 2;
    Plan p;
    Err e = {0};
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT((int)p.stage, 1);
    CHECK_EQ_U64(p.params_gpu, 1584);
}

int main(void)
{
    RUN(test_sharding_modes_dp3);
    RUN(test_zero3_prefetch_transient);
    RUN(test_tied_lm_head_on_last_stage);
    RUN(test_tp_only_amax_custom_recipe);
    RUN(test_block_scales);
    RUN(test_master_sharding_refused_on_any_row);
    RUN(test_loss_transient);
    RUN(test_attention_output_transient);
    RUN(test_middle_stage_reported);
    return test_summary();
}
