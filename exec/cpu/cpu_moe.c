/* exec/cpu/cpu_moe.c — the CPU reference of a mixture-of-experts layer's
 * routing and data movement (exec/backend/backend_desc.h: RouterDesc ...
 * MoeUnpermuteBwdDesc): the router's top-k and its backward, the auxiliary
 * balance loss, and the permutation of token rows into expert order and back
 * with the weighted combine. The experts' GEMMs are grouped_gemm
 * (cpu_gemm_group.c).
 *
 * Tokens are independent, so the per-token work runs on the pool in fixed
 * chunks of tokens; every sum inside a token runs in index order, and the
 * few reductions over tokens (the counts, the auxiliary loss) run on one
 * thread in token order: bit-identical for any thread count. */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/par.h"

enum { ROUTE_TOKENS = 64 }; /* tokens per task */

/* ---- router ------------------------------------------------------------------------- */

typedef struct {
    const RouterDesc *d;
    float *buf; /* per worker: E selection keys, then a score per group */
    uint64_t stride;
} RouteJob;

/* The k-th pass marker: a key that is NaN is taken (or closed to the token). */
#define CLOSED NAN

/* Group-limited routing: close the experts of all but the group_topk best groups (a group's score: its
 * two largest keys summed with a bias, its largest without; ties to the lower group id). */
static void close_groups(const RouterDesc *d, float *key, float *gs)
{
    uint32_t G = d->groups, per = d->experts / G;
    for (uint32_t g = 0; g < G; g++) {
        float top1 = -INFINITY, top2 = -INFINITY;
        for (uint32_t e = g * per; e < (g + 1) * per; e++) {
            if (key[e] > top1) {
                top2 = top1;
                top1 = key[e];
            } else if (key[e] > top2) {
                top2 = key[e];
            }
        }
        gs[g] = d->bias && per > 1 ? top1 + top2 : top1;
        if (isnan(gs[g])) gs[g] = -INFINITY; /* -inf + inf: below every number */
    }
    for (uint32_t j = 0; j < d->group_topk; j++) { /* open groups are marked CLOSED in gs, i.e. taken */
        uint32_t best = 0;
        while (isnan(gs[best])) best++;
        for (uint32_t g = best + 1; g < G; g++)
            if (gs[g] > gs[best]) best = g;
        gs[best] = CLOSED;
    }
    for (uint32_t g = 0; g < G; g++)
        if (!isnan(gs[g]))
            for (uint32_t e = g * per; e < (g + 1) * per; e++) key[e] = CLOSED;
}

/* The scores of one token's logits z (E) into s. */
static void score_row(RouterType score, const float *z, float *s, uint32_t E)
{
    if (score == ROUTER_SIGMOID) {
        for (uint32_t e = 0; e < E; e++) s[e] = km_sigmoid(z[e]);
        return;
    }
    float mx = -INFINITY, sum = 0.0f;
    for (uint32_t e = 0; e < E; e++) mx = z[e] > mx ? z[e] : mx; /* NaN ignored */
    for (uint32_t e = 0; e < E; e++) {
        s[e] = expf(z[e] - mx);
        sum += s[e];
    }
    for (uint32_t e = 0; e < E; e++) s[e] /= sum;
}

static void route_tokens(void *ctx, uint64_t t0, uint64_t t1, int worker)
{
    const RouteJob *j = ctx;
    const RouterDesc *d = j->d;
    uint32_t E = d->experts, k = d->k;
    float *key = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t t = t0; t < t1; t++) {
        float *s = d->scores + t * E, *w = d->weights + t * k;
        int32_t *ids = d->ids + t * k;
        score_row(d->score, d->logits + t * E, s, E);
        for (uint32_t e = 0; e < E; e++) {
            key[e] = d->bias ? s[e] + d->bias[e] : s[e];
            if (isnan(key[e])) key[e] = -INFINITY; /* below every number, but still selectable */
        }
        if (d->groups > 1) close_groups(d, key, key + E);
        /* k passes of an arg-max; a strict > keeps the lower id on a tie; a taken expert's key is NaN */
        for (uint32_t j2 = 0; j2 < k; j2++) {
            uint32_t best = 0;
            while (isnan(key[best])) best++;
            for (uint32_t e = best + 1; e < E; e++)
                if (key[e] > key[best]) best = e;
            ids[j2] = (int32_t)best;
            key[best] = CLOSED;
        }
        float sum = 0.0f;
        for (uint32_t j2 = 0; j2 < k; j2++) sum += s[ids[j2]];
        for (uint32_t j2 = 0; j2 < k; j2++) w[j2] = (d->norm_topk ? s[ids[j2]] / sum : s[ids[j2]]) * d->weight_scale;
    }
}

