/* exec/measure/calibrate_link.c — the communicator's all-reduce swept over
 * sizes, 64 B up to the largest collective a run makes (cal_link_sizes; see
 * calibrate.h): per size the median over reps of the slowest rank's transfer
 * time as the communicator counts it for a run (from the moment every rank
 * has arrived: exec/comm; NCCL's from its start and end events), each call
 * preceded by what precedes a run's (caches evicted, one rank late:
 * arrive_as_in_a_run), its bus bandwidth, and the latency + bandwidth line
 * fitted to the sweep. Every rank calls it and gets the same figures. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/measure/calibrate_link.h"
#include "util/cache.h"

/* Each call is timed as a run meets it: its ranks come from a step's kernels, which left the caches
 * holding other data (the payload and MPI's shared-memory queues evicted), and not at the same moment
 * (one rank's compute ends later; the others wait in the communicator's arrival barrier, and on a shared
 * machine a waiting rank may be off its core when the last one arrives). So every rank first runs an
 * element-wise kernel over a 64 MiB buffer (past a server CPU's last-level cache), x = x + x in FP32:
 * loads and stores through the caches, as a step's kernels make them — a memset does not serve, since
 * for a buffer this size the C library writes around the caches (on this project's 2-core EPYC host a
 * 256 KiB buffer re-read after a 64 MiB memset took 1.8-2.0 us, as with nothing in between, and 5.9-6.6
 * us after the kernel). Over MPI rank 0 runs it a second time: it arrives late. MPI counts the wait apart
 * (its arrival barrier), so what is timed is what the late arrival costs the waiting ranks after it;
 * NCCL's device time would count the wait itself (its kernels wait for their peers), so there every rank
 * arrives together. The buffer holds zeros (calibrate_link), which the kernel keeps. */
static Status arrive_as_in_a_run(Backend *bk, const Comm *comm, void *evict, void *buf, uint64_t S, Err *e)
{
    const uint64_t n = CAL_LINK_EVICT / sizeof(float);
    Status st = bk->add(bk, evict, evict, evict, DT_FP32, n, e);
    if (!st && comm->rank == 0 && !strcmp(comm->name, "mpi")) st = bk->add(bk, evict, evict, evict, DT_FP32, n, e);
    if (!st) st = bk->add(bk, buf, buf, buf, DT_FP32, S / sizeof(float), e);
    return st;
}

/* One size: reps timed calls (after one warm-up), their median and spread into c. */

/* The slowest rank's time of a call (each rank's own in `mine`), MAX-reduced through backend memory (sync, a
 * GPU's for NCCL). */
static Status slowest_rank(Backend *bk, Comm *comm, void *sync, float mine, float *slowest, Err *e)
{
    Status st = bk->copy_to_device(bk, sync, &mine, sizeof mine, e);
    if (!st) st = comm->all_reduce(comm, COMM_UNPLANNED, bk, sync, 1, DT_FP32, COMM_MAX, e);
    if (!st) st = bk->copy_to_host(bk, slowest, sync, sizeof *slowest, e);
    return st;
}
static Status one_size(Backend *bk, Comm *comm, void *buf, void *evict, float *sync, uint64_t S, int reps, CalColl *c,
                       Err *e)
{
    double t[64];
    Status st = ST_OK;
    for (int i = -1; !st && i < reps; i++) {
        float mine = 0, slowest = 0;
        st = arrive_as_in_a_run(bk, comm, evict, buf, S, e);
        if (!st) st = comm_settle(comm, e); /* the previous calls' times are in total before t0 */
        double t0 = comm->total.seconds;
        if (!st) st = comm->all_reduce(comm, COMM_UNPLANNED, bk, buf, S / 4, DT_FP32, COMM_SUM, e);
        if (!st) st = comm_settle(comm, e); /* NCCL: the call's time from its events */
        mine = (float)(comm->total.seconds - t0);
        if (!st) st = slowest_rank(bk, comm, sync, mine, &slowest, e);
        if (i >= 0) t[i] = slowest;
    }
    if (st) return st;
    c->payload = S;
    cal_median(t, reps, &c->seconds, &c->spread);
    c->busbw = cal_allreduce_busbw(S, comm->size, c->seconds);
    return ST_OK;
}

