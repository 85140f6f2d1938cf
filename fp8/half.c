/* fp8/half.c — BF16 / FP16 RNE conversions (see half.h). */
#include "fp8/half.h"

#include <string.h>

#include "fp8/minifloat.h"

uint16_t bf16_encode(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return HALF_NAN_CODE;
    /* BF16 is float's top half: add just under half an ulp of the kept part,
     * plus one when the kept part is odd (ties to even); the carry propagates
     * into the exponent, turning FLT_MAX-adjacent values into Inf as RNE must. */
    b += 0x7FFFu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

float bf16_decode(uint16_t code)
{
    uint32_t b = (uint32_t)code << 16;
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

float bf16_round(float x) { return bf16_decode(bf16_encode(x)); }

enum { FP16_MAN = 10, FP16_EMIN = -14, FP16_MAXC = 0x7BFF, FP16_INF = 0x7C00 };

uint16_t fp16_encode(float x)
{
    MfUnpacked u = mf_unpack_f32(x);
    uint16_t sign = (uint16_t)(u.neg ? 0x8000u : 0);
    switch (u.kind) {
    case MF_NAN: return HALF_NAN_CODE;
    case MF_ZERO: return sign;
    case MF_INF: return sign | FP16_INF;
    default: break;
    }
    int64_t mag = mf_round_mag(&u, FP16_MAN, FP16_EMIN);
    return sign | (uint16_t)(mag > FP16_MAXC ? FP16_INF : mag);
}

float fp16_decode(uint16_t code)
{
    unsigned e = (code >> 10) & 0x1Fu, m = code & 0x3FFu;
    uint32_t b = (uint32_t)(code & 0x8000u) << 16;
    float v;
    if (e == 0x1F) {
        b |= 0x7F800000u | (uint32_t)m << 13; /* Inf, or NaN keeping its payload */
    } else if (e == 0) {
        v = (float)m * 0x1p-24f; /* subnormal, exact */
        return (code & 0x8000u) ? -v : v;
    } else {
        b |= (e - 15 + 127) << 23 | (uint32_t)m << 13;
    }
    memcpy(&v, &b, sizeof v);
    return v;
}

float fp16_round(float x) { return fp16_decode(fp16_encode(x)); }

void bf16_encode_array(const float *x, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = bf16_encode(x[i]);
}

void bf16_round_array(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = bf16_round(x[i]);
}

void fp16_round_array(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = fp16_round(x[i]);
}
