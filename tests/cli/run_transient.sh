# tests/cli/run_transient.sh — the transient term is a bound on the run's working buffers; a model whose
# QKV output is wider than its FFN (tiny-odd: hidden 33, 3 heads of 11, FFN 67) must stay within it.
# The widest linear output's gradient is then QKV's 99, not FC1's 67 (planner/plan_mem.c).
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

cat=$TMP/cat
mpi_catalog "$cat"

# fp8lm, tiny-odd, mbs 2 x seq 5 = 10 tokens, one rank. Plan by hand:
#   dX, d(residual)                     2 x 10 x 33 x 2 B =  1,320
#   the widest output's gradient (QKV)  10 x 99 x 2 B     =  1,980
#   the same in FP8, both layouts       2 x 10 x 99 x 1 B =  1,980
#   d(probabilities) fp32               10 x 3 heads x 5 x 4 B = 600
#   a weight gradient in fp32 before its FP8 cast (the largest, QKV 99 x 33 = 3,267) x 4 B = 13,068
#   -> 18,948 B; the executor's working buffers (exec/model/model_layout.c) peak at the same bytes.
run run --catalog "$cat" --model tiny-odd --recipe fp8lm --mbs 2 --gbs 8 --steps 2
expect_rc "fp8lm tiny-odd: the run is within the plan (exit 0)" 0
expect_line "transient planned and measured 18,948 B" "memory +transient +activation +18,948 +18,948 .*"
expect_line "transient within the plan" "memory +transient +ok"
finish
