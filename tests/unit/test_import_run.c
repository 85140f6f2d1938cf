/* tests/unit/test_import_run.c — the run options import reads beside the layout and the recipe, through
 * import_parse: Megatron-Core's pipeline layout (--pipeline-model-parallel-layout, Megatron-Bridge's list form,
 * --account-for-embedding/loss-in-pipeline-split), the precision-aware optimizer's states, CUDA graphs and
 * fine-grained activation offloading; the flags each file becomes and, where the planner has no option or
 * Megatron-Core refuses the setting, the error naming the file, line and setting. Expected flags are read off
 * the texts by hand (import/map_layout.h, import/map_features.h say what Megatron-Core does with each). */
#include <stdio.h>
#include <string.h>

#include "import/import.h"
#include "support/import_fixtures.h"
#include "test.h"

/* Files with these settings: {file, text, the flags}. DENSE7 is a dense model of 7 layers with BF16 and the
 * distributed optimizer, MOE3 one of 3 layers and 8 experts. */
#define DENSE7                                                                                            \
    "--num-layers 7 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16 " \
    "--use-distributed-optimizer\n"
#define MOE3                                                                                                  \
    "--num-layers 3 --hidden-size 64 --num-attention-heads 4 --seq-length 8 --vocab-size 10 --num-experts 8 " \
    "--moe-grouped-gemm --moe-token-dispatcher-type alltoall --bf16\n"
