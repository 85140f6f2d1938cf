/* exec/cuda/k_norm.cu — layer norm and RMSNorm forward and backward, and the
 * column sums the backward passes need (weight and bias gradients).
 *
 * One warp per row (token): statistics in FP32 with the CPU reference's
 * formulas (layer norm: two passes, mean, then the biased variance of x − mean,
 * rstd = 1/√(var + eps); RMSNorm: rstd = 1/√(mean(x²) + eps)), reduced by a
 * fixed butterfly. Column sums over rows
 * (dweight, dbias, bias_grad) are deterministic without atomics: S row
 * segments each write a partial per column, and a second kernel adds the S
 * partials in order into the FP32 accumulators. */
#include "exec/cuda/cuda_elem.cuh"
#include "exec/cuda/cuda_impl.h"
#include "exec/backend/kernel_math.h"

enum { LN_THREADS = 256, LN_ROWS_PER_BLOCK = LN_THREADS / 32, COL_THREADS = 256, COL_SEGMENTS = 64 };

__global__ void __launch_bounds__(LN_THREADS)
    k_ln_fwd(const void *in, Dtype adt, const void *w, const void *b, Dtype wdt, void *out, float *mean_o,
             float *rstd_o, uint64_t rows, uint64_t cols, float eps)
{
    const int lane = threadIdx.x & 31;
    const uint64_t r = (uint64_t)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return; /* whole warps leave together */
    const uint64_t base = r * cols;
    float s = 0.0f;
    for (uint64_t i = lane; i < cols; i += 32) s += dev_load(in, adt, base + i);
    const float mean = KM_DIV(warp_sum(s), (float)cols);
    float v = 0.0f;
    for (uint64_t i = lane; i < cols; i += 32) {
        float x = KM_SUB(dev_load(in, adt, base + i), mean);
        v += x * x;
    }
    const float rstd = KM_DIV(1.0f, KM_SQRT(KM_ADD(KM_DIV(warp_sum(v), (float)cols), eps)));
    for (uint64_t i = lane; i < cols; i += 32) {
        float xh = km_ln_norm(dev_load(in, adt, base + i), mean, rstd);
        dev_store(out, adt, base + i, km_ln_out(xh, dev_load(w, wdt, i), dev_load(b, wdt, i)));
    }
    if (lane == 0) {
        mean_o[r] = mean;
        rstd_o[r] = rstd;
    }
}

/* RMSNorm: y = x·rstd·w, rstd = 1/√(mean(x²) + eps). */
__global__ void __launch_bounds__(LN_THREADS) k_rms_fwd(const void *in, Dtype adt, const void *w, Dtype wdt, void *out,
                                                        float *rstd_o, uint64_t rows, uint64_t cols, float eps)
{
    const int lane = threadIdx.x & 31;
    const uint64_t r = (uint64_t)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;
    const uint64_t base = r * cols;
    float ss = 0.0f;
    for (uint64_t i = lane; i < cols; i += 32) {
        float x = dev_load(in, adt, base + i);
        ss += x * x;
    }
    const float rstd = KM_DIV(1.0f, KM_SQRT(KM_ADD(KM_DIV(warp_sum(ss), (float)cols), eps)));
    for (uint64_t i = lane; i < cols; i += 32) {
        float xh = km_ln_norm(dev_load(in, adt, base + i), 0.0f, rstd);
        dev_store(out, adt, base + i, km_rms_out(xh, dev_load(w, wdt, i)));
    }
    if (lane == 0) rstd_o[r] = rstd;
}

/* ---- forward at bandwidth: one block per row, the row held in registers ----------------------
 * Rows of up to NF_THREADS·NF_CACHE 16-byte vectors (BF16/FP16: 8192 columns, FP32: 4096) whose
 * columns are a whole number of vectors and whose pointers are 16-byte aligned: each thread loads
 * its vectors once (16 bytes per load, the activation dtype a template parameter), the block
 * reduces the statistics from registers (layer norm: the sum, then Σ (x − mean)² — the CPU's two
 * passes, in another order; RMSNorm: Σ x²), and the output is written as vectors. The per-element
 * arithmetic is the warp kernels' (km_ln_norm, km_ln_out, km_rms_out). Other shapes take the warp
 * kernels above. */
