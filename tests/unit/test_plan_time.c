/* tests/unit/test_plan_time.c — the time model's parts worked by hand: GEMM
 * tiles, waves, split-K, roofline and launch floor (plan_gemm.c); attention
 * kernel curves (arch.c, plan_time.c); NCCL's alpha-beta with the protocol
 * choice and the bandwidth a group's ranks share (plan_comm.c); overlap. */
#include <stdlib.h>

#include "planner/arch.h"
#include "planner/plan_internal.h"
#include "support/fixtures.h"
#include "test.h"

/* fx_gpu (SM 9.0: 128x256 tiles, k0 128 / 256) with 132 SMs, MAMF 800 / 1300 TFLOP/s, a 4 us launch floor. */
static PlanInput hopper(GpuSpec *g)
{
    *g = fx_gpu();
    g->sms = 132, g->mamf_bf16 = 800e12, g->mamf_fp8 = 1300e12;
    PlanInput in;
    plan_input_defaults(&in);
    in.gpu = g;
    in.launch_s = 4e-6;
    return in;
}

static void test_gemm_waves(void)
{
    GpuSpec g;
    PlanInput in = hopper(&g);
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    /* one SM's rate: 800e12 x (1 + 128/2048) / 132 = 850e12 / 132 = 6.439e12 FLOP/s */
    CHECK_REL(gg.sm_rate16, 850e12 / 132, 1e-12);
    CHECK_REL(gg.sm_rate8, 1300e12 * 1.125 / 132, 1e-12);
    /* 4096^3 BF16: 32 x 16 = 512 tiles, ceil(512/132) = 4 waves, each tile 2 x 128 x 256 x (4096 + 128)
     * = 276,824,064 FLOPs: 4 x 276,824,064 / (850e12/132) = 1.107296256e9 x 132 / 850e12 = 1.71956595e-4 s
     * (the ideal 2 x 4096^3 / 800e12 = 1.718e-4: the 3.88 -> 4 wave loss about cancels the k0 credit).
     * HBM: 3 x 4096^2 x 2 B / (3.35e12 x 0.8) = 3.76e-5 s, below. */
    CHECK_REL(gemm_time(&gg, 4096, 4096, 4096, 1, 0, 2), 1.7195659505e-4, 1e-9);
    /* FP8: tile 2 x 32768 x (4096 + 256) = 285,212,672 FLOPs x 4 waves / (1300e12 x 1.125 / 132) = 1.02969e-4 s */
    CHECK_REL(gemm_time(&gg, 4096, 4096, 4096, 1, 1, 2), 1.029690877e-4, 1e-9);
    /* wave quantization: M 1408 = 11 x 128, N 3072 = 12 x 256: 132 tiles (the other orientation needs
     * ceil(1408/256) x 3072/128 = 6 x 24 = 144), one wave: 2 x 32768 x 4224 x 132 / 850e12 = 4.2989e-5 s
     * (HBM (1408 x 4096 + 4096 x 3072) x 2 + 1408 x 3072 x 2 = 45,350,912 B / 2.68e12 = 1.69e-5 s, below);
     * one more row (M 1409: 12 x 12 = 144 tiles either way) takes two waves */
    double one = gemm_time(&gg, 1408, 3072, 4096, 1, 0, 2), two = gemm_time(&gg, 1409, 3072, 4096, 1, 0, 2);
    CHECK_REL(one, 2.0 * 32768 * 4224 * 132 / 850e12, 1e-9);
    CHECK_REL(two, 2.0 * one, 1e-12);
    /* an operand-bound shape is timed by HBM: M 16896, N 256, K 4096 is 132 tiles (4.2989e-5 s of compute) but
     * moves (16896 x 4096 + 4096 x 256) x 2 + 16896 x 256 x 2 = 149,159,936 B / 2.68e12 = 5.56567e-5 s */
    CHECK_REL(gemm_time(&gg, 16896, 256, 4096, 1, 0, 2), 149159936.0 / 2.68e12, 1e-9);
    /* split-K: M 128, N 256, K 8192 is one tile; K splits min(132/1, 8192/256) = 32 ways into 32 tiles of
     * K 256, one wave: 2 x 32768 x (256 + 128) / 6.439e12 = 3.908e-6 s. The fp32 partials add
     * 128 x 256 x 8 B x 32 = 8,388,608 B to the HBM traffic: (128 x 8192 + 8192 x 256) x 2 + 128 x 256 x 2
     * + 8,388,608 = 14,745,600 B / 2.68e12 = 5.50209e-6 s, which is the time (the roofline). */
    CHECK_REL(gemm_time(&gg, 128, 256, 8192, 1, 0, 2), 14745600.0 / 2.68e12, 1e-9);
    /* a 16^3 GEMM: 2 x 32768 x (16 + 128) / 6.439e12 = 1.47e-6 s, below the 4 us launch floor */
    CHECK_NEAR(gemm_time(&gg, 16, 16, 16, 1, 0, 2), 4e-6, 0);
    /* a sub-wave GEMM too short to split: M 128, N 256, K 128 is one tile of 132 SMs, but K splits
     * min(132/1, floor(128/256) = 0) = 0 ways, so not at all: one wave of 2 x 32768 x (128 + 128) = 16,777,216
     * FLOPs at 850e12/132 per SM = 2.60530e-6 s (HBM (128 x 128 + 128 x 256) x 2 + 128 x 256 x 2 = 163,840 B /
     * 2.68e12 = 6.1e-8 s, below). Under a 1 us launch floor, so that the compute time shows. */
    in.launch_s = 1e-6;
    GemmGpu g1;
    gemm_gpu_init(&in, &g1);
    CHECK_REL(gemm_time(&g1, 128, 256, 128, 1, 0, 2), 16777216.0 * 132 / 850e12, 1e-9);
    /* split-K filling every SM, timed by compute: M 128, N 256, K 33,792 (132 x 256) is one tile that splits
     * min(132/1, 33792/256 = 132) = 132 ways: 1 x 132 = 132 tiles of K 256 are exactly one wave, 2 x 32768 x
     * (256 + 128) = 25,165,824 FLOPs at 850e12/132 per SM = 3.90806e-6 s. HBM made fast (1e18 B/s x 0.8), so
     * that the 60,620,800 B it moves (6.1e-11 s) do not hide the wave count; 1 us launch floor (g1). */
    g.hbm_bw = 1e18;
    GemmGpu g2;
    gemm_gpu_init(&in, &g2);
    CHECK_REL(gemm_time(&g2, 128, 256, 33792, 1, 0, 2), 25165824.0 * 132 / 850e12, 1e-9);
    g.hbm_bw = fx_gpu().hbm_bw;
    /* batched: 8 independent 4096^3 GEMMs are 4096 tiles, ceil(4096/132) = 32 waves (not 8 x 4 = 32: equal) */
    CHECK_REL(gemm_time(&gg, 4096, 4096, 4096, 8, 0, 2), 32 * 276824064.0 * 132 / 850e12, 1e-9);
    CHECK_NEAR(gemm_time(&gg, 0, 4096, 4096, 1, 0, 2), 0, 0);
    /* a layer's linears at once (gemm_time_linears): each GEMM the one above, bit for bit. Weights 4096 x 4096
     * (forward, dgrad and wgrad all the 4096^3 of 1.71956595e-4 s in BF16) and 1408 x 4096 (forward [4096 x 1408 x
     * 4096], dgrad [4096 x 4096 x 1408], wgrad [1408 x 4096 x 4096]), FP8 forward, BF16 backward, wgrad writing
     * 8 B an output; linear 1's dgrad left alone (bit 1 of no_dgrad), as are a zero-row weight's GEMMs: 0 s */
    uint64_t rows[] = {4096, 1408, 0}, cols[] = {4096, 4096, 4096};
    double fp[3], dg[3] = {-1, -1, -1}, wg[3];
    gemm_time_linears(&gg, 4096, rows, cols, 3, 1, 0, 8, 1u << 1, fp, dg, wg);
    for (int i = 0; i < 3; i++) {
        CHECK(fp[i] == gemm_time(&gg, 4096, rows[i], cols[i], 1, 1, 2));
        CHECK(wg[i] == gemm_time(&gg, rows[i], cols[i], 4096, 1, 0, 8));
        if (i != 1) CHECK(dg[i] == gemm_time(&gg, 4096, cols[i], rows[i], 1, 0, 2));
    }
    CHECK_REL(dg[0], 1.7195659505e-4, 1e-9);
    CHECK_REL(fp[0], 1.029690877e-4, 1e-9);
    CHECK(dg[1] == -1 && fp[2] == 0 && wg[2] == 0 && dg[2] == 0);
    /* the same on g2 (split-K rates, fast HBM) with shapes that split and that end in partial tiles: 256 x 33792
     * under 128 tokens is the split-K forward above (132 ways, 25,165,824 x 132 / 850e12 s in BF16), 300 x 777
     * leaves partial tiles on every side; BF16 forward, FP8 backward, every dgrad */
    uint64_t r2[] = {256, 300, 33792}, c2[] = {33792, 777, 256};
    gemm_time_linears(&g2, 128, r2, c2, 3, 0, 1, 2, 0, fp, dg, wg);
    for (int i = 0; i < 3; i++) {
        CHECK(fp[i] == gemm_time(&g2, 128, r2[i], c2[i], 1, 0, 2));
        CHECK(wg[i] == gemm_time(&g2, r2[i], c2[i], 128, 1, 1, 2));
        CHECK(dg[i] == gemm_time(&g2, 128, c2[i], r2[i], 1, 1, 2));
    }
    CHECK_REL(fp[0], 25165824.0 * 132 / 850e12, 1e-9);
}

