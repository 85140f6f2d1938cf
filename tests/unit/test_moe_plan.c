/* tests/unit/test_moe_plan.c — the mixture-of-experts planner worked by hand on a small
 * model: expert layout checks, per-GPU expert weights and states over the expert-data-
 * parallel group, the MoE activations, the all-to-all bytes and times (plain, across
 * nodes, node-limited, FP8 with 1x128 scales; for a measured routing: test_moe_plan_routed.c), expert-DP collectives, exposure, DualPipe's
 * bubble, activated-parameter FLOPs, and the sweep over EP. */
#include <math.h>
#include <stdlib.h>

#include "catalog/catalog.h"
#include "planner/plan.h"
#include "planner/sweep.h"
#include "support/fixtures.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* The model: support/oracle_fixtures.h's ox_moe(512) — 2 layers (the first dense, FFN 512), hidden 256, 2 heads
 * of 128 (no GQA), vocab 1000, seq 512, RMSNorm, SwiGLU, RoPE, untied; 8 experts of FFN 128, top 2, 1 shared,
 * softmax router. */

static void test_layout_checks(void)
{
    ModelSpec m = ox_moe(512), d = fx_tiny_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    Err e;
    in.dp = 4, in.ep = 4;
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    in.ep = 3; /* 8 experts over 3 */
    CHECK(plan_validate(&in, &e) == REJECT_EP);
    CHECK_CONTAINS(e.msg, "--ep 3 --etp 1: oracle-moe's 8 experts must be divisible by ep");
    in.ep = 8; /* ep * etp = 8 > tp * cp * dp = 4 */
    CHECK(plan_validate(&in, &e) == REJECT_EP);
    CHECK_CONTAINS(e.msg, "ep*etp = 8 must divide tp*cp*dp = 4");
    in.ep = 2, in.etp = 2, in.tp = 2, in.dp = 2; /* 2 x 2 = 4 of the stage's 2 x 2 ranks */
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    in.sp = 0;
    CHECK(plan_validate(&in, &e) == REJECT_EP);
    CHECK_CONTAINS(e.msg, "need sequence parallelism");
    in.sp = 1, in.etp = 3;
    CHECK(plan_validate(&in, &e) == REJECT_EP); /* expert FFN 128 over 3 */
    in.etp = 0;
    CHECK(plan_validate(&in, &e) == REJECT_ZERO);
    in.etp = 1, in.recompute = RECOMPUTE_OP;
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
    CHECK_CONTAINS(e.msg, "modelled for dense models only");
    in.recompute = RECOMPUTE_NONE, in.recompute_mods = RECOMPUTE_MOD_MLA_UP;
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
    CHECK_CONTAINS(e.msg, "has no latent attention");
    /* each MoE limit is named alone, with its value (the message once listed all four) */
    in.recompute_mods = 0, in.moe_imbalance = 0.5;
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
    CHECK_CONTAINS(e.msg, "--moe-imbalance 0.5: must be in [1, 64]");
    CHECK(!strstr(e.msg, "--ep-comm-sms") && !strstr(e.msg, "--overlap-ep") && !strstr(e.msg, "--moe-capacity"));
    in.moe_imbalance = 1, in.overlap_ep = 1.5;
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
    CHECK_CONTAINS(e.msg, "--overlap-ep 1.5: must be in [0, 1]");
    CHECK(!strstr(e.msg, "--moe-imbalance") && !strstr(e.msg, "--ep-comm-sms"));
    in.overlap_ep = 0, g.sms = 132, in.ep_comm_sms = 132; /* 132 of 132 SMs leaves the GEMMs none */
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
    CHECK_STR(e.msg, "--ep-comm-sms 132: must be below the 132 SMs of g");
    in.ep_comm_sms = 131;
    CHECK(plan_validate(&in, &e) == REJECT_NONE);
    g.sms = 0; /* no SM count: only 0 */
    CHECK(plan_validate(&in, &e) == REJECT_KNOB);
    CHECK_STR(e.msg, "--ep-comm-sms 131: must be 0 on g (no SM count)");
    in.ep_comm_sms = 0;
    /* the capacity factor's range [0, 64] (0: dropless), its ends included */
    in.moe_imbalance = 1;
    const double cap_ok[3] = {0, 1.25, 64}, cap_bad[2] = {-0.5, 64.5};
    for (int i = 0; i < 3; i++) {
        in.moe_capacity = cap_ok[i];
        CHECKF(plan_validate(&in, &e) == REJECT_NONE, "--moe-capacity %g refused: %s", cap_ok[i], e.msg);
    }
    for (int i = 0; i < 2; i++) {
        in.moe_capacity = cap_bad[i];
        CHECK(plan_validate(&in, &e) == REJECT_KNOB);
        CHECK_CONTAINS(e.msg, "must be in [0, 64] (0: dropless)");
        CHECK_CONTAINS(e.msg, i ? "--moe-capacity 64.5:" : "--moe-capacity -0.5:");
    }
    in.moe_capacity = 0;
    in.moe_imbalance = 1, in.dualpipe = 1, in.pp = 1; /* DualPipe needs an even pp */
    CHECK(plan_validate(&in, &e) == REJECT_VPP);
    /* a dense model takes no expert layout, nor DualPipe */
    PlanInput dn = fx_input(&d, &g, &r);
    dn.dp = 2, dn.ep = 2;
    CHECK(plan_validate(&dn, &e) == REJECT_EP);
    CHECK_CONTAINS(e.msg, "tiny has no experts");
    dn.ep = 1, dn.dualpipe = 1, dn.pp = 2;
    CHECK(plan_validate(&dn, &e) == REJECT_KNOB);
}

