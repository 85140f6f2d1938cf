# tests/cli/mpi_ep.sh — `mpirun -np N fp8plan run --ep E`: expert parallelism on CPU ranks over MPI
# (exec/model/model_moe_ep.c; docs/executor-moe.md). Every layout the executor accepts with experts is a row
# of the table below, each against the one-rank run of the same model and batch: the losses within the
# stated bound, the routing (token copies per step, MoE layer and expert, summed over the ranks) equal to
# one rank's line for line, every rank's persistent memory and dense collectives as the plan's, and every
# rank's expert all-to-alls exactly as the plan has them for the routing the run measured (the run's own
# table, and `fp8plan plan --routing` on the log it wrote). Then the refusals and a rank whose counts
# disagree.
#
# Models (added to the test catalog): tiny-moe is Mixtral shrunk — 2 layers, hidden 64, 4 heads of 16 and
# 1 KV head, seq 32, vocab 256, RMSNorm, SwiGLU, RoPE, untied; 8 experts of FFN 224, top-2, softmax router.
# tiny-moe-64 has 64 experts of FFN 16, top-8 (a real expert count). tiny-moe-v has Mixtral's 32,000-token
# vocabulary. tiny-ds is DeepSeek-style without latent attention: 3 layers, the first dense (FFN 128),
# 8 experts of FFN 32 top-2, a shared expert, a sigmoid router with 4 groups, top 2 groups. tiny-qwen is
# Qwen3's MoE row shrunk: 4 heads of 16 with 2 KV heads and q/k norms, 8 experts of FFN 32 top-2. tiny-mla is
# DeepSeek-V3 shrunk without MTP: 2 layers, the first dense (FFN 128), latent attention (4 heads of qk_nope 8 +
# qk_rope 4, values 8, q latent 24, kv latent 16), 8 experts of FFN 32 top-2, a shared expert, a sigmoid router
# with 4 groups, top 2 groups. tiny-mtp is tiny-mla with DeepSeek-V3's multi-token prediction (mtp_layers 1:
# its block a third, MoE, layer whose experts dispatch and combine like the others'; exec/model/model_mtp.c);
# tiny-mtp2 has two depths (a fourth MoE block), tiny-mtp2-v the same at a 32,000-token vocabulary: each depth's
# loss (the loss log's columns 3 and 4) gets the bound of its row's main loss, or the MTP bounds below. fp32-ref is a
# recipe with every state and GEMM in FP32 (the executor's reference). Its rows exit 1 on one rank as on
# the EP ranks, for a term outside expert parallelism: its activation terms (the planner counts them BF16);
# their per-rank tables are checked all the same. tiny-ds's and tiny-mla's transients are within the plan's
# (tiny-mla: 92,160 B held and planned, by hand in run_moe.sh): the plan counts latent attention's
# backward rows and, for this executor, a MoE layer's shared-FFN buffers at the dense first layer's width.
#
# The bound, 1e-4 relative over the steps, is mpi_run.sh's for data parallelism, and for the same reason:
# on the experts' rank a grouped weight-gradient GEMM sums the rows of every EP peer's tokens in one FP32
# chain where one rank sums its own micro-batch's, so the expert gradients differ in the last bits and a
# BF16 weight can round the other way after a step (one BF16 step is 2^-8 relative); the routing, taken
# before any of that, stays identical (checked), and the EP 2 x DP 2 layout of tiny-moe gives one rank's
# bits.
# FP8 experts run with ep 1 over data parallelism (every rank holds every expert, so each expert's data-
# parallel group is the whole DP group): te-fp8-current scales every cast from the tensor's own amax, so DP 2
# and DP 4 give one rank's bits (routing included). te-fp8's delayed scaling updates its scales after every
# micro-batch from the amax history MAX-reduced over the DP group (model_update_bank), so from a step's second
# micro-batch on a rank casts with the MAX over its peers' micro-batches where one rank uses its own earlier
# ones: both are casts to E4M3 with a scale covering the tensor, each off the exact value by at most E4M3's
# unit roundoff 2^-4 in its own direction, so the two runs' losses are bounded by 2 x 2^-4 = 2^-3 relative
# (measured: 4.6e-4 at np 2), and a token copy can route differently from step 1 on (measured: 1 in 64 per
# layer), so the routing is not compared for those rows ('d'); te-fp8 over EP ranks likewise (its experts'
# records reduced over their EDP group: below). With ep above 1 te-fp8-current exchanges
# nothing about its scales (each cast's comes from its own tensor), but an expert's tensor on its rank holds
# the rows of every EP peer's micro-batch, so its per-tensor scale covers more rows than one rank's does and
# its casts differ: the losses stay within the same 2^-3 (measured: 4.4e-4 at np 2 ep 2), MoE layer 0's
# routing of step 1 (before any expert ran) is one rank's, the later layers' may differ ('c'). deepseek-v3
# quantizes each dispatched row in 1x128 tiles on its token side and sends the E4M3 codes with their FP32
# scales (model_moe_ep_fp8.c); a row's tiles are its own, so the experts' side gets the codes one rank casts
# and step 1's forward, loss and routing are one rank's bit for bit ('s'). Its wgrad reads transposed tiles
# re-quantized from the dequantized rows (one rank: from the BF16 rows) and sums every peer's rows in one
# chain, so later steps differ within twice deepseek-v3's 2^-4 + 2^-6 against exact arithmetic. At ep > 1
# its ranks exit 0 as one rank does: the token side quantizes its rows straight into the FP8 send buffer, in
# the arena, which is the plan's dispatch buffer (64 rows x (64 codes + one fp32 scale) = 4,352 B at 64 rows),
# and makes its d(expert outputs) in the combine buffer instead of a BF16 copy of its own (before, 4,096 B over
# the plan: rank 0's transient of tiny-moe at np 2 is now 71,936 B planned and held).
# Tensor parallelism (rows with a last column tp 2; sequence parallel, MoE folding at etp 1: the expert side is
# the tp x dp ranks regrouped ep fastest; docs/executor-moe.md "With tensor parallelism"). tiny-moe-kv2 and
# tiny-moe-64kv2 are tiny-moe and tiny-moe-64 with 2 KV heads (tp 2 must divide them); tiny-moe-sh has a dense
# first layer (FFN 128) and a shared expert (FFN 32, split over TP as the dense FFN) beside 8 experts of FFN 32
# top-2, softmax. fp32-ref at tp 2 x ep 1/2/4 gives one rank's losses and routing bit for bit over 5 steps
# (tiny-moe-sh: 4): the layout adds no arithmetic. In
# BF16 the row-parallel partial sums are rounded to BF16 before the reduce-scatter (one rank rounds the whole
# sum once), as for dense TP (mpi_tp.sh), so MoE layer 1's router input can differ in its last bit and a near
# tie routes a copy differently from step 1 on (measured: 1 copy of 256 in layer 1 at step 1); layer 0's
# routing (from the embedding) is one rank's and step 1's loss within 1e-4 (measured 1.2e-5); the later
# steps part further as more copies route differently (measured 2.5e-4 at step 3, 3.7e-4 at step 5), so
# they are not compared ('t').
# tiny-mtp's BF16 rows are within the 1e-4 bound, not bit for bit (measured: 8.3e-6 at np 2 ep 2, 3.8e-6 at np 4
# ep 4 over 5 steps), for the expert wgrad chains above; its plan --routing names 2 MoE layers (the MTP block's).
# Sigmoid routers and FP8 experts with tensor parallelism (the rows after tiny-moe-sh's). tiny-ds-kv2 is tiny-ds
# with 2 KV heads; tiny-ds-256 has DeepSeek-V3's routing at its real expert count: 256 experts of FFN 8 in 8
# groups, top 4 groups, top-8, a shared expert, the first of 2 layers dense. A sigmoid router's bias is an FP32
# buffer every rank moves alike from the TP x DP ranks' summed counts (no gradient, not in
# tp_norm_grad_allreduce: the plan's router_bias term, exact). fp32-ref: tiny-ds-256 at tp 2 x ep 4 gives one
# rank's losses and routing bit for bit; tiny-ds-kv2 at tp 2 and tp 2 x ep 2 routes as one rank does at every
# step and its losses differ by one FP32 rounding of a sum taken in another order (measured 8.8e-8 relative at
# step 2 of 4, 1.5 units of 2^-23 at 5.46; the other steps bit for bit), held within 1e-6 ('f'). The softmax
# tiny-moe-kv2 fp32-ref row at tp 2 shows the same 8.8e-8 at step 2 on this tree before these rows were added
# (its '1' fails; not pinned here, not a sigmoid matter). FP8 experts at tp 2:
# the bounds of FP8 over DP/EP ranks above, for the same reasons — te-fp8's experts reduce their delayed-scaling
# records over the TP x DP ranks (ep 1) or their EDP group, so a rank casts with the MAX over amaxes of other
# shards ('d': 2 x 2^-4 = 2^-3); te-fp8-current casts each expert's rows with their own amax, which on a TP
# rank covers its sequence shard's rows only ('c': 2^-3, MoE layer 0's step-1 routing one rank's; 'd' after a
# dense first layer, whose TP partial sums round as in the 't' rows). The plan's amax all-reduce under current
# scaling counts the TP-split tensors only (attention, shared experts), not the experts (planner/plan_moe_comm.c).
# Latent attention with tensor parallelism (tiny-mla, tiny-mla-v; docs/executor-moe.md "Latent attention with
# tensor parallelism"): fp32-ref at tp 2 and tp 2 x ep 2 gives one rank's losses and routing bit for bit over 4
# steps (measured; the duplicated down-projections' FP32 weight gradients are two shards' sums added, an
# association one rank's GEMM need not share, yet agree at this size); megatron-bf16 at tp 2 and tp 2 x ep 2 within
# 1e-4 at step 1 (measured 1.5e-5: the row-parallel partial sums and the RoPE key's heads summed per rank are
# rounded to BF16 before their reduce-scatters), 'T': its first layer is dense; te-fp8 and te-fp8-current at tp 2
# within 2^-3 (measured 1.2e-4 and 1.0e-4 over 3 steps: each rank casts its shard of the duplicated
# down-projections' inputs, and the MAX over the TP group's amaxes scales the rest, 'd'); the real vocabulary
# within 1e-4 at step 1 (measured 5.0e-6). Multi-token prediction at tp 2 (tiny-mtp: latent attention, experts
# and the depth): the main losses as tiny-mla's ('1': fp32-ref bit for bit at tp 2 and tp 2 x ep 2; 'T'; 'd');
# the depth's own loss (the log's third column) within 1e-6 over the steps in fp32-ref (measured 1.3e-8 at
# step 1: the depth's FP32 forward rounds differently on a TP rank, not pinned further), within 1e-4 at step 1
# in BF16 (measured 1.2e-5), within 2^-3 in te-fp8 (measured 3.8e-4 over 3 steps).
# Block scaling with TP (deepseek-v3 at tp 2: tiny-mla-b, tiny-mtp-b, tiny-mla-bv, the 'b' rows; tp 2 alone, x ep 2 and
# x pp 2): every rank's persistent terms and TP collectives the plan's byte for byte, the E4M3 codes gathered with
# their FP32 scales. Against one rank the losses stay within twice deepseek-v3's 2^-4 + 2^-6, as the 's' rows: the
# row-parallel partial sums are rounded to BF16 before their reduce-scatters (an E4M3 code at a rounding boundary
# can move), the transposed copies are tiled along a rank's 16 tokens where one rank tiles 32, and the experts run
# on each rank's sequence shard (their transposed tiles re-cut per expert as over EP ranks). Measured (3 steps, 2
# at np 4): tiny-mla-b 6.4e-5 at step 1, 3.2e-2 at step 3 (sigmoid routing of the MoE layer moves after the first
# update), 5.7e-3 over 2 steps at tp 2 x ep 2; tiny-mtp-b 3.0e-2 at step 3, its MTP loss 8.7e-4 at step 1 and
# 4.5e-3 by step 3, 7.9e-3 over 2 steps at tp 2 x pp 2; tiny-mla-bv 7.1e-4 at step 1 (te-fp8 at tp 2 on the same
# row: 7.1e-4 too; megatron-bf16: 7.5e-6).
# Expert tensor parallelism (the --etp rows: etp 2; exec/model/model_moe_etp.c, docs/executor-moe.md "Expert tensor
# parallelism"): every rank's persistent terms the plan's byte for byte (each expert's FC1 and FC2 half a rank); at
# ep 1 the ETP gather and reduce-scatter as the plan has them (every member's tokens x top-k rows), at ep 2 with
# the dispatches' all-to-alls in the per-rank table, exact for the measured routing (plan_etp_routed), and from
# plan --routing alike (7 rows a rank: 14 in -o). fp32-ref at tp 2 (ep 1, ep 2, over stages, sharded) gives one
# rank's losses and routing bit for bit; at tp 1 and on tiny-ds-kv2 within 1e-6 with one rank's routing every
# step ('f': the row-parallel FC2's two halves are summed by the reduce-scatter where one rank sums one chain;
# measured 0 and 8.8e-8, the latter tiny-ds-kv2's own at tp 2 without ETP, above). BF16 rounds each half's partial
# output to BF16 before the reduce-scatter, as the TP rows do ('t', 'T': step 1 within 1e-4, measured 1.3e-6 at
# tp 1, 1.3e-5 at tp 2, 4.4e-6 tiny-ds-kv2, 8.8e-6 tiny-ds-256 at its real 256 experts, 1.3e-5 tiny-moe-vkv2 at
# Mixtral's vocabulary; a near tie of MoE layer 1 routes one copy differently at tp 1, measured). The MTP depth's
# loss within 1e-4 at step 1 (measured 9.5e-6). At ep 1 the group's rows are etp x tokens x top-k whatever the
# routing, and they are the arena's (exec/model/model_internal.h model_etp_arena; FP8 experts' transposed FP8 inputs,
# tiles and working copies too): every row at ep 1 but fp32-ref's holds act_moe as planned byte for byte, and the
# tiny-moe rows the transient too (tiny-moe and tiny-moe-v at tp 1, the latter's LM-head backward with the experts' outputs at the group's rows beside it;
# tiny-ds-256 at its 256 experts, step 1 measured 5.1e-7; tiny-moe-v 6.4e-7).
# FP8 experts over ETP ranks (the te-fp8, te-fp8-current and deepseek-v3 --etp rows): as Megatron-Core's all-to-all
# dispatcher, the gather moves the rows as the dispatch delivered them (BF16 under the per-tensor recipes, which
# quantize on the experts' side; deepseek-v3's E4M3 codes and 1x128 scales at ep 2, 68 B a row of 64; BF16 at ep 1,
# where nothing was dispatched) and the reduce-scatter BF16 partial sums; te-fp8's expert amax records are
# MAX-reduced over the ETP group too, so a shard casts with the whole expert's scale (the scaling-trace check
# below). The ETP bytes exact for the measured routing; the losses within the bounds of the same recipes over EP
# ranks: 'd'/'c' 2^-3, 'b' 2 x (2^-4 + 2^-6) (measured 7.5e-5 te-fp8 ep 1, 1.5e-4 over 2 stages at tp 2, 2.0e-4
# te-fp8-current ep 2, 1.5e-4 tiny-ds-256 te-fp8, 2.9e-5 deepseek-v3 ep 1 with MTP, 4.4e-5 ep 2, 1.0e-6
# tiny-ds-256). A NaN or Inf in a partial sum stops every rank under each FP8 recipe too (the fault loop).
# tier: full (make test-full, which .ci/run runs): 167 mpirun runs (2 FP8 --etp 2 rows at ep 1 added, tiny-moe under
# te-fp8 and deepseek-v3: the 13 ep 1 --etp rows without --zero with their one-rank runs took 39 s at load 4-7; before
# 165: 2 --etp 2 rows at ep 1 added, 3 m 06 s for the
# 25 --etp rows with their one-rank runs at load 11; before 163: 7 with two MTP depths, about 5 m of them at
# load 16-21 with their one-rank runs; 7 FP8 --etp 2 rows, 3 FP8 fault runs and a scaling trace added, 2 refusals
# gone: the 7 rows and the 6 ETP fault runs took 1 m 05 s at load 28); before 147 (16 with --etp 2, about 2 m 30 s
# of them at load 9-12; the whole file 16 m 01 s at load 6-17 on 2 cores shared with other builds); before them 131 (5 with deepseek-v3 at tp 2); 126 before (12 with latent attention or MTP at tp 2; 18 added with experts at tp 2 over stages and sharded, the
# last table rows but two (those stay last: the refusals below read the last row's log), and 2 --etp refusals: 5 m 38 s in all at load
# 13-15; 13 added with sigmoid routers and FP8 at tp 2; the 28 with tp 2 added: 2 m 16 s in all on 2 busy
# cores), about 20 s alone before the DeepSeek-V3 row's
# (26 s more measured on 2 cores busy with other builds; run_moe.sh keeps one
# expert-parallel run in the quick tier)
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

