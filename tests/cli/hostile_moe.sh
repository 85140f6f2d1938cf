# tests/cli/hostile_moe.sh — hostile input on this round's surfaces, each with the exit status it must
# give (0, 64 usage, 65 data) and never a crash or a hang: --recompute-modules lists, measured.csv's notes
# keys (recompute_modules=, overlap_ep=, dualpipe=, ep_comm_sms=), the trust line of `plan` over catalogs
# whose measured.csv is a directory, /dev/zero, a FIFO or random bytes, sweep pages where nothing fits;
# and (issue 46's round) a table of command lines over uneven stages, stack aliases, calibrate, MoE
# options, -o paths and run's outputs, each with the exit status it must give within 60 s.
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
0|fp8_weight_cache,attn_out,dense_act,act_ckpt,routing_map
LIST
run plan $M --unknown attn_out,bogus
expect_err "--unknown names the flag and the bad name" "--unknown: 'bogus' is not an implementation choice the planner knows (known: fp8_weight_cache,attn_out,dense_act,act_ckpt,routing_map, or none)"
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
expect_err "notes unknown=: names the bad choice and the known ones" "'bogus' is not an implementation choice (known: fp8_weight_cache,attn_out,dense_act,act_ckpt,routing_map)"

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
# ---- issue 46's round: one table, each line "exit status|command line" (OUT: a scratch directory). A status
# of 128 or more is a crash, 124 a hang (60 s); either fails the line whatever it wanted.
mkdir -p "$TMP/h"
echo x >"$TMP/h/file.txt"
L70="--model llama3-70b --gpu h100-sxm --recipe te-fp8 --tp 8 --dp 8"
DS="--model deepseek-v3 --gpu h800 --recipe deepseek-v3 --dp 128 --ep 64 --zero 1 --first-stage-layers 4 --last-stage-layers 1"
TINYR="--backend cpu --model gpt2-124m --layers 1 --hidden 16 --heads 2 --seq 8 --vocab 64 --recipe megatron-bf16 --steps 2 --quiet"
TINYC="--reps 1 --layers 1 --hidden 16 --heads 2 --seq 8 --vocab 64"
tried=0
while IFS='|' read -r want line; do
    [ -z "$line" ] && continue
    tried=$((tried + 1))
    eval "set -- $(echo "$line" | sed "s#OUT#$TMP/h#g")"
    # run starts MPI even on one rank: under the sanitizers OpenMPI's plugins leak past MPI_Finalize where no
    # suppression can name them (tests/mpi_lib.sh), so those lines run without the leak check (ASan's and UBSan's
    # other checks stay on); every other line keeps it
    if [ "$1" = run ]; then
        ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" timeout 60 "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    else
        timeout 60 "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    fi
    rc=$?
    if [ "$rc" -ge 124 ] && [ "$rc" != "$want" ]; then
        fail "$(printf '%.90s' "$line")" "$([ "$rc" -eq 124 ] && echo hang || echo "crash (exit $rc)")" "$(head -c 300 "$TMP/err")"
    else
        expect_rc "$(printf '%.90s' "$line"): exit $want" "$want"
    fi
