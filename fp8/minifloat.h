/* fp8/minifloat.h — the one rounding engine behind every narrow float codec
 * (E4M3, E5M2, FP16, E8M0): a float or double is unpacked exactly into
 * sign, exponent and a 64-bit significand, then rounded once, to nearest with
 * ties to even, onto a target grid described by its mantissa bits and its
 * smallest normal exponent. Internal to fp8/; users include fp8/codec.h or
 * fp8/half.h. */
#ifndef FP8PLAN_FP8_MINIFLOAT_H
#define FP8PLAN_FP8_MINIFLOAT_H

#include <stdint.h>

/* An exactly unpacked finite value: |v| = sig * 2^(exp - 63) with bit 63 of
 * sig set (so exp is floor(log2 |v|)), or zero. */
typedef struct {
    int neg;  /* sign bit */
    int kind; /* MF_ZERO, MF_FINITE, MF_INF, MF_NAN */
    int exp;  /* unbiased exponent of the leading bit */
    uint64_t sig;
} MfUnpacked;

enum { MF_ZERO, MF_FINITE, MF_INF, MF_NAN };

MfUnpacked mf_unpack_f32(float x);
MfUnpacked mf_unpack_f64(double x);

/* Round a finite nonzero magnitude to the code magnitude of a sign-magnitude
 * minifloat with man_bits mantissa bits whose smallest normal is 2^emin (codes
 * 0 .. 2^man_bits-1 are zero and subnormals, each further exponent takes
 * 2^man_bits codes). One RNE rounding of the exact value. The result may exceed
 * the format's largest finite code; the caller decides what overflow means.
 * Saturates at INT32_MAX for absurd exponents. */
int64_t mf_round_mag(const MfUnpacked *u, int man_bits, int emin);

#endif
