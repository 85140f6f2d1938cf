/* exec/comm/comm_mpi.c — the MPI communicator (see comm_mpi.h): data moves as
 * bytes through MPI, reductions happen here in rank order. */
#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_mpi_internal.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/elem.h"
#include "exec/comm/comm_nccl_rules.h"

/* A send in flight: MPI_Isend of a private copy of the caller's buffer. */
typedef struct {
    MPI_Request req;
    void *copy;
} Pending;

typedef struct {
    MPI_Comm comm; /* a duplicate of MPI_COMM_WORLD (or a split of one), errors returned */
    Pending *pend; /* sends not known to be complete */
    int npend, cap;
} MpiImpl;

static int owned_init; /* this file called MPI_Init_thread */
static int live;       /* communicators not yet destroyed */

int comm_mpi_launched(void) { return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK"); }

Status comm_mpi_fail(Err *e, int rc, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error %d", rc);
    return err_set(e, ST_UNAVAILABLE, "mpi: %s failed: %s", call, msg);
}

static MPI_Comm world(const Comm *c) { return ((const MpiImpl *)c->impl)->comm; }
MPI_Comm comm_mpi_handle(const Comm *c) { return world(c); }

/* First element of rank r's slice of n elements: ⌊n·r/size⌋ without overflow
 * (n = q·size + m: q·r + ⌊m·r/size⌋, and m·r < size²). */
static uint64_t slice_lo(uint64_t n, int size, int r)
{
    uint64_t s = (uint64_t)size, q = n / s, m = n % s;
    return q * (uint64_t)r + m * (uint64_t)r / s;
}

/* Checks common to every call: host memory, a sized dtype, the element count
 * in MPI's int byte counts (total = elements the largest buffer holds). */
static Status check_call(const Comm *c, const char *what, Backend *bk, uint64_t total, Dtype dt, Err *e)
{
    if (bk && bk->name && strcmp(bk->name, "cpu"))
        return err_set(e, ST_USAGE, "mpi %s: carries host memory (the cpu backend's), not %s's", what, bk->name);
    uint64_t bytes = 0;
    Status st = comm_payload(total, dt, &bytes, e);
    if (st) return st;
    if (bytes > (uint64_t)INT_MAX)
        return err_set(e, ST_UNAVAILABLE, "mpi %s: %llu bytes over %d ranks is more than one MPI call carries (%d)",
                       what, (unsigned long long)bytes, c->size, INT_MAX);
    return ST_OK;
}

/* out[k] = the fold, in rank order, of size contributions of len elements
 * each (contribution i at part + i·len), decoded to FP32 and rounded once to dt. */
static void fold(const uint8_t *part, uint64_t len, Dtype dt, CommReduce op, int size, void *out)
{
    const uint64_t stride = len * dtype_bytes(dt);
    for (uint64_t k = 0; k < len; k++) {
        float acc = elem_load(part, dt, k);
        for (int i = 1; i < size; i++) {
            float x = elem_load(part + (uint64_t)i * stride, dt, k);
            if (op == COMM_SUM)
                acc = acc + x;
            else if (x != x || (op == COMM_MAX ? x > acc : x < acc))
                acc = x; /* a NaN, once in, stays (acc > NaN and acc < NaN are false) */
        }
        elem_store(out, dt, k, acc);
    }
}

static Status check_op(CommReduce op, Dtype dt, Err *e)
{
    if (op != COMM_SUM && op != COMM_MAX && op != COMM_MIN)
        return err_set(e, ST_USAGE, "mpi: unknown reduction %d", (int)op);
    if (!elem_supported(dt)) return err_set(e, ST_USAGE, "mpi: cannot reduce %s values", dtype_name(dt));
    return elem_init() ? err_set(e, ST_NOMEM, "mpi: out of memory for the decoding tables") : ST_OK;
}

/* Rank j's segment of a buffer laid out by counts: elements [off[j], off[j] + counts[j]); *total their sum.
 * ST_USAGE when a count is missing. */
static Status offsets(const Comm *c, const uint64_t *counts, uint64_t *off, uint64_t *total, Err *e)
{
    if (!counts) return err_set(e, ST_USAGE, "mpi: no counts per rank");
    uint64_t t = 0;
    for (int j = 0; j < c->size; j++) {
        off[j] = t;
        if (__builtin_add_overflow(t, counts[j], &t))
            return err_set(e, ST_OVERFLOW, "mpi: the counts per rank overflow");
    }
    *total = t;
    return ST_OK;
}

/* In place: this rank's segment of buf = the rank-order fold of every rank's values of it. */
static Status rs_v(Comm *c, void *buf, const uint64_t *counts, const uint64_t *off, Dtype dt, CommReduce op, Err *e)
{
    Status st = ST_OK;
    const int size = c->size, r = c->rank;
    const uint64_t b = dtype_bytes(dt), len = counts[r];
    int *cnt = calloc(4 * (size_t)size, sizeof *cnt), *dsp = cnt + size, *rcnt = cnt + 2 * size, *rdsp = cnt + 3 * size;
    uint8_t *part = malloc(len * b * (uint64_t)size + 1);
    if (!cnt || !part) {
        st = err_set(e, ST_NOMEM, "mpi reduce-scatter: out of memory for %llu elements", (unsigned long long)len);
        goto done;
    }
    for (int j = 0; j < size; j++) {
        cnt[j] = (int)(counts[j] * b); /* my values of rank j's segment */
        dsp[j] = (int)(off[j] * b);
        rcnt[j] = (int)(len * b); /* rank j's values of my segment */
        rdsp[j] = (int)((uint64_t)j * len * b);
    }
    if (size > 1)
        MPI_TRY(MPI_Alltoallv(buf, cnt, dsp, MPI_BYTE, part, rcnt, rdsp, MPI_BYTE, world(c)));
    else
        memcpy(part, buf, len * b);
    fold(part, len, dt, op, size, (uint8_t *)buf + off[r] * b);
done:
    free(cnt);
    free(part);
    return st;
}

/* In place: every rank's segment j of buf = rank j's. */
static Status ag_v(Comm *c, void *buf, const uint64_t *counts, const uint64_t *off, Dtype dt, Err *e)
{
    Status st = ST_OK;
    const int size = c->size;
    const uint64_t b = dtype_bytes(dt);
    if (size == 1) return ST_OK;
    int *cnt = calloc(2 * (size_t)size, sizeof *cnt), *dsp = cnt + size;
    if (!cnt) return err_set(e, ST_NOMEM, "mpi all-gather: out of memory");
    for (int j = 0; j < size; j++) {
        cnt[j] = (int)(counts[j] * b);
        dsp[j] = (int)(off[j] * b);
    }
    MPI_TRY(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, cnt, dsp, MPI_BYTE, world(c)));
done:
    free(cnt);
    return st;
}

