/* tests/unit/test_oracle_fp8_seed.c — fp8/ paths no other suite reached when mutate's fresh seeds (59, 61) were
 * run, each against values worked out by hand: format_decode of every dtype (FP32 codes included), the names
 * and their parsers, synth_fill's overflow refusal, quant_scale_index_cfg at every granularity, quant_dequant's
 * buffer checks and delayed_init's algorithm check; and (seed 61) power-of-two scales in every amax case,
 * the outlier columns' count and a zero dimension in (de)quantization. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fp8/codec.h"
#include "fp8/delayed.h"
#include "fp8/format.h"
#include "fp8/granularity.h"
#include "fp8/quant.h"
#include "fp8/scale.h"
#include "fp8/synth.h"
#include "test.h"

/* One code of each dtype: E4M3 0x38 = 2^0 (exponent 7 - bias 7), E5M2 0x3C = 2^0 (15 - 15), E8M0 127 = 2^0,
 * E8M0 130 = 2^3; FP16 0xC500 = -(1 + 1/4) x 2^(17 - 15) = -5; BF16 0x4049 = (1 + 73/128) x 2^1 = 3.140625;
 * FP32 0x3F800000 = 1, 0xC0490FDB = -3.1415927410125732 (float pi), 0x00000001 = 2^-149, 0x7F800000 = +Inf,
 * 0x7FC00000 = NaN; a dtype that is not a number format (DT_NONE) decodes to NaN. */
static void test_format_decode_every_dtype(void)
{
    CHECK(format_decode(DT_E4M3, 0x38) == 1.0);
    CHECK(format_decode(DT_E5M2, 0x3C) == 1.0);
    CHECK(format_decode(DT_E8M0, 127) == 1.0);
    CHECK(format_decode(DT_E8M0, 130) == 8.0);
    CHECK(format_decode(DT_FP16, 0xC500) == -5.0);
    CHECK(format_decode(DT_BF16, 0x4049) == 3.140625);
    CHECK(format_decode(DT_FP32, 0x3F800000u) == 1.0);
    CHECK(format_decode(DT_FP32, 0xC0490FDBu) == -3.1415927410125732);
    CHECK(format_decode(DT_FP32, 0x00000001u) == ldexp(1.0, -149));
    CHECK(isinf(format_decode(DT_FP32, 0x7F800000u)) && format_decode(DT_FP32, 0x7F800000u) > 0);
    CHECK(isnan(format_decode(DT_FP32, 0x7FC00000u)));
    CHECK(isnan(format_decode(DT_NONE, 0x3F800000u)));
}

/* Every name, its parse back to the value, and "?" past the end where the name function takes any value. */
static void test_names(void)
{
    const char *const synth[3] = {"normal", "laplace", "outliers"};
    for (int i = 0; i < 3; i++) {
        SynthDist d = SYNTH_COUNT_;
        CHECK_STR(synth_name((SynthDist)i), synth[i]);
        CHECK(synth_parse(synth[i], &d) == 0 && d == (SynthDist)i);
    }
    CHECK_STR(synth_name(SYNTH_COUNT_), "?");
    CHECK_STR(amax_algo_name(AMAX_ALGO_MAX), "max");
    CHECK_STR(amax_algo_name(AMAX_ALGO_MOST_RECENT), "most_recent");
    AmaxAlgo a = AMAX_ALGO_MAX;
    CHECK(amax_algo_parse("most_recent", &a) == 0 && a == AMAX_ALGO_MOST_RECENT);
    CHECK(amax_algo_parse("max", &a) == 0 && a == AMAX_ALGO_MAX);
    CHECK_STR(e8m0_rule_name(E8M0_RULE_CEIL), "ceil");
    CHECK_STR(e8m0_rule_name(E8M0_RULE_FLOOR), "floor");
    E8m0Rule r = E8M0_RULE_CEIL;
    CHECK(e8m0_rule_parse("floor", &r) == 0 && r == E8M0_RULE_FLOOR);
    CHECK(e8m0_rule_parse("ceil", &r) == 0 && r == E8M0_RULE_CEIL);
}

/* rows x cols past 2^64 is refused before anything is written (x may be NULL): 2^32 x 2^32 = 2^64 and 2^63 x 2,
 * named in the message; a zero dimension and an unknown distribution are refused too. */
