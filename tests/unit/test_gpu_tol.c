/* tests/unit/test_gpu_tol.c — the GPU checks' hardware-dependent tolerances
 * (tests/gpu/gpu_tol.h) against what they claim to cover, on the CPU:
 *  - FP8 fast accumulation: an emulation of Hopper's 13-bit running sum, one
 *    truncation per k = 32 slice, on E4M3 operands as gpu_kernels.c makes them;
 *    every element and the norm must fall inside tol_fast(K), and the bound
 *    must stay tight enough to catch a real error;
 *  - FP8 output: two FP32 sums a hair apart that straddle a rounding boundary,
 *    over every E4M3 and E5M2 code, including the subnormals that need the
 *    absolute term;
 *  - router scores and combine weights: the CPU's softmax and sigmoid (the
 *    operations of exec/cpu/cpu_moe.c) against the same with every expf moved
 *    by up to 3 ulp either way (CUDA's 2 + glibc's 1), at random and all one
 *    way, for 8 to 256 experts: every score and weight inside the bounds. */
#include <stdlib.h>

#include "exec/backend/rng.h"
#include "fp8/codec.h"
#include "gpu/gpu_tol.h"
#include "test.h"

/* x truncated toward zero to 14 significant bits (1 + 13 mantissa bits). */
static double chop13(double x)
{
    if (x == 0.0) return 0.0;
    int ex;
    double m = frexp(x, &ex); /* |m| in [0.5, 1) */
    return ldexp(trunc(m * 0x1p14) * 0x1p-14, ex);
}

/* E4M3 operand values as gpu_kernels.c's operand() makes them: N(0,1)
 * quantized with the scale that maps the amax (about 4.5 over 2^16 draws) to
 * fmax/2 = 224; drawn from a pool of 2^16 such values. */
enum { POOL = 1 << 16 };
static double pool[POOL];

static void pool_fill(Rng *r)
{
    double amax = 0.0;
    for (int i = 0; i < POOL; i++) pool[i] = rng_normal(r), amax = fmax(amax, fabs(pool[i]));
    double s = 224.0 / amax;
    for (int i = 0; i < POOL; i++)
        pool[i] = fp8_decode(DT_E4M3, fp8_encode_f64(DT_E4M3, pool[i] * s, FP8_SATFINITE)) / s;
}

static void operand(Rng *r, double *v, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) v[i] = pool[rng_u64(r) & (POOL - 1)];
}

typedef struct {
    uint64_t bad;
    double norm_err, max_over_rms;
} Emu;

/* `rows` dot products of length k; the exact sum against the emulated
 * accumulation (rounded to BF16 on neither side: the BF16 ulp of the bound is
 * not used up here, only the accumulation part is measured). */
static Emu emulate(uint64_t k, uint64_t rows, uint64_t seed)
{
    Rng r = {.s = seed};
    pool_fill(&r);
    double *a = malloc(k * sizeof *a), *b = malloc(k * sizeof *b), *ex = malloc(rows * sizeof *ex),
           *em = malloc(rows * sizeof *em);
    double ss_ref = 0.0, ss_err = 0.0;
    for (uint64_t i = 0; i < rows; i++) {
        operand(&r, a, k);
        operand(&r, b, k);
        double exact = 0.0, acc = 0.0, slice = 0.0;
        for (uint64_t j = 0; j < k; j++) {
            exact += a[j] * b[j]; /* products of E4M3 values are exact in double, and so is this sum */
            slice += a[j] * b[j];
            if ((j + 1) % 32 == 0 || j + 1 == k) acc = chop13(acc + slice), slice = 0.0;
        }
        ex[i] = exact, em[i] = acc;
        ss_ref += exact * exact;
        ss_err += (acc - exact) * (acc - exact);
    }
    double rms = sqrt(ss_ref / (double)rows);
    Tol t = tol_fast(k);
    t.abs_rms -= 0x1p-7, t.rel = 0.0, t.norm -= 0x1p-8; /* the accumulation part only */
    Emu out = {0, sqrt(ss_err / ss_ref), 0.0};
    for (uint64_t i = 0; i < rows; i++) {
        out.bad += !tol_element_ok(t, em[i], ex[i], rms);
        out.max_over_rms = fmax(out.max_over_rms, fabs(em[i] - ex[i]) / rms);
    }
    free(a), free(b), free(ex), free(em);
    return out;
}

