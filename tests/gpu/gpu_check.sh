#!/bin/sh
# tests/gpu/gpu_check.sh BUILD_DIR — the GPU validation in one command (make gpu-check).
#
# On a machine with an NVIDIA GPU (H100/H200) it runs, in this order, each stage
# under its own time limit so the whole stays under 8 minutes:
#   1. checks   every CUDA kernel against the CPU reference on fresh random data
#               (gpu_kernels, gpu_nn, gpu_optim) and a tiny model's losses, CPU
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
# and writes the CSVs, a log and summary.txt into the results folder
# ($GPU_CHECK_OUT, default results/gpu-<UTC date>), printing the summary last.
# Without a GPU it says so and exits 69 (EX_UNAVAILABLE) having run nothing.
#
# Knobs (environment): GPU_CHECK_OUT, GPU_CHECK_LAYERS (8), GPU_CHECK_TOKENS
# (4096 = micro-batch 2 × seq 2048), GPU_CHECK_STEPS (8), GPU_CHECK_SEED,
# GPU_CHECK_BUDGET (465 s: every stage's limit is cut to what is left of it).
#
# Binaries: the ones in BUILD_DIR when they load; otherwise `make gpu-build`.
# A GPU machine whose image lacks the build dependencies (libcsv-dev) can run a
# build made elsewhere: `make gpu-build` there, carry BUILD_DIR along, and put
# libcsv.so.3 in BUILD_DIR/lib (this script adds it to LD_LIBRARY_PATH, and
# NCCL, cuBLAS or the CUDA runtime from PyTorch's nvidia-* wheels when the
# toolkit there lacks one).
set -u
BUILD=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd) || exit 70
cd "$root" || exit 70

# GPU_CHECK_SELFTEST=1 runs the whole pipeline with the CPU backend standing in
# for the GPU (FP8PLAN_GPU_SELFTEST): it tests this script and the programs, and
# measures nothing.
if [ "${GPU_CHECK_SELFTEST:-0}" = 1 ]; then
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
mkdir -p "$OUTDIR" || exit 73
LOG=$OUTDIR/log.txt
SUM=$OUTDIR/summary.txt
: >"$LOG"
t_start=$(date +%s)
say() { echo "$*" | tee -a "$LOG"; }
stage() { say ""; say "== $* ($(($(date +%s) - t_start)) s)"; }

# ---- libraries and binaries ------------------------------------------------------------
# A library the binaries cannot find is looked for in BUILD_DIR/lib, then in
# PyTorch's nvidia-* wheels (nvidia.nccl, nvidia.cublas, nvidia.cuda_runtime).
LIBS=""
[ -d "$BUILD/lib" ] && LIBS="$root/$BUILD/lib"
[ -n "$LIBS" ] && export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pylib() { # package: prepend its lib/ folder
    d=$(python3 -c "import nvidia.$1, os; print(os.path.join(list(nvidia.$1.__path__)[0], 'lib'))" 2>/dev/null)
    [ -n "$d" ] && [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
if [ -x "$BUILD/gpu/gpu_kernels" ]; then
    missing=$(ldd "$BUILD/gpu/gpu_kernels" 2>/dev/null | grep 'not found')
    case "$missing" in *libnccl*) pylib nccl ;; esac
    case "$missing" in *libcublas*) pylib cublas ;; esac
    case "$missing" in *libcudart*) pylib cuda_runtime ;; esac
fi

# one process, one rank: NCCL's bootstrap needs no network beyond loopback
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"

loads() { [ -x "$1" ] && ! ldd "$1" 2>/dev/null | grep -q 'not found'; }
PROGS="gpu_kernels gpu_nn gpu_optim gpu_bench gpu_train"
need_build=0
for p in $PROGS; do loads "$BUILD/gpu/$p" || need_build=1; done
loads "$BUILD/fp8plan" || need_build=1
if [ "$need_build" = 1 ]; then
    stage "build: make gpu-build (binaries missing or not loadable here)"
    if ! make -j"$(nproc 2>/dev/null || echo 4)" gpu-build BUILD="$BUILD" >>"$LOG" 2>&1; then
        tail -n 30 "$LOG"
        echo "gpu-check: the build failed here; build elsewhere with 'make gpu-build' and carry $BUILD" >&2
        exit 70
    fi
fi

