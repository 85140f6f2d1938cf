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
    return rd->ep_rows && ((c >= CO_EP_DISPATCH_FWD && c <= CO_EP_COMBINE_BWD) || c == CO_EP_COUNTS ||
                           (rd->etp > 1 && (c == CO_ETP_AG || c == CO_ETP_RS)));
}

Status run_ranks_gather_ep(Comm *comm, const Model *m, RankData *rd, Err *e)
{
    const size_t n = (size_t)comm->size, E = m->spec.experts;
    uint64_t outside = m->ep_buffer_bytes; /* per stage (its layers') */
    if ((rd->outside = calloc(n, sizeof *rd->outside)) == NULL) return err_set(e, ST_NOMEM, "out of memory");
    Status st0 = comm_gather_bytes(comm, &outside, sizeof outside, rd->outside, e);
    if (st0 || m->ep <= 1 || !m->moe_layers_all) return st0; /* the same on every rank: the plan's ep, the model */
    double counts[2] = {m->ep_counts_bytes[0], m->ep_counts_bytes[1]}, call_s[EPR_COUNT_] = {0};
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) /* this rank's calls, each planned from its own messages */
        if (m->ep_msg_calls[i]) call_s[i] = m->ep_msg_s[i] / (double)m->ep_msg_calls[i];
    uint64_t *calls = calloc(n, sizeof *calls), *none = m->ep_rows ? NULL : calloc(E, sizeof *none);
    rd->ep_rows = calloc(n * E, sizeof *rd->ep_rows);
    rd->ep_counts = calloc(n * 2, sizeof *rd->ep_counts);
    rd->ep_call_s = calloc(n * EPR_COUNT_, sizeof *rd->ep_call_s);
    rd->experts = (uint32_t)E;
    rd->etp = m->etp;
    Status st = calls && rd->ep_rows && rd->ep_counts && rd->ep_call_s && (m->ep_rows || none)
                    ? ST_OK
                    : err_set(e, ST_NOMEM, "out of memory");
    /* a stage of dense layers only routed nothing (no EP state: its rows 0) */
    if (!st) st = comm_gather_bytes(comm, m->ep_rows ? m->ep_rows : none, E * sizeof *none, rd->ep_rows, e);
    free(none);
    if (!st) st = comm_gather_bytes(comm, &m->ep_calls, sizeof m->ep_calls, calls, e);
    if (!st) st = comm_gather_bytes(comm, counts, sizeof counts, rd->ep_counts, e);
    if (!st) st = comm_gather_bytes(comm, call_s, sizeof call_s, rd->ep_call_s, e);
    /* a stage's ranks dispatch alike (its MoE layers x micro-batches x steps); stages hold other layers */
    const size_t per = n / (rd->stages > 1 ? rd->stages : 1);
    for (size_t r = 1; !st && comm->rank == 0 && r < n; r++) {
        size_t r0 = r / per * per; /* the stage's first rank */
        if (calls[r] != calls[r0])
            st = err_set(e, ST_SOFTWARE, "expert parallelism: rank %zu made %llu dispatches, rank %zu %llu", r,
                         (unsigned long long)calls[r], r0, (unsigned long long)calls[r0]);
    }
    if (!st)
        rd->ep_calls = calls[0], rd->ep_buffer_bytes = m->ep_buffer_bytes, rd->ep_rank_calls = calls;
    else
        free(calls);
    return st;
}

void run_routing_stages(const uint64_t *hdr, const uint64_t *counts, const double *aux, int ranks, uint64_t layers,
                        uint64_t experts, uint64_t *out, double *aux_out)
{
    const uint64_t N = layers * experts; /* a rank's row: every MoE layer of the model, its stage's filled */
    *aux_out = 0.0;
    for (int r = 0; r < ranks; r++) {
        const uint64_t *h = hdr + 3 * (uint64_t)r; /* moe_first, moe_layers, dp_rank */
        if (h[2]) continue;                        /* DP rank 0 of each stage: rank 0's pipeline */
        *aux_out += aux[r];                        /* stage by stage, as one rank sums its layers */
        for (uint64_t i = h[0] * experts; i < (h[0] + h[1]) * experts && i < N; i++) out[i] = counts[r * N + i];
    }
}

