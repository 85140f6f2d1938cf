/* tests/unit/test_exec_backend.c — the CPU reference backend's quantization
 * and GEMM numerics against direct computations with fp8/, and the backend
 * interface's validation (Hopper's TN-only FP8 rule, cuBLASLt's type rules).
 * These are the checks the CUDA backend's kernels will be held to. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/rng.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "test.h"

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) fprintf(stderr, "  %s\n", e.msg);
    return bk;
}

static void fill_normal(float *x, uint64_t n, uint64_t seed, double sd)
{
    Rng r = {.s = seed};
    for (uint64_t i = 0; i < n; i++) x[i] = (float)(rng_normal(&r) * sd);
}

static float amax_of(const float *x, uint64_t n)
{
    float m = 0.0f;
    for (uint64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}

/* cast + transpose + amax: codes are exactly fp8_encode(x·scale) (saturating),
 * the transposed copy is the transpose, amax is of the unscaled input and
 * scale_inv = 1/scale. */
static void test_cast_transpose(void)
{
    Backend *bk = cpu();
    enum { R = 7, C = 13 };
    float x[R * C], scale = 3.5f, sinv = 0.0f, amax = 0.25f; /* amax is max-combined */
    uint8_t row[R * C], col[R * C];
    fill_normal(x, R * C, 5, 40.0);
    x[3] = 1000.0f; /* saturates: 1000·3.5 > 448 */
    CastDesc c = {.in = x,
                  .in_dtype = DT_FP32,
                  .rows = R,
                  .cols = C,
                  .out_dtype = DT_E4M3,
                  .out_row = row,
                  .out_col = col,
                  .scale = &scale,
                  .scale_inv = &sinv,
                  .amax = &amax};
    Err e;
    CHECK(!bk->cast_transpose(bk, &c, &e));
    int bad = 0;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) {
            uint8_t want = fp8_encode_f32(DT_E4M3, x[r * C + j] * scale, FP8_SATFINITE);
            bad += row[r * C + j] != want || col[j * R + r] != want;
        }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(row[3], 0x7E); /* 448, not NaN */
    CHECK(amax == 1000.0f);
    CHECK(sinv == 1.0f / 3.5f);
    /* an input dequantization factor: x = stored · in_scale_inv */
    float half = 0.5f, amax2 = 0.0f;
    c.in_scale_inv = &half;
    c.amax = &amax2;
    c.out_col = NULL;
    CHECK(!bk->cast_transpose(bk, &c, &e));
    CHECK(row[0] == fp8_encode_f32(DT_E4M3, x[0] * 0.5f * scale, FP8_SATFINITE));
    CHECK(amax2 == 500.0f);
    /* an amax-only call (no output, no scale) leaves the dequantization factor the caller holds alone: no FP8
     * data was written for it to travel with (CUDA's kernels alike); the amax is x's, 1000 */
    float kept = 7.0f, amax3 = 0.0f;
    c.in_scale_inv = NULL;
    c.out_row = c.out_col = NULL;
    c.scale = NULL;
    c.scale_inv = &kept;
    c.amax = &amax3;
    CHECK(!bk->cast_transpose(bk, &c, &e));
    CHECK(amax3 == 1000.0f);
    CHECK(kept == 7.0f);
    /* col_ld: rows 2..4 of x cast alone (a MoE expert's rows) into columns 2..4 of a (C, R) transposed copy,
     * the other columns untouched: col[j·R + 2 + i] = fp8(x[(2 + i)·C + j]·scale), i < 3 */
    memset(col, 0xAA, sizeof col);
    c = (CastDesc){.in = x + 2 * C,
                   .in_dtype = DT_FP32,
                   .rows = 3,
                   .cols = C,
                   .out_dtype = DT_E4M3,
                   .out_col = col + 2,
                   .col_ld = R,
                   .scale = &scale};
    CHECK(!bk->cast_transpose(bk, &c, &e));
    bad = 0;
    for (int j = 0; j < C; j++)
        for (int r = 0; r < R; r++) {
            uint8_t want = r >= 2 && r < 5 ? fp8_encode_f32(DT_E4M3, x[r * C + j] * scale, FP8_SATFINITE) : 0xAA;
            bad += col[j * R + r] != want;
        }
    CHECK_EQ_INT(bad, 0);
    c.col_ld = 2; /* below its 3 rows */
    CHECK_EQ_INT(bk->cast_transpose(bk, &c, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "cast_transpose: transposed copy's leading dimension 2 is below its rows");
    bk->destroy(bk);
}