static void test_fast_accumulation_bound(void)
{
    const uint64_t ks[3] = {512, 4096, 16384};
    for (int i = 0; i < 3; i++) {
        uint64_t k = ks[i], rows = k > 4096 ? 2000 : 8000;
        Emu e = emulate(k, rows, 1234 + k);
        Tol t = tol_fast(k);
        double walk = tol_fp8_walk(k), drift = tol_fp8_drift(k);
        CHECKF(e.bad == 0, "K=%llu: %llu of %llu emulated elements outside 6*walk + 4*drift (max %.3g rms)",
               (unsigned long long)k, (unsigned long long)e.bad, (unsigned long long)rows, e.max_over_rms);
        CHECKF(e.norm_err <= walk + drift, "K=%llu: norm err %.3g > walk + drift %.3g", (unsigned long long)k,
               e.norm_err, walk + drift);
        /* not vacuous: the emulated error uses a fair part of the allowance, and
         * the allowance stays far below what a wrong operand or scale makes */
        CHECKF(e.max_over_rms > 0.15 * (6 * walk + 4 * drift), "K=%llu: max %.3g rms is a tiny part of the bound",
               (unsigned long long)k, e.max_over_rms);
        if (k <= 4096) CHECK(t.abs_rms < 0.05 && t.norm < 0.02); /* the checks' K are 512 and below */
    }
    /* by hand at K = 512: J = 16, walk = 2^-13·4 = 2^-11, drift = 2^-14·16 = 2^-10 */
    CHECK(tol_fp8_walk(512) == 0x1p-11 && tol_fp8_drift(512) == 0x1p-10);
    Tol t = tol_fast(512);
    CHECK_NEAR(t.abs_rms, 0x1p-7 + 6 * 0x1p-11 + 4 * 0x1p-10, 0.0);
    CHECK_NEAR(t.norm, 0x1p-8 + 0x1p-11 + 0x1p-10, 0.0);
    /* a partial slice counts as a step: K = 33 takes 2 */
    CHECK(tol_fp8_fast_steps(33) == 2.0 && tol_fp8_fast_steps(32) == 1.0);
}

/* Two sums 2^-20 apart (relative) straddling every rounding boundary of the
 * format: the codes they round to must be within tol_fp8_out, and for the
 * subnormals only thanks to its absolute term. */
/* Split accumulation, FP32 output, by hand: K = 256 takes chunks of c = 128: J = 4 steps,
 * walk = 2^-13 * 2 = 2^-12, drift = 2^-14 * 4 = 2^-12; per element 2^-12 + 6 * 2^-12 + 4 * 2^-12
 * = 11 * 2^-12, norm 2^-14 + 2^-12 + 2^-12 = 9 * 2^-14. K = 64 is one chunk of 64: J = 2, walk =
 * 2^-13 * sqrt(2), drift = 2^-13: 2^-12 + 6 * sqrt(2) * 2^-13 + 4 * 2^-13 = (6 + 6 * sqrt(2)) * 2^-13.
 * K = 4096 has the bound of K = 128: the chunks' errors walk in FP32 relative to the output's rms. */
static void test_split_accumulation_bound(void)
{
    Tol t = tol_split_f32(256);
    CHECK(t.rel == 0.0 && t.abs == 0.0);
    CHECK(t.abs_rms == 11 * 0x1p-12);
    CHECK(t.norm == 9 * 0x1p-14);
    t = tol_split_f32(64);
    CHECK(fabs(t.abs_rms - (6.0 + 6.0 * sqrt(2.0)) * 0x1p-13) < 1e-18);
    CHECK(t.norm == 0x1p-14 + sqrt(2.0) * 0x1p-13 + 0x1p-13);
    Tol big = tol_split_f32(4096), c128 = tol_split_f32(128);
    CHECK(big.abs_rms == c128.abs_rms && big.norm == c128.norm && big.abs_rms == 11 * 0x1p-12);
}

/* Block-scaled GEMM, BF16 output, by hand: K = 512 promotes every 128: walk = drift = 2^-12 (as above), so
 * per element 2^-7 + 6 * 2^-12 + 4 * 2^-12 = 2^-7 + 10 * 2^-12 = 0.0102539...; norm 2^-8 + 2 * 2^-12; one BF16
 * ulp (2^-7) relative. K = 64: one block of 64, walk = 2^-13 * sqrt(2), drift = 2^-13. */
