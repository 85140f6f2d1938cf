/* exec/cpu/cpu_nn.c — the CPU reference of the memory-bound layers: layer norm,
 * causal attention (materialized scores), GELU, residual add, bias gradient,
 * embeddings and softmax cross-entropy. Inputs are read as float, arithmetic
 * is FP32, and every stored output is rounded once to its dtype, as the GPU
 * kernels do. Reductions run in a fixed order (deterministic). */
#include <math.h>
#include <string.h>

#include "exec/cpu/cpu_ops.h"
#include "exec/elem.h"
#include "exec/kernel_math.h"

static Status need_dtype(Dtype dt, const char *op, const char *what, Err *e)
{
    if (elem_supported(dt) && !dtype_is_fp8(dt)) return ST_OK;
    return err_set(e, ST_USAGE, "%s: %s dtype %s is not fp32, fp16 or bf16", op, what, dtype_name(dt));
}

Status cpu_layernorm_fwd(Backend *bk, const LnFwdDesc *d, Err *e)
{
    (void)bk;
    Status st = need_dtype(d->act_dtype, "layernorm_fwd", "activation", e);
    if (!st) st = need_dtype(d->weight_dtype, "layernorm_fwd", "weight", e);
    if (st) return st;
    if (!d->in || !d->out || !d->weight || !d->bias || !d->mean || !d->rstd || !d->cols)
        return err_set(e, ST_USAGE, "layernorm_fwd: missing pointer or zero width");
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
    return ST_OK;
}

Status cpu_layernorm_bwd(Backend *bk, const LnBwdDesc *d, Err *e)
{
    (void)bk;
    Status st = need_dtype(d->act_dtype, "layernorm_bwd", "activation", e);
    if (!st) st = need_dtype(d->weight_dtype, "layernorm_bwd", "weight", e);
    if (st) return st;
    if (!d->in || !d->weight || !d->mean || !d->rstd || !d->dout || !d->din || !d->dweight || !d->dbias || !d->cols)
        return err_set(e, ST_USAGE, "layernorm_bwd: missing pointer or zero width");
    uint64_t c = d->cols;
    for (uint64_t r = 0; r < d->rows; r++) {
        float mean = d->mean[r], rstd = d->rstd[r];
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
            d->dbias[i] += dout;
            d->dweight[i] += norm * dout;
            float dval = km_ln_dinput(dnorm, norm, dnorm_mean, dnorm_norm_mean, rstd);
            elem_store(d->din, d->act_dtype, r * c + i, elem_load(d->din, d->act_dtype, r * c + i) + dval);
        }
    }
    return ST_OK;
}

static Status attn_check(uint32_t b, uint32_t t, uint32_t h, uint32_t hd, Dtype dt, const char *op, Err *e)
{
    if (!b || !t || !h || !hd) return err_set(e, ST_USAGE, "%s: empty shape", op);
    return need_dtype(dt, op, "activation", e);
}

Status cpu_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e)
{
    Status st = attn_check(d->batch, d->seq, d->heads, d->head_dim, d->dtype, "attention_fwd", e);
    if (st) return st;
    if (!d->qkv || !d->probs || !d->out) return err_set(e, ST_USAGE, "attention_fwd: missing pointer");
    uint64_t B = d->batch, T = d->seq, H = d->heads, D = d->head_dim, C = H * D, C3 = 3 * C;
    float *q = cpu_scratch(bk, 0, B * T * C3, e);
    float *row = q ? cpu_scratch(bk, 1, T, e) : NULL;
    if (!row) return e ? e->st : ST_NOMEM;
    for (uint64_t i = 0; i < B * T * C3; i++) q[i] = elem_load(d->qkv, d->dtype, i);
    float scale = 1.0f / sqrtf((float)D);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t h = 0; h < H; h++)
            for (uint64_t t = 0; t < T; t++) {
                const float *qt = q + (b * T + t) * C3 + h * D;
                float mx = -INFINITY;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    const float *kt = q + (b * T + t2) * C3 + C + h * D;
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
                    for (uint64_t t2 = 0; t2 <= t; t2++) o += row[t2] * q[(b * T + t2) * C3 + 2 * C + h * D + i];
                    elem_store(d->out, d->dtype, (b * T + t) * C + h * D + i, o);
                }
            }
    return ST_OK;
}

