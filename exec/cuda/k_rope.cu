/* exec/cuda/k_rope.cu — the rotary position embedding, in place on the q and k
 * heads of qkv (B·T, (H + 2·KV)·D): one thread per rotated pair
 * (x_i, x_{i+D/2}), with the cos/sin table the model computed on the host, so
 * the GPU rotates by the same floats as the CPU reference and does the same
 * per-element arithmetic (exec/backend/kernel_math.h's km_rope_pair): bit-identical. */
#include "exec/cuda/cuda_elem.cuh"
#include "exec/cuda/cuda_impl.h"
#include "exec/backend/kernel_math.h"

__global__ void k_rope(void *qkv, Dtype dt, uint64_t rows, uint32_t T, uint32_t nh, uint64_t W, uint32_t D,
                       const float *cos_sin, int inverse)
{
    const uint64_t half = D / 2, n = rows * nh * half;
    for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t r = k / (nh * half), rem = k % (nh * half), h = rem / half, i = rem % half;
        const float *cs = cos_sin + ((r % T) * half + i) * 2;
        const float c = cs[0], s = inverse ? -cs[1] : cs[1];
        const uint64_t base = r * W + h * D;
        float o1, o2;
        km_rope_pair(dev_load(qkv, dt, base + i), dev_load(qkv, dt, base + half + i), c, s, &o1, &o2);
        dev_store(qkv, dt, base + i, o1);
        dev_store(qkv, dt, base + half + i, o2);
    }
}

Status cuda_rope(Backend *bk, const RopeDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    Status st = ST_OK;
    if (d->qnorm_w)
        return err_set(e, ST_UNAVAILABLE, "rope: the cuda backend runs no q/k norms (per-head RMSNorm) yet");
    if ((d->rope_dim && d->rope_dim != d->head_dim) || (d->v_head_dim && d->v_head_dim != d->head_dim))
        return err_set(e, ST_UNAVAILABLE, "rope: the cuda backend runs no partial (latent attention) rotation yet");
    const uint64_t rows = (uint64_t)d->batch * d->seq;
    const uint32_t nh = d->heads + d->kv_heads; /* the q heads, then the k heads */
    const uint64_t W = ((uint64_t)d->heads + 2 * (uint64_t)d->kv_heads) * d->head_dim;
    const uint64_t n = rows * nh * (d->head_dim / 2);
    const unsigned grid = cuda_blocks(n, 256, (unsigned)im->info.sm_count * 16u);
    CUDA_TIMED(BK_OPCAT_KERNEL, (k_rope<<<grid, 256, 0, im->stream>>>(d->qkv, d->dtype, rows, d->seq, nh, W,
                                                                      d->head_dim, d->cos_sin, d->inverse)));
done:
    return st;
}

/* Latent attention's q/k/v assembly: the executor refuses latent attention on this backend before anything
 * is allocated; the cpu backend has the reference. */
Status cuda_strided_copy(Backend *bk, const StridedCopyDesc *d, Err *e)
{
    (void)bk, (void)d;
    return err_set(e, ST_UNAVAILABLE,
                   "strided_copy: the cuda backend has no latent-attention q/k/v assembly yet (the cpu backend has the "
                   "reference)");
}
