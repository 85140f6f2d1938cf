/* fp8/codec.c — E4M3 / E5M2 encode and decode (see codec.h). */
#include "fp8/codec.h"

#include <math.h>
#include <string.h>

#include "fp8/minifloat.h"

/* The two formats as bit layouts; everything else (max, min normal, ...) is
 * derived from these by decoding. */
typedef struct {
    int man_bits;  /* mantissa bits */
    int emin;      /* exponent of the smallest normal = 1 - bias */
    int bias;      /* exponent bias */
    uint8_t maxc;  /* largest finite code magnitude */
    uint8_t ovf;   /* NOSAT overflow result magnitude: NaN (E4M3) or Inf (E5M2) */
    float quantum; /* subnormal step 2^(emin - man_bits) */
    /* the float fast path (encode_f32): */
    uint32_t min_normal_bits; /* fp32 bits of 2^emin */
    uint32_t ovf_bits;        /* fp32 bits of the smallest magnitude that overflows after RNE */
    float magic;              /* 2^(emin - man_bits + 23): adding it rounds to a multiple of quantum */
} Fp8Layout;

/* ovf_bits: E4M3 overflows above 464 (the tie 464 rounds to the even 448), E5M2 at 61440 (the tie
 * rounds to the even Inf code). test_fp8_codec and test-slow check the fast path against NVIDIA. */
static const Fp8Layout E4M3 = {3, -6, 7, 0x7E, 0x7F, 0x1p-9f, 0x3C800000u, 0x43E80001u, 0x1p14f};
static const Fp8Layout E5M2 = {2, -14, 15, 0x7B, 0x7C, 0x1p-16f, 0x38800000u, 0x47700000u, 0x1p7f};

static const Fp8Layout *layout(Dtype fmt) { return fmt == DT_E4M3 ? &E4M3 : fmt == DT_E5M2 ? &E5M2 : NULL; }

static uint8_t encode(const Fp8Layout *L, MfUnpacked u, Fp8Sat sat)
{
    uint8_t sign = (uint8_t)(u.neg ? 0x80 : 0);
    if (!L) return FP8_NAN_CODE;
    switch (u.kind) {
    case MF_NAN: return sign | FP8_NAN_CODE;
    case MF_ZERO: return sign;
    case MF_INF: return sign | (sat == FP8_SATFINITE ? L->maxc : L->ovf);
    default: break;
    }
    int64_t mag = mf_round_mag(&u, L->man_bits, L->emin);
    if (mag > L->maxc) return sign | (sat == FP8_SATFINITE ? L->maxc : L->ovf);
    return sign | (uint8_t)mag;
}

/* The float path without unpacking, for speed (the executor's CPU backend casts every GEMM
 * input); same results as encode(). In the normal range RNE works on the bits: add just under
 * half an ulp of the kept bits, plus one when the kept part is odd, and a carry moves into the
 * exponent as it must. Below it the FPU's own RNE addition of a constant whose ulp is the
 * subnormal step does the rounding. Relies only on the default rounding mode; a flushed fp32
 * subnormal (DAZ) still gives the right answer, 0. */
static uint8_t encode_f32(const Fp8Layout *L, float x, Fp8Sat sat)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    uint8_t sign = (uint8_t)((b >> 24) & 0x80);
    uint32_t a = b & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return encode(L, mf_unpack_f32(x), sat); /* Inf, NaN */
    if (a >= L->ovf_bits) return sign | (sat == FP8_SATFINITE ? L->maxc : L->ovf);
    if (a >= L->min_normal_bits) {
        int shift = 23 - L->man_bits;
        a += (1u << (shift - 1)) - 1 + ((a >> shift) & 1);
        return sign | (uint8_t)((a >> shift) - ((uint32_t)(127 - L->bias) << L->man_bits));
    }
    float f, y;
    memcpy(&f, &a, sizeof f);
    y = f + L->magic;
    uint32_t yb, mb;
    memcpy(&yb, &y, sizeof yb);
    memcpy(&mb, &L->magic, sizeof mb);
    return sign | (uint8_t)(yb - mb);
}

uint8_t fp8_encode_f32(Dtype fmt, float x, Fp8Sat sat)
{
    const Fp8Layout *L = layout(fmt);
    return L ? encode_f32(L, x, sat) : FP8_NAN_CODE;
}

void fp8_encode_f32_array(Dtype fmt, const float *x, float mul, uint8_t *out, size_t n, Fp8Sat sat)
{
    const Fp8Layout *L = layout(fmt);
    if (!L) {
        memset(out, FP8_NAN_CODE, n);
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = encode_f32(L, x[i] * mul, sat);
}

uint8_t fp8_encode_f64(Dtype fmt, double x, Fp8Sat sat) { return encode(layout(fmt), mf_unpack_f64(x), sat); }

float fp8_decode(Dtype fmt, uint8_t code)
{
    const Fp8Layout *L = layout(fmt);
    uint32_t sign = (uint32_t)(code & 0x80u) << 24, mag = code & 0x7Fu, bits;
    float v;
    if (!L || mag > L->maxc) { /* past the largest finite code: Inf (E5M2 0x7C) or NaN */
        v = L && fp8_is_inf(fmt, code) ? INFINITY : NAN;
        return sign ? -v : v;
    }
    if (mag < (1u << L->man_bits)) { /* zero or subnormal: m quanta, exact */
        v = (float)mag * L->quantum;
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    } else { /* the code's exponent and mantissa fields land in fp32's, rebiased */
        bits = sign | ((mag << (23 - L->man_bits)) + ((uint32_t)(127 - L->bias) << 23));
    }
    memcpy(&v, &bits, sizeof v);
    return v;
}

int fp8_is_nan(Dtype fmt, uint8_t code)
{
    unsigned mag = code & 0x7Fu;
    if (fmt == DT_E4M3) return mag == 0x7F;
    if (fmt == DT_E5M2) return mag > 0x7C;
    return 1;
}

int fp8_is_inf(Dtype fmt, uint8_t code) { return fmt == DT_E5M2 && (code & 0x7Fu) == 0x7C; }

uint8_t fp8_max_code(Dtype fmt)
{
    const Fp8Layout *L = layout(fmt);
    return L ? L->maxc : 0;
}

float fp8_max(Dtype fmt)
{
    const Fp8Layout *L = layout(fmt);
    return L ? fp8_decode(fmt, L->maxc) : NAN;
}

int fp8_overflows(Dtype fmt, float v)
{
    if (!isfinite(v) || !layout(fmt)) return 0;
    uint8_t c = fp8_encode_f32(fmt, v, FP8_NOSAT);
    return fp8_is_nan(fmt, c) || fp8_is_inf(fmt, c);
}
