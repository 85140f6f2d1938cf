/* exec/model/model_mtp.c — multi-token prediction (DeepSeek-V3 section 2.2; Megatron-Core core_v0.16.0
 * MultiTokenPredictionBlock): D sequential depths, each one's input from the embedding of the tokens k ahead
 * and the previous depth's block output (the main model's last for depth 1), and its masked loss. A depth's
 * block is a block of the model's kind run by model_pass.c (depth d's is the stage's block main_layers + d, its
 * linears eh_proj first: model_block_linears), so its parameters, saved inputs, FP8 scaling slots and optimizer
 * states are the block machinery's. Depth k's position i reads token i+k (the last k positions token 0, as
 * Megatron-Core rolls input_ids once a depth with a zero fill: _get_embeddings) and predicts token i+k+1 (the
 * main model's target at i+k; GPTModel rolls the labels and the loss mask once a depth); those last k
 * positions' losses are masked, and depth k's mean over its B·(T − k) valid positions is weighted
 * mtp_weight / D (GPTModel: mtp_loss_scaling_factor / mtp_num_layers times the loss over num_tokens). */
#include <string.h>

#include "exec/model/model_internal.h"

Status model_mtp_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    if (!s->mtp_layers) return ST_OK;
    if (s->mtp_layers > MODEL_MTP_MAX)
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the executor runs at most %d multi-token prediction depths (mtp_layers %u)", s->name,
                       MODEL_MTP_MAX, s->mtp_layers);
    if (p->seq <= s->mtp_layers) /* depth D predicts token i+D+1: no position left */
        return err_set(e, ST_USAGE, "--seq %u must exceed the %u multi-token prediction depths of model %s", p->seq,
                       s->mtp_layers, s->name);
    if (in->tp > 1 && s->hidden % in->tp) /* eh_proj is column-parallel over the hidden size */
        return err_set(e, ST_USAGE, "--tp %u must divide the hidden size %u of model %s (MTP's eh_proj)", in->tp,
                       s->hidden, s->name);
    return ST_OK;
}

void model_mtp_saved(Model *m, int bind, ArenaSpecs *sp)
{
    /* BTs: the sequence-parallel tokens (TP: this rank's shard), as the main model's norms and x_final */
    const uint64_t BT = model_tokens(m), BTs = model_sp_tokens(m), C = m->spec.hidden;
    const int ln = m->spec.norm == NORM_LAYERNORM;
    const Dtype A = m->act_dtype;
    for (uint32_t d = 0; d < m->mtp; d++) {
        const int li = (int)(model_main_layers(m) + d + m->layer0);
        MtpActs *a = bind ? &m->act.mtp[d] : NULL;
        arena_add_i32(sp, XT_IO, BT, a ? &a->tok : NULL, "mtp.tokens", -1);
        arena_add_i32(sp, XT_IO, BT, a ? &a->tgt : NULL, "mtp.targets", -1);
        arena_add(sp, XT_IO, DT_FP32, BT, a ? &a->losses : NULL, "mtp.losses", -1);
        /* enorm's input (the shifted tokens' embedding) and both norms' statistics; hnorm's input is x_final or
         * the previous depth's block output, and eh_proj's input [enorm; hnorm] is the block's saved linear input
         * (model_layout.c's saved()) */
        arena_add(sp, MT_ACT_LAYER_HP, A, BTs * C, a ? &a->emb : NULL, "mtp.embedding", li);
        if (ln) arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->e_mean : NULL, "mtp.enorm.mean", li);
        arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->e_rstd : NULL, "mtp.enorm.rstd", li);
        if (ln) arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->h_mean : NULL, "mtp.hnorm.mean", li);
        arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->h_rstd : NULL, "mtp.hnorm.rstd", li);
        /* the depth's output as the main model's: final norm in and out, its statistics, the logits */
        arena_add(sp, MT_ACT_OUTPUT, A, BTs * C, a ? &a->x : NULL, "mtp.x_final", li);
        if (ln) arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BTs, a ? &a->nf_mean : NULL, "mtp.normf.mean", li);
        arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BTs, a ? &a->nf_rstd : NULL, "mtp.normf.rstd", li);
        arena_add(sp, MT_ACT_OUTPUT, A, BTs * C, a ? &a->nf_out : NULL, "mtp.normf.out", li);
        arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BT * model_vocab_rows(m), a ? &a->logits : NULL, "mtp.logits", li);
    }
}

