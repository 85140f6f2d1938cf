/* exec/model/model_moe_block.c — the routed experts' grouped GEMMs under the
 * deepseek-v3 recipe (exec_block_scaled): E4M3 operands with FP32 scales of
 * their own blocks, computed from each block's amax as the cast runs (current
 * scaling: nothing is kept between steps, nothing to record), and the report's
 * 14-bit accumulation promoted every 128 along K (GEMM_ACC_TC14), as the dense
 * linears run it (model_linear.c), applied to each expert's rows [r_g, r_g + m_g):
 *   fprop  Y_g  = X_g·W_gᵀ   X_g 1x128 tiles along K       W_g 128x128 blocks (N, K)
 *   dgrad  dX_g = dY_g·W_g   dY_g 1x128 tiles              W_gᵀ 128x128 blocks (K, N), kept
 *   wgrad  dW_g = dY_gᵀ·X_g  dYᵀ and Xᵀ 1x128 tiles along the tokens, from the expert's first row
 * Every expert's weights are cast on their own, so its blocks are its own (E·ceil(N/128)·ceil(K/128)
 * scales a copy). The row-wise copies' tiles run along K inside one row, so they are the same cast per
 * expert or of all rows; the transposed copies (cols, R) hold expert g's rows as columns r_g.. and are
 * tiled from there: (cols, ceil(m_g/128)) scales at cols·t_g, t_g = Σ_{h<g} ceil(m_h/128) (the grouped
 * GEMMs' convention, exec/backend/backend_desc.h). At most min(E, R) + ⌊(R − min(E, R))/128⌋ tiles a column:
 * model_moe_tiles, what the arena holds and the plan's act_moe counts. The experts and rows are a
 * MoeF8 view's (one rank's, or the experts' side of expert parallelism). The forward saves the transposed
 * inputs of FC1 and FC2 with their tiles; the backward's recomputed expert output casts the activation's
 * output again, which gives the forward's bits (the scales are functions of the data). */
#include <stdlib.h>

#include "exec/model/model_internal.h"

static uint64_t tiles(uint64_t n) { return (n + 127) / 128; }

uint64_t model_moe_tiles(uint64_t rows, uint64_t experts)
{
    uint64_t n = experts < rows ? experts : rows; /* the groups that can hold a row */
    return n + (rows - n) / 128;                  /* n − 1 groups of one row, the rest in one */
}

/* Each expert's rows of in (v->rows, cols), 1x128 tiles: the row-wise copy into row (rows, cols) with row_s
 * (rows, ceil(cols/128)), the transposed into col (cols, rows) with col_s as above. NULL: that copy not made. */
static Status cast_rows(Model *m, const MoeF8 *v, const int32_t *cnt, const void *in, uint64_t cols, Dtype fmt,
                        uint8_t *row, float *row_s, uint8_t *col, float *col_s, Err *e)
{
    const uint64_t R = v->rows, esz = dtype_bytes(m->act_dtype), nt = tiles(cols);
    Status st = ST_OK;
    for (uint64_t g = 0, r0 = 0, t0 = 0; !st && g < v->groups; r0 += (uint64_t)cnt[g], g++) {
        const uint64_t rows = (uint64_t)cnt[g];
        if (!rows) continue;
        CastDesc c = {.in = (const char *)in + r0 * cols * esz,
                      .in_dtype = m->act_dtype,
                      .rows = rows,
                      .cols = cols,
                      .out_dtype = fmt,
                      .gran = m->recipe.act_gran,
                      .out_row = row ? row + r0 * cols : NULL,
                      .row_scale_inv = row ? row_s + r0 * nt : NULL,
                      .out_col = col ? col + r0 : NULL,
                      .col_ld = col ? R : 0,
                      .col_scale_inv = col ? col_s + cols * t0 : NULL};
        st = m->bk->cast_transpose(m->bk, &c, e);
        t0 += tiles(rows);
    }
    return st;
}

/* A weight's local experts (G·n, K), each (n, K) cast on its own into both kept copies with 128x128 blocks. */
static Status cast_weight(Model *m, const MoeF8 *v, ModelParam *w, Err *e)
{
    const Recipe *r = &m->recipe;
    const uint64_t G = v->groups, n = w->rows / G, K = w->cols, esz = dtype_bytes(r->gemm.dt[STATE_WEIGHT]);
    const uint64_t nb = tiles(n) * tiles(K);           /* 128x128 blocks of (n, K) and of (K, n) alike */
    Status st = model_moe_lap(m, MOE_PART_ACT, ST_OK); /* the casts before it; the weights' own: the rest */
    for (uint64_t g = 0; !st && g < G; g++) {
        CastDesc c = {.in = (const char *)w->weight + g * n * K * esz,
                      .in_dtype = r->gemm.dt[STATE_WEIGHT],
                      .rows = n,
                      .cols = K,
                      .out_dtype = r->gemm_fwd,
                      .gran = r->weight_gran,
                      .out_row = w->wq_row + g * n * K,
                      .row_scale_inv = w->wq_row_s + g * nb,
                      .out_col = w->wq_col + g * n * K,
                      .col_scale_inv = w->wq_col_s + g * nb};
        st = m->bk->cast_transpose(m->bk, &c, e);
    }
    return model_moe_lap(m, MOE_PART_OTHER, st);
}

