/* exec/model/model_moe.c — the routed part of a mixture-of-experts layer on one
 * rank, from the backend's MoE operations (exec/backend/backend_check_moe.c):
 *   logits (B·T, E) = x · Wrᵀ (FP32 out)        router [E, C]
 *   scores, ids, weights, counts = router_topk  softmax (normalised top-k) or sigmoid + bias
 *   x_in (R, C)      = permute(x)               R = B·T·k rows, expert by expert
 *   x_fc1 (R, k·Fe)  = grouped_gemm(x_in, W1)   one call for the E experts
 *   x_fc2in (R, Fe)  = act(x_fc1)               SwiGLU or GELU, as the dense FFN
 *   x_y (R, C)       = grouped_gemm(x_fc2in, W2)
 *   out (B·T, C)     = Σ_j weights[t][j] · x_y[row_of[t][j]]   (unpermute and combine)
 * The experts' outputs are not kept: the backward recomputes x_y (one grouped
 * GEMM) for the combine weights' gradient, so the saved tensors are the plan's
 * MT_ACT_MOE items (planner/plan_moe_mem.c). Shared experts and norm 2 are the
 * dense FFN path's (model_pass.c) with the shared width. Softmax routers add the
 * auxiliary balance loss (MODEL_MOE_AUX_COEFF); sigmoid routers select with a
 * bias moved after each step (MODEL_MOE_BIAS_SPEED), as DeepSeek-V3 does (the
 * router's bookkeeping and backward: exec/model/model_moe_route.c).
 * With expert parallelism (m->ep > 1) the rank holds E/ep experts: the permuted rows are dispatched to
 * their experts' ranks and the outputs combined back around the grouped GEMMs, which run on the rows the
 * EP peers sent (MoeRows; exec/model/model_moe_ep.c); the combined outputs are kept, not recomputed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/model/model_internal.h"

static int is_float16_32(Dtype t) { return t == DT_FP32 || t == DT_FP16 || t == DT_BF16; }

Status model_moe_check(const Plan *p, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *s = in->model;
    if (!spec_is_moe(s)) return ST_OK;
    const Recipe *r = in->recipe;
    if (!s->experts_per_token || s->experts_per_token > s->experts)
        return err_set(e, ST_USAGE, "model %s: top-k %u must be between 1 and its %u experts", s->name,
                       s->experts_per_token, s->experts);
    if (!s->expert_ffn) return err_set(e, ST_USAGE, "model %s: expert_ffn_hidden is 0", s->name);
    if (s->router != ROUTER_SOFTMAX && s->router != ROUTER_SIGMOID)
        return err_set(e, ST_USAGE, "model %s: a model with experts needs router softmax or sigmoid", s->name);
    if (s->linear_bias)
        return err_set(e, ST_UNAVAILABLE, "model %s: linear biases with experts are not run by the executor", s->name);
    if (recipe_fp8_gemm(r) && (r->fp8_row == DT_NONE || r->fp8_col == DT_NONE || !dtype_is_fp8(r->saved_input) ||
                               r->gemm.scaled_mask || !is_float16_32(r->gemm.dt[STATE_WEIGHT])))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s on model %s: the executor runs FP8 expert GEMMs as Transformer Engine's grouped "
                       "linears (a 16/32-bit working weight with its kept FP8 copies in both layouts, FP8 saved "
                       "inputs, no scaled states: te-fp8, te-fp8-current); this recipe's weights or states differ",
                       r->name, s->name);
    if (in->tp != 1 || in->etp != 1) { /* attention tensor-parallel, experts on the sequence shards: model_tp.c */
        Status st = model_tp_moe_check(p, e);
        if (st) return st;
    }
    /* FP8 experts over pipeline stages: each in-flight micro-batch keeps its experts' saved inputs' scales
     * (model_pp.c pp_xesc), as the dense linears keep theirs; deepseek-v3's tiles keep their own scales */
    /* FP8 experts over ranks: with ep 1 every rank holds every expert, so an expert's data-parallel group is the
     * DP group the banks' amax all-reduce spans; with ep > 1 current scaling exchanges nothing, and delayed
     * scaling reduces the experts' records over their EDP group (model_ep_amax_begin). The amax group must be
     * the DP group for that ("all"; "tp"/"none" reduce nothing at tp 1); with --etp the ETP group's shards too
     * (model_moe_ep_amax.c). */
    if (recipe_fp8_gemm(r) && (in->ep > 1 || in->etp > 1) && r->scaling == SCALING_DELAYED &&
        r->amax_reduce != AMAX_ALL)
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s on model %s: delayed-scaling FP8 experts over --ep %u --etp %u reduce their amaxes "
                       "over the ranks holding each expert beside the recipe's amax_reduce 'all'; this recipe's is "
                       "'%s'",
                       r->name, s->name, in->ep, in->etp ? in->etp : 1, amax_reduce_name(r->amax_reduce));
    /* the dispatch in FP8 with its 1x128 scales (model_moe_ep_fp8.c): deepseek-v3's, whose experts take the
     * row-wise tiles as they arrive; the combine always in the activation dtype */
    const int fp8_dispatch = exec_block_scaled(r) && r->act_gran == GRAN_1X128 && r->comm_ep_dispatch == DT_E4M3;
    if (in->ep > 1 &&
        ((r->comm_ep_dispatch != exec_act_dtype(r) && !fp8_dispatch) || r->comm_ep_combine != exec_act_dtype(r)))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s with --ep %u: the all-to-alls carry the activations as they are (%s), or E4M3 with "
                       "1x128 scales for a block-scaled recipe's dispatch; its dispatch (%s) and combine (%s) dtypes "
                       "differ",
                       r->name, in->ep, dtype_name(exec_act_dtype(r)), dtype_name(r->comm_ep_dispatch),
                       dtype_name(r->comm_ep_combine));
    if (in->ep > 1 && fp8_dispatch && s->hidden % 4)
        return err_set(e, ST_UNAVAILABLE,
                       "model %s: hidden %u with recipe %s's FP8 dispatch: a row's codes move as 4-byte words (hidden "
                       "must be a multiple of 4)",
                       s->name, s->hidden, r->name);
    if (in->moe_capacity > 0)
        return err_set(e, ST_UNAVAILABLE, "--moe-capacity %g: the executor's routing is dropless (0)",
                       in->moe_capacity);
    if (r->other.dt[STATE_WEIGHT] != exec_act_dtype(r))
        return err_set(e, ST_UNAVAILABLE,
                       "recipe %s: the router's weight (%s) must be in the activation dtype (%s) for its GEMMs",
                       r->name, dtype_name(r->other.dt[STATE_WEIGHT]), dtype_name(exec_act_dtype(r)));
    uint32_t g = s->router_groups ? s->router_groups : 1, gk = s->router_group_topk ? s->router_group_topk : g;
    if (s->experts % g || gk > g || (uint64_t)s->experts_per_token > (uint64_t)gk * (s->experts / g))
        return err_set(e, ST_USAGE,
                       "model %s: group-limited routing (%u groups, top %u groups) does not fit %u experts with "
                       "top-k %u",
                       s->name, g, gk, s->experts, s->experts_per_token);
    return ST_OK;
}

