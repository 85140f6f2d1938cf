# tests/cli/fuzz_replay.sh — every fuzz target (tests/fuzz/fuzz_*.c) over its seed corpus, built without
# libFuzzer next to the binary under test ($BUILD/fuzz-replay/), so the plain and the ASan/UBSan runs
# of `make test` exercise them: the CLI option parsers, the sweep, hostile catalog and text bytes, the
# output writer, the codecs and the TUI keys. A target aborts (or a sanitizer stops it) on a failure.
. "$FP8PLAN_ROOT/tests/lib.sh"

dir=$(dirname "$FP8PLAN")/fuzz-replay
found=0
for src in "$FP8PLAN_ROOT"/tests/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    bin=$dir/$name
    corpus=$FP8PLAN_ROOT/tests/fuzz/corpus/$name
    if [ ! -x "$bin" ]; then
        fail "$name: replay binary built" "missing $bin (make tests builds it)"
        continue
    fi
    found=$((found + 1))
    if [ ! -d "$corpus" ] || [ -z "$(ls "$corpus")" ]; then
        fail "$name: has a seed corpus" "tests/fuzz/corpus/$name is empty"
        continue
    fi
    out=$(cd "$FP8PLAN_ROOT" && "$bin" "$corpus"/* 2>"$TMP/err")
    rc=$?
    n=$(ls "$corpus" | wc -l)
    if [ "$rc" -eq 0 ] && [ "$out" = "$n inputs" ]; then pass "$name: $n seed inputs"; else
        fail "$name: $n seed inputs" "exit $rc, said '$out'" "$(tail -n 20 "$TMP/err")"; fi
done
if [ "$found" -ge 8 ]; then pass "every fuzz target replayed ($found)"; else fail "every fuzz target replayed ($found)"; fi
finish
