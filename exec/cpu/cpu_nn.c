/* exec/cpu/cpu_nn.c — the CPU reference of the memory-bound layers: layer norm,
 * causal attention (materialized scores), GELU, residual add, bias gradient,
 * embeddings and softmax cross-entropy. Inputs are read as float, arithmetic
 * is FP32, and every stored output is rounded once to its dtype, as the GPU
 * kernels do. Reductions run in a fixed order (deterministic).
 *
 * Parallel on the thread pool (exec/par.h) in fixed pieces: rows for the row
 * operations, column chunks for the column sums (layer norm's weight and bias
 * gradients, the bias gradient, the embedding gradients), so every sum keeps
 * one order whatever the thread count. Rows are loaded to and stored from
 * FP32 runs so the loops between vectorize; every element's arithmetic is the
 * one-element code it replaced, except attention's products, which are the
 * BLAS's (below). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "exec/kernel_math.h"
#include "exec/par.h"
#include "fp8/half.h"

enum {
    ROWS_PER_TASK = 16, /* rows of a row operation per task */
    COLS_PER_TASK = 64, /* columns of a column sum per task */
    ATT_BLOCK = 64,     /* query (and key) rows per attention task */
};

static Status need_dtype(Dtype dt, const char *op, const char *what, Err *e)
{
    if (elem_supported(dt) && !dtype_is_fp8(dt)) return ST_OK;
    return err_set(e, ST_USAGE, "%s: %s dtype %s is not fp32, fp16 or bf16", op, what, dtype_name(dt));
}

/* x[0..n) rounded to dt in place (elem_round over a run). */
static void round_run(float *x, uint64_t n, Dtype dt)
{
    if (dt == DT_BF16) bf16_round_array(x, (size_t)n);
    if (dt == DT_FP16) fp16_round_array(x, (size_t)n);
}

/* ---- layer norm ------------------------------------------------------------------- */

typedef struct {
    const void *in, *dout;
    void *out;
    Dtype act;
    uint64_t rows, c;
    float eps;
    const float *w, *b; /* weight, bias as FP32 (c each) */
    float *mean, *rstd;
    float *dw, *db; /* backward: FP32 accumulators */
    float *buf;     /* per worker */
    uint64_t stride;
} LnJob;

static void ln_fwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const LnJob *j = ctx;
    uint64_t c = j->c;
    float *x = j->buf + (uint64_t)worker * j->stride, *y = x + c;
    for (uint64_t r = r0; r < r1; r++) {
        elem_load_run(j->in, j->act, r * c, x, c);
        float sum = 0.0f;
        for (uint64_t i = 0; i < c; i++) sum += x[i];
        float mean = sum / (float)c, var = 0.0f;
        for (uint64_t i = 0; i < c; i++) {
            float t = x[i] - mean;
            var += t * t;
        }
        float rstd = 1.0f / sqrtf(var / (float)c + j->eps);
        for (uint64_t i = 0; i < c; i++) y[i] = (x[i] - mean) * rstd * j->w[i] + j->b[i];
        elem_store_run(j->out, j->act, r * c, y, c);
        j->mean[r] = mean;
        j->rstd[r] = rstd;
    }
}

/* weight and bias (c each, dtype dt) as FP32 into w[0..2c). */
static float *ln_params(Backend *bk, const void *weight, const void *bias, Dtype dt, uint64_t c, Err *e)
{
    float *w = cpu_scratch(bk, 1, 2 * c, e);
    if (!w) return NULL;
    elem_load_run(weight, dt, 0, w, c);
    elem_load_run(bias, dt, 0, w + c, c);
    return w;
}

