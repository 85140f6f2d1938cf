/* tests/unit/test_plan.c — plan_build on a tiny model worked by hand, totals,
 * properties users rely on, and every invalid input with its message. */
#include <math.h>
#include <stdlib.h>

#include "planner/plan.h"
#include "support/fixtures.h"
#include "test.h"

static StateSet states(Dtype w, Dtype master, Dtype grad, Dtype m, Dtype v, unsigned shard)
{
    StateSet s = {.dt = {w, master, grad, m, v}, .shard_mask = shard};
    return s;
}

#define SH(x) (1u << STATE_##x)

/* Megatron BF16 (18 B/param; dist-opt shards master, m, v). */
static Recipe bf16_recipe(void) { return fx_bf16_recipe("megatron-bf16", SH(MASTER) | SH(M) | SH(V)); }

/* TE delayed scaling: BF16 states + FP8 row-wise and transposed copies, history 1024. */
static Recipe te_recipe(void) { return fx_te_recipe("megatron-bf16", SH(MASTER) | SH(M) | SH(V)); }

/* FP8-LM: FP16 master (scaled), FP8 grad (scaled), FP8 m (scaled), FP16 v; FP8 copies. */
static Recipe fp8lm_recipe(void)
{
    Recipe r = te_recipe();
    r.gemm = states(DT_NONE, DT_FP16, DT_E4M3, DT_E4M3, DT_FP16, SH(MASTER) | SH(M) | SH(V));
    r.gemm.scaled_mask = SH(MASTER) | SH(GRAD) | SH(M);
    r.amax_history = 1;
    r.comm_dp_grad = r.comm_param_gather = DT_E4M3;
    return r;
}

static void test_tiny_model_by_hand(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = bf16_recipe();
    PlanInput in = fx_input(&m, &g, &r);
    Plan p;
    Err e;
    CHECK(plan_build(&in, &p, &e) == ST_OK);
    /* linear weights per layer: QKV (2+2*2)*4 = 24 x 8 = 192; proj 8x8 = 64; FC1 32x8 = 256; FC2 8x32 = 256 */
    CHECK_EQ_U64(p.params_gemm_gpu, 2 * (192 + 64 + 256 + 256));
    /* other: per layer 2 LayerNorms (2*8 each) + biases 24+8+32+8 = 104; embedding 10x8, positions 4x8,
     * final norm 16; tied, pp = 1: no LM head */
    CHECK_EQ_U64(p.params_gpu, 1536 + 2 * 104 + 80 + 32 + 16);
    CHECK_EQ_U64(p.params_total, 1872);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 1536 * 2);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_OTHER].bytes, 336 * 2);
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 1536 * 4);
    CHECK_EQ_U64(p.mem[MT_GRAD_OTHER].bytes, 336 * 4);
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_GEMM].bytes, 1536 * 4);
    CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes, 0);
    CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].bytes, 0);
    /* activations per layer (tok = 4, flash, no dropout, BF16 inputs):
     * norm inputs 2*4*8*2 = 128, LayerNorm stats 2*4*8 = 64, Q,K,V 4*24*2 = 192, FC1 output 4*32*2 = 256,
     * flash output 4*8*2 = 64, GEMM inputs QKV 64 + FC1 64 + FC2 4*32*2 = 256 (proj input = flash output) */
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, 2 * (128 + 64 + 192 + 256 + 64 + 64 + 64 + 256));
    CHECK_EQ_U64(p.mem[MT_ACT_ATTN].bytes, 2 * (4 * 2 * 4)); /* fp32 softmax stats per token and head */
    CHECK_EQ_U64(p.mem[MT_ACT_MASK].bytes, 0);
    /* output: final norm input 64 + LM-head input 64 + stats 32 + fp32 softmax 4*10*4 */
    CHECK_EQ_U64(p.mem[MT_ACT_OUTPUT].bytes, 64 + 64 + 32 + 160);
    /* transient: dX, d(residual) 2*64, d(widest output: FC1 32 > QKV 24) 4*32*2 = 256 > logits 4*10*6 = 240 */
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 128 + 256);
    CHECK_EQ_U64(p.mem[MT_COMM_BUFFER].bytes, 0); /* one GPU: no communicator */
    CHECK_EQ_U64(p.mem[MT_CUDA_CONTEXT].bytes, 512ull << 20);
    CHECK_EQ_U64(p.vocab_padded, 10);
    CHECK_EQ_U64(p.world, 1);
    CHECK_EQ_U64(p.in.gbs, 524288); /* 2^21 tokens / seq 4 */
}

