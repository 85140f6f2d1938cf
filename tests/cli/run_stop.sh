# tests/cli/run_stop.sh — a run that stops early keeps its data: a failed step
# (the FP8PLAN_FAULT_STEP test hook stands in for a backend error) or SIGTERM
# still writes the report, the loss log and the trace for the steps taken, and
# says how many those are; nothing half-written is left.
. "$FP8PLAN_ROOT/tests/lib.sh"

TINY="--model gpt2-124m --layers 2 --hidden 32 --heads 2 --seq 16 --vocab 64 --mbs 2 --recipe te-fp8"

no_temps() { # name: no temporary file of the atomic writer left in $TMP/o
    left=$(find "$TMP/o" -name '*.tmp*' | head -n 3)
    if [ -z "$left" ]; then pass "$1"; else fail "$1" "left: $left"; fi
}

# the reference: 5 steps, uninterrupted
mkdir -p "$TMP/o"
run run $TINY --steps 5 --quiet -o "$TMP/o/full.csv" --loss-log "$TMP/o/full_loss.csv"
expect_rc "uninterrupted run exits 0" 0
expect_eq "uninterrupted: the steps row is 5 asked, 5 taken, all taken" \
    "$(grep '^rate,completed_steps,' "$TMP/o/full.csv" | cut -d, -f9,10,14)" "5,5,every requested step was taken"

# step 3 of 5 fails: steps 1 and 2 are reported
env FP8PLAN_FAULT_STEP=3 "$FP8PLAN" run $TINY --steps 5 -o "$TMP/o/f.csv" --loss-log "$TMP/o/f_loss.csv" \
    --scaling-trace "$TMP/o/f_trace.csv" --save "$TMP/o/f.ckpt" >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "a failed step exits with the step's code (70, internal error)" 70
expect_err "the failed step is named" "step 3: fault injected"
expect_err "no checkpoint of a failed step" "--save: no checkpoint (step 3 failed)"
expect_eq "the report is written: steps row 5 asked, 2 taken, marked" \
    "$(grep '^rate,completed_steps,' "$TMP/o/f.csv" | cut -d, -f9,10,14)" \
    "5,2,STOPPED EARLY: every row covers only the steps taken"
expect_eq "the report's persistent terms still match the plan (weight_gemm planned = measured)" \
    "$(grep '^memory,weight_gemm,' "$TMP/o/f.csv" | cut -d, -f14)" "ok"
# the loss log holds the 2 steps taken, equal to the uninterrupted run's first 2
expect_eq "the loss log has a header and steps 1, 2" "$(cut -d, -f1 "$TMP/o/f_loss.csv" | tr '\n' ' ')" "step 1 2 "
expect_eq "its losses are the uninterrupted run's" "$(sed -n 2,3p "$TMP/o/f_loss.csv")" \
    "$(sed -n 2,3p "$TMP/o/full_loss.csv")"
# trace: 2 steps x 2 layers x 4 linears x 3 operands = 48 rows + header
expect_eq "the scaling trace has the 2 steps' 48 rows" "$(wc -l <"$TMP/o/f_trace.csv" | tr -d ' ')" 49
if [ -e "$TMP/o/f.ckpt" ]; then fail "no checkpoint file" "$TMP/o/f.ckpt exists"; else pass "no checkpoint file"; fi
no_temps "a failed step leaves no temporary file"

# step 1 fails: nothing to report, nothing written
env FP8PLAN_FAULT_STEP=1 "$FP8PLAN" run $TINY --steps 5 -o "$TMP/o/g.csv" --loss-log "$TMP/o/g_loss.csv" \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_rc "the first step failing exits 70" 70
if [ -e "$TMP/o/g.csv" ] || [ -e "$TMP/o/g_loss.csv" ]; then
    fail "no step taken: no report, no loss log" "$(ls "$TMP/o")"
else
    pass "no step taken: no report, no loss log"
fi
no_temps "the first step failing leaves no temporary file"

# SIGTERM after a few steps: the step in flight ends, the report covers the steps taken, exit 143
"$FP8PLAN" run $TINY --steps 1000000 -o "$TMP/o/t.csv" --loss-log "$TMP/o/t_loss.csv" --save "$TMP/o/t.ckpt" \
    >"$TMP/o/t.out" 2>"$TMP/o/t.err" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q '^step      3 ' "$TMP/o/t.out" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
