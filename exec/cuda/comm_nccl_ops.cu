/* exec/cuda/comm_nccl_ops.cu — the Comm operations over NCCL (comm.h): the
 * checks, the wire dtype (exec/comm/comm_wire.h), the staging a call needs and
 * what it counts; every call runs through nccl_run (comm_nccl_impl.h).
 *
 * Counting (comm.h, nccl-tests): payload S = the array's bytes in the dtype
 * that travels (BF16 where FP8 cannot travel as itself); bus bytes S·2(n−1)/n
 * (all-reduce), S·(n−1)/n (all-gather, reduce-scatter), S (broadcast over
 * two or more ranks, send; a recv counts nothing). Seconds: each call's device
 * time between its start and end events on the NCCL stream, added at settle;
 * it includes any wait for the other ranks inside NCCL (wait_s stays 0: a
 * barrier before each call, as the MPI communicator has, would be a host
 * synchronisation).
 *
 * Uneven collectives (reduce_scatter_v, all_gather_v): NCCL has none, so the
 * segments are padded to the largest, L (comm_pad): each rank's segment is
 * copied into slot r of a size·L staging buffer, ncclReduceScatter /
 * ncclAllGather of L per rank run in place on it, and the result is copied
 * back into the segments. NCCL moves size·L elements; the stats count the
 * plan's convention, S = the segments' sum (comm.h), so bytes compare with
 * the plan byte for byte as the MPI communicator's do. */
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_wire.h"
#include "exec/cuda/comm_nccl_impl.h"

static Status check(Comm *c, Backend *bk, Dtype dt, Err *e)
{
    if (!bk || !bk->name || strcmp(bk->name, "cuda") != 0)
        return err_set(e, ST_USAGE, "nccl: collectives need the cuda backend's memory and stream");
    if (!dtype_bytes(dt)) return err_set(e, ST_USAGE, "nccl: dtype %s has no size", dtype_name(dt));
    (void)c;
    return ST_OK;
}

static Status check_peer(const Comm *c, const char *what, int peer, Err *e)
{
    if (peer < 0 || peer >= c->size || peer == c->rank)
        return err_set(e, ST_USAGE, "nccl %s: peer %d is not another rank (rank %d of %d)", what, peer, c->rank,
                       c->size);
    return ST_OK;
}

/* The dtype this call's data travels in. */
static Dtype wire_of(Comm *c, Backend *bk, Dtype dt, int reduces)
{
    NcclImpl *ni = nccl_impl(c);
    if (!ni->comm) return dt; /* one rank, no NCCL: nothing travels */
    return comm_wire_dtype(dt, reduces, ni->loaded, NCCL_VERSION_CODE, cuda_impl(bk)->info.cc_major);
}

static uint64_t align256(uint64_t b) { return (b + 255u) & ~(uint64_t)255u; }

/* Two staging buffers of na and nb elements of dt in the backend's scratch. */
static Status stage(Backend *bk, Dtype dt, uint64_t na, uint64_t nb, void **a, void **b, Err *e)
{
    void *p = NULL;
    const uint64_t sz = dtype_bytes(dt);
    Status st = cuda_scratch(cuda_impl(bk), (size_t)(align256(sz * na) + sz * nb), &p, e);
    if (st) return st;
    *a = p;
    *b = (char *)p + align256(sz * na);
    return ST_OK;
}

/* nccl-tests' bus factor of a collective over the communicator (planner/plan.h comm_bus_factor) */
static double ring(const Comm *c, CommOp op) { return comm_bus_factor(op, (uint64_t)c->size); }

static Status even(Comm *c, CollectiveId id, Backend *bk, NcKind k, const void *send, void *recv, uint64_t n,
                   uint64_t nsend, uint64_t nrecv, Dtype dt, CommReduce op, int root, double factor, Err *e);

/* An even collective whose buffer is host memory (the model's agreement on a failed rank: one float): the
 * values copied into the communicator's device buffer on the compute stream, the collective run there,
 * the result copied back and the compute stream waited for. */
static Status even_host(Comm *c, CollectiveId id, Backend *bk, NcKind k, const void *send, void *recv, uint64_t n,
                        uint64_t nsend, uint64_t nrecv, Dtype dt, CommReduce op, int root, double factor, Err *e)
{
    Status st = ST_OK;
    CudaImpl *im = cuda_impl(bk);
    const size_t bs = (size_t)(nsend * dtype_bytes(dt)), br = (size_t)(nrecv * dtype_bytes(dt));
    const int in_place = send == recv;
    void *buf = NULL;
    ST_TRY(nccl_dev_buf(nccl_impl(c), (size_t)align256(bs) + (in_place ? 0 : br) + 1, &buf, e));
    {
        void *ds = buf, *dr = in_place ? buf : (char *)buf + align256(bs);
        if (bs) CU_TRY(cudaMemcpyAsync(ds, send, bs, cudaMemcpyDefault, im->stream), e);
        ST_TRY(even(c, id, bk, k, ds, dr, n, nsend, nrecv, dt, op, root, factor, e));
        if (br) CU_TRY(cudaMemcpyAsync(recv, dr, br, cudaMemcpyDefault, im->stream), e);
        CU_TRY(cudaStreamSynchronize(im->stream), e);
    }
done:
    return st;
}

