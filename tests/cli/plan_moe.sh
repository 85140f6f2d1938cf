# tests/cli/plan_moe.sh — mixture-of-experts planning from the command line: the DeepSeek-V3 run as its
# report describes it, the MoE options and their bad values, compare and sweep with experts.
. "$FP8PLAN_ROOT/tests/lib.sh"

DS="--model deepseek-v3 --gpu h800 --recipe deepseek-v3 --pp 16 --dp 128 --ep 64 --zero 1 --gbs 15360
    --first-stage-layers 4 --last-stage-layers 1 --dualpipe --ep-comm-sms 20 --recompute-modules mla_up_proj,moe_act"

run plan $DS
expect_rc "deepseek-v3 plan exits 0" 0
expect_out "itemizes the expert weights" "weight_expert"
expect_out "itemizes the expert states" "adam_v_expert"
expect_out "itemizes the MoE activations" "act_moe"
expect_out "lists the FP8 dispatch all-to-all" "ep_dispatch_fwd         ep     all-to-all      e4m3      64  inter"
expect_out "lists the BF16 combine all-to-all" "ep_combine_fwd          ep     all-to-all      bf16      64  inter"
expect_out "lists the expert-DP gradients" "edp_grad_reducescatter"
expect_out "states the expert layout" "experts: 256 routed (top 8) + 1 shared per MoE layer, 4 on this GPU; EP 64 x ETP 1, expert-DP 2"
tr -s '\n ' '  ' <"$TMP/out" >"$TMP/joined" # the MoE summary wraps at 100 columns
expect_eq "states the dtypes and DualPipe" \
    "$(grep -o 'all-to-all dispatch e4m3, combine bf16; EP overlap 1.00 (DualPipe); 20 SMs' "$TMP/joined")" \
    "all-to-all dispatch e4m3, combine bf16; EP overlap 1.00 (DualPipe); 20 SMs"
expect_out "itemizes the expert GEMM time" "expert_gemm"
expect_out "itemizes the exposed all-to-all time" "ep_comm_exposed"
expect_out "sums the expert traffic" "expert all-to-alls and expert TP per step:"

run plan $DS --format csv
expect_rc "deepseek-v3 csv exits 0" 0
expect_out "csv carries ep, etp, active parameters" ",64,1,37552282624," # test_moe_params: no bias values

run plan $DS --view collectives --format csv
# 4096 tokens x (3.5 network + 7 NVLink copies) x (7168 + 56 x 4) B = 317,915,136 B per call
expect_out "dispatch bytes per call" "ep_dispatch_fwd,ep,all-to-all,e4m3,64,inter,242221056,317915136,"