Status run_ranks_gather_routing(Comm *comm, const Model *m, RankData *rd, Err *e)
{
    if (m->pp <= 1 || !m->moe_layers_all) return ST_OK; /* one stage: the model's own counts are the whole */
    const size_t n = (size_t)comm->size, E = m->spec.experts, N = (size_t)m->moe_layers_all * E;
    const uint64_t mine[3] = {m->moe_first, m->moe_layers, m->dp_rank};
    uint64_t *row = calloc(N, sizeof *row), *hdr = calloc(n * 3, sizeof *hdr), *all = calloc(n * N, sizeof *all);
    double *aux = calloc(n, sizeof *aux);
    rd->route_counts = calloc(N, sizeof *rd->route_counts);
    Status st = row && hdr && all && aux && rd->route_counts ? ST_OK : err_set(e, ST_NOMEM, "out of memory");
    if (!st && m->moe_layers) memcpy(row + (size_t)m->moe_first * E, m->moe_counts, m->moe_layers * E * sizeof *row);
    if (!st) st = comm_gather_bytes(comm, row, N * sizeof *row, all, e);
    if (!st) st = comm_gather_bytes(comm, mine, sizeof mine, hdr, e);
    if (!st) st = comm_gather_bytes(comm, &m->moe_aux, sizeof m->moe_aux, aux, e);
    if (!st && comm->rank == 0) {
        run_routing_stages(hdr, all, aux, comm->size, m->moe_layers_all, E, rd->route_counts, &rd->moe_aux);
        rd->route_layers = m->moe_layers_all;
    }
    free(row);
    free(hdr);
    free(all);
    free(aux);
    return st;
}

static uint64_t whole(double x) { return x < 0 ? 0 : (uint64_t)llround(x); }

/* Rank r's stage's routing (its tp x dp ranks, consecutive) and r's place in it (*r0: the stage's first rank). */
static MoeRouting stage_routing(const RankData *rd, int r, uint32_t *r0)
{
    const uint32_t per = (uint32_t)rd->n / (rd->stages > 1 ? rd->stages : 1);
    *r0 = (uint32_t)r / per * per;
    return (MoeRouting){.ranks = per,
                        .experts = rd->experts,
                        .calls = rd->ep_rank_calls[*r0],
                        .rows = rd->ep_rows + (uint64_t)*r0 * rd->experts};
}

int run_rank_etp(const Plan *p, const RankData *rd, int r, EtpRouted *planned, EtpRouted *measured, Err *e)
{
    if (!rd->ep_rows || rd->etp <= 1) {
        err_set(e, ST_SOFTWARE, "no expert-tensor-parallel rows");
        return -1;
    }
    uint32_t r0;
    MoeRouting rt = stage_routing(rd, r, &r0);
    for (int i = 0; i < ETPR_COUNT_; i++) {
        const CommStats *s = &rd->coll[(size_t)r * CO_COUNT_ + (i == ETPR_AG ? CO_ETP_AG : CO_ETP_RS)];
        measured->payload[i] = s->payload_bytes;
        measured->sent[i] = (uint64_t)llround(s->bus_bytes);
    }
    return plan_etp_routed(run_rank_plan(p, rd, r), &rt, (uint32_t)r - r0, planned, e) ? -1 : 0;
}

int run_rank_ep(const Plan *p, const RankData *rd, int r, EpRouted *planned, EpRouted *measured, Err *e)
{
    /* rank r against its stage's plan and routing: the stage's ranks (tp 1: its DP ranks, consecutive) */
    uint32_t r0;
    MoeRouting rt = stage_routing(rd, r, &r0);
    memset(measured, 0, sizeof *measured);
    for (int i = EPR_DISPATCH_FWD; i < EPR_COUNT_; i++) {
        const CommStats *s = &rd->coll[(size_t)r * CO_COUNT_ + ep_routed_coll(i)];
        measured->payload[i] = s->payload_bytes;
        measured->sent[i] = whole(s->bus_bytes); /* sums of whole bytes, each a payload x (sent / payload) */
    }
    measured->payload[EPR_COUNTS] = whole(rd->ep_counts[2 * r]);
    measured->sent[EPR_COUNTS] = whole(rd->ep_counts[2 * r + 1]);
    return plan_ep_routed(run_rank_plan(p, rd, r), &rt, (uint32_t)r - r0, planned, e) ? -1 : 0;
}

int run_rank_ep_times(const Plan *p, const RankData *rd, int r, double out[EPR_COUNT_])
{
    const Plan *pr = run_rank_plan(p, rd, r); /* with stages, rank r's stage's */
    const double *call_s = rd->ep_call_s ? rd->ep_call_s + (size_t)r * EPR_COUNT_ : NULL;
    int routed = 0;
    for (int i = 0; i < EPR_COUNT_; i++) {
        const double c = call_s && i != EPR_COUNTS ? call_s[i] : 0;
        out[i] = i == EPR_COUNTS ? pr->coll[CO_EP_COUNTS].time_s : plan_ep_routed_time(pr, i, c);
        routed |= c > 0;
    }
    return routed;
}
