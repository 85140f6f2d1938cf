/* planner/plan_time.c — step time, throughput and MFU.
 *
 * One layer and micro-batch (tok = mbs * seq / cp tokens on this rank) costs:
 *   GEMMs      per linear (QKV, proj, FC1, FC2 per TP rank) three GEMMs timed from
 *              their shapes by plan_gemm.c: fprop [tok x out x in], dgrad
 *              [tok x in x out], wgrad [out x in x tok], FP8 when the recipe's
 *              forward / backward format is FP8; with TE the weight gradient
 *              accumulates into the main gradient in the GEMM epilogue (read +
 *              write of it, fp32 or bf16).
 *   attention  fused kernels (flash2, flash3, cudnn): 4 tok seq q_dim/tp FLOPs
 *              forward halved for causal masking, 2.5x that backward, at the
 *              kernel's efficiency curve for this GPU, head dim and the key length
 *              a rank's chunk sees (planner/arch.c); materialized: the batched
 *              QK^T and PV GEMMs (and the four backward ones) through the GEMM
 *              model, or the bytes the scores move (plan_bytes.h: FP32 scores,
 *              softmax, P and dS), whichever is longer.
 *   memory-bound kernels  the stack's kernel list (plan_kernels.c), each at
 *              least one launch floor.
 *   TP / CP    the layer's collectives (plan_comm.c), hidden behind the layer's
 *              GEMMs (TP) or attention (CP) up to the stack's overlap fraction;
 *              the rest is exposed.
 * Recompute adds: full — the forward again (GEMMs, attention, kernels, TP);
 * selective — the attention core; op — the matmuls the policy does not save
 * (K projection, output projection, and FC1's up half with SwiGLU or FC2 with
 * GeLU) and every pointwise kernel of the forward.
 * The first stage adds the embedding gather (and its scatter-add backward), the
 * last the final norm, the LM head GEMMs (BF16) and the loss. Stages may hold
 * different layer counts (uneven pipelines); a micro-batch costs the slowest
 * stage plus its exposed pipeline send/recv, and the pipeline runs
 *   m (t_max + t_p2p) + (sum over stages of t_s - t_max) / vpp
 * (the bubble: fill and drain, shortened by interleaving). Per step come the
 * exposed DP collectives — the gradient reduce behind the last micro-batch's
 * backward (every micro-batch's at ZeRO-2/3), the parameter gather behind the
 * first forward (every layer at ZeRO-3), each hidden up to the stack's DP
 * overlap with one layer-sized bucket left exposed (Megatron's bucketing: "only
 * one DP communication chunk" is exposed) — the optimizer (reads gradient,
 * master, m, v; writes master, m, v and the weight, over HBM; scaled states
 * read all four once more, plan_bytes.h), FP8 main gradients committed from
 * their FP32 staging buffer (plan_bytes.h, counted as non-GEMM time), the FP8 weight
 * casts (once per step when cached, per micro-batch otherwise), amax reductions
 * and the tied-embedding gradient sum.
 * Model FLOPs (for MFU) are 6 x (linear weights + LM head) x tokens plus
 * attention 12*L*q_dim*seq per token (PaLM appendix B; no causal halving, no
 * recompute); MFU is reported against the BF16 and the FP8 dense peak. */
#include "planner/arch.h"
#include "planner/plan_bytes.h"
#include "planner/plan_internal.h"

typedef struct {
    double gemm_f, gemm_b, attn_f, attn_b, elem_f, elem_b;
    double rc_gemm, rc_attn, rc_elem; /* recompute added to the backward */
    double tp_f, tp_b, cp;            /* exposed collectives */
    double tp_raw;                    /* TP collectives before overlap (f + b) */
} LayerT;

typedef struct {
    double fwd, bwd, gemm, attn, tp, cp;
} StageT;

static double maxd(double a, double b) { return a > b ? a : b; }
static double exposed(double comm, double window, double ov) { return maxd(0.0, comm - ov * window); }

/* Time of one call of collective c (0 when unused). */
static double call_s(const Collective *c) { return c->calls ? c->time_s / (double)c->calls : 0; }

