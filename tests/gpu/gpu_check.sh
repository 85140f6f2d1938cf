#!/bin/sh
# tests/gpu/gpu_check.sh BUILD_DIR — the GPU validation in one command (make gpu-check).
#
# On a machine with an NVIDIA GPU (H100/H200) it runs, in this order, each stage
# under its own time limit so the whole stays under 8 minutes:
#   1. checks   every CUDA kernel against the CPU reference on fresh random data
#               (gpu_kernels, gpu_nn, gpu_optim, gpu_moe) and a tiny model's losses, CPU
#               against GPU, for four recipes (gpu_train, first part)
#   2. gemm     the cuBLASLt sweep, FP8 against BF16, at 4096³, 8192³ and one
#               GPT-13B layer's twelve GEMMs, plus the memory-bound kernels (gpu_bench)
#   3. torch    the same layer stack and GEMM shapes in PyTorch (torch_baseline.py)
#   4. steps    8 layers of GPT-13B (2.8e9 parameters with the embedding, seq
#               2048, micro-batch 2) for megatron-bf16, te-fp8 and fp8lm:
#               `fp8plan run --backend cuda`, plan versus measured per term —
#               arena terms byte for byte, device memory against the plan's
#               total, device time per phase and category, step time, tokens/s,
#               TFLOP/s and MFU — in run.csv and as the summary's last table
#               (gpu_train's timed steps where `run` is absent)
#               and deepseek-v3 on a small mixture-of-experts model (block-scaled
#               casts and GEMMs, BF16 moments), its block "# recipe deepseek-v3 (moe)"
#   5. calibrate `fp8plan calibrate --backend cuda`: the GPU measured as the
#               planner needs it (cuBLASLt GEMMs per dtype path at a layer's
#               shapes, HBM and element-wise bandwidth, launch floor; one GPU
#               has no bus) — its gpus.csv row in calibrate.csv
#      nccl     `mpirun -np 1 fp8plan run --backend cuda` on a small model: NCCL
#               bootstrapped through MPI (rank 0's id broadcast), NCCL on its
#               own stream ordered by events, collective times from events —
#               its rows last in run.csv under "# recipe te-fp8 (nccl, mpirun -np 1)"
#               (skipped, and said, where mpirun is missing)
# and writes the CSVs, a log and summary.txt into the results folder
# ($GPU_CHECK_OUT, default results/gpu-<UTC date>), printing the summary last.
# Without a GPU it says so and exits 69 (EX_UNAVAILABLE) having run nothing.
#
# Knobs (environment): GPU_CHECK_OUT, GPU_CHECK_LAYERS (8), GPU_CHECK_TOKENS
# (4096 = micro-batch 2 × seq 2048), GPU_CHECK_STEPS (8), GPU_CHECK_SEED,
# GPU_CHECK_BUDGET (465 s: every stage's limit is cut to what is left of it),
# GPU_CHECK_LIMIT_SCALE (selftest only, a whole number, default 1: the budget and
# every stage's limit multiplied by it; the limits are the GPU's, and the CPU
# standing in on a shared machine gets a fraction of a core: tests/cli/gpu_check.sh).
#
# Binaries: the ones in BUILD_DIR when they load; otherwise `make gpu-build`.
# A GPU machine whose image lacks the build dependencies (libcsv-dev, nvcc
# headers) runs a build made elsewhere: `make gpu-build` there, carry BUILD_DIR
# along (it holds libcsv.so.3 in BUILD_DIR/lib, added to LD_LIBRARY_PATH here).
# A library the programs still miss (NCCL, cuBLASLt, the CUDA runtime: exactly
# the sonames the build needs, .so.13 for CUDA 13) is looked for in PyTorch's
# nvidia-* wheels. Before any stage every program must exist, load (ldd) and
# run --version, and the driver must support the CUDA runtime they were built
# with; otherwise one line says what is wrong and nothing runs (exit 69/70).
set -u
BUILD=${1:-build}
here=$(dirname "$0")
. "$here/gpu_env.sh"
BUILD=$(ge_abs "$BUILD") # before the cd: relative to where it was called from
root=$(cd "$here/../.." && pwd) || exit 70
cd "$root" || exit 70

