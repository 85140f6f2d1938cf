/* exec/cuda/cuda_check.h — checking every CUDA runtime, cuBLASLt and NCCL call.
 *
 * Library code never prints and never exits, so "logging" a failure means
 * writing it into the caller's Err: the file and line, the call as written,
 * the library's own name and message for the error, and a Status (ST_NOMEM for
 * out-of-memory, ST_UNAVAILABLE for a missing device or driver, ST_SOFTWARE
 * otherwise). Each macro then jumps to the function's `done:` label, where the
 * function releases what it holds and returns `st`:
 *
 *     Status st = ST_OK;
 *     CU_TRY(cudaMalloc(&p, n), e);
 *     LT_TRY(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), e);
 *     launch<<<grid, block, 0, stream>>>(...);
 *     CU_LAUNCHED(e);
 *   done:
 *     ...release...
 *     return st;
 *
 * Host code only (C++ compiled by nvcc). */
#ifndef FP8PLAN_EXEC_CUDA_CHECK_H
#define FP8PLAN_EXEC_CUDA_CHECK_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "util/status.h"

/* Fill e for a failed call; returns the Status. */
Status cuda_fail(Err *e, const char *file, int line, const char *call, cudaError_t err);
Status cublaslt_fail(Err *e, const char *file, int line, const char *call, cublasStatus_t s);

#define CU_TRY(call, e)                                              \
    do {                                                             \
        cudaError_t cu_err_ = (call);                                \
        if (cu_err_ != cudaSuccess) {                                \
            st = cuda_fail((e), __FILE__, __LINE__, #call, cu_err_); \
            goto done;                                               \
        }                                                            \
    } while (0)

/* After a kernel launch: a bad configuration surfaces here, at once. */
#define CU_LAUNCHED(e) CU_TRY(cudaGetLastError(), e)

#define LT_TRY(call, e)                                                 \
    do {                                                                \
        cublasStatus_t lt_st_ = (call);                                 \
        if (lt_st_ != CUBLAS_STATUS_SUCCESS) {                          \
            st = cublaslt_fail((e), __FILE__, __LINE__, #call, lt_st_); \
            goto done;                                                  \
        }                                                               \
    } while (0)

/* A failed Status from our own code: keep its message, jump to cleanup. */
#define ST_TRY(expr)       \
    do {                   \
        st = (expr);       \
        if (st) goto done; \
    } while (0)

#endif
