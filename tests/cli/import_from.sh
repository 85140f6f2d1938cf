# tests/cli/import_from.sh — plan --from FILE: real configuration files (tests/data/import/README.md says
# where each comes from) give the plan that the equivalent flags give, byte for byte. The equivalent
# flags below are read off each file by hand (the file's line in the comment), never printed by
# fp8plan; a model the catalog lacks is typed in as a models.csv row of its own (its dimensions from the
# file and Megatron-LM's GPT defaults: LayerNorm, GeLU, FFN 4h, head_dim h/heads, learned positions,
# biases). Hostile variants (another format, truncated, contradictory, huge) fail with the file, line
# and setting named and nothing on stdout.
. "$FP8PLAN_ROOT/tests/lib.sh"

D="$FP8PLAN_ROOT/tests/data/import"
cat="$TMP/cat"
cp -r "$FP8PLAN_ROOT/models" "$cat"
E15=",,,,,,,,,,,,,,,"
# gpt3_7b_*_memory_speed: 32 layers, hidden 4096, 32 heads, 8 query groups, untied, vocab 131073 (NullTokenizer
# --vocab-size), max positions 8192; FFN 4 x 4096 = 16384, head_dim 4096/32 = 128
echo "custom-32l-4096h,32,4096,16384,32,8,128,131073,8192,layernorm,gelu,learned,no,yes$E15,hand" >>"$cat/models.csv"
# gpt3_mcore_te_tp2_pp2_cp2: 12 layers, hidden 512, 8 heads, vocab 50257, 1024 positions, tied; FFN 2048, head_dim 64
echo "custom-12l-512h,12,512,2048,8,8,64,50257,1024,layernorm,gelu,learned,yes,yes$E15,hand" >>"$cat/models.csv"

# same NAME "FROM-ARGS" "FLAG-ARGS": the two plans (text and CSV) are equal byte for byte
same() {
    local name=$1 from=$2 flags=$3 fmt
    for fmt in table csv; do
        # shellcheck disable=SC2086
        "$FP8PLAN" plan $from --format $fmt >"$TMP/a" 2>"$TMP/ae"
        local ra=$?
        # shellcheck disable=SC2086
        "$FP8PLAN" plan $flags --format $fmt >"$TMP/b" 2>"$TMP/be"
        local rb=$?
        if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
            fail "$name ($fmt)" "exit $ra / $rb" "$(head -c 300 "$TMP/ae")" "$(head -c 300 "$TMP/be")"
        elif [ ! -s "$TMP/a" ]; then
            fail "$name ($fmt)" "empty plan"
        elif cmp -s "$TMP/a" "$TMP/b"; then
            pass "$name ($fmt)"
        else
            fail "$name ($fmt)" "the plans differ: $(diff "$TMP/a" "$TMP/b" | head -5)"
        fi
    done
}
G="--gpu h100-sxm"
# 1, 2. Megatron-LM model_config.yaml, 8 GPUs (the functional tests' DGX H100 node): tp 1, pp 4, 1 layer per
# virtual stage (vpp 32/4/1 = 8), mbs 1, gbs 8, seq 8192, distributed optimizer, overlap-grad-reduce,
# no gradient-accumulation fusion, --bf16 (megatron-bf16), Megatron-LM's own defaults (stack megatron-lm)
M7="--model custom-32l-4096h --catalog $cat --stack megatron-lm --recipe megatron-bf16 --dist-opt --overlap-dp on --grad-acc-fusion off --seq 8192"
same "7b tp1 pp4 yaml, ad-hoc model" "--from $D/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml $G --gpus 8" "$M7 --tp 1 --pp 4 --vpp 8 --mbs 1 --gbs 8 $G --gpus 8"
same "7b tp1 pp4 yaml, catalog row" "--from $D/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml --catalog $cat $G --gpus 8" "$M7 --tp 1 --pp 4 --vpp 8 --mbs 1 --gbs 8 $G --gpus 8"
same "7b tp4 pp1 yaml" "--from $D/mlm_gpt3_7b_tp4_pp1_memory_speed.yaml $G --gpus 8" "$M7 --tp 4 --pp 1 --mbs 2 --gbs 8 $G --gpus 8"
# 3. tp 2, pp 2, cp 2, sequence parallel, mbs 4, gbs 32, seq 1024, flash attention, bf16, no dist-opt
same "tp2 pp2 cp2 yaml" "--from $D/mlm_gpt3_mcore_te_tp2_pp2_cp2.yaml $G --gpus 8" \
    "--model custom-12l-512h --catalog $cat --stack megatron-lm --recipe megatron-bf16 --tp 2 --pp 2 --cp 2 --sp --mbs 4 --gbs 32 --seq 1024 --grad-acc-fusion off --attn flash2 $G --gpus 8"