# GPU_CHECK_SELFTEST=1 runs the whole pipeline with the CPU backend standing in
# for the GPU (FP8PLAN_GPU_SELFTEST): it tests this script and the programs, and
# measures nothing.
SELFTEST=${GPU_CHECK_SELFTEST:-0}
if [ "$SELFTEST" = 1 ]; then
    export FP8PLAN_GPU_SELFTEST=1
    echo "gpu-check: SELFTEST, the CPU backend stands in for the GPU; nothing is measured"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "gpu-check: no NVIDIA GPU on this machine (nvidia-smi lists none); nothing was run" >&2
    exit 69
fi

OUTDIR=${GPU_CHECK_OUT:-results/gpu-$(date -u +%Y%m%d-%H%M%S)}
LAYERS=${GPU_CHECK_LAYERS:-8}
TOKENS=${GPU_CHECK_TOKENS:-4096}
STEPS=${GPU_CHECK_STEPS:-8}
SEED=${GPU_CHECK_SEED:-$(date +%s)}
BUDGET=${GPU_CHECK_BUDGET:-465}
LIMIT_SCALE=1
if [ "$SELFTEST" = 1 ]; then
    LIMIT_SCALE=${GPU_CHECK_LIMIT_SCALE:-1}
    case $LIMIT_SCALE in '' | *[!0-9]* | 0)
        echo "gpu-check: GPU_CHECK_LIMIT_SCALE=$LIMIT_SCALE: a whole number, 1 or more" >&2
        exit 64
        ;;
    esac
    BUDGET=$((BUDGET * LIMIT_SCALE))
fi
mkdir -p "$OUTDIR" || exit 73
: >"$OUTDIR/run.csv" # the steps' blocks, then the nccl stage's (removed at the end when empty)
LOG=$OUTDIR/log.txt
SUM=$OUTDIR/summary.txt
: >"$LOG"
t_start=$(date +%s)
say() { echo "$*" | tee -a "$LOG"; }
stage() { say ""; say "== $* ($(($(date +%s) - t_start)) s)"; }
stop() { # code line: one clear line, nothing else runs
    say "gpu-check: $2"
    echo "gpu-check: $2" >&2
    exit "$1"
}

# ---- libraries and binaries ------------------------------------------------------------
PROGS="gpu_kernels gpu_nn gpu_optim gpu_moe gpu_bench gpu_train gpu_plan"
[ -d "$BUILD/lib" ] && export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
resolve_all() {
    for p in $PROGS fp8plan; do
        f=$BUILD/gpu/$p
        [ "$p" = fp8plan ] && f=$BUILD/fp8plan
        [ -x "$f" ] && ge_resolve_libs "$f" >>"$LOG" 2>&1
    done
    return 0
}
resolve_all
loads() { [ -x "$1" ] && [ -z "$(ge_missing_libs "$1")" ]; }
need_build=0
for p in $PROGS; do loads "$BUILD/gpu/$p" || need_build=1; done
loads "$BUILD/fp8plan" || need_build=1
if [ "$need_build" = 1 ]; then
    stage "build: make gpu-build (programs missing or not loadable here)"
    if ! make -j"$(nproc 2>/dev/null || echo 4)" gpu-build BUILD="$BUILD" >>"$LOG" 2>&1; then
        tail -n 30 "$LOG"
        stop 70 "the build failed here (see the lines above); build elsewhere with 'make gpu-build' and carry $BUILD"
    fi
    [ -d "$BUILD/lib" ] && export LD_LIBRARY_PATH="$BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    resolve_all
fi
# every program exists, loads and runs --version, before any stage
list=""
for p in $PROGS; do list="$list gpu/$p"; done
# shellcheck disable=SC2086 # list: program paths under BUILD, no spaces
if ! bad=$(ge_check_programs "$BUILD" fp8plan $list); then
    echo "$bad" | tee -a "$LOG" >&2
    stop 70 "$(echo "$bad" | wc -l | tr -d ' ') program(s) cannot run here, first: $(echo "$bad" | head -n 1); nothing was run"
fi

# the driver must run the CUDA runtime the programs were built with
RUNTIME=$(ge_runtime_of "$BUILD/gpu/gpu_kernels")
if [ "$SELFTEST" != 1 ]; then
    DRIVER=$(ge_driver_cuda) # nvidia-smi's banner, else cudaDriverGetVersion as the program sees it
    [ -n "$DRIVER" ] || DRIVER=$(ge_driver_of "$BUILD/gpu/gpu_kernels")
    why=$(ge_cuda_ok "$DRIVER" "$RUNTIME") || stop 69 "$why; nothing was run"
