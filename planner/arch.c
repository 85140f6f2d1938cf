/* planner/arch.c — per-architecture constants of the time model, with sources.
 *
 * GEMM tiles. cuBLAS and CUTLASS run large BF16/FP8 GEMMs on Hopper and
 * Blackwell with 128x256 output tiles, one per SM at a time (warp-specialized
 * persistent kernels), K staged 64 (16-bit) or 128 (8-bit) elements per main-
 * loop step (CUTLASS examples/48_hopper_warp_specialized_gemm and the sm90
 * collective builders); Ampere/Ada kernels use 256x128 tiles with 32-element
 * (16-bit) / 64-element (8-bit) K steps (CUTLASS sm80 default configurations).
 * The per-tile fixed cost k0 is two main-loop steps: the pipeline fill before
 * the first MMA and the epilogue after the last, so a GEMM with short K (the
 * dgrad of a narrow layer, attention's QK^T over a 64-128 head dimension) runs
 * at K / (K + k0) of the saturated rate.
 *
 * Attention curves are fits (e x / (x + s_half)) to the published benchmarks:
 *  - H100 SXM5, BF16, head dim 128 (Shah et al. 2024, FlashAttention-3, arXiv
 *    2407.08608, Fig. 5 causal forward: FlashAttention-2 191..335, cuDNN
 *    315..539, FlashAttention-3 292..616 TFLOPS for seq 512..16k; Fig. 6
 *    backward: 322 / 516 / 561 TFLOPS at 16k = 0.87 of the forward for all
 *    three, and half of the plateau reached about 2.2x later than forward);
 *    head dim 64 and 256 relative to 128 from the same paper's forward figures
 *    (FA2 324/370 and 298/370, cuDNN 413/595 and 509/595, FA3 497/648 and 642/648);
 *  - A100 SXM4 (Dao 2023, FlashAttention-2, arXiv 2307.08691, section 4.1:
 *    forward up to 73 % and backward up to 63 % of the peak, head dim 128);
 *    the saturation length and head-dim factors are the H100 FA2 values
 *    (an assumption: same kernel); cuDNN/FA3 fall back to FA2 there (TE picks
 *    FlashAttention below SM 9.0, FA3 is Hopper-only);
 *  - Ada (L40S): the A100 FA2 curve (an assumption, no published benchmark);
 *  - Blackwell: cuDNN at the H100 cuDNN fractions (an assumption), and
 *    FlashAttention-2 running its SM 8.0 code at the H100 FA2 absolute rate
 *    (343 TFLOPS = 0.15 of B200's peak; stas00/ml-engineering: FA2 "very slow
 *    on Blackwell").
 *
 * PyTorch's grouped GEMM on Blackwell: torch._grouped_mm in BF16 runs a CUTLASS
 * grouped kernel (aten/src/ATen/native/cuda/GroupMM.cu, its SM 10.0 schedule
 * since pytorch/pytorch PR 156203) with CUTLASS's example heuristics, not
 * cuBLAS's (pytorch/pytorch issue 163425). torchao's microbenchmark of it on a
 * B200 (torchao/prototype/moe_training/README.md at 838dcebb13be, torch
 * 2.10.0a0+gitf6de195, benchmark_scaled_grouped_mm_dq.py --compile) times the
 * forward and both backward GEMMs of (M 128,000, N 8,192, K 5,120) in 4 groups
 * at 38,879.3 us (the 4 local experts of torchao's own 2-layer Llama 4 run);
 * the plan's dense model times the same three GEMMs on the catalog's B200 at
 * 26.91 ms: 26.91 / 38.88 = 0.69 (the table's 1, 2 and 8 groups: 0.67, 0.76,
 * 0.75; at DeepSeek-V3's (M 128,000, N 2,048, K 7,168) 11,758 to 15,013 us
 * against 9.65 ms: 0.64 to 0.82). Its MXFP8 counterpart
 * (torch._scaled_grouped_mm) without torchao's quantization kernels, which the
 * plan charges apart: the same README's kernel breakdown (at 2c2d40258,
 * torch 2.11.0.dev20260101, torchao 0.16.0, B200 at 1,000 W, DeepSeek-V3
 * shapes: M 131,072 in 8 groups, N 2,048, K 7,168) times the forward and dgrad
 * 2D-3D GEMMs at 1,671.2 and 1,683.4 us and the wgrad 2D-2D at 2,103.3 us,
 * 5,457.9 us against the plan's 4.866 ms: 0.89. (Those plan times are at B200's
 * earlier sustained share 0.66; the GEMM rate is proportional to the share, so at
 * the fitted 0.60: 29.600 and 5.353 ms, 0.76 and 0.98, the values below; at 0.62
 * they were 0.74 and 0.95). The
 * MXFP8 one is against the per-tensor FP8 rate: plan_moe_time.c takes the MXFP8
 * GEMM fraction below out again.)
 *
 * MXFP8 GEMMs on Blackwell: Transformer Engine's MXFP8BlockScaling runs every
 * linear's GEMMs as cuBLASLt block-scaled GEMMs (1x32 E8M0 scales, read by the
 * tensor cores beside the FP8 operands), where FP8-CS runs per-tensor-scaled ones
 * on the same tensor cores. No published kernel benchmark compares the two on one
 * shape; the fraction is fitted instead, on the 0.01 grid, to the dense dev runs
 * that Megatron-Bridge publishes both ways (25.09 Llama 3 8B and 3.1 405B on B200,
 * 8B on GB200; 26.02.01, 26.04.01 and 26.06 405B on GB200): the lowest mean
 * |planned / measured - 1| of the MXFP8 / FP8-CS throughput ratio, 1.11 % at 0.90
 * (1.26 at 0.89, 1.12 at 0.91; 6.42 % at 1.00), a ratio the sustained share
 * cancels (tests/unit/test_fidelity_fit.c).
 *
 * DeepSeek-style block-scaled FP8 GEMMs on Hopper (1x128 activation and
 * gradient tiles, 128x128 weight blocks, FP32 scales: the deepseek-v3 recipe,
 * TE's Float8BlockScaling behind Megatron's --fp8-recipe blockwise): SM 9.0 has
 * no block-scaled tensor-core instruction, so the kernel (cuBLASLt's
 * CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F / BLK128x128_32F modes, CUDA 12.9+,
 * or DeepGEMM) multiplies each 128-deep K slice's partial sums by the scales on
 * the CUDA cores and adds them into the accumulator, work the per-tensor kernel
 * does once in its epilogue. NVIDIA's cuBLAS 12.9 post ("Boosting Matrix
 * Multiplication Speed and Flexibility with NVIDIA cuBLAS 12.9", 2025-05,
 * section on channel- and block-scaled FP8 matmuls on Hopper) measures the
 * block-scaled FP8 matmuls at up to 1.75x the BF16 matmul for large shapes (at
 * least 1.25x for most others); the per-tensor FP8 matmul runs at the MAMF
 * ratio 1453.4 / 794.5 = 1.829x BF16 on H100 SXM (models/gpus.csv): 1.75 /
 * 1.829 = 1.75 x 794.5 / 1453.4 = 1390.375 / 1453.4 = 0.9566, 0.96 on the 0.01
 * grid. Taken from the kernel benchmark, not fitted to the runs it moves.
 * (DeepGEMM's README reports "up to 1550 TFLOPS" on H800 at its best shape,
 * 2025-04, a best case with no per-tensor kernel timed beside it.)
 *
 * Row-wise-scaled FP8 GEMMs: torch._scaled_mm with row-wise scales runs a
 * CUTLASS kernel; with fast accumulation "most shapes are within 90-100 % of
 * tensor-wise efficiency, but there's a long tail going down to 50 %"
 * (pytorch/pytorch issue 147971, H100, 2025-02): 0.90, the lower end of the
 * common case.
 *
 * NCCL latencies are NCCL's own tuning model (NVIDIA/nccl src/graph/tuning.cc
 * at 01afd20a: baseLat ring LL 3.6 us, Simple 8.4 us; hwLat ring per step
 * NVLink LL 0.47 / Simple 3.4 us, PCI 1.0 / 5.7 us, network 2.7 / 9.6 us; the
 * LL protocol moves data at 1/4 of the Simple bus bandwidth for all-reduce or
 * across nodes, 1/3 otherwise). */