static void test_tiny_fp8_terms(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = te_recipe();
    PlanInput in = fx_input(&m, &g, &r);
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes, 1536);
    CHECK_EQ_U64(p.mem[MT_FP8_COLWISE].bytes, 1536);
    /* 8 linears x 3 records (x, w, dy) x (scale + scale_inv + 1024 amax) x 4 B */
    CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].bytes, 8 * 3 * 1026 * 4);
    CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].elements, 8 * 3 * 1026);
    /* FP8 GEMM inputs saved: QKV 4*8 + proj 4*8 + FC1 4*8 + FC2 4*32 = 224 per layer */
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_FP8].bytes, 2 * 224);
    Recipe f = fp8lm_recipe();
    in.recipe = &f;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 0);
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 1536 * 2);
    CHECK_EQ_U64(p.mem[MT_GRAD_GEMM].bytes, 1536);
    CHECK_EQ_U64(p.mem[MT_OPTIM_M_GEMM].bytes, 1536);
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_GEMM].bytes, 1536 * 2);
    CHECK_EQ_U64(p.mem[MT_SCALE_STATE].bytes, 8 * 3 * 12); /* master, grad, m: scale, scale_inv, amax */
    CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].bytes, 8 * 3 * 3 * 4);
    /* block scales: DeepSeek-V3 style 128x128 weights, one block per tiny tensor and copy */
    Recipe d = te_recipe();
    d.weight_gran = GRAN_128X128, d.act_gran = GRAN_1X128, d.scaling = SCALING_CURRENT, d.amax_history = 1;
    in.recipe = &d;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_SCALE_BLOCK].bytes, 8 * 2 * 4);
    CHECK_EQ_U64(p.mem[MT_SCALE_GEMM].bytes, 0); /* no per-tensor operand */
}

static void test_sharding_by_hand(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = bf16_recipe();
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.sharding = SHARD_DIST_OPT, in.gbs = 8;
    Plan p;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].bytes, 1536 / 4 * 4);
    CHECK_EQ_U64(p.mem[MT_MASTER_OTHER].bytes, 84 * 4); /* ceil(336/4) */
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].shards, 4);
    CHECK_EQ_U64(p.mem[MT_GRAD_GEMM].bytes, 1536 * 4); /* the distributed optimizer keeps full gradients */
    CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 1536 * 2);
    /* DP: reduce-scatter of 1872 fp32 gradients and all-gather of bf16 params over 4 ranks */
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_RS].payload_bytes, 1872 * 4);
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_RS].bus_bytes, 1872 * 4 * 3 / 4);
    CHECK_EQ_U64(p.coll[CO_DP_PARAM_AG].bus_bytes, 1872 * 2 * 3 / 4);
    CHECK_EQ_U64(p.weight_comm_bytes, 1872 * 6 * 3 / 4);
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_AR].calls, 0);
    in.sharding = SHARD_NONE;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_AR].bus_bytes, 1872 * 4 * 2 * 3 / 4); /* all-reduce: 2(n-1)/n */
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_RS].calls, 0);
    in.sharding = SHARD_ZERO3;
    CHECK(plan_build(&in, &p, NULL) == ST_OK);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_GEMM].bytes, 384 * 2);
    CHECK_EQ_U64(p.mem[MT_GRAD_GEMM].bytes, 384 * 4);
    CHECK_EQ_U64(p.coll[CO_DP_PARAM_AG].calls, 2 * 2); /* forward and backward of each of 2 micro-batches */
}

