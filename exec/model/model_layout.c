/* exec/model/model_layout.c — the model's tensors, sizes first: the parameter
 * table and every state, FP8 copy, scale, activation and workspace tensor a
 * step needs for a plan's model and recipe, each tagged with its memory term
 * (the planner's MemTermId). Which tensors exist follows the model's columns:
 * a LayerNorm saves mean and rstd, an RMSNorm rstd; SwiGLU's FC1 is 2F wide;
 * learned positions add WPE, rotary ones the cos/sin table; untied models add
 * the LM head; biases only with linear_bias. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/model/model_internal.h"

/* The run's sizes from the plan (no memory yet). */
static void model_from_plan(const Plan *p, Model *m)
{
    m->spec = *p->in.model;
    m->spec.layers = p->stage_layers;
    m->recipe = *p->in.recipe;
    m->batch = p->in.mbs;
    m->seq = p->seq;
    m->microbatches = p->microbatches;
    m->dp = p->in.dp;
    m->vocab_padded = p->vocab_padded;
    m->act_dtype = exec_act_dtype(&m->recipe);
    model_tp_spec(p, m);
    model_pp_stage(p, m);
    /* its block after the main model's; with PP the last stage's (Megatron-Core's mtp_process stage) */
    m->mtp_model = p->in.model->mtp_layers;
    m->mtp = model_last(m) ? m->mtp_model : 0;
    m->spec.layers += m->mtp;
}

