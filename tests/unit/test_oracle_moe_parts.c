/* tests/unit/test_oracle_moe_parts.c — the MoE layer's time terms as the fp8plan stack runs them, worked out by hand
 * on the oracle MoE model of test_oracle_moe.c (support/oracle_fixtures.h ox_moe): the parts run --gpu host times
 * apart (plan.h TimeBreakdown moe_router_s, moe_permute_s, moe_act_s; planner/plan_moe_time.c) and the weight-
 * gradient accumulation the executor does inside its wgrad GEMMs.
 * Every expected value is arithmetic in the comments, never a value the planner produced. */
#include <math.h>
#include <string.h>

#include "planner/plan_internal.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* A host row: every GEMM path at 1e10 FLOP/s, memory at 1e18 B/s (per-step terms vanish), element-wise kernels at
 * 1e9 B/s; with a launch floor of 1e-12 s each kernel is its bytes and each GEMM its FLOPs. */
static GpuSpec host_row(void)
{
    GpuSpec g = {.name = "host", .host = 1, .sms = 1, .hbm_bytes = 1ull << 40, .hbm_bw = 1e18, .flops_bf16 = 1e10};
    g.flops_fp8 = g.flops_fp32 = g.mamf_bf16 = g.mamf_fp8 = 1e10, g.sustained = 1, g.link = LINK_HOST;
    g.gpus_per_node = 4, g.elem_bw = 1e9;
    return g;
}

/* The parts of the oracle model's one MoE layer, one micro-batch of 512 tokens (T 512, hidden h 256, E 8 experts,
 * top-k 2: R = 1,024 rows, expert FFN Fe 128, SwiGLU), BF16 dispatch and combine (2 B), the fp8plan stack, ep 1:
 *   router   GEMMs fprop [512 x 8 x 256], dgrad, wgrad, BF16 under any recipe: 3 x 2 x 512 x 8 x 256 / 1e10 =
 *            6.291456e-4 s; scores and top-k (8E + 8k) T = 80 x 512 = 40,960 B; backward 12 T E = 49,152 B:
 *            90,112 B / 1e9 = 9.0112e-5 s; 7.192576e-4 s
 *   permute  forward permute 2 R h 2 = 1,048,576 B, unpermute (2R + 2T) h = 786,432 B; backward permute 1,048,576,
 *            routing-weight gradient 4 R h = 1,048,576, unpermute 786,432: 4,718,592 B, 4.718592e-3 s
 *   act      SwiGLU 6 R Fe = 786,432 B forward, 10 R Fe = 1,310,720 backward: 2,097,152 B, 2.097152e-3 s; under
 *            an FP8 recipe (TE's delayed scaling, BF16 dispatch) the experts' input casts too: FC1's 4 R h =
 *            1,048,576, FC2's 4 R Fe = 524,288, the gradients' 4 R h = 1,048,576 and 4 R 2 Fe = 1,048,576:
 *            5,767,168 B, 5.767168e-3 s
 * With the residual add's kind rated apart at 2e9 B/s (elem_add_gbps 2; calibrate's other kinds left at elem_gbps)
 * the permutes move their 4,718,592 B at it: 2.359296e-3 s; the router and activation keep theirs.
 * MXFP8 under torchao (fusion compile, 1x32 scales, BF16 dispatch): each quantize pass along one dim reads 2 B and
 * writes 1 B + 1/32 B of scale, 3.03125 B an element; FC1's input R h = 262,144 one pass forward (794,624 B), FC2's
 * R Fe = 131,072 one pass (397,312); backward the gradients two passes each, 6.0625 x (R h + R 2 Fe) = 6.0625 x
 * 524,288 = 3,178,496, and the saved inputs again along dim 1, 3.03125 x 393,216 = 1,191,936: 5,562,368 B of
 * casts beside the SwiGLU's 2,097,152: 7,659,520 B, 7.65952e-3 s (no scale rearranges on a host: no MXFP8 GEMM). */
