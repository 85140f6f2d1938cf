/* import/map_moe.h — Megatron-LM's mixture-of-experts, multi-latent-attention and multi-token-prediction
 * arguments (Megatron-Core TransformerConfig fields; Megatron-Bridge names them model.<field>) for the
 * Megatron mapper (import/map_megatron.c): the model's expert, latent and MTP dimensions, and the run
 * options the planner has (--ep, --etp, --moe-dispatcher, --moe-capacity, --recompute-modules, and
 * --moe-fused-mlp from --use-transformer-engine-op-fuser: a TransformerConfig field from core_v0.18.0, which
 * builds the grouped experts' FC1, activation and FC2 as Transformer Engine's fused ops, experts.py
 * _make_fused_ops; core_v0.19.0 also builds dense MLPs with them).
 *
 * What is left out takes TransformerConfig's default (megatron/core/transformer/transformer_config.py at
 * Megatron-LM d98e8a64: top-k 2, the allgather dispatcher, no grouped GEMM, softmax scores, no expert bias,
 * the expert FFN = --ffn-hidden-size, every layer a MoE layer; MLA's kv_lora_rank 32, qk_head_dim 128,
 * qk_pos_emb_head_dim 64, v_head_dim 128, no query compression: megatron/training/arguments.py). */
#ifndef FP8PLAN_IMPORT_MAP_MOE_H
#define FP8PLAN_IMPORT_MAP_MOE_H

#include "import/import.h"

typedef struct {
    unsigned experts, topk, ffn, shared, groups, group_topk, mtp, ep, etp;
    unsigned q_lora, kv_lora, qk_head, qk_pos, v_head;
    unsigned dense;       /* leading dense layers of --moe-layer-freq */
    unsigned freq_layers; /* the pattern's length (0: an integer frequency) */
    int mla, grouped_gemm, sigmoid, expert_bias, fuser;
    const char *dispatcher, *backend, *modules;
    const ImportKv *experts_kv, *topk_kv, *ffn_kv, *shared_kv, *freq_kv, *groups_kv, *group_topk_kv, *score_kv,
        *bias_kv, *mla_kv, *mtp_kv, *ep_kv, *etp_kv, *dispatcher_kv, *backend_kv, *grouped_kv, *capacity_kv,
        *modules_kv, *q_lora_kv, *kv_lora_kv, *qk_head_kv, *qk_pos_kv, *v_head_kv, *overlap_kv, *sms_kv, *fuser_kv;
} ImportMoe;

/* 1 when `a` (a Megatron-LM argument name) is one of these: *st says whether it was read. */
int import_moe_arg(ImportResult *r, const ImportKv *kv, const char *a, ImportMoe *m, Status *st, Err *e);

/* --recompute-modules under --recompute-granularity rc_gran (NULL: none given): the planner's
 * --recompute-modules; *selective_done is set when they stand for --recompute selective themselves. */
Status import_moe_modules(ImportResult *r, const ImportMoe *m, const char *rc_gran, int *selective_done, Err *e);

/* After every setting: check the values against each other (top-k within the experts, EP dividing them,
 * ...), write the flags, and set the model's expert, latent and MTP fields (s: the file's model, NULL when
 * the file gives no dimensions; ffn: its FFN width, the experts' by default). */
Status import_moe_finish(ImportResult *r, const ImportMoe *m, ModelSpec *s, unsigned layers, unsigned ffn, Err *e);

#endif
