/* exec/backend/cuda_lib.h — where the CUDA backend comes from: a shared library of its
 * own, libfp8plan_cuda.so (exec/cuda/), beside the program or one folder up,
 * loaded the first time a run asks for --backend cuda or the nccl
 * communicator. Commands that never touch the GPU never load the CUDA runtime,
 * cuBLASLt and NCCL (over half a GiB whose start-up costs every process about
 * 0.1 s). The library resolves the executor's own functions (err_set,
 * dtype_name, lt_map_gemm, ...) against the program that loads it, which
 * exports them (the Makefile links programs with -rdynamic).
 *
 * Built with CUDA (FP8PLAN_HAVE_CUDA) only; ST_UNAVAILABLE with dlopen's
 * reason when the library or one of its CUDA libraries cannot be loaded. */
#ifndef FP8PLAN_EXEC_CUDA_LIB_H
#define FP8PLAN_EXEC_CUDA_LIB_H

#include <stddef.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"

#define CUDA_LIB_NAME "libfp8plan_cuda.so"

/* The bytes of an ncclUniqueId (NCCL_UNIQUE_ID_BYTES; comm_nccl.cu checks it). */
#define COMM_NCCL_ID_BYTES 128

/* backend_cuda_create / comm_nccl_create / comm_nccl_unique_id / comm_nccl_create_id
 * (exec/cuda/backend_cuda.h) from the library. */
Status cuda_lib_backend_create(Backend **out, Err *e);
Status cuda_lib_comm_create(Backend *bk, int rank, int size, Comm **out, Err *e);
Status cuda_lib_nccl_unique_id(void *id, size_t bytes, Err *e);
Status cuda_lib_comm_create_id(Backend *bk, int rank, int size, const void *id, size_t bytes, Comm *host, Comm **out,
                               Err *e);

#endif
