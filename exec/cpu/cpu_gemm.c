/* exec/cpu/cpu_gemm.c — the reference GEMM: D (M,N) = A (M,K) · B (N,K)ᵀ.
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
#include <pthread.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "util/num.h"

enum {
    SCALE_BLOCK = 128, /* K extent of one 1x128 / 128x128 scale block */
    N_TILE = 512,      /* output columns kept hot per pass (2 KiB per row) */
    K_TILE = 256,      /* rows of bt reused by every output row while cached (≤ 512 KiB) */
    VEC = 8,
};
#define PARALLEL_MIN_FLOP 4e6 /* below this a GEMM runs on one thread (thread start costs ~20 us) */

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
    const float *af, *bt;
    float *part;
    uint64_t n, k, i0, i1, k0, k1;
} RowJob;

static void *row_job(void *arg)
{
    const RowJob *j = arg;
    matmul_rows(j->af, j->bt, j->part, j->n, j->k, j->i0, j->i1, j->k0, j->k1);
    return NULL;
}

/* part (M, N) = Σ_{k0 ≤ k < k1} af · bt, rows split over the worker threads
 * (each element is computed by one thread, in the same order: deterministic). */
static void matmul_block(const float *af, const float *bt, float *part, uint64_t m, uint64_t n, uint64_t k, uint64_t k0,
                         uint64_t k1)
{
    int nt = cpu_threads();
    if (nt > 1 && (double)m * n * (k1 - k0) < PARALLEL_MIN_FLOP) nt = 1;
    if (nt > (int)((m + 3) / 4)) nt = (int)((m + 3) / 4); /* at least one 4-row block per thread */
    if (nt <= 1) {
        matmul_rows(af, bt, part, n, k, 0, m, k0, k1);
        return;
    }
    RowJob jobs[CPU_MAX_THREADS];
    pthread_t tid[CPU_MAX_THREADS];
    int started[CPU_MAX_THREADS] = {0};
    uint64_t blocks = (m + 3) / 4;
    for (int t = 0; t < nt; t++) {
        uint64_t b0 = blocks * (uint64_t)t / (uint64_t)nt, b1 = blocks * (uint64_t)(t + 1) / (uint64_t)nt;
        jobs[t] = (RowJob){af, bt, part, n, k, b0 * 4, b1 * 4 < m ? b1 * 4 : m, k0, k1};
    }
    for (int t = 1; t < nt; t++) started[t] = pthread_create(&tid[t], NULL, row_job, &jobs[t]) == 0;
    row_job(&jobs[0]);
    for (int t = 1; t < nt; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            row_job(&jobs[t]); /* no thread: do it here */
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
    load_operand(&g->a, m, k, GEMM_K_INNER, af); /* (M, K) */
    load_operand(&g->b, n, k, GEMM_K_OUTER, bt); /* (K, N) */

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
            amax = fabsf(v) > amax ? fabsf(v) : amax; /* NaN ignored, as fmaxf */
            if (g->d.scale) v *= dscale;
            elem_store(g->d.ptr, g->d.dtype, i * ldd + j, v);
        }
    }
    if (g->d.amax) *g->d.amax = fmaxf(*g->d.amax, amax);
    return ST_OK;
}
