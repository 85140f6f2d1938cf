/* exec/measure/calibrate_link.c — the communicator's all-reduce swept over
 * sizes (see calibrate.h): per size the median over reps of the slowest rank's
 * transfer time as the communicator counts it for a run (from the moment every
 * rank has arrived: exec/comm; NCCL's from its start and end events), its bus bandwidth, and the latency + bandwidth
 * line fitted to the sweep. Every rank calls it and gets the same figures. */
#include <string.h>

#include "exec/measure/calibrate.h"

enum { SIZE_LO = 64, SIZE_FACTOR = 4, SIZES = 10 }; /* 64 B .. 16 MiB */

Status calibrate_link(Backend *bk, Comm *comm, int reps, Calibration *out, Err *e)
{
    uint64_t top = (uint64_t)SIZE_LO;
    for (int i = 1; i < SIZES; i++) top *= SIZE_FACTOR;
    void *buf;
    float *sync;
    Status st = bk->alloc(bk, top, &buf, e);
    if (st) return st;
    if ((st = bk->alloc(bk, 2 * sizeof(float), (void **)&sync, e))) {
        bk->free(bk, buf);
        return st;
    }
    st = bk->memset0(bk, buf, top, e);
    out->ranks = comm->size;
    out->ncoll = 0;
    uint64_t S = SIZE_LO;
    for (int s = 0; !st && s < SIZES; s++, S *= SIZE_FACTOR) {
        double t[64];
        for (int i = -1; !st && i < reps; i++) { /* one warm-up call per size */
            float mine = 0, slowest = 0;
            st = comm_settle(comm, e); /* the previous calls' times are in total before t0 */
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
        if (st) break;
        CalColl *c = &out->coll[out->ncoll++];
        c->payload = S;
        cal_median(t, reps, &c->seconds, &c->spread);
        c->busbw = cal_allreduce_busbw(S, comm->size, c->seconds);
    }
    bk->free(bk, sync);
    bk->free(bk, buf);
    if (st) return st;
    if (cal_fit_link(out->coll, out->ncoll, comm->size, &out->link_lat, &out->link_bw))
        return err_set(e, ST_SOFTWARE, "calibrate: the all-reduce sweep over %d ranks gives no positive bandwidth",
                       comm->size);
    return ST_OK;
}
