/* reports/html_whatif.h — `report html`: a what-if session on one page, the
 * TUI's screens as charts for one model, GPU and layout across recipes:
 * memory, communication and step time (html_plan_charts), the side-by-side
 * table, bytes per parameter (Table 1a for these recipes), scale storage of the
 * model's largest linear weight on one TP rank (Table 1b), and delayed scaling
 * of the seed's spike with the first delayed-scaling recipe's amax history. */
#ifndef FP8PLAN_REPORTS_HTML_WHATIF_H
#define FP8PLAN_REPORTS_HTML_WHATIF_H

#include <stdio.h>

#include "planner/plan.h"
#include "reports/table.h"

typedef struct {
    const Plan *plans;
    int n;
    double headroom_frac;
    const Table *t1a;       /* Table 1a rows of these recipes */
    const Table *t1b;       /* Table 1b of the weight named by t1b_what */
    const char *t1b_what;   /* "FC1 of gpt-175b on one TP rank (TP 8)" */
    const Table *trace;     /* NULL when no recipe uses delayed scaling */
    const char *trace_what; /* whose history the trace uses */
} WhatIfPage;

Status html_whatif_page(FILE *f, const WhatIfPage *pg, Err *e);

#endif