/* An even collective on dt: straight, or through staging in the wire dtype. nsend / nrecv: elements of the
 * send and receive buffers; n: NCCL's count. */
static Status even(Comm *c, CollectiveId id, Backend *bk, NcKind k, const void *send, void *recv, uint64_t n,
                   uint64_t nsend, uint64_t nrecv, Dtype dt, CommReduce op, int root, double factor, Err *e)
{
    Status st = check(c, bk, dt, e);
    if (st) return st;
    if ((nsend && !send) || (nrecv && !recv)) return err_set(e, ST_USAGE, "nccl: missing buffer");
    if ((nsend && nccl_host_side(send)) || (nrecv && nccl_host_side(recv)))
        return even_host(c, id, bk, k, send, recv, n, nsend, nrecv, dt, op, root, factor, e);
    Dtype wire = wire_of(c, bk, dt, k == NC_AR || k == NC_RS);
    NcCall call = {k, send, recv, n, 0, wire, op, root, 0, NULL, 0, 0};
    uint64_t payload = (k == NC_AR || k == NC_BC ? n : nrecv > nsend ? nrecv : nsend) * dtype_bytes(wire);
    if (wire == dt) return nccl_run(c, bk, id, &call, NULL, 0, NULL, 0, payload, factor, e);
    void *ws = NULL, *wr = NULL;
    const int in_place = k == NC_AR || k == NC_BC;
    if ((st = stage(bk, wire, nsend, in_place ? 0 : nrecv, &ws, &wr, e))) return st;
    if (in_place) wr = ws;
    call.send = ws, call.recv = wr;
    NcMove in = {send, dt, ws, wire, nsend}, out = {wr, wire, recv, dt, nrecv};
    return nccl_run(c, bk, id, &call, &in, 1, &out, 1, payload, factor, e);
}

static Status nccl_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, CommReduce op,
                              Err *e)
{
    return even(c, id, bk, NC_AR, buf, buf, n, n, n, dt, op, 0, ring(c, OP_ALL_REDUCE), e);
}

static Status nccl_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dt,
                              Err *e)
{
    return even(c, id, bk, NC_AG, send, recv, n, n, n * (uint64_t)c->size, dt, COMM_SUM, 0, ring(c, OP_ALL_GATHER), e);
}

static Status nccl_reduce_scatter(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                                  Dtype dt, CommReduce op, Err *e)
{
    return even(c, id, bk, NC_RS, send, recv, n, n * (uint64_t)c->size, n, dt, op, 0, ring(c, OP_REDUCE_SCATTER), e);
}

static Status nccl_broadcast(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int root, Err *e)
{
    if (root < 0 || root >= c->size)
        return err_set(e, ST_USAGE, "nccl broadcast: root %d is not a rank of %d", root, c->size);
    return even(c, id, bk, NC_BC, buf, buf, n, n, n, dt, COMM_SUM, root, c->size > 1 ? 1.0 : 0.0, e);
}

/* Point to point: send (scount to `to`), recv (rcount from `from`) or both in one group. */
static Status p2p(Comm *c, CollectiveId id, Backend *bk, const void *sbuf, uint64_t scount, int to, void *rbuf,
                  uint64_t rcount, int from, Dtype dt, Err *e)
{
    Status st = check(c, bk, dt, e);
    if (!st && sbuf) st = check_peer(c, "send", to, e);
    if (!st && rbuf) st = check_peer(c, "recv", from, e);
    if (st) return st;
    const NcKind k = sbuf && rbuf ? NC_SENDRECV : sbuf ? NC_SEND : NC_RECV;
    Dtype wire = wire_of(c, bk, dt, 0);
    NcCall call = {k, sbuf, rbuf, sbuf ? scount : rcount, rcount, wire, COMM_SUM, sbuf ? to : from, from, NULL, 0, 0};
    const uint64_t payload = sbuf ? scount * dtype_bytes(wire) : 0;
    const double factor = sbuf ? 1.0 : 0.0;
    if (wire == dt) return nccl_run(c, bk, id, &call, NULL, 0, NULL, 0, payload, factor, e);
    void *ws = NULL, *wr = NULL;
    if ((st = stage(bk, wire, sbuf ? scount : 0, rbuf ? rcount : 0, &ws, &wr, e))) return st;
    call.send = sbuf ? ws : NULL, call.recv = rbuf ? wr : NULL;
    NcMove in = {sbuf, dt, ws, wire, sbuf ? scount : 0}, out = {wr, wire, rbuf, dt, rbuf ? rcount : 0};
    return nccl_run(c, bk, id, &call, &in, sbuf ? 1 : 0, &out, rbuf ? 1 : 0, payload, factor, e);
}

