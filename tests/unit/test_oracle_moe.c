/* tests/unit/test_oracle_moe.c — memory of a mixture-of-experts stage worked
 * out by hand: the last stage's output activations (final norm, LM-head input,
 * fp32 logits; again per multi-token-prediction depth) and ZeRO-3's gathered
 * layers when the dense layer kind is the larger one.
 *
 * An independent oracle: every expected byte count is arithmetic on the model
 * below, written out in the comments, never a value the planner produced.
 *
 * The model: 2 layers (the first dense), hidden 256, 2 heads of 128 (no GQA),
 * vocabulary 1000 (vocab_pad 1), seq 512, RMSNorm, SwiGLU, RoPE, untied; 8
 * routed experts of FFN 128, top 2, 1 shared expert, softmax router; the dense
 * FFN is given below. BF16 recipe (support/fixtures.h): BF16 weights, FP32
 * gradient reduction, no FP8 copy. Micro-batch 1, tp = pp = cp = ep = 1. */
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

/* pp = 1: the one stage is the last. Tokens per micro-batch 1 x 512 = 512 (tp 1: all on this rank).
 *   final norm input and output, BF16: 2 x 512 x 256 x 2 B = 524,288
 *   its fp32 statistics (RMSNorm: 4 B a token):    512 x 4 B =   2,048
 *   fp32 softmax of the logits:             512 x 1000 x 4 B = 2,048,000
 *   total 2,574,336; one MTP depth repeats all three: 2 x 2,574,336 = 5,148,672. */
static void test_last_stage_output(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_ACT_OUTPUT].bytes, 2574336);
    m.mtp_layers = 1;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_ACT_OUTPUT].bytes, 5148672);
}

/* ZeRO-3 gathers one whole layer's weights before it runs (and keeps room for its gradient): the transient
 * grows by 2 x the larger layer kind's gathered bytes (pp = 1: nothing else changes with the sharding).
 * Gathered bytes per element: linear weights BF16 2 + no FP8 copy 0 + the BF16 gathered copy 2 + the FP32
 * gradient 4 = 8; other (norms, router) BF16 2 + 2 + 4 = 8.
 * Dense FFN 4096 makes the dense layer the larger:
 *   dense: QKV 768 x 256 = 196,608 + proj 256 x 256 = 65,536 + FC1 8192 x 256 = 2,097,152 + FC2 256 x 4096 =
 *          1,048,576 = 3,407,872 linear, 2 norms of 256 = 512 other: (3,407,872 + 512) x 8 = 27,267,072
 *   MoE:   262,144 attention + shared expert 256 x 256 + 256 x 128 = 98,304 + 8 routed experts of 98,304 =
 *          786,432, other 512 + router 8 x 256 = 2,048: (262,144 + 98,304 + 786,432 + 2,560) x 8 = 9,195,520
 *   transient(ZeRO-3) - transient(ZeRO-2) = 2 x 27,267,072 = 54,534,144.
 * The ZeRO-2 transient itself: the larger backward working set of one layer,
 *   dense: dX and d(residual) 2 x 512 x 256 x 2 B = 524,288 + d(FC1 output) 512 x 8192 x 2 B = 8,388,608 + SwiGLU's
 *          d(its output) read meanwhile 512 x 4096 x 2 B = 4,194,304 = 13,107,200
 *   MoE:   524,288 + d(shared FC1 output) 512 x 256 x 2 B = 262,144 + d(routed FC1 output) of 1024 rows
 *          (512 tokens x top 2) x 256 x 2 B = 524,288 + SwiGLU's d(outputs) (512 + 1024) x 128 x 2 B = 393,216 +
 *          dispatch and combine buffers 1024 x 256 x (2 + 2) B = 1,048,576 + the router's logits and d(scores)
 *          fp32, d(logits) BF16 and d(weights) fp32 512 x (8 x 10 + 2 x 4) B = 45,056 + the MoE input's gradient
 *          512 x 256 x 2 B = 262,144 + d(QKV) 512 x 768 x 2 B = 786,432 = 3,846,144
 *   and the loss's peak 512 x 1000 x (10 - 4) B = 3,072,000 is below both: 13,107,200. */
static void test_zero3_gathers_the_larger_kind(void)
{
    ModelSpec m = ox_moe(4096);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.dp = 2, in.gbs = 2, in.sharding = SHARD_ZERO2;
    Plan p2, p3;
    if (!build(&in, &p2)) return;
    in.sharding = SHARD_ZERO3;
    if (!build(&in, &p3)) return;
    CHECK_EQ_U64(p2.mem[MT_TRANSIENT].bytes, 13107200);
    CHECK_EQ_U64(p3.mem[MT_TRANSIENT].bytes - p2.mem[MT_TRANSIENT].bytes, 54534144);
}

