/* exec/backend/backend_check.c — the one descriptor check of every backend operation
 * (BACKEND_OPS in exec/backend/backend.h). Each backend's table runs the check before
 * its own function, so the CPU reference and the GPU accept and refuse exactly
 * the same calls, with the same messages: ST_USAGE naming the operation and
 * the field. Empty work (n = 0, no rows) is legal where a backend can do
 * nothing for it. Data-dependent checks (token ids inside the vocabulary) stay
 * with the backends: the CPU reads the ids, the GPU finds them on the device.
 * The mixture-of-experts operations' checks are exec/backend/backend_check_moe.c's, the
 * optimizers' exec/backend/backend_check_optim.c's. */
#include <math.h>

#include "exec/backend/backend.h"
#include "exec/backend/backend_check_internal.h"
#include "fp8/codec.h"
#include "util/num.h"

static int is_elem(Dtype t) { return is_float(t) || dtype_is_fp8(t); }

static Status need_float(Dtype dt, const char *op, const char *what, Err *e)
{
    if (is_float(dt)) return ST_OK;
    return err_set(e, ST_USAGE, "%s: %s dtype %s is not fp32, fp16 or bf16", op, what, dtype_name(dt));
}

static Status need_fp8(Dtype dt, const char *op, const char *what, Err *e)
{
    if (dtype_is_fp8(dt)) return ST_OK;
    return err_set(e, ST_USAGE, "%s: %s %s is not FP8 (e4m3 or e5m2)", op, what, dtype_name(dt));
}

/* ---- GEMM ------------------------------------------------------------------------ */

static Status check_operand(const GemmOperand *o, const char *name, uint64_t rows, uint64_t k, Err *e)
{
    if (!o->ptr) return err_set(e, ST_USAGE, "gemm: operand %s has no data pointer", name);
    if (!is_float(o->dtype) && !dtype_is_fp8(o->dtype))
        return err_set(e, ST_USAGE, "gemm: operand %s has dtype %s (expected fp32, fp16, bf16, e4m3 or e5m2)", name,
                       dtype_name(o->dtype));
    if (o->layout != GEMM_K_INNER && o->layout != GEMM_K_OUTER)
        return err_set(e, ST_USAGE, "gemm: operand %s has an unknown layout %d", name, (int)o->layout);
    uint64_t packed = o->layout == GEMM_K_INNER ? k : rows;
    if (o->ld && o->ld < packed)
        return err_set(e, ST_USAGE, "gemm: operand %s leading dimension %llu is below its row length %llu", name,
                       (unsigned long long)o->ld, (unsigned long long)packed);
    if (dtype_is_fp8(o->dtype)) {
        if (o->layout != GEMM_K_INNER)
            return err_set(e, ST_USAGE,
                           "gemm: FP8 operand %s is stored K-outer; Hopper FP8 GEMMs are TN only, so pass the "
                           "transposed FP8 copy (K contiguous)",
                           name);
        if (!o->scale_inv) return err_set(e, ST_USAGE, "gemm: FP8 operand %s has no scale_inv", name);
        if (o->scale_gran != GRAN_TENSOR && o->scale_gran != GRAN_1X128 && o->scale_gran != GRAN_128X128)
            return err_set(e, ST_USAGE, "gemm: operand %s scale granularity %s is not tensor, 1x128 or 128x128", name,
                           gran_name(o->scale_gran));
    } else if (o->scale_inv) {
        return err_set(e, ST_USAGE, "gemm: operand %s is %s but has a scale_inv (only FP8 operands are scaled)", name,
                       dtype_name(o->dtype));
    }
    return ST_OK;
}

