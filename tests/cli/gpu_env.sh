#!/bin/sh
# tests/cli/gpu_env.sh — the GPU check's environment logic without a GPU: the
# functions of tests/gpu/gpu_env.sh and gpu_check.sh's early stops, driven by
# fakes on PATH (nvidia-smi, ldd, python3, make) and fake library folders; and
# the Makefile's GPU targets (make -n / refusals: nothing is built).
. "$(dirname "$0")/../lib.sh"
build=$(dirname "$FP8PLAN")
root=${FP8PLAN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$root/tests/gpu/gpu_env.sh"
bin=$TMP/bin
mkdir -p "$bin"
fake() { # name body: an executable shim on $bin
    printf '#!/bin/sh\n%s\n' "$2" >"$bin/$1"
    chmod +x "$bin/$1"
}

# ---- paths -------------------------------------------------------------------------------
expect_eq "ge_abs keeps an absolute path" "$(ge_abs /x/build)" "/x/build"
expect_eq "ge_abs anchors a relative one at the caller" "$(cd "$TMP" && ge_abs b/uild)" "$TMP/b/uild"

# ---- driver CUDA version against the runtime ------------------------------------------------
fake nvidia-smi 'cat <<X
| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |
X'
expect_eq "driver CUDA from nvidia-smi's banner" "$(PATH=$bin:$PATH ge_driver_cuda)" "12.4"
fake nvidia-smi 'echo "| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |"'
expect_eq "driver CUDA 13.0" "$(PATH=$bin:$PATH ge_driver_cuda)" "13.0"
why=$(ge_cuda_ok 12.4 13.0)
rc=$?
expect_eq "a CUDA 12.4 driver cannot run a 13.0 build" "$rc" 1
case "$why" in *"supports CUDA 12.4, older than the CUDA 13.0 runtime"*) pass "it says why in one line" ;; *) fail "it says why" "$why" ;; esac
for ok in "13.0 13.0" "13.0 13.1" "13.2 13.0" "14.0 13.0"; do
    # shellcheck disable=SC2086 # two words
    if ge_cuda_ok $ok >/dev/null; then pass "driver/runtime $ok runs"; else fail "driver/runtime $ok should run"; fi
done
if ge_cuda_ok "" 13.0 >/dev/null; then fail "an unknown driver version passes"; else pass "an unknown driver version stops"; fi

# ---- libraries: exactly the sonames a CUDA 13 build needs, from PyTorch's wheels ---------------
w=$TMP/site/nvidia
mkdir -p "$w/cublas/lib" "$w/cu13/lib" "$w/nccl/lib"
: >"$w/cublas/lib/libcublasLt.so.12" # a CUDA 12 wheel's: must not count
: >"$w/cu13/lib/libcublasLt.so.13"
: >"$w/nccl/lib/libnccl.so.2"
expect_eq "find the .so.13" "$(ge_find_lib libcublasLt.so.13 "$w/cublas/lib" "$w/cu13/lib")" "$w/cu13/lib"
if ge_find_lib libcublasLt.so.13 "$w/cublas/lib" >/dev/null; then fail "a .so.12 stood in for .so.13"; else pass "a .so.12 does not stand in for .so.13"; fi
fake python3 "printf '%s\n' '$w/cu13/lib' '$w/cublas/lib' '$w/nccl/lib'"
fake ldd 'case "$1" in *needs13*) printf "\tlibcublasLt.so.13 => not found\n\tlibnccl.so.2 => not found\n\tlibc.so.6 => /lib/libc.so.6\n" ;; *needs14*) printf "\tlibcublasLt.so.14 => not found\n" ;; esac'
out=$(PATH=$bin:$PATH LD_LIBRARY_PATH=/keep ge_resolve_libs /x/needs13 && PATH=$bin:$PATH LD_LIBRARY_PATH=/keep sh -c ". '$root/tests/gpu/gpu_env.sh'; ge_resolve_libs /x/needs13 >/dev/null; echo \$LD_LIBRARY_PATH")
case "$out" in *"libcublasLt.so.13: $w/cu13/lib"*"libnccl.so.2: $w/nccl/lib"*) pass "missing libraries found in the wheels" ;; *) fail "missing libraries found in the wheels" "$out" ;; esac
case "$(echo "$out" | tail -n 1)" in "$w/nccl/lib:$w/cu13/lib:/keep") pass "their folders lead LD_LIBRARY_PATH" ;; *) fail "LD_LIBRARY_PATH" "$(echo "$out" | tail -n 1)" ;; esac
out=$(PATH=$bin:$PATH ge_resolve_libs /x/needs14)
rc=$?
expect_eq "a soname no wheel has is an error" "$rc" 1
case "$out" in *"libcublasLt.so.14: not found"*) pass "it is named" ;; *) fail "it is named" "$out" ;; esac