static void test_parts(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = host_row();
    Recipe bf = ox_bf16(0), f8 = fx_te_recipe("te", 0), mx = fx_te_recipe("mxfp8", 0);
    mx.gemm_bwd = DT_E4M3, mx.scaling = SCALING_CURRENT, mx.act_gran = mx.weight_gran = GRAN_1X32;
    const Recipe *rcs[3] = {&bf, &f8, &mx};
    static const struct {
        int rc; /* 0 BF16, 1 TE delayed FP8, 2 MXFP8 under torchao (compile) */
        double add_bw, router, permute, act;
    } rows[] = {{0, 0, 7.192576e-4, 4.718592e-3, 2.097152e-3},
                {1, 0, 7.192576e-4, 4.718592e-3, 5.767168e-3},
                {0, 2e9, 7.192576e-4, 2.359296e-3, 2.097152e-3},
                {2, 0, 7.192576e-4, 4.718592e-3, 7.65952e-3}};
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        g.elem_kind_bw[ELEM_ADD] = rows[i].add_bw;
        PlanInput in = fx_input(&m, &g, rcs[rows[i].rc]);
        in.gbs = 1, in.mbs = 1, in.launch_s = 1e-12, in.fusion = rows[i].rc == 2 ? FUSE_COMPILE : FUSE_FP8PLAN;
        Plan p = ox_build(&in);
        CHECK_REL(p.time.moe_router_s, rows[i].router, 1e-9);
        CHECK_REL(p.time.moe_permute_s, rows[i].permute, 1e-9);
        CHECK_REL(p.time.moe_act_s, rows[i].act, 1e-9);
        /* the permutes and the activation are of the layer's route kernels, the router's kernels too */
        CHECKF(p.time.moe_route_s > p.time.moe_permute_s + p.time.moe_act_s + (rows[i].router - 6.291456e-4),
               "row %u: route %g s", i, p.time.moe_route_s);
    }
}

/* The weight-gradient accumulation of an MoE model's layers under the fp8plan stack (plan_moe_time.c, as
 * plan_kernels.c's fused_acc for dense models): an FP32 main gradient is the wgrad GEMM's own output (beta 1; the
 * experts' grouped wgrad too, exec/model/model_moe.c experts_wgrad), so a second micro-batch adds no kernel; a BF16
 * main gradient is staged, main_grad += grad per micro-batch, (2 + 2 x 2) B a weight. The oracle model (hidden 256,
 * 2 heads of 128, dense FFN 512, 8 experts top-2 of FFN 128, 1 shared, SwiGLU), its linear weights per layer:
 *   dense layer  QKV 768 x 256 = 196,608; proj 256 x 256 = 65,536; FC1 1,024 x 256 = 262,144; FC2 256 x 512 =
 *                131,072: 655,360
 *   MoE layer    QKV 196,608; proj 65,536; shared FC1 256 x 256 = 65,536, FC2 256 x 128 = 32,768; experts FC1
 *                8 x 256 x 256 = 524,288, FC2 8 x 256 x 128 = 262,144: 1,146,880 (the router is no FP8 linear)
 *   together 1,802,240. A host row with memory at 1e18 B/s (the per-step zeroing and commit vanish), element-wise
 *   kernels at 1e9 B/s, launch floor 1e-12 s. The non-GEMM time of 2 micro-batches less twice that of 1:
 *   FP32 main gradient  0 (before: 2 x 1,802,240 x (2 + 2 x 4) B / 1e9 = 36.0448e-3 s, a kernel never run)
 *   BF16 main gradient  2 x 1,802,240 x (2 + 2 x 2) B / 1e9 = 21.62688e-3 s */
static void test_fp8plan_grad_accumulation(void)
{
    ModelSpec m = ox_moe(512);
    GpuSpec g = host_row();
    Recipe r = ox_bf16(0);
    PlanInput in = fx_input(&m, &g, &r);
    in.mbs = 1, in.launch_s = 1e-12, in.fusion = FUSE_FP8PLAN;
    static const struct {
        MainGrad mg;
        double want;
    } rows[] = {{MAIN_GRAD_FP32, 0.0}, {MAIN_GRAD_BF16, 21.62688e-3}};
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++) {
        in.main_grad = rows[i].mg, in.gbs = 1;
        Plan one = ox_build(&in);
        in.gbs = 2;
        Plan two = ox_build(&in);
        CHECKF(fabs(two.time.nongemm_s - 2.0 * one.time.nongemm_s - rows[i].want) < 1e-9,
               "row %u: 2 micro-batches %g s, 1 %g s, want %g s more", i, two.time.nongemm_s, one.time.nongemm_s,
               rows[i].want);
    }
}

int main(void)
{
    RUN(test_parts);
    RUN(test_fp8plan_grad_accumulation);
    return test_summary();
}