/* Block scaling (DeepSeek-V3) on a (2, 130) FP32 tensor, row 0 = {224, 1, 0 x 126, 0.75, -7}, row 1 zero:
 *   1x128, row-wise: tiles along the row (test_oracle_fp8.c's hand case): scale_inv {0.5, 1/64, 1, 1},
 *     codes 224 x 2 -> 0x7E, 1 x 2 -> 0x40, 0.75 x 64 -> 0x64, -7 x 64 -> 0xFE;
 *   1x128, transposed (130, 2): each column of x is one tile of 2 values (re-tiled 128x1): column 0 {224, 0}
 *     scale 2 (scale_inv 0.5), codes 0x7E, 0; column 1 {1, 0}: scale 448, 1 x 448 -> 0x7E, scale_inv
 *     1/448; columns 2..127 zero: scale_inv 1; column 129 {-7, 0}: scale 64 -> 0xFE, scale_inv 1/64;
 *   128x128: the blocks (rows 0-1, cols 0-127) amax 224 and (rows 0-1, cols 128-129) amax 7: scale_inv
 *     {0.5, 1/64}; the transposed copy's blocks are the same values: its codes are the row-wise codes
 *     transposed and its scale_inv {0.5, 1/64} (blocks (0, 0) and (1, 0) of the (130, 2) tensor). */
static void test_cast_blocks(void)
{
    Backend *bk = cpu();
    enum { R = 2, C = 130 };
    static float x[R * C];
    x[0] = 224.0f, x[1] = 1.0f, x[128] = 0.75f, x[129] = -7.0f;
    uint8_t row[R * C], col[R * C];
    float rs[4], cs[C];
    CastDesc c = {.in = x,
                  .in_dtype = DT_FP32,
                  .rows = R,
                  .cols = C,
                  .out_dtype = DT_E4M3,
                  .out_row = row,
                  .out_col = col,
                  .gran = GRAN_1X128,
                  .row_scale_inv = rs,
                  .col_scale_inv = cs};
    Err e;
    CHECK(!bk->cast_transpose(bk, &c, &e));
    CHECK(rs[0] == 0.5f && rs[1] == 0.015625f && rs[2] == 1.0f && rs[3] == 1.0f);
    CHECK(row[0] == 0x7E && row[1] == 0x40 && row[2] == 0 && row[128] == 0x64 && row[129] == 0xFE && row[C] == 0);
    CHECK(col[0] == 0x7E && col[1] == 0 && col[2] == 0x7E && col[3] == 0 && col[2 * 129] == 0xFE);
    CHECK(cs[0] == 0.5f && cs[1] == 1.0f / 448.0f && cs[2] == 1.0f && cs[127] == 1.0f && cs[129] == 0.015625f);
    c.gran = GRAN_128X128;
    CHECK(!bk->cast_transpose(bk, &c, &e));
    CHECK(rs[0] == 0.5f && rs[1] == 0.015625f && cs[0] == 0.5f && cs[1] == 0.015625f);
    int bad = 0;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) bad += col[j * R + r] != row[r * C + j];
    CHECK_EQ_INT(bad, 0);
    c.col_scale_inv = NULL;
    CHECK_EQ_INT(bk->cast_transpose(bk, &c, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "cast_transpose: a block-scaled copy needs its scale_inv array");
    bk->destroy(bk);
}

/* D = A·Bᵀ with per-tensor FP8 operands against the same products computed
 * directly from fp8/'s codes in double. Tolerance, derived: the backend sums K
 * exact products in FP32, so |D − ref| ≤ γ_K · Σ|a·b| · sa⁻¹·sb⁻¹ with
 * γ_K = K·2⁻²⁴ (plus one rounding of the rescale). */
