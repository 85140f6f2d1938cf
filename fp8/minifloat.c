/* fp8/minifloat.c — exact unpacking and one-step RNE rounding (see minifloat.h). */
#include "fp8/minifloat.h"

#include <string.h>

MfUnpacked mf_unpack_f32(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    MfUnpacked u = {.neg = (int)(b >> 31), .kind = MF_FINITE, .exp = 0, .sig = 0};
    uint32_t e = (b >> 23) & 0xFF, m = b & 0x7FFFFF;
    if (e == 0xFF) {
        u.kind = m ? MF_NAN : MF_INF;
    } else if (e == 0) {
        if (!m) {
            u.kind = MF_ZERO;
        } else { /* subnormal: m * 2^-149 */
            int p = 31 - __builtin_clz(m);
            u.exp = p - 149;
            u.sig = (uint64_t)m << (63 - p);
        }
    } else {
        u.exp = (int)e - 127;
        u.sig = (uint64_t)(m | 0x800000) << 40;
    }
    return u;
}

MfUnpacked mf_unpack_f64(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    MfUnpacked u = {.neg = (int)(b >> 63), .kind = MF_FINITE, .exp = 0, .sig = 0};
    uint64_t e = (b >> 52) & 0x7FF, m = b & ((UINT64_C(1) << 52) - 1);
    if (e == 0x7FF) {
        u.kind = m ? MF_NAN : MF_INF;
    } else if (e == 0) {
        if (!m) {
            u.kind = MF_ZERO;
        } else { /* subnormal: m * 2^-1074 */
            int p = 63 - __builtin_clzll(m);
            u.exp = p - 1074;
            u.sig = m << (63 - p);
        }
    } else {
        u.exp = (int)e - 1023;
        u.sig = (m | (UINT64_C(1) << 52)) << 11;
    }
    return u;
}

/* RNE(sig / 2^shift) for shift >= 1. */
static uint64_t rne_shift(uint64_t sig, int shift)
{
    if (shift > 64) return 0;                          /* sig / 2^shift < 1/2 */
    if (shift == 64) return sig > (UINT64_C(1) << 63); /* in [1/2, 1): the tie 1/2 goes to even 0 */
    uint64_t q = sig >> shift, rem = sig & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return q;
}

int64_t mf_round_mag(const MfUnpacked *u, int man_bits, int emin)
{
    if (u->exp > emin + 4096) return INT32_MAX; /* far beyond any narrow format; avoids shifts that overflow */
    /* the grid step (quantum) at this magnitude is 2^(max(exp, emin) - man_bits) */
    int top = u->exp > emin ? u->exp : emin;
    int shift = 63 - man_bits + (top - u->exp);
    uint64_t n = rne_shift(u->sig, shift); /* value in quanta: [2^m, 2^(m+1)] when normal, [0, 2^m] below */
    return ((int64_t)(top - emin) << man_bits) + (int64_t)n;
}
