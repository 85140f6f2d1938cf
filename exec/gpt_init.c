/* exec/gpt_init.c — building the model: arena, scaling banks, initial values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/elem.h"
#include "exec/gpt_internal.h"
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

/* Host initial values of one parameter (GPT-2: N(0, std), residual
 * projections N(0, std/√(2L)), LN weights 1, biases 0). */
static void init_values(const Gpt *g, const GptParam *p, Rng *rng, float *w)
{
    float std = g->hyper.init_std;
    if (p->kind == PK_PROJ_W || p->kind == PK_FC2_W) std /= sqrtf(2.0f * (float)g->shape.layers);
    for (uint64_t i = 0; i < p->numel; i++) {
        switch (p->kind) {
        case PK_LN1_W:
        case PK_LN2_W:
        case PK_LNF_W: w[i] = 1.0f; break;
        case PK_LN1_B:
        case PK_LN2_B:
        case PK_LNF_B:
        case PK_QKV_B:
        case PK_PROJ_B:
        case PK_FC1_B:
        case PK_FC2_B: w[i] = 0.0f; break;
        default: w[i] = (float)rng_normal(rng) * std; break;
        }
    }
    /* padded embedding rows beyond the vocabulary stay zero (never looked up;
     * their logits are masked out of the softmax) */
    if (p->kind == PK_WTE || p->kind == PK_LM_HEAD)
        for (uint64_t i = g->shape.vocab * p->cols; i < p->numel; i++) w[i] = 0.0f;
}

static Status upload(Gpt *g, void *dst, Dtype dt, const float *x, uint64_t n, float scale, void *buf, Err *e)
{
    for (uint64_t i = 0; i < n; i++) elem_store(buf, dt, i, x[i] * scale);
    return g->bk->copy_to_device(g->bk, dst, buf, n * dtype_bytes(dt), e);
}

static Status upload_f32(Gpt *g, float *dst, float v, uint64_t n, Err *e)
{
    Status st = ST_OK;
    for (uint64_t i = 0; !st && i < n; i++) st = g->bk->copy_to_device(g->bk, dst + i, &v, sizeof v, e);
    return st;
}

Status gpt_init_weights(Gpt *g, Err *e)
{
    uint64_t maxn = 0;
    for (uint32_t i = 0; i < g->nparams; i++)
        if (g->params[i].numel > maxn) maxn = g->params[i].numel;
    float *w = malloc(maxn * sizeof(float)), *buf = malloc(maxn * sizeof(float));
    if (!w || !buf) {
        free(w);
        free(buf);
        return err_set(e, ST_NOMEM, "out of memory initializing %llu values", (unsigned long long)maxn);
    }
    Rng rng = {.s = g->hyper.seed};
    Status st = ST_OK;
    for (uint32_t i = 0; !st && i < g->nparams; i++) {
        GptParam *p = &g->params[i];
        const ExecStates *es = gpt_states(g, p);
        init_values(g, p, &rng, w);
        if (es->dt[ES_MASTER] == DT_FP16) {
            /* FP8-LM: FP16 master scaled by a power of two; the working copy is its value */
            float amax = 0.0f, s = 1.0f;
            for (uint64_t j = 0; j < p->numel; j++) amax = fmaxf(amax, fabsf(w[j]));
            if (p->master_rec) s = scaling_pow2(amax, DT_FP16, 0, 1.0f);
            for (uint64_t j = 0; j < p->numel; j++) w[j] = elem_round(w[j] * s, DT_FP16) / s;
            st = upload(g, p->master, DT_FP16, w, p->numel, s, buf, e);
            float rec[REC_FLOATS] = {s, 1.0f / s, amax};
            if (!st && p->master_rec) st = g->bk->copy_to_device(g->bk, p->master_rec, rec, sizeof rec, e);
        } else if (es->dt[ES_MASTER] == DT_FP32) {
            st = upload(g, p->master, DT_FP32, w, p->numel, 1.0f, buf, e);
        }
        if (!st && p->weight) st = upload(g, p->weight, es->dt[ES_WEIGHT], w, p->numel, 1.0f, buf, e);
        float one[REC_FLOATS] = {1.0f, 1.0f, 0.0f}; /* scale 1, empty amax */
        float *recs[3] = {p->grad_rec, p->m_rec, p->v_rec};
        for (int k = 0; !st && k < 3; k++)
            if (recs[k]) st = g->bk->copy_to_device(g->bk, recs[k], one, sizeof one, e);
    }
    free(w);
    free(buf);
    if (st || !exec_recipe_fp8(&g->recipe)) return st;
    /* every FP8 tensor starts with scale 1 and an empty history (TE) */
    ScalingBank *banks[2] = {&g->sc.fwd, &g->sc.bwd};
    for (int b = 0; !st && b < 2; b++) {
        st = upload_f32(g, banks[b]->scale, 1.0f, banks[b]->n, e);
        if (!st) st = upload_f32(g, banks[b]->scale_inv, 1.0f, banks[b]->n, e);
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
