/* reports/run_report.h — a finished run rendered: the summary lines (loss,
 * throughput, collectives) and the rows of its comparison with the plan
 * (check/compare.h) as tables — text for the terminal, and every row
 * with every column for CSV and JSON.
 *
 * Columns of the full table (CSV header; the text tables show a subset):
 *   section,term,category,planned_bytes,measured_bytes,planned_s,measured_s,
 *   spread_pct,planned_value,measured_value,unit,rel_err_pct,check,verdict
 * section is memory, time, rate or comm; a row fills the planned/measured pair
 * of its kind (bytes, seconds or a value with its unit). */
#ifndef FP8PLAN_REPORTS_RUN_REPORT_H
#define FP8PLAN_REPORTS_RUN_REPORT_H

#include <stdio.h>

#include "check/compare.h"
#include "reports/table.h"

typedef enum {
    RUN_TABLE_TERMS = 0, /* rows of bytes and seconds (memory, time, communication bytes), the text columns */
    RUN_TABLE_RATES,     /* rows of values (rates, collective calls): term, unit, planned, measured, verdict */
    RUN_TABLE_ALL,       /* every row, every column (CSV, JSON) */
} RunTable;

/* A new table of the comparison's rows (NULL when out of memory). */
Table *run_report_table(const Comparison *c, RunTable which);

/* Summary lines: first and final loss (mean of the last 10 steps) against ln V
 * and the data's entropy (entropy < 0: unknown), the median step's tokens/s
 * against the plan's, and what the communicator moved per step. */
void run_report_summary(FILE *f, const Plan *p, const Observed *ob, double entropy);

/* The closing line: whether every exact term matched, and how many checked
 * rows failed. */
void run_report_verdict(FILE *f, const Comparison *c);

#endif