static void test_expert_memory(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", (1u << STATE_MASTER) | (1u << STATE_M) | (1u << STATE_V));
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 4, in.sharding = SHARD_DIST_OPT;
    Plan p = ox_build(&in);
    /* per layer: QKV 768 x 256 = 196,608 + proj 256 x 256 = 65,536: 262,144; dense FFN 1024 x 256 + 256 x 512 =
     * 393,216; shared expert 256 x 256 + 256 x 128 = 98,304; one expert 98,304, 8 / 4 = 2 here: 196,608;
     * router 8 x 256 = 2,048. Linear (non-expert) weights: 2 x 262,144 + 393,216 + 98,304 = 1,015,808. Other:
     * 2 x 2 norms of 256 = 1,024, router 2,048, embedding and head 2 x 1000 x 256 = 512,000, final norm 256:
     * 515,328. */
    CHECK_EQ_U64(p.params_gemm_gpu, 1015808);
    CHECK_EQ_U64(p.params_expert_gpu, 196608);
    CHECK_EQ_U64(p.params_gpu, 1015808 + 196608 + 515328);
    CHECK_EQ_U64(p.mem[MT_WEIGHT_EXPERT].bytes, 196608 * 2);
    /* edp = tp*cp*dp / (ep*etp) = 4 / 4 = 1: the expert master stays whole; the other master is over dp = 4 */
    CHECK_EQ_U64(p.mem[MT_MASTER_EXPERT].elements, 196608);
    CHECK_EQ_U64(p.mem[MT_MASTER_EXPERT].shards, 1);
    CHECK_EQ_U64(p.mem[MT_MASTER_GEMM].elements, 253952); /* 1,015,808 / 4 */
    /* ep 2: 4 experts here (393,216), edp 2: master 196,608 each */
    in.ep = 2;
    p = ox_build(&in);
    CHECK_EQ_U64(p.params_expert_gpu, 393216);
    CHECK_EQ_U64(p.mem[MT_MASTER_EXPERT].elements, 196608);
    CHECK_EQ_U64(p.mem[MT_MASTER_EXPERT].shards, 2);
    CHECK_EQ_U64(p.mem[MT_OPTIM_V_EXPERT].bytes, 196608 * 4);
    /* total = sum of the terms, the expert ones included */
    uint64_t sum = 0;
    for (int i = 0; i < MT_COUNT_; i++) sum += p.mem[i].bytes;
    CHECK_EQ_U64(sum, p.total_bytes);
    /* parameter counts: 8 experts in all; active 2 of 8 */
    ModelParams mp;
    CHECK(model_params(&m, &mp) == 0);
    CHECK_EQ_U64(p.params_active, mp.active);
    /* 2 layers x (262,144 + 2 norms 512) + 393,216 + shared 98,304 + 8 x 98,304 + router 2,048 + 512,000 + 256 */
    CHECK_EQ_U64(mp.total, 525312 + 393216 + 98304 + 786432 + 2048 + 512000 + 256);
}

