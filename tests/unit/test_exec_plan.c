/* tests/unit/test_exec_plan.c — the executor's tensors against the planner's
 * terms, for several shapes and every recipe the executor runs.
 *
 * For each (model shape, recipe, micro-batch) the test builds the Plan the way
 * `fp8plan run` does (exec_plan_input with stacks.csv's fp8plan row: 1 GPU,
 * materialized attention, no dropout, SwiGLU fused), lists the executor's tensors with model_layout (sizes only: nothing
 * is allocated, so full-size models are cheap), and requires every persistent
 * term and every itemized activation term to be equal byte for byte, and the
 * working set not to exceed the plan's transient term. It also checks that the
 * recipes and models the executor does not run are refused with their reason. Models with experts:
 * test_exec_plan_moe.c. */
#include <stdlib.h>
#include <string.h>

#include "exec/measure/plan_link.h"
#include "exec/model/model.h"
#include "support/exec_plan_check.h"
#include "support/fixtures.h"
#include "test.h"

static Catalog *cat;

static const char *const recipes[] = {"megatron-bf16", "te-fp8", "te-fp8-current", "fp8lm", "deepseek-v3", "msamp-o1"};
enum { NRECIPES = sizeof recipes / sizeof *recipes };

/* Compare one configuration (`micro` micro-batches per step); returns the number of mismatching terms. */
static int compare_mb(const ModelSpec *m, const char *recipe, uint32_t mbs, uint32_t micro)
{
    return exec_plan_mismatches(cat, m, recipe, mbs, micro);
}

static int compare(const ModelSpec *m, const char *recipe, uint32_t mbs) { return compare_mb(m, recipe, mbs, 1); }

static ModelSpec shaped_kv(const char *base, uint32_t layers, uint32_t hidden, uint32_t heads, uint32_t kv,
                           uint32_t ffn, uint32_t seq)
{
    ExecOverrides o = {.layers = layers, .hidden = hidden, .heads = heads, .kv_heads = kv, .ffn = ffn, .seq = seq};
    ModelSpec m;
    memset(&m, 0, sizeof m);
    Err e;
    if (exec_model(catalog_model(cat, base), &o, &m, &e)) fprintf(stderr, "  %s\n", e.msg);
    return m;
}

static ModelSpec shaped(const char *base, uint32_t layers, uint32_t hidden, uint32_t heads, uint32_t seq)
{
    return shaped_kv(base, layers, hidden, heads, 0, 0, seq);
}

/* arena_planned: the plan's bytes for every term the arena holds — the states, scales and activations, and
 * of the overheads only the GEMM workspace (its buffer is the executor's); NCCL buffers, the CUDA context and
 * fragmentation are the driver's and the allocator's, 0 here even where the plan counts them; the executor's own
 * terms (token/target I/O, RoPE tables) are not in the plan: 0. It writes ARENA_TERMS values, no more. */
static void test_arena_planned(void)
{
    ModelSpec m = shaped("gpt2-124m", 1, 32, 2, 16);
    PlanInput in;
    static Plan p;
    Err e;
    exec_plan_in(cat, &m, "te-fp8", 2, 1, &in);
    CHECKF(!plan_build(&in, &p, &e), "%s", e.msg);
    const uint64_t guard = 0xA5A5A5A5A5A5A5A5ull;
    uint64_t got[ARENA_TERMS + 1];
    for (int t = 0; t <= ARENA_TERMS; t++) got[t] = guard;
    arena_planned(&p, got);
    CHECK_EQ_U64(got[ARENA_TERMS], guard);
    static const MemTermId held[] = {MT_WEIGHT_GEMM,  MT_WEIGHT_OTHER,  MT_MASTER_GEMM, MT_GRAD_GEMM,
                                     MT_OPTIM_M_GEMM, MT_OPTIM_V_OTHER, MT_SCALE_GEMM,  MT_ACT_LAYER_HP,
                                     MT_ACT_OUTPUT,   MT_TRANSIENT,     MT_WORKSPACE};
    for (size_t i = 0; i < sizeof held / sizeof *held; i++) {
        CHECKF(p.mem[held[i]].bytes > 0, "%s: the plan has no bytes to compare", mem_term_name(held[i]));
        CHECKF(got[held[i]] == p.mem[held[i]].bytes, "%s: %llu, the plan's %llu", mem_term_name(held[i]),
               (unsigned long long)got[held[i]], (unsigned long long)p.mem[held[i]].bytes);
    }
    /* one GPU on the fp8plan stack: no communicator and no fragmentation allowance, but a CUDA context */
    CHECKF(p.mem[MT_CUDA_CONTEXT].bytes > 0, "the plan counts no CUDA context, so 0 would prove nothing");
    CHECK_EQ_U64(got[MT_CUDA_CONTEXT], 0);
    CHECK_EQ_U64(got[MT_COMM_BUFFER], 0);
    CHECK_EQ_U64(got[MT_FRAGMENTATION], 0);
    CHECK_EQ_U64(got[XT_IO], 0);
    CHECK_EQ_U64(got[XT_ROPE], 0);
}