/* The checks of an uneven call; off (size) and *total filled. */
static Status v_call(Comm *c, const char *what, Backend *bk, const void *buf, const uint64_t *counts, Dtype dt,
                     uint64_t *off, uint64_t *total, Err *e)
{
    Status st = offsets(c, counts, off, total, e);
    if (!st) st = check_call(c, what, bk, *total, dt, e);
    /* the reduce-scatter receives every rank's values of this rank's segment: size x its bytes */
    if (!st && counts[c->rank] > (uint64_t)INT_MAX / dtype_bytes(dt) / (uint64_t)c->size)
        st = err_set(e, ST_UNAVAILABLE, "mpi %s: %d ranks x %llu elements of rank %d is more than one MPI call carries",
                     what, c->size, (unsigned long long)counts[c->rank], c->rank);
    if (!st && !buf && *total) st = err_set(e, ST_USAGE, "mpi %s: no buffer", what);
    return st;
}

/* Every rank arrives first (a barrier), so the seconds a collective is counted with are its transfer, and
 * the wait before it (the ranks' skew: one rank's compute ran longer) is counted apart (comm_wait). *t0: the
 * call's start, moved to the moment every rank has arrived. */
static Status arrive(Comm *c, CollectiveId id, double *t0, Err *e)
{
    if (c->size > 1) {
        int mr = MPI_Barrier(world(c));
        if (mr != MPI_SUCCESS) return comm_mpi_fail(e, mr, "MPI_Barrier");
    }
    double now = comm_now_s();
    comm_wait(c, id, now - *t0);
    *t0 = now;
    return ST_OK;
}

static Status mpi_reduce_scatter_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt,
                                   CommReduce op, Err *e)
{
    double t0 = comm_now_s();
    uint64_t total = 0, *off = calloc((size_t)c->size, sizeof *off);
    if (!off) return err_set(e, ST_NOMEM, "out of memory");
    Status st = v_call(c, "reduce_scatter_v", bk, buf, counts, dt, off, &total, e);
    if (!st) st = check_op(op, dt, e);
    if (!st) st = arrive(c, id, &t0, e);
    if (!st) st = rs_v(c, buf, counts, off, dt, op, e);
    if (!st)
        comm_count_s(c, id, total * dtype_bytes(dt), comm_bus_factor(OP_REDUCE_SCATTER, (uint64_t)c->size),
                     comm_now_s() - t0);
    free(off);
    return st;
}

