# tests/cli/tui_golden.sh — golden screens of `fp8plan tui --headless`: every
# screen at 80x24, the Plan at 120x40 and 200x60, the too-small screen at 60x15,
# under TERM=dumb (no colour) and TERM=xterm-256color (colour), in the C locale
# (ASCII glyphs) and under C.UTF-8 (Unicode blocks). A dump is the screen's text
# and then its attribute map, so colour and bold/reverse are compared too.
#
# After an intended change of a screen (or of the planner's numbers), rewrite
# the goldens and review the diff:
#   UPDATE_GOLDEN=1 FP8PLAN=build/fp8plan FP8PLAN_ROOT=. sh tests/cli/tui_golden.sh
. "$FP8PLAN_ROOT/tests/lib.sh"

golden="$FP8PLAN_ROOT/tests/golden/tui"
if [ "${CI:-false}" = true ] && [ "${UPDATE_GOLDEN:-0}" != 0 ]; then
    fail "UPDATE_GOLDEN under CI=true" "golden screens are reviewed changes; CI never rewrites them"
    finish
    exit 1
fi

# name | size | TERM | locale | keys | extra options
cases='plan_80x24_dumb|80x24|dumb|C||
plan_80x24_xterm|80x24|xterm-256color|C||
plan_80x24_nocolor_flag|80x24|xterm-256color|C||--no-color
plan_120x40_dumb|120x40|dumb|C||
plan_120x40_xterm_utf8|120x40|xterm-256color|C.UTF-8||
plan_120x40_dumb_utf8|120x40|dumb|C.UTF-8||
plan_200x60_xterm|200x60|xterm-256color|C||
small_60x15_dumb|60x15|dumb|C||
small_60x15_xterm|60x15|xterm-256color|C.UTF-8||
plan_fp8lm_80x24_dumb|80x24|dumb|C|<Down><Down>/fp8lm<Enter>|
plan_tp128_80x24_dumb|80x24|dumb|C|<Down><Down><Down>++++|
plan_details_80x24_dumb|80x24|dumb|C|<PgDn><PgDn><PgDn>|
compare_80x24_dumb|80x24|dumb|C|2|
compare_t5_120x40_xterm|120x40|xterm-256color|C|2ttt|
scales_80x24_dumb|80x24|dumb|C|3|
scaling_80x24_dumb|80x24|dumb|C|4|
scaling_120x40_xterm_utf8|120x40|xterm-256color|C.UTF-8|4|
formats_80x24_xterm|80x24|xterm-256color|C|5|
help_80x24_dumb|80x24|dumb|C|?|
prompt_80x24_dumb|80x24|dumb|C|<Down><Down><Down><Enter>16|
resized_80x24_dumb|120x40|dumb|C|<resize=60x15><resize=80x24>|
plan_moe_torchtitan_80x24_dumb|80x24|dumb|C|<Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Down><Right><Right>|--model mixtral-8x7b --tp 2 --pp 1 --dp 8 --ep 4'

mkdir -p "$TMP/dumps"
echo "$cases" | while IFS='|' read -r name size term loc keys extra; do
    out="$TMP/dumps/$name.txt"
    # shellcheck disable=SC2086
    env -u NO_COLOR TERM="$term" LC_ALL="$loc" "$FP8PLAN" tui --headless --size "$size" --keys "$keys" \
        --dump "$out" $extra >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "FAIL - $name: exit status $rc: $(head -c 300 "$TMP/err")"
        continue
    fi
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
        mkdir -p "$golden" && cp "$out" "$golden/$name.txt"
        echo "ok - $name (golden rewritten)"
    elif [ ! -f "$golden/$name.txt" ]; then
        echo "FAIL - $name: no golden $golden/$name.txt (UPDATE_GOLDEN=1 writes it)"
    elif diff -u "$golden/$name.txt" "$out" >"$TMP/diff"; then
        echo "ok - $name"
    else
        echo "FAIL - $name: screen differs from tests/golden/tui/$name.txt"
        head -n 40 "$TMP/diff" | sed 's/^/  /'
        echo "  (intended? UPDATE_GOLDEN=1 FP8PLAN=build/fp8plan FP8PLAN_ROOT=. sh tests/cli/tui_golden.sh)"
    fi
done >"$TMP/results"
cat "$TMP/results"
passed=$(grep -c '^ok - ' "$TMP/results")
failed=$(grep -c '^FAIL - ' "$TMP/results")

# what this run drew (not the committed goldens, which a careless UPDATE_GOLDEN would rewrite to
# match anything) says what it should: sizes, colour and glyphs as configured
dumps="$TMP/dumps"
check_header() { # name expected-header-fragment
    if head -n 1 "$dumps/$1.txt" 2>/dev/null | grep -qF -- "$2"; then pass "$1 header: $2"; else fail "$1 header: $2"; fi
}
check_header plan_80x24_dumb "80x24 TERM=dumb colour=off unicode=off"
check_header plan_80x24_xterm "TERM=xterm-256color colour=on unicode=off"
check_header plan_80x24_nocolor_flag "colour=off"
check_header plan_120x40_xterm_utf8 "colour=on unicode=on"
check_header small_60x15_dumb "60x15"
if grep -qF "too small: have 60x15, need 80x24" "$dumps/small_60x15_dumb.txt"; then
    pass "60x15 shows the too-small screen"
else
    fail "60x15 shows the too-small screen"
fi
# monochrome bar: one glyph per category (#=*+% then . for free), none of them colour
if grep -qE '^ GPU .*\[#+\+{3,}%+\.+\]' "$dumps/plan_80x24_dumb.txt"; then
    pass "monochrome bar: states #, activations +, overheads %, free ."
else
    fail "monochrome bar: states #, activations +, overheads %, free ."
fi
# NO_COLOR (no-color.org): any non-empty value turns colour off even on a colour terminal
NO_COLOR=1 TERM=xterm-256color LC_ALL=C "$FP8PLAN" tui --headless --dump "$TMP/nc.txt" >/dev/null 2>&1
if head -n 1 "$TMP/nc.txt" | grep -qF "colour=off"; then pass "NO_COLOR=1 turns colour off"; else fail "NO_COLOR=1 turns colour off"; fi
NO_COLOR= TERM=xterm-256color LC_ALL=C "$FP8PLAN" tui --headless --dump "$TMP/nc.txt" >/dev/null 2>&1
if head -n 1 "$TMP/nc.txt" | grep -qF "colour=on"; then pass "an empty NO_COLOR keeps colour"; else fail "an empty NO_COLOR keeps colour"; fi
finish
