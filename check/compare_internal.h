/* check/compare_internal.h — what compare.c and compare_time.c share. */
#ifndef FP8PLAN_CHECK_COMPARE_INTERNAL_H
#define FP8PLAN_CHECK_COMPARE_INTERNAL_H

#include "check/compare.h"

/* Append a row (NULL when the comparison is full). */
MeasureRow *cmp_row(Comparison *c, CompareSection sec, const char *name, const char *category, RowUnit kind,
                    MeasureMode mode, const char *note);
/* Set a row's values (r may be NULL). */
void cmp_set(MeasureRow *r, int has_planned, double planned, int has_measured, double measured);

void cmp_time_rows(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *c);
void cmp_rate_rows(const Plan *p, const Observed *ob, Comparison *c);

#endif
