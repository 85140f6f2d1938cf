/* tests/unit/test_oracle_moe_time.c — the mixture-of-experts time and dispatch terms added with the host-issue
 * model, worked out by hand on the oracle model of test_oracle_moe.c (support/oracle_fixtures.h ox_moe): the host
 * issue of an eager MoE layer (plan_moe_time.c), the bytes a hierarchical dispatcher sends (plan_moe_comm.c) and
 * Transformer Engine's grouped GEMM, one cuBLAS GEMM per expert on 4 streams (plan_gemm.c), the SMs DeepEP's and
 * HybridEP's kernels hold while they overlap compute, Megatron-Core's merged 1F1B all-to-all schedule (with its
 * unmerged warm-up and cool-down), the TP
 * overlap TE's userbuffers lose beside it on Hopper, a host profile's grouped GEMM with this executor's
 * recomputed expert output, and the kernels a clamped GLU and biased experts add.
 * Every expected value is arithmetic in the comments, never a value the planner produced. */
#include <math.h>
#include <string.h>

#include "planner/arch.h"
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

/* The host issue of the MoE layer (one of the model's two layers; the dense one has none), one micro-batch, GPU
 * rates 1e30 and no launch floor, so the GPU takes no time and the host's whole issue time shows. 10 us an
 * operation, the measured layer's 213 operations (95 forward, 118 backward), 6 per local expert (a third forward),
 * ep 1: 8 local experts, 48 expert operations:
 *   eager        forward (95 + 48/3) x 10 us = 1,110 us, backward (118 + 2 x 48/3) x 10 us = 1,500 us: 2,610 us
 *   426 ops      the stack's count doubles the layer's own: (190 + 16) + (236 + 32) = 474 operations, 4,740 us
 *   attn + moe_router + moe_preprocess captured: forward 95 - 52 - 18 - 18 = 7 left + 16 + 3 replays = 26,
 *                backward 118 - 78 - 16 - 16 = 8 + 32 + 3 = 43: 690 us
 *   full (capacity factor 1): one replay a direction: 20 us
 * and the step grows by exactly that (pp 1: one micro-batch of every layer, nothing else changes). */
static void test_host_issue(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.hbm_bw = g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30;
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.launch_s = 0, in.gbs = 1;
    Plan p0, p;
    if (!build(&in, &p0)) return;
    CHECK_NEAR(p0.time.moe_host_s, 0, 0); /* a stack without the host columns: not modelled */
    in.host_op_s = 10e-6, in.moe_host_ops = 213, in.expert_host_ops = 6;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_host_s - 2610e-6) < 1e-9, "eager: %.3f us, expected 2,610", p.time.moe_host_s * 1e6);
    CHECKF(fabs(p.time.step_s - p0.time.step_s - 2610e-6) < 1e-9, "the step grows by %.3f us",
           (p.time.step_s - p0.time.step_s) * 1e6);
    in.moe_host_ops = 426;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_host_s - 4740e-6) < 1e-9, "426 ops: %.3f us, expected 4,740", p.time.moe_host_s * 1e6);
    in.moe_host_ops = 213, in.graph_scope = GRAPH_ATTN | GRAPH_MOE_ROUTER | GRAPH_MOE_PREPROCESS;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_host_s - 690e-6) < 1e-9, "partial graphs: %.3f us, expected 690", p.time.moe_host_s * 1e6);
    in.graph_scope = GRAPH_FULL, in.moe_capacity = 1;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_host_s - 20e-6) < 1e-9, "whole layers: %.3f us, expected 20", p.time.moe_host_s * 1e6);
    /* a real GPU's work hides a host that issues faster than it runs: 1 ns an operation */
    g = fx_gpu(), in.graph_scope = 0, in.moe_capacity = 0, in.host_op_s = 1e-9;
    if (!build(&in, &p)) return;
    CHECK_NEAR(p.time.moe_host_s, 0, 0);
}