float model_mtp_dloss(const Model *m, uint32_t d)
{
    uint64_t valid = model_mtp_valid(m, d) * m->microbatches * m->dp;
    return m->mtp_weight / (float)m->mtp / (float)valid;
}

/* rows (B·T, with TP this rank's B·T/tp) x C: src (ld sld) → dst (ld dld), both in the activation dtype. */
static Status copy_cols(Model *m, const void *src, uint64_t sld, void *dst, uint64_t dld, Err *e)
{
    const uint64_t C = m->spec.hidden;
    return model_copy_strided(m, model_sp_tokens(m), C, 1, src, sld, C, dst, dld, C, e);
}

static void *at(const void *p, Dtype dt, uint64_t n) { return (char *)p + n * dtype_bytes(dt); }

/* Depth d's hnorm input: the previous depth's block output, the main model's (x_final) for depth 1. */
static const void *hidden_in(const Model *m, uint32_t d) { return d ? m->act.mtp[d - 1].x : m->act.x_final; }

Status model_mtp_in_fwd(Model *m, uint32_t d, const int32_t *inputs, const int32_t *targets, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    MtpActs *ma = &a->mtp[d];
    const ModelSpec *s = &m->spec;
    const uint32_t l = model_main_layers(m) + d, B = m->batch, T = m->seq;
    const uint64_t BT = model_tokens(m), C = s->hidden, k = (uint64_t)d + 1;
    const Dtype A = m->act_dtype;
    int32_t *tok = m->mtp_host, *tgt = m->mtp_host + BT;
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t i = 0; i < T; i++) { /* token i+k in, token i+k+1 (the target at i+k) out; the last k masked */
            tok[b * T + i] = i + k < T ? inputs[b * T + i + k] : 0;
            tgt[b * T + i] = i + k < T ? targets[b * T + i + k] : 0;
        }
    Status st = bk->copy_to_device(bk, ma->tok, tok, BT * sizeof(int32_t), e);
    if (!st) st = bk->copy_to_device(bk, ma->tgt, tgt, BT * sizeof(int32_t), e);
    ModelParam *wpe = model_find_param(m, PK_WPE, -1);
    if (!st && m->tp > 1) /* vocabulary-parallel, reduce-scattered to the sequence shards as the main model's */
        st = model_tp_embed_tok_fwd(m, ma->tok, ma->emb, e);
    else if (!st)
        st = bk->embed_fwd(bk, ma->tok, B, T, s->vocab, C, model_find_param(m, PK_WTE, -1)->weight,
                           wpe ? wpe->weight : NULL, m->recipe.other.dt[STATE_WEIGHT], ma->emb, A, e);
    void *cat = model_linear_input(m, l, LIN_EH_PROJ); /* (B·T, 2C): [enorm | hnorm] */
    if (!st) st = model_norm_fwd(m, PK_ENORM_W, (int)l, ma->emb, a->t_out, ma->e_mean, ma->e_rstd, e);
    if (!st) st = copy_cols(m, a->t_out, C, cat, 2 * C, e);
    if (!st) st = model_norm_fwd(m, PK_HNORM_W, (int)l, hidden_in(m, d), a->t_out, ma->h_mean, ma->h_rstd, e);
    if (!st) st = copy_cols(m, a->t_out, C, at(cat, A, C), 2 * C, e);
    if (m->tp == 1) return st ? st : model_linear_fwd(m, l, LIN_EH_PROJ, cat, model_la(m, l)->x, e);
    /* TP (Megatron-Core core_v0.16.0 MultiTokenPredictionLayer._concat_embeddings): eh_proj column-parallel (its
     * input gathered) gives every token's C/tp columns (t_out); gather_from_tensor_model_parallel_region
     * all-gathers them along the hidden dimension (tp_fwd: rank r's (B·T, C/tp) block r) and
     * scatter_to_sequence_parallel_region keeps this rank's tokens: the block's input, (B·T/tp, C) */
    const uint64_t t = m->tp, n = model_sp_tokens(m), Ct = C / t;
    if (!st) st = model_linear_fwd(m, l, LIN_EH_PROJ, cat, a->t_out, e);
    if (!st) st = model_tp_gather(m, CO_TP_AG_FWD, a->t_out, a->tp_fwd, C, A, e);
    for (uint64_t r = 0; !st && r < t; r++) /* rank r's columns of this rank's tokens */
        st = model_copy_strided(m, n, Ct, 1, at(a->tp_fwd, A, (r * BT + (uint64_t)m->tp_rank * n) * Ct), Ct, Ct,
                                at(model_la(m, l)->x, A, r * Ct), C, Ct, e);
    return st;
}

