/* tests/unit/test_fp8_e8m0.c — the E8M0 scale codec against NVIDIA's
 * round-toward-zero / round-up conversions and an independent frexp() formula,
 * and the two named MX scale rules on the values where they disagree. */
#include <float.h>

#include "fp8/codec.h"
#include "support/nv_oracle.h"
#include "test.h"

/* Independent reference for finite nonzero x: clamp(floor|ceil(log2|x|) + 127, 0, 254), 0xFF past 254 under NOSAT. */
static uint8_t ref_e8m0(double x, E8m0Round r, Fp8Sat s)
{
    int e;
    double m = frexp(fabs(x), &e); /* |x| = m * 2^e, m in [0.5, 1) */
    long k = e - 1;                /* floor(log2|x|) */
    if (r == E8M0_RP && m != 0.5) k++;
    long b = k + 127;
    if (b < 0) return 0;
    if (b > 254) return s == FP8_SATFINITE || r == E8M0_RZ ? 0xFE : 0xFF;
    return (uint8_t)b;
}

static void test_decode(void)
{
    CHECK(e8m0_decode(0x7F) == 1.0f);
    CHECK(e8m0_decode(0x00) == 0x1p-127f); /* a float subnormal, exact */
    CHECK(e8m0_decode(0xFE) == 0x1p127f);
    CHECK(isnan(e8m0_decode(0xFF)) && isnan(e8m0_decode_rcp(0xFF)));
    for (unsigned c = 0; c < 255; c++) {
        CHECKF((double)e8m0_decode((uint8_t)c) == ldexp(1, (int)c - 127), "0x%02X", c);
        CHECKF((double)e8m0_decode_rcp((uint8_t)c) == ldexp(1, 127 - (int)c), "0x%02X", c);
    }
}

static void test_encode_specials_and_formula(void)
{
    static const Fp8Sat S[2] = {FP8_SATFINITE, FP8_NOSAT};
    for (int s = 0; s < 2; s++)
        for (int r = 0; r < 2; r++) {
            E8m0Round rr = (E8m0Round)r;
            CHECK(e8m0_encode_f32(0.0f, rr, S[s]) == 0x00 && e8m0_encode_f32(-0.0f, rr, S[s]) == 0x00);
            CHECK(e8m0_encode_f32(NAN, rr, S[s]) == 0xFF);
            CHECK(e8m0_encode_f32(INFINITY, rr, S[s]) == (S[s] == FP8_SATFINITE ? 0xFE : 0xFF));
            CHECK(e8m0_encode_f32(1.0f, rr, S[s]) == 0x7F && e8m0_encode_f32(-1.0f, rr, S[s]) == 0x7F);
            CHECK(e8m0_encode_f32(FLT_TRUE_MIN, rr, S[s]) == 0x00);
        }
    CHECK(e8m0_encode_f32(3.0f, E8M0_RZ, FP8_SATFINITE) == 0x80);
    CHECK(e8m0_encode_f32(3.0f, E8M0_RP, FP8_SATFINITE) == 0x81);
    CHECK(e8m0_encode_f32(FLT_MAX, E8M0_RZ, FP8_NOSAT) == 0xFE);
    CHECK(e8m0_encode_f32(FLT_MAX, E8M0_RP, FP8_NOSAT) == 0xFF);
    CHECK(e8m0_encode_f32(FLT_MAX, E8M0_RP, FP8_SATFINITE) == 0xFE);
    CHECK(e8m0_encode_f64(0x1p200, E8M0_RZ, FP8_SATFINITE) == 0xFE);
    CHECK(e8m0_encode_f64(0x1p200, E8M0_RZ, FP8_NOSAT) == 0xFE); /* RZ never overflows */
    CHECK(e8m0_encode_f64(0x1p200, E8M0_RP, FP8_NOSAT) == 0xFF);
    CHECK(e8m0_encode_f64(0x1p-200, E8M0_RP, FP8_SATFINITE) == 0x00);
    /* formula, over a strided sweep of finite nonzero floats */
    long bad = 0;
    for (uint64_t b = 1; b < 0x7F800000u; b += 65521) {
        uint32_t bits = (uint32_t)b;
        float x;
        memcpy(&x, &bits, sizeof x);
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < 2; s++)
                bad += e8m0_encode_f32(x, (E8m0Round)r, S[s]) != ref_e8m0(x, (E8m0Round)r, S[s]);
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_matches_nvidia(void)
{
    long bad = 0, n = 0;
    for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += 4093) {
        uint32_t bits = (uint32_t)b;
        float x;
        memcpy(&x, &bits, sizeof x);
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < 2; s++) {
                uint8_t ours = e8m0_encode_f32(x, (E8m0Round)r, (Fp8Sat)s), nv = nvo_f32_to_e8m0(x, r, s);
                uint8_t ours_d = e8m0_encode_f64(x, (E8m0Round)r, (Fp8Sat)s), nv_d = nvo_f64_to_e8m0(x, r, s);
                if ((ours != nv || ours_d != nv_d) && bad++ < 10)
                    CHECKF(0, "%a rnd %d nosat %d: ours 0x%02X/0x%02X, NVIDIA 0x%02X/0x%02X", x, r, s, ours, ours_d, nv,
                           nv_d);
                n++;
            }
    }
    uint64_t st = 0x2545F4914F6CDD1Du; /* xorshift64: random double bit patterns */
    for (int i = 0; i < 200000; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        double x;
        memcpy(&x, &st, sizeof x);
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < 2; s++)
                if (e8m0_encode_f64(x, (E8m0Round)r, (Fp8Sat)s) != nvo_f64_to_e8m0(x, r, s) && bad++ < 10)
                    CHECKF(0, "double %a rnd %d nosat %d", x, r, s);
    }
    static const double dspecials[] = {0x1p-127, 0x1.8p-128, 0x1p127, 0x1.000001p127, 0x1p128,   0x1p-1074, 1e300,
                                       -1e300,   0.0,        -0.0,    INFINITY,       -INFINITY, NAN,       -NAN};
    for (unsigned i = 0; i < sizeof dspecials / sizeof dspecials[0]; i++)
        for (int r = 0; r < 2; r++)
            for (int s = 0; s < 2; s++) {
                double x = dspecials[i];
                CHECKF(e8m0_encode_f64(x, (E8m0Round)r, (Fp8Sat)s) == nvo_f64_to_e8m0(x, r, s), "%a rnd %d nosat %d", x,
                       r, s);
                CHECKF(e8m0_encode_f32((float)x, (E8m0Round)r, (Fp8Sat)s) == nvo_f32_to_e8m0((float)x, r, s),
                       "(float)%a rnd %d nosat %d", x, r, s);
            }
    for (unsigned c = 0; c < 256; c++) {
        uint32_t bits = (uint32_t)nvo_e8m0_to_bf16raw((uint8_t)c) << 16;
        float nv;
        memcpy(&nv, &bits, sizeof nv);
        float ours = e8m0_decode((uint8_t)c);
        CHECKF(isnan(nv) ? isnan(ours) : ours == nv, "decode 0x%02X: ours %a, NVIDIA %a", c, ours, nv);
    }
    printf("  compared %ld float conversions (x2 with the double path)\n", n);
    CHECK_EQ_INT(bad, 0);
}