/* DeepSeek-style block-scaled FP8 GEMMs on Hopper (planner/arch.c arch_blockwise_gemm_rel_sm90 = 0.96, from NVIDIA's
 * cuBLAS 12.9 figure of 1.75x BF16 over the MAMF ratio 1453.4 / 794.5 = 1.829: 1.75 / 1.829 = 0.957): a recipe with
 * 1x128 activation and 128x128 weight scales has its FP8 GEMMs rated at 0.96 of the per-tensor rate on SM 9.0; its BF16
 * GEMMs, a per-tensor recipe, the same recipe on SM 10.0 (Blackwell's block-scaled path is MXFP8's), an explicit
 * --eff-fp8 and a recipe with only one of the two granularities keep the full rate. */
static void test_gemm_blockwise_hopper(void)
{
    CHECK_NEAR(arch_blockwise_gemm_rel_sm90, 0.96, 0);
    GpuSpec g;
    PlanInput it = hopper(&g), ib = it;
    Recipe t = fx_te_recipe("te", 0), b = t;
    b.gemm_bwd = DT_E4M3, b.scaling = SCALING_CURRENT, b.act_gran = GRAN_1X128, b.weight_gran = GRAN_128X128;
    it.recipe = &t, ib.recipe = &b;
    GemmGpu gt, gb;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ib, &gb);
    CHECK(plan_block_gemm(&ib) && !plan_block_gemm(&it));
    /* one SM's FP8 rate: 1300e12 x 0.96 x (1 + 256/2048) / 132 = 1404e12 / 132 */
    CHECK_REL(gb.sm_rate8, 1404e12 / 132, 1e-12);
    CHECK_REL(gt.sm_rate8, 1300e12 * 1.125 / 132, 1e-12);
    CHECK_REL(gb.sm_rate16, gt.sm_rate16, 1e-15);
    /* FP8 4096^3: 4 waves of 285,212,672 FLOPs (test_gemm_waves) at 1404e12 / 132 per SM: 1,140,850,688 x 132 /
     * 1404e12 = 150,592,290,816 / 1.404e15 = 1.0725946639e-4 s (per-tensor 1.029690877e-4 s; HBM 2.5e-5 s, below) */
    CHECK_REL(gemm_time(&gb, 4096, 4096, 4096, 1, 1, 2), 1.0725946639e-4, 1e-9);
    CHECK_REL(gemm_time(&gt, 4096, 4096, 4096, 1, 1, 2), 1.029690877e-4, 1e-9);
    g.sm = 100;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ib, &gb);
    CHECK(!plan_block_gemm(&ib));
    CHECK_REL(gb.sm_rate8, gt.sm_rate8, 1e-15);
    g.sm = 90;
    ib.eff_gemm_fp8 = it.eff_gemm_fp8 = 0.5;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ib, &gb);
    CHECK_REL(gb.sm_rate8, gt.sm_rate8, 1e-15);
    ib.eff_gemm_fp8 = it.eff_gemm_fp8 = 0;
    b.weight_gran = GRAN_TENSOR;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ib, &gb);
    CHECK_REL(gb.sm_rate8, gt.sm_rate8, 1e-15);
}

