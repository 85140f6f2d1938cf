# tests/cli/run_moe.sh — `fp8plan run` on a model with experts (CPU backend, one rank; docs/executor-moe.md).
. "$FP8PLAN_ROOT/tests/lib.sh"
. "$FP8PLAN_ROOT/tests/mpi_lib.sh"

MOE="--model mixtral-8x7b --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 256"

# persistent terms exact against the plan's MoE terms, and the transient the plan's exactly: the MoE layer's
# backward working set counts SwiGLU's d(output), the router's logits and gradients, the MoE input's gradient and
# d(QKV) (planner/plan_moe_mem.c), so the run ends with 0
run run $MOE --recipe megatron-bf16 --steps 3 -o "$TMP/moe.csv"
expect_rc "mixtral shrunk: every term within the plan (exit 0)" 0
# 32 tokens, h 64, 64 routed rows, expert FFN 224, 8 experts top-2, 4 heads of 16 (one KV head): dX + d(residual)
# 2 x 32 x 64 x 2 = 8,192 + d(FC1 output) 64 x 448 x 2 = 57,344 + d(SwiGLU output) 64 x 224 x 2 = 28,672 + dispatch
# and combine 64 x 64 x 4 = 16,384 + router 32 x (8 x 10 + 2 x 4) = 2,816 + d(MoE input) 32 x 64 x 2 = 4,096 +
# d(QKV) 32 x 96 x 2 = 6,144 + the materialized attention's d(probabilities) 32 x 4 x 32 x 4 = 16,384 = 140,032
expect_eq "transient: planned and measured, 140,032 B by hand" "$(grep '^memory,transient,' "$TMP/moe.csv" | cut -d, -f4,5)" \
    "140032,140032"
expect_out "mixtral shrunk: persistent terms match the plan" "every exact term matches the plan byte for byte"
for t in weight_expert master_expert grad_expert adam_m_expert adam_v_expert weight_other act_layer_hp act_moe; do
    row=$(grep "^memory,$t," "$TMP/moe.csv")
    expect_eq "$t: verdict ok" "$(echo "$row" | awk -F, '{print $NF}')" "ok"
done
# routing of the last step: 32 tokens x top-2 = 64 rows per MoE layer, 64 / 8 = 8.00 per expert if uniform
expect_out "routing: the plan's uniform expectation" "routing (last step, rows per expert; the plan's uniform expectation 8.00, most-loaded x1.00):"
expect_line "routing: layer 0's rows" '  layer 0: 64 rows, min [0-9]+, max [0-9]+ per expert; most-loaded / mean [0-9.]+'
expect_line "routing: layer 1's rows" '  layer 1: 64 rows, min [0-9]+, max [0-9]+ per expert; most-loaded / mean [0-9.]+'
expect_line "softmax router: the auxiliary loss" '  auxiliary balance loss \(not in the loss above\): 0\.[0-9]{6}'
# 8 experts x (2 x 224 x 64 + 64 x 224) x 2 layers = 688,128 BF16 weights = 1,376,256 B
expect_eq "weight_expert bytes by hand" "$(grep '^memory,weight_expert,' "$TMP/moe.csv" | cut -d, -f5)" "1376256"

# a real expert count: 64 experts, top-8
run run $MOE --experts 64 --topk 8 --expert-ffn 16 --recipe megatron-bf16 --steps 2 -o "$TMP/moe64b.csv"
expect_out "64 experts top-8: persistent terms match the plan" "every exact term matches the plan byte for byte"

# te-fp8: the experts' grouped GEMMs in FP8 (exec/model/model_moe_fp8.c), one scaling record set per expert
run run $MOE --recipe te-fp8 --steps 3 -o "$TMP/moe8.csv" --scaling-trace "$TMP/trace8.csv"
expect_rc "te-fp8 on experts: every term within the plan (exit 0)" 0
expect_out "te-fp8 on experts: persistent terms match the plan" "every exact term matches the plan byte for byte"
# FP8 copies of the 688,128 expert weights, row-wise and transposed, 1 B each: 1,376,256 B
expect_eq "fp8_expert: planned and measured by hand" "$(grep '^memory,fp8_expert,' "$TMP/moe8.csv" | cut -d, -f4,5)" \
    "1376256,1376256"
# 2 layers x (QKV, proj, 8 experts x (FC1, FC2)) = 36 FP8 tensors x 3 records (x, w, dy) x (scale, scale_inv,
# 1024 history rows) x 4 B = 36 x 3 x 1026 x 4 = 443,232 B
expect_eq "scale_gemm: planned and measured by hand" "$(grep '^memory,scale_gemm,' "$TMP/moe8.csv" | cut -d, -f4,5)" \
    "443232,443232"
# the BF16 run's 140,032 B + the FP8 output gradient of FC1 in both layouts, 2 x 64 rows x 448 x 1 B = 57,344:
# 197,376 B, + the scale each expert's FC2 input was cast with, kept for the backward's recomputed expert outputs
# (the delayed update after the forward moves the bank's): 2 MoE layers x 8 experts x 4 B = 64: 197,440
expect_eq "te-fp8 transient: planned and measured, 197,440 B by hand" \
    "$(grep '^memory,transient,' "$TMP/moe8.csv" | cut -d, -f4,5)" "197440,197440"