Status cpu_layernorm_fwd(Backend *bk, const LnFwdDesc *d, Err *e)
{
    Status st = need_dtype(d->act_dtype, "layernorm_fwd", "activation", e);
    if (!st) st = need_dtype(d->weight_dtype, "layernorm_fwd", "weight", e);
    if (st) return st;
    if (!d->in || !d->out || !d->weight || !d->bias || !d->mean || !d->rstd || !d->cols)
        return err_set(e, ST_USAGE, "layernorm_fwd: missing pointer or zero width");
    uint64_t c = d->cols;
    LnJob j = {
        .in = d->in, .out = d->out, .act = d->act_dtype, .c = c, .eps = d->eps, .mean = d->mean, .rstd = d->rstd};
    float *w = ln_params(bk, d->weight, d->bias, d->weight_dtype, c, e);
    j.buf = w ? cpu_scratch_workers(bk, 0, 2 * c, &j.stride, e) : NULL;
    if (!j.buf) return e ? e->st : ST_NOMEM;
    j.w = w, j.b = w + c;
    par_chunks(d->rows, ROWS_PER_TASK, ln_fwd_rows, &j);
    return ST_OK;
}

/* Input gradient, row by row: din += (dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂))·rstd. */
static void ln_bwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const LnJob *j = ctx;
    uint64_t c = j->c;
    float *x = j->buf + (uint64_t)worker * j->stride, *g = x + c, *h = g + c;
    void *din = (void *)j->out;
    for (uint64_t r = r0; r < r1; r++) {
        float mean = j->mean[r], rstd = j->rstd[r];
        elem_load_run(j->in, j->act, r * c, x, c);
        elem_load_run(j->dout, j->act, r * c, g, c);
        elem_load_run(din, j->act, r * c, h, c);
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (uint64_t i = 0; i < c; i++) {
            float norm = (x[i] - mean) * rstd, dnorm = j->w[i] * g[i];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= (float)c;
        dnorm_norm_mean /= (float)c;
        for (uint64_t i = 0; i < c; i++) {
            float norm = (x[i] - mean) * rstd;
            h[i] = h[i] + km_ln_dinput(j->w[i] * g[i], norm, dnorm_mean, dnorm_norm_mean, rstd);
        }
        elem_store_run(din, j->act, r * c, h, c);
    }
}

/* Weight and bias gradients of columns [c0, c1): sums over the rows in order. */
static void ln_bwd_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    const LnJob *j = ctx;
    uint64_t c = j->c, n = c1 - c0, rows = j->rows;
    float *x = j->buf + (uint64_t)worker * j->stride, *g = x + COLS_PER_TASK;
    float *dw = j->dw + c0, *db = j->db + c0;
    for (uint64_t r = 0; r < rows; r++) {
        float mean = j->mean[r], rstd = j->rstd[r];
        elem_load_run(j->in, j->act, r * c + c0, x, n);
        elem_load_run(j->dout, j->act, r * c + c0, g, n);
        for (uint64_t i = 0; i < n; i++) {
            db[i] += g[i];
            dw[i] += (x[i] - mean) * rstd * g[i];
        }
    }
}

Status cpu_layernorm_bwd(Backend *bk, const LnBwdDesc *d, Err *e)
{
    Status st = need_dtype(d->act_dtype, "layernorm_bwd", "activation", e);
    if (!st) st = need_dtype(d->weight_dtype, "layernorm_bwd", "weight", e);
    if (st) return st;
    if (!d->in || !d->weight || !d->mean || !d->rstd || !d->dout || !d->din || !d->dweight || !d->dbias || !d->cols)
        return err_set(e, ST_USAGE, "layernorm_bwd: missing pointer or zero width");
    uint64_t c = d->cols;
    float *w = cpu_scratch(bk, 1, c, e);
    if (!w) return e ? e->st : ST_NOMEM;
    elem_load_run(d->weight, d->weight_dtype, 0, w, c);
    float *mean = (float *)d->mean, *rstd = (float *)d->rstd;
    LnJob j = {.in = d->in,
               .dout = d->dout,
               .out = d->din,
               .act = d->act_dtype,
               .rows = d->rows,
               .c = c,
               .w = w,
               .mean = mean,
               .rstd = rstd,
               .dw = d->dweight,
               .db = d->dbias};
    /* per worker: three rows (ln_bwd_rows) or two column runs (ln_bwd_cols) */
    j.buf = cpu_scratch_workers(bk, 0, 3 * c > 2 * COLS_PER_TASK ? 3 * c : 2 * COLS_PER_TASK, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->rows, ROWS_PER_TASK, ln_bwd_rows, &j);
    par_chunks(c, COLS_PER_TASK, ln_bwd_cols, &j);
    return ST_OK;
}

