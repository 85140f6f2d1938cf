/* exec/model/model_grad.c — where gradients accumulate. A main gradient kept
 * in FP32 is accumulated into directly (GEMMs with beta = 1, column sums) and
 * zeroed once per step, at the first micro-batch's backward. One kept in BF16
 * or FP8 is accumulated in FP32 staging and stored back in its dtype after each
 * backward (FP8: current scaling of the finished gradient, its scale_inv kept
 * in the record beside it); a later micro-batch first loads the gradient
 * accumulated so far into the staging, so the stored gradient is the sum over
 * the step's micro-batches, rounded once per micro-batch. */
#include "exec/model/model_internal.h"

ModelParam *model_find_param(Model *m, ParamKind k, int layer)
{
    if (layer >= 0) layer += (int)m->layer0; /* a block of this stage: the model's index */
    for (uint32_t i = 0; i < m->nparams; i++)
        if (m->params[i].kind == k && m->params[i].layer == layer) return &m->params[i];
    return NULL;
}

/* Offset of an embedding-side gradient inside gstage_emb: wte, wpe (learned
 * positions), lm_head (untied). */
static float *emb_stage(Model *m, const ModelParam *p)
{
    uint64_t vc = m->vocab_padded * m->spec.hidden;
    uint64_t tc = m->spec.pos == POS_LEARNED ? (uint64_t)m->seq * m->spec.hidden : 0;
    switch (p->kind) {
    case PK_WTE: return m->act.gstage_emb;
    case PK_WPE: return m->act.gstage_emb + vc;
    case PK_LM_HEAD: return m->act.gstage_emb + vc + tc;
    default: return NULL;
    }
}

static Dtype grad_dtype(const Model *m, const ModelParam *p) { return model_states(m, p)->dt[STATE_GRAD]; }

float *model_grad_target(Model *m, const ModelParam *p, int slot)
{
    if (grad_dtype(m, p) == DT_FP32) return p->grad;
    float *emb = emb_stage(m, p);
    if (emb) return emb; /* prepared once per backward: two contributions (LM head, embedding) */
    return m->act.gstage + (slot ? m->spec.hidden : 0);
}

/* staging = the main gradient accumulated so far, in FP32 (FP8: dequantized by its scale_inv). */
static Status load_main(Model *m, const ModelParam *p, float *staging, Err *e)
{
    Dtype gd = grad_dtype(m, p);
    const float *sinv = dtype_is_fp8(gd) ? p->grad_rec + REC_SCALE_INV : NULL;
    return m->bk->convert(m->bk, p->grad, gd, staging, DT_FP32, p->numel, sinv, e);
}

Status model_grad_begin(Model *m, const ModelParam *p, int slot, Err *e)
{
    if (grad_dtype(m, p) == DT_FP32 || emb_stage(m, p)) return ST_OK;
    float *t = model_grad_target(m, p, slot);
    if (m->mb) return load_main(m, p, t, e);
    return m->bk->memset0(m->bk, t, p->numel * sizeof(float), e);
}

Status model_grads_begin(Model *m, Err *e)
{
    Status st = ST_OK;
    for (uint32_t i = 0; !st && !m->mb && i < m->nparams; i++)
        if (grad_dtype(m, &m->params[i]) == DT_FP32)
            st = m->bk->memset0(m->bk, m->params[i].grad, m->params[i].numel * sizeof(float), e);
    if (st || !m->act.gstage_emb) return st;
    if (!m->mb) {
        const ModelSpec *s = &m->spec;
        uint64_t emb = m->vocab_padded * s->hidden * (s->tied_embeddings ? 1 : 2) +
                       (s->pos == POS_LEARNED ? (uint64_t)m->seq * s->hidden : 0);
        return m->bk->memset0(m->bk, m->act.gstage_emb, emb * sizeof(float), e);
    }
    for (uint32_t i = 0; !st && i < m->nparams; i++) {
        ModelParam *p = &m->params[i];
        float *t = emb_stage(m, p);
        if (t) st = load_main(m, p, t, e);
    }
    return st;
}

Status model_grad_commit(Model *m, ModelParam *p, int slot, Err *e)
{
    Backend *bk = m->bk;
    Dtype gd = grad_dtype(m, p);
    if (gd == DT_FP32) return ST_OK;
    float *src = model_grad_target(m, p, slot);
    if (!dtype_is_fp8(gd)) return bk->convert(bk, src, DT_FP32, p->grad, gd, p->numel, NULL, e);
    /* FP8 main gradient: current scaling of the finished gradient into its record */
    float *rec = p->grad_rec;
    Status st = bk->memset0(bk, rec + REC_AMAX, sizeof(float), e);
    if (!st) st = bk->amax(bk, src, DT_FP32, p->numel, rec + REC_AMAX, e);
    if (!st) st = bk->scaling_from_amax(bk, 1, gd, EXEC_FP8_MARGIN, rec + REC_AMAX, rec + REC_SCALE, e);
    if (st) return st;
    CastDesc c = {.in = src,
                  .in_dtype = DT_FP32,
                  .rows = 1,
                  .cols = p->numel,
                  .out_dtype = gd,
                  .out_row = p->grad,
                  .scale = rec + REC_SCALE,
                  .scale_inv = rec + REC_SCALE_INV};
    return bk->cast_transpose(bk, &c, e);
}
