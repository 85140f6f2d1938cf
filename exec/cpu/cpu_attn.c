/* exec/cpu/cpu_attn.c — the CPU reference of causal self-attention with
 * materialized scores (multi-head and grouped-query) and of the rotary
 * position embedding (with the q/k norms before it: cpu_qknorm.c). FP32
 * arithmetic on the loaded values; every stored output is rounded once to its
 * dtype; every sum is computed in one fixed order, whatever the thread count.
 *
 * Row layout of qkv (B, T, W), W = (H + KV)·D + KV·Dv (Dv = D but for latent
 * attention's value heads): q head h at column h·D, k head g at H·D + g·D, v
 * head g at (H + KV)·D + g·Dv; query head h uses KV head h / (H/KV).
 * Descriptors arrive checked (exec/backend/backend_check.c).
 *
 * Parallel on the thread pool (exec/backend/par.h) in fixed pieces: per (sequence,
 * head) in blocks of ATT_BLOCK query rows, the scores of a block against keys
 * [0, end of the block) are one sgemm (the part above the diagonal is computed
 * and ignored), the softmax runs row by row in FP32, and probs · V is one sgemm
 * over the same keys, whose masked probabilities are exact zeros. So the dot
 * products are summed in the BLAS's order, not position by position (within
 * the GPU tests' FP32 reordering bound), and, as in the GPU's materialized
 * P·V, a non-finite v of a later position reaches earlier outputs through
 * 0·Inf. The backward's dk and dv of a KV head are one task per (sequence, KV
 * head, key block) that sums its query heads in head order (the first
 * overwrites, the next accumulate: sgemm's beta). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/cpu/cpu_qknorm.h"
#include "exec/backend/elem.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/par.h"
#include "fp8/half.h"

enum {
    ATT_BLOCK = 64, /* query (and key) rows per attention task */
    ROPE_ROWS = 16, /* tokens per rotary-embedding task */
};

/* x[0..n) rounded to dt in place (elem_round over a run). */
static void round_run(float *x, uint64_t n, Dtype dt)
{
    if (dt == DT_BF16) bf16_round_array(x, (size_t)n);
    if (dt == DT_FP16) fp16_round_array(x, (size_t)n);
}

typedef struct {
    uint64_t B, T, H, KV, D, Dv, C, W, nblk; /* Dv: a value head's width (D, or latent attention's own) */
    float scale;
    Dtype dt;
    const float *q;    /* qkv as FP32 (B·T, W) */
    const float *dout; /* backward: dout as FP32 (B·T, C) */
    float *dq;         /* backward: dqkv as FP32 (B·T, W) */
    void *probs;       /* (B, H, T, T) in dt */
    float *dp;         /* backward: the descriptor's FP32 (B, H, T, T) scratch */
    void *out;         /* forward: (B·T, C) in dt */
    float *buf;        /* per worker */
    uint64_t stride;
} AttJob;

/* Column offsets of query head h's q, and of its KV head's k and v, within a qkv row. */
static uint64_t col_q(const AttJob *j, uint64_t h) { return h * j->D; }
static uint64_t col_k(const AttJob *j, uint64_t h) { return (j->H + h / (j->H / j->KV)) * j->D; }
static uint64_t col_v(const AttJob *j, uint64_t h) { return (j->H + j->KV) * j->D + h / (j->H / j->KV) * j->Dv; }

typedef struct {
    const void *src;
    Dtype dt;
    float *dst;
} LoadJob;

static void load_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    const LoadJob *j = ctx;
    elem_load_run(j->src, j->dt, b, j->dst + b, e - b);
}

static void store_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    (void)worker;
    const LoadJob *j = ctx; /* dst is the FP32 source here, src the destination */
    elem_store_run((void *)j->src, j->dt, b, j->dst + b, e - b);
}

