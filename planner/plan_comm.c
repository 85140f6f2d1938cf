/* planner/plan_comm.c — collectives per step and the bytes each GPU sends.
 *
 * Payload S is the total array size of one call as nccl-tests defines it; the
 * bytes a GPU sends (bus bytes) are 2(n-1)/n S for all-reduce, (n-1)/n S for
 * all-gather and reduce-scatter, S for point-to-point. Ranks are ordered
 * tp (fastest), cp, dp, pp (Megatron's default): a group spans nodes when its
 * stride times its size exceeds gpus_per_node, and then runs at the GPU's
 * inter-node bandwidth.
 *
 * Per layer and micro-batch, with S = tok*h*bytes:
 *   TP without SP  2 all-reduces forward (proj, FC2 outputs), 2 backward (QKV, FC1 input grads)
 *   TP with SP     forward: 2 all-gathers (QKV, FC1 inputs) + 2 reduce-scatters (proj, FC2);
 *                  backward: 2 all-gathers of output gradients, 2 re-gathers of the saved input
 *                  shards for wgrad (Megatron and TE keep the shard), 2 reduce-scatters
 *   CP             K,V all-gather forward, again backward, dK,dV reduce-scatter (ring P2P)
 *   full recompute repeats the forward collectives.
 * Per step: DP gradient all-reduce, or reduce-scatter + parameter all-gather when
 * states are sharded (two gathers at ZeRO-3); PP sends per micro-batch and chunk;
 * the tied-embedding gradient all-reduce between first and last stage; amax
 * all-reduces (one forward, one backward per micro-batch) for FP8 recipes. */
#include <string.h>

#include "fp8/granularity.h"
#include "planner/plan_internal.h"

static const char *const coll_names[CO_COUNT_] = {
    [CO_TP_AR_FWD] = "tp_allreduce_fwd",     [CO_TP_AR_BWD] = "tp_allreduce_bwd",
    [CO_TP_AG_FWD] = "tp_allgather_fwd",     [CO_TP_RS_FWD] = "tp_reducescatter_fwd",
    [CO_TP_AG_BWD] = "tp_allgather_bwd",     [CO_TP_RS_BWD] = "tp_reducescatter_bwd",
    [CO_CP_KV] = "cp_kv_exchange",           [CO_PP_P2P] = "pp_send_recv",
    [CO_DP_GRAD_AR] = "dp_grad_allreduce",   [CO_DP_GRAD_RS] = "dp_grad_reducescatter",
    [CO_DP_PARAM_AG] = "dp_param_allgather", [CO_EMB_GRAD_AR] = "emb_grad_allreduce",
    [CO_AMAX_AR] = "amax_allreduce",
};

static const CommGroup coll_group[CO_COUNT_] = {
    [CO_TP_AR_FWD] = GROUP_TP,  [CO_TP_AR_BWD] = GROUP_TP,  [CO_TP_AG_FWD] = GROUP_TP,   [CO_TP_RS_FWD] = GROUP_TP,
    [CO_TP_AG_BWD] = GROUP_TP,  [CO_TP_RS_BWD] = GROUP_TP,  [CO_CP_KV] = GROUP_CP,       [CO_PP_P2P] = GROUP_PP,
    [CO_DP_GRAD_AR] = GROUP_DP, [CO_DP_GRAD_RS] = GROUP_DP, [CO_DP_PARAM_AG] = GROUP_DP, [CO_EMB_GRAD_AR] = GROUP_EMB,
    [CO_AMAX_AR] = GROUP_AMAX,
};

static const CommOp coll_op[CO_COUNT_] = {
    [CO_TP_AR_FWD] = OP_ALL_REDUCE,      [CO_TP_AR_BWD] = OP_ALL_REDUCE,   [CO_TP_AG_FWD] = OP_ALL_GATHER,
    [CO_TP_RS_FWD] = OP_REDUCE_SCATTER,  [CO_TP_AG_BWD] = OP_ALL_GATHER,   [CO_TP_RS_BWD] = OP_REDUCE_SCATTER,
    [CO_CP_KV] = OP_ALL_GATHER,          [CO_PP_P2P] = OP_SEND_RECV,       [CO_DP_GRAD_AR] = OP_ALL_REDUCE,
    [CO_DP_GRAD_RS] = OP_REDUCE_SCATTER, [CO_DP_PARAM_AG] = OP_ALL_GATHER, [CO_EMB_GRAD_AR] = OP_ALL_REDUCE,
    [CO_AMAX_AR] = OP_ALL_REDUCE,
};