# a real expert count in FP8: 64 experts top-8, each its own scaling records
run run $MOE --experts 64 --topk 8 --expert-ffn 16 --recipe te-fp8 --steps 2 -o "$TMP/moe64.csv"
expect_out "64 experts top-8, te-fp8: persistent terms match the plan" "every exact term matches the plan byte for byte"
# 2 layers x (QKV, proj, 64 experts x (FC1, FC2)) = 260 FP8 tensors x 3 records x 1026 floats x 4 B = 3,201,120 B
expect_eq "64 experts, te-fp8: scale_gemm by hand" "$(grep '^memory,scale_gemm,' "$TMP/moe64.csv" | cut -d, -f4,5)" \
    "3201120,3201120"
# its transient: the BF16 run's + the experts' FP8 output gradient in both layouts, whose widest is FC2's
# (256 rows, hidden 64), not FC1's (256, 2 x 16 = 32): 2 x 256 x 64 x 1 B = 32,768 B, + the experts' FC2 input
# scales kept for the recompute, 2 layers x 64 x 4 B = 512: 33,280 B, planned and measured
t8=$(grep '^memory,transient,' "$TMP/moe64.csv" | cut -d, -f4,5)
tb=$(grep '^memory,transient,' "$TMP/moe64b.csv" | cut -d, -f4)
expect_eq "64 experts, te-fp8: transient = BF16's + 33,280 B, planned and measured" "$t8" "$((tb + 33280)),$((tb + 33280))"

# deepseek-v3 on experts (exec/model/model_moe_block.c): E4M3 with 1x128 activation tiles, each expert's 128x128
# weight blocks, the 14-bit accumulation; every term within the plan, exit 0
run run $MOE --recipe deepseek-v3 --steps 2 -o "$TMP/moeds.csv"
expect_rc "deepseek-v3 on experts: every term within the plan (exit 0)" 0
expect_out "deepseek-v3 on experts: persistent terms match the plan" "every exact term matches the plan byte for byte"
# each expert's weights blocked on their own: FC1 (448, 64) 4 blocks a copy, FC2 (64, 224) 2, both copies: 12 an
# expert x 8 x 2 layers = 192, + QKV (96, 64) and proj (64, 64) 1 a copy, 4 a layer: 200 FP32 scales = 800 B
expect_eq "deepseek-v3: scale_block by hand" "$(grep '^memory,scale_block,' "$TMP/moeds.csv" | cut -d, -f4,5)" "800,800"
# act_moe a layer (32 tokens, 64 rows, 8 experts): probabilities 32x8x4 = 1,024, router input 32x64x2 = 4,096, FC1
# input 64x64 = 4,096 in FP8 + its transposed tiles 64 x (8 + floor(56/128) = 8) x 4 = 2,048, FC1 output 64x448x2 =
# 57,344, FC2 input 64x224 = 14,336 + 224x8x4 = 7,168, this executor's routing data (its stack's plan): an expert id,
# weight and row a (token, slot) 32x2x12 = 768 and 8 int32 counts 32: 90,912, 2 layers 181,824 planned and held
# (Megatron-Core's top-k 32x2x8 and a weight and two maps a row 64x12, which the plan counted here before: 480 B more)
expect_eq "deepseek-v3: act_moe by hand" "$(grep '^memory,act_moe,' "$TMP/moeds.csv" | cut -d, -f4,5)" "181824,181824"
# te-fp8's 197,376 B of working set (no FC2 scales kept: block scales are the tiles') + dY's tiles, the widest expert output 448: row-wise 64 x ceil(448/128) x 4 = 1,024 and
# transposed 448 x 8 x 4 = 14,336: 212,736
expect_eq "deepseek-v3 transient: planned and measured, 212,736 B by hand" \
    "$(grep '^memory,transient,' "$TMP/moeds.csv" | cut -d, -f4,5)" "212736,212736"
# a real expert count: 64 experts top-8 (expert FFN 16); per expert FC1 (32, 64) and FC2 (64, 16) one block a
# copy: 4 x 64 x 2 layers = 512 + 8 = 520 scales, 2,080 B
run run $MOE --experts 64 --topk 8 --expert-ffn 16 --recipe deepseek-v3 --steps 2 -o "$TMP/moeds64.csv"
expect_rc "64 experts top-8, deepseek-v3: every term within the plan (exit 0)" 0
expect_out "64 experts top-8, deepseek-v3: persistent terms match the plan" \
    "every exact term matches the plan byte for byte"
expect_eq "64 experts, deepseek-v3: scale_block by hand" \
    "$(grep '^memory,scale_block,' "$TMP/moeds64.csv" | cut -d, -f4,5)" "2080,2080"

# the scaling trace: per step 2 layers x (QKV, proj) x 3 records = 12 rows + 2 layers x 2 x 8 experts x 3 = 96
expect_eq "scaling trace: 108 rows a step, 3 steps and the header" "$(wc -l < "$TMP/trace8.csv" | tr -d ' ')" "325"
expect_eq "scaling trace: one expert's dY record" \
    "$(grep -c '^[0-9]*,bwd,1,experts\.fc2\.7,dy,e5m2,' "$TMP/trace8.csv")" "3"

# Qwen3's MoE row with its q/k norms (RMSNorm over each query and key head before RoPE), shrunk: 2 layers, hidden
# 64, 4 heads of 16 (2 KV heads), 8 experts top-2 of FFN 32, no shared expert; 50 steps, the loss falls
QWEN="--model qwen3-30b-a3b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --seq 32 --vocab 256"
run run $QWEN --experts 8 --topk 2 --expert-ffn 32 --recipe megatron-bf16 --mbs 4 --steps 50 --lr 3e-3 \
    -o "$TMP/qwen.csv"
