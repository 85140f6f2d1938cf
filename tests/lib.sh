# tests/lib.sh — helpers for end-to-end CLI tests (sourced by tests/cli/*.sh).
#
# Each check prints "ok - name" or "FAIL - name" with what differed, `skip`
# prints "skip - name (why)", and `finish` prints the "N passed, M failed,
# K skipped" line that tests/run.sh adds up.
# FP8PLAN is the binary under test; TMP is a scratch directory removed on exit.
set -u
: "${FP8PLAN:?FP8PLAN must point at the fp8plan binary}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
skipped=0

pass() { passed=$((passed + 1)); echo "ok - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "  $l" >&2; done; }
# skip NAME WHY: a check this machine cannot run for want of something a CPU machine can have (a tool):
# CI fails on it. skip_hw NAME WHY: it needs other hardware (a GPU, or none); skip_build NAME WHY: this
# build leaves the part out (a sanitizer build has no CUDA) and the default build runs it. skip_load NAME
# WHY: a timing check this shared machine was too busy to measure, after one retry (WHY names the load
# average): never a pass, counted as a skip.
skip() { skipped=$((skipped + 1)); echo "skip - $1 ($2)"; }
skip_hw() { skip "$1" "hardware: $2"; }
skip_build() { skip "$1" "build: $2"; }
skip_load() { skip "$1" "load: $2"; }
# load_busy: true when the 1-minute load average passes the cores, the case in which a timing check that missed
# twice is a skip_load, not a failure; LOAD is set to the load average and CORES to the cores, for its reason
load_busy() {
    LOAD=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null) CORES=$(nproc 2>/dev/null || echo 1)
    awk -v l="${LOAD:-0}" -v n="$CORES" 'BEGIN { exit !(l > n) }'
}
# timed_twice FN LO HI: runs FN, which sets $took (seconds), and once more when $took is outside LO..HI (a timing
# check gets one retry)
timed_twice() { "$1"; [ "$took" -ge "$2" ] && [ "$took" -le "$3" ] || "$1"; }
# judge_took NAME LO HI: after timed_twice, passes NAME when $took is within LO..HI; else a skip naming the load on a
# machine busier than its cores (load_busy); else a failure
judge_took() {
    if [ "$took" -ge "$2" ] && [ "$took" -le "$3" ]; then pass "$1 ($took s)"
    elif load_busy; then skip_load "$1" "$took s, twice out of $2-$3 s, at load average $LOAD on $CORES cores"
    else fail "$1: took $took s" "expected $2-$3 s (load average $LOAD)"; fi
}
# load_scale: the 1-minute load average over the cores, rounded up, at least 1 (1 where /proc/loadavg is not): what
# a hang guard (a time limit, not a checked figure) is multiplied by where a busy machine gives a process about
# cores / load of a core
load_scale() {
    awk -v n="$(nproc 2>/dev/null || echo 1)" '{ s = int($1 / n); if (s < $1 / n) s++ } END { print (s < 1 ? 1 : s) }' \
        /proc/loadavg 2>/dev/null || echo 1
}

# run ARGS...: runs fp8plan, leaving stdout in $TMP/out, stderr in $TMP/err, status in $rc.
run() { "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }
# run_in INPUT ARGS...: same, with INPUT on stdin.
run_in() { local in=$1; shift; printf '%s' "$in" | "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

expect_rc() { # name expected
    if [ "$rc" -eq "$2" ]; then pass "$1"; else fail "$1" "exit status $rc, expected $2" "stderr: $(head -c 400 "$TMP/err")"; fi
}
expect_out() { # name fixed-string expected in stdout (an empty string would match anything: refused)
    if [ -z "$2" ]; then fail "$1" "empty pattern"; elif grep -qF -- "$2" "$TMP/out"; then pass "$1"; else fail "$1" "stdout lacks: $2" "stdout: $(head -c 600 "$TMP/out")"; fi
}
expect_prose() { # name fixed-string expected in stdout read as prose: line breaks become spaces and runs of
    # spaces one, so wrapped text (its breaks move with the length of a path in it) matches wherever it wraps
    if [ -z "$2" ]; then fail "$1" "empty pattern"
    elif tr '\n' ' ' <"$TMP/out" | tr -s ' ' | grep -qF -- "$2"; then pass "$1"
    else fail "$1" "stdout (as prose) lacks: $2" "stdout: $(head -c 600 "$TMP/out")"; fi
}
expect_err() { # name fixed-string expected in stderr (an empty string is refused)
    if [ -z "$2" ]; then fail "$1" "empty pattern"; elif grep -qF -- "$2" "$TMP/err"; then pass "$1"; else fail "$1" "stderr lacks: $2" "stderr: $(head -c 600 "$TMP/err")"; fi
}
expect_no_out() { # name: stdout must be empty (nothing printed as data on error)
    if [ ! -s "$TMP/out" ]; then pass "$1"; else fail "$1" "stdout not empty: $(head -c 300 "$TMP/out")"; fi
}
expect_eq() { # name actual expected: equal and not empty (two empty sides mean nothing was read)
    if [ -z "$2$3" ]; then
        fail "$1" "both sides are empty"
    elif [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got:      $2" "expected: $3"; fi
}
expect_empty() { # name value: the value must be empty (say so explicitly; expect_eq refuses two empty sides)
    if [ -z "$2" ]; then pass "$1"; else fail "$1" "expected nothing, got: $(printf '%s' "$2" | head -c 300)"; fi
}
expect_line() { # name regex: stdout has a whole line matching the extended regex (anchored: ^...$)
    if grep -qE -- "^$2\$" "$TMP/out"; then pass "$1"; else fail "$1" "stdout has no line ^$2\$" "stdout: $(head -c 600 "$TMP/out")"; fi
}

finish() { echo "$passed passed, $failed failed, $skipped skipped"; [ "$failed" -eq 0 ]; }
