/* tests/unit/test_cuda_math.c — the per-element arithmetic the CUDA kernels run
 * (exec/backend/kernel_math.h, compiled here as host C) against the CPU reference
 * backend, the oracle of every GPU kernel.
 *
 * Each test rebuilds an operation the way the CUDA kernel does — the shared
 * km_* function per element, the CPU's loop order where the reference has one —
 * and requires the CPU backend's result bit for bit. Bit equality is the right
 * bar: both sides use the same IEEE operations (the kernels through unfused
 * __fmul_rn/__fadd_rn, host C11 without contraction), so any difference is a
 * formula that drifted. On the GPU the reductions' order and CUDA's tanhf/expf
 * differ; tests/gpu bounds those differences. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/rng.h"
#include "exec/backend/scaling.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "test.h"

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) CHECKF(0, "backend_cpu_create: %s", e.msg); /* a setup failure fails the test */
    return bk;
}

static float *randn(Rng *r, uint64_t n, double sd)
{
    float *p = malloc(n * sizeof(float));
    for (uint64_t i = 0; i < n; i++) p[i] = (float)(rng_normal(r) * sd);
    return p;
}

/* amax values that exercise every branch of the three rules */
static const float AMAX[] = {0.0f,   -0.0f,  1e-45f, 1e-40f,   FLT_MIN, 1e-30f,  0.001f,   0.5f,      1.0f, 3.0f,
                             448.0f, 640.0f, 1e4f,   57344.0f, 1e30f,   FLT_MAX, INFINITY, -INFINITY, NAN,  -1.0f};

static void test_scale_rules_match_cpu_reference(void)
{
    Dtype fmts[2] = {DT_E4M3, DT_E5M2};
    int margins[3] = {0, 1, 3};
    int bad = 0;
    for (int f = 0; f < 2; f++)
        for (int mi = 0; mi < 3; mi++)
            for (size_t i = 0; i < sizeof AMAX / sizeof AMAX[0]; i++) {
                float fmax = fp8_max(fmts[f]), a = AMAX[i];
                int mg = margins[mi];
                bad += !same_bits(km_scale_current(a, fmax, mg), scaling_current(a, fmts[f], mg));
                bad += !same_bits(km_scale_pow2(a, fmax, mg, 0.25f), scaling_pow2(a, fmts[f], mg, 0.25f));
                bad += !same_bits(km_scale_pow2(a, KM_FP16_MAX, mg, 8.0f), scaling_pow2(a, DT_FP16, mg, 8.0f));
                float hist[1] = {a}, prev = 0.375f;
                scaling_delayed_step(hist, 1, 1, AMAX_ALGO_MOST_RECENT, fmts[f], mg, &prev);
                bad += !same_bits(km_scale_delayed(a, fmax, mg, 0.375f), prev);
            }
    CHECK_EQ_INT(bad, 0);
    /* the seed's spike: amax 640 makes the next E4M3 scale 448/640 = 0.7 (0.699999988 in fp32) */
    CHECK(same_bits(km_scale_delayed(640.0f, 448.0f, 0, 1.0f), 0.7f));
    CHECK(km_scale_delayed(0.0f, 448.0f, 0, 2.0f) == 2.0f);      /* no information: keep */
    CHECK(km_scale_delayed(1e-45f, 448.0f, 0, 2.0f) == FLT_MAX); /* tiny amax: overflow to FLT_MAX */
    CHECK(km_scale_current(NAN, 448.0f, 0) == 1.0f);
    CHECK(km_scale_current(-1.0f, 448.0f, 0) == 1.0f);
    CHECK(km_scale_pow2(3.0f, 448.0f, 0, 1.0f) == 128.0f); /* 448/3 = 149.3 -> 2^7 */
    CHECK(km_scale_pow2(3.0f, 448.0f, 2, 1.0f) == 32.0f);
    CHECK(km_scale_pow2(1e-45f, 448.0f, 0, 1.0f) == 0x1p127f);
}