/* ---- attention ------------------------------------------------------------------------
 * Per (sequence, head), in blocks of ATT_BLOCK query rows: the scores of a block
 * against keys [0, end of the block) are one sgemm (the part above the diagonal is
 * computed and ignored), the softmax runs row by row in FP32 as before, and
 * probs · V is one sgemm over the same keys, whose masked probabilities are exact
 * zeros. So the dot products are summed in the BLAS's order, not position by
 * position (within the GPU tests' FP32 reordering bound), and, as in the GPU's
 * materialized P·V, a non-finite v of a later position reaches earlier outputs
 * through 0·Inf. */

typedef struct {
    uint64_t B, T, H, D, C, C3, nblk;
    float scale;
    Dtype dt;
    const float *q;    /* qkv as FP32 (B·T, 3C) */
    const float *dout; /* backward: dout as FP32 (B·T, C) */
    float *dq;         /* backward: dqkv as FP32 (B·T, 3C) */
    void *probs;       /* (B, H, T, T) in dt */
    float *dp;         /* backward: the descriptor's FP32 (B, H, T, T) scratch */
    void *out;         /* forward: (B·T, C) in dt */
    float *buf;        /* per worker */
    uint64_t stride;
} AttJob;

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
    uint64_t T = j->T, D = j->D, C3 = j->C3, b = task / (j->H * j->nblk), h = task / j->nblk % j->H;
    uint64_t t0 = task % j->nblk * ATT_BLOCK, t1 = T - t0 < ATT_BLOCK ? T : t0 + ATT_BLOCK, tb = t1 - t0;
    const float *Q = j->q + b * T * C3 + h * D, *K = Q + j->C, *V = Q + 2 * j->C;
    float *S = j->buf + (uint64_t)worker * j->stride, *O = S + ATT_BLOCK * T;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tb, (int)t1, (int)D, 1.0f, Q + t0 * C3, (int)C3, K,
                (int)C3, 0.0f, S, (int)t1);
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tb, (int)D, (int)t1, 1.0f, S, (int)t1, V, (int)C3, 0.0f,
                O, (int)D);
    for (uint64_t r = 0; r < tb; r++) elem_store_run(j->out, j->dt, (b * T + t0 + r) * j->C + h * D, O + r * D, D);
}

static Status attn_check(uint32_t b, uint32_t t, uint32_t h, uint32_t hd, Dtype dt, const char *op, Err *e)
{
    if (!b || !t || !h || !hd) return err_set(e, ST_USAGE, "%s: empty shape", op);
    return need_dtype(dt, op, "activation", e);
}

/* The shapes of an attention call, and qkv as FP32 in scratch slot 0. */
static Status att_begin(Backend *bk, AttJob *j, uint32_t B, uint32_t T, uint32_t H, uint32_t D, Dtype dt,
                        const void *qkv, Err *e)
{
    *j = (AttJob){.B = B, .T = T, .H = H, .D = D, .C = (uint64_t)H * D, .dt = dt};
    j->C3 = 3 * j->C;
    j->nblk = (j->T + ATT_BLOCK - 1) / ATT_BLOCK;
    j->scale = 1.0f / sqrtf((float)D);
    if (j->T > INT32_MAX || j->C3 > INT32_MAX) return err_set(e, ST_USAGE, "attention: shape too large for the BLAS");
    float *q = cpu_scratch(bk, 0, j->B * j->T * j->C3, e);
    if (!q) return e ? e->st : ST_NOMEM;
    LoadJob l = {qkv, dt, q};
    par_chunks(j->B * j->T * j->C3, CPU_CHUNK, load_chunk, &l);
    j->q = q;
    return ST_OK;
}

