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
 * Amax reductions count one record set per FP8 linear tensor; this executor's delayed scaling also reduces the
 * experts' records over their EDP and ETP groups (expert_amax). The same collectives under a measured routing:
 * plan_moe_routed.c. */
#include <string.h>

#include "fp8/granularity.h"
#include "planner/arch.h"
#include "planner/plan_internal.h"
#include "planner/plan_routed.h"

double moe_copy_bytes(const Recipe *rc, Dtype dt, uint64_t h)
{
    double b = (double)h * (double)dt_bytes(dt);
    if (dt_fp8(dt) && rc->act_gran != GRAN_TENSOR) {
        uint64_t n, sb;
        if (!gran_scale_count(rc->act_gran, 1, h, &n, &sb, NULL)) b += (double)sb;
    }
    return b;
}

/* One all-to-all collective: tokens x copies per token (network, NVLink) x bytes per copy. */
static void a2a(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, double per_tok_x,
                double per_tok_n, uint64_t calls, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const GpuSpec *gp = in->gpu;
    Collective *c = &p->coll[id];
    double f = in->moe_capacity > 0 ? in->moe_capacity : in->moe_imbalance;
    double S = moe_copy_bytes(in->recipe, dt, g->h), T = (double)g->tok_r * f;
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
        const Dtype ag = moe_etp_gather_dtype(in);
        double row = moe_copy_bytes(rc, ag, g->h);
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

/* This executor's delayed scaling over expert ranks (fusion fp8plan, exec/model/model_moe_ep_amax.c): with ep > 1
 * the DP group's ranks hold different experts in the same scaling slots, so before the bank's DP all-reduce each
 * local expert's records are MAX-reduced over the ranks holding that same expert: its EDP group (ep x etp apart)
 * and its ETP group (the shards). As amax_allreduce, per micro-batch a forward call (x and w of FC1 and FC2: 4
 * records a local expert) and a backward one (their dy: 2), FP32: a mean of 3 x 4 B a tensor, 2 tensors a local
 * expert and MoE layer held. At ep 1 the DP group's reduction spans both groups already: none. */
static void expert_amax(const PlanInput *in, const Geo *g, Plan *p, const Held *hd, Ck *ck)
{
    const MoeGeo *x = &g->x;
    const Recipe *rc = in->recipe;
    const Collective *am = &p->coll[CO_AMAX_AR];
    if (in->fusion != FUSE_FP8PLAN || rc->scaling != SCALING_DELAYED || rc->amax_reduce != AMAX_ALL || x->ep <= 1 ||
        !am->calls)
        return;
    uint64_t ntens = 0;
    for (int i = 0; i < x->nlin[XK_MOE]; i++)
        if (x->lin[XK_MOE][i].kind == XL_EXPERT)
            ntens = ck_add(ck, ntens, ck_mul(ck, x->lin[XK_MOE][i].count, hd->n[XK_MOE]));
    if (!ntens) return;
    uint64_t S = ck_mul(ck, ntens, 3 * 4) / 2;
    if (x->edp > 1) plan_coll_set(in, p, CO_EDP_AMAX_AR, DT_FP32, x->edp, x->ep * x->etp, S, am->calls, ck);
    if (x->etp > 1) plan_coll_set(in, p, CO_ETP_AMAX_AR, DT_FP32, x->etp, 1, S, am->calls, ck);
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
        plan_coll_set_grad(in, g, p, CO_EDP_GRAD_AR, gg, ed, stride, ck_mul(ck, e, dt_bytes(gg)), 1, ck); /* cache */
    } else if (e && ed > 1) {
        int per_mb = in->sharding == SHARD_ZERO2 || in->sharding == SHARD_ZERO3;
        if (per_mb) /* each micro-batch's, while the backward runs */
            plan_coll_set(in, p, CO_EDP_GRAD_RS, gg, ed, stride, ck_mul(ck, e, dt_bytes(gg)), g->m, ck);
        else /* after the backward: timed from the cache or memory as the DP buckets */
            plan_coll_set_grad(in, g, p, CO_EDP_GRAD_RS, gg, ed, stride, ck_mul(ck, e, dt_bytes(gg)), 1, ck);
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
    expert_amax(in, g, p, &hd, ck);
}