# the README's command with the choices the report leaves open (--unknown): an uncertain verdict, not OOM.
# attn_out alone: rank 0 holds 66 layer-micro-batches (stage 0: 4 layers x 16 in flight; stage 15: 1 layer + the
# MTP layer, 1 each), each with a BF16 attention output of 4096 tokens x 128 heads x 128 x 2 B = 134,217,728:
# 66 x 134,217,728 = 8,858,370,048 B. fp8_weight_cache alone: the copies 2,546,597,888 x 2 + 1,056,964,608 =
# 6,150,160,384 B and their 128x128 block scales 1,502,848 B = 6,151,663,232 (the cast transient stays below the
# loss's). The limit 0.95 x 85,520,809,984 = 81,244,769,484 B (81.24 GB); the plan needs 102.71 GB: 21.47 GB over.
# (102.59 GB before the MTP depth on stage 15 counted what Megatron-Core's MultiTokenPredictionLayer saves beside
# its layer: enorm's input 4096 x 7,168 x 2 = 58,720,256, the enorm and hnorm rstd 2 x 4096 x 4 = 32,768, eh_proj's
# E4M3 input 4096 x 14,336 = 58,720,256 and its 1x128 tiles 14,336 x 32 x 4 = 1,835,008: 119,308,288 B more, as the
# executor holds them, exec/model/model_mtp.c. The low end, on stage 1, does not move; each saving's figure is
# taken from the top, so dense_act's and all three's grow by the same 0.12 GB.)
# Latent attention's backward rows in the MoE working set, a layer: 4096 tokens x (kv_lora 512 + rope 64 + the
# widest up-projection output, kv_up's 128 x (128 + 128) = 32,768, + 2 latents of 1,536) = 36,416 x 2 B =
# 298,319,872 B; and the FP8 dispatch buffer's scales, 32,768 rows x 56 x 4 B = 7,340,032: 305,659,904 B. Rank
# 0's transient (the loss's) does not move; on stage 1 (MoE layers only) the MoE working set grows by it, which
# dense_act's saving loses whole (9,039,106,436 - 305,659,904 = 8,733,446,532, and + 119,308,288 for the MTP depth
# above = 8,852,754,820); the low end moves by it and the
# stack's 5 % allocator allowance on it, 320,942,899: 80,772,823,340 to 81,093,766,240 B (rounding as printed);
# fp8_weight_cache's saving from 6.15 to 5.98 GB as the planner prints it (not worked by hand).
# The attention output's gradient in dX's buffer of the MoE working set (the output projection's input gradient,
# 4096 tokens x 128 heads x v_head_dim 128, wider than dX's 7,168): 4096 x (16,384 - 7,168) x 2 = 75,497,472 B more
# on stage 1; rank 0's transient (the loss's) does not move, dense_act's and fp8_weight_cache's savings lose it
# (8,852,754,820 - 75,497,472 = 8,777,257,348; 5,977,906,816 - 75,497,472 = 5,902,409,344) and the low end gains it
# with the 5 % allowance, 79,272,345 B: 81,093,766,240 + 79,272,345 = 81,173,038,585 (81.17 GB, still under 81.24)
# Megatron-Core's fused token permutation (the megatron-core stack's permute_fusion, plan_moe_act.c routed_act)
# saves Transformer Engine's int32 row_id_map [4096 tokens, 2 x 256 + 1] = 8,404,992 B a MoE layer and micro-batch
# beside the rows' weights and chunk-sort maps 32,768 x 12 (the 12 B a row counted before): rank 0 holds 18 of them,
# + 151,289,856 B (102,710,555,072 -> 102,861,844,928); stage 1 68, + 571,539,456 x 1.05 = 600,116,429 B on the low
# end (81,173,034,393 -> 81,773,150,822), now over the 81.24 GB limit: OVER LIMIT (under capacity), not UNCERTAIN;
# dense_act's saving, taken from the top, 50 x 8,404,992 = 420,249,600 less (8,777,259,968 -> 8,357,010,368).
# DeepSeek-V3 did not train on Megatron-Core: what its own framework's permutation keeps is not published, so the
# command leaves it open too (--unknown routing_map: two int32 maps a row, 32,768 x 8 B, which the fused chunk
# sorts keep already at 4 local experts, so the saving is the row_id_map alone): rank 0 18 x 8,404,992 =
# 151,289,856 B (0.15 GB); with it the low end is stage 1's as before the map, 81,173,034,393 B (81.17 GB, under
# 81.24): UNCERTAIN, and the savings must take 102.86 - 81.24 = 21.62 GB off
run plan $DS,layernorm --main-grad recipe --unknown fp8_weight_cache,attn_out,dense_act,routing_map
expect_rc "README command with --unknown exits 0" 0
expect_line "the verdict is uncertain, with the band" \
    "verdict: UNCERTAIN — 81\.17 to 102\.86 GB of 85\.52 GB \(94\.9 to 120\.3 %; the limit is 95 %, 81\.24 GB\)"