# 4. Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh: llama3-8b's dimensions (32 x 4096, FFN 14336, 8 groups,
# RMSNorm, SwiGLU, rope, untied, no bias, vocab 128256), 8 GPUs x 1 node (torchrun), tp 1 cp 1, sequence parallel,
# mbs 1 gbs 128 seq 8192, fused attention (cudnn), --grad-reduce-in-bf16, fp8 hybrid + --fp8-param-gather
# (te-fp8-param), dist-opt, overlap-grad-reduce
same "llama3 8b fp8 launch script" "--from $D/mlm_train_llama3_8b_h100_fp8.sh $G" \
    "--model llama3-8b --stack megatron-lm --recipe te-fp8-param --tp 1 --cp 1 --sp --mbs 1 --gbs 128 --seq 8192 --attn cudnn --main-grad bf16 --dist-opt --overlap-dp on $G --gpus 8"
# 5-7. torchtitan TOMLs: llama3 + flavor, FSDP over the rest (zero 3), the eager kernels without [compile]
same "torchtitan llama3 8b" "--from $D/tt_llama3_8b.toml $G --gpus 64" \
    "--model llama3-8b --stack torchtitan --recipe bf16 --tp 1 --pp 1 --cp 1 --zero 3 --mbs 1 --gbs 64 --seq 8192 --recompute op --kernels eager --swiglu unfused $G --gpus 64"
same "torchtitan llama3 70b" "--from $D/tt_llama3_70b.toml $G --gpus 64" \
    "--model llama3-70b --stack torchtitan --recipe bf16 --tp 8 --pp 1 --cp 1 --zero 3 --mbs 8 --gbs 64 --seq 8192 --recompute full --kernels eager --swiglu unfused $G --gpus 64"
# 405B: converters float8 with the FSDP float8 all-gather, async TP, compiled
same "torchtitan llama3 405b" "--from $D/tt_llama3_405b.toml $G --gpus 128" \
    "--model llama3-405b --stack torchtitan --recipe torchao-fp8-tensorwise-ag --tp 8 --pp 1 --cp 1 --zero 3 --mbs 2 --gbs 32 --seq 8192 --recompute full --overlap-tp on $G --gpus 128"
# 8, 9. Megatron-Bridge override YAMLs (no model dimensions: --model given), stack megatron-core
same "bridge llama32 1b pretrain" "--from $D/mb_llama32_1b_pretrain.yaml --model llama3-8b --recipe te-fp8 $G --gpus 8" \
    "--model llama3-8b --stack megatron-core --recipe te-fp8 --tp 1 --pp 1 --cp 1 --mbs 1 --gbs 8 --seq 4096 $G --gpus 8"
same "bridge quantized override" "--from $D/mb_quantized_llama3_8b_pretrain_override.yaml --model llama3-8b --recipe te-fp8 $G --gpus 8" \
    "--model llama3-8b --stack megatron-core --recipe te-fp8 --tp 1 --cp 1 --grad-acc-fusion off --gbs 8 $G --gpus 8"
