/* exec/comm/comm_mpi.h — the MPI communicator: CPU ranks started by mpirun.
 *
 * Buffers are host memory (the cpu backend's; bk may be NULL). Collectives
 * are built from data movement only (MPI_Alltoallv, MPI_Allgatherv,
 * MPI_Alltoall, MPI_Allgather, MPI_Bcast, MPI_Isend of a copy / MPI_Recv on bytes); every
 * reduction is done here, in one fixed order, so a result does not depend on
 * the algorithm MPI picks or on the run:
 *   element k's owner (the rank whose slice holds k: the slices are
 *   [⌊count·r/size⌋, ⌊count·(r+1)/size⌋)) receives every rank's value of k,
 *   decodes each to FP32 exactly, folds them in rank order 0, 1, …, size − 1
 *   in FP32 (SUM: ((x0 + x1) + x2) + …; MAX/MIN: the larger/smaller, a NaN
 *   wins) and rounds once to the buffer's dtype (BF16/FP16 RNE, FP8 RNE
 *   saturating at the format's max). All-reduce is that reduce-scatter followed
 *   by an all-gather of the owners' results, so every rank holds the same
 *   bytes; each rank sends 2(size−1)/size of the payload, as a ring does.
 * Counting follows comm.h (nccl-tests): payload S, bus bytes S · 2(n−1)/n
 * (all-reduce), S · (n−1)/n (all-gather, reduce-scatter), S (broadcast, send).
 * A call larger than MPI's int counts (2^31 − 1 bytes) is refused with the
 * size. MPI errors return (MPI_ERRORS_RETURN) as ST_UNAVAILABLE with MPI's
 * message; a run that fails calls comm_mpi_abort so no rank waits forever. */
#ifndef FP8PLAN_EXEC_COMM_COMM_MPI_H
#define FP8PLAN_EXEC_COMM_COMM_MPI_H

#include <stddef.h>

#include "exec/comm/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when an MPI launcher started this process (mpirun / mpiexec set
 * OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK), else 0. */
int comm_mpi_launched(void);

/* Initialize MPI when nobody has (outside mpirun: a singleton world of one
 * rank) and make the communicator over every rank (a duplicate of
 * MPI_COMM_WORLD). destroy frees it and finalizes MPI if this created it. */
Status comm_mpi_create(Comm **out, Err *e);

/* all[size · n] on rank 0 = every rank's mine[n], in rank order (other
 * ranks' all is left alone); a communicator other than "mpi" gathers over its
 * host (Comm.host: NCCL ranks started by mpirun), or without one all = mine.
 * For the report: not a collective of the plan, not counted. */
Status comm_gather_stats(Comm *c, const CommStats *mine, int n, CommStats *all, Err *e);
/* The same for any bytes: all[size · bytes] on rank 0 = every rank's mine[bytes] in rank order. */
Status comm_gather_bytes(Comm *c, const void *mine, size_t bytes, void *all, Err *e);
/* The same onto the group's rank root (all read there only; every rank of c calls it with the same root). */
Status comm_gather_bytes_at(Comm *c, const void *mine, size_t bytes, void *all, int root, Err *e);

/* The buffered sends of c still in flight: those that have completed are freed
 * first (MPI_Test on each), so after the peers have received everything the
 * count falls to 0 within MPI's progress; 0 when c is not the MPI communicator.
 * For tests: a PP run's send copies must not pile up until destroy. */
int comm_mpi_pending(Comm *c);

/* The largest message, in bytes up to max, that MPI sends eagerly between ranks 0 and 1 of c (on one node: its
 * shared-memory transport's eager limit less the headers it sends with the data): a send is eager when its
 * MPI_Isend completes before the receiver has posted the receive (the library copied the message out);
 * past the limit a send completes only once the receiver has matched it (rendezvous). Found by bisection
 * over [1, max], about log2(max) probes; 0 when not even one byte goes eagerly, max when every size up to
 * max does. Every rank of c calls it and gets the same value. ST_USAGE when c is not the MPI communicator
 * over 2 or more ranks. */
Status comm_mpi_eager_limit(Comm *c, uint64_t max, uint64_t *out, Err *e);

/* Stop every rank with exit code `code` (MPI_Abort) when c is the MPI
 * communicator over two or more ranks, or has one as its host; otherwise return. The caller has
 * printed the rank and the reason. */
void comm_mpi_abort(const Comm *c, int code);

#ifdef __cplusplus
}
#endif
#endif