static void test_totals_are_sums(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe rs[3] = {bf16_recipe(), te_recipe(), fp8lm_recipe()};
    for (int i = 0; i < 3; i++) {
        PlanInput in = fx_input(&m, &g, &rs[i]);
        in.tp = 2, in.dp = 2, in.sharding = SHARD_DIST_OPT, in.gbs = 4;
        Plan p;
        CHECK(plan_build(&in, &p, NULL) == ST_OK);
        uint64_t sum = 0, cats[MC_COUNT_] = {0};
        for (int t = 0; t < MT_COUNT_; t++) {
            sum += p.mem[t].bytes, cats[mem_term_category((MemTermId)t)] += p.mem[t].bytes;
        }
        CHECK_EQ_U64(sum, p.total_bytes);
        for (int c = 0; c < MC_COUNT_; c++) CHECK_EQ_U64(cats[c], p.cat_bytes[c]);
        double parts = p.time.gemm_s + p.time.attn_s + p.time.nongemm_s + p.time.tp_comm_s + p.time.cp_comm_s +
                       p.time.pp_comm_s + p.time.bubble_s + p.time.dp_comm_s + p.time.optimizer_s +
                       p.time.weight_cast_s + p.time.other_s;
        CHECK_REL(parts, p.time.step_s, 1e-9);
        CHECK(p.fits == (p.total_bytes <= p.capacity_bytes));
    }
}

/* Properties on real shapes: GPT-175B-like, 96 heads. */
static ModelSpec big(void)
{
    ModelSpec m = fx_tiny_model();
    m.layers = 96, m.hidden = 12288, m.ffn_hidden = 49152, m.heads = m.kv_heads = 96, m.head_dim = 128;
    m.vocab = 50257, m.seq_len = 2048;
    return m;
}

/* comms_min: the communicators a process holds whatever the layout (fp8plan run on a GPU: its one
 * NCCL communicator, even for one rank). By hand with the default 616,562,688 B per communicator
 * (2 x 32 x (4,194,304 + 4,915,200 + 524,288)): one GPU, comms_min 1 -> 616,562,688 B where the
 * default plan has 0; dp 2 has its one already -> still 616,562,688; tp 2 x dp 2 has two ->
 * 1,233,125,376, comms_min 1 adds none; the total grows by exactly the term. */
static void test_comms_min(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = bf16_recipe();
    const struct {
        uint32_t tp, dp, min;
        uint64_t want;
    } c[5] = {{1, 1, 0, 0},
              {1, 1, 1, 616562688ull},
              {1, 2, 0, 616562688ull},
              {1, 2, 1, 616562688ull},
              {2, 2, 1, 1233125376ull}};
    uint64_t total0 = 0;
    for (int i = 0; i < 5; i++) {
        PlanInput in = fx_input(&m, &g, &r);
        in.tp = c[i].tp, in.dp = c[i].dp, in.gbs = c[i].dp, in.comms_min = c[i].min;
        Plan p;
        Err e;
        CHECKF(plan_build(&in, &p, &e) == ST_OK, "case %d: %s", i, e.msg);
        CHECKF(p.mem[MT_COMM_BUFFER].bytes == c[i].want, "case %d: %llu bytes, expected %llu", i,
               (unsigned long long)p.mem[MT_COMM_BUFFER].bytes, (unsigned long long)c[i].want);
        if (i == 0) total0 = p.total_bytes;
        if (i == 1) CHECK_EQ_U64(p.total_bytes - total0, 616562688ull);
    }
}

static void test_more_dp_less_state(void)
{
    ModelSpec m = big();
    GpuSpec g = fx_gpu();
    Recipe rs[3] = {bf16_recipe(), te_recipe(), fp8lm_recipe()};
    for (int i = 0; i < 3; i++)
        for (int sh = SHARD_DIST_OPT; sh <= SHARD_ZERO3; sh++) {
            uint64_t prev = UINT64_MAX;
            for (uint32_t dp = 1; dp <= 64; dp *= 2) {
                PlanInput in = fx_input(&m, &g, &rs[i]);
                in.tp = 8, in.pp = 8, in.dp = dp, in.sharding = (Sharding)sh, in.gbs = 64 * 8;
                Plan p;
                CHECK(plan_build(&in, &p, NULL) == ST_OK);
                uint64_t st = p.cat_bytes[MC_STATE];
                CHECKF(dp == 1 || st < prev, "recipe %d sharding %d dp %u: %llu !< %llu", i, sh, dp,
                       (unsigned long long)st, (unsigned long long)prev);
                prev = st;
            }
        }
}

