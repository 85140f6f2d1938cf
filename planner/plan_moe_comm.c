/* planner/plan_moe_comm.c — the collectives of mixture-of-experts, latent-attention
 * and multi-token-prediction models that differ from a dense model's (plan_comm.c
 * sets the rest).
 *
 * Expert all-to-alls, per MoE layer and micro-batch (the reported stage's MoE and MTP
 * layers x micro-batches calls per step; full recompute repeats the forward ones):
 * dispatch forward sends the tokens to their experts, combine forward returns the
 * expert outputs, and backward the output gradients go out (dispatch direction) and
 * the input gradients come back (combine direction). A token copy is h elements of the
 * recipe's ep_dispatch_comm dtype (FP8: + one fp32 scale per 128 values at 1x128, one
 * E8M0 byte per 32 at 1x32) or ep_combine_comm. The ep ranks of a group sit r =
 * min(ep, gpus_per_node / etp) to a node over n = ep / r nodes. Copies per token that
 * leave the GPU, each scaled by the imbalance allowance or capacity factor f (the
 * busiest rank receives f times the mean):
 *   one copy per (token, expert), as Megatron's all-to-all dispatcher sends them:
 *       k (1 - r/ep) over the network, k (r - 1)/ep over NVLink;
 *   node-limited routing with one expert group per node (router_groups = n, DeepSeek-
 *   V3's at most 4 nodes per token): each token crosses the network once per remote
 *   node it uses, M (n - 1)/n for M = router_group_topk, and is forwarded inside the
 *   node to its experts' GPUs, k (1 - 1/r) over NVLink (DeepSeek-V3 section 3.2.2);
 *   a hierarchical dispatcher (DeepEP's normal kernels, HybridEP: plan --moe-dispatcher
 *   deepep | hybridep) does the same for any routing: once per remote node the token's
 *   experts use, (n - 1)(1 - q) with q the chance a given node holds none of them
 *   (node_unused), then k (1 - 1/r) over NVLink;
 *   DeepEP sends a token once to each GPU that holds one of its experts, not once per
 *   expert: Megatron-Core's FusedDispatch (transformer/moe/fused_a2a.py, core_v0.15-0.16)
 *   sizes it with buffer.get_dispatch_layout -> num_tokens_per_rank, is_token_in_rank
 *   [tokens x ranks], the receiving GPU permutes the token to its local experts, and the
 *   combine returns one row per (token, GPU), the local experts' outputs summed there.
 *   Of the D = ep (1 - q_gpu) GPUs a token uses (q_gpu: a given GPU holds none of its
 *   experts, node_unused over ep), the network copy lands on one GPU per remote node and
 *   the rest are NVLink copies, D (1 - 1/r) (inside one node: D (ep - 1)/ep, the GPUs
 *   other than its own). HybridEP keeps k (1 - 1/r): its wire format is not read here.
 * A call takes NCCL's latency of one grouped send/recv (base + one hop) plus the
 * longer of its network bytes at the NIC's rate and its NVLink bytes at the link's,
 * both at eff_net (the two run at once). payload_bytes is every copy (local ones
 * included), bus_bytes the ones that leave the GPU. On a host profile with an
 * all-to-all fit (links.csv: fp8plan calibrate's MPI_Alltoallv sweep) a call is
 * plan_link_call at its payload instead: (ep - 1) x latency + payload x (ep - 1)/ep /
 * bus bandwidth, the uniform routing's share leaving; with the per-message fits of a newer calibrate (eager and
 * rendezvous rows) (ep - 1) messages of payload / ep bytes each, each timed by its own protocol's fit
 * (plan_a2a_call). There the executor's count
 * exchange is planned too (ep_counts: before each forward dispatch, per MoE layer and
 * micro-batch, E int32 counts, E/ep of them staying, timed at the same fit); a GPU
 * plan leaves it out.
 * Expert tensor parallelism (etp > 1): the dispatched rows [rows, h] are
 * all-gathered over etp before the experts and reduce-scattered after (and again in
 * backward for the gradients), in the dispatch / combine dtypes.
 * Expert-data parallelism: the expert gradients are all-reduced, or reduce-scattered
 * with the parameters all-gathered after a sharded step, over the edp ranks (ep x etp
 * apart), as plan_comm.c does for the other weights over dp x cp.
 * Tensor parallelism with SP: per layer one all-gather / reduce-scatter pair for the
 * attention (latent attention gathers its up-projections' inputs, q_lora + kv_lora per
 * token, in the recipe's gather dtype, and its RoPE key, rope per token, instead of h,
 * and reduce-scatters their gradients instead of an h-wide one: tp_collectives) and one
 * for the dense FFN or the shared experts (none for a MoE layer without shared experts:
 * the routed experts take the SP shards directly); an MTP depth's eh_proj adds its own.
 * Amax reductions count one record set per FP8 linear tensor. */
