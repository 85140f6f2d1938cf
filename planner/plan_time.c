/* planner/plan_time.c — step time, throughput and MFU.
 *
 * A layer and micro-batch is timed by plan_layer_time.c (GEMMs, attention, the stack's kernels, TP / CP and
 * recompute).
 * The first stage adds the embedding gather (and its scatter-add backward), the
 * last the final norm, the LM head GEMMs (BF16) and the loss; with TP each adds
 * its vocabulary-parallel collectives (plan_comm_vocab.c), exposed. Stages may hold
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
 * casts (once per step when cached, per micro-batch otherwise), amax reductions,
 * the tied-embedding gradient sum and the TP-replicated gradients' all-reduce.
 * Model FLOPs (for MFU) are 6 x (linear weights + LM head) x tokens plus
 * attention 12*L*q_dim*seq per token (PaLM appendix B; no causal halving, no
 * recompute); MFU is reported against the BF16 and the FP8 dense peak. */
#include <string.h>

#include "planner/arch.h"
#include "planner/plan_bytes.h"
#include "planner/plan_internal.h"

typedef struct {
    double fwd, bwd, gemm, attn, tp, cp;
    double xgemm, route, ep, w; /* expert GEMMs, router/permutation kernels, exposed all-to-alls, wgrad GEMMs */
    double host;                /* MoE layers' host issue beyond their GPU time */
    double router, perm, act;   /* MoE layers' router, permutes, expert activation and casts (LayerT router_k ...) */
} StageT;

/* The layers' part of a stage with n[k] layers of each kind (dense models: kind 0 only): stage_ends adds the
 * embedding, head and loss of a first or last stage (stages of one layer count share this part). */
static void stage_layers(const LayerT *L, const uint64_t *n, StageT *o)
{
    /* summed in locals, each stored once: stores to *o re-read in the loop, or a StageT built on the stack and copied
     * out, cost more than the sums */
    double gemm = 0, attn = 0, tp = 0, cp = 0, xgemm = 0, route = 0, router = 0, perm = 0, act = 0, ep = 0, w = 0;
    double host = 0, fwd = 0, bwd = 0;
    for (int k = 0; k < XK_COUNT; k++) {
        if (!n[k]) continue; /* dense models: kind 0 only */
        const LayerT *l = &L[k];
        double nk = (double)n[k];
        gemm += nk * (l->gemm_f + l->gemm_b + l->rc_gemm);
        attn += nk * (l->attn_f + l->attn_b + l->rc_attn);
        tp += nk * (l->tp_f + l->tp_b);
        cp += nk * l->cp;
        xgemm += nk * (l->xg_f + l->xg_b);
        route += nk * (l->route_f + l->route_b);
        router += nk * l->router_k, perm += nk * l->perm_k, act += nk * l->act_k;
        ep += nk * (l->ep_f + l->ep_b);
        w += nk * l->wg;
        host += nk * (l->host_f + l->host_b);
        fwd += nk * (l->gemm_f + l->attn_f + l->elem_f + l->tp_f + l->ep_f + l->host_f);
        bwd += nk * (l->gemm_b + l->attn_b + l->elem_b + l->tp_b + l->ep_b + l->rc_gemm + l->rc_attn + l->rc_elem +
                     l->host_b);
    }
    /* of a layer's 3 K/V exchanges one is in the forward (the K/V gather) and two in the backward (the gather
     * again, the reduce-scatter of dK, dV) */
    o->fwd = fwd + cp / 3, o->bwd = bwd + cp * 2 / 3;
    o->gemm = gemm, o->attn = attn, o->tp = tp, o->cp = cp, o->xgemm = xgemm, o->route = route, o->ep = ep, o->w = w;
    o->host = host, o->router = router, o->perm = perm, o->act = act;
}

/* One micro-batch through a stage whose layers' part is s (stage_layers) with `mtp` multi-token-prediction depths
 * (their layers are in s; here their projection, norms, head and loss). */
