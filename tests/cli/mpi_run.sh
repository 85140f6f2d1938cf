# tests/cli/mpi_run.sh — `mpirun -np N fp8plan run --backend cpu`: data parallelism on CPU
# ranks over MPI. A tiny GPT (tiny-gpt of tests/mpi_lib.sh: 2 layers, hidden 32, FFN 128, 2 heads, seq 16,
# vocab 64 padded to 128, tied, learned positions, biases), micro-batch 2, global batch 8.
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_require
cat=$TMP/cat
mpi_catalog "$cat"
RUN="run --catalog $cat --model tiny-gpt --mbs 2 --gbs 8 --quiet"

# max relative difference of two loss logs (step,loss), over all steps; "n/a" when their steps differ
maxrel() {
    awk -F, 'NR == FNR { if (FNR > 1) a[$1] = $2; next } FNR > 1 { n++; if (!($1 in a)) bad = 1; d = $2 - a[$1];
        if (d < 0) d = -d; r = d / (a[$1] < 0 ? -a[$1] : a[$1]); if (r > m) m = r }
        END { if (bad || n != 50) print "n/a"; else printf "%.3g\n", m }' "$1" "$2"
}

# one rank as before; --dp 1 starts MPI as a singleton and trains the same
run $RUN --recipe megatron-bf16 --steps 50 --loss-log "$TMP/one.csv"
expect_rc "one rank without mpirun exits 0" 0
run $RUN --recipe megatron-bf16 --steps 50 --dp 1 --loss-log "$TMP/single.csv"
expect_rc "--dp 1 outside mpirun (MPI singleton) exits 0" 0
expect_eq "--dp 1: the same losses as without MPI" "$(cmp -s "$TMP/one.csv" "$TMP/single.csv" && echo same)" same
run $RUN --recipe megatron-bf16 --steps 1 --dp 2
expect_rc "--dp 2 outside mpirun exits 64" 64
expect_err "--dp 2 outside mpirun: the reason" "--dp 2 needs 2 ranks (mpirun -np 2 fp8plan run ...); this run has 1"

# BF16 recipe (FP32 gradients, all-reduced in FP32): DP 2 runs 2 micro-batches per rank and sums
# ((g0 + g1) + (g2 + g3)) where one rank sums (((g0 + g1) + g2) + g3): within 1e-4 relative over
# 50 steps. DP 4 (one micro-batch per rank) folds in the one rank's order: the same bits.
mpi_run 2 "$FP8PLAN" $RUN --recipe megatron-bf16 --steps 50 --loss-log "$TMP/dp2.csv"
expect_rc "megatron-bf16 dp 2 exits 0" 0
r=$(maxrel "$TMP/one.csv" "$TMP/dp2.csv")
if [ "$r" != n/a ] && awk -v r="$r" 'BEGIN { exit !(r <= 1e-4) }'; then
    pass "megatron-bf16 dp 2 tracks one rank within 1e-4 relative over 50 steps ($r)"
else
    fail "megatron-bf16 dp 2 tracks one rank within 1e-4 relative over 50 steps" "max relative difference: $r"
fi
# bytes each rank sends per step, worked by hand: S = 4 B x (Vp*C + T*C + L*(per layer) + 2C) with
# per layer = 2C (LN1) + 3C*C + 3C (QKV) + C*C + C (proj) + 2C (LN2) + F*C + F (FC1) + C*F + C (FC2)
# = 64 + 3168 + 1056 + 64 + 4224 + 4128 = 12704: 4 x (4096 + 512 + 25408 + 64) = 120,320;
# all-reduce bus bytes S * 2(n-1)/n: dp 2 120,320, dp 4 180,480
expect_line "dp 2: each rank sent the plan's gradient bytes" \
    "  dp_grad_allreduce +120320 +120320 +120320 +2/2 +exact"