void model_moe_saved(Model *m, int bind, ArenaSpecs *sp, LayerActs *la, uint32_t l, int li)
{
    const ModelSpec *s = &m->spec;
    const uint64_t BT = model_moe_tokens(m), E = s->experts, k = s->experts_per_token, R = model_moe_rows(m);
    const uint64_t C = s->hidden, Fe = model_xffn(m);
    const Dtype A = m->act_dtype;
    if (!bind) la = NULL;
    arena_add(sp, MT_ACT_MOE, DT_FP32, BT * E, la ? &la->r_scores : NULL, "router.scores", li);
    arena_add_i32(sp, MT_ACT_MOE, BT * k, la ? &la->r_ids : NULL, "router.ids", li);
    arena_add(sp, MT_ACT_MOE, DT_FP32, BT * k, la ? &la->r_w : NULL, "router.weights", li);
    arena_add_i32(sp, MT_ACT_MOE, E, la ? &la->r_counts : NULL, "router.counts", li);
    arena_add_i32(sp, MT_ACT_MOE, BT * k, la ? &la->r_rowof : NULL, "moe.row_of", li);
    const Recipe *r = &m->recipe;
    const int f8 = recipe_fp8_gemm(r); /* model_moe_check: FP8 inputs saved in FP8 */
    if (!model_ffn_of(m, l) || f8)     /* no shared FC1 saves norm 2's output in BF16: the router's own copy */
        arena_add(sp, MT_ACT_MOE, A, BT * C, la ? &la->r_in : NULL, "router.input", li);
    /* the experts' side at ep 1 x etp > 1 (model_etp_arena: the ETP group's rows), else this rank's rows */
    const uint64_t X = model_moe_xrows(m);
    /* block scaling: the transposed copies' tiles, at most (this rank's experts: with ep > 1 the experts' side
     * holds its own in the EP buffers, and these are the plan's per-GPU rows) */
    const uint64_t nt = model_moe_tiles(X, E / m->ep);
    if (f8) arena_add(sp, MT_ACT_MOE, r->saved_input, C * X, la ? &la->q_xin : NULL, "experts.input.fp8_col", li);
    if (f8 && exec_block_scaled(r))
        arena_add(sp, MT_ACT_MOE, DT_FP32, C * nt, la ? &la->q_xin_s : NULL, "experts.input.fp8_col.scale_inv", li);
    if (!f8) arena_add(sp, MT_ACT_MOE, A, X * C, la ? &la->x_in : NULL, "experts.input", li);
    arena_add(sp, MT_ACT_MOE, A, X * spec_fc1_k(s) * Fe, la ? &la->x_fc1 : NULL, "experts.fc1", li);
    if (f8) arena_add(sp, MT_ACT_MOE, r->saved_input, Fe * X, la ? &la->q_xh : NULL, "experts.fc2_input.fp8_col", li);
    if (f8 && exec_block_scaled(r))
        arena_add(sp, MT_ACT_MOE, DT_FP32, Fe * nt, la ? &la->q_xh_s : NULL, "experts.fc2_input.fp8_col.scale_inv", li);
    if (!f8) arena_add(sp, MT_ACT_MOE, A, X * Fe, la ? &la->x_fc2in : NULL, "experts.fc2_input", li);
    /* the experts made the outputs on other ranks: kept at the token copies for the combine weights' gradient */
    if (model_ep_on(m)) arena_add(sp, MT_ACT_MOE, A, R * C, la ? &la->y_tok : NULL, "experts.output_kept", li);
}