static void test_gemm_ampere_and_overrides(void)
{
    GpuSpec g;
    PlanInput in = hopper(&g);
    g.sm = 80, g.sms = 108, g.mamf_bf16 = 280e12; /* Ampere: 256x128 tiles, k0 64 */
    GemmGpu gg;
    gemm_gpu_init(&in, &gg);
    /* 4096^3: 16 x 32 = 512 tiles, ceil(512/108) = 5 waves of 2 x 32768 x (4096 + 64) FLOPs at
     * 280e12 x 1.03125 / 108 per SM: 5 x 272,629,760 x 108 / 288.75e12 = 5.09852e-4 s */
    CHECK_REL(gemm_time(&gg, 4096, 4096, 4096, 1, 0, 2), 5 * 272629760.0 * 108 / 288.75e12, 1e-9);
    /* --eff-bf16 0.5 replaces the MAMF ceiling and the sustained fraction: 0.5 x 989e12 */
    g.sustained = 0.5;
    in.eff_gemm_bf16 = 0.5;
    gemm_gpu_init(&in, &gg);
    CHECK_REL(gg.sm_rate16, 494.5e12 * 1.03125 / 108, 1e-12);
    /* without the override the sustained fraction scales the MAMF: 280e12 x 0.5 x 1.03125 / 108 */
    in.eff_gemm_bf16 = 0;
    gemm_gpu_init(&in, &gg);
    CHECK_REL(gg.sm_rate16, 140e12 * 1.03125 / 108, 1e-12);
}