expect_out "... and what must hold" "it fits if the open savings that hold take at least 21.62 GB off the 102.86 GB"
expect_line "routing_map's saving" "  routing_map +0\.15  .*"
expect_line "fp8_weight_cache's saving" "  fp8_weight_cache +5\.90  .*"
expect_line "attn_out's saving" "  attn_out +8\.86  .*"
expect_line "dense_act's saving" "  dense_act +8\.36  .*"
expect_line "the low end and its stage" "  all of them +21\.69  the low end: 81\.17 GB, on PP stage 1"
if grep -q "does not fit" "$TMP/out"; then fail "no OOM advice for an uncertain plan"; else pass "no OOM advice for an uncertain plan"; fi
run plan $DS,layernorm --main-grad recipe --unknown fp8_weight_cache,attn_out,dense_act,routing_map --format csv --view terms
expect_out "terms: attn_out's row" "unknown_attn_out,unknown,-,0,8858370048,"
# A sigmoid router's bias became the FP32 buffer router_bias (no weight, gradient or Adam state): the figures
# below moved with it, as the planner prints them — rank 0 (stage 0's MoE layer, stage 15's and the MTP depth's:
# 3 x 256 values) loses BF16 weights 1,536 B, FP32 gradients 3,072 B and the FP32 master, m and v shards 3 x 12 B
# and gains 3 x 256 x 4 = 3,072 B: 1,572 B less (102,710,556,644 -> 102,710,555,072); stage 1 (with stage 14:
# 8 MoE layers) 4,384 B less in its states, and with it the low end (81,173,038,585 -> 81,173,034,393) and
# dense_act's saving (8,777,257,348 -> 8,777,259,968)
expect_out "terms: dense_act's row" "unknown_dense_act,unknown,-,0,8357010368,"
expect_out "terms: routing_map's row (18 x 4096 x 513 x 4 B)" "unknown_routing_map,unknown,-,0,151289856,"
expect_out "terms: fp8_weight_cache's row" "unknown_fp8_weight_cache,unknown,-,0,5902409344,"
expect_out "terms: the low end (stage 1 as before the row_id_map, above)" "low_total,unknown,-,0,81173034393,"
run plan $DS,layernorm --main-grad recipe --unknown attn_out --format csv
expect_out "summary: the appended columns" ",unknown,low_bytes,verdict,fp8_weight_cache_saving_bytes,attn_out_saving_bytes,dense_act_saving_bytes"
# attn_out alone: 102,861,844,928 - 8,858,370,048 = 94,003,474,880 B, still above the 85.52 GB: OOM at both ends.
# (102,710,555,072 B before the fused permutation's row_id_map: above.)
# (102,710,556,644 B before a sigmoid router's bias became a buffer: above.)
# (102,591,248,356 B before the MTP depth's saved input above: + 119,308,288.)
# (The total was 102,588,815,332 B before the routed experts' saved FP8 inputs counted their 1x128 tiles per
# expert: 4 local experts of 32,768 rows hold up to 4 + floor(32,764 / 128) = 259 tiles a column, 3 more than
# ceil(32,768 / 128) = 256; with moe_act FC1's input (7,168 columns) and output (2 x 2,048) are saved: 3 x 11,264
# x 4 B = 135,168 B a MoE layer and micro-batch, x 18 on rank 0 (stage 0's MoE layer x 16 in flight, stage 15's
# layer and MTP layer x 1) = 2,433,024 B. The low end on stage 1 and dense_act's saving move with it, with the
# routed experts' dY tiles in the MoE transient and with FC2's FP8 output gradient, (rows, 7,168) in both layouts
# where FC1's (rows, 2 x 2,048) was counted: 2 x 32,768 x 3,072 B = 201,326,592 B more in stage 1's MoE working
# set; as the planner prints them.)
expect_out "summary: attn_out alone leaves the plan above capacity: OOM" ",attn_out,94003474880,OOM,0,8858370048,0"
run plan $DS,layernorm --main-grad recipe
expect_line "without --unknown the verdict stays OOM" "verdict: OOM — 102\.86 GB of 85\.52 GB \(120\.3 %; the limit is 95 %, 81\.24 GB\)"

# a dense model lists no expert rows in its text report
run plan --model llama3-8b --gpu h100-sxm --recipe te-fp8 --dp 8
expect_rc "dense plan exits 0" 0
if grep -q "expert" "$TMP/out"; then fail "a dense plan names no expert term"; else pass "a dense plan names no expert term"; fi

# compare lists the EP traffic for MoE models
run compare --model mixtral-8x7b --gpu h100-sxm --recipes te-fp8,te-fp8-current --dp 8 --ep 8 --seq 4096 --dist-opt
expect_rc "compare with experts exits 0" 0
expect_out "compare shows ep_comm" "ep_comm"