fi

# one process, one rank: NCCL's bootstrap needs no network beyond loopback
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"

# ---- environment --------------------------------------------------------------------------
stage "environment"
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null ||
        echo "selftest (no GPU)"
    echo "driver CUDA ${DRIVER:-none}, binaries built for CUDA ${RUNTIME:-?}"
    "$BUILD/gpu/gpu_kernels" --version 2>&1 | sed -n 's/^gpu_kernels: //p' | tr '\n' ';' | sed 's/;$/\n/'
    command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 1
    ge_torch
    echo "git $(git rev-parse --short HEAD 2>/dev/null) layers=$LAYERS tokens=$TOKENS steps=$STEPS seed=$SEED"
} >"$OUTDIR/env.tmp" 2>&1
cat "$OUTDIR/env.tmp" | tee -a "$LOG"

status=0
run_stage() { # seconds name command... — the limit is cut to what is left of the budget
    limit=$(($1 * LIMIT_SCALE)) name=$2
    shift 2
    left=$((BUDGET - ($(date +%s) - t_start)))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 10 ]; then
        say "$name: skipped, the ${BUDGET} s budget is spent"
        status=1
        return 124
    fi
    say "-- $name (limit $limit s)"
    # TERM at the limit (the programs keep their rows and exit 124), KILL 10 s later
    timeout -k 10 "$limit" "$@" >>"$LOG" 2>&1
    rc=$?
    [ $rc -eq 124 ] && say "$name: stopped at its $limit s limit (its rows so far are kept)"
    [ $rc -ne 0 ] && say "$name: exit $rc" && status=1
    return $rc
}

# ---- 1. checks ----------------------------------------------------------------------------------
stage "checks: kernels against the CPU reference, tiny-model losses"
for p in gpu_kernels gpu_nn gpu_optim gpu_moe; do
    run_stage 90 "$p" "$BUILD/gpu/$p" "$OUTDIR/$p.csv" "$SEED"
done
run_stage 60 "gpu_train (tiny model)" "$BUILD/gpu/gpu_train" "$OUTDIR/train_loss.csv" - 0 "$TOKENS" "$STEPS" "$SEED"

# ---- 2. GEMM sweep and kernels ----------------------------------------------------------------------
stage "gemm: cuBLASLt sweep (FP8 vs BF16) and memory-bound kernels"
run_stage 120 gpu_bench "$BUILD/gpu/gpu_bench" "$OUTDIR/gemm.csv" "$OUTDIR/membound.csv" "$TOKENS" "$SEED"

# ---- 3. PyTorch (before the steps: it is quick; the steps take what is left) ------------------------
# PyTorch is not a dependency: without it (or without a GPU it can see) the stage is skipped, not failed.
stage "torch: the same layer stack in BF16 and the GEMM shapes through torch"
if ! why=$(ge_torch); then
    say "torch_baseline: skipped (PyTorch is not importable here: $why)"
else
    st0=$status
    run_stage 120 torch_baseline env PYTHONUNBUFFERED=1 python3 tests/gpu/torch_baseline.py "$OUTDIR/torch.csv" \
        --layers "$LAYERS" --tokens "$TOKENS" --steps "$STEPS"
    if [ $? -eq 69 ]; then
        say "torch_baseline: skipped (torch sees no GPU)"
        status=$st0
    fi
fi

# ---- the plan's expectation for the steps stage, before it runs ----------------------------------
# gpu_plan: the same PlanInput as fp8plan run (one GPU, materialized attention, no fragmentation)
# for the device's models/gpus.csv row (h200 in the selftest), 8 GPT-13B layers by default.
case "$(head -n 1 "$OUTDIR/env.tmp")" in
*H200*) GPU_ROW=h200 ;; *H800*) GPU_ROW=h800 ;; *H100*PCIe*) GPU_ROW=h100-pcie ;; *H100*) GPU_ROW=h100-sxm ;;
*B200*) GPU_ROW=b200 ;; *) GPU_ROW=h200 ;;
esac
stage "plan: the expected step for $LAYERS GPT-13B layers on $GPU_ROW"
if "$BUILD/gpu/gpu_plan" "$GPU_ROW" "$LAYERS" "$TOKENS" >"$OUTDIR/expect.tmp" 2>>"$LOG"; then
    awk -F, 'NR > 1 { printf "  expected %-14s step %9.2f ms (GEMM %.2f, attention %.2f, other kernels %.2f, optimizer %.2f ms)\n", $1, $6, $7, $8, $9, $10 }' \
        "$OUTDIR/expect.tmp" | tee -a "$LOG"