/* Expert parallelism with an FP8 dispatch (deepseek-v3): the token side quantizes its rows straight into the send
 * buffer, ep_pay, in the arena (the plan's dispatch buffer); its d(expert outputs) are made in x_y, free then (the
 * outputs the combine's gradient reads are the EP buffers'), so it keeps no x_dy. */
int model_moe_ep_fp8_dispatch(const Model *m) { return m->ep > 1 && dtype_is_fp8(m->recipe.comm_ep_dispatch); }

void model_moe_transient(Model *m, int bind, ArenaSpecs *sp)
{
    const ModelSpec *s = &m->spec;
    int any = 0;
    for (uint32_t l = 0; l < s->layers; l++) any |= model_moe_layer(m, l);
    if (!any) return;
    const uint64_t BT = model_moe_tokens(m), E = s->experts, k = s->experts_per_token, R = model_moe_xrows(m);
    const uint64_t C = s->hidden, Fe = model_xffn(m), kf = spec_fc1_k(s);
    const Dtype A = m->act_dtype;
    ModelActs *a = bind ? &m->act : NULL;
    /* both passes: the logits (their gradient in backward) and the experts' outputs (recomputed). At ep 1 x etp > 1
     * (model_etp_arena) R is the ETP group's rows: x_y the experts' outputs, then d(outputs) and d(inputs), and the
     * rank's own rows at its start; x_dy the backward's gathered and reduce-scattered rows; etp_rows the forward's */
    arena_add(sp, MT_TRANSIENT, DT_FP32, BT * E, a ? &a->r_logits : NULL, "router.logits", -1);
    arena_add(sp, MT_TRANSIENT, A, R * C, a ? &a->x_y : NULL, "experts.out", -1);
    if (model_etp_arena(m))
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, R * C, a ? &a->etp_rows : NULL, "etp.rows");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, BT * C, a ? &a->t_moe : NULL, "moe.combined");
    if (recipe_fp8_gemm(&m->recipe)) /* the activation's output before its cast (FC2's input) */
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_FWD, A, R * Fe, a ? &a->x_h : NULL, "experts.act_out");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BT * C, a ? &a->d_moe : NULL, "moe.d_input");
    if (model_moe_ep_fp8_dispatch(m)) /* both passes: the forward's rows, then the backward's d(outputs) */
        arena_add_(sp, MT_TRANSIENT, DT_NONE, 1, R * model_ep_fp8_row_bytes(m), ADST_U8, a ? (void *)&a->ep_pay : NULL,
                   "ep.dispatch_payload", -1);
    else
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, R * C, a ? &a->x_dy : NULL, "experts.d_out");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, R * Fe, a ? &a->x_dh2 : NULL, "experts.d_act");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, R * kf * Fe, a ? &a->x_dh1 : NULL, "experts.d_fc1");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, BT * k, a ? &a->r_dw : NULL, "router.d_weights");
    if (s->router == ROUTER_SOFTMAX)
        arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, DT_FP32, BT * E, a ? &a->r_ds : NULL, "router.d_scores");
    arena_add_phase(sp, MT_TRANSIENT, MODEL_PHASE_BLOCKS, A, BT * E, a ? &a->r_dl : NULL, "router.d_logits");
}