# ---- every program exists, loads and runs --version ----------------------------------------------
fb=$TMP/fakebuild
mkdir -p "$fb/gpu"
printf '#!/bin/sh\necho "p: cuda runtime built 13.0 loaded 13.0"\n' >"$fb/gpu/good"
printf '#!/bin/sh\necho "no device library" >&2; exit 127\n' >"$fb/gpu/broken"
printf '#!/bin/sh\nexit 0\n' >"$fb/gpu/needs13"
chmod +x "$fb/gpu/good" "$fb/gpu/broken" "$fb/gpu/needs13"
out=$(PATH=$bin:$PATH ge_check_programs "$fb" gpu/good gpu/absent gpu/broken gpu/needs13)
rc=$?
expect_eq "ge_check_programs fails on bad programs" "$rc" 1
case "$out" in *"gpu/absent: missing"*) pass "a missing program is named" ;; *) fail "missing program" "$out" ;; esac
case "$out" in *"gpu/broken: "*"--version failed: no device library"*) pass "a program whose --version fails is named" ;; *) fail "--version failure" "$out" ;; esac
case "$out" in *"gpu/needs13: cannot load, missing libcublasLt.so.13"*) pass "an unloadable program is named with its library" ;; *) fail "unloadable program" "$out" ;; esac
case "$out" in *good*) fail "a good program was reported" "$out" ;; *) pass "a good program passes" ;; esac
expect_eq "the runtime a program was built with" "$(ge_runtime_of "$fb/gpu/good")" "13.0"
printf '#!/bin/sh\necho "p: cuda driver 12.8"\n' >"$fb/gpu/drv"
printf '#!/bin/sh\necho "p: cuda driver 0.0 (none)"\n' >"$fb/gpu/nodrv"
chmod +x "$fb/gpu/drv" "$fb/gpu/nodrv"
expect_eq "the driver as a program sees it (cudaDriverGetVersion)" "$(ge_driver_of "$fb/gpu/drv")" "12.8"
expect_empty "no driver: empty" "$(ge_driver_of "$fb/gpu/nodrv")"

# ---- gpu_check.sh stops before any stage -----------------------------------------------------------
fake nvidia-smi 'case "$1" in -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-0)" ;; --query-gpu*) echo "NVIDIA H200, 143771 MiB" ;; *) echo "| NVIDIA-SMI 550.54.15  Driver Version: 550.54.15  CUDA Version: 12.4 |" ;; esac'
if [ -x "$build/gpu/gpu_kernels" ]; then
    PATH=$bin:$PATH GPU_CHECK_OUT=$TMP/old sh "$root/tests/gpu/gpu_check.sh" "$build" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    expect_rc "an older driver stops the check (69)" 69
    expect_err "in one clear line" "the NVIDIA driver supports CUDA 12.4, older than the CUDA 13.0 runtime"
    if [ -f "$TMP/old/checks.csv" ] || grep -q '^-- gpu_kernels' "$TMP/old/log.txt" 2>/dev/null; then
        fail "a stage ran with an old driver"
    else
        pass "no stage ran"
    fi