#include <string.h>

#include "fp8/granularity.h"
#include "planner/arch.h"
#include "planner/plan_internal.h"
#include "planner/plan_routed.h"

/* Bytes of one token copy of h elements in dtype dt with the recipe's activation scales. */
static double copy_bytes(const Recipe *rc, Dtype dt, uint64_t h)
{
    double b = (double)h * (double)dt_bytes(dt);
    if (dt_fp8(dt) && rc->act_gran != GRAN_TENSOR) {
        uint64_t n, sb;
        if (!gran_scale_count(rc->act_gran, 1, h, &n, &sb, NULL)) b += (double)sb;
    }
    return b;
}

/* The ETP all-gather's rows as the EP dispatch delivered them (an FP8 payload with its scales, not quantized
 * again), or at ep 1 the hidden states in BF16, as Megatron-Core's all-to-all dispatcher gathers them before the
 * grouped linears quantize (token_dispatcher.py dispatch_postprocess). */
static Dtype etp_gather_dtype(const PlanInput *in)
{
    const Dtype d = in->recipe->comm_ep_dispatch;
    return in->ep <= 1 && dt_fp8(d) ? DT_BF16 : d;
}

/* One all-to-all collective: tokens x copies per token (network, NVLink) x bytes per copy. */
static void a2a(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, double per_tok_x,
                double per_tok_n, uint64_t calls, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const GpuSpec *gp = in->gpu;
    Collective *c = &p->coll[id];
    double f = in->moe_capacity > 0 ? in->moe_capacity : in->moe_imbalance;
    double S = copy_bytes(in->recipe, dt, g->h), T = (double)g->tok_r * f;
    double bx = T * per_tok_x * S, bn = T * per_tok_n * S, all = T * (double)x->topk * S;
    c->dtype = dt;
    c->ranks = (uint32_t)x->ep;
    uint64_t gpn = gp->gpus_per_node, r = x->etp >= gpn ? 1 : udiv(gpn, x->etp);
    if (r > x->ep) r = x->ep;
    uint64_t nodes = ceil_div(x->ep, r);
    c->inter_node = nodes > 1;
    c->payload_bytes = all >= 1.8e19 ? (ck->ovf = 1, 0) : (uint64_t)all;
    c->bus_bytes = bx + bn >= 1.8e19 ? (ck->ovf = 1, 0) : (uint64_t)(bx + bn);
    c->calls = calls;
    c->step_bytes = ck_mul(ck, c->bus_bytes, calls);
    double pm = gp->host ? plan_a2a_call(gp, x->ep, c->payload_bytes, &c->bw, &c->latency_s) : -1;
    if (pm >= 0) { /* a host profile's per-message fits: each peer's message (payload / ep) by its protocol */
        c->time_s = (double)calls * pm;
        c->exposed_s = c->time_s;
        return;
    }
    const LinkFit *fit = gp->host ? plan_link_fit(gp, OP_ALL_TO_ALL, dt, c->payload_bytes) : NULL;
    if (fit) { /* a host profile's all-to-all fit (the executor's MPI_Alltoallv), at each call's payload */
        c->time_s = (double)calls * plan_link_call(fit, OP_ALL_TO_ALL, x->ep, c->payload_bytes, &c->bw, &c->latency_s);
        c->exposed_s = c->time_s;
        return;
    }
    int hw = gp->link < LINK_COUNT_ ? (int)gp->link : LINK_NVLINK;
    c->latency_s = nccl_lat.base[NCCL_SIMPLE] + nccl_lat.hop[nodes > 1 ? LINK_COUNT_ : hw][NCCL_SIMPLE];
    double en = gpu_net_eff(gp, in->eff_net), tx = bx / (gp->inter_bw * en), tn = bn / (gp->intra_bw * en),
           tt = tx > tn ? tx : tn;
    c->bw = tt > 0 ? (bx + bn) / tt : 0;
    c->time_s = (double)calls * (c->latency_s + tt);
    c->exposed_s = c->time_s;
}

/* The chance that a token uses no expert on a given node of the n an expert group spans (uniform routing): with
 * group-limited routing (M of G expert groups, G/n groups a node, each chosen group taking at least one of the
 * token's experts) C(G - G/n, M) / C(G, M); otherwise k distinct experts of E, E/n a node: C(E - E/n, k) / C(E, k). */