static void test_terms_match_plan(void)
{
    ModelSpec shapes[6];
    shapes[0] = shaped("gpt2-124m", 2, 128, 4, 64); /* the CPU demo */
    shapes[1] = shaped("gpt2-124m", 1, 32, 2, 16);  /* the CLI tests' tiny model */
    shapes[2] = shaped("gpt2-124m", 0, 0, 0, 0);    /* GPT-2 small as published */
    shapes[3] = shaped("gpt-13b", 2, 0, 0, 2048);   /* two GPT-13B layers */
    shapes[4] = shaped("gpt2-124m", 3, 48, 3, 24);  /* odd sizes */
    shapes[5] = shapes[4];                          /* untied, no biases, odd vocabulary */
    shapes[5].tied_embeddings = 0;
    shapes[5].linear_bias = 0;
    shapes[5].vocab = 1001;
    int configs = 0, bad = 0;
    for (int i = 0; i < 6; i++)
        for (int r = 0; r < NRECIPES; r++)
            for (uint32_t mbs = 1; mbs <= 3; mbs += 2) {
                bad += compare(&shapes[i], recipes[r], mbs);
                configs++;
            }
    printf("  %d configurations (6 shapes x %d recipes x mbs 1, 3)\n", configs, (int)NRECIPES);
    CHECK_EQ_INT(bad, 0);
}

/* The LLaMA family: RMSNorm (rstd only), SwiGLU's 2F-wide FC1, rotary positions (no table in the
 * parameters), grouped-query attention, untied head, no biases. */
static void test_llama_terms_match_plan(void)
{
    ModelSpec shapes[5];
    shapes[0] = shaped_kv("llama3-8b", 2, 256, 8, 2, 688, 128); /* the CPU run */
    shapes[1] = shaped_kv("llama3-8b", 1, 0, 0, 0, 0, 256);     /* one Llama 3 8B layer: 32 heads, 8 KV */
    shapes[2] = shaped_kv("llama2-7b", 1, 0, 0, 0, 0, 512);     /* multi-head LLaMA */
    shapes[3] = shaped_kv("llama3-70b", 1, 0, 0, 0, 0, 128);    /* 64 heads, 8 KV, FFN 28672 */
    shapes[4] = shaped_kv("llama3-8b", 3, 96, 6, 3, 100, 24);   /* odd sizes: D 16, KV 3, F 100 */
    int configs = 0, bad = 0;
    for (int i = 0; i < 5; i++) {
        CHECK(shapes[i].norm == NORM_RMSNORM && shapes[i].mlp == MLP_SWIGLU && shapes[i].pos == POS_ROPE);
        for (int r = 0; r < NRECIPES; r++)
            for (uint32_t mbs = 1; mbs <= 2; mbs++) {
                bad += compare(&shapes[i], recipes[r], mbs);
                /* gradient accumulation: one micro-batch in flight, so every term is the same */
                bad += compare_mb(&shapes[i], recipes[r], mbs, 4);
                configs += 2;
            }
    }
    printf("  %d configurations (5 LLaMA shapes x %d recipes x mbs 1, 2 x 1 and 4 micro-batches)\n", configs,
           (int)NRECIPES);
    CHECK_EQ_INT(bad, 0);
}

/* Latent attention against the plan: DeepSeek-V3's row without MTP, 2 layers (the first dense), hidden 64, 4
 * heads, 32 tokens, vocabulary 256, 8 experts top-2 of 32, dense FFN 128, latents shrunk to q_lora 24, kv_lora
 * 16, heads of nope 8 + rope 4 = 12, values 8. By hand, per layer: q_down 24 x 64 = 1,536, q_up 4 x 12 x 24 =
 * 1,152, kv_down (16 + 4) x 64 = 1,280, kv_up 4 x (8 + 8) x 16 = 1,024, the output projection 64 x 4 x 8 = 2,048:
 * 7,040; FFNs 3 x 128 x 64 = 24,576 (dense) and the shared expert 3 x 32 x 64 = 6,144: GEMM weights 2 x 7,040 +
 * 30,720 = 44,800, 89,600 B in BF16. Other: the latent norms 24 + 16 a layer beside norm 1 and 2. The attention's
 * saved tensors a layer (micro-batch 1): x 32 x 64 x 2 = 4,096 + rstd 128; q_down's and kv_down's one input
 * 4,096; c_q 32 x 24 x 2 = 1,536 + rstd 128 and q_up's input 1,536; c_kv 32 x 16 x 2 = 1,024 + rstd 128 and
 * kv_up's input 1,024; q, k, v 32 x (2 x 4 x 12 + 4 x 8) x 2 = 8,192; the output projection's input 32 x 32 x 2
 * = 2,048: 23,936 B, as the plan's mla_act items (planner/plan_moe_mem.c). Every compared term equal (MoE: the
 * bound for act_moe); the transient by hand below. */
