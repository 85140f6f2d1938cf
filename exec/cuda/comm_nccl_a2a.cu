/* exec/cuda/comm_nccl_a2a.cu — expert parallelism's uneven all-to-all over NCCL (comm.h all_to_all_v),
 * and the staging of host buffers the model hands a collective.
 *
 * NCCL has no all-to-all-v, so one is made of point-to-point calls, as Megatron-Core's and DeepSpeed's
 * NCCL paths do: ncclSend / ncclRecv to and from every other peer inside one ncclGroupStart/End (so no
 * rank waits on a peer waiting on it), this rank's own segment a device copy. Data moves as bytes
 * (ncclUint8): nothing is reduced, so FP8 codes and their FP32 scales travel as the bits they are,
 * whatever NCCL the process loaded.
 *
 * Before any payload, as over MPI (exec/comm/comm_mpi.c):
 *   1. counts  every rank sends each peer the element count it will send it (one uint64 each, NCCL on
 *              its stream, read back to the host: a synchronisation, as MPI's all-to-all of the counts is), counted
 *              COMM_UNPLANNED as size·8 bytes at (size − 1)/size (comm_a2a_counts_*);
 *   2. agree   each rank compares what its peers announce with the rcounts it was given; the lowest
 *              rank that disagrees is agreed by a MIN all-reduce (not counted, as MPI's is not), and
 *              every rank fails with ST_DATA naming it before any payload moves — never a hang on a
 *              transfer that will not come;
 *   3. payload counted as MPI's: S = the bytes this rank sends, its own segment included, bus factor
 *              comm_a2a_factor (what leaves the rank), its device time from the call's events.
 * The model keeps the layer's counts in host memory (exec/model/model_moe_ep.c): such a buffer is
 * copied into a device buffer of the communicator's first and the result copied back, the compute
 * stream waited for (nccl_host_side). */
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_nccl_rules.h"
#include "exec/cuda/comm_nccl_impl.h"

int nccl_host_side(const void *p)
{
    cudaPointerAttributes a;
    if (!p) return 0;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* an unknown pointer: host memory the runtime never saw */
        return 1;
    }
    return a.type == cudaMemoryTypeUnregistered || a.type == cudaMemoryTypeHost;
}

Status nccl_dev_buf(NcclImpl *ni, size_t bytes, void **out, Err *e)
{
    Status st = ST_OK;
    *out = NULL;
    if (bytes > ni->dev_bytes) {
        if (ni->dev) CU_TRY(cudaFree(ni->dev), e); /* cudaFree waits for the device */
        ni->dev = NULL, ni->dev_bytes = 0;
        CU_TRY(cudaMalloc(&ni->dev, bytes), e);
        ni->dev_bytes = bytes;
    }
    *out = ni->dev;
done:
    return st;
}

static size_t align256(size_t b) { return (b + 255u) & ~(size_t)255u; }

/* 1. peer[j] = the elements rank j will send this rank (scounts exchanged over NCCL's stream). */
static Status exchange_counts(Comm *c, NcclImpl *ni, const uint64_t *scounts, uint64_t *peer, Err *e)
{
    Status st = ST_OK;
    const int n = c->size, r = c->rank;
    uint64_t *d = NULL;
    if (!ni->comm) { /* one rank */
        memcpy(peer, scounts, (size_t)n * sizeof *peer);
        return ST_OK;
    }
    ST_TRY(nccl_dev_buf(ni, 2 * (size_t)n * sizeof *d + 16, (void **)&d, e));
    CU_TRY(cudaMemcpyAsync(d, scounts, (size_t)n * sizeof *d, cudaMemcpyHostToDevice, ni->ns->stream), e);
    CU_TRY(cudaMemcpyAsync(d + n + r, d + r, sizeof *d, cudaMemcpyDeviceToDevice, ni->ns->stream), e);
    NCCL_TRY(ni->comm, ncclGroupStart(), e);
    for (int j = 0; j < n; j++) {
        if (j == r) continue;
        NCCL_TRY(ni->comm, ncclSend(d + j, 1, ncclUint64, j, ni->comm, ni->ns->stream), e);
        NCCL_TRY(ni->comm, ncclRecv(d + n + j, 1, ncclUint64, j, ni->comm, ni->ns->stream), e);
    }
    NCCL_TRY(ni->comm, ncclGroupEnd(), e);
    CU_TRY(cudaMemcpyAsync(peer, d + n, (size_t)n * sizeof *d, cudaMemcpyDeviceToHost, ni->ns->stream), e);
    CU_TRY(cudaStreamSynchronize(ni->ns->stream), e);
done:
    return st;
}

