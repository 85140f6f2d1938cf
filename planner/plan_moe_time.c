/* planner/plan_moe_time.c — one layer and micro-batch of each layer kind (dense,
 * MoE) of a mixture-of-experts, latent-attention or MTP model; plan_time.c runs
 * them through the stages and the pipeline.
 *
 *   GEMMs      every Lin of the kind (plan_moe.c), fprop [m x rows x cols],
 *              dgrad [m x cols x rows], wgrad [rows x cols x m], `count` of each in
 *              one grouped GEMM (the local experts: rows_e rows each, which carry
 *              the imbalance allowance) — under Transformer Engine one cuBLAS GEMM
 *              per expert, 4 at a time (gemm_time_streams), FP8 as the recipe says except the router's
 *              (BF16). While the expert all-to-alls overlap compute, their kernels
 *              take ep_comm_sms of the GPU's SMs: the GEMMs and attention run on the
 *              rest (DeepSeek-V3: 20 of 132). A row-wise-scaled recipe's forward
 *              GEMMs at arch_rowwise_gemm_rel; TE without gradient-accumulation
 *              fusion, and compile / eager (fp8plan: a BF16 or FP8 main gradient
 *              only; an FP32 one is the wgrad GEMM's own output) with micro-
 *              batches to accumulate, add the main_grad += grad kernel per linear
 *              weight of the kind (w (2 + 2 grad bytes) over its weights w). The recipe's FP8 linear extras
 *              (plan_kernels.c) are charged on dense layers only: the libraries
 *              behind them (MS-AMP, torchao's row-wise linear) have no grouped-
 *              expert path.
 *   attention  plan_attention: latent attention's causal FLOPs are
 *              tok seq heads/tp (dqk + dv).
 *   kernels    standard attention: the stack's list (plan_kernels.c, attention
 *              part). Latent attention (TE-style fused): norm1 4H, latent norms with
 *              their casts 4 tok (q_lora + kv_lora) in 2 kernels, RoPE on the rope
 *              dims 4 tok (heads/tp + 1) rope in 2, assembling K 4 tok heads/tp dqk,
 *              out-projection input cast 4 tok heads/tp dv, bias-dropout-add 6H; the
 *              backward: out-proj dY cast 4Hf, RoPE and K 4 tok (heads/tp (rope +
 *              dqk) + rope) in 3, up-projection dY casts 4 tok heads/tp (dqk + nope
 *              + dv) in 2, latent norms 6 tok (q_lora + kv_lora) in 2, down-
 *              projection dY casts 4 tok (q_lora + kv_lora + rope) in 2, norm1 6H in
 *              2, residual 6H. Dense FFN: the stack's list (FFN part). MoE FFN
 *              (Megatron-Core's fused kernels, any stack), with T = tok_r, R = rows,
 *              E experts, k top-k, Fe = expert FFN / etp, Fs = shared / tp, b_d, b_c
 *              the dispatch and combine bytes per element:
 *                forward  norm2 4Th; router scores and top-k (8E + 8k) T in 2; FP8
 *                         dispatch: quantize 3Th; permute 2 R h b_d; chunk sort (below)
 *                         2 R h b_d; FC1 input cast
 *                         4Rh unless dispatched in FP8 (FP8 GEMMs); activation 6 R Fe
 *                         (GeLU 4; a clamped GLU's clamps and biased experts'
 *                         FC2 bias: plan_moe_extra.c); FC2 input cast 4 R Fe; chunk restore 2 R h b_c;
 *                         unpermute and weight
 *                         (R b_c + 2T) h; shared experts' activation 6 tok Fs and cast
 *                         4 tok Fs; residual 6Th;
 *                backward FP8 dispatch of dY: quantize 3Th; permute 2 R h b_d;
 *                         the chunk sort's and restore's gradients 2 R h (b_d + b_c) in 2;
 *                         routing-weight gradient 4Rh; dY casts 4Rh (unless FP8
 *                         dispatch) and 4 R k Fe; activation backward 10 R Fe (GeLU
 *                         6); unpermute (R b_c + 2T) h; router backward 12 T E in 2;
 *                         shared 10 tok Fs + casts 4 tok (h + k Fs); norm2 6Th in 2;
 *                         residual 6Th;
 *              The chunk sort and restore: Megatron-Core's all-to-all dispatcher gets its rows by source rank,
 *              then expert, and with El > 1 reorders them by expert for the grouped GEMM (dispatch_postprocess:
 *              sort_chunks_by_idxs; with token drop and padding a transpose made contiguous) and back before the
 *              combine (combine_preprocess), each a copy of the R rows, one kernel, its gradient another
 *              (core_v0.14.0-v0.16.0 transformer/moe/token_dispatcher.py). TE stacks with that dispatcher only:
 *              DeepEP and HybridEP permute by expert as the rows arrive (the permute above).
 *              Each at least one launch floor; counted in route_f / route_b. Transformer Engine quantizes
 *              the four expert inputs (FC1, FC2, the gradient, FC1's dY) one local expert at a time: 3 kernels
 *              an expert and one more read for per-tensor current scaling, 1 for block scales, one fused kernel
 *              for delayed scaling (expert_quant). torchao's MXFP8 grouped GEMMs (other stacks, 1x32 scales)
 *              quantize each operand along one dim per pass and rearrange its scales (TAO_MX_PASS_B,
 *              mx_expert_swizzle). A stack whose MoE layer was counted (moe_host_ops) adds one
 *              launch floor for each small router and dispatcher kernel the list does not name (39 forward,
 *              35 backward as measured).
 *   TP         per layer one all-gather / reduce-scatter pair for the attention and
 *              one for a dense FFN or the shared experts (per-call times from
 *              plan_moe_comm.c), hidden behind the kind's GEMMs up to the TP overlap
 *              (plan_tp_overlap: none for TE's userbuffers on Hopper beside the merged
 *              all-to-all schedule).
 *   all-to-all per MoE layer: dispatch + combine forward (+ expert-TP gather and
 *              reduce-scatter), the same backward. Not overlapped (overlap_ep 0): exposed
 *              whole. Overlapped: Megatron-Core's merged 1F1B (--overlap-moe-expert-
 *              parallel-comm), one micro-batch's forward layer beside another's backward
 *              layer, each all-to-all hidden behind its partner piece of compute only
 *              (plan_ep_merged) but in the warm-up and cool-down micro-batches, which run
 *              unmerged (plan_unmerged_share); a fraction F in between: (1 - F) of them
 *              exposed whole, F as overlapped. With DualPipe both directions behind the paired chunk, fully.
 *   host issue per MoE layer (a stack with host_op_us): the operations the host issues eagerly — the
 *              layer's own (moe_host_ops, split forward / backward and by CUDA graph scope as measured; a
 *              captured scope is one replay instead) and expert_host_ops per local expert — at host_op_us
 *              each; the part that outlasts the layer's GPU time of that direction (GEMMs, attention,
 *              kernels, exposed collectives, recompute) is added: the GPU waits for the host. Whole-layer
 *              graphs (--cuda-graph-scope full, which needs a capacity factor) leave one replay.
 *   recompute  full: the forward again (GEMMs, attention, kernels, exposed TP and
 *              all-to-all); selective: the attention core; mla_up_proj: the
 *              q_up / kv_up forward GEMMs and K assembly; moe_act: the experts'
 *              activation forward. */