/* A hierarchical dispatcher (DeepEP, HybridEP) sends a token once to each remote node its experts use and forwards
 * it inside the node; Megatron's all-to-all sends one copy per (token, expert). 8 experts, top 2, ep 4 over nodes
 * of 2 GPUs (r = 2, n = 2 nodes: 4 experts a node), dp 4; 512 tokens a micro-batch, a copy 256 x 2 B = 512 B:
 *   all-to-all:    network k (1 - r/ep) = 2 x 1/2 = 1, NVLink k (r - 1)/ep = 2 x 1/4 = 0.5:
 *                  512 x 1.5 x 512 B = 393,216 B sent per call
 *   hierarchical:  the other node holds none of a token's 2 experts with chance C(4, 2)/C(8, 2) = 6/28, so it is
 *                  used 22/28 of the time: 22/28 network copies, then k (1 - 1/r) = 1 over NVLink:
 *                  512 x (22/28 + 1) x 512 B = 468,114.29 -> 468,114 B
 *   with 4 expert groups, top 2 groups (2 a node): the other node unused C(2, 2)/C(4, 2) = 1/6:
 *                  512 x (5/6 + 1) x 512 B = 480,597.33 -> 480,597 B
 * HybridEP is modelled so (moe_dedup HYBRIDEP); DeepEP sends a token once per GPU that holds one of its experts
 * (Megatron-Core's fused_a2a.py: DeepEP's get_dispatch_layout, is_token_in_rank): a GPU (2 experts) holds none of the
 * token's 2 with chance C(6, 2)/C(8, 2) = 15/28, so it uses D = 4 x 13/28 = 52/28 GPUs, D (1 - 1/2) = 26/28 of them by
 * NVLink: 512 x (22/28 + 26/28) x 512 B = 449,389.71 -> 449,389 B; with the 4 groups (one a GPU) a GPU is unused
 * with chance C(3, 2)/C(4, 2) = 1/2: D = 2, 1 NVLink copy: 480,597 B as above; inside one node (8 GPUs a node):
 * D (4 - 1)/4 = 39/28: 512 x 39/28 x 512 B = 365,129.14 -> 365,129 B, where the others send 512 x 1.5 x 512 B. */
static void test_hierarchical_dispatch(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.gpus_per_node = 2;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.gbs = 4, in.ep = 4;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 393216);
    in.moe_dedup = MOE_DISPATCH_HYBRIDEP;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 468114);
    CHECK_EQ_U64(p.coll[CO_EP_COMBINE_BWD].bus_bytes, 468114);
    in.moe_dedup = MOE_DISPATCH_DEEPEP;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 449389);
    CHECK_EQ_U64(p.coll[CO_EP_COMBINE_BWD].bus_bytes, 449389);
    m.router_groups = 4, m.router_group_topk = 2;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 480597);
    in.moe_dedup = MOE_DISPATCH_HYBRIDEP;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 480597);
    /* inside one node nothing crosses the network: HybridEP sends what the all-to-all does, DeepEP one copy a GPU */
    g.gpus_per_node = 8, in.moe_dedup = 0, m.router_groups = m.router_group_topk = 0;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 393216);
    in.moe_dedup = MOE_DISPATCH_HYBRIDEP;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 393216);
    in.moe_dedup = MOE_DISPATCH_DEEPEP;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 365129);
    CHECK_EQ_U64(p.coll[CO_EP_COMBINE_FWD].bus_bytes, 365129);
}

/* Transformer Engine's grouped GEMM: one cuBLAS GEMM per expert, 4 streams (plan_gemm.c). A GPU of 8 SMs, 128 x 256
 * tiles, k0 = 128, 1e12 FLOP/s an SM, HBM and launch negligible. One expert's GEMM M 256, N 512, K 1024 has
 * min(2 x 2, 1 x 4) = 4 tiles of 2 x 128 x 256 = 65,536 FLOP per unit of K:
 *   one batched kernel, 8 experts: 32 tiles fill 8 SMs, no split: 4 waves x 65,536 x (1024 + 128) / 1e12
 *                                  = 3.01989888e-4 s
 *   per expert, 4 streams: each GEMM alone sees 4 tiles < 8 SMs: split K in min(8 / 4, 1024 / 256) = 2, so 8 tiles
 *                          of K 512; 4 at once: 32 tiles, 4 waves x 65,536 x (512 + 128) / 1e12 = 1.6777216e-4 s a
 *                          round, 8 / 4 = 2 rounds: 3.3554432e-4 s
 *   6 experts, 4 streams:  one round of 4 (1.6777216e-4) and one of the other 2 (16 tiles, 2 waves: 8.388608e-5):
 *                          2.5165824e-4 s; batched: 24 tiles, 3 waves x 65,536 x 1152 / 1e12 = 2.26492416e-4 s
 *   2 experts, 4 streams:  one round of 2: 8.388608e-5 s */
