/* exec/cpu/cpu_qknorm.c — the CPU reference of the q/k norms that the rope
 * operation runs before its rotation (RopeDesc's qnorm_w ...: Qwen3's RMSNorm
 * over each query head's and key head's D values, one learned D-vector for the
 * query heads and one for the key heads). FP32 statistics on the loaded
 * values, every stored output rounded once to its dtype, the arithmetic of
 * exec/backend/kernel_math.h's RMSNorm helpers (as cpu_nn.c's norms), and every sum in
 * one fixed order: rows are independent (tasks of QK_ROWS tokens), the weight
 * gradients are column tasks that sum over tokens, then heads, in order. */
#include <math.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/cpu/cpu_qknorm.h"
#include "exec/backend/elem.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/par.h"

enum {
    QK_ROWS = 16, /* tokens per task */
    QK_COLS = 16, /* weight columns per gradient task */
};

typedef struct {
    const RopeDesc *d;
    const float *w; /* (2, D) FP32: the q weights, then the k weights */
    float *buf;     /* per worker: 3·D floats */
    uint64_t stride;
    uint64_t D, H, nh, W; /* head dim, q heads, q + k heads, qkv row width */
} QkJob;

static QkJob qk_job(const RopeDesc *d, const float *w)
{
    QkJob j = {.d = d, .w = w, .D = d->head_dim, .H = d->heads, .nh = (uint64_t)d->heads + d->kv_heads};
    j.W = ((uint64_t)d->heads + 2 * (uint64_t)d->kv_heads) * j.D;
    return j;
}

/* Forward of tokens [r0, r1): rstd written, x ← x̂·w. */
static void qk_fwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const QkJob *j = ctx;
    const RopeDesc *d = j->d;
    const uint64_t D = j->D;
    float *x = j->buf + (uint64_t)worker * j->stride, *y = x + D;
    for (uint64_t r = r0; r < r1; r++)
        for (uint64_t h = 0; h < j->nh; h++) {
            const float *w = j->w + (h < j->H ? 0 : D);
            uint64_t base = r * j->W + h * D;
            elem_load_run(d->qkv, d->dtype, base, x, D);
            float ss = 0.0f;
            for (uint64_t i = 0; i < D; i++) ss += x[i] * x[i];
            float rstd = 1.0f / sqrtf(ss / (float)D + d->eps);
            for (uint64_t i = 0; i < D; i++) y[i] = km_rms_out(km_ln_norm(x[i], 0.0f, rstd), w[i]);
            elem_store_run(d->qkv, d->dtype, base, y, D);
            d->norm_rstd[r * j->nh + h] = rstd;
        }
}

/* Weight gradients of columns [c0, c1) of (2, D): Σ over tokens, then heads, of dy·x̂. */
static void qk_dw_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    (void)worker;
    const QkJob *j = ctx;
    const RopeDesc *d = j->d;
    const uint64_t D = j->D, rows = (uint64_t)d->batch * d->seq;
    for (uint64_t c = c0; c < c1; c++) {
        int k = c >= D; /* 0: a q column, 1: a k column */
        uint64_t i = c - (k ? D : 0), h0 = k ? j->H : 0, h1 = k ? j->nh : j->H;
        float *dw = k ? d->knorm_dw : d->qnorm_dw;
        float acc = dw[i];
        for (uint64_t r = 0; r < rows; r++)
            for (uint64_t h = h0; h < h1; h++) {
                float x = elem_load(d->norm_raw, d->dtype, r * j->W + h * D + i);
                float dy = elem_load(d->qkv, d->dtype, r * j->W + h * D + i);
                acc += km_ln_norm(x, 0.0f, d->norm_rstd[r * j->nh + h]) * dy;
            }
        dw[i] = acc;
    }
}

/* Input gradients of tokens [r0, r1), in place of dy. */
static void qk_bwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const QkJob *j = ctx;
    const RopeDesc *d = j->d;
    const uint64_t D = j->D;
    float *x = j->buf + (uint64_t)worker * j->stride, *g = x + D, *o = g + D;
    for (uint64_t r = r0; r < r1; r++)
        for (uint64_t h = 0; h < j->nh; h++) {
            const float *w = j->w + (h < j->H ? 0 : D);
            uint64_t base = r * j->W + h * D;
            float rstd = d->norm_rstd[r * j->nh + h], mean = 0.0f;
            elem_load_run(d->norm_raw, d->dtype, base, x, D);
            elem_load_run(d->qkv, d->dtype, base, g, D);
            for (uint64_t i = 0; i < D; i++) mean += w[i] * g[i] * km_ln_norm(x[i], 0.0f, rstd);
            mean /= (float)D;
            for (uint64_t i = 0; i < D; i++) o[i] = km_rms_dx(w[i] * g[i], km_ln_norm(x[i], 0.0f, rstd), mean, rstd);
            elem_store_run(d->qkv, d->dtype, base, o, D);
        }
}

/* The job with the weights as FP32 (scratch slot 1) and three rows per worker (slot 0). */
static Status qk_setup(Backend *bk, const RopeDesc *d, QkJob *j, Err *e)
{
    const uint64_t D = d->head_dim;
    float *w = cpu_scratch(bk, 1, 2 * D, e);
    if (!w) return e ? e->st : ST_NOMEM;
    elem_load_run(d->qnorm_w, d->norm_wdt, 0, w, D);
    elem_load_run(d->knorm_w, d->norm_wdt, 0, w + D, D);
    *j = qk_job(d, w);
    j->buf = cpu_scratch_workers(bk, 0, 3 * D, &j->stride, e);
    return j->buf ? ST_OK : e ? e->st : ST_NOMEM;
}

Status cpu_qknorm_fwd(Backend *bk, const RopeDesc *d, Err *e)
{
    QkJob j;
    Status st = qk_setup(bk, d, &j, e);
    if (!st) par_chunks((uint64_t)d->batch * d->seq, QK_ROWS, qk_fwd_rows, &j);
    return st;
}

Status cpu_qknorm_bwd(Backend *bk, const RopeDesc *d, Err *e)
{
    QkJob j;
    Status st = qk_setup(bk, d, &j, e);
    if (st) return st;
    par_chunks(2 * j.D, QK_COLS, qk_dw_cols, &j); /* reads dy before the rows overwrite it */
    par_chunks((uint64_t)d->batch * d->seq, QK_ROWS, qk_bwd_rows, &j);
    return ST_OK;
}
