#!/bin/sh
# tests/cli/cuda_static.sh — ordering rules of the CUDA backend that a grep can
# hold (no GPU needed): every copy and memset goes on the backend's stream
# (the Async forms with a stream argument), never on the legacy default stream,
# which does not order with the backend's non-blocking stream; kernel launches
# are held to the same by nvcc's -Werror default-stream-launch (Makefile).
. "$(dirname "$0")/../lib.sh"
root=${FP8PLAN_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
legacy=$(grep -nE '\bcuda(Memset|Memcpy|Memcpy2D|Memcpy3D|MemcpyToSymbol|MemcpyFromSymbol)\(' exec/cuda/*.cu exec/cuda/*.h 2>/dev/null)
if [ -z "$legacy" ]; then pass "no cudaMemset/cudaMemcpy on the legacy stream in exec/cuda"; else fail "legacy-stream calls" "$legacy"; fi
nostream=$(grep -nE '\bcuda(Memset|Memcpy)Async\([^;]*\);' exec/cuda/*.cu | grep -vE 'stream\)|->stream|im->stream' || true)
if [ -z "$nostream" ]; then pass "every Async copy and memset names a stream"; else fail "Async call without the backend's stream" "$nostream"; fi
if grep -q 'default-stream-launch' Makefile; then pass "nvcc rejects default-stream kernel launches"; else fail "Makefile lost -Werror default-stream-launch"; fi
finish
