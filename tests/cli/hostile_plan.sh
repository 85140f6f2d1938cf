# tests/cli/hostile_plan.sh — plan, compare and sweep options at their limits and in conflict: DP
# inferred from --gpus, --seq past the context (warned) or past 2^24 (refused), --zero against
# --dist-opt, a default global batch named as such, and sweep sizes near 2^32 answered at once.
. "$FP8PLAN_ROOT/tests/lib.sh"

P="--model gpt-7b --gpu h100-sxm --recipe bf16"
seconds() { start=$(date +%s%N); "$@"; took_ms=$((($(date +%s%N) - start) / 1000000)); }

# --- DP from --gpus: 64 / (TP 8 x PP 4) = 2
run plan $P --gpus 64 --tp 8 --pp 4
expect_rc "plan --gpus 64 --tp 8 --pp 4 plans" 0
expect_out "DP is inferred as 2" "TP 8 x PP 4 (vpp 1) x CP 1 x DP 2 = 64 GPUs"
run plan $P --gpus 64 --tp 8 --pp 4 --cp 2 --format csv
expect_rc "with CP 2 too" 0
expect_out "DP 1 with CP 2 (csv dp column)" ",8,4,1,2,1,"
run plan $P --gpus 60 --tp 8 --pp 4
expect_rc "--gpus not a multiple of tp*pp*cp exits 64" 64
expect_err "the product is named" "--gpus 60 is not a multiple of tp*pp*cp = 8*4*1 = 32"
run plan $P --gpus 64 --tp 8 --pp 4 --dp 4
expect_rc "--gpus with an explicit --dp is still a check" 64
run compare --model gpt-7b --gpu h100-sxm --recipes bf16,fp8lm --gpus 16 --tp 8
expect_rc "compare infers DP too" 0
expect_out "compare: TP 8 x ... x DP 2" "TP 8 x PP 1 x CP 1 x DP 2 = 16 GPUs"

# --- the default global batch is named as the default
run plan $P
expect_out "a missing --gbs is reported as the default used" "global batch 1024 (default: 2,097,152 tokens)"
run plan $P --gpus 1048577
expect_rc "plan --gpus past 2^20 exits 64" 64
expect_err "the maximum is stated" "--gpus 1048577 GPUs: a plan is for at most 1048576"
run plan $P --dp 4294967295
expect_rc "plan --dp 2^32-1 exits 64 (it planned 4 billion GPUs, a global batch of 8.8e12 tokens called ~2M)" 64
run plan $P --gbs 512
if grep -q "default" "$TMP/out"; then fail "--gbs 512 is not called a default"; else pass "--gbs 512 is not called a default"; fi

# --- --seq: past the context a warning (RoPE), past 2^24 refused
run plan --model llama2-7b --gpu h100-sxm --recipe bf16 --seq 1000000000
expect_rc "--seq 1000000000 exits 64" 64
expect_err "the limit is named" "at most 16777216 tokens"
expect_no_out "nothing printed as a plan (it printed 0 tokens/s and 85.7 % MFU)"
run plan --model llama2-7b --gpu h100-sxm --recipe bf16 --seq 32768
expect_rc "--seq 32768 on llama2-7b (4096) plans" 0
expect_err "with a warning naming the context" "--seq 32768 is beyond llama2-7b's context of 4096 tokens"
run plan $P --seq 4096
expect_rc "learned positions: --seq past them is refused" 64
expect_err "learned positions: the planner says why" "learned position embeddings for 2048 positions"

# --- a padded vocabulary past 32 bits: refused (it printed "vocabulary padded to 0")
run plan $P --tp 8 --vocab-pad 2147483648
expect_rc "--vocab-pad 2^31 with TP 8 exits 64" 64
expect_err "the wrap is named" "passes 2^32"
run plan $P --tp 2 --vocab-pad 4294967295
expect_rc "--vocab-pad 2^32-1 with TP 2 exits 64" 64
run plan $P --vocab-pad 4294967295
expect_rc "--vocab-pad 2^32-1 with TP 1 still fits 32 bits" 0
expect_out "and is padded to it" "vocabulary padded to 4294967295"

# --- sharding flags in conflict
run plan $P --zero 1 --dist-opt
expect_rc "--zero 1 --dist-opt exits 64" 64
expect_err "--zero and --dist-opt are alternatives" "--dist-opt and --zero 1 are alternatives"
run plan $P --dist-opt --zero 0
expect_rc "--dist-opt --zero 0 exits 64 too" 64
run plan $P --zero 1 --zero 2
expect_rc "two different ZeRO stages exit 64" 64
run plan $P --zero 2 --zero 2
expect_rc "the same ZeRO stage twice is fine" 0

