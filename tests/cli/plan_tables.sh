# tests/cli/plan_tables.sh — bytes-per-param, the catalog listings, report seed and sweep.
. "$FP8PLAN_ROOT/tests/lib.sh"

# ---- bytes-per-param (the seed's Table 1a) ----
run bytes-per-param --format csv
expect_rc "bytes-per-param exits 0" 0
expect_eq "bytes-per-param csv is the golden table" "$(cat "$TMP/out")" "$(cat "$FP8PLAN_ROOT/tests/golden/bytes_per_param.csv")"
expect_line "bytes-per-param csv: fp8lm row by value (FP16 master 2, E4M3 grad 1, E4M3 m 1, FP16 v 2)" \
    'fp8lm,none,0,fp16,2,e4m3,1,e4m3,1,fp16,2,6,2,1'
run bytes-per-param
# the states column of each recipe's own row (a bare "6.000" would also match "16.000"); the text table
# wraps into groups of columns at 100, so the column is found in the header of the group that has it
states() { awk -v r="$1" -v k="${2:-0}" '$1 == "recipe" { c = 0; for (i = 1; i <= NF; i++) if ($i == "states") c = i }
    c && $1 == r { print k ? $c " " $(c + 1) : $c }' "$TMP/out"; }
expect_eq "bf16 is 16 B/param (4 + 4 + 4 + 4)" "$(states bf16)" "16.000"
expect_eq "fp8lm is 6 B/param (2 + 1 + 1 + 2)" "$(states fp8lm)" "6.000"
expect_eq "megatron-bf16 is 18 B/param (2 + 4 + 4 + 4 + 4)" "$(states megatron-bf16)" "18.000"
expect_eq "te-fp8 keeps 18 B/param of states plus 2 B of FP8 copies" "$(states te-fp8 1)" "18.000 2.000"
run bytes-per-param --recipe megatron-bf16 --dist-opt --dp 8 --format csv
expect_out "megatron-bf16 with the distributed optimizer is 6 + 12/8" "megatron-bf16,bf16,2,fp32,0.5,fp32,4,fp32,0.5,fp32,0.5,7.5,0,8"
run bytes-per-param --recipe megatron-bf16 --dist-opt --dp 32 --format csv
expect_line "6 + 12/32 = 6.375: master, m and v at 12/32 = 0.375 B" 'megatron-bf16,bf16,2,fp32,0\.125,fp32,4,fp32,0\.125,fp32,0\.125,6\.375,0,32'
run bytes-per-param --recipe bf16 --params 175e9
expect_rc "bytes-per-param --params exits 0" 0
expect_out "175B x 16 B = 2,800 GB" "2,800,000,000,000  2800.000"
run bytes-per-param --dp 8
expect_rc "--dp without --dist-opt is a usage error" 64
expect_err "--dp without --dist-opt explains" "--dp only matters with --dist-opt"
run bytes-per-param --params -1
expect_rc "--params -1 exits 64" 64
expect_err "--params -1 message" "'-1' is negative"
run bytes-per-param --params 1e400
expect_rc "--params 1e400 exits 64" 64
run bytes-per-param --params 1e20
expect_rc "--params that does not fit in 64 bits exits 64" 64
expect_err "--params past 2^64 message" "does not fit in 64 bits"
run bytes-per-param --recipe bf16 --params 2e18
expect_rc "state bytes past 2^64 exit 65" 65
expect_err "state bytes past 2^64 message" "the state bytes of recipe bf16 pass 2^64"
expect_no_out "nothing printed when the bytes overflow"
run bytes-per-param --recipe fp4
expect_rc "unknown recipe exits 64" 64
expect_err "unknown recipe lists the known ones" "known: bf16, megatron-bf16"
expect_no_out "nothing printed for an unknown recipe"

# ---- listings ----
run models
expect_rc "models exits 0" 0
expect_eq "models lists gpt2-124m with its parameter count" "$(awk '$1 == "gpt2-124m" { print $2; exit }' "$TMP/out")" "124,439,808"
expect_out "models lists llama3-405b" "llama3-405b"
run gpus --format csv
expect_rc "gpus csv exits 0" 0
expect_out "gpus lists h100-sxm" "h100-sxm,9.0,85520809984,3350,989,1979,67,132,794.5,1453.4,nvlink,450,50,8,"
run stacks --format csv
expect_rc "stacks csv exits 0" 0
expect_out "stacks lists megatron-core with its alias and defaults" "megatron-core,nvidia-recipes,te,yes,fused,bf16,yes,te,4,10,1,1,1,1,1,0.05,yes,"
expect_out "stacks lists fp8plan (no alias) as not calibrated" "fp8plan,,materialized,no,fused,recipe,yes,fp8plan,3,6,0,0,0,0,0,0,no,"

# stack names that say what they are (issue 46): nvidia-recipes is megatron-core, megatron-lm-defaults is
# megatron-lm; either name is taken wherever a stack is named, and a plan is the same byte for byte
L70="--model llama3-70b --gpu h100-sxm --recipe te-fp8 --tp 4 --pp 2 --dp 8"
for pair in megatron-core:nvidia-recipes megatron-lm:megatron-lm-defaults; do
    old=${pair%%:*} new=${pair#*:}
    "$FP8PLAN" plan $L70 --stack "$old" --format csv >"$TMP/old.csv" 2>&1
    run plan $L70 --stack "$new" --format csv
    expect_rc "plan --stack $new exits 0" 0
    expect_eq "... the same plan as --stack $old, byte for byte" "$(cmp -s "$TMP/old.csv" "$TMP/out" && echo same)" same
    run plan $L70 --stack "$new"
    expect_line "... its header names both" "plan: llama3-70b on h100-sxm, recipe te-fp8, stack $old \($new\)"
done
run sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --stack megatron-lm-defaults --top 1
expect_rc "sweep --stack megatron-lm-defaults exits 0" 0
if tr '\n' ' ' <"$TMP/out" | tr -s ' ' | grep -q "stack megatron-lm (megatron-lm-defaults) (compute hides TP 0.00"; then
    pass "... the sweep's header names both and the overlaps"
else
    fail "... the sweep's header names both" "$(head -n 3 "$TMP/out")"
fi
run sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --stacks megatron-core,nvidia-recipes
expect_rc "sweep --stacks with a name and its alias refused" 64
expect_err "... naming the alias" "--stacks: 'nvidia-recipes' is named twice"
run plan $L70 --stack nvidia
expect_rc "an unknown stack refused" 64
expect_err "... the known names" "unknown"
mkdir -p "$TMP/alias"
for f in models gpus recipes; do cp "$FP8PLAN_ROOT/models/$f.csv" "$TMP/alias/"; done
sed 's/,megatron-lm-defaults,/,megatron-core,/' "$FP8PLAN_ROOT/models/stacks.csv" >"$TMP/alias/stacks.csv"
run stacks --catalog "$TMP/alias"
expect_rc "an alias that is another row's name refused" 65
expect_err "... naming the file, row, column and both rows" "stacks.csv: row 3 (megatron-lm), column alias: 'megatron-core' is already the name of row 2 (megatron-core)"
run plan --help
expect_out "plan --help says what each name is" "megatron-core = nvidia-recipes (the default): NVIDIA's published performance"
run recipes --format json
expect_rc "recipes json exits 0" 0
expect_out "recipes json names fp8lm with 6 B/param" '"name": "fp8lm", "state_bytes_per_param": 6'
run models --catalog "$TMP/none"
expect_rc "listing without a catalog exits 66" 66

# ---- report seed ----
run report seed -o "$TMP/seed"
expect_rc "report seed exits 0 (every checked figure within tolerance)" 0
expect_out "report seed counts the checks" "14 of 14 checked figures within tolerance"
expect_out "report seed shows the 7B BF16 memory" "gpt-7b    TP1 PP1 DP32 mbs2  megatron-bf16           memory             bf16"
for f in table1a_bytes_per_param table1b_scale_granularity table1c_precision_map table5_fp8lm; do
    if [ -s "$TMP/seed/$f.csv" ]; then pass "report seed writes $f.csv"; else fail "report seed writes $f.csv"; fi
done
expect_eq "table5 csv header" "$(head -n 1 "$TMP/seed/table5_fp8lm.csv")" \
    "model,layout,column,recipe,metric,unit,published,predicted,error_pct,tolerance_pct,within"
if grep -q '^fp8,1x32,e8m0,524288,16777216,524288,17301504,50,3.125,48.4375$' "$TMP/seed/table1b_scale_granularity.csv"; then
    pass "table1b: 1x32 E8M0 scales are 3.125 % of the payload, saving 48.4375 %"
else fail "table1b 1x32 row"; fi
if grep -q '^bf16,none,0,fp32,4,fp32,4,fp32,4,fp32,4,16,0,1,175000000000,2800000000000,2800$' "$TMP/seed/table1a_bytes_per_param.csv"; then
    pass "table1a: 175e9 x 16 B = 2,800 GB"
else fail "table1a 175B row"; fi
if grep -q '^fp8lm,6,Adam second moment v,fp16,' "$TMP/seed/table1c_precision_map.csv"; then
    pass "table1c: FP8-LM keeps v in FP16"
else fail "table1c fp8lm v row"; fi
run report
expect_rc "report without a name exits 64" 64
run report nonsense
expect_rc "unknown report exits 64" 64
expect_err "unknown report message" "unknown report 'nonsense' (known: seed, fidelity, html)"

# ---- sweep ----
run sweep --model gpt-13b --gpu h100-sxm --gpus 32 --recipes megatron-bf16,fp8lm --top 3 --format csv
expect_rc "sweep exits 0" 0
expect_eq "sweep csv header is rank + the plan schema" "$(head -n 1 "$TMP/out")" "rank,$(cat "$FP8PLAN_ROOT/tests/golden/plan_summary_columns.txt")"
expect_eq "sweep keeps the top 3" "$(wc -l <"$TMP/out" | tr -d ' ')" "4"
expect_err "sweep counts what it dropped (stderr for csv)" "invalid: layers not divisible by pp*vpp"
run sweep --model gpt-13b --gpu h100-sxm --gpus 32 --recipes megatron-bf16,fp8lm --top 3
expect_out "sweep text ranks by tokens/s" "ranked by tokens/s"
expect_out "sweep text prints the counts" "out of memory"
expect_out "sweep text names the stack (and its alias) and what its compute hides" "stack megatron-core (nvidia-recipes)"
expect_out "... what its compute hides (the title wraps)" "(compute hides TP 1.00,"
expect_out "... the DP, PP and expert overlaps too (the title wraps)" "DP 1.00, PP 1.00, EP 0.00 of its collectives)"
# the first column group: tokens/s, step, memory and the headroom left of the H100's 85.52 GB, by hand from
# the row's own memory: free = 85.52 - memory, free % = 100 free / 85.52
row1=$(grep -E '^ +1  ' "$TMP/out" | head -n 1)
expect_eq "sweep text: step, memory and headroom beside the layout" \
    "$(echo "$row1" | awk '{ free = 85.52 - $11; printf "%.2f %.1f", free, 100 * free / 85.52 }')" \
    "$(echo "$row1" | awk '{ printf "%s %s", $12, $13 }')"
expect_eq "sweep text: the step time is gbs x seq over tokens/s (1,024 x 2,048 / tokens/s, the default ~2M-token batch)" \
    "$(echo "$row1" | awk '{ printf "%.2f", 1024 * 2048 / $9 }')" "$(echo "$row1" | awk '{ printf "%.2f", $10 }')"
# a sweep's page stays readable: every recipe of GPT-175B on 1,024 H100s fits ~50,000 layouts; the chart draws
# each recipe's 2 fastest in each of 160 memory slices (issue 46: 10.9 MB before, the target under 2 MB)
run sweep --model gpt-175b --gpu h100-sxm --gpus 1024 --per-recipe --format html -o "$TMP/sweep175.html"
expect_rc "the 1,024-GPU sweep page is written" 0
expect_eq "the 1,024-GPU sweep page is under 2 MB" "$(($(wc -c <"$TMP/sweep175.html") < 2000000))" 1
if grep -q 'of each recipe the 2 fastest in each of 160 slices of the memory axis are drawn' "$TMP/sweep175.html"; then
    pass "the sweep page says which layouts it draws"
else fail "the sweep page says which layouts it draws" "$(grep -c slices "$TMP/sweep175.html")"; fi
run sweep --model gpt-13b --gpu h100-sxm --recipes fp8lm
expect_rc "sweep without --gpus exits 64" 64
expect_err "sweep without --gpus message" "--gpus is required"
run sweep --model gpt-13b --gpu h100-sxm --gpus 8 --recipes fp9
expect_rc "sweep with an unknown recipe exits 64" 64

finish
