# tests/cli/plan_fidelity.sh — stacks (--stack, --stacks, run --stack), uneven stages, the memory
# limit, and `report fidelity` (the planner against models/measured.csv).
. "$FP8PLAN_ROOT/tests/lib.sh"

# ---- report fidelity ----
run report fidelity -o "$TMP/fid"
expect_rc "report fidelity exits 0" 0
expect_out "report fidelity prints the overall MAE line" "throughput MAE"
expect_out "report fidelity counts false OOMs (none)" "false OOMs 0"
expect_out "report fidelity has a row per stack" "stack        megatron-core"
expect_out "report fidelity reports FP8-LM Table 5" "FP8-LM Table 5"
expect_out "report fidelity summarises the mixture-of-experts runs apart" "mixture of experts: throughput MAE"
expect_eq "fidelity_runs.csv header" "$(head -n 1 "$TMP/fid/fidelity_runs.csv" | cut -d, -f1-4)" "id,stack,model,gpu"
expect_eq "fidelity_runs.csv has one row per measured run" "$(($(wc -l <"$TMP/fid/fidelity_runs.csv") - 1))" \
    "$(($(wc -l <"$FP8PLAN_ROOT/models/measured.csv") - 1))"
expect_eq "fidelity_summary.csv header" "$(head -n 1 "$TMP/fid/fidelity_summary.csv")" "kind,group,rows,mae_pct,bias_pct"
expect_out "report fidelity splits the mixture-of-experts runs into dev and hold-out" "runs (dev "
# the dense Blackwell dev runs B200's and GB200's sustained share is fitted on (docs/fidelity.md, "Dense Blackwell
# runs"): NeMo 25.02's 4 on B200, Megatron-Bridge 25.09's 8 dense rows (4 B200, 4 GB200), apart from their MoE rows
expect_eq "fidelity_summary.csv: NeMo 25.02's dense B200 rows" \
    "$(grep '^source,nemo-2502,' "$TMP/fid/fidelity_summary.csv" | cut -d, -f1-3)" "source,nemo-2502,4"
expect_eq "fidelity_summary.csv: Megatron-Bridge 25.09's dense rows" \
    "$(grep '^source,mbridge-2509,' "$TMP/fid/fidelity_summary.csv" | cut -d, -f1-3)" "source,mbridge-2509,8"
# DeepSeek-V3's report leaves three savings open (its notes' unknown=): uncertain, not a false OOM
expect_eq "the DeepSeek-V3 report row is uncertain, not OOM (ran)" \
    "$(grep '^deepseek-v3-report-pretrain-h800,' "$TMP/fid/fidelity_runs.csv" | awk -F, '{print $NF}')" "uncertain"
tr -s '\n ' '  ' <"$TMP/out" >"$TMP/joined" # the summary lines wrap at 100 columns
# and NeMo AutoModel's DeepSeek-V3 on 1,024 H100, whose configurations disagree on checkpointing (unknown=act_ckpt)
expect_eq "the AutoModel 1,024-GPU DeepSeek-V3 row is uncertain, not OOM (ran)" \
    "$(grep '^automodel-2604-deepseek-v3-bf16-h100-1024,' "$TMP/fid/fidelity_runs.csv" | awk -F, '{print $NF}')" "uncertain"
expect_eq "the mixture-of-experts line counts uncertain rows apart" \
    "$(grep -o 'uncertain [0-9]* (fit only if savings their sources leave open hold)' "$TMP/joined")" \
    "uncertain 2 (fit only if savings their sources leave open hold)"
expect_eq "no mixture-of-experts run that trained is a false OOM" \
    "$(grep -o 'hold-out[^;]*; false OOMs [0-9]*' "$TMP/joined" | grep -o 'false OOMs [0-9]*' | tail -n 1)" "false OOMs 0"