#include <string.h>

#include "planner/arch.h"
#include "planner/plan_internal.h"

/* The host operations of one MoE layer and micro-batch, by part, as measured: Megatron-Core 0.15.3's MoE
 * TransformerLayer (local spec, alltoall dispatcher, PyTorch 2.9 on CPU tensors) run under a dispatch-mode counter,
 * counting the operations that launch a kernel, forward / backward: the attention block 52 / 78; the router with its auxiliary loss and the dispatcher's preprocessing (token counts, permutation)
 * 36 / 32, split evenly between Megatron's moe_router and moe_preprocess graph scopes (the count does not separate
 * them); dispatch, combine and the experts' fixed part 7 / 8; 95 / 118, 213 in all (the stack's moe_host_ops).
 * Per local expert the stack's expert_host_ops, a third of them forward (a grouped GEMM that launches one GEMM per
 * expert: fprop of FC1 and FC2 forward, their dgrad and wgrad backward). */
static const double moe_host_ops_all[2] = {95.0, 118.0};
/* captured by each scope (GRAPH_* order; full: all of them, and the experts' GEMMs too) */
static const double moe_host_scope_ops[GRAPH_SCOPE_COUNT_][2] = {
    {52.0, 78.0}, {18.0, 16.0}, {18.0, 16.0}, {95.0, 118.0}};

typedef struct {
    double t, inv_bw, launch;
    double kinv[ELEM_KINDS]; /* s per byte of each kind (gpu_kind_bw; moe_kernels only) */
} Acc;

static void op(Acc *a, double bytes, double kernels)
{
    double tb = bytes * a->inv_bw, tl = kernels * a->launch;
    a->t += tb > tl ? tb : tl;
}

/* op for a kernel of kind k, at the kind's rate where the profile measured it apart. */
static void opk(Acc *a, ElemKind k, double bytes, double kernels)
{
    double tb = bytes * a->kinv[k], tl = kernels * a->launch;
    a->t += tb > tl ? tb : tl;
}

/* Latent attention's memory-bound kernels, forward and backward. */
static void mla_kernels(const PlanInput *in, const Geo *g, double *fwd, double *bwd)
{
    const ModelSpec *md = in->model;
    const MoeGeo *x = &g->x;
    Acc f = {0, 1.0 / gpu_elem_bw(in->gpu, in->eff_hbm), in->launch_s, {0}}, b = f;
    double tok = (double)g->tok, H = (double)g->tok_r * (double)g->h, Hf = tok * (double)g->h, ht = (double)g->heads_t;
    double ql = md->q_lora_rank, kl = md->kv_lora_rank, r = md->qk_rope_head_dim, nope = md->qk_nope_head_dim;
    double dqk = (double)x->dqk, dv = (double)x->dv;
    op(&f, 4 * H, 1), op(&f, 4 * tok * (ql + kl), 2), op(&f, 4 * tok * (ht + 1) * r, 2);
    op(&f, 4 * tok * ht * dqk, 1), op(&f, 4 * tok * ht * dv, 1), op(&f, 6 * H, 1);
    op(&b, 4 * Hf, 1), op(&b, 4 * tok * (ht * (r + dqk) + r), 3), op(&b, 4 * tok * ht * (dqk + nope + dv), 2);
    op(&b, 6 * tok * (ql + kl), 2), op(&b, 4 * tok * (ql + kl + r), 2), op(&b, 6 * H, 2), op(&b, 6 * H, 1);
    *fwd = f.t, *bwd = b.t;
}