Status calibrate_link(Backend *bk, Comm *comm, uint64_t top, int reps, Calibration *out, Err *e)
{
    uint64_t sizes[CAL_MAX_SIZES];
    const int n = cal_link_sizes(top, sizes);
    void *buf = NULL, *evict = NULL;
    float *sync = NULL;
    Status st = bk->alloc(bk, sizes[n - 1], &buf, e);
    if (!st) st = bk->alloc(bk, CAL_LINK_EVICT, &evict, e);
    if (!st) st = bk->alloc(bk, 2 * sizeof(float), (void **)&sync, e);
    if (!st) st = bk->memset0(bk, buf, sizes[n - 1], e);
    if (!st) st = bk->memset0(bk, evict, CAL_LINK_EVICT, e);
    out->ranks = comm->size;
    out->ncoll = 0;
    /* the smallest size gives the latency and the two largest the bandwidth every planned call is charged:
     * 4x the repetitions there (cal_link_reps), steadier medians of figures the ranks' arrival and a shared
     * machine spread (on a 2-core VM, 11 calibrations of the demo model at 7 gave 0.70-1.17 GB/s, 4 of them
     * above 0.85; 10 at 28 gave 0.68-1.11, 1 above 0.85: that machine also has a fast mode lasting seconds,
     * which no number of repetitions averages away) */
    for (int s = 0; !st && s < n; s++) {
        if (!(st = one_size(bk, comm, buf, evict, sync, sizes[s], cal_link_reps(s, n, reps), &out->coll[s], e)))
            out->ncoll++;
    }
    void *mine[3] = {sync, evict, buf};
    for (int i = 0; i < 3; i++)
        if (mine[i]) bk->free(bk, mine[i]);
    if (st) return st;
    if (cal_fit_link(out->coll, out->ncoll, comm->size, &out->link_lat, &out->link_bw))
        return err_set(e, ST_SOFTWARE, "calibrate: the all-reduce sweep over %d ranks gives no positive bandwidth",
                       comm->size);
    return ST_OK;
}

/* ---- every collective op (calibrate_links) ----
 * Each call is timed warm and with the ranks together (the communicator's own arrival barrier, its wait
 * counted apart as in a run), not after the eviction and late arrival above: a run's per-layer collectives
 * follow a layer's kernels, not a 64 MiB working set, and back to back in the gradient reduction; and on
 * this project's shared 2-core host the eviction and a rank's 20-40 ms wait in the barrier put 4-40 ms
 * scheduler delays (multiples of the 4 ms tick) into half the calls of every op but the buffered send
 * at a load average of 3, while warm calls at a load of 4 had none. A run's TP all-gather of 64 KiB took
 * 14.7 us per call; warm, 8.2 us; after the eviction, tens of us.
 * What a call of the all-reduce, reduce-scatter and all-gather sweeps follows is a run's: milliseconds of compute
 * (cal_coll_gap, half a layer's forward GEMMs). Back to back after one pass of the layer's kernel (about 0.1 ms
 * from the ranks' previous MPI call, the slowest-rank sync), a 64 KiB BF16 reduce-scatter over 2 ranks of this
 * project's host took 17.1 us, an all-gather 7.9 and a 512 B all-reduce 1.7; after 2 ms of that kernel 19.3, 9.7
 * and 2.6 us, after 0.3 ms as back to back; a TP 2 run's calls, 1.4-4.9 ms apart on the demo, took 20.5-22.4,
 * 10.0 and 1.8 us (medians of a per-call trace; load 12-19, autogroup nice -19). The ranks still arrive
 * together, within the kernel's last pass (13-25 us apart, as a run's reduce-scatters' 18-30 us). */

