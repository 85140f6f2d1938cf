/* tests/unit/test_oracle_dualpipe.c — DualPipe's step time against the rules
 * it follows (DeepSeek-V3, arXiv 2412.19437, section 3.2.1 and Table 2).
 *
 * An independent oracle: rank r runs stage r for half the micro-batches and
 * stage pp-1-r for the other half, so the work per step is each stage's forward
 * and backward once per micro-batch, as in 1F1B: the GEMM, expert-GEMM,
 * attention and routing time of a step equal the 1F1B plan's for the same
 * layout when a middle stage is the slowest (the middle ranks pair two middle
 * stages). All-to-alls hide behind the paired chunk: with no compute at all to
 * hide behind, every all-to-all second is exposed in both schedules. The bubble
 * is (pp/2 - 1)(F&B + B - 3W) of the slowest stage, F&B = F + B, W the weight-
 * gradient GEMMs: checked with W worked out by hand at the HBM roofline.
 *
 * The model: 6 MoE layers (no dense one), hidden 256, 2 heads of 128, vocabulary
 * 1000, seq 512, RMSNorm, SwiGLU, RoPE; 8 experts of FFN 128, top 2, 1 shared
 * expert. Layout: pp 4 with 1 layer on the first and last stage (2 on each middle
 * one), dp 2, ep 2 (4 local experts), 4 micro-batches of 1 sequence (gbs 8);
 * BF16 recipe with FP32 gradients. */
#include <math.h>

#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

static ModelSpec moe6(void)
{
    ModelSpec m = ox_moe(512);
    m.layers = 6, m.dense_layers = 0;
    return m;
}

/* HBM at `hbm` B/s (efficiency 1), FLOP rates 1e30, one "SM" (no split-K), no launch floor. */
static PlanInput layout(const ModelSpec *m, GpuSpec *g, const Recipe *r, double hbm, int dualpipe)
{
    *g = fx_gpu();
    g->hbm_bw = hbm, g->flops_bf16 = g->flops_fp8 = g->flops_fp32 = 1e30, g->sms = 0;
    PlanInput in = fx_input(m, g, r);
    in.pp = 4, in.dp = 2, in.ep = 2, in.first_stage_layers = 1, in.last_stage_layers = 1, in.gbs = 8;
    in.eff_hbm = 1, in.launch_s = 0, in.dualpipe = dualpipe;
    return in;
}

static int build(const PlanInput *in, Plan *p)
{
    Err e = {0};
    Status st = plan_build(in, p, &e);
    CHECKF(st == ST_OK, "%s", e.msg);
    return st == ST_OK;
}

/* The weight-gradient GEMMs of one MoE layer at the roofline (bytes / 1e12 s): [rows x cols x m] reads the
 * saved input and the output gradient, (rows m + m cols) x 2 B, and reads and writes the fp32 main gradient,
 * rows cols x 8 B (TE's fused accumulation; the router's into its fp32 gradient alike); tokens m = 512, the
 * local experts' rows 512 x top 2 / 4 experts = 256 each:
 *   QKV 768 x 256:        (393,216 + 131,072) x 2 + 196,608 x 8 = 2,621,440
 *   proj 256 x 256:       (131,072 + 131,072) x 2 +  65,536 x 8 = 1,048,576
 *   router 8 x 256:       (4,096 + 131,072) x 2   +   2,048 x 8 =   286,720
 *   shared FC1 256 x 256:                                         1,048,576
 *   shared FC2 256 x 128: (131,072 + 65,536) x 2  +  32,768 x 8 =   655,360
 *   4 experts' FC1 256 x 256 over 256 rows: (65,536 + 65,536) x 4 x 2 + 65,536 x 4 x 8 = 3,145,728
 *   4 experts' FC2 256 x 128 over 256 rows: (65,536 + 32,768) x 4 x 2 + 32,768 x 4 x 8 = 1,835,008
 *   10,641,408 B a layer; a middle stage's 2 layers: 21,282,816 B -> W = 2.1282816e-5 s. */
#define W_MID 2.1282816e-5

