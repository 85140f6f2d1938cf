# tests/cli/mpi_nccl_boot.sh — NCCL ranks' MPI side without a GPU: the local rank
# each rank's GPU is chosen by (Open MPI's variable, else the MPI shared-memory
# split) and the report's gather over the kept MPI communicator
# (tests/mpi/mpi_nccl_boot.c under mpirun -np 2 and 4); and `--backend cuda`
# under mpirun on a machine without a GPU: every rank stops with exit 69 and
# the reason, never a hang (run and calibrate), nothing written.
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_program_checks "nccl boot" "$(dirname "$FP8PLAN")/mpi/mpi_nccl_boot" 2 4

TINY="--model gpt2-124m --layers 2 --hidden 32 --heads 2 --seq 16 --vocab 128"
if ! command -v mpirun >/dev/null 2>&1; then
    skip "--backend cuda under mpirun" "mpirun: install openmpi-bin (make installs it as root)"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    skip_hw "--backend cuda without a GPU" "this machine has a GPU"
else
    # the reason: no GPU (a CUDA build) or no CUDA in this build (make CUDA=0, the sanitizer builds)
    why='no usable GPU\|no GPU is present\|built without CUDA'
    mpi_run 2 "$FP8PLAN" run --backend cuda $TINY --recipe te-fp8 --steps 2 -o "$TMP/r.csv"
    expect_rc "mpirun -np 2 run --backend cuda without a GPU: every rank exits 69" 69
    if grep -q "$why" "$TMP/err"; then pass "... saying why"; else fail "... saying why" "$(head -c 600 "$TMP/err")"; fi
    if [ -e "$TMP/r.csv" ]; then fail "... and wrote nothing" "$TMP/r.csv exists"; else pass "... and wrote nothing"; fi
    mpi_run 2 "$FP8PLAN" calibrate --backend cuda $TINY --quick -o "$TMP/cat"
    expect_rc "mpirun -np 2 calibrate --backend cuda without a GPU: exit 69" 69
    if grep -q "$why" "$TMP/err"; then pass "... saying why"; else fail "... saying why" "$(head -c 600 "$TMP/err")"; fi
    if [ -e "$TMP/cat" ]; then fail "... and wrote no catalog" "$TMP/cat exists"; else pass "... and wrote no catalog"; fi
    run calibrate --backend cuda $TINY --quick -o "$TMP/cat1"
    expect_rc "calibrate --backend cuda without a GPU: exit 69" 69
    expect_err "... the reason, not 'not implemented'" "--backend cuda: "
    if grep -q "not implemented" "$TMP/err"; then fail "... no 'not implemented'" "$(cat "$TMP/err")"; else pass "... no 'not implemented'"; fi
    if [ -e "$TMP/cat1" ]; then fail "... and wrote no catalog" "$TMP/cat1 exists"; else pass "... and wrote no catalog"; fi
fi
finish