/* test_mla_terms_match_plan's model with multi-token prediction depths, its terms worked by hand there: the GEMM
 * weights and the other weights' bytes over the model without a depth (67,360 B) on megatron-bf16, the routers'
 * FP32 biases on every recipe, te-fp8's scale records; each planned and held alike, and every other term as
 * planned at mbs 1 and 2, on megatron-bf16, te-fp8, te-fp8-current and deepseek-v3. */
typedef struct {
    uint32_t depths;
    uint64_t weight_gemm, weight_other_more, router_bias, te_fp8_scale; /* bytes */
} MtpTerms;

static void check_depths(const ModelSpec *m, const MtpTerms *w)
{
    static const char *const rn[] = {"megatron-bf16", "te-fp8", "te-fp8-current", "deepseek-v3"};
    ModelSpec t = *m;
    t.mtp_layers = w->depths;
    for (int i = 0; i < 4; i++) {
        PlanInput in;
        static Plan p;
        uint64_t have[ARENA_TERMS];
        exec_plan_in(cat, &t, rn[i], 1, 1, &in);
        if (exec_plan_layout(&in, &p, have)) {
            CHECKF(0, "%s at %u depths: no plan or layout", rn[i], w->depths);
            continue;
        }
        if (i == 0) {
            CHECK_EQ_U64(have[MT_WEIGHT_GEMM], w->weight_gemm);
            CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, w->weight_gemm);
            CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].bytes - 67360, w->weight_other_more);
            CHECK_EQ_U64(have[MT_WEIGHT_OTHER] - 67360, w->weight_other_more);
        }
        CHECK_EQ_U64(p.mem[MT_ROUTER_BIAS].bytes, w->router_bias);
        CHECK_EQ_U64(have[MT_ROUTER_BIAS], w->router_bias);
        if (i == 1) {
            CHECK_EQ_U64(have[MT_SCALE_GEMM], w->te_fp8_scale);
            CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].bytes, w->te_fp8_scale);
        }
        CHECKF(compare(&t, rn[i], 1) == 0, "%s at %u depths", rn[i], w->depths);
        CHECKF(compare(&t, rn[i], 2) == 0, "%s at %u depths, mbs 2", rn[i], w->depths);
    }
}