/* ZeRO-3 leaves the routed experts out where nothing is gathered or cast for them. dp 2 with ep 2 makes the
 * expert-data-parallel group 1 x 1 x 2 / (2 x 1) = 1; with BF16 parameters (the master in BF16, no working copy:
 * NeMo AutoModel's pure BF16, the recipe bf16-params) each rank keeps its 4 experts whole, in the compute dtype, and gathers only the rest;
 * an FP32 master is still cast to a BF16 copy (rows 4 and 5). Gathered bytes per element 8, as above (BF16 2 + copy
 * 2 + FP32 gradient 4); ox_moe(512):
 *   dense layer (655,360 linear + 512 other) x 8 = 5,246,976
 *   MoE layer without its experts (262,144 attention + 98,304 shared + 2,560 other) x 8 = 2,904,064 (with its 4
 *   local experts, 393,216 more, it would be (360,448 + 393,216 + 2,560) x 8 = 6,049,792, the larger)
 *   pp 1: transient(ZeRO-3) - transient(ZeRO-2) = 2 x 5,246,976 = 10,493,952 (the dense layer is now the larger).
 * pp 2 (stage 1: the MoE layer, the final norm and the LM head; --stage-view 2): 2 x 2,904,064 = 5,808,128 for the
 * gathered layer, and, FSDP keeping a stage's gathered BF16 weights and gradients under PP, 4 B for each parameter
 * but the experts: 262,144 + 98,304 + 2,560 + norm 256 + LM head 1000 x 256 = 256,000 -> 619,264 x 4 = 2,477,056;
 * 8,285,184 in all. With ep 1 (expert group 2) all 8 experts are local, sharded and gathered as before:
 * 2 x (360,448 + 786,432 + 2,560) x 8 = 2 x 9,195,520 = 18,391,040. An FP32 master at ep 2: 2 x 6,049,792 =
 * 12,099,584, and at pp 2 + (619,264 + 393,216) x 4 = 4,049,920: 16,149,504. */
static void test_zero3_experts_whole_in_group_of_one(void)
{
    static const struct {
        uint32_t pp, ep, stage_view;
        Dtype master;
        uint64_t more; /* transient(ZeRO-3) - transient(ZeRO-2) */
    } rows[] = {
        {1, 2, 0, DT_BF16, 10493952}, {2, 2, 2, DT_BF16, 8285184},  {1, 1, 0, DT_BF16, 18391040},
        {1, 2, 0, DT_FP32, 12099584}, {2, 2, 2, DT_FP32, 16149504},
    };
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        ModelSpec m = ox_moe(512);
        GpuSpec g = fx_gpu();
        Recipe r = fx_bf16_recipe("bf16", 0);
        if (rows[i].master == DT_BF16) /* the parameter is the BF16 master: no working copy */
            r.gemm.dt[STATE_MASTER] = DT_BF16, r.gemm.dt[STATE_WEIGHT] = DT_NONE;
        PlanInput in = fx_input(&m, &g, &r);
        in.dp = 2, in.gbs = 2, in.pp = rows[i].pp, in.ep = rows[i].ep, in.stage_view = rows[i].stage_view;
        in.sharding = SHARD_ZERO2;
        Plan p2, p3;
        if (!build(&in, &p2)) return;
        in.sharding = SHARD_ZERO3;
        if (!build(&in, &p3)) return;
        CHECKF(p3.mem[MT_TRANSIENT].bytes - p2.mem[MT_TRANSIENT].bytes == rows[i].more,
               "row %u: ZeRO-3 adds %llu B to the transient, expected %llu", i,
               (unsigned long long)(p3.mem[MT_TRANSIENT].bytes - p2.mem[MT_TRANSIENT].bytes),
               (unsigned long long)rows[i].more);
    }
}

/* The MoE FFN's memory-bound kernels (router, permutation, casts, expert activations: moe_route_s), counted at
 * the launch floor (HBM and FLOP rates 1e30, 1 us a launch), one micro-batch, one MoE layer. FP8 GEMMs (E4M3
 * forward, E5M2 backward), SwiGLU experts, a shared expert. BF16 dispatch:
 *   forward  router input 1, softmax + top-k 2, dispatch 1, FP8 cast of the dispatched rows 1, SwiGLU 1, FC2
 *            input cast 1, combine 1, shared expert SwiGLU 1 and its cast 1, residual 1 = 11
 *   backward dispatch of the gradient 1, its sum 1, FP8 cast of it 1, dY cast for FC1 1, SwiGLU backward 1,
 *            combine 1, router backward 2, shared expert SwiGLU backward 1 and its casts 2, norm backward 2 +
 *            residual 1 = 14; 25 in all.
 * FP8 dispatch: the cast moves before the dispatch (forward 1 for 1) and the gradient's cast becomes the
 * dispatch cast of the backward (1 for 1): 25 again.
 * These lists are DeepEP's (moe_dedup), which permutes the received rows by expert as they arrive; Megatron's
 * all-to-all dispatcher sorts them by local expert and back (the last cases). */
