/* check/compare_internal.h — what compare.c and compare_time.c share. */
#ifndef FP8PLAN_CHECK_COMPARE_INTERNAL_H
#define FP8PLAN_CHECK_COMPARE_INTERNAL_H

#include "check/compare.h"

void cmp_time_rows(const Plan *p, const Observed *ob, const Tolerances *tol, Comparison *c);
void cmp_rate_rows(const Plan *p, const Observed *ob, Comparison *c);

#endif