mpi_require
# The bit-for-bit rows below test that a layout adds no arithmetic of the executor's own; they need a GEMM whose
# element (i, j) rounds the same whatever the rows beside it. OpenBLAS 0.3.21 (Debian's DYNAMIC_ARCH build) does
# not on a core it drives with its Haswell/Zen kernels: row 0 of a 224-wide SGEMM product with K 64 differs in
# its last bits between M = 256 and M = 1..128 (measured on an AMD EPYC Zen 3, no AVX-512: every M differed;
# with OPENBLAS_CORETYPE=Sandybridge or Prescott none did), and an expert's GEMM on its EP rank has other rows
# than one rank's. So the script pins OpenBLAS's kernels to Sandybridge's (AVX, which every x86-64 core this
# project runs on has; mpirun passes the variable to its local ranks); the default kernels get the issue's own
# bound (1e-4 relative in BF16) at the end. On the Zen 3 machine, unpinned: 5 of the bit-for-bit checks differ.
export OPENBLAS_CORETYPE=Sandybridge
cat=$TMP/cat
mpi_catalog "$cat"
moe() { # name layers hidden ffn heads kv hd vocab seq experts topk shared eff dense router groups gtopk [qk_norm]
    echo "$1,$2,$3,$4,$5,$6,$7,$8,$9,rmsnorm,swiglu,rope,no,no,${18:-no},${10},${11},${12},${13},${14},${15},${16},${17},0,0,0,0,0,0,\"test model\"" >>"$cat/models.csv"
}
moe tiny-moe 2 64 224 4 1 16 256 32 8 2 0 224 0 softmax 0 0
moe tiny-moe-64 2 64 224 4 1 16 256 32 64 8 0 16 0 softmax 0 0
moe tiny-moe-v 2 64 224 4 1 16 32000 32 8 2 0 224 0 softmax 0 0
moe tiny-moe-vkv2 2 64 224 4 2 16 32000 32 8 2 0 224 0 softmax 0 0
moe tiny-ds 3 64 128 4 1 16 256 32 8 2 1 32 1 sigmoid 4 2
moe tiny-qwen 2 64 192 4 2 16 256 32 8 2 0 32 0 softmax 0 0 yes
moe tiny-moe-kv2 2 64 224 4 2 16 256 32 8 2 0 224 0 softmax 0 0
moe tiny-moe-64kv2 2 64 224 4 2 16 256 32 64 8 0 16 0 softmax 0 0
moe tiny-moe-sh 3 64 128 4 2 16 256 32 8 2 1 32 1 softmax 0 0
moe tiny-ds-kv2 3 64 128 4 2 16 256 32 8 2 1 32 1 sigmoid 4 2
moe tiny-ds-256 2 64 128 4 2 16 256 32 256 8 1 8 1 sigmoid 8 4
echo 'tiny-mla,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,0,"test model"' >>"$cat/models.csv"
echo 'tiny-mtp,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,1,"test model"' >>"$cat/models.csv"
# two MTP depths (tiny-mla with mtp_layers 2), and at Mixtral's 32,000-token vocabulary
echo 'tiny-mtp2,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,2,"test model"' >>"$cat/models.csv"
echo 'tiny-mtp2-v,2,64,128,4,4,12,32000,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,2,"test model"' >>"$cat/models.csv"
# tiny-mla at DeepSeek-V3's real vocabulary (129,280 tokens; Vp/tp = 64,640 rows a TP rank)
echo 'tiny-mla-v,2,64,128,4,4,12,129280,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,0,"test model"' >>"$cat/models.csv"
# block scaling over TP (deepseek-v3 at tp 2, exec/model/model_tp_block.c): every TP-split weight a whole number of
# 128x128 blocks a rank — hidden 256, 8 heads (4 a rank) of qk_nope 32 + qk_rope 32 with values of 32: q_up 4 x 64
# = 256 rows, kv_up 4 x (32 + 32) = 256, the output projection 4 x 32 = 128 columns; the dense first layer's FFN
# 256 / 2 = 128, 2 shared experts of 128: 2 x 128 / 2 = 128; MTP's eh_proj 256 / 2 = 128 rows; tiny-mla-bv at
# DeepSeek-V3's vocabulary
for v in tiny-mla-b,256,0 tiny-mtp-b,256,1 tiny-mla-bv,129280,0; do
    n=${v%%,*} d=${v##*,} V=${v#*,} V=${V%,*}
    echo "$n,2,256,256,8,8,64,$V,32,rmsnorm,swiglu,rope,no,no,no,8,2,2,128,1,sigmoid,4,2,64,32,32,32,32,$d,\"test model\"" >>"$cat/models.csv"
done
echo 'fp32-ref,fp32,none,none,none,fp32,fp32,fp32,none,none,fp32-ref,fp32,fp32,none,tensor,tensor,0,none,fp32,fp32,fp32,fp32,fp32,fp32,fp32,none,8.0,"test recipe: every state and GEMM in FP32"' >>"$cat/recipes.csv"

within() { # NAME LOGA LOGB BOUND STEPS: max relative difference of the losses at most BOUND over STEPS steps
    local r
    r=$(awk -F, -v s="$5" 'NR == FNR { if (FNR > 1) a[$1] = $2; next } FNR > 1 { n++; if (!($1 in a)) bad = 1; d = $2 - a[$1];
        if (d < 0) d = -d; d /= a[$1]; if (d > m) m = d } END { if (bad || n != s) print "n/a"; else print m + 0 }' "$2" "$3")
    if [ "$r" != n/a ] && awk -v r="$r" -v b="$4" 'BEGIN { exit !(r <= b) }'; then pass "$1 ($r)"; else fail "$1" "max relative difference: $r"; fi
}
same_routing() { # NAME ONE EP STEPS: the EP log's copies summed over ranks = the one-rank log, per step (up to
    # STEPS), layer and expert
    awk -F, -v n="$4" 'NR > 1 && $1 <= n { s[$1 "," $2 "," $4] += $5 } END { for (k in s) print k "," s[k] }' "$3" |
        sort >"$TMP/ep.r"
    awk -F, -v n="$4" 'NR > 1 && $1 <= n { print $1 "," $2 "," $4 "," $5 }' "$2" | sort >"$TMP/one.r"
    if [ -s "$TMP/one.r" ] && cmp -s "$TMP/one.r" "$TMP/ep.r"; then pass "$1"; else fail "$1" "$(diff "$TMP/one.r" "$TMP/ep.r" | head -4)"; fi
}

# ---- every layout against one rank -----------------------------------------------------------------
# np|ep|model|recipe|steps|rc|same: DP = np, EDP = np / ep; micro-batch 1 x 32 tokens, global batch 4
# sequences (4 micro-batches on one rank, 4/np a rank here). rc: the runs' exit status (1: a one-rank
# activation term the plan does not match, see below). same: 1 where the losses are one rank's bit for bit
# (then the routing of every step is one rank's), 0 where they are within the bound (then step 1's routing
# is, the weights being one rank's until the first update; measured: np 2 ep 2 routes one copy differently
# from step 5, np 4 ep 4 too). tp: a last-but-one column (above); more: a last one, further layout flags — pipeline
# stages (even or uneven: each stage's k = np / pp ranks against its own plan) and sharded states (the experts'
# over their EDP group of tp x dp / ep ranks of the stage, reduce-scattered there). Experts at tp 2 over stages
# and with sharded states reproduce one rank as at tp 2 alone: fp32-ref bit for bit (uneven stages, ep 2, --zero 1
# over stages too), BF16 step 1 within 1e-4, FP8 within 2^-3. An fp32-ref run over stages sends FP32 activations
# between them, which the plan counts in BF16 (the one-rank activation terms above): those rows check every other
# collective as planned and pp_send_recv at exactly twice the plan's.
while IFS='|' read -r np ep model recipe steps rc_want same tp more <&3; do
    case "$np" in '' | '#'*) continue ;; esac
    tp=${tp:-1}
    pp=$(echo "$more" | sed -n 's/.*--pp \([0-9]*\).*/\1/p')
    etp=$(echo "$more" | sed -n 's/.*--etp \([0-9]*\).*/\1/p')
    k=$((np / ${pp:-1})) # a stage's ranks (each stage's against its own plan in the per-rank tables)
    edp=$((k / (ep * ${etp:-1}))) # the expert-data-parallel group: the stage's ranks holding the same experts' shard
    tag="$model $recipe np $np ep $ep tp $tp${more:+ $more}"
    R="run --catalog $cat --model $model --mbs 1 --gbs 4 --quiet --recipe $recipe --steps $steps"
    rc_one=${rc_want%/*} rc_ep=${rc_want#*/} # "a/b": one rank exits a, the ranks b
    run $R --loss-log "$TMP/one.csv" --routing-log "$TMP/one_r.csv"
    expect_rc "$model $recipe one rank exits $rc_one" "$rc_one"
    mpi_run "$np" "$FP8PLAN" $R --ep "$ep" --tp "$tp" $more --loss-log "$TMP/ep.csv" --routing-log "$TMP/ep_r.csv" \
        -o "$TMP/ep-o.csv"
    expect_rc "$tag exits $rc_ep" "$rc_ep"
    if [ "$same" = 1 ]; then
        within "$tag: the one rank's losses bit for bit" "$TMP/one.csv" "$TMP/ep.csv" 0 "$steps"
        same_routing "$tag: the one rank's routing, every step, layer and expert" "$TMP/one_r.csv" "$TMP/ep_r.csv" "$steps"
    elif [ "$same" = d ]; then # delayed scaling: see the head comment
        within "$tag: the one rank's losses within 2^-3" "$TMP/one.csv" "$TMP/ep.csv" 0.125 "$steps"
    elif [ "$same" = s ]; then # deepseek-v3 over EP ranks: see the head comment
        expect_eq "$tag: the one rank's step 1 loss bit for bit" "$(grep '^1,' "$TMP/ep.csv")" "$(grep '^1,' "$TMP/one.csv")"
        within "$tag: the one rank's losses within 2 x (2^-4 + 2^-6)" "$TMP/one.csv" "$TMP/ep.csv" 0.15625 "$steps"
        same_routing "$tag: the one rank's routing of step 1, every layer and expert" "$TMP/one_r.csv" "$TMP/ep_r.csv" 1
    elif [ "$same" = t ] || [ "$same" = T ]; then # BF16 with TP: see "Tensor parallelism" in the head comment
        head -2 "$TMP/one.csv" >"$TMP/one1.csv"
        head -2 "$TMP/ep.csv" >"$TMP/ep1.csv"
        within "$tag: step 1's loss within 1e-4 of one rank's" "$TMP/one1.csv" "$TMP/ep1.csv" 1e-4 1
        if [ "$same" = t ]; then # 'T': no MoE layer 0 (a dense first layer, itself tensor-parallel, before)
            awk -F, 'NR == 1 || $2 == 0' "$TMP/one_r.csv" >"$TMP/one_r0.csv"
            awk -F, 'NR == 1 || $2 == 0' "$TMP/ep_r.csv" >"$TMP/ep_r0.csv"
            same_routing "$tag: the one rank's routing of step 1, MoE layer 0" "$TMP/one_r0.csv" "$TMP/ep_r0.csv" 1
        fi
    elif [ "$same" = f ]; then # FP32 sums in another order: see "Sigmoid routers and FP8 experts" above
        within "$tag: the one rank's losses within 1e-6" "$TMP/one.csv" "$TMP/ep.csv" 1e-6 "$steps"
        same_routing "$tag: the one rank's routing, every step, layer and expert" "$TMP/one_r.csv" "$TMP/ep_r.csv" "$steps"
    elif [ "$same" = b ]; then # deepseek-v3 over TP ranks: see "Block scaling with TP" in the head comment
        within "$tag: the one rank's losses within 2 x (2^-4 + 2^-6)" "$TMP/one.csv" "$TMP/ep.csv" 0.15625 "$steps"
    elif [ "$same" = c ]; then # current scaling over EP ranks: see the head comment
        within "$tag: the one rank's losses within 2^-3" "$TMP/one.csv" "$TMP/ep.csv" 0.125 "$steps"
        awk -F, 'NR == 1 || $2 == 0' "$TMP/one_r.csv" >"$TMP/one_r0.csv"
        awk -F, 'NR == 1 || $2 == 0' "$TMP/ep_r.csv" >"$TMP/ep_r0.csv"
        same_routing "$tag: the one rank's routing of step 1, MoE layer 0" "$TMP/one_r0.csv" "$TMP/ep_r0.csv" 1
    else
        within "$tag: the one rank's losses within 1e-4" "$TMP/one.csv" "$TMP/ep.csv" 1e-4 "$steps"
        same_routing "$tag: the one rank's routing of step 1, every layer and expert" "$TMP/one_r.csv" "$TMP/ep_r.csv" 1
    fi
    # the MTP depths' losses (columns 3 on): see the head comment; at tp 2, and for two depths in every layout
    if { [ "$tp" != 1 ] && [ "${model%-b}" = tiny-mtp ]; } || [ "${model#tiny-mtp2}" != "$model" ]; then
        case $same in 1) b=1e-6 n=$steps ;; d) b=0.125 n=$steps ;; b) b=0.15625 n=$steps ;; *) b=1e-4 n=1 ;; esac
        r=$(awk -F, -v n="$n" 'NR == FNR { if (FNR > 1) for (i = 3; i <= NF; i++) a[$1, i] = $i; next }
            FNR > 1 && $1 <= n { for (i = 3; i <= NF; i++) { d = $i - a[$1, i]; if (d < 0) d = -d; d /= a[$1, i]
            if (d > m) m = d } k++ } END { if (k != n) print "n/a"; else print m + 0 }' "$TMP/one.csv" "$TMP/ep.csv")
        if [ "$r" != n/a ] && awk -v r="$r" -v b="$b" 'BEGIN { exit !(r <= b) }'; then pass "$tag: the MTP losses within $b over $n steps ($r)"
        else fail "$tag: the MTP losses within $b over $n steps" "max relative difference: $r"; fi
        [ "${model#tiny-mtp2}" != "$model" ] && expect_eq "$tag: both depths' losses logged" "$(head -1 "$TMP/ep.csv")" \
            "step,loss,mtp_loss_1,mtp_loss_2"
    fi
    expect_out "$tag: persistent memory as planned" "every rank holds the plan's persistent bytes, byte for byte"
    if [ "$recipe" = fp32-ref ] && [ -n "$pp" ]; then # the stages send FP32 activations the plan counts BF16
        expect_eq "$tag: every collective as planned but the FP32 sends between stages (2 x the plan's)" \
            "$(awk '$NF == "DIFFERS" && !($1 ~ /^pp_send_recv/ && $3 == 2 * $2 && $4 == $3) { n++ } END { print n + 0 }' "$TMP/out")" 0
    else
        expect_out "$tag: dense collectives as planned" "every rank sent the plan's bytes, byte for byte"
    fi
    case "$more" in # sharded states: the experts' gradients reduce-scattered over their EDP group (tp x dp / ep)
    *--zero* | *--dist-opt*) [ "$edp" -gt 1 ] && expect_line "$tag: expert gradients reduce-scattered over EDP" \
        "  edp_grad_reducescatter( +[0-9]+){3} +$k/$k +exact" ;;
    *) [ "$ep" = 1 ] && [ "$edp" -gt 1 ] && expect_line "$tag: expert gradients over their EDP group" \
        "  edp_grad_allreduce( +[0-9]+){3} +$k/$k +exact" ;;
    esac
    # the replicated parameters' gradients (norms, router, latent down-projections) flattened into one FP32 buffer
    # and all-reduced over TP in one call, as Megatron's finalize_model_grads does and the plan counts, however
    # large (tiny-moe-kv2: 2 x (64 + 64 + 8 x 64) + 64 = 1,344 FP32 = 5,376 B, more than the 32 x 64 BF16 = 4,096 B
    # TP gather buffer the executor used to pack them in: 2 calls; tiny-mla-b's 276,224 B took 9)
    [ "$tp" = 1 ] || expect_line "$tag: the replicated gradients in one TP all-reduce, as planned" \
        "tp_norm_grad_allreduce.calls +calls +1 +1 +per step"
    [ -n "$etp" ] && [ "$ep" = 1 ] && expect_line "$tag: the ETP gather as planned (every member's tokens x top-k)" \
        "  etp_allgather( +[0-9]+){3} +$k/$k +exact"
    # ep 1 x etp 2: the experts' side in the arena at the ETP group's rows (see "Expert tensor parallelism" above),
    # BF16 experts and FP8 ones (their transposed FP8 inputs, 1x128 tiles and working FP8 copies at those rows too):
    # act_moe the plan's byte for byte, and the transient where its peak is the MoE layer's or the LM head's (the
    # tiny-moe rows; tiny-ds-256's is 8,192 B under the plan on one rank too, tiny-mtp's under it with latent
    # attention, not ETP's); fp32-ref's activations are FP32 where the plan counts BF16 (its rows exit 1, above)
    if [ -n "$etp" ] && [ "$ep" = 1 ] && [ "$recipe" != fp32-ref ]; then
        held() { awk -v t="$1" '$1 == "memory" && $2 == t { print $4 " " $5; exit }' "$TMP/out"; }
        expect_eq "$tag: act_moe planned and held alike" "$(held act_moe | awk '{ print ($1 == $2) }')" 1
        case $model in tiny-moe*) expect_eq "$tag: the transient planned and held alike" \
            "$(held transient | awk '{ print ($1 == $2) }')" 1 ;;
        esac
    fi
    # what stays outside the arena at ep 1 x etp 2, printed as at ep > 1: tiny-moe's per-expert row counts, 2 MoE
    # layers x 8 int32 = 64 B, and under te-fp8 (delayed scaling) the expert amax records' reduction buffer, 2 layers
    # x 4 records x 8 experts x 4 B = 256 B: 320
    if [ -n "$etp" ] && [ "$ep" = 1 ] && [ "$model" = tiny-moe ]; then
        ob=64; [ "$recipe" = te-fp8 ] && ob=320
        expect_out "$tag: the buffers outside the arena, by hand" "each rank also holds $ob B of expert-parallel buffers"
    fi
    if [ "$ep" = 1 ]; then # data parallelism alone: the EDP group is every rank of the stage
        [ "$tp" = 1 ] || expect_line "$tag: the router's gradient with the norms' over TP" \
            "  tp_norm_grad_allreduce( +[0-9]+){3} +$k/$k +exact"
        continue
    fi
    expect_out "$tag: all-to-alls as planned for the measured routing" \
        "every rank sent the plan's expert all-to-all bytes for the measured routing, byte for byte"
    expect_eq "$tag -o: every rank's all-to-all rows ok" \
        "$(grep -c ',rank_ep_routed,.*,exact,ok$' "$TMP/ep-o.csv")" "$((np * (${etp:+4} + 10)))"
    # the planner, given the log: each rank's bytes as the run measured them (sent and payload)
    sp=; [ "$tp" = 1 ] || sp=--sp
    run plan --catalog "$cat" --model "$model" --gpu h100-sxm --mbs 1 --gbs 4 --dp "$((k / tp))" --tp "$tp" $sp --ep "$ep" \
        $more --recipe "$recipe" --stack fp8plan --routing "$TMP/ep_r.csv" --format csv
    expect_rc "$tag: plan --routing exits 0" 0
    awk -F, '$2 == "rank_ep_routed" && $3 !~ /payload/ { print $1 "," $3 "," $6 }' "$TMP/ep-o.csv" | sort >"$TMP/meas"
    awk -F, 'NR > 1 { print $1 "," $2 "," $3 }' "$TMP/out" | sort >"$TMP/plan"
    expect_eq "$tag: plan --routing gives every rank's measured bytes" "$(cmp -s "$TMP/meas" "$TMP/plan" && echo same)" same
