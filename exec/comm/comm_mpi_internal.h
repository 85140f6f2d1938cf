/* exec/comm/comm_mpi_internal.h — what the MPI communicator's files share (comm_mpi.c and the files beside it):
 * the MPI communicator of a Comm, MPI's error as a Status, the checks every call makes, the collectives. */
#ifndef FP8PLAN_EXEC_COMM_COMM_MPI_INTERNAL_H
#define FP8PLAN_EXEC_COMM_COMM_MPI_INTERNAL_H

#include <mpi.h>

#include "exec/comm/comm.h"

/* c's MPI communicator (c: the "mpi" Comm). */
MPI_Comm comm_mpi_handle(const Comm *c);
/* ST_UNAVAILABLE "mpi: CALL failed: MPI's message" for MPI return code rc. */
Status comm_mpi_fail(Err *e, int rc, const char *call);
/* The checks every call makes (what: the call's name for the message): host memory (the cpu backend's, or bk
 * NULL), a sized dtype, and total elements (what the largest buffer holds) within MPI's int byte counts. */
Status comm_mpi_check_call(const Comm *c, const char *what, Backend *bk, uint64_t total, Dtype dt, Err *e);
/* c's scratch buffer of at least bytes (its contents not kept from one call to the next), or NULL out of memory:
 * the reductions receive every rank's values of their segment there. Owned by the communicator, grown to the
 * largest call and freed by destroy, so a call allocates nothing. */
void *comm_mpi_scratch(Comm *c, uint64_t bytes);
/* c's collectives (comm_mpi_coll.c): all-reduce, all-gather, reduce-scatter, broadcast, their uneven forms and
 * the all-to-all. */
void comm_mpi_set_collectives(Comm *c);
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
