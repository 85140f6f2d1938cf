/* exec/model/model_family.c — the pieces of a block that models.csv's columns
 * choose: the norm (layernorm | rmsnorm), the MLP's activation (gelu |
 * swiglu) and how positions enter (learned table | rope | none). Each maps the
 * model's choice onto one backend operation whose descriptor carries the
 * planner's enum, so adding a family member is a kernel case and a column
 * value, not a new code path in the step. */
#include "exec/model/model_internal.h"

/* A norm's bias (LayerNorm only), by its weight. */
static ModelParam *norm_bias(Model *m, ParamKind w, int layer)
{
    if (m->spec.norm != NORM_LAYERNORM) return NULL;
    return model_find_param(m, (ParamKind)(w + 1), layer); /* every norm's bias follows its weight */
}

Status model_norm_fwd(Model *m, ParamKind wk, int layer, const void *in, void *out, float *mean, float *rstd, Err *e)
{
    ModelParam *w = model_find_param(m, wk, layer), *b = norm_bias(m, wk, layer);
    NormFwdDesc d = {.norm = m->spec.norm,
                     .rows = model_sp_tokens(m),
                     .cols = m->spec.hidden,
                     .eps = MODEL_NORM_EPS,
                     .act_dtype = m->act_dtype,
                     .weight_dtype = m->recipe.other.dt[STATE_WEIGHT],
                     .in = in,
                     .weight = w->weight,
                     .bias = b ? b->weight : NULL,
                     .out = out,
                     .mean = b ? mean : NULL,
                     .rstd = rstd};
    return m->bk->norm_fwd(m->bk, &d, e);
}

Status model_norm_bwd(Model *m, ParamKind wk, int layer, const void *in, const float *mean, const float *rstd,
                      const void *dout, Err *e)
{
    ModelParam *w = model_find_param(m, wk, layer), *b = norm_bias(m, wk, layer);
    Status st = model_grad_begin(m, w, 0, e);
    if (!st && b) st = model_grad_begin(m, b, 1, e);
    if (st) return st;
    NormBwdDesc d = {.norm = m->spec.norm,
                     .rows = model_sp_tokens(m),
                     .cols = m->spec.hidden,
                     .act_dtype = m->act_dtype,
                     .weight_dtype = m->recipe.other.dt[STATE_WEIGHT],
                     .in = in,
                     .weight = w->weight,
                     .mean = b ? mean : NULL,
                     .rstd = rstd,
                     .dout = dout,
                     .din = m->act.d_res,
                     .dweight = model_grad_target(m, w, 0),
                     .dbias = b ? model_grad_target(m, b, 1) : NULL};
    st = m->bk->norm_bwd(m->bk, &d, e);
    if (!st) st = model_grad_commit(m, w, 0, e);
    if (!st && b) st = model_grad_commit(m, b, 1, e);
    return st;
}

Status model_act_fwd(Model *m, uint64_t rows, uint64_t F, const void *fc1, void *out, Err *e)
{
    ActFwdDesc d = {.mlp = m->spec.mlp, .rows = rows, .cols = F, .dtype = m->act_dtype, .in = fc1, .out = out};
    return m->bk->act_fwd(m->bk, &d, e);
}

Status model_act_bwd(Model *m, uint64_t rows, uint64_t F, const void *fc1, const void *dout, void *din, Err *e)
{
    ActBwdDesc d = {
        .mlp = m->spec.mlp, .rows = rows, .cols = F, .dtype = m->act_dtype, .in = fc1, .dout = dout, .din = din};
    return m->bk->act_bwd(m->bk, &d, e);
}

RopeDesc model_rope_desc(const Model *m, void *qkv, int inverse)
{
    RopeDesc d = {.batch = m->batch,
                  .seq = m->seq,
                  .heads = m->spec.heads,
                  .kv_heads = m->spec.kv_heads,
                  .head_dim = m->spec.head_dim,
                  .dtype = m->act_dtype,
                  .qkv = qkv,
                  .cos_sin = m->act.rope,
                  .inverse = inverse};
    if (model_mla(m)) /* latent attention's decoupled RoPE: each head's last qk_rope columns; v heads of Dv */
        d.rope_dim = m->spec.qk_rope_head_dim, d.v_head_dim = m->spec.v_head_dim;
    return d;
}

Status model_pos_rope(Model *m, void *qkv, int inverse, Err *e)
{
    if (m->spec.pos != POS_ROPE) return ST_OK;
    RopeDesc d = model_rope_desc(m, qkv, inverse);
    return m->bk->rope(m->bk, &d, e);
}
