# tests/cli/check_log.sh — fp8plan check-log LOG --from CONFIG on real logs (tests/data/import/README.md says
# where each comes from): Megatron-LM functional-test golden values beside the plan of their own
# model_config.yaml, a Megatron-LM log excerpt and two torchtitan log excerpts. The measured figures are
# read off the files by hand (the arithmetic beside each); the verdicts follow the run's columns (exit 1
# when a checked row is outside its tolerance). Malformed logs are refused naming file and line.
. "$FP8PLAN_ROOT/tests/lib.sh"

D="$FP8PLAN_ROOT/tests/data/import"
L="$D/logs"
G="--gpus 8 --format csv"

# num NAME SECTION,TERM COLUMN WANT: the CSV row's column (1-based) equals WANT to 1e-12 relative
num() {
    local got
    got=$(awk -F, -v k="$2" -v c="$3" 'index($0, k ",") == 1 { print $c }' "$TMP/out")
    if [ -z "$got" ]; then fail "$1" "no row $2 (column $3)" "$(head -c 400 "$TMP/out")"; return; fi
    if awk -v g="$got" -v w="$4" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 1e-12 * (w < 0 ? -w : w)) }'; then
        pass "$1"
    else
        fail "$1" "got $got, want $4"
    fi
}
verdict() { # NAME SECTION,TERM WANT
    local got
    got=$(awk -F, -v k="$2" 'index($0, k ",") == 1 { print $NF }' "$TMP/out")
    if [ "$got" = "$3" ]; then pass "$1"; else fail "$1" "verdict '$got', want '$3'"; fi
}
# columns: 5 measured_bytes, 7 measured_s, 10 measured_value

# Golden values: iteration-time at every other step ("nan" between), the first timed step is the warm-up
# (a tenth of the timed steps, at least one); mem-max-allocated-bytes: its largest value.
# gpt3_7b_tp1_pp4 on H100: 12 timed values, step 2 (7.90648 s) skipped; the median of the other 11 is 1.15017 s;
# the peak 60720852992 B.
f=gpt3_7b_tp1_pp4_memory_speed
run check-log "$L/${f}__golden_values_dev_dgx_h100.json" --from "$D/mlm_$f.yaml" --gpu h100-sxm $G
expect_rc "7b tp1 pp4 h100 golden values" 0
num "7b tp1 pp4 h100: median step" time,step 7 1.15017
num "7b tp1 pp4 h100: allocated peak" memory,max_allocated 5 60720852992
verdict "7b tp1 pp4 h100: step within 15 %" time,step ok
verdict "7b tp1 pp4 h100: allocated within 8 %" memory,max_allocated ok
# tokens/s from the median step: global batch 8 x 8192 tokens / 1.15017 s = 56979.403... tok/s
num "7b tp1 pp4 h100: tokens/s" rate,tokens_per_s 10 56979.40304476729
run check-log "$L/${f}__golden_values_dev_dgx_a100.json" --from "$D/mlm_$f.yaml" --gpu a100-sxm $G
expect_rc "7b tp1 pp4 a100" 0
num "7b tp1 pp4 a100: 2 timed values, the second (2.94791 s) kept" time,step 7 2.94791
num "7b tp1 pp4 a100: allocated peak" memory,max_allocated 5 60489064448
run check-log "$L/${f}__golden_values_dev_dgx_gb200.json" --from "$D/mlm_$f.yaml" --gpu gb200 $G
expect_rc "7b tp1 pp4 gb200: the step is outside (exit 1)" 1
num "7b tp1 pp4 gb200: median step" time,step 7 0.78713
verdict "7b tp1 pp4 gb200: step OUTSIDE" time,step OUTSIDE
num "7b tp1 pp4 gb200: allocated peak" memory,max_allocated 5 60519342080
f=gpt3_7b_tp4_pp1_memory_speed
run check-log "$L/${f}__golden_values_dev_dgx_h100.json" --from "$D/mlm_$f.yaml" --gpu h100-sxm $G
expect_rc "7b tp4 pp1 h100" 0
num "7b tp4 pp1 h100: median step" time,step 7 1.11493
num "7b tp4 pp1 h100: allocated peak" memory,max_allocated 5 57143791616
run check-log "$L/${f}__golden_values_dev_dgx_a100.json" --from "$D/mlm_$f.yaml" --gpu a100-sxm $G
expect_rc "7b tp4 pp1 a100" 0
num "7b tp4 pp1 a100: median step" time,step 7 2.596
num "7b tp4 pp1 a100: allocated peak" memory,max_allocated 5 58188115968
run check-log "$L/${f}__golden_values_dev_dgx_gb200.json" --from "$D/mlm_$f.yaml" --gpu gb200 $G
expect_rc "7b tp4 pp1 gb200" 1
num "7b tp4 pp1 gb200: median step" time,step 7 0.85257
num "7b tp4 pp1 gb200: allocated peak" memory,max_allocated 5 58217476096
# a real golden file without iteration-time (the LTS container's): refused
run check-log "$L/${f}__golden_values_lts_dgx_a100.json" --from "$D/mlm_$f.yaml" --gpu a100-sxm $G
expect_rc "golden values without iteration-time" 65
expect_err "no iteration lines, the file named" "golden_values_lts_dgx_a100.json: no iteration lines"
f=gpt3_mcore_te_tp2_pp2_cp2
# 49 timed values on H100: the first 49/10 = 4 skipped; the median of 45 is 0.29055 s; the peak 935253504 B
run check-log "$L/${f}__golden_values_dev_dgx_h100.json" --from "$D/mlm_$f.yaml" --gpu h100-sxm $G
expect_rc "tp2 pp2 cp2 h100: the tiny model's step is far outside" 1
num "tp2 pp2 cp2 h100: median step" time,step 7 0.29055
num "tp2 pp2 cp2 h100: allocated peak" memory,max_allocated 5 935253504
run check-log "$L/${f}__golden_values_dev_dgx_a100.json" --from "$D/mlm_$f.yaml" --gpu a100-sxm $G
expect_rc "tp2 pp2 cp2 a100" 1
num "tp2 pp2 cp2 a100: 11 timed, 1 skipped, median of 10" time,step 7 0.51453
num "tp2 pp2 cp2 a100: allocated peak" memory,max_allocated 5 857134592
run check-log "$L/${f}__golden_values_dev_dgx_gb200.json" --from "$D/mlm_$f.yaml" --gpu gb200 $G
expect_rc "tp2 pp2 cp2 gb200" 1
num "tp2 pp2 cp2 gb200: median step" time,step 7 0.40314
num "tp2 pp2 cp2 gb200: allocated peak" memory,max_allocated 5 938399232

