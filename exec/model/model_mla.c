/* exec/model/model_mla.c — multi-head latent attention (DeepSeek-V2/V3; models.csv q_lora_rank ..
 * v_head_dim), as Megatron-Core's MLASelfAttention runs it without TP:
 *
 *   c_q  = x · W_q_downᵀ                    (B·T, q_lora)      saved (its norm's input)
 *   q    = rmsnorm(c_q) · W_q_upᵀ           (B·T, H·D)         D = qk_nope + qk_rope per head
 *   kvd  = x · W_kv_downᵀ                   (B·T, kv_lora + R)  [c_kv | k_rope]
 *   kv   = rmsnorm(c_kv) · W_kv_upᵀ         (B·T, H·(qk_nope + Dv)), per head [k_nope | v]
 *   k_h  = [k_nope_h | k_rope]              the one RoPE key shared by every head
 *
 * assembled by strided_copy into the attention's rows (B·T, W = 2H·D + H·Dv) — q heads, k heads, v heads —,
 * which model_pos_rope then rotates on each q and k head's last R columns (the decoupled RoPE) and
 * attention_fwd reads with value heads of Dv. x is norm 1's output, one tensor for both down-projections
 * (saved once in BF16: model_linear_saved). Without a q latent (q_lora_rank 0) q = x · W_q_upᵀ. The linears
 * are the block linears of model_linear.c (their kinds LIN_Q_DOWN .. LIN_KV_UP); the latents' norms are
 * RMSNorms with their own weights (PK_QLAT_W, PK_KVLAT_W). The backward runs the same steps back: the k heads'
 * RoPE-part gradients summed into the shared key's (strided_copy with dst_step 0, FP32, rounded once), the
 * two down-projections' input gradients added. */
#include "exec/model/model_internal.h"

/* p advanced by n elements of dtype dt. */
static void *at(const void *p, Dtype dt, uint64_t n) { return (char *)p + n * dtype_bytes(dt); }

/* The same over the micro-batch's B·T rows (the attention's). */
static Status copy(Model *m, uint64_t cols, uint64_t reps, const void *src, uint64_t sld, uint64_t sstep, void *dst,
                   uint64_t dld, uint64_t dstep, Err *e)
{
    return model_copy_strided(m, model_tokens(m), cols, reps, src, sld, sstep, dst, dld, dstep, e);
}

/* A latent's RMSNorm over its n columns: in (B·T, n) → out, rstd (B·T). */
static Status latent_norm_fwd(Model *m, uint32_t l, ParamKind wk, const void *in, uint64_t n, void *out, float *rstd,
                              Err *e)
{
    NormFwdDesc d = {.norm = NORM_RMSNORM,
                     .rows = model_sp_tokens(m), /* TP: the sequence shard (the down-projections' rows) */
                     .cols = n,
                     .eps = MODEL_NORM_EPS,
                     .act_dtype = m->act_dtype,
                     .weight_dtype = m->recipe.other.dt[STATE_WEIGHT],
                     .in = in,
                     .weight = model_find_param(m, wk, (int)l)->weight,
                     .out = out,
                     .rstd = rstd};
    return m->bk->norm_fwd(m->bk, &d, e);
}

/* Its backward: din (B·T, n) overwritten with d(in), the weight's gradient accumulated. */
static Status latent_norm_bwd(Model *m, uint32_t l, ParamKind wk, const void *in, uint64_t n, const float *rstd,
                              const void *dout, void *din, Err *e)
{
    ModelParam *w = model_find_param(m, wk, (int)l);
    Status st = model_grad_begin(m, w, 0, e);
    if (!st) st = m->bk->memset0(m->bk, din, model_sp_tokens(m) * n * dtype_bytes(m->act_dtype), e); /* added to */
    if (st) return st;
    NormBwdDesc d = {.norm = NORM_RMSNORM,
                     .rows = model_sp_tokens(m),
                     .cols = n,
                     .act_dtype = m->act_dtype,
                     .weight_dtype = m->recipe.other.dt[STATE_WEIGHT],
                     .in = in,
                     .weight = w->weight,
                     .rstd = rstd,
                     .dout = dout,
                     .din = din,
                     .dweight = model_grad_target(m, w, 0)};
    st = m->bk->norm_bwd(m->bk, &d, e);
    return st ? st : model_grad_commit(m, w, 0, e);
}

