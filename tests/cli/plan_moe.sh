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
expect_out "csv carries ep, etp, active parameters" ",64,1,37552297472,"

run plan $DS --view collectives --format csv
# 4096 tokens x (3.5 network + 7 NVLink copies) x (7168 + 56 x 4) B = 317,915,136 B per call
expect_out "dispatch bytes per call" "ep_dispatch_fwd,ep,all-to-all,e4m3,64,inter,242221056,317915136,"

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

# the executor runs dense decoders and MoE layers; latent attention (deepseek-v3) is planned, not run
bad "run refuses a model with experts" 69 "planned (fp8plan plan) but not run" run --backend cpu --model deepseek-v3 --recipe te-fp8 --layers 2 --steps 1

finish
