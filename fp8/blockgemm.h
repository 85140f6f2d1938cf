/* fp8/blockgemm.h — the DeepSeek-V3 FP8 GEMM as a reference (arXiv 2412.19437
 * section 3.3): D (M, N) = A (M, K) · B (N, K)ᵀ from FP8 codes, A with one FP32
 * dequantization factor per 1x128 tile (per row, per 128 of K: an activation or
 * an output gradient) and B with one per 128x128 block (a weight), the scales
 * laid out as fp8/quant.h's GRAN_1X128 / GRAN_128X128 (partial tiles at the edge
 * of K or N get their own scale; K need not be a multiple of 128).
 *
 * Accumulation, K walked in increasing order in blocks of 128 (the report's
 * promotion interval N_C = 128, one scale block):
 *   - every product of two FP8 values is exact in FP32 (at most 4 x 4
 *     significant bits);
 *   - within a block the running partial sum is kept either in FP32
 *     (BLOCK_ACC_FP32, round to nearest even: what a CUDA-core accumulation
 *     does) or, BLOCK_ACC_TC14, as the report's H800 tensor core keeps it:
 *     "around 14 bits" — modelled here as an accumulator of 14 significant bits
 *     (13 fraction bits, FP32's exponent range: the 1 + 8 + 13 "FP22" layout
 *     measured for Hopper's FP8 MMA), each addition computed exactly and then
 *     truncated toward zero to 13 fraction bits, one product at a time in k
 *     order (the hardware adds groups of products aligned to the largest; a
 *     chain of single adds is the simplest model with the same precision);
 *   - at the end of each block the partial sum is promoted: multiplied in FP32
 *     by sa(i, kb) · sb(j / 128, kb) (the product of the two factors rounded
 *     first) and added, round to nearest, to an FP32 accumulator that starts
 *     at 0.
 * Pure C11: no I/O. The executor's CPU GEMM (exec/cpu/cpu_gemm_ref.c) promotes
 * FP32 partial sums the same way (BLOCK_ACC_FP32). */
#ifndef FP8PLAN_FP8_BLOCKGEMM_H
#define FP8PLAN_FP8_BLOCKGEMM_H

#include <stdint.h>

#include "fp8/dtype.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { BLOCK_GEMM_K = 128 }; /* the scale blocks' extent along K, and the promotion interval */

typedef enum {
    BLOCK_ACC_FP32 = 0, /* partial sums in FP32 */
    BLOCK_ACC_TC14 = 1, /* partial sums truncated to 14 significant bits after every addition */
} BlockAcc;

typedef struct {
    uint64_t m, n, k;
    Dtype a_fmt, b_fmt;       /* DT_E4M3 (DeepSeek-V3 everywhere) or DT_E5M2 */
    const uint8_t *a;         /* (m, k) codes */
    const float *a_scale_inv; /* (m, ceil(k/128)) dequantization factors, one per 1x128 tile */
    const uint8_t *b;         /* (n, k) codes */
    const float *b_scale_inv; /* (ceil(n/128), ceil(k/128)), one per 128x128 block */
    BlockAcc acc;
} BlockGemm;

/* D (m, n) FP32, row-major. ST_USAGE for an empty shape, a format that is
 * not FP8, a missing pointer or an unknown accumulation mode. */
Status block_gemm(const BlockGemm *g, float *d, Err *e);

/* One step of BLOCK_ACC_TC14's accumulator: part + p computed exactly, truncated toward zero to 14
 * significant bits. */
float block_acc_tc14_add(float part, float p);

/* x truncated toward zero to `frac` fraction bits (FP32's exponent; ±0, Inf
 * and NaN as they are; frac ≥ 23 leaves x). BLOCK_ACC_TC14 uses frac 13. */
float block_acc_truncate(float x, int frac);

#ifdef __cplusplus
}
#endif
#endif
