/* exec/model/model_pass.c — one micro-batch through the model: the forward to
 * per-token losses and d(logits), and the backward into the main gradients.
 * Written once for every family: the norm, the MLP's activation and the
 * positions are model_family.c's, the block linears model_linear.c's. */
#include "exec/model/model_internal.h"

static ModelParam *head(Model *m) { return model_find_param(m, m->spec.tied_embeddings ? PK_WTE : PK_LM_HEAD, -1); }

/* The LM head's input: a final norm's output nout (the model's or the MTP depth's), with TP its B·T/tp token
 * shards gathered into buf (the head is vocabulary-parallel: every token, this rank's Vp/tp rows;
 * tp_vocab_allgather). */
static const void *head_input(Model *m, const void *nout, void *buf, Status *st, Err *e)
{
    if (*st || m->tp == 1) return nout;
    *st = model_tp_gather(m, CO_TP_VOCAB_AG, nout, buf, m->spec.hidden, m->act_dtype, e);
    return buf;
}

/* The weight of a parameter that may be absent (NULL then). */
static void *weight_or_null(ModelParam *p) { return p ? p->weight : NULL; }

/* Block l's forward from its saved input la->x to next (the following block's input, the final norm's, or
 * what goes to the next stage). */
static Status block_fwd(Model *m, uint32_t l, void *next, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const ModelSpec *s = &m->spec;
    const Dtype A = m->act_dtype;
    const uint64_t BT = model_sp_tokens(m), C = s->hidden;
    Status st = ST_OK;
    LayerActs *la = model_la(m, l);
    void *in = model_linear_input(m, l, model_attn_in(m)); /* norm 1's output, saved for QKV (or MLA's) */
    AttnFwdDesc at = {.batch = m->batch,
                      .seq = m->seq,
                      .heads = s->heads,
                      .kv_heads = s->kv_heads,
                      .head_dim = s->head_dim,
                      .v_head_dim = model_mla(m) ? s->v_head_dim : 0,
                      .dtype = A,
                      .qkv = la->qkv,
                      .probs = la->probs,
                      .out = model_linear_input(m, l, LIN_PROJ),
                      .scratch = a->attn_scores};
    st = model_norm_fwd(m, PK_NORM1_W, (int)l, la->x, in, la->norm1_mean, la->norm1_rstd, e);
    if (!st) st = model_mla(m) ? model_mla_fwd(m, l, in, e) : model_linear_fwd(m, l, LIN_QKV, in, la->qkv, e);
    void *aq = NULL; /* rotated in place (saved so: attention's backward reads q, k so), or q/k norms' copy */
    if (!st) st = model_attn_qkv(m, l, 0, a->t_qkv, a->t_qkrstd, &aq, e);
    at.qkv = aq;
    if (!st) st = bk->attention_fwd(bk, &at, e);
    if (!st) st = model_linear_fwd(m, l, LIN_PROJ, at.out, a->t_out, e);
    if (!st) st = bk->add(bk, la->x, a->t_out, la->res2, A, BT * C, e);
    const uint64_t F = model_ffn_of(m, l);                        /* a MoE layer: its shared experts' width (0: none) */
    in = la->r_in ? la->r_in : model_linear_input(m, l, LIN_FC1); /* r_in: a MoE router's own copy */
    if (!st) st = model_norm_fwd(m, PK_NORM2_W, (int)l, la->res2, in, la->norm2_mean, la->norm2_rstd, e);
    if (F) {
        void *h = model_linear_input(m, l, LIN_FC2);
        if (!st) st = model_linear_fwd(m, l, LIN_FC1, in, la->fc1, e);
        if (!st) st = model_act_fwd(m, model_tokens(m), F, la->fc1, h, e);
        if (!st) st = model_linear_fwd(m, l, LIN_FC2, h, a->t_out, e);
        if (!st) st = bk->add(bk, la->res2, a->t_out, next, A, BT * C, e);
    }
    if (model_moe_layer(m, l)) { /* the routed experts' combined output joins the residual */
        if (!st) st = model_moe_fwd(m, l, in, a->t_moe, e);
        if (!st) st = bk->add(bk, F ? next : la->res2, a->t_moe, next, A, BT * C, e);
    }
    return st;
}

