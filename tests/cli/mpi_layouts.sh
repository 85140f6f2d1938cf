# tests/cli/mpi_layouts.sh — `fp8plan run` over rank grids: more than two pipeline stages, and TP, PP
# and DP beside each other (rank = tp_rank + tp x (dp_rank + dp x stage), exec/model/model_groups.c).
# Every rank's persistent memory and bytes per collective against the plan of its own stage, losses
# against one rank (or against the layout without its pipeline, which changes no arithmetic).
#
# Models (added to the test catalog, as tests/mpi_lib.sh adds tiny-gpt): tiny-gpt4 is tiny-gpt with 4
# layers (hidden 32, FFN 128, 2 heads, seq 16, vocab 64 padded to 128 (256 with TP 2: a multiple of
# 128 x tp), tied, learned positions, biases); tiny-llama4 is mpi_tp.sh's tiny-llama with 4 layers
# (FFN 96 SwiGLU, 4 heads / 2 KV heads, RoPE, untied, no biases). Micro-batch 2 x seq 16 = 32 tokens,
# global batch 8 sequences: 4 micro-batches a step over the DP ranks.
#
# Sizes used below, per block: linear weights QKV 3 x 32 x 32 + proj 32 x 32 + FC1 128 x 32 + FC2 32 x
# 128 = 12,288 elements (6,144 a TP-2 rank); other: 2 LayerNorms (weight + bias) 128 and biases 96 + 32
# + 128 + 32 = 288: 416 (TP 2: the column-parallel biases halve, QKV 48, FC1 64: 128 + 176 = 304).
# tier: full (make test-full, which .ci/run runs): rank grids of up to 8 ranks, about 30 s alone
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_require
cat=$TMP/cat
mpi_catalog "$cat"
echo 'tiny-gpt4,4,32,128,2,2,16,64,16,layernorm,gelu,learned,yes,yes,,,,,,,,,,,,,,,,"test model"' >>"$cat/models.csv"
echo 'tiny-llama4,4,32,96,4,2,8,64,16,rmsnorm,swiglu,rope,no,no,,,,,,,,,,,,,,,,"test model"' >>"$cat/models.csv"
GPT="run --catalog $cat --model tiny-gpt4 --mbs 2 --gbs 8 --quiet"
LLAMA="run --catalog $cat --model tiny-llama4 --mbs 2 --gbs 8 --quiet"

