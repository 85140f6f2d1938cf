/* exec/cuda/k_quant.cu — quantization kernels: fused cast + transpose + amax,
 * element-wise conversion, amax, and the scaling updates (TE's delayed scaling
 * for a whole bank in one launch; current scaling).
 *
 * cast_transpose reads the input once (x = in · in_scale_inv when the input is
 * itself scaled, as FP8-LM's FP16 master is). A block owns a 64 × 64 tile: each of its
 * 256 threads loads 16 consecutive elements of one row with 16-byte loads,
 * records |x| for the amax, quantizes q = sat_fp8(x·scale) (RNE) and stores the
 * 16 FP8 bytes of the row-wise copy with one 16-byte store; the bytes also go to
 * shared memory, from which each thread gathers 16 bytes of one column and
 * writes them to the transposed copy with one 16-byte store — four consecutive
 * lanes take the four 16-byte pieces of one column's 64 bytes, so a warp
 * writes eight full 64-byte runs instead of 32 scattered pieces. The tile's
 * 16-row groups are shifted by 16 bytes in shared memory so those four lanes
 * read distinct banks. Tiles that are
 * partial, or tensors whose rows or pointers are not 16-byte aligned, take an
 * element-wise path through the same tile. Without a transposed output the
 * tensor is flat and a 1-D kernel does the cast. The block's amax is max-
 * combined with atomicMax on the float's bits (exact, so order-independent). */
#include <math.h>

#include "exec/cuda/cuda_elem.cuh"
#include "fp8/codec.h"
#include "exec/cuda/cuda_impl.h"
#include "exec/backend/kernel_math.h"

enum { CT_TILE = 64, CT_THREADS = 256, CT_VEC = 16, CT_PITCH = CT_TILE + CT_VEC };

/* Byte offset of tile element (r, c) in shared memory: rows CT_PITCH apart,
 * each group of CT_VEC rows shifted by CT_VEC more bytes (16-byte aligned). */
__device__ __forceinline__ int ct_off(int r, int c) { return r * CT_PITCH + (r / CT_VEC) * CT_VEC + c; }

/* 16 consecutive elements as floats, with 16-byte loads (p 16-byte aligned). */
__device__ __forceinline__ void load16(const float *p, float *x)
{
    const float4 *v = (const float4 *)p;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float4 f = v[i];
        x[4 * i] = f.x;
        x[4 * i + 1] = f.y;
        x[4 * i + 2] = f.z;
        x[4 * i + 3] = f.w;
    }
}

__device__ __forceinline__ void load16_u16(const uint16_t *p, float *x, Dtype dt)
{
    const uint4 *v = (const uint4 *)p;
#pragma unroll
    for (int i = 0; i < 2; i++) {
        uint4 u = v[i];
        uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint16_t lo = (uint16_t)(w[j] & 0xffffu), hi = (uint16_t)(w[j] >> 16);
            x[8 * i + 2 * j] = dt == DT_BF16 ? dev_bf16_to_f(lo) : dev_fp16_to_f(lo);
            x[8 * i + 2 * j + 1] = dt == DT_BF16 ? dev_bf16_to_f(hi) : dev_fp16_to_f(hi);
        }
    }
}

__device__ __forceinline__ void load16_any(const void *p, Dtype dt, float *x)
{
    if (dt == DT_FP32)
        load16((const float *)p, x);
    else
        load16_u16((const uint16_t *)p, x, dt);
}

__device__ __forceinline__ uint4 pack16(const uint8_t *q)
{
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        w[i] = (uint32_t)q[4 * i] | (uint32_t)q[4 * i + 1] << 8 | (uint32_t)q[4 * i + 2] << 16 |
               (uint32_t)q[4 * i + 3] << 24;
    return make_uint4(w[0], w[1], w[2], w[3]);
}

