# tests/cli/mpi_zero.sh — `mpirun -np N fp8plan run --backend cpu --zero 1` (and --dist-opt): the
# distributed optimizer on CPU ranks. Master weights and Adam m, v sharded, gradients
# reduce-scattered, the updated weights all-gathered (exec/model/model_shard.c); every rank's
# persistent memory and bytes per collective against the plan; the -o rows per rank; with experts, their
# states sharded over the expert-data-parallel group.
# tier: full (make test-full, which .ci/run runs): 70 mpirun runs (msamp-o1: 3 more, 30 s at load 10), about 70 s alone on 2 shared cores before the 15
# pipeline runs; 2 m 17 s in all at load 10; 14 more with experts at tp 2 (7 rows x sharded and not): 7 m 23 s in
# all at load 13-17
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_require
cat=$TMP/cat
mpi_catalog "$cat"
# tiny-gpt and tiny-odd (tests/mpi_lib.sh: no class of tiny-odd's parameters divides by 2 or 4)
G="run --catalog $cat --model tiny-gpt --mbs 2 --gbs 8 --quiet"
O="run --catalog $cat --model tiny-odd --mbs 2 --gbs 8 --quiet"
same() { cmp -s "$1" "$2" && echo same || echo differ; }

# Element counts, by hand. tiny-gpt: linear weights (class gemm) per layer QKV 96x32 = 3072, proj
# 1024, FC1 4096, FC2 4096 = 12,288, x 2 layers = 24,576; the others: wte 128x32 = 4096, wpe 16x32 =
# 512, per layer LN1 64 + QKV bias 96 + proj bias 32 + LN2 64 + FC1 bias 128 + FC2 bias 32 = 416
# (x 2 = 832), final LN 64: 5,504. Sharded over dp 2: 12,288 and 2,752 per rank (FP32: 49,152 and
# 11,008 B); dp 4: 6,144 and 1,376 (24,576 and 5,504 B).
# Collectives per step: gradients (FP32) reduce-scattered, S = 4 x 30,080 = 120,320, each rank sends
# S (n-1)/n: dp 2 60,160, dp 4 90,240; weights (BF16) all-gathered, S = 60,160: 30,080 / 45,120.
# Calls per step, one bucket per state class (exec/model/model_shard.c: a class's gradients, and its weights,
# one buffer): the linear weights' 8 tensors and the other 20 parameters' each in one call, 2 reduce-scatters
# and 2 all-gathers (28 + 28 before the buckets, one per tensor); the plan counts the same, checked exactly.

# megatron-bf16, dp 2: ZeRO-1 trains exactly as plain data parallelism (the reduce-scatter folds in
# the all-reduce's rank order and AdamW is elementwise): the same losses bit for bit over 50 steps
mpi_run 2 "$FP8PLAN" $G --recipe megatron-bf16 --steps 50 --loss-log "$TMP/dp2.csv"
expect_rc "megatron-bf16 dp 2 exits 0" 0
mpi_run 2 "$FP8PLAN" $G --recipe megatron-bf16 --steps 50 --zero 1 --loss-log "$TMP/z2.csv"
expect_rc "megatron-bf16 dp 2 --zero 1 exits 0" 0
expect_eq "dp 2 --zero 1: the plain dp 2 losses bit for bit" "$(same "$TMP/dp2.csv" "$TMP/z2.csv")" same
expect_line "dp 2: master shard (12,288 x 4 B) on every rank" "  master_gemm +49152 +49152 +49152 +2/2 +exact"
expect_line "dp 2: Adam v shard of the other parameters (2,752 x 4 B)" "  adam_v_other +11008 +11008 +11008 +2/2 +exact"
expect_line "dp 2: gradients whole (24,576 x 4 B)" "  grad_gemm +98304 +98304 +98304 +2/2 +exact"
expect_line "dp 2: reduce-scatter bytes" "  dp_grad_reducescatter +60160 +60160 +60160 +2/2 +exact"
expect_line "dp 2: reduce-scatter payload" "  dp_grad_reducescatter.payload +120320 +120320 +120320 +2/2 +exact"
expect_line "dp 2: all-gather bytes" "  dp_param_allgather +30080 +30080 +30080 +2/2 +exact"
expect_line "dp 2: 2 reduce-scatters a step (a bucket per class), as planned" "dp_grad_reducescatter.calls +calls +2 +2 +ok"
expect_line "dp 2: 2 all-gathers a step, as planned" "dp_param_allgather.calls +calls +2 +2 +ok"
expect_out "dp 2: every rank's memory verdict" "every rank holds the plan's persistent bytes, byte for byte"
if grep -q dp_grad_allreduce "$TMP/out"; then fail "dp 2 --zero 1: no all-reduce of gradients" "$(grep dp_grad_allreduce "$TMP/out")"; else pass "dp 2 --zero 1: no all-reduce of gradients"; fi
# --dist-opt: megatron-bf16's dist_opt_shards are master+m+v, ZeRO-1's states: the same run
mpi_run 2 "$FP8PLAN" $G --recipe megatron-bf16 --steps 50 --dist-opt --loss-log "$TMP/d2.csv"
expect_rc "megatron-bf16 dp 2 --dist-opt exits 0" 0
expect_eq "--dist-opt: the --zero 1 losses" "$(same "$TMP/z2.csv" "$TMP/d2.csv")" same
expect_line "--dist-opt: master shard" "  master_gemm +49152 +49152 +49152 +2/2 +exact"

# dp 4 (one micro-batch per rank: the one rank's fold order): the one rank's losses bit for bit
run $G --recipe megatron-bf16 --steps 50 --loss-log "$TMP/one.csv"
mpi_run 4 "$FP8PLAN" $G --recipe megatron-bf16 --steps 50 --zero 1 --loss-log "$TMP/z4.csv"
expect_rc "megatron-bf16 dp 4 --zero 1 exits 0" 0
expect_eq "dp 4 --zero 1: the one rank's losses bit for bit" "$(same "$TMP/one.csv" "$TMP/z4.csv")" same
expect_line "dp 4: master shard (6,144 x 4 B)" "  master_gemm +24576 +24576 +24576 +4/4 +exact"
expect_line "dp 4: reduce-scatter bytes" "  dp_grad_reducescatter +90240 +90240 +90240 +4/4 +exact"
expect_line "dp 4: all-gather bytes" "  dp_param_allgather +45120 +45120 +45120 +4/4 +exact"
expect_line "dp 4: 2 reduce-scatters a step, as planned" "dp_grad_reducescatter.calls +calls +2 +2 +ok"
# the planner's own listing of the same layout says the same
run plan --catalog "$cat" --model tiny-gpt --gpu h100-sxm --mbs 2 --gbs 8 --dp 4 --zero 1 --recipe megatron-bf16 \
    --stack fp8plan --view collectives --format csv