/* The head's forward: the final norm (wk) of x into out, the LM head to logits (FP32). */
static Status head_fwd(Model *m, ParamKind wk, int layer, void *x, float *mean, float *rstd, void *out, float *logits,
                       Err *e)
{
    ModelActs *a = &m->act;
    Status st = model_norm_fwd(m, wk, layer, x, out, mean, rstd, e);
    const void *hx = st ? NULL : m->tp == 1 ? out : NULL;
    if (!st && m->tp > 1) hx = head_input(m, out, a->tp_fwd, &st, e);
    if (!st) { /* LM head in the activation dtype (TE keeps the output layer out of FP8), FP32 logits */
        GemmDesc d = {.m = model_tokens(m), .n = model_vocab_rows(m), .k = m->spec.hidden, .accum = GEMM_OVERWRITE};
        d.a = (GemmOperand){.ptr = hx, .dtype = m->act_dtype, .layout = GEMM_K_INNER};
        d.b = (GemmOperand){.ptr = head(m)->weight, .dtype = m->act_dtype, .layout = GEMM_K_INNER};
        d.d = (GemmOutput){.ptr = logits, .dtype = DT_FP32};
        st = m->bk->gemm(m->bk, &d, e);
    }
    return st;
}

Status model_forward(Model *m, const int32_t *inputs, const int32_t *targets, float dloss, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const ModelSpec *s = &m->spec;
    const Dtype A = m->act_dtype;
    /* BT: the sequence-parallel regions' tokens, this rank's B·T/tp of the micro-batch (all at tp 1) */
    const uint64_t BT = model_sp_tokens(m), C = s->hidden;
    const int first = model_first(m), last = model_last(m);
    void *x0 = model_la(m, 0)->x;
    Status st = ST_OK;
    arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_FWD); /* ASan builds: only this phase's overlay */
    if (first) st = bk->copy_to_device(bk, model_tok(m), inputs, model_tokens(m) * sizeof(int32_t), e);
    if (!st && last) st = bk->copy_to_device(bk, a->targets, targets, model_tokens(m) * sizeof(int32_t), e);
    if (!st && !first) /* PP: the previous stage's output */
        st = m->ppc->recv(m->ppc, CO_PP_P2P, bk, x0, BT * C, A, model_pp_peer(m, -1), e);
    else if (!st && m->tp > 1)
        st = model_tp_embed_fwd(m, x0, e);
    else if (!st)
        st = bk->embed_fwd(bk, model_tok(m), m->batch, m->seq, s->vocab, C, model_find_param(m, PK_WTE, -1)->weight,
                           weight_or_null(model_find_param(m, PK_WPE, -1)), m->recipe.other.dt[STATE_WEIGHT], x0, A, e);
    const uint32_t Lm = model_main_layers(m);
    for (uint32_t l = 0; !st && l < Lm; l++) /* the last main block's output: the final norm's input, or (PP) what
                                                 goes to the next stage */
        st = block_fwd(m, l, l + 1 < Lm ? model_la(m, l + 1)->x : last ? a->x_final : a->t_out, e);
    if (!st && !last) return m->ppc->send(m->ppc, CO_PP_P2P, bk, a->t_out, BT * C, A, model_pp_peer(m, 1), e);
    if (!st) st = head_fwd(m, PK_NORMF_W, -1, a->x_final, a->normf_mean, a->normf_rstd, a->normf_out, a->logits, e);
    if (!st && m->tp > 1)
        st = model_tp_xent(m, dloss, e);
    else if (!st)
        st = bk->xent_fwd_bwd(bk, a->logits, DT_FP32, BT, s->vocab, m->vocab_padded, a->targets, dloss, a->losses, e);
    /* multi-token prediction (model_mtp.c), depth after depth: its input, its block, its own final norm, the shared
     * head */
    for (uint32_t d = 0; !st && d < m->mtp; d++) {
        const uint32_t lm = model_main_layers(m) + d; /* the stage's block index (model_find_param adds layer0) */
        MtpActs *ma = &a->mtp[d];
        st = model_mtp_in_fwd(m, d, inputs, targets, e);
        if (!st) st = block_fwd(m, lm, ma->x, e);
        if (!st) st = head_fwd(m, PK_MTPNORM_W, (int)lm, ma->x, ma->nf_mean, ma->nf_rstd, ma->nf_out, ma->logits, e);
        if (!st && m->tp > 1)
            st = model_tp_xent_of(m, ma->logits, ma->tgt, ma->losses, model_mtp_dloss(m, d), e);
        else if (!st)
            st = bk->xent_fwd_bwd(bk, ma->logits, DT_FP32, BT, s->vocab, m->vocab_padded, ma->tgt,
                                  model_mtp_dloss(m, d), ma->losses, e);
        if (!st) st = model_mtp_mask(m, d, e);
    }
    return st;
}

