/* exec/cpu/cpu_gemm_ref.c — the hand-written reference GEMM, D (M,N) = A (M,K) ·
 * B (N,K)ᵀ: the independent oracle the CPU backend's BLAS GEMM (cpu_gemm.c)
 * and the GPU's cuBLASLt GEMMs are tested against. Not used by training.
 *
 * Numerics, as the GPU's tensor cores define them:
 *  - FP8 operands enter as their raw FP8 values (no scale applied); every
 *    product of two FP8 values (or two BF16 values) is exact in FP32, and the
 *    products are summed in FP32.
 *  - Per-tensor scales rescale the finished FP32 sum once, by
 *    scale_inv(A)·scale_inv(B) = 1/(sx·sw). Block scales (1x128, 128x128) rescale
 *    each 128-wide K block's partial sum before it is added to the FP32
 *    accumulator (DeepSeek-V3's promotion interval); with GEMM_ACC_TC14 that
 *    partial sum is the 14-bit one of fp8/blockgemm.h (the BLAS GEMM sends
 *    such descriptors here).
 *  - Epilogue in FP32: + D (accumulate), + bias, amax of the result, × D scale
 *    for an FP8 output, then one rounding to the output dtype (RNE; FP8
 *    saturating).
 * Each output element's sum runs over k in increasing order (one thread, plain
 * loops; the 14-bit sums' rows are shared over the pool, each element still
 * one thread's), so the result is a sequential dot product, independent of the
 * blocking below. */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_gemm.h"
#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"
#include "fp8/blockgemm.h"
#include "util/num.h"

/* ---- shared with the BLAS GEMM (exec/cpu_gemm.h) ---------------------------- */

Status cpu_gemm_check(const GemmDesc *g, Err *e)
{
    Status st = gemm_desc_check(g, e);
    if (st) return st;
    uint64_t mn, mk, nk;
    if (u64_mul(g->m, g->n, &mn) || u64_mul(g->m, g->k, &mk) || u64_mul(g->n, g->k, &nk) || mn > UINT64_MAX / 2)
        return err_set(e, ST_USAGE, "gemm: shape %llux%llux%llu is too large", (unsigned long long)g->m,
                       (unsigned long long)g->n, (unsigned long long)g->k);
    return ST_OK;
}

float cpu_gemm_scale_at(const GemmOperand *o, uint64_t row, uint64_t kb, uint64_t nkb)
{
    if (!o->scale_inv) return 1.0f;
    switch (o->scale_gran) {
    case GRAN_1X128: return o->scale_inv[row * nkb + kb];
    case GRAN_128X128: return o->scale_inv[(row / GEMM_SCALE_BLOCK) * nkb + kb];
    default: return o->scale_inv[0];
    }
}

static int is_block(const GemmOperand *o)
{
    return o->scale_inv && (o->scale_gran == GRAN_1X128 || o->scale_gran == GRAN_128X128);
}

int cpu_gemm_blocked(const GemmDesc *g) { return is_block(&g->a) || is_block(&g->b); }

/* ---- the reference ---------------------------------------------------------------- */

enum {
    N_TILE = 512, /* output columns kept hot per pass (2 KiB per row) */
    K_TILE = 256, /* rows of bt reused by every output row while cached (≤ 512 KiB) */
    VEC = 8,
};

typedef float v8f __attribute__((vector_size(32), aligned(4)));

/* n consecutive elements of p starting at off, as float (the dtype switch is
 * outside the loop). */
static void load_run(const void *p, Dtype dt, uint64_t off, float *out, uint64_t n)
{
    switch (dt) {
    case DT_FP32: memcpy(out, (const float *)p + off, (size_t)n * sizeof(float)); break;
    case DT_BF16:
        for (uint64_t i = 0; i < n; i++) out[i] = elem_f32_from_bf16(((const uint16_t *)p)[off + i]);
        break;
    case DT_FP16:
        for (uint64_t i = 0; i < n; i++) out[i] = elem_f32_from_fp16(((const uint16_t *)p)[off + i]);
        break;
    default:
        for (uint64_t i = 0; i < n; i++) out[i] = elem_f32_from_fp8(((const uint8_t *)p)[off + i], dt);
        break;
    }
}

enum { T_TILE = 64 };

/* dst (cols, rows) row-major = transpose of the stored (rows, cols) matrix at
 * p (leading dimension ld), converted to float; in T_TILE squares so both
 * sides stay in cache. */
