/* tests/unit/test_oracle_fp8.c — the synthetic-tensor generator and the
 * quantizer's counts, against values worked out independently.
 *
 * The generator is xoshiro256** seeded through splitmix64 (fp8/synth.h). Its
 * first outputs for seed 1 below were computed with a separate implementation
 * written from the published algorithms (Vigna's splitmix64 and Blackman and
 * Vigna's xoshiro256**), not with fp8/: a changed constant, shift or seeding
 * loop changes them, and with them every "measured" quant-error figure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fp8/blockgemm.h"
#include "fp8/codec.h"
#include "fp8/delayed.h"
#include "fp8/format.h"
#include "fp8/granularity.h"
#include "fp8/minifloat.h"
#include "fp8/qerror.h"
#include "fp8/quant.h"
#include "fp8/synth.h"
#include "test.h"

/* splitmix64 from seed 1: state += 0x9E3779B97F4A7C15, then the two xor-shift-multiply rounds;
 * four outputs seed xoshiro256**, whose outputs are rotl(s1 * 5, 7) * 9 */
static void test_generator_stream(void)
{
    Rng r;
    rng_seed(&r, 1);
    CHECK_EQ_U64(r.s[0], 0x910A2DEC89025CC1ull);
    CHECK_EQ_U64(r.s[1], 0xBEEB8DA1658EEC67ull);
    CHECK_EQ_U64(r.s[2], 0xF893A2EEFB32555Eull);
    CHECK_EQ_U64(r.s[3], 0x71C18690EE42C90Bull);
    CHECK_EQ_U64(rng_u64(&r), 0xB3F2AF6D0FC710C5ull);
    CHECK_EQ_U64(rng_u64(&r), 0x853B559647364CEAull);
    /* uniform: the top 53 bits, centred in their cell: ((0x92F89756082A4514 >> 11) + 0.5) x 2^-53 */
    CHECK(rng_uniform(&r) == ((double)(0x92F89756082A4514ull >> 11) + 0.5) * 0x1p-53);
}

/* Per-tensor E4M3 current scaling of {1000, 1, -0.001, 0}: amax 1000, scale 448 / 1000 = 0.448.
 *   1000 x 0.448 = 448 -> the largest finite code 0x7E, in range after scaling: not saturated
 *   1 x 0.448 = 0.448 in [0.25, 0.5): steps of 2^-5; 0.448 / 2^-5 = 14.34 -> 14 x 2^-5 = 0.4375
 *     = 1.75 x 2^-2: exponent field -2 + 7 = 5, mantissa .110 -> 0x2E
 *   -0.001 x 0.448 = -0.000448, below half the smallest subnormal 2^-9 / 2 = 0.000977: -0 (0x80),
 *     a flushed value
 *   0 -> 0x00, not counted as flushed (it was zero)
 * Counts: 4 elements, 0 saturated, 1 flushed, 0 non-finite. */
static void test_quant_counts(void)
{
    const float x[4] = {1000.0f, 1.0f, -0.001f, 0.0f};
    uint8_t codes[4];
    float scale = 0, scale_inv = 0, amax = 0;
    QuantBufs out = {.codes = codes, .scale = &scale, .scale_inv = &scale_inv, .amax = &amax};
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_TENSOR);
    QuantCounts k = {0};
    Err e = {0};
    CHECKF(quant_tensor(&cfg, x, 1, 4, &out, &k, &e) == ST_OK, "%s", e.msg);
    CHECK(amax == 1000.0f && scale == 448.0f / 1000.0f && scale_inv == 1.0f / scale);
    CHECK_EQ_U64(codes[0], 0x7E);
    CHECK_EQ_U64(codes[1], 0x2E);
    CHECK_EQ_U64(codes[2], 0x80);
    CHECK_EQ_U64(codes[3], 0x00);
    CHECK_EQ_U64(k.n, 4);
    CHECK_EQ_U64(k.saturated, 0);
    CHECK_EQ_U64(k.flushed, 1);
    CHECK_EQ_U64(k.nonfinite, 0);
}