static void stage_ends(const PlanInput *in, const Geo *g, const GemmGpu *gg, const VocabCallT *vt, StageT *s, int first,
                       int last, uint64_t mtp)
{
    double tok = (double)g->tok, h = (double)g->h, ib = gg->inv_elem;
    double vf, vb; /* TP: vocabulary-parallel embedding, LM head and loss collectives, exposed */
    plan_vocab_time(in, g, vt, first, last, &vf, &vb);
    s->fwd += vf, s->bwd += vb, s->tp += vf + vb;
    if (first) { /* embedding gather, and its scatter-add in backward */
        s->fwd += maxd(tok * h * 4 * ib, in->launch_s);
        s->bwd += maxd(tok * h * 4 * ib, in->launch_s);
    }
    if (last) {
        uint64_t V = g->Vp_t, t = g->tok, hh = g->h;
        double gb = (double)dt_bytes(plan_grad_dt(in, in->recipe->other.dt[STATE_GRAD]));
        double head_f, head_d, head_w; /* the LM head [Vp/tp, h] as a BF16 linear: forward, dgrad, wgrad */
        gemm_time_linears(gg, t, &V, &hh, 1, 0, 0, 2.0 * gb, 0, &head_f, &head_d, &head_w);
        double head_b = head_d + head_w;
        double ce = tok * (double)V * 8 * ib; /* logits to fp32, softmax, loss; its gradient */
        /* the forward's loss kernel and final norm at their kinds' rates where the profile has them (ElemKind) */
        double ibx = kind_inv(in->gpu, ELEM_XENT, ib), ibn = kind_inv(in->gpu, ELEM_NORM, ib);
        double ce_f = tok * (double)V * 8 * ibx, ce_b = ce;
        if (in->fusion == FUSE_FP8PLAN) { /* the executor's loss kernel writes d(logits) in the forward (both
                                           * halves there); the backward converts that FP32 d(logits) to the
                                           * activation dtype for the head's two GEMMs (exec/model/model_pass.c) */
            Dtype w = in->recipe->other.dt[STATE_WEIGHT];
            double act = w == DT_FP32 || w == DT_FP16 || w == DT_BF16 ? (double)dt_bytes(w) : 2.0;
            ce_f = 2 * ce_f, ce_b = tok * (double)V * (4 + act) * ib;
        }
        double norm = tok * h * 4 * ib, normf = tok * h * 4 * ibn;
        double reps = 1.0 + (double)mtp; /* each MTP depth has its own head, loss and final norm */
        s->gemm += reps * (head_f + head_b), s->w += reps * head_w;
        s->fwd += reps * (head_f + maxd(ce_f, 3 * in->launch_s) + maxd(normf, in->launch_s));
        s->bwd += reps * (head_b + maxd(ce_b, 2 * in->launch_s) + maxd(1.5 * norm, 2 * in->launch_s));
        if (mtp) { /* per depth: embedding gather, enorm + hnorm, eh_proj [tok x h/tp x 2h] */
            int f8 = dt_fp8(in->recipe->gemm_fwd), b8 = dt_fp8(in->recipe->gemm_bwd);
            uint64_t ht = g->h_t;
            double ef = gemm_time(gg, t, ht, 2 * hh, 1, f8, 2), ew = gemm_time(gg, ht, 2 * hh, t, 1, b8, 2.0 * gb);
            double eb = gemm_time(gg, t, 2 * hh, ht, 1, b8, 2) + ew, m2 = (double)mtp;
            s->gemm += m2 * (ef + eb), s->w += m2 * ew;
            s->fwd += m2 * (ef + maxd(tok * h * 4 * ib, in->launch_s) + maxd(2 * norm, 2 * in->launch_s));
            s->bwd += m2 * (eb + maxd(tok * h * 4 * ib, in->launch_s) + maxd(3 * norm, 4 * in->launch_s));
        }
    }
}

static void stage(const PlanInput *in, const Geo *g, const GemmGpu *gg, const VocabCallT *vt, const LayerT *L,
                  const uint64_t *n, int first, int last, uint64_t mtp, StageT *s)
{
    stage_layers(L, n, s);
    stage_ends(in, g, gg, vt, s, first, last, mtp);
}

/* Spread an exposed total over the collectives of one group in proportion to their times. */
static void expose(Plan *p, int lo, int hi, double exposed_total, double raw_total)
{
    double f = raw_total > 0 ? exposed_total / raw_total : 0;
    for (int i = lo; i <= hi; i++) p->coll[i].exposed_s = p->coll[i].time_s * f;
}