static void test_route_launches(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.hbm_bw = g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30;
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.launch_s = 1e-6, in.gbs = 1, in.moe_dedup = MOE_DISPATCH_DEEPEP;
    Plan p;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 25e-6) < 1e-12, "BF16 dispatch: %g us, expected 25", p.time.moe_route_s * 1e6);
    r.comm_ep_dispatch = DT_E4M3;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 25e-6) < 1e-12, "FP8 dispatch: %g us, expected 25", p.time.moe_route_s * 1e6);
    /* GeLU experts, no shared expert, BF16 dispatch: forward 1 + 2 + 1 + 1 + GeLU 1 + 1 + 1 + residual 1 = 9;
     * backward 1 + 1 + 1 + 1 + GeLU backward 1 + 1 + 2 + norm 2 + residual 1 = 11; 20 in all */
    m.mlp = MLP_GELU, m.shared_experts = 0;
    r.comm_ep_dispatch = DT_BF16;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 20e-6) < 1e-12, "GeLU, no shared expert: %g us, expected 20",
           p.time.moe_route_s * 1e6);
    /* Transformer Engine quantizes the experts' inputs one local expert at a time (ep 1: 8 local experts): the four
     * casts of the experts' GEMM inputs (FC1's and FC2's forward, the gradient's and FC1's dY backward), 1 launch
     * each above, become 3 x 8 = 24 each under per-tensor current scaling (amax, scale, cast): 25 + 4 x 23 = 117;
     * 1 x 8 = 8 each with 1x128 block scales: 25 + 4 x 7 = 53. SwiGLU and the shared expert back. */
    m.mlp = MLP_SWIGLU, m.shared_experts = 1;
    r.scaling = SCALING_CURRENT, r.act_gran = GRAN_TENSOR;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 117e-6) < 1e-12, "per-tensor current scaling: %g us, expected 117",
           p.time.moe_route_s * 1e6);
    r.act_gran = GRAN_1X128;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 53e-6) < 1e-12, "1x128 blocks: %g us, expected 53", p.time.moe_route_s * 1e6);
    /* another stack's grouped input is one tensor: one launch a cast, 25 */
    in.fusion = FUSE_COMPILE;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 25e-6) < 1e-12, "compile: %g us, expected 25", p.time.moe_route_s * 1e6);
    /* a stack whose router and dispatcher were counted (moe_host_ops 213: 39 small kernels forward and 35 backward
     * besides the listed ones) adds a launch floor each: delayed scaling, TE, 25 + 74 = 99; twice the count
     * (426) doubles them: 25 + 148 = 173 */
    in.fusion = FUSE_TE, r.scaling = SCALING_DELAYED, r.act_gran = GRAN_TENSOR, in.moe_host_ops = 213;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 99e-6) < 1e-12, "small kernels: %g us, expected 99", p.time.moe_route_s * 1e6);
    in.moe_host_ops = 426;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 173e-6) < 1e-12, "426 ops: %g us, expected 173", p.time.moe_route_s * 1e6);
    /* MXFP8 (1x32 scales) on an SM 10.0 GPU: one quantize kernel per local expert, as 1x128 blocks (53), and TE's
     * scale swizzles before each grouped call, one kernel for all experts' A scales and one for B: FC1 and FC2, 2
     * forward and 4 backward each, 12: 65 */
    in.moe_host_ops = 0, r.scaling = SCALING_CURRENT, r.gemm_bwd = DT_E4M3, r.act_gran = r.weight_gran = GRAN_1X32;
    g.sm = 100;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 65e-6) < 1e-12, "MXFP8: %g us, expected 65", p.time.moe_route_s * 1e6);
    /* Megatron's all-to-all dispatcher with 8 local experts: the received rows sorted by expert after the dispatch
     * and restored before the combine, 1 kernel each forward, and their gradients 2 backward: 65 + 4 = 69; a
     * compile stack (one grouped kernel, no such dispatcher) none: the 25 of the case above with delayed scaling */
    in.moe_dedup = MOE_DISPATCH_ALLTOALL;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 69e-6) < 1e-12, "all-to-all dispatcher: %g us, expected 69",
           p.time.moe_route_s * 1e6);
    in.fusion = FUSE_COMPILE, r.scaling = SCALING_DELAYED, r.act_gran = r.weight_gran = GRAN_TENSOR;
    r.gemm_bwd = DT_E5M2, g.sm = 90;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 25e-6) < 1e-12, "compile, all-to-all: %g us, expected 25",
           p.time.moe_route_s * 1e6);
}

