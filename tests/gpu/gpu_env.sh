# tests/gpu/gpu_env.sh — the environment checks of the GPU check, as functions
# (sourced by gpu_check.sh; tests/cli/gpu_env.sh drives them with a faked
# nvidia-smi, ldd and python3 on PATH). POSIX sh; each prints what it found on
# stdout and returns non-zero when something is wrong.

# An absolute path for $1, relative to the current directory.
ge_abs() {
    case "$1" in
    /*) echo "$1" ;;
    *) echo "$(pwd)/$1" ;;
    esac
}

# The CUDA version the driver supports ("13.0"), from nvidia-smi's banner; empty without one.
ge_driver_cuda() {
    nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1
}

# The driver's CUDA version as a GPU program sees it (cudaDriverGetVersion, in its
# --version); empty when it finds no driver.
ge_driver_of() {
    "$1" --version 2>/dev/null | sed -n 's/.*cuda driver \([1-9][0-9]*\.[0-9][0-9]*\)$/\1/p' | head -n 1
}

# The CUDA runtime a GPU program was built with ("13.0"), from its --version.
ge_runtime_of() {
    "$1" --version 2>/dev/null | sed -n 's/.*cuda runtime built \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -n 1
}

# Can a driver supporting CUDA $1 run binaries built with runtime $2? Yes when
# its major version is the runtime's or newer (CUDA's minor-version
# compatibility: any 13.x driver runs a 13.y runtime's SASS). Prints why not.
ge_cuda_ok() {
    d=$1 r=$2
    if [ -z "$d" ] || [ -z "$r" ]; then
        echo "cannot compare driver CUDA '${d:-?}' with runtime '${r:-?}'"
        return 1
    fi
    dmaj=${d%%.*} rmaj=${r%%.*}
    if [ "$dmaj" -lt "$rmaj" ]; then
        echo "the NVIDIA driver supports CUDA $d, older than the CUDA $r runtime these binaries were built with; update the driver (CUDA $rmaj needs its $rmaj.x driver) or rebuild with a CUDA $dmaj toolkit"
        return 1
    fi
    return 0
}

# Shared libraries a binary needs and the loader cannot find (sonames, one a line).
ge_missing_libs() {
    ldd "$1" 2>/dev/null | awk '/=> not found/ { print $1 }'
}

# The lib/ folders of PyTorch's nvidia-* wheels (nvidia/<pkg>/lib, nvidia/cu13/lib).
ge_wheel_dirs() {
    python3 -c '
import os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for p in list(nvidia.__path__):
    for d in sorted(os.listdir(p)):
        lib = os.path.join(p, d, "lib")
        if os.path.isdir(lib):
            print(lib)
' 2>/dev/null
}

# The folder among $2... that holds exactly the soname $1 (libcublasLt.so.13
# for a CUDA 13 build: a .so.12 of the same library does not count).
ge_find_lib() {
    so=$1
    shift
    for d in "$@"; do
        if [ -e "$d/$so" ]; then
            echo "$d"
            return 0
        fi
    done
    return 1
}

# Make the libraries binary $1 misses loadable: prepend to LD_LIBRARY_PATH the
# wheel folders that hold them. Prints one line per library found ("soname:
# folder"); returns 1 and names the ones found nowhere.
ge_resolve_libs() {
    miss=$(ge_missing_libs "$1")
    [ -z "$miss" ] && return 0
    dirs=$(ge_wheel_dirs)
    rc=0
    for so in $miss; do
        # shellcheck disable=SC2086 # dirs: one folder a line, no spaces in site-packages paths
        if d=$(ge_find_lib "$so" $dirs); then
            case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac
            export LD_LIBRARY_PATH
            echo "$so: $d"
        else
            echo "$so: not found (ldd; PyTorch's nvidia-* wheels: ${dirs:-none})"
            rc=1
        fi
    done
    return $rc
}

# Every program exists, loads (ldd: nothing missing) and runs --version.
# Prints one line per problem.
ge_check_programs() {
    build=$1
    shift
    bad=0
    for p in "$@"; do
        f=$build/$p
        if [ ! -x "$f" ]; then
            echo "$p: missing ($f)"
            bad=1
            continue
        fi
        m=$(ge_missing_libs "$f" | tr '\n' ' ')
        if [ -n "$m" ]; then
            echo "$p: cannot load, missing $m"
            bad=1
            continue
        fi
        if ! "$f" --version >/dev/null 2>&1; then
            echo "$p: $f --version failed: $("$f" --version 2>&1 | tail -n 1)"
            bad=1
        fi
    done
    return $bad
}

# Is PyTorch importable? Prints its version, or why not.
ge_torch() {
    python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -n 1
    python3 -c 'import torch' >/dev/null 2>&1
}