else
    skip_build "driver check end to end" "no GPU programs in $build"
fi
# programs missing and the build fails / succeeds without them: 70, one line, nothing run
fake make 'exit 2'
mkdir -p "$TMP/empty"
GPU_CHECK_SELFTEST=1 PATH=$bin:$PATH GPU_CHECK_OUT=$TMP/nb sh "$root/tests/gpu/gpu_check.sh" "$TMP/empty" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "programs missing and the build fails: 70" 70
expect_err "says the build failed" "the build failed here"
fake make 'exit 0'
GPU_CHECK_SELFTEST=1 PATH=$bin:$PATH GPU_CHECK_OUT=$TMP/nb2 sh "$root/tests/gpu/gpu_check.sh" "$TMP/empty" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "still missing after gpu-build: 70" 70
expect_err "names the programs" "program(s) cannot run here, first: fp8plan: missing"
if grep -q '^== checks' "$TMP/out"; then fail "a stage ran without its programs"; else pass "no stage ran without its programs"; fi
rm -f "$bin/make"

# ---- the Makefile's GPU targets ---------------------------------------------------------------------
cd "$root" || exit 1
# a fresh make: not the settings of the make that runs this test (make test SAN=... passes them down)
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES SAN FUZZ CUDA TUI NCCL_HOME
make --no-print-directory gpu-build CUDA=0 BUILD="$TMP/mk0" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "gpu-build needs the CUDA compiler" "$TMP/err"; then pass "gpu-build without CUDA stops, saying so"; else fail "gpu-build CUDA=0" "rc $rc: $(cat "$TMP/err")"; fi
if [ -d "$TMP/mk0" ]; then fail "gpu-build CUDA=0 built something"; else pass "and builds nothing"; fi
if [ -x /usr/local/cuda/bin/nvcc ] || [ -x "${CUDA_HOME:-/nonexistent}/bin/nvcc" ]; then
    make -n --no-print-directory TUI=0 BUILD="$TMP/mk1" "$TMP/mk1/fp8plan" >"$TMP/out" 2>"$TMP/err"
    link=$(grep -- "-o $TMP/mk1/fp8plan" "$TMP/out")
    case "$link" in *ncursesw*) fail "TUI=0 links ncurses" "$link" ;; "") fail "TUI=0: no link line" "$(tail -3 "$TMP/err")" ;; *) pass "TUI=0 links no ncurses" ;; esac
    if grep -q "cli/notui/cmd_tui.c" "$TMP/out" && ! grep -q " tui/[a-z_]*\.c" "$TMP/out"; then pass "TUI=0 builds the stub, not tui/"; else fail "TUI=0 sources"; fi
    if grep -q "ncurses.h" "$TMP/out"; then fail "TUI=0 checks for ncurses headers"; else pass "TUI=0 does not ask for ncurses"; fi
    if grep -q "tmux" "$TMP/out"; then fail "building fp8plan asks for tmux"; else pass "building asks for no tmux"; fi
    # NCCL: NCCL_HOME wins and is named; an NCCL_HOME without NCCL is an error, not a silent drop
    n=$TMP/nccl
    mkdir -p "$n/include" "$n/lib"
    : >"$n/include/nccl.h"
    : >"$n/lib/libnccl.so.2"
    # (NCCL is linked into the CUDA backend's library, libfp8plan_cuda.so, which fp8plan loads on demand)
    make -n --no-print-directory NCCL_HOME="$n" BUILD="$TMP/mk2" "$TMP/mk2/libfp8plan_cuda.so" >"$TMP/out" 2>"$TMP/err"
    if grep -- "-o $TMP/mk2/libfp8plan_cuda.so" "$TMP/out" | grep -q "$n/lib/libnccl.so.2"; then pass "NCCL_HOME's library is linked"; else fail "NCCL_HOME" "$(tail -3 "$TMP/err")"; fi
    if grep -q "NCCL from NCCL_HOME" "$TMP/out"; then pass "the build says which NCCL"; else fail "which NCCL is not said"; fi
    make -n --no-print-directory NCCL_HOME="$TMP/empty" BUILD="$TMP/mk3" "$TMP/mk3/fp8plan" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ $rc -ne 0 ] && grep -q "NCCL was not found" "$TMP/err"; then pass "no NCCL stops the CUDA build, saying so"; else fail "no NCCL" "rc $rc"; fi
    # the nvidia-nccl wheel, when the toolkit and the system have none
    wn=$TMP/site2/nvidia/nccl
    mkdir -p "$wn/include" "$wn/lib" "$TMP/cudahome/bin"
    : >"$wn/include/nccl.h"
    : >"$wn/lib/libnccl.so.2"
    ln -s "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)" "$TMP/cudahome/bin/nvcc"
    fake python3 "echo '$wn'"
    if [ ! -f /usr/include/nccl.h ]; then
        PATH=$bin:$PATH make -n --no-print-directory CUDA_HOME="$TMP/cudahome" BUILD="$TMP/mk4" "$TMP/mk4/libfp8plan_cuda.so" >"$TMP/out" 2>"$TMP/err"
        if grep -q "NCCL from the nvidia-nccl wheel" "$TMP/out" && grep -- "-o $TMP/mk4/libfp8plan_cuda.so" "$TMP/out" | grep -q "$wn/lib/libnccl.so.2"; then
            pass "the wheel's NCCL is found and named"
        else
            fail "wheel NCCL" "$(tail -3 "$TMP/err")"
        fi
    else
        echo "skip - wheel NCCL (this machine has /usr/include/nccl.h, which comes first)"
    fi