static void test_te_grouped_gemm_streams(void)
{
    GemmGpu gg = {0};
    gg.sm_rate16 = gg.sm_rate8 = 1e12, gg.sms = 8, gg.inv_sms = 1.0 / 8, gg.tm_sh = 7, gg.tn_sh = 8;
    gg.k0_16 = gg.k0_8 = 128, gg.inv_hbm = 1e-18, gg.launch = 1e-12;
    gg.tile2 = 65536; /* a tile's FLOPs per unit of K, as gemm_gpu_init sets it: 2 x 128 x 256 */
    CHECK_REL(gemm_time_streams(&gg, 256, 512, 1024, 8, 0, 0, 2), 3.01989888e-4, 1e-12);
    CHECK_REL(gemm_time(&gg, 256, 512, 1024, 8, 0, 2), 3.01989888e-4, 1e-12);
    CHECK_REL(gemm_time_streams(&gg, 256, 512, 1024, 8, 4, 0, 2), 3.3554432e-4, 1e-12);
    CHECK_REL(gemm_time_streams(&gg, 256, 512, 1024, 6, 4, 0, 2), 2.5165824e-4, 1e-12);
    CHECK_REL(gemm_time_streams(&gg, 256, 512, 1024, 6, 0, 0, 2), 2.26492416e-4, 1e-12);
    CHECK_REL(gemm_time_streams(&gg, 256, 512, 1024, 2, 4, 0, 2), 8.388608e-5, 1e-12);
    CHECK_NEAR(gemm_time_streams(&gg, 256, 512, 1024, 0, 4, 0, 2), 0, 0);
}

/* The plan times the experts' GEMMs that way under Transformer Engine only: the oracle MoE layer's expert GEMMs
 * (8 local experts, a few rows each: each GEMM alone fills a few SMs) take longer than as one grouped kernel, which
 * the other stacks run (torch._grouped_mm). */
static void test_expert_gemms_per_stack(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.fusion = FUSE_TE;
    Plan te, other;
    if (!build(&in, &te)) return;
    in.fusion = FUSE_COMPILE;
    if (!build(&in, &other)) return;
    CHECKF(te.time.expert_gemm_s > other.time.expert_gemm_s, "TE's per-expert GEMMs %g s, one grouped kernel %g s",
           te.time.expert_gemm_s, other.time.expert_gemm_s);
}

/* PyTorch's grouped kernels on Blackwell (planner/arch.c): torchao's B200 microbenchmark times BF16
 * torch._grouped_mm's forward, dgrad and wgrad of (M 128,000, N 8,192, K 5,120) in 4 groups at 38,879.3 us, where the
 * plan's dense model on the catalog's B200 (sustained 0.60) takes 26.909 x 0.66 / 0.60 = 29.600 ms (at the earlier
 * share 0.66 the plan took 26.909 ms; its GEMM rate is proportional to the share): 29.600 / 38.879 = 0.761, entered
 * as 0.76; MXFP8 torch._scaled_grouped_mm's GEMMs (the README's kernel breakdown, DeepSeek-V3 shapes, M 131,072 in 8
 * groups) 1,671.2 + 1,683.4 + 2,103.3 = 5,457.9 us against the plan's per-tensor FP8 time 4.866 x 0.66 / 0.60 =
 * 5.353 ms: 0.981, entered as 0.98 (at 0.62: 28.645 and 5.180 ms, 0.74 and 0.95; at 0.59: 30.101 and 5.444 ms, 0.77
 * and 1.00). The oracle MoE layer under a
 * compile (PyTorch) stack, one micro-batch: on an SM 10.0 GPU its expert GEMMs take 1 / 0.76 as long as on the same
 * GPU marked SM 9.0 (BF16 forward and backward), 1 / 0.98 under a per-tensor FP8 recipe; every other GEMM (attention, shared expert, router) keeps its time; a Transformer Engine stack (its own
 * per-expert cuBLAS GEMMs) and the host GPU keep the dense rate. */