done 3<<'EOF'
2|1|tiny-moe|megatron-bf16|5|0|1
2|2|tiny-moe|megatron-bf16|5|0|0
4|4|tiny-moe|megatron-bf16|5|0|0
4|2|tiny-moe|megatron-bf16|5|0|1
4|4|tiny-moe-64|megatron-bf16|3|0|1
2|2|tiny-moe-v|megatron-bf16|2|0|1
4|2|tiny-ds|megatron-bf16|5|0|1
2|2|tiny-qwen|megatron-bf16|5|0|0
4|4|tiny-qwen|megatron-bf16|5|0|0
2|1|tiny-moe|te-fp8-current|5|0|1
4|1|tiny-moe-64|te-fp8-current|3|0|1
2|1|tiny-moe|te-fp8|5|0|d
4|1|tiny-ds|te-fp8|3|0|d
2|2|tiny-moe|te-fp8-current|5|0|c
4|4|tiny-moe|te-fp8-current|3|0|c
4|2|tiny-moe|te-fp8-current|3|0|c
4|4|tiny-moe-64|te-fp8-current|2|0|c
2|2|tiny-moe|te-fp8|3|0|d
4|2|tiny-moe|te-fp8|3|0|d
4|4|tiny-moe|te-fp8|3|0|d
2|1|tiny-moe|deepseek-v3|3|0|1
2|2|tiny-moe|deepseek-v3|3|0|s
4|4|tiny-moe|deepseek-v3|2|0|s
4|2|tiny-ds|deepseek-v3|2|0|s
4|4|tiny-moe-64|deepseek-v3|2|0|s
2|2|tiny-mla|megatron-bf16|5|0|1
4|4|tiny-mla|megatron-bf16|5|0|1
2|2|tiny-mtp|megatron-bf16|5|0|0
4|4|tiny-mtp|megatron-bf16|5|0|0
2|2|tiny-mtp|deepseek-v3|3|0|s
2|2|tiny-mtp2|megatron-bf16|3|0|0
2|1|tiny-mtp2|megatron-bf16|3|0|1||--zero 1
2|1|tiny-mtp2|megatron-bf16|3|0|1||--pp 2
2|1|tiny-mtp2|fp32-ref|3|1|1|2
4|2|tiny-mtp2|megatron-bf16|3|0|T|2
2|1|tiny-mtp2-v|megatron-bf16|2|0|T|2
2|1|tiny-moe-kv2|fp32-ref|5|1|1|2
4|2|tiny-moe-kv2|fp32-ref|5|1|1|2
4|4|tiny-moe-kv2|fp32-ref|5|1|1|2
2|1|tiny-moe-kv2|megatron-bf16|3|0|t|2
4|1|tiny-moe-kv2|megatron-bf16|3|0|t|2
2|2|tiny-moe-kv2|megatron-bf16|3|0|t|2
4|2|tiny-moe-kv2|megatron-bf16|3|0|t|2
4|4|tiny-moe-kv2|megatron-bf16|3|0|t|2
2|1|tiny-mla|fp32-ref|4|1|1|2
4|2|tiny-mla|fp32-ref|4|1|1|2
2|1|tiny-mla|megatron-bf16|3|0|T|2
4|2|tiny-mla|megatron-bf16|3|0|T|2
2|1|tiny-mla|te-fp8|3|0|d|2
2|1|tiny-mla|te-fp8-current|3|0|d|2
2|1|tiny-mla-v|megatron-bf16|2|0|T|2
2|1|tiny-mtp|fp32-ref|4|1|1|2
4|2|tiny-mtp|fp32-ref|4|1|1|2
2|1|tiny-mtp|megatron-bf16|3|0|T|2
4|2|tiny-mtp|megatron-bf16|3|0|T|2
2|1|tiny-mtp|te-fp8|3|0|d|2
4|1|tiny-moe-64kv2|megatron-bf16|3|0|t|2
4|4|tiny-moe-64kv2|megatron-bf16|3|0|t|2
2|1|tiny-moe-sh|fp32-ref|4|1|1|2
4|2|tiny-moe-sh|fp32-ref|4|1|1|2
4|2|tiny-moe-sh|megatron-bf16|3|0|T|2
2|1|tiny-ds-kv2|fp32-ref|4|1|f|2
4|2|tiny-ds-kv2|fp32-ref|4|1|f|2
4|2|tiny-ds-kv2|megatron-bf16|3|0|T|2
4|4|tiny-ds-256|fp32-ref|3|1|1|2
4|4|tiny-ds-256|megatron-bf16|2|0|T|2
2|1|tiny-moe-kv2|te-fp8-current|3|0|c|2
4|2|tiny-moe-kv2|te-fp8-current|3|0|c|2
2|1|tiny-moe-kv2|te-fp8|3|0|d|2
4|4|tiny-moe-kv2|te-fp8|3|0|d|2
4|2|tiny-ds-kv2|te-fp8|3|0|d|2
4|4|tiny-moe-64kv2|te-fp8-current|2|0|c|2
4|2|tiny-ds-256|te-fp8-current|2|0|d|2
4|1|tiny-moe-kv2|fp32-ref|5|1|1|2|--pp 2
8|2|tiny-moe-kv2|fp32-ref|3|1|1|2|--pp 2
4|2|tiny-ds-kv2|fp32-ref|4|1|1|2|--pp 2 --first-stage-layers 1
4|2|tiny-ds-kv2|fp32-ref|4|1|1|2|--pp 2 --last-stage-layers 1
4|1|tiny-moe-kv2|megatron-bf16|3|0|t|2|--pp 2
4|2|tiny-ds-kv2|megatron-bf16|3|0|T|2|--pp 2 --last-stage-layers 1
4|2|tiny-moe-kv2|te-fp8|3|0|d|2|--pp 2
4|1|tiny-moe-kv2|te-fp8-current|3|0|c|2|--pp 2
2|1|tiny-moe-kv2|fp32-ref|5|1|1|2|--zero 1
4|2|tiny-ds-kv2|fp32-ref|4|1|1|2|--zero 1
4|1|tiny-moe-kv2|megatron-bf16|3|0|t|2|--zero 1
4|2|tiny-ds-kv2|megatron-bf16|3|0|T|2|--dist-opt
4|2|tiny-moe-kv2|te-fp8|3|0|d|2|--zero 1
4|1|tiny-ds-kv2|te-fp8-current|3|0|d|2|--dist-opt
8|2|tiny-ds-kv2|fp32-ref|3|1|1|2|--pp 2 --zero 1 --first-stage-layers 1
2|1|tiny-mla-b|deepseek-v3|3|0|b|2
4|2|tiny-mla-b|deepseek-v3|2|0|b|2
2|1|tiny-mtp-b|deepseek-v3|3|0|b|2
4|1|tiny-mtp-b|deepseek-v3|2|0|b|2|--pp 2
2|1|tiny-mla-bv|deepseek-v3|2|0|b|2
4|1|tiny-moe-vkv2|megatron-bf16|2|0|t|2|--pp 2 --zero 1
2|1|tiny-moe-kv2|fp32-ref|5|1|1|2|--etp 2
4|1|tiny-moe-kv2|fp32-ref|5|1|1|2|--etp 2
4|2|tiny-moe-kv2|fp32-ref|5|1|1|2|--etp 2
2|1|tiny-moe|fp32-ref|5|1|f||--etp 2
4|2|tiny-moe|fp32-ref|5|1|f||--etp 2
4|2|tiny-ds-kv2|fp32-ref|4|1|f|2|--etp 2
4|2|tiny-ds-256|fp32-ref|3|1|1|2|--etp 2
4|1|tiny-moe-kv2|fp32-ref|3|1|1|2|--pp 2 --etp 2
4|1|tiny-moe-kv2|fp32-ref|5|1|1|2|--zero 1 --etp 2
2|1|tiny-moe-kv2|megatron-bf16|3|0|t|2|--etp 2
4|2|tiny-moe-kv2|megatron-bf16|3|0|t|2|--etp 2
2|1|tiny-moe|megatron-bf16|3|0|t||--etp 2
4|2|tiny-ds-kv2|megatron-bf16|3|0|T|2|--etp 2
4|2|tiny-ds-256|megatron-bf16|2|0|T|2|--etp 2
2|1|tiny-moe-vkv2|megatron-bf16|2|0|t|2|--etp 2
2|1|tiny-moe-v|megatron-bf16|2|0|t||--etp 2
2|1|tiny-ds-256|megatron-bf16|2|0|T||--etp 2
4|2|tiny-mtp|megatron-bf16|3|0|T|2|--etp 2
2|1|tiny-moe-kv2|te-fp8|3|0|d|1|--etp 2
4|1|tiny-moe-kv2|te-fp8|3|0|d|2|--pp 2 --etp 2
4|2|tiny-moe-kv2|te-fp8-current|3|0|c|1|--etp 2
4|2|tiny-ds-256|te-fp8|2|0|d|2|--etp 2
2|1|tiny-mtp|deepseek-v3|2|0|b|1|--etp 2
2|1|tiny-moe|te-fp8|3|0|d||--etp 2
2|1|tiny-moe|deepseek-v3|3|0|b||--etp 2
4|2|tiny-moe-kv2|deepseek-v3|2|0|b|1|--etp 2
4|2|tiny-ds-256|deepseek-v3|2|0|b|1|--etp 2
2|2|tiny-moe|fp32-ref|5|1|1
4|4|tiny-moe|fp32-ref|5|1|1
EOF

