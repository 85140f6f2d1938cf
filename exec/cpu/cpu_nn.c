/* exec/cpu/cpu_nn.c — the CPU reference of the memory-bound layers: layer norm
 * and RMSNorm, the MLP activations (GELU, SwiGLU), residual add, bias
 * gradient, embeddings and softmax cross-entropy. Inputs are read as float,
 * arithmetic is FP32 (per element through exec/kernel_math.h, as the GPU
 * kernels do), and every stored output is rounded once to its dtype.
 * Reductions run in a fixed order (deterministic). Descriptors arrive checked
 * (exec/backend_check.c). */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "exec/kernel_math.h"

static void layernorm_fwd(const NormFwdDesc *d)
{
    uint64_t c = d->cols;
    for (uint64_t r = 0; r < d->rows; r++) {
        float sum = 0.0f;
        for (uint64_t i = 0; i < c; i++) sum += elem_load(d->in, d->act_dtype, r * c + i);
        float mean = sum / (float)c, var = 0.0f;
        for (uint64_t i = 0; i < c; i++) {
            float x = elem_load(d->in, d->act_dtype, r * c + i) - mean;
            var += x * x;
        }
        float rstd = 1.0f / sqrtf(var / (float)c + d->eps);
        for (uint64_t i = 0; i < c; i++) {
            float x = (elem_load(d->in, d->act_dtype, r * c + i) - mean) * rstd;
            float y = x * elem_load(d->weight, d->weight_dtype, i) + elem_load(d->bias, d->weight_dtype, i);
            elem_store(d->out, d->act_dtype, r * c + i, y);
        }
        d->mean[r] = mean;
        d->rstd[r] = rstd;
    }
}

static void rmsnorm_fwd(const NormFwdDesc *d)
{
    uint64_t c = d->cols;
    for (uint64_t r = 0; r < d->rows; r++) {
        float ss = 0.0f;
        for (uint64_t i = 0; i < c; i++) {
            float x = elem_load(d->in, d->act_dtype, r * c + i);
            ss += x * x;
        }
        float rstd = 1.0f / sqrtf(ss / (float)c + d->eps);
        for (uint64_t i = 0; i < c; i++) {
            float xh = km_ln_norm(elem_load(d->in, d->act_dtype, r * c + i), 0.0f, rstd);
            elem_store(d->out, d->act_dtype, r * c + i, km_rms_out(xh, elem_load(d->weight, d->weight_dtype, i)));
        }
        d->rstd[r] = rstd;
    }
}

Status cpu_norm_fwd(Backend *bk, const NormFwdDesc *d, Err *e)
{
    (void)bk, (void)e;
    if (d->norm == NORM_LAYERNORM)
        layernorm_fwd(d);
    else
        rmsnorm_fwd(d);
    return ST_OK;
}

/* Per row: x̂ = (x − mean)·rstd (mean 0 for RMSNorm), dx̂ = w·dy; the row means
 * of dx̂ and dx̂·x̂ first, then din += the input gradient, dweight += x̂·dy and
 * (LayerNorm) dbias += dy. */
Status cpu_norm_bwd(Backend *bk, const NormBwdDesc *d, Err *e)
{
    (void)bk, (void)e;
    const int ln = d->norm == NORM_LAYERNORM;
    uint64_t c = d->cols;
    for (uint64_t r = 0; r < d->rows; r++) {
        float mean = ln ? d->mean[r] : 0.0f, rstd = d->rstd[r];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (uint64_t i = 0; i < c; i++) {
            float norm = (elem_load(d->in, d->act_dtype, r * c + i) - mean) * rstd;
            float dnorm = elem_load(d->weight, d->weight_dtype, i) * elem_load(d->dout, d->act_dtype, r * c + i);
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= (float)c;
        dnorm_norm_mean /= (float)c;
        for (uint64_t i = 0; i < c; i++) {
            float norm = (elem_load(d->in, d->act_dtype, r * c + i) - mean) * rstd;
            float dout = elem_load(d->dout, d->act_dtype, r * c + i);
            float dnorm = elem_load(d->weight, d->weight_dtype, i) * dout;
            if (ln) d->dbias[i] += dout;
            d->dweight[i] += norm * dout;
            float dval = ln ? km_ln_dinput(dnorm, norm, dnorm_mean, dnorm_norm_mean, rstd)
                            : km_rms_dx(dnorm, norm, dnorm_norm_mean, rstd);
            elem_store(d->din, d->act_dtype, r * c + i, elem_load(d->din, d->act_dtype, r * c + i) + dval);
        }
    }
    return ST_OK;
}

/* The activation forward (out) or, with bwd, its input gradient (out = din,
 * from dout): per element through kernel_math.h. GELU's backward may run in
 * place (out = dout): each element is read before it is written. */
static void act(MlpType mlp, uint64_t rows, uint64_t F, Dtype dt, const void *in, const void *dout, void *out, int bwd)
{
    if (mlp == MLP_GELU) {
        for (uint64_t i = 0; i < rows * F; i++) {
            float x = elem_load(in, dt, i);
            elem_store(out, dt, i, bwd ? km_gelu_grad(x) * elem_load(dout, dt, i) : km_gelu(x));
        }
        return;
    }
    for (uint64_t r = 0; r < rows; r++) /* in (rows, 2F) = [gate | up] */
        for (uint64_t j = 0; j < F; j++) {
            float g = elem_load(in, dt, r * 2 * F + j), u = elem_load(in, dt, r * 2 * F + F + j), dg, du;
            if (!bwd) {
                elem_store(out, dt, r * F + j, km_swiglu(g, u));
                continue;
            }
            km_swiglu_bwd(g, u, elem_load(dout, dt, r * F + j), &dg, &du);
            elem_store(out, dt, r * 2 * F + j, dg);
            elem_store(out, dt, r * 2 * F + F + j, du);
        }
}

Status cpu_act_fwd(Backend *bk, const ActFwdDesc *d, Err *e)
{
    (void)bk, (void)e;
    act(d->mlp, d->rows, d->cols, d->dtype, d->in, NULL, d->out, 0);
    return ST_OK;
}

Status cpu_act_bwd(Backend *bk, const ActBwdDesc *d, Err *e)
{
    (void)bk, (void)e;
    act(d->mlp, d->rows, d->cols, d->dtype, d->in, d->dout, d->din, 1);
    return ST_OK;
}

Status cpu_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e)
{
    (void)bk, (void)e;
    for (uint64_t i = 0; i < n; i++) elem_store(out, dtype, i, elem_load(a, dtype, i) + elem_load(b, dtype, i));
    return ST_OK;
}