__global__ void __launch_bounds__(CT_THREADS)
    k_cast_transpose(const void *in, Dtype in_dt, const float *dq_p, uint64_t R, uint64_t C, uint8_t *orow,
                     uint8_t *ocol, uint64_t ldc, Dtype fmt, const float *scale_p, float *scale_inv, float *amax_p,
                     int vec_ok)
{
    __shared__ __align__(16) uint8_t tile[CT_TILE * CT_PITCH + CT_TILE];
    __shared__ float red[32];
    const float scale = scale_p ? *scale_p : 1.0f, dq = dq_p ? *dq_p : 1.0f;
    const int quant = orow || ocol;
    const unsigned esz = in_dt == DT_FP32 ? 4u : 2u;
    const uint64_t tiles_c = (C + CT_TILE - 1) / CT_TILE, tiles = tiles_c * ((R + CT_TILE - 1) / CT_TILE);
    float amax = 0.0f;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t r0 = t / tiles_c * CT_TILE, c0 = t % tiles_c * CT_TILE;
        const int full = vec_ok && r0 + CT_TILE <= R && c0 + CT_TILE <= C;
        __syncthreads(); /* the previous tile's column reads are done */
        if (full) {
            const int row = threadIdx.x / 4, chunk = threadIdx.x % 4;
            const uint64_t off = (r0 + row) * C + c0 + (uint64_t)chunk * CT_VEC;
            float x[CT_VEC];
            uint8_t q[CT_VEC];
            load16_any((const char *)in + off * esz, in_dt, x);
#pragma unroll
            for (int j = 0; j < CT_VEC; j++) {
                x[j] = KM_MUL(x[j], dq);
                amax = fmaxf(amax, fabsf(x[j]));
                q[j] = quant ? dev_fp8_encode(KM_MUL(x[j], scale), fmt) : 0;
            }
            if (orow) *(uint4 *)(orow + off) = pack16(q);
            if (ocol) *(uint4 *)&tile[ct_off(row, chunk * CT_VEC)] = pack16(q);
            if (ocol) {
                __syncthreads();
                /* lanes 4k..4k+3: column j's rows [16·rc, 16·rc + 16), rc = 0..3 — one 64-byte run */
                const int rc = threadIdx.x % (CT_TILE / CT_VEC), j = threadIdx.x / (CT_TILE / CT_VEC);
                uint8_t v[CT_VEC];
#pragma unroll
                for (int i = 0; i < CT_VEC; i++) v[i] = tile[ct_off(rc * CT_VEC + i, j)];
                *(uint4 *)(ocol + (c0 + j) * ldc + r0 + (uint64_t)rc * CT_VEC) = pack16(v);
            }
        } else {
            for (int idx = threadIdx.x; idx < CT_TILE * CT_TILE; idx += blockDim.x) {
                const int r = idx / CT_TILE, c = idx % CT_TILE;
                if (r0 + r >= R || c0 + c >= C) continue;
                const uint64_t off = (r0 + r) * C + c0 + c;
                const float x = KM_MUL(dev_load(in, in_dt, off), dq);
                amax = fmaxf(amax, fabsf(x));
                if (!quant) continue;
                const uint8_t q = dev_fp8_encode(KM_MUL(x, scale), fmt);
                if (orow) orow[off] = q;
                tile[ct_off(r, c)] = q;
            }
            if (ocol) {
                __syncthreads();
                for (int idx = threadIdx.x; idx < CT_TILE * CT_TILE; idx += blockDim.x) {
                    const int j = idx / CT_TILE, r = idx % CT_TILE; /* consecutive threads: consecutive rows */
                    if (r0 + r >= R || c0 + j >= C) continue;
                    ocol[(c0 + j) * ldc + r0 + r] = tile[ct_off(r, j)];
                }
            }
        }
    }
    amax = block_max(amax, red);
    if (threadIdx.x == 0 && amax_p) atomic_max_nonneg(amax_p, amax);
    if (threadIdx.x == 0 && blockIdx.x == 0 && scale_inv && scale_p) *scale_inv = KM_DIV(1.0f, scale);
}