Status cpu_router_topk(Backend *bk, const RouterDesc *d, Err *e)
{
    RouteJob j = {.d = d};
    j.buf = cpu_scratch_workers(bk, 0, (uint64_t)d->experts + (d->groups > 1 ? d->groups : 0), &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->tokens, ROUTE_TOKENS, route_tokens, &j);
    memset(d->counts, 0, (size_t)d->experts * sizeof *d->counts);
    for (uint64_t i = 0; i < d->tokens * d->k; i++) d->counts[d->ids[i]]++;
    return ST_OK;
}

typedef struct {
    const RouterBwdDesc *d;
    float *buf; /* per worker: E score gradients */
    uint64_t stride;
} RouteBwdJob;

static void route_bwd_tokens(void *ctx, uint64_t t0, uint64_t t1, int worker)
{
    const RouteBwdJob *j = ctx;
    const RouterBwdDesc *d = j->d;
    uint32_t E = d->experts, k = d->k;
    float c = d->weight_scale, *ds = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t t = t0; t < t1; t++) {
        const float *s = d->scores + t * E, *dw = d->dweights + t * k;
        const int32_t *ids = d->ids + t * k;
        float *dz = d->dlogits + t * E;
        if (d->dscores)
            memcpy(ds, d->dscores + t * E, (size_t)E * sizeof *ds);
        else
            memset(ds, 0, (size_t)E * sizeof *ds);
        if (d->norm_topk) { /* w_j = c·s_j / S: ds_i = c·(dw_i / S − Σ_j dw_j·s_j / S²) */
            float sum = 0.0f, dot = 0.0f;
            for (uint32_t l = 0; l < k; l++) {
                sum += s[ids[l]];
                dot += dw[l] * s[ids[l]];
            }
            for (uint32_t l = 0; l < k; l++) ds[ids[l]] += c * (dw[l] / sum - dot / (sum * sum));
        } else {
            for (uint32_t l = 0; l < k; l++) ds[ids[l]] += c * dw[l];
        }
        if (d->score == ROUTER_SIGMOID) {
            for (uint32_t e = 0; e < E; e++) dz[e] = ds[e] * s[e] * (1.0f - s[e]);
        } else {
            float dot = 0.0f;
            for (uint32_t e = 0; e < E; e++) dot += ds[e] * s[e];
            for (uint32_t e = 0; e < E; e++) dz[e] = s[e] * (ds[e] - dot);
        }
    }
}

static Status check_ids(const int32_t *ids, uint64_t tokens, uint32_t experts, uint32_t k, const char *op, Err *e)
{
    for (uint64_t t = 0; t < tokens; t++)
        for (uint32_t j = 0; j < k; j++) {
            int32_t id = ids[t * k + j];
            if (id < 0 || (uint32_t)id >= experts)
                return err_set(e, ST_USAGE, "%s: token %llu slot %u: expert id %d is outside [0, %u)", op,
                               (unsigned long long)t, j, (int)id, experts);
            for (uint32_t l = 0; l < j; l++)
                if (ids[t * k + l] == id)
                    return err_set(e, ST_USAGE, "%s: token %llu picks expert %d twice (slots %u and %u)", op,
                                   (unsigned long long)t, (int)id, l, j);
        }
    return ST_OK;
}

Status cpu_router_bwd(Backend *bk, const RouterBwdDesc *d, Err *e)
{
    Status st = check_ids(d->ids, d->tokens, d->experts, d->k, "router_bwd", e);
    if (st) return st;
    RouteBwdJob j = {.d = d};
    j.buf = cpu_scratch_workers(bk, 0, d->experts, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->tokens, ROUTE_TOKENS, route_bwd_tokens, &j);
    return ST_OK;
}