# ---- delayed scaling's expert amax group ---------------------------------------------------------------
# te-fp8 over EP ranks: a local expert's amax records are MAX-reduced over its expert-data-parallel group (the
# ranks holding a replica of it) and nothing else (model_ep_amax_begin). Rank 0's --scaling-trace: at np 4
# ep 4 that group is rank 0 alone, so every expert record's next scale is fmax (448 E4M3, 57344 E5M2) over
# the largest amax the rank itself recorded for it so far (TE's max over a 1024-step history; one micro-batch
# a step); at np 4 ep 2 (rank 0 with rank 2) never above that (its peer's amax can only raise the max). The
# DP group's reduction applied to them instead (the planted bug: other experts share the slots) puts 49 of
# rank 0's 72 records off at ep 4.
own_scale() { # TRACE CMP: every expert record's scale_next against fmax / its own max amax so far
    awk -F, -v cmp="$2" 'NR > 1 && $4 ~ /^experts/ && $7 > 0 { k = $3 "," $4 "," $5; if ($7 > h[k]) h[k] = $7
        want = ($6 == "e5m2" ? 57344 : 448) / h[k]; d = ($9 - want) / want; n++
        if (cmp == "eq" && (d > 1e-6 || d < -1e-6)) bad++; if (cmp == "le" && d > 1e-6) bad++ }
        END { print n + 0 "," bad + 0 }' "$1"
}
R="run --catalog $cat --model tiny-moe --mbs 1 --gbs 4 --quiet --recipe te-fp8 --steps 3"
mpi_run 4 "$FP8PLAN" $R --ep 4 --scaling-trace "$TMP/tr4.csv"
expect_rc "te-fp8 np 4 ep 4 with --scaling-trace exits 0" 0
# 2 layers x 2 linears x 2 local experts x 3 records x 3 steps = 72 rows, less those of an expert without rows
r=$(own_scale "$TMP/tr4.csv" eq)
expect_eq "te-fp8 ep 4: no expert record off its own amax (EDP group of one)" "${r#*,}" 0
expect_eq "te-fp8 ep 4: the expert records traced" "$([ "${r%,*}" -gt 60 ] && echo yes)" yes
mpi_run 4 "$FP8PLAN" $R --ep 2 --scaling-trace "$TMP/tr2.csv"
expect_rc "te-fp8 np 4 ep 2 with --scaling-trace exits 0" 0
# and an expert's amax is then the MAX over every token routed to it however the experts are split: at ep 4 its
# one holder sees all 4 ranks' tokens, at ep 2 its two holders see 2 ranks' each and reduce over each other, so
# np 4 ep 2 and np 4 ep 4 cast with the same scales and their losses agree bit for bit (measured over 5 steps;
# the DP group's reduction would mix other experts' amaxes in at ep 2 and not at ep 4)
mpi_run 4 "$FP8PLAN" $R --ep 4 --loss-log "$TMP/l4.csv"
mpi_run 4 "$FP8PLAN" $R --ep 2 --loss-log "$TMP/l2.csv"
within "te-fp8 np 4: ep 2's losses are ep 4's bit for bit" "$TMP/l4.csv" "$TMP/l2.csv" 0 3
r=$(own_scale "$TMP/tr2.csv" le)
expect_eq "te-fp8 ep 2: no expert scale above its own amax's (EDP group of 2)" "${r#*,}" 0
expect_eq "te-fp8 ep 2: the trace names rank 0's 4 experts" \
    "$(grep -c '^1,fwd,0,experts\.fc1\.[0-3],x,' "$TMP/tr2.csv"),$(grep -c '^1,fwd,0,experts\.fc1\.[4-7],' "$TMP/tr2.csv")" "4,0"
