/* exec/model/gpt_step.c — the training step: forward, backward, gradient
 * all-reduce, scaling updates (TE's order) and the optimizer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/model/gpt_internal.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

GptParam *gpt_find_param(Gpt *g, ParamKind k, int layer)
{
    for (uint32_t i = 0; i < g->nparams; i++)
        if (g->params[i].kind == k && g->params[i].layer == layer) return &g->params[i];
    return NULL;
}

static uint64_t tokens(const Gpt *g) { return (uint64_t)g->shape.batch * g->shape.seq; }

/* Offset of an embedding-side gradient inside gstage_emb: wte, wpe, lm_head. */
static float *emb_stage(Gpt *g, const GptParam *p)
{
    uint64_t vc = g->shape.vocab_padded * g->shape.hidden, tc = (uint64_t)g->shape.seq * g->shape.hidden;
    switch (p->kind) {
    case PK_WTE: return g->act.gstage_emb;
    case PK_WPE: return g->act.gstage_emb + vc;
    case PK_LM_HEAD: return g->act.gstage_emb + vc + tc;
    default: return NULL;
    }
}

static Dtype grad_dtype(const Gpt *g, const GptParam *p) { return gpt_states(g, p)->dt[ES_GRAD]; }

float *gpt_grad_target(Gpt *g, const GptParam *p, int slot)
{
    if (grad_dtype(g, p) == DT_FP32) return p->grad;
    float *emb = emb_stage(g, p);
    if (emb) return emb; /* zeroed once per backward: two contributions (LM head, embedding) */
    return g->act.gstage + (slot ? g->shape.hidden : 0);
}

Status gpt_grad_begin(Gpt *g, const GptParam *p, int slot, Err *e)
{
    if (grad_dtype(g, p) == DT_FP32 || emb_stage(g, p)) return ST_OK;
    return g->bk->memset0(g->bk, gpt_grad_target(g, p, slot), p->numel * sizeof(float), e);
}

