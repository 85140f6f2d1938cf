# tests/cli/run_scaling.sh — the scales `fp8plan run` uses are the ones
# `fp8plan scaling` predicts for the same amax sequence (TE delayed scaling).
. "$FP8PLAN_ROOT/tests/lib.sh"

TINY="--model gpt2-124m --layers 2 --hidden 32 --heads 2 --seq 16 --vocab 64 --mbs 2"

run run $TINY --recipe te-fp8 --steps 25 --quiet --scaling-trace "$TMP/trace.csv"
expect_rc "te-fp8 with --scaling-trace exits 0" 0
expect_eq "the trace has a header and 25 steps x 2 layers x 4 linears x 3 operands" \
    "$(wc -l <"$TMP/trace.csv" | tr -d ' ')" "601"

# one tensor's amax column -> fp8plan scaling -> its next_scale column
check_tensor() { # name layer linear operand format
    awk -F, -v l="$2" -v k="$3" -v o="$4" 'NR == 1 { print "amax" } NR > 1 && $3 == l && $4 == k && $5 == o { print $7 }' \
        "$TMP/trace.csv" >"$TMP/amax.csv"
    awk -F, -v l="$2" -v k="$3" -v o="$4" 'NR > 1 && $3 == l && $4 == k && $5 == o { print $9 }' "$TMP/trace.csv" \
        >"$TMP/ours"
    "$FP8PLAN" scaling --trace "$TMP/amax.csv" --history 1024 --algo max --format "$5" --format csv >"$TMP/pred.csv"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "next_scale") c = i; next } { print $c }' "$TMP/pred.csv" \
        >"$TMP/theirs"
    if [ -s "$TMP/ours" ] && cmp -s "$TMP/ours" "$TMP/theirs"; then
        pass "$1: scales equal fp8plan scaling's prediction"
    else
        fail "$1: scales equal fp8plan scaling's prediction" "$(paste -d' ' "$TMP/ours" "$TMP/theirs" | head -5)"
    fi
}
check_tensor "layer 0 qkv weight (e4m3)" 0 qkv w e4m3
check_tensor "layer 1 fc1 input (e4m3)" 1 fc1 x e4m3
check_tensor "layer 0 proj output gradient (e5m2)" 0 proj dy e5m2

run run $TINY --recipe megatron-bf16 --steps 1 --scaling-trace "$TMP/none.csv"
expect_rc "--scaling-trace with a BF16 recipe exits 64" 64
expect_err "--scaling-trace with a BF16 recipe says why" "has no FP8 tensors"

finish
