/* tests/unit/test_cpu_attention.c — the CPU backend's causal attention (its
 * products through sgemm in 64-row blocks, exec/cpu/cpu_nn.c) against the
 * same attention in double precision written out here, on shapes that cross
 * the block edges (T = 150: blocks of 64, 64, 22), in FP32 and BF16.
 *
 * Bounds: first-order running error bounds (u = 2⁻²⁴; each FP32 operation
 * rounds once, a sum of n terms carries ≤ n·u·Σ|terms|), doubled for the
 * second-order terms they leave out. Forward, per row t:
 *   score  s = (q·k)·scale: ε_s ≤ (D·u·Σ|q_i k_i| + u·|q·k|)·scale
 *   p = exp(s − max)/Σ: relative ρ ≤ 2·2·max ε_s (s and the max) + 2u·max|s − max|
 *          (the subtraction) + 2u (expf, < 1 ulp, twice: term and sum)
 *          + (t+1)·u (the sum) + u (the division)
 *   out = Σ p·v: |Δ| ≤ (ρ + (t+1)·u)·Σ p·|v|
 * BF16 adds one rounding of p (≤ 2⁻⁸ of the rounded value, so ≤ 2⁻⁸·(|p| + its
 * bound)) before p·v, and one of out and of each gradient alike.
 * Backward, from the probabilities the forward stored: dp = dO·v (D terms),
 * Σ p·dp (t+1 terms), dS = p·(dp − Σ)·scale (3 roundings), then dQ = Σ dS·k,
 * dK = Σ dS·q, dV = Σ p·dO, each bound carried term by term in double beside
 * the reference value. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "test.h"

#define U 0x1p-24

enum { B = 2, T = 150, H = 3, D = 16, C = H * D, C3 = 3 * C };

static double *ref_p, *ref_pe; /* (B, H, T, T) double probabilities and their bounds */

static double qkv_at(const void *qkv, Dtype dt, uint64_t b, uint64_t t, uint64_t part, uint64_t h, uint64_t i)
{
    return elem_load(qkv, dt, (b * T + t) * C3 + part * C + h * D + i);
}

/* Forward reference: out (B·T, C) with bound oe; probs into ref_p/ref_pe. */
static void ref_forward(const void *qkv, Dtype dt, double *out, double *oe)
{
    float fscale = 1.0f / sqrtf((float)D);
    double s[T], es[T];
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t h = 0; h < H; h++)
            for (uint64_t t = 0; t < T; t++) {
                double mx = -INFINITY, emax = 0.0, sum = 0.0;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    double dot = 0.0, mag = 0.0;
                    for (uint64_t i = 0; i < D; i++) {
                        double x = qkv_at(qkv, dt, b, t, 0, h, i) * qkv_at(qkv, dt, b, t2, 1, h, i);
                        dot += x, mag += fabs(x);
                    }
                    s[t2] = dot * (double)fscale;
                    es[t2] = ((double)D * U * mag + U * fabs(dot)) * (double)fscale + U * fabs(s[t2]);
                    mx = fmax(mx, s[t2]);
                    emax = fmax(emax, es[t2]);
                }
                double spread = 0.0;
                for (uint64_t t2 = 0; t2 <= t; t2++) sum += exp(s[t2] - mx), spread = fmax(spread, mx - s[t2]);
                double rho = 2.0 * (4.0 * emax + 2.0 * U * spread + 2.0 * U + (double)(t + 1) * U + U);
                double rho_v = rho + (dt == DT_BF16 ? 0x1p-8 * (1.0 + rho) : 0.0); /* p·v uses the rounded p */
                double *pr = ref_p + ((b * H + h) * T + t) * T, *pe = ref_pe + ((b * H + h) * T + t) * T;
                for (uint64_t t2 = 0; t2 < T; t2++) {
                    pr[t2] = t2 <= t ? exp(s[t2] - mx) / sum : 0.0;
                    pe[t2] = pr[t2] * rho;
                    if (dt == DT_BF16) pe[t2] += 0x1p-8 * (pr[t2] + pe[t2]); /* the stored rounding */
                }
                for (uint64_t i = 0; i < D; i++) {
                    double o = 0.0, mag = 0.0;
                    for (uint64_t t2 = 0; t2 <= t; t2++) {
                        double v = qkv_at(qkv, dt, b, t2, 2, h, i);
                        o += pr[t2] * v, mag += pr[t2] * fabs(v);
                    }
                    uint64_t k = (b * T + t) * C + h * D + i;
                    out[k] = o;
                    oe[k] = 2.0 * (rho_v + (double)(t + 2) * U) * mag;
                    if (dt == DT_BF16) oe[k] += 0x1p-8 * (fabs(o) + oe[k]);
                }
            }
}

