/* exec/run/run_ranks.c — a run over several ranks: the communicator, the
 * ranks' checks, and what every rank measured gathered on rank 0 — its
 * persistent memory terms and its bytes and seconds per collective, for the
 * caller to set beside the plan's (cli/cmd_run_tables.c prints them, the -o
 * rows: cli/cmd_run_ranks_csv.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "exec/comm/comm_mpi.h"
#include "exec/comm/comm_nccl_boot.h"
#include "exec/run/run.h"

/* MPI for CPU ranks (under mpirun, or --dp given); NCCL for a GPU backend
 * (its buffers are part of what the run measures): under mpirun its ranks are
 * bootstrapped through MPI (one GPU per rank), otherwise one rank; the
 * single-rank copy when NCCL cannot start for one rank. */
Status run_make_comm(const RunSpec *a, Backend *bk, Comm **comm, Err *e)
{
    int ranks = a->dp || a->tp > 1 || a->pp > 1 || comm_mpi_launched();
    if ((a->tp > 1 || a->pp > 1) && strcmp(bk->name, "cpu"))
        return err_set(e, ST_UNAVAILABLE,
                       "--tp/--pp --backend %s: tensor and pipeline parallelism run on the cpu backend only so far",
                       bk->name);
    if (!strcmp(bk->name, "cpu")) return ranks ? comm_create("mpi", bk, comm, e) : comm_single_create(comm, e);
    Status st = comm_mpi_launched() ? comm_nccl_mpi_create(bk, comm, e) : comm_create("nccl", bk, comm, e);
    if (!st) { /* without mpirun, --dp > 1 is refused by run_resolve_ranks (one rank) */
        if (!a->quiet && !(*comm)->rank)
            run_say("  communicator: %s, %d rank%s\n", (*comm)->name, (*comm)->size, (*comm)->size > 1 ? "s" : "");
        return ST_OK;
    }
    if (!a->quiet) run_say("  communicator: NCCL unavailable (%s); single-rank copies instead\n", e->msg);
    return comm_single_create(comm, e); /* several ranks never get here: comm_nccl_mpi_create stopped them */
}

uint32_t run_device_comms(const Comm *comm) { return comm && comm->name && !strncmp(comm->name, "nccl ", 5); }

/* The ranks: --tp x --pp must divide the number mpirun started and --dp be the
 * rest; the global batch a multiple of mbs x dp (default mbs x dp). Ranks other
 * than 0 print and write nothing (with sharded states or TP/PP ranks they hand
 * their part to rank 0's checkpoint). An exit code. */
int run_resolve_ranks(RunSpec *a, const Comm *comm)
{
    uint32_t n = (uint32_t)comm->size, t = (a->tp ? a->tp : 1) * (a->pp ? a->pp : 1);
    if (n % t && n == 1)
        return run_usage("--tp %u --pp %u needs %u ranks or a multiple (mpirun -np %u fp8plan run ...); this run "
                         "has 1",
                         a->tp ? a->tp : 1, a->pp ? a->pp : 1, t, t);
    if (n % t)
        return run_usage("--tp %u x --pp %u does not divide the %u ranks mpirun started", a->tp ? a->tp : 1,
                         a->pp ? a->pp : 1, n);
    n /= t; /* data-parallel ranks */
    if (a->dp && a->dp != n && t > 1)
        return run_usage("--dp %u --tp %u --pp %u needs %u ranks (mpirun -np %u); this run has %d", a->dp,
                         a->tp ? a->tp : 1, a->pp ? a->pp : 1, a->dp * t, a->dp * t, comm->size);
    if (a->dp && a->dp != n)
        return run_usage("--dp %u needs %u ranks (mpirun -np %u fp8plan run ...); this run has %u", a->dp, a->dp, a->dp,
                         n);
    a->dp = n;
    a->rank = comm->rank;
    uint64_t unit = (uint64_t)a->mbs * n;
    if (!a->gbs) a->gbs = (uint32_t)unit;
    if (unit > (1u << 20) || a->gbs % unit)
        return run_usage("--gbs %u is not a multiple of --mbs %u x dp %u (global batch = micro-batches x micro-batch "
                         "x data-parallel ranks)",
                         a->gbs, a->mbs, n);
    if (a->rank) {
        a->quiet = 1;
        /* --save stays: sharded states are gathered on rank 0; want_routing too: each rank records its part */
        a->out = a->trace = a->loss_log = a->routing_log = NULL;
    }
    return 0;
}

