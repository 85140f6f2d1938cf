# tests/cli/plan_cli.sh — `fp8plan plan` and `compare`: output formats and every bad input.
. "$FP8PLAN_ROOT/tests/lib.sh"

L175="--model gpt-175b --gpu h100-sxm --tp 8 --pp 4 --dp 4 --mbs 1 --seq 2048 --dist-opt"

run plan $L175 --recipe te-fp8
expect_rc "plan exits 0" 0
expect_out "plan shows the verdict" "verdict: FITS"
expect_out "plan shows FP8 copies" "fp8_colwise"
expect_out "plan shows collectives" "dp_param_allgather"
expect_out "plan shows the time breakdown" "pipeline_bubble"
expect_out "plan shows advice" "compute-only FP8"
# the advice names the dtype the plan's own dp_grad_reducescatter moves: megatron-core keeps BF16 main
# gradients (stacks.csv), --main-grad fp32 makes both FP32
expect_out "the default stack's reduce-scatter is BF16" "dp_grad_reducescatter   dp     reduce-scatter  bf16"
expect_out "... and the advice says BF16" "gradients are reduced in BF16"
if grep -qF "gradients are reduced in FP32" "$TMP/out"; then
    fail "... and not FP32" "$(grep -F "reduced in" "$TMP/out")"
else pass "... and not FP32"; fi
run plan $L175 --recipe te-fp8 --main-grad fp32
expect_out "--main-grad fp32: an FP32 reduce-scatter" "dp_grad_reducescatter   dp     reduce-scatter  fp32"
expect_out "... and the advice says FP32" "gradients are reduced in FP32"
# --moment-dtype: deepseek-v3's BF16 moments of the linears in FP32 (the others' were FP32 already), said in prose
run plan $L175 --recipe deepseek-v3 --moment-dtype fp32
expect_line "--moment-dtype fp32: FP32 Adam m of the linears" "adam_m_gemm +state +fp32 .*"
expect_out "... and the assumptions say so" "Adam moments in fp32 for every parameter (--moment-dtype; recipe deepseek-v3 keeps m bf16, v bf16)."
run plan $L175 --recipe te-fp8 --fp8-weight-cache off
expect_line "--fp8-weight-cache off: no FP8 copies held" "fp8_rowwise +fp8_copy +- +0 +0 +0.000 +1"
expect_out "... and the advice says they are cast per micro-batch" "FP8 weight copies are cast per micro-batch here"

run plan $L175 --recipe te-fp8 --format csv
expect_rc "plan csv exits 0" 0
expect_eq "plan csv header is the golden schema" "$(head -n 1 "$TMP/out")" "$(cat "$FP8PLAN_ROOT/tests/golden/plan_summary_columns.txt")"
expect_eq "plan csv has one data row" "$(wc -l <"$TMP/out" | tr -d ' ')" "2"

run plan $L175 --recipe fp8lm --view terms --format json
expect_rc "plan terms json exits 0" 0
expect_out "terms json names the master" '"term": "master_gemm"'
run plan $L175 --recipe fp8lm --view collectives --format csv
expect_out "collectives csv: FP8 linear gradients, FP32 others" "dp_grad_reducescatter,dp,reduce-scatter,mixed,4,inter"

run plan $L175 --recipe megatron-bf16 -o "$TMP/plan.txt"
expect_rc "plan -o exits 0" 0
expect_no_out "plan -o prints nothing on stdout"
if grep -q "verdict" "$TMP/plan.txt"; then pass "plan -o writes the file"; else fail "plan -o writes the file"; fi

run plan $L175 --recipe te-fp8 --gpus 128
expect_rc "--gpus equal to tp*pp*cp*dp is fine" 0

