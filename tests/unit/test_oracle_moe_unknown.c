/* tests/unit/test_oracle_moe_unknown.c — plan --unknown (plan.h PLAN_UNK_*): what each implementation choice a
 * source leaves open takes off a plan's memory, the band's two ends and the verdict at each side of it, worked
 * out by hand on the oracle models (support/oracle_fixtures.h); the names table. */
#include <math.h>
#include <string.h>

#include "planner/plan_internal.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static int build(const PlanInput *in, Plan *p)
{
    Err e = {0};
    Status st = plan_build(in, p, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    return st == ST_OK;
}

/* --unknown: what each open implementation choice (plan.h PLAN_UNK_*) alone takes off the total, worked by hand;
 * the low end with all of them; and the verdict at each side of the band. No allocator reserve (frag 0), so a
 * saving is the terms' own difference. TE-style recipe: E4M3 row-wise and column-wise copies, E4M3 saved inputs,
 * E5M2 backward, per-tensor scales (no block scales), FP32 gradients; micro-batch 1, pp = 1, gbs 1.
 *
 * The MoE model ox_moe(768) (plan_moe_mem.c's paths): tok = 512, h = 256, q = 2 x 128 = 256, one dense layer
 * (FFN 768, SwiGLU) and one MoE layer; pp = 1 holds each layer once in flight (1 unit each).
 *   attn_out: each layer's BF16 attention output 512 x 256 x 2 B = 262,144, twice: 524,288.
 *   dense_act: the dense FFN's FC1 output 512 x 1536 x 2 B = 1,572,864 (BF16) and FC2's input 512 x 768 x 1 B
 *     = 393,216 (FP8) become FC1's output in FP8, 786,432: 1,179,648 less; the transient is the MoE layer's
 *     backward, 524,288 + 2 x 2 x (512 x 256 + 1024 x 256) = 1,572,864 + dispatch and combine 1024 x 256 x 4 =
 *     1,048,576 + SwiGLU's d(outputs) (512 + 1024) x 128 x 2 = 393,216 + the router 512 x 88 = 45,056 + the MoE
 *     input's gradient 262,144 + d(QKV) 512 x 768 x 2 = 786,432: 4,632,576 (the dense layer's: dX + d(residual)
 *     2 x 512 x 256 x 2 = 524,288 + d(FC1 output) 512 x 1536 x 2 = 1,572,864 + its FP8 copies 2 x 786,432 =
 *     1,572,864 + SwiGLU's d(output) 512 x 768 x 2 = 786,432: 4,456,448), and the rebuilt FC2 input 512 x 768 x
 *     2 B = 786,432 makes the dense layer's 5,242,880 the larger: the transient grows by 610,304, so the saving
 *     is 1,179,648 - 610,304 = 569,344.
 *   fp8_weight_cache: the copies held, 2 B a weight: dense-DP weights (dense layer QKV 768 x 256 = 196,608 +
 *     proj 65,536 + FC1 1536 x 256 = 393,216 + FC2 256 x 768 = 196,608 = 851,968; MoE layer attention 262,144 +
 *     shared FC1 256 x 256 = 65,536 + FC2 256 x 128 = 32,768 = 360,448) 1,212,416 x 2 = 2,424,832 and the 8
 *     experts' 8 x (256 x 256 + 256 x 128) = 786,432 x 2 = 1,572,864: 3,997,696; the largest GEMM's copies, the
 *     8 experts' FC1 grouped 8 x 256 x 256 = 524,288 x 2 = 1,048,576, join the transient: 2,949,120.
 *   all three: 524,288 + 569,344 + 2,949,120 = 4,042,752 (the dense layer's backward stays the larger).
 * The dense model ox_tiny(64, 16) (plan_mem.c's paths): 4 layers, tok = 16, h = q = 8, FFN 16 (GeLU), 4 units.
 *   attn_out: 16 x 8 x 2 B = 256 a layer, x 4 = 1,024.
 *   dense_act: FC1's output 16 x 16 x 2 = 512 (BF16) and FC2's input 16 x 16 x 1 = 256 become 16 x 16 x 1 = 256:
 *     512 a layer, x 4 = 2,048; the rebuilt FC2 input 512 B joins a backward of 2 x 16 x 8 x 2 = 512 + d(QKV
 *     output, the widest) 16 x 24 x 2 = 768 + its FP8 copies 2 x 384 = 768: 2,048 + 512, below the loss's 16 x
 *     64 x (10 - 4) B = 6,144, which stays the transient: 2,048.
 *   fp8_weight_cache: 512 weights a layer x 4 x 2 B = 4,096 (the cast QKV copy 192 x 2 = 384 stays below the
 *     loss too); with the stack's --fp8-weight-cache off the same 4,096 are the copies saved per layer and
 *     micro-batch (act_layer_fp8), which the saving drops as well.
 *   all three: 1,024 + 2,048 + 4,096 = 7,168.
 *   Materialized attention keeps no BF16 output (nothing for attn_out; its fp32 d(probabilities) 16 x 2 x 16 x 4 B
 *   = 2,048 grow the backward to 4,096 + 512 + 384, still below the loss): 4,096 + 0 + 2,048 = 6,144.
 *   The BF16 recipe: no FP8 copy (nothing for fp8_weight_cache), the flash output is the out-projection's saved
 *   input (nothing for attn_out), and dense_act keeps FC1's output in BF16 as it was and drops FC2's BF16 input,
 *   16 x 16 x 2 = 512 a layer: 2,048.
 *   act_ckpt (BF16, flash): a layer keeps norm1 16 x 8 x 2 + 16 x 4 = 320, Q, K, V 16 x 24 x 2 = 768, the output
 *   256, QKV's input 256 (1,600), norm2 320, FC1's output 16 x 16 x 2 = 512, FC1's input 256, FC2's input 512
 *   (1,600) and the flash statistics 16 x 2 x 4 = 128: 3,328, x 4 = 13,312; checkpointed, its input 16 x 8 x 2 =
 *   256, x 4 = 1,024: 12,288 less. The rebuilt layer joins a backward of 2 x 16 x 8 x 2 = 512 + d(QKV output)
 *   16 x 24 x 2 = 768: 1,280 + 3,328 = 4,608, below the loss's 6,144: 12,288. With dense_act too the low end is
 *   the same (a checkpointed layer keeps its input whatever its FFN saves; the rebuilt layer, 2,816, stays below
 *   the loss): the band is 12,288, not the sum of the savings.
 *   routing_map (ox_moe(768), 512 tokens, top-2: 1,024 routed rows, 8 experts, all local at ep 1): Megatron-Core's
 *     permutation keeps, unfused, the int64 sorted indices 512 x 2 x 8 = 8,192 and the fp32 probabilities and bool
 *     mask [8, 512], 8 x 512 x 5 = 20,480 (28,672); fused (Transformer Engine), the int32 row_id_map [512, 2 x 8 +
 *     1] 512 x 17 x 4 = 34,816 and the two chunk sorts' int32 maps 1,024 x 8 = 8,192 (43,008). The compact map
 *     keeps two int32 indices a row, 1,024 x 8 = 8,192: 20,480 less unfused, 34,816 fused (act_moe only; the
 *     backward's working set does not hold them). This executor's own bookkeeping (stack fp8plan) is not open:
 *     nothing.
 * UNK3: the first three (the MoE rows' and the verdicts' band). */
#define UNK3 (PLAN_UNK_FP8_WEIGHT_CACHE | PLAN_UNK_ATTN_OUT | PLAN_UNK_DENSE_ACT)
static void test_unknown_band(void)
{
    static const struct {
        int moe;      /* ox_moe(768), else ox_tiny(64, 16) */
        int cache;    /* the stack's fp8_weight_cache */
        int bf16;     /* the BF16 recipe instead of the TE one */
        int mat;      /* materialized attention */
        unsigned unk; /* --unknown */
        uint64_t each[PLAN_UNK_COUNT_], band;
        int permute_fusion; /* the stack's (Transformer Engine's fused permute) */
        KernelFusion fusion;
    } rows[] = {
        {1, 1, 0, 0, UNK3, {2949120, 524288, 569344}, 4042752, 0, FUSE_TE},
        {1, 1, 0, 0, PLAN_UNK_ATTN_OUT, {0, 524288, 0}, 524288, 0, FUSE_TE},
        {1, 1, 0, 0, PLAN_UNK_DENSE_ACT | PLAN_UNK_FP8_WEIGHT_CACHE, {2949120, 0, 569344}, 3518464, 0, FUSE_TE},
        {0, 1, 0, 0, UNK3, {4096, 1024, 2048}, 7168, 0, FUSE_TE},
        {0, 0, 0, 0, PLAN_UNK_FP8_WEIGHT_CACHE, {4096, 0, 0}, 4096, 0, FUSE_TE},
        {0, 1, 0, 1, UNK3, {4096, 0, 2048}, 6144, 0, FUSE_TE},
        {0, 1, 1, 0, UNK3, {0, 0, 2048}, 2048, 0, FUSE_TE},
        {0, 1, 1, 0, PLAN_UNK_ACT_CKPT, {0, 0, 0, 12288}, 12288, 0, FUSE_TE},
        {0, 1, 1, 0, PLAN_UNK_ALL_, {0, 0, 2048, 12288}, 12288, 0, FUSE_TE},
        {0, 1, 0, 0, 0, {0, 0, 0}, 0, 0, FUSE_TE},
        {1, 1, 0, 0, PLAN_UNK_ROUTING_MAP, {0, 0, 0, 0, 20480}, 20480, 0, FUSE_TE},
        {1, 1, 0, 0, PLAN_UNK_ROUTING_MAP, {0, 0, 0, 0, 34816}, 34816, 1, FUSE_TE},
        {1, 1, 0, 0, PLAN_UNK_ROUTING_MAP, {0, 0, 0, 0, 0}, 0, 1, FUSE_FP8PLAN},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        ModelSpec m = rows[i].moe ? ox_moe(768) : ox_tiny(64, 16);
        GpuSpec g = fx_gpu();
        Recipe r = rows[i].bf16 ? fx_bf16_recipe("bf16", 0) : fx_te_recipe("te", 0);
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1, in.frag_frac = 0, in.fp8_weight_cache = rows[i].cache, in.mem_unknown = rows[i].unk;
        in.permute_fusion = rows[i].permute_fusion, in.fusion = rows[i].fusion;
        if (rows[i].mat) in.attn = ATTN_MATERIALIZED;
        Plan p, base;
        if (!build(&in, &p)) return;
        for (int k = 0; k < PLAN_UNK_COUNT_; k++)
            CHECKF(p.unknown_bytes[k] == rows[i].each[k], "row %zu: %s takes off %llu B, expected %llu", i,
                   plan_unknowns[k].name, (unsigned long long)p.unknown_bytes[k], (unsigned long long)rows[i].each[k]);
        CHECK_EQ_U64(p.total_bytes - p.low_bytes, rows[i].band);
        in.mem_unknown = 0; /* the high end is the plan without --unknown, term for term */
        if (!build(&in, &base)) return;
        CHECK(!memcmp(p.mem, base.mem, sizeof p.mem));
        CHECK_EQ_U64(p.total_bytes, base.total_bytes);
        in.mem_savings = rows[i].unk; /* the low end is the plan with the savings taken */
        if (!build(&in, &base)) return;
        CHECK_EQ_U64(base.total_bytes, p.low_bytes);
    }
    /* the copies' terms with the saving taken: none held (ox_moe: 1,212,416 dense-DP weights, 786,432 expert) */
    ModelSpec m = ox_moe(768);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.frag_frac = 0;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes, 1212416);
    CHECK_EQ_U64(p.mem[MT_FP8_EXPERT].bytes, 1572864);
    in.mem_savings = PLAN_UNK_FP8_WEIGHT_CACHE;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_FP8_ROWWISE].bytes + p.mem[MT_FP8_COLWISE].bytes + p.mem[MT_FP8_EXPERT].bytes, 0);
    /* ZeRO-3 holds no copy across layers already: the saving takes nothing off */
    in.mem_savings = 0, in.mem_unknown = PLAN_UNK_FP8_WEIGHT_CACHE, in.sharding = SHARD_ZERO3, in.dp = 2, in.gbs = 2;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.unknown_bytes[0], 0);
    CHECK_EQ_U64(p.low_bytes, p.total_bytes);
}