static void attention(const PlanInput *in, const Geo *g, const GemmGpu *gg, LayerT *L)
{
    const GpuSpec *gp = in->gpu;
    AttnImpl k = plan_attn_kernel(in);
    double tok = (double)g->tok, seq = (double)g->seq, hd = (double)in->model->head_dim;
    if (k == ATTN_MATERIALIZED) {
        /* the GEMMs (QK^T, PV; backward dO V^T, P^T dO, dS K, dS^T Q) through the GEMM model with the scores
         * left out of their traffic, against every byte the scores move (plan_bytes.h: FP32 scores, softmax,
         * P and dS in BF16), whichever is longer; dropout adds its mask and a pass over P */
        uint64_t sq = g->s_local, skv = g->seq, d = in->model->head_dim, bt = g->mbs * g->heads_t;
        double tf = gemm_time(gg, sq, skv, d, bt, 0, 0) + gemm_time(gg, sq, d, skv, bt, 0, 2);
        double tb = gemm_time(gg, sq, skv, d, bt, 0, 0) + gemm_time(gg, skv, d, sq, bt, 0, 2) +
                    gemm_time(gg, sq, d, skv, bt, 0, 2) + gemm_time(gg, skv, d, sq, bt, 0, 2);
        double el = tok * (double)g->heads_t * seq, ib = 1.0 / (gp->hbm_bw * in->eff_hbm);
        /* dropout: forward writes the mask (1) and rewrites P (2 + 2); backward reads the mask (1) and dP (2) */
        double drop_f = in->dropout ? 5.0 : 0.0, drop_b = in->dropout ? 3.0 : 0.0;
        L->attn_f = maxd(maxd(tf, (pb_attn_mat_bytes_fwd(el, 2.0) + el * drop_f) * ib), tf + 2 * in->launch_s);
        L->attn_b = maxd(maxd(tb, (pb_attn_mat_bytes_bwd(el, 2.0) + el * drop_b) * ib), tb + in->launch_s);
        return;
    }
    const AttnCurve *c = arch_attn(arch_row(gp->sm), k);
    double e = in->eff_attn > 0 ? in->eff_attn : c->e_fwd * arch_hd_factor(c, in->model->head_dim) * gpu_sustained(gp);
    double x = (double)g->s_local; /* keys one rank's chunk attends to at a time */
    double ef = e * x / (x + c->s_half), eb = e * c->bwd * x / (x + c->s_half_bwd);
    double fl = 2.0 * tok * seq * (double)g->heads_t * hd; /* 4 tok seq q/tp, halved for the causal mask */
    L->attn_f = maxd(fl / (gp->flops_bf16 * ef), in->launch_s);
    L->attn_b = maxd(2.5 * fl / (gp->flops_bf16 * eb), 2 * in->launch_s);
}

/* One layer and micro-batch, and its recompute. */
static void layer(const PlanInput *in, const Geo *g, const GemmGpu *gg, const Plan *p, LayerT *L)
{
    const Recipe *rc = in->recipe;
    int f8 = dt_fp8(rc->gemm_fwd), b8 = dt_fp8(rc->gemm_bwd);
    double gb = (double)dt_bytes(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]));
    /* TE accumulates into the main grad in the epilogue (unless the accumulation is a separate kernel) */
    double wout = in->fusion == FUSE_TE && in->grad_acc_fusion ? 2.0 * gb : 2.0;
    /* a row-wise-scaled forward GEMM runs PyTorch's CUTLASS kernel, slower than cuBLASLt's (arch.c) */
    double fslow = rc->linear == LIN_TORCHAO_ROWWISE ? 1.0 / arch_rowwise_gemm_rel : 1.0;
    uint64_t tok = g->tok;
    double gf[LIN_COUNT];
    L->gemm_f = L->gemm_b = 0;
    for (int i = 0; i < LIN_COUNT; i++) {
        uint64_t N = g->lin_rows[i], K = g->lin_cols[i];
        gf[i] = gemm_time(gg, tok, N, K, 1, f8, 2) * fslow;
        L->gemm_f += gf[i];
        L->gemm_b += gemm_time(gg, tok, K, N, 1, b8, 2) + gemm_time(gg, N, K, tok, 1, b8, wout);
    }
    attention(in, g, gg, L);
    LayerElem le;
    plan_layer_elem(in, g, &le);
    L->elem_f = le.fwd, L->elem_b = le.bwd;

    /* TP and CP collectives of one layer and micro-batch */
    const Collective *c = p->coll;
    double tpf, tpb;
    if (c[CO_TP_AR_FWD].calls) {
        tpf = 2 * call_s(&c[CO_TP_AR_FWD]), tpb = 2 * call_s(&c[CO_TP_AR_BWD]);
    } else {
        tpf = 2 * call_s(&c[CO_TP_AG_FWD]) + 2 * call_s(&c[CO_TP_RS_FWD]);
        tpb = 4 * call_s(&c[CO_TP_AG_BWD]) + 2 * call_s(&c[CO_TP_RS_BWD]);
    }
    L->tp_raw = tpf + tpb;
    L->tp_f = exposed(tpf, L->gemm_f, in->overlap_tp);
    L->tp_b = exposed(tpb, L->gemm_b, in->overlap_tp);
    L->cp = exposed(3 * call_s(&c[CO_CP_KV]), L->attn_f + L->attn_b, in->overlap_cp);

    L->rc_gemm = L->rc_attn = L->rc_elem = 0;
    switch (in->recompute) {
    case RECOMPUTE_FULL: L->rc_gemm = L->gemm_f, L->rc_attn = L->attn_f, L->rc_elem = L->elem_f + L->tp_f; break;
    case RECOMPUTE_SELECTIVE: L->rc_attn = L->attn_f; break;
    case RECOMPUTE_OP: {
        uint64_t kv = g->kv_t, h = g->h;
        L->rc_gemm = gemm_time(gg, tok, kv, h, 1, f8, 2) * fslow + gf[LIN_PROJ] +
                     (g->k == 2 ? gemm_time(gg, tok, g->F_t, h, 1, f8, 2) * fslow : gf[LIN_FC2]);
        L->rc_elem = L->elem_f;
        break;
    }
    default: break;
    }
}

