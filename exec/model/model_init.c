/* exec/model/model_init.c — building the model: arena, scaling banks, initial values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/elem.h"
#include "exec/backend/lt_map.h"
#include "exec/model/model_internal.h"
#include "exec/backend/par.h"
#include "exec/backend/rng.h"
#include "exec/backend/scaling.h"

ModelHyper model_hyper_default(void)
{
    ModelHyper h = {.lr = 1e-3f,
                    .beta1 = 0.9f,
                    .beta2 = 0.95f,
                    .eps = 1e-8f,
                    .weight_decay = 0.1f,
                    .warmup = 0,
                    .init_std = 0.02f,
                    .seed = 1};
    return h;
}

uint64_t model_weight_count(const Model *m)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < m->nparams; i++) n += m->params[i].numel;
    return n;
}

/* ---- initial values ------------------------------------------------------------
 * GPT-2's (Megatron's for every family): N(0, std) for matrices and
 * embeddings, residual projections (proj, FC2) N(0, std/√(2L)), norm weights
 * 1, biases 0; padded vocabulary rows 0. Each
 * tensor draws from its own counter-based stream, keyed by (seed, kind, layer):
 * element i is a pure function of those and i, so the tensor is filled by all
 * host threads at once, identically for any thread count, and a tensor's
 * values do not depend on which other tensors the shape has. The host computes
 * the values for every backend, so the CPU and GPU backends start from the same
 * bits. */

enum { INIT_GRAIN = 1 << 16 }; /* elements per thread at least */

typedef struct {
    const ModelParam *p;
    float *w;      /* (numel) the values, in FP32 */
    void *buf;     /* (numel) a state's bytes */
    uint64_t key;  /* the tensor's stream */
    uint64_t live; /* elements below this get values; the rest are padded vocabulary rows (0) */
    uint64_t off;  /* the first element's index in the stream (a rank's experts: their place among all E) */
    float std;
    Dtype dt;    /* of buf */
    float scale; /* buf = dt(w · scale) */
    float amax[PAR_MAX_THREADS];
} InitJob;

static int init_normal(ParamKind k)
{
    return k == PK_WTE || k == PK_WPE || k == PK_QKV_W || k == PK_PROJ_W || k == PK_FC1_W || k == PK_FC2_W ||
           k == PK_LM_HEAD || k == PK_ROUTER_W || k == PK_XFC1_W || k == PK_XFC2_W || k == PK_QDOWN_W ||
           k == PK_QUP_W || k == PK_KVDOWN_W || k == PK_KVUP_W || k == PK_EHPROJ_W;
}

/* w[b..e) = values, and the piece's amax. */
static void fill_piece(void *ctx, int piece, uint64_t b, uint64_t e)
{
    InitJob *j = ctx;
    float *w = j->w, amax = 0.0f;
    ParamKind k = j->p->kind;
    if (init_normal(k)) {
        uint64_t live = e < j->live ? e : j->live;
        if (b < live) rng_normal_fill(j->key, j->off + b, j->off + live, j->std, w + b);
        for (uint64_t i = live > b ? live : b; i < e; i++) w[i] = 0.0f;
        for (uint64_t i = b; i < e; i++) { /* the values are finite: no NaN to propagate */
            float a = fabsf(w[i]);
            amax = a > amax ? a : amax;
        }
    } else {
        float v = k == PK_NORM1_W || k == PK_NORM2_W || k == PK_NORMF_W || k == PK_QNORM_W || k == PK_KNORM_W ||
                          k == PK_QLAT_W || k == PK_KVLAT_W || k == PK_ENORM_W || k == PK_HNORM_W || k == PK_MTPNORM_W
                      ? 1.0f
                      : 0.0f;
        for (uint64_t i = b; i < e; i++) w[i] = v;
        amax = b < e ? v : 0.0f;
    }
    j->amax[piece] = amax;
}

/* buf[b..e) = dt(w · scale). */
static void store_piece(void *ctx, int piece, uint64_t b, uint64_t e)
{
    (void)piece;
    InitJob *j = ctx;
    for (uint64_t i = b; i < e; i++) elem_store(j->buf, j->dt, i, j->w[i] * j->scale);
}