# 10. the command line wins over the file
same "flags override the file" "--from $D/tt_llama3_70b.toml $G --gpus 64 --tp 4 --recipe torchao-fp8-rowwise" \
    "--model llama3-70b --stack torchtitan --recipe torchao-fp8-rowwise --tp 4 --pp 1 --cp 1 --zero 3 --mbs 8 --gbs 128 --seq 8192 --recompute full --kernels eager --swiglu unfused $G --gpus 64"

# Megatron-LM's defaults (arguments.py) where the file is silent: SwiGLU's FFN int(4h x 2/3 / 64) x 64 =
# int(4 x 1000 x 2/3 / 64) = int(41.67) = 41 -> 2624; head_dim 1000 / 8 = 125; no global batch: micro-batch 1 x
# DP 8 = 8 sequences (no accumulation)
printf 'MODEL_ARGS:\n  --num-layers: 2\n  --hidden-size: 1000\n  --num-attention-heads: 8\n  --swiglu: true\n  --normalization: RMSNorm\n  --position-embedding-type: rope\n  --disable-bias-linear: true\n  --seq-length: 128\n  --max-position-embeddings: 128\n  --vocab-size: 1000\n  --bf16: true\n' >"$TMP/swiglu.yaml"
echo "custom-2l-1000h,2,1000,2624,8,8,125,1000,128,rmsnorm,swiglu,rope,yes,no$E15,hand" >>"$cat/models.csv"
same "Megatron defaults: SwiGLU FFN, head_dim, batch" "--from $TMP/swiglu.yaml $G --gpus 8" \
    "--model custom-2l-1000h --catalog $cat --stack megatron-lm --recipe megatron-bf16 --seq 128 --gbs 8 $G --gpus 8"

# 11, 12. Megatron-Bridge MoE recipes, written from v0.2.0's recipe and model provider (tests/data/import/README.md).
# The file's model is the catalog's row when every field agrees: Qwen3-30B-A3B = qwen3-30b-a3b (48 x 2048, 32 heads
# over 4 query groups of 128, vocab 151936, RMSNorm, SwiGLU, rope, untied, no biases, qk norm; 128 experts, top 8,
# expert FFN 768, no shared expert, every layer a MoE layer (moe_layer_freq unset: 1), softmax router); TP 4, PP 2,
# CP 1, SP, EP 4, ETP 1, the alltoall dispatcher, full recomputation of every layer, mbs 2, gbs 32, seq 4096,
# FP32 gradient reduction, overlapped, distributed optimizer, bf16_mixed
same "bridge qwen3-30b-a3b recipe (MoE)" "--from $D/mb_qwen3_30b_a3b_pretrain.yaml $G --gpus 16" \
    "--model qwen3-30b-a3b --stack megatron-core --recipe megatron-bf16 --tp 4 --pp 2 --cp 1 --sp --ep 4 --etp 1 --moe-dispatcher alltoall --recompute full --mbs 2 --gbs 32 --seq 4096 --main-grad fp32 --overlap-dp on --dist-opt $G --gpus 16"
# DeepSeek-V3 = deepseek-v3 (61 x 7168, 128 heads, MLA: q_lora 1536, kv_lora 512, qk 128 + rope 64 = head_dim 192,
# v 128; 256 experts of 2048, top 8 in 4 of 8 groups, one shared expert (2048 / 2048), moe_layer_freq [0]*3+[1]*58:
# 3 dense layers, sigmoid with expert bias, MTP 1; vocab 129280 padded to 1280 x TP); TP 2, PP 16 laid out as
# [embedding + 4 decoder], 14 x [4 decoder], [decoder, mtp, loss] (16 chunks on 16 ranks: 4 layers first, 1 last, 4 on
# each of the 14 between), EP 64, ETP 1, selective recomputation, mbs 1, gbs 4096, BF16 gradient reduction
same "bridge deepseek-v3 recipe (MoE, MLA, MTP, pipeline layout)" "--from $D/mb_deepseek_v3_pretrain.yaml $G --gpus 1024" \
    "--model deepseek-v3 --stack megatron-core --recipe megatron-bf16 --vocab-pad 1280 --tp 2 --pp 16 --cp 1 --sp --first-stage-layers 4 --last-stage-layers 1 --custom-pp-layout --ep 64 --etp 1 --moe-dispatcher alltoall --recompute selective --mbs 1 --gbs 4096 --seq 4096 --main-grad bf16 --overlap-dp on --dist-opt $G --gpus 1024"
