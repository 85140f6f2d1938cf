/* tests/unit/test_fp8_codec.c — E4M3 / E5M2 codecs: all 256 codes against the
 * FP8 Formats Table 1 definitions, and encoding bit for bit against NVIDIA's
 * cuda_fp8.h host conversion (every midpoint, edge and special value, plus a
 * strided sweep of more than a million floats per format and mode, and random
 * doubles). NaN is compared as "is NaN", never as bytes (NVIDIA's float path
 * drops the sign, its double path keeps the payload). */
#include <float.h>
#include <stdlib.h>

#include "fp8/codec.h"
#include "support/nv_oracle.h"
#include "test.h"

static const Dtype FMTS[2] = {DT_E4M3, DT_E5M2};
static const Fp8Sat SATS[2] = {FP8_SATFINITE, FP8_NOSAT};

/* The value of a code straight from the paper's definition:
 * (-1)^S * 2^(E - bias) * (1 + M / 2^m) for E > 0, (-1)^S * 2^(1 - bias) * (M / 2^m) for E = 0. */
static double table1_value(Dtype fmt, unsigned code, int *is_nan, int *is_inf)
{
    int m = fmt == DT_E4M3 ? 3 : 2, bias = fmt == DT_E4M3 ? 7 : 15;
    unsigned S = code >> 7, E = (code >> m) & ((1u << (7 - m)) - 1), M = code & ((1u << m) - 1);
    unsigned emax_field = (1u << (7 - m)) - 1;
    *is_nan = *is_inf = 0;
    if (fmt == DT_E4M3 && E == emax_field && M == 7) *is_nan = 1;
    if (fmt == DT_E5M2 && E == emax_field) *(M ? is_nan : is_inf) = 1;
    double mag = E ? ldexp(1.0 + M / (double)(1u << m), (int)E - bias) : ldexp(M / (double)(1u << m), 1 - bias);
    return S ? -mag : mag;
}

static void test_all_codes_match_table1_definition(void)
{
    for (int f = 0; f < 2; f++)
        for (unsigned c = 0; c < 256; c++) {
            int nan, inf;
            double want = table1_value(FMTS[f], c, &nan, &inf);
            float got = fp8_decode(FMTS[f], (uint8_t)c);
            CHECKF(fp8_is_nan(FMTS[f], (uint8_t)c) == nan, "%s code 0x%02X nan", dtype_name(FMTS[f]), c);
            CHECKF(fp8_is_inf(FMTS[f], (uint8_t)c) == inf, "%s code 0x%02X inf", dtype_name(FMTS[f]), c);
            if (nan)
                CHECKF(isnan(got), "%s 0x%02X decodes to %g, not NaN", dtype_name(FMTS[f]), c, got);
            else if (inf)
                CHECKF(isinf(got) && !!signbit(got) == (int)(c >> 7), "%s 0x%02X", dtype_name(FMTS[f]), c);
            else
                CHECKF((double)got == want && !signbit(got) == !signbit(want), "%s 0x%02X decodes to %.9g, want %.9g",
                       dtype_name(FMTS[f]), c, got, want);
        }
}

