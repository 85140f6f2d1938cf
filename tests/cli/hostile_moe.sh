# tests/cli/hostile_moe.sh — hostile input on this round's surfaces, each with the exit status it must
# give (0, 64 usage, 65 data) and never a crash or a hang: --recompute-modules lists, measured.csv's notes
# keys (recompute_modules=, overlap_ep=, dualpipe=, ep_comm_sms=), the trust line of `plan` over catalogs
# whose measured.csv is a directory, /dev/zero, a FIFO or random bytes, sweep pages where nothing fits.
. "$FP8PLAN_ROOT/tests/lib.sh"

M="--model deepseek-v3 --gpu h800 --recipe deepseek-v3 --pp 16 --dp 128 --ep 64 --zero 1 --first-stage-layers 4 --last-stage-layers 1"
long=$(printf 'moe,%.0s' $(seq 200))
# module lists: want the exit status
while IFS='|' read -r want mods; do
    run plan $M --recompute-modules "$mods"
    expect_rc "--recompute-modules '$(printf '%.40s' "$mods")': exit $want" "$want"
done <<LIST
64|
64|,
64|moe,,moe
0|moe,moe
64|MOE
64|none,moe
64|$long
0|mla_up_proj,moe_act,layernorm,core_attn,mlp,moe,shared_experts
64|layernorm 
64|moé
LIST
# --unknown lists: a name the planner does not know, an empty one, or a list for a command without a plan band
while IFS='|' read -r want list; do
    run plan $M --unknown "$list"
    expect_rc "--unknown '$(printf '%.40s' "$list")': exit $want" "$want"
    [ "$want" = 64 ] && expect_no_out "--unknown '$(printf '%.40s' "$list")': nothing printed"
done <<LIST
64|
64|,
64|attn_out,
64|attn_out,,dense_act
64|ATTN_OUT
64|$long
0|none
0|attn_out,attn_out
0|fp8_weight_cache,attn_out,dense_act
LIST
run plan $M --unknown attn_out,bogus
expect_err "--unknown names the flag and the bad name" "--unknown: 'bogus' is not an implementation choice the planner knows (known: fp8_weight_cache,attn_out,dense_act, or none)"
run plan $M --unknown ""
expect_err "--unknown '': an empty name" "--unknown '': an empty name"
run sweep --model qwen3-30b-a3b --gpu b200 --gpus 8 --recipes mxfp8 --unknown attn_out
expect_rc "sweep refuses --unknown" 64
expect_err "... saying it does not apply" "--unknown does not apply here"

run plan $M --recompute full --recompute-modules moe,layernorm
expect_rc "modules under --recompute full: refused" 64
expect_err "... naming both" "--recompute-modules layernorm with --recompute full"
run sweep --model qwen3-30b-a3b --gpu b200 --gpus 8 --recipes mxfp8 --recompute-modules moe
expect_rc "sweep refuses --recompute-modules (it searches recompute itself)" 64

# measured.csv's notes keys: report fidelity's exit status (65 names the row and column)
mkdir -p "$TMP/cat"
for f in models gpus recipes stacks; do cp "$FP8PLAN_ROOT/models/$f.csv" "$TMP/cat/"; done
while IFS='|' read -r want note; do
    head -n 1 "$FP8PLAN_ROOT/models/measured.csv" >"$TMP/cat/measured.csv"
    echo "r,s,megatron-core,mixtral-8x7b,b200,16,1,2,,,8,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,\"ep=8 $note\",s" \
        >>"$TMP/cat/measured.csv"
    run report fidelity --catalog "$TMP/cat"
    expect_rc "notes '$note': exit $want" "$want"
    [ "$want" = 65 ] && expect_err "notes '$note': the row and column named" "row 2, column notes"
done <<NOTES
65|overlap_ep=
0|overlap_ep=0.25
65|overlap_ep=nan
65|overlap_ep=inf
65|overlap_ep=0x1
65|overlap_ep=1.5
65|ep_comm_sms=99999999999
65|dualpipe=2
65|recompute_modules=
65|recompute_modules=;
65|recompute_modules=moe,attn
0|recompute_modules=moe_act,layernorm
0|pp_layout=custom
65|unknown=
65|unknown=;
65|unknown=attn_out,bogus
65|unknown=attn_out,
0|unknown=attn_out,dense_act
NOTES
head -n 1 "$FP8PLAN_ROOT/models/measured.csv" >"$TMP/cat/measured.csv"
echo "r,s,megatron-core,mixtral-8x7b,b200,16,1,2,,,8,1,128,4096,te-fp8,none,none,,,,,,,,,,,100,,,,,,\"ep=8 unknown=bogus\",s" \
    >>"$TMP/cat/measured.csv"
run report fidelity --catalog "$TMP/cat"
expect_err "notes unknown=: names the bad choice and the known ones" "'bogus' is not an implementation choice (known: fp8_weight_cache,attn_out,dense_act)"

# the trust line on catalogs whose measured.csv cannot be read: the plan stands and says so
rm -f "$TMP/cat/measured.csv"
mkdir "$TMP/cat/measured.csv"
run plan --catalog "$TMP/cat" --model llama3-8b --gpu h100-sxm --recipe bf16
expect_rc "measured.csv a directory: the plan is made" 0
expect_out "... and its trust line says why it has none" "is not a regular file: the published runs are not read"
rmdir "$TMP/cat/measured.csv"
ln -s /dev/zero "$TMP/cat/measured.csv"
run plan --catalog "$TMP/cat" --model llama3-8b --gpu h100-sxm --recipe bf16
expect_rc "measured.csv /dev/zero: the plan is made" 0
rm "$TMP/cat/measured.csv"
mkfifo "$TMP/cat/measured.csv"
seconds() { start=$(date +%s%N); "$@"; took_ms=$((($(date +%s%N) - start) / 1000000)); }
seconds run plan --catalog "$TMP/cat" --model llama3-8b --gpu h100-sxm --recipe bf16
expect_rc "measured.csv a FIFO: the plan is made" 0
expect_eq "... at once, not after waiting for a writer (under 5 s)" "$((took_ms < 5000))" 1
rm "$TMP/cat/measured.csv"
head -c 20000 /dev/urandom >"$TMP/cat/measured.csv"
run plan --catalog "$TMP/cat" --model llama3-8b --gpu h100-sxm --recipe bf16
expect_rc "measured.csv random bytes: the plan is made" 0
expect_out "... and says the runs could not be read" "trust: the published runs could not be read"

# sweep pages where nothing fits
run sweep --model gpt-175b --gpu a100-sxm-40g --gpus 8 --recipes megatron-bf16 --format html -o "$TMP/s.html"
expect_rc "a sweep page where nothing fits is written" 0
run sweep --model gpt-175b --gpu a100-sxm-40g --gpus 8 --recipes megatron-bf16
expect_rc "a sweep where nothing fits prints the closest layouts" 0
expect_out "... no trust line without a listed plan" "nothing fits"
finish
