/* tests/unit/test_oracle_kernels.c — the memory-bound kernels of one layer
 * (planner/plan_kernels.c), counted by hand at the launch floor.
 *
 * An independent oracle: the GPU's HBM is made so fast (1e30 B/s) that every
 * op costs its launches alone, kernels x 1 us, so each expected time below is
 * a kernel count read off the lists in plan_kernels.c's header comment and
 * added up here, never a value the planner produced.
 *
 * The model: 2 layers, hidden 8, 2 heads of 4, FFN 32, seq 4, RMSNorm, SwiGLU,
 * RoPE, no dropout. FP8 GEMMs (E4M3 forward, E5M2 backward), saved GEMM inputs
 * in BF16 unless a case says otherwise. */
#include <math.h>

#include "planner/plan_internal.h"
#include "support/fixtures.h"
#include "test.h"

static const double US = 1e-6;

static ModelSpec model(void)
{
    ModelSpec m = fx_tiny_model();
    m.norm = NORM_RMSNORM, m.mlp = MLP_SWIGLU, m.pos = POS_ROPE;
    return m;
}

/* One layer's LayerElem for micro-batches of 1 and gbs = m micro-batches, every op at its launch floor. */
static LayerElem elem_on(const ModelSpec *m, const Recipe *r, KernelFusion fusion, uint32_t micro_batches, int host)
{
    static GpuSpec gpu;
    gpu = fx_gpu();
    gpu.host = host;
    gpu.hbm_bw = 1e30;
    PlanInput in = fx_input(m, &gpu, r);
    in.launch_s = US, in.fusion = fusion, in.dropout = 0;
    Geo g;
    plan_geo(&in, m->seq_len, micro_batches, &g); /* global batch: micro_batches x mbs 1 x dp 1 */
    LayerElem le;
    plan_layer_elem(&in, &g, &le);
    return le;
}

static LayerElem elem(const ModelSpec *m, const Recipe *r, KernelFusion fusion, uint32_t micro_batches)
{
    return elem_on(m, r, fusion, micro_batches, 0);
}

static void check(const LayerElem *le, double fwd, double fwd_attn, double bwd, double bwd_attn, double acc,
                  const char *what)
{
    CHECKF(fabs(le->fwd - fwd * US) < 1e-12, "%s: forward %g us, expected %g", what, le->fwd / US, fwd);
    CHECKF(fabs(le->fwd_attn - fwd_attn * US) < 1e-12, "%s: forward attention part %g us, expected %g", what,
           le->fwd_attn / US, fwd_attn);
    CHECKF(fabs(le->bwd - bwd * US) < 1e-12, "%s: backward %g us, expected %g", what, le->bwd / US, bwd);
    CHECKF(fabs(le->bwd_attn - bwd_attn * US) < 1e-12, "%s: backward attention part %g us, expected %g", what,
           le->bwd_attn / US, bwd_attn);
    CHECKF(fabs(le->acc_b - acc * US) < 1e-12, "%s: gradient accumulation %g us, expected %g", what, le->acc_b / US,
           acc);
}

/* te, delayed scaling (every cast one kernel):
 *   forward  norm1(+cast) 1, RoPE 2, proj-input cast 1, bias-dropout-add 1        -> attention part 5
 *            norm2(+cast) 1, SwiGLU 1, FC2-input cast 1, bias-dropout-add 1       -> 4; forward 9
 *   backward FC2 dY cast 1, SwiGLU backward 1, FC1 dY cast 1, norm2 backward 2 + residual 1 -> FFN part 6
 *            proj dY cast 1, RoPE 2, QKV dY cast 1, norm1 backward 2 + residual 1 -> attention part 7; 13
 * te, current scaling: each cast reads its input once more for the amax in one more kernel, the norms' fused
 * casts too: forward 2 + 2 + 2 + 1 = 7 and 2 + 1 + 2 + 1 = 6 (13); backward 2 + 1 + 2 + 3 = 8 and
 * 2 + 2 + 2 + 3 = 9 (17). Gradient accumulation is fused (--gradient-accumulation-fusion): 0, even with 2
 * micro-batches; without the fusion main_grad.add_ is 4 kernels per micro-batch.
 * With query/key norms (qk_norm, Qwen3): one norm kernel each for q and k before RoPE, 2 more in the forward's
 * attention part (delayed 9 + 2 = 11, attention 5 + 2 = 7; current 13 + 2 = 15, 7 + 2 = 9), their backward 2 each
 * (dx with the weight's partial sums, the partials' reduction), 4 more (delayed 13 + 4 = 17, attention 7 + 4 = 11;
 * current 17 + 4 = 21, 9 + 4 = 13). */
