/* reports/html_fp8.h — charts of the FP8 numerics, drawn from the tables the
 * commands print (the same rows their CSV holds):
 *   scaling      the delayed-scaling trace (reports/scaling_report.h's table):
 *                where values land per step (amax, window amax, and the
 *                saturation, minimum-subnormal and flush bounds at that step's
 *                scale, log axis) with saturating casts and kept scales marked,
 *                and the scale per step;
 *   scales       Table 1b (seed_table1b): payload and scale bytes per granularity;
 *   quant-error  relative error and flushed values per granularity and format.
 * `fp8plan scaling|scales|quant-error --format html` print these pages;
 * `report seed` and `report html` embed the figures. */
#ifndef FP8PLAN_REPORTS_HTML_FP8_H
#define FP8PLAN_REPORTS_HTML_FP8_H

#include <stdio.h>

#include "reports/html_page.h"

/* id_prefix keeps element ids unique when a page holds two traces (NULL: "scaling"). */
void html_scaling_charts(HtmlDoc *d, const Table *trace, const char *id_prefix);
void html_scales_chart(HtmlDoc *d, const Table *t1b);
void html_qerror_charts(HtmlDoc *d, const Table *qerr);

/* A page of one table and its charts; the title is the table's. */
Status html_scaling_page(FILE *f, const Table *trace, Err *e);
Status html_scales_page(FILE *f, const Table *t1b, Err *e);
Status html_qerror_page(FILE *f, const Table *qerr, Err *e);

#endif