static void test_block_bound(void)
{
    Tol t = tol_block_bf16(512);
    CHECK(t.rel == 0x1p-7 && t.abs == 0.0);
    CHECK(t.abs_rms == 0x1p-7 + 10 * 0x1p-12);
    CHECK(t.norm == 0x1p-8 + 2 * 0x1p-12);
    t = tol_block_bf16(64);
    CHECK(fabs(t.abs_rms - (0x1p-7 + 6.0 * sqrt(2.0) * 0x1p-13 + 4 * 0x1p-13)) < 1e-18);
    CHECK(tol_block_bf16(4096).abs_rms == tol_block_bf16(128).abs_rms);
}

static void test_fp8_output_bound(void)
{
    const Dtype fmts[2] = {DT_E4M3, DT_E5M2};
    for (int f = 0; f < 2; f++) {
        Dtype fmt = fmts[f];
        Tol t = tol_fp8_out(fmt), rel_only = t;
        rel_only.abs = 0.0;
        int bad = 0, need_abs = 0, straddles = 0;
        for (int c = 0; c < 127; c++) { /* positive finite codes, each with its successor */
            double lo = fp8_decode(fmt, (uint8_t)c), hi = fp8_decode(fmt, (uint8_t)(c + 1));
            if (!isfinite(hi)) break;
            double mid = 0.5 * (lo + hi); /* the rounding boundary */
            double x = mid * (1.0 - 0x1p-20), y = mid * (1.0 + 0x1p-20);
            double qx = fp8_decode(fmt, fp8_encode_f64(fmt, x, FP8_SATFINITE));
            double qy = fp8_decode(fmt, fp8_encode_f64(fmt, y, FP8_SATFINITE));
            if (qx == qy) continue;
            straddles++;
            bad += !tol_element_ok(t, qy, qx, 0.0) || !tol_element_ok(t, qx, qy, 0.0);
            need_abs += !tol_element_ok(rel_only, qy, qx, 0.0);
        }
        CHECKF(bad == 0, "%s: %d straddles outside the bound", dtype_name(fmt), bad);
        CHECK(straddles > 100);
        CHECKF(need_abs > 0, "%s: no straddle needs the subnormal term", dtype_name(fmt));
    }
    /* by hand, E4M3: 1.5·2^-9 rounds (RNE, tie to even) to 2^-8; just below it to 2^-9: 2^-9 apart, while
     * 2^-3·2^-9 = 2^-12 is all the relative term allows; 2^-12 + 2^-9 covers it */
    Tol t = tol_fp8_out(DT_E4M3);
    CHECK(!tol_element_ok((Tol){t.rel, 0.0, 0.0, "", 0.0}, 0x1p-8, 0x1p-9, 0.0));
    CHECK(tol_element_ok(t, 0x1p-8, 0x1p-9, 0.0));
    /* two steps apart is a failure: 2^-9 vs 3·2^-9 */
    CHECK(!tol_element_ok(t, 3 * 0x1p-9, 0x1p-9, 0.0));
    /* normal values: 448 vs 416 (one step at the top, 32 = 2^-3·256 ≤ 2^-3·416) passes; 448 vs 384 fails */
    CHECK(tol_element_ok(t, 448.0, 416.0, 0.0) && !tol_element_ok(t, 448.0, 384.0, 0.0));
}

/* f moved n ulps (n < 0: down). */
static float nudge(float f, int n)
{
    for (; n > 0; n--) f = nextafterf(f, INFINITY);
    for (; n < 0; n++) f = nextafterf(f, -INFINITY);
    return f;
}

/* A token's scores as cpu_moe.c computes them, each exponential moved shift[e] ulps. */
static void scores_em(int sigmoid, const float *z, uint32_t E, const int *shift, float *s)
{
    if (sigmoid) {
        for (uint32_t e = 0; e < E; e++) s[e] = 1.0f / (1.0f + nudge(expf(-z[e]), shift[e]));
        return;
    }
    float mx = -INFINITY, sum = 0.0f;
    for (uint32_t e = 0; e < E; e++) mx = z[e] > mx ? z[e] : mx;
    for (uint32_t e = 0; e < E; e++) {
        s[e] = nudge(expf(z[e] - mx), shift[e]);
        sum += s[e];
    }
    for (uint32_t e = 0; e < E; e++) s[e] /= sum;
}

