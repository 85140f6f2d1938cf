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
 * r_g (CastDesc.col_ld = R), the K_INNER form grouped_gemm_wgrad takes. R and
 * the experts are a MoeF8 view's: one rank's every expert, or (expert
 * parallelism) the local experts on the rows dispatched to them. The
 * forward saves only the transposed FP8 inputs (q_xin, q_xh); the backward's
 * recomputed expert output (for the combine weights' gradient) casts the
 * activation's output again with the scale the forward cast it with (the
 * micro-batch's own, kept per slot: model_pp_expert_scales; the bank's where
 * nothing moved it, current scaling on one rank). The router stays in the activation dtype (Megatron
 * keeps it out of FP8). The deepseek-v3 recipe's block-scaled experts are
 * model_moe_block.c's. */
#include <stdlib.h>

#include "exec/model/model_internal.h"

MoeF8 model_moe_f8_tokens(Model *m, uint32_t l)
{
    LayerActs *la = model_la(m, l);
    ModelActs *a = &m->act;
    return (MoeF8){.groups = m->spec.experts,
                   .rows = model_moe_rows(m),
                   .counts = la->r_counts,
                   .x_in = a->x_y,
                   .x_fc1 = la->x_fc1,
                   .x_h = a->x_h,
                   .y = a->x_y,
                   .dy = a->x_dy,
                   .dh2 = a->x_dh2,
                   .dh1 = a->x_dh1,
                   .q_xin = la->q_xin,
                   .q_xh = la->q_xh,
                   .q_xin_s = la->q_xin_s,
                   .q_xh_s = la->q_xh_s,
                   .t_qrow = a->t_qrow,
                   .d_qrow = a->d_qrow,
                   .d_qcol = a->d_qcol,
                   .t_qrow_s = a->t_qrow_s,
                   .d_qrow_s = a->d_qrow_s,
                   .d_qcol_s = a->d_qcol_s};
}

/* Cast each expert's part of `in`: ragged rows (cnt, the view's (rows, cols); the transposed copy
 * (cols, rows)) or, with cnt NULL, the local experts' equal weights (n, cols) one after the other (the
 * transposed copies (cols, n) likewise). Slot slot0 + g; record 1: the forward's cast (current scaling
 * measures the amax first; delayed records it into history row 0), 0: the scale as it is. With sc
 * non-NULL (record 0) expert g is cast with sc[g] instead of the bank's scale, with si non-NULL its
 * scale_inv written to si[g] instead of the bank's (a micro-batch's own: model_pp_expert_scales). */
static Status cast_experts_at(Model *m, const MoeF8 *v, ScalingBank *b, uint32_t slot0, const int32_t *cnt, uint64_t n,
                              const void *in, Dtype dt, uint64_t cols, uint8_t *row, uint8_t *col, int record,
                              const float *sc, float *si, Err *e)
{
    Backend *bk = m->bk;
    const uint64_t R = v->rows, esz = dtype_bytes(dt);
    Status st = ST_OK;
    for (uint64_t g = 0, r0 = 0; !st && g < v->groups; r0 += cnt ? (uint64_t)cnt[g] : n, g++) {
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
                      .scale = sc ? sc + g : b->scale + s,
                      .scale_inv = si ? si + g : b->scale_inv + s,
                      .amax = record && m->recipe.scaling != SCALING_CURRENT ? h0 : NULL};
        if (!st) st = bk->cast_transpose(bk, &c, e);
    }
    return st;
}

static Status cast_experts(Model *m, const MoeF8 *v, ScalingBank *b, uint32_t slot0, const int32_t *cnt, uint64_t n,
                           const void *in, Dtype dt, uint64_t cols, uint8_t *row, uint8_t *col, int record, Err *e)
{
    return cast_experts_at(m, v, b, slot0, cnt, n, in, dt, cols, row, col, record, NULL, NULL, e);
}

/* An operand with the experts' scale_inv at sinv (expert g's at sinv + g). */
static GemmOperand operand_at(const void *p, Dtype fmt, const float *sinv)
{
    return (GemmOperand){.ptr = p, .dtype = fmt, .layout = GEMM_K_INNER, .scale_inv = sinv, .scale_gran = GRAN_TENSOR};
}
static GemmOperand operand(const void *p, const ScalingBank *b, uint32_t slot0)
{
    return operand_at(p, b->fmt, b->scale_inv + slot0);
}

/* Pipeline stages: the bank's scales of the local experts' slots [s0, s0 + groups) into the slot's
 * micro-batch's own (model_pp_expert_scales `which`), as its forward cast them. */