static void test_gelu_matches_cpu_and_the_formula(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    enum { N = 4001 };
    float x[N], y[N], dy[N], g[N];
    Rng r = {7};
    for (int i = 0; i < N; i++) {
        x[i] = -10.0f + 20.0f * (float)i / (N - 1);
        dy[i] = (float)rng_normal(&r);
    }
    Err e;
    ActFwdDesc af = {.mlp = MLP_GELU, .rows = 1, .cols = N, .dtype = DT_FP32, .in = x, .out = y};
    ActBwdDesc ab = {.mlp = MLP_GELU, .rows = 1, .cols = N, .dtype = DT_FP32, .in = x, .dout = dy, .din = g};
    CHECK_EQ_INT(bk->act_fwd(bk, &af, &e), ST_OK);
    CHECK_EQ_INT(bk->act_bwd(bk, &ab, &e), ST_OK);
    int bad = 0, far = 0;
    for (int i = 0; i < N; i++) {
        bad += !same_bits(km_gelu(x[i]), y[i]);
        bad += !same_bits(km_gelu_grad(x[i]) * dy[i], g[i]);
        /* against the formula in double: a handful of float roundings of values of
         * size |x| (16 ulps of max(1, |x|)) */
        double xd = x[i], ref = 0.5 * xd * (1.0 + tanh(0.7978845608028654 * (xd + 0.044715 * xd * xd * xd)));
        far += fabs((double)km_gelu(x[i]) - ref) > 16.0 * 0x1p-24 * fmax(1.0, fabs(xd));
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(far, 0);
    bk->destroy(bk);
}

/* The CPU layer norm's loop order with the shared per-element functions. */
static void test_layernorm_matches_cpu(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    enum { R = 8, C = 96 };
    Rng r = {11};
    float *x = randn(&r, R * C, 2.0), *w = randn(&r, C, 1.0), *b = randn(&r, C, 0.5), *dy = randn(&r, R * C, 1.0);
    float *din0 = randn(&r, R * C, 1.0);
    float y[R * C], mean[R], rstd[R], din[R * C], dw[C] = {0}, db[C] = {0};
    memcpy(din, din0, sizeof din);
    Err e;
    NormFwdDesc f = {.norm = NORM_LAYERNORM,
                     .rows = R,
                     .cols = C,
                     .eps = 1e-5f,
                     .act_dtype = DT_FP32,
                     .weight_dtype = DT_FP32,
                     .in = x,
                     .weight = w,
                     .bias = b,
                     .out = y,
                     .mean = mean,
                     .rstd = rstd};
    CHECK_EQ_INT(bk->norm_fwd(bk, &f, &e), ST_OK);
    NormBwdDesc bd = {.norm = NORM_LAYERNORM,
                      .rows = R,
                      .cols = C,
                      .act_dtype = DT_FP32,
                      .weight_dtype = DT_FP32,
                      .in = x,
                      .weight = w,
                      .mean = mean,
                      .rstd = rstd,
                      .dout = dy,
                      .din = din,
                      .dweight = dw,
                      .dbias = db};
    CHECK_EQ_INT(bk->norm_bwd(bk, &bd, &e), ST_OK);
    int bad = 0;
    for (int i = 0; i < R; i++) {
        const float *xr = x + i * C;
        float s = 0.0f, v = 0.0f;
        for (int j = 0; j < C; j++) s += xr[j];
        float mu = s / (float)C;
        for (int j = 0; j < C; j++) v += (xr[j] - mu) * (xr[j] - mu);
        float rs = 1.0f / sqrtf(v / (float)C + 1e-5f);
        bad += !same_bits(mu, mean[i]) + !same_bits(rs, rstd[i]);
        float m1 = 0.0f, m2 = 0.0f;
        for (int j = 0; j < C; j++) {
            float xh = km_ln_norm(xr[j], mu, rs), dxh = w[j] * dy[i * C + j];
            bad += !same_bits(km_ln_out(xh, w[j], b[j]), y[i * C + j]);
            m1 += dxh;
            m2 += dxh * xh;
        }
        m1 /= (float)C;
        m2 /= (float)C;
        for (int j = 0; j < C; j++) {
            float xh = km_ln_norm(xr[j], mu, rs), dxh = w[j] * dy[i * C + j];
            bad += !same_bits(din0[i * C + j] + km_ln_dx(dxh, m1, xh, m2, rs), din[i * C + j]);
        }
    }
    CHECK_EQ_INT(bad, 0);
    free(x);
    free(w);
    free(b);
    free(dy);
    free(din0);
    bk->destroy(bk);
}

static void test_xent_gradient_matches_cpu(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    enum { R = 6, V = 50, VP = 64 };
    Rng r = {5};
    float *logits = randn(&r, R * VP, 3.0), ref[R * VP], losses[R];
    int32_t tgt[R];
    for (int i = 0; i < R; i++) tgt[i] = (int32_t)rng_below(&r, V);
    memcpy(ref, logits, sizeof ref);
    Err e;
    float dloss = 1.0f / R;
    CHECK_EQ_INT(bk->xent_fwd_bwd(bk, logits, DT_FP32, R, V, VP, tgt, dloss, losses, &e), ST_OK);
    int bad = 0;
    for (int i = 0; i < R; i++) {
        const float *x = ref + i * VP;
        float mx = -INFINITY, s = 0.0f;
        for (int j = 0; j < V; j++) mx = fmaxf(mx, x[j]);
        for (int j = 0; j < V; j++) s += expf(x[j] - mx);
        bad += !same_bits(logf(s) + mx - x[tgt[i]], losses[i]);
        for (int j = 0; j < V; j++)
            bad += !same_bits(km_xent_dlogit(x[j], mx, s, j == tgt[i], dloss), logits[i * VP + j]);
        for (int j = V; j < VP; j++) bad += logits[i * VP + j] != 0.0f;
    }
    CHECK_EQ_INT(bad, 0);
    free(logits);
    bk->destroy(bk);
}

/* The CUDA cross-entropy's online (max, Σ exp) pair (km_online_*) against the two-pass max and
 * sum of the CPU reference. Worked by hand first, then rows folded as the kernel folds them:
 * NT threads, thread t takes the 8-wide vectors t, t + NT, ..., the vocabulary's tail one element
 * at a time, then the butterfly merge (lane ^ 16, ..., lane ^ 1). The maximum is the same float;
 * the sum may differ by the order of its additions — for n positive terms each order is within
 * (n − 1)·2^-24 of the exact sum, so two orders are within 2(n − 1)·2^-24 of each other — plus
 * 3·2^-24 (expf's ulp and one rounded product) per rescale on a thread's path: its groups
 * (⌈125/32⌉ = 4 at V = 1001, one tail element more) and the 5 merges, R ≤ 10. Bound at
 * V = 1001: (2·1000 + 3·10)·2^-24 = 2030·2^-24 = 1.21e-4 relative; a missing or wrong rescale
 * is off by a factor of e^(m_old − m_new), far outside it. */
static void test_online_softmax_matches_two_pass(void)
{
    /* {1, 3} then {3 − 1, −inf}: the first group sets m = 3 (s = 0 is rescaled by exp(−inf) = 0, no
     * NaN), s = e^-2 + e^0; the second keeps m, adds e^-1 + 0: s = 1 + 0.36787944 + 0.13533528
     * = 1.50321472. */
    float m = -INFINITY, s = 0.0f, g1[2] = {1.0f, 3.0f}, g2[2] = {2.0f, -INFINITY};
    km_online_add(&m, &s, g1, 2);
    km_online_add(&m, &s, g2, 2);
    CHECK(m == 3.0f && fabsf(s - 1.50321472f) <= 0x1p-21f * 1.5f);
    /* (1, 2) merged with (3, 1): 2·e^-2 + 1·e^0 = 0.27067057 + 1 = 1.27067057 at m = 3 */
    m = 1.0f, s = 2.0f;
    km_online_merge(&m, &s, 3.0f, 1.0f);
    CHECK(m == 3.0f && fabsf(s - 1.27067057f) <= 0x1p-21f * 1.3f);
    /* an empty pair (−inf, 0) is neutral on either side, and two of them stay (−inf, 0), not NaN */
    m = -INFINITY, s = 0.0f;
    km_online_merge(&m, &s, -INFINITY, 0.0f);
    CHECK(m == -INFINITY && s == 0.0f);
    km_online_merge(&m, &s, 0.5f, 4.0f); /* 0·0 + 4·e^0 = 4 */
    CHECK(m == 0.5f && s == 4.0f);
    km_online_merge(&m, &s, -INFINITY, 0.0f);
    CHECK(m == 0.5f && s == 4.0f);

    enum { R = 4, V = 1001, NT = 32, W = 8, NV = V / W };
    Rng r = {11};
    float *x = randn(&r, (uint64_t)R * V, 3.0);
    for (int v = NT - 1; v < NV; v += NT) /* row 1: thread 31's vectors all −inf (a masked range) */
        for (int j = 0; j < W; j++) x[V + v * W + j] = -INFINITY;
    int bad = 0;
    for (int i = 0; i < R; i++) {
        const float *row = x + (uint64_t)i * V;
        float tm[NT], ts[NT], mx = -INFINITY, sum = 0.0f;
        for (int j = 0; j < V; j++) mx = row[j] > mx ? row[j] : mx; /* the CPU reference's two passes */
        for (int j = 0; j < V; j++) sum += expf(row[j] - mx);
        for (int t = 0; t < NT; t++) {
            tm[t] = -INFINITY, ts[t] = 0.0f;
            for (int v = t; v < NV; v += NT) km_online_add(&tm[t], &ts[t], row + v * W, W);
            for (int j = NV * W + t; j < V; j += NT) km_online_add(&tm[t], &ts[t], row + j, 1);
        }
        for (int o = NT / 2; o > 0; o >>= 1) {
            float pm[NT], ps[NT];
            memcpy(pm, tm, sizeof pm), memcpy(ps, ts, sizeof ps);
            for (int t = 0; t < NT; t++) km_online_merge(&tm[t], &ts[t], pm[t ^ o], ps[t ^ o]);
        }
        for (int t = 0; t < NT; t++) {
            bad += !same_bits(tm[t], mx);
            bad += !(fabs((double)ts[t] - sum) <= 2030.0 * 0x1p-24 * sum);
        }
    }
    CHECK_EQ_INT(bad, 0);
    free(x);
}

static KmAdam km_hyper(const AdamHyper *h)
{
    KmAdam k = {h->lr,
                h->beta1,
                h->beta2,
                h->eps,
                h->weight_decay,
                1.0f - powf(h->beta1, (float)h->step),
                1.0f - powf(h->beta2, (float)h->step)};
    return k;
}

/* AdamW as the CUDA kernel runs it (one km_adam per element, the BF16 working
 * copy rounded from the new master) is the CPU's, bit for bit. */
static void test_adamw_matches_cpu(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    enum { N = 5000 };
    Rng r = {3};
    float *w = randn(&r, N, 0.05), *m = randn(&r, N, 1e-3), *v = randn(&r, N, 1e-3), *g = randn(&r, N, 0.01);
    for (int i = 0; i < N; i++) v[i] = v[i] * v[i];
    float mw[N], mm[N], mv[N];
    uint16_t wk[N];
    memcpy(mw, w, sizeof mw);
    memcpy(mm, m, sizeof mm);
    memcpy(mv, v, sizeof mv);
    AdamHyper h = {
        .lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 7, .grad_scale = 0.5f};
    AdamWDesc d = {.n = N,
                   .h = h,
                   .master = w,
                   .m = m,
                   .v = v,
                   .grad = g,
                   .grad_dtype = DT_FP32,
                   .weight = wk,
                   .weight_dtype = DT_BF16};
    Err e;
    CHECK_EQ_INT(bk->adamw(bk, &d, &e), ST_OK);
    KmAdam k = km_hyper(&h);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float nw = km_adam(&k, mw[i], g[i] * h.grad_scale, &mm[i], &mv[i]);
        bad += !same_bits(nw, w[i]) + !same_bits(mm[i], m[i]) + !same_bits(mv[i], v[i]);
        bad += bf16_encode(nw) != wk[i];
    }
    CHECK_EQ_INT(bad, 0);
    free(w);
    free(m);
    free(v);
    free(g);
    bk->destroy(bk);
}

