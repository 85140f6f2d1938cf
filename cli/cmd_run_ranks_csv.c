/* cli/cmd_run_ranks_csv.c — the -o rows of a run over several ranks: rank 0's
 * comparison with a leading rank column, then one row per rank × persistent
 * memory term and per rank × collective (see run_rank_csv in cmd_run.h). */
#include <string.h>

#include "cli/cmd_run.h"

static const TableCol C_RANK = {"rank", NULL, NULL, TC_STR, 0, 0};

typedef struct {
    int section, term, category, plan_b, meas_b, plan_s, meas_s, plan_v, meas_v, unit, rel, check, verdict;
} Cols;

static int col(const Table *t, const char *name) { return table_col_find(t, name); }

/* One checked row: planned against measured bytes, exact. */
static void bytes_row(Table *t, const Cols *c, int rank, const char *section, const char *term, const char *cat,
                      double planned, double measured)
{
    table_row(t);
    table_strf(t, 0, "%d", rank);
    table_str(t, c->section, section);
    table_str(t, c->term, term);
    table_str(t, c->category, cat);
    table_u64(t, c->plan_b, (uint64_t)planned);
    table_u64(t, c->meas_b, (uint64_t)measured);
    if (planned > 0) table_f64(t, c->rel, 100.0 * (measured - planned) / planned);
    table_str(t, c->check, "exact");
    table_str(t, c->verdict, measured == planned ? "ok" : "MISMATCH");
}

/* One timed row: a rank's seconds a step against its plan, within the step split's tolerance. */
static void time_row(Table *t, const Cols *c, int rank, const char *name, double planned, double measured)
{
    const double tol = compare_tolerances_default().step_time;
    char term[48];
    snprintf(term, sizeof term, "%s.time", name);
    table_row(t);
    table_strf(t, 0, "%d", rank);
    table_str(t, c->section, "rank_ep_time");
    table_str(t, c->term, term);
    table_str(t, c->category, "comm");
    table_f64(t, c->plan_s, planned);
    table_f64(t, c->meas_s, measured);
    table_f64(t, c->rel, 100.0 * check_rel_err(measured, planned));
    table_strf(t, c->check, "+-%g %%", 100.0 * tol);
    table_str(t, c->verdict, check_verdict(MEASURE_TOL, measured, planned, tol) == VERDICT_OK ? "ok" : "OUTSIDE");
}

Table *run_rank_csv(const Table *rows0, const Plan *p, const RankData *rd)
{
    const int n0 = table_ncols(rows0);
    TableCol cols[32];
    if (n0 + 1 > (int)(sizeof cols / sizeof cols[0])) return NULL;
    cols[0] = C_RANK;
    for (int i = 0; i < n0; i++) cols[i + 1] = *table_col(rows0, i);
    Table *t = table_new(cols, n0 + 1);
    if (!t) return NULL;
    table_append_keyed(t, 0, "0", 1, rows0);
    Cols c = {col(t, "section"),        col(t, "term"),      col(t, "category"),    col(t, "planned_bytes"),
              col(t, "measured_bytes"), col(t, "planned_s"), col(t, "measured_s"),  col(t, "planned_value"),
              col(t, "measured_value"), col(t, "unit"),      col(t, "rel_err_pct"), col(t, "check"),
              col(t, "verdict")};
    if (c.section < 0 || c.term < 0 || c.category < 0 || c.plan_b < 0 || c.meas_b < 0 || c.plan_s < 0 || c.meas_s < 0 ||
        c.rel < 0 || c.check < 0 || c.verdict < 0) {
        table_free(t);
        return NULL;
    }
    uint64_t planned[ARENA_TERMS];
    for (int r = 0; r < rd->n; r++) {
        const Plan *pr = run_rank_plan(p, rd, r); /* with pipeline stages, rank r's stage's */
        arena_planned(pr, planned);
        for (int m = 0; m < MT_COUNT_; m++)
            if (run_rank_term_listed(pr, m))
                bytes_row(t, &c, r, "rank_memory", arena_term_name((ArenaTerm)m),
                          mem_category_name(mem_term_category((MemTermId)m)), (double)planned[m],
                          (double)rd->placed[(size_t)r * ARENA_TERMS + m]);
        EpRouted pl, me;
        Err e;
        if (rd->ep_rows && !run_rank_ep(p, rd, r, &pl, &me, &e)) /* over the run, with the measured routing */
            for (int i = 0; i < EPR_COUNT_; i++) {
                char name[48];
                bytes_row(t, &c, r, "rank_ep_routed", ep_routed_names[i], "comm", (double)pl.sent[i],
                          (double)me.sent[i]);
                snprintf(name, sizeof name, "%s.payload", ep_routed_names[i]);
                bytes_row(t, &c, r, "rank_ep_routed", name, "comm", (double)pl.payload[i], (double)me.payload[i]);
            }
        EtpRouted tpl, tme;
        if (rd->ep_rows && rd->etp > 1 && !run_rank_etp(p, rd, r, &tpl, &tme, &e)) /* ETP: with the routing too */
            for (int i = 0; i < ETPR_COUNT_; i++) {
                char name[48];
                const char *nm = coll_name(i == ETPR_AG ? CO_ETP_AG : CO_ETP_RS);
                bytes_row(t, &c, r, "rank_ep_routed", nm, "comm", (double)tpl.sent[i], (double)tme.sent[i]);
                snprintf(name, sizeof name, "%s.payload", nm);
                bytes_row(t, &c, r, "rank_ep_routed", name, "comm", (double)tpl.payload[i], (double)tme.payload[i]);
            }
        double pls[EPR_COUNT_];
        if (rd->ep_rows && run_rank_ep_times(p, rd, r, pls)) /* its own calls' plan, per step: as the report's */
            for (int i = 0; i < EPR_COUNT_; i++)
                if (pls[i] > 0)
                    time_row(t, &c, r, ep_routed_names[i], pls[i],
                             rd->med_s[(size_t)r * CO_COUNT_ + (i == EPR_COUNTS ? CO_EP_COUNTS : ep_routed_coll(i))]);
        for (int k = 0; k < CO_COUNT_; k++) {
            if (!run_rank_coll_listed(p, rd, k) || run_rank_ep_coll(rd, k)) continue;
            const Collective *pc = &pr->coll[k];
            char name[48];
            bytes_row(t, &c, r, "rank_comm", coll_name((CollectiveId)k), "comm", (double)pc->step_bytes,
                      run_rank_bus(rd, r, k));
            table_f64(t, c.plan_s, pc->time_s);
            table_f64(t, c.meas_s, rd->med_s[(size_t)r * CO_COUNT_ + k]);
            snprintf(name, sizeof name, "%s.payload", coll_name((CollectiveId)k));
            bytes_row(t, &c, r, "rank_comm", name, "comm", (double)plan_coll_step_payload(pc),
                      run_rank_payload(rd, r, k));
        }
    }
    return t;
}