static void test_te_launches(void)
{
    ModelSpec m = model();
    Recipe r = fx_te_recipe("te", 0);
    r.saved_input = DT_BF16;
    LayerElem le = elem(&m, &r, FUSE_TE, 1);
    check(&le, 9, 5, 13, 7, 0, "te delayed");
    le = elem(&m, &r, FUSE_TE, 2);
    check(&le, 9, 5, 13, 7, 0, "te delayed, 2 micro-batches");
    r.scaling = SCALING_CURRENT;
    le = elem(&m, &r, FUSE_TE, 1);
    check(&le, 13, 7, 17, 9, 0, "te current");
    m.qk_norm = 1;
    le = elem(&m, &r, FUSE_TE, 1);
    check(&le, 15, 9, 21, 13, 0, "te current, q/k norms");
    r.scaling = SCALING_DELAYED;
    le = elem(&m, &r, FUSE_TE, 1);
    check(&le, 11, 7, 17, 11, 0, "te delayed, q/k norms");
}

/* eager (one kernel per PyTorch op), delayed scaling:
 *   forward  RMSNorm 6, x cast 1, HF RoPE 10 (5 for q, 5 for k), proj cast 1, residual 1 -> attention part 19
 *            RMSNorm 6, x cast 1, silu + mul 2, FC2 cast 1, residual 1                  -> 11; forward 30
 *   backward twice the forward's kernels but its 4 input casts (a cast has no backward kernel), 2 x 26 = 52;
 *            dY casts for FC2 and FC1 1 + 1 -> 54, of which the FFN's are 2 x (11 - 2) + 2 = 20; dY casts for
 *            proj and QKV 1 + 1, and (inputs saved in BF16) the FP8 recasts of the inputs for the weight
 *            gradients, 4 kernels -> backward 60, attention part 60 - 20 = 40
 *   2 micro-batches: the gradient accumulation, one kernel per linear weight: 4 (not in the backward above).
 * compile (inductor), inputs saved in BF16:
 *   forward  norm1 1, x cast 1, RoPE 1, proj cast 1 -> 4; residual+norm2 1, x cast 1, SwiGLU 1, FC2 cast 1,
 *            residual 1 -> forward 9
 *   backward dY casts 1 + SwiGLU backward 1 + dY cast 1 + norm/residual backward 2 -> FFN part 5; dY cast 1,
 *            RoPE 1, dY cast 1, norm/residual backward 2, input recasts 4 -> attention part 9; backward 14.
 * With query/key norms: eager runs an RMSNorm (6 kernels) on q and one on k before RoPE, 12 more: forward 42,
 * attention part 31; backward 2 x (42 - 4 casts) + 2 + 2 + 4 = 84, attention part 84 - 20 = 64 (the FFN's
 * unchanged);
 * compile fuses them into its RoPE kernel: unchanged. */
static void test_eager_and_compile_launches(void)
{
    ModelSpec m = model();
    Recipe r = fx_te_recipe("te", 0);
    r.saved_input = DT_BF16;
    LayerElem le = elem(&m, &r, FUSE_EAGER, 1);
    check(&le, 30, 19, 60, 40, 0, "eager");
    le = elem(&m, &r, FUSE_COMPILE, 1);
    check(&le, 9, 4, 14, 9, 0, "compile");
    le = elem(&m, &r, FUSE_COMPILE, 2);
    check(&le, 9, 4, 18, 9, 4, "compile, 2 micro-batches");
    m.qk_norm = 1;
    le = elem(&m, &r, FUSE_EAGER, 1);
    check(&le, 42, 31, 84, 64, 0, "eager, q/k norms");
    le = elem(&m, &r, FUSE_COMPILE, 1);
    check(&le, 9, 4, 14, 9, 0, "compile, q/k norms");
}