/* FP8-LM's optimizer as the CUDA kernels run it: pass 1 (km_adam_scaled, amax),
 * new power-of-two scales (km_scale_pow2), pass 2 (recompute, quantize), records. */
static void test_fp8_adam_matches_cpu(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    enum { N = 3000 };
    Rng r = {17};
    uint16_t master[N], v[N], wk[N];
    uint8_t m[N];
    float g[N], rec_w[3] = {1024.0f, 1.0f / 1024.0f, 0.0f}, rec_m[3] = {4096.0f, 1.0f / 4096.0f, 0.0f},
                rec_v[3] = {1048576.0f, 1.0f / 1048576.0f, 0.0f};
    for (int i = 0; i < N; i++) {
        master[i] = fp16_encode((float)rng_normal(&r) * 0.05f * rec_w[0]);
        m[i] = fp8_encode_f32(DT_E4M3, (float)rng_normal(&r) * 1e-3f * rec_m[0], FP8_SATFINITE);
        float sd = (float)rng_normal(&r) * 1e-3f;
        v[i] = fp16_encode(sd * sd * rec_v[0]);
        g[i] = (float)rng_normal(&r) * 0.01f;
    }
    uint16_t em[N], ev[N];
    uint8_t eq[N];
    memcpy(em, master, sizeof em);
    memcpy(ev, v, sizeof ev);
    memcpy(eq, m, sizeof eq);
    float ew[3], emr[3], evr[3];
    memcpy(ew, rec_w, sizeof ew);
    memcpy(emr, rec_m, sizeof emr);
    memcpy(evr, rec_v, sizeof evr);
    AdamHyper h = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 3, .grad_scale = 1.0f};
    Fp8AdamDesc d = {.n = N,
                     .h = h,
                     .margin = 0,
                     .master = master,
                     .master_rec = rec_w,
                     .m = m,
                     .m_rec = rec_m,
                     .v = v,
                     .v_rec = rec_v,
                     .grad = g,
                     .grad_dtype = DT_FP32,
                     .weight = wk,
                     .weight_dtype = DT_BF16};
    Err e;
    CHECK_EQ_INT(bk->fp8_adam(bk, &d, &e), ST_OK);
    /* the kernels' sequence on the host */
    KmAdam k = km_hyper(&h);
    float dw = 1.0f / ew[0], dm = 1.0f / emr[0], dv = 1.0f / evr[0], aw = 0, am = 0, av = 0;
    for (int i = 0; i < N; i++) {
        float mm, vv,
            w = km_adam_scaled(&k, fp16_decode(em[i]), dw, g[i], fp8_decode(DT_E4M3, eq[i]), dm, fp16_decode(ev[i]), dv,
                               &mm, &vv);
        aw = fmaxf(aw, fabsf(w));
        am = fmaxf(am, fabsf(mm));
        av = fmaxf(av, fabsf(vv));
    }
    float sw = km_scale_pow2(aw, KM_FP16_MAX, 0, ew[0]), sm = km_scale_pow2(am, 448.0f, 0, emr[0]),
          sv = km_scale_pow2(av, KM_FP16_MAX, 0, evr[0]);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float mm, vv,
            w = km_adam_scaled(&k, fp16_decode(em[i]), dw, g[i], fp8_decode(DT_E4M3, eq[i]), dm, fp16_decode(ev[i]), dv,
                               &mm, &vv);
        uint16_t wq = fp16_encode(w * sw);
        bad += wq != master[i];
        bad += fp8_encode_f32(DT_E4M3, mm * sm, FP8_SATFINITE) != m[i];
        bad += fp16_encode(vv * sv) != v[i];
        bad += bf16_encode(fp16_decode(wq) / sw) != wk[i];
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(same_bits(rec_w[0], sw) && same_bits(rec_w[1], 1.0f / sw) && same_bits(rec_w[2], aw));
    CHECK(same_bits(rec_m[0], sm) && same_bits(rec_m[2], am));
    CHECK(same_bits(rec_v[0], sv) && same_bits(rec_v[2], av));
    CHECK(sw != ew[0] || sm != emr[0] || sv != evr[0]); /* the step really rescaled something */
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_scale_rules_match_cpu_reference);
    RUN(test_gelu_matches_cpu_and_the_formula);
    RUN(test_layernorm_matches_cpu);
    RUN(test_xent_gradient_matches_cpu);
    RUN(test_online_softmax_matches_two_pass);
    RUN(test_adamw_matches_cpu);
    RUN(test_fp8_adam_matches_cpu);
    return test_summary();
}
