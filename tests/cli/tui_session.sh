# tests/cli/tui_session.sh — scripted `fp8plan tui --headless` sessions that
# assert behaviour, not pixels: the recipe switch on GPT-175B changes the
# optimizer terms as `fp8plan plan` says; TP past the head count shows the
# planner's message instead of a plan; every screen's `e` export is the CSV the
# command line prints for the same inputs; bad options and no terminal fail clearly.
. "$FP8PLAN_ROOT/tests/lib.sh"

export TERM=dumb LC_ALL=C
unset NO_COLOR
HEAD="--model gpt-175b --gpu h100-sxm --tp 8 --pp 4 --dp 4 --dist-opt"

tui() { # keys [size] [extra args...]: dump in $TMP/screen
    k=$1
    sz=${2:-120x60}
    shift
    [ $# -gt 0 ] && shift
    run tui --headless --size "$sz" --keys "$k" --dump "$TMP/screen" "$@"
}
screen_has() { # name fixed-string (an empty string would match any screen: refused)
    if [ -z "$2" ]; then fail "$1" "empty pattern (what should be on screen was not computed)"; elif grep -qF -- "$2" "$TMP/screen"; then pass "$1"; else fail "$1" "screen lacks: $2" "$(head -n 30 "$TMP/screen")"; fi
}
screen_lacks() {
    if [ -z "$2" ] || [ ! -s "$TMP/screen" ]; then fail "$1" "empty pattern or no screen dumped"; elif grep -qF -- "$2" "$TMP/screen"; then fail "$1" "screen shows: $2"; else pass "$1"; fi
}
same_file() { # name expected actual (both must exist and hold something)
    if [ ! -s "$2" ] || [ ! -s "$3" ]; then fail "$1" "missing or empty: $2 or $3"; elif cmp -s "$2" "$3"; then pass "$1"; else fail "$1" "$(diff "$2" "$3" | head -n 8)"; fi
}

# --- megatron-bf16 -> fp8lm on GPT-175B: the optimizer terms move as the planner says
tui "<Down><Down>/fp8lm<Enter>e<C-u>$TMP/plan.csv<Enter>"
expect_rc "recipe switch session exits 0" 0
screen_has "the recipe field shows fp8lm" "< fp8lm >"
screen_has "the export is reported with its path" "wrote 1 row of CSV to $TMP/plan.csv"
"$FP8PLAN" plan $HEAD --recipe fp8lm --format csv >"$TMP/want.csv"
same_file "e writes the CSV of 'plan --format csv' for the same inputs" "$TMP/want.csv" "$TMP/plan.csv"
"$FP8PLAN" plan $HEAD --recipe fp8lm --view terms --format csv >"$TMP/terms.csv"
"$FP8PLAN" plan $HEAD --recipe megatron-bf16 --view terms --format csv >"$TMP/terms0.csv"
for term in master_gemm grad_gemm adam_m_gemm adam_v_gemm; do
    # term,category,dtype,elements,bytes,... -> the screen's row: name, dtype, grouped elements
    row=$(grep "^$term," "$TMP/terms.csv")
    [ -n "$row" ] || fail "$term: 'plan --view terms' has the row"
    dt=$(echo "$row" | cut -d, -f3)
    el=$(echo "$row" | cut -d, -f4 | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')
    old=$(grep "^$term," "$TMP/terms0.csv" | cut -d, -f5)
    new=$(echo "$row" | cut -d, -f5)
    if grep -qE "$term +$dt +$el " "$TMP/screen"; then pass "$term: $dt x $el as the planner says"; else
        fail "$term: $dt x $el as the planner says" "$(grep "$term" "$TMP/screen")"; fi
    if [ "$new" -lt "$old" ]; then pass "$term shrinks ($old -> $new bytes)"; else fail "$term shrinks ($old -> $new)"; fi
done
screen_has "bytes per parameter: FP8-LM's 6" "B/param 6.00: weight 0 master 2 grad 1 m 1 v 2"

# --- one plan, one bytes-per-parameter figure on every screen (issue 46: the plan screen read 18, the
# compare screen 16). megatron-bf16 under megatron-core keeps main grads in BF16: weight 2 + master 4 +
# grad 2 + m 4 + v 4 = 16 B/param; the recipe's own accounting (grad FP32: 4) is 18, shown beneath.
tui "q" 80x24
screen_has "plan screen: the plan's 16 B/param (grad 2, as the stack keeps it)" "B/param 16.00: weight 2 master 4 grad 2 m 4 v 4"
screen_has "... the recipe's 18 beneath, said to be the recipe's" "recipe's grad 4: 18.00"
tui "2q" 80x24
screen_has "compare screen: the same 16 B/param" "state B/param    B       16.00"

# --- the trust line (issue 46: plan, compare and sweep said how far to trust the throughput, the TUI did
# not): the same band as `plan` prints for the same inputs, in the TUI's short form
"$FP8PLAN" plan $HEAD --recipe megatron-bf16 | tr '\n' ' ' | tr -s ' ' >"$TMP/plan.txt"
band=$(sed -n 's/.*off by \([0-9.]*\) % on average (bias [-+0-9.]* %) over \([0-9]*\) runs; \([0-9.]*\) % over the [0-9]* of them held out.*/\1 % on \2 runs like it, held out \3 %/p' "$TMP/plan.txt")
tui "q" 80x24
screen_has "plan screen: the trust line, plan's band for the same plan" "trust +-${band:-?}"
tui "q" 80x24 --gpu a100-sxm
"$FP8PLAN" plan $HEAD --gpu a100-sxm --recipe megatron-bf16 | tr '\n' ' ' | tr -s ' ' >"$TMP/plan.txt"
if grep -q "trust: no published run like this one" "$TMP/plan.txt"; then
    screen_has "... no run like it: said so" "trust: no published run like it (unchecked)"
else
    fail "... no run like it" "plan finds runs like an a100-sxm plan: $(grep -o 'trust:.*' "$TMP/plan.txt" | head -c 200)"
fi
mkdir -p "$TMP/nomeasured"
for f in models gpus recipes stacks; do cp "$FP8PLAN_ROOT/models/$f.csv" "$TMP/nomeasured/"; done
tui "q" 80x24 --catalog "$TMP/nomeasured"
screen_has "... a catalog without measured.csv: said so" "trust: measured.csv not read"

# --- a stack's alias is taken where its name is (issue 46)
tui "q" 80x24 --stack megatron-lm-defaults
screen_has "tui --stack megatron-lm-defaults plans megatron-lm" "stack          megatron-lm"

# --- TP past the head count: the validation message instead of a plan
tui "<Down><Down><Down>++++" 80x24
expect_rc "TP 128 session exits 0" 0
run plan $HEAD --recipe megatron-bf16 --tp 128
msg=$(head -n 1 "$TMP/err" | sed 's/^fp8plan plan: //' | cut -c1-38)
tui "<Down><Down><Down>++++" 80x24
screen_has "TP 128 shows 'Cannot plan'" "Cannot plan these inputs:"
screen_has "TP 128 shows the planner's message" "$msg"
screen_lacks "TP 128 shows no verdict" "FITS"
screen_lacks "TP 128 shows no memory bar" "[##"
tui "<Down><Down><Down>++++e<Enter>" 80x24
screen_has "TP 128: nothing to export" "export failed: nothing to export"

# --- a MoE model's expert TP follows the stack, TP and model as on the command line (issue 41): without --etp,
# megatron-core's and megatron-lm's expert_tp column is tp, the others' 1; Mixtral 8x7B at TP 2 EP 4 DP 8.
# Fields from the model: 15 x Down is the stack, 3 x Down TP.
MOE="--model mixtral-8x7b --gpu h100-sxm --recipe megatron-bf16 --tp 2 --pp 1 --dp 8 --ep 4"
D15="<Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down>"
D3="<Down><Down><Down>"
# shellcheck disable=SC2086
tui "${D15}<Right><Right>e<C-u>$TMP/moe.csv<Enter>" 80x24 $MOE
screen_has "megatron-core -> megatron-lm -> torchtitan: the stack field" "< torchtitan >"
screen_has "torchtitan's expert TP is 1" "EP             4, ETP 1"
# shellcheck disable=SC2086
"$FP8PLAN" plan $MOE --stack torchtitan --format csv >"$TMP/want.csv"
same_file "cycled to torchtitan: the export = 'plan --stack torchtitan' (etp 1)" "$TMP/want.csv" "$TMP/moe.csv"
# shellcheck disable=SC2086
tui "${D3}<Right>e<C-u>$TMP/moe.csv<Enter>" 80x24 $MOE
screen_has "megatron-core at TP 4: expert TP 4" "EP             4, ETP 4"
# shellcheck disable=SC2086
"$FP8PLAN" plan $MOE --tp 4 --format csv >"$TMP/want.csv"
same_file "TP 2 -> 4 under megatron-core: the export = 'plan --tp 4' (etp 4)" "$TMP/want.csv" "$TMP/moe.csv"
# shellcheck disable=SC2086
tui "${D15}<Right><Right>e<C-u>$TMP/moe.csv<Enter>" 80x24 $MOE --etp 2
screen_has "--etp 2 given: it stays under torchtitan" "EP             4, ETP 2"
# shellcheck disable=SC2086
"$FP8PLAN" plan $MOE --stack torchtitan --etp 2 --format csv >"$TMP/want.csv"
same_file "--etp 2 given, cycled to torchtitan: the export = 'plan --stack torchtitan --etp 2'" "$TMP/want.csv" \
    "$TMP/moe.csv"

# --- the other screens' exports are the command line's CSV
tui "2e<C-u>$TMP/compare.csv<Enter>"
"$FP8PLAN" compare $HEAD --recipes megatron-bf16,te-fp8,fp8lm --format csv >"$TMP/want.csv"
same_file "Compare export = 'compare --format csv'" "$TMP/want.csv" "$TMP/compare.csv"
tui "3e<C-u>$TMP/t1b.csv<Enter>"
"$FP8PLAN" report seed -o "$TMP/seed" >/dev/null 2>&1
same_file "Scales export = report seed's table1b" "$TMP/seed/table1b_scale_granularity.csv" "$TMP/t1b.csv"
tui "4e<C-u>$TMP/scaling.csv<Enter>"
printf '1\n1.1\n0.9\n1\n1.2\n640\n2\n1.05\n1.1\n1\n0.9\n1\n1.1\n1\n0.9\n1\n' |
    "$FP8PLAN" scaling --history 4 --algo max --format csv >"$TMP/want.csv"
same_file "Scaling export = 'scaling --format csv' for the spike trace" "$TMP/want.csv" "$TMP/scaling.csv"
tui "5e<C-u>$TMP/fx.csv<Enter>"
if grep -q '^e4m3,0.29999999999999999,1,saturate,0x2A,0.0101.010,0.3125,' "$TMP/fx.csv"; then
    pass "Formats export: 0.3 -> e4m3 0x2A = 0.3125"
else
    fail "Formats export: 0.3 -> e4m3 0x2A = 0.3125" "$(cat "$TMP/fx.csv")"
fi
tui "e<C-u>$TMP/no/such/dir/x.csv<Enter>" 80x24
screen_has "an export to a missing directory says why" "export failed:"
if [ -e "$TMP/no" ]; then fail "a failed export leaves nothing behind"; else pass "a failed export leaves nothing behind"; fi

# --- the 640 spike and Table 1b figures on screen
tui "4" 80x24
screen_has "spike: the step after casts with 448/640" "step 7: scale 0.7 = 448/640"
screen_has "spike: values up to ~0.00140 flush" "|x| <= 0.001395 becomes 0"
tui "3" 80x24
screen_has "Table 1b: 1x32 E8M0 scales 524,288 B, saving 48.438 %" "FP8 1x32 E8M0    e8m0    524,288     524,288     17,301,504   3.125%  48.438%"

# --- options: plan flags apply, defaults fill in, errors are usage errors
tui "" 80x24 --model gpt-7b --recipe fp8lm --dp 8
screen_has "--model/--recipe/--dp apply" "< gpt-7b >"
screen_has "TP stays 1 when --model is given" " TP             1"
run tui --headless --keys "<Nope>"
expect_rc "an unknown key name is a usage error" 64
expect_err "the key name is quoted" "unknown key <Nope>"
run tui --keys "q"
expect_rc "--keys without --headless is a usage error" 64
run tui --headless --size 0x10
expect_rc "--size 0x10 is a usage error" 64
run tui --headless --model nope
expect_rc "an unknown model is a usage error" 64
expect_err "the unknown model is named" "unknown model 'nope'"
run tui --headless --format csv
expect_rc "--format does not apply to the tui" 64
run tui --headless --tp 128
expect_rc "a rejected plan still opens (the message is on screen)" 0
run tui </dev/null
expect_rc "no terminal: exit 69" 69
expect_err "no terminal: says so" "must be a terminal"
env -u TERM "$FP8PLAN" tui --headless --dump "$TMP/screen" >/dev/null 2>"$TMP/err"
rc=$?
expect_rc "TERM unset: headless falls back to dumb" 0
screen_has "TERM unset: the dump says dumb" "TERM=dumb"
# (ncurses keeps one allocation when newterm fails; see tests/cli/tui_lsan.supp)
LSAN_OPTIONS="suppressions=$FP8PLAN_ROOT/tests/cli/tui_lsan.supp" run tui --headless --term no-such-terminal-type
expect_rc "an unknown terminal type: exit 69" 69
expect_err "an unknown terminal type is named" "no-such-terminal-type"
# --- the collectives list: one GPU has none and says so; the headline layout lists its own instead
tui "" 200x60 --model gpt2-124m --gpu h100-sxm --tp 1 --pp 1 --dp 1
screen_has "one GPU: the collectives section says there are none" "(none: a single GPU)"
tui "" 200x60
screen_has "TP 8 PP 4 DP 4: the collectives are listed" "dp_grad_reducescatter"
screen_lacks "TP 8 PP 4 DP 4: not 'a single GPU'" "(none: a single GPU)"
# --- the Scaling chart's range follows the amax: every step's amax typed as 2^-10 = 0.0009765625. The scale
# after step 1 is 448 / 2^-10 = 458752, flushing at or below 2^-10 / 458752 = 2.13e-9 (log10 -8.67); step 1
# (scale 1) saturates above 448 (log10 2.65). The axis spans the bounds but at most 3 decades above the
# largest amax and 6 below the smallest (log10 2^-10 = -3.01): top min(ceil 2.65, ceil -3.01 + 3) = min(3, 0)
# = 1e0, bottom max(floor -8.67, floor -3.01 - 6) = max(-9, -10) = 1e-9. (Were the amax taken as 1, the
# labels would read 1e3 and 1e-6.)
k="4<Down><Down><Down><Down><Down>"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do k="$k<Down><Enter>0.0009765625<Enter><Up><Right>"; done
LC_ALL=C tui "$k" 120x40
screen_has "amax 2^-10 everywhere: scale 458752" "458752"
if grep -qE ' 1e0 +[|]' "$TMP/screen"; then pass "amax 2^-10: the chart's top label is 1e0"; else
    fail "amax 2^-10: the chart's top label is 1e0" "$(grep -E ' 1e-?[0-9]+ +[|]' "$TMP/screen")"; fi
if grep -qE ' 1e-9 +[|]' "$TMP/screen"; then pass "amax 2^-10: the chart's bottom label is 1e-9"; else
    fail "amax 2^-10: the chart's bottom label is 1e-9" "$(grep -E ' 1e-?[0-9]+ +[|]' "$TMP/screen")"; fi
run tui --help
expect_rc "tui --help exits 0" 0
expect_out "tui --help names the screens" "2 Compare"
finish