/* One block's backward, d_res holding d(block output) and receiving d(block input). */
static Status block_bwd(Model *m, uint32_t i, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const ModelSpec *s = &m->spec;
    LayerActs *la = model_la(m, i);
    AttnBwdDesc at = {.batch = m->batch,
                      .seq = m->seq,
                      .heads = s->heads,
                      .kv_heads = s->kv_heads,
                      .head_dim = s->head_dim,
                      .v_head_dim = model_mla(m) ? s->v_head_dim : 0,
                      .dtype = m->act_dtype,
                      .qkv = la->qkv,
                      .probs = la->probs,
                      .dout = a->d_b,
                      .dqkv = a->d_a,
                      .scratch = a->attn_scratch};
    /* GELU: d_a holds d(activation output), made d(FC1 output) in place; SwiGLU: d_act holds
     * d(activation output), d_a receives d(FC1 output) (twice as wide). d_b: C-wide input gradients */
    void *dact = s->mlp == MLP_SWIGLU ? a->d_act : a->d_a;
    const uint64_t F = model_ffn_of(m, i), BT = model_tokens(m), C = s->hidden;
    Status st = ST_OK;
    if (F) {
        st = model_linear_bwd(m, i, LIN_FC2, a->d_res, dact, e);
        if (!st) st = model_act_bwd(m, BT, F, la->fc1, dact, a->d_a, e);
        if (!st) st = model_linear_bwd(m, i, LIN_FC1, a->d_a, a->d_b, e);
    }
    if (!st && model_moe_layer(m, i)) { /* d(norm 2 output) through the routed experts, added to the shared's */
        const void *x = la->r_in ? la->r_in : model_linear_input(m, i, LIN_FC1);
        const uint64_t n = model_moe_tokens(m) * C; /* the sequence-parallel shard's (d_b: reduce-scattered) */
        st = model_moe_bwd(m, i, x, a->d_res, e);
        if (!st && F) st = bk->add(bk, a->d_b, a->d_moe, a->d_b, m->act_dtype, n, e);
        if (!st && !F) st = bk->convert(bk, a->d_moe, m->act_dtype, a->d_b, m->act_dtype, n, NULL, e);
    }
    if (!st) st = model_norm_bwd(m, PK_NORM2_W, (int)i, la->res2, la->norm2_mean, la->norm2_rstd, a->d_b, e);
    if (!st) st = model_linear_bwd(m, i, LIN_PROJ, a->d_res, a->d_b, e);
    void *aq = NULL; /* the attention's input: la->qkv, or with q/k norms rebuilt from it */
    if (!st) st = model_attn_qkv(m, i, 1, a->b_qkv, a->b_qkrstd, &aq, e);
    at.qkv = aq;
    if (!st) st = bk->attention_bwd(bk, &at, e);
    if (!st) st = model_attn_qkv_bwd(m, i, a->d_a, a->b_qkrstd, e); /* d(rotated q, k) → d(q, k) (→ d(QKV out)) */
    if (!st)
        st = model_mla(m) ? model_mla_bwd(m, i, a->d_a, a->d_b, e) : model_linear_bwd(m, i, LIN_QKV, a->d_a, a->d_b, e);
    if (!st) st = model_norm_bwd(m, PK_NORM1_W, (int)i, la->x, la->norm1_mean, la->norm1_rstd, a->d_b, e);
    return st;
}

/* The LM head's and a final norm's backward (wk of x, its statistics, its output nout, the d(logits) in
 * logits): d_res += d(x). */
static Status head_bwd(Model *m, ParamKind wk, int layer, const void *x, const float *mean, const float *rstd,
                       const void *nout, const float *logits, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const Dtype A = m->act_dtype;
    /* the head's rows are every token (M) with TP */
    const uint64_t C = m->spec.hidden, Vp = model_vocab_rows(m), M = model_tokens(m);
    /* d(logits) in the activation dtype for the two LM-head GEMMs */
    Status st = bk->convert(bk, logits, DT_FP32, a->dlogits, A, M * Vp, NULL, e);
    const void *hx = m->tp == 1 ? nout : head_input(m, nout, a->tp_head_x, &st, e); /* TP: gathered again */
    if (!st) { /* LM head: d(normf_out) = dlogits · W;  dW += dlogitsᵀ · normf_out (TP: partial sums scattered) */
        ModelParam *w = head(m);
        GemmDesc dg = {.m = M, .n = C, .k = Vp, .accum = GEMM_OVERWRITE};
        dg.a = (GemmOperand){.ptr = a->dlogits, .dtype = A, .layout = GEMM_K_INNER};
        dg.b = (GemmOperand){.ptr = w->weight, .dtype = A, .layout = GEMM_K_OUTER};
        dg.d = (GemmOutput){.ptr = m->tp > 1 ? a->tp_head_d : a->d_b, .dtype = A};
        GemmDesc wg = {.m = Vp, .n = C, .k = M, .accum = GEMM_ACCUMULATE};
        wg.a = (GemmOperand){.ptr = a->dlogits, .dtype = A, .layout = GEMM_K_OUTER};
        wg.b = (GemmOperand){.ptr = hx, .dtype = A, .layout = GEMM_K_OUTER};
        wg.d = (GemmOutput){.ptr = model_grad_target(m, w, 0), .dtype = DT_FP32};
        st = bk->gemm(bk, &dg, e);
        if (!st) st = bk->gemm(bk, &wg, e);
        if (!st && m->tp > 1) st = model_tp_scatter(m, CO_TP_VOCAB_RS, a->tp_head_d, a->d_b, C, e);
    }
    if (!st) st = model_norm_bwd(m, wk, layer, x, mean, rstd, a->d_b, e);
    return st;
}

