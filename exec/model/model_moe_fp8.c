/* exec/model/model_moe_fp8.c — the routed experts' grouped GEMMs under an FP8
 * recipe with per-tensor scales (te-fp8: delayed, te-fp8-current: current),
 * as Transformer Engine's GroupedLinear runs them: every expert is its own
 * linear with its own scaling records for X, W and dY (ModelScaling's expert
 * slots, model_slot_expert; the plan counts one record set per expert), and
 * the casts are the dense linears' (model_linear.c) applied to each expert's
 * rows [r_g, r_g + m_g) of the permuted tensors:
 *   fprop  Y_g  = X_g·W_gᵀ    A = X_g row-wise   E4M3   B = W_g row-wise (N, K)
 *   dgrad  dX_g = dY_g·W_g    A = dY_g row-wise  E5M2   B = W_gᵀ (K, N) (the kept copy)
 *   wgrad  dW_g = dY_gᵀ·X_g   A = dYᵀ columns    E5M2   B = Xᵀ columns (saved)
 * The transposed copies of X and dY are (cols, R) with expert g's columns at
 * r_g (CastDesc.col_ld = R), the K_INNER form grouped_gemm_wgrad takes. The
 * forward saves only the transposed FP8 inputs (q_xin, q_xh); the backward's
 * recomputed expert output (for the combine weights' gradient) casts the
 * activation's output again with the scale the forward used, so it equals the
 * forward's bit for bit. The router stays in the activation dtype (Megatron
 * keeps it out of FP8). The deepseek-v3 recipe's block-scaled experts are
 * model_moe_block.c's. */
#include <stdlib.h>

#include "exec/model/model_internal.h"

/* Cast each expert's part of `in`: ragged rows (cnt, the permuted tensors (R, cols); the transposed copy
 * (cols, R)) or, with cnt NULL, E equal weights (n, cols) one after the other (the transposed copies
 * (cols, n) likewise). Slot slot0 + g; record 1: the forward's cast (current scaling measures the amax
 * first; delayed records it into history row 0), 0: the scale as it is. */
static Status cast_experts(Model *m, ScalingBank *b, uint32_t slot0, const int32_t *cnt, uint64_t n, const void *in,
                           Dtype dt, uint64_t cols, uint8_t *row, uint8_t *col, int record, Err *e)
{
    Backend *bk = m->bk;
    const uint32_t E = m->spec.experts;
    const uint64_t R = model_moe_rows(m), esz = dtype_bytes(dt);
    Status st = ST_OK;
    for (uint64_t g = 0, r0 = 0; !st && g < E; r0 += cnt ? (uint64_t)cnt[g] : n, g++) {
        uint64_t rows = cnt ? (uint64_t)cnt[g] : n;
        if (!rows) continue; /* an expert without tokens: no cast, its history row stays 0 */
        const uint32_t s = slot0 + (uint32_t)g;
        float *h0 = b->amax_history + s;
        const char *src = (const char *)in + r0 * cols * esz;
        if (record && m->recipe.scaling == SCALING_CURRENT) {
            st = bk->memset0(bk, h0, sizeof(float), e);
            if (!st) st = bk->amax(bk, src, dt, rows * cols, h0, e);
            if (!st) st = bk->scaling_from_amax(bk, 1, b->fmt, EXEC_FP8_MARGIN, h0, b->scale + s, e);
        }
        CastDesc c = {.in = src,
                      .in_dtype = dt,
                      .rows = rows,
                      .cols = cols,
                      .out_dtype = b->fmt,
                      .out_row = row ? row + r0 * cols : NULL,
                      .out_col = col ? col + (cnt ? r0 : r0 * cols) : NULL,
                      .col_ld = cnt && col ? R : 0,
                      .scale = b->scale + s,
                      .scale_inv = b->scale_inv + s,
                      .amax = record && m->recipe.scaling != SCALING_CURRENT ? h0 : NULL};
        if (!st) st = bk->cast_transpose(bk, &c, e);
    }
    return st;
}

static GemmOperand operand(const void *p, const ScalingBank *b, uint32_t slot0)
{
    return (GemmOperand){.ptr = p,
                         .dtype = b->fmt,
                         .layout = GEMM_K_INNER,
                         .scale_inv = b->scale_inv + slot0,
                         .scale_gran = GRAN_TENSOR};
}

