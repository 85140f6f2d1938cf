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
# NCCL (exec/cuda/comm_nccl*.cu): every call on the communicator's own stream; no host synchronisation per
# call (only settle reads the events, only destroy waits for the stream; the all-to-all's counts exchange and
# agreement bring host data back as MPI's do, and a buffer in host memory is staged and waited for); every step of the order
# exec/comm/comm_nccl_rules.h gives has its case; no MPI in a CUDA translation unit (the bootstrap's MPI
# side is exec/comm/comm_nccl_boot.c).
calls=$(grep -nE '\bnccl(AllReduce|AllGather|ReduceScatter|Broadcast|Send|Recv)\(' exec/cuda/*.cu)
offstream=$(echo "$calls" | grep -v 'ni->ns->stream)' || true)
if [ -n "$calls" ] && [ -z "$offstream" ]; then pass "every NCCL call is issued on the NCCL stream ($(echo "$calls" | wc -l) calls)"; else fail "NCCL calls off the NCCL stream" "$offstream"; fi
syncs=$(awk '/^[A-Za-z].*\(/ { fn = $0 } /Synchronize\(/ { print FILENAME ": " fn }' exec/cuda/comm_nccl*.cu | grep -vE 'nccl_settle|nccl_destroy|exchange_counts|agree_min|even_host|nccl_all_to_all_v' || true)
if [ -z "$syncs" ]; then pass "no host synchronisation in an NCCL call (settle, destroy, and the host data an all-to-all brings back)"; else fail "host synchronisation in an NCCL call" "$syncs"; fi
missing=""
for step in $(sed -n 's/^ *\(NCS_[A-Z_]*\)\( = 1\)*,.*/\1/p; s/^ *\(NCS_[A-Z_]*\) *\/\*.*/\1/p' exec/comm/comm_nccl_rules.h | sort -u); do
    grep -q "case $step:" exec/cuda/comm_nccl.cu || missing="$missing $step"
done
if [ -z "$missing" ]; then pass "every step of comm_nccl_order has its case in comm_nccl.cu"; else fail "steps without a case" "$missing"; fi
mpi=$(grep -lE 'mpi\.h|MPI_[A-Z][a-z]' exec/cuda/* 2>/dev/null || true)
if [ -z "$mpi" ]; then pass "no MPI in the CUDA library's sources"; else fail "MPI in CUDA sources" "$mpi"; fi
finish
