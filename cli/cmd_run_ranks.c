/* cli/cmd_run_ranks.c — `fp8plan run` over several ranks: every rank's bytes
 * per collective beside the plan's, printed by rank 0. */
#include <stdlib.h>

#include "cli/cmd_run.h"
#include "exec/comm/comm_mpi.h"

/* Bytes this rank sent per step on collective i (bus bytes, nccl-tests'
 * convention: what the plan's step_bytes counts). */
static double per_step(const CommStats *s, const Measurement *ms)
{
    return s->bus_bytes / (double)(ms->steps ? ms->steps : 1);
}

int run_rank_table(const Plan *p, Comm *comm, const Measurement *ms)
{
    Err e;
    const int n = comm->size;
    CommStats *all = calloc((size_t)n * CO_COUNT_, sizeof *all);
    if (!all) return run_fail((err_set(&e, ST_NOMEM, "out of memory"), &e));
    if (comm_gather_stats(comm, ms->coll, CO_COUNT_, all, &e)) {
        free(all);
        return run_fail(&e);
    }
    int bad = 0;
    if (comm->rank == 0) {
        printf("\nCollectives per rank (bytes each rank sent per step over %u steps; plan for dp %u; %s)\n", ms->steps,
               p->in.dp, comm->name);
        printf("  %-22s %16s %16s %16s %9s  %s\n", "collective", "planned_B", "rank_min_B", "rank_max_B", "ranks_ok",
               "verdict");
        for (int i = 0; i < CO_COUNT_; i++) {
            const Collective *pc = &p->coll[i];
            int any = pc->calls != 0, ok = 0;
            double lo = 0, hi = 0;
            for (int r = 0; r < n; r++) {
                double b = per_step(&all[(size_t)r * CO_COUNT_ + i], ms);
                any |= all[(size_t)r * CO_COUNT_ + i].calls != 0;
                lo = r == 0 || b < lo ? b : lo;
                hi = r == 0 || b > hi ? b : hi;
                ok += b == (double)pc->step_bytes;
            }
            if (!any) continue;
            bad |= ok != n;
            printf("  %-22s %16llu %16.0f %16.0f %5d/%-3d  %s\n", pc->name, (unsigned long long)pc->step_bytes, lo, hi,
                   ok, n, ok == n ? "exact" : "DIFFERS");
        }
        printf("  %s\n",
               bad ? "a rank's bytes differ from the plan's" : "every rank sent the plan's bytes, byte for byte");
        fflush(stdout);
    }
    free(all);
    return bad ? status_exit_code(ST_TOLERANCE) : 0;
}