/* The verdict at each side of the band (frag 0, so the capacity changes nothing else): limit = capacity x
 * max_mem_frac; FITS while the high end is within the limit, UNCERTAIN while only the low end is, OVER LIMIT
 * with the low end above the limit but within capacity, OOM above capacity. Without --unknown the band is one
 * point and the verdict the old one (FITS / OVER LIMIT / OOM from the total). */
static void test_unknown_verdicts(void)
{
    ModelSpec m = ox_moe(768);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.frag_frac = 0, in.mem_unknown = UNK3, in.max_mem_frac = 1;
    Plan p;
    if (!build(&in, &p)) return;
    uint64_t hi = p.total_bytes, lo = p.low_bytes;
    CHECK_EQ_U64(hi - lo, 4042752); /* test_unknown_band */
    static const struct {
        int64_t cap_off; /* capacity = hi + cap_off (hi_side) or lo + cap_off; with frac 0.5 and cap_off 1:
                            2 lo - 2 (limit lo - 1) */
        int hi_side;
        double frac;
        PlanVerdict want;
        int fits, may;
    } rows[] = {
        {0, 1, 1, PLAN_FITS, 1, 1}, {-1, 1, 1, PLAN_UNCERTAIN, 0, 1},   {0, 0, 1, PLAN_UNCERTAIN, 0, 1},
        {-1, 0, 1, PLAN_OOM, 0, 0}, {1, 0, 0.5, PLAN_OVER_LIMIT, 0, 0}, {0, 0, 0.5, PLAN_OVER_LIMIT, 0, 0},
    }; /* the last: the low end exactly the capacity, above the limit (half of it): over the limit, not OOM */
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        uint64_t base = rows[i].hi_side ? hi : lo;
        g.hbm_bytes = (uint64_t)((int64_t)base + rows[i].cap_off);
        if (rows[i].frac < 1 && rows[i].cap_off) g.hbm_bytes = 2 * lo - 2; /* limit lo - 1, capacity above lo */
        in.max_mem_frac = rows[i].frac;
        if (!build(&in, &p)) return;
        CHECKF(p.verdict == rows[i].want, "row %zu: %s, expected %s", i, plan_verdict_name(p.verdict),
               plan_verdict_name(rows[i].want));
        CHECK_EQ_INT(p.fits, rows[i].fits);
        CHECK_EQ_INT(plan_may_fit(&p), rows[i].may);
        /* an uncertain plan is complete (sweeps rank it): its time is the high end's */
        if (rows[i].want == PLAN_UNCERTAIN) CHECK(p.time.step_s > 0 && !(p.advice_mask & (1u << ADV_OOM)));
    }
    in.mem_unknown = 0, in.max_mem_frac = 1, g.hbm_bytes = hi - 1; /* no band: the total decides */
    if (!build(&in, &p)) return;
    CHECK(p.verdict == PLAN_OOM && p.low_bytes == p.total_bytes);
}