/* One micro-batch through a stage with Ls layers. */
static StageT stage(const PlanInput *in, const Geo *g, const GemmGpu *gg, const LayerT *L, uint64_t Ls, int first,
                    int last)
{
    StageT s;
    double n = (double)Ls, tok = (double)g->tok, h = (double)g->h, ib = 1.0 / (in->gpu->hbm_bw * in->eff_hbm);
    s.gemm = n * (L->gemm_f + L->gemm_b + L->rc_gemm);
    s.attn = n * (L->attn_f + L->attn_b + L->rc_attn);
    s.tp = n * (L->tp_f + L->tp_b);
    s.cp = n * L->cp;
    s.fwd = n * (L->gemm_f + L->attn_f + L->elem_f + L->tp_f) + s.cp / 2;
    s.bwd = n * (L->gemm_b + L->attn_b + L->elem_b + L->tp_b + L->rc_gemm + L->rc_attn + L->rc_elem) + s.cp / 2;
    if (first) { /* embedding gather, and its scatter-add in backward */
        s.fwd += maxd(tok * h * 4 * ib, in->launch_s);
        s.bwd += maxd(tok * h * 4 * ib, in->launch_s);
    }
    if (last) {
        uint64_t V = g->Vp_t, t = g->tok, hh = g->h;
        double head_f = gemm_time(gg, t, V, hh, 1, 0, 2);
        double gb = (double)dt_bytes(plan_grad_dt(in, in->recipe->other.dt[STATE_GRAD]));
        double head_b = gemm_time(gg, t, hh, V, 1, 0, 2) + gemm_time(gg, V, hh, t, 1, 0, 2.0 * gb);
        double ce = tok * (double)V * 8 * ib; /* logits to fp32, softmax, loss; its gradient */
        double norm = tok * h * 4 * ib;
        s.gemm += head_f + head_b;
        s.fwd += head_f + maxd(ce, 3 * in->launch_s) + maxd(norm, in->launch_s);
        s.bwd += head_b + maxd(ce, 2 * in->launch_s) + maxd(1.5 * norm, 2 * in->launch_s);
    }
    return s;
}

/* Spread an exposed total over the collectives of one group in proportion to their times. */
static void expose(Plan *p, int lo, int hi, double exposed_total, double raw_total)
{
    double f = raw_total > 0 ? exposed_total / raw_total : 0;
    for (int i = lo; i <= hi; i++) p->coll[i].exposed_s = p->coll[i].time_s * f;
}

