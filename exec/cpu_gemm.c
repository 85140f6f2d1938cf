/* exec/cpu_gemm.c — the reference GEMM: D (M,N) = A (M,K) · B (N,K)ᵀ.
 *
 * Numerics, as the GPU's tensor cores define them:
 *  - FP8 operands enter as their raw FP8 values (no scale applied); every
 *    product of two FP8 values (or two BF16 values) is exact in FP32, and the
 *    products are summed in FP32.
 *  - Per-tensor scales rescale the finished FP32 sum once, by
 *    scale_inv(A)·scale_inv(B) = 1/(sx·sw). Block scales (1x128, 128x128) rescale
 *    each 128-wide K block's partial sum before it is added to the FP32
 *    accumulator (DeepSeek-V3's promotion interval).
 *  - Epilogue in FP32: + D (accumulate), + bias, amax of the result, × D scale
 *    for an FP8 output, then one rounding to the output dtype (RNE; FP8
 *    saturating).
 * Each output element's sum runs over k in increasing order, so results are
 * deterministic and independent of the blocking below. */
#include <math.h>
#include <string.h>

#include "exec/cpu_ops.h"
#include "exec/elem.h"
#include "util/num.h"

enum {
    SCALE_BLOCK = 128, /* K extent of one 1x128 / 128x128 scale block */
    N_TILE = 512,      /* output columns kept hot in L1 per pass (2 KiB per row) */
    VEC = 8,
};

typedef float v8f __attribute__((vector_size(32), aligned(4)));

/* A as FP32 (M, K) row-major, unscaled. */
static void load_a(const GemmOperand *o, uint64_t m, uint64_t k, float *af)
{
    uint64_t ld = o->ld ? o->ld : (o->layout == GEMM_K_INNER ? k : m);
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < k; j++)
            af[i * k + j] = elem_load(o->ptr, o->dtype, o->layout == GEMM_K_INNER ? i * ld + j : j * ld + i);
}

/* B as FP32 (K, N) row-major (K outer, so the inner loop runs along N), unscaled. */
static void load_bt(const GemmOperand *o, uint64_t n, uint64_t k, float *bt)
{
    uint64_t ld = o->ld ? o->ld : (o->layout == GEMM_K_INNER ? k : n);
    if (o->layout == GEMM_K_OUTER) {
        for (uint64_t j = 0; j < k; j++)
            for (uint64_t i = 0; i < n; i++) bt[j * n + i] = elem_load(o->ptr, o->dtype, j * ld + i);
    } else {
        for (uint64_t i = 0; i < n; i++)
            for (uint64_t j = 0; j < k; j++) bt[j * n + i] = elem_load(o->ptr, o->dtype, i * ld + j);
    }
}

/* part (M, N) = Σ_{k0 ≤ k < k1} af[m][k] · bt[k][n], summed in increasing k. */
static void matmul_block(const float *af, const float *bt, float *part, uint64_t m, uint64_t n, uint64_t k, uint64_t k0,
                         uint64_t k1)
{
    memset(part, 0, (size_t)(m * n) * sizeof(float));
    for (uint64_t n0 = 0; n0 < n; n0 += N_TILE) {
        uint64_t nl = n - n0 < N_TILE ? n - n0 : N_TILE;
        uint64_t nv = nl / VEC * VEC;
        uint64_t i = 0;
        for (; i + 4 <= m; i += 4) {
            float *p0 = part + i * n + n0, *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
            for (uint64_t kk = k0; kk < k1; kk++) {
                const float *r = bt + kk * n + n0;
                float a0 = af[i * k + kk], a1 = af[(i + 1) * k + kk];
                float a2 = af[(i + 2) * k + kk], a3 = af[(i + 3) * k + kk];
                for (uint64_t j = 0; j < nv; j += VEC) {
                    v8f rv = *(const v8f *)(r + j);
                    *(v8f *)(p0 + j) += a0 * rv;
                    *(v8f *)(p1 + j) += a1 * rv;
                    *(v8f *)(p2 + j) += a2 * rv;
                    *(v8f *)(p3 + j) += a3 * rv;
                }
                for (uint64_t j = nv; j < nl; j++) {
                    p0[j] += a0 * r[j];
                    p1[j] += a1 * r[j];
                    p2[j] += a2 * r[j];
                    p3[j] += a3 * r[j];
                }
            }
        }
        for (; i < m; i++) {
            float *p0 = part + i * n + n0;
            for (uint64_t kk = k0; kk < k1; kk++) {
                const float *r = bt + kk * n + n0;
                float a0 = af[i * k + kk];
                for (uint64_t j = 0; j < nv; j += VEC) *(v8f *)(p0 + j) += a0 * *(const v8f *)(r + j);
                for (uint64_t j = nv; j < nl; j++) p0[j] += a0 * r[j];
            }
        }
    }
}