/* fp8plan (this project's executor, exec/model/model_pass.c: one backend kernel per step), delayed scaling,
 * inputs saved in BF16, FP32 main gradients, no linear biases (the fixture has them: set apart below):
 *   forward  norm_fwd 1, x cast 1, rope 1, proj cast 1, add 1 -> attention part 5; norm_fwd 1, x cast 1,
 *            SwiGLU 1, FC2 cast 1, add 1 -> 5; forward 10
 *   backward FC2 dY cast 1, SwiGLU backward 1, FC1 dY cast 1, norm_bwd 3 on a GPU (dx, column partials, column
 *            sums; its din += is the residual) -> FFN part 6; proj dY cast 1, inverse rope 1, QKV dY cast 1,
 *            norm_bwd 3, transposed recasts of the 4 saved inputs 4 -> attention part 10; backward 16
 *   2 micro-batches: the FP32 main gradients accumulate in the wgrad GEMMs (beta 1): 0 apart, backward 16.
 *   On a host profile norm_bwd is 2 passes (rows, columns): backward 16 - 2 = 14, attention part 10 - 1 = 9.
 *   Linear biases: bias_grad, the column sums of each linear's dY (4 linears), 2 kernels each on a GPU (column
 *   partials, final sum): backward 16 + 8 = 24, attention part 10 + 8 = 18 (counted with the attention's,
 *   after the QKV dY); on a host 1 pass each: 14 + 4 = 18, attention part 9 + 4 = 13.
 *   Main gradients in BF16, 2 micro-batches: staged apart as the other stacks' accumulation, one kernel per
 *   linear weight, 4.
 * Current scaling: every cast is memset0 + amax + scaling_from_amax + cast_transpose, 4 kernels (3 more):
 *   forward 1 + 4 + 1 + 4 + 1 = 11 and 1 + 4 + 1 + 4 + 1 = 11 (22); backward 4 + 1 + 4 + 3 = 12 and
 *   4 + 1 + 4 + 3 + 4 = 16 (28; the recasts use the forward's scale: 1 kernel each). */
static void test_fp8plan_launches(void)
{
    ModelSpec m = model();
    m.linear_bias = 0; /* the fixture's biases: the case below */
    Recipe r = fx_te_recipe("te", 0);
    r.saved_input = DT_BF16;
    LayerElem le = elem(&m, &r, FUSE_FP8PLAN, 1);
    check(&le, 10, 5, 16, 10, 0, "fp8plan");
    le = elem(&m, &r, FUSE_FP8PLAN, 2);
    check(&le, 10, 5, 16, 10, 0, "fp8plan, 2 micro-batches");
    le = elem_on(&m, &r, FUSE_FP8PLAN, 1, 1);
    check(&le, 10, 5, 14, 9, 0, "fp8plan on a host profile");
    r.gemm.dt[STATE_GRAD] = DT_BF16;
    le = elem(&m, &r, FUSE_FP8PLAN, 2);
    check(&le, 10, 5, 20, 10, 4, "fp8plan, BF16 main gradients, 2 micro-batches");
    r.gemm.dt[STATE_GRAD] = DT_FP32;
    m.linear_bias = 1;
    le = elem(&m, &r, FUSE_FP8PLAN, 1);
    check(&le, 10, 5, 24, 18, 0, "fp8plan, linear biases");
    le = elem_on(&m, &r, FUSE_FP8PLAN, 1, 1);
    check(&le, 10, 5, 18, 13, 0, "fp8plan, linear biases, host");
    m.linear_bias = 0;
    r.scaling = SCALING_CURRENT;
    le = elem(&m, &r, FUSE_FP8PLAN, 1);
    check(&le, 22, 11, 28, 16, 0, "fp8plan, current scaling");
}