static double node_unused(const ModelSpec *md, const MoeGeo *x, uint64_t n)
{
    uint64_t G = md->router_groups, M = md->router_group_topk, E = x->E, k = x->topk;
    if (G && M && !(G % n)) E = G, k = M;
    double per = (double)E / (double)n, p = 1.0;
    for (uint64_t i = 0; i < k; i++) p *= ((double)E - per - (double)i) / ((double)E - (double)i);
    return p > 0 ? p : 0;
}

static void ep_collectives(const PlanInput *in, const Geo *g, Plan *p, const Held *hd, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const ModelSpec *md = in->model;
    const Recipe *rc = in->recipe;
    uint64_t layers = hd->n[XK_MOE], m = g->m;
    if (!x->E || x->ep * x->etp <= 1 || !layers) return;
    uint64_t gpn = in->gpu->gpus_per_node, r = x->etp >= gpn ? 1 : udiv(gpn, x->etp);
    if (r > x->ep) r = x->ep;
    uint64_t nodes = ceil_div(x->ep, r);
    double k = (double)x->topk, cx, cn;
    if (md->router_groups && md->router_group_topk && md->router_groups == nodes && nodes > 1) {
        double M = (double)md->router_group_topk;
        cx = M * (double)(nodes - 1) / (double)nodes, cn = k * (1.0 - 1.0 / (double)r);
    } else if (in->moe_dedup == MOE_DISPATCH_DEEPEP) { /* once per remote node, once per GPU holding its experts */
        cx = nodes > 1 ? (double)(nodes - 1) * (1.0 - node_unused(md, x, nodes)) : 0.0;
        cn = (double)x->ep * (1.0 - node_unused(md, x, x->ep)) * (1.0 - 1.0 / (double)r);
    } else if (in->moe_dedup && nodes > 1) {
        cx = (double)(nodes - 1) * (1.0 - node_unused(md, x, nodes)), cn = k * (1.0 - 1.0 / (double)r);
    } else {
        cx = k * (1.0 - (double)r / (double)x->ep), cn = k * (double)(r - 1) / (double)x->ep;
    }
    /* the forward's all-to-alls again when the layer (full) or the MoE module (--recompute-modules moe) is
     * recomputed */
    int again = in->recompute == RECOMPUTE_FULL || (in->recompute_mods & RECOMPUTE_MOD_MOE);
    uint64_t calls = ck_mul(ck, layers, m), fcalls = again ? 2 * calls : calls;
    if (x->ep > 1) {
        a2a(in, g, p, CO_EP_DISPATCH_FWD, rc->comm_ep_dispatch, cx, cn, fcalls, ck);
        a2a(in, g, p, CO_EP_COMBINE_FWD, rc->comm_ep_combine, cx, cn, fcalls, ck);
        a2a(in, g, p, CO_EP_DISPATCH_BWD, rc->comm_ep_dispatch, cx, cn, calls, ck);
        a2a(in, g, p, CO_EP_COMBINE_BWD, rc->comm_ep_combine, cx, cn, calls, ck);
        if (in->gpu->host) { /* the executor's counts before each forward dispatch: E int32, E/ep of them stay */
            plan_coll_set(in, p, CO_EP_COUNTS, DT_FP32, x->ep, 1, ck_mul(ck, x->E, 4), fcalls, ck);
            Collective *c = &p->coll[CO_EP_COUNTS];
            c->bus_bytes = ck_mul(ck, x->E - x->E / x->ep, 4);
            c->step_bytes = ck_mul(ck, c->bus_bytes, fcalls);
        }
    }
    if (x->etp > 1) { /* a gathered row as the dispatch moved it: an FP8 one with its scales */
        const Dtype ag = etp_gather_dtype(in);
        double row = copy_bytes(rc, ag, g->h);
        uint64_t Sd = (double)x->rows * row >= 1.8e19 ? (ck->ovf = 1, 0) : (uint64_t)((double)x->rows * row);
        uint64_t Sc = ck_mul3(ck, x->rows, g->h, dt_bytes(rc->comm_ep_combine));
        plan_coll_set(in, p, CO_ETP_AG, ag, x->etp, 1, Sd, fcalls + calls, ck);
        plan_coll_set(in, p, CO_ETP_RS, rc->comm_ep_combine, x->etp, 1, Sc, fcalls + calls, ck);
    }
}

/* An all-gather's or reduce-scatter's row over n ranks whose calls move `total` payload bytes a step in all: its
 * payload and sent bytes per step exact ((n - 1)/n of the payload leaves the GPU), whatever the mean per call. */