expect_out "dp 2: the verdict" "every rank sent the plan's bytes, byte for byte"
# calls a step, a bucket per class (exec/model/model_grad_bucket.c: each class's gradients back to back): the 8
# linear weights' in one, the other 20 parameters' in another; the plan counts the same, checked exactly
expect_line "dp 2: 2 gradient all-reduces a step (a bucket per class), as planned" \
    "dp_grad_allreduce.calls +calls +2 +2 +ok"
mpi_run 4 "$FP8PLAN" $RUN --recipe megatron-bf16 --steps 50 --loss-log "$TMP/dp4.csv"
expect_rc "megatron-bf16 dp 4 exits 0" 0
expect_eq "megatron-bf16 dp 4: the one rank's losses bit for bit" "$(cmp -s "$TMP/one.csv" "$TMP/dp4.csv" && echo same)" same
expect_line "dp 4: each rank sent the plan's gradient bytes" \
    "  dp_grad_allreduce +180480 +180480 +180480 +4/4 +exact"
# the planner's own listing says the same
run plan --catalog "$cat" --model tiny-gpt --gpu h100-sxm --mbs 2 --gbs 8 --dp 4 --recipe megatron-bf16 \
    --stack fp8plan --view collectives --format csv
expect_eq "fp8plan plan --view collectives: dp_grad_allreduce sent/step at dp 4" \
    "$(grep '^dp_grad_allreduce,' "$TMP/out" | cut -d, -f10)" 180480

# FP8-LM: E4M3 gradients of the 4 block linears (2 x 12,288 weights, 1 B) reduced with a shared
# scale, the other 5,504 parameters in FP32: S = 24,576 + 22,016 = 46,592; dp 4 bus 69,888.
# Amax (the recipe reduces over DP): 48 B per call (4 linears x 2 layers x 3 FP32 / 2), 2 calls
# per micro-batch, 1 micro-batch per rank: 2 x 48 x 1.5 = 144.
mpi_run 4 "$FP8PLAN" $RUN --recipe fp8lm --steps 3
expect_rc "fp8lm dp 4 exits 0" 0
expect_line "fp8lm dp 4: FP8 gradient bytes" "  dp_grad_allreduce +69888 +69888 +69888 +4/4 +exact"
# each E4M3 gradient alone (its scale agreed first), the others' FP32 bucket: 8 + 1 calls, as planned
expect_line "fp8lm dp 4: 9 gradient all-reduces a step, as planned" "dp_grad_allreduce.calls +calls +9 +9 +ok"
expect_line "fp8lm dp 4: amax bytes" "  amax_allreduce +144 +144 +144 +4/4 +exact"

# deepseek-v3 (block scales, current: nothing to exchange; FP32 gradients all-reduced; BF16 moments per rank)
# over DP 4, one micro-batch a rank folded in the one rank's order: the one rank's losses bit for bit; its
# gradient bytes are megatron-bf16's (FP32 gradients of the same parameters) and it makes no amax collective
run $RUN --recipe deepseek-v3 --steps 5 --loss-log "$TMP/ds1.csv"
mpi_run 4 "$FP8PLAN" $RUN --recipe deepseek-v3 --steps 5 --loss-log "$TMP/ds4.csv"
expect_rc "deepseek-v3 dp 4 exits 0" 0
expect_eq "deepseek-v3 dp 4: the one rank's losses bit for bit" "$(cmp -s "$TMP/ds1.csv" "$TMP/ds4.csv" && echo same)" same
expect_line "deepseek-v3 dp 4: gradient bytes as megatron-bf16's" "  dp_grad_allreduce +180480 +180480 +180480 +4/4 +exact"
expect_eq "deepseek-v3 dp 4: no amax collective" "$(grep -c 'amax_allreduce' "$TMP/out")" 0