/* The kernels that quantize one FP8 input of the experts' GEMMs (FC1's or FC2's input, or an output gradient),
 * for all local experts together, and the extra reads (elements read again, besides the cast's own read).
 * Transformer Engine's GroupedLinear (fusion te) quantizes the m_splits of its input one expert at a time
 * (transformer_engine/pytorch/csrc/extensions/cast.cpp, split_quantize -> multi_tensor_quantize_impl, v2.7-v2.12):
 * delayed scaling, whose scales are known before the cast, goes through one fused multi-tensor cast-transpose
 * kernel for all of them; per-tensor current scaling runs Float8CurrentScalingQuantizer::quantize per expert,
 * three kernels (nvte_compute_amax, which reads the input once more, nvte_compute_scale_from_amax,
 * nvte_quantize_v2); block scales (MXFP8's 1x32, DeepSeek's 1x128) one quantize kernel per expert. Other stacks
 * quantize the grouped input as one tensor: one kernel. */
static void expert_quant(const PlanInput *in, double local, double *kernels, double *reread)
{
    const Recipe *rc = in->recipe;
    *kernels = 1.0, *reread = 0.0;
    if (in->fusion != FUSE_TE || local < 1.0) return;
    if (rc->scaling == SCALING_CURRENT && rc->act_gran == GRAN_TENSOR)
        *kernels = 3.0 * local, *reread = 1.0;
    else if (rc->scaling == SCALING_CURRENT)
        *kernels = local;
}

/* Transformer Engine's scale swizzles for the experts' MXFP8 grouped GEMMs, per layer and micro-batch: before each
 * grouped call (FC1 and FC2; fprop, dgrad, wgrad) it rewrites all local experts' A scales in one kernel and their B
 * scales in another (transformer_engine/pytorch/csrc/extensions/gemm.cpp te_general_grouped_gemm:
 * multi_tensor_swizzle_scaling_factors, v2.7-v2.12), reading and writing each E8M0 byte (one per 32 elements).
 * torchao's _MXFP8GroupedMM (v0.15.0) rearranges the same scales, one kernel each: triton_mx_block_rearrange_2d_M_groups
 * and _per_group_3d forward and dgrad, _2d_K_groups twice for wgrad (its README's kernel breakdown, 2c2d40258). With
 * R routed rows over El local experts, a linear of N rows and K columns: fprop (R K + El N K) / 32 scales, dgrad
 * (R N + El N K) / 32, wgrad (K R + N R) / 32 (plan_kernels.c mx_swizzle for the dense linears). */
static void mx_expert_swizzle(const Geo *g, double kfe, Acc *f, Acc *b, Acc *part)
{
    const MoeGeo *x = &g->x;
    double R = (double)x->rows, El = (double)x->El, h = (double)g->h, Fe = (double)x->Fe_t;
    const double N[2] = {kfe, h}, K[2] = {h, Fe}; /* FC1, FC2 */
    for (int i = 0; i < 2; i++) {
        double fb = 2.0 / 32.0 * (R * K[i] + El * N[i] * K[i]),
               bb = 2.0 / 32.0 * (2 * R * N[i] + El * N[i] * K[i] + K[i] * R);
        op(f, fb, 2), op(part, fb, 2), op(b, bb, 4), op(part, bb, 4);
    }
}

/* torchao's MXFP8 grouped GEMM (moe_training/scaled_grouped_mm.py _MXFP8GroupedMM, v0.15.0 and the torchao-moe
 * runs' README commits 838dcebb1, b7959dd6e) quantizes an operand one dim a pass, each pass reading BF16 (2 B) and
 * writing 1 B + an E8M0 scale per 32: forward A along K; backward grad_out along N (dgrad) and M (wgrad), and the
 * saved BF16 A along M (wgrad). An expert input: 1 pass forward, 1 backward; an output gradient: 2 backward (the
 * weights' two: plan_time.c's weight casts). torchtitan (v0.2.0 models/moe/moe.py _run_experts_grouped_mm) feeds x
 * to two grouped GEMMs (w1, w3): its identical quantizes counted once, as AOTAutograd's CSE pass merges them under
 * torch.compile (an assumption: no trace of these runs was read). */
static const double TAO_MX_PASS_B = 3.0 + 1.0 / 32.0;

/* The kernels of the router and the dispatcher that the list below does not name, as counted in Megatron-Core's
 * MoE layer (models/sources/moe_host_ops: router, auxiliary loss and preprocessing 36 forward / 32 backward;
 * dispatch, unpermute and combine 7 / 8), less the ones the list times (forward: scores, top-k, permute,
 * unpermute; backward: permute, routing-weight gradient, unpermute, the router's two): 43 - 4 = 39 forward,
 * 40 - 5 = 35 backward — token counts, sorts, index maps, the auxiliary loss's reductions, each a kernel of a few
 * hundred elements that still occupies the GPU for one launch floor. Scaled with the stack's moe_host_ops as the
 * host issue is (213 as measured). */
static const double moe_small_kernels[2] = {39.0, 35.0};

/* Transformer Engine's compute streams for its grouped GEMM (util/multi_stream.cpp get_num_compute_streams,
 * a constant 4 in v2.7-v2.12). */
enum { TE_GEMM_STREAMS = 4 };

/* op (opk) on the direction's sum and on the part's. */
static void op2(Acc *a, Acc *part, double bytes, double kernels) { op(a, bytes, kernels), op(part, bytes, kernels); }
static void op2k(Acc *a, Acc *part, ElemKind k, double bytes, double kernels)
{
    opk(a, k, bytes, kernels), opk(part, k, bytes, kernels);
}

/* The MoE FFN's memory-bound kernels (route_f / route_b); *mod: the forward's kernels of the MoE module alone
 * (all but norm2 and the residual: what --recompute-modules moe runs again), *shared: the shared experts'
 * forward activation and cast (shared_experts); part (LayerT router_k, perm_k, act_k), forward and backward: the
 * router's (scores and top-k, its backward, the small kernels), the permutes' (FP8 dispatch quantize, permute,
 * routing-weight gradient, unpermute) and the experts' activation with their FP8 input and gradient casts. */