static Status mpi_all_gather_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dt,
                               Err *e)
{
    double t0 = comm_now_s();
    uint64_t total = 0, *off = calloc((size_t)c->size, sizeof *off);
    if (!off) return err_set(e, ST_NOMEM, "out of memory");
    Status st = v_call(c, "all_gather_v", bk, buf, counts, dt, off, &total, e);
    if (!st) st = arrive(c, id, &t0, e);
    if (!st) st = ag_v(c, buf, counts, off, dt, e);
    if (!st)
        comm_count_s(c, id, total * dtype_bytes(dt), comm_bus_factor(OP_ALL_GATHER, (uint64_t)c->size),
                     comm_now_s() - t0);
    free(off);
    return st;
}

/* A reduce-scatter over the owners' slices followed by their all-gather. */
static Status mpi_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, CommReduce op,
                             Err *e)
{
    double t0 = comm_now_s();
    Status st = check_call(c, "all_reduce", bk, n, dt, e);
    if (!st) st = check_op(op, dt, e);
    if (st) return st;
    if (!buf && n) return err_set(e, ST_USAGE, "mpi all_reduce: no buffer");
    const int size = c->size;
    uint64_t *counts = calloc(2 * (size_t)size, sizeof *counts), *off = counts + size;
    if (!counts) return err_set(e, ST_NOMEM, "mpi all_reduce: out of memory");
    for (int j = 0; j < size; j++) {
        off[j] = slice_lo(n, size, j);
        counts[j] = slice_lo(n, size, j + 1) - off[j];
    }
    st = arrive(c, id, &t0, e);
    if (!st) st = rs_v(c, buf, counts, off, dt, op, e);
    if (!st) st = ag_v(c, buf, counts, off, dt, e);
    if (!st)
        comm_count_s(c, id, n * dtype_bytes(dt), comm_bus_factor(OP_ALL_REDUCE, (uint64_t)size), comm_now_s() - t0);
    free(counts);
    return st;
}

static Status mpi_reduce_scatter(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                                 Dtype dt, CommReduce op, Err *e)
{
    double t0 = comm_now_s();
    const int size = c->size;
    Status st = check_call(c, "reduce_scatter", bk, n * (uint64_t)size, dt, e);
    if (!st) st = check_op(op, dt, e);
    if (st) return st;
    if ((!send || !recv) && n) return err_set(e, ST_USAGE, "mpi reduce_scatter: missing buffer");
    const uint64_t b = dtype_bytes(dt);
    uint8_t *part = malloc(n * b * (uint64_t)size + 1);
    if (!part)
        return err_set(e, ST_NOMEM, "mpi reduce_scatter: out of memory for %llu elements", (unsigned long long)n);
    if ((st = arrive(c, id, &t0, e))) goto done;
    MPI_TRY(MPI_Alltoall(send, (int)(n * b), MPI_BYTE, part, (int)(n * b), MPI_BYTE, world(c)));
    fold(part, n, dt, op, size, recv);
    comm_count_s(c, id, n * b * (uint64_t)size, comm_bus_factor(OP_REDUCE_SCATTER, (uint64_t)size), comm_now_s() - t0);
done:
    free(part);
    return st;
}

static Status mpi_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dt,
                             Err *e)
{
    double t0 = comm_now_s();
    const int size = c->size;
    Status st = check_call(c, "all_gather", bk, n * (uint64_t)size, dt, e);
    if (st) return st;
    if ((!send || !recv) && n) return err_set(e, ST_USAGE, "mpi all_gather: missing buffer");
    const uint64_t b = dtype_bytes(dt);
    /* in place when send is this rank's block of recv (NCCL's convention) */
    const void *s = send == (const uint8_t *)recv + (uint64_t)c->rank * n * b ? MPI_IN_PLACE : send;
    if ((st = arrive(c, id, &t0, e))) goto done;
    MPI_TRY(MPI_Allgather(s, (int)(n * b), MPI_BYTE, recv, (int)(n * b), MPI_BYTE, world(c)));
    comm_count_s(c, id, n * b * (uint64_t)size, comm_bus_factor(OP_ALL_GATHER, (uint64_t)size), comm_now_s() - t0);
done:
    return st;
}