/* loss = coeff·E·Σ_e f_e·P_e with f_e = n_e/(T·k), P_e = mean over tokens of p = s (softmax) or s/Σs
 * (sigmoid). Sums in double, tokens in order, on one thread. */
Status cpu_router_aux_loss(Backend *bk, const RouterAuxDesc *d, Err *e)
{
    uint64_t T = d->tokens;
    uint32_t E = d->experts, k = d->k;
    Status st = check_ids(d->ids, T, E, k, "router_aux_loss", e);
    if (st) return st;
    /* scratch as doubles: f (E), then P (E) */
    double *f = (double *)(void *)cpu_scratch(bk, 0, 4 * (uint64_t)E, e), *P = f ? f + E : NULL;
    if (!f) return e ? e->st : ST_NOMEM;
    memset(f, 0, 2 * (size_t)E * sizeof *f);
    for (uint64_t i = 0; !d->counts && i < T * k; i++) f[d->ids[i]] += 1.0;
    const double Ta = d->counts ? (double)T * (double)d->shards : (double)T; /* the whole sequence's tokens */
    for (uint32_t s = 0; d->counts && s < d->shards; s++)
        for (uint32_t x = 0; x < E; x++) f[x] += (double)d->counts[(uint64_t)s * E + x];
    for (uint32_t x = 0; x < E; x++) f[x] /= Ta * (double)k;
    int sig = d->score == ROUTER_SIGMOID;
    for (uint64_t t = 0; t < T; t++) {
        const float *s = d->scores + t * E;
        double sum = 1.0;
        if (sig) {
            sum = 0.0;
            for (uint32_t x = 0; x < E; x++) sum += s[x];
        }
        for (uint32_t x = 0; x < E; x++) P[x] += s[x] / sum;
    }
    double loss = 0.0;
    for (uint32_t x = 0; x < E; x++) loss += f[x] * (P[x] / Ta);
    *d->loss = (float)(d->coeff * (double)E * loss);
    if (!d->dscores) return ST_OK;
    /* dL/dp[t][e] = g_e = coeff·E·f_e/T; sigmoid: ds_e = (g_e − Σ_x g_x·s_x/S) / S */
    double gk = d->coeff * (double)E / Ta;
    for (uint64_t t = 0; t < T; t++) {
        const float *s = d->scores + t * E;
        float *ds = d->dscores + t * E;
        double sum = 1.0, dot = 0.0;
        if (sig) {
            sum = 0.0;
            for (uint32_t x = 0; x < E; x++) {
                sum += s[x];
                dot += gk * f[x] * s[x];
            }
            dot /= sum;
        }
        for (uint32_t x = 0; x < E; x++) ds[x] = (float)(d->dloss * (gk * f[x] - dot) / sum);
    }
    return ST_OK;
}

/* ---- permutation and combine --------------------------------------------------------- */

typedef struct {
    const MoePermuteDesc *d;
    size_t row_bytes;
} PermJob;

static void permute_tokens(void *ctx, uint64_t t0, uint64_t t1, int worker)
{
    (void)worker;
    const PermJob *j = ctx;
    const MoePermuteDesc *d = j->d;
    for (uint64_t t = t0; t < t1; t++)
        for (uint32_t s = 0; s < d->k; s++)
            memcpy((char *)d->out + (uint64_t)d->row_of[t * d->k + s] * j->row_bytes,
                   (const char *)d->in + t * j->row_bytes, j->row_bytes);
}

Status cpu_moe_permute(Backend *bk, const MoePermuteDesc *d, Err *e)
{
    uint64_t T = d->tokens;
    uint32_t E = d->experts, k = d->k;
    Status st = check_ids(d->ids, T, E, k, "moe_permute", e);
    if (st) return st;
    /* the map: a stable counting sort of the (token, slot) pairs by expert */
    uint64_t *next = (uint64_t *)(void *)cpu_scratch(bk, 0, 2 * (uint64_t)E, e);
    if (!next) return e ? e->st : ST_NOMEM;
    memset(next, 0, (size_t)E * sizeof *next);
    for (uint64_t i = 0; i < T * k; i++) next[d->ids[i]]++;
    uint64_t row = 0;
    for (uint32_t x = 0; x < E; x++) {
        uint64_t n = next[x];
        next[x] = row;
        row += n;
    }
    for (uint64_t i = 0; i < T * k; i++) d->row_of[i] = (int32_t)next[d->ids[i]]++;
    PermJob j = {d, (size_t)d->cols * dtype_bytes(d->dtype)};
    par_chunks(T, ROUTE_TOKENS, permute_tokens, &j);
    return ST_OK;
}