Status model_mla_fwd(Model *m, uint32_t l, const void *x, Err *e)
{
    ModelActs *a = &m->act;
    LayerActs *la = model_la(m, l);
    const ModelSpec *s = &m->spec;
    const Dtype A = m->act_dtype;
    const uint64_t H = s->heads, D = s->head_dim, nope = s->qk_nope_head_dim, R = s->qk_rope_head_dim;
    const uint64_t Dv = s->v_head_dim, kl = s->kv_lora_rank, W = model_attn_w(s), KV = H * (nope + Dv);
    const uint64_t n = model_sp_tokens(m); /* the down-projections' rows: B·T, with TP this rank's shard */
    Status st = ST_OK;
    const void *qin = x;
    if (s->q_lora_rank) { /* q through its latent */
        void *qn = model_linear_input(m, l, LIN_Q_UP);
        st = model_linear_fwd(m, l, LIN_Q_DOWN, x, la->cq, e);
        if (!st) st = latent_norm_fwd(m, l, PK_QLAT_W, la->cq, s->q_lora_rank, qn, la->cq_rstd, e);
        qin = qn;
    }
    if (!st) st = model_linear_fwd(m, l, LIN_Q_UP, qin, a->m_up, e);
    if (!st) st = copy(m, H * D, 1, a->m_up, H * D, 0, la->qkv, W, H * D, e); /* q heads */
    void *kvn = model_linear_input(m, l, LIN_KV_UP);
    if (!st) st = model_linear_fwd(m, l, LIN_KV_DOWN, x, a->m_kvd, e);
    if (!st)
        st =
            model_copy_strided(m, n, kl, 1, a->m_kvd, kl + R, 0, la->ckv, kl, kl, e); /* c_kv, contiguous: its norm's */
    if (!st) st = latent_norm_fwd(m, l, PK_KVLAT_W, la->ckv, kl, kvn, la->ckv_rstd, e);
    if (!st) st = model_linear_fwd(m, l, LIN_KV_UP, kvn, a->m_up, e);
    void *k = at(la->qkv, A, H * D), *v = at(la->qkv, A, 2 * H * D);
    if (!st) st = copy(m, nope, H, a->m_up, KV, nope + Dv, k, W, D, e); /* k_nope per head */
    const void *kr = at(a->m_kvd, A, kl); /* k_rope: (B·T, R) at ld kl + R, or TP's gathered (B·T, R) */
    uint64_t krld = kl + R;
    if (!st && m->tp > 1) { /* the shard's rows made contiguous (t_out, free here), all-gathered into tp_fwd */
        st = model_copy_strided(m, n, R, 1, kr, kl + R, 0, a->t_out, R, R, e);
        if (!st) st = model_tp_gather(m, CO_TP_AG_FWD, a->t_out, a->tp_fwd, R, A, e);
        kr = a->tp_fwd, krld = R;
    }
    if (!st) st = copy(m, R, H, kr, krld, 0, at(k, A, nope), W, D, e);              /* k_rope, shared */
    if (!st) st = copy(m, Dv, H, at(a->m_up, A, nope), KV, nope + Dv, v, W, Dv, e); /* v per head */
    return st;
}

