/* exec/cpu/cpu_quant.c — the CPU reference of the quantization kernels: fused
 * cast + transpose + amax, element-wise conversion, amax, and the per-step
 * scaling updates (delayed: TE's history window; current: this step's amax).
 * The element-wise work runs in fixed tiles/chunks on the thread pool; every
 * element's arithmetic is the same whoever runs it, and amax is a max, so
 * results do not depend on the thread count. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/par.h"
#include "exec/backend/scaling.h"
#include "fp8/codec.h"
#include "fp8/quant.h"

enum { CAST_TR = 32, CAST_TC = 2048 }; /* a cast tile: rows × columns */

typedef struct {
    const CastDesc *c;
    float scale, dq;
    int quant;        /* an FP8 output is wanted */
    uint64_t tiles_c; /* tiles across the columns */
    float *buf;       /* per worker: CAST_TC floats, then CAST_TR × CAST_TC bytes */
    uint64_t stride;
    float amax[PAR_MAX_THREADS];
} CastJob;

/* One tile: x = in · dq, its amax, q = fp8(x · scale) into the row-wise copy,
 * and the tile's codes written column by column into the transposed copy
 * (CAST_TR consecutive bytes per column). */
static void cast_tile(void *ctx, uint64_t task, int worker)
{
    CastJob *j = ctx;
    const CastDesc *c = j->c;
    uint64_t R = c->rows, C = c->cols, r0 = task / j->tiles_c * CAST_TR, c0 = task % j->tiles_c * CAST_TC;
    uint64_t rn = R - r0 < CAST_TR ? R - r0 : CAST_TR, cn = C - c0 < CAST_TC ? C - c0 : CAST_TC;
    float *x = j->buf + (uint64_t)worker * j->stride, amax = j->amax[worker];
    uint8_t *qb = (uint8_t *)(x + CAST_TC);
    for (uint64_t r = 0; r < rn; r++) {
        elem_load_run(c->in, c->in_dtype, (r0 + r) * C + c0, x, cn);
        for (uint64_t i = 0; i < cn; i++) {
            x[i] *= j->dq;
            float a = fabsf(x[i]);
            amax = a > amax ? a : amax; /* NaN ignored, as fmaxf */
        }
        if (!j->quant) continue;
        uint8_t *q = qb + r * CAST_TC;
        fp8_encode_f32_array(c->out_dtype, x, j->scale, q, cn, FP8_SATFINITE); /* = elem_fp8_from_f32(x · scale) */
        if (c->out_row) memcpy((uint8_t *)c->out_row + (r0 + r) * C + c0, q, (size_t)cn);
    }
    if (c->out_col)
        for (uint64_t i = 0; i < cn; i++) {
            uint8_t *col = (uint8_t *)c->out_col + (c0 + i) * (c->col_ld ? c->col_ld : R) + r0;
            for (uint64_t r = 0; r < rn; r++) col[r] = qb[r * CAST_TC + i];
        }
    j->amax[worker] = amax;
}

/* Block scaling: each copy through fp8/'s quantizer (quant_tensor, FP32 scales, not rounded to powers of
 * two), from an FP32 copy of the input (transposed for the transposed copy). With col_ld the transposed
 * copy is quantized packed, its tiles starting at its own first column, and its rows placed col_ld apart
 * (a MoE layer's expert: its columns of the (cols, rows of all experts) copy). */