/* The sweeps: op, the dtype its elements travel in, and the communicator's counter its calls are read from (a
 * planner row of that op; the calibration's communicator counts nothing else there). The reductions in the
 * three dtypes a run reduces in; the byte-moving ops in BF16 (their cost does not depend on the dtype). The last
 * (GRAD_SWEEP) is the FP32 all-reduce again as a run reduces its gradients after the backward: the payload written,
 * then it and the communicator's receive buffer flushed from the caches (sweep_size). Between a gradient's write
 * and its reduction a step passes every later layer's weights, activations and states through the caches, and the
 * receive buffer was last touched a step before. On this project's 2-vCPU host (load 7-9, autogroup nice -19), the
 * demo's 6,291,456 B bucket took 1.17-1.30 ms just written and 2.1-2.2 ms so flushed (1.66-1.77 with the payload
 * alone flushed, 2.2-2.6 after a 512 MiB pass), where DP 2's run measured 1.6-2.2 ms; 1 MiB took 0.20-0.21 ms and
 * 0.29-0.35 (docs/calibrate.md, "Gradients reduced from memory"). Measured on the CPU backend only.
 * The last (EMB_SWEEP) is the gradient sweep as the tied embedding's gradient meets it between the first and the last
 * pipeline stage: the last stage reaches it first, its own backward done, and waits in the arrival barrier while the
 * first stage runs its last backward (PP's cool-down bubble), so the even rank of each pair (the earlier stage, as
 * p2p_call) runs a layer's backward (gap[1], cal_p2p_gap) more before it arrives. Traced in PP 2's run of the demo
 * (load 2-3): the last stage waited 7.9-8.0 ms, the first came from 7.8-8.0 ms of compute, and the call took 524-590
 * us where this project's gradient sweep measured 397 at 1 MiB; in one process at a load of 15 the gradient sweep's
 * 1 MiB call took 324 us with the ranks arriving together and 390 with one 8 ms late (medians of 24, interleaved). */
static const struct {
    CommOp op;
    Dtype dt;
    CollectiveId id;
} sweeps[CAL_MAX_SWEEPS - 1] = {
    {OP_ALL_REDUCE, DT_FP32, CO_DP_GRAD_AR},    {OP_ALL_REDUCE, DT_BF16, CO_DP_GRAD_AR},
    {OP_ALL_REDUCE, DT_E4M3, CO_DP_GRAD_AR},    {OP_REDUCE_SCATTER, DT_FP32, CO_TP_RS_FWD},
    {OP_REDUCE_SCATTER, DT_BF16, CO_TP_RS_FWD}, {OP_REDUCE_SCATTER, DT_E4M3, CO_TP_RS_FWD},
    {OP_ALL_GATHER, DT_BF16, CO_TP_AG_FWD},     {OP_SEND_RECV, DT_BF16, CO_PP_P2P},
    {OP_BROADCAST, DT_BF16, CO_EMB_GRAD_AR},    {OP_ALL_TO_ALL, DT_BF16, CO_EP_DISPATCH_FWD},
    {OP_ALL_REDUCE, DT_FP32, CO_DP_GRAD_AR},    {OP_ALL_REDUCE, DT_FP32, CO_DP_GRAD_AR},
};
enum { GRAD_SWEEP = CAL_MAX_SWEEPS - 3, EMB_SWEEP = CAL_MAX_SWEEPS - 2 };

/* One call of sweep w with payload S bytes (buf and out hold S bytes; counts: 2 x comm->size entries; not
 * send/recv: p2p_call). The reduce-scatter and all-gather split S over the ranks (count = S / size / element: the
 * payload nccl-tests counts is the whole array); the all-to-all is
 * expert parallelism's call (comm_all_to_all_v: the element counts agreed, then MPI_Alltoallv), S / size
 * staying and the rest uneven over the peers (cal_a2a_counts). */
static Status one_call(Backend *bk, Comm *comm, int w, void *buf, void *out, uint64_t *counts, uint64_t S, Err *e)
{
    const Dtype dt = sweeps[w].dt;
    const CollectiveId id = sweeps[w].id;
    const uint64_t b = dtype_bytes(dt), per = S / b / (uint64_t)comm->size;
    switch (sweeps[w].op) {
    case OP_ALL_REDUCE: return comm->all_reduce(comm, id, bk, buf, S / b, dt, COMM_SUM, e);
    case OP_REDUCE_SCATTER: return comm->reduce_scatter(comm, id, bk, buf, out, per, dt, COMM_SUM, e);
    case OP_ALL_GATHER: return comm->all_gather(comm, id, bk, buf, out, per, dt, e);
    case OP_BROADCAST: return comm->broadcast(comm, id, bk, buf, S / b, dt, 0, e);
    default:
        cal_a2a_counts(comm->rank, comm->size, S / b, counts, counts + comm->size);
        return comm_all_to_all_v(comm, id, bk, buf, counts, out, counts + comm->size, dt, e);
    }
}