/* 1x32 (MX) blocks keep E8M0 scales; the FP32 multiplier buffer is optional there (quant.h). One block of 32:
 * x = 6 once, 1 elsewhere. Ceil rule: scale code = ceil(log2(6 / 448)) = ceil(-6.22) = -6, biased 127 - 6 =
 * 121; the multiplier 2^6 = 64 makes 6 -> 384 = 1.5 x 2^8 (E4M3 S.1111.100 = 0x7C) and 1 -> 64 = 2^6
 * (S.1101.000 = 0x68). */
static void test_mx_without_fp32_scales(void)
{
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = i == 5 ? 6.0f : 1.0f;
    uint8_t codes[32], e8 = 0;
    QuantBufs out = {.codes = codes, .e8m0 = &e8};
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_1X32);
    QuantCounts k = {0};
    Err e = {0};
    CHECKF(quant_tensor(&cfg, x, 1, 32, &out, &k, &e) == ST_OK, "%s", e.msg);
    CHECK_EQ_U64(e8, 121);
    CHECK_EQ_U64(codes[5], 0x7C);
    CHECK_EQ_U64(codes[0], 0x68);
    CHECK_EQ_U64(codes[31], 0x68);
    /* a granularity past the enum is refused, not indexed */
    cfg.gran = (Granularity)(GRAN_COUNT_ + 1);
    CHECK(quant_tensor(&cfg, x, 1, 32, &out, &k, &e) == ST_USAGE);
    /* an FP32-scaled granularity without its multipliers is refused */
    cfg = quant_cfg(DT_E4M3, GRAN_1X128);
    CHECK(quant_tensor(&cfg, x, 1, 32, &out, &k, &e) == ST_SOFTWARE);
}

/* The formats table from the bit layouts (OCP FP8 spec, IEEE 754 binary16), by hand.
 *   E4M3: bias 7, no Inf, NaN = S.1111.111 (2 codes). Largest S.1111.110 = 1.75 x 2^8 = 448; smallest
 *     normal 2^(1-7) = 2^-6; subnormals m/8 x 2^-6: 7 per sign, largest 0.875 x 2^-6, smallest 2^-9.
 *     Nonzero values span 2^-9 .. 2^8: 18 binades, normals 2^-6 .. 2^8: 15. Finite codes 256 - 2 = 254.
 *   E5M2: bias 15, Inf = S.11111.00, NaN S.11111.{01,10,11} (6 codes). Largest 1.75 x 2^15 = 57344;
 *     smallest normal 2^-14, subnormals m/4 x 2^-14 (3 per sign, 0.75 x 2^-14 .. 2^-16); binades
 *     2^-16 .. 2^15: 32, normal 30; finite 256 - 2 - 6 = 248.
 *   FP16: bias 15, largest (2 - 2^-10) x 2^15 = 65504, subnormals 1023 per sign down to 2^-24;
 *     binades 2^-24 .. 2^15: 40, normal 30; NaN 2 x 1023; finite 65536 - 2 - 2046 = 63488. */