static void att_fwd_task(void *ctx, uint64_t task, int worker)
{
    const AttJob *j = ctx;
    uint64_t T = j->T, D = j->D, W = j->W, b = task / (j->H * j->nblk), h = task / j->nblk % j->H;
    uint64_t t0 = task % j->nblk * ATT_BLOCK, t1 = T - t0 < ATT_BLOCK ? T : t0 + ATT_BLOCK, tb = t1 - t0;
    const float *row0 = j->q + b * T * W, *Q = row0 + col_q(j, h), *K = row0 + col_k(j, h), *V = row0 + col_v(j, h);
    float *S = j->buf + (uint64_t)worker * j->stride, *O = S + ATT_BLOCK * T;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tb, (int)t1, (int)D, 1.0f, Q + t0 * W, (int)W, K, (int)W,
                0.0f, S, (int)t1);
    size_t esz = dtype_bytes(j->dt);
    for (uint64_t r = 0; r < tb; r++) {
        uint64_t t = t0 + r, pbase = ((b * j->H + h) * T + t) * T;
        float *row = S + r * t1, mx = -INFINITY, sum = 0.0f;
        for (uint64_t t2 = 0; t2 <= t; t2++) {
            row[t2] *= j->scale;
            mx = fmaxf(mx, row[t2]);
        }
        for (uint64_t t2 = 0; t2 <= t; t2++) {
            row[t2] = expf(row[t2] - mx);
            sum += row[t2];
        }
        /* the product below uses the stored (rounded) probability, as a
         * materialized probs · v GEMM on the GPU would */
        for (uint64_t t2 = 0; t2 <= t; t2++) row[t2] = row[t2] / sum;
        round_run(row, t + 1, j->dt);
        memset(row + t + 1, 0, (size_t)(t1 - t - 1) * sizeof(float));
        elem_store_run(j->probs, j->dt, pbase, row, t1);
        memset((char *)j->probs + (pbase + t1) * esz, 0, (size_t)(T - t1) * esz); /* zero is all-zero bits */
    }
    const uint64_t Dv = j->Dv;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tb, (int)Dv, (int)t1, 1.0f, S, (int)t1, V, (int)W, 0.0f,
                O, (int)Dv);
    for (uint64_t r = 0; r < tb; r++) elem_store_run(j->out, j->dt, (b * T + t0 + r) * j->C + h * Dv, O + r * Dv, Dv);
}

/* The shapes of an attention call, and qkv as FP32 in scratch slot 0. */
static Status att_begin(Backend *bk, AttJob *j, uint32_t B, uint32_t T, uint32_t H, uint32_t KV, uint32_t D,
                        uint32_t Dv, Dtype dt, const void *qkv, Err *e)
{
    if (!Dv) Dv = D;
    *j = (AttJob){.B = B, .T = T, .H = H, .KV = KV, .D = D, .Dv = Dv, .C = (uint64_t)H * Dv, .dt = dt};
    j->W = ((uint64_t)H + (uint64_t)KV) * D + (uint64_t)KV * Dv;
    j->nblk = (j->T + ATT_BLOCK - 1) / ATT_BLOCK;
    j->scale = 1.0f / sqrtf((float)D);
    if (j->T > INT32_MAX || j->W > INT32_MAX) return err_set(e, ST_USAGE, "attention: shape too large for the BLAS");
    float *q = cpu_scratch(bk, 0, j->B * j->T * j->W, e);
    if (!q) return e ? e->st : ST_NOMEM;
    LoadJob l = {qkv, dt, q};
    par_chunks(j->B * j->T * j->W, CPU_CHUNK, load_chunk, &l);
    j->q = q;
    return ST_OK;
}

Status cpu_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e)
{
    AttJob j;
    Status st =
        att_begin(bk, &j, d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->v_head_dim, d->dtype, d->qkv, e);
    if (st) return st;
    j.probs = d->probs;
    j.out = d->out;
    j.buf = cpu_scratch_workers(bk, 3, ATT_BLOCK * (j.T + j.Dv), &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_tasks(j.B * j.H * j.nblk, att_fwd_task, &j);
    return ST_OK;
}

/* Backward, query block of head h: dP = dO·Vᵀ into the scratch rows, then
 * d(scores)·scale = P·(dP − Σ P·dP)·scale over keys ≤ query (0 above), then
 * dQ = that · K. */
static void att_bwd_queries(void *ctx, uint64_t task, int worker)
{
    const AttJob *j = ctx;
    uint64_t T = j->T, D = j->D, Dv = j->Dv, C = j->C, W = j->W, b = task / (j->H * j->nblk), h = task / j->nblk % j->H;
    uint64_t t0 = task % j->nblk * ATT_BLOCK, t1 = T - t0 < ATT_BLOCK ? T : t0 + ATT_BLOCK, tb = t1 - t0;
    const float *row0 = j->q + b * T * W, *K = row0 + col_k(j, h), *V = row0 + col_v(j, h);
    const float *dO = j->dout + b * T * C + h * Dv;
    float *dp = j->dp + (b * j->H + h) * T * T, *p = j->buf + (uint64_t)worker * j->stride;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tb, (int)t1, (int)Dv, 1.0f, dO + t0 * C, (int)C, V,
                (int)W, 0.0f, dp + t0 * T, (int)T);
    for (uint64_t t = t0; t < t1; t++) {
        float *row = dp + t * T, dsum = 0.0f;
        elem_load_run(j->probs, j->dt, ((b * j->H + h) * T + t) * T, p, t + 1);
        for (uint64_t t2 = 0; t2 <= t; t2++) dsum += p[t2] * row[t2];
        for (uint64_t t2 = 0; t2 <= t; t2++) row[t2] = p[t2] * (row[t2] - dsum) * j->scale;
        memset(row + t + 1, 0, (size_t)(t1 - t - 1) * sizeof(float));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tb, (int)D, (int)t1, 1.0f, dp + t0 * T, (int)T, K,
                (int)W, 0.0f, j->dq + (b * T + t0) * W + col_q(j, h), (int)W);
}