/* Every row of the map inside the T·k permuted rows. */
static Status check_map(const int32_t *row_of, uint64_t tokens, uint32_t k, const char *op, Err *e)
{
    for (uint64_t i = 0; i < tokens * k; i++)
        if (row_of[i] < 0 || (uint64_t)row_of[i] >= tokens * k)
            return err_set(e, ST_USAGE, "%s: token %llu slot %llu maps to row %d, outside [0, %llu)", op,
                           (unsigned long long)(i / k), (unsigned long long)(i % k), (int)row_of[i],
                           (unsigned long long)(tokens * k));
    return ST_OK;
}

typedef struct {
    const MoeUnpermuteDesc *d;
    const MoeUnpermuteBwdDesc *b;
    float *buf; /* per worker: 3 rows of C */
    uint64_t stride;
} CombJob;

static void unpermute_tokens(void *ctx, uint64_t t0, uint64_t t1, int worker)
{
    const CombJob *j = ctx;
    const MoeUnpermuteDesc *d = j->d;
    uint64_t C = d->cols;
    float *acc = j->buf + (uint64_t)worker * j->stride, *x = acc + C;
    for (uint64_t t = t0; t < t1; t++) {
        memset(acc, 0, (size_t)C * sizeof *acc);
        for (uint32_t s = 0; s < d->k; s++) {
            elem_load_run(d->in, d->dtype, (uint64_t)d->row_of[t * d->k + s] * C, x, C);
            if (d->weights) {
                float w = d->weights[t * d->k + s];
                for (uint64_t c = 0; c < C; c++) acc[c] += w * x[c];
            } else {
                for (uint64_t c = 0; c < C; c++) acc[c] += x[c];
            }
        }
        elem_store_run(d->out, d->dtype, t * C, acc, C);
    }
}

Status cpu_moe_unpermute(Backend *bk, const MoeUnpermuteDesc *d, Err *e)
{
    Status st = check_map(d->row_of, d->tokens, d->k, "moe_unpermute", e);
    if (st) return st;
    CombJob j = {.d = d};
    j.buf = cpu_scratch_workers(bk, 0, 2 * d->cols, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->tokens, ROUTE_TOKENS, unpermute_tokens, &j);
    return ST_OK;
}

static void unpermute_bwd_tokens(void *ctx, uint64_t t0, uint64_t t1, int worker)
{
    const CombJob *j = ctx;
    const MoeUnpermuteBwdDesc *b = j->b;
    uint64_t C = b->cols;
    float *dy = j->buf + (uint64_t)worker * j->stride, *x = dy + C, *g = x + C;
    for (uint64_t t = t0; t < t1; t++) {
        elem_load_run(b->dout, b->dtype, t * C, dy, C);
        for (uint32_t s = 0; s < b->k; s++) {
            uint64_t row = (uint64_t)b->row_of[t * b->k + s];
            float w = b->weights[t * b->k + s];
            if (b->dweights) {
                float dot = 0.0f;
                elem_load_run(b->in, b->dtype, row * C, x, C);
                for (uint64_t c = 0; c < C; c++) dot += dy[c] * x[c];
                b->dweights[t * b->k + s] = dot;
            }
            for (uint64_t c = 0; c < C; c++) g[c] = w * dy[c];
            elem_store_run(b->din, b->dtype, row * C, g, C);
        }
    }
}

Status cpu_moe_unpermute_bwd(Backend *bk, const MoeUnpermuteBwdDesc *d, Err *e)
{
    Status st = check_map(d->row_of, d->tokens, d->k, "moe_unpermute_bwd", e);
    if (st) return st;
    CombJob j = {.b = d};
    j.buf = cpu_scratch_workers(bk, 0, 3 * d->cols, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->tokens, ROUTE_TOKENS, unpermute_bwd_tokens, &j);
    return ST_OK;
}
