/* reports/html_plan.h — HTML pages of plans: `plan --format html` (one
 * recipe), `compare --format html` (recipes side by side) and the plan part of
 * `report html`. Charts (reports/chart_plan.h's tables):
 *   mem        per-GPU memory, a stacked bar per recipe in the seed's groups,
 *              with the GPU's capacity and the headroom limit as marks;
 *   comm-bytes bytes each GPU sends per step, per collective and recipe;
 *   comm-time  time per collective and recipe, exposed inside overlapped;
 *   time       the step-time breakdown, a stacked bar per recipe. */
#ifndef FP8PLAN_REPORTS_HTML_PLAN_H
#define FP8PLAN_REPORTS_HTML_PLAN_H

#include <stdio.h>

#include "planner/plan.h"
#include "reports/html_page.h"

/* The four charts for plans of one model, GPU and layout. headroom_frac: where the headroom
 * limit is drawn, as a fraction of capacity (0: not drawn). */
void html_plan_charts(HtmlDoc *d, const Plan *plans, int n, double headroom_frac);

/* One sentence naming the model, GPU and layout of p (page subtitles). */
void html_plan_layout_line(const Plan *p, char *buf, size_t size);

/* `plan --format html`: the charts, every memory term, the advice and the text report. */
Status html_plan_page(FILE *f, const Plan *p, double headroom_frac, const char *trust, Err *e);

/* `compare --format html`: the charts, then the side-by-side table (plan_compare_table). */
Status html_compare_page(FILE *f, const Plan *plans, int n, double headroom_frac, const char *trust, Err *e);

#endif
