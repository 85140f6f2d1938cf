/* exec/cuda/k_moe_perm.cu — a mixture-of-experts layer's data movement on the GPU
 * (exec/backend/backend_desc.h: MoePermuteDesc, MoeUnpermuteDesc,
 * MoeUnpermuteBwdDesc), as the CPU reference (exec/cpu/cpu_moe.c) computes it:
 *
 *  - moe_permute: the map row_of is the CPU's stable counting sort, computed
 *    by one thread per expert (its first row is the number of pairs routed to
 *    lower ids; its pairs in (token, slot) order take the rows after it), so it
 *    is the same map, integer for integer; then one block per (token, slot)
 *    copies the row's bytes (16-byte words where the row allows), so FP8 rows
 *    move as they are.
 *  - moe_unpermute: one block per token, one thread per column summing the k
 *    slots in slot order through kernel_math.h's unfused operations and
 *    rounding once (dev_store: RNE, as the CPU's elem_store): bit-identical.
 *  - moe_unpermute_bwd: din = w·dout rounded once per element; each dweight's
 *    dot product over the columns runs on one thread in column order, as the
 *    CPU's: bit-identical (and serial along C: a token's k products of C
 *    terms each).
 * Bad ids or rows are skipped, recorded and reported by sync() (k_moe.cuh). */
#include "exec/backend/kernel_math.h"
#include "exec/cuda/cuda_elem.cuh"
#include "exec/cuda/k_moe.cuh"

static unsigned grid_cap(uint64_t n) { return (unsigned)(n < 65535 ? (n ? n : 1) : 65535); }

/* ---- permute ---------------------------------------------------------------------------------- */

/* Per token: ids checked; a pair whose id is outside [0, E) gets no row (−1). */
__global__ void k_perm_check(const int32_t *ids, uint64_t T, uint32_t k, uint32_t E, int32_t *row_of, DevSmall *rec)
{
    for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < T; t += (uint64_t)gridDim.x * blockDim.x) {
        (void)moe_ids_ok(ids, t, k, E, rec);
        for (uint32_t j = 0; j < k; j++)
            if (ids[t * k + j] < 0 || (uint32_t)ids[t * k + j] >= E) row_of[t * k + j] = -1;
    }
}

/* Per expert x: its pairs, in (token, slot) order, take the rows after every pair of a lower id. */
__global__ void k_perm_map(const int32_t *ids, uint64_t pairs, uint32_t E, int32_t *row_of)
{
    for (uint32_t x = blockIdx.x * blockDim.x + threadIdx.x; x < E; x += gridDim.x * blockDim.x) {
        uint64_t row = 0;
        for (uint64_t i = 0; i < pairs; i++) row += ids[i] >= 0 && ids[i] < (int32_t)x;
        for (uint64_t i = 0; i < pairs; i++)
            if (ids[i] == (int32_t)x) row_of[i] = (int32_t)row++;
    }
}

/* Block per pair i: in row i / k to out row row_of[i]; words of `vec` bytes (16 or 1). */
__global__ void k_perm_copy(const uint8_t *in, uint8_t *out, const int32_t *row_of, uint64_t pairs, uint32_t k,
                            uint64_t row_bytes, int vec)
{
    for (uint64_t i = blockIdx.x; i < pairs; i += gridDim.x) {
        int32_t r = row_of[i];
        if (r < 0) continue;
        const uint8_t *src = in + (i / k) * row_bytes;
        uint8_t *dst = out + (uint64_t)r * row_bytes;
        if (vec) {
            for (uint64_t w = threadIdx.x; w < row_bytes / 16; w += blockDim.x)
                ((uint4 *)dst)[w] = ((const uint4 *)src)[w];
        } else {
            for (uint64_t b = threadIdx.x; b < row_bytes; b += blockDim.x) dst[b] = src[b];
        }
    }
}