static int count_outside(const void *got, Dtype dt, const double *want, const double *bound, uint64_t n, double *worst)
{
    int bad = 0;
    for (uint64_t i = 0; i < n; i++) {
        double err = fabs(elem_load(got, dt, i) - want[i]), tol = bound[i] + 1e-30;
        if (!(err <= tol)) bad++;
        if (err / tol > *worst) *worst = err / tol;
    }
    return bad;
}

static void *fill(Dtype dt, uint64_t n, uint64_t seed)
{
    void *p = calloc(n, 4);
    Rng r = {.s = seed};
    for (uint64_t i = 0; i < n; i++) elem_store(p, dt, i, (float)rng_normal(&r));
    return p;
}

static void check_dtype(Dtype dt)
{
    Backend *bk = NULL;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    uint64_t nq = (uint64_t)B * T * C3, no = (uint64_t)B * T * C, np = (uint64_t)B * H * T * T;
    void *qkv = fill(dt, nq, 1), *dout = fill(dt, no, 2), *probs = calloc(np, 4), *out = calloc(no, 4);
    void *dqkv = calloc(nq, 4);
    float *scratch = calloc(np, sizeof(float));
    ref_p = calloc(np, sizeof(double)), ref_pe = calloc(np, sizeof(double));
    double *ro = calloc(no, sizeof(double)), *roe = calloc(no, sizeof(double));
    AttnFwdDesc f = {.batch = B,
                     .seq = T,
                     .heads = H,
                     .kv_heads = H,
                     .head_dim = D,
                     .dtype = dt,
                     .qkv = qkv,
                     .probs = probs,
                     .out = out};
    CHECK(!bk->attention_fwd(bk, &f, &e));
    ref_forward(qkv, dt, ro, roe);
    double worst = 0.0;
    int bad = count_outside(probs, dt, ref_p, ref_pe, np, &worst);
    CHECKF(!bad, "%s: %d probabilities outside the bound", dtype_name(dt), bad);
    bad = count_outside(out, dt, ro, roe, no, &worst);
    CHECKF(!bad, "%s: %d outputs outside the bound", dtype_name(dt), bad);
    printf("  %s forward: worst error %.3f of the bound\n", dtype_name(dt), worst);

    /* backward, from the probabilities the forward stored */
    AttnBwdDesc bd = {.batch = B,
                      .seq = T,
                      .heads = H,
                      .kv_heads = H,
                      .head_dim = D,
                      .dtype = dt,
                      .qkv = qkv,
                      .probs = probs,
                      .dout = dout,
                      .dqkv = dqkv,
                      .scratch = scratch};
    CHECK(!bk->attention_bwd(bk, &bd, &e));
    double *g = calloc(nq, sizeof(double)), *ge = calloc(nq, sizeof(double));
    double *ds = calloc(T, sizeof(double)), *dse = calloc(T, sizeof(double));
    float fscale = 1.0f / sqrtf((float)D);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t h = 0; h < H; h++)
            for (uint64_t t = 0; t < T; t++) {
                double dsum = 0.0, dsum_e = 0.0, dsum_mag = 0.0, dp[T], dpe[T];
                const uint64_t pb = ((b * H + h) * T + t) * T;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    double dot = 0.0, mag = 0.0;
                    for (uint64_t i = 0; i < D; i++) {
                        double x = elem_load(dout, dt, (b * T + t) * C + h * D + i) * qkv_at(qkv, dt, b, t2, 2, h, i);
                        dot += x, mag += fabs(x);
                    }
                    double p = elem_load(probs, dt, pb + t2);
                    dp[t2] = dot, dpe[t2] = (double)D * U * mag;
                    dsum += p * dot, dsum_e += p * dpe[t2], dsum_mag += fabs(p * dot);
                }
                dsum_e += (double)(t + 1) * U * dsum_mag;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    double p = elem_load(probs, dt, pb + t2);
                    ds[t2] = p * (dp[t2] - dsum) * (double)fscale;
                    dse[t2] = (p * (dpe[t2] + dsum_e) + 3.0 * U * p * fabs(dp[t2] - dsum)) * (double)fscale;
                    for (uint64_t i = 0; i < D; i++) {
                        double k = qkv_at(qkv, dt, b, t2, 1, h, i), q = qkv_at(qkv, dt, b, t, 0, h, i);
                        double go = elem_load(dout, dt, (b * T + t) * C + h * D + i);
                        uint64_t iq = (b * T + t) * C3 + h * D + i, ik = (b * T + t2) * C3 + C + h * D + i;
                        uint64_t iv = ik + C;
                        g[iq] += ds[t2] * k, ge[iq] += dse[t2] * fabs(k) + (double)T * U * fabs(ds[t2] * k);
                        g[ik] += ds[t2] * q, ge[ik] += dse[t2] * fabs(q) + (double)T * U * fabs(ds[t2] * q);
                        g[iv] += p * go, ge[iv] += (double)T * U * fabs(p * go);
                    }
                }
            }
    for (uint64_t i = 0; i < nq; i++) {
        ge[i] *= 2.0;
        if (dt == DT_BF16) ge[i] += 0x1p-8 * (fabs(g[i]) + ge[i]); /* the stored rounding */
    }
    worst = 0.0;
    bad = count_outside(dqkv, dt, g, ge, nq, &worst);
    CHECKF(!bad, "%s: %d input gradients outside the bound", dtype_name(dt), bad);
    printf("  %s backward: worst error %.3f of the bound\n", dtype_name(dt), worst);
    free(qkv), free(dout), free(probs), free(out), free(dqkv), free(scratch), free(ref_p), free(ref_pe);
    free(ro), free(roe), free(g), free(ge), free(ds), free(dse);
    bk->destroy(bk);
}

