/* planner/plan_layer_time.c — one layer and micro-batch: its time, part by part.
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
 *              the rest is exposed. With Megatron's / TE's linears (the te
 *              kernel list) the column-parallel QKV and FC1 hide two backward
 *              collectives each behind their own GEMMs first (tp_bwd_async).
 * Recompute adds: full — the forward again (GEMMs, attention, kernels, TP);
 * selective — the attention core; op — the matmuls the policy does not save
 * (K projection, output projection, and FC1's up half with SwiGLU or FC2 with
 * GeLU) and every pointwise kernel of the forward.
 */
#include <string.h>

#include "planner/arch.h"
#include "planner/plan_bytes.h"
#include "planner/plan_internal.h"

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
        double el = tok * (double)g->heads_t * seq, ib = 1.0 / gpu_elem_bw(gp, in->eff_hbm);
        /* dropout: forward writes the mask (1) and rewrites P (2 + 2); backward reads the mask (1) and dP (2) */
        double drop_f = in->dropout ? 5.0 : 0.0, drop_b = in->dropout ? 3.0 : 0.0;
        L->attn_f = maxd(maxd(tf, (pb_attn_mat_bytes_fwd(el, 2.0) + el * drop_f) * ib), tf + 2 * in->launch_s);
        L->attn_b = maxd(maxd(tb, (pb_attn_mat_bytes_bwd(el, 2.0) + el * drop_b) * ib), tb + in->launch_s);
        return;
    }
    const AttnCurve *c = arch_attn(arch_row_of(gp), k);
    double e = in->eff_attn > 0 ? in->eff_attn : c->e_fwd * arch_hd_factor(c, in->model->head_dim) * gpu_sustained(gp);
    double x = (double)g->s_local; /* keys one rank's chunk attends to at a time */
    double ef = e * x / (x + c->s_half), eb = e * c->bwd * x / (x + c->s_half_bwd);
    double fl = 2.0 * tok * seq * (double)g->heads_t * hd; /* 4 tok seq q/tp, halved for the causal mask */
    if (g->x.mla) fl = tok * seq * (double)g->heads_t * (double)(g->x.dqk + g->x.dv); /* QK^T over dqk, PV over dv */
    L->attn_f = maxd(fl / (gp->flops_bf16 * ef), in->launch_s);
    L->attn_b = maxd(2.5 * fl / (gp->flops_bf16 * eb), 2 * in->launch_s);
}

void plan_attention(const PlanInput *in, const Geo *g, const GemmGpu *gg, LayerT *L) { attention(in, g, gg, L); }

/* The backward TP collectives that Megatron's and Transformer Engine's column-parallel linears (QKV, FC1) hide
 * behind their own GEMMs whatever the stack's TP overlap: the re-gather of the saved input (sequence parallel),
 * launched asynchronously before the dgrad GEMM and waited for before the wgrad GEMM, and the dgrad's reduce-scatter
 * (all-reduce without sequence parallel), launched before the wgrad GEMM (Megatron-Core tensor_parallel/layers.py
 * LinearWithGradAccumulationAndAsyncCommunication.backward, core_v0.14.0 and Megatron-LM 23.08: async_op=True
 * on both; Transformer Engine pytorch/module/linear.py _Linear.backward, v2.7: "Tensor-parallel communication is
 * overlapped with dgrad", then the reduce-scatter or all-reduce with async_op=True before the wgrad GEMM). The re-gather moves what the
 * forward all-gather moved (same dtype and bytes: one CO_TP_AG_FWD call). Returns the time hidden, each
 * collective up to its own GEMM; 0 for other kernel sets (torchtitan's TP has no such overlap). */
