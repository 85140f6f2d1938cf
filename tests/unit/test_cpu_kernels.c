/* tests/unit/test_cpu_kernels.c — the CPU backend's parallel, vectorizable
 * kernels against their one-element-at-a-time forms (the pool itself:
 * test_par_pool.c).
 *
 * The kernels were restructured (fixed row/column pieces on the pool, rows
 * decoded to FP32 runs) without changing any element's arithmetic, so each
 * one must equal, bit for bit, the plain loop it replaced — written out below
 * as old_* — on shapes that cut the work into many pieces (several chunks of
 * CPU_CHUNK elements, several 16-row and 64-column pieces, ragged ends). The
 * exceptions are attention (test_cpu_attention) and the GEMM (test_cpu_gemm). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/par.h"
#include "exec/backend/rng.h"
#include "exec/backend/scaling.h"
#include "fp8/codec.h"
#include "fp8/half.h"
#include "test.h"

static const float specials[] = {0.0f,      -0.0f,  1.0f,        -1.5f,    1e-40f,   -3e-39f, 65504.0f,
                                 65520.0f,  448.0f, 464.0f,      57344.0f, 61440.0f, 3.4e38f, INFINITY,
                                 -INFINITY, NAN,    0x1.fep127f, 1e-8f,    2e-7f};
enum { NSPEC = sizeof specials / sizeof specials[0] };

static void test_runs_match_elements(void)
{
    static const Dtype dts[] = {DT_FP32, DT_BF16, DT_FP16, DT_E4M3, DT_E5M2};
    enum { N = 70000 }; /* every 16-bit code, and specials + random values */
    float *x = malloc(N * sizeof(float)), *got = malloc(N * sizeof(float));
    uint8_t *a = malloc(4 * N), *b = malloc(4 * N);
    Rng r = {.s = 11};
    for (int i = 0; i < N; i++)
        x[i] = i < NSPEC ? specials[i] : (float)(rng_normal(&r) * ldexp(1.0, (int)rng_below(&r, 60) - 30));
    for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
        Dtype dt = dts[k];
        size_t sz = dtype_bytes(dt);
        for (int i = 0; i < N; i++) /* every code of 8- and 16-bit types */
            if (sz == 1)
                a[i] = (uint8_t)i;
            else if (sz == 2)
                ((uint16_t *)a)[i] = (uint16_t)i;
            else
                ((float *)a)[i] = x[i];
        elem_load_run(a, dt, 3, got, N - 3);
        int bad = 0;
        for (int i = 3; i < N; i++) {
            float want = elem_load(a, dt, (uint64_t)i);
            bad += memcmp(&want, &got[i - 3], sizeof want) != 0;
        }
        CHECKF(!bad, "elem_load_run %s: %d differ", dtype_name(dt), bad);
        elem_store_run(a, dt, 0, x, N);
        for (int i = 0; i < N; i++) elem_store(b, dt, (uint64_t)i, x[i]);
        CHECKF(!memcmp(a, b, N * sz), "elem_store_run %s differs from elem_store", dtype_name(dt));
    }
    for (int f = 0; f < 2; f++)
        for (int sat = 0; sat < 2; sat++) {
            Dtype dt = f ? DT_E5M2 : DT_E4M3;
            Fp8Sat s = sat ? FP8_SATFINITE : FP8_NOSAT;
            fp8_encode_f32_array(dt, x, 3.0f, a, N, s);
            int bad = 0;
            for (int i = 0; i < N; i++) bad += a[i] != fp8_encode_f32(dt, x[i] * 3.0f, s);
            CHECKF(!bad, "fp8_encode_f32_array %s sat %d: %d differ", dtype_name(dt), sat, bad);
        }
    bf16_encode_array(x, (uint16_t *)a, N);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += ((uint16_t *)a)[i] != bf16_encode(x[i]);
    CHECK_EQ_INT(bad, 0);
    free(x), free(got), free(a), free(b);
}

/* ---- the kernels against their element-wise forms ---------------------------------------- */

enum { R = 301, CC = 200, NE = 3 * CPU_CHUNK + 1234 }; /* rows, columns; elements */

static Backend *bk;

static void *rand_buf(Dtype dt, uint64_t n, uint64_t seed, double sd)
{
    void *p = malloc(n * 4 + 4);
    Rng r = {.s = seed};
    for (uint64_t i = 0; i < n; i++) elem_store(p, dt, i, (float)(rng_normal(&r) * sd));
    return p;
}