/* The same kernels by bytes (launches free, HBM 1e12 B/s at efficiency 1: bytes x 1e-12 s). T = 512 tokens,
 * h = 256, E = 8 experts, top k = 2, R = 512 x 2 = 1024 routed rows, Fe = Fs = 128, SwiGLU, combine BF16 (2 B).
 * BF16 dispatch (2 B):
 *   forward  router input 4Th 524,288; probabilities + top-k (8E + 8k)T = 80 x 512 = 40,960; dispatch
 *            2Rh x 2 = 1,048,576; FP8 cast of the rows 4Rh = 1,048,576; SwiGLU 6R Fe = 786,432; FC2 input cast
 *            4R Fe = 524,288; combine (2R + 2T)h = 786,432; shared SwiGLU 6T Fs = 393,216 and cast 4T Fs =
 *            262,144; residual 6Th = 786,432: 6,201,344
 *   backward gradient dispatch 2Rh x 2 = 1,048,576, its sum 4Rh = 1,048,576, its FP8 cast 4Rh = 1,048,576, FC1 dY
 *            cast 4R x 2Fe = 1,048,576, SwiGLU backward 10R Fe = 1,310,720, combine 786,432, router 12TE = 49,152,
 *            shared SwiGLU backward 10T Fs = 655,360 and casts 4T(h + 2Fs) = 1,048,576, norm + residual 2 x 6Th =
 *            1,572,864: 9,617,408; in all 15,818,752 B
 * FP8 dispatch (1 B): the forward casts 3Th = 393,216 before a 1-byte dispatch 2Rh = 524,288 and drops the rows'
 * cast: 5,021,696; the backward casts 3Th = 393,216, dispatches 524,288 and drops the gradient's cast:
 * 8,437,760; in all 13,459,456 B.
 * DeepEP's lists, as test_route_launches; Megatron's all-to-all dispatcher's sort is the last cases. */