/* The exposed time of one gradient-reduce / parameter-gather set (DP or expert DP): the reduce behind the
 * backward, the gather behind the forward, up to the DP overlap, one bucket (chunk) always exposed. */
static double dp_exposed(const PlanInput *in, Plan *p, const StageT *me, double m, double chunks, CollectiveId ar_id,
                         CollectiveId rs_id, CollectiveId ag_id)
{
    double ov = in->overlap_dp, dp = 0;
    Collective *ar = &p->coll[ar_id], *rs = &p->coll[rs_id], *ag = &p->coll[ag_id];
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
    return dp;
}

/* The part of a class's working weight its optimizer updates in place on this GPU where it keeps no master (MS-AMP
 * O1: pb_optim_inplace_weight), in bytes: the weight's elements whose Adam m this GPU holds (all, or 1/d under the
 * distributed optimizer); it is read and written as a master is. 0 for a class with a master. */
static double inplace_bytes(const Plan *p, const StateSet *s, MemTermId w, MemTermId m1)
{
    const MemTerm *mt = p->mem;
    if (!pb_optim_inplace_weight(s) || !mt[w].elements) return 0.0;
    return (double)mt[w].bytes * (double)mt[m1].elements / (double)mt[w].elements;
}

/* One class's optimizer bytes as plan_time counts them: gradient read, master (or the weight updated in place:
 * inpl), m and v read and written, the working weight's share written (wbytes), the second pass of scaled states. */
static double optim_class_bytes(const Plan *p, MemTermId grad, MemTermId master, MemTermId m1, MemTermId v,
                                double wbytes, double inpl, const StateSet *s)
{
    const MemTerm *mt = p->mem;
    const double ma = (double)mt[master].bytes + inpl;
    return (double)mt[grad].bytes + 2.0 * (ma + (double)(mt[m1].bytes + mt[v].bytes)) + wbytes +
           pb_optim_second_pass_bytes(s, (double)mt[grad].bytes, ma, (double)mt[m1].bytes, (double)mt[v].bytes);
}