else
    say "gpu_plan: failed (see log.txt)"
    status=1
fi

# ---- 4. training steps ------------------------------------------------------------------------------
# The plan is made for the device's row of models/gpus.csv (fp8plan run matches
# its name and SM count). In the selftest the CPU backend runs a small model
# instead: it tests the plumbing (run.csv, the summary's table), not a GPU.
if [ "${GPU_CHECK_SELFTEST:-0}" = 1 ]; then
    RUN_MODEL="--backend cpu --model gpt2-124m --layers 2 --hidden 64 --heads 4 --seq 64 --vocab 512 --mbs 2"
    stage "steps: a small model on the CPU backend (selftest)"
else
    RUN_MODEL="--backend cuda --model gpt-13b --layers $LAYERS --seq 2048 --mbs $((TOKENS / 2048))"
    stage "steps: $LAYERS layers of GPT-13B, $TOKENS tokens/step"
fi
if "$BUILD/fp8plan" run --help >/dev/null 2>&1; then
    for r in megatron-bf16 te-fp8 fp8lm; do
        # shellcheck disable=SC2086 # RUN_MODEL is a list of flags
        run_stage 110 "fp8plan run $r" "$BUILD/fp8plan" run $RUN_MODEL --recipe "$r" --steps "$STEPS" \
            --seed "$SEED" --log-every 4 -o "$OUTDIR/run_$r.tmp"
        rc=$?
        # died of a signal (not the stage's limit): where, from a backtrace under cuda-gdb, on 2 layers
        if [ $rc -gt 128 ] && [ $rc -ne 137 ] && command -v cuda-gdb >/dev/null 2>&1; then
            say "  fp8plan run $r died of signal $((rc - 128)); its backtrace (cuda-gdb, 2 layers) follows in log.txt"
            # shellcheck disable=SC2086 # RUN_MODEL is a list of flags; the later --layers wins
            timeout -k 5 90 cuda-gdb -q -batch -ex run -ex bt -ex quit --args "$BUILD/fp8plan" run $RUN_MODEL \
                --layers 2 --recipe "$r" --steps 2 --seed "$SEED" >>"$LOG" 2>&1
        fi
        if [ -f "$OUTDIR/run_$r.tmp" ]; then
            { echo "# recipe $r"; cat "$OUTDIR/run_$r.tmp"; } >>"$OUTDIR/run.csv"
            rm -f "$OUTDIR/run_$r.tmp"
        fi
    done
    # deepseek-v3 on the GPU: a small mixture-of-experts model on one rank (4 experts, top 2): the block-scaled
    # casts (k_quant_block.cu), cuBLASLt's VEC128/BLK128x128 GEMMs, the grouped expert GEMMs with their own tiles
    # and the BF16 Adam moments inside training steps, every exact term against the plan. Not in the selftest:
    # the CPU's 14-bit accumulation emulation takes minutes on it (tests/cli runs deepseek-v3 on the CPU).
    if [ "$SELFTEST" = 1 ]; then
        say "fp8plan run deepseek-v3 (moe): skipped in the selftest (the CPU standing in emulates the tensor core)"
    else
        run_stage 60 "fp8plan run deepseek-v3 (moe)" "$BUILD/fp8plan" run --backend cuda --model mixtral-8x7b \
            --layers 2 --hidden 1024 --heads 8 --kv-heads 8 --seq 512 --vocab 4096 --experts 4 --topk 2 \
            --expert-ffn 1024 --mbs 2 --recipe deepseek-v3 --steps "$STEPS" --seed "$SEED" -o "$OUTDIR/run_dsv3.tmp"
        if [ -f "$OUTDIR/run_dsv3.tmp" ]; then
            { echo "# recipe deepseek-v3 (moe)"; cat "$OUTDIR/run_dsv3.tmp"; } >>"$OUTDIR/run.csv"
            rm -f "$OUTDIR/run_dsv3.tmp"
        fi
    fi
else
    say "fp8plan run is not in this build: gpu_train times the steps (no plan comparison)"
    run_stage 300 "gpu_train (steps)" env FP8PLAN_GPU_TRAIN_SPEED_ONLY=1 "$BUILD/gpu/gpu_train" - "$OUTDIR/steps.csv" \
        "$LAYERS" "$TOKENS" "$STEPS" "$SEED"
