/* planner/plan_time.c — step time, throughput and MFU.
 *
 * One micro-batch through one stage costs
 *   GEMMs       2*tok*E FLOPs forward per layer (E = linear weight elements per TP
 *               rank), twice that backward (dgrad + wgrad), at the recipe's rate:
 *               FP8 peak x eff_gemm_fp8 when that pass is FP8, else BF16 peak x
 *               eff_gemm_bf16; the LM head (last stage) is always BF16;
 *   attention   flash: 4*tok*seq*q_dim/tp FLOPs forward, halved (causal flash
 *               skips masked blocks), 2.5x backward (it recomputes P), at BF16
 *               peak x eff_attn; materialized: the bytes its scores move (see
 *               plan_bytes.h: 12 B forward, 18 B backward per BF16 score) at HBM
 *               rate, or its FLOPs at the BF16 GEMM rate where that is longer;
 *   non-GEMM    bytes moved by norms, residual adds, the activation function,
 *               RoPE, dropout, and FP8 casts (read 2 B, write
 *               1 B row-wise + 1 B transposed; current scaling reads the input once
 *               more for its amax), over HBM bandwidth x eff_hbm; backward moves
 *               twice the forward bytes plus the casts of the output gradients, plus
 *               accumulating each weight gradient into the main gradient (read +
 *               write of the main gradient; a BF16 wgrad written and read first
 *               when the main gradient is narrower than the GEMM's FP32 output);
 *   communication  TP collectives are exposed (no overlap), CP hides behind
 *               attention, PP sends are on the critical path.
 * Recompute adds the forward work again (selective: the attention core only).
 * The pipeline runs (m + (pp-1)/vpp) micro-batch times of the slower of stage 0
 * and the last stage; the difference to m times is the bubble. Per step come
 * the exposed DP collectives (overlapping the last backward / first forward
 * when overlap_dp), the optimizer (reads gradient, master, m, v; writes master,
 * m, v and the working weight, over HBM; FP8-LM's scaled states read all four
 * once more, plan_bytes.h), FP8-LM's gradient commit (an FP32 staging buffer
 * zeroed, read for the amax, read and cast into the FP8 main gradient:
 * plan_bytes.h, counted with the non-GEMM work), the FP8 weight casts of the
 * cached copies, amax reductions and the tied-embedding gradient sum.
 * Model FLOPs (for MFU) are 6 x (linear weights + LM head) x tokens plus
 * attention 12*L*q_dim*seq per token (PaLM appendix B; no causal halving, no
 * recompute); MFU is reported against the BF16 and the FP8 dense peak. */
#include "planner/plan_bytes.h"
#include "planner/plan_internal.h"

typedef struct {
    double fwd, bwd;       /* seconds */
    double attn_f, attn_b; /* of which the attention core, one layer, one micro-batch */
} Pass;

static double rate(const PlanInput *in, Dtype dt)
{
    return dt_fp8(dt) ? in->gpu->flops_fp8 * in->eff_gemm_fp8 : in->gpu->flops_bf16 * in->eff_gemm_bf16;
}