static Status mpi_broadcast(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int root, Err *e)
{
    double t0 = comm_now_s();
    Status st = check_call(c, "broadcast", bk, n, dt, e);
    if (st) return st;
    if (root < 0 || root >= c->size)
        return err_set(e, ST_USAGE, "mpi broadcast: root %d is not a rank of %d", root, c->size);
    if (!buf && n) return err_set(e, ST_USAGE, "mpi broadcast: no buffer");
    const uint64_t bytes = n * dtype_bytes(dt);
    if ((st = arrive(c, id, &t0, e))) goto done;
    MPI_TRY(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, world(c)));
    comm_count_s(c, id, bytes, comm_bus_factor(OP_SEND_RECV, (uint64_t)c->size),
                 comm_now_s() - t0); /* broadcast: 1, as a send */
done:
    return st;
}

static Status check_peer(const Comm *c, const char *what, int peer, Err *e)
{
    if (peer < 0 || peer >= c->size || peer == c->rank)
        return err_set(e, ST_USAGE, "mpi %s: peer %d is not another rank (rank %d of %d)", what, peer, c->rank,
                       c->size);
    return ST_OK;
}

/* Free the sends that have completed (all = 1: wait for every one). */
static Status reap(Comm *c, int all, Err *e)
{
    MpiImpl *im = c->impl;
    Status st = ST_OK;
    int k = 0;
    for (int i = 0; i < im->npend; i++) {
        int done_ = 0;
        int mr =
            all ? MPI_Wait(&im->pend[i].req, MPI_STATUS_IGNORE) : MPI_Test(&im->pend[i].req, &done_, MPI_STATUS_IGNORE);
        if (mr != MPI_SUCCESS && !st) st = comm_mpi_fail(e, mr, all ? "MPI_Wait" : "MPI_Test");
        if (all || done_ || mr != MPI_SUCCESS)
            free(im->pend[i].copy);
        else
            im->pend[k++] = im->pend[i];
    }
    im->npend = k;
    return st;
}

/* Buffered: the bytes are copied and sent with MPI_Isend, so a send returns whatever the peer is doing
 * (1F1B's stages send to each other at once: blocking sends of more than MPI's eager size would wait
 * for each other forever). Order per peer and id is kept (MPI's non-overtaking rule); the copies are
 * freed as the sends complete, at the latest when the communicator is destroyed. */
static Status mpi_send(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    const double t0 = comm_now_s();
    Status st = check_call(c, "send", bk, n, dt, e);
    if (!st) st = check_peer(c, "send", peer, e);
    if (!st) st = reap(c, 0, e);
    if (st) return st;
    MpiImpl *im = c->impl;
    const uint64_t bytes = n * dtype_bytes(dt);
    if (im->npend == im->cap) {
        int cap = im->cap ? 2 * im->cap : 8;
        Pending *p = realloc(im->pend, (size_t)cap * sizeof *p);
        if (!p) return err_set(e, ST_NOMEM, "mpi send: out of memory");
        im->pend = p, im->cap = cap;
    }
    void *copy = malloc(bytes + 1);
    if (!copy) return err_set(e, ST_NOMEM, "mpi send: out of memory for %llu bytes", (unsigned long long)bytes);
    if (bytes) memcpy(copy, buf, bytes);
    int mr = MPI_Isend(copy, (int)bytes, MPI_BYTE, peer, (int)id, world(c), &im->pend[im->npend].req);
    if (mr != MPI_SUCCESS) {
        free(copy);
        return comm_mpi_fail(e, mr, "MPI_Isend");
    }
    im->pend[im->npend++].copy = copy;
    comm_count_s(c, id, bytes, comm_bus_factor(OP_SEND_RECV, 2), comm_now_s() - t0); /* to one peer */
    return ST_OK;
}

/* Two parts timed apart: MPI_Probe returns once the peer's send has reached this rank (its envelope: the
 * eager bytes, or the rendezvous request), the wait for the peer's compute (a pipeline bubble: comm_wait, as
 * a collective's arrival); MPI_Recv then moves the bytes (over Open MPI's shared memory, the receiver copies
 * them, past the eager size straight from the sender's buffer), the message's receiving end (comm_add_s). */