/* 2. *worst = the MIN of every rank's `mine` over the group. */
static Status agree_min(Comm *c, NcclImpl *ni, int mine, int *worst, Err *e)
{
    Status st = ST_OK;
    int *d = NULL;
    *worst = mine;
    if (!ni->comm || c->size == 1) return ST_OK;
    ST_TRY(nccl_dev_buf(ni, 16, (void **)&d, e));
    CU_TRY(cudaMemcpyAsync(d, &mine, sizeof mine, cudaMemcpyHostToDevice, ni->ns->stream), e);
    NCCL_TRY(ni->comm, ncclAllReduce(d, d, 1, ncclInt32, ncclMin, ni->comm, ni->ns->stream), e);
    CU_TRY(cudaMemcpyAsync(worst, d, sizeof *worst, cudaMemcpyDeviceToHost, ni->ns->stream), e);
    CU_TRY(cudaStreamSynchronize(ni->ns->stream), e);
done:
    return st;
}

Status nccl_all_to_all_v(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts, void *recv,
                         const uint64_t *rcounts, Dtype dt, Err *e)
{
    Status st = ST_OK;
    const int n = c->size, r = c->rank;
    NcclImpl *ni = nccl_impl(c);
    CudaImpl *im = NULL;
    uint64_t *h = NULL, sbt = 0, rbt = 0;
    int worst = n, from = -1, hs = 0, hr = 0;
    void *dst = recv;
    if (!bk || !bk->name || strcmp(bk->name, "cuda") != 0)
        return err_set(e, ST_USAGE, "nccl: collectives need the cuda backend's memory and stream");
    if (!dtype_bytes(dt)) return err_set(e, ST_USAGE, "nccl all_to_all_v: dtype %s has no size", dtype_name(dt));
    if (!scounts || !rcounts) return err_set(e, ST_USAGE, "nccl all_to_all_v: no counts");
    im = cuda_impl(bk);
    h = (uint64_t *)calloc((size_t)n * 5, sizeof *h);
    if (!h) return err_set(e, ST_NOMEM, "nccl all_to_all_v: out of host memory");
    {
        uint64_t *peer = h, *seg = h + n; /* seg: sbytes, sdsp, rbytes, rdsp */
        st = exchange_counts(c, ni, scounts, peer, e);
        comm_count(c, COMM_UNPLANNED, comm_a2a_counts_payload(n), comm_a2a_counts_factor(n));
        if (!st) from = comm_a2a_disagree(rcounts, peer, n);
        if (!st) st = agree_min(c, ni, from >= 0 ? r : n, &worst, e);
        if (!st && worst < n && from >= 0)
            st = err_set(e, ST_DATA, "nccl all_to_all_v: rank %d expects %llu elements from rank %d, which sends %llu",
                         r, (unsigned long long)rcounts[from], from, (unsigned long long)peer[from]);
        else if (!st && worst < n)
            st = err_set(e, ST_DATA, "nccl all_to_all_v: rank %d's receive counts disagree with what its peers send",
                         worst);
        const uint64_t eb = dtype_bytes(dt);
        if (!st) st = comm_a2a_layout(scounts, n, eb, seg, seg + n, &sbt, e);
        if (!st) st = comm_a2a_layout(rcounts, n, eb, seg + 2 * n, seg + 3 * n, &rbt, e);
        if (!st && ((sbt && !send) || (rbt && !recv))) st = err_set(e, ST_USAGE, "nccl all_to_all_v: no buffer");
        if (st) goto done;
        hs = sbt && nccl_host_side(send), hr = rbt && nccl_host_side(recv);
        if (hs || hr) { /* host buffers through the communicator's device buffer, on the compute stream */
            void *buf = NULL;
            ST_TRY(nccl_dev_buf(ni, align256((size_t)sbt) + (size_t)rbt + 1, &buf, e));
            if (hs) {
                CU_TRY(cudaMemcpyAsync(buf, send, (size_t)sbt, cudaMemcpyHostToDevice, im->stream), e);
                send = buf;
            }
            if (hr) dst = (char *)buf + align256((size_t)sbt);
        }
        NcCall call = {NC_A2A, send, dst, 0, 0, DT_NONE, COMM_SUM, 0, 0, seg, r, n};
        ST_TRY(nccl_run(c, bk, id, &call, NULL, 0, NULL, 0, sbt, comm_a2a_factor(sbt, seg[r]), e));
        if (hr) {
            CU_TRY(cudaMemcpyAsync(recv, dst, (size_t)rbt, cudaMemcpyDeviceToHost, im->stream), e);
            CU_TRY(cudaStreamSynchronize(im->stream), e);
        }
    }
done:
    free(h);
    return st;
}