static void test_route_bytes(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.hbm_bw = 1e12, g.flops_bf16 = g.flops_fp8 = g.flops_fp32 = 1e30;
    Recipe r = fx_te_recipe("te", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.launch_s = 0, in.eff_hbm = 1, in.gbs = 1, in.moe_dedup = MOE_DISPATCH_DEEPEP;
    Plan p;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 15818752e-12) < 1e-18, "BF16 dispatch: %.0f B, expected 15,818,752",
           p.time.moe_route_s * 1e12);
    r.comm_ep_dispatch = DT_E4M3;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 13459456e-12) < 1e-18, "FP8 dispatch: %.0f B, expected 13,459,456",
           p.time.moe_route_s * 1e12);
    /* GeLU experts (FC1 output Fe, not 2Fe), no shared expert, BF16 dispatch:
     *   forward  524,288 + 40,960 + 1,048,576 + 1,048,576 + GeLU 4R Fe = 524,288 + cast 524,288 + combine 786,432
     *            + residual 786,432 = 5,283,840
     *   backward 1,048,576 + 1,048,576 + 1,048,576 + FC1 dY cast 4R Fe = 524,288 + GeLU backward 6R Fe = 786,432
     *            + 786,432 + 49,152 + 1,572,864 = 6,864,896; in all 12,148,736 B */
    m.mlp = MLP_GELU, m.shared_experts = 0;
    r.comm_ep_dispatch = DT_BF16;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 12148736e-12) < 1e-18, "GeLU, no shared expert: %.0f B, expected 12,148,736",
           p.time.moe_route_s * 1e12);
    /* GeLU experts with the shared expert back: forward + shared GeLU 4T Fs = 262,144 and its cast 262,144 ->
     * 5,808,128; backward + shared GeLU backward 6T Fs = 393,216 and its casts 4T(h + Fs) = 786,432 ->
     * 8,044,544; in all 13,852,672 B */
    m.shared_experts = 1;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 13852672e-12) < 1e-18, "GeLU with a shared expert: %.0f B, expected 13,852,672",
           p.time.moe_route_s * 1e12);
    /* per-tensor current scaling in Transformer Engine reads each expert input once more for its amax (2 B an
     * element), SwiGLU, BF16 dispatch: FC1 input 2Rh = 2 x 1024 x 256 = 524,288, FC2 input 2R Fe = 262,144, the
     * gradient 2Rh = 524,288, FC1's dY 2R x 2Fe = 524,288: 15,818,752 + 1,835,008 = 17,653,760 B */
    m.mlp = MLP_SWIGLU, r.scaling = SCALING_CURRENT, r.act_gran = GRAN_TENSOR;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 17653760e-12) < 1e-18, "current scaling: %.0f B, expected 17,653,760",
           p.time.moe_route_s * 1e12);
    /* MXFP8 (1x32 scales, SM 10.0): the expert casts as delayed scaling's (no amax pass, 15,818,752) and TE's scale
     * swizzles of the grouped GEMMs, reading and writing each scale (1/16 B per scaled element), El = 8 local
     * experts: FC1 (N 2Fe = 256, K h = 256) forward (R K + El N K) / 16 = (262,144 + 524,288) / 16 = 49,152, backward
     * (2 R N + El N K + K R) / 16 = (524,288 + 524,288 + 262,144) / 16 = 81,920; FC2 (N h = 256, K Fe = 128) forward
     * (131,072 + 262,144) / 16 = 24,576, backward (524,288 + 262,144 + 131,072) / 16 = 57,344: 212,992 more,
     * 16,031,744 B */
    r.gemm_bwd = DT_E4M3, r.act_gran = r.weight_gran = GRAN_1X32, g.sm = 100;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 16031744e-12) < 1e-18, "MXFP8: %.0f B, expected 16,031,744",
           p.time.moe_route_s * 1e12);
    /* Megatron's all-to-all dispatcher, 8 local experts: each of the R = 1024 received rows of h = 256 copied once
     * into expert order after the dispatch (read and write, BF16: 2 x 1024 x 256 x 2 = 1,048,576) and once back
     * before the combine (1,048,576), their gradients the same backward (2 x 1024 x 256 x (2 + 2) = 2,097,152):
     * 16,031,744 + 4,194,304 = 20,226,048 B; with the FP8 dispatch (1 B a dispatched element; the per-tensor list
     * again, 13,459,456): forward 2 x 1024 x 256 x 1 = 524,288 + 1,048,576, backward 2 x 1024 x 256 x (1 + 2) =
     * 1,572,864: 13,459,456 + 3,145,728 = 16,605,184 B */
    in.moe_dedup = MOE_DISPATCH_ALLTOALL;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 20226048e-12) < 1e-18, "all-to-all dispatcher, MXFP8: %.0f B, expected 20,226,048",
           p.time.moe_route_s * 1e12);
    r.scaling = SCALING_DELAYED, r.act_gran = r.weight_gran = GRAN_TENSOR, r.gemm_bwd = DT_E5M2, g.sm = 90;
    r.comm_ep_dispatch = DT_E4M3;
    if (!build(&in, &p)) return;
    CHECKF(fabs(p.time.moe_route_s - 16605184e-12) < 1e-18,
           "all-to-all dispatcher, FP8 dispatch: %.0f B, expected 16,605,184", p.time.moe_route_s * 1e12);
}

/* One NCCL communicator (nccl_comm_bytes = 1000 here) per group of more than one rank the GPU is in: tp, cp,
 * dp x cp, pp, ep, etp and the expert-data-parallel group edp = tp cp dp / (ep etp).
 *   dp 4, ep 4:              dp, ep (edp 1)                -> 2
 *   dp 4, ep 2:              dp, ep, edp 2                 -> 3
 *   tp 2, dp 2, ep 2, etp 2: tp, dp, ep, etp (edp 1)      -> 4
 *   pp 2, dp 2, ep 2:        dp, pp, ep (edp 1)            -> 3
 *   cp 2, ep 2:              cp, dp x cp = 2, ep (edp 1)   -> 3
 *   tp 2 alone:              tp, edp 2 (no dp, no ep)      -> 2 */
static void test_communicators(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    const struct {
        uint32_t tp, cp, dp, pp, ep, etp, want;
    } c[6] = {{1, 1, 4, 1, 4, 1, 2}, {1, 1, 4, 1, 2, 1, 3}, {2, 1, 2, 1, 2, 2, 4},
              {1, 1, 2, 2, 2, 1, 3}, {1, 2, 1, 1, 2, 1, 3}, {2, 1, 1, 1, 1, 1, 2}};
    for (int i = 0; i < 6; i++) {
        PlanInput in = fx_input(&m, &g, &r);
        in.tp = c[i].tp, in.cp = c[i].cp, in.dp = c[i].dp, in.pp = c[i].pp, in.ep = c[i].ep, in.etp = c[i].etp;
        in.gbs = c[i].dp, in.nccl_comm_bytes = 1000;
        Plan p;
        if (!build(&in, &p)) continue;
        if (c[i].tp == 1) { /* without TP, sequence parallelism is moot: the same layout builds without it */
            in.sp = 0;
            Plan q;
            if (build(&in, &q)) CHECK_EQ_U64(q.mem[MT_COMM_BUFFER].bytes, 1000ull * c[i].want);
        }
        CHECKF(p.mem[MT_COMM_BUFFER].bytes == 1000ull * c[i].want,
               "layout %d: %llu bytes of communicators, expected %u", i,
               (unsigned long long)p.mem[MT_COMM_BUFFER].bytes, 1000 * c[i].want);
        in.comms_min = 3; /* a floor: layouts with 3 or more keep theirs, 2 become 3 */
        if (build(&in, &p)) CHECK_EQ_U64(p.mem[MT_COMM_BUFFER].bytes, 1000ull * (c[i].want > 3 ? c[i].want : 3));
    }
}