static void test_torch_grouped_mm_blackwell(void)
{
    CHECK_NEAR(arch_grouped_mm_bf16_rel_sm100, 0.76, 0);
    CHECK_NEAR(arch_grouped_mm_mxfp8_rel_sm100, 0.98, 0);
    CHECK_NEAR(26.909 * 0.66 / 0.60, 29.600, 0.001);
    CHECK_NEAR(4.866 * 0.66 / 0.60, 5.353, 0.001);
    CHECK_NEAR(29.600 / 38.8793, 0.76, 0.005);
    CHECK_NEAR(5.353 / 5.4579, 0.98, 0.005);
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    static const struct {
        int fp8, fusion;
        double rel;
    } cases[] = {
        {0, FUSE_COMPILE, 0.76}, {0, FUSE_EAGER, 0.76}, {1, FUSE_COMPILE, 0.98}, {0, FUSE_TE, 1.0}, {1, FUSE_TE, 1.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Recipe r = cases[i].fp8 ? fx_te_recipe("te", 0) : fx_bf16_recipe("bf16", 0);
        PlanInput in = fx_input(&m, &g, &r);
        in.gbs = 1, in.fusion = cases[i].fusion;
        Plan p;
        if (!build(&in, &p)) return;
        Geo geo;
        plan_geo(&in, m.seq_len, 1, &geo);
        LayerT hop[XK_COUNT], bw[XK_COUNT];
        GpuSpec gh = g, gb = g;
        gh.sm = 90, gb.sm = 100;
        GemmGpu gg;
        in.gpu = &gh;
        gemm_gpu_init(&in, &gg);
        moe_layer_times(&in, &geo, &gg, &p, hop);
        in.gpu = &gb;
        gemm_gpu_init(&in, &gg);
        moe_layer_times(&in, &geo, &gg, &p, bw);
        const LayerT *a = &hop[XK_MOE], *b = &bw[XK_MOE];
        CHECKF(a->xg_f > 0 && a->xg_b > 0, "case %zu: expert GEMMs %g %g s", i, a->xg_f, a->xg_b);
        CHECK_REL(b->xg_f, a->xg_f / cases[i].rel, 1e-12);
        CHECK_REL(b->xg_b, a->xg_b / cases[i].rel, 1e-12);
        CHECK_REL(b->gemm_f - b->xg_f, a->gemm_f - a->xg_f, 1e-12);
        CHECK_REL(b->gemm_b - b->xg_b, a->gemm_b - a->xg_b, 1e-12);
        CHECK_REL(bw[XK_DENSE].gemm_f, hop[XK_DENSE].gemm_f, 1e-15);
        /* a CPU rank's GEMMs are BLAS calls, whatever SM its GPU row names: no grouped kernel */
        gh.host = gb.host = 1;
        in.gpu = &gh;
        gemm_gpu_init(&in, &gg);
        moe_layer_times(&in, &geo, &gg, &p, hop);
        in.gpu = &gb;
        gemm_gpu_init(&in, &gg);
        moe_layer_times(&in, &geo, &gg, &p, bw);
        CHECK_REL(bw[XK_MOE].xg_f, hop[XK_MOE].xg_f, 1e-15);
        CHECK_REL(bw[XK_MOE].xg_b, hop[XK_MOE].xg_b, 1e-15);
    }
}

/* MXFP8's GEMMs on Blackwell (planner/arch.c arch_mxfp8_gemm_rel_sm100 = 0.90): gemm_gpu_init rates an MXFP8
 * recipe's FP8 GEMMs at 0.90 of the per-tensor FP8 rate on SM 10.0 (BF16 untouched), at the full rate on SM 9.0, with
 * an explicit --eff-fp8 (what the user measured) and for a per-tensor recipe; GpuSpec.mx_gemm_rel 0.80 replaces the
 * 0.90. PyTorch's grouped kernel was measured against the per-tensor FP8 rate, so under a compile stack on SM 10.0
 * the MXFP8 recipe's expert GEMMs take as long as the per-tensor recipe's (both 1 / 0.95 of the dense model: the 0.90
 * taken out again), every GEMM compute-bound (HBM 1e30 B/s, no launch floor). */
static void test_mxfp8_gemm_rate(void)
{
    CHECK_NEAR(arch_mxfp8_gemm_rel_sm100, 0.90, 0);
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.sm = 100, g.hbm_bw = 1e30;
    Recipe t = fx_te_recipe("te", 0), x = t;
    x.gemm_bwd = DT_E4M3, x.scaling = SCALING_CURRENT, x.act_gran = x.weight_gran = GRAN_1X32;
    PlanInput it = fx_input(&m, &g, &t), ix = fx_input(&m, &g, &x);
    it.launch_s = ix.launch_s = 0;
    GemmGpu gt, gx;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ix, &gx);
    CHECK_REL(gx.sm_rate8, 0.90 * gt.sm_rate8, 1e-15);
    CHECK_REL(gx.sm_rate16, gt.sm_rate16, 1e-15);
    g.mx_gemm_rel = 0.80;
    gemm_gpu_init(&ix, &gx);
    CHECK_REL(gx.sm_rate8, 0.80 * gt.sm_rate8, 1e-15);
    g.mx_gemm_rel = 0;
    ix.eff_gemm_fp8 = it.eff_gemm_fp8 = 0.5;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ix, &gx);
    CHECK_REL(gx.sm_rate8, gt.sm_rate8, 1e-15);
    ix.eff_gemm_fp8 = it.eff_gemm_fp8 = 0;
    g.sm = 90;
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ix, &gx);
    CHECK_REL(gx.sm_rate8, gt.sm_rate8, 1e-15);
    g.sm = 100;
    it.fusion = ix.fusion = FUSE_COMPILE, it.gbs = ix.gbs = 1;
    Plan pt, px;
    if (!build(&it, &pt) || !build(&ix, &px)) return;
    Geo geo;
    plan_geo(&it, m.seq_len, 1, &geo);
    LayerT lt[XK_COUNT], lx[XK_COUNT];
    gemm_gpu_init(&it, &gt), gemm_gpu_init(&ix, &gx);
    moe_layer_times(&it, &geo, &gt, &pt, lt);
    moe_layer_times(&ix, &geo, &gx, &px, lx);
    CHECK(lt[XK_MOE].xg_f > 0);
    CHECK_REL(lx[XK_MOE].xg_f, lt[XK_MOE].xg_f, 1e-12);
    CHECK_REL(lx[XK_MOE].xg_b, lt[XK_MOE].xg_b, 1e-12);
}