static void step_exact(Plan *p, CollectiveId id, uint64_t total, uint64_t n, Ck *ck)
{
    Collective *c = &p->coll[id];
    if (!c->calls || total == ck_mul(ck, c->payload_bytes, c->calls)) return; /* the mean is every call's */
    c->step_payload = total;
    c->step_bytes = total - (total + n - 1) / n;
}

/* The TP/SP collectives of the layers this GPU holds, per layer kind (payloads averaged per call; the rows' bytes
 * per step the exact sums). */
static void tp_collectives(const PlanInput *in, const Geo *g, Plan *p, const Held *hd, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const Recipe *rc = in->recipe;
    for (int i = CO_TP_AR_FWD; i <= CO_TP_RS_BWD; i++) plan_coll_set(in, p, (CollectiveId)i, DT_NONE, 0, 1, 0, 0, ck);
    if (g->tp <= 1) return;
    uint64_t full = in->recompute == RECOMPUTE_FULL ? 2 : 1, m = g->m, h = g->h;
    uint64_t S_ag = ck_mul3(ck, g->tok, h, dt_bytes(rc->comm_tp_ag)),
             S_rs = ck_mul3(ck, g->tok, h, dt_bytes(rc->comm_tp_rs));
    if (dt_fp8(rc->comm_tp_ag) && rc->act_gran != GRAN_TENSOR) {
        uint64_t n, sb;
        if (gran_scale_count(rc->act_gran, g->tok, h, &n, &sb, NULL)) ck->ovf = 1;
        S_ag = ck_add(ck, S_ag, sb);
    }
    /* what the attention gathers forward (S_lat), gathers backward (S_latb: the output gradient, the inputs gathered
     * again) and reduce-scatters backward (S_latr). Latent attention (Megatron-Core core_v0.16.0
     * multi_latent_attention.py): the down-projections are duplicated TELinears on the sequence shard, the
     * up-projections (q_proj without a q latent) column-parallel, so the up-projections' inputs, q_lora (or h) +
     * kv_lora a token, are gathered as a column-parallel input is (the recipe's tp_allgather dtype, gathered again
     * for the weight gradient, their input gradients reduce-scattered), and the RoPE key k_pos_emb, rope a token,
     * by gather_from_sequence_parallel_region in the activations' dtype (its backward a reduce-scatter) */
    /* the saved inputs gathered again: the transposed copies (their block scales tiled along each rank's tokens) */
    const uint64_t S_agT = plan_tp_regather_bytes(ck, rc->comm_tp_ag, rc->act_gran, g->tok, h, g->tp);
    uint64_t S_lat = S_ag, S_latb = ck_add(ck, S_rs, S_agT), S_latr = S_rs;
    if (x->mla) {
        uint64_t r = in->model->qk_rope_head_dim, S_up = ck_mul3(ck, g->tok, x->latent, dt_bytes(rc->comm_tp_ag));
        if (dt_fp8(rc->comm_tp_ag) && rc->act_gran != GRAN_TENSOR) { /* two tensors, each row's tiles its own */
            uint64_t kl = in->model->kv_lora_rank, n, sq, sk;
            if (gran_scale_count(rc->act_gran, g->tok, x->latent - kl, &n, &sq, NULL) ||
                gran_scale_count(rc->act_gran, g->tok, kl, &n, &sk, NULL))
                ck->ovf = 1;
            else
                S_up = ck_add(ck, S_up, ck_add(ck, sq, sk));
        }
        uint64_t S_rope = ck_mul3(ck, g->tok, r, dt_bytes(rc->comm_tp_rs));
        S_lat = ck_add(ck, S_up, S_rope);
        S_latb = ck_add(ck, S_rs, plan_tp_regather_bytes(ck, rc->comm_tp_ag, rc->act_gran, g->tok, x->latent, g->tp));
        S_latr = ck_mul3(ck, g->tok, x->latent + r, dt_bytes(rc->comm_tp_rs));
    }
    /* FFN pairs whose forward runs again for a module (mlp: a dense layer's; moe, shared_experts: the shared
     * experts'), not under full recompute, which repeats every pair */
    unsigned mods = full == 2 ? 0 : in->recompute_mods;
    uint64_t pairs = 0, ag_bytes = 0, agb_bytes = 0, rsb_bytes = 0, again = 0;
    for (int k = 0; k < XK_COUNT; k++) {
        uint64_t n = ck_mul(ck, hd->n[k], m), ffn = k == XK_DENSE || x->Fs_t;
        pairs = ck_add(ck, pairs, ck_mul(ck, n, 1 + ffn));
        ag_bytes = ck_add(ck, ag_bytes, ck_mul(ck, n, ck_add(ck, S_lat, ffn ? S_ag : 0)));
        agb_bytes = ck_add(ck, agb_bytes, ck_mul(ck, n, ck_add(ck, S_latb, ffn ? ck_add(ck, S_rs, S_agT) : 0)));
        rsb_bytes = ck_add(ck, rsb_bytes, ck_mul(ck, n, ck_add(ck, S_latr, ffn ? S_rs : 0)));
        if ((k == XK_DENSE && (mods & RECOMPUTE_MOD_MLP)) ||
            (k == XK_MOE && x->Fs_t && (mods & (RECOMPUTE_MOD_MOE | RECOMPUTE_MOD_SHARED))))
            again = ck_add(ck, again, n);
    }
    if (!pairs) return;
    uint64_t fpairs = ck_add(ck, ck_mul(ck, pairs, full), again);
    /* an MTP depth (Megatron-Core core_v0.16.0 MultiTokenPredictionLayer._concat_embeddings, with SP): eh_proj is
     * column-parallel over its [enorm; hnorm] input, tok x 2h gathered (the recipe's tp_allgather dtype; again for
     * its weight gradient, its input gradient reduce-scattered), and its output, h/tp columns of every token, is
     * all-gathered along the hidden dimension (gather_from_tensor_model_parallel_region) before
     * scatter_to_sequence_parallel_region keeps the rank's tokens, whose backward all-gathers their gradient: per
     * depth and micro-batch two forward gathers, two backward gathers and one backward reduce-scatter */
    uint64_t nmtp = g->rep > 1 ? ck_mul(ck, hd->mtp, m) : 0;
    uint64_t S_min = ck_mul3(ck, g->tok, 2 * h, dt_bytes(rc->comm_tp_ag)), S_mh = S_rs;
    if (nmtp && dt_fp8(rc->comm_tp_ag) && rc->act_gran != GRAN_TENSOR) {
        uint64_t n, sb;
        if (gran_scale_count(rc->act_gran, g->tok, 2 * h, &n, &sb, NULL)) ck->ovf = 1;
        S_min = ck_add(ck, S_min, sb);
    }
    uint64_t mtp_b = ck_mul(ck, nmtp, ck_add(ck, S_min, S_mh)), fcalls = ck_add(ck, fpairs, ck_mul3(ck, 2, nmtp, full));
    /* backward: the gradient gathered, and the input again (its transposed copy's tiles, as the layers') */
    uint64_t mtp_bk = ck_mul(
        ck, nmtp, ck_add(ck, S_mh, plan_tp_regather_bytes(ck, rc->comm_tp_ag, rc->act_gran, g->tok, 2 * h, g->tp)));
    uint64_t S_agf =
        ck_add(ck, ck_add(ck, ck_mul(ck, ag_bytes, full), ck_mul(ck, again, S_ag)), ck_mul(ck, mtp_b, full));
    S_agf /= fcalls;
    agb_bytes = ck_add(ck, agb_bytes, mtp_bk);
    rsb_bytes = ck_add(ck, rsb_bytes, ck_mul(ck, nmtp, ck_mul3(ck, g->tok, 2 * h, dt_bytes(rc->comm_tp_rs))));
    if (g->rep == 1) {
        plan_coll_set(in, p, CO_TP_AR_FWD, rc->comm_tp_rs, g->tp, 1, S_rs, fpairs, ck);
        plan_coll_set(in, p, CO_TP_AR_BWD, rc->comm_tp_rs, g->tp, 1, S_rs, pairs, ck);
        return;
    }
    plan_coll_set(in, p, CO_TP_AG_FWD, x->mla || nmtp ? DT_NONE : rc->comm_tp_ag, g->tp, 1, S_agf, fcalls, ck);
    plan_coll_set(in, p, CO_TP_RS_FWD, rc->comm_tp_rs, g->tp, 1, S_rs, fpairs, ck);
    /* output-gradient gathers and saved-input re-gathers */
    uint64_t bcalls = ck_add(ck, 2 * pairs, 2 * nmtp), S_bag = agb_bytes / bcalls;
    plan_coll_set(in, p, CO_TP_AG_BWD, DT_NONE, g->tp, 1, S_bag, bcalls, ck);
    p->coll[CO_TP_AG_BWD].payload_bytes = S_bag;
    plan_coll_set(in, p, CO_TP_RS_BWD, rc->comm_tp_rs, g->tp, 1, rsb_bytes / (pairs + nmtp), pairs + nmtp, ck);
    /* the rows whose calls differ in size: timed at their mean payload, their bytes the exact sums */
    uint64_t agf_bytes =
        ck_add(ck, ck_add(ck, ck_mul(ck, ag_bytes, full), ck_mul(ck, again, S_ag)), ck_mul(ck, mtp_b, full));
    step_exact(p, CO_TP_AG_FWD, agf_bytes, g->tp, ck);
    step_exact(p, CO_TP_AG_BWD, agb_bytes, g->tp, ck);
    step_exact(p, CO_TP_RS_BWD, rsb_bytes, g->tp, ck);
}

