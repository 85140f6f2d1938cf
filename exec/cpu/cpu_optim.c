/* exec/cpu/cpu_optim.c — the CPU reference optimizers: AdamW on FP32 master/m/v,
 * and MS-AMP's AdamW on a per-tensor scaled FP16 master (FP8-LM's, with FP8 m
 * and FP16 v, scaled; or MS-AMP O1's FP16 weight, with FP32 m and v).
 * Element-wise, in fixed chunks on the thread pool: every element's update is
 * kernel_math.h's whoever runs it, and the amaxes are maxima, so results do
 * not depend on the thread count. */
#include <math.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/par.h"
#include "exec/backend/scaling.h"

/* The AdamW update of one element in FP32 (exec/backend/kernel_math.h, shared with the GPU). */
static inline float adam_update(const AdamHyper *h, float bc1, float bc2, float w, float g, float *m, float *v)
{
    return km_adamw(w, g, m, v, h->lr, h->beta1, h->beta2, h->eps, h->weight_decay, bc1, bc2);
}

typedef struct {
    const AdamWDesc *d;
    float *master, gs, bc1, bc2;
    float *buf; /* per worker: the chunk's gradient, then its new weights */
    uint64_t stride;
} AdamJob;

static void adamw_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    const AdamJob *j = ctx;
    const AdamWDesc *d = j->d;
    uint64_t n = e - b;
    /* master, m, v and the gradient's copy are distinct arrays: restrict lets the loop vectorize */
    float *restrict g = j->buf + (uint64_t)worker * j->stride, *restrict w = j->master + b;
    const AdamHyper h = d->h;
    const float bc1 = j->bc1, bc2 = j->bc2, gs = j->gs;
    elem_load_run(d->grad, d->grad_dtype, b, g, n);
    if (d->moment_dtype ==
        DT_BF16) { /* the moments read to FP32 (the buffer's second and third CPU_CHUNK), stored RNE */
        float *restrict m = g + CPU_CHUNK, *restrict v = m + CPU_CHUNK;
        elem_load_run(d->m, DT_BF16, b, m, n);
        elem_load_run(d->v, DT_BF16, b, v, n);
        for (uint64_t i = 0; i < n; i++) w[i] = adam_update(&h, bc1, bc2, w[i], g[i] * gs, &m[i], &v[i]);
        elem_store_run(d->m, DT_BF16, b, m, n);
        elem_store_run(d->v, DT_BF16, b, v, n);
    } else {
        float *restrict m = (float *)d->m + b, *restrict v = (float *)d->v + b;
        for (uint64_t i = 0; i < n; i++) w[i] = adam_update(&h, bc1, bc2, w[i], g[i] * gs, &m[i], &v[i]);
    }
    if (d->weight && d->master) elem_store_run(d->weight, d->weight_dtype, b, w, n);
}

Status cpu_adamw(Backend *bk, const AdamWDesc *d, Err *e)
{
    float *master = d->master ? d->master : (float *)d->weight; /* without a master the FP32 working copy is it */
    AdamJob j = {.d = d,
                 .master = master,
                 .gs = d->h.grad_scale * (dtype_is_fp8(d->grad_dtype) ? d->grad_scale_inv[0] : 1.0f),
                 .bc1 = 1.0f - powf(d->h.beta1, (float)d->h.step),
                 .bc2 = 1.0f - powf(d->h.beta2, (float)d->h.step)};
    if (!d->n) return ST_OK;
    j.buf = cpu_scratch_workers(bk, 0, d->moment_dtype == DT_BF16 ? 3 * CPU_CHUNK : CPU_CHUNK, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->n, CPU_CHUNK, adamw_chunk, &j);
    return ST_OK;
}

/* Each tensor of the list in order, as adamw() (the oracle of the GPU's one-grid version). */
Status cpu_adamw_multi(Backend *bk, const AdamWMultiDesc *d, Err *e)
{
    for (uint32_t i = 0; i < d->count; i++) {
        Status st = cpu_adamw(bk, &d->list[i], e);
        if (st) return st;
    }
    return ST_OK;
}

static float rec_scale(const float *rec) { return rec ? rec[REC_SCALE] : 1.0f; }

static void rec_store(float *rec, float scale, float amax)
{
    if (!rec) return;
    rec[REC_SCALE] = scale;
    rec[REC_SCALE_INV] = 1.0f / scale;
    rec[REC_AMAX] = amax;
}

