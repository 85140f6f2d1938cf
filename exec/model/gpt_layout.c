/* exec/model/gpt_layout.c — the model's tensors, sizes first: the parameter table
 * and every state, FP8 copy, scale, activation and workspace tensor a step
 * needs for a shape and recipe, each tagged with its memory term. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/model/gpt.h"
#include "exec/model/gpt_internal.h"

Status gpt_shape_check(const GptShape *s, Err *e)
{
    if (!s->layers) return err_set(e, ST_USAGE, "--layers must be at least 1");
    if (!s->hidden) return err_set(e, ST_USAGE, "--hidden must be at least 1");
    if (!s->heads) return err_set(e, ST_USAGE, "--heads must be at least 1");
    if (s->hidden % s->heads)
        return err_set(e, ST_USAGE, "--hidden %u is not a multiple of --heads %u", s->hidden, s->heads);
    if (!s->ffn) return err_set(e, ST_USAGE, "the FFN width must be at least 1");
    if (s->seq < 2) return err_set(e, ST_USAGE, "--seq must be at least 2");
    if (!s->batch) return err_set(e, ST_USAGE, "--mbs must be at least 1");
    if (s->vocab < 2) return err_set(e, ST_USAGE, "the vocabulary must have at least 2 tokens");
    if (s->vocab > INT32_MAX)
        return err_set(e, ST_USAGE, "vocabulary %llu does not fit int32 token ids", (unsigned long long)s->vocab);
    if (s->vocab_padded < s->vocab)
        return err_set(e, ST_USAGE, "padded vocabulary %llu is below the vocabulary %llu",
                       (unsigned long long)s->vocab_padded, (unsigned long long)s->vocab);
    if ((uint64_t)s->batch * s->seq > UINT32_MAX)
        return err_set(e, ST_USAGE, "--mbs x --seq = %llu tokens per step is too many",
                       (unsigned long long)s->batch * s->seq);
    return ST_OK;
}

/* Fill the parameter table (shapes, flags, FP8 slots); no memory yet. */
static Status params_fill(const GptShape *s, GptParam **out, uint32_t *n, Err *e)
{
    uint64_t C = s->hidden, F = s->ffn;
    uint32_t per_layer = s->biases ? 12 : 8, cap = 2 + per_layer * s->layers + 3;
    GptParam *p = calloc(cap, sizeof *p);
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
    ADD(PK_WTE, -1, s->vocab_padded, C, 1, 0);
    ADD(PK_WPE, -1, s->seq, C, 1, 0);
    for (uint32_t l = 0; l < s->layers; l++) {
        int L = (int)l;
        ADD(PK_LN1_W, L, C, 1, 0, 0);
        ADD(PK_LN1_B, L, C, 1, 0, 0);
        ADD(PK_QKV_W, L, 3 * C, C, 1, 1);
        p[k - 1].wslot = gpt_slot_w(l, LIN_QKV);
        if (s->biases) ADD(PK_QKV_B, L, 3 * C, 1, 0, 0);
        ADD(PK_PROJ_W, L, C, C, 1, 1);
        p[k - 1].wslot = gpt_slot_w(l, LIN_PROJ);
        if (s->biases) ADD(PK_PROJ_B, L, C, 1, 0, 0);
        ADD(PK_LN2_W, L, C, 1, 0, 0);
        ADD(PK_LN2_B, L, C, 1, 0, 0);
        ADD(PK_FC1_W, L, F, C, 1, 1);
        p[k - 1].wslot = gpt_slot_w(l, LIN_FC1);
        if (s->biases) ADD(PK_FC1_B, L, F, 1, 0, 0);
        ADD(PK_FC2_W, L, C, F, 1, 1);
        p[k - 1].wslot = gpt_slot_w(l, LIN_FC2);
        if (s->biases) ADD(PK_FC2_B, L, C, 1, 0, 0);
    }
    ADD(PK_LNF_W, -1, C, 1, 0, 0);
    ADD(PK_LNF_B, -1, C, 1, 0, 0);
    if (!s->tied) ADD(PK_LM_HEAD, -1, s->vocab_padded, C, 1, 0);
#undef ADD
    *out = p;
    *n = k;
    return ST_OK;
}