Status gemm_desc_check(const GemmDesc *g, Err *e)
{
    if (!g) return err_set(e, ST_USAGE, "gemm: no descriptor");
    if (!g->m || !g->n || !g->k)
        return err_set(e, ST_USAGE, "gemm: empty shape m=%llu n=%llu k=%llu", (unsigned long long)g->m,
                       (unsigned long long)g->n, (unsigned long long)g->k);
    Status st = check_operand(&g->a, "A", g->m, g->k, e);
    if (st) return st;
    if ((st = check_operand(&g->b, "B", g->n, g->k, e))) return st;
    if (dtype_is_fp8(g->a.dtype) != dtype_is_fp8(g->b.dtype))
        return err_set(e, ST_USAGE, "gemm: mixing FP8 and %s operands (A %s, B %s) is not supported",
                       dtype_is_fp8(g->a.dtype) ? dtype_name(g->b.dtype) : dtype_name(g->a.dtype),
                       dtype_name(g->a.dtype), dtype_name(g->b.dtype));
    if (g->a.dtype == DT_E5M2 && g->b.dtype == DT_E5M2)
        return err_set(e, ST_USAGE, "gemm: E5M2 x E5M2 is not supported by cuBLASLt (use E4M3 for one operand)");
    if (!dtype_is_fp8(g->a.dtype) && g->a.dtype != g->b.dtype)
        return err_set(e, ST_USAGE, "gemm: operands A %s and B %s must have the same dtype", dtype_name(g->a.dtype),
                       dtype_name(g->b.dtype));
    if (g->a.scale_inv && g->a.scale_gran == GRAN_128X128 && g->b.scale_gran == GRAN_128X128)
        return err_set(e, ST_USAGE, "gemm: 128x128 x 128x128 block scaling is not supported (one side must be 1x128)");
    if (!g->d.ptr) return err_set(e, ST_USAGE, "gemm: output D has no data pointer");
    if (!is_float(g->d.dtype) && !dtype_is_fp8(g->d.dtype))
        return err_set(e, ST_USAGE, "gemm: output D has dtype %s", dtype_name(g->d.dtype));
    if (g->d.ld && g->d.ld < g->n)
        return err_set(e, ST_USAGE, "gemm: output leading dimension %llu is below n=%llu", (unsigned long long)g->d.ld,
                       (unsigned long long)g->n);
    if (dtype_is_fp8(g->d.dtype)) {
        if (!g->d.scale) return err_set(e, ST_USAGE, "gemm: FP8 output D has no scale");
        /* cuBLASLt's FP8 table: E4M3 x E4M3 writes E4M3, BF16, FP16 or FP32, never E5M2 (only a
         * product with an E5M2 operand may) */
        if (g->d.dtype == DT_E5M2 && g->a.dtype == DT_E4M3 && g->b.dtype == DT_E4M3)
            return err_set(e, ST_USAGE,
                           "gemm: E4M3 x E4M3 -> E5M2 output is not supported by cuBLASLt (write E4M3, BF16 or "
                           "FP32, or use an E5M2 operand)");
        if (g->accum == GEMM_ACCUMULATE)
            return err_set(e, ST_USAGE, "gemm: accumulation into an FP8 output is not supported");
    } else if (g->d.scale) {
        return err_set(e, ST_USAGE, "gemm: output D is %s but has a scale (only FP8 outputs are scaled)",
                       dtype_name(g->d.dtype));
    }
    if (g->acc_precision != GEMM_ACC_SPLIT && g->acc_precision != GEMM_ACC_FAST && g->acc_precision != GEMM_ACC_TC14)
        return err_set(e, ST_USAGE, "gemm: unknown accumulation precision %d", (int)g->acc_precision);
    if (g->acc_precision == GEMM_ACC_TC14 &&
        !(g->a.scale_inv && g->a.scale_gran != GRAN_TENSOR && g->b.scale_gran != GRAN_TENSOR))
        return err_set(e, ST_USAGE, "gemm: the 14-bit block accumulation needs block-scaled FP8 operands (A %s, B %s)",
                       gran_name(g->a.scale_gran), gran_name(g->b.scale_gran));
    if (g->accum != GEMM_OVERWRITE && g->accum != GEMM_ACCUMULATE)
        return err_set(e, ST_USAGE, "gemm: unknown accumulate mode %d", (int)g->accum);
    if (g->bias && !is_float(g->bias_dtype))
        return err_set(e, ST_USAGE, "gemm: bias dtype %s (expected fp32, fp16 or bf16)", dtype_name(g->bias_dtype));
    return ST_OK;
}

Status backend_check_gemm(Backend *bk, const GemmDesc *g, Err *e)
{
    (void)bk;
    return gemm_desc_check(g, e);
}

/* ---- quantization and scaling ------------------------------------------------------ */