/* plan_build_memory_first (the sweep's build): a plan that fits is the complete plan, bit for bit in
 * every figure a sweep prints; one that does not fit has the same memory, fits flag and limit, and
 * stops there (its collectives and time are not built: left as the caller's buffer had them). The
 * 175B-shaped model: TP 1 x PP 8 x DP 1 holds 175e9 / 8 = 21.9e9 parameters per GPU, over 80 GiB at
 * any recipe (2 B of BF16 weight alone is 43.8 GB, 4 B of FP32 master 87.5 GB); TP 8 x PP 8 x DP 64
 * with ZeRO-1 holds 2.7e9 (5.5 GB of weights, 12 B of master and Adam / 64) and fits. */
static void test_memory_first(void)
{
    ModelSpec m = big();
    GpuSpec g = fx_gpu();
    Recipe r = te_recipe();
    for (uint32_t dp = 1; dp <= 64; dp *= 64) {
        PlanInput in = fx_input(&m, &g, &r);
        in.tp = dp == 1 ? 1 : 8, in.pp = 8, in.dp = dp, in.sharding = SHARD_ZERO1, in.gbs = 64 * 8;
        static Plan full, first;
        PlanReject w1, w2;
        memset(&first, 0x5a, sizeof first); /* what memory_first leaves alone shows as 0x5a bytes */
        CHECK(plan_build_fast(&in, &full, &w1) == ST_OK && w1 == REJECT_NONE);
        CHECK(plan_build_memory_first(&in, &first, &w2) == ST_OK && w2 == REJECT_NONE);
        CHECK_EQ_U64(first.total_bytes, full.total_bytes);
        CHECK_EQ_U64(first.limit_bytes, full.limit_bytes);
        CHECK_EQ_INT(first.fits, full.fits);
        CHECK(!memcmp(first.mem, full.mem, sizeof full.mem));
        if (dp == 1) {
            CHECK(!full.fits);
            const unsigned char *b = (const unsigned char *)&first.time.step_s;
            CHECK(b[0] == 0x5a && b[7] == 0x5a); /* no time built for a plan that does not fit */
        } else {
            CHECK(full.fits);
            CHECK(first.time.step_s == full.time.step_s && first.tokens_per_s == full.tokens_per_s);
            CHECK(first.mfu_bf16_pct == full.mfu_bf16_pct && first.advice_mask == full.advice_mask);
            CHECK(!memcmp(first.coll, full.coll, sizeof full.coll));
        }
    }
}

/* Under PP each in-flight micro-batch keeps the scale_inv of its saved FP8 inputs: 4 B per linear's
 * input under per-tensor scaling. The tiny model (2 layers) at PP 2, 4 micro-batches: stage 0 holds 1
 * layer and has min(pp - stage, m) = 2 micro-batches in flight: 2 x 1 x 4 linears x 4 B = 32 B in its
 * transient, nothing with block scales (their scales are not per tensor), nothing at PP 1 or with a
 * BF16 recipe (no saved FP8 inputs). Block scales add instead the 1x128 tiles of the FP8 output gradient
 * in both layouts, at either PP: the widest output FC1's (4 tokens, 32): row-wise 4 x ceil(32 / 128) = 4
 * scales, transposed 32 x ceil(4 / 128) = 32 scales, 36 x 4 B = 144 B. */
