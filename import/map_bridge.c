/* import/map_bridge.c — a Megatron-Bridge / NeMo 2 ConfigContainer (YAML) read as the Megatron-LM arguments
 * its fields stand for: model.* are Megatron-Core TransformerConfig fields (model.num_layers is
 * --num-layers), train.*, ddp.*, optimizer.* and comm_overlap.* the training loop's. NVIDIA's recipes are
 * the megatron-core stack (models/stacks.csv); what the file switches off maps back to the option. */
#include <stdio.h>
#include <string.h>

#include "import/import.h"

/* {field, argument, 1 when false in the file means the argument is given} */
static const struct {
    const char *field, *arg;
    int inverted;
} fields[] = {
    {"model.num_layers", "--num-layers", 0},
    {"model.hidden_size", "--hidden-size", 0},
    {"model.ffn_hidden_size", "--ffn-hidden-size", 0},
    {"model.num_attention_heads", "--num-attention-heads", 0},
    {"model.num_query_groups", "--num-query-groups", 0},
    {"model.kv_channels", "--kv-channels", 0},
    {"model.vocab_size", "--vocab-size", 0},
    {"model.seq_length", "--seq-length", 0},
    {"model.max_position_embeddings", "--max-position-embeddings", 0},
    {"model.normalization", "--normalization", 0},
    {"model.gated_linear_unit", "--swiglu", 0},
    {"model.share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", 1},
    {"model.add_bias_linear", "--disable-bias-linear", 1},
    {"model.qk_layernorm", "--qk-layernorm", 0},
    {"model.position_embedding_type", "--position-embedding-type", 0},
    {"model.make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", 0},
    {"model.tensor_model_parallel_size", "--tensor-model-parallel-size", 0},
    {"model.pipeline_model_parallel_size", "--pipeline-model-parallel-size", 0},
    {"model.virtual_pipeline_model_parallel_size", "--virtual-pipeline-model-parallel-size", 0},
    {"model.context_parallel_size", "--context-parallel-size", 0},
    {"model.num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers", 0},
    {"model.num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers", 0},
    {"model.pipeline_model_parallel_layout", "--pipeline-model-parallel-layout", 0}, /* a string, or a list of chunks */
    {"model.account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split", 0},
    {"model.account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split", 0},
    {"model.expert_model_parallel_size", "--expert-model-parallel-size", 0},
    {"model.sequence_parallel", "--sequence-parallel", 0},
    {"model.num_moe_experts", "--num-experts", 0},
    {"model.multi_latent_attention", "--multi-latent-attention", 0},
    {"model.expert_tensor_parallel_size", "--expert-tensor-parallel-size", 0},
    {"model.mtp_num_layers", "--mtp-num-layers", 0},
    {"model.recompute_modules", "--recompute-modules", 0},
    {"model.recompute_granularity", "--recompute-granularity", 0},
    {"model.recompute_method", "--recompute-method", 0},
    {"model.recompute_num_layers", "--recompute-num-layers", 0},
    {"model.gradient_accumulation_fusion", "--no-gradient-accumulation-fusion", 1},
    {"model.tp_comm_overlap", "--tp-comm-overlap", 0},
    {"model.bf16", "--bf16", 0},
    {"model.fp16", "--fp16", 0},
    {"model.fp8", "--fp8-format", 0},
    {"model.fp8_recipe", "--fp8-recipe", 0},
    {"model.fp8_param", "--fp8-param-gather", 0},
    {"mixed_precision.bf16", "--bf16", 0},
    {"mixed_precision.fp16", "--fp16", 0},
    {"mixed_precision.fp8", "--fp8-format", 0},
    {"mixed_precision.fp8_recipe", "--fp8-recipe", 0},
    {"mixed_precision.fp8_param", "--fp8-param-gather", 0},
    {"mixed_precision.fp8_param_gather", "--fp8-param-gather", 0}, /* kept equal to fp8_param (mixed_precision.py) */
    {"ddp.fp8_param_gather", "--fp8-param-gather", 0},
    {"dataset.seq_length", "--seq-length", 0},
    {"optimizer.use_precision_aware_optimizer", "--use-precision-aware-optimizer", 0},
    {"optimizer.main_grads_dtype", "--main-grads-dtype", 0}, /* a torch.dtype: fp32, or its YAML dump's _target_ */
    {"optimizer.main_grads_dtype._target_", "--main-grads-dtype", 0},
    {"optimizer.main_params_dtype", "--main-params-dtype", 0},
    {"optimizer.main_params_dtype._target_", "--main-params-dtype", 0},
    {"optimizer.exp_avg_dtype", "--exp-avg-dtype", 0},
    {"optimizer.exp_avg_dtype._target_", "--exp-avg-dtype", 0},
    {"optimizer.exp_avg_sq_dtype", "--exp-avg-sq-dtype", 0},
    {"optimizer.exp_avg_sq_dtype._target_", "--exp-avg-sq-dtype", 0},
    {"optimizer.optimizer_cpu_offload", "--optimizer-cpu-offload", 0},
    {"model.cuda_graph_impl", "--cuda-graph-impl", 0},
    {"model.cuda_graph_scope", "--cuda-graph-scope", 0},
    {"model.enable_cuda_graph", "--enable-cuda-graph", 0},
    {"model.external_cuda_graph", "--external-cuda-graph", 0},
    {"model.fine_grained_activation_offloading", "--fine-grained-activation-offloading", 0},
    {"model.offload_modules", "--offload-modules", 0},
    {"model.cpu_offloading", "--cpu-offloading", 0},
    {"model.cpu_offloading_num_layers", "--cpu-offloading-num-layers", 0},
    {"train.micro_batch_size", "--micro-batch-size", 0},
    {"train.global_batch_size", "--global-batch-size", 0},
    {"ddp.use_distributed_optimizer", "--use-distributed-optimizer", 0},
    {"optimizer.use_distributed_optimizer", "--use-distributed-optimizer", 0},
    {"ddp.overlap_grad_reduce", "--overlap-grad-reduce", 0},
    {"ddp.overlap_param_gather", "--overlap-param-gather", 0},
    {"ddp.grad_reduce_in_fp32", "--accumulate-allreduce-grads-in-fp32", 0},
    {"comm_overlap.tp_comm_overlap", "--tp-comm-overlap", 0},
    {"comm_overlap.overlap_p2p_comm", "--overlap-p2p-communication", 0},
    {"comm_overlap.overlap_grad_reduce", "--overlap-grad-reduce", 0},
    {"comm_overlap.overlap_param_gather", "--overlap-param-gather", 0},
};