static void test_table1_constants(void)
{
    /* FP8 Formats for Deep Learning, Table 1 */
    CHECK(fp8_decode(DT_E4M3, 0x7E) == 448.0f && fp8_max(DT_E4M3) == 448.0f && fp8_max_code(DT_E4M3) == 0x7E);
    CHECK(fp8_decode(DT_E4M3, 0x08) == 0x1p-6f);
    CHECK(fp8_decode(DT_E4M3, 0x07) == 0.875f * 0x1p-6f);
    CHECK(fp8_decode(DT_E4M3, 0x01) == 0x1p-9f);
    CHECK(fp8_decode(DT_E5M2, 0x7B) == 57344.0f && fp8_max(DT_E5M2) == 57344.0f && fp8_max_code(DT_E5M2) == 0x7B);
    CHECK(fp8_decode(DT_E5M2, 0x04) == 0x1p-14f);
    CHECK(fp8_decode(DT_E5M2, 0x03) == 0.75f * 0x1p-14f);
    CHECK(fp8_decode(DT_E5M2, 0x01) == 0x1p-16f);
    CHECK(fp8_decode(DT_E5M2, 0x7C) == INFINITY && fp8_decode(DT_E5M2, 0xFC) == -INFINITY);
    CHECK(fp8_decode(DT_E4M3, 0x80) == 0.0f && signbit(fp8_decode(DT_E4M3, 0x80)));
    /* special-code census: E4M3 NaN only at S.1111.111, no Inf; E5M2 NaN at S.11111.{01,10,11} */
    int n4 = 0, n5 = 0, i4 = 0, i5 = 0;
    for (unsigned c = 0; c < 256; c++) {
        n4 += fp8_is_nan(DT_E4M3, (uint8_t)c), i4 += fp8_is_inf(DT_E4M3, (uint8_t)c);
        n5 += fp8_is_nan(DT_E5M2, (uint8_t)c), i5 += fp8_is_inf(DT_E5M2, (uint8_t)c);
    }
    CHECK_EQ_INT(n4, 2);
    CHECK_EQ_INT(i4, 0);
    CHECK_EQ_INT(n5, 6);
    CHECK_EQ_INT(i5, 2);
    CHECK(fp8_is_nan(DT_E4M3, 0x7F) && fp8_is_nan(DT_E4M3, 0xFF) && !fp8_is_nan(DT_E4M3, 0x7E));
    CHECK(fp8_is_nan(DT_E5M2, 0x7D) && fp8_is_nan(DT_E5M2, 0xFF) && !fp8_is_nan(DT_E5M2, 0x7C));
    /* a dtype that is not FP8 is rejected as NaN, never silently decoded */
    CHECK(fp8_encode_f32(DT_BF16, 1.0f, FP8_SATFINITE) == FP8_NAN_CODE && isnan(fp8_decode(DT_FP32, 0x38)));
}

/* Hand-worked encodings (numerics.md §1.2 and the RNE tie rules). */
static void test_hand_vectors(void)
{
    static const struct {
        Dtype f;
        Fp8Sat s;
        float x;
        uint8_t want;
    } v[] = {
        {DT_E4M3, FP8_SATFINITE, 1.0f, 0x38},
        {DT_E4M3, FP8_SATFINITE, 1.0625f, 0x38},   /* tie -> even 1.0 */
        {DT_E4M3, FP8_SATFINITE, 1.1875f, 0x3A},   /* tie between 1.125 (odd) and 1.25 */
        {DT_E4M3, FP8_SATFINITE, 0x1p-10f, 0x00},  /* half the min subnormal -> even 0 */
        {DT_E4M3, FP8_SATFINITE, 0x1.8p-9f, 0x02}, /* 1.5 quanta -> 2 */
        {DT_E4M3, FP8_SATFINITE, 0x1.4p-8f, 0x02}, /* 2.5 quanta -> 2 */
        {DT_E4M3, FP8_SATFINITE, 0x1.cp-8f, 0x04}, /* 3.5 quanta -> 4 */
        {DT_E4M3, FP8_SATFINITE, 464.0f, 0x7E},
        {DT_E4M3, FP8_NOSAT, 464.0f, 0x7E},
        {DT_E4M3, FP8_SATFINITE, 464.00003f, 0x7E},
        {DT_E4M3, FP8_NOSAT, 464.00003f, 0x7F},
        {DT_E4M3, FP8_SATFINITE, -INFINITY, 0xFE},
        {DT_E4M3, FP8_NOSAT, -INFINITY, 0xFF},
        {DT_E4M3, FP8_SATFINITE, -0.0f, 0x80},
        {DT_E4M3, FP8_SATFINITE, -1e-30f, 0x80},
        {DT_E5M2, FP8_SATFINITE, 61440.0f, 0x7B},
        {DT_E5M2, FP8_NOSAT, 61440.0f, 0x7C},
        {DT_E5M2, FP8_NOSAT, 61439.996f, 0x7B},
        {DT_E5M2, FP8_NOSAT, INFINITY, 0x7C},
        {DT_E5M2, FP8_SATFINITE, INFINITY, 0x7B},
        {DT_E5M2, FP8_SATFINITE, 0x1p-17f, 0x00},
        {DT_E5M2, FP8_SATFINITE, 0x1.000002p-17f, 0x01},
    };
    for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint8_t got = fp8_encode_f32(v[i].f, v[i].x, v[i].s);
        CHECKF(got == v[i].want, "%s %s %a -> 0x%02X, want 0x%02X", dtype_name(v[i].f),
               v[i].s == FP8_NOSAT ? "nosat" : "sat", v[i].x, got, v[i].want);
        CHECK(fp8_encode_f64(v[i].f, v[i].x, v[i].s) == got);
    }
    CHECK(fp8_is_nan(DT_E4M3, fp8_encode_f32(DT_E4M3, NAN, FP8_SATFINITE)));
    CHECK(fp8_encode_f32(DT_E5M2, -NAN, FP8_NOSAT) == 0xFF); /* our NaN keeps the sign */
    /* the double path rounds once: 1.0625 + 2^-30 is just above the tie */
    CHECK(fp8_encode_f64(DT_E4M3, 1.0625 + 0x1p-30, FP8_SATFINITE) == 0x39);
    CHECK(fp8_encode_f32(DT_E4M3, (float)(1.0625 + 0x1p-30), FP8_SATFINITE) == 0x38);
}