# te-fp8-current reduces amax over TP/CP only (recipes.csv: amax_reduce tp), as TE's current
# scaling does: at tp 1 nothing crosses the DP ranks, and the plan counts no amax collective
mpi_run 2 "$FP8PLAN" $RUN --recipe te-fp8-current --steps 2
expect_rc "te-fp8-current dp 2: every collective as planned, exit 0" 0
expect_eq "te-fp8-current dp 2: no amax collective planned or made" "$(grep -c 'amax_allreduce' "$TMP/out")" 0
expect_line "te-fp8-current dp 2: gradient bytes as megatron-bf16's" "  dp_grad_allreduce +120320 +120320 +120320 +2/2 +exact"

# a collective the plan counts but the run does not make is caught: a copy of te-fp8-current
# whose row claims an amax reduction over DP (amax_reduce all: 192 B planned), which current
# scaling never makes
sed -n 's/^te-fp8-current,\(.*\),current,tensor,tensor,1,tp,/te-fp8-current-dp-amax,\1,current,tensor,tensor,1,all,/p' \
    "$cat/recipes.csv" >>"$cat/recipes.csv"
mpi_run 2 "$FP8PLAN" $RUN --recipe te-fp8-current-dp-amax --steps 2
expect_rc "a recipe row claiming a DP amax reduction: a collective off the plan exits 1" 1
expect_line "the collective named" "  amax_allreduce +192 +0 +0 +0/2 +DIFFERS"

# a rank that fails stops every rank (no hang): rank 0 alone writes the checkpoint
mpi_run 2 "$FP8PLAN" $RUN --recipe megatron-bf16 --steps 2 --save /dev/full
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]; then pass "a failing rank ends the job (exit $rc)"; else fail "a failing rank ends the job" "exit status $rc"; fi
expect_err "the failing rank and its reason" "rank 0 of 2 failed (exit 74): stopping every rank"
expect_err "the reason itself" "/dev/full"
# What one rank's losses bound and what they do not (README, "What is bit-identical"): at the size issue 46
# measured (4 layers, hidden 64, 4 heads, seq 32, vocab 512; micro-batch 2, global batch 8, megatron-bf16)
# DP 2, DP 4 and PP 2 part from one rank (first at steps 4, 8 and 26: a gradient summed over micro-batches
# is associated per rank or per stage, not in one chain). The stated bound: 1e-4 relative over 40 steps
# (measured 5.0e-5, 3.1e-5, 2.1e-5; the tiny model above happens to give DP 4 the same bits).
MID="run --catalog $cat --model gpt2-124m --layers 4 --hidden 64 --heads 4 --seq 32 --vocab 512 --mbs 2 --gbs 8"
MID="$MID --recipe megatron-bf16 --steps 40 --quiet"
maxrel40() { # as maxrel, over 40 steps
    awk -F, 'NR == FNR { if (FNR > 1) a[$1] = $2; next } FNR > 1 { n++; if (!($1 in a)) bad = 1; d = $2 - a[$1];
        if (d < 0) d = -d; r = d / (a[$1] < 0 ? -a[$1] : a[$1]); if (r > m) m = r }
        END { if (bad || n != 40) print "n/a"; else printf "%.3g\n", m }' "$1" "$2"
}
run $MID --loss-log "$TMP/mid1.csv"
expect_rc "issue 46's size, one rank, exits 0" 0
for lay in "2 dp2" "4 dp4" "2 pp2 --pp 2"; do
    set -- $lay
    np=$1 tag=$2
    shift 2
    mpi_run "$np" "$FP8PLAN" $MID "$@" --loss-log "$TMP/mid_$tag.csv"
    expect_rc "issue 46's size, $tag, exits 0" 0
    r=$(maxrel40 "$TMP/mid1.csv" "$TMP/mid_$tag.csv")
    if [ "$r" != n/a ] && awk -v r="$r" 'BEGIN { exit !(r <= 1e-4) }'; then
        pass "issue 46's size: $tag within the stated 1e-4 of one rank over 40 steps ($r)"
    else
        fail "issue 46's size: $tag within the stated 1e-4 of one rank over 40 steps" "max relative difference: $r"
    fi
done

finish
