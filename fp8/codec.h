/* fp8/codec.h — exact 8-bit float codecs: FP8 E4M3 and E5M2, and the E8M0
 * power-of-two scale format of MXFP8.
 *
 * E4M3 is the OCP "fn" variant: bias 7, no Inf, NaN only at S.1111.111, so the
 * largest finite value is S.1111.110 = 448. E5M2 is IEEE-like: bias 15, Inf at
 * S.11111.00, NaN at S.11111.{01,10,11}, largest finite 57344. A code is the
 * raw byte, sign in bit 7.
 *
 * Encoding rounds the exact input once, to nearest, ties to even (RNE), in both
 * the float and the double entry point (the double path never goes through
 * float, so it cannot round twice). This is the conversion NVIDIA implements in
 * cuda_fp8.h (host path and sm_89+ `cvt.rn`), and the tests check it bit for
 * bit against that header. Out-of-range handling follows its two modes:
 *
 *   FP8_SATFINITE  |x| beyond the largest finite value (after rounding), and
 *                  ±Inf, give ±max (448 or 57344). What TE's casts use.
 *   FP8_NOSAT      overflow gives NaN (E4M3, it has no Inf) or ±Inf (E5M2);
 *                  ±Inf gives NaN (E4M3) or ±Inf (E5M2).
 *
 * For E4M3, 464 (halfway between 448 and the missing 480) rounds to the even
 * code 448; anything above overflows. For E5M2, 61440 is the tie between 57344
 * (odd code 0x7B) and 0x7C = Inf, so it overflows. Magnitudes at or below half
 * the smallest subnormal become ±0 (the sign of zero is kept).
 *
 * NaN input encodes to 0x7F with the input's sign (0x7F/0xFF are NaN in both
 * formats). NVIDIA's float path drops the sign and its double path keeps the
 * payload, so compare "is NaN" (fp8_is_nan), never NaN bytes.
 *
 * Every function is pure and thread-safe; none allocates. */
#ifndef FP8PLAN_FP8_CODEC_H
#define FP8PLAN_FP8_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "fp8/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    FP8_SATFINITE = 0, /* clamp to ±max (NVIDIA __NV_SATFINITE) */
    FP8_NOSAT = 1,     /* overflow to NaN (E4M3) or Inf (E5M2) (NVIDIA __NV_NOSAT) */
} Fp8Sat;

/* The canonical NaN code (positive sign) shared by both formats. */
#define FP8_NAN_CODE 0x7Fu

/* ---- E4M3 / E5M2 --------------------------------------------------------------
 * fmt is DT_E4M3 or DT_E5M2; any other dtype encodes to FP8_NAN_CODE (NaN in
 * either format) and decodes to NaN. */

/* x -> code, one RNE rounding of the exact float. */
uint8_t fp8_encode_f32(Dtype fmt, float x, Fp8Sat sat);
/* out[i] = fp8_encode_f32(fmt, x[i] · mul, sat) for n values (the product
 * rounded to float first, as written), the format looked up once: the bulk
 * form the CPU backend's casts use. */
void fp8_encode_f32_array(Dtype fmt, const float *x, float mul, uint8_t *out, size_t n, Fp8Sat sat);
/* x -> code, one RNE rounding of the exact double (no detour through float). */
uint8_t fp8_encode_f64(Dtype fmt, double x, Fp8Sat sat);

/* code -> value. Exact: every FP8 value is a float. NaN codes give a NaN with
 * the code's sign; E5M2 Inf codes give ±INFINITY. */
float fp8_decode(Dtype fmt, uint8_t code);

int fp8_is_nan(Dtype fmt, uint8_t code);
int fp8_is_inf(Dtype fmt, uint8_t code);

/* Largest finite code magnitude (0x7E for E4M3, 0x7B for E5M2), and its value
 * (448, 57344): the "fmax" of every scale formula. */
uint8_t fp8_max_code(Dtype fmt);
float fp8_max(Dtype fmt);

/* 1 when a finite scaled value v falls beyond the format's range: FP8_SATFINITE
 * clamps it to ±max and FP8_NOSAT would give NaN/Inf (E4M3 |v| > 464, E5M2
 * |v| >= 61440). Values between max and that bound round to ±max under RNE. */