Status gpt_grad_commit(Gpt *g, GptParam *p, int slot, Err *e)
{
    Backend *bk = g->bk;
    Dtype gd = grad_dtype(g, p);
    if (gd == DT_FP32) return ST_OK;
    float *src = gpt_grad_target(g, p, slot);
    if (!dtype_is_fp8(gd)) return bk->convert(bk, src, DT_FP32, p->grad, gd, p->numel, NULL, e);
    /* FP8 main gradient: current scaling of the finished gradient into its record */
    float *rec = p->grad_rec;
    Status st = bk->memset0(bk, rec + REC_AMAX, sizeof(float), e);
    if (!st) st = bk->amax(bk, src, DT_FP32, p->numel, rec + REC_AMAX, e);
    if (!st) st = bk->scaling_from_amax(bk, 1, gd, g->recipe.margin, rec + REC_AMAX, rec + REC_SCALE, e);
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

static Status ln_fwd(Gpt *g, ParamKind wk, int layer, const void *in, void *out, float *mean, float *rstd, Err *e)
{
    GptParam *w = gpt_find_param(g, wk, layer), *b = gpt_find_param(g, (ParamKind)(wk + 1), layer);
    LnFwdDesc d = {.rows = tokens(g),
                   .cols = g->shape.hidden,
                   .eps = 1e-5f,
                   .act_dtype = g->recipe.act,
                   .weight_dtype = g->recipe.other.dt[ES_WEIGHT],
                   .in = in,
                   .weight = w->weight,
                   .bias = b->weight,
                   .out = out,
                   .mean = mean,
                   .rstd = rstd};
    return g->bk->layernorm_fwd(g->bk, &d, e);
}

static Status ln_bwd(Gpt *g, ParamKind wk, int layer, const void *in, const float *mean, const float *rstd,
                     const void *dout, Err *e)
{
    GptParam *w = gpt_find_param(g, wk, layer), *b = gpt_find_param(g, (ParamKind)(wk + 1), layer);
    Status st = gpt_grad_begin(g, w, 0, e);
    if (!st) st = gpt_grad_begin(g, b, 1, e);
    if (st) return st;
    LnBwdDesc d = {.rows = tokens(g),
                   .cols = g->shape.hidden,
                   .act_dtype = g->recipe.act,
                   .weight_dtype = g->recipe.other.dt[ES_WEIGHT],
                   .in = in,
                   .weight = w->weight,
                   .mean = mean,
                   .rstd = rstd,
                   .dout = dout,
                   .din = g->act.d_res,
                   .dweight = gpt_grad_target(g, w, 0),
                   .dbias = gpt_grad_target(g, b, 1)};
    st = g->bk->layernorm_bwd(g->bk, &d, e);
    if (!st) st = gpt_grad_commit(g, w, 0, e);
    if (!st) st = gpt_grad_commit(g, b, 1, e);
    return st;
}

static GptParam *head(Gpt *g) { return gpt_find_param(g, g->shape.tied ? PK_WTE : PK_LM_HEAD, -1); }

Status gpt_forward(Gpt *g, const int32_t *inputs, const int32_t *targets, Err *e)
{
    Backend *bk = g->bk;
    GptActs *a = &g->act;
    const GptShape *s = &g->shape;
    const Dtype A = g->recipe.act;
    const uint64_t BT = tokens(g), C = s->hidden;
    Status st = bk->copy_to_device(bk, a->tokens, inputs, BT * sizeof(int32_t), e);
    if (!st) st = bk->copy_to_device(bk, a->targets, targets, BT * sizeof(int32_t), e);
    if (!st)
        st = bk->embed_fwd(bk, a->tokens, s->batch, s->seq, s->vocab, C, gpt_find_param(g, PK_WTE, -1)->weight,
                           gpt_find_param(g, PK_WPE, -1)->weight, g->recipe.other.dt[ES_WEIGHT], a->layer[0].x, A, e);
    for (uint32_t l = 0; !st && l < s->layers; l++) {
        GptLayerActs *la = &a->layer[l];
        void *next = l + 1 < s->layers ? a->layer[l + 1].x : a->x_final;
        void *in = gpt_linear_input(g, l, LIN_QKV);
        AttnFwdDesc at = {.batch = s->batch,
                          .seq = s->seq,
                          .heads = s->heads,
                          .head_dim = s->hidden / s->heads,
                          .dtype = A,
                          .qkv = la->qkv,
                          .probs = la->probs,
                          .out = gpt_linear_input(g, l, LIN_PROJ),
                          .scratch = a->attn_scores};
        st = ln_fwd(g, PK_LN1_W, (int)l, la->x, in, la->ln1_mean, la->ln1_rstd, e);
        if (!st) st = gpt_linear_fwd(g, l, LIN_QKV, in, la->qkv, e);
        if (!st) st = bk->attention_fwd(bk, &at, e);
        if (!st) st = gpt_linear_fwd(g, l, LIN_PROJ, at.out, a->t_out, e);
        if (!st) st = bk->add(bk, la->x, a->t_out, la->res2, A, BT * C, e);
        in = gpt_linear_input(g, l, LIN_FC1);
        if (!st) st = ln_fwd(g, PK_LN2_W, (int)l, la->res2, in, la->ln2_mean, la->ln2_rstd, e);
        if (!st) st = gpt_linear_fwd(g, l, LIN_FC1, in, la->fc1, e);
        in = gpt_linear_input(g, l, LIN_FC2);
        if (!st) st = bk->gelu_fwd(bk, la->fc1, in, A, BT * s->ffn, e);
        if (!st) st = gpt_linear_fwd(g, l, LIN_FC2, in, a->t_out, e);
        if (!st) st = bk->add(bk, la->res2, a->t_out, next, A, BT * C, e);
    }
    if (!st) st = ln_fwd(g, PK_LNF_W, -1, a->x_final, a->lnf_out, a->lnf_mean, a->lnf_rstd, e);
    if (!st) { /* LM head in BF16 (TE keeps the output layer out of FP8), FP32 logits */
        GemmDesc d = {.m = BT, .n = s->vocab_padded, .k = C, .accum = GEMM_OVERWRITE};
        d.a = (GemmOperand){.ptr = a->lnf_out, .dtype = A, .layout = GEMM_K_INNER};
        d.b = (GemmOperand){.ptr = head(g)->weight, .dtype = A, .layout = GEMM_K_INNER};
        d.d = (GemmOutput){.ptr = a->logits, .dtype = DT_FP32};
        st = bk->gemm(bk, &d, e);
    }
    if (!st)
        st = bk->xent_fwd_bwd(bk, a->logits, DT_FP32, BT, s->vocab, s->vocab_padded, a->targets, 1.0f / (float)BT,
                              a->losses, e);
    return st;
}

Status gpt_backward(Gpt *g, Err *e)
{
    Backend *bk = g->bk;
    GptActs *a = &g->act;
    const GptShape *s = &g->shape;
    const Dtype A = g->recipe.act;
    const uint64_t BT = tokens(g), C = s->hidden;
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < g->nparams; i++)
        if (grad_dtype(g, &g->params[i]) == DT_FP32)
            st = bk->memset0(bk, g->params[i].grad, g->params[i].numel * sizeof(float), e);
    if (!st && a->gstage_emb) {
        uint64_t emb = (s->vocab_padded * C) * (s->tied ? 1 : 2) + (uint64_t)s->seq * C;
        st = bk->memset0(bk, a->gstage_emb, emb * sizeof(float), e);
    }
    if (!st) st = bk->memset0(bk, a->d_res, BT * C * dtype_bytes(A), e);
    /* d(logits) in the activation dtype for the two LM-head GEMMs */
    if (!st) st = bk->convert(bk, a->logits, DT_FP32, a->dlogits, A, BT * s->vocab_padded, NULL, e);
    if (!st) { /* LM head: d(lnf_out) = dlogits · W;  dW += dlogitsᵀ · lnf_out */
        GptParam *w = head(g);
        GemmDesc dg = {.m = BT, .n = C, .k = s->vocab_padded, .accum = GEMM_OVERWRITE};
        dg.a = (GemmOperand){.ptr = a->dlogits, .dtype = A, .layout = GEMM_K_INNER};
        dg.b = (GemmOperand){.ptr = w->weight, .dtype = A, .layout = GEMM_K_OUTER};
        dg.d = (GemmOutput){.ptr = a->d_b, .dtype = A};
        GemmDesc wg = {.m = s->vocab_padded, .n = C, .k = BT, .accum = GEMM_ACCUMULATE};
        wg.a = (GemmOperand){.ptr = a->dlogits, .dtype = A, .layout = GEMM_K_OUTER};
        wg.b = (GemmOperand){.ptr = a->lnf_out, .dtype = A, .layout = GEMM_K_OUTER};
        wg.d = (GemmOutput){.ptr = gpt_grad_target(g, w, 0), .dtype = DT_FP32};
        st = bk->gemm(bk, &dg, e);
        if (!st) st = bk->gemm(bk, &wg, e);
    }
    if (!st) st = ln_bwd(g, PK_LNF_W, -1, a->x_final, a->lnf_mean, a->lnf_rstd, a->d_b, e);
    for (uint32_t i = s->layers; !st && i-- > 0;) {
        GptLayerActs *la = &a->layer[i];
        AttnBwdDesc at = {.batch = s->batch,
                          .seq = s->seq,
                          .heads = s->heads,
                          .head_dim = s->hidden / s->heads,
                          .dtype = A,
                          .qkv = la->qkv,
                          .probs = la->probs,
                          .dout = a->d_b,
                          .dqkv = a->d_a,
                          .scratch = a->attn_scratch};
        /* d_a: d(GELU output), made d(FC1 output) in place; d_b: C-wide input gradients */
        st = gpt_linear_bwd(g, i, LIN_FC2, a->d_res, a->d_a, e);
        if (!st) st = bk->gelu_bwd(bk, la->fc1, a->d_a, a->d_a, A, BT * s->ffn, e);
        if (!st) st = gpt_linear_bwd(g, i, LIN_FC1, a->d_a, a->d_b, e);
        if (!st) st = ln_bwd(g, PK_LN2_W, (int)i, la->res2, la->ln2_mean, la->ln2_rstd, a->d_b, e);
        if (!st) st = gpt_linear_bwd(g, i, LIN_PROJ, a->d_res, a->d_b, e);
        if (!st) st = bk->attention_bwd(bk, &at, e);
        if (!st) st = gpt_linear_bwd(g, i, LIN_QKV, a->d_a, a->d_b, e);
        if (!st) st = ln_bwd(g, PK_LN1_W, (int)i, la->x, la->ln1_mean, la->ln1_rstd, a->d_b, e);
    }
    GptParam *wte = gpt_find_param(g, PK_WTE, -1), *wpe = gpt_find_param(g, PK_WPE, -1);
    if (!st)
        st = bk->embed_bwd(bk, a->tokens, s->batch, s->seq, s->vocab, C, a->d_res, A, gpt_grad_target(g, wte, 0),
                           gpt_grad_target(g, wpe, 0), e);
    if (!st) st = gpt_grad_commit(g, wte, 0, e);
    if (!st) st = gpt_grad_commit(g, wpe, 0, e);
    if (!st && !s->tied) st = gpt_grad_commit(g, head(g), 0, e);
    return st;
}