static void test_work_as_1f1b_and_bubble(void)
{
    ModelSpec m = moe6();
    GpuSpec g;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = layout(&m, &g, &r, 1e12, 0);
    Plan one, dual;
    if (!build(&in, &one)) return;
    in.dualpipe = 1;
    if (!build(&in, &dual)) return;
    CHECK_REL(dual.time.gemm_s, one.time.gemm_s, 1e-12);
    CHECK_REL(dual.time.expert_gemm_s, one.time.expert_gemm_s, 1e-12);
    CHECK_REL(dual.time.attn_s, one.time.attn_s, 1e-12);
    CHECK_REL(dual.time.moe_route_s, one.time.moe_route_s, 1e-12);
    CHECK(dual.time.expert_gemm_s > 0 && dual.time.moe_route_s > 0);
    /* no PP send/recv on the critical path: DualPipe overlaps it */
    CHECK(dual.time.pp_comm_s == 0 && one.time.pp_comm_s > 0);
    /* bubble (4/2 - 1) (F + 2B - 3W): F and B of the middle stage for one micro-batch are the step's forward and
     * backward over the 4 micro-batches / 4 */
    double F = dual.time.fwd_s / 4, B = dual.time.bwd_s / 4, want = F + 2 * B - 3 * W_MID;
    CHECK(want > 0);
    CHECK_REL(dual.time.bubble_s, want, 1e-9);
}

/* HBM at 1e30 B/s too: nothing takes time but the collectives. The all-to-alls have no compute to hide behind in
 * either schedule, so DualPipe exposes all of them, as 1F1B does: the same exposed EP time (the 1F1B plan's:
 * both middle stages' 2 layers x 4 micro-batches x the forward and backward dispatch and combine). */
static void test_all_to_all_exposed(void)
{
    ModelSpec m = moe6();
    GpuSpec g;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = layout(&m, &g, &r, 1e30, 0);
    Plan one, dual;
    if (!build(&in, &one)) return;
    in.dualpipe = 1;
    if (!build(&in, &dual)) return;
    CHECK(one.time.ep_comm_s > 0);
    CHECK_REL(dual.time.ep_comm_s, one.time.ep_comm_s, 1e-9);
}

/* Tensor and context parallelism: a middle rank runs its two middle stages for m/2 micro-batches each, so it
 * sends each stage's TP and CP collectives once per micro-batch, as 1F1B's middle stage does over m: the
 * exposed TP and CP seconds of a step equal the 1F1B plan's (tp 2 with sequence parallelism, cp 2, at the
 * roofline GPU, HBM 1e12 B/s: the 2-layer middle stages are the slowest, 2 x middle > first + last). */
static void test_tp_cp_as_1f1b(void)
{
    ModelSpec m = moe6();
    GpuSpec g;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = layout(&m, &g, &r, 1e12, 0);
    in.tp = 2, in.sp = 1, in.cp = 2;
    Plan one, dual;
    if (!build(&in, &one)) return;
    in.dualpipe = 1;
    if (!build(&in, &dual)) return;
    CHECK(one.time.tp_comm_s > 0 && one.time.cp_comm_s > 0);
    CHECK_REL(dual.time.tp_comm_s, one.time.tp_comm_s, 1e-12);
    CHECK_REL(dual.time.cp_comm_s, one.time.cp_comm_s, 1e-12);
    CHECK_REL(dual.time.gemm_s, one.time.gemm_s, 1e-12);
}

/* pp 2: the two ranks each run stage 0 for half the micro-batches and stage 1 for the other half (rank 0 pairs
 * the first and the last stage), so each does half of the whole model's work per step: the GEMM, expert-GEMM,
 * attention and routing time of a step are half those of the same model on one stage (pp 1, the same dp 2,
 * ep 2 and 4 micro-batches), the embedding and the LM head included. No bubble: (2/2 - 1) = 0. */
static void test_two_stages_half_the_work(void)
{
    ModelSpec m = moe6();
    GpuSpec g;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = layout(&m, &g, &r, 1e12, 0);
    in.pp = 1, in.first_stage_layers = in.last_stage_layers = 0;
    Plan one, dual;
    if (!build(&in, &one)) return;
    in.pp = 2, in.dualpipe = 1;
    if (!build(&in, &dual)) return;
    CHECK_REL(dual.time.gemm_s, one.time.gemm_s / 2, 1e-12);
    CHECK_REL(dual.time.expert_gemm_s, one.time.expert_gemm_s / 2, 1e-12);
    CHECK_REL(dual.time.attn_s, one.time.attn_s / 2, 1e-12);
    CHECK_REL(dual.time.moe_route_s, one.time.moe_route_s / 2, 1e-12);
    CHECK(dual.time.bubble_s == 0);
}