static GemmOperand operand(const void *p, Dtype fmt, const float *s, Granularity gr)
{
    return (GemmOperand){.ptr = p, .dtype = fmt, .layout = GEMM_K_INNER, .scale_inv = s, .scale_gran = gr};
}

Status model_moe_block_fwd(Model *m, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e)
{
    const ModelSpec *s = &m->spec;
    const Recipe *r = &m->recipe;
    const uint64_t C = s->hidden, Fe = model_xffn(m), kf = spec_fc1_k(s);
    const Dtype f = r->gemm_fwd;
    int32_t *cnt = model_moe_host_counts(m, v, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    /* FC1: the dispatched inputs row-wise now, transposed saved for wgrad */
    uint8_t *row = v->x_q ? NULL : v->t_qrow; /* the FP8 dispatch delivered the row-wise copy */
    Status st = cast_rows(m, v, cnt, v->x_in, C, f, row, v->t_qrow_s, v->q_xin, v->q_xin_s, e);
    if (!st) st = cast_weight(m, v, w1, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->t_qrow, f, v->t_qrow_s, r->act_gran),
                                  operand(w1->wq_row, f, w1->wq_row_s, r->weight_gran), kf * Fe, C, GEMM_ACC_TC14,
                                  v->x_fc1, e);
    if (!st) st = model_act_fwd(m, v->rows, Fe, v->x_fc1, v->x_h, e);
    /* FC2 */
    if (!st) st = cast_rows(m, v, cnt, v->x_h, Fe, f, v->t_qrow, v->t_qrow_s, v->q_xh, v->q_xh_s, e);
    if (!st) st = cast_weight(m, v, w2, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->t_qrow, f, v->t_qrow_s, r->act_gran),
                                  operand(w2->wq_row, f, w2->wq_row_s, r->weight_gran), C, Fe, GEMM_ACC_TC14, v->y, e);
    return st;
}

Status model_moe_block_recompute(Model *m, const MoeF8 *v, ModelParam *w2, Err *e)
{
    const ModelSpec *s = &m->spec;
    const Recipe *r = &m->recipe;
    const uint64_t C = s->hidden, Fe = model_xffn(m);
    const Dtype f = r->gemm_fwd;
    int32_t *cnt = model_moe_host_counts(m, v, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    /* the activation's output again (into dh2, free until FC2's dgrad), cast row-wise into d_qrow (free until
     * the output gradient's cast) with its tiles in d_qrow_s */
    Status st = model_act_fwd(m, v->rows, Fe, v->x_fc1, v->dh2, e);
    if (!st) st = cast_rows(m, v, cnt, v->dh2, Fe, f, v->d_qrow, v->d_qrow_s, NULL, NULL, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->d_qrow, f, v->d_qrow_s, r->act_gran),
                                  operand(w2->wq_row, f, w2->wq_row_s, r->weight_gran), C, Fe, GEMM_ACC_TC14, v->y, e);
    return st;
}

Status model_moe_block_bwd(Model *m, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e)
{
    const ModelSpec *s = &m->spec;
    const Recipe *r = &m->recipe;
    const uint64_t C = s->hidden, Fe = model_xffn(m), kf = spec_fc1_k(s);
    const Dtype fb = r->gemm_bwd, ff = r->gemm_fwd;
    const Granularity ga = r->act_gran, gw = r->weight_gran;
    int32_t *cnt = model_moe_host_counts(m, v, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    /* FC2: dY both layouts; d(activation output) = dY · W2 (the kept transposed copy (Fe, C)) */
    uint8_t *row = v->dy_q ? NULL : v->d_qrow; /* the FP8 dispatch delivered the row-wise copy */
    Status st = cast_rows(m, v, cnt, v->dy, C, fb, row, v->d_qrow_s, v->d_qcol, v->d_qcol_s, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->d_qrow, fb, v->d_qrow_s, ga),
                                  operand(w2->wq_col, ff, w2->wq_col_s, gw), Fe, C, GEMM_ACC_TC14, v->dh2, e);
    if (!st)
        st = model_moe_f8_wgrad(m, v, w2, operand(v->d_qcol, fb, v->d_qcol_s, ga), operand(v->q_xh, ff, v->q_xh_s, ga),
                                C, Fe, GEMM_ACC_TC14, e);
    if (!st) st = model_act_bwd(m, v->rows, Fe, v->x_fc1, v->dh2, v->dh1, e);
    /* FC1: d(expert inputs) into y (its outputs are spent) */
    if (!st) st = cast_rows(m, v, cnt, v->dh1, kf * Fe, fb, v->d_qrow, v->d_qrow_s, v->d_qcol, v->d_qcol_s, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->d_qrow, fb, v->d_qrow_s, ga),
                                  operand(w1->wq_col, ff, w1->wq_col_s, gw), C, kf * Fe, GEMM_ACC_TC14, v->y, e);
    if (!st)
        st = model_moe_f8_wgrad(m, v, w1, operand(v->d_qcol, fb, v->d_qcol_s, ga),
                                operand(v->q_xin, ff, v->q_xin_s, ga), kf * Fe, C, GEMM_ACC_TC14, e);
    return st;
}