enum { NF_THREADS = 128, NF_CACHE = 8 };

struct NF32 {
    typedef float S;
    static __device__ __forceinline__ float ld(S x) { return x; }
    static __device__ __forceinline__ S st(float x) { return x; }
};
struct NBF16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float ld(S x) { return dev_bf16_to_f(x); }
    static __device__ __forceinline__ S st(float x) { return dev_f_to_bf16(x); }
};
struct NFP16 {
    typedef uint16_t S;
    static __device__ __forceinline__ float ld(S x) { return dev_fp16_to_f(x); }
    static __device__ __forceinline__ S st(float x) { return dev_f_to_fp16(x); }
};

template <typename T> union NVec {
    uint4 u;
    typename T::S e[16 / sizeof(typename T::S)];
};

template <typename T>
__global__ void __launch_bounds__(NF_THREADS)
    k_norm_fwd_vec(const uint4 *in, const void *w, const void *b, Dtype wdt, uint4 *out, float *mean_o, float *rstd_o,
                   uint64_t cols, float eps, int layernorm)
{
    const int V = 16 / sizeof(typename T::S);
    __shared__ float sh[32];
    const uint64_t r = blockIdx.x, nv = cols / V;
    const uint4 *rin = in + r * nv;
    NVec<T> c[NF_CACHE];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NF_CACHE; k++) {
        const uint64_t v = threadIdx.x + (uint64_t)k * NF_THREADS;
        if (v < nv) {
            c[k].u = rin[v];
#pragma unroll
            for (int j = 0; j < V; j++) {
                float x = T::ld(c[k].e[j]);
                s += layernorm ? x : x * x;
            }
        }
    }
    s = block_sum(s, sh);
    float mean = 0.0f;
    if (layernorm) {
        mean = KM_DIV(s, (float)cols);
        s = 0.0f;
#pragma unroll
        for (int k = 0; k < NF_CACHE; k++)
            if (threadIdx.x + (uint64_t)k * NF_THREADS < nv)
#pragma unroll
                for (int j = 0; j < V; j++) {
                    float x = KM_SUB(T::ld(c[k].e[j]), mean);
                    s += x * x;
                }
        s = block_sum(s, sh);
    }
    const float rstd = KM_DIV(1.0f, KM_SQRT(KM_ADD(KM_DIV(s, (float)cols), eps)));
    uint4 *rout = out + r * nv;
#pragma unroll
    for (int k = 0; k < NF_CACHE; k++) {
        const uint64_t v = threadIdx.x + (uint64_t)k * NF_THREADS;
        if (v < nv) {
            NVec<T> o;
#pragma unroll
            for (int j = 0; j < V; j++) {
                const uint64_t i = v * V + j;
                float xh = km_ln_norm(T::ld(c[k].e[j]), mean, rstd);
                o.e[j] = T::st(layernorm ? km_ln_out(xh, dev_load(w, wdt, i), dev_load(b, wdt, i))
                                         : km_rms_out(xh, dev_load(w, wdt, i)));
            }
            rout[v] = o.u;
        }
    }
    if (threadIdx.x == 0) {
        if (layernorm) mean_o[r] = mean;
        rstd_o[r] = rstd;
    }
}

