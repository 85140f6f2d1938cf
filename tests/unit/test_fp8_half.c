/* tests/unit/test_fp8_half.c — BF16 and FP16 RNE conversions.
 *
 * cuda_bf16.h / cuda_fp16.h declare their conversions for C++ only, so the
 * oracle here is independent code: a nearest-value search over the sorted
 * table of every finite BF16/FP16 value (computed from the bit layout with
 * ldexp, not with the codec), ties to the even code, overflow at the midpoint
 * past the largest finite value; plus hand-worked vectors and, where the
 * compiler has it, C's own _Float16 conversion (IEEE RNE). */
#include <float.h>
#include <stdlib.h>

#include "fp8/half.h"
#include "test.h"

/* positive finite values of a 16-bit format, ascending, by code (code = index) */
static double tab[0x8000];
static int ntab;

/* value of a positive 16-bit code from the field widths */
static double layout_value(unsigned code, int man, int bias)
{
    unsigned e = code >> man, m = code & ((1u << man) - 1);
    return e ? ldexp((double)((1u << man) + m), (int)e - bias - man) : ldexp(m, 1 - bias - man);
}

static void build(int man, int bias, unsigned max_code)
{
    ntab = (int)max_code + 1;
    for (unsigned c = 0; c <= max_code; c++) tab[c] = layout_value(c, man, bias);
}

/* Nearest by exact comparison in double (a 24-bit float and a 16-bit grid point differ exactly in double). */
static uint16_t ref_encode(float xf, unsigned inf_code)
{
    double x = xf, a = fabs(x);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return 0x7FFF;
    double top = tab[ntab - 1], half_ulp = (top - tab[ntab - 2]) / 2;
    if (a >= top + half_ulp) return sign | (uint16_t)inf_code; /* the tie past max goes to the even Inf code */
    int lo = 0, hi = ntab - 1;                                 /* largest index with tab[lo] <= a */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (tab[mid] <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == ntab - 1) return sign | (uint16_t)lo;
    double dl = a - tab[lo], dh = tab[lo + 1] - a;
    int pick = dl < dh ? lo : dh < dl ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
    return sign | (uint16_t)pick;
}

static long sweep(uint16_t (*enc)(float), unsigned inf_code, const char *name)
{
    long bad = 0;
    for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += 4093) {
        uint32_t bits = (uint32_t)b;
        float x;
        memcpy(&x, &bits, sizeof x);
        uint16_t got = enc(x), want = ref_encode(x, inf_code);
        if (got != want && bad++ < 10) CHECKF(0, "%s(%a) = 0x%04X, want 0x%04X", name, x, got, want);
    }
    /* every grid point, every midpoint and one float either side */
    for (int c = 0; c + 1 < ntab; c++) {
        float pts[2] = {(float)tab[c], (float)((tab[c] + tab[c + 1]) / 2)};
        for (int p = 0; p < 2; p++)
            for (int sgn = 0; sgn < 2; sgn++) {
                float x = sgn ? -pts[p] : pts[p];
                float xs[3] = {x, nextafterf(x, INFINITY), nextafterf(x, -INFINITY)};
                for (int k = 0; k < 3; k++) {
                    uint16_t got = enc(xs[k]), want = ref_encode(xs[k], inf_code);
                    if (got != want && bad++ < 10) CHECKF(0, "%s(%a) = 0x%04X, want 0x%04X", name, xs[k], got, want);
                }
            }
    }
    return bad;
}

static void test_bf16_hand_vectors(void)
{
    CHECK(bf16_encode(1.0f) == 0x3F80);
    CHECK(bf16_encode(1.00390625f) == 0x3F80); /* 1 + 2^-8: tie -> even 1.0 */
    CHECK(bf16_encode(1.01171875f) == 0x3F82); /* 1 + 3*2^-8: tie -> even 1 + 2^-6 */
    CHECK(bf16_encode(1.00390636f) == 0x3F81); /* just above the tie */
    CHECK(bf16_encode(-2.0f) == 0xC000);
    CHECK(bf16_encode(FLT_MAX) == 0x7F80);     /* above the tie past BF16's max */
    CHECK(bf16_encode(0x1.fep127f) == 0x7F7F); /* BF16's max */
    CHECK(bf16_encode(INFINITY) == 0x7F80 && bf16_encode(-INFINITY) == 0xFF80);
    CHECK(bf16_encode(NAN) == 0x7FFF && bf16_encode(-NAN) == 0x7FFF);
    CHECK(bf16_encode(-0.0f) == 0x8000);
    CHECK(bf16_encode(FLT_TRUE_MIN) == 0x0000); /* 2^-149 < half of BF16's 2^-133 */
    CHECK(bf16_encode(0x1p-133f) == 0x0001);
    CHECK(bf16_decode(0x3F80) == 1.0f && bf16_decode(0x0001) == 0x1p-133f && isnan(bf16_decode(0x7FC0)));
    CHECK(bf16_round(3.14159265f) == 3.140625f);
}