#include "planner/arch.h"

#include <math.h>

/* clang-format off */
static const ArchRow rows[] = {
    /* Blackwell */
    {100, 128, 256, 128, 256,
     .flash2 = {0.152, 400, 0.87, 880, 0.876, 0.805},
     .flash3 = {0.152, 400, 0.87, 880, 0.876, 0.805},
     .cudnn = {0.558, 380, 0.87, 840, 0.694, 0.855}, .has_flash3 = 0},
    /* Hopper */
    {90, 128, 256, 128, 256,
     .flash2 = {0.347, 400, 0.87, 880, 0.876, 0.805},
     .flash3 = {0.645, 600, 0.866, 1320, 0.767, 0.99},
     .cudnn = {0.558, 380, 0.87, 840, 0.694, 0.855}, .has_flash3 = 1},
    /* Ada, Ampere and anything older */
    {0, 256, 128, 64, 128,
     .flash2 = {0.70, 400, 0.86, 880, 0.876, 0.805},
     .flash3 = {0.70, 400, 0.86, 880, 0.876, 0.805},
     .cudnn = {0.70, 400, 0.86, 880, 0.876, 0.805}, .has_flash3 = 0},
};
/* clang-format on */

const double arch_rowwise_gemm_rel = 0.90;

const double arch_mxfp8_gemm_rel_sm100 = 0.90;