static Status nccl_send(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    if (!buf && n) return err_set(e, ST_USAGE, "nccl send: no buffer");
    static const char none = 0;
    return p2p(c, id, bk, buf ? buf : &none, n, peer, NULL, 0, -1, dt, e);
}

static Status nccl_recv(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    if (!buf && n) return err_set(e, ST_USAGE, "nccl recv: no buffer");
    static char none;
    return p2p(c, id, bk, NULL, 0, -1, buf ? buf : &none, n, peer, dt, e);
}

static Status nccl_sendrecv(Comm *c, CollectiveId id, Backend *bk, const void *sbuf, uint64_t scount, int to,
                            void *rbuf, uint64_t rcount, int from, Dtype dt, Err *e)
{
    if ((!sbuf && scount) || (!rbuf && rcount)) return err_set(e, ST_USAGE, "nccl sendrecv: missing buffer");
    static char none[2];
    return p2p(c, id, bk, sbuf ? sbuf : &none[0], scount, to, rbuf ? rbuf : &none[1], rcount, from, dt, e);
}

/* Uneven, in place on buf, through a padded staging buffer (see the top of this file). rs: reduce-scatter
 * (every segment in, this rank's out) or all-gather (this rank's in, every segment out). */
static Status uneven(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt, CommReduce op,
                     int rs, Err *e)
{
    Status st = check(c, bk, dt, e);
    if (st) return st;
    const int n = c->size, r = c->rank;
    uint64_t *off = (uint64_t *)calloc((size_t)n, sizeof *off);
    NcMove *mv = (NcMove *)calloc((size_t)n, sizeof *mv);
    CommPad pad;
    Dtype wire = wire_of(c, bk, dt, rs);
    const uint64_t b = dtype_bytes(dt), w = dtype_bytes(wire);
    void *stg = NULL, *unused = NULL;
    if (!off || !mv) {
        st = err_set(e, ST_NOMEM, "nccl: out of host memory");
        goto done;
    }
    if ((st = comm_pad(counts, n, off, &pad, e))) goto done;
    if (pad.total && !buf) {
        st = err_set(e, ST_USAGE, "nccl: uneven collective without a buffer");
        goto done;
    }
    if (!nccl_impl(c)->comm) { /* one rank: the whole buffer is its segment, nothing moves */
        comm_count(c, id, pad.total * w, 0.0);
        goto done;
    }
    if ((st = stage(bk, wire, pad.padded, 0, &stg, &unused, e))) goto done;
    for (int j = 0; j < n; j++) /* segment j <-> slot j */
        mv[j] = (NcMove){(char *)buf + off[j] * b, dt, (char *)stg + (uint64_t)j * pad.largest * w, wire, counts[j]};
    {
        NcMove mine = mv[r], back = {mine.dst, wire, (void *)mine.src, dt, mine.n};
        char *slot = (char *)stg + (uint64_t)r * pad.largest * w;
        NcCall call = {
            rs ? NC_RS : NC_AG, rs ? stg : slot, rs ? slot : stg, pad.largest, 0, wire, op, 0, 0, NULL, 0, 0};
        if (rs) {
            st = nccl_run(c, bk, id, &call, mv, n, &back, 1, pad.total * w, ring(c, OP_REDUCE_SCATTER), e);
        } else {
            for (int j = 0; j < n; j++) /* out: slot j -> segment j */
                mv[j] = (NcMove){mv[j].dst, wire, (void *)mv[j].src, dt, mv[j].n};
            st = nccl_run(c, bk, id, &call, &mine, 1, mv, n, pad.total * w, ring(c, OP_ALL_GATHER), e);
        }
    }
done:
    free(off);
    free(mv);
    return st;
}

static Status nccl_reduce_scatter_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt,
                                    CommReduce op, Err *e)
{
    return uneven(c, id, bk, buf, counts, dt, op, 1, e);
}

static Status nccl_all_gather_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt,
                                Err *e)
{
    return uneven(c, id, bk, buf, counts, dt, COMM_SUM, 0, e);
}

void nccl_fill_ops(Comm *c)
{
    c->all_reduce = nccl_all_reduce;
    c->all_gather = nccl_all_gather;
    c->reduce_scatter = nccl_reduce_scatter;
    c->broadcast = nccl_broadcast;
    c->send = nccl_send;
    c->recv = nccl_recv;
    c->sendrecv = nccl_sendrecv;
    c->reduce_scatter_v = nccl_reduce_scatter_v;
    c->all_gather_v = nccl_all_gather_v;
    c->all_to_all_v = nccl_all_to_all_v;
}
