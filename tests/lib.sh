# tests/lib.sh — helpers for end-to-end CLI tests (sourced by tests/cli/*.sh).
#
# Each check prints "ok - name" or "FAIL - name" with what differed, and
# `finish` prints the "N passed, M failed" line that tests/run.sh adds up.
# FP8PLAN is the binary under test; TMP is a scratch directory removed on exit.
set -u
: "${FP8PLAN:?FP8PLAN must point at the fp8plan binary}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

pass() { passed=$((passed + 1)); echo "ok - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1"; shift; for l in "$@"; do echo "  $l" >&2; done; }

# run ARGS...: runs fp8plan, leaving stdout in $TMP/out, stderr in $TMP/err, status in $rc.
run() { "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }
# run_in INPUT ARGS...: same, with INPUT on stdin.
run_in() { local in=$1; shift; printf '%s' "$in" | "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }

expect_rc() { # name expected
    if [ "$rc" -eq "$2" ]; then pass "$1"; else fail "$1" "exit status $rc, expected $2" "stderr: $(head -c 400 "$TMP/err")"; fi
}
expect_out() { # name fixed-string expected in stdout
    if grep -qF -- "$2" "$TMP/out"; then pass "$1"; else fail "$1" "stdout lacks: $2" "stdout: $(head -c 600 "$TMP/out")"; fi
}
expect_err() { # name fixed-string expected in stderr
    if grep -qF -- "$2" "$TMP/err"; then pass "$1"; else fail "$1" "stderr lacks: $2" "stderr: $(head -c 600 "$TMP/err")"; fi
}
expect_no_out() { # name: stdout must be empty (nothing printed as data on error)
    if [ ! -s "$TMP/out" ]; then pass "$1"; else fail "$1" "stdout not empty: $(head -c 300 "$TMP/out")"; fi
}
expect_eq() { # name actual expected
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1" "got:      $2" "expected: $3"; fi
}

finish() { echo "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; }
