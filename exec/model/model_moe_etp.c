/* exec/model/model_moe_etp.c — expert tensor parallelism (--etp; Megatron-Core's
 * --expert-tensor-parallel-size): each routed expert's FFN split over the etp ranks of an ETP group,
 * FC1 column-parallel (this rank's Fe/etp of the gate and of the up columns), FC2 row-parallel (its
 * Fe/etp input columns), so an expert's weights, master, gradients and Adam states are 1/etp a rank.
 *
 * The expert grid folds the stage's tp x dp ranks as etp x ep x edp, etp fastest (Megatron-Core's MoE
 * parallel folding; exec/model/model_groups.c). Per MoE layer and micro-batch, as Megatron-Core's
 * all-to-all token dispatcher runs it (token_dispatcher.py, core_r0.12+: the all-to-all over the EP group,
 * then gather_from_sequence_parallel_region over the expert-TP group with the peers' split sizes, the
 * chunks sorted by local expert; the mirror after the experts):
 *   1. every rank routes its own tokens and dispatches them over its EP group (ep 1: they stay), as at
 *      etp 1 (model_moe_ep.c), into its segment of the ETP group's rows;
 *   2. the ETP peers' row counts are gathered (etp x ep x El uint64, not a plan collective), then their rows
 *      (etp_allgather, the dispatch dtype), so each rank of the group holds every row the group's
 *      experts received — source-major, ETP rank by rank — sorted expert-major for the grouped GEMMs;
 *   3. FC1, the activation and FC2 on this rank's Fe/etp columns give partial outputs of every row;
 *      sorted back, they are summed over the group, each rank keeping its own segment
 *      (etp_reducescatter, the combine dtype), and combined back over the EP group.
 * Backward mirrors it: the output gradients dispatched and gathered (etp_allgather), the input gradients'
 * partial sums (FC1 row-split) reduce-scattered (etp_reducescatter) and combined back. Bytes per call:
 * the gathered rows x hidden x the dtype's bytes, the plan's etp_allgather / etp_reducescatter payload
 * (planner/plan_moe_comm.c; at ep 1 every rank's rows are its tokens x top-k, so uniform and measured
 * routing agree). A NaN or Inf in any rank's partial sum reaches its owner through the reduction (MPI's
 * sum in float): the etp_fault hook puts one there to show the run stops on every rank. */
#include <math.h>
#include <string.h>

#include "exec/backend/elem.h"
#include "exec/backend/rng.h"
#include "exec/model/model_internal.h"

Status model_etp_counts(Model *m, const uint64_t *own, uint64_t *all, uint64_t n, Err *e)
{
    /* uint64 counts travel as pairs of 4-byte elements: a gather moves bytes, it adds nothing; in place (own is
     * this rank's block of all, which the MPI all-gather, as NCCL's, takes in place: comm_mpi.c) */
    return m->etpc->all_gather(m->etpc, COMM_UNPLANNED, m->bk, own, all, 2 * n, DT_FP32, e);
}

/* The elements of each ETP rank's segment: its sources' rows x cols. */
static void segments(const Model *m, const uint64_t *rc, uint64_t cols, uint64_t *seg)
{
    const uint64_t n = (uint64_t)m->ep * (m->spec.experts / m->ep);
    for (uint32_t q = 0; q < m->etp; q++) {
        uint64_t rows = 0;
        for (uint64_t i = 0; i < n; i++) rows += rc[q * n + i];
        seg[q] = rows * cols;
    }
}

Status model_etp_gather(Model *m, void *buf, const uint64_t *rc, uint64_t cols, Dtype dt, Err *e)
{
    segments(m, rc, cols, m->etp_seg);
    return comm_all_gather_v(m->etpc, CO_ETP_AG, m->bk, buf, m->etp_seg, dt, e);
}

Status model_etp_scatter(Model *m, int fwd, void *buf, const uint64_t *rc, uint64_t cols, Err *e)
{
    segments(m, rc, cols, m->etp_seg);
    Status st = ST_OK;
    if (fwd && m->etp_fault) { /* the test hook: a diverged partial sum in the first row */
        uint32_t v = 0;
        elem_store(&v, m->act_dtype, 0, m->etp_fault == 2 ? INFINITY : NAN);
        st = m->bk->copy_to_device(m->bk, buf, &v, dtype_bytes(m->act_dtype), e);
    }
    if (!st) st = comm_reduce_scatter_v(m->etpc, CO_ETP_RS, m->bk, buf, m->etp_seg, m->act_dtype, COMM_SUM, e);
    return st;
}

float model_etp_fill(const Model *m, const ModelParam *p, uint64_t key, float std, float *w)
{
    const ModelSpec *s = &m->spec;
    const uint64_t El = s->experts / m->ep, x0 = (uint64_t)m->ep_rank * El, C = s->hidden;
    const uint64_t Fe = s->expert_ffn, Ft = model_xffn(m), f0 = (uint64_t)m->etp_rank * Ft, kf = spec_fc1_k(s);
    float amax = 0.0f;
    for (uint64_t i = 0; i < p->rows; i++) {
        uint64_t b;                 /* the row's first element in the one-rank tensor's stream */
        if (p->kind == PK_XFC1_W) { /* (E · k·Fe, C), expert after expert, [gate Fe | up Fe]: rows f0 .. of each */
            const uint64_t x = i / (kf * Ft), part = i % (kf * Ft) / Ft, c = i % Ft;
            b = ((x0 + x) * kf * Fe + part * Fe + f0 + c) * C;
        } else { /* PK_XFC2_W (E · C, Fe): columns f0 .. f0 + Ft of every row */
            b = (x0 * C + i) * Fe + f0;
        }
        float *out = w + i * p->cols;
        rng_normal_fill(key, b, b + p->cols, std, out);
        for (uint64_t c = 0; c < p->cols; c++) amax = fmaxf(amax, fabsf(out[c]));
    }
    return amax;
}
