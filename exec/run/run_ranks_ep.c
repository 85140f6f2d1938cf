/* exec/run/run_ranks_ep.c — a run with --ep E over several ranks: every rank's routing gathered on rank 0,
 * and each rank's expert all-to-alls over the run as measured and as the plan has them given the routing
 * the run measured (planner/plan_routed.h: exact, byte for byte; printed by cli/cmd_run_tables.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/run/run.h"

int run_rank_ep_coll(const RankData *rd, int c)
{
    return rd->ep_rows && ((c >= CO_EP_DISPATCH_FWD && c <= CO_EP_COMBINE_BWD) || c == CO_EP_COUNTS);
}

Status run_ranks_gather_ep(Comm *comm, const Model *m, RankData *rd, Err *e)
{
    rd->bias_whole_bytes = m->bias_whole_bytes; /* the same on every rank */
    if (!m->ep_rows) return ST_OK;              /* the same on every rank: the plan's ep */
    const size_t n = (size_t)comm->size, E = m->spec.experts;
    double counts[2] = {m->ep_counts_bytes[0], m->ep_counts_bytes[1]};
    uint64_t *calls = calloc(n, sizeof *calls);
    rd->ep_rows = calloc(n * E, sizeof *rd->ep_rows);
    rd->ep_counts = calloc(n * 2, sizeof *rd->ep_counts);
    rd->experts = (uint32_t)E;
    Status st = calls && rd->ep_rows && rd->ep_counts ? ST_OK : err_set(e, ST_NOMEM, "out of memory");
    if (!st) st = comm_gather_bytes(comm, m->ep_rows, E * sizeof *m->ep_rows, rd->ep_rows, e);
    if (!st) st = comm_gather_bytes(comm, &m->ep_calls, sizeof m->ep_calls, calls, e);
    if (!st) st = comm_gather_bytes(comm, counts, sizeof counts, rd->ep_counts, e);
    for (size_t r = 1; !st && comm->rank == 0 && r < n; r++)
        if (calls[r] != calls[0])
            st = err_set(e, ST_SOFTWARE, "expert parallelism: rank %zu made %llu dispatches, rank 0 %llu", r,
                         (unsigned long long)calls[r], (unsigned long long)calls[0]);
    if (!st) rd->ep_calls = calls[0], rd->ep_buffer_bytes = m->ep_buffer_bytes;
    free(calls);
    return st;
}

static uint64_t whole(double x) { return x < 0 ? 0 : (uint64_t)llround(x); }

int run_rank_ep(const Plan *p, const RankData *rd, int r, EpRouted *planned, EpRouted *measured, Err *e)
{
    MoeRouting rt = {.ranks = (uint32_t)rd->n, .experts = rd->experts, .calls = rd->ep_calls, .rows = rd->ep_rows};
    memset(measured, 0, sizeof *measured);
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) {
        const CommStats *s = &rd->coll[(size_t)r * CO_COUNT_ + ep_routed_coll(i)];
        measured->payload[i] = s->payload_bytes;
        measured->sent[i] = whole(s->bus_bytes); /* sums of whole bytes, each a payload x (sent / payload) */
    }
    measured->payload[EPR_COUNTS] = whole(rd->ep_counts[2 * r]);
    measured->sent[EPR_COUNTS] = whole(rd->ep_counts[2 * r + 1]);
    return plan_ep_routed(p, &rt, (uint32_t)r, planned, e) ? -1 : 0;
}