static void moe_kernels(const PlanInput *in, const Geo *g, const MoeExtra ex[2], double *fwd, double *bwd, double *mod,
                        double *shared, double part[3])
{
    const Recipe *rc = in->recipe;
    const MoeGeo *x = &g->x;
    Acc f = {0, 1.0 / gpu_elem_bw(in->gpu, in->eff_hbm), in->launch_s, {0}};
    for (int i = 0; i < ELEM_KINDS; i++) f.kinv[i] = 1.0 / gpu_kind_bw(in->gpu, (ElemKind)i, in->eff_hbm);
    Acc b = f, edge = f, sh = f, pr = f, pp = f, pa = f;
    double T = (double)g->tok_r, R = (double)x->rows, h = (double)g->h, E = (double)x->E, k = (double)x->topk;
    double Fe = (double)x->Fe_t, Fs = (double)x->Fs_t, tok = (double)g->tok;
    double bd = (double)dt_bytes(rc->comm_ep_dispatch), bc = (double)dt_bytes(rc->comm_ep_combine);
    int d8 = dt_fp8(rc->comm_ep_dispatch), f8 = dt_fp8(rc->gemm_fwd), b8 = dt_fp8(rc->gemm_bwd), sw = g->k == 2;
    double qk, qr; /* an expert input's quantize kernels and re-read (expert_quant) */
    expert_quant(in, (double)x->El, &qk, &qr);
    /* torchao's MXFP8 grouped GEMMs: one quantize pass per operand and dim (TAO_MX_PASS_B) */
    int tmx = rc->act_gran == GRAN_1X32 && in->fusion != FUSE_TE;
    double qf = tmx ? TAO_MX_PASS_B : 4 + 2 * qr, qb = tmx ? 2 * TAO_MX_PASS_B : 4 + 2 * qr, qbk = tmx ? 2 : qk;
    /* Megatron's all-to-all dispatcher reorders the received rows by local expert and back (header) */
    int sortc = in->fusion == FUSE_TE && in->moe_dedup == MOE_DISPATCH_ALLTOALL && x->El > 1;
    /* the kinds a profile may rate apart (ElemKind): norm2, the activations' forward, the FP8 casts (the dispatch's
     * quantize too), the residual; the permutes, the routing-weight gradient and the unpermute move rows with at most
     * a multiply-add an element, the residual add's kind (cpu_moe.c, k_moe_perm.cu) */
    op2k(&f, &edge, ELEM_NORM, 4 * T * h, 1), op2(&f, &pr, (8 * E + 8 * k) * T, 2);
    if (d8) op2k(&f, &pp, ELEM_CAST, 3 * T * h, 1);
    op2k(&f, &pp, ELEM_ADD, 2 * R * h * bd, 1);
    if (sortc) op2k(&f, &pp, ELEM_ADD, 2 * R * h * bd, 1);
    if (f8 && !d8) op2k(&f, &pa, ELEM_CAST, qf * R * h, qk);
    op2k(&f, &pa, ELEM_ACT, (sw ? 6 : 4) * R * Fe, 1);
    for (int i = 0; i < 2; i++) /* a clamped GLU's clamps, biased experts' bias adds (plan_moe_extra.c) */
        if (ex[i].fk > 0) op2k(&f, &pa, ELEM_ADD, ex[i].fb, ex[i].fk), op2k(&b, &pa, ELEM_ADD, ex[i].bb, ex[i].bk);
    if (f8) op2k(&f, &pa, ELEM_CAST, qf * R * Fe, qk);
    if (sortc) op2k(&f, &pp, ELEM_ADD, 2 * R * h * bc, 1);
    op2k(&f, &pp, ELEM_ADD, (R * bc + 2 * T) * h, 1);
    if (Fs > 0) op2k(&f, &sh, ELEM_ACT, (sw ? 6 : 4) * tok * Fs, 1);
    if (Fs > 0 && f8) op2k(&f, &sh, ELEM_CAST, 4 * tok * Fs, 1);
    op2k(&f, &edge, ELEM_ADD, 6 * T * h, 1);
    if (d8) op2k(&b, &pp, ELEM_CAST, 3 * T * h, 1);
    op2k(&b, &pp, ELEM_ADD, 2 * R * h * bd, 1), op2k(&b, &pp, ELEM_ADD, 4 * R * h, 1);
    if (sortc) op2k(&b, &pp, ELEM_ADD, 2 * R * h * (bd + bc), 2);
    if (b8 && !d8) op2k(&b, &pa, ELEM_CAST, qb * R * h, qbk);
    if (b8) op2k(&b, &pa, ELEM_CAST, qb * R * (sw ? 2 : 1) * Fe, qbk);
    if (b8 && tmx) op2k(&b, &pa, ELEM_CAST, TAO_MX_PASS_B * R * ((d8 ? 0 : h) + Fe), d8 ? 1 : 2); /* saved A, dim 1 */
    op2(&b, &pa, (sw ? 10 : 6) * R * Fe, 1), op2k(&b, &pp, ELEM_ADD, (R * bc + 2 * T) * h, 1),
        op2(&b, &pr, 12 * T * E, 2);
    if (Fs > 0) op(&b, (sw ? 10 : 6) * tok * Fs, 1);
    if (Fs > 0 && b8) opk(&b, ELEM_CAST, 4 * tok * (h + (sw ? 2 : 1) * Fs), 2);
    op(&b, 6 * T * h, 2), op(&b, 6 * T * h, 1);
    if ((in->fusion == FUSE_TE || tmx) && plan_mx_gemm(in) && E > 0)
        mx_expert_swizzle(g, (sw ? 2 : 1) * Fe, &f, &b, &pa);
    if (in->moe_host_ops > 0) { /* the small kernels a measured stack's router and dispatcher add */
        double scale = in->moe_host_ops / (moe_host_ops_all[0] + moe_host_ops_all[1]);
        f.t += moe_small_kernels[0] * scale * in->launch_s, b.t += moe_small_kernels[1] * scale * in->launch_s;
        pr.t += (moe_small_kernels[0] + moe_small_kernels[1]) * scale * in->launch_s;
    }
    *fwd = f.t, *bwd = b.t, *mod = f.t - edge.t, *shared = sh.t;
    part[0] = pr.t, part[1] = pp.t, part[2] = pa.t;
}