/* Copy a bank's row 0 (this step's amax) and scales to the trace. */
static Status trace_before(Gpt *g, ScalingBank *b, GptBankTrace *t, Err *e)
{
    if (!g->trace) return ST_OK;
    Status st = g->bk->copy_to_host(g->bk, t->amax, b->amax_history, b->n * sizeof(float), e);
    if (!st) st = g->bk->copy_to_host(g->bk, t->scale_used, b->scale, b->n * sizeof(float), e);
    if (!st) memcpy(t->scale_next, t->scale_used, b->n * sizeof(float));
    return st;
}

/* Amax all-reduce (MAX over ranks) then TE's delayed update of a bank; or, for
 * current scaling, only the trace of what the casts used. */
static Status update_bank(Gpt *g, ScalingBank *b, GptBankTrace *t, Err *e)
{
    Status st = trace_before(g, b, t, e);
    if (st || g->recipe.scaling != EXEC_SCALING_DELAYED) return st;
    st = g->comm->all_reduce(g->comm, g->bk, b->amax_history, b->n, DT_FP32, COMM_MAX, e);
    if (!st) st = g->bk->scaling_delayed_update(g->bk, b, e);
    if (!st && g->trace) st = g->bk->copy_to_host(g->bk, t->scale_next, b->scale, b->n * sizeof(float), e);
    return st;
}