static void test_moe_activations(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 4;
    Plan p = ox_build(&in);
    /* rows per rank per micro-batch = etp x tok_r x top-k x f = 1 x 512 x 2 x 1 = 1024. One MoE layer:
     * router probabilities 512 x 8 x 4 = 16,384, top-k indices and weights 512 x 2 x 8 = 8,192 (its BF16
     * input is the shared FC1's saved input: not again), dispatched FC1 inputs 1024 x 256 x 2 = 524,288, FC1
     * output 1024 x 256 x 2 = 524,288, FC2 input 1024 x 128 x 2 = 262,144, per row its fp32 weight 4,096, and the
     * unfused permute's int64 indices 512 x 2 x 8 = 8,192 and masked_select's probabilities and mask 512 x 8 x 5 =
     * 20,480 (routed_act). Sum 1,368,064; one MoE layer in flight (pp 1: both layers of one micro-batch). */
    CHECK_EQ_U64(p.mem[MT_ACT_MOE].bytes, 1368064);
    /* twice the imbalance: the rows double (all but the per-token 24,576 + 8,192 + 20,480 = 53,248) */
    in.moe_imbalance = 2;
    Plan p2 = ox_build(&in);
    CHECK_EQ_U64(p2.mem[MT_ACT_MOE].bytes, 53248 + 2 * (1368064 - 53248));
    /* moe_act recompute keeps FC1's output only (in the saved dtype, BF16 here): less FC2's input 262,144 */
    in.moe_imbalance = 1, in.recompute_mods = RECOMPUTE_MOD_MOE_ACT;
    Plan p3 = ox_build(&in);
    CHECK_EQ_U64(p3.mem[MT_ACT_MOE].bytes, 1368064 - 262144);
    /* full recompute keeps each layer's input only */
    in.recompute_mods = 0, in.recompute = RECOMPUTE_FULL;
    Plan p4 = ox_build(&in);
    CHECK_EQ_U64(p4.mem[MT_ACT_MOE].bytes, 0);
    CHECK_EQ_U64(p4.mem[MT_ACT_LAYER_HP].bytes, 2 * 512 * 256 * 2);
}

static void test_all_to_all(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 4, in.gbs = 8; /* 2 micro-batches */
    Plan p = ox_build(&in);
    /* 4 EP ranks in one node of 8: r = 4, one node. Per token k (r - 1)/ep = 2 x 3/4 = 1.5 copies leave the
     * GPU over NVLink, none over the network; a copy is 256 x 2 = 512 B. Per call: 512 tokens x 1.5 x 512 =
     * 393,216 B sent, 512 x 2 x 512 = 524,288 B payload; calls = 1 MoE layer x 2 micro-batches. */
    const Collective *c = &p.coll[CO_EP_DISPATCH_FWD];
    CHECK_EQ_U64(c->ranks, 4);
    CHECK_EQ_U64(c->bus_bytes, 393216);
    CHECK_EQ_U64(c->payload_bytes, 524288);
    CHECK_EQ_U64(c->calls, 2);
    CHECK(!c->inter_node);
    /* time per call: NCCL Simple base 8.4 us + one NVLink hop 3.4 us + 393,216 B / (450 GB/s x 0.8) */
    CHECK_REL(c->time_s / 2, 8.4e-6 + 3.4e-6 + 393216 / 360e9, 1e-12);
    CHECK_EQ_U64(p.coll[CO_EP_COMBINE_BWD].bus_bytes, 393216);
    /* everything exposed without overlap (stack none: ep overlap 0): the four all-to-alls */
    double a2a = 0;
    for (int i = CO_EP_DISPATCH_FWD; i <= CO_EP_COMBINE_BWD; i++) a2a += p.coll[i].time_s;
    CHECK_REL(p.time.ep_comm_s, a2a, 1e-9);
    CHECK_EQ_U64(p.ep_comm_bytes, 4 * 2 * 393216);

    /* two GPUs per node: r = 2 over 2 nodes: k (1 - r/ep) = 1 copy per token over the network, k (r-1)/ep = 0.5
     * over NVLink; the network part sets the time: 512 x 1 x 512 B / (50 GB/s x 0.8) after 8.4 + 9.6 us */
    GpuSpec g2 = g;
    g2.gpus_per_node = 2;
    in.gpu = &g2;
    p = ox_build(&in);
    c = &p.coll[CO_EP_DISPATCH_FWD];
    CHECK(c->inter_node);
    CHECK_EQ_U64(c->bus_bytes, 512 * 1 * 512 + 512 * 512 / 2);
    CHECK_REL(c->time_s / 2, 8.4e-6 + 9.6e-6 + 262144 / 40e9, 1e-12);
    /* node-limited routing with one group per node (2 groups, top 1): once per remote node, M (n-1)/n = 1/2
     * copy over the network, the forward inside the node k (1 - 1/r) = 1 copy over NVLink */
    m.router_groups = 2, m.router_group_topk = 1;
    p = ox_build(&in);
    c = &p.coll[CO_EP_DISPATCH_FWD];
    CHECK_EQ_U64(c->bus_bytes, 512 * 512 / 2 + 512 * 512);
    CHECK_REL(c->time_s / 2, 8.4e-6 + 9.6e-6 + 131072 / 40e9, 1e-12);
    /* FP8 dispatch with 1x128 scales (DeepSeek-V3): 256 x 1 + 2 x 4 = 264 B a copy; the combine stays BF16 */
    Recipe f8 = fx_te_recipe("ds", 0);
    f8.comm_ep_dispatch = DT_E4M3, f8.comm_ep_combine = DT_BF16, f8.act_gran = GRAN_1X128;
    f8.weight_gran = GRAN_128X128, f8.scaling = SCALING_CURRENT, f8.amax_history = 1, f8.min_sm = 90;
    in.recipe = &f8;
    p = ox_build(&in);
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 512 * 264 / 2 + 512 * 264);
    CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_BWD].bus_bytes, 512 * 264 / 2 + 512 * 264);
    CHECK_EQ_U64(p.coll[CO_EP_COMBINE_FWD].bus_bytes, 512 * 512 / 2 + 512 * 512);
    CHECK(p.coll[CO_EP_DISPATCH_FWD].dtype == DT_E4M3 && p.coll[CO_EP_COMBINE_FWD].dtype == DT_BF16);
}