static uint64_t max2(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Scales of a (rows, cols) tensor quantized in g's blocks (partial blocks count). */
static uint64_t blocks_of(Granularity g, uint64_t rows, uint64_t cols)
{
    uint64_t n = 0, bytes;
    return gran_scale_count(g, rows, cols, &n, &bytes, NULL) ? 0 : n;
}

/* Fill the parameter table (shapes, flags, FP8 slots); no memory yet. */
static Status params_fill(Model *m, Err *e)
{
    const ModelSpec *s = &m->spec;
    const uint64_t C = s->hidden;
    const int ln = s->norm == NORM_LAYERNORM, bias = s->linear_bias;
    uint32_t cap = 3 + 24 * s->layers + 3 + 7 * m->mtp;
    ModelParam *p = calloc(cap, sizeof *p);
    if (!p) return err_set(e, ST_NOMEM, "out of memory");
    uint32_t k = 0;
#define ADD(kind_, layer_, rows_, cols_, decay_, gemm_) \
    do {                                                \
        p[k].kind = kind_;                              \
        p[k].layer = layer_;                            \
        p[k].rows = rows_;                              \
        p[k].cols = cols_;                              \
        p[k].numel = (uint64_t)(rows_) * (cols_);       \
        p[k].decay = decay_;                            \
        p[k].gemm = gemm_;                              \
        k++;                                            \
    } while (0)
    static const ParamKind lw[LIN_KINDS] = {PK_QKV_W,   PK_PROJ_W, PK_FC1_W,    PK_FC2_W,
                                            PK_QDOWN_W, PK_QUP_W,  PK_KVDOWN_W, PK_KVUP_W};
    static const ParamKind lb[LIN_COUNT] = {PK_QKV_B, PK_PROJ_B, PK_FC1_B, PK_FC2_B}; /* (no biases with MLA) */
    /* every kind a block may have, in execution order (those it lacks skipped below) */
    static const LinearKind std_order[] = {LIN_QKV, LIN_PROJ, LIN_FC1, LIN_FC2};
    static const LinearKind mla_order[] = {LIN_Q_DOWN, LIN_Q_UP, LIN_KV_DOWN, LIN_KV_UP, LIN_PROJ, LIN_FC1, LIN_FC2};
    const LinearKind *order = model_mla(m) ? mla_order : std_order;
    const int norder = model_mla(m) ? 7 : 4;
    const int first = model_first(m), last = model_last(m);
    /* the last stage's tied head or MTP's lookup (pp > 1): its own copy of the embedding (model_pp.c) */
    if (first || (last && (s->tied_embeddings || m->mtp))) ADD(PK_WTE, -1, model_vocab_rows(m), C, 1, 0);
    if (first && s->pos == POS_LEARNED) ADD(PK_WPE, -1, m->seq, C, 1, 0);
    for (uint32_t l = 0; l < s->layers; l++) {
        int L = (int)(l + m->layer0); /* the model's layer index (the initial values' stream) */
        if (model_mtp_block(m, l)) {  /* the MTP depth's enorm, hnorm and eh_proj (C, 2C) */
            for (ParamKind nw = PK_ENORM_W; nw <= PK_HNORM_W; nw = (ParamKind)(nw + 2)) {
                ADD(nw, L, C, 1, 0, 0);
                if (ln) ADD((ParamKind)(nw + 1), L, C, 1, 0, 0);
            }
            ADD(PK_EHPROJ_W, L, model_lin_n(m, l, LIN_EH_PROJ), model_lin_k(m, l, LIN_EH_PROJ), 1, 1);
            p[k - 1].wslot = model_slot_w(m, l, LIN_EH_PROJ);
        }
        for (int oi = 0; oi < norder; oi++) {
            const LinearKind j = order[oi];
            if (j == LIN_Q_DOWN && !s->q_lora_rank) continue; /* no q latent: q_up reads the block input */
            if (j == model_attn_in(m) || j == LIN_FC1) {      /* the norm before the attention and before FC1 */
                ParamKind nw = j == LIN_FC1 ? PK_NORM2_W : PK_NORM1_W;
                ADD(nw, L, C, 1, 0, 0);
                if (ln) ADD((ParamKind)(nw + 1), L, C, 1, 0, 0); /* PK_NORM1_B, PK_NORM2_B */
            }
            if (j == LIN_FC1 && model_moe_layer(m, l)) { /* the router, the routed experts (a sigmoid router's
                                                            bias is a buffer: persistent() below) */
                uint64_t E = s->experts, El = E / (m->ep ? m->ep : 1), Fe = model_xffn(m); /* El: this rank's */
                ADD(PK_ROUTER_W, L, E, C, 1, 0);
                ADD(PK_XFC1_W, L, El * spec_fc1_k(s) * Fe, C, 1, 1);
                p[k - 1].expert = 1;
                p[k - 1].wslot = model_slot_expert(m, l, 0, 1);
                ADD(PK_XFC2_W, L, El * C, Fe, 1, 1);
                p[k - 1].expert = 1;
                p[k - 1].wslot = model_slot_expert(m, l, 1, 1);
            }
            if ((j == LIN_FC1 || j == LIN_FC2) && !model_ffn_of(m, l)) continue; /* no shared experts */
            uint64_t n = model_lin_n(m, l, (LinearKind)j), kk = model_lin_k(m, l, (LinearKind)j);
            ADD(lw[j], L, n, kk, 1, 1);
            p[k - 1].wslot = model_slot_w(m, l, (LinearKind)j);
            if (bias && (int)j < LIN_COUNT) ADD(lb[j], L, n, 1, 0, 0);
            if (j == LIN_Q_DOWN) ADD(PK_QLAT_W, L, s->q_lora_rank, 1, 0, 0); /* the latents' norms */
            if (j == LIN_KV_DOWN) ADD(PK_KVLAT_W, L, s->kv_lora_rank, 1, 0, 0);
            if (j == LIN_QKV && s->qk_norm) { /* the q/k norms: the plan's 2 x head_dim "other" weights */
                ADD(PK_QNORM_W, L, s->head_dim, 1, 0, 0);
                ADD(PK_KNORM_W, L, s->head_dim, 1, 0, 0);
            }
        }
    }
    if (last) ADD(PK_NORMF_W, -1, C, 1, 0, 0);
    if (last && ln) ADD(PK_NORMF_B, -1, C, 1, 0, 0);
    if (last && !s->tied_embeddings) ADD(PK_LM_HEAD, -1, model_vocab_rows(m), C, 1, 0);
    for (uint32_t d = 0; d < m->mtp; d++) { /* the MTP depth's own final norm (the head is the model's) */
        int L = (int)(s->layers - m->mtp + d + m->layer0);
        ADD(PK_MTPNORM_W, L, C, 1, 0, 0);
        if (ln) ADD(PK_MTPNORM_B, L, C, 1, 0, 0);
    }
#undef ADD
    m->params = p;
    m->nparams = k;
    return ST_OK;
}

const char *model_param_name(ParamKind k)
{
    static const char *names[PK_COUNT] = {
        "wte",
        "wpe",
        "norm1.w",
        "norm1.b",
        "qkv.w",
        "qkv.b",
        "proj.w",
        "proj.b",
        "norm2.w",
        "norm2.b",
        "fc1.w",
        "fc1.b",
        "fc2.w",
        "fc2.b",
        "normf.w",
        "normf.b",
        "lm_head",
        "router.w",
        "router.b",
        "experts.fc1.w",
        "experts.fc2.w",
        "q_norm.w",
        "k_norm.w",
        "q_down.w",
        "q_latent_norm.w",
        "q_up.w",
        "kv_down.w",
        "kv_latent_norm.w",
        "kv_up.w",
        "mtp.enorm.w",
        "mtp.enorm.b",
        "mtp.hnorm.w",
        "mtp.hnorm.b",
        "mtp.eh_proj.w",
        "mtp.final_norm.w",
        "mtp.final_norm.b",
    };
    return (unsigned)k < PK_COUNT ? names[k] : "?";
}

/* The terms of a parameter's states, by class (StateId order). */
static const MemTermId gemm_terms[STATE_COUNT_] = {MT_WEIGHT_GEMM, MT_MASTER_GEMM, MT_GRAD_GEMM, MT_OPTIM_M_GEMM,
                                                   MT_OPTIM_V_GEMM};
static const MemTermId other_terms[STATE_COUNT_] = {MT_WEIGHT_OTHER, MT_MASTER_OTHER, MT_GRAD_OTHER, MT_OPTIM_M_OTHER,
                                                    MT_OPTIM_V_OTHER};
static const MemTermId expert_terms[STATE_COUNT_] = {MT_WEIGHT_EXPERT, MT_MASTER_EXPERT, MT_GRAD_EXPERT,
                                                     MT_OPTIM_M_EXPERT, MT_OPTIM_V_EXPERT};

/* Persistent: per parameter, every state the recipe keeps, its FP8 copies and
 * scaling records; then the sharded states, a sigmoid router's bias buffer and the FP8 GEMMs' scaling banks. */
static void persistent(Model *m, int bind, ArenaSpecs *sp, uint64_t *wmax, uint64_t *pmax)
{
    const Recipe *r = &m->recipe;
    const int fp8 = recipe_fp8_gemm(r);
    for (uint32_t i = 0; i < m->nparams; i++) {
        ModelParam *q = &m->params[i];
        const char *nm = model_param_name(q->kind);
        const StateSet *st = q->gemm ? &r->gemm : &r->other;
        const MemTermId *tm = q->expert ? expert_terms : q->gemm ? gemm_terms : other_terms;
        void **dst[STATE_COUNT_] = {&q->weight, &q->master, &q->grad, &q->m, &q->v};
        for (int k = 0; k < STATE_COUNT_; k++) /* a sharded state: in the class's shard below */
            if (st->dt[k] != DT_NONE && !(m->shard_mask[model_class(q)] >> k & 1))
                arena_add(sp, tm[k], st->dt[k], q->numel, bind ? dst[k] : NULL, nm, q->layer);
        /* the routed experts' copies are the plan's MT_FP8_EXPERT (both layouts in one term) */
        if (q->gemm && fp8 && r->fp8_row != DT_NONE)
            arena_add(sp, q->expert ? MT_FP8_EXPERT : MT_FP8_ROWWISE, r->fp8_row, q->numel, bind ? &q->wq_row : NULL,
                      nm, q->layer);
        if (q->gemm && fp8 && r->fp8_col != DT_NONE)
            arena_add(sp, q->expert ? MT_FP8_EXPERT : MT_FP8_COLWISE, r->fp8_col, q->numel, bind ? &q->wq_col : NULL,
                      nm, q->layer);
        if (q->gemm && exec_block_scaled(r)) { /* the copies' 128x128 blocks (fp8/granularity.h's counts); the
                                                  routed experts' each of its own (N/G, K) weight */
            const uint64_t G = q->expert ? m->spec.experts / m->ep : 1, n = q->rows / G;
            uint64_t nr = G * blocks_of(r->weight_gran, n, q->cols), nc = G * blocks_of(r->weight_gran, q->cols, n);
            arena_add(sp, MT_SCALE_BLOCK, DT_FP32, nr, bind ? &q->wq_row_s : NULL, nm, q->layer);
            arena_add(sp, MT_SCALE_BLOCK, DT_FP32, nc, bind ? &q->wq_col_s : NULL, nm, q->layer);
        }
        float **rec[STATE_COUNT_] = {&q->weight_rec, &q->master_rec, &q->grad_rec, &q->m_rec, &q->v_rec};
        for (int k = STATE_WEIGHT; k < STATE_COUNT_; k++)
            if (exec_state_scaled(st, (StateId)k))
                arena_add(sp, MT_SCALE_STATE, DT_FP32, REC_FLOATS, bind ? rec[k] : NULL, nm, q->layer);
        if (q->gemm) *wmax = max2(*wmax, q->numel);
        if (q->kind != PK_WTE && q->kind != PK_WPE && q->kind != PK_LM_HEAD) *pmax = max2(*pmax, q->numel);
    }
    static const char *const shard_names[MODEL_CLASSES][STATE_COUNT_] = {
        {"", "master.shard", "grad.shard", "adam_m.shard", "adam_v.shard"},
        {"", "other.master.shard", "other.grad.shard", "other.adam_m.shard", "other.adam_v.shard"},
        {"", "expert.master.shard", "expert.grad.shard", "expert.adam_m.shard", "expert.adam_v.shard"}};
    const MemTermId *const class_terms[MODEL_CLASSES] = {gemm_terms, other_terms, expert_terms};
    const StateSet *const class_set[MODEL_CLASSES] = {&r->gemm, &r->other, &r->gemm};
    /* Every class's gradients back to back: one buffer, one all-reduce (or reduce-scatter) call, as Megatron-Core's
     * grad buffer. A tensor stays 16 B aligned (the CUDA kernels' vector loads) when the bytes before it in its
     * class are a multiple of 16: every gradient of a model whose dimensions FP8 tensor cores accept (multiples of
     * 16) is; an odd one's (tiny-odd) take the kernels' element-wise paths, which each vector kernel keeps for an
     * unaligned pointer (k_elem, k_norm, k_quant, k_moe_perm; cuBLASLt is told each pointer's alignment). A sharded
     * class's working weights too: one buffer, one all-gather. */
    for (int c = 0; c < MODEL_CLASSES; c++) {
        sp->packed[class_terms[c][STATE_GRAD]] = 1;
        if (m->class_ways[c] > 1) sp->packed[class_terms[c][STATE_WEIGHT]] = 1;
    }
    for (int c = 0; c < MODEL_CLASSES; c++) /* this rank's shard of each sharded state: ceil(E / N) elements */
        for (int k = 0; k < STATE_COUNT_; k++)
            if (m->shard_mask[c] >> k & 1)
                arena_add(sp, class_terms[c][k], class_set[c]->dt[k], m->shard_elems[c],
                          bind ? &m->shard_buf[c][k] : NULL, shard_names[c][k], -1);
    if (m->spec.router == ROUTER_SIGMOID) { /* the routers' biases: one FP32 buffer (MoE layers, E), every rank's */
        uint64_t nx = 0;
        for (uint32_t l = 0; l < m->spec.layers; l++) nx += (uint64_t)model_moe_layer(m, l);
        if (nx)
            arena_add(sp, MT_ROUTER_BIAS, DT_FP32, nx * m->spec.experts, bind ? &m->expert_bias : NULL,
                      "router.expert_bias", -1);
    }
    if (fp8 && !exec_block_scaled(r)) { /* scaling banks: forward (x, w per linear) and backward (dy per linear) */
        uint64_t hist = exec_history_len(r), nb = model_fp8_tensors(m), nf = 2 * nb;
        ModelScaling *sc = bind ? &m->sc : NULL;
        arena_add(sp, MT_SCALE_GEMM, DT_FP32, hist * nf, sc ? &sc->fwd.amax_history : NULL, "fwd.amax_history", -1);
        arena_add(sp, MT_SCALE_GEMM, DT_FP32, nf, sc ? &sc->fwd.scale : NULL, "fwd.scale", -1);
        arena_add(sp, MT_SCALE_GEMM, DT_FP32, nf, sc ? &sc->fwd.scale_inv : NULL, "fwd.scale_inv", -1);
        arena_add(sp, MT_SCALE_GEMM, DT_FP32, hist * nb, sc ? &sc->bwd.amax_history : NULL, "bwd.amax_history", -1);
        arena_add(sp, MT_SCALE_GEMM, DT_FP32, nb, sc ? &sc->bwd.scale : NULL, "bwd.scale", -1);
        arena_add(sp, MT_SCALE_GEMM, DT_FP32, nb, sc ? &sc->bwd.scale_inv : NULL, "bwd.scale_inv", -1);
    }
}

/* Activations saved for backward (Korthikanti's items, no dropout), the final
 * norm and logits, and the executor-only tensors. */
static void saved(Model *m, int bind, ArenaSpecs *sp)
{
    const ModelSpec *s = &m->spec;
    const Recipe *r = &m->recipe;
    const uint64_t B = m->batch, T = m->seq, C = s->hidden, H = s->heads, L = s->layers, BT = B * T;
    const uint64_t BTs = model_sp_tokens(m); /* the sequence-parallel regions' tokens (B·T at tp 1) */
    const Dtype A = m->act_dtype;
    const int ln = s->norm == NORM_LAYERNORM, save_fp8 = recipe_fp8_gemm(r) && dtype_is_fp8(r->saved_input);
    ModelActs *a = bind ? &m->act : NULL;
    for (uint64_t sl = 0; sl < L * m->slots; sl++) { /* 1F1B: every in-flight micro-batch's */
        LayerActs *la = a ? &a->layer[sl] : NULL;
        int li = (int)(sl % L + m->layer0);
        arena_add(sp, MT_ACT_LAYER_HP, A, BTs * C, la ? &la->x : NULL, "x", li);
        if (ln) arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, la ? &la->norm1_mean : NULL, "norm1.mean", li);
        arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, la ? &la->norm1_rstd : NULL, "norm1.rstd", li);
        arena_add(sp, MT_ACT_LAYER_HP, A, BT * model_attn_w(s), la ? &la->qkv : NULL, "qkv", li);
        if (model_mla(m) && s->q_lora_rank) { /* the latents as projected (their norms' inputs) and the norms' rstd */
            arena_add(sp, MT_ACT_LAYER_HP, A, BTs * s->q_lora_rank, la ? &la->cq : NULL, "q_latent", li);
            arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, la ? &la->cq_rstd : NULL, "q_latent_norm.rstd", li);
        }
        if (model_mla(m)) { /* TP: on the sequence shard, as the duplicated down-projections make them */
            arena_add(sp, MT_ACT_LAYER_HP, A, BTs * s->kv_lora_rank, la ? &la->ckv : NULL, "kv_latent", li);
            arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, la ? &la->ckv_rstd : NULL, "kv_latent_norm.rstd", li);
        }
        arena_add(sp, MT_ACT_ATTN, A, B * H * T * T, la ? &la->probs : NULL, "probs", li);
        arena_add(sp, MT_ACT_LAYER_HP, A, BTs * C, la ? &la->res2 : NULL, "res2", li);
        if (ln) arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, la ? &la->norm2_mean : NULL, "norm2.mean", li);
        arena_add(sp, MT_ACT_LAYER_HP, DT_FP32, BTs, la ? &la->norm2_rstd : NULL, "norm2.rstd", li);
        uint32_t l = (uint32_t)(sl % L);
        if (model_ffn_of(m, l))
            arena_add(sp, MT_ACT_LAYER_HP, A, BT * model_lin_n(m, l, LIN_FC1), la ? &la->fc1 : NULL, "fc1", li);
        if (model_moe_layer(m, l)) model_moe_saved(m, bind, sp, la, l, li);
        LinearKind ks[LIN_KINDS];
        uint32_t nk = model_block_linears(m, l, ks);
        for (uint32_t ki = 0; ki < nk; ki++) {
            const LinearKind k = ks[ki];
            uint64_t K = model_lin_k(m, l, k);
            if (k == LIN_KV_DOWN && !save_fp8) continue; /* kv_down's BF16 input is the q projection's */
            /* the shard a column-parallel input keeps, or a duplicated one runs on */
            uint64_t BTk = model_tp_col(m, (LinearKind)k) || model_tp_dup(m, (LinearKind)k) ? BTs : BT;
            if (save_fp8 && exec_block_scaled(r) && model_tp_col(m, k)) { /* TP: codes, then their scales */
                arena_add(sp, MT_ACT_LAYER_FP8, r->saved_input, model_tp_block_seg(K, BTk), la ? &la->q_col[k] : NULL,
                          "input.fp8_col+scale_inv", li);
                continue;
            }
            if (save_fp8 && exec_block_scaled(r)) /* its tiles along the tokens: (K, ceil(B·T/128)) */
                arena_add(sp, MT_ACT_LAYER_FP8, DT_FP32, blocks_of(r->act_gran, K, BTk), la ? &la->q_col_s[k] : NULL,
                          "input.fp8_col.scale_inv", li);
            if (save_fp8)
                arena_add(sp, MT_ACT_LAYER_FP8, r->saved_input, K * BTk, la ? &la->q_col[k] : NULL, "input.fp8_col",
                          li);
            else
                arena_add(sp, MT_ACT_LAYER_HP, A, BTk * K, la ? &la->act_in[k] : NULL, "input", li);
        }
    }
    if (model_last(m)) { /* the final norm and the logits: the last stage's */
        arena_add(sp, MT_ACT_OUTPUT, A, BTs * C, a ? &a->x_final : NULL, "x_final", -1);
        if (ln) arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BTs, a ? &a->normf_mean : NULL, "normf.mean", -1);
        arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BTs, a ? &a->normf_rstd : NULL, "normf.rstd", -1);
        arena_add(sp, MT_ACT_OUTPUT, A, BTs * C, a ? &a->normf_out : NULL, "normf.out", -1);
        arena_add(sp, MT_ACT_OUTPUT, DT_FP32, BT * model_vocab_rows(m), a ? &a->logits : NULL, "logits", -1);
        if (m->mtp) model_mtp_saved(m, bind, sp);
    }
    arena_add_i32(sp, XT_IO, BT * m->slots, a ? &a->tokens : NULL, "tokens", -1);
    arena_add_i32(sp, XT_IO, BT, a ? &a->targets : NULL, "targets", -1);
    arena_add(sp, XT_IO, DT_FP32, BT, a ? &a->losses : NULL, "losses", -1);
    if (s->pos == POS_ROPE)
        arena_add(sp, XT_ROPE, DT_FP32, T * model_rope_dim(s), a ? &a->rope : NULL, "rope.cos_sin", -1);
}

