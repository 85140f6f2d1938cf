/* cli/cmd_run_tables.c — `fp8plan run` over several ranks: what every rank measured (gathered on rank 0
 * by exec/run/run_ranks.c) printed beside the plan — its persistent memory terms and its bytes and seconds
 * per collective — and, with --ep E, every rank's expert all-to-alls against the plan given the routing
 * the run measured (planner/plan_routed.h: exact, byte for byte), with the plan's uniform-routing
 * expectation beside them. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cmd_run.h"

/* "  name planned lo hi ok/n verdict" over the ranks' values v(r); 1 when a rank differs. */
static int line(const char *name, uint64_t planned, const double *v, int n)
{
    int ok = 0;
    double lo = v[0], hi = v[0];
    for (int r = 0; r < n; r++) {
        lo = v[r] < lo ? v[r] : lo, hi = v[r] > hi ? v[r] : hi;
        ok += v[r] == (double)planned;
    }
    printf("  %-30s %12llu %12.0f %12.0f %5d/%-3d  %s\n", name, (unsigned long long)planned, lo, hi, ok, n,
           ok == n ? "exact" : "DIFFERS");
    return ok != n;
}

/* The ranks of stage s (all without stages) into idx; their count. */
static int stage_ranks(const RankData *rd, uint32_t s, int *idx)
{
    int k = 0;
    for (int r = 0; r < rd->n; r++)
        if (run_rank_stage(rd, r) == s) idx[k++] = r;
    return k;
}

/* "  stage s (ranks a..b, L layers):" before a stage's lines (nothing without stages). */
static void stage_head(const RankData *rd, const Plan *ps, uint32_t s, const int *idx, int k)
{
    if (rd->stages > 1)
        printf("  stage %u (ranks %d..%d, %u layers; the plan of stage %u):\n", s, idx[0], idx[k - 1], ps->stage_layers,
               ps->stage);
}

/* "  each rank also holds N B <what>" (rd->outside[r]); where the stages hold different amounts
 * (their layers differ), each stage's: "  each rank of stage 0 also holds N B, of stage 1 M B <what>" (a..b
 * where a stage's ranks differ). */