/* TransformerConfig's MoE and MLA fields whose argument is the field's name in kebab case after "--"
 * (moe_router_topk is --moe-router-topk); the MLA ranks likewise (q_lora_rank is --q-lora-rank), and
 * use_transformer_engine_op_fuser (core_v0.18.0, argument_utils.py's ArgumentGroupFactory names it so). */
static const char *const kebab[] = {"moe_router_topk",
                                    "moe_ffn_hidden_size",
                                    "moe_shared_expert_intermediate_size",
                                    "moe_layer_freq",
                                    "moe_token_dispatcher_type",
                                    "moe_flex_dispatcher_backend",
                                    "moe_enable_deepep",
                                    "moe_grouped_gemm",
                                    "moe_permute_fusion",
                                    "moe_router_padding_for_fp8",
                                    "moe_router_score_function",
                                    "moe_router_enable_expert_bias",
                                    "moe_aux_loss_coeff",
                                    "moe_z_loss_coeff",
                                    "moe_router_load_balancing_type",
                                    "moe_router_topk_scaling_factor",
                                    "moe_router_pre_softmax",
                                    "moe_router_dtype",
                                    "moe_router_bias_update_rate",
                                    "moe_token_drop_policy",
                                    "moe_shared_expert_overlap",
                                    "moe_pad_expert_input_to_capacity",
                                    "moe_expert_capacity_factor",
                                    "moe_router_num_groups",
                                    "moe_router_group_topk",
                                    "q_lora_rank",
                                    "kv_lora_rank",
                                    "qk_head_dim",
                                    "qk_pos_emb_head_dim",
                                    "v_head_dim",
                                    "overlap_moe_expert_parallel_comm",
                                    "moe_deepep_num_sms",
                                    "use_transformer_engine_op_fuser"};

static const char *arg_of(const void *ctx, ImportKv *kv)
{
    static char arg[IMPORT_KEY_MAX];
    (void)ctx;
    if (!strncmp(kv->key, "model.", 6))
        for (size_t i = 0; i < sizeof kebab / sizeof *kebab; i++)
            if (!strcmp(kv->key + 6, kebab[i])) {
                if (!strcmp(kv->val, "null") || !strcmp(kv->val, "~")) return NULL;
                snprintf(arg, sizeof arg, "--%s", kebab[i]);
                for (char *p = arg + 2; *p; p++)
                    if (*p == '_') *p = '-';
                return arg;
            }
    /* the list form of the pipeline layout: model.pipeline_model_parallel_layout.<i> is chunk i's layer names */
    static const char lay[] = "model.pipeline_model_parallel_layout.";
    if (!strncmp(kv->key, lay, sizeof lay - 1) && kv->key[sizeof lay - 1] &&
        strspn(kv->key + sizeof lay - 1, "0123456789") == strlen(kv->key + sizeof lay - 1))
        return "--bridge-layout-chunk";
    /* a list of CudaGraphScope enums, dumped as {_target_: ...CudaGraphScope, _call_: true, _args_: [value]} each */
    static const char gs[] = "model.cuda_graph_scope.";
    if (!strncmp(kv->key, gs, sizeof gs - 1)) return "--bridge-graph-scope-item";
    /* mixed_precision given as a recipe name: "bf16_mixed", "bf16_with_fp8_delayed_scaling_mixed", ... */
    if (!strcmp(kv->key, "mixed_precision")) return "--bridge-mixed-precision"; /* a recipe name: map_megatron.c */
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (!strcmp(kv->key, fields[i].field)) {
            int t = import_true(kv->val);
            if (fields[i].inverted && t >= 0) snprintf(kv->val, sizeof kv->val, "%s", t ? "false" : "true");
            /* YAML null / false for a value-taking field: not set */
            if (!strcmp(kv->val, "null") || !strcmp(kv->val, "~") ||
                (t == 0 &&
                 (!strcmp(fields[i].arg, "--fp8-format") || !strcmp(fields[i].arg, "--recompute-granularity") ||
                  !strcmp(fields[i].arg, "--num-experts"))))
                return NULL;
            if (!strcmp(fields[i].arg, "--fp8-recipe") && !strcmp(kv->val, "delayed")) return fields[i].arg;
            if (!strcmp(fields[i].arg, "--fp8-recipe") && !strcmp(kv->val, "current"))
                snprintf(kv->val, sizeof kv->val, "tensorwise");
            if (!strcmp(fields[i].arg, "--accumulate-allreduce-grads-in-fp32") && t == 0)
                return snprintf(kv->val, sizeof kv->val, "true"), "--grad-reduce-in-bf16";
            return fields[i].arg;
        }
    return NULL;
}

Status import_map_bridge(const ImportKvList *kv, ImportResult *r, Err *e)
{
    return import_map_megatron_with(kv, "megatron-core", arg_of, NULL, r, e);
}
