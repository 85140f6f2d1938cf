/* exec/cpu/cpu_nn.c — the CPU reference of the memory-bound layers: layer norm
 * and RMSNorm, the MLP activations (GELU, SwiGLU), residual add, bias
 * gradient, embeddings and softmax cross-entropy. Inputs are read as float,
 * arithmetic is FP32 (per element through exec/backend/kernel_math.h, as the GPU
 * kernels do), and every stored output is rounded once to its dtype.
 * Reductions run in a fixed order (deterministic). Descriptors arrive checked
 * (exec/backend/backend_check.c). Attention and the rotary embedding are cpu_attn.c's.
 *
 * Parallel on the thread pool (exec/backend/par.h) in fixed pieces: rows for the row
 * operations, column chunks for the column sums (the norms' weight and bias
 * gradients, the bias gradient, the embedding gradients), so every sum keeps
 * one order whatever the thread count. Rows are loaded to and stored from
 * FP32 runs so the loops between vectorize; every element's arithmetic is the
 * one-element code's. */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/backend/elem.h"
#include "exec/backend/kernel_math.h"
#include "exec/backend/par.h"

enum {
    ROWS_PER_TASK = 16, /* rows of a row operation per task */
    COLS_PER_TASK = 64, /* columns of a column sum per task */
};

/* ---- layer norm and RMSNorm ------------------------------------------------------- */

typedef struct {
    const void *in, *dout;
    void *out;
    Dtype act;
    uint64_t rows, c;
    float eps;
    const float *w, *b; /* weight, bias (LayerNorm) as FP32 (c each) */
    float *mean, *rstd; /* mean: LayerNorm only (NULL: RMSNorm, x̂ = x·rstd) */
    float *dw, *db;     /* backward: FP32 accumulators (db: LayerNorm only) */
    float *buf;         /* per worker */
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

static void rms_fwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const LnJob *j = ctx;
    uint64_t c = j->c;
    float *x = j->buf + (uint64_t)worker * j->stride, *y = x + c;
    for (uint64_t r = r0; r < r1; r++) {
        elem_load_run(j->in, j->act, r * c, x, c);
        float ss = 0.0f;
        for (uint64_t i = 0; i < c; i++) ss += x[i] * x[i];
        float rstd = 1.0f / sqrtf(ss / (float)c + j->eps);
        for (uint64_t i = 0; i < c; i++) y[i] = km_rms_out(km_ln_norm(x[i], 0.0f, rstd), j->w[i]);
        elem_store_run(j->out, j->act, r * c, y, c);
        j->rstd[r] = rstd;
    }
}

/* weight and (when set) bias (c each, dtype dt) as FP32 into w[0..2c). */
static float *ln_params(Backend *bk, const void *weight, const void *bias, Dtype dt, uint64_t c, Err *e)
{
    float *w = cpu_scratch(bk, 1, 2 * c, e);
    if (!w) return NULL;
    elem_load_run(weight, dt, 0, w, c);
    if (bias) elem_load_run(bias, dt, 0, w + c, c);
    return w;
}

Status cpu_norm_fwd(Backend *bk, const NormFwdDesc *d, Err *e)
{
    uint64_t c = d->cols;
    LnJob j = {
        .in = d->in, .out = d->out, .act = d->act_dtype, .c = c, .eps = d->eps, .mean = d->mean, .rstd = d->rstd};
    float *w = ln_params(bk, d->weight, d->bias, d->weight_dtype, c, e);
    j.buf = w ? cpu_scratch_workers(bk, 0, 2 * c, &j.stride, e) : NULL;
    if (!j.buf) return e ? e->st : ST_NOMEM;
    j.w = w, j.b = w + c;
    par_chunks(d->rows, ROWS_PER_TASK, d->norm == NORM_LAYERNORM ? ln_fwd_rows : rms_fwd_rows, &j);
    return ST_OK;
}

/* Input gradient, row by row: x̂ = (x − mean)·rstd (mean 0 for RMSNorm), dx̂ =
 * w·dy; din += (dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂))·rstd, or for RMSNorm
 * (dx̂ − x̂·mean(dx̂·x̂))·rstd. */
