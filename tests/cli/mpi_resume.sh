# tests/cli/mpi_resume.sh — a multi-rank run resumed from its checkpoint continues bit for bit, with
# and without sharded states, and with tensor or pipeline parallel ranks. Rank 0 writes the
# checkpoint; a ZeRO-1 state is gathered there and written whole (exec/ckpt.h), and on resume every
# rank takes its own elements; TP/PP ranks' parts are written side by side (exec/ckpt_layout.h).
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_require
cat=$TMP/cat
mpi_catalog "$cat"

# resumed NP MODEL RECIPE [FLAGS]: 30 steps in one go, then 15 + 15 through a checkpoint; the two
# loss logs (the second's header dropped) must be the same bytes
resumed() {
    local np=$1 model=$2 recipe=$3
    shift 3
    local tag="$np ranks, $model, $recipe${*:+ $*}"
    local R="run --catalog $cat --model $model --recipe $recipe --mbs 2 --gbs 8 --quiet $*"
    mpi_run "$np" "$FP8PLAN" $R --steps 30 --loss-log "$TMP/full.csv"
    expect_rc "$tag: 30 steps exit 0" 0
    mpi_run "$np" "$FP8PLAN" $R --steps 15 --save "$TMP/ck.bin" --loss-log "$TMP/a.csv"
    expect_rc "$tag: 15 steps and --save exit 0" 0
    mpi_run "$np" "$FP8PLAN" $R --steps 15 --resume "$TMP/ck.bin" --loss-log "$TMP/b.csv"
    expect_rc "$tag: --resume and 15 more exit 0" 0
    { cat "$TMP/a.csv"; tail -n +2 "$TMP/b.csv"; } >"$TMP/joined.csv"
    expect_eq "$tag: resumed = uninterrupted, bit for bit" "$(cmp -s "$TMP/full.csv" "$TMP/joined.csv" && echo same)" same
    expect_eq "$tag: 30 steps logged" "$(tail -n +2 "$TMP/joined.csv" | wc -l | tr -d ' ')" 30
}

# plain data parallelism: every rank holds the same state, rank 0's checkpoint is everyone's
resumed 2 tiny-gpt megatron-bf16
resumed 4 tiny-gpt te-fp8
# ZeRO-1: each rank's master, m and v shard come back from the gathered whole state
# fp8lm sharded: the FP16 master / E4M3 m / FP16 v shards and their agreed scaling records come
# back; the resumed run gathers its E4M3 copies again before the first forward (not a plan collective)
resumed 2 tiny-gpt fp8lm --zero 1
resumed 4 tiny-gpt fp8lm --dist-opt
resumed 2 tiny-odd te-fp8 --zero 1
resumed 4 tiny-gpt megatron-bf16 --zero 1
resumed 4 tiny-odd megatron-bf16 --dist-opt

# the record of a sharded state holds the whole class: tiny-odd's linear weights 8,778 elements
# (QKV 99x33 + proj 33x33 + FC1 67x33 + FC2 33x67) and the others 4,819 (mpi_zero.sh), FP32:
# 35,112 and 19,276 bytes, though each of the 4 ranks holds only ceil(E / 4) of them. A record is
# u32 term, u32 dtype, i32 layer, u64 bytes, 32-byte name, data: the u64 ends where the name begins.
rec_bytes() { # FILE NAME: the byte count of the first record named NAME
    local off
    off=$(grep -abo "$2" "$1" | head -1 | cut -d: -f1)
    [ -n "$off" ] && od -An -t u8 -j $((off - 8)) -N 8 "$1" | tr -d ' '
}
expect_eq "the gathered master record: 8,778 x 4 B" "$(rec_bytes "$TMP/ck.bin" master.shard)" 35112
expect_eq "the gathered other-parameter master record: 4,819 x 4 B" "$(rec_bytes "$TMP/ck.bin" other.master.shard)" 19276

# a sharded checkpoint is not a plain run's: tiny-odd has 16 parameter tensors (wte, wpe, final LN
# w and b; per layer LN1 w, b, QKV w, b, proj w, b, LN2 w, b, FC1 w, b, FC2 w, b); megatron-bf16 keeps
# 5 states of each, 80 records unsharded; sharded, weight and gradient per tensor (32) plus master,
# m and v per class (6): 38
mpi_run 4 "$FP8PLAN" run --catalog "$cat" --model tiny-odd --recipe megatron-bf16 --mbs 2 --gbs 8 --quiet \
    --steps 1 --resume "$TMP/ck.bin"
expect_rc "a sharded checkpoint resumed unsharded: refused (65)" 65
expect_err "the records counted" "checkpoint holds 38 tensors, this model has 80"