static void test_gemm_fp8_vs_direct(void)
{
    Backend *bk = cpu();
    enum { M = 9, N = 11, K = 300 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K), d[M * N];
    uint8_t *qa = malloc(M * K), *qb = malloc(N * K);
    fill_normal(a, M * K, 1, 3.0);
    fill_normal(b, N * K, 2, 0.02);
    float sa = fp8_max(DT_E4M3) / amax_of(a, M * K), sb = fp8_max(DT_E4M3) / amax_of(b, N * K);
    float ia = 1.0f / sa, ib = 1.0f / sb;
    for (int i = 0; i < M * K; i++) qa[i] = fp8_encode_f32(DT_E4M3, a[i] * sa, FP8_SATFINITE);
    for (int i = 0; i < N * K; i++) qb[i] = fp8_encode_f32(DT_E4M3, b[i] * sb, FP8_SATFINITE);
    GemmDesc g = {.m = M, .n = N, .k = K};
    g.a = (GemmOperand){.ptr = qa, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = &ia};
    g.b = (GemmOperand){.ptr = qb, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = &ib};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
    Err e;
    CHECK(!bk->gemm(bk, &g, &e));
    int bad = 0;
    double worst = 0.0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double ref = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++) {
                double p = (double)fp8_decode(DT_E4M3, qa[m * K + k]) * fp8_decode(DT_E4M3, qb[n * K + k]);
                ref += p;
                mag += fabs(p);
            }
            ref *= (double)ia * ib;
            double tol = ((double)K * 0x1p-24 * mag + 0x1p-24 * fabs(ref / ((double)ia * ib))) * ((double)ia * ib) +
                         0x1p-24 * fabs(ref);
            double err = fabs((double)d[m * N + n] - ref);
            if (err > tol) bad++;
            if (err / (tol + 1e-300) > worst) worst = err / (tol + 1e-300);
        }
    if (getenv("GEMM_VERBOSE")) printf("  worst error = %.3f of the bound\n", worst);
    CHECKF(bad == 0, "%d of %d outputs outside the FP32 accumulation bound (worst %.2f of the bound)", bad, M * N,
           worst);
    /* and the FP8 GEMM approximates the unquantized product to E4M3's precision:
     * each operand carries ≤ 2^-4 relative rounding, so |D − A·Bᵀ| ≤ 2·2^-4·Σ|a·b| */
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double ex = 0.0, mag = 0.0;
            for (int k = 0; k < K; k++)
                ex += (double)a[m * K + k] * b[n * K + k], mag += fabs(a[m * K + k] * b[n * K + k]);
            CHECK(fabs(d[m * N + n] - ex) <= 2 * 0x1p-4 * mag);
        }
    free(a), free(b), free(qa), free(qb);
    bk->destroy(bk);
}

/* Hybrid E5M2 x E4M3 with BF16 output, bias, accumulate and output amax: the
 * epilogue is D = round_bf16(acc·sa⁻¹·sb⁻¹ + D_old + bias), amax of that sum. */
static void test_gemm_epilogue(void)
{
    Backend *bk = cpu();
    enum { M = 4, N = 5, K = 8 };
    uint8_t qa[M * K], qb[N * K];
    Rng r = {.s = 3};
    for (int i = 0; i < M * K; i++) qa[i] = (uint8_t)(rng_below(&r, 0x7B)); /* finite E5M2 */
    for (int i = 0; i < N * K; i++) qb[i] = (uint8_t)(rng_below(&r, 0x7E)); /* finite E4M3 */
    float ia = 0.25f, ib = 2.0f, amax = 0.0f, bias[N] = {1, -2, 3, -4, 5};
    uint16_t d[M * N];
    for (int i = 0; i < M * N; i++) d[i] = bf16_encode((float)i);
    GemmDesc g = {.m = M, .n = N, .k = K, .accum = GEMM_ACCUMULATE, .bias = bias, .bias_dtype = DT_FP32};
    g.a = (GemmOperand){.ptr = qa, .dtype = DT_E5M2, .layout = GEMM_K_INNER, .scale_inv = &ia};
    g.b = (GemmOperand){.ptr = qb, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = &ib};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_BF16, .amax = &amax};
    Err e;
    CHECK(!bk->gemm(bk, &g, &e));
    float want_amax = 0.0f;
    int bad = 0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f; /* same order, FP32 */
            for (int k = 0; k < K; k++) acc += fp8_decode(DT_E5M2, qa[m * K + k]) * fp8_decode(DT_E4M3, qb[n * K + k]);
            float v = acc * (ia * ib) + (float)(m * N + n) + bias[n];
            want_amax = fmaxf(want_amax, fabsf(v));
            bad += d[m * N + n] != bf16_encode(v);
        }
    CHECK_EQ_INT(bad, 0);
    CHECK(amax == want_amax);
    bk->destroy(bk);
}