# Megatron-LM log (NVIDIA/Megatron-LM issue 756, Mixtral 8x7B on 16 H100s; its launch flags are not in the
# thread: the catalog's mixtral-8x7b plans it). Iterations 2 (5630.1 ms) and 3 (5410.6 ms): the first is the
# warm-up, 5.4106 s stays; max allocated 54250.98583984375 MiB x 1048576 = 56886281728 B, max reserved
# 61480 MiB = 64466452480 B; TFLOP/s/GPU 241.4
run check-log "$L/megatron_issue756_mixtral_h100.log" --model mixtral-8x7b --gpu h100-sxm --recipe megatron-bf16 --gpus 16 --format csv
num "megatron log: step" time,step 7 5.4106
num "megatron log: max allocated (MiB)" memory,max_allocated 5 56886281728
num "megatron log: max reserved" memory,max_reserved 5 64466452480
num "megatron log: TFLOP/s per GPU" rate,tflops_per_gpu 10 241.4

# torchtitan (pytorch/torchtitan PR 3393): 8 steps, step 14 skipped; tps 7334 7313 7282 7322 7309 7272 7304,
# median 7309 per GPU x 8 GPUs = 58472 tok/s; memory 9.46 GiB reserved = 9.46 x 2^30 = 10157597655.04 B
run check-log "$L/torchtitan_pr3393.log" --from "$D/tt_llama3_8b.toml" --gpu h100-sxm $G
num "torchtitan log: tokens/s = median tps x GPUs" rate,tokens_per_s 10 58472
num "torchtitan log: reserved peak (GiB)" memory,max_reserved 5 10157597655
verdict "torchtitan log: no allocated peak in it" memory,max_allocated "not in the log"
# --warmup 0: all 8 steps; the median step is the mean of the two middle ones, T/(7304 x 8) and T/(7309 x 8)
# (T the step's tokens), so tokens/s = 8 x 2 x 7304 x 7309 / (7304 + 7309) = 854158976 / 14613 = 58451.993156778...
run check-log "$L/torchtitan_pr3393.log" --from "$D/tt_llama3_8b.toml" --gpu h100-sxm --warmup 0 $G
num "--warmup 0 keeps every step" rate,tokens_per_s 10 58451.99315677821
# PR 2389: step 4 from three ranks (tps 10050 10050 10049), then step 5 (10007): the first skipped, median
# 10049 x 8 = 80392; TFLOP/s median of 314.69 314.68 313.36 = 314.68; 66.91 GiB = 71844065443.84 B
run check-log "$L/torchtitan_pr2389.log" --from "$D/tt_llama3_8b.toml" --gpu h100-sxm $G
num "torchtitan log 2: tokens/s" rate,tokens_per_s 10 80392
num "torchtitan log 2: TFLOP/s" rate,tflops_per_gpu 10 314.68
num "torchtitan log 2: reserved" memory,max_reserved 5 71844065443

