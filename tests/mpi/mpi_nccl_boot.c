/* tests/mpi/mpi_nccl_boot.c — the MPI side of NCCL ranks (exec/comm/comm_nccl_boot.c)
 * over 2 or 4 ranks on one machine, no GPU needed: run by tests/cli/mpi_nccl_boot.sh
 * under mpirun -np 2 and -np 4.
 *
 * The local rank (which GPU a rank drives) from Open MPI's environment and,
 * with the launcher's variables removed, from the MPI shared-memory split; a
 * broken variable refused by name; the report's gather going over the MPI
 * communicator a GPU communicator keeps (Comm.host). Every rank runs every
 * test; a test passes when it passes on every rank; rank 0 prints the lines. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_nccl_boot.h"
#include "exec/comm/comm_nccl_rules.h"
#include "mpi_check.h"

static Comm *C;

/* One machine: the local ranks are 0 .. N-1, each once (the GPU of rank r is r mod GPUs). */
static void check_locals(int local)
{
    int *all = calloc((size_t)N, sizeof *all);
    MPI_Allgather(&local, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < N; r++) {
        int seen = 0;
        for (int j = 0; j < N; j++) seen += all[j] == r;
        CHECKF(seen == 1, "local rank %d held by %d ranks", r, seen);
    }
    free(all);
}

/* Open MPI sets OMPI_COMM_WORLD_LOCAL_RANK: taken as it is. */
static void test_local_rank_from_env(void)
{
    Err e;
    int local = -1;
    CHECK_EQ_INT(comm_boot_local_rank(&local, &e), ST_OK);
    CHECK_EQ_INT(local, atoi(getenv("OMPI_COMM_WORLD_LOCAL_RANK")));
    check_locals(local);
}

/* Without the launcher's variables: the shared-memory split (keyed by world rank: local = world rank on
 * one machine). The variables are put back after. */
static void test_local_rank_from_split(void)
{
    Err e;
    int local = -1;
    char keep[32];
    snprintf(keep, sizeof keep, "%s", getenv("OMPI_COMM_WORLD_LOCAL_RANK"));
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("MPI_LOCALRANKID");
    unsetenv("SLURM_LOCALID");
    CHECK_EQ_INT(comm_local_rank_env(), -1);
    CHECK_EQ_INT(comm_boot_local_rank(&local, &e), ST_OK);
    CHECK_EQ_INT(local, R);
    check_locals(local);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", keep, 1);
}

/* A launcher value that is not a number: refused, naming the variables. */
static void test_bad_local_rank(void)
{
    Err e;
    int local = -1;
    char keep[32];
    snprintf(keep, sizeof keep, "%s", getenv("OMPI_COMM_WORLD_LOCAL_RANK"));
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "two", 1);
    CHECK_EQ_INT(comm_boot_local_rank(&local, &e), ST_USAGE);
    CHECK(strstr(e.msg, "OMPI_COMM_WORLD_LOCAL_RANK") != NULL);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", keep, 1);
}

/* A GPU communicator's report gathers over its host (the MPI communicator the ranks started with): rank 0
 * gets every rank's bytes in rank order; without a host, only its own. */
static void test_gather_over_host(void)
{
    Comm gpu;
    Err e;
    memset(&gpu, 0, sizeof gpu);
    gpu.name = "nccl", gpu.rank = R, gpu.size = N, gpu.host = C;
    int mine = 100 + R, all[4] = {-1, -1, -1, -1};
    CHECK_EQ_INT(comm_gather_bytes(&gpu, &mine, sizeof mine, all, &e), ST_OK);
    if (R == 0)
        for (int r = 0; r < N; r++) CHECK_EQ_INT(all[r], 100 + r);
    gpu.host = NULL;
    int own[4] = {-1, -1, -1, -1};
    CHECK_EQ_INT(comm_gather_bytes(&gpu, &mine, sizeof mine, own, &e), ST_OK);
    CHECK_EQ_INT(own[0], 100 + R);
    CHECK_EQ_INT(own[1], -1);
}

int main(void)
{
    Err e;
    if (comm_mpi_create(&C, &e)) { /* it starts MPI and finalizes it with the last communicator */
        fprintf(stderr, "comm_mpi_create: %s\n", e.msg);
        return 70;
    }
    N = C->size, R = C->rank;
    if (N != 2 && N != 4) {
        if (R == 0) fprintf(stderr, "run under mpirun -np 2 or -np 4 (got %d ranks)\n", N);
        MPI_Abort(MPI_COMM_WORLD, 64);
    }
    if (R == 0) printf("checks: 4\n");
    MRUN(test_local_rank_from_env);
    MRUN(test_local_rank_from_split);
    MRUN(test_bad_local_rank);
    MRUN(test_gather_over_host);
    int failed = test_failed_;
    C->destroy(C); /* the split's communicator is released at exit, finalizing MPI */
    if (R == 0) printf("%d passed, %d failed, 0 skipped\n", test_passed_, test_failed_);
    return failed ? 1 : 0;
}