/* FP8 output: D = sat_fp8(acc · scale), amax before the scale. */
static void test_gemm_fp8_output(void)
{
    Backend *bk = cpu();
    enum { M = 3, N = 3, K = 4 };
    float a[M * K], b[N * K], scale = 100.0f, amax = 0.0f;
    fill_normal(a, M * K, 7, 1.0);
    fill_normal(b, N * K, 8, 1.0);
    uint8_t d[M * N];
    GemmDesc g = {.m = M, .n = N, .k = K};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_FP32, .layout = GEMM_K_INNER};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_FP32, .layout = GEMM_K_INNER};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_E4M3, .scale = &scale, .amax = &amax};
    Err e;
    CHECK(!bk->gemm(bk, &g, &e));
    float am = 0.0f;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++) acc += a[m * K + k] * b[n * K + k];
            am = fmaxf(am, fabsf(acc));
            CHECK(d[m * N + n] == fp8_encode_f32(DT_E4M3, acc * scale, FP8_SATFINITE));
        }
    CHECK(amax == am);
    bk->destroy(bk);
}

/* 1x128 block scales: each 128-wide K block's partial sum is rescaled by its
 * own factors before it joins the FP32 accumulator (from 0, blocks in order).
 * Inside a block the sum is in the BLAS's order, which differs by CPU (an
 * AVX-512 sgemm kernel adds in another order than an AVX2 one), so the codes
 * keep every in-block sum exact: E4M3 exponent fields 7-9 (codes 0x38-0x4F,
 * |x| in [1, 7.5], steps of 2^-3), products |p| <= 56.25 in steps of 2^-6, a
 * block's sum |s| <= 128 x 56.25 = 7,200 = 460,800 steps of 2^-6 < 2^24:
 * exact in FP32 whatever the order. The scaled parts are then added in the
 * contract's order, so the reference below may round and still match bit for bit. */
static void test_gemm_block_scales(void)
{
    Backend *bk = cpu();
    enum { M = 2, N = 3, K = 300, NKB = 3 };
    uint8_t qa[M * K], qb[N * K];
    Rng r = {.s = 4};
    for (int i = 0; i < M * K; i++) qa[i] = (uint8_t)(0x38 + rng_below(&r, 24)) | (uint8_t)(rng_below(&r, 2) << 7);
    for (int i = 0; i < N * K; i++) qb[i] = (uint8_t)(0x38 + rng_below(&r, 24));
    float sa[M * NKB], sb = 0.125f, d[M * N];
    for (int i = 0; i < M * NKB; i++) sa[i] = ldexpf(1.0f, (int)rng_below(&r, 8) - 4);
    GemmDesc g = {.m = M, .n = N, .k = K};
    g.a = (GemmOperand){.ptr = qa, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = sa, .scale_gran = GRAN_1X128};
    g.b = (GemmOperand){.ptr = qb, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = &sb};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
    Err e;
    CHECK(!bk->gemm(bk, &g, &e));
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int kb = 0; kb < NKB; kb++) {
                float part = 0.0f;
                for (int k = kb * 128; k < K && k < (kb + 1) * 128; k++)
                    part += fp8_decode(DT_E4M3, qa[m * K + k]) * fp8_decode(DT_E4M3, qb[n * K + k]);
                acc += part * (sa[m * NKB + kb] * sb);
            }
            CHECK(d[m * N + n] == acc);
        }
    bk->destroy(bk);
}

/* BF16 operands stored K-outer give bit-identical results to K-inner storage:
 * the layout changes addressing, not the order of the sum. */
