/* exec/model/model_mtp.c — multi-token prediction depth 1 (DeepSeek-V3 section 2.2; Megatron-Core's
 * MultiTokenPredictionLayer): the depth's input from the next tokens' embedding and the main model's last
 * block output, and its masked loss. The depth's block is a block of the model's kind run by model_pass.c
 * (the stage's last block, its linears eh_proj first: model_block_linears), so its parameters, saved inputs,
 * FP8 scaling slots and optimizer states are the block machinery's. Position i of a sequence reads token i+1
 * (the last position token 0, as Megatron-Core rolls input_ids with a zero fill) and predicts token i+2 (the
 * main model's target at i+1); the last position's loss is masked. */
#include <string.h>

#include "exec/model/model_internal.h"

Status model_mtp_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    if (!s->mtp_layers) return ST_OK;
    if (s->mtp_layers > 1)
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the executor runs multi-token prediction of depth 1 (mtp_layers %u given)", s->name,
                       s->mtp_layers);
    if (in->tp > 1 && s->hidden % in->tp) /* eh_proj is column-parallel over the hidden size */
        return err_set(e, ST_USAGE, "--tp %u must divide the hidden size %u of model %s (MTP's eh_proj)", in->tp,
                       s->hidden, s->name);
    return ST_OK;
}

void model_mtp_saved(Model *m, int bind, ArenaSpecs *sp)
{
    /* BTs: the sequence-parallel tokens (TP: this rank's shard), as the main model's norms and x_final */
    const uint64_t BT = model_tokens(m), BTs = model_sp_tokens(m), C = m->spec.hidden;
    const int ln = m->spec.norm == NORM_LAYERNORM, li = (int)(m->spec.layers - 1 + m->layer0);
    const Dtype A = m->act_dtype;
    ModelActs *a = bind ? &m->act : NULL;
    arena_add_i32(sp, XT_IO, BT, a ? &a->mtp_tok : NULL, "mtp.tokens", -1);
    arena_add_i32(sp, XT_IO, BT, a ? &a->mtp_tgt : NULL, "mtp.targets", -1);
    arena_add(sp, XT_IO, DT_FP32, BT, a ? &a->mtp_losses : NULL, "mtp.losses", -1);
    /* enorm's input (the next tokens' embedding) and both norms' statistics; hnorm's input is x_final, and
     * eh_proj's input [enorm; hnorm] is the block's saved linear input (model_layout.c's saved()) */
    arena_add(sp, MT_ACT_LAYER_HP, A, BTs * C, a ? &a->mtp_emb : NULL, "mtp.embedding", li);
    if (ln) arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->mtp_e_mean : NULL, "mtp.enorm.mean", li);
    arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->mtp_e_rstd : NULL, "mtp.enorm.rstd", li);
    if (ln) arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->mtp_h_mean : NULL, "mtp.hnorm.mean", li);
    arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, a ? &a->mtp_h_rstd : NULL, "mtp.hnorm.rstd", li);
    /* the depth's output as the main model's: final norm in and out, its statistics, the logits */
    arena_add(sp, MT_ACT_OUTPUT, A, BTs * C, a ? &a->mtp_x : NULL, "mtp.x_final", li);
    if (ln) arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BTs, a ? &a->mtp_nf_mean : NULL, "mtp.normf.mean", li);
    arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BTs, a ? &a->mtp_nf_rstd : NULL, "mtp.normf.rstd", li);
    arena_add(sp, MT_ACT_OUTPUT, A, BTs * C, a ? &a->mtp_nf_out : NULL, "mtp.normf.out", li);
    arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BT * model_vocab_rows(m), a ? &a->mtp_logits : NULL, "mtp.logits", li);
}

float model_mtp_dloss(const Model *m)
{
    uint64_t valid = (uint64_t)m->batch * (m->seq - 1) * m->microbatches * m->dp;
    return m->mtp_weight / (float)valid;
}

/* rows (B·T, with TP this rank's B·T/tp) x C: src (ld sld) → dst (ld dld), both in the activation dtype. */
static Status copy_cols(Model *m, const void *src, uint64_t sld, void *dst, uint64_t dld, Err *e)
{
    const uint64_t C = m->spec.hidden;
    return model_copy_strided(m, model_sp_tokens(m), C, 1, src, sld, C, dst, dld, C, e);
}