expect_out "report fidelity prints the planned FP8 speed-up error" "FP8 over BF16: planned speed-up error MAE"
expect_eq "fidelity_pairs.csv header" "$(head -n 1 "$TMP/fid/fidelity_pairs.csv")" \
    "bf16_id,fp8_id,fp8_recipe,holdout,measured_speedup,predicted_speedup,speedup_error_pct"
expect_eq "fidelity_pairs.csv: 18 configurations measured in BF16 and FP8" \
    "$(($(wc -l <"$TMP/fid/fidelity_pairs.csv") - 1))" 18
# torchao's float8 README: rowwise 6768 over BF16 6150 tokens/s = 1.1004878...
expect_eq "fidelity_pairs.csv: the rowwise pair's measured speed-up" \
    "$(grep '^tao-l3-8b-bf16,tao-l3-8b-rowwise,' "$TMP/fid/fidelity_pairs.csv" | cut -d, -f5 | cut -c1-6)" "1.1004"
# fidelity_terms.csv: each planned run's step and its time terms as shares of it, which add up to 100 %
expect_eq "fidelity_terms.csv header" "$(head -n 1 "$TMP/fid/fidelity_terms.csv" | cut -d, -f1-7)" \
    "id,gpu,experts,holdout,tokens_error_pct,step_s,gemm_pct"
expect_eq "fidelity_terms.csv: a MoE row's shares add up to 100 %" \
    "$(grep '^mbridge-2509-qwen3-30b-a3b-fp8cs-b200,' "$TMP/fid/fidelity_terms.csv" |
        awk -F, '{s = 0; for (i = 7; i <= NF; i++) s += $i; printf "%.6f", s}')" "100.000000"
expect_out "report fidelity prints the MoE dev runs per GPU" "moe dev gpu"
run report fidelity --format html -o "$TMP/fid.html"
expect_rc "report fidelity --format html exits 0" 0
expect_eq "report fidelity --format html writes a page" "$(head -c 15 "$TMP/fid.html")" "<!DOCTYPE html>"
if grep -q 'id="fid-tok"' "$TMP/fid.html" && grep -q 'data-series="megatron-lm"' "$TMP/fid.html"; then
    pass "the page plots the runs per stack"
else fail "the page plots the runs per stack" "$(head -c 300 "$TMP/fid.html")"; fi
if grep -q 'Mixture-of-experts runs, summarised apart.*over 67 runs' "$TMP/fid.html"; then
    pass "the page states the mixture-of-experts runs apart"
else fail "the page states the mixture-of-experts runs apart" "$(grep -c Mixture "$TMP/fid.html")"; fi
if grep -q 'id="fid-pairs"' "$TMP/fid.html" && grep -q 'over 18 pairs' "$TMP/fid.html"; then
    pass "the page shows the BF16/FP8 pairs"
else fail "the page shows the BF16/FP8 pairs" "$(grep -c pairs "$TMP/fid.html")"; fi
# how far to trust a plan's throughput: the planner's error on the published runs like it
run plan --model llama3-70b --gpu h100-sxm --recipe te-fp8 --tp 4 --pp 2 --dp 8
expect_rc "plan with a trust line exits 0" 0
expect_out "plan says how far to trust its throughput, from runs of its stack, GPU generation and kind" \
    "trust: on published runs like this one (stack megatron-core, SM 9.x GPUs, dense models)"
run plan --model llama3-70b --gpu h100-sxm --recipe te-fp8 --tp 4 --pp 2 --dp 8 --format html -o "$TMP/trust.html"
expect_rc "plan --format html with a trust line exits 0" 0
if grep -q "trust: on published runs like this one (stack megatron-core, SM 9.x GPUs" "$TMP/trust.html"; then
    pass "the plan's page says how far to trust its throughput"
