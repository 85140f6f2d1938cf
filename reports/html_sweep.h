/* reports/html_sweep.h — `sweep --format html`: every layout that fits as a
 * point (memory per GPU against tokens/s, one colour and marker shape per
 * recipe), the Pareto front (no other layout has both less memory and more
 * tokens/s) and the chosen plan (rank 1) marked, then the front and the best K
 * (the rows `sweep --format csv` writes) as tables. */
#ifndef FP8PLAN_REPORTS_HTML_SWEEP_H
#define FP8PLAN_REPORTS_HTML_SWEEP_H

#include <stdio.h>

#include "planner/sweep.h"
#include "reports/table.h"

/* The points table: recipe, tp, pp, vpp, cp, dp, mbs, recompute, sharding, total_bytes,
 * tokens_per_s, step_time_s. NULL when out of memory. */
Table *sweep_points_new(void);
/* SweepSpec.on_fit callback: appends p to the points table ctx. */
void sweep_points_add(const Plan *p, void *ctx);

/* Lines of the points table on the Pareto front of (total_bytes lower, tokens_per_s higher), by
 * memory ascending: a point is on it when every point with no more memory has fewer tokens/s (of
 * equal points the first). Returns how many (at most max). */
int sweep_pareto(const Table *points, int *lines, int max);

/* The points the sweep chart draws, in the points' order: of each recipe the 2 fastest layouts in each of 160
 * equal slices of the memory axis (min to max total_bytes). NULL when out of memory. */
Table *sweep_points_drawn(const Table *points);

typedef struct {
    const Table *points; /* every fitting layout */
    const Plan *top;     /* the best plans, rank 1 first */
    int ntop;
    const char *stats_text; /* what the text output says about the sweep (counts, invalid by reason) */
    const char *title, *subtitle;
    uint64_t capacity_bytes, limit_bytes; /* the GPU's memory and the fitting limit (max_mem_frac of it), drawn */
    double limit_frac;                    /* limit_bytes / capacity_bytes as the flag gave it, for the legend */
} SweepPage;

Status html_sweep_page(FILE *f, const SweepPage *pg, Err *e);

#endif