/* The bytes sweep w's calls carry whole: an element, for the split ops a whole share per rank, for the
 * all-to-all size^2 elements (cal_a2a_counts). */
static uint64_t unit_of(int w, int size)
{
    uint64_t unit = dtype_bytes(sweeps[w].dt);
    CommOp op = sweeps[w].op;
    if (op == OP_REDUCE_SCATTER || op == OP_ALL_GATHER) unit *= (uint64_t)size;
    if (op == OP_ALL_TO_ALL) unit *= (uint64_t)size * (uint64_t)size;
    return unit;
}

/* ---- send/recv as a pipeline meets it (p2p_call) ----
 * A pipeline stage sends a micro-batch's activation (or gradient) once it has computed it and goes on
 * computing while its neighbour receives; a message meets both ranks after milliseconds away from MPI. On this
 * project's 2-core host that, not the bytes, decides most of a message's time. A 2-rank replica of mpi_send and
 * mpi_recv (load 9-16 from other work, run at autogroup nice -19), a 64 KiB message each way per pair: back to
 * back 17-34 us a pair (the sender's reap of its previous send, copy and MPI_Isend, and the receiver's MPI_Recv
 * after its probe); with compute around each send 41-45 us at 1 ms, 43-58 at 2 ms, 65-79 at 5 ms, 74-84 at
 * 10 ms (the reap and MPI_Isend 0.2-0.6 -> 4-8 us each, the receive 14-20 -> 45-58 us; alike with Open MPI's
 * yield when idle off), where the sweep's old back-to-back pairs fitted 27 us and a run's PP 2 measured 55-80 us
 * a pair (docs/calibrate.md, "PP 2's send"). So the sweep runs two neighbouring stages of one layer each as 1F1B
 * does (PP 2's schedule in its steady state): rank r (even, the earlier stage) computes a forward, sends its
 * activation, computes the next forward while r + 1 receives, then receives the gradient; r + 1 receives,
 * computes a forward and a backward, sends the gradient, computes the next forward while r receives. Each
 * compute is the layer's kernel (x = x + x over its bytes, FP32) repeated for the layer's forward GEMMs' time
 * (gap[0]) or its forward's and backward's (gap[0] + gap[1]; cal_p2p_gap), at least once, the payload's own
 * buffer written last before a send. Each rank counts its send (its reap, copy and MPI_Isend) and its recv (the
 * transfer after its probe, the probe's wait apart), as a run's pipeline does. */
static Status compute_for(Backend *bk, void *evict, uint64_t evict_bytes, double gap_s, Err *e)
{
    const double t0 = comm_now_s();
    Status st;
    do st = bk->add(bk, evict, evict, evict, DT_FP32, evict_bytes / sizeof(float), e);
    while (!st && comm_now_s() - t0 < gap_s);
    return st;
}

static Status p2p_send(Backend *bk, Comm *comm, CollectiveId id, Dtype dt, void *buf, uint64_t S, void *evict,
                       uint64_t evict_bytes, double before, double after, Err *e)
{
    Status st = compute_for(bk, evict, evict_bytes, before, e);
    if (!st) st = bk->add(bk, buf, buf, buf, DT_FP32, S / sizeof(float), e);
    if (!st) st = comm->send(comm, id, bk, buf, S / dtype_bytes(dt), dt, comm->rank ^ 1, e);
    return st ? st : compute_for(bk, evict, evict_bytes, after, e);
}