else fail "the plan's page says how far to trust its throughput" "$(grep -c trust "$TMP/trust.html")"; fi
run compare --model qwen3-30b-a3b --gpu b200 --recipes megatron-bf16,mxfp8 --dp 8 --ep 8
expect_out "compare says it for its recipes, MoE runs apart" "(stack megatron-core, SM 10.x GPUs, mixture-of-experts"
mkdir -p "$TMP/nomeas" && cp "$FP8PLAN_ROOT"/models/models.csv "$FP8PLAN_ROOT"/models/gpus.csv \
    "$FP8PLAN_ROOT"/models/recipes.csv "$FP8PLAN_ROOT"/models/stacks.csv "$TMP/nomeas/"
run plan --catalog "$TMP/nomeas" --model llama3-8b --gpu h100-sxm --recipe bf16 --dp 8
expect_rc "plan on a catalog without measured.csv still plans" 0
expect_out "... and says its throughput is unchecked" "trust: the catalog has no measured.csv"
run report fidelity --format csv
expect_rc "report fidelity --format csv is a usage error (-o DIR writes CSV)" 64
run report fidelity --holdout nemo-2407 -o "$TMP/fid2"
expect_rc "report fidelity --holdout exits 0" 0
if grep -q '^throughput,hold-out,9,' "$TMP/fid2/fidelity_summary.csv"; then
    pass "--holdout nemo-2407 holds out its 9 rows"
else fail "--holdout nemo-2407 holds out its 9 rows" "$(cat "$TMP/fid2/fidelity_summary.csv")"; fi
run report seed --holdout nemo-2407
expect_rc "--holdout applies to fidelity only" 64
mkdir -p "$TMP/cat"
cp "$FP8PLAN_ROOT"/models/models.csv "$FP8PLAN_ROOT"/models/gpus.csv "$FP8PLAN_ROOT"/models/recipes.csv \
    "$FP8PLAN_ROOT"/models/stacks.csv "$TMP/cat/"
run report fidelity --catalog "$TMP/cat"
expect_rc "report fidelity without measured.csv exits 66" 66
expect_err "missing measured.csv is named" "measured.csv"
head -n 1 "$FP8PLAN_ROOT/models/measured.csv" >"$TMP/cat/measured.csv"
echo "r,s,megatron-x,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,100,,,,,,n,s" >>"$TMP/cat/measured.csv"
run report fidelity --catalog "$TMP/cat"
expect_rc "a bad measured.csv exits 65" 65
expect_err "the bad cell is named" "row 2, column stack: 'megatron-x'"
expect_no_out "nothing printed for a bad measured.csv"
# a measured cell past what a GPU can show (tokens/s per GPU within [1e-3, 1e9]) is refused, not averaged
head -n 1 "$FP8PLAN_ROOT/models/measured.csv" >"$TMP/cat/measured.csv"
echo "r,s,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,1e-300,,,,,,n,s" >>"$TMP/cat/measured.csv"
run report fidelity --catalog "$TMP/cat"
expect_rc "1e-300 tokens/s exits 65" 65
expect_err "the cell is named with its bounds" "measured.csv: row 2, column tokens_per_s_per_gpu: '1e-300' is out of range [0.001, 1e+09]"
expect_no_out "nothing printed for 1e-300 tokens/s"
# a user's own measured.csv with its own sources: the default hold-out list (the shipped sources) holds out
# nothing there and is no error; a --holdout the user gives is still checked against the file's sources
head -n 1 "$FP8PLAN_ROOT/models/measured.csv" >"$TMP/cat/measured.csv"
echo "r,mine,torchtitan,llama3-8b,h100-sxm,8,1,1,,,8,1,128,8192,bf16,none,none,,,,,,,,,,,5000,,,,,,n,s" >>"$TMP/cat/measured.csv"
run report fidelity --catalog "$TMP/cat"
expect_rc "a user's measured.csv without the shipped sources exits 0" 0
expect_out "... with an empty hold-out set" "hold-out 0.0 % over 0)"
if grep -qF -- "--holdout" "$TMP/err"; then fail "... blaming no --holdout" "$(cat "$TMP/err")"; else pass "... blaming no --holdout"; fi
run report fidelity --catalog "$TMP/cat" --holdout mine
expect_rc "--holdout of the user's source exits 0" 0
expect_line "... holding out its row" "throughput +hold-out +1 .*"
run report fidelity --catalog "$TMP/cat" --holdout nosuch
expect_rc "a --holdout naming no source of the file exits 64" 64
expect_err "... listing the file's sources" "--holdout: unknown source 'nosuch' (known source ids: mine;"
# --max-mem-frac sets the limit the over-limit count uses (docs/fidelity.md): a lower limit counts at least as many
over() { sed -n 's/.*over the memory limit \([0-9]*\);.*/\1/p' "$TMP/out" | tr -d '\n'; }
run report fidelity
expect_rc "report fidelity exits 0 (default limit)" 0
n95=$(over)
run report fidelity --max-mem-frac 0.5
expect_rc "report fidelity --max-mem-frac 0.5 exits 0" 0
n50=$(over)
if [ -n "$n95" ] && [ -n "$n50" ] && [ "$n50" -gt "$n95" ]; then
    pass "--max-mem-frac 0.5 counts more runs over the limit ($n50 > $n95)"
