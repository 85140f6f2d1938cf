/* exec/cpu/cpu_quant.c — the CPU reference of the quantization kernels: fused
 * cast + transpose + amax, element-wise conversion, amax, and the per-step
 * scaling updates (delayed: TE's history window; current: this step's amax). */
#include <float.h>
#include <math.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "exec/scaling.h"

Status cpu_cast_transpose(Backend *bk, const CastDesc *c, Err *e)
{
    (void)bk, (void)e;
    float scale = c->scale ? c->scale[0] : 1.0f, amax = 0.0f, dq = c->in_scale_inv ? c->in_scale_inv[0] : 1.0f;
    uint64_t R = c->rows, C = c->cols;
    for (uint64_t r = 0; r < R; r++)
        for (uint64_t j = 0; j < C; j++) {
            float x = elem_load(c->in, c->in_dtype, r * C + j) * dq;
            amax = fmaxf(amax, fabsf(x));
            if (!c->out_row && !c->out_col) continue;
            uint8_t q = elem_fp8_from_f32(x * scale, c->out_dtype);
            if (c->out_row) ((uint8_t *)c->out_row)[r * C + j] = q;
            if (c->out_col) ((uint8_t *)c->out_col)[j * R + r] = q;
        }
    if (c->amax) *c->amax = fmaxf(*c->amax, amax);
    if (c->scale_inv && c->scale) *c->scale_inv = 1.0f / scale;
    return ST_OK;
}

Status cpu_convert(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                   const float *scale, Err *e)
{
    (void)bk, (void)e;
    float s = scale ? scale[0] : 1.0f;
    for (uint64_t i = 0; i < n; i++) elem_store(out, out_dtype, i, elem_load(in, in_dtype, i) * s);
    return ST_OK;
}

Status cpu_amax(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e)
{
    (void)bk, (void)e;
    float m = 0.0f;
    for (uint64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(elem_load(in, dtype, i)));
    *amax = fmaxf(*amax, m);
    return ST_OK;
}

Status cpu_scaling_delayed_update(Backend *bk, const ScalingBank *bank, Err *e)
{
    (void)bk, (void)e;
    for (uint32_t i = 0; i < bank->n; i++)
        scaling_delayed_step(bank->amax_history + i, bank->n, bank->history_len, bank->algo, bank->fmt, bank->margin,
                             &bank->scale[i]);
    return ST_OK;
}

Status cpu_scaling_from_amax(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale, Err *e)
{
    (void)bk, (void)e;
    for (uint32_t i = 0; i < n; i++) scale[i] = scaling_current(amax[i], fmt, margin);
    return ST_OK;
}