static const char *param_name(ParamKind k)
{
    static const char *names[PK_COUNT] = {
        "wte",   "wpe",   "ln1.w", "ln1.b", "qkv.w", "qkv.b", "proj.w", "proj.b",  "ln2.w",
        "ln2.b", "fc1.w", "fc1.b", "fc2.w", "fc2.b", "lnf.w", "lnf.b",  "lm_head",
    };
    return (unsigned)k < PK_COUNT ? names[k] : "?";
}

const char *gpt_param_name(ParamKind k) { return param_name(k); }

/* GEMM input width K of a block linear. */
uint64_t gpt_linear_k(const GptShape *s, LinearKind k) { return k == LIN_FC2 ? s->ffn : s->hidden; }
/* GEMM output width N of a block linear. */
uint64_t gpt_linear_n(const GptShape *s, LinearKind k)
{
    switch (k) {
    case LIN_QKV: return 3 * (uint64_t)s->hidden;
    case LIN_FC1: return s->ffn;
    default: return s->hidden;
    }
}

static uint64_t max2(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The terms of a parameter's states, by class. */
static const ExecTerm gemm_terms[ES_COUNT] = {TERM_WEIGHT_GEMM, TERM_MASTER_GEMM, TERM_GRAD_GEMM, TERM_OPTIM_M_GEMM,
                                              TERM_OPTIM_V_GEMM};
static const ExecTerm other_terms[ES_COUNT] = {TERM_WEIGHT_OTHER, TERM_MASTER_OTHER, TERM_GRAD_OTHER,
                                               TERM_OPTIM_M_OTHER, TERM_OPTIM_V_OTHER};

/* Every tensor of the configuration; g may be NULL (count only: no addresses). */
static void layout(const GptShape *s, const ExecRecipe *r, GptParam *p, uint32_t np, Gpt *g, uint64_t ws,
                   ArenaSpecs *sp)
{
    const uint64_t B = s->batch, T = s->seq, C = s->hidden, F = s->ffn, H = s->heads, L = s->layers;
    const uint64_t BT = B * T, Vp = s->vocab_padded;
    const Dtype A = r->act;
    const int fp8 = exec_recipe_fp8(r), save_fp8 = fp8 && dtype_is_fp8(r->saved_input);
    uint64_t wmax = 0, pmax = 0;
    /* gradients not kept in FP32 are summed in FP32 staging first: the linear weights' only
     * during the block backward, the other parameters' (LN, biases, final LN) throughout */
    int gemm_staged = r->gemm.dt[ES_GRAD] != DT_FP32, other_staged = r->other.dt[ES_GRAD] != DT_FP32;
    int emb_staged = other_staged;

    /* ---- persistent: per parameter, every state the recipe keeps ---- */
    for (uint32_t i = 0; i < np; i++) {
        GptParam *q = &p[i];
        const char *nm = param_name(q->kind);
        const ExecStates *st = q->gemm ? &r->gemm : &r->other;
        const ExecTerm *tm = q->gemm ? gemm_terms : other_terms;
        void **dst[ES_COUNT] = {&q->weight, &q->master, &q->grad, &q->m, &q->v};
        for (int k = 0; k < ES_COUNT; k++)
            if (st->dt[k] != DT_NONE) arena_add(sp, tm[k], st->dt[k], q->numel, g ? dst[k] : NULL, nm, q->layer);
        if (q->gemm && fp8 && r->fp8_row != DT_NONE)
            arena_add(sp, TERM_FP8_ROWWISE, r->fp8_row, q->numel, g ? &q->wq_row : NULL, nm, q->layer);
        if (q->gemm && fp8 && r->fp8_col != DT_NONE)
            arena_add(sp, TERM_FP8_COLWISE, r->fp8_col, q->numel, g ? &q->wq_col : NULL, nm, q->layer);
        float **rec[ES_COUNT] = {NULL, &q->master_rec, &q->grad_rec, &q->m_rec, &q->v_rec};
        for (int k = ES_MASTER; k < ES_COUNT; k++)
            if (exec_state_scaled(st, (ExecStateId)k))
                arena_add(sp, TERM_SCALE_STATE, DT_FP32, REC_FLOATS, g ? rec[k] : NULL, nm, q->layer);
        if (q->gemm) wmax = max2(wmax, q->numel);
        if (q->kind != PK_WTE && q->kind != PK_WPE && q->kind != PK_LM_HEAD) pmax = max2(pmax, q->numel);
    }
    if (fp8) { /* scaling banks: forward (x, w per linear) and backward (dy per linear) */
        uint64_t hist = r->scaling == EXEC_SCALING_DELAYED ? r->amax_history : 1;
        uint64_t nf = 2 * LIN_COUNT * L, nb = LIN_COUNT * L;
        GptScaling *sc = g ? &g->sc : NULL;
        arena_add(sp, TERM_SCALE_GEMM, DT_FP32, hist * nf, sc ? &sc->fwd.amax_history : NULL, "fwd.amax_history", -1);
        arena_add(sp, TERM_SCALE_GEMM, DT_FP32, nf, sc ? &sc->fwd.scale : NULL, "fwd.scale", -1);
        arena_add(sp, TERM_SCALE_GEMM, DT_FP32, nf, sc ? &sc->fwd.scale_inv : NULL, "fwd.scale_inv", -1);
        arena_add(sp, TERM_SCALE_GEMM, DT_FP32, hist * nb, sc ? &sc->bwd.amax_history : NULL, "bwd.amax_history", -1);
        arena_add(sp, TERM_SCALE_GEMM, DT_FP32, nb, sc ? &sc->bwd.scale : NULL, "bwd.scale", -1);
        arena_add(sp, TERM_SCALE_GEMM, DT_FP32, nb, sc ? &sc->bwd.scale_inv : NULL, "bwd.scale_inv", -1);
    }

    /* ---- activations saved for backward (Korthikanti's items, no dropout) ---- */
    GptActs *a = g ? &g->act : NULL;
    for (uint64_t l = 0; l < L; l++) {
        GptLayerActs *la = a ? &a->layer[l] : NULL;
        int li = (int)l;
        arena_add(sp, TERM_ACT_LAYER_HP, A, BT * C, la ? &la->x : NULL, "x", li);
        arena_add(sp, TERM_ACT_LAYER_HP, DT_FP32, BT, la ? &la->ln1_mean : NULL, "ln1.mean", li);
        arena_add(sp, TERM_ACT_LAYER_HP, DT_FP32, BT, la ? &la->ln1_rstd : NULL, "ln1.rstd", li);
        arena_add(sp, TERM_ACT_LAYER_HP, A, BT * 3 * C, la ? &la->qkv : NULL, "qkv", li);
        arena_add(sp, TERM_ACT_ATTN, A, B * H * T * T, la ? &la->probs : NULL, "probs", li);
        arena_add(sp, TERM_ACT_LAYER_HP, A, BT * C, la ? &la->res2 : NULL, "res2", li);
        arena_add(sp, TERM_ACT_LAYER_HP, DT_FP32, BT, la ? &la->ln2_mean : NULL, "ln2.mean", li);
        arena_add(sp, TERM_ACT_LAYER_HP, DT_FP32, BT, la ? &la->ln2_rstd : NULL, "ln2.rstd", li);
        arena_add(sp, TERM_ACT_LAYER_HP, A, BT * F, la ? &la->fc1 : NULL, "fc1", li);
        for (int k = 0; k < LIN_COUNT; k++) {
            uint64_t K = gpt_linear_k(s, (LinearKind)k);
            if (save_fp8)
                arena_add(sp, TERM_ACT_LAYER_FP8, r->saved_input, K * BT, la ? &la->q_col[k] : NULL, "input.fp8_col",
                          li);
            else
                arena_add(sp, TERM_ACT_LAYER_HP, A, BT * K, la ? &la->act_in[k] : NULL, "input", li);
        }
    }
    arena_add(sp, TERM_ACT_OUTPUT, A, BT * C, a ? &a->x_final : NULL, "x_final", -1);
    arena_add(sp, TERM_ACT_OUTPUT, DT_FP32, BT, a ? &a->lnf_mean : NULL, "lnf.mean", -1);
    arena_add(sp, TERM_ACT_OUTPUT, DT_FP32, BT, a ? &a->lnf_rstd : NULL, "lnf.rstd", -1);
    arena_add(sp, TERM_ACT_OUTPUT, A, BT * C, a ? &a->lnf_out : NULL, "lnf.out", -1);
    arena_add(sp, TERM_ACT_OUTPUT, DT_FP32, BT * Vp, a ? &a->logits : NULL, "logits", -1);
    arena_add_i32(sp, TERM_IO, BT, a ? &a->tokens : NULL, "tokens", -1);
    arena_add_i32(sp, TERM_IO, BT, a ? &a->targets : NULL, "targets", -1);
    arena_add(sp, TERM_IO, DT_FP32, BT, a ? &a->losses : NULL, "losses", -1);

    /* ---- transient working buffers: live for the whole backward, or only in one phase ---- */
    uint64_t wide = max2(C, F), dwide = max2(3 * C, F);
    arena_add(sp, TERM_TRANSIENT, A, BT * C, a ? &a->d_res : NULL, "d_res", -1);
    arena_add(sp, TERM_TRANSIENT, A, BT * C, a ? &a->d_b : NULL, "d_b", -1);
    if (emb_staged) {
        uint64_t emb = Vp * C + T * C + (s->tied ? 0 : Vp * C);
        arena_add(sp, TERM_TRANSIENT, DT_FP32, emb, a ? &a->gstage_emb : NULL, "grad_stage_emb", -1);
    }
    if (other_staged) /* two at once: an LN's weight and bias */
        arena_add(sp, TERM_TRANSIENT, DT_FP32, pmax + C, a ? &a->gstage : NULL, "grad_stage", -1);
    /* forward */
    if (save_fp8) arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_FWD, A, BT * F, a ? &a->t_in : NULL, "t_in");
    if (fp8)
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_FWD, r->gemm_fwd, BT * wide, a ? &a->t_qrow : NULL, "t_qrow");
    if (fp8 && r->fp8_row == DT_NONE)
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_FWD, r->gemm_fwd, wmax, a ? &a->t_wrow : NULL, "t_wrow");
    arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_FWD, A, BT * C, a ? &a->t_out : NULL, "t_out");
    /* the attention forward's FP32 scores, one sequence's heads at a time (a backend may use them) */
    arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_FWD, DT_FP32, H * T * T, a ? &a->attn_scores : NULL, "attn_scores");
    /* LM-head backward */
    arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_HEAD, A, BT * Vp, a ? &a->dlogits : NULL, "dlogits");
    /* block backward */
    arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, A, BT * dwide, a ? &a->d_a : NULL, "d_a");
    if (fp8) {
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, r->gemm_bwd, BT * dwide, a ? &a->d_qrow : NULL, "d_qrow");
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, r->gemm_bwd, dwide * BT, a ? &a->d_qcol : NULL, "d_qcol");
    }
    if (fp8 && !save_fp8)
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, r->gemm_fwd, wide * BT, a ? &a->t_qcol : NULL, "t_qcol");
    if (fp8 && r->fp8_col == DT_NONE)
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, r->gemm_fwd, wmax, a ? &a->t_wcol : NULL, "t_wcol");
    arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, DT_FP32, B * H * T * T, a ? &a->attn_scratch : NULL,
                    "attn_scratch");
    if (gemm_staged && !other_staged)
        arena_add_phase(sp, TERM_TRANSIENT, GPT_PHASE_BLOCKS, DT_FP32, wmax, a ? &a->gstage : NULL, "grad_stage");
    if (ws) /* bytes, not typed elements */
        arena_add_(sp, TERM_GEMM_WORKSPACE, DT_NONE, 1, ws, ADST_VOID, g ? (void *)&g->bk->gemm_workspace : NULL,
                   "gemm_workspace", -1);
}

Status gpt_layout(const GptShape *s, const ExecRecipe *r, ArenaSpecs *specs, Err *e)
{
    Status st = gpt_shape_check(s, e);
    if (!st) st = exec_recipe_check(r, e);
    if (st) return st;
    GptParam *p;
    uint32_t np;
    if ((st = params_fill(s, &p, &np, e))) return st;
    layout(s, r, p, np, NULL, 0, specs);
    free(p);
    uint64_t bytes[TERM_COUNT];
    return arena_specs_bytes(specs, bytes, e);
}

Status gpt_layout_bind(Gpt *g, ArenaSpecs *specs, Err *e)
{
    Status st = params_fill(&g->shape, &g->params, &g->nparams, e);
    if (st) return st;
    g->act.layer = calloc(g->shape.layers, sizeof *g->act.layer);
    if (!g->act.layer) return err_set(e, ST_NOMEM, "out of memory");
    layout(&g->shape, &g->recipe, g->params, g->nparams, g, g->bk->gemm_workspace_bytes, specs);
    uint64_t bytes[TERM_COUNT];
    return arena_specs_bytes(specs, bytes, e);
}
