/* exec/cuda/k_moe.cuh — what the mixture-of-experts kernels share (k_moe.cu,
 * k_moe_perm.cu): recording a bad expert id or row map in the backend's error
 * slot, which sync() turns into ST_USAGE naming the token and slot (the CPU
 * reference refuses the same inputs at once). */
#ifndef FP8PLAN_EXEC_CUDA_K_MOE_CUH
#define FP8PLAN_EXEC_CUDA_K_MOE_CUH

#include "exec/cuda/cuda_impl.h"

/* Threads per block of the per-token kernels. */
enum { MOE_THREADS = 128 };

__device__ __forceinline__ void moe_bad(DevSmall *rec, int code, uint64_t pos, long long value, long long limit,
                                        uint32_t k)
{
    if (atomicCAS(&rec->code, DEV_ERR_NONE, code) == DEV_ERR_NONE) {
        rec->pos = (long long)pos;
        rec->value = value;
        rec->limit = limit;
        rec->limit2 = (long long)k;
    }
}

/* Token t's k ids in [0, E) and distinct; the first bad one recorded. */
__device__ __forceinline__ int moe_ids_ok(const int32_t *ids, uint64_t t, uint32_t k, uint32_t E, DevSmall *rec)
{
    for (uint32_t j = 0; j < k; j++) {
        int32_t id = ids[t * k + j];
        if (id < 0 || (uint32_t)id >= E) {
            moe_bad(rec, DEV_ERR_EXPERT, t * k + j, id, E, k);
            return 0;
        }
        for (uint32_t l = 0; l < j; l++)
            if (ids[t * k + l] == id) {
                moe_bad(rec, DEV_ERR_EXPERT_TWICE, t * k + j, id, E, k);
                return 0;
            }
    }
    return 1;
}

#endif
