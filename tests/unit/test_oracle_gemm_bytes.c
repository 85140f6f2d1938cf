/* tests/unit/test_oracle_gemm_bytes.c — the GEMM time of whole steps at the
 * HBM roofline, worked out by hand: what each linear layer's forward, data-
 * gradient and weight-gradient GEMMs read and write, the weight gradient written
 * straight into the fp32 main gradient under TE's fused accumulation, and the
 * multi-token-prediction projection's GEMMs.
 *
 * An independent oracle: the GPU's FLOP rates are 1e30 (the compute time of
 * every GEMM is nil) and its HBM moves 1e12 B/s at efficiency 1 with no launch
 * floor, so a GEMM [M x N x K] takes exactly its bytes x 1e-12 s: (M K + K N) x
 * 2 B of BF16 operands + M N x the output's bytes (planner/plan_gemm.c's
 * roofline). Every byte count below is that arithmetic on the model's shapes.
 *
 * The model: support/oracle_fixtures.h's tiny GPT (4 layers, hidden 8, 2 heads
 * of 4, FFN 16 GeLU, vocabulary 16 unpadded, seq 4), tp = pp = 1, one
 * micro-batch of one sequence: tok = 4. BF16 recipe with FP32 gradients (gb = 4
 * B). Linear weights (out x in): QKV 24 x 8, proj 8 x 8, FC1 16 x 8, FC2 8 x 16;
 * the LM head 16 x 8. */
#include <math.h>

#include "planner/plan.h"
#include "support/oracle_fixtures.h"
#include "test.h"

/* Per linear [out x in] and token count 4, bytes of
 *   fprop [4 x out x in]:  (4 in + in out) x 2 + 4 out x 2
 *   dgrad [4 x in x out]:  (4 out + out in) x 2 + 4 in x 2
 *   wgrad [out x in x 4]:  (4 out + 4 in) x 2 + out in x W, W = 2 x gb = 8 under TE's fused accumulation (read
 *                          and write the fp32 main gradient), else 2 (a BF16 gradient)
 *   QKV 24 x 8:  fprop 448 + 192 = 640, dgrad 576 + 64 = 640, wgrad 256 + 192 W  (W 8: 1,792; W 2: 640)
 *   proj 8 x 8:  fprop 192 + 64 = 256,  dgrad 256,            wgrad 128 + 64 W   (W 8:   640; W 2: 256)
 *   FC1 16 x 8:  fprop 320 + 128 = 448, dgrad 384 + 64 = 448, wgrad 192 + 128 W  (W 8: 1,216; W 2: 448)
 *   FC2 8 x 16:  fprop 384 + 64 = 448,  dgrad 320 + 128 = 448, wgrad 192 + 128 W (W 8: 1,216; W 2: 448)
 *   a layer: W 8 -> 3,072 + 1,152 + 2,112 + 2,112 = 8,448; W 2 -> 8,448 - 512 x 6 = 5,376
 *   LM head 16 x 8 (its weight gradient always into the fp32 gradient, W 8): fprop 448, dgrad 448, wgrad
 *   1,216: 2,112 */
#define LAYER_FUSED   8448.0
#define LAYER_UNFUSED 5376.0
#define HEAD          2112.0

static PlanInput roofline_input(const ModelSpec *m, GpuSpec *g, const Recipe *r)
{
    *g = ox_big_gpu(1ull << 40);
    g->hbm_bw = 1e12, g->flops_bf16 = g->flops_fp8 = g->flops_fp32 = 1e30;
    PlanInput in;
    plan_input_defaults(&in); /* TE fusion with gradient-accumulation fusion */
    in.model = m, in.gpu = g, in.recipe = r;
    in.gbs = 1, in.vocab_pad = 1, in.eff_hbm = 1, in.launch_s = 0;
    return in;
}

static double gemm_bytes(const PlanInput *in)
{
    Plan p;
    Err e = {0};
    if (plan_build(in, &p, &e)) {
        CHECKF(0, "%s", e.msg);
        return -1;
    }
    return p.time.gemm_s * 1e12;
}

/* 4 layers + the head: fused 4 x 8,448 + 2,112 = 35,904 B; without the fused accumulation the layers' weight
 * gradients are BF16: 4 x 5,376 + 2,112 = 23,616 B. */
static void test_wgrad_into_main_grad(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g;
    Recipe r = ox_bf16(0);
    PlanInput in = roofline_input(&m, &g, &r);
    CHECK_NEAR(gemm_bytes(&in), 4 * LAYER_FUSED + HEAD, 1e-3);
    in.grad_acc_fusion = 0;
    CHECK_NEAR(gemm_bytes(&in), 4 * LAYER_UNFUSED + HEAD, 1e-3);
}

/* One MTP depth adds one more layer, the head again and eh_proj [h x 2h] = 8 x 16 (its input the normalized
 * hidden state and embedding concatenated, 2h = 16 wide; its weight gradient into the fp32 gradient):
 *   eh_proj fprop [4 x 8 x 16]: (64 + 128) x 2 + 32 x 2 = 448; dgrad [4 x 16 x 8]: (32 + 128) x 2 + 64 x 2 = 448;
 *   wgrad [8 x 16 x 4]: (32 + 64) x 2 + 128 x 8 = 1,216: 2,112
 *   1 depth:  5 x 8,448 + 2 x 2,112 + 2,112 = 48,576 B; 2 depths: 6 x 8,448 + 3 x 2,112 + 2 x 2,112 = 61,248 B. */
static void test_mtp_projection(void)
{
    ModelSpec m = ox_tiny(16, 4);
    GpuSpec g;
    Recipe r = ox_bf16(0);
    PlanInput in = roofline_input(&m, &g, &r);
    m.mtp_layers = 1;
    CHECK_NEAR(gemm_bytes(&in), 5 * LAYER_FUSED + 2 * HEAD + HEAD, 1e-3);
    m.mtp_layers = 2;
    CHECK_NEAR(gemm_bytes(&in), 6 * LAYER_FUSED + 3 * HEAD + 2 * HEAD, 1e-3);
}

int main(void)
{
    RUN(test_wgrad_into_main_grad);
    RUN(test_mtp_projection);
    return test_summary();
}