/* FP8-LM's scaled FP16 master: buf = fp16(w · scale) and w = that value / scale
 * (scale a power of two, so both are exact), the value the working copy gets. */
static void master16_piece(void *ctx, int piece, uint64_t b, uint64_t e)
{
    (void)piece;
    InitJob *j = ctx;
    uint16_t *h = j->buf;
    for (uint64_t i = b; i < e; i++) {
        h[i] = elem_fp16_from_f32(j->w[i] * j->scale); /* RNE, as elem_round */
        j->w[i] = elem_f32_from_fp16(h[i]) / j->scale;
    }
}

/* Write j->w (numel values) into a state of dtype dt through j->buf. */
static Status upload(Model *m, InitJob *j, void *dst, Dtype dt, Err *e)
{
    uint64_t n = j->p->numel;
    if (dt == DT_FP32) return m->bk->copy_to_device(m->bk, dst, j->w, n * sizeof(float), e);
    j->dt = dt;
    j->scale = 1.0f;
    par_for(n, INIT_GRAIN, store_piece, j);
    return m->bk->copy_to_device(m->bk, dst, j->buf, n * dtype_bytes(dt), e);
}

static Status init_param(Model *m, ModelParam *p, InitJob *j, Err *e)
{
    const StateSet *es = model_states(m, p);
    j->p = p;
    j->key = rng_key(m->hyper.seed, (uint64_t)p->kind << 32 | (uint32_t)(p->layer + 1));
    j->std = m->hyper.init_std;
    if (p->kind == PK_PROJ_W || p->kind == PK_FC2_W || p->kind == PK_XFC2_W)
        j->std /= sqrtf(2.0f * (float)m->layers_total);
    j->live = p->kind == PK_WTE || p->kind == PK_LM_HEAD ? (uint64_t)m->spec.vocab * p->cols : p->numel;
    j->off = p->expert ? (uint64_t)m->ep_rank * p->numel : 0; /* experts ep_rank·E/ep ..: one rank's values */
    /* a TP shard: its slice of the whole (an expert is whole on its rank at etp 1: its offset above) */
    if (m->tp > 1 && init_normal(p->kind) && p->kind != PK_WPE && !p->expert) {
        memset(j->amax, 0, sizeof j->amax);
        j->amax[0] = model_tp_fill(m, p, j->key, j->std, j->w);
    } else if (p->expert && m->etp > 1) { /* an expert's ETP shard: its columns of the one-rank values */
        memset(j->amax, 0, sizeof j->amax);
        j->amax[0] = model_etp_fill(m, p, j->key, j->std, j->w);
    } else {
        par_for(p->numel, INIT_GRAIN, fill_piece, j);
    }
    Status st = ST_OK;
    const int o1 = model_o1(m, p);
    float *rec16;
    void *w16 = model_fp16_src(m, p, &rec16);
    if (w16 || (es->dt[STATE_MASTER] == DT_FP16 && !o1)) {
        /* FP8-LM's FP16 master, MS-AMP O1's FP16 weight: scaled by a power of two; the working copy is its value */
        float amax = 0.0f, s = 1.0f;
        for (int t = 0; t < par_pieces(p->numel, INIT_GRAIN); t++) amax = fmaxf(amax, j->amax[t]);
        if (rec16) s = scaling_pow2(amax, DT_FP16, 0, 1.0f);
        j->scale = s;
        par_for(p->numel, INIT_GRAIN, master16_piece, j);
        /* a sharded master: this rank's part (O1's weight is whole on every rank) */
        int sh = !o1 && (m->shard_mask[model_class(p)] >> STATE_MASTER & 1);
        uint64_t lo = 0, n = sh ? model_own(m, p, &lo) : p->numel;
        if (n && w16) st = m->bk->copy_to_device(m->bk, w16, (uint16_t *)j->buf + lo, n * sizeof(uint16_t), e);
        float rec[REC_FLOATS] = {s, 1.0f / s, amax};
        if (!st && rec16) st = m->bk->copy_to_device(m->bk, rec16, rec, sizeof rec, e);
    } else if (es->dt[STATE_MASTER] == DT_FP32 && p->master) { /* a sharded master: this rank's part only */
        int sh = m->shard_mask[model_class(p)] >> STATE_MASTER & 1;
        uint64_t lo = 0, n = sh ? model_own(m, p, &lo) : p->numel;
        st = m->bk->copy_to_device(m->bk, p->master, j->w + lo, n * sizeof(float), e);
    }
    if (!st && p->weight && !o1) st = upload(m, j, p->weight, es->dt[STATE_WEIGHT], e);
    float one[REC_FLOATS] = {1.0f, 1.0f, 0.0f}; /* scale 1, empty amax */
    float *recs[3] = {p->grad_rec, p->m_rec, p->v_rec};
    for (int k = 0; !st && k < 3; k++)
        if (recs[k]) st = m->bk->copy_to_device(m->bk, recs[k], one, sizeof one, e);
    return st;
}

