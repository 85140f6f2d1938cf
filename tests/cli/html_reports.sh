# tests/cli/html_reports.sh — --format html and report html without a browser, and the terminal's
# memory bars. The pages' structure and their numbers against the CSV are checked by html_check.py
# (well-formed, every chart, finite coordinates, bars on one scale, every charted number exactly the
# CSV's); html_browser.sh renders them in Chromium.
. "$FP8PLAN_ROOT/tests/lib.sh"

L175="--model gpt-175b --gpu h100-sxm --tp 8 --pp 4 --dp 4 --mbs 1 --seq 2048 --dist-opt"

# ---- the pages, checked against the CSV (python3's standard library) ----
if command -v python3 >/dev/null 2>&1; then
    python3 "$FP8PLAN_ROOT/tests/cli/html_check.py" "$TMP" >"$TMP/check.out" 2>"$TMP/check.err"
    cat "$TMP/check.out"
    sed 's/^/  /' "$TMP/check.err" >&2
    passed=$((passed + $(grep -c '^ok - ' "$TMP/check.out")))
    failed=$((failed + $(grep -c '^FAIL - ' "$TMP/check.out")))
    [ "$(grep -c '^ok - ' "$TMP/check.out")" -ge 150 ] || fail "html_check.py ran all its checks" "$(tail -n 5 "$TMP/check.err")"
else
    echo "skip - the pages' structure and CSV cross-checks (no python3: sudo apt-get install -y python3)"
fi

# ---- what `make report` runs (README's set-up, docs/build-and-test.md) ----
(cd "$TMP" && "$FP8PLAN" report html -o fp8plan-report.html >out 2>err)
rc=$?
expect_rc "report html -o FILE exits 0" 0
expect_eq "report html writes a page" "$(head -c 15 "$TMP/fp8plan-report.html")" "<!DOCTYPE html>"
expect_empty "report html says nothing on stdout" "$(cat "$TMP/out")"
run report html $L175 --recipes megatron-bf16,te-fp8 --tp 4 --pp 8
expect_rc "report html takes plan options" 0
expect_out "report html with options shows the layout" "TP 4 x PP 8 (vpp 1) x CP 1 x DP 4"
run report html --format csv
expect_rc "report html --format csv is a usage error" 64
expect_err "report html --format csv says why" "this report is html"
run report html --recipes te-fp8
expect_rc "report html with one recipe is a usage error" 64
run report seed --format json
expect_rc "report seed --format json is a usage error" 64
expect_err "report seed --format json says why" "report seed and report fidelity print a table or write html"
run report -o x.html html
expect_rc "report with html not first is a usage error" 64
expect_err "the message says where the name goes" "name the report first"
run report nope
expect_err "unknown reports list html" "known: seed, fidelity, html"

# ---- the memory chart's groups each look different (issue 46: weights and overheads shared the blue;
# the optimizer's and the overheads' hatches, both blue diagonals, were hard to tell apart) ----
# fills(page, key): "segment colour pattern" of every memory bar of that recipe (fill url(#mem-sC-P))
fills() {
    tr '<' '\n' <"$1" | sed -n 's/^rect class="bar".*fill="url(#mem-s\([0-9]*\)-\([0-9]*\))".*data-cat="'"$2"'".*data-seg="\([^"]*\)".*/\3|\1|\2/p'
}
run plan $L175 --recipe megatron-bf16 --format html -o "$TMP/plan.html"
fills "$TMP/plan.html" megatron-bf16 >"$TMP/fills"
expect_eq "plan page: the memory bar has its 9 groups" "$(wc -l <"$TMP/fills" | tr -d ' ')" 9
expect_eq "... each group in a colour of its own" "$(cut -d'|' -f2 "$TMP/fills" | sort -u | wc -l | tr -d ' ')" 9
expect_eq "... and a pattern of its own" "$(cut -d'|' -f3 "$TMP/fills" | sort -u | wc -l | tr -d ' ')" 9
run compare $L175 --recipes megatron-bf16,te-fp8 --format html -o "$TMP/cmp.html"
fills "$TMP/cmp.html" te-fp8 >"$TMP/fills"
expect_eq "compare page: a recipe's 9 groups" "$(wc -l <"$TMP/fills" | tr -d ' ')" 9
expect_eq "... each group in a colour and a pattern of its own" \
    "$(cut -d'|' -f2 "$TMP/fills" | sort -u | wc -l | tr -d ' ') $(cut -d'|' -f3 "$TMP/fills" | sort -u | wc -l | tr -d ' ')" "9 9"