uint32_t run_stage_of(const RunSpec *a, int r) { return (uint32_t)r / ((a->tp ? a->tp : 1) * a->dp); }

/* Bytes this rank sent per step on collective c (bus bytes, nccl-tests' convention: what the plan's
 * step_bytes counts, in whole bytes) and the payload per step. */
double run_rank_bus(const RankData *rd, int r, int c)
{
    return comm_whole_bytes(rd->coll[(size_t)r * CO_COUNT_ + c].bus_bytes / rd->steps);
}

double run_rank_payload(const RankData *rd, int r, int c)
{
    return (double)rd->coll[(size_t)r * CO_COUNT_ + c].payload_bytes / rd->steps;
}

int run_rank_term_listed(const Plan *p, int t)
{
    return t < MT_COUNT_ && arena_term_persistent((ArenaTerm)t) && arena_holds((MemTermId)t) &&
           plan_term_applies(p, (MemTermId)t);
}

int run_rank_coll_listed(const Plan *p, const RankData *rd, int c)
{
    int any = p->coll[c].calls != 0;
    for (int r = 0; r < rd->n; r++)
        any |= rd->coll[(size_t)r * CO_COUNT_ + c].calls != 0 || run_rank_plan(p, rd, r)->coll[c].calls != 0;
    return any;
}

uint32_t run_rank_stage(const RankData *rd, int r)
{
    return rd->stages > 1 ? (uint32_t)r / ((uint32_t)rd->n / rd->stages) : 0;
}

const Plan *run_rank_plan(const Plan *p, const RankData *rd, int r)
{
    return rd->stage_plan ? &rd->stage_plan[run_rank_stage(rd, r)] : p;
}

/* Rank 0: the plan of every pipeline stage (the run's input, stage_view s + 1). */
static Status stage_plans(const Plan *p, RankData *rd, Err *e)
{
    rd->stages = p->in.pp > 1 ? p->in.pp : 1;
    if (rd->stages == 1) return ST_OK;
    rd->stage_plan = calloc(rd->stages, sizeof *rd->stage_plan);
    if (!rd->stage_plan) return err_set(e, ST_NOMEM, "out of memory");
    Status st = ST_OK;
    for (uint32_t s = 0; !st && s < rd->stages; s++) {
        PlanInput in = p->in;
        in.stage_view = s + 1;
        st = plan_build(&in, &rd->stage_plan[s], e);
    }
    return st;
}

void run_ranks_free(RankData *rd)
{
    free(rd->ep_rows);
    free(rd->ep_counts);
    free(rd->ep_call_s);
    free(rd->ep_rank_calls);
    free(rd->outside);
    free(rd->route_counts);
    free(rd->stage_plan);
    free(rd->placed);
    free(rd->coll);
    free(rd->med_s);
    memset(rd, 0, sizeof *rd);
}

Status run_ranks_gather(Comm *comm, const Plan *p, const Measurement *ms, RankData *rd, Err *e)
{
    memset(rd, 0, sizeof *rd);
    const size_t n = (size_t)comm->size;
    rd->n = comm->size;
    rd->steps = ms->steps ? (double)ms->steps : 1.0;
    double med[CO_COUNT_], spread;
    for (int c = 0; c < CO_COUNT_; c++) {
        measure_stats(ms->coll_s + (size_t)c * ms->cap, measure_timed_from(ms), ms->steps, ms->sorted, &med[c],
                      &spread);
        if (isnan(med[c])) med[c] = 0.0;
    }
    rd->placed = calloc(n * ARENA_TERMS, sizeof *rd->placed);
    rd->coll = calloc(n * CO_COUNT_, sizeof *rd->coll);
    rd->med_s = calloc(n * CO_COUNT_, sizeof *rd->med_s);
    if (!rd->placed || !rd->coll || !rd->med_s) return err_set(e, ST_NOMEM, "out of memory");
    Status st = comm_gather_bytes(comm, ms->placed, sizeof ms->placed, rd->placed, e);
    if (!st) st = comm_gather_stats(comm, ms->coll, CO_COUNT_, rd->coll, e);
    if (!st) st = comm_gather_bytes(comm, med, sizeof med, rd->med_s, e);
    if (!st && comm->rank == 0) st = stage_plans(p, rd, e);
    return st;
}