/* The grouped GEMM Y (rows, N) = X (rows, K) · W_gᵀ, W (groups, N, K) packed, in the activation dtype. */
static Status experts_gemm(Model *m, const MoeRows *xr, const void *x, const void *w, uint64_t n, uint64_t k,
                           GemmLayout wl, void *y, Err *e)
{
    const Dtype A = m->act_dtype;
    GroupedGemmDesc d = {
        .groups = xr->groups, .rows = xr->rows, .n = n, .k = k, .counts = xr->counts, .accum = GEMM_OVERWRITE};
    d.a = (GemmOperand){.ptr = x, .dtype = A, .layout = GEMM_K_INNER};
    d.b = (GemmOperand){.ptr = w, .dtype = A, .layout = wl};
    d.d = (GemmOutput){.ptr = y, .dtype = A};
    return model_moe_lap(m, MOE_PART_XGEMM, m->bk->grouped_gemm(m->bk, &d, e));
}

/* dW_g (M, N) += dY_gᵀ · X_g over each expert's rows: dY (R, M), X (R, N). */
static Status experts_wgrad(Model *m, const MoeRows *xr, ModelParam *w, const void *dy, uint64_t M, const void *x,
                            uint64_t N, Err *e)
{
    const Dtype A = m->act_dtype;
    Status st = model_grad_begin(m, w, 0, e);
    GroupedWgradDesc d = {
        .groups = xr->groups, .rows = xr->rows, .m = M, .n = N, .counts = xr->counts, .accum = GEMM_ACCUMULATE};
    d.a = (GemmOperand){.ptr = dy, .dtype = A, .layout = GEMM_K_OUTER};
    d.b = (GemmOperand){.ptr = x, .dtype = A, .layout = GEMM_K_OUTER};
    d.d = (GemmOutput){.ptr = model_grad_target(m, w, 0), .dtype = DT_FP32};
    if (!st) st = m->bk->grouped_gemm_wgrad(m->bk, &d, e);
    if (!st) st = model_grad_commit(m, w, 0, e);
    return model_moe_lap(m, MOE_PART_XGEMM, st);
}

/* The experts' rows as this rank routed them: every expert, its own token copies (expert parallelism regroups
 * them into the rows dispatched to its experts: model_ep_dispatch, model_ep_backward_rows). */
static MoeRows token_rows(const Model *m, const LayerActs *la)
{
    return (MoeRows){.groups = m->spec.experts,
                     .rows = model_moe_rows(m),
                     .counts = la->r_counts,
                     .x_in = la->x_in,
                     .x_fc1 = la->x_fc1,
                     .x_fc2in = la->x_fc2in};
}

