# tests/cli/mpi_comm.sh — the MPI communicator's collectives over 2 and 4 ranks
# (tests/mpi/mpi_comm.c, mpi_comm_p2p.c and mpi_comm_a2a.c under mpirun --oversubscribe): every check line the
# program prints is counted here, a program that hangs is killed by timeout
# and named, and a missing check line is a failure.
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_program_checks "mpi collectives" "$(dirname "$FP8PLAN")/mpi/mpi_comm" 2 4
mpi_program_checks "mpi sends and receives" "$(dirname "$FP8PLAN")/mpi/mpi_comm_p2p" 2 4
mpi_program_checks "mpi all-to-all and non-finite values" "$(dirname "$FP8PLAN")/mpi/mpi_comm_a2a" 2 4

# comm_mpi_abort ends the whole job with the code it is given (the last rank calls it with 7 while the others
# wait in a barrier), on 2 ranks as on 3, and never returns to its caller
if command -v mpirun >/dev/null 2>&1; then
    for np in 2 3; do
        mpi_run "$np" "$(dirname "$FP8PLAN")/mpi/mpi_comm" abort
        expect_rc "np$np: comm_mpi_abort ends the job with exit status 7" 7
        expect_eq "np$np: no rank went on after the abort" "$(grep -c -e 'comm_mpi_abort returned' -e 'barrier passed' "$TMP/out")" 0
    done
fi
finish
