# tests/cli/mpi_comm.sh — the MPI communicator's collectives over 2 and 4 ranks
# (tests/mpi/mpi_comm.c under mpirun --oversubscribe): every check line the
# program prints is counted here, a program that hangs is killed by timeout
# and named, and a missing check line is a failure.
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_program_checks "mpi collectives" "$(dirname "$FP8PLAN")/mpi/mpi_comm" 2 4
finish