static int same(const void *a, const void *b, uint64_t bytes) { return !memcmp(a, b, (size_t)bytes); }

static void test_layernorm(void)
{
    Dtype dt = DT_BF16;
    void *x = rand_buf(dt, R * CC, 1, 2.0), *w = rand_buf(dt, CC, 2, 1.0), *bias = rand_buf(dt, CC, 3, 1.0);
    void *y = malloc(R * CC * 2), *y0 = malloc(R * CC * 2), *dy = rand_buf(dt, R * CC, 4, 1.0);
    void *dx = rand_buf(dt, R * CC, 5, 1.0), *dx0 = malloc(R * CC * 2);
    float mean[R], rstd[R], mean0[R], rstd0[R], dw[CC], db[CC], dw0[CC], db0[CC];
    memcpy(dx0, dx, R * CC * 2);
    for (int i = 0; i < CC; i++) dw[i] = dw0[i] = 0.25f * (float)i, db[i] = db0[i] = -0.5f * (float)i;
    NormFwdDesc f = {NORM_LAYERNORM, R, CC, 1e-5f, dt, dt, x, w, bias, y, mean, rstd};
    Err e;
    CHECK(!bk->norm_fwd(bk, &f, &e));
    for (uint64_t r = 0; r < R; r++) { /* the old loop */
        float sum = 0.0f;
        for (uint64_t i = 0; i < CC; i++) sum += elem_load(x, dt, r * CC + i);
        float mu = sum / (float)CC, var = 0.0f;
        for (uint64_t i = 0; i < CC; i++) {
            float t = elem_load(x, dt, r * CC + i) - mu;
            var += t * t;
        }
        float rs = 1.0f / sqrtf(var / (float)CC + 1e-5f);
        for (uint64_t i = 0; i < CC; i++) {
            float xn = (elem_load(x, dt, r * CC + i) - mu) * rs;
            elem_store(y0, dt, r * CC + i, xn * elem_load(w, dt, i) + elem_load(bias, dt, i));
        }
        mean0[r] = mu, rstd0[r] = rs;
    }
    CHECK(same(y, y0, R * CC * 2) && same(mean, mean0, sizeof mean) && same(rstd, rstd0, sizeof rstd));
    NormBwdDesc bd = {NORM_LAYERNORM, R, CC, dt, dt, x, w, mean, rstd, dy, dx, dw, db};
    CHECK(!bk->norm_bwd(bk, &bd, &e));
    for (uint64_t r = 0; r < R; r++) {
        float mu = mean[r], rs = rstd[r], dm = 0.0f, dnm = 0.0f;
        for (uint64_t i = 0; i < CC; i++) {
            float n = (elem_load(x, dt, r * CC + i) - mu) * rs,
                  dn = elem_load(w, dt, i) * elem_load(dy, dt, r * CC + i);
            dm += dn, dnm += dn * n;
        }
        dm /= (float)CC, dnm /= (float)CC;
        for (uint64_t i = 0; i < CC; i++) {
            float n = (elem_load(x, dt, r * CC + i) - mu) * rs, g = elem_load(dy, dt, r * CC + i);
            float dn = elem_load(w, dt, i) * g;
            db0[i] += g, dw0[i] += n * g;
            float v = km_ln_dinput(dn, n, dm, dnm, rs);
            elem_store(dx0, dt, r * CC + i, elem_load(dx0, dt, r * CC + i) + v);
        }
    }
    CHECK(same(dx, dx0, R * CC * 2));
    CHECK(same(dw, dw0, sizeof dw) && same(db, db0, sizeof db));
    free(x), free(w), free(bias), free(y), free(y0), free(dy), free(dx), free(dx0);
}

