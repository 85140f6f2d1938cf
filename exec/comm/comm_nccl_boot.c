/* exec/comm/comm_nccl_boot.c — NCCL ranks bootstrapped through MPI (see
 * comm_nccl_boot.h). */
#include "exec/comm/comm_nccl_boot.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_nccl_rules.h"

#ifdef FP8PLAN_HAVE_CUDA
#include "exec/backend/cuda_lib.h"
#endif

/* The MPI communicator started to find the local rank, kept for comm_nccl_mpi_create (which takes it);
 * destroyed at exit if nobody did (MPI finalized by the one who started it). */
static Comm *held;

static void release_held(void)
{
    int fin = 0;
    if (held && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) held->destroy(held); /* finalized: nothing to free */
    held = NULL;
}

Status comm_boot_local_rank(int *local, Err *e)
{
    int v = comm_local_rank_env();
    *local = 0;
    if (v == -2)
        return err_set(e, ST_USAGE,
                       "the launcher's local rank (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID) is "
                       "not a number in [0, 2^20)");
    if (v >= 0) {
        *local = v;
        return ST_OK;
    }
    if (!comm_mpi_launched()) return ST_OK;
    Status st = held ? ST_OK : comm_mpi_create(&held, e);
    if (st) return st;
    static int registered;
    if (!registered) registered = !atexit(release_held);
    MPI_Comm node = MPI_COMM_NULL;
    int world = 0, rc = MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world, MPI_INFO_NULL, &node);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(node, local);
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (rc != MPI_SUCCESS)
        return err_set(e, ST_UNAVAILABLE, "mpi: the shared-memory split that finds this rank's GPU failed (%d)", rc);
    return ST_OK;
}

Status comm_nccl_mpi_create(Backend *bk, Comm **out, Err *e)
{
    *out = NULL;
#ifdef FP8PLAN_HAVE_CUDA
    Comm *host = held; /* the one comm_boot_local_rank started, or a new one */
    held = NULL;
    Status st = host ? ST_OK : comm_mpi_create(&host, e);
    if (st) return st;
    /* rank 0's id and whether it could make it, one broadcast */
    unsigned char msg[1 + COMM_NCCL_ID_BYTES];
    memset(msg, 0, sizeof msg);
    if (host->rank == 0) msg[0] = cuda_lib_nccl_unique_id(msg + 1, COMM_NCCL_ID_BYTES, e) == ST_OK;
    int rc = MPI_Bcast(msg, (int)sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        st = err_set(e, ST_UNAVAILABLE, "mpi: broadcasting the NCCL unique id failed (%d)", rc);
    else if (!msg[0] && host->rank == 0)
        st = e->st ? e->st : ST_UNAVAILABLE; /* e says why */
    else if (!msg[0])
        st = err_set(e, ST_UNAVAILABLE, "nccl: rank 0 could not make the NCCL unique id (its message says why)");
    if (!st) st = cuda_lib_comm_create_id(bk, host->rank, host->size, msg + 1, COMM_NCCL_ID_BYTES, host, out, e);
    if (!st) return ST_OK; /* *out owns host now */
    if (host->size > 1) {
        fprintf(stderr, "fp8plan: rank %d of %d: %s: stopping every rank\n", host->rank, host->size, e->msg);
        comm_mpi_abort(host, status_exit_code(st));
    }
    host->destroy(host);
    return st;
#else
    (void)bk;
    return err_set(e, ST_UNAVAILABLE, "nccl: fp8plan was built without the CUDA backend");
#endif
}