static void test_format_tables(void)
{
    const struct {
        Dtype t;
        int exp, man, bias;
        double maxn, minn, maxs, mins;
        int binades, normal, ppb;
        uint64_t finite, sub, zero, nan, inf;
        uint32_t max_code, min_normal_code, max_sub_code, min_sub_code, inf_code, nan_code;
        // clang-format off
    } want[] = {
        /* columns: type; exponent bits, mantissa bits, bias; max normal, min normal, max subnormal, min
         * subnormal; binades, normal binades, points per binade; finite, subnormal, zero, NaN, Inf code
         * counts; max, min normal, max subnormal, min subnormal, +Inf and smallest positive NaN codes */
        {DT_E4M3, 4, 3, 7, 448, 0x1p-6, 0.875 * 0x1p-6, 0x1p-9, 18, 15,
         8, 254, 14, 2, 2, 0, 0x7E, 0x08, 0x07, 0x01, FMT_NO_CODE, 0x7F},
        {DT_E5M2, 5, 2, 15, 57344, 0x1p-14, 0.75 * 0x1p-14, 0x1p-16, 32, 30,
         4, 248, 6, 2, 6, 2, 0x7B, 0x04, 0x03, 0x01, 0x7C, 0x7D},
        {DT_FP16, 5, 10, 15, 65504, 0x1p-14, 1023.0 / 1024 * 0x1p-14, 0x1p-24, 40, 30,
         1024, 63488, 2046, 2, 2046, 2, 0x7BFF, 0x0400, 0x03FF, 0x0001, 0x7C00, 0x7C01},
        /* FP32: bias 127, largest (2 - 2^-23) x 2^127, normals from 2^-126, subnormals (2^23 - 1 per sign)
         * down to 2^-149; binades 2^-149 .. 2^127: 277, normal 254; finite 2 x (2^31 - 2^23) */
        {DT_FP32, 8, 23, 127, 0x1.fffffep127, 0x1p-126, 0x1.fffffcp-127, 0x1p-149, 277, 254,
         1 << 23, 4278190080ull, 16777214, 2, 16777214, 2, 0x7F7FFFFF, 0x00800000, 0x007FFFFF, 0x00000001,
         0x7F800000, 0x7F800001},
    };
    // clang-format on
    static const int bits[4] = {8, 8, 16, 32}; /* storage width of each row's type */
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        FormatInfo f;
        Err e = {0};
        CHECKF(format_info(want[i].t, &f, &e) == ST_OK, "%s", e.msg);
        CHECKF(f.bits == bits[i], "format %zu: %d bits, expected %d", i, f.bits, bits[i]);
        CHECKF(f.exp_bits == want[i].exp && f.man_bits == want[i].man && f.bias == want[i].bias && f.has_sign,
               "format %zu fields", i);
        CHECKF(f.max_normal == want[i].maxn && f.min_normal == want[i].minn, "format %zu normal range", i);
        CHECKF(f.max_subnormal == want[i].maxs && f.min_subnormal == want[i].mins, "format %zu subnormals", i);
        CHECKF(f.binades == want[i].binades && f.normal_binades == want[i].normal && f.points_per_binade == want[i].ppb,
               "format %zu binades %d/%d, points %d", i, f.binades, f.normal_binades, f.points_per_binade);
        CHECKF(f.finite_codes == want[i].finite && f.subnormal_codes == want[i].sub && f.zero_codes == want[i].zero &&
                   f.nan_codes == want[i].nan && f.inf_codes == want[i].inf,
               "format %zu code counts", i);
        CHECKF(f.max_code == want[i].max_code && f.min_normal_code == want[i].min_normal_code &&
                   f.max_subnormal_code == want[i].max_sub_code && f.min_subnormal_code == want[i].min_sub_code,
               "format %zu boundary codes", i);
        CHECKF(f.inf_code == want[i].inf_code && f.nan_code == want[i].nan_code, "format %zu special codes", i);
    }
}

/* Edges of the small helpers: zeros unpack as zeros (no leading bit to find), an out-of-range
 * granularity has no block and no scale type, an unknown name parses to -1, and a delayed-scaling
 * step may be taken without asking for its record. */