static void *at(const void *p, Dtype dt, uint64_t n) { return (char *)p + n * dtype_bytes(dt); }

Status model_mtp_in_fwd(Model *m, const int32_t *inputs, const int32_t *targets, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const ModelSpec *s = &m->spec;
    const uint32_t l = s->layers - 1, B = m->batch, T = m->seq;
    const uint64_t BT = model_tokens(m), C = s->hidden;
    const Dtype A = m->act_dtype;
    int32_t *tok = m->mtp_host, *tgt = m->mtp_host + BT;
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t i = 0; i < T; i++) { /* token i+1 in, token i+2 (the target at i+1) out; the last masked */
            tok[b * T + i] = i + 1 < T ? inputs[b * T + i + 1] : 0;
            tgt[b * T + i] = i + 1 < T ? targets[b * T + i + 1] : 0;
        }
    Status st = bk->copy_to_device(bk, a->mtp_tok, tok, BT * sizeof(int32_t), e);
    if (!st) st = bk->copy_to_device(bk, a->mtp_tgt, tgt, BT * sizeof(int32_t), e);
    ModelParam *wpe = model_find_param(m, PK_WPE, -1);
    if (!st && m->tp > 1) /* vocabulary-parallel, reduce-scattered to the sequence shards as the main model's */
        st = model_tp_embed_tok_fwd(m, a->mtp_tok, a->mtp_emb, e);
    else if (!st)
        st = bk->embed_fwd(bk, a->mtp_tok, B, T, s->vocab, C, model_find_param(m, PK_WTE, -1)->weight,
                           wpe ? wpe->weight : NULL, m->recipe.other.dt[STATE_WEIGHT], a->mtp_emb, A, e);
    void *cat = model_linear_input(m, l, LIN_EH_PROJ); /* (B·T, 2C): [enorm | hnorm] */
    if (!st) st = model_norm_fwd(m, PK_ENORM_W, (int)l, a->mtp_emb, a->t_out, a->mtp_e_mean, a->mtp_e_rstd, e);
    if (!st) st = copy_cols(m, a->t_out, C, cat, 2 * C, e);
    if (!st) st = model_norm_fwd(m, PK_HNORM_W, (int)l, a->x_final, a->t_out, a->mtp_h_mean, a->mtp_h_rstd, e);
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

Status model_mtp_in_bwd(Model *m, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    const ModelSpec *s = &m->spec;
    const int li = (int)(s->layers - 1); /* the stage's block index (model_find_param adds layer0) */
    const uint32_t l = (uint32_t)li;
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
    if (!st) st = model_norm_bwd(m, PK_ENORM_W, li, a->mtp_emb, a->mtp_e_mean, a->mtp_e_rstd, a->d_b, e);
    ModelParam *wte = model_find_param(m, PK_WTE, -1), *wpe = model_find_param(m, PK_WPE, -1);
    if (!st && m->tp > 1) /* TP: the shards' gradient gathered, this rank's vocabulary rows */
        st = model_tp_embed_tok_bwd(m, a->mtp_tok, a->d_res, e);
    else if (!st) /* the shared embedding's gradient: the next tokens' rows (committed with the main model's) */
        st = bk->embed_bwd(bk, a->mtp_tok, m->batch, m->seq, s->vocab, C, a->d_res, A, model_grad_target(m, wte, 0),
                           wpe ? model_grad_target(m, wpe, 0) : NULL, e);
    if (!st) st = bk->memset0(bk, a->d_res, n * C * dtype_bytes(A), e);
    if (!st) st = copy_cols(m, at(a->d_a, A, C), 2 * C, a->d_b, C, e);
    if (!st) st = model_norm_bwd(m, PK_HNORM_W, li, a->x_final, a->mtp_h_mean, a->mtp_h_rstd, a->d_b, e);
    return st;
}

Status model_mtp_mask(Model *m, Err *e)
{
    const uint64_t T = m->seq, Vp = model_vocab_rows(m);
    Status st = ST_OK;
    for (uint64_t b = 0; !st && b < m->batch; b++) {
        uint64_t r = b * T + T - 1; /* the sequence's last position: no token two ahead */
        st = m->bk->memset0(m->bk, m->act.mtp_logits + r * Vp, Vp * sizeof(float), e);
        if (!st) st = m->bk->memset0(m->bk, m->act.mtp_losses + r, sizeof(float), e);
    }
    return st;
}
