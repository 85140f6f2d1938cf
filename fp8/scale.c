/* fp8/scale.c — scales from amax with TE's policies (see scale.h). */
#include "fp8/scale.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/format.h"

static const char *const case_names[AMAX_COUNT_] = {"ok", "zero", "tiny", "inf", "nan"};

const char *amax_case_name(AmaxCase c) { return (unsigned)c < AMAX_COUNT_ ? case_names[c] : "?"; }

ScaleCfg scale_cfg(Dtype fmt)
{
    ScaleCfg c = {fmt, 0, 0, 0.0f};
    return c;
}

float scale_target(const ScaleCfg *c) { return fp8_max(c->fmt) * powf(2.0f, (float)-c->margin); }

float scale_pow2_floor(float scale)
{
    uint32_t b;
    memcpy(&b, &scale, sizeof b);
    b &= 0xFF800000u;
    memcpy(&scale, &b, sizeof b);
    return scale;
}

float scale_inv_of(float scale) { return 1.0f / scale; }

float scale_from_amax(float amax, const ScaleCfg *c, AmaxCase *why)
{
    AmaxCase w = AMAX_OK;
    float scale = 1.0f;
    if (amax < c->epsilon) amax = c->epsilon; /* NaN compares false and stays NaN */
    if (isnan(amax))
        w = AMAX_NAN;
    else if (isinf(amax))
        w = AMAX_INF;
    else if (amax <= 0.0f)
        w = AMAX_ZERO;
    else {
        scale = scale_target(c) / amax;
        if (isinf(scale)) scale = FLT_MAX, w = AMAX_TINY;
        if (c->pow2) scale = scale_pow2_floor(scale);
    }
    if (why) *why = w;
    return scale;
}

float scale_update(float amax, float prev, const ScaleCfg *c, AmaxCase *why)
{
    AmaxCase w = AMAX_OK;
    float scale;
    if (isfinite(amax) && amax > 0.0f) {
        scale = scale_target(c) / amax;
    } else {
        scale = prev;
        w = isnan(amax) ? AMAX_NAN : isinf(amax) ? AMAX_INF : AMAX_ZERO;
    }
    if (isinf(scale)) scale = FLT_MAX, w = AMAX_TINY;
    if (c->pow2 && (w == AMAX_OK || w == AMAX_TINY)) scale = scale_pow2_floor(scale);
    if (why) *why = w;
    return scale;
}

/* ---- bounds ----------------------------------------------------------------------- */

static uint8_t code_of(Dtype fmt, float scale, uint32_t xbits)
{
    float x;
    memcpy(&x, &xbits, sizeof x);
    return fp8_encode_f32(fmt, x * scale, FP8_SATFINITE);
}

/* Largest nonnegative fp32 bit pattern x with code(x) <= c (codes of nonnegative x are monotone in x). */
static uint32_t last_at_most(Dtype fmt, float scale, uint8_t c)
{
    uint32_t lo = 0, hi = 0x7F7FFFFFu; /* code(lo) <= c holds at lo = 0 */
    if (code_of(fmt, scale, hi) <= c) return hi;
    while (lo + 1 < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (code_of(fmt, scale, mid) <= c)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static float bits_f32(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

int scale_bounds(Dtype fmt, float scale, ScaleBounds *b)
{
    FormatInfo fi;
    if (!dtype_is_fp8(fmt) || !(scale > 0.0f) || !isfinite(scale) || format_info(fmt, &fi, NULL)) return -1;
    double s = scale, half_ulp_top = (fi.max_normal - format_decode(fmt, fi.max_code - 1)) / 2;
    b->flush_below = fi.min_subnormal / 2 / s;
    b->min_sub_below = fi.min_subnormal / s;
    b->normal_below = fi.min_normal / s;
    b->saturate_above = fi.max_normal / s;
    b->overflow_above = (fi.max_normal + half_ulp_top) / s;
    uint32_t z = last_at_most(fmt, scale, 0), one = last_at_most(fmt, scale, 1);
    b->zero_max_f32 = bits_f32(z);
    b->min_sub_from_f32 = bits_f32(z + 1);
    b->min_sub_max_f32 = bits_f32(one);
    return 0;
}
