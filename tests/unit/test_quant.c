/* tests/unit/test_quant.c — block-scaled quantize/dequantize at every
 * granularity, the error statistics and the synthetic distributions.
 *
 * Tolerances are derived, not tuned: RNE onto a grid with m mantissa bits has
 * relative error at most 2^-(m+1) for a value in the normal range; the fp32
 * products x*scale and value*scale_inv and the fp32 reciprocal scale_inv add at
 * most three more fp32 roundings (2^-24 each). Below the normal range the
 * error is at most half the subnormal step, in the unscaled units. */
#include <float.h>
#include <stdlib.h>

#include "fp8/qerror.h"
#include "fp8/quant.h"
#include "fp8/synth.h"
#include "test.h"

static const Dtype FMTS[2] = {DT_E4M3, DT_E5M2};

static void test_scale_index_layout(void)
{
    CHECK_EQ_U64(quant_scale_index(GRAN_TENSOR, 300, 2, 299), 0);
    CHECK_EQ_U64(quant_scale_index(GRAN_CHANNEL, 300, 2, 299), 2);
    CHECK_EQ_U64(quant_scale_index(GRAN_1X32, 300, 2, 299), 2 * 10 + 9); /* ceil(300/32) = 10 */
    CHECK_EQ_U64(quant_scale_index(GRAN_1X128, 300, 2, 299), 2 * 3 + 2);
    CHECK_EQ_U64(quant_scale_index(GRAN_128X128, 300, 130, 299), 1 * 3 + 2);
    CHECK_EQ_U64(quant_scale_index(GRAN_128X128, 300, 127, 127), 0);
}

typedef struct {
    uint8_t *codes, *e8m0;
    float *scale, *scale_inv, *amax, *y;
    uint64_t nscales;
} Bufs;

static Bufs alloc_bufs(Granularity g, uint64_t rows, uint64_t cols)
{
    Bufs b;
    uint64_t bytes;
    CHECK(gran_scale_count(g, rows, cols, &b.nscales, &bytes, NULL) == ST_OK);
    b.codes = malloc(rows * cols);
    b.y = malloc(rows * cols * sizeof(float));
    b.e8m0 = malloc(b.nscales);
    b.scale = malloc(b.nscales * sizeof(float));
    b.scale_inv = malloc(b.nscales * sizeof(float));
    b.amax = malloc(b.nscales * sizeof(float));
    return b;
}

static void free_bufs(Bufs *b)
{
    free(b->codes), free(b->y), free(b->e8m0), free(b->scale), free(b->scale_inv), free(b->amax);
}