static void load_transposed(const void *p, Dtype dt, uint64_t ld, uint64_t rows, uint64_t cols, float *dst)
{
    float tile[T_TILE][T_TILE];
    for (uint64_t r0 = 0; r0 < rows; r0 += T_TILE) {
        uint64_t rn = rows - r0 < T_TILE ? rows - r0 : T_TILE;
        for (uint64_t c0 = 0; c0 < cols; c0 += T_TILE) {
            uint64_t cn = cols - c0 < T_TILE ? cols - c0 : T_TILE;
            for (uint64_t r = 0; r < rn; r++) load_run(p, dt, (r0 + r) * ld + c0, tile[r], cn);
            for (uint64_t c = 0; c < cn; c++)
                for (uint64_t r = 0; r < rn; r++) dst[(c0 + c) * rows + r0 + r] = tile[r][c];
        }
    }
}

/* An operand as FP32 (unscaled) in the row-major shape the loops below want:
 * A as (M, K), want = GEMM_K_INNER; B as (K, N), want = GEMM_K_OUTER (K outer,
 * so the inner loop runs along N). mn is M for A, N for B. An operand stored in
 * the wanted layout is copied row by row, the other one transposed. */
static void load_operand(const GemmOperand *o, uint64_t mn, uint64_t k, GemmLayout want, float *dst)
{
    uint64_t ld = o->ld ? o->ld : (o->layout == GEMM_K_INNER ? k : mn);
    uint64_t rows = want == GEMM_K_INNER ? mn : k, cols = want == GEMM_K_INNER ? k : mn; /* of dst */
    if (o->layout == want)
        for (uint64_t i = 0; i < rows; i++) load_run(o->ptr, o->dtype, i * ld, dst + i * cols, cols);
    else
        load_transposed(o->ptr, o->dtype, ld, cols, rows, dst); /* stored (cols, rows) */
}

/* part rows [i0, i1) = Σ_{k0 ≤ k < k1} af[i][k] · bt[k][·], each element summed in
 * increasing k: K is walked in K_TILE chunks (the chunk of bt stays in cache
 * while every row uses it) but every chunk adds to the same running sums, in
 * order, so the result equals a plain sequential dot product. */
static void matmul_rows(const float *af, const float *bt, float *part, uint64_t n, uint64_t k, uint64_t i0, uint64_t i1,
                        uint64_t k0, uint64_t k1)
{
    memset(part + i0 * n, 0, (size_t)((i1 - i0) * n) * sizeof(float));
    for (uint64_t n0 = 0; n0 < n; n0 += N_TILE) {
        uint64_t nl = n - n0 < N_TILE ? n - n0 : N_TILE;
        uint64_t nv = nl / VEC * VEC;
        for (uint64_t c0 = k0; c0 < k1; c0 += K_TILE) {
            uint64_t c1 = k1 - c0 < K_TILE ? k1 : c0 + K_TILE;
            uint64_t i = i0;
            for (; i + 4 <= i1; i += 4) {
                const float *a0 = af + i * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;
                float *p0 = part + i * n + n0, *p1 = p0 + n, *p2 = p1 + n, *p3 = p2 + n;
                /* 4 x 8 outputs held in registers over the whole K chunk */
                for (uint64_t j = 0; j < nv; j += VEC) {
                    v8f s0 = *(v8f *)(p0 + j), s1 = *(v8f *)(p1 + j), s2 = *(v8f *)(p2 + j), s3 = *(v8f *)(p3 + j);
                    const float *r = bt + n0 + j;
                    for (uint64_t kk = c0; kk < c1; kk++) {
                        v8f rv = *(const v8f *)(r + kk * n);
                        s0 += a0[kk] * rv;
                        s1 += a1[kk] * rv;
                        s2 += a2[kk] * rv;
                        s3 += a3[kk] * rv;
                    }
                    *(v8f *)(p0 + j) = s0;
                    *(v8f *)(p1 + j) = s1;
                    *(v8f *)(p2 + j) = s2;
                    *(v8f *)(p3 + j) = s3;
                }
                for (uint64_t j = nv; j < nl; j++)
                    for (uint64_t kk = c0; kk < c1; kk++) {
                        float b = bt[kk * n + n0 + j];
                        p0[j] += a0[kk] * b;
                        p1[j] += a1[kk] * b;
                        p2[j] += a2[kk] * b;
                        p3[j] += a3[kk] * b;
                    }
            }
            for (; i < i1; i++) {
                const float *a0 = af + i * k;
                float *p0 = part + i * n + n0;
                for (uint64_t j = 0; j < nv; j += VEC) {
                    v8f s0 = *(v8f *)(p0 + j);
                    for (uint64_t kk = c0; kk < c1; kk++) s0 += a0[kk] * *(const v8f *)(bt + kk * n + n0 + j);
                    *(v8f *)(p0 + j) = s0;
                }
                for (uint64_t j = nv; j < nl; j++)
                    for (uint64_t kk = c0; kk < c1; kk++) p0[j] += a0[kk] * bt[kk * n + n0 + j];
            }
        }
    }
}