static Status mpi_recv(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dt, int peer, Err *e)
{
    Status st = check_call(c, "recv", bk, n, dt, e);
    if (!st) st = check_peer(c, "recv", peer, e);
    if (st) return st;
    const uint64_t bytes = n * dtype_bytes(dt);
    MPI_Status ms;
    int got = 0;
    double t0 = comm_now_s();
    MPI_TRY(MPI_Probe(peer, (int)id, world(c), &ms));
    double t1 = comm_now_s();
    comm_wait(c, id, t1 - t0);
    MPI_TRY(MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, (int)id, world(c), &ms));
    comm_add_s(c, id, comm_now_s() - t1);
    MPI_TRY(MPI_Get_count(&ms, MPI_BYTE, &got));
    if ((uint64_t)got != bytes)
        st = err_set(e, ST_SOFTWARE, "mpi recv: rank %d sent %d bytes, rank %d expected %llu", peer, got, c->rank,
                     (unsigned long long)bytes);
done:
    return st;
}

static void mpi_destroy(Comm *c)
{
    if (!c) return;
    MpiImpl *im = c->impl;
    if (im) {
        Err e;
        reap(c, 1, &e); /* every send received before the communicator goes */
        free(im->pend);
    }
    if (im && im->comm != MPI_COMM_NULL) MPI_Comm_free(&im->comm);
    free(im);
    free(c);
    int fin = 0;
    if (--live == 0 && owned_init && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) MPI_Finalize();
}

static Status mpi_split(Comm *c, int color, int key, Comm **out, Err *e);

/* Byte counts and displacements of an all-to-all's segments (MPI's int), or ST_UNAVAILABLE past INT_MAX. */
static Status a2a_layout(const Comm *c, const uint64_t *counts, uint64_t eb, int *cnt, int *dsp, uint64_t *total,
                         Err *e)
{
    uint64_t t = 0;
    for (int j = 0; j < c->size; j++) {
        uint64_t b = 0;
        if (__builtin_mul_overflow(counts[j], eb, &b) || __builtin_add_overflow(t, b, &t) || t > (uint64_t)INT_MAX)
            return err_set(e, ST_UNAVAILABLE, "mpi all_to_all_v: more bytes than one MPI call carries (%d)", INT_MAX);
        cnt[j] = (int)b, dsp[j] = (int)(t - b);
    }
    *total = t;
    return ST_OK;
}

static Status mpi_all_to_all_v(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts,
                               void *recv, const uint64_t *rcounts, Dtype dt, Err *e)
{
    const int n = c->size;
    double t0 = comm_now_s();
    if (!scounts || !rcounts) return err_set(e, ST_USAGE, "mpi all_to_all_v: no counts");
    Status st = check_call(c, "all_to_all_v", bk, 0, dt, e);
    if (st) return st;
    uint64_t *peer = calloc((size_t)n, sizeof *peer), eb = dtype_bytes(dt), sb = 0, rb = 0;
    int *sc = calloc((size_t)n * 4, sizeof *sc);
    if (!peer || !sc) {
        free(peer), free(sc);
        return err_set(e, ST_NOMEM, "out of memory");
    }
    int *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n;
    /* what each peer will send here, against what this rank expects; the lowest disagreeing rank, agreed */
    int mr = MPI_Alltoall(scounts, 1, MPI_UINT64_T, peer, 1, MPI_UINT64_T, world(c));
    if (mr != MPI_SUCCESS) st = comm_mpi_fail(e, mr, "MPI_Alltoall");
    comm_count(c, COMM_UNPLANNED, comm_a2a_counts_payload(n), comm_a2a_counts_factor(n));
    int worst = n, from = st ? -1 : comm_a2a_disagree(rcounts, peer, n), mine = from >= 0 ? c->rank : n;
    if (!st && (mr = MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MIN, world(c))) != MPI_SUCCESS)
        st = comm_mpi_fail(e, mr, "MPI_Allreduce");
    if (!st && worst < n && from >= 0)
        st = err_set(e, ST_DATA, "mpi all_to_all_v: rank %d expects %llu elements from rank %d, which sends %llu",
                     c->rank, (unsigned long long)rcounts[from], from, (unsigned long long)peer[from]);
    else if (!st && worst < n)
        st = err_set(e, ST_DATA, "mpi all_to_all_v: rank %d's receive counts disagree with what its peers send", worst);
    if (!st) st = a2a_layout(c, scounts, eb, sc, sd, &sb, e);
    if (!st) st = a2a_layout(c, rcounts, eb, rc, rd, &rb, e);
    if (!st && ((sb && !send) || (rb && !recv))) st = err_set(e, ST_USAGE, "mpi all_to_all_v: no buffer");
    if (!st) st = arrive(c, id, &t0, e);
    if (!st && (mr = MPI_Alltoallv(send, sc, sd, MPI_BYTE, recv, rc, rd, MPI_BYTE, world(c))) != MPI_SUCCESS)
        st = comm_mpi_fail(e, mr, "MPI_Alltoallv");
    if (!st) comm_count_s(c, id, sb, comm_a2a_factor(sb, (uint64_t)sc[c->rank]), comm_now_s() - t0);
    free(peer), free(sc);
    return st;
}

