/* exec/comm/comm_single.c — the single-rank communicator: every collective
 * over one rank is the identity (in place) or a copy, and moves zero bus bytes
 * (ring factors 2(n−1)/n and (n−1)/n are 0 for n = 1). It still counts calls
 * and payload per plan row so a run's collectives can be listed beside the
 * Plan's. Also what every communicator shares: counting and comm_create. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/backend/backend.h"
#include "exec/comm/comm.h"
#include "exec/comm/comm_mpi.h"

#ifdef FP8PLAN_HAVE_CUDA /* the Makefile defines it when it builds exec/cuda/ with nvcc */
#include "exec/backend/cuda_lib.h"
#endif

/* The communicator a call is counted in: the root of the one it ran on. */
static Comm *root_of(Comm *c)
{
    while (c->parent) c = c->parent;
    return c;
}

void comm_count_s(Comm *c, CollectiveId id, uint64_t payload, double factor, double seconds)
{
    c = root_of(c);
    CommStats *s[2] = {&c->total, (unsigned)id < CO_COUNT_ ? &c->stats[id] : NULL};
    for (int i = 0; i < 2; i++) {
        if (!s[i]) continue;
        s[i]->calls++;
        s[i]->payload_bytes += payload;
        s[i]->bus_bytes += (double)payload * factor;
        s[i]->seconds += seconds;
    }
}

void comm_count(Comm *c, CollectiveId id, uint64_t payload, double factor)
{
    comm_count_s(c, id, payload, factor, 0.0);
}

void comm_add_s(Comm *c, CollectiveId id, double seconds)
{
    c = root_of(c);
    c->total.seconds += seconds;
    if ((unsigned)id < CO_COUNT_) c->stats[id].seconds += seconds;
}

void comm_wait(Comm *c, CollectiveId id, double seconds)
{
    c = root_of(c);
    c->total.wait_s += seconds;
    if ((unsigned)id < CO_COUNT_) c->stats[id].wait_s += seconds;
}

double comm_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

Status comm_settle(Comm *c, Err *e) { return c && c->settle ? c->settle(c, e) : ST_OK; }

Status comm_sendrecv(Comm *c, CollectiveId id, Backend *bk, const void *sendbuf, uint64_t scount, int to, void *recvbuf,
                     uint64_t rcount, int from, Dtype dtype, Err *e)
{
    if (c->sendrecv) return c->sendrecv(c, id, bk, sendbuf, scount, to, recvbuf, rcount, from, dtype, e);
    Status st;
    if (c->rank < to) {
        if ((st = c->send(c, id, bk, sendbuf, scount, dtype, to, e))) return st;
        return c->recv(c, id, bk, recvbuf, rcount, dtype, from, e);
    }
    if ((st = c->recv(c, id, bk, recvbuf, rcount, dtype, from, e))) return st;
    return c->send(c, id, bk, sendbuf, scount, dtype, to, e);
}

Status comm_reduce_scatter_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype,
                             CommReduce op, Err *e)
{
    if (!c->reduce_scatter_v)
        return err_set(e, ST_UNAVAILABLE, "communicator %s: no uneven reduce-scatter (sharded states) yet", c->name);
    return c->reduce_scatter_v(c, id, bk, buf, counts, dtype, op, e);
}

Status comm_all_gather_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype, Err *e)
{
    if (!c->all_gather_v)
        return err_set(e, ST_UNAVAILABLE, "communicator %s: no uneven all-gather (sharded states) yet", c->name);
    return c->all_gather_v(c, id, bk, buf, counts, dtype, e);
}

Status comm_all_to_all_v(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts, void *recv,
                         const uint64_t *rcounts, Dtype dtype, Err *e)
{
    if (!c->all_to_all_v)
        return err_set(e, ST_UNAVAILABLE, "communicator %s: no all-to-all (expert parallelism) yet", c->name);
    return c->all_to_all_v(c, id, bk, send, scounts, recv, rcounts, dtype, e);
}