static void test_helper_edges(void)
{
    MfUnpacked z = mf_unpack_f32(0.0f), nz = mf_unpack_f32(-0.0f), one = mf_unpack_f32(1.0f);
    CHECK(z.kind == MF_ZERO && !z.neg && nz.kind == MF_ZERO && nz.neg);
    /* minifloat.h: |v| = sig x 2^(exp - 63), so a zero's significand is 0, in either width and sign */
    MfUnpacked dz = mf_unpack_f64(0.0), ndz = mf_unpack_f64(-0.0);
    CHECK(z.sig == 0 && nz.sig == 0 && dz.sig == 0 && ndz.sig == 0);
    CHECK(dz.kind == MF_ZERO && !dz.neg && ndz.kind == MF_ZERO && ndz.neg);
    CHECK(one.kind == MF_FINITE && one.exp == 0 && !one.neg);
    /* double subnormals normalise too: 2^-1074 (m = 1) -> exp -1074, the leading 1 at bit 63;
     * 3 x 2^-1074 (m = 0b11) -> exp -1073, significand 0b11 << 62 */
    MfUnpacked d1 = mf_unpack_f64(0x1p-1074), d3 = mf_unpack_f64(0x3p-1074);
    CHECK(d1.kind == MF_FINITE && d1.exp == -1074 && d1.sig == UINT64_C(1) << 63);
    CHECK(d3.kind == MF_FINITE && d3.exp == -1073 && d3.sig == UINT64_C(3) << 62);
    uint64_t br = 9, bc = 9;
    gran_block(GRAN_COUNT_, &br, &bc);
    CHECK(br == 0 && bc == 0);
    /* granularity.h: block extents, the whole dimension reported as 0 (tensor: both; channel: the columns) */
    static const uint64_t blk[GRAN_COUNT_][2] = {[GRAN_TENSOR] = {0, 0},
                                                 [GRAN_CHANNEL] = {1, 0},
                                                 [GRAN_1X32] = {1, 32},
                                                 [GRAN_1X128] = {1, 128},
                                                 [GRAN_128X128] = {128, 128}};
    for (int i = 0; i < GRAN_COUNT_; i++) {
        gran_block((Granularity)i, &br, &bc);
        CHECKF(br == blk[i][0] && bc == blk[i][1], "%s: block %llu x %llu, expected %llu x %llu",
               gran_name((Granularity)i), (unsigned long long)br, (unsigned long long)bc, (unsigned long long)blk[i][0],
               (unsigned long long)blk[i][1]);
    }
    CHECK(gran_scale_dtype(GRAN_COUNT_) == DT_NONE && gran_scale_dtype(GRAN_1X32) == DT_E8M0);
    Granularity g;
    CHECK(gran_parse("1x64", &g) == -1);
    CHECK(gran_parse("mx", &g) == 0 && g == GRAN_1X32);
    float hist[2];
    DelayedCfg cfg = {.fmt = DT_E4M3, .hist_len = 2, .algo = AMAX_ALGO_MAX, .margin = 0};
    DelayedState st;
    CHECK(delayed_init(&st, &cfg, hist, NULL) == ST_OK);
    delayed_step(&st, 2.0f, NULL); /* no record wanted: must not write one */
    CHECK(st.scale == 224.0f);     /* 448 / 2 */
    /* a dtype field read from a corrupted file may hold any value: outside the enum it has 0 bytes and
     * the name "?" (the table is never indexed past its end; index 2^32 - 1 would be 64 GiB away) */
    static const unsigned bad[3] = {DT_COUNT_, DT_COUNT_ + 1, 0xFFFFFFFFu};
    for (int i = 0; i < 3; i++) {
        CHECKF(dtype_bytes((Dtype)bad[i]) == 0, "dtype_bytes(%u) = %u", bad[i], dtype_bytes((Dtype)bad[i]));
        CHECK_STR(dtype_name((Dtype)bad[i]), "?");
    }
}

/* The outlier distribution as synth.h states it, checked statistically on 2048 x 1024 (seed 1):
 * outlier channels (0.1 % of 1024 columns, at least 1) have RMS 20 over the ordinary rows (2046
 * samples: the RMS estimate's standard error is 20 / sqrt(2 x 2046) = 0.31, so [18, 22] is over 6
 * sigma), every other column RMS 1 (the same bound scaled: [0.9, 1.1]); rows 0 and 1024 carry
 * magnitudes in [500, 1000] in the first outlier channel. */