Status model_mtp_in_bwd(Model *m, uint32_t d, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const MtpActs *ma = &a->mtp[d];
    const ModelSpec *s = &m->spec;
    const uint32_t l = model_main_layers(m) + d; /* the stage's block index (model_find_param adds layer0) */
    const int li = (int)l;
    const uint64_t BT = model_tokens(m), C = s->hidden;
    const Dtype A = m->act_dtype;
    /* d([enorm | hnorm]) into d_a, then each half through its norm (model_norm_bwd writes d_res) */
    const void *dy = a->d_res;
    Status st = ST_OK;
    if (m->tp > 1) { /* TP: the sequence split's backward gathers the tokens' gradient (tp_full), the hidden
                      * gather's keeps this rank's C/tp columns of every token (d_b) */
        const uint64_t Ct = C / m->tp;
        st = model_tp_gather(m, CO_TP_AG_BWD, a->d_res, a->tp_full, C, A, e);
        if (!st)
            st = model_copy_strided(m, BT, Ct, 1, at(a->tp_full, A, (uint64_t)m->tp_rank * Ct), C, Ct, a->d_b, Ct, Ct,
                                    e);
        dy = a->d_b;
    }
    if (!st) st = model_linear_bwd(m, l, LIN_EH_PROJ, dy, a->d_a, e);
    const uint64_t n = model_sp_tokens(m); /* the shard's rows, d_res's */
    if (!st) st = bk->memset0(bk, a->d_res, n * C * dtype_bytes(A), e);
    if (!st) st = copy_cols(m, a->d_a, 2 * C, a->d_b, C, e);
    if (!st) st = model_norm_bwd(m, PK_ENORM_W, li, ma->emb, ma->e_mean, ma->e_rstd, a->d_b, e);
    ModelParam *wte = model_find_param(m, PK_WTE, -1), *wpe = model_find_param(m, PK_WPE, -1);
    if (!st && m->tp > 1) /* TP: the shards' gradient gathered, this rank's vocabulary rows */
        st = model_tp_embed_tok_bwd(m, ma->tok, a->d_res, e);
    else if (!st) /* the shared embedding's gradient: the shifted tokens' rows (committed with the main model's) */
        st = bk->embed_bwd(bk, ma->tok, m->batch, m->seq, s->vocab, C, a->d_res, A, model_grad_target(m, wte, 0),
                           wpe ? model_grad_target(m, wpe, 0) : NULL, e);
    if (!st) st = bk->memset0(bk, a->d_res, n * C * dtype_bytes(A), e);
    if (!st) st = copy_cols(m, at(a->d_a, A, C), 2 * C, a->d_b, C, e);
    if (!st) st = model_norm_bwd(m, PK_HNORM_W, li, hidden_in(m, d), ma->h_mean, ma->h_rstd, a->d_b, e);
    return st;
}

Status model_mtp_mask(Model *m, uint32_t d, Err *e)
{
    const uint64_t T = m->seq, Vp = model_vocab_rows(m), k = (uint64_t)d + 1;
    const MtpActs *ma = &m->act.mtp[d];
    Status st = ST_OK;
    for (uint64_t b = 0; !st && b < m->batch; b++) {
        uint64_t r = b * T + T - k; /* the sequence's last k positions: no token k + 1 ahead */
        st = m->bk->memset0(m->bk, ma->logits + r * Vp, k * Vp * sizeof(float), e);
        if (!st) st = m->bk->memset0(m->bk, ma->losses + r, k * sizeof(float), e);
    }
    return st;
}