static void test_roundtrip_every_code(void)
{
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++)
            for (unsigned c = 0; c < 256; c++) {
                if (fp8_is_nan(FMTS[f], (uint8_t)c)) continue;
                float v = fp8_decode(FMTS[f], (uint8_t)c);
                CHECKF(fp8_encode_f32(FMTS[f], v, SATS[s]) == c || (fp8_is_inf(FMTS[f], (uint8_t)c) && !s), "%s 0x%02X",
                       dtype_name(FMTS[f]), c);
                CHECK(fp8_encode_f64(FMTS[f], v, SATS[s]) == fp8_encode_f32(FMTS[f], v, SATS[s]));
            }
}

static void test_overflow_bound(void)
{
    CHECK(!fp8_overflows(DT_E4M3, 464.0f) && fp8_overflows(DT_E4M3, nextafterf(464.0f, 1e9f)));
    CHECK(!fp8_overflows(DT_E4M3, -448.0f) && fp8_overflows(DT_E4M3, -1e30f));
    CHECK(!fp8_overflows(DT_E5M2, nextafterf(61440.0f, 0)) && fp8_overflows(DT_E5M2, 61440.0f));
    CHECK(!fp8_overflows(DT_E4M3, INFINITY) && !fp8_overflows(DT_E4M3, NAN)); /* not finite: not "overflow" */
}

/* ---- against NVIDIA --------------------------------------------------------------- */

static long mismatches;

static void cmp_f32(int f, int s, float x)
{
    uint8_t ours = fp8_encode_f32(FMTS[f], x, SATS[s]), nv = nvo_f32_to_fp8(x, f, s);
    int ok = fp8_is_nan(FMTS[f], ours) ? fp8_is_nan(FMTS[f], nv) : ours == nv;
    if (!ok && mismatches++ < 10)
        CHECKF(ok, "%s %s float %a: ours 0x%02X, NVIDIA 0x%02X", dtype_name(FMTS[f]), s ? "nosat" : "sat", x, ours, nv);
}

static void cmp_f64(int f, int s, double x)
{
    uint8_t ours = fp8_encode_f64(FMTS[f], x, SATS[s]), nv = nvo_f64_to_fp8(x, f, s);
    int ok = fp8_is_nan(FMTS[f], ours) ? fp8_is_nan(FMTS[f], nv) : ours == nv;
    if (!ok && mismatches++ < 10)
        CHECKF(ok, "%s %s double %a: ours 0x%02X, NVIDIA 0x%02X", dtype_name(FMTS[f]), s ? "nosat" : "sat", x, ours,
               nv);
}

static void test_decode_matches_nvidia(void)
{
    for (int f = 0; f < 2; f++)
        for (unsigned c = 0; c < 256; c++) {
            uint16_t h = nvo_fp8_to_halfraw((uint8_t)c, f);
            /* FP16 bits decoded independently: every FP8 value is an FP16 value */
            unsigned e = (h >> 10) & 31, m = h & 1023;
            double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, (int)e - 25) : ldexp(m, -24);
            if (h >> 15) v = -v;
            float ours = fp8_decode(FMTS[f], (uint8_t)c);
            CHECKF(isnan(v) ? isnan(ours) : (double)ours == v, "%s 0x%02X: ours %g, NVIDIA %g", dtype_name(FMTS[f]), c,
                   ours, v);
        }
}