/* Backward, key block [s0, s1) of KV head g: dV = Σ_h Pₕᵀ·dOₕ and dK = Σ_h
 * (d(scores)ₕ·scale)ᵀ·Qₕ over the query heads h of the group in order and the
 * queries t ≥ s0 (the rows below have zeros in these columns). */
static void att_bwd_keys(void *ctx, uint64_t task, int worker)
{
    const AttJob *j = ctx;
    uint64_t T = j->T, D = j->D, Dv = j->Dv, C = j->C, W = j->W, grp = j->H / j->KV;
    uint64_t b = task / (j->KV * j->nblk), g = task / j->nblk % j->KV;
    uint64_t s0 = task % j->nblk * ATT_BLOCK, s1 = T - s0 < ATT_BLOCK ? T : s0 + ATT_BLOCK, sb = s1 - s0, nt = T - s0;
    float *p = j->buf + (uint64_t)worker * j->stride, *dq = j->dq + (b * T + s0) * W;
    for (uint64_t h = g * grp; h < (g + 1) * grp; h++) {
        const float *Q = j->q + b * T * W + col_q(j, h), *dO = j->dout + b * T * C + h * Dv;
        const float *dp = j->dp + (b * j->H + h) * T * T;
        float beta = h == g * grp ? 0.0f : 1.0f;
        for (uint64_t t = s0; t < T; t++)
            elem_load_run(j->probs, j->dt, ((b * j->H + h) * T + t) * T + s0, p + (t - s0) * sb, sb);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)sb, (int)Dv, (int)nt, 1.0f, p, (int)sb, dO + s0 * C,
                    (int)C, beta, dq + col_v(j, h), (int)W);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)sb, (int)D, (int)nt, 1.0f, dp + s0 * T + s0, (int)T,
                    Q + s0 * W, (int)W, beta, dq + col_k(j, h), (int)W);
    }
}

Status cpu_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e)
{
    AttJob j;
    Status st =
        att_begin(bk, &j, d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->v_head_dim, d->dtype, d->qkv, e);
    if (st) return st;
    uint64_t nq = j.B * j.T * j.W, nd = j.B * j.T * j.C;
    float *dq = cpu_scratch(bk, 1, nq, e), *dout = dq ? cpu_scratch(bk, 2, nd, e) : NULL;
    j.buf = dout ? cpu_scratch_workers(bk, 3, j.T * ATT_BLOCK, &j.stride, e) : NULL;
    if (!j.buf) return e ? e->st : ST_NOMEM;
    LoadJob l = {d->dout, d->dtype, dout};
    par_chunks(nd, CPU_CHUNK, load_chunk, &l);
    j.dout = dout, j.dq = dq, j.dp = d->scratch, j.probs = (void *)d->probs;
    par_tasks(j.B * j.H * j.nblk, att_bwd_queries, &j);
    par_tasks(j.B * j.KV * j.nblk, att_bwd_keys, &j);
    LoadJob s = {d->dqkv, d->dtype, dq};
    par_chunks(nq, CPU_CHUNK, store_chunk, &s);
    return ST_OK;
}

/* ---- rotary position embedding -------------------------------------------------------- */

/* Rotate the q heads and the k heads of tokens [r0, r1) in place. */
static void rope_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    (void)worker;
    const RopeDesc *d = ctx;
    const uint64_t T = d->seq, D = d->head_dim, nh = (uint64_t)d->heads + d->kv_heads;
    const uint64_t R = d->rope_dim ? d->rope_dim : D, half = R / 2, Dv = d->v_head_dim ? d->v_head_dim : D;
    const uint64_t W = nh * D + (uint64_t)d->kv_heads * Dv; /* the rotated part: a head's last R columns */
    for (uint64_t r = r0; r < r1; r++) {
        const float *cs = d->cos_sin + (r % T) * half * 2;
        for (uint64_t h = 0; h < nh; h++) { /* q heads, then k heads: the first (H + KV)·D columns */
            uint64_t base = r * W + h * D + D - R;
            for (uint64_t i = 0; i < half; i++) {
                float c = cs[2 * i], s = d->inverse ? -cs[2 * i + 1] : cs[2 * i + 1], o1, o2;
                km_rope_pair(elem_load(d->qkv, d->dtype, base + i), elem_load(d->qkv, d->dtype, base + half + i), c, s,
                             &o1, &o2);
                elem_store(d->qkv, d->dtype, base + i, o1);
                elem_store(d->qkv, d->dtype, base + half + i, o2);
            }
        }
    }
}

Status cpu_rope(Backend *bk, const RopeDesc *d, Err *e)
{
    Status st = d->qnorm_w && !d->inverse ? cpu_qknorm_fwd(bk, d, e) : ST_OK; /* q/k norms before the rotation */
    if (!st) par_chunks((uint64_t)d->batch * d->seq, ROPE_ROWS, rope_rows, (void *)d);
    if (!st && d->qnorm_w && d->inverse) st = cpu_qknorm_bwd(bk, d, e); /* and their backward after */
    return st;
}
