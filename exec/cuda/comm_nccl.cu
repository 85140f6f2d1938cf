/* exec/cuda/comm_nccl.cu — the NCCL implementation of Comm (exec/comm/comm.h).
 *
 * Collectives run on the CUDA backend's stream, so they are ordered with the
 * kernels around them and timed as BK_OPCAT_COMM. Every call adds its payload
 * (total array bytes S in the dtype that travels, nccl-tests' convention) and
 * ring bus bytes (all-reduce 2(n−1)/n·S, all-gather and reduce-scatter
 * (n−1)/n·S) to the total and to the row of the planner's collective it
 * performs (comm_count).
 *
 * The NCCL the process loaded is asked for its version when the communicator
 * is made (ncclGetVersion: the library found at run time may be older than
 * the headers, e.g. a system libnccl2 or PyTorch's wheel). FP8 buffers travel
 * as NCCL's native FP8 types only where exec/comm/comm_wire.h allows (NCCL ≥ 2.24,
 * reductions on sm_90+); otherwise they are cast to BF16 in the backend's
 * scratch for the collective and back, and counted as BF16 bytes.
 *
 * One rank never aborts a run: when NCCL cannot start for a one-rank
 * communicator (no usable transport, a library that refuses), the collectives
 * become what they are over one rank — nothing in place, a device copy out of
 * place — on the same stream, and the name says so. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_wire.h"
#include "exec/cuda/cuda_impl.h"

typedef struct {
    ncclComm_t comm; /* NULL: one rank without NCCL (local copies) */
    int loaded;      /* ncclGetVersion of the library in use; 0 unknown */
    char name[200];
} NcclImpl;

static Status nccl_fail(Err *e, ncclComm_t comm, const char *file, int line, const char *call, ncclResult_t r)
{
    const char *last = comm ? ncclGetLastError(comm) : NULL;
    const char *s = strrchr(file, '/');
    Status st = r == ncclSystemError || r == ncclRemoteError ? ST_UNAVAILABLE : ST_SOFTWARE;
    if (r == ncclInvalidArgument || r == ncclInvalidUsage) st = ST_USAGE;
    return err_set(e, st, "%s:%d: %s failed: %s%s%s", s ? s + 1 : file, line, call, ncclGetErrorString(r),
                   last && *last ? ": " : "", last ? last : "");
}

