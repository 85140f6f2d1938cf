/* exec/cuda/cuda_elem.cuh — device loads and stores of every executor dtype as
 * float, with the roundings the CPU reference emulates: BF16/FP16 round to
 * nearest even, FP8 round to nearest even and saturate (SATFINITE), loads are
 * exact. Plus the warp/block reductions the kernels share (fixed trees, so the
 * results do not depend on scheduling). */
#ifndef FP8PLAN_EXEC_CUDA_CUDA_ELEM_CUH
#define FP8PLAN_EXEC_CUDA_CUDA_ELEM_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "fp8/dtype.h"

__device__ __forceinline__ uint8_t dev_fp8_encode(float x, Dtype fmt)
{
    return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, fmt == DT_E4M3 ? __NV_E4M3 : __NV_E5M2);
}

__device__ __forceinline__ float dev_fp8_decode(uint8_t c, Dtype fmt)
{
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, fmt == DT_E4M3 ? __NV_E4M3 : __NV_E5M2);
    return __half2float(__half(h));
}

__device__ __forceinline__ float dev_bf16_to_f(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

__device__ __forceinline__ uint16_t dev_f_to_bf16(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }

__device__ __forceinline__ float dev_fp16_to_f(uint16_t h) { return __half2float(__ushort_as_half(h)); }

__device__ __forceinline__ uint16_t dev_f_to_fp16(float x) { return __half_as_ushort(__float2half_rn(x)); }

/* p[i] as float for a runtime dtype (the branch is uniform across a launch). */
__device__ __forceinline__ float dev_load(const void *p, Dtype dt, uint64_t i)
{
    switch (dt) {
    case DT_FP32: return ((const float *)p)[i];
    case DT_BF16: return dev_bf16_to_f(((const uint16_t *)p)[i]);
    case DT_FP16: return dev_fp16_to_f(((const uint16_t *)p)[i]);
    case DT_E4M3:
    case DT_E5M2: return dev_fp8_decode(((const uint8_t *)p)[i], dt);
    default: return 0.0f;
    }
}

__device__ __forceinline__ void dev_store(void *p, Dtype dt, uint64_t i, float x)
{
    switch (dt) {
    case DT_FP32: ((float *)p)[i] = x; break;
    case DT_BF16: ((uint16_t *)p)[i] = dev_f_to_bf16(x); break;
    case DT_FP16: ((uint16_t *)p)[i] = dev_f_to_fp16(x); break;
    case DT_E4M3:
    case DT_E5M2: ((uint8_t *)p)[i] = dev_fp8_encode(x, dt); break;
    default: break;
    }
}

/* x rounded to dt, as a float. */
__device__ __forceinline__ float dev_round(float x, Dtype dt)
{
    switch (dt) {
    case DT_BF16: return dev_bf16_to_f(dev_f_to_bf16(x));
    case DT_FP16: return dev_fp16_to_f(dev_f_to_fp16(x));
    case DT_E4M3:
    case DT_E5M2: return dev_fp8_decode(dev_fp8_encode(x, dt), dt);
    default: return x;
    }
}

/* ---- reductions (fixed butterfly trees: deterministic) ---------------------------- */

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide sum / max; every thread gets the result. `sh` holds 32 floats.
 * blockDim.x must be a multiple of 32. */
__device__ __forceinline__ float block_sum(float v, float *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* sh may still be read from a previous call */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    return warp_max(v);
}

/* *slot = max(*slot, v) for v ≥ 0 (float bits of non-negative floats order as
 * unsigned integers; max is exact, so the result does not depend on order). */
__device__ __forceinline__ void atomic_max_nonneg(float *slot, float v)
{
    atomicMax((unsigned int *)slot, __float_as_uint(v));
}

#endif