/* The same lists by bytes: launches free (launch_s 0), HBM at 1e12 B/s with efficiency 1, so every op takes
 * bytes x 1e-12 s. One micro-batch of 4 tokens, no TP: H = Hf = 4 x 8 = 32, Q = K = 4 x 8 = 32 (2 heads of 4,
 * 2 KV heads), F = 4 x 32 = 128, kF = 256 (SwiGLU). A cast of x elements moves (2 + copies) x x bytes.
 * te, delayed scaling:
 *   forward  norm1 4H 128, RoPE 4(Q + K) 256, proj-input cast (2 + 2)Q 128, bias-dropout-add 6H 192 -> 704;
 *            norm2 4H 128, SwiGLU 6F 768, FC2-input cast 4F 512, bias-dropout-add 6H 192 -> 1600; forward 2304
 *   backward FC2 dY cast 4Hf 128, SwiGLU backward 10F 1280, FC1 dY cast 4kF 1024, norm2 backward 6H 192 +
 *            residual 6H 192 -> 2816; proj dY cast 128, RoPE 256, QKV dY cast 4(Q + 2K) 384, norm1 192 +
 *            residual 192 -> 1152; backward 3968
 * eager, inputs saved in BF16 (so the forward casts write the row-wise copy only: 3 B per element):
 *   forward  RMSNorm 36H 1152, x cast 3H 96, HF RoPE 20(Q + K) 1280, proj cast 3Q 96, residual 6H 192 -> 2816;
 *            RMSNorm 1152, x cast 96, silu + mul 10F 1280, FC2 cast 3F 384, residual 192 -> 3104; forward 5920
 *   backward twice the forward but its input casts (96 + 96 + 96 + 384 = 672; the attention part's 192):
 *            2 x (5920 - 672) = 10496, dY casts 4Hf 128 + 4kF 1024 -> 11648, of which the FFN's
 *            11648 - 2 x (2816 - 192) = 6400; dY casts 4Hf 128 + 4(Q + 2K) 384, input recasts 3(2Hf + Q + F) 672
 *            -> backward 12832, attention part 12832 - 6400 = 6432.
 * compile, inputs saved in BF16 (row-wise casts 3 B per element):
 *   forward  norm1 4H 128, x cast 3H 96, RoPE 4(Q + K) 256, proj cast 3Q 96 -> 576; residual + norm2 8H 256,
 *            x cast 96, SwiGLU 6F 768, FC2 cast 3F 384, residual 6H 192 -> 1696; forward 2272
 *   backward dY casts 4Hf 128, SwiGLU backward 10F 1280, 4kF 1024, norm/residual backward 10H 320 -> 2752;
 *            dY casts 4Hf 128, RoPE 256, 4(Q + 2K) 384, norm/residual 320, input recasts 3(2Hf + Q + F) 672
 *            -> 1760; backward 4512
 * fp8plan, no linear biases, inputs saved in BF16 (its forward casts write the row-wise copy only: 3 B per element):
 *   forward  norm_fwd 4H 128, x cast 3H 96, rope in place 4(Q + K) 256, proj cast 3Q 96, add 6H 192 -> 768;
 *            norm_fwd 128, x cast 96, SwiGLU 6F 768, FC2 cast 3F 384, add 192 -> 1568; forward 2336
 *   backward FC2 dY cast 4Hf 128, SwiGLU backward 10F 1280, FC1 dY cast 4kF 1024, norm_bwd 12H 384 -> 2816;
 *            proj dY cast 128, inverse rope 256, QKV dY cast 4(Q + 2K) 384, norm_bwd 384, transposed recasts
 *            3(2Hf + Q + F) 672 -> 1824; backward 4640
 * Inputs saved in FP8 (E4M3): each forward cast of eager and compile writes the row-wise copy and the saved FP8
 * input, 4 B per element, and the backward recasts nothing (3(2Hf + Q + F) = 672 B fewer):
 *   compile  forward norm1 128, x cast 4H 128, RoPE 256, proj cast 4Q 128 -> 640; residual + norm2 256, x cast
 *            128, SwiGLU 768, FC2 cast 4F 512, residual 192 -> 1856; forward 2496; backward 4512 - 672 = 3840,
 *            attention part 1760 - 672 = 1088
 *   eager    forward RMSNorm 1152, x cast 128, RoPE 1280, proj cast 128, residual 192 -> 2880; RMSNorm 1152, x cast
 *            128, silu + mul 1280, FC2 cast 512, residual 192 -> 3264; forward 6144, of it casts 128 + 128 + 128 +
 *            512 = 896 (the attention part's 256); backward 2 x (6144 - 896) + 128 + 1024 = 11648 (the FFN's
 *            11648 - 2 x (2880 - 256) = 6400) + 128 + 384 = 12160, attention part 12160 - 6400 = 5760
 *   fp8plan  forward norm_fwd 128, x cast 4H 128, rope 256, proj cast 4Q 128, add 192 -> 832; norm_fwd 128, x cast
 *            128, SwiGLU 768, FC2 cast 4F 512, add 192 -> 1728; forward 2560; backward 4640 - 672 = 3968,
 *            attention part 1824 - 672 = 1152 */