/* The SMs the dispatcher's own kernels hold while the all-to-alls overlap compute (plan_moe_time.c comm_sms:
 * Megatron-Core's moe_deepep_num_sms 20, moe_hybridep_num_sms 16). 132 SMs, ep 2: the flash attention, whose time
 * does not depend on the SM count, runs on the rest: DeepEP overlapped 132 / 112 = 33/28 times as long, HybridEP
 * 132 / 116 = 33/29, an explicit --ep-comm-sms 10 132 / 122 = 66/61; not overlapped (nothing runs beside the
 * GEMMs), or Megatron's NCCL all-to-all (not modelled), as long as without. */
static void test_dispatcher_comm_sms(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.sms = 132;
    Recipe r = fx_te_recipe("te", 0);
    static const struct {
        int dedup;
        double overlap;
        uint32_t sms;
        double ratio;
    } rows[] = {
        {MOE_DISPATCH_DEEPEP, 1.0, 0, 33.0 / 28.0},  {MOE_DISPATCH_HYBRIDEP, 1.0, 0, 33.0 / 29.0},
        {MOE_DISPATCH_DEEPEP, 1.0, 10, 66.0 / 61.0}, {MOE_DISPATCH_DEEPEP, 0.0, 0, 1.0},
        {MOE_DISPATCH_ALLTOALL, 1.0, 0, 1.0},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        PlanInput in = fx_input(&m, &g, &r);
        in.dp = 2, in.gbs = 2, in.ep = 2, in.launch_s = 0, in.overlap_ep = rows[i].overlap;
        Plan p0, p;
        if (!build(&in, &p0)) return;
        in.moe_dedup = rows[i].dedup, in.ep_comm_sms = rows[i].sms;
        if (!build(&in, &p)) return;
        CHECKF(fabs(p.time.attn_s / p0.time.attn_s - rows[i].ratio) < 1e-12,
               "row %u: attention x %.12g, expected %.12g", i, p.time.attn_s / p0.time.attn_s, rows[i].ratio);
    }
}

/* Megatron-Core's merged 1F1B layer (plan_ep_merged): each all-to-all hides behind its partner piece only. Compute
 * aF 4, mB 3, mW 2, mF 3, aB 4 (16 in all), times in any unit:
 *   all four all-to-alls 1: t1 = max(1, 4) = 4; dispatch_fwd ends 5, mlp_bwd 7, mlp_bwd_dw 9; dispatch_bwd
 *     max(5, 7) + 1 = 8; mlp_fwd max(9, 5) + 3 = 12; phase 3 from max(12, 8) = 12: max(12 + 1, 12 + 4) = 16 -> 0
 *   combine_bwd 6 against attn_fwd + post_attn 4: t1 = 6, everything after 2 later: 18 -> 2
 *   dispatch_fwd 7 against mlp_bwd + mlp_bwd_dw 5: ends 11; mlp_fwd max(9, 11) + 3 = 14; 14 + 4 = 18 -> 2
 *   dispatch_bwd 8 against mlp_bwd_dw + mlp_fwd 5: ends max(5, 7) + 8 = 15; phase 3 15 + 4 = 19 -> 3
 *   combine_fwd 6 against post_attn_bwd + attn_bwd 4: 12 + 6 = 18 -> 2
 *   no compute, all-to-alls 1, 2, 3, 4 (df, cf, db, cb): t1 = 4, dispatch_fwd 5, dispatch_bwd 8, combine_fwd
 *     8 + 2 = 10 -> 10, every all-to-all exposed. */