Status model_moe_fwd(Model *m, uint32_t l, const void *x, void *out, Err *e)
{
    Backend *bk = m->bk;
    const ModelSpec *s = &m->spec;
    LayerActs *la = model_la(m, l);
    ModelActs *a = &m->act;
    const Dtype A = m->act_dtype;
    const uint64_t BT = model_moe_tokens(m), C = s->hidden, E = s->experts, Fe = model_xffn(m), kf = spec_fc1_k(s);
    ModelParam *wr = model_find_param(m, PK_ROUTER_W, (int)l), *w1 = model_find_param(m, PK_XFC1_W, (int)l),
               *w2 = model_find_param(m, PK_XFC2_W, (int)l);
    if (!wr || !w1 || !w2) return err_set(e, ST_SOFTWARE, "MoE layer %u has no router or experts", l + m->layer0);
    GemmDesc g = {.m = BT, .n = E, .k = C, .accum = GEMM_OVERWRITE}; /* the router in the activation dtype */
    g.a = (GemmOperand){.ptr = x, .dtype = A, .layout = GEMM_K_INNER};
    g.b = (GemmOperand){.ptr = wr->weight, .dtype = A, .layout = GEMM_K_INNER};
    g.d = (GemmOutput){.ptr = a->r_logits, .dtype = DT_FP32};
    model_moe_lap_start(m);
    Status st = model_moe_lap(m, MOE_PART_ROUTER, bk->gemm(bk, &g, e));
    RouterDesc rd = {.tokens = BT,
                     .experts = s->experts,
                     .k = s->experts_per_token,
                     .score = s->router,
                     .norm_topk = 1,
                     .weight_scale = 1.0f,
                     .groups = s->router_groups ? s->router_groups : 1,
                     .group_topk = !s->router_groups      ? 1
                                   : s->router_group_topk ? s->router_group_topk
                                                          : s->router_groups, /* 0: every group */
                     .logits = a->r_logits,
                     .bias = s->router == ROUTER_SIGMOID ? model_moe_router_bias(m, l) : NULL,
                     .scores = la->r_scores,
                     .ids = la->r_ids,
                     .weights = la->r_w,
                     .counts = la->r_counts};
    if (!st) st = bk->router_topk(bk, &rd, e);
    if (!st) st = model_moe_lap(m, MOE_PART_ROUTER, model_moe_count_routing(m, l, la, e));
    MoePermuteDesc pd = {.tokens = BT,
                         .experts = s->experts,
                         .k = s->experts_per_token,
                         .cols = C,
                         .dtype = A,
                         .ids = la->r_ids,
                         .in = x,
                         .out = recipe_fp8_gemm(&m->recipe) ? a->x_y : la->x_in, /* FP8: cast, then spent */
                         .row_of = la->r_rowof};
    if (!st) st = model_moe_lap(m, MOE_PART_PERMUTE, bk->moe_permute(bk, &pd, e));
    /* the experts: this rank's E on its rows, or (expert parallelism) its E/ep on the rows dispatched to it */
    MoeRows xr = token_rows(m, la);
    void *y = model_ep_on(m) ? model_ep_fwd_out(m) : a->x_y;
    if (!st && model_ep_on(m)) st = model_moe_lap(m, MOE_PART_EP, model_ep_dispatch(m, l, la, pd.out, &xr, e));
    if (recipe_fp8_gemm(&m->recipe)) { /* in FP8 (exec/model/model_moe_fp8.c; its GEMMs lap themselves) */
        MoeF8 v = model_ep_on(m) ? model_ep_f8(m, l, &xr, 0) : model_moe_f8_tokens(m, l);
        if (!st) st = model_moe_lap(m, MOE_PART_ACT, model_moe_fp8_fwd(m, l, &v, w1, w2, e));
    } else {
        if (!st) st = experts_gemm(m, &xr, xr.x_in, w1->weight, kf * Fe, C, GEMM_K_INNER, xr.x_fc1, e);
        if (!st) st = model_moe_lap(m, MOE_PART_ACT, model_act_fwd(m, xr.rows, Fe, xr.x_fc1, xr.x_fc2in, e));
        if (!st) st = experts_gemm(m, &xr, xr.x_fc2in, w2->weight, C, Fe, GEMM_K_INNER, y, e);
    }
    if (!st && model_ep_on(m)) st = model_moe_lap(m, MOE_PART_EP, model_ep_combine(m, l, y, a->x_y, e));
    MoeUnpermuteDesc ud = {.tokens = BT,
                           .k = s->experts_per_token,
                           .cols = C,
                           .dtype = A,
                           .row_of = la->r_rowof,
                           .weights = la->r_w,
                           .in = a->x_y,
                           .out = out};
    if (!st) st = model_moe_lap(m, MOE_PART_PERMUTE, bk->moe_unpermute(bk, &ud, e));
    return st;
}