int fp8_overflows(Dtype fmt, float v);

/* ---- E8M0 (MX block scales) ------------------------------------------------------
 * Unsigned, 8 exponent bits, bias 127: code c in 0x00..0xFE is exactly 2^(c-127)
 * (0x00 = 2^-127, a float subnormal; 0xFE = 2^127); 0xFF is NaN. No zero, no
 * Inf, no sign. Encoding takes |x| (the sign is ignored, as NVIDIA's
 * conversion does) and supports the two roundings NVIDIA implements:
 *   E8M0_RZ  toward zero: floor(log2|x|) + 127
 *   E8M0_RP  up (toward +Inf): ceil(log2|x|) + 127
 * then clamps to 0x00 below 2^-127. Beyond 2^127 (only a double can be, for
 * E8M0_RZ): E8M0_RZ gives 0xFE (as IEEE round-toward-zero, it never overflows);
 * E8M0_RP gives 0xFE under FP8_SATFINITE and 0xFF (NaN) under FP8_NOSAT.
 * Special inputs: ±0 -> 0x00, NaN -> 0xFF, ±Inf -> 0xFE (SATFINITE) or 0xFF
 * (NOSAT). */
typedef enum {
    E8M0_RZ = 0, /* cudaRoundZero */
    E8M0_RP = 1, /* cudaRoundPosInf */
} E8m0Round;

#define E8M0_NAN_CODE 0xFFu

uint8_t e8m0_encode_f32(float x, E8m0Round rnd, Fp8Sat sat);
uint8_t e8m0_encode_f64(double x, E8m0Round rnd, Fp8Sat sat);
/* 2^(code-127); NaN for 0xFF. */
float e8m0_decode(uint8_t code);
/* The reciprocal 2^(127-code) as an exact float (0x00 -> 2^127, 0xFE -> 2^-127); NaN for 0xFF. */
float e8m0_decode_rcp(uint8_t code);

/* ---- the two named MX scale rules ------------------------------------------------
 * An MX block of values with max magnitude amax stores E8M0 code e; the block
 * is quantized as fp8(x * 2^(127-e)) and dequantized as value(code) * 2^(e-127)
 * (so e encodes TE's scale_inv; the multiplier 2^(127-e) is its scale).
 *
 *   E8M0_RULE_CEIL   cuBLAS / TE MXFP8: e = E8M0_RP(amax * fl(1/fmax)) with
 *                    SATFINITE. The block's amax lands at or below fmax, so no
 *                    element saturates, at the cost of up to one binade of range.
 *                    (fl(1/fmax) is the fp32 reciprocal, as TE multiplies by it.)
 *   E8M0_RULE_FLOOR  OCP MX v1.0: e = floor(log2 amax) - emax_elem + 127, where
 *                    emax_elem = floor(log2 fmax) (8 for E4M3, 15 for E5M2);
 *                    keeps the top binade, so elements above fmax saturate.
 *
 * The rules differ exactly when amax / 2^floor(log2 amax) is in (1.75, 2) for
 * E4M3 and E5M2 (fmax = 1.75 * 2^emax). Both: amax NaN -> 0xFF, ±Inf -> 0xFE,
 * 0 -> 0x00; results clamp to [0x00, 0xFE]. fmt is the element format.
 * (fp8/quant.c always multiplies by the exact 2^(127-e); TE's kernels use 1
 * when e = 0, which differs only for blocks with amax below fmax * 2^-127.) */
typedef enum {
    E8M0_RULE_CEIL = 0,  /* cuBLAS / TE (default) */
    E8M0_RULE_FLOOR = 1, /* OCP MX v1.0 */
} E8m0Rule;

uint8_t e8m0_scale_from_amax(float amax, Dtype fmt, E8m0Rule rule);

/* "ceil" / "floor"; parse also accepts "te", "cublas" and "ocp". 0 ok, -1 unknown. */
const char *e8m0_rule_name(E8m0Rule r);
int e8m0_rule_parse(const char *s, E8m0Rule *out);

#ifdef __cplusplus
}
#endif
#endif
