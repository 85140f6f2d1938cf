/* tests/unit/test_fp8_format.c — descriptors computed from the codecs must equal
 * FP8 Formats Table 1 (E4M3/E5M2), FP8-LM Table 9 (normal ranges of FP32, FP16,
 * BF16, E4M3, E5M2) and the IEEE/OCP definitions. */
#include <float.h>

#include "fp8/format.h"
#include "test.h"

static FormatInfo get(Dtype t)
{
    FormatInfo fi;
    Err e;
    CHECK(format_info(t, &fi, &e) == ST_OK);
    return fi;
}

static void test_e4m3(void)
{
    FormatInfo f = get(DT_E4M3);
    CHECK_EQ_INT(f.bias, 7);
    CHECK_EQ_INT(f.exp_bits, 4);
    CHECK_EQ_INT(f.man_bits, 3);
    CHECK(f.max_normal == 448 && f.min_normal == 0x1p-6 && f.max_subnormal == 0.875 * 0x1p-6 &&
          f.min_subnormal == 0x1p-9);
    CHECK_EQ_INT(f.binades, 18); /* the seed: reclaiming the special codes takes E4M3 from 17 binades to 18 */
    CHECK_EQ_INT(f.normal_binades, 15);
    CHECK_EQ_INT(f.points_per_binade, 8);
    CHECK_EQ_U64(f.finite_codes, 254);
    CHECK_EQ_U64(f.subnormal_codes, 14);
    CHECK_EQ_U64(f.nan_codes, 2);
    CHECK_EQ_U64(f.inf_codes, 0);
    CHECK_EQ_U64(f.zero_codes, 2);
    CHECK(f.inf_code == FMT_NO_CODE && f.nan_code == 0x7F);
    CHECK(f.max_code == 0x7E && f.min_normal_code == 0x08 && f.max_subnormal_code == 0x07 && f.min_subnormal_code == 1);
}

static void test_e5m2(void)
{
    FormatInfo f = get(DT_E5M2);
    CHECK_EQ_INT(f.bias, 15);
    CHECK_EQ_INT(f.exp_bits, 5);
    CHECK_EQ_INT(f.man_bits, 2);
    CHECK(f.max_normal == 57344 && f.min_normal == 0x1p-14 && f.max_subnormal == 0.75 * 0x1p-14 &&
          f.min_subnormal == 0x1p-16);
    CHECK_EQ_INT(f.binades, 32);
    CHECK_EQ_INT(f.normal_binades, 30);
    CHECK_EQ_INT(f.points_per_binade, 4);
    CHECK_EQ_U64(f.finite_codes, 248);
    CHECK_EQ_U64(f.subnormal_codes, 6);
    CHECK_EQ_U64(f.nan_codes, 6);
    CHECK_EQ_U64(f.inf_codes, 2);
    CHECK(f.inf_code == 0x7C && f.nan_code == 0x7D && f.max_code == 0x7B);
    /* E5M2's top is 128x E4M3's, with half the grid points per binade: range traded for resolution */
    CHECK(f.max_normal / get(DT_E4M3).max_normal == 128);
}

static void test_wide_formats(void)
{
    FormatInfo h = get(DT_FP16), b = get(DT_BF16), s = get(DT_FP32), m = get(DT_E8M0);
    CHECK(h.max_normal == 65504 && h.min_normal == 0x1p-14 && h.min_subnormal == 0x1p-24 && h.bias == 15);
    CHECK(h.man_bits == 10 && h.exp_bits == 5 && h.binades == 40 && h.nan_codes == 2046 && h.inf_codes == 2);
    CHECK(b.max_normal == 0x1.fep127 && b.min_normal == 0x1p-126 && b.min_subnormal == 0x1p-133 && b.bias == 127);
    CHECK(b.man_bits == 7 && b.exp_bits == 8);
    CHECK(s.max_normal == FLT_MAX && s.min_normal == FLT_MIN && s.min_subnormal == FLT_TRUE_MIN && s.bias == 127);
    CHECK(s.man_bits == 23 && s.exp_bits == 8 && s.normal_binades == 254);
    /* BF16 keeps FP32's exponent range (Table 9: both 1.18e-38 .. 3.4e38) */
    CHECK(b.min_normal == s.min_normal && b.normal_binades == s.normal_binades);
    /* E8M0: unsigned powers of two 2^-127 .. 2^127, one NaN, no zero, no subnormals */
    CHECK(m.bias == 127 && m.man_bits == 0 && m.exp_bits == 8 && !m.has_sign);
    CHECK(m.min_normal == 0x1p-127 && m.max_normal == 0x1p127 && m.subnormal_codes == 0 && m.zero_codes == 0);
    CHECK(m.nan_codes == 1 && m.nan_code == 0xFF && m.points_per_binade == 1 && m.binades == 255);
    /* its boundary codes: 0x00 = 2^(0-127) is the smallest value and already normal, 0xFE = 2^(254-127) the
     * largest; with no subnormals both subnormal codes say "none" and the subnormal range is empty */
    CHECK(m.min_normal_code == 0x00 && m.max_code == 0xFE && m.inf_code == FMT_NO_CODE);
    CHECK(m.max_subnormal_code == FMT_NO_CODE && m.min_subnormal_code == FMT_NO_CODE);
    CHECK(m.max_subnormal == 0 && m.min_subnormal == 0);
    FormatInfo x;
    Err e;
    CHECK(format_info(DT_NONE, &x, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "none");
}

int main(void)
{
    RUN(test_e4m3);
    RUN(test_e5m2);
    RUN(test_wide_formats);
    return test_summary();
}