/* The host issue of one MoE layer and micro-batch: the operations the host issues one by one (those of the parts not
 * captured as CUDA graphs, and one replay per captured part), forward and backward, times its time per operation.
 * What the GPU does meanwhile hides it: only the excess over the layer's GPU time of that direction counts. */
static void moe_host(const PlanInput *in, double local_experts, const MoeExtra ex[2], LayerT *Lk)
{
    unsigned sc = in->graph_scope;
    double left[2] = {moe_host_ops_all[0], moe_host_ops_all[1]}, xops = in->expert_host_ops * local_experts;
    double add[2] = {ex[0].fk + ex[1].fk, ex[0].bk + ex[1].bk}; /* the kernels plan_moe_extras adds, one op each */
    double replays = 0;
    for (int i = 0; i < GRAPH_SCOPE_COUNT_; i++)
        if (sc & (1u << i)) left[0] -= moe_host_scope_ops[i][0], left[1] -= moe_host_scope_ops[i][1], replays += 1;
    if (sc & GRAPH_FULL) left[0] = left[1] = xops = add[0] = add[1] = 0, replays = 1; /* one replay a direction */
    double scale = in->moe_host_ops / (moe_host_ops_all[0] + moe_host_ops_all[1]);
    double hf = (left[0] * scale + xops / 3.0 + add[0] + replays) * in->host_op_s;
    double hb = (left[1] * scale + xops * 2.0 / 3.0 + add[1] + replays) * in->host_op_s;
    double gf = Lk->gemm_f + Lk->attn_f + Lk->elem_f + Lk->tp_f + Lk->ep_f;
    double gb = Lk->gemm_b + Lk->attn_b + Lk->elem_b + Lk->tp_b + Lk->ep_b + Lk->rc_gemm + Lk->rc_attn + Lk->rc_elem;
    Lk->host_f = maxd(0.0, hf - gf), Lk->host_b = maxd(0.0, hb - gb);
}

/* The SMs the expert all-to-all kernels hold while they overlap the GEMMs: the run's (--ep-comm-sms), else, when
 * the all-to-alls overlap compute (--overlap-ep, DualPipe), the dispatcher's own: DeepEP's kernels run on
 * moe_deepep_num_sms = 20 SMs, HybridEP's on moe_hybridep_num_sms = 16 (Megatron-Core TransformerConfig defaults,
 * core_v0.16.0 transformer_config.py, passed to set_deepep_num_sms / the HybridEP buffer's num_sms_dispatch_api and
 * num_sms_combine_api in token_dispatcher.py); NCCL's all-to-all: not modelled (0). */
enum { DEEPEP_SMS = 20, HYBRIDEP_SMS = 16 };
uint32_t plan_ep_comm_sms(const PlanInput *in)
{
    if (in->ep_comm_sms) return in->ep_comm_sms;
    if (!(in->overlap_ep > 0) && !in->dualpipe) return 0;
    return in->moe_dedup == MOE_DISPATCH_DEEPEP     ? DEEPEP_SMS
           : in->moe_dedup == MOE_DISPATCH_HYBRIDEP ? HYBRIDEP_SMS
                                                    : 0;
}

/* A host profile's grouped GEMM (calibrate's group_gemm_us, measured on the BF16 path): each of `groups` experts
 * is its own task of the CPU backend's pool, its weight decoded to FP32 and packed by the BLAS for a few rows, a
 * cost per group beyond the FLOPs (exec/cpu/cpu_gemm_group.c); one call of `groups` groups. 0 on a GPU, for an
 * FP8 call (not measured) and for a row without the column. */
static double host_group_s(const PlanInput *in, uint64_t groups, int fp8)
{
    return in->gpu->host && !fp8 ? (double)groups * in->gpu->group_gemm_s : 0.0;
}

/* What Megatron-Core's merged 1F1B layer leaves of its expert all-to-alls exposed (plan_internal.h). The phases as
 * TransformerLayerSchedulePlan.run issues them, with their dependencies: phase 1 combine_bwd beside attn_fwd +
 * post_attn; phase 2 dispatch_fwd (after post_attn) beside mlp_bwd (after combine_bwd), then dispatch_bwd (after
 * mlp_bwd and dispatch_fwd) beside mlp_bwd_dw and mlp_fwd (after dispatch_fwd); phase 3 combine_fwd (after mlp_fwd
 * and dispatch_bwd) beside post_attn_bwd + attn_bwd (after mlp_fwd and dispatch_bwd). */