static Status p2p_call(Backend *bk, Comm *comm, CollectiveId id, Dtype dt, void *buf, void *out, uint64_t S,
                       void *evict, uint64_t evict_bytes, const double *gap, Err *e)
{
    const int peer = comm->rank ^ 1, later = comm->rank & 1;
    const uint64_t n = S / dtype_bytes(dt);
    if (peer >= comm->size) return ST_OK; /* an odd rank out */
    Status st = ST_OK;
    if (!later) st = p2p_send(bk, comm, id, dt, buf, S, evict, evict_bytes, gap[0], gap[0], e);
    if (!st) st = comm->recv(comm, id, bk, out, n, dt, peer, e);
    if (!st && later) st = p2p_send(bk, comm, id, dt, buf, S, evict, evict_bytes, gap[0] + gap[1], gap[0], e);
    return st;
}

static Status sweep_size(Backend *bk, Comm *comm, int w, void *buf, void *out, float *sync, uint64_t *counts,
                         void *evict, uint64_t evict_bytes, const double *gap, uint64_t S, int reps, CalColl *c, Err *e)
{
    const double gap_s = cal_coll_gapped(sweeps[w].op) ? gap[2] : 0;
    double t[64];
    Status st = ST_OK;
    const CollectiveId id = sweeps[w].id;
    const int p2p = sweeps[w].op == OP_SEND_RECV;
    for (int i = -1; !st && i < reps; i++) {
        float mine = 0, slowest = 0;
        /* a layer's compute first: x = x + x over its bytes (FP32), for half a layer's forward where a run's
         * collective follows that much (cal_coll_gapped; once where gap_s is 0), the payload's own buffer last */
        if (!p2p) st = compute_for(bk, evict, evict_bytes, gap_s, e);
        if (!st && w == EMB_SWEEP && !(comm->rank & 1)) /* the first stage's last backward, the last stage waiting */
            st = compute_for(bk, evict, evict_bytes, gap[1], e);
        if (!st && !p2p) st = bk->add(bk, buf, buf, buf, DT_FP32, S / sizeof(float), e);
        if (!st && (w == GRAD_SWEEP || w == EMB_SWEEP)) { /* a gradient: written, then out of the caches with the
                                                            * receive buffer */
            cache_flush(buf, S);
            if (comm->flush) comm->flush(comm, S);
        }
        if (!st) st = comm_settle(comm, e);
        double t0 = comm->stats[id].seconds;
        if (!st && p2p) st = p2p_call(bk, comm, id, sweeps[w].dt, buf, out, S, evict, evict_bytes, gap, e);
        if (!st && !p2p) st = one_call(bk, comm, w, buf, out, counts, S, e);
        if (!st) st = comm_settle(comm, e);
        mine = (float)(comm->stats[id].seconds - t0);
        /* and a layer's kernel after it, as in a run: a rank whose call ends first computes on the cores while
         * its peers' calls end (their fold, their copies), not waits in the next call's barrier (a send/recv's
         * compute is around its send, p2p_call) */
        if (!st && !p2p) st = bk->add(bk, evict, evict, evict, DT_FP32, evict_bytes / sizeof(float), e);
        if (!st) st = slowest_rank(bk, comm, sync, mine, &slowest, e);
        if (i >= 0) t[i] = slowest;
    }
    if (st) return st;
    CalStat q;
    cal_stats(t, reps, &q);
    c->payload = S, c->seconds = q.median, c->spread = q.spread, c->iqr = q.iqr;
    c->busbw = c->seconds > 0 ? (double)S * comm_bus_factor(sweeps[w].op, (uint64_t)comm->size) / c->seconds : 0;
    return ST_OK;
}