/* The optimizer's HBM traffic on one GPU (ep 1: every expert here), dense FFN 512. The BF16 recipe keeps the
 * same states for every parameter: read the FP32 gradient 4 B, read and write the FP32 master, m and v 2 x 12 =
 * 24 B, write the BF16 weight 2 B: 30 B a parameter. Parameters:
 *   attention QKV 768 x 256 + proj 256 x 256 = 262,144, twice:                524,288
 *   dense FFN (SwiGLU) 1024 x 256 + 256 x 512:                                 393,216
 *   router 8 x 256 = 2,048; shared expert 256 x 256 + 256 x 128 = 98,304:      100,352
 *   8 experts x 98,304:                                                        786,432
 *   RMSNorms 2 x 2 x 256 + final 256 = 1,280; embedding and head 2 x 256,000:  513,280
 *   2,317,568 parameters (786,432 of them expert) -> 69,527,040 B, at 1e12 B/s 6.952704e-5 s */
static void test_optimizer_bytes_with_experts(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.hbm_bw = 1e12;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.eff_hbm = 1;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.params_gpu, 2317568);
    CHECK_EQ_U64(p.params_expert_gpu, 786432);
    CHECK_REL(p.time.optimizer_s, 69527040e-12, 1e-12);
}

/* The transient of the one (last) stage, dense FFN 512, tokens 512, h 256, SwiGLU (2 FC1 outputs per FFN unit):
 *   dense layer: dX and d(residual) 2 x 512 x 256 x 2 = 524,288 + d(hidden) 512 x 2 x 512 x 2 = 1,048,576 +
 *     SwiGLU's d(output) 512 x 512 x 2 = 524,288: 2,097,152
 *   MoE layer: 524,288 + d(hidden) of the shared expert 512 x 2 x 128 and of the routed rows (512 tokens x top
 *     2 = 1,024) 1,024 x 2 x 128: (131,072 + 262,144) x 2 = 786,432; SwiGLU's d(outputs) (512 + 1,024) x 128 x 2
 *     = 393,216; dispatch and combine buffers 1,024 x 256 x (2 + 2) = 1,048,576; the router 512 x (8 x 10 +
 *     2 x 4) = 45,056; the MoE input's gradient 512 x 256 x 2 = 262,144; d(QKV) 512 x 768 x 2 = 786,432:
 *     3,846,144 (the larger)
 *   the loss beyond the saved softmax, (loss_bytes - 4) B per logit, 512 x 1000 logits: loss_bytes 4 -> 0, the
 *     transient is the MoE layer's 3,846,144; 12 -> 4,096,000, larger, so the transient
 *   this executor's stack (fusion fp8plan, loss_bytes 6), vocabulary 8,000: the LM head's backward holds d(logits)
 *     512 x 8,000 x 2 = 8,192,000, dX's buffer (2 heads x 128 = 256 = h wide) and d(residual) 2 x 512 x 256 x 2 =
 *     524,288, and the buffers the executor keeps for every MoE layer's forward and backward: the router's logits
 *     512 x 8 x 4 = 16,384 and the experts' output rows 1,024 x 256 x 2 = 524,288: 9,256,960 (its MoE layer, with
 *     the dense layer's wider FFN in the one set of block buffers, is less: 5,025,792) */
static void test_transient_loss_or_layer(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(&m, &g, &r);
    in.gbs = 1, in.loss_bytes = 4;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 3846144);
    in.loss_bytes = 12;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 4096000);
    m.vocab = 8000, in.fusion = FUSE_FP8PLAN, in.loss_bytes = 6;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 9256960);
    in.loss_bytes = 4; /* the head's backward then holds 1,064,960 B: the MoE layer's set is the peak */
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_TRANSIENT].bytes, 5025792);
}

/* 6 layers (the first `dense` of them dense, FFN dense_ffn), BF16, pp 4 with 1 layer on the first and the last
 * stage (2 on each middle one), 4 micro-batches of 1 sequence (gbs 4, dp 1). */