/* One layer's forward, forward attention part, backward and backward attention part, in bytes at 1e12 B/s. */
static void check_bytes(PlanInput *in, KernelFusion fusion, const double want[4], const char *what)
{
    in->fusion = fusion;
    Geo g;
    plan_geo(in, in->model->seq_len, 1, &g);
    LayerElem le;
    plan_layer_elem(in, &g, &le);
    const double got[4] = {le.fwd, le.fwd_attn, le.bwd, le.bwd_attn};
    for (int k = 0; k < 4; k++)
        CHECKF(fabs(got[k] - want[k] * 1e-12) < 1e-20, "%s: term %d is %g bytes, expected %g", what, k, got[k] * 1e12,
               want[k]);
}

static void test_bytes(void)
{
    ModelSpec m = model();
    Recipe r = fx_te_recipe("te", 0);
    r.saved_input = DT_BF16;
    GpuSpec gpu = fx_gpu();
    gpu.hbm_bw = 1e12;
    PlanInput in = fx_input(&m, &gpu, &r);
    in.launch_s = 0, in.eff_hbm = 1, in.dropout = 0;
    check_bytes(&in, FUSE_TE, (const double[4]){2304, 704, 3968, 1152}, "te");
    check_bytes(&in, FUSE_EAGER, (const double[4]){5920, 2816, 12832, 6432}, "eager");
    check_bytes(&in, FUSE_COMPILE, (const double[4]){2272, 576, 4512, 1760}, "compile");
    m.linear_bias = 0;
    check_bytes(&in, FUSE_FP8PLAN, (const double[4]){2336, 768, 4640, 1824}, "fp8plan");
    m.linear_bias = 1; /* + bias gradients 2(Q + 2K + 2Hf + kF) = 2 x (32 + 64 + 64 + 256) = 832: 5472, 2656 */
    check_bytes(&in, FUSE_FP8PLAN, (const double[4]){2336, 768, 5472, 2656}, "fp8plan, linear biases");
    m.linear_bias = 0;
    r.saved_input = DT_E4M3;
    check_bytes(&in, FUSE_EAGER, (const double[4]){6144, 2880, 12160, 5760}, "eager, FP8 saved");
    check_bytes(&in, FUSE_COMPILE, (const double[4]){2496, 640, 3840, 1088}, "compile, FP8 saved");
    check_bytes(&in, FUSE_FP8PLAN, (const double[4]){2560, 832, 3968, 1152}, "fp8plan, FP8 saved");
    /* query/key norms over Q + K = 32 + 32 = 64 elements (BF16 saved, as the first lines): te forward 4 x 64 = 256
     * (2304 + 256 = 2560, attention 704 + 256 = 960), backward 6 x 64 = 384 (3968 + 384 = 4352, attention 1152 +
     * 384 = 1536); eager two RMSNorms of 36 B an element, 36 x 64 = 2304 (5920 + 2304 = 8224, attention 2816 + 2304
     * = 5120), its backward twice that (12832 + 4608 = 17440, attention 6432 + 4608 = 11040: the norms are no casts); compile unchanged */
    r.saved_input = DT_BF16, m.qk_norm = 1;
    check_bytes(&in, FUSE_TE, (const double[4]){2560, 960, 4352, 1536}, "te, q/k norms");
    check_bytes(&in, FUSE_EAGER, (const double[4]){8224, 5120, 17440, 11040}, "eager, q/k norms");
    check_bytes(&in, FUSE_COMPILE, (const double[4]){2272, 576, 4512, 1760}, "compile, q/k norms");
}