static void test_synth_overflow(void)
{
    Err e = {0};
    CHECK_EQ_INT(synth_fill(SYNTH_NORMAL, 1, 1ull << 32, 1ull << 32, NULL, &e), ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "tensor 4294967296x4294967296 passes 2^64 elements");
    CHECK_EQ_INT(synth_fill(SYNTH_LAPLACE, 1, 1ull << 63, 2, NULL, &e), ST_OVERFLOW);
    CHECK_CONTAINS(e.msg, "tensor 9223372036854775808x2 passes 2^64 elements");
    CHECK_EQ_INT(synth_fill(SYNTH_NORMAL, 1, 0, 4, NULL, &e), ST_USAGE);
    CHECK_EQ_INT(synth_fill(SYNTH_COUNT_, 1, 1, 1, NULL, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "unknown distribution 3");
}

/* The scale of element (r, c) of a tensor with 256 columns: per-tensor 0; per-channel the row (or, with
 * chan_cols, the column); 1x32: r x 8 + c / 32; 1x128: r x 2 + c / 128; 128x128: (r / 128) x 2 + c / 128.
 *   (3, 200): 0 | 3 | 200 | 3 x 8 + 6 = 30 | 3 x 2 + 1 = 7 | 0 x 2 + 1 = 1
 *   (130, 5): 0 | 130 | 5 | 130 x 8 + 0 = 1,040 | 130 x 2 + 0 = 260 | 1 x 2 + 0 = 2
 * chan_cols is a per-channel option only (quant.h): set on the other granularities it changes neither
 * the index nor the count. Counts of a 131 x 256 tensor: 1 | 131 | 256 | 131 x 8 = 1,048 | 131 x 2 = 262
 * | ceil(131 / 128) x 2 = 4. */
static void test_scale_index_every_granularity(void)
{
    const struct {
        uint64_t r, c, want[6]; /* tensor, channel, channel by column, 1x32, 1x128, 128x128 */
    } pts[2] = {{3, 200, {0, 3, 200, 30, 7, 1}}, {130, 5, {0, 130, 5, 1040, 260, 2}}};
    const Granularity g[6] = {GRAN_TENSOR, GRAN_CHANNEL, GRAN_CHANNEL, GRAN_1X32, GRAN_1X128, GRAN_128X128};
    const uint64_t count[6] = {1, 131, 256, 1048, 262, 4};
    for (int k = 0; k < 6; k++) {
        QuantCfg cfg = quant_cfg(DT_E4M3, g[k]);
        cfg.chan_cols = k != 1;
        uint64_t n = 0;
        CHECK_EQ_INT(quant_scale_count(&cfg, 131, 256, &n, NULL), ST_OK);
        CHECKF(n == count[k], "%s with chan_cols %d: %llu scales, expected %llu", gran_name(g[k]), cfg.chan_cols,
               (unsigned long long)n, (unsigned long long)count[k]);
    }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 6; k++) {
            QuantCfg cfg = quant_cfg(DT_E4M3, g[k]);
            cfg.chan_cols = k != 1; /* by row only for k = 1; ignored but set for the block granularities */
            uint64_t got = quant_scale_index_cfg(&cfg, 256, pts[i].r, pts[i].c);
            CHECKF(got == pts[i].want[k], "(%llu, %llu) %s%s: %llu, expected %llu", (unsigned long long)pts[i].r,
                   (unsigned long long)pts[i].c, gran_name(g[k]), k == 2 ? " by column" : "", (unsigned long long)got,
                   (unsigned long long)pts[i].want[k]);
            if (k != 2) CHECK_EQ_U64(quant_scale_index(g[k], 256, pts[i].r, pts[i].c), pts[i].want[k]);
        }
}

/* chan_cols set on a per-tensor config quantizes as per-tensor: x = {1, -2, 0.5, 100, -3, 4, 0.25, 7} (2 x 4),
 * amax 100, scale 448 / 100 = 4.48, the same codes and one scale with the option on or off (per column it would
 * be 4 scales, column 0's amax 3 giving 1 -> 149.33 -> 144 = code 0x71 instead of 4.48 -> 4.5 = 0x49). */
static void test_chan_cols_ignored_per_tensor(void)
{
    const float x[8] = {1, -2, 0.5f, 100, -3, 4, 0.25f, 7};
    uint8_t codes[2][8];
    float scale[2][4], inv[2][4], amax[2][4];
    for (int on = 0; on < 2; on++) {
        QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_TENSOR);
        cfg.chan_cols = on;
        for (int j = 0; j < 4; j++) scale[on][j] = inv[on][j] = amax[on][j] = -1.0f;
        QuantBufs qb = {codes[on], scale[on], inv[on], NULL, amax[on]};
        CHECK_EQ_INT(quant_tensor(&cfg, x, 2, 4, &qb, NULL, NULL), ST_OK);
        CHECKF(amax[on][0] == 100.0f && scale[on][0] == 4.48f && amax[on][1] == -1.0f, "chan_cols %d: amax %g scale %g",
               on, amax[on][0], scale[on][0]);
        CHECKF(codes[on][0] == 0x49, "chan_cols %d: 1 -> code 0x%02x", on, codes[on][0]);
    }
    CHECK(!memcmp(codes[0], codes[1], sizeof codes[0]));
}