/* The MoE layer's memory-bound kernels (router, permutation, activations), BF16, no launch floor, at HBM 3.35 TB/s
 * x 0.8: T = 512 tokens, R = 1024 rows, h 256, 8 experts, top 2, expert FFN 128, shared 128.
 * Forward: norm2 4 T h = 524,288; router (8 x 8 + 8 x 2) T = 40,960; permute 2 R h x 2 = 1,048,576; SwiGLU
 * 6 R Fe = 786,432; unpermute (2R + 2T) h = 786,432; shared SwiGLU 6 x 512 x 128 = 393,216; residual 6 T h =
 * 786,432: 4,366,336. Backward: permute 1,048,576; routing-weight gradient 4 R h = 1,048,576; SwiGLU backward
 * 10 R Fe = 1,310,720; unpermute 786,432; router 12 T E = 49,152; shared 10 x 512 x 128 = 655,360; norm2 and
 * residual 2 x 786,432: 6,471,680. 10,838,016 B per layer and micro-batch, 2 micro-batches. Megatron's all-to-all
 * dispatcher with 8 / 4 = 2 local experts sorts the received rows by expert and back: forward 2 x 2 R h x 2 =
 * 2,097,152, backward 2 R h (2 + 2) = 2,097,152: 15,032,320 B. */
static void test_moe_kernels(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 4, in.gbs = 8;
    Plan p = ox_build(&in);
    CHECK_REL(p.time.moe_route_s, 2 * 15032320.0 / (3.35e12 * 0.8), 1e-12);
    /* the expert GEMMs grow with the imbalance allowance: 4 times the rows, about 4 times the time */
    in.moe_imbalance = 4;
    Plan p4 = ox_build(&in);
    CHECK(p4.time.expert_gemm_s > 3.0 * p.time.expert_gemm_s && p4.time.expert_gemm_s < 4.5 * p.time.expert_gemm_s);
    /* the all-to-alls hide behind the layer's compute with --overlap-ep 1 (the exposed part is what exceeds it) */
    in.moe_imbalance = 1, in.overlap_ep = 1;
    Plan po = ox_build(&in);
    CHECK(po.time.ep_comm_s < p.time.ep_comm_s);
    /* TE without gradient-accumulation fusion: main_grad += grad as kernels of their own, per linear weight of
     * each layer (2 B read of the BF16 gradient + 4 B read and 4 B write of the FP32 main gradient = 10 B): the
     * dense layer's 262,144 + 393,216 = 655,360 weights, the MoE layer's attention 262,144 + shared 98,304 + its
     * 2 local experts 2 x 98,304 (not the router's, which its own hook accumulates) = 557,056; (655,360 +
     * 557,056) x 10 = 12,124,160 B per micro-batch, 2 micro-batches */
    in.overlap_ep = 0, in.fusion = FUSE_TE, in.grad_acc_fusion = 1;
    Plan pf = ox_build(&in);
    in.grad_acc_fusion = 0;
    Plan pu = ox_build(&in);
    CHECK_REL(pu.time.nongemm_s - pf.time.nongemm_s, 2 * 12124160.0 / (3.35e12 * 0.8), 1e-9);
    CHECK(pu.time.gemm_s < pf.time.gemm_s); /* the weight-gradient GEMMs write BF16, not accumulate FP32 */
}