/* Compute and memory time of one micro-batch through the given stage. */
static Pass stage_pass(const PlanInput *in, const Geo *g, uint32_t stage, double *attn_fwd_out)
{
    const Recipe *rc = in->recipe;
    const GpuSpec *gp = in->gpu;
    double tok = (double)g->tok, r = (double)g->rep, h = (double)g->h, Ft = (double)g->F_t;
    double Ls = (double)g->Ls, hbm = gp->hbm_bw * in->eff_hbm;
    int first = stage == 0, last = stage == g->pp - 1, flash = in->attn == ATTN_FLASH;
    int fwd8 = dt_fp8(rc->gemm_fwd), bwd8 = dt_fp8(rc->gemm_bwd), cur = rc->scaling == SCALING_CURRENT;

    /* GEMMs */
    double fl = 2.0 * tok * (double)g->gemm_layer;
    double gemm_f = fl / rate(in, rc->gemm_fwd), gemm_b = 2.0 * fl / rate(in, rc->gemm_bwd);
    /* attention core */
    double afl = 4.0 * tok * (double)g->seq * (double)g->q_t * (flash ? 0.5 : 1.0);
    double attn_f = afl / (gp->flops_bf16 * in->eff_attn), attn_b = attn_f * 2.5;
    if (!flash) { /* materialized: the scores' bytes (BF16 activations), or the GEMM FLOPs */
        double sc = tok * (double)g->seq * (double)g->heads_t, r16 = rate(in, DT_BF16);
        attn_f = pb_roofline_s(afl, r16, pb_attn_mat_bytes_fwd(sc, 2.0), hbm);
        attn_b = pb_roofline_s(2.0 * afl, r16, pb_attn_mat_bytes_bwd(sc, 2.0), hbm);
    }
    /* memory-bound work, bytes per layer forward */
    double ht = tok / r * h;
    double nb = 2 * ht * 4 + 2 * ht * 6; /* norms (read 2 + write 2), residual adds (read 4 + write 2) */
    nb += tok * (double)(g->k * g->F_t) * 2 + tok * Ft * 2; /* activation function reads its input, writes output */
    if (in->model->pos == POS_ROPE) nb += tok * (double)(g->q_t + g->kv_t) * 4;
    if (in->dropout) nb += 2 * ht * 5;
    if (!flash && in->dropout) nb += tok * (double)g->heads_t * (double)g->seq * 5; /* the softmax is attention's */
    double xe = 2 * ht + tok * (double)g->q_t + tok * Ft; /* elements of the four GEMM inputs */
    double ye = tok * (double)(g->q_t + 2 * g->kv_t) + 2 * ht + tok * (double)(g->k * g->F_t);
    double cast_f = fwd8 ? xe * (4 + 2 * cur) : 0, cast_b = bwd8 ? ye * (4 + 2 * cur) : 0;
    double ng_f = (nb + cast_f) / hbm, ng_b = (2 * nb + cast_b) / hbm;

    /* main-gradient accumulation, per layer: the GEMM epilogue reads and writes it in place */
    Dtype gd = rc->gemm.dt[STATE_GRAD];
    double acc = (double)g->gemm_layer * (2.0 * dt_bytes(gd) + (dt_bytes(gd) < 4 ? 4.0 : 0.0));
    ng_b += acc / hbm;

    Pass ps;
    ps.attn_f = attn_f, ps.attn_b = attn_b;
    ps.fwd = Ls * (gemm_f + attn_f + ng_f);
    ps.bwd = Ls * (gemm_b + attn_b + ng_b);
    if (in->recompute == RECOMPUTE_FULL) ps.bwd += Ls * (gemm_f + attn_f + ng_f);
    if (in->recompute == RECOMPUTE_SELECTIVE) ps.bwd += Ls * attn_f;
    if (first) ps.fwd += tok * h * 4 / hbm, ps.bwd += tok * h * 4 / hbm; /* embedding gather/scatter-add */
    if (last) {
        double lfl = 2.0 * tok * h * (double)g->Vp_t, lr = gp->flops_bf16 * in->eff_gemm_bf16;
        double ce = tok * (double)g->Vp_t * 16; /* logits to fp32, softmax, loss, gradient */
        ps.fwd += lfl / lr + ce / 2 / hbm;
        ps.bwd += 2 * lfl / lr + ce / 2 / hbm;
    }
    if (attn_fwd_out) *attn_fwd_out = Ls * attn_f;
    return ps;
}

