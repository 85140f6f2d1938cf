/* tests/unit/test_exec_llama_ops.c — the LLaMA family's operations on the CPU
 * reference: RMSNorm, SwiGLU, the rotary embedding and grouped-query
 * attention, each
 *   - against a direct computation in double written here from the formulas
 *     (not from the code under test), and
 *   - its backward against central finite differences of L = Σ r·y for a
 *     random r (so dL/dy = r is what the backward gets as dout).
 * The per-element arithmetic the CUDA kernels share (exec/backend/kernel_math.h) is
 * held bit for bit to the CPU's outputs where the CPU uses it element by
 * element (RMSNorm's output, SwiGLU, the rotation).
 *
 * Tolerances, derived. Forward against double: each output is a handful (≤ 8)
 * of FP32 roundings of values of its own size plus, for the reductions, one
 * rounding per summed term of terms no larger than the sum's scale, so
 * 2^-24·(8 + n)·scale bounds it, n the reduction length. Finite differences
 * (FP32 forward, h = 1e-2 on inputs of size ~1): truncation h²/6·|L'''| ≈
 * 2e-5 relative to the gradient's scale, rounding ≈ 2^-24·Σ|r·y| / h ≈ 1e-5
 * here; 1e-3·(|g| + 1) covers both and fails a term that is wrong by 1 %. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/kernel_math.h"
#include "exec/model/model.h"
#include "exec/backend/rng.h"
#include "test.h"

static Backend *cpu(void)
{
    Backend *bk = NULL;
    Err e;
    if (backend_cpu_create(&bk, &e)) fprintf(stderr, "  %s\n", e.msg);
    return bk;
}

static void randn(Rng *r, float *x, int n, double sd)
{
    for (int i = 0; i < n; i++) x[i] = (float)(rng_normal(r) * sd);
}

static double dot(const float *a, const float *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static int same_bits(float a, float b) { return !memcmp(&a, &b, sizeof a); }

static const double FD_H = 1e-2;

/* An operation's forward on its inputs `in` (one vector: every input the
 * gradient is checked for), into out. */
typedef void (*Fwd)(Backend *bk, const void *ctx, const float *in, float *out);

/* How many of the gradients g[k] (every `stride`-th input from `first`) differ
 * from the central difference of Σ dy·f(in) by more than 1e-3·(|g| + 1). */
static int fd_mismatches(Backend *bk, Fwd f, const void *ctx, const float *in, int n_in, const float *dy, int n_out,
                         const float *g, int first, int stride)
{
    float *x = malloc(n_in * sizeof *x), *y = malloc(n_out * sizeof *y);
    int bad = 0;
    for (int k = first; x && y && k < n_in; k += stride) {
        double l[2];
        for (int s = 0; s < 2; s++) {
            memcpy(x, in, n_in * sizeof *x);
            x[k] += (float)(s ? -FD_H : FD_H);
            f(bk, ctx, x, y);
            l[s] = dot(dy, y, n_out);
        }
        double fd = (l[0] - l[1]) / (2 * FD_H);
        bad += fabs(g[k] - fd) > 1e-3 * (fabs(g[k]) + 1.0);
    }
    free(x), free(y);
    return bad;
}

/* ---- RMSNorm ------------------------------------------------------------------------------ */

enum { NR = 5, NC = 24 };

static void rms_fwd(Backend *bk, const float *x, const float *w, float *y, float *rstd)
{
    NormFwdDesc d = {.norm = NORM_RMSNORM,
                     .rows = NR,
                     .cols = NC,
                     .eps = 1e-5f,
                     .act_dtype = DT_FP32,
                     .weight_dtype = DT_FP32,
                     .in = x,
                     .weight = w,
                     .out = y,
                     .rstd = rstd};
    Err e;
    CHECK_EQ_INT(bk->norm_fwd(bk, &d, &e), ST_OK);
}

/* in = [x (NR, NC) | w (NC)] */
static void rms_fd_fwd(Backend *bk, const void *ctx, const float *in, float *out)
{
    (void)ctx;
    float rstd[NR];
    rms_fwd(bk, in, in + NR * NC, out, rstd);
}