# The same layout as Megatron-LM's string: "Et*4|(t*4|)*14,tmL" unrolls to the 16 chunks above
DS="$D/mb_deepseek_v3_pretrain.yaml"
sed '/^  pipeline_model_parallel_layout:/,/^  - \[decoder, mtp, loss\]/c\  pipeline_model_parallel_layout: "Et*4|(t*4|)*14,tmL"' "$DS" >"$TMP/ds.yaml"
same "bridge deepseek-v3, the layout as a string" "--from $TMP/ds.yaml $G --gpus 1024" "--from $DS $G --gpus 1024"
# ... and its precision-aware optimizer (BF16 Adam moments and main gradients, FP32 master: the recipe's
# opt_config) is refused with BF16 training: TE keeps that master as 16-bit remainders beside the BF16 weights,
# a master no recipe row has (the BF16 moments alone would be --moment-dtype bf16)
cp "$DS" "$TMP/dsopt.yaml"
printf 'optimizer:\n  use_precision_aware_optimizer: true\n  main_params_dtype:\n    _target_: torch.float32\n    _call_: false\n  main_grads_dtype:\n    _target_: torch.bfloat16\n    _call_: false\n  exp_avg_dtype:\n    _target_: torch.bfloat16\n    _call_: false\n  exp_avg_sq_dtype:\n    _target_: torch.bfloat16\n    _call_: false\n' >>"$TMP/dsopt.yaml"
n=$(grep -n '^  use_precision_aware_optimizer:' "$TMP/dsopt.yaml" | cut -d: -f1)
run plan --from "$TMP/dsopt.yaml" $G --gpus 1024 -o "$TMP/o.txt"
expect_rc "the precision-aware optimizer with BF16 training: exit 65" 65
expect_err "... its line named" "dsopt.yaml:$n: optimizer.use_precision_aware_optimizer true: with BF16 or delayed-scaling FP8 TE keeps the FP32 master weights as 16-bit remainders"
expect_no_out "... nothing on stdout"
if [ -e "$TMP/o.txt" ]; then fail "... nothing written" "o.txt exists"; else pass "... nothing written"; fi
# with the recipe's FP8 blockwise (subchannel) mixed precision the same optimizer is the deepseek-v3 recipe, every
# parameter's moments in BF16 (the recipe keeps its other parameters' in FP32)
sed 's/^  bf16: true/  bf16: true\n  fp8: e4m3\n  fp8_recipe: blockwise/' "$TMP/dsopt.yaml" >"$TMP/dsfp8.yaml"
same "bridge deepseek-v3, blockwise FP8 with BF16 moments" "--from $TMP/dsfp8.yaml $G --gpus 1024" \
    "--from $DS --recipe deepseek-v3 --moment-dtype bf16 $G --gpus 1024"
# ... and without the precision-aware optimizer, Megatron's FP32 moments: accepted (refused before --moment-dtype)
sed 's/^  bf16: true/  bf16: true\n  fp8: e4m3\n  fp8_recipe: blockwise/' "$DS" >"$TMP/dsfp8m.yaml"
same "bridge deepseek-v3, blockwise FP8 with FP32 moments" "--from $TMP/dsfp8m.yaml $G --gpus 1024" \
    "--from $DS --recipe deepseek-v3 --moment-dtype fp32 $G --gpus 1024"
