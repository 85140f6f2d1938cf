/* exec/cuda/comm_nccl.cu — the NCCL implementation of Comm (exec/comm/comm.h):
 * making the communicator (one rank; NCCL_COMM_ID; or an id MPI broadcast:
 * exec/comm/comm_nccl_boot.c), its own stream and events, the order every
 * call runs in and its timing (comm_nccl_impl.h). The operations are in
 * comm_nccl_ops.cu.
 *
 * The NCCL the process loaded is asked for its version when the communicator
 * is made (ncclGetVersion: the library found at run time may be older than
 * the headers, e.g. a system libnccl2 or PyTorch's wheel). FP8 buffers travel
 * as NCCL's native FP8 types only where exec/comm/comm_wire.h allows.
 *
 * One rank never aborts a run: when NCCL cannot start for a one-rank
 * communicator (no usable transport, a library that refuses), the collectives
 * become what they are over one rank — nothing in place, a device copy out of
 * place — on the same streams, and the name says so. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_wire.h"
#include "exec/cuda/comm_nccl_impl.h"

static_assert(sizeof(ncclUniqueId) == 128, "exec/backend/cuda_lib.h's COMM_NCCL_ID_BYTES is 128");

Status nccl_fail(Err *e, ncclComm_t comm, const char *file, int line, const char *call, ncclResult_t r)
{
    const char *last = comm ? ncclGetLastError(comm) : NULL;
    const char *s = strrchr(file, '/');
    Status st = r == ncclSystemError || r == ncclRemoteError ? ST_UNAVAILABLE : ST_SOFTWARE;
    if (r == ncclInvalidArgument || r == ncclInvalidUsage) st = ST_USAGE;
    return err_set(e, st, "%s:%d: %s failed: %s%s%s", s ? s + 1 : file, line, call, ncclGetErrorString(r),
                   last && *last ? ": " : "", last ? last : "");
}

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

/* The call itself on the NCCL stream (or its one-rank local equivalent: a copy when out of place). */
/* The all-to-all's segments (bytes): its own segment a copy on the NCCL stream, every other peer's send
 * and receive in one group, so no rank waits on a peer that is waiting on it. */
static Status issue_a2a(NcclImpl *ni, const NcCall *k, Err *e)
{
    Status st = ST_OK;
    const int n = k->size, r = k->rank;
    const uint64_t *sb = k->seg, *sd = sb + n, *rb = sd + n, *rd = rb + n;
    if (sb[r])
        CU_TRY(cudaMemcpyAsync((char *)k->recv + rd[r], (const char *)k->send + sd[r], (size_t)sb[r],
                               cudaMemcpyDeviceToDevice, ni->ns->stream),
               e);
    if (!ni->comm) goto done; /* one rank: its own segment is all there is */
    NCCL_TRY(ni->comm, ncclGroupStart(), e);
    for (int j = 0; j < n; j++) {
        if (j == r) continue;
        if (sb[j])
            NCCL_TRY(ni->comm,
                     ncclSend((const char *)k->send + sd[j], (size_t)sb[j], ncclUint8, j, ni->comm, ni->ns->stream), e);
        if (rb[j])
            NCCL_TRY(ni->comm, ncclRecv((char *)k->recv + rd[j], (size_t)rb[j], ncclUint8, j, ni->comm, ni->ns->stream),
                     e);
    }
    NCCL_TRY(ni->comm, ncclGroupEnd(), e);
done:
    return st;
}

