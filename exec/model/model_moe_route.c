/* exec/model/model_moe_route.c — a MoE layer's router beside the expert path (model_moe.c): a sigmoid
 * router's bias, the softmax router's auxiliary balance loss, the step's tokens per expert, the router's
 * backward, and after the step the counts summed over the ranks and the bias moved. Moved unchanged from
 * model_moe.c (the functions model_moe.c calls renamed model_moe_*). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/model/model_internal.h"

/* A sigmoid router's bias for the stage's block l: its E FP32 values in the buffer (m->expert_bias). */
float *model_moe_router_bias(Model *m, uint32_t l)
{
    if (!m->expert_bias || !model_moe_layer(m, l)) return NULL;
    return m->expert_bias + (uint64_t)model_moe_index(m, l) * m->spec.experts;
}

/* The auxiliary balance loss of the routing in la (softmax routers): its value into *loss (host), and with
 * ds its gradient at dloss into ds. With sequence parallelism (tp > 1) as Megatron-Core's router computes it
 * over the TP group: every TP rank's counts gathered (into x_y, free in both passes when this runs: the
 * forward's before the permute, the backward's after the combine's gradient), so f is the whole sequence's
 * and the gradient the one-rank run's; the value is this shard's part, summed over the group for the report. */
static Status aux_loss(Model *m, const LayerActs *la, float dloss, float *ds, float *loss, Err *e)
{
    const ModelSpec *s = &m->spec;
    int32_t *all = NULL; /* (tp, E) */
    Status st = ST_OK;
    if (m->tp > 1) {
        const uint64_t need = (uint64_t)m->tp * s->experts * sizeof *all;
        if (need > model_moe_rows(m) * s->hidden * dtype_bytes(m->act_dtype))
            return err_set(e, ST_SOFTWARE, "MoE auxiliary loss: %llu B of TP counts past the experts' output buffer",
                           (unsigned long long)need);
        all = m->act.x_y;
        st = m->tpc->all_gather(m->tpc, COMM_UNPLANNED, m->bk, la->r_counts, all, s->experts, DT_FP32, e);
    }
    RouterAuxDesc d = {.tokens = model_moe_tokens(m),
                       .experts = s->experts,
                       .k = s->experts_per_token,
                       .score = s->router,
                       .coeff = m->moe_aux_coeff,
                       .scores = la->r_scores,
                       .ids = la->r_ids,
                       .loss = m->act.r_logits, /* dead here: the logits are scored / their gradient not yet made */
                       .dloss = dloss,
                       .dscores = ds,
                       .counts = all,
                       .shards = all ? m->tp : 0};
    if (!st) st = m->bk->router_aux_loss(m->bk, &d, e);
    if (!st && all && !ds) /* the shards' parts: the whole sequence's loss */
        st = m->tpc->all_reduce(m->tpc, COMM_UNPLANNED, m->bk, m->act.r_logits, 1, DT_FP32, COMM_SUM, e);
    if (!st) st = m->bk->copy_to_host(m->bk, loss, m->act.r_logits, sizeof *loss, e);
    return st;
}

/* The step's tokens per expert (host), and the softmax router's auxiliary loss. */
Status model_moe_count_routing(Model *m, uint32_t l, const LayerActs *la, Err *e)
{
    const ModelSpec *s = &m->spec;
    const uint64_t E = s->experts;
    const uint32_t xi = model_moe_index(m, l);
    Status st = ST_OK;
    if (m->moe_counts) {
        int32_t *c = (int32_t *)m->moe_scratch; /* (E) host: a step allocates nothing */
        st = m->bk->copy_to_host(m->bk, c, la->r_counts, E * sizeof *c, e);
        uint64_t *row = m->moe_counts + (uint64_t)xi * E;
        if (!st && m->mb == 0) memset(row, 0, E * sizeof *row);
        for (uint64_t i = 0; !st && i < E; i++) row[i] += (uint64_t)c[i];
    }
    if (!st && m->mb == 0 && xi == 0) m->moe_aux = 0.0;
    if (!st && s->router == ROUTER_SOFTMAX && m->moe_aux_coeff != 0.0f) {
        float v = 0.0f;
        st = aux_loss(m, la, 0.0f, NULL, &v, e);
        m->moe_aux += (double)v / m->microbatches;
    }
    return st;
}

/* The router's backward from d(weights) in m->act.r_dw: the auxiliary loss's d(scores) (mean over the step's
 * micro-batches and ranks), d(logits) through the top-k normalisation and the score function, d(x) added to
 * m->act.d_moe, and dWr += d(logits)ᵀ · x. */