run plan --from "$TMP/dsfp8m.yaml" $G --gpus 1024
expect_line "... its moments in FP32, 4 B each" "adam_m_gemm +state +fp32 .*"
# CUDA graphs (TE's attention and router scopes) and fine-grained offloading of the experts' inputs are plan options
# (each changes these plans: the graphs Qwen3's host issue, the offloading DeepSeek-V3's saved activations)
sed 's/^  moe_token_dispatcher_type: alltoall/&\n  cuda_graph_impl: transformer_engine\n  cuda_graph_scope: [attn, moe_router]/' \
    "$D/mb_qwen3_30b_a3b_pretrain.yaml" >"$TMP/qg.yaml"
same "bridge qwen3-30b-a3b with CUDA graphs" "--from $TMP/qg.yaml $G --gpus 16" \
    "--from $D/mb_qwen3_30b_a3b_pretrain.yaml --cuda-graph-scope attn,moe_router $G --gpus 16"
sed 's/^  moe_token_dispatcher_type: alltoall/&\n  fine_grained_activation_offloading: true\n  offload_modules: [moe_act, expert_fc1]/' \
    "$D/mb_deepseek_v3_pretrain.yaml" >"$TMP/dso.yaml"
same "bridge deepseek-v3 with fine-grained offloading" "--from $TMP/dso.yaml $G --gpus 1024" \
    "--from $D/mb_deepseek_v3_pretrain.yaml --offload-modules expert_fc1,moe_act $G --gpus 1024"
run plan --from "$D/mb_qwen3_30b_a3b_pretrain.yaml" $G --gpus 16 --explain
expect_err "--explain: the catalog row and the fields that decided it" "the model is the catalog's qwen3-30b-a3b: these agree"
expect_err "... the expert fields among them" "experts 128, experts_per_token 8, expert_ffn_hidden 768, dense_layers 0, router softmax"
# MoE settings that contradict each other or the catalog: exit 65 naming the file, line, setting and value
Q="$D/mb_qwen3_30b_a3b_pretrain.yaml"
moe_bad() { # name sed-expression expected-stderr
    sed "$2" "$Q" >"$TMP/q.yaml"
    run plan --from "$TMP/q.yaml" $G --gpus 16 -o "$TMP/o.txt"
    expect_rc "$1: exit 65" 65
    expect_err "$1: the setting named" "$3"
    expect_no_out "$1: nothing on stdout"
    if [ -e "$TMP/o.txt" ]; then fail "$1: nothing written" "o.txt exists"; else pass "$1: nothing written"; fi
}
moe_bad "an expert FFN no catalog row has" 's/moe_ffn_hidden_size: 768/moe_ffn_hidden_size: 1024/' \
    "q.yaml:23: model.moe_ffn_hidden_size gives expert_ffn_hidden 1024: no catalog model has this architecture (a model with experts, latent attention or MTP is planned as a catalog row); the nearest, qwen3-30b-a3b, has expert_ffn_hidden 768 (1 field differs)"
moe_bad "top-k above the experts" 's/moe_router_topk: 8/moe_router_topk: 129/' \
    "q.yaml:24: model.moe_router_topk 129: more experts per token than --num-experts"
moe_bad "EP not dividing the experts" 's/expert_model_parallel_size: 4/expert_model_parallel_size: 3/' \
    "q.yaml:35: model.expert_model_parallel_size 3 does not divide --num-experts 128 (line 22)"
moe_bad "Megatron's default allgather dispatcher" '/moe_token_dispatcher_type/d' \
    "q.yaml:22: --moe-token-dispatcher-type allgather (Megatron's default when not given): the planner's dispatchers are alltoall and flex"
moe_bad "SequentialMLP experts" 's/moe_grouped_gemm: true/moe_grouped_gemm: false/' \
    "q.yaml:28: model.moe_grouped_gemm false: Megatron's SequentialMLP"