expect_rc "qwen3 shrunk (q/k norms): every term within the plan (exit 0)" 0
expect_out "qwen3 shrunk: persistent terms match the plan" "every exact term matches the plan byte for byte"
expect_line "qwen3 shrunk: the loss falls" 'loss: first 5\.[0-9]{4}, final [12]\.[0-9]{4} \(mean of the last 10 steps\).*'
# "other" weights, BF16: embedding and untied head 2 x 256 x 64 = 32,768, final norm 64, per layer norm1 64 +
# norm2 64 + the q and k norms 16 + 16 + router 8 x 64 = 672, x 2 layers = 1,344: 34,176 x 2 B = 68,352
expect_eq "qwen3: weight_other by hand, planned and measured" \
    "$(grep '^memory,weight_other,' "$TMP/qwen.csv" | cut -d, -f4,5)" "68352,68352"
# the transient, 128 tokens, 256 routed rows: dX + d(residual) 2 x 128 x 64 x 2 = 32,768 + d(FC1 output) 256 x 64
# x 2 = 32,768 + d(SwiGLU output) 256 x 32 x 2 = 16,384 + router 128 x (8 x 10 + 2 x 4) = 11,264 + d(MoE input)
# 128 x 64 x 2 = 16,384 + d(QKV) 128 x 128 x 2 = 32,768 + d(probabilities) 128 x 4 x 32 x 4 = 65,536 + dispatch
# and combine 256 x 64 x 4 = 65,536 + the q/k norms' rebuilt attention input 128 x 128 x 2 = 32,768 and its rstd
# 128 x 6 x 4 = 3,072 = 309,248; the saved activations are as without q/k norms (their input is the QKV output)
expect_eq "qwen3: transient by hand, planned and measured" \
    "$(grep '^memory,transient,' "$TMP/qwen.csv" | cut -d, -f4,5)" "309248,309248"

# latent attention (exec/model/model_mla.c): DeepSeek-V3's row without MTP, shrunk, as a row of a test catalog
# (with MTP: tiny-mtp and deepseek-v3 itself, below): 2 layers, the first dense (FFN 128), hidden 64, 4 heads of qk_nope 8
# + qk_rope 4 and values of 8, q latent 24, kv latent 16, 8 experts top-2 of FFN 32, a shared expert, sigmoid
# router (4 groups, top 2); 50 steps, the loss falls; every state and saved activation as planned, byte for byte
cp -r "$FP8PLAN_ROOT/models" "$TMP/mla"
echo 'tiny-mla,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,0,"test model"' \
    >>"$TMP/mla/models.csv"
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 50 --lr 3e-3 \
    -o "$TMP/mla.csv"
expect_rc "tiny-mla (latent attention): exit 0" 0
expect_out "tiny-mla: exact terms as planned, the transient within the plan's" \
    "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_line "tiny-mla: the loss falls" 'loss: first 5\.[0-9]{4}, final 1\.[0-9]{4} \(mean of the last 10 steps\).*'
# GEMM weights by hand: per layer q_down 24 x 64 = 1,536, q_up 4 x 12 x 24 = 1,152, kv_down (16 + 4) x 64 = 1,280,
# kv_up 4 x (8 + 8) x 16 = 1,024, out-projection 64 x 4 x 8 = 2,048 = 7,040; FFNs 3 x 128 x 64 (dense) + 3 x 32 x
# 64 (shared expert) = 30,720: 44,800 x 2 B
expect_eq "tiny-mla: weight_gemm by hand, planned and measured" \
    "$(grep '^memory,weight_gemm,' "$TMP/mla.csv" | cut -d, -f4,5)" "89600,89600"
# the transient, 32 tokens, 64 routed rows. Planned (the MoE layer): dX + d(residual) 2 x 32 x 64 x 2 = 8,192 +
# d(FC1 output) of the shared expert at the dense layer's width (this executor keeps one set of block buffers,
# sized at the widest layer) 32 x 256 x 2 = 16,384 and of the rows 64 x 64 x 2 = 8,192 + SwiGLU's d(output) 32 x
# 128 x 2 = 8,192 and 64 x 32 x 2 = 4,096 + the sigmoid router 32 x (8 x 6 + 2 x 4) = 1,792 (fp32 logits, BF16
# d(logits), fp32 d(weights); this executor keeps no fp32 d(scores), which Megatron-Core's would: planner/
# plan_moe_mem.c) + d(MoE input) 4,096 + the latent-attention rows 32 x (20 + 64 + 2 x 24) x 2 = 8,448 +
# d(probabilities) 32 x 4 x 32 x 4 = 16,384 + dispatch and combine 64 x 64 x 4 = 16,384 = 92,160 (d(Q, K, V) 32 x
# 128 x 2 shares d(FC1 output)'s buffer); held the same
expect_eq "tiny-mla: the transient, planned and measured" \
    "$(grep '^memory,transient,' "$TMP/mla.csv" | cut -d, -f4,5)" "92160,92160"

# in FP8 (te-fp8): 30 FP8 tensors — per layer q_down, q_up, kv_down, kv_up, the output projection, FC1 and FC2 (the
# MoE layer's shared expert) and the MoE layer's 2 x 8 experts — each with x, w and dy records of scale, scale_inv
# and a 1,024-row history: 30 x 3 x 1,026 x 4 = 369,360 B; the scaling trace names every one, 90 rows a step
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe te-fp8 --steps 3 \
    --scaling-trace "$TMP/mla_tr.csv" -o "$TMP/mla8.csv"