/* Every element of a random tensor, every format and granularity, within the derived bound. */
static void test_round_trip_bounds(void)
{
    enum { R = 150, C = 300 }; /* partial blocks along both axes for 32, 128 and 128x128 */
    float *x = malloc(R * C * sizeof(float));
    Err e;
    CHECK(synth_fill(SYNTH_LAPLACE, 7, R, C, x, &e) == ST_OK);
    for (int i = 0; i < R * C; i += 17) x[i] *= 1e-3f; /* some values deep in the subnormal range */
    for (int f = 0; f < 2; f++)
        for (int g = 0; g < GRAN_COUNT_; g++)
            for (int pow2 = 0; pow2 < 2; pow2++) {
                QuantCfg cfg = quant_cfg(FMTS[f], (Granularity)g);
                cfg.pow2 = pow2;
                Bufs b = alloc_bufs(cfg.gran, R, C);
                QuantBufs qb = {b.codes, b.scale, b.scale_inv, b.e8m0, b.amax};
                QuantCounts k;
                CHECK(quant_tensor(&cfg, x, R, C, &qb, &k, &e) == ST_OK);
                CHECK(quant_dequant(&cfg, &qb, R, C, b.y, &e) == ST_OK);
                int m = FMTS[f] == DT_E4M3 ? 3 : 2;
                double rel = ldexp(1, -(m + 1)) + 3 * 0x1p-24;
                double min_normal = FMTS[f] == DT_E4M3 ? 0x1p-6 : 0x1p-14, quantum = min_normal / (1 << m);
                long bad = 0;
                for (uint64_t r = 0; r < R; r++)
                    for (uint64_t c = 0; c < C; c++) {
                        uint64_t si = quant_scale_index(cfg.gran, C, r, c);
                        double s = b.scale[si], xv = x[r * C + c], yv = b.y[r * C + c];
                        double tol = fabs(xv * s) >= min_normal ? rel * fabs(xv) : (quantum / 2) / s * (1 + rel);
                        if (fabs(xv - yv) > tol && bad++ < 3)
                            CHECKF(0, "%s %s pow2 %d (%llu,%llu): x %.9g y %.9g tol %.3g", dtype_name(FMTS[f]),
                                   gran_name(cfg.gran), pow2, (unsigned long long)r, (unsigned long long)c, xv, yv,
                                   tol);
                        /* the block's amax must land at or below fmax, never saturate */
                        if (fabsf(x[r * C + c]) == b.amax[si])
                            bad += fp8_overflows(FMTS[f], x[r * C + c] * b.scale[si]);
                    }
                CHECK_EQ_INT(bad, 0);
                CHECK_EQ_U64(k.n, R * C);
                CHECK_EQ_U64(k.saturated, 0);
                CHECK_EQ_U64(k.nonfinite, 0);
                free_bufs(&b);
            }
    free(x);
}

/* Block amax and scales recomputed independently, including partial edge blocks. */
static void test_block_scales(void)
{
    enum { R = 129, C = 130 };
    static float x[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)((i * 7919) % 1000) / 100.0f - 5.0f;
    x[128 * C + 129] = -300.0f; /* the lone element of the last 128x128 tile's corner */
    for (int g = 0; g < GRAN_COUNT_; g++) {
        QuantCfg cfg = quant_cfg(DT_E4M3, (Granularity)g);
        Bufs b = alloc_bufs(cfg.gran, R, C);
        QuantBufs qb = {b.codes, b.scale, b.scale_inv, b.e8m0, b.amax};
        CHECK(quant_tensor(&cfg, x, R, C, &qb, NULL, NULL) == ST_OK);
        float *want = calloc(b.nscales, sizeof(float));
        for (uint64_t r = 0; r < R; r++)
            for (uint64_t c = 0; c < C; c++) {
                uint64_t si = quant_scale_index(cfg.gran, C, r, c);
                if (fabsf(x[r * C + c]) > want[si]) want[si] = fabsf(x[r * C + c]);
            }
        ScaleCfg sc = scale_cfg(DT_E4M3);
        sc.pow2 = cfg.pow2;
        long bad = 0;
        for (uint64_t i = 0; i < b.nscales; i++) {
            bad += b.amax[i] != want[i];
            if (cfg.gran == GRAN_1X32) {
                uint8_t e8 = e8m0_scale_from_amax(want[i], DT_E4M3, E8M0_RULE_CEIL);
                bad += b.e8m0[i] != e8 || b.scale[i] != e8m0_decode_rcp(e8) || b.scale_inv[i] != e8m0_decode(e8);
            } else {
                bad += b.scale[i] != scale_from_amax(want[i], &sc, NULL) || b.scale_inv[i] != 1.0f / b.scale[i];
            }
        }
        CHECKF(bad == 0, "%s: %ld scale mismatches", gran_name(cfg.gran), bad);
        if (cfg.gran == GRAN_128X128) {
            CHECK_EQ_U64(b.nscales, 4);
            CHECK(b.amax[3] == 300.0f && b.scale[3] == scale_pow2_floor(448.0f / 300.0f));
        }
        free(want);
        free_bufs(&b);
    }
}