static void test_pp_saved_scale_inv(void)
{
    ModelSpec m = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe t = te_recipe(), blk = te_recipe(), b = bf16_recipe();
    blk.act_gran = GRAN_1X128;
    const Recipe *rs[3] = {&t, &blk, &b};
    uint64_t tr[3][2]; /* recipe x (pp 1, pp 2) */
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            PlanInput in = fx_input(&m, &g, rs[i]);
            in.pp = k ? 2 : 1, in.mbs = 1, in.gbs = 4;
            Plan p;
            Err e = {0};
            CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
            CHECK_EQ_INT(p.stage, 0);
            tr[i][k] = p.mem[MT_TRANSIENT].bytes;
        }
    CHECK_EQ_U64(tr[1][1] - tr[0][1], 144 - 32); /* block scales against per tensor, at PP 2 */
    CHECK_EQ_U64(tr[1][0] - tr[0][0], 144);      /* PP 1: one micro-batch in flight, no copies */
    CHECK_EQ_U64(tr[2][1], tr[2][0]);            /* BF16: none (one layer's working set at either PP) */
}

static void test_recompute_cuts_activations(void)
{
    ModelSpec m = big();
    GpuSpec g = fx_gpu();
    Recipe r = bf16_recipe();
    for (int attn = 0; attn < ATTN_COUNT_; attn++)
        for (int sp = 0; sp < 2; sp++) {
            uint64_t act[RECOMPUTE_COUNT_];
            for (int rc = 0; rc < RECOMPUTE_COUNT_; rc++) {
                PlanInput in = fx_input(&m, &g, &r);
                in.tp = 8, in.pp = 4, in.sp = sp, in.attn = (AttnImpl)attn, in.recompute = (Recompute)rc, in.gbs = 16;
                in.dropout = 1;
                Plan p;
                CHECK(plan_build(&in, &p, NULL) == ST_OK);
                act[rc] = p.mem[MT_ACT_LAYER_HP].bytes + p.mem[MT_ACT_LAYER_FP8].bytes + p.mem[MT_ACT_ATTN].bytes +
                          p.mem[MT_ACT_MASK].bytes;
            }
            CHECK(act[RECOMPUTE_FULL] < act[RECOMPUTE_SELECTIVE]);
            CHECK(act[RECOMPUTE_SELECTIVE] <= act[RECOMPUTE_NONE]);
            if (attn == ATTN_MATERIALIZED) CHECK(act[RECOMPUTE_SELECTIVE] < act[RECOMPUTE_NONE]);
        }
}

static void test_fp8_comm_not_above_bf16(void)
{
    ModelSpec m = big();
    GpuSpec g = fx_gpu();
    Recipe b = bf16_recipe(), t = te_recipe(), f = fp8lm_recipe();
    for (uint32_t tp = 2; tp <= 8; tp *= 2) {
        Plan pb, pt, pf;
        PlanInput in = fx_input(&m, &g, &b);
        in.tp = tp, in.pp = 4, in.dp = 4, in.sharding = SHARD_DIST_OPT, in.gbs = 64;
        CHECK(plan_build(&in, &pb, NULL) == ST_OK);
        in.recipe = &t;
        CHECK(plan_build(&in, &pt, NULL) == ST_OK);
        in.recipe = &f;
        CHECK(plan_build(&in, &pf, NULL) == ST_OK);
        CHECK(pt.tp_comm_bytes < pb.tp_comm_bytes);  /* FP8 all-gather of SP inputs */
        CHECK(pt.dp_comm_bytes == pb.dp_comm_bytes); /* TE keeps FP32 gradients and BF16 gathers */
        CHECK(pf.dp_comm_bytes < pb.dp_comm_bytes);
        CHECK(pf.weight_comm_bytes <= pb.weight_comm_bytes / 2);
        for (int c = 0; c < CO_COUNT_; c++) /* amax reductions exist only with FP8 */
            if (c != CO_AMAX_AR) CHECK(pf.coll[c].step_bytes <= pb.coll[c].step_bytes);
    }
}

