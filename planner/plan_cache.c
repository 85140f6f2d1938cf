/* planner/plan_cache.c — where a gradient's reduction after the backward finds its bytes on a host profile: in the
 * CPU's last-level cache or in memory. calibrate measures the FP32 all-reduce both ways (links.csv path "fp32 grad":
 * payload and receive buffer flushed from the caches; path "fp32": both just used); plan_comm.c times each gradient
 * call between the two by plan_grad_miss. The physics, not a fitted factor:
 *
 * - The executor's reduction (exec/comm/comm_mpi_coll.c, rs_v) first touches two S-byte buffers: the payload (the
 *   gradient bucket, read by the peers' MPI_Alltoallv copies and by the fold) and the communicator's scratch (the
 *   peers' parts received, then folded). Every later pass of the call (the fold's write, the all-gather) meets
 *   lines the first touch brought in. A line found in memory costs its transfer, one found in the cache does not,
 *   so the call's time above the hot fit grows with the share of those 2S bytes that come from memory: half of it
 *   the payload's, half the scratch's. (Measured on the survey's Xeon, docs/calibrate.md "Gradients reduced from
 *   memory": flushing the 6.29 MB payload alone added 0.45 ms to the warm 1.2 ms, flushing the scratch too another
 *   0.45 ms.)
 * - A cache that keeps what was used last (LRU; Mattson et al., "Evaluation techniques for storage hierarchies",
 *   IBM Systems Journal 9(2), 1970: a line is still cached when fewer distinct bytes than the cache holds were
 *   touched since its last use) shared by R ranks that run the same step in step: R x the bytes a rank touches.
 * - The payload: each gradient is written by its layer's weight-gradient GEMM as the backward reaches it, the
 *   first ones when it starts, the last when it ends; the rest of the backward then touches the weights it reads,
 *   the gradients it writes and the activations it reads (D_bwd a rank: the working weights and their FP8 copies,
 *   the gradients, the activations). Written at a uniform pace, a gradient written at fraction x of the backward
 *   has R (1 - x) D_bwd bytes after it, so the share still cached is min(1, C / (R D_bwd)).
 * - The scratch was last used by the previous step's reduction: a whole step (D_step a rank: every state, FP8
 *   copy, scale and activation the plan counts) came through since. Cached when R D_step <= C, else from memory.
 *
 * Not modelled: other processes on the machine using the same cache (a shared host's tenants: the cache a run
 * gets is less than C then, and the calls slower than planned), the L2 (private, a few MiB: the hot fit's own). */
#include "planner/plan_internal.h"

double plan_grad_miss(const GpuSpec *gp, const MemTerm *mt, const uint64_t cat[MC_COUNT_], uint64_t ranks)
{
    if (!gp->llc_bytes) return 1.0; /* not known: from memory, as calibrate's gradient sweep measures it */
    const double C = (double)gp->llc_bytes, R = ranks ? (double)ranks : 1.0;
    const double bwd = (double)mt[MT_WEIGHT_GEMM].bytes + (double)mt[MT_WEIGHT_OTHER].bytes +
                       (double)mt[MT_WEIGHT_EXPERT].bytes + (double)cat[MC_FP8_COPY] + (double)mt[MT_GRAD_GEMM].bytes +
                       (double)mt[MT_GRAD_OTHER].bytes + (double)mt[MT_GRAD_EXPERT].bytes + (double)cat[MC_ACTIVATION];
    const double step =
        (double)cat[MC_STATE] + (double)cat[MC_FP8_COPY] + (double)cat[MC_SCALE] + (double)cat[MC_ACTIVATION];
    const double payload_cached = R * bwd <= C ? 1.0 : C / (R * bwd);
    const double scratch_cached = R * step <= C ? 1.0 : 0.0;
    return 0.5 * (1.0 - payload_cached) + 0.5 * (1.0 - scratch_cached);
}