Status cpu_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e)
{
    (void)bk, (void)e;
    for (uint64_t j = 0; j < n; j++) {
        float s = 0.0f;
        for (uint64_t i = 0; i < m; i++) s += elem_load(dout, dtype, i * n + j);
        dbias[j] += s;
    }
    return ST_OK;
}

static Status check_tokens(const int32_t *tokens, uint64_t n, uint64_t vocab, const char *op, Err *e)
{
    for (uint64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint64_t)tokens[i] >= vocab)
            return err_set(e, ST_USAGE, "%s: token %lld at position %llu is outside the vocabulary [0, %llu)", op,
                           (long long)tokens[i], (unsigned long long)i, (unsigned long long)vocab);
    return ST_OK;
}

Status cpu_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                     Dtype act_dtype, Err *e)
{
    (void)bk;
    const uint64_t rows = (uint64_t)batch * seq;
    Status st = check_tokens(tokens, rows, vocab, "embed_fwd", e);
    for (uint64_t r = 0; !st && r < rows; r++) { /* row r: token tokens[r] at position r % seq */
        const uint64_t row = (uint64_t)tokens[r] * channels, pos = (r % seq) * channels;
        for (uint64_t i = 0; i < channels; i++) {
            float x = elem_load(wte, weight_dtype, row + i);
            if (wpe) x = x + elem_load(wpe, weight_dtype, pos + i);
            elem_store(out, act_dtype, r * channels + i, x);
        }
    }
    return st;
}

Status cpu_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e)
{
    (void)bk;
    Status st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_bwd", e);
    if (st) return st;
    for (uint64_t b = 0; b < batch; b++)
        for (uint64_t t = 0; t < seq; t++) {
            uint64_t tok = (uint64_t)tokens[b * seq + t], o = (b * seq + t) * channels;
            for (uint64_t i = 0; i < channels; i++) {
                float g = elem_load(dout, act_dtype, o + i);
                dwte[tok * channels + i] += g;
                if (dwpe) dwpe[t * channels + i] += g;
            }
        }
    return ST_OK;
}

Status cpu_xent_fwd_bwd(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab, uint64_t vocab_padded,
                        const int32_t *targets, float dloss, float *losses, Err *e)
{
    Status st = check_tokens(targets, rows, vocab, "xent", e);
    if (st) return st;
    float *row = cpu_scratch(bk, 0, vocab, e);
    if (!row) return e ? e->st : ST_NOMEM;
    for (uint64_t r = 0; r < rows; r++) {
        uint64_t base = r * vocab_padded, tgt = (uint64_t)targets[r];
        float mx = -INFINITY;
        for (uint64_t i = 0; i < vocab; i++) {
            row[i] = elem_load(logits, dtype, base + i);
            mx = row[i] > mx ? row[i] : mx;
        }
        float xt = row[tgt], sum = 0.0f;
        for (uint64_t i = 0; i < vocab; i++) sum += (row[i] = expf(row[i] - mx));
        losses[r] = logf(sum) + mx - xt;
        for (uint64_t i = 0; i < vocab; i++)
            elem_store(logits, dtype, base + i, (row[i] / sum - (i == tgt ? 1.0f : 0.0f)) * dloss);
        for (uint64_t i = vocab; i < vocab_padded; i++) elem_store(logits, dtype, base + i, 0.0f);
    }
    return ST_OK;
}