/* RMSNorm: the one-element loops of the reference it replaced (x̂ = x·rstd, no mean, no bias). */
static void test_rmsnorm(void)
{
    Dtype dt = DT_BF16;
    void *x = rand_buf(dt, R * CC, 21, 2.0), *w = rand_buf(dt, CC, 22, 1.0);
    void *y = malloc(R * CC * 2), *y0 = malloc(R * CC * 2), *dy = rand_buf(dt, R * CC, 23, 1.0);
    void *dx = rand_buf(dt, R * CC, 24, 1.0), *dx0 = malloc(R * CC * 2);
    float rstd[R], rstd0[R], dw[CC], dw0[CC];
    memcpy(dx0, dx, R * CC * 2);
    for (int i = 0; i < CC; i++) dw[i] = dw0[i] = 0.25f * (float)i;
    NormFwdDesc f = {NORM_RMSNORM, R, CC, 1e-5f, dt, dt, x, w, NULL, y, NULL, rstd};
    Err e;
    CHECK(!bk->norm_fwd(bk, &f, &e));
    for (uint64_t r = 0; r < R; r++) {
        float ss = 0.0f;
        for (uint64_t i = 0; i < CC; i++) {
            float v = elem_load(x, dt, r * CC + i);
            ss += v * v;
        }
        float rs = 1.0f / sqrtf(ss / (float)CC + 1e-5f);
        for (uint64_t i = 0; i < CC; i++) {
            float xh = km_ln_norm(elem_load(x, dt, r * CC + i), 0.0f, rs);
            elem_store(y0, dt, r * CC + i, km_rms_out(xh, elem_load(w, dt, i)));
        }
        rstd0[r] = rs;
    }
    CHECK(same(y, y0, R * CC * 2) && same(rstd, rstd0, sizeof rstd));
    NormBwdDesc bd = {NORM_RMSNORM, R, CC, dt, dt, x, w, NULL, rstd, dy, dx, dw, NULL};
    CHECK(!bk->norm_bwd(bk, &bd, &e));
    for (uint64_t r = 0; r < R; r++) {
        float rs = rstd[r], dnm = 0.0f;
        for (uint64_t i = 0; i < CC; i++) {
            float n = (elem_load(x, dt, r * CC + i) - 0.0f) * rs,
                  dn = elem_load(w, dt, i) * elem_load(dy, dt, r * CC + i);
            dnm += dn * n;
        }
        dnm /= (float)CC;
        for (uint64_t i = 0; i < CC; i++) {
            float n = (elem_load(x, dt, r * CC + i) - 0.0f) * rs, g = elem_load(dy, dt, r * CC + i);
            dw0[i] += n * g;
            float v = km_rms_dx(elem_load(w, dt, i) * g, n, dnm, rs);
            elem_store(dx0, dt, r * CC + i, elem_load(dx0, dt, r * CC + i) + v);
        }
    }
    CHECK(same(dx, dx0, R * CC * 2));
    CHECK(same(dw, dw0, sizeof dw));
    free(x), free(w), free(y), free(y0), free(dy), free(dx), free(dx0);
}

/* SwiGLU on rows of [gate | up], and the rotary embedding, element by element. */
static void test_swiglu_and_rope(void)
{
    Dtype dt = DT_BF16;
    enum { F = CC / 2 };
    void *in = rand_buf(dt, R * 2 * F, 25, 3.0), *dy = rand_buf(dt, R * F, 26, 1.0);
    void *o = malloc(R * F * 2), *o0 = malloc(R * F * 2), *dx = malloc(R * 2 * F * 2), *dx0 = malloc(R * 2 * F * 2);
    Err e;
    ActFwdDesc af = {MLP_SWIGLU, R, F, dt, in, o};
    CHECK(!bk->act_fwd(bk, &af, &e));
    ActBwdDesc ab = {MLP_SWIGLU, R, F, dt, in, dy, dx};
    CHECK(!bk->act_bwd(bk, &ab, &e));
    for (uint64_t r = 0; r < R; r++)
        for (uint64_t j = 0; j < F; j++) {
            float g = elem_load(in, dt, r * 2 * F + j), u = elem_load(in, dt, r * 2 * F + F + j), dg, du;
            elem_store(o0, dt, r * F + j, km_swiglu(g, u));
            km_swiglu_bwd(g, u, elem_load(dy, dt, r * F + j), &dg, &du);
            elem_store(dx0, dt, r * 2 * F + j, dg);
            elem_store(dx0, dt, r * 2 * F + F + j, du);
        }
    CHECK(same(o, o0, R * F * 2));
    CHECK(same(dx, dx0, R * 2 * F * 2));

    enum { BB = 3, T = 37, H = 4, KV = 2, D = 8, W = (H + 2 * KV) * D };
    void *q = rand_buf(dt, BB * T * W, 27, 1.0), *q0 = malloc(BB * T * W * 2);
    float *cs = malloc(sizeof(float) * T * D);
    for (int i = 0; i < T * D / 2; i++) cs[2 * i] = cosf(0.1f * (float)i), cs[2 * i + 1] = sinf(0.1f * (float)i);
    memcpy(q0, q, BB * T * W * 2);
    for (int inv = 0; inv < 2; inv++) {
        RopeDesc rd = {.batch = BB,
                       .seq = T,
                       .heads = H,
                       .kv_heads = KV,
                       .head_dim = D,
                       .dtype = dt,
                       .qkv = q,
                       .cos_sin = cs,
                       .inverse = inv};
        CHECK(!bk->rope(bk, &rd, &e));
        for (uint64_t r = 0; r < BB * T; r++)
            for (uint64_t h = 0; h < H + KV; h++) /* q and k heads; v untouched */
                for (uint64_t i = 0; i < D / 2; i++) {
                    uint64_t at = r * W + h * D + i;
                    float c = cs[(r % T) * D + 2 * i], sn = cs[(r % T) * D + 2 * i + 1], o1, o2;
                    km_rope_pair(elem_load(q0, dt, at), elem_load(q0, dt, at + D / 2), c, inv ? -sn : sn, &o1, &o2);
                    elem_store(q0, dt, at, o1);
                    elem_store(q0, dt, at + D / 2, o2);
                }
        CHECK(same(q, q0, BB * T * W * 2));
    }
    free(in), free(dy), free(o), free(o0), free(dx), free(dx0), free(q), free(q0), free(cs);
}