static void test_expert_dp_and_etp(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", (1u << STATE_MASTER) | (1u << STATE_M) | (1u << STATE_V));
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 8, in.ep = 2, in.sharding = SHARD_DIST_OPT;
    Plan p = ox_build(&in);
    /* edp = 8 / 2 = 4 ranks, 2 apart; 4 experts x 98,304 = 393,216 FP32 gradients: reduce-scattered
     * (1,572,864 B payload, 3/4 of it sent) and the BF16 parameters gathered (786,432 B, 3/4 sent) */
    const Collective *rs = &p.coll[CO_EDP_GRAD_RS], *ag = &p.coll[CO_EDP_PARAM_AG];
    CHECK_EQ_U64(rs->ranks, 4);
    CHECK_EQ_U64(rs->payload_bytes, 1572864);
    CHECK_EQ_U64(rs->bus_bytes, 1179648);
    CHECK_EQ_U64(ag->payload_bytes, 786432);
    CHECK_EQ_U64(p.coll[CO_EDP_GRAD_AR].ranks, 0);
    /* the dense-DP collectives no longer carry the experts: the other weights only */
    CHECK_EQ_U64(p.coll[CO_DP_GRAD_RS].payload_bytes, (p.params_gpu - p.params_expert_gpu) * 4);
    /* expert TP: tp 2 with SP, etp 2, ep 2 over dp 4: the rows gathered [1024 rows x 2, 256] BF16 forward
     * and backward (rows = etp x tok_r x k = 2 x 256 x 2 = 1024) */
    in.tp = 2, in.dp = 4, in.etp = 2, in.sp = 1;
    p = ox_build(&in);
    CHECK_EQ_U64(p.coll[CO_ETP_AG].ranks, 2);
    CHECK_EQ_U64(p.coll[CO_ETP_AG].payload_bytes, 1024 * 256 * 2);
    CHECK_EQ_U64(p.coll[CO_ETP_AG].calls, 2 * p.microbatches);
    /* nothing overlaps TP here (overlap_tp 0): the exposed share of the TP collectives, the layers' exposed TP
     * time over their raw TP time summed over both layer kinds, is 1, so each TP row is exposed in full */
    CHECK(in.overlap_tp == 0.0);
    for (int c = CO_TP_AR_FWD; c <= CO_TP_RS_BWD; c++)
        CHECKF(p.coll[c].exposed_s == p.coll[c].time_s, "%s exposed %g of %g", coll_name((CollectiveId)c),
               p.coll[c].exposed_s, p.coll[c].time_s);
    CHECK(p.coll[CO_TP_AG_FWD].time_s > 0);
}

static void test_flops_and_dualpipe(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 4, in.ep = 4;
    Plan p = ox_build(&in);
    /* per token: dense layer 262,144 + 393,216 = 655,360; MoE layer 262,144 + shared 98,304 + 2 x 98,304 +
     * router 2,048 = 559,104; head 256,000: 6 x 1,470,464 = 8,822,784; attention 6 x 2 layers x 2 heads x 512 x
     * (128 + 128) = 3,145,728: 11,968,512 FLOPs per token */
    CHECK_REL(p.model_flops_step / ((double)p.in.gbs * 512), 11968512.0, 1e-12);
    /* DualPipe on 2 stages: (pp/2 - 1) = 0 bubble; the all-to-alls hidden behind the paired chunks */
    in.pp = 2, in.dp = 2, in.ep = 2, in.gbs = 8, in.dualpipe = 1, in.first_stage_layers = 1, in.last_stage_layers = 1;
    p = ox_build(&in);
    CHECK_NEAR(p.time.bubble_s, 0, 0);
    CHECK_NEAR(p.time.pp_comm_s, 0, 0);
    CHECK(p.time.ep_comm_s < p.coll[CO_EP_DISPATCH_FWD].time_s + p.coll[CO_EP_COMBINE_FWD].time_s);
    /* a GPU holds both stages: both layers' parameters and the embedding and head */
    CHECK_EQ_U64(p.params_gemm_gpu, 2 * 262144 + 393216 + 98304);
}

static void test_sweep_over_ep(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    const Recipe *rs[1] = {&r};
    SweepSpec s = {.recipes = rs, .nrecipes = 1, .gpus = 4, .max_tp = 1, .max_vpp = 1, .max_cp = 1, .max_mbs = 1};
    s.base = fx_input(&m, &g, &r);
    s.base.gbs = 16;
    /* tp 1; pp 1, 2, 4; cp 1; dp = 4, 2, 1; ep the powers of two dividing 8 and dp: 3, 2, 1 choices; mbs 1;
     * recompute none/selective/full (no op for MoE); dist-opt off/on: (3 + 2 + 1) x 3 x 2 = 36 */
    CHECK_EQ_U64(sweep_size(&s), 36);
    Plan top[4];
    int n;
    SweepStats st;
    CHECK(sweep_run(&s, top, 4, &n, &st, NULL, NULL, NULL) == ST_OK);
    CHECK_EQ_U64(st.evaluated, 36);
    CHECK(n > 0 && top[0].in.ep >= 1);
    /* tp 2 as well: the 36 above, plus with tp 2 expert TP 1 or 2 (etp = tp). pp 1, dp 2: the stage's 4 ranks
     * hold ep x etp, so etp 1 with ep 1, 2, 4 and etp 2 with ep 1, 2 (FFN 128 divides by 2): 5; pp 2, dp 1: 2 ranks,
     * etp 1 with ep 1, 2 and etp 2 with ep 1: 3. (5 + 3) x 3 recomputes x 2 = 48: 84 */
    s.max_tp = 2;
    CHECK_EQ_U64(sweep_size(&s), 84);
    s.max_tp = 1;
    /* a dense model: one expert layout, and op recompute searched: 3 x 4 x 2 = 24 */
    ModelSpec d = fx_tiny_model();
    s.base.model = &d;
    CHECK_EQ_U64(sweep_size(&s), 24);
}