static void test_rmsnorm(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    Rng r = {3};
    float x[NR * NC], w[NC], y[NR * NC], rstd[NR], dy[NR * NC], dx[NR * NC] = {0}, dw[NC] = {0};
    randn(&r, x, NR * NC, 1.5), randn(&r, w, NC, 1.0), randn(&r, dy, NR * NC, 1.0);
    rms_fwd(bk, x, w, y, rstd);
    int bad = 0, bits = 0;
    for (int i = 0; i < NR; i++) {
        double ss = 0.0;
        for (int j = 0; j < NC; j++) ss += (double)x[i * NC + j] * x[i * NC + j];
        double rs = 1.0 / sqrt(ss / NC + 1e-5);
        bad += fabs(rstd[i] - rs) > 2e-6 * rs; /* n = 24 summed squares: (8 + 24)·2^-24 ≈ 2e-6 */
        for (int j = 0; j < NC; j++) {
            double want = x[i * NC + j] * rs * w[j];
            bad += fabs(y[i * NC + j] - want) > 4e-6 * (fabs(want) + 1e-3);
            bits += !same_bits(y[i * NC + j], km_rms_out(km_ln_norm(x[i * NC + j], 0.0f, rstd[i]), w[j]));
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(bits, 0);
    /* backward: dinput added to din, dweight accumulated, no dbias and no mean */
    NormBwdDesc b = {.norm = NORM_RMSNORM,
                     .rows = NR,
                     .cols = NC,
                     .act_dtype = DT_FP32,
                     .weight_dtype = DT_FP32,
                     .in = x,
                     .weight = w,
                     .rstd = rstd,
                     .dout = dy,
                     .din = dx,
                     .dweight = dw};
    Err e;
    CHECK_EQ_INT(bk->norm_bwd(bk, &b, &e), ST_OK);
    float xw[NR * NC + NC], g[NR * NC + NC];
    memcpy(xw, x, sizeof x), memcpy(xw + NR * NC, w, sizeof w);
    memcpy(g, dx, sizeof dx), memcpy(g + NR * NC, dw, sizeof dw);
    int fd_bad = fd_mismatches(bk, rms_fd_fwd, NULL, xw, NR * NC + NC, dy, NR * NC, g, 0, 1);
    CHECK_EQ_INT(fd_bad, 0);
    /* the shared check refuses a bias or a mean for an rmsnorm */
    b.dbias = dw;
    CHECK_EQ_INT(bk->norm_bwd(bk, &b, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "an rmsnorm has no dbias and no mean");
    /* and FP8 activations or weights (a norm reads and writes a float type) */
    b.dbias = NULL;
    b.act_dtype = DT_E4M3;
    CHECK_EQ_INT(bk->norm_bwd(bk, &b, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "norm_bwd: activation dtype e4m3 is not fp32, fp16 or bf16");
    b.act_dtype = DT_FP32, b.weight_dtype = DT_E5M2;
    CHECK_EQ_INT(bk->norm_bwd(bk, &b, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "norm_bwd: weight dtype e5m2 is not fp32, fp16 or bf16");
    bk->destroy(bk);
}

/* ---- SwiGLU ------------------------------------------------------------------------------- */

enum { SR = 3, SF = 7 };

static void swiglu_fwd(Backend *bk, const float *in, float *out)
{
    ActFwdDesc d = {.mlp = MLP_SWIGLU, .rows = SR, .cols = SF, .dtype = DT_FP32, .in = in, .out = out};
    Err e;
    CHECK_EQ_INT(bk->act_fwd(bk, &d, &e), ST_OK);
}

static void swiglu_fd_fwd(Backend *bk, const void *ctx, const float *in, float *out)
{
    (void)ctx;
    swiglu_fwd(bk, in, out);
}

static void test_swiglu(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    Rng r = {5};
    float in[SR * 2 * SF], out[SR * SF], dy[SR * SF], din[SR * 2 * SF];
    randn(&r, in, SR * 2 * SF, 2.0), randn(&r, dy, SR * SF, 1.0);
    in[0] = -100.0f; /* e^100 overflows FP32: σ = 0, silu = −0, not NaN */
    swiglu_fwd(bk, in, out);
    int bad = 0, bits = 0;
    for (int i = 0; i < SR; i++)
        for (int j = 0; j < SF; j++) {
            double g = in[i * 2 * SF + j], u = in[i * 2 * SF + SF + j]; /* gate first, then up */
            double want = g / (1.0 + exp(-g)) * u;
            bad += !isfinite(out[i * SF + j]) || fabs(out[i * SF + j] - want) > 8 * 0x1p-24 * (fabs(want) + 1e-30);
            bits += !same_bits(out[i * SF + j], km_swiglu((float)g, (float)u));
        }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(bits, 0);
    ActBwdDesc b = {.mlp = MLP_SWIGLU, .rows = SR, .cols = SF, .dtype = DT_FP32, .in = in, .dout = dy, .din = din};
    Err e;
    CHECK_EQ_INT(bk->act_bwd(bk, &b, &e), ST_OK);
    /* element 0 sits at −100, where silu is flat */
    int fd_bad = fd_mismatches(bk, swiglu_fd_fwd, NULL, in, SR * 2 * SF, dy, SR * SF, din, 1, 1);
    CHECK_EQ_INT(fd_bad, 0);
    CHECK(din[0] == 0.0f); /* d silu / d gate at −100 underflows to 0 */
    b.din = (void *)dy;    /* in place is GELU's privilege: SwiGLU's input gradient is twice as wide */
    CHECK_EQ_INT(bk->act_bwd(bk, &b, &e), ST_USAGE);
    bk->destroy(bk);
}

/* ---- rotary embedding ------------------------------------------------------------------------ */

enum { RB = 2, RT = 5, RH = 4, RKV = 2, RD = 6, RW = (RH + 2 * RKV) * RD };

static void rope(Backend *bk, float *qkv, const float *cs, int inverse)
{
    RopeDesc d = {.batch = RB,
                  .seq = RT,
                  .heads = RH,
                  .kv_heads = RKV,
                  .head_dim = RD,
                  .dtype = DT_FP32,
                  .qkv = qkv,
                  .cos_sin = cs,
                  .inverse = inverse};
    Err e;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_OK);
}

static void rope_fd_fwd(Backend *bk, const void *cs, const float *in, float *out)
{
    memcpy(out, in, RB * RT * RW * sizeof *out);
    rope(bk, out, cs, 0);
}

static void test_rope(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    Rng r = {9};
    const double base = 10000.0;
    float cs[RT * RD], x[RB * RT * RW], y[RB * RT * RW];
    model_rope_table(RT, RD, base, cs);
    int bad = 0;
    for (int t = 0; t < RT; t++) /* θ_i = base^(−2i/D): i = 0 turns by t, i = 2 by t/10000^(4/6) */
        for (int i = 0; i < RD / 2; i++) {
            double a = t * pow(base, -2.0 * i / RD);
            bad += cs[(t * RD / 2 + i) * 2] != (float)cos(a) || cs[(t * RD / 2 + i) * 2 + 1] != (float)sin(a);
        }
    CHECK_EQ_INT(bad, 0);
    randn(&r, x, RB * RT * RW, 1.0);
    memcpy(y, x, sizeof y);
    rope(bk, y, cs, 0);
    int bits = 0;
    for (int b = 0; b < RB; b++)
        for (int t = 0; t < RT; t++)
            for (int h = 0; h < RH + 2 * RKV; h++)
                for (int i = 0; i < RD / 2; i++) {
                    int o = (b * RT + t) * RW + h * RD;
                    double a = t * pow(base, -2.0 * i / RD), x1 = x[o + i], x2 = x[o + RD / 2 + i];
                    double w1 = x1 * cos(a) - x2 * sin(a), w2 = x2 * cos(a) + x1 * sin(a);
                    if (h >= RH + RKV) w1 = x1, w2 = x2; /* v is not rotated */
                    bad += fabs(y[o + i] - w1) > 4 * 0x1p-24 * (fabs(x1) + fabs(x2));
                    bad += fabs(y[o + RD / 2 + i] - w2) > 4 * 0x1p-24 * (fabs(x1) + fabs(x2));
                    float c = cs[(t * RD / 2 + i) * 2], s = cs[(t * RD / 2 + i) * 2 + 1], o1, o2;
                    km_rope_pair(x[o + i], x[o + RD / 2 + i], c, s, &o1, &o2);
                    bits += h < RH + RKV && (!same_bits(o1, y[o + i]) || !same_bits(o2, y[o + RD / 2 + i]));
                }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(bits, 0);
    /* the backward (inverse rotation of dy) is the gradient of Σ dy·rope(x): rope is linear, so the
     * central difference is exact up to rounding */
    float dy[RB * RT * RW], g[RB * RT * RW];
    randn(&r, dy, RB * RT * RW, 1.0);
    memcpy(g, dy, sizeof g);
    rope(bk, g, cs, 1);
    int fd_bad = fd_mismatches(bk, rope_fd_fwd, cs, x, RB * RT * RW, dy, RB * RT * RW, g, 0, 3);
    CHECK_EQ_INT(fd_bad, 0);
    Err e;
    RopeDesc odd = {
        .batch = 1, .seq = 2, .heads = 2, .kv_heads = 1, .head_dim = 5, .dtype = DT_FP32, .qkv = x, .cos_sin = cs};
    CHECK_EQ_INT(bk->rope(bk, &odd, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "head_dim 5 is odd");
    bk->destroy(bk);
}

/* ---- grouped-query attention ------------------------------------------------------------------ */

enum { AB = 2, AT = 5, AH = 4, AKV = 2, AD = 4, AW = (AH + 2 * AKV) * AD, AC = AH * AD };

static void attn_fwd(Backend *bk, const float *qkv, float *probs, float *out)
{
    AttnFwdDesc d = {.batch = AB,
                     .seq = AT,
                     .heads = AH,
                     .kv_heads = AKV,
                     .head_dim = AD,
                     .dtype = DT_FP32,
                     .qkv = qkv,
                     .probs = probs,
                     .out = out};
    Err e;
    CHECK_EQ_INT(bk->attention_fwd(bk, &d, &e), ST_OK);
}

static void attn_fd_fwd(Backend *bk, const void *ctx, const float *in, float *out)
{
    (void)ctx;
    static float probs[AB * AH * AT * AT];
    attn_fwd(bk, in, probs, out);
}

static void test_gqa_attention(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    Rng r = {13};
    static float qkv[AB * AT * AW], probs[AB * AH * AT * AT], out[AB * AT * AC], dout[AB * AT * AC];
    static float dqkv[AB * AT * AW], scratch[AB * AH * AT * AT];
    randn(&r, qkv, AB * AT * AW, 1.0), randn(&r, dout, AB * AT * AC, 1.0);
    attn_fwd(bk, qkv, probs, out);
    /* direct: query head h attends with KV head h / (H/KV) = h / 2, causally */
    int bad = 0;
    for (int b = 0; b < AB; b++)
        for (int h = 0; h < AH; h++)
            for (int t = 0; t < AT; t++) {
                const int g = h / (AH / AKV);
                double s[AT], mx = -INFINITY, sum = 0.0;
                for (int u = 0; u <= t; u++) {
                    s[u] = 0.0;
                    for (int i = 0; i < AD; i++)
                        s[u] +=
                            (double)qkv[(b * AT + t) * AW + h * AD + i] * qkv[(b * AT + u) * AW + AH * AD + g * AD + i];
                    s[u] /= sqrt((double)AD);
                    mx = fmax(mx, s[u]);
                }
                for (int u = 0; u <= t; u++) sum += exp(s[u] - mx);
                for (int i = 0; i < AD; i++) {
                    double o = 0.0;
                    for (int u = 0; u <= t; u++)
                        o += exp(s[u] - mx) / sum * qkv[(b * AT + u) * AW + (AH + AKV) * AD + g * AD + i];
                    bad += fabs(out[(b * AT + t) * AC + h * AD + i] - o) > 1e-5;
                }
                for (int u = t + 1; u < AT; u++) bad += probs[((b * AH + h) * AT + t) * AT + u] != 0.0f;
            }
    CHECK_EQ_INT(bad, 0);
    AttnBwdDesc bd = {.batch = AB,
                      .seq = AT,
                      .heads = AH,
                      .kv_heads = AKV,
                      .head_dim = AD,
                      .dtype = DT_FP32,
                      .qkv = qkv,
                      .probs = probs,
                      .dout = dout,
                      .dqkv = dqkv,
                      .scratch = scratch};
    Err e;
    CHECK_EQ_INT(bk->attention_bwd(bk, &bd, &e), ST_OK);
    /* every q, k (each shared by two query heads) and v */
    int fd_bad = fd_mismatches(bk, attn_fd_fwd, NULL, qkv, AB * AT * AW, dout, AB * AT * AC, dqkv, 0, 1);
    CHECK_EQ_INT(fd_bad, 0);
    bd.kv_heads = 3; /* does not divide 4 */
    CHECK_EQ_INT(bk->attention_bwd(bk, &bd, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "3 KV heads must be at least 1 and divide the 4 heads");
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_rmsnorm);
    RUN(test_swiglu);
    RUN(test_rope);
    RUN(test_gqa_attention);
    return test_summary();
}