#define NCCL_TRY(comm, call, e)                                            \
    do {                                                                   \
        ncclResult_t nc_r_ = (call);                                       \
        if (nc_r_ != ncclSuccess) {                                        \
            st = nccl_fail((e), (comm), __FILE__, __LINE__, #call, nc_r_); \
            goto done;                                                     \
        }                                                                  \
    } while (0)

static Status nccl_type(Dtype t, ncclDataType_t *out, Err *e)
{
    switch (t) {
    case DT_FP32: *out = ncclFloat32; return ST_OK;
    case DT_FP16: *out = ncclFloat16; return ST_OK;
    case DT_BF16: *out = ncclBfloat16; return ST_OK;
#if NCCL_VERSION_CODE >= 22400
    case DT_E4M3: *out = ncclFloat8e4m3; return ST_OK;
    case DT_E5M2: *out = ncclFloat8e5m2; return ST_OK;
#endif
    default: return err_set(e, ST_UNAVAILABLE, "nccl: no NCCL type for %s in this build", dtype_name(t));
    }
}

static Status nccl_op(CommReduce op, ncclRedOp_t *out, Err *e)
{
    switch (op) {
    case COMM_SUM: *out = ncclSum; return ST_OK;
    case COMM_MAX: *out = ncclMax; return ST_OK;
    case COMM_MIN: *out = ncclMin; return ST_OK;
    default: return err_set(e, ST_USAGE, "nccl: unknown reduction %d", (int)op);
    }
}

static Status need_cuda(Backend *bk, Err *e)
{
    if (!bk || !bk->name || strcmp(bk->name, "cuda") != 0)
        return err_set(e, ST_USAGE, "nccl: collectives need the cuda backend's memory and stream");
    return ST_OK;
}

/* The dtype this call's data travels in (comm_wire.h). */
static Dtype wire_of(Comm *c, Backend *bk, Dtype dt, int reduces)
{
    NcclImpl *ni = (NcclImpl *)c->impl;
    if (!ni->comm) return dt; /* one rank, no NCCL: nothing travels */
    return comm_wire_dtype(dt, reduces, ni->loaded, NCCL_VERSION_CODE, cuda_impl(bk)->info.cc_major);
}

static uint64_t align256(uint64_t b) { return (b + 255u) & ~(uint64_t)255u; }

/* Two BF16 staging buffers of na and nb elements in the backend's scratch. */
static Status stage(CudaImpl *im, uint64_t na, uint64_t nb, void **a, void **b, Err *e)
{
    void *p = NULL;
    Status st = cuda_scratch(im, (size_t)(align256(2 * na) + 2 * nb), &p, e);
    if (st) return st;
    *a = p;
    *b = (char *)p + align256(2 * na);
    return ST_OK;
}

/* One NCCL call (or its one-rank local equivalent) on data already in the wire dtype. */
typedef enum { OP_AR, OP_AG, OP_RS } CollOp;

static Status issue(Comm *c, CudaImpl *im, CollOp k, const void *send, void *recv, uint64_t n, Dtype wire,
                    CommReduce op, Err *e)
{
    NcclImpl *ni = (NcclImpl *)c->impl;
    Status st = ST_OK;
    ncclDataType_t t = ncclFloat32;
    ncclRedOp_t o = ncclSum;
    if (ni->comm && ((st = nccl_type(wire, &t, e)) || (k != OP_AG && (st = nccl_op(op, &o, e))))) return st;
    if (!ni->comm && k != OP_AG && (st = nccl_op(op, &o, e))) return st; /* the same argument check */
    ST_TRY(cuda_op_begin(im, BK_OPCAT_COMM, e));
    if (!ni->comm) { /* one rank: in place is the result; out of place a copy (n elements either way) */
        if (send != recv && n)
            CU_TRY(cudaMemcpyAsync(recv, send, (size_t)(n * dtype_bytes(wire)), cudaMemcpyDeviceToDevice, im->stream),
                   e);
    } else if (k == OP_AR) {
        NCCL_TRY(ni->comm, ncclAllReduce(send, recv, (size_t)n, t, o, ni->comm, im->stream), e);
    } else if (k == OP_AG) {
        NCCL_TRY(ni->comm, ncclAllGather(send, recv, (size_t)n, t, ni->comm, im->stream), e);
    } else {
        NCCL_TRY(ni->comm, ncclReduceScatter(send, recv, (size_t)n, t, o, ni->comm, im->stream), e);
    }
    ST_TRY(cuda_op_end(im, e));
done:
    return st;
}

/* A collective on dt: straight, or through BF16 staging when FP8 cannot travel
 * as itself. nsend / nrecv: elements of the send and receive buffers. */
static Status collective(Comm *c, CollectiveId id, Backend *bk, CollOp k, const void *send, void *recv, uint64_t n,
                         uint64_t nsend, uint64_t nrecv, Dtype dt, CommReduce op, double factor, Err *e)
{
    Status st = need_cuda(bk, e);
    if (st) return st;
    if (!dtype_bytes(dt)) return err_set(e, ST_USAGE, "nccl: dtype %s has no size", dtype_name(dt));
    if ((nsend && !send) || (nrecv && !recv)) return err_set(e, ST_USAGE, "nccl: missing buffer");
    CudaImpl *im = cuda_impl(bk);
    Dtype wire = wire_of(c, bk, dt, k != OP_AG);
    if (wire == dt) {
        ST_TRY(issue(c, im, k, send, recv, n, dt, op, e));
    } else {
        void *ws = NULL, *wr = NULL;
        ST_TRY(stage(im, nsend, k == OP_AR ? 0 : nrecv, &ws, &wr, e));
        if (k == OP_AR) wr = ws; /* in place */
        ST_TRY(bk->convert(bk, send, dt, ws, wire, nsend, NULL, e));
        ST_TRY(issue(c, im, k, ws, wr, n, wire, op, e));
        ST_TRY(bk->convert(bk, wr, wire, recv, dt, nrecv, NULL, e));
    }
    comm_count(c, id, (k == OP_AR ? n : nrecv > nsend ? nrecv : nsend) * dtype_bytes(wire), factor);
done:
    return st;
}

static Status nccl_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, CommReduce op,
                              Err *e)
{
    return collective(c, id, bk, OP_AR, buf, buf, n, n, n, dt, op, 2.0 * (c->size - 1) / c->size, e);
}

static Status nccl_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dt,
                              Err *e)
{
    uint64_t all = n * (uint64_t)c->size;
    return collective(c, id, bk, OP_AG, send, recv, n, n, all, dt, COMM_SUM, (double)(c->size - 1) / c->size, e);
}

static Status nccl_reduce_scatter(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                                  Dtype dt, CommReduce op, Err *e)
{
    uint64_t all = n * (uint64_t)c->size;
    return collective(c, id, bk, OP_RS, send, recv, n, all, n, dt, op, (double)(c->size - 1) / c->size, e);
}

