/* exec/comm/comm_nccl_boot.h — NCCL ranks bootstrapped through MPI (mpirun
 * with --backend cuda): the MPI side, in C, so no CUDA translation unit sees
 * MPI and the CUDA library (exec/cuda/, loaded by exec/backend/cuda_lib.c) needs no
 * MPI of its own.
 *
 * The sequence (llm.c's "mpi" init method): each rank picks its GPU from its
 * local rank (comm_boot_local_rank, called by the CUDA backend when it is
 * made); rank 0 makes the ncclUniqueId (128 bytes) and MPI broadcasts it with
 * a flag that says whether it could; every rank calls ncclCommInitRank with
 * it. The MPI communicator stays with the NCCL one (Comm.host) for the
 * report's gathers and for stopping every rank when one fails. */
#ifndef FP8PLAN_EXEC_COMM_COMM_NCCL_BOOT_H
#define FP8PLAN_EXEC_COMM_COMM_NCCL_BOOT_H

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* This process's local rank: the launcher's environment (comm_local_rank_env);
 * else, under an MPI launcher that sets none, the rank within an MPI
 * shared-memory split of the world (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED;
 * MPI is started for it and kept for comm_nccl_mpi_create); else 0 (no
 * launcher: one process). ST_USAGE when the launcher's value is not a number. */
Status comm_boot_local_rank(int *local, Err *e);

/* The NCCL communicator over every rank mpirun started, on bk (the cuda
 * backend, already on this rank's device). ST_UNAVAILABLE when this build has
 * no CUDA or NCCL cannot start. With two or more ranks a failure on any rank
 * stops every rank (MPI_Abort, after one line on stderr naming the rank and
 * the reason) rather than leave the others waiting in NCCL's bootstrap. */
Status comm_nccl_mpi_create(Backend *bk, Comm **out, Err *e);

#ifdef __cplusplus
}
#endif
#endif