/* One layer, 16 heads of head_dim, seq 1024, micro-batch 1: the plan's attention time is one forward and
 * one backward of the kernel. */
static double attn_time(AttnImpl k, uint32_t head_dim)
{
    ModelSpec m = {.name = "a",
                   .layers = 1,
                   .hidden = 16 * head_dim,
                   .ffn_hidden = 4 * 16 * head_dim,
                   .heads = 16,
                   .kv_heads = 16,
                   .head_dim = head_dim,
                   .vocab = 1024,
                   .seq_len = 1024,
                   .norm = NORM_RMSNORM,
                   .mlp = MLP_SWIGLU,
                   .pos = POS_ROPE};
    GpuSpec g = fx_gpu(); /* SM 9.0, BF16 peak 989e12, sustained 1 */
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in;
    plan_input_defaults(&in);
    in.model = &m, in.gpu = &g, in.recipe = &r, in.gbs = 1, in.attn = k;
    Plan p;
    Err e;
    CHECKF(plan_build(&in, &p, &e) == ST_OK, "%s", e.msg);
    return p.time.attn_s;
}

static void test_attention_curves(void)
{
    /* FlashAttention-2 on Hopper, head dim 128: causal forward FLOPs 2 x 1024 x 1024 x 16 x 128 = 2^32;
     * forward efficiency 0.347 x 1024 / (1024 + 400) = 0.249528, backward 0.347 x 0.87 x 1024 / (1024 + 880)
     * = 0.162361; 2^32 / (989e12 x 0.249528) = 1.740380e-5 s, 2.5 x 2^32 / (989e12 x 0.162361)
     * = 6.686854e-5 s; together 8.427234e-5 s */
    CHECK_REL(attn_time(ATTN_FLASH, 128), 8.427234134e-5, 1e-8);
    /* FlashAttention-3, head dim 64: e = 0.645 x 0.767 (hd64 factor) = 0.494715, forward x 1024/(1024+600),
     * = 0.311939, backward x 0.866 x 1024/(1024+1320) = 0.187161; FLOPs 2^31: 2^31/(989e12 x 0.311939)
     * + 2.5 x 2^31/(989e12 x 0.187161) = 6.960887e-6 + 2.900402e-5 = 3.596491e-5 s */
    CHECK_REL(attn_time(ATTN_FLASH3, 64), 3.5964911e-5, 1e-7);
    /* at 1k keys, as the paper measured on H100 (causal, head dim 128): FA3 and cuDNN about even
     * (0.645 x 1024/1624 = 0.4067 vs 0.558 x 1024/1404 = 0.4070 forward), both well ahead of FA2 */
    double fa2 = attn_time(ATTN_FLASH, 128), cud = attn_time(ATTN_CUDNN, 128), fa3 = attn_time(ATTN_FLASH3, 128);
    CHECK(fa3 < 0.75 * fa2 && cud < 0.75 * fa2);
}