expect_eq "plan --zero 1 --view collectives: reduce-scatter sent/step at dp 4" \
    "$(grep '^dp_grad_reducescatter,' "$TMP/out" | cut -d, -f10)" 90240
expect_eq "plan --zero 1 --view collectives: the executor's 2 reduce-scatter buckets (a class each) a step" \
    "$(grep '^dp_grad_reducescatter,' "$TMP/out" | cut -d, -f9)" 2
expect_eq "plan --zero 1 --view collectives: all-gather sent/step at dp 4" \
    "$(grep '^dp_param_allgather,' "$TMP/out" | cut -d, -f10)" 45120
run plan --catalog "$cat" --model tiny-gpt --gpu h100-sxm --mbs 2 --gbs 8 --dp 4 --zero 1 --recipe megatron-bf16 \
    --stack fp8plan --view terms --format csv
expect_eq "plan --zero 1 --view terms: master_gemm 6,144 elements, 24,576 B, 4 shards" \
    "$(grep '^master_gemm,' "$TMP/out" | cut -d, -f4,5,7)" "6144,24576,4"

# tiny-odd, te-fp8 (FP8 GEMMs; BF16 weights gathered, FP8 copies cast from them as before):
# linear weights QKV 99x33 = 3,267, proj 1,089, FC1 67x33 = 2,211, FC2 2,211: 8,778; others wte
# 4,224 + wpe 165 + LN1 66 + biases 99 + 33 + 67 + 33 + LN2 66 + final LN 66 = 4,819. dp 4: each
# rank holds ceil(8,778 / 4) = 2,195 (the last owns 2,193 and 2 padding) and ceil(4,819 / 4) = 1,205
# (the last 1,204): 8,780 and 4,820 B in FP32 on every rank. S = 4 x 13,597 = 54,388 (bus x 3/4 =
# 40,791) and 2 x 13,597 = 27,194 (bus 20,395.5: the plan keeps the whole bytes, 20,395).
mpi_run 4 "$FP8PLAN" $O --recipe te-fp8 --steps 20 --loss-log "$TMP/o4.csv"
expect_rc "te-fp8 tiny-odd dp 4 exits 0" 0
# plain DP's all-reduce of the same FP32 gradients: bus 2 x 54,388 - ceil(2 x 54,388 / 4) = 108,776 - 27,194 =
# 81,582; 2 calls, a class each, its gradients back to back although no tensor's bytes are a multiple of 16 (15
# calls when each gradient started at the next 16 B: the gaps cut the runs)
expect_line "tiny-odd dp 4: all-reduce bytes" "  dp_grad_allreduce +81582 +81582 +81582 +4/4 +exact"
expect_line "tiny-odd dp 4: 2 gradient all-reduces a step (a bucket per class), as planned" \
    "dp_grad_allreduce.calls +calls +2 +2 +ok"
mpi_run 4 "$FP8PLAN" $O --recipe te-fp8 --steps 20 --zero 1 --loss-log "$TMP/oz4.csv" -o "$TMP/ranks.csv"
expect_rc "te-fp8 tiny-odd dp 4 --zero 1 exits 0" 0
expect_eq "tiny-odd dp 4 --zero 1: the plain dp 4 losses bit for bit" "$(same "$TMP/o4.csv" "$TMP/oz4.csv")" same
expect_line "uneven: master shard ceil(8,778 / 4) x 4 B" "  master_gemm +8780 +8780 +8780 +4/4 +exact"
expect_line "uneven: Adam m shard ceil(4,819 / 4) x 4 B" "  adam_m_other +4820 +4820 +4820 +4/4 +exact"
expect_line "uneven: reduce-scatter bytes" "  dp_grad_reducescatter +40791 +40791 +40791 +4/4 +exact"
expect_line "uneven: all-gather bytes (whole)" "  dp_param_allgather +20395 +20395 +20395 +4/4 +exact"
expect_line "uneven: all-gather payload" "  dp_param_allgather.payload +27194 +27194 +27194 +4/4 +exact"
# dp 2: ceil(8,778 / 2) = 4,389 and ceil(4,819 / 2) = 2,410 (rank 1 owns 2,409)
mpi_run 2 "$FP8PLAN" $O --recipe te-fp8 --steps 2 --zero 1
expect_line "uneven dp 2: master shard 4,389 x 4 B" "  master_gemm +17556 +17556 +17556 +2/2 +exact"
expect_line "uneven dp 2: master shard of the others 2,410 x 4 B" "  master_other +9640 +9640 +9640 +2/2 +exact"

# LLaMA-shaped (grouped-query attention, SwiGLU, rotary, untied, RMSNorm, no biases): llama3-8b cut to
# 2 layers, hidden 36, 6 heads of 6 (2 KV heads), FFN 50, vocabulary 70 (padded to 128). Linear weights
# per layer QKV (6 + 2x2) x 6 = 60 x 36 = 2,160, proj 36x36 = 1,296, FC1 (SwiGLU) 100x36 = 3,600, FC2
# 36x50 = 1,800: 8,856, x 2 = 17,712; dp 2: 8,856 x 4 B = 35,424. Others: embedding and head 2 x 128 x
# 36 = 9,216, RMSNorm weights 2 x 2 x 36 + 36 = 180: 9,396; dp 2: 4,698 x 4 B = 18,792.
L="run --model llama3-8b --layers 2 --hidden 36 --heads 6 --kv-heads 2 --ffn 50 --seq 8 --vocab 70 --mbs 2 --gbs 8 --quiet"
mpi_run 2 "$FP8PLAN" $L --recipe te-fp8 --steps 10 --loss-log "$TMP/l2.csv"
expect_rc "llama te-fp8 dp 2 exits 0" 0
mpi_run 2 "$FP8PLAN" $L --recipe te-fp8 --steps 10 --zero 1 --loss-log "$TMP/lz2.csv"
expect_rc "llama te-fp8 dp 2 --zero 1 exits 0" 0
expect_eq "llama dp 2 --zero 1: the plain dp 2 losses bit for bit" "$(same "$TMP/l2.csv" "$TMP/lz2.csv")" same
expect_line "llama dp 2: master shard 8,856 x 4 B" "  master_gemm +35424 +35424 +35424 +2/2 +exact"
expect_line "llama dp 2: master shard of the others 4,698 x 4 B" "  master_other +18792 +18792 +18792 +2/2 +exact"

