/* fp8/format.c — descriptors read off the decoders (see format.h). */
#include "fp8/format.h"

#include <math.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/half.h"

double format_decode(Dtype t, uint32_t code)
{
    switch (t) {
    case DT_E4M3:
    case DT_E5M2: return fp8_decode(t, (uint8_t)code);
    case DT_E8M0: return e8m0_decode((uint8_t)code);
    case DT_FP16: return fp16_decode((uint16_t)code);
    case DT_BF16: return bf16_decode((uint16_t)code);
    case DT_FP32: {
        float f;
        memcpy(&f, &code, sizeof f);
        return f;
    }
    default: return NAN;
    }
}

/* floor(log2 v) for a positive finite v (exact via frexp). */
static int ilog2(double v)
{
    int e;
    frexp(v, &e);
    return e - 1;
}

enum { MIN_K = -1100, MAX_K = 1100, NK = MAX_K - MIN_K + 1 };

static void enumerate(Dtype t, FormatInfo *fi)
{
    uint32_t ncodes = 1u << fi->bits;
    /* points per binade, over positive finite values (indexed by floor(log2 v)) */
    int per[NK] = {0};
    double maxv = 0, minv = INFINITY;
    fi->inf_code = fi->nan_code = FMT_NO_CODE;
    for (uint32_t c = 0; c < ncodes; c++) {
        double v = format_decode(t, c);
        int positive = !signbit(v);
        if (isnan(v)) {
            fi->nan_codes++;
            if (positive && (fi->nan_code == FMT_NO_CODE || c < fi->nan_code)) fi->nan_code = c;
            continue;
        }
        if (isinf(v)) {
            fi->inf_codes++;
            if (positive) fi->inf_code = c;
            continue;
        }
        fi->finite_codes++;
        if (v == 0) {
            fi->zero_codes++;
            continue;
        }
        if (v < 0) {
            fi->has_sign = 1;
            continue;
        }
        per[ilog2(v) - MIN_K]++;
        if (v > maxv) maxv = v, fi->max_code = c;
        if (v < minv) minv = v, fi->min_subnormal_code = c;
    }
    if (fi->zero_codes > 1) fi->has_sign = 1;
    int ppb = 0;
    for (int k = 0; k < NK; k++)
        if (per[k] > ppb) ppb = per[k];
    int kmin_normal = 0;
    for (int k = 0; k < NK; k++)
        if (per[k] == ppb) {
            kmin_normal = k + MIN_K;
            break;
        }
    fi->points_per_binade = ppb;
    fi->man_bits = ilog2(ppb);
    fi->max_normal = maxv;
    fi->min_normal = ldexp(1.0, kmin_normal);
    /* second pass: codes of the min normal and the largest subnormal, subnormal count */
    double maxsub = 0;
    for (uint32_t c = 0; c < ncodes; c++) {
        double v = format_decode(t, c);
        if (!isfinite(v) || v == 0) continue;
        if (fabs(v) < fi->min_normal) fi->subnormal_codes++;
        if (v < 0) continue;
        if (v == fi->min_normal) fi->min_normal_code = c;
        if (v < fi->min_normal && v > maxsub) maxsub = v, fi->max_subnormal_code = c;
    }
    if (fi->subnormal_codes) {
        fi->max_subnormal = maxsub;
        fi->min_subnormal = minv;
        fi->bias = 1 - kmin_normal;
    } else {
        fi->max_subnormal = fi->min_subnormal = 0;
        fi->max_subnormal_code = fi->min_subnormal_code = FMT_NO_CODE;
        fi->bias = -kmin_normal;
    }
    fi->exp_bits = fi->bits - fi->has_sign - fi->man_bits;
    fi->binades = ilog2(maxv) - ilog2(minv) + 1;
    fi->normal_binades = ilog2(maxv) - kmin_normal + 1;
}

/* FP32 from its boundary codes and field widths (2^32 codes are too many to walk here). */
static void fp32_info(FormatInfo *fi)
{
    fi->has_sign = 1;
    fi->exp_bits = 8, fi->man_bits = 23, fi->bias = 127;
    fi->max_code = 0x7F7FFFFFu, fi->min_normal_code = 0x00800000u;
    fi->max_subnormal_code = 0x007FFFFFu, fi->min_subnormal_code = 1;
    fi->inf_code = 0x7F800000u, fi->nan_code = 0x7F800001u;
    fi->max_normal = format_decode(DT_FP32, fi->max_code);
    fi->min_normal = format_decode(DT_FP32, fi->min_normal_code);
    fi->max_subnormal = format_decode(DT_FP32, fi->max_subnormal_code);
    fi->min_subnormal = format_decode(DT_FP32, fi->min_subnormal_code);
    fi->points_per_binade = 1 << fi->man_bits;
    fi->binades = ilog2(fi->max_normal) - ilog2(fi->min_subnormal) + 1;
    fi->normal_binades = ilog2(fi->max_normal) - ilog2(fi->min_normal) + 1;
    uint64_t per_sign = UINT64_C(1) << 31, specials = UINT64_C(1) << 23; /* exponent field all ones */
    fi->nan_codes = 2 * (specials - 1);
    fi->inf_codes = 2;
    fi->zero_codes = 2;
    fi->finite_codes = 2 * (per_sign - specials);
    fi->subnormal_codes = 2 * (specials - 1);
}

Status format_info(Dtype t, FormatInfo *out, Err *e)
{
    memset(out, 0, sizeof *out);
    out->dtype = t;
    switch (t) {
    case DT_E4M3:
    case DT_E5M2:
    case DT_E8M0:
    case DT_FP16:
    case DT_BF16:
        out->bits = (int)dtype_bytes(t) * 8;
        enumerate(t, out);
        return ST_OK;
    case DT_FP32:
        out->bits = 32;
        fp32_info(out);
        return ST_OK;
    default: return err_set(e, ST_USAGE, "no format descriptor for dtype '%s'", dtype_name(t));
    }
}
