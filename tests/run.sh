#!/bin/sh
# tests/run.sh BUILD_DIR — run every unit-test binary and CLI test script of a
# tier, several at a time, add up their "N passed, M failed, K skipped" lines,
# and end with the grand total in the same form. Exit status 0 only if nothing
# failed.
#
# Tiers (TEST_TIER): a suite whose head comment has a line `# tier: full`
# (` * tier: full` in C) is in the full tier — exhaustive sweeps, the headless-browser pages,
# the heavier mpirun scripts. `quick` (make test, the default) runs the other
# suites; `full` (make test-full, what .ci/run runs) runs every suite.
#
# Parallel: TEST_JOBS suites at once (default: the CPUs, plus one for the
# suites that wait on pipes, sleeps and child processes). Each suite writes to
# a log of its own; the report prints them in source order when all are done,
# so it reads the same whatever the order they finished in. The slowest suites
# start first: their times from the last run are kept in BUILD_DIR/test-times.txt
# (the whole table, sorted; the slowest are printed at the end).
#
# Loopholes it closes:
#  - the suites to expect come from the sources (tests/unit/test_*.c, one
#    binary each, and tests/cli/*.sh): a binary that was not built, a suite that
#    ends without its summary line, exits non-zero with nothing failed, or runs
#    no test at all is a failure named after the suite;
#  - every suite runs under a time limit (TEST_TIMEOUT seconds, default 600, times
#    the load over the cores as the suite starts, rounded up: tests/lib.sh
#    load_scale): a hang becomes "FAIL - suite timed out". The limit is a hang
#    guard, not a checked figure: on a machine busier than its cores a suite gets
#    about cores / load of a core (calibrate.sh: 13-15 s of CPU, 61-83 s at a load
#    of 10-12 under nice 10; the selftest of tests/cli/gpu_check.sh scales its own
#    stages' limits the same way), so a fixed 600 s stopped sound suites at 20-27;
#  - skipped tests are counted. Under CI=true a skip fails the run unless its
#    reason is in a category FP8PLAN_SKIP_OK allows (comma-separated; default
#    "hardware,load"; the Makefile adds "build" for builds without CUDA): a check a
#    CPU machine can run (the NVIDIA-header codec oracles, tmux) must run in CI;
#    a timing check too noisy to measure on a shared machine is a "load" skip;
#  - UPDATE_GOLDEN (rewrite the golden screens) is refused under CI=true.
set -u
limit=${TEST_TIMEOUT:-600}

# ---- one suite (a worker started by xargs below): run it, keep log, status, time ----
if [ "${1:-}" = --one ]; then
    dir=$2
    idx=$3
    read -r kind path <"$dir/$idx.suite"
    # tests/lib.sh load_scale: the 1-minute load average over the cores, rounded up, at least 1
    scale=$(awk -v n="$(nproc 2>/dev/null || echo 1)" '{ s = int($1 / n); if (s < $1 / n) s++ } END { print (s < 1 ? 1 : s) }' \
        /proc/loadavg 2>/dev/null || echo 1)
    limit=$((limit * scale))
    echo "$limit" >"$dir/$idx.limit"
    t0=$(date +%s%N)
    if [ "$kind" = unit ]; then
        timeout -k 10 "$limit" "$path" >"$dir/$idx.log" 2>&1
    else
        timeout -k 10 "$limit" sh "$path" >"$dir/$idx.log" 2>&1
    fi
    echo $? >"$dir/$idx.rc"
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >"$dir/$idx.ms"
    exit 0
fi

build=$(cd "${1:-build}" && pwd) || exit 1
FP8PLAN=$build/fp8plan
export FP8PLAN
root=$(cd "$(dirname "$0")/.." && pwd)
self=$root/tests/run.sh # the workers below start it again, from the repository root
export FP8PLAN_ROOT="$root"
cd "$root" || exit 1 # tests read models/ and tests/ relative to the repository root
ci=${CI:-false}
skip_ok=${FP8PLAN_SKIP_OK:-hardware,load}
tier=${TEST_TIER:-quick}
jobs=${TEST_JOBS:-$(($(nproc 2>/dev/null || echo 1) + 1))}
case $tier in quick | full) ;; *)
    echo "FAIL - TEST_TIER=$tier: quick or full"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
    ;;
esac
case $jobs in '' | *[!0-9]* | 0)
    echo "FAIL - TEST_JOBS=$jobs: a count of suites, 1 or more"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
    ;;
esac

if [ "$ci" = true ] && [ -n "${UPDATE_GOLDEN:-}" ] && [ "${UPDATE_GOLDEN}" != 0 ]; then
    echo "FAIL - UPDATE_GOLDEN is set under CI=true: golden files are reviewed changes, never rewritten by CI"
    echo "0 passed, 1 failed, 0 skipped"
    exit 1
fi

total_p=0
total_f=0
total_s=0
broken=0
expected=0
reported=0
deferred=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
times=$build/test-times.txt

bad() { # name why: a suite-level failure
    echo "FAIL - $1 $2"
    broken=$((broken + 1))
}