# -o: a rank column; rank 0's comparison rows, then per rank 15 persistent terms (te-fp8) and
# 3 collectives x 2 rows (bytes, payload): 4 x 15 = 60 rank_memory rows, 4 x 6 = 24 rank_comm rows
f=$TMP/ranks.csv
expect_eq "-o: the header starts with rank" "$(head -1 "$f" | cut -d, -f1-3)" "rank,section,term"
expect_eq "-o: rank_memory rows" "$(grep -c '^[0-3],rank_memory,' "$f")" 60
expect_eq "-o: rank_comm rows" "$(grep -c '^[0-3],rank_comm,' "$f")" 24
expect_eq "-o: rank 3's master shard" "$(grep '^3,rank_memory,master_gemm,' "$f" | cut -d, -f5,6,15)" "8780,8780,ok"
expect_eq "-o: rank 2's all-gather payload" "$(grep '^2,rank_comm,dp_param_allgather.payload,' "$f" | cut -d, -f5,6,15)" "27194,27194,ok"
expect_eq "-o: rank 0's comparison rows carry rank 0" "$(grep -c '^0,memory,' "$f")" "$(grep -c ',memory,' "$f")"
# each rank's seconds per step inside the reduce-scatter: a median, positive
t=$(awk -F, '$2 == "rank_comm" && $3 == "dp_grad_reducescatter" && $8 > 0 { n++ } END { print n + 0 }' "$f")
expect_eq "-o: every rank's reduce-scatter has a measured median time" "$t" 4

# fp8lm (FP8-LM / MS-AMP): FP16 master with a per-tensor scale, E4M3 Adam m, FP16 Adam v, each
# scaled, sharded; E4M3 gradients whole (ZeRO-1), reduce-scattered with a scale agreed over the
# ranks; no working weight: each rank casts its part of the master into the E4M3 copy, gathered
# after the step. Every per-tensor scale is agreed (amax MAX over the ranks), so the run is plain
# data parallelism bit for bit (exec/model/model_shard.c says why).
mpi_run 2 "$FP8PLAN" $G --recipe fp8lm --steps 30 --loss-log "$TMP/f2.csv"
expect_rc "fp8lm dp 2 exits 0" 0
mpi_run 2 "$FP8PLAN" $G --recipe fp8lm --steps 30 --zero 1 --loss-log "$TMP/fz2.csv"
expect_rc "fp8lm dp 2 --zero 1 exits 0" 0
expect_eq "fp8lm dp 2 --zero 1: the plain dp 2 losses bit for bit" "$(same "$TMP/f2.csv" "$TMP/fz2.csv")" same
# tiny-gpt linear weights 24,576 elements: dp 2 shards of 12,288 — FP16 master 24,576 B, E4M3 m
# 12,288 B, FP16 v 24,576 B; E4M3 gradients and both E4M3 copies whole, 24,576 B each; the scaling
# records whole on every rank: 8 linears x 4 scaled states (master, grad, m, v) x {scale,
# scale_inv, amax} x 4 B = 384 B
expect_line "fp8lm dp 2: FP16 master shard 12,288 x 2 B" "  master_gemm +24576 +24576 +24576 +2/2 +exact"
expect_line "fp8lm dp 2: E4M3 Adam m shard 12,288 x 1 B" "  adam_m_gemm +12288 +12288 +12288 +2/2 +exact"
expect_line "fp8lm dp 2: FP16 Adam v shard 12,288 x 2 B" "  adam_v_gemm +24576 +24576 +24576 +2/2 +exact"
expect_line "fp8lm dp 2: E4M3 gradients whole" "  grad_gemm +24576 +24576 +24576 +2/2 +exact"
expect_line "fp8lm dp 2: the row-wise E4M3 copy whole" "  fp8_rowwise +24576 +24576 +24576 +2/2 +exact"
expect_line "fp8lm dp 2: the scaling records whole (384 B)" "  scale_state +384 +384 +384 +2/2 +exact"
# bytes per step: gradients E4M3 24,576 x 1 B + the others' FP32 5,504 x 4 B = 46,592 reduce-
# scattered (each rank sends half: 23,296); E4M3 copies 24,576 x 1 B + the others' BF16 weights
# 5,504 x 2 B = 35,584 gathered (17,792)
expect_line "fp8lm dp 2: reduce-scatter bytes" "  dp_grad_reducescatter +23296 +23296 +23296 +2/2 +exact"
expect_line "fp8lm dp 2: reduce-scatter payload" "  dp_grad_reducescatter.payload +46592 +46592 +46592 +2/2 +exact"
expect_line "fp8lm dp 2: all-gather bytes" "  dp_param_allgather +17792 +17792 +17792 +2/2 +exact"
expect_line "fp8lm dp 2: all-gather payload" "  dp_param_allgather.payload +35584 +35584 +35584 +2/2 +exact"
expect_out "fp8lm dp 2: every rank's memory verdict" "every rank holds the plan's persistent bytes, byte for byte"
# FP8-LM casts its copies once per step (exec/model/model_copies.c): from the master the optimizer
# wrote, at a scale from its amax, gathered once (the plan's all-gather above); the forward casts
# nothing, so no copy is gathered again within a step (before: 392 unplanned re-gathers in 50 steps,
# every linear at every second micro-batch, when the delayed scale had moved). Every call of a step,
# by hand: planned 28 reduce-scatters + 28 all-gathers (one per parameter) + 4 amax all-reduces
# (the forward and backward banks after each of 2 micro-batches) = 60; not planned: per FP8 gradient
# (8 linears) its group amax and its segment amax (16), the optimizer's amax agreement (1), the
# copies' amax agreement (1), the loss gather (1) = 19: 79 calls. Payload: 46,592 + 35,584 + 192
# planned = 82,368; 16 x 4 B + 3 x 28 parameters x 4 B + 8 x 4 B + 2 ranks x 64 tokens x 4 B = 64 +
# 336 + 32 + 512 = 944 not: 83,312 (with the re-gathers 108,026 over 30 steps).
# With the buckets (exec/model/model_shard.c) the 20 other parameters' FP32 gradients are one reduce-scatter and
# their BF16 weights one all-gather; each E4M3 gradient keeps its call (its scale agreed first) and each FP8 copy
# its gather (cast with its own scale): planned 8 + 1 + 8 + 1 + 4 = 22, with the 19 not planned 41 calls, the
# same 83,312 bytes.
expect_out "fp8lm dp 2 --zero 1: every call of a step, no copy gathered again" \
    "collectives (mpi, 2 ranks): 41 calls and 83,312 payload bytes per step"
expect_line "fp8lm dp 2: 9 reduce-scatters (8 E4M3 gradients + 1 bucket), as planned" \
    "dp_grad_reducescatter.calls +calls +9 +9 +ok"