# text output: the warm-up said
run check-log "$L/gpt3_7b_tp1_pp4_memory_speed__golden_values_dev_dgx_h100.json" --from "$D/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml" --gpu h100-sxm --gpus 8
expect_prose "text: the skipped steps said" "12 logged steps, the first 1 skipped as warm-up, the median of 11 taken"

# --format html: the rows as a page through the one writer
run check-log "$L/gpt3_7b_tp1_pp4_memory_speed__golden_values_dev_dgx_h100.json" --from "$D/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml" --gpu h100-sxm --gpus 8 --format html -o "$TMP/check.html"
expect_rc "--format html" 0
if grep -q '^<!DOCTYPE html>' "$TMP/check.html" && grep -q '60720852992\|60,720,852,992' "$TMP/check.html"; then
    pass "the page holds the measured peak"
else
    fail "the page holds the measured peak" "$(head -c 200 "$TMP/check.html")"
fi

# --measured-row: the run as a measured.csv row; appended to a catalog copy, report fidelity plans it.
# Its tokens/s per GPU: 8 sequences x 8192 tokens / 1.15017 s / 8 GPUs = 7122.4253806 (8192 / 1.15017);
# memory 60720852992 B / 2^30 = 56.5507011414 GiB, allocated
cat="$TMP/cat"
cp -r "$FP8PLAN_ROOT/models" "$cat"
echo "custom-32l-4096h,32,4096,16384,32,8,128,131073,8192,layernorm,gelu,learned,no,yes,,,,,,,,,,,,,,,,hand" >>"$cat/models.csv"
run check-log "$L/gpt3_7b_tp1_pp4_memory_speed__golden_values_dev_dgx_h100.json" --from "$D/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml" --gpu h100-sxm --gpus 8 --catalog "$cat" --measured-row mine-7b -o "$TMP/row.csv"
expect_rc "--measured-row writes the row" 0
tail -n +2 "$TMP/row.csv" >>"$cat/measured.csv"
run report fidelity --catalog "$cat" -o "$TMP/fid"
expect_rc "report fidelity reads the check-log row" 0
if grep -q '^mine-7b,megatron-lm,custom-32l-4096h,h100-sxm,8,megatron-bf16,no,7122.4253806,.*,allocated,56.5507011414,' "$TMP/fid/fidelity_runs.csv"; then
    pass "fidelity row: the run's tokens/s and allocated GiB"
else
    fail "fidelity row: the run's tokens/s and allocated GiB" "$(grep mine-7b "$TMP/fid/fidelity_runs.csv")"
fi
if grep -q '^source,check-log,1,' "$TMP/fid/fidelity_summary.csv"; then pass "fidelity summary: a check-log source"; else fail "fidelity summary: a check-log source" "$(grep check-log "$TMP/fid/fidelity_summary.csv")"; fi
run check-log "$L/torchtitan_pr2389.log" --model llama3-8b --gpu h100-sxm --recipe bf16 --gpus 8 --measured-row 'a,b'
expect_rc "--measured-row refuses a comma" 64

# hostile logs: file and line named, nothing written
printf ' iteration        2/     100 | elapsed time per iteration (ms): 12x.5 |\n' >"$TMP/bad.log"
run check-log "$TMP/bad.log" --model llama3-8b --gpu h100-sxm --recipe bf16 --gpus 8 -o "$TMP/o.csv" --format csv
expect_rc "a bad figure" 65
expect_err "bad figure: file, line, label" "bad.log:1: 'elapsed time per iteration (ms):'"
if [ -e "$TMP/o.csv" ]; then fail "nothing written on error" "o.csv exists"; else pass "nothing written on error"; fi
head -c 300 "$L/gpt3_mcore_te_tp2_pp2_cp2__golden_values_dev_dgx_h100.json" >"$TMP/trunc.json"
run check-log "$TMP/trunc.json" --model llama3-8b --gpu h100-sxm --recipe bf16 --gpus 8
expect_rc "truncated golden values" 65
expect_err "truncated JSON: file and line" "trunc.json:"
run check-log "$D/tt_llama3_8b.toml" --model llama3-8b --gpu h100-sxm --recipe bf16 --gpus 8
expect_rc "a configuration given as the log" 65
expect_err "another file: no iteration lines" "no iteration lines"
run check-log "$L/torchtitan_pr2389.log" --from "$D/tt_llama3_8b.toml" --gpu h100-sxm --gpus 8 --warmup 9
expect_rc "warm-up past the log" 65
expect_err "warm-up past the log: said" "4 timed steps, all within the 9 warm-up steps"
run check-log "$TMP/none.log" --model llama3-8b --gpu h100-sxm --recipe bf16
expect_rc "a missing log" 66
run check-log --from "$D/tt_llama3_8b.toml"
expect_rc "no LOG" 64
finish