kill -TERM $pid
wait $pid
rc=$?
expect_eq "SIGTERM: exit 128 + 15" "$rc" 143
taken=$(sed -n 's/^fp8plan run: SIGTERM: stopped after \([0-9]*\) of the 1000000 steps asked for$/\1/p' "$TMP/o/t.err")
if [ -n "$taken" ] && [ "$taken" -ge 3 ]; then
    pass "SIGTERM: says how many steps were taken ($taken)"
else
    fail "SIGTERM: says how many steps were taken" "stderr: $(head -c 300 "$TMP/o/t.err")"
fi
expect_eq "SIGTERM: the report's steps row is 1000000 asked, $taken taken" \
    "$(grep '^rate,completed_steps,' "$TMP/o/t.csv" | cut -d, -f9,10)" "1000000,${taken:-?}"
expect_eq "SIGTERM: the loss log has the $taken steps" "$(($(wc -l <"$TMP/o/t_loss.csv") - 1))" "${taken:-?}"
expect_eq "SIGTERM: the checkpoint is of the last step taken" "$(grep -c "the checkpoint is of step ${taken:-?}$" "$TMP/o/t.err")" 1
run run $TINY --steps 1 --resume "$TMP/o/t.ckpt"
expect_rc "SIGTERM: the checkpoint resumes" 0
expect_out "SIGTERM: it resumes at the last step taken" "at step ${taken:-?}"
no_temps "SIGTERM leaves no temporary file"

# two signals: the second ends the process at once, and the temporary files go with it. Steps of
# about 1 s here (8 micro-batches of 2 x 256 tokens, hidden 256), so both signals land in step 3:
# the first as soon as step 2 is printed, the second 0.3 s later (two signals sent together would
# merge into one while pending).
SLOW="--model gpt2-124m --layers 2 --hidden 256 --heads 4 --seq 256 --vocab 512 --mbs 2 --gbs 16 --recipe te-fp8"
"$FP8PLAN" run $SLOW --steps 1000000 -o "$TMP/o/k.csv" --loss-log "$TMP/o/k_loss.csv" >"$TMP/o/k.out" 2>&1 &
pid=$!
i=0
while [ $i -lt 1200 ] && ! grep -q '^step      2 ' "$TMP/o/k.out" 2>/dev/null; do
    sleep 0.05
    i=$((i + 1))
done
kill -TERM $pid
sleep 0.3
kill -TERM $pid
wait $pid
rc=$?
expect_eq "two SIGTERMs: killed by the signal" "$rc" 143
if [ -e "$TMP/o/k.csv" ] || [ -e "$TMP/o/k_loss.csv" ]; then
    fail "two SIGTERMs: no report, no loss log" "$(ls "$TMP/o")"
else
    pass "two SIGTERMs: no report, no loss log"
fi
no_temps "two SIGTERMs leave no temporary file"

# a second SIGTERM while the run writes its files: the set (loss log, trace, checkpoint, report) is all
# new or all as it was (issue 46: the new loss log and checkpoint were left beside the old report). The
# report goes to a FIFO nobody reads, so the write-out waits there (up to 10 s) after the loss log, trace
# and checkpoint were written; both signals land in that wait. The files held the previous run's bytes.
mkfifo "$TMP/o/w.fifo"
for f in w_loss.csv w_trace.csv w.ckpt; do echo "old $f" >"$TMP/o/$f"; done
"$FP8PLAN" run $TINY --steps 2 -o "$TMP/o/w.fifo" --loss-log "$TMP/o/w_loss.csv" \
    --scaling-trace "$TMP/o/w_trace.csv" --save "$TMP/o/w.ckpt" >"$TMP/o/w.out" 2>"$TMP/o/w.err" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q '^step      2 ' "$TMP/o/w.out" 2>/dev/null; do
    sleep 0.1
    i=$((i + 1))
done
sleep 1 # the tiny model's report is rendered in well under 1 s; the FIFO waits 10
kill -TERM $pid
sleep 0.3
kill -TERM $pid
wait $pid
rc=$?
expect_eq "SIGTERM twice in the write-out: killed by the signal" "$rc" 143
expect_eq "... the loss log, trace and checkpoint are all the old ones" \
    "$(for f in w_loss.csv w_trace.csv w.ckpt; do head -c 20 "$TMP/o/$f" | head -n 1 | tr -cd '[:print:]'; echo; done | tr '\n' ' ')" \
    "old w_loss.csv old w_trace.csv old w.ckpt "
rm -f "$TMP/o/w.fifo"
no_temps "SIGTERM twice in the write-out leaves no temporary file"

finish