Status cpu_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e)
{
    Status st = attn_check(d->batch, d->seq, d->heads, d->head_dim, d->dtype, "attention_fwd", e);
    if (st) return st;
    if (!d->qkv || !d->probs || !d->out) return err_set(e, ST_USAGE, "attention_fwd: missing pointer");
    AttJob j;
    if ((st = att_begin(bk, &j, d->batch, d->seq, d->heads, d->head_dim, d->dtype, d->qkv, e))) return st;
    j.probs = d->probs;
    j.out = d->out;
    j.buf = cpu_scratch_workers(bk, 3, ATT_BLOCK * (j.T + j.D), &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_tasks(j.B * j.H * j.nblk, att_fwd_task, &j);
    return ST_OK;
}

/* Backward, query block: dP = dO·Vᵀ into the scratch rows, then d(scores)·scale
 * = P·(dP − Σ P·dP)·scale over keys ≤ query (0 above), then dQ = that · K. */
static void att_bwd_queries(void *ctx, uint64_t task, int worker)
{
    const AttJob *j = ctx;
    uint64_t T = j->T, D = j->D, C = j->C, C3 = j->C3, b = task / (j->H * j->nblk), h = task / j->nblk % j->H;
    uint64_t t0 = task % j->nblk * ATT_BLOCK, t1 = T - t0 < ATT_BLOCK ? T : t0 + ATT_BLOCK, tb = t1 - t0;
    const float *Q = j->q + b * T * C3 + h * D, *K = Q + C, *V = Q + 2 * C, *dO = j->dout + b * T * C + h * D;
    float *dp = j->dp + (b * j->H + h) * T * T, *p = j->buf + (uint64_t)worker * j->stride;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)tb, (int)t1, (int)D, 1.0f, dO + t0 * C, (int)C, V,
                (int)C3, 0.0f, dp + t0 * T, (int)T);
    for (uint64_t t = t0; t < t1; t++) {
        float *row = dp + t * T, dsum = 0.0f;
        elem_load_run(j->probs, j->dt, ((b * j->H + h) * T + t) * T, p, t + 1);
        for (uint64_t t2 = 0; t2 <= t; t2++) dsum += p[t2] * row[t2];
        for (uint64_t t2 = 0; t2 <= t; t2++) row[t2] = p[t2] * (row[t2] - dsum) * j->scale;
        memset(row + t + 1, 0, (size_t)(t1 - t - 1) * sizeof(float));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)tb, (int)D, (int)t1, 1.0f, dp + t0 * T, (int)T, K,
                (int)C3, 0.0f, j->dq + (b * T + t0) * C3 + h * D, (int)C3);
}

/* Backward, key block [s0, s1): dV = Pᵀ·dO and dK = (d(scores)·scale)ᵀ·Q over
 * the queries t ≥ s0 (the rows below have zeros in these columns). */
static void att_bwd_keys(void *ctx, uint64_t task, int worker)
{
    const AttJob *j = ctx;
    uint64_t T = j->T, D = j->D, C = j->C, C3 = j->C3, b = task / (j->H * j->nblk), h = task / j->nblk % j->H;
    uint64_t s0 = task % j->nblk * ATT_BLOCK, s1 = T - s0 < ATT_BLOCK ? T : s0 + ATT_BLOCK, sb = s1 - s0, nt = T - s0;
    const float *Q = j->q + b * T * C3 + h * D, *dO = j->dout + b * T * C + h * D;
    const float *dp = j->dp + (b * j->H + h) * T * T;
    float *p = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t t = s0; t < T; t++)
        elem_load_run(j->probs, j->dt, ((b * j->H + h) * T + t) * T + s0, p + (t - s0) * sb, sb);
    float *dq = j->dq + (b * T + s0) * C3 + h * D;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)sb, (int)D, (int)nt, 1.0f, p, (int)sb, dO + s0 * C,
                (int)C, 0.0f, dq + 2 * C, (int)C3);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)sb, (int)D, (int)nt, 1.0f, dp + s0 * T + s0, (int)T,
                Q + s0 * C3, (int)C3, 0.0f, dq + C, (int)C3);
}