static void outside_line(const RankData *rd, const char *what)
{
    uint64_t lo = rd->outside[0], hi = lo;
    for (int r = 0; r < rd->n; r++) {
        const uint64_t v = rd->outside[r];
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    if (lo == hi) {
        printf("  each rank also holds %llu B %s", (unsigned long long)lo, what);
        return;
    }
    printf("  each rank");
    for (uint32_t s = 0; s < rd->stages; s++) {
        uint64_t a = UINT64_MAX, b = 0;
        for (int r = 0; r < rd->n; r++) {
            const uint64_t v = rd->outside[r];
            if (run_rank_stage(rd, r) == s) a = v < a ? v : a, b = v > b ? v : b;
        }
        if (a == b)
            printf("%s of stage %u%s %llu B", s ? "," : "", s, s ? "" : " also holds", (unsigned long long)a);
        else
            printf("%s of stage %u%s %llu..%llu B", s ? "," : "", s, s ? "" : " also holds", (unsigned long long)a,
                   (unsigned long long)b);
    }
    printf(" %s", what);
}

int run_rank_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd)
{
    if (comm->rank != 0) return 0;
    const int n = rd->n;
    double *v = calloc((size_t)n, sizeof *v);
    int *idx = calloc((size_t)n, sizeof *idx);
    if (!v || !idx) {
        free(v);
        free(idx);
        return cli_nomem(RUN_CMD, "the table of ranks");
    }
    uint64_t planned[ARENA_TERMS];
    int bad_mem = 0, bad = 0;
    printf("\nPersistent memory per rank (the plan's per-GPU term at dp %u%s%s%s)\n", p->in.dp,
           p->in.sharding != SHARD_NONE ? ", states sharded: " : "",
           p->in.sharding != SHARD_NONE ? sharding_name(p->in.sharding) : "",
           rd->stages > 1 ? "; each stage's ranks against that stage's plan" : "");
    printf("  %-30s %12s %12s %12s %9s  %s\n", "term", "planned_B", "rank_min_B", "rank_max_B", "ranks_ok", "verdict");
    for (uint32_t s = 0; s < rd->stages; s++) {
        const int k = stage_ranks(rd, s, idx);
        const Plan *ps = run_rank_plan(p, rd, idx[0]);
        arena_planned(ps, planned);
        stage_head(rd, ps, s, idx, k);
        for (int t = 0; t < MT_COUNT_; t++) {
            if (!run_rank_term_listed(ps, t)) continue;
            for (int i = 0; i < k; i++) v[i] = (double)rd->placed[(size_t)idx[i] * ARENA_TERMS + t];
            bad_mem |= line(arena_term_name((ArenaTerm)t), planned[t], v, k);
        }
    }
    printf("  %s\n", bad_mem ? "a rank's persistent memory differs from the plan's"
                             : "every rank holds the plan's persistent bytes, byte for byte");
    printf("\nCollectives per rank (bytes each rank sent per step over %u steps; plan for dp %u; %s)\n", ms->steps,
           p->in.dp, comm->name);
    printf("  %-30s %12s %12s %12s %9s  %s\n", "collective", "planned_B", "rank_min_B", "rank_max_B", "ranks_ok",
           "verdict");
    for (uint32_t s = 0; s < rd->stages; s++) {
        const int k = stage_ranks(rd, s, idx);
        const Plan *ps = run_rank_plan(p, rd, idx[0]);
        stage_head(rd, ps, s, idx, k);
        for (int c = 0; c < CO_COUNT_; c++) {
            if (!run_rank_coll_listed(p, rd, c) || run_rank_ep_coll(rd, c)) continue; /* EP: its own table */
            const Collective *pc = &ps->coll[c];
            char name[48];
            for (int i = 0; i < k; i++) v[i] = run_rank_bus(rd, idx[i], c);
            bad |= line(coll_name((CollectiveId)c), pc->step_bytes, v, k);
            for (int i = 0; i < k; i++) v[i] = run_rank_payload(rd, idx[i], c);
            snprintf(name, sizeof name, "%s.payload", coll_name((CollectiveId)c));
            bad |= line(name, plan_coll_step_payload(pc), v, k);
        }
    }
    printf("  %s%s\n",
           bad ? "a rank's bytes differ from the plan's" : "every rank sent the plan's bytes, byte for byte",
           rd->ep_rows ? " (the expert all-to-alls: below, with the measured routing)" : "");
    printf("  seconds per step inside each collective (median over steps %u..%u), rank 0 .. %d:\n",
           ms->first_step + measure_timed_from(ms) + 1, ms->first_step + ms->steps, n - 1);
    for (int c = 0; c < CO_COUNT_; c++) {
        if (!run_rank_coll_listed(p, rd, c)) continue;
        printf("  %-30s", coll_name((CollectiveId)c));
        for (int r = 0; r < n; r++) printf(" %.6f", rd->med_s[(size_t)r * CO_COUNT_ + c]);
        printf("\n");
    }
    fflush(stdout);
    free(v);
    free(idx);
    return bad || bad_mem ? status_exit_code(ST_TOLERANCE) : 0;
}

/* Every rank's expert all-to-all seconds a step (median over the timed steps) against its own plan: where the
 * host profile has per-message fits, each call planned from the messages that rank's call sent and received
 * (run_rank_ep_times), as rank 0's step split; checked within the step split's tolerance. 1 when one is outside. */
static int ep_time_rows(const Plan *p, const Measurement *ms, const RankData *rd)
{
    const double tol = compare_tolerances_default().step_time;
    int bad = 0, routed = 0;
    double pl[EPR_COUNT_];
    for (int r = 0; r < rd->n; r++) routed |= run_rank_ep_times(p, rd, r, pl);
    if (!routed) return 0; /* no per-message fits: rank 0's step split has the uniform routing's rows */
    printf("  seconds per step (median over steps %u..%u), each rank against its own calls' plan (+-%.0f %%):\n",
           ms->first_step + measure_timed_from(ms) + 1, ms->first_step + ms->steps, 100.0 * tol);
    printf("  %4s %-17s %12s %12s %9s  %s\n", "rank", "collective", "planned_s", "measured_s", "error", "verdict");
    for (int r = 0; r < rd->n; r++) {
        run_rank_ep_times(p, rd, r, pl);
        for (int i = 0; i < EPR_COUNT_; i++) {
            const int k = i == EPR_COUNTS ? CO_EP_COUNTS : (int)ep_routed_coll(i);
            const double me = rd->med_s[(size_t)r * CO_COUNT_ + k];
            if (!(pl[i] > 0)) continue; /* not planned (a GPU plan's counts) */
            const Verdict v = check_verdict(MEASURE_TOL, me, pl[i], tol);
            bad |= v != VERDICT_OK;
            printf("  %4d %-17s %12.3e %12.3e %+8.1f%%  %s\n", r, ep_routed_names[i], pl[i], me,
                   100.0 * check_rel_err(me, pl[i]), v == VERDICT_OK ? "ok" : "OUTSIDE");
        }
    }
    return bad;
}