static void ln_bwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const LnJob *j = ctx;
    uint64_t c = j->c;
    float *x = j->buf + (uint64_t)worker * j->stride, *g = x + c, *h = g + c;
    void *din = (void *)j->out;
    for (uint64_t r = r0; r < r1; r++) {
        float mean = j->mean ? j->mean[r] : 0.0f, rstd = j->rstd[r];
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
        if (j->mean)
            for (uint64_t i = 0; i < c; i++) {
                float norm = (x[i] - mean) * rstd;
                h[i] = h[i] + km_ln_dinput(j->w[i] * g[i], norm, dnorm_mean, dnorm_norm_mean, rstd);
            }
        else
            for (uint64_t i = 0; i < c; i++) {
                float norm = (x[i] - mean) * rstd;
                h[i] = h[i] + km_rms_dx(j->w[i] * g[i], norm, dnorm_norm_mean, rstd);
            }
        elem_store_run(din, j->act, r * c, h, c);
    }
}

/* Weight and (LayerNorm) bias gradients of columns [c0, c1): sums over the rows in order. */
static void ln_bwd_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    const LnJob *j = ctx;
    uint64_t c = j->c, n = c1 - c0, rows = j->rows;
    float *x = j->buf + (uint64_t)worker * j->stride, *g = x + COLS_PER_TASK;
    float *dw = j->dw + c0, *db = j->db ? j->db + c0 : NULL;
    for (uint64_t r = 0; r < rows; r++) {
        float mean = j->mean ? j->mean[r] : 0.0f, rstd = j->rstd[r];
        elem_load_run(j->in, j->act, r * c + c0, x, n);
        elem_load_run(j->dout, j->act, r * c + c0, g, n);
        if (db)
            for (uint64_t i = 0; i < n; i++) db[i] += g[i];
        for (uint64_t i = 0; i < n; i++) dw[i] += (x[i] - mean) * rstd * g[i];
    }
}

Status cpu_norm_bwd(Backend *bk, const NormBwdDesc *d, Err *e)
{
    uint64_t c = d->cols;
    float *w = cpu_scratch(bk, 1, c, e);
    if (!w) return e ? e->st : ST_NOMEM;
    elem_load_run(d->weight, d->weight_dtype, 0, w, c);
    const int ln = d->norm == NORM_LAYERNORM;
    LnJob j = {.in = d->in,
               .dout = d->dout,
               .out = d->din,
               .act = d->act_dtype,
               .rows = d->rows,
               .c = c,
               .w = w,
               .mean = ln ? (float *)d->mean : NULL,
               .rstd = (float *)d->rstd,
               .dw = d->dweight,
               .db = ln ? d->dbias : NULL};
    /* per worker: three rows (ln_bwd_rows) or two column runs (ln_bwd_cols) */
    j.buf = cpu_scratch_workers(bk, 0, 3 * c > 2 * COLS_PER_TASK ? 3 * c : 2 * COLS_PER_TASK, &j.stride, e);
    if (!j.buf) return e ? e->st : ST_NOMEM;
    par_chunks(d->rows, ROWS_PER_TASK, ln_bwd_rows, &j);
    par_chunks(c, COLS_PER_TASK, ln_bwd_cols, &j);
    return ST_OK;
}

/* ---- element-wise: GELU, SwiGLU, add -------------------------------------------------------- */

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

/* SwiGLU, rows [r0, r1): in (rows, 2F) = [gate | up] per row. Forward: out (rows, F) =
 * silu(gate)·up; backward: din (rows, 2F) = [dgate | dup] from dout (rows, F). */
typedef struct {
    const void *in, *dout;
    void *out;
    Dtype dt;
    uint64_t F;
    float *buf;
    uint64_t stride;
} GluJob;