static Status cast_blocks(Backend *bk, const CastDesc *c, Err *e)
{
    const uint64_t R = c->rows, C = c->cols, n = R * C;
    if (!n) return ST_OK;
    uint64_t ns = 0, ns2 = 0, nmax;
    QuantCfg cfg = quant_cfg(c->out_dtype, c->gran);
    cfg.pow2 = 0;
    Status st = quant_scale_count(&cfg, R, C, &ns, e);
    if (!st) st = quant_scale_count(&cfg, C, R, &ns2, e);
    if (st) return st;
    nmax = ns > ns2 ? ns : ns2;
    const uint64_t ncode = c->col_ld ? (n + sizeof(float) - 1) / sizeof(float) : 0; /* the packed codes */
    float *x = cpu_scratch(bk, 0, 2 * n + nmax + ncode, e);
    if (!x) return e ? e->st : ST_NOMEM;
    float *xt = x + n, *sc = xt + n;
    uint8_t *packed = c->col_ld ? (uint8_t *)(sc + nmax) : c->out_col;
    elem_load_run(c->in, c->in_dtype, 0, x, n);
    if (c->out_row) {
        QuantBufs b = {.codes = c->out_row, .scale = sc, .scale_inv = c->row_scale_inv};
        st = quant_tensor(&cfg, x, R, C, &b, NULL, e);
    }
    if (!st && c->out_col) {
        for (uint64_t r = 0; r < R; r++)
            for (uint64_t j = 0; j < C; j++) xt[j * R + r] = x[r * C + j];
        QuantBufs b = {.codes = packed, .scale = sc, .scale_inv = c->col_scale_inv};
        st = quant_tensor(&cfg, xt, C, R, &b, NULL, e);
        for (uint64_t j = 0; !st && c->col_ld && j < C; j++)
            memcpy((uint8_t *)c->out_col + j * c->col_ld, packed + j * R, (size_t)R);
    }
    return st;
}

Status cpu_cast_transpose(Backend *bk, const CastDesc *c, Err *e)
{
    if (c->gran != GRAN_TENSOR) return cast_blocks(bk, c, e);
    CastJob j = {.c = c,
                 .scale = c->scale ? c->scale[0] : 1.0f,
                 .dq = c->in_scale_inv ? c->in_scale_inv[0] : 1.0f,
                 .quant = c->out_row || c->out_col,
                 .tiles_c = (c->cols + CAST_TC - 1) / CAST_TC};
    uint64_t tiles = (c->rows + CAST_TR - 1) / CAST_TR * j.tiles_c;
    if (tiles) {
        j.buf = cpu_scratch_workers(bk, 0, CAST_TC + CAST_TR * CAST_TC / sizeof(float), &j.stride, e);
        if (!j.buf) return e ? e->st : ST_NOMEM;
        par_tasks(tiles, cast_tile, &j);
    }
    float amax = 0.0f;
    for (int w = 0; w < PAR_MAX_THREADS; w++) amax = j.amax[w] > amax ? j.amax[w] : amax;
    if (c->amax) *c->amax = fmaxf(*c->amax, amax);
    if (c->scale_inv && c->scale) *c->scale_inv = 1.0f / j.scale;
    return ST_OK;
}

typedef struct {
    const void *in;
    void *out;
    Dtype in_dt, out_dt;
    float s;
    float *buf;
    uint64_t stride;
    float amax[PAR_MAX_THREADS];
} RunJob;

static void convert_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    RunJob *j = ctx;
    float *x = j->buf + (uint64_t)worker * j->stride;
    elem_load_run(j->in, j->in_dt, b, x, e - b);
    for (uint64_t i = 0; i < e - b; i++) x[i] *= j->s;
    elem_store_run(j->out, j->out_dt, b, x, e - b);
}

Status cpu_convert(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                   const float *scale, Err *e)
{
    if (!n) return ST_OK;
    RunJob j = {.in = in, .out = out, .in_dt = in_dtype, .out_dt = out_dtype, .s = scale ? scale[0] : 1.0f};
    j.buf = cpu_scratch_workers(bk, 0, CPU_CHUNK, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(n, CPU_CHUNK, convert_chunk, &j);
    return ST_OK;
}

static void amax_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    RunJob *j = ctx;
    float *x = j->buf + (uint64_t)worker * j->stride, m = j->amax[worker];
    elem_load_run(j->in, j->in_dt, b, x, e - b);
    for (uint64_t i = 0; i < e - b; i++) {
        float a = fabsf(x[i]);
        m = a > m ? a : m; /* NaN ignored, as fmaxf */
    }
    j->amax[worker] = m;
}

Status cpu_amax(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e)
{
    RunJob j = {.in = in, .in_dt = dtype};
    if (n) {
        j.buf = cpu_scratch_workers(bk, 0, CPU_CHUNK, &j.stride, e);
        if (!j.buf) return e ? e->st : ST_NOMEM;
        par_chunks(n, CPU_CHUNK, amax_chunk, &j);
    }
    float m = 0.0f;
    for (int w = 0; w < PAR_MAX_THREADS; w++) m = j.amax[w] > m ? j.amax[w] : m;
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
