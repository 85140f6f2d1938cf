# tests/cli/mpi_comm.sh — the MPI communicator's collectives over 2 and 4 ranks
# (tests/mpi/mpi_comm.c under mpirun --oversubscribe): every check line the
# program prints is counted here, a program that hangs is killed by timeout
# and named, and a missing check line is a failure.
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

prog=$(dirname "$FP8PLAN")/mpi/mpi_comm
if ! command -v mpirun >/dev/null 2>&1; then
    skip "mpi collectives" "mpirun: install openmpi-bin (make installs it as root)"
    finish
    exit
fi
if [ ! -x "$prog" ]; then
    fail "mpi collectives" "$prog was not built"
    finish
    exit
fi
for np in 2 4; do
    mpi_run "$np" "$prog"
    mpi_expect_checks "np$np"
done
finish