/* Rank r's ETP gather and reduce-scatter with the measured routing (etp > 1): 1 when one differs or cannot be
 * planned. */
static int etp_rows(const Plan *p, const Measurement *ms, const RankData *rd, int r)
{
    if (rd->etp <= 1) return 0;
    EtpRouted pl, me;
    Err e;
    if (run_rank_etp(p, rd, r, &pl, &me, &e)) {
        fprintf(stderr, "fp8plan run: rank %d: %s\n", r, e.msg);
        return 1;
    }
    const Plan *pr = run_rank_plan(p, rd, r);
    int bad = 0;
    for (int i = 0; i < ETPR_COUNT_; i++) {
        const CollectiveId id = i == ETPR_AG ? CO_ETP_AG : CO_ETP_RS;
        const Collective *c = &pr->coll[id];
        const int ok = pl.sent[i] == me.sent[i] && pl.payload[i] == me.payload[i];
        bad |= !ok;
        printf("  %4d %-17s %12llu %12llu %13llu %13llu %12llu  %s\n", r, coll_name(id), (unsigned long long)pl.sent[i],
               (unsigned long long)me.sent[i], (unsigned long long)pl.payload[i], (unsigned long long)me.payload[i],
               (unsigned long long)c->step_bytes * ms->steps, ok ? "exact" : "DIFFERS");
    }
    return bad;
}

int run_rank_ep_table(const Plan *p, const Comm *comm, const Measurement *ms, const RankData *rd)
{
    if (comm->rank != 0) return 0;
    if (!rd->ep_rows) { /* ep 1 x etp > 1: the experts' rows are the arena's (model_etp_arena); what stays outside */
        uint64_t any = 0;
        for (int r = 0; rd->outside && r < rd->n; r++) any |= rd->outside[r];
        if (any)
            outside_line(rd,
                         "of expert-parallel buffers outside the arena, not in the plan's\n"
                         "  terms: its experts' row counts (and delayed scaling's expert amax records to reduce)\n");
        return 0;
    }
    EpRouted up, pl, me;
    Err e;
    int bad = 0;
    printf("\nExpert all-to-alls per rank (bytes over the run: %u steps, %llu dispatches a rank%s)\n"
           "  planned: the plan with the routing the run measured; uniform: the plan's uniform routing\n",
           ms->steps, (unsigned long long)rd->ep_calls,
           rd->stages > 1 ? " of stage 0; each stage against its plan" : "");
    printf("  %4s %-17s %12s %12s %13s %13s %12s  %s\n", "rank", "collective", "planned_B", "sent_B", "planned_pay_B",
           "payload_B", "uniform_B", "verdict");
    for (int r = 0; r < rd->n; r++) {
        plan_ep_uniform(run_rank_plan(p, rd, r), ms->steps, &up); /* with stages, rank r's stage's */
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
        bad |= etp_rows(p, ms, rd, r);
    }
    printf("  %s\n",
           bad ? "a rank's expert all-to-alls differ from the plan with the measured routing"
               : "every rank sent the plan's expert all-to-all bytes for the measured routing, byte for byte");
    if (rd->outside)
        outside_line(rd, "of expert-parallel buffers outside the arena, not in the plan's\n"
                         "  terms: its experts' rows for up to ep x etp x tokens x top-k copies (dropless routing)\n");
    bad |= ep_time_rows(p, ms, rd);
    fflush(stdout);
    return bad ? status_exit_code(ST_TOLERANCE) : 0;
}