/* Row-wise only (or amax only): the tensor is flat. */
__global__ void __launch_bounds__(CT_THREADS)
    k_cast_flat(const void *in, Dtype in_dt, const float *dq_p, uint64_t n, uint8_t *out, Dtype fmt,
                const float *scale_p, float *scale_inv, float *amax_p, int vec_ok)
{
    __shared__ float red[32];
    const float scale = scale_p ? *scale_p : 1.0f, dq = dq_p ? *dq_p : 1.0f;
    const unsigned esz = in_dt == DT_FP32 ? 4u : 2u;
    float amax = 0.0f;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t nvec = vec_ok ? n / CT_VEC : 0;
    for (uint64_t v = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += stride) {
        float x[CT_VEC];
        uint8_t q[CT_VEC];
        load16_any((const char *)in + v * CT_VEC * esz, in_dt, x);
#pragma unroll
        for (int j = 0; j < CT_VEC; j++) {
            x[j] = KM_MUL(x[j], dq);
            amax = fmaxf(amax, fabsf(x[j]));
            q[j] = out ? dev_fp8_encode(KM_MUL(x[j], scale), fmt) : 0;
        }
        if (out) *(uint4 *)(out + v * CT_VEC) = pack16(q);
    }
    for (uint64_t i = nvec * CT_VEC + (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float x = KM_MUL(dev_load(in, in_dt, i), dq);
        amax = fmaxf(amax, fabsf(x));
        if (out) out[i] = dev_fp8_encode(KM_MUL(x, scale), fmt);
    }
    amax = block_max(amax, red);
    if (threadIdx.x == 0 && amax_p) atomic_max_nonneg(amax_p, amax);
    if (threadIdx.x == 0 && blockIdx.x == 0 && scale_inv && scale_p) *scale_inv = KM_DIV(1.0f, scale);
}

static int aligned16(const void *p) { return p == NULL || ((uintptr_t)p & 15u) == 0; }

static unsigned max_blocks(CudaImpl *im) { return (unsigned)im->info.sm_count * 8u; }

Status cuda_cast_transpose(Backend *bk, const CastDesc *c, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    const uint64_t R = c->rows, C = c->cols, n = R * C;
    if (dtype_is_fp8(c->in_dtype)) /* recasting FP8 codes: the sharded FP8-LM copies, cpu ranks only */
        return err_set(e, ST_UNAVAILABLE, "cast_transpose: FP8 input is cpu-only");
    if (c->gran != GRAN_TENSOR) return cuda_cast_blocks(im, c, e); /* DeepSeek-V3's: k_quant_block.cu */
    /* the transposed copy's rows go ldc apart: a MoE layer's experts write their column slices of the
     * permuted tensor's transposed copy (col_ld, past the shared check: at least R) */
    const uint64_t ldc = c->col_ld ? c->col_ld : R;
    if (!n) return ST_OK;
    const unsigned esz = dtype_bytes(c->in_dtype);
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    if (!c->out_col) {
        int vec_ok = aligned16(c->in) && aligned16(c->out_row);
        unsigned blocks = cuda_blocks(vec_ok ? n / CT_VEC : n, CT_THREADS, max_blocks(im));
        k_cast_flat<<<blocks, CT_THREADS, 0, im->stream>>>(c->in, c->in_dtype, c->in_scale_inv, n,
                                                           (uint8_t *)c->out_row, c->out_dtype, c->scale, c->scale_inv,
                                                           c->amax, vec_ok);
    } else {
        int vec_ok = aligned16(c->in) && aligned16(c->out_row) && aligned16(c->out_col) && C % CT_VEC == 0 &&
                     R % CT_VEC == 0 && ldc % CT_VEC == 0 && (C * esz) % 16 == 0;
        uint64_t tiles = ((R + CT_TILE - 1) / CT_TILE) * ((C + CT_TILE - 1) / CT_TILE);
        unsigned blocks = (unsigned)(tiles < (uint64_t)max_blocks(im) * 4 ? tiles : (uint64_t)max_blocks(im) * 4);
        k_cast_transpose<<<blocks, CT_THREADS, 0, im->stream>>>(c->in, c->in_dtype, c->in_scale_inv, R, C,
                                                                (uint8_t *)c->out_row, (uint8_t *)c->out_col, ldc,
                                                                c->out_dtype, c->scale, c->scale_inv, c->amax, vec_ok);
    }
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* ---- conversion and amax ------------------------------------------------------------ */

__global__ void k_convert(const void *in, Dtype in_dt, void *out, Dtype out_dt, uint64_t n, const float *scale_p)
{
    const float s = scale_p ? *scale_p : 1.0f;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dev_store(out, out_dt, i, KM_MUL(dev_load(in, in_dt, i), s));
}

Status cuda_convert(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                    const float *scale, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!n) return ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    k_convert<<<cuda_blocks(n, 256, max_blocks(im)), 256, 0, im->stream>>>(in, in_dtype, out, out_dtype, n, scale);
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* max |p[r·ld + c]| over rows × cols, max-combined into *amax. */
__global__ void k_amax(const void *p, Dtype dt, uint64_t ld, uint64_t rows, uint64_t cols, float *amax_p)
{
    __shared__ float red[32];
    float m = 0.0f;
    const uint64_t n = rows * cols, stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        m = fmaxf(m, fabsf(dev_load(p, dt, ld == cols ? i : i / cols * ld + i % cols)));
    m = block_max(m, red);
    if (threadIdx.x == 0) atomic_max_nonneg(amax_p, m);
}

Status cuda_amax_strided(CudaImpl *im, const void *p, Dtype dt, uint64_t ld, uint64_t rows, uint64_t cols, float *amax,
                         Err *e)
{
    Status st = ST_OK;
    if (!rows || !cols) return ST_OK;
    k_amax<<<cuda_blocks(rows * cols, 256, max_blocks(im)), 256, 0, im->stream>>>(p, dt, ld, rows, cols, amax);
    CU_LAUNCHED(e);
done:
    return st;
}

Status cuda_amax(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    ST_TRY(cuda_amax_strided(im, in, dtype, n, 1, n, amax, e));
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

__global__ void k_amax_combine(float *dst, const float *src) { *dst = fmaxf(*dst, *src); }

Status cuda_amax_combine(CudaImpl *im, float *dst, const float *src, Err *e)
{
    Status st = ST_OK;
    k_amax_combine<<<1, 1, 0, im->stream>>>(dst, src);
    CU_LAUNCHED(e);
done:
    return st;
}

/* ---- scaling ------------------------------------------------------------------------------
 * Delayed scaling, TE's amax_and_scale_update in one launch for the bank (and
 * fp8/delayed.h's delayed_step per column, which the CPU reference runs): block
 * i owns tensor i (column i of the (len, n) history). The history rolls in place
 * — new[j] = old[j+1], new[len−1] = old[0], new[0] = 0 — while the window max
 * over all len rows is taken (each chunk of rows is read before it is
 * overwritten, with a barrier between; fmaxf, so NaN is ignored), and the scale
 * is updated from it (or from row 0 alone for most_recent) by the shared rule.
 * A tensor whose row-0 amax is 0 is left alone (exec/backend/scaling.h). scale_inv is
 * left to the casts, as in TE. */
__global__ void __launch_bounds__(256)
    k_delayed(float *hist, float *scale, uint32_t n, uint32_t len, int most_recent, float fmax, int margin)
{
    __shared__ float red[32];
    const uint32_t i = blockIdx.x;
    const float last = hist[i];
    if (last == 0.0f) return; /* did not run: no roll, scale kept (TE's bulk kernel); uniform per block */
    float amax = 0.0f;
    for (uint32_t off = 0; off < len; off += blockDim.x) {
        const uint32_t j = off + threadIdx.x;
        float a = 0.0f;
        if (j < len) {
            a = j + 1 < len ? hist[(uint64_t)(j + 1) * n + i] : last;
            amax = fmaxf(amax, a);
        }
        __syncthreads();
        if (j < len) hist[(uint64_t)j * n + i] = j > 0 ? a : 0.0f;
    }
    const float window = most_recent ? last : block_max(amax, red);
    if (threadIdx.x == 0) scale[i] = km_scale_delayed(window, fmax, margin, scale[i]);
}

Status cuda_scaling_delayed_update(Backend *bk, const ScalingBank *bank, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    const float fmax = fp8_max(bank->fmt);
    if (!bank->n) return ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    k_delayed<<<bank->n, 256, 0, im->stream>>>(bank->amax_history, bank->scale, bank->n, bank->history_len,
                                               bank->algo == AMAX_ALGO_MOST_RECENT, fmax, bank->margin);
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

__global__ void k_current(uint32_t n, float fmax, int margin, const float *amax, float *scale)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) scale[i] = km_scale_current(amax[i], fmax, margin);
}

Status cuda_scaling_from_amax(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    const float fmax = fp8_max(fmt);
    if (!n) return ST_OK;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    k_current<<<(n + 255) / 256, 256, 0, im->stream>>>(n, fmax, margin, amax, scale);
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}