/* te at tp 2 with sequence parallelism (TE's norm + linear gathers the row-wise FP8 copy only, plan_kernels.c
 * te_sp_transpose). Per TP rank, 4 tokens: H = 4 / 2 x 8 = 16 (the sequence shard), Hf = 4 x 8 = 32 (gathered),
 * Q = K = 4 x 8 / 2 = 16, F = 4 x 32 / 2 = 64, kF = 128.
 * On Blackwell (SM 10.0, FP8 GEMMs take every layout: nothing to transpose), the te list as it stands:
 *   forward  norm1 4H 64, RoPE 4(Q + K) 128, proj cast 4Q 64, bias-dropout-add 6H 96 -> 352; norm2 64, SwiGLU
 *            6F 384, FC2 cast 4F 256, bias-dropout-add 96 -> 800; forward 1152
 *   backward FC2 dY cast 4Hf 128, SwiGLU backward 10F 640, FC1 dY cast 4kF 512, norm2 6H 96 + residual 96 -> 1472;
 *            proj dY cast 128, RoPE 128, QKV dY cast 4(Q + 2K) 192, norm1 96 + residual 96 -> 640; backward 2112
 * On Hopper (SM 9.0, TN-only): each norm writes the row-wise FP8 copy only, 3H = 48 (16 fewer), and FC1's and
 * QKV's backward transpose the re-gathered FP8 input, 2Hf = 64 each:
 *   forward 352 - 16 = 336 of which the attention part, 1152 - 32 = 1120; backward 1472 + 64 = 1536 (the FFN's),
 *   attention part 640 + 64 = 704, backward 2240.
 * The same on Hopper without sequence parallelism (nothing gathered: H = Hf = 32) is the te list of test_bytes at
 * half the TP-split widths, not checked here; MS-AMP's linear counts its own transposes (fp8_linear_extra). */
static void test_te_sp_transpose_bytes(void)
{
    ModelSpec m = model();
    Recipe r = fx_te_recipe("te", 0);
    GpuSpec gpu = fx_gpu();
    gpu.hbm_bw = 1e12;
    PlanInput in = fx_input(&m, &gpu, &r);
    in.launch_s = 0, in.eff_hbm = 1, in.dropout = 0;
    in.tp = 2, in.sp = 1;
    gpu.sm = 100;
    check_bytes(&in, FUSE_TE, (const double[4]){1152, 352, 2112, 640}, "te, tp 2 sp, Blackwell");
    gpu.sm = 90;
    check_bytes(&in, FUSE_TE, (const double[4]){1120, 336, 2240, 704}, "te, tp 2 sp, Hopper");
    r.comm_tp_ag = DT_BF16; /* gathered in BF16: the norm writes both FP8 copies after no FP8 gather (as at sp off) */
    check_bytes(&in, FUSE_TE, (const double[4]){1152, 352, 2112, 640}, "te, tp 2 sp, BF16 gather");
}