static void test_zero_block_and_counts(void)
{
    float x[64] = {0};
    x[40] = 1000.0f, x[41] = 1e-9f, x[42] = NAN;
    uint8_t codes[64], e8[2];
    float scale[2], y[64];
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_1X32);
    QuantBufs qb = {codes, scale, NULL, e8, NULL};
    QuantCounts k;
    CHECK(quant_tensor(&cfg, x, 2, 32, &qb, &k, NULL) == ST_OK);
    CHECK(e8[0] == 0x00 && scale[0] == 0x1p127f); /* all-zero block: amax 0 -> 2^-127 (TE's 0x00) */
    CHECK(codes[0] == 0x00);
    CHECK_EQ_U64(k.flushed, 1);   /* 1e-9 next to 1000 in the same block */
    CHECK_EQ_U64(k.nonfinite, 1); /* the NaN */
    CHECK(quant_dequant(&cfg, &qb, 2, 32, y, NULL) == ST_OK);
    CHECK(y[0] == 0.0f && y[40] == 1024.0f && isnan(y[42])); /* 1000 / 4 = 250 rounds to 256 */
    /* per-tensor FP32: amax 0 -> scale 1 */
    float z[4] = {0, 0, 0, 0}, s1, si1;
    uint8_t c4[4];
    QuantCfg ct = quant_cfg(DT_E5M2, GRAN_TENSOR);
    QuantBufs qt = {c4, &s1, &si1, NULL, NULL};
    CHECK(quant_tensor(&ct, z, 2, 2, &qt, NULL, NULL) == ST_OK);
    CHECK(s1 == 1.0f && si1 == 1.0f);
}

static void test_cast_with_given_scale(void)
{
    /* delayed scaling after the spike: scale 0.7 from amax 640, this step's values */
    float x[6] = {0.001395089319f, 0.001395089435f, 1.0f, 640.0f, 700.0f, -0.0f}, y[6];
    uint8_t c[6];
    QuantCounts k;
    float s = 448.0f / 640.0f;
    float amax = quant_cast(DT_E4M3, FP8_SATFINITE, s, x, 6, c, &k);
    CHECK(amax == 700.0f);
    CHECK(c[0] == 0x00 && c[1] == 0x01 && c[3] == 0x7E && c[4] == 0x7E && c[5] == 0x80);
    CHECK_EQ_U64(k.flushed, 1);
    CHECK_EQ_U64(k.saturated, 1); /* 700 * 0.7 = 490 > 464 */
    CHECK_EQ_U64(k.n, 6);         /* every element counted, the -0 too */
    quant_uncast(DT_E4M3, 1.0f / s, c, 6, y);
    CHECK_REL(y[1], 0.0027901786, 1e-7);
    quant_cast(DT_E4M3, FP8_NOSAT, s, x, 6, c, &k);
    CHECK(c[4] == 0x7F && k.nonfinite == 1 && k.saturated == 1);
}

/* Output channels stored as columns: one scale per column. */
static void test_channel_per_column(void)
{
    const float x[3 * 4] = {1, -2, 0.5f, 100, -3, 4, 0.25f, 7, 2, 1, -0.125f, -50};
    uint8_t codes[12];
    float scale[4], inv[4], amax[4], y[12];
    QuantCfg cfg = quant_cfg(DT_E4M3, GRAN_CHANNEL);
    cfg.chan_cols = 1;
    uint64_t ns;
    CHECK(quant_scale_count(&cfg, 3, 4, &ns, NULL) == ST_OK);
    CHECK_EQ_U64(ns, 4);
    QuantBufs qb = {codes, scale, inv, NULL, amax};
    CHECK(quant_tensor(&cfg, x, 3, 4, &qb, NULL, NULL) == ST_OK);
    const float colmax[4] = {3, 4, 0.5f, 100};
    for (int c = 0; c < 4; c++) CHECK(amax[c] == colmax[c] && scale[c] == 448.0f / colmax[c]);
    CHECK_EQ_U64(quant_scale_index_cfg(&cfg, 4, 2, 3), 3);
    CHECK(quant_dequant(&cfg, &qb, 3, 4, y, NULL) == ST_OK);
    for (int i = 0; i < 12; i++) CHECK_REL(y[i], x[i], 1.0 / 16 + 3 * 0x1p-24); /* each column's amax maps to 448 */
    cfg.chan_cols = 0;
    CHECK(quant_scale_count(&cfg, 3, 4, &ns, NULL) == ST_OK);
    CHECK_EQ_U64(ns, 3);
}

