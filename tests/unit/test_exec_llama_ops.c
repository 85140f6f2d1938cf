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

/* q/k norms before the rotation (Qwen3), worked by hand at position 0 (cos 1, sin 0: the rotation is the
 * identity, so only the norm shows). One token, one q head, one KV head, D 2, eps 1:
 *   q = (0, 4):  mean(q²) + 1 = 9,   rstd 1/3, q̂ = (0, 4/3),   w_q = (1, 3) → (0, 4)
 *   k = (4, 12): mean(k²) + 1 = 81,  rstd 1/9, k̂ = (4/9, 12/9), w_k = (9, 3) → (4, 4)
 *   v = (5, 6) untouched; rstd (1/3, 1/9) written.
 * Backward from dq = (0, 1), dk = (1, 0), dv = (7, 8), the forward's input read from norm_raw:
 *   q: dx̂ = w·dy = (0, 3), mean(dx̂·x̂) = (0 + 3·4/3)/2 = 2, dx = (dx̂ − x̂·2)·rstd = (0, (3 − 8/3)/3) = (0, 1/9);
 *      dw_q += dy·x̂ = (0, 4/3)
 *   k: dx̂ = (9, 0), mean(dx̂·x̂) = (9·4/9)/2 = 2, dx = ((9 − 8/9)/9, (0 − 24/9)/9) = (73/81, −24/81);
 *      dw_k += (4/9, 0)
 *   dv stays (7, 8). */
static void test_rope_qk_norm(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    float cs[2], qkv[6] = {0, 4, 4, 12, 5, 6}, rstd[2], wq[2] = {1, 3}, wk[2] = {9, 3};
    const float raw[6] = {0, 4, 4, 12, 5, 6};
    float dwq[2] = {0, 0}, dwk[2] = {0, 0};
    model_rope_table(1, 2, 10000.0, cs);
    RopeDesc d = {.batch = 1,
                  .seq = 1,
                  .heads = 1,
                  .kv_heads = 1,
                  .head_dim = 2,
                  .dtype = DT_FP32,
                  .qkv = qkv,
                  .cos_sin = cs,
                  .qnorm_w = wq,
                  .knorm_w = wk,
                  .norm_wdt = DT_FP32,
                  .eps = 1.0f,
                  .norm_rstd = rstd};
    Err e;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_OK);
    const float y[6] = {0, 4, 4, 4, 5, 6};
    for (int i = 0; i < 6; i++) CHECK_NEAR(qkv[i], y[i], 4e-7);
    CHECK_REL(rstd[0], 1.0 / 3.0, 1e-6);
    CHECK_REL(rstd[1], 1.0 / 9.0, 1e-6);
    float g[6] = {0, 1, 1, 0, 7, 8};
    d.qkv = g, d.inverse = 1;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_USAGE); /* the inverse needs the forward's input and the gradients */
    CHECK_CONTAINS(e.msg, "missing q/k norm gradient or input");
    d.norm_raw = raw, d.qnorm_dw = dwq, d.knorm_dw = dwk;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_OK);
    const double dx[6] = {0, 1.0 / 9.0, 73.0 / 81.0, -24.0 / 81.0, 7, 8};
    for (int i = 0; i < 6; i++) CHECK_NEAR(g[i], dx[i], 1e-6);
    CHECK_NEAR(dwq[0], 0.0, 1e-7);
    CHECK_REL(dwq[1], 4.0 / 3.0, 1e-6);
    CHECK_REL(dwk[0], 4.0 / 9.0, 1e-6);
    CHECK_NEAR(dwk[1], 0.0, 1e-7);
    d.knorm_w = NULL; /* one weight without the other */
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "missing q/k norm pointer");
    d.knorm_w = wk, d.eps = 0.0f;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "q/k norm epsilon 0 is not positive");
    bk->destroy(bk);
}

/* Latent attention's decoupled RoPE: only the last rope_dim columns of each q and k head rotate, and the value heads
 * have a width of their own. D 4, R 2, Dv 3, one q head and one KV head: rows of W = 2·4 + 3 = 11. With R 2 the one
 * frequency is base^0 = 1, so token 1 turns by 1 radian (c = cos 1, s = sin 1) and token 0 not at all:
 *   token 1, q = (1, 2, 3, 4) → (1, 2, 3c − 4s, 4c + 3s); k = (5, 6, 7, 8) → (5, 6, 7c − 8s, 8c + 7s);
 *   v = (9, 10, 11) untouched; token 0 unchanged. The inverse turns them back. */