expect_line "fp8lm dp 2: 9 all-gathers (8 FP8 copies + 1 bucket), as planned" "dp_param_allgather.calls +calls +9 +9 +ok"
# dp 4 (one micro-batch per rank), --dist-opt (fp8lm's dist_opt_shards are master+m+v): bus bytes
# S - ceil(S / 4): 46,592 - 11,648 = 34,944 and 35,584 - 8,896 = 26,688; shards of 6,144
mpi_run 4 "$FP8PLAN" $G --recipe fp8lm --steps 20 --loss-log "$TMP/f4.csv"
mpi_run 4 "$FP8PLAN" $G --recipe fp8lm --steps 20 --dist-opt --loss-log "$TMP/fd4.csv"
expect_rc "fp8lm dp 4 --dist-opt exits 0" 0
expect_eq "fp8lm dp 4 --dist-opt: the plain dp 4 losses bit for bit" "$(same "$TMP/f4.csv" "$TMP/fd4.csv")" same
expect_line "fp8lm dp 4: FP16 master shard 6,144 x 2 B" "  master_gemm +12288 +12288 +12288 +4/4 +exact"
expect_line "fp8lm dp 4: reduce-scatter bytes" "  dp_grad_reducescatter +34944 +34944 +34944 +4/4 +exact"
expect_line "fp8lm dp 4: all-gather bytes" "  dp_param_allgather +26688 +26688 +26688 +4/4 +exact"
# one micro-batch per rank: 2 amax all-reduces (96 B) planned, so 9 + 9 + 2 + 19 = 39 calls and 82,272 +
# 944 = 83,216 B (the loss gather: 4 ranks x 32 tokens x 4 B = 512 B)
expect_out "fp8lm dp 4 --dist-opt: every call of a step, no copy gathered again" \
    "collectives (mpi, 4 ranks): 39 calls and 83,216 payload bytes per step"
# tiny-odd dp 4: 8,778 linear elements, shards of ceil(8,778 / 4) = 2,195 (FP16 4,390 B, E4M3
# 2,195 B); the last rank owns 2,193 and FC2's 2,211 elements lie on ranks 2 and 3 only, so a rank
# holds none of some tensors and still takes their agreed scales. Payloads 8,778 + 4,819 x 4 =
# 28,054 (bus 28,054 - 7,014 = 21,040) and 8,778 + 4,819 x 2 = 18,416 (bus 18,416 - 4,604 =
# 13,812).
mpi_run 4 "$FP8PLAN" $O --recipe fp8lm --steps 20 --loss-log "$TMP/fo4.csv"
expect_rc "fp8lm tiny-odd dp 4 exits 0" 0
# plain DP: the 4 E4M3 gradients alone and the others' FP32 bucket, 5 calls of 28,054 B in all; bus 56,108 -
# ceil(56,108 / 4) = 56,108 - 14,027 = 42,081
expect_line "fp8lm tiny-odd dp 4: all-reduce bytes" "  dp_grad_allreduce +42081 +42081 +42081 +4/4 +exact"
expect_line "fp8lm tiny-odd dp 4: 5 gradient all-reduces a step, as planned" "dp_grad_allreduce.calls +calls +5 +5 +ok"
mpi_run 4 "$FP8PLAN" $O --recipe fp8lm --steps 20 --zero 1 --loss-log "$TMP/foz4.csv"
expect_rc "fp8lm tiny-odd dp 4 --zero 1 exits 0" 0
expect_eq "fp8lm tiny-odd dp 4 --zero 1: the plain dp 4 losses bit for bit" "$(same "$TMP/fo4.csv" "$TMP/foz4.csv")" same
expect_line "fp8lm uneven: FP16 master shard 2,195 x 2 B" "  master_gemm +4390 +4390 +4390 +4/4 +exact"
expect_line "fp8lm uneven: E4M3 m shard 2,195 x 1 B" "  adam_m_gemm +2195 +2195 +2195 +4/4 +exact"
expect_line "fp8lm uneven: reduce-scatter bytes" "  dp_grad_reducescatter +21040 +21040 +21040 +4/4 +exact"
expect_line "fp8lm uneven: all-gather bytes" "  dp_param_allgather +13812 +13812 +13812 +4/4 +exact"

# msamp-o1 (MS-AMP O1): a per-tensor scaled FP16 linear weight updated in place (no master), E4M3 gradients
# with a scale, FP32 Adam m and v (the recipe's dist_opt_shards m+v: sharded under --zero 1 and --dist-opt).
# Each rank updates the weight's elements whose m and v it holds, the weight's new scale agreed over the
# ranks (amax MAX), and the weights are all-gathered in FP16; the E4M3 copies are cast whole on every rank,
# so no FP8 gather runs. Plain DP 2 against one rank: E4M3 gradients rounded per rank at the shared scale
# before the sum (one rank rounds its whole sum once, 2^-4 relative per rounding): measured 5.6e-4 over 50
# steps (fp8lm's 5.3e-4 in the same case); the stated bound is 1e-3.
run $G --recipe msamp-o1 --steps 50 --loss-log "$TMP/o1.csv"
expect_rc "msamp-o1 one rank exits 0" 0
mpi_run 2 "$FP8PLAN" $G --recipe msamp-o1 --steps 50 --loss-log "$TMP/o2.csv"
expect_rc "msamp-o1 dp 2 exits 0" 0
# tiny-gpt linear weights 24,576: FP16 weight whole 49,152 B; FP32 m and v shards of 12,288 x 4 B; the
# records 8 linears x 2 (weight, gradient) x 12 B = 192
expect_line "msamp-o1 dp 2: FP16 weight whole 24,576 x 2 B" "  weight_gemm +49152 +49152 +49152 +2/2 +exact"
expect_line "msamp-o1 dp 2: the scaling records (192 B)" "  scale_state +192 +192 +192 +2/2 +exact"
# all-reduce: 8 E4M3 gradients alone (24,576 B) + the others' FP32 bucket (22,016 B) = 46,592 B; bus x 2(n-1)/n
expect_line "msamp-o1 dp 2: all-reduce bytes" "  dp_grad_allreduce +46592 +46592 +46592 +2/2 +exact"
r=$(awk -F, 'NR == FNR { if (FNR > 1) a[$1] = $2; next } FNR > 1 { n++; d = $2 - a[$1]; if (d < 0) d = -d;
    r = d / a[$1]; if (r > m) m = r } END { if (n != 50) print "n/a"; else printf "%.3g\n", m }' "$TMP/o1.csv" "$TMP/o2.csv")
if [ "$r" != n/a ] && awk -v r="$r" 'BEGIN { exit !(r <= 1e-3) }'; then
    pass "msamp-o1 dp 2 tracks one rank within 1e-3 relative over 50 steps ($r)"
else
    fail "msamp-o1 dp 2 tracks one rank within 1e-3 relative over 50 steps" "max relative difference: $r"