static void test_nccl_alpha_beta(void)
{
    GpuSpec g = fx_gpu(); /* 450 GB/s NVLink within 8, 50 GB/s per GPU between nodes; eff_net 0.8 */
    PlanInput in;
    plan_input_defaults(&in);
    in.gpu = &g;
    double bw, lat;
    /* all-reduce over one node's 8 GPUs, 1e8 bus bytes. Simple: 8.4 us + 2 x 7 steps x 3.4 us = 56 us, plus
     * 1e8 / (450e9 x 0.8) = 277.78 us -> 333.78 us. LL: 3.6 + 14 x 0.47 = 10.18 us + 1e8 / 90e9 = 1121 us. */
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 8, 1, 1e8, &bw, &lat), 3.337777778e-4, 1e-9);
    CHECK_REL(bw, 360e9, 1e-12);
    CHECK_REL(lat, 56e-6, 1e-12);
    /* 1,000 bytes: LL wins, 10.18 us + 1e3 / 90e9 = 10.1911 us */
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 8, 1, 1e3, &bw, NULL), 1.019111111e-5, 1e-9);
    CHECK_REL(bw, 90e9, 1e-12);
    /* all-gather over 16 GPUs one per node (stride 8 = TP 8): each rank has its own NIC, 50e9 x 0.8;
     * Simple latency 8.4 + 15 network steps x 9.6 = 152.4 us; 152.4 us + 1e8 / 40e9 = 2652.4 us */
    CHECK_REL(plan_coll_call(&in, OP_ALL_GATHER, 16, 8, 1e8, &bw, NULL), 2.6524e-3, 1e-9);
    CHECK_REL(bw, 40e9, 1e-12);
    /* all-reduce over 16 GPUs on 2 nodes (stride 1): 8 ranks share 8 NICs = 400e9 < 450e9 NVLink; 30 steps,
     * 2 across nodes: 8.4 + 28 x 3.4 + 2 x 9.6 = 122.8 us + 1e8 / 320e9 = 435.3 us */
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 16, 1, 1e8, &bw, NULL), 4.353e-4, 1e-9);
    CHECK_REL(bw, 320e9, 1e-12);
    /* stride 2 (TP 2 inside): 4 ranks per node share 4 NICs = 200e9; 4 nodes: 6 of the 30 steps cross:
     * 8.4 + 24 x 3.4 + 6 x 9.6 = 147.6 us + 1e8 / 160e9 = 772.6 us */
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 16, 2, 1e8, &bw, NULL), 7.726e-4, 1e-9);
    /* a PCIe GPU pays PCIe's per-step latency: 8.4 + 14 x 5.7 = 88.2 us + 277.78 us */
    g.link = LINK_PCIE;
    CHECK_REL(plan_coll_call(&in, OP_ALL_REDUCE, 8, 1, 1e8, NULL, &lat), 88.2e-6 + 1e8 / 360e9, 1e-9);
}

/* A collective timed once is timed for every other collective that makes the same call (plan_coll_again: the
 * vocabulary-parallel calls a layer's TP collectives made already): one call's time back from what a Collective
 * keeps, latency + bus bytes / bandwidth, is plan_coll_call's result exactly, on Simple and LL, inside a node and
 * across nodes, on a measured link; -1 for another call, an unused collective or a host profile. */
static void test_coll_again(void)
{
    GpuSpec g = fx_gpu();
    PlanInput in;
    plan_input_defaults(&in);
    in.gpu = &g;
    static const struct {
        CollectiveId id; /* its op: the COLLECTIVES row's */
        CommOp op;
        uint64_t n, stride, S;
    } cs[] = {{CO_TP_AR_FWD, OP_ALL_REDUCE, 8, 1, 100000000},
              {CO_TP_LOSS_AR, OP_ALL_REDUCE, 8, 1, 1000},
              {CO_DP_PARAM_AG, OP_ALL_GATHER, 16, 8, 100000000},
              {CO_TP_RS_BWD, OP_REDUCE_SCATTER, 16, 2, 300000},
              {CO_PP_P2P, OP_SEND_RECV, 2, 8, 1000000}};
    static Plan p;
    for (int measured = 0; measured < 2; measured++) {
        g.link_lat = measured ? 2e-6 : 0;
        for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
            Ck ck = {0};
            CHECK_EQ_INT(coll_op(cs[i].id), cs[i].op);
            Collective *c = &p.coll[cs[i].id];
            *c = (Collective){.ranks = (uint32_t)cs[i].n, .calls = 3, .payload_bytes = cs[i].S};
            c->bus_bytes = plan_bus_bytes(cs[i].op, cs[i].n, cs[i].S, &ck);
            double t =
                plan_coll_call(&in, cs[i].op, cs[i].n, cs[i].stride, (double)c->bus_bytes, &c->bw, &c->latency_s);
            CHECKF(plan_coll_again(&in, &p, cs[i].id, cs[i].op, cs[i].n, cs[i].S) == t, "case %zu, measured %d", i,
                   measured);
            CHECK(plan_coll_again(&in, &p, cs[i].id, cs[i].op, cs[i].n, cs[i].S + 1) == -1);
            CHECK(plan_coll_again(&in, &p, cs[i].id, cs[i].op, cs[i].n * 2, cs[i].S) == -1);
            CHECK(plan_coll_again(&in, &p, cs[i].id, cs[i].op == OP_ALL_GATHER ? OP_ALL_REDUCE : OP_ALL_GATHER, cs[i].n,
                                  cs[i].S) == -1);
            g.host = 1; /* a host profile may time the op from its own fit */
            CHECK(plan_coll_again(&in, &p, cs[i].id, cs[i].op, cs[i].n, cs[i].S) == -1);
            g.host = 0, c->calls = 0;
            CHECK(plan_coll_again(&in, &p, cs[i].id, cs[i].op, cs[i].n, cs[i].S) == -1);
        }
    }
}