static Status issue(NcclImpl *ni, const NcCall *k, Err *e)
{
    if (k->k == NC_A2A) return issue_a2a(ni, k, e);
    Status st = ST_OK;
    ncclDataType_t t = ncclFloat32;
    ncclRedOp_t o = ncclSum;
    const int reduces = k->k == NC_AR || k->k == NC_RS;
    const size_t n = (size_t)k->n;
    ST_TRY(nccl_type(k->wire, &t, e));
    if (reduces) ST_TRY(nccl_op(k->op, &o, e));
    if (!ni->comm) { /* one rank: in place is the result; out of place a copy of n elements */
        if (k->send != k->recv && n && k->recv)
            CU_TRY(
                cudaMemcpyAsync(k->recv, k->send, n * dtype_bytes(k->wire), cudaMemcpyDeviceToDevice, ni->ns->stream),
                e);
        goto done;
    }
    switch (k->k) {
    case NC_AR: NCCL_TRY(ni->comm, ncclAllReduce(k->send, k->recv, n, t, o, ni->comm, ni->ns->stream), e); break;
    case NC_AG: NCCL_TRY(ni->comm, ncclAllGather(k->send, k->recv, n, t, ni->comm, ni->ns->stream), e); break;
    case NC_RS: NCCL_TRY(ni->comm, ncclReduceScatter(k->send, k->recv, n, t, o, ni->comm, ni->ns->stream), e); break;
    case NC_BC: NCCL_TRY(ni->comm, ncclBroadcast(k->send, k->recv, n, t, k->peer, ni->comm, ni->ns->stream), e); break;
    case NC_SEND: NCCL_TRY(ni->comm, ncclSend(k->send, n, t, k->peer, ni->comm, ni->ns->stream), e); break;
    case NC_RECV: NCCL_TRY(ni->comm, ncclRecv(k->recv, n, t, k->peer, ni->comm, ni->ns->stream), e); break;
    case NC_SENDRECV: /* one group: both ranks of an exchange post both halves before either waits */
        NCCL_TRY(ni->comm, ncclGroupStart(), e);
        NCCL_TRY(ni->comm, ncclSend(k->send, n, t, k->peer, ni->comm, ni->ns->stream), e);
        NCCL_TRY(ni->comm, ncclRecv(k->recv, (size_t)k->n2, t, k->peer2, ni->comm, ni->ns->stream), e);
        NCCL_TRY(ni->comm, ncclGroupEnd(), e);
        break;
    case NC_A2A: break; /* issue_a2a */
    }
done:
    return st;
}

/* Read the pending start/end pairs: each call's device time into its collective's row. */
static Status nccl_settle(Comm *c, Err *e)
{
    Status st = ST_OK;
    NcclImpl *ni = nccl_impl(c);
    while (c->parent) c = c->parent; /* a group's calls are counted in the root's rows (comm.h) */
    for (int i = 0; i < ni->ns->pending; i++) {
        float ms = 0.0f;
        CU_TRY(cudaEventSynchronize(ni->ns->ev[2 * i + 1]), e);
        CU_TRY(cudaEventElapsedTime(&ms, ni->ns->ev[2 * i], ni->ns->ev[2 * i + 1]), e);
        if (ni->ns->pair_id[i] == NCCL_UNCOUNTED) continue; /* a recv: its time is the sender's, as over MPI */
        c->total.seconds += 1e-3 * (double)ms;
        if ((unsigned)ni->ns->pair_id[i] < CO_COUNT_) c->stats[ni->ns->pair_id[i]].seconds += 1e-3 * (double)ms;
    }
    ni->ns->pending = 0;
done:
    return st;
}

/* One staging move on the compute stream: a copy, or a conversion (FP8 <-> BF16) by the backend. */
static Status move(Backend *bk, CudaImpl *im, const NcMove *m, Err *e)
{
    Status st = ST_OK;
    if (!m->n) return ST_OK;
    if (m->sdt == m->ddt)
        CU_TRY(
            cudaMemcpyAsync(m->dst, m->src, (size_t)(m->n * dtype_bytes(m->sdt)), cudaMemcpyDeviceToDevice, im->stream),
            e);
    else
        ST_TRY(bk->convert(bk, m->src, m->sdt, m->dst, m->ddt, m->n, NULL, e));
done:
    return st;
}

Status nccl_run(Comm *c, Backend *bk, CollectiveId id, const NcCall *call, const NcMove *in, int nin, const NcMove *out,
                int nout, uint64_t payload, double factor, Err *e)
{
    Status st = ST_OK;
    NcclImpl *ni = nccl_impl(c);
    CudaImpl *im = cuda_impl(bk);
    NcclStep steps[NCS_MAX];
    const int ns = comm_nccl_order(nin > 0, nout > 0, steps);
    int p = 0;
    if (ni->ns->pending == NCCL_PAIRS) ST_TRY(nccl_settle(c, e));
    p = ni->ns->pending;
    for (int i = 0; i < ns; i++) {
        switch (steps[i]) {
        case NCS_STAGE_IN:
            for (int j = 0; j < nin; j++) ST_TRY(move(bk, im, &in[j], e));
            break;
        case NCS_READY: /* the compute stream's time of the call: from here to its wait for "done" */
            ST_TRY(cuda_op_begin(im, BK_OPCAT_COMM, e));
            CU_TRY(cudaEventRecord(ni->ns->ready, im->stream), e);
            break;
        case NCS_WAIT_READY: CU_TRY(cudaStreamWaitEvent(ni->ns->stream, ni->ns->ready, 0), e); break;
        case NCS_START: CU_TRY(cudaEventRecord(ni->ns->ev[2 * p], ni->ns->stream), e); break;
        case NCS_ISSUE: ST_TRY(issue(ni, call, e)); break;
        case NCS_END:
            CU_TRY(cudaEventRecord(ni->ns->ev[2 * p + 1], ni->ns->stream), e);
            ni->ns->pair_id[p] = call->k == NC_RECV ? NCCL_UNCOUNTED : (int)id;
            ni->ns->pending = p + 1;
            break;
        case NCS_WAIT_DONE:
            CU_TRY(cudaStreamWaitEvent(im->stream, ni->ns->ev[2 * p + 1], 0), e);
            ST_TRY(cuda_op_end(im, e));
            break;
        case NCS_STAGE_OUT:
            for (int j = 0; j < nout; j++) ST_TRY(move(bk, im, &out[j], e));
            break;
        }
    }
    if (call->k != NC_RECV) comm_count(c, id, payload, factor); /* a recv counts nothing (comm.h) */
done:
    return st;
}