void moe_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const Recipe *rc = in->recipe;
    Held hd;
    moe_held(in, g, p->stage, ck, &hd);
    tp_collectives(in, g, p, &hd, ck);
    ep_collectives(in, g, p, &hd, ck);

    /* expert gradients and parameters over the expert-data-parallel group */
    uint64_t e = p->params_expert_gpu, ed = x->edp, stride = x->ep * x->etp;
    Dtype gg = rc->comm_dp_grad, pg = rc->comm_param_gather;
    if (in->main_grad != MAIN_GRAD_RECIPE) gg = plan_grad_dt(in, gg);
    int shard = in->sharding != SHARD_NONE && (in->sharding != SHARD_DIST_OPT || rc->gemm.shard_mask);
    if (e && ed > 1 && !shard) {
        plan_coll_set(in, p, CO_EDP_GRAD_AR, gg, ed, stride, ck_mul(ck, e, dt_bytes(gg)), 1, ck);
    } else if (e && ed > 1) {
        int per_mb = in->sharding == SHARD_ZERO2 || in->sharding == SHARD_ZERO3;
        plan_coll_set(in, p, CO_EDP_GRAD_RS, gg, ed, stride, ck_mul(ck, e, dt_bytes(gg)), per_mb ? g->m : 1, ck);
        plan_coll_set(in, p, CO_EDP_PARAM_AG, pg, ed, stride, ck_mul(ck, e, dt_bytes(pg)),
                      in->sharding == SHARD_ZERO3 ? ck_mul(ck, 2, g->m) : 1, ck);
    }

    /* amax: one record set per FP8 linear tensor on the GPU. Under current scaling the reduction only agrees the
     * scale of a tensor split over the group (a sequence-parallel input gathered over TP, whose shards each rank
     * casts): the routed experts' inputs are whole rows on their rank (dispatched, not gathered), so each cast
     * takes its own tensor's amax and their records join no all-reduce (delayed scaling reduces every record) */
    Collective *am = &p->coll[CO_AMAX_AR];
    if (am->calls) {
        uint64_t ntens = hd.mtp;
        const int current = in->recipe->scaling == SCALING_CURRENT;
        for (int k = 0; k < XK_COUNT; k++)
            for (int i = 0; i < x->nlin[k]; i++)
                if (x->lin[k][i].kind != XL_ROUTER && !(current && x->lin[k][i].kind == XL_EXPERT))
                    ntens = ck_add(ck, ntens, ck_mul(ck, x->lin[k][i].count, hd.n[k]));
        plan_coll_set(in, p, CO_AMAX_AR, DT_FP32, am->ranks, 1, ck_mul(ck, ntens, 3 * 4) / 2, am->calls, ck);
    }
}

