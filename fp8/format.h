/* fp8/format.h — format descriptors computed from the codecs, not typed in.
 *
 * For the 8- and 16-bit formats (E4M3, E5M2, E8M0, FP16, BF16) every code is
 * decoded and the properties are read off the resulting values:
 *   - points per binade: the most codes found in any [2^k, 2^(k+1));
 *     mantissa bits = its log2;
 *   - min normal: the lowest 2^k whose binade holds that many points (below
 *     it the grid thins out: those are the subnormals);
 *   - bias: 1 - log2(min normal) when subnormals exist (exponent field 0 is
 *     reserved for them), else -log2(min normal) (E8M0: field 0 is 2^-127);
 *   - binades: floor(log2 max) - floor(log2 min subnormal) + 1, the powers of
 *     two that hold a nonzero finite value (E4M3: 18; an IEEE-style E4M3 that
 *     kept Inf/NaN at exponent 1111 would stop at 240 and cover 17).
 * FP32 is not enumerated (2^32 codes): its descriptor decodes the boundary bit
 * patterns (0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF) and counts codes
 * from the field widths. Pure; no allocation. */
#ifndef FP8PLAN_FP8_FORMAT_H
#define FP8PLAN_FP8_FORMAT_H

#include <stdint.h>

#include "fp8/dtype.h"
#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FMT_NO_CODE UINT32_MAX

typedef struct {
    Dtype dtype;
    int bits, exp_bits, man_bits, bias;
    double max_normal, min_normal, max_subnormal, min_subnormal; /* positive values; subnormal 0 if none */
    int binades;                                                 /* binades holding a nonzero finite value */
    int normal_binades;                                          /* of which normal */
    int points_per_binade;                                       /* codes per full binade = 2^man_bits */
    int has_sign;
    uint64_t finite_codes;    /* incl. both zeros */
    uint64_t subnormal_codes; /* nonzero subnormals, both signs */
    uint64_t zero_codes, nan_codes, inf_codes;
    uint32_t max_code, min_normal_code, max_subnormal_code, min_subnormal_code; /* positive codes */
    uint32_t inf_code;                                                          /* +Inf, or FMT_NO_CODE */
    uint32_t nan_code; /* the smallest positive NaN code, or FMT_NO_CODE */
} FormatInfo;

/* Fill out for fp32, fp16, bf16, e4m3, e5m2 or e8m0; ST_USAGE for other dtypes. */
Status format_info(Dtype t, FormatInfo *out, Err *e);

/* Decode one raw code of any of those formats as a double (exact). */
double format_decode(Dtype t, uint32_t code);

#ifdef __cplusplus
}
#endif
#endif
