# tests/cli/hostile_pipes.sh — pipes at both ends: stdout on a pipe whose reader has gone (`fp8plan models
# | head -c 10`) is an error naming standard output, exit 74, never a silent death by SIGPIPE (141); an
# input FIFO with no writer (`--trace FIFO`, a catalog models.csv that is a FIFO) waits 10 s for one and
# then fails naming the file, exit 66, never a hang; a pipe that has its writer (`--trace <(slow)`) is
# read however long the writer takes to start, and a writer that comes within the wait is read.
. "$FP8PLAN_ROOT/tests/lib.sh"

export LC_ALL=C

# closed_pipe ARGS...: fp8plan with stdout on a pipe whose read end is closed before it starts (no race
# with a reader that might still be there), stderr in $TMP/err, status in $rc. Python hands the child the
# default SIGPIPE action, as a shell does.
closed_pipe() {
    rc=$(python3 - "$FP8PLAN" "$@" 2>"$TMP/err" <<'PY'
import os, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
sys.stderr.write(p.stderr.decode(errors="replace"))
print(p.returncode)
PY
)
}

closed_pipe models
expect_rc "models into a closed pipe exits 74 (it died of SIGPIPE)" 74
expect_err "the closed pipe is named with its reason" "fp8plan models: cannot write standard output: Broken pipe"
closed_pipe sweep --model gpt-7b --gpu h100-sxm --gpus 64 --top 1000
expect_rc "a sweep into a closed pipe exits 74" 74
expect_err "the sweep says so" "fp8plan sweep: cannot write standard output: Broken pipe"
{
    "$FP8PLAN" models 2>"$TMP/err"
    echo $? >"$TMP/rc"
} | head -c 10 >/dev/null
rc=$(cat "$TMP/rc")
if [ "$rc" -eq 0 ] || [ "$rc" -eq 74 ]; then pass "models | head -c 10: status $rc (0 or 74, never 141)"; else
    fail "models | head -c 10: status $rc" "stderr: $(head -c 300 "$TMP/err")"; fi

# --- -o /dev/stdout and /dev/stderr on a pipe: written in place (/dev/stdout is /proc/self/fd/1, a kernel
# link whose text "pipe:[N]" names no file; it used to be taken for a file to create there: exit 73)
{
    "$FP8PLAN" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --format csv -o /dev/stdout 2>"$TMP/err"
    echo $? >"$TMP/rc"
} | cat >"$TMP/out"
rc=$(cat "$TMP/rc")
expect_rc "plan -o /dev/stdout into a pipe exits 0" 0
expect_line "... and the CSV comes through the pipe" 'model,gpu,recipe,stack,.*'
{
    "$FP8PLAN" plan --model gpt-7b --gpu h100-sxm --recipe bf16 --format csv -o /dev/stderr 2>&1 >/dev/null
    echo $? >"$TMP/rc"
} | cat >"$TMP/out"
rc=$(cat "$TMP/rc")
expect_rc "plan -o /dev/stderr into a pipe exits 0" 0
expect_line "... and the CSV comes through stderr's pipe" 'model,gpu,recipe,stack,.*'
{
    "$FP8PLAN" run --model gpt2-124m --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --recipe megatron-bf16 \
        --steps 2 --quiet --loss-log /dev/stdout 2>"$TMP/err"
    echo $? >"$TMP/rc"
} | cat >"$TMP/out"
rc=$(cat "$TMP/rc")
expect_rc "run --loss-log /dev/stdout into a pipe exits 0" 0
expect_line "... and the loss log comes through the pipe" 'step,loss'

# --- an input FIFO without a writer: 66 after the 10 s wait, naming the file. The waits run side by side (a
# catalog FIFO, a pipe silent for 12 s, below): each is timed by its own process's clock, and the suite takes
# 12 s for them, not 32.
printf 'step,amax\n1,1\n2,640\n3,2\n' >"$TMP/trace.csv"
"$FP8PLAN" scaling --history 4 --algo max --trace "$TMP/trace.csv" --format csv >"$TMP/want" 2>&1
mkfifo "$TMP/fifo"
mkdir "$TMP/cat"
cp "$FP8PLAN_ROOT"/models/*.csv "$TMP/cat"/
rm "$TMP/cat/models.csv"
mkfifo "$TMP/cat/models.csv"
run_to() { timeout 30 "$FP8PLAN" "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?; }
# a catalog models.csv that is a FIFO without a writer
{
    timeout 30 "$FP8PLAN" models --catalog "$TMP/cat" >"$TMP/cat.out" 2>"$TMP/cat.err"
    echo $? >"$TMP/cat.rc"
} &
cat_job=$!
# as `--trace <(sleep 12; cat FILE)` in bash: a pipe whose writer is there but silent past the 10 s wait
{
    (sleep 12; cat "$TMP/trace.csv") | timeout 30 "$FP8PLAN" scaling --history 4 --algo max --trace /dev/stdin \
        --format csv >"$TMP/slow.out" 2>"$TMP/slow.err"
    echo $? >"$TMP/slow.rc"
} &
slow_job=$!
# the wait's length is a timing check: once more when it is off, then a skip naming the load when the machine is
# busier than its cores (the process may not run when its 10 s are up), else a failure
wait_fifo() {
    start=$(date +%s)
    run_to scaling --history 4 --algo max --trace "$TMP/fifo"
    took=$(($(date +%s) - start))
}
timed_twice wait_fifo 9 20
expect_rc "--trace FIFO without a writer exits 66 (it hung)" 66
expect_err "the FIFO is named with the reason" "cannot read $TMP/fifo: no process is writing to this FIFO (waited 10 s)"
judge_took "gave up after the wait" 9 20

wait "$cat_job"
rc=$(cat "$TMP/cat.rc")
cp "$TMP/cat.err" "$TMP/err"
expect_rc "a catalog models.csv that is a FIFO without a writer exits 66" 66
expect_err "the catalog FIFO is named" "cannot read $TMP/cat/models.csv: no process is writing to this FIFO"

# --- a writer arriving within the wait is read; a pipe whose writer is slow to start is read in full
(sleep 2; cat "$TMP/trace.csv" >"$TMP/fifo") &
run_to scaling --history 4 --algo max --trace "$TMP/fifo" --format csv
wait $!
expect_rc "a writer that comes after 2 s is read" 0
expect_eq "the FIFO's trace gives the file's result" "$(cat "$TMP/out")" "$(cat "$TMP/want")"
wait "$slow_job"
rc=$(cat "$TMP/slow.rc")
cp "$TMP/slow.err" "$TMP/err"
expect_rc "--trace /dev/stdin on a pipe silent for 12 s is read (its writer holds the pipe)" 0
expect_eq "the slow pipe's trace gives the file's result" "$(cat "$TMP/slow.out")" "$(cat "$TMP/want")"
finish