static void nccl_destroy(Comm *c)
{
    if (!c) return;
    NcclImpl *ni = nccl_impl(c);
    if (ni) {
        NcclStream *ns = ni->ns;
        (void)cudaSetDevice(ni->device);
        if (ns && ns->stream) (void)cudaStreamSynchronize(ns->stream);
        if (ni->comm) (void)ncclCommDestroy(ni->comm);
        if (ni->dev) (void)cudaFree(ni->dev);
        if (ns && ni->owns_ns) {
            for (int i = 0; i < ns->ev_made; i++) (void)cudaEventDestroy(ns->ev[i]);
            if (ns->ready) (void)cudaEventDestroy(ns->ready);
            if (ns->stream) (void)cudaStreamDestroy(ns->stream);
            free(ns);
        }
    }
    Comm *host = c->host;
    free(ni);
    free(c);
    if (host) host->destroy(host); /* after NCCL: MPI may be finalized with it */
}

void comm_nccl_versions(int *built, int *loaded)
{
    *built = NCCL_VERSION_CODE;
    if (ncclGetVersion(loaded) != ncclSuccess) *loaded = 0;
}

static Status need_cuda(Backend *bk, Err *e)
{
    if (!bk || !bk->name || strcmp(bk->name, "cuda") != 0)
        return err_set(e, ST_USAGE, "nccl: collectives need the cuda backend's memory and stream");
    return ST_OK;
}

/* The stream and events of a new communicator on bk's device. */
static Status streams(NcclImpl *ni, CudaImpl *im, Err *e)
{
    Status st = ST_OK;
    ni->device = im->device;
    ni->ns = (NcclStream *)calloc(1, sizeof *ni->ns);
    if (!ni->ns) return err_set(e, ST_NOMEM, "nccl: out of host memory");
    ni->owns_ns = 1;
    CU_TRY(cudaSetDevice(im->device), e);
    CU_TRY(cudaStreamCreateWithFlags(&ni->ns->stream, cudaStreamNonBlocking), e);
    CU_TRY(cudaEventCreateWithFlags(&ni->ns->ready, cudaEventDisableTiming), e);
    for (; ni->ns->ev_made < 2 * NCCL_PAIRS; ni->ns->ev_made++)
        CU_TRY(cudaEventCreate(&ni->ns->ev[ni->ns->ev_made]), e);
done:
    return st;
}

/* A group of c's ranks (comm.h split: every rank of c calls it): ncclCommSplit (NCCL 2.18), its calls on
 * the root's stream and counted in the root's rows. One rank without NCCL is its own group. */
static Status nccl_split(Comm *c, int color, int key, Comm **out, Err *e)
{
    Status st = ST_OK;
    NcclImpl *ni = nccl_impl(c), *gi = NULL;
    ncclComm_t gc = NULL;
    Comm *g = NULL;
    int rank = 0, size = 1;
    *out = NULL;
    if (color < 0) return err_set(e, ST_USAGE, "nccl split: color %d (every rank joins a group)", color);
#if NCCL_VERSION_CODE >= 21800
    if (ni->comm) {
        CU_TRY(cudaSetDevice(ni->device), e);
        NCCL_TRY(ni->comm, ncclCommSplit(ni->comm, color, key, &gc, NULL), e);
        NCCL_TRY(gc, ncclCommUserRank(gc, &rank), e);
        NCCL_TRY(gc, ncclCommCount(gc, &size), e);
    }
#else
    (void)key;
    if (ni->comm)
        return err_set(e, ST_UNAVAILABLE, "nccl split: this build's NCCL %d.%d has no ncclCommSplit (2.18 has)",
                       NCCL_MAJOR, NCCL_MINOR);
#endif
    g = (Comm *)calloc(1, sizeof *g);
    gi = (NcclImpl *)calloc(1, sizeof *gi);
    if (!g || !gi) {
        st = err_set(e, ST_NOMEM, "nccl: out of host memory");
        goto done;
    }
    gi->comm = gc;
    gi->loaded = ni->loaded;
    gi->device = ni->device;
    gi->ns = ni->ns;
    snprintf(gi->name, sizeof gi->name, "%.150s (group of %d)", ni->name, size);
    g->impl = gi;
    g->name = gi->name;
    g->rank = rank;
    g->size = size;
    g->parent = c;
    g->settle = nccl_settle;
    g->destroy = nccl_destroy;
    g->split = nccl_split;
    nccl_fill_ops(g);
    *out = g;
    return ST_OK;
done:
    if (gc) (void)ncclCommDestroy(gc);
    free(g);
    free(gi);
    return st;
}