static void test_merged_1f1b(void)
{
    static const struct {
        MergedLayer m;
        double exposed;
    } rows[] = {
        {{4, 3, 2, 3, 4, 1, 1, 1, 1}, 0}, {{4, 3, 2, 3, 4, 1, 1, 1, 6}, 2}, {{4, 3, 2, 3, 4, 7, 1, 1, 1}, 2},
        {{4, 3, 2, 3, 4, 1, 1, 8, 1}, 3}, {{4, 3, 2, 3, 4, 1, 6, 1, 1}, 2}, {{0, 0, 0, 0, 0, 1, 2, 3, 4}, 10},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        double e = plan_ep_merged(&rows[i].m);
        CHECKF(e == rows[i].exposed, "row %u: %g exposed, expected %g", i, e, rows[i].exposed);
    }
}

/* The merged schedule's unmerged share (plan_unmerged_share), rank 0's warm-up over m x vpp chunk micro-batches:
 *   pp 1, 4 micro-batches: 1 / 4 (the first forward alone, the last backward alone)
 *   pp 2, vpp 1, m 4: (2 - 1) 2 + 0 + 1 = 3 of 4
 *   pp 8, vpp 4, m 128: 7 x 2 + 3 x 8 + 1 = 39 of 512
 *   pp 2, vpp 12, m 128: 2 + 11 x 2 + 1 = 25 of 1,536
 *   pp 4, vpp 2, m 2: 6 + 4 + 1 = 11, more than the 4 there are: all of them. */
static void test_unmerged_share(void)
{
    static const struct {
        uint64_t pp, vpp, m;
        double share;
    } rows[] = {
        {1, 1, 4, 0.25}, {2, 1, 4, 0.75}, {8, 4, 128, 39.0 / 512.0}, {2, 12, 128, 25.0 / 1536.0}, {4, 2, 2, 1.0}};
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        double u = plan_unmerged_share(rows[i].pp, rows[i].vpp, rows[i].m);
        CHECKF(fabs(u - rows[i].share) < 1e-15, "row %u: %.15g, expected %.15g", i, u, rows[i].share);
    }
}

/* A plan whose GPU is slow (1e9 FLOP/s and B/s) and whose links are fast, so that every overlapped collective hides:
 * ox_moe, tp 2 with sequence parallelism, dp 2, ep 2, 4 micro-batches, TE kernels, the stack's TP overlap 1. */
static PlanInput slow_gpu_input(const ModelSpec *m, GpuSpec *g, const Recipe *r)
{
    *g = fx_gpu();
    g->flops_bf16 = g->flops_fp8 = g->flops_fp32 = 1e9, g->hbm_bw = 1e9, g->intra_bw = g->inter_bw = 1e18;
    PlanInput in = fx_input(m, g, r);
    in.tp = 2, in.sp = 1, in.dp = 2, in.ep = 2, in.gbs = 8, in.fusion = FUSE_TE, in.overlap_tp = 1;
    return in;
}

/* --overlap-ep F between 0 and 1: (1 - F) of the all-to-alls exposed whole, F as the overlapped schedule leaves
 * them: the merged layers hide them all behind the slow GPU, the unmerged first forward and last backward (pp 1: 1
 * of the 4 micro-batches) expose them whole. Each expert all-to-all row exposed, of its time: F = 0 whole; F = 0.25
 * 0.75 + 0.25 x 1/4 = 0.8125; F = 1 1/4. */
static void test_overlap_ep_fraction(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g;
    Recipe r = ox_bf16(0);
    static const double frac[] = {0.0, 0.25, 1.0}, share[] = {1.0, 0.8125, 0.25};
    for (unsigned i = 0; i < 3; i++) {
        PlanInput in = slow_gpu_input(&m, &g, &r);
        in.overlap_ep = frac[i];
        Plan p;
        if (!build(&in, &p)) return;
        for (int id = CO_EP_DISPATCH_FWD; id <= CO_EP_COMBINE_BWD; id++) {
            const Collective *c = &p.coll[id];
            CHECKF(c->calls > 0 && c->time_s > 0, "collective %d: no calls", id);
            CHECKF(fabs(c->exposed_s - share[i] * c->time_s) <= 1e-12 * c->time_s,
                   "overlap %g, collective %d: %g of %g s exposed, expected %g of it", frac[i], id, c->exposed_s,
                   c->time_s, share[i]);
        }
    }
}

/* TE's userbuffers hide the TP collectives behind the GEMMs (the stack's overlap 1: the slow GPU hides them all)
 * unless the run overlaps its all-to-alls in the merged schedule on a GPU before Blackwell: then
 * CUDA_DEVICE_MAX_CONNECTIONS is not 1 and every TP row is exposed whole. Not on sm 100, not with the all-to-alls
 * not overlapped, not with the eager kernels (no userbuffers), not without expert parallelism. */