Status backend_check_cast_transpose(Backend *bk, const CastDesc *c, Err *e)
{
    (void)bk;
    if (!c) return err_set(e, ST_USAGE, "cast_transpose: no descriptor");
    if (!c->in || (!c->out_row && !c->out_col && !c->amax))
        return err_set(e, ST_USAGE, "cast_transpose: needs an input and at least one output");
    /* FP8 input: codes recast (a transposed copy of an FP8 tensor, exec/model/model_shard.c) */
    Status st = dtype_is_fp8(c->in_dtype) ? ST_OK : need_float(c->in_dtype, "cast_transpose", "input", e);
    if (!st && c->col_ld && (!c->out_col || c->col_ld < c->rows))
        st = err_set(e, ST_USAGE, "cast_transpose: transposed copy's leading dimension %llu %s",
                     (unsigned long long)c->col_ld, c->out_col ? "is below its rows" : "without a transposed copy");
    if (!st && c->gran != GRAN_TENSOR) {
        if (c->gran != GRAN_1X128 && c->gran != GRAN_128X128)
            return err_set(e, ST_USAGE, "cast_transpose: granularity %s (tensor, 1x128 or 128x128)",
                           gran_name(c->gran));
        if (!dtype_is_fp8(c->out_dtype) || dtype_is_fp8(c->in_dtype) || c->in_scale_inv || c->amax)
            return err_set(e, ST_USAGE,
                           "cast_transpose: %s blocks cast a 16/32-bit input to FP8 with their own scales (no input "
                           "scale or amax)",
                           gran_name(c->gran));
        if ((c->out_row && !c->row_scale_inv) || (c->out_col && !c->col_scale_inv) || (!c->out_row && !c->out_col))
            return err_set(e, ST_USAGE, "cast_transpose: a block-scaled copy needs its scale_inv array");
        return ST_OK;
    }
    if (!st && (c->out_row || c->out_col) && (!dtype_is_fp8(c->out_dtype) || !c->scale))
        st = err_set(e, ST_USAGE, "cast_transpose: output dtype %s must be e4m3 or e5m2, with a scale",
                     dtype_name(c->out_dtype));
    return st;
}

Status backend_check_convert(Backend *bk, const void *in, Dtype in_dtype, void *out, Dtype out_dtype, uint64_t n,
                             const float *scale, Err *e)
{
    (void)bk, (void)scale;
    if (!is_elem(in_dtype) || !is_elem(out_dtype))
        return err_set(e, ST_USAGE, "convert: %s -> %s is not supported", dtype_name(in_dtype), dtype_name(out_dtype));
    return need(!n || (in && out), e, "convert", "missing pointer");
}

Status backend_check_amax(Backend *bk, const void *in, Dtype dtype, uint64_t n, float *amax, Err *e)
{
    (void)bk;
    if (!is_elem(dtype)) return err_set(e, ST_USAGE, "amax: dtype %s is not supported", dtype_name(dtype));
    return need(amax && (!n || in), e, "amax", "missing pointer");
}

Status backend_check_scaling_delayed_update(Backend *bk, const ScalingBank *b, Err *e)
{
    (void)bk;
    if (!b) return err_set(e, ST_USAGE, "delayed scaling: no bank");
    Status st = need_fp8(b->fmt, "delayed scaling", "bank format", e);
    if (st) return st;
    if (!b->history_len || (b->n && (!b->amax_history || !b->scale)))
        return err_set(e, ST_USAGE, "delayed scaling: empty history or missing scale");
    if (b->algo != AMAX_ALGO_MAX && b->algo != AMAX_ALGO_MOST_RECENT)
        return err_set(e, ST_USAGE, "delayed scaling: unknown amax algorithm %d", (int)b->algo);
    return ST_OK;
}

Status backend_check_scaling_from_amax(Backend *bk, uint32_t n, Dtype fmt, int margin, const float *amax, float *scale,
                                       Err *e)
{
    (void)bk, (void)margin;
    Status st = need_fp8(fmt, "current scaling", "format", e);
    return st ? st : need(!n || (amax && scale), e, "current scaling", "missing pointer");
}

/* ---- layers ------------------------------------------------------------------------ */

static Status norm_kind(NormType n, const char *op, Err *e)
{
    if (n == NORM_LAYERNORM || n == NORM_RMSNORM) return ST_OK;
    return err_set(e, ST_USAGE, "%s: unknown norm %d", op, (int)n);
}