static void test_elementwise(void)
{
    Dtype dt = DT_BF16;
    void *a = rand_buf(dt, NE, 6, 3.0), *b = rand_buf(dt, NE, 7, 1.0), *o = malloc(NE * 2), *o0 = malloc(NE * 2);
    Err e;
    ActFwdDesc af = {MLP_GELU, 1, NE, dt, a, o};
    CHECK(!bk->act_fwd(bk, &af, &e));
    for (uint64_t i = 0; i < NE; i++) elem_store(o0, dt, i, km_gelu(elem_load(a, dt, i)));
    CHECK(same(o, o0, NE * 2));
    memcpy(o, b, NE * 2); /* in place: din is dout */
    ActBwdDesc ab = {MLP_GELU, 1, NE, dt, a, o, o};
    CHECK(!bk->act_bwd(bk, &ab, &e));
    for (uint64_t i = 0; i < NE; i++) elem_store(o0, dt, i, km_gelu_grad(elem_load(a, dt, i)) * elem_load(b, dt, i));
    CHECK(same(o, o0, NE * 2));
    CHECK(!bk->add(bk, a, b, o, dt, NE, &e));
    for (uint64_t i = 0; i < NE; i++) elem_store(o0, dt, i, elem_load(a, dt, i) + elem_load(b, dt, i));
    CHECK(same(o, o0, NE * 2));
    float s = 0.37f, am = 0.5f, am0 = 0.5f;
    float *f = rand_buf(DT_FP32, NE, 8, 5.0);
    f[77] = NAN; /* amax ignores NaN, as fmaxf */
    CHECK(!bk->convert(bk, f, DT_FP32, o, dt, NE, &s, &e));
    for (uint64_t i = 0; i < NE; i++) elem_store(o0, dt, i, f[i] * s);
    CHECK(same(o, o0, NE * 2));
    CHECK(!bk->amax(bk, f, DT_FP32, NE, &am, &e));
    for (uint64_t i = 0; i < NE; i++) am0 = fmaxf(am0, fabsf(f[i]));
    CHECK(am == am0);
    free(a), free(b), free(o), free(o0), free(f);
}