# sweep searches the expert layout
run sweep --model mixtral-8x7b --gpu h100-sxm --gpus 16 --recipes te-fp8 --seq 4096 --top 3
expect_rc "sweep with experts exits 0" 0
expect_out "sweep shows ep/etp" "ep/etp"

# --recompute-modules: named in the layout line, and each drops what it recomputes (test_oracle_moe.c by hand)
run plan --model deepseek-v3 --gpu h800 --recipe deepseek-v3 --pp 16 --dp 128 --ep 64 --zero 1 --gbs 15360 \
    --first-stage-layers 4 --last-stage-layers 1 --dualpipe --recompute-modules moe,mla_up_proj,layernorm
expect_rc "plan with recompute modules exits 0" 0
expect_out "the layout line names the modules, in Megatron's spelling" "recompute none + modules mla_up_proj,layernorm,moe"

# --overlap-ep sets the expert all-to-alls' overlap and nothing else: megatron-lm's TP overlap stays its 0 (a flag
# shared with the optional TP overlap would give its tp_overlap_on, 1)
run plan --model mixtral-8x7b --gpu h100-sxm --recipe te-fp8 --seq 4096 --dp 4 --ep 4 --stack megatron-lm --overlap-ep 0.5
expect_rc "--overlap-ep with a stack exits 0" 0
expect_out "--overlap-ep leaves the stack's TP overlap as it is" "hides them): TP 0.00,"