Status model_moe_router_bwd(Model *m, const LayerActs *la, ModelParam *wr, const void *x, Err *e)
{
    Backend *bk = m->bk;
    const ModelSpec *s = &m->spec;
    ModelActs *a = &m->act;
    const Dtype A = m->act_dtype;
    const uint64_t BT = model_moe_tokens(m), C = s->hidden, E = s->experts;
    Status st = ST_OK;
    float *ds = NULL;
    if (!st && s->router == ROUTER_SOFTMAX && m->moe_aux_coeff != 0.0f) {
        float v;
        ds = a->r_ds;
        st = aux_loss(m, la, 1.0f / ((float)m->microbatches * (float)m->dp), ds, &v, e);
    }
    RouterBwdDesc rb = {.tokens = BT,
                        .experts = s->experts,
                        .k = s->experts_per_token,
                        .score = s->router,
                        .norm_topk = 1,
                        .weight_scale = 1.0f,
                        .scores = la->r_scores,
                        .ids = la->r_ids,
                        .dweights = a->r_dw,
                        .dscores = ds,
                        .dlogits = a->r_logits};
    if (!st) st = bk->router_bwd(bk, &rb, e);
    if (!st) st = bk->convert(bk, a->r_logits, DT_FP32, a->r_dl, A, BT * E, NULL, e);
    /* d(x) += d(logits) · Wr (into x_dy, spent, then added; with the FP8 dispatch x_y, spent too); dWr +=
     * d(logits)ᵀ · x */
    void *dx = model_moe_ep_fp8_dispatch(m) ? a->x_y : a->x_dy;
    GemmDesc dg = {.m = BT, .n = C, .k = E, .accum = GEMM_OVERWRITE};
    dg.a = (GemmOperand){.ptr = a->r_dl, .dtype = A, .layout = GEMM_K_INNER};
    dg.b = (GemmOperand){.ptr = wr->weight, .dtype = A, .layout = GEMM_K_OUTER};
    dg.d = (GemmOutput){.ptr = dx, .dtype = A};
    if (!st) st = bk->gemm(bk, &dg, e);
    if (!st) st = bk->add(bk, a->d_moe, dx, a->d_moe, A, BT * C, e);
    if (!st) st = model_grad_begin(m, wr, 0, e);
    GemmDesc wg = {.m = E, .n = C, .k = BT, .accum = GEMM_ACCUMULATE};
    wg.a = (GemmOperand){.ptr = a->r_dl, .dtype = A, .layout = GEMM_K_OUTER};
    wg.b = (GemmOperand){.ptr = x, .dtype = A, .layout = GEMM_K_OUTER};
    wg.d = (GemmOutput){.ptr = model_grad_target(m, wr, 0), .dtype = DT_FP32};
    if (!st) st = bk->gemm(bk, &wg, e);
    if (!st) st = model_grad_commit(m, wr, 0, e);
    return st;
}

/* With data parallelism, the step's counts of every DP rank summed (gathered as bytes, summed exactly in a
 * fixed rank order; not a plan collective), so the routing report and a sigmoid router's bias see the whole
 * batch's loads, as one rank does; with TP every TP rank routes its own sequence shard, so the group is the
 * stage's TP x DP ranks. */
static Status sum_counts(Model *m, Err *e)
{
    const uint64_t n = (uint64_t)m->moe_layers * m->spec.experts;
    Comm *c = m->tp > 1 ? m->amaxc : m->dpc;
    const uint32_t ranks = m->dp * (m->tp > 1 ? m->tp : 1);
    if (ranks <= 1 || !n) return ST_OK;
    uint64_t *all = (uint64_t *)m->moe_scratch; /* (tp x dp, MoE layers, E) */
    /* uint64 counts travel as pairs of 4-byte elements: a gather moves bytes, it adds nothing */
    Status st = c->all_gather(c, COMM_UNPLANNED, m->bk, m->moe_counts, all, 2 * n, DT_FP32, e);
    for (uint64_t i = 0; !st && i < n; i++) {
        uint64_t sum = 0;
        for (uint32_t r = 0; r < ranks; r++) sum += all[(uint64_t)r * n + i];
        m->moe_counts[i] = sum;
    }
    return st;
}

Status model_moe_after_step(Model *m, Err *e)
{
    const ModelSpec *s = &m->spec;
    if (!spec_is_moe(s)) return ST_OK;
    const uint64_t n = (uint64_t)m->moe_layers * s->experts;
    if (m->route_log && m->route_steps < m->route_cap) { /* this rank's own, before the sum, at its stage's rows */
        if (n) /* a stage of dense layers only logs its step too (every rank's log is as long) */
            memcpy(m->route_log + (uint64_t)m->route_steps * m->moe_layers_all * s->experts +
                       (uint64_t)m->moe_first * s->experts,
                   m->moe_counts, n * sizeof *m->moe_counts);
        m->route_steps++;
    }
    if (!m->moe_counts) return ST_OK;
    Status st = sum_counts(m, e);
    if (st || s->router != ROUTER_SIGMOID) return st;
    const uint64_t E = s->experts;
    float *b = m->moe_scratch; /* (E) */
    for (uint32_t l = 0; !st && l < s->layers; l++) {
        if (!model_moe_layer(m, l)) continue;
        float *bias = model_moe_router_bias(m, l);
        const uint64_t *c = m->moe_counts + (uint64_t)model_moe_index(m, l) * E;
        double mean = 0.0;
        for (uint64_t i = 0; i < E; i++) mean += (double)c[i] / (double)E;
        st = m->bk->copy_to_host(m->bk, b, bias, E * sizeof *b, e);
        /* an under-loaded expert's bias rises, an over-loaded one's falls (DeepSeek-V3 section 2.1.2) */
        for (uint64_t i = 0; !st && i < E; i++)
            b[i] += (double)c[i] < mean ? MODEL_MOE_BIAS_SPEED : (double)c[i] > mean ? -MODEL_MOE_BIAS_SPEED : 0.0f;
        if (!st) st = m->bk->copy_to_device(m->bk, bias, b, E * sizeof *b, e);
    }
    return st;
}