static void test_column_sums_and_embeddings(void)
{
    Dtype dt = DT_BF16;
    void *g = rand_buf(dt, R * CC, 9, 1.0);
    float db[CC], db0[CC];
    for (int j = 0; j < CC; j++) db[j] = db0[j] = (float)j;
    Err e;
    CHECK(!bk->bias_grad(bk, g, dt, R, CC, db, &e));
    for (uint64_t j = 0; j < CC; j++) {
        float s = 0.0f;
        for (uint64_t i = 0; i < R; i++) s += elem_load(g, dt, i * CC + j);
        db0[j] += s;
    }
    CHECK(same(db, db0, sizeof db));
    enum { V = 50, BB = 2, T = R / 2 }; /* tokens repeat: the scatter's order matters */
    int32_t tok[BB * T];
    Rng r = {.s = 10};
    for (int i = 0; i < BB * T; i++) tok[i] = (int32_t)rng_below(&r, V);
    void *wte = rand_buf(dt, V * CC, 11, 1.0), *wpe = rand_buf(dt, T * CC, 12, 1.0);
    void *out = malloc(BB * T * CC * 2), *out0 = malloc(BB * T * CC * 2);
    CHECK(!bk->embed_fwd(bk, tok, BB, T, V, CC, wte, wpe, dt, out, dt, &e));
    for (uint64_t i = 0; i < BB * T; i++)
        for (uint64_t c = 0; c < CC; c++)
            elem_store(out0, dt, i * CC + c,
                       elem_load(wte, dt, (uint64_t)tok[i] * CC + c) + elem_load(wpe, dt, i % T * CC + c));
    CHECK(same(out, out0, BB * T * CC * 2));
    float *dwte = calloc(V * CC, 4), *dwpe = calloc(T * CC, 4), *dwte0 = calloc(V * CC, 4), *dwpe0 = calloc(T * CC, 4);
    CHECK(!bk->embed_bwd(bk, tok, BB, T, V, CC, g, dt, dwte, dwpe, &e));
    for (uint64_t i = 0; i < BB * T; i++)
        for (uint64_t c = 0; c < CC; c++) {
            float v = elem_load(g, dt, i * CC + c);
            dwte0[(uint64_t)tok[i] * CC + c] += v;
            dwpe0[i % T * CC + c] += v;
        }
    CHECK(same(dwte, dwte0, V * CC * 4) && same(dwpe, dwpe0, T * CC * 4));
    /* without learned positions (rotary models): the token rows alone, and no position gradient */
    CHECK(!bk->embed_fwd(bk, tok, BB, T, V, CC, wte, NULL, dt, out, dt, &e));
    for (uint64_t i = 0; i < BB * T; i++)
        for (uint64_t c = 0; c < CC; c++)
            elem_store(out0, dt, i * CC + c, elem_load(wte, dt, (uint64_t)tok[i] * CC + c));
    CHECK(same(out, out0, BB * T * CC * 2));
    CHECK(!bk->embed_bwd(bk, tok, BB, T, V, CC, g, dt, dwte, NULL, &e));
    for (uint64_t i = 0; i < BB * T; i++)
        for (uint64_t c = 0; c < CC; c++) dwte0[(uint64_t)tok[i] * CC + c] += elem_load(g, dt, i * CC + c);
    CHECK(same(dwte, dwte0, V * CC * 4));
    free(g), free(wte), free(wpe), free(out), free(out0), free(dwte), free(dwpe), free(dwte0), free(dwpe0);
}

static void test_cross_entropy(void)
{
    enum { ROWS = 37, V = 3000, VP = 3072 };
    Dtype dt = DT_FP32;
    float *lg = rand_buf(dt, ROWS * VP, 13, 3.0), *lg0 = malloc(ROWS * VP * 4), loss[ROWS], loss0[ROWS];
    int32_t tgt[ROWS];
    for (int i = 0; i < ROWS; i++) tgt[i] = (i * 97) % V;
    memcpy(lg0, lg, ROWS * VP * 4);
    Err e;
    CHECK(!bk->xent_fwd_bwd(bk, lg, dt, ROWS, V, VP, tgt, 1.0f / ROWS, loss, &e));
    float *row = malloc(V * 4), dl = 1.0f / ROWS; /* dloss as the kernel gets it */
    for (uint64_t r = 0; r < ROWS; r++) {
        float mx = -INFINITY;
        for (uint64_t i = 0; i < V; i++) row[i] = lg0[r * VP + i], mx = row[i] > mx ? row[i] : mx;
        float xt = row[tgt[r]], sum = 0.0f;
        for (uint64_t i = 0; i < V; i++) sum += (row[i] = expf(row[i] - mx));
        loss0[r] = logf(sum) + mx - xt;
        for (uint64_t i = 0; i < V; i++) lg0[r * VP + i] = (row[i] / sum - (i == (uint64_t)tgt[r] ? 1.0f : 0.0f)) * dl;
        for (uint64_t i = V; i < VP; i++) lg0[r * VP + i] = 0.0f;
    }
    CHECK(same(loss, loss0, sizeof loss));
    CHECK(same(lg, lg0, ROWS * VP * 4));
    free(lg), free(lg0), free(row);
}

