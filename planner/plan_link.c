/* planner/plan_link.c — what one collective call costs on a link: nccl-tests' bus factor and ring steps of
 * each op, the measured link fits of a host profile (fp8plan calibrate) looked up by op, dtype path and
 * payload, and the all-to-all's per-message cost. planner/plan_comm.c counts the calls and their bytes. */
#include "planner/arch.h"
#include "planner/plan_internal.h"

/* nccl-tests' bus factor of op over n ranks as k (n - 1) / n: k = 2 for an all-reduce (a reduce-scatter then an
 * all-gather), 1 for an all-gather, a reduce-scatter and an all-to-all (each rank keeps its own 1/n); 0 for the
 * point-to-point ops, whose factor is 1 (every byte crosses once). The one place this is written: the planner's
 * bytes below, the executor's counters (exec/comm) and calibrate's bus bandwidth all come from it. */
uint64_t comm_ring_k(CommOp op)
{
    switch (op) {
    case OP_ALL_REDUCE: return 2;
    case OP_ALL_GATHER:
    case OP_REDUCE_SCATTER:
    case OP_ALL_TO_ALL: return 1;
    default: return 0;
    }
}

double comm_bus_factor(CommOp op, uint64_t n)
{
    if (n <= 1) return 0;
    uint64_t k = comm_ring_k(op);
    return k ? (double)k * (double)(n - 1) / (double)n : 1.0;
}

double comm_ring_steps(CommOp op, uint64_t n)
{
    if (n <= 1) return 0;
    return op == OP_ALL_REDUCE ? 2.0 * (double)(n - 1) : op == OP_SEND_RECV ? 1.0 : (double)(n - 1);
}

LinkPath link_path_of(CommOp op, Dtype dt)
{
    if (op != OP_ALL_REDUCE && op != OP_REDUCE_SCATTER) return LINK_PATH_BYTES;
    switch (dt) {
    case DT_BF16:
    case DT_FP16: return LINK_PATH_BF16;
    case DT_E4M3:
    case DT_E5M2: return LINK_PATH_FP8;
    default: return LINK_PATH_FP32;
    }
}

const LinkFit *plan_link_fit(const GpuSpec *gp, CommOp op, Dtype dt, uint64_t S)
{
    LinkPath want = link_path_of(op, dt);
    for (int pass = 0; pass < 2; pass++) { /* the path's rows, then (a path not measured) the op's FP32 rows */
        for (int i = 0; i < gp->nlink_fit; i++) {
            const LinkFit *f = &gp->link_fit[i];
            if (f->op == op && f->path == want && S >= f->from && (!f->to || S < f->to)) return f;
        }
        if (want == LINK_PATH_BYTES || want == LINK_PATH_FP32) break;
        want = LINK_PATH_FP32;
    }
    return NULL;
}

/* gp's row of an FP32 all-reduce's path (LINK_PATH_FP32_GRAD, LINK_PATH_FP32_EMB) holding S; NULL if none. */
static const LinkFit *fp32_ar_row(const GpuSpec *gp, CommOp op, Dtype dt, LinkPath path, uint64_t S)
{
    if (op == OP_ALL_REDUCE && link_path_of(op, dt) == LINK_PATH_FP32)
        for (int i = 0; i < gp->nlink_fit; i++) {
            const LinkFit *f = &gp->link_fit[i];
            if (f->op == op && f->path == path && S >= f->from && (!f->to || S < f->to)) return f;
        }
    return NULL;
}

const LinkFit *plan_link_fit_grad(const GpuSpec *gp, CommOp op, Dtype dt, uint64_t S)
{
    const LinkFit *f = fp32_ar_row(gp, op, dt, LINK_PATH_FP32_GRAD, S);
    return f ? f : plan_link_fit(gp, op, dt, S);
}

const LinkFit *plan_link_fit_emb(const GpuSpec *gp, CommOp op, Dtype dt, uint64_t S)
{
    const LinkFit *f = fp32_ar_row(gp, op, dt, LINK_PATH_FP32_EMB, S);
    return f ? f : plan_link_fit_grad(gp, op, dt, S);
}

double plan_link_call(const LinkFit *f, CommOp op, uint64_t n, uint64_t S, double *bw, double *lat)
{
    double l = comm_ring_steps(op, n) * f->lat, b = (double)S * comm_bus_factor(op, n);
    if (bw) *bw = f->bw;
    if (lat) *lat = l;
    return l + (f->bw > 0 ? b / f->bw : 0);
}

const LinkFit *plan_a2a_msg_fit(const GpuSpec *gp, uint64_t b)
{
    for (int i = 0; gp && i < gp->nlink_fit; i++) {
        const LinkFit *f = &gp->link_fit[i];
        if (f->op == OP_ALL_TO_ALL && (f->path == LINK_PATH_EAGER || f->path == LINK_PATH_RENDEZVOUS) && b >= f->from &&
            (!f->to || b < f->to))
            return f;
    }
    return NULL;
}

double plan_a2a_msg(const GpuSpec *gp, uint64_t b)
{
    const LinkFit *f = plan_a2a_msg_fit(gp, b);
    if (!f) return -1;
    if (!b) return 0;
    return f->lat + (f->bw > 0 ? (double)b / f->bw : 0);
}

double plan_a2a_call(const GpuSpec *gp, uint64_t n, uint64_t S, double *bw, double *lat)
{
    const uint64_t b = n ? S / n : 0;
    const LinkFit *f = plan_a2a_msg_fit(gp, b);
    if (!f) return -1;
    double peers = n > 1 ? (double)(n - 1) : 0.0;
    if (bw) *bw = f->bw;
    if (lat) *lat = b ? peers * f->lat : 0;
    return peers * plan_a2a_msg(gp, b);
}

double plan_a2a_peers_s(const GpuSpec *gp, const uint64_t *to, const uint64_t *from, uint64_t elem_bytes, uint64_t n,
                        uint64_t self)
{
    double t = 0;
    for (uint64_t j = 0; j < n; j++) {
        if (j == self) continue;
        double a = plan_a2a_msg(gp, to[j] * elem_bytes), b = plan_a2a_msg(gp, from[j] * elem_bytes);
        if (a < 0 || b < 0) return -1;
        t += 0.5 * (a + b);
    }
    return t;
}