# a rank that cannot write stops every rank, sharded too (the others hand their shards over first)
mpi_run 2 "$FP8PLAN" run --catalog "$cat" --model tiny-gpt --recipe megatron-bf16 --mbs 2 --gbs 8 --quiet \
    --steps 2 --zero 1 --save /dev/full
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then pass "--zero 1 --save /dev/full ends the job (exit $rc)"; else fail "--zero 1 --save /dev/full ends the job" "exit status $rc"; fi
expect_err "the failing rank named" "rank 0 of 2 failed (exit 74)"
# tensor and pipeline parallelism (exec/ckpt_layout.h): rank 0 writes every rank's part, each as that
# rank's own one-model image (TP slices, PP stages, their scaling banks and records); every rank
# takes its part back. FP8 recipes too: the amax histories and scales come back with the weights.
resumed 2 tiny-gpt te-fp8 --tp 2
resumed 2 tiny-gpt fp8lm --tp 2
resumed 2 tiny-gpt te-fp8-current --pp 2
resumed 2 tiny-gpt fp8lm --pp 2
resumed 2 tiny-gpt megatron-bf16 --pp 2
# the layout file: "FP8PCKPT" (bytes 0-7), u32 version 3 at 8, tp at 12, pp at 16, ranks at 20, then
# rank 0's part: its u64 length at 24 and its own image from 32 on, which starts with the magic again
u32_at() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
expect_eq "pp 2 file: version 3, tp 1, pp 2, 2 ranks" \
    "$(u32_at "$TMP/ck.bin" 8) $(u32_at "$TMP/ck.bin" 12) $(u32_at "$TMP/ck.bin" 16) $(u32_at "$TMP/ck.bin" 20)" "3 1 2 2"
expect_eq "pp 2 file: rank 0's image starts at byte 32" "$(dd if="$TMP/ck.bin" bs=1 skip=32 count=8 2>/dev/null)" FP8PCKPT
# rank 1's part follows rank 0's: its length at 32 + len0, its image 8 bytes later
len0=$(od -An -t u8 -j 24 -N 8 "$TMP/ck.bin" | tr -d ' ')
expect_eq "pp 2 file: rank 1's image after rank 0's" \
    "$(dd if="$TMP/ck.bin" bs=1 skip=$((32 + len0 + 8)) count=8 2>/dev/null)" FP8PCKPT
# rank 1's image is the last stage's: the version-2 header holds that rank's layers (1 of 2), the
# first field (recipe name 48 B after magic 8 and version 4: fields from 60) + 22 recipe fields
# x 8 B = the layers field at image byte 60 + 176 = 236
l1=$(od -An -t u8 -j $((32 + len0 + 8 + 236)) -N 8 "$TMP/ck.bin" | tr -d ' ')
expect_eq "pp 2 file: rank 1's part holds its stage's 1 layer" "$l1" 1

# a checkpoint resumes with the layout that wrote it: the parts are not gathered into the one-rank
# layout, so another layout is refused naming both
cp "$TMP/ck.bin" "$TMP/pp2.bin"
P="run --catalog $cat --model tiny-gpt --recipe megatron-bf16 --mbs 2 --gbs 8 --quiet --steps 1"
run $P --resume "$TMP/pp2.bin"
expect_rc "a pp 2 checkpoint on one rank: refused (65)" 65
expect_err "the layouts named" "checkpoint (format version 3) of a --tp 1 --pp 2 over 2 ranks run"
expect_err "this run's layout named" "this run is --tp 1 --pp 1 over 1 rank: resume with the layout that wrote it"
mpi_run 2 "$FP8PLAN" $P --tp 2 --resume "$TMP/pp2.bin"
expect_rc "a pp 2 checkpoint in a tp 2 run: refused (65)" 65
expect_err "tp 2 named" "this run is --tp 2 --pp 1 over 2 ranks"
run $P --save "$TMP/one.bin"
mpi_run 2 "$FP8PLAN" $P --pp 2 --resume "$TMP/one.bin"
expect_rc "a one-rank checkpoint in a pp 2 run: refused (65)" 65
expect_err "the one-model format named" "checkpoint (format version 2) of a run without tensor or pipeline parallelism"
# one byte of rank 1's part changed: every rank reads the whole file, the checksum says so
cp "$TMP/pp2.bin" "$TMP/bad.bin"
printf 'X' | dd of="$TMP/bad.bin" bs=1 seek=$((32 + len0 + 8 + 300)) conv=notrunc 2>/dev/null
mpi_run 2 "$FP8PLAN" $P --pp 2 --resume "$TMP/bad.bin"
expect_rc "a corrupted layout checkpoint: refused (65)" 65
expect_err "corruption named" "checksum mismatch"
# rank 0's part length (bytes 24-31) made 2^64 - 1: refused before anything that size is allocated
cp "$TMP/pp2.bin" "$TMP/bad.bin"
printf '\377\377\377\377\377\377\377\377' | dd of="$TMP/bad.bin" bs=1 seek=24 conv=notrunc 2>/dev/null
mpi_run 2 "$FP8PLAN" $P --pp 2 --resume "$TMP/bad.bin"
expect_rc "a part longer than the file: refused (65)" 65
expect_err "the part named" "rank 0's part is 18446744073709551615 bytes, past the file's end"
finish