/* The communicator: with the NCCL id when one is given (MPI broadcast it; NULL: make one here, which
 * more than one rank can share only through NCCL_COMM_ID). */
static Status create(Backend *bk, int rank, int size, const ncclUniqueId *given, Comm *host, Comm **out, Err *e)
{
    Status st = need_cuda(bk, e);
    ncclUniqueId id;
    ncclComm_t comm = NULL;
    int loaded = 0;
    char why[512] = "";
    Comm *c = NULL;
    NcclImpl *ni = NULL;
    const char *as = getenv("FP8PLAN_NCCL_AS_VERSION"); /* test hook: behave as this NCCL (the fallback run) */
    *out = NULL;
    if (st) return st;
    if (size < 1 || rank < 0 || rank >= size)
        return err_set(e, ST_USAGE, "nccl: rank %d is not in [0, %d)", rank, size);
    if (size > 1 && !given && !getenv("NCCL_COMM_ID"))
        return err_set(e, ST_USAGE,
                       "nccl: %d ranks need mpirun (the id is broadcast over MPI) or NCCL_COMM_ID=<host>:<port> set "
                       "to the same address in every rank's environment (rank 0 serves the bootstrap there)",
                       size);
    if (ncclGetVersion(&loaded) != ncclSuccess) loaded = 0;
    if (as && *as) loaded = atoi(as);
    CU_TRY(cudaSetDevice(cuda_impl(bk)->device), e); /* NCCL's communicator is on the current device */
    if (given)
        id = *given;
    else
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
    c = (Comm *)calloc(1, sizeof *c);
    ni = (NcclImpl *)calloc(1, sizeof *ni);
    if (!c || !ni) {
        free(c);
        free(ni);
        if (comm) (void)ncclCommDestroy(comm);
        return err_set(e, ST_NOMEM, "nccl: out of host memory");
    }
    ni->comm = comm;
    ni->loaded = loaded;
    c->impl = ni;
    if ((st = streams(ni, cuda_impl(bk), e))) {
        nccl_destroy(c); /* no host yet: the caller keeps it */
        return st;
    }
    if (comm)
        snprintf(ni->name, sizeof ni->name, "nccl %d.%d.%d%s%s", loaded / 10000, loaded / 100 % 100, loaded % 100,
                 comm_wire_dtype(DT_E4M3, 1, loaded, NCCL_VERSION_CODE, cuda_impl(bk)->info.cc_major) == DT_E4M3
                     ? ""
                     : " (FP8 travels as BF16)",
                 host ? " (ranks bootstrapped through MPI)" : "");
    else
        snprintf(ni->name, sizeof ni->name, "nccl-local (one rank; NCCL did not start: %.120s)", why);
    c->name = ni->name;
    c->rank = rank;
    c->size = size;
    c->host = host;
    c->settle = nccl_settle;
    c->destroy = nccl_destroy;
    c->split = nccl_split;
    nccl_fill_ops(c);
    *out = c;
    return ST_OK;
}

Status comm_nccl_create(Backend *bk, int rank, int size, Comm **out, Err *e)
{
    return create(bk, rank, size, NULL, NULL, out, e);
}

Status comm_nccl_unique_id(void *id, size_t bytes, Err *e)
{
    Status st = ST_OK;
    ncclUniqueId u;
    if (bytes != sizeof u) return err_set(e, ST_USAGE, "nccl: an id is %zu bytes, not %zu", sizeof u, bytes);
    NCCL_TRY(NULL, ncclGetUniqueId(&u), e);
    memcpy(id, &u, sizeof u);
done:
    if (st == ST_SOFTWARE) st = e->st = ST_UNAVAILABLE;
    return st;
}

Status comm_nccl_create_id(Backend *bk, int rank, int size, const void *id, size_t bytes, Comm *host, Comm **out,
                           Err *e)
{
    ncclUniqueId u;
    *out = NULL;
    if (!id || bytes != sizeof u) return err_set(e, ST_USAGE, "nccl: an id is %zu bytes, not %zu", sizeof u, bytes);
    memcpy(&u, id, sizeof u);
    return create(bk, rank, size, &u, host, out, e);
}
