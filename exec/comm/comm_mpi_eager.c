/* exec/comm/comm_mpi_eager.c — the eager limit of the MPI library between two ranks, measured by what its
 * protocol does rather than by how long it takes (comm_mpi_eager_limit, comm_mpi.h). */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_mpi_internal.h"

/* How long a probe waits for its send to complete: an eager send may complete only once the receiver's
 * progress has taken the shared-memory fragment (Open MPI's vader: a message past its fast box, about 1 KiB,
 * goes in a fragment the receiver hands back), and with more ranks than cores the receiver may be off its
 * core for a few scheduler ticks (4 ms each); a rendezvous send never completes before its receive is
 * posted, however long it waits. Measured here: 4 ranks on 2 cores with 1,000 tests and no yield found
 * 1,023 B (the fast box); 2 ranks, 4,040 B. */
#define EAGER_WAIT_S 0.05

enum { EAGER_TAG_PROBE = 32001, EAGER_TAG_GO = 32002 };

/* Rank 0's probe of b bytes: MPI_Isend to rank 1, which has not posted its receive (it waits for the "go"),
 * tested (MPI's progress, the core yielded between tests) until it completes or EAGER_WAIT_S has passed;
 * *eager = it completed. Then "go" (1: receive the probe) and the send waited for. */
static Status eager_probe(MPI_Comm w, char *buf, uint64_t b, int *eager, Err *e)
{
    Status st = ST_OK;
    MPI_Request rq = MPI_REQUEST_NULL;
    int flag = 0, go = 1;
    MPI_TRY(MPI_Isend(buf, (int)b, MPI_BYTE, 1, EAGER_TAG_PROBE, w, &rq));
    for (double t0 = MPI_Wtime(); !flag && MPI_Wtime() - t0 < EAGER_WAIT_S;) {
        MPI_TRY(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
        if (!flag) sched_yield();
    }
    *eager = flag;
    MPI_TRY(MPI_Send(&go, 1, MPI_INT, 1, EAGER_TAG_GO, w));
    if (!flag) MPI_TRY(MPI_Wait(&rq, MPI_STATUS_IGNORE));
done:
    return st;
}

Status comm_mpi_eager_limit(Comm *c, uint64_t max, uint64_t *out, Err *e)
{
    *out = 0;
    if (!c || strcmp(c->name, "mpi") || c->size < 2)
        return err_set(e, ST_USAGE, "mpi eager limit: needs the MPI communicator over 2 or more ranks");
    if (max > (uint64_t)INT_MAX) max = (uint64_t)INT_MAX;
    Status st = ST_OK;
    MPI_Comm w = comm_mpi_handle(c);
    unsigned long long lim = 0;
    char *buf = calloc(max ? (size_t)max : 1, 1);
    if (!buf) return err_set(e, ST_NOMEM, "out of memory");
    if (c->rank == 0) {
        uint64_t lo = 0, hi = max + 1; /* lo goes eagerly (0: none yet), hi does not (max + 1: beyond the search) */
        while (!st && hi - lo > 1) {
            uint64_t b = lo + (hi - lo) / 2;
            int eager = 0;
            if (!(st = eager_probe(w, buf, b, &eager, e))) *(eager ? &lo : &hi) = b;
        }
        int stop = 0;
        if (!st) MPI_TRY(MPI_Send(&stop, 1, MPI_INT, 1, EAGER_TAG_GO, w));
        lim = lo;
    } else if (c->rank == 1) {
        for (;;) {
            int go = 0;
            MPI_TRY(MPI_Recv(&go, 1, MPI_INT, 0, EAGER_TAG_GO, w, MPI_STATUS_IGNORE));
            if (!go) break;
            MPI_TRY(MPI_Recv(buf, (int)max, MPI_BYTE, 0, EAGER_TAG_PROBE, w, MPI_STATUS_IGNORE));
        }
    }
    if (!st) MPI_TRY(MPI_Bcast(&lim, 1, MPI_UNSIGNED_LONG_LONG, 0, w));
    *out = lim;
done:
    free(buf);
    return st;
}