/* --unknown's names: one table, in bit order, parsed and printed back. */
static void test_unknown_names(void)
{
    for (int i = 0; i < PLAN_UNK_COUNT_; i++) CHECK_EQ_U64(plan_unknowns[i].bit, 1u << i);
    unsigned bits;
    size_t at = 0, len = 0;
    CHECK(!plan_unknown_parse("dense_act,attn_out", &bits, &at, &len) &&
          bits == (PLAN_UNK_DENSE_ACT | PLAN_UNK_ATTN_OUT));
    CHECK(!plan_unknown_parse("none", &bits, &at, &len) && bits == 0);
    CHECK(plan_unknown_parse("attn_out,bogus", &bits, &at, &len) && at == 9 && len == 5);
    CHECK(plan_unknown_parse("", &bits, &at, &len) && len == 0);
    CHECK(plan_unknown_parse("attn_out,", &bits, &at, &len) && at == 9 && len == 0);
    char buf[80];
    plan_unknown_format(PLAN_UNK_ALL_, buf, sizeof buf);
    CHECK(!strcmp(buf, "fp8_weight_cache,attn_out,dense_act,act_ckpt,routing_map"));
    plan_unknown_format(0, buf, sizeof buf);
    CHECK(!strcmp(buf, "none"));
}

int main(void)
{
    RUN(test_unknown_band);
    RUN(test_unknown_verdicts);
    RUN(test_unknown_names);
    return test_summary();
}
