/* exec/model/model_linear.c — one block linear, forward and backward, in BF16 or FP8.
 *
 * FP8 (Hopper is TN only, so every FP8 operand is passed K-contiguous):
 *   fprop  Y  = X·Wᵀ   A = X  row-wise (B·T, K)  E4M3   B = W  row-wise (N, K)   E4M3
 *   dgrad  dX = dY·W   A = dY row-wise (B·T, N)  E5M2   B = Wᵀ (K, N)            E4M3
 *   wgrad  dW = dYᵀ·X  A = dYᵀ (N, B·T)          E5M2   B = Xᵀ (K, B·T)          E4M3
 * One fused cast per tensor produces the copies it needs: X → row (used now)
 * + transposed (saved for wgrad); W → row + transposed (kept for dgrad); dY →
 * row + transposed. Each cast writes the tensor's scale_inv beside its data.
 * Delayed scaling: casts use the scale of the last update and record their
 * amax in history row 0. Current scaling: the amax is taken first (one extra
 * read) and the scale computed from it before the cast.
 * BF16: the same products with the untransposed tensors (cuBLAS takes any
 * layout for BF16): dgrad B = W stored (N, K) K-outer; wgrad A = dY, B = X,
 * both K-outer. */
#include <string.h>

#include "exec/model/model_internal.h"

static float *hist0(ScalingBank *b, uint32_t slot) { return b->amax_history + slot; }

/* Make bank->scale[slot] ready for a cast of `in` (n values): current scaling
 * measures the amax now; delayed scaling already has its scale. Returns the
 * amax pointer the cast should record into (NULL when already measured). */
static Status prepare_scale(Model *m, ScalingBank *bank, uint32_t slot, const void *in, Dtype dt, uint64_t n,
                            float **amax_out, Err *e)
{
    Backend *bk = m->bk;
    *amax_out = hist0(bank, slot);
    if (m->recipe.scaling != SCALING_CURRENT) return ST_OK;
    Status st = bk->memset0(bk, hist0(bank, slot), sizeof(float), e);
    if (!st) st = bk->amax(bk, in, dt, n, hist0(bank, slot), e);
    if (!st) st = model_tp_amax(m, hist0(bank, slot), e); /* TP: the whole tensor's amax */
    if (!st) st = bk->scaling_from_amax(bk, 1, bank->fmt, EXEC_FP8_MARGIN, hist0(bank, slot), bank->scale + slot, e);
    *amax_out = NULL;
    return st;
}

/* Cast `in` (rows, cols) of dtype dt (dequantized by in_scale_inv when set)
 * with the bank's slot: row-wise and/or transposed FP8 copies. */
static Status cast(Model *m, ScalingBank *bank, uint32_t slot, const void *in, Dtype dt, const float *in_scale_inv,
                   uint64_t rows, uint64_t cols, void *out_row, void *out_col, Err *e)
{
    float *amax;
    Status st = ST_OK;
    if (in_scale_inv && m->recipe.scaling == SCALING_CURRENT) {
        /* the amax must be of the dequantized values: measure it with the cast itself (no output) */
        CastDesc mc = {.in = in,
                       .in_dtype = dt,
                       .in_scale_inv = in_scale_inv,
                       .rows = rows,
                       .cols = cols,
                       .amax = hist0(bank, slot)};
        st = m->bk->memset0(m->bk, hist0(bank, slot), sizeof(float), e);
        if (!st) st = m->bk->cast_transpose(m->bk, &mc, e);
        if (!st) st = model_tp_amax(m, hist0(bank, slot), e);
        if (!st)
            st = m->bk->scaling_from_amax(m->bk, 1, bank->fmt, EXEC_FP8_MARGIN, hist0(bank, slot), bank->scale + slot,
                                          e);
        amax = NULL;
    } else {
        st = prepare_scale(m, bank, slot, in, dt, rows * cols, &amax, e);
    }
    if (st) return st;
    CastDesc c = {.in = in,
                  .in_dtype = dt,
                  .in_scale_inv = in_scale_inv,
                  .rows = rows,
                  .cols = cols,
                  .out_dtype = bank->fmt,
                  .out_row = out_row,
                  .out_col = out_col,
                  .scale = bank->scale + slot,
                  .scale_inv = bank->scale_inv + slot,
                  .amax = amax};
    return m->bk->cast_transpose(m->bk, &c, e);
}