Status gpt_trace_enable(Gpt *g, Err *e)
{
    if (!exec_recipe_fp8(&g->recipe) || g->trace) return ST_OK;
    GptBankTrace *t[2] = {&g->tr_fwd, &g->tr_bwd};
    uint32_t n[2] = {g->sc.fwd.n, g->sc.bwd.n};
    for (int i = 0; i < 2; i++) {
        t[i]->amax = calloc(n[i], sizeof(float));
        t[i]->scale_used = calloc(n[i], sizeof(float));
        t[i]->scale_next = calloc(n[i], sizeof(float));
        if (!t[i]->amax || !t[i]->scale_used || !t[i]->scale_next)
            return err_set(e, ST_NOMEM, "out of memory for the scaling trace");
    }
    g->trace = 1;
    return ST_OK;
}

static Status optimizer(Gpt *g, Err *e)
{
    const GptHyper *h = &g->hyper;
    uint32_t t = g->step + 1;
    float lr = h->lr;
    if (h->warmup && t <= h->warmup) lr = h->lr * (float)t / (float)h->warmup;
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < g->nparams; i++) {
        GptParam *p = &g->params[i];
        const ExecStates *es = gpt_states(g, p);
        AdamHyper ah = {.lr = lr,
                        .beta1 = h->beta1,
                        .beta2 = h->beta2,
                        .eps = h->eps,
                        .weight_decay = p->decay ? h->weight_decay : 0.0f,
                        .step = t,
                        .grad_scale = 1.0f};
        const float *ginv = p->grad_rec ? p->grad_rec + REC_SCALE_INV : NULL;
        if (es->dt[ES_MASTER] == DT_FP16) {
            Fp8AdamDesc d = {.n = p->numel,
                             .h = ah,
                             .margin = 0,
                             .master = p->master,
                             .master_rec = p->master_rec,
                             .m = p->m,
                             .m_rec = p->m_rec,
                             .v = p->v,
                             .v_rec = p->v_rec,
                             .grad = p->grad,
                             .grad_dtype = es->dt[ES_GRAD],
                             .grad_scale_inv = ginv,
                             .weight = p->weight,
                             .weight_dtype = es->dt[ES_WEIGHT]};
            st = g->bk->fp8_adam(g->bk, &d, e);
        } else {
            AdamWDesc d = {.n = p->numel,
                           .h = ah,
                           .master = p->master,
                           .m = p->m,
                           .v = p->v,
                           .grad = p->grad,
                           .grad_dtype = es->dt[ES_GRAD],
                           .grad_scale_inv = ginv,
                           .weight = p->weight,
                           .weight_dtype = es->dt[ES_WEIGHT]};
            st = g->bk->adamw(g->bk, &d, e);
        }
    }
    return st;
}

static Status mean_loss(Gpt *g, float *loss, Err *e)
{
    uint64_t BT = tokens(g);
    Status st = g->bk->copy_to_host(g->bk, g->host_losses, g->act.losses, BT * sizeof(float), e);
    if (st) return st;
    double sum = 0.0;
    for (uint64_t i = 0; i < BT; i++) sum += g->host_losses[i];
    *loss = (float)(sum / (double)BT);
    return ST_OK;
}

static void phase_done(Gpt *g, int phase)
{
    if (g->on_phase) g->on_phase(g->on_phase_ctx, phase);
}