/* ---- the all-to-all per message (calibrate_messages) ----
 * Open MPI carries an MPI_Alltoallv on one node as one message per peer over its shared-memory transport
 * (btl vader on this project's host: ompi_info's btl_vader_eager_limit 4,096 B with its headers,
 * btl_vader_single_copy_mechanism cma), the rank's one thread copying them in turn, and each message's own
 * size decides how: up to the eager limit the sender copies it into shared-memory fragments and the
 * receiver out of them; past it the receiver copies it straight from the sender's memory once the two have
 * met (rendezvous). So the sweep times calls whose every message has one size b, at sizes straddling the
 * limit (cal_msg_sizes), and the plan sums a call's messages (planner plan_a2a_call).
 * A run's all-to-all follows the layer's permute and expert kernels, spread over the cores the ranks share:
 * its send rows were just written, the rest of what the call touches is out of the core's own caches. On
 * this project's 2-core host (2 MiB L2 a core) a call of 8 KiB (4 KiB a peer) took 2.1-2.8 us back to back
 * and 5.5-7 us in a run (load 1-4), and 6-11 us after an 8 MiB pass; so each call here follows a pass over
 * twice the core's L2 and then the send buffer's own pass (its rows just written). */
static uint64_t msg_evict_bytes(void)
{
    long l2 = -1;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    uint64_t b = l2 > 0 ? 2 * (uint64_t)l2 : (uint64_t)4 << 20; /* unknown: 2 x 2 MiB */
    return b < CAL_LINK_EVICT ? b : CAL_LINK_EVICT;
}

static Status msg_call(Backend *bk, Comm *comm, void *buf, void *dst, float *sync, uint64_t *counts, void *evict,
                       uint64_t evict_bytes, uint64_t b, int reps, CalColl *c, Err *e)
{
    double t[64];
    Status st = ST_OK;
    const uint64_t n = (uint64_t)comm->size;
    for (int j = 0; j < comm->size; j++) counts[j] = counts[comm->size + j] = b; /* E4M3: one byte an element */
    for (int i = -1; !st && i < reps; i++) {
        float slowest = 0;
        st = bk->add(bk, evict, evict, evict, DT_FP32, evict_bytes / sizeof(float), e);
        if (!st) st = bk->add(bk, buf, buf, buf, DT_FP32, n * b / sizeof(float), e);
        if (!st) st = comm_settle(comm, e);
        double t0 = comm->stats[CO_EP_DISPATCH_FWD].seconds;
        if (!st)
            st = comm_all_to_all_v(comm, CO_EP_DISPATCH_FWD, bk, buf, counts, dst, counts + comm->size, DT_E4M3, e);
        if (!st) st = comm_settle(comm, e);
        if (!st) st = slowest_rank(bk, comm, sync, (float)(comm->stats[CO_EP_DISPATCH_FWD].seconds - t0), &slowest, e);
        if (i >= 0) t[i] = slowest;
    }
    if (st) return st;
    CalStat q;
    cal_stats(t, reps, &q);
    c->payload = b, c->seconds = q.median, c->spread = q.spread, c->iqr = q.iqr;
    c->busbw = c->seconds > 0 ? (double)b * (double)(n - 1) / c->seconds : 0;
    return ST_OK;
}

Status calibrate_msg_sweep(Backend *bk, Comm *comm, const uint64_t *sizes, int ns, int reps, CalSweep *s, Err *e)
{
    const uint64_t n = (uint64_t)comm->size, evict_bytes = msg_evict_bytes();
    if (ns < 1 || ns > CAL_MAX_SIZES || reps < 1 || reps > CAL_LINK_REPS_MAX)
        return err_set(e, ST_SOFTWARE, "calibrate: %d message sizes at %d calls each", ns, reps);
    const uint64_t big = n * sizes[ns - 1] + 64;
    void *buf = NULL, *dst = NULL, *evict = NULL;
    float *sync = NULL;
    uint64_t *counts = calloc(2 * n, sizeof *counts);
    Status st = counts ? ST_OK : err_set(e, ST_NOMEM, "calibrate: out of memory");
    if (!st) st = bk->alloc(bk, big, &buf, e);
    if (!st) st = bk->alloc(bk, big, &dst, e);
    if (!st) st = bk->alloc(bk, evict_bytes, &evict, e);
    if (!st) st = bk->alloc(bk, 2 * sizeof(float), (void **)&sync, e);
    if (!st) st = bk->memset0(bk, buf, big, e);
    if (!st) st = bk->memset0(bk, dst, big, e);
    if (!st) st = bk->memset0(bk, evict, evict_bytes, e);
    memset(s, 0, sizeof *s);
    s->op = OP_ALL_TO_ALL, s->dtype = DT_E4M3, s->per_msg = 1, s->n = 0;
    for (int k = 0; !st && k < ns; k++)
        if (!(st = msg_call(bk, comm, buf, dst, sync, counts, evict, evict_bytes, sizes[k], reps, &s->pt[s->n], e)))
            s->n++;
    void *mine[4] = {sync, evict, dst, buf};
    for (int i = 0; i < 4; i++)
        if (mine[i]) bk->free(bk, mine[i]);
    free(counts);
    return st;
}