Status comm_split(Comm *c, int color, int key, Comm **out, Err *e)
{
    *out = NULL;
    if (!c->split)
        return err_set(e, ST_UNAVAILABLE, "communicator %s: no sub-communicators (rank groups) yet", c->name);
    return c->split(c, color, key, out, e);
}

Status comm_payload(uint64_t count, Dtype dtype, uint64_t *out, Err *e)
{
    unsigned b = dtype_bytes(dtype);
    if (!b) return err_set(e, ST_USAGE, "collective: dtype %s has no size", dtype_name(dtype));
    if (__builtin_mul_overflow(count, (uint64_t)b, out))
        return err_set(e, ST_OVERFLOW, "collective: %llu elements overflow", (unsigned long long)count);
    return ST_OK;
}

static Status single_all_reduce(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dtype,
                                CommReduce op, Err *e)
{
    (void)bk, (void)op;
    uint64_t bytes = 0;
    Status st = comm_payload(n, dtype, &bytes, e);
    if (st) return st;
    if (!buf && n) return err_set(e, ST_USAGE, "all_reduce: no buffer");
    comm_count(c, id, bytes, 0.0);
    return ST_OK;
}

static Status copy_if_needed(Backend *bk, const void *send, void *recv, uint64_t bytes, Err *e)
{
    if (send == recv || !bytes) return ST_OK;
    /* device-to-device copy through the host keeps this file backend-agnostic;
     * only the single-rank path uses it and only for out-of-place calls */
    void *tmp = malloc(bytes);
    if (!tmp) return err_set(e, ST_NOMEM, "collective: out of memory for %llu bytes", (unsigned long long)bytes);
    Status st = bk->copy_to_host(bk, tmp, send, bytes, e);
    if (!st) st = bk->copy_to_device(bk, recv, tmp, bytes, e);
    free(tmp);
    return st;
}

static Status single_all_gather(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                                Dtype dtype, Err *e)
{
    uint64_t bytes = 0;
    Status st = comm_payload(n, dtype, &bytes, e);
    if (st) return st;
    comm_count(c, id, bytes, 0.0);
    return copy_if_needed(bk, send, recv, bytes, e);
}

static Status single_reduce_scatter(Comm *c, CollectiveId id, Backend *bk, const void *send, void *recv, uint64_t n,
                                    Dtype dtype, CommReduce op, Err *e)
{
    (void)op;
    uint64_t bytes = 0;
    Status st = comm_payload(n, dtype, &bytes, e);
    if (st) return st;
    comm_count(c, id, bytes, 0.0);
    return copy_if_needed(bk, send, recv, bytes, e);
}

/* Over one rank the root's buffer is every rank's: nothing moves. */
static Status single_broadcast(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dtype, int root,
                               Err *e)
{
    (void)bk;
    uint64_t bytes = 0;
    Status st = comm_payload(n, dtype, &bytes, e);
    if (st) return st;
    if (root != 0) return err_set(e, ST_USAGE, "broadcast: root %d is not a rank of 1", root);
    if (!buf && n) return err_set(e, ST_USAGE, "broadcast: no buffer");
    comm_count(c, id, bytes, 0.0);
    return ST_OK;
}

/* Over one rank the whole buffer is this rank's segment: nothing moves. */
static Status single_v(Comm *c, CollectiveId id, void *buf, const uint64_t *counts, Dtype dtype, Err *e)
{
    uint64_t bytes = 0;
    Status st = comm_payload(counts ? counts[0] : 0, dtype, &bytes, e);
    if (st) return st;
    if (!counts || (!buf && counts[0])) return err_set(e, ST_USAGE, "uneven collective: no buffer or counts");
    comm_count(c, id, bytes, 0.0);
    return ST_OK;
}

static Status single_reduce_scatter_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts,
                                      Dtype dtype, CommReduce op, Err *e)
{
    (void)bk, (void)op;
    return single_v(c, id, buf, counts, dtype, e);
}

static Status single_all_gather_v(Comm *c, CollectiveId id, Backend *bk, void *buf, const uint64_t *counts, Dtype dtype,
                                  Err *e)
{
    (void)bk;
    return single_v(c, id, buf, counts, dtype, e);
}