# ---- the sweep chart marks the memory limit (issue 46): the GPU's capacity and 95 % of it, as vertical lines
# at their bytes, every layout drawn left of the limit. h100-sxm: 85,520,809,984 B; x 0.95 = 81,244,769,484.8,
# the plan's limit_bytes keeps the whole bytes: 81,244,769,484 ----
run sweep --model llama3-70b --gpu h100-sxm --gpus 256 --format html -o "$TMP/sweep.html"
expect_rc "sweep --format html exits 0" 0
expect_eq "the sweep chart's two limit lines, capacity and limit, at their bytes" \
    "$(grep -o '<g class="limit" data-x="[0-9]*"><title>[^<]*' "$TMP/sweep.html" | sed 's/.*data-x="\([0-9]*\)"><title>/\1 /' | tr '\n' '|')" \
    "85520809984 GPU capacity 85.52 GB|81244769484 memory limit 81.24 GB (95 % of capacity)|"
over=$(grep -o 'class="pt" data-x="[^"]*"' "$TMP/sweep.html" | sed 's/.*data-x="//; s/"//' | awk '$1 > 81244769484 { n++ } END { print n + 0 }')
expect_eq "... no layout drawn past the limit" "$over" 0
if grep -q '<line class="ref1"[^>]*/></svg>memory limit 81.24 GB' "$TMP/sweep.html"; then pass "... the legend names the limit"; else fail "... the legend names the limit"; fi

# ---- formats ----
run compare $L175 --recipes megatron-bf16,te-fp8 --format xml
expect_rc "--format xml is a usage error" 64
expect_err "--format lists html" "expected table, csv, json or html"
run plan $L175 --recipe te-fp8 --view terms --format html
expect_rc "plan --view terms --format html exits 0" 0
expect_out "a view as html is a page with the table" "<td>weight_gemm</td>"
run_in "1
640
" scaling --history 4 --algo max --format html
expect_out "scaling --format html draws the trace" 'id="scaling-bounds"'
run run --backend cpu --model gpt2-124m --recipe te-fp8 --format html
expect_rc "run --format html without -o is a usage error" 64
expect_err "run --format html says it needs -o" "--format html needs -o FILE"
run run --backend cpu --model gpt2-124m --recipe te-fp8 --format pdf -o "$TMP/r.pdf"
expect_rc "run --format pdf is a usage error" 64

# ---- written atomically: a page that cannot be written leaves nothing behind ----
run compare $L175 --recipes megatron-bf16,te-fp8 --format html -o "$TMP/no/such/dir/c.html"
expect_rc "an html page into a missing directory exits 73" 73
expect_no_out "nothing on stdout when the page cannot be written"
expect_empty "no temporary file left" "$(ls "$TMP/no" 2>/dev/null)"

# ---- the terminal: one memory bar per recipe ----
bar_lines() { grep -E '(FITS|OOM)$' "$TMP/out"; }
TERM=xterm LANG=C.UTF-8 LC_ALL= LC_CTYPE= run compare $L175 --recipes megatron-bf16,te-fp8,fp8lm
expect_eq "compare: a memory bar per recipe" "$(bar_lines | wc -l | tr -d ' ')" "3"
expect_out "Unicode blocks under a UTF-8 locale" "█"
expect_out "the legend names the segments and the unit" "memory (GB = 1e9 B): █ state  ▓ FP8 copies"
expect_out "te-fp8's bar carries its FP8 copies" "▓"
expect_out "the capacity is marked" "│"
TERM=dumb LANG=C.UTF-8 run compare $L175 --recipes megatron-bf16,te-fp8,fp8lm
expect_out "ASCII under TERM=dumb" "memory (GB = 1e9 B): # state  = FP8 copies"
expect_eq "the bars and their legend fit 100 columns" \
    "$(sed -n '/^memory (GB/,$p' "$TMP/out" | awk '{ if (length($0) > 100) n++ } END { print n + 0 }')" "0"
expect_eq "no Unicode under TERM=dumb" "$(bar_lines | grep -c '█')" "0"
TERM=xterm LANG=C.UTF-8 run compare $L175 --recipes megatron-bf16,te-fp8 --ascii
expect_eq "no Unicode with --ascii" "$(grep -c '█' "$TMP/out")" "0"
TERM=xterm LANG=C LC_ALL= LC_CTYPE= run plan $L175 --recipe te-fp8
expect_eq "no Unicode in a C locale" "$(grep -c '█' "$TMP/out")" "0"
expect_eq "plan: one memory bar" "$(bar_lines | wc -l | tr -d ' ')" "1"
# the bar's cells: te-fp8 at 60.78 of 85.52 GB (megatron-core stack: BF16 main gradients) fills round(60.78 / 85.52 x width) cells before the capacity
line=$(bar_lines)
w=$(printf '%s' "$line" | sed 's/^  te-fp8  //; s/|.*//' | tr -d '\n' | wc -c)
used=$(printf '%s' "$line" | sed 's/^  te-fp8  //; s/|.*//' | tr -d '.\n' | wc -c)
expect_eq "the used cells are the total's share of the bar" "$used" "$(awk -v w="$w" 'BEGIN { printf "%d", 60.776834508 / 85.520809984 * w + 0.5 }')"
run plan $L175 --recipe te-fp8 --format csv
expect_eq "csv output carries no bar" "$(grep -c 'FITS' "$TMP/out")" "0"

finish