/* DeepSeek-V3's reported training cost (arXiv 2412.19437, section 1 and Table 1: 180K H800 GPU hours per
 * trillion tokens, 3.7 days on 2,048 H800s; section 3.2: 16-way pipeline (DualPipe), 64-way expert parallelism
 * over 8 nodes, ZeRO-1 data parallelism, no tensor parallelism; 20 of the 132 SMs drive the all-to-alls;
 * RMSNorm and MLA up-projections recomputed, the SwiGLU input cached in FP8 and its output recomputed; section
 * 4.2: sequences of 4096 tokens, a batch of 15360 for all but the first 469B tokens) with the layout it reports:
 * 2048 / 16 = 128-way DP for attention, 64 x 2 for the experts. 61 layers + MTP over 16 stages: the split is
 * not published, so every split of the 5 end layers (4 per middle stage) must land within 15 %. */
static void test_deepseek_v3_cost(void)
{
    Catalog *c = fx_catalog();
    PlanInput in;
    plan_input_defaults(&in);
    plan_input_use_stack(&in, catalog_stack(c, "megatron-core"));
    in.model = catalog_model(c, "deepseek-v3"), in.gpu = catalog_gpu(c, "h800"),
    in.recipe = catalog_recipe(c, "deepseek-v3");
    in.pp = 16, in.dp = 128, in.ep = 64, in.sharding = SHARD_ZERO1, in.gbs = 15360, in.seq = 4096;
    in.main_grad = MAIN_GRAD_RECIPE; /* FP32 gradient accumulation (section 3.3) */
    in.dualpipe = 1, in.ep_comm_sms = 20, in.recompute_mods = RECOMPUTE_MOD_MLA_UP | RECOMPUTE_MOD_MOE_ACT;
    const uint32_t ends[][2] = {{4, 1}, {3, 2}, {2, 3}, {1, 4}};
    for (int i = 0; i < 4; i++) {
        in.first_stage_layers = ends[i][0], in.last_stage_layers = ends[i][1];
        Plan p = ox_build(&in);
        double hours = 2048.0 * 1e12 / p.tokens_per_s / 3600.0; /* GPU hours per trillion tokens */
        CHECKF(hours > 0.85 * 180000 && hours < 1.15 * 180000, "first %u last %u: %.0f GPU hours per trillion tokens",
               ends[i][0], ends[i][1], hours);
        /* the all-to-alls: dispatch in FP8 with 1x128 scales (7168 + 56 x 4 = 7392 B a copy), to at most 4 of the
         * 8 nodes: 4 x 7/8 = 3.5 copies a token over the network, 8 x 7/8 = 7 over NVLink; 4096 tokens per
         * micro-batch: 4096 x 10.5 x 7392 = 317,915,136 B per call; the combine in BF16 (14,336 B a copy) */
        CHECK_EQ_U64(p.coll[CO_EP_DISPATCH_FWD].bus_bytes, 317915136ull);
        CHECK_EQ_U64(p.coll[CO_EP_COMBINE_FWD].bus_bytes, 616562688ull); /* 4096 x 10.5 x 14336 */
        CHECK(p.coll[CO_EP_DISPATCH_FWD].inter_node && p.coll[CO_EP_DISPATCH_FWD].ranks == 64);
        CHECK_NEAR(p.time.ep_comm_s, 0, 1e-9); /* DualPipe hides them */
    }
    /* without DualPipe the all-to-alls are exposed and the cost leaves the band */
    in.dualpipe = 0, in.ep_comm_sms = 0, in.first_stage_layers = 4, in.last_stage_layers = 1;
    Plan p = ox_build(&in);
    CHECK(2048.0 * 1e12 / p.tokens_per_s / 3600.0 > 1.15 * 180000);
    CHECK(p.time.ep_comm_s > 0);
    free(c);
}

