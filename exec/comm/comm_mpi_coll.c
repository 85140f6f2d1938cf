/* exec/comm/comm_mpi_coll.c — the MPI communicator's collectives (see comm_mpi.h): bytes moved by MPI
 * (MPI_Alltoall(v), MPI_Allgather(v), MPI_Bcast), every reduction folded here in rank order, each call timed from
 * the moment every rank has arrived and runs again (arrive). comm_mpi.c makes the communicator and holds its
 * point-to-point calls. */
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "exec/backend/elem.h"
#include "exec/comm/comm_mpi_internal.h"
#include "exec/comm/comm_nccl_rules.h"

static MPI_Comm world(const Comm *c) { return comm_mpi_handle(c); }

/* First element of rank r's slice of n elements: ⌊n·r/size⌋ without overflow
 * (n = q·size + m: q·r + ⌊m·r/size⌋, and m·r < size²). */
static uint64_t slice_lo(uint64_t n, int size, int r)
{
    uint64_t s = (uint64_t)size, q = n / s, m = n % s;
    return q * (uint64_t)r + m * (uint64_t)r / s;
}

/* Checks common to every call: host memory, a sized dtype, the element count
 * in MPI's int byte counts (total = elements the largest buffer holds). */
Status comm_mpi_check_call(const Comm *c, const char *what, Backend *bk, uint64_t total, Dtype dt, Err *e)
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

/* Elements a fold takes at a time: its FP32 accumulator and one contribution decoded (2 x 1 KiB) stay in a core's
 * L1 cache, and each step is a run of one dtype (elem_load_run, elem_store_run: the dtype's switch outside the
 * loop, so it vectorizes). */
enum { FOLD_RUN = 256 };

/* out[k] = the fold, in rank order, of size contributions of len elements each (contribution i at part + i·len),
 * decoded to FP32 and rounded once to dt: element by element the same sums, comparisons and rounding as one
 * element at a time, so the bytes do not depend on FOLD_RUN. */
static void fold(const uint8_t *part, uint64_t len, Dtype dt, CommReduce op, int size, void *out)
{
    const uint64_t stride = len * dtype_bytes(dt);
    float acc[FOLD_RUN], x[FOLD_RUN];
    for (uint64_t k = 0; k < len; k += FOLD_RUN) {
        const uint64_t m = len - k < FOLD_RUN ? len - k : FOLD_RUN;
        elem_load_run(part, dt, k, acc, m);
        for (int i = 1; i < size; i++) {
            elem_load_run(part + (uint64_t)i * stride, dt, k, x, m);
            if (op == COMM_SUM) {
                for (uint64_t j = 0; j < m; j++) acc[j] = acc[j] + x[j];
                continue;
            }
            for (uint64_t j = 0; j < m; j++) /* a NaN, once in, stays (acc > NaN and acc < NaN are false) */
                if (x[j] != x[j] || (op == COMM_MAX ? x[j] > acc[j] : x[j] < acc[j])) acc[j] = x[j];
        }
        elem_store_run(out, dt, k, acc, m);
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
    uint8_t *part = comm_mpi_scratch(c, len * b * (uint64_t)size);
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
    if (!st) st = comm_mpi_check_call(c, what, bk, *total, dt, e);
    /* the reduce-scatter receives every rank's values of this rank's segment: size x its bytes */
    if (!st && counts[c->rank] > (uint64_t)INT_MAX / dtype_bytes(dt) / (uint64_t)c->size)
        st = err_set(e, ST_UNAVAILABLE, "mpi %s: %d ranks x %llu elements of rank %d is more than one MPI call carries",
                     what, c->size, (unsigned long long)counts[c->rank], c->rank);
    if (!st && !buf && *total) st = err_set(e, ST_USAGE, "mpi %s: no buffer", what);
    return st;
}

/* Every rank arrives first, so the seconds a collective is counted with are its transfer with every rank in it,
 * and the wait before it is counted apart (comm_wait): the ranks' skew (one rank's compute ran longer) and the
 * time the ranks that waited take to run again. Two barriers: MPI's releases the last rank to arrive at once, but
 * a rank that waited in it may have lost its core meanwhile (more threads than cores: the ranks' pools) and
 * leave it tens of microseconds later, which the first rank's call would count as its transfer. On this project's
 * 2-core host, TP 2's vocabulary all-reduce (the step's first call; rank 0 late by 30-130 us in most steps)
 * found rank 1 leaving the barrier 15-43 us after rank 0, and rank 0's call took 46-77 us against rank 1's 30-48
 * (a per-call trace; the sweep's ranks, arriving together, leave within 0.4 us). The second barrier returns once
 * every rank has left the first, so the call starts with every rank running. *t0: the call's start, moved there. */
static Status arrive(Comm *c, CollectiveId id, double *t0, Err *e)
{
    for (int i = 0; c->size > 1 && i < 2; i++) {
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
    Status st = comm_mpi_check_call(c, "all_reduce", bk, n, dt, e);
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
    Status st = comm_mpi_check_call(c, "reduce_scatter", bk, n * (uint64_t)size, dt, e);
    if (!st) st = check_op(op, dt, e);
    if (st) return st;
    if ((!send || !recv) && n) return err_set(e, ST_USAGE, "mpi reduce_scatter: missing buffer");
    const uint64_t b = dtype_bytes(dt);
    uint8_t *part = comm_mpi_scratch(c, n * b * (uint64_t)size);
    if (!part)
        return err_set(e, ST_NOMEM, "mpi reduce_scatter: out of memory for %llu elements", (unsigned long long)n);
    if ((st = arrive(c, id, &t0, e))) goto done;
    MPI_TRY(MPI_Alltoall(send, (int)(n * b), MPI_BYTE, part, (int)(n * b), MPI_BYTE, world(c)));
    fold(part, n, dt, op, size, recv);
    comm_count_s(c, id, n * b * (uint64_t)size, comm_bus_factor(OP_REDUCE_SCATTER, (uint64_t)size), comm_now_s() - t0);
done:
    return st;
}

static Status mpi_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n, Dtype dt,
                             Err *e)
{
    double t0 = comm_now_s();
    const int size = c->size;
    Status st = comm_mpi_check_call(c, "all_gather", bk, n * (uint64_t)size, dt, e);
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
    Status st = comm_mpi_check_call(c, "broadcast", bk, n, dt, e);
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
    Status st = comm_mpi_check_call(c, "all_to_all_v", bk, 0, dt, e);
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

void comm_mpi_set_collectives(Comm *c)
{
    c->all_reduce = mpi_all_reduce;
    c->all_gather = mpi_all_gather;
    c->reduce_scatter = mpi_reduce_scatter;
    c->broadcast = mpi_broadcast;
    c->reduce_scatter_v = mpi_reduce_scatter_v;
    c->all_gather_v = mpi_all_gather_v;
    c->all_to_all_v = mpi_all_to_all_v;
}