typedef struct {
    const Fp8AdamDesc *d;
    float gs, bc1, bc2, dw, dm, dv; /* gradient factor, bias corrections, state dequantization */
    float sw, sm, sv;               /* pass 2: the new scales */
    Dtype mdt, vdt;                 /* the moments' dtypes: E4M3 and FP16 (FP8-LM), or FP32 (MS-AMP O1) */
    int pass;
    float amax[PAR_MAX_THREADS][3]; /* pass 1: per worker, of w, m, v */
} Fp8AdamJob;

static void fp8_adam_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    Fp8AdamJob *j = ctx;
    const Fp8AdamDesc *d = j->d;
    float amax_w = j->amax[worker][0], amax_m = j->amax[worker][1], amax_v = j->amax[worker][2];
    for (uint64_t i = b; i < e; i++) {
        float g = elem_load(d->grad, d->grad_dtype, i) * j->gs;
        float m = elem_load(d->m, j->mdt, i) * j->dm, v = elem_load(d->v, j->vdt, i) * j->dv;
        float w = adam_update(&d->h, j->bc1, j->bc2, elem_load(d->master, DT_FP16, i) * j->dw, g, &m, &v);
        if (j->pass == 0) {
            amax_w = fmaxf(amax_w, fabsf(w));
            amax_m = fmaxf(amax_m, fabsf(m));
            amax_v = fmaxf(amax_v, fabsf(v));
            continue;
        }
        elem_store(d->m, j->mdt, i, m * j->sm);
        elem_store(d->v, j->vdt, i, v * j->sv);
        elem_store(d->master, DT_FP16, i, w * j->sw);
        /* the working copy is the value the master now holds */
        if (d->weight) elem_store(d->weight, d->weight_dtype, i, elem_load(d->master, DT_FP16, i) / j->sw);
    }
    j->amax[worker][0] = amax_w, j->amax[worker][1] = amax_m, j->amax[worker][2] = amax_v;
}

/* Pass 1 computes the new states to find their amax; pass 2 recomputes them
 * bit-identically and stores them with the new scales (MS-AMP's two-kernel
 * scheme), so no FP32 copy of the tensor is needed. Unscaled states (no
 * record) keep scale 1. amax_out / amax_in run one pass each (Fp8AdamDesc). */
Status cpu_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e)
{
    (void)bk, (void)e;
    /* dequantization factors of the stored states (scales are powers of two, so exact) */
    Fp8AdamJob j = {.d = d,
                    .gs = d->h.grad_scale * (dtype_is_fp8(d->grad_dtype) ? d->grad_scale_inv[0] : 1.0f),
                    .bc1 = 1.0f - powf(d->h.beta1, (float)d->h.step),
                    .bc2 = 1.0f - powf(d->h.beta2, (float)d->h.step),
                    .dw = 1.0f / rec_scale(d->master_rec),
                    .dm = 1.0f / rec_scale(d->m_rec),
                    .dv = 1.0f / rec_scale(d->v_rec),
                    .sw = 1.0f,
                    .sm = 1.0f,
                    .sv = 1.0f,
                    .mdt = d->moment_dtype == DT_FP32 ? DT_FP32 : DT_E4M3,
                    .vdt = d->moment_dtype == DT_FP32 ? DT_FP32 : DT_FP16};
    float amax_w = 0.0f, amax_m = 0.0f, amax_v = 0.0f;
    if (d->amax_in) { /* sharded states: the amaxes agreed over the ranks */
        amax_w = d->amax_in[0], amax_m = d->amax_in[1], amax_v = d->amax_in[2];
    } else {
        par_chunks(d->n, CPU_CHUNK, fp8_adam_chunk, &j);
        for (int w = 0; w < PAR_MAX_THREADS; w++) {
            amax_w = fmaxf(amax_w, j.amax[w][0]);
            amax_m = fmaxf(amax_m, j.amax[w][1]);
            amax_v = fmaxf(amax_v, j.amax[w][2]);
        }
    }
    if (d->amax_out) { /* sharded states: the first pass only */
        d->amax_out[0] = amax_w, d->amax_out[1] = amax_m, d->amax_out[2] = amax_v;
        return ST_OK;
    }
    if (d->master_rec) j.sw = scaling_pow2(amax_w, DT_FP16, d->margin, d->master_rec[REC_SCALE]);
    if (d->m_rec) j.sm = scaling_pow2(amax_m, DT_E4M3, d->margin, d->m_rec[REC_SCALE]);
    if (d->v_rec) j.sv = scaling_pow2(amax_v, DT_FP16, d->margin, d->v_rec[REC_SCALE]);
    j.pass = 1;
    par_chunks(d->n, CPU_CHUNK, fp8_adam_chunk, &j);
    rec_store(d->master_rec, j.sw, amax_w);
    rec_store(d->m_rec, j.sm, amax_m);
    rec_store(d->v_rec, j.sv, amax_v);
    return ST_OK;
}
