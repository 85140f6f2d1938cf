# tests/cli/run_basic.sh — `fp8plan run` end to end on tiny models (CPU backend).
. "$FP8PLAN_ROOT/tests/lib.sh"

TINY="--model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --mbs 2"

run run --help
expect_rc "run --help exits 0" 0
expect_out "run --help shows usage" "usage: fp8plan run"

for r in megatron-bf16 te-fp8 te-fp8-current fp8lm msamp-o1; do
    run run $TINY --recipe $r --steps 3 -o "$TMP/$r.csv"
    expect_rc "$r: tiny run exits 0" 0
    expect_out "$r: prints the loss each step" "step      3  loss"
    expect_out "$r: persistent terms match the plan" "every exact term matches the plan byte for byte"
    expect_out "$r: memory table has the FP32 logits term" "act_output"
    if head -n 1 "$TMP/$r.csv" | grep -q '^section,term,category,planned_bytes,measured_bytes,planned_s,measured_s,spread_pct,planned_value,measured_value,unit,rel_err_pct,check,verdict$'; then
        pass "$r: CSV header"
    else
        fail "$r: CSV header" "$(head -n 1 "$TMP/$r.csv")"
    fi
    row=$(grep '^memory,weight_other,' "$TMP/$r.csv")
    planned=$(echo "$row" | cut -d, -f4)
    measured=$(echo "$row" | cut -d, -f5)
    expect_eq "$r: CSV weight_other planned = measured" "$measured" "$planned"
done

# time rows: median over the steps after the first, with their spread; throughput rows with units
run run $TINY --recipe megatron-bf16 --steps 4 -o "$TMP/t.csv"
expect_out "throughput table" "Throughput and collective calls (median step of steps 2..4; plan for h100-sxm)"
step=$(grep '^time,step,' "$TMP/t.csv")
if [ -n "$(echo "$step" | cut -d, -f7)" ] && [ -n "$(echo "$step" | cut -d, -f8)" ]; then
    pass "step row has a median and a spread"
else
    fail "step row has a median and a spread" "$step"
fi
expect_eq "tokens/s row has its unit" "$(grep '^rate,tokens_per_s,' "$TMP/t.csv" | cut -d, -f11)" "tok/s"
expect_eq "model TFLOP/s row has its unit" "$(grep '^rate,model_tflops,' "$TMP/t.csv" | cut -d, -f11)" "TFLOP/s"
expect_eq "no MFU rows on the cpu backend" "$(grep -c '^rate,mfu' "$TMP/t.csv")" 0
expect_eq "no device rows on the cpu backend" "$(grep -c ',device,' "$TMP/t.csv")" 0

# FP8 copies exist only for the FP8 recipes, in both layouts
run run $TINY --recipe te-fp8 --steps 1 -o "$TMP/fp8.csv"
row=$(grep '^memory,fp8_rowwise,' "$TMP/fp8.csv" | cut -d, -f5)
col=$(grep '^memory,fp8_colwise,' "$TMP/fp8.csv" | cut -d, -f5)
expect_eq "te-fp8: row-wise and transposed FP8 copies measure the same bytes" "$row" "$col"
if [ "${row:-0}" -gt 0 ] 2>/dev/null; then pass "te-fp8: FP8 copies hold bytes ($row)"; else fail "te-fp8: FP8 copies hold bytes" "measured: '$row'"; fi

# byte-level text shipped with the repository
run run --model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 32 --recipe te-fp8 --steps 2 \
    --data models/corpus/fp8-notes.txt
expect_rc "byte-level data run exits 0" 0
expect_out "byte-level data names the file" "data: models/corpus/fp8-notes.txt"
expect_out "byte-level data uses 256 tokens" "vocab 256"