static void test_fp32(void) { check_dtype(DT_FP32); }
static void test_bf16(void) { check_dtype(DT_BF16); }

/* Causality: changing the last position's q, k and v changes no other
 * position's output, and every probability above the diagonal is 0. */
static void test_causal(void)
{
    Backend *bk = NULL;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    uint64_t nq = (uint64_t)B * T * C3, no = (uint64_t)B * T * C, np = (uint64_t)B * H * T * T;
    float *qkv = fill(DT_FP32, nq, 3), *o1 = calloc(no, 4), *o2 = calloc(no, 4), *p = calloc(np, 4);
    AttnFwdDesc f = {.batch = B,
                     .seq = T,
                     .heads = H,
                     .kv_heads = H,
                     .head_dim = D,
                     .dtype = DT_FP32,
                     .qkv = qkv,
                     .probs = p,
                     .out = o1};
    CHECK(!bk->attention_fwd(bk, &f, &e));
    int above = 0;
    for (uint64_t r = 0; r < (uint64_t)B * H * T; r++)
        for (uint64_t t2 = r % T + 1; t2 < T; t2++) above += p[r * T + t2] != 0.0f;
    CHECK_EQ_INT(above, 0);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t i = 0; i < C3; i++) qkv[(b * T + T - 1) * C3 + i] += 1.0f;
    f.out = o2;
    CHECK(!bk->attention_fwd(bk, &f, &e));
    int changed = 0;
    for (uint64_t b = 0; b < B; b++)
        changed += memcmp(o1 + b * T * C, o2 + b * T * C, (T - 1) * C * sizeof(float)) != 0;
    CHECK_EQ_INT(changed, 0);
    free(qkv), free(o1), free(o2), free(p);
    bk->destroy(bk);
}

/* Grouped-query attention across the 64-row blocks: H = 4 query heads on KV = 2 key/value heads
 * against the same attention with each KV head copied to the two query heads that read it (the
 * multi-head path the tests above hold to double precision). Every score, probability, output and dQ
 * is computed from the same values by the same sgemm calls, so those are equal bit for bit. A KV
 * head's dK and dV sum the two heads' contributions: both results are FP32 sums, in two orders, of the
 * same n = 2·(T − s) products for key s (each rounded once), so each is within n·u·M of the exact sum,
 * M = Σ|product| (first order, u = 2⁻²⁴), and the two differ by at most 2(n + 1)·u·M. The products of
 * dK are the stored d(scores)·scale (the scratch, equal in both runs) times q. */