Status backend_check_norm_fwd(Backend *bk, const NormFwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "norm_fwd: no descriptor");
    Status st = norm_kind(d->norm, "norm_fwd", e);
    if (!st) st = need_float(d->act_dtype, "norm_fwd", "activation", e);
    if (!st) st = need_float(d->weight_dtype, "norm_fwd", "weight", e);
    if (st) return st;
    if (!d->in || !d->out || !d->weight || !d->rstd || !d->cols)
        return err_set(e, ST_USAGE, "norm_fwd: missing pointer or zero width");
    int ln = d->norm == NORM_LAYERNORM;
    if (ln && (!d->bias || !d->mean)) return err_set(e, ST_USAGE, "norm_fwd: a layernorm needs a bias and a mean");
    if (!ln && (d->bias || d->mean)) return err_set(e, ST_USAGE, "norm_fwd: an rmsnorm has no bias and no mean");
    return need(isfinite(d->eps) && d->eps >= 0.0f, e, "norm_fwd", "eps must be finite and >= 0");
}

Status backend_check_norm_bwd(Backend *bk, const NormBwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "norm_bwd: no descriptor");
    Status st = norm_kind(d->norm, "norm_bwd", e);
    if (!st) st = need_float(d->act_dtype, "norm_bwd", "activation", e);
    if (!st) st = need_float(d->weight_dtype, "norm_bwd", "weight", e);
    if (st) return st;
    if (!d->in || !d->weight || !d->rstd || !d->dout || !d->din || !d->dweight || !d->cols)
        return err_set(e, ST_USAGE, "norm_bwd: missing pointer or zero width");
    int ln = d->norm == NORM_LAYERNORM;
    if (ln && (!d->dbias || !d->mean)) return err_set(e, ST_USAGE, "norm_bwd: a layernorm needs dbias and a mean");
    if (!ln && (d->dbias || d->mean)) return err_set(e, ST_USAGE, "norm_bwd: an rmsnorm has no dbias and no mean");
    return ST_OK;
}

/* Shapes of attention and the rotary embedding: every size positive, KV heads dividing the heads. */
static Status heads_check(uint32_t b, uint32_t t, uint32_t h, uint32_t kv, uint32_t hd, Dtype dt, const char *op,
                          Err *e)
{
    if (!b || !t || !h || !hd) return err_set(e, ST_USAGE, "%s: empty shape", op);
    if (!kv || h % kv)
        return err_set(e, ST_USAGE, "%s: %u KV heads must be at least 1 and divide the %u heads", op, kv, h);
    return need_float(dt, op, "activation", e);
}

Status backend_check_attention_fwd(Backend *bk, const AttnFwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "attention_fwd: no descriptor");
    Status st = heads_check(d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->dtype, "attention_fwd", e);
    return st ? st : need(d->qkv && d->probs && d->out, e, "attention_fwd", "missing pointer");
}

Status backend_check_attention_bwd(Backend *bk, const AttnBwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "attention_bwd: no descriptor");
    Status st = heads_check(d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->dtype, "attention_bwd", e);
    if (st) return st;
    return need(d->qkv && d->probs && d->dout && d->dqkv && d->scratch, e, "attention_bwd", "missing pointer");
}

Status backend_check_rope(Backend *bk, const RopeDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "rope: no descriptor");
    Status st = heads_check(d->batch, d->seq, d->heads, d->kv_heads, d->head_dim, d->dtype, "rope", e);
    if (st) return st;
    if (!d->rope_dim && d->head_dim % 2)
        return err_set(e, ST_USAGE, "rope: head_dim %u is odd (pairs are rotated)", d->head_dim);
    if (d->rope_dim % 2 || d->rope_dim > d->head_dim)
        return err_set(e, ST_USAGE, "rope: rope_dim %u is odd or above head_dim %u (pairs are rotated)", d->rope_dim,
                       d->head_dim);
    if (d->qnorm_w && (d->rope_dim || d->v_head_dim))
        return err_set(e, ST_USAGE, "rope: q/k norms with a partial rotation or value heads of their own width");
    st = need(d->qkv && d->cos_sin, e, "rope", "missing pointer");
    if (st || (!d->qnorm_w && !d->knorm_w)) return st;
    st = need(d->qnorm_w && d->knorm_w && d->norm_rstd, e, "rope", "missing q/k norm pointer");
    if (!st && d->inverse)
        st = need(d->qnorm_dw && d->knorm_dw && d->norm_raw, e, "rope", "missing q/k norm gradient or input");
    if (!st && !(d->eps > 0.0f)) st = err_set(e, ST_USAGE, "rope: q/k norm epsilon %g is not positive", (double)d->eps);
    return st ? st : need_float(d->norm_wdt, "rope", "q/k norm weight", e);
}