# ---- environment --------------------------------------------------------------------------
stage "environment"
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null ||
        echo "selftest (no GPU)"
    command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 1
    python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1 | tail -n 1
    echo "git $(git rev-parse --short HEAD 2>/dev/null) layers=$LAYERS tokens=$TOKENS steps=$STEPS seed=$SEED"
} >"$OUTDIR/env.tmp" 2>&1
cat "$OUTDIR/env.tmp" | tee -a "$LOG"

status=0
run_stage() { # seconds name command... — the limit is cut to what is left of the budget
    limit=$1 name=$2
    shift 2
    left=$((BUDGET - ($(date +%s) - t_start)))
    [ "$left" -lt "$limit" ] && limit=$left
    if [ "$limit" -lt 10 ]; then
        say "$name: skipped, the ${BUDGET} s budget is spent"
        status=1
        return 124
    fi
    say "-- $name (limit $limit s)"
    timeout "$limit" "$@" >>"$LOG" 2>&1
    rc=$?
    [ $rc -eq 124 ] && say "$name: stopped at its $limit s limit"
    [ $rc -ne 0 ] && say "$name: exit $rc" && status=1
    return $rc
}

# ---- 1. checks ----------------------------------------------------------------------------------
stage "checks: kernels against the CPU reference, tiny-model losses"
for p in gpu_kernels gpu_nn gpu_optim; do
    run_stage 90 "$p" "$BUILD/gpu/$p" "$OUTDIR/$p.csv" "$SEED"
done
run_stage 60 "gpu_train (tiny model)" "$BUILD/gpu/gpu_train" "$OUTDIR/train_loss.csv" - 0 "$TOKENS" "$STEPS" "$SEED"

# ---- 2. GEMM sweep and kernels ----------------------------------------------------------------------
stage "gemm: cuBLASLt sweep (FP8 vs BF16) and memory-bound kernels"
run_stage 120 gpu_bench "$BUILD/gpu/gpu_bench" "$OUTDIR/gemm.csv" "$OUTDIR/membound.csv" "$TOKENS" "$SEED"

# ---- 3. PyTorch (before the steps: it is quick; the steps take what is left) ------------------------
stage "torch: the same layer stack in BF16 and the GEMM shapes through torch"
run_stage 120 torch_baseline env PYTHONUNBUFFERED=1 python3 tests/gpu/torch_baseline.py "$OUTDIR/torch.csv" \
    --layers "$LAYERS" --tokens "$TOKENS" --steps "$STEPS"

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
: >"$OUTDIR/run.csv"
if "$BUILD/fp8plan" run --help >/dev/null 2>&1; then
    for r in megatron-bf16 te-fp8 fp8lm; do
        # shellcheck disable=SC2086 # RUN_MODEL is a list of flags
        run_stage 110 "fp8plan run $r" "$BUILD/fp8plan" run $RUN_MODEL --recipe "$r" --steps "$STEPS" \
            --seed "$SEED" --log-every 4 -o "$OUTDIR/run_$r.tmp"
        if [ -f "$OUTDIR/run_$r.tmp" ]; then
            { echo "# recipe $r"; cat "$OUTDIR/run_$r.tmp"; } >>"$OUTDIR/run.csv"
            rm -f "$OUTDIR/run_$r.tmp"
        fi
    done
else
    say "fp8plan run is not in this build: gpu_train times the steps (no plan comparison)"
    run_stage 300 "gpu_train (steps)" env FP8PLAN_GPU_TRAIN_SPEED_ONLY=1 "$BUILD/gpu/gpu_train" - "$OUTDIR/steps.csv" \
        "$LAYERS" "$TOKENS" "$STEPS" "$SEED"
fi

# ---- merge the check tables (8 files at most come back from a device call) ------------------------------
{
    head -n 1 "$OUTDIR/gpu_kernels.csv" 2>/dev/null
    for f in gpu_kernels gpu_nn gpu_optim train_loss; do tail -n +2 "$OUTDIR/$f.csv" 2>/dev/null; done
} >"$OUTDIR/checks.csv"
rm -f "$OUTDIR/gpu_kernels.csv" "$OUTDIR/gpu_nn.csv" "$OUTDIR/gpu_optim.csv" "$OUTDIR/train_loss.csv"
[ -s "$OUTDIR/run.csv" ] || rm -f "$OUTDIR/run.csv"

sh tests/gpu/gpu_summary.sh "$OUTDIR" "$(($(date +%s) - t_start))" >"$SUM" 2>>"$LOG"
rm -f "$OUTDIR/env.tmp" "$OUTDIR"/*.tmp.* "$OUTDIR"/*.tmp # a stage stopped at its limit leaves its temporary file
cat "$SUM"
exit $status
