/* tests/unit/test_oracle_fp8_more.c — edges of fp8/ worked out by hand: the cast's bounds for a scale so small
 * that every finite FP32 value flushes to zero (fp8/scale.c scale_bounds), and the margin range delayed
 * scaling accepts (fp8/delayed.c delayed_init), and what the codec does with a dtype that is not FP8 (fp8/codec.c:
 * codec.h says every encoder gives FP8_NAN_CODE, 0x7F, and the decoder NaN). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/delayed.h"
#include "fp8/scale.h"
#include "test.h"

/* E4M3 with scale 2^-140 (a positive, finite, subnormal FP32 scale). The largest finite FP32 value times the
 * scale is (2 - 2^-23) x 2^127 x 2^-140 < 2^-12, below half the minimum subnormal (2^-9 / 2 = 2^-10), so every
 * finite x casts to code 0: the largest x with code 0 and the largest with code at most 0x01 are both FLT_MAX,
 * and no finite x reaches code 0x01 (Inf). The real-number bounds, exact in double: flush 2^-10 / 2^-140 =
 * 2^130, minimum subnormal 2^-9 / 2^-140 = 2^131, minimum normal 2^-6 / 2^-140 = 2^134, saturation 448 x 2^140,
 * overflow (448 + (448 - 416) / 2) x 2^140 = 464 x 2^140. */
static void test_bounds_all_flush(void)
{
    ScaleBounds b;
    memset(&b, 0, sizeof b);
    CHECK_EQ_INT(scale_bounds(DT_E4M3, ldexpf(1.0f, -140), &b), 0);
    CHECK(b.zero_max_f32 == FLT_MAX);
    CHECK(isinf(b.min_sub_from_f32) && b.min_sub_from_f32 > 0);
    CHECK(b.min_sub_max_f32 == FLT_MAX);
    CHECK(b.flush_below == ldexp(1.0, 130));
    CHECK(b.min_sub_below == ldexp(1.0, 131));
    CHECK(b.normal_below == ldexp(1.0, 134));
    CHECK(b.saturate_above == ldexp(448.0, 140));
    CHECK(b.overflow_above == ldexp(464.0, 140));
}

/* The margin is accepted in [-64, 64], both ends included, and refused one past either end, naming it. */
static void test_delayed_margin_range(void)
{
    float hist[4];
    DelayedState s;
    Err e = {0};
    DelayedCfg cfg = {.fmt = DT_E4M3, .hist_len = 4, .algo = AMAX_ALGO_MAX};
    const int ok[2] = {-64, 64}, bad[2] = {-65, 65};
    for (int i = 0; i < 2; i++) {
        cfg.margin = ok[i];
        CHECKF(delayed_init(&s, &cfg, hist, &e) == ST_OK, "margin %d: %s", ok[i], e.msg);
        cfg.margin = bad[i];
        e = (Err){0};
        CHECK_EQ_INT(delayed_init(&s, &cfg, hist, &e), ST_USAGE);
        char want[48];
        snprintf(want, sizeof want, "margin %d is outside [-64, 64]", bad[i]);
        CHECK_CONTAINS(e.msg, want);
    }
}

/* BF16 and FP32 are not FP8 formats: every value — zero, one, a negative, infinity, NaN — encodes to 0x7F through
 * each entry point (float, double, the bulk array form) and every code decodes to NaN. */
static void test_codec_not_fp8(void)
{
    const Dtype not_fp8[2] = {DT_BF16, DT_FP32};
    const double xs[5] = {0.0, 1.0, -2.5, INFINITY, NAN};
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < 5; i++) {
            CHECKF(fp8_encode_f64(not_fp8[d], xs[i], FP8_SATFINITE) == 0x7F, "f64 %g", xs[i]);
            CHECKF(fp8_encode_f64(not_fp8[d], xs[i], FP8_NOSAT) == 0x7F, "f64 %g nosat", xs[i]);
            CHECKF(fp8_encode_f32(not_fp8[d], (float)xs[i], FP8_SATFINITE) == 0x7F, "f32 %g", xs[i]);
        }
        const float xf[3] = {0.0f, 1.0f, -3.0f};
        uint8_t out[3] = {0, 0, 0};
        fp8_encode_f32_array(not_fp8[d], xf, 1.0f, out, 3, FP8_SATFINITE);
        CHECK(out[0] == 0x7F && out[1] == 0x7F && out[2] == 0x7F);
        CHECK(isnan(fp8_decode(not_fp8[d], 0x00)) && isnan(fp8_decode(not_fp8[d], 0x38)));
    }
}

int main(void)
{
    RUN(test_bounds_all_flush);
    RUN(test_delayed_margin_range);
    RUN(test_codec_not_fp8);
    return test_summary();
}
