/* exec/model/model_tp_block.c — block-scaled FP8 (DeepSeek-V3's recipe, exec_block_scaled: E4M3 with 1x128
 * activation tiles and 128x128 weight blocks, FP32 scales) over tensor parallelism with sequence parallelism.
 *
 * A shard's 128x128 weight blocks are the one-rank weight's when every shard boundary falls on a block boundary,
 * which model_tp_block_check requires: a column-parallel weight's rows per rank, a row-parallel weight's columns
 * per rank. The activations' 1x128 tiles run along K, so a row-wise copy's are the one-rank cast's whatever the
 * shard; the transposed copies' tiles run along the tokens, each rank's B·T/tp from its first — the one-rank
 * tiles when B·T/tp is a multiple of 128, a rank's own otherwise (the same bound: each tile still has its amax).
 *
 * Column-parallel input (QKV, FC1, latent attention's up-projections, MTP's eh_proj): each rank casts its
 * sequence shard into its row-wise 1x128 tiles (the tiles run along K, so a row's codes and scales are the
 * one-rank cast's) and its transposed copy (K, B·T/tp), saved for the weight gradient. The row-wise codes and
 * their FP32 scales are all-gathered in one call (tp_allgather_fwd in the recipe's E4M3, the scales beside
 * the codes as DeepSeek-V3's dispatch carries them: a rank's segment is its n·K codes, then its n·ceil(K/128)
 * scales) — Transformer Engine's blockwise FP8 all-gather likewise moves the shards' quantized data with its
 * scale_inv rather than BF16 (transformer_engine/pytorch/distributed.py, _all_gather_fp8_blockwise) — and the
 * GEMM reads each rank's segment as the rows it is. Backward the saved transposed shards, codes then scales
 * (one allocation: model_layout.c), are gathered again (tp_allgather_bwd in E4M3) and wgrad sums rank r's
 * tokens against the output gradient's transposed copy of the same tokens, cast piece by piece so its tiles
 * are the gathered shard's. Row-parallel outputs and the column-parallel input gradients reduce-scatter in
 * BF16; the row-parallel output gradient is gathered in BF16 before its cast (the recipe's
 * tp_reducescatter_comm), so dgrad and wgrad there are the one-rank's. */
#include "exec/model/model_internal.h"

enum { TB = 128 }; /* a tile's or block's extent: gemm_group.h's GEMM_GROUP_SCALE_BLOCK */

static uint64_t tiles(uint64_t n) { return (n + TB - 1) / TB; }

/* The first width that does not fall on a 128 boundary, as a refusal naming what sets it. */
static Status need(Err *e, const PlanInput *in, uint64_t width, const char *what)
{
    if (width % TB == 0) return ST_OK;
    return err_set(e, ST_UNAVAILABLE,
                   "--tp %u --recipe %s: a shard of %s is %llu wide, not a multiple of the recipe's 128-wide blocks "
                   "(model %s); a shard boundary must fall on a block boundary",
                   in->tp, in->recipe->name, what, (unsigned long long)width, in->model->name);
}

Status model_tp_block_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    const uint64_t t = in->tp;
    if (t <= 1 || !exec_block_scaled(in->recipe)) return ST_OK;
    if (s->heads % t || s->ffn_hidden % t || ((uint64_t)in->mbs * p->seq) % t) return ST_OK; /* model_tp_check's */
    const uint64_t n = (uint64_t)in->mbs * p->seq / t, H = s->heads / t;
    Status st = ST_OK;
    if (n % 4) /* a rank's codes end on a 4-byte boundary, where their FP32 scales follow */
        st = err_set(e, ST_UNAVAILABLE,
                     "--tp %u --recipe %s: each rank's tokens (--mbs x --seq / --tp = %llu) must be a multiple of 4",
                     in->tp, in->recipe->name, (unsigned long long)n);
    if (!st && spec_is_mla(s)) {
        st = need(e, in, H * s->head_dim, "q_up's rows (heads x (qk_nope_head_dim + qk_rope_head_dim) / --tp)");
        if (!st)
            st = need(e, in, H * ((uint64_t)s->qk_nope_head_dim + s->v_head_dim),
                      "kv_up's rows (heads x (qk_nope_head_dim + v_head_dim) / --tp)");
        if (!st) st = need(e, in, H * s->v_head_dim, "the output projection's columns (heads x v_head_dim / --tp)");
    } else if (!st) {
        st = need(e, in, H * s->head_dim,
                  "QKV's query rows and the output projection's columns (heads x head_dim / "
                  "--tp)");
        if (!st && s->kv_heads % t == 0)
            st = need(e, in, (uint64_t)s->kv_heads / t * s->head_dim,
                      "QKV's key and value rows (kv_heads x head_dim / "
                      "--tp)");
    }
    if (!st && (!s->experts || s->dense_layers)) st = need(e, in, s->ffn_hidden / t, "the FFN (ffn_hidden / --tp)");
    if (!st && s->experts && s->shared_experts)
        st = need(e, in, (uint64_t)s->shared_experts * s->expert_ffn / t,
                  "the shared experts' FFN (shared_experts x expert_ffn / --tp)");
    if (!st && s->mtp_layers) st = need(e, in, s->hidden / t, "eh_proj's rows (hidden / --tp)");
    return st;
}

