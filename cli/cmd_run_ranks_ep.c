/* cli/cmd_run_ranks_ep.c — `fp8plan run --ep E` over several ranks: every rank's expert all-to-alls over the
 * run against the plan given the routing the run measured (planner/plan_routed.h: exact, byte for byte),
 * with the plan's uniform-routing expectation beside them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cmd_run.h"
#include "exec/comm/comm_mpi.h"

int run_rank_ep_coll(const RankData *rd, int c)
{
    return rd->ep_rows && ((c >= CO_EP_DISPATCH_FWD && c <= CO_EP_COMBINE_BWD) || c == CO_EP_COUNTS);
}

Status run_ranks_gather_ep(Comm *comm, const Model *m, RankData *rd, Err *e)
{
    if (!m->ep_rows) return ST_OK; /* the same on every rank: the plan's ep */
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

int run_rank_ep_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd)
{
    if (comm->rank != 0 || !rd->ep_rows) return 0;
    EpRouted up, pl, me;
    Err e;
    int bad = 0;
    plan_ep_uniform(p, ms->steps, &up);
    printf("\nExpert all-to-alls per rank (bytes over the run: %u steps, %llu dispatches a rank)\n"
           "  planned: the plan with the routing the run measured; uniform: the plan's uniform routing\n",
           ms->steps, (unsigned long long)rd->ep_calls);
    printf("  %4s %-17s %12s %12s %13s %13s %12s  %s\n", "rank", "collective", "planned_B", "sent_B", "planned_pay_B",
           "payload_B", "uniform_B", "verdict");
    for (int r = 0; r < rd->n; r++) {
        if (run_rank_ep(p, rd, r, &pl, &me, &e)) { /* the run's own routing does not fit its plan: a defect */
            fprintf(stderr, "fp8plan run: rank %d: %s\n", r, e.msg);
            return status_exit_code(ST_SOFTWARE);
        }
        for (int i = 0; i < EPR_COUNT_; i++) {
            int ok = pl.sent[i] == me.sent[i] && pl.payload[i] == me.payload[i];
            bad |= !ok;
            printf("  %4d %-17s %12llu %12llu %13llu %13llu %12llu  %s\n", r, ep_routed_names[i],
                   (unsigned long long)pl.sent[i], (unsigned long long)me.sent[i], (unsigned long long)pl.payload[i],
                   (unsigned long long)me.payload[i], (unsigned long long)up.sent[i], ok ? "exact" : "DIFFERS");
        }
    }
    printf("  %s\n",
           bad ? "a rank's expert all-to-alls differ from the plan with the measured routing"
               : "every rank sent the plan's expert all-to-all bytes for the measured routing, byte for byte");
    printf("  each rank also holds %llu B of expert-parallel buffers outside the arena, not in the plan's\n"
           "  terms: its experts' rows for up to ep x tokens x top-k copies (dropless routing)\n",
           (unsigned long long)rd->ep_buffer_bytes);
    fflush(stdout);
    return bad ? status_exit_code(ST_TOLERANCE) : 0;
}