double plan_ep_merged(const MergedLayer *m)
{
    double t1 = maxd(m->cb, m->aF);
    double dfe = t1 + m->df, mbe = t1 + m->mB, mwe = mbe + m->mW;
    double dbe = maxd(dfe, mbe) + m->db, mfe = maxd(mwe, dfe) + m->mF;
    double t3 = maxd(mfe, dbe);
    return t3 + maxd(m->cf, m->aB) - (m->aF + m->mB + m->mW + m->mF + m->aB);
}

/* Megatron-Core's warm-up count with the merged schedule (core_v0.15.0 pipeline_parallel/schedules.py,
 * get_pp_rank_microbatches): interleaved, (pp - rank - 1) 2 + (vpp - 1) microbatch_group_size_per_vp_stage (pp by
 * default) + 1 ("one extra micro-batch forward step before the 1f1b stages"), taken for rank 0, the stage with the
 * most; without pipelining 1 (combined_1f1b.py: the first micro-batch's forward alone, the last one's backward
 * alone); of the m x vpp chunk micro-batches, capped at all of them. */
double plan_unmerged_share(uint64_t pp, uint64_t vpp, uint64_t m)
{
    double total = (double)m * (double)(vpp ? vpp : 1);
    double w = pp > 1 ? 2.0 * (double)(pp - 1) + (double)((vpp ? vpp : 1) - 1) * (double)pp + 1.0 : 1.0;
    return total > 0 && w < total ? w / total : 1.0;
}