done <<TABLE
0|plan $L70 --pp 4 --first-stage-layers 20 --last-stage-layers 20
64|plan $L70 --pp 4 --vpp 3 --first-stage-layers 20 --last-stage-layers 20
0|plan $L70 --pp 4 --vpp 3 --first-stage-layers 20 --last-stage-layers 20 --custom-pp-layout
0|plan $L70 --pp 4 --vpp 2 --first-stage-layers 20 --last-stage-layers 20
64|plan $L70 --pp 4 --first-stage-layers 81
64|plan $L70 --pp 4 --first-stage-layers 80
64|plan $L70 --pp 4 --first-stage-layers 78 --last-stage-layers 1
64|plan $L70 --pp 1 --first-stage-layers 5
64|plan $L70 --pp 4 --first-stage-layers -1
64|plan $L70 --pp 4 --first-stage-layers 1e3
64|plan $L70 --pp 4 --first-stage-layers 99999999999999
64|plan $L70 --pp 4 --last-stage-layers 0x10
64|plan $L70 --pp 2 --first-stage-layers 41 --last-stage-layers 40
0|plan $L70 --pp 2 --first-stage-layers 40 --last-stage-layers 40
0|plan $L70 --pp 3 --first-stage-layers 26 --last-stage-layers 26
64|plan $L70 --pp 3 --vpp 2 --first-stage-layers 27 --last-stage-layers 27
64|plan $L70 --pp 4 --vpp 5 --first-stage-layers 19 --last-stage-layers 19
64|sweep --model llama3-405b --gpu h100-sxm --gpus 512 --recipes te-fp8 --top 3 --first-stage-layers 7
0|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --stacks nvidia-recipes,megatron-lm-defaults
64|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --stacks all,nvidia-recipes
64|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --stacks ,
64|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --stacks megatron-lm,MEGATRON-LM-DEFAULTS
0|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --stack NVIDIA-RECIPES
0|plan $L70 --stack nvidia-recipes --stack megatron-core
64|plan $L70 --stack ''
64|plan $L70 --stack 'nvidia-recipes '
64|plan $L70 --stack nvidia
0|compare --model llama3-70b --gpu h100-sxm --tp 8 --dp 8 --recipes te-fp8,megatron-bf16 --stack megatron-lm-defaults
0|tui --headless --size 80x24 --keys q --dump OUT/t.txt --stack nvidia-recipes
64|calibrate --gbs 1048577
64|calibrate --gbs -4
64|calibrate --gbs 4x
64|calibrate --mbs 3 --gbs 8
0|calibrate $TINYC --mbs 3 --gbs 9
73|calibrate $TINYC -o /dev/null
73|calibrate $TINYC -o OUT/file.txt
73|calibrate $TINYC -o OUT/nonexist/deeper/c4
64|calibrate $TINYC --name '' -o OUT/c3
64|calibrate $TINYC --name h100-sxm -o OUT/c5
0|calibrate $TINYC --name h100-sxm --replace -o OUT/c2 --allow-noisy
0|calibrate $TINYC --name nvidia-recipes -o OUT/c1 --allow-noisy
64|plan $DS --pp 16 --ep-comm-sms 133
0|plan $DS --pp 16 --ep-comm-sms 0
64|plan $DS --pp 16 --ep-comm-sms -1
64|plan $DS --pp 16 --moe-imbalance 0
64|plan $DS --pp 16 --moe-imbalance nan
64|plan $DS --pp 16 --moe-imbalance 1e308
64|plan $DS --pp 16 --moe-capacity -1
0|plan $DS --pp 16 --moe-capacity 1e-300
64|plan $DS --pp 16 --ep 3
64|plan $DS --pp 16 --etp 0
64|plan $DS --pp 15 --dualpipe
64|plan $DS --pp 16 --overlap-ep 1.0000001
64|plan $L70 --ep 2
0|plan $L70 --format csv -o /dev/stdout
74|plan $L70 --format csv -o /dev/full
73|plan $L70 --format csv -o OUT
73|plan $L70 --format csv -o OUT/no/such/x.csv
0|plan $L70 --format html -o OUT/p.html
64|plan $L70 --format csv -o ''
0|plan $L70 --format csv -o -
0|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --format html -o /dev/stdout
0|sweep --model llama3-70b --gpu h100-sxm --gpus 1 --recipes te-fp8 --top 1 --format html -o OUT/s1.html
64|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --max-mem-frac 0
0|sweep --model llama3-70b --gpu h100-sxm --gpus 64 --recipes te-fp8 --top 1 --max-mem-frac 1 --format html -o OUT/s3.html
64|run $TINYR --loss-log OUT/l.csv --save OUT/l.csv
74|run $TINYR --loss-log /dev/full
74|run $TINYR -o /dev/full --save OUT/keep.ckpt
0|run $TINYR --loss-log /dev/stdout
1|run $TINYR --stack nvidia-recipes
64|run $TINYR --gbs 3 --mbs 2
64|run $TINYR --pp 2
73|run $TINYR --save OUT --loss-log OUT/x.csv
64|stacks --columns name,alias,nope
0|stacks --columns alias --format json
TABLE
# what the table's lines leave behind: a failed write-out nothing (the run's files land together), a
# refused calibrate nothing
if [ -e "$TMP/h/keep.ckpt" ] || [ -e "$TMP/h/x.csv" ] || [ -e "$TMP/h/c5" ] || [ -e "$TMP/h/c3" ]; then
    fail "refused or failed lines leave no file" "$(ls "$TMP/h")"
else
    pass "refused or failed lines leave no file (a run whose -o failed keeps no checkpoint)"
fi
expect_eq "the table's size" "$tried" 75
# found by the table and fixed: calibrate -o FILE measured first and failed after (now refused before any
# measurement: nothing on stdout); an unknown --stack listed the names but not the aliases
run calibrate $TINYC -o "$TMP/h/file.txt"
expect_rc "calibrate -o a file: exit 73" 73
expect_err "... saying it is not a directory" "-o $TMP/h/file.txt: not a directory"
expect_no_out "... before measuring anything"
run plan $L70 --stack nvidia
expect_err "an unknown --stack lists the aliases too" "known: megatron-core = nvidia-recipes, megatron-lm = megatron-lm-defaults"
finish
