#!/bin/sh
# tests/run.sh BUILD_DIR — run every unit-test binary and CLI test script, add
# up their "N passed, M failed" lines, and end with the grand total in the
# same form. Exit status 0 only if nothing failed and every suite reported.
set -u
build=$(cd "${1:-build}" && pwd) || exit 1
FP8PLAN=$build/fp8plan
export FP8PLAN
root=$(cd "$(dirname "$0")/.." && pwd)
export FP8PLAN_ROOT="$root"
cd "$root" || exit 1 # tests read models/ and tests/ relative to the repository root
total_p=0
total_f=0
broken=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

suite() { # name command...
    name=$1
    shift
    echo "== $name"
    "$@" >"$log" 2>&1
    status=$?
    cat "$log"
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        echo "FAIL - $name ended without a summary line (exit status $status)"
        broken=$((broken + 1))
        return
    fi
    p=${line%% passed*}
    f=${line#*passed, }
    f=${f%% failed*}
    total_p=$((total_p + p))
    total_f=$((total_f + f))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL - $name exited with status $status"
        broken=$((broken + 1))
    fi
}

for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    suite "$(basename "$t")" "$t"
done
for s in "$root"/tests/cli/*.sh; do
    [ -f "$s" ] || continue
    suite "cli/$(basename "$s" .sh)" sh "$s"
done

total_f=$((total_f + broken))
echo
echo "$total_p passed, $total_f failed"
[ "$total_f" -eq 0 ]
