/* exec/cpu/cpu_optim.c — the CPU reference optimizers: AdamW on FP32 master/m/v,
 * and FP8-LM's AdamW on FP16 master + FP8 m + FP16 v with per-tensor scales. */
#include <math.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "exec/kernel_math.h"
#include "exec/scaling.h"

/* The AdamW update of one element in FP32 (exec/kernel_math.h, shared with the GPU). */
static inline float adam_update(const AdamHyper *h, float bc1, float bc2, float w, float g, float *m, float *v)
{
    return km_adamw(w, g, m, v, h->lr, h->beta1, h->beta2, h->eps, h->weight_decay, bc1, bc2);
}

Status cpu_adamw(Backend *bk, const AdamWDesc *d, Err *e)
{
    (void)bk, (void)e;
    float *master = d->master ? d->master : (float *)d->weight; /* without a master the FP32 working copy is it */
    float gs = d->h.grad_scale * (dtype_is_fp8(d->grad_dtype) ? d->grad_scale_inv[0] : 1.0f);
    float bc1 = 1.0f - powf(d->h.beta1, (float)d->h.step), bc2 = 1.0f - powf(d->h.beta2, (float)d->h.step);
    for (uint64_t i = 0; i < d->n; i++) {
        float g = elem_load(d->grad, d->grad_dtype, i) * gs;
        float w = adam_update(&d->h, bc1, bc2, master[i], g, &d->m[i], &d->v[i]);
        master[i] = w;
        if (d->weight && d->master) elem_store(d->weight, d->weight_dtype, i, w);
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

/* Pass 1 computes the new states to find their amax; pass 2 recomputes them
 * bit-identically and stores them with the new scales (MS-AMP's two-kernel
 * scheme), so no FP32 copy of the tensor is needed. Unscaled states (no
 * record) keep scale 1. */
Status cpu_fp8_adam(Backend *bk, const Fp8AdamDesc *d, Err *e)
{
    (void)bk, (void)e;
    float gs = d->h.grad_scale * (dtype_is_fp8(d->grad_dtype) ? d->grad_scale_inv[0] : 1.0f);
    float bc1 = 1.0f - powf(d->h.beta1, (float)d->h.step), bc2 = 1.0f - powf(d->h.beta2, (float)d->h.step);
    /* dequantization factors of the stored states (scales are powers of two, so exact) */
    float dw = 1.0f / rec_scale(d->master_rec), dm = 1.0f / rec_scale(d->m_rec), dv = 1.0f / rec_scale(d->v_rec);
    float amax_w = 0.0f, amax_m = 0.0f, amax_v = 0.0f, sw = 1.0f, sm = 1.0f, sv = 1.0f;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (d->master_rec) sw = scaling_pow2(amax_w, DT_FP16, d->margin, d->master_rec[REC_SCALE]);
            if (d->m_rec) sm = scaling_pow2(amax_m, DT_E4M3, d->margin, d->m_rec[REC_SCALE]);
            if (d->v_rec) sv = scaling_pow2(amax_v, DT_FP16, d->margin, d->v_rec[REC_SCALE]);
        }
        for (uint64_t i = 0; i < d->n; i++) {
            float g = elem_load(d->grad, d->grad_dtype, i) * gs;
            float m = elem_load(d->m, DT_E4M3, i) * dm, v = elem_load(d->v, DT_FP16, i) * dv;
            float w = adam_update(&d->h, bc1, bc2, elem_load(d->master, DT_FP16, i) * dw, g, &m, &v);
            if (pass == 0) {
                amax_w = fmaxf(amax_w, fabsf(w));
                amax_m = fmaxf(amax_m, fabsf(m));
                amax_v = fmaxf(amax_v, fabsf(v));
                continue;
            }
            elem_store(d->m, DT_E4M3, i, m * sm);
            elem_store(d->v, DT_FP16, i, v * sv);
            elem_store(d->master, DT_FP16, i, w * sw);
            /* the working copy is the value the master now holds */
            if (d->weight) elem_store(d->weight, d->weight_dtype, i, elem_load(d->master, DT_FP16, i) / sw);
        }
    }
    rec_store(d->master_rec, sw, amax_w);
    rec_store(d->m_rec, sm, amax_m);
    rec_store(d->v_rec, sv, amax_v);
    return ST_OK;
}