fi

# ---- 5. calibrate and a rank of NCCL through MPI (after the steps: they take what is left) ----------
# One H200 cannot host two NCCL ranks (NCCL < 2.30 refuses two ranks on one device), so the link is not
# measured here: calibrate says "one GPU has no bus", and the mpirun stage runs one rank. In the selftest
# the CPU backend stands in (calibrate --backend cpu, MPI between CPU ranks): the plumbing, not a GPU.
if [ "$SELFTEST" = 1 ]; then
    CAL_FLAGS="--backend cpu --model gpt2-124m --layers 2 --hidden 64 --heads 4 --seq 64 --vocab 512"
    NCCL_RUN="--backend cpu --model gpt2-124m --layers 2 --hidden 64 --heads 4 --seq 64 --vocab 512 --mbs 2"
else
    CAL_FLAGS="--backend cuda --model gpt-13b --layers 1 --seq 2048 --mbs $((TOKENS / 2048))"
    NCCL_RUN="--backend cuda --model gpt2-124m --layers 2 --hidden 512 --heads 8 --seq 512 --vocab 4096 --mbs 2"
fi
stage "calibrate: the GPU measured as the planner needs it (GEMM per dtype path, HBM, launch floor)"
rm -rf "$OUTDIR/cal.tmp"
# shellcheck disable=SC2086 # CAL_FLAGS is a list of flags
if run_stage 60 "fp8plan calibrate" "$BUILD/fp8plan" calibrate $CAL_FLAGS --quick --name calibrated --allow-noisy \
    -o "$OUTDIR/cal.tmp"; then
    { head -n 1 "$OUTDIR/cal.tmp/gpus.csv"; grep '^calibrated,' "$OUTDIR/cal.tmp/gpus.csv"; } >"$OUTDIR/calibrate.csv"
    say "  $(cut -d, -f1-10 "$OUTDIR/calibrate.csv" | tail -n 1)"
fi
rm -rf "$OUTDIR/cal.tmp"

stage "nccl: mpirun -np 1 fp8plan run (NCCL bootstrapped through MPI, its own stream, event-timed collectives)"
if ! command -v mpirun >/dev/null 2>&1; then
    say "nccl: skipped (no mpirun on this machine: OpenMPI's launcher is needed to start the rank)"
else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # shellcheck disable=SC2086 # NCCL_RUN is a list of flags
    run_stage 60 "mpirun -np 1 fp8plan run" mpirun -np 1 "$BUILD/fp8plan" run $NCCL_RUN --recipe te-fp8 --steps 6 \
        --seed "$SEED" -o "$OUTDIR/nccl.tmp"
    grep -h "communicator: " "$LOG" | tail -n 1 | tee -a "$LOG" # e.g. nccl 2.x.y (ranks bootstrapped through MPI)
    if [ -f "$OUTDIR/nccl.tmp" ]; then
        { echo "# recipe te-fp8 (nccl, mpirun -np 1)"; cat "$OUTDIR/nccl.tmp"; } >>"$OUTDIR/run.csv"
        rm -f "$OUTDIR/nccl.tmp"
    fi
fi

# ---- merge the check tables (8 files at most come back from a device call) ------------------------------
{
    head -n 1 "$OUTDIR/gpu_kernels.csv" 2>/dev/null
    for f in gpu_kernels gpu_nn gpu_optim gpu_moe train_loss; do tail -n +2 "$OUTDIR/$f.csv" 2>/dev/null; done
} >"$OUTDIR/checks.csv"
rm -f "$OUTDIR/gpu_kernels.csv" "$OUTDIR/gpu_nn.csv" "$OUTDIR/gpu_optim.csv" "$OUTDIR/gpu_moe.csv" "$OUTDIR/train_loss.csv"
[ -s "$OUTDIR/run.csv" ] || rm -f "$OUTDIR/run.csv"

sh tests/gpu/gpu_summary.sh "$OUTDIR" "$(($(date +%s) - t_start))" >"$SUM" 2>>"$LOG"
rm -f "$OUTDIR"/*.tmp.* "$OUTDIR"/*.tmp # env.tmp, expect.tmp; a stage stopped at its limit leaves its temporary file
cat "$SUM"
exit $status