/* The vector kernel for d, or 0 when its shape or alignment needs the warp kernels. */
static int norm_fwd_vec(CudaImpl *im, const NormFwdDesc *d)
{
    const uint64_t V = 16 / dtype_bytes(d->act_dtype);
    if (d->cols % V || d->cols / V > (uint64_t)NF_THREADS * NF_CACHE || d->rows > 0x7fffffffu) return 0;
    if (((uintptr_t)d->in | (uintptr_t)d->out) & 15u) return 0;
    const int ln = d->norm == NORM_LAYERNORM;
    const unsigned rows = (unsigned)d->rows;
    if (d->act_dtype == DT_FP32)
        k_norm_fwd_vec<NF32><<<rows, NF_THREADS, 0, im->stream>>>((const uint4 *)d->in, d->weight, d->bias,
                                                                  d->weight_dtype, (uint4 *)d->out, d->mean, d->rstd,
                                                                  d->cols, d->eps, ln);
    else if (d->act_dtype == DT_BF16)
        k_norm_fwd_vec<NBF16><<<rows, NF_THREADS, 0, im->stream>>>((const uint4 *)d->in, d->weight, d->bias,
                                                                   d->weight_dtype, (uint4 *)d->out, d->mean, d->rstd,
                                                                   d->cols, d->eps, ln);
    else
        k_norm_fwd_vec<NFP16><<<rows, NF_THREADS, 0, im->stream>>>((const uint4 *)d->in, d->weight, d->bias,
                                                                   d->weight_dtype, (uint4 *)d->out, d->mean, d->rstd,
                                                                   d->cols, d->eps, ln);
    return 1;
}

Status cuda_norm_fwd(Backend *bk, const NormFwdDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!d->rows) return ST_OK;
    const unsigned blocks = (unsigned)((d->rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK);
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    if (norm_fwd_vec(im, d)) {
        /* launched: the row fits the vector kernel */
    } else if (d->norm == NORM_LAYERNORM) {
        k_ln_fwd<<<blocks, LN_THREADS, 0, im->stream>>>(d->in, d->act_dtype, d->weight, d->bias, d->weight_dtype,
                                                        d->out, d->mean, d->rstd, d->rows, d->cols, d->eps);
    } else {
        k_rms_fwd<<<blocks, LN_THREADS, 0, im->stream>>>(d->in, d->act_dtype, d->weight, d->weight_dtype, d->out,
                                                         d->rstd, d->rows, d->cols, d->eps);
    }
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* din += (dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂))·rstd per row, dx̂ = w·dout (layer
 * norm); without mean_p (RMSNorm) x̂ = x·rstd and din += (dx̂ − x̂·mean(dx̂·x̂))·rstd. */
__global__ void __launch_bounds__(LN_THREADS)
    k_ln_bwd_dx(const void *in, const void *dout, void *din, Dtype adt, const void *w, Dtype wdt, const float *mean_p,
                const float *rstd_p, uint64_t rows, uint64_t cols)
{
    const int lane = threadIdx.x & 31;
    const uint64_t r = (uint64_t)blockIdx.x * LN_ROWS_PER_BLOCK + (threadIdx.x >> 5);
    if (r >= rows) return;
    const uint64_t base = r * cols;
    const float mean = mean_p ? mean_p[r] : 0.0f, rstd = rstd_p[r];
    float s1 = 0.0f, s2 = 0.0f;
    for (uint64_t i = lane; i < cols; i += 32) {
        float xh = km_ln_norm(dev_load(in, adt, base + i), mean, rstd);
        float dxh = KM_MUL(dev_load(w, wdt, i), dev_load(dout, adt, base + i));
        s1 += dxh;
        s2 += dxh * xh;
    }
    const float m1 = KM_DIV(warp_sum(s1), (float)cols), m2 = KM_DIV(warp_sum(s2), (float)cols);
    for (uint64_t i = lane; i < cols; i += 32) {
        float xh = km_ln_norm(dev_load(in, adt, base + i), mean, rstd);
        float dxh = KM_MUL(dev_load(w, wdt, i), dev_load(dout, adt, base + i));
        float dx = mean_p ? km_ln_dx(dxh, m1, xh, m2, rstd) : km_rms_dx(dxh, xh, m2, rstd);
        dev_store(din, adt, base + i, KM_ADD(dev_load(din, adt, base + i), dx));
    }
}