/* Cast a block weight with its forward slot: into row (N, K) and/or col (K, N).
 * record = 1 records its amax (the forward's cast); 0 recasts with the
 * current scale (the backward's transposed copy when none is kept). */
static Status cast_weight(Model *m, ModelParam *w, uint32_t sw, void *row, void *col, int record, Err *e)
{
    const StateSet *ws = &m->recipe.gemm;
    const void *src = w->weight ? w->weight : w->master;
    Dtype sdt = w->weight ? ws->dt[STATE_WEIGHT] : ws->dt[STATE_MASTER];
    float *rec16;
    const float *sinv = model_fp16_src(m, w, &rec16) == src && rec16 ? rec16 + REC_SCALE_INV : NULL;
    ScalingBank *fb = &m->sc.fwd;
    if (record) return cast(m, fb, sw, src, sdt, sinv, w->rows, w->cols, row, col, e);
    CastDesc c = {.in = src,
                  .in_dtype = sdt,
                  .in_scale_inv = sinv,
                  .rows = w->rows,
                  .cols = w->cols,
                  .out_dtype = fb->fmt,
                  .out_row = row,
                  .out_col = col,
                  .scale = fb->scale + sw,
                  .scale_inv = fb->scale_inv + sw};
    return m->bk->cast_transpose(m->bk, &c, e);
}

static ModelParam *weight_of(Model *m, uint32_t l, LinearKind k)
{
    static const ParamKind w[LIN_KINDS] = {PK_QKV_W, PK_PROJ_W,   PK_FC1_W,  PK_FC2_W,   PK_QDOWN_W,
                                           PK_QUP_W, PK_KVDOWN_W, PK_KVUP_W, PK_EHPROJ_W};
    return model_find_param(m, w[k], (int)l);
}

/* NULL when the model has no linear biases. */
static ModelParam *bias_of(Model *m, uint32_t l, LinearKind k)
{
    static const ParamKind b[LIN_COUNT] = {PK_QKV_B, PK_PROJ_B, PK_FC1_B, PK_FC2_B};
    return m->spec.linear_bias && (int)k < LIN_COUNT ? model_find_param(m, b[k], (int)l) : NULL;
}

void *model_linear_input(Model *m, uint32_t layer, LinearKind k)
{
    void *x = model_linear_saved(m, model_la(m, layer), k);
    return x ? x : m->act.t_in;
}

static uint8_t *wrow(Model *m, ModelParam *w) { return w->wq_row ? w->wq_row : m->act.t_wrow; }

/* An FP8 GEMM operand: K contiguous (FP8 GEMMs are TN only on Hopper), in the
 * bank's format, with the per-tensor scale_inv of its slot. */
static GemmOperand fp8_operand(const void *ptr, const ScalingBank *bank, uint32_t slot)
{
    return (GemmOperand){.ptr = ptr,
                         .dtype = bank->fmt,
                         .layout = GEMM_K_INNER,
                         .scale_inv = bank->scale_inv + slot,
                         .scale_gran = GRAN_TENSOR};
}

/* Block scaling (DeepSeek-V3, exec_block_scaled): a (rows, cols) tensor cast into its row-wise copy and/or
 * its transposed one, each with its own blocks of gran (1x128 tiles: the transposed copy re-tiled along
 * the other dimension) and their scale_inv arrays. */