/* ---- the expert all-to-alls under a measured routing (plan_routed.h) ---- */

const char *const ep_routed_names[EPR_COUNT_] = {"ep_counts", "ep_dispatch_fwd", "ep_combine_fwd", "ep_dispatch_bwd",
                                                 "ep_combine_bwd"};

CollectiveId ep_routed_coll(int i)
{
    static const CollectiveId ids[EPR_COUNT_] = {CO_COUNT_, CO_EP_DISPATCH_FWD, CO_EP_COMBINE_FWD, CO_EP_DISPATCH_BWD,
                                                 CO_EP_COMBINE_BWD};
    return i >= 0 && i < EPR_COUNT_ ? ids[i] : CO_COUNT_;
}

/* A call's counts: E int32 counts (E/ep stay) and five agreements of ep uint64 element counts (one stays). */
static void counts_row(uint64_t E, uint64_t ep, uint64_t calls, EpRouted *out, Ck *ck)
{
    uint64_t pay = ck_add(ck, ck_mul(ck, E, 4), ck_mul3(ck, 5, ep, 8));
    uint64_t sent = ck_add(ck, ck_mul(ck, E - E / ep, 4), ck_mul3(ck, 5, ep - 1, 8));
    out->payload[EPR_COUNTS] = ck_mul(ck, pay, calls);
    out->sent[EPR_COUNTS] = ck_mul(ck, sent, calls);
}