static void test_gqa_blocks(void)
{
    enum { GH = 4, GKV = 2, GW = (GH + 2 * GKV) * D, GC = GH * D, MW = 3 * GC };
    Backend *bk = NULL;
    Err e;
    CHECK(!backend_cpu_create(&bk, &e));
    if (!bk) return;
    uint64_t nt = (uint64_t)B * T, np = (uint64_t)B * GH * T * T;
    float *g = fill(DT_FP32, nt * GW, 5), *m = calloc(nt * MW, 4), *dout = fill(DT_FP32, nt * GC, 6);
    for (uint64_t r = 0; r < nt; r++)
        for (uint64_t h = 0; h < GH; h++)
            for (uint64_t i = 0; i < D; i++) {
                m[r * MW + h * D + i] = g[r * GW + h * D + i];
                m[r * MW + GC + h * D + i] = g[r * GW + GC + h / 2 * D + i];
                m[r * MW + 2 * GC + h * D + i] = g[r * GW + GC + GKV * D + h / 2 * D + i];
            }
    float *pg = calloc(np, 4), *pm = calloc(np, 4), *og = calloc(nt * GC, 4), *om = calloc(nt * GC, 4);
    float *dg = calloc(nt * GW, 4), *dm = calloc(nt * MW, 4), *sg = calloc(np, 4), *sm = calloc(np, 4);
    AttnFwdDesc f = {.batch = B, .seq = T, .heads = GH, .kv_heads = GKV, .head_dim = D, .dtype = DT_FP32};
    f.qkv = g, f.probs = pg, f.out = og;
    CHECK(!bk->attention_fwd(bk, &f, &e));
    f.kv_heads = GH, f.qkv = m, f.probs = pm, f.out = om;
    CHECK(!bk->attention_fwd(bk, &f, &e));
    CHECK(!memcmp(pg, pm, np * 4) && !memcmp(og, om, nt * GC * 4));
    AttnBwdDesc bd = {.batch = B, .seq = T, .heads = GH, .kv_heads = GKV, .head_dim = D, .dtype = DT_FP32};
    bd.qkv = g, bd.probs = pg, bd.dout = dout, bd.dqkv = dg, bd.scratch = sg;
    CHECK(!bk->attention_bwd(bk, &bd, &e));
    bd.kv_heads = GH, bd.qkv = m, bd.probs = pm, bd.dqkv = dm, bd.scratch = sm;
    CHECK(!bk->attention_bwd(bk, &bd, &e));
    CHECK(!memcmp(sg, sm, np * 4));
    int dq_bad = 0, kv_bad = 0;
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t s0 = 0; s0 < T; s0++)
            for (uint64_t h = 0; h < GH; h++)
                for (uint64_t i = 0; i < D; i++)
                    dq_bad += dg[(b * T + s0) * GW + h * D + i] != dm[(b * T + s0) * MW + h * D + i];
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t s0 = 0; s0 < T; s0++)
            for (uint64_t kv = 0; kv < GKV; kv++)
                for (uint64_t i = 0; i < D; i++) {
                    double mk = 0.0, mv = 0.0, n = 2.0 * (double)(T - s0);
                    for (uint64_t h = 2 * kv; h < 2 * kv + 2; h++)
                        for (uint64_t t = s0; t < T; t++) {
                            uint64_t pi = ((b * GH + h) * T + t) * T + s0, r = (b * T + t) * MW;
                            mv += fabs((double)pm[pi] * dout[(b * T + t) * GC + h * D + i]);
                            mk += fabs((double)sm[pi] * m[r + h * D + i]);
                        }
                    uint64_t rg = (b * T + s0) * GW, rm = (b * T + s0) * MW, h0 = 2 * kv * D, h1 = h0 + D;
                    double kg = dg[rg + GC + kv * D + i], vg = dg[rg + GC + GKV * D + kv * D + i];
                    double km = (double)dm[rm + GC + h0 + i] + dm[rm + GC + h1 + i];
                    double vm = (double)dm[rm + 2 * GC + h0 + i] + dm[rm + 2 * GC + h1 + i];
                    kv_bad += !(fabs(kg - km) <= 2.0 * (n + 1.0) * U * mk + 1e-30);
                    kv_bad += !(fabs(vg - vm) <= 2.0 * (n + 1.0) * U * mv + 1e-30);
                }
    CHECK_EQ_INT(dq_bad, 0);
    CHECK_EQ_INT(kv_bad, 0);
    free(g), free(m), free(dout), free(pg), free(pm), free(og), free(om), free(dg), free(dm), free(sg), free(sm);
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_fp32);
    RUN(test_bf16);
    RUN(test_causal);
    RUN(test_gqa_blocks);
    return test_summary();
}