static Status block_cast(Model *m, const void *in, Dtype dt, uint64_t rows, uint64_t cols, Granularity gran, Dtype fmt,
                         uint8_t *row, float *row_s, uint8_t *col, float *col_s, Err *e)
{
    CastDesc c = {.in = in,
                  .in_dtype = dt,
                  .rows = rows,
                  .cols = cols,
                  .out_dtype = fmt,
                  .out_row = row,
                  .out_col = col,
                  .gran = gran,
                  .row_scale_inv = row_s,
                  .col_scale_inv = col_s};
    return m->bk->cast_transpose(m->bk, &c, e);
}

/* A block-scaled FP8 GEMM operand, K contiguous. */
static GemmOperand block_operand(const void *ptr, Dtype fmt, const float *sinv, Granularity gran)
{
    return (GemmOperand){.ptr = ptr, .dtype = fmt, .layout = GEMM_K_INNER, .scale_inv = sinv, .scale_gran = gran};
}

/* One linear layer's GEMM sizes (Y (M, N) = X (M, K) · Wᵀ), activation dtype and parameters. */
typedef struct {
    uint64_t M, N, K;
    Dtype A;
    ModelParam *w, *b; /* b: NULL without biases */
} Lin;

static Lin lin_of(Model *m, uint32_t l, LinearKind k)
{
    return (Lin){.M = model_tp_dup(m, k) ? model_sp_tokens(m) : model_tokens(m), /* TP: a duplicated one's shard */
                 .N = model_lin_n(m, l, k),
                 .K = model_lin_k(m, l, k),
                 .A = m->act_dtype,
                 .w = weight_of(m, l, k),
                 .b = bias_of(m, l, k)};
}

/* A column-parallel linear's FP8 input (TP): this rank's shard cast with the
 * tensor's scale (row-wise into a working copy, transposed (K, B·T/tp) into
 * the saved one) and the row-wise codes all-gathered into the GEMM's operand
 * (tp_allgather_fwd in FP8). */
static Status tp_fp8_input(Model *m, uint32_t l, LinearKind k, const void *x, uint64_t K, Err *e)
{
    LayerActs *la = model_la(m, l);
    Status st = cast(m, &m->sc.fwd, model_slot_x(m, l, k), x, m->act_dtype, NULL, model_sp_tokens(m), K, m->act.tp_qloc,
                     la->q_col[k], e);
    if (!st) st = model_tp_gather(m, CO_TP_AG_FWD, m->act.tp_qloc, m->act.t_qrow, K, m->recipe.gemm_fwd, e);
    return st;
}

