/* exec/model/model_check.c — what the executor accepts: a plan's model,
 * recipe and layout checked before any tensor is sized, each refusal naming
 * the flag or model column and the value (ST_USAGE for bad input,
 * ST_UNAVAILABLE for what the executor does not run yet). */
#include <stdint.h>

#include "exec/model/model_internal.h"

Status model_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    if (in->cp != 1)
        return err_set(e, ST_UNAVAILABLE,
                       "the executor runs data, tensor and pipeline parallelism (cp %u given); context parallelism "
                       "is not implemented yet",
                       in->cp);
    if (!in->dp) return err_set(e, ST_USAGE, "the plan's dp is 0");
    if (in->attn != ATTN_MATERIALIZED || in->recompute != RECOMPUTE_NONE || in->dropout)
        return err_set(e, ST_UNAVAILABLE,
                       "the executor materializes attention scores without recompute or dropout; plan it that way "
                       "(exec_plan_input)");
    Status st = exec_recipe_check(in->recipe, e);
    if (!st) st = model_tp_block_check(p, e); /* block scaling over TP: shards on block boundaries */
    if (!st) st = model_moe_check(p, e);
    if (!st) st = model_mla_check(p, e);
    if (!st) st = model_mtp_check(p, e);
    if (!st) st = model_shard_check(p, e);
    if (st) return st;
    if ((unsigned)s->norm >= NORM_COUNT_ || (unsigned)s->mlp >= MLP_COUNT_ || (unsigned)s->pos >= POS_COUNT_)
        return err_set(e, ST_USAGE, "model %s: unknown norm, mlp or position type", s->name);
    if (!s->heads || !s->kv_heads || s->heads % s->kv_heads || !s->head_dim)
        return err_set(e, ST_USAGE, "model %s: %u heads and %u KV heads of %u (KV heads must divide heads)", s->name,
                       s->heads, s->kv_heads, s->head_dim);
    if (s->pos == POS_ROPE && s->head_dim % 2)
        return err_set(e, ST_USAGE, "model %s: rotary positions need an even head_dim (got %u)", s->name, s->head_dim);
    if (s->qk_norm && (s->pos != POS_ROPE || s->norm != NORM_RMSNORM || in->tp > 1))
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the executor runs q/k norms as RMSNorm before rotary positions on one tensor-"
                       "parallel rank (norm %s, position %s, tp %u given)",
                       s->name, s->norm == NORM_RMSNORM ? "rmsnorm" : "layernorm",
                       s->pos == POS_ROPE ? "rope" : "not rope", in->tp);
    if (p->seq < 2) return err_set(e, ST_USAGE, "--seq must be at least 2");
    if (s->vocab < 2) return err_set(e, ST_USAGE, "the vocabulary must have at least 2 tokens");
    if (s->vocab > (uint32_t)INT32_MAX + 1) /* ids 0 .. vocab - 1 are int32 */
        return err_set(e, ST_USAGE, "vocabulary %u does not fit int32 token ids (at most 2^31 tokens)", s->vocab);
    if ((uint64_t)in->mbs * p->seq > UINT32_MAX)
        return err_set(e, ST_USAGE, "--mbs x --seq = %llu tokens per micro-batch is too many",
                       (unsigned long long)in->mbs * p->seq);
    if (!p->microbatches) return err_set(e, ST_USAGE, "the plan has no micro-batches");
    st = model_tp_check(p, e);
    return st ? st : model_pp_check(p, e);
}
