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
} Fp8Layout;

static const Fp8Layout E4M3 = {3, -6, 7, 0x7E, 0x7F, 0x1p-9f};
static const Fp8Layout E5M2 = {2, -14, 15, 0x7B, 0x7C, 0x1p-16f};

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

uint8_t fp8_encode_f32(Dtype fmt, float x, Fp8Sat sat) { return encode(layout(fmt), mf_unpack_f32(x), sat); }

uint8_t fp8_encode_f64(Dtype fmt, double x, Fp8Sat sat) { return encode(layout(fmt), mf_unpack_f64(x), sat); }

float fp8_decode(Dtype fmt, uint8_t code)
{
    const Fp8Layout *L = layout(fmt);
    int neg = code >> 7;
    unsigned mag = code & 0x7Fu;
    if (!L || fp8_is_nan(fmt, code)) return neg ? -NAN : NAN;
    if (fp8_is_inf(fmt, code)) return neg ? -INFINITY : INFINITY;
    unsigned e = mag >> L->man_bits, m = mag & ((1u << L->man_bits) - 1);
    float v;
    if (e == 0) {
        v = (float)m * L->quantum; /* exact: m < 2^man_bits */
    } else {
        uint32_t bits = (uint32_t)((int)e - L->bias + 127) << 23 | m << (23 - L->man_bits);
        memcpy(&v, &bits, sizeof v);
    }
    return neg ? -v : v;
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