/* Partial column sums over one row segment: part0[s][j] = Σ dout[r][j];
 * with `in` set, part1[s][j] = Σ x̂[r][j]·dout[r][j] (x̂ from mean/rstd). */
__global__ void __launch_bounds__(COL_THREADS)
    k_col_partial(const void *dout, Dtype dt, uint64_t rows, uint64_t cols, uint64_t seg_rows, const void *in,
                  const float *mean, const float *rstd, float *part0, float *part1)
{
    const uint64_t j = (uint64_t)blockIdx.x * COL_THREADS + threadIdx.x, s = blockIdx.y;
    if (j >= cols) return;
    const uint64_t r0 = s * seg_rows, r1 = r0 + seg_rows < rows ? r0 + seg_rows : rows;
    float a = 0.0f, b = 0.0f;
    for (uint64_t r = r0; r < r1; r++) {
        float g = dev_load(dout, dt, r * cols + j);
        a += g;
        if (in) b += km_ln_norm(dev_load(in, dt, r * cols + j), mean ? mean[r] : 0.0f, rstd[r]) * g;
    }
    part0[s * cols + j] = a;
    if (in) part1[s * cols + j] = b;
}

/* dst0[j] += Σ_s part0[s][j] (dst0 NULL: none) and dst1 from part1, segments in order. */
__global__ void k_col_final(const float *part0, const float *part1, uint32_t segs, uint64_t cols, float *dst0,
                            float *dst1)
{
    const uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float a = 0.0f, b = 0.0f;
    for (uint32_t s = 0; s < segs; s++) {
        a += part0[s * cols + j];
        if (dst1) b += part1[s * cols + j];
    }
    if (dst0) dst0[j] += a;
    if (dst1) dst1[j] += b;
}

/* dst0 (cols) += column sums of dout (rows, cols); with `in`, dst1 += column sums of x̂·dout. */
static Status col_sums(CudaImpl *im, const void *dout, Dtype dt, uint64_t rows, uint64_t cols, const void *in,
                       const float *mean, const float *rstd, float *dst0, float *dst1, Err *e)
{
    Status st = ST_OK;
    void *scratch = NULL;
    uint32_t segs = (uint32_t)(rows < (uint64_t)COL_SEGMENTS ? rows : (uint64_t)COL_SEGMENTS);
    uint64_t seg_rows = (rows + segs - 1) / segs;
    segs = (uint32_t)((rows + seg_rows - 1) / seg_rows);
    ST_TRY(cuda_scratch(im, (size_t)segs * cols * sizeof(float) * (in ? 2 : 1), &scratch, e));
    {
        float *p0 = (float *)scratch, *p1 = in ? p0 + (uint64_t)segs * cols : NULL;
        dim3 grid((unsigned)((cols + COL_THREADS - 1) / COL_THREADS), segs);
        k_col_partial<<<grid, COL_THREADS, 0, im->stream>>>(dout, dt, rows, cols, seg_rows, in, mean, rstd, p0, p1);
        CU_LAUNCHED(e);
        k_col_final<<<(unsigned)((cols + 255) / 256), 256, 0, im->stream>>>(p0, p1, segs, cols, dst0, dst1);
        CU_LAUNCHED(e);
    }
done:
    return st;
}

/* The input gradient at bandwidth, as k_norm_fwd_vec: one block per row, x and dout held in
 * registers (NF_CACHE vectors each per thread), the two row sums reduced from them, din read,
 * added to and written as vectors; k_ln_bwd_dx's per-element arithmetic. */