/* One rank: its own segment copied; nothing leaves it. */
static Status single_all_to_all_v(Comm *c, CollectiveId id, Backend *bk, const void *send, const uint64_t *scounts,
                                  void *recv, const uint64_t *rcounts, Dtype dtype, Err *e)
{
    (void)bk;
    if (!scounts || !rcounts) return err_set(e, ST_USAGE, "all_to_all_v: no counts");
    if (scounts[0] != rcounts[0])
        return err_set(e, ST_DATA, "all_to_all_v: rank 0 expects %llu elements from rank 0, which sends %llu",
                       (unsigned long long)rcounts[0], (unsigned long long)scounts[0]);
    uint64_t bytes = 0;
    Status st = comm_payload(scounts[0], dtype, &bytes, e);
    if (st) return st;
    if (bytes && (!send || !recv)) return err_set(e, ST_USAGE, "all_to_all_v: no buffer");
    if (bytes && send != recv) memmove(recv, send, bytes);
    comm_count(c, id, bytes, 0.0);
    return ST_OK;
}

/* One rank has no peer: every send or recv names a rank that does not exist. */
static Status single_no_peer(const char *what, int peer, Err *e)
{
    return err_set(e, ST_USAGE, "%s: peer %d is not another rank (one rank)", what, peer);
}

static Status single_send(Comm *c, CollectiveId id, Backend *bk, const void *buf, uint64_t n, Dtype dtype, int peer,
                          Err *e)
{
    (void)c, (void)id, (void)bk, (void)buf, (void)n, (void)dtype;
    return single_no_peer("send", peer, e);
}

static Status single_recv(Comm *c, CollectiveId id, Backend *bk, void *buf, uint64_t n, Dtype dtype, int peer, Err *e)
{
    (void)c, (void)id, (void)bk, (void)buf, (void)n, (void)dtype;
    return single_no_peer("recv", peer, e);
}

static void single_destroy(Comm *c) { free(c); }

/* One rank splits into itself: a single-rank communicator counted in c's root. */
static Status single_split(Comm *c, int color, int key, Comm **out, Err *e)
{
    (void)color, (void)key;
    Status st = comm_single_create(out, e);
    if (!st) (*out)->parent = c;
    return st;
}

Status comm_single_create(Comm **out, Err *e)
{
    Comm *c = calloc(1, sizeof *c);
    if (!c) return err_set(e, ST_NOMEM, "out of memory");
    c->name = "single";
    c->rank = 0;
    c->size = 1;
    c->all_reduce = single_all_reduce;
    c->all_gather = single_all_gather;
    c->reduce_scatter = single_reduce_scatter;
    c->broadcast = single_broadcast;
    c->reduce_scatter_v = single_reduce_scatter_v;
    c->all_gather_v = single_all_gather_v;
    c->all_to_all_v = single_all_to_all_v;
    c->send = single_send;
    c->recv = single_recv;
    c->split = single_split;
    c->destroy = single_destroy;
    *out = c;
    return ST_OK;
}

Status comm_create(const char *name, Backend *bk, Comm **out, Err *e)
{
    *out = NULL;
    if (!name || !strcmp(name, "single")) return comm_single_create(out, e);
    if (!strcmp(name, "nccl")) {
#ifdef FP8PLAN_HAVE_CUDA
        if (!bk || strcmp(bk->name, "cuda"))
            return err_set(e, ST_UNAVAILABLE, "nccl: needs the cuda backend (this run uses %s)",
                           bk ? bk->name : "none");
        return cuda_lib_comm_create(bk, 0, 1, out, e);
#else
        (void)bk;
        return err_set(e, ST_UNAVAILABLE, "nccl: fp8plan was built without the CUDA backend");
#endif
    }
    if (!strcmp(name, "mpi")) {
        if (bk && strcmp(bk->name, "cpu"))
            return err_set(e, ST_UNAVAILABLE, "mpi: carries host memory, the cpu backend's (this run uses %s)",
                           bk->name);
        return comm_mpi_create(out, e);
    }
    return err_set(e, ST_USAGE, "unknown communicator '%s' (known: single, mpi, nccl)", name);
}