expect_rc "tiny-mla te-fp8: exit 0" 0
# the transient: megatron-bf16's (92,160 planned and held) + the FP8 output gradients in both layouts, planned for
# the shared expert's and the rows' FC1 outputs together, 2 x (32 x 256 + 64 x 64) = 24,576: 116,736; held, one
# pair at the widest (32 x 256), 2 x 8,192 = 16,384: 108,544; both + the 8 experts' FC2 input scales kept for the
# recompute, 8 x 4 = 32 B
expect_eq "tiny-mla te-fp8: the transient, planned and measured" \
    "$(grep '^memory,transient,' "$TMP/mla8.csv" | cut -d, -f4,5)" "116768,108576"
expect_eq "tiny-mla te-fp8: scale_gemm by hand, planned and measured" \
    "$(grep '^memory,scale_gemm,' "$TMP/mla8.csv" | cut -d, -f4,5)" "369360,369360"
expect_eq "tiny-mla te-fp8: the trace's rows of step 3" "$(awk -F, '$1 == 3 { n++ } END { print n }' "$TMP/mla_tr.csv")" 90
expect_eq "tiny-mla te-fp8: kv_up of layer 0 traced" "$(grep -c '^3,[a-z]*,0,kv_up,' "$TMP/mla_tr.csv")" 3

# the row's real vocabulary (151,936) and experts (128, top-8) for 2 steps
run run --model qwen3-30b-a3b --layers 2 --hidden 64 --heads 4 --kv-heads 2 --seq 32 --mbs 1 --expert-ffn 16 \
    --recipe megatron-bf16 --steps 2 --quiet
expect_rc "qwen3, 151,936 tokens and 128 experts top-8: exit 0" 0
expect_out "qwen3 real sizes: persistent terms match the plan" "every exact term matches the plan byte for byte"

# multi-token prediction depth 1 (exec/model/model_mtp.c): tiny-mla with mtp_layers 1, 50 steps; the main and
# the MTP loss fall, every state and saved activation as planned, the transient within the plan's (92,160 B
# planned and held: the MTP block's working set fits in the buffers the dense first layer sizes): exit 0
echo 'tiny-mtp,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,1,"test model"' \
    >>"$TMP/mla/models.csv"
run run --catalog "$TMP/mla" --model tiny-mtp --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 50 --lr 3e-3 \
    --log-every 49 -o "$TMP/mtp.csv"
expect_rc "tiny-mtp: exit 0" 0
expect_out "tiny-mtp: exact terms as planned, none outside" "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_line "tiny-mtp: the model line names the depth" "  model: 2 layers \+ 1 MTP depth \(weight 0\.3\), hidden 64,.*"
expect_line "tiny-mtp: the loss falls" 'loss: first 5\.[0-9]{4}, final 1\.[0-9]{4} \(mean of the last 10 steps\).*'
expect_line "tiny-mtp: the MTP loss falls too" 'step +50 +loss +1\.[0-9]{4} +mtp +1\.[0-9]{4} .*'
# GEMM weights: tiny-mla's 44,800 + the depth's block (attention 7,040 + shared expert 3 x 32 x 64 = 6,144) +
# eh_proj 64 x 128 = 8,192: 66,176 x 2 B
expect_eq "tiny-mtp: weight_gemm by hand, planned and measured" \
    "$(grep '^memory,weight_gemm,' "$TMP/mtp.csv" | cut -d, -f4,5)" "132352,132352"
# the outputs twice: x_final and the final norm's output 2 x 32 x 64 x 2 = 8,192, rstd 128, logits 32 x 256 x 4 =
# 32,768: 41,088, and the depth's again: 82,176
expect_eq "tiny-mtp: act_output by hand, planned and measured" \
    "$(grep '^memory,act_output,' "$TMP/mtp.csv" | cut -d, -f4,5)" "82176,82176"

# deepseek-v3's own row (its MLA widths and latents are not shrunk by --hidden/--heads: head_dim 192, values 128,
# latents 1,536 and 512), 3 steps. GEMM weights by hand: per layer q_down 1,536 x 64 = 98,304, q_up 4 x 192 x
# 1,536 = 1,179,648, kv_down 576 x 64 = 36,864, kv_up 4 x 256 x 512 = 524,288, out-projection 64 x 512 = 32,768:
# 1,871,872, x 3 (2 layers and the MTP block) + the dense FFN 3 x 128 x 64 = 24,576 + 2 shared experts 6,144 each
# + eh_proj 8,192 = 5,660,672 x 2 B
DS3="--model deepseek-v3 --layers 2 --hidden 64 --heads 4 --ffn 128 --seq 32 --vocab 256 --experts 8 --topk 2
    --expert-ffn 32 --dense-layers 1 --mbs 1"
run run $DS3 --gbs 4 --recipe megatron-bf16 --steps 3 --quiet -o "$TMP/ds.csv"
expect_rc "deepseek-v3 shrunk (MTP): exit 0" 0
expect_out "deepseek-v3 shrunk: exact terms as planned, the transient within the plan's" \
    "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_eq "deepseek-v3 shrunk: weight_gemm by hand, planned and measured" \
    "$(grep '^memory,weight_gemm,' "$TMP/ds.csv" | cut -d, -f4,5)" "11321344,11321344"
