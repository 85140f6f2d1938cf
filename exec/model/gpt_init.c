/* exec/model/gpt_init.c — building the model: arena, scaling banks, initial values. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/elem.h"
#include "exec/model/gpt_internal.h"
#include "exec/par.h"
#include "exec/rng.h"
#include "exec/scaling.h"

GptHyper gpt_hyper_default(void)
{
    GptHyper h = {.lr = 1e-3f,
                  .beta1 = 0.9f,
                  .beta2 = 0.95f,
                  .eps = 1e-8f,
                  .weight_decay = 0.1f,
                  .warmup = 0,
                  .init_std = 0.02f,
                  .seed = 1};
    return h;
}

uint64_t gpt_param_count(const Gpt *g)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < g->nparams; i++) n += g->params[i].numel;
    return n;
}

/* ---- initial values ------------------------------------------------------------
 * GPT-2's: N(0, std) for matrices and embeddings, residual projections (proj,
 * FC2) N(0, std/√(2L)), LN weights 1, biases 0; padded vocabulary rows 0. Each
 * tensor draws from its own counter-based stream, keyed by (seed, kind, layer):
 * element i is a pure function of those and i, so the tensor is filled by all
 * host threads at once, identically for any thread count, and a tensor's
 * values do not depend on which other tensors the shape has. The host computes
 * the values for every backend, so the CPU and GPU backends start from the same
 * bits. */

enum { INIT_GRAIN = 1 << 16 }; /* elements per thread at least */

typedef struct {
    const GptParam *p;
    float *w;      /* (numel) the values, in FP32 */
    void *buf;     /* (numel) a state's bytes */
    uint64_t key;  /* the tensor's stream */
    uint64_t live; /* elements below this get values; the rest are padded vocabulary rows (0) */
    float std;
    Dtype dt;    /* of buf */
    float scale; /* buf = dt(w · scale) */
    float amax[PAR_MAX_THREADS];
} InitJob;

static int init_normal(ParamKind k)
{
    return k == PK_WTE || k == PK_WPE || k == PK_QKV_W || k == PK_PROJ_W || k == PK_FC1_W || k == PK_FC2_W ||
           k == PK_LM_HEAD;
}