Status model_linear_fwd(Model *m, uint32_t l, LinearKind k, const void *x, void *y, Err *e)
{
    Backend *bk = m->bk;
    const Lin L = lin_of(m, l, k);
    const uint64_t M = L.M, K = L.K, N = L.N;
    const Dtype A = L.A;
    const int col = model_tp_col(m, k), row = model_tp_row(m, k);
    /* TP: a row-parallel output is a partial sum, reduce-scattered below (rank 0 adds the bias) */
    void *out = row ? m->act.tp_fwd : y;
    GemmDesc d = {.m = M,
                  .n = N,
                  .k = K,
                  .accum = GEMM_OVERWRITE,
                  .bias = L.b && (!row || m->tp_rank == 0) ? L.b->weight : NULL,
                  .bias_dtype = m->recipe.other.dt[STATE_WEIGHT]};
    d.d = (GemmOutput){.ptr = out, .dtype = A};
    Status st = ST_OK;
    if (!recipe_fp8_gemm(&m->recipe)) {
        if (col) { /* this rank's tokens gathered (tp_allgather_fwd) */
            st = model_tp_gather(m, CO_TP_AG_FWD, x, m->act.tp_fwd, K, A, e);
            x = m->act.tp_fwd;
        }
        d.a = (GemmOperand){.ptr = x, .dtype = A, .layout = GEMM_K_INNER};
        d.b = (GemmOperand){.ptr = L.w->weight, .dtype = A, .layout = GEMM_K_INNER};
        if (!st) st = bk->gemm(bk, &d, e);
        if (!st && row) st = model_tp_scatter(m, CO_TP_RS_FWD, out, y, N, e);
        return st;
    }
    LayerActs *la = model_la(m, l);
    if (exec_block_scaled(&m->recipe)) { /* X 1x128 tiles, W 128x128 blocks, E4M3 (TP: model_tp_block.c) */
        const Recipe *r = &m->recipe;
        const Dtype f = r->gemm_fwd;
        ModelParam *w = L.w;
        st = block_cast(m, w->weight, r->gemm.dt[STATE_WEIGHT], N, K, r->weight_gran, f, w->wq_row, w->wq_row_s,
                        w->wq_col, w->wq_col_s, e);
        d.b = block_operand(w->wq_row, f, w->wq_row_s, r->weight_gran);
        d.acc_precision = GEMM_ACC_TC14; /* the report's 14-bit accumulation, promoted every 128 of K */
        if (col) {                       /* the shard's tiles cast, their codes and scales gathered */
            d.a = block_operand(NULL, f, NULL, r->act_gran);
            return st ? st : model_tp_block_fwd(m, l, k, x, &d, e);
        }
        if (!st)
            st = block_cast(m, x, A, M, K, r->act_gran, f, m->act.t_qrow, m->act.t_qrow_s, la->q_col[k], la->q_col_s[k],
                            e);
        d.a = block_operand(m->act.t_qrow, f, m->act.t_qrow_s, r->act_gran);
        if (!st) st = bk->gemm(bk, &d, e);
        if (!st && row) st = model_tp_scatter(m, CO_TP_RS_FWD, out, y, N, e);
        return st;
    }
    ScalingBank *fb = &m->sc.fwd;
    uint32_t sx = model_slot_x(m, l, k), sw = model_slot_w(m, l, k);
    /* X: row-wise for this GEMM, transposed saved for wgrad (when saved in FP8); TP's
     * column-parallel input: the shard cast, its codes gathered (the shard is what is saved) */
    if (col)
        st = tp_fp8_input(m, l, k, x, K, e);
    else
        st = cast(m, fb, sx, x, A, NULL, M, K, m->act.t_qrow, la->q_col[k], e);
    /* W: row-wise for fprop and, when the recipe keeps it, transposed for dgrad, cast from the
     * working copy; FP8-LM's copies of the master are cast once per step after the optimizer
     * (model_copies.c) and read as they are */
    if (!st && !model_copies_once(m, L.w)) st = cast_weight(m, L.w, sw, wrow(m, L.w), L.w->wq_col, 1, e);
    if (st) return st;
    if (!st && m->act.pp_xsinv && la->q_col[k]) /* PP: the saved copy's scale_inv, kept for its backward */
        st = bk->convert(bk, fb->scale_inv + sx, DT_FP32, model_saved_sinv(m, l, k), DT_FP32, 1, NULL, e);
    if (st) return st;
    d.a = fp8_operand(m->act.t_qrow, fb, sx);
    d.b = fp8_operand(wrow(m, L.w), fb, sw);
    d.acc_precision = GEMM_ACC_FAST; /* TE: fast accumulation in fprop only */
    st = bk->gemm(bk, &d, e);
    if (!st && row) st = model_tp_scatter(m, CO_TP_RS_FWD, out, y, N, e);
    return st;
}

/* TP, a column-parallel linear's weight gradient: its input gathered again
 * from the saved shard (tp_allgather_bwd, in the dtype the forward gathered)
 * into tp_full once the input gradient has left it: BF16 (B·T, K) for wgrad's
 * B; FP8 the transposed shards rank after rank (tp, K, B·T/tp), which wgrad
 * reads piece by piece (tp_wgrad). */