static Status keep_scales(Model *m, const MoeF8 *v, uint32_t l, const float *bank, uint32_t s0, int which, Err *e)
{
    float *dst = model_pp_expert_scales(m, l, which);
    if (!dst) return ST_OK;
    return m->bk->convert(m->bk, bank + s0, DT_FP32, dst, DT_FP32, v->groups, NULL, e);
}
/* The scale_inv the backward reads for a saved input (slot x0's experts, `which` on pipeline stages). */
static const float *saved_sinv(Model *m, uint32_t l, uint32_t x0, int which)
{
    const float *p = model_pp_expert_scales(m, l, which);
    return p ? p : m->sc.fwd.scale_inv + x0;
}

Status model_moe_f8_grouped(Model *m, const MoeF8 *v, GemmOperand a, GemmOperand b, uint64_t n, uint64_t k,
                            GemmAccPrecision acc, void *y, Err *e)
{
    GroupedGemmDesc d = {.groups = v->groups,
                         .rows = v->rows,
                         .n = n,
                         .k = k,
                         .counts = v->counts,
                         .a = a,
                         .b = b,
                         .d = {.ptr = y, .dtype = m->act_dtype},
                         .accum = GEMM_OVERWRITE,
                         .acc_precision = acc};
    model_moe_lap(m, MOE_PART_ACT, ST_OK); /* the casts and activation before it */
    return model_moe_lap(m, MOE_PART_XGEMM, m->bk->grouped_gemm(m->bk, &d, e));
}

Status model_moe_f8_wgrad(Model *m, const MoeF8 *v, ModelParam *w, GemmOperand dyt, GemmOperand xt, uint64_t M,
                          uint64_t N, GemmAccPrecision acc, Err *e)
{
    GroupedWgradDesc d = {.groups = v->groups,
                          .rows = v->rows,
                          .m = M,
                          .n = N,
                          .counts = v->counts,
                          .a = dyt,
                          .b = xt,
                          .accum = GEMM_ACCUMULATE,
                          .acc_precision = acc};
    model_moe_lap(m, MOE_PART_ACT, ST_OK); /* the casts before it */
    Status st = model_grad_begin(m, w, 0, e);
    d.d = (GemmOutput){.ptr = model_grad_target(m, w, 0), .dtype = DT_FP32};
    if (!st) st = m->bk->grouped_gemm_wgrad(m->bk, &d, e);
    if (!st) st = model_grad_commit(m, w, 0, e);
    return model_moe_lap(m, MOE_PART_XGEMM, st);
}

int32_t *model_moe_host_counts(Model *m, const MoeF8 *v, Err *e)
{
    int32_t *c = (int32_t *)(void *)m->moe_scratch; /* (groups ≤ E) of its (MoE layers, E) floats: no allocation */
    if (m->bk->copy_to_host(m->bk, c, v->counts, (size_t)v->groups * sizeof *c, e)) return NULL;
    return c;
}

/* A weight's local experts cast into its kept copies (the forward's cast: recorded). */
static Status cast_weight(Model *m, const MoeF8 *v, uint32_t l, int fc2, ModelParam *w, Err *e)
{
    const uint64_t n = w->rows / v->groups;
    model_moe_lap(m, MOE_PART_ACT, ST_OK);
    return model_moe_lap(m, MOE_PART_OTHER,
                         cast_experts(m, v, &m->sc.fwd, model_slot_expert(m, l, fc2, 1), NULL, n, w->weight,
                                      m->recipe.gemm.dt[STATE_WEIGHT], w->cols, w->wq_row, w->wq_col, 1, e));
}

Status model_moe_fp8_fwd(Model *m, uint32_t l, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e)
{
    if (exec_block_scaled(&m->recipe)) return model_moe_block_fwd(m, v, w1, w2, e);
    const ModelSpec *s = &m->spec;
    ScalingBank *fb = &m->sc.fwd;
    const uint64_t C = s->hidden, Fe = model_xffn(m), kf = spec_fc1_k(s);
    const Dtype A = m->act_dtype;
    int32_t *cnt = model_moe_host_counts(m, v, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    const uint32_t x1 = model_slot_expert(m, l, 0, 0), wl1 = model_slot_expert(m, l, 0, 1);
    const uint32_t x2 = model_slot_expert(m, l, 1, 0), wl2 = model_slot_expert(m, l, 1, 1);
    /* FC1: the dispatched inputs, row-wise now, transposed saved for wgrad */
    Status st = cast_experts(m, v, fb, x1, cnt, 0, v->x_in, A, C, v->t_qrow, v->q_xin, 1, e);
    if (!st) st = keep_scales(m, v, l, fb->scale_inv, x1, 0, e);
    if (!st) st = cast_weight(m, v, l, 0, w1, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->t_qrow, fb, x1), operand(w1->wq_row, fb, wl1), kf * Fe, C,
                                  GEMM_ACC_FAST, v->x_fc1, e);
    if (!st) st = model_act_fwd(m, v->rows, Fe, v->x_fc1, v->x_h, e);
    /* FC2 */
    if (!st) st = cast_experts(m, v, fb, x2, cnt, 0, v->x_h, A, Fe, v->t_qrow, v->q_xh, 1, e);
    if (!st) st = keep_scales(m, v, l, fb->scale_inv, x2, 1, e);
    if (!st && m->ep == 1) st = keep_scales(m, v, l, fb->scale, x2, 2, e);
    if (!st) st = cast_weight(m, v, l, 1, w2, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->t_qrow, fb, x2), operand(w2->wq_row, fb, wl2), C, Fe, GEMM_ACC_FAST,
                                  v->y, e);
    return st;
}