/* The elements a strided operand spans past its first: (rows − 1)·ld + (reps − 1)·step + cols, and its row's
 * reach (reps − 1)·step + cols within ld. */
static Status span_check(uint64_t rows, uint64_t cols, uint64_t reps, uint64_t ld, uint64_t step, const char *which,
                         Err *e)
{
    uint64_t reach;
    if (u64_mul(reps - 1, step, &reach) || u64_add(reach, cols, &reach) || reach > ld)
        return err_set(e, ST_USAGE, "strided_copy: %s row stride %llu is below a row's reach (%llu - 1) x %llu + %llu",
                       which, (unsigned long long)ld, (unsigned long long)reps, (unsigned long long)step,
                       (unsigned long long)cols);
    uint64_t span;
    if (u64_mul(rows - 1, ld, &span) || u64_add(span, reach, &span))
        return err_set(e, ST_USAGE, "strided_copy: %s spans more than 2^64 elements", which);
    return ST_OK;
}

Status backend_check_strided_copy(Backend *bk, const StridedCopyDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "strided_copy: no descriptor");
    if (!d->rows || !d->cols || !d->reps)
        return err_set(e, ST_USAGE, "strided_copy: empty shape rows=%llu cols=%llu reps=%llu",
                       (unsigned long long)d->rows, (unsigned long long)d->cols, (unsigned long long)d->reps);
    Status st = need_float(d->dtype, "strided_copy", "element", e);
    if (!st && d->dst_step && d->dst_step < d->cols)
        st = err_set(e, ST_USAGE, "strided_copy: destination blocks overlap (dst_step %llu below cols %llu)",
                     (unsigned long long)d->dst_step, (unsigned long long)d->cols);
    if (!st) st = span_check(d->rows, d->cols, d->reps, d->src_ld, d->src_step, "source", e);
    if (!st) st = span_check(d->rows, d->cols, d->dst_step ? d->reps : 1, d->dst_ld, d->dst_step, "destination", e);
    return st ? st : need(d->src && d->dst, e, "strided_copy", "missing pointer");
}

static Status act_check(MlpType mlp, Dtype dt, uint64_t rows, uint64_t cols, const char *op, Err *e)
{
    if (mlp != MLP_GELU && mlp != MLP_SWIGLU) return err_set(e, ST_USAGE, "%s: unknown activation %d", op, (int)mlp);
    Status st = need_float(dt, op, "activation", e);
    if (!st && rows && !cols) st = err_set(e, ST_USAGE, "%s: zero width", op);
    return st;
}

Status backend_check_act_fwd(Backend *bk, const ActFwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "act_fwd: no descriptor");
    Status st = act_check(d->mlp, d->dtype, d->rows, d->cols, "act_fwd", e);
    if (st || !d->rows) return st;
    if (!d->in || !d->out) return err_set(e, ST_USAGE, "act_fwd: missing pointer");
    return need(d->mlp == MLP_GELU || d->in != d->out, e, "act_fwd", "swiglu's output cannot overwrite its input");
}

Status backend_check_act_bwd(Backend *bk, const ActBwdDesc *d, Err *e)
{
    (void)bk;
    if (!d) return err_set(e, ST_USAGE, "act_bwd: no descriptor");
    Status st = act_check(d->mlp, d->dtype, d->rows, d->cols, "act_bwd", e);
    if (st || !d->rows) return st;
    if (!d->in || !d->dout || !d->din) return err_set(e, ST_USAGE, "act_bwd: missing pointer");
    return need(d->mlp == MLP_GELU || (d->din != d->dout && d->din != d->in), e, "act_bwd",
                "swiglu's input gradient cannot overwrite its input or output gradient");
}

Status backend_check_add(Backend *bk, const void *a, const void *b, void *out, Dtype dtype, uint64_t n, Err *e)
{
    (void)bk;
    Status st = need_float(dtype, "add", "activation", e);
    return st ? st : need(!n || (a && b && out), e, "add", "missing pointer");
}