/* Bytes this GPU sends for one call of op over n ranks with payload S. */
static uint64_t bus(CommOp op, uint64_t n, uint64_t S)
{
    if (n <= 1) return 0;
    unsigned __int128 s = S; /* exact floor of S*factor; the result fits in 64 bits since factor < 2 */
    switch (op) {
    case OP_ALL_REDUCE: return (uint64_t)(s * 2 * (n - 1) / n);
    case OP_ALL_GATHER:
    case OP_REDUCE_SCATTER: return (uint64_t)(s * (n - 1) / n);
    default: return S;
    }
}

/* Elements * bytes of dtype, plus block scales for FP8 activations at act_gran (a [rows, h] tensor). */
static uint64_t act_bytes(Ck *ck, Dtype dt, Granularity gr, uint64_t rows, uint64_t cols)
{
    uint64_t b = ck_mul3(ck, rows, cols, dtype_bytes(dt));
    if (dtype_is_fp8(dt) && gr != GRAN_TENSOR) {
        uint64_t n, sb;
        if (gran_scale_count(gr, rows, cols, &n, &sb, NULL))
            ck->ovf = 1;
        else
            b = ck_add(ck, b, sb);
    }
    return b;
}

static void set(const PlanInput *in, const Geo *g, Plan *p, CollectiveId id, Dtype dt, uint64_t ranks, uint64_t span,
                uint64_t payload, uint64_t calls, Ck *ck)
{
    Collective *c = &p->coll[id];
    c->id = id;
    c->name = coll_names[id];
    c->group = coll_group[id];
    c->op = coll_op[id];
    c->dtype = dt;
    if (ranks <= 1 || !calls) ranks = 0, calls = 0, payload = 0;
    c->ranks = (uint32_t)ranks;
    c->inter_node = ranks && span > in->gpu->gpus_per_node;
    c->payload_bytes = payload;
    c->bus_bytes = bus(c->op, ranks, payload);
    c->calls = calls;
    c->step_bytes = ck_mul(ck, c->bus_bytes, calls);
    double bw = (c->inter_node ? in->gpu->inter_bw : in->gpu->intra_bw) * in->eff_net;
    double lat = c->inter_node ? in->latency_inter_s : in->latency_intra_s;
    c->time_s = calls ? (double)c->step_bytes / bw + (double)calls * lat : 0;
    c->exposed_s = c->time_s; /* plan_time decides what overlaps */
    (void)g;
}