typedef struct {
    const GemmDesc *g;
    const float *af, *bt; /* (M, K), (N, K) raw FP8 values */
    float *acc;           /* (M, N) from 0 */
    uint64_t nkb;
} Tc14Job;

/* Rows [i0, i1) of GEMM_ACC_TC14: per 128-wide K block the 14-bit partial sum, promoted by its scales. */
static void tc14_rows(void *ctx, uint64_t i0, uint64_t i1, int worker)
{
    (void)worker;
    const Tc14Job *t = ctx;
    const GemmDesc *g = t->g;
    const uint64_t n = g->n, k = g->k;
    for (uint64_t i = i0; i < i1; i++)
        for (uint64_t j = 0; j < n; j++) {
            const float *ar = t->af + i * k, *br = t->bt + j * k;
            for (uint64_t k0 = 0, kb = 0; k0 < k; k0 += GEMM_SCALE_BLOCK, kb++) {
                uint64_t k1 = k - k0 < GEMM_SCALE_BLOCK ? k : k0 + GEMM_SCALE_BLOCK;
                float p = 0.0f;
                for (uint64_t kk = k0; kk < k1; kk++) p = block_acc_tc14_add(p, ar[kk] * br[kk]);
                t->acc[i * n + j] +=
                    p * (cpu_gemm_scale_at(&g->a, i, kb, t->nkb) * cpu_gemm_scale_at(&g->b, j, kb, t->nkb));
            }
        }
}

Status cpu_gemm_ref(Backend *bk, const GemmDesc *g, Err *e)
{
    Status st = cpu_gemm_check(g, e);
    if (st) return st;
    uint64_t m = g->m, n = g->n, k = g->k, mn = m * n, mk = m * k, nk = n * k;
    int blocked = cpu_gemm_blocked(g);
    uint64_t kblk = blocked ? GEMM_SCALE_BLOCK : k, nkb = (k + GEMM_SCALE_BLOCK - 1) / GEMM_SCALE_BLOCK;

    float *af = cpu_scratch(bk, 0, mk, e);
    float *bt = af ? cpu_scratch(bk, 1, nk, e) : NULL;
    float *acc = bt ? cpu_scratch(bk, 2, blocked ? 2 * mn : mn, e) : NULL;
    if (!acc) return e ? e->st : ST_NOMEM;
    const int tc14 = g->acc_precision == GEMM_ACC_TC14;
    load_operand(&g->a, m, k, GEMM_K_INNER, af);                       /* (M, K) */
    load_operand(&g->b, n, k, tc14 ? GEMM_K_INNER : GEMM_K_OUTER, bt); /* (K, N); 14-bit sums: (N, K) */

    if (!blocked) {
        matmul_rows(af, bt, acc, n, k, 0, m, 0, k);
        if (g->a.scale_inv) { /* per tensor: one rescale of the finished sum */
            float s = g->a.scale_inv[0] * g->b.scale_inv[0];
            for (uint64_t i = 0; i < mn; i++) acc[i] *= s;
        }
    } else {
        float *part = acc + mn;
        memset(acc, 0, (size_t)mn * sizeof(float));
        if (tc14) { /* the 14-bit partial sums (fp8/blockgemm.h), rows in chunks on the pool: each element
                       is summed by one thread in the same order whoever runs it */
            Tc14Job j = {.g = g, .af = af, .bt = bt, .acc = acc, .nkb = nkb};
            par_chunks(m, 8, tc14_rows, &j);
        }
        for (uint64_t k0 = 0, kb = 0; k0 < k && !tc14; k0 += kblk, kb++) {
            uint64_t k1 = k - k0 < kblk ? k : k0 + kblk;
            matmul_rows(af, bt, part, n, k, 0, m, k0, k1);
            for (uint64_t i = 0; i < m; i++) {
                float sa = cpu_gemm_scale_at(&g->a, i, kb, nkb);
                for (uint64_t j = 0; j < n; j++)
                    acc[i * n + j] += part[i * n + j] * (sa * cpu_gemm_scale_at(&g->b, j, kb, nkb));
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
            amax = fabsf(v) > amax ? fabsf(v) : amax; /* NaN ignored, as fmaxf */
            if (g->d.scale) v *= dscale;
            elem_store(g->d.ptr, g->d.dtype, i * ldd + j, v);
        }
    }
    if (g->d.amax) *g->d.amax = fmaxf(*g->d.amax, amax);
    return ST_OK;
}