void plan_time(const PlanInput *in, const Geo *g, Plan *p)
{
    const Recipe *rc = in->recipe;
    TimeBreakdown *tb = &p->time;
    GemmGpu gg;
    gemm_gpu_init(in, &gg);
    LayerT L;
    layer(in, g, &gg, p, &L);
    double m = (double)g->m, hbm = in->gpu->hbm_bw * in->eff_hbm;

    /* stages: first, last, a middle one */
    int one = g->pp == 1;
    StageT sf = stage(in, g, &gg, &L, g->Lf, 1, one), sl = one ? sf : stage(in, g, &gg, &L, g->Ll, 0, 1);
    StageT smid = g->pp > 2 ? stage(in, g, &gg, &L, g->Lm, 0, 0) : sf;
    double tf = sf.fwd + sf.bwd, tl = sl.fwd + sl.bwd, tm = smid.fwd + smid.bwd;
    const StageT *slow = &sf;
    double tmax = tf, sum = tf;
    if (!one) {
        sum = tf + tl + (double)(g->pp - 2) * tm;
        if (tl > tmax) tmax = tl, slow = &sl;
        if (g->pp > 2 && tm > tmax) tmax = tm, slow = &smid;
    }

    /* pipeline send/recv on the critical path: activations in, gradients in, per chunk */
    Collective *cpp = &p->coll[CO_PP_P2P];
    /* only an interleaved schedule has another chunk's compute to hide a send behind (Megatron's
     * overlap_p2p_comm needs virtual stages; plain 1F1B waits for its input) */
    double ovpp = g->vpp > 1 ? in->overlap_pp : 0;
    double p2p = one ? 0 : 2.0 * (double)g->vpp * call_s(cpp) * (1.0 - ovpp);
    cpp->exposed_s = p2p * m;
    double pipe = m * (tmax + p2p) + (sum - tmax) / (double)g->vpp;

    tb->gemm_s = slow->gemm * m;
    tb->attn_s = slow->attn * m;
    tb->tp_comm_s = slow->tp * m;
    tb->cp_comm_s = slow->cp * m;
    tb->nongemm_s = maxd(0.0, (tmax - slow->gemm - slow->attn - slow->tp - slow->cp) * m);
    tb->pp_comm_s = p2p * m;
    tb->bubble_s = (sum - tmax) / (double)g->vpp;
    tb->microbatch_s = tmax + p2p;
    expose(p, CO_TP_AR_FWD, CO_TP_RS_BWD, (L.tp_f + L.tp_b) * (double)p->stage_layers * m,
           L.tp_raw * (double)p->stage_layers * m);
    p->coll[CO_CP_KV].exposed_s = L.cp * (double)p->stage_layers * m;

    /* DP: gradient reduce behind the backward, parameter gather behind the forward, one bucket exposed */
    const StageT *me = p->stage == 0 ? &sf : p->stage == g->pp - 1 ? &sl : &smid;
    double chunks = g->vpp > 1 ? (double)g->vpp : (double)(p->stage_layers ? p->stage_layers : 1);
    double ov = in->overlap_dp, dp = 0;
    Collective *ar = &p->coll[CO_DP_GRAD_AR], *rs = &p->coll[CO_DP_GRAD_RS], *ag = &p->coll[CO_DP_PARAM_AG];
    Collective *red = ar->calls ? ar : rs;
    if (red->calls) {
        double window = red->calls > 1 ? me->bwd * (double)red->calls : me->bwd;
        red->exposed_s = exposed(red->time_s, window, ov) + (ov > 0 ? call_s(red) / chunks : 0);
        if (red->exposed_s > red->time_s) red->exposed_s = red->time_s;
        dp += red->exposed_s;
    }
    if (ag->calls) {
        double window = ag->calls > 1 ? (me->fwd + me->bwd) * m : me->fwd;
        ag->exposed_s = exposed(ag->time_s, window, ov) + (ov > 0 ? call_s(ag) / chunks : 0);
        if (ag->exposed_s > ag->time_s) ag->exposed_s = ag->time_s;
        dp += ag->exposed_s;
    }
    tb->dp_comm_s = dp;

    /* optimizer: per state, read+write (gradient read only, weight written) */
    double ob = 0;
    const MemTerm *mt = p->mem;
    ob += (double)(mt[MT_GRAD_GEMM].bytes + mt[MT_GRAD_OTHER].bytes);
    ob += 2.0 * (double)(mt[MT_MASTER_GEMM].bytes + mt[MT_MASTER_OTHER].bytes + mt[MT_OPTIM_M_GEMM].bytes +
                         mt[MT_OPTIM_M_OTHER].bytes + mt[MT_OPTIM_V_GEMM].bytes + mt[MT_OPTIM_V_OTHER].bytes);
    double wfrac = mt[MT_MASTER_GEMM].elements && p->params_gemm_gpu
                       ? (double)mt[MT_MASTER_GEMM].elements / (double)p->params_gemm_gpu
                       : 1.0;
    ob += wfrac * (double)(mt[MT_WEIGHT_GEMM].bytes + mt[MT_WEIGHT_OTHER].bytes);
    /* scaled states (FP8-LM / MS-AMP): a second pass reads gradient, master, m and v again (plan_bytes.h) */
    ob += pb_optim_second_pass_bytes(&rc->gemm, (double)mt[MT_GRAD_GEMM].bytes, (double)mt[MT_MASTER_GEMM].bytes,
                                     (double)mt[MT_OPTIM_M_GEMM].bytes, (double)mt[MT_OPTIM_V_GEMM].bytes);
    ob += pb_optim_second_pass_bytes(&rc->other, (double)mt[MT_GRAD_OTHER].bytes, (double)mt[MT_MASTER_OTHER].bytes,
                                     (double)mt[MT_OPTIM_M_OTHER].bytes, (double)mt[MT_OPTIM_V_OTHER].bytes);
    tb->optimizer_s = ob / hbm;

    /* FP8 main gradients committed from their FP32 staging buffer once per step (plan_bytes.h); MS-AMP requantizes
     * them every micro-batch instead (plan_kernels.c) */
    double commit =
        rc->linear == LIN_MSAMP
            ? 0.0
            : pb_grad_commit_bytes((double)p->params_gemm_gpu, plan_grad_dt(in, rc->gemm.dt[STATE_GRAD])) / hbm;
    tb->nongemm_s += commit;

    /* FP8 weight casts: cached copies once per step, uncached ones every micro-batch; recipes without copies
     * (casts in the GEMM call, torchao-style) cast forward and again backward */
    double wc = 0, copies = (double)recipe_fp8_copy_bytes_per_param(rc);
    Dtype src = rc->gemm.dt[STATE_WEIGHT] != DT_NONE ? rc->gemm.dt[STATE_WEIGHT] : rc->gemm.dt[STATE_MASTER];
    double per = (double)dt_bytes(src) * (rc->scaling == SCALING_CURRENT ? 2.0 : 1.0);
    if (copies > 0)
        wc = (double)p->params_gemm_gpu * (per + copies) / hbm * (in->fp8_weight_cache ? 1.0 : m);
    else if (recipe_fp8_gemm(rc) && !dt_fp8(src))
        wc = (double)p->params_gemm_gpu * 2.0 * (per + 1.0) / hbm * m;
    tb->weight_cast_s = wc;
    tb->other_s = p->coll[CO_AMAX_AR].time_s + p->coll[CO_EMB_GRAD_AR].time_s;
    p->coll[CO_AMAX_AR].exposed_s = p->coll[CO_AMAX_AR].time_s;
    p->coll[CO_EMB_GRAD_AR].exposed_s = p->coll[CO_EMB_GRAD_AR].time_s;

    tb->step_s = pipe + dp + tb->optimizer_s + commit + wc + tb->other_s;

    /* throughput and MFU */
    double gbs = (double)p->in.gbs, seq = (double)g->seq, Lh = (double)g->L;
    double lin_full = (double)g->gemm_layer * (double)g->tp; /* per layer, whole (unsharded) */
    double n_flop = Lh * lin_full + (double)g->h * (double)g->V;
    double per_tok = 6.0 * n_flop + 12.0 * Lh * (double)g->q_dim * seq;
    p->model_flops_step = per_tok * gbs * seq;
    double step = tb->step_s;
    p->samples_per_s = gbs / step;
    p->tokens_per_s = gbs * seq / step;
    p->tflops_per_gpu = p->model_flops_step / step / (double)g->world / 1e12;
    p->mfu_bf16_pct = 100.0 * p->tflops_per_gpu * 1e12 / in->gpu->flops_bf16;
    p->mfu_fp8_pct = in->gpu->flops_fp8 > 0 ? 100.0 * p->tflops_per_gpu * 1e12 / in->gpu->flops_fp8 : 0;
}