static PlanInput six_layers_pp4(ModelSpec *m, GpuSpec *g, Recipe *r, uint32_t dense_ffn, uint32_t dense)
{
    *m = ox_moe(dense_ffn);
    m->layers = 6, m->dense_layers = dense;
    *g = fx_gpu();
    *r = fx_bf16_recipe("bf16", 0);
    PlanInput in = fx_input(m, g, r);
    in.pp = 4, in.first_stage_layers = in.last_stage_layers = 1, in.gbs = 4;
    return in;
}

/* Tensor parallelism with sequence parallelism in MoE layers, nothing overlapping it (overlap_tp 0): each
 * layer has one pair of linears for the attention and one for the shared expert (the routed experts are
 * expert-parallel, not TP), and every pair gathers its input and reduce-scatters its output in the forward;
 * the backward gathers the input again (for the weight gradient), gathers the output gradient and
 * reduce-scatters the input gradient. Per micro-batch and layer, then:
 *   2 x (AG + RS) forward + 2 x (2 AG + RS) backward,
 * each collective's one call as the plan sized it (its step time / its calls). 6 MoE layers, pp 4 with 1 layer
 * on the first and last stage: the reported stage is a middle one (2 layers, no vocabulary collectives), 4
 * micro-batches (gbs 4, dp 1): TP time = 4 x 2 x that. */
static void test_tp_pairs_per_moe_layer(void)
{
    ModelSpec m;
    GpuSpec g;
    Recipe r;
    PlanInput in = six_layers_pp4(&m, &g, &r, 512, 0);
    in.tp = 2, in.sp = 1, in.overlap_tp = 0;
    Plan p;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.stage_layers, 2);
    const Collective *c = p.coll;
    /* calls: 4 micro-batches x 2 layers x 2 pairs = 16 of each, the backward's gathers twice that; each moves the
     * whole sequence's activations, 512 tokens x 256 x 2 B = 262,144 B */
    CHECK_EQ_U64(c[CO_TP_AG_FWD].calls, 16);
    CHECK_EQ_U64(c[CO_TP_RS_FWD].calls, 16);
    CHECK_EQ_U64(c[CO_TP_AG_BWD].calls, 32);
    CHECK_EQ_U64(c[CO_TP_RS_BWD].calls, 16);
    CHECK_EQ_U64(c[CO_TP_AG_FWD].payload_bytes, 262144);
    double ag_f = c[CO_TP_AG_FWD].time_s / (double)c[CO_TP_AG_FWD].calls;
    double rs_f = c[CO_TP_RS_FWD].time_s / (double)c[CO_TP_RS_FWD].calls;
    double ag_b = c[CO_TP_AG_BWD].time_s / (double)c[CO_TP_AG_BWD].calls;
    double rs_b = c[CO_TP_RS_BWD].time_s / (double)c[CO_TP_RS_BWD].calls;
    CHECK(ag_f > 0 && rs_f > 0 && ag_b > 0 && rs_b > 0);
    double want = 4 * 2 * (2 * (ag_f + rs_f) + 2 * (2 * ag_b + rs_b));
    CHECK_REL(p.time.tp_comm_s, want, 1e-12);
}

/* A plan and its layer times per kind, the geometry at the model's seq_len and six_layers_pp4's gbs 4. */
static int build_with_layer_times(const PlanInput *in, Plan *p, LayerT L[XK_COUNT])
{
    if (!build(in, p)) return 0;
    Geo geo;
    plan_geo(in, in->model->seq_len, 4, &geo);
    GemmGpu gg;
    gemm_gpu_init(in, &gg);
    moe_layer_times(in, &geo, &gg, p, L);
    return 1;
}

/* Which middle stage is the slowest when the first layers are dense: 6 layers, the first 2 dense with FFN 4096,
 * pp 4 with 1 layer on the first and the last stage, so the stages hold [L0] [L1 L2] [L3 L4] [L5]. Stage 1 (a
 * dense layer and a MoE layer) outweighs stage 2 (two MoE layers), stage 0 (one dense layer and the embedding)
 * and stage 3 (one MoE layer and the LM head), so the step's GEMM seconds (dense and expert) are 4 micro-batches
 * x (one dense layer's + one MoE layer's forward and backward GEMMs), each kind's taken from its layer time. */
