#!/bin/sh
# tests/cli/gpu_check.sh — the GPU check's plumbing on a machine without a GPU:
# `make gpu-check` must say so and exit 69 having run nothing, and the whole
# pipeline must run with the CPU backend standing in (GPU_CHECK_SELFTEST=1),
# every check passing exactly, its tables merged and its summary written.
. "$(dirname "$0")/../lib.sh"
build=$(dirname "$FP8PLAN")
root=${FP8PLAN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    skip_hw "no-GPU behaviour" "this machine has a GPU: run make gpu-check"
else
    GPU_CHECK_OUT=$TMP/none sh "$root/tests/gpu/gpu_check.sh" "$build" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect_rc "gpu-check without a GPU exits 69" 69
    expect_err "gpu-check says why" "no NVIDIA GPU on this machine"
    if [ -d "$TMP/none" ]; then fail "gpu-check without a GPU made a results folder"; else pass "gpu-check wrote nothing"; fi
fi

if [ ! -x "$build/gpu/gpu_kernels" ]; then
    skip_build "selftest" "the GPU programs are built only with CUDA; none in $build"
else
    # the stages' limits are the GPU's; the CPU standing in gets about cores / load of a core on a shared machine
    # (at a load of 20 on 2 cores calibrate's 1.1 s of CPU took 34 s of its 60 s): the limits scaled by load_scale
    GPU_CHECK_SELFTEST=1 GPU_CHECK_OUT=$TMP/self GPU_CHECK_SEED=12345 GPU_CHECK_LIMIT_SCALE=$(load_scale) \
        sh "$root/tests/gpu/gpu_check.sh" "$build" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if python3 -c 'import torch' >/dev/null 2>&1; then
        echo "skip - torch-absent behaviour (PyTorch is importable here)"
    else
        expect_rc "selftest passes with PyTorch absent" 0
        expect_out "the torch stage says it was skipped" "torch_baseline: skipped (PyTorch is not importable here"
    fi
    checks=$TMP/self/checks.csv
    if [ -f "$checks" ]; then pass "selftest wrote checks.csv"; else fail "selftest wrote no checks.csv" "$(tail -5 "$TMP/out")"; fi
    n_fail=$(awk -F, 'NR > 1 && $NF != "pass"' "$checks" 2>/dev/null | wc -l)
    n_pass=$(awk -F, 'NR > 1 && $NF == "pass"' "$checks" 2>/dev/null | wc -l)
    if [ -s "$checks" ]; then expect_eq "selftest: no check fails with the CPU standing in" "$n_fail" 0; else
        fail "selftest: no check fails with the CPU standing in" "no checks.csv to read"; fi
    if [ "$n_pass" -ge 100 ]; then pass "selftest: $n_pass checks ran"; else fail "selftest: only $n_pass checks ran"; fi
    for p in gpu_kernels gpu_nn gpu_optim gpu_moe gpu_train; do
        if grep -q "^$p," "$checks" 2>/dev/null; then pass "selftest: $p reported"; else fail "selftest: no rows from $p"; fi
    done
    expect_out "selftest: summary printed last" "checks (kernels vs CPU reference, tiny-model losses): $n_pass passed, 0 failed"
    # the steps stage: fp8plan run for three recipes (the CPU backend on a small model here), its
    # rows in run.csv and as the summary's last table
    run_csv=$TMP/self/run.csv
    for r in megatron-bf16 te-fp8 fp8lm; do
        if grep -q "^# recipe $r\$" "$run_csv" 2>/dev/null; then pass "selftest: run.csv has $r"; else fail "selftest: run.csv lacks $r"; fi
    done
    # the calibrate stage (calibrate --backend cpu standing in): the measured row in calibrate.csv
    cal_csv=$TMP/self/calibrate.csv
    if [ "$(head -n 1 "$cal_csv" 2>/dev/null | cut -d, -f1-2)" = "name,compute_capability" ] &&
        awk -F, 'NR == 2 && $1 == "calibrated" && $5 + 0 > 0 && $6 + 0 > 0 { ok = 1 } END { exit !ok }' "$cal_csv"; then
        pass "selftest: calibrate.csv holds the measured row (bandwidth and BF16 rate positive)"
    else
        fail "selftest: calibrate.csv" "$(cat "$cal_csv" 2>/dev/null | head -c 400)"
    fi
    expect_out "selftest: the calibrate stage ran" "-- fp8plan calibrate (limit"
    # the nccl stage: mpirun -np 1 fp8plan run (MPI between CPU ranks standing in), its block last in run.csv
    if command -v mpirun >/dev/null 2>&1; then
        if tail -n +2 "$run_csv" 2>/dev/null | grep -q '^# recipe te-fp8 (nccl, mpirun -np 1)$' &&
            [ "$(grep '^# recipe ' "$run_csv" | tail -n 1)" = "# recipe te-fp8 (nccl, mpirun -np 1)" ]; then
            pass "selftest: run.csv ends with the mpirun -np 1 run's block (after the steps)"
        else
            fail "selftest: run.csv lacks the mpirun block" "$(head -n 2 "$run_csv" 2>/dev/null)"
        fi
        steps_want=4
    else
        expect_out "selftest: the nccl stage says why it is skipped" "nccl: skipped (no mpirun"
        steps_want=3
    fi
    expect_eq "selftest: run.csv has a step row per run" "$(grep -c '^time,step,' "$run_csv" 2>/dev/null)" "$steps_want"
    expect_eq "selftest: run.csv has a tokens/s row per run" "$(grep -c '^rate,tokens_per_s,' "$run_csv" 2>/dev/null)" "$steps_want"
    expect_out "selftest: the plan-versus-measured table" "fp8plan run: plan versus measured per term"
    # the plan's expected step for 8 GPT-13B layers on an H200, before the steps and beside them last
    for r in megatron-bf16 te-fp8 fp8lm; do
        want=$("$build/gpu/gpu_plan" h200 8 4096 | awk -F, -v r="$r" '$1 == r { printf "%.2f", $6 }')
        expect_out "selftest: expected $r step stated before the steps" "expected $r"
        if grep -q "^  $r *$want ms " "$TMP/out"; then pass "selftest: $r's expected step $want ms beside the measured"; else fail "selftest: $r expected $want ms" "$(tail -n 5 "$TMP/out")"; fi
    done
    last=$(tail -n 1 "$TMP/out")
    case "$last" in
    "  fp8lm "*" ms "*) pass "selftest: the expected-vs-measured table is printed last" ;;
    *) fail "selftest: the expected-vs-measured table is printed last" "last line: $last" ;;
    esac
    if grep -q "fp8lm.*exact terms *\([0-9]*\) of \1 equal" "$TMP/out"; then pass "selftest: exact terms all equal"; else fail "selftest: exact terms differ" "$(grep 'exact terms' "$TMP/out")"; fi
    if [ -f "$TMP/self/summary.txt" ] && [ -f "$TMP/self/log.txt" ]; then pass "selftest: summary.txt and log.txt"; else fail "selftest: summary or log missing"; fi
    n_files=$(find "$TMP/self" -type f | wc -l)
    if [ "$n_files" -le 8 ]; then pass "selftest: $n_files files (a device call returns 8 at most)"; else fail "selftest: $n_files files"; fi

    GPU_CHECK_SELFTEST=1 GPU_CHECK_OUT=$TMP/bad GPU_CHECK_LIMIT_SCALE=0 sh "$root/tests/gpu/gpu_check.sh" "$build" \
        >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect_rc "a limit scale of 0 refused" 64
    expect_err "... naming it" "GPU_CHECK_LIMIT_SCALE=0: a whole number, 1 or more"
    if [ -d "$TMP/bad" ]; then fail "... before making a results folder"; else pass "... before making a results folder"; fi

    # an unexpected error keeps the rows measured before it: a FAIL row naming the cause, the CSV
    # committed, exit 70; the stage's time limit (SIGTERM) the same with exit 124
    FP8PLAN_GPU_SELFTEST=1 FP8PLAN_GPU_FAIL_AT=120 "$build/gpu/gpu_kernels" "$TMP/k.csv" 7 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect_rc "an injected backend failure exits 70" 70
    rows=$(awk -F, 'NR > 1 && $NF == "pass"' "$TMP/k.csv" 2>/dev/null | wc -l)
    if [ "$rows" -ge 5 ]; then pass "the $rows rows before it are kept"; else fail "rows before the failure lost ($rows)"; fi
    if tail -n 1 "$TMP/k.csv" | grep -q "^gpu_kernels,abort,.*injected by FP8PLAN_GPU_FAIL_AT,.*,FAIL$"; then pass "a FAIL row names the cause"; else fail "no FAIL row" "$(tail -n 1 "$TMP/k.csv")"; fi
    FP8PLAN_GPU_SELFTEST=1 FP8PLAN_GPU_SIGNAL_AT=40 "$build/gpu/gpu_train" "$TMP/l.csv" "$TMP/s.csv" 0 4096 2 7 >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect_rc "the time limit's SIGTERM exits 124" 124
    if [ -s "$TMP/l.csv" ] && [ -f "$TMP/s.csv" ] && grep -q "stopped by signal 15" "$TMP/l.csv"; then
        pass "every CSV of the program is kept, the stop named"
    else
        fail "CSVs after SIGTERM" "$(ls "$TMP")"
    fi
    # every program answers --version (the check's load test)
    for p in gpu_kernels gpu_nn gpu_optim gpu_moe gpu_bench gpu_train gpu_plan; do
        if "$build/gpu/$p" --version 2>/dev/null | grep -q "^$p: cuda runtime built [0-9]"; then pass "$p --version"; else fail "$p --version"; fi
    done
fi
finish