static void test_gemm_layouts(void)
{
    Backend *bk = cpu();
    enum { M = 5, N = 6, K = 7 };
    uint16_t a[M * K], at[K * M], b[N * K], bt[K * N];
    float x[64];
    fill_normal(x, 64, 9, 1.0);
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) a[m * K + k] = at[k * M + m] = bf16_encode(x[(m * K + k) % 64]);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) b[n * K + k] = bt[k * N + n] = bf16_encode(x[(n * 7 + k * 3) % 64]);
    float d1[M * N], d2[M * N];
    GemmDesc g = {.m = M, .n = N, .k = K};
    g.a = (GemmOperand){.ptr = a, .dtype = DT_BF16, .layout = GEMM_K_INNER};
    g.b = (GemmOperand){.ptr = b, .dtype = DT_BF16, .layout = GEMM_K_INNER};
    g.d = (GemmOutput){.ptr = d1, .dtype = DT_FP32};
    Err e;
    CHECK(!bk->gemm(bk, &g, &e));
    g.a = (GemmOperand){.ptr = at, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
    g.b = (GemmOperand){.ptr = bt, .dtype = DT_BF16, .layout = GEMM_K_OUTER};
    g.d.ptr = d2;
    CHECK(!bk->gemm(bk, &g, &e));
    CHECK(!memcmp(d1, d2, sizeof d1));
    bk->destroy(bk);
}

/* The interface refuses what Hopper's cuBLASLt refuses, naming the field. */
static void test_gemm_rules(void)
{
    uint8_t q[16] = {0};
    float one = 1.0f, d[16];
    GemmDesc g = {.m = 2, .n = 2, .k = 4};
    g.a = (GemmOperand){.ptr = q, .dtype = DT_E4M3, .layout = GEMM_K_INNER, .scale_inv = &one};
    g.b = (GemmOperand){.ptr = q, .dtype = DT_E4M3, .layout = GEMM_K_OUTER, .scale_inv = &one};
    g.d = (GemmOutput){.ptr = d, .dtype = DT_FP32};
    Err e;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "TN only");
    g.b.layout = GEMM_K_INNER;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_OK);
    g.a.dtype = g.b.dtype = DT_E5M2;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "E5M2 x E5M2");
    g.a.dtype = DT_E4M3;
    g.b.scale_inv = NULL;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "no scale_inv");
    g.b.scale_inv = &one;
    g.d.dtype = DT_E4M3;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE); /* FP8 output without a scale */
    g.d.scale = &one;
    CHECK(g.a.dtype == DT_E4M3 && g.b.dtype == DT_E5M2);
    g.d.dtype = DT_E5M2; /* E4M3 x E5M2 -> E5M2 is in cuBLASLt's table */
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_OK);
    g.b.dtype = DT_E4M3; /* E4M3 x E4M3 -> E5M2 is not */
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "E4M3 x E4M3 -> E5M2");
    g.d.dtype = DT_E4M3;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_OK);
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_OK);
    g.accum = GEMM_ACCUMULATE;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "accumulation");
    g.accum = GEMM_OVERWRITE;
    g.b.dtype = DT_BF16;
    g.b.scale_inv = NULL;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE); /* FP8 x BF16 */
    g.m = 0;
    CHECK_EQ_INT(gemm_desc_check(&g, &e), ST_USAGE);
}

/* Delayed scaling on a bank: the seed's spike (amax 640 → next E4M3 scale
 * 448/640), the history rolling, and the previous scale kept on amax 0. */