/* MXFP8 (1x32 E8M0 scales, E4M3, current scaling as the mxfp8 recipe) by bytes, as test_bytes. An MXFP8 quantize
 * of x elements into both layouts reads 2 B and writes 2 x (1 + 1/32) B: 4.0625 x, and no amax pass.
 * te: the norms are not fused with it (norm 4H 128, then the quantize 4.0625H 130: 258); the other casts 4.0625 x;
 *   forward  norm1 258, RoPE 256, proj-input quantize 4.0625Q 130, bias-dropout-add 192 -> 836; norm2 258, SwiGLU
 *            768, FC2-input quantize 4.0625F 520, bias-dropout-add 192 -> 1738; 2574
 *   backward FC2 dY 4.0625Hf 130, SwiGLU backward 1280, FC1 dY 4.0625kF 1040, norm2 192 + residual 192 -> 2834;
 *            proj dY 130, RoPE 256, QKV dY 4.0625(Q + 2K) 390, norm1 192 + residual 192 -> 1160; 3994
 *   scale swizzles before every GEMM, each reading and writing the operands' scales (2 B per 32 elements: 1/16 B),
 *   T = 4 tokens, linear (N rows, K cols): QKV (24, 8), proj (8, 8), FC1 (64, 8), FC2 (8, 32);
 *     forward (T K + N K) / 16: QKV (32 + 192) / 16 = 14, proj (32 + 64) / 16 = 6, FC1 (32 + 512) / 16 = 34,
 *             FC2 (128 + 256) / 16 = 24 -> 78, attention's 20
 *     backward (2 T N + N K + K T) / 16: QKV (192 + 192 + 32) / 16 = 26, proj (64 + 64 + 32) / 16 = 10,
 *             FC1 (512 + 512 + 32) / 16 = 66, FC2 (64 + 256 + 128) / 16 = 28 -> 130, attention's 36
 *   -> forward 2652, attention 856; backward 4124, attention 1196
 * compile (torchao: one layout a kernel, each reading the input; inputs saved in BF16, so the forward casts write the
 * row-wise layout only, (2 + 1.03125) x; the dY casts both, (4 + 2.0625) x; no swizzle kernels): against the delayed
 * per-tensor list of test_bytes (forward casts 3 x, dY casts 4 x): forward + 0.03125 (H + Q + H + F) = + 7 -> 2279,
 * attention + 0.03125 (H + Q) = + 2 -> 578; backward + 2.0625 (Hf + kF + Hf + Q + 2K) = + 858 -> 5370, attention
 * + 2.0625 (Hf + Q + 2K) = + 264 -> 2024 */
static void test_mxfp8_bytes(void)
{
    ModelSpec m = model();
    Recipe r = fx_te_recipe("mxfp8", 0);
    r.saved_input = DT_BF16, r.gemm_bwd = DT_E4M3, r.scaling = SCALING_CURRENT;
    r.act_gran = r.weight_gran = GRAN_1X32;
    GpuSpec gpu = fx_gpu();
    gpu.hbm_bw = 1e12, gpu.sm = 100;
    PlanInput in = fx_input(&m, &gpu, &r);
    in.launch_s = 0, in.eff_hbm = 1, in.dropout = 0;
    check_bytes(&in, FUSE_TE, (const double[4]){2652, 856, 4124, 1196}, "te, MXFP8");
    check_bytes(&in, FUSE_COMPILE, (const double[4]){2279, 578, 5370, 2024}, "compile, MXFP8");
}

/* MXFP8 at the launch floor, te: the norms' quantizes are kernels of their own, no amax kernels: forward norm1 1 +
 * quantize 1, RoPE 2, proj quantize 1, bias-dropout-add 1 -> 6; norm2 1 + 1, SwiGLU 1, FC2 quantize 1, bias-dropout-
 * add 1 -> 5; 11. Backward as delayed scaling, 13 (attention 7). Scale swizzles: 2 a linear forward (8, attention's
 * 4), 4 backward (16, attention's 8): forward 19, attention 10; backward 29, attention 15. */
static void test_mxfp8_launches(void)
{
    ModelSpec m = model();
    Recipe r = fx_te_recipe("mxfp8", 0);
    r.saved_input = DT_BF16, r.gemm_bwd = DT_E4M3, r.scaling = SCALING_CURRENT;
    r.act_gran = r.weight_gran = GRAN_1X32;
    LayerElem le = elem(&m, &r, FUSE_TE, 1);
    check(&le, 19, 10, 29, 15, 0, "te, MXFP8");
}

/* What an MTP depth adds beyond its transformer layer (in->model is m, 2 layers): (mtp 1, 2 layers) - (mtp 0,
 * 2 layers) - [(mtp 0, 3 layers) - (mtp 0, 2 layers)], of the micro-batch time or (nongemm) its memory-bound
 * share. NAN when a plan fails to build (after failing the check). */