moe_bad "dense layers between MoE layers" 's/  num_moe_experts: 128/  num_moe_experts: 128\n  moe_layer_freq: 2/' \
    "q.yaml:23: model.moe_layer_freq 2: one MoE layer in every 2 interleaves dense and MoE layers"
moe_bad "TE's fused expert ops with expert TP" 's/expert_tensor_parallel_size: 1/expert_tensor_parallel_size: 2\n  use_transformer_engine_op_fuser: true/' \
    "q.yaml:37: model.use_transformer_engine_op_fuser true: with expert tensor parallelism"
# Megatron-Core core_v0.18.0's fused expert ops (SwiGLU experts, no expert TP) are --moe-fused-mlp ...
sed 's/expert_tensor_parallel_size: 1/&\n  use_transformer_engine_op_fuser: true/' "$Q" >"$TMP/qf.yaml"
run plan --from "$TMP/qf.yaml" $G --gpus 16 --explain
expect_rc "bridge qwen3-30b-a3b with TE's fused expert ops" 0
expect_err "... read as --moe-fused-mlp" "model.use_transformer_engine_op_fuser = true  ->  --moe-fused-mlp"
# ... which the planner checks against the model: a dense --model refuses it (exit 64)
run plan --from "$TMP/qf.yaml" $G --gpus 16 --model llama3-8b
expect_rc "... on a dense --model: exit 64" 64
expect_err "... naming the flag" "--moe-fused-mlp: fuses the routed experts' MLP; llama3-8b has no experts"
# --model instead: the file's model (no catalog row) is not planned, its run options are
sed 's/moe_ffn_hidden_size: 768/moe_ffn_hidden_size: 1024/' "$Q" >"$TMP/q.yaml"
run plan --from "$TMP/q.yaml" $G --gpus 16 --model qwen3-30b-a3b --format csv
expect_rc "--model replaces the file's model" 0
expect_out "... qwen3-30b-a3b planned" "qwen3-30b-a3b,h100-sxm,megatron-bf16,megatron-core"
# ... or the model's own row in a catalog of one's own, as the message says
echo "qwen3-ffn1024,48,2048,6144,32,4,128,151936,32768,rmsnorm,swiglu,rope,no,no,yes,128,8,0,1024,0,softmax,0,0,0,0,0,0,0,0,hand" >>"$cat/models.csv"
run plan --from "$TMP/q.yaml" --catalog "$cat" $G --gpus 16 --format csv
expect_rc "a catalog row of its own" 0
expect_out "... that row planned" "qwen3-ffn1024,h100-sxm,megatron-bf16,megatron-core"

# report html and the TUI put their headline model first: the file's model wins over it, --model over the file
run report html --from "$D/tt_llama3_8b.toml" $G --gpus 8 -o "$TMP/r.html"
expect_rc "report html --from" 0
if grep -q "llama3-8b" "$TMP/r.html" && ! grep -q "gpt-175b" "$TMP/r.html"; then
    pass "report html plans the file's model"
else
    fail "report html plans the file's model" "$(grep -o 'gpt-175b\|llama3-8b' "$TMP/r.html" | sort | uniq -c)"
fi
run plan --from "$D/tt_llama3_8b.toml" $G --gpus 8 --model llama3-70b --format csv
expect_out "--model wins over the file" "llama3-70b,h100-sxm,bf16,torchtitan"

# --explain: every setting with its line, ignored ones said
run plan --from "$D/mlm_gpt3_7b_tp1_pp4_memory_speed.yaml" $G --gpus 8 --explain
expect_rc "--explain plans" 0
expect_err "--explain maps TP with its line" "   46  MODEL_ARGS.--tensor-model-parallel-size = 1  ->  --tp 1"
expect_err "--explain says what it ignored" "MODEL_ARGS.--lr = 0.00015  ->  ignored: not modelled"
expect_err "--explain names the format" "read as megatron; 63 settings"

