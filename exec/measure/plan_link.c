/* exec/measure/plan_link.c — the model a run trains and the executor's plan
 * input (see plan_link.h). */
#include "exec/measure/plan_link.h"

/* The KV heads for `heads` heads at the base model's ratio. */
static Status kv_heads_for(const ModelSpec *base, const ExecOverrides *o, uint32_t heads, uint32_t *kv, Err *e)
{
    if (o->kv_heads) {
        *kv = o->kv_heads;
        return ST_OK;
    }
    uint64_t v = (uint64_t)heads * base->kv_heads;
    if (v % base->heads)
        return err_set(e, ST_USAGE, "--heads %u: the KV heads %u x %u / %u are not a whole number; give --kv-heads",
                       heads, heads, base->kv_heads, base->heads);
    *kv = (uint32_t)(v / base->heads);
    return ST_OK;
}

Status exec_model(const ModelSpec *base, const ExecOverrides *o, ModelSpec *out, Err *e)
{
    *out = *base;
    const char *n = base->name;
    if (!base->heads || !base->hidden)
        return err_set(e, ST_USAGE, "--model %s: the catalog row has no heads or hidden size", n);
    if (o->layers) out->layers = o->layers;
    if (o->heads || o->kv_heads) {
        out->heads = o->heads ? o->heads : base->heads;
        Status st = kv_heads_for(base, o, out->heads, &out->kv_heads, e);
        if (st) return st;
    }
    if (o->hidden) {
        out->hidden = o->hidden;
        if (!o->ffn) { /* keep the model's FFN ratio */
            uint64_t f = (uint64_t)base->ffn_hidden * o->hidden / base->hidden;
            if (f == 0 || f > UINT32_MAX || (uint64_t)base->ffn_hidden * o->hidden % base->hidden)
                return err_set(e, ST_USAGE, "--hidden %u: the FFN width %u x %u / %u is not a whole number; give --ffn",
                               o->hidden, base->ffn_hidden, o->hidden, base->hidden);
            out->ffn_hidden = (uint32_t)f;
        }
    }
    if (o->ffn) out->ffn_hidden = o->ffn;
    if (spec_is_moe(base)) { /* the experts: counts as given, their FFN width following the hidden size */
        if (o->experts) out->experts = o->experts;
        if (o->topk) out->experts_per_token = o->topk;
        if (o->dense_layers_set) out->dense_layers = o->dense_layers;
        if (o->expert_ffn)
            out->expert_ffn = o->expert_ffn;
        else if (o->hidden) {
            uint64_t f = (uint64_t)base->expert_ffn * o->hidden / base->hidden;
            if (f == 0 || (uint64_t)base->expert_ffn * o->hidden % base->hidden)
                return err_set(e, ST_USAGE,
                               "--hidden %u: the expert FFN width %u x %u / %u is not a whole number; give "
                               "--expert-ffn",
                               o->hidden, base->expert_ffn, o->hidden, base->hidden);
            out->expert_ffn = (uint32_t)f;
        }
        if (!out->experts_per_token || out->experts_per_token > out->experts)
            return err_set(e, ST_USAGE, "--topk %u: must be between 1 and the %u experts", out->experts_per_token,
                           out->experts);
        uint32_t g = out->router_groups;
        if (g > 1 && (out->experts % g ||
                      (uint64_t)out->experts_per_token > (uint64_t)out->router_group_topk * (out->experts / g))) {
            /* a shrunk expert count that the catalog's groups do not fit: routing over all experts */
            if (o->experts || o->topk) out->router_groups = out->router_group_topk = 0;
        }
    } else if (o->experts || o->topk || o->expert_ffn || o->dense_layers_set) {
        return err_set(e, ST_USAGE, "--experts, --topk, --expert-ffn, --dense-layers: %s has no experts", n);
    }
    if (o->seq) out->seq_len = o->seq;
    if (o->vocab) out->vocab = o->vocab;
    if (o->mtp_layers_set) out->mtp_layers = o->mtp_layers;
    if (!out->layers || !out->hidden || !out->heads || !out->kv_heads || !out->ffn_hidden || !out->seq_len ||
        !out->vocab)
        return err_set(e, ST_USAGE, "--model %s: sizes must be positive", n);
    if (spec_is_mla(out)) { /* latent attention's heads keep the row's widths (qk_nope + qk_rope, v_head_dim) */
        out->kv_heads = out->heads;
        out->head_dim = out->qk_nope_head_dim + out->qk_rope_head_dim;
        return ST_OK;
    }
    if (out->hidden % out->heads)
        return err_set(e, ST_USAGE, "--hidden %u is not a multiple of --heads %u", out->hidden, out->heads);
    if (out->heads % out->kv_heads)
        return err_set(e, ST_USAGE, "--kv-heads %u does not divide --heads %u", out->kv_heads, out->heads);
    out->head_dim = out->hidden / out->heads;
    if (out->pos == POS_ROPE && out->head_dim % 2)
        return err_set(e, ST_USAGE, "--hidden %u / --heads %u = head_dim %u: rotary positions need it even",
                       out->hidden, out->heads, out->head_dim);
    return ST_OK;
}

void exec_plan_input(PlanInput *in, const ModelSpec *m, const GpuSpec *gpu, const Recipe *r, uint32_t mbs,
                     uint32_t microbatches, const StackSpec *stack)
{
    plan_input_defaults(in);
    in->model = m;
    in->gpu = gpu;
    in->recipe = r;
    in->mbs = mbs;
    in->seq = m->seq_len;
    in->gbs = (uint64_t)mbs * (microbatches ? microbatches : 1);
    in->attn = ATTN_MATERIALIZED;
    in->dropout = 0;
    in->frag_frac = 0.0; /* one arena, allocated once, never fragments: the device total compares like with like */
    if (stack) plan_input_use_stack(in, stack);
}

void exec_plan_dp(PlanInput *in, uint32_t dp, Sharding sharding)
{
    if (!dp) dp = 1;
    in->dp = dp;
    in->gbs *= dp;
    in->sharding = sharding;
}
