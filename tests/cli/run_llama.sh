# tests/cli/run_llama.sh — `fp8plan run` on the LLaMA family (RMSNorm, SwiGLU,
# rotary positions, grouped-query attention, untied, no biases) and with
# gradient accumulation, end to end on tiny shapes (CPU backend).
. "$FP8PLAN_ROOT/tests/lib.sh"

LLAMA="--model llama3-8b --layers 1 --hidden 32 --heads 4 --kv-heads 2 --ffn 48 --seq 16 --vocab 64 --mbs 2"

for r in megatron-bf16 te-fp8 te-fp8-current fp8lm; do
    run run $LLAMA --recipe $r --steps 3 -o "$TMP/$r.csv"
    expect_rc "llama $r: tiny run exits 0" 0
    # the header's model line wraps at 100 columns: read it joined
    case "$(tr '\n' ' ' <"$TMP/out" | tr -s ' ')" in
    *"4 heads (2 KV), ffn 48, rmsnorm, swiglu, rope positions, untied, no biases;"*) pass "llama $r: the model's columns" ;;
    *) fail "llama $r: the model's columns" "stdout: $(head -c 600 "$TMP/out")" ;;
    esac
    expect_out "llama $r: persistent terms match the plan" "every exact term matches the plan byte for byte"
    expect_eq "llama $r: no failing term" "$(grep -c ',MISMATCH$\|,OVER$\|,OUTSIDE$' "$TMP/$r.csv")" 0
    # the rotary table is the executor's own: shown, not in the plan (16 positions x 8 = 128 floats)
    expect_eq "llama $r: rope table bytes" "$(grep '^memory,rope_table,' "$TMP/$r.csv" | cut -d, -f5)" 512
done

# RMSNorm has no bias, SwiGLU's FC1 is 2F wide, the head is untied: 1 layer, C 32, H 4 of D 8 with 2 KV
# heads, F 48, V 64 (padded to 128): QKV (4 + 2·2)·8 x 32 = 2,048; proj 32 x 32 = 1,024; FC1 96 x 32 =
# 3,072; FC2 32 x 48 = 1,536: 7,680 linear weights, 15,360 bytes in BF16. Other: embedding and head
# 128 x 32 each = 8,192, three norms of 32 = 96: 8,288 params, 16,576 bytes.
expect_eq "llama: linear weights in bf16" "$(grep '^memory,weight_gemm,' "$TMP/megatron-bf16.csv" | cut -d, -f4)" 15360
expect_eq "llama: other weights in bf16" "$(grep '^memory,weight_other,' "$TMP/megatron-bf16.csv" | cut -d, -f4)" 16576

# the flags that select the shape
run run $LLAMA --kv-heads 3 --recipe te-fp8 --steps 1
expect_rc "--kv-heads not dividing --heads exits 64" 64
expect_err "--kv-heads is named" "--kv-heads 3 does not divide --heads 4"
run run --model llama3-8b --layers 1 --hidden 32 --heads 6 --ffn 48 --seq 16 --vocab 64 --recipe te-fp8 --steps 1
expect_rc "KV heads at the model's ratio must be whole" 64
expect_err "KV heads: the reason" "give --kv-heads"
run run --model llama3-8b --layers 1 --hidden 24 --heads 8 --kv-heads 2 --ffn 48 --seq 16 --vocab 64 --recipe te-fp8
expect_rc "an odd head_dim with rotary positions exits 64" 64
expect_err "odd head_dim: the reason" "rotary positions need it even"

# gradient accumulation: --gbs 6 with --mbs 2 is 3 micro-batches of 2 x 16 tokens per step
run run $LLAMA --gbs 6 --recipe te-fp8 --steps 2 -o "$TMP/acc.csv" --loss-log "$TMP/loss.csv"
expect_rc "--gbs 6 --mbs 2 exits 0" 0
expect_out "three micro-batches per step" "seq 16, mbs 2 x 3 micro-batches"
expect_out "persistent and activation terms match with accumulation" "every exact term matches the plan byte for byte"
# two amax all-reduces (forward and backward bank) per micro-batch
expect_eq "amax all-reduces per step" "$(grep '^comm,amax_allreduce.calls,' "$TMP/acc.csv" | cut -d, -f10)" 6
expect_eq "loss log header" "$(head -n 1 "$TMP/loss.csv")" "step,loss"
expect_eq "loss log rows" "$(wc -l <"$TMP/loss.csv" | tr -d ' ')" 3
run run $LLAMA --gbs 5 --recipe te-fp8 --steps 1
expect_rc "--gbs not a multiple of --mbs exits 64" 64
expect_err "--gbs: the reason" "--gbs 5 is not a multiple of --mbs 2"

# the report as JSON
run run $LLAMA --recipe megatron-bf16 --steps 2 -o "$TMP/r.json" --format json
expect_rc "--format json exits 0" 0
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(r.get('term')=='weight_gemm' for r in (d if isinstance(d,list) else d.get('rows',[]))) else 1)" "$TMP/r.json" 2>/dev/null; then
    pass "JSON report parses and has the weight_gemm row"
else
    fail "JSON report parses and has the weight_gemm row" "$(head -c 300 "$TMP/r.json")"
fi
run run $LLAMA --recipe megatron-bf16 --steps 1 --format json
expect_rc "--format without -o exits 64" 64

finish
