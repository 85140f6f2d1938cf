/* exec/measure/calibrate_link.c — the communicator's all-reduce swept over
 * sizes, 64 B up to the largest collective a run makes (cal_link_sizes; see
 * calibrate.h): per size the median over reps of the slowest rank's transfer
 * time as the communicator counts it for a run (from the moment every rank
 * has arrived: exec/comm; NCCL's from its start and end events), each call
 * preceded by what precedes a run's (caches evicted, one rank late:
 * arrive_as_in_a_run), its bus bandwidth, and the latency + bandwidth line
 * fitted to the sweep. Every rank calls it and gets the same figures. */
#include <string.h>

#include "exec/measure/calibrate.h"

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
        /* the slowest rank's time, through backend memory (a GPU's for NCCL) */
        if (!st) st = bk->copy_to_device(bk, sync, &mine, sizeof mine, e);
        if (!st) st = comm->all_reduce(comm, COMM_UNPLANNED, bk, sync, 1, DT_FP32, COMM_MAX, e);
        if (!st) st = bk->copy_to_host(bk, &slowest, sync, sizeof slowest, e);
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
