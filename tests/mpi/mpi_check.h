/* tests/mpi/mpi_check.h — a test over MPI ranks (tests/mpi/mpi_*.c): every rank
 * runs every test; a test passes when it passes on every rank (the failure
 * counts summed with MPI_Allreduce); rank 0 prints "ok - npN: name" or
 * "FAIL - npN: name" (tests/mpi_lib.sh's mpi_expect_checks counts them). */
#ifndef FP8PLAN_TESTS_MPI_CHECK_H
#define FP8PLAN_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <string.h>

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

#endif
