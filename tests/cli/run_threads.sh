# tests/cli/run_threads.sh — the CPU backend's results do not depend on the
# thread count: every piece of work (GEMM tiles, attention blocks, kernel
# chunks, column sums) is cut by the problem's shape, never by the number of
# threads, and computed by one thread. So the losses printed and the
# checkpoint written after two steps are bit-identical for FP8PLAN_THREADS=1
# and 3 (3: more workers than this machine may have cores). The model is sized
# to cut everything into several pieces: seq 160 is three 64-row attention
# blocks, 320 tokens x FFN 512 and the embedding's 3000 x 128 gradient exceed a
# kernel chunk (32,768 elements), the LM head's 320 x 3000 x 128 GEMM is tiled.
. "$FP8PLAN_ROOT/tests/lib.sh"

SIZE="--model gpt2-124m --layers 1 --hidden 128 --heads 2 --ffn 512 --seq 160 --mbs 2 --vocab 3000 --steps 2"

for r in te-fp8 fp8lm; do
    for t in 1 3; do
        FP8PLAN_THREADS=$t "$FP8PLAN" run $SIZE --recipe $r --save "$TMP/$r-$t.ckpt" >"$TMP/$r-$t.out" 2>"$TMP/$r-$t.err"
        expect_eq "$r with $t threads exits 0" "$?" 0
    done
    expect_eq "$r: the same losses with 1 and 3 threads" "$(grep '^step' "$TMP/$r-3.out" | awk '{print $2, $4}')" \
        "$(grep '^step' "$TMP/$r-1.out" | awk '{print $2, $4}')"
    if [ -s "$TMP/$r-1.ckpt" ] && cmp -s "$TMP/$r-1.ckpt" "$TMP/$r-3.ckpt"; then
        pass "$r: bit-identical checkpoints with 1 and 3 threads"
    else
        fail "$r: bit-identical checkpoints with 1 and 3 threads"
    fi
done
if grep -q "on 3 host threads" "$TMP/fp8lm-3.out"; then
    pass "the run reports the 3 threads it used"
else
    fail "the run reports the 3 threads it used" "$(grep arena "$TMP/fp8lm-3.out")"
fi

finish