Status model_mla_bwd(Model *m, uint32_t l, const void *dqkv, void *dx, Err *e)
{
    Backend *bk = m->bk;
    ModelActs *a = &m->act;
    LayerActs *la = model_la(m, l);
    const ModelSpec *s = &m->spec;
    const Dtype A = m->act_dtype;
    const uint64_t H = s->heads, D = s->head_dim, nope = s->qk_nope_head_dim, R = s->qk_rope_head_dim;
    const uint64_t Dv = s->v_head_dim, kl = s->kv_lora_rank, ql = s->q_lora_rank, W = model_attn_w(s);
    const uint64_t KV = H * (nope + Dv), C = s->hidden, n = model_sp_tokens(m);
    /* q: d(q heads) → q_up's backward → (the q latent's norm, q_down's) → dx */
    Status st = copy(m, H * D, 1, dqkv, W, 0, a->d_up, H * D, H * D, e);
    if (!st) st = model_linear_bwd(m, l, LIN_Q_UP, a->d_up, ql ? a->d_lat : dx, e);
    if (!st && ql) st = latent_norm_bwd(m, l, PK_QLAT_W, la->cq, ql, la->cq_rstd, a->d_lat, a->d_lat2, e);
    if (!st && ql) st = model_linear_bwd(m, l, LIN_Q_DOWN, a->d_lat2, dx, e);
    /* kv: d(k_nope), d(v) → d(kv_up output); the heads' d(k_rope) summed → d(kv_down output)'s last R columns */
    const void *dk = at(dqkv, A, H * D), *dv = at(dqkv, A, 2 * H * D);
    if (m->tp == 1) {
        if (!st) st = copy(m, R, H, at(dk, A, nope), W, D, at(a->d_kvd, A, kl), kl + R, 0, e);
    } else { /* TP: this rank's heads' sum (tp_full, free between the linears) reduce-scattered over the ranks'
              * (gather_from_sequence_parallel_region's backward) into d_up, then into the shard's d(kv_down out) */
        if (!st) st = copy(m, R, H, at(dk, A, nope), W, D, a->tp_full, R, 0, e);
        if (!st) st = model_tp_scatter(m, CO_TP_RS_BWD, a->tp_full, a->d_up, R, e);
        if (!st) st = model_copy_strided(m, n, R, 1, a->d_up, R, 0, at(a->d_kvd, A, kl), kl + R, R, e);
    }
    if (!st) st = copy(m, nope, H, dk, W, D, a->d_up, KV, nope + Dv, e);
    if (!st) st = copy(m, Dv, H, dv, W, Dv, at(a->d_up, A, nope), KV, nope + Dv, e);
    if (!st) st = model_linear_bwd(m, l, LIN_KV_UP, a->d_up, a->d_lat, e);
    if (!st) st = latent_norm_bwd(m, l, PK_KVLAT_W, la->ckv, kl, la->ckv_rstd, a->d_lat, a->d_lat2, e);
    if (!st) st = model_copy_strided(m, n, kl, 1, a->d_lat2, kl, 0, a->d_kvd, kl + R, kl, e);
    /* kv_down's input gradient, then the two down-projections' summed: d(norm 1 output) (TP: the shard's) */
    if (!st) st = model_linear_bwd(m, l, LIN_KV_DOWN, a->d_kvd, a->d_up, e);
    if (!st) st = bk->add(bk, dx, a->d_up, dx, A, n * C, e);
    return st;
}

Status model_mla_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    if (!spec_is_mla(s)) return ST_OK;
    if (!s->qk_nope_head_dim || !s->qk_rope_head_dim || s->qk_rope_head_dim % 2 || !s->v_head_dim ||
        s->head_dim != s->qk_nope_head_dim + s->qk_rope_head_dim || s->kv_heads != s->heads)
        return err_set(
            e, ST_USAGE,
            "model %s: latent attention needs qk_nope and an even qk_rope (%u, %u given), head_dim their sum "
            "(%u), v_head_dim (%u) and kv_heads = heads (%u, %u)",
            s->name, s->qk_nope_head_dim, s->qk_rope_head_dim, s->head_dim, s->v_head_dim, s->kv_heads, s->heads);
    if (s->norm != NORM_RMSNORM || s->pos != POS_ROPE || s->qk_norm || s->linear_bias)
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the executor runs latent attention with RMSNorm, rotary positions, no q/k norms and "
                       "no linear biases (DeepSeek's)",
                       s->name);
    if (in->tp > 1 && in->recipe->gemm.dt[STATE_GRAD] != DT_FP32) /* all-reduced with the norms', in FP32 */
        return err_set(e, ST_UNAVAILABLE,
                       "--tp %u --recipe %s: latent attention's duplicated down-projections need FP32 gradients",
                       in->tp, in->recipe->name);
    return ST_OK;
}