Status model_moe_bwd(Model *m, uint32_t l, const void *x, const void *dout, Err *e)
{
    Backend *bk = m->bk;
    const ModelSpec *s = &m->spec;
    LayerActs *la = model_la(m, l);
    ModelActs *a = &m->act;
    const Dtype A = m->act_dtype;
    const uint64_t BT = model_moe_tokens(m), C = s->hidden, Fe = model_xffn(m), kf = spec_fc1_k(s);
    ModelParam *wr = model_find_param(m, PK_ROUTER_W, (int)l), *w1 = model_find_param(m, PK_XFC1_W, (int)l),
               *w2 = model_find_param(m, PK_XFC2_W, (int)l);
    if (!wr || !w1 || !w2) return err_set(e, ST_SOFTWARE, "MoE layer %u has no router or experts", l + m->layer0);
    MoeRows xr = token_rows(m, la);
    MoeEpBwd b = {.y_tok = a->x_y, .dy = a->x_dy, .dh2 = a->x_dh2, .dh1 = a->x_dh1, .dx = a->x_y};
    const int f8 = recipe_fp8_gemm(&m->recipe);
    const MoeF8 tok = model_moe_f8_tokens(m, l);
    Status st = ST_OK;
    model_moe_lap_start(m);
    if (model_ep_on(m)) /* the expert side's rows and buffers; the token side kept the outputs */
        st = model_ep_backward_rows(m, l, &xr, &b);
    else if (f8) /* the experts' outputs again, for the combine weights' gradient */
        st = model_moe_lap(m, MOE_PART_ACT, model_moe_fp8_recompute(m, l, &tok, w2, e));
    else
        st = experts_gemm(m, &xr, xr.x_fc2in, w2->weight, C, Fe, GEMM_K_INNER, a->x_y, e);
    void *dy_tok = model_moe_ep_fp8_dispatch(m) ? a->x_y : a->x_dy; /* the token side's d(expert outputs) */
    MoeUnpermuteBwdDesc ub = {.tokens = BT,
                              .k = s->experts_per_token,
                              .cols = C,
                              .dtype = A,
                              .row_of = la->r_rowof,
                              .weights = la->r_w,
                              .dout = dout,
                              .in = b.y_tok,
                              .din = dy_tok,
                              .dweights = a->r_dw};
    if (!st) st = model_moe_lap(m, MOE_PART_PERMUTE, bk->moe_unpermute_bwd(bk, &ub, e));
    if (!st && model_ep_on(m)) st = model_moe_lap(m, MOE_PART_EP, model_ep_dispatch_bwd(m, l, dy_tok, b.dy, e));
    if (f8) { /* FC2 and FC1 as below, in FP8 */
        MoeF8 v = model_ep_on(m) ? model_ep_f8(m, l, &xr, 1) : tok;
        if (!st) st = model_moe_lap(m, MOE_PART_ACT, model_moe_fp8_bwd(m, l, &v, w1, w2, e));
    } else {
        /* FC2: d(activation output) = dY · W2_g (W2_g stored (C, Fe): K_OUTER), dW2 += dYᵀ · h */
        if (!st) st = experts_gemm(m, &xr, b.dy, w2->weight, Fe, C, GEMM_K_OUTER, b.dh2, e);
        if (!st) st = experts_wgrad(m, &xr, w2, b.dy, C, xr.x_fc2in, Fe, e);
        if (!st) st = model_moe_lap(m, MOE_PART_ACT, model_act_bwd(m, xr.rows, Fe, xr.x_fc1, b.dh2, b.dh1, e));
        /* FC1: d(expert inputs) into x_y (its outputs are spent; expert parallelism: the expert side's, then
         * back to the token copies), dW1 += d(FC1 out)ᵀ · inputs */
        if (!st) st = experts_gemm(m, &xr, b.dh1, w1->weight, C, kf * Fe, GEMM_K_OUTER, b.dx, e);
        if (!st) st = experts_wgrad(m, &xr, w1, b.dh1, kf * Fe, xr.x_in, C, e);
    }
    if (!st && model_ep_on(m)) st = model_moe_lap(m, MOE_PART_EP, model_ep_combine_bwd(m, l, b.dx, a->x_y, e));
    /* the copies' gradients summed back to their tokens */
    MoeUnpermuteDesc ud = {.tokens = BT,
                           .k = s->experts_per_token,
                           .cols = C,
                           .dtype = A,
                           .row_of = la->r_rowof,
                           .weights = NULL,
                           .in = a->x_y,
                           .out = a->d_moe};
    if (!st) st = model_moe_lap(m, MOE_PART_PERMUTE, bk->moe_unpermute(bk, &ud, e));
    if (!st) st = model_moe_lap(m, MOE_PART_ROUTER, model_moe_router_bwd(m, la, wr, x, e));
    return st;
}
