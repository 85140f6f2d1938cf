/* exec/cpu/cpu_attn.c — the CPU reference of causal self-attention with
 * materialized scores (multi-head and grouped-query) and of the rotary
 * position embedding. FP32 arithmetic on the loaded values; every stored
 * output is rounded once to its dtype; sums run in a fixed order.
 *
 * Row layout of qkv (B, T, W), W = (H + 2·KV)·D: q head h at column h·D, k
 * head g at H·D + g·D, v head g at (H + KV)·D + g·D; query head h uses KV head
 * h / (H/KV). Descriptors arrive checked (exec/backend_check.c). */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "exec/kernel_math.h"

/* Column offsets of head h's q, k and v within a qkv row. */
typedef struct {
    uint64_t W, q, k, v;
} HeadCols;

static HeadCols head_cols(uint64_t H, uint64_t KV, uint64_t D, uint64_t h)
{
    uint64_t g = h / (H / KV);
    HeadCols c = {(H + 2 * KV) * D, h * D, H * D + g * D, (H + KV) * D + g * D};
    return c;
}

Status cpu_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e)
{
    uint64_t B = d->batch, T = d->seq, H = d->heads, KV = d->kv_heads, D = d->head_dim, C = H * D;
    uint64_t W = (H + 2 * KV) * D;
    float *q = cpu_scratch(bk, 0, B * T * W, e);
    float *row = q ? cpu_scratch(bk, 1, T, e) : NULL;
    if (!row) return e ? e->st : ST_NOMEM;
    for (uint64_t i = 0; i < B * T * W; i++) q[i] = elem_load(d->qkv, d->dtype, i);
    float scale = 1.0f / sqrtf((float)D);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t h = 0; h < H; h++) {
            HeadCols hc = head_cols(H, KV, D, h);
            for (uint64_t t = 0; t < T; t++) {
                const float *qt = q + (b * T + t) * W + hc.q;
                float mx = -INFINITY;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    const float *kt = q + (b * T + t2) * W + hc.k;
                    float s = 0.0f;
                    for (uint64_t i = 0; i < D; i++) s += qt[i] * kt[i];
                    row[t2] = s * scale;
                    mx = fmaxf(mx, row[t2]);
                }
                float sum = 0.0f;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    row[t2] = expf(row[t2] - mx);
                    sum += row[t2];
                }
                uint64_t pbase = ((b * H + h) * T + t) * T;
                for (uint64_t t2 = 0; t2 < T; t2++) {
                    /* the product below uses the stored (rounded) probability, as a
                     * materialized probs · v GEMM on the GPU would */
                    float p = t2 <= t ? elem_round(row[t2] / sum, d->dtype) : 0.0f;
                    elem_store(d->probs, d->dtype, pbase + t2, p);
                    row[t2] = p;
                }
                for (uint64_t i = 0; i < D; i++) {
                    float o = 0.0f;
                    for (uint64_t t2 = 0; t2 <= t; t2++) o += row[t2] * q[(b * T + t2) * W + hc.v + i];
                    elem_store(d->out, d->dtype, (b * T + t) * C + h * D + i, o);
                }
            }
        }
    return ST_OK;
}

/* dq, dk, dv accumulate in FP32 (dk and dv of a KV head over its query heads,
 * in head order), then are rounded once into dqkv. */
Status cpu_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e)
{
    uint64_t B = d->batch, T = d->seq, H = d->heads, KV = d->kv_heads, D = d->head_dim, C = H * D;
    uint64_t W = (H + 2 * KV) * D;
    float *q = cpu_scratch(bk, 0, B * T * W, e);
    float *dq = q ? cpu_scratch(bk, 1, B * T * W, e) : NULL;
    float *dout = dq ? cpu_scratch(bk, 2, B * T * C, e) : NULL;
    if (!dout) return e ? e->st : ST_NOMEM;
    for (uint64_t i = 0; i < B * T * W; i++) q[i] = elem_load(d->qkv, d->dtype, i);
    for (uint64_t i = 0; i < B * T * C; i++) dout[i] = elem_load(d->dout, d->dtype, i);
    memset(dq, 0, (size_t)(B * T * W) * sizeof(float));
    float scale = 1.0f / sqrtf((float)D);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t h = 0; h < H; h++) {
            HeadCols hc = head_cols(H, KV, D, h);
            float *dp = d->scratch + (b * H + h) * T * T; /* (T, T): d(probs), then d(scores) */
            for (uint64_t t = 0; t < T; t++) {
                const float *dot = dout + (b * T + t) * C + h * D;
                uint64_t pbase = ((b * H + h) * T + t) * T;
                float dsum = 0.0f;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    const float *vt = q + (b * T + t2) * W + hc.v;
                    float s = 0.0f;
                    for (uint64_t i = 0; i < D; i++) s += dot[i] * vt[i];
                    dp[t * T + t2] = s;
                    dsum += elem_load(d->probs, d->dtype, pbase + t2) * s;
                }
                for (uint64_t t2 = 0; t2 < T; t2++) {
                    float p = elem_load(d->probs, d->dtype, pbase + t2);
                    dp[t * T + t2] = t2 <= t ? p * (dp[t * T + t2] - dsum) : 0.0f;
                    if (t2 > t) continue;
                    /* dv[t2] += p · dout[t] */
                    float *dvt = dq + (b * T + t2) * W + hc.v;
                    for (uint64_t i = 0; i < D; i++) dvt[i] += p * dot[i];
                }
            }
            for (uint64_t t = 0; t < T; t++) {
                const float *qt = q + (b * T + t) * W + hc.q;
                float *dqt = dq + (b * T + t) * W + hc.q;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    float ds = dp[t * T + t2] * scale;
                    const float *kt = q + (b * T + t2) * W + hc.k;
                    float *dkt = dq + (b * T + t2) * W + hc.k;
                    for (uint64_t i = 0; i < D; i++) {
                        dqt[i] += ds * kt[i];
                        dkt[i] += ds * qt[i];
                    }
                }
            }
        }
    for (uint64_t i = 0; i < B * T * W; i++) elem_store(d->dqkv, d->dtype, i, dq[i]);
    return ST_OK;
}

/* Rotate the q heads and the k heads of every token in place. */
Status cpu_rope(Backend *bk, const RopeDesc *d, Err *e)
{
    (void)bk, (void)e;
    const uint64_t T = d->seq, D = d->head_dim, half = D / 2, nh = (uint64_t)d->heads + d->kv_heads;
    const uint64_t W = ((uint64_t)d->heads + 2 * (uint64_t)d->kv_heads) * D;
    for (uint64_t r = 0; r < (uint64_t)d->batch * T; r++) {
        const float *cs = d->cos_sin + (r % T) * half * 2;
        for (uint64_t h = 0; h < nh; h++) { /* q heads, then k heads: the first (H + KV)·D columns */
            uint64_t base = r * W + h * D;
            for (uint64_t i = 0; i < half; i++) {
                float c = cs[2 * i], s = d->inverse ? -cs[2 * i + 1] : cs[2 * i + 1], o1, o2;
                km_rope_pair(elem_load(d->qkv, d->dtype, base + i), elem_load(d->qkv, d->dtype, base + half + i), c, s,
                             &o1, &o2);
                elem_store(d->qkv, d->dtype, base + i, o1);
                elem_store(d->qkv, d->dtype, base + half + i, o2);
            }
        }
    }
    return ST_OK;
}
