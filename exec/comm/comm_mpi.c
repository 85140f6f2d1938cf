/* exec/comm/comm_mpi.c — the MPI communicator (see comm_mpi.h): made, split and destroyed here, with its
 * point-to-point calls (a buffered send, a probed receive) and the report's gathers; its collectives, whose
 * reductions happen in rank order, are in comm_mpi_coll.c. */
#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_mpi_internal.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/backend/backend.h"
#include "util/cache.h"

/* A send in flight: MPI_Isend of a private copy of the caller's buffer. */
typedef struct {
    MPI_Request req;
    void *copy;
} Pending;

typedef struct {
    MPI_Comm comm; /* a duplicate of MPI_COMM_WORLD (or a split of one), errors returned */
    Pending *pend; /* sends not known to be complete */
    int npend, cap;
    void *scratch; /* comm_mpi_scratch: the reductions' receive buffer, scratch_bytes */
    uint64_t scratch_bytes;
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

void *comm_mpi_scratch(Comm *c, uint64_t bytes)
{
    MpiImpl *im = c->impl;
    if (bytes <= im->scratch_bytes && im->scratch) return im->scratch;
    free(im->scratch); /* nothing in it is kept: no realloc's copy */
    im->scratch = bytes < SIZE_MAX ? malloc((size_t)bytes + 1) : NULL;
    im->scratch_bytes = im->scratch ? bytes : 0;
    return im->scratch;
}

static void flush_scratch(Comm *c, uint64_t bytes)
{
    const MpiImpl *im = c->impl;
    if (im->scratch) cache_flush(im->scratch, bytes < im->scratch_bytes ? bytes : im->scratch_bytes);
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
    Status st = comm_mpi_check_call(c, "send", bk, n, dt, e);
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
    Status st = comm_mpi_check_call(c, "recv", bk, n, dt, e);
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
        free(im->scratch);
    }
    if (im && im->comm != MPI_COMM_NULL) MPI_Comm_free(&im->comm);
    free(im);
    free(c);
    int fin = 0;
    if (--live == 0 && owned_init && MPI_Finalized(&fin) == MPI_SUCCESS && !fin) MPI_Finalize();
}

static Status mpi_split(Comm *c, int color, int key, Comm **out, Err *e);

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
    comm_mpi_set_collectives(c);
    c->send = mpi_send;
    c->recv = mpi_recv;
    c->split = mpi_split;
    c->eager_limit = comm_mpi_eager_limit;
    c->flush = flush_scratch;
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
