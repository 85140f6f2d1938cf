/* planner/plan_params.c — parameter counts of a whole model (see plan.h, ModelParams).
 *
 * Per layer (whole, no parallelism), with h = hidden, k = 2 for SwiGLU (gate and
 * up fused) else 1, norm = 2h for LayerNorm, h for RMSNorm:
 *   standard attention  QKV (heads + 2 kv_heads) head_dim x h, proj h x heads head_dim
 *                       (+ biases), q/k norms 2 head_dim with qk_norm
 *   latent attention    q_down h x q_lora and q_up q_lora x heads (nope + rope) (without
 *                       q_lora: one h x heads (nope + rope)), kv_down h x (kv_lora + rope),
 *                       kv_up kv_lora x heads (nope + v), out heads v x h, latent norms
 *                       q_lora + kv_lora
 *   dense FFN           k F h + h F (+ biases)
 *   MoE FFN             experts x (k + 1) Fe h routed, (k + 1) shared Fe h shared, router
 *                       experts x h
 *   two norms.
 * A sigmoid router's per-expert bias (DeepSeek-V3's auxiliary-loss-free balancing, E values per MoE layer) is
 * no parameter: Megatron-Core (core_v0.15.0 megatron/core/transformer/moe/router.py, TopKRouter.__init__)
 * registers expert_bias as an FP32 buffer, moved without a gradient by moe_utils.py's get_updated_expert_bias
 * from the step's summed token counts (distributed/finalize_model_grads.py _update_router_expert_bias), so it
 * has no gradient, no optimizer state and no place in a gradient all-reduce. It is LayerParams.router_bias,
 * outside every count here (the plan's router_bias memory term holds it; the Hugging Face checkpoint stores it
 * beside the weights: E x MoE layers values more than these counts).
 * The model: layers, token embedding V h, LM head V h unless tied, learned positions
 * seq_len h, final norm. Activated parameters are the model less the routed experts a
 * token does not use ((experts - experts_per_token) x (k + 1) Fe h per MoE layer); the
 * embedding table is counted whole, as Mixtral's 12.9B and Qwen3's 3.3B count it.
 * A multi-token-prediction depth adds its projection 2h x h, two norms, one layer and
 * a final norm (the embedding and the head are shared). */
#include "planner/plan_internal.h"

void plan_layer_params(const ModelSpec *md, Ck *ck, LayerParams *o)
{
    uint64_t h = md->hidden, k = spec_fc1_k(md), F = md->ffn_hidden;
    uint64_t norm = md->norm == NORM_LAYERNORM ? 2 * h : h, heads = md->heads;
    if (spec_is_mla(md)) {
        uint64_t dqk = md->head_dim, ql = md->q_lora_rank, kl = md->kv_lora_rank, r = md->qk_rope_head_dim;
        uint64_t q = ql ? ck_add(ck, ck_mul(ck, h, ql), ck_mul3(ck, ql, heads, dqk)) : ck_mul3(ck, h, heads, dqk);
        uint64_t kv = ck_add(ck, ck_mul(ck, h, kl + r), ck_mul3(ck, kl, heads, md->qk_nope_head_dim + md->v_head_dim));
        o->attn = ck_add(ck, ck_add(ck, q, kv), ck_mul3(ck, heads, md->v_head_dim, h));
        o->attn_other = ql + kl;
    } else {
        uint64_t q = heads * md->head_dim, kv = (uint64_t)md->kv_heads * md->head_dim;
        o->attn = ck_add(ck, ck_mul(ck, q + 2 * kv, h), ck_mul(ck, h, q));
        o->attn_other = md->qk_norm ? 2ull * md->head_dim : 0;
        if (md->linear_bias) o->attn_other += (q + 2 * kv) + h;
    }
    o->dense_ffn = ck_add(ck, ck_mul3(ck, k, F, h), ck_mul(ck, h, F));
    o->dense_other = 2 * norm + (md->linear_bias ? k * F + h : 0);
    o->expert = ck_mul3(ck, k + 1, md->expert_ffn, h);
    o->shared = ck_mul(ck, o->expert, md->shared_experts);
    o->router = ck_mul(ck, md->experts, h);
    o->router_bias = md->router == ROUTER_SIGMOID ? md->experts : 0;
    o->moe_other = 2 * norm;
    o->norm = norm;
}

int model_params(const ModelSpec *md, ModelParams *out)
{
    Ck ck = {0};
    LayerParams lp;
    plan_layer_params(md, &ck, &lp);
    uint64_t h = md->hidden, L = md->layers, Ld = spec_is_moe(md) ? md->dense_layers : L, Lx = L - Ld;
    uint64_t attn = ck_add(&ck, lp.attn, lp.attn_other);
    uint64_t dense = ck_add(&ck, attn, ck_add(&ck, lp.dense_ffn, lp.dense_other));
    uint64_t routed = ck_mul(&ck, lp.expert, md->experts);
    uint64_t moe_common = ck_add(&ck, attn, ck_add(&ck, ck_add(&ck, lp.shared, lp.router), lp.moe_other));
    uint64_t moe = ck_add(&ck, moe_common, routed);
    uint64_t moe_act = ck_add(&ck, moe_common, ck_mul(&ck, lp.expert, md->experts_per_token));
    uint64_t emb = ck_mul(&ck, md->vocab, h);
    if (md->pos == POS_LEARNED) emb = ck_add(&ck, emb, ck_mul(&ck, md->seq_len, h));
    uint64_t head = md->tied_embeddings ? 0 : ck_mul(&ck, md->vocab, h);
    uint64_t base = ck_add(&ck, ck_add(&ck, emb, head), lp.norm); /* + the final norm */
    out->total = ck_add(&ck, base, ck_add(&ck, ck_mul(&ck, dense, Ld), ck_mul(&ck, moe, Lx)));
    out->active = ck_add(&ck, base, ck_add(&ck, ck_mul(&ck, dense, Ld), ck_mul(&ck, moe_act, Lx)));
    out->embedding = emb;
    uint64_t mtp_layer = spec_is_moe(md) ? moe : dense;
    uint64_t mtp = ck_add(&ck, ck_add(&ck, ck_mul3(&ck, 2, h, h), 3 * lp.norm), mtp_layer);
    out->mtp = ck_mul(&ck, mtp, md->mtp_layers);
    return ck.ovf;
}

int model_param_count(const ModelSpec *md, uint64_t *out)
{
    ModelParams mp;
    int ovf = model_params(md, &mp);
    *out = mp.total;
    return ovf;
}