static void test_outlier_distribution(void)
{
    enum { R = 2048, C = 1024, GUARD = 2 * C }; /* R a multiple of 1024: no massive row 2048 past the end */
    float *x = malloc(sizeof *x * (R * C + GUARD));
    CHECK(x != NULL);
    if (!x) return;
    Err e = {0};
    for (int i = 0; i < GUARD; i++) x[R * C + i] = 7.0f;
    CHECKF(synth_fill(SYNTH_OUTLIERS, 1, R, C, x, &e) == ST_OK, "%s", e.msg);
    int spilled = 0;
    for (int i = 0; i < GUARD; i++) spilled += x[R * C + i] != 7.0f;
    CHECK_EQ_INT(spilled, 0);
    int outliers = 0, first = -1, bad = 0;
    for (int c = 0; c < C; c++) {
        double ss = 0;
        for (int r = 0; r < R; r++)
            if (r % 1024) ss += (double)x[r * C + c] * x[r * C + c];
        double rms = sqrt(ss / (R - 2));
        if (rms > 5) {
            outliers++;
            if (first < 0) first = c;
            bad += !(rms >= 18 && rms <= 22);
        } else {
            bad += !(rms >= 0.9 && rms <= 1.1);
        }
    }
    CHECKF(outliers >= 1 && outliers <= 2, "%d outlier channels", outliers);
    CHECK_EQ_INT(bad, 0);
    if (first >= 0)
        for (int r = 0; r < R; r += 1024) {
            float a = fabsf(x[r * C + first]);
            CHECKF(a >= 500 && a <= 1000, "row %d: |x| = %g", r, a);
        }
    free(x);
}

/* quant's margin range is [-64, 64], both ends included */
static void test_quant_margin_bounds(void)
{
    const float x[2] = {1, 2};
    uint8_t codes[2];
    float scale;
    QuantBufs out = {.codes = codes, .scale = &scale};
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_TENSOR);
    const int ok[] = {-64, 64}, bad[] = {-65, 65};
    for (int i = 0; i < 2; i++) {
        cfg.margin = ok[i];
        CHECKF(quant_tensor(&cfg, x, 1, 2, &out, NULL, NULL) == ST_OK, "margin %d refused", ok[i]);
        cfg.margin = bad[i];
        Err e = {0};
        CHECKF(quant_tensor(&cfg, x, 1, 2, &out, NULL, &e) == ST_USAGE, "margin %d accepted", bad[i]);
        CHECK_CONTAINS(e.msg, "outside [-64, 64]");
    }
}

/* The outlier channels are 0.1 % of the columns, at least 1 and at most 4096: with the same seed the
 * outlier tensor is the normal one with those columns scaled (x 20, and two entries of row 0 replaced),
 * so counting the columns where the two differ counts the outlier channels.
 *   5,000 columns:     0.001 x 5,000 = 5
 *   4,200,000 columns: 0.001 x 4,200,000 = 4,200, capped at 4,096 */
static void test_outlier_channel_count(void)
{
    const struct {
        uint64_t cols;
        int want;
    } cases[] = {{5000, 5}, {4200000, 4096}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint64_t n = cases[i].cols;
        float *a = malloc(sizeof *a * n), *b = malloc(sizeof *b * n);
        CHECK(a != NULL && b != NULL);
        Err e = {0};
        if (a && b) {
            CHECKF(synth_fill(SYNTH_NORMAL, 3, 1, n, a, &e) == ST_OK, "%s", e.msg);
            CHECKF(synth_fill(SYNTH_OUTLIERS, 3, 1, n, b, &e) == ST_OK, "%s", e.msg);
            int differ = 0, scaled = 0;
            for (uint64_t c = 0; c < n; c++) differ += a[c] != b[c], scaled += a[c] != b[c] && b[c] == a[c] * 20.0f;
            CHECKF(differ == cases[i].want, "%llu columns: %d outlier channels, expected %d", (unsigned long long)n,
                   differ, cases[i].want);
            /* row 0 is a massive-activation row: two of its outlier entries are replaced, the rest x 20 */
            CHECKF(scaled == cases[i].want - 2, "%llu columns: %d channels scaled by 20, expected %d",
                   (unsigned long long)n, scaled, cases[i].want - 2);
        }
        free(a);
        free(b);
    }
}