else fail "--max-mem-frac 0.5 counts more runs over the limit" "0.95: '$n95', 0.5: '$n50'"; fi
run report fidelity --max-mem-frac 1.5
expect_rc "report fidelity --max-mem-frac 1.5 exits 64" 64
expect_err "... naming the flag and value" "--max-mem-frac: '1.5' must be in (0, 1]"
run report seed --max-mem-frac 0.5
expect_rc "--max-mem-frac applies to fidelity only" 64

# ---- stacks ----
run plan --model llama3-8b --gpu h100-sxm --recipe te-fp8 --dp 8 --stack torchtitan
expect_rc "plan --stack torchtitan exits 0" 0
expect_out "the plan names its stack" "recipe te-fp8, stack torchtitan"
expect_out "torchtitan's row applies (fp32 main gradients, compile kernels)" "main gradients fp32"
run plan --model llama3-8b --gpu h100-sxm --recipe te-fp8 --dp 8 --stack torchtitan --main-grad bf16 --format csv
expect_rc "an explicit --main-grad over the stack exits 0" 0
# --overlap-tp on: the stack's optional TP overlap (its tp_overlap_on); megatron-lm's is TE userbuffers, 1
run plan --model gpt-175b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 4 --dp 4 --dist-opt --stack megatron-lm \
    --overlap-tp on
expect_rc "--overlap-tp on exits 0" 0
tr -s '\n ' '  ' <"$TMP/out" >"$TMP/joined" && mv "$TMP/joined" "$TMP/out" # the assumptions wrap at 100 columns
expect_out "--overlap-tp on takes the stack's tp_overlap_on" "Overlap (fraction of the concurrent compute that hides them): TP 1.00"
run plan --model gpt-175b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 4 --dp 4 --dist-opt --overlap-tp off
tr -s '\n ' '  ' <"$TMP/out" >"$TMP/joined" && mv "$TMP/joined" "$TMP/out"
expect_out "--overlap-tp off over megatron-core" "Overlap (fraction of the concurrent compute that hides them): TP 0.00"
run plan --model gpt-175b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 4 --dp 4 --dist-opt --overlap-tp maybe
expect_rc "--overlap-tp maybe exits 64" 64
run plan --model gpt-175b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 4 --dp 4 --dist-opt --stack megatron-lm \
    --grad-acc-fusion off --format csv
expect_rc "--grad-acc-fusion off exits 0" 0
off=$(awk -F, 'NR == 2 { print $0 }' "$TMP/out")
run plan --model gpt-175b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 4 --dp 4 --dist-opt --stack megatron-lm --format csv
expect_rc "the same plan with the accumulation fused exits 0" 0
if [ "$off" != "$(awk -F, 'NR == 2 { print $0 }' "$TMP/out")" ]; then
    pass "--grad-acc-fusion off changes the plan (a separate add per micro-batch)"