/* Latent attention on a dense model, worked by hand: 1 layer, hidden 64, 2 heads, q/k head 16 + 8 (rope), value
 * 16, q_lora 32, kv_lora 16, FFN 128, vocab 100, seq 64, RMSNorm, SwiGLU, untied; BF16 saved inputs. */
/* One dense layer with latent attention: 2 heads, hidden 64, SwiGLU FFN 128, q_lora 32, kv_lora 16, nope 16,
 * rope 8, v 16 (head_dim 24), vocabulary 100, 64 tokens. */
static ModelSpec mla_model(void)
{
    ModelSpec m = {.name = "tiny-mla",
                   .layers = 1,
                   .hidden = 64,
                   .ffn_hidden = 128,
                   .heads = 2,
                   .kv_heads = 2,
                   .head_dim = 24,
                   .vocab = 100,
                   .seq_len = 64,
                   .norm = NORM_RMSNORM,
                   .mlp = MLP_SWIGLU,
                   .pos = POS_ROPE,
                   .q_lora_rank = 32,
                   .kv_lora_rank = 16,
                   .qk_nope_head_dim = 16,
                   .qk_rope_head_dim = 8,
                   .v_head_dim = 16};
    return m;
}

static void test_mla_and_mtp(void)
{
    ModelSpec m = mla_model();
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    Plan p = ox_build(&in);
    /* params: q_down 64 x 32 = 2048, q_up 32 x 2 x 24 = 1536, kv_down 64 x 24 = 1536, kv_up 16 x 2 x 32 = 1024,
     * out 2 x 16 x 64 = 2048: 8192 + latent norms 48; FFN 3 x 128 x 64 = 24,576; norms 128; embedding + head
     * 12,800; final norm 64: 45,808 */
    CHECK_EQ_U64(p.params_total, 45808);
    CHECK_EQ_U64(p.params_gpu, 45808);
    /* activations of the layer (64 tokens): norm1 64 x 64 x 2 + 64 x 4 = 8448; the q_down and kv_down input
     * 64 x 64 x 2 = 8192 once (both read the norm's output, one BF16 tensor: Megatron-Core passes hidden_states
     * to both); c_q 64 x 32 x 2 + 256 = 4352 and the q_up input 4096; c_kv 64 x 16 x 2 + 256 = 2304 and the
     * kv_up input 2048; Q, K, V 64 x 2 x (24 + 24 + 16) x 2 = 16,384; the attention output 64 x 2 x 16 x 2 =
     * 4096 (also the out-projection's BF16 input): 49,920. FFN: norm2 8448, FC1 output 64 x 256 x 2 = 32,768,
     * FC1 input 8192, FC2 input 64 x 128 x 2 = 16,384: 65,792. Log-sum-exp 64 x 2 x 4 = 512. */
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, 49920 + 65792);
    CHECK_EQ_U64(p.mem[MT_ACT_ATTN].bytes, 512);
    /* in FP8 (TE's per-tensor recipe) each linear casts and saves its own input, so q_down and kv_down keep two
     * copies: 2 x 64 x 64 = 8192, q_up 64 x 32 = 2048, kv_up 64 x 16 = 1024, out-projection 64 x 32 = 2048, FC1
     * 64 x 64 = 4096, FC2 64 x 128 = 8192: 25,600 B of E4M3 (per-tensor: no block scales) */
    Recipe rf = fx_te_recipe("te", 0);
    PlanInput inf = fx_input(&m, &g, &rf);
    Plan pf = ox_build(&inf);
    CHECK_EQ_U64(pf.mem[MT_ACT_LAYER_FP8].bytes, 25600);
    in.recompute_mods = RECOMPUTE_MOD_MLA_UP; /* Q, K, V rebuilt from the latents */
    Plan pr = ox_build(&in);
    CHECK_EQ_U64(pr.mem[MT_ACT_LAYER_HP].bytes, 49920 + 65792 - 16384);
    CHECK(pr.time.step_s > p.time.step_s); /* the up-projections run again in backward */
    /* FLOPs per token: 6 x (8192 + 24,576 + head 6400) = 235,008 + attention 6 x 1 x 2 x 64 x (24 + 16) = 30,720 */
    CHECK_REL(p.model_flops_step / ((double)p.in.gbs * 64), 265728.0, 1e-12);
    /* MTP depth 1 (a dense layer here) on the last (only) stage: eh_proj 64 x 128 = 8192, three norms 192, the
     * layer 8192 + 48 + 24,576 + 128 = 32,944: 41,328 more parameters, outside the published total */
    m.mtp_layers = 1, in.recompute_mods = 0;
    Plan pm = ox_build(&in);
    CHECK_EQ_U64(pm.params_total, 45808);
    CHECK_EQ_U64(pm.params_gpu, 45808 + 41328);
    CHECK(pm.time.step_s > p.time.step_s);
    /* its activations: the layer's again (49,920 + 65,792), and what Megatron-Core's MultiTokenPredictionLayer
     * saves besides: enorm's input (the next tokens' embedding) 64 x 64 x 2 = 8192, enorm's and hnorm's rstd
     * 2 x 64 x 4 = 512, eh_proj's input [enorm; hnorm] 64 x 128 x 2 = 16,384: 25,088 (hnorm's input is the final
     * norm's, in act_output) -> 2 x 115,712 + 25,088 = 256,512 */
    CHECK_EQ_U64(pm.mem[MT_ACT_LAYER_HP].bytes, 256512);
    /* in FP8 eh_proj saves its E4M3 input, 64 x 128 = 8192 B beside the two layers' 2 x 25,600: 59,392 */
    m.mtp_layers = 1;
    Plan pfm = ox_build(&inf);
    CHECK_EQ_U64(pfm.mem[MT_ACT_LAYER_FP8].bytes, 59392);
    /* with latent attention and TP 2 + SP, the attention gathers its BF16 latents (32 + 16 + 8 per token) and the
     * FFN its input (64 per token): 64 tokens x (56 + 64) x 2 / 2 calls = 7680 B a call on average */
    m.mtp_layers = 0, in.tp = 2, in.sp = 1, in.gbs = 1; /* one micro-batch */
    Plan pt = ox_build(&in);
    CHECK_EQ_U64(pt.coll[CO_TP_AG_FWD].payload_bytes, 7680);
    CHECK_EQ_U64(pt.coll[CO_TP_AG_FWD].calls, 2);
}