fi
mpi_run 2 "$FP8PLAN" $G --recipe msamp-o1 --steps 50 --dist-opt --loss-log "$TMP/od2.csv"
expect_rc "msamp-o1 dp 2 --dist-opt exits 0" 0
expect_eq "msamp-o1 dp 2 --dist-opt: the plain dp 2 losses bit for bit" "$(same "$TMP/o2.csv" "$TMP/od2.csv")" same
mpi_run 2 "$FP8PLAN" $G --recipe msamp-o1 --steps 50 --zero 1 --loss-log "$TMP/oz2.csv"
expect_rc "msamp-o1 dp 2 --zero 1 exits 0" 0
expect_eq "msamp-o1 dp 2 --zero 1: the plain dp 2 losses bit for bit" "$(same "$TMP/o2.csv" "$TMP/oz2.csv")" same
expect_line "msamp-o1 dp 2: FP32 Adam m shard 12,288 x 4 B" "  adam_m_gemm +49152 +49152 +49152 +2/2 +exact"
expect_line "msamp-o1 dp 2: FP32 Adam v shard 12,288 x 4 B" "  adam_v_gemm +49152 +49152 +49152 +2/2 +exact"
expect_line "msamp-o1 dp 2: no master" "  master_gemm +0 +0 +0 +2/2 +exact"
expect_line "msamp-o1 dp 2: FP16 weight whole" "  weight_gemm +49152 +49152 +49152 +2/2 +exact"
expect_line "msamp-o1 dp 2: E4M3 gradients whole" "  grad_gemm +24576 +24576 +24576 +2/2 +exact"
expect_line "msamp-o1 dp 2: both E4M3 copies whole" "  fp8_colwise +24576 +24576 +24576 +2/2 +exact"
# bytes per step: gradients E4M3 24,576 x 1 + the others' FP32 5,504 x 4 = 46,592 reduce-scattered (23,296 a
# rank); the FP16 weights 24,576 x 2 + the others' BF16 5,504 x 2 = 60,160 all-gathered (30,080 a rank)
expect_line "msamp-o1 dp 2: reduce-scatter bytes" "  dp_grad_reducescatter +23296 +23296 +23296 +2/2 +exact"
expect_line "msamp-o1 dp 2: all-gather bytes" "  dp_param_allgather +30080 +30080 +30080 +2/2 +exact"
expect_line "msamp-o1 dp 2: all-gather payload" "  dp_param_allgather.payload +60160 +60160 +60160 +2/2 +exact"
expect_out "msamp-o1 dp 2: every rank's memory verdict" "every rank holds the plan's persistent bytes, byte for byte"
# calls: planned 9 reduce-scatters (8 E4M3 gradients alone + 1 bucket) + 2 all-gathers (the FP16 weights' bucket,
# the others') + 4 amax = 15; not planned: per E4M3 gradient its group amax and its segment amax (16), the
# optimizer's amax agreement (1), the loss gather (1) = 18: 33 calls. Payload 46,592 + 60,160 + 192 = 106,944
# planned; 16 x 4 + 3 x 28 x 4 + 2 x 64 x 4 = 64 + 336 + 512 = 912 not: 107,856
expect_out "msamp-o1 dp 2 --zero 1: every call of a step" \
    "collectives (mpi, 2 ranks): 33 calls and 107,856 payload bytes per step"
expect_line "msamp-o1 dp 2: 2 all-gathers, as planned" "dp_param_allgather.calls +calls +2 +2 +ok"

# deepseek-v3 (block-scaled FP8, BF16 Adam moments sharded beside the FP32 master): plain DP's losses bit for bit;
# the moments' shards 12,288 x 2 B
mpi_run 2 "$FP8PLAN" $G --recipe deepseek-v3 --steps 5 --loss-log "$TMP/v2.csv"
expect_rc "deepseek-v3 dp 2 exits 0" 0
mpi_run 2 "$FP8PLAN" $G --recipe deepseek-v3 --steps 5 --zero 1 --loss-log "$TMP/vz2.csv"
expect_rc "deepseek-v3 dp 2 --zero 1 exits 0" 0
expect_eq "deepseek-v3 dp 2 --zero 1: the plain dp 2 losses bit for bit" "$(same "$TMP/v2.csv" "$TMP/vz2.csv")" same
expect_line "deepseek-v3 dp 2: BF16 Adam m shard 12,288 x 2 B" "  adam_m_gemm +24576 +24576 +24576 +2/2 +exact"
expect_out "deepseek-v3 dp 2: every rank's memory verdict" "every rank holds the plan's persistent bytes, byte for byte"

