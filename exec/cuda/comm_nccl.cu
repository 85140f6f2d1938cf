/* exec/cuda/comm_nccl.cu — the NCCL implementation of Comm (exec/comm/comm.h).
 *
 * Collectives run on the CUDA backend's stream, so they are ordered with the
 * kernels around them and timed as BK_OPCAT_COMM. Every call adds its payload
 * (total array bytes S, nccl-tests' convention) and ring bus bytes (all-reduce
 * 2(n−1)/n·S, all-gather and reduce-scatter (n−1)/n·S) to the stats. FP8
 * buffers travel as NCCL's native FP8 types (NCCL ≥ 2.24; reductions need
 * sm_90+, where NCCL adds pairs in half precision and rounds to FP8 each hop). */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cuda/cuda_impl.h"

typedef struct {
    ncclComm_t comm;
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

typedef enum { NC_ALL_REDUCE = 0, NC_ALL_GATHER, NC_REDUCE_SCATTER } NcclKind;

/* One collective on the backend's stream, timed as BK_OPCAT_COMM and counted:
 * payload S = n elements (all-reduce) or size·n (gather, scatter), bus factor
 * 2(n−1)/n or (n−1)/n. */
static Status issue(Comm *c, NcclKind k, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                    Dtype dt, CommReduce op, Err *e)
{
    NcclImpl *ni = (NcclImpl *)c->impl;
    ncclDataType_t t = ncclFloat32;
    ncclRedOp_t o = ncclSum;
    Status st = need_cuda(bk, e);
    if (st || (st = nccl_type(dt, &t, e)) || (k != NC_ALL_GATHER && (st = nccl_op(op, &o, e)))) return st;
    CudaImpl *im = cuda_impl(bk);
    const double ring = (double)(c->size - 1) / c->size;
    ST_TRY(cuda_op_begin(im, BK_OPCAT_COMM, e));
    switch (k) {
    case NC_ALL_REDUCE: NCCL_TRY(ni->comm, ncclAllReduce(send, recv, (size_t)n, t, o, ni->comm, im->stream), e); break;
    case NC_ALL_GATHER: NCCL_TRY(ni->comm, ncclAllGather(send, recv, (size_t)n, t, ni->comm, im->stream), e); break;
    default: NCCL_TRY(ni->comm, ncclReduceScatter(send, recv, (size_t)n, t, o, ni->comm, im->stream), e); break;
    }
    ST_TRY(cuda_op_end(im, e));
    comm_count(c, id, n * (k == NC_ALL_REDUCE ? 1 : (uint64_t)c->size) * dtype_bytes(dt),
               k == NC_ALL_REDUCE ? 2.0 * ring : ring);
done:
    return st;
}

static Status nccl_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, CommReduce op,
                              Err *e)
{
    return issue(c, NC_ALL_REDUCE, id, bk, buf, buf, n, dt, op, e);
}

static Status nccl_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dt,
                              Err *e)
{
    return issue(c, NC_ALL_GATHER, id, bk, send, recv, n, dt, COMM_SUM, e);
}

static Status nccl_reduce_scatter(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                                  Dtype dt, CommReduce op, Err *e)
{
    return issue(c, NC_REDUCE_SCATTER, id, bk, send, recv, n, dt, op, e);
}

static void nccl_destroy(Comm *c)
{
    if (!c) return;
    NcclImpl *ni = (NcclImpl *)c->impl;
    if (ni && ni->comm) (void)ncclCommDestroy(ni->comm);
    free(ni);
    free(c);
}

Status comm_nccl_create(Backend *bk, int rank, int size, Comm **out, Err *e)
{
    Status st = need_cuda(bk, e);
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    *out = NULL;
    if (st) return st;
    if (size < 1 || rank < 0 || rank >= size)
        return err_set(e, ST_USAGE, "nccl: rank %d is not in [0, %d)", rank, size);
    if (size > 1 && !getenv("NCCL_COMM_ID"))
        return err_set(e, ST_USAGE,
                       "nccl: %d ranks need NCCL_COMM_ID=<host>:<port> set to the same address in every rank's "
                       "environment (rank 0 serves the bootstrap there)",
                       size);
    NCCL_TRY(NULL, ncclGetUniqueId(&id), e);
    NCCL_TRY(NULL, ncclCommInitRank(&comm, size, id, rank), e);
    {
        Comm *c = (Comm *)calloc(1, sizeof *c);
        NcclImpl *ni = (NcclImpl *)calloc(1, sizeof *ni);
        if (!c || !ni) {
            free(c);
            free(ni);
            st = err_set(e, ST_NOMEM, "nccl: out of host memory");
            goto done;
        }
        ni->comm = comm;
        comm = NULL;
        c->name = "nccl";
        c->rank = rank;
        c->size = size;
        c->impl = ni;
        c->all_reduce = nccl_all_reduce;
        c->all_gather = nccl_all_gather;
        c->reduce_scatter = nccl_reduce_scatter;
        c->destroy = nccl_destroy;
        *out = c;
    }
done:
    if (comm) (void)ncclCommDestroy(comm);
    if (st == ST_SOFTWARE) st = e ? (e->st = ST_UNAVAILABLE) : ST_UNAVAILABLE; /* NCCL could not start */
    return st;
}
