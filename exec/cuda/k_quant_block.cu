/* exec/cuda/k_quant_block.cu — DeepSeek-V3's block-scaled casts (CastDesc with gran GRAN_1X128 or
 * GRAN_128X128): each FP8 copy — the row-wise one (rows, cols) and/or the transposed one (cols, rows) — is
 * tiled in blocks of its own shape (1x128 tiles along its rows; 128x128 blocks), and every block is
 * quantized with its own amax, as the CPU reference does (exec/cpu/cpu_quant.c cast_blocks through
 * fp8/quant.h's quant_tensor, FP32 scales not rounded to powers of two):
 *   amax  = max |x| over the block (NaN ignored: fmaxf)
 *   scale = 448 / amax for E4M3 (fmax / amax), 1 for an amax of 0, Inf or NaN, FLT_MAX for an infinite
 *           quotient (km_scale_current with margin 0: fp8/scale.h's scale_from_amax)
 *   code  = fp8(x · scale), one RNE rounding, saturating; scale_inv = 1 / scale, at the block's index
 *           (block row · ceil(cols / bc) + block column of the copy: fp8/quant.h's order)
 * Every value is the same IEEE operation as on the CPU (exact loads, __fdiv_rn, __fmul_rn), and a max is
 * exact in any order, so codes and scales must be bit-identical to the CPU's (the GPU check's exact
 * tolerance, tests/gpu/gpu_kernels.c). With col_ld the transposed copy's rows go col_ld apart (a MoE
 * layer's expert: its columns of the transposed copy of every expert's rows), its tiles starting at its
 * own first column.
 *
 * One thread block per scale block: the amax over the block's elements (read from the input, transposed
 * for the transposed copy), then the block's codes. Plain and unvectorized: the recipe runs on a GPU
 * only where cuBLASLt has the block-scaled GEMMs (model_create: lt_block_scales_check). */
#include <float.h>

#include "exec/backend/kernel_math.h"
#include "exec/cuda/cuda_elem.cuh"
#include "exec/cuda/cuda_impl.h"
#include "fp8/codec.h"

enum { QB_THREADS = 256 };

/* One copy of in (R, C): tr 0 the row-wise one, out (R, C) rows ld apart; tr 1 the transposed one, out
 * (C, R) rows ld apart. Blocks of br x bc of the copy; sinv gets one dequantization factor per block. */
__global__ void __launch_bounds__(QB_THREADS)
    k_cast_blocks(const void *in, Dtype dt, uint64_t R, uint64_t C, int tr, uint64_t br, uint64_t bc, Dtype fmt,
                  float fmax, uint8_t *out, uint64_t ld, float *sinv)
{
    __shared__ float red[32];
    const uint64_t OR = tr ? C : R, OC = tr ? R : C; /* the copy's shape */
    const uint64_t nbr = (OR + br - 1) / br, nbc = (OC + bc - 1) / bc;
    for (uint64_t b = blockIdx.x; b < nbr * nbc; b += gridDim.x) {
        const uint64_t r0 = b / nbc * br, c0 = b % nbc * bc;
        const uint64_t rn = OR - r0 < br ? OR - r0 : br, cn = OC - c0 < bc ? OC - c0 : bc, n = rn * cn;
        float a = 0.0f;
        for (uint64_t t = threadIdx.x; t < n; t += blockDim.x) {
            const uint64_t r = r0 + t / cn, c = c0 + t % cn; /* copy coordinates; the input's (c, r) when tr */
            a = fmaxf(a, fabsf(dev_load(in, dt, tr ? c * C + r : r * C + c)));
        }
        const float amax = block_max(a, red);
        const float scale = km_scale_current(amax, fmax, 0);
        if (threadIdx.x == 0) sinv[b] = KM_DIV(1.0f, scale);
        for (uint64_t t = threadIdx.x; t < n; t += blockDim.x) {
            const uint64_t r = r0 + t / cn, c = c0 + t % cn;
            const float x = dev_load(in, dt, tr ? c * C + r : r * C + c);
            out[r * ld + c] = dev_fp8_encode(KM_MUL(x, scale), fmt);
        }
    }
}

Status cuda_cast_blocks(CudaImpl *im, const CastDesc *c, Err *e)
{
    Status st = ST_OK;
    const uint64_t R = c->rows, C = c->cols;
    uint64_t br = 1, bc = 128;
    if (c->gran == GRAN_128X128)
        br = 128;
    else if (c->gran != GRAN_1X128)
        return err_set(e, ST_UNAVAILABLE, "cast_transpose: %s block scaling is not run here", gran_name(c->gran));
    if (!R || !C) return ST_OK;
    const float fmax = fp8_max(c->out_dtype);
    const unsigned cap = (unsigned)im->info.sm_count * 16u;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_KERNEL, e));
    if (c->out_row) {
        const uint64_t nb = ((R + br - 1) / br) * ((C + bc - 1) / bc);
        k_cast_blocks<<<(unsigned)(nb < cap ? nb : cap), QB_THREADS, 0, im->stream>>>(
            c->in, c->in_dtype, R, C, 0, br, bc, c->out_dtype, fmax, (uint8_t *)c->out_row, C, c->row_scale_inv);
        CU_LAUNCHED(e);
    }
    if (c->out_col) {
        const uint64_t nb = ((C + br - 1) / br) * ((R + bc - 1) / bc);
        k_cast_blocks<<<(unsigned)(nb < cap ? nb : cap), QB_THREADS, 0, im->stream>>>(
            c->in, c->in_dtype, R, C, 1, br, bc, c->out_dtype, fmax, (uint8_t *)c->out_col, c->col_ld ? c->col_ld : R,
            c->col_scale_inv);
        CU_LAUNCHED(e);
    }
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}