Status cuda_moe_permute(Backend *bk, const MoePermuteDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    const uint64_t pairs = d->tokens * d->k, rb = d->cols * dtype_bytes(d->dtype);
    if (pairs > (uint64_t)INT32_MAX)
        return err_set(e, ST_USAGE, "moe_permute: %llu rows do not fit the int32 row map", (unsigned long long)pairs);
    if (!pairs) return ST_OK;
    int vec = rb % 16 == 0 && (uintptr_t)d->in % 16 == 0 && (uintptr_t)d->out % 16 == 0;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    k_perm_check<<<cuda_blocks(d->tokens, MOE_THREADS, 1024), MOE_THREADS, 0, im->stream>>>(
        d->ids, d->tokens, d->k, d->experts, d->row_of, im->small);
    CU_LAUNCHED(e);
    k_perm_map<<<cuda_blocks(d->experts, 32, 1024), 32, 0, im->stream>>>(d->ids, pairs, d->experts, d->row_of);
    CU_LAUNCHED(e);
    k_perm_copy<<<grid_cap(pairs), MOE_THREADS, 0, im->stream>>>((const uint8_t *)d->in, (uint8_t *)d->out, d->row_of,
                                                                 pairs, d->k, rb, vec);
    CU_LAUNCHED(e);
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* ---- unpermute and combine --------------------------------------------------------------------- */

/* Token t's k rows inside [0, limit); the first bad one recorded. */
__device__ static int rows_ok(const int32_t *row_of, uint64_t t, uint32_t k, uint64_t limit, DevSmall *rec)
{
    for (uint32_t s = 0; s < k; s++) {
        int32_t r = row_of[t * k + s];
        if (r < 0 || (uint64_t)r >= limit) {
            if (threadIdx.x == 0) moe_bad(rec, DEV_ERR_ROW, t * k + s, r, (long long)limit, k);
            return 0;
        }
    }
    return 1;
}

__global__ void k_unpermute(MoeUnpermuteDesc d, DevSmall *rec)
{
    const uint64_t C = d.cols, pairs = d.tokens * d.k;
    for (uint64_t t = blockIdx.x; t < d.tokens; t += gridDim.x) {
        if (!rows_ok(d.row_of, t, d.k, pairs, rec)) continue;
        for (uint64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float acc = 0.0f;
            for (uint32_t s = 0; s < d.k; s++) {
                float x = dev_load(d.in, d.dtype, (uint64_t)d.row_of[t * d.k + s] * C + c);
                acc = d.weights ? KM_ADD(acc, KM_MUL(d.weights[t * d.k + s], x)) : KM_ADD(acc, x);
            }
            dev_store(d.out, d.dtype, t * C + c, acc);
        }
    }
}

Status cuda_moe_unpermute(Backend *bk, const MoeUnpermuteDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!d->tokens) return ST_OK;
    CUDA_TIMED(BK_OPCAT_KERNEL, (k_unpermute<<<grid_cap(d->tokens), MOE_THREADS, 0, im->stream>>>(*d, im->small)));
done:
    return st;
}

__global__ void k_unpermute_bwd(MoeUnpermuteBwdDesc d, DevSmall *rec)
{
    const uint64_t C = d.cols, pairs = d.tokens * d.k;
    for (uint64_t t = blockIdx.x; t < d.tokens; t += gridDim.x) {
        if (!rows_ok(d.row_of, t, d.k, pairs, rec)) continue;
        for (uint32_t s = 0; s < d.k; s++) {
            uint64_t row = (uint64_t)d.row_of[t * d.k + s];
            float w = d.weights[t * d.k + s];
            for (uint64_t c = threadIdx.x; c < C; c += blockDim.x)
                dev_store(d.din, d.dtype, row * C + c, KM_MUL(w, dev_load(d.dout, d.dtype, t * C + c)));
        }
        if (d.dweights)
            for (uint32_t s = threadIdx.x; s < d.k; s += blockDim.x) {
                uint64_t row = (uint64_t)d.row_of[t * d.k + s];
                float dot = 0.0f;
                for (uint64_t c = 0; c < C; c++)
                    dot =
                        KM_ADD(dot, KM_MUL(dev_load(d.dout, d.dtype, t * C + c), dev_load(d.in, d.dtype, row * C + c)));
                d.dweights[t * d.k + s] = dot;
            }
    }
}

Status cuda_moe_unpermute_bwd(Backend *bk, const MoeUnpermuteBwdDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (!d->tokens) return ST_OK;
    CUDA_TIMED(BK_OPCAT_KERNEL, (k_unpermute_bwd<<<grid_cap(d->tokens), MOE_THREADS, 0, im->stream>>>(*d, im->small)));
done:
    return st;
}