static void test_errors(void)
{
    float x[4] = {0};
    uint8_t c[4];
    float s;
    Err e;
    QuantCfg cfg = quant_cfg(DT_BF16, GRAN_TENSOR);
    QuantBufs qb = {c, &s, NULL, NULL, NULL};
    CHECK(quant_tensor(&cfg, x, 2, 2, &qb, NULL, &e) == ST_USAGE);
    CHECK_CONTAINS(e.msg, "bf16");
    cfg = quant_cfg(DT_E4M3, GRAN_1X32);
    CHECK(quant_tensor(&cfg, x, 2, 2, &qb, NULL, &e) == ST_SOFTWARE); /* no e8m0 buffer */
    cfg = quant_cfg(DT_E4M3, GRAN_TENSOR);
    CHECK(quant_tensor(&cfg, x, 0, 2, &qb, NULL, &e) == ST_USAGE);
    CHECK(quant_tensor(&cfg, x, UINT64_MAX, 2, &qb, NULL, &e) == ST_OVERFLOW);
}

static void test_qerror(void)
{
    float x[3] = {3, 4, NAN}, y[3] = {3, 3, 0};
    QuantCounts k = {3, 1, 1, 0}; /* 3 quantized (the NaN as 0), 1 saturated, 1 flushed */
    QuantError q;
    qerr_compute(x, y, 3, &k, &q);
    CHECK_EQ_U64(q.n, 2);
    CHECK_EQ_U64(q.skipped, 1);
    CHECK_REL(q.rel_rms, 0.2, 1e-15); /* sqrt(1 / 25) */
    CHECK_REL(q.snr_db, 10 * log10(25.0), 1e-15);
    CHECK(q.max_abs == 1.0);
    CHECK_REL(q.mean_rel, 0.125, 1e-15); /* (0 + 1/4) / 2 */
    /* fractions of the 2 finite inputs (3 elements less the NaN): 1/2 each, not 1/3 of every element */
    CHECK(q.saturated_frac == 0.5 && q.flushed_frac == 0.5);
    qerr_compute(x, x, 2, NULL, &q);
    CHECK(q.rel_rms == 0 && isinf(q.snr_db) && q.max_abs == 0);
    /* a finite input that came back Inf (an E8M0 round trip past FLT_MAX): an infinite error, not one left
     * out (it reported the 3's exact round trip: rel RMS 0, max abs err 0) */
    float inf_out[2] = {3, INFINITY};
    qerr_compute(x, inf_out, 2, NULL, &q);
    CHECK_EQ_U64(q.nonfinite, 1);
    CHECK_EQ_U64(q.n, 1); /* the sums hold the 3 alone: the 4 that came back Inf is counted in nonfinite */
    CHECK(isinf(q.rel_rms) && q.rel_rms > 0 && isinf(q.max_abs) && isinf(q.mean_rel));
    CHECK(isinf(q.snr_db) && q.snr_db < 0);
    /* every input NaN or Inf: nothing to measure, so no figure (it reported 0 % error, a perfect round trip) */
    float bad[3] = {NAN, INFINITY, -INFINITY}, out[3] = {0, 0, 0};
    qerr_compute(bad, out, 3, NULL, &q);
    CHECK_EQ_U64(q.n, 0);
    CHECK_EQ_U64(q.skipped, 3);
    CHECK(isnan(q.rel_rms) && isnan(q.snr_db) && isnan(q.mean_rel) && isnan(q.max_abs));
}