# ---- bad input ----
bad() { # name expected-rc expected-stderr args...
    n=$1 code=$2 msg=$3
    shift 3
    run "$@"
    expect_rc "$n: exit $code" "$code"
    expect_err "$n: message" "$msg"
    expect_no_out "$n: no plan printed"
}
M="--model mixtral-8x7b --gpu h100-sxm --recipe te-fp8 --seq 4096"
# --etp left out: the stack's default (stacks.csv expert_tp), Megatron-Core's TP size, torchtitan's 1
for c in "megatron-core||EP 8 x ETP 2, expert-DP 1" "megatron-lm|--sp|EP 8 x ETP 2, expert-DP 1" \
    "torchtitan||EP 8 x ETP 1, expert-DP 2" "megatron-core|--etp 1|EP 8 x ETP 1, expert-DP 2"; do
    st=${c%%|*} rest=${c#*|}
    given=${rest%%|*} want=${rest#*|}
    run plan $M --tp 2 --dp 8 --ep 8 --stack "$st" $given
    expect_rc "default etp on $st $given: exit 0" 0
    expect_out "... $want" "$want"
done
bad "ep on a dense model" 64 "--ep 2 --etp 1: llama3-8b has no experts" plan --model llama3-8b --gpu h100-sxm --recipe bf16 --dp 2 --ep 2
bad "ep not dividing the experts" 64 "mixtral-8x7b's 8 experts must be divisible by ep" plan $M --dp 6 --ep 3
bad "ep beyond the stage's ranks" 64 "ep*etp = 8 must divide tp*cp*dp = 4" plan $M --dp 4 --ep 8
bad "ep 0" 64 "--ep: '0' must be at least 1" plan $M --dp 4 --ep 0
bad "imbalance below 1" 64 "--moe-imbalance: '0.5' must be in [1, 64]" plan $M --dp 4 --ep 4 --moe-imbalance 0.5
bad "imbalance nan" 64 "--moe-imbalance" plan $M --dp 4 --ep 4 --moe-imbalance nan
bad "capacity negative" 64 "--moe-capacity: '-1' must be in [0, 64]" plan $M --dp 4 --ep 4 --moe-capacity -1
bad "overlap-ep above 1" 64 "--overlap-ep" plan $M --dp 4 --ep 4 --overlap-ep 1.5
bad "unknown recompute module" 64 "--recompute-modules: 'attn' is not a module the planner knows (known: mla_up_proj,moe_act,layernorm,core_attn,mlp,moe,shared_experts, or none)" plan $M --dp 4 --ep 4 --recompute-modules attn
bad "empty recompute module" 64 "--recompute-modules 'moe,': an empty module name" plan $M --dp 4 --ep 4 --recompute-modules moe,
bad "mlp recompute on a model without dense layers" 64 "--recompute-modules mlp: qwen3-30b-a3b has no dense FFN layers" plan --model qwen3-30b-a3b --gpu h100-sxm --recipe te-fp8 --dp 8 --ep 8 --recompute-modules mlp
bad "shared-expert recompute without shared experts" 64 "--recompute-modules shared_experts: mixtral-8x7b has no shared experts" plan $M --dp 4 --ep 4 --recompute-modules shared_experts
bad "layernorm recompute on a dense model" 64 "--recompute-modules layernorm: modelled for mixture-of-experts" plan --model llama3-8b --gpu h100-sxm --recipe bf16 --recompute-modules layernorm
bad "MLA recompute without MLA" 64 "mixtral-8x7b has no latent attention" plan $M --dp 4 --ep 4 --recompute-modules mla_up_proj
bad "op recompute with experts" 64 "modelled for dense models only" plan $M --dp 4 --ep 4 --recompute op
bad "dualpipe with an odd pp" 64 "--dualpipe: needs an even --pp" plan $M --pp 1 --dp 4 --ep 4 --dualpipe
bad "comm SMs beyond the GPU" 64 "--ep-comm-sms" plan $M --dp 4 --ep 4 --ep-comm-sms 2000
bad "comm SMs: all 132 of an H100" 64 "--ep-comm-sms 132: must be below the 132 SMs of h100-sxm" \
    plan $M --dp 4 --ep 4 --ep-comm-sms 132
if grep -qE -- "--moe-imbalance|--moe-capacity|--overlap-ep" "$TMP/err"; then
    fail "... naming only the limit at fault" "$(cat "$TMP/err")"
else pass "... naming only the limit at fault"; fi
bad "moe tp without sp" 64 "need sequence parallelism" plan $M --tp 2 --dp 4 --ep 4 --no-sp
bad "unknown CUDA graph scope" 64 "--cuda-graph-scope: 'mlp' is not a CUDA graph scope (known: attn,moe_router,moe_preprocess,full, or none)" \
    plan $M --dp 4 --ep 4 --cuda-graph-scope attn,mlp
bad "empty CUDA graph scope" 64 "--cuda-graph-scope 'attn,': an empty scope name" plan $M --dp 4 --ep 4 --cuda-graph-scope attn,
bad "whole-layer graphs of dropless layers" 64 "--cuda-graph-scope full: dropless routing" \
    plan $M --dp 4 --ep 4 --cuda-graph-scope full
bad "unknown dispatcher" 64 "--moe-dispatcher: 'nccl' is not alltoall, deepep or hybridep" plan $M --dp 4 --ep 4 --moe-dispatcher nccl
bad "a fused expert MLP for a dense model" 64 "--moe-fused-mlp: fuses the routed experts' MLP; llama3-8b has no experts" \
    plan --model llama3-8b --gpu h100-sxm --recipe te-fp8 --moe-fused-mlp
bad "a dispatcher for a dense model" 64 "--moe-dispatcher deepep: llama3-8b has no experts" \
    plan --model llama3-8b --gpu h100-sxm --recipe bf16 --moe-dispatcher deepep
bad "HybridEP for a dense model" 64 "--moe-dispatcher hybridep: llama3-8b has no experts" \
    plan --model llama3-8b --gpu h100-sxm --recipe bf16 --moe-dispatcher hybridep
bad "unknown offload module" 64 "--offload-modules: 'core_attn' is not a module the planner offloads (known: expert_fc1,moe_act, or none)" \
    plan $M --dp 4 --ep 4 --offload-modules expert_fc1,core_attn
bad "offload inside a MoE layer rebuilt whole" 64 "--offload-modules moe_act with --recompute-modules moe" \
    plan $M --dp 4 --ep 4 --recompute-modules moe --offload-modules moe_act
bad "offload on a dense model" 64 "--offload-modules expert_fc1: offloads the routed experts' inputs; llama3-8b has no experts" \
    plan --model llama3-8b --gpu h100-sxm --recipe bf16 --offload-modules expert_fc1
# offloaded: the routed activations leave act_moe (csv terms: term,category,dtype,elements,bytes,...)
run plan $M --dp 4 --ep 4 --view terms --format csv
moe_on=$(grep "^act_moe," "$TMP/out" | cut -d, -f5)
run plan $M --dp 4 --ep 4 --offload-modules expert_fc1,moe_act --view terms --format csv
expect_rc "offload modules: exit 0" 0
moe_off=$(grep "^act_moe," "$TMP/out" | cut -d, -f5)
expect_eq "offload modules: act_moe smaller" "$([ "${moe_off:-0}" -lt "${moe_on:-0}" ] && echo smaller)" smaller
bad "CUDA graph scope on a dense model" 64 "--cuda-graph-scope attn: the host-issue term it changes is modelled for the MoE layers" \
    plan --model llama3-8b --gpu h100-sxm --recipe bf16 --cuda-graph-scope attn

# a hierarchical dispatcher sends a token once per remote node: Mixtral's 8 experts, top 2, over 2 nodes of 8 H100s
# (ep 16 needs dp 16): fewer bytes leave the GPU than with one copy per (token, expert) (test_oracle_moe_time.c by hand)
run plan $M --dp 16 --ep 8 --etp 1 --view collectives --format csv
a2a=$(awk -F, '$1 == "ep_dispatch_fwd" && NR > 1 { print $8; exit }' "$TMP/out")
run plan $M --dp 16 --ep 8 --moe-dispatcher deepep --view collectives --format csv
dedup=$(awk -F, '$1 == "ep_dispatch_fwd" && NR > 1 { print $8; exit }' "$TMP/out")
# (one expert a GPU: DeepEP's one copy per GPU is one per expert too)
if [ -n "$a2a" ] && [ "$a2a" = "$dedup" ]; then pass "ep 8 in one node of 8: the same bytes either way ($a2a)"; else fail "one node" "$a2a vs $dedup"; fi

# 16 experts a GPU (Qwen3-30B-A3B, 128 experts top 8, ep 8 in one node): DeepEP sends a token once to each of the
# D = 8 (1 - C(112, 8)/C(128, 8)) = 5.34 GPUs it uses, 4.67 of them remote, where HybridEP and the all-to-all send
# 8 x 7/8 = 7 copies: 4.67/7 = 0.667 of the bytes
Q8="--model qwen3-30b-a3b --gpu h100-sxm --recipe te-fp8 --dp 8 --ep 8 --seq 4096 --view collectives --format csv"
run plan $Q8 --moe-dispatcher hybridep
a2a=$(awk -F, '$1 == "ep_dispatch_fwd" && NR > 1 { print $8; exit }' "$TMP/out")
run plan $Q8 --moe-dispatcher deepep
dedup=$(awk -F, '$1 == "ep_dispatch_fwd" && NR > 1 { print $8; exit }' "$TMP/out")
if awk -v d="$dedup" -v a="$a2a" 'BEGIN { r = d / a; exit !(a > 0 && r > 0.66 && r < 0.67) }'; then
    pass "ep 8 in one node, 16 experts a GPU: deepep sends 4.67/7 of the bytes ($dedup of $a2a)"
else fail "deepep in one node" "$dedup vs $a2a"; fi

Q16="--model qwen3-30b-a3b --gpu h100-sxm --recipe te-fp8 --dp 16 --ep 16 --seq 4096 --view collectives --format csv"
run plan $Q16
a2a=$(awk -F, '$1 == "ep_dispatch_fwd" && NR > 1 { print $12; exit }' "$TMP/out")
run plan $Q16 --moe-dispatcher hybridep
dedup=$(awk -F, '$1 == "ep_dispatch_fwd" && NR > 1 { print $12; exit }' "$TMP/out")
# over 2 nodes a token's 8 experts use the other node almost always: ~1 network copy instead of 4 (k x 8/16),
# forwarded inside the node over NVLink (more NVLink bytes, far fewer over the NIC): the calls take less time
if awk -v d="$dedup" -v a="$a2a" 'BEGIN { exit !(d > 0 && d < a / 2) }'; then
    pass "ep 16 over 2 nodes: hybridep's calls take under half the time ($dedup s < $a2a s)"
else fail "ep 16 over 2 nodes" "$dedup vs $a2a"; fi

# the host issue of eager MoE layers: megatron-core's row, named in the expert lines and the time table; whole-layer
# graphs (a capacity factor makes the shapes static) replay it
Q="--model qwen3-30b-a3b --gpu b200 --recipe mxfp8 --dp 8 --ep 8 --gbs 512 --seq 4096 --dist-opt"
run plan $Q
expect_rc "eager Qwen3-30B plan exits 0" 0
tr -s '\n ' '  ' <"$TMP/out" >"$TMP/joined"
expect_eq "states the host issue of a MoE layer" \
    "$(grep -o 'host issue per MoE layer and micro-batch: [0-9]* + [0-9]* x 16 local experts operations' "$TMP/joined" | sed 's/: [0-9]* + [0-9]*/: N + N/')" \
    "host issue per MoE layer and micro-batch: N + N x 16 local experts operations"
expect_out "names the CUDA graph scope" "CUDA graphs: none"
run plan $Q --view time --format csv
eager=$(awk -F, '$1 == "moe_host_issue" { print $2 }' "$TMP/out")
run plan $Q --moe-capacity 1 --cuda-graph-scope full --view time --format csv
full=$(awk -F, '$1 == "moe_host_issue" { print $2 }' "$TMP/out")
if awk -v e="$eager" -v f="$full" 'BEGIN { exit !(e > 0 && f == 0) }'; then
    pass "eager layers wait on the host ($eager s); whole-layer graphs do not"
else fail "host issue: eager $eager s, full graphs $full s"; fi

# --routing: each rank's expert all-to-alls for a routing a run measured (tests/data/routing/mixtral_dp2_ep2.csv:
# mixtral-8x7b, dp 2 x ep 2, micro-batch 1 x 4096 tokens, 32 MoE layers x 2 steps = 64 dispatches a rank; rank 0
# sends its 8,192 copies a layer 1,536/1,536/1,024/1,024 to its own experts 0-3 and 768 to each of 4-7, rank 1
# 1,024 to each). A copy is 4096 x 2 = 8,192 B. Rank 0's dispatch: 3,072 copies leave, x 8,192 x 64 =
# 1,610,612,736 B sent; its experts receive its 5,120 and rank 1's 4,096: combine payload 9,216 x 8,192 x 64 =
# 4,831,838,208, 4,096 x 8,192 x 64 = 2,147,483,648 B leave. Counts: 8 int32 and 5 x 2 uint64 a dispatch, 112 B
# (56 leave) x 64 = 7,168 (3,584). Uniform: 1 copy of 2 leaves per token, 4096 x 8,192 x 64 = 2,147,483,648.
R="plan --model mixtral-8x7b --gpu h100-sxm --recipe megatron-bf16 --mbs 1 --gbs 2 --seq 4096 --dp 2 --ep 2"
run $R --routing tests/data/routing/mixtral_dp2_ep2.csv --format csv
expect_rc "plan --routing exits 0" 0
expect_eq "rank 0's dispatch under the measured routing, by hand" "$(grep '^0,ep_dispatch_fwd,' "$TMP/out")" \
    "0,ep_dispatch_fwd,1610612736,4294967296,2147483648,4294967296"
expect_eq "rank 0's combine, by hand" "$(grep '^0,ep_combine_bwd,' "$TMP/out")" \
    "0,ep_combine_bwd,2147483648,4831838208,2147483648,4294967296"
expect_eq "rank 1's combine: 3,072 + 4,096 copies, 3,072 leave" "$(grep '^1,ep_combine_fwd,' "$TMP/out")" \
    "1,ep_combine_fwd,1610612736,3758096384,2147483648,4294967296"
expect_eq "the counts, by hand" "$(grep '^1,ep_counts,' "$TMP/out")" "1,ep_counts,3584,7168,3584,7168"
bad "plan --routing: a routing log for other micro-batches" 65 "rank 0 routed 524288 token copies over 128 dispatches" \
    $R --gbs 4 --routing tests/data/routing/mixtral_dp2_ep2.csv
bad "plan --routing: no such file" 66 "no/such.csv" $R --routing no/such.csv

# the executor runs dense decoders, MoE layers, latent attention and multi-token prediction (depth 1; its runs
# and refusals: tests/cli/run_moe.sh)

finish