# ---- experts: the dense parameters' states over the DP group, the routed experts' over their EDP group ----
# As Megatron-Core's distributed optimizer groups them (core_v0.16.0 DistributedDataParallel: expert-parallel
# parameters in buffers of their own over the expert-data-parallel group; exec/model/model_shard.c). tiny-moe
# (Mixtral shrunk, as mpi_ep.sh: 2 layers, hidden 64, 8 experts of FFN 224 top-2, softmax router), tiny-ds
# (DeepSeek-style: 3 layers, the first dense FFN 128, 8 experts of FFN 32 top-2, a shared expert, a sigmoid
# router with 4 groups, top 2), tiny-moe-64 (64 experts of FFN 16, top-8) and tiny-mtp (below). Each row
# runs the same layout unsharded and sharded: the losses and the routing bit for bit (the reduce-scatters fold in the all-
# reduces' rank order, AdamW is elementwise, and a sigmoid router's bias moves by one rule from the same
# summed counts on every rank; mpi_ep.sh holds the unsharded EP runs to the one rank's), every rank's
# persistent terms and collectives (reduce-scatters and all-gathers over DP and EDP, all-to-alls for the
# measured routing) the plan's byte for byte.
moe() { # name layers hidden ffn heads kv hd vocab seq experts topk shared eff dense router groups gtopk
    echo "$1,$2,$3,$4,$5,$6,$7,$8,$9,rmsnorm,swiglu,rope,no,no,no,${10},${11},${12},${13},${14},${15},${16},${17},0,0,0,0,0,0,\"test model\"" >>"$cat/models.csv"
}
moe tiny-moe 2 64 224 4 1 16 256 32 8 2 0 224 0 softmax 0 0
moe tiny-ds 3 64 128 4 1 16 256 32 8 2 1 32 1 sigmoid 4 2
moe tiny-moe-64 2 64 224 4 1 16 256 32 64 8 0 16 0 softmax 0 0
# with 2 KV heads (mpi_ep.sh's), for tensor parallelism
moe tiny-moe-kv2 2 64 224 4 2 16 256 32 8 2 0 224 0 softmax 0 0
moe tiny-ds-kv2 3 64 128 4 2 16 256 32 8 2 1 32 1 sigmoid 4 2
# tiny-mtp (mpi_ep.sh's): DeepSeek-V3 shrunk, latent attention, its first layer dense, one MTP depth
echo 'tiny-mtp,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,1,"test model"' >>"$cat/models.csv"
# A last column, a pipeline layout, runs both over stages: each stage's DP and EDP groups shard that stage's states
# (k = np / pp ranks a stage, each stage against its own plan; hand-worked bytes below the table). With --tp T
# there: the stage's k ranks are T x dp, the dense states sharded over dp = k / T (none at dp 1), the experts' over
# their EDP group of T x dp / ep ranks (Megatron-Core's expert-data-parallel group at etp 1, core_v0.16.0
# parallel_state.py: world / (etp x ep x pp)), the expert side folding the stage's TP and DP ranks.
while IFS='|' read -r np ep model recipe steps shard layout <&3; do
    case "$np" in '' | '#'*) continue ;; esac
    pp=$(echo "$layout" | sed -n 's/.*--pp \([0-9]*\).*/\1/p')
    tp=$(echo "$layout" | sed -n 's/.*--tp \([0-9]*\).*/\1/p')
    k=$((np / ${pp:-1}))
    d=$((k / ${tp:-1})) # the stage's DP ranks
    tag="$model $recipe np $np ep $ep $shard${layout:+ $layout}"
    X="run --catalog $cat --model $model --mbs 1 --gbs 4 --quiet --recipe $recipe --steps $steps --ep $ep $layout"
    mpi_run "$np" "$FP8PLAN" $X --loss-log "$TMP/x.csv" --routing-log "$TMP/x_r.csv"
    expect_rc "$model $recipe np $np ep $ep exits 0" 0
    mpi_run "$np" "$FP8PLAN" $X $shard --loss-log "$TMP/xz.csv" --routing-log "$TMP/xz_r.csv"
    expect_rc "$tag exits 0" 0
    expect_eq "$tag: the unsharded losses bit for bit" "$(same "$TMP/x.csv" "$TMP/xz.csv")" same
    expect_eq "$tag: the unsharded routing, every step" "$(same "$TMP/x_r.csv" "$TMP/xz_r.csv")" same
    expect_out "$tag: persistent memory as planned" "every rank holds the plan's persistent bytes, byte for byte"
    expect_out "$tag: collectives as planned" "every rank sent the plan's bytes, byte for byte"
    if [ "$d" -gt 1 ]; then
        expect_line "$tag: the dense gradients reduce-scattered over DP" "  dp_grad_reducescatter( +[0-9]+){3} +$k/$k +exact"
        expect_line "$tag: the dense weights gathered over DP" "  dp_param_allgather( +[0-9]+){3} +$k/$k +exact"
        # a bucket per class: the linear weights and the others, one reduce-scatter and one all-gather each
        expect_line "$tag: 2 DP reduce-scatters a step, as planned" "dp_grad_reducescatter.calls +calls +2 +2 +ok"
        expect_line "$tag: 2 DP all-gathers a step, as planned" "dp_param_allgather.calls +calls +2 +2 +ok"
    else # dp 1 beside TP: the dense states whole, no DP collective
        expect_eq "$tag: no DP collective" "$(grep -c '  dp_' "$TMP/out")" 0
    fi
    if [ "$k" -gt "$ep" ]; then # edp > 1: the experts' states sharded over their EDP group
        expect_line "$tag: expert gradients reduce-scattered over EDP" "  edp_grad_reducescatter( +[0-9]+){3} +$k/$k +exact"
        expect_line "$tag: expert weights gathered over EDP" "  edp_param_allgather( +[0-9]+){3} +$k/$k +exact"
        if [ -z "$pp" ] || ! echo "$layout" | grep -q first-stage-layers; then # rank 0's stage holds experts
            expect_line "$tag: 1 EDP reduce-scatter a step (the experts' bucket), as planned" \
                "edp_grad_reducescatter.calls +calls +1 +1 +ok"
            expect_line "$tag: 1 EDP all-gather a step, as planned" "edp_param_allgather.calls +calls +1 +1 +ok"
        fi
    else # edp 1: the experts' states whole, nothing to reduce
        expect_eq "$tag: no expert collective" "$(grep -c '  edp_' "$TMP/out")" 0
    fi
    # rank 0's calls of the distributed optimizer's collectives, each the plan's (checked exactly by run)
    expect_eq "$tag: every bucketed collective's calls as planned" \
        "$(awk '/^e?dp_(grad_reducescatter|param_allgather)\.calls / && $NF != "ok" { n++ } END { print n + 0 }' "$TMP/out")" 0
    if [ "$ep" -gt 1 ]; then
        expect_out "$tag: all-to-alls as planned for the measured routing" \
            "every rank sent the plan's expert all-to-all bytes for the measured routing, byte for byte"
    fi
done 3<<'EOF'
2|2|tiny-moe|megatron-bf16|5|--zero 1
4|2|tiny-moe|megatron-bf16|5|--zero 1
4|1|tiny-moe|megatron-bf16|3|--zero 1
2|2|tiny-ds|megatron-bf16|5|--zero 1
4|2|tiny-ds|megatron-bf16|5|--zero 1
4|2|tiny-ds|megatron-bf16|3|--dist-opt
4|2|tiny-moe-64|megatron-bf16|3|--zero 1
4|4|tiny-moe-64|megatron-bf16|3|--zero 1
4|2|tiny-ds|te-fp8-current|3|--zero 1
2|2|tiny-moe|te-fp8|3|--zero 1
4|2|tiny-ds|te-fp8|3|--zero 1
4|2|tiny-ds|deepseek-v3|2|--zero 1
2|2|tiny-moe|deepseek-v3|2|--dist-opt
4|2|tiny-mtp|megatron-bf16|3|--zero 1
4|1|tiny-moe|megatron-bf16|3|--zero 1|--pp 2
8|2|tiny-moe|megatron-bf16|3|--zero 1|--pp 2
8|2|tiny-moe|te-fp8|3|--dist-opt|--pp 2
8|2|tiny-ds|megatron-bf16|3|--zero 1|--pp 2 --first-stage-layers 1
8|2|tiny-ds|te-fp8|3|--zero 1|--pp 2 --last-stage-layers 1
8|2|tiny-ds|te-fp8-current|3|--dist-opt|--pp 2 --first-stage-layers 1
8|4|tiny-moe-64|megatron-bf16|2|--zero 1|--pp 2
2|1|tiny-moe-kv2|megatron-bf16|3|--zero 1|--tp 2
4|2|tiny-ds-kv2|megatron-bf16|3|--dist-opt|--tp 2
4|1|tiny-ds-kv2|te-fp8|3|--zero 1|--tp 2
4|2|tiny-moe-kv2|te-fp8-current|2|--zero 1|--tp 2
4|1|tiny-moe-kv2|megatron-bf16|3|--dist-opt|--tp 2 --pp 2
8|2|tiny-ds-kv2|megatron-bf16|2|--zero 1|--tp 2 --pp 2 --last-stage-layers 1
8|2|tiny-moe-kv2|te-fp8|2|--zero 1|--tp 2 --pp 2
EOF
# By hand, tiny-ds at np 4 ep 2: a rank's 4 experts x (FC1 2 x 32 x 64 + FC2 64 x 32) = 24,576 elements a MoE
# layer, x 2 = 49,152; edp 2: shards of 24,576 (FP32: 98,304 B), the FP32 gradients reduce-scattered (S =
# 196,608, half leaving: 98,304) and the BF16 weights gathered (S = 98,304: 49,152). Dense linears: layer 0
# QKV (64 + 2 x 16) x 64 = 6,144, proj 4,096, FC1 256 x 64 = 16,384, FC2 8,192; layers 1, 2 QKV 6,144, proj
# 4,096, shared FC1 4,096, FC2 2,048: 67,584; dp 4: 16,896 (67,584 B). The others: embedding and head 2 x 256
# x 64 = 32,768, norms 6 x 64 + 64 = 448, routers 2 x 8 x 64 = 1,024: 34,240; dp 4: 8,560 (34,240 B).
# Reduce-scatter S = (67,584 + 34,240) x 4 = 407,296 (3/4 leaving: 305,472), all-gather S = 203,648
# (152,736). The routers' biases are no parameters (no shard, no gradient): router_bias below.
mpi_run 4 "$FP8PLAN" run --catalog "$cat" --model tiny-ds --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --steps 2 \
    --ep 2 --zero 1
