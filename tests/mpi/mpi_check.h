/* tests/mpi/mpi_check.h — a test over MPI ranks (tests/mpi/mpi_*.c): every rank
 * runs every test; a test passes when it passes on every rank (the failure
 * counts summed with MPI_Allreduce); rank 0 prints "ok - npN: name" or
 * "FAIL - npN: name" (tests/mpi_lib.sh's mpi_expect_checks counts them). */
#ifndef FP8PLAN_TESTS_MPI_CHECK_H
#define FP8PLAN_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "test.h"

/* A bit-exact float comparison (0.0 and -0.0 differ, a NaN's payload counts). */
static inline int same_bits(float a, float b) { return !memcmp(&a, &b, sizeof a); }

static int N, R; /* size, rank: set by the program once its communicator exists */

static void mpi_run(const char *name, void (*fn)(void))
{
    test_cur_fails_ = 0;
    fn();
    int mine = test_cur_fails_, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (mine) fprintf(stderr, "  (rank %d: %d checks failed)\n", R, mine);
    if (all)
        test_failed_++;
    else
        test_passed_++;
    if (R == 0) printf("%s - np%d: %s\n", all ? "FAIL" : "ok", N, name);
    fflush(stdout);
}
#define MRUN(fn) mpi_run(#fn, fn)

/* MPI started and the world's communicator made, N and R set; the job ends with status 70 when it cannot be. */
static inline Comm *mpi_world(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    Comm *c = NULL;
    Err e;
    if (comm_mpi_create(&c, &e)) {
        fprintf(stderr, "comm_mpi_create: %s\n", e.msg);
        MPI_Abort(MPI_COMM_WORLD, 70);
    }
    N = c->size, R = c->rank;
    return c;
}

/* The job ends with status 64 unless it runs on 2 or 4 ranks. */
static inline void mpi_need_2_or_4(void)
{
    if (N == 2 || N == 4) return;
    if (R == 0) fprintf(stderr, "run under mpirun -np 2 or -np 4 (got %d ranks)\n", N);
    MPI_Abort(MPI_COMM_WORLD, 64);
}

/* The communicator destroyed and MPI finalized; rank 0 prints the summary line. The exit status: 1 when a test
 * failed. */
static inline int mpi_done(Comm *c)
{
    int failed = test_failed_;
    c->destroy(c);
    MPI_Finalize();
    if (R == 0) printf("%d passed, %d failed, 0 skipped\n", test_passed_, test_failed_);
    return failed ? 1 : 0;
}

#endif