# in_stage TABLE S REGEX: a line of stage S's block in the per-rank table whose title starts TABLE
# ("Persistent memory per rank" or "Collectives per rank") matches REGEX.
in_stage() {
    awk -v t="$1" -v s="  stage $2 (" 'index($0, t) == 1 { on = 1; next } on && /^$/ { on = 0 }
        on && index($0, "  stage ") == 1 { inside = index($0, s) == 1; next } on && inside' "$TMP/out" | grep -qE -- "$3"
}
stage_line() { # NAME TABLE S REGEX
    if in_stage "$2" "$3" "$4"; then pass "$1"; else fail "$1" "stage $3 of '$2' lacks: $4" "$(grep -A3 "  stage $3 (" "$TMP/out" | head -8)"; fi
}
mem() { stage_line "$1" "Persistent memory per rank" "$2" "$3"; }
coll() { stage_line "$1" "Collectives per rank" "$2" "$3"; }
same_curve() { # NAME LOGA LOGB: the same losses, bit for bit
    if [ "$(wc -l <"$2")" -gt 10 ] && cmp -s "$2" "$3"; then pass "$1"; else fail "$1" "$(diff "$2" "$3" | head -4)"; fi
}
within() { # NAME LOGA LOGB BOUND: max relative difference of the losses at most BOUND
    local r
    r=$(awk -F, 'NR == FNR { if (FNR > 1) a[$1] = $2; next } FNR > 1 { n++; d = $2 - a[$1]; if (d < 0) d = -d;
        d /= a[$1]; if (d > m) m = d } END { if (n >= 10) print m + 0; else print "n/a" }' "$2" "$3")
    if [ "$r" != n/a ] && awk -v r="$r" -v b="$4" 'BEGIN { exit !(r <= b) }'; then pass "$1 ($r)"; else fail "$1" "max relative difference: $r"; fi
}

# ---- PP 4: one layer a stage, middle stages receive and send both ways -------------------------
run $GPT --recipe megatron-bf16 --steps 20 --loss-log "$TMP/one.csv"
expect_rc "tiny-gpt4 one rank exits 0" 0
mpi_run 4 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 20 --pp 4 --loss-log "$TMP/pp4.csv" -o "$TMP/pp4-o.csv"
expect_rc "pp 4 exits 0 (every rank's memory and bytes as its stage's plan)" 0
# 1F1B over 4 stages: the backwards run micro-batch 0, 1, ... on every stage, as one rank accumulates
same_curve "pp 4: one rank's 20 losses bit for bit" "$TMP/one.csv" "$TMP/pp4.csv"
# A micro-batch's activation or its gradient: 32 tokens x hidden 32, BF16: 2,048 B. Stage 0 sends 4
# activations (8,192 B), stage 3 4 gradients (8,192), stages 1 and 2 both: 8 x 2,048 = 16,384.
coll "pp 4: stage 0 sends 4 activations" 0 '^  pp_send_recv +8192 +8192 +8192 +1/1 +exact'
coll "pp 4: stage 1 sends activations and gradients" 1 '^  pp_send_recv +16384 +16384 +16384 +1/1 +exact'
coll "pp 4: stage 2 sends activations and gradients" 2 '^  pp_send_recv +16384 +16384 +16384 +1/1 +exact'
coll "pp 4: stage 3 sends 4 gradients" 3 '^  pp_send_recv +8192 +8192 +8192 +1/1 +exact'
# The tied embedding's gradient, 128 x 32 FP32 = 16,384 B, all-reduced by stages 0 and 3 (2 ranks:
# 2 x 16,384 x 1/2 = 16,384 sent); the middle stages hold no copy.
coll "pp 4: stage 0's embedding gradient" 0 '^  emb_grad_allreduce +16384 +16384 +16384 +1/1 +exact'
coll "pp 4: stage 3's head gradient" 3 '^  emb_grad_allreduce +16384 +16384 +16384 +1/1 +exact'
coll "pp 4: no embedding all-reduce on a middle stage" 1 '^  emb_grad_allreduce +0 +0 +0 +1/1 +exact'
# Other weights, BF16: stage 0 the embedding 128 x 32 = 4,096, positions 16 x 32 = 512 and a block's
# 416: 5,024 elements, 10,048 B; a middle stage a block's 416: 832 B; stage 3 416 + the final LayerNorm
# 64 + its head copy 4,096 = 4,576: 9,152 B. Linear weights 12,288 x 2 = 24,576 B on every stage; FP32
# master other: stage 1 416 x 4 = 1,664.
mem "pp 4: stage 0's other weights" 0 '^  weight_other +10048 +10048 +10048 +1/1 +exact'
mem "pp 4: stage 1's other weights" 1 '^  weight_other +832 +832 +832 +1/1 +exact'
mem "pp 4: stage 2's other weights" 2 '^  weight_other +832 +832 +832 +1/1 +exact'
mem "pp 4: stage 3's other weights" 3 '^  weight_other +9152 +9152 +9152 +1/1 +exact'
mem "pp 4: stage 2's linear weights" 2 '^  weight_gemm +24576 +24576 +24576 +1/1 +exact'
mem "pp 4: stage 1's FP32 master of the other weights" 1 '^  master_other +1664 +1664 +1664 +1/1 +exact'
# Rank 0 (stage 0) keeps pp - 0 = 4 micro-batches in flight: 4 x 33,280 B of a block's saved BF16
# activations (mpi_pp.sh works out 33,280) = 133,120
expect_line "pp 4: stage 0's four micro-batches in flight" "memory +act_layer_hp +activation +133,120 +133,120 .*"
# -o: one row per rank x term / collective, against that rank's stage's plan
expect_eq "pp 4 -o: rank 2's other weights" "$(grep -c '^2,rank_memory,weight_other,state,832,832,' "$TMP/pp4-o.csv")" 1
expect_eq "pp 4 -o: rank 1's sends" "$(grep -c '^1,rank_comm,pp_send_recv,comm,16384,16384,' "$TMP/pp4-o.csv")" 1
expect_eq "pp 4 -o: rank 3's sends" "$(grep -c '^3,rank_comm,pp_send_recv,comm,8192,8192,' "$TMP/pp4-o.csv")" 1

# untied head, GQA, SwiGLU: no embedding all-reduce; the same sends (hidden 32)
run $LLAMA --recipe megatron-bf16 --steps 20 --loss-log "$TMP/l1.csv"
mpi_run 4 "$FP8PLAN" $LLAMA --recipe megatron-bf16 --steps 20 --pp 4 --loss-log "$TMP/l4.csv"
expect_rc "tiny-llama4 pp 4 exits 0" 0
same_curve "tiny-llama4 pp 4: one rank's 20 losses bit for bit" "$TMP/l1.csv" "$TMP/l4.csv"
coll "tiny-llama4 pp 4: a middle stage's sends" 2 '^  pp_send_recv +16384 +16384 +16384 +1/1 +exact'
if grep -q "emb_grad_allreduce" "$TMP/out"; then fail "tiny-llama4 pp 4: no embedding all-reduce (untied)"; else pass "tiny-llama4 pp 4: no embedding all-reduce (untied)"; fi

# FP8 over 4 stages: current scaling takes each cast's scale from its tensor (one rank's bits); delayed
# scaling reads the weights' FP8 copies at the next forward's scale (mpi_pp.sh): within 1e-3
run $GPT --recipe te-fp8-current --steps 20 --loss-log "$TMP/c1.csv"
mpi_run 4 "$FP8PLAN" $GPT --recipe te-fp8-current --steps 20 --pp 4 --loss-log "$TMP/c4.csv"
expect_rc "te-fp8-current pp 4 exits 0" 0
same_curve "te-fp8-current pp 4: one rank's 20 losses bit for bit" "$TMP/c1.csv" "$TMP/c4.csv"
run $GPT --recipe te-fp8 --steps 20 --loss-log "$TMP/f1.csv"
mpi_run 4 "$FP8PLAN" $GPT --recipe te-fp8 --steps 20 --pp 4 --loss-log "$TMP/f4.csv"
expect_rc "te-fp8 pp 4 exits 0" 0
within "te-fp8 pp 4 within 1e-3 of one rank" "$TMP/f1.csv" "$TMP/f4.csv" 1e-3

# Neighbouring stages send to each other at the same moment in 1F1B: with hidden 128 a message is 32 x
# 128 x 2 = 8 KiB, past OpenMPI's eager size, and blocking sends waited for each other forever (30 s
# timeout before sends were buffered, exec/comm/comm_mpi.c; 1 s now)
t=$MPI_TIMEOUT
MPI_TIMEOUT=30
mpi_run 4 "$FP8PLAN" $GPT --hidden 128 --recipe megatron-bf16 --steps 2 --pp 4
MPI_TIMEOUT=$t
expect_rc "pp 4 with 8 KiB messages finishes (no send waits on the other's)" 0

# ---- PP 2 x DP 2: ranks 0, 1 stage 0 (DP ranks 0, 1), ranks 2, 3 stage 1 ------------------------
mpi_run 2 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 20 --loss-log "$TMP/dp2.csv"
expect_rc "dp 2 exits 0" 0
mpi_run 4 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 20 --pp 2 --loss-log "$TMP/pp2dp2.csv"
expect_rc "pp 2 x dp 2 exits 0" 0
# a pipeline changes no arithmetic: DP 2's losses bit for bit (DP 2 itself sums two micro-batches per
# rank before the rank-order reduction: within mpi_run.sh's bound of one rank)
same_curve "pp 2 x dp 2: dp 2's 20 losses bit for bit" "$TMP/dp2.csv" "$TMP/pp2dp2.csv"
within "pp 2 x dp 2 within 1e-4 of one rank" "$TMP/one.csv" "$TMP/pp2dp2.csv" 1e-4
# 2 micro-batches a pipeline: 2 sends of 2,048 B a rank, both stages. The gradient all-reduce over the
# stage's 2 DP ranks, FP32: stage 0 linear 2 x 12,288 = 24,576 + other 4,096 + 512 + 2 x 416 = 5,440:
# 30,016 x 4 = 120,064 B (2 ranks send S x 2(n-1)/n = S); stage 1 other 2 x 416 + 64 + 4,096 = 4,992:
# 29,568 x 4 = 118,272 B
coll "pp 2 x dp 2: stage 0's sends" 0 '^  pp_send_recv +4096 +4096 +4096 +2/2 +exact'
coll "pp 2 x dp 2: stage 1's sends" 1 '^  pp_send_recv +4096 +4096 +4096 +2/2 +exact'
coll "pp 2 x dp 2: stage 0's gradient all-reduce over its DP group" 0 '^  dp_grad_allreduce +120064 +120064 +120064 +2/2 +exact'
coll "pp 2 x dp 2: stage 1's gradient all-reduce over its DP group" 1 '^  dp_grad_allreduce +118272 +118272 +118272 +2/2 +exact'
coll "pp 2 x dp 2: the embedding's gradient, both stages' ranks" 1 '^  emb_grad_allreduce +16384 +16384 +16384 +2/2 +exact'
mem "pp 2 x dp 2: stage 0's other weights (5,440 x 2)" 0 '^  weight_other +10880 +10880 +10880 +2/2 +exact'
mem "pp 2 x dp 2: stage 1's other weights (4,992 x 2)" 1 '^  weight_other +9984 +9984 +9984 +2/2 +exact'

# ---- TP 2 x PP 2: ranks 0, 1 stage 0 (TP ranks 0, 1), ranks 2, 3 stage 1 ------------------------
mpi_run 2 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 20 --tp 2 --loss-log "$TMP/tp2.csv"
expect_rc "tp 2 exits 0" 0
mpi_run 4 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 20 --tp 2 --pp 2 --loss-log "$TMP/tp2pp2.csv"
expect_rc "tp 2 x pp 2 exits 0" 0
same_curve "tp 2 x pp 2: tp 2's 20 losses bit for bit" "$TMP/tp2.csv" "$TMP/tp2pp2.csv"
# Per stage, 2 blocks x 4 micro-batches: the forward all-gathers and reduce-scatters (2 a block) move
# S = 32 x 32 x 2 = 2,048 B, each rank sending S/2: 16 x 1,024 = 16,384; the backward all-gathers 4 a
# block: 32,768. The pipeline sends Megatron's 1/tp scatter: 32 x 16 x 2 = 1,024 B, 4 a rank. The
# embedding shard's gradient, 256/2 x 32 FP32 = 16,384 B, between the stages' TP-rank pairs.
for s in 0 1; do
    coll "tp 2 x pp 2: stage $s's forward all-gathers" $s '^  tp_allgather_fwd +16384 +16384 +16384 +2/2 +exact'
    coll "tp 2 x pp 2: stage $s's backward all-gathers" $s '^  tp_allgather_bwd +32768 +32768 +32768 +2/2 +exact'
    coll "tp 2 x pp 2: stage $s's sends" $s '^  pp_send_recv +4096 +4096 +4096 +2/2 +exact'
    coll "tp 2 x pp 2: stage $s's embedding shard gradient" $s '^  emb_grad_allreduce +16384 +16384 +16384 +2/2 +exact'
done
# Other weights of a TP rank: stage 0 the embedding shard 128 x 32 = 4,096, positions 512, 2 x 304:
# 5,216, 10,432 B; stage 1 2 x 304 + 64 + the head shard 4,096 = 4,768: 9,536 B. Linear weights 2 x
# 6,144 x 2 = 24,576 B.
mem "tp 2 x pp 2: stage 0's other weights" 0 '^  weight_other +10432 +10432 +10432 +2/2 +exact'
mem "tp 2 x pp 2: stage 1's other weights" 1 '^  weight_other +9536 +9536 +9536 +2/2 +exact'
mem "tp 2 x pp 2: stage 1's linear weights" 1 '^  weight_gemm +24576 +24576 +24576 +2/2 +exact'

# ---- TP 2 x DP 2: ranks 0, 1 DP rank 0, ranks 2, 3 DP rank 1 ------------------------------------
mpi_run 4 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 20 --tp 2 --loss-log "$TMP/tp2dp2.csv"
expect_rc "tp 2 x dp 2 exits 0" 0
# TP's BF16 partial sums (mpi_tp.sh: 2e-4 for tiny-gpt) and DP's two micro-batches a rank
within "tp 2 x dp 2 within 2e-4 of one rank" "$TMP/one.csv" "$TMP/tp2dp2.csv" 2e-4
# 4 blocks x 2 micro-batches a DP rank: 16 forward all-gathers of 1,024 B sent; the gradient all-reduce
# over the 2 DP ranks of a TP rank, FP32: linear 4 x 6,144 = 24,576 + other 4,096 + 512 + 4 x 304 + 64 =
# 5,888: 30,464 x 4 = 121,856 B
# (one stage: no stage lines in the per-rank tables)
expect_line "tp 2 x dp 2: forward all-gathers over the TP group" "  tp_allgather_fwd +16384 +16384 +16384 +4/4 +exact"
expect_line "tp 2 x dp 2: the gradient all-reduce over the DP group" "  dp_grad_allreduce +121856 +121856 +121856 +4/4 +exact"
# te-fp8 reduces its amax over "all": the TP x DP group of 4. Per micro-batch the forward bank, 2 x 4
# linears x 4 blocks FP32 = 128 B, sends 128 x 2 x 3/4 = 192, the backward bank 64 B sends 96: 2
# micro-batches a DP rank: 576 B.
mpi_run 4 "$FP8PLAN" $GPT --recipe te-fp8 --steps 20 --tp 2 --loss-log "$TMP/ftp2dp2.csv"
expect_rc "te-fp8 tp 2 x dp 2 exits 0" 0
expect_line "te-fp8 tp 2 x dp 2: the amax over the TP x DP group" "  amax_allreduce +576 +576 +576 +4/4 +exact"
within "te-fp8 tp 2 x dp 2 within 1e-3 of one rank" "$TMP/f1.csv" "$TMP/ftp2dp2.csv" 1e-3

# ---- TP 2 x PP 2 x DP 2 (8 ranks), the distributed optimizer over each DP group -----------------
mpi_run 4 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 10 --tp 2 --zero 1 --loss-log "$TMP/z4.csv"
expect_rc "tp 2 x dp 2 --zero 1 exits 0" 0
mpi_run 8 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 10 --tp 2 --pp 2 --zero 1 --loss-log "$TMP/z8.csv"
expect_rc "tp 2 x pp 2 x dp 2 --zero 1 exits 0" 0
same_curve "tp 2 x pp 2 x dp 2: tp 2 x dp 2's 10 losses bit for bit" "$TMP/z4.csv" "$TMP/z8.csv"
# stage 0 of a TP rank: linear 2 x 6,144 = 12,288, other 5,216: FP32 gradients 17,504 x 4 = 70,016 B
# reduce-scattered over 2 DP ranks (S/2 = 35,008 sent), the BF16 weights all-gathered (35,008 B, 17,504
# sent); stage 1: 12,288 + 4,768 = 17,056: 68,224 B (34,112 sent), weights 34,112 B (17,056 sent).
# The FP32 master of the other weights, sharded: ceil(5,216 / 2) x 4 = 10,432 B (stage 0).
coll "3-d grid: stage 0's gradient reduce-scatter" 0 '^  dp_grad_reducescatter +35008 +35008 +35008 +4/4 +exact'
coll "3-d grid: stage 1's gradient reduce-scatter" 1 '^  dp_grad_reducescatter +34112 +34112 +34112 +4/4 +exact'
coll "3-d grid: stage 1's weight all-gather" 1 '^  dp_param_allgather +17056 +17056 +17056 +4/4 +exact'
mem "3-d grid: stage 0's sharded master of the other weights" 0 '^  master_other +10432 +10432 +10432 +4/4 +exact'
expect_out "3-d grid: every rank's bytes as planned" "every rank sent the plan's bytes, byte for byte"

# ---- refusals -------------------------------------------------------------------------------------
mpi_run 4 "$FP8PLAN" run --catalog "$cat" --model tiny-gpt --mbs 2 --gbs 8 --quiet --recipe megatron-bf16 --steps 1 --pp 4
expect_rc "--pp 4 on 2 layers exits 64" 64
expect_err "--pp 4 on 2 layers: the reason" "tiny-gpt has 2 layers, not divisible by pp*vpp = 4"
mpi_run 2 "$FP8PLAN" $GPT --recipe megatron-bf16 --steps 1 --tp 2 --pp 2
expect_rc "--tp 2 --pp 2 on 2 ranks exits 64" 64
expect_err "--tp 2 --pp 2 on 2 ranks: the reason" "--tp 2 x --pp 2 does not divide the 2 ranks mpirun started"
finish