/* TP collectives hide behind the layer's GEMMs up to the stack's overlap: at 0 only what Megatron's and TE's
 * column-parallel linears (QKV, FC1) overlap by themselves in backward — each one's input re-gather (a forward
 * all-gather's size) behind its dgrad GEMM and its dgrad's reduce-scatter behind its wgrad GEMM, 4 calls a layer
 * pass, every one shorter than its GEMM at gpt-175b's TP 8 shapes (2,048 tokens: dgrad 2 x 2048 x 12288 x 4608
 * FLOPs, about 0.5 ms; a call about 0.15 ms); at 1 only what exceeds the GEMM time stays exposed. */
static void test_tp_overlap(void)
{
    Catalog *c = fx_catalog();
    PlanInput in = fx_headline(c, "bf16");
    in.overlap_tp = 0;
    Plan a, b;
    CHECK(plan_build(&in, &a, NULL) == ST_OK);
    double raw = 0, exp = 0;
    for (int i = CO_TP_AR_FWD; i <= CO_TP_RS_BWD; i++) raw += a.coll[i].time_s, exp += a.coll[i].exposed_s;
    CHECK(raw > 0);
    double passes = (double)a.coll[CO_TP_AG_FWD].calls / 2,
           own = passes * 2 * (call_s(&a.coll[CO_TP_AG_FWD]) + call_s(&a.coll[CO_TP_RS_BWD]));
    CHECK_REL(own, 0.4 * raw, 1e-12); /* 4 of the 10 calls a layer pass, all of one size in BF16 */
    CHECK_REL(exp, raw - own, 1e-12);
    /* tp_comm_s adds the slowest (last) stage's TP collectives outside the layers, none hidden: per
     * micro-batch the LM head's input gathered twice and its gradient reduce-scattered (tok x 12288 BF16,
     * 7/8 of it sent at TP 8; a gather and a scatter cost the same), the loss's 3 all-reduces of tok FP32
     * (2 x 7/8 sent) */
    double tok = (double)a.in.mbs * (double)a.seq, S = tok * 12288 * 2;
    double ag = plan_coll_call(&in, OP_ALL_GATHER, 8, 1, S * 7 / 8, NULL, NULL);
    double loss = plan_coll_call(&in, OP_ALL_REDUCE, 8, 1, tok * 4 * 2 * 7 / 8, NULL, NULL);
    CHECK_REL(a.time.tp_comm_s, raw - own + (double)a.microbatches * (3 * ag + 3 * loss), 1e-9);
    in.overlap_tp = 1;
    CHECK(plan_build(&in, &b, NULL) == ST_OK);
    double exp1 = 0;
    for (int i = CO_TP_AR_FWD; i <= CO_TP_RS_BWD; i++) exp1 += b.coll[i].exposed_s;
    CHECK(exp1 < 0.5 * raw); /* gpt-175b's TP 8 GEMMs outlast most of their collectives */
    CHECK(b.time.step_s < a.time.step_s);
    free(c);
}

int main(void)
{
    RUN(test_gemm_waves);
    RUN(test_gemm_blockwise_hopper);
    RUN(test_gemm_ampere_and_overrides);
    RUN(test_attention_curves);
    RUN(test_nccl_alpha_beta);
    RUN(test_coll_again);
    RUN(test_tp_overlap);
    return test_summary();
}