/* Working buffers: live for the whole backward, or only in one phase (overlaid). */
static void transient(Model *m, int bind, uint64_t wmax, uint64_t pmax, uint64_t ws, ArenaSpecs *sp)
{
    const ModelSpec *s = &m->spec;
    const Recipe *r = &m->recipe;
    const uint64_t B = m->batch, T = m->seq, C = s->hidden, H = s->heads, BT = B * T;
    const uint64_t Vp = m->vocab_padded;
    uint64_t F = 0; /* the widest FFN of the stage's layers */
    for (uint32_t l = 0; l < s->layers; l++) F = max2(F, model_ffn_of(m, l));
    const Dtype A = m->act_dtype;
    const int fp8 = recipe_fp8_gemm(r), save_fp8 = fp8 && dtype_is_fp8(r->saved_input);
    /* gradients not kept in FP32 are summed in FP32 staging first: the linear weights' only
     * during the block backward, the other parameters' (norms, biases, final norm) throughout */
    int gemm_staged = r->gemm.dt[STATE_GRAD] != DT_FP32, other_staged = r->other.dt[STATE_GRAD] != DT_FP32;
    /* the widest GEMM input K and output N; dstd: the widest output whose gradient d_a holds (QKV's, FC1's):
     * latent attention's own linears have their own (mla.*), and under TP q_down's q_lora-wide output can be
     * wider than this rank's heads */
    uint64_t wide = 0, dwide = 0, dstd = 0;
    for (uint32_t l = 0; l < s->layers; l++) {
        LinearKind ks[LIN_KINDS];
        uint32_t nk = model_block_linears(m, l, ks);
        for (uint32_t ki = 0; ki < nk; ki++) {
            wide = max2(wide, model_lin_k(m, l, ks[ki]));
            dwide = max2(dwide, model_lin_n(m, l, ks[ki]));
            if (ks[ki] < LIN_Q_DOWN) dstd = max2(dstd, model_lin_n(m, l, ks[ki]));
        }
    }
    uint64_t qrow = BT * wide, dq = BT * dwide; /* FP8 copies of a GEMM input and of an output gradient */
    /* block scaling: the tiles of the row-wise input and of both output gradients' copies */
    uint64_t qrow_s = blocks_of(r->act_gran, BT, wide), dq_s = blocks_of(r->act_gran, BT, dwide),
             dqc_s = blocks_of(r->act_gran, dwide, BT);
    if (m->tp > 1) /* TP: each rank's tokens tiled from their first (model_tp_block_dy_col) */
        dqc_s = max2(dqc_s, m->tp * blocks_of(r->act_gran, dwide, model_sp_tokens(m)));
    for (uint32_t l = 0; l < s->layers; l++)
        if (model_moe_layer(m, l)) { /* the experts' (exec/model/model_moe_fp8.c, model_moe_block.c): R rows, the
                                        ETP group's at ep 1 x etp > 1 (model_etp_arena) */
            uint64_t R = model_moe_xrows(m), Fe = model_xffn(m), dmax = max2(C, max2(spec_fc1_k(s) * Fe, Fe));
            qrow = max2(qrow, R * max2(C, Fe));
            dq = max2(dq, R * dmax);
            qrow_s = max2(qrow_s, max2(blocks_of(r->act_gran, R, C), blocks_of(r->act_gran, R, Fe)));
            dq_s = max2(dq_s, blocks_of(r->act_gran, R, dmax)); /* the recomputed FC2 input's (R, Fe) too */
            dqc_s = max2(dqc_s, dmax * model_moe_tiles(R, s->experts / m->ep)); /* each expert from its first row */
        }
    ModelActs *a = bind ? &m->act : NULL;
    /* d_res: the sequence-parallel tokens; d_b also the attention output's gradient (B·T, H·D) (TP: H/tp) —
     * with latent attention the output projection's input, H·v_head_dim: its q and k heads (qk_nope + qk_rope)
     * are wider than its value heads, and only those reach the output */
    const uint64_t BTs = model_sp_tokens(m), qd = BT * (model_mla(m) ? model_lin_k(m, 0, LIN_PROJ) : model_q_dim(s));
    arena_add(sp, MT_TRANSIENT, A, BTs * C, a ? &a->d_res : NULL, "d_res", -1);
    arena_add(sp, MT_TRANSIENT, A, max2(BTs * C, qd), a ? &a->d_b : NULL, "d_b", -1);
    if (other_staged) {
        uint64_t emb = Vp * C + (s->pos == POS_LEARNED ? T * C : 0) + (s->tied_embeddings ? 0 : Vp * C);
        arena_add(sp, MT_TRANSIENT, DT_FP32, emb, a ? &a->gstage_emb : NULL, "grad_stage_emb", -1);
        /* two at once: a LayerNorm's weight and bias */
        arena_add(sp, MT_TRANSIENT, DT_FP32, pmax + C, a ? &a->gstage : NULL, "grad_stage", -1);
    }
    /* forward */
    if (save_fp8) arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, BT * wide, a ? &a->t_in : NULL, "t_in");
    if (fp8) arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, r->gemm_fwd, qrow, a ? &a->t_qrow : NULL, "t_qrow");
    if (fp8 && r->fp8_row == DT_NONE)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, r->gemm_fwd, wmax, a ? &a->t_wrow : NULL, "t_wrow");
    if (exec_block_scaled(r)) { /* the 1x128 tiles' scale_inv of the row-wise input and both output gradients */
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, DT_FP32, qrow_s, a ? &a->t_qrow_s : NULL,
                        "t_qrow.scale_inv");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, dq_s, a ? &a->d_qrow_s : NULL,
                        "d_qrow.scale_inv");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, dqc_s, a ? &a->d_qcol_s : NULL,
                        "d_qcol.scale_inv");
    }
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, BT * C, a ? &a->t_out : NULL, "t_out");
    if (s->qk_norm) { /* the attention's normalized, rotated input (the saved QKV output is the norms' input) */
        uint64_t W = model_linear_n(s, LIN_QKV), nh = (uint64_t)s->heads + s->kv_heads;
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, BT * W, a ? &a->t_qkv : NULL, "qk_norm.qkv");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, DT_FP32, BT * nh, a ? &a->t_qkrstd : NULL, "qk_norm.rstd");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BT * W, a ? &a->b_qkv : NULL, "qk_norm.qkv");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, BT * nh, a ? &a->b_qkrstd : NULL,
                        "qk_norm.rstd");
    }
    /* the attention forward's FP32 scores, one sequence's heads at a time (a backend may use them) */
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, DT_FP32, H * T * T, a ? &a->attn_scores : NULL, "attn_scores");
    /* LM-head backward: the last pipeline stage's (the others receive d(output) from the next stage) */
    if (model_last(m))
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_HEAD, A, BT * model_vocab_rows(m), a ? &a->dlogits : NULL,
                        "dlogits");
    /* block backward */
    /* d_a: also d(the attention's q/k/v rows), wider than any linear's output with latent attention */
    /* and MTP's d([enorm; hnorm]) (B·T, 2C) */
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BT * max2(max2(dstd, model_attn_w(s)), m->mtp ? 2 * C : 0),
                    a ? &a->d_a : NULL, "d_a");
    if (model_mla(m)) { /* latent attention's working rows (exec/model/model_mla.c) */
        const uint64_t kvd = (uint64_t)s->kv_lora_rank + s->qk_rope_head_dim,
                       lat = max2(s->q_lora_rank, s->kv_lora_rank);
        const uint64_t up = max2(model_lin_n(m, 0, LIN_Q_UP), model_lin_n(m, 0, LIN_KV_UP));
        /* TP: the duplicated down-projections and the latents' norms run on the sequence shard, BTs rows, as
         * Megatron-Core's (kv_compressed "[s / TP, b, kv_lora_rank]"); the up-projections' outputs are every token's */
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, BTs * kvd, a ? &a->m_kvd : NULL, "mla.kv_down_out");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, BT * up, a ? &a->m_up : NULL, "mla.up_out");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BTs * kvd, a ? &a->d_kvd : NULL, "mla.d_kv_down_out");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, max2(BT * up, BTs * C), a ? &a->d_up : NULL,
                        "mla.d_up");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BTs * lat, a ? &a->d_lat : NULL, "mla.d_latent");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BTs * lat, a ? &a->d_lat2 : NULL, "mla.d_latent_in");
    }
    if (s->mlp == MLP_SWIGLU && F)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BT * F, a ? &a->d_act : NULL, "d_act");
    model_moe_transient(m, bind, sp);
    if (fp8) {
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, r->gemm_bwd, dq, a ? &a->d_qrow : NULL, "d_qrow");
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, r->gemm_bwd, dq, a ? &a->d_qcol : NULL, "d_qcol");
    }
    if (fp8 && !save_fp8)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, r->gemm_fwd, wide * BT, a ? &a->t_qcol : NULL, "t_qcol");
    if (fp8 && r->fp8_col == DT_NONE)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, r->gemm_fwd, wmax, a ? &a->t_wcol : NULL, "t_wcol");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, B * H * T * T, a ? &a->attn_scratch : NULL,
                    "attn_scratch");
    if (gemm_staged && !other_staged)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, wmax, a ? &a->gstage : NULL, "grad_stage");
    model_tp_layout(m, bind, sp);
    model_pp_layout(m, bind, sp);
    if (ws) /* bytes, not typed elements */
        arena_add_(sp, MT_WORKSPACE, DT_NONE, 1, ws, ADST_VOID, bind ? (void *)&m->bk->gemm_workspace : NULL,
                   "gemm_workspace", -1);
}