static void test_tp_shards_weights(void)
{
    ModelSpec m = big();
    GpuSpec g = fx_gpu();
    Recipe r = bf16_recipe();
    Plan p1, p8;
    PlanInput in = fx_input(&m, &g, &r);
    in.pp = 8, in.gbs = 8;
    CHECK(plan_build(&in, &p1, NULL) == ST_OK);
    in.tp = 8;
    CHECK(plan_build(&in, &p8, NULL) == ST_OK);
    CHECK_EQ_U64(p8.params_gemm_gpu * 8, p1.params_gemm_gpu);
    CHECK(p8.coll[CO_TP_AG_FWD].calls == 2ull * 12 * p8.microbatches);
    CHECK(p8.coll[CO_TP_AR_FWD].calls == 0);
    in.sp = 0;
    CHECK(plan_build(&in, &p8, NULL) == ST_OK);
    CHECK(p8.coll[CO_TP_AR_FWD].calls == 2ull * 12 * p8.microbatches);
    CHECK(p8.coll[CO_TP_AG_FWD].calls == 0);
}

/* ---- invalid inputs ------------------------------------------------------------------------------------- */

static void expect_reject(PlanInput in, PlanReject want, const char *msg_part)
{
    Plan p;
    Err e = {0};
    PlanReject why;
    Status st = plan_build(&in, &p, &e);
    int built = want == REJECT_OVERFLOW || want == REJECT_NONFINITE; /* found while building, not by validate */
    CHECKF(st == (built ? ST_OVERFLOW : ST_USAGE), "status %d for reject %d", st, want);
    CHECK_CONTAINS(e.msg, msg_part);
    CHECK_EQ_INT(plan_validate(&in, NULL), built ? REJECT_NONE : want);
    /* a layout refused by validation is a usage error (ST_USAGE), the same through both sweep builds */
    Status fast = plan_build_fast(&in, &p, &why);
    CHECK(fast == (built ? ST_OVERFLOW : ST_USAGE));
    CHECK_EQ_INT(why, want);
    if (!built) {
        why = REJECT_NONE;
        CHECK(plan_build_memory_first(&in, &p, &why) == ST_USAGE);
        CHECK_EQ_INT(why, want);
    }
}