/* The limit, the sweep, its two fits (out->eager_limit, a per-message CalSweep, two CalRange) and its two judged
 * figures (a2a_bw, a2a_iqr); nothing added when MPI sends no byte eagerly or every probed size (up to 1 MiB) so. */
enum { EAGER_PROBE_MAX = 1 << 20 }; /* the largest message the eager limit is looked for up to */

static Status calibrate_messages(Backend *bk, Comm *comm, const uint64_t *a2a, int na2a, int reps, Calibration *out,
                                 Err *e)
{
    const uint64_t probe_max = EAGER_PROBE_MAX, L = out->eager_limit; /* probed by calibrate_links */
    uint64_t sizes[CAL_MAX_SIZES], run[4];
    Status st = ST_OK;
    if (!comm->eager_limit) return ST_OK; /* a library whose protocols are not modelled */
    if (!L || L >= probe_max || out->nsweep >= CAL_MAX_SWEEPS || out->nrange + 2 > CAL_MAX_FITS) return st;
    const uint64_t n = (uint64_t)comm->size;
    int na = 0;
    for (int i = 0; i < na2a && i < 4; i++) run[na++] = a2a[i] / n;
    const int ns = cal_msg_sizes(L, run, na, probe_max, sizes);
    const int per_size = 4 * reps < CAL_LINK_REPS_MAX ? 4 * reps : CAL_LINK_REPS_MAX;
    out->msg_evict = msg_evict_bytes();
    CalSweep *s = &out->sweep[out->nsweep];
    if ((st = calibrate_msg_sweep(bk, comm, sizes, ns, per_size, s, e))) return st;
    out->nsweep++;
    if (cal_fit_messages(s->pt, s->n, L, comm->size, &out->range[out->nrange]) != 2)
        return err_set(e, ST_SOFTWARE, "calibrate: the all-to-all's per-message sweep over %d ranks gives no fit",
                       comm->size);
    out->nrange += 2;
    out->a2a_reps = per_size;
    out->a2a_judged = !cal_msg_figures(s->pt, s->n, L, comm->size, out->a2a_bw, out->a2a_iqr);
    return ST_OK;
}