else fail "--grad-acc-fusion off changes the plan" "$off"; fi
# --kernels te over a stack whose kernels are not TE (torchtitan: compile) brings TE's fused accumulation with it:
# the same plan as --kernels te --grad-acc-fusion on, and not the one with it off
TT="--model llama3-8b --gpu h100-sxm --recipe te-fp8 --dp 8 --stack torchtitan --format csv"
# shellcheck disable=SC2086
te_on=$("$FP8PLAN" plan $TT --kernels te --grad-acc-fusion on | sed -n 2p)
# shellcheck disable=SC2086
te_off=$("$FP8PLAN" plan $TT --kernels te --grad-acc-fusion off | sed -n 2p)
# shellcheck disable=SC2086
run plan $TT --kernels te
expect_rc "--stack torchtitan --kernels te exits 0" 0
if [ -n "$te_on" ] && [ "$te_on" != "$te_off" ] && [ "$(sed -n 2p "$TMP/out")" = "$te_on" ]; then
    pass "--kernels te over torchtitan: the accumulation fused, as --grad-acc-fusion on"
else fail "--kernels te over torchtitan: the accumulation fused" "$(sed -n 2p "$TMP/out")"; fi
run plan --model gpt-175b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 4 --dp 4 --dist-opt --grad-acc-fusion sometimes
expect_rc "--grad-acc-fusion sometimes exits 64" 64
run plan --model llama3-8b --gpu h100-sxm --recipe te-fp8 --dp 8 --stack fp8plan
expect_out "the fp8plan stack says it is not calibrated" "not yet measured on a GPU"
run plan --model llama3-8b --gpu h100-sxm --recipe te-fp8 --dp 8 --stack nemo
expect_rc "unknown --stack exits 64" 64
expect_err "unknown --stack lists the stacks" "unknown stack 'nemo' (known: megatron-core = nvidia-recipes, megatron-lm = megatron-lm-defaults, torchtitan"
run compare --model llama3-8b --gpu h100-sxm --recipes bf16,te-fp8 --dp 8 --stack llm-foundry
expect_rc "compare --stack exits 0" 0
run sweep --model llama3-8b --gpu h100-sxm --gpus 8 --recipes te-fp8 --stacks all --top 5
expect_rc "sweep --stacks all exits 0" 0
expect_out "sweep over stacks shows the stack column" "stack"
run sweep --model llama3-8b --gpu h100-sxm --gpus 8 --recipes te-fp8 --stacks torchtitan,nemo
expect_rc "sweep with an unknown stack exits 64" 64
expect_err "sweep names the unknown stack" "--stacks: unknown name 'nemo'"
run sweep --model llama3-8b --gpu h100-sxm --gpus 8 --stack torchtitan --stacks all
expect_rc "--stack with --stacks exits 64" 64
run run --model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --recipe megatron-bf16 --steps 1 \
    --stack torchtitan
# the plan is torchtitan's (flash attention): this executor's materialized attention differs from it
expect_rc "run against another stack's plan reports the differing terms (exit 1)" 1
expect_out "run plans for the stack it was given" "plan for h100-sxm (stack torchtitan)"
expect_out "the attention term follows the stack's kernel" "act_attention              activation          128        1,024"
run run --model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --recipe megatron-bf16 --steps 1
expect_rc "run against its own stack's plan exits 0" 0
expect_out "run plans for this executor by default" "(stack fp8plan)"
run run --model gpt2-124m --recipe megatron-bf16 --stack nemo --steps 1
expect_rc "run --stack unknown exits 64" 64
expect_err "run --stack lists the stacks" "known: megatron-core"