# with --etp 2 too (np 4 ep 2 x etp 2: rank 0 holds the first half of experts 0-3's FFN) the records are MAX-reduced
# over the ETP group as well (model_moe_ep_amax.c), so each record's next scale is the whole expert's, as at ep 4:
# step 1's forward records of MoE layer 0 (inputs the same on every layout until the first reduce-scatter) for
# experts 0 and 1 give rank 0 the same next scales at both layouts. Measured: rank 0's own amax of FC2's weight
# shard of expert 0 is 0.0376 where the whole weight's is 0.0410 (448 / 0.0410 = 10,923, the scale both give;
# its shard's own would be 11,915).
mpi_run 4 "$FP8PLAN" $R --ep 2 --etp 2 --scaling-trace "$TMP/tr22.csv"
expect_rc "te-fp8 np 4 ep 2 x etp 2 with --scaling-trace exits 0" 0
nx() { awk -F, '$1 == 1 && $2 == "fwd" && $3 == 0 && $4 ~ /^experts\.fc[12]\.[01]$/ { print $4, $5, $9 }' "$1"; }
expect_eq "te-fp8 ep 2 x etp 2: rank 0's next scales of experts 0, 1 at step 1 are ep 4's (the whole expert's)" \
    "$(nx "$TMP/tr22.csv")" "$(nx "$TMP/tr4.csv")"