/* c's calls over MPI communicator mc (taken: freed on failure or by destroy). */
static Status wrap(MPI_Comm mc, Comm **out, Err *e)
{
    Status st = ST_OK;
    Comm *c = calloc(1, sizeof *c);
    MpiImpl *im = calloc(1, sizeof *im);
    if (!c || !im) {
        st = err_set(e, ST_NOMEM, "out of memory");
        goto done;
    }
    im->comm = mc;
    MPI_TRY(MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN));
    MPI_TRY(MPI_Comm_rank(mc, &c->rank));
    MPI_TRY(MPI_Comm_size(mc, &c->size));
    c->name = "mpi";
    c->impl = im;
    c->all_reduce = mpi_all_reduce;
    c->all_gather = mpi_all_gather;
    c->reduce_scatter = mpi_reduce_scatter;
    c->broadcast = mpi_broadcast;
    c->reduce_scatter_v = mpi_reduce_scatter_v;
    c->all_gather_v = mpi_all_gather_v;
    c->all_to_all_v = mpi_all_to_all_v;
    c->send = mpi_send;
    c->recv = mpi_recv;
    c->split = mpi_split;
    c->eager_limit = comm_mpi_eager_limit;
    c->destroy = mpi_destroy;
    live++;
    *out = c;
    return ST_OK;
done:
    if (mc != MPI_COMM_NULL) MPI_Comm_free(&mc);
    free(im);
    free(c);
    return st;
}

static Status mpi_split(Comm *c, int color, int key, Comm **out, Err *e)
{
    *out = NULL;
    Status st = ST_OK;
    MPI_Comm mc = MPI_COMM_NULL;
    if (color < 0) return err_set(e, ST_USAGE, "mpi split: color %d (every rank joins a group)", color);
    MPI_TRY(MPI_Comm_split(world(c), color, key, &mc));
    st = wrap(mc, out, e);
    if (!st) (*out)->parent = c;
done:
    return st;
}

Status comm_mpi_create(Comm **out, Err *e)
{
    *out = NULL;
    Status st = ST_OK;
    int inited = 0, provided = 0;
    MPI_Comm mc = MPI_COMM_NULL;
    MPI_TRY(MPI_Initialized(&inited));
    if (!inited) { /* the pool's threads never call MPI: FUNNELED */
        MPI_TRY(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
        owned_init = 1;
    }
    MPI_TRY(MPI_Comm_dup(MPI_COMM_WORLD, &mc));
    return wrap(mc, out, e);
done:
    return st;
}

Status comm_gather_bytes(Comm *c, const void *mine, size_t bytes, void *all, Err *e)
{
    return comm_gather_bytes_at(c, mine, bytes, all, 0, e);
}

Status comm_gather_bytes_at(Comm *c, const void *mine, size_t bytes, void *all, int root, Err *e)
{
    Status st = ST_OK;
    if (strcmp(c->name, "mpi") && c->host) c = c->host; /* NCCL ranks: gathered over the MPI they started with */
    if (strcmp(c->name, "mpi")) {
        memcpy(all, mine, bytes);
        return ST_OK;
    }
    if (bytes > (size_t)INT_MAX) return err_set(e, ST_UNAVAILABLE, "mpi gather: %zu bytes per rank is too many", bytes);
    MPI_TRY(MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, root, world(c)));
done:
    return st;
}

Status comm_gather_stats(Comm *c, const CommStats *mine, int n, CommStats *all, Err *e)
{
    return comm_gather_bytes(c, mine, (size_t)n * sizeof *mine, all, e); /* one binary: one struct layout */
}

int comm_mpi_pending(Comm *c)
{
    if (!c || strcmp(c->name, "mpi")) return 0;
    Err e;
    reap(c, 0, &e); /* a failed test frees its copy too: the count is what is left either way */
    return ((MpiImpl *)c->impl)->npend;
}

void comm_mpi_abort(const Comm *c, int code)
{
    if (c && strcmp(c->name, "mpi") && c->host) c = c->host;
    if (!c || strcmp(c->name, "mpi") || c->size < 2) return;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
}