# the transient, 32 tokens, 64 routed rows; planned (the MoE layer): d(residual) 32 x 64 x 2 = 4,096 + dX's buffer,
# which also holds the attention output's gradient 32 x (4 heads x 128 values) x 2 = 32,768 (wider than dX's 64
# columns) + d(FC1 output) of the shared expert at the dense width 32 x 256 x 2 = 16,384 and of the rows 64 x 64 x 2
# = 8,192 + SwiGLU's d(output) 32 x 128 x 2 = 8,192 and 64 x 32 x 2 = 4,096 + the sigmoid router 32 x (8 x 6 + 2 x
# 4) = 1,792 (no fp32 d(scores) in this executor, as above) + d(MoE input) 4,096 + d(Q, K, V) beyond d(FC1
# output)'s buffer 32 x (4 x (2 x 192 + 128) - 256) x 2 = 114,688 + the latent rows 32 x (512 + 64 + 4 x 256 + 2 x
# 1,536) x 2 = 299,008 + d(probabilities) 32 x 4 x 32 x 4 = 16,384 + dispatch and combine 64 x 64 x 4 = 16,384 =
# 526,080, planned and held
expect_eq "deepseek-v3 shrunk: the transient by hand, planned and measured" \
    "$(grep '^memory,transient,' "$TMP/ds.csv" | cut -d, -f4,5)" "526080,526080"
# with its own recipe, one micro-batch: + the FP8 output gradient of the widest linear output, q_down's 32 x 1,536,
# in both layouts (1 B), 98,304, and its 1x128 tiles (32 x 12 + 1,536 x 1) x 4 = 7,680: 632,064 planned and held
# (with ep 1 the dispatched rows stay BF16)
run run $DS3 --gbs 1 --recipe deepseek-v3 --steps 1 --quiet -o "$TMP/ds8.csv"
expect_rc "deepseek-v3 shrunk, its own recipe: exit 0" 0
expect_eq "deepseek-v3 shrunk, its own recipe: the transient by hand, planned and measured" \
    "$(grep '^memory,transient,' "$TMP/ds8.csv" | cut -d, -f4,5)" "632064,632064"
# --mtp-weight sets the MTP loss's weight; on a model without MTP it is refused before any work
run run --catalog "$TMP/mla" --model tiny-mtp --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 1 --mtp-weight 0.1
expect_line "--mtp-weight 0.1: the model line" "  model: 2 layers \+ 1 MTP depth \(weight 0\.1\), hidden 64,.*"
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 1 --mtp-weight 0.1 \
    -o "$TMP/nomtp.csv"
expect_rc "--mtp-weight without MTP: exit 64" 64
expect_err "--mtp-weight without MTP: the reason" "--mtp-weight 0.1: model tiny-mla has no multi-token prediction (mtp_layers 0)"
expect_eq "--mtp-weight without MTP: nothing written" "$(ls "$TMP"/nomtp.csv 2>/dev/null | wc -l)" 0
# a dense GPT row with linear biases and one MTP depth (the planner's MoE path): its "other" values by hand, LayerNorm
# weights and biases 2 x 2 x 64 = 256 + biases QKV 192 + proj 64 + FC1 256 + FC2 64 = 832 a layer x 3 (2 layers and
# the depth's) = 2,496 + the depth's 3 LayerNorms 384 + embedding 256 x 64 = 16,384 + positions 32 x 64 = 2,048 +
# final norm 128 (tied head) = 21,440 x 2 B = 42,880 (the plan counted no bias there until this tree: 39,424)
echo 'tiny-gpt-mtp,2,64,256,4,4,16,256,32,layernorm,gelu,learned,yes,yes,no,,,,,,,,,,,,,,1,"test model"' \
    >>"$TMP/mla/models.csv"
run run --catalog "$TMP/mla" --model tiny-gpt-mtp --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 2 -o "$TMP/gmtp.csv"
expect_rc "tiny-gpt-mtp (biases): exit 0" 0
expect_out "tiny-gpt-mtp (biases): exact terms as planned" "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_eq "tiny-gpt-mtp (biases): weight_other by hand, planned and measured" \
    "$(grep '^memory,weight_other,' "$TMP/gmtp.csv" | cut -d, -f4,5)" "42880,42880"
# two depths (tiny-mla with mtp_layers 2), run one after the other: depth 2 reads token i+2 and depth 1's block
# output, predicts token i+3 (each sequence's last 2 positions masked); 30 steps, the main loss and each depth's
# fall, every exact term as planned. By hand, one depth more than tiny-mtp: weight_gemm 132,352 + eh_proj 64 x 128
# x 2 = 16,384 + the block's attention 7,040 and shared expert 6,144 weights x 2 = 26,368: 175,104; act_output a
# third 41,088: 123,264; router_bias 8 x 3 MoE layers x 4 = 96
echo 'tiny-mtp2,2,64,128,4,4,12,256,32,rmsnorm,swiglu,rope,no,no,no,8,2,1,32,1,sigmoid,4,2,24,16,8,4,8,2,"test model"' \
    >>"$TMP/mla/models.csv"
run run --catalog "$TMP/mla" --model tiny-mtp2 --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 30 --lr 3e-3 \
    --log-every 29 --loss-log "$TMP/mtp2.loss" -o "$TMP/mtp2.csv"
expect_rc "tiny-mtp2: exit 0" 0
expect_out "tiny-mtp2: exact terms as planned, none outside" "every exact term matches the plan byte for byte; 0 terms outside tolerance"
expect_line "tiny-mtp2: the model line names the depths" "  model: 2 layers \+ 2 MTP depths \(weight 0\.3\), hidden 64,.*"
expect_line "tiny-mtp2: both depths' losses on the step line" 'step +1 +loss +5\.[0-9]{4} +mtp +5\.[0-9]{4} +5\.[0-9]{4} .*'
expect_eq "tiny-mtp2: the loss log's columns" "$(head -1 "$TMP/mtp2.loss")" "step,loss,mtp_loss_1,mtp_loss_2"
expect_eq "tiny-mtp2: the loss and each depth's fall by a third in 30 steps" "$(awk -F, 'NR == 2 { for (i = 2; i <= 4; i++) f[i] = $i }
    NR == 31 { ok = 1; for (i = 2; i <= 4; i++) if (!($i < 0.67 * f[i])) ok = 0; print ok }' "$TMP/mtp2.loss")" 1
