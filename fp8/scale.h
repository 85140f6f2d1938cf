/* fp8/scale.h — FP32 quantization scales from an amax, with Transformer
 * Engine's naming and its policies for amax 0, tiny, Inf and NaN.
 *
 * Naming (TE's): `scale` is the quantization multiplier, fp8 = cast(x * scale),
 * with scale = fmax / amax / 2^margin so the tensor's amax lands on fmax (448
 * for E4M3, 57344 for E5M2); `scale_inv` = 1 / scale is the dequantization
 * factor a GEMM applies to its FP32 accumulator. Both are fp32 values computed
 * with fp32 arithmetic, as TE computes them (0.7 is really 0.699999988).
 *
 * Two policies, one per TE code path:
 *   current / block scaling (TE compute_scale_from_amax, used by
 *   Float8CurrentScaling and Float8BlockScaling 1x128 / 128x128):
 *     amax < epsilon      -> amax = epsilon (TE amax_epsilon, default 0)
 *     amax 0, Inf or NaN  -> scale 1
 *     fmax/amax overflows -> FLT_MAX ("tiny" amax)
 *     pow2                -> scale rounded down to a power of two by zeroing
 *                            its mantissa bits (TE's default for blocks)
 *   delayed scaling (TE DelayedScaling's amax_and_scale_update kernel):
 *     amax finite and > 0 -> fmax * 2^-margin / amax
 *     otherwise (0, negative, Inf, NaN) -> the previous scale is kept
 *     result Inf ("tiny" amax) -> FLT_MAX
 * MX (1x32 E8M0) scales are power-of-two codes; see e8m0_scale_from_amax in
 * fp8/codec.h. Pure; no allocation. */
#ifndef FP8PLAN_FP8_SCALE_H
#define FP8PLAN_FP8_SCALE_H

#include "fp8/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an amax was treated. */
typedef enum {
    AMAX_OK = 0, /* scale = fmax / amax */
    AMAX_ZERO,   /* 0 (or negative): no information */
    AMAX_TINY,   /* fmax / amax overflowed fp32: scale = FLT_MAX */
    AMAX_INF,
    AMAX_NAN,
    AMAX_COUNT_
} AmaxCase;

/* "ok", "zero", "tiny", "inf", "nan". */
const char *amax_case_name(AmaxCase c);

typedef struct {
    Dtype fmt;     /* element format: DT_E4M3 or DT_E5M2 */
    int margin;    /* scale = fmax / amax / 2^margin (TE margin; default 0) */
    int pow2;      /* 1: round the scale down to a power of two */
    float epsilon; /* current/block policy only: amax floor (TE amax_epsilon; default 0) */
} ScaleCfg;

/* {fmt, margin 0, pow2 0, epsilon 0}. */
ScaleCfg scale_cfg(Dtype fmt);

/* fmax * 2^-margin in fp32 (TE's scaled_max). NaN when fmt is not FP8. */
float scale_target(const ScaleCfg *c);

/* Current / block policy. why (may be NULL) says which branch was taken. */
float scale_from_amax(float amax, const ScaleCfg *c, AmaxCase *why);

/* Delayed-scaling policy: `prev` is kept when amax is not finite and > 0. */
float scale_update(float amax, float prev, const ScaleCfg *c, AmaxCase *why);

/* 1 / scale in fp32 (TE's scale_inv). */
float scale_inv_of(float scale);

/* Scale bits & 0xFF800000: the power of two at or below a positive scale. */
float scale_pow2_floor(float scale);

/* Where values land on the FP8 grid for a given scale (all magnitudes, in the
 * unscaled input's units). Real-number bounds are exact quotients in double;
 * the *_f32 fields are the exact fp32 thresholds of the real cast
 * code(fl(x * scale)), found by bisection over fp32 bit patterns. */
typedef struct {
    double flush_below;     /* (min subnormal / 2) / scale: |x| at or below flushes to ±0 (the tie goes to even 0) */
    double min_sub_below;   /* min subnormal / scale: |x| below it is under the grid; it rounds to 0 or to min sub */
    double normal_below;    /* min normal / scale: |x| below it is subnormal, with fewer significant bits */
    double saturate_above;  /* fmax / scale: |x| above it is clipped to fmax (within half an ulp, RNE rounds there) */
    double overflow_above;  /* (fmax + ulp/2) / scale: beyond it NOSAT gives NaN (E4M3) or Inf (E5M2) */
    float zero_max_f32;     /* largest fp32 x >= 0 whose code is 0 (FLT_MAX if every finite x flushes) */
    float min_sub_from_f32; /* smallest fp32 x whose code is the minimum subnormal 0x01 (Inf if none) */
    float min_sub_max_f32;  /* largest fp32 x whose code is at most 0x01 */
} ScaleBounds;

/* Fill b for fmt and a positive finite scale; returns 0, or -1 (b untouched)
 * when fmt is not FP8 or scale is not positive and finite. */
int scale_bounds(Dtype fmt, float scale, ScaleBounds *b);

#ifdef __cplusplus
}
#endif
#endif