static void test_rope_partial(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    float cs[4], x[22];
    for (int i = 0; i < 22; i++) x[i] = (float)(1 + i % 11);
    model_rope_table(2, 2, 10000.0, cs);
    RopeDesc d = {.batch = 1,
                  .seq = 2,
                  .heads = 1,
                  .kv_heads = 1,
                  .head_dim = 4,
                  .dtype = DT_FP32,
                  .qkv = x,
                  .cos_sin = cs,
                  .rope_dim = 2,
                  .v_head_dim = 3};
    Err e;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_OK);
    const double c = cos(1.0), sn = sin(1.0);
    const double want[22] = {
        1, 2,  3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 2, 3 * c - 4 * sn, 4 * c + 3 * sn, 5, 6, 7 * c - 8 * sn, 8 * c + 7 * sn,
        9, 10, 11};
    for (int i = 0; i < 22; i++) CHECK_NEAR(x[i], want[i], 2e-6);
    d.inverse = 1;
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_OK);
    for (int i = 0; i < 22; i++) CHECK_NEAR(x[i], 1 + i % 11, 4e-6);
    d.rope_dim = 6; /* wider than the head */
    CHECK_EQ_INT(bk->rope(bk, &d, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "rope: rope_dim 6 is odd or above head_dim 4");
    bk->destroy(bk);
}

/* Latent attention's q/k/v assembly by strided_copy, by hand: 2 tokens, 2 heads, nope 2, rope 1, Dv 1, kv_lora 2.
 * kv_down's output (2, kv_lora + rope) = [1 2 | 3], [4 5 | 6]; kv_up's (2, 2 x (nope + Dv)) = [10 11 12 20 21 22],
 * [30 31 32 40 41 42], per head k_nope (2) then v (1). The attention's rows (2, W = 2 x 3 + 2 x 3 + 2 x 1 = 14):
 * q [0, 6) untouched (-1), k heads [6, 12) = [10 11 3 20 21 3] and [30 31 6 40 41 6] (the rope column 3 / 6
 * shared by both heads), v [12, 14) = [12 22] and [32 42]. Backward of the shared rope column: the heads' k
 * rope gradients summed, 3 + 3 = 6 and 6 + 6 = 12, onto 0.5 already there: 6.5 and 12.5. The latent copy for
 * its norm: [1 2], [4 5]. BF16 sums round once: 256 + 1 + 1 = 258 (BF16 spaces 2 apart above 256; adding in
 * BF16 would round 257 back to 256 twice and give 256). */
