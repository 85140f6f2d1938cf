/* exec/cuda/backend_cuda.h — the CUDA backend of the executor (exec/backend/backend.h):
 * cuBLASLt GEMMs (FP8 E4M3/E5M2 with per-tensor scale_inv pointers, BF16),
 * fused cast + transpose + amax, delayed scaling for a whole bank in one
 * launch, layer norm, attention with materialized scores, GELU, embeddings,
 * cross-entropy, AdamW and FP8-LM's optimizer, and an NCCL Comm.
 *
 * Plain C declarations (no CUDA header), so exec/backend/backend.c and the tests
 * include it from C. Built only where nvcc exists (FP8PLAN_HAVE_CUDA). */
#ifndef FP8PLAN_EXEC_CUDA_BACKEND_CUDA_H
#define FP8PLAN_EXEC_CUDA_BACKEND_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt workspace the backend allocates once at creation (outside the arena;
 * the plan's workspace line should count it). 32 MiB: what Hopper's FP8 and
 * BF16 kernels want (llm.c: "only Hopper needs 32"). */
#define CUDA_LT_WORKSPACE_BYTES (32ull << 20)

/* Count the GPUs this process can use. ST_OK with *count ≥ 1; ST_UNAVAILABLE
 * with the driver's reason when there is none (no device, no driver, driver
 * older than the runtime). Never fails otherwise. */
Status cuda_device_probe(int *count, Err *e);

/* Create the backend on this rank's device: its local rank (exec/comm/comm_nccl_boot.h: the launcher's
 * environment or an MPI shared-memory split; 0 without a launcher) modulo the GPUs it sees
 * (CUDA_VISIBLE_DEVICES narrows them):
 * one non-blocking stream, a cuBLASLt handle and its workspace. ST_UNAVAILABLE
 * when no GPU is present or its compute capability is below 8.9 (no FP8 tensor
 * cores; the message names the device). */
Status backend_cuda_create(Backend **out, Err *e);

/* An NCCL communicator on bk's device and stream. size 1 needs nothing else;
 * size > 1 needs one process per rank and NCCL_COMM_ID=<host>:<port> set
 * identically in each (rank 0 serves the bootstrap there). Collectives are
 * issued on the backend's stream and count payload and bus bytes with
 * nccl-tests' factors. FP8 dtypes map to NCCL's native FP8 types (NCCL ≥ 2.24,
 * reductions on sm_90+). ST_UNAVAILABLE when NCCL cannot start. */
Status comm_nccl_create(Backend *bk, int rank, int size, Comm **out, Err *e);

/* Under mpirun (exec/comm/comm_nccl_boot.c): rank 0 makes the ncclUniqueId (bytes must be
 * NCCL_UNIQUE_ID_BYTES, 128), MPI broadcasts it, every rank makes its communicator from it on bk's device
 * (ncclCommInitRank). host: the MPI communicator the ranks were started with, owned by the new
 * communicator (Comm.host) once it is made; left to the caller on failure. ST_UNAVAILABLE when NCCL
 * cannot start. */
Status comm_nccl_unique_id(void *id, size_t bytes, Err *e);
Status comm_nccl_create_id(Backend *bk, int rank, int size, const void *id, size_t bytes, Comm *host, Comm **out,
                           Err *e);

/* The versions this binary was built with and the ones it finds at run time
 * (CUDA's encoding: 1000·major + 10·minor; NCCL's: 10000·major + 100·minor +
 * patch). A field is 0 where the library cannot tell (driver 0: no driver). */
typedef struct {
    int runtime_built, runtime_loaded, driver; /* CUDART_VERSION, cudaRuntimeGetVersion, cudaDriverGetVersion */
    int nccl_built, nccl_loaded;               /* NCCL_VERSION_CODE, ncclGetVersion */
    uint64_t cublaslt;                         /* cublasLtGetVersion */
} CudaVersions;
void backend_cuda_versions(CudaVersions *out);
/* NCCL's part of it (comm_nccl.cu). */
void comm_nccl_versions(int *built, int *loaded);

#ifdef __cplusplus
}
#endif
#endif
