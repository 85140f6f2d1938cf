# tests/cli/mpi_resume.sh — a multi-rank run resumed from its checkpoint continues bit for bit, with
# and without sharded states, with tensor or pipeline parallel ranks, and with data-parallel ranks
# beside them (rank grids). Rank 0 writes the checkpoint; a ZeRO-1 state is gathered there (over the
# DP group) and written whole (exec/ckpt/ckpt.h), and on resume every rank takes its own elements; the
# parts of the TP x PP places are written side by side, one per place (exec/ckpt/ckpt_layout.h).
# With experts: a part per expert-parallel rank, each holding its own experts, and multi-token prediction;
# with sharded states (the experts' gathered over their EDP group) and with --tp (a place per TP x EP pair).
# With --etp (format version 9): a part per (EP, ETP) place, each holding its experts' ETP shards; each FP8 recipe.
# tier: full (make test-full, which .ci/run runs): 98 mpirun runs (18 added with --etp: 7 m 15 s in all at load 21);
# before them 80 (3 of tiny-mtp at tp 2), about 90 s alone before the 27 with experts
# sharded or at tp 2; 5 m 33 s in all at load 10; 6 more with experts at tp 2, sharded and over stages
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
# its i32 layer, before the u64: -1, a record of no one block (a shard spans them all)
rec_layer() { # FILE NAME: the layer of the first record named NAME
    local off
    off=$(grep -abo "$2" "$1" | head -1 | cut -d: -f1)
    [ -n "$off" ] && od -An -t d4 -j $((off - 12)) -N 4 "$1" | tr -d ' '
}
expect_eq "the master shard's record: layer -1" "$(rec_layer "$TMP/ck.bin" master.shard)" -1
expect_eq "the Adam v shard's record: layer -1" "$(rec_layer "$TMP/ck.bin" adam_v.shard)" -1

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
# tensor and pipeline parallelism (exec/ckpt/ckpt_layout.h): rank 0 writes every rank's part, each as that
# rank's own one-model image (TP slices, PP stages, their scaling banks and records); every rank
# takes its part back. FP8 recipes too: the amax histories and scales come back with the weights.
resumed 2 tiny-gpt te-fp8 --tp 2
resumed 2 tiny-gpt fp8lm --tp 2
resumed 2 tiny-gpt te-fp8-current --pp 2
resumed 2 tiny-gpt fp8lm --pp 2
resumed 2 tiny-gpt megatron-bf16 --pp 2
# the layout file (format version 8): "FP8PCKPT" (bytes 0-7), u32 version 8 at 8, tp at 12, pp at 16,
# dp at 20, ep at 24, parts (tp x pp x ep) at 28, then part 0's u64 length at 32 and its own image from 40
# on, which starts with the magic again
u32_at() { od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }
u64_at() { od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
head_of() { echo "$(u32_at "$1" 8) $(u32_at "$1" 12) $(u32_at "$1" 16) $(u32_at "$1" 20) $(u32_at "$1" 24) $(u32_at "$1" 28)"; }
expect_eq "pp 2 file: version 8, tp 1, pp 2, dp 1, ep 1, 2 parts" "$(head_of "$TMP/ck.bin")" "8 1 2 1 1 2"
expect_eq "pp 2 file: part 0's image starts at byte 40" "$(dd if="$TMP/ck.bin" bs=1 skip=40 count=8 2>/dev/null)" FP8PCKPT
# part 1 follows part 0: its length at 40 + len0, its image 8 bytes later
len0=$(u64_at "$TMP/ck.bin" 32)
expect_eq "pp 2 file: part 1's image after part 0's" \
    "$(dd if="$TMP/ck.bin" bs=1 skip=$((40 + len0 + 8)) count=8 2>/dev/null)" FP8PCKPT
# part 1's image is the last stage's: the version-7 header holds that rank's layers (1 of 2), the
# first field (recipe name 48 B after magic 8 and version 4: fields from 60) + 22 recipe fields
# x 8 B = the layers field at image byte 60 + 176 = 236
l1=$(u64_at "$TMP/ck.bin" $((40 + len0 + 8 + 236)))
expect_eq "pp 2 file: part 1 holds its stage's 1 layer" "$l1" 1
len1=$(u64_at "$TMP/ck.bin" $((40 + len0)))
expect_eq "pp 2 file: header, two parts and the checksum, nothing more" "$(wc -c <"$TMP/ck.bin" | tr -d ' ')" \
    $((32 + 8 + len0 + 8 + len1 + 8))

# a checkpoint resumes with the layout that wrote it: the parts are not gathered into the one-rank
# layout, so another layout is refused naming both
cp "$TMP/ck.bin" "$TMP/pp2.bin"
P="run --catalog $cat --model tiny-gpt --recipe megatron-bf16 --mbs 2 --gbs 8 --quiet --steps 1"
run $P --resume "$TMP/pp2.bin"
expect_rc "a pp 2 checkpoint on one rank: refused (65)" 65
expect_err "the layouts named" "checkpoint (format version 8) of a --tp 1 --pp 2 --dp 1 --ep 1 (2 ranks) run"
expect_err "this run's layout named" "this run is --tp 1 --pp 1 --dp 1 --ep 1 (1 rank): resume with the layout that wrote it"
mpi_run 2 "$FP8PLAN" $P --tp 2 --resume "$TMP/pp2.bin"
expect_rc "a pp 2 checkpoint in a tp 2 run: refused (65)" 65
expect_err "tp 2 named" "this run is --tp 2 --pp 1 --dp 1 --ep 1 (2 ranks)"
run $P --save "$TMP/one.bin"
mpi_run 2 "$FP8PLAN" $P --pp 2 --resume "$TMP/one.bin"
expect_rc "a one-rank checkpoint in a pp 2 run: refused (65)" 65
expect_err "the one-model format named" "checkpoint (format version 7) of a run without tensor, pipeline or expert parallelism"
# one byte of part 1 changed: every rank reads the whole file, the checksum says so
cp "$TMP/pp2.bin" "$TMP/bad.bin"
printf 'X' | dd of="$TMP/bad.bin" bs=1 seek=$((40 + len0 + 8 + 300)) conv=notrunc 2>/dev/null
mpi_run 2 "$FP8PLAN" $P --pp 2 --resume "$TMP/bad.bin"
expect_rc "a corrupted layout checkpoint: refused (65)" 65
expect_err "corruption named" "checksum mismatch"
# part 0's length (bytes 32-39) made 2^64 - 1: refused before anything that size is allocated
cp "$TMP/pp2.bin" "$TMP/bad.bin"
printf '\377\377\377\377\377\377\377\377' | dd of="$TMP/bad.bin" bs=1 seek=32 conv=notrunc 2>/dev/null
mpi_run 2 "$FP8PLAN" $P --pp 2 --resume "$TMP/bad.bin"
expect_rc "a part longer than the file: refused (65)" 65
expect_err "the part named" "part 0 (stage 0, tp rank 0) is 18446744073709551615 bytes, past the file's end"
# ---- rank grids: data-parallel ranks beside TP and/or PP ------------------------------------------
# the DP ranks of a TP x PP place hold its DP group rank 0's state (a sharded state's shards apart), so
# that rank writes the place's part, a sharded record gathered over its DP group; every DP rank
# resumes from its place's part, taking its own shard
resumed 4 tiny-gpt te-fp8 --tp 2
resumed 4 tiny-gpt megatron-bf16 --pp 2
resumed 4 tiny-gpt fp8lm --pp 2 --dist-opt
resumed 4 tiny-gpt te-fp8 --pp 2 --zero 1
resumed 4 tiny-gpt fp8lm --tp 2 --zero 1
resumed 4 tiny-gpt megatron-bf16 --tp 2 --zero 1
# dp 2 x tp 2: two parts (TP ranks 0 and 1), none from the DP replicas
expect_eq "dp 2 x tp 2 file: version 8, tp 2, pp 1, dp 2, ep 1, 2 parts" "$(head_of "$TMP/ck.bin")" "8 2 1 2 1 2"
len0=$(u64_at "$TMP/ck.bin" 32)
len1=$(u64_at "$TMP/ck.bin" $((40 + len0)))
expect_eq "dp 2 x tp 2 file: two parts and the checksum, nothing more" "$(wc -c <"$TMP/ck.bin" | tr -d ' ')" \
    $((32 + 8 + len0 + 8 + len1 + 8))
# a TP rank's linear weights: per layer QKV 96x32 + proj 32x32 + FC1 128x32 + FC2 32x128 = 12,288,
# 2 layers = 24,576, half on each TP rank = 12,288 elements; FP32 master 49,152 B, each DP rank holding
# half of it: the record holds the TP rank's whole class
expect_eq "dp 2 x tp 2 --zero 1: the master record is the DP group's whole class, 12,288 x 4 B" \
    "$(rec_bytes "$TMP/ck.bin" master.shard)" 49152
cp "$TMP/ck.bin" "$TMP/grid.bin"
# 8 ranks: tp 2 x pp 2 x dp 2, ZeRO-1 over each place's DP group
resumed 8 tiny-gpt megatron-bf16 --tp 2 --pp 2 --zero 1
expect_eq "tp 2 x pp 2 x dp 2 file: version 8, tp 2, pp 2, dp 2, ep 1, 4 parts" "$(head_of "$TMP/ck.bin")" "8 2 2 2 1 4"
# LLaMA-shaped (grouped-query attention: 6 heads, 2 KV heads, one per TP rank; SwiGLU, rotary, untied)
resumed 4 llama3-8b te-fp8 --layers 2 --hidden 36 --heads 6 --kv-heads 2 --ffn 50 --seq 8 --vocab 70 --tp 2 --zero 1

# another DP size is another layout: refused naming both
G="run --catalog $cat --model tiny-gpt --recipe megatron-bf16 --mbs 2 --gbs 8 --quiet --steps 1 --tp 2 --zero 1"
mpi_run 2 "$FP8PLAN" $G --resume "$TMP/grid.bin"
expect_rc "a dp 2 x tp 2 checkpoint in a tp 2 run: refused (65)" 65
expect_err "both layouts named" \
    "checkpoint (format version 8) of a --tp 2 --pp 1 --dp 2 --ep 1 (4 ranks) run, each tensor/pipeline/expert-parallel rank's part in that rank's layout; this run is --tp 2 --pp 1 --dp 1 --ep 1 (2 ranks)"
# a grid checkpoint cut short (in part 1) or with a byte changed: refused naming the file
head -c $((40 + len0 + 8 + len1 / 2)) "$TMP/grid.bin" >"$TMP/bad.bin"
mpi_run 4 "$FP8PLAN" $G --resume "$TMP/bad.bin"
expect_rc "a truncated grid checkpoint: refused (65)" 65
expect_err "the file and the cut part named" "$TMP/bad.bin: part 1 (stage 0, tp rank 1) is $len1 bytes, past the file's end"
# cut right after part 1: its length reaches exactly the file's end, which is not past it; what is
# missing is the checksum
head -c $((40 + len0 + 8 + len1)) "$TMP/grid.bin" >"$TMP/bad.bin"
mpi_run 4 "$FP8PLAN" $G --resume "$TMP/bad.bin"
expect_rc "a grid checkpoint without its checksum: refused (65)" 65
expect_err "the missing checksum said" "$TMP/bad.bin: truncated checkpoint ($((40 + len0 + 8 + len1)) bytes read)"
head -c $((40 + len0 + 8 + len1 + 4)) "$TMP/grid.bin" >"$TMP/bad.bin"
mpi_run 4 "$FP8PLAN" $G --resume "$TMP/bad.bin"
expect_rc "a grid checkpoint without its whole checksum: refused (65)" 65
expect_err "the file named" "$TMP/bad.bin: truncated checkpoint ($((40 + len0 + 8 + len1 + 4)) bytes read)"
# grid_patched OFFSET BYTES: bad.bin = grid.bin with BYTES (printf's escapes) written at OFFSET, resumed
grid_patched() {
    cp "$TMP/grid.bin" "$TMP/bad.bin"
    printf "$2" | dd of="$TMP/bad.bin" bs=1 seek="$1" conv=notrunc 2>/dev/null
    mpi_run 4 "$FP8PLAN" $G --resume "$TMP/bad.bin"
}
grid_patched $((40 + len0 + 8 + 400)) X
expect_rc "a corrupted grid checkpoint: refused (65)" 65
expect_err "the file named, corruption said" "$TMP/bad.bin: checksum mismatch"
# each header field read: dp (byte 20) and ep (byte 24) made 3 and 2 are other layouts; parts (byte 28) made 3
# is not tp x pp x ep
grid_patched 20 '\003'
expect_rc "dp field 3: refused (65)" 65
expect_err "dp field 3: the file's layout named" "of a --tp 2 --pp 1 --dp 3 --ep 1 (6 ranks) run"
grid_patched 24 '\002'
expect_rc "ep field 2: refused (65)" 65
expect_err "ep field 2: the file's layout named" "of a --tp 2 --pp 1 --dp 2 --ep 2 (4 ranks) run"
grid_patched 28 '\003'
expect_rc "parts field 3: refused (65)" 65
expect_err "parts field 3: said" "$TMP/bad.bin: the header says 3 parts for --tp 2 --pp 1 --ep 1 (2 expected): the file is corrupted"
# format versions 3 (a part for every rank, before grids), 4 (before expert-parallel parts), 6 (before a sigmoid
# router's bias became a buffer) and 10: refused naming the versions read
grid_patched 8 '\003'
expect_rc "a version-3 checkpoint: refused (65)" 65
expect_err "the versions named" "$TMP/bad.bin: checkpoint format version 3; this fp8plan reads version 7"
expect_err "and versions 8 and 9" "version 8 (tensor, pipeline or expert parallelism, with data-parallel ranks or without) and version 9 (with expert tensor parallelism)"
grid_patched 8 '\004'
expect_rc "a version-4 checkpoint: refused (65)" 65
expect_err "version 4: save it again" "version 4 came before expert-parallel parts; save it again"
grid_patched 8 '\006'
expect_rc "a version-6 checkpoint: refused (65)" 65
expect_err "version 6: save it again" "versions 5 and 6 kept a sigmoid router's bias as a parameter with optimizer states, not the FP32 buffer it is now; save it again"
grid_patched 8 '\012'
expect_rc "a version-10 checkpoint: refused (65)" 65
expect_err "a newer version named" "$TMP/bad.bin: checkpoint format version 10; this fp8plan reads"

# ---- mixture of experts: expert parallelism, multi-token prediction ------------------------------------
# An EP rank holds its own E/ep experts (their weights, master, Adam states, FP8 copies, block scales and
# scaling records) beside a replica of the rest (a sigmoid router's aux-loss-free bias included): the file
# keeps a part per EP rank (format version 8, parts = tp x pp x ep), each written by the place's first rank
# (dp_rank = ep_rank) as its own one-model image, whose header names the experts it holds. A run of 6 steps and
# one of 3 + 3 through a checkpoint must give the same losses (the MTP loss too, the loss log's third column)
# and, saved at the end, the same checkpoint, byte for byte: every parameter, state and scaling record.
# Models: tiny-moe is Mixtral shrunk (2 layers, hidden 64, 8 experts of FFN 224 top-2, softmax router);
# tiny-ds DeepSeek-style (3 layers, the first dense, 8 experts of FFN 32 top-2, a shared expert, a sigmoid
# router with 4 groups, top 2); tiny-mtp DeepSeek-V3 shrunk (latent attention, tiny-ds's experts, one MTP
# depth). The same rows as mpi_ep.sh's.
echo 'tiny-moe,2,64,224,4,1,16,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,0,224,0,softmax,0,0,0,0,0,0,0,0,"test model"' >>"$cat/models.csv"
echo 'tiny-ds,3,64,128,4,1,16,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,0,0,0,0,0,0,"test model"' >>"$cat/models.csv"
echo 'tiny-mtp,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,1,"test model"' >>"$cat/models.csv"
# tiny-moe-kv2: tiny-moe with 2 KV heads (tp 2 divides them), as in mpi_ep.sh
echo 'tiny-moe-kv2,2,64,224,4,2,16,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,0,224,0,softmax,0,0,0,0,0,0,0,0,"test model"' >>"$cat/models.csv"
# moe_resumed NP MODEL RECIPE [FLAGS]
moe_resumed() {
    local np=$1 model=$2 recipe=$3
    shift 3
    local tag="$np ranks, $model, $recipe${*:+ $*}"
    local R="run --catalog $cat --model $model --recipe $recipe --mbs 1 --gbs 4 --quiet $*"
    rm -f "$TMP/full.ck" "$TMP/end.ck"
    mpi_run "$np" "$FP8PLAN" $R --steps 6 --loss-log "$TMP/full.csv" --save "$TMP/full.ck"
    expect_rc "$tag: 6 steps and --save exit 0" 0
    mpi_run "$np" "$FP8PLAN" $R --steps 3 --save "$TMP/ck.bin" --loss-log "$TMP/a.csv"
    expect_rc "$tag: 3 steps and --save exit 0" 0
    mpi_run "$np" "$FP8PLAN" $R --steps 3 --resume "$TMP/ck.bin" --loss-log "$TMP/b.csv" --save "$TMP/end.ck"
    expect_rc "$tag: --resume, 3 more and --save exit 0" 0
    { cat "$TMP/a.csv"; tail -n +2 "$TMP/b.csv"; } >"$TMP/joined.csv"
    expect_eq "$tag: resumed = uninterrupted, bit for bit" "$(cmp -s "$TMP/full.csv" "$TMP/joined.csv" && echo same)" same
    expect_eq "$tag: 6 steps logged" "$(tail -n +2 "$TMP/joined.csv" | wc -l | tr -d ' ')" 6
    expect_eq "$tag: the checkpoints after step 6, byte for byte" "$(cmp -s "$TMP/full.ck" "$TMP/end.ck" && echo same)" same
}
moe_resumed 2 tiny-moe megatron-bf16 --ep 2
moe_resumed 2 tiny-moe te-fp8 --ep 2
moe_resumed 4 tiny-ds te-fp8-current --ep 2
moe_resumed 1 tiny-mtp megatron-bf16
expect_eq "tiny-mtp: the MTP loss logged" "$(head -1 "$TMP/joined.csv")" "step,loss,mtp_loss"
moe_resumed 2 tiny-mtp te-fp8 --ep 2
moe_resumed 2 tiny-mtp deepseek-v3 --ep 2
# the ep 2 file: version 8, tp 1, pp 1, dp 2, ep 2, two parts (EP ranks 0 and 1); part 1's image holds experts
# 4 .. 7: its "first expert held", the image's 56th field (60 + 55 x 8 = 500), is 4 (part 0's 0)
expect_eq "ep 2 file: version 8, tp 1, pp 1, dp 2, ep 2, 2 parts" "$(head_of "$TMP/ck.bin")" "8 1 1 2 2 2"
len0=$(u64_at "$TMP/ck.bin" 32)
expect_eq "ep 2 file: part 0 holds from expert 0, part 1 from expert 4" \
    "$(u64_at "$TMP/ck.bin" $((40 + 500))) $(u64_at "$TMP/ck.bin" $((40 + len0 + 8 + 500)))" "0 4"
cp "$TMP/ck.bin" "$TMP/ep2.bin"
# latent attention and MTP at tp 2 (each TP rank's part: its heads of q_up, kv_up and the output projection, its
# eh_proj columns, the duplicated down-projections whole): 3 + 3 = 6 steps and the final checkpoint byte for byte
moe_resumed 2 tiny-mtp megatron-bf16 --tp 2
# another --ep, or another expert count or top-k, is refused naming the checkpoint and the difference, exit 65
E="run --catalog $cat --model tiny-mtp --recipe deepseek-v3 --mbs 1 --gbs 4 --quiet --steps 1"
mpi_run 2 "$FP8PLAN" $E --resume "$TMP/ep2.bin"
expect_rc "an ep 2 checkpoint at ep 1: refused (65)" 65
expect_err "ep 2 at ep 1: both layouts named" "$TMP/ep2.bin: checkpoint (format version 8) of a --tp 1 --pp 1 --dp 2 --ep 2 (2 ranks) run, each tensor/pipeline/expert-parallel rank's part in that rank's layout; this run is --tp 1 --pp 1 --dp 2 --ep 1 (2 ranks)"
mpi_run 4 "$FP8PLAN" $E --ep 4 --resume "$TMP/ep2.bin"
expect_rc "an ep 2 checkpoint at ep 4: refused (65)" 65
expect_err "ep 2 at ep 4: this run named" "this run is --tp 1 --pp 1 --dp 4 --ep 4 (4 ranks)"
mpi_run 2 "$FP8PLAN" $E --ep 2 --experts 4 --resume "$TMP/ep2.bin"
expect_rc "an 8-expert checkpoint with --experts 4: refused (65)" 65
expect_err "the expert counts named" "$TMP/ep2.bin: checkpoint has experts 8, this run has 4"
mpi_run 2 "$FP8PLAN" $E --ep 2 --topk 1 --resume "$TMP/ep2.bin"
expect_rc "a top-2 checkpoint with --topk 1: refused (65)" 65
expect_err "the top-k named" "$TMP/ep2.bin: checkpoint has experts per token 2, this run has 1"
mpi_run 2 "$FP8PLAN" $E --ep 2 --mtp-weight 0.1 --resume "$TMP/ep2.bin"
expect_rc "another --mtp-weight: refused (65)" 65
expect_err "the MTP weight named" "$TMP/ep2.bin: checkpoint was trained with MTP weight 0.3 (--mtp-weight); this run has 0.1"
run $E --save "$TMP/one.bin"
mpi_run 2 "$FP8PLAN" $E --ep 2 --resume "$TMP/one.bin"
expect_rc "a one-rank checkpoint at ep 2: refused (65)" 65
expect_err "the one-model format named" "$TMP/one.bin: checkpoint (format version 7) of a run without tensor, pipeline or expert parallelism; this run is --tp 1 --pp 1 --dp 2 --ep 2 (2 ranks)"

# ---- experts with sharded states, and experts with tensor parallelism --------------------------------
# --ep with --zero 1 / --dist-opt: each EP rank's place (dp_rank = ep_rank) writes its part, the dense states'
# shards gathered there over the DP group and its experts' over its EDP group (exec/ckpt/ckpt.c put_shard), so
# every part is whole; on resume each rank takes its own shard of its place's part. Over pipeline stages too.
moe_resumed 4 tiny-ds megatron-bf16 --ep 2 --zero 1
cp "$TMP/ck.bin" "$TMP/epz.bin"
moe_resumed 4 tiny-moe te-fp8 --ep 2 --dist-opt
moe_resumed 8 tiny-ds te-fp8 --pp 2 --ep 2 --zero 1 --first-stage-layers 1
# parts PATH: each part's "first expert held" (image byte 500, above), one line; parts_len PATH: their lengths
parts() {
    local off=32 n i out=""
    n=$(u32_at "$1" 28)
    for i in $(seq 1 "$n"); do
        out="$out${out:+ }$(u64_at "$1" $((off + 8 + 500)))"
        off=$((off + 8 + $(u64_at "$1" "$off")))
    done
    echo "$out"
}
# tiny-ds at np 4 ep 2 --zero 1: two parts (EP ranks 0 and 1), each with the whole states of its groups: the
# others' FP32 master 34,240 x 4 = 136,960 B (dp 4 ranks hold 34,240 B each; the sigmoid routers' biases, 2 layers
# x 8, are FP32 buffers beside it, whole in each part) and the experts' 2 MoE layers x 4
# experts x 6,144 = 49,152 x 4 = 196,608 B (edp 2 ranks hold 98,304 B each) — in both parts
expect_eq "ep 2 --zero 1 file: version 8, tp 1, pp 1, dp 4, ep 2, 2 parts" "$(head_of "$TMP/epz.bin")" "8 1 1 4 2 2"
expect_eq "ep 2 --zero 1 file: part 0 holds from expert 0, part 1 from expert 4" "$(parts "$TMP/epz.bin")" "0 4"
rec_all() { # FILE NAME: the byte count of every record named NAME (one per part)
    grep -abo "$2" "$1" | cut -d: -f1 | while read -r off; do od -An -t u8 -j $((off - 8)) -N 8 "$1" | tr -d ' '; done |
        tr '\n' ' ' | sed 's/ $//'
}
expect_eq "ep 2 --zero 1 file: each part's other-parameter master is the DP group's whole, 34,240 x 4 B" \
    "$(rec_all "$TMP/epz.bin" other.master.shard)" "136960 136960"
expect_eq "ep 2 --zero 1 file: each part's expert master is its EDP group's whole, 49,152 x 4 B" \
    "$(rec_all "$TMP/epz.bin" expert.master.shard)" "196608 196608"
# ... resumed unsharded: the records are not the run's (refused, 65), nor at another dp
Z="run --catalog $cat --model tiny-ds --recipe megatron-bf16 --mbs 1 --gbs 4 --quiet --steps 1"
mpi_run 4 "$FP8PLAN" $Z --ep 2 --resume "$TMP/epz.bin"
expect_rc "an ep 2 --zero 1 checkpoint resumed unsharded: refused (65)" 65
expect_err "the records counted" "$TMP/epz.bin: checkpoint holds"
mpi_run 2 "$FP8PLAN" $Z --ep 2 --zero 1 --resume "$TMP/epz.bin"
expect_rc "an np 4 ep 2 --zero 1 checkpoint at np 2: refused (65)" 65
expect_err "both layouts named" "of a --tp 1 --pp 1 --dp 4 --ep 2 (4 ranks) run"
# Experts with --tp: a TP rank holds its attention slices and, sequence-parallel, the experts of its EP rank
# (ep 1: all of them) whole. The expert side folds over the stage's tp x dp ranks ep fastest, so a stage's rank
# within = tp_rank + tp x dp_rank is TP rank within mod tp and EP rank within mod ep: the places are the first
# lcm(tp, ep) ranks of a stage, a part each (exec/ckpt/ckpt_layout.h). tp 2 at ep 1: the two TP ranks, each
# with all 8 experts; tp 2 x ep 2: ranks 0 and 1 (TP ranks 0, 1 = EP ranks 0, 1), 2 parts; tp 2 x dp 2 x ep 4:
# ranks 0..3 (TP ranks 0 1 0 1, EP ranks 0 1 2 3), 4 parts.
moe_resumed 2 tiny-moe-kv2 megatron-bf16 --tp 2
expect_eq "tp 2 file: version 8, tp 2, pp 1, dp 1, ep 1, 2 parts" "$(head_of "$TMP/ck.bin")" "8 2 1 1 1 2"
expect_eq "tp 2 file: both parts hold every expert" "$(parts "$TMP/ck.bin")" "0 0"
moe_resumed 2 tiny-moe-kv2 megatron-bf16 --tp 2 --ep 2
expect_eq "tp 2 x ep 2 file: version 8, tp 2, pp 1, dp 1, ep 2, 2 parts" "$(head_of "$TMP/ck.bin")" "8 2 1 1 2 2"
expect_eq "tp 2 x ep 2 file: parts from experts 0 and 4" "$(parts "$TMP/ck.bin")" "0 4"
moe_resumed 4 tiny-moe-kv2 megatron-bf16 --tp 2 --ep 2
expect_eq "tp 2 x dp 2 x ep 2 file: 2 parts (ranks 2, 3 replicas)" "$(head_of "$TMP/ck.bin")" "8 2 1 2 2 2"
moe_resumed 4 tiny-moe-kv2 megatron-bf16 --tp 2 --ep 4
expect_eq "tp 2 x dp 2 x ep 4 file: version 8, tp 2, pp 1, dp 2, ep 4, 4 parts" "$(head_of "$TMP/ck.bin")" "8 2 1 2 4 4"
expect_eq "tp 2 x dp 2 x ep 4 file: parts from experts 0, 2, 4, 6" "$(parts "$TMP/ck.bin")" "0 2 4 6"
cp "$TMP/ck.bin" "$TMP/tpep.bin"
# with sharded states (the experts' over their EDP group of tp x dp / ep ranks: at tp 2 x dp 1 both TP ranks, whose
# shards the parts gather) and over pipeline stages
moe_resumed 2 tiny-moe-kv2 megatron-bf16 --tp 2 --zero 1
moe_resumed 4 tiny-moe-kv2 te-fp8 --tp 2 --pp 2 --dist-opt
K="run --catalog $cat --model tiny-moe-kv2 --recipe megatron-bf16 --mbs 1 --gbs 4 --quiet --steps 1 --tp 2"
mpi_run 4 "$FP8PLAN" $K --ep 2 --resume "$TMP/tpep.bin"
expect_rc "a tp 2 x ep 4 checkpoint at ep 2: refused (65)" 65
expect_err "both layouts named" "of a --tp 2 --pp 1 --dp 2 --ep 4 (4 ranks) run, each tensor/pipeline/expert-parallel rank's part in that rank's layout; this run is --tp 2 --pp 1 --dp 2 --ep 2 (4 ranks)"
# part 2 (ep rank 2, tp rank 0) cut short: named so; the parts field made 8 (tp x pp x ep, not the 4 places)
len0=$(u64_at "$TMP/tpep.bin" 32)
len1=$(u64_at "$TMP/tpep.bin" $((40 + len0)))
at2=$((40 + len0 + 8 + len1))
len2=$(u64_at "$TMP/tpep.bin" "$at2")
head -c $((at2 + 8 + len2 / 2)) "$TMP/tpep.bin" >"$TMP/bad.bin"
mpi_run 4 "$FP8PLAN" $K --ep 4 --resume "$TMP/bad.bin"
expect_rc "a truncated tp 2 x ep 4 checkpoint: refused (65)" 65
expect_err "the cut part named" "$TMP/bad.bin: part 2 (stage 0, ep rank 2, tp rank 0) is $len2 bytes, past the file's end"
cp "$TMP/tpep.bin" "$TMP/bad.bin"
printf '\010' | dd of="$TMP/bad.bin" bs=1 seek=28 conv=notrunc 2>/dev/null
mpi_run 4 "$FP8PLAN" $K --ep 4 --resume "$TMP/bad.bin"
expect_rc "tp 2 x ep 4, parts field 8: refused (65)" 65
expect_err "parts field 8: said" "$TMP/bad.bin: the header says 8 parts for --tp 2 --pp 1 --ep 4 (4 expected): the file is corrupted"
cp "$TMP/tpep.bin" "$TMP/bad.bin"
printf 'X' | dd of="$TMP/bad.bin" bs=1 seek=$((at2 + 8 + 600)) conv=notrunc 2>/dev/null
mpi_run 4 "$FP8PLAN" $K --ep 4 --resume "$TMP/bad.bin"
expect_rc "a corrupted tp 2 x ep 4 checkpoint: refused (65)" 65
expect_err "corruption named" "$TMP/bad.bin: checksum mismatch"

# Experts split over --etp (format version 9, exec/ckpt/ckpt_layout.h): the expert side folds a stage's ranks
# etp x ep x edp, etp fastest, so the places are its first lcm(tp, ep x etp) ranks, a part each holding its
# experts' ETP shard (FC1's half of the gate and up rows, FC2's half of the columns, their states, FP8 copies and
# scaling records) beside the dense replica; the header gains etp after ep. ep 1 x etp 2 at np 2: ranks 0 and 1
# (ETP ranks 0, 1), both parts from expert 0; ep 2 x etp 2 at np 4: ranks 0..3 (ETP 0 1 0 1, EP 0 0 1 1), 4 parts
# from experts 0 0 4 4; with --zero 1 at np 4 ep 1 x etp 2 the experts' shards are gathered over the EDP group of
# the ranks 2 apart, each part whole. Each FP8 recipe once: 3 + 3 steps = 6, and the final checkpoint, byte for byte.
hd9() { echo "$(head_of "$1") $(u32_at "$1" 32)"; } # version 9: tp pp dp ep etp parts
parts9() { # the parts' "first expert held", as parts() for version 9's header (4 bytes longer)
    local off=36 n i out=""
    n=$(u32_at "$1" 32)
    for i in $(seq 1 "$n"); do
        out="$out${out:+ }$(u64_at "$1" $((off + 8 + 500)))"
        off=$((off + 8 + $(u64_at "$1" "$off")))
    done
    echo "$out"
}
moe_resumed 2 tiny-moe megatron-bf16 --etp 2
expect_eq "ep 1 x etp 2 file: version 9, tp 1, pp 1, dp 2, ep 1, etp 2, 2 parts" "$(hd9 "$TMP/ck.bin")" "9 1 1 2 1 2 2"
expect_eq "ep 1 x etp 2 file: both parts from expert 0" "$(parts9 "$TMP/ck.bin")" "0 0"
moe_resumed 4 tiny-moe te-fp8 --ep 2 --etp 2
expect_eq "ep 2 x etp 2 file: version 9, tp 1, pp 1, dp 4, ep 2, etp 2, 4 parts" "$(hd9 "$TMP/ck.bin")" "9 1 1 4 2 2 4"
expect_eq "ep 2 x etp 2 file: parts from experts 0 0 4 4" "$(parts9 "$TMP/ck.bin")" "0 0 4 4"
cp "$TMP/ck.bin" "$TMP/etp.bin"
moe_resumed 4 tiny-ds te-fp8-current --etp 2 --zero 1
moe_resumed 4 tiny-mtp deepseek-v3 --ep 2 --etp 2
# another --etp or --ep, or an etp 1 file at etp 2, refused naming both layouts (65); a corrupted header or part
X="run --catalog $cat --model tiny-moe --recipe te-fp8 --mbs 1 --gbs 4 --quiet --steps 1"
mpi_run 4 "$FP8PLAN" $X --ep 4 --resume "$TMP/etp.bin"
expect_rc "an ep 2 x etp 2 checkpoint at ep 4: refused (65)" 65
expect_err "ep 2 x etp 2 at ep 4: both layouts named" "$TMP/etp.bin: checkpoint (format version 9) of a --tp 1 --pp 1 --dp 4 --ep 2 --etp 2 (4 ranks) run, each tensor/pipeline/expert-parallel rank's part in that rank's layout; this run is --tp 1 --pp 1 --dp 4 --ep 4 (4 ranks)"
mpi_run 4 "$FP8PLAN" $X --etp 4 --resume "$TMP/etp.bin"
expect_rc "an ep 2 x etp 2 checkpoint at ep 1 x etp 4: refused (65)" 65
expect_err "this run's --etp named" "this run is --tp 1 --pp 1 --dp 4 --ep 1 --etp 4 (4 ranks)"
mpi_run 2 "$FP8PLAN" run --catalog "$cat" --model tiny-mtp --recipe deepseek-v3 --mbs 1 --gbs 4 --quiet --steps 1 \
    --etp 2 --resume "$TMP/ep2.bin"
expect_rc "an ep 2 checkpoint (version 8) at etp 2: refused (65)" 65
expect_err "ep 2 at etp 2: both layouts named" "$TMP/ep2.bin: checkpoint (format version 8) of a --tp 1 --pp 1 --dp 2 --ep 2 (2 ranks) run, each tensor/pipeline/expert-parallel rank's part in that rank's layout; this run is --tp 1 --pp 1 --dp 2 --ep 1 --etp 2 (2 ranks)"
cp "$TMP/etp.bin" "$TMP/bad.bin"
printf '\003' | dd of="$TMP/bad.bin" bs=1 seek=32 conv=notrunc 2>/dev/null
mpi_run 4 "$FP8PLAN" $X --ep 2 --etp 2 --resume "$TMP/bad.bin"
expect_rc "ep 2 x etp 2, parts field 3: refused (65)" 65
expect_err "parts field 3: said" "$TMP/bad.bin: the header says 3 parts for --tp 1 --pp 1 --ep 2 --etp 2 (4 expected): the file is corrupted"
len0=$(u64_at "$TMP/etp.bin" 36)
len1=$(u64_at "$TMP/etp.bin" $((44 + len0)))
at2=$((44 + len0 + 8 + len1))
head -c $((at2 + 8 + 100)) "$TMP/etp.bin" >"$TMP/bad.bin"
mpi_run 4 "$FP8PLAN" $X --ep 2 --etp 2 --resume "$TMP/bad.bin"
expect_rc "a truncated ep 2 x etp 2 checkpoint: refused (65)" 65
expect_err "the cut part named" "$TMP/bad.bin: part 2 (stage 0, ep rank 1, etp rank 0, tp rank 0) is $(u64_at "$TMP/etp.bin" "$at2") bytes, past the file's end"
cp "$TMP/etp.bin" "$TMP/bad.bin"
printf 'X' | dd of="$TMP/bad.bin" bs=1 seek=$((at2 + 8 + 600)) conv=notrunc 2>/dev/null
mpi_run 4 "$FP8PLAN" $X --ep 2 --etp 2 --resume "$TMP/bad.bin"
expect_rc "a corrupted ep 2 x etp 2 checkpoint: refused (65)" 65
expect_err "corruption named" "$TMP/bad.bin: checksum mismatch"
mpi_run 4 "$FP8PLAN" $X --ep 2 --etp 2 --resume "$TMP/none.bin"
expect_rc "a missing checkpoint: refused (66)" 66

# delayed scaling whose amaxes are not reduced over the DP ranks leaves each DP rank its own histories
# and scales, which a checkpoint (one copy per DP group) does not hold: refused before any step, and
# nothing written (measured without the check: 15 + 15 differs from 30 from step 16 on)
awk -F, 'BEGIN { OFS = "," } $1 == "te-fp8" { $1 = "te-fp8-local"; $18 = "none"; print }' "$cat/recipes.csv" >"$TMP/row"
cat "$TMP/row" >>"$cat/recipes.csv"
expect_eq "te-fp8-local: te-fp8 with amax_reduce none" "$(cut -d, -f1,14,18 "$TMP/row")" "te-fp8-local,delayed,none"
rm -f "$TMP/local.bin" "$TMP/local.csv"
mpi_run 2 "$FP8PLAN" run --catalog "$cat" --model tiny-gpt --recipe te-fp8-local --mbs 2 --gbs 8 --quiet --steps 2 \
    --save "$TMP/local.bin" --loss-log "$TMP/local.csv"
expect_rc "te-fp8-local at dp 2 --save: refused (64)" 64
expect_err "the reason" "recipe te-fp8-local reduces its delayed-scaling amaxes over 'none' only, so each of the 2 data-parallel ranks"
expect_eq "no checkpoint written" "$([ -e "$TMP/local.bin" ] && echo written || echo none)" none
# (a refusal at the save, after the steps, would leave the committed loss log of the 2 steps)
expect_eq "refused before the first step: no loss log" "$([ -e "$TMP/local.csv" ] && echo written || echo none)" none
finish