static void test_edges_and_midpoints_match_nvidia(void)
{
    static const float specials[] = {0.0f,     -0.0f,    INFINITY,     -INFINITY, NAN,    -NAN,     FLT_MAX,
                                     -FLT_MAX, FLT_MIN,  FLT_TRUE_MIN, 464.0f,    480.0f, 61440.0f, 57344.0f,
                                     65536.0f, 0x1p-10f, 0x1p-17f,     1e30f,     -1e-30f};
    mismatches = 0;
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            for (unsigned i = 0; i < sizeof specials / sizeof specials[0]; i++) {
                cmp_f32(f, s, specials[i]);
                cmp_f64(f, s, specials[i]);
            }
            /* every code value, every midpoint between neighbours, and one float/double either side */
            for (unsigned c = 0; c < 256; c++) {
                float v = fp8_decode(FMTS[f], (uint8_t)c);
                if (!isfinite(v)) continue;
                unsigned next = (c & 0x7F) == fp8_max_code(FMTS[f]) ? c : c + 1;
                float w = (c & 0x7F) == fp8_max_code(FMTS[f]) ? v * 1.0714285714f /* past max: (max+ulp)/max */
                                                              : fp8_decode(FMTS[f], (uint8_t)next);
                float pts[2] = {v, (v + w) / 2}; /* exact: a midpoint needs one more mantissa bit */
                for (int p = 0; p < 2; p++) {
                    float x = pts[p];
                    cmp_f32(f, s, x);
                    cmp_f32(f, s, nextafterf(x, INFINITY));
                    cmp_f32(f, s, nextafterf(x, -INFINITY));
                    cmp_f64(f, s, x);
                    cmp_f64(f, s, nextafter((double)x, INFINITY));
                    cmp_f64(f, s, nextafter((double)x, -INFINITY));
                }
            }
        }
    CHECK_EQ_INT(mismatches, 0);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rnd64(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

/* Stride 4093 (prime) over all 2^32 patterns: 1,049,344 floats per format and mode. */
static void test_strided_float_sweep_matches_nvidia(void)
{
    enum { STRIDE = 4093 };
    long n = 0;
    mismatches = 0;
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            long count = 0;
            for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += STRIDE, count++) {
                uint32_t bits = (uint32_t)b;
                float x;
                memcpy(&x, &bits, sizeof x);
                cmp_f32(f, s, x);
            }
            n += count;
            CHECKF(count >= 1000000, "only %ld floats swept", count);
        }
    printf("  swept %ld floats (4 format/mode pairs)\n", n);
    CHECK_EQ_INT(mismatches, 0);
}

/* Random doubles: uniform bit patterns, plus doubles near FP8 ties that float cannot represent. */
static void test_random_doubles_match_nvidia(void)
{
    mismatches = 0;
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            for (int i = 0; i < 250000; i++) {
                uint64_t b = rnd64();
                double x;
                memcpy(&x, &b, sizeof x);
                cmp_f64(f, s, x);
            }
            for (unsigned c = 0; c < 256; c++) {
                double v = fp8_decode(FMTS[f], (uint8_t)c), w = fp8_decode(FMTS[f], (uint8_t)(c + 1));
                if (!isfinite(v) || !isfinite(w) || (c & 0x7F) == 0x7F) continue;
                double mid = (v + w) / 2;
                for (int k = 30; k <= 52; k += 2) {
                    cmp_f64(f, s, mid + fabs(mid) * ldexp(1, -k));
                    cmp_f64(f, s, mid - fabs(mid) * ldexp(1, -k));
                }
            }
        }
    CHECK_EQ_INT(mismatches, 0);
}

int main(void)
{
    RUN(test_all_codes_match_table1_definition);
    RUN(test_table1_constants);
    RUN(test_hand_vectors);
    RUN(test_roundtrip_every_code);
    RUN(test_overflow_bound);
    if (nvo_available()) {
        printf("  oracle: cuda_fp8.h from CUDA %d\n", nvo_cuda_version());
        RUN(test_decode_matches_nvidia);
        RUN(test_edges_and_midpoints_match_nvidia);
        RUN(test_strided_float_sweep_matches_nvidia);
        RUN(test_random_doubles_match_nvidia);
    } else {
        SKIP(test_decode_matches_nvidia, "cuda_fp8.h not found at build time");
        SKIP(test_edges_and_midpoints_match_nvidia, "cuda_fp8.h not found at build time");
        SKIP(test_strided_float_sweep_matches_nvidia, "cuda_fp8.h not found at build time");
        SKIP(test_random_doubles_match_nvidia, "cuda_fp8.h not found at build time");
    }
    return test_summary();
}