expect_rc "tiny-ds np 4 ep 2 --zero 1 exits 0" 0
expect_line "tiny-ds: expert master shard 24,576 x 4 B" "  master_expert +98304 +98304 +98304 +4/4 +exact"
expect_line "tiny-ds: expert gradients whole 49,152 x 4 B" "  grad_expert +196608 +196608 +196608 +4/4 +exact"
expect_line "tiny-ds: dense master shard 16,896 x 4 B" "  master_gemm +67584 +67584 +67584 +4/4 +exact"
expect_line "tiny-ds: other master shard 8,560 x 4 B" "  master_other +34240 +34240 +34240 +4/4 +exact"
expect_line "tiny-ds: DP reduce-scatter" "  dp_grad_reducescatter +305472 +305472 +305472 +4/4 +exact"
expect_line "tiny-ds: DP all-gather" "  dp_param_allgather +152736 +152736 +152736 +4/4 +exact"
expect_line "tiny-ds: EDP reduce-scatter" "  edp_grad_reducescatter +98304 +98304 +98304 +4/4 +exact"
expect_line "tiny-ds: EDP reduce-scatter payload" "  edp_grad_reducescatter.payload +196608 +196608 +196608 +4/4 +exact"
expect_line "tiny-ds: EDP all-gather" "  edp_param_allgather +49152 +49152 +49152 +4/4 +exact"
expect_eq "tiny-ds --zero 1: no gradient all-reduce" "$(grep -c 'grad_allreduce' "$TMP/out")" 0
# the sigmoid routers' biases: one FP32 buffer whole on every rank (Megatron-Core's expert_bias), 2 MoE layers x
# 8 experts x 4 B, in the arena and the plan's router_bias
expect_line "tiny-ds: the router biases whole on every rank, by hand" "  router_bias +64 +64 +64 +4/4 +exact"
# tiny-moe at np 4 ep 2: 4 experts x (448 x 64 + 64 x 224) = 172,032 a layer, x 2 = 344,064; shards of
# 172,032 (688,128 B); EDP reduce-scatter S = 1,376,256 (688,128 leaving), all-gather 688,128 (344,064)
mpi_run 4 "$FP8PLAN" run --catalog "$cat" --model tiny-moe --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --steps 2 \
    --ep 2 --zero 1
expect_line "tiny-moe: expert master shard 172,032 x 4 B" "  master_expert +688128 +688128 +688128 +4/4 +exact"
expect_line "tiny-moe: EDP reduce-scatter" "  edp_grad_reducescatter +688128 +688128 +688128 +4/4 +exact"
expect_line "tiny-moe: EDP all-gather" "  edp_param_allgather +344064 +344064 +344064 +4/4 +exact"
# the planner lists the same for the layout
run plan --catalog "$cat" --model tiny-ds --gpu h100-sxm --mbs 1 --gbs 4 --dp 4 --ep 2 --zero 1 \
    --recipe megatron-bf16 --stack fp8plan --view terms --format csv
expect_eq "plan --view terms: master_expert 24,576 elements, 98,304 B, 2 shards" \
    "$(grep '^master_expert,' "$TMP/out" | cut -d, -f4,5,7)" "24576,98304,2"
# over pipeline stages, by hand: tiny-ds at np 8, pp 2 x dp 4 x ep 2 (edp 2), its dense layer 0 alone on stage 0
# (--first-stage-layers 1), --zero 1; each stage's ranks against that stage's plan (the planned column) and the
# numbers below. Stage 0: linears QKV 6,144 + proj 4,096 + FC1 16,384 + FC2 8,192 = 34,816 (dp 4: 8,704 x 4 B =
# 34,816 B); the others embedding 16,384 + 2 norms 128 = 16,512 (4,128 x 4 B = 16,512 B); no experts. Reduce-
# scatter S = (34,816 + 16,512) x 4 = 205,312 (3/4 leaving: 153,984), all-gather S = 102,656 (76,992). Stage 1
# (layers 1, 2): linears 2 x (6,144 + 4,096 + shared FC1 4,096 + FC2 2,048) = 32,768 (8,192 x 4 B = 32,768 B);
# the others head 16,384 + norms 4 x 64 + 64 + routers 1,024 = 17,728 (4,432 x 4 B = 17,728 B; the sigmoid
# routers' biases are FP32 buffers outside the optimizer: router_bias 2 layers x 8 x 4 B = 64 B, whole);
# experts 2 layers x 4 a rank x 6,144 = 49,152 (edp 2: 24,576 x 4 B = 98,304 B). S = (32,768 + 17,728) x 4 =
# 201,984 (151,488), all-gather 100,992 (75,744); EDP 196,608 (98,304) and 98,304 (49,152).
mpi_run 8 "$FP8PLAN" run --catalog "$cat" --model tiny-ds --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --steps 2 \
    --ep 2 --zero 1 --pp 2 --first-stage-layers 1 -o "$TMP/pz.csv"