static void test_tp_overlap_beside_merged_a2a(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g;
    Recipe r = ox_bf16(0);
    static const struct {
        uint32_t sm, ep;
        double overlap_ep;
        KernelFusion fusion;
        int exposed;
    } rows[] = {
        {90, 2, 1.0, FUSE_TE, 1}, {100, 2, 1.0, FUSE_TE, 0},   {90, 2, 0.0, FUSE_TE, 0},
        {90, 2, 0.5, FUSE_TE, 1}, {90, 2, 1.0, FUSE_EAGER, 0}, {90, 1, 1.0, FUSE_TE, 0},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        PlanInput in = slow_gpu_input(&m, &g, &r);
        g.sm = rows[i].sm, in.ep = rows[i].ep, in.overlap_ep = rows[i].overlap_ep, in.fusion = rows[i].fusion;
        Plan p;
        if (!build(&in, &p)) return;
        int n = 0;
        for (int id = CO_TP_AR_FWD; id <= CO_TP_RS_BWD; id++) {
            const Collective *c = &p.coll[id];
            if (!c->calls) continue;
            n++;
            double want = rows[i].exposed ? c->time_s : 0.0;
            CHECKF(fabs(c->exposed_s - want) <= 1e-12 * c->time_s, "row %u, collective %d: %g of %g s exposed", i, id,
                   c->exposed_s, c->time_s);
        }
        CHECKF(n > 0, "row %u: no TP collective", i);
    }
}

/* A host profile's grouped GEMM (plan_moe_time.c host_group_s, calibrate's group_gemm_us) and this executor's
 * recomputed FC2 forward at ep 1, on the oracle MoE layer (hidden 256, 8 experts top-2 of FFN 128, SwiGLU: FC1 (256,
 * 256), FC2 (256, 128)), one micro-batch of 512 tokens: 1,024 rows, 128 an expert. A host row at 1e10 FLOP/s on
 * every path, memory 1e18 B/s and a launch floor of 1e-12 s, so each GEMM is its FLOPs:
 *   FC2 forward  2 x 1,024 x 256 x 128 / 1e10 = 6.7108864e-3 s: what --stack fp8plan (FUSE_FP8PLAN) adds over a
 *                stack that keeps the experts' outputs (FUSE_COMPILE) at ep 1 — the executor's backward runs it again
 *   10 us a group, fp8plan at ep 1: 7 grouped calls (FC1 fprop, dgrad, wgrad; FC2 fprop, dgrad, wgrad and the
 *                recomputed fprop) x 8 experts x 10 us = 5.6e-4 s more (one MoE layer, one micro-batch)
 *   the same under an FP8 recipe: the group cost is measured on the BF16 path only, nothing added; on a GPU's row
 *                (not a host): nothing added
 *   ep 2 over dp 2 (the link at 1 us, 1e9 B/s): 4 local experts, no recompute (the combined outputs are kept):
 *                6 x 4 x 10 us = 2.4e-4 s more */