/* quant_dequant needs the codes and, for FP32 scales, scale or scale_inv (either one does); for 1x32 the E8M0
 * codes. A missing one is ST_SOFTWARE naming the granularity; with what it needs, code 0x38 (1.0) and scale 4
 * (scale_inv 0.25) dequantize to 0.25. */
static void test_dequant_buffers(void)
{
    uint8_t codes[2] = {0x38, 0x38}, e8[1] = {125}; /* E8M0 125 = 2^-2 */
    float scale[1] = {4.0f}, scale_inv[1] = {0.25f}, y[2] = {0, 0};
    Err e = {0};
    QuantCfg t = quant_cfg(DT_E4M3, GRAN_TENSOR), mx = quant_cfg(DT_E4M3, GRAN_1X32);
    const struct {
        const QuantCfg *cfg;
        QuantBufs in;
        int ok;
        const char *gran;
    } rows[] = {
        {&t, {.codes = codes, .scale = scale}, 1, "tensor"},
        {&t, {.codes = codes, .scale_inv = scale_inv}, 1, "tensor"},
        {&t, {.codes = codes}, 0, "tensor"},
        {&t, {.scale = scale, .scale_inv = scale_inv}, 0, "tensor"},
        {&mx, {.codes = codes, .e8m0 = e8}, 1, "1x32"},
        {&mx, {.codes = codes, .scale = scale, .scale_inv = scale_inv}, 0, "1x32"},
        {&mx, {.e8m0 = e8}, 0, "1x32"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        y[0] = y[1] = -1;
        Status st = quant_dequant(rows[i].cfg, &rows[i].in, 1, 2, y, &e);
        if (rows[i].ok) {
            CHECKF(st == ST_OK, "row %zu: %s", i, e.msg);
            CHECKF(y[0] == 0.25f && y[1] == 0.25f, "row %zu: %g %g", i, y[0], y[1]);
            continue;
        }
        CHECKF(st == ST_SOFTWARE, "row %zu: status %d", i, st);
        char want[80];
        snprintf(want, sizeof want, "quant_dequant: missing input buffer for %s scales", rows[i].gran);
        CHECK_CONTAINS(e.msg, want);
    }
    CHECK_EQ_INT(quant_dequant(&t, NULL, 1, 2, y, &e), ST_SOFTWARE);
}

/* The amax algorithm is max or most_recent; any other value is refused, named. */
static void test_delayed_algo(void)
{
    float hist[2];
    DelayedState s;
    Err e = {0};
    DelayedCfg cfg = {.fmt = DT_E4M3, .hist_len = 2, .algo = AMAX_ALGO_MOST_RECENT};
    CHECKF(delayed_init(&s, &cfg, hist, &e) == ST_OK, "%s", e.msg);
    cfg.algo = (AmaxAlgo)2;
    CHECK_EQ_INT(delayed_init(&s, &cfg, hist, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "unknown amax algorithm 2");
}

/* Delayed scaling's update with power-of-two scales, every amax case (E4M3, fmax 448):
 *   ok:    amax 640 -> 448 / 640 = 0.7, floored to 0.5; margin 1: 224 / 100 = 2.24 -> 2
 *   tiny:  amax 1e-40 -> 448 / 1e-40 overflows to Inf -> FLT_MAX, floored to 2^127
 *   zero, negative, Inf, NaN: no information, the previous scale 3 is kept as it is (not floored to 2)
 * scale_from_amax (current scaling) the same way, with 1 when there is no information. */
static void test_pow2_scale_every_case(void)
{
    ScaleCfg c = scale_cfg(DT_E4M3);
    c.pow2 = 1;
    const struct {
        float amax;
        float want;
        AmaxCase why;
    } rows[] = {
        {640.0f, 0.5f, AMAX_OK},  {1e-40f, 0x1p127f, AMAX_TINY}, {0.0f, 3.0f, AMAX_ZERO},
        {-1.0f, 3.0f, AMAX_ZERO}, {INFINITY, 3.0f, AMAX_INF},    {NAN, 3.0f, AMAX_NAN},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        AmaxCase w = AMAX_COUNT_;
        float got = scale_update(rows[i].amax, 3.0f, &c, &w);
        CHECKF(got == rows[i].want && w == rows[i].why, "update amax %g: %g (%d), expected %g (%d)", rows[i].amax, got,
               (int)w, rows[i].want, (int)rows[i].why);
        w = AMAX_COUNT_;
        got = scale_from_amax(rows[i].amax, &c, &w);
        float want = rows[i].why == AMAX_OK || rows[i].why == AMAX_TINY ? rows[i].want : 1.0f;
        CHECKF(got == want && w == rows[i].why, "from amax %g: %g (%d), expected %g", rows[i].amax, got, (int)w, want);
    }
    c.margin = 1;
    AmaxCase w = AMAX_COUNT_;
    CHECK(scale_update(100.0f, 3.0f, &c, &w) == 2.0f && w == AMAX_OK);
    c.pow2 = 0; /* without pow2 the same update is 224 / 100 = 2.24 in fp32 */
    CHECK(scale_update(100.0f, 3.0f, &c, &w) == 224.0f / 100.0f);
}

/* The outlier distribution is the normal one (the same seed draws the same body) with k = max(1, round(cols x
 * 0.1 %)) columns scaled by 20 and, in row 0 (and every 1024th), the first min(2, k) of them replaced by
 * magnitudes in [500, 1000]. cols 16: 0.016 rounds to 0, at least 1 -> k = 1; cols 1,500: 1.5 rounds to 2 -> k = 2.
 * Rows 1 and 2 show the scaled columns (exactly 20 x the normal draw), row 0 the massive values. */
static void test_outlier_columns(void)
{
    static float nx[3 * 1500], ox[3 * 1500];
    const uint64_t cols[2] = {16, 1500}, want_k[2] = {1, 2};
    for (int t = 0; t < 2; t++) {
        Err e = {0};
        uint64_t C = cols[t], scaled = 0, massive = 0, same = 0;
        CHECK(synth_fill(SYNTH_NORMAL, 7, 3, C, nx, &e) == ST_OK);
        CHECK(synth_fill(SYNTH_OUTLIERS, 7, 3, C, ox, &e) == ST_OK);
        for (uint64_t c = 0; c < C; c++) {
            int s = ox[C + c] == nx[C + c] * 20.0f && ox[2 * C + c] == nx[2 * C + c] * 20.0f;
            int u = ox[C + c] == nx[C + c] && ox[2 * C + c] == nx[2 * C + c];
            scaled += (uint64_t)s, same += (uint64_t)u;
            float a = fabsf(ox[c]);
            if (s && a >= 500.0f && a <= 1000.0f) massive++;
            if (u && ox[c] != nx[c]) same--; /* an unscaled column keeps its row 0 too */
        }
        CHECK_EQ_U64(scaled, want_k[t]);
        CHECK_EQ_U64(same, C - want_k[t]);
        CHECK_EQ_U64(massive, want_k[t] < 2 ? want_k[t] : 2);
    }
}

/* A zero dimension is refused by quantization and dequantization alike, naming the shape. */
static void test_quant_zero_dimension(void)
{
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_TENSOR);
    uint8_t codes[4];
    float scale[1] = {1.0f}, y[4], x[4] = {1, 2, 3, 4};
    QuantBufs b = {.codes = codes, .scale = scale};
    Err e = {0};
    CHECK_EQ_INT(quant_dequant(&cfg, &b, 0, 4, y, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "tensor shape 0x4 has a zero dimension");
    CHECK_EQ_INT(quant_dequant(&cfg, &b, 4, 0, y, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "tensor shape 4x0 has a zero dimension");
    CHECK_EQ_INT(quant_tensor(&cfg, x, 0, 4, &b, NULL, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "tensor shape 0x4 has a zero dimension");
    CHECK_EQ_INT(quant_dequant(&cfg, &b, 1, 4, y, &e), ST_OK);
}

int main(void)
{
    RUN(test_format_decode_every_dtype);
    RUN(test_names);
    RUN(test_synth_overflow);
    RUN(test_scale_index_every_granularity);
    RUN(test_chan_cols_ignored_per_tensor);
    RUN(test_dequant_buffers);
    RUN(test_delayed_algo);
    RUN(test_pow2_scale_every_case);
    RUN(test_outlier_columns);
    RUN(test_quant_zero_dimension);
    return test_summary();
}