Status cpu_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e)
{
    Status st = attn_check(d->batch, d->seq, d->heads, d->head_dim, d->dtype, "attention_bwd", e);
    if (st) return st;
    if (!d->qkv || !d->probs || !d->dout || !d->dqkv || !d->scratch)
        return err_set(e, ST_USAGE, "attention_bwd: missing pointer");
    AttJob j;
    if ((st = att_begin(bk, &j, d->batch, d->seq, d->heads, d->head_dim, d->dtype, d->qkv, e))) return st;
    uint64_t nq = j.B * j.T * j.C3, nd = j.B * j.T * j.C;
    float *dq = cpu_scratch(bk, 1, nq, e), *dout = dq ? cpu_scratch(bk, 2, nd, e) : NULL;
    j.buf = dout ? cpu_scratch_workers(bk, 3, j.T * ATT_BLOCK, &j.stride, e) : NULL;
    if (!j.buf) return e ? e->st : ST_NOMEM;
    LoadJob l = {d->dout, d->dtype, dout};
    par_chunks(nd, CPU_CHUNK, load_chunk, &l);
    j.dout = dout, j.dq = dq, j.dp = d->scratch, j.probs = (void *)d->probs;
    par_tasks(j.B * j.H * j.nblk, att_bwd_queries, &j);
    par_tasks(j.B * j.H * j.nblk, att_bwd_keys, &j);
    LoadJob s = {d->dqkv, d->dtype, dq};
    par_chunks(nq, CPU_CHUNK, store_chunk, &s);
    return ST_OK;
}

/* ---- element-wise: GELU, add -------------------------------------------------------- */

typedef struct {
    const void *a, *b;
    void *out;
    Dtype dt;
    int op; /* 0 gelu, 1 gelu', 2 add */
    float *buf;
    uint64_t stride;
} EwJob;

static void ew_chunk(void *ctx, uint64_t b, uint64_t e, int worker)
{
    const EwJob *j = ctx;
    uint64_t n = e - b;
    float *x = j->buf + (uint64_t)worker * j->stride, *y = x + CPU_CHUNK;
    elem_load_run(j->a, j->dt, b, x, n);
    if (j->b) elem_load_run(j->b, j->dt, b, y, n);
    switch (j->op) {
    case 0:
        for (uint64_t i = 0; i < n; i++) x[i] = km_gelu(x[i]);
        break;
    case 1:
        for (uint64_t i = 0; i < n; i++) x[i] = km_gelu_grad(x[i]) * y[i];
        break;
    default:
        for (uint64_t i = 0; i < n; i++) x[i] = x[i] + y[i];
        break;
    }
    elem_store_run(j->out, j->dt, b, x, n);
}

static Status ew(Backend *bk, EwJob *j, uint64_t n, Err *e)
{
    if (!n) return ST_OK;
    j->buf = cpu_scratch_workers(bk, 0, 2 * CPU_CHUNK, &j->stride, e);
    if (!j->buf) return e ? e->st : ST_NOMEM;
    par_chunks(n, CPU_CHUNK, ew_chunk, j);
    return ST_OK;
}