# --- sweep sizes at type limits: refused or answered at once
seconds run sweep --model gpt-175b --gpu h100-sxm --gpus 4294967295
expect_rc "sweep --gpus 2^32-1 exits 64 (it crashed with SIGFPE)" 64
expect_err "the maximum is stated" "a sweep plans for at most 1048576 GPUs"
seconds run sweep --model gpt-175b --gpu h100-sxm --gpus 268435456
expect_rc "sweep --gpus 2^28 exits 64" 64
if [ "$took_ms" -lt 2000 ]; then pass "refused in ${took_ms} ms"; else fail "sweep --gpus 2^28 took ${took_ms} ms"; fi
seconds run sweep --model gpt-175b --gpu h100-sxm --gpus 720720 --recipes fp8lm --top 3
expect_rc "sweep --gpus 720720 (240 divisors) runs" 0
if [ "$took_ms" -lt 5000 ]; then pass "720720 GPUs swept in ${took_ms} ms"; else fail "720720 GPUs took ${took_ms} ms"; fi
run sweep --model gpt-175b --gpu h100-sxm --gpus 8 --recipes fp8lm,fp8lm
expect_rc "a recipe named twice exits 64" 64
expect_err "the repeated recipe is named" "'fp8lm' is named twice"
run sweep --model gpt-175b --gpu h100-sxm --gpus 0
expect_rc "sweep --gpus 0 exits 64" 64
# --- efficiencies: at least 0.001 (a subnormal one printed "-nan tokens/s" with exit 0, 1e-300 "0 tokens/s")
for f in net hbm bf16 fp8 attn; do
    for v in 4.9e-324 1e-300 0.000999; do
        run plan $P --recipe te-fp8 --tp 8 --gpus 64 --eff-$f $v
        expect_rc "--eff-$f $v exits 64" 64
        expect_err "--eff-$f $v: the flag, value and bound are named" "--eff-$f: '$v' must be"
        expect_err "--eff-$f $v: the bound is 0.001" "in [0.001, 1] (0.1 % of the peak is the least a plan takes)"
    done
done
run plan $P --eff-net 0
expect_rc "--eff-net 0 exits 64 (bandwidth needs an efficiency)" 64
run plan $P --eff-bf16 0 --eff-fp8 0 --eff-attn 0 --format csv
expect_rc "--eff-bf16/--eff-fp8/--eff-attn 0 = the model's (docs/planner.md), accepted" 0
"$FP8PLAN" plan $P --format csv >"$TMP/default.csv" 2>&1
expect_eq "0 gives the model's plan" "$(cat "$TMP/out")" "$(cat "$TMP/default.csv")"
run plan $P --recipe te-fp8 --tp 8 --gpus 64 --eff-net 0.001 --eff-hbm 0.001 --eff-bf16 0.001 --eff-fp8 0.001 --eff-attn 0.001
expect_rc "the bound itself plans" 0
if grep -qiE "nan|inf| 0 tokens/s" "$TMP/out"; then fail "no NaN, inf or 0 tokens/s at the bound" "$(grep -iE "nan|inf|tokens/s" "$TMP/out")"; else pass "no NaN, inf or 0 tokens/s at the bound"; fi
# a catalog GPU with subnormal rates: the step time is inf; refused naming the figure, not printed as nan
mkdir "$TMP/dead" && cp "$FP8PLAN_ROOT"/models/*.csv "$TMP/dead"/
echo 'dead,9.0,132,85520809984,1e-310,1e-310,1e-310,1e-310,1e-310,1e-310,0.66,nvlink,1e-310,1e-310,8,x' >>"$TMP/dead/gpus.csv"
run plan --catalog "$TMP/dead" --model gpt-7b --gpu dead --recipe te-fp8
expect_rc "a step time that overflows exits 65" 65
expect_err "the figure that overflowed is named" "the step time (s) of gpt-7b on dead with te-fp8 is not a finite positive number"
expect_err "the catalog rows behind it are named" "(a rate or efficiency of gpus.csv row 'dead' or stacks.csv row 'megatron-core' too small"
expect_no_out "no plan printed with nan"
run sweep --catalog "$TMP/dead" --model gpt-7b --gpu dead --gpus 8
expect_out "sweep counts those layouts as such" "invalid: step time or throughput not finite"

finish