# ---- bad input: message, exit code, nothing printed as a plan ----
bad() { # name expected-rc expected-stderr args...
    n=$1 code=$2 msg=$3
    shift 3
    run "$@"
    expect_rc "$n: exit $code" "$code"
    expect_err "$n: message" "$msg"
    expect_no_out "$n: no plan printed"
}
bad "unknown model" 64 "unknown model 'gpt-8b' (known: gpt-7b, gpt-13b" plan --model gpt-8b --gpu h100-sxm --recipe te-fp8
bad "unknown gpu" 64 "unknown GPU 'h1000' (known: h100-sxm" plan --model gpt-7b --gpu h1000 --recipe te-fp8
bad "unknown recipe" 64 "unknown recipe 'fp4' (known: bf16, megatron-bf16" plan --model gpt-7b --gpu h100-sxm --recipe fp4
bad "heads not divisible by tp" 64 "--tp 3: gpt-7b has 32 heads" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --tp 3
bad "kv_heads not divisible by tp" 64 "8 kv_heads; both must be divisible by tp" plan --model llama3-70b --gpu h100-sxm --recipe bf16 --tp 16
bad "layers not divisible by pp" 64 "has 32 layers, not divisible by pp*vpp = 3" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --pp 3
bad "layers not divisible by pp*vpp" 64 "not divisible by pp*vpp = 12" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --pp 4 --vpp 3
bad "world size" 64 "world size 64 != tp*pp*cp*dp" $(echo plan $L175 --recipe te-fp8 --gpus 64)
bad "global batch not divisible" 64 "--gbs 100: not a positive multiple of mbs*dp = 2*4" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --dp 4 --mbs 2 --gbs 100
bad "zero tp" 64 "--tp: '0' must be at least 1" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --tp 0
bad "negative tp" 64 "--tp: '-1'" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --tp -1
bad "tp past 2^64" 64 "--tp: '99999999999999999999' does not fit in 64 bits" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --tp 99999999999999999999
bad "gbs 1e400" 64 "--gbs: '1e400' is out of range" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --gbs 1e400
bad "frag nan" 64 "--frag: 'nan' is not a finite number" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --frag nan
bad "eff above 1" 64 "--eff-fp8: '1.5' must be 0 (the model's) or in [0.001, 1]" plan --model gpt-7b --gpu h100-sxm --recipe te-fp8 --eff-fp8 1.5
bad "seq beyond positions" 64 "learned position embeddings for 1024 positions" plan --model gpt2-124m --gpu h100-sxm --recipe bf16 --seq 2048
bad "cp and seq" 64 "--cp 3: seq 2048 is not divisible by 2*cp" plan --model llama3-8b --gpu h100-sxm --recipe bf16 --cp 3 --seq 2048
bad "fp8 on a100" 64 "FP8 tensor cores need SM 8.9+" plan --model gpt-7b --gpu a100-sxm --recipe te-fp8
bad "mxfp8 on hopper" 64 "needs Blackwell" plan --model gpt-7b --gpu h100-sxm --recipe mxfp8
bad "missing model" 64 "--model is required" plan --gpu h100-sxm --recipe bf16
bad "bad recompute" 64 "--recompute: 'some'" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --recompute some
bad "bad moment dtype" 64 "--moment-dtype: 'fp16' is not recipe, fp32 or bf16" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --moment-dtype fp16
bad "moment dtype on scaled moments" 64 "--moment-dtype bf16: recipe fp8lm keeps scaled Adam moments (m e4m3, v fp16" plan --model gpt-7b --gpu h100-sxm --recipe fp8lm --moment-dtype bf16
bad "bad format" 64 "unknown format 'xml'" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --format xml
bad "stray operand" 64 "unexpected argument 'extra'" plan --model gpt-7b --gpu h100-sxm --recipe bf16 extra
bad "unknown option" 64 "Try 'fp8plan plan --help'" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --colour red

