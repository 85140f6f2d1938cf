# tests/cli/hostile_run.sh — `fp8plan run` checks its paths before it builds anything: outputs that
# cannot be written (73), inputs that cannot be read (66), outputs that collide with each other or with
# an input (64) — while --save may name the --resume checkpoint; --seq past the model's context and a
# long CPU run are announced.
. "$FP8PLAN_ROOT/tests/lib.sh"

TINY="--model gpt2-124m --recipe te-fp8 --layers 1 --hidden 32 --heads 2 --seq 16 --vocab 64 --steps 2 --quiet"
cd "$TMP" || exit 1
echo "some notes" >notes.txt

quick() { # name expected-rc args...: the refusal comes before any training (well under a second)
    name=$1 want=$2
    shift 2
    start=$(date +%s%N)
    run "$@"
    ms=$((($(date +%s%N) - start) / 1000000))
    expect_rc "$name" "$want"
    if [ ! -e x.csv ] && [ ! -e ck.bin ]; then pass "$name: nothing written"; else fail "$name: nothing written"; fi
    if [ "$ms" -lt 3000 ]; then pass "$name: refused at once (${ms} ms)"; else fail "$name: took ${ms} ms"; fi
}

quick "-o X --save X is refused" 64 run $TINY -o x.csv --save x.csv
expect_err "-o X --save X: both flags named" "-o x.csv and --save x.csv name the same file"
quick "-o notes.txt --data notes.txt is refused" 64 run $TINY -o notes.txt --data notes.txt
expect_err "the output would replace the input" "the output would replace the input"
if [ "$(cat notes.txt)" = "some notes" ]; then pass "the input is untouched"; else fail "the input is untouched"; fi
ln -s notes.txt alias.txt
quick "an output through a symlink to the input is refused" 64 run $TINY --scaling-trace alias.txt --data notes.txt
quick "--scaling-trace X -o X (via ./X) is refused" 64 run $TINY --scaling-trace x.csv -o ./x.csv
quick "-o - and --scaling-trace - are refused" 64 run $TINY -o - --scaling-trace -
# the plan inputs run reads through the shared rows (cli/plan_flags.c), bounded by what the executor runs:
# each refusal names the flag and the value
while IFS='|' read -r flag value msg; do
    quick "$flag $value is refused" 64 run $TINY "$flag" "$value"
    expect_err "$flag $value: the flag, the value, the bound" "$msg"
done <<'EOF'
--mbs|65537|--mbs: '65537' is too large (at most 65536)
--gbs|1048577|--gbs: '1048577' is too large (at most 1048576)
--tp|4097|--tp: '4097' is too large (at most 4096)
--dp|0|--dp: '0' must be at least 1
--seq|1|--seq: '1' must be at least 2
--zero|4|--zero: '4' is out of range [0, 3]
--lr|11|--lr: '11' must be in [0, 10]
EOF
quick "an output in a missing directory: 73 before training" 73 run $TINY -o nodir/x.csv
expect_err "the output's directory is named" "cannot write nodir/x.csv"
quick "--save into a directory: 73" 73 run $TINY --save .
quick "a missing --data file: 66" 66 run $TINY --data missing.txt
expect_err "the --data file is named" "--data missing.txt"
quick "a missing --resume file: 66" 66 run $TINY --resume missing.ckpt
quick "--data a directory: 66" 66 run $TINY --data .
mkfifo ck.fifo # nobody writes it: a checkpoint must be a regular file, refused at once (it used to block)
quick "--resume a FIFO: 66" 66 run $TINY --resume ck.fifo
expect_err "--resume a FIFO: the reason" "--resume ck.fifo: a checkpoint must be a regular file"
rm -f ck.fifo

# --save and --resume on one file: continue and replace the checkpoint (atomically)
run run $TINY --save ck.bin
expect_rc "a first run saves ck.bin" 0
run run $TINY --save ck.bin --resume ck.bin
expect_rc "--resume ck.bin --save ck.bin continues in place" 0
rm -f ck.bin

# warnings before a long or unusual run
run run --model gpt2-124m --recipe te-fp8 --layers 1 --hidden 32 --heads 2 --seq 2048 --vocab 64 --steps 1 --quiet
expect_rc "--seq past the context still runs" 0
expect_err "--seq past the model's context is announced" "--seq 2048 is beyond gpt2-124m's context of 1024 tokens"
"$FP8PLAN" run --model gpt2-124m --recipe te-fp8 --steps 20 --quiet -o nodir/x.csv >out 2>err
rc=$?
expect_rc "a full-size CPU run with a bad output stops at once" 73
# the default full-size model on the CPU: the note comes first; stop the run as soon as it shows
"$FP8PLAN" run --model gpt2-124m --recipe te-fp8 --quiet >out 2>err &
pid=$!
i=0
while [ $i -lt 100 ] && ! grep -q "expect minutes" err; do sleep 0.1; i=$((i + 1)); done
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
expect_err "the default full-size CPU run warns that it takes minutes" "CPU backend: expect minutes"
expect_err "the warning says how much work it is" "TFLOP per step"
finish