/* Three pipeline stages over 6 layers: first [0, 2), middle [2, 4), last [4, 6). With the first 2 layers dense
 * the middle stage is all MoE; with the first 3 dense it holds one dense and one MoE layer, while the first (2
 * dense) and last (2 MoE) stages are the same in both. The bubble (pp - 1 stage-times: the first and middle
 * stages', or those of the two not slowest) therefore differs, by the middle stage alone; a middle stage placed
 * anywhere else ([0, 2): 2 dense either way) would give the same bubble in both. */
static void test_middle_stage_layers(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 6;
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", (1u << STATE_MASTER) | (1u << STATE_M) | (1u << STATE_V));
    PlanInput in = fx_input(&m, &g, &r);
    in.pp = 3, in.mbs = 1, in.gbs = 8;
    m.dense_layers = 2;
    Plan two = ox_build(&in);
    m.dense_layers = 3;
    Plan three = ox_build(&in);
    CHECK(isfinite(two.time.bubble_s) && two.time.bubble_s > 0);
    CHECKF(three.time.bubble_s != two.time.bubble_s,
           "middle stage [2, 4): bubble %g s with 3 dense layers, %g s with 2", three.time.bubble_s, two.time.bubble_s);
}

/* Recomputing MLA's up-projections (--recompute-mods mla_up) reruns the forward GEMMs of q_up and kv_up in the
 * backward. Here they have one shape: q_up (2 heads x (nope 16 + rope 16) = 64, q_lora 16) and kv_up (2 x (nope 16
 * + v 16) = 64, kv_lora 16), both over the same tokens. So the step grows by two equal GEMMs with a q latent and by
 * one (kv_up alone) without: the first growth is exactly twice the second. */
static void test_mla_up_recompute(void)
{
    ModelSpec m = mla_model();
    m.head_dim = 32, m.q_lora_rank = 16, m.qk_rope_head_dim = 16; /* kv_lora 16, nope 16, v 16 as given */
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    double grow[2];
    for (int q = 0; q < 2; q++) {
        m.q_lora_rank = q ? 16 : 0;
        in.recompute_mods = 0;
        Plan base = ox_build(&in);
        in.recompute_mods = RECOMPUTE_MOD_MLA_UP;
        Plan rc = ox_build(&in);
        grow[q] = rc.time.step_s - base.time.step_s;
    }
    CHECK(grow[0] > 0);
    CHECK_REL(grow[1], 2.0 * grow[0], 1e-9);
}

int main(void)
{
    RUN(test_mla_and_mtp);
    RUN(test_deepseek_v3_cost);
    RUN(test_layout_checks);
    RUN(test_mla_up_recompute);
    RUN(test_middle_stage_layers);
    RUN(test_expert_memory);
    RUN(test_moe_activations);
    RUN(test_all_to_all);
    RUN(test_moe_kernels);
    RUN(test_expert_dp_and_etp);
    RUN(test_flops_and_dualpipe);
    RUN(test_sweep_over_ep);
    return test_summary();
}