expect_rc "tiny-ds pp 2 x dp 4 x ep 2 --zero 1 exits 0" 0
pz() { # RANK TERM: planned and measured bytes of RANK's row
    awk -F, -v r="$1" -v t="$2" '$1 == r && ($2 == "rank_memory" || $2 == "rank_comm") && $3 == t { print $5 "," $6 }' \
        "$TMP/pz.csv"
}
for r in 0 3; do
    expect_eq "pp 2, stage 0 (rank $r): dense master shard 8,704 x 4 B" "$(pz $r master_gemm)" "34816,34816"
    expect_eq "pp 2, stage 0 (rank $r): other master shard 4,128 x 4 B" "$(pz $r master_other)" "16512,16512"
    expect_eq "pp 2, stage 0 (rank $r): no experts" "$(pz $r master_expert)" "0,0"
    expect_eq "pp 2, stage 0 (rank $r): DP reduce-scatter" "$(pz $r dp_grad_reducescatter)" "153984,153984"
    expect_eq "pp 2, stage 0 (rank $r): DP all-gather" "$(pz $r dp_param_allgather)" "76992,76992"
    expect_eq "pp 2, stage 0 (rank $r): no EDP reduce-scatter" "$(pz $r edp_grad_reducescatter)" "0,0"
done
for r in 4 7; do
    expect_eq "pp 2, stage 1 (rank $r): dense master shard 8,192 x 4 B" "$(pz $r master_gemm)" "32768,32768"
    expect_eq "pp 2, stage 1 (rank $r): other master shard 4,432 x 4 B" "$(pz $r master_other)" "17728,17728"
    expect_eq "pp 2, stage 1 (rank $r): router biases whole 16 x 4 B" "$(pz $r router_bias)" "64,64"
    expect_eq "pp 2, stage 1 (rank $r): expert master shard 24,576 x 4 B" "$(pz $r master_expert)" "98304,98304"
    expect_eq "pp 2, stage 1 (rank $r): expert gradients whole 49,152 x 4 B" "$(pz $r grad_expert)" "196608,196608"
    expect_eq "pp 2, stage 1 (rank $r): DP reduce-scatter" "$(pz $r dp_grad_reducescatter)" "151488,151488"
    expect_eq "pp 2, stage 1 (rank $r): DP all-gather" "$(pz $r dp_param_allgather)" "75744,75744"
    expect_eq "pp 2, stage 1 (rank $r): EDP reduce-scatter" "$(pz $r edp_grad_reducescatter)" "98304,98304"
    expect_eq "pp 2, stage 1 (rank $r): EDP all-gather" "$(pz $r edp_param_allgather)" "49152,49152"
done
# with tensor parallelism, by hand: tiny-moe-kv2 at np 2, tp 2 (dp 1), --zero 1. The experts' EDP group is both TP
# ranks (tp x dp / ep = 2): 2 layers x 8 experts x (FC1 448 x 64 + FC2 64 x 224 = 43,008) = 688,128 elements, each
# rank's FP32 master shard 344,064 x 4 B = 1,376,256 B (Adam m and v the same), the FP32 gradients whole
# (2,752,512 B) reduce-scattered (half leaves: 1,376,256 sent) and the BF16 weights gathered (1,376,256 B, half
# sent: 688,128). The dense states stay whole (dp 1), each rank its TP slice: QKV (64 + 2 x 2 x 16) x 64 / 2 =
# 4,096 and proj 64 x 64 / 2 = 2,048 a layer, 12,288 FP32 master = 49,152 B; no DP collective.
mpi_run 2 "$FP8PLAN" run --catalog "$cat" --model tiny-moe-kv2 --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --steps 2 \
    --tp 2 --zero 1
expect_rc "tiny-moe-kv2 tp 2 --zero 1 exits 0" 0
expect_line "tp 2: expert master shard 344,064 x 4 B" "  master_expert +1376256 +1376256 +1376256 +2/2 +exact"
expect_line "tp 2: expert Adam m shard" "  adam_m_expert +1376256 +1376256 +1376256 +2/2 +exact"
expect_line "tp 2: expert gradients whole" "  grad_expert +2752512 +2752512 +2752512 +2/2 +exact"
expect_line "tp 2: dense master whole, a TP slice" "  master_gemm +49152 +49152 +49152 +2/2 +exact"
expect_line "tp 2: EDP reduce-scatter over the TP ranks" "  edp_grad_reducescatter +1376256 +1376256 +1376256 +2/2 +exact"
expect_line "tp 2: EDP all-gather over the TP ranks" "  edp_param_allgather +688128 +688128 +688128 +2/2 +exact"
# a sigmoid router's bias through a sharded checkpoint (ep 1: the experts' group is the DP group; --save with
# experts split over --ep is refused, mpi_ep.sh): the FP32 buffer, whole in the file and restored on every rank
# beside the sharded states, 3 + 3 steps the 6 uninterrupted steps' losses bit for bit
D="run --catalog $cat --model tiny-ds --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --zero 1"
mpi_run 2 "$FP8PLAN" $D --steps 6 --loss-log "$TMP/r6.csv"
mpi_run 2 "$FP8PLAN" $D --steps 3 --save "$TMP/r.ckpt"
expect_rc "tiny-ds dp 2 --zero 1 --save exits 0" 0
mpi_run 2 "$FP8PLAN" $D --steps 3 --resume "$TMP/r.ckpt" --loss-log "$TMP/r3.csv"
expect_rc "tiny-ds dp 2 --zero 1 --resume exits 0" 0
expect_eq "tiny-ds dp 2 --zero 1: 3 + 3 steps through a checkpoint, the 6 steps' losses" \
    "$(sed 1d "$TMP/r3.csv")" "$(sed -n '5,7p' "$TMP/r6.csv")"

# what is not run says so
mpi_run 2 "$FP8PLAN" $G --recipe megatron-bf16 --steps 1 --zero 2
expect_rc "--zero 2: unavailable (69)" 69
expect_err "--zero 2: the reason" "--zero 2: the executor shards the optimizer states only"
# scaled states other than FP8-LM's linears (here fp8lm with current scaling: a copy's amax per
# shard would not be the tensor's before its cast) are refused, naming what is run
sed -n 's/^fp8lm,\(.*\),delayed,/fp8lm-cur,\1,current,/p' "$cat/recipes.csv" >>"$cat/recipes.csv"
mpi_run 2 "$FP8PLAN" $G --recipe fp8lm-cur --steps 1 --zero 1
expect_rc "fp8lm with current scaling --zero 1: unavailable (69)" 69
expect_err "fp8lm-cur --zero 1: the reason" "recipe fp8lm-cur, zero1: linear-weight states with per-tensor scaling records are sharded only as FP8-LM's"
run $G --recipe megatron-bf16 --steps 1 --zero 1 --dist-opt
expect_rc "--zero 1 --dist-opt: usage (64)" 64
expect_err "--zero 1 --dist-opt: the reason" "--dist-opt and --zero 1 are alternatives"
run $G --recipe megatron-bf16 --steps 1 --zero 4
expect_rc "--zero 4: usage (64)" 64
expect_err "--zero 4: the flag named" "--zero:"
finish