/* n floats of value v at dst. */
static Status upload_fill(Model *m, float *dst, float v, uint32_t n, Err *e)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    if (!h) return err_set(e, ST_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) h[i] = v;
    Status st = m->bk->copy_to_device(m->bk, dst, h, (uint64_t)n * sizeof *h, e);
    free(h);
    return st;
}

Status model_init_weights(Model *m, Err *e)
{
    uint64_t maxn = 0;
    for (uint32_t i = 0; i < m->nparams; i++)
        if (m->params[i].numel > maxn) maxn = m->params[i].numel;
    InitJob *j = calloc(1, sizeof *j);
    float *w = maxn <= SIZE_MAX / sizeof(float) ? malloc(maxn * sizeof(float)) : NULL;
    void *buf = w ? malloc(maxn * sizeof(float)) : NULL;
    if (!j || !w || !buf) {
        free(j), free(w), free(buf);
        return err_set(e, ST_NOMEM, "out of memory initializing %llu values", (unsigned long long)maxn);
    }
    j->w = w;
    j->buf = buf;
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < m->nparams; i++) st = init_param(m, &m->params[i], j, e);
    free(j), free(w), free(buf);
    if (st || !recipe_fp8_gemm(&m->recipe) || exec_block_scaled(&m->recipe)) return st; /* blocks: no banks */
    /* every FP8 tensor starts with scale 1 and an empty history (TE) */
    ScalingBank *banks[2] = {&m->sc.fwd, &m->sc.bwd};
    for (int b = 0; !st && b < 2; b++) {
        st = upload_fill(m, banks[b]->scale, 1.0f, banks[b]->n, e);
        if (!st) st = upload_fill(m, banks[b]->scale_inv, 1.0f, banks[b]->n, e);
    }
    return st;
}

void model_rope_table(uint32_t seq, uint32_t head_dim, double base, float *cos_sin)
{
    const uint32_t half = head_dim / 2;
    for (uint32_t t = 0; t < seq; t++)
        for (uint32_t i = 0; i < half; i++) {
            double ang = (double)t * pow(base, -2.0 * (double)i / (double)head_dim);
            cos_sin[((uint64_t)t * half + i) * 2] = (float)cos(ang);
            cos_sin[((uint64_t)t * half + i) * 2 + 1] = (float)sin(ang);
        }
}

static Status upload_rope(Model *m, Err *e)
{
    if (m->spec.pos != POS_ROPE) return ST_OK;
    const uint32_t R = model_rope_dim(&m->spec); /* latent attention: only its qk_rope columns turn */
    uint64_t n = (uint64_t)m->seq * R;
    float *t = malloc(n * sizeof *t);
    if (!t) return err_set(e, ST_NOMEM, "out of memory for the rotary table");
    model_rope_table(m->seq, R, MODEL_ROPE_BASE, t);
    Status st = m->bk->copy_to_device(m->bk, m->act.rope, t, n * sizeof *t, e);
    free(t);
    return st;
}