static void test_invalid_layouts(void)
{
    ModelSpec m = big();
    GpuSpec g = fx_gpu();
    Recipe r = bf16_recipe(), t = te_recipe();
    PlanInput in = fx_input(&m, &g, &r);
    PlanInput x = in;
    x.tp = 5;
    expect_reject(x, REJECT_HEADS_TP, "--tp 5");
    ModelSpec gqa = m;
    gqa.kv_heads = 8;
    x = in, x.model = &gqa, x.tp = 16;
    expect_reject(x, REJECT_HEADS_TP, "kv_heads");
    x = in, x.pp = 5;
    expect_reject(x, REJECT_LAYERS_PP, "96 layers");
    x = in, x.pp = 4, x.vpp = 5;
    expect_reject(x, REJECT_LAYERS_PP, "pp*vpp");
    x = in, x.vpp = 2;
    expect_reject(x, REJECT_VPP, "--pp > 1");
    x = in, x.world = 64, x.tp = 8, x.dp = 4;
    expect_reject(x, REJECT_WORLD, "world size 64");
    x = in, x.dp = 4, x.mbs = 2, x.gbs = 100;
    expect_reject(x, REJECT_GBS, "--gbs 100");
    x = in, x.tp = 0;
    expect_reject(x, REJECT_ZERO, "--tp 0");
    x = in, x.mbs = 0;
    expect_reject(x, REJECT_ZERO, "--mbs 0");
    x = in, x.seq = 4096;
    expect_reject(x, REJECT_SEQ_POS, "learned position embeddings for 2048");
    x = in, x.cp = 3, x.seq = 2044;
    expect_reject(x, REJECT_SEQ_CP, "--cp 3");
    x = in, x.recipe = &t, x.gpu = &g;
    GpuSpec a100 = g;
    a100.sm = 80, a100.flops_fp8 = 0;
    x.gpu = &a100;
    expect_reject(x, REJECT_HW, "SM 8.9");
    x = in, x.eff_gemm_bf16 = 1.5; /* 0 means "the GPU's ceiling"; above 1 is out of range */
    expect_reject(x, REJECT_KNOB, "efficiencies");
    /* efficiencies: at least PLAN_EFF_MIN = 0.001; a subnormal one made the step time inf and tokens/s NaN */
    x = in, x.eff_net = 4.9e-324;
    expect_reject(x, REJECT_KNOB, "[0.001, 1]");
    x = in, x.eff_hbm = 1e-300;
    expect_reject(x, REJECT_KNOB, "[0.001, 1]");
    x = in, x.eff_gemm_bf16 = 0.000999;
    expect_reject(x, REJECT_KNOB, "[0.001, 1]");
    x = in, x.eff_attn = 1e-310;
    expect_reject(x, REJECT_KNOB, "[0.001, 1]");
    x = in, x.eff_net = 0; /* only the GEMM and attention efficiencies take 0 (= the model's) */
    expect_reject(x, REJECT_KNOB, "[0.001, 1]");
    {
        Plan p;
        x = in, x.eff_net = x.eff_hbm = x.eff_gemm_bf16 = x.eff_attn = 0.001; /* the bound itself plans */
        CHECK(plan_build(&x, &p, NULL) == ST_OK);
        CHECK(isfinite(p.tokens_per_s) && p.tokens_per_s > 0);
        x = in, x.eff_gemm_bf16 = x.eff_gemm_fp8 = x.eff_attn = 0; /* 0 = the model's: the default plan */
        CHECK(plan_build(&x, &p, NULL) == ST_OK);
    }
    /* rates so small (subnormal bytes/s and FLOP/s in a catalog) that the step time is inf: refused */
    GpuSpec dead = g;
    dead.hbm_bw = dead.flops_bf16 = dead.flops_fp8 = dead.flops_fp32 = dead.intra_bw = dead.inter_bw = 1e-310;
    dead.mamf_bf16 = dead.mamf_fp8 = 1e-310;
    x = in, x.gpu = &dead;
    expect_reject(x, REJECT_NONFINITE, "step time (s) of");
    x = in, x.overlap_tp = -0.1;
    expect_reject(x, REJECT_KNOB, "overlaps");
    x = in, x.max_mem_frac = 0;
    expect_reject(x, REJECT_KNOB, "memory limit");
    /* the launch floor is in [0, 1) s (1 s per kernel is no GPU; a negative or NaN one would make times
     * negative or NaN), and the attention kernel one of the enum's */
    x = in, x.launch_s = 1.0;
    expect_reject(x, REJECT_KNOB, "the launch floor in [0, 1) s");
    x = in, x.launch_s = -1e-9;
    expect_reject(x, REJECT_KNOB, "the launch floor in [0, 1) s");
    x = in, x.launch_s = NAN;
    expect_reject(x, REJECT_KNOB, "the launch floor in [0, 1) s");
    x = in, x.attn = ATTN_COUNT_;
    expect_reject(x, REJECT_KNOB, "efficiencies must be");
    ModelSpec zero = m;
    zero.hidden = 0;
    x = in, x.model = &zero;
    expect_reject(x, REJECT_MODEL, "must be positive");
    /* sizes whose byte counts pass 2^64 */
    ModelSpec huge = m;
    huge.layers = 1 << 16, huge.hidden = 1u << 30, huge.ffn_hidden = 1u << 30, huge.heads = huge.kv_heads = 1;
    huge.head_dim = 1u << 30, huge.vocab = 1u << 30, huge.seq_len = 1u << 30, huge.pos = POS_ROPE;
    x = in, x.model = &huge, x.seq = 2;
    expect_reject(x, REJECT_OVERFLOW, "passes 2^64");
    x.recipe = NULL;
    CHECK(plan_build(&x, NULL, NULL) == ST_SOFTWARE);
}

int main(void)
{
    RUN(test_tiny_model_by_hand);
    RUN(test_tiny_fp8_terms);
    RUN(test_sharding_by_hand);
    RUN(test_totals_are_sums);
    RUN(test_comms_min);
    RUN(test_more_dp_less_state);
    RUN(test_memory_first);
    RUN(test_pp_saved_scale_inv);
    RUN(test_recompute_cuts_activations);
    RUN(test_fp8_comm_not_above_bf16);
    RUN(test_tp_shards_weights);
    RUN(test_invalid_layouts);
    return test_summary();
}