Status calibrate_links(Backend *bk, Comm *comm, uint64_t top, uint64_t layer_bytes, const uint64_t *a2a, int na2a,
                       const uint64_t *run, int nrun, int reps, Calibration *out, Err *e)
{
    const uint64_t evict_bytes = layer_bytes < CAL_LINK_EVICT ? layer_bytes / 4 * 4 : CAL_LINK_EVICT;
    /* every size is fitted (not only the smallest and the two largest): 4 x reps each, at most 64 (at 7, the
     * plan's TP all-gather from 3 profiles measured minutes apart at a quiet moment varied 2x) */
    const int per_size = 4 * reps < CAL_LINK_REPS_MAX ? 4 * reps : CAL_LINK_REPS_MAX;
    uint64_t sizes[CAL_MAX_SIZES];
    const int n = cal_link_sizes(top, sizes);
    /* room for a size rounded up to whole shares (the all-to-all's: size^2 BF16 elements) */
    const uint64_t big = sizes[n - 1] + 64 * (uint64_t)comm->size * (uint64_t)comm->size;
    void *buf = NULL, *dst = NULL, *evict = NULL;
    float *sync = NULL;
    uint64_t *counts = calloc(2 * (size_t)comm->size, sizeof *counts);
    Status st = counts ? ST_OK : err_set(e, ST_NOMEM, "calibrate: out of memory");
    if (!st) st = bk->alloc(bk, big, &buf, e);
    if (!st) st = bk->alloc(bk, big, &dst, e);
    if (!st) st = bk->alloc(bk, evict_bytes + 4, &evict, e);
    if (!st) st = bk->alloc(bk, 2 * sizeof(float), (void **)&sync, e);
    if (!st) st = bk->memset0(bk, buf, big, e);
    if (!st) st = bk->memset0(bk, dst, big, e);
    if (!st) st = bk->memset0(bk, evict, evict_bytes + 4, e);
    out->nsweep = out->nrange = 0;
    out->link_reps = per_size;
    /* MPI's eager limit first: send/recv's fits break there (below) as the all-to-all's per-message ones do */
    out->eager_limit = 0;
    if (!st && comm->eager_limit) st = comm->eager_limit(comm, EAGER_PROBE_MAX, &out->eager_limit, e);
    out->coll_gap_s = cal_coll_gap(out->p2p_fwd_s);
    const double gap[3] = {out->p2p_fwd_s, out->p2p_bwd_s, out->coll_gap_s};
    for (int w = 0; !st && w < CAL_MAX_SWEEPS - 1; w++) {
        /* the gradient sweep flushes host memory from the CPU's caches: the CPU backend's buffers only (a GPU's
         * gradients are in device memory, which NCCL reads where they are) */
        if ((w == GRAD_SWEEP || w == EMB_SWEEP) && (!bk->name || strcmp(bk->name, "cpu"))) continue;
        CalSweep *s = &out->sweep[out->nsweep];
        memset(s, 0, sizeof *s);
        s->op = sweeps[w].op, s->dtype = sweeps[w].dt, s->grad = w == EMB_SWEEP ? 2 : w == GRAD_SWEEP;
        /* the sweep's sizes and the run's own payloads, which fall between them (4x apart): the all-to-all's
         * from its smallest call up (expert parallelism's count exchange is a few int32 a peer, E x 4 B a rank:
         * 32 B for 8 experts, below the sweep's 64 B) and at its dispatch; every other op at tensor
         * parallelism's calls (cal_tp_sizes), so the fit of the range holding a run's call passes through a
         * measurement of that call, not between two sizes 4x apart */
        uint64_t own[CAL_MAX_SIZES];
        const int a2a_op = s->op == OP_ALL_TO_ALL;
        const int na =
            cal_sweep_sizes(sizes, n, a2a_op ? a2a : run, a2a_op ? na2a : nrun, unit_of(w, comm->size), a2a_op, own);
        for (int k = 0; !st && k < na; k++) {
            uint64_t S = own[k];
            if (!(st = sweep_size(bk, comm, w, buf, dst, sync, counts, evict, evict_bytes, gap, S, per_size,
                                  &s->pt[s->n], e)))
                s->n++;
        }
        if (st) break;
        out->nsweep++;
        /* send/recv: a message up to MPI's eager limit L is copied through shared memory at once, one past it waits
         * for its receiver (rendezvous): two lines, cut at L + 1 (on this project's host the send/recv pair's
         * time steps from 5 to 27 us between 1 and 4 KiB in three profiles of four at a load of 6-11) */
        const uint64_t cut =
            s->op == OP_SEND_RECV && out->eager_limit && out->eager_limit < EAGER_PROBE_MAX ? out->eager_limit + 1 : 0;
        int got = cal_fit_ranges(s->pt, s->n, s->op, s->dtype, comm->size, cut, &out->range[out->nrange]);
        for (int k = 0; k < got; k++) out->range[out->nrange + k].fit.path = (uint8_t)cal_sweep_path(s);
        if (!got)
            st = err_set(e, ST_SOFTWARE, "calibrate: the %s sweep (%s) over %d ranks gives no fit", comm_op_name(s->op),
                         dtype_name(s->dtype), comm->size);
        out->nrange += got;
    }
    void *mine[4] = {sync, evict, dst, buf};
    for (int i = 0; i < 4; i++)
        if (mine[i]) bk->free(bk, mine[i]);
    free(counts);
    if (!st) st = calibrate_messages(bk, comm, a2a, na2a, reps, out, e);
    return st;
}
