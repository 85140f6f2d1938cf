# tests/cli/hostile_tables.sh — answers a practitioner can act on: every text table and report fits
# 100 columns (prose wraps, wide catalogs split or narrow with --columns), and sweep shows the best
# plan per recipe, folds near-duplicates, and when nothing fits shows the closest layouts and what binds.
. "$FP8PLAN_ROOT/tests/lib.sh"

export LC_ALL=C.UTF-8
width() { wc -L <"$TMP/out"; } # display columns of the widest line
fits() { # name args...: exit 0 and no line wider than 100 columns
    name=$1
    shift
    run "$@"
    w=$(width)
    if [ "$rc" -eq 0 ] && [ "$w" -le 100 ]; then pass "$name fits 100 columns ($w)"; else
        fail "$name fits 100 columns" "exit $rc, widest line $w" "$(awk 'length > 100' "$TMP/out" | head -3)"; fi
}
HEAD="--model gpt-175b --gpu h100-sxm --tp 8 --pp 4 --dp 4"
fits "models" models
fits "gpus" gpus
fits "recipes" recipes
fits "formats" formats
fits "scales" scales --shape 4096x4096
fits "bytes-per-param" bytes-per-param --params 175e9
fits "report seed" report seed
fits "report fidelity" report fidelity
fits "stacks" stacks
fits "quant-error" quant-error --shape 64x64
fits "compare" compare $HEAD --recipes megatron-bf16,te-fp8,fp8lm --dist-opt
fits "plan" plan $HEAD --recipe te-fp8
fits "plan --view terms" plan $HEAD --recipe te-fp8 --view terms
fits "plan --view collectives" plan $HEAD --recipe te-fp8 --view collectives
# a catalog GPU with rates of 1e-200 B/s and FLOP/s: step times of about 1e+200 s (efficiencies stop at 0.001)
mkdir "$TMP/slow" && cp "$FP8PLAN_ROOT"/models/*.csv "$TMP/slow"/
echo 'slow,9.0,132,85520809984,1e-200,1e-200,1e-200,1e-200,1e-200,1e-200,0.66,nvlink,1e-200,1e-200,8,tiny' \
    >>"$TMP/slow/gpus.csv"
fits "plan on a GPU with rates of 1e-200" plan --catalog "$TMP/slow" $HEAD --gpu slow --recipe te-fp8
expect_out "extreme values print in scientific notation" "e+"
fits "plan with the least efficiencies" plan $HEAD --recipe te-fp8 --eff-bf16 0.001 --eff-fp8 0.0015
case "$(tr -s '\n ' '  ' <"$TMP/out")" in # prose wraps at 100 columns: join its lines
*"BF16 GEMM 0.001, FP8 GEMM 0.0015"*) pass "the efficiency is echoed as given, not as 0.00" ;;
*) fail "the efficiency is echoed as given, not as 0.00" "$(grep -A3 -i efficienc "$TMP/out")" ;;
esac
fits "sweep" sweep --model gpt-13b --gpu h100-sxm --gpus 64
fits "sweep --all" sweep --model gpt-13b --gpu h100-sxm --gpus 64 --all
fits "sweep, nothing fits" sweep --model gpt-175b --gpu h100-sxm --gpus 8
fits "run" run --model gpt2-124m --recipe te-fp8 --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --steps 2
run_in "$(printf '1\n640\n2\n')" scaling --history 4 --algo max
if [ "$(width)" -le 100 ]; then pass "scaling fits 100 columns"; else fail "scaling fits 100 columns"; fi

# --- --columns narrows a catalog listing
run gpus --columns name,hbm_bytes,fp8_tflops
expect_rc "gpus --columns name,hbm_bytes,fp8_tflops exits 0" 0
expect_eq "only those columns" "$(head -n 1 "$TMP/out" | tr -s ' ')" "name memory FP8"
run models --columns name,params --format csv
expect_eq "--columns in csv: the header" "$(head -n 1 "$TMP/out")" "name,params"
run gpus --columns name,bogus
expect_rc "--columns with an unknown column exits 64" 64
expect_err "the known columns are listed" "no column 'bogus' (known: name, compute_capability"
run models
expect_out "a long source wraps inside its column" "                          2048; Azure/MS-AMP-Examples"

# --- sweep: folding near-duplicates, --all, --per-recipe
dups() { # the CSV's rows with the same recipe, tp, pp, cp, dp, mbs whose tokens/s are within 2 %
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { k = $c["recipe"] "," $c["tp"] "," $c["pp"] "," $c["cp"] "," $c["dp"] "," $c["mbs"]; v = $c["tokens_per_s"]
          for (j = 0; j < n; j++) if (key[j] == k && (v > val[j] ? v - val[j] : val[j] - v) <= 0.02 * (v > val[j] ? v : val[j])) d++
          key[n] = k; val[n] = v; n++ }
        END { print d + 0 }' "$TMP/out"
}
run sweep --model gpt-13b --gpu h100-sxm --gpus 64 --format csv --all
expect_eq "--all: 20 rows" "$(($(wc -l <"$TMP/out") - 1))" 20
all_dups=$(dups)
if [ "$all_dups" -gt 0 ]; then pass "--all lists near-duplicates ($all_dups)"; else fail "--all lists near-duplicates"; fi
run sweep --model gpt-13b --gpu h100-sxm --gpus 64 --format csv
expect_eq "folded: still 20 rows" "$(($(wc -l <"$TMP/out") - 1))" 20
expect_eq "folded: no two rows are near-duplicates" "$(dups)" 0
run sweep --model gpt-13b --gpu h100-sxm --gpus 64
expect_out "the +var column counts folded variants" "+var"
expect_out "the fold is explained" "near-duplicates folded into the listed plans"
run sweep --model gpt-13b --gpu h100-sxm --gpus 64 --per-recipe --format csv
recipes=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "recipe") r = i; next } { print $r }' "$TMP/out" |
    sort | uniq -d | wc -l)
expect_eq "--per-recipe: one row per recipe" "$recipes" 0
listed=$(($(wc -l <"$TMP/out") - 1))
run sweep --model gpt-13b --gpu h100-sxm --gpus 64 --per-recipe
expect_out "--per-recipe names the recipe that cannot run" "mxfp8: no valid layout"
absent=$(grep -c ": no valid layout\|: the closest (" "$TMP/out")
recipes=$("$FP8PLAN" recipes --format csv | tail -n +2 | wc -l)
expect_eq "--per-recipe: every recipe listed once or named as not fitting" "$((listed + absent))" "$recipes"

# --- nothing fits: the closest layouts and the binding constraint, not an empty table
run sweep --model gpt-175b --gpu h100-sxm --gpus 8 --recipes fp8lm
expect_rc "nothing fits still exits 0" 0
expect_out "nothing fits is said" "nothing fits: no layout of gpt-175b on 8 x h100-sxm"
expect_out "the closest layouts are listed" "closest to fitting"
expect_out "how far over" "over"
expect_out "the binding constraint is named" "binding constraint: memory"
case "$(tr -s '\n ' '  ' <"$TMP/out")" in # prose wraps at 100 columns: join its lines
*"its largest term is master_gemm (state, "*) pass "the largest term is named" ;;
*) fail "the largest term is named" "$(grep -A2 binding "$TMP/out")" ;;
esac
expect_out "the default global batch is named (not 'global batch 0')" "global batch 1024 sequences of 2048 tokens (the default"
finish