static void test_fp16_hand_vectors(void)
{
    CHECK(fp16_encode(1.0f) == 0x3C00);
    CHECK(fp16_encode(1.00048828125f) == 0x3C00); /* 1 + 2^-11: tie -> even */
    CHECK(fp16_encode(1.00146484375f) == 0x3C02); /* 1 + 3*2^-11: tie -> even */
    CHECK(fp16_encode(65504.0f) == 0x7BFF);
    CHECK(fp16_encode(65519.996f) == 0x7BFF);
    CHECK(fp16_encode(65520.0f) == 0x7C00); /* tie between 65504 (odd) and Inf */
    CHECK(fp16_encode(-1e6f) == 0xFC00);
    CHECK(fp16_encode(0x1p-24f) == 0x0001); /* min subnormal */
    CHECK(fp16_encode(0x1p-25f) == 0x0000); /* half of it -> even 0 */
    CHECK(fp16_encode(0x1.000002p-25f) == 0x0001);
    CHECK(fp16_encode(0x1p-14f) == 0x0400); /* min normal */
    CHECK(fp16_encode(NAN) == 0x7FFF && fp16_encode(-0.0f) == 0x8000);
    CHECK(fp16_decode(0x7BFF) == 65504.0f && fp16_decode(0x0001) == 0x1p-24f && fp16_decode(0xFC00) == -INFINITY);
    CHECK(fp16_decode(0x8001) == -0x1p-24f && isnan(fp16_decode(0x7E00)));
    float a[3] = {1.0f, 0.1f, 70000.0f};
    fp16_round_array(a, 3);
    CHECK(a[0] == 1.0f && a[1] == 0.0999755859375f && a[2] == INFINITY);
}

static void test_decode_every_code(void)
{
    for (unsigned c = 0; c < 0x10000; c++) {
        double s = (c & 0x8000) ? -1 : 1;
        unsigned mag = c & 0x7FFF;
        double want16 = mag < 0x7C00 ? s * layout_value(mag, 10, 15) : mag == 0x7C00 ? s * INFINITY : NAN;
        double want_bf = mag < 0x7F80 ? s * layout_value(mag, 7, 127) : mag == 0x7F80 ? s * INFINITY : NAN;
        float g16 = fp16_decode((uint16_t)c), gbf = bf16_decode((uint16_t)c);
        CHECKF(isnan(want16) ? isnan(g16) : (double)g16 == want16, "fp16 0x%04X", c);
        CHECKF(isnan(want_bf) ? isnan(gbf) : (double)gbf == want_bf, "bf16 0x%04X", c);
        if (!isnan(want16)) CHECKF(fp16_encode(g16) == c, "fp16 round trip 0x%04X", c);
        if (!isnan(want_bf)) CHECKF(bf16_encode(gbf) == c, "bf16 round trip 0x%04X", c);
    }
}

static void test_bf16_matches_nearest_search(void)
{
    build(7, 127, 0x7F7F);
    CHECK_EQ_INT(sweep(bf16_encode, 0x7F80, "bf16_encode"), 0);
}

static void test_fp16_matches_nearest_search(void)
{
    build(10, 15, 0x7BFF);
    CHECK_EQ_INT(sweep(fp16_encode, 0x7C00, "fp16_encode"), 0);
}

#ifdef __FLT16_MAX__
/* The compiler's own float -> _Float16 conversion (IEEE RNE) on the same sweep. */
static void test_fp16_matches_compiler_float16(void)
{
    long bad = 0;
    for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += 997) {
        uint32_t bits = (uint32_t)b;
        float x;
        memcpy(&x, &bits, sizeof x);
        _Float16 h = (_Float16)x;
        uint16_t want;
        memcpy(&want, &h, sizeof want);
        uint16_t got = fp16_encode(x);
        int ok = isnan(x) ? (got & 0x7FFF) > 0x7C00 : got == want;
        if (!ok && bad++ < 10) CHECKF(0, "fp16_encode(%a) = 0x%04X, _Float16 gives 0x%04X", x, got, want);
    }
    CHECK_EQ_INT(bad, 0);
}
#endif

int main(void)
{
    RUN(test_bf16_hand_vectors);
    RUN(test_fp16_hand_vectors);
    RUN(test_decode_every_code);
    RUN(test_bf16_matches_nearest_search);
    RUN(test_fp16_matches_nearest_search);
#ifdef __FLT16_MAX__
    RUN(test_fp16_matches_compiler_float16);
#else
    SKIP(test_fp16_matches_compiler_float16, "this compiler has no _Float16");
#endif
    return test_summary();
}