/* The bubble of a pipeline whose last stage is the slowest: the tiny GPT (support/oracle_fixtures.h: 4 layers,
 * hidden 8, vocabulary 16 unpadded, seq 4) with one MTP depth, pp 4 (a layer a stage), 4 micro-batches, no expert
 * parallelism (nothing in a layer depends on the schedule), at the roofline GPU above (HBM 1e12 B/s). The last stage
 * holds its layer, the MTP layer, the LM head twice and eh_proj, so it is the slowest and the bubble is
 * (4/2 - 1)(F + 2B - 3W) of it, with F and B its forward and backward per micro-batch (the 1F1B plan of the same
 * layout reports that stage: its forward and backward over 4 micro-batches / 4) and W its weight-gradient GEMMs,
 * by hand (test_oracle_gemm_bytes.c's shapes, TE's fused accumulation: W = 8 B a weight element):
 *   2 layers x (QKV 1,792 + proj 640 + FC1 1,216 + FC2 1,216) = 9,728; the head twice 2 x 1,216 = 2,432;
 *   eh_proj [8 x 16 x 4]: 1,216: W = 13,376 B -> 1.3376e-8 s. */
static void test_bubble_with_mtp_last(void)
{
    ModelSpec m = ox_tiny(16, 4);
    m.mtp_layers = 1;
    GpuSpec g;
    Recipe r = ox_bf16(0);
    PlanInput in = layout(&m, &g, &r, 1e12, 0);
    in.pp = 4, in.dp = 1, in.ep = 1, in.first_stage_layers = in.last_stage_layers = 0, in.gbs = 4;
    in.vocab_pad = 1;
    Plan one, dual;
    if (!build(&in, &one)) return;
    in.dualpipe = 1;
    if (!build(&in, &dual)) return;
    CHECK_EQ_U64(one.stage_layers, 1);
    double F = one.time.fwd_s / 4, B = one.time.bwd_s / 4, want = F + 2 * B - 3 * 13376e-12;
    CHECK(want > 0);
    CHECK_REL(dual.time.bubble_s, want, 1e-9);
}

/* Activations in flight (DeepSeek-V3 Table 2: DualPipe keeps PP + 1 micro-batches' activations where the
 * micro-batches outnumber the stages): a rank runs stage s for m/2 of the m micro-batches, and as in 1F1B it
 * holds at most pp - s of them at once, so stage s keeps min(pp - s, m/2) micro-batches x its layers. Under full
 * recompute a layer keeps only its input, tok x h x 2 B = 512 x 256 x 2 = 262,144 B (tp 1, no SP). pp 4, m = 8
 * sequences / dp 2 = 4, m/2 = 2:
 *   rank 0 (stages 0 and 3, 1 layer each): 1 x min(4, 2) + 1 x min(1, 2) = 3 layers -> 786,432 B
 *   rank 1 (stages 1 and 2, 2 layers each): 2 x min(3, 2) + 2 x min(2, 2) = 8 layers -> 2,097,152 B */
static void test_activations_in_flight(void)
{
    ModelSpec m = moe6();
    GpuSpec g;
    Recipe r = fx_bf16_recipe("bf16", 0);
    PlanInput in = layout(&m, &g, &r, 1e12, 1);
    in.recompute = RECOMPUTE_FULL;
    Plan p;
    in.stage_view = 1;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, 3 * 262144);
    in.stage_view = 2;
    if (!build(&in, &p)) return;
    CHECK_EQ_U64(p.mem[MT_ACT_LAYER_HP].bytes, 8 * 262144);
}

int main(void)
{
    RUN(test_work_as_1f1b_and_bubble);
    RUN(test_all_to_all_exposed);
    RUN(test_tp_cp_as_1f1b);
    RUN(test_two_stages_half_the_work);
    RUN(test_bubble_with_mtp_last);
    RUN(test_activations_in_flight);
    return test_summary();
}