Status model_create(const Plan *p, const ModelHyper *h, Backend *bk, Comm *comm, Model **out, Err *e)
{
    *out = NULL;
    Status st = model_check(p, e);
    if (st) return st;
    /* before anything is allocated on the device. Expert parallelism needs the communicator's all-to-all
     * (MPI's, and NCCL's: exec/cuda/comm_nccl_a2a.cu); the CUDA backend has the MoE operations (router,
     * permute, combine, grouped GEMMs: exec/cuda/k_moe*.cu, gemm_group.cu) */
    if (spec_is_moe(p->in.model) && p->in.ep > 1 && comm && !comm->all_to_all_v)
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s on model %s with --ep %u: the %s communicator has no all-to-all for the experts' "
                       "dispatch and combine",
                       p->in.recipe->name, p->in.model->name, p->in.ep, comm->name);
    if (spec_is_moe(p->in.model) && p->in.etp > 1 && strcmp(bk->name, "cpu"))
        return err_set(e, ST_UNAVAILABLE,
                       "model %s with --etp %u: the %s backend has no expert tensor parallelism yet (the ETP group's "
                       "gather and reduce-scatter of the dispatched rows around row-split experts are checked on "
                       "the cpu backend only: --backend cpu)",
                       p->in.model->name, p->in.etp, bk->name);
    if (p->in.model->qk_norm && strcmp(bk->name, "cpu"))
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the %s backend runs no q/k norms (per-head RMSNorm before RoPE) yet; the cpu backend "
                       "does (--backend cpu)",
                       p->in.model->name, bk->name);
    if (p->in.model->mtp_layers && strcmp(bk->name, "cpu"))
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the %s backend runs no multi-token prediction (mtp_layers %u) yet: its embedding "
                       "shift, enorm/hnorm concatenation (strided_copy) and masked loss are the cpu backend's "
                       "(--backend cpu)",
                       p->in.model->name, bk->name, p->in.model->mtp_layers);
    if (spec_is_mla(p->in.model) && strcmp(bk->name, "cpu"))
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: the %s backend runs no latent attention (kv_lora_rank %u) yet: no q/k/v assembly "
                       "(strided_copy), partial rotation or value heads of their own width; the cpu backend does "
                       "(--backend cpu)",
                       p->in.model->name, bk->name, p->in.model->kv_lora_rank);
    if (exec_block_scaled(p->in.recipe) && p->in.tp > 1 && strcmp(bk->name, "cpu"))
        return err_set(e, ST_UNAVAILABLE,
                       "--tp %u --recipe %s: the %s backend's block-scaled GEMMs over the gathered shards (a rank's "
                       "codes, then its scales) are not checked against the CPU reference yet; the cpu backend runs "
                       "them (--backend cpu)",
                       p->in.tp, p->in.recipe->name, bk->name);
    if (exec_block_scaled(p->in.recipe) && (st = lt_block_scales_check(bk, e))) { /* the loaded cuBLASLt's */
        err_prefix(e, "recipe %s on model %s", p->in.recipe->name, p->in.model->name);
        return st;
    }
    /* the host rounds through the decoding tables (FP8-LM's FP16 master, model_init_weights)
     * whatever the backend: the CUDA backend makes none of its own */
    if (elem_init()) return err_set(e, ST_NOMEM, "out of memory for the decoding tables");
    Model *m = calloc(1, sizeof *m);
    if (!m) return err_set(e, ST_NOMEM, "out of memory");
    m->hyper = h ? *h : model_hyper_default();
    m->moe_aux_coeff = MODEL_MOE_AUX_COEFF;
    m->mtp_weight = MODEL_MTP_WEIGHT;
    m->bk = bk;
    m->comm = comm;
    uint64_t planned[ARENA_TERMS];
    arena_planned(p, planned);
    st = model_layout_bind(m, p, &m->specs, e);
    if (!st) st = arena_carve(&m->arena, bk, &m->specs, planned, e);
    for (uint32_t l = 0; !st && l < m->spec.layers; l++) m->moe_layers += (uint32_t)model_moe_layer(m, l);
    m->moe_layers_all = m->moe_layers, m->moe_first = 0;
    if (m->pp > 1 && m->spec.experts) { /* MoE layers are the model's from dense_layers on, then the MTP depth's
                                           (the last stage's last block, a MoE block as at pp 1) */
        const uint32_t d = m->spec.dense_layers;
        m->moe_layers_all = (m->layers_total > d ? m->layers_total - d : 0) + m->mtp_model;
        m->moe_first = m->layer0 > d ? m->layer0 - d : 0;
    }
    if (!st && m->moe_layers &&
        (!(m->moe_counts = calloc((size_t)m->moe_layers * m->spec.experts, sizeof(uint64_t))) ||
         !(m->moe_scratch =
               calloc((size_t)m->moe_layers * m->spec.experts * (m->dp > 1 ? m->dp : 1) * (m->tp > 1 ? m->tp : 1),
                      sizeof(uint64_t)))))
        st = err_set(e, ST_NOMEM, "out of memory");
    if (!st) model_shard_bind(m);
    for (uint32_t i = 0; !st && i < m->nparams; i++) /* the agreed scales' passes and recasts: host memory */
        if (model_shard_copies(m, &m->params[i]) && strcmp(bk->name, "cpu"))
            st = err_set(e, ST_UNAVAILABLE,
                         "recipe %s sharded over ranks: FP8-LM's sharded states run on the cpu "
                         "backend only so far",
                         m->recipe.name);
    if (!st && exec_o1_states(&m->recipe, &m->recipe.gemm) && strcmp(bk->name, "cpu"))
        st = err_set(e, ST_UNAVAILABLE,
                     "recipe %s: MS-AMP O1's optimizer (a scaled FP16 weight updated in place beside FP32 Adam m "
                     "and v) runs on the cpu backend only so far; the %s backend has no kernel for it",
                     m->recipe.name, bk->name);
    if (!st) st = bk->memset0(bk, m->arena.base, m->arena.bytes, e);
    if (!st) arena_guard(&m->arena, &m->specs, bk); /* ASan builds: a tensor written past its end fails */
    if (!st && recipe_fp8_gemm(&m->recipe) && !exec_block_scaled(&m->recipe)) {
        ScalingBank *f = &m->sc.fwd, *b = &m->sc.bwd;
        b->n = model_fp8_tensors(m);
        f->n = 2 * b->n;
        f->history_len = b->history_len = exec_history_len(&m->recipe);
        f->algo = b->algo = EXEC_AMAX_ALGO;
        f->margin = b->margin = EXEC_FP8_MARGIN;
        f->fmt = m->recipe.gemm_fwd;
        b->fmt = m->recipe.gemm_bwd;
    }
    if (!st && (!comm || (uint32_t)comm->size != m->dp * m->tp * m->pp))
        st = err_set(e, ST_USAGE, "the plan's dp %u x tp %u x pp %u needs as many ranks; the communicator has %d",
                     m->dp, m->tp, m->pp, comm ? comm->size : 0);
    if (!st) st = model_groups_create(m, e);
    if (!st) st = model_ep_create(m, e);
    if (!st) {
        m->host_losses = malloc(model_tokens(m) * sizeof(float));
        if (m->mtp) m->mtp_host = malloc(2 * model_tokens(m) * sizeof(int32_t)); /* the shifted tokens, targets */
        m->step_losses =
            calloc(model_step_tokens(m) * m->dp, sizeof(float)); /* a pipeline stage before the last: zeros */
        if (m->mtp) m->step_mtp_losses = calloc(model_step_tokens(m) * m->dp * m->mtp, sizeof(float));
        m->opt_queue = malloc(((size_t)m->nparams + 1) * sizeof *m->opt_queue);
        if (!m->host_losses || !m->step_losses || !m->opt_queue || (m->mtp && (!m->mtp_host || !m->step_mtp_losses)))
            st = err_set(e, ST_NOMEM, "out of memory");
    }
    if (!st) st = upload_rope(m, e);
    if (!st) st = model_init_weights(m, e);
    if (!st) st = model_copies_cast(m, COMM_UNPLANNED, e); /* FP8-LM's first copies (model_copies.c) */
    if (st) {
        model_destroy(m);
        return st;
    }
    *out = m;
    return ST_OK;
}

void model_destroy(Model *m)
{
    if (!m) return;
    model_ep_destroy(m);
    model_groups_destroy(m);
    arena_release(&m->arena, m->bk);
    arena_specs_free(&m->specs);
    free(m->params);
    free(m->grad_spans);
    free(m->grad_first);
    free(m->act.layer);
    free(m->host_losses);
    free(m->mtp_host);
    free(m->opt_queue);
    free(m->step_losses);
    free(m->step_mtp_losses);
    free(m->moe_counts);
    free(m->moe_scratch);
    free(m->route_log);
    BankTrace *t[2] = {&m->tr_fwd, &m->tr_bwd};
    for (int i = 0; i < 2; i++) {
        free(t[i]->amax);
        free(t[i]->scale_used);
        free(t[i]->scale_next);
    }
    free(m);
}