static void test_mla_terms_match_plan(void)
{
    ModelSpec d = *catalog_model(cat, "deepseek-v3");
    d.mtp_layers = 0;
    ExecOverrides o = {.layers = 2,
                       .hidden = 64,
                       .heads = 4,
                       .seq = 32,
                       .vocab = 256,
                       .ffn = 128,
                       .experts = 8,
                       .topk = 2,
                       .expert_ffn = 32,
                       .dense_layers = 1,
                       .dense_layers_set = 1};
    ModelSpec m;
    Err e;
    CHECKF(exec_model(&d, &o, &m, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_INT(m.head_dim, 192); /* the row's 128 + 64, kept by exec_model */
    CHECK_EQ_INT(m.kv_heads, 4);
    m.q_lora_rank = 24, m.kv_lora_rank = 16, m.qk_nope_head_dim = 8, m.qk_rope_head_dim = 4, m.v_head_dim = 8;
    m.head_dim = 12;
    PlanInput in;
    static Plan p;
    uint64_t have[ARENA_TERMS];
    exec_plan_in(cat, &m, "megatron-bf16", 1, 1, &in);
    CHECK(!exec_plan_layout(&in, &p, have));
    CHECK_EQ_U64(have[MT_WEIGHT_GEMM], 89600);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 89600);
    CHECK_EQ_INT(compare(&m, "megatron-bf16", 1), 0);
    CHECK_EQ_INT(compare(&m, "megatron-bf16", 2), 0);
    ModelSpec dense = m; /* one attention layer alone: its saved tensors by hand above, + norm 2 and the FFN's */
    dense.experts = 0, dense.experts_per_token = 0, dense.shared_experts = 0, dense.expert_ffn = 0;
    dense.dense_layers = 0, dense.router = ROUTER_NONE, dense.router_groups = dense.router_group_topk = 0;
    dense.layers = 1;
    CHECK_EQ_INT(compare(&dense, "megatron-bf16", 1), 0);
    /* its transient: the dense working set (d_res, d_b 4,096 each, d_a 32 x 2 x 128 x 2 = 16,384, SwiGLU's
     * d(output) 8,192, the fp32 d(probabilities) 4 x 32 x 32 x 4 = 16,384: 49,152) and latent attention's
     * backward rows, which the plan counts as Megatron-Core's autograd holds them: d(kv_down output) 32 x 20 x 2 =
     * 1,280, d(an up-projection's output) 32 x 64 x 2 = 4,096 (the widest of q_up's 48, kv_up's 64 and C), two
     * latents' 32 x 24 x 2 = 1,536 each: 8,448 more, 57,600 planned and held */
    exec_plan_in(cat, &dense, "megatron-bf16", 1, 1, &in);
    CHECK(!exec_plan_layout(&in, &p, have));
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 49152 + 8448);
    CHECK_EQ_U64(have[MT_TRANSIENT], 49152 + 8448);
    /* the two layers (dense, then MoE): the executor's one set of block buffers, sized at the widest layer, and
     * the MoE layer's own. Held: always d_res, d_b 4,096 each, the router's fp32 logits 32 x 8 x 4 = 1,024 and the
     * experts' output 64 rows x 64 x 2 = 8,192 (17,408); in the block backward d_a 16,384, the MLA rows 8,448,
     * d_act 8,192, the MoE input's gradient 4,096, d(experts' output) 8,192, d(their activation) 64 x 32 x 2 =
     * 4,096, d(FC1 output) 64 x 64 x 2 = 8,192, d(weights) 32 x 2 x 4 = 256, d(logits) 32 x 8 x 2 = 512 and
     * d(probabilities) 16,384 (74,752): 92,160. Planned (the MoE layer's kind): dX, d(residual) 8,192; d(FC1
     * output) of the shared expert at the dense width under this executor (fp8plan stack) 32 x 256 x 2 = 16,384
     * and of the 64 rows 8,192; SwiGLU's d(output) 32 x 128 x 2 = 8,192 and 64 x 32 x 2 = 4,096; the sigmoid
     * router 32 x (6 x 8 + 4 x 2) = 1,792 (no fp32 d(scores): its backward goes from d(weights) into the logits'
     * buffer; Megatron-Core's stacks are planned with one, 10 x 8); the MoE input's gradient 4,096; d(Q, K, V) 32 x
     * 4 x (2 x 12 + 8) x 2 = 8,192 is d_a's (not added); the MLA rows 8,448; d(probabilities) 16,384; the dispatch
     * and combine buffers 64 x 64 x (2 + 2) = 16,384: 92,160 */
    exec_plan_in(cat, &m, "megatron-bf16", 1, 1, &in);
    CHECK(!exec_plan_layout(&in, &p, have));
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 92160);
    CHECK_EQ_U64(have[MT_TRANSIENT], 92160);
    m.q_lora_rank = 0; /* no q latent (DeepSeek-V2-Lite): q_up reads norm 1's output */
    CHECK_EQ_INT(compare(&m, "megatron-bf16", 1), 0);
    /* FP8: te-fp8's FP8 tensors, per layer q_down, q_up, kv_down, kv_up, the output projection, FC1 and FC2 (the
     * MoE layer's shared expert), + 2 x 8 experts on the MoE layer: 7 + 23 = 30, each with x, w and dy records of
     * scale, scale_inv and a 1024-row history: 30 x 3 x 1,026 x 4 = 369,360 B (te-fp8-current: one row, 30 x 3 x 3
     * x 4 = 1,080 B); the GEMM weights' copies 44,800 B in each layout; the down-projections' inputs saved as two
     * FP8 copies, as the plan counts them (each linear casts its own) */
    m.q_lora_rank = 24;
    static const struct {
        const char *recipe;
        uint64_t scale;
    } f8[] = {{"te-fp8", 369360}, {"te-fp8-current", 1080}};
    for (int i = 0; i < 2; i++) {
        exec_plan_in(cat, &m, f8[i].recipe, 1, 1, &in);
        CHECK(!exec_plan_layout(&in, &p, have));
        CHECK_EQ_U64(have[MT_SCALE_GEMM], f8[i].scale);
        CHECK_EQ_U64(have[MT_FP8_ROWWISE], 44800);
        CHECK_EQ_U64(have[MT_FP8_COLWISE], 44800);
        CHECK_EQ_INT(compare(&m, f8[i].recipe, 1), 0);
        CHECK_EQ_INT(compare(&m, f8[i].recipe, 2), 0);
        CHECK_EQ_INT(compare(&dense, f8[i].recipe, 1), 0);
    }
    CHECK_EQ_INT(compare(&dense, "deepseek-v3", 1), 0); /* block scales: the dense linears' */
    CHECK_EQ_INT(compare(&dense, "fp8lm", 1), 0);
    /* multi-token prediction depth 1 (DeepSeek-V3's mtp_layers 1): its block is a MoE layer like the last one,
     * eh_proj a GEMM weight. weight_gemm: 89,600 + eh_proj 64 x 128 x 2 = 16,384 + the block's attention 7,040 and
     * shared expert 2 x 32 x 64 + 64 x 32 = 6,144 weights x 2 = 26,368: 132,352 B; weight_other: + the block's
     * norms 64 + 64, latents' norms 24 + 16, router 8 x 64, and enorm, hnorm, the depth's final norm 3 x 64: 872
     * weights, 1,744 B over the model without the depth (67,360 B); the routers' biases are router_bias, FP32
     * whatever the recipe: 8 experts x (MoE layer 1 + the depth's block) x 4 B = 64 B. Every other state and saved term as planned (the planner's MTP activations: enorm's
     * input, both norms' rstd and eh_proj's input, test_moe_plan's test_mla_and_mtp), in BF16 and FP8 (eh_proj one
     * FP8 tensor more: te-fp8's scale_gemm (30 + 23 + 1) x 3 x 1,026 x 4 = 664,848) */
    check_depths(
        &m,
        &(const MtpTerms){
            .depths = 1, .weight_gemm = 132352, .weight_other_more = 1744, .router_bias = 64, .te_fp8_scale = 664848});
    ModelSpec t = m;
    /* a dense GPT-2 shape (LayerNorm with biases, learned positions, tied head) with a depth: every recipe. A model
     * with MTP takes the planner's MoE path, which counts the biases as the dense path does (QKV 192 + proj 64 +
     * FC1 256 + FC2 64 = 576 a layer, the depth's layer too; planner/plan_moe.c), and without them */
    ModelSpec gm = shaped_kv("gpt2-124m", 2, 64, 4, 4, 256, 32);
    gm.mtp_layers = 1;
    CHECK_EQ_INT(gm.linear_bias, 1);
    for (size_t i = 0; i < sizeof recipes / sizeof *recipes; i++)
        CHECKF(compare(&gm, recipes[i], 1) == 0, "%s with biases", recipes[i]);
    gm.linear_bias = 0;
    for (size_t i = 0; i < sizeof recipes / sizeof *recipes; i++)
        CHECKF(compare(&gm, recipes[i], 1) == 0, "%s", recipes[i]);
    /* two depths: every state, saved activation and scale term as planned, in each recipe and both gbs. By hand at
     * D 2 (one depth more than above): weight_gemm 132,352 + eh_proj 16,384 + the second block's 26,368 = 175,104
     * B; weight_other + another 872 weights, 3,488 B over the model without a depth; router_bias 8 x 3 MoE layers x
     * 4 = 96 B; te-fp8's scale_gemm (30 + 2 x 24) x 3 x 1,026 x 4 = 960,336 B; act_output, per head pass (the
     * model's and each depth's) the final norm's input and output 32 x 64 x 2 x 2 = 8,192, its rstd 32 x 4 = 128
     * and the FP32 logits 32 x 256 x 4 = 32,768: 41,088 x 3 = 123,264 B; act_layer_hp one depth's more each depth
     * (the same increment from D 1 to 2 as from 0 to 1) */
    uint64_t hp[3] = {0};
    for (uint32_t D = 0; D <= 2; D++) {
        t.mtp_layers = D;
        exec_plan_in(cat, &t, "megatron-bf16", 1, 1, &in);
        CHECK(!exec_plan_layout(&in, &p, have));
        hp[D] = have[MT_ACT_LAYER_HP];
        CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, have[MT_ACT_LAYER_HP]);
        if (D < 2) continue;
        CHECK_EQ_U64(p.mem[MT_ACT_OUTPUT].bytes, 123264);
        CHECK_EQ_U64(have[MT_ACT_OUTPUT], 123264);
    }
    CHECK(hp[1] > hp[0]);
    CHECK_EQ_U64(hp[2] - hp[1], hp[1] - hp[0]);
    check_depths(
        &m,
        &(const MtpTerms){
            .depths = 2, .weight_gemm = 175104, .weight_other_more = 3488, .router_bias = 96, .te_fp8_scale = 960336});
    gm.mtp_layers = 2; /* the GPT-2 shape at two depths, with biases and without */
    for (size_t i = 0; i < sizeof recipes / sizeof *recipes; i++)
        CHECKF(compare(&gm, recipes[i], 1) == 0, "%s at depth 2", recipes[i]);
    gm.linear_bias = 1;
    CHECK_EQ_INT(compare(&gm, "megatron-bf16", 1), 0);
    /* refused before any work: more depths than the executor's bound, and a sequence no longer than the depths */
    ArenaSpecs specs = {0};
    gm.mtp_layers = MODEL_MTP_MAX + 1;
    exec_plan_in(cat, &gm, "megatron-bf16", 1, 1, &in);
    CHECKF(!plan_build(&in, &p, &e), "%s", e.msg);
    CHECK_EQ_INT(model_layout(&p, &specs, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "at most 16 multi-token prediction depths (mtp_layers 17)");
    arena_specs_free(&specs);
    ModelSpec sh = shaped_kv("gpt2-124m", 2, 64, 4, 4, 256, 4); /* 4 positions, 4 depths: depth 4 predicts none */
    sh.mtp_layers = 4;
    exec_plan_in(cat, &sh, "megatron-bf16", 1, 1, &in);
    CHECKF(!plan_build(&in, &p, &e), "%s", e.msg);
    CHECK_EQ_INT(model_layout(&p, &specs, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--seq 4 must exceed the 4 multi-token prediction depths of model");
    arena_specs_free(&specs);
    sh.mtp_layers = 3; /* 3 depths of 4 positions: depth 3 predicts at position 0 alone */
    CHECK_EQ_INT(compare(&sh, "megatron-bf16", 1), 0);
}

/* q/k norms (Qwen3) on a dense LLaMA shape: the norms' 2 x head_dim weights per layer in the "other" states, no
 * saved activation more, and the backward's rebuilt attention input in the transient, as the plan has them
 * (planner/plan_mem.c, worked by hand in test_oracle_moe_terms.c); L2, C 256, H 8 (KV 2, D 32), T 128:
 * 2 x 2 x 32 = 128 weights more (256 B in BF16); 128 x (256 + 2 x 64) x 2 + 128 x (8 + 2) x 4 = 98,304 + 5,120 =
 * 103,424 B of transient more, planned and held: test_swiglu_transient's 1,183,744 B (V 256, so the backward's
 * working set is the largest) + 103,424 = 1,287,168. Every recipe the dense model runs with; tensor parallelism is
 * refused (the norms' gradients are not reduced over TP). */
static void test_qk_norm_terms_match_plan(void)
{
    ModelSpec a = shaped_kv("llama3-8b", 2, 256, 8, 2, 688, 128), q;
    a.vocab = 256;
    q = a;
    q.qk_norm = 1;
    for (size_t i = 0; i < sizeof recipes / sizeof *recipes; i++) /* the file's recipes */
        CHECKF(compare(&q, recipes[i], 1) == 0, "%s", recipes[i]);
    PlanInput in;
    static Plan pa, pq;
    Err e;
    exec_plan_in(cat, &a, "megatron-bf16", 1, 1, &in);
    CHECK(!plan_build(&in, &pa, &e));
    in.model = &q;
    CHECK(!plan_build(&in, &pq, &e));
    ArenaSpecs specs = {0};
    uint64_t have[ARENA_TERMS];
    CHECK(!model_layout(&pq, &specs, &e) && !arena_specs_bytes(&specs, have, &e));
    arena_specs_free(&specs);
    CHECK_EQ_U64(have[MT_WEIGHT_OTHER] - pa.mem[MT_WEIGHT_OTHER].bytes, 128 * 2);
    CHECK_EQ_U64(have[MT_ACT_LAYER_HP], pa.mem[MT_ACT_LAYER_HP].bytes);
    CHECK_EQ_U64(pq.mem[MT_TRANSIENT].bytes - pa.mem[MT_TRANSIENT].bytes, 103424);
    CHECK_EQ_U64(have[MT_TRANSIENT], 1287168);
    CHECK_EQ_U64(pq.mem[MT_TRANSIENT].bytes, 1287168);
    in.tp = 2;
    CHECK(!plan_build(&in, &pq, &e));
    CHECK_EQ_INT(model_check(&pq, &e), ST_UNAVAILABLE);
    CHECK_CONTAINS(e.msg, "q/k norms as RMSNorm before rotary positions on one tensor-parallel rank");
}

static void test_one_vocabulary(void)
{
    ModelSpec m = shaped_kv("llama3-8b", 2, 256, 8, 2, 688, 128);
    PlanInput in;
    static Plan p;
    Err e;
    exec_plan_in(cat, &m, "te-fp8", 1, 1, &in);
    CHECK_EQ_INT(plan_build(&in, &p, &e), ST_OK);
    /* per layer: QKV (8 + 2·2)·32 x 256 = 98,304; proj 256 x 256 = 65,536; FC1 2·688 x 256 = 352,256;
     * FC2 256 x 688 = 176,128; sum 692,224; two layers 1,384,448 */
    uint64_t sum = 0, rows, cols;
    for (int k = 0; k < LIN_COUNT; k++) {
        spec_linear_shape(&m, (LinearKind)k, 1, &rows, &cols);
        sum += rows * cols;
    }
    CHECK_EQ_U64(sum, 692224);
    CHECK_EQ_U64(p.params_gemm_gpu, 2 * sum);
    CHECK_STR(linear_name(LIN_FC1), "fc1");
}

/* The transient term of a SwiGLU model counts d(SwiGLU output) beside d(FC1 output): the executor's
 * backward holds both (an activation whose input is twice its output's width cannot run in place).
 * L2, C 256, H 8 (KV 2), F 688, T 128, mbs 1, V 256 (no padding past 256), megatron-bf16:
 *   dX and d(residual)        2 x 128·256·2   =   131,072
 *   d(FC1 output)             128·1376·2      =   352,256
 *   d(SwiGLU output)          128·688·2       =   176,128
 *   d(probabilities), fp32    128·8·128·4     =   524,288
 *   sum                                          1,183,744  (logits 128·256·6 = 196,608 is smaller) */
static void test_swiglu_transient(void)
{
    ModelSpec m = shaped_kv("llama3-8b", 2, 256, 8, 2, 688, 128);
    m.vocab = 256;
    PlanInput in;
    static Plan p;
    Err e;
    exec_plan_in(cat, &m, "megatron-bf16", 1, 1, &in);
    CHECK_EQ_INT(plan_build(&in, &p, &e), ST_OK);
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 1183744);
    CHECK_EQ_INT(compare(&m, "megatron-bf16", 1), 0);
}

/* MS-AMP O1 (msamp-o1) at a real vocabulary: the CPU demo (gpt2-124m, L2, C 128, H 4, T 64, V 50,257 padded to
 * 50,304, mbs 1), every state worked by hand. Linear weights per layer: QKV 128·384 + proj 128·128 + FC1 128·512 +
 * FC2 512·128 = 49,152 + 16,384 + 65,536 + 65,536 = 196,608; x 2 layers = 393,216 (Pl). Other parameters: wte
 * 50,304·128 = 6,438,912, wpe 64·128 = 8,192, per layer norms 4·128 + biases 384 + 128 + 512 + 128 = 1,664 (x 2 =
 * 3,328), final norm 256: 6,450,688 (Po).
 *   linears (O1's row): FP16 weight 2·Pl = 786,432; no master 0; E4M3 gradient Pl = 393,216; FP32 m and v 4·Pl =
 *     1,572,864 each; E4M3 row-wise and transposed copies Pl = 393,216 each;
 *   others (megatron-bf16 states): BF16 weight 2·Po = 12,901,376; FP32 master, grad, m, v 4·Po = 25,802,752 each;
 *   scaling records: 8 linears x 2 scaled states (weight, grad) x 3 floats x 4 B = 192;
 *   total_state 786,432 + 393,216 + 2·1,572,864 + 12,901,376 + 4·25,802,752 = 120,437,760
 *   (11 B per linear parameter: 2 + 1 + 8, the catalog's MS-AMP O1 row). */
static void test_msamp_o1_demo(void)
{
    ModelSpec m = shaped("gpt2-124m", 2, 128, 4, 64);
    CHECK_EQ_INT(m.vocab, 50257);
    PlanInput in;
    static Plan p;
    Err e;
    exec_plan_in(cat, &m, "msamp-o1", 1, 1, &in);
    CHECKF(!plan_build(&in, &p, &e), "%s", e.msg);
    static const struct {
        MemTermId t;
        uint64_t bytes;
    } want[] = {{MT_WEIGHT_GEMM, 786432},   {MT_MASTER_GEMM, 0},          {MT_GRAD_GEMM, 393216},
                {MT_OPTIM_M_GEMM, 1572864}, {MT_OPTIM_V_GEMM, 1572864},   {MT_FP8_ROWWISE, 393216},
                {MT_FP8_COLWISE, 393216},   {MT_WEIGHT_OTHER, 12901376},  {MT_MASTER_OTHER, 25802752},
                {MT_GRAD_OTHER, 25802752},  {MT_OPTIM_M_OTHER, 25802752}, {MT_OPTIM_V_OTHER, 25802752},
                {MT_SCALE_STATE, 192}};
    ArenaSpecs specs = {0};
    uint64_t have[ARENA_TERMS];
    CHECKF(!model_layout(&p, &specs, &e) && !arena_specs_bytes(&specs, have, &e), "%s", e.msg);
    arena_specs_free(&specs);
    uint64_t states = 0;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        CHECKF(p.mem[want[i].t].bytes == want[i].bytes, "plan %s: %llu, by hand %llu", mem_term_name(want[i].t),
               (unsigned long long)p.mem[want[i].t].bytes, (unsigned long long)want[i].bytes);
        CHECKF(have[want[i].t] == want[i].bytes, "executor %s: %llu, by hand %llu", mem_term_name(want[i].t),
               (unsigned long long)have[want[i].t], (unsigned long long)want[i].bytes);
        if (mem_term_category(want[i].t) == MC_STATE) states += have[want[i].t];
    }
    CHECK_EQ_U64(states, 120437760);
    CHECK_EQ_INT(compare(&m, "msamp-o1", 1), 0);
}