static Status tp_regather(Model *m, uint32_t l, LinearKind k, uint64_t K, GemmOperand *b, Err *e)
{
    LayerActs *la = model_la(m, l);
    b->ptr = m->act.tp_full;
    if (!recipe_fp8_gemm(&m->recipe))
        return model_tp_gather(m, CO_TP_AG_BWD, la->act_in[k], m->act.tp_full, K, m->act_dtype, e);
    return model_tp_gather(m, CO_TP_AG_BWD, la->q_col[k], m->act.tp_full, K, m->recipe.gemm_fwd, e);
}

/* The FP8 wgrad of a TP column-parallel linear: dW += Σ_r dYᵀ[:, rank r's tokens] · X_r,
 * A the columns of the transposed output gradient (ld B·T), B rank r's transposed shard. */
static Status tp_wgrad(Model *m, GemmDesc *wg, Err *e)
{
    const uint64_t n = model_sp_tokens(m), K = wg->n;
    const uint8_t *a0 = wg->a.ptr, *b0 = wg->b.ptr;
    GemmDesc g = *wg;
    g.k = n;
    g.a.ld = model_tokens(m);
    Status st = ST_OK;
    for (uint32_t r = 0; !st && r < m->tp; r++) {
        g.a.ptr = a0 + r * n;
        g.b.ptr = b0 + (uint64_t)r * K * n;
        st = m->bk->gemm(m->bk, &g, e);
    }
    return st;
}

static Status wgrad_target(Model *m, ModelParam *p, GemmOutput *o)
{
    o->ptr = model_grad_target(m, p, 0);
    o->dtype = DT_FP32;
    return ST_OK;
}