Status cpu_gelu_fwd(Backend *bk, const void *in, void *out, Dtype dtype, uint64_t n, Err *e)
{
    Status st = need_dtype(dtype, "gelu_fwd", "activation", e);
    if (st) return st;
    EwJob j = {.a = in, .out = out, .dt = dtype, .op = 0};
    return ew(bk, &j, n, e);
}

Status cpu_gelu_bwd(Backend *bk, const void *in, const void *dout, void *din, Dtype dtype, uint64_t n, Err *e)
{
    Status st = need_dtype(dtype, "gelu_bwd", "activation", e);
    if (st) return st;
    EwJob j = {.a = in, .b = dout, .out = din, .dt = dtype, .op = 1};
    return ew(bk, &j, n, e);
}

Status cpu_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e)
{
    Status st = need_dtype(dtype, "add", "activation", e);
    if (st) return st;
    EwJob j = {.a = a, .b = b, .out = out, .dt = dtype, .op = 2};
    return ew(bk, &j, n, e);
}

/* ---- column sums: bias gradient ------------------------------------------------------ */

typedef struct {
    const void *dout;
    Dtype dt;
    uint64_t m, n;
    float *dbias;
    float *buf;
    uint64_t stride;
} ColJob;

static void bias_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    const ColJob *j = ctx;
    uint64_t w = c1 - c0;
    float *x = j->buf + (uint64_t)worker * j->stride, *s = x + COLS_PER_TASK;
    for (uint64_t i = 0; i < w; i++) s[i] = 0.0f;
    for (uint64_t r = 0; r < j->m; r++) {
        elem_load_run(j->dout, j->dt, r * j->n + c0, x, w);
        for (uint64_t i = 0; i < w; i++) s[i] += x[i];
    }
    for (uint64_t i = 0; i < w; i++) j->dbias[c0 + i] += s[i];
}

Status cpu_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e)
{
    Status st = need_dtype(dtype, "bias_grad", "gradient", e);
    if (st) return st;
    ColJob j = {.dout = dout, .dt = dtype, .m = m, .n = n, .dbias = dbias};
    j.buf = cpu_scratch_workers(bk, 0, 2 * COLS_PER_TASK, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(n, COLS_PER_TASK, bias_cols, &j);
    return ST_OK;
}

/* ---- embeddings ----------------------------------------------------------------------- */

static Status check_tokens(const int32_t *tokens, uint64_t n, uint64_t vocab, const char *op, Err *e)
{
    for (uint64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint64_t)tokens[i] >= vocab)
            return err_set(e, ST_USAGE, "%s: token %lld at position %llu is outside the vocabulary [0, %llu)", op,
                           (long long)tokens[i], (unsigned long long)i, (unsigned long long)vocab);
    return ST_OK;
}

typedef struct {
    const int32_t *tokens;
    uint64_t seq, c;
    const void *wte, *wpe, *dout;
    Dtype wdt, act;
    void *out;
    float *dwte, *dwpe;
    uint64_t n; /* tokens */
    float *buf;
    uint64_t stride;
} EmbJob;

static void embed_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const EmbJob *j = ctx;
    uint64_t c = j->c;
    float *x = j->buf + (uint64_t)worker * j->stride, *y = x + c;
    for (uint64_t r = r0; r < r1; r++) {
        elem_load_run(j->wte, j->wdt, (uint64_t)j->tokens[r] * c, x, c);
        elem_load_run(j->wpe, j->wdt, r % j->seq * c, y, c);
        for (uint64_t i = 0; i < c; i++) x[i] = x[i] + y[i];
        elem_store_run(j->out, j->act, r * c, x, c);
    }
}

