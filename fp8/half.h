/* fp8/half.h — BF16 and FP16 round-to-nearest-even conversions, for emulating
 * on the CPU exactly where the GPU rounds (BF16 GEMM outputs and activations,
 * FP16 master weights and second moments of FP8-LM's optimizer).
 *
 * Encoding takes a float and rounds it once, to nearest, ties to even, as
 * CUDA's __float2bfloat16_rn / __float2half_rn and the PTX cvt.rn.bf16.f32 /
 * cvt.rn.f16.f32 instructions do:
 *   BF16: 1 sign, 8 exponent, 7 mantissa bits (bias 127, float's range);
 *         |x| >= 0x1.ffp127 (the tie above BF16's max 0x1.fep127) rounds to
 *         ±Inf; float subnormals round onto BF16 subnormals.
 *   FP16: IEEE binary16 (bias 15, max 65504, subnormals down to 2^-24);
 *         |x| >= 65520 (the tie above 65504) overflows to ±Inf, |x| <= 2^-25
 *         becomes ±0.
 * NaN encodes to 0x7FFF in both, the canonical NaN CUDA produces; ±Inf and
 * signed zeros are kept. Decoding is exact (every BF16/FP16 value is a float).
 * Pure, thread-safe, no allocation. */
#ifndef FP8PLAN_FP8_HALF_H
#define FP8PLAN_FP8_HALF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HALF_NAN_CODE 0x7FFFu

uint16_t bf16_encode(float x);
float bf16_decode(uint16_t code);
/* decode(encode(x)): x rounded to the nearest BF16, as a float. */
float bf16_round(float x);

uint16_t fp16_encode(float x);
float fp16_decode(uint16_t code);
float fp16_round(float x);

/* out[i] = bf16_encode(x[i]) for n values (the same rounding, in a loop the
 * compiler can vectorize). */
void bf16_encode_array(const float *x, uint16_t *out, size_t n);

/* Round n floats in place (x may be any caller buffer; n = 0 is fine). */
void bf16_round_array(float *x, size_t n);
void fp16_round_array(float *x, size_t n);

#ifdef __cplusplus
}
#endif
#endif