expect_eq "te-fp8 ep 2 x etp 2: 8 records compared" "$(nx "$TMP/tr4.csv" | wc -l | tr -d ' ')" 8

# ---- bytes by hand: tiny-moe, dp 4 x ep 2, megatron-bf16, 2 steps ----------------------------------
R="run --catalog $cat --model tiny-moe --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --steps 2"
mpi_run 4 "$FP8PLAN" $R --ep 2
expect_rc "tiny-moe dp 4 x ep 2 exits 0" 0
# A rank's 4 experts: FC1 2 x 224 x 64 + FC2 64 x 224 = 43,008 each, 2 layers: 344,064 elements, BF16
# 688,128 B, FP32 master 1,376,256 B (EP 1 would hold 8: twice that)
expect_line "4 of 8 experts a rank: BF16 weights" "  weight_expert +688128 +688128 +688128 +4/4 +exact"
expect_line "4 of 8 experts a rank: FP32 master" "  master_expert +1376256 +1376256 +1376256 +4/4 +exact"
# their FP32 gradients all-reduced over the EDP group of 2 (ranks 0, 2 and 1, 3): S = 1,376,256 B, a rank
# sends S x 2(2-1)/2 = S; the router (8 x 64), norms and attention over all 4 DP ranks
expect_line "expert gradients over the EDP group" "  edp_grad_allreduce +1376256 +1376256 +1376256 +4/4 +exact"
# the counts, per dispatch (2 MoE layers x 1 micro-batch a rank x 2 steps = 4): 8 int32 (4 to the peer) and
# 5 agreements of 2 uint64 (one to the peer): payload 32 + 80 = 112, sent 16 + 40 = 56; over 4: 448, 224
# (any routing); the uniform plan's dispatch: 32 tokens x top-2 x 1/2 leave x 128 B = 4,096 B a call: 16,384
expect_line "rank 0's counts as planned, by hand" "     0 ep_counts +224 +224 +448 +448 +224  exact"
expect_line "rank 3's dispatch: the uniform plan's 16,384 beside" \
    "     3 ep_dispatch_fwd +[0-9]+ +[0-9]+ +32768 +32768 +16384  exact"
# the buffers outside the arena, for ep x 64 = 128 rows on the experts' side, BF16: the rows in source order,
# the outputs and d(inputs) 3 x 128 x 64 x 2 = 49,152, d(activation) 128 x 224 x 2 = 57,344, d(FC1 out)
# 128 x 448 x 2 = 114,688; per MoE layer the saved inputs 16,384, FC1 out 114,688 and FC2 in 57,344 and 4 int32
# counts: 188,432, x 2 layers: 221,184 + 376,864 = 598,048 (the combined outputs kept at the token copies, 64 x 64
# x 2 = 8,192 a layer, are the arena's act_moe, as the plan of this executor's stack counts them)
expect_out "the EP buffers outside the arena, by hand" "each rank also holds 598048 B of expert-parallel buffers"