Status cpu_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e)
{
    Status st = attn_check(d->batch, d->seq, d->heads, d->head_dim, d->dtype, "attention_bwd", e);
    if (st) return st;
    if (!d->qkv || !d->probs || !d->dout || !d->dqkv || !d->scratch)
        return err_set(e, ST_USAGE, "attention_bwd: missing pointer");
    uint64_t B = d->batch, T = d->seq, H = d->heads, D = d->head_dim, C = H * D, C3 = 3 * C;
    float *q = cpu_scratch(bk, 0, B * T * C3, e);
    float *dq = q ? cpu_scratch(bk, 1, B * T * C3, e) : NULL;
    float *dout = dq ? cpu_scratch(bk, 2, B * T * C, e) : NULL;
    if (!dout) return e ? e->st : ST_NOMEM;
    for (uint64_t i = 0; i < B * T * C3; i++) q[i] = elem_load(d->qkv, d->dtype, i);
    for (uint64_t i = 0; i < B * T * C; i++) dout[i] = elem_load(d->dout, d->dtype, i);
    memset(dq, 0, (size_t)(B * T * C3) * sizeof(float));
    float scale = 1.0f / sqrtf((float)D);
    for (uint64_t b = 0; b < B; b++)
        for (uint64_t h = 0; h < H; h++) {
            float *dp = d->scratch + (b * H + h) * T * T; /* (T, T): d(probs), then d(scores) */
            for (uint64_t t = 0; t < T; t++) {
                const float *dot = dout + (b * T + t) * C + h * D;
                uint64_t pbase = ((b * H + h) * T + t) * T;
                float dsum = 0.0f;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    const float *vt = q + (b * T + t2) * C3 + 2 * C + h * D;
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
                    float *dvt = dq + (b * T + t2) * C3 + 2 * C + h * D;
                    for (uint64_t i = 0; i < D; i++) dvt[i] += p * dot[i];
                }
            }
            for (uint64_t t = 0; t < T; t++) {
                const float *qt = q + (b * T + t) * C3 + h * D;
                float *dqt = dq + (b * T + t) * C3 + h * D;
                for (uint64_t t2 = 0; t2 <= t; t2++) {
                    float ds = dp[t * T + t2] * scale;
                    const float *kt = q + (b * T + t2) * C3 + C + h * D;
                    float *dkt = dq + (b * T + t2) * C3 + C + h * D;
                    for (uint64_t i = 0; i < D; i++) {
                        dqt[i] += ds * kt[i];
                        dkt[i] += ds * qt[i];
                    }
                }
            }
        }
    for (uint64_t i = 0; i < B * T * C3; i++) elem_store(d->dqkv, d->dtype, i, dq[i]);
    return ST_OK;
}

Status cpu_gelu_fwd(Backend *bk, const void *in, void *out, Dtype dtype, uint64_t n, Err *e)
{
    (void)bk;
    Status st = need_dtype(dtype, "gelu_fwd", "activation", e);
    if (st) return st;
    for (uint64_t i = 0; i < n; i++) {
        elem_store(out, dtype, i, km_gelu(elem_load(in, dtype, i)));
    }
    return ST_OK;
}

Status cpu_gelu_bwd(Backend *bk, const void *in, const void *dout, void *din, Dtype dtype, uint64_t n, Err *e)
{
    (void)bk;
    Status st = need_dtype(dtype, "gelu_bwd", "activation", e);
    if (st) return st;
    for (uint64_t i = 0; i < n; i++) {
        elem_store(din, dtype, i, km_gelu_grad(elem_load(in, dtype, i)) * elem_load(dout, dtype, i));
    }
    return ST_OK;
}

Status cpu_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e)
{
    (void)bk;
    Status st = need_dtype(dtype, "add", "activation", e);
    if (st) return st;
    for (uint64_t i = 0; i < n; i++) elem_store(out, dtype, i, elem_load(a, dtype, i) + elem_load(b, dtype, i));
    return ST_OK;
}

Status cpu_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e)
{
    (void)bk;
    Status st = need_dtype(dtype, "bias_grad", "gradient", e);
    if (st) return st;
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
    Status st = need_dtype(weight_dtype, "embed_fwd", "weight", e);
    if (!st) st = need_dtype(act_dtype, "embed_fwd", "activation", e);
    if (!st) st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_fwd", e);
    if (st) return st;
    for (uint64_t b = 0; b < batch; b++)
        for (uint64_t t = 0; t < seq; t++) {
            uint64_t tok = (uint64_t)tokens[b * seq + t], o = (b * seq + t) * channels;
            for (uint64_t i = 0; i < channels; i++)
                elem_store(out, act_dtype, o + i,
                           elem_load(wte, weight_dtype, tok * channels + i) +
                               elem_load(wpe, weight_dtype, t * channels + i));
        }
    return ST_OK;
}

Status cpu_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                     uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e)
{
    (void)bk;
    Status st = need_dtype(act_dtype, "embed_bwd", "activation", e);
    if (!st) st = check_tokens(tokens, (uint64_t)batch * seq, vocab, "embed_bwd", e);
    if (st) return st;
    for (uint64_t b = 0; b < batch; b++)
        for (uint64_t t = 0; t < seq; t++) {
            uint64_t tok = (uint64_t)tokens[b * seq + t], o = (b * seq + t) * channels;
            for (uint64_t i = 0; i < channels; i++) {
                float g = elem_load(dout, act_dtype, o + i);
                dwte[tok * channels + i] += g;
                dwpe[t * channels + i] += g;
            }
        }
    return ST_OK;
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