static double tp_bwd_async(const PlanInput *in, const Collective *c, const double *dg, const double *wg)
{
    if (in->fusion != FUSE_TE) return 0;
    static const LinearKind col[] = {LIN_QKV, LIN_FC1};
    double ag = c[CO_TP_AR_BWD].calls ? 0 : call_s(&c[CO_TP_AG_FWD]);
    double rs = c[CO_TP_AR_BWD].calls ? call_s(&c[CO_TP_AR_BWD]) : call_s(&c[CO_TP_RS_BWD]), t = 0;
    for (unsigned i = 0; i < sizeof col / sizeof *col; i++)
        t += (ag < dg[col[i]] ? ag : dg[col[i]]) + (rs < wg[col[i]] ? rs : wg[col[i]]);
    return t;
}

double plan_tp_overlap(const PlanInput *in)
{
    int merged_a2a = in->overlap_ep > 0 && !in->dualpipe && in->ep > 1 && in->model && spec_is_moe(in->model);
    int hopper_ub = in->fusion == FUSE_TE && in->gpu && in->gpu->sm < 100 && in->tp > 1;
    return merged_a2a && hopper_ub ? 0.0 : in->overlap_tp;
}

/* One layer and micro-batch, and its recompute. */
void plan_layer_time(const PlanInput *in, const Geo *g, const GemmGpu *gg, const Plan *p, LayerT *L)
{
    const Recipe *rc = in->recipe;
    int f8 = dt_fp8(rc->gemm_fwd), b8 = dt_fp8(rc->gemm_bwd);
    double gb = (double)dt_bytes(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]));
    /* TE accumulates into the main grad in the epilogue (unless the accumulation is a separate kernel) */
    double wout = in->fusion == FUSE_TE && in->grad_acc_fusion ? 2.0 * gb : 2.0;
    /* a row-wise-scaled forward GEMM runs PyTorch's CUTLASS kernel, slower than cuBLASLt's (arch.c) */
    double fslow = rc->linear == LIN_TORCHAO_ROWWISE ? 1.0 / arch_rowwise_gemm_rel : 1.0;
    uint64_t tok = g->tok;
    double fp[LIN_COUNT], gf[LIN_COUNT], dg[LIN_COUNT], wg[LIN_COUNT];
    memset(L, 0, sizeof *L);
    /* FC1 and FC2 of one output width (GeLU) are each other's transpose: at one precision, FC1's dgrad is the
     * GEMM of FC2's forward ([tok x h x F/t]) and FC2's dgrad FC1's forward, timed there */
    int fc_twins =
        f8 == b8 && g->lin_rows[LIN_FC1] == g->lin_cols[LIN_FC2] && g->lin_cols[LIN_FC1] == g->lin_rows[LIN_FC2];
    gemm_time_linears(gg, tok, g->lin_rows, g->lin_cols, LIN_COUNT, f8, b8, wout,
                      fc_twins ? 1u << LIN_FC1 | 1u << LIN_FC2 : 0u, fp, dg, wg);
    if (fc_twins) dg[LIN_FC1] = fp[LIN_FC2], dg[LIN_FC2] = fp[LIN_FC1];
    for (int i = 0; i < LIN_COUNT; i++) {
        gf[i] = fp[i] * fslow;
        L->gemm_f += gf[i];
        L->gemm_b += dg[i] + wg[i];
        L->wg += wg[i];
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
    double own = tp_bwd_async(in, c, dg, wg);
    L->tp_f = exposed(tpf, L->gemm_f, plan_tp_overlap(in));
    L->tp_b = exposed(tpb - own, L->gemm_b - own, plan_tp_overlap(in));
    L->cp = exposed(3 * call_s(&c[CO_CP_KV]), L->attn_f + L->attn_b, in->overlap_cp);

    L->rc_gemm = L->rc_attn = L->rc_elem = 0;
    switch (in->recompute) {
    case RECOMPUTE_FULL: L->rc_gemm = L->gemm_f, L->rc_attn = L->attn_f, L->rc_elem = L->elem_f + L->tp_f; break;
    case RECOMPUTE_SELECTIVE: L->rc_attn = L->attn_f; break;
    case RECOMPUTE_NONE: /* the core_attn module is --recompute selective */
        if (recompute_attn_core(in->recompute, in->recompute_mods)) L->rc_attn = L->attn_f;
        break;
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