static void swiglu_fwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const GluJob *j = ctx;
    uint64_t F = j->F;
    float *x = j->buf + (uint64_t)worker * j->stride, *y = x + 2 * F; /* x: gate | up */
    for (uint64_t r = r0; r < r1; r++) {
        elem_load_run(j->in, j->dt, r * 2 * F, x, 2 * F);
        for (uint64_t i = 0; i < F; i++) y[i] = km_swiglu(x[i], x[F + i]);
        elem_store_run(j->out, j->dt, r * F, y, F);
    }
}

static void swiglu_bwd_rows(void *ctx, uint64_t r0, uint64_t r1, int worker)
{
    const GluJob *j = ctx;
    uint64_t F = j->F;
    float *x = j->buf + (uint64_t)worker * j->stride, *dy = x + 2 * F, *dx = dy + F;
    for (uint64_t r = r0; r < r1; r++) {
        elem_load_run(j->in, j->dt, r * 2 * F, x, 2 * F);
        elem_load_run(j->dout, j->dt, r * F, dy, F);
        for (uint64_t i = 0; i < F; i++) km_swiglu_bwd(x[i], x[F + i], dy[i], &dx[i], &dx[F + i]);
        elem_store_run(j->out, j->dt, r * 2 * F, dx, 2 * F);
    }
}

static Status swiglu(Backend *bk, GluJob *j, uint64_t rows, int bwd, Err *e)
{
    if (!rows) return ST_OK;
    j->buf = cpu_scratch_workers(bk, 0, 5 * j->F, &j->stride, e);
    if (!j->buf) return e ? e->st : ST_NOMEM;
    par_chunks(rows, ROWS_PER_TASK, bwd ? swiglu_bwd_rows : swiglu_fwd_rows, j);
    return ST_OK;
}

Status cpu_act_fwd(Backend *bk, const ActFwdDesc *d, Err *e)
{
    if (d->mlp == MLP_GELU) {
        EwJob j = {.a = d->in, .out = d->out, .dt = d->dtype, .op = 0};
        return ew(bk, &j, d->rows * d->cols, e);
    }
    GluJob j = {.in = d->in, .out = d->out, .dt = d->dtype, .F = d->cols};
    return swiglu(bk, &j, d->rows, 0, e);
}

/* GELU's backward may run in place (din = dout): each chunk is loaded before it is stored. */
Status cpu_act_bwd(Backend *bk, const ActBwdDesc *d, Err *e)
{
    if (d->mlp == MLP_GELU) {
        EwJob j = {.a = d->in, .b = d->dout, .out = d->din, .dt = d->dtype, .op = 1};
        return ew(bk, &j, d->rows * d->cols, e);
    }
    GluJob j = {.in = d->in, .dout = d->dout, .out = d->din, .dt = d->dtype, .F = d->cols};
    return swiglu(bk, &j, d->rows, 1, e);
}

Status cpu_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e)
{
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
        if (j->wpe) { /* learned positions */
            elem_load_run(j->wpe, j->wdt, r % j->seq * c, y, c);
            for (uint64_t i = 0; i < c; i++) x[i] = x[i] + y[i];
        }
        elem_store_run(j->out, j->act, r * c, x, c);
    }
}

Status cpu_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                     Dtype act_dtype, Err *e)
{
    Status st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_fwd", e);
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

/* Channels [c0, c1) of the gradients (dwpe: learned positions only), the tokens in order. */
static void embed_bwd_cols(void *ctx, uint64_t c0, uint64_t c1, int worker)
{
    const EmbJob *j = ctx;
    uint64_t c = j->c, w = c1 - c0;
    float *g = j->buf + (uint64_t)worker * j->stride;
    for (uint64_t r = 0; r < j->n; r++) {
        float *te = j->dwte + (uint64_t)j->tokens[r] * c + c0;
        elem_load_run(j->dout, j->act, r * c + c0, g, w);
        for (uint64_t i = 0; i < w; i++) te[i] += g[i];
        if (j->dwpe) { /* learned positions */
            float *pe = j->dwpe + r % j->seq * c + c0;
            for (uint64_t i = 0; i < w; i++) pe[i] += g[i];
        }
    }
}

Status cpu_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e)
{
    Status st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_bwd", e);
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
    Status st = check_tokens(targets, rows, vocab, "xent", e);
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