/* Bytes of one row of h elements in dt with the recipe's activation scales (whole bytes: ST_USAGE when the
 * scales make it a fraction). */
static Status row_bytes(const Recipe *rc, Dtype dt, uint64_t h, uint64_t *out, Err *e)
{
    double b = copy_bytes(rc, dt, h);
    *out = (uint64_t)b;
    if ((double)*out != b)
        return err_set(e, ST_USAGE, "a routed row of %llu elements is %g bytes, not whole", (unsigned long long)h, b);
    return ST_OK;
}

/* The routing fits plan p and rank: the stage's tp x dp ranks, the model's experts, every rank's copies calls x
 * tokens x top-k (dropless). */
static Status routing_check(const Plan *p, const MoeRouting *rt, uint32_t rank, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    const uint64_t E = md->experts, ep = in->ep ? in->ep : 1, tp = in->tp ? in->tp : 1;
    const uint64_t xg = ep * (in->etp ? in->etp : 1);
    if (!rt || !rt->rows || rt->ranks != (uint64_t)in->dp * tp || rt->experts != E || rt->ranks % xg)
        return err_set(e, ST_USAGE,
                       "measured routing: %u ranks x %u experts given; the plan has tp %llu x dp %u and %llu experts",
                       rt ? rt->ranks : 0, rt ? rt->experts : 0, (unsigned long long)tp, in->dp, (unsigned long long)E);
    if (rank >= rt->ranks) return err_set(e, ST_USAGE, "measured routing: rank %u of %u", rank, rt->ranks);
    Ck ck = {0};
    /* dropless: every rank routes each of its tokens' top-k copies, calls x mbs x seq / tp x k */
    const uint64_t want = ck_mul(&ck, ck_mul(&ck, rt->calls, (uint64_t)in->mbs * p->seq / tp), md->experts_per_token);
    for (uint32_t r = 0; r < rt->ranks; r++) {
        uint64_t n = 0;
        for (uint64_t x = 0; x < E; x++) n = ck_add(&ck, n, rt->rows[(uint64_t)r * E + x]);
        if (n != want)
            return err_set(
                e, ST_DATA,
                "measured routing: rank %u routed %llu token copies over %llu dispatches; %llu x %llu tokens "
                "x top-%u = %llu expected",
                r, (unsigned long long)n, (unsigned long long)rt->calls, (unsigned long long)rt->calls,
                (unsigned long long)((uint64_t)in->mbs * p->seq / tp), md->experts_per_token, (unsigned long long)want);
    }
    return ST_OK;
}

/* The rows rank `rank`'s local experts received from its EP group (its peers etp apart with the same ETP and EDP
 * place: the ranks g0 + j·etp) over the routing's calls. */
static uint64_t expert_rows(const PlanInput *in, const MoeRouting *rt, uint32_t rank, Ck *ck)
{
    const uint64_t E = in->model->experts, ep = in->ep ? in->ep : 1, El = E / ep, et = in->etp ? in->etp : 1;
    const uint64_t g0 = rank / (ep * et) * ep * et + rank % et, x0 = rank / et % ep * El;
    uint64_t recv = 0;
    for (uint64_t x = x0; x < x0 + El; x++)
        for (uint64_t j = 0; j < ep; j++) recv = ck_add(ck, recv, rt->rows[(g0 + j * et) * E + x]);
    return recv;
}