template <typename T>
__global__ void __launch_bounds__(NF_THREADS)
    k_norm_bwd_vec(const uint4 *in, const uint4 *dout, uint4 *din, const void *w, Dtype wdt, const float *mean_p,
                   const float *rstd_p, uint64_t cols)
{
    const int V = 16 / sizeof(typename T::S);
    __shared__ float sh[32];
    const uint64_t r = blockIdx.x, nv = cols / V, base = r * nv;
    const float mean = mean_p ? mean_p[r] : 0.0f, rstd = rstd_p[r];
    NVec<T> cx[NF_CACHE], cd[NF_CACHE];
    float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
    for (int k = 0; k < NF_CACHE; k++) {
        const uint64_t v = threadIdx.x + (uint64_t)k * NF_THREADS;
        if (v < nv) {
            cx[k].u = in[base + v];
            cd[k].u = dout[base + v];
#pragma unroll
            for (int j = 0; j < V; j++) {
                float xh = km_ln_norm(T::ld(cx[k].e[j]), mean, rstd);
                float dxh = KM_MUL(dev_load(w, wdt, v * V + j), T::ld(cd[k].e[j]));
                s1 += dxh;
                s2 += dxh * xh;
            }
        }
    }
    const float m1 = KM_DIV(block_sum(s1, sh), (float)cols), m2 = KM_DIV(block_sum(s2, sh), (float)cols);
#pragma unroll
    for (int k = 0; k < NF_CACHE; k++) {
        const uint64_t v = threadIdx.x + (uint64_t)k * NF_THREADS;
        if (v < nv) {
            NVec<T> o;
            o.u = din[base + v];
#pragma unroll
            for (int j = 0; j < V; j++) {
                float xh = km_ln_norm(T::ld(cx[k].e[j]), mean, rstd);
                float dxh = KM_MUL(dev_load(w, wdt, v * V + j), T::ld(cd[k].e[j]));
                float dx = mean_p ? km_ln_dx(dxh, m1, xh, m2, rstd) : km_rms_dx(dxh, xh, m2, rstd);
                o.e[j] = T::st(KM_ADD(T::ld(o.e[j]), dx));
            }
            din[base + v] = o.u;
        }
    }
}

/* The vector backward for d, or 0 when its shape or alignment needs the warp kernel. */
static int norm_bwd_vec(CudaImpl *im, const NormBwdDesc *d)
{
    const uint64_t V = 16 / dtype_bytes(d->act_dtype);
    if (d->cols % V || d->cols / V > (uint64_t)NF_THREADS * NF_CACHE || d->rows > 0x7fffffffu) return 0;
    if (((uintptr_t)d->in | (uintptr_t)d->dout | (uintptr_t)d->din) & 15u) return 0;
    const unsigned rows = (unsigned)d->rows;
    const uint4 *in = (const uint4 *)d->in, *dout = (const uint4 *)d->dout;
    uint4 *din = (uint4 *)d->din;
    if (d->act_dtype == DT_FP32)
        k_norm_bwd_vec<NF32>
            <<<rows, NF_THREADS, 0, im->stream>>>(in, dout, din, d->weight, d->weight_dtype, d->mean, d->rstd, d->cols);
    else if (d->act_dtype == DT_BF16)
        k_norm_bwd_vec<NBF16>
            <<<rows, NF_THREADS, 0, im->stream>>>(in, dout, din, d->weight, d->weight_dtype, d->mean, d->rstd, d->cols);
    else
        k_norm_bwd_vec<NFP16>
            <<<rows, NF_THREADS, 0, im->stream>>>(in, dout, din, d->weight, d->weight_dtype, d->mean, d->rstd, d->cols);
    return 1;
}

Status cuda_norm_bwd(Backend *bk, const NormBwdDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!d->rows) return ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    if (!norm_bwd_vec(im, d))
        k_ln_bwd_dx<<<(unsigned)((d->rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK), LN_THREADS, 0, im->stream>>>(
            d->in, d->dout, d->din, d->act_dtype, d->weight, d->weight_dtype, d->mean, d->rstd, d->rows, d->cols);
    CU_LAUNCHED(e);
    ST_TRY(col_sums(im, d->dout, d->act_dtype, d->rows, d->cols, d->in, d->mean, d->rstd, d->dbias, d->dweight, e));
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

Status cuda_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!m || !n) return ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    ST_TRY(col_sums(im, dout, dtype, m, n, NULL, NULL, NULL, dbias, NULL, e));
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}
