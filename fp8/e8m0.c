/* fp8/e8m0.c — the E8M0 scale codec and the two MX scale rules (see codec.h). */
#include "fp8/codec.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "fp8/minifloat.h"

static uint8_t encode(MfUnpacked u, E8m0Round rnd, Fp8Sat sat)
{
    switch (u.kind) {
    case MF_NAN: return E8M0_NAN_CODE;
    case MF_ZERO: return 0x00;
    case MF_INF: return sat == FP8_SATFINITE ? 0xFE : E8M0_NAN_CODE;
    default: break;
    }
    /* floor(log2|x|) is the unpacked exponent; x is a power of two iff only the leading bit is set */
    long k = u.exp;
    if (rnd == E8M0_RP && u.sig != (UINT64_C(1) << 63)) k++;
    long biased = k + 127;
    if (biased < 0) return 0x00;
    /* past 2^127: rounding toward zero lands on the largest finite code (IEEE RZ
     * never overflows); rounding up overflows, to 0xFE only when saturating.
     * Only doubles reach this with E8M0_RZ. */
    if (biased > 254) return sat == FP8_SATFINITE || rnd == E8M0_RZ ? 0xFE : E8M0_NAN_CODE;
    return (uint8_t)biased;
}

uint8_t e8m0_encode_f32(float x, E8m0Round rnd, Fp8Sat sat) { return encode(mf_unpack_f32(x), rnd, sat); }

uint8_t e8m0_encode_f64(double x, E8m0Round rnd, Fp8Sat sat) { return encode(mf_unpack_f64(x), rnd, sat); }

/* 2^k for k in [-127, 127] built from bits (exact; 2^-127 is a float subnormal). */
static float pow2f(int k)
{
    uint32_t bits = k >= -126 ? (uint32_t)(k + 127) << 23 : 0x00400000u;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

float e8m0_decode(uint8_t code) { return code == E8M0_NAN_CODE ? NAN : pow2f((int)code - 127); }

float e8m0_decode_rcp(uint8_t code) { return code == E8M0_NAN_CODE ? NAN : pow2f(127 - (int)code); }

uint8_t e8m0_scale_from_amax(float amax, Dtype fmt, E8m0Rule rule)
{
    float fmax = fp8_max(fmt);
    if (isnan(amax) || isnan(fmax)) return E8M0_NAN_CODE;
    if (isinf(amax)) return 0xFE;
    if (amax == 0.0f) return 0x00;
    if (rule == E8M0_RULE_CEIL) return e8m0_encode_f32(amax * (1.0f / fmax), E8M0_RP, FP8_SATFINITE);
    /* OCP floor rule: floor(log2 amax) - floor(log2 fmax), biased and clamped */
    int emax_elem = (int)e8m0_encode_f32(fmax, E8M0_RZ, FP8_SATFINITE) - 127;
    int biased = (int)e8m0_encode_f32(amax, E8M0_RZ, FP8_SATFINITE) - emax_elem;
    return (uint8_t)(biased < 0 ? 0 : biased > 254 ? 254 : biased);
}

const char *e8m0_rule_name(E8m0Rule r) { return r == E8M0_RULE_FLOOR ? "floor" : "ceil"; }

int e8m0_rule_parse(const char *s, E8m0Rule *out)
{
    if (!strcasecmp(s, "ceil") || !strcasecmp(s, "te") || !strcasecmp(s, "cublas")) return *out = E8M0_RULE_CEIL, 0;
    if (!strcasecmp(s, "floor") || !strcasecmp(s, "ocp")) return *out = E8M0_RULE_FLOOR, 0;
    return -1;
}
