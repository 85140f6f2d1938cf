# tests/mpi_lib.sh — running programs under mpirun in tests (sourced after tests/lib.sh).
#
# As root, OpenMPI refuses to start without its two allow-run-as-root variables;
# --oversubscribe lets 4 ranks share CI's 2 cores. MPI_TIMEOUT (default 120 s)
# bounds a run: a hang ends as exit status 124 and a named failure, never a
# stuck suite. Under the sanitizers (make test SAN=address,undefined) the leak
# check is off for these runs: OpenMPI's plugins allocate memory that outlives
# MPI_Finalize and are unloaded before LeakSanitizer reports, so their stacks
# end in "<unknown module>" and no suppression can name them. ASan's memory-error
# checks and UBSan still run here; fp8plan's own allocations are leak-checked by
# every single-rank suite, which runs the same code without MPI.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# A rank waiting in MPI yields its core between polls (OpenMPI's mpi_yield_when_idle, which it sets by itself only
# when the ranks outnumber the cores): at -np 2 on CI's 2 shared cores two ranks otherwise spin through their time
# slices while the one they wait for is not running. tests/cli/mpi_run.sh at a load of 19-26 (nice 10), two runs
# each, alternating: spinning 886 s (13.3 s of CPU, 8 of 37 checks failed) and 333 s (47.5 s of CPU); yielding 283 s
# (8.1 s of CPU) and 144 s (8.8 s), every check passed.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
MPI_TIMEOUT=${MPI_TIMEOUT:-120}

# mpi_run NP PROGRAM ARGS...: stdout in $TMP/out, stderr in $TMP/err, status in $rc.
mpi_run() {
    local np=$1
    shift
    timeout -k 5 "$MPI_TIMEOUT" mpirun --oversubscribe -np "$np" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
}

# mpi_expect_checks TAG: the program's "checks: K" and K "ok -"/"FAIL -" lines, each
# counted as a test here; exit status 0; a timeout named.
mpi_expect_checks() {
    local tag=$1 want got
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        fail "$tag: finished within $MPI_TIMEOUT s" "timed out (a hang)" "stderr: $(tail -c 600 "$TMP/err")"
        return
    fi
    want=$(sed -n 's/^checks: \([0-9]*\)$/\1/p' "$TMP/out")
    while IFS= read -r l; do
        case "$l" in
        "ok - "*) pass "${l#ok - }" ;;
        "FAIL - "*) fail "${l#FAIL - }" "stderr: $(head -c 1500 "$TMP/err")" ;;
        esac
    done <"$TMP/out"
    got=$(grep -cE '^(ok|FAIL) - ' "$TMP/out")
    expect_eq "$tag: every check reported" "$got" "${want:-none}"
    if [ "$rc" -eq 0 ]; then pass "$tag: exit status 0"; else fail "$tag: exit status 0" "exit status $rc" "stderr: $(tail -c 600 "$TMP/err")"; fi
}

# mpi_require: without mpirun, one skip and the suite ends (make installs openmpi-bin as root).
mpi_require() {
    command -v mpirun >/dev/null 2>&1 && return 0
    skip "mpi runs" "mpirun: install openmpi-bin (make installs it as root)"
    finish
    exit
}

# mpi_catalog DIR: a copy of models/ plus the tiny models the run suites train: tiny-gpt (2 layers,
# hidden 32, FFN 128, 2 heads, seq 16, vocab 64 padded to 128; tied, learned positions, biases) and
# tiny-odd (1 layer, hidden 33, FFN 67, 3 heads, seq 5, vocab 64: 8,778 linear-weight and 4,819 other
# elements, which neither 2 nor 4 ranks divide).
mpi_catalog() {
    cp -r "$FP8PLAN_ROOT/models" "$1"
    echo 'tiny-gpt,2,32,128,2,2,16,64,16,layernorm,gelu,learned,yes,yes,,,,,,,,,,,,,,,,"test model"' >>"$1/models.csv"
    echo 'tiny-odd,1,33,67,3,3,5,64,5,layernorm,gelu,learned,yes,yes,,,,,,,,,,,,,,,,"test model"' >>"$1/models.csv"
}

# mpi_program_checks NAME PROGRAM NP...: PROGRAM (a tests/mpi/ program) under mpirun -np NP for each NP, its
# check lines counted (mpi_expect_checks); skipped without mpirun, a failure when it was not built.
mpi_program_checks() {
    local name=$1 prog=$2 np
    shift 2
    if ! command -v mpirun >/dev/null 2>&1; then
        skip "$name" "mpirun: install openmpi-bin (make installs it as root)"
        return
    fi
    if [ ! -x "$prog" ]; then
        fail "$name" "$prog was not built"
        return
    fi
    for np in "$@"; do
        mpi_run "$np" "$prog"
        mpi_expect_checks "np$np"
    done
}