static void test_accepted(void)
{
    static const struct {
        const char *name, *text, *flags;
    } c[] = {
        /* "E|(t|)*6t,L" = E | t | t | t | t | t | t | tL: 8 chunks on pp 4, so vpp 2; chunk c on rank c mod 4: rank 0
         * holds chunks 0 (E) and 4 (t) = 1 decoder layer, ranks 1 and 2 chunks 1+5 and 2+6 = 2, rank 3 chunks 3 (t)
         * and 7 (tL) = 2; 1 + 2 + 2 + 2 = 7 layers. Megatron's embedding-accounted split: s = 2 = vpp, first s - 1 */
        {"l1.sh", DENSE7 "--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout \"E|(t|)*6t,L\"\n",
         "--stack megatron-lm --seq 128 --dist-opt --pp 4 --first-stage-layers 1 --last-stage-layers 2 "
         "--custom-pp-layout --vpp 2 --recipe megatron-bf16"},
        /* Megatron-Bridge's list form, its vpp 2 agreeing (written where the file says it, not again) */
        {"l2.yaml",
         "model:\n  num_layers: 7\n  hidden_size: 256\n  num_attention_heads: 8\n  seq_length: 128\n"
         "  vocab_size: 1000\n  pipeline_model_parallel_size: 4\n  virtual_pipeline_model_parallel_size: 2\n"
         "  num_layers_in_first_pipeline_stage: null\n  pipeline_model_parallel_layout:\n  - [embedding]\n"
         "  - [decoder]\n  - [decoder]\n  - [decoder]\n  - [decoder]\n  - [decoder]\n  - [decoder]\n"
         "  - [Decoder, loss]\nmixed_precision: bf16_mixed\n",
         "--stack megatron-core --seq 128 --pp 4 --vpp 2 --first-stage-layers 1 --last-stage-layers 2 "
         "--custom-pp-layout --recipe megatron-bf16"},
        /* Megatron-Bridge's DeepSeek-V3 layout for PP 8 x VP 2 ([E + 4t], 14 x [4t], [t, mtp, loss]) as a string: 16
         * chunks; rank 0 holds chunks 0 (E + 4) and 8 (4) = 8, ranks 1-6 4 + 4 = 8, rank 7 chunks 7 (4) and 15 (1) = 5:
         * 8 + 6 x 8 + 5 = 61 layers */
        {"l5.sh",
         "--num-layers 61 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16 "
         "--mtp-num-layers 1 --pipeline-model-parallel-size 8 --pipeline-model-parallel-layout Et*4|(t*4|)*14,tmL\n",
         "--stack megatron-lm --seq 128 --pp 8 --first-stage-layers 8 --last-stage-layers 5 --custom-pp-layout --vpp 2 "
         "--recipe megatron-bf16"},
        /* the embedding counted as a layer: (7 + 1) / 4 = 2 a rank, the first 2 - 1 = 1 */
        {"a1.sh", DENSE7 "--pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split\n",
         "--stack megatron-lm --seq 128 --dist-opt --pp 4 --first-stage-layers 1 --last-stage-layers 2 "
         "--recipe megatron-bf16"},
        /* Llama 3.1 405B's split (Megatron-Bridge): (126 + 2) / 8 = 16 a rank, 15 on each end rank */
        {"a2.yaml",
         "model:\n  num_layers: 126\n  hidden_size: 256\n  num_attention_heads: 8\n  seq_length: 128\n"
         "  vocab_size: 1000\n  pipeline_model_parallel_size: 8\n  virtual_pipeline_model_parallel_size: 8\n"
         "  account_for_embedding_in_pipeline_split: true\n  account_for_loss_in_pipeline_split: true\n"
         "mixed_precision: bf16_mixed\n",
         "--stack megatron-core --seq 128 --pp 8 --vpp 8 --first-stage-layers 15 --last-stage-layers 15 "
         "--recipe megatron-bf16"},
        /* one rank: every layer there, no flag */
        {"l3.sh", DENSE7 "--pipeline-model-parallel-layout Et*7L\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe megatron-bf16"},
        /* --num-virtual-stages-per-pipeline-rank is --vpp */
        {"l4.sh", DENSE7 "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 3\n",
         "--stack megatron-lm --seq 128 --dist-opt --pp 2 --vpp 3 --recipe megatron-bf16"},
        /* blockwise with the precision-aware optimizer's BF16 moments and gradients: the deepseek-v3 recipe, whose
         * other parameters' moments are fp32: TE's FusedAdam keeps every parameter's in bf16 */
        {"f1.sh",
         DENSE7 "--fp8-format e4m3 --fp8-recipe blockwise --use-precision-aware-optimizer --main-grads-dtype bf16 "
                "--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --main-params-dtype fp32\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe deepseek-v3 --moment-dtype bf16 --main-grad bf16"},
        /* blockwise without the precision-aware optimizer: Megatron's FP32 moments beside the recipe's BF16 ones */
        {"f3.sh", DENSE7 "--fp8-format e4m3 --fp8-recipe blockwise\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe deepseek-v3 --moment-dtype fp32"},
        /* ... and with its moments given as fp32 (Megatron-Bridge's dump of a torch.dtype): the same */
        {"f4.yaml",
         "model:\n  num_layers: 7\n  hidden_size: 256\n  num_attention_heads: 8\n  seq_length: 128\n"
         "  vocab_size: 1000\nmixed_precision: bf16_with_fp8_subchannel_scaling_mixed\n"
         "ddp:\n  use_distributed_optimizer: true\noptimizer:\n  use_precision_aware_optimizer: true\n"
         "  exp_avg_dtype:\n    _target_: torch.float32\n    _call_: false\n"
         "  exp_avg_sq_dtype:\n    _target_: torch.float32\n    _call_: false\n",
         "--stack megatron-core --seq 128 --dist-opt --recipe deepseek-v3 --moment-dtype fp32"},
        /* tensorwise FP8 with BF16 moments: te-fp8-current's FP32 ones become bf16 */
        {"f5.sh",
         DENSE7 "--fp8-format hybrid --fp8-recipe tensorwise --use-precision-aware-optimizer --exp-avg-dtype bf16 "
                "--exp-avg-sq-dtype bf16\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe te-fp8-current --moment-dtype bf16"},
        /* MXFP8 with FP32 moments stated: the recipe's, no flag */
        {"f6.sh",
         DENSE7 "--fp8-format e4m3 --fp8-recipe mxfp8 --use-precision-aware-optimizer --exp-avg-dtype fp32 "
                "--exp-avg-sq-dtype fp32\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe mxfp8"},
        /* tensorwise keeps its FP32 master in Megatron-Core (no remainders): FP32 states are the recipe's */
        {"f2.sh",
         DENSE7 "--fp8-format hybrid --fp8-recipe tensorwise --use-precision-aware-optimizer --main-grads-dtype bf16\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe te-fp8-current --main-grad bf16"},
        /* CUDA graphs of a MoE model with a capacity factor: TE's scopes as listed; local captures the router and the
         * preprocessing together; no implementation: the scope is not read */
        {"g1.sh",
         MOE3
         "--moe-expert-capacity-factor 1 --cuda-graph-impl transformer_engine --cuda-graph-scope attn moe_router\n",
         "--stack megatron-lm --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall --moe-capacity 1 "
         "--cuda-graph-scope attn,moe_router"},
        {"g2.sh", MOE3 "--enable-cuda-graph --cuda-graph-scope moe_router\n",
         "--stack megatron-lm --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall "
         "--cuda-graph-scope moe_router,moe_preprocess"},
        {"g3.sh", MOE3 "--cuda-graph-scope attn\n",
         "--stack megatron-lm --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall"},
        /* Megatron-Bridge's dump of a CudaGraphScope list: value 2 is attn, 5 moe_router, 6 moe_preprocess */
        {"g4.yaml",
         "model:\n  num_layers: 3\n  hidden_size: 64\n  num_attention_heads: 4\n  seq_length: 8\n  vocab_size: 10\n"
         "  num_moe_experts: 8\n  moe_grouped_gemm: true\n  moe_token_dispatcher_type: alltoall\n"
         "  cuda_graph_impl: transformer_engine\n  cuda_graph_scope:\n"
         "  - _target_: megatron.core.transformer.enums.CudaGraphScope\n    _call_: true\n    _args_: [2]\n"
         "  - _target_: megatron.core.transformer.enums.CudaGraphScope\n    _call_: true\n    _args_: [5]\n"
         "  - _target_: megatron.core.transformer.enums.CudaGraphScope\n    _call_: true\n    _args_: [6]\n"
         "mixed_precision: bf16_mixed\n",
         "--stack megatron-core --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall "
         "--cuda-graph-scope attn,moe_router,moe_preprocess"},
        /* fine-grained activation offloading of the experts' inputs; the modules alone are not read */
        {"o1.sh", MOE3 "--fine-grained-activation-offloading --offload-modules moe_act expert_fc1\n",
         "--stack megatron-lm --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall "
         "--offload-modules expert_fc1,moe_act"},
        {"o2.sh", MOE3 "--offload-modules core_attn\n",
         "--stack megatron-lm --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall"},
        /* Megatron-Core core_v0.18.0's fused expert ops (SwiGLU experts, no expert TP): --moe-fused-mlp */
        {"u1.sh", MOE3 "--swiglu --use-transformer-engine-op-fuser\n",
         "--stack megatron-lm --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall --moe-fused-mlp"},
        {"u2.yaml",
         "model:\n  num_layers: 3\n  hidden_size: 64\n  num_attention_heads: 4\n  seq_length: 8\n  vocab_size: 10\n"
         "  gated_linear_unit: true\n  num_moe_experts: 8\n  moe_grouped_gemm: true\n"
         "  moe_token_dispatcher_type: alltoall\n  expert_tensor_parallel_size: 1\n"
         "  use_transformer_engine_op_fuser: true\nmixed_precision: bf16_mixed\n",
         "--stack megatron-core --seq 8 --recipe megatron-bf16 --etp 1 --moe-dispatcher alltoall --moe-fused-mlp"},
        {"u3.yaml",
         "model:\n  num_layers: 3\n  hidden_size: 64\n  num_attention_heads: 4\n  seq_length: 8\n  vocab_size: 10\n"
         "  num_moe_experts: 8\n  moe_grouped_gemm: true\n  moe_token_dispatcher_type: alltoall\n"
         "  use_transformer_engine_op_fuser: false\nmixed_precision: bf16_mixed\n",
         "--stack megatron-core --seq 8 --recipe megatron-bf16 --moe-dispatcher alltoall"},
        /* a dense model: core_v0.18.0 reads it in the grouped experts only (noted ignored); no dimensions: the
         * model is --model's, which the planner checks (exit 64 on a dense one) */
        {"u4.sh", DENSE7 "--swiglu --use-transformer-engine-op-fuser\n",
         "--stack megatron-lm --seq 128 --dist-opt --recipe megatron-bf16"},
        {"u5.sh", "--bf16 --use-transformer-engine-op-fuser\n",
         "--stack megatron-lm --recipe megatron-bf16 --moe-fused-mlp"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        ImportResult r;
        Err e;
        Status st = import_parse(c[i].name, c[i].text, strlen(c[i].text), IMPORT_AUTO, &r, &e);
        CHECKF(st == ST_OK, "%s: %s", c[i].name, e.msg);
        if (st) continue;
        CHECKF(!strcmp(fx_import_flags(&r), c[i].flags), "%s: %s", c[i].name, fx_import_flags(&r));
        import_free(&r);
    }
}

/* Refused: {text, name, the message's start}; exit 65 (ST_DATA) every time. */
static void test_refused(void)
{
    static const struct {
        const char *text, *name, *want;
    } bad[] = {
        /* pipeline layouts Megatron-Core refuses, or the planner cannot say (DENSE7: 7 layers) */
        {DENSE7 "--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout Et|ttt|t|ttL\n", "p1.sh",
         "p1.sh:2: --pipeline-model-parallel-layout: pipeline ranks 1 and 2 hold 3 and 1 decoder layers"},
        {DENSE7 "--pipeline-model-parallel-size 4 --pipeline-model-parallel-layout Ettt|ttt|tL\n", "p2.sh",
         "p2.sh:2: --pipeline-model-parallel-layout: 3 chunks is not a multiple of the pipeline's 4 ranks"},
        {DENSE7 "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Ettt|ttL\n", "p3.sh",
         "p3.sh:2: --pipeline-model-parallel-layout: 5 decoder layers, not --num-layers 7"},
        {DENSE7 "--mtp-num-layers 1 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Etttm|ttttL\n",
         "p4.sh", "p4.sh:2: --pipeline-model-parallel-layout: a decoder layer after an MTP layer"},
        {DENSE7 "--mtp-num-layers 1 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Etttt|tttm|L|\n",
         "p5.sh", "p5.sh:2: --pipeline-model-parallel-layout: the last layer must be the loss"},
        {DENSE7 "--mtp-num-layers 1 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Etttt|tttm||L\n",
         "p6.sh", "p6.sh:2: --pipeline-model-parallel-layout: MTP layers before the last chunk"},
        {DENSE7 "--pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 3 "
                "--pipeline-model-parallel-layout \"(Et|)(tt|)*2,t|tt|L\"\n",
         "p7.sh", "p7.sh:2: --pipeline-model-parallel-layout: '(Et|)(tt|)*2,t|tt|L': '(' is not a layer"},
        /* Et | tt | tt | t | t | L: 6 chunks, 7 layers */
        {DENSE7 "--pipeline-model-parallel-size 2 --virtual-pipeline-model-parallel-size 2 "
                "--pipeline-model-parallel-layout Et|(tt|)*2,t|t|L\n",
         "p9.sh",
         "p9.sh:2: --virtual-pipeline-model-parallel-size 2: the layout (line 2) has 6 chunks on 2 ranks, 3 each"},
        {DENSE7 "--pipeline-model-parallel-size 2 --decoder-first-pipeline-num-layers 3 "
                "--pipeline-model-parallel-layout Ettt|ttttL\n",
         "p10.sh", "p10.sh:2: --decoder-first-pipeline-num-layers: not with a pipeline layout (line 2"},
        {DENSE7 "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout E|t*7L\n", "p11.sh",
         "p11.sh:2: --pipeline-model-parallel-layout: an end rank without decoder layers"},
        /* pp 2 x vpp 3: rank 0 holds chunks E, t, t = 2 layers, rank 1 t, t, tttL = 5: 2 = s - 1 needs s = 3 = 5 + 0/1,
         * so not Megatron's embedding-accounted form; each rank then needs vpp 3 layers */
        {DENSE7 "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout E|t|t|t|t|tttL\n", "p12.sh",
         "p12.sh:2: --pipeline-model-parallel-layout: a rank with fewer decoder layers than chunks"},
        {DENSE7 "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout Et*99999999L\n", "p13.sh",
         "p13.sh:2: --pipeline-model-parallel-layout: 'Et*99999999L' unrolls to more than"},
        {"model:\n  pipeline_model_parallel_size: 1\n  pipeline_model_parallel_layout:\n  - [embedding, encoder, "
         "loss]\n",
         "p14.yaml", "p14.yaml:4: model.pipeline_model_parallel_layout.0: 'encoder' is not a layer"},
        {DENSE7 "--pipeline-model-parallel-size 3 --account-for-embedding-in-pipeline-split\n", "p15.sh",
         "p15.sh:2: --account-for-embedding-in-pipeline-split: --num-layers 7 + 1 is not a multiple of the "
         "pipeline's 3"},
        {DENSE7 "--pipeline-model-parallel-size 2 --account-for-loss-in-pipeline-split "
                "--decoder-last-pipeline-num-layers 3\n",
         "p16.sh",
         "p16.sh:2: --account-for-loss-in-pipeline-split: not with --decoder-last-pipeline-num-layers (line 2)"},
        /* the precision-aware optimizer's states where no recipe has them */
        /* BF16 moments are a plan option, but BF16 training's master is not: the remainders refused */
        {DENSE7 "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16\n", "q1.sh",
         "q1.sh:2: --use-precision-aware-optimizer: with BF16 or delayed-scaling FP8 TE keeps the FP32 master weights "
         "as 16-bit remainders"},
        {DENSE7 "--main-grads-dtype bf16\n", "q2.sh",
         "q2.sh:2: --main-grads-dtype bf16: not fp32 without --use-precision-aware-optimizer"},
        {"--bf16 --use-precision-aware-optimizer --fp8-format hybrid --fp8-recipe mxfp8\n", "q3.sh",
         "q3.sh:1: --use-precision-aware-optimizer: needs the distributed optimizer"},
        {DENSE7 "--use-precision-aware-optimizer\n", "q4.sh",
         "q4.sh:2: --use-precision-aware-optimizer: with BF16 or delayed-scaling FP8 TE keeps the FP32 master weights "
         "as 16-bit remainders"},
        {DENSE7 "--use-precision-aware-optimizer --main-params-dtype fp16 --fp8-format hybrid --fp8-recipe mxfp8\n",
         "q5.sh", "q5.sh:2: --main-params-dtype fp16: fp16 master weights are in no recipe"},
        {DENSE7 "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype fp8 --fp8-format e4m3 "
                "--fp8-recipe blockwise\n",
         "q7.sh",
         "q7.sh:2: --exp-avg-sq-dtype fp8: TE's FusedAdam keeps fp16 and uint8 moments with a per-tensor "
         "scale each"},
        {DENSE7 "--use-precision-aware-optimizer --exp-avg-dtype fp16 --exp-avg-sq-dtype fp16 --fp8-format e4m3 "
                "--fp8-recipe blockwise\n",
         "q6.sh", "q6.sh:2: --exp-avg-dtype fp16: TE's FusedAdam keeps fp16 and uint8 moments"},
        {DENSE7 "--use-precision-aware-optimizer --exp-avg-dtype bf16 --fp8-format e4m3 --fp8-recipe blockwise\n",
         "q9.sh", "q9.sh:2: --exp-avg-dtype bf16: m and v in two dtypes: --moment-dtype keeps both in one"},
        {DENSE7 "--exp-avg-dtype float64\n", "q8.sh", "q8.sh:2: --exp-avg-dtype: 'float64' is not fp32"},
        /* CUDA graphs and offloading the planner does not model */
        {DENSE7 "--cuda-graph-impl transformer_engine --cuda-graph-scope attn\n", "c1.sh",
         "c1.sh:2: --cuda-graph-impl transformer_engine: CUDA graphs on a model without experts"},
        {MOE3 "--external-cuda-graph\n", "c2.sh",
         "c2.sh:2: --external-cuda-graph: whole layers captured (the default scope) with dropless routing"},
        {MOE3 "--cuda-graph-impl local --cuda-graph-scope full_iteration\n", "c3.sh",
         "c3.sh:2: --cuda-graph-scope: 'full_iteration': a whole iteration"},
        {MOE3 "--cuda-graph-impl transformer_engine --cuda-graph-scope attn mlp\n", "c4.sh",
         "c4.sh:2: --cuda-graph-scope: 'mlp': the dense layers' FFN"},
        {MOE3 "--cuda-graph-impl transformer_engine --cuda-graph-scope moe_preprocess\n", "c5.sh",
         "c5.sh:2: --cuda-graph-scope: moe_preprocess without moe_router"},
        {MOE3 "--fine-grained-activation-offloading --offload-modules core_attn attn_proj\n", "c6.sh",
         "c6.sh:2: --offload-modules: 'core_attn' is not a module the planner offloads"},
        {MOE3 "--fine-grained-activation-offloading\n", "c7.sh",
         "c7.sh:2: --fine-grained-activation-offloading: no --offload-modules"},
        {DENSE7 "--fine-grained-activation-offloading --offload-modules moe_act\n", "c8.sh",
         "c8.sh:2: --offload-modules moe_act: the planner offloads the routed experts' inputs"},
        {DENSE7 "--cpu-offloading-num-layers 2\n", "c9.sh", "c9.sh:2: --cpu-offloading-num-layers: activation/weight"},
        /* the fused expert ops where Megatron-Core core_v0.18.0 asserts they are not supported */
        {MOE3 "--use-transformer-engine-op-fuser\n", "u6.sh",
         "u6.sh:2: --use-transformer-engine-op-fuser: GeLU experts (no --swiglu)"},
        {MOE3 "--swiglu --expert-tensor-parallel-size 2 --use-transformer-engine-op-fuser\n", "u7.sh",
         "u7.sh:2: --use-transformer-engine-op-fuser: with expert tensor parallelism"},
        {MOE3 "--swiglu --use-transformer-engine-op-fuser --fine-grained-activation-offloading --offload-modules "
              "moe_act\n",
         "u8.sh", "u8.sh:2: --fine-grained-activation-offloading: with --use-transformer-engine-op-fuser"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ImportResult r;
        Err e;
        Status st = import_parse(bad[i].name, bad[i].text, strlen(bad[i].text), IMPORT_AUTO, &r, &e);
        CHECKF(st == ST_DATA, "%s: status %d", bad[i].name, (int)st);
        if (st == ST_OK) import_free(&r);
        CHECKF(st != ST_DATA || !strncmp(e.msg, bad[i].want, strlen(bad[i].want)), "%s: '%s', want '%s...'",
               bad[i].name, e.msg, bad[i].want);
    }
}

int main(void)
{
    RUN(test_accepted);
    RUN(test_refused);
    return test_summary();
}