/* The combine weights of the k largest scores (ids from ref), normalised or not, scaled by 2.5. */
static void weights_em(const float *s, const float *ref, uint32_t E, uint32_t k, int norm, float *w)
{
    uint32_t ids[8];
    for (uint32_t j = 0; j < k; j++) {
        uint32_t best = UINT32_MAX;
        for (uint32_t e = 0; e < E; e++) {
            int taken = 0;
            for (uint32_t l = 0; l < j; l++) taken |= ids[l] == e;
            if (!taken && (best == UINT32_MAX || ref[e] > ref[best])) best = e;
        }
        ids[j] = best;
    }
    float sum = 0.0f;
    for (uint32_t j = 0; j < k; j++) sum += s[ids[j]];
    for (uint32_t j = 0; j < k; j++) w[j] = (norm ? s[ids[j]] / sum : s[ids[j]]) * 2.5f;
}

static void test_router_bounds(void)
{
    enum { TOKENS = 3000, KMAX = 8 };
    const uint32_t Es[3] = {8, 64, 256};
    Rng r = {.s = 5};
    static float z[256], sc[256], sg[256];
    static int zero[256], shift[256];
    for (int sig = 0; sig < 2; sig++)
        for (int ei = 0; ei < 3; ei++) {
            const uint32_t E = Es[ei], k = E < KMAX ? E / 2 : KMAX;
            const double tol = tol_router_score_rel(sig, E),
                         tw[2] = {tol_router_weight_rel(tol, 0, k), tol_router_weight_rel(tol, 1, k)};
            double worst = 0.0, worst_w[2] = {0.0, 0.0};
            for (int t = 0; t < TOKENS; t++) {
                for (uint32_t e = 0; e < E; e++) {
                    z[e] = (float)(rng_normal(&r) * 2.0);
                    /* a third of the tokens all +3, a third all -3, the rest at random in [-3, 3] */
                    shift[e] = t % 3 == 0 ? 3 : t % 3 == 1 ? -3 : (int)rng_below(&r, 7) - 3;
                }
                scores_em(sig, z, E, zero, sc);
                scores_em(sig, z, E, shift, sg);
                for (uint32_t e = 0; e < E; e++) worst = fmax(worst, fabs((double)sg[e] - sc[e]) / sc[e]);
                for (int norm = 0; norm < 2; norm++) {
                    float wc[KMAX], wg[KMAX];
                    weights_em(sc, sc, E, k, norm, wc);
                    weights_em(sg, sc, E, k, norm, wg);
                    for (uint32_t j = 0; j < k; j++)
                        worst_w[norm] = fmax(worst_w[norm], fabs((double)wg[j] - wc[j]) / wc[j]);
                }
            }
            CHECKF(worst <= tol, "%s E=%u: scores %.3g apart, bound %.3g", sig ? "sigmoid" : "softmax", E, worst, tol);
            CHECKF(worst > 0.0, "the emulation moved nothing");
            for (int norm = 0; norm < 2; norm++)
                CHECKF(worst_w[norm] <= tw[norm], "%s E=%u norm %d: weights %.3g apart, bound %.3g",
                       sig ? "sigmoid" : "softmax", E, norm, worst_w[norm], tw[norm]);
        }
    /* tight enough to catch a real error: a score rounded through BF16 (2^-9 relative) fails at 256 experts */
    CHECK(tol_router_score_rel(0, 256) < 0x1p-9);
    CHECK(tol_router_score_rel(0, 64) == 140 * 0x1p-24 && tol_router_score_rel(1, 64) == 10 * 0x1p-24);
    CHECK(tol_router_weight_rel(1e-6, 1, 8) == 2e-6 + 18 * 0x1p-24 &&
          tol_router_weight_rel(1e-6, 0, 8) == 1e-6 + 2 * 0x1p-24);
}

int main(void)
{
    RUN(test_router_bounds);
    RUN(test_fast_accumulation_bound);
    RUN(test_split_accumulation_bound);
    RUN(test_block_bound);
    RUN(test_fp8_output_bound);
    return test_summary();
}
