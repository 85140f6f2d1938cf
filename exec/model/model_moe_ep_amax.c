/* exec/model/model_moe_ep_amax.c — delayed scaling (te-fp8) of the routed experts over ranks: a local
 * expert's amax records are MAX-reduced over the ranks that hold a part of that same expert, and over nothing
 * else, around the bank's all-reduce over the DP group (model_ep_amax_begin / end). With expert parallelism the
 * other DP ranks hold other experts in the same slots, so the experts' records are reduced over the
 * expert-data-parallel group (edpc: the replicas, ranks ep·etp apart) and, with expert tensor parallelism, over
 * the ETP group too (etpc: the shards), then put back over what the DP reduction made of them. The ETP peers'
 * gathered inputs and output gradients are the same rows, so those records already agree; a weight's and FC2's
 * input's records are a shard's each, and their MAX is the whole expert's, as one rank measures it and as
 * Transformer Engine's delayed scaling reduces its amaxes over the tensor-parallel ranks. At ep 1 every rank of
 * the DP group holds a part of every expert in the same slots, so the DP reduction is that reduction already.
 * A NaN in any rank's record reaches every rank of the reduction (the MAX keeps a NaN: comm_mpi_coll.c). */
#include "exec/model/model_internal.h"

/* Row 0 of bank b's expert records of MoE block l: [*first, *first + *n) (model_slot_expert's order). */
static void expert_slots(const Model *m, const ScalingBank *b, uint32_t l, uint32_t *first, uint32_t *n)
{
    const int bwd = b == &m->sc.bwd;
    *first = model_slot_expert(m, l, 0, bwd ? 2 : 0);
    *n = (bwd ? 2u : 4u) * (m->spec.experts / m->ep);
}

/* Copy the experts' records of bank b's row 0 to p->amax (to 1) or back (to 0), layer after layer. */
static Status expert_amax_copy(Model *m, ScalingBank *b, int to, uint64_t *count, Err *e)
{
    float *buf = model_ep_amax_buf(m);
    Status st = ST_OK;
    uint64_t off = 0;
    for (uint32_t l = 0; !st && l < m->spec.layers; l++) {
        if (!model_moe_layer(m, l)) continue;
        uint32_t first, n;
        expert_slots(m, b, l, &first, &n);
        float *rec = b->amax_history + first, *tmp = buf + off;
        st = m->bk->convert(m->bk, to ? rec : tmp, DT_FP32, to ? tmp : rec, DT_FP32, n, NULL, e);
        off += n;
    }
    *count = off;
    return st;
}

Status model_ep_amax_begin(Model *m, ScalingBank *b, Err *e)
{
    float *buf = model_ep_amax_buf(m);
    if (m->ep <= 1 || !buf) return ST_OK;
    uint64_t n = 0;
    Status st = expert_amax_copy(m, b, 1, &n, e);
    /* the plan's edp_amax_allreduce and etp_amax_allreduce (planner/plan_moe_comm.c expert_amax); the records
     * also stay in the bank's DP all-reduce (amax_allreduce), which puts nothing back over them (model_ep_amax_end) */
    if (!st && n && m->edpc->size > 1)
        st = m->edpc->all_reduce(m->edpc, CO_EDP_AMAX_AR, m->bk, buf, n, DT_FP32, COMM_MAX, e);
    if (!st && n && m->etp > 1) st = m->etpc->all_reduce(m->etpc, CO_ETP_AMAX_AR, m->bk, buf, n, DT_FP32, COMM_MAX, e);
    return st;
}

Status model_ep_amax_end(Model *m, ScalingBank *b, Err *e)
{
    if (m->ep <= 1 || !model_ep_amax_buf(m)) return ST_OK;
    uint64_t n = 0;
    return expert_amax_copy(m, b, 0, &n, e);
}
