/* reports/fidelity_report.h — the planner against published measured runs as tables: the rows,
 * summaries and FP8/BF16 pairs that check/fidelity.h computes. */
#ifndef FP8PLAN_REPORTS_FIDELITY_REPORT_H
#define FP8PLAN_REPORTS_FIDELITY_REPORT_H

#include "check/fidelity.h"
#include "reports/table.h"

/* One row per run (id, stack, model, GPU, GPUs, recipe, throughput measured / predicted / error, memory
 * kind / measured / predicted / error, fits). */
Table *fidelity_rows_table(const FidelityRow *rows, int n);
/* The summaries: one row per group (overall, dev, hold-out, each stack, each source, Table 5, memory). */
Table *fidelity_summary_table(const FidelitySummary *s);
/* One row per planned run: its id, GPU, whether its model has experts, held out, the throughput error, the planned
 * step (s) and each term of it (TimeBreakdown, planner/plan.h) as a percentage of the step — the terms add up to the
 * step, so the shares of a row add up to 100. Which term's share grows with the error across the dev rows is which
 * term carries a bias. */
Table *fidelity_terms_table(const FidelityRow *rows, int n);
/* One row per pair (the BF16 and FP8 run ids, the FP8 recipe, held out, speed-up measured / predicted, error). */
Table *fidelity_pairs_table(const FidelityPair *p, int n);

#endif