# checkpoint and resume: 2 + 2 steps print the same losses as 4 steps
run run $TINY --recipe te-fp8 --steps 4
grep '^step' "$TMP/out" | tail -n 2 | awk '{print $2, $4}' >"$TMP/straight"
run run $TINY --recipe te-fp8 --steps 2 --save "$TMP/a.ckpt"
expect_rc "save exits 0" 0
expect_out "save reports the checkpoint" "checkpoint: $TMP/a.ckpt (step 2)"
run run $TINY --recipe te-fp8 --steps 2 --resume "$TMP/a.ckpt"
expect_rc "resume exits 0" 0
expect_out "resume says where it continues" "resumed from $TMP/a.ckpt at step 2"
grep '^step' "$TMP/out" | awk '{print $2, $4}' >"$TMP/resumed"
expect_eq "resumed losses equal the straight run's" "$(cat "$TMP/resumed")" "$(cat "$TMP/straight")"
run run $TINY --recipe fp8lm --steps 1 --resume "$TMP/a.ckpt"
expect_rc "resume with another recipe exits 65" 65
expect_err "resume with another recipe names both" "checkpoint is from recipe 'te-fp8', this run uses 'fp8lm'"
run run $TINY --layers 2 --recipe te-fp8 --steps 1 --resume "$TMP/a.ckpt"
expect_rc "resume with another shape exits 65" 65
expect_err "resume with another shape names the field" "checkpoint has layers 1, this run has 2"
run run $TINY --recipe te-fp8 --steps 1 --seed 2 --resume "$TMP/a.ckpt"
expect_rc "resume with another seed exits 65" 65
expect_err "resume with another seed says so" "seed 1; this run has"
DTINY0="--model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 16"
run run $DTINY0 --recipe te-fp8 --steps 2 --data models/corpus/fp8-notes.txt --save "$TMP/d.ckpt"
expect_rc "save a byte-level run exits 0" 0
head -c 4000 models/corpus/fp8-notes.txt >"$TMP/other.txt"
run run $DTINY0 --recipe te-fp8 --steps 1 --data "$TMP/other.txt" --resume "$TMP/d.ckpt"
expect_rc "resume on another data file exits 65" 65
expect_err "resume on another data file says so" "trained on other data than $TMP/other.txt"
printf 'not a checkpoint' >"$TMP/junk.ckpt"
run run $TINY --recipe te-fp8 --steps 1 --resume "$TMP/junk.ckpt"
expect_rc "junk checkpoint exits 65" 65
expect_err "junk checkpoint is named" "$TMP/junk.ckpt: not an fp8plan checkpoint"
run run $TINY --recipe te-fp8 --steps 1 --resume "$TMP/none.ckpt"
expect_rc "missing checkpoint exits 66" 66

# the CPU backend splits large GEMMs over threads; the result must not depend on how many
MID="--model gpt2-124m --layers 1 --hidden 64 --heads 2 --seq 32 --mbs 2 --vocab 1000"
FP8PLAN_THREADS=1 "$FP8PLAN" run $MID --recipe te-fp8 --steps 2 --quiet --save "$TMP/t1.ckpt" >/dev/null 2>&1
FP8PLAN_THREADS=2 "$FP8PLAN" run $MID --recipe te-fp8 --steps 2 --quiet --save "$TMP/t2.ckpt" >/dev/null 2>&1
if [ -s "$TMP/t1.ckpt" ] && cmp -s "$TMP/t1.ckpt" "$TMP/t2.ckpt"; then
    pass "1 and 2 GEMM threads give bit-identical state"
else
    fail "1 and 2 GEMM threads give bit-identical state"
fi

# backends
run run $TINY --recipe te-fp8 --steps 1 --backend cuda
if [ "$rc" -eq 0 ]; then
    pass "--backend cuda ran on a GPU"
else
    expect_rc "--backend cuda without a GPU or CUDA build exits 69" 69
    expect_err "--backend cuda says why" "--backend cuda"
    expect_no_out "--backend cuda prints nothing on stdout"
fi
run run $TINY --recipe te-fp8 --backend tpu
expect_rc "unknown backend exits 64" 64
expect_err "unknown backend is named" "unknown backend 'tpu'"