for t in "weight_gemm 175104" "act_output 123264" "router_bias 96"; do
    expect_eq "tiny-mtp2: ${t% *} by hand, planned and measured" \
        "$(grep "^memory,${t% *}," "$TMP/mtp2.csv" | cut -d, -f4,5)" "${t#* },${t#* }"
done
# through a checkpoint: 2 + 2 steps of tiny-mtp2 are 4 uninterrupted ones, the main and both depths' losses bit for
# bit; another depth is refused naming the checkpoint (its layer count: 2 + 2 blocks)
M2="--catalog $TMP/mla --model tiny-mtp2 --mbs 1 --gbs 4 --recipe megatron-bf16 --quiet"
run run $M2 --steps 4 --loss-log "$TMP/m2.loss"
run run $M2 --steps 2 --save "$TMP/m2.ckpt" --loss-log "$TMP/m2a.loss"
expect_rc "tiny-mtp2: 2 steps and --save exit 0" 0
run run $M2 --steps 2 --resume "$TMP/m2.ckpt" --loss-log "$TMP/m2b.loss"
expect_rc "tiny-mtp2: --resume and 2 more exit 0" 0
expect_eq "tiny-mtp2: 2 + 2 steps through a checkpoint = 4 uninterrupted, every loss bit for bit" \
    "$(sed -n '2,3p' "$TMP/m2a.loss"; sed -n '2,3p' "$TMP/m2b.loss")" "$(sed -n '2,5p' "$TMP/m2.loss")"
run run $M2 --steps 1 --resume "$TMP/m2.ckpt" --mtp-layers 1
expect_rc "tiny-mtp2: resumed at one depth: refused" 65
expect_err "tiny-mtp2: resumed at one depth: the reason" "m2.ckpt: checkpoint has layers 4, this run has 3"
# --mtp-layers overrides the row's depth: 17 is out of the column's range, 2 runs tiny-mla with two depths (a
# sequence of 2 positions leaves depth 2 none to predict: refused, nothing written), 1 runs tiny-mla with a depth
# (as tiny-mtp above) and 0 runs tiny-mtp without one
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 1 --mtp-layers 2 --quiet
expect_rc "--mtp-layers 2: exit 0" 0
expect_out "--mtp-layers 2: exact terms as planned" "every exact term matches the plan byte for byte; 0 terms outside tolerance"
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 1 --mtp-layers 2 --seq 2 \
    -o "$TMP/seq2.csv"
expect_rc "--mtp-layers 2 --seq 2: usage" 64
expect_err "--mtp-layers 2 --seq 2: the reason" "--seq 2 must exceed the 2 multi-token prediction depths of model tiny-mla"
expect_no_out "--mtp-layers 2 --seq 2: nothing run"
expect_eq "--mtp-layers 2 --seq 2: nothing written" "$(ls "$TMP"/seq2.csv 2>/dev/null | wc -l)" 0
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 1 --mtp-layers 17
expect_rc "--mtp-layers 17: usage" 64
expect_err "--mtp-layers 17: the reason" "--mtp-layers: '17' is too large (at most 16)"
run run --catalog "$TMP/mla" --model tiny-mla --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 2 --mtp-layers 1
expect_rc "tiny-mla --mtp-layers 1: exit 0" 0
expect_line "tiny-mla --mtp-layers 1: the model line names the depth" "  model: 2 layers \+ 1 MTP depth \(weight 0\.3\), hidden 64,.*"
expect_out "tiny-mla --mtp-layers 1: exact terms as planned" "every exact term matches the plan byte for byte; 0 terms outside tolerance"
run run --catalog "$TMP/mla" --model tiny-mtp --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 2 --mtp-layers 0
expect_rc "tiny-mtp --mtp-layers 0: exit 0" 0
expect_line "tiny-mtp --mtp-layers 0: no depth" "  model: 2 layers, hidden 64,.*"
# with its own recipe (block-scaled E4M3) on tiny-mtp: every exact term as planned
run run --catalog "$TMP/mla" --model tiny-mtp --mbs 1 --gbs 4 --recipe deepseek-v3 --steps 2 --quiet
expect_rc "tiny-mtp deepseek-v3: exit 0 (transient 120,064 B planned, 110,848 held)" 0
expect_out "tiny-mtp deepseek-v3: exact terms as planned" "every exact term matches the plan byte for byte"
run run $MOE --recipe fp8lm --steps 1
expect_rc "fp8lm on experts: unavailable" 69
expect_err "fp8lm: the reason" "recipe fp8lm on model mixtral-8x7b: the executor runs FP8 expert GEMMs as Transformer Engine's grouped linears"
run run $MOE --topk 9 --recipe megatron-bf16 --steps 1
expect_rc "top-k above the experts: usage" 64
expect_err "top-k: the flag and value" "--topk 9: must be between 1 and the 8 experts"
run run --model llama3-8b --layers 1 --hidden 32 --heads 4 --seq 16 --vocab 64 --experts 4 --recipe megatron-bf16 --steps 1
expect_rc "--experts on a dense model: usage" 64
expect_err "--experts on a dense model: the reason" "llama3-8b has no experts"