# compare and sweep take --from too
run compare --from "$D/tt_llama3_8b.toml" $G --gpus 8 --recipes bf16,torchao-fp8-tensorwise --format csv
expect_rc "compare --from" 0
expect_out "compare --from plans llama3-8b" "llama3-8b,h100-sxm,torchao-fp8-tensorwise,torchtitan"

# hostile inputs: file, line and setting named, nothing on stdout
run plan --from "$D/mlm_train_gpt3_175b_distributed.sh" $G
expect_rc "TP x PP beyond the world is refused" 65
expect_err "world: file, line, the TP and PP lines" "mlm_train_gpt3_175b_distributed.sh:22: 8 GPUs is not a multiple of TP x PP x CP = 128 (lines 56, 57"
expect_no_out "world: nothing on stdout"
sed 's/--pipeline-model-parallel-size 16/--pipeline-model-parallel-size 1/' "$D/mlm_train_gpt3_175b_distributed.sh" >"$TMP/175b.sh"
run plan --from "$TMP/175b.sh" $G
expect_rc "an FP16 script is refused" 65
expect_err "FP16: file, line, flag" "175b.sh:47: --fp16: FP16 mixed precision"
# a recipe the GPU cannot run: the line of the file that chose it is named (the script's "--fp8-format hybrid"
# array element is its line 108; the TOML's converters line 21)
run plan --from "$D/mlm_train_llama3_8b_h100_fp8.sh" --gpu a100-sxm
expect_rc "FP8 on an A100 is refused" 64
expect_err "the FP8 line of the script" "the recipe te-fp8-param is what $D/mlm_train_llama3_8b_h100_fp8.sh:108 (--fp8-format) says"
run plan --from "$D/tt_llama3_405b.toml" --gpu a100-sxm --gpus 128
expect_err "the converters line of the TOML" "tt_llama3_405b.toml:21 (model.converters) says"
run plan --from "$D/tt_llama3_405b.toml" --gpu a100-sxm --gpus 128 --recipe bf16
expect_rc "--recipe plans another" 0
run plan --from "$D/tt_llama3_8b.toml" --from-format megatron $G --gpus 8
expect_rc "a TOML read as Megatron arguments" 65
expect_err "another framework's file" "no Megatron-LM argument"
head -c 700 "$D/tt_llama3_8b.toml" >"$TMP/trunc.toml"
echo 'seq_len = ' >>"$TMP/trunc.toml"
run plan --from "$TMP/trunc.toml" $G --gpus 8
expect_rc "a truncated TOML" 65
expect_err "truncated TOML: file and line" "trunc.toml:"
printf 'MODEL_ARGS:\n  --num-layers: 99999999999\n  --hidden-size: 64\n' >"$TMP/huge.yaml"
run plan --from "$TMP/huge.yaml" $G --gpus 8
expect_rc "a huge value" 65
expect_err "huge: file, line, setting" "huge.yaml:2: MODEL_ARGS.--num-layers: 99999999999 is out of range"
printf 'MODEL_ARGS:\n  --num-layers: 2\n  --hidden-size: 64\n  --num-attention-heads: 4\n  --seq-length: 128\n  --vocab-size: 1000\n  --recompute-granularity: partial\n' >"$TMP/bad.yaml"
run plan --from "$TMP/bad.yaml" $G --gpus 8 -o "$TMP/o.txt"
expect_rc "a bad recompute value" 65
expect_err "bad value: file, line, setting" "bad.yaml:7: MODEL_ARGS.--recompute-granularity: 'partial'"
if [ -e "$TMP/o.txt" ]; then fail "nothing written on error" "o.txt exists"; else pass "nothing written on error"; fi
run plan --from "$TMP/none.toml" $G
expect_rc "a missing file" 66
run plan --explain --model gpt-7b $G
expect_rc "--explain without --from" 64
finish