Status backend_check_bias_grad(Backend *bk, const void *dout, Dtype dtype, uint64_t m, uint64_t n, float *dbias, Err *e)
{
    (void)bk;
    Status st = need_float(dtype, "bias_grad", "gradient", e);
    return st ? st : need(!m || !n || (dout && dbias), e, "bias_grad", "missing pointer");
}

Status backend_check_embed_fwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                               uint64_t channels, const void *wte, const void *wpe, Dtype weight_dtype, void *out,
                               Dtype act_dtype, Err *e)
{
    (void)bk, (void)wpe, (void)batch, (void)seq;
    Status st = need_float(weight_dtype, "embed_fwd", "weight", e);
    if (!st) st = need_float(act_dtype, "embed_fwd", "activation", e);
    if (!st && (!vocab || !channels)) st = err_set(e, ST_USAGE, "embed_fwd: empty vocabulary or width");
    return st ? st : need(tokens && wte && out, e, "embed_fwd", "missing pointer");
}

Status backend_check_embed_bwd(Backend *bk, const int32_t *tokens, uint32_t batch, uint32_t seq, uint64_t vocab,
                               uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, float *dwpe, Err *e)
{
    (void)bk, (void)dwpe, (void)batch, (void)seq;
    Status st = need_float(act_dtype, "embed_bwd", "activation", e);
    if (!st && (!vocab || !channels)) st = err_set(e, ST_USAGE, "embed_bwd: empty vocabulary or width");
    return st ? st : need(tokens && dout && dwte, e, "embed_bwd", "missing pointer");
}

Status backend_check_xent_fwd_bwd(Backend *bk, void *logits, Dtype dtype, uint64_t rows, uint64_t vocab,
                                  uint64_t vocab_padded, const int32_t *targets, float dloss, float *losses, Err *e)
{
    (void)bk, (void)dloss;
    Status st = need_float(dtype, "xent", "logits", e);
    if (!st && (vocab == 0 || vocab > vocab_padded))
        st = err_set(e, ST_USAGE, "xent: vocab %llu must be in [1, %llu]", (unsigned long long)vocab,
                     (unsigned long long)vocab_padded);
    return st ? st : need(!rows || (logits && targets && losses), e, "xent", "missing pointer");
}

/* ---- the vocabulary split over tensor-parallel ranks ---------------------------------- */

Status backend_check_embed_shard_fwd(Backend *bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows,
                                     uint64_t channels, const void *wte, Dtype weight_dtype, void *out, Dtype act_dtype,
                                     Err *e)
{
    (void)bk, (void)first;
    Status st = need_float(weight_dtype, "embed_shard_fwd", "weight", e);
    if (!st) st = need_float(act_dtype, "embed_shard_fwd", "activation", e);
    if (!st && (!n || !rows || !channels)) st = err_set(e, ST_USAGE, "embed_shard_fwd: no tokens, rows or width");
    return st ? st : need(tokens && wte && out, e, "embed_shard_fwd", "missing pointer");
}

Status backend_check_embed_shard_bwd(Backend *bk, const int32_t *tokens, uint64_t n, uint64_t first, uint64_t rows,
                                     uint64_t channels, const void *dout, Dtype act_dtype, float *dwte, Err *e)
{
    (void)bk, (void)first;
    Status st = need_float(act_dtype, "embed_shard_bwd", "activation", e);
    if (!st && (!n || !rows || !channels)) st = err_set(e, ST_USAGE, "embed_shard_bwd: no tokens, rows or width");
    return st ? st : need(tokens && dout && dwte, e, "embed_shard_bwd", "missing pointer");
}

Status backend_check_xent_shard(Backend *bk, float *logits, uint64_t rows, uint64_t cols, uint64_t first,
                                uint64_t vocab, const int32_t *targets, float *stats, int phase, float dloss,
                                float *losses, Err *e)
{
    (void)bk, (void)first, (void)dloss;
    if (!rows || !cols || !vocab) return err_set(e, ST_USAGE, "xent_shard: no rows, columns or vocabulary");
    if (phase < 0 || phase > 2) return err_set(e, ST_USAGE, "xent_shard: phase %d is not 0, 1 or 2", phase);
    return need(logits && targets && stats && (phase < 2 || losses), e, "xent_shard", "missing pointer");
}