void moe_layer_times(const PlanInput *in, const Geo *g, const GemmGpu *gg0, const Plan *p, LayerT L[XK_COUNT])
{
    const Recipe *rc = in->recipe;
    const MoeGeo *x = &g->x;
    const Collective *c = p->coll;
    GemmGpu gg = *gg0;
    /* the all-to-all kernels' SMs (while they overlap compute: when ep > 1) */
    double sm_frac = 1.0, csms = (double)plan_ep_comm_sms(in);
    if (csms > 0 && x->ep > 1 && gg.sms > csms) {
        sm_frac = (gg.sms - csms) / gg.sms;
        gg.sms -= csms, gg.inv_sms = 1.0 / gg.sms;
    }
    int f8 = dt_fp8(rc->gemm_fwd), b8 = dt_fp8(rc->gemm_bwd);
    double gb = (double)dt_bytes(plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]));
    double ob = (double)dt_bytes(plan_grad_dt(in, rc->other.dt[STATE_GRAD]));
    int te = in->fusion == FUSE_TE;
    /* the local experts' GEMMs: Transformer Engine's GroupedLinear launches one cuBLAS GEMM per expert over its
     * 4 compute streams (plan_gemm.c); other stacks run one grouped kernel (torch._grouped_mm) */
    uint64_t streams = te ? TE_GEMM_STREAMS : 0;
    /* the weight-gradient accumulation as a kernel of its own, one per linear weight (plan_kernels.c): Megatron
     * without --gradient-accumulation-fusion, PyTorch stacks with micro-batches to accumulate; the fp8plan stack
     * accumulates an FP32 main gradient in the wgrad GEMM itself (beta 1, the grouped experts' too:
     * exec/model/model_moe.c experts_wgrad) and stages only a BF16/FP8 one (model_grad.c), as for dense layers */
    int fused_acc = in->fusion == FUSE_FP8PLAN && plan_grad_dt(in, rc->gemm.dt[STATE_GRAD]) == DT_FP32;
    int acc = te ? !in->grad_acc_fusion && rc->linear != LIN_MSAMP : g->m > 1 && !fused_acc;
    const int fp8plan_ep1 = in->fusion == FUSE_FP8PLAN && x->ep == 1;
    double fslow = rc->linear == LIN_TORCHAO_ROWWISE ? 1.0 / arch_rowwise_gemm_rel : 1.0;
    /* PyTorch's grouped kernels (compile and eager stacks: torch._grouped_mm, torch._scaled_grouped_mm) on
     * Blackwell, at their measured fractions of the dense rate (planner/arch.c); elsewhere the dense rate */
    int torch_gmm = (in->fusion == FUSE_COMPILE || in->fusion == FUSE_EAGER) && !in->gpu->host && in->gpu->sm >= 100;
    double g16 = torch_gmm ? 1.0 / arch_grouped_mm_bf16_rel_sm100 : 1.0;
    /* (measured against the per-tensor FP8 rate: gemm_gpu_init's MXFP8 fraction is taken out again) */
    double g8 =
        torch_gmm ? (plan_mx_gemm(in) ? plan_mx_gemm_rel(in->gpu) : 1.0) / arch_grouped_mm_mxfp8_rel_sm100 : 1.0;
    Acc ak = {0, 1.0 / gpu_elem_bw(in->gpu, in->eff_hbm), in->launch_s, {0}};
    LayerElem le;
    plan_layer_elem(in, g, &le);
    double af, ab;
    if (x->mla)
        mla_kernels(in, g, &af, &ab);
    else
        af = le.fwd_attn, ab = le.bwd_attn;
    double mf = 0, mb = 0, mmod = 0, msh = 0, mpart[3] = {0};
    MoeExtra ex[2]; /* a clamped GLU, biased experts */
    plan_moe_extras(in, g, &ex[0], &ex[1]);
    if (x->E) moe_kernels(in, g, ex, &mf, &mb, &mmod, &msh, mpart);
    unsigned mods = in->recompute == RECOMPUTE_FULL ? 0 : in->recompute_mods;
    /* a norm run again for the layernorm module: read its input, write its output (2 + 2 B an element) */
    Acc an = {0, 1.0 / gpu_elem_bw(in->gpu, in->eff_hbm), in->launch_s, {0}}, bda = an;
    op(&an, 4.0 * (double)g->tok_r * (double)g->h, 1);
    /* the residual add after a dense FFN (6 B an element, one kernel): outside the MLP module (Megatron's
     * mlp_bda), so --recompute-modules mlp does not run it again */
    op(&bda, 6.0 * (double)g->tok_r * (double)g->h, 1);
    for (int k = 0; k < XK_COUNT; k++) {
        LayerT *Lk = &L[k];
        memset(Lk, 0, sizeof *Lk);
        double rcmla = 0, wq = 0, nq = 0, pf[XP_MOE + 1] = {0}, local = 0;
        double pb[XP_MOE + 1] = {0}, pw[XP_MOE + 1] = {0}; /* dgrad, wgrad by part */
        double rg = 0;                                     /* the router's GEMMs, forward and backward */
        for (int i = 0; i < x->nlin[k]; i++) {
            const Lin *l = &x->lin[k][i];
            int q = l->kind != XL_ROUTER;
            /* TE accumulates into the main grad in the epilogue (the router: its own hook, in BF16) */
            double wout = te && (!q || in->grad_acc_fusion) ? 2.0 * (q ? gb : ob) : 2.0;
            uint64_t st = l->kind == XL_EXPERT ? streams : 0;
            int xe = l->kind == XL_EXPERT;
            double gf = xe ? (f8 ? g8 : g16) : 1.0, gbw = xe ? (b8 ? g8 : g16) : 1.0;
            double tf =
                gemm_time_streams(&gg, l->m, l->rows, l->cols, l->count, st, q && f8, 2) * (q ? fslow : 1.0) * gf;
            if (q) wq += (double)l->rows * (double)l->cols * (double)l->count, nq++;
            double tw = gemm_time_streams(&gg, l->rows, l->cols, l->m, l->count, st, q && b8, wout) * gbw;
            double tb = gemm_time_streams(&gg, l->m, l->cols, l->rows, l->count, st, q && b8, 2) * gbw + tw;
            if (l->kind == XL_EXPERT) { /* a host's grouped GEMM: its cost per group, where measured (BF16) */
                tf += host_group_s(in, l->count, f8), tw += host_group_s(in, l->count, b8);
                tb += host_group_s(in, l->count, b8) + host_group_s(in, l->count, b8);
                /* this executor at ep 1 keeps no expert output: its backward runs FC2's forward again for the
                 * combine weights' gradient (exec/model/model_moe.c; the last expert linear is FC2) */
                if (fp8plan_ep1 && i == x->nlin[k] - 1) tb += tf;
            }
            Lk->gemm_f += tf, Lk->gemm_b += tb, Lk->wg += tw;
            if (l->kind == XL_EXPERT) Lk->xg_f += tf, Lk->xg_b += tb, local = (double)l->count;
            if (l->up) rcmla += tf; /* MLA's q_up and kv_up */
            if (l->kind == XL_ROUTER) rg += tf + tb;
            pf[l->part] += tf, pb[l->part] += tb - tw, pw[l->part] += tw;
        }
        plan_attention(in, g, &gg, Lk);
        Lk->attn_f /= sm_frac, Lk->attn_b /= sm_frac;
        /* the FFN's kernels, the kind's own accumulation and, on dense layers, the recipe's FP8 linear extras */
        ak.t = 0;
        if (acc) op(&ak, wq * (2.0 + 2.0 * gb), nq);
        Lk->elem_f = af + (k == XK_DENSE ? le.fwd - le.fwd_attn : mf);
        Lk->elem_b = ab + ak.t + (k == XK_DENSE ? le.bwd - le.bwd_attn - le.acc_b : mb);
        if (k == XK_MOE) Lk->route_f = mf, Lk->route_b = mb;
        if (k == XK_MOE) Lk->router_k = rg + mpart[0], Lk->perm_k = mpart[1], Lk->act_k = mpart[2];

        /* TP: one pair for the attention, one for a dense FFN or the shared experts */
        double pairs = 1.0 + (k == XK_DENSE || x->Fs_t ? 1.0 : 0.0), tpf, tpb;
        if (c[CO_TP_AR_FWD].calls) {
            tpf = pairs * call_s(&c[CO_TP_AR_FWD]), tpb = pairs * call_s(&c[CO_TP_AR_BWD]);
        } else {
            tpf = pairs * (call_s(&c[CO_TP_AG_FWD]) + call_s(&c[CO_TP_RS_FWD]));
            tpb = pairs * (2 * call_s(&c[CO_TP_AG_BWD]) + call_s(&c[CO_TP_RS_BWD]));
        }
        Lk->tp_raw = tpf + tpb;
        Lk->tp_f = exposed(tpf, Lk->gemm_f, plan_tp_overlap(in));
        Lk->tp_b = exposed(tpb, Lk->gemm_b, plan_tp_overlap(in));
        Lk->cp = exposed(3 * call_s(&c[CO_CP_KV]), Lk->attn_f + Lk->attn_b, in->overlap_cp);

        /* expert all-to-alls (+ expert TP), per MoE layer */
        if (k == XK_MOE) {
            double ef = call_s(&c[CO_EP_COUNTS]) + call_s(&c[CO_EP_DISPATCH_FWD]) + call_s(&c[CO_EP_COMBINE_FWD]);
            double eb = call_s(&c[CO_EP_DISPATCH_BWD]) + call_s(&c[CO_EP_COMBINE_BWD]);
            double et = call_s(&c[CO_ETP_AG]) + call_s(&c[CO_ETP_RS]); /* forward and backward calls alike */
            ef += et, eb += et;
            double wf = Lk->gemm_f + Lk->attn_f + Lk->elem_f, wb = Lk->gemm_b + Lk->attn_b + Lk->elem_b;
            Lk->ep_raw = ef + eb;
            if (in->dualpipe) { /* both directions behind the paired forward + backward chunk */
                double e = exposed(ef + eb, wf + wb, 1.0);
                Lk->ep_f = ef + eb > 0 ? e * ef / (ef + eb) : 0, Lk->ep_b = e - Lk->ep_f;
            } else if (in->overlap_ep > 0) { /* merged 1F1B: one micro-batch's forward beside another's backward */
                MergedLayer ml;
                ml.cf = call_s(&c[CO_EP_COMBINE_FWD]) + call_s(&c[CO_ETP_RS]), ml.df = ef - ml.cf;
                ml.db = call_s(&c[CO_EP_DISPATCH_BWD]) + call_s(&c[CO_ETP_AG]), ml.cb = eb - ml.db;
                /* the experts (routed and shared) with the MoE block's kernels; the rest is attention and router */
                ml.mF = pf[XP_MOE] + pf[XP_SHARED] + mmod, ml.aF = wf - ml.mF;
                ml.mB = pb[XP_MOE] + pb[XP_SHARED] + mb, ml.mW = pw[XP_MOE] + pw[XP_SHARED];
                ml.aB = wb - ml.mB - ml.mW;
                double u = plan_unmerged_share(g->pp, g->vpp, g->m); /* warm-up and cool-down: not merged */
                double e = u * (ef + eb) + (1.0 - u) * plan_ep_merged(&ml);
                e = (1.0 - in->overlap_ep) * (ef + eb) + in->overlap_ep * e;
                Lk->ep_f = ef + eb > 0 ? e * ef / (ef + eb) : 0, Lk->ep_b = e - Lk->ep_f;
            } else {
                Lk->ep_f = ef, Lk->ep_b = eb;
            }
        }

        if (in->recompute == RECOMPUTE_FULL) {
            Lk->rc_gemm = Lk->gemm_f, Lk->rc_attn = Lk->attn_f;
            Lk->rc_elem = Lk->elem_f + Lk->tp_f + Lk->ep_f;
            Lk->xg_b += Lk->xg_f;
        } else if (recompute_attn_core(in->recompute, mods)) {
            Lk->rc_attn = Lk->attn_f;
        }
        /* the modules (plan.h): a module run again costs its forward — its GEMMs, kernels and the share of the
         * layer's exposed TP collectives that is its own (one of `pairs`), a MoE module its all-to-alls too */
        if (mods & RECOMPUTE_MOD_MLA_UP) Lk->rc_gemm += rcmla;
        if ((mods & RECOMPUTE_MOD_MOE_ACT) && k == XK_MOE) /* the activation and a clamped GLU's clamps */
            Lk->rc_elem +=
                maxd(6.0 * (double)x->rows * (double)x->Fe_t / gpu_elem_bw(in->gpu, in->eff_hbm), in->launch_s) +
                maxd(ex[0].fb / gpu_elem_bw(in->gpu, in->eff_hbm), ex[0].fk * in->launch_s);
        if ((mods & RECOMPUTE_MOD_LAYERNORM) && (x->mla || k == XK_MOE))
            Lk->rc_elem += an.t * ((x->mla ? 1.0 : 0.0) + (k == XK_MOE ? 1.0 : 0.0));
        if ((mods & RECOMPUTE_MOD_MLP) && k == XK_DENSE)
            Lk->rc_gemm += pf[XP_FFN], Lk->rc_elem += maxd(le.fwd - le.fwd_attn - bda.t, 0) + Lk->tp_f / pairs;
        if ((mods & RECOMPUTE_MOD_MOE) && k == XK_MOE) {
            Lk->rc_gemm += pf[XP_MOE] + pf[XP_SHARED], Lk->xg_b += Lk->xg_f;
            Lk->rc_elem += mmod + Lk->ep_f + (x->Fs_t ? Lk->tp_f / pairs : 0.0);
        } else if ((mods & RECOMPUTE_MOD_SHARED) && k == XK_MOE && x->Fs_t) {
            Lk->rc_gemm += pf[XP_SHARED], Lk->rc_elem += msh + Lk->tp_f / pairs;
        }
        if (k == XK_MOE && in->host_op_s > 0) moe_host(in, local, ex, Lk);
    }
}