static void test_delayed_bank(void)
{
    Backend *bk = cpu();
    enum { L = 3, NT = 2 };
    float hist[L * NT] = {0}, scale[NT] = {1.0f, 1.0f}, sinv[NT] = {1.0f, 1.0f};
    ScalingBank b = {.n = NT,
                     .history_len = L,
                     .algo = AMAX_ALGO_MAX,
                     .fmt = DT_E4M3,
                     .amax_history = hist,
                     .scale = scale,
                     .scale_inv = sinv};
    const float seq[5] = {1.0f, 640.0f, 2.0f, 3.0f, 4.0f};
    const float want[5] = {448.0f, 448.0f / 640.0f, 448.0f / 640.0f, 448.0f / 640.0f, 448.0f / 4.0f};
    Err e;
    for (int s = 0; s < 5; s++) {
        hist[0] = seq[s]; /* tensor 0: this step's amax in row 0 */
        hist[1] = 0.0f;   /* tensor 1 did not run: amax 0 */
        CHECK(!bk->scaling_delayed_update(bk, &b, &e));
        CHECKF(scale[0] == want[s], "step %d: scale %.9g, expected %.9g", s + 1, (double)scale[0], (double)want[s]);
        if (s == 1) CHECK(fabsf(scale[0] - 0.70f) < 1e-6f); /* the seed's 448/640 = 0.70 */
        CHECK(hist[0] == 0.0f && hist[1] == 0.0f);          /* row 0 cleared for the next step */
        CHECK(scale[1] == 1.0f);                            /* kept */
    }
    CHECK(hist[1 * NT] == 3.0f && hist[2 * NT] == 4.0f); /* window [0, 3, 4] after the last roll */
    bk->destroy(bk);
}

/* A zero amax in row 0 (the tensor did not run) leaves its column alone, as
 * TE's bulk kernel does: no roll, no scale update, even where the window's max
 * would give another scale. By hand, E4M3 (448), history len 3, MAX:
 *   tensor 0: column [0, 7, 2]  -> unchanged [0, 7, 2], scale 5 kept (a roll
 *             would give [0, 2, 0] and 448/7 = 64);
 *   tensor 1: column [8, 7, 2]  -> scale 448/8 = 56, rolled to [0, 2, 8]. */
static void test_delayed_zero_skips(void)
{
    Backend *bk = cpu();
    enum { L = 3, NT = 2 };
    float hist[L * NT] = {0.0f, 8.0f, 7.0f, 7.0f, 2.0f, 2.0f}, scale[NT] = {5.0f, 1.0f};
    ScalingBank b = {
        .n = NT, .history_len = L, .algo = AMAX_ALGO_MAX, .fmt = DT_E4M3, .amax_history = hist, .scale = scale};
    Err e;
    CHECK(!bk->scaling_delayed_update(bk, &b, &e));
    CHECK(hist[0] == 0.0f && hist[NT] == 7.0f && hist[2 * NT] == 2.0f);
    CHECK(scale[0] == 5.0f);
    CHECK(hist[1] == 0.0f && hist[NT + 1] == 2.0f && hist[2 * NT + 1] == 8.0f);
    CHECK(scale[1] == 56.0f);
    b.algo = AMAX_ALGO_MOST_RECENT; /* the same for most_recent: nothing moves */
    CHECK(!bk->scaling_delayed_update(bk, &b, &e));
    CHECK(hist[0] == 0.0f && hist[NT] == 7.0f && hist[2 * NT] == 2.0f && scale[0] == 5.0f);
    bk->destroy(bk);
}

static void test_backend_by_name(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK_EQ_INT(backend_create("cpu", &bk, &e), ST_OK);
    CHECK(bk && !strcmp(bk->name, "cpu"));
    if (bk) bk->destroy(bk);
    bk = NULL;
    Status st = backend_create("cuda", &bk, &e);
#if !defined(FP8PLAN_HAVE_CUDA)
    CHECK_EQ_INT(st, ST_UNAVAILABLE);
#endif
    if (st == ST_OK) {
        bk->destroy(bk);
    } else {
        CHECK_EQ_INT(st, ST_UNAVAILABLE);
        CHECK_CONTAINS(e.msg, "--backend cuda");
    }
    CHECK_EQ_INT(backend_create("tpu", &bk, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "unknown backend 'tpu'");
}

int main(void)
{
    RUN(test_cast_transpose);
    RUN(test_cast_blocks);
    RUN(test_gemm_fp8_vs_direct);
    RUN(test_gemm_epilogue);
    RUN(test_gemm_fp8_output);
    RUN(test_gemm_block_scales);
    RUN(test_gemm_layouts);
    RUN(test_gemm_rules);
    RUN(test_delayed_bank);
    RUN(test_delayed_zero_skips);
    RUN(test_backend_by_name);
    return test_summary();
}