uint64_t model_tp_block_seg(uint64_t rows, uint64_t cols) { return rows * cols + 4 * rows * tiles(cols); }

float *model_tp_block_saved_s(Model *m, uint32_t l, LinearKind k)
{
    return (float *)(void *)(model_la(m, l)->q_col[k] + model_lin_k(m, l, k) * model_sp_tokens(m));
}

/* The cast of a (rows, cols) tensor into 1x128 tiles: row-wise (row, row_s) and/or transposed (col, col_s). */
static Status tile_cast(Model *m, const void *in, uint64_t rows, uint64_t cols, Dtype fmt, uint8_t *row, float *row_s,
                        uint8_t *col, float *col_s, Err *e)
{
    CastDesc c = {.in = in,
                  .in_dtype = m->act_dtype,
                  .rows = rows,
                  .cols = cols,
                  .out_dtype = fmt,
                  .out_row = row,
                  .out_col = col,
                  .gran = m->recipe.act_gran,
                  .row_scale_inv = row_s,
                  .col_scale_inv = col_s};
    return m->bk->cast_transpose(m->bk, &c, e);
}

Status model_tp_block_fwd(Model *m, uint32_t l, LinearKind k, const void *x, GemmDesc *d, Err *e)
{
    const uint64_t n = model_sp_tokens(m), K = d->k, N = d->n, seg = model_tp_block_seg(n, K);
    const Dtype f = m->recipe.gemm_fwd;
    uint8_t *loc = m->act.tp_qloc, *full = m->act.tp_fwd;
    Status st = tile_cast(m, x, n, K, f, loc, (float *)(void *)(loc + n * K), model_la(m, l)->q_col[k],
                          model_tp_block_saved_s(m, l, k), e);
    if (!st) st = m->tpc->all_gather(m->tpc, CO_TP_AG_FWD, m->bk, loc, full, seg, f, e);
    /* rank r's rows: its codes, then their scales (a row's output reads only its row of A) */
    GemmDesc g = *d;
    g.m = n;
    for (uint32_t r = 0; !st && r < m->tp; r++) {
        g.a.ptr = full + r * seg;
        g.a.scale_inv = (const float *)(const void *)(full + r * seg + n * K);
        g.d.ptr = (char *)d->d.ptr + (uint64_t)r * n * N * dtype_bytes(d->d.dtype);
        st = m->bk->gemm(m->bk, &g, e);
    }
    return st;
}

Status model_tp_block_dy_col(Model *m, const void *dy, uint64_t N, uint8_t *col, float *col_s, Err *e)
{
    const uint64_t n = model_sp_tokens(m), es = dtype_bytes(m->act_dtype);
    Status st = ST_OK;
    for (uint32_t r = 0; !st && r < m->tp; r++)
        st = tile_cast(m, (const char *)dy + (uint64_t)r * n * N * es, n, N, m->recipe.gemm_bwd, NULL, NULL,
                       col + (uint64_t)r * N * n, col_s + (uint64_t)r * N * tiles(n), e);
    return st;
}

Status model_tp_block_wgrad(Model *m, uint32_t l, LinearKind k, GemmDesc *wg, Err *e)
{
    const uint64_t n = model_sp_tokens(m), K = wg->n, N = wg->m, seg = model_tp_block_seg(K, n);
    uint8_t *full = m->act.tp_full;
    /* the saved transposed shards, codes then scales, gathered again */
    Status st =
        m->tpc->all_gather(m->tpc, CO_TP_AG_BWD, m->bk, model_la(m, l)->q_col[k], full, seg, m->recipe.gemm_fwd, e);
    GemmDesc g = *wg;
    g.k = n;
    for (uint32_t r = 0; !st && r < m->tp; r++) {
        g.a.ptr = (const uint8_t *)wg->a.ptr + (uint64_t)r * N * n;
        g.a.scale_inv = wg->a.scale_inv + (uint64_t)r * N * tiles(n);
        g.b.ptr = full + r * seg;
        g.b.scale_inv = (const float *)(const void *)(full + r * seg + K * n);
        st = m->bk->gemm(m->bk, &g, e);
    }
    return st;
}