Status model_moe_fp8_recompute(Model *m, uint32_t l, const MoeF8 *v, ModelParam *w2, Err *e)
{
    if (exec_block_scaled(&m->recipe)) return model_moe_block_recompute(m, v, w2, e);
    const ModelSpec *s = &m->spec;
    ScalingBank *fb = &m->sc.fwd;
    const uint64_t C = s->hidden, Fe = model_xffn(m);
    int32_t *cnt = model_moe_host_counts(m, v, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    const uint32_t x2 = model_slot_expert(m, l, 1, 0), wl2 = model_slot_expert(m, l, 1, 1);
    /* the activation's output again (into dh2, free until FC2's dgrad), cast with the forward's scales
     * (not recorded) into d_qrow (free until the output gradient's cast) */
    Status st = model_act_fwd(m, v->rows, Fe, v->x_fc1, v->dh2, e);
    /* with the micro-batch's own forward scale (delayed updates and, on pipeline stages, later forwards move
     * the bank's), its scale_inv written again where it was kept (1/scale: the same value; at pp 1 the bank's
     * slot, which the forward's cast wrote and only a cast writes) */
    const float *sc = model_pp_expert_scales(m, l, 2);
    float *si = model_pp_expert_scales(m, l, 1);
    if (!st) st = cast_experts_at(m, v, fb, x2, cnt, 0, v->dh2, m->act_dtype, Fe, v->d_qrow, NULL, 0, sc, si, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand_at(v->d_qrow, fb->fmt, saved_sinv(m, l, x2, 1)),
                                  operand(w2->wq_row, fb, wl2), C, Fe, GEMM_ACC_FAST, v->y, e);
    return st;
}

Status model_moe_fp8_bwd(Model *m, uint32_t l, const MoeF8 *v, ModelParam *w1, ModelParam *w2, Err *e)
{
    if (exec_block_scaled(&m->recipe)) return model_moe_block_bwd(m, v, w1, w2, e);
    const ModelSpec *s = &m->spec;
    ScalingBank *fb = &m->sc.fwd, *bb = &m->sc.bwd;
    const uint64_t C = s->hidden, Fe = model_xffn(m), kf = spec_fc1_k(s);
    const Dtype A = m->act_dtype;
    int32_t *cnt = model_moe_host_counts(m, v, e);
    if (!cnt) return e ? e->st : ST_NOMEM;
    const uint32_t x1 = model_slot_expert(m, l, 0, 0), wl1 = model_slot_expert(m, l, 0, 1),
                   d1 = model_slot_expert(m, l, 0, 2);
    const uint32_t x2 = model_slot_expert(m, l, 1, 0), wl2 = model_slot_expert(m, l, 1, 1),
                   d2 = model_slot_expert(m, l, 1, 2);
    /* FC2: dY both layouts; d(activation output) = dY · W2 (the kept transposed copy (Fe, C)) */
    Status st = cast_experts(m, v, bb, d2, cnt, 0, v->dy, A, C, v->d_qrow, v->d_qcol, 1, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->d_qrow, bb, d2), operand(w2->wq_col, fb, wl2), Fe, C, GEMM_ACC_SPLIT,
                                  v->dh2, e);
    if (!st)
        st = model_moe_f8_wgrad(m, v, w2, operand(v->d_qcol, bb, d2),
                                operand_at(v->q_xh, fb->fmt, saved_sinv(m, l, x2, 1)), C, Fe, GEMM_ACC_SPLIT, e);
    if (!st) st = model_act_bwd(m, v->rows, Fe, v->x_fc1, v->dh2, v->dh1, e);
    /* FC1: d(expert inputs) into y (its outputs are spent) */
    if (!st) st = cast_experts(m, v, bb, d1, cnt, 0, v->dh1, A, kf * Fe, v->d_qrow, v->d_qcol, 1, e);
    if (!st)
        st = model_moe_f8_grouped(m, v, operand(v->d_qrow, bb, d1), operand(w1->wq_col, fb, wl1), C, kf * Fe,
                                  GEMM_ACC_SPLIT, v->y, e);
    if (!st)
        st = model_moe_f8_wgrad(m, v, w1, operand(v->d_qcol, bb, d1),
                                operand_at(v->q_xin, fb->fmt, saved_sinv(m, l, x1, 0)), kf * Fe, C, GEMM_ACC_SPLIT, e);
    return st;
}