else
    echo "skip - Makefile CUDA probes (no nvcc here)"
fi

# ---- the Makefile's own output: quiet by default (`make run` printed ~190 compile commands before its
# answer), V=1 echoes the commands, the compiler's warnings and errors are shown either way (one object
# each, compiled for real into a scratch build)
mk=$TMP/mk5
make --no-print-directory CUDA=0 TUI=0 BUILD="$mk" "$mk/obj/util/num.o" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "make of one object exits 0" 0
if grep -q -- "-c util/num.c" "$TMP/out" "$TMP/err"; then fail "a quiet build echoes no compile command" "$(grep -- "-c util/num.c" "$TMP/out")"; else pass "a quiet build echoes no compile command"; fi
make --no-print-directory CUDA=0 TUI=0 BUILD="$mk" V=1 "$mk/obj/util/text.o" >"$TMP/out" 2>"$TMP/err"
if grep -q -- "-c util/text.c -o $mk/obj/util/text.o" "$TMP/out"; then pass "V=1 echoes the compile command"; else fail "V=1 echoes the compile command" "$(cat "$TMP/out")"; fi
printf '#warning "the quiet build shows this warning"\n' >"$TMP/warn.h"
make --no-print-directory CUDA=0 TUI=0 BUILD="$mk" CFLAGS="-include $TMP/warn.h" "$mk/obj/util/status.o" >"$TMP/out" 2>"$TMP/err"
if grep -q "the quiet build shows this warning" "$TMP/err"; then pass "a quiet build shows the compiler's warnings"; else fail "a quiet build shows the compiler's warnings" "$(cat "$TMP/err")"; fi
rm -f "$mk/obj/util/status.o"
make --no-print-directory CUDA=0 TUI=0 BUILD="$mk" CFLAGS="-include $TMP/no-such-header.h" "$mk/obj/util/status.o" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ] && grep -q "no-such-header.h" "$TMP/err"; then pass "a quiet build shows the compiler's errors and fails"; else fail "a quiet build shows the compiler's errors" "rc $rc: $(cat "$TMP/err")"; fi
finish