static void test_slowest_middle_stage_has_a_dense_layer(void)
{
    ModelSpec m;
    GpuSpec g;
    Recipe r;
    PlanInput in = six_layers_pp4(&m, &g, &r, 4096, 2);
    Plan p;
    LayerT L[XK_COUNT];
    if (!build_with_layer_times(&in, &p, L)) return;
    double dense = L[XK_DENSE].gemm_f + L[XK_DENSE].gemm_b, moe = L[XK_MOE].gemm_f + L[XK_MOE].gemm_b;
    CHECKF(dense > 2 * moe, "premise: a dense layer's GEMMs %g s, a MoE layer's %g s", dense, moe);
    CHECK_REL(p.time.gemm_s + p.time.expert_gemm_s, 4 * (dense + moe), 1e-12);
    CHECK_REL(p.time.expert_gemm_s, 4 * (L[XK_MOE].xg_f + L[XK_MOE].xg_b), 1e-12);
}

/* Full recompute runs each layer's forward again in its backward, the expert GEMMs with it: the step's expert
 * GEMM seconds become 4 micro-batches x 2 MoE layers (a middle stage; all 6 layers are MoE here) x
 * (forward + backward + the forward again) = 8 x (2 xg_f + xg_b), each from the layer times without recompute
 * (which recompute does not change); all GEMMs together grow by 8 x the MoE layers' whole forward gemm_f. */
static void test_full_recompute_runs_expert_gemms_again(void)
{
    ModelSpec m;
    GpuSpec g;
    Recipe r;
    PlanInput in = six_layers_pp4(&m, &g, &r, 512, 0);
    Plan none, full;
    LayerT L[XK_COUNT];
    if (!build_with_layer_times(&in, &none, L)) return;
    const LayerT *x = &L[XK_MOE];
    CHECKF(x->xg_f > 0 && x->xg_b > x->xg_f, "premise: expert GEMMs %g s forward, %g s backward", x->xg_f, x->xg_b);
    CHECK_REL(none.time.expert_gemm_s, 8 * (x->xg_f + x->xg_b), 1e-12);
    in.recompute = RECOMPUTE_FULL, in.recompute_mods = 0;
    if (!build(&in, &full)) return;
    CHECK_REL(full.time.expert_gemm_s, 8 * (2 * x->xg_f + x->xg_b), 1e-12);
    CHECK_REL(full.time.gemm_s + full.time.expert_gemm_s, none.time.gemm_s + none.time.expert_gemm_s + 8 * x->gemm_f,
              1e-12);
}

/* The all-to-all kernels take ep_comm_sms of the SMs only while there is an all-to-all to overlap: ep > 1.
 * 132 SMs, 20 for the all-to-alls: with ep 2 the flash attention (its time does not depend on the SM count)
 * runs on 112 SMs, 132 / 112 = 33 / 28 times as long (the GEMMs' change depends on their tiles and split-K,
 * so it is not asserted here); with ep 1 (dp 2) no all-to-all runs, and asking for 20 SMs changes nothing:
 * every time is the same as with 0. */
static void test_all_to_all_sms_only_with_ep(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = fx_gpu();
    g.sms = 132;
    Recipe r = fx_te_recipe("te", 0);
    Plan p[2][2]; /* [ep 1, ep 2][ep_comm_sms 0, 20] */
    for (int e = 0; e < 2; e++)
        for (int s = 0; s < 2; s++) {
            PlanInput in = fx_input(&m, &g, &r);
            in.dp = 2, in.gbs = 2, in.ep = e ? 2 : 1, in.ep_comm_sms = s ? 20 : 0, in.launch_s = 0;
            if (!build(&in, &p[e][s])) return;
        }
    const TimeBreakdown *a = &p[0][0].time, *b = &p[0][1].time;
    CHECKF(a->attn_s == b->attn_s && a->gemm_s == b->gemm_s && a->expert_gemm_s == b->expert_gemm_s &&
               a->step_s == b->step_s,
           "ep 1: 20 SMs for all-to-alls changed the step (%.9g s -> %.9g s, attention %.9g -> %.9g)", a->step_s,
           b->step_s, a->attn_s, b->attn_s);
    a = &p[1][0].time, b = &p[1][1].time;
    CHECK_REL(b->attn_s, a->attn_s * 33.0 / 28.0, 1e-12);
}

int main(void)
{
    RUN(test_last_stage_output);
    RUN(test_zero3_gathers_the_larger_kind);
    RUN(test_zero3_experts_whole_in_group_of_one);
    RUN(test_route_launches);
    RUN(test_route_bytes);
    RUN(test_communicators);
    RUN(test_optimizer_bytes_with_experts);
    RUN(test_transient_loss_or_layer);
    RUN(test_tp_pairs_per_moe_layer);
    RUN(test_slowest_middle_stage_has_a_dense_layer);
    RUN(test_full_recompute_runs_expert_gemms_again);
    RUN(test_all_to_all_sms_only_with_ep);
    return test_summary();
}