static void test_refusals(void)
{
    static const struct {
        const char *recipe, *why;
    } refused[] = {
        {"mxfp8", "1x32/1x32 scale granularity is not run by the executor yet"},
        {"bf16", "working weights 'none' need FP8 GEMMs"},
        {"te-fp8-param", "working weights in e4m3 are not supported"},
        {"msamp-o3", "working weights in e4m3 are not supported"},
    };
    Err e;
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        const Recipe *rc = catalog_recipe(cat, refused[i].recipe);
        CHECK(rc != NULL);
        if (!rc) continue;
        CHECK_EQ_INT(exec_recipe_check(rc, &e), ST_UNAVAILABLE);
        CHECK_CONTAINS(e.msg, refused[i].recipe);
        CHECK_CONTAINS(e.msg, refused[i].why);
    }
    const Recipe *ds = catalog_recipe(cat, "deepseek-v3"); /* block scales and BF16 moments run */
    CHECK(ds && exec_recipe_check(ds, &e) == ST_OK);
    ModelSpec m;
    ExecOverrides none = {0};
    CHECK_EQ_INT(exec_model(catalog_model(cat, "llama3-8b"), &none, &m, &e), ST_OK); /* the LLaMA family runs */
    CHECK_EQ_INT(m.kv_heads, 8);
    CHECK_EQ_INT(m.head_dim, 128);
    ExecOverrides gqa = {.heads = 8}; /* 32 heads, 8 KV: the ratio 4 is kept, 8 / 4 = 2 KV heads */
    CHECK_EQ_INT(exec_model(catalog_model(cat, "llama3-8b"), &gqa, &m, &e), ST_OK);
    CHECK_EQ_INT(m.kv_heads, 2);
    gqa.heads = 6; /* 6 x 8 / 32 = 1.5 */
    CHECK_EQ_INT(exec_model(catalog_model(cat, "llama3-8b"), &gqa, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "give --kv-heads");
    gqa.heads = 8, gqa.kv_heads = 3;
    CHECK_EQ_INT(exec_model(catalog_model(cat, "llama3-8b"), &gqa, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--kv-heads 3 does not divide --heads 8");
    ExecOverrides odd_d = {.hidden = 24, .heads = 8, .kv_heads = 2, .ffn = 64}; /* head_dim 3 */
    CHECK_EQ_INT(exec_model(catalog_model(cat, "llama3-8b"), &odd_d, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "rotary positions need it even");
    ExecOverrides odd = {.hidden = 100, .heads = 3};
    CHECK_EQ_INT(exec_model(catalog_model(cat, "gpt2-124m"), &odd, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "--hidden 100 is not a multiple of --heads 3");
    ModelSpec base = *catalog_model(cat, "gpt2-124m");
    base.ffn_hidden = 3000; /* 3000 x 96 / 768 = 375: fine; x 100 / 768 is not whole */
    ExecOverrides frac = {.hidden = 100, .heads = 4};
    CHECK_EQ_INT(exec_model(&base, &frac, &m, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "give --ffn");
    frac.hidden = 96;
    CHECK_EQ_INT(exec_model(&base, &frac, &m, &e), ST_OK);
    CHECK_EQ_INT(m.ffn_hidden, 375);
    CHECK_EQ_INT(m.head_dim, 24);
    /* multi-token prediction is run (test_mla_terms_match_plan): the row keeps its depth */
    ModelSpec b = *catalog_model(cat, "llama3-8b");
    snprintf(b.name, sizeof b.name, "llama-mtp");
    b.mtp_layers = 1;
    e = (Err){0};
    CHECK_EQ_INT(exec_model(&b, &none, &m, &e), ST_OK);
    CHECK_EQ_INT(m.mtp_layers, 1);
}

int main(void)
{
    cat = fx_catalog();
    RUN(test_arena_planned);
    RUN(test_terms_match_plan);
    RUN(test_llama_terms_match_plan);
    RUN(test_mla_terms_match_plan);
    RUN(test_qk_norm_terms_match_plan);
    RUN(test_one_vocabulary);
    RUN(test_swiglu_transient);
    RUN(test_msamp_o1_demo);
    RUN(test_refusals);
    free(cat);
    return test_summary();
}