Status plan_ep_routed(const Plan *p, const MoeRouting *rt, uint32_t rank, EpRouted *out, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    memset(out, 0, sizeof *out);
    if (!spec_is_moe(md) || in->ep <= 1 || in->cp != 1)
        return err_set(e, ST_USAGE,
                       "measured routing: the plan must be of a model with experts at ep > 1 and cp 1 (%s at ep %u, "
                       "cp %u)",
                       md->name, in->ep, in->cp);
    Status st = routing_check(p, rt, rank, e);
    if (st) return st;
    /* the stage's tp x dp ranks (tp fastest), regrouped etp x ep x edp (etp fastest: MoE folding); each routes
     * its sequence-parallel shard, mbs x seq / tp tokens a micro-batch */
    const uint64_t E = md->experts, ep = in->ep, El = E / ep, et = in->etp ? in->etp : 1, x0 = rank / et % ep * El;
    Ck ck = {0};
    uint64_t sent = 0, own = 0;
    for (uint64_t x = 0; x < E; x++) sent = ck_add(&ck, sent, rt->rows[(uint64_t)rank * E + x]);
    for (uint64_t x = x0; x < x0 + El; x++) own = ck_add(&ck, own, rt->rows[(uint64_t)rank * E + x]);
    const uint64_t recv = expert_rows(in, rt, rank, &ck);
    uint64_t Sd, Sc;
    st = row_bytes(in->recipe, in->recipe->comm_ep_dispatch, md->hidden, &Sd, e);
    if (!st) st = row_bytes(in->recipe, in->recipe->comm_ep_combine, md->hidden, &Sc, e);
    if (st) return st;
    out->payload[EPR_DISPATCH_FWD] = out->payload[EPR_DISPATCH_BWD] = ck_mul(&ck, sent, Sd);
    out->sent[EPR_DISPATCH_FWD] = out->sent[EPR_DISPATCH_BWD] = ck_mul(&ck, sent - own, Sd);
    out->payload[EPR_COMBINE_FWD] = out->payload[EPR_COMBINE_BWD] = ck_mul(&ck, recv, Sc);
    out->sent[EPR_COMBINE_FWD] = out->sent[EPR_COMBINE_BWD] = ck_mul(&ck, recv - own, Sc);
    counts_row(E, ep, rt->calls, out, &ck);
    if (ck.ovf) return err_set(e, ST_OVERFLOW, "measured routing: bytes past 2^64");
    return ST_OK;
}

Status plan_etp_routed(const Plan *p, const MoeRouting *rt, uint32_t rank, EtpRouted *out, Err *e)
{
    const PlanInput *in = &p->in;
    const ModelSpec *md = in->model;
    memset(out, 0, sizeof *out);
    if (!spec_is_moe(md) || in->etp <= 1 || in->cp != 1)
        return err_set(e, ST_USAGE,
                       "measured routing: the plan must be of a model with experts at etp > 1 and cp 1 (%s at etp %u, "
                       "cp %u)",
                       md->name, in->etp, in->cp);
    Status st = routing_check(p, rt, rank, e);
    if (st) return st;
    /* the ETP group: etp consecutive ranks; each dispatch gathers every member's expert rows twice (forward
     * inputs, backward output gradients) as they arrived (etp_gather_dtype) and reduce-scatters as many in the
     * combine dtype */
    const uint64_t et = in->etp, q0 = rank / et * et, h = md->hidden;
    Ck ck = {0};
    uint64_t rows = 0;
    for (uint64_t q = q0; q < q0 + et; q++) rows = ck_add(&ck, rows, expert_rows(in, rt, (uint32_t)q, &ck));
    const Dtype dt[ETPR_COUNT_] = {etp_gather_dtype(in), in->recipe->comm_ep_combine};
    for (int i = 0; i < ETPR_COUNT_; i++) {
        uint64_t rb;
        st = row_bytes(in->recipe, dt[i], h, &rb, e); /* an FP8 row's 1x128 scales included */
        if (st) return st;
        out->payload[i] = ck_mul3(&ck, 2, rows, rb);
        out->sent[i] = out->payload[i] - (out->payload[i] + et - 1) / et; /* (etp - 1)/etp of it leaves */
    }
    if (ck.ovf) return err_set(e, ST_OVERFLOW, "measured routing: bytes past 2^64");
    return ST_OK;
}

void plan_ep_uniform(const Plan *p, uint64_t steps, EpRouted *out)
{
    Ck ck = {0};
    memset(out, 0, sizeof *out);
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) {
        const Collective *c = &p->coll[ep_routed_coll(i)];
        out->payload[i] = ck_mul3(&ck, c->payload_bytes, c->calls, steps);
        out->sent[i] = ck_mul(&ck, c->step_bytes, steps);
    }
    const uint64_t ep = p->in.ep ? p->in.ep : 1;
    if (spec_is_moe(p->in.model) && ep > 1)
        counts_row(p->in.model->experts, ep, ck_mul(&ck, p->coll[CO_EP_DISPATCH_FWD].calls, steps), out, &ck);
}

double plan_ep_routed_time(const Plan *p, int i, double call_s)
{
    if (i < EPR_DISPATCH_FWD || i >= EPR_COUNT_) return 0; /* the counts have no payload row */
    const Collective *c = &p->coll[ep_routed_coll(i)];
    return call_s > 0 ? call_s * (double)c->calls : c->time_s;
}

void plan_ep_routed_times(Plan *p, const double call_s[EPR_COUNT_])
{
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) {
        Collective *c = &p->coll[ep_routed_coll(i)];
        if (call_s[i] > 0) c->time_s = c->exposed_s = plan_ep_routed_time(p, i, call_s[i]);
    }
}