/* Y (R, N) = X_g · W_gᵀ from the FP8 row-wise copies a (R, K) with slots ax.. and w (E, N, K) with wx... */
static Status grouped(Model *m, const LayerActs *la, GemmOperand a, GemmOperand w, uint64_t n, uint64_t k,
                      GemmAccPrecision acc, void *y, Err *e)
{
    GroupedGemmDesc d = {.groups = m->spec.experts,
                         .rows = model_moe_rows(m),
                         .n = n,
                         .k = k,
                         .counts = la->r_counts,
                         .a = a,
                         .b = w,
                         .d = {.ptr = y, .dtype = m->act_dtype},
                         .accum = GEMM_OVERWRITE,
                         .acc_precision = acc};
    return m->bk->grouped_gemm(m->bk, &d, e);
}

/* dW_g (M, N) += dY_gᵀ · X_g from the transposed copies dyt (M, R) and xt (N, R). */
static Status wgrad(Model *m, const LayerActs *la, ModelParam *w, GemmOperand dyt, GemmOperand xt, uint64_t M,
                    uint64_t N, Err *e)
{
    GroupedWgradDesc d = {.groups = m->spec.experts,
                          .rows = model_moe_rows(m),
                          .m = M,
                          .n = N,
                          .counts = la->r_counts,
                          .a = dyt,
                          .b = xt,
                          .accum = GEMM_ACCUMULATE};
    Status st = model_grad_begin(m, w, 0, e);
    d.d = (GemmOutput){.ptr = model_grad_target(m, w, 0), .dtype = DT_FP32};
    if (!st) st = m->bk->grouped_gemm_wgrad(m->bk, &d, e);
    if (!st) st = model_grad_commit(m, w, 0, e);
    return st;
}

int32_t *model_moe_host_counts(Model *m, const LayerActs *la, Err *e)
{
    int32_t *c = malloc((size_t)m->spec.experts * sizeof *c);
    if (!c) {
        err_set(e, ST_NOMEM, "out of memory");
        return NULL;
    }
    if (m->bk->copy_to_host(m->bk, c, la->r_counts, (size_t)m->spec.experts * sizeof *c, e)) {
        free(c);
        return NULL;
    }
    return c;
}

/* A weight's E experts cast into its kept copies (the forward's cast: recorded). */
static Status cast_weight(Model *m, uint32_t l, int fc2, ModelParam *w, Err *e)
{
    const uint64_t n = w->rows / m->spec.experts;
    return cast_experts(m, &m->sc.fwd, model_slot_expert(m, l, fc2, 1), NULL, n, w->weight,
                        m->recipe.gemm.dt[STATE_WEIGHT], w->cols, w->wq_row, w->wq_col, 1, e);
}