static double mtp_depth_extra(ModelSpec *m, const PlanInput *in, int nongemm)
{
    Plan p[3];
    const uint32_t layers[3] = {2, 3, 2}, depth[3] = {0, 0, 1};
    double t[3];
    for (int i = 0; i < 3; i++) {
        Err e = {0};
        m->layers = layers[i], m->mtp_layers = depth[i];
        Status st = plan_build(in, &p[i], &e);
        CHECKF(st == ST_OK, "%s", e.msg);
        if (st != ST_OK) return NAN;
        t[i] = nongemm ? p[i].time.nongemm_s : p[i].time.microbatch_s;
    }
    return (t[2] - t[0]) - (t[1] - t[0]);
}

/* One micro-batch through the one stage (pp 1: embedding, layers, head) with every GEMM and kernel at the
 * launch floor (HBM and FLOP rates 1e30). A multi-token-prediction depth adds one transformer layer (the
 * same as one more layer of the model: taken out by the difference below) and, per micro-batch:
 *   a second head and loss: forward head GEMM 1 + logits/softmax/loss 3 + final norm 1 = 5; backward head
 *     dgrad GEMM 1 + wgrad GEMM 1 + loss gradient 2 + norm backward 2 = 6
 *   the depth's own input: forward embedding gather 1, eh_proj GEMM 1, enorm + hnorm 2 = 4; backward eh_proj
 *     dgrad 1 + wgrad 1, embedding scatter-add 1, the two norms' backward 4 = 7
 *   so (mtp 1, 2 layers) - (mtp 0, 2 layers) - [(mtp 0, 3 layers) - (mtp 0, 2 layers)] = 5 + 6 + 4 + 7 = 22 us. */
static void test_mtp_depth_launches(void)
{
    ModelSpec m = model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    GpuSpec gpu = fx_gpu();
    gpu.hbm_bw = gpu.flops_bf16 = gpu.flops_fp8 = gpu.flops_fp32 = 1e30;
    PlanInput in = fx_input(&m, &gpu, &r);
    in.launch_s = US;
    double extra = mtp_depth_extra(&m, &in, 0);
    CHECKF(fabs(extra - 22 * US) < 1e-12, "an MTP depth beyond its layer: %g us, expected 22", extra / US);
}

/* The same depth by bytes: launches free, HBM 1e12 B/s at efficiency 1, FLOP rates 1e30 (the GEMMs, at their
 * roofline, are in the GEMM time, not here). One micro-batch of tok 4 tokens, hidden h 8, vocabulary V 10
 * (unpadded), BF16. Beyond its layer, an MTP depth's memory-bound kernels move per micro-batch:
 *   its loss: logits to fp32, softmax, loss tok V 8 = 320 forward, its gradient 320 backward; its final norm
 *     tok h 4 = 128 forward, 1.5 x 128 = 192 backward
 *   its own input: the embedding gather tok h 4 = 128 forward, the scatter-add 128 backward; enorm + hnorm
 *     2 x 128 = 256 forward, 3 x 128 = 384 backward
 *   320 + 320 + 128 + 192 + 128 + 128 + 256 + 384 = 1856 B -> 1.856e-9 s of memory-bound time. */
static void test_mtp_depth_bytes(void)
{
    ModelSpec m = model();
    Recipe r = fx_bf16_recipe("bf16", 0);
    GpuSpec gpu = fx_gpu();
    gpu.flops_bf16 = gpu.flops_fp8 = gpu.flops_fp32 = 1e30, gpu.hbm_bw = 1e12;
    PlanInput in = fx_input(&m, &gpu, &r);
    in.launch_s = 0, in.eff_hbm = 1, in.gbs = 1;
    double extra = mtp_depth_extra(&m, &in, 1) * 1e12;
    CHECKF(fabs(extra - 1856) < 1e-3, "an MTP depth's memory-bound bytes beyond its layer: %g, expected 1856", extra);
}

int main(void)
{
    RUN(test_te_launches);
    RUN(test_eager_and_compile_launches);
    RUN(test_fp8plan_launches);
    RUN(test_bytes);
    RUN(test_te_sp_transpose_bytes);
    RUN(test_mxfp8_bytes);
    RUN(test_mxfp8_launches);
    RUN(test_mtp_depth_launches);
    RUN(test_mtp_depth_bytes);
    return test_summary();
}
