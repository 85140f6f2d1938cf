/* exec/comm/comm_mpi_internal.h — what the MPI communicator's files share (comm_mpi.c and the files beside it):
 * the MPI communicator of a Comm and MPI's error as a Status. */
#ifndef FP8PLAN_EXEC_COMM_COMM_MPI_INTERNAL_H
#define FP8PLAN_EXEC_COMM_COMM_MPI_INTERNAL_H

#include <mpi.h>

#include "exec/comm/comm.h"

/* c's MPI communicator (c: the "mpi" Comm). */
MPI_Comm comm_mpi_handle(const Comm *c);
/* ST_UNAVAILABLE "mpi: CALL failed: MPI's message" for MPI return code rc. */
Status comm_mpi_fail(Err *e, int rc, const char *call);
/* Runs an MPI call; on failure sets st from comm_mpi_fail (e in scope) and jumps to the caller's `done:`. */
#define MPI_TRY(call)                          \
    do {                                       \
        int mr_ = (call);                      \
        if (mr_ != MPI_SUCCESS) {              \
            st = comm_mpi_fail(e, mr_, #call); \
            goto done;                         \
        }                                      \
    } while (0)

#endif