void plan_time(const PlanInput *in, const Geo *g, const GemmGpu *gg, Plan *p)
{
    const Recipe *rc = in->recipe;
    TimeBreakdown *tb = &p->time;
    VocabCallT vt;
    plan_vocab_call_times(in, g, p, &vt);
    LayerT L[XK_COUNT];
    const MoeGeo *x = &g->x;
    if (x->on) {
        moe_layer_times(in, g, gg, p, L);
    } else {
        plan_layer_time(in, g, gg, p, &L[0]); /* L[1] stays unwritten: no stage holds a layer of kind 1 (n[1] = 0) */
    }
    double m = (double)g->m, hbm = gpu_mem_bw(in->gpu, in->eff_hbm);

    /* stages: first, last, a middle one (layers of each kind; MTP layers on the last) */
    int one = g->pp == 1;
    uint64_t nf[XK_COUNT] = {g->Lf, 0}, nl[XK_COUNT] = {g->Ll, 0}, nm[XK_COUNT] = {g->Lm, 0};
    uint64_t mtp = x->mtp, mtk = x->E ? XK_MOE : XK_DENSE;
    if (x->on) {
        for (int k = 0; k < XK_COUNT; k++) nf[k] = k ? x->nx[0] : x->nd[0], nm[k] = k ? x->nx[1] : x->nd[1];
        for (int k = 0; k < XK_COUNT; k++) nl[k] = k ? x->nx[2] : x->nd[2];
        nl[mtk] += mtp;
        if (one) nf[mtk] += mtp;
    }
    /* each stage's rows written in place (stage_layers, then stage_ends), none copied: a StageT returned, passed or
     * assigned by value was copied in 16-byte moves from fields just stored 8 bytes at a time, which stalls store
     * forwarding (perf: ~3 % of a plan's time); a stage with the first's layer counts works its layers' part out
     * again, the same bits */
    StageT sf, last_own, mid_own, s1;
    const StageT *sl = &sf, *smid = &sf;
    stage(in, g, gg, &vt, L, nf, 1, one, one ? mtp : 0, &sf);
    if (!one) stage(in, g, gg, &vt, L, nl, 0, 1, mtp, &last_own), sl = &last_own;
    if (g->pp > 2) stage(in, g, gg, &vt, L, nm, 0, 0, 0, &mid_own), smid = &mid_own;
    if (x->on && g->pp > 3) { /* the middle stages differ when the first layers are dense: the slower of 1 and pp-2 */
        uint64_t n1[XK_COUNT];
        moe_stage_kinds(in, g, 1, &n1[0], &n1[1]);
        stage(in, g, gg, &vt, L, n1, 0, 0, 0, &s1);
        if (s1.fwd + s1.bwd > smid->fwd + smid->bwd) smid = &s1;
    }
    double tf = sf.fwd + sf.bwd, tl = sl->fwd + sl->bwd, tm = smid->fwd + smid->bwd;
    const StageT *slow = &sf;
    double tmax = tf, sum = tf;
    if (!one) {
        sum = tf + tl + (double)(g->pp - 2) * tm;
        if (tl > tmax) tmax = tl, slow = sl;
        if (g->pp > 2 && tm > tmax) tmax = tm, slow = smid;
    }

    /* pipeline send/recv on the critical path: activations in, gradients in, per chunk */
    Collective *cpp = &p->coll[CO_PP_P2P];
    /* only an interleaved schedule has another chunk's compute to hide a send behind (Megatron's
     * overlap_p2p_comm needs virtual stages; plain 1F1B waits for its input) */
    double ovpp = g->vpp > 1 ? in->overlap_pp : 0;
    double p2p = one ? 0 : 2.0 * (double)g->vpp * call_s(cpp) * (1.0 - ovpp);
    double pipe = m * (tmax + p2p) + (sum - tmax) / (double)g->vpp, reps = m, bubble = (sum - tmax) / (double)g->vpp;
    StageT pair;
    if (in->dualpipe) {
        /* DualPipe: rank r runs stage r for half the micro-batches and stage pp-1-r for the other half (rank 0:
         * first + last, the others two middle stages); p2p and all-to-alls hide behind the paired chunks; the
         * bubble is (pp/2 - 1)(F&B + B - 3W) (DeepSeek-V3 Table 2) with F&B = F + B of one chunk */
        pair = sf;
        const StageT *b = one ? &sf : sl;
        pair.fwd += b->fwd, pair.bwd += b->bwd, pair.gemm += b->gemm, pair.attn += b->attn, pair.tp += b->tp;
        pair.cp += b->cp, pair.xgemm += b->xgemm, pair.route += b->route, pair.ep += b->ep, pair.w += b->w;
        pair.host += b->host, pair.router += b->router, pair.perm += b->perm, pair.act += b->act;
        if (g->pp > 2 && 2 * tm > tf + tl) {
            pair = *smid;
            pair.fwd *= 2, pair.bwd *= 2, pair.gemm *= 2, pair.attn *= 2, pair.tp *= 2, pair.cp *= 2;
            pair.xgemm *= 2, pair.route *= 2, pair.ep *= 2, pair.w *= 2, pair.host *= 2;
            pair.router *= 2, pair.perm *= 2, pair.act *= 2;
        }
        const StageT *big = tf >= tl && tf >= tm ? &sf : tl >= tm ? sl : smid;
        p2p = 0, reps = m / 2, tmax = pair.fwd + pair.bwd, slow = &pair;
        bubble = maxd(0.0, (double)(g->pp / 2 - 1) * (big->fwd + 2 * big->bwd - 3 * big->w));
        pipe = reps * tmax + bubble;
    }
    cpp->exposed_s = p2p * m;

    tb->gemm_s = (slow->gemm - slow->xgemm) * reps;
    tb->expert_gemm_s = slow->xgemm * reps;
    tb->attn_s = slow->attn * reps;
    tb->tp_comm_s = slow->tp * reps;
    tb->cp_comm_s = slow->cp * reps;
    tb->ep_comm_s = slow->ep * reps;
    tb->moe_route_s = slow->route * reps;
    tb->moe_router_s = slow->router * reps, tb->moe_permute_s = slow->perm * reps, tb->moe_act_s = slow->act * reps;
    tb->moe_host_s = slow->host * reps;
    tb->nongemm_s =
        maxd(0.0, (tmax - slow->gemm - slow->attn - slow->tp - slow->cp - slow->ep - slow->route - slow->host) * reps);
    tb->pp_comm_s = p2p * m;
    tb->bubble_s = bubble;
    tb->microbatch_s = in->dualpipe ? tmax / 2 : tmax + p2p;
    tb->fwd_s = slow->fwd * reps, tb->bwd_s = slow->bwd * reps;
    if (!x->on) {
        expose(p, CO_TP_AR_FWD, CO_TP_RS_BWD, (L[0].tp_f + L[0].tp_b) * (double)p->stage_layers * m,
               L[0].tp_raw * (double)p->stage_layers * m);
        p->coll[CO_CP_KV].exposed_s = L[0].cp * (double)p->stage_layers * m;
    } else { /* the reported GPU's layers of each kind */
        Ck ck = {0};
        Held hd;
        moe_held(in, g, p->stage, &ck, &hd);
        double tpe = 0, tpr = 0, cpe = 0, epe = 0, epr = 0;
        for (int k = 0; k < XK_COUNT; k++) {
            double n = (double)hd.n[k] * m;
            tpe += n * (L[k].tp_f + L[k].tp_b), tpr += n * L[k].tp_raw, cpe += n * L[k].cp;
            epe += n * (L[k].ep_f + L[k].ep_b), epr += n * L[k].ep_raw;
        }
        expose(p, CO_TP_AR_FWD, CO_TP_RS_BWD, tpe, tpr);
        p->coll[CO_CP_KV].exposed_s = cpe;
        expose(p, CO_EP_DISPATCH_FWD, CO_ETP_RS, epe, epr);
    }

    /* DP (and expert DP): gradient reduce behind the backward, parameter gather behind the forward, one bucket
     * exposed */
    const StageT *me = in->dualpipe ? &pair : p->stage == 0 ? &sf : p->stage == g->pp - 1 ? sl : smid;
    double chunks = g->vpp > 1 ? (double)g->vpp : (double)(p->stage_layers ? p->stage_layers : 1);
    double dp = dp_exposed(in, p, me, m, chunks, CO_DP_GRAD_AR, CO_DP_GRAD_RS, CO_DP_PARAM_AG);
    if (x->on) dp += dp_exposed(in, p, me, m, chunks, CO_EDP_GRAD_AR, CO_EDP_GRAD_RS, CO_EDP_PARAM_AG);
    tb->dp_comm_s = dp;

    /* optimizer: per state, read+write (gradient read only, weight written) */
    double ob = 0;
    const MemTerm *mt = p->mem;
    ob += (double)(mt[MT_GRAD_GEMM].bytes + mt[MT_GRAD_OTHER].bytes);
    ob += 2.0 * (double)(mt[MT_MASTER_GEMM].bytes + mt[MT_MASTER_OTHER].bytes + mt[MT_OPTIM_M_GEMM].bytes +
                         mt[MT_OPTIM_M_OTHER].bytes + mt[MT_OPTIM_V_GEMM].bytes + mt[MT_OPTIM_V_OTHER].bytes);
    /* the share of the working weights written: the master's (the linears' without one: the others') */
    double wfrac = mt[MT_MASTER_GEMM].elements && p->params_gemm_gpu
                       ? (double)mt[MT_MASTER_GEMM].elements / (double)p->params_gemm_gpu
                   : mt[MT_MASTER_OTHER].elements && mt[MT_WEIGHT_OTHER].elements
                       ? (double)mt[MT_MASTER_OTHER].elements / (double)mt[MT_WEIGHT_OTHER].elements
                       : 1.0;
    /* a class whose optimizer updates the weight in place (MS-AMP O1's linears): that part read and written as a
     * master, none written after */
    const double ig = inplace_bytes(p, &rc->gemm, MT_WEIGHT_GEMM, MT_OPTIM_M_GEMM),
                 io = inplace_bytes(p, &rc->other, MT_WEIGHT_OTHER, MT_OPTIM_M_OTHER);
    const double wg = pb_optim_inplace_weight(&rc->gemm) ? 0.0 : wfrac * (double)mt[MT_WEIGHT_GEMM].bytes,
                 wo = pb_optim_inplace_weight(&rc->other) ? 0.0 : wfrac * (double)mt[MT_WEIGHT_OTHER].bytes;
    ob += wg + wo + 2.0 * (ig + io);
    /* scaled states (FP8-LM / MS-AMP): a second pass reads gradient, master, m and v again (plan_bytes.h) */
    ob += pb_optim_second_pass_bytes(&rc->gemm, (double)mt[MT_GRAD_GEMM].bytes, (double)mt[MT_MASTER_GEMM].bytes + ig,
                                     (double)mt[MT_OPTIM_M_GEMM].bytes, (double)mt[MT_OPTIM_V_GEMM].bytes);
    ob +=
        pb_optim_second_pass_bytes(&rc->other, (double)mt[MT_GRAD_OTHER].bytes, (double)mt[MT_MASTER_OTHER].bytes + io,
                                   (double)mt[MT_OPTIM_M_OTHER].bytes, (double)mt[MT_OPTIM_V_OTHER].bytes);
    if (p->params_expert_gpu) { /* the experts' states, the same way */
        ob += (double)mt[MT_GRAD_EXPERT].bytes;
        ob += 2.0 * (double)(mt[MT_MASTER_EXPERT].bytes + mt[MT_OPTIM_M_EXPERT].bytes + mt[MT_OPTIM_V_EXPERT].bytes);
        ob += (mt[MT_MASTER_EXPERT].elements ? (double)mt[MT_MASTER_EXPERT].elements / (double)p->params_expert_gpu
                                             : 1.0) *
              (double)mt[MT_WEIGHT_EXPERT].bytes;
        ob +=
            pb_optim_second_pass_bytes(&rc->gemm, (double)mt[MT_GRAD_EXPERT].bytes, (double)mt[MT_MASTER_EXPERT].bytes,
                                       (double)mt[MT_OPTIM_M_EXPERT].bytes, (double)mt[MT_OPTIM_V_EXPERT].bytes);
    }
    /* --moment-dtype bf16 is Megatron-Core's precision-aware optimizer, TE's FusedAdam (transformer_engine/pytorch/
     * optimizers/fused_adam.py at 04912bf0, step): each bf16 moment is read into an fp32 copy (get_unscaled_state,
     * .float(): 2 + 4 B an element), stepped there (4 + 4 B, where the sum above counts the kept 2 + 2) and cast
     * back (_apply_scale: .bfloat16() 4 + 2 B, copy_ 2 + 2 B): 20 B an element more, 10 x the terms' bytes */
    if (in->moment_dt == MOMENT_BF16)
        ob += 10.0 * (double)(mt[MT_OPTIM_M_GEMM].bytes + mt[MT_OPTIM_V_GEMM].bytes + mt[MT_OPTIM_M_OTHER].bytes +
                              mt[MT_OPTIM_V_OTHER].bytes + mt[MT_OPTIM_M_EXPERT].bytes + mt[MT_OPTIM_V_EXPERT].bytes);
    tb->optimizer_s = ob / hbm;
    /* a measured scaled-state optimizer (calibrate's scaled_optim_gbps): the two-pass classes' bytes at its rate,
     * the rest streamed at hbm (without the column the sum above, unchanged) */
    /* MS-AMP O1's linears (a scaled weight updated in place beside FP32 m and v; calibrate's o1_optim_gbps) at
     * their own measured rate: the same two passes with other states cost another rate per byte */
    const int o1g = pb_optim_inplace_weight(&rc->gemm) && pb_optim_two_pass(&rc->gemm) && in->gpu->o1_optim_bw > 0;
    if (o1g) {
        const double b =
            optim_class_bytes(p, MT_GRAD_GEMM, MT_MASTER_GEMM, MT_OPTIM_M_GEMM, MT_OPTIM_V_GEMM, wg, ig, &rc->gemm);
        tb->optimizer_s = (ob - b) / hbm + b / in->gpu->o1_optim_bw;
    }
    if (in->gpu->scaled_optim_bw > 0 && !o1g) { /* (O1's linears without their own rate: streamed) */
        double ob2 = 0;
        const int two_g = pb_optim_two_pass(&rc->gemm) && !pb_optim_inplace_weight(&rc->gemm),
                  two_o = pb_optim_two_pass(&rc->other) && !pb_optim_inplace_weight(&rc->other);
        if (two_g)
            ob2 +=
                optim_class_bytes(p, MT_GRAD_GEMM, MT_MASTER_GEMM, MT_OPTIM_M_GEMM, MT_OPTIM_V_GEMM, wg, ig, &rc->gemm);
        if (two_o)
            ob2 += optim_class_bytes(p, MT_GRAD_OTHER, MT_MASTER_OTHER, MT_OPTIM_M_OTHER, MT_OPTIM_V_OTHER, wo, io,
                                     &rc->other);
        if (two_g && p->params_expert_gpu)
            ob2 += optim_class_bytes(p, MT_GRAD_EXPERT, MT_MASTER_EXPERT, MT_OPTIM_M_EXPERT, MT_OPTIM_V_EXPERT,
                                     (mt[MT_MASTER_EXPERT].elements
                                          ? (double)mt[MT_MASTER_EXPERT].elements / (double)p->params_expert_gpu
                                          : 1.0) *
                                         (double)mt[MT_WEIGHT_EXPERT].bytes,
                                     0.0, &rc->gemm);
        tb->optimizer_s = (ob - ob2) / hbm + ob2 / in->gpu->scaled_optim_bw;
    }

    /* FP8 main gradients committed from their FP32 staging buffer once per step (plan_bytes.h); MS-AMP requantizes
     * them every micro-batch instead (plan_kernels.c) */
    double fp8w = (double)(p->params_gemm_gpu + p->params_expert_gpu); /* linear weights the GEMMs cast */
    const Dtype gd = plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]);
    double commit = rc->linear == LIN_MSAMP ? 0.0 : pb_grad_commit_bytes(fp8w, gd) / hbm;
    /* the fp8plan executor commits an FP8 main gradient after every micro-batch's backward, in that phase
     * (exec/model/model_grad.c): its FP32 staging zeroed (the first micro-batch: write 4 B) or loaded with the sum so
     * far (the later ones: convert, read 1 B, write 4 B), the amax of the finished sum (read 4 B), the row-wise cast
     * (read 4 B, write 1 B) — each at its kind's rate (ElemKind: the host's cast is bound by its rounding, its amax
     * by the stream), the staging at hbm, the convert at the element-wise rate */
    double commit_bwd = 0;
    if (in->fusion == FUSE_FP8PLAN && rc->linear != LIN_MSAMP && dt_fp8(gd)) {
        commit_bwd = fp8w * (4.0 / hbm + (m - 1.0) * 5.0 / gpu_elem_bw(in->gpu, in->eff_hbm) +
                             m * (4.0 / gpu_kind_bw(in->gpu, ELEM_AMAX, in->eff_hbm) +
                                  5.0 / gpu_kind_bw(in->gpu, ELEM_CAST_ROW, in->eff_hbm)));
    }
    if (in->fusion == FUSE_FP8PLAN) /* the executor zeroes its FP32 main gradients once per step, at the first
                                     * micro-batch's backward (exec/model/model_grad.c): one write of them */
        commit_bwd += ((plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]) == DT_FP32 ? (double)mt[MT_GRAD_GEMM].bytes : 0) +
                       (plan_grad_dt(in, rc->other.dt[STATE_GRAD]) == DT_FP32 ? (double)mt[MT_GRAD_OTHER].bytes : 0)) /
                      hbm;
    if (in->fusion == FUSE_FP8PLAN) { /* all of it in the backward phase, where the executor does it */
        commit = commit_bwd;
        tb->bwd_s += commit_bwd;
    }
    tb->nongemm_s += commit;

    /* FP8 weight casts: cached copies once per step, uncached ones every micro-batch; recipes without copies
     * (casts in the GEMM call, torchao-style) cast forward and again backward */
    double wc = 0, copies = (double)rc_copy_bytes(rc);
    Dtype src = rc->gemm.dt[STATE_WEIGHT] != DT_NONE ? rc->gemm.dt[STATE_WEIGHT] : rc->gemm.dt[STATE_MASTER];
    double per = (double)dt_bytes(src) * (rc->scaling == SCALING_CURRENT ? 2.0 : 1.0);
    /* the fp8plan stack keeps its copies in memory but casts them again every micro-batch, except FP8-LM's copies
     * of an FP16 master with no working weight, cast once per step after the optimizer (exec/model/model_copies.c) */
    int once = in->fp8_weight_cache && (in->fusion != FUSE_FP8PLAN ||
                                        (rc->gemm.dt[STATE_WEIGHT] == DT_NONE && rc->gemm.dt[STATE_MASTER] == DT_FP16));
    /* at the FP8 cast's rate (ElemKind ELEM_CAST; elem_bw where no profile measured it apart): the executor's
     * weight casts are the cast_transpose (and, current scaling, amax) kernels its activation casts run */
    double cast_bw = gpu_kind_bw(in->gpu, ELEM_CAST, in->eff_hbm);
    if (copies > 0 && rc->scaling == SCALING_CURRENT && in->gpu->elem_kind_bw[ELEM_AMAX] > 0) /* the amax apart */
        wc = fp8w * ((double)dt_bytes(src) + copies) / cast_bw * (once ? 1.0 : m) +
             fp8w * (double)dt_bytes(src) / in->gpu->elem_kind_bw[ELEM_AMAX] * (once ? 1.0 : m);
    else if (copies > 0)
        wc = fp8w * (per + copies) / cast_bw * (once ? 1.0 : m);
    else if (rc_fp8_gemm(rc) && !dt_fp8(src))
        wc = fp8w * 2.0 * (per + 1.0) / cast_bw * m;
    tb->weight_cast_s = wc;
    /* the fp8plan executor casts each weight in its linear's forward (exec/model/model_linear.c
     * model_linear_fwd, cast_weight), every micro-batch: that time is the forward's (the step counts it once, as wc) */
    if (in->fusion == FUSE_FP8PLAN && !once) tb->fwd_s += wc;
    /* FP8-LM's copies, cast once per step: after the optimizer, in its phase, when no state is sharded; after the
     * parameter all-gather (the communication phase) when one is (exec/model/model_step.c) */
    int sharded = in->fusion == FUSE_FP8PLAN && once && p->shard_ways > 1 && /* read only there */
                  (plan_state_shard_bits(in, &rc->gemm) | plan_state_shard_bits(in, &rc->other));
    tb->opt_cast_s = in->fusion == FUSE_FP8PLAN && once && !sharded ? wc : 0;
    tb->other_s = p->coll[CO_AMAX_AR].time_s + p->coll[CO_EMB_GRAD_AR].time_s + p->coll[CO_TP_NORM_GRAD_AR].time_s +
                  p->coll[CO_EDP_AMAX_AR].time_s + p->coll[CO_ETP_AMAX_AR].time_s;
    p->coll[CO_AMAX_AR].exposed_s = p->coll[CO_AMAX_AR].time_s;
    p->coll[CO_EDP_AMAX_AR].exposed_s = p->coll[CO_EDP_AMAX_AR].time_s;
    p->coll[CO_ETP_AMAX_AR].exposed_s = p->coll[CO_ETP_AMAX_AR].time_s;
    p->coll[CO_EMB_GRAD_AR].exposed_s = p->coll[CO_EMB_GRAD_AR].time_s;
    p->coll[CO_TP_NORM_GRAD_AR].exposed_s = p->coll[CO_TP_NORM_GRAD_AR].time_s;

    tb->step_s = pipe + dp + tb->optimizer_s + commit + wc + tb->other_s;

    /* throughput and MFU */
    double gbs = (double)p->in.gbs, seq = (double)g->seq, Lh = (double)g->L;
    double lin_full = (double)g->gemm_layer * (double)g->tp; /* per layer, whole (unsharded) */
    double n_flop = Lh * lin_full + (double)g->h * (double)g->V;
    double per_tok = 6.0 * n_flop + 12.0 * Lh * (double)g->q_dim * seq;
    if (x->on) per_tok = moe_flops_per_token(in, g);
    p->model_flops_step = per_tok * gbs * seq;
    double step = tb->step_s;
    p->samples_per_s = gbs / step;
    p->tokens_per_s = gbs * seq / step;
    p->tflops_per_gpu = p->model_flops_step / step / (double)g->world / 1e12;
    p->mfu_bf16_pct = 100.0 * p->tflops_per_gpu * 1e12 / in->gpu->flops_bf16;
    p->mfu_fp8_pct = in->gpu->flops_fp8 > 0 ? 100.0 * p->tflops_per_gpu * 1e12 / in->gpu->flops_fp8 : 0;
}