/* numerics.md §1.3: where OCP floor and cuBLAS/TE ceil disagree. */
static void test_mx_scale_rules(void)
{
    static const struct {
        float amax;
        int ceil_exp, floor_exp; /* unbiased exponent of scale_inv */
    } v[] = {
        {448.0f, 0, 0}, {449.0f, 1, 0}, {511.0f, 1, 0},  {512.0f, 1, 1},
        {896.0f, 1, 1}, {1.0f, -8, -8}, {1.75f, -8, -8}, {1.76f, -7, -8}, /* mantissa in (1.75, 2): the rules split */
    };
    for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++) {
        CHECKF(e8m0_scale_from_amax(v[i].amax, DT_E4M3, E8M0_RULE_CEIL) == v[i].ceil_exp + 127, "ceil %g", v[i].amax);
        CHECKF(e8m0_scale_from_amax(v[i].amax, DT_E4M3, E8M0_RULE_FLOOR) == v[i].floor_exp + 127, "floor %g",
               v[i].amax);
    }
    /* E5M2: fmax 57344 = 1.75 * 2^15 */
    CHECK(e8m0_scale_from_amax(57344.0f, DT_E5M2, E8M0_RULE_CEIL) == 127);
    CHECK(e8m0_scale_from_amax(60000.0f, DT_E5M2, E8M0_RULE_CEIL) == 128);
    CHECK(e8m0_scale_from_amax(60000.0f, DT_E5M2, E8M0_RULE_FLOOR) == 127);
    /* specials and clamps, both rules */
    for (int r = 0; r < 2; r++) {
        E8m0Rule rule = (E8m0Rule)r;
        CHECK(e8m0_scale_from_amax(0.0f, DT_E4M3, rule) == 0x00);
        CHECK(e8m0_scale_from_amax(NAN, DT_E4M3, rule) == 0xFF);
        CHECK(e8m0_scale_from_amax(INFINITY, DT_E4M3, rule) == 0xFE);
        CHECK(e8m0_scale_from_amax(1e-30f, DT_E4M3, rule) == 19);   /* 2^-100 binade: -108 + 127 either way */
        CHECK(e8m0_scale_from_amax(1e30f, DT_E4M3, rule) == 218);   /* 2^99 binade: 91 + 127 */
        CHECK(e8m0_scale_from_amax(1e-37f, DT_E4M3, rule) == 0x00); /* 2^-131 clamps to 2^-127 */
        CHECK(e8m0_scale_from_amax(FLT_MAX, DT_E4M3, rule) == (rule == E8M0_RULE_CEIL ? 247 : 246)); /* 2^120 / 2^119 */
    }
    /* the ceil rule never lets the block amax overflow: amax * 2^(127-e) stays <= fmax */
    long over = 0;
    for (uint64_t b = 1; b < 0x7F800000u; b += 8191) {
        uint32_t bits = (uint32_t)b;
        float a;
        memcpy(&a, &bits, sizeof a);
        uint8_t e = e8m0_scale_from_amax(a, DT_E4M3, E8M0_RULE_CEIL);
        if (e == 0 || e == 0xFE) continue; /* clamped at the ends of E8M0's range */
        over += a * e8m0_decode_rcp(e) > 448.0f;
    }
    CHECK_EQ_INT(over, 0);
    E8m0Rule r;
    CHECK(e8m0_rule_parse("ocp", &r) == 0 && r == E8M0_RULE_FLOOR);
    CHECK(e8m0_rule_parse("TE", &r) == 0 && r == E8M0_RULE_CEIL);
    CHECK(e8m0_rule_parse("round", &r) == -1);
}

int main(void)
{
    RUN(test_decode);
    RUN(test_encode_specials_and_formula);
    RUN(test_mx_scale_rules);
    if (nvo_e8m0_available())
        RUN(test_matches_nvidia);
    else
        SKIP(test_matches_nvidia, "cuda_fp8.h with E8M0 conversions (CUDA >= 12.8) not found at build time");
    return test_summary();
}