double moe_flops_per_token(const PlanInput *in, const Geo *g)
{
    const ModelSpec *md = in->model;
    Ck ck = {0};
    LayerParams lp;
    plan_layer_params(md, &ck, &lp);
    /* the weights one token multiplies: attention linears and the dense FFN, or the shared experts, the top-k
     * routed experts and the router's [experts, h] (its bias is no matmul); the LM head; per MTP depth eh_proj
     * [h, 2h], one more layer and the head again */
    double D = spec_is_moe(md) ? (double)md->dense_layers : (double)g->L, X = (double)g->L - D;
    double dense = (double)lp.attn + (double)lp.dense_ffn;
    double moe = (double)lp.attn + (double)lp.shared + (double)md->experts_per_token * (double)lp.expert +
                 (double)md->experts * (double)g->h;
    double head = (double)g->h * (double)g->V, mtp = (double)md->mtp_layers;
    double w =
        D * dense + X * moe + head + mtp * (2.0 * (double)g->h * (double)g->h + (spec_is_moe(md) ? moe : dense) + head);
    /* attention, PaLM's convention without the causal halving: 6 (layers + MTP) heads seq (dqk + dv) */
    double at = 6.0 * ((double)g->L + mtp) * (double)g->heads * (double)g->seq * (double)(g->x.dqk + g->x.dv);
    return 6.0 * w + at;
}
