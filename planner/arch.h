/* planner/arch.h — per-architecture constants of the time model (internal to
 * planner/): GEMM tile shapes, attention-kernel efficiency curves and NCCL's
 * latency model. Each value's source is at its definition in arch.c. */
#ifndef FP8PLAN_PLANNER_ARCH_H
#define FP8PLAN_PLANNER_ARCH_H

#include <stdint.h>

#include "planner/spec.h"
#include "planner/stack.h"

/* One fused attention kernel on one architecture, causal, BF16. Efficiency is a
 * fraction of the dense BF16 peak: e(x) = e_fwd * hd(d) * x / (x + s_half) in the
 * forward, with x the key length one rank's chunk attends to; the backward runs
 * at bwd * e with s_half_bwd in place of s_half. hd(64) and hd(256) are relative
 * to head dim 128 (linear in log2 d between them, clamped outside). */
typedef struct {
    double e_fwd, s_half, bwd, s_half_bwd, hd64, hd256;
} AttnCurve;

typedef struct {
    uint32_t min_sm;         /* first row with min_sm <= the GPU's SM applies */
    uint32_t tile_m, tile_n; /* output tile of the large-GEMM kernels (powers of two) */
    uint32_t k0_16, k0_8;    /* per-tile fixed cost, in K elements: pipeline fill + epilogue (16-bit, 8-bit) */
    AttnCurve flash2, flash3, cudnn;
    int has_flash3; /* FlashAttention-3 runs on this architecture */
} ArchRow;

const ArchRow *arch_row(uint32_t sm);
/* A measured host (GpuSpec.host): no tiles (1 x 1: the FLOPs as they are), no per-tile fixed cost; its
 * rates are measured at the shapes of a layer (fp8plan calibrate). */
extern const ArchRow arch_host;
/* The row of a GPU: arch_host for a host profile, else arch_row(sm). */
const ArchRow *arch_row_of(const GpuSpec *g);

/* The curve of a fused kernel (FLASH, FLASH3, CUDNN; TE resolved by the caller). */
const AttnCurve *arch_attn(const ArchRow *a, AttnImpl k);

/* Head-dimension factor of a curve. */
double arch_hd_factor(const AttnCurve *c, uint32_t head_dim);

/* A row-wise-scaled FP8 GEMM (PyTorch's CUTLASS kernel behind torch._scaled_mm) against the per-tensor
 * cuBLASLt kernel on the same shape: the fraction of its rate. */
extern const double arch_rowwise_gemm_rel;

/* PyTorch's grouped GEMMs on Blackwell (SM 10.0 and later) against the plan's dense GEMM on the same shapes: the
 * fraction of its rate (torchao's B200 benchmarks): BF16 torch._grouped_mm, MXFP8 torch._scaled_grouped_mm. */
extern const double arch_grouped_mm_bf16_rel_sm100;
extern const double arch_grouped_mm_mxfp8_rel_sm100;

/* A cuBLASLt MXFP8 GEMM (1x32 E8M0 block scales on the block-scaled tensor cores) against the per-tensor FP8 GEMM
 * on the same shape on SM 10.x: the fraction of its rate (arch.c: fitted on the paired FP8-CS / MXFP8 dev runs). */
extern const double arch_mxfp8_gemm_rel_sm100;

/* A DeepSeek-style block-scaled FP8 GEMM (1x128 / 128x128 FP32 scales, cuBLASLt VEC128 / BLK128x128 or DeepGEMM)
 * against the per-tensor FP8 GEMM on the same shape on SM 9.x: the fraction of its rate (arch.c: NVIDIA's cuBLAS
 * 12.9 measurement over BF16, divided by the per-tensor FP8 / BF16 MAMF ratio). */
extern const double arch_blockwise_gemm_rel_sm90;

/* NCCL ring latency model (src/graph/tuning.cc): protocols LL and Simple. */
enum { NCCL_LL = 0, NCCL_SIMPLE, NCCL_PROTOS };
typedef struct {
    double base[NCCL_PROTOS];                 /* per call, s */
    double hop[LINK_COUNT_ + 1][NCCL_PROTOS]; /* per ring step: NVLink, PCIe, network (last row), s */
} NcclLat;
extern const NcclLat nccl_lat;

#endif