void plan_comm(const PlanInput *in, const Geo *g, Plan *p, Ck *ck)
{
    const Recipe *rc = in->recipe;
    memset(p->coll, 0, sizeof p->coll);
    for (int i = 0; i < CO_COUNT_; i++) {
        p->coll[i].id = (CollectiveId)i;
        p->coll[i].name = coll_names[i];
        p->coll[i].group = coll_group[i];
        p->coll[i].op = coll_op[i];
    }
    uint64_t m = g->m, Ls = g->Ls, t = g->tp, h = g->h;
    int full = in->recompute == RECOMPUTE_FULL;
    uint64_t per_layer_calls = ck_mul(ck, Ls, m); /* layer passes per step on this stage */

    /* TP */
    uint64_t S_ag = act_bytes(ck, rc->comm_tp_ag, rc->act_gran, g->tok, h);
    uint64_t S_rs = act_bytes(ck, rc->comm_tp_rs, GRAN_TENSOR, g->tok, h);
    if (t > 1 && g->rep == 1) {
        set(in, g, p, CO_TP_AR_FWD, rc->comm_tp_rs, t, t, S_rs, ck_mul(ck, per_layer_calls, full ? 4 : 2), ck);
        set(in, g, p, CO_TP_AR_BWD, rc->comm_tp_rs, t, t, S_rs, ck_mul(ck, per_layer_calls, 2), ck);
    } else if (t > 1) {
        uint64_t f = full ? 4 : 2;
        set(in, g, p, CO_TP_AG_FWD, rc->comm_tp_ag, t, t, S_ag, ck_mul(ck, per_layer_calls, f), ck);
        set(in, g, p, CO_TP_RS_FWD, rc->comm_tp_rs, t, t, S_rs, ck_mul(ck, per_layer_calls, f), ck);
        /* backward gathers: 2 output gradients (comm_tp_rs dtype) + 2 saved-input re-gathers (comm_tp_ag) */
        uint64_t S_bag = ck_add(ck, S_rs, S_ag);
        set(in, g, p, CO_TP_AG_BWD, rc->comm_tp_rs == rc->comm_tp_ag ? rc->comm_tp_ag : DT_NONE, t, t, S_bag / 2,
            ck_mul(ck, per_layer_calls, 4), ck);
        p->coll[CO_TP_AG_BWD].payload_bytes = S_bag / 2; /* mean payload of the two kinds */
        set(in, g, p, CO_TP_RS_BWD, rc->comm_tp_rs, t, t, S_rs, ck_mul(ck, per_layer_calls, 2), ck);
    }

    /* CP: K and V of the whole sequence, this rank's kv heads, BF16 */
    if (g->cp > 1) {
        uint64_t S = ck_mul3(ck, ck_mul(ck, g->mbs, g->seq), 2 * g->kv_dim / t, 2);
        set(in, g, p, CO_CP_KV, DT_BF16, g->cp, t * g->cp, S, ck_mul(ck, per_layer_calls, full ? 4 : 3), ck);
    }

    /* PP: boundary stages send m*(2v-1) times (activations forward, gradients backward) */
    if (g->pp > 1) {
        uint64_t S = ck_mul3(ck, g->tok, h / t + (h % t != 0), 2); /* Megatron sends the 1/tp scatter */
        set(in, g, p, CO_PP_P2P, DT_BF16, 2, g->world, S, ck_mul(ck, m, 2 * g->vpp - 1), ck);
        p->coll[CO_PP_P2P].bus_bytes = S, p->coll[CO_PP_P2P].step_bytes = ck_mul(ck, S, p->coll[CO_PP_P2P].calls);
    }

    /* DP (over dp x cp: context-parallel ranks hold the same weights) */
    uint64_t d = g->d, span_dp = t * g->cp * g->dp;
    uint64_t eg = p->params_gemm_gpu, eo = p->params_gpu - p->params_gemm_gpu;
    Dtype gg = rc->comm_dp_grad, go = rc->other_comm_dp_grad;
    Dtype pg = rc->comm_param_gather, po = rc->other_comm_param_gather;
    uint64_t S_grad = ck_add(ck, ck_mul(ck, eg, dtype_bytes(gg)), ck_mul(ck, eo, dtype_bytes(go)));
    uint64_t S_par = ck_add(ck, ck_mul(ck, eg, dtype_bytes(pg)), ck_mul(ck, eo, dtype_bytes(po)));
    int shard_any = in->sharding != SHARD_NONE;
    if (in->sharding == SHARD_DIST_OPT) shard_any = (rc->gemm.shard_mask | rc->other.shard_mask) != 0;
    if (d > 1 && !shard_any) {
        set(in, g, p, CO_DP_GRAD_AR, gg == go ? gg : DT_NONE, d, span_dp, S_grad, 1, ck);
    } else if (d > 1) {
        set(in, g, p, CO_DP_GRAD_RS, gg == go ? gg : DT_NONE, d, span_dp, S_grad, 1, ck);
        set(in, g, p, CO_DP_PARAM_AG, pg == po ? pg : DT_NONE, d, span_dp, S_par,
            in->sharding == SHARD_ZERO3 ? ck_mul(ck, 2, m) : 1, ck);
    }

    /* tied embedding: first and last stage sum their gradients */
    if (in->model->tied_embeddings && g->pp > 1)
        set(in, g, p, CO_EMB_GRAD_AR, go, 2, g->world, ck_mul(ck, g->emb, dtype_bytes(go)), 1, ck);

    /* amax: x and w maxima forward, dy backward, per micro-batch */
    if (recipe_fp8_gemm(rc) && rc->amax_reduce != AMAX_NONE) {
        uint64_t n = rc->amax_reduce == AMAX_TP ? t * g->cp : t * g->cp * g->dp;
        uint64_t S = ck_mul(ck, LIN_COUNT * Ls, 3 * 4) / 2; /* mean of 2 (fwd) and 1 (bwd) fp32 per linear */
        set(in, g, p, CO_AMAX_AR, DT_FP32, n, n, S, ck_mul(ck, 2, m), ck);
    }

    p->tp_comm_bytes = p->cp_comm_bytes = p->pp_comm_bytes = p->dp_comm_bytes = 0;
    for (int i = 0; i < CO_COUNT_; i++) {
        const Collective *c = &p->coll[i];
        switch (c->group) {
        case GROUP_TP: p->tp_comm_bytes = ck_add(ck, p->tp_comm_bytes, c->step_bytes); break;
        case GROUP_CP: p->cp_comm_bytes = ck_add(ck, p->cp_comm_bytes, c->step_bytes); break;
        case GROUP_PP:
        case GROUP_EMB: p->pp_comm_bytes = ck_add(ck, p->pp_comm_bytes, c->step_bytes); break;
        case GROUP_DP: p->dp_comm_bytes = ck_add(ck, p->dp_comm_bytes, c->step_bytes); break;
        default: break;
        }
    }
    p->weight_comm_bytes = ck_add(ck, ck_add(ck, p->coll[CO_DP_GRAD_AR].step_bytes, p->coll[CO_DP_GRAD_RS].step_bytes),
                                  p->coll[CO_DP_PARAM_AG].step_bytes);
}