/* cast + transpose: one shape with many row tiles, one with several column
 * tiles, one flat (a gradient: 1 row). */
static void test_casts(void)
{
    static const uint64_t shapes[3][2] = {{R, CC}, {40, 5000}, {1, NE}};
    for (int k = 0; k < 3; k++) {
        uint64_t rows = shapes[k][0], cols = shapes[k][1], n = rows * cols;
        float *x = rand_buf(DT_FP32, n, 14 + (uint64_t)k, 50.0), scale = 7.5f, sinv = 0, am = 0, am0 = 0, dq = 0.5f;
        uint8_t *row = malloc(n), *col = malloc(n), *row0 = malloc(n), *col0 = malloc(n);
        CastDesc c = {.in = x,
                      .in_dtype = DT_FP32,
                      .in_scale_inv = &dq,
                      .rows = rows,
                      .cols = cols,
                      .out_dtype = DT_E4M3,
                      .out_row = row,
                      .out_col = col,
                      .scale = &scale,
                      .scale_inv = &sinv,
                      .amax = &am};
        Err e;
        CHECK(!bk->cast_transpose(bk, &c, &e));
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t j = 0; j < cols; j++) {
                float v = x[r * cols + j] * dq;
                am0 = fmaxf(am0, fabsf(v));
                row0[r * cols + j] = col0[j * rows + r] = elem_fp8_from_f32(v * scale, DT_E4M3);
            }
        CHECKF(same(row, row0, n) && same(col, col0, n) && am == am0 && sinv == 1.0f / scale, "cast %llux%llu",
               (unsigned long long)rows, (unsigned long long)cols);
        free(x), free(row), free(col), free(row0), free(col0);
    }
}