/* Broadcast and point to point are not issued over NCCL yet (issue 11: PP on
 * GPUs); they refuse rather than pretend. */
static Status nccl_not_yet(const char *what, Err *e)
{
    return err_set(e, ST_UNAVAILABLE, "nccl: %s is not implemented over NCCL yet (the mpi communicator has it)", what);
}

static Status nccl_broadcast(Comm *, CollectiveId, Backend *, void *, uint64_t, Dtype, int, Err *e)
{
    return nccl_not_yet("broadcast", e);
}

static Status nccl_send(Comm *, CollectiveId, Backend *, const void *, uint64_t, Dtype, int, Err *e)
{
    return nccl_not_yet("send", e);
}

static Status nccl_recv(Comm *, CollectiveId, Backend *, void *, uint64_t, Dtype, int, Err *e)
{
    return nccl_not_yet("recv", e);
}

static void nccl_destroy(Comm *c)
{
    if (!c) return;
    NcclImpl *ni = (NcclImpl *)c->impl;
    if (ni && ni->comm) (void)ncclCommDestroy(ni->comm);
    free(ni);
    free(c);
}

void comm_nccl_versions(int *built, int *loaded)
{
    *built = NCCL_VERSION_CODE;
    if (ncclGetVersion(loaded) != ncclSuccess) *loaded = 0;
}

Status comm_nccl_create(Backend *bk, int rank, int size, Comm **out, Err *e)
{
    Status st = need_cuda(bk, e);
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    int loaded = 0;
    char why[512] = "";
    *out = NULL;
    if (st) return st;
    if (size < 1 || rank < 0 || rank >= size)
        return err_set(e, ST_USAGE, "nccl: rank %d is not in [0, %d)", rank, size);
    if (size > 1 && !getenv("NCCL_COMM_ID"))
        return err_set(e, ST_USAGE,
                       "nccl: %d ranks need NCCL_COMM_ID=<host>:<port> set to the same address in every rank's "
                       "environment (rank 0 serves the bootstrap there)",
                       size);
    if (ncclGetVersion(&loaded) != ncclSuccess) loaded = 0;
    const char *as =
        getenv("FP8PLAN_NCCL_AS_VERSION"); /* test hook: behave as this NCCL (the GPU check's fallback run) */
    if (as && *as) loaded = atoi(as);
    NCCL_TRY(NULL, ncclGetUniqueId(&id), e);
    NCCL_TRY(NULL, ncclCommInitRank(&comm, size, id, rank), e);
done:
    if (st && size == 1) { /* one rank needs no transport: go on without NCCL, and say so */
        snprintf(why, sizeof why, "%s", e ? e->msg : "NCCL could not start");
        if (comm) (void)ncclCommDestroy(comm);
        comm = NULL;
        st = ST_OK;
    }
    if (st) {
        if (comm) (void)ncclCommDestroy(comm);
        if (st == ST_SOFTWARE) st = e ? (e->st = ST_UNAVAILABLE) : ST_UNAVAILABLE; /* NCCL could not start */
        return st;
    }
    Comm *c = (Comm *)calloc(1, sizeof *c);
    NcclImpl *ni = (NcclImpl *)calloc(1, sizeof *ni);
    if (!c || !ni) {
        free(c);
        free(ni);
        if (comm) (void)ncclCommDestroy(comm);
        return err_set(e, ST_NOMEM, "nccl: out of host memory");
    }
    ni->comm = comm;
    ni->loaded = loaded;
    if (comm)
        snprintf(ni->name, sizeof ni->name, "nccl %d.%d.%d%s", loaded / 10000, loaded / 100 % 100, loaded % 100,
                 comm_wire_dtype(DT_E4M3, 1, loaded, NCCL_VERSION_CODE, cuda_impl(bk)->info.cc_major) == DT_E4M3
                     ? ""
                     : " (FP8 travels as BF16)");
    else
        snprintf(ni->name, sizeof ni->name, "nccl-local (one rank; NCCL did not start: %.120s)", why);
    c->name = ni->name;
    c->rank = rank;
    c->size = size;
    c->impl = ni;
    c->all_reduce = nccl_all_reduce;
    c->all_gather = nccl_all_gather;
    c->reduce_scatter = nccl_reduce_scatter;
    c->broadcast = nccl_broadcast;
    c->send = nccl_send;
    c->recv = nccl_recv;
    c->destroy = nccl_destroy;
    *out = c;
    return ST_OK;
}