# --routing-log: every step's token copies per MoE layer and expert (one rank: rank 0's), 2 steps x 2 layers x 8
# experts = 32 rows, each step's layer summing to 32 tokens x top-2 = 64; refused on a dense model before any
# work, and where it cannot be written
run run $MOE --recipe megatron-bf16 --steps 2 --quiet --routing-log "$TMP/routing.csv"
expect_rc "--routing-log exits 0" 0
expect_eq "--routing-log: its header" "$(head -1 "$TMP/routing.csv")" "step,layer,rank,expert,token_copies"
expect_eq "--routing-log: 32 rows" "$(tail -n +2 "$TMP/routing.csv" | wc -l)" 32
expect_eq "--routing-log: 64 copies every step and layer" \
    "$(awk -F, 'NR > 1 { s[$1 "," $2] += $5 } END { for (k in s) print s[k] }' "$TMP/routing.csv" | sort -u)" 64
run run --model llama3-8b --layers 1 --hidden 32 --heads 4 --seq 16 --vocab 64 --recipe megatron-bf16 --steps 1 \
    --routing-log "$TMP/no.csv"
expect_rc "--routing-log on a dense model: usage" 64
expect_err "--routing-log on a dense model: the reason" "--routing-log: model llama3-8b has no experts"
expect_no_out "--routing-log on a dense model: nothing built"
run run $MOE --recipe megatron-bf16 --steps 1 --routing-log "$TMP/no/such/r.csv"
expect_rc "--routing-log into a missing folder: 73" 73
expect_err "--routing-log: the flag and the path" "--routing-log: cannot write $TMP/no/such/r.csv"
expect_eq "nothing written" "$(ls "$TMP"/no* 2>/dev/null | wc -l)" 0