static void test_synth(void)
{
    enum { R = 512, C = 1024, N = R * C };
    float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
    Err e;
    for (int d = 0; d < 2; d++) {
        CHECK(synth_fill((SynthDist)d, 42, R, C, a, &e) == ST_OK);
        CHECK(synth_fill((SynthDist)d, 42, R, C, b, &e) == ST_OK);
        CHECK(!memcmp(a, b, N * sizeof(float)));
        double m = 0, v = 0;
        for (int i = 0; i < N; i++) m += a[i], v += (double)a[i] * a[i];
        m /= N, v = v / N - m * m;
        /* 5 standard errors: sd(mean) = 1/sqrt(N); sd(var) = sqrt((kurtosis - 1) / N), kurtosis 3 or 6 */
        CHECKF(fabs(m) < 5 / sqrt(N), "%s mean %g", synth_name((SynthDist)d), m);
        CHECKF(fabs(v - 1) < 5 * sqrt((d ? 5.0 : 2.0) / N), "%s var %g", synth_name((SynthDist)d), v);
    }
    CHECK(synth_fill(SYNTH_NORMAL, 43, R, C, b, &e) == ST_OK && memcmp(a, b, N * sizeof(float)));
    /* outliers: 0.1% of 1024 columns -> 1 channel; massive values at rows 0 (and 1024, ...) */
    CHECK(synth_fill(SYNTH_OUTLIERS, 1, R, C, a, &e) == ST_OK);
    int massive = 0;
    for (int i = 0; i < N; i++) massive += fabsf(a[i]) >= 500.0f;
    CHECK_EQ_INT(massive, 1);
    SynthDist d;
    CHECK(synth_parse("outliers", &d) == 0 && d == SYNTH_OUTLIERS && synth_parse("cauchy", &d) == -1);
    CHECK(synth_fill(SYNTH_NORMAL, 1, 0, 3, a, &e) == ST_USAGE);
    free(a), free(b);
}

/* The seed's outlier argument, measured: with LLM-like outliers, one per-tensor
 * E4M3 scale flushes and coarsens the many small values that 1x32 and 1x128
 * blocks keep (every element weighted the same: mean_rel, flushed). */
static void test_outliers_per_tensor_loses(void)
{
    enum { R = 1024, C = 4096 };
    float *x = malloc((size_t)R * C * sizeof(float));
    CHECK(synth_fill(SYNTH_OUTLIERS, 1, R, C, x, NULL) == ST_OK);
    QuantError q[GRAN_COUNT_];
    for (int g = 0; g < GRAN_COUNT_; g++) {
        QuantCfg cfg = quant_cfg(DT_E4M3, (Granularity)g);
        Bufs b = alloc_bufs(cfg.gran, R, C);
        QuantBufs qb = {b.codes, b.scale, b.scale_inv, b.e8m0, NULL};
        QuantCounts k;
        CHECK(quant_tensor(&cfg, x, R, C, &qb, &k, NULL) == ST_OK);
        CHECK(quant_dequant(&cfg, &qb, R, C, b.y, NULL) == ST_OK);
        qerr_compute(x, b.y, (uint64_t)R * C, &k, &q[g]);
        free_bufs(&b);
    }
    for (int g = GRAN_1X32; g <= GRAN_1X128; g++) {
        CHECKF(q[GRAN_TENSOR].mean_rel > q[g].mean_rel * 1.05, "tensor %.4f vs %s %.4f", q[GRAN_TENSOR].mean_rel,
               gran_name((Granularity)g), q[g].mean_rel);
        CHECKF(q[GRAN_TENSOR].flushed_frac > 20 * q[g].flushed_frac, "flushed: tensor %g vs %s %g",
               q[GRAN_TENSOR].flushed_frac, gran_name((Granularity)g), q[g].flushed_frac);
    }
    free(x);
}

int main(void)
{
    RUN(test_scale_index_layout);
    RUN(test_round_trip_bounds);
    RUN(test_block_scales);
    RUN(test_zero_block_and_counts);
    RUN(test_cast_with_given_scale);
    RUN(test_channel_per_column);
    RUN(test_errors);
    RUN(test_qerror);
    RUN(test_synth);
    RUN(test_outliers_per_tensor_loses);
    return test_summary();
}