Status cpu_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                     Dtype act_dtype, Err *e)
{
    Status st = need_dtype(weight_dtype, "embed_fwd", "weight", e);
    if (!st) st = need_dtype(act_dtype, "embed_fwd", "activation", e);
    if (!st) st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_fwd", e);
    if (st) return st;
    EmbJob j = {.tokens = tokens,
                .seq = seq,
                .c = channels,
                .wte = wte,
                .wpe = wpe,
                .wdt = weight_dtype,
                .act = act_dtype,
                .out = out};
    j.buf = cpu_scratch_workers(bk, 0, 2 * channels, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks((uint64_t)batch * seq, ROWS_PER_TASK, embed_rows, &j);
    return ST_OK;
}

/* Channels [c0, c1) of both gradients, the tokens in order. */
static void embed_bwd_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    const EmbJob *j = ctx;
    uint64_t c = j->c, w = c1 - c0;
    float *g = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t r = 0; r < j->n; r++) {
        float *te = j->dwte + (uint64_t)j->tokens[r] * c + c0, *pe = j->dwpe + r % j->seq * c + c0;
        elem_load_run(j->dout, j->act, r * c + c0, g, w);
        for (uint64_t i = 0; i < w; i++) {
            te[i] += g[i];
            pe[i] += g[i];
        }
    }
}

Status cpu_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e)
{
    Status st = need_dtype(act_dtype, "embed_bwd", "activation", e);
    if (!st) st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_bwd", e);
    if (st) return st;
    EmbJob j = {.tokens = tokens,
                .seq = seq,
                .c = channels,
                .dout = dout,
                .act = act_dtype,
                .dwte = dwte,
                .dwpe = dwpe,
                .n = (uint64_t)batch * seq};
    j.buf = cpu_scratch_workers(bk, 0, COLS_PER_TASK, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(channels, COLS_PER_TASK, embed_bwd_cols, &j);
    return ST_OK;
}

/* ---- softmax cross-entropy ----------------------------------------------------------------- */

typedef struct {
    void *logits;
    Dtype dt;
    uint64_t vocab, vp;
    const int32_t *targets;
    float dloss, *losses;
    float *buf;
    uint64_t stride;
} XentJob;

static void xent_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const XentJob *j = ctx;
    uint64_t V = j->vocab;
    float *row = j->buf + (uint64_t)worker * j->stride;
    size_t esz = dtype_bytes(j->dt);
    for (uint64_t r = r0; r < r1; r++) {
        uint64_t base = r * j->vp, tgt = (uint64_t)j->targets[r];
        elem_load_run(j->logits, j->dt, base, row, V);
        float mx = -INFINITY;
        for (uint64_t i = 0; i < V; i++) mx = row[i] > mx ? row[i] : mx;
        float xt = row[tgt], sum = 0.0f;
        for (uint64_t i = 0; i < V; i++) sum += (row[i] = expf(row[i] - mx));
        j->losses[r] = logf(sum) + mx - xt;
        float pt = row[tgt] / sum;
        for (uint64_t i = 0; i < V; i++) row[i] = row[i] / sum * j->dloss; /* (p − 0)·dloss */
        row[tgt] = (pt - 1.0f) * j->dloss;
        elem_store_run(j->logits, j->dt, base, row, V);
        memset((char *)j->logits + (base + V) * esz, 0, (size_t)(j->vp - V) * esz); /* padding: 0 */
    }
}

Status cpu_xent_fwd_bwd(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,
                        const int32_t *targets, float dloss, float *losses, Err *e)
{
    Status st = need_dtype(dtype, "xent", "logits", e);
    if (!st && (vocab == 0 || vocab > vocab_padded))
        st = err_set(e, ST_USAGE, "xent: vocab %llu must be in [1, %llu]", (unsigned long long)vocab,
                     (unsigned long long)vocab_padded);
    if (!st) st = check_tokens(targets, rows, vocab, "xent", e);
    if (st) return st;
    XentJob j = {.logits = logits,
                 .dt = dtype,
                 .vocab = vocab,
                 .vp = vocab_padded,
                 .targets = targets,
                 .dloss = dloss,
                 .losses = losses};
    j.buf = cpu_scratch_workers(bk, 0, vocab, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(rows, 1, xent_rows, &j);
    return ST_OK;
}
