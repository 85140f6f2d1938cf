/* fp8/quant.h — quantize / dequantize a row-major float tensor at any scale
 * granularity, into caller-owned buffers the executor can use directly.
 *
 * A tensor x is (rows, cols) row-major; for a weight, rows are output channels
 * and cols the GEMM's K. Each granularity (fp8/granularity.h) gives one scale
 * per block; block (br, bc) covers rows [br*BR, ...) and cols [bc*BC, ...)
 * and its scale sits at index br * ceil(cols/BC) + bc:
 *   GRAN_TENSOR   1 scale                  index 0
 *   GRAN_CHANNEL  1 per row                index r   (chan_cols: 1 per column, index c)
 *   GRAN_1X32     1 per 32 along a row     index r * ceil(cols/32) + c/32   (E8M0)
 *   GRAN_1X128    1 per 128 along a row    index r * ceil(cols/128) + c/128
 *   GRAN_128X128  1 per 128x128 tile       index (r/128) * ceil(cols/128) + c/128
 * Partial blocks at the edges get their own scale. No GEMM-specific padding
 * or swizzle of the scale arrays.
 *
 * Quantization (current scaling: each block's own amax) is what TE does:
 *   amax  = max |x| over the block (NaN ignored, as fmaxf does)
 *   scale = scale_from_amax(amax) for FP32 scales (fp8/scale.h policies), or
 *           2^(127-e) with e = e8m0_scale_from_amax(amax, rule) for 1x32
 *   code  = fp8(fl(x * scale)), one RNE rounding, SATFINITE unless asked
 * and dequantization is y = value(code) * scale_inv in fp32, with scale_inv =
 * fl(1/scale) (exactly 2^(e-127) for E8M0). */
#ifndef FP8PLAN_FP8_QUANT_H
#define FP8PLAN_FP8_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/codec.h"
#include "fp8/granularity.h"
#include "fp8/scale.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    Dtype fmt; /* DT_E4M3 or DT_E5M2 */
    Granularity gran;
    Fp8Sat sat;    /* FP8_SATFINITE (TE) */
    int margin;    /* FP32 scales: scale = fmax / amax / 2^margin */
    int pow2;      /* FP32 scales: round down to a power of two */
    float epsilon; /* FP32 scales: amax floor (TE amax_epsilon) */
    E8m0Rule rule; /* GRAN_1X32: E8M0_RULE_CEIL (cuBLAS/TE) or E8M0_RULE_FLOOR (OCP) */
    int chan_cols; /* GRAN_CHANNEL: 1 = one scale per column (output channels stored as columns) */
} QuantCfg;

/* TE's defaults for a granularity: SATFINITE, margin 0, epsilon 0, the ceil
 * rule for 1x32, and power-of-two scales for 1x128 / 128x128 (TE
 * Float8BlockScaling's default; DeepSeek-V3 keeps plain FP32 scales). */
QuantCfg quant_cfg(Dtype fmt, Granularity gran);

/* Output buffers, all caller-owned. n_scales is quant_scale_count()'s. */
typedef struct {
    uint8_t *codes;   /* (rows, cols) FP8 codes, required */
    float *scale;     /* (n_scales) quantization multipliers; required for FP32 scales, optional for 1x32 */
    float *scale_inv; /* (n_scales) dequantization factors; optional */
    uint8_t *e8m0;    /* (n_scales) E8M0 codes; required for GRAN_1X32, ignored otherwise */
    float *amax;      /* (n_scales) block amaxes; optional */
} QuantBufs;

/* What happened to the elements. */
typedef struct {
    uint64_t n;         /* elements */
    uint64_t saturated; /* finite x whose scaled value was beyond the format's range (clamped or NaN/Inf) */
    uint64_t flushed;   /* finite nonzero x that became ±0 */
    uint64_t nonfinite; /* codes that are NaN or Inf */
} QuantCounts;

/* Index of the scale for element (r, c) (GRAN_CHANNEL per row). */
uint64_t quant_scale_index(Granularity g, uint64_t cols, uint64_t r, uint64_t c);

/* The same under cfg (honours chan_cols). */
uint64_t quant_scale_index_cfg(const QuantCfg *cfg, uint64_t cols, uint64_t r, uint64_t c);

/* Number of scales quant_tensor writes for an R x C tensor under cfg: gran_scale_count()'s,
 * or cols for GRAN_CHANNEL with chan_cols. ST_USAGE for a zero dimension, ST_OVERFLOW past 2^64. */
Status quant_scale_count(const QuantCfg *cfg, uint64_t rows, uint64_t cols, uint64_t *n_scales, Err *e);

/* Quantize x (rows, cols). counts may be NULL. ST_USAGE for a bad cfg or
 * shape, ST_SOFTWARE for a missing required buffer, ST_OVERFLOW past 2^64. */
Status quant_tensor(const QuantCfg *cfg, const float *x, uint64_t rows, uint64_t cols, const QuantBufs *out,
                    QuantCounts *counts, Err *e);

/* Dequantize codes with the scales quant_tensor wrote (scale_inv if given,
 * else 1/scale; e8m0 for 1x32) into y (rows, cols). */
Status quant_dequant(const QuantCfg *cfg, const QuantBufs *in, uint64_t rows, uint64_t cols, float *y, Err *e);

/* Cast n values with one given scale (delayed scaling: the scale comes from
 * the history, not from this tensor) and return this tensor's amax, the value
 * to record for the next step. counts may be NULL. */
float quant_cast(Dtype fmt, Fp8Sat sat, float scale, const float *x, size_t n, uint8_t *codes, QuantCounts *counts);

/* y[i] = value(codes[i]) * scale_inv (fp32). */
void quant_uncast(Dtype fmt, float scale_inv, const uint8_t *codes, size_t n, float *y);

#ifdef __cplusplus
}
#endif
#endif