in_full_tier() { grep -qE '^(#| \*) tier: full' "$1"; }

add() { # kind name path: one suite to run (kind unit or cli)
    expected=$((expected + 1))
    echo "$2" >"$dir/$expected.name"
    echo "$1 $3" >"$dir/$expected.suite"
}

for src in "$root"/tests/unit/test_*.c; do
    [ -f "$src" ] || continue
    if [ "$tier" = quick ] && in_full_tier "$src"; then
        deferred=$((deferred + 1))
        continue
    fi
    add unit "$(basename "$src" .c)" "$build/tests/$(basename "$src" .c)"
done
for s in "$root"/tests/cli/*.sh; do
    [ -f "$s" ] || continue
    if [ "$tier" = quick ] && in_full_tier "$s"; then
        deferred=$((deferred + 1))
        continue
    fi
    add cli "cli/$(basename "$s" .sh)" "$s"
done

# the order to start them in: slowest first by the last run's times (unknown ones first of all)
i=0
while [ "$i" -lt "$expected" ]; do
    i=$((i + 1))
    name=$(cat "$dir/$i.name")
    ms=$(awk -v n="$name" '$2 == n { print $1; exit }' "$times" 2>/dev/null)
    echo "${ms:-999999999} $i"
done | sort -k1,1nr -k2,2n | awk '{ print $2 }' >"$dir/order"

echo "running $expected suites of tier $tier, $jobs at a time (TEST_JOBS)"
w0=$(date +%s%N)
xargs -P "$jobs" -n 1 sh "$self" --one "$dir" <"$dir/order"
w1=$(date +%s%N)

i=0
while [ "$i" -lt "$expected" ]; do
    i=$((i + 1))
    name=$(cat "$dir/$i.name")
    read -r kind path <"$dir/$i.suite"
    log=$dir/$i.log
    echo "== $name"
    if [ "$kind" = unit ] && [ ! -x "$path" ]; then
        bad "$name" "was not built ($path missing)"
        continue
    fi
    if [ ! -f "$dir/$i.rc" ]; then
        bad "$name" "did not run"
        continue
    fi
    status=$(cat "$dir/$i.rc")
    cat "$log"
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        bad "$name" "timed out after $(cat "$dir/$i.limit" 2>/dev/null || echo "$limit") s (TEST_TIMEOUT x the load over the cores)"
        continue
    fi
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        bad "$name" "ended without a summary line (exit status $status)"
        continue
    fi
    reported=$((reported + 1))
    p=${line%% passed*}
    f=${line#*passed, }
    f=${f%% failed*}
    s=$(grep -c '^skip - ' "$log")
    total_p=$((total_p + p))
    total_f=$((total_f + f))
    total_s=$((total_s + s))
    if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then bad "$name" "exited with status $status"; fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then bad "$name" "ran no test"; fi
    if [ "$ci" = true ]; then
        grep '^skip - ' "$log" | while IFS= read -r l; do
            cat=$(echo "$l" | sed -n 's/^skip - .* (\([a-z]*\): .*)$/\1/p')
            case ",$skip_ok," in
            *",$cat,"*) [ -n "$cat" ] && continue ;;
            esac
            echo "FAIL - $name: skipped under CI=true, but a CPU machine can run it: ${l#skip - }"
        done >"$log.ci"
        if [ -s "$log.ci" ]; then
            cat "$log.ci"
            broken=$((broken + $(wc -l <"$log.ci")))
        fi
        rm -f "$log.ci"
    fi
done
if [ "$reported" -ne "$expected" ]; then
    echo "FAIL - $reported of $expected suites reported a summary"
    broken=$((broken + 1))
fi

# the time table: every suite that ran, slowest first (kept for the next run's order)
i=0
while [ "$i" -lt "$expected" ]; do
    i=$((i + 1))
    [ -f "$dir/$i.ms" ] && echo "$(cat "$dir/$i.ms") $(cat "$dir/$i.name")"
done | sort -k1,1nr >"$dir/times"
if [ "$tier" = full ] || [ ! -f "$times" ]; then
    cp "$dir/times" "$times"
else # a quick run keeps the full tier's last times
    awk 'NR == FNR { seen[$2] = 1; print; next } !($2 in seen)' "$dir/times" "$times" | sort -k1,1nr >"$dir/merged"
    cp "$dir/merged" "$times"
fi
echo
echo "slowest suites (seconds; all of them in $times):"
head -n "${TEST_TIMES_SHOWN:-12}" "$dir/times" | awk '{ printf "  %7.1f  %s\n", $1 / 1000, $2 }'
awk -v wall=$(((w1 - w0) / 1000000)) -v jobs="$jobs" '{ sum += $1 } END {
    printf "suites took %.1f s together, %.1f s of wall time with %d at a time\n", sum / 1000, wall / 1000, jobs }' "$dir/times"

total_f=$((total_f + broken))
echo
if [ "$deferred" -gt 0 ]; then
    echo "$expected suites ($deferred more in the full tier: make test-full)"
else
    echo "$expected suites"
fi
echo "$total_p passed, $total_f failed, $total_s skipped"
[ "$total_f" -eq 0 ]
