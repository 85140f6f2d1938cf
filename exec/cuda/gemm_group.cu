/* exec/cuda/gemm_group.cu — the grouped expert GEMMs (GroupedGemmDesc,
 * GroupedWgradDesc in exec/backend/backend_desc.h) on the GPU: one cuBLASLt matmul per
 * non-empty group, each the GemmDesc exec/backend/gemm_group.c builds for it and
 * run through this backend's gemm() (its shared check, cuBLASLt mapping,
 * cached descriptors and heuristic, FP8 scale staging, amax), so every group's
 * D is bit-identical to gemm() with that group's descriptor, as the interface
 * requires (one exception, the FP8 weight gradient's unaligned groups: below).
 *
 * Why not one library call for all groups: the CUDA 13.0 toolkit's cuBLASLt
 * (13.1 headers) has no grouped matmul, only batches of one shape (strided or
 * pointer-array), while the experts' row counts differ; cuBLAS's
 * cublasGemmGroupedBatchedEx takes groups of different shapes, but its
 * signature has no scale pointers (no per-tensor FP8), and its shapes too are
 * host arrays. So either
 * way the counts come to the host first (one synchronisation per grouped
 * GEMM), and the per-group cuBLASLt call serves the BF16, the per-tensor FP8
 * (TN) and the block-scaled FP8 (DeepSeek-V3: each group's own 1x128 tiles and
 * 128x128 blocks, gemm_group.c's pointers) recipes alike. Each distinct row count
 * is a new cuBLASLt call shape: a heuristic query the first time, cached after.
 *
 * One exception to "exactly gemm()'s call": Hopper's FP8 matmuls want 16-byte
 * aligned operands whose leading dimensions are multiples of 16 bytes, and an
 * FP8 weight gradient's groups are column slices of the transposed copies
 * (M, rows) that start at any row r_g. Such a group's two slices are first
 * copied into private scratch as (M, K') and (N, K'), K' = k_g rounded up to
 * 16, the padding zero: the products it adds are exact zeros, so the sums are
 * the same numbers, but the library call (and its summation order) is not
 * gemm()'s on the unaligned slices, which cuBLASLt would refuse. With block
 * scales the padding stays inside the group's last 128-wide tile (K' ≤ 128·⌈k_g/128⌉),
 * whose scale multiplies zero codes: the tiles and their scales are unchanged. BF16 groups
 * and aligned FP8 groups go to gemm() as they are. */
#include <stdlib.h>

#include "exec/backend/gemm_group.h"
#include "exec/cuda/cuda_impl.h"

/* The G counts from backend memory, after the work that wrote them. *out is malloc'd (NULL on error). */
static Status counts_to_host(CudaImpl *im, const int32_t *dev, uint32_t groups, const char *op, int32_t **out, Err *e)
{
    Status st = ST_OK;
    int32_t *h = (int32_t *)malloc(groups ? (size_t)groups * sizeof *h : 1);
    if (!h) return err_set(e, ST_NOMEM, "%s: out of memory for %u counts", op, groups);
    CU_TRY(cudaMemcpyAsync(h, dev, (size_t)groups * sizeof *h, cudaMemcpyDeviceToHost, im->stream), e);
    CU_TRY(cudaStreamSynchronize(im->stream), e);
done:
    if (st) {
        free(h);
        h = NULL;
    }
    *out = h;
    return st;
}

Status cuda_grouped_gemm(Backend *bk, const GroupedGemmDesc *d, Err *e)
{
    int32_t *c = NULL;
    Status st = counts_to_host(cuda_impl(bk), d->counts, d->groups, "grouped_gemm", &c, e);
    if (!st) st = gemm_group_counts_check(c, d->groups, d->rows, "grouped_gemm", e);
    for (uint64_t x = 0, row0 = 0; !st && x < d->groups; row0 += (uint64_t)c[x], x++) {
        if (!c[x]) continue;
        GemmDesc g = gemm_group_desc(d, (uint32_t)x, row0, (uint64_t)c[x]);
        st = bk->gemm(bk, &g, e);
    }
    free(c);
    return st;
}

/* dst (rows, kp) = src's (rows, k) columns (ld bytes apart), zeros after them: bytes. */
__global__ void k_stage_pad(const uint8_t *src, uint64_t ld, uint64_t rows, uint64_t k, uint8_t *dst, uint64_t kp)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < rows * kp;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t r = i / kp, c = i % kp;
        dst[i] = c < k ? src[r * ld + c] : 0;
    }
}

static int fp8_unaligned(const GemmOperand *o)
{
    return dtype_is_fp8(o->dtype) && (((uintptr_t)o->ptr & 15u) || o->ld % 16);
}

/* An FP8 group's K_INNER slices into aligned, zero-padded scratch (see the head comment); g is re-pointed. */
static Status stage_group(CudaImpl *im, GemmDesc *g, Err *e)
{
    Status st = ST_OK;
    const uint64_t kp = (g->k + 15) / 16 * 16, na = g->m * kp, nb = g->n * kp;
    void *buf = NULL;
    ST_TRY(cuda_scratch2(im, (size_t)((na + 255) / 256 * 256 + nb), &buf, e));
    {
        uint8_t *sa = (uint8_t *)buf, *sb = sa + (na + 255) / 256 * 256;
        ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
        k_stage_pad<<<cuda_blocks(na, 256, 4096), 256, 0, im->stream>>>((const uint8_t *)g->a.ptr, g->a.ld, g->m, g->k,
                                                                        sa, kp);
        CU_LAUNCHED(e);
        k_stage_pad<<<cuda_blocks(nb, 256, 4096), 256, 0, im->stream>>>((const uint8_t *)g->b.ptr, g->b.ld, g->n, g->k,
                                                                        sb, kp);
        CU_LAUNCHED(e);
        ST_TRY(cuda_op_end(im, e));
        g->a.ptr = sa, g->a.ld = kp, g->b.ptr = sb, g->b.ld = kp, g->k = kp;
    }
done:
    return st;
}

Status cuda_grouped_gemm_wgrad(Backend *bk, const GroupedWgradDesc *d, Err *e)
{
    CudaImpl *im = cuda_impl(bk);
    int32_t *c = NULL;
    Status st = counts_to_host(im, d->counts, d->groups, "grouped_gemm_wgrad", &c, e);
    if (!st) st = gemm_group_counts_check(c, d->groups, d->rows, "grouped_gemm_wgrad", e);
    const uint64_t bytes = d->m * d->n * dtype_bytes(d->d.dtype);
    for (uint64_t x = 0, k0 = 0, t0 = 0; !st && x < d->groups;
         k0 += (uint64_t)c[x], t0 += gemm_group_tiles((uint64_t)c[x]), x++) {
        GemmDesc g = gemm_group_wgrad_desc(d, (uint32_t)x, k0, t0, (uint64_t)c[x]);
        if (!c[x]) { /* the sum over none of its rows */
            if (d->accum == GEMM_OVERWRITE) st = bk->memset0(bk, g.d.ptr, bytes, e);
            continue;
        }
        /* FP8 operands are K_INNER (the shared check) */
        if (fp8_unaligned(&g.a) || fp8_unaligned(&g.b)) st = stage_group(im, &g, e);
        if (!st) st = bk->gemm(bk, &g, e);
    }
    free(c);
    return st;
}