# --ep: checked against the experts and the ranks before any work (the planner's checks; runs over ranks:
# tests/cli/mpi_ep.sh)
run run $MOE --ep 3 --recipe megatron-bf16 --steps 1
expect_rc "--ep 3 with 8 experts: usage" 64
expect_err "--ep 3: the value and the experts" "--ep 3 --etp 1: mixtral-8x7b's 8 experts must be divisible by ep"
run run $MOE --ep 2 --recipe megatron-bf16 --steps 1
expect_rc "--ep 2 on one rank: usage" 64
expect_err "--ep 2 on one rank: the ranks" "ep*etp = 2 must divide tp*cp*dp = 1"
# two ranks, 4 experts each: persistent memory, the dense collectives and the all-to-alls (with the routing the
# run measured) exact on both ranks, exit 0 (every layout: tests/cli/mpi_ep.sh)
if command -v mpirun >/dev/null 2>&1; then
    mpi_run 2 "$FP8PLAN" run $MOE --ep 2 --recipe megatron-bf16 --steps 2 --mbs 1 --gbs 2 --quiet
    expect_rc "mpirun -np 2 --ep 2: every term as planned, exit 0" 0
    expect_out "--ep 2: the all-to-alls" "every rank sent the plan's expert all-to-all bytes for the measured routing"
    # 8 experts x (2 x 224 x 64 + 64 x 224) x 2 layers = 688,128 BF16 weights; 4 a rank: 688,128 B
    expect_line "--ep 2: half the experts a rank" "  weight_expert +688128 +688128 +688128 +2/2 +exact"
    # tensor parallelism (quick tier; every layout: tests/cli/mpi_ep.sh): tp 2 x dp 2, ep 2 over the 4 ranks (MoE
    # folding: EP groups {0, 1} and {2, 3}), 2 KV heads so tp 2 divides them. A rank's 4 experts as at ep 2 above
    # (688,128 B); the router weight (8 x 64) is replicated and its gradient joins the norms' over TP: per layer
    # 2 RMSNorms 128 + router 512, x 2 layers + the final norm 64 = 1,344 FP32 = 5,376 B, sent 5,376 x 2(2-1)/2;
    # the expert gradients over the tp x dp / ep = 2 ranks holding the same experts: 344,064 x 4 = 1,376,256 B
    mpi_run 4 "$FP8PLAN" run $MOE --kv-heads 2 --tp 2 --ep 2 --recipe megatron-bf16 --steps 2 --mbs 1 --gbs 2 --quiet
    expect_rc "mpirun -np 4 --tp 2 --ep 2: every term as planned, exit 0" 0
    expect_out "--tp 2 --ep 2: the all-to-alls" "every rank sent the plan's expert all-to-all bytes for the measured routing"
    expect_line "--tp 2 --ep 2: 4 experts a rank" "  weight_expert +688128 +688128 +688128 +4/4 +exact"
    expect_line "--tp 2 --ep 2: norms and router over TP, by hand" "  tp_norm_grad_allreduce +5376 +5376 +5376 +4/4 +exact"
    expect_line "--tp 2 --ep 2: experts over their EDP group" "  edp_grad_allreduce +1376256 +1376256 +1376256 +4/4 +exact"
    # sharded states (quick tier; every layout: tests/cli/mpi_zero.sh): 4 ranks, ep 2, so each expert's states
    # spread over its expert-data-parallel group of 2: 344,064 FP32 master elements a rank's experts, 172,032 a
    # rank (688,128 B); their FP32 gradients reduce-scattered over that group, 1,376,256 B, half leaving
    mpi_run 4 "$FP8PLAN" run $MOE --ep 2 --zero 1 --recipe megatron-bf16 --steps 2 --mbs 1 --gbs 4 --quiet
    expect_rc "mpirun -np 4 --ep 2 --zero 1: every term as planned, exit 0" 0
    expect_line "--ep 2 --zero 1: the experts' master sharded over EDP" "  master_expert +688128 +688128 +688128 +4/4 +exact"
    expect_line "--ep 2 --zero 1: the experts' reduce-scatter" "  edp_grad_reducescatter +688128 +688128 +688128 +4/4 +exact"
    # deepseek-v3's FP8 dispatch (exec/model/model_moe_ep_fp8.c): a row is 64 E4M3 codes + one 1x128 FP32 scale
    # = 68 B; a rank dispatches 2 steps x 2 micro-batches x 2 layers x 32 tokens x top-2 = 512 rows: 34,816 B of
    # payload forward and backward alike, 17,408 leaving under uniform routing; the combine stays BF16.
    # The transient, rank 0: the one-rank deepseek-v3 run's 212,736 (above) with the token side's dispatch buffer
    # the FP8 send buffer the rows are quantized into, 64 rows x 68 B = 4,352 where one rank counts them BF16
    # (64 x 64 x 2 = 8,192): - 3,840; and the transposed dY tiles of 4 local experts, 448 x 4 x 4 = 7,168 where
    # 8 held 14,336: - 7,168; 201,728 planned and held (before, the arena kept a BF16 copy: 4,096 B over)
    mpi_run 2 "$FP8PLAN" run $MOE --ep 2 --recipe deepseek-v3 --steps 2 --mbs 1 --gbs 4 --quiet -o "$TMP/ep8.csv"
    expect_rc "mpirun -np 2 --ep 2 deepseek-v3: exit 0" 0
    expect_eq "deepseek-v3 --ep 2: rank 0's transient by hand, planned and measured" \
        "$(grep '^0,memory,transient,' "$TMP/ep8.csv" | cut -d, -f5,6)" "201728,201728"
    expect_out "deepseek-v3 --ep 2: the all-to-alls" \
        "every rank sent the plan's expert all-to-all bytes for the measured routing"
    expect_line "deepseek-v3 --ep 2: rank 0's FP8 dispatch, by hand" \
        "     0 ep_dispatch_fwd +[0-9]+ +[0-9]+ +34816 +34816 +17408  exact"
    expect_line "deepseek-v3 --ep 2: rank 1's FP8 output-gradient dispatch, by hand" \
        "     1 ep_dispatch_bwd +[0-9]+ +[0-9]+ +34816 +34816 +17408  exact"
    # the MTP loss is the data-parallel mean, as the main loss is: every rank's MTP token losses gathered and
    # summed in global token order (exec/model/model_step.c global_mtp_loss), so step 1 (the same weights on
    # every rank) is one rank's bit for bit; before, each rank reported the mean of its own micro-batches
    # (rank 0: 2 of the 4 sequences). The later steps within mpi_run.sh's DP bound, 1e-4 relative.
    M="run --catalog $TMP/mla --model tiny-mtp --mbs 1 --gbs 4 --recipe megatron-bf16 --steps 3 --quiet"
    run $M --loss-log "$TMP/mtp1.csv"
    expect_eq "tiny-mtp: the loss log's MTP column" "$(head -1 "$TMP/mtp1.csv")" "step,loss,mtp_loss"
    for ep in 1 2; do
        mpi_run 2 "$FP8PLAN" $M --ep $ep --loss-log "$TMP/mtp2.csv"
        expect_rc "tiny-mtp np 2 ep $ep: exit 0" 0
        expect_eq "tiny-mtp np 2 ep $ep: step 1's MTP loss is one rank's, bit for bit" \
            "$(sed -n 2p "$TMP/mtp2.csv" | cut -d, -f3)" "$(sed -n 2p "$TMP/mtp1.csv" | cut -d, -f3)"
        expect_eq "tiny-mtp np 2 ep $ep: every step's MTP loss within 1e-4 of one rank's" \
            "$(awk -F, 'NR == FNR { a[$1] = $3; next } FNR > 1 { d = ($3 - a[$1]) / a[$1]; if (d < 0) d = -d;
                if (d > 1e-4 || $3 == "") bad++ } END { print bad + 0 }' "$TMP/mtp1.csv" "$TMP/mtp2.csv")" 0
    done
    # --save/--resume over expert parallelism (a part per EP rank, exec/ckpt/ckpt_layout.h; every recipe and
    # the refusals: tests/cli/mpi_resume.sh): 4 steps, and 2 + 2 through a checkpoint, give the same losses (MTP
    # included) and the same checkpoint after step 4, byte for byte
    mpi_run 2 "$FP8PLAN" $M --ep 2 --steps 4 --loss-log "$TMP/r4.csv" --save "$TMP/r4.ck"
    expect_rc "tiny-mtp ep 2: 4 steps and --save exit 0" 0
    mpi_run 2 "$FP8PLAN" $M --ep 2 --steps 2 --loss-log "$TMP/r2a.csv" --save "$TMP/r2.ck"
    mpi_run 2 "$FP8PLAN" $M --ep 2 --steps 2 --loss-log "$TMP/r2b.csv" --resume "$TMP/r2.ck" --save "$TMP/r2b.ck"
    expect_rc "tiny-mtp ep 2: --resume and 2 more exit 0" 0
    expect_eq "tiny-mtp ep 2: 2 + 2 steps through a checkpoint = 4, bit for bit" \
        "$({ cat "$TMP/r2a.csv"; tail -n +2 "$TMP/r2b.csv"; } | cmp -s - "$TMP/r4.csv" && echo same)" same
    expect_eq "tiny-mtp ep 2: the checkpoints after step 4, byte for byte" \
        "$(cmp -s "$TMP/r4.ck" "$TMP/r2b.ck" && echo same)" same
else
    skip "--ep 2 under mpirun" "mpirun: install openmpi-bin (make installs it as root)"
fi

finish