/* A reference of zeros against a nonzero result: no relative error is finite. x = {0, 0},
 * y = {0.5, 0}: sum x^2 = 0, sum (x - y)^2 = 0.25, so rel_rms = +inf and SNR = 10 log10(0 / 0.25) = -inf;
 * the largest error is 0.5. */
static void test_qerror_zero_reference(void)
{
    const float x[2] = {0, 0}, y[2] = {0.5f, 0};
    QuantError q;
    qerr_compute(x, y, 2, NULL, &q);
    CHECKF(isinf(q.rel_rms) && q.rel_rms > 0, "rel_rms %g", q.rel_rms);
    CHECKF(isinf(q.snr_db) && q.snr_db < 0, "snr %g dB", q.snr_db);
    CHECKF(q.max_abs == 0.5, "max_abs %g", q.max_abs);
    /* zeros against zeros: nothing lost, rel_rms 0 */
    const float z[2] = {0, 0};
    qerr_compute(z, z, 2, NULL, &q);
    CHECKF(q.rel_rms == 0, "zeros: rel_rms %g", q.rel_rms);
    /* a reference below 1: x = {0.5}, y = {0.25}: sum x^2 = 0.25, sum (x - y)^2 = 0.0625, rel_rms =
     * sqrt(0.0625 / 0.25) = 0.5 exactly */
    const float xs[1] = {0.5f}, ys[1] = {0.25f};
    qerr_compute(xs, ys, 1, NULL, &q);
    CHECKF(q.rel_rms == 0.5, "x 0.5, y 0.25: rel_rms %g", q.rel_rms);
}

/* "Is NaN" agrees with decoding, for every dtype and every byte: E4M3's NaN is S.1111.111 (0x7F, 0xFF), E5M2's
 * S.11111.01-11 (0x7D-0x7F and 0xFD-0xFF; 0x7C is Inf); a dtype that is not an FP8 format (none, FP32, FP16,
 * BF16, E8M0) has no FP8 value at all: fp8_decode gives NaN for each of its codes, so fp8_is_nan says 1. */
static void test_is_nan_matches_decode(void)
{
    for (int f = 0; f < DT_COUNT_; f++) {
        int bad = 0, nans = 0;
        for (int c = 0; c < 256; c++) {
            int nan = fp8_is_nan((Dtype)f, (uint8_t)c);
            nans += nan;
            bad += nan != (int)isnan(fp8_decode((Dtype)f, (uint8_t)c));
        }
        CHECKF(!bad, "%s: %d codes where fp8_is_nan disagrees with fp8_decode", dtype_name((Dtype)f), bad);
        CHECK_EQ_INT(nans, f == DT_E4M3 ? 2 : f == DT_E5M2 ? 6 : 256);
    }
}

/* DeepSeek-V3's 1x128 tiles with FP32 (not power-of-two) scales, by hand, on a (2, 130) tensor: K = 130 is
 * not a multiple of 128, so each row has a full tile and a 2-wide one; row 1 is all zeros.
 *   row 0, tile 0: {224, 1, 0 x 126}: amax 224, scale 448 / 224 = 2, scale_inv 0.5;
 *                  224 x 2 = 448 -> 0x7E (the largest finite code), 1 x 2 = 2 = 1.0 x 2^1 -> exponent field
 *                  1 + 7 = 8, code 0 1000 000 = 0x40; 0 -> 0x00
 *   row 0, tile 1: {0.75, -7}: amax 7, scale 448 / 7 = 64, scale_inv 1/64;
 *                  0.75 x 64 = 48 = 1.5 x 2^5 -> 0 1100 100 = 0x64; -7 x 64 = -448 -> 0xFE
 *   row 1, both tiles all zero: amax 0 -> scale 1 (the policy keeps 1, never 448 / 0), scale_inv 1, codes 0
 * and every value dequantizes back exactly (code value x scale_inv). */