void plan_time(const PlanInput *in, const Geo *g, Plan *p)
{
    const Recipe *rc = in->recipe;
    TimeBreakdown *tb = &p->time;
    double m = (double)g->m, hbm = in->gpu->hbm_bw * in->eff_hbm;
    double attn0, attnl;
    Pass s0 = stage_pass(in, g, 0, &attn0), sl = g->pp > 1 ? stage_pass(in, g, (uint32_t)(g->pp - 1), &attnl) : s0;
    Pass ps = (sl.fwd + sl.bwd > s0.fwd + s0.bwd) ? sl : s0;

    /* split the compute of the slower stage into GEMM / attention / memory-bound for the report */
    {
        double tok = (double)g->tok, fl = 2.0 * tok * (double)g->gemm_layer, Ls = (double)g->Ls;
        double gf = fl / rate(in, rc->gemm_fwd), gb = 2 * fl / rate(in, rc->gemm_bwd);
        double per_mb_gemm = Ls * (gf + gb + (in->recompute == RECOMPUTE_FULL ? gf : 0));
        double per_mb_attn = Ls * (ps.attn_f * (1 + (in->recompute != RECOMPUTE_NONE)) + ps.attn_b);
        if (g->pp == 1 || (sl.fwd + sl.bwd > s0.fwd + s0.bwd)) { /* last stage: LM head GEMMs */
            double lfl = 2.0 * tok * (double)g->h * (double)g->Vp_t;
            per_mb_gemm += 3 * lfl / (in->gpu->flops_bf16 * in->eff_gemm_bf16);
        }
        double per_mb = ps.fwd + ps.bwd;
        tb->gemm_s = per_mb_gemm * m;
        tb->attn_s = per_mb_attn * m;
        tb->nongemm_s = (per_mb - per_mb_gemm - per_mb_attn) * m;
        if (tb->nongemm_s < 0) tb->nongemm_s = 0;
    }

    /* communication on the critical path, per micro-batch */
    double tp_s = 0, cp_s = 0, pp_s = 0;
    for (int i = CO_TP_AR_FWD; i <= CO_TP_RS_BWD; i++) tp_s += p->coll[i].time_s;
    cp_s = p->coll[CO_CP_KV].time_s;
    double cp_hidden = attn0 * 3.5 * m; /* CP exchange overlaps attention fwd+bwd */
    double cp_exp = cp_s > cp_hidden ? cp_s - cp_hidden : 0;
    pp_s = p->coll[CO_PP_P2P].time_s;
    for (int i = CO_TP_AR_FWD; i <= CO_TP_RS_BWD; i++) p->coll[i].exposed_s = p->coll[i].time_s;
    p->coll[CO_CP_KV].exposed_s = cp_exp;
    tb->tp_comm_s = tp_s;
    tb->cp_comm_s = cp_exp;
    tb->pp_comm_s = pp_s;

    double mb = ps.fwd + ps.bwd + (tp_s + cp_exp + pp_s) / m;
    tb->microbatch_s = mb;
    tb->bubble_s = (double)(g->pp - 1) / (double)g->vpp * mb;

    /* DP */
    double dp = 0;
    Collective *ar = &p->coll[CO_DP_GRAD_AR], *rs = &p->coll[CO_DP_GRAD_RS], *ag = &p->coll[CO_DP_PARAM_AG];
    double wb = in->overlap_dp ? ps.bwd : 0, wf = in->overlap_dp ? ps.fwd : 0;
    ar->exposed_s = ar->time_s > wb ? ar->time_s - wb : 0;
    rs->exposed_s = rs->time_s > wb ? rs->time_s - wb : 0;
    if (in->sharding == SHARD_ZERO3) wf = in->overlap_dp ? (ps.fwd + ps.bwd) * m : 0;
    ag->exposed_s = ag->time_s > wf ? ag->time_s - wf : 0;
    dp = ar->exposed_s + rs->exposed_s + ag->exposed_s;
    tb->dp_comm_s = dp;

    /* optimizer: per state, read+write (gradient read only, weight written) */
    double ob = 0;
    const MemTerm *mt = p->mem;
    ob += (double)(mt[MT_GRAD_GEMM].bytes + mt[MT_GRAD_OTHER].bytes);
    ob += 2.0 * (double)(mt[MT_MASTER_GEMM].bytes + mt[MT_MASTER_OTHER].bytes + mt[MT_OPTIM_M_GEMM].bytes +
                         mt[MT_OPTIM_M_OTHER].bytes + mt[MT_OPTIM_V_GEMM].bytes + mt[MT_OPTIM_V_OTHER].bytes);
    /* the updated slice of the working weight */
    double wfrac = mt[MT_MASTER_GEMM].elements && p->params_gemm_gpu
                       ? (double)mt[MT_MASTER_GEMM].elements / (double)p->params_gemm_gpu
                       : 1.0;
    ob += wfrac * (double)(mt[MT_WEIGHT_GEMM].bytes + mt[MT_WEIGHT_OTHER].bytes);
    ob += pb_optim_second_pass_bytes(&rc->gemm, (double)mt[MT_GRAD_GEMM].bytes, (double)mt[MT_MASTER_GEMM].bytes,
                                     (double)mt[MT_OPTIM_M_GEMM].bytes, (double)mt[MT_OPTIM_V_GEMM].bytes);
    ob += pb_optim_second_pass_bytes(&rc->other, (double)mt[MT_GRAD_OTHER].bytes, (double)mt[MT_MASTER_OTHER].bytes,
                                     (double)mt[MT_OPTIM_M_OTHER].bytes, (double)mt[MT_OPTIM_V_OTHER].bytes);
    tb->optimizer_s = ob / hbm;

    /* FP8 main gradients committed from their FP32 staging, once per step */
    double commit = pb_grad_commit_bytes((double)p->params_gemm_gpu, rc->gemm.dt[STATE_GRAD]) / hbm;
    tb->nongemm_s += commit;

    /* FP8 weight casts of the cached copies, once per step */
    double wc = 0;
    if (mt[MT_FP8_ROWWISE].elements || mt[MT_FP8_COLWISE].elements) {
        Dtype src = rc->gemm.dt[STATE_WEIGHT] != DT_NONE ? rc->gemm.dt[STATE_WEIGHT] : rc->gemm.dt[STATE_MASTER];
        double per =
            dt_bytes(src) * (rc->scaling == SCALING_CURRENT ? 2.0 : 1.0) + (double)recipe_fp8_copy_bytes_per_param(rc);
        wc = (double)p->params_gemm_gpu * per / hbm;
    }
    tb->weight_cast_s = wc;
    tb->other_s = p->coll[CO_AMAX_AR].time_s + p->coll[CO_EMB_GRAD_AR].time_s;
    p->coll[CO_AMAX_AR].exposed_s = p->coll[CO_AMAX_AR].time_s;
    p->coll[CO_EMB_GRAD_AR].exposed_s = p->coll[CO_EMB_GRAD_AR].time_s;
    p->coll[CO_PP_P2P].exposed_s = p->coll[CO_PP_P2P].time_s;

    tb->step_s = (m + (double)(g->pp - 1) / (double)g->vpp) * mb + dp + tb->optimizer_s + wc + tb->other_s + commit;

    /* throughput and MFU */
    double gbs = (double)p->in.gbs, seq = (double)g->seq, L = (double)g->L;
    double lin_full = (double)g->gemm_layer * (double)g->tp; /* per layer, whole (unsharded) */
    double n_flop = L * lin_full + (double)g->h * (double)g->V;
    double per_tok = 6.0 * n_flop + 12.0 * L * (double)g->q_dim * seq;
    p->model_flops_step = per_tok * gbs * seq;
    double step = tb->step_s;
    p->samples_per_s = gbs / step;
    p->tokens_per_s = gbs * seq / step;
    p->tflops_per_gpu = p->model_flops_step / step / (double)g->world / 1e12;
    p->mfu_bf16_pct = 100.0 * p->tflops_per_gpu * 1e12 / in->gpu->flops_bf16;
    p->mfu_fp8_pct = in->gpu->flops_fp8 > 0 ? 100.0 * p->tflops_per_gpu * 1e12 / in->gpu->flops_fp8 : 0;
}