static void test_host_grouped_gemm(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = {.name = "host", .host = 1, .sms = 1, .hbm_bytes = 1ull << 40, .hbm_bw = 1e18, .flops_bf16 = 1e10};
    g.flops_fp8 = g.flops_fp32 = g.mamf_bf16 = g.mamf_fp8 = 1e10, g.sustained = 1, g.link = LINK_HOST;
    g.gpus_per_node = 4, g.elem_bw = 1e18;
    Recipe r = ox_bf16(0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.mbs = 1, in.launch_s = 1e-12, in.fusion = FUSE_COMPILE;
    Plan keep = ox_build(&in);
    in.fusion = FUSE_FP8PLAN;
    Plan again = ox_build(&in);
    CHECK_REL(again.time.expert_gemm_s - keep.time.expert_gemm_s, 6.7108864e-3, 1e-9);
    g.group_gemm_s = 10e-6;
    Plan grouped = ox_build(&in);
    CHECK_REL(grouped.time.expert_gemm_s - again.time.expert_gemm_s, 5.6e-4, 1e-9);
    Recipe f8 = fx_te_recipe("te", 0);
    in.recipe = &f8, g.group_gemm_s = 0;
    Plan f0 = ox_build(&in);
    g.group_gemm_s = 10e-6;
    Plan f1 = ox_build(&in);
    CHECK_NEAR(f1.time.expert_gemm_s - f0.time.expert_gemm_s, 0, 1e-15);
    GpuSpec gpu = fx_gpu();
    in.recipe = &r, in.gpu = &gpu;
    Plan p0 = ox_build(&in);
    gpu.group_gemm_s = 10e-6;
    Plan p1 = ox_build(&in);
    CHECK_NEAR(p1.time.expert_gemm_s - p0.time.expert_gemm_s, 0, 1e-15);
    in.gpu = &g, in.dp = 2, in.ep = 2, in.gbs = 2;
    g.intra_bw = g.inter_bw = 1e9, g.link_lat = 1e-6, g.group_gemm_s = 0;
    Plan e0 = ox_build(&in);
    g.group_gemm_s = 10e-6;
    Plan e1 = ox_build(&in);
    CHECK_REL(e1.time.expert_gemm_s - e0.time.expert_gemm_s, 2.4e-4, 1e-9);
}

/* A clamped GLU and biased experts (models.csv glu_clamp, expert_bias: GPT-OSS) as Megatron-Core runs them
 * (plan_moe_extra.c), on the MoE layer of ox_moe: 512 tokens, top 2, ep 1, so R = 1,024 rows over El = 8 local
 * experts, h 256, Fe 128. Element-wise kernels at 1 GB/s (a byte a ns), no launch floor:
 *   clamp   forward 16 R Fe = 16 x 1,024 x 128 = 2,097,152 B, backward 30 R Fe = 3,932,160 B
 *   bias    forward 12 R h = 12 x 1,024 x 256 = 3,145,728 B, backward 16 R h = 4,194,304 B
 *   both    13,369,344 B: the step grows by 13,369,344 ns; with --recompute-modules moe_act the clamps' forward
 *           again: + 2,097,152 = 15,466,496 ns over the same plan without the two details.
 * A stack whose MoE layer is not Megatron-Core's (moe_host_ops 0): no change. The host issues them one operation
 * each: forward 3 + (2 El + 1) = 20, backward 7 + (4 El + 2) = 41; on an infinitely fast GPU at 10 us an operation
 * the layer's host issue grows from 2,610 us (test_host_issue) by (20 + 41) x 10 = 610 us to 3,220 us. With the
 * experts as Transformer Engine's fused ops (--moe-fused-mlp) neither runs apart: 2,610 us again. */
static void test_clamp_and_expert_bias(void)
{
    ModelSpec m0 = ox_moe(512), m = m0;
    m.glu_clamp = 7.0, m.expert_bias = 1;
    GpuSpec g = fx_gpu();
    g.elem_bw = 1e9;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in0 = fx_input(&m0, &g, &r), in = fx_input(&m, &g, &r);
    in0.launch_s = in.launch_s = 0, in0.gbs = in.gbs = 1;
    Plan p0, p;
    if (!build(&in0, &p0) || !build(&in, &p)) return;
    CHECK_NEAR(p.time.step_s, p0.time.step_s, 0); /* no Megatron-Core MoE layer */
    in0.moe_host_ops = in.moe_host_ops = 213, in0.expert_host_ops = in.expert_host_ops = 6;
    if (!build(&in0, &p0) || !build(&in, &p)) return;
    CHECKF(fabs(p.time.step_s - p0.time.step_s - 13369344e-9) < 1e-12, "the step grows by %.3f ns, expected 13,369,344",
           (p.time.step_s - p0.time.step_s) * 1e9);
    in0.recompute_mods = in.recompute_mods = RECOMPUTE_MOD_MOE_ACT;
    if (!build(&in0, &p0) || !build(&in, &p)) return;
    CHECKF(fabs(p.time.step_s - p0.time.step_s - 15466496e-9) < 1e-12,
           "moe_act: the step grows by %.3f ns, expected 15,466,496", (p.time.step_s - p0.time.step_s) * 1e9);
    g.hbm_bw = g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30, g.elem_bw = 0;
    in.recompute_mods = 0, in.host_op_s = 10e-6;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_host_s - 3220e-6) < 1e-9, "host issue %.3f us, expected 3,220", p.time.moe_host_s * 1e6);
    in.moe_fused_mlp = 1;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_host_s - 2610e-6) < 1e-9, "fused: %.3f us, expected 2,610", p.time.moe_host_s * 1e6);
}

int main(void)
{
    RUN(test_host_issue);
    RUN(test_host_grouped_gemm);
    RUN(test_hierarchical_dispatch);
    RUN(test_te_grouped_gemm_streams);
    RUN(test_expert_gemms_per_stack);
    RUN(test_torch_grouped_mm_blackwell);
    RUN(test_mxfp8_gemm_rate);
    RUN(test_dispatcher_comm_sms);
    RUN(test_merged_1f1b);
    RUN(test_unmerged_share);
    RUN(test_overlap_ep_fraction);
    RUN(test_tp_overlap_beside_merged_a2a);
    RUN(test_clamp_and_expert_bias);
    return test_summary();
}