static void test_block_quant_by_hand(void)
{
    enum { R = 2, C = 130 };
    static float x[R * C], y[R * C];
    x[0] = 224.0f, x[1] = 1.0f, x[128] = 0.75f, x[129] = -7.0f;
    uint8_t q[R * C];
    float scale[4], sinv[4], amax[4];
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_1X128);
    cfg.pow2 = 0; /* DeepSeek-V3: plain FP32 scales */
    QuantBufs b = {q, scale, sinv, NULL, amax};
    uint64_t ns = 0;
    CHECK(quant_scale_count(&cfg, R, C, &ns, NULL) == ST_OK);
    CHECK_EQ_U64(ns, 4); /* 2 rows x ceil(130 / 128) */
    CHECK(quant_tensor(&cfg, x, R, C, &b, NULL, NULL) == ST_OK);
    static const float want_scale[4] = {2.0f, 64.0f, 1.0f, 1.0f}, want_sinv[4] = {0.5f, 0.015625f, 1.0f, 1.0f};
    static const float want_amax[4] = {224.0f, 7.0f, 0.0f, 0.0f};
    for (int i = 0; i < 4; i++)
        CHECKF(scale[i] == want_scale[i] && sinv[i] == want_sinv[i] && amax[i] == want_amax[i],
               "tile %d: scale %g, scale_inv %g, amax %g", i, (double)scale[i], (double)sinv[i], (double)amax[i]);
    CHECK(q[0] == 0x7E && q[1] == 0x40 && q[2] == 0x00 && q[128] == 0x64 && q[129] == 0xFE);
    int nz = 0;
    for (int i = C; i < R * C; i++) nz += q[i] != 0;
    CHECK_EQ_INT(nz, 0);
    CHECK(quant_dequant(&cfg, &b, R, C, y, NULL) == ST_OK);
    CHECK(!memcmp(x, y, sizeof x));
}

/* The block-scaled GEMM (fp8/blockgemm.h) by hand: M = 2, N = 1, K = 130 (a 128-wide block and a 2-wide one).
 *   A row 0: a_0 = 256, a_1..a_127 = 1, a_128 = 3, a_129 = 1.5; 1x128 scale_inv {0.5, 2}
 *   A row 1: all zero, scale_inv {1, 1} (what the quantizer gives an all-zero tile)
 *   B row 0: b_0 = 32, b_1..b_127 = 0.125, b_128 = 2, b_129 = -1; 128x128 scale_inv {0.25, 0.5}
 * Block 0's products: 256 x 32 = 8192 = 2^13, then 127 x 0.125; block 1's: 3 x 2 = 6, 1.5 x -1 = -1.5.
 *   FP32 partial sums: block 0 = 8192 + 127 x 0.125 = 8207.875 (17 significant bits, exact), promoted by
 *     0.5 x 0.25 = 0.125: 1025.984375; block 1 = 4.5, by 2 x 0.5 = 1: 4.5. D = 1030.484375.
 *   14-bit accumulation: at 8192 = 2^13 the accumulator's last bit is 2^(13 - 13) = 1, so each + 0.125 is
 *     truncated away: block 0 = 8192, promoted 1024; block 1 = 4.5 as before. D = 1028.5 — the 15.875
 *     lost is the report's "limited accumulation precision", bounded by promoting every 128 products.
 *   Row 1: every product 0, D = 0 (no 0 x Inf or NaN from the all-zero tile). */
