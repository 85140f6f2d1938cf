/* reports/scaling_report.h — the delayed-scaling trace as a table: one row per
 * step of fp8/delayed.h's state machine, with where small and large values land
 * at that step's scale (fp8/scale.h's ScaleBounds). The one builder behind
 * `fp8plan scaling` and the TUI's Scaling export, so the two are byte for byte
 * the same (tests/cli/tui_session.sh checks it).
 *
 * Columns: step, amax (%.9g text: nan and inf print as such), scale (the scale
 * the step cast with), cast (ok, saturates, nan, inf), next_scale, window_amax,
 * update (ok, kept: zero|inf|nan, tiny: FLT_MAX), flush_below, min_sub_below,
 * saturate_above (magnitudes in the tensor's own units at this step's scale). */
#ifndef FP8PLAN_REPORTS_SCALING_REPORT_H
#define FP8PLAN_REPORTS_SCALING_REPORT_H

#include "fp8/delayed.h"
#include "reports/table.h"

/* An empty trace table with a text title naming cfg; NULL when out of memory. */
Table *scaling_table_new(const DelayedCfg *cfg);

/* Append the row of one step (fmt: the format the tensor is cast to). */
void scaling_table_row(Table *t, Dtype fmt, const DelayedStep *st);

#endif