Status model_linear_bwd(Model *m, uint32_t l, LinearKind k, const void *dy, void *dx, Err *e)
{
    Backend *bk = m->bk;
    const Lin L = lin_of(m, l, k);
    const uint64_t M = L.M, K = L.K, N = L.N;
    const Dtype A = L.A;
    ModelParam *w = L.w, *b = L.b;
    LayerActs *la = model_la(m, l);
    const int col = model_tp_col(m, k), row = model_tp_row(m, k);
    /* TP: a row-parallel bias sees this rank's tokens of the output gradient (all-reduced after the step) */
    const void *dy_bias = dy;
    const uint64_t M_bias = row ? model_sp_tokens(m) : M;
    Status st = ST_OK;
    if (row) { /* TP: this rank's tokens of the output gradient gathered (tp_allgather_bwd) */
        st = model_tp_gather(m, CO_TP_AG_BWD, dy, m->act.tp_full, N, A, e);
        dy = m->act.tp_full;
    }
    /* TP: a column-parallel input gradient is a partial sum, reduce-scattered below */
    void *dxg = col && dx ? m->act.tp_full : dx;
    GemmDesc dg = {.m = M, .n = K, .k = N, .accum = GEMM_OVERWRITE, .d = {.ptr = dxg, .dtype = A}};
    GemmDesc wg = {.m = N, .n = K, .k = M, .accum = GEMM_ACCUMULATE};
    wgrad_target(m, w, &wg.d);
    const void *x = model_linear_saved(m, la, k);
    const uint8_t *xcol = la->q_col[k]; /* TP column-parallel: the shard, replaced by tp_regather below */
    if (st) return st;
    if (!recipe_fp8_gemm(&m->recipe)) {
        dg.a = (GemmOperand){.ptr = dy, .dtype = A, .layout = GEMM_K_INNER};
        dg.b = (GemmOperand){.ptr = w->weight, .dtype = A, .layout = GEMM_K_OUTER};
        wg.a = (GemmOperand){.ptr = dy, .dtype = A, .layout = GEMM_K_OUTER};
        wg.b = (GemmOperand){.ptr = x, .dtype = A, .layout = GEMM_K_OUTER};
    } else if (exec_block_scaled(&m->recipe)) {
        /* dY both layouts in 1x128 tiles (the transposed copy tiled along the tokens, wgrad's K); dgrad
         * against the kept transposed weight (its 128x128 blocks transposed), wgrad against the saved input */
        const Recipe *r = &m->recipe;
        const Dtype fb8 = r->gemm_bwd, ff8 = r->gemm_fwd;
        ModelActs *a = &m->act;
        /* TP column-parallel: dY's transposed copy cast rank piece by rank piece (model_tp_block_wgrad) */
        st = block_cast(m, dy, A, M, N, r->act_gran, fb8, a->d_qrow, a->d_qrow_s, col ? NULL : a->d_qcol,
                        col ? NULL : a->d_qcol_s, e);
        if (!st && col) st = model_tp_block_dy_col(m, dy, N, a->d_qcol, a->d_qcol_s, e);
        if (st) return st;
        dg.a = block_operand(a->d_qrow, fb8, a->d_qrow_s, r->act_gran);
        dg.b = block_operand(w->wq_col, ff8, w->wq_col_s, r->weight_gran);
        wg.a = block_operand(a->d_qcol, fb8, a->d_qcol_s, r->act_gran);
        wg.b = block_operand(xcol, ff8, la->q_col_s[k], r->act_gran);
        dg.acc_precision = wg.acc_precision = GEMM_ACC_TC14; /* all three GEMMs, as the report's */
    } else {
        ScalingBank *fb = &m->sc.fwd, *bb = &m->sc.bwd;
        uint32_t sx = model_slot_x(m, l, k), sw = model_slot_w(m, l, k), sd = model_slot_dy(m, l, k);
        st = cast(m, bb, sd, dy, A, NULL, M, N, m->act.d_qrow, m->act.d_qcol, e);
        if (!st && !xcol) { /* saved in BF16: recast its transpose (no amax: the forward recorded it) */
            CastDesc c = {.in = x,
                          .in_dtype = A,
                          .rows = M,
                          .cols = K,
                          .out_dtype = fb->fmt,
                          .out_col = m->act.t_qcol,
                          .scale = fb->scale + sx,
                          .scale_inv = fb->scale_inv + sx};
            st = bk->cast_transpose(bk, &c, e);
            xcol = m->act.t_qcol;
        }
        const uint8_t *wcol = w->wq_col;
        if (!st && !wcol) { /* no kept transposed copy: recast it (the forward's copy is gone) */
            st = cast_weight(m, w, sw, NULL, m->act.t_wcol, 0, e);
            wcol = m->act.t_wcol;
        }
        if (st) return st;
        dg.a = fp8_operand(m->act.d_qrow, bb, sd);
        dg.b = fp8_operand(wcol, fb, sw);
        wg.a = fp8_operand(m->act.d_qcol, bb, sd);
        wg.b = fp8_operand(xcol, fb, sx);
        if (xcol == la->q_col[k]) wg.b.scale_inv = model_saved_sinv(m, l, k); /* PP: this micro-batch's */
    }
    if (dx) st = bk->gemm(bk, &dg, e);
    if (!st && dx && col) st = model_tp_scatter(m, CO_TP_RS_BWD, dxg, dx, K, e);
    const int blk = exec_block_scaled(&m->recipe);
    if (!st && col && !blk) st = tp_regather(m, l, k, K, &wg.b, e);
    if (!st) st = model_grad_begin(m, w, 0, e);
    if (!st && col && blk)
        st = model_tp_block_wgrad(m, l, k, &wg, e); /* the saved shards gathered again, wgrad rank by rank */
    else if (!st)
        st = col && recipe_fp8_gemm(&m->recipe) ? tp_wgrad(m, &wg, e) : bk->gemm(bk, &wg, e);
    if (!st) st = model_grad_commit(m, w, 0, e);
    if (!st && b) st = model_grad_begin(m, b, 0, e);
    if (!st && b) st = bk->bias_grad(bk, dy_bias, A, M_bias, N, model_grad_target(m, b, 0), e);
    if (!st && b) st = model_grad_commit(m, b, 0, e);
    return st;
}