/* w[b..e) = values, and the piece's amax. */
static void fill_piece(void *ctx, int piece, uint64_t b, uint64_t e)
{
    InitJob *j = ctx;
    float *w = j->w, amax = 0.0f;
    ParamKind k = j->p->kind;
    if (init_normal(k)) {
        uint64_t live = e < j->live ? e : j->live;
        if (b < live) rng_normal_fill(j->key, b, live, j->std, w + b);
        for (uint64_t i = live > b ? live : b; i < e; i++) w[i] = 0.0f;
        for (uint64_t i = b; i < e; i++) { /* the values are finite: no NaN to propagate */
            float a = fabsf(w[i]);
            amax = a > amax ? a : amax;
        }
    } else {
        float v = k == PK_LN1_W || k == PK_LN2_W || k == PK_LNF_W ? 1.0f : 0.0f;
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
static Status upload(Gpt *g, InitJob *j, void *dst, Dtype dt, Err *e)
{
    uint64_t n = j->p->numel;
    if (dt == DT_FP32) return g->bk->copy_to_device(g->bk, dst, j->w, n * sizeof(float), e);
    j->dt = dt;
    j->scale = 1.0f;
    par_for(n, INIT_GRAIN, store_piece, j);
    return g->bk->copy_to_device(g->bk, dst, j->buf, n * dtype_bytes(dt), e);
}

static Status init_param(Gpt *g, GptParam *p, InitJob *j, Err *e)
{
    const ExecStates *es = gpt_states(g, p);
    j->p = p;
    j->key = rng_key(g->hyper.seed, (uint64_t)p->kind << 32 | (uint32_t)(p->layer + 1));
    j->std = g->hyper.init_std;
    if (p->kind == PK_PROJ_W || p->kind == PK_FC2_W) j->std /= sqrtf(2.0f * (float)g->shape.layers);
    j->live = p->kind == PK_WTE || p->kind == PK_LM_HEAD ? g->shape.vocab * p->cols : p->numel;
    par_for(p->numel, INIT_GRAIN, fill_piece, j);
    Status st = ST_OK;
    if (es->dt[ES_MASTER] == DT_FP16) {
        /* FP8-LM: FP16 master scaled by a power of two; the working copy is its value */
        float amax = 0.0f, s = 1.0f;
        for (int t = 0; t < par_pieces(p->numel, INIT_GRAIN); t++) amax = fmaxf(amax, j->amax[t]);
        if (p->master_rec) s = scaling_pow2(amax, DT_FP16, 0, 1.0f);
        j->scale = s;
        par_for(p->numel, INIT_GRAIN, master16_piece, j);
        st = g->bk->copy_to_device(g->bk, p->master, j->buf, p->numel * sizeof(uint16_t), e);
        float rec[REC_FLOATS] = {s, 1.0f / s, amax};
        if (!st && p->master_rec) st = g->bk->copy_to_device(g->bk, p->master_rec, rec, sizeof rec, e);
    } else if (es->dt[ES_MASTER] == DT_FP32) {
        st = upload(g, j, p->master, DT_FP32, e);
    }
    if (!st && p->weight) st = upload(g, j, p->weight, es->dt[ES_WEIGHT], e);
    float one[REC_FLOATS] = {1.0f, 1.0f, 0.0f}; /* scale 1, empty amax */
    float *recs[3] = {p->grad_rec, p->m_rec, p->v_rec};
    for (int k = 0; !st && k < 3; k++)
        if (recs[k]) st = g->bk->copy_to_device(g->bk, recs[k], one, sizeof one, e);
    return st;
}

/* n floats of value v at dst. */
static Status upload_fill(Gpt *g, float *dst, float v, uint32_t n, Err *e)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    if (!h) return err_set(e, ST_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n; i++) h[i] = v;
    Status st = g->bk->copy_to_device(g->bk, dst, h, (uint64_t)n * sizeof *h, e);
    free(h);
    return st;
}

Status gpt_init_weights(Gpt *g, Err *e)
{
    uint64_t maxn = 0;
    for (uint32_t i = 0; i < g->nparams; i++)
        if (g->params[i].numel > maxn) maxn = g->params[i].numel;
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
    for (uint32_t i = 0; !st && i < g->nparams; i++) st = init_param(g, &g->params[i], j, e);
    free(j), free(w), free(buf);
    if (st || !exec_recipe_fp8(&g->recipe)) return st;
    /* every FP8 tensor starts with scale 1 and an empty history (TE) */
    ScalingBank *banks[2] = {&g->sc.fwd, &g->sc.bwd};
    for (int b = 0; !st && b < 2; b++) {
        st = upload_fill(g, banks[b]->scale, 1.0f, banks[b]->n, e);
        if (!st) st = upload_fill(g, banks[b]->scale_inv, 1.0f, banks[b]->n, e);
    }
    return st;
}

Status gpt_create(const GptShape *s, const ExecRecipe *r, const GptHyper *h, Backend *bk, Comm *comm,
                  const uint64_t planned[TERM_COUNT], Gpt **out, Err *e)
{
    *out = NULL;
    Status st = gpt_shape_check(s, e);
    if (!st) st = exec_recipe_check(r, e);
    if (st) return st;
    Gpt *g = calloc(1, sizeof *g);
    if (!g) return err_set(e, ST_NOMEM, "out of memory");
    g->shape = *s;
    g->recipe = *r;
    g->hyper = h ? *h : gpt_hyper_default();
    g->bk = bk;
    g->comm = comm;
    st = gpt_layout_bind(g, &g->specs, e);
    if (!st) st = arena_carve(&g->arena, bk, &g->specs, planned, e);
    if (!st) st = bk->memset0(bk, g->arena.base, g->arena.bytes, e);
    if (!st && exec_recipe_fp8(r)) {
        uint32_t hist = r->scaling == EXEC_SCALING_DELAYED ? r->amax_history : 1;
        ScalingBank *f = &g->sc.fwd, *b = &g->sc.bwd;
        f->n = 2 * LIN_COUNT * s->layers;
        b->n = LIN_COUNT * s->layers;
        f->history_len = b->history_len = hist;
        f->algo = b->algo = r->amax_algo;
        f->margin = b->margin = r->margin;
        f->fmt = r->gemm_fwd;
        b->fmt = r->gemm_bwd;
    }
    if (!st) {
        g->host_losses = malloc((size_t)s->batch * s->seq * sizeof(float));
        if (!g->host_losses) st = err_set(e, ST_NOMEM, "out of memory");
    }
    if (!st) st = gpt_init_weights(g, e);
    if (st) {
        gpt_destroy(g);
        return st;
    }
    *out = g;
    return ST_OK;
}

void gpt_destroy(Gpt *g)
{
    if (!g) return;
    arena_release(&g->arena, g->bk);
    arena_specs_free(&g->specs);
    free(g->params);
    free(g->act.layer);
    free(g->host_losses);
    GptBankTrace *t[2] = {&g->tr_fwd, &g->tr_bwd};
    for (int i = 0; i < 2; i++) {
        free(t[i]->amax);
        free(t[i]->scale_used);
        free(t[i]->scale_next);
    }
    free(g);
}