static void test_strided_copy(void)
{
    Backend *bk = cpu();
    if (!bk) return;
    float down[6] = {1, 2, 3, 4, 5, 6}, up[12] = {10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42}, qkv[28];
    for (int i = 0; i < 28; i++) qkv[i] = -1;
    StridedCopyDesc kn = {.rows = 2,
                          .cols = 2,
                          .reps = 2,
                          .dtype = DT_FP32,
                          .src = up,
                          .src_ld = 6,
                          .src_step = 3,
                          .dst = qkv + 6,
                          .dst_ld = 14,
                          .dst_step = 3};
    StridedCopyDesc kr = kn, v = kn;
    kr.cols = 1, kr.src = down + 2, kr.src_ld = 3, kr.src_step = 0, kr.dst = qkv + 8;
    v.cols = 1, v.src = up + 2, v.dst = qkv + 12, v.dst_step = 1;
    Err e;
    CHECK_EQ_INT(bk->strided_copy(bk, &kn, &e), ST_OK);
    CHECK_EQ_INT(bk->strided_copy(bk, &kr, &e), ST_OK);
    CHECK_EQ_INT(bk->strided_copy(bk, &v, &e), ST_OK);
    const float want[28] = {-1, -1, -1, -1, -1, -1, 10, 11, 3, 20, 21, 3, 12, 22,
                            -1, -1, -1, -1, -1, -1, 30, 31, 6, 40, 41, 6, 32, 42};
    for (int i = 0; i < 28; i++) CHECKF(qkv[i] == want[i], "qkv[%d] = %g, want %g", i, qkv[i], want[i]);
    float dr[2] = {0.5f, 0.5f}; /* d(k rope): the heads' columns 8 and 11 of each row summed into one */
    StridedCopyDesc bw = {.rows = 2,
                          .cols = 1,
                          .reps = 2,
                          .dtype = DT_FP32,
                          .src = qkv + 8,
                          .src_ld = 14,
                          .src_step = 3,
                          .dst = dr,
                          .dst_ld = 1,
                          .dst_step = 0,
                          .accumulate = 1};
    CHECK_EQ_INT(bk->strided_copy(bk, &bw, &e), ST_OK);
    CHECK(dr[0] == 6.5f && dr[1] == 12.5f);
    float lat[4];
    StridedCopyDesc lc = {.rows = 2,
                          .cols = 2,
                          .reps = 1,
                          .dtype = DT_FP32,
                          .src = down,
                          .src_ld = 3,
                          .dst = lat,
                          .dst_ld = 2,
                          .dst_step = 2};
    CHECK_EQ_INT(bk->strided_copy(bk, &lc, &e), ST_OK);
    CHECK(lat[0] == 1 && lat[1] == 2 && lat[2] == 4 && lat[3] == 5);
    uint16_t b3[3] = {0x4380, 0x3F80, 0x3F80}, bs = 0; /* BF16 256, 1, 1 */
    StridedCopyDesc sb = {.rows = 1,
                          .cols = 1,
                          .reps = 3,
                          .dtype = DT_BF16,
                          .src = b3,
                          .src_ld = 3,
                          .src_step = 1,
                          .dst = &bs,
                          .dst_ld = 1};
    CHECK_EQ_INT(bk->strided_copy(bk, &sb, &e), ST_OK);
    CHECK_EQ_INT(bs, 0x4381); /* 258 */
    StridedCopyDesc bad = kn;
    bad.dst_step = 1;
    CHECK_EQ_INT(bk->strided_copy(bk, &bad, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "strided_copy: destination blocks overlap (dst_step 1 below cols 2)");
    bad = kn, bad.src_ld = 4;
    CHECK_EQ_INT(bk->strided_copy(bk, &bad, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "strided_copy: source row stride 4 is below a row's reach (2 - 1) x 3 + 2");
    bad = kn, bad.dtype = DT_E4M3;
    CHECK_EQ_INT(bk->strided_copy(bk, &bad, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "strided_copy: element dtype e4m3 is not fp32, fp16 or bf16");
    bad = kn, bad.reps = 0;
    CHECK_EQ_INT(bk->strided_copy(bk, &bad, &e), ST_USAGE);
    CHECK_CONTAINS(e.msg, "strided_copy: empty shape rows=2 cols=2 reps=0");
    bk->destroy(bk);
}

/* ---- attention: grouped-query heads, value heads of their own width ------------------------------------ */

/* One attention shape: B sequences of T tokens, H query heads on KV key/value heads of width D (q, k) and Dv (v;
 * 0: D). qkv rows are W = (H + KV)·D + KV·Dv wide, q head h at h·D, k head g at H·D + g·D, v head g at
 * (H + KV)·D + g·Dv; out rows H·Dv. */
typedef struct {
    const char *name;
    int B, T, H, KV, D, Dv;
    uint64_t seed;
} AttnShape;

enum { ATT_MAXW = 64, ATT_MAXC = 16, ATT_MAXP = 2 * 4 * 5 * 5, ATT_MAXBT = 2 * 5 };

static int att_dv(const AttnShape *s) { return s->Dv ? s->Dv : s->D; }
static int att_w(const AttnShape *s) { return (s->H + s->KV) * s->D + s->KV * att_dv(s); }

static void att_fwd(Backend *bk, const AttnShape *s, const float *qkv, float *probs, float *out)
{
    AttnFwdDesc d = {.batch = (uint32_t)s->B,
                     .seq = (uint32_t)s->T,
                     .heads = (uint32_t)s->H,
                     .kv_heads = (uint32_t)s->KV,
                     .head_dim = (uint32_t)s->D,
                     .v_head_dim = (uint32_t)s->Dv,
                     .dtype = DT_FP32,
                     .qkv = qkv,
                     .probs = probs,
                     .out = out};
    Err e;
    CHECK_EQ_INT(bk->attention_fwd(bk, &d, &e), ST_OK);
}

static void att_fd_fwd(Backend *bk, const void *ctx, const float *in, float *out)
{
    static float probs[ATT_MAXP];
    att_fwd(bk, ctx, in, probs, out);
}

/* The forward against a direct causal evaluation (query head h attends with KV head h / (H/KV), scores scaled
 * by 1/√D; the masked probabilities exactly 0): the count of outputs off by more than 1e-5. */
static int att_direct_mismatches(const AttnShape *s, const float *qkv, const float *probs, const float *out)
{
    const int W = att_w(s), Dv = att_dv(s), C = s->H * Dv, T = s->T;
    int bad = 0;
    for (int b = 0; b < s->B; b++)
        for (int h = 0; h < s->H; h++)
            for (int t = 0; t < T; t++) {
                const int g = h / (s->H / s->KV);
                double sc[8], mx = -INFINITY, sum = 0.0;
                for (int u = 0; u <= t; u++) {
                    sc[u] = 0.0;
                    for (int i = 0; i < s->D; i++)
                        sc[u] += (double)qkv[(b * T + t) * W + h * s->D + i] *
                                 qkv[(b * T + u) * W + s->H * s->D + g * s->D + i];
                    sc[u] /= sqrt((double)s->D);
                    mx = fmax(mx, sc[u]);
                }
                for (int u = 0; u <= t; u++) sum += exp(sc[u] - mx);
                for (int i = 0; i < Dv; i++) {
                    double o = 0.0;
                    for (int u = 0; u <= t; u++)
                        o += exp(sc[u] - mx) / sum * qkv[(b * T + u) * W + (s->H + s->KV) * s->D + g * Dv + i];
                    bad += fabs(out[(b * T + t) * C + h * Dv + i] - o) > 1e-5;
                }
                for (int u = t + 1; u < T; u++) bad += probs[((b * s->H + h) * T + t) * T + u] != 0.0f;
            }
    return bad;
}

/* Each shape: the forward against the direct evaluation, the backward against finite differences of every q,
 * k (each shared by H/KV query heads) and v; then a KV head count that does not divide H is refused. Shapes:
 * GQA, 4 query heads on 2 KV heads of 4 (W = (4 + 2)·4 + 2·4 = 32); latent attention's value heads of their
 * own width, D 6, Dv 4 (W = (4 + 2)·6 + 2·4 = 44, out 4·4 = 16). */
static void test_attention_shapes(void)
{
    static const AttnShape shapes[] = {
        {"gqa", 2, 5, 4, 2, 4, 0, 13},
        {"value width", 2, 5, 4, 2, 6, 4, 17},
    };
    Backend *bk = cpu();
    if (!bk) return;
    static float qkv[ATT_MAXBT * ATT_MAXW], probs[ATT_MAXP], out[ATT_MAXBT * ATT_MAXC], dout[ATT_MAXBT * ATT_MAXC];
    static float dqkv[ATT_MAXBT * ATT_MAXW], scratch[ATT_MAXP];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        const AttnShape *s = &shapes[k];
        const int BT = s->B * s->T, W = att_w(s), C = s->H * att_dv(s);
        Rng r = {s->seed};
        randn(&r, qkv, BT * W, 1.0), randn(&r, dout, BT * C, 1.0);
        att_fwd(bk, s, qkv, probs, out);
        CHECKF(att_direct_mismatches(s, qkv, probs, out) == 0, "%s: forward", s->name);
        AttnBwdDesc bd = {.batch = (uint32_t)s->B,
                          .seq = (uint32_t)s->T,
                          .heads = (uint32_t)s->H,
                          .kv_heads = (uint32_t)s->KV,
                          .head_dim = (uint32_t)s->D,
                          .v_head_dim = (uint32_t)s->Dv,
                          .dtype = DT_FP32,
                          .qkv = qkv,
                          .probs = probs,
                          .dout = dout,
                          .dqkv = dqkv,
                          .scratch = scratch};
        Err e;
        CHECK_EQ_INT(bk->attention_bwd(bk, &bd, &e), ST_OK);
        CHECKF(fd_mismatches(bk, att_fd_fwd, s, qkv, BT * W, dout, BT * C, dqkv, 0, 1) == 0, "%s: backward", s->name);
        bd.kv_heads = 3; /* does not divide 4 */
        CHECK_EQ_INT(bk->attention_bwd(bk, &bd, &e), ST_USAGE);
        CHECK_CONTAINS(e.msg, "3 KV heads must be at least 1 and divide the 4 heads");
    }
    bk->destroy(bk);
}

int main(void)
{
    RUN(test_rmsnorm);
    RUN(test_swiglu);
    RUN(test_rope);
    RUN(test_rope_qk_norm);
    RUN(test_rope_partial);
    RUN(test_strided_copy);
    RUN(test_attention_shapes);
    return test_summary();
}