static void test_block_gemm_by_hand(void)
{
    enum { K = 130 };
    uint8_t a[2 * K] = {0}, b[K];
    a[0] = fp8_encode_f32(DT_E4M3, 256.0f, FP8_SATFINITE);
    for (int k = 1; k < 128; k++) a[k] = fp8_encode_f32(DT_E4M3, 1.0f, FP8_SATFINITE);
    a[128] = fp8_encode_f32(DT_E4M3, 3.0f, FP8_SATFINITE), a[129] = fp8_encode_f32(DT_E4M3, 1.5f, FP8_SATFINITE);
    b[0] = fp8_encode_f32(DT_E4M3, 32.0f, FP8_SATFINITE);
    for (int k = 1; k < 128; k++) b[k] = fp8_encode_f32(DT_E4M3, 0.125f, FP8_SATFINITE);
    b[128] = fp8_encode_f32(DT_E4M3, 2.0f, FP8_SATFINITE), b[129] = fp8_encode_f32(DT_E4M3, -1.0f, FP8_SATFINITE);
    CHECK(a[0] == 0x78 && b[1] == 0x20); /* 256 = 2^8: field 15, 0 1111 000; 0.125 = 2^-3: field 4, 0 0100 000 */
    const float sa[4] = {0.5f, 2.0f, 1.0f, 1.0f}, sb[2] = {0.25f, 0.5f};
    BlockGemm g = {.m = 2,
                   .n = 1,
                   .k = K,
                   .a_fmt = DT_E4M3,
                   .b_fmt = DT_E4M3,
                   .a = a,
                   .a_scale_inv = sa,
                   .b = b,
                   .b_scale_inv = sb,
                   .acc = BLOCK_ACC_FP32};
    float d[2] = {-1.0f, -1.0f};
    CHECK(block_gemm(&g, d, NULL) == ST_OK);
    CHECKF(d[0] == 1030.484375f && d[1] == 0.0f, "fp32: %.9g, %.9g", (double)d[0], (double)d[1]);
    g.acc = BLOCK_ACC_TC14;
    CHECK(block_gemm(&g, d, NULL) == ST_OK);
    CHECKF(d[0] == 1028.5f && d[1] == 0.0f, "tc14: %.9g, %.9g", (double)d[0], (double)d[1]);
    /* the accumulator's truncation alone: 13 fraction bits keep 1 + 2^-13, drop 1 + 2^-14, toward zero */
    CHECK(block_acc_truncate(1.0f + 0x1p-13f, 13) == 1.0f + 0x1p-13f);
    CHECK(block_acc_truncate(1.0f + 0x1p-14f, 13) == 1.0f);
    CHECK(block_acc_truncate(-(1.0f + 0x1.8p-13f), 13) == -(1.0f + 0x1p-13f));
    CHECK(block_acc_truncate(1.0f + 0x1p-14f, 23) == 1.0f + 0x1p-14f);
    Err e;
    g.a_fmt = DT_BF16;
    CHECK(block_gemm(&g, d, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "block_gemm: operands bf16 x e4m3 (expected e4m3 or e5m2)");
    g.a_fmt = DT_E4M3, g.k = 0;
    CHECK(block_gemm(&g, d, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "block_gemm: empty shape m=2 n=1 k=0");
}

int main(void)
{
    RUN(test_generator_stream);
    RUN(test_quant_counts);
    RUN(test_format_tables);
    RUN(test_mx_without_fp32_scales);
    RUN(test_helper_edges);
    RUN(test_outlier_distribution);
    RUN(test_quant_margin_bounds);
    RUN(test_outlier_channel_count);
    RUN(test_qerror_zero_reference);
    RUN(test_is_nan_matches_decode);
    RUN(test_block_quant_by_hand);
    RUN(test_block_gemm_by_hand);
    return test_summary();
}