Status model_backward(Model *m, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const ModelSpec *s = &m->spec;
    const Dtype A = m->act_dtype;
    const uint64_t BT = model_sp_tokens(m), C = s->hidden; /* this rank's tokens of the sequence-parallel regions */
    const int first = model_first(m), last = model_last(m);
    arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_HEAD);
    Status st = model_grads_begin(m, e);
    if (!st) st = bk->memset0(bk, a->d_res, BT * C * dtype_bytes(A), e);
    /* the MTP depths first, the last first: each one's head, block and input add d(its hnorm input) to d_res,
     * the previous depth's output (whose head adds its own), at depth 1 d(x_final) */
    for (uint32_t d = last ? m->mtp : 0; !st && d-- > 0;) {
        const uint32_t lm = model_main_layers(m) + d;
        const MtpActs *ma = &a->mtp[d];
        st = head_bwd(m, PK_MTPNORM_W, (int)lm, ma->x, ma->nf_mean, ma->nf_rstd, ma->nf_out, ma->logits, e);
        arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_BLOCKS);
        if (!st) st = block_bwd(m, lm, e);
        if (!st) st = model_mtp_in_bwd(m, d, e);
        arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_HEAD);
    }
    if (!st && last)
        st = head_bwd(m, PK_NORMF_W, -1, a->x_final, a->normf_mean, a->normf_rstd, a->normf_out, a->logits, e);
    else if (!st) /* PP: the gradient of this stage's output, from the next stage */
        st = m->ppc->recv(m->ppc, CO_PP_P2P, bk, a->d_res, BT * C, A, model_pp_peer(m, 1), e);
    arena_enter_phase(&m->arena, &m->specs, MODEL_PHASE_BLOCKS);
    for (uint32_t i = model_main_layers(m); !st && i-- > 0;) st = block_bwd(m, i, e);
    ModelParam *wte = model_find_param(m, PK_WTE, -1), *wpe = model_find_param(m, PK_WPE, -1);
    if (!st && first && m->tp > 1)
        st = model_tp_embed_bwd(m, a->d_res, e);
    else if (!st && first)
        st = bk->embed_bwd(bk, model_tok(m), m->batch, m->seq, s->vocab, C, a->d_res, A, model_grad_target(m, wte, 0),
                           wpe ? model_grad_target(m, wpe, 0) : NULL, e);
    if (!st && wte) st = model_grad_commit(m, wte, 0, e); /* the first stage's, or the last stage's tied head */
    if (!st && wpe) st = model_grad_commit(m, wpe, 0, e);
    if (!st && last && !s->tied_embeddings) st = model_grad_commit(m, head(m), 0, e);
    if (!st && !first) /* PP: the gradient of this stage's input, to the previous stage */
        st = m->ppc->send(m->ppc, CO_PP_P2P, bk, a->d_res, BT * C, A, model_pp_peer(m, -1), e);
    return st;
}

Status model_copy_strided(Model *m, uint64_t rows, uint64_t cols, uint64_t reps, const void *src, uint64_t sld,
                          uint64_t sstep, void *dst, uint64_t dld, uint64_t dstep, Err *e)
{
    StridedCopyDesc d = {.rows = rows,
                         .cols = cols,
                         .reps = reps,
                         .dtype = m->act_dtype,
                         .src = src,
                         .src_ld = sld,
                         .src_step = sstep,
                         .dst = dst,
                         .dst_ld = dld,
                         .dst_step = dstep};
    return m->bk->strided_copy(m->bk, &d, e);
}