# ---- refused before any work, nothing written --------------------------------------------------------
O="-o $TMP/no.csv --loss-log $TMP/no_loss.csv --routing-log $TMP/no_r.csv"
mpi_run 2 "$FP8PLAN" $R --ep 4 $O
expect_rc "--ep 4 on 2 ranks exits 64" 64
expect_err "--ep 4 on 2 ranks: the reason" "ep*etp = 4 must divide tp*cp*dp = 2"
mpi_run 3 "$FP8PLAN" $R --gbs 6 --ep 2 $O
expect_rc "--ep 2 on 3 ranks exits 64" 64
expect_err "--ep 2 on 3 ranks: the reason" "ep*etp = 2 must divide tp*cp*dp = 3"
mpi_run 3 "$FP8PLAN" $R --gbs 6 --ep 3 $O
expect_rc "--ep 3 with 8 experts exits 64" 64
expect_err "--ep 3: the experts" "tiny-moe's 8 experts must be divisible by ep"
mpi_run 4 "$FP8PLAN" $R --ep 2 --zero 2 $O # --zero 1 and --dist-opt run: mpi_zero.sh
expect_rc "--ep 2 --zero 2 exits 69" 69
expect_err "--zero 2 with experts: the reason" "--zero 2: the executor shards the optimizer states only"
# (--save/--resume with --ep, with sharded states and with --tp: tests/cli/mpi_resume.sh; sharded states over
# pipeline stages: mpi_zero.sh)
# (experts at --tp 2 over stages and with sharded states run: the table's rows with a last column)
# expert tensor parallelism (Megatron-Core's --expert-tensor-parallel-size) runs in FP32, BF16 and FP8 (the
# table's --etp rows; its checkpoints: mpi_resume.sh); a layout the planner rejects gets its reason (64)
T="run --catalog $cat --model tiny-moe-kv2 --mbs 1 --gbs 4 --quiet --steps 2 --tp 2"
mpi_run 2 "$FP8PLAN" $T --recipe megatron-bf16 --ep 2 --etp 2 $O
expect_rc "--ep 2 --etp 2 on 2 ranks exits 64" 64
expect_err "--ep 2 --etp 2 on 2 ranks: the reason" "ep*etp = 4 must divide tp*cp*dp = 2"
run $T --recipe megatron-bf16 --etp 0 $O
expect_rc "--etp 0 exits 64" 64
expect_err "--etp 0: the flag named" "--etp: '0' must be at least 1"
expect_eq "refusals wrote nothing" "$(ls "$TMP"/no* 2>/dev/null | wc -l)" 0
# the last row's log: 4 ranks, 5 steps of 2 MoE layers, 8 experts
P="plan --catalog $cat --model tiny-moe --gpu h100-sxm --mbs 1 --gbs 4 --recipe megatron-bf16"
run $P --dp 2 --ep 2 --routing "$TMP/ep_r.csv"
expect_rc "plan --routing: a log of other ranks exits 64" 64
expect_err "plan --routing: the ranks" "4 ranks x 8 experts given; the plan has tp 1 x dp 2 and 8 experts"
sed 3d "$TMP/ep_r.csv" >"$TMP/short.csv"
run $P --dp 4 --ep 2 --routing "$TMP/short.csv"
expect_rc "plan --routing: a log missing a row exits 65" 65
expect_err "plan --routing: the count" "319 rows for 5 steps x 2 layers x 4 ranks x 8 experts (320)"
sed 's/^1,0,0,1,/1,0,0,0,/' "$TMP/ep_r.csv" >"$TMP/dup.csv"
run $P --dp 4 --ep 2 --routing "$TMP/dup.csv"
expect_rc "plan --routing: a row twice exits 65" 65
expect_err "plan --routing: the row" "row 3: step 1, layer 0, rank 0, expert 0 appears twice"
sed 's/^2,1,3,7,[0-9]*$/2,1,3,7,x/' "$TMP/ep_r.csv" >"$TMP/bad.csv"
run $P --dp 4 --ep 2 --routing "$TMP/bad.csv"
expect_rc "plan --routing: a bad number exits 65" 65
expect_err "plan --routing: the cell" "column token_copies: 'x'"
run $P --dp 4 --ep 1 --routing "$TMP/one_r.csv"
expect_rc "plan --routing at ep 1 exits 64" 64
expect_err "plan --routing at ep 1: the reason" "measured routing: the plan must be of a model with experts at ep > 1"

# ---- DeepSeek-V3's own row with its recipe (the README's run, at np 2 ep 2 and one step): latent attention at the
# row's own widths (q latent 1,536, kv latent 512, heads of 192 and values of 128), MTP, the FP8 dispatch. Every term
# within the plan, the exact ones byte for byte. Rank 0's transient by hand (docs/executor-moe.md): the one-rank
# BF16 set 526,080 (run_moe.sh) less its BF16 dispatch and combine 16,384, + the FP8 dispatch with its 1x128 scales
# and the BF16 combine 64 x 68 + 64 x 64 x 2 = 12,544, + the widest linear output's FP8 gradient, q_down's 32 x
# 1,536, in both layouts 98,304 and its tiles (32 x 12 + 1,536 x 1) x 4 = 7,680: 628,224 planned and held (the
# sigmoid router keeps no fp32 d(scores) here: planner/plan_moe_mem.c)
mpi_run 2 "$FP8PLAN" run --model deepseek-v3 --recipe deepseek-v3 --ep 2 --layers 2 --hidden 64 --heads 4 --ffn 128 \
    --seq 32 --vocab 256 --experts 8 --topk 2 --expert-ffn 32 --dense-layers 1 --mbs 1 --gbs 2 --steps 1 --quiet \
    -o "$TMP/ds3.csv"
expect_rc "deepseek-v3 shrunk, its recipe, np 2 ep 2: exit 0" 0
expect_out "deepseek-v3 shrunk np 2 ep 2: every term within the plan" \
    "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_eq "deepseek-v3 shrunk np 2 ep 2: rank 0's transient by hand, planned and measured" \
    "$(grep '^0,memory,transient,' "$TMP/ds3.csv" | cut -d, -f5,6)" "628224,628224"

# ---- the same at two MTP depths (--mtp-layers 2; docs/executor-moe.md "Deeper multi-token prediction"), one
# step: every term within the plan, the exact ones byte for byte, and step 1's loss and both depths' losses one
# rank's bit for bit (the 's' rows). weight_gemm by hand: the one-depth 5,660,672 weights + a depth's block
# (latent attention 1,871,872 + its shared expert 6,144) + its eh_proj 64 x 128 = 8,192: 7,546,880 x 2 B =
# 15,093,760; rank 0's transient the one-depth run's (the depths run one after another in the same buffers)
D="run --model deepseek-v3 --recipe deepseek-v3 --mtp-layers 2 --layers 2 --hidden 64 --heads 4 --ffn 128 --seq 32
    --vocab 256 --experts 8 --topk 2 --expert-ffn 32 --dense-layers 1 --mbs 1 --gbs 2 --steps 1 --quiet"
run $D --loss-log "$TMP/dsd1.csv"
expect_rc "deepseek-v3 shrunk, 2 MTP depths, one rank: exit 0" 0
mpi_run 2 "$FP8PLAN" $D --ep 2 --loss-log "$TMP/dsd2.csv" -o "$TMP/dsd2o.csv"
expect_rc "deepseek-v3 shrunk, 2 MTP depths, np 2 ep 2: exit 0" 0
expect_out "deepseek-v3 shrunk, 2 MTP depths, np 2 ep 2: every term within the plan" \
    "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_out "deepseek-v3 shrunk, 2 MTP depths, np 2 ep 2: the all-to-alls as planned for the measured routing" \
    "every rank sent the plan's expert all-to-all bytes for the measured routing, byte for byte"
expect_eq "deepseek-v3 shrunk, 2 MTP depths, np 2 ep 2: weight_gemm by hand, planned and measured" \
    "$(grep '^0,memory,weight_gemm,' "$TMP/dsd2o.csv" | cut -d, -f5,6)" "15093760,15093760"
expect_eq "deepseek-v3 shrunk, 2 MTP depths, np 2 ep 2: rank 0's transient, planned and measured" \
    "$(grep '^0,memory,transient,' "$TMP/dsd2o.csv" | cut -d, -f5,6)" "628224,628224"
expect_eq "deepseek-v3 shrunk, 2 MTP depths, np 2 ep 2: step 1's losses one rank's bit for bit" \
    "$(sed -n 2p "$TMP/dsd2.csv")" "$(sed -n 2p "$TMP/dsd1.csv")"
expect_eq "deepseek-v3 shrunk, 2 MTP depths: the loss log's columns" "$(head -1 "$TMP/dsd2.csv")" \
    "step,loss,mtp_loss_1,mtp_loss_2"

# ---- DeepSeek-V3's own row at tp 2 (megatron-bf16, 2 steps): latent attention at the row's widths and MTP with
# tensor parallelism at the real vocabulary (129,280 tokens, 64,640 rows a rank); every term the plan's, both
# losses within 1e-4 of one rank's at step 1 (measured 5.1e-6 and 1.2e-5)
D="run --model deepseek-v3 --recipe megatron-bf16 --layers 2 --hidden 64 --heads 4 --ffn 128 --seq 32 --experts 8
    --topk 2 --expert-ffn 32 --dense-layers 1 --mbs 1 --gbs 4 --steps 2 --quiet"