# DeepSeek-V3's recipe: 1x128 / 128x128 block scales, BF16 Adam moments; every term against the plan
run run $TINY --recipe deepseek-v3 --steps 3 -o "$TMP/ds.csv"
expect_rc "deepseek-v3: every term within the plan (exit 0)" 0
# linear weights: QKV 96 x 32 + proj 32 x 32 + FC1 128 x 32 + FC2 32 x 128 = 12,288; BF16 m and v: 24,576 B each
expect_eq "deepseek-v3: BF16 Adam m by hand" "$(grep '^memory,adam_m_gemm,' "$TMP/ds.csv" | cut -d, -f4,5)" "24576,24576"
# each weight fits one 128x128 block: 4 weights x (row-wise + transposed copy) x 1 FP32 scale = 32 B
expect_eq "deepseek-v3: block scales by hand" "$(grep '^memory,scale_block,' "$TMP/ds.csv" | cut -d, -f4,5)" "32,32"
# saved FP8 inputs: 32 tokens x K (32 + 32 + 32 + 128 = 224) = 7,168 B, plus their tiles along the tokens,
# 224 x ceil(32 / 128) = 224 FP32 scales = 896 B: 8,064 B
expect_eq "deepseek-v3: saved FP8 inputs and their tiles by hand" \
    "$(grep '^memory,act_layer_fp8,' "$TMP/ds.csv" | cut -d, -f4,5)" "8064,8064"

# what the executor does not run, and bad input
run run $TINY --recipe mxfp8 --gpu b200 --steps 1
expect_rc "MXFP8's 1x32 blocks exit 69" 69
expect_err "1x32 blocks: the reason" "recipe mxfp8: 1x32/1x32 scale granularity is not run by the executor yet"
run run $TINY --recipe nope
expect_rc "unknown recipe exits 64" 64
expect_err "unknown recipe lists the known ones" "unknown recipe 'nope' (known:"
run run --recipe te-fp8
expect_rc "missing --model exits 64" 64
expect_err "missing --model is named" "--model is required"
run run $TINY --recipe te-fp8 --steps 0
expect_rc "--steps 0 exits 64" 64
run run $TINY --recipe te-fp8 --steps -1
expect_rc "--steps -1 exits 64" 64
expect_err "--steps -1 quotes the value" "--steps"
run run $TINY --recipe te-fp8 --lr nan
expect_rc "--lr nan exits 64" 64
run run --model gpt2-124m --hidden 30 --heads 4 --layers 1 --recipe te-fp8 --steps 1
expect_rc "--hidden not a multiple of --heads exits 64" 64
expect_err "--hidden/--heads are named" "--hidden 30 is not a multiple of --heads 4"
DTINY="--model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 16"
run run $DTINY --recipe te-fp8 --steps 1 --data "$TMP/missing.txt"
expect_rc "missing --data file exits 66" 66
printf 'short' >"$TMP/short.txt"
run run $DTINY --recipe te-fp8 --steps 1 --data "$TMP/short.txt"
expect_rc "too short --data file exits 65" 65
expect_err "too short --data file is named" "$TMP/short.txt: 5 bytes is too short for --seq 16"
run run $TINY --recipe te-fp8 --steps 1 --data models/corpus/fp8-notes.txt
expect_rc "--data with a vocabulary below 256 exits 64" 64
expect_err "--data with a small vocabulary says why" "byte-level text needs a vocabulary of at least 256 (got 64)"
run run --model gpt-175b --recipe te-fp8 --steps 1
expect_rc "a model larger than RAM exits 71 before touching memory" 71
expect_err "a model larger than RAM: the reason" "the arena needs"
run run $TINY --recipe te-fp8 --frobnicate
expect_rc "unknown flag exits 64" 64
# --zero twice: two stages are refused naming both, the same stage twice is one
run run $TINY --recipe megatron-bf16 --steps 1 --zero 1 --zero 0
expect_rc "--zero 1 --zero 0 exits 64" 64
expect_err "--zero 1 --zero 0 names both" "--zero 1 and --zero 0: give one"
run run $TINY --recipe megatron-bf16 --steps 1 --zero 1 --zero 1
expect_rc "--zero 1 given twice is one stage: exits 0" 0
run run $TINY --recipe te-fp8 --steps 1 -o /nonexistent/dir/out.csv
expect_rc "unwritable -o exits 73" 73

finish