/* Every tensor of the configuration; bind = 0 counts only (no addresses). */
static Status layout(Model *m, int bind, ArenaSpecs *sp, Err *e)
{
    uint64_t wmax = 0, pmax = 0;
    persistent(m, bind, sp, &wmax, &pmax);
    saved(m, bind, sp);
    transient(m, bind, wmax, pmax, bind ? m->bk->gemm_workspace_bytes : 0, sp);
    uint64_t bytes[ARENA_TERMS];
    return arena_specs_bytes(sp, bytes, e);
}

Status model_layout(const Plan *p, ArenaSpecs *specs, Err *e)
{
    Status st = model_check(p, e);
    if (st) return st;
    Model m;
    memset(&m, 0, sizeof m);
    model_from_plan(p, &m);
    if ((st = params_fill(&m, e))) return st;
    model_shard_plan(&m, p);
    st = layout(&m, 0, specs, e);
    free(m.params);
    return st;
}

Status model_layout_bind(Model *m, const Plan *p, ArenaSpecs *specs, Err *e)
{
    model_from_plan(p, m);
    Status st = params_fill(m, e);
    if (st) return st;
    model_shard_plan(m, p);
    m->act.layer = calloc((size_t)m->spec.layers * m->slots, sizeof *m->act.layer);
    if (!m->act.layer) return err_set(e, ST_NOMEM, "out of memory");
    return layout(m, 1, specs, e);
}