/* Phase k's device time runs from timestamp GPT_MARK_FIRST + 2k (recorded when
 * the host is back from the previous phase's sync and hooks) to + 2k + 1
 * (recorded before this phase's sync): the host wait, the on_phase hook's
 * cudaMemGetInfo and the launch gap between phases fall outside every phase. */
static Status phase_begin(Gpt *g, int ev, uint32_t k, Err *e)
{
    return ev ? g->bk->mark(g->bk, GPT_MARK_FIRST + 2 * k, e) : ST_OK;
}

/* The end of phase k: its end timestamp, wait for the work, read the host clock. */
static Status phase_end(Gpt *g, int ev, uint32_t k, double *t, Err *e)
{
    Status st = ev ? g->bk->mark(g->bk, GPT_MARK_FIRST + 2 * k + 1, e) : ST_OK;
    if (!st) st = g->bk->sync(g->bk, e);
    *t = now_s();
    return st;
}

Status gpt_step(Gpt *g, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    Backend *bk = g->bk;
    int fp8 = exec_recipe_fp8(&g->recipe), ev = bk->mark && bk->elapsed;
    double t[5];
    phase_done(g, -1);
    t[0] = now_s();
    Status st = phase_begin(g, ev, 0, e);
    if (!st) st = gpt_forward(g, inputs, targets, e);
    /* TE: forward tensors' scales are updated when the forward ends */
    if (!st && fp8) st = update_bank(g, &g->sc.fwd, &g->tr_fwd, e);
    if (!st) st = phase_end(g, ev, 0, &t[1], e);
    if (!st) phase_done(g, PHASE_FWD);
    if (!st) st = phase_begin(g, ev, 1, e);
    if (!st) st = gpt_backward(g, e);
    if (!st && fp8) st = update_bank(g, &g->sc.bwd, &g->tr_bwd, e);
    if (!st) st = phase_end(g, ev, 1, &t[2], e);
    if (!st) phase_done(g, PHASE_BWD);
    if (!st) st = phase_begin(g, ev, 2, e);
    for (uint32_t i = 0; !st && i < g->nparams; i++)
        st = g->comm->all_reduce(g->comm, bk, g->params[i].grad, g->params[i].numel, grad_dtype(g, &g->params[i]),
                                 COMM_SUM, e);
    if (!st) st = phase_end(g, ev, 2, &t[3], e);
    if (!st) phase_done(g, PHASE_COMM);
    if (!st) st = phase_begin(g, ev, 3, e);
    if (!st) st = optimizer(g, e);
    if (!st) st = phase_end(g, ev, 3, &t[4], e);
    if (!st) phase_done(g, PHASE_OPT);
    /* forward, backward, communication, optimizer: the order they run in */
    static const int order[4] = {PHASE_FWD, PHASE_BWD, PHASE_COMM, PHASE_OPT};
    double d[4];
    for (uint32_t k = 0; !st && k < 4; k++)
        st = ev ? bk->elapsed(bk, GPT_MARK_FIRST + 2 * k, GPT_MARK_FIRST + 2 * k + 1, &d[k], e) : ST_OK;
    if (!st) st = mean_loss(g, loss, e);
    if (st) return st;
    g->step++;
    for (int k = 0; k < 4; k++) g->phase_s[order[k]] = ev ? d[k] : t[k + 1] - t[k];
    g->phase_device = ev;
    return ST_OK;
}

static Status clear_amax_rows(Gpt *g, Err *e)
{
    if (!exec_recipe_fp8(&g->recipe) || g->recipe.scaling != EXEC_SCALING_DELAYED) return ST_OK;
    Status st = g->bk->memset0(g->bk, g->sc.fwd.amax_history, g->sc.fwd.n * sizeof(float), e);
    if (!st) st = g->bk->memset0(g->bk, g->sc.bwd.amax_history, g->sc.bwd.n * sizeof(float), e);
    return st;
}

Status gpt_loss(Gpt *g, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    Status st = gpt_forward(g, inputs, targets, e);
    if (!st) st = clear_amax_rows(g, e);
    if (!st) st = g->bk->sync(g->bk, e);
    if (!st) st = mean_loss(g, loss, e);
    return st;
}

Status gpt_grads(Gpt *g, const int32_t *inputs, const int32_t *targets, float *loss, Err *e)
{
    Status st = gpt_forward(g, inputs, targets, e);
    if (!st) st = gpt_backward(g, e);
    if (!st) st = clear_amax_rows(g, e);
    if (!st) st = g->bk->sync(g->bk, e);
    if (!st) st = mean_loss(g, loss, e);
    return st;
}
