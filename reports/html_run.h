/* reports/html_run.h — `run --format html -o FILE`: a training run against
 * its plan as charts, from tables the command builds out of its measurement
 * (the same rows its CSV holds):
 *   run-memory  planned and measured bytes per memory term, the accepted band
 *               (exact: the planned bytes; at most the plan; or a tolerance)
 *               drawn over the measured bar;
 *   run-time    planned and measured seconds per phase and device category;
 *   run-comm    bytes sent per step, planned and counted by the communicator
 *               (all collectives together: per-collective counts come with the
 *               executor's Measurement, issue 10);
 *   run-loss    the loss per step;
 *   run-phases  seconds per step of each phase.
 * Then the rows -o writes as CSV. */
#ifndef FP8PLAN_REPORTS_HTML_RUN_H
#define FP8PLAN_REPORTS_HTML_RUN_H

#include <stdio.h>

#include "reports/table.h"

typedef struct {
    const char *title, *subtitle;
    /* term, category, planned_bytes, measured_bytes, accept_lo_bytes, accept_hi_bytes, check, verdict: the
     * memory rows with a planned and a measured value */
    const Table *memory;
    /* term, planned_s, measured_s, accept_lo_s, accept_hi_s, spread_pct, check, verdict */
    const Table *time;
    /* term, planned_bytes, measured_bytes (per step) */
    const Table *comm;
    /* step, loss, forward_s, backward_s, communication_s, optimizer_s, step_s */
    const Table *steps;
    const Table *csv;    /* the report's rows as -o writes them in CSV */
    const char *summary; /* the text report's closing lines */
} RunPage;

Status html_run_page(FILE *f, const RunPage *pg, Err *e);

#endif
