/* reports/html_fidelity.h — `report fidelity --format html`: the planner
 * against published measured runs as a page, each chart above the table it is
 * drawn from (the rows report fidelity writes as CSV with -o DIR):
 *   fid-tok    predicted against measured tokens/s per GPU, one point per run,
 *              one colour and marker per stack, log axes, the line where
 *              predicted = measured;
 *   fid-mae    mean absolute throughput error per stack;
 *   fid-mem    predicted against measured memory (GiB) of the kind each source
 *              published (allocated, reserved or the device total), one series
 *              per kind;
 * then the summary table (overall, dev, hold-out, per stack, per source, Table 5,
 * memory), and the BF16/FP8 pairs: the measured and the planned FP8 speed-up of
 * each configuration a source measured in both precisions. */
#ifndef FP8PLAN_REPORTS_HTML_FIDELITY_H
#define FP8PLAN_REPORTS_HTML_FIDELITY_H

#include <stdio.h>

#include "reports/fidelity_report.h"
#include "reports/html_page.h"

typedef struct {
    const Table *runs;    /* fidelity_rows_table */
    const Table *summary; /* fidelity_summary_table */
    const FidelitySummary *sum;
    const char *holdout; /* the hold-out list the rows were split by */
    const Table *pairs;  /* fidelity_pairs_table; NULL: no section */
    const FidelityGroup *pairs_all, *pairs_dev, *pairs_holdout;
} FidelityPage;

Status html_fidelity_page(FILE *f, const FidelityPage *pg, Err *e);

#endif