static void test_optimizers(void)
{
    float *w = rand_buf(DT_FP32, NE, 20, 0.1), *m = rand_buf(DT_FP32, NE, 21, 0.01);
    float *v = malloc(NE * 4), *g = rand_buf(DT_FP32, NE, 22, 1.0);
    for (uint64_t i = 0; i < NE; i++) v[i] = m[i] * m[i];
    float *w0 = malloc(NE * 4), *m0 = malloc(NE * 4), *v0 = malloc(NE * 4);
    void *wb = malloc(NE * 2), *wb0 = malloc(NE * 2);
    memcpy(w0, w, NE * 4), memcpy(m0, m, NE * 4), memcpy(v0, v, NE * 4);
    AdamHyper h = {
        .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .step = 3, .grad_scale = 0.5f};
    AdamWDesc d = {NE, h, w, m, v, g, DT_FP32, NULL, wb, DT_BF16, DT_FP32};
    Err e;
    CHECK(!bk->adamw(bk, &d, &e));
    float bc1 = 1.0f - powf(h.beta1, 3.0f), bc2 = 1.0f - powf(h.beta2, 3.0f);
    for (uint64_t i = 0; i < NE; i++) {
        w0[i] = km_adamw(w0[i], g[i] * h.grad_scale, &m0[i], &v0[i], h.lr, h.beta1, h.beta2, h.eps, h.weight_decay, bc1,
                         bc2);
        elem_store(wb0, DT_BF16, i, w0[i]);
    }
    CHECK(same(w, w0, NE * 4) && same(m, m0, NE * 4) && same(v, v0, NE * 4) && same(wb, wb0, NE * 2));
    /* adamw_multi over three slices of the same arrays (sizes 1, NE/2 − 1, NE/2; each with its own decay and
     * grad scale) is adamw on each slice: the reference copies w0/m0/v0 take the same steps by slice */
    {
        const uint64_t cut[4] = {0, 1, NE / 2, NE};
        const float decay[3] = {0.0f, 0.1f, 0.01f}, gsc[3] = {1.0f, 0.5f, 2.0f};
        AdamWDesc sl[3];
        AdamHyper h4 = h;
        h4.step = 4;
        for (int k = 0; k < 3; k++) {
            uint64_t b = cut[k], n = cut[k + 1] - b;
            sl[k] = (AdamWDesc){n, h4, w + b, m + b, v + b, g + b, DT_FP32, NULL, (uint16_t *)wb + b, DT_BF16, DT_FP32};
            sl[k].h.weight_decay = decay[k], sl[k].h.grad_scale = gsc[k];
            AdamWDesc one = sl[k];
            one.master = w0 + b, one.m = m0 + b, one.v = v0 + b, one.weight = (uint16_t *)wb0 + b;
            CHECK(!bk->adamw(bk, &one, &e));
        }
        AdamWMultiDesc md = {.count = 3, .list = sl, .list_dev = sl};
        const float first = w[0], last = w[NE - 1];
        CHECK(!bk->adamw_multi(bk, &md, &e));
        CHECK(same(w, w0, NE * 4) && same(m, m0, NE * 4) && same(v, v0, NE * 4) && same(wb, wb0, NE * 2));
        CHECK(w[0] != first && w[NE - 1] != last); /* the first and the last slice moved */
    }
    /* FP8-LM: FP16 master, E4M3 m, FP16 v with power-of-two scales; two passes */
    void *mw = rand_buf(DT_FP16, NE, 23, 1.0), *mm = rand_buf(DT_E4M3, NE, 24, 8.0),
         *mv = rand_buf(DT_FP16, NE, 25, 1.0);
    for (uint64_t i = 0; i < NE; i++) elem_store(mv, DT_FP16, i, fabsf(elem_load(mv, DT_FP16, i)));
    void *mw0 = malloc(NE * 2), *mm0 = malloc(NE), *mv0 = malloc(NE * 2);
    memcpy(mw0, mw, NE * 2), memcpy(mm0, mm, NE), memcpy(mv0, mv, NE * 2);
    float rw[3] = {4, 0.25f, 0}, rm[3] = {8, 0.125f, 0}, rv[3] = {2, 0.5f, 0};
    Fp8AdamDesc f = {.n = NE,
                     .h = h,
                     .master = mw,
                     .master_rec = rw,
                     .m = mm,
                     .m_rec = rm,
                     .v = mv,
                     .v_rec = rv,
                     .grad = g,
                     .grad_dtype = DT_FP32,
                     .weight = wb,
                     .weight_dtype = DT_BF16};
    CHECK(!bk->fp8_adam(bk, &f, &e));
    float aw = 0, amm = 0, av = 0, dw = 0.25f, dm = 0.125f, dv = 0.5f;
    for (int pass = 0; pass < 2; pass++) {
        float sw = pass ? scaling_pow2(aw, DT_FP16, 0, 4) : 1, sm = pass ? scaling_pow2(amm, DT_E4M3, 0, 8) : 1;
        float sv = pass ? scaling_pow2(av, DT_FP16, 0, 2) : 1;
        for (uint64_t i = 0; i < NE; i++) {
            float mi = elem_load(mm0, DT_E4M3, i) * dm, vi = elem_load(mv0, DT_FP16, i) * dv;
            float wi = km_adamw(elem_load(mw0, DT_FP16, i) * dw, g[i] * h.grad_scale, &mi, &vi, h.lr, h.beta1, h.beta2,
                                h.eps, h.weight_decay, bc1, bc2);
            if (!pass) {
                aw = fmaxf(aw, fabsf(wi)), amm = fmaxf(amm, fabsf(mi)), av = fmaxf(av, fabsf(vi));
                continue;
            }
            elem_store(mm0, DT_E4M3, i, mi * sm), elem_store(mv0, DT_FP16, i, vi * sv);
            elem_store(mw0, DT_FP16, i, wi * sw);
            elem_store(wb0, DT_BF16, i, elem_load(mw0, DT_FP16, i) / sw);
        }
    }
    CHECK(same(mw, mw0, NE * 2) && same(mm, mm0, NE) && same(mv, mv0, NE * 2) && same(wb, wb0, NE * 2));
    CHECK(rw[REC_AMAX] == aw && rm[REC_AMAX] == amm && rv[REC_AMAX] == av);
    free(w), free(m), free(v), free(g), free(w0), free(m0), free(v0), free(wb), free(wb0);
    free(mw), free(mm), free(mv), free(mw0), free(mm0), free(mv0);
}

int main(void)
{
    Err e;
    if (backend_cpu_create(&bk, &e)) return 1;
    RUN(test_runs_match_elements);
    RUN(test_layernorm);
    RUN(test_rmsnorm);
    RUN(test_swiglu_and_rope);
    RUN(test_elementwise);
    RUN(test_column_sums_and_embeddings);
    RUN(test_cross_entropy);
    RUN(test_casts);
    RUN(test_optimizers);
    bk->destroy(bk);
    return test_summary();
}