# ---- uneven stages (Llama-3-405B: 126 layers on 16 stages = 7 + 14 x 8 + 7) ----
run plan --model llama3-405b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 16 --dp 8 --dist-opt
expect_rc "126 layers on 16 even stages exits 64" 64
expect_err "the message points at the stage-layer options" "--first-stage-layers"
run plan --model llama3-405b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 16 --dp 8 --dist-opt \
    --first-stage-layers 7 --last-stage-layers 7
expect_rc "7 + 14 x 8 + 7 plans" 0
expect_out "the plan shows the stage split" "uneven stages: first 7, middle 8, last 7 layers"
run sweep --model llama3-405b --gpu h100-sxm --gpus 1024 --recipes te-fp8 --top 3 --format csv
expect_rc "sweep of llama3-405b on 1,024 GPUs exits 0" 0
if awk -F, 'NR > 1 && ($19 > 0 || $20 > 0) { found = 1 } END { exit !found }' "$TMP/out"; then
    pass "the best llama3-405b layouts include uneven stages"
else fail "llama3-405b sweep has no uneven layout" "$(head -c 600 "$TMP/out")"; fi
# with virtual stages only what Megatron-Core launches: 20/20/20/20 on vpp 3 (20 mod 3 = 2) is refused like the
# even split; 405B's 15, 16 x 6, 15 on vpp 8 is the account_for_embedding/loss form ((126 + 2) / 8 = 16)
run plan --model llama3-70b --gpu h100-sxm --recipe bf16 --pp 4 --vpp 3 --first-stage-layers 20 --last-stage-layers 20
expect_rc "20/20/20/20 on vpp 3 exits 64" 64
expect_err "the message names vpp and the counts" "--vpp 3: Megatron cannot interleave first 20, middle 20, last 20 layers"
expect_no_out "20/20/20/20 on vpp 3: no plan printed"
run plan --model llama3-70b --gpu h100-sxm --recipe bf16 --pp 4 --vpp 3 --first-stage-layers 20 --last-stage-layers 20 \
    --custom-pp-layout
expect_rc "20/20/20/20 on vpp 3 with a per-chunk layout plans" 0
run plan --model llama3-405b --gpu h100-sxm --recipe te-fp8 --tp 8 --pp 8 --vpp 8 --cp 2 --dp 8 --gbs 512 --dist-opt \
    --first-stage-layers 15 --last-stage-layers 15
expect_rc "15, 16 x 6, 15 on vpp 8 plans" 0
run sweep --model llama3-405b --gpu h100-sxm --gpus 512 --recipes te-fp8 --top 20 --format csv
expect_rc "sweep of llama3-405b on 512 GPUs exits 0" 0
# columns 7, 8, 19, 20: pp, vpp, first and last stage layers; 126 - 14 x 8 = 14 = 7 + 7 on pp 16
expect_eq "no listed layout puts 7/8/7-layer stages on vpp 5 (or any vpp not dividing the middle 8)" \
    "$(awk -F, 'NR > 1 && $19 > 0 && $7 == 16 && 8 % $8 { print }' "$TMP/out")none" "none"
if awk -F, 'NR > 1 && $19 > 0 && $8 > 1 { found = 1 } END { exit !found }' "$TMP/out"; then
    pass "the 512-GPU sweep still lists interleaved uneven layouts"
else fail "the 512-GPU sweep lists no interleaved uneven layout" "$(head -c 600 "$TMP/out")"; fi

# ---- the memory limit ----
run plan --model gpt-175b --gpu h100-sxm --recipe bf16 --tp 8 --pp 8 --dp 2 --dist-opt --max-mem-frac 0.2
expect_rc "plan over the limit exits 0" 0
expect_out "a plan above --max-mem-frac says so" "OVER LIMIT"
run plan --model gpt-175b --gpu h100-sxm --recipe bf16 --tp 8 --pp 8 --dp 2 --max-mem-frac 1.5
expect_rc "--max-mem-frac 1.5 exits 64" 64
expect_err "--max-mem-frac range" "must be in (0, 1]"

finish
