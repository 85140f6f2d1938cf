/* exec/model/model_qknorm.c — the attention's input of a block: the QKV
 * output rotated (rope), and with q/k norms (models.csv qk_norm, Qwen3:
 * Megatron-Core's q_layernorm / k_layernorm, an RMSNorm over each query and
 * each key head's head_dim values before the rotation, one weight vector for
 * the query heads and one for the key heads) normalized first.
 *
 * With q/k norms the block saves its QKV output — the norms' input, the
 * plan's "Q, K, V" item — and not the normalized, rotated copy: the forward
 * builds that copy in a working buffer for the attention, and the backward
 * builds it again (a copy, the norms and the rotation: elementwise) for the
 * attention's backward. So the saved activations are a model's without q/k
 * norms plus nothing, and the working set holds one (B·T, W) copy and its
 * rstd (planner/plan_mem.c and plan_moe_mem.c count them in the transient).
 * Published Qwen3 memory leaves no room for a second saved copy: Qwen3-30B-A3B
 * on 16 H100 (models/measured.csv mbridge-2509/2511) is planned at 79.6 GiB
 * this way and would be at 82.8 GiB, over the 80 GiB it ran in, with one. */
#include "exec/model/model_internal.h"

/* The rope descriptor of block l's q/k norms over qkv (rstd written forward, read inverse). */
static RopeDesc qk_desc(Model *m, uint32_t l, void *qkv, float *rstd, int inverse)
{
    ModelParam *q = model_find_param(m, PK_QNORM_W, (int)l), *k = model_find_param(m, PK_KNORM_W, (int)l);
    RopeDesc d = model_rope_desc(m, qkv, inverse);
    d.qnorm_w = q->weight, d.knorm_w = k->weight, d.norm_wdt = m->recipe.other.dt[STATE_WEIGHT];
    d.eps = MODEL_NORM_EPS, d.norm_raw = model_la(m, l)->qkv, d.norm_rstd = rstd;
    return d;
}

Status model_attn_qkv(Model *m, uint32_t l, int bwd, void *buf, float *rstd, void **out, Err *e)
{
    LayerActs *la = model_la(m, l);
    *out = la->qkv;
    if (!m->spec.qk_norm) return bwd ? ST_OK : model_pos_rope(m, la->qkv, 0, e);
    const uint64_t n = model_tokens(m) * model_linear_n(&m->spec, LIN_QKV);
    Status st = m->bk->convert(m->bk, la->qkv, m->act_dtype, buf, m->act_dtype, n, NULL, e);
    RopeDesc d = qk_desc(m, l, buf, rstd, 0);
    if (!st) st = m->bk->rope(m->bk, &d, e);
    if (!st) *out = buf;
    return st;
}

Status model_attn_qkv_bwd(Model *m, uint32_t l, void *dqkv, const float *rstd, Err *e)
{
    if (!m->spec.qk_norm) return model_pos_rope(m, dqkv, 1, e);
    ModelParam *q = model_find_param(m, PK_QNORM_W, (int)l), *k = model_find_param(m, PK_KNORM_W, (int)l);
    Status st = model_grad_begin(m, q, 0, e);
    if (!st) st = model_grad_begin(m, k, 1, e);
    if (st) return st;
    RopeDesc d = qk_desc(m, l, dqkv, (float *)rstd, 1);
    d.qnorm_dw = model_grad_target(m, q, 0), d.knorm_dw = model_grad_target(m, k, 1);
    st = m->bk->rope(m->bk, &d, e);
    if (!st) st = model_grad_commit(m, q, 0, e);
    if (!st) st = model_grad_commit(m, k, 1, e);
    return st;
}