run $D --loss-log "$TMP/ds1.csv"
expect_rc "deepseek-v3 shrunk, real vocabulary, one rank: exit 0" 0
mpi_run 2 "$FP8PLAN" $D --tp 2 --loss-log "$TMP/ds2.csv"
expect_rc "deepseek-v3 shrunk, real vocabulary, np 2 tp 2: exit 0" 0
expect_out "deepseek-v3 shrunk np 2 tp 2: every term within the plan" \
    "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_out "deepseek-v3 shrunk np 2 tp 2: every collective as planned" "every rank sent the plan's bytes, byte for byte"
r=$(awk -F, 'NR == FNR { if (FNR == 2) { a = $2; b = $3 } next } FNR == 2 { d = ($2 - a) / a; e = ($3 - b) / b
    if (d < 0) d = -d; if (e < 0) e = -e; print (d <= 1e-4 && e <= 1e-4) ? "ok" : "off " d " " e }' "$TMP/ds1.csv" "$TMP/ds2.csv")
expect_eq "deepseek-v3 shrunk np 2 tp 2: step 1's loss and MTP loss within 1e-4 of one rank's" "$r" ok

# ---- why the FP8 recipes part from one rank over EP ranks (docs/executor-moe.md) ---------------------------
# One micro-batch a rank (--mbs 1 --gbs 2 at np 2 ep 2): an expert's tensor on its rank holds the rows of both
# ranks' micro-batches, sorted source by source, which is the order one rank gives the same two sequences as ONE
# micro-batch (--mbs 2 --gbs 2). BF16: the EP run is the one rank's with the same two micro-batches (--mbs 1),
# 6 steps bit for bit, routing included (at this size: every expert's wgrad sums the rows in the same order).
# te-fp8 (delayed scaling): step 1 casts at the initial scales on every rank, so the EP run's step 1 — its loss
# and every layer's routing — is one rank's with both sequences in one micro-batch, bit for bit: the experts'
# dispatch, per-expert casts and grouped GEMMs change no bit; what parts the runs is only which rows make a
# micro-batch — one rank with two micro-batches casts the second at the scales the first's amaxes updated
# (Transformer Engine updates after every forward and backward), the EP ranks cast theirs at once — and, from
# step 2, the dense wgrad's association (two ranks' sums all-reduced, as data parallelism: the BF16 run with one
# micro-batch of both sequences parts from the EP run at step 2 too). te-fp8-current cannot match either one-rank
# run: its experts' scale is the amax over both sources' rows (one rank: one micro-batch's), its dense tensors'
# each rank's own (current scaling's amax is reduced over TP only) — the 2^-3 bound of the table above.
D="run --catalog $cat --model tiny-moe --quiet --steps 6"
run $D --recipe megatron-bf16 --mbs 1 --gbs 2 --loss-log "$TMP/one.csv" --routing-log "$TMP/one_r.csv"
mpi_run 2 "$FP8PLAN" $D --recipe megatron-bf16 --mbs 1 --gbs 2 --ep 2 --loss-log "$TMP/ep.csv" --routing-log "$TMP/ep_r.csv"
expect_rc "bf16 np 2 ep 2, one micro-batch a rank: exit 0" 0
within "bf16 ep 2 = one rank with the same micro-batches, 6 steps bit for bit" "$TMP/one.csv" "$TMP/ep.csv" 0 6
same_routing "bf16 ep 2: one rank's routing, every step" "$TMP/one_r.csv" "$TMP/ep_r.csv" 6
run $D --recipe te-fp8 --mbs 2 --gbs 2 --loss-log "$TMP/one.csv" --routing-log "$TMP/one_r.csv"
mpi_run 2 "$FP8PLAN" $D --recipe te-fp8 --mbs 1 --gbs 2 --ep 2 --loss-log "$TMP/ep.csv" --routing-log "$TMP/ep_r.csv"
expect_rc "te-fp8 np 2 ep 2, one micro-batch a rank: exit 0" 0
expect_eq "te-fp8 ep 2: step 1's loss is one rank's with both sequences in one micro-batch, bit for bit" \
    "$(grep '^1,' "$TMP/ep.csv")" "$(grep '^1,' "$TMP/one.csv")"
same_routing "te-fp8 ep 2: step 1's routing, every layer, as that one rank's" "$TMP/one_r.csv" "$TMP/ep_r.csv" 1
within "te-fp8 ep 2: within 2^-3 of it over 6 steps" "$TMP/one.csv" "$TMP/ep.csv" 0.125 6

# ---- the default OpenBLAS kernels (see the head: shape-dependent rounding on some cores): BF16 at np 4 ep 2
# and np 2 ep 2 within the issue's 1e-4 of one rank over 5 steps, step 1's routing one rank's (the weights are
# one rank's until the first update; a last-bit difference may flip a near tie later, so later steps' routing
# is not compared). Measured on the Zen 3 machine: 2.0e-6 at np 4 ep 2 (step 2: 5.45438337 against one rank's
# 5.45439386).
for ly in "4 2 tiny-moe" "2 2 tiny-moe-v"; do
    read -r dnp dep dmodel <<EOF_LY
$ly
EOF_LY
    DR="run --catalog $cat --model $dmodel --mbs 1 --gbs 4 --quiet --recipe megatron-bf16 --steps 5"
    env -u OPENBLAS_CORETYPE "$FP8PLAN" $DR --loss-log "$TMP/one.csv" --routing-log "$TMP/one_r.csv" >/dev/null 2>&1
    expect_eq "default kernels, $dmodel one rank: exit 0" $? 0
    mpi_run "$dnp" env -u OPENBLAS_CORETYPE "$FP8PLAN" $DR --ep "$dep" --loss-log "$TMP/ep.csv" --routing-log "$TMP/ep_r.csv"
    expect_rc "default kernels, $dmodel np $dnp ep $dep: exit 0" 0
    within "default kernels, $dmodel np $dnp ep $dep: within 1e-4 of one rank over 5 steps" "$TMP/one.csv" "$TMP/ep.csv" 1e-4 5
    same_routing "default kernels, $dmodel np $dnp ep $dep: step 1's routing one rank's" "$TMP/one_r.csv" "$TMP/ep_r.csv" 1
done

# ---- a NaN or Inf in one rank's partial sums of the ETP reduce-scatter (FP8PLAN_FAULT_ETP=R[:inf], a test hook
# that puts it in the first row of the ETP group's buffer, rank 0's rows): the reduction carries it to the rows'
# owner, whatever rank it came from, so the loss is not finite and every rank stops at step 1 (65), nothing
# written. Measured: both ranks print "the loss is nan" at np 2 (rank 0 alone when it stops first and ends the
# others).
# The FP8 recipes alike at np 4 ep 2 x etp 2 (the partial sums BF16 under every recipe; te-fp8's expert amax
# records then MAX-reduced over the ETP group as well, model_moe_ep_amax.c, and a NaN record kept by the MAX):
# the rank's fault from ETP rank 1 of group {2, 3}, and from ETP rank 0 of group {0, 1}.
T="run --catalog $cat --model tiny-moe-kv2 --mbs 1 --gbs 4 --quiet --steps 2 --tp 2 --recipe megatron-bf16 --etp 2"
for f in 0 1 1:inf; do
    FP8PLAN_FAULT_ETP=$f mpi_run 2 "$FP8PLAN" $T $O
    expect_rc "ETP reduce-scatter with a non-finite partial sum from rank $f: exit 65" 65
    expect_err "ETP non-finite from rank $f: the loss named" "step 1: the loss is nan (training diverged)"
    expect_eq "ETP non-finite from rank $f: nothing written" "$(ls "$TMP"/no* 2>/dev/null | wc -l)" 0
done
T="run --catalog $cat --model tiny-moe-kv2 --mbs 1 --gbs 4 --quiet --steps 2 --ep 2 --etp 2"
for f in te-fp8,3 te-fp8-current,0:inf deepseek-v3,3:inf; do
    FP8PLAN_FAULT_ETP=${f#*,} mpi_run 4 "$FP8PLAN" $T --recipe "${f%,*}" $O
    expect_rc "${f%,*} ep 2 x etp 2, a non-finite partial sum from rank ${f#*,}: exit 65" 65
    expect_err "${f%,*} ETP non-finite from rank ${f#*,}: the loss named" "step 1: the loss is nan (training diverged)"
    expect_eq "${f%,*} ETP non-finite from rank ${f#*,}: nothing written" "$(ls "$TMP"/no* 2>/dev/null | wc -l)" 0
done

# ---- a rank whose counts disagree with its peers: every rank stops, named, no hang, nothing written -----
FP8PLAN_FAULT_EP_COUNTS=2 mpi_run 4 "$FP8PLAN" $R --ep 2 $O
expect_rc "rank 2's counts disagree: exit 65" 65
expect_err "the group and the collective" "expert parallelism, ep_dispatch_fwd (EP group of ranks 2..3; its rank j is rank 2 + j)"
expect_err "the rank and the reason" "rank 1 expects"
expect_err "every other rank stopped at the same point" "expert parallelism: rank 2's dispatch failed (its message says why); every rank stops"
expect_eq "the failed run wrote nothing" "$(ls "$TMP"/no* 2>/dev/null | wc -l)" 0
finish