/* Dequantization factor of an operand for its row `row` and K block `kb`. */
static float scale_at(const GemmOperand *o, uint64_t row, uint64_t kb, uint64_t nkb)
{
    if (!o->scale_inv) return 1.0f;
    switch (o->scale_gran) {
    case GRAN_1X128: return o->scale_inv[row * nkb + kb];
    case GRAN_128X128: return o->scale_inv[(row / SCALE_BLOCK) * nkb + kb];
    default: return o->scale_inv[0];
    }
}

static int is_block(const GemmOperand *o)
{
    return o->scale_inv && (o->scale_gran == GRAN_1X128 || o->scale_gran == GRAN_128X128);
}

Status cpu_gemm(Backend *bk, const GemmDesc *g, Err *e)
{
    Status st = gemm_desc_check(g, e);
    if (st) return st;
    uint64_t m = g->m, n = g->n, k = g->k, mn;
    uint64_t mk, nk;
    if (u64_mul(m, n, &mn) || u64_mul(m, k, &mk) || u64_mul(n, k, &nk) || mn > UINT64_MAX / 2)
        return err_set(e, ST_USAGE, "gemm: shape %llux%llux%llu is too large", (unsigned long long)m,
                       (unsigned long long)n, (unsigned long long)k);
    int blocked = is_block(&g->a) || is_block(&g->b);
    uint64_t kblk = blocked ? SCALE_BLOCK : k, nkb = (k + SCALE_BLOCK - 1) / SCALE_BLOCK;

    float *af = cpu_scratch(bk, 0, mk, e);
    float *bt = af ? cpu_scratch(bk, 1, nk, e) : NULL;
    float *acc = bt ? cpu_scratch(bk, 2, blocked ? 2 * mn : mn, e) : NULL;
    if (!acc) return e ? e->st : ST_NOMEM;
    load_a(&g->a, m, k, af);
    load_bt(&g->b, n, k, bt);

    if (!blocked) {
        matmul_block(af, bt, acc, m, n, k, 0, k);
        if (g->a.scale_inv) { /* per tensor: one rescale of the finished sum */
            float s = g->a.scale_inv[0] * g->b.scale_inv[0];
            for (uint64_t i = 0; i < mn; i++) acc[i] *= s;
        }
    } else {
        float *part = acc + mn;
        memset(acc, 0, (size_t)mn * sizeof(float));
        for (uint64_t k0 = 0, kb = 0; k0 < k; k0 += kblk, kb++) {
            uint64_t k1 = k - k0 < kblk ? k : k0 + kblk;
            matmul_block(af, bt, part, m, n, k, k0, k1);
            for (uint64_t i = 0; i < m; i++) {
                float sa = scale_at(&g->a, i, kb, nkb);
                for (uint64_t j = 0; j < n; j++) acc[i * n + j] += part[i * n + j] * (sa * scale_at(&g->b, j, kb, nkb));
            }
        }
    }

    uint64_t ldd = g->d.ld ? g->d.ld : n;
    float amax = 0.0f;
    float dscale = g->d.scale ? g->d.scale[0] : 1.0f;
    for (uint64_t i = 0; i < m; i++) {
        for (uint64_t j = 0; j < n; j++) {
            float v = acc[i * n + j];
            if (g->accum == GEMM_ACCUMULATE) v += elem_load(g->d.ptr, g->d.dtype, i * ldd + j);
            if (g->bias) v += elem_load(g->bias, g->bias_dtype, j);
            amax = fmaxf(amax, fabsf(v));
            if (g->d.scale) v *= dscale;
            elem_store(g->d.ptr, g->d.dtype, i * ldd + j, v);
        }
    }
    if (g->d.amax) *g->d.amax = fmaxf(*g->d.amax, amax);
    return ST_OK;
}