const double arch_blockwise_gemm_rel_sm90 = 0.96;

const double arch_grouped_mm_bf16_rel_sm100 = 0.76;
const double arch_grouped_mm_mxfp8_rel_sm100 = 0.98;

/* A CPU: BLAS register and cache blocking leave no wave or tile quantization the model could see at
 * the granularity of a whole kernel, and its fixed costs per call are in the launch floor (the stack's
 * launch_us, measured). Fused attention kernels do not run on it; the Ada/Ampere FlashAttention-2 curve
 * stands in if a plan asks for one. */
const ArchRow arch_host = {0,
                           1,
                           1,
                           0,
                           0,
                           .flash2 = {0.70, 400, 0.86, 880, 0.876, 0.805},
                           .flash3 = {0.70, 400, 0.86, 880, 0.876, 0.805},
                           .cudnn = {0.70, 400, 0.86, 880, 0.876, 0.805},
                           .has_flash3 = 0};

const NcclLat nccl_lat = {
    .base = {3.6e-6, 8.4e-6},
    .hop = {[LINK_NVLINK] = {0.47e-6, 3.4e-6}, [LINK_PCIE] = {1.0e-6, 5.7e-6}, [LINK_COUNT_] = {2.7e-6, 9.6e-6}},
};

const ArchRow *arch_row(uint32_t sm)
{
    for (unsigned i = 0; i < sizeof rows / sizeof *rows; i++)
        if (sm >= rows[i].min_sm) return &rows[i];
    return &rows[sizeof rows / sizeof *rows - 1];
}

const ArchRow *arch_row_of(const GpuSpec *g) { return g->host ? &arch_host : arch_row(g->sm); }

const AttnCurve *arch_attn(const ArchRow *a, AttnImpl k)
{
    if (k == ATTN_FLASH3 && a->has_flash3) return &a->flash3;
    if (k == ATTN_CUDNN) return &a->cudnn;
    return &a->flash2;
}

double arch_hd_factor(const AttnCurve *c, uint32_t head_dim)
{
    if (head_dim <= 64) return c->hd64;
    if (head_dim >= 256) return c->hd256;
    /* -1 at 64, 0 at 128, +1 at 256; a power of two's log2 is its exponent exactly, without the libm call */
    double x = (head_dim & (head_dim - 1) ? log2((double)head_dim) : (double)__builtin_ctz(head_dim)) - 7.0;
    return x < 0 ? 1.0 + x * (1.0 - c->hd64) : 1.0 + x * (c->hd256 - 1.0);
}