# ---- catalog data errors: exit 65 naming file, row and column ----
cat_dir() { mkdir -p "$TMP/cat$1" && cp "$FP8PLAN_ROOT"/models/*.csv "$TMP/cat$1/"; }
cat_dir 1
sed -i 's/^te-fp8,bf16,e4m3,e4m3,fp32,/te-fp8,bf16,e4m3,e4m3,fp12,/' "$TMP/cat1/recipes.csv"
bad "recipe with an unknown dtype" 65 "recipes.csv: row 4, column master: unknown dtype 'fp12'" plan --catalog "$TMP/cat1" --model gpt-7b --gpu h100-sxm --recipe te-fp8
cat_dir 2
# 3 fields cut from a 30-field row: a row may leave out only the header's last, optional columns (expert_bias,
# glu_clamp), not 5
sed -i 's/^gpt-13b,40,5120,20480,40,/gpt-13b,40,/' "$TMP/cat2/models.csv"
bad "ragged model row" 65 "models.csv: row 3: 27 fields, but the header has 32" plan --catalog "$TMP/cat2" --model gpt-7b --gpu h100-sxm --recipe bf16
cat_dir 3
sed -i 's/^h200,9.0,/h200,9.0",/' "$TMP/cat3/gpus.csv"
bad "malformed CSV" 65 "gpus.csv: row 4: malformed CSV" plan --catalog "$TMP/cat3" --model gpt-7b --gpu h100-sxm --recipe bf16
cat_dir 4
echo 'huge,65536,1073741824,1073741824,1,1,65536,1073741824,1073741824,rmsnorm,gelu,rope,no,no,,,,,,,,,,,,,,,,"too big"' >>"$TMP/cat4/models.csv"
bad "byte counts past 2^64" 65 "passes 2^64" plan --catalog "$TMP/cat4" --model huge --gpu h100-sxm --recipe bf16 --seq 2
# a byte count past 2^64 from the sizes a user sets: the sizes are named (2^63 sequences of gpt-7b's
# 2048 tokens)
bad "a global batch whose byte counts pass 2^64" 65 \
    "passes 2^64 at global batch 9223372036854775808, micro-batch 1, sequence 2048 (gbs, mbs, seq)" \
    plan --model gpt-7b --gpu h100-sxm --recipe te-fp8 --gbs 9223372036854775808
# the default global batch is given as what it resolves to: 2^21 / 2048 = 1024 sequences, rounded up
# to a multiple of mbs x dp = 2^31
bad "a micro-batch whose byte counts pass 2^64" 65 \
    "passes 2^64 at global batch 2147483648 (the default), micro-batch 2147483648, sequence 2048 (gbs, mbs, seq)" \
    compare --model gpt-7b --gpu h100-sxm --recipes te-fp8,bf16 --mbs 2147483648
# 2^63 + 2^63 of overheads pass 2^64 with the default sizes: the overhead flags are named, not gbs/mbs/seq
bad "overheads whose sum passes 2^64" 65 \
    "passes 2^64 with the overheads given: --context 9223372036854775808, --workspace 9223372036854775808" \
    plan --model gpt-7b --gpu h100-sxm --recipe bf16 --context 9223372036854775808 --workspace 9223372036854775808
if grep -qF "(gbs, mbs, seq)" "$TMP/err"; then fail "... and not the sizes" "$(cat "$TMP/err")"; else pass "... and not the sizes"; fi
# sweep's help lists only options sweep takes: every option line's options are accepted (none "does
# not apply here"), and the layout options sweep enumerates itself are not listed
run sweep --help
opts=$(grep -- '^  --' "$TMP/out" | sed 's/   .*//' | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
refused=""
for o in $opts; do
    [ "$o" = --help ] && continue
    "$FP8PLAN" sweep $o 1 >/dev/null 2>"$TMP/e1"
    grep -q "does not apply here" "$TMP/e1" && refused="$refused $o"
done
expect_empty "sweep --help lists no option sweep refuses" "$refused"
for o in --zero --dist-opt --tp --mbs --recompute --first-stage-layers --ep --dualpipe; do
    expect_eq "sweep --help does not list $o" "$(grep -c -- "^  $o " "$TMP/out")" 0
done
for o in --gbs --seq --max-mem-frac --stack --eff-hbm --moe-imbalance; do
    expect_eq "sweep --help lists $o" "$(grep -c -- "^  $o [A-Z]" "$TMP/out")" 1
done
expect_eq "sweep --help describes --gpus once (its own meaning)" "$(grep -c -- "^  --gpus " "$TMP/out")" 1
run plan --help
expect_eq "plan --help still lists --zero" "$(grep -c -- "^  --zero " "$TMP/out")" 1
cat_dir 5
sed -i 's/^gpt-7b,32,/gpt-7b,-1,/' "$TMP/cat5/models.csv"
bad "negative layers" 65 "models.csv: row 2, column layers: '-1' is negative" plan --catalog "$TMP/cat5" --model gpt-7b --gpu h100-sxm --recipe bf16
bad "missing catalog" 66 "models.csv" plan --catalog "$TMP/nowhere" --model gpt-7b --gpu h100-sxm --recipe bf16

# ---- compare ----
run compare $L175 --recipes megatron-bf16,te-fp8,fp8lm
expect_rc "compare exits 0" 0
expect_out "compare has megatron-bf16" "megatron-bf16"
expect_out "compare has fp8lm" "fp8lm"
expect_out "compare shows changes" "vs first"
expect_out "compare shows the weight-related traffic" "weight_comm"
run compare $L175 --recipes megatron-bf16,te-fp8 --format csv
expect_rc "compare csv exits 0" 0
expect_eq "compare csv has a row per recipe" "$(wc -l <"$TMP/out" | tr -d ' ')" "3"
bad "compare with one recipe" 64 "name at least two recipes" compare $L175 --recipes te-fp8
bad "compare unknown recipe" 64 "unknown recipe 'nope'" compare $L175 --recipes te-fp8,nope
bad "compare with --recipe" 64 "--recipe does not apply here" compare $L175 --recipe te-fp8

finish