Status model_moe_fp8_fwd(Model *m, uint32_t l, const void *xin, ModelParam *w1, ModelParam *w2, Err *e)
{
    if (exec_block_scaled(&m->recipe)) return model_moe_block_fwd(m, l, xin, w1, w2, e);
    const ModelSpec *s = &m->spec;
    LayerActs *la = model_la(m, l);
    ModelActs *a = &m->act;
    ScalingBank *fb = &m->sc.fwd;
    const uint64_t C = s->hidden, Fe = s->expert_ffn, kf = spec_fc1_k(s), R = model_moe_rows(m);
    const Dtype A = m->act_dtype;
    int32_t *cnt = model_moe_host_counts(m, la, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    const uint32_t x1 = model_slot_expert(m, l, 0, 0), wl1 = model_slot_expert(m, l, 0, 1);
    const uint32_t x2 = model_slot_expert(m, l, 1, 0), wl2 = model_slot_expert(m, l, 1, 1);
    /* FC1: the dispatched inputs, row-wise now, transposed saved for wgrad */
    Status st = cast_experts(m, fb, x1, cnt, 0, xin, A, C, a->t_qrow, la->q_xin, 1, e);
    if (!st) st = cast_weight(m, l, 0, w1, e);
    if (!st)
        st = grouped(m, la, operand(a->t_qrow, fb, x1), operand(w1->wq_row, fb, wl1), kf * Fe, C, GEMM_ACC_FAST,
                     la->x_fc1, e);
    if (!st) st = model_act_fwd(m, R, Fe, la->x_fc1, a->x_h, e);
    /* FC2 */
    if (!st) st = cast_experts(m, fb, x2, cnt, 0, a->x_h, A, Fe, a->t_qrow, la->q_xh, 1, e);
    if (!st) st = cast_weight(m, l, 1, w2, e);
    if (!st)
        st = grouped(m, la, operand(a->t_qrow, fb, x2), operand(w2->wq_row, fb, wl2), C, Fe, GEMM_ACC_FAST, a->x_y, e);
    free(cnt);
    return st;
}

Status model_moe_fp8_recompute(Model *m, uint32_t l, ModelParam *w2, Err *e)
{
    if (exec_block_scaled(&m->recipe)) return model_moe_block_recompute(m, l, w2, e);
    const ModelSpec *s = &m->spec;
    LayerActs *la = model_la(m, l);
    ModelActs *a = &m->act;
    ScalingBank *fb = &m->sc.fwd;
    const uint64_t C = s->hidden, Fe = s->expert_ffn, R = model_moe_rows(m);
    int32_t *cnt = model_moe_host_counts(m, la, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    const uint32_t x2 = model_slot_expert(m, l, 1, 0), wl2 = model_slot_expert(m, l, 1, 1);
    /* the activation's output again (into x_dh2, free until FC2's dgrad), cast with the forward's scales
     * (not recorded) into d_qrow (free until the output gradient's cast) */
    Status st = model_act_fwd(m, R, Fe, la->x_fc1, a->x_dh2, e);
    if (!st) st = cast_experts(m, fb, x2, cnt, 0, a->x_dh2, m->act_dtype, Fe, a->d_qrow, NULL, 0, e);
    if (!st)
        st = grouped(m, la, operand(a->d_qrow, fb, x2), operand(w2->wq_row, fb, wl2), C, Fe, GEMM_ACC_FAST, a->x_y, e);
    free(cnt);
    return st;
}

Status model_moe_fp8_bwd(Model *m, uint32_t l, ModelParam *w1, ModelParam *w2, Err *e)
{
    if (exec_block_scaled(&m->recipe)) return model_moe_block_bwd(m, l, w1, w2, e);
    const ModelSpec *s = &m->spec;
    LayerActs *la = model_la(m, l);
    ModelActs *a = &m->act;
    ScalingBank *fb = &m->sc.fwd, *bb = &m->sc.bwd;
    const uint64_t C = s->hidden, Fe = s->expert_ffn, kf = spec_fc1_k(s), R = model_moe_rows(m);
    const Dtype A = m->act_dtype;
    int32_t *cnt = model_moe_host_counts(m, la, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    const uint32_t x1 = model_slot_expert(m, l, 0, 0), wl1 = model_slot_expert(m, l, 0, 1),
                   d1 = model_slot_expert(m, l, 0, 2);
    const uint32_t x2 = model_slot_expert(m, l, 1, 0), wl2 = model_slot_expert(m, l, 1, 1),
                   d2 = model_slot_expert(m, l, 1, 2);
    /* FC2: dY (x_dy) both layouts; d(activation output) = dY · W2 (the kept transposed copy (Fe, C)) */
    Status st = cast_experts(m, bb, d2, cnt, 0, a->x_dy, A, C, a->d_qrow, a->d_qcol, 1, e);
    if (!st)
        st = grouped(m, la, operand(a->d_qrow, bb, d2), operand(w2->wq_col, fb, wl2), Fe, C, GEMM_ACC_SPLIT, a->x_dh2,
                     e);
    if (!st) st = wgrad(m, la, w2, operand(a->d_qcol, bb, d2), operand(la->q_xh, fb, x2), C, Fe, e);
    if (!st) st = model_act_bwd(m, R, Fe, la->x_fc1, a->x_dh2, a->x_dh1, e);
    /* FC1: d(expert inputs) into x_y (its outputs are spent) */
    if (!st) st = cast_experts(m, bb, d1, cnt, 0, a->x_dh1, A, kf * Fe, a->d_qrow, a->d_qcol, 1, e);
    if (!st)
        st = grouped(m, la, operand(a->d_qrow, bb, d1), operand(w1->wq_col, fb, wl1), C, kf * Fe, GEMM_ACC_SPLIT,
                     a->x_y, e);
    if (!st) st = wgrad(m, la, w1, operand(a->d_qcol, bb, d1), operand(la->q_xin, fb, x1), kf * Fe, C, e);
    free(cnt);
    return st;
}
